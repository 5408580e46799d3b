"""What notebook 07 (time and cost) added to memlib: training_flops/training_run with recompute and
LoRA, plan()'s inter-node link, the playground's figures, the time charts, and the grader's
FLOPs / GPU-hours / days units. Expected values are hand derivations written out here."""

from __future__ import annotations

import math
import re
import unicodedata
from pathlib import Path

import pytest

import memlib
from memlib import cost
from memlib.learn.playgrounds.cost import describe, run_summary
from memlib.learn.exercises.answers import Malformed, parse_quantity
from memlib.parallel.plan import plan

PSI_7B = 6_738_415_616  # LLaMA-7B and Llama-2-7B, tensor by tensor (tests/test_grading_table.py derives it)
ATTN_7B_4096 = 32 * 32 * 128 * 4096  # L x H x Q x T of Llama-2-7B at 4,096 tokens
H100 = 989.4e12  # dense bf16 FLOP/s of an H100 SXM (NVIDIA's datasheet prints 1,979 "with sparsity")


# --- FLOPs of recompute and of a frozen base ----------------------------------------------------------
def test_training_flops_with_lora_and_recompute():
    """PaLM App. B per token: 6N + 12·L·H·Q·T; a frozen base skips weight gradients (4N); full
    recompute runs the forward again (+2N + 4·L·H·Q·T)."""
    d = 1e9
    assert cost.training_flops("llama-2-7b", d, seq_len=4096, finetune="lora") == (4 * PSI_7B + 12 * ATTN_7B_4096) * d
    assert cost.training_flops("llama-2-7b", d, seq_len=4096, recompute="full") == \
        (8 * PSI_7B + 16 * ATTN_7B_4096) * d
    assert cost.training_flops("llama-2-7b", d, seq_len=4096, recompute="full", finetune="lora") == \
        (6 * PSI_7B + 16 * ATTN_7B_4096) * d
    # without seq_len: the dense terms only, from the model or from a plain count
    assert cost.training_flops("llama-2-7b", d, finetune="qlora") == 4 * PSI_7B * d
    assert cost.training_flops(37e9, 14.8e12, recompute="full") == pytest.approx(8 * 37e9 * 14.8e12)
    run = cost.training_run("llama-2-7b", d, "h100-80gb", 8, mfu=0.5, seq_len=4096, finetune="lora")
    assert run.gpu_hours == pytest.approx((4 * PSI_7B + 12 * ATTN_7B_4096) * d / (H100 * 0.5) / 3600)


@pytest.mark.parametrize("kw, match", [
    (dict(recompute="selective"), "selective"),
    (dict(finetune="adapter"), "finetune"),
    (dict(recompute="half"), "recompute"),
])
def test_training_flops_bad_options(kw, match):
    with pytest.raises(ValueError, match=match):
        cost.training_flops(7e9, 1e9, **kw)


# --- plan() on a faster inter-node link --------------------------------------------------------------
def test_plan_times_layouts_on_the_given_internode_link():
    """Llama-7B, ZeRO-1 over 16 A100s (two nodes of 8): DeepSpeed all-reduces the 16-bit gradients at the
    accumulation boundary (2 x 15/16 x 2ψ bytes per GPU) and all-gathers the updated 16-bit parameters
    (15/16 x 2ψ), neither overlapped: 3 x 15/16 x 2ψ bytes exposed at the inter-node rate."""
    exposed_bytes = 3 * 15 / 16 * 2 * PSI_7B
    for rate in (25e9, 50e9):
        r = plan("llama-7b", "a100-80gb", 16, seq_len=2048, grad_accum=4, recomputes=("full",), allow_offload=False,
                 internode_bytes_per_s=rate)
        z1 = next(p for p in r.feasible if p.settings["zero_stage"] == 1 and p.settings["dp"] == 16)
        assert z1.time.dp_exposed_s == pytest.approx(exposed_bytes / rate)
    with pytest.raises(ValueError, match="internode_bytes_per_s"):
        plan("llama-7b", "a100-80gb", 16, internode_bytes_per_s=0)


# --- the playground's figures ----------------------------------------------------------------------
def test_run_summary_is_6nd_plus_attention_at_the_mfu():
    """Llama-2-7B on 2T tokens, 256 H100s at 40% MFU, $2 per GPU-hour."""
    flops = (6 * PSI_7B + 12 * ATTN_7B_4096) * 2e12
    hours = flops / (H100 * 0.4) / 3600
    s = run_summary("llama-2-7b", 2e12, "h100-80gb", 256, mfu=0.4, price=2.0, seq_len=4096)
    assert s["flops"] == pytest.approx(flops) and s["gpu_hours"] == pytest.approx(hours)
    assert s["days"] == pytest.approx(hours / 256 / 24) and s["cost"] == pytest.approx(2 * hours)
    assert s["chinchilla_ratio"] == pytest.approx(2e12 / (20 * PSI_7B))
    assert s["beyond_pencil"] == pytest.approx(12 * ATTN_7B_4096 / (6 * PSI_7B))
    assert f"{hours:,.0f} GPU-hours" in describe(s)
    lora = run_summary("llama-2-7b", 2e12, "h100-80gb", 256, task="lora", recompute="full")
    assert lora["flops"] == pytest.approx((6 * PSI_7B + 16 * ATTN_7B_4096) * 2e12)
    with pytest.raises(ValueError, match="price"):
        run_summary("llama-2-7b", 2e12, "h100-80gb", 256, price=-1)
    with pytest.raises(ValueError, match="task"):
        run_summary("llama-2-7b", 2e12, "h100-80gb", 256, task="pretrain")


