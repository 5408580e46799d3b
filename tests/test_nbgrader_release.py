"""tools/make_nbgrader_release.py writes nbgrader source notebooks that nbgrader accepts, without nbgrader here.

The rules below are read from nbgrader 0.9.6's source (not from the tool's output):
  * nbgrader/nbgraderformat/v3.json: the cell metadata keys allowed, the required ones (schema_version,
    grade, locked, solution), schema_version 3, grade_id matching ^[a-zA-Z0-9_\\-]*$, points a number >= 0;
  * nbgrader/nbgraderformat/v3.py (MetadataValidatorV3): a grade, solution or locked cell has a non-empty
    grade_id; a grade cell has points; a markdown cell is grade and solution or neither; grade_ids are unique;
  * nbgrader/preprocessors/clearsolutions.py: a line containing "BEGIN SOLUTION" starts a region replaced by
    the stub (`# YOUR CODE HERE` / `raise NotImplementedError()`, indented like the marker line), "END
    SOLUTION" ends it; a region in a non-solution cell is an error; a solution cell without a region is
    replaced whole by the stub;
  * nbgrader/utils.py (determine_grade): a code grade cell scores 0 when an output is an error or a stderr
    stream, else its full points (an execute_result that reads as a number gives partial credit).
nbgrader itself was run by hand on the tool's output (docs/exercises.md gives the commands and scores).
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from memlib.learn.exercises import NOTEBOOKS, SelfAssessed, for_notebook

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "make_nbgrader_release.py"
SOLUTIONS = sorted((ROOT / "solutions").glob("*_solutions.py"))

V3_KEYS = {"schema_version", "grade", "locked", "solution", "task", "grade_id", "points", "checksum", "cell_type"}
V3_REQUIRED = {"schema_version", "grade", "locked", "solution"}
GRADE_ID = re.compile(r"^[a-zA-Z0-9_\-]*$")
STUB = ["# YOUR CODE HERE", "raise NotImplementedError()"]


def _tool():
    spec = importlib.util.spec_from_file_location("make_nbgrader_release", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    out = tmp_path_factory.mktemp("course")
    subprocess.run([sys.executable, str(TOOL), "--course", str(out)], check=True, capture_output=True, timeout=300)
    return out


def _notebooks(course: Path) -> dict[str, nbformat.NotebookNode]:
    found = {}
    for path in sorted((course / "source").glob("*/*.ipynb")):
        assert path.name == f"{path.parent.name}_exercises.ipynb", path  # source/<assignment>/<notebook>.ipynb
        found[path.parent.name[:2]] = nbformat.read(path, as_version=4)
    return found


def _nbgrader(cell) -> dict | None:
    return cell.metadata.get("nbgrader")


def clear_solutions(source: str) -> str:
    """nbgrader's ClearSolutions on one solution cell (clearsolutions.py, read at 0.9.6), for the checks below."""
    out, inside, replaced = [], False, False
    for line in source.split("\n"):
        if "BEGIN SOLUTION" in line:
            assert not inside, "nested BEGIN SOLUTION: nbgrader raises"
            inside = replaced = True
            indent = re.match(r"\s*", line).group(0)
            out += [indent + s for s in STUB]
        elif "END SOLUTION" in line:
            inside = False
        elif not inside:
            out.append(line)
    assert not inside, "no END SOLUTION: nbgrader raises"
    return "\n".join(out) if replaced else "\n".join(STUB)


def test_one_assignment_per_topic_notebook(course):
    assert sorted(_notebooks(course)) == sorted(NOTEBOOKS)


def test_cell_metadata_is_valid_nbgrader_v3(course):
    for key, nb in _notebooks(course).items():
        ids = []
        for cell in nb.cells:
            meta = _nbgrader(cell)
            if meta is None:
                assert "BEGIN SOLUTION" not in cell.source, f"{key}: a solution region outside a solution cell"
                continue
            assert set(meta) <= V3_KEYS and V3_REQUIRED <= set(meta), (key, meta)
            assert meta["schema_version"] == 3, (key, meta)
            assert all(isinstance(meta[k], bool) for k in ("grade", "locked", "solution")), (key, meta)
            if meta["grade"] or meta["solution"] or meta["locked"]:
                assert meta.get("grade_id") and GRADE_ID.match(meta["grade_id"]), (key, meta)
                ids.append(meta["grade_id"])
            if meta["grade"]:
                assert isinstance(meta["points"], (int, float)) and meta["points"] >= 0, (key, meta)
            else:
                assert "points" not in meta, (key, meta)  # v3.json: "only present if grade is true"
            if cell.cell_type == "markdown":
                assert meta["grade"] == meta["solution"], (key, meta)
            if not meta["solution"]:
                assert "BEGIN SOLUTION" not in cell.source, f"{key}: a region in non-solution cell {meta['grade_id']}"
        assert len(ids) == len(set(ids)), f"{key}: duplicate grade_id"


