"""Move nbval's markers from `# NBVAL_*` comments into cell tags, so nothing test-related shows.

    python tools/nbval_tags.py            # rewrite notebooks/NN_*, index, calculator (.py and .ipynb)
    python tools/nbval_tags.py --check    # exit 1 if a code cell still carries a `# NBVAL_*` comment

nbval (>= 0.9; the project pins 0.11) reads the same markers from a cell's metadata tags:
`nbval-check-output`, `nbval-ignore-output`, `nbval-skip`, `nbval-raises-exception`
(nbval/plugin.py, `find_comment_markers` and `find_metadata_tags`). A comment line
`# NBVAL_CHECK_OUTPUT` becomes the tag `nbval-check-output` and the line is removed from the
cell. Idempotent: run it again after merging a branch that still writes the comments.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^[ \t]*#[ \t]*(NBVAL_[A-Z_]+)[ \t]*\n?", re.M)
KNOWN = {"NBVAL_CHECK_OUTPUT", "NBVAL_IGNORE_OUTPUT", "NBVAL_SKIP", "NBVAL_RAISES_EXCEPTION"}


def tag_of(marker: str) -> str:
    if marker not in KNOWN:
        raise SystemExit(f"unknown nbval marker {marker}")
    return marker.lower().replace("_", "-")


def convert(source: str, metadata: dict) -> tuple[str, dict, bool]:
    """(source without the marker lines, metadata with the tags, changed?)."""
    found = MARKER.findall(source)
    if not found:
        return source, metadata, False
    md = json.loads(json.dumps(metadata))
    tags = list(md.get("tags", []))
    for m in found:
        if tag_of(m) not in tags:
            tags.append(tag_of(m))
    md["tags"] = tags
    return MARKER.sub("", source), md, True


def notebook_paths(root: Path = ROOT) -> list[Path]:
    nb = root / "notebooks"
    return sorted(nb.glob("[0-9][0-9]_*.py")) + [p for p in (nb / "index.py", nb / "calculator.py") if p.exists()]


def rewrite(py: Path, write: bool = True) -> int:
    """Convert one pair; return how many cells changed."""
    import jupytext

    nb = jupytext.read(py)
    n = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        src, md, changed = convert(cell.source, dict(cell.metadata))
        if changed:
            cell.source = src
            cell.metadata.clear()
            cell.metadata.update(md)
            n += 1
    ipynb = py.with_suffix(".ipynb")
    raw = json.loads(ipynb.read_text(encoding="utf-8")) if ipynb.exists() else None
    if raw is not None:
        for cell in raw["cells"]:
            if cell["cell_type"] != "code":
                continue
            text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            src, md, changed = convert(text, cell.get("metadata", {}))
            if changed:
                cell["source"] = src.splitlines(keepends=True)
                cell["metadata"] = md
    if write and n:
        jupytext.write(nb, py, fmt="py:percent")
        if raw is not None:
            ipynb.write_text(json.dumps(raw, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", type=Path)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    total = 0
    for py in [p.resolve() for p in args.paths] or notebook_paths():
        n = rewrite(py, write=not args.check)
        total += n
        if n:
            print(f"{py.name}: {n} cell(s) {'to convert' if args.check else 'converted'}")
    return 1 if (args.check and total) else 0


if __name__ == "__main__":
    sys.exit(main())
