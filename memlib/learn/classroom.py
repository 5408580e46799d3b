"""For the classroom: a shared quiz with its handout and answer key, and the teacher's report of a class's progress.

    from memlib.learn import classroom
    qs = classroom.quiz("04", seed=2026, n=10)        # the same 10 questions, in the same order, for everyone
    handout, key = classroom.handout("04", seed=2026, n=10, interview=2)   # Markdown: for the class, for the teacher
    report = classroom.class_report("handed_in/")    # a folder of files written by export_progress()
    report                                            # per exercise: pass rate, attempts, hints, commonest slips
    report.to_csv("class.csv"); report.chart("class.png")

The same from a shell: `memlib quiz --topic 04 --seed 2026 --n 10 --out handout.md --key key.md` and
`memlib class-report FOLDER --csv class.csv --chart class.png`.

A quiz question is a practice question (memlib.learn.exercises.practice): its id ("p04k1.123456") rebuilds it, so
a learner answers with check(id, answer) in any notebook and the grader computes the expected value with memlib
then. The class seed picks the questions: each of the topic's kinds in turn (in an order the seed shuffles), each
with a setup drawn by the seed; a different seed gives a different set. The answer key's answers are the expected
values written to four significant figures in the question's unit, which the grader accepts (tests/test_classroom.py
grades every key it writes). Mock-interview questions (memlib.learn.interview) are drawn from the same seed; they
are open questions, so the key gives their rubric and model answer, marked by the teacher.

The class report reads what learners hand in and never gives up on the rest: a file that is not JSON, has the wrong
shape, holds an entry that fails progress's validation or was written by a newer memlib is refused, and so is a
second file of the same learner (the learner written by export_progress(learner=...), else the file's name): the
latest export counts (its exported_at, else the one with the most attempts recorded). Every refused file is listed
with the reason; the others are counted.
"""

from __future__ import annotations

import csv
import hashlib
import html
import json
import os
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from memlib.learn.exercises import EXERCISES, NOTEBOOKS, SelfAssessed, notebook_key
from memlib.learn.exercises import practice as generator
from memlib.learn.exercises import progress
from memlib.learn.exercises.answers import BYTE_UNITS

MAX_QUESTIONS = 50
MAX_FILE_BYTES = 5 * 2**20  # an exported progress file is a few kB; anything this large is not one


# --- the shared quiz ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class QuizQuestion:
    number: int  # 1-based position in the quiz
    id: str  # a practice id ("p04k1.123456"): check(id, answer) grades it anywhere
    topic: str
    title: str
    prompt: str

    def _repr_markdown_(self) -> str:
        return f"**{self.number}. {self.title}** (`{self.id}`)\n\n{self.prompt}\n\n`check({self.id!r}, answer)`"

    def __str__(self) -> str:
        return f"{self.number}. {self.title} ({self.id})\n{self.prompt}"


def _topic(topic) -> str:
    key = notebook_key(topic)
    if key is None or key not in generator.KINDS:
        raise ValueError(f"topic must be one of {', '.join(sorted(generator.KINDS))} (a notebook number), "
                         f"got {str(topic)[:40]!r}")
    return key


def _seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= generator.MAX_SEED:
        raise ValueError(f"seed must be a whole number from 0 to {generator.MAX_SEED:,} (the class seed), got {seed!r}")
    return seed


def _count(n, name: str = "n", low: int = 1) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or not low <= n <= MAX_QUESTIONS:
        raise ValueError(f"{name} must be a whole number from {low} to {MAX_QUESTIONS}, got {n!r}")
    return n


