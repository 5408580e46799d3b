"""Verdicts of a fact-check, computed: a claimed figure against memlib's, so a ✅/⚠️/❌ cannot
contradict the numbers beside it.

claim_verdict(claimed, computed) compares a quoted figure (a number, or a (low, high) range)
with the computed one by relative error: within `right` (10%) is ✅, within `partly` (30%) is
⚠️, beyond is ❌. A yes/no claim ("fits in 80GB") is compared as a bool: ✅ or ❌. A claim of
several parts (a figure and a conclusion) gets one mark: overall() (partly right is ⚠️) or
worst() (the worst part).
"""

from __future__ import annotations

import numbers

from memlib._checks import show

RIGHT, PARTLY, WRONG = "✅", "⚠️", "❌"
_ORDER = (RIGHT, PARTLY, WRONG)


def _number(name: str, x) -> float:
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or x != x:
        raise ValueError(f"{name} must be a number, got {show(x)}")
    return float(x)


def relative_error(claimed, computed) -> float:
    """|claimed - computed| / |computed|; for a (low, high) range, the distance from computed to the
    range (0 inside it) over |computed|."""
    computed = _number("computed", computed)
    if computed == 0:
        raise ValueError("computed is 0: a relative error has no meaning; compare the figures directly")
    if isinstance(claimed, tuple):
        if len(claimed) != 2:
            raise ValueError(f"a claimed range is (low, high), got {show(claimed)}")
        lo, hi = (_number("claimed low", claimed[0]), _number("claimed high", claimed[1]))
        if lo > hi:
            raise ValueError(f"a claimed range is (low, high) with low <= high, got {show(claimed)}")
        gap = 0.0 if lo <= computed <= hi else min(abs(lo - computed), abs(hi - computed))
        return gap / abs(computed)
    return abs(_number("claimed", claimed) - computed) / abs(computed)


def claim_verdict(claimed, computed, right: float = 0.10, partly: float = 0.30) -> str:
    """✅ within `right` relative error, ⚠️ within `partly`, ❌ beyond; bools must be equal (✅) or not (❌)."""
    if isinstance(claimed, bool) or isinstance(computed, bool):
        if not (isinstance(claimed, bool) and isinstance(computed, bool)):
            raise ValueError(f"a yes/no claim compares two bools, got {show(claimed)} and {show(computed)}")
        return RIGHT if claimed == computed else WRONG
    right, partly = _number("right", right), _number("partly", partly)
    if not 0 <= right <= partly:
        raise ValueError(f"tolerances need 0 <= right <= partly, got right={right!r}, partly={partly!r}")
    err = relative_error(claimed, computed)
    return RIGHT if err <= right else (PARTLY if err <= partly else WRONG)


def worst(*marks: str) -> str:
    """The worst of several marks (❌ over ⚠️ over ✅)."""
    if not marks or any(m not in _ORDER for m in marks):
        raise ValueError(f"worst() takes marks among {', '.join(_ORDER)}, got {show(marks)}")
    return max(marks, key=_ORDER.index)


def overall(*marks: str) -> str:
    """One mark for a claim made of several parts: ✅ if every part is right, ❌ if none is right and
    some part is wrong, ⚠️ otherwise (partly right)."""
    if not marks or any(m not in _ORDER for m in marks):
        raise ValueError(f"overall() takes marks among {', '.join(_ORDER)}, got {show(marks)}")
    if all(m == RIGHT for m in marks):
        return RIGHT
    if RIGHT not in marks and WRONG in marks:
        return WRONG
    return PARTLY
