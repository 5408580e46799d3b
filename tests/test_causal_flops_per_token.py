"""Training FLOPs per token with a causal attention kernel, against PaLM's count (which has no causal discount).

Llama-3.1-8B: N = 8,030,261,248; L = 32, H = 32, Q = 128. At T = 131,072: 6N = 48.18e9; PaLM's attention
12·L·H·Q·T = 12 x 32 x 32 x 128 x 131,072 = 206.16e9; causal half 103.08e9.
"""

import pytest

from memlib.cost.conventions import causal_flops_per_token
from memlib.cost.timing import flops_per_token

N, A = 8_030_261_248, 32 * 32 * 128 * 131072    # A = L·H·Q·T = 17.18e9


def test_causal_count_at_128k():
    assert flops_per_token("llama-3.1-8b", 131072) == pytest.approx(6 * N + 12 * A)          # 254.3 GFLOP
    assert causal_flops_per_token("llama-3.1-8b", 131072) == pytest.approx(6 * N + 6 * A)    # 151.3 GFLOP
    # the same hardware FLOP/s makes 254.3 / 151.3 = 1.68x the tokens: notebook 06's 1,524 tok/s -> ~2,560
    assert (6 * N + 12 * A) / (6 * N + 6 * A) == pytest.approx(1.681, abs=1e-3)


def test_causal_count_with_recompute():
    # full recompute reruns the forward: PaLM 8N + 16A; causal 8N + 8A
    assert causal_flops_per_token("llama-3.1-8b", 131072, "full") == pytest.approx(8 * N + 8 * A)
    # torchtitan's op-level selective recompute reruns k, o, up (no attention): only 6A comes off
    sel = flops_per_token("llama-3.1-8b", 131072, "selective")
    assert causal_flops_per_token("llama-3.1-8b", 131072, "selective") == pytest.approx(sel - 6 * A)
