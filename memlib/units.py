"""Byte units and dtype sizes.

Sizes are exact integers of bytes everywhere in memlib; these helpers only format them.
GB is the SI unit (1e9 bytes, what model cards and most write-ups mean), GiB is 2**30
(what nvidia-smi and torch report). The two differ by 7.4%, enough to flip a verdict.
"""

from __future__ import annotations

import math
import numbers

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
    """'13.48 GB (12.55 GiB)': both units, always labelled."""
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
