"""Grading of the exercises in solutions/ and exercises/: check(), hint(), solution(), mark(), score().

    from memlib.learn.grading import show, check, hint, solution, mark, score
    check("01.3", "261 GB")       # prints ✅/❌ with feedback; never raises
    hint("01.3")                  # the concept, then the formula, then the first step
    solution("01.3")              # the worked answer, every figure computed by memlib now
    check("03.9", my_text); mark("03.9", [True, False, ...])   # open questions: self-assessed
    score("01"); score()          # one notebook, or all of them

The expected value is computed by memlib when the answer is checked (memlib.learn.exercises holds
callables, never figures). Learner text is parsed (memlib.learn.exercises.answers), never evaluated.
A wrong answer's feedback names a recognised slip (GB/GiB swapped, the fp32 master copy
forgotten, per GPU vs total, ...), or says the direction and roughly how far, and never
shows the expected value. Open questions are not graded by keywords: check() shows a rubric
and a model answer, the learner marks each point with mark(), and those points count
separately from the auto-graded ones. Progress is kept in `.memlib_progress.json` in the
working directory (memlib.learn.exercises.progress): it survives a kernel restart, and the best
attempt counts.
"""

from __future__ import annotations

import difflib
import math
import numbers
import random
import re
import unicodedata
from dataclasses import dataclass, field

from memlib.learn.exercises import (EXERCISES, NOTEBOOKS, Choice, Exercise, Implement, MultiChoice, Numeric, SelfAssessed,
                              SpotError, get_exercise, notebook_key, render)
from memlib.learn.exercises import progress
from memlib.learn.exercises.progress import export_progress, import_progress
from memlib.learn.exercises.answers import (BINARY, BYTE_UNITS, DECIMAL, Malformed, Quantity, example, number_in,
                                      parse_choice, parse_marks, parse_quantity, parse_selection, plain, stated_fit,
                                      unanswered)
from memlib.learn.i18n import get_language, language, set_language, tr, trf
from memlib.units import GB, GiB, fmt_bytes

# words that say a named figure is right, or not the one meant ("28GB is fine", "not 40%", "不是 ZeRO-2")
NEGATION = re.compile(r"\b(?:not|isn'?t|is\s+fine|fine|ok|okay|is\s+right|correct|no\s+error)\b|不是|没错|正确|没问题")


def _normalise_text(text: str) -> str:
    return unicodedata.normalize("NFKC", text[:200]).lower()

__all__ = ["show", "check", "hint", "solution", "mark", "score", "grade", "reset", "Feedback", "Malformed",
           "export_progress", "import_progress", "practice", "Practice",
           "parse_quantity", "example", "unanswered", "set_language", "get_language"]

UNIT_SLIP_TOLERANCE = 0.005  # a GB/GiB mix-up is named only when the other reading matches this closely
CLOSE = 0.10  # "close" means within 10% of the expected value


# --- feedback --------------------------------------------------------------------------------
@dataclass
class Feedback:
    exercise_id: str
    # "correct" | "incorrect" | "not answered" | "malformed" | "unknown exercise" | "submitted" | "error"
    status: str
    message: str
    slips: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return self.status == "correct"

    def __str__(self) -> str:
        mark = {"correct": "✅", "incorrect": "❌", "not answered": "⏳", "malformed": "⚠️", "submitted": "📝"}.get(
            self.status, "ℹ️")
        return f"{mark} {self.exercise_id}: {self.message}"


def fmt_value(value: float, unit: str) -> str:
    if unit == "bytes" and abs(value) < 1e6:  # a per-token or per-element size: "70,272 bytes", not "0.00 GB"
        return f"{value:,.0f} bytes"
    if unit in BYTE_UNITS:
        return fmt_bytes(value)
    if unit == "params":
        return f"{value / 1e9:,.3f}B parameters ({value:,.0f})"
    if unit == "s" and 0 < value < 1:  # a decode step: "23.7 ms", not "0.0 s"
        return f"{value * 1e3:,.1f} ms"
    return {"x": f"{value:,.2f}x", "count": f"{value:,.0f}", "%": f"{value:.1f}%", "s": f"{value:,.1f} s",
            "FLOPs": f"{value:.3g} FLOPs", "GPU-hours": f"{value:,.0f} GPU-hours", "days": f"{value:,.1f} days",
            "USD": f"${value:,.2f}"}.get(
        unit, f"{value:,.3g} {unit}".strip())


def _close(value: float, target: float, tol: float, abs_tol: float = 0.0) -> bool:
    return abs(value - target) <= tol * abs(target) + abs_tol + 1e-12


def _direction(value: float, expected: float) -> str:
    if expected == 0 or value == 0:
        return tr("too high") if value > expected else tr("too low")
    ratio = value / expected
    word = tr("too high") if ratio > 1 else tr("too low")
    if ratio == 0 or ratio == float("inf"):  # so far off that the ratio under- or overflows (5e-324 GB)
        return trf("{word} by more than 10x: check the units and what you counted", word=word)
    far = max(ratio, 1 / ratio)
    if far > 10:
        return trf("{word} by more than 10x: check the units and what you counted", word=word)
    if far > 2:
        return trf("{word} by more than 2x: check which terms you counted", word=word)
    return word


