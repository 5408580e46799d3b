"""Notebook 09's 30-second answer says where int4's decode gain shrinks and where it ends, on which cards,
in at most five figures, and renders 中文 card counts in Chinese.

The figures it must show come from the hand derivation in tests/test_quant_speedup_crossover.py: int4's ridge
295.3 x 4.156 / 16 = 76.7 (said "about 80"), bf16's 295.3 ("about 300"); batch 1 on the same two H100s 3.8x.
"""

from pathlib import Path

import nbformat

from test_notebooks import thirty_second_answers
from test_teaching_figures import figures

NB = Path(__file__).resolve().parents[1] / "notebooks" / "09_quantization.ipynb"


def _answers():
    en, zh = thirty_second_answers(nbformat.read(NB, as_version=4))
    return en[0], zh[0]


def test_both_ridges_and_the_same_cards():
    en, zh = _answers()
    assert "past about 80 sequences (int4's ridge)" in en and "gone near 300 (bf16's)" in en
    assert "on the same cards" in en and "3.8× faster at batch 1" in en
    assert "gains nothing" not in en
    assert "约 80（int4 的拐点）" in zh and "约 300（bf16 的拐点）消失" in zh


def test_chinese_says_liang_and_yi_and_five_figures():
    en, zh = _answers()
    assert "从两张" in zh and "变一张" in zh and "two" not in zh and "one" not in zh
    assert len(figures(en)) <= 5 and len(figures(zh)) <= 5, (figures(en), figures(zh))
