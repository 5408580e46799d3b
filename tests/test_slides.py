"""Classroom slides: every topic notebook as a reveal.js deck that shows prose, charts, tables and the
playground, not display code, and loads nothing from a CDN (tools/build_site.py builds them).

These tests build each deck with the book's nbconvert template (no npm, no network). The browser
test that opens the deck of notebook 01 from the built site, offline, and steps through it is
tests/test_site_browser.py::test_deck_steps_through_offline_in_the_browser (it shares that file's
browser session).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_site_browser import load_tool

ROOT = Path(__file__).resolve().parents[1]
TOPICS = sorted(p for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb") if not p.stem.endswith("_deep_dive"))
build_site = load_tool("build_site")


def _stored(nb_path: Path) -> dict:
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    build_site.static_widgets(nb)
    return nb


def _code_cells(nb: dict) -> tuple[int, int]:
    """(code cells tagged hide-input that show an output, other code cells)."""
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    hidden = [c for c in code if {"hide-input", "remove-input"} & set(c.get("metadata", {}).get("tags", []))]
    return sum(1 for c in hidden if c.get("outputs")), len(code) - len(hidden)


@pytest.fixture(scope="module")
def decks() -> dict[str, str]:
    exporter = build_site.deck_exporter()
    return {p.stem: build_site.deck_html(_stored(p), p.stem, exporter) for p in TOPICS}


def _cells(html: str) -> list[str]:
    return re.split(r'(?=<div\s+class="jp-Cell )', html)[1:]


@pytest.mark.parametrize("nb", TOPICS, ids=[p.stem for p in TOPICS])
def test_deck_shows_no_display_code_and_needs_no_network(nb, decks):
    html = decks[nb.stem]
    assert html.count("<section") >= 10, "title + 9 sections should each start a slide (notebooks/STYLE.md)"
    # reveal.js from the local copy; no script or style sheet from anywhere else
    assert '<script src="reveal.js/dist/reveal.js"></script>' in html
    remote = re.findall(r'<(?:script|link)\b[^>]*(?:src|href)="(https?:)?//[^"]*"', html)
    assert not remote, f"the deck loads from the network: {remote}"
    assert "require(" not in html and "MathJax" not in html and "mermaid" not in html
    # code: none for display-only cells, shown for computation cells; the setup cell is dropped
    hidden, shown = _code_cells(_stored(nb))
    code_cells = [c for c in _cells(html) if "jp-CodeCell" in c.split(">", 1)[0]]
    with_input = [c for c in code_cells if "jp-InputArea" in c]
    tagged = [c for c in code_cells if "celltag_hide-input" in c.split(">", 1)[0]]
    assert len(with_input) == shown, f"{len(with_input)} code inputs on the slides, {shown} computation cells"
    assert not any("jp-InputArea" in c for c in tagged), "a display-only cell shows its code"
    assert len(tagged) == hidden, "every display-only cell keeps its output (a setup cell without one is dropped)"
    # charts and the playground
    assert html.count('<img') >= 1 and "data:image/png;base64" in html
    assert "memlib-widget-note" in html, "the playground is not on the slides"


def test_deck_notebook_drops_the_setup_cell_and_splits_headings():
    nb = _stored(ROOT / "notebooks" / "01_65b_on_4x_v100.ipynb")
    deck = build_site.deck_notebook(nb)
    first_code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    assert first_code["source"] not in [c["source"] for c in deck["cells"]], "the setup cell is on the slides"
    steps = [c for c in deck["cells"] if c["cell_type"] == "markdown"
             and "".join(c["source"]).startswith("### Step")]
    assert steps and all(c["metadata"]["slideshow"]["slide_type"] == "subslide" for c in steps)
    assert nb["cells"][0]["metadata"]["slideshow"]["slide_type"] == "slide"  # the input is not modified
    assert "slideshow" not in next(c for c in nb["cells"] if "".join(c["source"]).startswith("### Step"))["metadata"]
