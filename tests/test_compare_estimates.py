"""tools/compare_estimates.py, the guard of a refactoring (issue 44): a snapshot is deterministic, and a
change anywhere in it is listed, not lost."""

from __future__ import annotations

import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import compare_estimates as ce  # noqa: E402


def test_two_snapshots_of_the_same_code_are_byte_identical():
    a, b = ce.snapshot(notebooks=False), ce.snapshot(notebooks=False)
    assert ce.dumps(a) == ce.dumps(b)
    est = a["estimates"]
    assert len([k for k in est if k.startswith("case:")]) >= 90
    assert len([k for k in est if k.startswith("published:")]) >= 90
    out = io.StringIO()
    assert ce.compare(a, b, out) == 0 and out.getvalue().startswith("identical")


def test_a_changed_figure_is_listed_with_its_place():
    before = {"estimates": {"case:x": {"peak_bytes": 100, "fields": {"moments": [{"total": 1}, {"total": 2}]}}},
              "notebooks": {"n.ipynb": {"inline": [["a", "'1 GB'"]], "checked_outputs": [["x\n"]]}}}
    after = {"estimates": {"case:x": {"peak_bytes": 101, "fields": {"moments": [{"total": 1}, {"total": 3}]}},
                           "case:y": {"peak_bytes": 5}},
             "notebooks": {"n.ipynb": {"inline": [["a", "'2 GB'"]], "checked_outputs": [["x\n"]]}}}
    out = io.StringIO()
    assert ce.compare(before, after, out) == 4
    text = out.getvalue()
    for where in ("estimates/case:x/peak_bytes: 100 -> 101", "estimates/case:x/fields/moments[1]/total: 2 -> 3",
                  "estimates/case:y: added", "notebooks/n.ipynb/inline[0][1]"):
        assert where in text, text


def test_stream_chunks_are_joined_and_errors_kept():
    outputs = [{"output_type": "stream", "text": ["a\n"]}, {"output_type": "stream", "text": "b\n"},
               {"output_type": "display_data", "data": {"text/plain": ["<x>"]}},
               {"output_type": "stream", "text": "c"}, {"output_type": "error", "ename": "ValueError", "evalue": "v"}]
    assert ce._text(outputs) == ["a\nb\n", "<x>", "c", "ValueError: v"]


def test_floats_keep_every_digit():
    assert ce.plain(0.1 + 0.2) == 0.30000000000000004 and ce.plain(float("inf")) == "inf"
