"""fp8 and FP4 formats: ranges and bits per weight, derived by hand from the specifications.

E4M3 (OCP OFP8 rev. 1.0): bias 7, no infinities, S.1111.111 is NaN, so the largest number is
S.1111.110 = 2^(15 - 7) x (1 + 6/8) = 256 x 1.75 = 448. E5M2: bias 15, exponent 31 is inf/NaN, so
2^(30 - 15) x (1 + 3/4) = 32,768 x 1.75 = 57,344. E2M1 (OCP MX v1.0): bias 1, no special values:
2^(3 - 1) x 1.5 = 6; smallest 2^(1 - 1 - 1) = 0.5.
MXFP4: 32 elements x 4 bits + one 8-bit E8M0 scale = 136 bits / 32 = 4.25. NVFP4: 16 x 4 + one 8-bit
E4M3 scale = 72 bits / 16 = 4.5, plus 32 bits per tensor. DeepSeek-V3 block fp8: 128 x 128 x 8 + 32 bits
= 8 + 32/16,384 = 8.001953125; its activation tiles 8 + 32/128 = 8.25.
"""

import pytest

from memlib.serving.inference import quantized_linear_bytes
from memlib.serving.quantization import FLOAT_FORMATS, decode_crossover_batch, scaled_format_bits


def test_fp8_and_fp4_ranges():
    e4m3, e5m2, e2m1 = FLOAT_FORMATS["fp8-e4m3"], FLOAT_FORMATS["fp8-e5m2"], FLOAT_FORMATS["fp4-e2m1"]
    assert (e4m3.bits, e5m2.bits, e2m1.bits) == (8, 8, 4)
    assert e4m3.max_value == 448.0
    assert e5m2.max_value == 57_344.0
    assert e2m1.max_value == 6.0 and e2m1.min_subnormal == 0.5
    assert e4m3.min_subnormal == 2.0 ** -9 and e5m2.min_subnormal == 2.0 ** -16


def test_block_scaled_bits_per_weight():
    assert scaled_format_bits("mxfp4") == 136 / 32 == 4.25
    assert scaled_format_bits("nvfp4") == 72 / 16 == 4.5
    assert scaled_format_bits("nvfp4", numel=4096 * 4096) == pytest.approx(4.5 + 32 / 16_777_216)
    assert scaled_format_bits("mxfp8") == 264 / 32
    assert scaled_format_bits("fp8 block 128x128") == 8.001953125
    assert scaled_format_bits("fp8 tile 1x128") == 8.25
    assert scaled_format_bits("fp8 per-tensor", numel=8192 * 8192) == pytest.approx(8 + 32 / 67_108_864)
    assert scaled_format_bits("fp8 per-channel", in_features=8192) == 8 + 32 / 8192


def test_agrees_with_the_checkpoint_layouts():
    # the same bits as the serving estimate's byte layouts of a 4,096 x 4,096 matrix
    n = 4096 * 4096
    assert quantized_linear_bytes(4096, 4096, "mxfp4") * 8 / n == scaled_format_bits("mxfp4")
    assert quantized_linear_bytes(4096, 4096, "fp8-block") * 8 / n == scaled_format_bits("fp8 block 128x128")


def test_fp8_w8a8_ridge_on_h100():
    # 1,978.9 TFLOP/s dense fp8 / 3.35 TB/s = 590.7 FLOP/byte; 8-bit weights: 590.7 x 8 / 16 = 295.3
    assert decode_crossover_batch("h100-80gb", 8, activations="fp8") == pytest.approx(1978.9e12 / 3.35e12 / 2)


def test_bad_input():
    with pytest.raises(ValueError):
        scaled_format_bits("fp3")
    with pytest.raises(ValueError):
        scaled_format_bits("fp8 per-channel")          # needs the row length
    with pytest.raises(ValueError):
        scaled_format_bits("nvfp4", numel=0)