def test_every_exercise_is_graded_once_with_its_points(course):
    """Auto-graded exercises: one locked test cell worth 1 point after the learner's answer cell; open
    questions: one manually graded answer cell worth one point per rubric point, as mark() counts them."""
    for key, nb in _notebooks(course).items():
        graded = [(i, c) for i, c in enumerate(nb.cells) if (_nbgrader(c) or {}).get("grade")]
        by_exercise = {}
        for i, cell in graded:
            called = re.findall(r"(?:grade|check)\(\s*[\"'](\d\d\.\d+)[\"']", cell.source)
            assert len(set(called)) == 1, cell.source
            assert called[0] not in by_exercise, f"{called[0]} graded twice"
            by_exercise[called[0]] = (i, cell)
        exercises = for_notebook(key)
        assert sorted(by_exercise) == sorted(ex.id for ex in exercises)
        for ex in exercises:
            i, cell = by_exercise[ex.id]
            meta = _nbgrader(cell)
            if isinstance(ex, SelfAssessed):
                assert meta["solution"] and not meta["locked"] and meta["points"] == len(ex.rubric), ex.id
                assert f'check("{ex.id}"' in cell.source
            else:
                assert not meta["solution"] and meta["locked"] and meta["points"] == 1, ex.id
                assert re.search(r"^assert \w+\.passed", cell.source, re.M), cell.source
                answer = nb.cells[i - 1]
                a_meta = _nbgrader(answer)
                assert a_meta["solution"] and not a_meta["grade"] and not a_meta["locked"], ex.id
                assert f'check("{ex.id}"' in answer.source


def test_the_student_release_keeps_the_task_and_drops_the_answer(course):
    """What generate_assignment makes of each solution cell: the check() call and the placeholder or the
    function's signature stay, the worked answer goes; no learner's mark() cell and no solution() call remain."""
    for key, nb in _notebooks(course).items():
        for cell in nb.cells:
            code = [line.split("#")[0] for line in cell.source.split("\n") if cell.cell_type == "code"]  # not comments
            assert not any("solution(" in line for line in code), f"{key}: a solution() call is left"
            assert not re.search(r"^mark\(", cell.source, re.M), f"{key}: a self-marking cell is left"
            meta = _nbgrader(cell)
            if not (meta and meta["solution"]):
                continue
            region = re.search(r"# BEGIN SOLUTION\n(.*?)\n\s*# END SOLUTION", cell.source, re.S)
            assert region, f"{key}: a solution cell without a region loses its placeholder and check()"
            student = clear_solutions(cell.source)
            assert "check(" in student and "NotImplementedError" in student
            assert ("= ...  # your answer here" in student) or re.search(r"^def \w+\(", student, re.M), student
            # the worked lines, less what the exercise pages keep on purpose (signatures, docstrings, comments)
            hidden = [l.strip() for l in region.group(1).split("\n")
                      if l.strip() and not l.strip().startswith(("#", "def ", '"""'))]
            assert hidden and not any(line in [s.strip() for s in student.split("\n")] for line in hidden), student


def _grade_cells(nb) -> tuple[float, float]:
    """determine_grade (nbgrader/utils.py) over the auto-graded code cells of an executed notebook."""
    got = total = 0.0
    for cell in nb.cells:
        meta = _nbgrader(cell) or {}
        if not meta.get("grade") or meta.get("solution"):
            continue
        total += meta["points"]
        failed = any(o.output_type == "error" or (o.output_type == "stream" and o.name == "stderr")
                     for o in cell.outputs)
        assert not any(o.output_type == "execute_result" for o in cell.outputs)  # no partial credit by accident
        got += 0 if failed else meta["points"]
    return got, total


def test_the_instructor_version_earns_every_point_and_a_wrong_answer_loses_one(tmp_path, monkeypatch):
    """Notebook 00's source run as nbgrader's autograder runs it (errors allowed): the worked answers pass
    every test cell; with one answer set to a figure that forgets the optimizer states, exactly that cell fails."""
    from nbclient import NotebookClient

    monkeypatch.setenv("MEMLIB_PROGRESS", "off")
    nb = _tool().release_notebook(ROOT / "solutions" / "00_memory_anatomy_solutions.py")
    auto = [ex for ex in for_notebook("00") if not isinstance(ex, SelfAssessed)]
    wrong = nbformat.from_dict(nbformat.v4.new_notebook(cells=[nbformat.from_dict(dict(c)) for c in nb.cells],
                                                        metadata=nb.metadata))
    cell = next(c for c in wrong.cells if (_nbgrader(c) or {}).get("grade_id") == "answer_00_2")
    # Llama-2-13B's 16-bit weights alone, ~13e9 x 2 bytes: far below the 16 bytes/param of mixed-precision AdamW
    cell.source = 'answer = "26 GB"\ncheck("00.2", answer)'
    for book, expected in ((nb, len(auto)), (wrong, len(auto) - 1)):
        NotebookClient(book, timeout=300, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": str(tmp_path)}}).execute()
        assert _grade_cells(book) == (expected, len(auto))
    failed = [(_nbgrader(c) or {}).get("grade_id") for c in wrong.cells
              if any(o.output_type == "error" for o in c.get("outputs", []))]
    assert failed == ["test_00_2"]


def test_the_release_is_the_same_on_every_run(course, tmp_path):
    subprocess.run([sys.executable, str(TOOL), "--course", str(tmp_path), "00"], check=True, capture_output=True,
                   timeout=120)
    name = "00_memory_anatomy/00_memory_anatomy_exercises.ipynb"
    assert (tmp_path / "source" / name).read_bytes() == (course / "source" / name).read_bytes()


def test_bad_topic_is_refused_by_name(tmp_path):
    for topic, said in (("x1", "not a notebook number"), ("77", "no notebook 77")):
        run = subprocess.run([sys.executable, str(TOOL), "--course", str(tmp_path), topic],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 2 and "topics" in run.stderr and said in run.stderr, run.stderr
    assert not (tmp_path / "source").exists()
    a_file = tmp_path / "course.txt"
    a_file.write_text("not a folder", encoding="utf-8")
    run = subprocess.run([sys.executable, str(TOOL), "--course", str(a_file), "00"], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2 and "--course" in run.stderr and "not a folder" in run.stderr, run.stderr