def quiz(topic, seed: int, n: int = 10) -> list[QuizQuestion]:
    """`n` practice questions of `topic` for the class seed `seed`: the same questions in the same order for every
    learner, in every process; another seed gives another set. The topic's kinds of question take turns (their
    order shuffled by the seed), so a quiz of at least that many questions covers each kind."""
    key, seed, n = _topic(topic), _seed(seed), _count(n)
    rng = random.Random(f"quiz:{key}:{seed}")  # a str seed: the same stream in every process (no hash salt)
    kinds = list(range(len(generator.KINDS[key])))
    rng.shuffle(kinds)
    out: list[QuizQuestion] = []
    seen: set[tuple[str, str]] = set()
    for i in range(n):
        kind = kinds[i % len(kinds)]
        for _ in range(100):  # a setup already asked (a small catalog can repeat one) is drawn again
            ex = generator.build(key, rng.randrange(generator.MAX_SEED + 1), kind)
            if (ex.title, ex.render_prompt()) not in seen:
                break
        seen.add((ex.title, ex.render_prompt()))
        out.append(QuizQuestion(i + 1, ex.id, key, ex.title, ex.render_prompt()))
    return out


def interview_questions(seed: int, n: int = 3, topic=None):
    """`n` mock-interview questions (memlib.learn.interview.Question) for the class seed: the same for everyone.
    With `topic`, the topic's own: scenarios with fresh setups where the topic has them (memlib.learn.scenarios),
    then the notebook's open questions (a topic without scenarios has only as many as its open questions);
    without, interview.draw's mix over every topic."""
    from memlib.learn import interview, scenarios
    seed, n = _seed(seed), _count(n)
    key = None if topic is None else _topic(topic)
    rng = random.Random(f"quiz-interview:{key}:{seed}")
    out, ids = [], set()
    opened = [ex for ex in EXERCISES.values() if isinstance(ex, SelfAssessed) and ex.notebook == key]
    rng.shuffle(opened)
    for _ in range(100 * n):
        if key is None:
            q = interview.draw(rng.randrange(generator.MAX_SEED + 1))
        elif key in scenarios.BUILDERS and (len(out) % 2 == 0 or not opened):  # scenarios and open questions alternate
            q = interview.question(f"m{key}.{rng.randrange(generator.MAX_SEED + 1)}")
        elif opened:
            q = interview.question(opened.pop().id)
        else:
            break  # the topic has no more open questions
        if q.id not in ids:
            ids.add(q.id)
            out.append(q)
        if len(out) == n:
            break
    return out


_SIG = 4  # significant figures of a key's answer (the grader accepts a right figure rounded to 2 or more)


def key_answer(exercise_id: str) -> str:
    """The expected answer of a practice question as a learner would write it: the value memlib computes now, to
    four significant figures, in the question's unit (check() accepts it)."""
    ex = generator.from_id(exercise_id)
    if ex is None:
        raise ValueError(f"{exercise_id!r} is not a practice question's id (they look like 'p04k1.123456')")
    value, unit = float(ex.expected()), ex.unit
    g = lambda x: f"{x:.{_SIG}g}" if abs(x) < 1e15 else f"{x:.{_SIG - 1}e}"  # noqa: E731
    if unit in BYTE_UNITS:
        if unit == "bytes" and abs(value) < 1e9:  # a per-token or per-tensor size: exact bytes
            return f"{value:.0f} bytes"
        return f"{g(value / 2**30)} GiB" if unit == "GiB" else f"{g(value / 1e9)} GB"
    if unit == "params":
        return f"{g(value / 1e9)}B"
    if unit == "count":
        return f"{round(value)}"  # the grader asks for a whole number
    if unit == "USD":
        return f"${value:,.2f}"
    return f"{g(value)} {unit}" if unit != "x" else f"{g(value)}x"


