"""memlib.serving.quantization: affine quantization, bits per weight, when quantized decode is faster.

Every expected value is derived by hand in the test (or quoted from a paper), never copied from memlib."""

from __future__ import annotations

import pytest

from memlib.hardware.gpus import get_gpu
from memlib.serving.capacity import decode_bound
from memlib.serving.inference import quantized_linear_bytes
from memlib.serving.quantization import (LLM_INT8_MATMUL_SPEEDUP, NF4_DOUBLE_QUANT_BITS, SMOOTHQUANT_LATENCY_MS,
                                         AffineParams, affine_params, bits_per_weight, decode_crossover_batch,
                                         decode_speedup, dequantize, max_rounding_error, quantize,
                                         quantized_decode_bound)


# --- affine quantization ------------------------------------------------------------------------

def test_symmetric_int8_of_three_values():
    # absmax = 1, so S = 1 / 127 and Z = 0. -1 / S = -127, 1 / S = 127; 0.5 / S = 63.5, which rounds half to
    # even (as torch.round) to 64. Dequantized, 64 / 127 = 0.50394, an error of 0.5 - 64/127 = -1/254, at most
    # S/2 = 1/254.
    p = affine_params([-1.0, 0.5, 1.0], bits=8, symmetric=True)
    assert p.scale == pytest.approx(1 / 127) and p.zero_point == 0 and (p.qmin, p.qmax) == (-127, 127)
    codes = quantize([-1.0, 0.5, 1.0], p)
    assert codes == [-127, 64, 127]
    back = dequantize(codes, p)
    assert back == pytest.approx([-1.0, 64 / 127, 1.0])
    assert max_rounding_error(p) == pytest.approx(1 / 254)
    assert abs(back[1] - 0.5) == pytest.approx(1 / 254)


def test_asymmetric_int4_uses_a_zero_point():
    # min -0.5, max 1.5: 16 levels over a range of 2.0, S = 2 / 15. Z = round(0.5 / S) = round(3.75) = 4.
    # -0.5 -> round(-3.75) + 4 = 0; 1.5 -> round(11.25) + 4 = 15; 0 -> 4, exactly 0 again.
    p = affine_params([-0.5, 0.0, 1.5], bits=4, symmetric=False)
    assert p.scale == pytest.approx(2 / 15) and p.zero_point == 4 and (p.qmin, p.qmax) == (0, 15)
    assert quantize([-0.5, 0.0, 1.5], p) == [0, 4, 15]
    assert dequantize([4], p) == [0.0]
    # every value of the range comes back within S/2 = 1/15
    xs = [-0.5 + i * 0.01 for i in range(201)]
    err = max(abs(a - b) for a, b in zip(xs, dequantize(quantize(xs, p), p)))
    assert err <= max_rounding_error(p) + 1e-12 and max_rounding_error(p) == pytest.approx(1 / 15)


def test_min_max_range_is_widened_to_hold_zero():
    # all positive [1, 2, 3] at 2 bits: the range becomes [0, 3] (Jacob et al.: 0 exactly representable),
    # S = 3 / 3 = 1, Z = 0, codes 1, 2, 3.
    p = affine_params([1.0, 2.0, 3.0], bits=2, symmetric=False)
    assert p.scale == 1.0 and p.zero_point == 0 and quantize([1.0, 2.0, 3.0], p) == [1, 2, 3]


def test_an_outlier_coarsens_every_other_value():
    # LLM.int8()'s point: one value of 60 among values of ~1 makes S = 60/127 = 0.47, so 0.2 rounds to 0.
    p = affine_params([0.2, -0.3, 60.0], bits=8)
    assert quantize([0.2, -0.3], p) == [0, -1]
    assert max_rounding_error(p) == pytest.approx(60 / 254)


def test_values_outside_the_range_are_clamped():
    p = affine_params([-1.0, 1.0], bits=8)
    assert quantize([5.0, -5.0], p) == [127, -127]


@pytest.mark.parametrize("values", [[], [0.0, 0.0], "abc", [float("nan")], [1.0, None], 3.0, [True, 1.0]])
def test_bad_values_are_refused(values):
    with pytest.raises(ValueError):
        affine_params(values)


