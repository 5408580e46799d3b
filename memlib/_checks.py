"""Input checks shared by every public function: bad input is a ValueError that says
what was wrong and what is accepted, never a traceback from deep inside or a wrong number."""

from __future__ import annotations

import difflib
import math
import numbers
import reprlib
from typing import Iterable

# No count in memlib (tokens, sequences, GPUs, layers, bytes) is anywhere near 2**53; above
# it integers stop being exact as floats and a formula's bytes overflow a float's range when
# formatted, so larger values are refused instead of giving an OverflowError much later.
MAX_INT = 2**53

_repr = reprlib.Repr()
_repr.maxstring = 60
_repr.maxother = 60
_repr.maxlong = 40
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = 6


def show(value) -> str:
    """repr() for error messages, shortened: a 400-digit number or a megabyte string stays one short line."""
    try:
        return _repr.repr(value)
    except Exception:  # an object whose repr itself fails still gets a message
        return f"<{type(value).__name__}>"


def positive_int(name: str, value, *, allow_zero: bool = False, maximum: int = MAX_INT) -> int:
    if type(value) is int and (value > 0 or (allow_zero and value == 0)) and value <= maximum:  # the common case
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and value.is_integer():
            if (value > 0 or (allow_zero and value == 0)) and value <= maximum:
                raise ValueError(f"{name} must be an integer count, got the float {value!r}; pass {int(value)}")
            if value < 0 or (value == 0 and not allow_zero):
                raise ValueError(f"{name} must be {'>= 0' if allow_zero else '>= 1'}, got {value!r}")
        raise ValueError(f"{name} must be an integer, got {show(value)} ({type(value).__name__})")
    value = int(value)  # numpy and other integral types become a Python int here
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else ">= 1"
        raise ValueError(f"{name} must be {bound}, got {show(value)}")
    if value > maximum:
        limit = "2**53" if maximum == MAX_INT else f"{maximum:,}" if maximum < 10**15 else f"{maximum:.0e}"
        raise ValueError(f"{name} must be at most {limit}, got {show(value)}")
    return value


def positive_float(name: str, value, *, maximum: float | None = None, unit: str = "") -> float:
    """A finite number > 0 (and <= maximum when given). inf and nan are refused: they turn
    into a zero or nan time or size far from the argument that caused it."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number, got {show(value)} ({type(value).__name__})")
    try:
        x = float(value)
    except OverflowError:  # an int beyond a float's range
        x = math.inf
    if not math.isfinite(x) or not x > 0:
        raise ValueError(f"{name} must be a finite number > 0{unit}, got {show(value)}")
    if maximum is not None and x > maximum:
        raise ValueError(f"{name} must be at most {maximum:g}{unit}, got {show(value)}")
    return x


def fraction(name: str, value, *, what: str = "a fraction") -> float:
    """A number in (0, 1]: not a bool (True is not 100%), not a string (pass 0.8, not "0.8")."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value <= 1:
        kind = f" (a {type(value).__name__})" if isinstance(value, (bool, str)) else ""
        raise ValueError(f"{name} is {what} in (0, 1], got {show(value)}{kind}")
    return float(value)


