"""The JupyterLite site's build steps that need no browser (tools/build_site.py): the notebooks as the site serves
them, Pyodide's packages taken from a distribution and checked against its lock, and the lock entries the site adds.
The site itself, in a browser: tests/test_lite_browser.py."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import build_site  # noqa: E402


def _nb(*cells):
    return {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def _code(source, outputs=()):
    return {"cell_type": "code", "source": source, "metadata": {}, "outputs": list(outputs), "execution_count": None}


def test_line_magic_becomes_the_call_ipython_makes():
    """`%matplotlib inline` is what IPython's own transformer turns into run_line_magic('matplotlib', 'inline');
    a cell magic (%%), an indented line and a `%` inside an expression are left alone."""
    from IPython.core.inputtransformer2 import TransformerManager

    nb = _nb(_code(["%matplotlib inline\n", "import matplotlib.pyplot as plt\n", "x = 7 % 3"]),
             _code("%%time\nx = 1"), _code("if True:\n    %time x = 1"), _code("%pip install tqdm"))
    assert build_site.lite_notebook(nb) == 1
    assert nb["cells"][3]["source"] == "%pip install tqdm"  # Pyodide's kernel rewrites %pip itself (piplite)
    first = nb["cells"][0]["source"]
    assert first == "get_ipython().run_line_magic('matplotlib', 'inline')\nimport matplotlib.pyplot as plt\nx = 7 % 3"
    compile(first, "<cell>", "exec")  # valid Python: Pyodide's import scan can read it
    ipython = TransformerManager().transform_cell("%matplotlib inline\n")
    assert ipython.strip() == "get_ipython().run_line_magic('matplotlib', 'inline')"
    assert nb["cells"][1]["source"] == "%%time\nx = 1" and nb["cells"][2]["source"] == "if True:\n    %time x = 1"


def test_lists_of_lines_are_joined_as_jupyter_serves_them():
    out = {"output_type": "display_data", "metadata": {},
           "data": {"text/markdown": ["**00.1**\n", "\n", "How much?"], "text/plain": ["<Markdown>"],
                    "application/json": {"a": [1, 2]}}}
    stream = {"output_type": "stream", "name": "stdout", "text": ["a\n", "b\n"]}
    nb = _nb(_code(["x = 1\n", "x"], [out, stream]), {"cell_type": "markdown", "source": ["# T\n", "text"], "metadata": {}})
    build_site.lite_notebook(nb)
    code, md = nb["cells"]
    assert code["source"] == "x = 1\nx" and md["source"] == "# T\ntext"
    assert code["outputs"][0]["data"]["text/markdown"] == "**00.1**\n\nHow much?"
    assert code["outputs"][0]["data"]["application/json"] == {"a": [1, 2]}
    assert code["outputs"][1]["text"] == "a\nb\n"


def test_every_served_notebook_setup_cell_parses_after_the_rewrite():
    """Each notebook the site serves: after lite_notebook, every code cell that IPython can run is valid Python, so
    Pyodide's kernel sees its imports (the chapters' setup cells start with %matplotlib inline)."""
    import ast

    paths = ([ROOT / "notebooks" / "index.ipynb", ROOT / "notebooks" / "calculator.ipynb"] + build_site.topic_notebooks()
             + sorted((ROOT / "exercises").glob("*.ipynb")))
    for path in paths:
        nb = json.loads(path.read_text(encoding="utf-8"))
        build_site.lite_notebook(nb)
        for i, cell in enumerate(nb["cells"]):
            if cell["cell_type"] == "code":
                ast.parse(cell["source"], filename=f"{path.name} cell {i}")


def _fake_lock(files: dict[str, bytes]) -> dict:
    return {"info": {}, "packages": {name: {"name": name, "version": "1.0", "file_name": f"{name}-1.0-py3-none-any.whl",
                                            "sha256": hashlib.sha256(data).hexdigest(), "depends": []}
                                     for name, data in files.items()}}


def test_pyodide_packages_from_a_distribution_folder_checked_against_the_lock(tmp_path):
    dist = tmp_path / "pyodide"
    dist.mkdir()
    lock = _fake_lock({"numpy": b"numpy wheel", "matplotlib": b"matplotlib wheel"})
    (dist / "numpy-1.0-py3-none-any.whl").write_bytes(b"numpy wheel")
    (dist / "matplotlib-1.0-py3-none-any.whl").write_bytes(b"tampered")
    got, failed = build_site.lite_pyodide_packages(lock, ["numpy", "matplotlib"], tmp_path / "cache", str(dist))
    assert list(got) == ["numpy"] and got["numpy"].read_bytes() == b"numpy wheel"
    assert failed == ["matplotlib (sha256 differs from Pyodide's lock)"]
    # a source that cannot be reached: reported, nothing cached
    got, failed = build_site.lite_pyodide_packages(lock, ["matplotlib"], tmp_path / "cache2", str(tmp_path / "none"))
    assert got == {} and failed and failed[0].startswith("matplotlib (")


def test_pyodide_packages_from_a_release_tarball(tmp_path):
    import tarfile

    lock = _fake_lock({"numpy": b"numpy wheel"})
    whl = tmp_path / "numpy-1.0-py3-none-any.whl"
    whl.write_bytes(b"numpy wheel")
    tarball = tmp_path / "pyodide-1.0.tar.bz2"
    with tarfile.open(tarball, "w:bz2") as tar:
        tar.add(whl, arcname="pyodide/numpy-1.0-py3-none-any.whl")
    got, failed = build_site.lite_pyodide_packages(lock, ["numpy"], tmp_path / "cache", str(tarball))
    assert not failed and got["numpy"].read_bytes() == b"numpy wheel"


def test_lock_serves_local_packages_and_adds_memlib_and_ipywidgets(tmp_path):
    lock = _fake_lock({"numpy": b"n", "pillow": b"p"})
    local = tmp_path / "numpy-1.0-py3-none-any.whl"
    local.write_bytes(b"n")
    memlib = tmp_path / "memlib-0.1.0-py3-none-any.whl"
    memlib.write_bytes(b"m")
    widgets = tmp_path / "ipywidgets-8.1.9-py3-none-any.whl"
    widgets.write_bytes(b"w")
    out = build_site.lite_lock(lock, {"numpy": local}, memlib, "https://cdn.example/", widgets)["packages"]
    assert out["numpy"]["file_name"] == local.name
    assert out["pillow"]["file_name"] == "https://cdn.example/pillow-1.0-py3-none-any.whl"
    assert out["memlib"]["depends"] == [] and out["memlib"]["imports"] == ["memlib"]
    assert out["ipywidgets"]["version"] == "8.1.9" and out["ipywidgets"]["imports"] == ["ipywidgets"]
    assert out["ipywidgets"]["sha256"] == hashlib.sha256(b"w").hexdigest()


@pytest.mark.parametrize("kernel, expected", [("pyodide_kernel.interpreter", True), ("IPython.terminal.interactiveshell", False)])
def test_grading_renders_markdown_under_the_pyodide_kernel(kernel, expected, monkeypatch):
    """memlib.grading's show()/solution()/check() display Markdown in a notebook kernel: ipykernel (IPKernelApp in its
    config) or JupyterLite's Pyodide kernel (its shell's class lives in pyodide_kernel); plain text in a terminal."""
    import IPython

    from memlib.learn import grading

    shell_cls = type("Interpreter", (), {"__module__": kernel, "config": {}})
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell_cls())
    assert grading._in_notebook() is expected


# --- the repository data the deep dives read (JupyterLite's drive cannot serve JSON Lines) ---------------------


def test_drive_json_rule_is_jupyterlites():
    """LITE_DRIVE_JSON is the expression JupyterLite's drive uses to decide that a file is JSON (it then runs
    JSON.parse on the text): found verbatim in the installed jupyterlite-core's application bundle."""
    import importlib.util
    import tarfile

    assert build_site.lite_drive_parses_as_json("published.jsonl")
    assert build_site.lite_drive_parses_as_json("results.json") and build_site.lite_drive_parses_as_json("x.ipynb")
    assert not build_site.lite_drive_parses_as_json("published.py")
    assert not build_site.lite_drive_parses_as_json("json_notes.txt")  # "json" before the last dot only
    # the JSON Lines files are what the wheel carries; the .json files stay in the drive (they parse)
    carried = [p.relative_to(ROOT).as_posix() for p in build_site.lite_wheel_data()]
    assert "validation/published.jsonl" in carried and all(p.endswith(".jsonl") for p in carried)
    spec = importlib.util.find_spec("jupyterlite_core")
    if spec is None:
        pytest.skip("jupyterlite-core is not installed (the site extra): the bundle's rule cannot be read")
    (app,) = Path(spec.origin).parent.glob("jupyterlite-app-*.tgz")
    literal = "/" + build_site.LITE_DRIVE_JSON.pattern + "/"
    with tarfile.open(app) as tar:
        found = [m.name for m in tar.getmembers() if m.name.endswith(".js") and m.isfile()
                 and literal.encode() in tar.extractfile(m).read()]
    assert found, f"{literal} is not in {app.name}: JupyterLite's drive changed its rule; revisit lite_wheel_data"


