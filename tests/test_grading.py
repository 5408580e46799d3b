"""memlib.grading and the exercise registry: answers parse with units, solutions pass, common
slips are rejected and named, unanswered and malformed answers never raise, nothing is evaluated."""

from __future__ import annotations

import builtins
import re
import inspect
import math
import runpy
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memlib.exercises as registry
from memlib import grading
from memlib.exercises import (DIFFICULTIES, EXERCISES, NOTEBOOKS, Choice, Design, Implement, Numeric, SpotError,
                              for_notebook)
from memlib.grading import check, grade, parse_quantity

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = sorted((ROOT / "solutions").glob("*_solutions.py"))
BYTE_UNITS = ("bytes", "GB", "GiB")


@pytest.fixture(autouse=True)
def _fresh():
    grading.reset()
    yield
    grading.reset()


# --- the registry ------------------------------------------------------------------------------
def test_each_notebook_has_eight_or_more_exercises_of_every_kind():
    for nb in NOTEBOOKS:
        exs = for_notebook(nb)
        assert len(exs) >= 8, nb
        assert {type(e) for e in exs} >= {Numeric, SpotError, Choice, Implement, Design}, nb
        assert {e.difficulty for e in exs} == set(DIFFICULTIES), nb


@pytest.mark.parametrize("ex", EXERCISES.values(), ids=list(EXERCISES))
def test_exercise_is_complete(ex):
    assert ex.notebook in NOTEBOOKS and ex.minutes > 0 and ex.hints and ex.title and ex.prompt
    assert len(ex.worked()) > 40  # a computed worked answer renders
    if isinstance(ex, Numeric):
        assert callable(ex.expected) and ex.expected() > 0
    if isinstance(ex, SpotError):
        assert any(f.wrong for f in ex.figures) and ex.quote
    if isinstance(ex, Choice):
        assert ex.right() in {o.key for o in ex.options}
        if ex.reasons:
            assert {o.reason for o in ex.options if o.key == ex.right()} <= {r.key for r in ex.reasons}
    if isinstance(ex, Implement):
        assert len(ex.cases()) >= 4


def test_expected_values_are_computed_when_checked(monkeypatch):
    """The expected value comes from memlib at check time, not from a stored figure."""
    assert grade("01.3", "261.1 GB").passed
    real = registry.zero.zero_model_state_bytes
    monkeypatch.setattr(registry.zero, "zero_model_state_bytes", lambda *a, **k: 2 * real(*a, **k))
    assert not grade("01.3", "261.1 GB").passed
    assert grade("01.3", "522.3 GB").passed


# --- units -------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, unit, value", [
    ("261 GB", "bytes", 261e9), ("243 GiB", "bytes", 243 * 2**30), ("2.61e11", "bytes", 2.61e11),
    (2.61e11, "bytes", 2.61e11), ("1,044.6 GB", "bytes", 1044.6e9), ("512 MiB", "bytes", 512 * 2**20),
    ("1.2 TB", "bytes", 1.2e12), ("34.36", "GB", 34.36e9), (34.36, "GB", 34.36e9), ("32 GiB", "GB", 32 * 2**30),
    ("~261gb", "bytes", 261e9), ("5.37B", "params", 5.37e9), ("40M", "params", 40e6), ("31", "count", 31),
    ("57x", "x", 57), ("16 bytes", "bytes/param", 16), (8, "bytes/param", 8),
])
def test_parse_quantity(text, unit, value):
    assert math.isclose(parse_quantity(text, unit).value, value, rel_tol=1e-12)


@pytest.mark.parametrize("text, unit, says", [
    ("261 G", "bytes", "ambiguous"), ("261 parsecs", "bytes", "unknown unit"), ("5 GB", "params", "not bytes"),
    ("lots", "bytes", "could not read"), (float("nan"), "bytes", "finite"), (True, "bytes", "number"),
])
def test_parse_quantity_explains_what_is_wrong(text, unit, says):
    with pytest.raises(grading.Malformed, match=says):
        parse_quantity(text, unit)


# --- every solution passes ---------------------------------------------------------------------
@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_solutions_pass_their_checks(path, capsys):
    runpy.run_path(str(path))
    out = capsys.readouterr().out
    ids = [e.id for e in for_notebook(path.name[:2])]
    assert all(grading._RESULTS[i].passed for i in ids), out
    assert grading.score(path.name[:2]).passed == len(ids)
    assert "❌" not in out and "⚠️" not in out