@pytest.mark.parametrize("bits", [0, 1, -4, 2.5, 17, "8"])
def test_bad_bits_are_refused(bits):
    with pytest.raises(ValueError):
        affine_params([1.0, -1.0], bits=bits)


def test_bad_codes_and_params_are_refused():
    p = affine_params([-1.0, 1.0], bits=8)
    for codes in ([128], [1.5], "12", [True]):
        with pytest.raises(ValueError):
            dequantize(codes, p)
    with pytest.raises(ValueError):
        quantize([1.0], (0.1, 0))
    with pytest.raises(ValueError):
        max_rounding_error(0.1)
    assert isinstance(p, AffineParams)


# --- bits per weight ------------------------------------------------------------------------------

def test_bits_per_weight_by_granularity():
    # AWQ-style int4 g128: 4 + 16/128 (fp16 scale) + 4/128 (4-bit zero point) = 4 + 0.125 + 0.03125 = 4.15625
    assert bits_per_weight(4, 128, scale_bits=16, zero_bits=4) == 4.15625
    # symmetric int4 g128 (no zero point): 4.125; per-channel int8 over 8,192 inputs with an fp32 scale:
    # 8 + 32 / 8192 = 8.00390625; per-tensor over 16M weights: 8 + 16/2**24, about 8.000001
    assert bits_per_weight(4, 128) == 4.125
    assert bits_per_weight(8, 8192, scale_bits=32) == 8.00390625
    assert bits_per_weight(8, 2**24) == pytest.approx(8 + 16 / 2**24)


def test_nf4_double_quant_is_qlora_s_4_127_bits():
    # QLoRA Sec. 3: 32/64 = 0.5 bits of absmax per weight without double quantization; with it
    # 8/64 + 32/(64 x 256) = 0.125 + 0.00195 = 0.127 bits.
    assert bits_per_weight(4, 64, scale_bits=32) == 4.5
    dq = bits_per_weight(4, 64, scale_bits=8, scale_group_size=256, scale_scale_bits=32)
    assert dq == 4 + 0.125 + 32 / 16384 and round(dq - 4, 3) == 0.127
    assert dq == NF4_DOUBLE_QUANT_BITS


def test_bits_per_weight_agrees_with_the_stored_buffers():
    # AutoAWQ's WQLinear_GEMM buffers for a 4096 x 4096 layer, counted in memlib.serving.inference, come to the
    # same 4.15625 bits; LLM.int8()'s int8 weight plus an fp32 absmax per output row: 8 + 32/4096.
    n = 4096 * 4096
    assert quantized_linear_bytes(4096, 4096, "int4-awq") * 8 / n == bits_per_weight(4, 128, 16, 4)
    assert quantized_linear_bytes(4096, 4096, "int8") * 8 / n == bits_per_weight(8, 4096, scale_bits=32)


@pytest.mark.parametrize("kw", [dict(bits=0, group_size=128), dict(bits=4, group_size=0),
                                dict(bits=4, group_size=-1), dict(bits=4, group_size=128, zero_bits=-4),
                                dict(bits=4, group_size=64, scale_group_size=0), dict(bits="4", group_size=64)])
def test_bad_bits_per_weight_input_is_refused(kw):
    with pytest.raises(ValueError):
        bits_per_weight(**kw)


# --- decode speed -----------------------------------------------------------------------------

def test_crossover_batch_is_the_ridge_times_bits_over_16():
    # H100 SXM: 989.4 TFLOP/s bf16 dense over 3.35 TB/s = 295.3 FLOP/byte. bf16 weights (16 bits): 2 FLOPs per
    # weight per sequence over 2 bytes = B FLOP/byte, so B* = 295; int4 g128 (4.156 bits) reaches the ridge 3.85x
    # sooner, at 295.3 x 4.156 / 16 = 76.7; W8A8 on the int8 tensor cores (1978.9 TOPS): 590.7 x 8 / 16 = 295.4.
    assert decode_crossover_batch("h100-80gb", 16) == pytest.approx(989.4e12 / 3.35e12, rel=1e-9)
    assert decode_crossover_batch("h100-80gb", 4.15625) == pytest.approx(989.4e12 / 3.35e12 * 4.15625 / 16)
    assert decode_crossover_batch("h100-80gb", 8, "int8") == pytest.approx(1978.9e12 / 3.35e12 / 2)
    assert decode_crossover_batch("a100-80gb", 8, "int8") == pytest.approx(624e12 / 2039e9 / 2)


