"""The book (python tools/build_site.py -> _build/html) in a real browser, offline.

Serves the built site on 127.0.0.1 (a free port), opens the landing page and every page built from
a notebook or a document in headless Chromium through Playwright (the system Chromium, as
tests/test_calculator_browser.py; every request to another host is aborted and recorded) and
checks on each page:

* its title (the source's first `#` heading) in <title> and as the page's heading;
* a chart image for every chart the notebook stores (each topic notebook must store at least one;
  the landing page, the notebooks' index, the calculator page, the cheat sheet and the exercises
  store none, so none is expected there), each image loaded;
* no raw Python traceback, no error output;
* display code folded: every cell tools/mark_display_cells.py tagged hide-input has its code hidden
  behind a closed toggle (and one click opens it), every other code cell shows its code;
* every internal link resolves (the file is served, and a #fragment names an element on it);
* nothing is fetched from the network, the launch bar names a Binder URL and a local command for a
  file that exists, and where the page has 中文 the subset CJK webfont is loaded;

and on notebook 01's page, the first screen (1280 x 800) shows the question, the 30-second answer's verdict and no code cell
(screenshot: tests/artifacts/site-01-first-screen.png). The deck of notebook 01 steps forward
offline: reveal.js loads from the site's own copy, slides advance, no display code on them
(tests/test_slides.py checks every deck's HTML). And in JupyterLab itself (started on 127.0.0.1),
notebook 01 opens with exactly its jupyter.source_hidden cells collapsed.

Issue 19: the cheat sheet's formulas are rendered by the site's own MathJax (no TeX error, no raw TeX); every
slide of every deck, stepped through at 1280 x 720, fits the slide with body text >= 28 px, upright answer boxes
and at most one chart; the sidebar title's 显存 uses the preloaded CJK webfont (font-display: block) at load.

Skipped (with the reason) without Playwright, a Chromium binary or a built site, and when the build
is older than its sources; with MEMLIB_REQUIRE_BROWSER=1 (.ci/run) each of these fails instead.
MEMLIB_SITE_DIR overrides the site folder.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest
from browser_support import chromium as _chromium, missing as _missing

ROOT = Path(__file__).resolve().parents[1]
SITE = Path(os.environ.get("MEMLIB_SITE_DIR", ROOT / "_build" / "html"))
# Headless Chromium on a machine with no display and a closed network; every host but 127.0.0.1
# fails at once (resolver rule) and its requests are aborted (route), as in the calculator's test.
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-default-apps",
                 "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
FIRST_SCREEN = {"width": 1280, "height": 800}  # a laptop
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
RAW_ROLE = re.compile(r"\{eval\}|\{glue(?::\w+)?\}")  # an inline value not rendered (tools/inline_values.py)
SCREEN_H = FIRST_SCREEN["height"]
MAX_SCREENS = 12  # issue 19: a topic's core path, question to follow-ups, in at most 12 screens of the book
TRACEBACK = re.compile(r"Traceback \(most recent call last\)|-{20,}\s*\n?\s*\w+(Error|Exception)\b")


def artifacts() -> Path:
    path = Path(os.environ.get("MEMLIB_ARTIFACTS", ROOT / "tests" / "artifacts"))
    path.mkdir(parents=True, exist_ok=True)
    ignore = path / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# screenshots written by the browser tests\n*\n", encoding="utf-8")
    return path


def load_tool(name: str):
    """A module of tools/ (tools/build_site.py, ...) imported by path."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def built_site() -> Path:
    """The built site, checked to be built from the sources as they are now."""
    stamp = SITE / ".memlib-build.json"
    if not stamp.is_file():
        _missing(f"no built site in {SITE} (python tools/build_site.py)")
    recorded = json.loads(stamp.read_text())
    stale = sorted(k for k, v in load_tool("build_site").source_digest().items() if recorded["sources"].get(k) != v)
    if stale:
        _missing(f"the site in {SITE} is older than {', '.join(stale[:5])}: rebuild (python tools/build_site.py)")
    return SITE


@pytest.fixture(scope="module")
def chromium_path() -> str:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _missing("playwright is not installed (pip install -e '.[browser]')")
    path = _chromium()
    if path is None:
        _missing("no Chromium binary (apt-get install chromium, or set MEMLIB_CHROMIUM)")
    return path