def test_cost_playground_widget_updates():
    pytest.importorskip("ipywidgets")
    from memlib.learn.playgrounds.cost import CostPlayground
    p = CostPlayground(model="llama-2-7b", tokens=2e12, gpu="h100-80gb", gpus=256, mfu=0.4)
    days = p.summary["days"]
    p.controls["gpus"].value = 512
    assert p.summary["days"] == pytest.approx(days / 2)
    p.controls["gpu"].value = "a100-80gb"  # 312 TFLOP/s dense instead of 989.4
    assert p.summary["days"] == pytest.approx(days / 2 * 989.4 / 312)
    assert "GPU-hours" in p.output.value


# --- charts -------------------------------------------------------------------------------------------
def test_time_charts_draw_what_they_are_given():
    plt = pytest.importorskip("matplotlib.pyplot")
    from memlib.learn.viz import lines, stacked_bars
    ax = lines([0.3, 0.4, 0.5], {"a": [3, 2, 1], "b": [6, 4, 2]}, xlabel="MFU", marks={"Llama 3": 0.41})
    assert len(ax.get_lines()) == 3  # two series and one mark
    assert list(ax.get_lines()[1].get_ydata()) == [6, 4, 2]
    ax = stacked_bars([8, 16], {"compute": [2.0, 1.0], "exposed communication": [0.5, 0.0]}, ylabel="days")
    heights = [p.get_height() for p in ax.patches]
    assert heights == [2.0, 1.0, 0.5, 0.0]
    assert [t.get_text() for t in ax.texts] == ["2.5", "1.0"]
    plt.close("all")


# --- the grader's time and work units -----------------------------------------------------------------
@pytest.mark.parametrize("text, unit, value", [
    ("8.4e22 FLOPs", "FLOPs", 8.4e22), (8.4e22, "FLOPs", 8.4e22), ("84 ZFLOP", "FLOPs", 8.4e22),
    ("3640 petaflop/s-days", "FLOPs", 3640 * 1e15 * 86400), ("3,640 PF-days", "FLOPs", 3640 * 1e15 * 86400),
    ("66k GPU-hours", "GPU-hours", 66e3), ("1.7M H100 hours", "GPU-hours", 1.7e6),
    ("2.788M H800 GPU hours", "GPU-hours", 2.788e6), ("1.7 million GPU hours", "GPU-hours", 1.7e6),
    (65800, "GPU-hours", 65800), ("10.7 days", "days", 10.7), ("257 hours", "days", 257 / 24),
    ("1.5 weeks", "days", 10.5), ("约 10.7 天", "days", 10.7), (10.7, "days", 10.7),
])
def test_parse_time_and_work(text, unit, value):
    assert math.isclose(parse_quantity(text, unit).value, value, rel_tol=1e-12)


@pytest.mark.parametrize("text, unit, says", [
    ("400 TFLOP/s", "FLOPs", "rate"), ("8e22 FLOPS/s", "FLOPs", "rate"), ("5 GB", "FLOPs", "unknown unit"),
    ("11 days", "GPU-hours", "not days"), ("66000 GPU-hours", "days", "not GPU-hours"),
    ("3 parsecs", "days", "unknown time unit"), ("40%", "GPU-hours", "not a percentage"),
    ("-3 days", "days", "negative"),
])
def test_parse_time_and_work_explains_what_is_wrong(text, unit, says):
    with pytest.raises(Malformed, match=says):
        parse_quantity(text, unit)


def test_grader_reads_the_units_of_notebook_07():
    """A Numeric exercise in days accepts hours, and says so when given GPU-hours."""
    from memlib.learn.exercises.kinds import Numeric
    from memlib.learn.grading import _judge
    ex = Numeric(id="07.0", title="t", difficulty="warm-up", minutes=1, formula="f", prompt="p",
                 worked=lambda: "w", hints=("a", "b"), expected=lambda: 10.7, unit="days")
    assert _judge(ex, parse_quantity("256.8 hours", "days"), 10.7)[0]
    assert not _judge(ex, parse_quantity("5 days", "days"), 10.7)[0]
    assert memlib.learn.grading.fmt_value(65798.8, "GPU-hours") == "65,799 GPU-hours"


