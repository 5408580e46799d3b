"""validation/published.jsonl: peak memory that others measured on real GPUs.

Schema: every row is pinned to a commit (or a paper table), quotes the figure as published,
states the statistic and the unit convention of the code that printed it, converts it to
bytes consistently, and records the recipe's setup and how memlib expresses it. The
benchmark (benchmarks/published.py) must handle every row with today's memlib, listing
what it cannot compute instead of failing. The accuracy thresholds of issue 9 are checked
by the test at the end.
"""

from __future__ import annotations

import importlib.util
import inspect
import re
import statistics
from pathlib import Path

import pytest

import memlib
from benchmark_support import load

ROOT = Path(__file__).resolve().parents[1]
bench = load("published")

ROWS = bench.load_rows()
IDS = [r["id"] for r in ROWS]

UNITS = {"GB": 10**9, "GiB": 2**30, "MB": 10**6, "MiB": 2**20, "B": 1}
# What the unit note must cite: the divisor the source's printing code used.
UNIT_EVIDENCE = {"GB": ("1e9", "10**9", "1000**3"), "GiB": ("2**30", "1024**3", "1024*1024*1024", "1024 * 1024 * 1024"),
                 "MB": ("1e6", "10**6"), "MiB": ("2**20", "1024**2"),
                 "B": ("allocated_bytes.all.peak",)}  # torch's byte count written unchanged (Megatron's CI)
SETUP_FIELDS = ("framework", "model", "method", "precision", "optimizer", "optimizer_impl", "seq_len",
                "micro_batch", "grad_accum", "activation_checkpointing", "attention", "loss",
                "activation_offload", "compile", "packing", "num_gpus", "sharding")
