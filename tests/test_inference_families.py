"""Serving the newer families: KV per token by hand, window caps, MLA caches, resident experts,
the released weight formats (fp8 block-wise, MXFP4), expert parallelism, and DeepSeek-V3 on
8 x H200. Every expected figure is arithmetic written out here from the published configs and
the formats' layouts."""

import json

import pytest

from memlib import estimate_inference, fits, get_gpu, get_model, max_batch
from memlib.serving.inference import (kv_bytes_per_token, kv_cache_bytes, quantized_linear_bytes)


# --- KV cache per token ------------------------------------------------------------------------------
def test_kv_llama_3_70b_bf16():
    # 2 (K, V) x 80 layers x 8 KV heads x head_dim 128 x 2 bytes
    assert 2 * 80 * 8 * 128 * 2 == 327_680
    assert kv_bytes_per_token(get_model("llama-3-70b"), "bf16") == 327_680
    assert estimate_inference("llama-3.1-70b").kv_bytes_per_token == 327_680


def test_kv_deepseek_v3_latent_bf16():
    # MLA caches c_KV (kv_lora_rank 512) and the rope key (64) per token and layer: (512 + 64) x 61 x 2
    assert (512 + 64) * 61 * 2 == 70_272
    m = get_model("deepseek-v3")
    assert kv_bytes_per_token(m, "bf16") == 70_272
    # one latent per token, not per head: tensor parallelism does not split it (vLLM replicates it)
    assert estimate_inference(m, context_len=8192, tp=8).kv_bytes_per_token == 70_272
    assert kv_bytes_per_token(m, "fp8") == 35_136


def test_kv_deepseek_v3_full_cache_of_transformers():
    # transformers' eager cache keeps K (128 heads x (128 nope + 64 rope)) and V (128 heads x 128)
    full = 61 * 128 * (192 + 128) * 2
    assert full == 4_997_120
    m = get_model("deepseek-v3")
    assert kv_bytes_per_token(m, "bf16", mla_cache="full") == full
    assert kv_bytes_per_token(m, "bf16", tp=8, mla_cache="full") == full // 8
    assert full / 70_272 > 71  # what MLA's latent cache saves


def test_sliding_window_caps_mistral_v01():
    # Mistral 7B v0.1: sliding_window 4096 on all 32 layers; 131,072 B per token (2 x 32 x 8 x 128 x 2)
    m = get_model("mistral-7b")
    per_token = 2 * 32 * 8 * 128 * 2
    assert kv_cache_bytes(m, 1, 32768) == per_token * 4096
    assert kv_cache_bytes(m, 3, 2000) == per_token * 2000 * 3  # below the window: uncapped
    est = estimate_inference(m, batch=2, context_len=32768)
    assert est.breakdown["kv_cache"] == 2 * per_token * 4096
    assert any("stops at 4,096 tokens" in n for n in est.notes)


def test_gemma_3_local_layers_capped():
    # 52 local layers keep 1,024 tokens, 10 global keep all; 2 x 16 KV heads x 128 x 2 B = 8,192 B per layer
    m = get_model("gemma-3-27b")
    per_layer = 2 * 16 * 128 * 2
    assert kv_cache_bytes(m, 1, 32768) == (52 * 1024 + 10 * 32768) * per_layer


def test_gpt_oss_sliding_and_llama4_chunked():
    # gpt-oss-20b: 12 sliding layers (128 tokens) + 12 full; 2 x 8 KV heads x 64 x 2 B = 2,048 B per layer
    assert kv_cache_bytes(get_model("gpt-oss-20b"), 1, 100_000) == (12 * 128 + 12 * 100_000) * 2048
    # Llama 4 Scout: 36 chunked layers keep one 8,192-token chunk; 12 global NoPE layers keep all
    per_layer = 2 * 8 * 128 * 2
    assert kv_cache_bytes(get_model("llama-4-scout"), 1, 65536) == (36 * 8192 + 12 * 65536) * per_layer