def _unit_readings(ex: Numeric, q: Quantity) -> list[tuple[float, str]]:
    """The same number under a unit mix-up, each with what it says (never the expected value)."""
    out = []
    if ex.unit in BYTE_UNITS:
        if q.token in DECIMAL and q.token != "b":
            out.append((q.value / DECIMAL[q.token] * BINARY[q.token[0] + "ib"],
                        f"your number is in {q.token[0].upper()}iB (powers of 1024) but labelled "
                        f"{q.token.upper()} (powers of 1000); the two differ by 7-10%"))
        elif q.token in BINARY:
            out.append((q.value / BINARY[q.token] * DECIMAL[q.token[0] + "b"],
                        f"your number is in {q.token[0].upper()}B (powers of 1000) but labelled "
                        f"{q.token[0].upper()}iB (powers of 1024); the two differ by 7-10%"))
        elif q.plain and ex.unit == "bytes":
            for scale, name in ((GB, "GB"), (GiB, "GiB"), (10**6, "MB"), (2**20, "MiB")):
                out.append((q.number * scale, f'a plain number is read as bytes: add the unit ("{q.number:g} {name}")'))
        elif q.plain:
            other = "GiB" if ex.unit == "GB" else "GB"
            out.append((q.number * (GiB if ex.unit == "GB" else GB),
                        f"a plain number here is read as {ex.unit}; yours looks like the figure in {other}: add the "
                        f"unit (\"{q.number:g} {other}\")"))
    elif ex.unit == "params" and q.plain:
        for scale, name in ((1e9, "B"), (1e6, "M")):
            out.append((q.number * scale, f"a plain number is a count of parameters: write \"{q.number:g}{name}\""))
    return out


def _round_sig(x: float, sig: int) -> float:
    if x == 0 or not math.isfinite(x):
        return x
    return round(x, sig - 1 - math.floor(math.log10(abs(x))))


def _slip_values(ex: Numeric, expected: float) -> list[tuple[object, float]]:
    """Each named slip with the value it gives for this setup (slips that cannot be computed are skipped)."""
    out = []
    for slip in ex.slips:
        try:
            value = float(slip.value())
        except Exception:
            continue
        if not _close(value, expected, ex.tolerance, ex.abs_tol):
            out.append((slip, value))
    return out


def _rounding(ex: Numeric, q: Quantity, expected: float) -> tuple[bool, str, tuple[str, ...]] | None:
    """The human-rounding rule: right when the expected value, rounded to the learner's precision (at
    least 2 significant figures), is the learner's figure, unless that figure also matches a named slip.
    None when the rule does not apply (a count is exact; a percentage read as a factor)."""
    if ex.unit == "count" or q.sig < 2 or q.number == 0 or q.value == 0 or (ex.unit == "x" and q.token == "%"):
        return None
    scale = q.value / q.number  # the learner's unit, in the exercise's base unit
    if not math.isclose(_round_sig(expected / scale, q.sig), q.number, rel_tol=1e-9):
        return None
    if any(math.isclose(_round_sig(v / scale, q.sig), q.number, rel_tol=1e-9) for _, v in _slip_values(ex, expected)):
        return False, (f"rounded to {q.sig} significant figures your figure could also be a common slip: give one "
                       "more significant figure"), ()
    return True, f"{fmt_value(expected, ex.unit)} (rounded as you wrote it).", ()


def _unit_premise(ex: Numeric, q: Quantity) -> str:
    """What is wrong when the question fixes the unit (\"in GB (10⁹ bytes)\") and the answer uses the other one."""
    if ex.unit == "GB" and "GB (10⁹ bytes)" in ex.prompt and q.token in BINARY:
        return (f"the question fixes the unit: GB (10⁹ bytes), and you answered in {q.token[:-2].upper()}iB (powers of "
                "1024). GB and GiB differ by 7%: give the figure in GB")
    if ex.unit == "GiB" and "GiB (2³⁰ bytes)" in ex.prompt and q.token in DECIMAL and q.token != "b":
        return (f"the question fixes the unit: GiB (2³⁰ bytes), and you answered in {q.token.upper()} (powers of "
                "1000). GB and GiB differ by 7%: give the figure in GiB")
    return ""


def _closer_slip(ex: Numeric, value: float, expected: float, unit_reading: float) -> bool:
    """Does a named slip match `value` (as written) more closely than the unit-mix-up reading matches `expected`?"""
    miss = abs(unit_reading - expected) / abs(expected) if expected else math.inf
    for slip in ex.slips:
        try:
            slipped = float(slip.value())
        except Exception:
            continue
        if slipped and not _close(slipped, expected, ex.tolerance, ex.abs_tol) and abs(value - slipped) / abs(slipped) < miss:
            return True
    return False