def handout(topic, seed: int, n: int = 10, interview: int = 0) -> tuple[str, str]:
    """(the learners' handout, the teacher's answer key), both Markdown, for the class seed."""
    key_topic = _topic(topic)
    interview = _count(interview, "interview", low=0)  # 0: none; None, -1, "2" are errors naming interview
    questions = quiz(key_topic, seed, n)
    talks = interview_questions(seed, interview, key_topic) if interview else []
    title = f"Quiz · topic {key_topic} ({NOTEBOOKS[key_topic]}) · class seed {seed}"
    how = (f"{len(questions)} questions. Give each answer with its unit. In a notebook, `check(\"<id>\", \"your answer\")` "
           "grades it (`from memlib.learn.grading import check`); the same quiz again: "
           f"`memlib quiz --topic {key_topic} --seed {seed} --n {n}`.")
    sheet = [f"# {title}", "", how, ""]
    key = [f"# Answer key · {title}", "", "For the teacher. Each answer is memlib's value now, to four significant "
           "figures; `check(id, answer)` accepts it, and a learner's figure rounded to two significant figures or "
           "more is accepted too (unless it matches a named slip).", "",
           "| # | question | id | answer |", "|---|---|---|---|"]
    worked = []
    for q in questions:
        sheet += [f"## {q.number}. {q.title}", "", f"*id `{q.id}`*", "", q.prompt, "", "**Your answer:** ____________", ""]
        ex = generator.from_id(q.id)
        key.append(f"| {q.number} | {q.title} | `{q.id}` | {key_answer(q.id)} |")
        slips = "; ".join(f"{s.name} ({s.message})" for s in ex.slips)
        worked += [f"## {q.number}. {q.title}", "", f"**Answer:** {key_answer(q.id)}", "", f"**Worked:** {ex.worked()}", ""]
        if slips:
            worked += [f"**Slips the grader names:** {slips}.", ""]
    if talks:
        sheet += ["# Mock interview", "", "Answer aloud, as in an interview: think for 30 seconds, then about two minutes.", ""]
        worked += ["# Mock interview: rubrics", ""]
        from memlib.learn import interview as mock
        for i, q in enumerate(talks, 1):
            sheet += [f"## Interview {i}. {q.title}", "", f"*id `{q.id}`*", "", q.prompt, ""]
            ex = mock._exercise(q)
            points = "\n".join(f"{k}. {p}" for k, p in enumerate(ex.rubric, 1))
            worked += [f"## Interview {i}. {q.title}", "", "**Rubric** (one mark per point):", "", points, "",
                       f"**Model answer.** {ex.worked()}", ""]
    return "\n".join(sheet).rstrip() + "\n", "\n".join(key + [""] + worked).rstrip() + "\n"


# --- Markdown to a printable HTML page (the handout's few constructs; no dependency) -------------------------------
def _inline(text: str) -> str:
    text = html.escape(text, quote=False)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", text)
    return re.sub(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])", r"<em>\1</em>", text)


def to_html(markdown: str, title: str = "memlib") -> str:
    """A standalone, printable HTML page of the handout's Markdown (headings, paragraphs, lists, tables, bold,
    italics, code)."""
    out, para, items, table = [], [], [], []

    def flush():
        if para:
            out.append(f"<p>{_inline(' '.join(para))}</p>")
            para.clear()
        if items:
            out.append("<ol>" + "".join(f"<li>{_inline(i)}</li>" for i in items) + "</ol>")
            items.clear()
        if table:
            rows = [r for r in table if not re.match(r"^\|[-|: ]+\|$", r)]
            cells = [[c.strip() for c in r.strip("|").split("|")] for r in rows]
            head = "".join(f"<th>{_inline(c)}</th>" for c in cells[0])
            body = "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>" for r in cells[1:])
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
            table.clear()

    for line in markdown.splitlines():
        m = re.match(r"^(#{1,4}) (.*)$", line)
        if m:
            flush()
            out.append(f"<h{len(m.group(1))}>{_inline(m.group(2))}</h{len(m.group(1))}>")
        elif line.startswith("|"):
            if para or items:
                flush()
            table.append(line.strip())
        elif re.match(r"^\d+\. ", line):
            if para or table:
                flush()
            items.append(line.split(". ", 1)[1])
        elif not line.strip():
            flush()
        else:
            para.append(line.strip())
    flush()
    style = ("body{font-family:sans-serif;max-width:48em;margin:2em auto;line-height:1.45}"
             "table{border-collapse:collapse}td,th{border:1px solid #999;padding:.2em .5em;text-align:left}"
             "h2{page-break-after:avoid;margin-top:1.6em}code{font-size:.95em}")
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body>\n" + "\n".join(out) + "\n</body></html>\n")


