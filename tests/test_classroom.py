"""The classroom kit (issue 45): the shared quiz and its answer key, the teacher's class report of exported progress
files, and the commands `memlib quiz` and `memlib class-report` (memlib.learn.classroom).

The class report is checked against a simulated class whose figures are counted by hand below, file by file."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memlib import cli
from memlib.learn import classroom, grading
from memlib.learn.exercises import EXERCISES, practice as generator, progress

ROOT = Path(__file__).resolve().parents[1]


# --- the shared quiz ---------------------------------------------------------------------------------------------
def _ids(topic, seed, n):
    return [q.id for q in classroom.quiz(topic, seed, n)]


def test_same_seed_same_questions_in_the_same_order_across_calls_and_processes():
    here = _ids("04", 2026, 10)
    assert here == _ids("04", 2026, 10) == _ids(4, 2026, 10) == _ids("04_serving_capacity", 2026, 10)
    code = ("import json; from memlib.learn import classroom; "
            "print(json.dumps([[q.id, q.prompt] for q in classroom.quiz('04', 2026, 10)]))")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True,
                           env={"PYTHONPATH": str(ROOT), "PYTHONHASHSEED": str(h), "PATH": "/usr/bin:/bin"})
            for h in (1, 2)]
    got = [json.loads(r.stdout) for r in runs]
    assert got[0] == got[1] == [[q.id, q.prompt] for q in classroom.quiz("04", 2026, 10)]
    # a shorter quiz of the same seed is the longer one's beginning (a teacher can trim it)
    assert _ids("04", 2026, 4) == here[:4]


def test_a_different_seed_gives_a_different_set_and_every_kind_takes_its_turn():
    for topic in generator.KINDS:
        a, b = classroom.quiz(topic, 2026, 8), classroom.quiz(topic, 2027, 8)
        assert {(q.title, q.prompt) for q in a} != {(q.title, q.prompt) for q in b}, topic
        assert len({(q.title, q.prompt) for q in a}) == 8, f"{topic}: a question repeats"
        kinds = {re.match(r"p\d\dk(\d+)\.", q.id).group(1) for q in a}
        assert len(kinds) == min(8, len(generator.KINDS[topic])), topic
        assert [q.number for q in a] == list(range(1, 9))


def test_every_quiz_question_is_rebuilt_from_its_id_by_the_grader():
    for q in classroom.quiz("07", 5, 6):
        ex = EXERCISES.get(q.id) or generator.from_id(q.id)
        assert ex.render_prompt() == q.prompt and ex.title == q.title


def _key_answers(key_md: str) -> dict[str, str]:
    """The answers as the key's table prints them: | # | question | `id` | answer |."""
    rows = re.findall(r"^\| \d+ \| .* \| `(p[^`]+)` \| ([^|]+) \|$", key_md, flags=re.M)
    return {qid: answer.strip() for qid, answer in rows}


@pytest.mark.parametrize("topic", sorted(generator.KINDS))
def test_the_keys_answers_are_what_the_grader_accepts(topic):
    for seed in (1, 2026):
        sheet, key = classroom.handout(topic, seed, 6)
        answers = _key_answers(key)
        assert list(answers) == [q.id for q in classroom.quiz(topic, seed, 6)]
        for qid, answer in answers.items():
            fb = grading.grade(qid, answer)
            assert fb.passed, f"{qid}: the key says {answer!r}, the grader: {fb.message}"
            if " " in answer:  # a figure with its unit is not printed on the handout (bare counts like 3 occur)
                assert not re.search(rf"(?<![\w.,]){re.escape(answer)}(?![\w.,])", sheet), f"{qid}: {answer!r} shown"
        assert "Your answer" in sheet and sheet.count("\n## ") == 6


def test_a_wrong_key_would_fail():
    """The check above can fail: an answer 10% off is not accepted."""
    qid = classroom.quiz("00", 3, 1)[0].id
    answer = classroom.key_answer(qid)
    number = float(re.match(r"[\d.e+]+", answer).group(0))
    wrong = answer.replace(re.match(r"[\d.e+]+", answer).group(0), f"{number * 1.1:.4g}", 1)
    assert not grading.grade(qid, wrong).passed


def test_mock_interview_questions_follow_the_class_seed():
    a = classroom.interview_questions(2026, 3)
    assert [q.id for q in a] == [q.id for q in classroom.interview_questions(2026, 3)]
    assert [q.id for q in a] != [q.id for q in classroom.interview_questions(2027, 3)]
    assert [q.topic for q in classroom.interview_questions(2026, 3, "04")] == ["04"] * 3
    assert [q.id for q in classroom.interview_questions(2026, 3, "00")] == ["00.9"]  # its only open question
    _, key = classroom.handout("03", 2026, 2, interview=3)
    assert key.count("## Interview ") == 3 and key.count("**Model answer.**") == 3


