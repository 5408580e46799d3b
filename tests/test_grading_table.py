"""Table-driven grading test: (exercise, answer, expected verdict, what the feedback must say).

Every case of issue 13 is here, plus the right answer and the common slips of each exercise.
The right answers are derived by hand below from the models' published shapes (not by running
memlib); memlib must agree with them within the exercise's tolerance.
"""

from __future__ import annotations

import math

import pytest

from memlib.learn import grading
from memlib.learn.exercises import progress
from memlib.learn.grading import grade


def llama_params(h: int, layers: int, inter: int, vocab: int = 32000, kv: int | None = None) -> int:
    """HF LlamaForCausalLM, tensor by tensor: q, o (h x h); k, v (h x kv); gate, up, down (h x inter);
    two RMSNorms per layer; untied embedding and lm_head (vocab x h); the final norm."""
    kv = h if kv is None else kv
    return layers * (2 * h * h + 2 * h * kv + 3 * h * inter + 2 * h) + 2 * vocab * h + h


N7 = llama_params(4096, 32, 11008)  # LLaMA-7B: 6,738,415,616 ("6.7B" in Touvron et al. 2023, Table 2)
N65 = llama_params(8192, 80, 22016)  # LLaMA-65B / Vicuna-65B: 65,285,660,672
N70 = llama_params(8192, 80, 28672, kv=1024)  # Llama-2-70B, 8 KV heads: 68,976,648,192
N8 = llama_params(4096, 32, 14336, vocab=128256, kv=1024)  # Llama-3-8B: 8,030,261,248
N33 = llama_params(6656, 60, 17920)  # LLaMA-33B (Touvron et al. 2023, Table 2: d 6656, 60 layers): 32,528,943,616
N13 = llama_params(5120, 40, 13824)  # Llama-2-13B (no GQA): 40 x 317,204,480 + 2 x 32000 x 5120 + 5120 = 13,015,864,320
GiB = 2**30
V100 = 32 * GiB
A100_40 = 40 * GiB  # 01.1 asks for a DGX A100 40GB node: 8 x 40 GiB
assert (N7, N65, N70, N8) == (6_738_415_616, 65_285_660_672, 68_976_648_192, 8_030_261_248)
assert N33 == 32_528_943_616
assert llama_params(8192, 80, 28672, vocab=128256, kv=1024) == 70_553_706_496
# 04.15's bounds, by hand (see its rows): memory 5.12 req/s < compute 5.78 req/s
_W15, _KV15 = 2 * (N8 - 128256 * 4096), 2 * 32 * 8 * 128 * 2 * 4000
_MEM15 = 128 / (0.5 + 1000 * (_W15 + 128 * _KV15) / 3.35e12)
_COMP15 = 0.4 * 989.4e12 / (2 * N8 * 3999 + 4 * 32 * 32 * 128 * 3999 * 4000 / 2)
assert 5.1 < _MEM15 < 5.2 < 5.7 < _COMP15 < 5.8

