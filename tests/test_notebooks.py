"""The notebooks as documents (notebooks/STYLE.md): each .py source agrees with its .ipynb, no
widget state is stored, every topic notebook follows the skeleton in order, its 30-second answer
is one a person can say in thirty seconds, its core steps show the pencil arithmetic before the
memlib cell, its fact-check table quotes a source per row, and every link of the index resolves
to a file of the repository. nbval executes the notebooks separately (pytest --nbval-lax)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jupytext
import nbformat
import pytest
from jupytext_support import unversioned

ROOT = Path(__file__).resolve().parents[1]
import sys  # noqa: E402

sys.path.insert(0, str(ROOT / "tools"))
import inline_values  # noqa: E402
PAIRED = sorted(p for d in ("notebooks", "solutions", "exercises") for p in (ROOT / d).glob("*.py")
                if not p.name.startswith("_"))
TOPICS = sorted(p for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.py") if not p.stem.endswith("_deep_dive"))
# A topic's deep dive on a page of its own (issue 19): NN_slug_deep_dive.py, linked from section 10.
DEEP_DIVES = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*_deep_dive.py"))
# Topics converted to the chapter skeleton (issue 19): prose in markdown cells with {eval} values,
# the deep dive on its own page. The others keep the older layout until converted.
CONVERTED = sorted(p for p in TOPICS if (p.parent / f"{p.stem}_deep_dive.py").exists())
MAX_DISPLAY_MARKDOWN = 3      # display(Markdown(...)) cells per converted topic notebook
MAX_CODE_BEFORE_ANSWER = 5    # visible code lines above the 30-second answer
INDEX = ROOT / "notebooks" / "index.ipynb"

# The skeleton (notebooks/STYLE.md): "## N. <English> · <中文>" sections, in this order.
SKELETON = [r"## 1\. The question", r"## 2\. The 30-second answer", r"## 3\. What the interviewer is probing",
            r"## 4\. Words we use", r"## 5\. The answer, step by step", r"## 6\. Charts", r"## 7\. Playground",
            r"## 8\. Follow-up questions", r"## 9\. Pitfalls", r"## 10\. Deep dive", r"## 11\. Further reading"]
BACK_OF_ENVELOPE = "✏️ **Back of the envelope.**"

# The 30-second answer's limits (STYLE.md, section 2).
EN_MAX_WORDS = 80
ZH_MAX_CHARS = 180
LAYOUT = re.compile(r"\b(?:dp|tp|pp|ep|cp)\s*=\s*\d|ZeRO-\d\s*,\s*offload|optimizer\+params|\b[bf]+16-mixed\b"
                    r"|\brecompute (?:full|none|selective)\b", re.I)
NUMBER = re.compile(r"(?<![\d.,])\d[\d,]*(?:\.\d+)?")
DECIMAL_UNITS = re.compile(r"(?<![A-Za-z])[kKMGTP]B(?![A-Za-z])")
BINARY_UNITS = re.compile(r"(?<![A-Za-z])[KMGTP]iB(?![A-Za-z])")


# --- reading a notebook ---------------------------------------------------------------------

def _cells(nb):
    return [(c.cell_type, c.source.strip()) for c in nb.cells]


def _section(nb, start: str, end: str | None):
    """The cells from the markdown cell whose source matches `start` up to the one matching `end`."""
    heads = [i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and re.search(start, c.source, re.M)]
    assert heads, f"no section {start!r}"
    stop = len(nb.cells)
    if end:
        ends = [i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and re.search(end, c.source, re.M)
                and i > heads[0]]
        stop = ends[0] if ends else stop
    return nb.cells[heads[0]:stop]


def _rendered_markdown(cells) -> list[str]:
    """The markdown each cell shows: a markdown cell's source, a code cell's text/markdown outputs."""
    out = []
    for c in cells:
        if c.cell_type == "markdown":  # its {eval} roles as stored (tools/inline_values.py)
            nb = {"cells": [{"cell_type": "markdown", "source": c.source, "metadata": dict(c.get("metadata", {}))}]}
            inline_values.substitute(nb)
            out.append(nb["cells"][0]["source"])
        for o in c.get("outputs", []):
            text = o.get("data", {}).get("text/markdown")
            if text:
                out.append("".join(text) if isinstance(text, list) else text)
    return out


def blockquotes(markdown: str) -> list[str]:
    """Each blockquote of a markdown text as one line of plain text (the '>' markers removed)."""
    quotes, current = [], []
    for line in markdown.splitlines() + [""]:
        if line.lstrip().startswith(">"):
            current.append(line.lstrip()[1:].strip())
        elif current:
            quotes.append(" ".join(part for part in current if part))
            current = []
    return quotes


def thirty_second_answers(nb) -> tuple[list[str], list[str]]:
    """(English answers, Chinese answers) rendered in section 2, without their labels."""
    en, zh = [], []
    for text in _rendered_markdown(_section(nb, r"^## 2\. ", r"^## 3\. ")):
        for q in blockquotes(text):
            if q.startswith("**EN**"):
                en.append(q[len("**EN**"):].strip())
            elif q.startswith("**中文**"):
                zh.append(q[len("**中文**"):].strip())
    return en, zh


# --- the 30-second answer's limits ------------------------------------------------------------

def en_words(text: str) -> int:
    """Spoken words: whitespace-separated tokens with a letter or digit (a lone dash is not a word)."""
    return sum(1 for tok in text.split() if re.search(r"[A-Za-z0-9]", tok))


def zh_chars(text: str) -> int:
    """汉字, letters and digits; spaces, punctuation and markdown markers do not count."""
    return sum(1 for ch in text if ch.isalnum())


def answer_problems(text: str, language: str) -> list[str]:
    """Every way a 30-second answer breaks STYLE.md's limits (empty: it can be said in 30 seconds)."""
    problems = []
    if language == "en" and en_words(text) > EN_MAX_WORDS:
        problems.append(f"words: {en_words(text)} English words (at most {EN_MAX_WORDS})")
    if language == "zh" and zh_chars(text) > ZH_MAX_CHARS:
        problems.append(f"chars: {zh_chars(text)} 中文 characters (at most {ZH_MAX_CHARS})")
    for m in LAYOUT.finditer(text):
        problems.append(f"layout: a layout string {m.group(0)!r} (say it in words)")
    for m in NUMBER.finditer(text):
        digits = m.group(0).split(".")[0].replace(",", "")
        if len(digits) >= 5:
            problems.append(f"count: a raw {len(digits)}-digit number {m.group(0)!r} (round it: '65 billion')")
    if DECIMAL_UNITS.search(text) and BINARY_UNITS.search(text):
        problems.append("units: both GB-style and GiB-style units in one answer (pick one system)")
    return problems


