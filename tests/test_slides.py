"""Classroom slides: every topic notebook as a reveal.js deck that shows prose, charts, tables and the
playground, not display code, and loads nothing from a CDN (tools/build_site.py builds them).

The deck tests build each deck with the book's nbconvert template (no npm, no network); the browser
test opens the deck of notebook 01 from the built site (python tools/build_site.py) with every
request to another host aborted, and steps through it. Like tests/test_site_browser.py it skips
without Playwright, Chromium or a current build, and fails instead under MEMLIB_REQUIRE_BROWSER=1.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urljoin

import pytest
from test_site_browser import artifacts, browser, chromium_path, load_tool, open_page, site_url  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
TOPICS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
build_site = load_tool("build_site")


def _stored(nb_path: Path) -> dict:
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    build_site.static_widgets(nb)
    return nb


def _code_cells(nb: dict) -> tuple[int, int]:
    """(code cells tagged hide-input that show an output, other code cells)."""
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    hidden = [c for c in code if "hide-input" in c.get("metadata", {}).get("tags", [])]
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


def test_deck_steps_through_offline_in_the_browser(browser, site_url):  # noqa: F811
    url = urljoin(site_url, "slides/01_65b_on_4x_v100.slides.html")
    page, external, errors = open_page(browser, url)
    try:
        page.wait_for_function("window.Reveal && Reveal.isReady()", timeout=20_000)
        total = page.evaluate("Reveal.getTotalSlides()")
        assert total >= 10, f"{total} slides"
        seen = [page.evaluate("JSON.stringify(Reveal.getIndices())")]
        texts = [page.locator(".reveal .slides section.present").last.inner_text()]
        assert "01" in texts[0] and "Vicuna-65B" in texts[0], "the deck does not open on its title slide"
        page.screenshot(path=str(artifacts() / "slides-01-title.png"))
        for _ in range(6):
            page.keyboard.press("Space")  # next slide, down into sub-slides first
            page.wait_for_timeout(400)
            seen.append(page.evaluate("JSON.stringify(Reveal.getIndices())"))
            texts.append(page.locator(".reveal .slides section.present").last.inner_text())
        assert len(set(seen)) == len(seen), f"the slides did not advance: {seen}"
        assert len(set(texts)) == len(texts), "two steps showed the same slide"
        assert any("The question" in t for t in texts), "the question slide never came"
        page.screenshot(path=str(artifacts() / "slides-01-step.png"))
        # no display code on any slide; the playground's note and the charts are there
        assert page.locator(".celltag_hide-input .jp-InputArea").count() == 0
        assert page.locator(".memlib-widget-note").count() == 1
        assert page.locator(".reveal img").count() >= 1
        assert not external, f"the deck fetched from the network: {external}"
        assert not errors, f"JavaScript errors: {errors}"
    finally:
        page.close()
