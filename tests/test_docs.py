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


# issue 19 item 5: formulas as math. A product written "s*b*h" in Markdown reads as *emphasis* (the text
# between two stars turns italic and the stars vanish), so the cheat sheet writes each row's formula as
# LaTeX ($$...$$, rendered by MathJax in the book: tests/test_site_browser.py) and the prose's products as s·b·h.
BARE_PRODUCT = re.compile(r"(?<=[\w)\]])\*(?=[\w(\[])")


def _prose(text: str) -> str:
    """The cheat sheet without its code spans and math: what Markdown reads as text."""
    text = re.sub(r"\$\$.*?\$\$", "", text, flags=re.S)
    text = re.sub(r"\$[^$\n]+\$", "", text)
    return re.sub(r"`[^`\n]*`", "", text)


def test_bare_product_pattern_catches_emphasis():
    # the pattern the next test relies on finds the products of the Korthikanti formula as a docstring writes it
    assert len(BARE_PRODUCT.findall("s*b*h*(10 + 24/t + 5*a*s/(h*t))")) == 6
    assert not BARE_PRODUCT.findall("s·b·h·(34 + 5as/h)")
    assert not BARE_PRODUCT.findall(_prose("s·b·h, `x*y`, $a*b$"))


def test_cheatsheet_formulas_are_math_not_bare_products():
    text = (ROOT / "docs" / "cheatsheet.md").read_text(encoding="utf-8")
    bare = [m.group(0) for m in re.finditer(r".{0,30}" + BARE_PRODUCT.pattern + r".{0,30}", _prose(text))]
    assert not bare, f"bare * products Markdown reads as emphasis: {bare[:5]}"
    for block in re.split(r"\n### ", text)[1:]:
        topic = block.splitlines()[0]
        m = re.match(r"[^\n]*\n\n\$\$\n(.+?)\n\$\$\n", block, flags=re.S)
        assert m, f"row {topic!r} has no $$ LaTeX $$ formula under its heading"
        latex = m.group(1)
        assert "*" not in latex, f"row {topic!r}: a * in its LaTeX ({latex})"
        assert latex.count("{") == latex.count("}"), f"row {topic!r}: unbalanced braces in {latex}"
        assert "$" not in latex and "\n" not in latex
