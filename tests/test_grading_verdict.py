"""A figure with its verdict ("119 GB, does not fit"): the grader reads the figure, and an exercise that asks
whether it fits (Numeric.fits, e.g. 08.7) grades the verdict too. Review 2026-12-06-05-09, 08-5."""

from __future__ import annotations

import pytest

from memlib.learn.exercises.answers import parse_quantity, stated_fit
from memlib.learn.grading import grade


@pytest.mark.parametrize("text, verdict", [
    ("119 GB, does not fit", False), ("119 GB does not fit", False), ("108 GB (OOM)", False),
    ("108GB, it won't fit on one GPU", False), ("约119GB，放不下", False), ("108 GB，不够", False),
    ("108 GB, so it does not fit.", False), ("108 GB, fits", True), ("60 GB, it fits", True),
    ("60 GB，放得下", True), ("108 GB", None), ("14 GB per GPU", None),
])
def test_a_verdict_after_the_figure_is_read_apart(text, verdict):
    assert parse_quantity(text, "GB").value == pytest.approx(float(text.split("GB")[0].lstrip("约")) * 1e9)
    assert stated_fit(text) is verdict


def test_stated_fit_of_a_number_is_none():
    assert stated_fit(108.0) is None


def test_08_7_grades_the_figure_and_the_verdict(monkeypatch):
    monkeypatch.setenv("MEMLIB_PROGRESS", "off")
    from memlib.learn.exercises import EXERCISES
    ex = EXERCISES["08.7"]
    gb = ex.expected() / 1e9
    right = "fits" if ex.fits() else "does not fit"
    wrong = "does not fit" if ex.fits() else "fits"
    assert grade("08.7", f"{gb:.1f} GB, {right}").passed
    assert grade("08.7", f"{gb:.1f} GB").passed  # the figure alone is read as the figure
    fb = grade("08.7", f"{gb:.1f} GB, {wrong}")
    assert not fb.passed and fb.slips == ("verdict",)
    assert f"{gb:.1f}" not in fb.message  # the feedback does not give the figure away
    assert grade("08.7", "119 GB, does not fit").status in ("correct", "incorrect")  # read, never malformed


def test_an_exercise_without_a_verdict_ignores_one(monkeypatch):
    monkeypatch.setenv("MEMLIB_PROGRESS", "off")
    from memlib.learn.exercises import EXERCISES
    gb = EXERCISES["08.3"].expected() / 1e9
    assert grade("08.3", f"{gb:.2f} GB, fits").passed and grade("08.3", f"{gb:.2f} GB, does not fit").passed
