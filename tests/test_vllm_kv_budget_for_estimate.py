"""memlib.serving.vllm_kv_budget_for_estimate / vllm_concurrency_for_estimate: vLLM's KV budget (Worker.
determine_available_memory) for any serving layout memlib estimates, here DeepSeek-V3 with data-parallel attention
and expert parallel 8 on one 8 x H200 node (chapter 05, step 5 and the 30-second answer).

Hand derivation (vLLM's formula, the 0.9 default, the H200 as torch reports it):
  total = 143,156 MiB (an H200's _CudaDeviceProperties total_memory, memlib.hardware's cited source)
        = 150,109,945,856 B; x 0.9 = 135,098,951,270 B
  profile peak above the weights: the sampler warm-up, max_num_seqs 1,024 rows (vLLM's default on a >= 70 GiB GPU
        that is not an A100) x vocab 129,280 x 38 B (PyTorch's top-k/top-p sort) = 5,030,420,480 B, plus the
        8,192-token chunk's hidden states 8,192 x 7,168 x 2 = 117,440,512 B: 5,147,860,992 B (more than the
        chunk's forward workspace, ~2.3 GB)
  non-torch: NCCL and all-to-all buffers, memlib's 0.5 GiB = 536,870,912 B
  MLA latent per token: (512 + 64) x 61 layers x 2 B = 70,272 B, whole on every GPU (no tensor parallelism)
"""

from __future__ import annotations

import pytest

from memlib import estimate_inference
from memlib.parallel.plan import plan_serving
from memlib.serving import (vllm_concurrency_for_estimate, vllm_kv_budget_for_estimate, vllm_kv_cache_budget_bytes,
                            vllm_max_concurrency)

TOTAL = 143_156 * 2**20
SAMPLER = 1024 * 129_280 * 38 + 8192 * 7168 * 2
NON_TORCH = 512 * 2**20
LATENT = (512 + 64) * 61 * 2


@pytest.fixture(scope="module")
def best():
    return plan_serving("deepseek-v3", "h200", 8, context_len=8192).best


def test_the_layout_is_data_parallel_attention_with_the_whole_latent_per_gpu(best):
    assert best.settings["tp"] == 1 and best.settings["ep"] == 8
    assert best.estimate.kv_bytes_per_token == LATENT == 70_272


def test_budget_is_vllms_formula_on_the_estimates_weights(best):
    e = best.estimate
    assert e.activation_bytes + e.dequant_workspace < SAMPLER   # the sampler warm-up sets the profile peak
    expect = int(TOTAL * 0.9) - e.weight_bytes - SAMPLER - NON_TORCH
    assert vllm_kv_budget_for_estimate(e, "h200") == expect
    # 135.10 GB - 100.84 GB of weights - 5.15 GB - 0.54 GB = 28.57 GB
    assert 28.4e9 < expect < 28.7e9


def test_concurrency_is_whole_blocks_over_the_context(best):
    e = best.estimate
    budget = int(TOTAL * 0.9) - e.weight_bytes - SAMPLER - NON_TORCH
    per_gpu = budget // (16 * LATENT) * 16 / 8192          # 25,411 blocks of 16 tokens -> 49.6 chats of 8k
    assert vllm_concurrency_for_estimate(e, "h200") == per_gpu
    # eight engines: about 397 chats, against the 544 memlib's fits() admits (the CUDA context and 5% headroom)
    assert 8 * int(per_gpu) == 392
    assert best.sequences == 544


def test_flashinfer_sampler_and_utilization_are_honoured(best):
    e = best.estimate
    # FlashInfer's sampler keeps 14 B per logit: 1,024 x 129,280 x 14 + the hidden states = 1.97 GB, below the
    # forward workspace, which then sets the peak
    forward = e.activation_bytes + e.dequant_workspace
    assert 1024 * 129_280 * 14 + 8192 * 7168 * 2 < forward
    assert vllm_kv_budget_for_estimate(e, "h200", sampler="flashinfer") == \
        int(TOTAL * 0.9) - e.weight_bytes - forward - NON_TORCH
    assert vllm_kv_budget_for_estimate(e, "h200", gpu_memory_utilization=0.95) == \
        int(TOTAL * 0.95) - e.weight_bytes - SAMPLER - NON_TORCH


@pytest.mark.parametrize("model, gpu, weights, tp, chunk", [("llama-3-70b", "a100-80gb", "bf16", 2, 2048),
                                                           ("llama-3-70b", "h100-80gb", "fp8-block", 4, 8192),
                                                           ("llama-3.1-8b", "a100-80gb", "bf16", 1, 2048)])
def test_agrees_with_the_tensor_parallel_budget(model, gpu, weights, tp, chunk):
    # the same formula: on a plain tensor-parallel layout both functions give the same bytes and concurrency
    e = estimate_inference(model, 1, 8192, weights=weights, tp=tp, prefill_tokens=chunk, engine="vllm")
    assert vllm_kv_budget_for_estimate(e, gpu) == vllm_kv_cache_budget_bytes(model, gpu, weights=weights, tp=tp)
    assert vllm_concurrency_for_estimate(e, gpu) == vllm_max_concurrency(model, gpu, 8192, weights=weights, tp=tp)


def test_no_room_is_zero_concurrency():
    e = estimate_inference("llama-3-70b", 1, 8192, weights="bf16", tp=1, prefill_tokens=2048, engine="vllm")
    assert vllm_kv_budget_for_estimate(e, "a100-80gb") < 0
    assert vllm_concurrency_for_estimate(e, "a100-80gb") == 0.0


def test_bad_utilization_is_named(best):
    with pytest.raises(ValueError, match="gpu_memory_utilization"):
        vllm_kv_budget_for_estimate(best.estimate, "h200", gpu_memory_utilization=1.5)


def test_not_an_estimate_is_named():
    with pytest.raises(ValueError, match="estimate_inference result"):
        vllm_kv_budget_for_estimate("deepseek-v3", "h200")
