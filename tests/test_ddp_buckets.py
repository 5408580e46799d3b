"""torch DDP's all-reduce buckets (terms.ddp_bucket_bytes) against real CPU runs (validation/results_ddp.json,
recorded by `python -m validation.ddp_buckets --write`; these tests need no torch)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import memlib
from memlib import Model

DATA = json.loads((Path(__file__).resolve().parents[1] / "validation" / "results_ddp.json").read_text())
# The recorded model by hand: embeddings 1024 x 256; per layer q, k, v, o 4 x 256^2, gate/up/down 3 x 256 x 688,
# two norms 2 x 256; final norm 256; untied head 1024 x 256.
PARAMS = 1024 * 256 + 2 * (4 * 256 * 256 + 3 * 256 * 688 + 2 * 256) + 256 + 1024 * 256  # 2,106,624


def _model() -> Model:
    return Model.from_hf_config(DATA["config"], name="ddp-tiny-llama")


def test_the_recorded_model_has_the_hand_counted_parameters():
    assert _model().num_params == PARAMS == 2_106_624


@pytest.mark.parametrize("case", DATA["cases"], ids=[c["name"] for c in DATA["cases"]])
def test_ddp_adds_one_gradient_copy_as_measured(case):
    peaks = case["peaks"]
    grad_bytes = 2 if case["precision"] == "bf16" else 4  # bf16: bf16 gradients; bf16-mixed: fp32 params and grads
    measured_extra = peaks["ddp"] - peaks["none"]
    assert measured_extra == PARAMS * grad_bytes  # the real run: exactly one more copy of the gradients
    kw = dict(seq_len=DATA["seq_len"], micro_batch=DATA["micro_batch"], precision=case["precision"],
              optimizer_impl="for-loop")
    one = memlib.estimate_training(_model(), **kw)
    ddp = memlib.estimate_training(_model(), **kw, dp=2)
    view = memlib.estimate_training(_model(), **kw, dp=2, gradient_as_bucket_view=True)
    assert ddp.peak_bytes - one.peak_bytes == measured_extra
    assert view.peak_bytes == one.peak_bytes
    # with gradient_as_bucket_view=True the run keeps at most a transient under DDP's first bucket cap (1 MiB,
    # torch.distributed's _DEFAULT_FIRST_BUCKET_BYTES) beyond no DDP: not modelled
    assert 0 <= peaks["ddp-bucket-view"] - peaks["none"] < 2**20
    assert any("DDP over 2 GPUs" in n for n in ddp.notes)
    assert "ddp_bucket_bytes" in {t.name for t in ddp.terms}


def test_the_buckets_are_only_for_torch_ddp():
    kw = dict(seq_len=512, precision="bf16-mixed")
    base = memlib.estimate_training("llama-7b", **kw)
    # FSDP's NO_SHARD all-reduces its flat gradients directly; Megatron's DDP keeps grads in its own buffer
    assert memlib.estimate_training("llama-7b", **kw, dp=2, zero_stage="NO_SHARD").peak_bytes == base.peak_bytes
    with pytest.raises(ValueError, match="gradient_as_bucket_view=True does not apply"):
        memlib.estimate_training("llama-7b", **kw, gradient_as_bucket_view=True)  # dp=1: no DDP
    with pytest.raises(ValueError, match="gradient_as_bucket_view=True does not apply"):
        memlib.estimate_training("llama-7b", **kw, dp=2, zero_stage=3, gradient_as_bucket_view=True)
    with pytest.raises(ValueError, match="gradient_as_bucket_view"):
        memlib.estimate_training("llama-7b", **kw, dp=2, gradient_as_bucket_view="yes")
