"""Serving memory: KV cache, quantized weight layouts, tensor parallelism, capacity search.

Every expected value is written out here from its source: a model config (Meta's
config.json figures), a packed layout (the libraries' buffer shapes), or a hand
derivation as arithmetic. Nothing is copied from memlib's own output.
"""

import json

import pytest

import memlib
from memlib import Model, estimate_inference, get_gpu, get_model, max_batch, max_context
from memlib.hardware.fit import fits, usable_bytes
from memlib.serving.inference import KV_FORMATS, WEIGHT_FORMATS, kv_bytes_per_token, quantized_linear_bytes

# meta-llama/Meta-Llama-3-8B config.json (Meta): 32 layers, 32 heads, 8 KV heads, hidden 4096.
LLAMA3_8B_CONFIG = {
    "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
    "max_position_embeddings": 8192, "hidden_act": "silu", "tie_word_embeddings": False,
}


# --- KV cache ----------------------------------------------------------------------------------
@pytest.mark.parametrize("model", [Model.from_hf_config(LLAMA3_8B_CONFIG), get_model("llama-3-8b")])
def test_kv_per_token_llama3_8b_bf16(model):
    # 2 (K, V) x 32 layers x 8 KV heads x head_dim 128 (4096 / 32) x 2 bytes
    expected = 2 * 32 * 8 * 128 * 2
    assert expected == 131_072
    est = estimate_inference(model, batch=1, context_len=8192)
    assert est.kv_bytes_per_token == expected
    assert est.breakdown["kv_cache"] == expected * 8192


def test_kv_gqa_70b_vs_mha_7b():
    # Llama-2-70B (Touvron et al. 2023, Table 1 / config.json): 80 layers, 64 heads of 128, 8 KV heads
    gqa = 2 * 80 * 8 * 128 * 2  # = 327,680
    # Llama-2-7B: 32 layers, 32 heads of 128, every head cached (MHA)
    mha = 2 * 32 * 32 * 128 * 2  # = 524,288
    assert (gqa, mha) == (327_680, 524_288)
    assert estimate_inference("llama-2-70b").kv_bytes_per_token == gqa
    assert estimate_inference("llama-2-7b").kv_bytes_per_token == mha
    # the 10x larger model caches less per token: 8 KV heads instead of 32, 80 layers instead of 32
    assert gqa / mha == (80 * 8) / (32 * 32)


def test_kv_cache_scales_with_batch_and_context():
    per_token = 2 * 32 * 8 * 128 * 2  # llama-3-8b, bf16
    est = estimate_inference("llama-3-8b", batch=3, context_len=1000)
    assert est.breakdown["kv_cache"] == per_token * 3 * 1000


def test_kv_formats():
    m = get_model("llama-3-8b")
    # fp8: one byte per element (vLLM's per-tensor scales are not per token)
    assert kv_bytes_per_token(m, "fp8") == 2 * 32 * 8 * 128 * 1
    assert kv_bytes_per_token(m, "fp16") == 2 * 32 * 8 * 128 * 2
    # int8 (LMDeploy quant_policy=8): uint8 values + a 16-bit scale and zero point per (token, head) of K and V
    assert kv_bytes_per_token(m, "int8") == 2 * 32 * 8 * (128 * 1 + 2 + 2)


def test_kv_split_by_tp():
    # llama-2-70b over 8 GPUs: one KV head each
    assert estimate_inference("llama-2-70b", tp=8).kv_bytes_per_token == 2 * 80 * 1 * 128 * 2
    assert estimate_inference("llama-2-70b", tp=2).kv_bytes_per_token == 2 * 80 * 4 * 128 * 2


