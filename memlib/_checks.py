"""Input checks shared by every public function: bad input is a ValueError that says
what was wrong and what is accepted, never a traceback from deep inside or a wrong number."""

from __future__ import annotations

import difflib
import numbers
from typing import Iterable


def positive_int(name: str, value, *, allow_zero: bool = False) -> int:
    if type(value) is int and (value > 0 or (allow_zero and value == 0)):  # the common case, fast
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and value.is_integer():
            raise ValueError(f"{name} must be an integer count, got the float {value!r}; pass {int(value)}")
        raise ValueError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    value = int(value)
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else ">= 1"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return value


def positive_float(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    return float(value)


def choice(name: str, value, options: Iterable[str]) -> str:
    options = list(options)
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"unknown {name} {value!r}; accepted: {', '.join(repr(o) for o in options)}")
    return value


def lookup(kind: str, name, table: dict, aliases: dict | None = None):
    """Catalog lookup: case-insensitive, '_' and ' ' read as '-'; unknown names suggest close ones."""
    if not isinstance(name, str):
        raise ValueError(f"{kind} name must be a string, got {name!r}")
    key = name.strip().lower().replace("_", "-").replace(" ", "-")
    aliases = aliases or {}
    key = aliases.get(key, key)
    if key in table:
        return table[key]
    close = difflib.get_close_matches(key, list(table) + list(aliases), n=4, cutoff=0.5)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise ValueError(f"unknown {kind} {name!r}.{hint} Known: {', '.join(sorted(table))}")
