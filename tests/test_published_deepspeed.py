"""DeepSpeed rows of validation/published.jsonl (issue 22, "Engines as they run"): each row's error stays within the
band docs/validation.md states for it, and the figures the rows quote besides the peak are checked against memlib's
DeepSpeed terms written out by hand."""

from __future__ import annotations


import pytest

import memlib
from benchmark_support import load

bench = load("published")
ROWS = {r["id"]: r for r in bench.load_rows()}

# docs/validation.md, "DeepSpeed rows": the band each computed row's error must stay in (signed, memlib vs published)
BANDS = {"deepspeedexamples-bf16-master-weight-baseline-zero3": (-0.02, 0.02)}
# gpjt/fine-tune-2024-04 (HF Trainer 4.40 + DeepSpeed 0.14.2, Llama-3-8B on 8 GPUs), active_bytes peaks. ZeRO-2 with
# optimizer offload: the heaviest GPU within 2%. ZeRO-3 (model not built under zero.Init): active bytes are allocated
# bytes plus blocks awaiting another stream; memlib's active_peak_bytes adds the gradients awaiting the reduce stream
# (terms.deepspeed_stream_held_grad_bytes). Without checkpointing at 1,001+ tokens within 2%; at one token and with
# checkpointing more stays held than those gradients (docs/validation.md): below, by at most 9%.
BANDS.update({f"gpjt-llama-3-8b-zero2-offload-ckpt-{k}": (-0.02, 0.02)
              for k in ("seq1", "seq2001", "seq2048-mb1", "seq2048-mb4", "seq2048-mb8", "seq2048-mb12")})
BANDS.update({f"gpjt-llama-3-8b-zero3-nozeroinit-{k}": (-0.02, 0.02)
              for k in ("seq1001", "seq2001", "seq2048-mb1", "seq2048-mb2")})
BANDS.update({f"gpjt-llama-3-8b-zero3-nozeroinit-{k}": (-0.09, 0.0)
              for k in ("seq1", "ckpt-seq2048-mb1", "ckpt-seq2048-mb6", "ckpt-seq2048-mb12")})
# the same scripts' Qwen1.5-0.5B runs on one GPU (ZeRO-3 gathers nothing there), with layout="deepspeed"
BANDS.update({f"gpjt-qwen1.5-0.5b-zero3-1gpu-{k}": (-0.03, 0.03) for k in ("seq1", "seq2048")})
# Megatron-DeepSpeed (ALCF's Llama-style 7B, ZeRO-2, tp 2, full checkpointing, A100 40GB), iteration 1's max allocated
# against first_iteration_peak_bytes: above by 3-4% (the rebuilt top layer, transformers' op-by-op ledger, decides)
BANDS["alcf-megatron-deepspeed-llama-7b-zero2-tp2-polaris-step1"] = (0.0, 0.05)
# rows memlib cannot express yet, with what they need (docs/validation.md says the same)
INEXPRESSIBLE = {"deepspeedexamples-bf16-master-weight-bf16-full-zero3": "bf16_master_weights_and_grads"}


@pytest.mark.parametrize("rid", sorted(BANDS))
def test_deepspeed_row_within_its_band(rid):
    r = bench.evaluate(ROWS[rid])
    assert r.status == "ok", r.detail
    lo, hi = BANDS[rid]
    assert lo <= r.error <= hi, f"{rid}: {r.error:+.2%}"


@pytest.mark.parametrize("rid", sorted(INEXPRESSIBLE))
def test_deepspeed_inexpressible_rows_say_why(rid):
    r = bench.evaluate(ROWS[rid])
    assert r.status == "inexpressible" and INEXPRESSIBLE[rid] in r.detail


def test_every_deepspeed_row_is_covered():
    ds = {rid for rid, row in ROWS.items() if "DeepSpeed ZeRO" in row["setup"].get("sharding", "")}
    assert ds == set(BANDS) | set(INEXPRESSIBLE)


