"""Generated documents are up to date with memlib."""

from __future__ import annotations

import re
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


def _sections(text: str) -> dict[str, list[str]]:
    """{"00": [row topics], ...} from the cheat sheet's "## Notebook NN · ..." sections and their "### " rows."""
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        m = re.match(r"## Notebook (\d\d) · ", line)
        if m:
            current = out.setdefault(m.group(1), [])
        elif line.startswith("## "):
            current = None
        elif line.startswith("### ") and current is not None:
            current.append(line[4:])
    return out


def test_cheatsheet_has_rows_for_every_topic_notebook():
    text = (ROOT / "docs" / "cheatsheet.md").read_text(encoding="utf-8")
    sections = _sections(text)
    topics = sorted(p.name[:2] for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert len(topics) >= 8, topics  # 00-07 at least (issue 14)
    for nb in topics:
        assert sections.get(nb), f"notebook {nb} has no section with a row in docs/cheatsheet.md"
    assert set(sections) == set(topics), f"sections for notebooks that do not exist: {set(sections) - set(topics)}"
    # every row has its formula's source, a place in memlib and a worked example
    for block in re.split(r"\n### ", text)[1:]:
        assert "- where: `memlib" in block and "- example: " in block, block[:200]


def test_cheatsheet_covers_notebooks_04_to_07():
    text = (ROOT / "docs" / "cheatsheet.md").read_text(encoding="utf-8")
    sections = _sections(text)
    wanted = {"04": ("Decode speed limit", "PagedAttention block waste", "fp8 / int8 KV cache"),
              "05": ("MLA latent KV vs full K/V", "MoE FLOPs: 6 x active parameters"),
              "06": ("Context parallelism (cp)", "Chunked cross-entropy (Liger)", "Activation offload (torchtune)"),
              "07": ("Training FLOPs of a run: 6ND", "MFU -> GPU-hours", "Chinchilla: 20 tokens per parameter",
                     "Ring all-reduce")}
    for nb, rows in wanted.items():
        for row in rows:
            assert row in sections.get(nb, []), f"{row!r} missing from notebook {nb}'s section"
    # the sources of those formulas, from their papers
    for source in ("Kwon et al. 2023", "Pope et al. 2022", "DeepSeek-V2", "Liu et al. 2023", "Kaplan et al. 2020",
                   "Hoffmann et al. 2022", "Patarasuk & Yuan 2009", "Chowdhery et al. 2022, PaLM, Sec. 4.1"):
        assert source in text, source
    # DeepSeek-V3's MLA cache by hand from its config.json (61 layers, kv_lora_rank 512, qk_rope_head_dim 64):
    # 61 x (512 + 64) x 2 bytes (bf16) = 70,272 B per token; full K/V per token: 61 layers x 128 heads x
    # ((128 + 64) key + 128 value) x 2 B = 4,997,120 B
    assert "latent 70,272 B per token" in text and "full K/V 4,997,120 B per token" in text
    # Chinchilla: 20 tokens per parameter (Hoffmann et al. 2022) -> 70B parameters, 1.4T tokens
    assert "70B parameters: 1.40e+12 tokens" in text