# --- wrong answers are rejected, and the feedback names the slip --------------------------------
def _fmt(value: float, unit: str, binary: bool = False) -> str:
    if unit in BYTE_UNITS:
        return f"{value / (2**30 if binary else 1e9):.5g} {'GiB' if binary else 'GB'}"
    return {"params": f"{value / 1e9:.6g}B", "x": f"{value:.5g}x", "count": f"{value:.0f}"}.get(unit, f"{value:.5g}")


def _wrap(ex, text):
    return (next(f.text for f in ex.figures if f.wrong), text) if isinstance(ex, SpotError) else text


NUMERIC = [e for e in EXERCISES.values() if isinstance(e, Numeric)]


@pytest.mark.parametrize("ex", NUMERIC, ids=[e.id for e in NUMERIC])
def test_numeric_slips_are_named(ex):
    expected = ex.expected()
    assert grade(ex.id, _wrap(ex, _fmt(expected, ex.unit))).passed
    for slip in ex.slips:
        fb = grade(ex.id, _wrap(ex, _fmt(slip.value(), ex.unit)))
        assert not fb.passed and slip.name in fb.slips, (slip.name, fb)
    if ex.unit in BYTE_UNITS:  # the GiB figure labelled GB, and the reverse
        for text in (f"{expected / 2**30:.5g} GB", f"{expected / 1e9:.5g} GiB"):
            fb = grade(ex.id, _wrap(ex, text))
            assert not fb.passed and fb.slips == ("unit",) and "GiB" in fb.message, fb
    if ex.count > 1:
        fb = grade(ex.id, _wrap(ex, _fmt(expected * ex.count, ex.unit)))
        assert not fb.passed and "per-unit vs total" in fb.slips, fb
    fb = grade(ex.id, _wrap(ex, _fmt(expected * 4.7, ex.unit)))
    assert fb.status == "incorrect" and "too high" in fb.message


def test_master_copy_and_gradient_slips_say_so():
    assert "master copy" in grade("01.3", "195.9 GB").message  # the seed's ZeRO-3 figure
    assert "master copy" in grade("00.2", f"{EXERCISES['00.2'].expected() * 12 / 16 / 1e9:.4g} GB").message
    assert "gradients" in grade("00.2", f"{EXERCISES['00.2'].expected() * 14 / 16 / 1e9:.4g} GB").message
    assert "labelled GB" in grade("01.3", "243 GB").message
    assert "total over all 4 GPUs" in grade("01.3", "1044.6 GB").message
    assert "add the unit" in grade("01.3", "261").message


SPOTS = [e for e in EXERCISES.values() if isinstance(e, SpotError)]


@pytest.mark.parametrize("ex", SPOTS, ids=[e.id for e in SPOTS])
def test_spot_the_error_needs_the_wrong_figure(ex):
    right = _fmt(ex.expected(), ex.unit)
    correct_fig = next(f for f in ex.figures if not f.wrong)
    fb = grade(ex.id, (correct_fig.text, right))
    assert not fb.passed and "not the error" in fb.message
    assert not grade(ex.id, ("12345GB", right)).passed
    assert grade(ex.id, {"wrong": next(f.text for f in ex.figures if f.wrong), "right": right}).passed


CHOICES = [e for e in EXERCISES.values() if isinstance(e, Choice)]


@pytest.mark.parametrize("ex", CHOICES, ids=[e.id for e in CHOICES])
def test_choices(ex):
    right = ex.right()
    reason = next(o.reason for o in ex.options if o.key == right)
    good = (right, reason) if ex.reasons else right
    assert grade(ex.id, good).passed
    for o in ex.options:
        if o.key != right:
            fb = grade(ex.id, (o.key, reason) if ex.reasons else o.key)
            assert fb.status == "incorrect" and o.why in fb.message
    if ex.reasons:
        wrong_reason = next(r.key for r in ex.reasons if r.key != reason)
        assert grade(ex.id, (right, wrong_reason)).status == "incorrect"
        assert grade(ex.id, f"{right.upper()}, {reason}").passed  # "E, 3" reads too
        assert grade(ex.id, right).status == "incorrect"  # the reason is required


IMPLEMENTS = [e for e in EXERCISES.values() if isinstance(e, Implement)]


