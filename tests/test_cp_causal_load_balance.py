"""Context parallelism's causal load balance (the zigzag / head-tail split), derived by hand."""

import pytest

from memlib.training.context_parallel import causal_attention_pairs_per_rank


def test_small_case_by_hand():
    # T = 16, cp = 2: 4 chunks of c = 4 tokens. Chunk j: j x 16 earlier pairs + 4 x 5 / 2 = 10 on its diagonal:
    # [10, 26, 42, 58], total 136 = 16 x 17 / 2 (every causal pair once).
    # contiguous: rank 0 = chunks 0, 1 = 36; rank 1 = chunks 2, 3 = 100.  zigzag: 0 + 3 = 68, 1 + 2 = 68.
    assert causal_attention_pairs_per_rank(16, 2, load_balance=False) == [36, 100]
    assert causal_attention_pairs_per_rank(16, 2) == [68, 68]


def test_128k_over_8_ranks():
    # c = 131,072 / 16 = 8,192. Contiguous, rank i: (4i + 1) c^2 + c(c + 1): rank 0 = 2 c^2 + c, rank 7 = 30 c^2 + c.
    # Zigzag: every rank 16 c^2 + c. Total T(T + 1)/2 either way; the last contiguous rank does 30/16 = 1.875x the mean.
    c = 8192
    flat = causal_attention_pairs_per_rank(131072, 8, load_balance=False)
    zig = causal_attention_pairs_per_rank(131072, 8)
    assert flat[0] == 2 * c * c + c and flat[-1] == 30 * c * c + c
    assert zig == [16 * c * c + c] * 8
    assert sum(flat) == sum(zig) == 131072 * 131073 // 2
    assert flat[-1] / (sum(flat) / 8) == pytest.approx(1.875, abs=1e-4)


def test_bad_input():
    with pytest.raises(ValueError):
        causal_attention_pairs_per_rank(100, 8)          # not divisible by 16
    with pytest.raises(ValueError):
        causal_attention_pairs_per_rank(131072, 0)