def test_bf16_master_weight_baseline_after_the_step_by_hand():
    """The same table's 'Allocated Memory' after the last step, 25.74 GiB (format_memory: / 1024**3): what ZeRO-3 keeps
    between steps over 4 GPUs, 16-bit params 2 + 16-bit gradient partition 2 (stage3.py grad_partitions_flat_buffer)
    + fp32 master 4 + Adam m, v 8 = 16 bytes/param over 4, plus the persistent bucket of reduce_bucket_size 5e7
    16-bit elements (stage3.py ipg buffer) = 27.43e9 + 1e8 bytes = 25.64 GiB: 0.4% under, the loss and the logits
    of the last step (0.05 GiB) being alive too."""
    row = ROWS["deepspeedexamples-bf16-master-weight-baseline-zero3"]
    model = bench.resolve_model(row["memlib"]["kwargs"]["model"])
    assert model.num_params == 6_857_965_568  # the README's 'approximately 6.86 billion parameters'
    est = memlib.estimate_training(model, **{k: v for k, v in row["memlib"]["kwargs"].items() if k != "model"})
    terms = {t.name: t.nbytes for t in est.terms}
    between_steps = (est.counts["param_bytes"] + terms["deepspeed_grad_partition_bytes"] + est.counts["optimizer_bytes"]
                     + terms["deepspeed_bucket_bytes"])
    assert between_steps == 16 * model.num_params // 4 + 5 * 10**7 * 2
    published = 25.74 * 2**30
    assert -0.01 <= (between_steps - published) / published <= 0
    # and the step's peak on top: the upcast of one 1e9-element sub-group, a bf16 flat copy and its fp32 copy
    assert est.counts["optimizer_temporary_bytes"] == (2 + 4) * 10**9


LLAMA3_8B = 8_030_261_248
EMBED = 128_256 * 4_096  # the largest parameter (the embedding; the untied head is as large)
LAYER_LINEAR = 4_096 * (4_096 + 1_024 + 1_024 + 4_096) + 3 * 4_096 * 14_336  # q, k, v, o, gate, up, down


def test_zero2_offload_heaviest_gpu_by_hand():
    """ZeRO-2 + offload_optimizer, from deepspeedai/DeepSpeed v0.14.2 runtime/zero/stage_1_and_2.py: the GPU whose
    partition holds the embedding peaks as its gradient goes to the host at the end of the backward. Alive: the fp16
    parameters (2 B each, not partitioned under ZeRO-2), temp_grad_buffer_for_gpu_offload (the largest parameter in
    fp16), the ipg bucket (reduce_bucket_size 5e8 fp16 elements, made in backward()), the embedding's own fp16 gradient
    (larger than the bucket: extra_large_param_to_reduce) and _has_inf_or_nan's tensors on it, x.float() 4 + isnan 1 +
    isinf 1 + logical_or 1 + .float() 4 = 11 bytes an element. gpjt's rank 0 logged 23,929 MiB at one token."""
    est = memlib.estimate_training("llama-3-8b", seq_len=1, precision="fp16", zero_stage=2, dp=8, offload="optimizer",
                                   recompute="full", keep_outputs=False)
    moment = next(mo for mo in est.moments if mo.where.startswith("the largest parameter's reduced gradient"))
    by_hand = 2 * LLAMA3_8B + 2 * EMBED + 2 * 5 * 10**8 + 2 * EMBED + 11 * EMBED
    assert sum(moment.parts.values()) == by_hand
    assert abs(by_hand / 2**20 - 23_929) / 23_929 < 0.01
    terms = {t.name: t.nbytes for t in est.terms}
    assert terms["deepspeed_offload_grad_buffer_bytes"] == 2 * EMBED
    assert terms["deepspeed_offload_check_bytes"] == 11 * EMBED


def test_zero3_without_zero_init_holds_every_layers_weights_by_hand():
    """ZeRO-3 on a model built before deepspeed.initialize (no zero.Init): torch's linear saves weight.t(), a view of
    the gathered fp16 weight, so each layer's 7 matmul weights stay allocated from its forward to its backward. At the
    loss of Llama-3-8B that is 32 x 218,103,808 x 2 bytes = 13,312 MiB more than with zero.Init (which patches
    torch.nn.functional.linear with LinearFunctionForZeroStage3, saving the parameter itself)."""
    assert LAYER_LINEAR == 218_103_808
    kw = dict(seq_len=2048, precision="fp16", zero_stage=3, dp=8, keep_outputs=False)
    with_init, without = (memlib.estimate_training("llama-3-8b", zero_init=z, **kw) for z in (True, False))

    def at(est, where):
        return sum(next(mo for mo in est.moments if mo.where.startswith(where)).parts.values())
    assert {t.name: t.nbytes for t in without.terms}["zero3_saved_weight_bytes"] == 2 * LAYER_LINEAR
    assert at(without, "at the loss") - at(with_init, "at the loss") == 32 * 2 * LAYER_LINEAR
    assert at(without, "first decoder layer, mlp") - at(with_init, "first decoder layer, mlp") == 2 * LAYER_LINEAR
    # full recompute (HF's reentrant checkpoint runs the forward without gradients): nothing held in the forward
    ck = dict(kw, recompute="full")
    assert at(memlib.estimate_training("llama-3-8b", zero_init=False, **ck), "at the loss") == at(
        memlib.estimate_training("llama-3-8b", **ck), "at the loss")