def flag(name: str, value) -> bool:
    """True or False, nothing else: Python reads the string "false" and the number 2 as true, so a string
    or a number here is an error that says what to pass, never a silent True."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no", "on", "off", "1", "0"):
        word = value.strip().lower() in ("true", "yes", "on", "1")
        raise ValueError(f"{name} must be True or False (a bool), got the string {show(value)}; pass {word}")
    raise ValueError(f"{name} must be True or False, got {show(value)} ({type(value).__name__})")


def choice(name: str, value, options: Iterable[str]) -> str:
    options = list(options)
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"unknown {name} {show(value)}; accepted: {', '.join(repr(o) for o in options)}")
    return value


def choices(name: str, values, options: Iterable[str]) -> tuple[str, ...]:
    """A non-empty list or tuple of choices, each one accepted. A bare string is refused: it
    would be read character by character."""
    options = list(options)
    if isinstance(values, str):
        hint = f" (one value: ({values!r},))" if values in options else ""
        raise ValueError(f"{name} must be a list or tuple of {', '.join(repr(o) for o in options)}, "
                         f"got the string {show(values)}{hint}")
    if not isinstance(values, (list, tuple)) or not values:
        raise ValueError(f"{name} must be a non-empty list or tuple of {', '.join(repr(o) for o in options)}, "
                         f"got {show(values)}")
    out = []
    for v in values:
        if not isinstance(v, str) or v not in options:
            raise ValueError(f"unknown value {show(v)} in {name}; accepted: {', '.join(repr(o) for o in options)}")
        if v not in out:
            out.append(v)
    return tuple(out)


def lookup(kind: str, name, table: dict, aliases: dict | None = None):
    """Catalog lookup: case-insensitive, '_' and ' ' read as '-'; unknown names suggest close ones."""
    if not isinstance(name, str):
        raise ValueError(f"{kind} name must be a string, got {show(name)}")
    key = name.strip().lower().replace("_", "-").replace(" ", "-")
    aliases = aliases or {}
    key = aliases.get(key, key)
    if key in table:
        return table[key]
    close = difflib.get_close_matches(key, list(table) + list(aliases), n=4, cutoff=0.5)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise ValueError(f"unknown {kind} {show(name)}.{hint} Known: {', '.join(sorted(table))}")


# --- numpy scalars at the public boundary ------------------------------------------------------------
def plain(value):
    """A numpy scalar (or 0-d array) as the Python bool/int/float of the same value; lists and tuples
    element by element; anything else unchanged. np.int32(2) * 10**10 overflows and np.int64 is not
    JSON-serialisable: from here on memlib computes with Python numbers only (issue 23)."""
    t = type(value)
    if t in (int, float, str, bool) or value is None:
        return value
    if t in (list, tuple):
        return t(plain(v) for v in value) if any(type(v).__module__ == "numpy" for v in value) else value
    if t.__module__ != "numpy" or getattr(value, "shape", None) != ():
        return value
    kind = getattr(getattr(value, "dtype", None), "kind", "")
    if kind == "b":
        return bool(value)
    if kind in "iu" and kind:
        return int(value)
    if kind == "f":
        return float(value)
    return value


def plain_args(fn):
    """Decorator for a public entry point: every numpy scalar argument becomes a Python number before the
    function (and any cache it keys) sees it; validation then runs on plain values."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*[plain(a) for a in args], **{k: plain(v) for k, v in kwargs.items()})
    return wrapper


def probability(name: str, value) -> float:
    """A probability in [0, 1) (a dropout rate): not a bool, not a string, not 1 (everything dropped)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value < 1:
        kind = f" (a {type(value).__name__})" if isinstance(value, (bool, str)) else ""
        raise ValueError(f"{name} must be a probability in [0, 1), got {show(value)}{kind}")
    return float(value)


def model_or_name(value, model_cls, get, where: str = "model"):
    """A catalog model name (looked up with `get`) or an instance of `model_cls`; anything else (an int, a config
    dict, a list) is a ValueError naming `where` and what to pass, never an AttributeError from deep inside.
    The caller passes its Model class and lookup, so this module imports nothing of memlib."""
    if isinstance(value, model_cls):
        return value
    if isinstance(value, str):
        return get(value)
    hint = " (a config.json dict: pass Model.from_hf_config(it))" if isinstance(value, dict) else ""
    raise ValueError(f"{where} must be a catalog model name or a memlib.Model, got {show(value)} "
                     f"({type(value).__name__}){hint}")


def finite_number(name: str, value, *, allow_zero: bool = True, allow_negative: bool = False) -> float:
    """A finite real number (not a bool, not a string, not None), >= 0 unless allow_negative, > 0 unless allow_zero."""
    allow_zero, allow_negative = flag("allow_zero", allow_zero), flag("allow_negative", allow_negative)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number, got {show(value)} ({type(value).__name__})")
    try:
        x = float(value)
    except OverflowError:
        x = math.inf
    if not math.isfinite(x) or (x < 0 and not allow_negative) or (x == 0 and not allow_zero):
        bound = "" if allow_negative else " >= 0" if allow_zero else " > 0"
        raise ValueError(f"{name} must be a finite number{bound}, got {show(value)}")
    return x


# No link, disk or network memlib models moves under 1 MB/s; a rate below it is a unit slip (400 meaning 400 Gb/s,
# 2 meaning 2 GB/s), refused with the value it was likely meant to be rather than turned into hours of transfer.
MIN_BYTES_PER_S = 1e6


def bandwidth(name: str, value, *, maximum: float | None = None) -> float:
    """A rate in bytes per second: a finite number > 0 and at least MIN_BYTES_PER_S (1 MB/s)."""
    x = positive_float(name, value, maximum=maximum, unit=" bytes/s")
    if x < MIN_BYTES_PER_S:
        raise ValueError(f"{name} is in bytes per second; {x:g} B/s is below 1 MB/s, not a rate memlib models. "
                         f"GB/s? pass {x:g}e9 ({x * 1e9:g}); Gb/s? pass {x / 8:g}e9")
    return x
