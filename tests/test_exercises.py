"""solutions/ is the single source of exercises/: the generated copies are current, carry no
solution text, say they are generated, and every registry exercise appears once. (nbval runs
both folders; tests/test_notebooks.py checks each .py against its .ipynb.)"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import jupytext
import pytest
from jupytext_support import unversioned

from memlib.learn.exercises import EXERCISES, NOTEBOOKS, SelfAssessed, for_notebook

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = sorted((ROOT / "solutions").glob("*_solutions.py"))
EXERCISE_FILES = sorted((ROOT / "exercises").glob("*_exercises.py"))


def test_one_solutions_file_per_topic_notebook():
    assert [p.name[:-len("_solutions.py")] for p in SOLUTIONS] == sorted(NOTEBOOKS.values())
    assert [p.name.replace("_exercises", "_solutions") for p in EXERCISE_FILES] == [p.name for p in SOLUTIONS]


def test_generated_exercises_are_current(tmp_path):
    subprocess.run([sys.executable, str(ROOT / "tools" / "make_exercises.py"), "--out", str(tmp_path), "--no-execute"],
                   check=True, capture_output=True, timeout=120)
    for mine in EXERCISE_FILES:
        fresh = tmp_path / mine.name
        assert unversioned(fresh.read_text(encoding="utf-8")) == unversioned(mine.read_text(encoding="utf-8")), \
            f"{mine.name} is out of date: run python tools/make_exercises.py"



def _solution_lines(path: Path) -> list[str]:
    """Lines of solution regions and solution cells, minus what the student copy keeps on purpose
    (function signatures and docstrings, which state the task)."""
    nb = jupytext.read(path)
    found = []
    for cell in nb.cells:
        src = cell.source
        if "solution" in cell.metadata.get("tags", []):
            found += src.splitlines()
            continue
        for region in re.findall(r"# BEGIN SOLUTION\n(.*?)\n\s*# END SOLUTION", src, flags=re.S):
            code = textwrap.dedent(region)
            kept = set()
            for node in ast.walk(ast.parse(code)):
                if isinstance(node, ast.FunctionDef):
                    kept.add(node.lineno)
                    body0 = node.body[0]
                    if isinstance(body0, ast.Expr) and isinstance(getattr(body0, "value", None), ast.Constant):
                        kept.update(range(body0.lineno, body0.end_lineno + 1))
            found += [line for i, line in enumerate(code.splitlines(), 1) if i not in kept]
        for region in re.findall(r"<!-- BEGIN SOLUTION -->\n(.*?)\n<!-- END SOLUTION -->", src, flags=re.S):
            found += region.splitlines()
    return [line.strip() for line in found if len(line.strip()) > 3 and re.search(r"\w", line)]


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_no_solution_text_leaks_into_exercises(path):
    secret = _solution_lines(path)
    assert len(secret) > 20  # the regions were found
    copy = ROOT / "exercises" / path.name.replace("_solutions", "_exercises")
    for text in (copy.read_text(encoding="utf-8"), copy.with_suffix(".ipynb").read_text(encoding="utf-8")):
        lines = {line.strip() for line in text.splitlines()}
        leaked = [s for s in secret if s in lines or f'"{s}\\n",' in lines or f'"{s}"' in lines]
        assert not leaked, f"{copy.name} contains solution text: {leaked[:3]}"
    assert "Worked answer" not in copy.with_suffix(".ipynb").read_text(encoding="utf-8")


@pytest.mark.parametrize("path", EXERCISE_FILES, ids=[p.stem for p in EXERCISE_FILES])
def test_exercises_say_they_are_generated_and_have_placeholders(path):
    text = path.read_text(encoding="utf-8")
    assert "Generated file: do not edit" in text and "tools/make_exercises.py" in text
    assert "BEGIN SOLUTION" not in text and not re.search(r"^solution\(", text, flags=re.M)
    exs = for_notebook(path.name[:2])
    assert text.count("answer = ...") + text.count("...  # TODO") >= len(exs)
    assert text.count("marks = ...") == sum(isinstance(e, SelfAssessed) for e in exs)
    # a learner's saved progress changes the score table: its output is not compared in the student copy
    score_cell = text[text.index("# ## Your score"):]
    assert "score(" in score_cell and "NBVAL_CHECK_OUTPUT" not in score_cell


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_every_exercise_is_shown_and_checked_once_with_its_title(path):
    text = path.read_text(encoding="utf-8")
    for ex in for_notebook(path.name[:2]):
        assert text.count(f'show("{ex.id}")') == 1 and text.count(f'check("{ex.id}",') == 1, ex.id
        assert text.count(f'mark("{ex.id}",') == (1 if isinstance(ex, SelfAssessed) else 0), ex.id
        assert f"# ## {ex.id} · {ex.title}" in text, f"{ex.id}: heading differs from the registry title"
    assert f'score("{path.name[:2]}")' in text
    assert {m for m in re.findall(r'(?:check|mark)\("(\d\d\.\d+)"', text)} <= set(EXERCISES)
    # the solutions copy keeps no progress file, so its checked score output is the same on every run
    assert 'os.environ["MEMLIB_PROGRESS"] = "off"' in text
    assert "# NBVAL_CHECK_OUTPUT\nscore(" in text