def _implementation(ex, slip=None):
    """A learner's function that returns memlib's value (or a slipped one) for the test inputs."""
    table = {tuple(sorted(k.items())): w for k, w in ex.cases()}

    def f(**kw):
        w = table[tuple(sorted(kw.items()))]
        return slip.value(kw, w) if slip else w
    return f


@pytest.mark.parametrize("ex", IMPLEMENTS, ids=[e.id for e in IMPLEMENTS])
def test_implement_slips_and_failures(ex):
    assert grade(ex.id, _implementation(ex)).passed
    for slip in ex.slips:
        fb = grade(ex.id, _implementation(ex, slip))
        assert not fb.passed and slip.name in fb.slips, (slip.name, fb)

    def broken(**kw):
        raise ZeroDivisionError("oops")

    def off_by_one(**kw):
        return _implementation(ex)(**kw) * 1.01

    assert "raised ZeroDivisionError" in grade(ex.id, broken).message
    assert "inputs differ" in grade(ex.id, off_by_one).message
    assert grade(ex.id, lambda **kw: None).status == "not answered"
    assert grade(ex.id, lambda **kw: "12").status == "incorrect"


DESIGNS = [e for e in EXERCISES.values() if isinstance(e, Design)]


@pytest.mark.parametrize("ex", DESIGNS, ids=[e.id for e in DESIGNS])
def test_design_answers(ex):
    assert grade(ex.id, "Buy more GPUs.").status == "incorrect"
    off_topic = "I would simply ask the team to wait until the new cluster arrives next quarter and do nothing now."
    fb = grade(ex.id, off_topic)
    assert fb.status == "incorrect" and "not yet mentioned" in fb.message
    labels = " ".join(p.label for p in ex.key_points)  # an answer naming every key point passes
    assert grade(ex.id, labels + " " + off_topic).passed


# --- unanswered, malformed, never raising, never evaluating --------------------------------------
@pytest.mark.parametrize("eid", list(EXERCISES))
@pytest.mark.parametrize("answer", [None, ..., "", "  ", "...", "your answer here", (None, None), ("", ...)])
def test_unanswered(eid, answer):
    assert grade(eid, answer).status == "not answered"


def test_check_prints_and_records(capsys):
    check("01.3", None)
    check("01.3", "1 GB")
    check("nope", 1)
    out = capsys.readouterr().out
    assert "not answered yet" in out and "❌ 01.3" in out and "unknown exercise" in out
    assert grading.score("01").rows[2][1] == "incorrect"
    assert "unknown notebook" in (grading.score("7") and capsys.readouterr().out)


def test_hint_and_solution_print(capsys):
    grading.hint("01.3")
    grading.solution("01.3")
    grading.show("01.3")
    grading.hint("no-such")
    out = capsys.readouterr().out
    assert "hint 1 of" in out and "Worked answer 01.3" in out and "243.21 GiB" in out and "unknown exercise" in out


ANSWERS = st.one_of(
    st.text(max_size=80), st.binary(max_size=20), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
    st.none(), st.booleans(), st.lists(st.text(max_size=10), max_size=3),
    st.tuples(st.one_of(st.text(max_size=12), st.integers(), st.none()), st.one_of(st.text(max_size=12), st.floats())),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
    st.from_regex(r"\s*[-+~]?\d{0,4}[.,]?\d{0,3}(e[-+]?\d{1,3})?\s*(GB|GiB|gb|MB|B|KiB|x|M|T|bn)?\s*", fullmatch=True),
)


@settings(max_examples=300, deadline=None)
@given(eid=st.sampled_from(list(EXERCISES) + ["", "01", "99.9"]), answer=ANSWERS)
def test_grade_never_raises_and_never_errors(eid, answer):
    fb = grade(eid, answer)
    assert fb.status in ("correct", "incorrect", "not answered", "malformed", "unknown exercise"), fb
    assert isinstance(str(fb), str)


def test_grader_never_evaluates_text(monkeypatch):
    source = inspect.getsource(grading) + inspect.getsource(registry)
    assert not re.search(r"(?<![.\w])(eval|exec|compile|__import__)\(", source)

    def forbidden(*a, **k):
        raise AssertionError("the grader evaluated learner text")

    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    for text in ("__import__('os').system('echo hi')", "2**40", "16*65e9/4", "1e9 * 261"):
        assert grade("01.3", text).status == "malformed"