@pytest.mark.parametrize("bad", [{"topic": "12"}, {"topic": "x"}, {"seed": -1}, {"seed": 1.5}, {"seed": True},
                                 {"n": 0}, {"n": 51}, {"n": "3"}])
def test_bad_quiz_input_is_named(bad):
    args = {"topic": "04", "seed": 1, "n": 3} | bad
    with pytest.raises(ValueError, match=next(iter(bad))):
        classroom.quiz(**args)


def test_handout_as_html_is_a_printable_page(tmp_path):
    written = classroom.write_quiz("09", 11, 3, tmp_path / "h.html", tmp_path / "k.html", interview=1)
    page = (tmp_path / "h.html").read_text(encoding="utf-8")
    key = (tmp_path / "k.html").read_text(encoding="utf-8")
    assert written == [tmp_path / "h.html", tmp_path / "k.html"]
    assert page.startswith("<!DOCTYPE html>") and page.count("<h2>") == 4 and "**" not in page
    assert "<table>" in key and key.count("<tr>") == 1 + 3
    with pytest.raises(ValueError, match="does not exist"):
        classroom.write_quiz("09", 11, 3, tmp_path / "missing" / "h.md")


# --- the class report --------------------------------------------------------------------------------------------
RUBRIC_009 = len(EXERCISES["00.9"].rubric)


def _export(folder: Path, name: str, exercises: dict, learner: str | None = None, at: str | None = None) -> None:
    data = {"version": 1, "exercises": exercises}
    if learner is not None:
        data["learner"] = learner
    if at is not None:
        data["exported_at"] = at
    (folder / name).write_text(json.dumps(data, indent=1), encoding="utf-8")


@pytest.fixture
def simulated_class(tmp_path):
    """Four learners, and seven files the report must refuse."""
    c = tmp_path / "class"
    c.mkdir()
    _export(c, "ana.json", {
        "00.1": {"best": "correct", "last": "correct", "attempts": 2, "hints": 1, "slips": {"fp32 bytes": 1}},
        "00.2": {"best": "incorrect", "last": "incorrect", "attempts": 3, "hints": 3,
                 "slips": {"forgot the fp32 master copy": 2, "forgot gradients": 1}},
        "00.9": {"submitted": True, "last": "marked", "self_points": 2, "self_total": RUBRIC_009},
    }, learner="Ana", at="2026-12-01T10:00:00+00:00")
    # an earlier export of Ana's (her name in another case): refused, the later one counts
    _export(c, "ana_monday.json", {"00.1": {"best": "incorrect", "last": "incorrect", "attempts": 1}},
            learner="ana", at="2026-11-30T09:00:00+00:00")
    ben = {"00.1": {"best": "correct", "last": "correct", "attempts": 1},
           "00.2": {"best": "correct", "last": "correct", "attempts": 2, "hints": 1,
                    "slips": {"forgot the fp32 master copy": 1}}}
    _export(c, "ben.json", ben, learner="Ben", at="2026-12-01T11:00:00+00:00")
    _export(c, "ben_copy.json", ben, learner="Ben", at="2026-12-01T11:00:00+00:00")  # handed in twice
    # an export from before slips were recorded: no learner, no time, no slips (the file name is the learner)
    _export(c, "cy.json", {"00.1": {"best": "incorrect", "last": "incorrect", "attempts": 4, "hints": 2},
                           "00.2": {"hints": 1}})
    _export(c, "dana.json", {"00.1": {"best": "correct", "last": "correct", "attempts": 1},
                             "99.1": {"best": "correct", "attempts": 1}}, learner="Dana")
    (c / "broken.json").write_text('{"version": 1, "exercises": {"00.1": {"best": "corr', encoding="utf-8")
    (c / "schema.json").write_text('{"version": 1, "exercises": []}', encoding="utf-8")
    (c / "list.json").write_text("[1, 2]", encoding="utf-8")
    _export(c, "badentry.json", {"00.1": {"attempts": "three"}}, learner="Eve")
    (c / "notes.txt").write_text("not an export", encoding="utf-8")
    return c


