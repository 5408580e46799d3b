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
    # a display-only cell whose outputs are taller than a slide goes on as memlib-continued cells (paginate)
    tagged = [c for c in tagged if "celltag_memlib-continued" not in c.split(">", 1)[0]]
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


def _md(source: str, slide_type: str = "-") -> dict:
    return {"cell_type": "markdown", "id": f"m{abs(hash(source)) % 10**8}", "source": source,
            "metadata": {"slideshow": {"slide_type": slide_type}}}


def _chart_cell(n: int) -> dict:
    return {"cell_type": "code", "id": f"c{n}", "source": "plot()", "execution_count": 1,
            "metadata": {"tags": ["hide-input"]},
            "outputs": [{"output_type": "display_data", "metadata": {}, "data": {"image/png": "iVBOR", "text/plain": "<Figure>"}}]}


def test_paginate_splits_long_slides_between_paragraphs():
    """issue 19: a slide holds what fits 1280 x 720 at 28 px (tests/test_site_browser.py measures the real decks);
    the split falls between paragraphs, a heading stays with the paragraph after it, one chart per slide."""
    para = "A paragraph of about two hundred characters, " * 4  # ~180 characters: 3 lines at 62 characters
    long_md = "## 4. Words we use\n\n" + "\n\n".join(f"{para} ({i})" for i in range(12))
    cells = [_md("# Title", "slide"), _md(long_md, "slide"), _chart_cell(1), _chart_cell(2),
             _md("## 5. Charts\n\n> **EN** first half of the answer.\n>\n> **中文** second half.", "slide")]
    out = build_site.paginate(json.loads(json.dumps(cells)))
    pieces = [c for c in out if c["cell_type"] == "markdown" and "A paragraph" in c["source"]]
    # 12 paragraphs of 3 lines (3 x 37 + 16 = 127 px each) in 620 px: 4 per slide, the heading with the first 4
    assert len(pieces) == 3, [len(re.findall(r"\(\d+\)", p["source"])) for p in pieces]
    assert pieces[0]["source"].startswith("## 4. Words we use\n\n") and pieces[0]["metadata"]["slideshow"]["slide_type"] == "slide"
    assert all(p["metadata"]["slideshow"]["slide_type"] == "subslide" for p in pieces[1:])
    assert "".join(p["source"] for p in pieces).count("A paragraph") == 12 * 4, "text lost in the split"
    assert len({c["id"] for c in out}) == len(out), "cell ids not unique after the split"
    charts = [c for c in out if c["cell_type"] == "code"]
    assert charts[1]["metadata"]["slideshow"]["slide_type"] == "subslide", "two charts on one slide"
    # one answer box stays one box (its paragraphs joined by a quoted blank line)
    box = out[-1]["source"]
    assert "> **EN** first half of the answer.\n>\n> **中文** second half." in box