@pytest.fixture(scope="module")
def site_url(chromium_path):
    root = built_site()

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser(chromium_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS, timeout=60_000)
        try:
            yield b
        finally:
            b.close()


def open_page(browser, url: str, viewport=FIRST_SCREEN):
    """A page at `url` with every non-local request aborted; returns (page, external, errors)."""
    page = browser.new_page(viewport=viewport)
    external: list[str] = []
    errors: list[str] = []

    def route(r):
        host = urlsplit(r.request.url).hostname
        if host == "127.0.0.1":
            r.continue_()
        else:
            external.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url, wait_until="load", timeout=60_000)
    page.evaluate("document.fonts.ready.then(() => true)")
    return page, external, errors


# --- what each page should show, from its source --------------------------------------------------

def _title_of_markdown(text: str) -> str:
    m = re.search(r"^# (.+)$", text, flags=re.M)
    assert m, "source has no '# ' title"
    return m.group(1).strip()


def _plain(md: str) -> str:
    """A heading as text: markdown emphasis, code marks and links dropped."""
    md = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", md)
    return re.sub(r"[*_`]", "", md).strip()


def expected_pages() -> list[dict]:
    """Every page the book must have: path in the site, title, charts stored, folded/open code cells."""
    import nbformat

    pages = [{"path": "index.html", "title": _title_of_markdown((ROOT / "book" / "index.md").read_text()),
              "charts": 0, "folded": 0, "open": 0}]
    notebooks = ([ROOT / "notebooks" / "index.ipynb"] + sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
                 + sorted((ROOT / "exercises").glob("*.ipynb")))
    for nb_path in notebooks:
        nb = nbformat.read(nb_path, as_version=4)
        first_md = next(c.source for c in nb.cells if c.cell_type == "markdown")
        code = [c for c in nb.cells if c.cell_type == "code"]
        folded = sum(1 for c in code if "hide-input" in c.metadata.get("tags", []))
        removed = sum(1 for c in code if "remove-input" in c.metadata.get("tags", []) and not c.get("outputs"))
        pages.append({
            "path": f"{nb_path.parent.name}/{nb_path.stem}.html",
            "title": _title_of_markdown(first_md),
            "charts": sum(1 for c in code for o in c.get("outputs", []) if "image/png" in o.get("data", {})),
            "folded": folded, "open": len(code) - folded - removed,
            "topic": bool(re.match(r"\d\d_", nb_path.name)) and nb_path.parent.name == "notebooks"
                     and not nb_path.stem.endswith("_deep_dive"),
        })
    calc = nbformat.read(ROOT / "notebooks" / "calculator.ipynb", as_version=4)
    pages.append({"path": "notebooks/calculator.html",
                  "title": _title_of_markdown(next(c.source for c in calc.cells if c.cell_type == "markdown")),
                  "charts": 0, "folded": 0, "open": 0})
    pages.append({"path": "docs/cheatsheet.html",
                  "title": _title_of_markdown((ROOT / "docs" / "cheatsheet.md").read_text()),
                  "charts": 0, "folded": 0, "open": 0})
    for md in sorted((ROOT / "docs" / "teaching").glob("*.md")):  # the teacher's guides and the classroom kit
        pages.append({"path": f"docs/teaching/{md.stem}.html", "title": _title_of_markdown(md.read_text()),
                      "charts": 0, "folded": 0, "open": 0})
    return pages


PAGES = expected_pages()


class LinkChecker:
    """Fetches each internal target once; knows the element ids of each page."""

    def __init__(self, request):
        self.request = request
        self.status: dict[str, int] = {}
        self.ids: dict[str, set[str]] = {}

    def check(self, url: str) -> str | None:
        base, _, frag = url.partition("#")
        if base not in self.status:
            r = self.request.get(base)
            self.status[base] = r.status
            if r.ok and base.endswith((".html", "/")):
                self.ids[base] = set(re.findall(r'\bid="([^"]+)"', r.text()))
        if self.status[base] != 200:
            return f"{url}: HTTP {self.status[base]}"
        if frag and base in self.ids and unquote(frag) not in self.ids[base]:
            return f"{url}: no element with id {frag!r}"
        return None


@pytest.fixture(scope="module")
def links(browser, site_url):
    ctx = browser.new_context()
    try:
        yield LinkChecker(ctx.request)
    finally:
        ctx.close()


