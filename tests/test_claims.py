"""memlib.learn.claims: fact-check verdicts computed from a claimed and a computed figure."""

import pytest

from memlib.learn.claims import PARTLY, RIGHT, WRONG, claim_verdict, overall, relative_error, worst


def test_relative_error_by_hand():
    assert relative_error(14e9, 13.48e9) == pytest.approx(0.52 / 13.48)
    assert relative_error((2e9, 3e9), 2.5e9) == 0  # inside the range
    assert relative_error((2e9, 3e9), 1.5e9) == pytest.approx(0.5 / 1.5)  # below: distance to the low end
    assert relative_error((2e9, 3e9), 4e9) == pytest.approx(0.25)  # above: distance to the high end


@pytest.mark.parametrize("claimed, computed, mark", [
    (84, 80.86, RIGHT),     # 3.9% off
    (115, 134.9, PARTLY),   # 14.8% off
    (28, 80.86, WRONG),     # 65% off
    (100, 110, RIGHT),      # 9.1%: within 10%
    (100, 140, PARTLY),     # 28.6%
    (100, 150, WRONG),      # 33.3%
    ((2, 3), 1.51, WRONG),  # 32% below the range
    ((2, 3), 1.6, PARTLY),  # 25% below
    (True, True, RIGHT), (True, False, WRONG),
])
def test_marks(claimed, computed, mark):
    assert claim_verdict(claimed, computed) == mark


def test_tolerances_move_the_marks():
    assert claim_verdict(115, 134.9, right=0.2) == RIGHT
    assert claim_verdict(115, 134.9, partly=0.1) == WRONG


def test_worst():
    assert worst(RIGHT, PARTLY) == PARTLY
    assert worst(RIGHT, WRONG, PARTLY) == WRONG
    assert worst(RIGHT) == RIGHT


@pytest.mark.parametrize("args, word", [((True, 3.0), "bool"), (("14GB", 3.0), "claimed"), ((3.0, 0), "0"),
                                        (((3, 2), 2.5), "low <= high"), (((1, 2, 3), 2.0), "range"),
                                        ((1.0, float("nan")), "computed")])
def test_bad_input(args, word):
    with pytest.raises(ValueError, match=word):
        claim_verdict(*args)


def test_bad_tolerances_and_marks():
    with pytest.raises(ValueError, match="tolerances"):
        claim_verdict(1, 1, right=0.5, partly=0.1)
    with pytest.raises(ValueError):
        worst()
    with pytest.raises(ValueError):
        worst("ok")


@pytest.mark.parametrize("marks, mark", [((RIGHT, RIGHT), RIGHT), ((RIGHT, PARTLY), PARTLY), ((RIGHT, WRONG), PARTLY),
                                         ((PARTLY, WRONG), WRONG), ((WRONG,), WRONG), ((PARTLY,), PARTLY)])
def test_overall(marks, mark):
    assert overall(*marks) == mark


def test_overall_bad_input():
    with pytest.raises(ValueError):
        overall()
    with pytest.raises(ValueError):
        overall(RIGHT, "?")