# hand derivations (bytes unless noted)
STATES_65 = 16 * N65  # 2 + 2 + 12 bytes/param (ZeRO paper, Sec. 3.1)
ZERO3_65 = STATES_65 / 4
ZERO1_65 = (2 + 2 + 12 / 4) * N65
HOST_INFINITY_33 = 18 * N33  # 12 (fp32 master, m, v) + 4 (fp32 grads) + 2 (fp16 params); 01.8 asks for 33B
V100S = math.ceil(STATES_65 / V100)  # 31
KOR_LAYER = 2048 * 1 * 4096 * (34 + 5 * 32 * 2048 / 4096)  # Korthikanti et al. 2022, eq. (2)
LORA_7B_ALL = 32 * 16 * (4 * (4096 + 4096) + 2 * (4096 + 11008) + (11008 + 4096))  # r (in + out), 7 projections
LORA_7B_QV = 32 * 16 * 2 * (4096 + 4096)
KV_70B_TOKEN = 2 * 80 * 8 * 128 * 2  # K and V, 80 layers, 8 KV heads, head_dim 128, bf16
ATTN_65 = 80 * 64 * 128 * 2048
STEP_65 = (8 * N65 + 16 * ATTN_65) * 4 * 2048 / (4 * 125e12 * 0.4)  # PaLM FLOPs with recompute at 40% HFU (recompute counted: PaLM App. B); = 30% MFU
# 01.11: torch's linear keeps each Qwen3-32B layer's 7 gathered fp16 matmul weights (q, o: 5120 x 8192, 64 heads of
# 128; k, v: 5120 x 1024; gate, up, down: 5120 x 25600) until that layer's backward, all 64 layers at the loss, whole
# on every GPU. Qwen3-32B (its config.json): those, two RMSNorms and q/k norms (128) per layer, untied 151936 x 5120
# embedding and head, the final norm: 32,762,123,264 parameters
LATE_LOAD_Q32 = 64 * (2 * 5120 * 8192 + 2 * 5120 * 1024 + 3 * 5120 * 25600) * 2
N_Q32 = 64 * (2 * 5120 * 8192 + 2 * 5120 * 1024 + 3 * 5120 * 25600 + 2 * 5120 + 2 * 128) + 2 * 151936 * 5120 + 5120
# 01.12: DeepSpeed v0.14 stage3.py blocks the host only past max_param_reduce_events = 2 outstanding bucket reductions,
# so three buckets of reduce_bucket_size (3e8) fp16 gradients can be freed-but-held for the reduce stream
HELD_3E8 = 3 * 3 * 10**8 * 2
# 01.13: Llama-3-8B (its config.json: h 4096, 32 layers, 8 KV heads of 128, MLP 14336, vocabulary 128256, untied) under
# Megatron with tp 2: each layer's q, k, v, o and gate, up, down halved, its two RMSNorms whole; embedding and head
# halved; the final norm whole. Adam's two fp32 moments of that rank's share, over dp 4, are what iteration 2 adds.
RANK_L3_TP2 = 32 * ((2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336) // 2 + 2 * 4096) + 128256 * 4096 + 4096
MOMENTS_L3 = 8 * RANK_L3_TP2 // 4

# notebook 04: Llama-3-70B served (Meta's config.json: hidden 8192, 80 layers, 64 heads of 128, 8 KV heads,
# MLP 28672, vocabulary 128256, untied head); A100 80GB as torch sees it (81051 MiB), H100 SXM 3.35 TB/s
H3, L3, I3, V3 = 8192, 80, 28672, 128256
PROJ3 = L3 * (2 * H3 * H3 + 2 * H3 * 1024 + 3 * H3 * I3)  # q, o; k, v (8 x 128); gate, up, down
NORMS3 = (2 * L3 + 1) * H3  # two RMSNorms per layer and the final one, replicated under tp
A100_TOTAL = 81051 * 2**20
CTX_BYTES = 512 * 2**20  # memlib.fits' CUDA context (vLLM's memory outside torch, the same 0.5 GiB)
T2048 = 2048  # vLLM's prefill chunk on an A100


def llama3_70b_bf16(tp: int, embedding: bool = True) -> int:
    """bf16 bytes on one GPU of tp: projections / tp, embedding and head by vocabulary rows, norms whole."""
    rows = -(-V3 // tp)
    return 2 * (PROJ3 // tp + rows * H3 * (2 if embedding else 1) + NORMS3)


def mlp_moment(T: int, tp: int) -> int:
    """The prefill's largest moment: residual + normed input, RoPE cos and sin, act(gate), up, product."""
    return 2 * T * H3 * 2 + 2 * T * 128 * 2 + 3 * T * (I3 // tp) * 2


# AWQ int4, group 128: qweight 1/2 B, qzeros 4 bits per 8 outputs per group (1/256 B), fp16 scales (1/64 B)
INT4_70_TP2 = PROJ3 * (0.5 + 1 / 256 + 1 / 64) / 2 + 2 * (-(-V3 // 2)) * H3 * 2 + NORMS3 * 2
# fp8 block-wise: 1 B per projection weight + an fp32 scale per 128 x 128 block; every matrix at tp 2 has
# dimensions that are multiples of 128, so the scales are 4 B per 16,384 weights
FP8_70_TP2 = PROJ3 / 2 * (1 + 4 / 128**2) + 2 * (-(-V3 // 2)) * H3 * 2 + NORMS3 * 2
# fp8 prefill workspace: the fp8 copy of the widest input (down_proj, 28672 / 2) and its fp32 scale per 128
DEQ_FP8 = T2048 * (I3 // 2) + 4 * T2048 * (I3 // 2 // 128)
PEAK1 = FP8_70_TP2 + mlp_moment(T2048, 2) + DEQ_FP8  # everything but the cache
# memlib.fits: peak + 0.5 GiB + 5% of the peak <= capacity; a chat caches KV_70B_TOKEN / 2 x 8,192 per GPU
CHATS_FP8_A100 = math.floor(((A100_TOTAL - CTX_BYTES) / 1.05 - PEAK1) / (KV_70B_TOKEN / 2 * 8192))
# vLLM's profile peak above the weights: the forward's moment or the sampler's warm-up over 256 dummy sequences,
# whichever is larger; the warm-up sorts 256 x V3 logits at 38 B each (bf16 2, fp32 4, sorted 4 + int64 8, aten's
# int64 reverse indices 8, cub's alternate buffers 4 + 8) beside the forward's hidden states (T x h x 2)
SAMPLER_70 = 256 * V3 * 38 + T2048 * H3 * 2
VLLM_KV_BF16 = int(A100_TOTAL * 0.9) - llama3_70b_bf16(2) - max(mlp_moment(T2048, 2), SAMPLER_70) - CTX_BYTES
# 04.3: Llama-2-70B has Llama-3-70B's projections (PROJ3) and a 32,000-token vocabulary (Meta's config.json)
V2 = 32000
N2_70 = PROJ3 + 2 * V2 * H3 + NORMS3  # 68,976,648,192 parameters, the published count
INT4_L2_70_TP2 = PROJ3 * (0.5 + 1 / 256 + 1 / 64) / 2 + 2 * (V2 // 2) * H3 * 2 + NORMS3 * 2
# 04.6: fp8 weights on 2 x A100 at --gpu-memory-utilization 0.95: the cap, less what the profile run held
VLLM_PEAK_FP8 = FP8_70_TP2 + max(mlp_moment(T2048, 2) + DEQ_FP8, SAMPLER_70)  # the sampler's 1.19 GiB wins
VLLM_KV_FP8_095 = int(A100_TOTAL * 0.95) - VLLM_PEAK_FP8 - CTX_BYTES
# 04.11: speculative decoding, a = 0.7, g = 5, draft forward 0.1 of the target's (Leviathan et al. 2023)
SPEC_TOKENS = 1 + 0.7 + 0.7**2 + 0.7**3 + 0.7**4 + 0.7**5  # = (1 - 0.7^6) / 0.3 = 2.941
SPEC_SPEEDUP = SPEC_TOKENS / (5 * 0.1 + 1)
# 04.12: Llama-2-13B (40 layers, 40 heads of 128) pooled in groups of 8 -> 5 KV heads, 4,000 tokens, bf16
GQA_13B = 2 * 40 * 5 * 128 * 2 * 4000
DEC_W = llama3_70b_bf16(8, embedding=False)  # a decode step reads every weight but the embedding table
DEC_KV = 185 * 8192 * KV_70B_TOKEN / 8
DECODE_185 = (DEC_W + DEC_KV) / 3.35e12


def paged_waste_by_hand(tokens, kv_bytes_per_token, block_size):
    blocks = (tokens + block_size - 1) // block_size
    return (blocks * block_size - tokens) * kv_bytes_per_token


def paged_waste_one_block_too_many(tokens, kv_bytes_per_token, block_size):
    return ((tokens // block_size + 1) * block_size - tokens) * kv_bytes_per_token
# notebook 07: PaLM's FLOPs per token 6N + 12·L·H·Q·T (Chowdhery et al. 2022, App. B); H100 dense bf16 989.4 TFLOP/s
DAYS_7B = (6 * N7 + 12 * 32 * 32 * 128 * 4096) * 2e12 / (256 * 989.4e12 * 0.4) / 86400  # 10.7 days on H100s
# 07.3 asks for the same run on 256 B200s: dense bf16 2,250 TFLOP/s (NVIDIA DGX B200 datasheet: 72 PFLOPS FP8
# with sparsity for 8 GPUs = 4.5 PFLOPS dense FP8 = 2.25 PFLOPS dense bf16 per GPU)
# 07.11: Young's interval for Llama-3.1-70B's checkpoint (2 + 12 B/param) written at 200 GB/s on 4,096 GPUs,
# MTBF = 54 days x 86,400 / 419 interruptions (Llama 3 paper, Sec. 3.3.4) x 16,384 / 4,096 = 44,540 s
N70_31 = llama_params(8192, 80, 28672, vocab=128256, kv=1024)  # Llama-3.1-70B: 70,553,706,496
CK_WRITE = 14 * N70_31 / 200e9  # 4.94 s
CK_MTBF = 54 * 86400 / 419 * 16384 / 4096
CK_YOUNG = math.sqrt(2 * CK_WRITE * CK_MTBF)  # 663 s
DAYS_7B_B200 = (6 * N7 + 12 * 32 * 32 * 128 * 4096) * 2e12 / (256 * 2250e12 * 0.4) / 86400  # 4.71 days
Z3_7B = 255 / 256 * 2 * (N7 + (N7 - 5 * 10**8) + N7)  # gather fwd, gather bwd less 0.5B kept, reduce-scatter
FT_70B = (8 * N70_31 + 16 * 80 * 64 * 128 * 4096) * 1e9 / (989.4e12 * 0.4) / 3600  # full recompute: 426 GPU-hours
FT_70B_NO_RC = (6 * N70_31 + 12 * 80 * 64 * 128 * 4096) * 1e9 / (989.4e12 * 0.4) / 3600
DS_MFU = 100 * 6 * 37e9 * 14.8e12 / (2.664e6 * 3600 * 989.4e12)  # DeepSeek-V3's pretraining, 6ND: 34.6%
# DeepSeek's own count, the question's main convention: 250 GFLOP per training token (Zhao et al. 2025,
# "Insights into DeepSeek-V3", Table 2): 39.0%
DS_MFU_250 = 100 * 250e9 * 14.8e12 / (2.664e6 * 3600 * 989.4e12)
assert N70_31 == 70_553_706_496

# DeepSeek-V3 (notebook 05): transformers' parameter count (validation/param_counts.json); a token skips 248 of the
# 256 routed experts (three 7168 x 2048 matrices each) in each of the 58 MoE layers
N_V3 = 671_026_404_352
N_V3_ACTIVE = N_V3 - 58 * 248 * 3 * 7168 * 2048  # 37,552,282,624 ("37B activated", DeepSeek-V3 report)
KV_V3 = (512 + 64) * 61 * 2  # MLA latent + rope key, 61 layers, bf16: 70,272 bytes per token
KV_V3_FULL = 128 * (192 + 128) * 61 * 2  # full K (nope 128 + rope 64) and V (128) of 128 heads
V3_TP8_CHATS = 55e9 / (KV_V3 * 8192)  # ~55 GB free per GPU, the whole latent on every GPU: 95.5
H200 = 141 * GiB
DISPATCH = 4096 * 8 * 7168 * 2 * 7 / 8  # rows x hidden x bf16, 7/8 leave the GPU: 411,041,792 bytes
assert N_V3_ACTIVE == 37_552_282_624 and KV_V3 == 70_272 and math.ceil(16 * N_V3 / H200) == 71
# 05.7, DeepSeek's own layout (report, Sec. 3.3.3: master weights and gradients in fp32, AdamW's moments in bf16):
# fp32 weights 4 + fp32 gradients 4 + bf16 m 2 + bf16 v 2 = 12 B/param; one H200 as torch reports it,
# total_memory=143156MB (an H200's _CudaDeviceProperties, memlib.hardware's cited source) = 143,156 x 2^20 B
# = 150,109,945,856 B; 12 x 671,026,404,352 = 8.052e12 B / 1.501e11 B = 53.6 -> 54
H200_TORCH = 143_156 * 2**20
assert math.ceil(12 * N_V3 / H200_TORCH) == 54 and math.ceil(8 * N_V3 / H200_TORCH) == 36
# Mixtral-8x22B (05.1; config.json: 56 layers, hidden 6144, 48 heads and 8 KV heads of 128, 8 experts of 16384,
# vocab 32000, untied): per layer q and o 2 x 6144^2, k and v 2 x 6144 x 1024, experts 8 x 3 x 6144 x 16384, router
# 6144 x 8, two norms 2 x 6144; plus embedding and head 2 x 32000 x 6144 and the final norm
MIX22_LAYER = 2 * 6144**2 + 2 * 6144 * 1024 + 8 * 3 * 6144 * 16384 + 6144 * 8 + 2 * 6144
N_MIX22 = 56 * MIX22_LAYER + 2 * 32000 * 6144 + 6144  # 140,620,634,112
N_MIX22_ACTIVE = N_MIX22 - 56 * 6 * 3 * 6144 * 16384  # a token skips 6 of 8 experts: 39,152,031,744
# Qwen3-235B-A22B (05.4; config.json: 94 layers, hidden 4096, 64 heads and 4 KV heads of 128, 128 experts of 1536,
# top-8, q/k norms of 128, vocab 151936, untied): per layer q 4096 x 8192, k and v 2 x 4096 x 512, o 8192 x 4096,
# q/k norms 2 x 128, experts 128 x 3 x 4096 x 1536, router 4096 x 128, two norms 2 x 4096
Q235_LAYER = 4096 * 8192 + 2 * 4096 * 512 + 8192 * 4096 + 2 * 128 + 128 * 3 * 4096 * 1536 + 4096 * 128 + 2 * 4096
N_Q235 = 94 * Q235_LAYER + 2 * 151936 * 4096 + 4096  # 235,093,634,560
N_Q235_ACTIVE = N_Q235 - 94 * 120 * 3 * 4096 * 1536  # a token skips 120 of 128 experts: 22,190,763,520
assert N_MIX22 == 140_620_634_112 and N_MIX22_ACTIVE == 39_152_031_744
assert N_Q235 == 235_093_634_560 and N_Q235_ACTIVE == 22_190_763_520


def touched_bytes(other_bytes, expert_bytes, num_experts, top_k, tokens):
    """05.3 written out: each expert is missed by a token with probability 1 - k/E."""
    return other_bytes + expert_bytes * (1 - (1 - top_k / num_experts) ** tokens)
# notebook 06 (Llama-3.1-8B: h 4096, 32 heads, 8 KV heads of 128, MLP 14336, 32 layers, V 128,256; 128k tokens)
V8, T128 = 128_256, 131_072
LOGITS_128K = T128 * V8 * (2 + 3 * 4)  # bf16 logits; fp32 log-softmax output and two fp32 gradients
# one layer's saved tensors per token (sdpa, bf16): two RMSNorms (fp32 input, normalized, output: 4h + 2h + 2h
# bytes each), q and the output (2h each), k and v (2 x 1024 each), fp32 log-sum-exp (4 x 32), SwiGLU's gate,
# SiLU, up and product (4 x 2 x 14336)
LAYER_TOKEN_8B = 2 * (4 + 2 + 2) * 4096 + 2 * 2 * 4096 + 2 * 2 * 1024 + 4 * 32 + 4 * 2 * 14336
assert LAYER_TOKEN_8B == 200_832
# issue 20: the exercises ask for figures the notebook does not print (another model, length or cp degree)
V_QWEN, T24, T96 = 152_064, 24_576, 98_304  # Qwen2.5-7B's vocabulary; 24k; 96k = 12 x 8,192
LOGITS_QWEN_24K = T24 * V_QWEN * (2 + 3 * 4)  # bf16 logits; fp32 log-softmax output and two fp32 gradients
CP2_ACTS_96K = LAYER_TOKEN_8B * (T96 // 2) * 32  # 49,152 tokens per GPU, 32 layers
EAGER_PROBS_128K = 32 * T128**2 * (4 + 2)  # fp32 softmax and its bf16 copy, 32 heads
CKPT_70B = T96 * 8192 * 2 * 80  # Llama-3.1-70B at 96k: each layer's bf16 input, 80 layers
SEQ_RATIO = T128 * (6 * N8 + 12 * 32 * 32 * 128 * T128) / (8192 * (6 * N8 + 12 * 32 * 32 * 128 * 8192))
KV_405B_128K = 2 * 126 * 8 * 128 * 2 * T128  # Llama-3.1-405B: K and V, 126 layers, 8 KV heads of 128, bf16
KV_70B_128K = 2 * 80 * 8 * 128 * 2 * T128  # the 70B's 80 layers (a slip)
# Mistral 7B's window w = 4,096 at T = 65,536, causal: a full query sees T/2 = 32,768 keys on average, a windowed
# one (w²/2 + (T - w)·w) / T = w - w²/(2T) = 4,096 - 128 = 3,968
WINDOW_RATIO = (65_536 / 2) / (4_096 - 4_096**2 / (2 * 65_536))
assert LOGITS_QWEN_24K == 52_319_748_096 and abs(WINDOW_RATIO - 8.258) < 1e-3


def ring_hand(kv_heads, head_dim, seq_len, cp, micro_batch, recompute):
    """Ring attention per layer: (cp-1) bf16 K/V blocks forward (twice with full recompute), again backward, and
    cp fp32 dK/dV blocks around the ring (torch 2.13 _templated_ring_attention_backward)."""
    block = 2 * 2 * kv_heads * head_dim * seq_len // cp * micro_batch
    return (2 if recompute == "full" else 1) * (cp - 1) * block + (cp - 1) * block + cp * 2 * block


def ring_forward_only(kv_heads, head_dim, seq_len, cp, micro_batch, recompute):
    block = 2 * 2 * kv_heads * head_dim * seq_len // cp * micro_batch
    return (2 if recompute == "full" else 1) * (cp - 1) * block


GB = lambda x: f"{x / 1e9:.2f} GB"  # noqa: E731
STUFFED = ("I would never use recompute, zero, offload, 8-bit, lora, bf16 or pipelines, because none of them "
           "works: no sharding, no fsdp, no checkpointing, no pcie, no host memory, no tensor parallel, no bubble, "
           "no adapters, no qlora.")
SOUND = ("First activation recomputation, which trades about a third more compute for activations; then shard the "
         "states across the GPUs, and if that is not enough keep the optimizer in CPU memory, paying the transfer; "
         "8-bit optimizer states and low-rank adapters come last.")
V100_BF16 = ("Use bf16 everywhere on V100 and it will be fine, no more thoughts needed here; the cards are fast "
             "and the model will train without trouble, so just start the job and wait for it to finish soon.")

CASES = [
    # -- issue 13: the per GPU vs total message points the right way (answers that are totals) --------
    ("01.8", "2342 GB", "incorrect", ("once too often", "asks for the total")),
    ("01.8", GB(HOST_INFINITY_33 / 4), "incorrect", "one process's share"),
    ("00.4", GB(KOR_LAYER), "incorrect", "one layer's share; the question asks for the total over all 32 layers"),
    ("01.1", GB(A100_40), "incorrect", "one GPU's share"),
    ("02.6", GB(KV_70B_TOKEN * 4096), "incorrect", "one sequence's share"),
    ("03.3", f"{LORA_7B_ALL / 32 / 1e6:.3f}M", "incorrect", "one layer's share"),
    ("01.3", GB(STATES_65), "incorrect", "total over all 4 GPUs; the question asks per GPU"),
    ("01.11", GB(LATE_LOAD_Q32), "correct", None),
    ("01.11", f"{LATE_LOAD_Q32 / GiB:.0f} GiB", "correct", None),
    ("01.11", GB(2 * N_Q32), "incorrect", "the embedding is not a matmul weight"),
    ("01.11", GB(LATE_LOAD_Q32 / 8), "incorrect", "whole on every GPU"),
    ("01.12", GB(HELD_3E8), "correct", None),
    ("01.12", f"{HELD_3E8 / GiB:.2f} GiB", "correct", None),
    ("01.12", GB(HELD_3E8 / 3), "incorrect", "outstanding hold theirs too"),
    ("01.12", GB(2 * HELD_3E8 / 3), "incorrect", "a third bucket is filled first"),
    ("01.12", GB(2 * HELD_3E8), "incorrect", "autograd's 16-bit ones"),
    ("01.13", GB(MOMENTS_L3), "correct", None),
    ("01.13", f"{MOMENTS_L3 / GiB:.1f} GiB", "correct", None),
    ("01.13", "8 GB", "correct", None),
    ("01.13", "约8.0GB", "correct", None),
    ("01.13", f"{MOMENTS_L3 / 1e9:.2f}GB（每张卡）", "correct", None),
    ("01.13", f"-{MOMENTS_L3 / 1e9:.2f} GB", "malformed", "negative"),
    ("01.13", GB(12 * RANK_L3_TP2 / 4), "incorrect", "before the first step"),
    ("01.13", GB(8 * RANK_L3_TP2), "incorrect", "shards the moments over the 4 data-parallel GPUs"),
    ("01.13", GB(2 * MOMENTS_L3), "incorrect", "owns about half of the parameters"),
    ("01.13", GB(MOMENTS_L3 / 2), "incorrect", "fp32: 4 bytes each"),
    # -- open questions are self-assessed: no automatic point, whatever the keywords --------------------
    ("03.9", STUFFED, "submitted", "mark('03.9'"),
    ("03.9", SOUND, "submitted", "not graded automatically"),
    ("01.10", V100_BF16, "submitted", "mark('01.10'"),
    ("00.9", "Buy more GPUs.", "not answered", "at least 25 words"),
    # -- the unit-slip diagnosis no longer overlaps the tolerance -----------------------------------------
    ("01.3", "245 GB", "incorrect", ("close", "too low")),
    ("01.3", "240 GB", "incorrect", ("close", "too low")),
    ("01.3", f"{ZERO3_65 / GiB:.1f} GB", "incorrect", "unit is not"),
    ("01.5", V100S + 1, "incorrect", ("close, but not it", "round up")),
    ("01.2", ("780GB", "1000 GB"), "incorrect", ("close", "too low")),
    ("01.2", ("780GB", "1 TB"), "incorrect", ("close", "too low")),
    # -- parsing --------------------------------------------------------------------------------------
    ("01.1", "343,6 GB", "malformed", "decimals with a point"),
    ("01.3", "-137.4 GB", "malformed", "negative"),
    ("01.1", 8 * A100_40, "correct", "read as bytes"),
    ("01.1", "343.6 gigabytes", "correct", None),
    ("01.3", f"{ZERO3_65 / 1e9:.0f} GB per GPU", "correct", None),
    ("03.3", f"{LORA_7B_ALL / 1e6:.0f}M params", "correct", None),
    ("01.5", f"{V100S} V100s", "correct", None),
    ("03.6", "57倍", "correct", None),
    ("03.6", "98%", "correct", "reduction"),
    ("01.1", 10**400, "malformed", "too large"),
    ("00.7", lambda **kw: (_ for _ in ()).throw(SystemExit(2)), "incorrect", "raised SystemExit"),
    ("01.3", "2**40", "malformed", None),
    ("01.3", "16*65e9/4", "malformed", None),
    ("01.3", "98%", "malformed", "not a percentage"),
    ("01.5", "31 GB", "malformed", "number of GPUs"),
    # -- ambiguities: 01.4's two errors, the GiB convention stated -------------------------------------
    ("01.4", ("390GB", GB(ZERO1_65)), "incorrect", "1 of the paragraph's 2 independent errors"),
    ("01.4", ("ZeRO-2", GB(ZERO1_65)), "incorrect", "1 of the paragraph's 2"),
    ("01.4", (["ZeRO-2", "390GB"], GB(ZERO1_65)), "correct", None),
    ("01.4", (["ZeRO-2", "130"], GB(ZERO1_65)), "correct", None),
    ("01.4", (["ZeRO-2", "390GB"], GB((2 + 14 / 4) * N65)), "incorrect", "ZeRO-2, which shards the gradients"),
    ("01.5", 33, "incorrect", "32 GiB"),
    # -- right answers and named slips, exercise by exercise ------------------------------------------
    ("00.1", GB(2 * N7), "correct", None),
    ("00.1", f"{2 * N7 / GiB:.2f} GiB", "correct", None),
    ("00.1", 2 * N7 / 1e9, "correct", None),
    ("00.1", GB(4 * N7), "incorrect", "fp32"),
    ("00.1", "14 GB", "incorrect", "nominal 7B"),
    ("00.1", f"{2 * N7 / GiB:.2f} GB", "incorrect", "unit is not"),
    ("00.2", GB(16 * N13), "correct", None),  # 16 x 13,015,864,320 = 208.25 GB
    ("00.2", GB(12 * N13), "incorrect", "master copy"),
    ("00.2", GB(14 * N13), "incorrect", "gradients"),
    ("00.2", GB(16 * N7), "incorrect", None),  # LLaMA-7B's 107.8 GB, the notebook's own figure
    ("00.3", ("28GB", GB(16 * N7)), "correct", None),
    ("00.3", ("14GB", GB(16 * N7)), "incorrect", "is not an error"),
    ("00.3", ("56GB", GB(16 * N7)), "incorrect", "name the figure where the error starts"),
    ("00.4", GB(32 * KOR_LAYER), "correct", None),
    ("00.4", GB(32 * 2048 * 4096 * 34), "incorrect", "5·a·s/h"),
    ("00.6", ("c", 3), "correct", None),
    ("00.6", "C, 3", "correct", None),
    ("00.6", ("a", 1), "incorrect", "a common belief"),
    ("00.6", "c", "incorrect", "pick the reason"),
    ("00.6", ("z", 1), "malformed", "not an option"),
    ("00.8", "51.54 GB", "correct", None),  # 48 x 2**30 = 51,539,607,552 B
    ("00.8", "48 GiB", "incorrect", "GB (10⁹ bytes)"),  # the question fixes GB (issue 20)
    ("00.8", "48 GB", "incorrect", "unit is not"),
    ("00.8", "48.31 GB", "incorrect", "torch/nvidia-smi"),  # the driver's total: 46,068 MiB = 48.31 GB
    ("01.2", ("780GB", GB(STATES_65)), "correct", None),
    ("01.2", ("780GB", GB(12 * N65)), "incorrect", "fp32 master copy"),
    ("01.2", ("520GB", GB(STATES_65)), "incorrect", "is not an error"),
    ("01.2", ("12345GB", GB(STATES_65)), "incorrect", "not one of the figures"),
    ("01.3", GB(ZERO3_65), "correct", None),
    ("01.3", f"{ZERO3_65 / GiB:.1f} GiB", "correct", None),
    ("01.3", GB(12 * N65 / 4), "incorrect", "master copy"),
    ("01.3", f"{ZERO3_65 / 1e9:.1f}", "incorrect", "add the unit"),
    ("01.5", V100S, "correct", None),
    ("01.5", math.ceil(12 * N65 / V100), "incorrect", "12 bytes/param"),
    ("01.5", V100S - 1, "incorrect", "rounded down"),
    ("01.6", ("e", 3), "correct", None),
    ("01.6", ("a", 1), "incorrect", "a common belief"),
    ("01.6", ("e", 1), "incorrect", "not for reason 1"),
    ("01.8", GB(HOST_INFINITY_33), "correct", None),
    ("01.8", GB(16 * N33), "incorrect", "optimizer offload alone"),
    ("01.8", GB(12 * N33), "incorrect", "12 bytes/param"),
    ("01.9", f"{STEP_65:.1f} s", "correct", None),
    ("01.9", f"{STEP_65 / 60:.3f} min", "correct", None),
    ("01.9", f"{STEP_65 * 0.75:.1f} s", "incorrect", "6N + 12"),
    ("01.9", f"{STEP_65 * 4:.0f} s", "incorrect", "share the step's tokens"),
    ("01.9", f"{STEP_65 * 0.4:.1f} s", "incorrect", "HFU"),
    ("02.1", f"{80 * GiB / 16 / 1e9:.2f}B", "correct", None),
    ("02.1", f"{80e9 / 16 / 1e9:.2f}B", "incorrect", "80 GiB"),
    ("02.1", f"{80 * GiB / 12 / 1e9:.2f}B", "incorrect", "master copy"),
    ("02.1", "5 GB", "malformed", "not bytes"),
    ("02.2", ("28GB", GB(4 * N7 + 2 * N7 * (1 + 4 / 2048))), "correct", None),
    ("02.3", ("28GB", GB(12 * N7)), "correct", None),
    ("02.3", ("84GB", GB(12 * N7)), "incorrect", "is not an error"),
    ("02.4", "c", "correct", None),
    ("02.4", "a", "incorrect", "divides memory by three"),
    ("02.6", f"{KV_70B_TOKEN * 16 * 4096 / GiB:.2f} GiB", "correct", None),
    ("02.6", f"{8 * KV_70B_TOKEN * 16 * 4096 / GiB:.1f} GiB", "incorrect", "8 KV heads"),
    ("02.7", GB(2 * N8), "correct", None),
    ("02.10", "a, b, d", "correct", None),
    ("02.10", "abd", "correct", None),
    ("02.10", ["d", "a", "b"], "correct", None),
    ("02.10", "a, b, c, d", "incorrect", "1 of your 4 picks"),  # how many, not which (issue 20)
    ("02.10", "a, b", "incorrect", "1 option that applies is missing"),
    ("02.10", "a, z", "malformed", "not an option"),
    # DeepSpeed stage_1_and_2.py copy_grads_in_partition: the 16-bit sum down after micro-batches 1..7 and back up
    # before 2..8 (2 B each way), the fp32 sum down at the 8th (4 B), the weights up once (2 B)
    ("02.11", GB((2 * 7 + 2 * 7 + 4 + 2) * N7), "correct", None),
    ("02.11", GB((4 + 2) * N7), "incorrect", "pinned 16-bit CPU buffer"),
    ("02.11", GB((2 * 8 + 2) * N7), "incorrect", "adds on the GPU"),
    ("02.11", GB((2 * 7 + 2 * 7 + 4 + 2) * N7 / 8), "incorrect", "one micro-batch's share"),
    ("03.2", ("56GB", GB(16 * N7 / 8)), "correct", None),
    ("03.2", ("10GB", GB(16 * N7 / 8)), "correct", None),
    ("03.2", ("1.75GB", GB(16 * N7 / 8)), "incorrect", "is not an error"),
    ("03.2", ("56GB", GB(16 * N7)), "incorrect", "total over all 8 GPUs"),
    ("03.3", f"{LORA_7B_ALL / 1e6:.2f}M", "correct", None),
    ("03.3", f"{LORA_7B_QV / 1e6:.2f}M", "incorrect", "q_proj and v_proj"),
    ("03.5", ("c", 1), "correct", None),
    ("03.5", ("d", 3), "incorrect", "tensor parallelism divides memory by the total number of GPUs"),
    ("03.6", "57x", "correct", None),
    ("03.6", 57, "correct", None),
    ("03.6", "17x", "incorrect", "5·a·s/h"),
    ("03.7", GB(12 * llama_params(5120, 40, 13824)), "incorrect", "12 bytes/param is what moves to the host"),
    ("03.7", "-5 GB", "malformed", "negative"),
    ("03.8", ("64GB", GB(18 * N7)), "correct", None),
    ("03.8", ("64GB", GB(16 * N7)), "incorrect", "optimizer offload alone"),
    ("03.10", GB(2 * N70 / 4 + KV_70B_TOKEN * 8 * 4096 / 4), "correct", None),
    ("03.10", GB(2 * N70 + KV_70B_TOKEN * 8 * 4096), "incorrect", "total over all 4 GPUs"),
    ("03.10", GB(2 * N70 / 4 + KV_70B_TOKEN * 8 * 4096), "incorrect", "splits the KV heads too"),
    ("03.11", "c, d", "correct", None),
    ("03.11", "b, c, d", "incorrect", "1 of your 3 picks"),
    ("03.12", "b, c, d", "correct", None),
    ("03.12", "a, b, c, d, e", "incorrect", "2 of your 5 picks"),
    # -- notebook 04: serving Llama-3-70B ------------------------------------------------------------
    ("04.1", f"{KV_70B_TOKEN} bytes", "correct", None),
    ("04.1", "0.33 MB", "correct", None),
    ("04.1", f"{8 * KV_70B_TOKEN} bytes", "incorrect", "8 KV heads"),
    ("04.1", KV_70B_TOKEN // 2, "incorrect", "both the key and the value"),
    ("04.2", ("8192 dim", GB(KV_70B_TOKEN * 3000)), "correct", None),
    ("04.2", ("8GB", GB(KV_70B_TOKEN * 3000)), "correct", None),
    ("04.2", ("70GB", GB(KV_70B_TOKEN * 3000)), "incorrect", "is not an error"),
    ("04.2", ("~30", GB(KV_70B_TOKEN * 3000)), "incorrect", "flows into it"),
    ("04.2", ("8GB", GB(8 * KV_70B_TOKEN * 3000)), "incorrect", "hidden size stands in"),
    ("04.3", GB(INT4_L2_70_TP2), "correct", None),
    ("04.3", GB(0.5 * N2_70 / 2), "incorrect", "16-bit embedding and head"),
    ("04.3", GB(2 * INT4_L2_70_TP2), "incorrect", "total over all 2 GPUs"),
    ("04.3", GB(INT4_70_TP2), "incorrect", None),  # Llama-3-70B's figure: its vocabulary is 4x larger
    ("04.4", CHATS_FP8_A100, "correct", None),
    ("04.4", f"{CHATS_FP8_A100} chats", "correct", None),
    ("04.4", f"{CHATS_FP8_A100} GB", "malformed", "number of GPUs (or of sequences)"),
    ("04.4", CHATS_FP8_A100 // 2, "incorrect", "4 of the 8 KV heads"),
    ("04.4", CHATS_FP8_A100 // 8, "incorrect", "64 query heads"),
    ("04.5", ("a", 1), "correct", None),
    ("04.5", ("b", 2), "incorrect", "more replicas serve more users"),
    ("04.5", ("a", 3), "incorrect", "not for reason 3"),
    ("04.5", ("d", 1), "incorrect", "do not fit one 80 GB GPU"),
    ("04.6", f"{VLLM_KV_FP8_095 / GiB:.2f} GiB", "correct", None),
    ("04.6", f"{(int(A100_TOTAL * 0.9) - VLLM_PEAK_FP8 - CTX_BYTES) / GiB:.2f} GiB", "incorrect", "started with 0.95"),
    ("04.6", f"{(A100_TOTAL - VLLM_PEAK_FP8 - CTX_BYTES) / GiB:.2f} GiB", "incorrect", "caps vLLM at 95%"),
    ("04.6", f"{(0.95 * (A100_TOTAL - FP8_70_TP2) - (VLLM_PEAK_FP8 - FP8_70_TP2) - CTX_BYTES) / GiB:.2f} GiB",
     "incorrect", "the weights count inside it"),
    # forgetting the profile run and non-torch memory: 0.95 x total - weights; with these numbers the same figure
    # as 95% of what the weights leave (0.05 x 33.84 GiB = 1.19 + 0.5 GiB), so one message names both
    ("04.6", f"{(int(A100_TOTAL * 0.95) - FP8_70_TP2) / GiB:.2f} GiB", "incorrect", "profiling run"),
    ("04.6", f"{VLLM_KV_FP8_095 / 1e9:.2f} GiB", "incorrect", "unit is not"),
    ("04.7", paged_waste_by_hand, "correct", "drawn at random"),
    ("04.7", paged_waste_one_block_too_many, "incorrect", "ceil(n / B)"),
    ("04.8", f"{DECODE_185 * 1e3:.1f} ms", "correct", None),
    ("04.8", f"{DECODE_185:.4f} s", "correct", None),
    ("04.8", f"{DEC_W / 3.35e12 * 1e3:.1f} ms", "incorrect", "every chat's whole KV cache"),
    ("04.8", f"{(DEC_W + 8 * DEC_KV) / 3.35e12 * 1e3:.0f} ms", "incorrect", "1/8 of every chat's cache"),
    ("04.9", "a, c", "correct", None),
    ("04.9", "a, b, c", "incorrect", "1 of your 3 picks"),
    ("04.9", "a, c, f", "incorrect", "1 of your 3 picks"),
    ("04.9", "c", "incorrect", "missing"),
    ("04.10", STUFFED, "submitted", "mark('04.10'"),
    ("04.11", f"{SPEC_SPEEDUP:.2f}x", "correct", None),
    ("04.11", f"{SPEC_TOKENS:.2f}x", "incorrect", "divide by g x c + 1"),
    ("04.11", f"{6 / 1.5:.2f}x", "incorrect", "accepted with probability 0.7"),
    ("04.11", f"{(SPEC_TOKENS - 1) / 1.5:.2f}x", "incorrect", "the sum starts at 1"),
    ("04.12", GB(GQA_13B), "correct", None),
    ("04.12", GB(8 * GQA_13B), "incorrect", "MHA cache"),
    ("04.12", GB(GQA_13B * 8 / 5), "incorrect", "40 / 8 = 5 KV heads"),
    ("04.12", f"{GQA_13B / 2 / 1e9:.4f} GB", "incorrect", "both the key and the value"),
    # -- notebook 07: time and cost ----------------------------------------------------------------------
    ("07.1", f"{6 * N7 * 2e12:.4g} FLOPs", "correct", None),
    ("07.1", f"{6 * N7 * 2e12 / 1e21:.1f} ZFLOP", "correct", None),
    ("07.1", f"{6 * 7e9 * 2e12:.3g} FLOPs", "incorrect", "nominal 7B"),
    ("07.1", f"{2 * N7 * 2e12:.3g}", "incorrect", "forward alone"),
    ("07.1", "400 TFLOP/s", "malformed", "rate"),
    ("07.2", f"{15e12 / (20 * N8):.2f}x", "correct", None),  # Llama 3 8B on 15T tokens: 93.4x
    ("07.2", f"{15e12 / N8:.0f}", "incorrect", "tokens per parameter"),
    ("07.2", f"{20 * N8 / 15e12:.4f}", "incorrect", "wrong way round"),
    ("07.3", f"{DAYS_7B_B200:.2f} days", "correct", None),
    ("07.3", f"{DAYS_7B_B200 * 24:.0f} hours", "correct", None),
    ("07.3", f"{DAYS_7B_B200 / 2:.2f} days", "incorrect", "with sparsity"),
    ("07.3", f"{DAYS_7B_B200 * 256:.0f} days", "incorrect", "GPU-days"),
    ("07.3", f"{DAYS_7B_B200 * 0.4:.2f}", "incorrect", "100% of their peak"),
    ("07.3", f"{DAYS_7B:.2f} days", "incorrect", "H100 run"),
    # 04.13: Little's law: 8 req/s x (0.5 s + 400 x 25 ms) = 84 in flight, each 2,048 tokens x Llama-3-8B's
    # 2 x 32 layers x 8 KV heads x 128 x 2 B = 131,072 B per token: 84 x 268,435,456 B = 22.55 GB
    ("04.13", f"{84 * 2048 * 2 * 32 * 8 * 128 * 2 / 1e9:.2f} GB", "correct", None),
    ("04.13", f"{8 * 10 * 2048 * 2 * 32 * 8 * 128 * 2 / 1e9:.2f} GB", "incorrect", "first token"),
    ("04.13", f"{2048 * 2 * 32 * 8 * 128 * 2 / 1e9:.3f} GB", "incorrect", "in flight"),
    ("04.14", ("b", "1"), "correct", None),
    ("04.14", ("a", "1"), "incorrect", None),
    # 04.15: Llama-3.1-8B (N8 parameters, 8 KV heads, 32 layers) on one H100, 3,000 + 1,000 tokens, 128 requests in
    # the cache, 0.5 s TTFT, 40% MFU. Memory: weights read 2 x (N8 - 128,256 x 4,096 embedding) = 15,009,849,344 B;
    # one cache 2 x 32 x 8 x 128 x 2 x 4,000 = 524,288,000 B; TPOT = (15.01e9 + 128 x 0.524e9) / 3.35e12 = 24.51 ms;
    # 128 / (0.5 + 1,000 x 24.51 ms) = 5.12 req/s. Compute: (2 x N8 x 3,999 + 4 x 32 x 32 x 128 x 3,999 x 4,000 / 2)
    # = 6.84e13 FLOPs; 0.4 x 989.4e12 / 6.84e13 = 5.78 req/s. Memory binds: (a).
    ("04.15", ("a", "1"), "correct", None),
    ("04.15", "b", "incorrect", "allow only 5.1"),
    ("04.15", "c", "incorrect", "last token"),
    ("07.11", f"{CK_YOUNG:.0f} s", "correct", None),
    ("07.11", f"{CK_YOUNG / 60:.1f} minutes", "correct", None),
    ("07.11", f"{math.sqrt(2 * CK_WRITE * CK_MTBF / 4):.0f} s", "incorrect", "16,384-GPU job"),
    ("07.11", f"{math.sqrt(2 * 16 * N70_31 / 200e9 * CK_MTBF):.0f} s", "incorrect", "no gradients"),
    ("07.11", f"{math.sqrt(CK_WRITE * CK_MTBF):.0f} s", "incorrect", "sqrt(2"),
    ("07.3", "66k GPU-hours", "malformed", "not GPU-hours"),
    ("07.5", ("40%", "33.3%"), "correct", None),
    ("07.5", ("80", "33.3%"), "incorrect", "is not an error"),
    ("07.5", ("40%", "100%"), "incorrect", "whole step twice"),
    ("07.6", GB(Z3_7B), "correct", None),
    ("07.6", GB(2 * Z3_7B), "incorrect", "per micro-batch"),
    ("07.6", GB(255 / 256 * 2 * 2 * N7), "incorrect", "one all-reduce"),
    ("07.7", f"{FT_70B:.0f} GPU-hours", "correct", None),
    ("07.7", f"{FT_70B_NO_RC:.0f} GPU-hours", "incorrect", "recomputed forward"),
    ("07.7", f"{FT_70B / 16:.1f}", "incorrect", "divided by the 16 GPUs"),
    ("07.7", f"{FT_70B / 24:.1f} GPU-hours", "incorrect", "GPU-days"),
    ("07.8", ("b", 1), "correct", None),
    ("07.8", ("a", 1), "incorrect", "compute budget alone"),
    ("07.8", ("c", 1), "incorrect", "GPU-hours stay fixed"),
    ("07.8", ("b", 2), "incorrect", "not for reason 2"),
    ("07.9", f"{DS_MFU_250:.1f}%", "correct", None),
    ("07.9", DS_MFU_250 / 100, "correct", "read as a percentage"),
    ("07.9", f"{DS_MFU:.1f}%", "correct", "6ND on the 37B activated parameters"),  # accepted, named
    ("07.9", f"{DS_MFU_250 / 2:.1f}%", "incorrect", "fp8 peak"),
    ("07.9", f"{DS_MFU_250 * 2.664 / 2.788:.1f}%", "incorrect", "post-training"),
    ("07.9", f"{DS_MFU * 671 / 37:.0f}%", "incorrect", "671B"),
    ("07.9", f"{DS_MFU / 2:.1f}%", "incorrect", "fp8 peak"),
    ("07.9", f"{DS_MFU * 2.664 / 2.788:.1f}%", "incorrect", "post-training"),
    ("07.10", "Rent more H100s.", "not answered", "at least 25 words"),
    ("05.1", GB(2 * N_MIX22), "correct", None),  # every expert resident, 2 bytes per bf16 weight
    ("05.1", GB(2 * N_MIX22_ACTIVE), "incorrect", "keeps every expert resident"),
    ("05.1", GB(2 * 8 * 22e9), "incorrect", "the name is not the count"),
    ("05.1", GB(N_MIX22), "incorrect", "fp8 copy"),
    ("05.2", f"{KV_V3} bytes", "correct", None),
    ("05.2", "70.3 KB", "correct", None),
    ("05.2", f"{KV_V3_FULL} bytes", "incorrect", "transformers' eager cache"),
    ("05.2", f"{KV_V3 // 61} bytes", "incorrect", "total over all 61 layers"),
    ("05.2", f"{512 * 61 * 2} bytes", "incorrect", "rope key"),
    ("05.3", touched_bytes, "correct", None),
    ("05.3", lambda other_bytes, expert_bytes, **kw: other_bytes + expert_bytes, "incorrect", "does not touch every"),
    ("05.4", f"{N_Q235 / N_Q235_ACTIVE:.1f}x", "correct", None),  # 10.6x
    ("05.4", "16x", "incorrect", "routed experts only"),
    ("05.4", f"{N_V3 / N_V3_ACTIVE:.1f}x", "incorrect", "DeepSeek-V3's ratio"),
    ("05.5", ("8.8 KB", f"{V3_TP8_CHATS:.0f}"), "correct", None),
    ("05.5", ("760", f"{V3_TP8_CHATS:.0f}"), "incorrect", "flows into it"),
    ("05.5", ("8.8 KB", f"{8 * V3_TP8_CHATS:.0f}"), "incorrect", "every GPU caches all of it"),
    ("05.6", ("c", 2), "correct", None),
    ("05.6", ("a", 1), "incorrect", "splits the KV cache as well"),
    ("05.7", math.ceil(12 * N_V3 / H200_TORCH), "correct", None),  # 54
    ("05.7", math.ceil(12 * N_V3 / 141e9), "incorrect", "torch reports more"),  # 58
    ("05.7", math.ceil(16 * N_V3 / H200_TORCH), "incorrect", "bf16, 2 bytes each"),  # 72
    ("05.7", math.ceil(8 * N_V3 / H200_TORCH), "incorrect", "fp32 gradients"),  # 36: 2 + 2 + 2 + 2
    ("05.7", math.ceil(12 * N_V3_ACTIVE / H200_TORCH), "incorrect", "count all parameters"),
    ("05.8", "b, d", "correct", None),
    ("05.8", "b, d, e", "incorrect", "1 of your 3 picks"),
    ("05.8", "a, b, d", "incorrect", "1 of your 3 picks"),
    ("05.9", GB(DISPATCH), "correct", None),
    ("05.9", f"{DISPATCH / 8 / 1e6:.1f} MB", "incorrect", "once per expert"),
    ("05.9", GB(DISPATCH * 8 / 7), "incorrect", "(ep - 1) / ep"),
    ("05.10", SOUND, "submitted", "mark('05.10'"),
    ("06.1", GB(LOGITS_QWEN_24K), "correct", None),
    ("06.1", GB(T24 * V_QWEN * 2), "incorrect", "bf16 logits alone"),
    ("06.1", GB(T24 * V8 * 14), "incorrect", "Qwen2.5's has 152,064"),
    ("06.1", f"{LOGITS_QWEN_24K / GiB:.1f} GB", "incorrect", "unit is not"),
    ("06.2", GB(CP2_ACTS_96K), "correct", None),
    ("06.2", GB(CP2_ACTS_96K * 2), "incorrect", "the whole sequence"),
    ("06.2", GB(CP2_ACTS_96K / 2), "incorrect", "divide by cp once"),
    ("06.3", (["2 bytes"], GB(EAGER_PROBS_128K)), "correct", None),   # "~32 GB" is 32 GiB: a label, not an error
    ("06.3", (["2 bytes", "~32 GB"], GB(EAGER_PROBS_128K)), "incorrect", "is not an error"),
    ("06.3", (["2 bytes"], GB(EAGER_PROBS_128K / 3)), "incorrect", "one bf16 copy"),
    ("06.3", (["128k * 128k", "~32 GB"], GB(EAGER_PROBS_128K)), "incorrect", "is not an error"),
    ("06.4", GB(CKPT_70B), "correct", None),
    ("06.4", GB(2 * CKPT_70B), "incorrect", "2 bytes per value"),
    ("06.4", GB(CKPT_70B / 80), "incorrect", "one layer's share"),
    ("06.5", ("d", 1), "correct", None),
    ("06.5", ("b", 2), "incorrect", "full recompute removes every activation"),
    ("06.5", ("d", 3), "incorrect", "not for reason 3"),
    ("06.6", f"{SEQ_RATIO:.1f}x", "correct", None),
    ("06.6", "16x", "incorrect", "counts only the tokens"),
    ("06.6", "256x", "incorrect", "every FLOP as attention"),
    ("06.7", ring_hand, "correct", None),
    ("06.7", ring_forward_only, "incorrect", "the backward fetches K/V again"),
    ("06.8", GB(KV_405B_128K), "correct", None),
    ("06.8", GB(16 * KV_405B_128K), "incorrect", "GQA"),
    ("06.8", GB(KV_70B_128K), "incorrect", "the 405B has 126"),
    ("06.9", SOUND, "submitted", "mark('06.9'"),
    ("06.10", f"{WINDOW_RATIO:.2f}x", "correct", None),
    ("06.10", f"{2 * WINDOW_RATIO:.1f}x", "incorrect", "T/2 on average"),
    ("06.10", "8.0x", "incorrect", "a little under w"),
    ("06.11", ("b", 1), "correct", None),
    ("06.11", ("a", 1), "incorrect", "as eager attention does"),
    ("06.11", ("b", 2), "incorrect", "not for reason 2"),
    ("99.9", "1 GB", "unknown exercise", None),
    ("1.3", GB(ZERO3_65), "correct", None),
]


@pytest.fixture(autouse=True)
def _fresh(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(progress.ENV, "off")
    grading.reset()


def test_the_table_is_large_enough():
    assert len(CASES) >= 60
    assert len({c[0] for c in CASES}) >= 30  # spread over the exercises


@pytest.mark.parametrize("eid, answer, verdict, says", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_verdict(eid, answer, verdict, says):
    fb = grade(eid, answer)
    assert fb.status == verdict, fb
    for text in ((says,) if isinstance(says, str) else says or ()):
        assert text in fb.message, (text, fb.message)
    assert "processe " not in fb.message and "processe." not in fb.message  # the old plural-stripping typo