def _judge(ex: Numeric, q: Quantity, expected: float) -> tuple[bool, str, tuple[str, ...]]:
    """(correct, message, slips named) for one numeric value against `expected`."""
    tol, abs_tol = ex.tolerance, ex.abs_tol
    ok = lambda v: _close(v, expected, tol, abs_tol)  # noqa: E731
    premise = _unit_premise(ex, q)
    if premise:
        return False, premise + ".", ("unit",)
    if ex.unit == "x" and q.token == "%":  # "98%" to "by what factor does it shrink": a 98% reduction
        # right when it is the reduction rounded as written ("98%" for 98.2%): a percentage this close to
        # 100 hides large differences in the factor, so the relative tolerance does not apply
        if expected > 1 and q.number < 100 and abs(q.number - (100 - 100 / expected)) <= 0.5 * 10**-q.decimals:
            return True, f"{fmt_value(expected, ex.unit)} (a {100 - 100 / expected:.1f}% reduction).", ()
        q = Quantity(100 / (100 - q.number) if q.number < 100 else math.inf, q.number, "x")
        if not math.isfinite(q.value):
            return False, "a 100% reduction would leave nothing; give the factor, e.g. \"98.7x\"", ()
    if ok(q.value):
        if ex.unit == "count" and not float(q.number).is_integer():
            return False, "give a whole number", ()
        return True, f"{fmt_value(expected, ex.unit)}.", ()
    rounded = _rounding(ex, q, expected)
    if rounded is not None:
        return rounded
    for alt in ex.accepts:  # another convention the question names as acceptable
        try:
            other = float(alt.value())
        except Exception:
            continue
        if _close(q.value, other, tol, abs_tol):
            return True, f"{fmt_value(other, ex.unit)} under {alt.message}; {fmt_value(expected, ex.unit)} under the " \
                         "question's main convention.", ()
    # the same answer under a reading the question allows
    if ex.unit in ("GB", "GiB") and q.plain and q.number >= 1e5 and ok(q.number):
        return True, f"{fmt_value(expected, ex.unit)} (your plain number was read as bytes; write the unit next " \
                     "time).", ()
    if ex.unit == "%" and q.plain and q.number <= 1 and ok(q.number * 100):
        return True, f"{fmt_value(expected, ex.unit)} (your fraction was read as a percentage).", ()
    unit_readings = _unit_readings(ex, q)
    for value, why in unit_readings:
        # a named slip that the number as written matches more closely is the likelier story (01.11: q and o at the
        # hidden width give 58.38 GB, 0.4% from the right 58.12 GiB read as GB)
        if _close(value, expected, min(tol, UNIT_SLIP_TOLERANCE), abs_tol) and not _closer_slip(ex, q.value, expected,
                                                                                                  value):
            return False, trf("the size is right, the unit is not: {why}.", why=tr(why)), ("unit",)
    # known slips: on the number as read, then combined with a unit mix-up
    candidates = [(q.value, "", tol)] + [(v, why, min(tol, UNIT_SLIP_TOLERANCE)) for v, why in unit_readings]
    for value, why, t in candidates:
        for slip in ex.slips:
            try:
                slipped = float(slip.value())
            except Exception:  # a slip that cannot be computed for this setup is simply not detected
                continue
            if not _close(slipped, expected, tol, abs_tol) and _close(value, slipped, t, abs_tol):
                text = tr(slip.message) + (trf("; also, {why}", why=tr(why)) if why else "")
                return False, trf("looks like a known slip: {text}.", text=text), (slip.name,)
    if ex.count > 1:
        one, many = ex.count_unit
        n = ex.count
        if ex.per == "one":
            cases = ((n, f"you gave the total over all {n} {many}; the question asks per {one}"),
                     (1 / n, f"you divided by the {n} {many} once too often; the question asks per {one}"))
        else:
            cases = ((1 / n, f"you gave one {one}'s share; the question asks for the total over all {n} {many}"),
                     (n, f"you multiplied by the {n} {many} once too often; the question asks for the total"))
        for factor, text in cases:
            if _close(q.value, expected * factor, tol):
                return False, trf("looks like a known slip: {text}.", text=tr(text)), ("per-unit vs total",)
    if _close(q.value, expected, CLOSE, abs_tol):
        advice = tr(ex.close_advice or "carry more digits through the calculation and round only at the end")
        band = f"±{ex.tolerance * 100:g}%" if ex.tolerance else tr("the exact whole number")
        what = tr("close, but not it") if ex.unit == "count" else trf("close, but outside the {band} tolerance",
                                                                       band=band)
        return False, trf("{what}: {direction}. Check: {advice}.", what=what,
                          direction=_direction(q.value, expected), advice=advice), ()
    return False, trf("not yet: {direction}. Try hint({id}).", direction=_direction(q.value, expected),
                      id=repr(ex.id)), ()


