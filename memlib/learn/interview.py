"""A mock interview: one question per draw, 30 seconds to think, a spoken-style answer marked against a
rubric and a model answer, then a follow-up on the point you missed (notebooks/mock_interview.ipynb).

    from memlib.learn import interview
    q = interview.draw(seed=3)          # a scenario with a fresh setup (most draws) or a notebook's open question
    interview.timer(30)                 # a 30-second countdown (ipywidgets; text without them)
    interview.assess(q, "my answer")    # the rubric and the model answer, to mark yourself against
    interview.mark(q, [True, False, ...])
    f = interview.follow_up(q)          # a graded question on the first point you missed: check(f.id, answer)

Most draws are scenarios (memlib.learn.scenarios): an open question whose setup (model, GPUs, length) is drawn
from memlib's catalogs, so they are not the exercise notebooks' questions again. The rest are the notebooks'
open questions. Every figure in a rubric or model answer is computed by memlib when shown. The follow-up drills
the first rubric point you marked as missed (each scenario point names the practice kind that drills it);
with every point covered it pushes on the last one. Nothing is graded by keywords, and a mock interview does
not change the exercises' progress.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass

from memlib.learn.i18n import tr, trf
from memlib.learn import scenarios
from memlib.learn.exercises import EXERCISES, NOTEBOOKS, SelfAssessed, get_exercise
from memlib.learn.exercises.answers import Malformed, parse_marks

THINK_SECONDS = 30
SCENARIO_SHARE = 0.75  # the share of draws that are scenarios with a fresh setup (the rest: the notebooks' open questions)


@dataclass(frozen=True)
class Question:
    id: str  # the open exercise it comes from ("04.10") or the scenario ("m04.17")
    topic: str
    seed: int
    title: str
    prompt: str

    def _repr_markdown_(self) -> str:
        return ("**" + trf("Mock interview · topic {topic} ({name})", topic=self.topic, name=NOTEBOOKS[self.topic])
                + f"**\n\n**{tr(self.title)}.** {tr(self.prompt)}\n\n*"
                + trf("Think for {seconds} seconds, then answer as you would aloud.", seconds=THINK_SECONDS) + "*")

    def __str__(self) -> str:
        return f"{tr(self.title)}: {tr(self.prompt)}"


@dataclass(frozen=True)
class _Open:
    """What assess() and mark() need of a question: its rubric and model answer."""

    rubric: tuple[str, ...]
    worked: object  # () -> str


def _open_questions() -> list[SelfAssessed]:
    return [ex for ex in EXERCISES.values() if isinstance(ex, SelfAssessed)]


def draw(seed: int | None = None) -> Question:
    """One question (the same seed, the same question): a scenario with a fresh setup, or an open question."""
    if seed is None:
        seed = random.SystemRandom().randrange(10**6)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative whole number, got {seed!r}")
    rng = random.Random(f"interview:{seed}")
    if rng.random() < SCENARIO_SHARE:
        s = scenarios.build(rng.choice(sorted(scenarios.BUILDERS)), seed % 1_000_000)
        return Question(s.id, s.topic, seed, s.title, s.prompt)
    ex = rng.choice(_open_questions())
    return Question(ex.id, ex.notebook, seed, ex.title, ex.prompt)


def question(q) -> Question:
    """q itself, or the question with this id: a scenario ("m04.17") or an open exercise ("04.10")."""
    if isinstance(q, Question):
        return q
    text = str(q).strip()[:40] if isinstance(q, str) else None
    if text and text[:1] == "m" and text[1:3] in scenarios.BUILDERS and text[3:4] == "." and text[4:].isdecimal():
        s = scenarios.build(text[1:3], int(text[4:]))
        return Question(s.id, s.topic, int(text[4:]), s.title, s.prompt)
    if isinstance(q, float):  # 4.10 and 4.1 are one float: the id as a string, as check() says too
        raise ValueError(f"question ids are strings: write '{q}' in quotes (the number {q!r} cannot tell 04.1 from "
                         "04.10)")
    try:  # "04.10", also "4.10" (the ids check() takes)
        ex = get_exercise(text) if text else None
    except KeyError:
        ex = None
    if isinstance(ex, SelfAssessed):
        return Question(ex.id, ex.notebook, 0, ex.title, ex.prompt)
    raise ValueError(f"{str(q)[:40]!r} is not a mock-interview question: pass the q that interview.draw() returned "
                     f"(or an open question's id, e.g. {_open_questions()[0].id!r})")


def _scenario(q: Question) -> scenarios.Scenario | None:
    return scenarios.build(q.topic, int(q.id.split(".")[1])) if q.id.startswith("m") else None


def _countdown(bar, label, seconds: int) -> None:
    for left in range(seconds, -1, -1):
        bar.value = seconds - left
        label.value = f"{left} s left" if left else "time: answer now"
        if left:
            time.sleep(1)


def timer(seconds: int = THINK_SECONDS, block: bool = False):
    """A countdown (an ipywidgets progress bar; plain text without ipywidgets). Returns the widget, or None."""
    if isinstance(seconds, bool) or not isinstance(seconds, int) or not 1 <= seconds <= 600:
        raise ValueError(f"seconds must be a whole number from 1 to 600, got {seconds!r}")
    from memlib._checks import flag
    block = flag("block", block)  # "false" would block
    try:
        import ipywidgets as widgets
    except ImportError:
        print("⏱ " + trf("{seconds} seconds to think: start now.", seconds=seconds))
        return None
    bar = widgets.IntProgress(min=0, max=seconds, value=0, description="⏱ think")
    label = widgets.Label(f"{seconds} s left")
    box = widgets.HBox([bar, label])
    worker = threading.Thread(target=_countdown, args=(bar, label, seconds), daemon=True)
    worker.start()
    if block:
        worker.join()
    return box


def _exercise(q: Question) -> _Open:
    s = _scenario(q)
    if s is not None:
        return _Open(s.rubric(), s.model_answer)
    ex = EXERCISES[q.id]
    return _Open(tuple(ex.rubric), ex.worked)


def assess(q: Question, answer: str) -> str:
    """The rubric and the model answer for your answer (Markdown); nothing is graded by keywords."""
    q = question(q)
    if not isinstance(answer, str) or len(answer.split()) + sum("\u4e00" <= c <= "\u9fff" for c in answer) // 2 < 10:
        return tr("Say your answer first (at least 10 words, as you would aloud); then the rubric and a model answer.")
    ex = _exercise(q)
    points = "\n".join(f"{i}. {tr(p)}" for i, p in enumerate(ex.rubric, 1))
    return (tr("**Rubric** (mark each point your answer covered):") + f"\n\n{points}\n\n" + tr("**Model answer.**")
            + f" {tr(ex.worked())}\n\n"
            + trf("Mark it: `interview.mark(q, [True, False, ...])` ({n} marks, in order).", n=len(ex.rubric)))


_MISSED: dict[Question, tuple[int, ...]] = {}  # this session's marks: the rubric points (1-based) each question missed


def mark(q: Question, marks) -> str:
    """Your self-assessment: points covered out of the rubric's, and which to revisit (the follow-up asks about it)."""
    q = question(q)
    ex = _exercise(q)
    try:
        values = parse_marks(marks, len(ex.rubric))
    except Malformed as e:
        return f"⚠️ {e}"
    missing = tuple(i for i, v in enumerate(values, 1) if not v)
    _MISSED[q] = missing
    return ("📝 " + trf("{got} of {n} points", got=sum(values), n=len(values))
            + (trf("; revisit point {points}", points=", ".join(map(str, missing))) if missing else "")
            + tr(". Next: the follow-up, interview.follow_up(q)")
            + (trf(", on point {point}.", point=missing[0]) if missing else tr(", pushing on the last point.")))


def follow_up(q: Question, marks=None):
    """A graded follow-up (check(f.id, answer)): on a scenario, the practice kind that drills the first rubric
    point you missed (from `marks`, or from your last mark(q, ...)); every point covered: the last point, with a
    fresh setup. On a notebook's open question: a practice question of the same topic."""
    from memlib.learn.exercises import practice as generator
    from memlib.learn.grading import Practice, practice
    q = question(q)
    s = _scenario(q)
    if s is None:
        return practice(q.topic, seed=q.seed % 1_000_000)
    if marks is not None:
        values = parse_marks(marks, len(s.points))
        missed = tuple(i for i, v in enumerate(values, 1) if not v)
    else:
        missed = _MISSED.get(q, ())
    point = missed[0] if missed else len(s.points)
    topic, kind = s.drills[point - 1]
    ex = generator.build(topic, q.seed % 1_000_000, kind)
    why = (trf("Follow-up on rubric point {point}, which your answer missed", point=point) if missed else
           trf("You covered every point; the interviewer pushes on point {point} with a new setup", point=point))
    return Practice(ex.id, topic, q.seed % 1_000_000, f"{why}: {tr(ex.title)}", ex.render_prompt())
