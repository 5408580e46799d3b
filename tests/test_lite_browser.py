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

5. Every notebook the site serves, found in the folders (the topic notebooks and deep dives, the exercise
   pages, the calculator, the index), opens in JupyterLite and runs all its cells under Pyodide with no error
   output; an exercise page shows no "MyST Renderer!" box before or after running, and its `show()` output is
   Markdown (text/markdown, rendered), not printed text.
6. A playground (notebook 00's playground cell) displays its widgets, and moving its "sequence" slider with the
   keyboard changes the verdict it computes.
7. The first visit's size and time: bytes the browser fetched from the site, and seconds from opening the
   index notebook to a kernel that has run `import memlib` (on 127.0.0.1: no network time; written to
   tests/artifacts/lite-first-load.json when that folder exists).

numpy and matplotlib (the topic notebooks' charts) are WebAssembly builds that only Pyodide's distribution
publishes (its GitHub release, or its CDN; neither PyPI nor npm carries them). The build bundles them from
`tools/build_site.py --pyodide-dist PATH` (the release tarball or its folder), or from the CDN when it can reach
it, and records in its stamp which packages the site serves itself (lite.bundled, lite.from_cdn). A notebook
that imports packages the build could not bundle is skipped with a reason that names them, their missing
dependencies, the Pyodide release that has them and the build option that takes it (the site would need
Pyodide's CDN, which this test blocks); MEMLIB_REQUIRE_LITE_PACKAGES=1 turns that skip into a failure. A site
built with everything bundled (lite.offline) must make no request to another host at all; otherwise only
requests to Pyodide's CDN are tolerated (and aborted). memlib's core needs neither package; exercise pages, the
calculator and the playgrounds run fully offline either way.

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
RUN_ALL_S = 600  # one notebook's cells, numpy and matplotlib loaded from the site included


def lite_notebooks() -> list[str]:
    """Every notebook the JupyterLite site serves (tools/build_site.py's lite_contents), found in the folders:
    new chapters are picked up without editing this list."""
    found = (sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) + sorted((ROOT / "exercises").glob("*.ipynb"))
             + [ROOT / "notebooks" / "calculator.ipynb", ROOT / "notebooks" / "index.ipynb"])
    return [str(p.relative_to(ROOT)) for p in found]


def artifacts() -> Path | None:
    path = Path(os.environ.get("MEMLIB_ARTIFACTS", ROOT / "tests" / "artifacts"))
    return path if path.is_dir() else None


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

    served = [0, 0]  # bytes and files sent (test_first_load_size_and_time resets it)

    def log_message(self, *args):
        pass

    def copyfile(self, source, outputfile):
        Handler.served[0] += os.fstat(source.fileno()).st_size
        Handler.served[1] += 1
        super().copyfile(source, outputfile)


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
                           " && window.jupyterapp.shell.currentWidget.context"
                           " && window.jupyterapp.shell.currentWidget.context.isReady"
                           " && window.jupyterapp.shell.currentWidget.content.widgets.length > 0", timeout=120_000)
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
    assert not _external(context), f"requests to another host: {_external(context)[:5]}"
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


RUN_ALL = """async () => {
    const panel = window.jupyterapp.shell.currentWidget;
    await panel.sessionContext.ready;
    const t0 = performance.now();
    await window.jupyterapp.commands.execute('notebook:run-all-cells');
    const seconds = (performance.now() - t0) / 1000;
    const cells = panel.content.widgets.filter(w => w.model.type === 'code');
    const errors = [], unrun = [], mimes = [];
    cells.forEach((w, i) => {
        if (w.model.executionCount === null) unrun.push(i);
        for (const o of w.model.outputs.toJSON()) {
            if (o.output_type === 'error') errors.push(`cell ${i}: ${o.ename}: ${o.evalue}`);
            mimes.push([w.model.sharedModel.getSource().split('\\n')[0], Object.keys(o.data || {}), o.output_type]);
        }
    });
    return {seconds, cells: cells.length, errors, unrun, mimes};
}"""


def _stamp() -> dict:
    return json.loads((SITE / ".memlib-build.json").read_text())


def _needs_unbundled(path: str) -> list[str]:
    """The packages a notebook imports (its cells' import statements) that the build left on Pyodide's CDN."""
    cdn = set((_stamp().get("lite") or {}).get("from_cdn", []))
    if not cdn:
        return []
    return sorted(_imports(path) & cdn)


def _imports(path: str) -> set[str]:
    """The top-level names a notebook's code cells import (a line magic read as a blank line)."""
    import ast

    nb = json.loads((ROOT / path).read_text(encoding="utf-8"))
    names = set()
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        src = "\n".join("pass" if line.lstrip().startswith(("%", "!")) else line for line in src.split("\n"))
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    return names


def _unbundled_reason(path: str, missing: list[str]) -> str:
    """Exactly what the site lacks for `path`, and how to provide it."""
    lite = _stamp()["lite"]
    version = lite.get("pyodide", "?")
    packages = json.loads((SITE / "lite" / "static" / "pyodide" / "pyodide-lock.json").read_text())["packages"]
    seen, todo = set(), list(missing)
    while todo:  # the dependencies Pyodide's lock gives them
        name = todo.pop()
        if name in packages and name not in seen:
            seen.add(name)
            todo += packages[name]["depends"]
    others = sorted(seen & set(lite.get("from_cdn", [])) - set(missing))
    deps = f" (nor of their dependencies {', '.join(others)})" if others else ""
    return (f"{path} imports {', '.join(missing)}: this build's JupyterLite site does not carry Pyodide {version}'s "
            f"WebAssembly builds of them{deps}, "
            f"so they would come from Pyodide's CDN, which this test blocks (the build could not reach "
            f"{lite.get('pyodide_packages')}). Only Pyodide's own distribution publishes them: download "
            f"pyodide-{version}.tar.bz2 from https://github.com/pyodide/pyodide/releases/tag/{version} and rebuild "
            f"with python tools/build_site.py --pyodide-dist PATH (the tarball or the folder it unpacks to; or "
            f"MEMLIB_PYODIDE_DIST=PATH)")


def _external(context) -> list[str]:
    """Requests to another host that the site made: none at all for a site built with everything bundled
    (lite.offline); else none beyond Pyodide's CDN (the packages the build left there)."""
    if _stamp()["lite"].get("offline"):
        return list(context.external)
    return [u for u in context.external if "cdn.jsdelivr.net/pyodide" not in u]


def _myst_error_boxes(page) -> int:
    return page.locator(".jp-Notebook :text('MyST Renderer!')").count()


@pytest.mark.parametrize("path", lite_notebooks())
def test_notebook_runs_all_cells_in_jupyterlite(path, context, site_url):
    missing = _needs_unbundled(path)
    if missing:
        reason = _unbundled_reason(path, missing)
        if os.environ.get("MEMLIB_REQUIRE_LITE_PACKAGES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    page, errors = open_notebook(context, urljoin(site_url, f"lite/notebooks/index.html?path={path}"))
    try:
        page.wait_for_timeout(1500)  # the stored outputs render
        assert _myst_error_boxes(page) == 0, "a stored output shows jupyterlab-myst's 'MyST Renderer!' box"
        page.set_default_timeout(RUN_ALL_S * 1000)
        result = page.evaluate(RUN_ALL)
        assert not result["errors"], f"{path} in JupyterLite: {result['errors'][:5]}"
        assert not result["unrun"], f"{path}: code cells {result['unrun'][:10]} did not run"
        page.wait_for_timeout(1000)
        assert _myst_error_boxes(page) == 0, "an output shows jupyterlab-myst's 'MyST Renderer!' box after running"
        if path.startswith("exercises/"):
            shown = [m for src, m, _ in result["mimes"] if src.startswith("show(")]
            assert shown and all("text/markdown" in m for m in shown), \
                f"show() printed text instead of rendering Markdown under Pyodide: {shown[:3]}"
        assert not errors, f"JavaScript errors: {errors[:3]}"
        print(f"{path}: {result['cells']} code cells in {result['seconds']:.1f} s")
    finally:
        page.close()
    assert not _external(context), _external(context)[:5]


def test_deep_dives_find_the_repository_data_offline(notebook):
    """The deep dives read recorded measurements from the repository (Path("..") from notebooks/): the site serves
    the .json files in its drive, and the kernel opens them. The JSON Lines rows (validation/published.jsonl, read by
    benchmarks/published.py's load_rows in deep dives 00 and 11 and chapter 11) the drive cannot serve (JupyterLite
    0.8.6 parses every name with "json" after a dot as JSON: tools/build_site.py's LITE_DRIVE_JSON), so the site's
    memlib wheel carries them and load_rows reads them from there: the same rows as this checkout's file."""
    from benchmark_support import load

    page, _ = notebook
    i = cell_index(page, r'check\("00\.4"')
    out = run(page, i, "import json, sys\nfrom pathlib import Path\nROOT = Path('..').resolve()\n"
                       "sys.path.insert(0, str(ROOT))\nfrom benchmarks.published import load_rows\n"
                       "rows = load_rows()\n"
                       "print(ROOT, len(json.loads((ROOT / 'validation' / 'results.json').read_text())['cases']), "
                       "(ROOT / 'benchmarks' / 'published.py').is_file(), len(rows), rows[-1]['id'])")
    local = json.loads((ROOT / "validation" / "results.json").read_text(encoding="utf-8"))["cases"]
    rows = load("published").load_rows()
    assert out.split() == ["/drive", str(len(local)), "True", str(len(rows)), rows[-1]["id"]], out


def test_playground_slider_changes_the_verdict(notebook):
    """Notebook 00's playground cell, run in the open exercise page's kernel: widgets render, and one step of the
    'sequence' slider (2048 -> 4096 tokens) changes the peak memory the verdict states."""
    page, errors = notebook
    source = (ROOT / "notebooks" / "00_memory_anatomy.py").read_text(encoding="utf-8")
    call = re.search(r"^Playground\(.*\)$", source, flags=re.M).group(0)
    i = cell_index(page, r'check\("00\.5"')
    run(page, i, "from memlib.playground import Playground\n" + call)
    cell = page.locator(".jp-Notebook .jp-Cell").nth(i)
    slider = cell.locator(".widget-slider", has=page.locator("label", has_text="sequence"))
    slider.wait_for(timeout=60_000)
    verdict = cell.locator(".widget-html", has_text="needs").first
    before = verdict.inner_text()
    assert "GiB per GPU" in before, before
    slider.locator(".noUi-handle").focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("([el, old]) => el.innerText !== old", arg=[verdict.element_handle(), before],
                           timeout=60_000)
    after = verdict.inner_text()
    peak = [float(re.search(r"peak ([\d.]+) GiB", t).group(1)) for t in (before, after)]
    # activations grow with the sequence: a longer sequence needs more memory at the peak
    assert peak[1] > peak[0], (before, after)
    if artifacts():
        page.screenshot(path=str(artifacts() / "lite-playground.png"))
    assert not errors, f"JavaScript errors: {errors}"


def test_first_load_size_and_time(context, site_url):
    """A first visit (the browser's cache emptied): what the site serves until `import memlib` has run in the
    index notebook (counted by the server: the page's and the kernel's web worker's requests alike), and how long
    that takes here (localhost: no network time)."""
    import time

    blank = context.new_page()
    cdp = context.new_cdp_session(blank)
    cdp.send("Network.clearBrowserCache")
    blank.close()
    Handler.served = [0, 0]
    t0 = time.monotonic()
    page, _ = open_notebook(context, urljoin(site_url, "lite/notebooks/index.html?path=notebooks/index.ipynb"))
    ui = time.monotonic() - t0
    try:
        out = run(page, cell_index(page, r"^import memlib"), timeout_s=KERNEL_START_S)
        ready = time.monotonic() - t0
    finally:
        page.close()
    assert "memlib" in out and "Error" not in out, out
    nbytes, requests = Handler.served
    record = {"bytes": nbytes, "MiB": round(nbytes / 2**20, 1), "requests": requests,
              "seconds_to_notebook": round(ui, 1), "seconds_to_memlib": round(ready, 1)}
    print(f"first load: {record}")
    if artifacts():
        (artifacts() / "lite-first-load.json").write_text(json.dumps(record, indent=1))
    assert requests > 10 and nbytes > 2**20, record  # Pyodide's WebAssembly alone is several MB
