"""Recipe presets (memlib.RECIPES), TrainingSetup as the public description of a run, and Megatron's layout.
Expected values come from the frameworks' own sources, quoted here, or from the keyword calls that existed before."""

from __future__ import annotations

import re
import json
import subprocess
import sys
from fractions import Fraction

import pytest

import memlib
from memlib.training.options import DEFAULTS, check_setup
from memlib.training.step import estimate


# NVIDIA/Megatron-LM@50b073cc docs/source/api-guide/dist_optimizer.md, "theoretical number of bytes per parameter":
# | float16 param, float16 grads | 20 | 4 + 16/d |  | float16 param, fp32 grads | 18 | 6 + 12/d |
# | fp32 param, fp32 grads | 16 | 8 + 8/d |
@pytest.mark.parametrize("grads,plain,whole,sharded", [("fp16-grads", 20, 4, 16), ("fp32-grads", 18, 6, 12),
                                                       ("fp32", 16, 8, 8)])
def test_megatron_bytes_per_param_is_megatrons_table(grads, plain, whole, sharded):
    assert memlib.megatron_bytes_per_param(grads) == plain
    for d in (1, 2, 8, 64):
        assert memlib.megatron_bytes_per_param(grads, distributed_optimizer=True, dp=d) == whole + Fraction(sharded, d)


def test_megatron_bytes_per_param_rejects_bad_input():
    with pytest.raises(ValueError):
        memlib.megatron_bytes_per_param("bf16")
    with pytest.raises(ValueError):
        memlib.megatron_bytes_per_param(dp=0)


@pytest.mark.parametrize("dp", [1, 4, 8])
def test_megatron_layout_model_states(dp):
    """theoretical_memory_usage.py: 18 bytes/param, or 6 + 12/dp with --use-distributed-optimizer."""
    model = memlib.get_model("llama-2-7b")
    for zero_stage, per_param in ((0, Fraction(18)), (1, 6 + Fraction(12, dp))):
        est = memlib.estimate_training(model, layout="megatron", zero_stage=zero_stage, dp=dp)
        c = est.counts
        states = c["param_bytes"] + c["grad_bytes"] + c["optimizer_bytes"]
        assert abs(Fraction(states, model.num_params) - per_param) < Fraction(1, 10**6)


def test_megatron_layout_refuses_what_it_does_not_model():
    with pytest.raises(ValueError, match="layout='megatron'"):
        memlib.estimate_training("llama-2-7b", layout="megatron", finetune="lora")
    with pytest.raises(ValueError, match="layout='megatron'"):
        memlib.estimate_training("llama-2-7b", layout="megatron", zero_stage=3, dp=8)


def test_recipes_listed_with_pinned_sources():
    assert {"hf-trainer", "torchtune", "litgpt", "torchtitan", "megatron", "deepspeed"} <= set(memlib.RECIPES)
    for r in memlib.RECIPES.values():
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}:\S+", r.source), r.source
        assert set(r.applied("qlora")) <= set(DEFAULTS)


def test_megatron_bridge_preset_is_megatron_with_the_fused_loss():
    """NVIDIA-NeMo/Megatron-Bridge@067f987d: GPTModelProvider `cross_entropy_loss_fusion: bool = True` (Megatron-Core's
    cross_entropy_fusion_impl default 'native'); recipes/common.py `use_distributed_optimizer=True`."""
    bridge = memlib.estimate_training("llama-3-8b", recipe="megatron-bridge", dp=8, seq_len=4096)
    assert (bridge.setup.layout, bridge.setup.zero_stage, bridge.setup.megatron_ce_fusion) == ("megatron", 1, "native")
    plain = memlib.estimate_training("llama-3-8b", recipe="megatron", dp=8, seq_len=4096, megatron_ce_fusion="native")
    assert bridge.peak_bytes == plain.peak_bytes
    # the fusion's backward copy: 4 bytes x 4,096 tokens x 128,256 logits more than Megatron's default loss
    unfused = memlib.estimate_training("llama-3-8b", recipe="megatron", dp=8, seq_len=4096)
    backward = [mo.parts["logits_and_loss"] for est in (bridge, unfused) for mo in est.moments
                if "gradient of the loss" in mo.where]
    assert backward[0] - backward[1] == 4 * 4_096 * 128_256


def test_torchtune_preset_is_its_config():
    """pytorch/torchtune@2943c61 recipes/configs/llama3_1/8B_lora_single_device.yaml: `dtype: bf16`,
    `optimizer: torch.optim.AdamW, fused: True`, `enable_activation_checkpointing: True`, `lora_dropout: 0.0`."""
    s = memlib.estimate_training("llama-2-7b", recipe="torchtune", finetune="lora").setup
    assert (s.precision, s.optimizer_impl, s.recompute, s.lora_dropout, s.adapter_dtype) == (
        "bf16", "fused", "full", 0.0, "bf16")


