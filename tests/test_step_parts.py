"""memlib.cost.step_parts: the parts of a step's time add up to step_s and isolate the bubble."""

import math

import pytest

import memlib
from memlib.cost.step_parts import PARTS, step_parts


@pytest.mark.parametrize("kw", [
    dict(zero_stage=3, dp=8, grad_accum=2),
    dict(tp=8, grad_accum=4),
    dict(pp=4, grad_accum=4),
    dict(tp=2, pp=2, dp=2, grad_accum=4),
    dict(zero_stage=3, dp=1, offload="optimizer+params", offload_device="nvme", recompute="full"),
])
def test_parts_sum_to_step_time(kw):
    t = memlib.step_time(memlib.estimate_training("llama-7b", **kw), "a100-80gb")
    parts = step_parts(t)
    assert tuple(parts) == PARTS
    assert all(v >= 0 for v in parts.values())
    assert math.isclose(sum(parts.values()), t.step_s, rel_tol=1e-12)


def test_bubble_is_the_pipeline_share():
    # p = 4 stages, m = 4 micro-batches: bubble (p-1)/(m+p-1) = 3/7 of the compute time
    t = memlib.step_time(memlib.estimate_training("llama-7b", pp=4, grad_accum=4), "a100-80gb")
    parts = step_parts(t)
    assert math.isclose(parts["pipeline bubble"] / (parts["compute"] + parts["pipeline bubble"]), 3 / 7)
    # without a pipeline there is no bubble
    t1 = memlib.step_time(memlib.estimate_training("llama-7b", zero_stage=3, dp=8), "a100-80gb")
    assert step_parts(t1)["pipeline bubble"] == 0


def test_rejects_other_objects():
    with pytest.raises(ValueError, match="StepTime"):
        step_parts(memlib.estimate_training("llama-7b"))
