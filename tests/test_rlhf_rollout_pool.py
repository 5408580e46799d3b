"""The RLHF rollout engine as vLLM/SGLang run it: a fixed share of each card, a KV pool that holds what it
can and queues the rest, the G samples of a prompt sharing its prefix (memlib.training.rlhf.rollout_pool,
rollout_token_slots, RolloutPool.sequences_at_once / waves, estimate_rlhf's rollout phase).

Every expected value is a hand derivation written out below (or a documented default of the engine or
framework, pinned), never a number copied from memlib's output.
"""

from __future__ import annotations

import pytest

from memlib import fits, get_model
from memlib.serving.capacity import vllm_kv_cache_budget_bytes
from memlib.serving.capacity import sglang_max_total_tokens
from memlib.training.rlhf import (RolloutPool, estimate_rlhf, min_rlhf_gpus, rollout_pool,
                                  rollout_token_slots)

M7 = "llama-2-7b"
P7 = 6_738_415_616          # Llama-2-7B's exact parameter count (HF safetensors index: 6.74B)
KV7 = 2 * 32 * 32 * 128 * 2  # K and V x 32 layers x 32 KV heads x 128 dims x 2 bytes = 524,288 B per token
# torch.cuda.get_device_properties(0).total_memory of an A100-SXM4-80GB: 81,051 MiB (memlib's GPU catalog,
# sourced from ultralytics/ultralytics#22877)
A100_TOTAL = 81_051 * 2**20  # 84,988,133,376 B


# --- the share the engine reserves ------------------------------------------------------------------------
def test_vllm_pool_is_the_fraction_of_the_card_and_holds_weights_plus_kv():
    pool = rollout_pool(M7, "a100-80gb", "vllm", 0.5)
    # 0.5 x 84,988,133,376 = 42,494,066,688 B: OpenRLHF's hybrid example (--vllm_gpu_memory_utilization 0.5)
    assert pool.reserved_bytes == 42_494_066_688
    assert pool.weight_bytes == 2 * P7            # the engine's own bf16 copy of the weights
    assert pool.kv_bytes_per_token == KV7
    # the KV pool is vLLM's budget at that fraction (weights, the profiled activation peak and memory outside
    # torch taken off), in whole 16-token blocks. An RL framework drives vLLM's offline LLM class: on an A100
    # its defaults are max_num_batched_tokens 8,192 and max_num_seqs 256 (vllm EngineArgs._set_default_args).
    budget = vllm_kv_cache_budget_bytes(M7, "a100-80gb", gpu_memory_utilization=0.5, max_num_batched_tokens=8192,
                                        max_num_seqs=256)
    assert pool.token_slots == budget // (16 * KV7) * 16
    assert pool.kv_pool_bytes == pool.token_slots * KV7
    # weights + KV pool + the rest add up to the share; the rest (activation peak of an 8k-token forward,
    # memory outside torch, the part of a block) is small: under 2 GB
    assert pool.weight_bytes + pool.kv_pool_bytes + pool.other_bytes == pool.reserved_bytes
    assert 0 < pool.other_bytes < 2e9


def test_sglang_pool_is_mem_fraction_static_with_page_one():
    pool = rollout_pool(M7, "a100-80gb", "sglang", 0.5)
    assert pool.reserved_bytes == A100_TOTAL // 2
    assert pool.page == 1 and pool.max_num_seqs is None
    assert pool.token_slots == sglang_max_total_tokens(M7, "a100-80gb", mem_fraction_static=0.5)


def test_the_rollout_phase_is_the_share_whatever_the_batch_group_or_gpu_count():
    # Colocated with idle roles asleep, the rollout phase is the engine's share and nothing else:
    # 42,494,066,688 B per GPU for PPO and GRPO, 16 or 1,024 prompts, G = 2 or 8, on 2 or 8 GPUs.
    seen = set()
    for alg, g in (("ppo", None), ("grpo", 2), ("grpo", 8)):
        for rb in (16, 1024):
            for n in (2, 8):
                e = estimate_rlhf(M7, alg, gpus=n, rollout_batch=rb, group_size=g)
                seen.add(e.phases["rollout"])
    assert seen == {42_494_066_688}