def test_litgpt_preset_is_its_config():
    """Lightning-AI/litgpt@56ac240 config_hub/finetune/llama-2-7b/lora.yaml: `precision: bf16-true`,
    `lora_dropout: 0.05`."""
    s = memlib.estimate_training("llama-2-7b", recipe="litgpt", finetune="lora").setup
    assert (s.precision, s.lora_dropout, s.adapter_dtype) == ("bf16", 0.05, "bf16")


def test_explicit_option_overrides_the_preset_and_explain_names_it():
    est = memlib.estimate_training("llama-2-7b", recipe="torchtune", finetune="lora", recompute="none")
    assert est.setup.recompute == "none"
    assert "recompute" not in dict(est.setup.recipe_set)
    text = est.explain()
    assert "recipe **torchtune**" in text and "optimizer_impl='fused'" in text


def test_hf_trainer_preset_is_memlibs_defaults_with_the_trainers_loop():
    # HF Trainer's compute_loss returns the loss alone (transformers trainer.py: `return (loss, outputs) if
    # return_outputs else loss`): the output and its 16-bit logits (2 bytes x vocab per token) are freed before the
    # backward. Its optimizer is TrainingArguments.optim's default, adamw_torch_fused on torch >= 2.8
    # (transformers v5.15.0 training_args.py). Everything else is memlib's defaults. At the start of the backward of
    # Llama-2-7B at 2,048 tokens the held logits are 2 x 32,000 x 2,048 bytes; the loss's fp32 tensors are there
    # either way.
    model = memlib.get_model("llama-2-7b")
    for kw in ({}, {"finetune": "lora"}, {"finetune": "qlora"}):
        trainer = memlib.estimate_training(model, recipe="hf-trainer", **kw)
        assert dict(trainer.setup.recipe_set) == {"keep_outputs": False, "optimizer_impl": "fused"}
        assert trainer.peak_bytes == memlib.estimate_training(model, keep_outputs=False, optimizer_impl="fused",
                                                              **kw).peak_bytes
    loop, trainer = (memlib.estimate_training(model, keep_outputs=k) for k in (True, False))

    def at_start(est):
        return next(sum(mo.parts.values()) for mo in est.moments if mo.where.startswith("start: gradient"))
    assert at_start(loop) - at_start(trainer) == 2 * 32_000 * 2048


def test_unknown_recipe_is_a_value_error():
    with pytest.raises(ValueError, match="unknown recipe"):
        memlib.estimate_training("llama-2-7b", recipe="axolotl")


KEYWORD_CALLS = [dict(), dict(seq_len=4096, micro_batch=2, recompute="full"), dict(finetune="lora", lora_rank=8),
                 dict(zero_stage=3, dp=8), dict(zero_stage="FULL_SHARD", dp=4), dict(tp=2, pp=2, grad_accum=4),
                 dict(finetune="qlora", loss="chunked"), dict(zero_stage=2, dp=8, offload="optimizer")]


@pytest.mark.parametrize("kw", KEYWORD_CALLS)
def test_keyword_calls_unchanged(kw):
    """The keyword call gives what the checked setup gave before (check_setup with every option, then estimate),
    and the same setup passed as an object gives it too."""
    model = memlib.get_model("llama-2-7b")
    before = estimate(check_setup(model, **{**DEFAULTS, **kw}))
    est = memlib.estimate_training(model, **kw)
    assert est.peak_bytes == before.peak_bytes and est.breakdown == before.breakdown
    setup = memlib.TrainingSetup.create(model, **kw)
    assert memlib.estimate_training(setup).peak_bytes == before.peak_bytes
    assert memlib.estimate_training(model, setup).peak_bytes == before.peak_bytes
    assert memlib.estimate_training(model, setup=setup).peak_bytes == before.peak_bytes


def test_positional_call_unchanged():
    model = memlib.get_model("llama-2-7b")
    assert (memlib.estimate_training(model, 1024, 2, "bf16").peak_bytes
            == memlib.estimate_training(model, seq_len=1024, micro_batch=2, precision="bf16").peak_bytes)


