"""The graded exercises: one module per topic notebook (ex00.py, ex01.py, ...), the way Kaggle's
learntools lays out its exercise sets, and this registry over them.

Each module `exNN.py` defines
    NOTEBOOK  = "NN_slug"            # the topic notebook it accompanies (solutions/NN_slug_solutions.py)
    EXERCISES = [Numeric(...), ...]  # ids "NN.1", "NN.2", ... in order
The registry finds every such module in this package, so adding notebook 04 is adding
`ex04.py` (and `solutions/04_..._solutions.py`); nothing here changes.

The kinds (Numeric, SpotError, Choice, MultiChoice, Implement, SelfAssessed) live in
memlib.learn.exercises.kinds; the grading (check, hint, solution, score, mark) in memlib.learn.grading.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
import re

from memlib.learn.exercises.kinds import (DIFFICULTIES, Choice, Exercise, Figure, Implement, MultiChoice, Numeric, Option,
                                    SelfAssessed, Slip, SpotError, render)

_MODULE = re.compile(r"^ex(\d\d)$")


def _load() -> tuple[dict[str, str], dict[str, Exercise]]:
    notebooks: dict[str, str] = {}
    exercises: dict[str, Exercise] = {}
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if _MODULE.match(m.name))
    for name in names:
        key = _MODULE.match(name).group(1)
        module = importlib.import_module(f"{__name__}.{name}")
        slug = getattr(module, "NOTEBOOK", "")
        if not slug.startswith(f"{key}_"):
            raise ValueError(f"{name}.NOTEBOOK must name the notebook '{key}_...', got {slug!r}")
        notebooks[key] = slug
        for i, ex in enumerate(module.EXERCISES, 1):
            if ex.id != f"{key}.{i}":
                raise ValueError(f"{name}: exercise {i} has id {ex.id!r}; ids run {key}.1, {key}.2, ... in order")
            exercises[ex.id] = ex
    return notebooks, exercises


NOTEBOOKS, EXERCISES = _load()


def notebook_key(notebook) -> str | None:
    """"01", "1", 1 and "01_65b_on_4x_v100" all mean notebook "01"; None if it is not one."""
    text = str(notebook).strip()
    m = re.match(r"^(\d{1,2})(?:_|$)", text)
    if m:
        key = m.group(1).zfill(2)
        return key if key in NOTEBOOKS else None
    return next((k for k, slug in NOTEBOOKS.items() if slug == text), None)


def get_exercise(exercise_id) -> Exercise:
    """The exercise with this id ("01.3", also "1.3"); KeyError with close ids if unknown. A float is refused:
    1.10 and 1.1 are the same float, so check(1.10, ...) cannot mean 01.10."""
    if isinstance(exercise_id, float):
        raise KeyError(f"exercise ids are strings: write check('{exercise_id}', ...) in quotes (the number "
                       f"{exercise_id!r} cannot tell 01.1 from 01.10)")
    key = str(exercise_id).strip()[:40]
    m = re.match(r"^(\d{1,2})\.(\d+)$", key)
    if m:
        key = f"{m.group(1).zfill(2)}.{int(m.group(2))}"
    if key in EXERCISES:
        return EXERCISES[key]
    if key.lower().startswith("p"):  # a practice question ("p03.17"): rebuilt from its id
        from memlib.learn.exercises import practice
        try:
            built = practice.from_id(key.lower())
        except ValueError:
            built = None
        if built is not None:
            return built
    close = difflib.get_close_matches(key, list(EXERCISES), n=3)
    raise KeyError(f"unknown exercise {key!r}" + (f"; did you mean {', '.join(close)}?" if close else
                                                  f"; ids look like '01.3' ({len(EXERCISES)} exist)"))


def for_notebook(notebook) -> list[Exercise]:
    key = notebook_key(notebook)
    return [ex for ex in EXERCISES.values() if ex.notebook == key]


__all__ = ["DIFFICULTIES", "NOTEBOOKS", "EXERCISES", "Exercise", "Numeric", "SpotError", "Choice", "MultiChoice",
           "Implement", "SelfAssessed", "Slip", "Option", "Figure", "render", "notebook_key", "get_exercise",
           "for_notebook"]