# --- weights -------------------------------------------------------------------------------------------
def test_moe_keeps_every_expert_resident():
    # bf16: 2 bytes for every one of Mixtral's 46,702,792,704 parameters, not the 12.9B active ones
    est = estimate_inference("mixtral-8x7b", weights="bf16")
    assert est.weight_bytes == 2 * 46_702_792_704


def test_expert_parallel_splits_whole_experts():
    # Mixtral over 8 GPUs, tp=8 for attention, ep=8: one whole expert of each layer per GPU
    h, I, L = 4096, 14336, 32
    ep = estimate_inference("mixtral-8x7b", weights="bf16", tp=8, ep=8)
    tp = estimate_inference("mixtral-8x7b", weights="bf16", tp=8)
    assert ep.weight_parts["experts"] == L * 1 * 3 * h * I * 2
    assert tp.weight_parts["experts"] == L * 8 * 3 * h * (I // 8) * 2  # the same bytes, split differently
    assert ep.weight_parts["linear"] == tp.weight_parts["linear"]


def test_fp8_block_layout():
    # DeepSeek-V3 fp8: e4m3 weight + one fp32 scale per 128 x 128 block (weight_scale_inv)
    assert quantized_linear_bytes(7168, 2048, "fp8-block") == 7168 * 2048 + 4 * 16 * 56
    assert quantized_linear_bytes(7168, 576, "fp8-block") == 7168 * 576 + 4 * 5 * 56  # ceil(576/128) = 5


def test_mxfp4_layout_and_gpt_oss_fits_its_claims():
    # OCP MX: 32 E2M1 values (16 bytes) + one E8M0 scale byte per block of 32 inputs
    assert quantized_linear_bytes(2880, 5760, "mxfp4") == 5760 * 90 * 17
    # OpenAI: gpt-oss-20b "can run within 16GB of memory", gpt-oss-120b "on a single 80GB GPU"
    assert estimate_inference("gpt-oss-20b", context_len=1).weight_bytes < 16e9
    assert estimate_inference("gpt-oss-120b", context_len=1).weight_bytes < 80 * 2**30
    # MXFP4 is on the experts only: attention, router, embedding and head stay bf16
    e = estimate_inference("gpt-oss-20b", context_len=1)
    h, V = 2880, 201088
    assert e.weight_parts["lm_head"] == e.weight_parts["embedding"] == V * h * 2
    assert e.weight_parts["experts"] == 24 * 32 * (5760 * 90 * 17 + 2880 * 90 * 17)


def test_released_format_is_the_default_and_overridable():
    auto = estimate_inference("deepseek-v3", context_len=1)
    assert auto.setup.weights == "fp8-block" and any("quantization_config" in n for n in auto.notes)
    assert estimate_inference("deepseek-v3", context_len=1, weights="bf16").weight_bytes > 1.9 * auto.weight_bytes
    assert estimate_inference("llama-3-8b", context_len=1).setup.weights == "bf16"


# --- context window ------------------------------------------------------------------------------------
def test_beyond_the_context_window_warns():
    est = estimate_inference("llama-2-7b", context_len=100_000)
    assert est.warnings and "exceeds llama-2-7b's context window (4,096" in est.warnings[0]
    assert est.notes[0].startswith("WARNING: ")
    d = json.loads(json.dumps(est.to_dict()))
    assert d["warnings"] == est.warnings
    assert "**Warning:**" in est.explain()
    assert not estimate_inference("llama-2-7b", context_len=4096).warnings


# --- DeepSeek-V3 on 8 x H200 -----------------------------------------------------------------------------
def fp8(i, o):  # e4m3 weight + fp32 scale per 128 x 128 block
    return i * o + 4 * -(-i // 128) * -(-o // 128)


def test_deepseek_v3_weights_on_8_h200_by_hand():
    # tp=8 (vLLM): q_a_proj and kv_a_proj_with_mqa replicated, q_b/kv_b column-split, o_proj row-split;
    # experts split by their width 2048 -> 256; router, norms, embedding/head (vocab-split) in bf16
    h, H, tp = 7168, 128, 8
    attn = (fp8(h, 1536) + fp8(1536, H * 192 // tp) + fp8(h, 576) + fp8(512, H * 256 // tp)
            + fp8(H * 128 // tp, h))
    dense_mlp = 2 * fp8(h, 18432 // tp) + fp8(18432 // tp, h)
    expert = 2 * fp8(h, 2048 // tp) + fp8(2048 // tp, h)  # gate_up stored fused: same blocks as two halves
    moe = 256 * expert + 2 * fp8(h, 2048 // tp) + fp8(2048 // tp, h)  # routed + shared
    norms_bf16 = 2 * (61 * (1536 + 512 + 2 * h) + h)
    router_bf16 = 2 * 58 * 256 * h
    vocab = 2 * 2 * (129280 // tp) * h
    expected = 61 * attn + 3 * dense_mlp + 58 * moe + norms_bf16 + router_bf16 + vocab
    est = estimate_inference("deepseek-v3", batch=1, context_len=8192, tp=8, prefill_tokens=8192)
    assert est.weight_bytes == expected
    assert 84e9 < expected < 86e9  # 671B parameters at ~1 byte, over 8 GPUs


def test_deepseek_v3_max_batch_at_8k_on_8_h200():
    # Per GPU: 143,771 MiB (what the H200 reports), less 0.5 GiB CUDA context, over 1.05 (allocator
    # headroom) = 143.06 GB for tensors; less ~85.1 GB of fp8 weights and the 8,192-token prefill's
    # workspace (under 3 GB) leaves 55-58 GB for the cache; one 8k sequence's latent cache is
    # 8,192 x 70,272 B = 0.576 GB, so about 95-100 sequences.
    lim = max_batch("deepseek-v3", "h200", 8192, tp=8, prefill_tokens=8192)
    assert 95 <= lim.value <= 100
    at = estimate_inference("deepseek-v3", batch=lim.value, context_len=8192, tp=8, prefill_tokens=8192)
    over = estimate_inference("deepseek-v3", batch=lim.value + 1, context_len=8192, tp=8, prefill_tokens=8192)
    assert fits(at, "h200").fits and not fits(over, "h200").fits
    assert at.breakdown["kv_cache"] == lim.value * 8192 * 70_272
    # without chunked prefill (one forward over the whole batch x 8k, HF generate) the workspace grows
    assert max_batch("deepseek-v3", "h200", 8192, tp=8).value < lim.value
    # transformers' full K/V cache would hold a handful: 8,192 x 624,640 B per GPU = 5.1 GB a sequence
    assert max_batch("deepseek-v3", "h200", 8192, tp=8, prefill_tokens=8192, mla_cache="full").value < 12


# --- bad input -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw, msg", [
    (dict(ep=3), "ep 3 does not divide mixtral-8x7b's 8 experts"),
    (dict(ep=2, tp=4), "ep 2 must be a multiple of tp 4"),
    (dict(mla_cache="compressed"), "unknown mla_cache 'compressed'"),
    (dict(prefill_tokens=0), "prefill_tokens must be >= 1"),
    (dict(weights="fp4"), "unknown weights 'fp4'.*'auto'"),
])
def test_new_options_validated(kw, msg):
    with pytest.raises(ValueError, match=msg):
        estimate_inference("mixtral-8x7b", **kw)


def test_ep_on_a_dense_model_refused():
    with pytest.raises(ValueError, match="ep 2: expert parallelism needs a mixture-of-experts model"):
        estimate_inference("llama-3-8b", ep=2, tp=2)


@pytest.mark.parametrize("name", ["qwen3-30b-a3b", "deepseek-v3", "gpt-oss-120b", "llama-4-maverick",
                                  "gemma-3-27b", "phi-4", "mixtral-8x22b"])
def test_estimates_are_integer_and_json(name):
    est = estimate_inference(name, batch=2, context_len=4096, tp=2 if name != "phi-4" else 1)
    assert est.peak_bytes == sum(est.breakdown.values()) and all(type(v) is int for v in est.breakdown.values())
    json.dumps(est.to_dict())
    assert est.explain()
    assert get_gpu("b200")  # the new cards resolve
