"""No give-away (issue 20): every example, placeholder, prompt, hint and feedback string a learner
sees before solving is tried as an answer to every exercise; none earns credit.

The strings come from the student notebooks (exercises/*.py: headers, placeholder comments) and from
memlib.learn.exercises (prompts, options, hints, the answer-format examples) and from the feedback
the grader gives to wrong and unreadable answers. From each string every figure ("123 GB", "31",
"8.1×10^22", "70,272") and every short quoted text is taken as a candidate answer. A spot-the-error
exercise is tried with its error figures named, so only the corrected value is at stake; its own
paragraph's figures are not tried against it (a quote may state the right figure it contradicts:
that is the question, not a leak).
"""

from __future__ import annotations

import functools
import re
from dataclasses import replace
from pathlib import Path

import pytest

from memlib.learn import grading
from memlib.learn.exercises import (EXERCISES, NOTEBOOKS, Choice, Implement, MultiChoice, Numeric, SelfAssessed,
                                    SpotError, render)
from memlib.learn.exercises.answers import UNITS_EXAMPLE_KEYS, example

ROOT = Path(__file__).resolve().parents[1]
FIGURE = re.compile(r"~?\d[\d,]*(?:\.\d+)?(?:\s*[×x*]\s*10\s*\^\s*\d+)?(?:[eE][-+]?\d+)?"
                    r"(?:\s?(?:[A-Za-z%]+|[\u4e00-\u9fff]+)(?:[-/][A-Za-z]+)?)?")
QUOTED = re.compile(r"[\"'`]([^\"'`\n]{1,40})[\"'`]")
PROBES = ["987.6 GB", "1 GB", "1e15 GB", "0.5", "12", "none", "all", "a", "zz", "1 s", "1%", "3x", ("99GB", "1 GB"),
          (["99GB", "ZeRO-9"], "1 GB"), ("a", 1), "1B"]


def _candidates(text: str, figures: bool = True) -> set[str]:
    """Quoted texts (examples, placeholders) and, with `figures`, every figure with a unit or written with
    thousands separators ("123 GB", "70,272") in `text`."""
    found = {m.group(1).strip() for m in QUOTED.finditer(text)}
    if figures:
        found |= {m.group(0).strip() for m in FIGURE.finditer(text)
                  if re.search(r"[A-Za-z%\u4e00-\u9fff]|\d,\d", m.group(0))}
    # an exercise id or a notebook number ("03.8", "05", "10.4") is a reference, not a figure
    return {c for c in found if c and len(c) <= 40 and not (re.fullmatch(r"\d\d(?:\.\d{1,2})?", c)
                                                            and c[:2] in NOTEBOOKS)}


# Figures that name the setup, not a result: a GPU's marketed size ("A100 80GB", "A100 40GB") is in
# every prompt and hint of the collection; an exercise whose answer lies within its tolerance of one
# of them is a coincidence of the hardware, not a leak of the answer.
SETUP_FIGURES = {"80GB", "80 GB", "80gb", "40GB", "40 GB", "40gb", "24GB", "24 GB", "32GB", "32 GB", "141 GB",
                 "141GB", "16GB", "16 GB"}


# Figures in ANOTHER notebook's text that fall within an exercise's tolerance by coincidence of the
# catalog (not the same quantity, or a quantity an earlier notebook already asked for), each with why.
COINCIDENCES = {
    ("00.1", "12.73 GiB"): "11.5 quotes a published OOM message (12.73 GiB free); 00.1 is LLaMA-7B's bf16 weights "
                           "(12.55 GiB)",
    ("03.2", "12.73 GiB"): "11.5's quoted OOM message; 03.2 is a 7B's ZeRO-3 states on 8 GPUs (12.55 GiB)",
    ("02.7", "15.25 GiB"): "11.4 quotes a published OOM message (15.25 GiB in use); 02.7 is Llama-3-8B's bf16 weights "
                           "(14.96 GiB)",
    ("05.4", "11"): "the number of notebook 11 in its exercises' title; 05.4's answer is a FLOPs ratio (10.6)",
    ("00.2", "~208 GB"): "02.9 (notebook 02, after 00): a 13B's model states in its rubric and hint, which 00.2 "
                         "asks for first",
    ("02.2", "39 GiB"): "01.6: a 65B layout's per-GPU peak; 02.2 is 8-bit Adam's states of a 7B",
    ("02.7", "~16 GB"): "06.5 (notebook 6): Llama-3.1-8B's bf16 weights, which notebook 02 already asked for",
    ("02.11", "113.63 GiB"): "05.8: a DeepSeek-V3 LoRA figure; 02.11 is ZeRO-Offload's PCIe traffic",
    ("02.11", "122.00 GB"): "05.8: the same figure in GB",
    ("03.8", "113.63 GiB"): "05.8: a DeepSeek-V3 LoRA figure; 03.8 is host RAM for a 7B",
    ("03.8", "122.00 GB"): "05.8: the same figure in GB",
    ("03.10", "37e9"): "07.9: DeepSeek-V3's activated parameters; 03.10 is a 70B's per-GPU weights under tp",
    ("04.2", "1e9"): "the definition of a GB (10⁹ bytes); 04.2's answer happens to be about 1 GB",
    ("04.6", "40 GiB"): "01.1 and 03.5: an A100 40GB's capacity; 04.6 is vLLM's KV budget of a 70B on an 80GB card "
                        "(39.66 GiB)",
    ("08.3", "64.75 GiB"): "03.11: Llama-2-70B's int8 weights in a serving table; 08.3 is a 7B PPO's per-GPU peak",
    ("08.3", "69.53 GB"): "03.11: the same int8 weights in GB",
    ("05.1", "259 GiB"): "06.5: a Llama-3.1-8B layout's peak at 128k; 05.1 is Mixtral-8x22B's bf16 weights (262 GiB)",
    ("03.7", "~208 GB"): "02.9 (notebook 02): a 13B's model states at 16 bytes/param; 03.7 is what ZeRO-Offload saves "
                         "at LLaMA-13B's peak (212 GB)",
}


