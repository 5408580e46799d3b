"""memlib.serving.request_rate_bound / concurrency_at_rate / request_flops: the request rate a server sustains
is the smaller of a memory bound and a compute bound, and Little's law takes the latency at the load.

The case is chapter 04's follow-up 1 (and the 2026-12-06 review's hand derivation): Llama-3-70B in bf16 on
8 x H100 at tp 8, requests of 1,548 prompt + 500 reply tokens (2,048 in all), 0.5 s to the first token.
Every expected value is derived by hand below from the HF config and the datasheet, not from memlib:

  Llama-3-70B: hidden 8192, 80 layers, 64 query heads, 8 KV heads, head_dim 128, MLP 28672, vocab 128256.
  N = 80 x (2 x 8192^2 + 2 x 8192 x 1024 + 3 x 8192 x 28672 + 2 x 8192) + 2 x 128256 x 8192 + 8192
    = 80 x 855,654,400 + 2,101,346,304 + 8,192 = 70,553,706,496.
  H100 SXM: 989.4 TFLOP/s dense bf16, 3.35 TB/s HBM.
"""

from __future__ import annotations

import pytest

from memlib.serving import concurrency_at_rate, request_flops, request_rate_bound

N = 80 * (2 * 8192**2 + 2 * 8192 * 1024 + 3 * 8192 * 28672 + 2 * 8192) + 2 * 128256 * 8192 + 8192
PEAK, BW = 989.4e12, 3.35e12
PROMPT, REPLY, TTFT = 1548, 500, 0.5
# positions run with a KV cache: the prompt once, then one per later reply token
T = PROMPT + REPLY - 1
# causal attention, forward: 4 x layers x heads x head_dim per attended position; position i attends to i
ATTN = 4 * 80 * 64 * 128
FLOPS = 2 * N * T + ATTN * T * (T + 1) / 2          # = 2.889e14 + 5.49e12 = 2.943e14
# decode step per GPU at tp 8: the weight shard read (the embedding table is not read; the norms are copied on
# every GPU): 2 bytes x ((N_layers - norms) / 8 + norms + lm_head / 8 + final norm)
NORMS = 80 * 2 * 8192
W = 2 * ((80 * 855_654_400 - NORMS) // 8 + NORMS + 128256 * 8192 // 8 + 8192)   # 17,378,066,432 B
KV = (PROMPT + REPLY) * 2 * 80 * 1 * 128 * 2           # one KV head per GPU: 83,886,080 B per chat
DECODE_FLOPS = (2 * N + ATTN * (PROMPT + REPLY)) / 8   # one new token per chat, per GPU


def test_parameter_count_is_the_configs():
    assert N == 70_553_706_496


def test_request_flops_is_2N_per_token_plus_causal_attention():
    assert request_flops("llama-3-70b", PROMPT, REPLY) == pytest.approx(FLOPS, rel=1e-12)
    # the review's pencil, 2 x 70.55e9 x 2,048 = 2.89e14, is within 2%
    assert request_flops("llama-3-70b", PROMPT, REPLY) == pytest.approx(2 * 70.55e9 * 2048, rel=0.02)


def test_compute_bound_is_eight_gpus_peak_over_one_requests_flops():
    full = request_rate_bound("llama-3-70b", "h100-80gb", PROMPT, REPLY, TTFT, mfu=1.0, weights="bf16", tp=8)
    half = request_rate_bound("llama-3-70b", "h100-80gb", PROMPT, REPLY, TTFT, mfu=0.5, weights="bf16", tp=8)
    # 8 x 989.4e12 / 2.943e14 = 26.9 req/s at 100% of peak; 13.4 at 50%
    assert full.compute_rate == pytest.approx(8 * PEAK / FLOPS, rel=1e-12)
    assert 26.5 < full.compute_rate < 27.5
    assert half.compute_rate == pytest.approx(8 * PEAK * 0.5 / FLOPS, rel=1e-12)
    assert 13 < half.compute_rate < 14


def test_memory_bound_is_the_cache_batch_over_its_latency_and_compute_binds():
    b = request_rate_bound("llama-3-70b", "h100-80gb", PROMPT, REPLY, TTFT, mfu=0.5, weights="bf16", tp=8)
    # the batch is what max_batch fits at 2,048 tokens (chapter 04: 739), under vLLM's 1,024 on an H100
    assert b.batch == 739
    # TPOT at 739 chats: (17.38 GB + 739 x 83.9 MB) / 3.35 TB/s = 23.7 ms (memory-bound: the FLOPs take
    # 739 x 18.3 GFLOP / 989.4 TFLOP/s = 13.7 ms)
    tpot = (W + 739 * KV) / BW
    assert 739 * DECODE_FLOPS / PEAK < tpot
    assert b.tpot_s == pytest.approx(tpot, rel=1e-12)
    latency = TTFT + REPLY * tpot                    # 0.5 + 500 x 23.7 ms = 12.35 s
    assert b.memory_rate == pytest.approx(739 / latency, rel=1e-12)   # 59.9 req/s
    assert 59.5 < b.memory_rate < 60.5
    # the server sustains the smaller: compute, at 13.4 req/s, not the cache's 59.9
    assert b.bound == "compute"
    assert b.rate == pytest.approx(8 * PEAK * 0.5 / FLOPS, rel=1e-12)


def test_max_num_seqs_caps_the_memory_bound():
    # an explicit scheduler cap of 256 sequences (vLLM's default on an A100) replaces the 739 the cache holds
    b = request_rate_bound("llama-3-70b", "h100-80gb", PROMPT, REPLY, TTFT, mfu=1.0, weights="bf16", tp=8,
                           max_num_seqs=256)
    assert b.batch == 256
    assert b.memory_rate == pytest.approx(256 / (TTFT + REPLY * (W + 256 * KV) / BW), rel=1e-12)


def test_littles_law_uses_the_latency_at_the_load():
    # L = 5 x (0.5 + 500 x (W + L x KV) / BW): a linear fixed point,
    # L = 5 x (0.5 + 500 W / BW) / (1 - 5 x 500 x KV / BW) = 5 x 3.094 / 0.9374 = 16.5 chats in flight
    # (the full-batch latency of 12.3 s would claim 62)
    lam = 5.0
    expect = lam * (TTFT + REPLY * W / BW) / (1 - lam * REPLY * KV / BW)
    p = concurrency_at_rate("llama-3-70b", "h100-80gb", lam, PROMPT, REPLY, TTFT, weights="bf16", tp=8)
    assert p.in_flight == pytest.approx(expect, rel=1e-12)
    assert 16 < p.in_flight < 17.5
    assert p.tpot_s == pytest.approx((W + expect * KV) / BW, rel=1e-12)    # 5.6 ms, not 23.7
    assert p.in_flight == pytest.approx(lam * p.latency_s, rel=1e-12)    # Little's law holds at the point


def test_replicas_split_the_rate():
    one = concurrency_at_rate("llama-3-70b", "h100-80gb", 5.0, PROMPT, REPLY, TTFT, weights="bf16", tp=8)
    two = concurrency_at_rate("llama-3-70b", "h100-80gb", 10.0, PROMPT, REPLY, TTFT, weights="bf16", tp=8,
                              replicas=2)
    assert two.in_flight == pytest.approx(2 * one.in_flight, rel=1e-12)
    assert two.tpot_s == pytest.approx(one.tpot_s, rel=1e-12)


def test_a_rate_decode_cannot_keep_up_with_is_an_error():
    # each chat adds KV / BW = 25 us to each of 500 steps: at 1 / (500 x 25e-6) = 80 req/s the queue diverges
    with pytest.raises(ValueError, match="beyond what decode alone sustains"):
        concurrency_at_rate("llama-3-70b", "h100-80gb", 81.0, PROMPT, REPLY, TTFT, weights="bf16", tp=8)


@pytest.mark.parametrize("kw, match", [({"mfu": 0}, "mfu"), ({"mfu": 1.5}, "mfu"), ({"ttft_s": -1}, "ttft_s"),
                                       ({"prompt_tokens": 0}, "prompt_tokens"), ({"replicas": 0}, "replicas")])
def test_bad_inputs_are_named(kw, match):
    args = {"prompt_tokens": PROMPT, "reply_tokens": REPLY, "ttft_s": TTFT, "mfu": 0.5} | kw
    with pytest.raises(ValueError, match=match):
        request_rate_bound("llama-3-70b", "h100-80gb", weights="bf16", tp=8, **args)


def test_not_one_request_fits_is_an_error():
    with pytest.raises(ValueError, match="not one request"):
        request_rate_bound("llama-3-70b", "a100-80gb", PROMPT, REPLY, TTFT, mfu=0.5, weights="bf16", tp=1)
