"""The measured training runs of the newer families (validation/results_families.json).

The training estimator for these families is the next phase; what memlib already predicts
exactly is checked here: the parameter count of every measured model, its parameter bytes,
and AdamW's state bytes (exp_avg and exp_avg_sq in the parameter dtype, plus one fp32 `step`
scalar per parameter tensor, torch.optim.AdamW(foreach=False)). The two trackers must agree.
"""

import json
from pathlib import Path

import pytest

from memlib import Model

DATA = json.loads((Path(__file__).parents[1] / "validation" / "results_families.json").read_text())
CASES = [c for c in DATA["cases"] if "measured" in c]


def model_of(case) -> Model:
    return Model.from_hf_config(case["inputs"]["config"], name=case["name"])


def test_enough_cases_of_the_right_kinds():
    assert DATA["metadata"]["torch"] and DATA["metadata"]["transformers"].startswith("5.")
    new = [c for c in CASES if c["family"] != "llama-baseline"]
    assert len(new) >= 8
    models = [model_of(c) for c in new]
    assert len({c["family"] for c, m in zip(new, models) if m.is_moe}) >= 2
    assert any(m.is_mla for m in models)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_parameter_count_and_bytes(case):
    m = model_of(case)
    facts = case["measured"]["facts"]
    assert m.num_params == facts["param_count"]
    width = 4 if case["inputs"]["precision"].endswith("mixed") else 2
    peak = case["measured"]["memtracker"]["step2"]["breakdown_at_peak"]
    assert peak["PARAM"] == width * m.num_params


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_adamw_state_bytes(case):
    m = model_of(case)
    width = 4 if case["inputs"]["precision"].endswith("mixed") else 2
    tensors = sum(t.count for t in m.tensors())  # one fp32 step scalar per parameter tensor
    peak = case["measured"]["memtracker"]["step2"]["breakdown_at_peak"]
    assert peak["OPT"] == 2 * width * m.num_params + 4 * tensors


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_trackers_agree(case):
    assert abs(case["measured"]["agreement"]["rel_diff"]) < 0.01


def test_moe_runs_use_grouped_mm():
    # the memory of grouped_mm does not depend on the routing (tokens x top-k rows); the README says so
    for c in CASES:
        impl = c["measured"]["implementations"]["experts_implementation"]
        if model_of(c).is_moe and c["family"] != "llama4_text":
            assert impl == "grouped_mm", c["name"]