def test_review_08_1_grpo_sixteen_prompts_times_eight_fits_an_80gb_card():
    # The old model put 16 prompts x G=8 = 128 sequences x 2,048 tokens x 0.52 MB = 137 GB of cache on one
    # card. vLLM holds what its pool holds and queues the rest: the rollout phase stays at 0.5 of the card.
    e = estimate_rlhf(M7, "grpo", gpus=8, group_size=8, rollout_batch=16)
    assert e.phases["rollout"] == A100_TOTAL // 2
    assert fits(e, "a100-80gb").fits
    assert e.waves > 1  # the group costs rounds of decoding instead


def test_a_larger_fraction_is_a_larger_phase_and_more_sequences_at_once():
    small, big = (estimate_rlhf(M7, gpus=8, rollout_batch=128, gpu_memory_utilization=f) for f in (0.4, 0.6))
    assert big.phases["rollout"] - small.phases["rollout"] == int(A100_TOTAL * 0.6) - int(A100_TOTAL * 0.4)
    assert big.sequences_at_once > small.sequences_at_once and big.waves <= small.waves


# --- shared-prefix token slots --------------------------------------------------------------------------
def test_g_samples_share_the_prompt():
    # review 08-1: 1,024 prompt tokens once + 8 x 1,024 response tokens = 9,216 slots, not 8 x 2,048 = 16,384
    assert rollout_token_slots(1024, 1024, 8) == 1024 + 8 * 1024 == 9216
    assert rollout_token_slots(1024, 1024, 8, shared_prefix=False) == 8 * 2048 == 16384
    assert 1 - 9216 / 16384 == pytest.approx(0.4375)  # -44%
    # a prompt that is not a whole number of vLLM's 16-token blocks: the 62 full blocks (992 tokens) are
    # shared, each sample keeps its own copy of the last 8 prompt tokens + its 1,000 response tokens in
    # ceil(1,008 / 16) = 63 blocks = 1,008 slots: 992 + 4 x 1,008 = 5,024
    assert rollout_token_slots(1000, 1000, 4) == 992 + 4 * 1008 == 5024
    # SGLang's radix cache, page 1: exactly 1,000 + 4 x 1,000
    assert rollout_token_slots(1000, 1000, 4, page=1) == 5000
    # one sample: the sequence itself, in whole blocks (2,000 = 125 blocks)
    assert rollout_token_slots(1000, 1000, 1) == 2000


# --- sequences per wave (the time side) -----------------------------------------------------------------
def _pool(token_slots, max_num_seqs=256):
    return RolloutPool("vllm", "a100-80gb", 0.5, 1, 0, 0, token_slots * KV7, KV7, token_slots, 16, max_num_seqs)


def test_sequences_at_once_and_waves_by_hand():
    pool = _pool(100_000)
    # PPO: 2,048 tokens each: 100,000 // 2,048 = 48 sequences at once; 128 prompts take ceil(128 / 48) = 3 waves
    assert pool.sequences_at_once(1024, 1024) == 48
    assert pool.waves(128, 1024, 1024) == 3
    # GRPO, G = 8 sharing the prompt: 9,216 slots per group of 8, 100,000 x 8 // 9,216 = 86 sequences;
    # 128 prompts x 8 = 1,024 sequences take ceil(1,024 / 86) = 12 waves (86 x 11 = 946 < 1,024)
    assert pool.sequences_at_once(1024, 1024, 8) == 86
    assert pool.waves(128, 1024, 1024, 8) == 12
    # without prefix sharing: 100,000 // 2,048 = 48 at once, ceil(1,024 / 48) = 22 waves (48 x 21 = 1,008)
    assert pool.sequences_at_once(1024, 1024, 8, shared_prefix=False) == 48
    assert pool.waves(128, 1024, 1024, 8, shared_prefix=False) == 22
    # vLLM's scheduler runs at most max_num_seqs sequences, however large the pool
    assert _pool(10**8).sequences_at_once(1024, 1024) == 256