def test_setup_replace_is_a_what_if():
    model = memlib.get_model("llama-2-7b")
    setup = memlib.TrainingSetup.create(model, recipe="megatron", dp=8)
    smaller = setup.replace(dp=4)
    assert smaller.dp == 4 and smaller.recipe == "megatron" and smaller.layout == "megatron"
    assert (memlib.estimate_training(smaller).peak_bytes
            == memlib.estimate_training(model, recipe="megatron", dp=4).peak_bytes)
    assert memlib.estimate_training(setup, dp=4).peak_bytes == memlib.estimate_training(smaller).peak_bytes
    assert setup.replace(model=memlib.get_model("llama-2-13b")).model.name == "llama-2-13b"
    with pytest.raises(ValueError, match="unknown option"):
        setup.replace(batch=4)
    with pytest.raises(ValueError, match="carries its options"):
        memlib.estimate_training(setup, recipe="deepspeed")


def test_cli_recipe():
    out = subprocess.run([sys.executable, "-m", "memlib", "estimate", "llama-2-7b", "--recipe", "torchtune",
                          "--finetune", "lora", "--explain"], capture_output=True, text=True, check=True).stdout
    assert "recipe **torchtune**" in out


@pytest.mark.parametrize("argv,kwargs", [
    (["llama-3-8b", "--precision", "fp16", "--zero-stage", "3", "--dp", "8", "--no-zero-init", "--no-keep-outputs"],
     dict(model="llama-3-8b", precision="fp16", zero_stage=3, dp=8, zero_init=False, keep_outputs=False)),
    (["llama-2-7b", "--recipe", "megatron", "--dp", "2", "--pp", "4", "--vpp", "2", "--grad-accum", "8"],
     dict(model="llama-2-7b", recipe="megatron", dp=2, pp=4, vpp=2, grad_accum=8)),
    (["llama-2-7b", "--layout", "megatron", "--tp", "2", "--hidden-dropout", "0.1"],
     dict(model="llama-2-7b", layout="megatron", tp=2, hidden_dropout=0.1)),
    (["llama-2-7b", "--layout", "megatron", "--attention", "eager", "--attention-dropout", "0.1"],
     dict(model="llama-2-7b", layout="megatron", attention="eager", attention_dropout=0.1)),
    (["llama-2-7b", "--layout", "megatron", "--no-megatron-ce-inplace"],
     dict(model="llama-2-7b", layout="megatron", megatron_ce_inplace=False)),
    (["llama-2-7b", "--layout", "megatron", "--megatron-ce-fusion", "native"],
     dict(model="llama-2-7b", layout="megatron", megatron_ce_fusion="native")),
    (["llama-2-7b", "--layout", "megatron", "--pp", "2", "--grad-accum", "4", "--megatron-wgrad-deferral", "0"],
     dict(model="llama-2-7b", layout="megatron", pp=2, grad_accum=4, megatron_wgrad_deferral=0)),
    (["llama-2-7b", "--recipe", "megatron", "--pp", "4", "--grad-accum", "8", "--pp-split", "7,9,9,7"],
     dict(model="llama-2-7b", recipe="megatron", pp=4, grad_accum=8, pp_split=(7, 9, 9, 7))),
])
def test_cli_engine_flags_match_the_api(argv, kwargs):
    out = subprocess.run([sys.executable, "-m", "memlib", "estimate", *argv, "--json"], capture_output=True, text=True,
                         check=True).stdout
    assert json.loads(out)["peak_bytes"] == memlib.estimate_training(**kwargs).peak_bytes


# DeepSpeed's buckets. deepspeedai/DeepSpeed@cbf3d66 runtime/zero/config.py: reduce_bucket_size = 5e8 elements,
# contiguous_gradients = True, overlap_comm None -> stage == 3. stage_1_and_2.py backward(): ipg_buffer of
# reduce_bucket_size elements in the 16-bit dtype, a second one with overlap_comm; stage3.py: one flat buffer.
def _backward_gradients(est):
    return max(mo.parts.get("gradients", 0) for mo in est.moments if mo.name == "backward")


@pytest.mark.parametrize("stage,overlap,buffers", [(2, None, 1), (2, True, 2), (1, False, 1), (3, None, 1)])
def test_deepspeed_bucket_is_reduce_bucket_size_16bit(stage, overlap, buffers):
    model = memlib.get_model("llama-2-7b")
    kw = dict(zero_stage=stage, dp=8, overlap_comm=overlap)
    with_bucket = memlib.estimate_training(model, **kw)
    without = memlib.estimate_training(model, **kw, contiguous_gradients=False)
    assert _backward_gradients(with_bucket) - _backward_gradients(without) == buffers * 500_000_000 * 2
    terms = {t.name: t.nbytes for t in with_bucket.terms}
    assert terms["deepspeed_bucket_bytes"] == buffers * 10**9
    small = memlib.estimate_training(model, **kw, reduce_bucket_size=2 * 10**8)
    assert _backward_gradients(with_bucket) - _backward_gradients(small) == buffers * 3 * 10**8 * 2


