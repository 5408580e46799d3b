"""Megatron-LM with --fp16 and unfused attention against published logs (validation/published.jsonl rows
llmaction-megatron-gpt-345m-*: GPT-345M on 4 A800s, liguodongiot/llm-action@bd73146 train/megatron/gpt2/model_train.md).
Expected values are the logged figures, Megatron-LM's distributed-optimizer table (dist_optimizer.md), and Korthikanti
et al. 2022's per-layer formula, written out below."""

from __future__ import annotations

import importlib.util
import sys
from fractions import Fraction
from pathlib import Path

import pytest

import memlib

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("published_benchmark_megatron_legacy", ROOT / "benchmarks" / "published.py")
bench = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = bench
_spec.loader.exec_module(bench)

ROWS = {r["id"]: r for r in bench.load_rows() if r["id"].startswith("llmaction-megatron-")}
N = 354_871_296  # the log: "number of parameters on (tensor, pipeline) model parallel rank (0, 0): 354871296"


def _estimate(row, **over):
    kw = {**row["memlib"]["kwargs"], **over}
    kw["model"] = bench.resolve_model(kw["model"])
    return memlib.estimate_training(**kw)


def test_four_rows():
    assert sorted(ROWS) == sorted(f"llmaction-megatron-gpt-345m-fp16-{k}" for k in ("4dp", "tp2-pp2", "tp4", "pp4"))
    assert bench.resolve_model(ROWS["llmaction-megatron-gpt-345m-fp16-4dp"]["memlib"]["kwargs"]["model"]).num_params == N


@pytest.mark.parametrize("rid", sorted(ROWS))
def test_row_within_its_band(rid):
    """docs/validation.md (Megatron-LM --fp16, unfused attention): each row within 4% below and 2% above."""
    r = bench.evaluate(ROWS[rid])
    assert r.status == "ok", r.detail
    assert -0.04 <= r.error <= 0.02, f"{rid}: {r.error:+.2%}"


def test_fp16_states_follow_megatrons_table():
    """dist_optimizer.md's table, fp16 parameters with fp16 gradients: 20 bytes/param, or 4 + 16/d with the distributed
    optimizer (the fp32 main gradient the step makes is sharded with the master and the moments). memlib has them
    at the step; in the forward and backward 4 fewer (the fp32 gradients are freed by the next zero_grad)."""
    from memlib.parallel.megatron import megatron_bytes_per_param
    row = ROWS["llmaction-megatron-gpt-345m-fp16-4dp"]
    for zero_stage in (0, 1):
        est = _estimate(row, zero_stage=zero_stage, attention="sdpa")  # no score buffer: the states alone
        step = next(mo for mo in est.moments if mo.name == "optimizer").parts
        states = step["parameters"] + step["gradients"] + step["optimizer"] + step["temporaries"]
        per_param = megatron_bytes_per_param("fp16-grads", distributed_optimizer=bool(zero_stage), dp=4)
        assert states == per_param * N
        fwd = next(mo for mo in est.moments if mo.name == "forward").parts
        assert fwd["parameters"] + fwd["gradients"] + fwd["optimizer"] == (per_param - Fraction(4, 4 if zero_stage else 1)) * N
    # bf16 keeps fp32 main gradients: 18, or 6 + 12/d, at every moment
    est = _estimate(row, precision="bf16-mixed", zero_stage=1, attention="sdpa")
    step = next(mo for mo in est.moments if mo.name == "optimizer").parts
    assert step["parameters"] + step["gradients"] + step["optimizer"] + step["temporaries"] == \
        megatron_bytes_per_param("fp32-grads", distributed_optimizer=True, dp=4) * N


def test_between_steps_allocated_by_hand():
    """The 4DP log's 'allocated: 6816.888 MiB' after iteration 100 is what lives between steps: fp16 params 2 + fp16
    grad buffer 2 + fp32 main params 4 + Adam 8 + the step's fp32 gradients 4 = 20 bytes x 354,871,296 = 6,768.6 MiB,
    plus the unfused attention's score buffer kept in Megatron's global memory buffer, 16 heads x 1024 x 1024 x 1
    x 2 bytes = 32 MiB: 6,800.6 MiB, 0.2% under (the rest: the data batch and the loss)."""
    est = _estimate(ROWS["llmaction-megatron-gpt-345m-fp16-4dp"])
    assert {t.name: t.nbytes for t in est.terms}["megatron_attention_score_buffer_bytes"] == 16 * 1024 * 1024 * 2
    step = next(mo for mo in est.moments if mo.name == "optimizer").parts
    between = step["parameters"] + step["gradients"] + step["optimizer"] + step["temporaries"]
    assert between == 20 * N + 16 * 1024 * 1024 * 2
    logged = 6816.88818359375 * 2**20
    assert -0.005 <= (between - logged) / logged <= 0


def test_unfused_attention_layer_is_korthikanti_by_hand():
    """Korthikanti et al. 2022 eq. (2), t = 1: 34 s b h + 5 a s^2 b bytes a layer with dropout, of which the unfused
    attention core is 5 a s^2 b (softmax output 2, dropout mask 1, dropped-out probabilities 2); memlib adds the two
    LayerNorms' fp32 mean and 1/sigma (8 bytes a token each). GPT-345M, s = 1024, b = 1, h = 1024, a = 16."""
    s, b, h, a = 1024, 1, 1024, 16
    est = _estimate(ROWS["llmaction-megatron-gpt-345m-fp16-4dp"])
    assert est.layer.total == 34 * s * b * h + 5 * a * s * s * b + 2 * 8 * s * b
    # flash attention keeps no s x s tensor: the core's 5 a s^2 b become its fp32 log-sum-exp (4 a s b)
    flash = _estimate(ROWS["llmaction-megatron-gpt-345m-fp16-4dp"], attention="sdpa")
    assert flash.layer.total == 34 * s * b * h + 4 * a * s * b + 2 * 8 * s * b
    # without attention dropout only the softmax output stays: 2 a s^2 b
    nodrop = _estimate(ROWS["llmaction-megatron-gpt-345m-fp16-4dp"], attention_dropout=0.0)
    assert nodrop.layer.total == 34 * s * b * h + 2 * a * s * s * b + 2 * 8 * s * b
    # selective recompute drops the attention core (Korthikanti Sec. 5)
    sel = _estimate(ROWS["llmaction-megatron-gpt-345m-fp16-4dp"], recompute="selective")
    assert sel.layer.total == 34 * s * b * h + 2 * 8 * s * b


def test_out_of_place_max_subtraction_by_hand():
    """Megatron-LM before 9634c0e (2024-06-13) computed the loss on `logits.float()` and subtracted the max out of
    place (`vocab_parallel_logits = vocab_parallel_logits - logits_max.unsqueeze(-1)`): at the loss the 16-bit
    logits 2 + their fp32 copy 4 + the new fp32 difference 4 = 10 bytes per logit over V/t, where the in-place
    release keeps 6. GPT-345M, tp 4, micro-batch 2 x 1024 tokens: 4 x 50,304 / 4 x 2,048 bytes more at the loss."""
    row = ROWS["llmaction-megatron-gpt-345m-fp16-tp4"]
    old, new = (_estimate(row, megatron_ce_inplace=v) for v in (False, True))

    def at_loss(est):
        return next(mo for mo in est.moments if mo.where.startswith("at the loss")).parts["logits_and_loss"]
    assert at_loss(old) == 10 * 50_304 // 4 * 2_048
    assert at_loss(old) - at_loss(new) == 4 * 50_304 // 4 * 2_048
