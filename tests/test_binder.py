"""Binder: every module the notebooks, solutions and exercises import is provided by
environment.yml (or the standard library, or memlib itself), and JupyterLab opens the
Jupytext .py sources as notebooks."""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(p for d in ("notebooks", "solutions", "exercises") for p in (ROOT / d).glob("*.py"))

# Import name -> the environment.yml distribution that provides it (directly or as a
# dependency it pins: IPython and ipykernel come with jupyterlab).
PROVIDED_BY = {"numpy": "numpy", "matplotlib": "matplotlib", "ipywidgets": "ipywidgets", "IPython": "jupyterlab",
               "ipykernel": "jupyterlab", "jupytext": "jupytext", "nbformat": "jupyterlab", "voila": "voila",
               "memlib": "-e .",
               # the repository's own scripts (the 00 deep dive imports benchmarks/published.py from the clone
               # Binder serves; the notebook puts the repository on sys.path)
               "benchmarks": "-e ."}


def pinned() -> set[str]:
    text = (ROOT / "environment.yml").read_text(encoding="utf-8")
    names = set(re.findall(r"^\s*-\s*([A-Za-z0-9_.\-]+)==", text, flags=re.M))
    if re.search(r"^\s*-\s*-e \.\s*$", text, flags=re.M):
        names.add("-e .")
    return names


def imports(path: Path) -> set[str]:
    nb = jupytext.read(path)
    found = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        code = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("path", SOURCES, ids=[str(p.relative_to(ROOT)) for p in SOURCES])
def test_every_import_is_in_environment_yml(path):
    env = pinned()
    for name in imports(path):
        if name in sys.stdlib_module_names:
            continue
        assert name in PROVIDED_BY, f"{path.name} imports {name!r}: add it to environment.yml and PROVIDED_BY"
        assert PROVIDED_BY[name] in env, f"{path.name} imports {name!r} but environment.yml lacks {PROVIDED_BY[name]}"


def test_jupyterlab_opens_py_sources_as_notebooks():
    """postBuild (run by Binder after environment.yml) makes Jupytext's notebook the default
    viewer for .py files, as Jupytext's documentation describes for JupyterLab 4."""
    post = (ROOT / "postBuild").read_text(encoding="utf-8")
    start, end = post.index("<<'JSON'") + len("<<'JSON'"), post.index("\nJSON")
    settings = json.loads(post[start:end])
    viewers = settings["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]
    assert viewers["python"] == "Jupytext Notebook"
    assert (ROOT / "postBuild").stat().st_mode & 0o111, "postBuild must be executable"