def test_deepspeed_options_only_under_deepspeed():
    with pytest.raises(ValueError, match="reduce_bucket_size"):
        memlib.estimate_training("llama-2-7b", reduce_bucket_size=10**8)
    with pytest.raises(ValueError, match="overlap_comm"):
        memlib.estimate_training("llama-2-7b", zero_stage="FULL_SHARD", dp=8, overlap_comm=True)
    with pytest.raises(ValueError):
        memlib.estimate_training("llama-2-7b", zero_stage=2, dp=8, reduce_bucket_size=0)


@pytest.mark.parametrize("k", [1, 2, 8])
def test_zero_offload_traffic_per_micro_step(k):
    """stage_1_and_2.py copy_grads_in_partition: micro-batches 1..k-1 send the 16-bit partition down, 2..k bring it
    back up to add, the k-th sends the fp32 sum down; the 16-bit parameters come up after the CPU step."""
    from memlib.cost.timing import zero_offload_traffic_bytes
    psi = 1000
    down16, up16, fp32_down, params_up = 2 * (k - 1), 2 * (k - 1), 4, 2
    assert zero_offload_traffic_bytes(psi, k) == (down16 + up16 + fp32_down + params_up) * psi


def test_megatron_fused_layer_ledger_by_hand():
    """Korthikanti et al. 2022 Table 2 terms with Transformer Engine's fused modules, for Llama-2-7B (h = 4096,
    GQA-free q = kv = 4096, SwiGLU f = 11008, a = 32), bytes per token of one layer:
    attention: norm input 2h + fp32 1/rms 4 + normalized 2h + q, k, v 2(q + 2kv) + output 2q + fp32 lse 4a
             = 8192 + 4 + 8192 + 24576 + 8192 + 128 = 49284
    MLP:       2h + 4 + 2h + fc1 out 2 x 2f + SwiGLU out 2f = 8192 + 4 + 8192 + 44032 + 22016 = 82436."""
    est = memlib.estimate_training("llama-2-7b", seq_len=2048, layout="megatron")
    assert est.counts["layer_activation_bytes"] == (49284 + 82436) * 2048
    selective = memlib.estimate_training("llama-2-7b", seq_len=2048, layout="megatron", recompute="selective")
    assert est.counts["layer_activation_bytes"] - selective.counts["layer_activation_bytes"] == 4 * 32 * 2048
    # tensor parallel with sequence parallelism: every saved tensor split over t (Korthikanti Sec. 4.2.2)
    sp = memlib.estimate_training("llama-2-7b", seq_len=2048, layout="megatron", tp=2, sequence_parallel=True)
    assert sp.counts["layer_activation_bytes"] == (49284 + 82436) * 2048 // 2