def test_crossover_needs_a_peak_the_gpu_has():
    with pytest.raises(ValueError, match="int8"):
        decode_crossover_batch("v100-32gb", 8, "int8")  # Volta's tensor cores have no int8
    with pytest.raises(ValueError):
        decode_crossover_batch("h100-80gb", 8, "int4")
    with pytest.raises(ValueError):
        decode_crossover_batch("h100-80gb", 0)


def test_weight_only_int4_speeds_batch_one_up_by_about_the_bytes_ratio():
    # batch 1, short context: the step reads the weights once, so the speed-up is bf16 bytes over int4 bytes,
    # just under 16 / 4.16 = 3.85 (embeddings, head and norms stay 16-bit); at a batch far past the crossover
    # both are compute-bound on the same 16-bit peak: no speed-up.
    small = decode_speedup("llama-2-7b", "h100-80gb", batch=1, context_len=128, weights="int4-awq")
    base = decode_bound("llama-2-7b", "h100-80gb", 1, 128, "bf16")
    q = decode_bound("llama-2-7b", "h100-80gb", 1, 128, "int4-awq")
    assert small == pytest.approx(base.bytes_read / q.bytes_read)
    assert 3.0 < small < 16 / 4.15625
    big = decode_speedup("llama-2-7b", "h100-80gb", batch=4096, context_len=16, weights="int4-awq")
    assert big == pytest.approx(1.0)


def test_w8a8_uses_the_int8_peak_where_compute_bound():
    # far past the crossover, weight-only int8 gives 1.0x but W8A8 runs on the int8 tensor cores: 2x on an H100
    # (1978.9 / 989.4) minus what the 16-bit attention and KV reads still cost.
    b, ctx = 8192, 16
    w8a16 = decode_speedup("llama-2-7b", "h100-80gb", b, ctx, weights="int8")
    w8a8 = decode_speedup("llama-2-7b", "h100-80gb", b, ctx, weights="int8", activations="int8")
    assert w8a16 == pytest.approx(1.0)
    assert 1.9 < w8a8 <= 1978.9 / 989.4 + 1e-9
    qb = quantized_decode_bound("llama-2-7b", "h100-80gb", b, ctx, "int8", "int8")
    assert qb.peak_flops == get_gpu("h100-80gb").int8_tops * 1e12 and qb.bound == "compute"


def test_llm_int8_quoted_figures_show_the_slowdown():
    # Dettmers et al. 2022, Table 5: LLM.int8() is slower than 16-bit below the 13B shape (model dim 5140) and
    # 1.81x faster only for the 175B shape; SmoothQuant's Table 10: 237.1 ms vs FP16's 152.6 ms (OPT-13B, 256).
    assert [d for d, row in LLM_INT8_MATMUL_SPEEDUP.items() if row[3] < 1] == [768, 1024, 1536, 2048, 2560, 4096]
    assert LLM_INT8_MATMUL_SPEEDUP[12288][3] == 1.81
    assert SMOOTHQUANT_LATENCY_MS["LLM.int8()"][0] > SMOOTHQUANT_LATENCY_MS["FP16"][0]
    assert SMOOTHQUANT_LATENCY_MS["SmoothQuant-O3"][0] < SMOOTHQUANT_LATENCY_MS["FP16"][0]


def test_numpy_inputs_are_read_as_python_numbers():
    import numpy as np
    p = affine_params(np.array([-1.0, 0.5, 1.0], dtype=np.float32), bits=np.int64(8))
    assert quantize(np.array([0.5, 1.0]), p) == [64, 127] and p.scale == pytest.approx(1 / 127)
    assert dequantize(np.array([64], dtype=np.int8), p) == pytest.approx([64 / 127])
    assert bits_per_weight(np.int32(4), np.int64(128), np.int8(16), np.int8(4)) == 4.15625
    assert decode_crossover_batch("h100-80gb", np.float32(16)) == pytest.approx(989.4e12 / 3.35e12)