# The checker must be able to fail: each sample below breaks one limit and must be caught.
_OLD_01_EN = (  # notebook 01's English answer before issue 12, as rendered then
    "No, not as plain full fine-tuning. Mixed-precision AdamW costs 16 bytes per parameter: 1,044.6 GB of model "
    "states for 65.29B parameters, 8.2× the 127.0 GiB four V100s expose. ZeRO-3 still leaves 261.1 GB per GPU; "
    "TP=4 or PP=4 leave 303.2 GiB and 333.7 GiB. The only layouts that fit offload the states: dp=4, tp=1, pp=1, "
    "ZeRO-3, offload optimizer+params, fp16-mixed, recompute full, micro-batch 1 peaks at 9.4 GiB per GPU but "
    "needs 1,094.4 GiB of host RAM (or NVMe) and runs at roughly 68 tokens/s per GPU at best. QLoRA does not "
    "rescue a 32 GB card either: the NF4 model alone is 34.5 GB. Full fine-tuning without offload needs 15 A100 "
    "80GB or 40 V100 32GB; QLoRA needs a 48 GB card.")
_LONG_ZH = "不能直接全参数训练。" * 21  # 9 汉字 a sentence: 189 characters, over the limit
BAD_SAMPLES = [
    ("en", _OLD_01_EN, {"words", "layout", "units"}),
    ("en", "It has 65,285,660,672 parameters.", {"count"}),
    ("en", "Split it with tp=4 and it fits.", {"layout"}),
    ("en", "It needs 130 GB, which is 121.6 GiB.", {"units"}),
    ("zh", _LONG_ZH, {"chars"}),
    ("zh", "模型状态共1045GB，即973GiB。", {"units"}),
    ("zh", "参数量为65285660672。", {"count"}),
]


