"""Progress that survives a kernel restart: a small JSON file in the learner's working directory.

    .memlib_progress.json   {"version": 1, "exercises": {"01.3": {"best": "correct", ...}}}

The best attempt counts: once an exercise is passed it stays passed (a later slip is shown as the
last attempt, never as a fail). Self-assessed points keep the best marking. Set the environment
variable MEMLIB_PROGRESS to another path, or to "off" to keep progress in memory only. Writes
re-read the file and merge, so two notebooks in one folder do not erase each other's progress;
an unwritable folder falls back to memory with one warning.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from pathlib import Path

FILENAME = ".memlib_progress.json"
ENV = "MEMLIB_PROGRESS"
VERSION = 1
_RANK = {"": 0, "submitted": 1, "incorrect": 1, "correct": 2}

_MEMORY: dict[str, dict] = {}  # path (or "") -> {exercise id -> entry}
_WARNED: set[str] = set()


def path() -> Path | None:
    """Where progress is kept now (None: memory only)."""
    setting = os.environ.get(ENV, "").strip()
    if setting.lower() in ("off", "none", "0", "false"):
        return None
    return Path(setting) if setting else Path.cwd() / FILENAME


def _key() -> str:
    p = path()
    return str(p.resolve()) if p is not None else ""


def _read(p: Path | None) -> dict[str, dict]:
    if p is None or not p.exists():
        return {}
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
        entries = data.get("exercises", {}) if isinstance(data, dict) else {}
        return {str(k): v for k, v in entries.items() if isinstance(v, dict)}
    except (OSError, ValueError):
        return {}  # a damaged file is ignored and rewritten, never a crash in the learner's notebook


def _merge(a: dict, b: dict) -> dict:
    """One entry from two records of the same exercise: the best of each field."""
    out = dict(a)
    for field, value in b.items():
        mine = out.get(field)
        if field == "best":
            out[field] = value if _RANK.get(value, 0) > _RANK.get(mine, 0) else (mine or value)
        elif field in ("attempts", "hints", "self_points", "self_total"):
            out[field] = max(int(mine or 0), int(value or 0))
        elif field == "submitted":
            out[field] = bool(mine) or bool(value)
        else:  # "last" and anything else: the most recent writer (b) wins
            out[field] = value
    return out


def entries() -> dict[str, dict]:
    """Every exercise's record for the current location (loaded from the file once, then kept)."""
    key = _key()
    if key not in _MEMORY:
        _MEMORY[key] = _read(path())
    return _MEMORY[key]


def entry(exercise_id: str) -> dict:
    return dict(entries().get(exercise_id, {}))


def update(exercise_id: str, **fields) -> dict:
    """Record new facts about one exercise (merged with what is known) and write the file."""
    mine = entries()
    mine[exercise_id] = _merge(mine.get(exercise_id, {}), fields)
    p = path()
    if p is not None:
        on_disk = _read(p)
        for eid, rec in on_disk.items():
            mine[eid] = _merge(rec, mine[eid]) if eid in mine else rec
        _write(p, mine)
    return dict(mine[exercise_id])


def _write(p: Path, data: dict) -> None:
    text = json.dumps({"version": VERSION, "exercises": data}, indent=1, sort_keys=True)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".memlib_progress.", dir=str(p.parent))
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text + "\n")
        os.replace(tmp, p)
    except OSError as e:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        if str(p) not in _WARNED:
            _WARNED.add(str(p))
            warnings.warn(f"could not save exercise progress to {p} ({e}); it is kept for this session only",
                          stacklevel=3)


def forget() -> None:
    """Drop what this process remembers (the file stays)."""
    _MEMORY.clear()
