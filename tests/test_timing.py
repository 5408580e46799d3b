"""memlib.cost.timing: data-parallel collectives per micro-batch, the overlap rule, CPU-Adam per node.

Every expected value below is derived by hand in the test from the formula it checks (ring
volumes: Patarasuk & Yuan 2009) and the implementation's behaviour (cited in memlib.cost.timing),
with the model sizes as the only inputs. A100 80GB: 312 dense bf16 TFLOP/s, NVLink 3 at
300 GB/s each way; memlib's default MFU is 0.4.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

import memlib
from memlib.cost.timing import (CPU_ADAM_PARAMS_PER_S, DS_MAX_REUSE_DISTANCE, all_gather_bytes, all_reduce_bytes,
                           dp_collectives, flops_per_token, reduce_scatter_bytes, step_time)

PSI = 6_738_415_616  # llama-7b parameters
L, H, Q = 32, 32, 128  # llama-7b layers, heads, head dim
T = 2048
ATTN = L * H * Q * T  # L·H·Q·T per token
ROOT = 2 * 32_000 * 4096 + 4096  # llama-7b embed_tokens + lm_head + final norm (FSDP2's root module)
A100 = 312e12 * 0.4  # FLOP/s at the default MFU
NVLINK = 300e9  # A100 NVLink 3, bytes/s each way


def est(model="llama-7b", **kw):
    return memlib.estimate_training(model, seq_len=T, **kw)


def micro_batch_seconds(recompute="none"):
    """(forward, backward) seconds of one 2048-token micro-batch of llama-7b on one A100."""
    fwd = (2 * PSI + 4 * ATTN) * T / A100
    total = (8 * PSI + 16 * ATTN if recompute == "full" else 6 * PSI + 12 * ATTN) * T / A100
    return fwd, total - fwd


def test_ring_volumes():
    """Ring all-reduce sends 2(n-1)/n of the buffer per GPU; reduce-scatter and all-gather (n-1)/n each."""
    assert all_reduce_bytes(8e9, 4) == 12e9
    assert reduce_scatter_bytes(8e9, 4) == 6e9
    assert all_gather_bytes(8e9, 4) == 6e9
    assert all_reduce_bytes(8e9, 1) == reduce_scatter_bytes(8e9, 1) == all_gather_bytes(8e9, 1) == 0


def test_ddp_all_reduces_once_per_step_whatever_the_accumulation():
    """DDP under no_sync: one all-reduce of fp32 (AMP) gradients per step, hidden by the last backward."""
    for m in (1, 8):
        t = step_time(est(dp=8, grad_accum=m), "a100-80gb")
        assert t.dp_scheme == "DDP"
        assert t.dp_comm_bytes == int(2 * 7 / 8 * PSI * 4)
        assert t.dp_reduce_bytes == t.dp_comm_bytes and t.dp_gather_bytes == 0
        # 47.2 GB / 300 GB/s = 0.157 s < one backward (4N + 8·L·H·Q·T)·T / 124.8 TFLOP/s = 0.48 s
        _, bwd = micro_batch_seconds()
        assert t.dp_comm_s == pytest.approx(2 * 7 / 8 * PSI * 4 / NVLINK)
        assert t.dp_comm_s < bwd and t.dp_exposed_s == 0


def test_zero1_reduces_at_the_boundary_and_is_not_overlapped():
    """ZeRO-1: one bucket all-reduce of 16-bit gradients at the boundary, one all-gather of the
    updated parameters after the step; DeepSpeed's overlap_comm is off for stage 1: all exposed."""
    for m in (1, 8):
        t = step_time(est(dp=8, zero_stage=1, grad_accum=m), "a100-80gb")
        reduce, gather = 2 * 7 / 8 * PSI * 2, 7 / 8 * PSI * 2
        assert t.dp_comm_bytes == int(reduce + gather)
        assert t.dp_exposed_s == pytest.approx((reduce + gather) / NVLINK)