def _wheel(path: Path, files: dict[str, bytes]) -> Path:
    import base64
    import zipfile

    with zipfile.ZipFile(path, "w") as z:
        rows = []
        for name, data in files.items():
            z.writestr(name, data)
            rows.append(f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}")
        z.writestr("memlib-0.1.0.dist-info/RECORD", "\n".join(rows + ["memlib-0.1.0.dist-info/RECORD,,"]) + "\n")
    return path


def test_wheel_carries_the_data_and_lists_it_in_record(tmp_path):
    import zipfile

    wheel = _wheel(tmp_path / "memlib-0.1.0-py3-none-any.whl", {"memlib/__init__.py": b"x = 1\n"})
    rows = tmp_path / "published.jsonl"
    rows.write_bytes(b'{"id": "a"}\n{"id": "b"}\n')
    build_site.lite_wheel_add(wheel, {"memlib/_repo_data/validation/published.jsonl": rows})
    with zipfile.ZipFile(wheel) as z:
        assert z.testzip() is None
        assert z.read("memlib/_repo_data/validation/published.jsonl") == rows.read_bytes()
        assert z.read("memlib/__init__.py") == b"x = 1\n"
        record = z.read("memlib-0.1.0.dist-info/RECORD").decode().splitlines()
    # PEP 376/427: path,sha256=<urlsafe base64 of the digest, no padding>,size; RECORD itself last, unhashed
    # sha256(b'{"id": "a"}\n{"id": "b"}\n') written out by hand through hashlib, not read from the wheel
    import base64

    digest = base64.urlsafe_b64encode(hashlib.sha256(b'{"id": "a"}\n{"id": "b"}\n').digest()).rstrip(b"=").decode()
    assert f"memlib/_repo_data/validation/published.jsonl,sha256={digest},24" in record
    assert record[-1] == "memlib-0.1.0.dist-info/RECORD,," and len(record) == 3


