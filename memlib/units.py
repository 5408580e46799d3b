"""Byte units and dtype sizes.

Sizes are exact integers of bytes everywhere in memlib; these helpers only format them.
GB is the SI unit (1e9 bytes, what model cards and most write-ups mean), GiB is 2**30
(what nvidia-smi and torch report). The two differ by 7.4%, enough to flip a verdict.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from memlib._checks import show

GB = 10**9
GiB = 2**30
MB = 10**6
MiB = 2**20

# Bytes per element of each storage dtype (IEEE / bfloat16 / int formats).
DTYPE_BYTES = {
    "fp32": 4,
    "tf32": 4,
    "bf16": 2,
    "fp16": 2,
    "fp8": 1,
    "int8": 1,
    "int32": 4,
    "int64": 8,
}


def dtype_bytes(dtype: str) -> int:
    if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
        raise ValueError(f"unknown dtype {show(dtype)}; accepted: {', '.join(DTYPE_BYTES)}")
    return DTYPE_BYTES[dtype]


def _bytes(n_bytes) -> float:
    if isinstance(n_bytes, bool) or not isinstance(n_bytes, numbers.Real):
        raise ValueError(f"a byte count must be a number, got {show(n_bytes)} ({type(n_bytes).__name__})")
    return n_bytes


def gb(n_bytes: float) -> float:
    """Bytes to GB (1e9)."""
    try:
        return _bytes(n_bytes) / GB
    except OverflowError:  # an int beyond a float's range
        raise ValueError(f"{show(n_bytes)} bytes is beyond a float's range") from None


def gib(n_bytes: float) -> float:
    """Bytes to GiB (2**30)."""
    try:
        return _bytes(n_bytes) / GiB
    except OverflowError:
        raise ValueError(f"{show(n_bytes)} bytes is beyond a float's range") from None


def fmt_bytes(n_bytes: float, digits: int = 2) -> str:
    """'13.48 GB (12.55 GiB)': both units, always labelled. A byte count that is not a finite number (nan, inf,
    a string, a bool) is an error here, never 'nan GB' shown as a size."""
    if isinstance(n_bytes, bool) or not isinstance(n_bytes, numbers.Real) or (
            not math.isfinite(n_bytes) if not isinstance(n_bytes, int) else abs(n_bytes) > 10**300):
        raise ValueError(f"n_bytes (fmt_bytes) must be a finite number of bytes, got {show(n_bytes)} ({type(n_bytes).__name__})")
    if isinstance(digits, bool) or not isinstance(digits, int) or not 0 <= digits <= 12:
        raise ValueError(f"digits must be an integer from 0 to 12, got {show(digits)}")
    return f"{gb(n_bytes):,.{digits}f} GB ({gib(n_bytes):,.{digits}f} GiB)"


def fmt_count(n: float) -> str:
    """6738415616 -> '6.74B'."""
    if isinstance(n, bool) or not isinstance(n, numbers.Real):
        raise ValueError(f"fmt_count needs a number, got {show(n)} ({type(n).__name__})")
    if isinstance(n, float) and not math.isfinite(n):
        return str(n)
    if abs(n) > 1e300:  # beyond what a float divides
        return show(n)
    for div, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(n) >= div:
            return f"{n / div:.2f}{suffix}"
    return str(int(n))


# --- Floating-point number formats: what a bit layout can hold -----------------------------------
#
# A binary floating-point number is a sign bit, `e` exponent bits and `m` mantissa (fraction) bits.
# With the bias 2**(e-1) - 1, a normal number is (1 + f / 2**m) x 2**(E - bias) for a stored
# exponent E from 1 to the largest allowed; E = 0 holds zero and the subnormals.
#
# Sources:
# - fp32, fp16: IEEE 754-2019, Sec. 3.6 (binary32, binary16): the all-ones exponent is reserved for
#   infinities and NaNs, so the largest normal uses E = 2**e - 2.
# - bf16: fp32's sign and 8 exponent bits with the top 7 mantissa bits (Kalamkar et al. 2019,
#   arXiv:1905.12322, Sec. 2), IEEE's rules for the special values.
# - fp8: Micikevicius et al. 2022, *FP8 Formats for Deep Learning*, arXiv:2209.05433, Table 1, and the
#   OCP 8-bit Floating Point Specification (OFP8) rev. 1.0 (2023). E5M2 follows IEEE's rules (max
#   57344). E4M3 gives up infinities and keeps one NaN pattern (S.1111.111), so the all-ones exponent
#   holds normal numbers too: its largest is 1.110b x 2**8 = 448 instead of IEEE-style 240.


@dataclass(frozen=True)
class FloatFormat:
    """One floating-point format's bit layout; the limits follow from it."""

    name: str
    exponent_bits: int
    mantissa_bits: int
    ieee_specials: bool = True  # False: E4M3's layout, no infinities, only all-ones exponent and mantissa is NaN
    source: str = ""

    def __post_init__(self):
        for field, low in (("exponent_bits", 2), ("mantissa_bits", 1)):
            v = getattr(self, field)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise ValueError(f"{field} must be an integer >= {low}, got {show(v)}")

    @property
    def bits(self) -> int:
        """Storage width: sign + exponent + mantissa."""
        return 1 + self.exponent_bits + self.mantissa_bits

    @property
    def bytes(self) -> float:
        return self.bits / 8

    @property
    def bias(self) -> int:
        return 2 ** (self.exponent_bits - 1) - 1

    @property
    def max_value(self) -> float:
        """Largest finite number."""
        m = self.mantissa_bits
        if self.ieee_specials:   # all-ones exponent reserved: top exponent 2**e - 2, full mantissa
            top, fraction = 2 ** self.exponent_bits - 2, 2 ** m - 1
        else:                    # E4M3: all-ones exponent usable, all-ones mantissa there is NaN
            top, fraction = 2 ** self.exponent_bits - 1, 2 ** m - 2
        return (1 + fraction / 2 ** m) * 2.0 ** (top - self.bias)

    @property
    def smallest_normal(self) -> float:
        """Smallest positive normal number: 2**(1 - bias)."""
        return 2.0 ** (1 - self.bias)

    @property
    def smallest_subnormal(self) -> float:
        """Smallest positive number: 2**(1 - bias - m)."""
        return 2.0 ** (1 - self.bias - self.mantissa_bits)

    @property
    def eps(self) -> float:
        """Machine epsilon: the gap between 1 and the next number, 2**-m."""
        return 2.0 ** -self.mantissa_bits

    @property
    def decimal_digits(self) -> float:
        """Significant decimal digits the mantissa carries: log10(2**(m + 1))."""
        return (self.mantissa_bits + 1) * math.log10(2)

    @property
    def binades(self) -> float:
        """Dynamic range of the normal numbers in powers of two: log2(max / smallest normal)."""
        return math.log2(self.max_value / self.smallest_normal)


FORMATS = {
    "fp32": FloatFormat("fp32", 8, 23, source="IEEE 754-2019 binary32"),
    "fp16": FloatFormat("fp16", 5, 10, source="IEEE 754-2019 binary16"),
    "bf16": FloatFormat("bf16", 8, 7, source="bfloat16, Kalamkar et al. 2019 (arXiv:1905.12322)"),
    "fp8-e4m3": FloatFormat("fp8-e4m3", 4, 3, ieee_specials=False,
                            source="OCP OFP8 / Micikevicius et al. 2022 (arXiv:2209.05433), Table 1"),
    "fp8-e5m2": FloatFormat("fp8-e5m2", 5, 2, source="OCP OFP8 / Micikevicius et al. 2022 (arXiv:2209.05433), Table 1"),
}


def float_format(name: str) -> FloatFormat:
    """The format called `name` (fp32, fp16, bf16, fp8-e4m3, fp8-e5m2)."""
    if not isinstance(name, str) or name.lower() not in FORMATS:
        raise ValueError(f"unknown number format {show(name)}; accepted: {', '.join(FORMATS)}")
    return FORMATS[name.lower()]
