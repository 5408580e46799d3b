"""W4A4 with rotations (QuaRot) against W4A16, Llama-2-70B (80 layers, 8 KV heads of 128, I 28,672, q 8,192).

KV elements for 32 sequences of 4,096 tokens: 2 x 80 x 8 x 128 = 163,840 per token x 131,072 tokens =
21,474,836,480; bf16 2 bytes each = 42,949,672,960 B; int4 with an fp16 scale and zero per 128:
(4 + 32/128) / 8 = 0.53125 bytes each = 11,408,506,880 B. Weights: the same int4 storage for W4A16 and W4A4.
Online Hadamards per token: down_proj input 28,672 x log2(28,672) = 28,672 x 14.8074 = 424,558; q and k per head
(8,192 + 1,024) x log2 128 = 64,512; x 80 layers = 39.13 million additions, against 2 x 68.7e9 matmul FLOPs.
"""

import pytest

from memlib.serving.quantization import online_hadamard_flops_per_token, w4a4_serving_bytes


def test_kv_cache_int4_against_bf16():
    w16 = w4a4_serving_bytes("llama-2-70b", 32, 4096, "W4A16")
    w4 = w4a4_serving_bytes("llama-2-70b", 32, 4096, "W4A4-KV4")
    assert w16["kv_cache"] == 42_949_672_960
    assert w4["kv_cache"] == 11_408_506_880
    assert w4["weights"] == w16["weights"] < w4a4_serving_bytes("llama-2-70b", 32, 4096, "W16A16")["weights"] / 3.5


def test_online_hadamard_is_a_small_share_of_the_flops():
    h = online_hadamard_flops_per_token("llama-2-70b")
    assert h["hadamard"] == pytest.approx(80 * (424_558 + 64_512), rel=1e-5)
    assert h["ratio"] < 1e-3


def test_bad_input():
    with pytest.raises(ValueError, match="scheme"):
        w4a4_serving_bytes("llama-2-70b", 1, 4096, "W4A8")