def test_every_page_is_built(site_url):
    site = built_site()
    missing = [p["path"] for p in PAGES if not (site / p["path"]).is_file()]
    assert not missing, f"pages missing from the book: {missing}"
    assert all(p["charts"] >= 1 for p in PAGES if p.get("topic")), "a topic notebook stores no chart"
    # the CJK webfont ships with its licence (SIL OFL 1.1), and nothing else's
    licence = (site / "_static" / "fonts" / "LICENSE-NotoSansCJK.txt").read_text(encoding="utf-8")
    assert "SIL OPEN FONT LICENSE Version 1.1" in licence and "General Public License" not in licence
    assert (site / "_static" / "fonts" / "memlib-cjk-regular.woff2").stat().st_size > 10_000
    decks = sorted(p.name for p in (site / "slides").glob("*.slides.html"))
    assert decks == sorted(f"{p.stem}.slides.html" for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")
                           if not p.stem.endswith("_deep_dive"))
    assert (site / "slides" / "reveal.js" / "dist" / "reveal.js").is_file()
    # the teacher's guide's speaker notes are in every deck (reveal.js notes: the speaker view, key S)
    for deck in decks:
        html = (site / "slides" / deck).read_text(encoding="utf-8")
        assert html.count('<aside class="notes">') >= 6, f"{deck}: no speaker notes"
    assert (site / "slides" / "reveal.js" / "plugin" / "notes" / "notes.js").is_file()


@pytest.mark.parametrize("spec", PAGES, ids=[p["path"] for p in PAGES])
def test_page(spec, browser, site_url, links):
    url = urljoin(site_url, spec["path"])
    page, external, errors = open_page(browser, url)
    try:
        # 1. the title
        assert spec["title"] in page.title(), f"<title> {page.title()!r} lacks {spec['title']!r}"
        h1 = page.locator("article h1").first.inner_text()
        assert _plain(spec["title"]) in h1.replace("#", "").strip(), f"first heading {h1!r}"

        # 2. the charts the notebook stores, loaded
        charts = page.locator("div.cell_output img")
        assert charts.count() >= spec["charts"], f"{charts.count()} chart images, the notebook stores {spec['charts']}"
        if spec.get("topic"):
            assert charts.count() >= 1
        broken = page.evaluate("[...document.querySelectorAll('div.cell_output img')]"
                               ".filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)")
        assert not broken, f"images that did not load: {broken}"

        # 3. no traceback
        body = page.locator("article").inner_text()
        assert not TRACEBACK.search(body), "a Python traceback is on the page"
        assert not RAW_ROLE.search(body), f"raw MyST role text on the page: {RAW_ROLE.search(body).group(0)!r}"
        assert page.locator("div.output.traceback, div.output.error, .cell_output .traceback").count() == 0

        # 4. display code folded, computation code open
        folded = page.locator("div.cell.tag_hide-input")
        assert folded.count() == spec["folded"], f"{folded.count()} folded cells, {spec['folded']} tagged hide-input"
        hidden_code = page.evaluate("[...document.querySelectorAll('div.cell.tag_hide-input')]"
                                    ".filter(c => { const i = c.querySelector('div.cell_input');"
                                    " return i && i.checkVisibility(); }).length")
        assert hidden_code == 0, f"{hidden_code} display-only cells show their code"
        open_code = page.evaluate("[...document.querySelectorAll('div.cell:not(.tag_hide-input) > div.cell_input')]"
                                  ".filter(i => i.checkVisibility()).length")
        assert open_code == spec["open"], f"{open_code} computation cells show code, expected {spec['open']}"
        if spec["folded"]:
            first = folded.first
            first.locator("summary").first.click()
            assert first.locator("div.cell_input").first.is_visible(), "the toggle does not open the code"

        # 5. internal links resolve
        hrefs = page.evaluate("[...document.querySelectorAll('a[href]')].map(a => a.href)")
        internal = sorted({h for h in hrefs if urlsplit(h).hostname == "127.0.0.1"})
        assert internal, "no internal links at all"
        bad = [msg for h in internal if (msg := links.check(h))]
        assert not bad, "broken internal links:\n" + "\n".join(bad)

        # 6. offline, launch bar, CJK font
        assert not external, f"the page fetched from the network: {external[:5]}"
        assert not errors, f"JavaScript errors: {errors}"
        bar = page.locator(".memlib-launch")
        assert bar.count() == 1, "no launch bar"
        assert bar.locator("a.memlib-lite").count() == 1, "no 'Try it live' link"
        assert "OWNER/REPO" not in page.content(), "a placeholder link on the page"
        for a in bar.locator("a.memlib-binder").all():  # only where the build names a repository
            binder = a.get_attribute("href")
            assert re.match(r"https://mybinder\.org/v2/gh/[^/]+/[^/]+/[^?]+\?urlpath=(lab%2Ftree|voila%2Frender)%2F", binder), binder
        command = bar.locator("code.memlib-local").inner_text()
        m = re.fullmatch(r"(jupyter lab --LabApp\.default_url=/lab/tree/|voila )(\S+\.ipynb)", command)
        assert m and (ROOT / m.group(2)).is_file(), f"local command {command!r} does not open a file of the repo"
        if CJK.search(body):
            loaded = page.evaluate("[...document.fonts].filter(f => f.family.replace(/\"/g, '') === 'Memlib CJK'"
                                   " && f.status === 'loaded').length")
            assert loaded >= 1, "the page has 中文 but the CJK webfont did not load"
    finally:
        page.close()


