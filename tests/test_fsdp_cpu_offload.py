"""FSDP's CPU offload (zero_stage="FULL_SHARD", offload="optimizer+params"): how Answer.AI's fsdp_qlora trains
Llama-2-70B on two 24 GB cards. Expected values are derived from the same setup without offload: FSDP's
CPUOffload moves exactly the sharded parameters, their gradients and the optimizer states to host memory."""

from __future__ import annotations

import pytest

import memlib
from memlib.parallel.plan import plan

QLORA_70B = dict(seq_len=2048, micro_batch=2, precision="bf16", finetune="qlora", lora_rank=64,
                 lora_targets="all-linear", lora_dropout=0.1, adapter_dtype="bf16", recompute="full",
                 zero_stage="FULL_SHARD", dp=2)


def _pair(model="llama-2-70b", **kw):
    on_gpu = memlib.estimate_training(model, **kw)
    offloaded = memlib.estimate_training(model, offload="optimizer+params", **kw)
    return on_gpu, offloaded


@pytest.mark.parametrize("model, kw", [
    ("llama-2-70b", QLORA_70B),
    ("llama-2-7b", dict(seq_len=1024, precision="bf16-mixed", zero_stage="FULL_SHARD", dp=4)),  # full FT, FSDP2 MP
    ("llama-2-7b", dict(seq_len=1024, precision="bf16-mixed", finetune="lora", zero_stage="FULL_SHARD", dp=2)),
])
def test_the_sharded_states_move_to_the_host_and_nothing_else_changes(model, kw):
    on_gpu, off = _pair(model, **kw)
    states = on_gpu.counts["param_bytes"] + on_gpu.counts["grad_bytes"] + on_gpu.counts["optimizer_bytes"]
    assert off.host_bytes == states and on_gpu.host_bytes == 0
    # moment by moment, the offload takes exactly the sharded states away: every other part is unchanged (at the
    # optimizer step its temporaries go too: torch's AdamW steps on the CPU)
    states_parts = ("parameters", "gradients", "optimizer")
    assert [m.where for m in off.moments] == [m.where for m in on_gpu.moments]
    for m0, m1 in zip(on_gpu.moments, off.moments):
        assert all(m1.parts.get(k, 0) == 0 for k in states_parts)
        for k, v in m0.parts.items():
            if k not in states_parts and not (m0.name == "optimizer" and k == "temporaries"):
                assert m1.parts.get(k, 0) == v, (m0.where, k)
        if m0.name != "optimizer":
            assert m1.total == m0.total - sum(m0.parts.get(k, 0) for k in states_parts)
    assert any("FSDP CPU offload" in n for n in off.notes)


def test_fsdp_qlora_70b_fits_two_24gb_cards_only_with_cpu_offload():
    # memlib's verdicts for fsdp_qlora's headline setup (benchmarks_03_2024.md: 70B, 2 x RTX 3090, CPU offload)
    on_gpu, off = _pair(**QLORA_70B)
    assert not memlib.fits(on_gpu, "rtx-3090").fits
    assert memlib.fits(off, "rtx-3090").fits
    r = plan("llama-2-70b", "rtx-3090", 2, task="qlora", seq_len=2048, micro_batch=2, grad_accum=1)
    assert r.feasible and all(p.settings["offload"] == "optimizer+params" for p in r.feasible)
    assert not plan("llama-2-70b", "rtx-3090", 2, task="qlora", seq_len=2048, micro_batch=2, grad_accum=1,
                    allow_offload=False).feasible


def test_offload_traffic_is_every_shard_up_twice_and_every_gradient_down_per_micro_batch():
    _, off = _pair(**{**QLORA_70B, "grad_accum": 4})
    t = memlib.step_time(off, "rtx-3090")
    c = off.counts
    # by hand: per micro-batch the forward and the backward all-gather each fetch the whole parameter shard from the
    # host, and the reduce-scattered gradient shard goes back down
    assert t.offload_bytes == 4 * (2 * c["param_bytes_unsharded"] // 2 + c["grad_bytes_unsharded"] // 2)
    assert t.offload_s > 0
    # the optimizer steps with torch's CPU AdamW: DeepSpeed's CPU-Adam rate, shared by the node's 2 processes, 6x slower
    assert t.cpu_optimizer_s == pytest.approx(6 * (c["trainable"] // 2) / (5e9 / 2))


@pytest.mark.parametrize("kw, match", [
    (dict(zero_stage="FULL_SHARD", dp=2, offload="optimizer"), "FSDP's CPU offload"),
    (dict(zero_stage="SHARD_GRAD_OP", dp=2, offload="optimizer+params"), "FSDP's CPU offload"),
    (dict(zero_stage="FULL_SHARD", dp=2, offload="optimizer+params", offload_device="nvme"), "offload_device='cpu'"),
    (dict(zero_stage="NO_SHARD", dp=2, offload="optimizer+params"), "FSDP's CPU offload"),
])
def test_other_fsdp_offloads_are_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        memlib.estimate_training("llama-2-7b", seq_len=512, **kw)
