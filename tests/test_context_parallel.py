"""Context parallelism (estimate_training(cp=...), step_time, plan): expected values derived by hand.

Llama-3.1-8B: 8,030,261,248 parameters, 32 layers, hidden 4096, 32 query heads and 8 key/value heads of
128 (q width 4096, K + V width 2 x 1024 = 2048 per token), vocabulary 128,256 (meta-llama/Llama-3.1-8B
config.json). At seq_len 131,072 over cp = 8 GPUs each GPU holds 16,384 tokens of the sequence.
"""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

import memlib
from memlib.parallel.plan import max_seq_len, plan
from memlib.cost.timing import cp_kv_bytes

N = 8_030_261_248
L, H, Q, V, h = 32, 32, 128, 128_256, 4096
KVW = 2 * 8 * 128  # key + value elements per token
S, CP = 131_072, 8
T = S // CP  # 16,384 tokens per GPU


def est(**kw):
    base = dict(seq_len=S, zero_stage="FULL_SHARD", dp=1, cp=CP)
    return memlib.estimate_training("llama-3.1-8b", **{**base, **kw})


def term(e, name):
    return next(t.nbytes for t in e.terms if t.name == name)


def test_tokens_per_gpu_and_setup():
    e = est()
    assert e.setup.seq_len == S and e.setup.cp == CP and e.setup.dp == 1
    assert e.setup.tokens_per_gpu == T
    assert "cp=8" in " ".join(e.notes)


def test_model_states_do_not_depend_on_cp_but_fsdp_shards_them_over_dp_x_cp():
    e = est()  # bf16-mixed under FSDP2: fp32 params, grads, 2 AdamW states, each sharded 8 ways
    assert term(e, "parameter_bytes") == 4 * N  # before sharding: unchanged by cp
    assert term(e, "gradient_bytes") == 4 * N
    assert term(e, "optimizer_state_bytes") == 8 * N
    assert e.counts["param_bytes"] == 4 * N // 8 == 4_015_130_624
    assert e.counts["optimizer_bytes"] == 8 * N // 8
    # two data-parallel groups of cp = 4: still 8 shards
    assert est(dp=2, cp=4).counts["param_bytes"] == 4 * N // 8
    # no sharding: a replica per GPU
    assert est(zero_stage=0).counts["param_bytes"] == 4 * N


def test_logits_and_loss_are_those_of_the_local_tokens():
    e = est()
    assert term(e, "logits_bytes") == 2 * V * T  # bf16 logits of 16,384 tokens: 4.2 GB
    assert term(e, "loss_upcast_bytes") == 4 * V * T  # transformers' .float()
    assert term(e, "log_softmax_bytes") == 4 * V * T
    fwd = max((m for m in e.moments if m.where.startswith("at the loss")), key=lambda m: m.total)
    assert fwd.parts["logits_and_loss"] == 10 * V * T == 21_013_463_040


def test_ring_attention_terms_by_hand():
    e = est()  # bf16 compute: 2 bytes
    local_kv = 2 * KVW * T  # 67,108,864 B: this GPU's K/V block of one layer
    assert local_kv == 64 * 2**20
    # forward, allgather: all cp blocks gathered + the next step's concatenation
    assert term(e, "ring_kv_buffer_bytes") == (CP + 1) * local_kv
    # forward merge: 12 fp32 bytes + the 2-byte block per output element, 12 bytes per (head, token) of lse
    assert term(e, "ring_merge_bytes") == 14 * 4096 * T + 12 * 32 * T
    # backward: all cp blocks again, fp32 dQ (4 x 4096) and 3 fp32 dK/dV (3 x 4 x 2048), previous block's grads
    assert term(e, "ring_backward_bytes") == CP * local_kv + (4 * 4096 + 12 * KVW) * T + 2 * 4096 * T + local_kv
    a2a = est(cp_rotate="alltoall")
    assert term(a2a, "ring_kv_buffer_bytes") == 3 * local_kv
    assert term(a2a, "ring_backward_bytes") == term(e, "ring_backward_bytes") - (CP - 2) * local_kv