def _notebook_01(site_url):
    return urljoin(site_url, "notebooks/01_65b_on_4x_v100.html")


def _first_screen_headings(page) -> list[str]:
    return page.evaluate("""() => [...document.querySelectorAll('article h1, article h2')]
        .filter(h => { const r = h.getBoundingClientRect(); return h.checkVisibility() && r.top < innerHeight && r.bottom > 0; })
        .map(h => h.innerText)""")


def test_notebook_01_first_screen_shows_the_question_not_code(browser, site_url):
    page, _, _ = open_page(browser, _notebook_01(site_url))
    try:
        page.screenshot(path=str(artifacts() / "site-01-first-screen.png"))
        headings = _first_screen_headings(page)
        assert any("The question" in h for h in headings), f"headings on the first screen: {headings}"
        code_above_fold = page.evaluate("""() => [...document.querySelectorAll('div.cell_input')]
            .filter(i => i.checkVisibility() && i.getBoundingClientRect().top < innerHeight).length""")
        assert code_above_fold == 0, f"{code_above_fold} code cell(s) visible on the first screen"
    finally:
        page.close()


def test_notebook_01_first_screen_shows_the_30_second_answer(browser, site_url):
    page, _, _ = open_page(browser, _notebook_01(site_url))
    try:
        headings = _first_screen_headings(page)
        assert any("30-second answer" in h for h in headings), f"headings on the first screen: {headings}"
        # The answer itself, not only its heading: the English verdict (the bold "Full fine-tuning: ..."
        # that opens the answer) must be drawn inside the first screen, with its whole first line.
        verdict = page.evaluate("""() => {
            const b = [...document.querySelectorAll('article blockquote strong')]
                .find(e => e.innerText.startsWith('Full fine-tuning'));
            if (!b) return null;
            const r = b.getBoundingClientRect();
            return {top: r.top, bottom: r.bottom, height: innerHeight};
        }""")
        assert verdict is not None, "no 'Full fine-tuning: ...' verdict in a blockquote on notebook 01's page"
        assert verdict["bottom"] <= verdict["height"], (
            f"the 30-second answer's verdict starts at y={verdict['top']:.0f} px, below the first screen "
            f"({verdict['height']} px)")
    finally:
        page.close()


def _topics() -> list:
    """Every topic page (issue 19: all of them are chapters with a deep-dive page)."""
    return [pytest.param(nb.stem, id=nb.stem) for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
            if not nb.stem.endswith("_deep_dive")]


