"""memlib.serving: PagedAttention blocks, vLLM's KV-cache reservation, the decode roofline.

Every expected value is derived by hand below from Llama-3-70B's published shapes (Meta's
config.json: hidden 8192, 80 layers, 64 heads of 128, 8 KV heads, MLP 28672, vocabulary 128256,
untied embeddings), the GPU figures the catalog cites (torch's total memory, HBM bandwidth) and the
vLLM source the module names; nothing is pasted from memlib's output.
"""

from __future__ import annotations

import math

import pytest

from memlib import get_model
from memlib.serving import (decode_bound, decode_tokens_per_s_upper_bound, paged_kv_blocks, paged_kv_waste_bytes,
                            vllm_default_max_num_batched_tokens, vllm_kv_cache_budget_bytes, vllm_max_concurrency)

H, L, HEADS, KV_HEADS, D, I, V = 8192, 80, 64, 8, 128, 28672, 128256
KV_TOKEN = 2 * L * KV_HEADS * D * 2  # K and V, every layer, 8 KV heads of 128, bf16 = 327,680 B
GiB = 2**30
A100_TORCH_TOTAL = 81051 * 2**20  # torch total_memory of an A100-SXM4-80GB (memlib.hardware.gpus cites the record)
H100_BANDWIDTH = 3350 * 10**9  # H100 SXM5 HBM3, NVIDIA datasheet
H100_BF16_FLOPS = 989.4e12  # dense bf16 tensor peak, NVIDIA datasheet


def layer_linear(tp: int) -> int:
    """Elements of one decoder layer's projections on one GPU of tp (Megatron splits: all divide)."""
    return (H * H + 2 * H * KV_HEADS * D + H * H + 3 * H * I) // tp