def test_load_rows_reads_the_wheels_copy_where_the_repository_file_cannot_be_opened(tmp_path, monkeypatch):
    """benchmarks/published.py's load_rows in JupyterLite: the drive refuses validation/published.jsonl, the rows
    come from memlib/_repo_data/validation/published.jsonl (the site's wheel); a file that is not the repository's
    still raises."""
    import importlib.resources

    from benchmark_support import load

    bench = load("published")
    repo, site_packages = tmp_path / "drive", tmp_path / "site-packages"
    (repo / "validation").mkdir(parents=True)
    copy = site_packages / "memlib" / "_repo_data" / "validation" / "published.jsonl"
    copy.parent.mkdir(parents=True)
    copy.write_text('{"id": "a"}\n\n{"id": "b"}\n', encoding="utf-8")
    monkeypatch.setattr(bench, "REPO", repo)
    real_files = importlib.resources.files
    monkeypatch.setattr(importlib.resources, "files",
                        lambda pkg: site_packages / "memlib" if pkg == "memlib" else real_files(pkg))
    assert [r["id"] for r in bench.load_rows(repo / "validation" / "published.jsonl")] == ["a", "b"]
    with pytest.raises(FileNotFoundError):
        bench.load_rows(repo / "validation" / "other.jsonl")  # no copy of it
    with pytest.raises(FileNotFoundError):
        bench.load_rows(tmp_path / "elsewhere.jsonl")  # not a repository file
    # in this checkout the repository's own file is read (no copy under memlib/)
    monkeypatch.setattr(importlib.resources, "files", real_files)
    assert not (ROOT / "memlib" / "_repo_data").exists()
    assert len(bench.load_rows()) == sum(1 for ln in bench.PUBLISHED.read_text().splitlines() if ln.strip())


# --- an offline site: Pyodide's packages from its distribution -------------------------------------------------


# Pyodide 314.0.6's lock info (its npm package's pyodide-lock.json): the lock names no Pyodide version
INFO_314 = {"abi_version": "2026_0", "arch": "wasm32", "platform": "emscripten_5_0_3", "python": "3.14.2"}
INFO_027 = {"arch": "wasm32", "platform": "emscripten_3_1_58", "python": "3.12.7"}  # Pyodide 0.27.7's