@pytest.mark.parametrize("language, text, kinds", BAD_SAMPLES, ids=[f"{lang}-{sorted(k)[0]}" for lang, _, k in
                                                                    BAD_SAMPLES])
def test_answer_checker_catches_each_limit(language, text, kinds):
    found = {p.split(":")[0] for p in answer_problems(text, language)}
    assert kinds <= found, f"expected {kinds}, found {found}"


def test_answer_checker_passes_a_spoken_answer():
    en = ("Full fine-tuning: no. Mixed-precision AdamW keeps 16 bytes per parameter, about 1,040 GB for 65 "
          "billion parameters, eight times what four V100s hold.")
    zh = "全参数微调不行：混合精度 AdamW 每参数 16 字节，65B 模型约 1040 GB，是 4 张 V100 的 8 倍。"
    assert answer_problems(en, "en") == [] and answer_problems(zh, "zh") == []
    assert en_words("a — b 16 GB") == 4 and zh_chars("每参数 16 字节，共 1 TB。") == 11


@pytest.mark.parametrize("py", TOPICS, ids=[p.stem for p in TOPICS])
def test_thirty_second_answer_can_be_said_in_thirty_seconds(py):
    nb = nbformat.read(py.with_suffix(".ipynb"), as_version=4)
    en, zh = thirty_second_answers(nb)
    assert len(en) == 1 and len(zh) == 1, (f"{py.name}: section 2 must render one '> **EN**' and one "
                                           f"'> **中文**' blockquote, found {len(en)} and {len(zh)}")
    problems = answer_problems(en[0], "en") + answer_problems(zh[0], "zh")
    assert not problems, f"{py.name}: " + "; ".join(problems)
    section = "\n".join(_rendered_markdown(_section(nb, r"^## 2\. ", r"^## 3\. ")))
    assert "The long answer follows" in section, f"{py.name}: say where the long answer is"


# --- pairing and stored outputs ---------------------------------------------------------------

@pytest.mark.parametrize("py", PAIRED, ids=[str(p.relative_to(ROOT)) for p in PAIRED])
def test_py_and_ipynb_agree(py):
    ipynb = py.with_suffix(".ipynb")
    assert ipynb.exists(), f"{py.name} has no paired .ipynb (run jupytext --sync)"
    source = jupytext.read(py)
    stored = nbformat.read(ipynb, as_version=4)
    assert _cells(source) == _cells(stored), f"{py.name} and {ipynb.name} differ: run jupytext --sync"


@pytest.mark.parametrize("py", PAIRED, ids=[str(p.relative_to(ROOT)) for p in PAIRED])
def test_py_is_exactly_what_jupytext_writes_from_the_ipynb(py):
    # Jupytext's contents manager refuses to open a pair whose newer .py differs from the .ipynb's
    # text (cell metadata order included); in a fresh clone either file can be the newer one.
    text = jupytext.writes(jupytext.read(py.with_suffix(".ipynb")), fmt="py:percent")
    assert unversioned(text) == unversioned(py.read_text(encoding="utf-8")), \
        f"{py.name}: run jupytext --sync {py.with_suffix('.ipynb')}"



@pytest.mark.parametrize("py", PAIRED, ids=[str(p.relative_to(ROOT)) for p in PAIRED])
def test_no_widget_state_and_outputs_kept(py):
    nb = json.loads(py.with_suffix(".ipynb").read_text(encoding="utf-8"))
    assert "widgets" not in nb.get("metadata", {}), "widget state is stored: run tools/clean_notebooks.py"
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(c.get("execution_count") for c in code), "execute the notebook so readers see outputs"


# --- the skeleton -------------------------------------------------------------------------------

def test_every_topic_is_a_chapter_with_a_deep_dive():
    # issue 19: the core path on one page, the fact-check and ledgers on NN_slug_deep_dive
    assert CONVERTED == TOPICS, f"topics without a deep-dive page: {sorted(set(TOPICS) - set(CONVERTED))}"


def test_topic_notebooks_exist():
    names = {p.stem for p in TOPICS}
    assert {"00_memory_anatomy", "01_65b_on_4x_v100", "02_single_gpu_limits",
            "03_when_the_model_does_not_fit"} <= names