def _grade_numeric(ex: Numeric, answer) -> Feedback:
    q = parse_quantity(answer, ex.unit)
    ok, msg, slips = _judge(ex, q, float(ex.expected()))
    said = stated_fit(answer) if ex.fits is not None else None
    if ok and said is not None and said != ex.fits():  # a right figure with the wrong conclusion
        ok, msg, slips = False, tr("the figure is right, the verdict is not: compare it with what the card holds "
                                   "once the CUDA context and allocator headroom are counted (memlib.fits)"), ("verdict",)
    return Feedback(ex.id, "correct" if ok else "incorrect", (tr("correct: ") if ok else "") + msg, slips)


def _squeeze(text) -> str:
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", str(text)).lower())


def _figure_named(ex: SpotError, item):
    """The paragraph's figure a quote names, or None. A quote copied with its neighbours ("Llama-2-13B", "= 780GB")
    names the figure whose text it contains; one holding several different figures is refused (say which one);
    otherwise the first number of the quote that is one of the figures' values."""
    text = _squeeze(item)
    if isinstance(item, str):
        hits = {f.text: f for f in ex.figures
                if re.search(r"(?<![\d.])" + re.escape(_squeeze(f.text)) + r"(?![\d])", text)}
        # a figure inside a longer one ("14GB" in "14GB/8=1.75GB" is two; "8" inside "14GB/8" is not the 8 GPUs)
        if len({(f.role, f.group or f.text) for f in hits.values()}) > 1:
            raise Malformed(f"{str(item)[:40]!r} holds several figures of the paragraph ({', '.join(hits)}): quote the "
                            "wrong one alone, e.g. \"99GB\"")
        if hits:
            return next(iter(hits.values()))
    values = [number_in(item)] if not isinstance(item, str) else [
        float(m.replace(",", "").replace("_", "")) for m in re.findall(r"\d[\d,_]*(?:\.\d+)?", text)]
    if not values or values[0] is None:
        raise Malformed(f"could not find a number in {str(item)[:40]!r}; quote the figure, e.g. \"99GB\"")
    for value in values:
        match = next((f for f in ex.figures if math.isclose(number_in(f.text), value, rel_tol=1e-3)), None)
        if match is not None:
            return match
    return None


def _grade_spot(ex: SpotError, answer) -> Feedback:
    if isinstance(answer, dict):
        answer = (answer.get("wrong"), answer.get("right"))
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        raise Malformed('answer with a pair: (the wrong figure as written, the right value), e.g. ("99GB", "987.6 GB"); '
                        'with several errors, a list of figures first: (["ZeRO-9", "99GB"], "987.6 GB")')
    named_raw, right = answer
    if unanswered(named_raw) or unanswered(right):
        return Feedback(ex.id, "not answered", "answer both parts: the wrong figure(s) and the right value.")
    named_list = list(named_raw) if isinstance(named_raw, (tuple, list, set, frozenset)) else [named_raw]
    if not named_list or len(named_list) > 10:
        raise Malformed("name the wrong figure(s) as they appear in the paragraph, e.g. \"99GB\"")
    errors = ex.errors
    hit_groups, wrong_picks, inherited, unknown = set(), [], [], []
    for item in named_list:
        if isinstance(item, bool) or not isinstance(item, (str, numbers.Real)):
            raise Malformed("each wrong figure is text or a number as it appears in the paragraph, e.g. \"99GB\"")
        if isinstance(item, str) and NEGATION.search(_normalise_text(item)):
            raise Malformed(f"{item[:40]!r} reads as a figure you think is right: list only the figures you think "
                            "are wrong, as they appear in the paragraph")
        match = _figure_named(ex, item)
        if match is None:
            unknown.append(str(item)[:40])
        elif match.role == "error":
            hit_groups.add(match.group or match.text)
        elif match.role == "inherits":
            inherited.append(match)
        else:
            wrong_picks.append(match)
    q = parse_quantity(right, ex.unit)
    value_ok, msg, slips = _judge(ex, q, float(ex.expected()))
    found_all = hit_groups == set(errors) and not wrong_picks and not unknown
    if found_all and value_ok:
        notes = "; ".join(f"{figs[0].text!r}: {figs[0].note}" for figs in errors.values())
        return Feedback(ex.id, "correct", f"correct: {notes}. The right figure is {msg}")
    parts = [f"{u!r} is not one of the figures in the paragraph" for u in unknown]
    # only that it is not an error: its note (what the figure is) could give the corrected value away
    parts += [f"{f.text!r} is not an error" for f in wrong_picks]
    if inherited and len(hit_groups) < len(errors):
        parts += [f"{f.text!r} is wrong only because an earlier error flows into it: name the figure where the error "
                  "starts" for f in inherited]
    if len(hit_groups) < len(errors) and not (inherited and not hit_groups and len(errors) == 1):
        parts.append(f"you named {len(hit_groups)} of the paragraph's {len(errors)} independent error"
                     + ("s" if len(errors) > 1 else ""))
    elif hit_groups == set(errors) and not parts:
        parts.append("you found " + ("the error" if len(errors) == 1 else "every error"))
    parts.append("your corrected value is right" if value_ok else f"your corrected value: {msg}")
    return Feedback(ex.id, "incorrect", "; ".join(parts), slips)