def test_zero2_reduces_after_every_micro_batch():
    """ZeRO-2: the bucket all-reduce runs after every micro-batch's backward (overlapped with it),
    the parameter all-gather once after the step (exposed)."""
    m = 4
    t = step_time(est(dp=8, zero_stage=2, grad_accum=m), "a100-80gb")
    reduce, gather = 2 * 7 / 8 * PSI * 2, 7 / 8 * PSI * 2
    assert t.dp_reduce_bytes == int(m * reduce)
    assert t.dp_gather_bytes == int(gather)
    assert t.dp_comm_bytes == int(m * reduce + gather)
    _, bwd = micro_batch_seconds()
    assert reduce / NVLINK < bwd  # 23.6 GB in 0.079 s, hidden by each 0.48 s backward
    assert t.dp_exposed_s == pytest.approx(gather / NVLINK)
    # with use_multi_rank_bucket_allreduce off, each slice is reduced to its owner: (n-1)/n, the paper's figure
    _, colls = dp_collectives(est(dp=8, zero_stage=2, grad_accum=m), ds_bucket_allreduce=False)
    assert sum(c.bytes_per_gpu * c.per_step for c in colls) == pytest.approx(m * 7 / 8 * PSI * 2 + gather)


def test_zero3_gathers_twice_and_reduce_scatters_every_micro_batch():
    """ZeRO-3: all-gather in every forward and again in every backward (less the ~5e8 parameters
    DeepSpeed keeps by max_reuse_distance), reduce-scatter after every backward, 16-bit."""
    kept = DS_MAX_REUSE_DISTANCE // 2
    per_micro_batch = 7 / 8 * 2 * (PSI + (PSI - kept) + PSI)
    one = step_time(est(dp=8, zero_stage=3, grad_accum=1), "a100-80gb")
    eight = step_time(est(dp=8, zero_stage=3, grad_accum=8), "a100-80gb")
    assert one.dp_comm_bytes == pytest.approx(per_micro_batch, abs=2)
    assert eight.dp_comm_bytes == pytest.approx(8 * per_micro_batch, abs=8)  # grows with accumulation
    assert eight.dp_gather_bytes == pytest.approx(8 * 7 / 8 * 2 * (2 * PSI - kept), abs=8)
    # m = 1 without the reuse: 3 x (n-1)/n x 2Ψ = 1.5x data parallelism's 2 x (n-1)/n x 2Ψ (ZeRO paper Sec. 7)
    paper_dp = 2 * 7 / 8 * PSI * 2
    assert (per_micro_batch + 7 / 8 * 2 * kept) / paper_dp == pytest.approx(1.5)


def test_fsdp_full_shard_and_shard_grad_op():
    """FSDP2 with bf16-mixed: gathers in bf16 (param_dtype), reduce-scatters in fp32 (reduce_dtype);
    FULL_SHARD gathers twice per micro-batch (the root module once), SHARD_GRAD_OP once."""
    m = 2
    full = step_time(est(dp=8, zero_stage="FULL_SHARD", grad_accum=m), "a100-80gb")
    op = step_time(est(dp=8, zero_stage="SHARD_GRAD_OP", grad_accum=m), "a100-80gb")
    assert full.dp_scheme == "FSDP FULL_SHARD" and op.dp_scheme == "FSDP SHARD_GRAD_OP"
    assert full.dp_comm_bytes == pytest.approx(m * 7 / 8 * (2 * PSI + 2 * (PSI - ROOT) + 4 * PSI), abs=4)
    assert op.dp_comm_bytes == pytest.approx(m * 7 / 8 * (2 * PSI + 4 * PSI), abs=4)


def test_megatron_data_parallel_is_not_overlapped():
    """Megatron-LM's default (--overlap-grad-reduce off): the fp32 all-reduce after the last backward is exposed."""
    e = est(tp=2, dp=4, grad_accum=4)
    t = step_time(e, "a100-80gb")
    assert t.dp_scheme == "Megatron DP"
    assert t.dp_comm_bytes == int(2 * 3 / 4 * e.counts["trainable"] * 4)
    assert t.dp_exposed_s == pytest.approx(t.dp_comm_s) and t.dp_exposed_s > 0


