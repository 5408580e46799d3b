"""Where weight-only int4 stops speeding up decode: the two ridges, and the speed-up between them.

Every expected value is derived by hand below from the datasheet (H100 SXM: 989.4 TFLOP/s dense bf16,
3.35 TB/s) and Llama-2-70B's config (hidden 8,192, 80 layers, 8 KV heads of 128, MLP 28,672, vocabulary
32,000, 68,976,648,192 parameters), never from the code under test.
"""

import pytest

from memlib.serving import decode_bound
from memlib.serving.quantization import (bits_per_weight, decode_crossover_batch, decode_speedup,
                                         decode_speedup_end_batch)

H100_PEAK, H100_BW = 989.4e12, 3.35e12
RIDGE = H100_PEAK / H100_BW                  # 295.34 FLOP/byte
AWQ_BITS = 4 + 16 / 128 + 4 / 128            # 4.15625: the code, an fp16 scale and a 4-bit zero per 128 weights
N = 68_976_648_192                           # Llama-2-70B parameters
EMB = 32_000 * 8_192                         # the embedding table: a step reads only the batch's rows
NORMS = (2 * 80 + 1) * 8_192                 # RMSNorm weights: replicated on both tensor-parallel ranks
KV_PER_TOKEN = 2 * 80 * 8 * 128 * 2          # K and V, 80 layers, 8 heads of 128, bf16: 327,680 bytes


def test_the_two_ridges():
    # int4's own ridge: 295.34 x 4.15625 / 16 = 76.72; bf16's: 295.34. The speed-up ends at the larger one.
    assert bits_per_weight(4, 128, scale_bits=16, zero_bits=4) == pytest.approx(AWQ_BITS)
    assert decode_crossover_batch("h100-80gb", AWQ_BITS) == pytest.approx(RIDGE * AWQ_BITS / 16, rel=1e-9)
    assert decode_crossover_batch("h100-80gb", AWQ_BITS) == pytest.approx(76.72, abs=0.01)
    assert decode_speedup_end_batch("h100-80gb", AWQ_BITS) == pytest.approx(295.34, abs=0.01)
    assert decode_speedup_end_batch("h100-80gb", 8) == pytest.approx(295.34, abs=0.01)   # W8A16 too
    # the order of the arguments does not matter: the larger ridge
    assert decode_speedup_end_batch("h100-80gb", 16, baseline_bits=AWQ_BITS) == pytest.approx(295.34, abs=0.01)


def test_int4_still_faster_between_the_ridges_batch_128():
    """The review's pencil, written out: B = 128, TP2 H100s, 256-token contexts.

    bf16 bytes per GPU: (N - EMB - NORMS) x 2 B / 2 + NORMS x 2 B = 68,715,823,104; KV 128 x 256 x 327,680 / 2
    = 5,368,709,120; (74.08e9 B) / 3.35e12 = 22.11 ms. FLOPs per GPU: 128 x (2N + 4 x 80 x 8,192 x 256) / 2
    = 8.872e12; / 989.4e12 = 8.97 ms. bf16: max(22.11, 8.97) = 22.11 ms, memory-bound.
    int4: about 18.05e9 + 5.37e9 = 23.4e9 B / 3.35e12 = 7.0 ms < 8.97 ms: compute-bound, 8.97 ms.
    Speed-up 22.11 / 8.97 = 2.47x, not 1.0x ("past ~80 sequences int4 gains nothing" was wrong)."""
    bf16_bytes = (N - EMB - NORMS) * 2 // 2 + NORMS * 2 + 128 * 256 * KV_PER_TOKEN // 2
    flops = 128 * (2 * N + 4 * 80 * 8_192 * 256) / 2
    bf16_ms, compute_ms = bf16_bytes / H100_BW * 1e3, flops / H100_PEAK * 1e3
    assert bf16_ms == pytest.approx(22.11, abs=0.01) and compute_ms == pytest.approx(8.97, abs=0.01)
    b16 = decode_bound("llama-2-70b", "h100-80gb", 128, 256, weights="bf16", tp=2)
    b4 = decode_bound("llama-2-70b", "h100-80gb", 128, 256, weights="int4-awq", tp=2)
    assert b16.bound == "memory" and b16.step_s * 1e3 == pytest.approx(bf16_ms, rel=1e-6)
    assert b4.bound == "compute" and b4.step_s * 1e3 == pytest.approx(compute_ms, rel=1e-6)
    assert b4.bytes_read / H100_BW * 1e3 == pytest.approx(7.0, abs=0.05)
    x = decode_speedup("llama-2-70b", "h100-80gb", 128, 256, "int4-awq", tp=2)
    assert x == pytest.approx(bf16_ms / compute_ms, rel=1e-6) and x == pytest.approx(2.47, abs=0.01)


def test_speedup_falls_to_one_past_bf16s_ridge():
    # B = 512 > 295: both compute-bound on the same 16-bit tensor cores, the same FLOPs: 1.00x.
    assert decode_speedup("llama-2-70b", "h100-80gb", 512, 256, "int4-awq", tp=2) == pytest.approx(1.0)
    # B = 64 < 77: both memory-bound; the bytes ratio (with the KV cache, which int4 does not shrink) > 3
    assert decode_speedup("llama-2-70b", "h100-80gb", 64, 256, "int4-awq", tp=2) > 3


def test_per_card_speedup_int4_on_one_card_vs_bf16_on_two():
    """Deployed as the chapter recommends: int4 on one H100 against bf16 over two, batch 1, 256 tokens.

    bf16, per GPU: 68,715,823,104 + 256 x 327,680 / 2 = 68,757,766,144 B / 3.35e12 = 20.52 ms.
    int4 on one GPU: projections 68,451,041,280 weights x 4.15625 / 8 = 35.562e9 B + head 32,000 x 8,192 x 2
    = 0.524e9 + norms 2.6e6 + KV 256 x 327,680 = 0.084e9: 36.17e9 B / 3.35e12 = 10.80 ms. Per sequence:
    20.52 / 10.80 = 1.90x (the 3.8x is on the same two cards)."""
    proj = 80 * (2 * 8_192 * 8_192 + 2 * 8_192 * 1_024 + 3 * 8_192 * 28_672)
    int4_ms = (proj * AWQ_BITS / 8 + 32_000 * 8_192 * 2 + NORMS * 2 + 256 * KV_PER_TOKEN) / H100_BW * 1e3
    bf16_ms = ((N - EMB - NORMS) + NORMS * 2 + 256 * KV_PER_TOKEN // 2) / H100_BW * 1e3
    assert bf16_ms == pytest.approx(20.52, abs=0.01) and int4_ms == pytest.approx(10.80, abs=0.01)
    one = decode_bound("llama-2-70b", "h100-80gb", 1, 256, weights="int4-awq", tp=1).step_s * 1e3
    two = decode_bound("llama-2-70b", "h100-80gb", 1, 256, weights="bf16", tp=2).step_s * 1e3
    assert one == pytest.approx(int4_ms, rel=2e-3) and two == pytest.approx(bf16_ms, rel=1e-6)
    assert two / one == pytest.approx(1.90, abs=0.01)


@pytest.mark.parametrize("bad", [0, -4, "four", float("nan")])
def test_end_batch_refuses_bad_bits(bad):
    with pytest.raises(ValueError):
        decode_speedup_end_batch("h100-80gb", bad)
