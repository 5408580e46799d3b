"""estimate_rlhf as the frameworks run it: the trainer strategy (DeepSpeed, FSDP, FSDP2, Megatron), what each role
keeps on the GPU while another runs (verl's param/optimizer offload flags, the reference under FSDP's forced CPU
offload, OpenRLHF's DeepSpeed sleep), and the rollout engine's sleep (free_cache_engine, vLLM's sleep levels).

Every expected value is a hand derivation written out below from Llama-2-7B's shapes and the frameworks' source
(volcengine/verl@b178a3cd verl/workers/fsdp_workers.py, megatron_workers.py, workers/actor/dp_actor.py;
OpenRLHF/OpenRLHF@3c3be623 openrlhf/utils/deepspeed/deepspeed_utils.py), never copied from memlib's output.
"""

from __future__ import annotations

import pytest

from memlib.training.rlhf import estimate_rlhf

M7 = "llama-2-7b"
P7 = 6_738_415_616           # Llama-2-7B's parameters (HF safetensors index)
A100_TOTAL = 81_051 * 2**20  # torch's total_memory of an A100-SXM4-80GB (memlib's GPU catalog)
SHARE = int(A100_TOTAL * 0.5)  # vLLM at gpu_memory_utilization 0.5 (verl's and OpenRLHF's colocated default)
# Llama-2-7B's shapes: hidden 4096, intermediate 11008, vocabulary 32000, 32 layers, untied embeddings
H, I, V, L = 4096, 11008, 32000, 32
LAYER = 4 * H * H + 3 * H * I + 2 * H  # q, k, v, o + gate, up, down + two RMSNorms = 202,383,360
ROOT = 2 * V * H + H                    # embedding + lm_head + final norm = 262,148,096
GRPO = dict(reward=None, gpus=8)


def test_llama_2_7b_shapes_add_up():
    assert L * LAYER + ROOT == P7


# --- FSDP (verl's FSDP workers) ----------------------------------------------------------------------------
def test_fsdp_actor_keeps_fp32_params_and_adam_but_no_gradients_while_idle():
    # verl's FSDP actor: fp32 parameters sharded over 8 GPUs (4 P / 8 B), AdamW m and v (8 P / 8 B); update_policy
    # ends with zero_grad() (set_to_none), so no gradient stays. Nothing offloaded: 12 P / 8 per GPU while idle.
    e = estimate_rlhf(M7, "grpo", strategy="fsdp", param_offload=False, optimizer_offload=False, **GRPO)
    a = e.roles["actor"]
    assert a.idle_bytes == pytest.approx(12 * P7 / 8, rel=1e-6)
    # optimizer_offload only (offload_fsdp_optimizer): the fp32 shard stays, 4 P / 8 = 3,369,207,808 B
    e2 = estimate_rlhf(M7, "grpo", strategy="fsdp", param_offload=False, optimizer_offload=True, **GRPO)
    assert e2.roles["actor"].idle_bytes == pytest.approx(4 * P7 / 8, rel=1e-6)
    # the engine generates beside what the actor keeps (the reference is on the CPU: see below)
    assert e.phases["rollout"] == SHARE + a.idle_bytes
    assert e2.phases["rollout"] == SHARE + e2.roles["actor"].idle_bytes