def test_chinchilla_optimal_split_of_a_budget():
    """C = 6·N·D with D = 20·N. Chinchilla: 6 x 70e9 x 1.4e12 = 5.88e23 FLOPs -> 70B on 1.4T; Hoffmann et al.
    Table 3's first row: 400M parameters, 8.0B tokens, 1.92e19 FLOPs."""
    n, d = cost.chinchilla_optimal(6 * 70e9 * 1.4e12)
    assert n == pytest.approx(70e9) and d == pytest.approx(1.4e12)
    n, d = cost.chinchilla_optimal(1.92e19)
    assert n == pytest.approx(400e6) and d == pytest.approx(8.0e9)
    with pytest.raises(ValueError, match="flops"):
        cost.chinchilla_optimal(-1)


# --- notebook 07 follows the revised skeleton (SKELETON.md, issue 12) ------------------------------------
NB07 = Path(__file__).resolve().parents[1] / "notebooks" / "07_time_and_cost"
REVISED = [r"## 1\. The question · 问题", r"## 2\. The 30-second answer · 30 秒回答",
           r"## 3\. What the interviewer is probing · 考察意图", r"## 4\. Words we use · 术语",
           r"## 5\. The answer, step by step · 推导", r"## 6\. Charts · 图", r"## 7\. Playground · 动手试",
           r"## 8\. Follow-up questions · 追问", r"## 9\. Pitfalls · 避坑",
           r"## 10\. Deep dive \(skip on first read\) · 深入（可跳过）", r"## 11\. Further reading · 延伸阅读"]
NB07_DEEP = NB07.parent / f"{NB07.stem}_deep_dive"


def _nb07_markdown_outputs(path=None):
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read((path or NB07).with_suffix(".ipynb"), as_version=4)
    return nb, [o["data"]["text/markdown"] for c in nb.cells if c.cell_type == "code"
                for o in c.get("outputs", []) if "text/markdown" in o.get("data", {})]


def _rendered(cell) -> str:
    """A markdown cell as the book shows it: each {eval} role replaced by its stored value."""
    values = {e["expression"]: e["result"]["data"]["text/plain"].strip("'\"")
              for e in cell.metadata.get("user_expressions", [])}
    return re.sub(r"\{eval\}`(\w+)`", lambda m: values[m.group(1)], cell.source)


def test_notebook_07_sections_in_the_revised_order():
    text = NB07.with_suffix(".py").read_text(encoding="utf-8")
    positions = []
    for pattern in REVISED:
        m = re.search(r"^# " + pattern, text, flags=re.M)
        assert m, pattern
        positions.append(m.start())
    assert positions == sorted(positions)
    steps = len(re.findall(r"^# ### Step \d+ · ", text, flags=re.M))
    assert steps >= 6 and text.count("# ✏️ **Back of the envelope.**") >= steps  # one before each step's figure
    assert "**Reading time:**" in text
    deep = NB07_DEEP.with_suffix(".py").read_text(encoding="utf-8")
    assert re.search(r"^# ## Fact-check · 纠错", deep, flags=re.M), "the fact-check is on the deep-dive page"


def test_notebook_07_thirty_second_answers_within_the_limits():
    """EN <= 80 words, 中文 <= 180 characters (non-space, punctuation excluded), rendered from memlib."""
    nb, _ = _nb07_markdown_outputs()
    answer = next(_rendered(c) for c in nb.cells if c.cell_type == "markdown" and "> **EN**" in c.source)
    blocks = {k: " ".join(line[2:] for line in block.splitlines())
              for block in answer.split("\n\n") for k in ("EN", "中文") if block.startswith(f"> **{k}**")}
    en, zh = blocks["EN"][len("**EN**"):], blocks["中文"][len("**中文**"):]
    assert 30 <= len(en.split()) <= 80
    assert 60 <= sum(1 for ch in zh if not ch.isspace() and not unicodedata.category(ch).startswith("P")) <= 180
    assert "GiB" not in en and "dp=" not in en and "tp=" not in en and not re.search(r"\d{5,}", en + zh)


def test_notebook_07_fact_check_quotes_at_least_eight_sources():
    nb, outputs = _nb07_markdown_outputs(NB07_DEEP)
    table = next(t for t in outputs if t.startswith("| claim (source) |"))
    rows = [line for line in table.splitlines()[2:] if line.startswith("|")]
    assert len(rows) >= 8
    assert all(re.search(r"[\"“].+[\"”]", r) and re.search(r"\((?:[^()]*\d{4}|seed \d+|[^()]*datasheet|"
                                                           r"[^()]*Math 101)[^()]*\)", r) for r in rows)
    assert all(any(v in r for v in ("✅", "⚠️", "❌")) for r in rows)