@pytest.mark.parametrize("stem", _topics())
def test_core_path_fits_twelve_screens_answer_first(stem, browser, site_url):
    page, _, _ = open_page(browser, urljoin(site_url, f"notebooks/{stem}.html"))
    try:
        page.screenshot(path=str(artifacts() / f"site-{stem}-first-screen.png"))
        m = page.evaluate(r"""() => {
            const art = document.querySelector('article');
            const h2 = [...art.querySelectorAll('h2')];
            const answer = h2.find(h => /30-second answer/.test(h.innerText));
            const quote = answer && [...art.querySelectorAll('blockquote')]
                .find(b => b.compareDocumentPosition(answer) & Node.DOCUMENT_POSITION_PRECEDING);
            const scrollers = [...art.querySelectorAll('*')].filter(e => {
                const cs = getComputedStyle(e);
                return e.scrollWidth > e.clientWidth + 1 && e.clientWidth > 0 && e.checkVisibility()
                       && /(auto|scroll)/.test(cs.overflowX);
            }).map(e => e.tagName + '.' + e.className);
            const top = art.getBoundingClientRect().top + scrollY;
            // the core path: question, answer, steps, charts, playground, follow-ups, pitfalls;
            // it ends where section 10 (the deep dive) starts
            const deep = h2.find(h => /^\s*10\.|Deep dive/.test(h.innerText));
            const end = deep ? deep.getBoundingClientRect().top : art.getBoundingClientRect().bottom;
            return {height: end + scrollY - top, articleTop: top,
                    answerTop: quote ? quote.getBoundingClientRect().top : null, scrollers,
                    pageWide: document.documentElement.scrollWidth > innerWidth};
        }""")
        problems = []
        if m["height"] > MAX_SCREENS * SCREEN_H:
            problems.append(f"core path is {m['height']:.0f} px tall ({m['height'] / SCREEN_H:.1f} screens, at most {MAX_SCREENS})")
        if m["answerTop"] is None or m["answerTop"] > SCREEN_H - 40:
            problems.append(f"the 30-second answer starts at y={m['answerTop']}, not on the first screen")
        if m["scrollers"] or m["pageWide"]:
            problems.append(f"horizontal scroll in the main column: {m['scrollers'][:5]}")
        assert not problems, f"{stem}: " + "; ".join(problems)
    finally:
        page.close()


def test_deck_steps_through_offline_in_the_browser(browser, site_url):
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


def test_jupyterlab_collapses_display_only_cells(browser, tmp_path):
    """The same markers in JupyterLab itself: display-only cells open collapsed, the rest open."""
    import signal
    import socket
    import subprocess
    import time

    import nbformat

    name = "01_65b_on_4x_v100.ipynb"
    nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    collapsed = sum(1 for c in nb.cells if c.metadata.get("jupyter", {}).get("source_hidden"))
    assert collapsed >= 3
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "JUPYTER_CONFIG_DIR": str(tmp_path / "cfg")}
    log = open(tmp_path / "lab.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}",
                             "--ServerApp.ip=127.0.0.1", "--ServerApp.port_retries=0", "--allow-root",
                             "--IdentityProvider.token=", f"--LabApp.workspaces_dir={tmp_path / 'ws'}",
                             f"--ServerApp.root_dir={ROOT}"],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "lab.log").read_text()[-2000:]
                time.sleep(0.3)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        try:
            page.goto(f"http://127.0.0.1:{port}/lab/tree/notebooks/{name}", timeout=90_000)
            page.wait_for_function(f"document.querySelectorAll('.jp-Notebook .jp-Cell').length === {len(nb.cells)}",
                                   timeout=90_000)
            page.wait_for_timeout(1000)
            got = page.locator(".jp-Notebook .jp-CodeCell .jp-InputPlaceholder").count()
            assert got == collapsed, f"JupyterLab collapsed {got} code cells; {collapsed} carry jupyter.source_hidden"
            page.screenshot(path=str(artifacts() / "lab-01-first-screen.png"))
            # jupyterlab-myst renders the stored {eval} values on a fresh, untrusted open
            answer = page.locator(".jp-Notebook .jp-MarkdownCell", has_text="30-second answer").first.inner_text()
            assert "Full fine-tuning" in answer and "{eval}" not in answer and "a_states" not in answer, answer[:400]
            assert "GiB" in answer, answer[:400]
        finally:
            page.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


# --- issue 19 items 5-7: formulas as math, slides a room can read, CJK glyphs on first paint ----------------

