"""The notebooks as documents: each .py source agrees with its .ipynb, no widget state is
stored, topic notebooks follow the skeleton (notebooks/STYLE.md), and their fact-check
tables have at least 10 rows. nbval executes them separately (pytest --nbval-lax)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jupytext
import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
PAIRED = sorted(p for d in ("notebooks", "solutions", "exercises") for p in (ROOT / d).glob("*.py")
                if not p.name.startswith("_"))
TOPICS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))
SKELETON = [r"## 1\. The question", r"## 2\. What the interviewer is probing", r"## 3\. The answer",
            r"## 4\. Charts", r"## 5\. Playground", r"## 6\. Fact-check", r"## 7\. The 30-second answer",
            r"## 8\. Follow-up questions", r"## 9\. Pitfalls"]


def _cells(nb):
    return [(c.cell_type, c.source.strip()) for c in nb.cells]


@pytest.mark.parametrize("py", PAIRED, ids=[str(p.relative_to(ROOT)) for p in PAIRED])
def test_py_and_ipynb_agree(py):
    ipynb = py.with_suffix(".ipynb")
    assert ipynb.exists(), f"{py.name} has no paired .ipynb (run jupytext --sync)"
    source = jupytext.read(py)
    stored = nbformat.read(ipynb, as_version=4)
    assert _cells(source) == _cells(stored), f"{py.name} and {ipynb.name} differ: run jupytext --sync"


@pytest.mark.parametrize("py", PAIRED, ids=[str(p.relative_to(ROOT)) for p in PAIRED])
def test_py_is_exactly_what_jupytext_writes_from_the_ipynb(py):
    # Jupytext's contents manager refuses to open a pair whose newer .py differs from the .ipynb's
    # text (cell metadata order included); in a fresh clone either file can be the newer one.
    text = jupytext.writes(jupytext.read(py.with_suffix(".ipynb")), fmt="py:percent")
    assert text == py.read_text(encoding="utf-8"), f"{py.name}: run jupytext --sync {py.with_suffix('.ipynb')}"


@pytest.mark.parametrize("py", PAIRED, ids=[str(p.relative_to(ROOT)) for p in PAIRED])
def test_no_widget_state_and_outputs_kept(py):
    nb = json.loads(py.with_suffix(".ipynb").read_text(encoding="utf-8"))
    assert "widgets" not in nb.get("metadata", {}), "widget state is stored: run tools/clean_notebooks.py"
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(c.get("execution_count") for c in code), "execute the notebook so readers see outputs"


def test_topic_notebooks_exist():
    names = {p.stem for p in TOPICS}
    assert {"00_memory_anatomy", "01_65b_on_4x_v100", "02_single_gpu_limits",
            "03_when_the_model_does_not_fit"} <= names


@pytest.mark.parametrize("py", TOPICS, ids=[p.stem for p in TOPICS])
def test_topic_skeleton_in_order(py):
    text = py.read_text(encoding="utf-8")
    positions = []
    for pattern in SKELETON:
        m = re.search(r"^# " + pattern, text, flags=re.M)
        assert m, f"{py.name} lacks the section {pattern!r} (notebooks/STYLE.md)"
        positions.append(m.start())
    assert positions == sorted(positions), f"{py.name}: sections out of order"
    assert "NBVAL_CHECK_OUTPUT" in text and "Playground(" in text and "display(Markdown(" in text


@pytest.mark.parametrize("py", TOPICS, ids=[p.stem for p in TOPICS])
def test_fact_check_table_has_ten_rows(py):
    nb = nbformat.read(py.with_suffix(".ipynb"), as_version=4)
    start = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and "## 6. Fact-check" in c.source)
    end = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and "## 7." in c.source)
    rows = 0
    for c in nb.cells[start:end]:
        for out in c.get("outputs", []):
            text = out.get("data", {}).get("text/markdown", "")
            rows += sum(1 for line in text.splitlines() if line.startswith("|")) - (2 if "|" in text else 0)
    assert rows >= 10, f"{py.name}: fact-check table has {rows} rows"