def test_ring_terms_split_by_tensor_parallelism():
    e = est(tp=2, sequence_parallel=True)
    assert term(e, "ring_kv_buffer_bytes") == (CP + 1) * 2 * KVW * T // 2


def test_activations_fall_with_cp_and_the_ring_moments_exist():
    peaks = {cp: est(cp=cp, recompute="full").peak_bytes for cp in (2, 4, 8)}
    assert peaks[8] < peaks[4] < peaks[2]
    e = est()
    wheres = [m.where for m in e.moments]
    assert any("ring attention" in w for w in wheres)
    attn_bwd = [m for m in e.moments if m.where.endswith("attn backward")]
    assert all(m.parts["temporaries"] >= term(e, "ring_backward_bytes") for m in attn_bwd)


def test_cp_1_is_the_estimate_without_cp():
    a = memlib.estimate_training("llama-3.1-8b", seq_len=4096)
    b = memlib.estimate_training("llama-3.1-8b", seq_len=4096, cp=1)
    assert a.peak_bytes == b.peak_bytes and [m.total for m in a.moments] == [m.total for m in b.moments]


@pytest.mark.parametrize("kw, words", [
    (dict(seq_len=131_070), "divisible by 2 x cp = 16"),
    (dict(seq_len=131_072 + 8), "divisible by 2 x cp = 16"),
    (dict(tp=4, sequence_parallel=True, seq_len=131_072 + 16), "2 x cp x tp = 64"),
    (dict(attention="eager"), "eager attention is not supported"),
    (dict(zero_stage=2, dp=2), "DeepSpeed"),
    (dict(zero_stage=3, dp=1, offload="optimizer+params"), "offload"),
    (dict(cp=0), "cp must be >= 1"),
    (dict(cp=2.0), "integer"),
    (dict(cp_rotate="ring"), "cp_rotate"),
    (dict(cp=1, cp_rotate="alltoall"), "needs cp > 1"),
])
def test_bad_input_is_a_clear_error(kw, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
        est(**kw)


def test_models_ring_attention_cannot_run_are_refused():
    with pytest.raises(ValueError, match="sliding_attention"):  # Mistral v0.1's 4k window at 8k tokens
        memlib.estimate_training("mistral-7b", seq_len=8192, cp=2)
    with pytest.raises(ValueError, match="qlora"):
        memlib.estimate_training("llama-3.1-8b", seq_len=8192, cp=2, finetune="qlora")
    with pytest.raises(ValueError, match="GPT formula"):
        memlib.estimate_training("gpt-3-175b", seq_len=2048, cp=2)


def test_step_time_counts_every_gpu_and_the_full_sequence_flops():
    e = est()
    t = memlib.step_time(e, "h100-80gb", mfu=0.4)
    assert t.gpus == 8
    assert t.tokens_per_step == S  # one sequence per step (dp = 1)
    fpt = 6 * N + 12 * L * H * Q * S  # PaLM: attention over the whole 131,072-token sequence
    assert t.flops_per_token == fpt
    assert math.isclose(t.compute_s, fpt * S / 8 / (989.4e12 * 0.4), rel_tol=1e-12)


def test_step_time_ring_traffic_by_hand():
    e = est()
    t = memlib.step_time(e, "h100-80gb", mfu=0.4)
    kv, dkv = 2 * KVW * T, 4 * KVW * T
    per_layer = (CP - 1) * kv + (CP - 1) * kv + CP * dkv  # forward, backward K/V again, dK/dV around the ring
    assert cp_kv_bytes(e) == per_layer
    assert t.cp_comm_bytes == L * per_layer == 64_424_509_440
    bw = 450e9  # H100 SXM NVLink, per direction
    assert math.isclose(t.cp_comm_s, L * per_layer / bw)
    # attention forward of one layer on this GPU: 4·H·Q·S flops per token x 16,384 tokens at 40% of 989.4 TFLOP/s
    # = 0.089 s, so every K/V transfer (67 MB, 0.15 ms) hides behind a block; only the last dK/dV send shows
    assert math.isclose(t.cp_exposed_s, L * dkv / bw, rel_tol=1e-12)
    assert math.isclose(t.step_s, t.compute_s + t.dp_exposed_s + t.cp_exposed_s, rel_tol=1e-12)
    full = memlib.step_time(est(recompute="full"), "h100-80gb")
    assert full.cp_comm_bytes == L * (per_layer + (CP - 1) * kv)  # the recomputed forward gathers again


def test_step_time_exposes_ring_traffic_when_blocks_are_short():
    # 16k tokens over cp = 8 (2,048 each): a block of attention is too short to hide its K/V on a slow link
    e = memlib.estimate_training("llama-3.1-8b", seq_len=16384, zero_stage="FULL_SHARD", cp=8, cp_rotate="alltoall")
    slow = memlib.step_time(e, "h100-80gb", gpus_per_node=1, internode_bytes_per_s=1e9)
    fast = memlib.step_time(e, "h100-80gb")
    assert slow.cp_exposed_s > 10 * fast.cp_exposed_s
    assert 0.25 * slow.cp_comm_s < slow.cp_exposed_s < slow.cp_comm_s


def test_plan_searches_context_parallel_layouts():
    r = plan("llama-3.1-8b", "h100-80gb", 8, seq_len=S, grad_accum=1, cps=(8,), recomputes=("full",))
    assert r.feasible and all(p.settings["cp"] == 8 for p in r.feasible)
    for p in r.feasible:
        s = p.settings
        assert s["dp"] * s["tp"] * s["pp"] * s["cp"] == 8
        assert "cp=8" in p.describe()
    n = max_seq_len(r.best, "h100-80gb")
    assert n > S and n % 16 == 0
    with pytest.raises(ValueError, match="divisible by 2 x cp"):
        plan("llama-3.1-8b", "h100-80gb", 8, seq_len=1000, cps=(1, 16))
    with pytest.raises(ValueError, match="cps must be a list"):
        plan("llama-3.1-8b", "h100-80gb", 8, cps=8)


def test_cli_estimate_with_cp():
    run = [sys.executable, "-m", "memlib", "estimate", "llama-3.1-8b", "--seq-len", "131072", "--cp", "8",
           "--zero-stage", "FULL_SHARD", "--recompute", "full", "--gpu", "h100-80gb"]
    out = subprocess.run(run, capture_output=True, text=True)
    assert out.returncode == 0 and "cp 8 (16384 tokens of each sequence per GPU)" in out.stdout
    bad = subprocess.run(run[:5] + ["--seq-len", "131070", "--cp", "8"], capture_output=True, text=True)
    assert bad.returncode == 2 and "divisible by 2 x cp" in bad.stderr and "Traceback" not in bad.stderr


def test_long_context_playground_follows_its_controls():
    pytest.importorskip("ipywidgets")
    from memlib.learn.playgrounds.long_context import LongContextPlayground, settings_from
    p = LongContextPlayground()
    assert p.estimate.setup.cp == 8 and p.estimate.setup.seq_len == S
    assert "fits" in p.verdict.value and "tokens/s per GPU" in p.timing.value and "ring attention" in p.timing.value
    p.controls["cp"].value = 1
    p.controls["recompute"].value = "none"
    assert "does not fit" in p.verdict.value and p.estimate.setup.cp == 1
    p.controls["attention"].value = "eager"
    p.controls["cp"].value = 8
    assert "eager attention is not supported" in p.verdict.value and p.timing.value == ""
    kw = settings_from({**p.values(), "fsdp": False})
    assert kw["zero_stage"] == 0 and kw["cp"] == 8
