"""Generated documents are up to date with memlib."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_cheatsheet_is_current():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "make_cheatsheet.py"), "--check"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def test_cheatsheet_cites_its_sources():
    text = (ROOT / "docs" / "cheatsheet.md").read_text(encoding="utf-8")
    for source in ("Rajbhandari et al. 2020", "Korthikanti et al. 2022", "QLoRA", "Hu et al. 2021", "PaLM"):
        assert source in text
