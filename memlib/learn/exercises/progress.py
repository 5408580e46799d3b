"""Progress that survives a kernel restart: a small JSON file in the learner's working directory.

    .memlib_progress.json   {"version": 1, "exercises": {"01.3": {"best": "correct", ...}}}

An entry holds: best and last ("correct", "incorrect", "submitted"; last also "marked"), attempts, hints
(how many shown), self_points and self_total (open questions), submitted, and slips: how many times each
named slip was diagnosed ({"forgot the fp32 master copy": 2}; added after version 1's first release: a
file without it reads as before, and the teacher's class report (memlib.learn.classroom) counts them).

The best attempt counts: once an exercise is passed it stays passed (a later slip is shown as the
last attempt, never as a fail). Self-assessed points keep the best marking. Set the environment
variable MEMLIB_PROGRESS to another path, or to "off" to keep progress in memory only. Writes
re-read the file and merge, so two notebooks in one folder do not erase each other's progress.

Every field of every entry is validated when the file is read: a file that is not this JSON, or an
entry with a field of the wrong type ({"exercises": []}, {"hints": null}, {"self_points": "3"},
{"attempts": "three"}), is copied to `.memlib_progress.json.damaged` once, the readable entries are
kept, and one message says so. An unwritable folder falls back to the user data folder
($XDG_DATA_HOME/memlib, ~/.local/share/memlib; %APPDATA%\\memlib on Windows), and to memory only when
that fails too. On Binder, progress ends with the session: export_progress() writes a file to
download, import_progress(path) merges one back.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path

FILENAME = ".memlib_progress.json"
ENV = "MEMLIB_PROGRESS"
VERSION = 1
_RANK = {"": 0, "submitted": 1, "incorrect": 1, "correct": 2}
_COUNTS = ("attempts", "hints", "self_points", "self_total")  # non-negative whole numbers
_STATES = {"best": ("", "correct", "incorrect", "submitted"), "last": ("", "correct", "incorrect", "submitted", "marked")}
_MAX_COUNT = 10**6
_MAX_SLIPS, _MAX_SLIP_NAME = 50, 80  # named slips kept per exercise; characters of a slip's name
_FALLBACK: dict[str, Path | None] = {}  # the unwritable path -> where progress goes instead

_MEMORY: dict[str, dict] = {}  # path (or "") -> {exercise id -> entry}
_WARNED: set[str] = set()


def path() -> Path | None:
    """Where progress is kept now (None: memory only)."""
    setting = os.environ.get(ENV, "").strip()
    if setting.lower() in ("off", "none", "0", "false"):
        return None
    chosen = Path(setting) if setting else Path.cwd() / FILENAME
    if str(chosen) not in _FALLBACK and not _writable(chosen):
        # a read-only folder: progress lives in the user data folder, also after a restart (where the last
        # session saved it), not in memory until the first failed write
        _FALLBACK[str(chosen)] = _fallback_file()
        _say_once(f"fallback:{chosen}", f"the folder {chosen.parent} cannot be written: exercise progress is saved in "
                                        f"{_fallback_file()} instead.")
    return _FALLBACK.get(str(chosen), chosen)


def _writable(p: Path) -> bool:
    """Whether progress can be written beside p: a probe file is created and removed there (os.access says yes
    to root on a read-only mount, and does not know the browser's drive in JupyterLite, where it must stay)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".memlib_probe.", dir=str(p.parent))
    except OSError:
        return False
    os.close(fd)
    try:
        os.unlink(tmp)
    except OSError:
        pass
    return True


def _fallback_file() -> Path:
    return user_data_dir() / FILENAME.lstrip(".")


def user_data_dir() -> Path:
    """The per-user data folder progress falls back to when the notebook's folder is read-only."""
    if os.name == "nt" and os.environ.get("APPDATA"):
        return Path(os.environ["APPDATA"]) / "memlib"
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "memlib"


def on_binder() -> bool:
    return any(os.environ.get(k) for k in ("BINDER_SERVICE_HOST", "BINDER_LAUNCH_HOST", "BINDER_REQUEST"))


def _say_once(key: str, text: str) -> None:
    if key not in _WARNED:
        _WARNED.add(key)
        print(f"ℹ️ {text}")


def clean_entry(raw) -> tuple[dict, bool]:
    """(the valid fields of one stored entry, whether anything had to be dropped)."""
    if not isinstance(raw, dict):
        return {}, True
    out, dropped = {}, False
    for name, value in raw.items():
        if name in _COUNTS and type(value) is int and 0 <= value <= _MAX_COUNT:
            out[name] = value
        elif name in _STATES and isinstance(value, str) and value in _STATES[name]:
            out[name] = value
        elif name == "submitted" and isinstance(value, bool):
            out[name] = value
        elif name == "slips" and _valid_slips(value):
            out[name] = dict(value)
        else:
            dropped = True
    if out.get("self_points", 0) > out.get("self_total", _MAX_COUNT):
        out.pop("self_points")
        dropped = True
    return out, dropped


def _valid_slips(value) -> bool:
    """{slip name: times diagnosed}: names are short strings, counts whole numbers from 1."""
    return isinstance(value, dict) and len(value) <= _MAX_SLIPS and all(
        isinstance(k, str) and 0 < len(k) <= _MAX_SLIP_NAME and type(v) is int and 0 < v <= _MAX_COUNT
        for k, v in value.items())


def parse(text: str) -> tuple[dict[str, dict], bool]:
    """(the valid entries of a progress file's text, whether the file was damaged)."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return {}, True
    entries = data.get("exercises", {}) if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        return {}, True
    out, damaged = {}, False
    for key, raw in entries.items():
        rec, dropped = clean_entry(raw)
        damaged = damaged or dropped or not isinstance(key, str) or len(key) > 10
        if rec and isinstance(key, str) and len(key) <= 10:
            out[key] = rec
    return out, damaged


def _key() -> str:
    p = path()
    return str(p.resolve()) if p is not None else ""


def _read(p: Path | None) -> dict[str, dict]:
    """The valid entries of the file; a damaged file is backed up once and said so, never a crash."""
    if p is None:
        return {}
    try:
        if not p.is_file():
            return {}
        text = p.read_text(encoding="utf-8")
    except (OSError, ValueError):
        text = "\0"  # unreadable (or not UTF-8): treated as damaged
    entries, damaged = parse(text)
    if damaged:
        backup = p.with_name(p.name + ".damaged")
        try:
            if not backup.exists():
                shutil.copyfile(p, backup)
            where = f"a copy is in {backup.name}"
        except OSError:
            where = "it could not be copied"
        _say_once(f"damaged:{p}", f"the exercise progress file {p.name} was damaged ({where}); the readable "
                                  f"entries ({len(entries)}) are kept and the file is rewritten at the next check.")
    return entries


def _merge(a: dict, b: dict) -> dict:
    """One entry from two records of the same exercise: the best of each field."""
    out, _ = clean_entry(a)
    b, _ = clean_entry(b)
    for field, value in b.items():
        mine = out.get(field)
        if field == "best":
            out[field] = value if _RANK.get(value, 0) > _RANK.get(mine, 0) else (mine or value)
        elif field in ("attempts", "hints", "self_points", "self_total"):
            out[field] = max(mine or 0, value)
        elif field == "submitted":
            out[field] = bool(mine) or bool(value)
        elif field == "slips":  # counts, like attempts: the larger of the two records of each slip
            merged = dict(mine or {})
            for name, count in value.items():
                merged[name] = max(merged.get(name, 0), count)
            out[field] = merged
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
        with _locked(p):  # another process's write between our read and our replace would be lost
            on_disk = _read(p)
            for eid, rec in on_disk.items():
                mine[eid] = _merge(rec, mine[eid]) if eid in mine else rec
            _write(p, mine)
    if on_binder():
        _say_once("binder", "on Binder your progress ends with the session: export_progress() writes a file to "
                            "download, import_progress(path) reads it back next time.")
    return dict(mine[exercise_id])


@contextlib.contextmanager
def _locked(p: Path):
    """An exclusive lock on p's lock file (POSIX flock) for a read-merge-write; where there is no flock (Windows,
    the browser's Pyodide) or the folder cannot hold the lock file, no lock (one writer is the common case)."""
    try:
        import fcntl
        flock = fcntl.flock  # Pyodide's fcntl has none (and its browser drive has one writer)
        fd = os.open(str(p.with_name(p.name + ".lock")), os.O_CREAT | os.O_RDWR, 0o644)
    except (ImportError, AttributeError, OSError):
        yield
        return
    try:
        try:
            flock(fd, fcntl.LOCK_EX)
        except OSError:  # a file system without locks (emscripten's): one writer is the common case
            pass
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _write(p: Path, data: dict) -> None:
    text = json.dumps({"version": VERSION, "exercises": data}, indent=1, sort_keys=True)
    tmp = None
    try:
        if p == _fallback_file():  # the user data folder may not exist yet
            p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".memlib_progress.", dir=str(p.parent))
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text + "\n")
        os.replace(tmp, p)
    except OSError as e:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        fallback = _fallback_file()
        if p != fallback and str(p) not in _FALLBACK.values():
            _FALLBACK[str(p)] = fallback
            try:
                fallback.parent.mkdir(parents=True, exist_ok=True)
                merged = _read(fallback)
                for eid, rec in data.items():  # entry by entry: a pass kept there survives a later slip here
                    merged[eid] = _merge(merged[eid], rec) if eid in merged else rec
                _MEMORY[str(fallback.resolve())] = merged
                _write(fallback, merged)
                _say_once(f"fallback:{p}", f"could not save exercise progress beside the notebook ({e}); it is "
                                           f"saved in {fallback} instead.")
                return
            except OSError:
                pass
        _FALLBACK[str(p)] = None
        if str(p) not in _WARNED:
            _WARNED.add(str(p))
            warnings.warn(f"could not save exercise progress to {p} ({e}); it is kept for this session only",
                          stacklevel=3)


