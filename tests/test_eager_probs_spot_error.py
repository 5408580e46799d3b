"""Exercise 06.3 ("~32 GB * num_heads"): one error, the 6-byte eager softmax; "~32 GB" is a GiB label.

Hand derivation: 128k x 128k x 2 B = 131,072² x 2 = 34,359,738,368 B = 34.4 GB = exactly 32 GiB, so "~32 GB"
names the right size in the wrong unit system, not an independent error. transformers' eager attention keeps
the fp32 softmax (4 B) and its bf16 copy (2 B): 32 heads x 131,072² x 6 B = 3,298,534,883,328 B = 3,298.5 GB.
"""

from memlib.learn.grading import grade


def test_one_error_is_enough():
    assert 131_072 ** 2 * 2 == 32 * 2 ** 30
    assert grade("06.3", (["2 bytes"], "3298 GB")).passed
    assert grade("06.3", (["2 bytes"], "3,072 GiB")).passed          # 3,298.5e9 B = 3,072 GiB


def test_the_bf16_only_slip_still_fails():
    # 2 bytes per score: 1,099.5 GB, a third of the answer
    assert not grade("06.3", (["2 bytes"], "1100 GB")).passed
    assert not grade("06.3", (["~32 GB"], "3298 GB")).passed          # the label is not the error