@pytest.mark.parametrize("py", TOPICS, ids=[p.stem for p in TOPICS])
def test_topic_skeleton_in_order(py):
    text = py.read_text(encoding="utf-8")
    assert re.search(r"^# # " + py.stem[:2] + r" · .+ · ", text, flags=re.M), \
        f"{py.name}: the title is '# {py.stem[:2]} · <question> · <中文>'"
    if py in CONVERTED:
        assert "**Reading time:**" in text, f"{py.name}: the title cell says the reading time"
    else:
        assert "**You will be able to answer:**" in text and "**Reading time:**" in text, \
            f"{py.name}: the title cell says what you will be able to answer and the reading time"
    positions = []
    for pattern in SKELETON:
        m = re.search(r"^# " + pattern, text, flags=re.M)
        assert m, f"{py.name} lacks the section {pattern!r} (notebooks/STYLE.md)"
        positions.append(m.start())
    assert positions == sorted(positions), f"{py.name}: sections out of order"
    deep = text[positions[SKELETON.index(r"## 10\. Deep dive")]:positions[-1]]
    if py in CONVERTED:
        assert f"({py.stem}_deep_dive.ipynb)" in deep, f"{py.name}: section 10 links its deep-dive page"
    else:
        assert re.search(r"^# ### Fact-check", deep, flags=re.M), f"{py.name}: section 10 opens with '### Fact-check'"
    assert 'tags=["nbval-check-output"]' in text or '"nbval-check-output"' in text, \
        f"{py.name}: no cell has its output checked by nbval (tag nbval-check-output)"


NBVAL_COMMENT = re.compile(r"^\s*#\s*NBVAL_", re.M)


@pytest.mark.parametrize("py", TOPICS + DEEP_DIVES, ids=[p.stem for p in TOPICS + DEEP_DIVES])
def test_nbval_markers_are_tags_not_comments(py):
    # issue 19: nothing test-related visible to a reader; nbval reads the same markers from tags
    nb = nbformat.read(py.with_suffix(".ipynb"), as_version=4)
    comments = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and NBVAL_COMMENT.search(c.source)]
    assert not comments, f"{py.name}: cells {comments} carry a '# NBVAL_' comment (run tools/nbval_tags.py)"


def _visible_code_lines_before_answer(nb) -> int:
    lines = 0
    for c in nb.cells:
        if c.cell_type == "markdown" and re.search(r"^## 2\. ", c.source, re.M):
            return lines
        if c.cell_type == "code" and not c.metadata.get("jupyter", {}).get("source_hidden"):
            lines += sum(1 for ln in c.source.splitlines() if ln.strip())
    raise AssertionError("no section 2")


@pytest.mark.parametrize("py", CONVERTED, ids=[p.stem for p in CONVERTED])
def test_chapter_reads_answer_first_in_prose(py):
    nb = nbformat.read(py.with_suffix(".ipynb"), as_version=4)
    visible = _visible_code_lines_before_answer(nb)
    assert visible <= MAX_CODE_BEFORE_ANSWER, f"{py.name}: {visible} visible code lines before the answer"
    shows = sum(1 for c in nb.cells if c.cell_type == "code" and "display(Markdown(" in c.source)
    assert shows <= MAX_DISPLAY_MARKDOWN, f"{py.name}: {shows} display(Markdown(...)) cells"
    answer = "\n".join(c.source for c in _section(nb, r"^## 2\. ", r"^## 3\. ") if c.cell_type == "markdown")
    assert "{eval}`" in answer, f"{py.name}: the 30-second answer is prose with {{eval}} values"


def test_visible_code_counter_can_fail():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import x\ny = 1"),
                                         nbformat.v4.new_markdown_cell("## 2. The 30-second answer")])
    assert _visible_code_lines_before_answer(nb) == 2
    nb.cells[0].metadata["jupyter"] = {"source_hidden": True}
    assert _visible_code_lines_before_answer(nb) == 0


@pytest.mark.parametrize("py", CONVERTED + DEEP_DIVES, ids=[p.stem for p in CONVERTED + DEEP_DIVES])
def test_inline_values_equal_what_memlib_computes_now(py):
    # the nbval of prose: every {eval} has a stored value, equal to a fresh evaluation
    problems = inline_values.check(py.with_suffix(".ipynb"))
    assert not problems, "\n".join(problems[:10])


