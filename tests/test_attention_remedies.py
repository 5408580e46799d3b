"""Issue 26 items 3 and 12: FlashAttention's HBM argument and the O(s²) remedies (sliding windows),
checked against hand derivations and the papers' own statements."""

from __future__ import annotations

import pytest

from memlib import get_model
from memlib.cost.conventions import (attention_hbm_accesses, causal_attention_flops_per_token,
                                     mean_attended_keys, windowed_attention_flops_per_token)
from memlib.cost.timing import attention_flops_per_token
from memlib.training.activations import korthikanti_layer_bytes


def test_mean_attended_keys_by_hand():
    # bidirectional: every query sees all T keys; causal: the triangle, T/2 on average
    assert mean_attended_keys(1000, causal=False) == 1000
    assert mean_attended_keys(1000) == 500
    # causal window w=4096 at T=131,072: the first 4,096 rows form a triangle (area w²/2), the other
    # T - w rows see w keys: (w²/2 + (T - w)·w) / T = w - w²/(2T) = 4096 - 16,777,216 / 262,144 = 4096 - 64
    assert mean_attended_keys(131072, 4096) == 4032
    # a window at least as long as the sequence changes nothing
    assert mean_attended_keys(4096, 4096) == mean_attended_keys(4096) == 2048
    assert mean_attended_keys(1000, 256, causal=False) == 256


def test_windowed_flops_by_hand():
    # Mistral 7B: L = 32, H = 32, Q = 128 (arXiv:2310.06825, Table 1), window 4,096.
    # Full causal at 32k: 12 x 32 x 32 x 128 x 32,768 / 2 = 25.77e9 FLOPs per token;
    # window: 12 x 32 x 32 x 128 x (4096 - 4096²/65,536 = 3,840) = 6.04e9, a ratio of 3,840 / 16,384.
    m = get_model("mistral-7b")
    full = windowed_attention_flops_per_token(m, 32768)
    win = windowed_attention_flops_per_token(m, 32768, 4096)
    assert full == pytest.approx(12 * 32 * 32 * 128 * 16384) == causal_attention_flops_per_token(m, 32768)
    assert win == pytest.approx(12 * 32 * 32 * 128 * 3840)
    assert windowed_attention_flops_per_token(m, 32768, causal=False) == attention_flops_per_token(m, 32768)
    # per token the window's cost stops growing: 128k costs at most w keys, as at 32k
    assert windowed_attention_flops_per_token(m, 131072, 4096) < 12 * 32 * 32 * 128 * 4096


def test_flash_hbm_accesses_by_hand():
    # Theorem 2 (Dao et al. 2022): standard Θ(N·d + N²), FlashAttention Θ(N²·d²/M).
    # N = 4,096, d = 128, M = 65,536 elements: standard 4096·128 + 4096² = 524,288 + 16,777,216;
    # flash 4096² x 16,384 / 65,536 = 4096² / 4 = 4,194,304.
    std, flash = attention_hbm_accesses(4096, 128, 65536)
    assert std == 17_301_504 and flash == 4_194_304
    # the ratio is d²/M up to the N·d term: larger SRAM, fewer accesses
    assert attention_hbm_accesses(4096, 128, 131072)[1] == flash / 2
    with pytest.raises(ValueError, match="Theorem 2"):
        attention_hbm_accesses(4096, 128, 64)  # M < d
    with pytest.raises(ValueError):
        mean_attended_keys(0)
    with pytest.raises(ValueError):
        mean_attended_keys(100, -1)


def test_score_matrices_per_layer_at_32k_by_hand():
    # Korthikanti et al. 2022 eq. (2): the attention core keeps 5·a·s²·b bytes (scores 2, softmax 2,
    # dropout mask 1 per element). Llama-3.1-8B, a = 32, s = 32,768, b = 1: 5 x 32 x 32,768² = 171.8e9 B.
    m = get_model("llama-3.1-8b")
    full = korthikanti_layer_bytes(32768, 1, m.hidden_size, m.num_heads)
    lin = korthikanti_layer_bytes(32768, 1, m.hidden_size, m.num_heads, recompute="selective")
    assert full - lin == 5 * 32 * 32768 ** 2 == 171_798_691_840