def _option_feedback(option, chosen_wrongly: bool = True) -> str:
    why = render(option.why) or tr("look again at what each option keeps on the GPU")
    return why + (trf(" (a common belief: {belief})", belief=tr(option.misconception))
                  if option.misconception and chosen_wrongly else "")


def _grade_choice(ex: Choice, answer) -> Feedback:
    options = {o.key: o for o in ex.options}
    key, reason = parse_choice(answer, tuple(options), tuple(r.key for r in ex.reasons))
    right = ex.right()
    if key != right:
        return Feedback(ex.id, "incorrect", trf("not ({key}): {why}.", key=key, why=_option_feedback(options[key])))
    if not ex.reasons:
        return Feedback(ex.id, "correct", trf("correct: ({key}). {why}", key=key, why=render(options[key].why)))
    reasons = {r.key: r for r in ex.reasons}
    if reason == "":
        return Feedback(ex.id, "incorrect", f"({key}) is the right choice; now pick the reason too, e.g. "
                                            f"(\"{key}\", {ex.reasons[0].key}).")
    if reason != options[right].reason:
        return Feedback(ex.id, "incorrect", f"({key}) is right, but not for reason {reason}: "
                                            f"{render(reasons[reason].why)}.")
    return Feedback(ex.id, "correct", trf("correct: ({key}) for reason {reason}. {why}", key=key, reason=reason,
                                          why=render(options[key].why)))


def _grade_multi(ex: MultiChoice, answer) -> Feedback:
    options = {o.key: o for o in ex.options}
    chosen = parse_selection(answer, tuple(options))
    right = frozenset(ex.right())
    if chosen == right:
        picked = ", ".join(f"({k})" for k in sorted(right)) or "none"
        return Feedback(ex.id, "correct", trf("correct: {picked}. ", picked=picked) + " ".join(
            f"({k}) {render(options[k].why)}." for k in sorted(right)))
    wrong = len(chosen - right)  # how many, never which: naming them would let "all" reveal the answer
    parts = [f"{wrong} of your {len(chosen)} pick{'s' if len(chosen) > 1 else ''} "
             f"do{'es' if wrong == 1 else ''} not apply"] if wrong else []
    missed = len(right - chosen)
    if missed:
        parts.append(f"{missed} option{'s' if missed > 1 else ''} that appl{'y' if missed > 1 else 'ies'} "
                     f"{'are' if missed > 1 else 'is'} missing")
    return Feedback(ex.id, "incorrect", "not yet: " + "; ".join(parts) + ".")


def _call(function, kwargs: dict):
    """The learner's function on one input: (value, None) or (None, what went wrong)."""
    try:
        return function(**dict(kwargs)), None
    except NotImplementedError:
        return None, "stub"
    except (Exception, SystemExit) as e:  # the learner's own code failed (even sys.exit()): report it, do not raise
        return None, f"raised {type(e).__name__}: {str(e)[:120]}"


def _case_label(kwargs: dict, shown: bool) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    return f"({args})" if shown else f"a random input ({args})"


def _grade_implement(ex: Implement, answer) -> Feedback:
    if not callable(answer):
        raise Malformed(f"pass your function itself: check({ex.id!r}, {ex.function_name})")
    shown = ex.cases()
    cases = [(k, True) for k in shown] + [(k, False) for k in ex.held_out(random.Random())]
    got = []
    for kwargs, is_shown in cases:
        value, problem = _call(answer, kwargs)
        if problem == "stub":
            return Feedback(ex.id, "not answered", "not answered yet: your function is still a stub.")
        if problem:
            return Feedback(ex.id, "incorrect", f"your function {problem} for {_case_label(kwargs, is_shown)}")
        if value is None:
            if not got:
                return Feedback(ex.id, "not answered", "not answered yet: your function returns None.")
            return Feedback(ex.id, "incorrect", f"your function returned None for {_case_label(kwargs, is_shown)}")
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return Feedback(ex.id, "incorrect", f"your function returned {str(value)[:40]!r} for "
                                                f"{_case_label(kwargs, is_shown)}; return a number")
        try:
            value = float(value)
        except OverflowError:
            value = math.inf
        if not math.isfinite(value):
            return Feedback(ex.id, "incorrect", f"your function returned a non-finite number for "
                                                f"{_case_label(kwargs, is_shown)}")
        got.append((kwargs, is_shown, value, float(ex.reference(kwargs))))
    bad = [(k, s, v, w) for k, s, v, w in got if not _close(v, w, ex.tolerance)]
    if not bad:
        return Feedback(ex.id, "correct", f"correct: matches {ex.reference_name} on all {len(got)} inputs "
                                          f"({len(shown)} shown, {len(got) - len(shown)} drawn at random).")
    for slip in ex.slips:
        try:
            if all(_close(v, float(slip.value(k, w)), ex.tolerance) for k, _, v, w in got):
                return Feedback(ex.id, "incorrect", trf("looks like a known slip: {text}.", text=tr(slip.message)),
                                (slip.name,))
        except Exception:
            continue
    # the direction only: a ratio to the reference (or its value) would let a function returning 1 read it back
    lines = [f"{_case_label(k, s)}: {_direction(v, w)}" for k, s, v, w in bad[:3]]
    return Feedback(ex.id, "incorrect", f"{len(bad)} of {len(got)} inputs differ from {ex.reference_name}: "
                                        + "; ".join(lines) + ("; ..." if len(bad) > 3 else "") + ".")


