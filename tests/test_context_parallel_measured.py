"""memlib's context-parallel estimate against ring attention measured on fake tensors (validation/results_cp.json,
recorded by `python -m validation.context_parallel --all --write`; these tests need no torch). The expected values
are the measured peaks of torch's own ring attention with FSDP2 over a fake process group, rank cp - 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlib.training.measured import estimate_case

DATA = json.loads((Path(__file__).resolve().parents[1] / "validation" / "results_cp.json").read_text())
CASES = DATA["cases"]


def test_cases_cover_both_rotate_methods_recompute_and_autocast():
    inputs = [c["inputs"] for c in CASES]
    assert {"allgather", "alltoall"} <= {i["cp"]["rotate"] for i in inputs}
    assert {2, 4, 8} <= {i["cp"]["degree"] for i in inputs}
    assert {"none", "full"} <= {i["recompute"] for i in inputs}
    assert {"bf16", "bf16-mixed"} <= {i["precision"] for i in inputs}
    assert DATA["metadata"]["torch"] and "wait_tensor" in DATA["metadata"]["artifacts_removed"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_ring_attention_ran_and_memlib_is_within_3_percent(case):
    m = case["measured"]
    layers = case["inputs"]["config"]["num_hidden_layers"]
    assert m["ring_calls"]["ring_forward"] >= 2 * layers and m["ring_calls"]["ring_backward"] >= 2 * layers
    assert m["rank"] == m["cp"] - 1
    if m.get("agreement"):
        assert abs(m["agreement"]["rel_diff"]) <= 0.01
    err = (estimate_case(case["inputs"]).peak_bytes - m["peak_bytes"]) / m["peak_bytes"]
    assert -0.02 <= err <= 0.03, f"{case['name']}: memlib is off by {err:+.2%} from the measured peak"