def _fake_dist(root: Path, version: str | None, packages: dict[str, tuple[bytes, list[str]]],
               info: dict = INFO_314) -> tuple[Path, dict]:
    """A Pyodide distribution folder as the release tarball unpacks (pyodide/: package.json, pyodide.mjs, the lock,
    the wheels); version None: no package.json."""
    dist = root / "pyodide"
    dist.mkdir(parents=True)
    (dist / "pyodide.mjs").write_text("export const loadPyodide = 0;")
    (dist / "pyodide.asm.wasm").write_bytes(b"\0asm")
    if version:
        (dist / "package.json").write_text(json.dumps({"name": "pyodide", "version": version}))
    lock = {"info": info, "packages": {}}
    for name, (data, depends) in packages.items():
        file_name = f"{name}-1.0-cp314-cp314-pyodide_2026_0_wasm32.whl"
        (dist / file_name).write_bytes(data)
        lock["packages"][name] = {"name": name, "version": "1.0", "file_name": file_name, "install_dir": "site",
                                  "sha256": hashlib.sha256(data).hexdigest(), "package_type": "package",
                                  "imports": [name], "depends": depends, "unvendored_tests": False}
    (dist / "pyodide-lock.json").write_text(json.dumps(lock))
    return dist, lock


def test_distribution_packages_are_served_by_the_site_and_the_kernel_config_points_at_them(tmp_path):
    """A fake distribution: matplotlib's closure (numpy, pyparsing) is copied next to pyodide.mjs, the site's lock
    names each by a relative file name with its sha256, and the kernel's settings point at that folder, so that
    Pyodide (indexURL = pyodideUrl up to its last "/", as pyodide-kernel 0.8.6 sets it) finds every file in the
    site; a package no notebook needs (scipy) stays on the CDN."""
    dist, lock = _fake_dist(tmp_path / "release", "314.0.6", {
        "numpy": (b"numpy build", []), "pyparsing": (b"pyparsing build", []),
        "matplotlib": (b"matplotlib build", ["numpy", "pyparsing"]), "scipy": (b"scipy build", ["numpy"]),
        "micropip": (b"micropip build", [])})
    assert build_site.lite_dist_release(str(dist.parent)) == {"version": "314.0.6", "info": INFO_314}
    assert build_site.lite_dist_mismatch(build_site.lite_dist_release(str(dist.parent)), "314.0.6", lock) is None
    wanted = [n for n in build_site.lite_closure(lock, build_site.LITE_NOTEBOOK_ROOTS)]
    assert wanted == ["matplotlib", "numpy", "pyparsing"]
    # the folder the tarball unpacks into, given as its parent (pyodide/ inside) as well as itself
    got, failed = build_site.lite_pyodide_packages(lock, wanted, tmp_path / "cache", str(dist.parent))
    assert not failed and sorted(got) == wanted
    site = tmp_path / "site"
    memlib = _wheel(tmp_path / "memlib-0.1.0-py3-none-any.whl", {"memlib/__init__.py": b""})
    local = build_site.lite_pyodide_dir(site / "static" / "pyodide", dist, lock, got, memlib, None,
                                        "https://cdn.example/")
    assert sorted(local) == wanted
    (site / "jupyter-lite.json").write_text(json.dumps({"jupyter-config-data": {}}))
    build_site.lite_settings(site / "jupyter-lite.json", ["memlib"])
    settings = json.loads((site / "jupyter-lite.json").read_text())["jupyter-config-data"]["litePluginSettings"]
    pyodide_url = settings[build_site.LITE_PLUGIN]["pyodideUrl"]
    index_url = pyodide_url[:pyodide_url.rindex("/") + 1]  # pyodide-kernel 0.8.6, kernel.ts initRemoteOptions
    folder = (site / index_url).resolve()
    assert (folder / "pyodide.mjs").is_file() and folder == (site / "static" / "pyodide").resolve()
    served = json.loads((folder / "pyodide-lock.json").read_text())["packages"]
    for name in wanted + ["memlib"]:
        entry = served[name]
        assert "/" not in entry["file_name"], entry  # relative: resolved against indexURL, the site itself
        assert hashlib.sha256((folder / entry["file_name"]).read_bytes()).hexdigest() == entry["sha256"]
    assert (folder / served["numpy"]["file_name"]).read_bytes() == b"numpy build"
    assert served["scipy"]["file_name"].startswith("https://cdn.example/")
    assert settings[build_site.LITE_PLUGIN]["loadPyodideOptions"]["packages"] == ["memlib"]


