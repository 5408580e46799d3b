"""Write the student copies in exercises/ from the worked solutions in solutions/ (the single source).

    python tools/make_exercises.py                 # every solutions/*_solutions.py -> exercises/, executed
    python tools/make_exercises.py --out DIR --no-execute   # the .py files only (what the sync test compares)

In a solutions file (Jupytext percent format):
  * code between `# BEGIN SOLUTION` and `# END SOLUTION` is replaced by placeholders: each name the
    rest of the cell uses becomes `name = ...  # your answer here` and each function keeps its
    signature and docstring with a body of `...`, so the student copy runs and check() reports
    "not answered yet";
  * markdown between `<!-- BEGIN SOLUTION -->` and `<!-- END SOLUTION -->` becomes a prompt to reason;
  * cells tagged "solution" (`# %% tags=["solution"]`) are dropped (worked answers, solution() calls).
The checks, hints and prompts stay. The copies carry a header saying they are generated. The
score cell keeps no NBVAL_CHECK_OUTPUT marker there (a learner's saved progress changes it), and the
copies are executed with MEMLIB_PROGRESS=off so their stored outputs never hold anyone's progress.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import re
import sys
import textwrap
from pathlib import Path

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memlib.learn.exercises import (Choice, Implement, MultiChoice, SelfAssessed, SpotError,  # noqa: E402
                              get_exercise)
from memlib.learn.exercises.answers import example  # noqa: E402

BEGIN, END = "# BEGIN SOLUTION", "# END SOLUTION"
MD_BEGIN, MD_END = "<!-- BEGIN SOLUTION -->", "<!-- END SOLUTION -->"
CHECK = re.compile(r"(check|mark)\(\s*[\"'](\d\d\.\d+)[\"']\s*,\s*([A-Za-z_]\w*)")
# what the learner reads first, under the title (issue 41: the maintainer's note used to stand above it)
HEADER = ("> Work through each exercise: replace the placeholder, run the cell, and read what `check` says. "
          "`hint(\"NN.k\")` gives a hint (call again for the next one: the concept, the formula, the first step), "
          "`solution(\"NN.k\")` shows the worked answer. Open questions are self-assessed: `check` shows a rubric "
          "and a model answer, then `mark(\"NN.k\", [True, False, ...])` records your marks. Your progress is "
          "saved in `.memlib_progress.json` in this folder (it survives a kernel restart; the best attempt "
          "counts): `score(\"{nb}\")` sums up this notebook, `score()` all of them.")
# for maintainers: the notebook's last cell
FOOTER = ("*Generated file: do not edit.* `tools/make_exercises.py` writes this notebook from "
          "`solutions/{name}`; change that file and rerun the tool.")


def _answer_format(exercise_id: str, function: str = "check") -> str:
    try:
        ex = get_exercise(exercise_id)
    except KeyError:
        return "your answer here"
    if function == "mark":
        return (f"your marks here, after check() shows the rubric: one True/False per point "
                f"({len(ex.rubric)} in order)")
    if isinstance(ex, SpotError):
        if len(ex.errors) > 1:
            return ("your answer here: ([the wrong figures as written], the right value), e.g. "
                    "([\"99GB\", \"ZeRO-9\"], \"987.6 GB\")")
        return "your answer here: (the wrong figure as written, the right value), e.g. (\"99GB\", \"987.6 GB\")"
    if isinstance(ex, MultiChoice):
        return "your answer here: the letters of every option that applies, separated by commas (or \"none\")"
    if isinstance(ex, Choice):
        return ("your answer here: a pair (\"option letter\", reason number)" if ex.reasons
                else "your answer here: one option letter in quotes")
    if isinstance(ex, SelfAssessed):
        return "your answer here: a few sentences in a string"
    if isinstance(ex, Implement):
        return "your answer here"
    return f"your answer here: a number with its unit, e.g. {example(ex.unit)}"


def _placeholders(region: list[str], after: list[str]) -> list[str]:
    """Stub lines standing in for a solution region: names used after it, functions with their docstrings."""
    code = textwrap.dedent("\n".join(region))
    indent = region[0][: len(region[0]) - len(region[0].lstrip())] if region else ""
    tree = ast.parse(code)
    lines = code.splitlines()
    used = {n.id for n in ast.walk(ast.parse(textwrap.dedent("\n".join(after)) or "pass")) if isinstance(n, ast.Name)}
    checked = {m.group(3): (m.group(2), m.group(1)) for m in CHECK.finditer("\n".join(after))}
    out = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
            out.append(f"def {node.name}({ast.unparse(node.args)}){returns}:")
            doc = node.body[0] if node.body and isinstance(node.body[0], ast.Expr) and isinstance(
                getattr(node.body[0], "value", None), ast.Constant) and isinstance(node.body[0].value.value, str) else None
            if doc is not None:
                out += lines[doc.lineno - 1: doc.end_lineno]
            out.append("    ...  # TODO: your code here (until then it returns None: \"not answered yet\")")
        else:
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            for t in targets:
                if isinstance(t, ast.Name) and t.id in used and not any(o.startswith(f"{t.id} = ") for o in out):
                    fmt = _answer_format(*checked[t.id]) if t.id in checked else "your answer here"
                    out.append(f"{t.id} = ...  # {fmt}")
    return [indent + line if line else line for line in (out or ["# your work here"])]


def strip_code(source: str) -> str:
    lines = source.split("\n")
    out, i = [], 0
    while i < len(lines):
        if lines[i].strip() == BEGIN:
            j = next((k for k in range(i + 1, len(lines)) if lines[k].strip() == END), None)
            if j is None:
                raise ValueError(f"{BEGIN} without {END}:\n{source}")
            out += _placeholders(lines[i + 1: j], lines[j + 1:])
            i = j + 1
        else:
            out.append(lines[i])
            i += 1
    return "\n".join(out)


def strip_markdown(source: str) -> str:
    pattern = re.compile(re.escape(MD_BEGIN) + r".*?" + re.escape(MD_END), flags=re.S)
    return pattern.sub("*Your reasoning here.*", source)


def exercise_notebook(solution_py: Path) -> nbformat.NotebookNode:
    nb = jupytext.read(solution_py)
    cells = []
    for cell in nb.cells:
        if "solution" in cell.metadata.get("tags", []):
            continue
        cell = nbformat.from_dict(dict(cell))
        cell.source = strip_code(cell.source) if cell.cell_type == "code" else strip_markdown(cell.source)
        if cell.cell_type == "code" and "score(" in cell.source:
            cell.source = "\n".join(line for line in cell.source.split("\n") if line.strip() != "# NBVAL_CHECK_OUTPUT")
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cells.append(cell)
    title = next((i for i, c in enumerate(cells) if c.cell_type == "markdown"), -1)
    cells.insert(title + 1, nbformat.v4.new_markdown_cell(HEADER.format(nb=solution_py.name[:2])))
    cells.append(nbformat.v4.new_markdown_cell(FOOTER.format(name=solution_py.name)))
    nb.cells = cells
    return nb


def exercise_name(solution_py: Path) -> str:
    return solution_py.stem.replace("_solutions", "_exercises")


def write(solution_py: Path, out: Path, execute: bool) -> Path:
    nb = exercise_notebook(solution_py)
    out.mkdir(parents=True, exist_ok=True)
    py = out / (exercise_name(solution_py) + ".py")
    py.write_text(jupytext.writes(nb, fmt="py:percent"), encoding="utf-8")
    ipynb = py.with_suffix(".ipynb")
    nb = jupytext.read(py)  # the .ipynb is the .py's pair, cell for cell
    if execute:
        from nbclient import NotebookClient
        os.environ["MEMLIB_PROGRESS"] = "off"  # the kernel inherits it: no progress file, no one's progress stored
        NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(out)}}).execute()
    nbformat.write(nb, ipynb)
    if execute:
        spec = importlib.util.spec_from_file_location("clean_notebooks", ROOT / "tools" / "clean_notebooks.py")
        cleaner = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(cleaner)
        cleaner.clean(ipynb)
    return py


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("sources", nargs="*", type=Path, help="solutions files (default: solutions/*_solutions.py)")
    p.add_argument("--out", type=Path, default=ROOT / "exercises")
    p.add_argument("--no-execute", action="store_true", help="write .py and unexecuted .ipynb only")
    a = p.parse_args(argv)
    sources = a.sources or sorted((ROOT / "solutions").glob("*_solutions.py"))
    for src in sources:
        print(f"wrote {write(src, a.out, not a.no_execute)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
