"""A mock interview over every topic: one question, 30 seconds to think, a spoken-style answer marked
against a rubric and a model answer, then one follow-up (notebooks/mock_interview.ipynb).

    from memlib.learn import interview
    q = interview.draw(seed=3)          # an open question from one of the topics 00-09
    interview.timer(30)                 # a 30-second countdown (ipywidgets; text without them)
    interview.assess(q, "my answer")    # the rubric and the model answer, to mark yourself against
    interview.mark(q, [True, False, ...])
    f = interview.follow_up(q)          # a practice question of the same topic: check(f.id, answer)

The questions are the collection's open (self-assessed) exercises; the model answers and the
follow-up's figures are computed by memlib when shown. Nothing here is graded by keywords, and a mock
interview does not change the exercises' progress.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass

from memlib.learn.exercises import EXERCISES, NOTEBOOKS, SelfAssessed
from memlib.learn.exercises.answers import Malformed, parse_marks

THINK_SECONDS = 30


@dataclass(frozen=True)
class Question:
    id: str  # the open exercise it comes from ("04.10")
    topic: str
    seed: int
    title: str
    prompt: str

    def _repr_markdown_(self) -> str:
        return (f"**Mock interview · topic {self.topic} ({NOTEBOOKS[self.topic]})**\n\n**{self.title}.** "
                f"{self.prompt}\n\n*Think for {THINK_SECONDS} seconds, then answer as you would aloud.*")

    def __str__(self) -> str:
        return f"{self.title}: {self.prompt}"


def _open_questions() -> list[SelfAssessed]:
    return [ex for ex in EXERCISES.values() if isinstance(ex, SelfAssessed)]


def draw(seed: int | None = None) -> Question:
    """One open question drawn from every topic's (the same seed, the same question)."""
    if seed is None:
        seed = random.SystemRandom().randrange(10**6)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative whole number, got {seed!r}")
    ex = random.Random(f"interview:{seed}").choice(_open_questions())
    return Question(ex.id, ex.notebook, seed, ex.title, ex.prompt)


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
    try:
        import ipywidgets as widgets
    except ImportError:
        print(f"⏱ {seconds} seconds to think: start now.")
        return None
    bar = widgets.IntProgress(min=0, max=seconds, value=0, description="⏱ think")
    label = widgets.Label(f"{seconds} s left")
    box = widgets.HBox([bar, label])
    worker = threading.Thread(target=_countdown, args=(bar, label, seconds), daemon=True)
    worker.start()
    if block:
        worker.join()
    return box


def _exercise(q: Question) -> SelfAssessed:
    return EXERCISES[q.id]


def assess(q: Question, answer: str) -> str:
    """The rubric and the model answer for your answer (Markdown); nothing is graded by keywords."""
    if not isinstance(answer, str) or len(answer.split()) + sum("\u4e00" <= c <= "\u9fff" for c in answer) // 2 < 10:
        return "Say your answer first (at least 10 words, as you would aloud); then the rubric and a model answer."
    ex = _exercise(q)
    points = "\n".join(f"{i}. {p}" for i, p in enumerate(ex.rubric, 1))
    return (f"**Rubric** (mark each point your answer covered):\n\n{points}\n\n**Model answer.** {ex.worked()}\n\n"
            f"Mark it: `interview.mark(q, [True, False, ...])` ({len(ex.rubric)} marks, in order).")


def mark(q: Question, marks) -> str:
    """Your self-assessment: points covered out of the rubric's, and which to revisit."""
    ex = _exercise(q)
    try:
        values = parse_marks(marks, len(ex.rubric))
    except Malformed as e:
        return f"⚠️ {e}"
    missing = [str(i) for i, v in enumerate(values, 1) if not v]
    return (f"📝 {sum(values)} of {len(values)} points" + (f"; revisit point {', '.join(missing)}" if missing else "")
            + ". Next: the follow-up, interview.follow_up(q).")


def follow_up(q: Question):
    """One follow-up: a practice question of the same topic with a fresh setup (check(f.id, answer))."""
    from memlib.learn.grading import practice
    return practice(q.topic, seed=q.seed % 1_000_000)