def test_distribution_version_is_read_from_a_folder_or_tarball_and_checked(tmp_path, monkeypatch):
    import tarfile

    dist, _ = _fake_dist(tmp_path / "old", "0.27.7", {"numpy": (b"n", [])}, INFO_027)
    tarball = tmp_path / "pyodide-0.27.7.tar.bz2"
    with tarfile.open(tarball, "w:bz2") as tar:
        tar.add(dist, arcname="pyodide")
    assert build_site.lite_dist_release(str(tarball)) == {"version": "0.27.7", "info": INFO_027}
    assert build_site.lite_dist_release("https://cdn.jsdelivr.net/pyodide/v314.0.6/full/") is None
    with pytest.raises(SystemExit, match="cannot read"):
        build_site.lite_dist_release(str(tmp_path / "missing.tar.bz2"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit, match="no pyodide-lock.json"):
        build_site.lite_dist_release(str(tmp_path / "empty"))
    # no package.json: the lock's Python and ABI tell another Pyodide
    bare, _ = _fake_dist(tmp_path / "bare", None, {"numpy": (b"n", [])}, INFO_027)
    lock_314 = {"info": INFO_314, "packages": {}}
    why = build_site.lite_dist_mismatch(build_site.lite_dist_release(str(bare)), "314.0.6", lock_314)
    assert why and "3.12.7" in why and "3.14.2" in why
    # the build refuses a distribution of another Pyodide than the kernel's, before building anything
    core = tmp_path / "core"
    core.mkdir()
    (core / "pyodide-lock.json").write_text(json.dumps(lock_314))
    monkeypatch.setattr(build_site, "lite_pyodide_version", lambda: "314.0.6")
    monkeypatch.setattr(build_site, "lite_pyodide_core", lambda version, cache: core)
    monkeypatch.setattr(build_site, "lite_contents", lambda *a: pytest.fail("built despite the wrong version"))
    with pytest.raises(SystemExit, match=r"is Pyodide 0\.27\.7.*runs Pyodide 314\.0\.6.*--pyodide-dist"):
        build_site.lite(tmp_path / "html", tmp_path / "out", str(tarball))
    monkeypatch.setenv("MEMLIB_PYODIDE_DIST", str(dist))
    with pytest.raises(SystemExit, match=r"is Pyodide 0\.27\.7"):
        build_site.lite(tmp_path / "html", tmp_path / "out")


def test_a_distribution_that_lacks_a_package_stops_the_build(tmp_path, monkeypatch):
    """With --pyodide-dist the site must need no other host: a missing package is an error naming it, not a
    silent fallback to the CDN."""
    dist, lock = _fake_dist(tmp_path / "release", "314.0.6", {"numpy": (b"n", []), "matplotlib": (b"m", ["numpy"])})
    (dist / lock["packages"]["matplotlib"]["file_name"]).unlink()
    core = tmp_path / "core"
    shutil.copytree(dist, core)
    monkeypatch.setattr(build_site, "lite_pyodide_version", lambda: "314.0.6")
    monkeypatch.setattr(build_site, "lite_contents", lambda dest: [])
    monkeypatch.setattr(build_site, "lite_memlib_wheel", lambda dest: tmp_path / "memlib.whl")
    monkeypatch.setattr(build_site, "lite_pyodide_core", lambda version, cache: core)
    monkeypatch.setattr(build_site, "lite_download", lambda specs, dest: None)
    wheels = tmp_path / "out" / "cache" / "lite" / "wheels"
    wheels.mkdir(parents=True)
    (wheels / f"comm-{build_site.LITE_COMM_VERSION}-py3-none-any.whl").write_bytes(b"c")
    from importlib.metadata import version as installed

    try:
        (wheels / f"ipywidgets-{installed('ipywidgets')}-py3-none-any.whl").write_bytes(b"w")
    except Exception:
        pytest.skip("ipywidgets is not installed")
    with pytest.raises(SystemExit, match=r"1 of the packages .* could not be taken from .*matplotlib.*--pyodide-dist"):
        build_site.lite(tmp_path / "html", tmp_path / "out", str(dist))
