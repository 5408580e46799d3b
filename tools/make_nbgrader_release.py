"""Write an nbgrader source folder from the worked solutions (the single source of the exercise pages).

    python tools/make_nbgrader_release.py --course DIR                 # every notebook
    python tools/make_nbgrader_release.py --course DIR 00 03           # notebooks 00 and 03

writes DIR/source/<NN_slug>/<NN_slug>_exercises.ipynb, the instructor's version that
`nbgrader generate_assignment <NN_slug>` turns into the student release. Cell roles, with the cell
metadata nbgrader's schema version 3 expects (nbgrader/nbgraderformat/v3.py and v3.json, nbgrader 0.9.6):

  * an answer cell (`answer = ...` then `check("NN.k", answer)`, or a function to implement) is an
    *autograded answer* (solution: true, grade: false). The worked answer sits between `# BEGIN SOLUTION`
    and `# END SOLUTION`, which generate_assignment replaces by its stub (`raise NotImplementedError()`);
    the memlib placeholder (`answer = ...  # your answer here: ...`) stays above it, and a function keeps
    its signature and docstring with the region as its body;
  * after each, an *autograder test* cell (grade: true, locked: true, 1 point) holding
    `assert grade("NN.k", answer).passed`: memlib's grader (the one behind `check()`, without printing
    or recording), so nbgrader gives the point when the cell raises nothing;
  * an open (self-assessed) question's answer cell is a *manually graded answer* (solution: true,
    grade: true) worth one point per rubric point; `check()` shows the learner the rubric. The
    learner's `mark()` cell is dropped: the teacher marks in the formgrader;
  * the setup cell and the `show("NN.k")` cells are read-only (locked: true), so autograde restores them;
  * cells tagged "solution" (worked answers, `solution()` calls) are dropped; the spot-the-error
    reasoning in markdown becomes "*Your reasoning here.*", as on the exercise pages.
Every grade_id is unique in its notebook and matches nbgrader's pattern `^[a-zA-Z0-9_\\-]*$`.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import re
import sys
from pathlib import Path

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memlib.learn.exercises import SelfAssessed, get_exercise  # noqa: E402

_spec = importlib.util.spec_from_file_location("make_exercises", ROOT / "tools" / "make_exercises.py")
make_exercises = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_exercises)

BEGIN, END = make_exercises.BEGIN, make_exercises.END
SCHEMA_VERSION = 3  # nbgrader.nbgraderformat.MetadataValidatorV3.schema_version (nbgrader 0.9.6)
TEST_CELL = ("from memlib.learn.grading import grade\n"
             "_feedback = grade({id!r}, {name})  # memlib's grader, as check() uses it\n"
             "assert _feedback.passed, _feedback.message  # nbgrader gives the point when this cell raises nothing")
FOOTER = ("*Generated file: do not edit.* `tools/make_nbgrader_release.py` writes this nbgrader source notebook "
          "from `solutions/{name}`.")


def _meta(grade_id: str, *, solution: bool = False, grade: bool = False, locked: bool = False,
          points: float | None = None) -> dict:
    meta = {"grade": grade, "solution": solution, "locked": locked, "grade_id": grade_id,
            "schema_version": SCHEMA_VERSION}
    if grade:
        meta["points"] = points
    return {"nbgrader": meta}


def _gid(kind: str, exercise_id: str) -> str:
    return f"{kind}_{exercise_id.replace('.', '_')}"


def _regions(source: str) -> tuple[list[str], list[str], list[str]]:
    """(lines before, lines of the one solution region, lines after) of a code cell."""
    lines = source.split("\n")
    starts = [i for i, line in enumerate(lines) if line.strip() == BEGIN]
    ends = [i for i, line in enumerate(lines) if line.strip() == END]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        raise ValueError(f"expected one {BEGIN} ... {END} region in the cell:\n{source}")
    return lines[: starts[0]], lines[starts[0] + 1: ends[0]], lines[ends[0] + 1:]


def answer_source(source: str) -> str:
    """The answer cell of the source notebook: the memlib placeholder, then the worked answer in a region."""
    before, region, after = _regions(source)
    tree = ast.parse("\n".join(region))
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    if len(tree.body) == 1 and functions:  # a function to implement: the region becomes its body
        fn = functions[0]
        first = fn.body[0]
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and len(fn.body) > 1:
            first = fn.body[1]
        head = region[: first.lineno - 1]
        body = region[first.lineno - 1: fn.end_lineno]
        indent = body[0][: len(body[0]) - len(body[0].lstrip())]
        middle = head + [indent + BEGIN] + body + [indent + END] + region[fn.end_lineno:]
    else:
        middle = make_exercises._placeholders(region, after) + [BEGIN] + region + [END]
    return "\n".join(before + middle + after)


def release_notebook(solution_py: Path) -> nbformat.NotebookNode:
    nb = jupytext.read(solution_py)
    cells, ids = [], set()

    def add(cell, meta=None):
        if meta:
            gid = meta["nbgrader"]["grade_id"]
            if gid in ids:
                raise ValueError(f"{solution_py.name}: grade_id {gid!r} twice")
            ids.add(gid)
            cell.metadata.update(meta)
        cells.append(cell)

    for cell in nb.cells:
        if "solution" in cell.metadata.get("tags", []):
            continue
        if cell.cell_type != "code":
            add(nbformat.v4.new_markdown_cell(make_exercises.strip_markdown(cell.source)))
            continue
        source = cell.source
        calls = list(make_exercises.CHECK.finditer(source))
        if BEGIN in source:
            if not calls:
                raise ValueError(f"{solution_py.name}: a solution region without check()/mark():\n{source}")
            function, exercise_id, name = calls[-1].groups()
            if function == "mark":
                continue  # self-marking: the teacher grades the open answer in the formgrader
            new = nbformat.v4.new_code_cell(answer_source(source))
            ex = get_exercise(exercise_id)
            if isinstance(ex, SelfAssessed):
                add(new, _meta(_gid("answer", exercise_id), solution=True, grade=True, points=len(ex.rubric)))
            else:
                add(new, _meta(_gid("answer", exercise_id), solution=True))
                add(nbformat.v4.new_code_cell(TEST_CELL.format(id=exercise_id, name=name)),
                    _meta(_gid("test", exercise_id), grade=True, locked=True, points=1))
            continue
        new = nbformat.v4.new_code_cell(source)
        shown = re.fullmatch(r"\s*show\([\"'](\d\d\.\d+)[\"']\)\s*", source)
        if shown:
            add(new, _meta(_gid("question", shown.group(1)), locked=True))
        elif "from memlib.grading import" in source:
            add(new, _meta("setup", locked=True))
        else:
            add(new)
    cells.append(nbformat.v4.new_markdown_cell(FOOTER.format(name=solution_py.name)))
    for i, cell in enumerate(cells):  # the same file on every run (nbformat draws random cell ids)
        cell.id = f"cell-{i:03d}"
    out = nbformat.v4.new_notebook(cells=cells)
    out.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    out.metadata["language_info"] = {"name": "python"}
    return out


def assignment_name(solution_py: Path) -> str:
    return solution_py.stem.replace("_solutions", "")


def write(solution_py: Path, course: Path) -> Path:
    name = assignment_name(solution_py)
    path = course / "source" / name / f"{name}_exercises.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(release_notebook(solution_py), path)
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("topics", nargs="*", help="notebook numbers (00, 3, ...); default: every notebook")
    p.add_argument("--course", type=Path, required=True, help="the nbgrader course directory to write source/ in")
    a = p.parse_args(argv)
    if a.course.exists() and not a.course.is_dir():
        p.error(f"--course: {a.course} is not a folder (give the nbgrader course directory)")
    sources = sorted((ROOT / "solutions").glob("*_solutions.py"))
    if a.topics:
        wanted = set()
        for t in a.topics:
            if not t.isdigit():
                p.error(f"topics: {t!r} is not a notebook number (00 to {sources[-1].name[:2]})")
            wanted.add(f"{int(t):02d}")
        unknown = wanted - {s.name[:2] for s in sources}
        if unknown:
            p.error(f"topics: no notebook {', '.join(sorted(unknown))} (there are "
                    f"{', '.join(s.name[:2] for s in sources)})")
        sources = [s for s in sources if s.name[:2] in wanted]
    for src in sources:
        print(f"wrote {write(src, a.course)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
