"""Links in the decks (tools/build_site.py deck_links): a topic notebook's link to another notebook points, from
slides/, at that topic's deck or at the book's page, never at an .ipynb that slides/ does not hold (issue 41: every
deck's deep-dive link and deck 00's link to 02 were broken). The built decks' links are followed by
tests/test_site_browser.py."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import build_site  # noqa: E402


def test_links_go_to_decks_and_book_pages():
    assert build_site.deck_links("[deep dive](00_memory_anatomy_deep_dive.ipynb)") == \
        "[deep dive](../notebooks/00_memory_anatomy_deep_dive.html)"
    assert build_site.deck_links("[02](02_single_gpu_limits.ipynb#3-levers)") == "[02](02_single_gpu_limits.slides.html#3-levers)"
    assert build_site.deck_links("[ex](../exercises/00_memory_anatomy_exercises.ipynb)") == \
        "[ex](../exercises/00_memory_anatomy_exercises.html)"
    assert build_site.deck_links('<a href="index.ipynb">index</a>') == '<a href="../notebooks/index.html">index</a>'
    for absolute in ("[x](https://example.org/a.ipynb)", "[x](#anchor)", "[x](/a.ipynb)"):
        assert build_site.deck_links(absolute) == absolute


def test_no_deck_links_to_a_notebook_file():
    for path in build_site.topic_notebooks():
        if path.stem.endswith("_deep_dive"):
            continue
        deck = build_site.deck_notebook(json.loads(path.read_text(encoding="utf-8")))
        for cell in deck["cells"]:
            texts = [cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])]
            texts += ["".join(o.get("data", {}).get(m, "")) for o in cell.get("outputs", []) for m in ("text/markdown", "text/html")]
            for text in texts:
                bad = [t for t in re.findall(r"\]\(([^)\s]+)\)|href=\"([^\"]+)\"", text) for t in t if t
                       and t.split("#")[0].endswith(".ipynb") and not re.match(r"[a-z]+:", t)]
                assert not bad, f"{path.name}: {bad}"
