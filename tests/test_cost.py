"""memlib.cost: training-run arithmetic, and published GPU-hours reproduced within 25%.

Expected values are hand derivations written out below, or figures from the papers quoted in
validation/published_gpu_hours.json; none is memlib's own output pasted back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

import memlib
from memlib import cost
from memlib.cost.timing import step_time

DATA = json.loads((Path(__file__).resolve().parents[1] / "validation" / "published_gpu_hours.json").read_text())
H100 = 989.4e12  # dense bf16 FLOP/s (the catalog's H100 SXM figure)


def test_training_flops_6nd_and_the_attention_term():
    """6·N·D (Kaplan et al. 2020); with seq_len, + 12·L·H·Q·T per token (PaLM App. B).
    Llama-2-7B on 2T tokens at 4096: N = 6,738,415,616, L = H = 32, Q = 128."""
    n, d = 6_738_415_616, 2e12
    assert cost.training_flops("llama-2-7b", d) == 6 * n * d
    assert cost.training_flops("llama-2-7b", d, seq_len=4096) == (6 * n + 12 * 32 * 32 * 128 * 4096) * d
    assert cost.training_flops(37e9, 14.8e12) == 6 * 37e9 * 14.8e12  # a plain parameter count
    assert cost.training_flops(1e9, 1e6, attention_flops_per_token=5e8) == (6e9 + 5e8) * 1e6


def test_training_flops_of_a_mixture_of_experts_use_the_active_parameters():
    @dataclass(frozen=True)
    class MoE(memlib.Model):
        @property
        def num_active_params(self):
            return 37 * 10**9

    base = memlib.get_model("llama-7b")
    moe = MoE(**{f: getattr(base, f) for f in ("name", "hidden_size", "num_layers", "num_heads",
                                               "intermediate_size", "vocab_size")})
    assert cost.training_flops(moe, 1e12) == 6 * 37e9 * 1e12
    assert cost.chinchilla_tokens(moe) == 20 * 37e9


def test_chinchilla_tokens():
    """~20 tokens per parameter: Chinchilla itself, 70B parameters on 1.4T tokens (Hoffmann et al. 2022)."""
    assert cost.chinchilla_tokens(70e9) == pytest.approx(1.4e12)
    assert cost.chinchilla_tokens("llama-2-7b") == 20 * 6_738_415_616


def test_gpu_hours_wall_clock_and_cost():
    """1e24 FLOPs at 40% of an H100's 989.4 TFLOP/s: 1e24 / 395.76e12 / 3600 = 701,884 GPU-hours;
    on 256 GPUs 2,741.7 hours = 114.2 days; at $2 per GPU-hour $1.404M."""
    hours = 1e24 / (H100 * 0.4) / 3600
    assert cost.gpu_hours(1e24, "h100-80gb", 0.4) == pytest.approx(hours)
    assert hours == pytest.approx(701_884, rel=1e-6)
    run = cost.training_run(1e24 / 6 / 1e12, 1e12, "h100-80gb", 256, mfu=0.4)  # N = 1e24 / (6 x 1e12)
    assert run.flops == pytest.approx(1e24) and run.gpu_hours == pytest.approx(hours)
    assert run.days == pytest.approx(hours / 256 / 24)
    assert run.cost(2.0) == pytest.approx(2 * hours)
    # DeepSeek-V3 Table 1: 2,664K H800 GPU-hours of pretraining at $2 per GPU-hour is $5.328M
    ds = next(r for r in DATA["rows"] if r["id"] == "deepseek-v3")
    published = cost.TrainingRun(0.0, ds["tokens"], "h100-80gb", 2048, 0.0, ds["published_gpu_hours"], 0.0)
    assert published.cost(ds["cost"]["usd_per_gpu_hour"]) == pytest.approx(ds["cost"]["published_usd"])


def test_run_from_a_step_time_layout():
    """llama-7b on one A100 (no communication, no bubble): the run is tokens / tokens_per_step steps
    of step_s, and the achieved MFU is exactly the one step_time was given."""
    t = step_time(memlib.estimate_training("llama-7b", seq_len=2048, grad_accum=4), "a100-80gb", mfu=0.4)
    run = cost.training_run_from_step(t, 1e9, "a100-80gb")
    assert run.wall_clock_s == pytest.approx(1e9 / t.tokens_per_step * t.step_s)
    assert run.gpu_hours == pytest.approx(run.wall_clock_s / 3600)
    assert run.mfu == pytest.approx(0.4)
    # data parallel over 8 GPUs: more GPUs, the same GPU-hours when communication hides
    t8 = step_time(memlib.estimate_training("llama-7b", seq_len=2048, grad_accum=4, zero_stage=3, dp=8), "a100-80gb")
    run8 = cost.training_run_from_step(t8, 1e9, "a100-80gb")
    assert run8.gpu_hours == pytest.approx(run.gpu_hours) and run8.wall_clock_s == pytest.approx(run.wall_clock_s / 8)


def test_mfu_from_a_published_throughput():
    """Llama 1: 380 tokens/s/GPU of LLaMA-65B at 2048 tokens on A100 (312 TFLOP/s):
    (6 x 65,285,660,672 + 12 x 80 x 64 x 128 x 2048) x 380 / 312e12 = 0.4967."""
    fpt = 6 * 65_285_660_672 + 12 * 80 * 64 * 128 * 2048
    assert cost.mfu_from_throughput("llama-65b", 2048, 380, "a100-80gb") == pytest.approx(fpt * 380 / 312e12)
    assert fpt * 380 / 312e12 == pytest.approx(0.4967, abs=1e-4)


def test_published_gpu_hours_reproduced_within_25_percent():
    """Each asserted row: memlib's 6ND + attention FLOPs at the MFU its source reports (or implies by a
    reported throughput) lands within max_error of the published GPU-hours."""
    rows = cost.reproduce_published(DATA)
    asserted = [r for r in rows if r["asserted"]]
    assert len(asserted) >= 2 and DATA["max_error"] == 0.25
    papers = {next(x for x in DATA["rows"] if x["id"] == r["id"])["source"]["paper"].split(",")[0] for r in asserted}
    assert len(papers) >= 2  # at least two independent publications
    for r in asserted:
        assert r["mfu"] is not None and r["mfu_source"]
        assert abs(r["error"]) <= DATA["max_error"], (r["id"], r["error"], r["mfu"])
    for r in rows:
        assert 0 < r["implied_mfu"] < 1, r["id"]
        if not r["asserted"]:
            assert next(x for x in DATA["rows"] if x["id"] == r["id"])["why_not_asserted"]


def test_every_published_row_quotes_its_source():
    for row in DATA["rows"]:
        assert row["quote"] and row["source"]["paper"] and row["source"]["url"].startswith("https://")
        mfu = row["mfu"]
        if isinstance(mfu, dict):
            assert mfu["quote"] and mfu["source"]["paper"] and mfu["why"]


@pytest.mark.parametrize("call, match", [
    (lambda: cost.training_flops("llama-7b", 0), "tokens"),
    (lambda: cost.training_flops(True, 1e9), "model"),
    (lambda: cost.training_flops(7e9, 1e9, seq_len=2048), "seq_len needs a Model"),
    (lambda: cost.gpu_hours(1e24, "h100-80gb", mfu=40), "mfu"),
    (lambda: cost.gpu_hours(1e24, "v100-32gb"), "bf16"),
    (lambda: cost.gpu_hours(1e24, "h100-80gb", precision="fp8"), "precision"),
    (lambda: cost.training_run("llama-7b", 1e12, "h100-80gb", 0), "gpus"),
    (lambda: cost.training_run("llama-7b", 1e12, "h100-80gb", 8).cost(-2), "price_per_gpu_hour"),
    (lambda: cost.training_run_from_step("not a step", 1e9, "a100-80gb"), "StepTime"),
])
def test_bad_input_is_a_value_error_naming_it(call, match):
    with pytest.raises(ValueError, match=match):
        call()
