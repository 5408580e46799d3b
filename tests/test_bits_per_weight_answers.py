"""Quantization questions speak bits per weight: a bytes-per-weight answer written in bits is read (÷ 8)."""

import pytest

from memlib.learn.exercises.answers import parse_quantity


@pytest.mark.parametrize("text, expected", [
    ("3.3 bits", 3.3 / 8), ("4.25 bits per weight", 4.25 / 8), ("3.297 bits/weight", 3.297 / 8),
    ("4.5 bits/param", 4.5 / 8), ("0.412 bytes", 0.412), ("0.412", 0.412), ("2 bytes/param", 2.0),
])
def test_bits_and_bytes_per_weight(text, expected):
    assert parse_quantity(text, "bytes/param").value == pytest.approx(expected)


def test_exercise_09_2_accepts_bits():
    # 3 + (16 + 3) / 64 = 3.297 bits = 0.412 bytes per weight; "3.3 bits" is the same answer at 2 figures
    from memlib.learn.grading import grade
    assert grade("09.2", "3.3 bits").passed
    assert grade("09.2", "0.412 bytes").passed
    assert not grade("09.2", "4.5 bits").passed     # 0.5625 bytes: wrong