def test_fsdp_reference_streams_from_the_cpu_root_plus_two_layers():
    # verl wraps every non-actor FSDP module in CPUOffload(offload_params=True) (FSDP2: CPUOffloadPolicy): the bf16
    # shards live in host RAM (2 P / 8 per GPU) and a forward holds the root unit (embedding, head, final norm) and
    # two decoder layers, in bf16: 2 x (262,148,096 + 2 x 202,383,360) = 1,333,829,632 B, plus activations.
    e = estimate_rlhf(M7, "grpo", strategy="fsdp", **GRPO)
    ref = e.roles["reference"]
    assert ref.idle_bytes == 0
    assert ref.host_bytes == -(-2 * P7 // 8)
    assert ref.scoring_bytes - ref.forward_activation_bytes == 2 * (ROOT + 2 * LAYER) == 1_333_829_632
    # without the CPU offload (a FULL_SHARD reference resident on the GPU) the shard stays: ceil(2 P / 8)
    kept = estimate_rlhf(M7, "grpo", strategy="fsdp", ref_param_offload=False, offload_idle=False, **GRPO)
    assert kept.roles["reference"].idle_bytes == -(-2 * P7 // 8)


def test_fsdp2_offload_policy_keeps_no_model_states_on_the_gpu():
    # FSDP2 CPUOffloadPolicy: parameters, gradients and the optimizer step on the CPU (16 P / 8 in host RAM)
    e = estimate_rlhf(M7, "grpo", strategy="fsdp2", offload_policy=True, **GRPO)
    a = e.roles["actor"]
    assert a.resident_bytes == 0 and a.idle_bytes == 0
    assert a.host_bytes == pytest.approx(16 * P7 / 8, rel=1e-6)
    with pytest.raises(ValueError, match="fsdp2"):
        estimate_rlhf(M7, "grpo", strategy="fsdp", offload_policy=True, **GRPO)


def test_fsdp_zero_stage_names():
    # verl: FULL_SHARD, or SHARD_GRAD_OP when reshard_after_forward is False; an FSDP name implies strategy fsdp
    assert estimate_rlhf(M7, "grpo", zero_stage="FULL_SHARD", **GRPO).notes[-1].startswith("trainers: PyTorch FSDP1")
    with pytest.raises(ValueError, match="FULL_SHARD"):
        estimate_rlhf(M7, "grpo", strategy="fsdp", zero_stage=1, **GRPO)
    with pytest.raises(ValueError, match="FSDP"):
        estimate_rlhf(M7, "grpo", strategy="deepspeed", zero_stage="FULL_SHARD", **GRPO)


# --- Megatron (verl's Megatron workers) ------------------------------------------------------------------
# tp 2 x pp 2 on 8 GPUs: dp 2. Stage 1 (the busier: 16 layers + lm_head + final norm) per GPU: each layer's
# projections split over tp (202,375,168 / 2), its two RMSNorms replicated (8,192); the head vocab-parallel
# (131,072,000 / 2); the final norm replicated (4,096).
STAGE = 16 * ((LAYER - 2 * H) // 2 + 2 * H) + V * H // 2 + H  # 1,684,672,512 parameters per GPU


def test_megatron_actor_states_are_megatrons_with_the_distributed_optimizer():
    # bf16 params (2 B) + fp32 main grads (4 B) + fp32 master, m, v over dp 2 (12 / 2 B) = 12 B per parameter
    e = estimate_rlhf(M7, "grpo", strategy="megatron", train_tp=2, train_pp=2, param_offload=False,
                      optimizer_offload=False, **GRPO)
    assert STAGE == 1_684_672_512
    assert e.roles["actor"].resident_bytes == 12 * STAGE
    # verl's optimizer_offload moves the optimizer off; param_offload would move params and main grads (6 B)
    e2 = estimate_rlhf(M7, "grpo", strategy="megatron", train_tp=2, train_pp=2, param_offload=False,
                       optimizer_offload=True, **GRPO)
    assert e2.roles["actor"].idle_bytes == 6 * STAGE
    assert e2.roles["actor"].host_bytes == 6 * STAGE
    # the reference: a Megatron module of the same tp x pp in bf16, not sharded over dp
    assert e2.roles["reference"].resident_bytes == 2 * STAGE


def test_megatron_options_checked():
    with pytest.raises(ValueError, match="strategy='megatron'"):
        estimate_rlhf(M7, "grpo", train_tp=2, **GRPO)
    with pytest.raises(ValueError, match="zero_stage 1"):
        estimate_rlhf(M7, "grpo", strategy="megatron", zero_stage=3, **GRPO)
    with pytest.raises(ValueError, match="must divide"):
        estimate_rlhf(M7, "grpo", strategy="megatron", train_tp=4, train_pp=4, **GRPO)
    with pytest.raises(ValueError, match="train_tp"):
        estimate_rlhf(M7, "grpo", tp=2, **GRPO)


# --- DeepSpeed (OpenRLHF) --------------------------------------------------------------------------------
def test_openrlhf_deepspeed_sleep_leaves_the_16_bit_partition():
    # offload_deepspeed_states offloads optim_states, contiguous_grad_buffer, hp_params and lp_grads; lp_params
    # is commented out: the 16-bit ZeRO-3 partition, 2 P / 8 B, stays on each GPU while vLLM generates.
    e = estimate_rlhf(M7, "grpo", param_offload=False, optimizer_offload=True, **GRPO)
    assert e.roles["actor"].idle_bytes == -(-2 * P7 // 8)
    assert e.phases["rollout"] == SHARE + -(-2 * P7 // 8)
    # everything offloaded (the default offload_idle=True): the rollout phase is the share alone
    assert estimate_rlhf(M7, "grpo", **GRPO).phases["rollout"] == SHARE


# --- the engine's sleep -----------------------------------------------------------------------------------
def test_engine_that_does_not_sleep_keeps_its_share_through_training():
    awake = estimate_rlhf(M7, "grpo", free_cache_engine=False, **GRPO)
    asleep = estimate_rlhf(M7, "grpo", **GRPO)
    assert awake.phases["train_actor"] - asleep.phases["train_actor"] == SHARE


def test_sleep_levels_free_the_same_gpu_bytes_level_one_keeps_the_weights_on_the_host():
    one = estimate_rlhf(M7, "grpo", sleep_level=1, **GRPO)
    two = estimate_rlhf(M7, "grpo", sleep_level=2, **GRPO)
    assert one.phases == two.phases
    assert one.roles["rollout"].host_bytes == 2 * P7  # the engine's bf16 weights, pinned (tp 1)
    assert two.roles["rollout"].host_bytes == 0
    # CUDA graphs stay while asleep (verl rollout.yaml: "cudagraph ... can not be offloaded")
    g = 2 * 2**30
    graphs = estimate_rlhf(M7, "grpo", cudagraph_bytes=g, **GRPO)
    assert graphs.phases["train_actor"] - asleep_train(M7) == g


def asleep_train(model):
    return estimate_rlhf(model, "grpo", **GRPO).phases["train_actor"]


def test_engine_sleep_options_checked():
    with pytest.raises(ValueError, match="sleep_level"):
        estimate_rlhf(M7, "grpo", sleep_level=3, **GRPO)
    with pytest.raises(ValueError, match="vLLM"):
        estimate_rlhf(M7, "grpo", rollout_engine="sglang", sleep_level=1, **GRPO)
    with pytest.raises(ValueError, match="free_cache_engine"):
        estimate_rlhf(M7, "grpo", free_cache_engine=False, sleep_level=2, **GRPO)
    with pytest.raises(ValueError, match="colocated"):
        estimate_rlhf(M7, "grpo", placement="separate", reward=None, param_offload=True)
    with pytest.raises(ValueError, match="param_offload"):
        estimate_rlhf(M7, "grpo", param_offload="yes", **GRPO)


def test_min_rlhf_gpus_skips_counts_megatron_cannot_split():
    from memlib.training.rlhf import min_rlhf_gpus
    # tp 2 x pp 2 needs a multiple of 4 GPUs: 1, 2, 3, 5, 6, 7 are skipped, not refused
    n = min_rlhf_gpus(M7, "a100-80gb", "grpo", reward=None, strategy="megatron", train_tp=2, train_pp=2)
    assert n is not None and n % 4 == 0
