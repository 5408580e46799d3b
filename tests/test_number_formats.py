"""memlib.units.FloatFormat: the limits of fp32, fp16, bf16 and fp8 from their bit layouts.

Every expected value is derived by hand below from the bit layout, or quoted from the standard
or paper that defines the format.
"""

import numpy as np
import pytest

from memlib.units import FORMATS, FloatFormat, float_format


def test_fp16_limits_by_hand():
    f = float_format("fp16")
    # 5 exponent bits: bias 2**4 - 1 = 15; top usable exponent 30 (31 is inf/NaN) -> 2**15;
    # largest mantissa 1.1111111111b = 2 - 2**-10 = 1.9990234375; 1.9990234375 x 32768 = 65504.
    assert f.bias == 15
    assert f.max_value == 65504.0
    assert f.smallest_normal == 2.0 ** -14 == 6.103515625e-05
    assert f.smallest_subnormal == 2.0 ** -24
    assert f.eps == 2.0 ** -10 == 0.0009765625
    assert f.bits == 16 and f.bytes == 2


def test_bf16_limits_by_hand():
    f = float_format("bf16")
    # fp32's 8 exponent bits: bias 127, top exponent 254 - 127 = 127; mantissa 7 bits:
    # (2 - 2**-7) x 2**127 = 1.9921875 x 1.7014118e38 = 3.3895e38.
    assert f.max_value == (2 - 2.0 ** -7) * 2.0 ** 127
    assert f.max_value == pytest.approx(3.3895e38, rel=1e-4)
    assert f.smallest_normal == 2.0 ** -126 == float_format("fp32").smallest_normal  # same range as fp32
    assert f.eps == 2.0 ** -7 == 0.0078125


def test_fp32_matches_ieee_binary32():
    f, ref = float_format("fp32"), np.finfo(np.float32)
    assert f.max_value == float(ref.max)          # (2 - 2**-23) x 2**127 = 3.4028235e38
    assert f.smallest_normal == float(ref.smallest_normal)
    assert f.eps == float(ref.eps) == 2.0 ** -23
    ref16 = np.finfo(np.float16)
    assert float_format("fp16").max_value == float(ref16.max)
    assert float_format("fp16").smallest_subnormal == float(ref16.smallest_subnormal)


def test_fp8_limits_by_hand():
    e4m3, e5m2 = float_format("fp8-e4m3"), float_format("fp8-e5m2")
    # E4M3 (arXiv:2209.05433 Table 1): bias 7; no infinities, so exponent 1111b = 15 holds normals:
    # 2**(15 - 7) = 256; S.1111.111 is NaN, so the largest mantissa is 1.110b = 1.75: 1.75 x 256 = 448.
    assert e4m3.bias == 7 and e4m3.max_value == 448.0
    assert e4m3.smallest_normal == 2.0 ** -6 and e4m3.smallest_subnormal == 2.0 ** -9
    assert e4m3.eps == 0.125
    # E5M2: IEEE rules, bias 15, top exponent 30 - 15 = 15: 1.11b x 2**15 = 1.75 x 32768 = 57344.
    assert e5m2.max_value == 57344.0
    assert e5m2.smallest_normal == 2.0 ** -14 and e5m2.smallest_subnormal == 2.0 ** -16
    assert e5m2.eps == 0.25
    # With IEEE's reserved exponent E4M3 would stop at 1.111b x 2**(14 - 7) = 1.875 x 128 = 240.
    assert FloatFormat("ieee-e4m3", 4, 3).max_value == 240.0


def test_range_versus_precision():
    f = FORMATS
    # bf16 trades mantissa for fp32's range; fp16 keeps precision but stops at 65504
    assert f["bf16"].binades == pytest.approx(f["fp32"].binades, abs=0.01)  # both ~254 powers of two
    assert f["bf16"].binades > 8 * f["fp16"].binades / 2  # fp16: ~30
    assert f["fp16"].eps < f["bf16"].eps
    assert f["fp8-e5m2"].max_value > f["fp8-e4m3"].max_value and f["fp8-e4m3"].eps < f["fp8-e5m2"].eps


@pytest.mark.parametrize("bad", ["fp4", None, 8, "e4m3"])
def test_unknown_format_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="unknown number format"):
        float_format(bad)


@pytest.mark.parametrize("e,m", [(1, 3), (4, 0), (True, 3), (4, 2.5)])
def test_bad_layout_is_a_clear_error(e, m):
    with pytest.raises(ValueError, match="must be an integer"):
        FloatFormat("x", e, m)