def _words(text: str) -> int:
    """Words, counting each CJK character as half a word (Chinese is written without spaces)."""
    cjk = sum(1 for c in text if "\u4e00" <= c <= "\u9fff")
    return len(text.split()) + cjk // 2


def _grade_self(ex: SelfAssessed, answer) -> Feedback:
    if not isinstance(answer, str):
        raise Malformed("write your answer as text in a string (a few sentences)")
    if _words(answer) < ex.min_words:
        return Feedback(ex.id, "not answered", f"write your answer first (at least {ex.min_words} words); then "
                                               "check() shows the rubric and a model answer to mark it against.")
    return Feedback(ex.id, "submitted", f"answer recorded ({_words(answer)} words). Compare it with the rubric and the "
                                        f"model answer below, then mark each point: mark({ex.id!r}, [True, False, "
                                        f"...]) ({len(ex.rubric)} marks, in order). Open questions are not graded "
                                        "automatically; your marks count apart from the auto-graded exercises.")


_GRADERS = {Numeric: _grade_numeric, SpotError: _grade_spot, Choice: _grade_choice, MultiChoice: _grade_multi,
            Implement: _grade_implement, SelfAssessed: _grade_self}


def grade(exercise_id, answer) -> Feedback:
    """The feedback for one answer, without printing or recording. Never raises."""
    try:
        ex = get_exercise(exercise_id)
    except KeyError as e:
        return Feedback(str(exercise_id)[:40], "unknown exercise", str(e.args[0]))
    try:
        answer = plain(answer)
    except Malformed as e:
        return Feedback(ex.id, "malformed", trf("could not read that answer: {error}", error=e))
    if unanswered(answer):
        return Feedback(ex.id, "not answered", trf("not answered yet: replace the placeholder with your answer. "
                                                   "Stuck? hint({id})", id=repr(ex.id)))
    try:
        return _GRADERS[type(ex)](ex, answer)
    except Malformed as e:
        return Feedback(ex.id, "malformed", trf("could not read the answer: {error}", error=e))
    except RecursionError:
        return Feedback(ex.id, "malformed", "could not read the answer: it is nested too deeply")
    except Exception as e:  # a grader bug must not break the learner's notebook
        return Feedback(ex.id, "error", f"the grader failed ({type(e).__name__}: {e}); please report it")


# --- the learner's functions -------------------------------------------------------------------
_RESULTS: dict[str, Feedback] = {}  # this session's last feedback per exercise (the tests read it)