def test_inline_value_check_can_fail(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = f'{2 + 2} GB'"),
                                         nbformat.v4.new_markdown_cell("It is {eval}`x`; {eval}`y` is missing.")])
    nb.cells[1].metadata["user_expressions"] = [
        {"expression": "x", "result": {"status": "ok", "data": {"text/plain": "'5 GB'"}, "metadata": {}}}]
    path = tmp_path / "t.ipynb"
    nbformat.write(nb, path)
    problems = inline_values.check(path)
    assert any("stored '5 GB', memlib now '4 GB'" in p for p in problems), problems
    assert any("y" in p and ("no stored value" in p or "NameError" in p) for p in problems), problems
    assert inline_values.fill(path) != []  # y is undefined: filling fails too, loudly


def _memlib_imports(nb) -> set[str]:
    """Names a notebook imports from memlib (`from memlib.cost import x`, `from memlib import cost`,
    `import memlib.cost as cost`), so a cell calling `cost.training_flops(...)` names a memlib function."""
    names = set()
    for c in nb.cells:
        if c.cell_type != "code":
            continue
        # one line, or a parenthesized list over several (a plain line ends at its newline)
        for m in re.finditer(r"^from memlib(?:\.[\w.]+)? import (?:\(([^)]*)\)|([^\n(]+))", c.source, re.M):
            listed = m.group(1) if m.group(1) is not None else m.group(2)
            names |= {n.strip().split(" as ")[-1] for n in listed.replace("\n", ",").split(",") if n.strip()}
        names |= set(re.findall(r"^import memlib[\w.]* as (\w+)", c.source, re.M))
    return {n for n in names if n.isidentifier()}


def _calls_memlib(source: str, names: set[str]) -> bool:
    return "memlib" in source or any(re.search(rf"\b{re.escape(n)}\s*[(.]", source) for n in names)


@pytest.mark.parametrize("py", TOPICS, ids=[p.stem for p in TOPICS])
def test_steps_show_the_pencil_arithmetic_before_memlib(py):
    nb = nbformat.read(py.with_suffix(".ipynb"), as_version=4)
    cells = _section(nb, r"^## 5\. ", r"^## 6\. ")
    assert any(re.search(r"^### Step \d+ · ", c.source, re.M) for c in cells if c.cell_type == "markdown"), \
        f"{py.name}: section 5 is made of '### Step k · title' steps"
    memlib_names = _memlib_imports(nb)
    envelopes = [i for i, c in enumerate(cells) if c.cell_type == "markdown" and BACK_OF_ENVELOPE in c.source]
    assert len(envelopes) >= 2, f"{py.name}: {len(envelopes)} back-of-envelope cells in section 5"
    for i in envelopes:
        assert cells[i].source.lstrip().startswith(BACK_OF_ENVELOPE) or \
            f"\n{BACK_OF_ENVELOPE}" in cells[i].source, f"{py.name}: a back-of-envelope cell starts with the marker"
        nxt = cells[i + 1] if i + 1 < len(cells) else None
        assert nxt is not None and nxt.cell_type == "code" and _calls_memlib(nxt.source, memlib_names), \
            f"{py.name}: the cell after a back-of-envelope cell is the memlib computation"


def test_memlib_call_checker_can_fail():
    assert _calls_memlib("t = cost.training_flops(m, 2e12)", {"cost"})
    assert _calls_memlib("x = memlib.estimate_training('llama-7b')", set())
    assert not _calls_memlib("x = 65e9 * 16 / 4", {"cost", "estimate_training"})
    assert not _calls_memlib("costly = 3", {"cost"})