def test_megatron_vocab_parallel_loss_and_persistent_grads():
    """At the loss: the head's 16-bit logits over V/t and their fp32 copy (cross_entropy.py calculate_logits_max),
    6 V s b / t bytes; Megatron's fp32 main-grad buffer is allocated at wrap time, so gradients are alive then."""
    model = memlib.get_model("llama-2-7b")
    est = memlib.estimate_training(model, seq_len=2048, layout="megatron", tp=2)
    at_loss = next(mo for mo in est.moments if mo.name == "forward" and "loss" in mo.where)
    assert at_loss.parts["logits_and_loss"] == 6 * 32000 * 2048 // 2
    assert at_loss.parts.get("previous_output", 0) == 0
    norms = (2 * 32 + 1) * 4096  # RMSNorm weights, whole on every tp rank; the rest split over t = 2
    assert at_loss.parts["gradients"] == est.counts["grad_bytes"] == 4 * ((model.num_params - norms) // 2 + norms)


def test_deepspeed_bucket_against_measured_knobs():
    """Measured ZeRO-2 peaks with DeepSpeed's bucket knobs (deepspeedai/DeepSpeed#1302, comment by syorami,
    2023-01-09, "Memory" in MiB; same model and batch in every row):
    | contiguous_gradients | overlap_comm | bucket_size | Memory |   0: True True 5e8 21152;  2: True False 5e8 20198;
    3: True True 1e8 19625;  4: True True 1e7 19284.  The differences are the bucket's; memlib's term must match."""
    measured = {(True, 5 * 10**8): 21152, (False, 5 * 10**8): 20198, (True, 10**8): 19625, (True, 10**7): 19284}

    def bucket(overlap, size):
        est = memlib.estimate_training("llama-2-7b", zero_stage=2, dp=8, overlap_comm=overlap, reduce_bucket_size=size)
        return {t.name: t.nbytes for t in est.terms}["deepspeed_bucket_bytes"] / 2**20

    for a, b in (((True, 5 * 10**8), (False, 5 * 10**8)), ((True, 5 * 10**8), (True, 10**8)),
                 ((True, 10**8), (True, 10**7))):
        assert bucket(*a) - bucket(*b) == pytest.approx(measured[a] - measured[b], rel=0.01)


# DeepSpeed's step and ZeRO-3's gradient partition, from deepspeedai/DeepSpeed@20cfce0 runtime/zero:
# stage_1_and_2.py step() and stage3.py _prepare_fp32_grad_for_sub_group upcast with
# `self.flatten(averaged_gradients).to(fp32)`: a 16-bit flat copy of the (sub-group's) gradient partition and its
# fp32 copy, both alive at that statement; stage3.py _setup_for_real_optimizer makes grad_partitions_flat_buffer,
# torch.zeros(sum of partition_numel) in the 16-bit dtype, once.
@pytest.mark.parametrize("stage", [1, 2, 3])
def test_deepspeed_step_upcast_by_hand(stage):
    model = memlib.get_model("llama-2-7b")
    est = memlib.estimate_training(model, zero_stage=stage, dp=8)
    partition = model.num_params // 8  # every trainable parameter's optimizer partition
    if stage == 3:
        partition = min(partition, 10**9)  # one sub-group at a time (sub_group_size 1e9)
    assert est.counts["optimizer_temporary_bytes"] == (2 + 4) * partition
    # 7B over 2 GPUs: the ZeRO-3 partition (3.37e9 elements) is stepped in 1e9-element sub-groups
    two = memlib.estimate_training(model, zero_stage=3, dp=2)
    assert two.counts["optimizer_temporary_bytes"] == 6 * 10**9


def test_deepspeed_zero3_gradient_partition_alive_from_the_start():
    """ZeRO-3: 2 bytes x num_params / dp of 16-bit gradient partition at every moment (the forward too), plus the
    bucket (5e8 x 2 bytes); ZeRO-2 makes its partition in the backward (grads_in_partition) and frees it at the step."""
    model = memlib.get_model("llama-2-7b")
    z3 = memlib.estimate_training(model, zero_stage=3, dp=8)
    forward = [mo for mo in z3.moments if mo.name in ("forward", "backward")]
    partition = 2 * model.num_params // 8
    assert {t.name: t.nbytes for t in z3.terms}["deepspeed_grad_partition_bytes"] == partition
    assert all(mo.parts["gradients"] == partition + 10**9 for mo in forward)
    z2 = memlib.estimate_training(model, zero_stage=2, dp=8)
    assert "deepspeed_grad_partition_bytes" not in {t.name for t in z2.terms}
    assert all(mo.parts.get("gradients", 0) == 0 for mo in z2.moments if mo.name == "forward")
    offloaded = memlib.estimate_training(model, zero_stage=3, dp=8, offload="optimizer")
    assert "deepspeed_grad_partition_bytes" not in {t.name for t in offloaded.terms}  # made on the CPU


def test_gpt_style_model_under_deepspeed_zero3_by_hand():
    """A GPT-style model (LayerNorm, GELU MLP, learned positions, biases) under ZeRO-3 over 4 GPUs in bf16: at the
    step, 2 + 2 (16-bit params and gradient partition) + 4 + 8 (fp32 master, Adam m and v) = 16 bytes/param over 4,
    the ZeRO-3 bucket (reduce_bucket_size 5e7 x 2 bytes) and the upcast of a 1e9-element sub-group (2 + 4 bytes)."""
    m = memlib.Model(name="gpt-6.9b", hidden_size=4096, num_layers=32, num_heads=32, intermediate_size=16384,
                     vocab_size=50257, mlp="standard", norm="layernorm", position="learned", qkv_bias=True,
                     o_bias=True, mlp_bias=True, max_position_embeddings=512)
    est = memlib.estimate_training(m, seq_len=512, precision="bf16", zero_stage=3, dp=4, recompute="full",
                                   reduce_bucket_size=5 * 10**7, overlap_comm=True)
    step = next(mo for mo in est.moments if mo.name == "optimizer")
    assert sum(step.parts.values()) == 16 * m.num_params // 4 + 10**8 + 6 * 10**9
    assert est.phase == "optimizer"
    with pytest.raises(ValueError, match="LLaMA-style"):  # FSDP's per-layer units: not for this model
        memlib.estimate_training(m, seq_len=512, zero_stage="FULL_SHARD", dp=4)
