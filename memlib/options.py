"""Options declared once, as tables: name, kind, accepted values, default, its source, one help line.

Every table of memlib's entry points is an `OptionTable` of `Option`s: estimate_training's
(training/option_table.py) and estimate_inference's (serving/inference.py: SERVING_OPTIONS). From a table come the
entry point's signature and help() (document), its command-line flags (add_arguments), the docs' option table
(markdown_table, written by tools/make_option_table.py) and the check of each value (validate). The idea is
scikit-learn's sklearn/utils/_param_validation.py (one declaration per parameter, one validator per kind of
constraint); the code here is memlib's own.

Each value is checked by its kind's one validator (KINDS), the same for every table: a flag is True or False, never
the string "false"; a choice is one of its values, never a list; a count is a positive integer, never 2.0, "8" or
True; a probability is in [0, 1). A table may register kinds of its own (register_kind: training's zero_stage, LoRA
targets, ...); a kind is defined once. Options that depend on each other are checked after this, by the entry point.
"""

from __future__ import annotations

import argparse
import difflib
import inspect
import textwrap
from dataclasses import dataclass
from typing import Callable

from memlib._checks import choice, flag, positive_float, positive_int, probability, show


def version(name: str, value, minimum=()) -> str:
    """A release as a string, "MAJOR.MINOR" or longer ("4.44.2", "4.45.0.dev0"), at least `minimum[0]` when given:
    not a float (4.4 and 4.40 are the same float), not a tuple."""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a version string such as '4.44.2', got {show(value)} "
                         f"({type(value).__name__})")
    parts = value.strip().split(".")
    if len(parts) < 2 or not all(p.isascii() and p.isdecimal() for p in parts[:2]):
        raise ValueError(f"{name} {show(value)} is not a version such as '4.44' or '4.44.2'")
    if minimum and tuple(map(int, parts[:2])) < tuple(map(int, minimum[0].split(".")[:2])):
        raise ValueError(f"{name} {show(value)}: releases before {minimum[0]} are not modelled")
    return value


@dataclass(frozen=True)
class Kind:
    words: str          # what it accepts, for messages, help() and the docs ({values} filled by the option's)
    check: Callable     # check(name, value, values) -> the value, or a ValueError naming `name`
    annotation: object  # the Python type shown in the signature
    cli: dict           # argparse keywords


KINDS: dict[str, Kind] = {
    "flag": Kind("True or False", lambda n, v, _: flag(n, v), bool, {"action": argparse.BooleanOptionalAction}),
    "choice": Kind("one of {values}", lambda n, v, vals: choice(n, v, vals), str, {}),
    "count": Kind("an integer >= 1", lambda n, v, _: positive_int(n, v), int, {"type": int, "metavar": "N"}),
    "count0": Kind("an integer >= 0", lambda n, v, _: positive_int(n, v, allow_zero=True), int,
                   {"type": int, "metavar": "N"}),
    "probability": Kind("a probability in [0, 1)", lambda n, v, _: probability(n, v), float,
                        {"type": float, "metavar": "P"}),
    "positive": Kind("a finite number > 0", lambda n, v, _: positive_float(n, v), float,
                     {"type": float, "metavar": "X"}),
    # a release of the library an option describes; `values`: (the first release modelled,)
    "version": Kind("a version string such as '4.44.2', from {values}", version, str,
                    {"type": str, "metavar": "X.Y[.Z]"}),
}


def register_kind(name: str, kind: Kind) -> Kind:
    """Add a table's own kind (training's zero_stage, ...): once, under a name no other kind has."""
    if not isinstance(kind, Kind):
        raise TypeError(f"kind {name!r} must be a memlib.options.Kind, got {type(kind).__name__}")
    if name in KINDS and KINDS[name] is not kind:
        raise ValueError(f"kind {name!r} is already defined; one validator per kind")
    KINDS[name] = kind
    return kind


@dataclass(frozen=True)
class Option:
    """One option of an entry point (its signature, its CLI flag, its docs row)."""

    name: str
    kind: str           # a key of KINDS
    default: object
    help: str           # one line: what it changes
    source: str         # where the default comes from
    values: tuple = ()  # kind 'choice': the accepted values
    none: str = ""      # None accepted and meaning this ("" : None is not accepted unless it is the default)
    positional: bool = False  # may be passed by position (the entry point's first parameters)

    def check(self, value):
        """The value checked by its kind's one validator: a ValueError naming the option and what it accepts."""
        if value is None and (self.none or self.default is None):
            return None
        try:
            return KINDS[self.kind].check(self.name, value, self.values)
        except ValueError as e:
            if self.none:
                raise ValueError(f"{e} (or None: {self.none})") from None
            raise

    @property
    def accepts(self) -> str:
        words = KINDS[self.kind].words.format(values=", ".join(repr(v) for v in self.values))
        return words + (f"; None: {self.none}" if self.none else "")

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def default_words(self) -> str:
        return f"None ({self.none})" if self.default is None and self.none else repr(self.default)


def option(name, kind, default, help, source, values=(), none="", positional=False) -> Option:
    """An Option, its values as a tuple; an unknown kind is an error here, at import."""
    if kind not in KINDS:
        raise ValueError(f"option {name!r}: unknown kind {kind!r}; kinds: {', '.join(KINDS)}")
    return Option(name, kind, default, help, source, tuple(values), none, flag("positional", positional))


