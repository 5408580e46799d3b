"""The kinds of exercise, as plain dataclasses (graded by memlib.learn.grading).

Every expected value, right option and worked answer is a callable that asks memlib when it
is called, never a stored figure. The literals are the setups (model, GPU, precision) and the
quotes from the seeds' circulating answers (wrong on purpose).

Kinds:
  Numeric       a derived figure with a unit and a tolerance;
  SpotError     name the wrong figure(s) of a quoted paragraph and give the right value;
  Choice        pick one option (and the reason that justifies it);
  MultiChoice   pick every option that is true (the true set computed by memlib);
  Implement     write a small function, tested against memlib on shown and held-out inputs;
  SelfAssessed  an open question: the learner writes an answer, then marks it against a rubric
                and a model answer (no keyword matching: these points count separately).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, ClassVar, Union

from memlib.learn.i18n import tr, trf

DIFFICULTIES = ("warm-up", "interview", "stretch")
# How a level is chosen (the same rule in every notebook):
#   warm-up    one memlib lookup and one multiplication or unit conversion;
#   interview  two to four steps, or a judgement a candidate is expected to make on the spot;
#   stretch    combines several estimates (or a whole plan), or writing code against memlib.
UNITS = ("bytes", "GB", "GiB", "params", "count", "x", "bytes/param", "%", "s", "FLOPs", "GPU-hours", "days",
         "USD")

Text = Union[str, Callable[[], str]]  # a text, or a callable that renders it with memlib's numbers now


def render(text: Text) -> str:
    """The text (rendered with memlib's numbers now if callable), in the grader's language (memlib.learn.i18n)."""
    return tr(text() if callable(text) else text)


_TABLE_ROW = r"^\|(.*)\|\s*$"
_NO_WORDS = r"^[\s\d.,—()%x-]*(?:(?:B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\b[\s\d.,()-]*)*$"  # figures and units only


def table_cells(table: str) -> list[str]:
    """The cells of a Markdown table (the rows under a prompt) that hold words to translate."""
    import re
    out = []
    for line in table.split("\n"):
        m = re.match(_TABLE_ROW, line.strip())
        if m and not re.fullmatch(r"[\s|:-]*", m.group(1)):
            out += [c.strip() for c in m.group(1).split("|") if c.strip() and not re.match(_NO_WORDS, c.strip())]
    return out


def render_table(table: str) -> str:
    """A Markdown table with each cell in the grader's language (a cell with memlib's numbers by its number
    template, as tr() looks texts up)."""
    import re

    def row(line: str) -> str:
        m = re.match(_TABLE_ROW, line.strip())
        if not m or re.fullmatch(r"[\s|:-]*", m.group(1)):
            return line
        cells = [c.strip() for c in m.group(1).split("|")]
        shown = [tr(c) for c in cells]
        return line if shown == cells else "| " + " | ".join(shown) + " |"

    return "\n".join(row(line) for line in table.split("\n"))


@dataclass(frozen=True)
class Slip:
    """A common mistake and what it gives: value() (numeric) or value(kwargs, expected) (implement)."""

    name: str
    value: Callable
    message: str


@dataclass(frozen=True)
class Option:
    key: str
    text: str
    why: Text = ""  # feedback when chosen (or, in a MultiChoice, when judged wrongly)
    reason: str = ""  # for the right option of a Choice: the key of the reason that justifies it
    misconception: str = ""  # for a distractor: the belief that makes candidates pick it


@dataclass(frozen=True)
class Figure:
    """One figure of a quoted paragraph, as written.

    role: "right" (correct as written), "error" (where an independent error starts: the learner
    must name every one) or "inherits" (wrong only because an earlier error flows into it).
    group: error figures with the same group are one error (naming any of them names it).
    """

    text: str
    role: str
    note: str
    group: str = ""

    def __post_init__(self):
        if self.role not in ("right", "error", "inherits"):
            raise ValueError(f"Figure {self.text!r}: role must be right, error or inherits, got {self.role!r}")


@dataclass(frozen=True, kw_only=True)
class Exercise:
    id: str
    title: str
    difficulty: str
    minutes: int
    formula: str  # what it exercises: the formula or judgement, named as memlib names it
    prompt: str
    worked: Callable[[], str]
    hints: tuple[str, ...] = ()  # graded: the concept, then the formula, then the first step
    table: Callable[[], str] | None = None  # figures to reason from, rendered by memlib under the prompt
    kind: ClassVar[str] = ""
    kind_label: ClassVar[str] = ""
    auto_graded: ClassVar[bool] = True

    def __post_init__(self):
        if self.difficulty not in DIFFICULTIES:
            raise ValueError(f"{self.id}: difficulty must be one of {DIFFICULTIES}, got {self.difficulty!r}")
        if not 2 <= len(self.hints) <= 3:
            raise ValueError(f"{self.id}: give two or three graded hints (concept, formula, first step)")

    @property
    def notebook(self) -> str:
        return self.id.split(".")[0]

    def render_prompt(self) -> str:
        return tr(self.prompt) + (f"\n\n{render_table(self.table())}" if self.table is not None else "")


@dataclass(frozen=True, kw_only=True)
class Numeric(Exercise):
    expected: Callable[[], float]
    unit: str = "bytes"  # one of UNITS; a plain number is read in this unit ("bytes" if bytes)
    tolerance: float = 0.02  # relative
    abs_tol: float = 0.0  # absolute, in the base unit (bytes, ...): for answers that may be zero
    slips: tuple[Slip, ...] = ()
    # The answer is per one of `count` things (per="one") or their total (per="total"); a value
    # `count` times off is diagnosed in the right direction.
    count: int = 1
    per: str = ""  # "one" | "total" (required when count > 1)
    count_unit: tuple[str, str] = ("GPU", "GPUs")  # singular, plural
    close_advice: str = ""  # said when an answer is close but outside the tolerance
    # other conventions the question accepts as right, each named when it matches (Slip: name, value(), message)
    accepts: tuple[Slip, ...] = ()
    # the question also asks whether it fits: a verdict stated after the figure ("119 GB, does not fit") must agree
    # with fits() (None: the question asks for the figure alone; a verdict is then read and ignored)
    fits: Callable[[], bool] | None = None
    kind: ClassVar[str] = "numeric"
    kind_label: ClassVar[str] = "numeric derivation"

    def __post_init__(self):
        super().__post_init__()
        if self.unit not in UNITS:
            raise ValueError(f"{self.id}: unit must be one of {UNITS}, got {self.unit!r}")
        if self.count > 1 and self.per not in ("one", "total"):
            raise ValueError(f"{self.id}: with count > 1 say whether the answer is per one ('one') or the 'total'")


@dataclass(frozen=True, kw_only=True)
class SpotError(Numeric):
    quote: str
    source: str
    figures: tuple[Figure, ...]
    # The seeds round to nominal sizes (7B is 3.9% above LLaMA-7B's count); finding the error is the
    # point. Still below the 7.4% between GB and GiB, so a unit slip stays detectable.
    tolerance: float = 0.04
    kind: ClassVar[str] = "spot-error"
    kind_label: ClassVar[str] = "spot the error"

    @property
    def errors(self) -> dict[str, tuple[Figure, ...]]:
        """The independent errors: group -> the figures that name it."""
        groups: dict[str, tuple[Figure, ...]] = {}
        for f in self.figures:
            if f.role == "error":
                groups[f.group or f.text] = groups.get(f.group or f.text, ()) + (f,)
        return groups

    def render_prompt(self) -> str:
        n = len(self.errors)
        count = (tr("It holds **one** error (figures computed from it inherit it): name the figure where it starts.")
                 if n == 1 else trf("It holds **{n} independent errors**: name the figure where each starts, "
                                    "e.g. `([\"99GB\", \"ZeRO-9\"], \"987.6 GB\")`.", n=n))
        return f"{tr(self.prompt)}\n\n> {self.quote}\n>\n> — {self.source}\n\n{count}"


@dataclass(frozen=True, kw_only=True)
class Choice(Exercise):
    options: tuple[Option, ...]
    right: Callable[[], str]  # the right option's key, computed (memlib decides what fits)
    reasons: tuple[Option, ...] = ()
    kind: ClassVar[str] = "choice"
    kind_label: ClassVar[str] = "choose the strategy"

    def render_prompt(self) -> str:
        text = tr(self.prompt) + "\n\n" + "\n".join(f"- **({o.key})** {tr(o.text)}" for o in self.options)
        if self.reasons:
            text += "\n\n" + tr("Because:") + "\n\n" + "\n".join(f"{r.key}. {tr(r.text)}" for r in self.reasons)
        return text


@dataclass(frozen=True, kw_only=True)
class MultiChoice(Exercise):
    options: tuple[Option, ...]
    right: Callable[[], frozenset]  # the keys of every true option, computed
    kind: ClassVar[str] = "multi-choice"
    kind_label: ClassVar[str] = "select all that apply"

    def render_prompt(self) -> str:
        return (tr(self.prompt) + "\n\n" + "\n".join(f"- **({o.key})** {tr(o.text)}" for o in self.options)
                + "\n\n" + tr("Select **every** option that applies (none, one or several), as letters separated by "
                                "commas (or `\"none\"`)."))


@dataclass(frozen=True, kw_only=True)
class Implement(Exercise):
    function_name: str
    cases: Callable[[], list[dict]]  # keyword arguments shown to the learner (real models)
    held_out: Callable[[random.Random], list[dict]]  # fresh inputs drawn at each check: no lookup table passes
    reference: Callable[[dict], float]  # memlib's value for one input
    reference_name: str
    tolerance: float = 1e-6
    slips: tuple[Slip, ...] = ()  # value(kwargs, expected) -> what a slipped implementation returns
    kind: ClassVar[str] = "implement"
    kind_label: ClassVar[str] = "implement a formula"


@dataclass(frozen=True, kw_only=True)
class SelfAssessed(Exercise):
    rubric: tuple[str, ...]  # points the learner marks as covered (True) or not (False)
    min_words: int = 25
    kind: ClassVar[str] = "self-assessed"
    kind_label: ClassVar[str] = "open question, self-assessed"
    auto_graded: ClassVar[bool] = False

    def __post_init__(self):
        super().__post_init__()
        if not 3 <= len(self.rubric) <= 8:
            raise ValueError(f"{self.id}: a rubric has 3 to 8 points")