def _in_notebook() -> bool:
    """A kernel that a notebook front end displays: ipykernel (its IPKernelApp config) or JupyterLite's Pyodide
    kernel (its shell, pyodide_kernel.interpreter.Interpreter 0.8, holds a `kernel`); not a terminal IPython."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None:
        return False
    return "IPKernelApp" in shell.config or type(shell).__module__.startswith("pyodide_kernel")


def _emit(markdown: str) -> None:
    """Rendered Markdown in a notebook, plain text elsewhere."""
    if _in_notebook():
        from IPython.display import Markdown, display

        display(Markdown(markdown))
        return
    print(markdown)


def _lookup(exercise_id) -> Exercise | None:
    try:
        return get_exercise(exercise_id)
    except KeyError as e:
        print(e.args[0])
        return None


def show(exercise_id: str, lang: str | None = None) -> None:
    """Display an exercise: title, difficulty, time and the question (`lang`: "zh" or "en" for this call;
    set_language() for every call)."""
    with language(lang):
        ex = _lookup(exercise_id)
        if ex is not None:
            _emit(f"**{ex.id} · {tr(ex.title)}** — *{tr(ex.difficulty)} · "
                  + trf("about {minutes} min", minutes=ex.minutes) + f" · {tr(ex.kind_label)}*\n\n"
                  + ex.render_prompt())


def check(exercise_id: str, answer, lang: str | None = None) -> None:
    """Print whether `answer` is right, with feedback. Never raises; records the attempt (best one counts)."""
    with language(lang):
        _check(exercise_id, answer)


def _check(exercise_id: str, answer) -> None:
    fb = grade(exercise_id, answer)
    print(fb)
    if fb.exercise_id not in EXERCISES:
        return
    ex = EXERCISES[fb.exercise_id]
    if fb.status in ("correct", "incorrect"):
        _RESULTS[ex.id] = fb
        before = progress.entry(ex.id)
        fields = {"best": fb.status, "last": fb.status, "attempts": before.get("attempts", 0) + 1}
        if fb.status == "incorrect" and fb.slips:  # what the class report counts as the commonest slips
            seen = dict(before.get("slips", {}))
            for name in fb.slips:
                if name[:80] in seen or len(seen) < 50:  # progress keeps at most 50 named slips per exercise
                    seen[name[:80]] = seen.get(name[:80], 0) + 1
            fields["slips"] = seen
        now = progress.update(ex.id, **fields)
        if fb.status == "incorrect" and now.get("best") == "correct":
            print("   " + trf("(you passed {id} before; that pass still counts)", id=ex.id))
    elif fb.status == "submitted":
        _RESULTS[ex.id] = fb
        progress.update(ex.id, submitted=True, last="submitted", self_total=len(ex.rubric))
        _emit(_rubric_markdown(ex))
    elif ex.id not in _RESULTS:
        _RESULTS[ex.id] = fb


def _rubric_markdown(ex: SelfAssessed) -> str:
    points = "\n".join(f"{i}. {tr(p)}" for i, p in enumerate(ex.rubric, 1))
    return (trf("**Rubric for {id}** (mark each point your answer covers):", id=ex.id) + f"\n\n{points}\n\n"
            + trf("**Model answer {id}.**", id=ex.id) + f" {tr(ex.worked())}")


def mark(exercise_id: str, marks) -> None:
    """Self-assess an open question after check(): one True/False per rubric point, in order."""
    ex = _lookup(exercise_id)
    if ex is None:
        return
    if not isinstance(ex, SelfAssessed):
        print(f"ℹ️ {ex.id} is graded automatically: use check({ex.id!r}, answer).")
        return
    if unanswered(marks):
        print(f"⏳ {ex.id}: not marked yet: mark({ex.id!r}, [True, False, ...]), one per rubric point.")
        return
    if not progress.entry(ex.id).get("submitted"):
        print(f"⏳ {ex.id}: write your answer and check({ex.id!r}, your_answer) first; it shows the rubric to mark.")
        return
    try:
        values = parse_marks(marks, len(ex.rubric))
    except Malformed as e:
        print(f"⚠️ {ex.id}: {e}")
        return
    got = sum(values)
    rec = progress.update(ex.id, self_points=got, self_total=len(ex.rubric), last="marked")
    missing = [i for i, v in enumerate(values, 1) if not v]
    print(f"📝 {ex.id}: you marked {got} of {len(ex.rubric)} points"
          + (f" (best so far {rec['self_points']})" if rec["self_points"] > got else "")
          + (f"; to revisit: point{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))}" if missing else "")
          + ". Self-assessed points count apart from the auto-graded exercises in score().")


def hint(exercise_id: str, lang: str | None = None) -> None:
    """Print the next hint: the concept, then the formula, then the first step (each call shows one more)."""
    with language(lang):
        _hint(exercise_id)


def _hint(exercise_id: str) -> None:
    ex = _lookup(exercise_id)
    if ex is None:
        return
    seen = progress.entry(ex.id).get("hints", 0)
    n = len(ex.hints)
    if seen >= n:
        print("💡 " + trf("{id}: all {n} hints shown:", id=ex.id, n=n) + "\n"
              + "\n".join(f"   {i}. {tr(h)}" for i, h in enumerate(ex.hints, 1))
              + "\n   " + trf("solution({id}) shows the worked answer.", id=repr(ex.id)))
        return
    progress.update(ex.id, hints=seen + 1)
    labels = (tr("the concept"), tr("the formula"), tr("the first step"))
    more = trf(" (call again for {label})", label=labels[seen + 1]) if seen + 1 < n else ""
    label = labels[seen]
    print("💡 " + trf("{id} hint {k} of {n}, {label}:", id=ex.id, k=seen + 1, n=n, label=label)
          + f" {tr(ex.hints[seen])}{more}")


def solution(exercise_id: str, lang: str | None = None) -> None:
    """Show the worked answer, with every figure computed by memlib now."""
    with language(lang):
        ex = _lookup(exercise_id)
        if ex is not None:
            _emit(trf("**Worked answer {id}.**", id=ex.id) + " " + tr(ex.worked()))


@dataclass(frozen=True)
class Practice:
    """A practice question: answer with check(q.id, answer); hint(q.id), solution(q.id) as for the others."""

    id: str
    topic: str
    seed: int
    title: str
    prompt: str

    def _repr_markdown_(self) -> str:
        return f"**{self.id} · {self.title}** (practice, topic {self.topic}, seed {self.seed})\n\n{self.prompt}"

    def __str__(self) -> str:
        return f"{self.id} · {self.title}\n{self.prompt}\n(check({self.id!r}, answer); hint({self.id!r}))"


def practice(topic, seed: int | None = None, lang: str | None = None) -> Practice:
    """A new question of one topic's kinds ("03", 3 or "03_when_...") with a setup drawn from memlib's catalogs.

    The same seed gives the same question (for a class); no seed draws one. Graded by check(q.id, answer);
    hint(q.id) and solution(q.id) work as for the fixed exercises; practice does not count in score()."""
    from memlib.learn.exercises import practice as generator
    key = notebook_key(topic)
    if key is None or key not in generator.KINDS:
        raise ValueError(f"unknown topic {str(topic)[:40]!r}; topics are {', '.join(generator.KINDS)}")
    if seed is None:
        seed = random.SystemRandom().randrange(generator.MAX_SEED + 1)
    ex = generator.build(key, seed)
    with language(lang):
        return Practice(ex.id, key, seed, tr(ex.title), ex.render_prompt())


_MARKS = {"correct": "✅ passed", "incorrect": "❌ not yet"}


@dataclass
class Score:
    """One notebook's progress: auto-graded exercises passed, self-assessed points, hints used."""

    notebook: str
    rows: list[tuple[Exercise, dict]] = field(default_factory=list)

    @property
    def auto(self) -> list[tuple[Exercise, dict]]:
        return [(ex, rec) for ex, rec in self.rows if ex.auto_graded]

    @property
    def passed(self) -> int:
        return sum(1 for _, rec in self.auto if rec.get("best") == "correct")

    @property
    def total(self) -> int:
        return len(self.auto)

    @property
    def self_points(self) -> int:
        return sum(rec.get("self_points", 0) for ex, rec in self.rows if not ex.auto_graded)

    @property
    def self_total(self) -> int:
        return sum(len(ex.rubric) for ex, _ in self.rows if not ex.auto_graded)

    @property
    def hints(self) -> int:
        return sum(rec.get("hints", 0) for _, rec in self.rows)

    def summary(self) -> str:
        done = sum(ex.minutes for ex, rec in self.rows if rec.get("best") == "correct" or "self_points" in rec)
        return (f"auto-graded {self.passed} of {self.total} passed · self-assessed {self.self_points} of "
                f"{self.self_total} points · {self.hints} hints used · {done} of "
                f"{sum(ex.minutes for ex, _ in self.rows)} minutes of work done")

    def __repr__(self) -> str:  # a notebook shows the table once when score() ends a cell
        return str(self)

    def __str__(self) -> str:
        lines = [f"Notebook {self.notebook} ({NOTEBOOKS.get(self.notebook, '?')}): {self.summary()}"]
        for ex, rec in self.rows:
            if ex.auto_graded:
                state = _MARKS.get(rec.get("best", ""), "·  not checked")
                if rec.get("best") == "correct" and rec.get("last") == "incorrect":
                    state += " (last try ❌)"
            elif "self_points" in rec:
                state = f"📝 {rec['self_points']}/{len(ex.rubric)} points"
            else:
                state = "📝 to mark" if rec.get("submitted") else "·  not answered"
            hints = f"{rec.get('hints', 0)} hint{'s' if rec.get('hints', 0) != 1 else ''}" if rec.get("hints") else ""
            lines.append(f"  {ex.id:<6} {state:<26} {ex.difficulty:<9} {ex.kind:<13} {ex.title}"
                         + (f"  [{hints}]" if hints else ""))
        return "\n".join(lines)