def write_quiz(topic, seed: int, n: int, out, key=None, interview: int = 0) -> list[Path]:
    """Write the handout to `out` and the answer key to `key` (Markdown, or HTML when the name ends in .html);
    returns the paths written."""
    sheet, answers = handout(topic, seed, n, interview)
    written = []
    for text, target in ((sheet, out), (answers, key)):
        if target is None:
            continue
        target = Path(target)
        if target.suffix and target.suffix.lower() not in (".md", ".markdown", ".txt", ".html", ".htm"):
            raise ValueError(f"{target.name}: write the quiz as .md (Markdown) or .html (a printable page); "
                             f"{target.suffix} is not a format memlib writes")
        if not target.parent.is_dir():
            raise ValueError(f"the folder {target.parent} does not exist: create it, or write the file elsewhere")
        if target.suffix.lower() in (".html", ".htm"):
            text = to_html(text, text.splitlines()[0].lstrip("# "))
        target.write_text(text, encoding="utf-8")
        written.append(target)
    return written


# --- the class report --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Skipped:
    file: str
    reason: str


@dataclass
class ExerciseStats:
    exercise: str
    title: str
    kind: str
    class_size: int  # learners counted
    tried: int = 0  # learners with a graded attempt (or an open answer submitted)
    passed: int = 0  # learners whose best attempt is correct (auto-graded exercises)
    attempts: int = 0  # graded attempts, summed over the class
    hints: int = 0  # hints shown, summed over the class
    hint_users: int = 0  # learners who asked for at least one hint
    self_points: int = 0  # open questions: points the learners marked themselves, summed
    self_total: int = 0  # and the points they could have marked
    slips: Counter = field(default_factory=Counter)  # named slip -> times the grader diagnosed it

    @property
    def auto_graded(self) -> bool:
        return self.kind != "SelfAssessed"

    @property
    def pass_rate(self) -> float | None:
        """Passed over tried (None when nobody tried); open questions: self-assessed points over points possible."""
        if not self.auto_graded:
            return self.self_points / self.self_total if self.self_total else None
        return self.passed / self.tried if self.tried else None

    def commonest_slips(self, k: int = 3) -> list[tuple[str, int]]:
        return sorted(self.slips.items(), key=lambda kv: (-kv[1], kv[0]))[:k]