def weights_bf16(tp: int, embedding: bool = True) -> int:
    """Llama-3-70B bf16 bytes on one GPU: projections / tp, embedding and lm_head by vocabulary rows
    ceil(V / tp), norms (two per layer and the final one) replicated."""
    rows = -(-V // tp)
    elements = L * layer_linear(tp) + rows * H * (2 if embedding else 1) + (2 * L + 1) * H
    return 2 * elements


def test_kv_token_by_hand():
    assert KV_TOKEN == 327_680


# --- PagedAttention blocks ------------------------------------------------------------------
@pytest.mark.parametrize("tokens, blocks", [(0, 0), (1, 1), (16, 1), (17, 2), (8000, 500), (8001, 501), (8192, 512)])
def test_paged_blocks(tokens, blocks):
    assert paged_kv_blocks(tokens) == blocks


def test_paged_waste_of_one_sequence():
    # 8001 tokens fill 500 blocks and 1 token of the 501st: 15 empty slots of 327,680 B
    assert paged_kv_waste_bytes(8001, KV_TOKEN) == 15 * 327_680 == 4_915_200
    assert paged_kv_waste_bytes(8192, KV_TOKEN) == 0  # a multiple of 16 fills its last block
    assert paged_kv_waste_bytes(8001, KV_TOKEN, block_size=32) == 31 * 327_680  # 8001 = 250 x 32 + 1


def test_paged_waste_stays_within_one_block():
    # Kwon et al. 2023, Sec. 4.3: "vLLM limits all the memory wastes for a request within one block"
    for n in range(1, 200):
        w = paged_kv_waste_bytes(n, 10)
        assert 0 <= w <= 15 * 10
        assert (n + w // 10) % 16 == 0


@pytest.mark.parametrize("call", [lambda: paged_kv_blocks(-1), lambda: paged_kv_blocks(8, block_size=0),
                                  lambda: paged_kv_waste_bytes(8, 0), lambda: paged_kv_blocks(1.5)])
def test_paged_bad_input(call):
    with pytest.raises(ValueError):
        call()


# --- vLLM's defaults and reservation -------------------------------------------------------
@pytest.mark.parametrize("gpu, api, offline", [("a100-80gb", 2048, 8192), ("h100-80gb", 8192, 16384),
                                               ("h200", 8192, 16384), ("rtx-4090", 2048, 8192)])
def test_vllm_default_token_budget(gpu, api, offline):
    # vllm/engine/arg_utils.py: >= 70 GiB and not an A100 -> 8192 (API server) / 16384 (LLM class)
    assert vllm_default_max_num_batched_tokens(gpu) == api
    assert vllm_default_max_num_batched_tokens(gpu, usage="offline") == offline


def sampler_warmup(rows: int, tokens: int) -> int:
    """vLLM's sampler warm-up at its sort: per logit the bf16 logits (2), their fp32 copy (4), sorted values (4)
    and int64 indices (8), aten's int64 reverse indices (8) and cub's alternate key and value buffers (4 + 8):
    38 bytes, over rows x V logits, while the forward's bf16 hidden states (tokens x H) are still held."""
    return rows * V * (2 + 4 + 4 + 8 + 8 + 4 + 8) + tokens * H * 2


def test_vllm_budget_llama3_70b_bf16_tp2_a100_by_hand():
    # vLLM: available = total x 0.9 - (weights + profile activation peak + memory outside torch).
    w = weights_bf16(2)
    assert w == 70_555_025_408  # 141.1 GB of bf16 weights over two GPUs
    T, c = 2048, 2  # vLLM's default budget on an A100, bf16 activations
    # the profile forward's largest moment is the MLP: residual + normed input (2 T h c), RoPE cos and sin
    # (2 T head_dim c), and act(gate), up and their product on I / tp columns (3 T (I/2) c): 0.25 GB ...
    mlp = 2 * T * H * c + 2 * T * D * c + 3 * T * (I // 2) * c
    # ... but the sampler's warm-up over 256 dummy sequences x the whole vocabulary is larger, 1.28 GB, and
    # not split by tp (every rank gathers the full logits)
    sampler = sampler_warmup(256, T)
    assert sampler > 5 * mlp
    expected = int(A100_TORCH_TOTAL * 0.9) - w - sampler - 512 * 2**20  # tp 2: memlib's 0.5 GiB outside torch
    assert vllm_kv_cache_budget_bytes("llama-3-70b", "a100-80gb", weights="bf16", tp=2) == expected
    # vLLM's "Maximum concurrency for 8192 tokens per request": whole 16-token blocks of 163,840 B per GPU
    blocks = expected // (16 * KV_TOKEN // 2)
    assert vllm_max_concurrency("llama-3-70b", "a100-80gb", 8192, weights="bf16", tp=2) == blocks * 16 / 8192
    assert 3 < blocks * 16 / 8192 < 5  # bf16 weights leave room for about four 8k chats


def test_vllm_budget_follows_utilization_token_budget_and_sequences():
    kw = dict(weights="bf16", tp=2)
    lo = vllm_kv_cache_budget_bytes("llama-3-70b", "a100-80gb", gpu_memory_utilization=0.8, **kw)
    hi = vllm_kv_cache_budget_bytes("llama-3-70b", "a100-80gb", gpu_memory_utilization=0.9, **kw)
    assert hi - lo == int(A100_TORCH_TOTAL * 0.9) - int(A100_TORCH_TOTAL * 0.8)
    # the sampler decides the peak: fewer tokens only shrink the hidden states it waits beside (T x H x 2)
    small = vllm_kv_cache_budget_bytes("llama-3-70b", "a100-80gb", max_num_batched_tokens=1024, **kw)
    assert small - hi == 1024 * H * 2
    # with 16 sequences the sampler is small and the forward's MLP moment decides again
    T, c = 2048, 2
    few = vllm_kv_cache_budget_bytes("llama-3-70b", "a100-80gb", max_num_seqs=16, **kw)
    mlp = 2 * T * H * c + 2 * T * D * c + 3 * T * (I // 2) * c
    assert few - hi == sampler_warmup(256, T) - mlp
    # FlashInfer's sampler alone keeps 2 + 4 + 4 + 4 bytes per logit (flashinfer sampling.py top_k_first: a masked
    # fp32 copy and its softmax beside the fp32 logits), not 38
    fi = vllm_kv_cache_budget_bytes("llama-3-70b", "a100-80gb", sampler="flashinfer", **kw)
    assert fi - hi == sampler_warmup(256, T) - (256 * V * 14 + T * H * 2)


def test_vllm_default_sequences_follow_the_token_table():
    from memlib.serving import vllm_default_max_num_seqs
    # vllm/engine/arg_utils.py (v0.10-v0.11): >= 70 GiB and not an A100: 1024 sequences; others 256
    assert vllm_default_max_num_seqs("h100-80gb") == 1024
    assert vllm_default_max_num_seqs("a100-80gb") == 256
    assert vllm_default_max_num_seqs("l40s") == 256
    with pytest.raises(ValueError, match="usage"):
        vllm_default_max_num_seqs("h100-80gb", usage="batch")


def test_vllm_profile_peak_matches_v0_logs_within_10_percent():
    # Llama-3-8B on an H100 (vllm-project/vllm#10511): "PyTorch activation peak memory 1.26GiB" at tp 1 AND tp 2
    # with max_num_batched_tokens 8192: the replicated sampler warm-up, not the split forward, sets it.
    from memlib.serving import vllm_profile_peak_bytes
    by_hand = 256 * 128256 * 38 + 8192 * 4096 * 2
    for tp in (1, 2):
        peak = vllm_profile_peak_bytes("llama-3-8b", 8192, 256, tp=tp)
        assert peak == by_hand
        assert abs(peak / GiB - 1.26) / 1.26 < 0.05


def test_vllm_no_room_is_zero_concurrency():
    # bf16 weights on one GPU (141 GB) exceed an 80 GB card: negative budget, no block
    assert vllm_kv_cache_budget_bytes("llama-3-70b", "a100-80gb", weights="bf16") < 0
    assert vllm_max_concurrency("llama-3-70b", "a100-80gb", 8192, weights="bf16") == 0.0


@pytest.mark.parametrize("kw", [dict(gpu_memory_utilization=0), dict(gpu_memory_utilization=1.5),
                                dict(max_num_batched_tokens=0), dict(non_torch_bytes=-1), dict(tp=3),
                                dict(max_num_seqs=0), dict(sampler="cub")])
def test_vllm_bad_input(kw):
    with pytest.raises(ValueError):
        vllm_kv_cache_budget_bytes("llama-3-70b", "a100-80gb", **{"weights": "bf16", "tp": 2, **kw})


def test_vllm_bad_usage_and_gpu():
    with pytest.raises(ValueError, match="usage"):
        vllm_default_max_num_batched_tokens("h100-80gb", usage="batch")
    with pytest.raises(ValueError, match="GPU|gpu"):
        vllm_default_max_num_batched_tokens("h1000")


# --- decode roofline -----------------------------------------------------------------------
def test_decode_bound_tp8_h100_by_hand():
    # one decode step reads every weight but the embedding table, and the batch's whole cache
    tp, batch, ctx = 8, 1, 8192
    weights = weights_bf16(tp, embedding=False)
    kv = batch * ctx * KV_TOKEN // tp
    d = decode_bound("llama-3-70b", "h100-80gb", batch, ctx, weights="bf16", tp=tp)
    assert d.weight_bytes == weights and d.kv_bytes == kv
    assert d.memory_s == pytest.approx((weights + kv) / H100_BANDWIDTH, rel=1e-12)
    # FLOPs per GPU: (2N + 4 L H Q ctx) / tp for the one new token
    n = get_model("llama-3-70b").num_params
    flops = (2 * n + 4 * L * HEADS * D * ctx) / tp
    assert d.compute_s == pytest.approx(flops / H100_BF16_FLOPS, rel=1e-12)
    assert d.bound == "memory"
    assert d.tokens_per_s_per_sequence == pytest.approx(H100_BANDWIDTH / (weights + kv), rel=1e-12)
    assert 150 < d.tokens_per_s_per_sequence < 250  # about 17.5 GB per GPU at 3.35 TB/s: ~5 ms a token


def test_decode_bound_batch_shares_the_weight_read():
    one = decode_bound("llama-3-70b", "h100-80gb", 1, 8192, weights="bf16", tp=8)
    many = decode_bound("llama-3-70b", "h100-80gb", 64, 8192, weights="bf16", tp=8)
    assert many.weight_bytes == one.weight_bytes and many.kv_bytes == 64 * one.kv_bytes
    assert many.tokens_per_s == pytest.approx(64 * H100_BANDWIDTH / (one.weight_bytes + 64 * one.kv_bytes))
    assert decode_tokens_per_s_upper_bound("llama-3-70b", "h100-80gb", 64, 8192, weights="bf16", tp=8) == \
        many.tokens_per_s


def test_decode_bound_compute_bound_at_huge_batch():
    # 4096 sequences of 1 token on Llama-3-8B: 4096 x 2 x 8.03e9 FLOPs = 66 TFLOP against 16 GB of weights
    d = decode_bound("llama-3-8b", "h100-80gb", 4096, 1, weights="bf16")
    assert d.bound == "compute" and d.step_s == d.compute_s > d.memory_s


def test_decode_bound_fp8_uses_fp8_peak_and_tied_head_reads_embedding():
    d = decode_bound("llama-3-70b", "h100-80gb", 1, 1024, weights="fp8-block", tp=8)
    assert d.peak_flops == pytest.approx(1978.9e12)
    tied = get_model("qwen2-0.5b")
    assert tied.tie_word_embeddings
    dt = decode_bound(tied, "h100-80gb", 1, 16, weights="bf16")
    # the head multiplies by the shared embedding: every weight is read
    from memlib.serving.inference import estimate_inference
    assert dt.weight_bytes == estimate_inference(tied, 1, 16, weights="bf16").weight_bytes
    assert math.isfinite(dt.tokens_per_s)


# --- the serving playground's numbers (the widget shows these) -------------------------------
def test_serving_summary_matches_the_functions_it_names():
    from memlib import max_batch
    from memlib.learn.playgrounds.serving import serving_summary
    v = dict(model="llama-3-70b", gpu="h100-80gb", tp=8, weights="bf16", kv_cache="bf16", context=8192,
             chunk="vLLM default", utilization=0.9)
    s = serving_summary(v)
    assert s["prefill_tokens"] == 8192  # vLLM's API-server default on an H100
    assert s["max_batch"] == max_batch("llama-3-70b", "h100-80gb", 8192, weights="bf16", tp=8,
                                       prefill_tokens=8192).value > 0
    assert s["estimate"].setup.batch == s["max_batch"] and s["verdict"].fits
    assert s["decode_one"].batch == 1 and s["decode_full"].batch == s["max_batch"]
    assert s["vllm_concurrency"] == vllm_max_concurrency("llama-3-70b", "h100-80gb", 8192, weights="bf16", tp=8)
    with pytest.raises(ValueError, match="tp 3"):
        serving_summary({**v, "tp": 3})


def test_serving_playground_widget_builds_and_follows_a_control():
    pytest.importorskip("ipywidgets")
    from memlib import max_batch
    from memlib.learn.playgrounds.serving import ServingPlayground
    p = ServingPlayground()
    first = p.summary["max_batch"]
    p.controls["weights"].value = "fp8-block"
    assert p.summary["max_batch"] > first  # fp8 weights free room for more chats
    p.controls["tp"].value = 1  # the whole fp8 model on one A100: fewer chats than on two
    assert p.summary["estimate"].setup.tp == 1
    assert p.summary["max_batch"] == max_batch("llama-3-70b", "a100-80gb", 8192, weights="fp8-block",
                                               prefill_tokens=2048).value
    assert f"{p.summary['max_batch']:,} concurrent chats" in p.summary_html.value
    p.controls["model"].value = "mixtral-8x7b"  # 8 KV heads: tp 1 still valid
    p.controls["tp"].value = 8
    p.controls["model"].value = "qwen2-0.5b"  # 2 KV heads: tp 8 is refused, and the widget says why
    assert "tp 8 does not divide" in p.summary_html.value