@pytest.mark.parametrize("py", TOPICS, ids=[p.stem for p in TOPICS])
def test_charts_and_playground(py):
    nb = nbformat.read(py.with_suffix(".ipynb"), as_version=4)
    charts = sum(1 for c in _section(nb, r"^## 6\. ", r"^## 7\. ") for o in c.get("outputs", [])
                 if "image/png" in o.get("data", {}))
    assert charts >= 2, f"{py.name}: {charts} charts in section 6 (at least two)"
    playground = "".join(c.source for c in _section(nb, r"^## 7\. ", r"^## 8\. ") if c.cell_type == "code")
    assert "Playground(" in playground or "widgets" in playground, f"{py.name}: section 7 has no widget"
    followups = [c for c in _section(nb, r"^## 8\. ", r"^## 9\. ") if c.cell_type == "markdown"
                 and re.search(r"^### ", c.source, re.M)]
    assert followups, f"{py.name}: section 8 has no '###' follow-up"


# --- the fact-check table -----------------------------------------------------------------------

def markdown_tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """(header, rows) of each pipe table in a markdown text."""
    tables, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and re.match(r"^\|[\s:|-]+\|\s*$", lines[i + 1]):
            header = _row(lines[i])
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(_row(lines[i]))
                i += 1
            tables.append((header, rows))
        else:
            i += 1
    return tables


def _row(line: str) -> list[str]:
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def fact_check_problems(tables, minimum: int) -> list[str]:
    """Why a fact-check (its tables) falls short: too few rows, a row without a source or a verdict."""
    problems, rows = [], 0
    for header, body in tables:
        lower = [h.lower() for h in header]
        src = next((i for i, h in enumerate(lower) if "source" in h), None)
        verdict = next((i for i, h in enumerate(lower) if "verdict" in h), None)
        if src is None or verdict is None or not any("claim" in h for h in lower):
            problems.append(f"a table without claim, source and verdict columns: {header}")
            continue
        for r in body:
            if src >= len(r) or not r[src]:
                problems.append(f"a row without its source: {r[:1]}")
            mark = r[verdict] if verdict < len(r) else ""
            if any(m in mark for m in ("✅", "⚠️", "❌")):
                rows += 1
            elif "➖" not in mark:  # ➖: a claim memlib cannot compute (an opinion, an accuracy figure): not counted
                problems.append(f"a row without a verdict (✅/⚠️/❌, or ➖ for one memlib cannot compute): {r[:1]}")
    if rows < minimum:
        problems.append(f"{rows} claims checked (at least {minimum})")
    return problems


def test_fact_check_checker_can_fail():
    good = "| claim | source | memlib | verdict | why |\n|---|---|---|---|---|\n" + \
        "\n".join(f"| \"c{i}\" | seed 000 | 1 GB | ✅ | ok |" for i in range(10))
    assert fact_check_problems(markdown_tables(good), 10) == []
    assert fact_check_problems(markdown_tables(good), 11)  # too few rows
    no_source = good.replace("| seed 000 |", "|  |", 1)
    assert any("source" in p for p in fact_check_problems(markdown_tables(no_source), 10))
    no_column = good.replace("| source |", "| where |")
    assert fact_check_problems(markdown_tables(no_column), 10)
    no_verdict = good.replace("| ✅ |", "|  |", 1)
    assert any("verdict" in p for p in fact_check_problems(markdown_tables(no_verdict), 9))
    not_computed = good.replace("| ✅ |", "| ➖ not computed |", 1)  # allowed, but it does not count
    assert fact_check_problems(markdown_tables(not_computed), 9) == []
    assert fact_check_problems(markdown_tables(not_computed), 10)


@pytest.mark.parametrize("py", TOPICS, ids=[p.stem for p in TOPICS])
def test_fact_check_quotes_sources(py):
    deep = py.parent / f"{py.stem}_deep_dive.ipynb"
    nb = nbformat.read(deep if deep.exists() else py.with_suffix(".ipynb"), as_version=4)
    cells = _section(nb, r"^##+ Fact-check", r"^##+ (?!#)(?!Fact-check)")
    tables = [t for text in _rendered_markdown(cells) for t in markdown_tables(text)]
    minimum = 10 if py.stem[:2] in ("00", "01", "02", "03") else 8
    problems = fact_check_problems(tables, minimum)
    assert not problems, f"{py.name}: " + "; ".join(problems[:5])
    if deep.exists():  # issue 19: a verdict reads without an emoji font ("✅ right", "❌ wrong")
        for header, rows in tables:
            v = [h.lower() for h in header].index("verdict")
            bare = [r[0][:40] for r in rows if not re.search(r"[A-Za-z]{4,}", r[v])]
            assert not bare, f"{deep.name}: verdicts without a word: {bare[:3]}"