@dataclass
class ClassReport:
    folder: str
    learners: dict[str, str]  # learner -> the file counted for them
    skipped: list[Skipped]
    exercises: list[ExerciseStats]
    notes: list[str] = field(default_factory=list)  # what was read but ignored (ids this memlib does not know)

    def rows(self) -> list[dict]:
        out = []
        for s in self.exercises:
            rate = s.pass_rate
            out.append({"exercise": s.exercise, "title": s.title, "kind": s.kind, "learners": s.class_size,
                        "tried": s.tried, "passed": s.passed if s.auto_graded else "",
                        "pass_rate_percent": "" if rate is None else round(100 * rate, 1),
                        "attempts": s.attempts, "attempts_per_learner": round(s.attempts / s.tried, 2) if s.tried else "",
                        "hints": s.hints, "hint_users": s.hint_users,
                        "self_points": s.self_points if not s.auto_graded else "",
                        "self_total": s.self_total if not s.auto_graded else "",
                        "commonest_slips": "; ".join(f"{name} ({n})" for name, n in s.commonest_slips())})
        return out

    def table(self) -> str:
        """The report as Markdown: who was counted, what was refused and why, then one row per exercise."""
        lines = [f"**Class report** of {self.folder}: {len(self.learners)} learner(s) counted, "
                 f"{len(self.skipped)} file(s) refused."]
        if self.skipped:
            lines += ["", "Refused (nothing else was dropped; fix or re-export these and run the report again):", ""]
            lines += [f"- `{s.file}`: {s.reason}" for s in self.skipped]
        if self.notes:
            lines += [""] + [f"- note: {n}" for n in self.notes]
        lines += ["", "| exercise | tried | passed | pass rate | attempts (per learner) | hints (learners) | "
                      "commonest named slips |", "|---|---|---|---|---|---|---|"]
        for s, r in zip(self.exercises, self.rows()):
            rate = "—" if r["pass_rate_percent"] == "" else f"{r['pass_rate_percent']:.0f}%"
            if not s.auto_graded:
                rate += " (self-marked points)" if s.self_total else ""
            per = f" ({r['attempts_per_learner']:.1f})" if s.tried else ""
            lines.append(f"| {s.exercise} {s.title} | {s.tried} of {s.class_size} | "
                         f"{s.passed if s.auto_graded else 'open'} | {rate} | {s.attempts}{per} | "
                         f"{s.hints} ({s.hint_users}) | {r['commonest_slips'] or '—'} |")
        return "\n".join(lines)

    def _repr_markdown_(self) -> str:
        return self.table()

    def __str__(self) -> str:
        return self.table()

    def to_csv(self, path) -> Path:
        """One row per exercise (pass rate in percent; slips as 'name (count); ...'), UTF-8."""
        path = Path(path)
        if not path.parent.is_dir():
            raise ValueError(f"the folder {path.parent} does not exist: create it, or write the CSV elsewhere")
        rows = self.rows()
        fields = list(rows[0]) if rows else ["exercise"]
        with path.open("w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            w.writerows(rows)
        return path

    def figure(self):
        """A matplotlib Figure (no pyplot state touched): pass rate per exercise (bars labelled with how many
        learners tried; open questions in grey, their self-marked points), then attempts and hints per learner
        who tried."""
        try:
            from matplotlib.figure import Figure
        except ImportError:
            raise ValueError("the chart needs matplotlib: pip install matplotlib (the table and CSV do not)") from None
        stats = [s for s in self.exercises if s.tried]
        names = [s.exercise for s in stats]
        fig = Figure(figsize=(max(6.0, 0.55 * len(stats) + 2), 6.5), layout="constrained")
        top, bottom = fig.subplots(2, 1, sharex=True)
        rates = [100 * (s.pass_rate or 0) for s in stats]
        bars = top.bar(names, rates, color=["#4c72b0" if s.auto_graded else "#999999" for s in stats])
        for bar, s in zip(bars, stats):
            top.annotate(f"{s.tried}", (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center",
                         va="bottom", fontsize=8)
        top.set_ylim(0, 110)
        top.set_ylabel("pass rate (%)")
        top.set_title(f"{len(self.learners)} learners: pass rate per exercise\n(above each bar: learners who tried; "
                      "grey: open questions, self-marked points)", fontsize=9)
        x = list(range(len(stats)))
        w = 0.4
        bottom.bar([i - w / 2 for i in x], [s.attempts / s.tried for s in stats], w, label="attempts")
        bottom.bar([i + w / 2 for i in x], [s.hints / s.tried for s in stats], w, label="hints shown")
        bottom.set_ylabel("per learner who tried")
        bottom.set_xticks(x, names, rotation=60, fontsize=8)
        bottom.legend(fontsize=8)
        return fig

    def chart(self, path) -> Path:
        """The figure as a PNG file (needs matplotlib)."""
        path = Path(path)
        if not path.parent.is_dir():
            raise ValueError(f"the folder {path.parent} does not exist: create it, or write the chart elsewhere")
        self.figure().savefig(path, dpi=120)
        return path


def _read_export(path: Path) -> tuple[dict | None, str]:
    """(the export's data, "") or (None, why the file is refused)."""
    try:
        size = path.stat().st_size
    except OSError as e:
        return None, f"could not be read ({e.strerror or e})"
    if size > MAX_FILE_BYTES:
        return None, f"{size / 2**20:.1f} MiB is far larger than an exported progress file (a few kB): not one"
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None, "damaged: not UTF-8 text (an export_progress() file is JSON)"
    except OSError as e:
        return None, f"could not be read ({e.strerror or e})"
    try:
        data = json.loads(text)
    except ValueError as e:
        return None, f"damaged: not valid JSON ({e})"
    except RecursionError:
        return None, "damaged: nested too deeply to be an exported progress file"
    if not isinstance(data, dict) or not isinstance(data.get("exercises"), dict):
        shape = type(data).__name__ if not isinstance(data, dict) else (
            f"'exercises' is {type(data.get('exercises')).__name__}" if "exercises" in data else "no 'exercises'")
        return None, (f"wrong schema: an export_progress() file is an object with an 'exercises' object "
                      f"({shape})")
    version = data.get("version", progress.VERSION)
    if type(version) is not int or version > progress.VERSION:
        return None, (f"written by a newer memlib (format version {version!r}; this one reads {progress.VERSION}): "
                      "upgrade memlib to read it")
    bad = []
    for key, raw in data["exercises"].items():
        _, dropped = progress.clean_entry(raw)
        if dropped or len(key) > 10:
            bad.append(key[:12])
    if bad:
        return None, (f"damaged: {len(bad)} entr{'y fails' if len(bad) == 1 else 'ies fail'} progress's validation "
                      f"({', '.join(sorted(bad)[:5])}{', ...' if len(bad) > 5 else ''}): ask for a fresh export")
    learner = data.get("learner")
    if learner is not None and (not isinstance(learner, str) or not learner.strip()):
        return None, f"wrong schema: 'learner' must be a name, got {learner!r}"
    return data, ""


def _learner_of(path: Path, data: dict) -> str:
    return (data.get("learner") or path.stem).strip()


def _recency(data: dict) -> tuple:
    """Which of one learner's exports is the latest: its exported_at, else the most recorded work (progress only
    grows), else the first file by name."""
    stamp = data.get("exported_at") if isinstance(data.get("exported_at"), str) else ""
    work = sum(e.get("attempts", 0) + e.get("hints", 0) + sum(e.get("slips", {}).values())
               for e in data["exercises"].values())
    return (stamp, work)


def class_report(folder) -> ClassReport:
    """Read a folder of export_progress() files (one per learner) and count, per exercise, the learners who tried
    and passed, their attempts and hints and the named slips the grader diagnosed. Damaged, wrong-schema and
    duplicate files are refused with their reason (ClassReport.skipped); the rest are counted."""
    if not isinstance(folder, (str, os.PathLike)) or not str(folder).strip():
        raise ValueError(f"folder must be the path of a folder of exported progress files, got {folder!r}")
    root = Path(folder)
    if not root.is_dir():
        raise ValueError(f"{root} is not a folder: give the folder the learners' exported .json files are in")
    skipped: list[Skipped] = []
    good: dict[str, list[tuple[tuple, Path, dict, str]]] = {}  # learner (case-folded) -> candidates
    copies: dict[str, tuple[str, str]] = {}  # an export's time and records -> (first file, its learner)
    for path in sorted(root.iterdir()):
        if path.is_dir():
            skipped.append(Skipped(path.name, "a folder (sub-folders are not read: move its files up)"))
            continue
        if path.suffix.lower() != ".json":
            skipped.append(Skipped(path.name, "not a .json file (export_progress() writes .json)"))
            continue
        data, why = _read_export(path)
        if data is None:
            skipped.append(Skipped(path.name, why))
            continue
        learner = _learner_of(path, data)
        if isinstance(data.get("exported_at"), str):  # the same export under two names: a copy, counted once
            digest = hashlib.sha256(json.dumps([data["exported_at"], data["exercises"]], sort_keys=True).encode())
            first = copies.setdefault(digest.hexdigest(), (path.name, learner))
            if first[0] != path.name and first[1].casefold() != learner.casefold():
                skipped.append(Skipped(path.name, f"duplicate: the same export (time and records) as {first[0]} "
                                                  f"(learner {first[1]!r}), which is counted"))
                continue
        good.setdefault(learner.casefold(), []).append((_recency(data), path, data, learner))
    learners: dict[str, str] = {}
    counted: list[dict] = []
    for _, candidates in sorted(good.items()):
        candidates.sort(key=lambda c: c[0], reverse=True)  # stable: of equal exports, the first file by name
        (_, keep, data, learner), rest = candidates[0], candidates[1:]
        learners[learner] = keep.name
        counted.append(data)
        for _, path, _, _ in rest:
            skipped.append(Skipped(path.name, f"duplicate: learner {learner!r} again; their latest export, "
                                              f"{keep.name}, is counted"))
    skipped.sort(key=lambda s: s.file)
    return ClassReport(str(folder), learners, skipped, *_tally(counted))


def _tally(exports: list[dict]) -> tuple[list[ExerciseStats], list[str]]:
    n = len(exports)
    stats: dict[str, ExerciseStats] = {}
    unknown: Counter = Counter()
    for data in exports:
        for eid, raw in data["exercises"].items():
            if eid not in EXERCISES:
                unknown[eid] += 1
                continue
            ex = EXERCISES[eid]
            e, _ = progress.clean_entry(raw)
            s = stats.setdefault(eid, ExerciseStats(eid, ex.title, type(ex).__name__, n))
            tried = e.get("attempts", 0) > 0 or e.get("best") in ("correct", "incorrect") or e.get("submitted", False)
            s.tried += tried
            s.passed += e.get("best") == "correct"
            s.attempts += e.get("attempts", 0)
            s.hints += e.get("hints", 0)
            s.hint_users += e.get("hints", 0) > 0
            if isinstance(ex, SelfAssessed) and "self_points" in e:
                s.self_points += e["self_points"]
                s.self_total += e.get("self_total", len(ex.rubric))
            s.slips.update(e.get("slips", {}))
    order = {eid: i for i, eid in enumerate(EXERCISES)}
    notes = [f"{unknown[eid]} file(s) hold exercise {eid!r}, which this memlib does not have (a newer or older "
             "edition): not counted" for eid in sorted(unknown)]
    return sorted(stats.values(), key=lambda s: order[s.exercise]), notes


# --- the commands `memlib quiz` and `memlib class-report` (their flags are declared in memlib/cli.py) -------------
def run_command(a) -> int:
    """Run a parsed `memlib quiz` or `memlib class-report` command line; returns the exit status. A file that cannot
    be written is a ValueError naming it (the CLI prints one line)."""
    try:
        return _run(a)
    except OSError as e:
        raise ValueError(f"could not write {e.filename or 'the output'}: {e.strerror or e}") from None


def _run(a) -> int:
    if a.command == "quiz":
        if a.out is None:
            sheet, answers = handout(a.topic, a.seed, a.n, a.interview)
            print(sheet)
            if a.key is None:
                return 0
        written = write_quiz(a.topic, a.seed, a.n, a.out, a.key, a.interview)
        for path in written:
            print(f"wrote {path}")
        return 0
    report = class_report(a.folder)
    print(report.table())
    if a.csv:
        print(f"wrote {report.to_csv(a.csv)}")
    if a.chart:
        print(f"wrote {report.chart(a.chart)}")
    return 0