CONFIG_FIELDS = ("model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                 "vocab_size", "tie_word_embeddings")
# Issue 9's option names (exact), on top of what estimate_training accepts today.
ISSUE9_OPTIONS = {
    "lora_dropout": lambda v: isinstance(v, float) and 0.0 <= v < 1.0,
    "adapter_dtype": lambda v: v in ("fp32", "bf16"),
    "optimizer_impl": lambda v: v in ("foreach", "fused", "for-loop"),
    "qlora_backend": lambda v: v in memlib.training.QLORA_BACKENDS,
    "double_quant": lambda v: isinstance(v, bool),
    "loss": lambda v: v in ("full", "chunked", "chunked-head"),
    "activation_offload": lambda v: isinstance(v, bool),
}
TRAINING_OPTIONS = set(inspect.signature(memlib.estimate_training).parameters) | set(ISSUE9_OPTIONS)
INFERENCE_OPTIONS = set(inspect.signature(memlib.estimate_inference).parameters)


def _numbers(text: str) -> list[float]:
    return [float(m.replace(",", "")) for m in re.findall(r"\d+(?:,\d{3})*(?:\.\d+)?", text)]


def test_enough_rows_from_several_sources():
    assert len(ROWS) >= 20
    assert len(set(IDS)) == len(IDS), "row ids must be unique"
    sources = {r["source"].get("repo") or r["source"].get("paper") for r in ROWS}
    assert len(sources) >= 3
    expressible_allocated = [r for r in ROWS if r["memlib"]["expressible"] and r["statistic"] == "allocated"]
    assert len(expressible_allocated) >= 20, "issue 9 asks for >= 20 allocated peaks memlib can express"


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_row_schema(row):
    assert re.fullmatch(r"[a-z0-9][a-z0-9.\-]*", row["id"]), row["id"]
    assert row["kind"] in ("training", "inference")
    src = row["source"]
    if "repo" in src:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", src["repo"]) and src["path"]
        assert re.fullmatch(r"[0-9a-f]{40}", src["commit"]), "pin the source at a full commit hash"
        code = src.get("code")
        if code:
            assert re.fullmatch(r"[0-9a-f]{40}", code["commit"]) and code["path"] and code["repo"]
    else:
        assert src.get("paper") and src.get("table") and src.get("url", "").startswith("http")
    # the quote is the published text and contains the figure
    assert row["quote"].strip()
    assert any(abs(n - row["value"]) < 1e-9 for n in _numbers(row["quote"])), \
        f"{row['value']} does not appear in the quote {row['quote']!r}"
    # statistic and unit convention, each with the evidence for it
    assert row["statistic"] in bench.STATISTICS
    assert len(row["statistic_note"]) > 40
    assert row["unit"] in UNITS
    assert any(e in row["unit_note"] for e in UNIT_EVIDENCE[row["unit"]]), \
        f"unit_note must cite the divisor the printing code used: {row['unit_note']!r}"
    assert row["bytes"] == round(row["value"] * UNITS[row["unit"]])
    # the print's rounding: a fraction of the unit, or one whole unit where the code prints an integer (int(...))
    whole = "truncated" in row["unit_note"]
    assert 0 < row["resolution_bytes"] <= (UNITS[row["unit"]] if whole else max(1, 0.05 * UNITS[row["unit"]]))
    assert row["gpu"]


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_row_setup(row):
    s = row["setup"]
    for f in SETUP_FIELDS:
        assert f in s, f"setup lacks {f}"
    m = s["model"]
    assert m["hf_id"] and "/" in m["hf_id"] and m["implementation"] and m["config_source"]
    for f in CONFIG_FIELDS:
        assert f in m["config"], f"model config lacks {f}"
    assert isinstance(s["num_gpus"], int) and s["num_gpus"] >= 1
    assert isinstance(s["seq_len"], int) and isinstance(s["micro_batch"], int) and isinstance(s["grad_accum"], int)
    if row["kind"] == "training":
        assert s["method"].split(" ")[0] in ("full", "lora", "qlora")
        assert s["optimizer"] and s["optimizer_impl"] and s["loss"]
    if s["method"] in ("lora", "qlora"):
        lora = s["lora"]
        assert {"r", "alpha", "dropout", "targets", "adapter_dtype"} <= set(lora)
    if s["method"] == "qlora":
        assert {"backend", "quant_type", "double_quant"} <= set(s["quantization"])


def _check_qlora_backend(backend: str, setup_backend: str) -> None:
    """The row's qlora_backend says what ran: Lightning's BitsandbytesPrecision gets a "lightning-" backend, and a
    bitsandbytes release before 0.43.2 (MatMul4Bit's ctx.tensors = (A, B), PR #1270) the "<0.43.2" one."""
    assert backend.startswith("lightning-") == ("Lightning" in setup_backend), (backend, setup_backend)
    versions = re.findall(r"bitsandbytes (\d+)\.(\d+)\.(\d+)", setup_backend)
    if versions:
        old = tuple(int(x) for x in versions[0]) < (0, 43, 2)
        assert backend.endswith("<0.43.2") == old, (backend, setup_backend)


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_row_memlib_expression(row):
    ml = row["memlib"]
    assert ml["function"] in bench.FUNCTIONS
    assert isinstance(ml["expressible"], bool)
    if not ml["expressible"]:
        assert isinstance(ml["missing"], str) and len(ml["missing"]) > 10
        return
    kw = ml["kwargs"]
    allowed = TRAINING_OPTIONS if ml["function"] == "estimate_training" else INFERENCE_OPTIONS
    assert set(kw) <= allowed, f"unknown option names: {sorted(set(kw) - allowed)}"
    for name, ok in ISSUE9_OPTIONS.items():
        if name in kw:
            assert ok(kw[name]), f"{name}={kw[name]!r} is not one of issue 9's values"
    s = row["setup"]
    if ml["function"] == "estimate_training":
        assert (kw["seq_len"], kw["micro_batch"], kw.get("grad_accum", 1)) == (s["seq_len"], s["micro_batch"], s["grad_accum"])
        assert kw["finetune"] == s["method"].split(" ")[0]
        if s["method"] in ("lora", "qlora"):
            assert kw["lora_rank"] == s["lora"]["r"] and kw["lora_dropout"] == s["lora"]["dropout"]
            assert kw["adapter_dtype"] == s["lora"]["adapter_dtype"]
        if s["method"] == "qlora":
            assert kw["double_quant"] == s["quantization"]["double_quant"]
            _check_qlora_backend(kw["qlora_backend"], s["quantization"]["backend"])
        if "lightning" in s["framework"].lower() or "litgpt" in s["framework"].lower():
            # LitGPT's loop: the head per 128 tokens (or, in full.py, whole) under Fabric's fp32 output conversion
            assert kw.get("loss") == ("full" if s["method"] == "full" else "chunked-head"), s["loss"]
            assert "fp32" in s["loss"]
        gpus = kw.get("dp", 1) * kw.get("tp", 1) * kw.get("pp", 1) * kw.get("cp", 1)
        assert gpus == s["num_gpus"], "dp x cp x tp x pp must be the GPU count"
    else:
        assert kw["context_len"] == s["seq_len"] and kw["batch"] == s["micro_batch"]
    # the model memlib is asked about is the model the recipe ran
    cfg = s["model"]["config"]
    if isinstance(kw["model"], dict) and "memlib.Model" in kw["model"]:  # a model written in the script itself
        m = bench.resolve_model(kw["model"])
        assert (m.hidden_size, m.num_layers, m.num_heads, m.intermediate_size, m.vocab_size, m.tie_word_embeddings,
                m.max_position_embeddings) == (
            cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["intermediate_size"],
            cfg["vocab_size"], cfg["tie_word_embeddings"], cfg["max_position_embeddings"])
    elif isinstance(kw["model"], dict):
        assert kw["model"] == cfg
    else:
        m = memlib.get_model(kw["model"])
        assert (m.hidden_size, m.num_layers, m.num_heads, m.num_kv_heads, m.intermediate_size, m.vocab_size,
                m.tie_word_embeddings) == (
            cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"],
            cfg.get("num_key_value_heads", cfg["num_attention_heads"]), cfg["intermediate_size"],
            cfg["vocab_size"], cfg["tie_word_embeddings"])


def test_compared_bytes_follow_fits():
    """allocated -> the peak; reserved -> peak + 5% allocator headroom; nvidia-smi -> also + 0.5 GiB
    CUDA context (memlib.hardware.fit's defaults, written out here)."""
    peak = 10 * 2**30
    assert bench.compared_bytes(peak, "allocated") == peak
    assert bench.compared_bytes(peak, "active") == peak
    assert bench.compared_bytes(peak, "active", stream_held_bytes=3 * 10**9) == peak + 3 * 10**9
    assert bench.compared_bytes(peak, "allocated", stream_held_bytes=3 * 10**9) == peak
    assert bench.compared_bytes(peak, "reserved") == peak + peak // 20
    assert bench.compared_bytes(peak, "nvidia-smi") == peak + 512 * 2**20 + peak // 20
    with pytest.raises(ValueError, match="statistic"):
        bench.compared_bytes(peak, "smi")


def test_benchmark_handles_every_row_with_this_memlib():
    """No row crashes the benchmark: each is computed or says why not, naming the option it needs."""
    accepted = bench.accepted_options("estimate_training")
    for row in ROWS:
        r = bench.evaluate(row)
        assert r.status in ("ok", "inexpressible", "needs-options", "needs-model", "refused"), r.status
        if r.status == "ok":
            assert r.memlib_bytes > 0 and r.error is not None
        else:
            assert r.detail
        if r.status == "needs-options":
            assert r.missing_options and not set(r.missing_options) & accepted
            for o in r.missing_options:
                assert o in r.detail


def test_benchmark_prints_every_row(capsys):
    assert bench.main([]) == 0
    out = capsys.readouterr().out
    for rid in IDS:
        assert rid in out
    assert "median |error|" in out or "no row computed" in out


def test_published_allocated_peaks_within_issue_9_thresholds():
    """Issue 9, done when: on published allocated peaks whose setup memlib can express, median
    |error| <= 4%, worst <= 10%, and no row more than 10% low. Every expressible allocated row
    must be computed: none left needing an option or refused; a row whose model family this
    memlib cannot read (needs-model: phi-1.5, StableLM-Alpha) is not a setup memlib can express
    and is counted as soon as it can (at least 20 rows in any case)."""
    rows = [r for r in ROWS if r["memlib"]["expressible"] and r["statistic"] == "allocated"]
    results = [bench.evaluate(r) for r in rows]
    not_computed = [f"{r.row['id']}: {r.detail}" for r in results if r.status not in ("ok", "needs-model")]
    assert not not_computed, "not computed:\n" + "\n".join(not_computed)
    results = [r for r in results if r.status == "ok"]
    assert len(results) >= 20
    errors = [r.error for r in results]
    assert statistics.median(abs(e) for e in errors) <= 0.04
    assert max(abs(e) for e in errors) <= 0.10
    low = [f"{r.row['id']}: {r.error:+.1%}" for r in results if r.error < -0.10]
    assert not low, "more than 10% low:\n" + "\n".join(low)


# --- LitGPT's own step on fake tensors (validation/litgpt_probe.py, results_litgpt.json) ----------------------
LITGPT = __import__("json").loads((ROOT / "validation" / "results_litgpt.json").read_text())


def test_litgpt_probe_covers_every_one_gpu_litgpt_row_with_its_setup():
    """Every one-GPU LLaMA-family LitGPT row was run through LitGPT's own code at the row's commit, with the
    arguments the row's setup gives (so a changed row must be re-probed)."""
    spec = importlib.util.spec_from_file_location("litgpt_probe", ROOT / "validation" / "litgpt_probe.py")
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    rows = probe.litgpt_rows()
    assert {r["id"] for r in rows} == set(LITGPT["rows"])
    for r in rows:
        assert LITGPT["rows"][r["id"]]["args"] == probe.probe_args(r), r["id"]


@pytest.mark.parametrize("rid", sorted(LITGPT["rows"]))
def test_litgpt_rows_are_training_step_peaks(rid):
    """LitGPT's own training step (its model, Fabric's fp32 output, Lightning's 4-bit layers on the bitsandbytes
    it pinned) reproduces the published peak: the figure is set by the step, not by loading, validation or
    generation. The config-hub runs (2024) within 1.5% in the steady state; the 2023 table within 6% at its
    first iteration (the only one that holds the longest sample), always below it: what CUDA adds there is not
    known from the sources (see validation/README.md)."""
    row = next(r for r in ROWS if r["id"] == rid)
    rec = LITGPT["rows"][rid]
    if rid.startswith("litgpt-2023"):
        err = (rec["first_iteration_peak_bytes"] - row["bytes"]) / row["bytes"]
        assert -0.06 <= err < 0, f"{rid}: {err:+.1%}"
    else:
        err = (rec["steady_peak_bytes"] - row["bytes"]) / row["bytes"]
        assert abs(err) <= 0.015, f"{rid}: {err:+.1%}"
