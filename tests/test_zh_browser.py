"""The Chinese edition (issue 46) in a real browser: the two books' language switch and a Chinese notebook
in JupyterLite.

Serves the built site (python tools/build_site.py -> _build/html: the English book, the Chinese book in zh/,
the JupyterLite site in lite/) on 127.0.0.1 and drives headless Chromium through Playwright; every request to
another host is aborted and recorded (tests/test_lite_browser.py's server, browser and helpers).

1. Every page of both books has one language switch, and it points at a page that exists (files, no browser).
2. The English chapter 00's switch opens its Chinese page (html lang zh-CN, the launch bar in Chinese, the
   glossary page in the Chinese book's navigation); that page's switch leads back to the English page.
3. The Chinese exercise page 00's "在线试用" (Try it live) opens the Chinese copy (zh/exercises/...) in JupyterLite;
   every code cell runs under Pyodide with no error, and `check()` answers in Chinese without being told to (the
   notebook runs in zh/exercises): a wrong answer of 00.1 made with the fp32 slip gets the catalog's Chinese
   message for that slip.

Skipped (with the reason) without Playwright, a Chromium binary or a built site with its Chinese book and
JupyterLite site, or when the build is older than its sources; with MEMLIB_REQUIRE_BROWSER=1 each of these fails.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
from browser_support import missing as _missing

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from test_lite_browser import (KERNEL_START_S, RUN_ALL, RUN_ALL_S, SITE, cell_index, open_notebook,  # noqa: E402
                               run)
from test_lite_browser import context, site_url  # noqa: E402,F401  (the fixtures: served site, offline browser)

ZH_EXERCISE = "zh/exercises/00_memory_anatomy_exercises.ipynb"


def _pages(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.html") if "_static" not in p.parts and "slides" not in p.parts
                  and "lite" not in p.relative_to(SITE).parts[:1] and p.name not in ("search.html", "genindex.html"))


@pytest.fixture(scope="module")
def books():
    if not (SITE / "zh" / "index.html").is_file():
        _missing(f"the site in {SITE} has no Chinese book (python tools/build_site.py without --no-zh)")
    english = [p for p in _pages(SITE) if p.relative_to(SITE).parts[0] != "zh"]
    chinese = _pages(SITE / "zh")
    return english, chinese


def test_every_page_links_to_the_same_page_in_the_other_language(books):
    english, chinese = books
    assert len(english) == len(chinese) > 40
    for page in english + chinese:
        links = re.findall(r'<a class="memlib-lang-switch[^"]*"[^>]*href="([^"]+)"', page.read_text(encoding="utf-8"))
        assert len(links) == 1, f"{page}: {len(links)} language switches"
        target = (page.parent / links[0]).resolve()
        assert target.is_file(), f"{page}: the switch points at {links[0]}, which does not exist"
        zh_side = page.relative_to(SITE).parts[0] == "zh"
        other = target.relative_to(SITE / "zh") if not zh_side else Path("zh") / target.relative_to(SITE)
        assert other == page.relative_to(SITE), f"{page}: the switch leads to another page ({links[0]})"


def test_switch_between_the_books(books, context, site_url):
    page = context.new_page()
    try:
        page.goto(urljoin(site_url, "notebooks/00_memory_anatomy.html"))
        assert page.locator("html").get_attribute("lang").startswith("en")
        page.locator("a.memlib-lang-switch").click()
        page.wait_for_load_state()
        assert urlsplit(page.url).path == "/zh/notebooks/00_memory_anatomy.html", page.url
        assert page.locator("html").get_attribute("lang") == "zh-CN"
        bar = page.locator(".memlib-launch").inner_text()
        assert "在线试用" in bar and "幻灯片" in bar, bar
        assert page.locator("nav a[href$='docs/glossary.html']").count() >= 1, "no glossary in the Chinese navigation"
        page.locator("a.memlib-lang-switch").click()
        page.wait_for_load_state()
        assert urlsplit(page.url).path == "/notebooks/00_memory_anatomy.html", page.url
    finally:
        page.close()
    assert not context.external, f"requests to the network: {context.external[:5]}"


def _zh(english: str) -> str:
    """The grader catalog's Chinese for an English string (read from the .po, not from the code under test)."""
    import translate
    from memlib.learn.i18n import read_po

    found = [e.msgstr for e in read_po(translate.RUNTIME)[1] if e.msgid == english and e.translated]
    assert found, f"not translated in the catalog: {english!r}"
    return found[0]


def test_chinese_notebook_runs_in_jupyterlite_and_grades_in_chinese(books, context, site_url):
    from memlib.learn.exercises import EXERCISES

    book = context.new_page()
    book.goto(urljoin(site_url, "zh/exercises/00_memory_anatomy_exercises.html"))
    live = book.locator(".memlib-launch a.memlib-lite")
    assert live.count() == 1 and live.inner_text() == "在线试用"
    href = urljoin(book.url, live.get_attribute("href"))
    book.close()
    assert urlsplit(href).path.startswith("/lite/") and ZH_EXERCISE in href, href
    page, errors = open_notebook(context, href)
    try:
        first = cell_index(page, r"^import memlib")
        out = run(page, first, timeout_s=KERNEL_START_S)
        assert "Error" not in out, f"the Chinese notebook's first cell failed in JupyterLite:\n{out}"
        page.set_default_timeout(RUN_ALL_S * 1000)
        result = page.evaluate(RUN_ALL)
        assert not result["errors"], f"{ZH_EXERCISE} in JupyterLite: {result['errors'][:5]}"
        assert not result["unrun"], f"code cells {result['unrun'][:10]} did not run"
        slip = EXERCISES["00.1"].slips[0]  # fp32: 4 bytes per parameter
        i = cell_index(page, r'check\("00\.1"')
        wrong = run(page, i, f'answer = "{slip.value() / 1e9:.2f} GB"\ncheck("00.1", answer)')
        assert "❌" in wrong and _zh(slip.message) in wrong and slip.message not in wrong, wrong
        assert not errors, f"JavaScript errors: {errors[:3]}"
    finally:
        page.close()
    assert not [u for u in context.external if "cdn.jsdelivr.net/pyodide" not in u], context.external[:5]
