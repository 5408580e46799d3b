"""The JupyterLite site (python tools/build_site.py -> _build/html/lite) in a real browser, offline.

Serves the built book on 127.0.0.1 (a free port; the JupyterLite site is its lite/ folder) and drives it
in headless Chromium through Playwright (the system Chromium, as the book's other browser tests). Every
request to another host is aborted and recorded, so the test proves what a visitor needs no network for:
Pyodide's core comes from the npm package the build unpacked into lite/static/pyodide/, the kernel's
packages and memlib from the wheels beside it.

1. The "Try it live" link of an exercise page of the book opens the learner's copy in JupyterLite.
2. The kernel starts offline, memlib is already installed, and a `check()` cell grades two answers:
   "13.5 GB" for 00.1 (LLaMA-7B's weights in bf16: 6,738,415,616 parameters, the count of the LLaMA
   paper's 7B model as Hugging Face's config builds it, x 2 bytes = 13.48 GB) gets a ✅, "1 GB" a ❌.
3. One memlib estimate runs in Pyodide and equals the same call in this CPython process (the code is the
   same; the test shows the browser's Python computes what the book's figures were computed with).
4. The grader's progress file (.memlib_progress.json, in the notebook's folder of JupyterLite's virtual
   drive) survives a page reload and a new kernel: the browser keeps it (IndexedDB).

numpy and matplotlib are not bundled: Pyodide's CDN serves them to a visitor on first import (memlib's core
needs neither; the topic notebooks' charts need matplotlib). The test records those blocked requests and
says so; nothing in it needs them.

Skipped (with the reason) without Playwright, a Chromium binary or a built JupyterLite site, or when the
build is older than its sources; with MEMLIB_REQUIRE_BROWSER=1 (.ci/run) each of these fails instead.
MEMLIB_SITE_DIR overrides the site folder (the book's html folder).
"""

from __future__ import annotations

import functools
import json
import os
import re
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
from browser_support import chromium as _chromium, missing as _missing

ROOT = Path(__file__).resolve().parents[1]
SITE = Path(os.environ.get("MEMLIB_SITE_DIR", ROOT / "_build" / "html"))
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-default-apps",
                 "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
EXERCISE = "exercises/00_memory_anatomy_exercises.ipynb"
KERNEL_START_S = 240  # Pyodide's start and the kernel's packages, on a busy 2-core machine


def lite_site() -> Path:
    """The built book with its JupyterLite site, checked to be built from the sources as they are now."""
    import importlib.util
    import sys

    stamp = SITE / ".memlib-build.json"
    if not stamp.is_file():
        _missing(f"no built site in {SITE} (python tools/build_site.py)")
    recorded = json.loads(stamp.read_text())
    if not recorded.get("lite") or not (SITE / "lite" / "jupyter-lite.json").is_file():
        _missing(f"the site in {SITE} has no JupyterLite build (python tools/build_site.py without --no-lite)")
    spec = importlib.util.spec_from_file_location("build_site", ROOT / "tools" / "build_site.py")
    build_site = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = build_site
    spec.loader.exec_module(build_site)
    now = {**build_site.source_digest(), **build_site.lite_digest()}
    was = {**recorded["sources"], **recorded["lite"].get("sources", {})}
    stale = sorted(k for k, v in now.items() if was.get(k) != v)
    if stale:
        _missing(f"the site in {SITE} is older than {', '.join(stale[:5])}: rebuild (python tools/build_site.py)")
    return SITE


class Handler(SimpleHTTPRequestHandler):
    # what a static host sends for Pyodide's ES modules and WebAssembly
    extensions_map = {**SimpleHTTPRequestHandler.extensions_map, ".mjs": "text/javascript",
                      ".js": "text/javascript", ".wasm": "application/wasm", ".json": "application/json"}

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site_url():
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _missing("playwright is not installed (pip install -e '.[browser]')")
    root = lite_site()
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def context(site_url, tmp_path_factory):
    from playwright.sync_api import sync_playwright

    path = _chromium()
    if path is None:
        _missing("no Chromium binary (apt-get install chromium, or set MEMLIB_CHROMIUM)")
    with sync_playwright() as p:
        # a persistent profile: the reload in test 4 must find what the first visit stored
        ctx = p.chromium.launch_persistent_context(str(tmp_path_factory.mktemp("profile")), executable_path=path,
                                                   args=CHROMIUM_ARGS, timeout=60_000,
                                                   viewport={"width": 1280, "height": 900})
        ctx.external = []

        def route(r):
            if urlsplit(r.request.url).hostname == "127.0.0.1":
                r.continue_()
            else:
                ctx.external.append(r.request.url)
                r.abort()

        ctx.route("**/*", route)
        try:
            yield ctx
        finally:
            ctx.close()


RUN_CELL = """async ([index, source]) => {
    const panel = window.jupyterapp.shell.currentWidget;
    const nb = panel.content;
    const cell = nb.widgets[index];
    if (source !== null) cell.model.sharedModel.setSource(source);
    nb.activeCellIndex = index;
    nb.deselectAll();
    await window.jupyterapp.commands.execute('notebook:run-cell');
    const out = cell.model.outputs.toJSON();
    return out.map(o => {
        const d = o.data || {};
        const pick = d['text/markdown'] || d['text/plain'] || d['text/html'] || o.text || (o.traceback || []).join('\\n') || '';
        return Array.isArray(pick) ? pick.join('') : pick;
    }).join('\\n');
}"""


