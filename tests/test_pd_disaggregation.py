"""Prefill/decode disaggregation (memlib.serving.disaggregation): the KV handed over, its time on a link, the
prefill time, and the prefill : decode GPU ratio. Expected values are derived by hand in each test."""

import math

import pytest

from memlib.serving import decode_bound
from memlib.serving.disaggregation import kv_transfer_bytes, kv_transfer_s, pd_ratio, prefill_time_s

L70 = "llama-3-70b"
KV70 = 2 * 80 * 8 * 128 * 2  # K and V x 80 layers x 8 KV heads x head dim 128 x 2 bytes = 327,680 B per token


def test_transfer_bytes_is_prompt_times_kv_per_token():
    assert KV70 == 327_680
    assert kv_transfer_bytes(L70, 8192) == 8192 * 327_680 == 2_684_354_560
    assert kv_transfer_bytes(L70, 8192, kv_cache="fp8") == 8192 * 327_680 // 2


@pytest.mark.parametrize("link, bytes_per_s", [("IB NDR", 400e9 / 8),     # 400 Gb/s = 50 GB/s
                                               ("100GbE", 100e9 / 8),     # 12.5 GB/s
                                               ("h100-80gb", 450e9)])     # NVLink 4: 900 GB/s both ways
def test_transfer_time_over_links(link, bytes_per_s):
    # 2,684,354,560 B / 50e9 B/s = 53.7 ms on IB NDR; / 12.5e9 = 215 ms on 100GbE; / 450e9 = 6.0 ms on NVLink
    assert kv_transfer_s(L70, 8192, link) == pytest.approx(2_684_354_560 / bytes_per_s, rel=1e-12)
    # eight GPUs each send their eighth over their own link
    assert kv_transfer_s(L70, 8192, link, tp=8) == pytest.approx(2_684_354_560 / 8 / bytes_per_s, rel=1e-12)


def test_prefill_time_by_hand():
    # Llama-3-8B, 2,048-token prompt: 2N per position + causal attention 4·L·d·i summed over i = 1..P
    n, layers, d, p = 8_030_261_248, 32, 4096, 2048
    flops = 2 * n * p + 4 * layers * d * p * (p + 1) / 2      # = 3.289e13 + 2.200e12
    assert prefill_time_s("llama-3-8b", "h100-80gb", p, weights="bf16") == pytest.approx(flops / 989.4e12, rel=1e-9)
    # tp 2 at 50%: the same FLOPs over twice the GPUs at half the rate: the same time
    assert prefill_time_s("llama-3-8b", "h100-80gb", p, tp=2, mfu=0.5, weights="bf16") == pytest.approx(
        flops / 989.4e12, rel=1e-9)


def test_pd_ratio_decode_batch_is_the_largest_meeting_the_slo():
    # Llama-3-8B on one H100, 1,000 + 1,000 tokens, TPOT SLO 10 ms. Memory-bound step:
    # (W + B x 2,000 x 131,072 B) / 3.35e12 B/s <= 0.010 s  =>  B <= (0.010 x 3.35e12 - W) / (2,000 x 131,072)
    kv_chat = 2000 * (2 * 32 * 8 * 128 * 2)
    w = decode_bound("llama-3-8b", "h100-80gb", 1, 2000, weights="bf16").weight_bytes   # ~15 GB read per step
    b_hand = math.floor((0.010 * 3.35e12 - w) / kv_chat)                                  # ~70
    r = pd_ratio("llama-3-8b", "h100-80gb", 1000, 1000, 0.010, mfu=0.5, weights="bf16")
    assert r.decode_batch == b_hand and r.decode_bound_by == "SLO"
    assert r.tpot_s <= 0.010
    assert r.decode_gpu_s == pytest.approx(1000 * r.tpot_s / b_hand, rel=1e-12)
    # prefill: (2N x 1,000 + 4·32·4096·1000·1001/2) / (0.5 x 989.4e12) GPU-seconds
    pre = (2 * 8_030_261_248 * 1000 + 4 * 32 * 4096 * 1000 * 1001 / 2) / (0.5 * 989.4e12)
    assert r.prefill_gpu_s == pytest.approx(pre, rel=1e-9)
    assert r.prefill_to_decode == pytest.approx(pre / r.decode_gpu_s)
    pre_gpus, dec_gpus = r.gpus(20)
    assert pre_gpus == pytest.approx(20 * pre) and dec_gpus == pytest.approx(20 * r.decode_gpu_s)


def test_pd_ratio_capped_by_max_num_seqs():
    r = pd_ratio("llama-3-8b", "h100-80gb", 1000, 1000, 1.0, weights="bf16", max_num_seqs=16)
    assert r.decode_batch == 16 and r.decode_bound_by == "max_num_seqs"


def test_pd_ratio_refuses_an_impossible_slo():
    # one step reads ~15 GB: at 3.35 TB/s that is ~4.5 ms, so 1 ms cannot be met
    with pytest.raises(ValueError, match="below one decode step"):
        pd_ratio("llama-3-8b", "h100-80gb", 1000, 1000, 0.001, weights="bf16")


@pytest.mark.parametrize("kw, match", [(dict(prompt_tokens=0), "prompt_tokens"), (dict(link="carrier pigeon"), "link")])
def test_transfer_bad_input(kw, match):
    args = dict(model=L70, prompt_tokens=100, link="IB NDR") | kw
    with pytest.raises(ValueError, match=match):
        kv_transfer_s(**args)


def test_random_routing_hit_rate():
    from memlib.serving.techniques import random_routing_prefix_hit_rate
    assert random_routing_prefix_hit_rate(8) == 1 / 8       # one replica of eight holds the prefix
    assert random_routing_prefix_hit_rate(8, 2) == 2 / 8
    with pytest.raises(ValueError, match="cannot exceed"):
        random_routing_prefix_hit_rate(4, 5)