def _seen_text() -> dict[str, tuple[str, bool]]:
    """Where each piece of text comes from -> (the text, whether its figures count as candidates)."""
    texts = {f"exercises/{p.name}": (p.read_text(encoding="utf-8"), False)
             for p in sorted((ROOT / "exercises").glob("*.py"))}
    for ex in EXERCISES.values():
        texts[ex.id + " prompt"] = (ex.render_prompt(), False)
        parts = list(ex.hints)
        for o in getattr(ex, "options", ()) + getattr(ex, "reasons", ()):
            parts += [render(o.why), o.misconception]
        parts += [grading.grade(ex.id, probe).message for probe in PROBES]
        texts[ex.id] = ("\n".join(parts), True)
    texts["examples"] = ("\n".join(example(u) for u in UNITS_EXAMPLE_KEYS), True)
    return texts


@pytest.fixture
def fast_exercises(monkeypatch):
    """Each exercise's expected value, slips and right option computed once (the grader still calls them)."""
    for eid, ex in EXERCISES.items():
        if isinstance(ex, Numeric):
            slips = tuple(replace(s, value=functools.cache(s.value)) for s in ex.slips)
            monkeypatch.setitem(EXERCISES, eid, replace(ex, expected=functools.cache(ex.expected), slips=slips))
        elif isinstance(ex, (Choice, MultiChoice)):
            monkeypatch.setitem(EXERCISES, eid, replace(ex, right=functools.cache(ex.right)))
    monkeypatch.setenv("MEMLIB_PROGRESS", "off")


def _answer_for(ex, candidate: str):
    if isinstance(ex, SpotError):
        names = [figs[0].text for figs in ex.errors.values()]
        return (names if len(names) > 1 else names[0], candidate)
    return candidate


def test_nothing_a_learner_sees_before_solving_earns_credit(fast_exercises):
    texts = _seen_text()
    sources: dict[str, set[str]] = {}
    for where, (text, figures) in texts.items():
        for c in _candidates(text, figures) - SETUP_FIGURES:
            sources.setdefault(c, set()).add(where)
    assert len(sources) > 200, "the candidate extraction found too little to be a test"
    leaks = []
    for eid, ex in EXERCISES.items():
        if isinstance(ex, (Implement, SelfAssessed)):
            continue
        own_quote = _candidates(ex.quote) if isinstance(ex, SpotError) else set()
        for cand, where in sources.items():
            if (cand in own_quote and where <= {eid, eid + " prompt"}) or (eid, cand) in COINCIDENCES:
                continue
            if grading.grade(eid, _answer_for(ex, cand)).passed:
                leaks.append(f"{eid} <- {cand!r} (from {', '.join(sorted(where))[:80]})")
    assert not leaks, f"{len(leaks)} give-aways:\n" + "\n".join(leaks[:60])


def test_the_answer_format_examples_answer_nothing(fast_exercises):
    for unit in UNITS_EXAMPLE_KEYS:
        for cand in _candidates(example(unit)):
            for eid, ex in EXERCISES.items():
                if not isinstance(ex, (Implement, SelfAssessed)):
                    assert not grading.grade(eid, _answer_for(ex, cand)).passed, (unit, cand, eid)