def test_zero_init_is_an_option_of_zero3_only():
    with pytest.raises(ValueError, match="zero_init"):
        memlib.estimate_training("llama-3-8b", zero_stage=2, dp=8, zero_init=False)
    with pytest.raises(ValueError, match="zero_init"):
        memlib.estimate_training("llama-3-8b", zero_init=False)
    with pytest.raises(ValueError, match="keep_outputs"):
        memlib.estimate_training("llama-3-8b", loss="chunked", keep_outputs=False)


def test_deepspeed_layout_on_one_gpu_by_hand():
    """layout="deepspeed", ZeRO-3 on one GPU (gpjt's Qwen1.5-0.5B runs): nothing is sharded or gathered, but DeepSpeed's
    buffers stay. At the step: fp16 parameters 2 + fp16 gradient partition 2 + fp32 master 4 + Adam 8 bytes/param,
    the step's upcast of the gradient partition, fp16 flat copy 2 + fp32 4 bytes/param (one sub-group: 463,987,712 <
    1e9), and the 5e8-element fp16 bucket: 22 x N + 1e9 bytes. gpjt's run logged 10,896 MiB, flat up to ~900 tokens."""
    row = ROWS["gpjt-qwen1.5-0.5b-zero3-1gpu-seq1"]
    kw = dict(row["memlib"]["kwargs"])
    model = bench.resolve_model(kw.pop("model"))
    n = model.num_params
    assert n == 463_987_712
    est = memlib.estimate_training(model, **kw)
    assert est.peak_moment.name == "optimizer"
    assert est.peak_bytes == 22 * n + 2 * 5 * 10**8
    # "auto" treats ZeRO over one GPU as plain training (no master copy in pure fp16): the layout is what decides
    auto = memlib.estimate_training(model, **{**kw, "layout": "auto", "zero_init": True})
    assert auto.peak_bytes < 0.5 * est.peak_bytes
    with pytest.raises(ValueError, match="layout='deepspeed'"):
        memlib.estimate_training(model, **{**kw, "zero_stage": "FULL_SHARD"})


def test_zero3_gradients_held_for_the_reduce_stream_by_hand():
    """deepspeedai/DeepSpeed v0.14.2 runtime/zero/stage3.py: with overlap_comm (stage 3's default) each 16-bit gradient
    is copied into the bucket on reduce_and_partition_stream and freed under record_stream, and the host waits only
    when more than max_param_reduce_events = 2 bucket reductions are outstanding: at most 3 buckets of
    reduce_bucket_size elements, 3 x 5e8 x 2 B = 3e9 bytes, held as active (not allocated) bytes. Nothing to wait for
    on one GPU, without overlap_comm, or under ZeRO-2 (its copies run on the compute stream)."""
    kw = dict(seq_len=2048, precision="fp16", zero_stage=3, dp=8, keep_outputs=False)
    est = memlib.estimate_training("llama-3-8b", **kw)
    assert est.stream_held_bytes == 3 * 5 * 10**8 * 2
    assert est.active_peak_bytes == est.peak_bytes + 3 * 10**9
    assert est.to_dict()["active_peak_bytes"] == est.active_peak_bytes
    assert {t.name: t.nbytes for t in est.terms}["deepspeed_stream_held_grad_bytes"] == 3 * 10**9
    assert memlib.estimate_training("llama-3-8b", reduce_bucket_size=10**8, **kw).stream_held_bytes == 3 * 10**8 * 2
    # a model smaller than three buckets holds at most all of its gradients (Qwen1.5-0.5B: 463,987,712 parameters)
    small = bench.resolve_model(ROWS["gpjt-qwen1.5-0.5b-zero3-1gpu-seq1"]["memlib"]["kwargs"]["model"])
    assert memlib.estimate_training(small, **kw).stream_held_bytes == 2 * small.num_params
    for other in (dict(kw, dp=1, layout="deepspeed"), dict(kw, overlap_comm=False), dict(kw, zero_stage=2)):
        e = memlib.estimate_training("llama-3-8b", **other)
        assert e.stream_held_bytes == 0 and e.active_peak_bytes == e.peak_bytes