@dataclass
class Overview:
    """Every notebook's progress, one line each (what score() shows without an argument)."""

    scores: list[Score]

    def __repr__(self) -> str:
        return str(self)

    def __str__(self) -> str:
        lines = ["Your progress (best attempts; kept in "
                 + (str(progress.path().name) if progress.path() else "memory only") + "):"]
        lines += [f"  {s.notebook} {NOTEBOOKS[s.notebook]:<32} {s.summary()}" for s in self.scores]
        lines.append(f"  all {'':<32} auto-graded {sum(s.passed for s in self.scores)} of "
                     f"{sum(s.total for s in self.scores)} passed · self-assessed "
                     f"{sum(s.self_points for s in self.scores)} of {sum(s.self_total for s in self.scores)} points")
        return "\n".join(lines)


def score(notebook=None):
    """Progress in one notebook ("01", "1", 1 or "01_65b_on_4x_v100"), or in all of them (no argument)."""
    records = progress.entries()
    if notebook is None:
        return Overview([score(key) for key in NOTEBOOKS])
    key = notebook_key(notebook)
    if key is None:
        close = difflib.get_close_matches(str(notebook), list(NOTEBOOKS) + list(NOTEBOOKS.values()), n=1)
        print(f"unknown notebook {str(notebook)[:40]!r}; known: {', '.join(NOTEBOOKS)}"
              + (f" (did you mean {close[0]!r}?)" if close else ""))
        return Score(str(notebook)[:40])
    return Score(key, [(ex, dict(records.get(ex.id, {}))) for ex in EXERCISES.values() if ex.notebook == key])


def reset() -> None:
    """Forget this session's results (used by the tests; the progress file is left alone)."""
    _RESULTS.clear()
    progress.forget()