# --- quantized layouts of one 4096 x 4096 linear ------------------------------------------------
def test_int4_gptq_4096x4096_from_packed_layout():
    # AutoGPTQ QuantLinear buffers (bits 4, group_size 128), in = out = 4096:
    qweight = (4096 // 32 * 4) * 4096 * 4  # int32 [512, 4096]: eight 4-bit weights per word
    qzeros = (4096 // 128) * (4096 // 32 * 4) * 4  # int32 [32 groups, 512]
    scales = (4096 // 128) * 4096 * 2  # fp16 [32 groups, 4096]
    g_idx = 4096 * 4  # int32, one group index per input row
    assert (qweight, qzeros, scales, g_idx) == (8_388_608, 65_536, 262_144, 16_384)
    assert quantized_linear_bytes(4096, 4096, "int4-gptq") == qweight + qzeros + scales + g_idx == 8_732_672
    # 4 + 4/128 + 16/128 + 32/4096 bits per weight
    assert quantized_linear_bytes(4096, 4096, "int4-gptq") * 8 / 4096**2 == pytest.approx(
        4 + 4 / 128 + 16 / 128 + 32 / 4096)


def test_int4_gptq_group_size_changes_overhead():
    # group 64: 64 groups of qzeros and scales
    expected = 512 * 4096 * 4 + 64 * 512 * 4 + 64 * 4096 * 2 + 4096 * 4
    assert quantized_linear_bytes(4096, 4096, "int4-gptq", group_size=64) == expected


def test_int4_awq_4096x4096_from_packed_layout():
    # AutoAWQ WQLinear_GEMM: qweight int32 [4096, 512], qzeros int32 [32, 512], scales fp16 [32, 4096]
    expected = 4096 * 512 * 4 + 32 * 512 * 4 + 32 * 4096 * 2
    assert expected == 8_716_288
    assert quantized_linear_bytes(4096, 4096, "int4-awq") == expected


def test_int8_4096x4096_llm_int8_layout():
    # bitsandbytes Int8Params: CB int8 [out, in] + SCB fp32 [out] (row-wise absmax)
    assert quantized_linear_bytes(4096, 4096, "int8") == 4096 * 4096 + 4 * 4096 == 16_793_600


def test_nf4_4096x4096_double_quant():
    # 4-bit codes (n/2 bytes) + an 8-bit absmax per 64 weights + an fp32 constant per 256 absmax
    n = 4096 * 4096
    assert quantized_linear_bytes(4096, 4096, "nf4") == n // 2 + n // 64 + 4 * (n // 64 // 256) == 8_654_848


def test_llama2_7b_gptq_projections_counted_per_tensor():
    # per layer: q, k, v, o are 4096 -> 4096; gate, up 4096 -> 11008; down 11008 -> 4096
    sq = 512 * 4096 * 4 + 32 * 512 * 4 + 32 * 4096 * 2 + 4096 * 4  # 8,732,672
    up = 512 * 11008 * 4 + 32 * 1376 * 4 + 32 * 11008 * 2 + 4096 * 4  # 23,441,408
    # down: 11008 input rows -> ceil(11008 / 128) = 86 groups
    down = 1376 * 4096 * 4 + 86 * 512 * 4 + 86 * 4096 * 2 + 11008 * 4  # 23,469,056
    linear = 32 * (4 * sq + 2 * up + down)
    est = estimate_inference("llama-2-7b", weights="int4-gptq")
    assert est.weight_parts["linear"] == linear
    # embeddings and lm_head stay 16-bit: 32000 x 4096 x 2 bytes each; 65 RMSNorm weights of 4096
    assert est.weight_parts["embedding"] == est.weight_parts["lm_head"] == 32000 * 4096 * 2
    assert est.weight_parts["norm"] == 65 * 4096 * 2
    assert est.breakdown["weights"] == linear + 2 * 32000 * 4096 * 2 + 65 * 4096 * 2


@pytest.mark.parametrize("fmt", ["int8", "int4-gptq", "int4-awq", "nf4"])
def test_quantized_formats_keep_embeddings_head_norms_16bit(fmt):
    est = estimate_inference("llama-3-8b", weights=fmt)
    assert est.weight_parts["embedding"] == 128256 * 4096 * 2
    assert est.weight_parts["lm_head"] == 128256 * 4096 * 2
    assert est.weight_parts["norm"] == (2 * 32 + 1) * 4096 * 2


def test_7b_bf16_is_two_bytes_per_parameter():
    # Llama-2-7B counted by hand: embedding + 32 x (q, k, v, o + gate, up, down + 2 norms) + final norm + head
    params = 32000 * 4096 + 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008 + 2 * 4096) + 4096 + 32000 * 4096
    assert params == 6_738_415_616
    est = estimate_inference("llama-2-7b", weights="bf16")
    assert est.breakdown["weights"] == 2 * params
    assert estimate_inference("llama-2-7b", weights="fp32").breakdown["weights"] == 4 * params


def test_quantized_weights_order():
    w = {f: estimate_inference("llama-2-13b", weights=f).breakdown["weights"] for f in WEIGHT_FORMATS}
    assert w["fp32"] > w["bf16"] == w["fp16"] > w["int8"] > w["int4-gptq"] > w["int4-awq"]
    assert w["int8"] > w["nf4"]


# --- tensor parallelism --------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["bf16", "fp32"])
def test_tp_halves_linear_weights(fmt):
    one = estimate_inference("llama-2-70b", weights=fmt, tp=1).weight_parts
    two = estimate_inference("llama-2-70b", weights=fmt, tp=2).weight_parts
    assert two["linear"] * 2 == one["linear"]
    # vocabulary-parallel embedding and head: 32000 / 2 rows each
    assert two["embedding"] == 16000 * 8192 * (4 if fmt == "fp32" else 2)
    assert two["norm"] == one["norm"]  # norms are replicated


def test_tp_int8_column_and_row_parallel_shards():
    # Megatron: q, k, v, gate, up split by output columns (their fp32 row scales split too);
    # o and down split by input rows (every GPU keeps all out rows' scales). llama-2-7b, tp=2:
    column = 3 * (4096 * 2048 + 4 * 2048) + 2 * (4096 * 5504 + 4 * 5504)
    row = (2048 * 4096 + 4 * 4096) + (5504 * 4096 + 4 * 4096)
    est = estimate_inference("llama-2-7b", weights="int8", tp=2)
    assert est.weight_parts["linear"] == 32 * (column + row)


def test_tp_lowers_the_per_gpu_peak():
    peaks = [estimate_inference("llama-2-70b", batch=4, tp=tp).peak_bytes for tp in (1, 2, 4, 8)]
    assert peaks == sorted(peaks, reverse=True) and len(set(peaks)) == 4


# --- prefill workspace ---------------------------------------------------------------------------
def test_prefill_mlp_moment_llama2_7b_by_hand():
    # batch 1 x 4096 tokens, bf16: residual + normed input (2*T*h*2), RoPE cos and sin (2*T*128*2),
    # and inside the gated MLP act(gate), up and their product (3*T*I*2)
    T = 4096
    mlp = 2 * T * 4096 * 2 + 2 * T * 128 * 2 + 3 * T * 11008 * 2
    est = estimate_inference("llama-2-7b", batch=1, context_len=4096)
    assert est.phase == "mlp"
    assert est.breakdown["activations"] == mlp
    assert est.breakdown["dequant_workspace"] == 0


def test_logits_all_positions_vs_last():
    # the head's bf16 output for every position instead of the last: (T - b) x V x 2 bytes more
    last = estimate_inference("llama-3-8b", batch=1, context_len=8192, logits="last")
    every = estimate_inference("llama-3-8b", batch=1, context_len=8192, logits="all")
    assert every.moments["lm_head"] - last.moments["lm_head"] == (8192 - 1) * 128256 * 2
    assert every.phase == "lm_head"


def test_fp32_doubles_the_activations():
    a16 = estimate_inference("llama-2-7b", weights="bf16").breakdown["activations"]
    a32 = estimate_inference("llama-2-7b", weights="fp32").breakdown["activations"]
    assert a32 == 2 * a16


def test_4bit_dequant_workspace_is_largest_weight_in_16bit():
    # llama-2-7b: gate/up/down are 4096 x 11008, the largest projections
    est = estimate_inference("llama-2-7b", weights="nf4")
    assert est.breakdown["dequant_workspace"] == 4096 * 11008 * 2


def test_peak_is_sum_of_breakdown():
    est = estimate_inference("mistral-7b", batch=2, context_len=2048, weights="int4-awq", kv_cache="fp8")
    assert est.peak_bytes == sum(est.breakdown.values())
    assert set(est.breakdown) >= {"weights", "kv_cache", "activations"}
    assert all(isinstance(v, int) for v in est.breakdown.values())


# --- capacity search -----------------------------------------------------------------------------
GPUS_BY_SIZE = sorted(["t4", "l4", "a10", "rtx-4090", "v100-32gb", "a100-40gb", "a100-80gb", "h100-80gb", "h200"],
                      key=lambda g: usable_bytes(get_gpu(g)))


def test_max_batch_monotone_in_gpu_size():
    values = [max_batch("llama-2-7b", g, 2048).value for g in GPUS_BY_SIZE]
    assert values == sorted(values)
    assert values[0] < values[-1]


@pytest.mark.parametrize("gpu", ["a100-40gb", "h100-80gb"])
def test_max_batch_is_the_boundary(gpu):
    lim = max_batch("llama-2-7b", gpu, 4096)
    assert lim.value >= 1
    assert fits(estimate_inference("llama-2-7b", batch=lim.value, context_len=4096), gpu).fits
    assert not fits(estimate_inference("llama-2-7b", batch=lim.value + 1, context_len=4096), gpu).fits
    assert int(lim) == lim.value


def test_max_context_is_the_boundary():
    lim = max_context("llama-2-7b", "t4", batch=1)
    assert 1 <= lim.value < 4096
    assert fits(estimate_inference("llama-2-7b", batch=1, context_len=lim.value), "t4").fits
    assert not fits(estimate_inference("llama-2-7b", batch=1, context_len=lim.value + 1), "t4").fits


def test_max_context_capped_by_context_window():
    lim = max_context("llama-2-7b", "h200", batch=1)
    assert lim.value == 4096  # Llama 2's context window; memory would allow more
    assert "context window" in lim.reason


def test_nothing_fits_returns_zero_with_reason():
    # 70B in bf16 is ~138 GB of weights alone; a 16 GB T4 cannot hold it
    lim = max_batch("llama-2-70b", "t4", 4096)
    assert lim.value == 0 and "does not fit" in lim.reason and "t4" in lim.reason
    assert max_context("llama-2-70b", "t4", 1).value == 0


def test_tp_raises_max_batch():
    assert max_batch("llama-2-70b", "a100-80gb", 4096, tp=4).value > max_batch("llama-2-70b", "a100-80gb", 4096,
                                                                                tp=2).value


# --- bad input -----------------------------------------------------------------------------------
@pytest.mark.parametrize("field, accepted", [("weights", WEIGHT_FORMATS), ("kv_cache", KV_FORMATS)])
@pytest.mark.parametrize("bad", ["int3", "BF16", "", None, 8])
def test_unknown_format_lists_accepted(field, accepted, bad):
    with pytest.raises(ValueError, match=rf"unknown {field} {bad!r}") as e:
        estimate_inference("llama-2-7b", **{field: bad})
    for ok in accepted:
        assert repr(ok) in str(e.value)


@pytest.mark.parametrize("field", ["batch", "context_len", "tp"])
@pytest.mark.parametrize("value", [0, -1])
def test_non_positive_sizes(field, value):
    with pytest.raises(ValueError, match=rf"{field} must be >= 1, got {value}"):
        estimate_inference("llama-2-7b", **{field: value})


@pytest.mark.parametrize("field", ["batch", "context_len", "tp"])
@pytest.mark.parametrize("value", [2.5, "8", True, None])
def test_non_integer_sizes(field, value):
    with pytest.raises(ValueError, match=rf"{field} must be an integer"):
        estimate_inference("llama-2-7b", **{field: value})


def test_tp_not_dividing_heads():
    with pytest.raises(ValueError, match=r"tp 3 does not divide llama-2-70b's num_heads 64") as e:
        estimate_inference("llama-2-70b", tp=3)
    assert "accepted tp: 1, 2, 4, 8" in str(e.value)
    # 16 divides the 64 query heads but not the 8 KV heads
    with pytest.raises(ValueError, match=r"num_kv_heads 8"):
        estimate_inference("llama-2-70b", tp=16)


def test_gptq_shape_not_packable():
    with pytest.raises(ValueError, match=r"int4-gptq .*multiple of 32"):
        quantized_linear_bytes(4100, 4096, "int4-gptq")
    with pytest.raises(ValueError, match=r"int4-awq .*group_size 128"):
        quantized_linear_bytes(4096 + 64, 4096, "int4-awq")


def test_capacity_search_rejects_bad_input():
    with pytest.raises(ValueError, match="context_len must be >= 1"):
        max_batch("llama-2-7b", "a100-80gb", 0)
    with pytest.raises(ValueError, match=r"(?i)unknown gpu"):
        max_batch("llama-2-7b", "a100-90gb", 4096)
    with pytest.raises(ValueError, match="tp 3 does not divide"):
        max_context("llama-2-70b", "a100-80gb", 1, tp=3)


# --- output --------------------------------------------------------------------------------------
def test_to_dict_and_explain():
    est = estimate_inference("llama-2-70b", batch=2, weights="int4-gptq", tp=2)
    d = json.loads(json.dumps(est.to_dict()))
    assert d["peak_bytes"] == est.peak_bytes and d["kv_bytes_per_token"] == 2 * 80 * 4 * 128 * 2
    text = est.explain()
    assert "163,840 bytes per token" in text and "GB" in text and "GiB" in text
    assert "qweight" in text and "16-bit" in text


def test_exported():
    for name in ("estimate_inference", "InferenceEstimate", "max_batch", "max_context"):
        assert name in memlib.__all__ and hasattr(memlib, name)
    assert isinstance(estimate_inference("llama-2-7b"), memlib.InferenceEstimate)
