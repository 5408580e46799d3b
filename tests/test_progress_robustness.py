"""Exercise progress that a learner does not lose: a read-only notebook folder keeps its passes in the user data
folder across restarts, a later slip never replaces a pass there, two processes writing the same file keep both
sets of entries, and bad paths or ids are messages, not tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from memlib.learn import grading
from memlib.learn.exercises import progress


def test_a_read_only_folder_keeps_passes_across_a_restart_and_a_later_slip(tmp_path, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    monkeypatch.setattr(progress, "_writable", lambda p: not str(p).startswith(str(ro)))  # even for root
    monkeypatch.setenv("MEMLIB_PROGRESS", str(ro / ".memlib_progress.json"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    grading.reset()
    grading.check("00.1", "13.48 GB")  # LLaMA-7B's bf16 weights: 6,738,415,616 x 2 B
    grading.reset()  # a kernel restart
    assert progress.entry("00.1")["best"] == "correct"
    grading.check("00.1", "26.95 GB")  # a slip after the restart
    grading.reset()
    saved = json.loads((tmp_path / "data" / "memlib" / "memlib_progress.json").read_text())["exercises"]
    assert saved["00.1"]["best"] == "correct" and saved["00.1"]["last"] == "incorrect"
    assert not (ro / ".memlib_progress.json").exists()


def test_two_processes_writing_one_file_lose_nothing(tmp_path):
    f = tmp_path / "shared.json"
    script = textwrap.dedent(f"""
        import os, sys
        os.environ["MEMLIB_PROGRESS"] = {str(f)!r}
        from memlib.learn.exercises import progress
        for i in range(40):
            progress.update(f"{{sys.argv[1]}}.{{i}}", attempts=1)
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, tag]) for tag in ("a", "b", "c")]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    entries = json.loads(f.read_text())["exercises"]
    assert len(entries) == 3 * 40


def test_export_and_import_with_bad_paths_say_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MEMLIB_PROGRESS", "off")
    grading.reset()
    assert grading.import_progress(None) == 0
    assert grading.export_progress(None) is None
    assert grading.export_progress(tmp_path / "missing" / "x.json") is None
    out = capsys.readouterr().out
    assert "needs the path" in out and "needs a file name" in out and "does not exist" in out


def test_a_float_id_is_refused_not_read_as_another_exercise():
    fb = grading.grade(1.10, "1 GB")
    assert fb.status == "unknown exercise" and "'1.1'" in fb.message and "01.10" in fb.message
