"""Display-only cells are marked (tools/mark_display_cells.py): the rule on small cells, and every
readable notebook's markers, in its .py and its .ipynb, agree with the rule. A new notebook, or a
new cell, that is not marked fails here: run `python tools/mark_display_cells.py`."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest
from jupytext_support import unversioned

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("mark_display_cells", ROOT / "tools" / "mark_display_cells.py")
mdc = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = mdc  # dataclasses look their module up there
_spec.loader.exec_module(mdc)

NOTEBOOKS = mdc.notebook_paths()
SETUP = """# %matplotlib inline
import matplotlib.pyplot as plt
from IPython.display import Markdown, display

import memlib
from memlib import estimate_training, fmt_bytes, get_gpu
from memlib.training.explain import markdown_table
from memlib.units import gib
from memlib.learn.viz import breakdown_bars, sweep


def G(n):
    return f"{gib(n):.1f} GiB"


def peak(name):
    return estimate_training(name, seq_len=2048).peak_bytes

MODEL = "llama-7b"
"""


def kinds(*cells: str) -> list[str]:
    """Verdicts of code cells that follow the SETUP cell above."""
    verdicts = mdc.classify_notebook([("markdown", "# t"), ("code", SETUP)] + [("code", c) for c in cells])
    return [v.kind for v in verdicts[2:]]


def test_rule_on_small_cells():
    assert kinds(
        'display(Markdown(f"{fmt_bytes(memlib.fits(est, g).margin_bytes)} to spare"))',  # memlib call inside the sentence
        'x = estimate_training(MODEL)\ndisplay(Markdown(f"{fmt_bytes(x.peak_bytes)}"))',  # computes x: visible
        'fig, ax = plt.subplots(figsize=(7, 3))\nbreakdown_bars({"a": est}, gpu="a100-80gb", ax=ax)\nplt.show()',
        'series = {m: [estimate_training(m, seq_len=s).peak_bytes for s in XS] for m in MODELS}\nsweep(XS, series)',
        'rows = [[k, G(v.peak_bytes)] for k, v in ests.items()]\ndisplay(Markdown(markdown_table(rows, ["a", "b"])))',
        'v = peak(MODEL)\ndisplay(Markdown(f"{v}"))',  # a notebook function that calls memlib computes
        'print(est.peak_bytes)',                        # prints, renders nothing: stays visible
        'memlib.learn.playgrounds.Playground(model=MODEL)',     # a widget is not display-only
        'total = a + b  # arithmetic on values\ndisplay(Markdown(f"**{total:,}** bytes"))',
        '# %%time\nimport numpy as np\ndisplay(Markdown(f"{np.finfo(np.float16).max}"))',  # a later import
        'display(Markdown(get_gpu("v100-32gb").describe()))',  # a memlib call outside an f-string
    ) == ["display", "compute", "display", "compute", "display", "compute", "compute", "compute", "display",
          "display", "compute"]


def test_setup_is_the_first_code_cell_with_imports():
    verdicts = mdc.classify_notebook([("markdown", "# t"), ("code", SETUP), ("code", "import json\nx = json.loads(s)")])
    assert [v.kind for v in verdicts[1:]] == ["setup", "compute"]
    no_import = mdc.classify_notebook([("code", "x = 1 + 1"), ("code", "import memlib")])
    assert [v.kind for v in no_import] == ["compute", "compute"]


def test_metadata_the_rule_writes_keeps_other_tags():
    md = {"tags": ["raises-exception", "hide-input"], "jupyter": {"source_hidden": True, "outputs_hidden": False}}
    assert mdc.wanted_metadata(md, mdc.Verdict("compute", "")) == {
        "tags": ["raises-exception"], "jupyter": {"outputs_hidden": False}}
    assert mdc.wanted_metadata({}, mdc.Verdict("display", "")) == {"tags": ["hide-input"],
                                                                    "jupyter": {"source_hidden": True}}
    assert mdc.wanted_metadata({}, mdc.Verdict("setup", "")) == {"tags": ["hide-input"], "jupyter": {"source_hidden": True}}


@pytest.mark.parametrize("py", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_markers_follow_the_rule(py):
    for nb, name in ((jupytext.read(py), py.name), (nbformat.read(py.with_suffix(".ipynb"), as_version=4),
                                                    py.with_suffix(".ipynb").name)):
        verdicts = mdc.classify_notebook([(c.cell_type, c.source) for c in nb.cells])
        wrong = [f"cell {i} is {v.kind} ({v.reason}) but marked hide-input={got[0]}, source_hidden={got[1]}: "
                 f"{c.source.strip().splitlines()[0][:60]!r}"
                 for i, (c, v) in enumerate(zip(nb.cells, verdicts))
                 if v is not None and (got := mdc.markers(c.metadata)) != mdc.expected_markers(v)]
        assert not wrong, f"{name}: run `python tools/mark_display_cells.py`\n" + "\n".join(wrong)


def test_every_topic_notebook_has_display_only_cells():
    # the rule is not vacuous on the notebooks it is for
    for py in NOTEBOOKS:
        if py.stem == "index":
            continue
        nb = jupytext.read(py)
        got = [v.kind for v in mdc.classify_notebook([(c.cell_type, c.source) for c in nb.cells]) if v]
        hidden = got.count("display") + got.count("values")  # values: a chapter's {eval} cells (issue 19)
        assert hidden >= 3 and got[0] == "setup" and "compute" in got, (py.name, got)


def test_tool_restores_the_committed_markers_and_is_idempotent(tmp_path):
    py = ROOT / "notebooks" / "01_65b_on_4x_v100.py"
    ipynb = py.with_suffix(".ipynb")
    work = tmp_path / py.name
    shutil.copy2(py, work)
    shutil.copy2(ipynb, work.with_suffix(".ipynb"))
    # strip every marker, in both files
    nb = jupytext.read(work)
    for c in nb.cells:
        if c.cell_type == "code":  # the tool's markers only; other tags (nbval-check-output) stay
            md = mdc.wanted_metadata(dict(c.metadata), mdc.Verdict("compute", ""))
            c.metadata.clear()
            c.metadata.update(md)
    jupytext.write(nb, work, fmt="py:percent")
    raw = json.loads(work.with_suffix(".ipynb").read_text(encoding="utf-8"))
    for c in raw["cells"]:
        if c["cell_type"] == "code":
            c["metadata"] = mdc.wanted_metadata(c.get("metadata", {}), mdc.Verdict("compute", ""))
    work.with_suffix(".ipynb").write_text(json.dumps(raw, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

    changes = mdc.mark(work)
    assert len(changes) >= 5
    assert unversioned(work.read_text(encoding="utf-8")) == unversioned(py.read_text(encoding="utf-8"))
    assert json.loads(work.with_suffix(".ipynb").read_text(encoding="utf-8")) == json.loads(
        ipynb.read_text(encoding="utf-8"))
    assert mdc.mark(work) == []  # a second run changes nothing


def test_check_mode_fails_on_an_unmarked_cell(tmp_path, capsys):
    py = ROOT / "notebooks" / "01_65b_on_4x_v100.py"
    work = tmp_path / py.name
    shutil.copy2(py, work)
    shutil.copy2(py.with_suffix(".ipynb"), work.with_suffix(".ipynb"))
    nb = jupytext.read(work)
    first_code = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")  # the setup cell
    i = next(i for i, c in enumerate(nb.cells) if c.metadata.get("jupyter", {}).get("source_hidden") and i > first_code)
    nb.cells[i].metadata.clear()  # a display-only cell someone added without running the tool
    jupytext.write(nb, work, fmt="py:percent")
    assert mdc.main(["--check", str(work)]) == 1
    out = capsys.readouterr().out
    assert f"cell {i} -> display" in out or f"cell {i} -> values" in out, out