class OptionTable:
    """An entry point's options, in signature order, and every surface made from them. `options` is held, not
    copied: changing an entry of it changes what the methods make."""

    def __init__(self, where: str, options: dict[str, Option]):
        self.where = where      # how the docs name the table, e.g. "memlib.training.option_table.OPTIONS"
        self.options = options

    def close_names(self, names) -> str:
        """' (did you mean zero_stage?)' for misspelt option names, or ''."""
        close = [c for n in names for c in difflib.get_close_matches(str(n), self.options, n=1, cutoff=0.75)]
        return f" (did you mean {', '.join(close)}?)" if close else ""

    def defaults(self) -> dict:
        """{name: default} of every option, read from the table now (a changed entry changes it)."""
        return {name: o.default for name, o in self.options.items()}

    def complete(self, options: dict) -> dict:
        """Every option: the given ones, the table's defaults for the rest; an unknown name is an error."""
        unknown = sorted(set(options) - set(self.options), key=str)
        if unknown:
            raise ValueError(f"unknown option(s) {', '.join(map(str, unknown))}{self.close_names(unknown)}; accepted: "
                             f"{', '.join(self.options)}")
        return {**self.defaults(), **options}

    def validate(self, options: dict) -> dict:
        """Each given option checked by its kind's validator (one message per kind), returned as checked."""
        return {name: self.options[name].check(value) for name, value in self.complete(options).items()}

    def signature(self, first=(), last=(), returns=inspect.Signature.empty, keyword_only: bool = False):
        """The table as a signature: `first` parameters, the positional options (keyword-only too with
        keyword_only), the keyword-only ones, `last`."""
        P = inspect.Parameter
        keyword_only = flag("keyword_only", keyword_only)
        params = list(first)
        for o in self.options.values():
            kind = KINDS[o.kind].annotation
            named = getattr(kind, "__name__", kind)
            params.append(P(o.name, P.POSITIONAL_OR_KEYWORD if o.positional and not keyword_only else P.KEYWORD_ONLY,
                            default=o.default,
                            annotation=kind if o.default is not None else f"{named} | None"))
        return inspect.Signature(params + list(last), return_annotation=returns)

    def docstring(self, header: str, footer: str = "") -> str:
        """`header`, one line per option (what it accepts, its default and the default's source), `footer`."""
        lines = [header.rstrip(), "", f"Options ({self.where}):"]
        for o in self.options.values():
            text = f"{o.name}: {o.help}. Accepts {o.accepts}; default {o.default_words()} ({o.source})."
            lines.append(textwrap.fill(text, 116, initial_indent="    ", subsequent_indent="        "))
        return "\n".join(lines + (["", footer.rstrip()] if footer else []))

    def document(self, fn, header: str, first=(), last=(), returns=inspect.Signature.empty, footer: str = "",
                 keyword_only: bool = False) -> None:
        """Give `fn` the table's signature and help text (called again after the table changes)."""
        fn.__signature__ = self.signature(first, last, returns, flag("keyword_only", keyword_only))
        fn.__doc__ = self.docstring(header, footer)

    def bind(self, fn, args, kwargs, what: str) -> dict:
        """`fn`'s arguments by name as its (generated) signature binds them, a TypeError worded as Python's for an
        ordinary function (with the option meant when one is misspelt)."""
        sig = fn.__signature__
        try:
            return dict(sig.bind(*args, **kwargs).arguments)
        except TypeError as e:
            hint = self.close_names(k for k in kwargs if k not in sig.parameters)
            raise TypeError(f"{what}() {e}{hint}") from None

    def add_arguments(self, parser, names=None, prefix: str = "", flags: dict | None = None) -> None:
        """One command-line flag per option (`--seq-len`, `--no-double-quant`, ...; `flags` renames some: {"tp":
        "--count"}), all defaulting to None (not given): a flag given always wins over a preset, and an option left
        out gets the table's default when the entry point is called."""
        flags = flags or {}
        for o in self.options.values():
            if names is not None and o.name not in names:
                continue
            kw = dict(KINDS[o.kind].cli)
            if o.kind == "choice":
                kw["choices"] = tuple(v for v in o.values if v is not None)
            parser.add_argument(flags.get(o.name, o.flag), dest=o.name, default=None,
                                help=f"{prefix}{o.help} (default {o.default_words()})", **kw)

    def markdown_table(self, flags: dict | None = None) -> str:
        """The docs' option table: every option, what it accepts, its default and the default's source."""
        flags = flags or {}
        rows = ["| option | accepts | default | default's source | what it changes | flag |",
                "|---|---|---|---|---|---|"]
        for o in self.options.values():
            name = flags.get(o.name, o.flag)
            flag_name = f"`{name}` / `--no-{name[2:]}`" if o.kind == "flag" else f"`{name}`"
            default = f"`{o.default!r}`" + (f" ({o.none})" if o.default is None and o.none else "")
            cells = (f"`{o.name}`", o.accepts, default, o.source, o.help, flag_name)
            rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        return "\n".join(rows)
