"""memlib against measured training steps (validation/results.json, recorded by the harness
with torch + transformers; these tests need neither). The expected values are the measured
peaks: an independent source, not memlib's own output."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

import memlib
import memlib.training.lora
from memlib.training.measured import estimate_case

RESULTS = Path(__file__).resolve().parents[1] / "validation" / "results.json"
DATA = json.loads(RESULTS.read_text())
CASES = DATA["cases"]


def rel_error(case: dict) -> float:
    measured = case["measured"]["peak_bytes"]
    return (estimate_case(case["inputs"]).peak_bytes - measured) / measured


def test_results_are_recorded_with_versions():
    meta = DATA["metadata"]
    for key in ("torch", "transformers", "peft"):
        assert meta.get(key), f"results.json lacks the {key} version"
    assert len(CASES) >= 15


def test_coverage_of_recorded_cases():
    """The issue's span: both precisions, both recompute settings, both attentions, up to 8k
    tokens, micro-batch 1..8, GQA, tied embeddings, a 152k vocabulary, 3+ LoRA, a whole 7B model."""
    inputs = [c["inputs"] for c in CASES]
    assert {"bf16", "bf16-mixed"} <= {i["precision"] for i in inputs}
    assert {"none", "full"} <= {i["recompute"] for i in inputs}
    assert {"sdpa", "eager"} <= {i["attention"] for i in inputs}
    assert max(i["seq_len"] for i in inputs) >= 8192
    assert {1, 8} <= {i["micro_batch"] for i in inputs}
    assert any(i["config"].get("num_key_value_heads", 0) < i["config"]["num_attention_heads"] for i in inputs)
    assert any(i["config"].get("tie_word_embeddings") for i in inputs)
    assert any(i["config"]["vocab_size"] >= 150_000 for i in inputs)
    assert sum(i["finetune"] == "lora" for i in inputs) >= 3
    assert any(memlib.Model.from_hf_config(i["config"]).num_params > 6e9 for i in inputs)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_each_case_within_5_percent(case):
    err = rel_error(case)
    assert abs(err) <= 0.05, f"{case['name']}: memlib is off by {err:+.2%} from the measured peak"


def test_median_error_within_2_percent():
    errors = [abs(rel_error(c)) for c in CASES]
    assert statistics.median(errors) <= 0.02, f"median |error| {statistics.median(errors):.2%}"


def test_holdout_cases_present_and_within_5_percent():
    holdouts = [c for c in CASES if c.get("holdout")]
    assert holdouts, "no holdout cases recorded"
    for c in holdouts:
        assert abs(rel_error(c)) <= 0.05, c["name"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_parameter_count_matches_the_built_model(case):
    facts = case["measured"]["facts"]
    model = memlib.Model.from_hf_config(case["inputs"]["config"])
    if case["inputs"]["finetune"] == "full":
        assert model.num_params == facts["param_count"]
        return
    # peft adds the adapters to the count
    lora = case["inputs"]["lora"]
    adapters = memlib.training.lora.lora_params(model, lora["r"], lora["targets"])
    assert adapters == facts["trainable_count"]
    if case["inputs"]["finetune"] == "lora":
        assert model.num_params + adapters == facts["param_count"]
        return
    # QLoRA: the projections are 4-bit buffers, not parameters. The harness lays them out as bitsandbytes'
    # quantize_4bit returns them (validation/qlora.py); besides memlib.training.lora.nf4_bytes per projection it holds
    # a 16-entry fp32 NF4 code and an fp32 offset per projection, one 256-entry fp32 dynamic map and the
    # rotary inv_freq (head_dim / 2 fp32).
    h, I, L = model.hidden_size, model.intermediate_size, model.num_layers
    shapes = [h * model.q_size, h * model.kv_size, h * model.kv_size, model.q_size * h, h * I, h * I, I * h]
    q = case["inputs"].get("qlora") or {}
    head = [model.vocab_size * h] if q.get("backend", "bitsandbytes").startswith("lightning-") else []  # 4-bit head
    assert model.num_params - L * sum(shapes) - sum(head) + adapters == facts["param_count"]
    dq = q.get("double_quant", True)
    per_projection = 16 * 4 + (4 if dq else 0)
    expected = (sum(memlib.training.lora.nf4_bytes(n, double_quant=dq) + per_projection for n in shapes * L + head)
                + 256 * 4 * dq + model.head_dim // 2 * 4)
    assert facts["buffer_bytes"] == expected


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_phase_of_the_peak(case):
    """memlib names the measured phase, or one whose measured peak is within 1% of it."""
    peaks = case["measured"]["phase_peaks"]
    top = max(peaks.values())
    acceptable = {p for p, v in peaks.items() if v >= 0.99 * top}
    assert estimate_case(case["inputs"]).phase in acceptable


# --- FSDP2 sharded runs (validation/results_fsdp.json, FSDPMemTracker, rank 0) ---------------
FSDP = json.loads((RESULTS.parent / "results_fsdp.json").read_text())
FSDP_CASES = FSDP["cases"]


def test_fsdp_cases_recorded():
    sizes = {c["inputs"]["fsdp"]["world_size"] for c in FSDP_CASES}
    assert {1, 4, 8} <= sizes and len(FSDP_CASES) >= 6
    assert FSDP["metadata"]["torch"]


@pytest.mark.parametrize("case", FSDP_CASES, ids=[c["name"] for c in FSDP_CASES])
def test_fsdp_case_within_8_percent(case):
    measured = case["measured"]["peak_bytes"]
    err = (estimate_case(case["inputs"]).peak_bytes - measured) / measured
    assert abs(err) <= 0.08, f"{case['name']}: memlib is off by {err:+.2%} from FSDPMemTracker's peak"