def test_cheatsheet_formulas_render_with_the_local_mathjax(browser, site_url):
    """docs/cheatsheet.md writes each row's formula as $$ LaTeX $$ (tools/make_cheatsheet.py): MathJax, served by
    the site itself (book/conf.py mathjax_path), renders every one offline, without a TeX error."""
    source = (ROOT / "docs" / "cheatsheet.md").read_text(encoding="utf-8")
    formulas = source.count("\n$$\n") // 2
    assert formulas >= 40, f"{formulas} display formulas in docs/cheatsheet.md"
    page, external, errors = open_page(browser, urljoin(site_url, "docs/cheatsheet.html"))
    try:
        page.wait_for_function("window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=20_000)
        page.evaluate("MathJax.startup.promise.then(() => true)")
        m = page.evaluate("""() => {
            const art = document.querySelector('article');
            return {display: art.querySelectorAll('mjx-container[display="true"]').length,
                    all: art.querySelectorAll('mjx-container').length,
                    errors: [...art.querySelectorAll('mjx-merror')].map(e => e.getAttribute('data-mjx-error') || e.textContent),
                    script: [...document.scripts].map(s => s.src).filter(s => /mathjax/i.test(s)),
                    text: art.innerText};
        }""")
        assert m["display"] == formulas, f"{m['display']} formulas rendered by MathJax, {formulas} in the source"
        assert m["all"] > formulas, "the inline math ($10^9$, $2^{30}$) is not rendered"
        assert not m["errors"], f"TeX errors: {m['errors'][:5]}"
        raw = re.findall(r"\$\$|\\(?:frac|text|times|mathrm)\b|\$[^$\s][^$]*\$", m["text"])
        assert not raw, f"raw TeX left on the page: {raw[:5]}"
        assert m["script"] and all(urlsplit(s).hostname == "127.0.0.1" for s in m["script"]), m["script"]
        assert not external, f"the page fetched from the network: {external[:5]}"
        assert not errors, f"JavaScript errors: {errors}"
        page.locator("mjx-container[display='true']").first.scroll_into_view_if_needed()
        page.screenshot(path=str(artifacts() / "site-cheatsheet-math.png"))
    finally:
        page.close()


DECK_SIZE = {"width": 1280, "height": 720}
MIN_BODY_PX = 28
# Every slide in turn: its content height (scrollHeight of the slide's <section>) against the deck's 720 px,
# the computed font-size of its body text (paragraphs and list items outside tables, code and notes) and the
# font-style of its answer boxes (blockquotes), and how many charts it shows.
SLIDE_SURVEY = """async () => {
    const cfg = Reveal.getConfig();
    const out = [];
    for (const s of Reveal.getSlides()) {
        const idx = Reveal.getIndices(s);
        Reveal.slide(idx.h, idx.v);
        await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
        const body = [...s.querySelectorAll('p, li')].filter(p => p.checkVisibility() && p.innerText.trim()
            && !p.closest('table, pre, .memlib-widget-note, .jp-OutputArea-output pre'));
        // code and tables cut off at the side (issue 41): wider than their box with no scrollbar, or past the slide's edge
        const sr = s.getBoundingClientRect();
        const clipped = [...s.querySelectorAll('pre, table, .jp-InputArea-editor, .jp-OutputArea-output')]
            .filter(e => e.checkVisibility() && !e.parentElement.closest('.jp-InputArea-editor, .jp-OutputArea-output'))
            .filter(e => (e.scrollWidth > e.clientWidth + 1 && !/(auto|scroll)/.test(getComputedStyle(e).overflowX))
                         || e.getBoundingClientRect().right > sr.right + 1)
            .map(e => e.innerText.trim().slice(0, 40));
        out.push({at: `${idx.h}/${idx.v}`, height: s.scrollHeight, width: s.scrollWidth, clipped,
                  small: body.filter(p => parseFloat(getComputedStyle(p).fontSize) < %d)
                             .map(p => getComputedStyle(p).fontSize + ' ' + p.innerText.slice(0, 40)),
                  italic: [...s.querySelectorAll('blockquote')].filter(q => getComputedStyle(q).fontStyle !== 'normal').length,
                  charts: s.querySelectorAll('img').length, text: s.innerText.trim().slice(0, 60)});
    }
    return {width: cfg.width, height: cfg.height, slides: out};
}""" % MIN_BODY_PX


def _decks() -> list[str]:
    return [p.stem for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) if not p.stem.endswith("_deep_dive")]


