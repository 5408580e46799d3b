"""Grading of the exercises in solutions/ and exercises/: check(), hint(), solution(), score().

    from memlib.grading import show, check, hint, solution, score
    check("01.3", "123 GB")       # prints ✅/❌ with feedback; never raises
    hint("01.3"); solution("01.3"); score("01")

The expected value is computed by memlib when the answer is checked (memlib.exercises holds
callables, never figures). Learner text is parsed with regular expressions, never evaluated:
"123 GB", "114.6 GiB", "1.23e11", 1.23e11 (plain numbers are bytes unless the exercise asks
for GB), "65.3B" parameters. Wrong answers are compared with the values common slips give
(GB/GiB swapped, the fp32 master copy forgotten, per GPU vs total, ...) so the feedback can
name the slip without revealing the expected value.
"""

from __future__ import annotations

import difflib
import math
import numbers
import re
from dataclasses import dataclass, field

from memlib.exercises import (EXERCISES, NOTEBOOKS, Choice, Design, Exercise, Implement, Numeric, SpotError,
                              get_exercise)
from memlib.units import GB, GiB, fmt_bytes

# --- parsing ---------------------------------------------------------------------------------
DECIMAL = {"b": 1, "byte": 1, "bytes": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "pb": 10**15}
BINARY = {"kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "pib": 2**50}
COUNT_SUFFIX = {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6, "b": 1e9, "bn": 1e9, "billion": 1e9,
                "t": 1e12, "trillion": 1e12}
BYTE_UNITS = ("bytes", "GB", "GiB")  # exercise units whose values are bytes
_NUMBER = r"[-+]?(?:\d[\d,_]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_QUANTITY = re.compile(rf"^\s*(?:~|≈|about|approx\.?|约)?\s*({_NUMBER})\s*([A-Za-z/×\-]*)\s*$")
_PLACEHOLDERS = re.compile(r"^\s*(\.\.\.|…|todo|tbd|\?+|your (answer|reasoning|text)( here)?\.?|)\s*$", re.I)


class Malformed(ValueError):
    """An answer the grader cannot read; the message says what it expected."""


@dataclass(frozen=True)
class Quantity:
    value: float  # in the exercise's base unit (bytes, parameters, ...)
    number: float  # the number as written
    token: str  # the unit as written, lower case ("" when none)


def unanswered(answer) -> bool:
    """None, ..., "" and "your answer here" mean the learner has not answered yet."""
    if answer is None or answer is Ellipsis:
        return True
    if isinstance(answer, str):
        return bool(_PLACEHOLDERS.match(answer))
    if isinstance(answer, (tuple, list)):
        return len(answer) == 0 or all(unanswered(a) for a in answer)
    return False


def parse_quantity(answer, unit: str) -> Quantity:
    """Read a number (int, float or text such as "123 GB") in an exercise's `unit`; Malformed if unreadable."""
    if isinstance(answer, bool) or not isinstance(answer, (numbers.Real, str)):
        raise Malformed(f"expected a number or a string such as {example(unit)}, got {type(answer).__name__}")
    if isinstance(answer, str):
        text = answer.replace("\u00a0", " ").replace("，", ",").strip()
        if len(text) > 60:
            raise Malformed(f"give one figure, for example {example(unit)}")
        m = _QUANTITY.match(text)
        if not m:
            raise Malformed(f"could not read {answer!r} as one number with a unit; write it like {example(unit)}")
        number = float(m.group(1).replace(",", "").replace("_", ""))
        token = m.group(2).lower()
    else:
        number, token = float(answer), ""
    if not math.isfinite(number):
        raise Malformed(f"{answer!r} is not a finite number")
    return Quantity(_scale(number, token, unit), number, token)


def _scale(number: float, token: str, unit: str) -> float:
    if unit in BYTE_UNITS:
        if token in DECIMAL:
            return number * DECIMAL[token]
        if token in BINARY:
            return number * BINARY[token]
        if token == "":
            return number * {"bytes": 1, "GB": GB, "GiB": GiB}[unit]
        if token in ("g", "gi", "m", "k", "t"):
            raise Malformed(f"the unit {token!r} is ambiguous: write GB (1e9 bytes) or GiB (2**30 bytes)")
        raise Malformed(f"unknown unit {token!r}; use B, KB/MB/GB/TB (powers of 1000) or KiB/MiB/GiB/TiB (of 1024)")
    if unit == "params":
        if token in ("", "params", "parameters"):
            return number
        if token in COUNT_SUFFIX:
            return number * COUNT_SUFFIX[token]
        if token in DECIMAL or token in BINARY:
            raise Malformed(f"this asks for a number of parameters, not bytes; write it like {example(unit)}")
        raise Malformed(f"unknown suffix {token!r}; use K, M, B (billion) or T, e.g. {example(unit)}")
    allowed = {"count": ("", "gpus", "gpu"), "x": ("", "x", "×", "times"),
               "bytes/param": ("", "b", "byte", "bytes", "b/param", "bytes/param", "byte/param")}.get(unit, ("",))
    if token not in allowed:
        raise Malformed(f"unexpected unit {token!r}; write a plain number, e.g. {example(unit)}")
    return number


def example(unit: str) -> str:
    return {"bytes": '"123 GB" or "114.6 GiB"', "GB": '"123 GB" or 123 (GB)', "GiB": '"114.6 GiB" or 114.6 (GiB)',
            "params": '"5.4B" or 5.4e9', "count": "31", "x": '"12x" or 12', "bytes/param": "16"}.get(unit, "42")


def fmt_value(value: float, unit: str) -> str:
    if unit in BYTE_UNITS:
        return fmt_bytes(value)
    if unit == "params":
        return f"{value / 1e9:,.3f}B parameters ({value:,.0f})"
    if unit == "x":
        return f"{value:,.2f}x"
    if unit == "count":
        return f"{value:,.0f}"
    return f"{value:,.3g} {unit}".strip()


# --- feedback --------------------------------------------------------------------------------
@dataclass
class Feedback:
    exercise_id: str
    status: str  # "correct" | "incorrect" | "not answered" | "malformed" | "unknown exercise" | "open"
    message: str
    slips: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return self.status == "correct"

    def __str__(self) -> str:
        mark = {"correct": "✅", "incorrect": "❌", "not answered": "⏳", "malformed": "⚠️"}.get(self.status, "ℹ️")
        return f"{mark} {self.exercise_id}: {self.message}"


def _close(value: float, target: float, tol: float) -> bool:
    if target == 0:
        return abs(value) <= tol
    return abs(value - target) <= tol * abs(target) + 1e-12


def _grade_quantity(ex, q: Quantity, expected: float) -> tuple[bool, str, tuple[str, ...]]:
    """(correct, message, slips named) for one numeric value against `expected`."""
    unit, tol = ex.unit, ex.tolerance
    if _close(q.value, expected, tol):
        if ex.unit == "count" and not float(q.number).is_integer():
            return False, "give a whole number", ()
        return True, f"{fmt_value(expected, unit)}.", ()
    # Candidate readings of the same number under common slips, each with what it says.
    readings = [(q.value, "")]
    if unit in BYTE_UNITS:
        if q.token in DECIMAL and q.token not in ("b", "byte", "bytes"):
            swapped = q.value / DECIMAL[q.token] * BINARY[q.token[0] + "ib"]
            readings.append((swapped, "your number is in GiB (2**30 bytes) but labelled GB (1e9 bytes); "
                                      "the two differ by 7.4%"))
        elif q.token in BINARY:
            swapped = q.value / BINARY[q.token] * DECIMAL[q.token[0] + "b"]
            readings.append((swapped, "your number is in GB (1e9 bytes) but labelled GiB (2**30 bytes); "
                                      "the two differ by 7.4%"))
        elif q.token == "":
            if unit == "bytes":
                for scale, name in ((GB, "GB"), (GiB, "GiB"), (10**6, "MB"), (2**20, "MiB")):
                    readings.append((q.number * scale, f"a plain number is read as bytes: add the unit "
                                                       f"(\"{q.number:g} {name}\")"))
            else:
                other = GiB if unit == "GB" else GB
                readings.append((q.number * other, f"this asks for {unit}; your plain number is the figure in "
                                                   f"{'GiB' if unit == 'GB' else 'GB'}"))
    elif unit == "params" and q.token == "":
        for scale, name in ((1e9, "B"), (1e6, "M")):
            readings.append((q.number * scale, f"a plain number is a count of parameters: write \"{q.number:g}{name}\" "
                                               f"or {q.number:g}e{9 if name == 'B' else 6}"))
    for value, why in readings[1:]:
        if _close(value, expected, tol):
            return False, f"the size is right, the unit is not: {why}.", ("unit",)
    slips = list(ex.slips)
    for value, why in readings:
        for slip in slips:
            try:
                slipped = slip.value()
            except Exception:  # a slip that cannot be computed for this setup is simply not detected
                continue
            if not _close(slipped, expected, 1e-9) and _close(value, slipped, tol):
                text = slip.message + (f"; also, {why}" if why else "")
                return False, f"looks like a known slip: {text}.", (slip.name,)
        if ex.count > 1:
            for factor, what in ((ex.count, f"the total over all {ex.count} {ex.count_label}"),
                                 (1 / ex.count, f"one {ex.count_label.rstrip('s')}'s share")):
                if _close(value, expected * factor, tol):
                    text = f"you gave {what}; the question asks " + (
                        f"per {ex.count_label.rstrip('s')}" if factor > 1 else f"for all {ex.count} {ex.count_label}")
                    return False, f"looks like a known slip: {text}" + (f"; also, {why}" if why else "") + ".", \
                        ("per-unit vs total",)
    ratio = q.value / expected if expected else float("inf")
    if _close(q.value, expected, 0.10):
        return False, (f"close, but outside the {tol:.0%} tolerance: use the exact parameter count "
                       "(memlib.get_model(...).num_params) and carry the precision through."), ()
    direction = "too high" if ratio > 1 else "too low"
    far = " by more than 2x: check which states you counted and the units" if ratio > 2 or ratio < 0.5 else ""
    return False, f"not yet: {direction}{far}. Try hint({ex.id!r}).", ()


def _grade_numeric(ex: Numeric, answer) -> Feedback:
    q = parse_quantity(answer, ex.unit)
    ok, msg, slips = _grade_quantity(ex, q, float(ex.expected()))
    return Feedback(ex.id, "correct" if ok else "incorrect", ("correct: " if ok else "") + msg, slips)


def _grade_spot(ex: SpotError, answer) -> Feedback:
    if isinstance(answer, dict):
        answer = (answer.get("wrong"), answer.get("right"))
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        raise Malformed('answer with a pair: (the wrong figure as written, the right value), e.g. ("780GB", "1045 GB")')
    wrong, right = answer
    if unanswered(wrong) or unanswered(right):
        return Feedback(ex.id, "not answered", "answer both parts: the wrong figure and the right value.")
    if isinstance(wrong, bool) or not isinstance(wrong, (str, numbers.Real)):
        raise Malformed("the first part is the wrong figure as it appears in the paragraph, e.g. \"780GB\"")
    named = _number_in(wrong)
    if named is None:
        raise Malformed(f"could not find a number in {wrong!r}; quote the figure, e.g. \"780GB\"")
    matches = [f for f in ex.figures if _number_in(f.text) is not None and math.isclose(_number_in(f.text), named,
                                                                                          rel_tol=1e-3)]
    parts = []
    wrong_ok = any(f.wrong for f in matches)
    if not matches:
        parts.append(f"{wrong!r} is not one of the figures in the paragraph")
    elif not wrong_ok:
        parts.append(f"{matches[0].text!r} is not the error: {matches[0].note}")
    q = parse_quantity(right, ex.unit)
    ok, msg, slips = _grade_quantity(ex, q, float(ex.expected()))
    if wrong_ok and ok:
        return Feedback(ex.id, "correct", f"correct: {matches[0].text!r} is wrong ({next(f for f in matches if f.wrong).note}); "
                                          f"the right figure is {msg}")
    if wrong_ok:
        parts.append(f"you found the wrong figure; your corrected value: {msg}")
    else:
        parts.append(("your corrected value is right" if ok else f"your corrected value: {msg}"))
    return Feedback(ex.id, "incorrect", "; ".join(parts), slips)


def _number_in(text) -> float | None:
    if isinstance(text, numbers.Real) and not isinstance(text, bool):
        return float(text) if math.isfinite(text) else None
    m = re.search(_NUMBER, str(text)[:200])
    if not m:
        return None
    try:
        return float(m.group(0).replace(",", "").replace("_", ""))
    except ValueError:
        return None


_CHOICE = re.compile(r"^\s*[\(\[]?\s*([a-zA-Z])\s*[\)\]]?\s*(?:[,;/ ]*\s*[\(\[]?\s*(\d)\s*[\)\]]?)?\s*$")


def _grade_choice(ex: Choice, answer) -> Feedback:
    if isinstance(answer, (tuple, list)):
        if len(answer) != (2 if ex.reasons else 1) and not (len(answer) == 1 and not ex.reasons):
            raise Malformed(_choice_format(ex))
        key = str(answer[0]).strip().strip("()").lower() if answer else ""
        reason = str(answer[1]).strip().strip("()") if ex.reasons and len(answer) > 1 else ""
    elif isinstance(answer, str):
        m = _CHOICE.match(answer)
        if not m:
            raise Malformed(_choice_format(ex))
        key, reason = m.group(1).lower(), m.group(2) or ""
    else:
        raise Malformed(_choice_format(ex))
    options = {o.key: o for o in ex.options}
    if key not in options:
        raise Malformed(f"{key!r} is not an option; choose one of {', '.join(options)}")
    right = ex.right()
    if key != right:
        return Feedback(ex.id, "incorrect", f"not ({key}): {options[key].why or 'look again at what each option keeps on the GPU.'}")
    if not ex.reasons:
        return Feedback(ex.id, "correct", f"correct: ({key}). {options[key].why}")
    reasons = {r.key: r for r in ex.reasons}
    if reason == "":
        return Feedback(ex.id, "incorrect", f"({key}) is the right choice; now pick the reason too: {_choice_format(ex)}")
    if reason not in reasons:
        raise Malformed(f"{reason!r} is not a reason; choose one of {', '.join(reasons)}")
    if reason != options[right].reason:
        return Feedback(ex.id, "incorrect", f"({key}) is right, but not for reason {reason}: {reasons[reason].why}")
    return Feedback(ex.id, "correct", f"correct: ({key}) for reason {reason}. {options[key].why}")


def _choice_format(ex: Choice) -> str:
    keys = "/".join(o.key for o in ex.options)
    return (f'answer with an option letter ({keys}) and a reason number, e.g. ("{ex.options[0].key}", 1)'
            if ex.reasons else f'answer with one option letter ({keys}), e.g. "{ex.options[0].key}"')


def _grade_implement(ex: Implement, answer) -> Feedback:
    if not callable(answer):
        raise Malformed(f"pass your function itself: check({ex.id!r}, {ex.function_name})")
    cases = ex.cases()
    got = []
    for kwargs, want in cases:
        try:
            value = answer(**kwargs)
        except NotImplementedError:
            return Feedback(ex.id, "not answered", "not answered yet: your function is still a stub.")
        except Exception as e:  # the learner's own code failed: report it, do not raise
            return Feedback(ex.id, "incorrect", f"your function raised {type(e).__name__}: {e} for input {kwargs}")
        if value is None:
            if not got:
                return Feedback(ex.id, "not answered", "not answered yet: your function returns None.")
            return Feedback(ex.id, "incorrect", f"your function returned None for input {kwargs}")
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            return Feedback(ex.id, "incorrect", f"your function returned {value!r} for input {kwargs}; return a number")
        got.append((kwargs, float(value), float(want)))
    bad = [(k, v, w) for k, v, w in got if not _close(v, w, ex.tolerance)]
    if not bad:
        return Feedback(ex.id, "correct", f"correct: matches {ex.reference_name} on all {len(got)} inputs.")
    for slip in ex.slips:
        try:
            if all(_close(v, slip.value(k, w), ex.tolerance) for k, v, w in got):
                return Feedback(ex.id, "incorrect", f"looks like a known slip: {slip.message}.", (slip.name,))
        except Exception:
            continue
    k, v, w = bad[0]
    return Feedback(ex.id, "incorrect", f"{len(bad)} of {len(got)} inputs differ; first: {kwargs_str(k)} gave {v:,.0f}, "
                                        f"{ex.reference_name} gives {w:,.0f}.")


def kwargs_str(kwargs: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in kwargs.items())


def _grade_design(ex: Design, answer) -> Feedback:
    if not isinstance(answer, str):
        raise Malformed("write your answer as text in a string (a few sentences)")
    text = answer.strip()
    if len(text.split()) < 8 and len(text) < 40:
        return Feedback(ex.id, "incorrect", "too short to judge: write a few sentences, then compare with "
                                            f"solution({ex.id!r}).")
    hit = [p.label for p in ex.key_points if re.search(p.pattern, text, flags=re.I)]
    miss = [p.label for p in ex.key_points if p.label not in hit]
    cover = f"you cover {len(hit)} of {len(ex.key_points)} key points" + (f" ({'; '.join(hit)})" if hit else "")
    missing = f"; not yet mentioned: {'; '.join(miss)}" if miss else ""
    ok = len(hit) >= ex.need
    tail = f" Compare with the model answer: solution({ex.id!r})."
    return Feedback(ex.id, "correct" if ok else "incorrect",
                    ("good: " if ok else f"needs at least {ex.need}: ") + cover + missing + "." + tail)


_GRADERS = {Numeric: _grade_numeric, SpotError: _grade_spot, Choice: _grade_choice, Implement: _grade_implement,
            Design: _grade_design}


def grade(exercise_id, answer) -> Feedback:
    """The feedback for one answer, without printing. Never raises."""
    try:
        ex = get_exercise(exercise_id)
    except KeyError as e:
        return Feedback(str(exercise_id), "unknown exercise", str(e.args[0]))
    if unanswered(answer):
        return Feedback(ex.id, "not answered", "not answered yet: replace the placeholder with your answer. "
                                               f"Stuck? hint({ex.id!r})")
    try:
        return _GRADERS[type(ex)](ex, answer)
    except Malformed as e:
        return Feedback(ex.id, "malformed", f"could not read the answer: {e}")
    except RecursionError:
        return Feedback(ex.id, "malformed", "could not read the answer: it is nested too deeply")
    except Exception as e:  # a grader bug must not break the learner's notebook
        return Feedback(ex.id, "error", f"the grader failed ({type(e).__name__}: {e}); please report it")


# --- the learner's functions -------------------------------------------------------------------
_RESULTS: dict[str, Feedback] = {}
_HINTS_SHOWN: dict[str, int] = {}


def _emit(markdown: str) -> None:
    """Rendered Markdown in a notebook, plain text elsewhere."""
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display
        if get_ipython() is not None and "IPKernelApp" in get_ipython().config:
            display(Markdown(markdown))
            return
    except ImportError:
        pass
    print(markdown)


def show(exercise_id: str) -> None:
    """Display an exercise: title, difficulty, time and the question."""
    try:
        ex = get_exercise(exercise_id)
    except KeyError as e:
        print(e.args[0])
        return
    _emit(f"**{ex.id} · {ex.title}** — *{ex.difficulty} · about {ex.minutes} min · {ex.kind_label}*\n\n"
          + ex.render_prompt())


def check(exercise_id: str, answer) -> None:
    """Print whether `answer` is right, with feedback. Never raises; records the result for score()."""
    fb = grade(exercise_id, answer)
    if fb.status in ("correct", "incorrect") or fb.exercise_id not in _RESULTS:
        if fb.exercise_id in EXERCISES:
            _RESULTS[fb.exercise_id] = fb
    print(fb)


def hint(exercise_id: str) -> None:
    """Print the next hint (each call shows one more)."""
    try:
        ex = get_exercise(exercise_id)
    except KeyError as e:
        print(e.args[0])
        return
    if not ex.hints:
        print(f"💡 {ex.id}: no hints for this one; solution({ex.id!r}) shows the worked answer.")
        return
    n = _HINTS_SHOWN.get(ex.id, 0) % len(ex.hints)
    _HINTS_SHOWN[ex.id] = n + 1
    print(f"💡 {ex.id} hint {n + 1} of {len(ex.hints)}: {ex.hints[n]}")


def solution(exercise_id: str) -> None:
    """Show the worked answer, with every figure computed by memlib now."""
    try:
        ex = get_exercise(exercise_id)
    except KeyError as e:
        print(e.args[0])
        return
    _emit(f"**Worked answer {ex.id}.** " + ex.worked())


@dataclass
class Score:
    notebook: str
    rows: list[tuple[Exercise, str]] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(1 for _, s in self.rows if s == "correct")

    @property
    def total(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:  # a notebook shows the table once when score() ends a cell
        return str(self)

    def __str__(self) -> str:
        marks = {"correct": "✅ passed", "incorrect": "❌ not yet", "": "·  not checked"}
        lines = [f"Notebook {self.notebook} ({NOTEBOOKS.get(self.notebook, '?')}): {self.passed} of {self.total} passed, "
                 f"{sum(ex.minutes for ex, s in self.rows if s == 'correct')} of {sum(ex.minutes for ex, _ in self.rows)} "
                 "minutes of work done"]
        for ex, s in self.rows:
            lines.append(f"  {ex.id:<6} {marks.get(s, '·  not checked'):<16} {ex.difficulty:<9} {ex.kind:<12} {ex.title}")
        return "\n".join(lines)


def score(notebook: str) -> Score:
    """Per-notebook summary of this session's checks ("01" or "01_65b_on_4x_v100"); a notebook shows it."""
    key = str(notebook)[:2]
    if key not in NOTEBOOKS:
        close = difflib.get_close_matches(str(notebook), list(NOTEBOOKS) + list(NOTEBOOKS.values()), n=2)
        print(f"unknown notebook {notebook!r}; known: {', '.join(NOTEBOOKS)}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        return Score(str(notebook))
    return Score(key, [(ex, _RESULTS[ex.id].status if ex.id in _RESULTS else "")
                       for ex in EXERCISES.values() if ex.notebook == key])


def reset() -> None:
    """Forget this session's results and hints (used by the tests)."""
    _RESULTS.clear()
    _HINTS_SHOWN.clear()
