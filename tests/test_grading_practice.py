"""practice(topic, seed): unlimited questions, reproducible by seed, graded against memlib (issue 20)."""

from __future__ import annotations

import pytest

from memlib.learn import grading
from memlib.learn.exercises import get_exercise
from memlib.learn.exercises.practice import KINDS
from memlib.learn.grading import grade, practice


def _written(value: float, unit: str) -> str:
    """How a learner writes the worked answer's figure (5 significant figures, the unit named)."""
    return {"GB": f"{value / 1e9:.5g} GB", "bytes": f"{value:.0f} bytes", "count": f"{value:.0f}",
            "x": f"{value:.4g}x", "FLOPs": f"{value:.4g} FLOPs", "GPU-hours": f"{value:.6g} GPU-hours",
            "s": f"{value:.5g} s", "days": f"{value:.5g} days", "%": f"{value:.4g}%",
            "params": f"{value / 1e9:.5g}B parameters"}[unit]


@pytest.fixture(autouse=True)
def _memory_only(monkeypatch):
    monkeypatch.setenv("MEMLIB_PROGRESS", "off")
    grading.reset()


@pytest.mark.parametrize("topic", sorted(KINDS))
def test_each_topic_gives_ten_distinct_questions_the_solution_passes_and_a_factor_two_slip_fails(topic):
    prompts = set()
    for seed in range(20):
        q = practice(topic, seed=seed)
        ex = get_exercise(q.id)
        expected = float(ex.expected())
        assert expected > 0
        prompts.add(q.prompt)
        worked = ex.worked()
        assert "**" in worked  # the worked answer states its figure
        assert grade(q.id, _written(expected, ex.unit)).passed, (q.id, q.title)
        slip = grade(q.id, _written(2 * expected, ex.unit))
        assert not slip.passed, (q.id, q.title, slip)
    assert len(prompts) >= 10


def test_a_seed_reproduces_the_question_and_the_id_rebuilds_it():
    a, b = practice("03", seed=17), practice(3, seed=17)
    assert a == b and a.id == "p03.17"
    assert get_exercise("p03.17").prompt == a.prompt  # after a kernel restart, check(q.id, ...) still works
    assert practice("03").id.startswith("p03.")  # no seed: a fresh draw


def test_hint_and_solution_work_for_practice(capsys):
    q = practice("07", seed=2)
    grading.hint(q.id)
    grading.solution(q.id)
    grading.check(q.id, "1 GPU-hours")
    out = capsys.readouterr().out
    assert "hint 1" in out and q.id in out


@pytest.mark.parametrize("topic,seed", [("99", 1), ("xx", 1), ("03", -1), ("03", 10**7), ("03", 1.5)])
def test_bad_topic_or_seed_is_a_clear_error(topic, seed):
    with pytest.raises(ValueError):
        practice(topic, seed=seed)


def test_practice_is_reexported_by_memlib_grading():
    import memlib.grading
    assert memlib.grading.practice is practice


# --- the mock interview (notebooks/mock_interview.ipynb) ------------------------------------------
def test_mock_interview_draws_from_every_topic_and_follows_up():
    from memlib.learn import interview
    topics = {interview.draw(seed=s).topic for s in range(200)}
    assert len(topics) >= 8  # scenarios (03, 04, 05, 07, 09) and the notebooks' open questions
    q = interview.draw(seed=3)
    assert q == interview.draw(seed=3)
    assert "at least 10 words" in interview.assess(q, "too short")
    shown = interview.assess(q, "word " * 20)
    assert "Rubric" in shown and "Model answer" in shown
    n = len(interview._exercise(q).rubric)
    assert f"{n} of {n} points" in interview.mark(q, [True] * n)
    assert "⚠️" in interview.mark(q, [True])
    f = interview.follow_up(q)
    assert grade(f.id, "1 GB").status in ("incorrect", "malformed", "correct")
    with pytest.raises(ValueError):
        interview.timer(0)