def test_estimate_reports_the_engines_sequences_and_waves():
    e = estimate_rlhf(M7, "grpo", gpus=8, group_size=8, rollout_batch=128)
    t = e.pool.token_slots
    assert e.sequences_at_once == min(t * 8 // 9216, 256)
    assert e.waves == -(-128 * 8 // e.sequences_at_once)


def test_a_pool_too_small_for_one_sequence_is_refused():
    pool = _pool(1000)
    assert pool.sequences_at_once(1024, 1024) == 0
    with pytest.raises(ValueError, match="holds no sequence"):
        pool.waves(16, 1024, 1024)
    with pytest.raises(ValueError, match="refuses to start"):
        rollout_pool("llama-2-70b", "a100-80gb", "vllm", 0.5)  # 138 GB of bf16 weights in a 42.5 GB share, tp 1
    # the estimate keeps the models' own bytes readable (a question about their states), but its peak, fits()
    # and min_rlhf_gpus refuse: the step cannot run
    e = estimate_rlhf("llama-2-70b", gpus=8, gpu_memory_utilization=0.5)
    assert e.roles["actor"].resident_bytes > 0 and "cannot start" in e.explain()
    for ask in (lambda: e.peak_bytes, lambda: fits(e, "a100-80gb"),
                lambda: min_rlhf_gpus("llama-2-70b", "a100-80gb", gpu_memory_utilization=0.5)):
        with pytest.raises(ValueError, match="refuses to start"):
            ask()
    # a share that holds the weights but not one 32k-token sequence: vLLM refuses too (max_model_len > cache)
    tight = estimate_rlhf("llama-2-13b", gpus=8, gpu_memory_utilization=0.35, prompt_len=1024, response_len=31744)
    with pytest.raises(ValueError, match="holds no sequence"):
        tight.peak_bytes


# --- GRPO against PPO at an equal pool ------------------------------------------------------------------
def test_grpo_is_lighter_by_the_critic_and_slower_by_the_group():
    # Every role resident, the same engine share: GRPO's peak (training the actor) lacks exactly the
    # critic's sharded states, 16 B x 6.74e9 / 8 = 13.5 GB, whatever G.
    ppo = estimate_rlhf(M7, "ppo", gpus=8, offload_idle=False, rollout_batch=128)
    for g in (2, 8, 64):
        grpo = estimate_rlhf(M7, "grpo", gpus=8, offload_idle=False, rollout_batch=128, group_size=g)
        assert ppo.peak_bytes - grpo.peak_bytes == ppo.roles["critic"].resident_bytes
        assert ppo.roles["critic"].resident_bytes == pytest.approx(16 * P7 / 8, rel=1e-6)
        assert grpo.phases["rollout"] < ppo.phases["rollout"]  # the pool is equal; the critic is gone
    # G samples per prompt cost decoding rounds: 128 prompts x 8 against 128 x 1 on the same pool
    grpo8 = estimate_rlhf(M7, "grpo", gpus=8, rollout_batch=128, group_size=8)
    t = ppo.pool.token_slots
    assert ppo.waves == -(-128 // (t // 2048))
    assert grpo8.waves == -(-1024 // min(t * 8 // 9216, 256))
    assert grpo8.waves > ppo.waves


def test_sleeping_engine_keeps_its_cuda_graphs():
    # CUDA graphs cannot be offloaded (verl rollout.yaml); vLLM v0.21+ takes them off the KV budget.
    g = 2 * 2**30
    plain = estimate_rlhf(M7, gpus=8, rollout_batch=128)
    graphs = estimate_rlhf(M7, gpus=8, rollout_batch=128, cudagraph_bytes=g)
    assert graphs.phases["train_actor"] == plain.phases["train_actor"] + g
    assert graphs.phases["rollout"] == plain.phases["rollout"]  # inside the share
    assert plain.pool.kv_pool_bytes - graphs.pool.kv_pool_bytes == pytest.approx(g, abs=16 * KV7)


def test_separate_engine_defaults_to_vllms_own_fraction():
    e = estimate_rlhf(M7, placement="separate", gpus={"actor": 2, "critic": 2, "reference": 1, "reward": 1,
                                                      "rollout": 2})
    assert e.roles["rollout"].peak_bytes == int(A100_TOTAL * 0.9)  # vLLM's default gpu_memory_utilization


# --- bad input ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [True, False, 0, 0.0, -0.1, 1.5, "0.5", [0.5]])
def test_a_fraction_must_be_a_number_in_zero_one(bad):
    with pytest.raises(ValueError, match="gpu_memory_utilization"):
        estimate_rlhf(M7, gpu_memory_utilization=bad)


@pytest.mark.parametrize("bad", [True, 0, 1.01])
def test_rollout_pool_checks_its_fraction(bad):
    with pytest.raises(ValueError, match="mem_fraction_static|gpu_memory_utilization"):
        rollout_pool(M7, "a100-80gb", "sglang", bad)


@pytest.mark.parametrize("kwargs, words", [
    (dict(rollout_engine="trt"), "rollout_engine"),
    (dict(rollout_engine="hf", gpu_memory_utilization=0.5), "hf"),
    (dict(rollout_engine="hf", cudagraph_bytes=2**30), "cudagraph_bytes"),
    (dict(shared_prefix="yes"), "shared_prefix"),
    (dict(cudagraph_bytes=-1), "cudagraph_bytes"),
    (dict(gpu="b300-9000"), "gpu|GPU"),
])
def test_bad_engine_options_are_clear_value_errors(kwargs, words):
    with pytest.raises(ValueError, match=words):
        estimate_rlhf(M7, **kwargs)


def test_dpo_refuses_engine_options():
    with pytest.raises(ValueError, match="DPO generates nothing"):
        estimate_rlhf(M7, "dpo", gpu_memory_utilization=0.5)


def test_min_gpus_sizes_the_pool_on_its_own_card():
    # Asleep, by hand on either 80 GB card: one GPU holds the actor's 16 x 6.74e9 = 108 GB of states: no;
    # two hold 54 GB + ~6 GB of activations, and the engine's phase is 0.5 x ~85 GB = 42.5 GB: yes. The
    # engine's share is taken of the card min_rlhf_gpus is asked about (gpu is passed through).
    assert min_rlhf_gpus(M7, "h100-80gb") == min_rlhf_gpus(M7, "a100-80gb") == 2


def test_rollout_token_slots_checks_its_input():
    for kwargs in (dict(prompt_len=0, response_len=1), dict(prompt_len=1, response_len=1, group_size=0),
                   dict(prompt_len=1, response_len=1, shared_prefix=1)):
        with pytest.raises(ValueError):
            rollout_token_slots(**kwargs)


def test_llama_2_7b_count_used_above():
    assert get_model(M7).num_params == P7


# --- FSDP trainers (verl's workers) ---------------------------------------------------------------------
def test_fsdp_full_shard_trainers_shard_the_frozen_weights_too():
    # verl wraps actor and reference in FSDP FULL_SHARD: the reference's bf16 weights are 1/8 each, ceil(2P / 8),
    # and the actor's bf16-mixed states 16P / 8 (FSDP2's fp32 sharded parameters, gradients and AdamW states)
    e = estimate_rlhf(M7, "grpo", gpus=8, zero_stage="FULL_SHARD")
    assert e.roles["reference"].resident_bytes == -(-2 * P7 // 8)
    assert e.roles["actor"].resident_bytes == pytest.approx(16 * P7 / 8, rel=1e-6)
    # SHARD_GRAD_OP keeps whole parameters: the frozen reference is not sharded
    assert estimate_rlhf(M7, "grpo", gpus=8, zero_stage="SHARD_GRAD_OP").roles["reference"].resident_bytes == 2 * P7
    with pytest.raises(ValueError, match="FULL_SHARD"):
        estimate_rlhf(M7, zero_stage="HYBRID")
