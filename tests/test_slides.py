"""Every topic notebook renders as reveal.js slides, one slide per skeleton section at least."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOPICS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("nb", TOPICS, ids=[p.stem for p in TOPICS])
def test_topic_notebook_builds_as_slides(nb, tmp_path):
    r = subprocess.run([sys.executable, "-m", "nbconvert", "--to", "slides", str(nb), "--output-dir", str(tmp_path)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    html = (tmp_path / f"{nb.stem}.slides.html").read_text(encoding="utf-8")
    assert html.count("<section") >= 10, "title + 9 sections should each start a slide (notebooks/STYLE.md)"
    assert "reveal" in html.lower()