@pytest.mark.parametrize("stem", _decks())
def test_every_slide_fits_1280x720_with_readable_text(stem, browser, site_url):
    """issue 19: no slide overflows 1280 x 720, body text >= 28 px, answer boxes upright, one chart per slide."""
    page, external, errors = open_page(browser, urljoin(site_url, f"slides/{stem}.slides.html"), viewport=DECK_SIZE)
    try:
        page.wait_for_function("window.Reveal && Reveal.isReady()", timeout=20_000)
        r = page.evaluate(SLIDE_SURVEY)
        assert (r["width"], r["height"]) == (DECK_SIZE["width"], DECK_SIZE["height"]), f"deck size {r['width']} x {r['height']}"
        assert len(r["slides"]) >= 10
        problems = []
        for s in r["slides"]:
            where = f"slide {s['at']} ({s['text'][:40]!r})"
            if s["height"] > r["height"] + 1 or s["width"] > r["width"] + 1:
                problems.append(f"{where}: content {s['width']} x {s['height']} px overflows {r['width']} x {r['height']}")
            if s["clipped"]:
                problems.append(f"{where}: code or a table cut off at the side with no scrollbar: {s['clipped'][:2]}")
            if s["small"]:
                problems.append(f"{where}: body text under {MIN_BODY_PX} px: {s['small'][:2]}")
            if s["italic"]:
                problems.append(f"{where}: {s['italic']} italic answer box(es)")
            if s["charts"] > 1:
                problems.append(f"{where}: {s['charts']} charts on one slide")
        assert not problems, f"{stem}: {len(problems)} problem(s):\n" + "\n".join(problems)
        assert not external, f"the deck fetched from the network: {external[:5]}"
        assert not errors, f"JavaScript errors: {errors}"
    finally:
        page.close()


def test_title_cjk_glyphs_come_from_the_webfont_on_first_paint(browser, site_url):
    """The sidebar title's 显存 is drawn with the book's own CJK webfont from the first paint: the font is
    preloaded (book/_ext/memlib_site.py) and font-display: block (book/_static/memlib.css), so a machine
    without system CJK fonts never shows boxes, not even for a moment."""
    page = browser.new_page(viewport=FIRST_SCREEN)
    try:
        page.route("**/*", lambda r: r.continue_() if urlsplit(r.request.url).hostname == "127.0.0.1" else r.abort())
        page.goto(urljoin(site_url, "index.html"), wait_until="load", timeout=60_000)
        # at the load event, before waiting for document.fonts.ready: the preloaded font is already there
        m = page.evaluate("""() => {
            const title = [...document.querySelectorAll('.navbar-brand .logo__title, .navbar-brand p.title')]
                .find(e => /显存/.test(e.textContent));
            const cs = title && getComputedStyle(title);
            return {title: title && title.textContent.trim(),
                    family: cs && cs.fontFamily, weight: cs && cs.fontWeight, size: cs && cs.fontSize,
                    fonts: [...document.fonts].filter(f => f.family.replace(/"/g, '') === 'Memlib CJK')
                        .map(f => f.weight + ':' + f.status),
                    display: [...document.fonts].filter(f => f.family.replace(/"/g, '') === 'Memlib CJK').map(f => f.display),
                    preloaded: performance.getEntriesByType('resource')
                        .filter(e => /memlib-cjk-.*\\.woff2/.test(e.name)).map(e => e.initiatorType),
                    links: [...document.querySelectorAll('link[rel=preload][as=font]')].map(l => l.getAttribute('href'))};
        }""")
        page.screenshot(path=str(artifacts() / "site-title-first-paint.png"), clip={"x": 0, "y": 0, "width": 400, "height": 120})
        assert m["title"] and "显存" in m["title"], f"no sidebar title with 显存: {m}"
        first = m["family"].split(",")[0].strip().strip('"')
        assert "Memlib CJK" in m["family"], f"the title's font-family does not name the webfont: {m['family']}"
        assert any(l.endswith("memlib-cjk-regular.woff2") for l in m["links"]), f"the CJK font is not preloaded: {m['links']}"
        assert "link" in m["preloaded"], f"the CJK font was not fetched by the preload: {m['preloaded']}"
        # block: until the font arrives the browser draws the text invisible (up to 3 s), never with a
        # fallback that has no CJK glyphs (boxes); swap or fallback would show the boxes first
        assert m["display"] and set(m["display"]) == {"block"}, f"Memlib CJK font-display: {m['display']}"
        weight = "bold" if int(m["weight"]) >= 600 else "normal"
        ok = page.evaluate(f"document.fonts.check('{weight} {m['size']} \"Memlib CJK\"', '显存')")
        assert ok, f"at the load event the webfont is not ready for the title's 显存 ({weight}): {m['fonts']}"
        assert any(s.endswith(":loaded") for s in m["fonts"]), f"Memlib CJK faces: {m['fonts']} (first family {first})"
    finally:
        page.close()