def test_class_report_matches_the_hand_count(simulated_class):
    r = classroom.class_report(simulated_class)
    # counted: Ana (ana.json, her latest), Ben (ben.json), cy (its file name), Dana
    assert r.learners == {"Ana": "ana.json", "Ben": "ben.json", "cy": "cy.json", "Dana": "dana.json"}
    reasons = {s.file: s.reason for s in r.skipped}
    assert sorted(reasons) == ["ana_monday.json", "badentry.json", "ben_copy.json", "broken.json", "list.json",
                               "notes.txt", "schema.json"]
    assert "duplicate" in reasons["ana_monday.json"] and "ana.json" in reasons["ana_monday.json"]
    assert "duplicate" in reasons["ben_copy.json"] and "ben.json" in reasons["ben_copy.json"]
    assert reasons["broken.json"].startswith("damaged: not valid JSON")
    assert reasons["schema.json"].startswith("wrong schema") and reasons["list.json"].startswith("wrong schema")
    assert reasons["badentry.json"].startswith("damaged") and "00.1" in reasons["badentry.json"]
    assert "not a .json file" in reasons["notes.txt"]
    assert any("99.1" in n for n in r.notes)
    by = {s.exercise: s for s in r.exercises}
    assert list(by) == ["00.1", "00.2", "00.9"]
    # 00.1: tried by Ana (2 attempts), Ben (1), cy (4), Dana (1) = 4; passed by Ana, Ben, Dana = 3 -> 75%;
    # attempts 2 + 1 + 4 + 1 = 8; hints 1 (Ana) + 2 (cy) = 3, by 2 learners; slips: "fp32 bytes" once (Ana)
    s = by["00.1"]
    assert (s.class_size, s.tried, s.passed, s.attempts, s.hints, s.hint_users) == (4, 4, 3, 8, 3, 2)
    assert s.pass_rate == 3 / 4 and s.commonest_slips() == [("fp32 bytes", 1)]
    # 00.2: tried by Ana (3) and Ben (2); cy only asked for a hint, so did not try; passed by Ben -> 1 of 2 = 50%;
    # attempts 3 + 2 = 5; hints 3 + 1 + 1 = 5 by 3 learners; slips: master copy 2 (Ana) + 1 (Ben) = 3, gradients 1
    s = by["00.2"]
    assert (s.tried, s.passed, s.attempts, s.hints, s.hint_users) == (2, 1, 5, 5, 3)
    assert s.pass_rate == 1 / 2
    assert s.commonest_slips() == [("forgot the fp32 master copy", 3), ("forgot gradients", 1)]
    # 00.9 (open question): Ana submitted and marked 2 points of the rubric's
    s = by["00.9"]
    assert (s.tried, s.self_points, s.self_total, s.auto_graded) == (1, 2, RUBRIC_009, False)
    table = r.table()
    assert "4 learner(s) counted, 7 file(s) refused" in table
    assert "| 00.1 " in table and "75%" in table and "forgot the fp32 master copy (3)" in table
    for name in reasons:
        assert f"`{name}`" in table  # every refused file is named with its reason: nothing lost silently


