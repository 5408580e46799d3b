"""Issue 20, "reason, not recall": at least half of each notebook's numeric exercises ask for a
figure its topic notebook (core page and deep dive) does not print, so the learner derives it
from the notebook's method rather than copying it.

A figure counts as printed when its value, rounded to 3 significant figures in the exercise's
unit (GB exercises also in GiB, TB and TiB; byte counts also in full with thousands separators),
appears as a number in a stored output, a markdown cell or a stored inline value of the notebook.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from memlib.learn.exercises import NOTEBOOKS, for_notebook
from memlib.learn.exercises.kinds import Numeric, SpotError

ROOT = Path(__file__).resolve().parents[1]
NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])\d+(?:\.\d+)?")


def _cell_texts(cell: dict):
    yield "".join(cell.get("source", ""))
    for out in cell.get("outputs", []):
        if "text" in out:
            yield "".join(out["text"])
        for mime in ("text/plain", "text/markdown", "text/html"):
            if mime in out.get("data", {}):
                yield "".join(out["data"][mime])
    for expr in cell.get("metadata", {}).get("user_expressions", []):
        data = expr.get("result", {}).get("data", {})
        yield "".join(data.get("text/plain", ""))


def printed_numbers(slug: str) -> set[float]:
    """Every number the notebook's pages show a reader (commas dropped)."""
    found: set[float] = set()
    for path in sorted((ROOT / "notebooks").glob(f"{slug}*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            for text in _cell_texts(cell):
                found.update(float(m.replace(",", "")) for m in NUMBER.findall(text))
    return found


def _sig3(x: float) -> float:
    if x == 0 or not math.isfinite(x):
        return x
    return round(x, 2 - int(math.floor(math.log10(abs(x)))))


def renderings(ex: Numeric) -> set[float]:
    """The expected value as a reader would see it printed (3 significant figures)."""
    v = float(ex.expected())
    if ex.unit in ("bytes", "GB", "GiB"):
        forms = {v / 1e9, v / 2**30, v / 1e12, v / 2**40, v / 1e6, v / 2**20}
        full = {float(round(v))} if v >= 1e4 else set()
    else:
        forms, full = {v}, set()
    return {_sig3(f) for f in forms if abs(f) >= 1e-3} | full


def is_printed(ex: Numeric, numbers: set[float]) -> bool:
    want = renderings(ex)
    return any(_sig3(n) in want or n in want for n in numbers)


def numeric_exercises(key: str) -> list[Numeric]:
    return [ex for ex in for_notebook(key) if isinstance(ex, Numeric) and not isinstance(ex, SpotError)]


# Notebooks whose exercises still mostly repeat printed figures (issue 20, "reason, not recall");
# each leaves this set when its exercises are re-set. strict: a fixed notebook fails here until removed.
NOT_YET: set[str] = set()


@pytest.mark.parametrize("key", [
    pytest.param(k, marks=pytest.mark.xfail(strict=True, reason="issue 20: exercises repeat printed figures"))
    if k in NOT_YET else k for k in sorted(NOTEBOOKS)])
def test_half_the_numeric_exercises_ask_for_a_figure_the_notebook_does_not_print(key):
    exercises = numeric_exercises(key)
    if not exercises:
        pytest.fail(f"notebook {key} has no numeric exercise")
    numbers = printed_numbers(NOTEBOOKS[key])
    printed = [ex.id for ex in exercises if is_printed(ex, numbers)]
    fresh = len(exercises) - len(printed)
    assert fresh * 2 >= len(exercises), (
        f"notebook {key}: {len(printed)} of {len(exercises)} numeric exercises ask for a figure the notebook "
        f"prints ({', '.join(printed)}); change their setups (model, GPU, sequence, count, precision)")


def test_the_check_can_fail():
    """A figure copied from the notebook is found (the check is not vacuous)."""
    key = "00"
    numbers = printed_numbers(NOTEBOOKS[key])
    weights = next(ex for ex in numeric_exercises(key) if ex.id == "00.1")  # LLaMA-7B bf16 weights, printed in 00
    assert is_printed(weights, numbers)