def open_notebook(ctx, url: str):
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url, timeout=120_000)
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
                           " && window.jupyterapp.shell.currentWidget.content"
                           " && window.jupyterapp.shell.currentWidget.content.widgets.length > 3", timeout=120_000)
    page.evaluate("""async () => { const s = window.jupyterapp.shell.currentWidget.sessionContext;
        await s.ready; }""")
    return page, errors


def run(page, index: int, source: str | None = None, timeout_s: float = 120) -> str:
    page.set_default_timeout(timeout_s * 1000)
    return page.evaluate(RUN_CELL, [index, source])


def cell_index(page, pattern: str) -> int:
    sources = page.evaluate("() => window.jupyterapp.shell.currentWidget.content.widgets"
                            ".map(w => w.model.sharedModel.getSource())")
    return next(i for i, s in enumerate(sources) if re.search(pattern, s))


@pytest.fixture(scope="module")
def notebook(context, site_url):
    """The learner's copy of exercise notebook 00, opened from its book page's "Try it live" link."""
    book = context.new_page()
    book.goto(urljoin(site_url, "exercises/00_memory_anatomy_exercises.html"))
    live = book.locator(".memlib-launch a.memlib-lite")
    assert live.count() == 1, "no 'Try it live' link on the exercise page"
    href = urljoin(book.url, live.get_attribute("href"))
    book.close()
    assert urlsplit(href).path.startswith("/lite/") and EXERCISE in href, href
    page, errors = open_notebook(context, href)
    first = cell_index(page, r"^import memlib")
    out = run(page, first, timeout_s=KERNEL_START_S)  # the kernel starts here: Pyodide, IPython, memlib
    assert "Error" not in out, f"the notebook's first cell failed in JupyterLite:\n{out}"
    yield page, errors
    page.close()


def test_check_grades_answers_in_jupyterlite(notebook, context):
    page, errors = notebook
    i = cell_index(page, r'check\("00\.1"')
    right = run(page, i, 'answer = "13.5 GB"\ncheck("00.1", answer)')
    assert "✅" in right and "13.48 GB" in right, right
    wrong = run(page, i, 'answer = "1 GB"\ncheck("00.1", answer)')
    assert "❌" in wrong and "✅" not in wrong, wrong
    page.screenshot(path=str(ROOT / "tests" / "artifacts" / "lite-00-check.png")) if (ROOT / "tests" / "artifacts").is_dir() else None
    local = [u for u in context.external if "cdn.jsdelivr.net/pyodide" not in u]
    assert not local, f"requests to the network beyond Pyodide's CDN: {local[:5]}"
    assert not errors, f"JavaScript errors: {errors}"


def test_memlib_estimate_runs_in_pyodide(notebook):
    import memlib

    page, _ = notebook
    i = cell_index(page, r'check\("00\.2"')
    code = ('import memlib, sys\n'
            'est = memlib.estimate_training(memlib.get_model("llama-7b"), seq_len=2048, micro_batch=1,'
            ' precision="bf16-mixed", optimizer="adamw")\n'
            'print(sys.platform, memlib.get_model("llama-7b").num_params, est.peak_bytes)')
    out = run(page, i, code)
    expected = memlib.estimate_training(memlib.get_model("llama-7b"), seq_len=2048, micro_batch=1,
                                        precision="bf16-mixed", optimizer="adamw").peak_bytes
    m = re.search(r"(\w+) (\d+) (\d+)", out)
    assert m, out
    # emscripten: the estimate ran in Pyodide; 6,738,415,616: LLaMA-7B's parameter count (HF config)
    assert m.group(1) == "emscripten" and int(m.group(2)) == 6_738_415_616
    assert int(m.group(3)) == expected, f"Pyodide: {m.group(3)} B, CPython: {expected} B"


def test_progress_persists_in_browser_storage(notebook, context, site_url):
    page, _ = notebook
    i = cell_index(page, r'check\("00\.3"')
    out = run(page, i, 'import os, json; print(os.getcwd(), json.load(open(".memlib_progress.json"))["exercises"]["00.1"]["best"])')
    assert out.split() == ["/drive/exercises", "correct"], out
    # a new page (a new kernel) reads what the first wrote: the file is in the browser's storage
    url = page.url
    page.wait_for_timeout(1500)  # the drive writes through to IndexedDB asynchronously
    second, _ = open_notebook(context, url)
    try:
        j = cell_index(second, r"^import memlib")
        run(second, j, "import json; print(json.load(open('.memlib_progress.json'))['exercises']['00.1']['best'])",
            timeout_s=KERNEL_START_S)
        out = run(second, j, "from memlib.grading import score; score('00')")
        assert "00.1" in out or "1" in out, out
        text = run(second, j, "print(open('.memlib_progress.json').read())")
        assert json.loads(text)["exercises"]["00.1"]["best"] == "correct", text
    finally:
        second.close()