def test_class_report_csv_and_chart(simulated_class, tmp_path):
    r = classroom.class_report(simulated_class)
    rows = list(csv.DictReader(r.to_csv(tmp_path / "class.csv").open(encoding="utf-8")))
    assert [row["exercise"] for row in rows] == ["00.1", "00.2", "00.9"]
    assert rows[0]["pass_rate_percent"] == "75.0" and rows[0]["attempts"] == "8" and rows[0]["hints"] == "3"
    assert rows[1]["commonest_slips"] == "forgot the fp32 master copy (3); forgot gradients (1)"
    png = r.chart(tmp_path / "class.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_class_report_refuses_what_is_not_a_folder(tmp_path):
    with pytest.raises(ValueError, match="not a folder"):
        classroom.class_report(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="folder"):
        classroom.class_report(None)
    assert classroom.class_report(tmp_path).learners == {}


def test_a_newer_format_is_refused_not_misread(tmp_path):
    _export(tmp_path, "future.json", {})
    data = json.loads((tmp_path / "future.json").read_text())
    data["version"] = 2
    (tmp_path / "future.json").write_text(json.dumps(data))
    r = classroom.class_report(tmp_path)
    assert r.learners == {} and "newer memlib" in r.skipped[0].reason


# --- progress records the slips; old and new export files both read ------------------------------------------------
def test_check_records_named_slips_and_the_report_counts_them(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLIB_PROGRESS", str(tmp_path / ".memlib_progress.json"))
    grading.reset()
    ex = EXERCISES["00.2"]
    slip = next(s for s in ex.slips if s.name == "forgot the fp32 master copy")
    slipped = f"{slip.value() / 1e9:.1f} GB"
    for _ in range(2):
        grading.check("00.2", slipped)
    assert progress.entry("00.2")["slips"] == {"forgot the fp32 master copy": 2}
    grading.hint("00.2")
    (tmp_path / "class").mkdir()
    assert progress.export_progress(tmp_path / "class" / "x.json", learner="Xu") is not None
    data = json.loads((tmp_path / "class" / "x.json").read_text())
    assert data["learner"] == "Xu" and re.match(r"\d{4}-\d\d-\d\dT", data["exported_at"])
    r = classroom.class_report(tmp_path / "class")
    s = r.exercises[0]
    assert (s.exercise, s.tried, s.passed, s.attempts, s.hints) == ("00.2", 1, 0, 2, 1)
    assert s.commonest_slips() == [("forgot the fp32 master copy", 2)]
    grading.reset()


def test_old_export_files_still_import_and_new_ones_merge_their_slips(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLIB_PROGRESS", str(tmp_path / ".memlib_progress.json"))
    grading.reset()
    old = tmp_path / "old.json"  # as export_progress wrote it before slips were recorded
    old.write_text(json.dumps({"version": 1, "exercises": {"01.3": {"best": "incorrect", "last": "incorrect",
                                                                      "attempts": 2, "hints": 1}}}))
    assert progress.import_progress(old) == 1
    assert progress.entry("01.3") == {"best": "incorrect", "last": "incorrect", "attempts": 2, "hints": 1}
    new = tmp_path / "new.json"
    new.write_text(json.dumps({"version": 1, "learner": "Ana", "exported_at": "2026-12-01T10:00:00+00:00",
                               "exercises": {"01.3": {"attempts": 3, "slips": {"forgot gradients": 2}}}}))
    assert progress.import_progress(new) == 1
    assert progress.entry("01.3")["attempts"] == 3 and progress.entry("01.3")["slips"] == {"forgot gradients": 2}
    assert progress.parse(json.dumps({"exercises": {"01.3": {"slips": {"x": 0}}}}))[1], "a zero count is damage"
    assert progress.parse(json.dumps({"exercises": {"01.3": {"slips": ["x"]}}}))[1]
    grading.reset()


# --- the commands ------------------------------------------------------------------------------------------------
def test_cli_class_report(simulated_class, tmp_path, capsys):
    assert cli.main(["class-report", str(simulated_class), "--csv", str(tmp_path / "c.csv"),
                     "--chart", str(tmp_path / "c.png")]) == 0
    out = capsys.readouterr().out
    assert "4 learner(s) counted, 7 file(s) refused" in out and "`broken.json`: damaged" in out
    assert (tmp_path / "c.csv").is_file() and (tmp_path / "c.png").is_file()
    assert cli.main(["class-report", str(tmp_path / "nowhere")]) == 2
    assert "not a folder" in capsys.readouterr().err


def test_cli_quiz(tmp_path, capsys):
    assert cli.main(["quiz", "--topic", "04", "--seed", "2026", "--n", "3", "--out", str(tmp_path / "h.md"),
                     "--key", str(tmp_path / "k.md")]) == 0
    sheet, key = classroom.handout("04", 2026, 3)
    assert (tmp_path / "h.md").read_text(encoding="utf-8") == sheet
    assert (tmp_path / "k.md").read_text(encoding="utf-8") == key
    capsys.readouterr()
    assert cli.main(["quiz", "--topic", "4", "--seed", "2026", "--n", "3"]) == 0
    assert capsys.readouterr().out.strip() == sheet.strip()
    assert cli.main(["quiz", "--topic", "99", "--seed", "1"]) == 2
    assert "topic must be one of" in capsys.readouterr().err
    assert cli.main(["quiz", "--topic", "04", "--seed", "1", "--out", str(tmp_path)]) == 2  # a folder, not a file
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "could not write" in err[0] and str(tmp_path) in err[0]
    assert cli.main(["quiz", "--topic", "04", "--seed", "1", "--n", "0"]) == 2
    assert "n must be a whole number from 1 to 50" in capsys.readouterr().err


def test_the_core_cli_loads_no_learning_layer():
    code = "import sys, memlib.cli; print(sorted(m for m in sys.modules if m.startswith('memlib.learn')))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.stdout.strip() == "[]"


def test_no_practice_prompt_quotes_its_own_answer():
    """A quoted example in a practice prompt (`"2.5x"`) is never accepted as the answer: the quiz handout shows
    prompts to a whole class (topic 00's format ratio once said "8x", the answer of bf16's over fp16's epsilon)."""
    for topic, kinds in generator.KINDS.items():
        for kind in range(len(kinds)):
            for seed in range(25):
                ex = generator.build(topic, seed, kind)
                for quoted in re.findall(r'`"([^"`]+)"`', ex.render_prompt()):
                    assert not grading.grade(ex.id, quoted).passed, f"{ex.id}: the prompt's example {quoted!r}"
