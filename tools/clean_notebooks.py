"""Strip widget state from the .ipynb files (outputs are kept for readers).

    python tools/clean_notebooks.py [paths...]   (default: notebooks/ solutions/ exercises/)
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# What a stored widget output says in JupyterLab before the notebook runs (issue 41: it showed the widget's repr,
# "VBox(children=(HBox(..."). tools/build_site.py's WIDGET_REPR recognises both this note and a repr.
WIDGET_NOTE = "(interactive widget: run the notebook's cells to use it)"
WIDGET_REPR = re.compile(r"^(VBox|HBox|Box|GridBox|Tab|Accordion|Output|[A-Z]\w*Widget)\(")


def clean(path: Path) -> bool:
    nb = json.loads(path.read_text(encoding="utf-8"))
    changed = nb.get("metadata", {}).pop("widgets", None) is not None
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "application/vnd.jupyter.widget-view+json" in data:  # a view of state we do not keep
                data.pop("application/vnd.jupyter.widget-view+json")
                data["text/plain"] = WIDGET_NOTE
                changed = True
            text = data.get("text/plain", "")
            text = "".join(text) if isinstance(text, list) else text
            if set(data) == {"text/plain"} and WIDGET_REPR.match(text):  # cleaned before: its repr kept
                data["text/plain"] = WIDGET_NOTE
                changed = True
    if changed:
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return changed


def main(argv: list[str]) -> int:
    targets = [Path(a) for a in argv] or [ROOT / d for d in ("notebooks", "solutions", "exercises")]
    files = [p for t in targets if t.exists() for p in (sorted(t.glob("*.ipynb")) if t.is_dir() else [t])]
    for p in files:
        if clean(p):
            print(f"cleaned {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
