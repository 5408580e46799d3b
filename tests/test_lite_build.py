"""The JupyterLite site's build steps that need no browser (tools/build_site.py): the notebooks as the site serves
them, Pyodide's packages taken from a distribution and checked against its lock, and the lock entries the site adds.
The site itself, in a browser: tests/test_lite_browser.py."""

from __future__ import annotations

import hashlib
import json
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