def export_progress(to: str | os.PathLike = "memlib_progress_export.json", learner: str | None = None) -> Path:
    """Write every exercise's record to a file (to download from Binder, or to hand in: the teacher's
    memlib.learn.classroom.class_report reads a folder of them); returns its path (None, with a message, when it
    cannot be written). `learner` (a name or a class id) is written into the file with the time of the export, so
    a class report counts each learner once, from their latest export; without it the file's name stands for the
    learner."""
    if learner is not None and (not isinstance(learner, str) or not learner.strip() or len(learner) > 100):
        print(f"⚠️ export_progress's learner must be a name of 1 to 100 characters, e.g. learner='Ana Li'; "
              f"got {learner!r}")
        return None
    if not isinstance(to, (str, os.PathLike)) or not str(to).strip():
        print(f"⚠️ export_progress needs a file name, e.g. export_progress('my_progress.json'); got {to!r}")
        return None
    target = Path(to)
    if not target.parent.is_dir():
        print(f"⚠️ the folder {target.parent} does not exist: create it first, or export to a file in this folder")
        return None
    try:
        import datetime
        data = {"version": VERSION, "exercises": entries(),
                "exported_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
        if learner is not None:
            data["learner"] = learner.strip()
        target.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    except OSError as e:
        print(f"⚠️ could not write {target}: {e}")
        return None
    print(f"ℹ️ progress written to {target.resolve()}: download it, and next time import_progress({str(target)!r}).")
    return target


def import_progress(source: str | os.PathLike) -> int:
    """Merge a file written by export_progress() into the current progress; returns how many entries it read."""
    if not isinstance(source, (str, os.PathLike)) or not str(source).strip():
        print(f"⚠️ import_progress needs the path of a file export_progress() wrote; got {source!r}")
        return 0
    try:
        text = Path(source).read_text(encoding="utf-8")
    except (OSError, ValueError) as e:
        print(f"⚠️ could not read {source}: {e}")
        return 0
    incoming, damaged = parse(text)
    mine = entries()
    for eid, rec in incoming.items():
        mine[eid] = _merge(mine.get(eid, {}), rec)
    p = path()
    if p is not None and incoming:
        _write(p, mine)
    print(f"ℹ️ read {len(incoming)} exercise record(s) from {source}"
          + ("; some entries were damaged and skipped" if damaged else "") + ".")
    return len(incoming)


def forget() -> None:
    """Drop what this process remembers (the file stays)."""
    _MEMORY.clear()
    _FALLBACK.clear()
    _WARNED.clear()