def test_overlap_rule_exposes_only_the_excess_per_phase():
    """ZeRO-3 of llama-7b over 16 GPUs in two nodes at 25 GB/s per GPU, full recompute:
    forward gathers 15/16 x 2Ψ against the forward (2N + 4·L·H·Q·T)·T / 124.8e12 = 0.24 s;
    the backward gathers 15/16 x 2(Ψ - 5e8) and reduce-scatters 15/16 x 2Ψ against 0.72 s."""
    m, bw = 4, 25e9
    t = step_time(est(dp=16, zero_stage=3, grad_accum=m, recompute="full"), "a100-80gb")
    fwd, bwd = micro_batch_seconds("full")
    fwd_comm = 15 / 16 * 2 * PSI / bw
    bwd_comm = 15 / 16 * 2 * (PSI - DS_MAX_REUSE_DISTANCE // 2) / bw + 15 / 16 * 2 * PSI / bw
    assert fwd_comm > fwd and bwd_comm > bwd  # 0.51 s > 0.24 s and 0.97 s > 0.72 s: exposed
    assert t.forward_s == pytest.approx(fwd) and t.backward_s == pytest.approx(bwd)
    assert t.dp_exposed_s == pytest.approx(m * (fwd_comm - fwd) + m * (bwd_comm - bwd))
    # on one node's NVLink the same traffic hides: 12x the bandwidth
    inside = step_time(est(dp=8, zero_stage=3, grad_accum=m, recompute="full"), "a100-80gb")
    assert inside.dp_exposed_s == 0


def test_cpu_adam_rate_is_per_node_and_shared():
    """Ren et al. 2021 Table 2 measures one server's CPUs: the processes on a node share that rate.
    llama-13b, ZeRO-2 + CPU offload, Ψ = 13,015,864,320, rate R = 5e9 parameters/s per node:
      one GPU:                Ψ / R                        = 2.60 s
      8 GPUs, one node:       (Ψ/8) / (R/8) = Ψ / R        = 2.60 s  (not 8x faster)
      16 GPUs, two nodes:     (Ψ/16) / (R/8) = Ψ / (2R)    = 1.30 s
      4 GPUs, 4 per node:     (Ψ/4) / (R/4) = Ψ / R        = 2.60 s"""
    psi, r = 13_015_864_320, CPU_ADAM_PARAMS_PER_S
    assert r == 5e9
    kw = dict(zero_stage=2, offload="optimizer")

    def cpu(dp, per_node=8):
        return step_time(est("llama-13b", dp=dp, **kw), "a100-80gb", gpus_per_node=per_node)

    assert cpu(1).cpu_optimizer_s == pytest.approx(psi / r, rel=1e-9)
    assert cpu(8).cpu_optimizer_s == pytest.approx((psi // 8) / (r / 8), rel=1e-9)
    assert cpu(8).cpu_optimizer_s == pytest.approx(psi / r, rel=1e-6)
    assert cpu(16).cpu_optimizer_s == pytest.approx(psi / (2 * r), rel=1e-6)
    assert cpu(4, per_node=4).cpu_optimizer_s == pytest.approx(psi / r, rel=1e-6)
    assert cpu(16).cpu_adam_processes_per_node == 8 and cpu(1).cpu_adam_processes_per_node == 1


def test_mixture_of_experts_counts_active_parameters():
    """6N with N the active parameters (a model with num_active_params, as the MoE catalog entries have)."""

    @dataclass(frozen=True)
    class MoE(memlib.Model):
        @property
        def num_active_params(self):
            return 10**9

    base = memlib.get_model("llama-7b")
    moe = MoE(**{f: getattr(base, f) for f in ("name", "hidden_size", "num_layers", "num_heads",
                                               "intermediate_size", "vocab_size")})
    assert flops_per_token(moe, T) == 6 * 10**9 + 12 * ATTN
    assert flops_per_token(base, T) == 6 * PSI + 12 * ATTN


def test_collectives_are_reported_and_step_time_keeps_its_fields():
    t = step_time(est(dp=8, zero_stage=3, grad_accum=2), "a100-80gb")
    assert t.dp_collectives.count("\n") == 2 and "reduce-scatter" in t.dp_collectives
    d = t.as_dict()
    for k in ("compute_s", "dp_comm_bytes", "dp_comm_s", "dp_exposed_s", "tp_comm_bytes", "offload_s",
              "cpu_optimizer_s", "step_s", "tokens_per_s_per_gpu", "dp_scheme", "micro_batches"):
        assert k in d
    assert math.isclose(t.dp_comm_s, t.dp_comm_bytes / NVLINK, rel_tol=1e-9)
    assert dp_collectives(est()) == ("none", [])
    with pytest.raises(ValueError, match="ds_bucket_allreduce"):
        dp_collectives(est(dp=8, zero_stage=2), ds_bucket_allreduce="yes")