# --- the index ----------------------------------------------------------------------------------

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def index_links() -> list[str]:
    nb = nbformat.read(INDEX, as_version=4)
    return [m.group(1) for text in _rendered_markdown(nb.cells) for m in LINK.finditer(text)]


def test_every_index_link_resolves_to_a_file_of_the_repository():
    links = [h for h in index_links() if not re.match(r"^[a-z]+:", h) and not h.startswith("#")]
    assert len(links) >= 8, f"the index links too little: {links}"
    for href in links:
        target = (INDEX.parent / href.split("#")[0]).resolve()
        assert target.is_file(), f"notebooks/index.ipynb links {href!r}, which is not a file of the repository"
        assert ROOT in target.parents, f"notebooks/index.ipynb links {href!r}, outside the repository"


def test_index_links_every_topic_notebook_in_order():
    linked = [Path(h).stem for h in index_links() if re.match(r"^\d\d_[^/]+\.ipynb$", h)]
    topics = [p.stem for p in TOPICS]
    assert [t for t in linked if t in topics] == topics, \
        (f"notebooks/index.py must link every topic notebook, in order (re-execute notebooks/index.ipynb after "
         f"adding the line): linked {linked}, present {topics}")
    text = "\n".join(_rendered_markdown(nbformat.read(INDEX, as_version=4).cells))
    assert "../exercises/" in text and "../docs/cheatsheet.md" in text and "calculator.ipynb" in text


# --- the notebook kit and the new import paths (issue 44) ------------------------------------------------------
def _old_paths(text: str) -> list[str]:
    """Where `text` names a module by an old flat path (memlib.grading, memlib.zero, from memlib import viz, ...)
    or by a path that moved between the core's layers (memlib/_compat.py's MOVED)."""
    from memlib import _compat
    old = sorted(_compat.MOVED, key=len, reverse=True)
    found = [m.group(0) for m in re.finditer(r"(?<![\w.])memlib\.(" + "|".join(map(re.escape, old)) + r")\b", text)]
    for names in re.findall(r"^\s*from memlib import ([^\n(]+)$", text, re.M):
        found += [f"from memlib import {n}" for n in (x.strip().split(" as ")[0] for x in names.split(","))
                  if n in _compat.MOVED]
    return found


def test_old_path_finder_finds_each_spelling():
    text = ("from memlib.grading import check\nimport memlib.viz\nx = memlib.timing.DEFAULT_MFU\n"
            "from memlib import cost, zero\n# memlib.training.weight_sync.weight_sync\nfrom memlib.learn import viz\n"
            "memlib.cost.timing.step_time\n")
    assert _old_paths(text) == ["memlib.grading", "memlib.viz", "memlib.timing", "memlib.training.weight_sync",
                                "from memlib import zero"]


@pytest.mark.parametrize("py", PAIRED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_notebook_uses_the_new_import_paths(py):
    assert _old_paths(py.read_text(encoding="utf-8")) == []


KIT_HELPERS = re.compile(r"^(?:def (GB|G|R)\(|(GB|G|R) = lambda)", re.M)


@pytest.mark.parametrize("py", PAIRED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_notebook_takes_the_formatting_helpers_from_the_kit(py):
    # GB, G and R come from memlib.learn.kit, defined once; the 00 deep dive's G (a GB without thousands
    # separators, in its fact-check table) is the one local variant left
    found = [m.group(0) for m in KIT_HELPERS.finditer(py.read_text(encoding="utf-8"))]
    allowed = ["G = lambda"] if py.name == "00_memory_anatomy_deep_dive.py" else []
    assert found == allowed, f"{py.name}: use `from memlib.learn.kit import GB, G, R`"


def test_memlib_import_reader_reads_each_line_on_its_own():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "from memlib.learn.chapters.ch06 import GPU, term\nfrom memlib import estimate_training, fits\n"
        "from memlib.cost.conventions import (attention_hbm_accesses,\n    mean_attended_keys as keys)\nx = (1)\n")])
    assert _memlib_imports(nb) == {"GPU", "term", "estimate_training", "fits", "attention_hbm_accesses", "keys"}
