# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: jupyter,slideshow,tags,-user_expressions
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.7
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # 04 · deep dive · 深入：Llama-3-70B 能服务多少个 8k 对话
#
# The material behind [notebook 04](04_serving_capacity.ipynb)'s answer, for a second reading: how
# vLLM and SGLang work inside, prefix caching, kernel fusion and CUDA graphs, MHA to GQA, 128k
# context, prefill/decode disaggregation, the cache beyond paging, routing across replicas, the fact-check of circulating serving claims, every layout's ledger and the decode
# roofline against the batch.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
# %matplotlib inline
import matplotlib.pyplot as plt
from IPython.display import Markdown, display

import memlib
from memlib.learn.chapters.ch04 import A100, CTX, FORMATS, H100, MODEL
from memlib.learn.kit import GB, G
from memlib import estimate_inference, get_gpu, get_model, max_batch
from memlib.cost.timing import forward_flops_per_token
from memlib.training.explain import markdown_table
from memlib.learn.factcheck import Claim, fact_check_table
from memlib.hardware.fit import usable_bytes
from memlib.serving.inference import kv_bytes_per_token, kv_cache_bytes
from memlib.serving import (VLLM_BLOCK_SIZE, VLLM_GPU_MEMORY_UTILIZATION, decode_bound, request_rate_bound,
                            speculative_expected_tokens, speculative_speedup,
                            paged_kv_blocks, paged_kv_waste_bytes,
                            vllm_default_max_num_batched_tokens, vllm_default_max_num_seqs,
                            vllm_kv_cache_budget_bytes, vllm_max_concurrency)
from memlib.learn.viz import count_sweep


def chats(gpu, tp, weights, kv_cache="bf16", context=CTX, model=MODEL):
    """memlib.max_batch with vLLM's default prefill chunk for the GPU."""
    return max_batch(model, gpu, context, weights=weights, kv_cache=kv_cache, tp=tp,
                     prefill_tokens=vllm_default_max_num_batched_tokens(gpu)).value


# The figures of the core page (04_serving_capacity), computed the same way.
m, m31 = get_model(MODEL), get_model("llama-3.1-70b")
a100, h100 = get_gpu(A100), get_gpu(H100)
cap_a100 = usable_bytes(a100)
kv_tok, per_chat = kv_bytes_per_token(m), kv_cache_bytes(m, 1, CTX)
weights = {k: estimate_inference(m, 1, CTX, weights=f) for k, f in FORMATS.items()}
t8 = chats(H100, 8, "bf16")
budget_bf16 = vllm_kv_cache_budget_bytes(m, A100, weights="bf16", tp=2)
full8 = decode_bound(m, H100, t8, CTX, weights="bf16", tp=8)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## More follow-up questions · 更多追问
#
# ### How does vLLM schedule, page and preempt?

# %% tags=["nbval-check-output"]
blocks = paged_kv_blocks(CTX)                          # memlib.serving: ceil(tokens / 16)
worst = paged_kv_waste_bytes(CTX - VLLM_BLOCK_SIZE + 1, kv_tok)  # 15 empty slots
short = paged_kv_waste_bytes(100, kv_tok)              # a 100-token chat: 7 blocks
short_share = short / (short + kv_cache_bytes(m, 1, 100))
reserve_waste = 1 - kv_cache_bytes(m, 1, 2000) / per_chat  # 8k reserved, 2k used
# preemption of one 8k chat on 2 x A100 (tp 2): swap its half over PCIe, or re-prefill it
swap_s = per_chat / 2 / a100.host_link_bytes_per_s
prefill_s = CTX * forward_flops_per_token(m, CTX) / (2 * a100.bf16_tflops * 1e12)
print(f"{blocks} blocks per 8k chat; waste at most {worst / 1e6:.1f} MB per chat; "
      f"100 tokens: {short_share:.0%}")
print(f"contiguous reservation, 2,000-token chat: {reserve_waste:.0%} empty")
print(f"preempt one 8k chat: swap {swap_s * 1e3:.0f} ms one way; "
      f"recompute >= {prefill_s:.1f} s at peak FLOP/s")
seqs = {g: vllm_default_max_num_seqs(g) for g in (A100, H100)}   # memlib.serving: vLLM's table
print(f"max_num_seqs default: A100 {seqs[A100]}, H100 {seqs[H100]}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
d1_blocks, d1_worst = f"{blocks}", f"{worst / 1e6:.1f} MB"
d1_short, d1_res = f"{short_share:.0%}", f"{reserve_waste:.0%}"
d1_swap, d1_pre = f"{swap_s * 1e3:.0f} ms", f"{prefill_s:.1f} s"
d1_seq_a, d1_seq_h = f"{seqs[A100]:,}", f"{seqs[H100]:,}"

# %% [markdown]
# Each step, vLLM's scheduler (V1: `vllm/v1/core/sched/scheduler.py`) spends a token budget,
# `max_num_batched_tokens`, over running requests (one decode token each) and waiting ones (their
# next prefill chunk), up to `max_num_seqs` requests. That default depends on the GPU: {eval}`d1_seq_h`
# on a card of 70 GiB or more that is not an A100 (an H100), {eval}`d1_seq_a` on an A100 and smaller cards
# (`EngineArgs.get_batch_defaults` in `vllm/engine/arg_utils.py`, v0.10 on; memlib's
# `vllm_default_max_num_seqs`). It caps the batch before memory does when more chats fit, and the
# profile run's sampler warm-up grows with it. Its KV cache manager hands each request 16-token
# blocks from a free pool and keeps a block table, logical block → physical block, that the
# PagedAttention kernel reads through (Kwon et al. 2023, Sec. 4.2). An 8k chat holds {eval}`d1_blocks`
# blocks; the only waste is its last block's empty slots, at most {eval}`d1_worst` (a 100-token chat
# leaves {eval}`d1_short` of its blocks empty), where reserving max_model_len per chat, as
# pre-vLLM servers did, leaves {eval}`d1_res` of it empty for a 2,000-token chat.
#
# When a running request needs a block and none is free, the scheduler **preempts** the most
# recently admitted one and frees its blocks. The paper offers swapping them to CPU memory or
# recomputing them (Sec. 4.5); V1 recomputes: the request goes back to the waiting queue and is
# prefilled again. For one 8k chat on 2 × A100, swapping its half per GPU over PCIe takes about
# {eval}`d1_swap` each way; the re-prefill needs at least {eval}`d1_pre` of arithmetic at peak.
# Preemptions show as p99 stalls, not errors: lower `max_num_seqs` or add memory when the log
# reports them.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### What does prefix caching buy, and how does SGLang's RadixAttention differ?

# %% tags=["nbval-check-output"]
PREFIX = 2048  # a system prompt every chat shares
# memlib.serving.vllm_max_concurrency: whole chats, or each chat's own part only
plain = vllm_max_concurrency(m, H100, CTX, weights="bf16", tp=8)
shared = vllm_max_concurrency(m, H100, CTX - PREFIX, weights="bf16", tp=8)
prefix_bytes = kv_cache_bytes(m, 1, PREFIX)
print(f"8 x H100 tp 8: {plain:.1f} chats without, about {shared:.1f} with a shared")
print(f"{PREFIX:,}-token prefix ({GB(prefix_bytes, 2)} stored once)")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
d2_plain, d2_shared = f"{plain:.0f}", f"{shared:.0f}"
d2_prefix, d2_pre = f"{GB(prefix_bytes)}", f"{PREFIX:,}"

# %% [markdown]
# vLLM's automatic prefix caching names each full block by a hash of its tokens and of the blocks
# before it; a new request whose leading blocks hash alike points its block table at them (ref-
# counted) and skips their prefill; freed blocks stay cached until evicted, least recently used
# first. With a {eval}`d2_pre`-token system prompt shared by all chats each stores only its own
# part: about **{eval}`d2_shared`** chats instead of {eval}`d2_plain` on 8 × H100 (one copy of the
# prefix, {eval}`d2_prefix`). SGLang's **RadixAttention** (Zheng et al. 2024, Sec. 3) keeps every
# cached sequence in a radix tree of tokens, so any shared prefix, down to one token, is reused
# (multi-turn chat, few-shot prompts, tree search); it evicts leaves LRU and schedules the queue
# longest-shared-prefix first so hits are not evicted before use.

# %% [markdown]
# The block table, drawn for three chats that share the prefix (`memlib.learn.mechanisms.paged_kv_table`): the
# prefix's full blocks are stored once and every chat's table points at them; only each chat's own tail, and a
# partly filled last block, are private.

# %%
from memlib.learn import mechanisms as mech

mech.draw_paged_kv_table(mech.paged_kv_table(m, [PREFIX + 300, PREFIX + 700, PREFIX + 150], shared_prefix=PREFIX))
plt.show()

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Where do TensorRT-LLM and TGI differ?
#
# Both do what vLLM does for memory: paged KV blocks, continuous batching (TensorRT-LLM calls it
# in-flight batching), chunked prefill, prefix reuse, fp8 and int4 weights. **TensorRT-LLM**
# (NVIDIA) compiles the model ahead of time into a TensorRT engine for a fixed GPU, precision,
# tp and maximum batch and length, with hand-fused kernels and fp8 on Hopper; fastest on NVIDIA
# hardware, least flexible (a rebuild per change). **TGI** (Hugging Face) is a Rust router with
# continuous batching in front of Python model servers that use FlashAttention and paged
# attention kernels; the memory arithmetic above applies unchanged, only the reservation flags
# differ (`--cuda-memory-fraction`, `--max-batch-total-tokens`, instead of vLLM's
# `gpu_memory_utilization`).

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### What do kernel fusion and CUDA graphs buy?

# %% tags=["nbval-check-output"]
one8 = decode_bound(m, H100, 1, CTX, weights="bf16", tp=8)  # memlib.serving.decode_bound
LAUNCHES, LAUNCH_S = 10 * m.num_layers, 4e-6   # assumed: ~10 kernels a layer, ~4 us each
print(f"batch-1 step on 8 x H100: roofline {one8.step_s * 1e3:.1f} ms; "
      f"{LAUNCHES} launches x 4 us = {LAUNCHES * LAUNCH_S * 1e3:.1f} ms")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
d4_step, d4_n = f"{one8.step_s * 1e3:.1f} ms", f"{LAUNCHES}"
d4_launch = f"{LAUNCHES * LAUNCH_S * 1e3:.1f} ms"

# %% [markdown]
# memlib does not model launches; the pencil above does, with assumed round figures. A batch-1
# decode step on 8 × H100 moves its bytes in {eval}`d4_step` at the roofline, yet launching
# {eval}`d4_n` small kernels one by one costs about {eval}`d4_launch` of CPU time in which the GPU
# may idle. **Kernel fusion** merges neighbours (q, k, v in one GEMM, residual add + RMSNorm,
# SwiGLU's gate and up, softmax inside FlashAttention), cutting launches and the HBM round trips of
# the activations between them. **CUDA graphs** record a whole decode step once per batch size and
# replay it with one launch: vLLM captures them at startup for a list of batch sizes and logs the
# memory they take, which comes off the KV budget. Both matter most at small batch, where a step
# is short; at a full batch the reads dominate.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Speculative decoding: how much faster, and what memory?

# %% tags=["nbval-check-output"]
ALPHA, GAMMA = 0.8, 4                 # assumed: acceptance rate (measure it per workload), draft tokens
draft = get_model("llama-3.1-8b")     # the draft: Llama-3.1-8B, same tokenizer as Llama-3-70B
per_step = speculative_expected_tokens(ALPHA, GAMMA)   # memlib.serving: Leviathan eq. 1
c = (decode_bound(draft, H100, 1, CTX, weights="bf16", tp=8).step_s
     / decode_bound(m, H100, 1, CTX, weights="bf16", tp=8).step_s)  # draft / target step
gain = speculative_speedup(ALPHA, GAMMA, c)            # Leviathan Theorem 3.8
draft_w = estimate_inference(draft, 1, CTX, weights="bf16", tp=8).weight_bytes
draft_kv = kv_bytes_per_token(draft, tp=8) / kv_bytes_per_token(m, tp=8)
print(f"{per_step:.2f} tokens per step, {gain:.2f}x; draft {GB(draft_w, 2)} per GPU")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
f3_tok, f3_c, f3_gain = f"{per_step:.2f}", f"{c:.2f}", f"{gain:.1f}"
f3_w, f3_kv = f"{GB(draft_w)}", f"{draft_kv:.0%}"
f3_chats, f3_t8 = f"{t8 / (1 + draft_kv):.0f}", f"{t8}"

# %% [markdown]
# A draft (a small model, or a draft head) proposes γ tokens; the target checks them in one forward and keeps the accepted prefix
# plus one token of its own, so the output distribution is unchanged. Here the draft is
# **Llama-3.1-8B** (a separate model with the same tokenizer). With acceptance rate α a target step
# yields (1 − α^(γ+1)) / (1 − α) tokens (Leviathan et al. 2023, eq. 1): **{eval}`f3_tok`** at an
# assumed acceptance rate α = 0.8 (the share of drafted tokens kept) and γ = 4; a draft step costs {eval}`f3_c` of a target step, so ≈ **{eval}`f3_gain`×**.
# α is not a constant: it depends on the prompts and the sampling temperature, and a separate 8B draft
# often accepts less than 0.8, so measure it on your own traffic (vLLM reports the acceptance rate).
# Memory: the draft's weights ({eval}`f3_w` per GPU) and its cache, {eval}`f3_kv` of the target's
# per token: about {eval}`f3_chats` chats instead of {eval}`f3_t8`. At a full batch the gain shrinks.
# Servers now mostly draft with a head trained on the target's own hidden states instead of a second
# model: EAGLE-3 (Li et al. 2025), or the model's multi-token-prediction (MTP) module where it has one
# (DeepSeek-V3); both are one extra layer, so far less memory than an 8B draft.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### MHA to GQA: what the conversion costs and what it buys

# %% tags=["nbval-check-output"]
for kvh in (64, 16, 8, 1):   # MHA, groups of 4, Llama-3's groups of 8, MQA
    v = m.with_(name=f"llama-3-70b, {kvh} KV heads", num_kv_heads=kvh)
    # memlib refuses a tp that does not divide the KV heads: MQA's head is copied
    n = chats(H100, 8, "bf16", model=v) if kvh >= 8 else "as 8 KV heads"
    print(f"{kvh:>2} KV heads: {kv_bytes_per_token(v):>9,} B/token, weights "
          f"{GB(v.num_params * 2)}, chats on 8 x H100: {n}")

# %% [markdown]
# The weights barely move with the KV heads (only the K and V projections shrink); the cache, and
# so the chats, moves 8× from MHA to Llama-3's GQA. MQA's single head must be copied on every GPU
# of a tp 8 group, so per GPU it caches exactly what GQA-8 does: past tp = KV heads, fewer KV heads
# stop paying. To convert an MHA
# checkpoint, Ainslie et al. (2023, Sec. 2.1) mean-pool the K and V projection heads of each group
# into one and continue pre-training for α = 5% of the original steps; GQA-8 then matches MHA's
# quality closely, MQA less so (their Table 1, T5-XXL).

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### What changes at 128k context?

# %% tags=["nbval-check-output"]
long = 131072
per_long = kv_cache_bytes(m31, 1, long)   # memlib.serving.inference.kv_cache_bytes
long_rows = {"8 x H100 bf16": chats(H100, 8, "bf16", context=long, model=m31),
             "8 x H100 fp8 + fp8 KV": chats(H100, 8, "fp8-block", "fp8", context=long,
                                            model=m31),
             "2 x A100 fp8 + fp8 KV": chats(A100, 2, "fp8-block", "fp8", context=long,
                                            model=m31)}
print(f"one {long:,}-token chat: {GB(per_long)}")
for k, v in long_rows.items():
    print(f"{k}: {v} chats")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
d6_chat = f"{GB(per_long)}"
d6_rows = f"{', '.join(f'{k} {v}' for k, v in long_rows.items())}"

# %% [markdown]
# One 128k chat of Llama-3.1-70B caches **{eval}`d6_chat`** in bf16, a third of the weights. Chats
# that fit: {eval}`d6_rows`. The cache grows linearly, so 16× the context is 1/16 of the chats;
# fp8 KV, more GPUs or prefix sharing are the levers. Chunking keeps a 128k prefill's memory
# small, not its time.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Does memlib's vLLM budget match vLLM's own log?

# %% tags=["nbval-check-output"]
# vLLM PR #12569: Llama-3.1-70B int8 W8A8 on one 80 GB GPU, --max-model-len 2048,
# --gpu-memory-utilization 0.98: "# GPU blocks: 1381", "Maximum concurrency ... 10.79x"
# (vLLM V0, January 2025: 256 sequences by default)
LOG_BLOCKS, LOG_CONC = 1381, 10.79
LOG_SETUP = dict(weights="int8", max_num_batched_tokens=2048, gpu_memory_utilization=0.98, max_num_seqs=256)
pred_budget = vllm_kv_cache_budget_bytes(m31, H100, **LOG_SETUP)   # memlib.serving
pred_conc = vllm_max_concurrency(m31, H100, 2048, **LOG_SETUP)
gap = pred_budget - LOG_BLOCKS * VLLM_BLOCK_SIZE * kv_bytes_per_token(m31)
print(f"vLLM log {LOG_CONC}x, memlib {pred_conc:.2f}x: "
      f"memlib's budget is {G(gap, 2)} larger")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
d7_conc, d7_gap = f"{pred_conc:.1f}", f"{G(gap)}"
d7_lost = f"{gap / (kv_tok // 2 * CTX):.1f}"

# %% [markdown]
# vLLM shows 10.79× where memlib predicts {eval}`d7_conc`×: vLLM held {eval}`d7_gap` more than
# memlib's profile peak, which counts the forward and the sampler's warm-up but not the int8
# kernels' workspaces or anything outside torch beyond 0.1 GiB. On 2 × A100
# that is {eval}`d7_lost` chats of 8k: read the "Maximum concurrency" line vLLM prints at startup
# before promising a number.

# %%
chunk_a100 = vllm_default_max_num_batched_tokens(A100)  # vLLM's prefill chunk on an A100
chunked = estimate_inference(m, 7, CTX, weights="bf16", tp=2, prefill_tokens=chunk_a100)
whole = estimate_inference(m, 7, CTX, weights="bf16", tp=2)   # 7 prompts at once
s6_chunk, s6_whole = f"{GB(chunked.activation_bytes, 2)}", f"{GB(whole.activation_bytes)}"

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### 追问 2 · Continuous batching and chunked prefill: what do they change?
#
# *Static* batching runs a batch until its longest reply ends, each request holding its maximum
# length; *continuous* batching (Orca, OSDI '22) admits and retires requests every step. *Chunked
# prefill* (Sarathi-Serve, 2024) cuts a prompt into chunks ({eval}`s6_chunk` of workspace, not
# {eval}`s6_whole`) run beside the decode tokens: running chats' inter-token latency stays flat
# instead of stalling behind an 8k prefill, while that prompt's TTFT grows by a few steps.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Why split prefill and decode into separate pools, and how many GPUs of each?
#
# ✏️ **Back of the envelope.** The cache an 8k prompt hands over: 8,000 tokens × 320 kB ≈ 2.6 GB. Over one
# 400 Gb/s InfiniBand port (50 GB/s) ≈ 50 ms; over 100 GbE (12.5 GB/s) ≈ 200 ms; over NVLink (450 GB/s) ≈ 6 ms.
# Prefill: 2 × 70e9 × 8,000 ≈ 1.1e15 FLOPs; 8 H100s at half of 1e15 FLOP/s ≈ 0.3 s.

# %% tags=["nbval-check-output"]
from memlib.serving.disaggregation import kv_transfer_bytes, kv_transfer_s, pd_ratio, prefill_time_s

PROMPT, REPLY, TPOT_SLO, PD_MFU = CTX - 512, 512, 0.020, 0.5   # a 7,680 + 512-token chat; 20 ms TPOT SLO
hand = kv_transfer_bytes(m, PROMPT)                   # memlib.serving.disaggregation: prompt x KV bytes/token
links = {"NVLink (H100)": H100, "InfiniBand NDR": "IB NDR", "100 GbE": "100GbE"}
over = {k: kv_transfer_s(m, PROMPT, v) for k, v in links.items()}          # one link, one direction
over8 = {k: kv_transfer_s(m, PROMPT, v, tp=8) for k, v in links.items()}   # 8 GPUs, each its 1/8 on its own link
pre8 = prefill_time_s(m, H100, PROMPT, tp=8, mfu=PD_MFU, weights="bf16")  # the prefill it follows
pd = pd_ratio(m, H100, PROMPT, REPLY, TPOT_SLO, mfu=PD_MFU, weights="bf16", tp_prefill=8, tp_decode=8)
QPS = 10
pd_gpus = pd.gpus(QPS)                                # (prefill, decode) GPUs busy at QPS requests/s
print(f"{GB(hand, 2)} per request; " + ", ".join(f"{k} {s * 1e3:.0f} ms" for k, s in over.items()))
print(f"prefill on 8 x H100 at {PD_MFU:.0%} MFU: {pre8 * 1e3:.0f} ms")
print(f"decode batch {pd.decode_batch} ({pd.decode_bound_by}), step {pd.tpot_s * 1e3:.1f} ms; GPU-s per request: "
      f"prefill {pd.prefill_gpu_s:.2f}, decode {pd.decode_gpu_s:.2f}; ratio {pd.prefill_to_decode:.1f} : 1")
budget = vllm_default_max_num_batched_tokens(H100)   # memlib.serving: vLLM's default step budget
chunk_s = prefill_time_s(m, H100, budget, tp=8, mfu=PD_MFU, weights="bf16")       # a first chunk
small_s = prefill_time_s(m, H100, 512, tp=8, mfu=PD_MFU, weights="bf16")
print(f"chunked prefill: {budget:,} tokens {chunk_s * 1e3:.0f} ms per full chunk; 512 tokens {small_s * 1e3:.0f} ms")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
g1_bytes, g1_prompt = f"{GB(hand, 2)}", f"{PROMPT:,}"
g1_nv, g1_ib = f"{over['NVLink (H100)'] * 1e3:.0f} ms", f"{over['InfiniBand NDR'] * 1e3:.0f} ms"
g1_eth = f"{over['100 GbE'] * 1e3:.0f} ms"
g1_ib8, g1_eth8 = f"{over8['InfiniBand NDR'] * 1e3:.1f} ms", f"{over8['100 GbE'] * 1e3:.0f} ms"
g1_pre, g1_mfu = f"{pre8 * 1e3:.0f} ms", f"{PD_MFU:.0%}"
g1_b, g1_by, g1_step = f"{pd.decode_batch}", f"{pd.decode_bound_by}", f"{pd.tpot_s * 1e3:.1f} ms"
g1_slo, g1_reply = f"{TPOT_SLO * 1e3:.0f} ms", f"{REPLY:,}"
g1_pgs, g1_dgs, g1_ratio = f"{pd.prefill_gpu_s:.2f}", f"{pd.decode_gpu_s:.2f}", f"{pd.prefill_to_decode:.1f}"
g1_qps, g1_pg, g1_dg = f"{QPS:g}", f"{pd_gpus[0]:.0f}", f"{pd_gpus[1]:.0f}"
g1_ibshare, g1_ib8share = f"{over['InfiniBand NDR'] / pre8:.0%}", f"{over8['InfiniBand NDR'] / pre8:.0%}"
g1_ethshare = f"{over['100 GbE'] / pre8:.0%}"
g2_budget, g2_chunk, g2_small = f"{budget:,}", f"{chunk_s * 1e3:.0f} ms", f"{small_s * 1e3:.0f} ms"

# %% [markdown]
# **Why split.** A prefill pushes a whole prompt through the weights at once: thousands of tokens per weight
# read, so it is compute-bound. A decode step makes one token per chat and reads the weights and every chat's
# cache: bandwidth-bound (`decode_bound` above). Run both on one GPU and they interfere: a prefill scheduled
# into a step stalls every decoding chat's next token (TPOT), and a full decode batch delays new prompts' first
# token (TTFT). **DistServe** (Zhong et al. 2024, OSDI) gives each phase its own pool, parallelism and SLO and
# reports up to 7.4× more requests within its latency SLOs; **Splitwise** (Patel et al. 2024) does the same across GPU
# generations, and **Mooncake** (Qin et al. 2025, FAST) runs Kimi's service this way, with a KV store in
# the cluster's CPU memory between the pools.
#
# **What it costs: the cache moves.** A {eval}`g1_prompt`-token prompt of Llama-3-70B leaves
# **{eval}`g1_bytes`** of KV cache (`memlib.serving.disaggregation.kv_transfer_bytes`: prompt × KV bytes per
# token) that the decode pool must receive before its first step. Over one link at its nominal rate:
#
# | link | one link | 8 GPUs, each its eighth |
# |---|---|---|
# | NVLink 4 (same node) | {eval}`g1_nv` | |
# | InfiniBand NDR, 400 Gb/s | {eval}`g1_ib` | {eval}`g1_ib8` |
# | 100 GbE | {eval}`g1_eth` | {eval}`g1_eth8` |
#
# The prefill itself takes about {eval}`g1_pre` on 8 × H100 at {eval}`g1_mfu` MFU. Over one InfiniBand port the
# transfer adds {eval}`g1_ibshare` of that to TTFT, over eight ports in parallel {eval}`g1_ib8share` (less
# again when layers are sent as they finish, as DistServe and Mooncake do); over one 100 GbE NIC it adds
# {eval}`g1_ethshare`. This is why disaggregated clusters use RDMA (NIXL, Mooncake's transfer engine), and
# why fp8 KV halves the bill.
#
# **How many GPUs of each.** Count GPU-seconds per request (`memlib.serving.disaggregation.pd_ratio`). Prefill:
# the prompt's FLOPs over the peak at {eval}`g1_mfu` MFU, **{eval}`g1_pgs`** GPU-seconds. Decode: the largest
# batch whose step still meets a {eval}`g1_slo` TPOT SLO is {eval}`g1_b` chats (the binding limit: {eval}`g1_by`;
# step {eval}`g1_step`), so each request holds 8 GPUs for {eval}`g1_reply` steps shared with that batch:
# **{eval}`g1_dgs`** GPU-seconds. The ratio is **{eval}`g1_ratio` : 1** prefill to decode GPUs; at
# {eval}`g1_qps` requests/s that is about {eval}`g1_pg` prefill and {eval}`g1_dg` decode GPUs busy (round each
# up to whole tp 8 instances). Long prompts and short replies need more prefill GPUs; chat with long replies
# the reverse. A looser TPOT SLO lets decode batch more and needs fewer decode GPUs. These are roofline times:
# measure both phases and redo the ratio, as DistServe's placement search does.
#
# **Chunked prefill** is the alternative on one pool. Each scheduler step gets a token budget
# (`max_num_batched_tokens`, vLLM's default {eval}`g2_budget` on an H100 for the API server;
# `memlib.serving.vllm_default_max_num_batched_tokens`): the running chats' decode tokens first, the rest
# filled with the next chunk of a waiting prompt (Sarathi-Serve, Agrawal et al. 2024, OSDI). A full
# {eval}`g2_budget`-token chunk of Llama-3-70B costs about {eval}`g2_chunk` on 8 × H100 at {eval}`g1_mfu` MFU,
# which every decoding chat waits through in that step; a 512-token budget bounds the stall to about
# {eval}`g2_small` at the price of more steps per prompt. Chunking trades TTFT for TPOT on shared GPUs;
# disaggregation removes the trade at the price of the transfer and a second pool to size.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Beyond paging: evict, offload or quantize the cache?
#
# ✏️ **Back of the envelope.** A 128k chat of Llama-3.1-70B: 131,000 × 320 kB ≈ 43 GB. StreamingLLM with
# 4 sinks + a 2k window keeps 2,048 × 320 kB ≈ 0.7 GB whatever the length. KIVI at 4 bits: 164k elements per
# token × (0.5 B + 4 B of scale and zero per 32) ≈ 100 kB per token, a third of bf16.

# %% tags=["nbval-check-output"]
from memlib.serving.kv_compression import (h2o_cache_bytes, kivi_bytes_per_token, kivi_cache_bytes,
                                           offloaded_kv_read_s, streaming_llm_cache_bytes)

LONG, WINDOW = 131072, 2044            # a 128k chat; StreamingLLM's window next to its 4 sinks
kv_budget8 = vllm_kv_cache_budget_bytes(m31, H100, weights="bf16", tp=8)   # per GPU, 8 x H100 tp 8
ways = {"bf16 (paged)": kv_cache_bytes(m31, 1, LONG),
        "fp8 KV": kv_cache_bytes(m31, 1, LONG, kv_cache="fp8"),
        "KIVI 4-bit": kivi_cache_bytes(m31, LONG, bits=4),
        "KIVI 2-bit": kivi_cache_bytes(m31, LONG, bits=2),
        "H2O, 20% budget": h2o_cache_bytes(m31, LONG, heavy=LONG // 10, recent=LONG // 10),
        "StreamingLLM, 4 + 2,044": streaming_llm_cache_bytes(m31, LONG, window=WINDOW)}
for k, v in ways.items():   # chats of 128k that vLLM's budget holds: budget x 8 GPUs / one chat
    print(f"{k}: {GB(v)} per chat, {kv_budget8 * 8 // v} chats")
print(f"KIVI per token: 4-bit {kivi_bytes_per_token(m31, 4):,.0f} B, 2-bit {kivi_bytes_per_token(m31, 2):,.0f} B; "
      f"bf16 {kv_bytes_per_token(m31):,} B")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
LOSES = {"bf16 (paged)": "nothing",
         "fp8 KV": "little with calibrated per-tensor scales (vLLM docs, Quantized KV Cache)",
         "KIVI 4-bit": "little: K per channel, V per token, 128 recent tokens in 16-bit (Liu et al. 2024)",
         "KIVI 2-bit": "comparable quality on their tasks, 2.6× less peak memory (KIVI README)",
         "H2O, 20% budget": "the evicted 80%: fine on their benchmarks, a risk for retrieval",
         "StreamingLLM, 4 + 2,044": "everything outside the window: it cannot recall the start of a long document"}
display(Markdown(markdown_table([[k, GB(v), f"{ways['bf16 (paged)'] / v:.1f}×", f"{kv_budget8 * 8 // v}", LOSES[k]]
                                 for k, v in ways.items()],
                                ["cache", "one 128k chat", "smaller", "chats on 8 × H100", "what it loses"])))

# %% tags=["nbval-check-output"]
host_s, hbm_s = offloaded_kv_read_s(m, H100, t8, CTX, tp=8)     # the full batch's cache, one decode step
PREFIX_LM = 2048                                                 # a reused prefix fetched once (LMCache)
fetch_s = offloaded_kv_read_s(m, H100, 1, PREFIX_LM, tp=8)[0]
recompute_s = prefill_time_s(m, H100, PREFIX_LM, tp=8, mfu=PD_MFU, weights="bf16")
print(f"{t8} chats' cache per step: {host_s * 1e3:.0f} ms over PCIe vs {hbm_s * 1e3:.1f} ms from HBM")
print(f"{PREFIX_LM:,}-token prefix: fetch {fetch_s * 1e3:.1f} ms vs prefill {recompute_s * 1e3:.0f} ms")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
h1_host, h1_hbm, h1_x = f"{host_s * 1e3:.0f} ms", f"{hbm_s * 1e3:.1f} ms", f"{host_s / hbm_s:.0f}"
h1_fetch, h1_pre, h1_n = f"{fetch_s * 1e3:.1f} ms", f"{recompute_s * 1e3:.0f} ms", f"{PREFIX_LM:,}"
h1_t8 = f"{t8}"
h1_kivi4, h1_bf = f"{kivi_bytes_per_token(m31, 4):,.0f} B", f"{kv_bytes_per_token(m31):,} B"

# %% [markdown]
# **Evict.** Paging removes fragmentation; it does not shrink what a token costs. **StreamingLLM** (Xiao et al.
# 2024, ICLR) keeps the first 4 tokens, which soak up attention whatever they say (*attention sinks*), plus a
# rolling window of recent ones: the cache stops growing and perplexity stays stable over millions of tokens,
# but the model forgets everything outside the window. **H2O** (Zhang et al. 2023, NeurIPS) keeps the
# *heavy hitters*, the tokens with the largest accumulated attention, plus recent ones, within a budget (20%
# in their experiments). Both make the cache a budget instead of a length (`memlib.serving.kv_compression`),
# and both lose whatever a later question needs from the evicted tokens.
#
# **Offload.** Keeping the cache in host RAM and reading it every decode step does not work: {eval}`h1_t8` chats'
# cache on 8 × H100 crosses PCIe in {eval}`h1_host` per step against {eval}`h1_hbm` from HBM, {eval}`h1_x`×
# slower (`offloaded_kv_read_s`; FlexGen does it only for offline throughput). What works is to offload for
# **reuse**: LMCache (with vLLM) and Mooncake's store keep caches of past prompts in CPU memory or on disk and
# load a hit once, instead of every step. A {eval}`h1_n`-token prefix comes back in {eval}`h1_fetch` over
# PCIe, against {eval}`h1_pre` to prefill it again.
#
# **Quantize.** fp8 KV (`--kv-cache-dtype fp8`, E4M3 with a per-tensor scale) halves every figure above.
# **KIVI** (Liu et al. 2024, ICML) goes to 2 or 4 bits without training: keys have outlier *channels*, so K is
# quantized per channel over groups of 32 tokens; values do not, so V is quantized per token over groups of
# 32 channels; each group stores an fp16 scale and zero point, and the newest 128 tokens stay in 16-bit until a
# group fills. At 4 bits that is {eval}`h1_kivi4` per token against {eval}`h1_bf` in bf16
# (`kivi_bytes_per_token`), the scales included. The trade: each halving of the bits doubles the chats;
# the quantization error grows, and the attention kernel must dequantize on the fly (fused, or the decode step
# slows down).

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Routing, autoscaling and batch windows across replicas

# %% tags=["nbval-check-output"]
from memlib.serving.techniques import random_routing_prefix_hit_rate

REPLICAS, SHARED = 8, 2048   # 8 replicas; each conversation's earlier turns: a 2,048-token prefix
hit = random_routing_prefix_hit_rate(REPLICAS)               # memlib.serving.techniques: 1 / replicas
saved = prefill_time_s(m, H100, SHARED, tp=8, mfu=PD_MFU, weights="bf16")
rate = request_rate_bound(m, H100, PROMPT, REPLY, ttft_s=0.5, mfu=PD_MFU, weights="bf16", tp=8)
print(f"random routing finds the prefix {hit:.1%} of the time; a hit saves {saved * 1e3:.0f} ms of prefill")
print(f"one 8 x H100 replica: <= {rate.rate:.2f} requests/s ({rate.bound}-bound)")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
r1_n, r1_hit, r1_saved, r1_pre = f"{REPLICAS}", f"{hit:.1%}", f"{saved * 1e3:.0f} ms", f"{SHARED:,}"
r1_rate, r1_bound = f"{rate.rate:.2f}", f"{rate.bound}"
r1_w = f"{GB(weights['bf16'].weight_bytes, 0)}"

# %% [markdown]
# **Routing.** A replica's prefix cache helps only the requests that reach it. Spread a conversation's turns
# round robin over {eval}`r1_n` replicas and the one holding its {eval}`r1_pre`-token history is hit
# {eval}`r1_hit` of the time (`random_routing_prefix_hit_rate`); each hit saves {eval}`r1_saved` of prefill on
# 8 × H100. A **prefix-aware router** keeps an approximate radix tree of what it sent to each worker and routes
# to the longest match when it covers enough of the prompt (SGLang's router, `cache_threshold` 0.5 by default),
# falling back to the least-loaded worker when loads drift apart (`balance_abs_threshold` 32); SGLang v0.4's
# release post reports 3.8× the hit rate and up to 1.9× the throughput. **llm-d** does the same inside
# Kubernetes with a prefix-cache scorer in its inference scheduler. Sticky sessions are the crude version.
#
# **Autoscaling and batch windows.** Scale on what saturates first: the KV cache usage and the waiting queue
# (vLLM's `num_requests_waiting`), not GPU utilisation, which reads near 100% whenever a kernel runs, even for a
# batch-1 decode that leaves the tensor cores almost idle. One
# replica here sustains at most {eval}`r1_rate` requests/s ({eval}`r1_bound`-bound, `request_rate_bound`), so
# replicas = load / that, rounded up, plus headroom for the minutes a new replica needs to load {eval}`r1_w` of
# weights. Continuous batching needs no batch window: a request joins at the next step. Windows matter for
# offline jobs and for routers that hold requests a few milliseconds to group shared prefixes: a longer
# window raises the batch and the hit rate, and adds its length to every TTFT.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Fact-check · 纠错
#
# Circulating rules of thumb and published claims about serving memory, each quoted with its
# source, against memlib; the verdict is computed from the two figures (✅ right within 3% ·
# ⚠️ partly, within 25% · ❌ wrong).

# %% tags=["nbval-check-output"]
w31 = {f: estimate_inference(m31, 1, 1024, weights=f).weight_bytes
       for f in ("bf16", "fp8-block", "int4-awq", "nf4")}
kv31 = kv_bytes_per_token(m31)
int8_31 = estimate_inference(m31, 1, 2048, weights="int8").weight_bytes
wrong_kv = 2 * m.num_layers * m.hidden_size * 2  # the "hidden size" formula
mlsys_4k = chats(H100, 1, "int4-awq", context=4096)    # one H100, int4, 4k chats
issue_3k = chats(H100, 4, "fp8-block", context=3000)   # 4 x H100, fp8, 3,000 tokens
waste_long = worst / per_chat
db_form = m.hidden_size // m.num_heads * m.num_layers * 2 * 2 * m.num_kv_heads
# Databricks' MBU at 100%: the weights and the cache of t8 chats over 8 GPUs' bandwidth
tpot_db = ((weights["bf16"].weight_bytes + t8 * per_chat)
           / (8 * h100.memory_bandwidth_bytes_per_s))
fp8_ratio = weights["bf16"].weight_bytes / weights["fp8"].weight_bytes
print(f"{GB(w31['bf16'])}, {GB(kv31 * 131072, 2)}, {wrong_kv:,} B, {mlsys_4k}, "
      f"{issue_3k}, {tpot_db * 1e3:.1f} ms, {fp8_ratio:.2f}x")

# %%
HF = "Hugging Face blog, *Llama 3.1 - 405B, 70B & 8B*"
facts = [
    Claim("\"70B … FP16 140 GB\"",
          HF + ", inference table",
          GB(w31["bf16"]),
          claimed=140e9, computed=w31["bf16"],
          why="2 bytes per parameter"),
    Claim("\"70B … FP8 70 GB\"",
          HF,
          GB(w31["fp8-block"]),
          claimed=70e9, computed=w31["fp8-block"],
          why="embedding and head stay 16-bit"),
    Claim("\"70B … INT4 35 GB\"",
          HF,
          GB(w31["int4-awq"]),
          claimed=35e9, computed=w31["int4-awq"],
          why="16-bit embedding and head, group scales and zeros"),
    Claim("\"4-bit loading of the large 70B version takes about 34 GB\"",
          HF + " (bitsandbytes)",
          GB(w31["nf4"]),
          claimed=34e9, computed=w31["nf4"],
          why="NF4, double quantization"),
    Claim("\"In FP16, the KV cache … 70B … 128k tokens 39.06 GB\"",
          HF,
          f"{GB(kv31 * 131072, 2)} = {G(kv31 * 131072, 2)}",
          claimed=39.06e9, computed=kv31 * 131072,
          why="GiB of 128,000 tokens, labelled GB"),
    Claim("\"KV cache per token = 2 * num_layers * (num_heads * dim_head) * precision_in_bytes\"",
          "NVIDIA Technical Blog, *Mastering LLM Techniques: Inference Optimization*",
          f"{wrong_kv:,} B vs {kv_tok:,} B",
          claimed=wrong_kv, computed=kv_tok,
          why="right for MHA (its Llama 2 7B example); with GQA use the KV heads"),
    Claim("\"KV cache size for 3000 token long sequence is just under 8GB … 4xH100 can fit only ~30\"",
          "vLLM issue #8089",
          f"{GB(kv_tok * 3000, 2)}; {issue_3k} fit (fp8, tp 4)",
          claimed=8e9, computed=kv_tok * 3000,
          why="hidden size for 8 KV heads: 8× too much"),
    Claim("\"64 KV heads across 80 layers … roughly 1.25 GB per 1,000 tokens at FP16\"",
          "gigagpu.com, *LLaMA 3 70B context length VRAM*",
          GB(kv_tok * 1000, 3),
          claimed=1.25e9, computed=kv_tok * 1000,
          why="Llama-3-70B has 8 KV heads"),
    Claim("\"KV cache per request (4K context): → 160 MB\" … \"≈ 280 concurrent requests max\"",
          "mlsysim blog, INT4 on one H100",
          f"{GB(kv_tok * 4096, 2)}; {mlsys_4k} requests",
          claimed=160e6, computed=kv_tok * 4096,
          why="the cache is 8× larger, the count 8× smaller"),
    Claim("\"Assumes 8k context … KV cache 2.68 GB\"",
          "canitrun.dev, Llama 3.1 70B",
          GB(per_chat, 2),
          claimed=2.68e9, computed=per_chat,
          why="GQA-aware: 2 × 80 × 8 × 128 × 2 B × 8,192"),
    Claim("\"KV cache size = batch_size * seqlen * (d_model/n_heads) * n_layers * 2 * 2 * n_kv_heads\"",
          "Databricks, *LLM Inference Performance Engineering*",
          f"{db_form:,} B per token",
          claimed=db_form, computed=kv_tok,
          why="the GQA form"),
    Claim("\"achieved memory bandwidth is ((total model parameter size + KV cache size) / TPOT)\"",
          "Databricks, same post",
          f"at 100%: {tpot_db * 1e3:.1f} ms; memlib {full8.step_s * 1e3:.1f} ms",
          claimed=tpot_db, computed=full8.step_s,
          why="the decode roofline (memlib skips the embedding)"),
    Claim("\"memory waste only happens in the last block … under 4%\"",
          "vLLM blog, 2023-06-20",
          f"{waste_long:.2%} (8k); {short_share:.0%} (100 tokens)",
          verdict="✅ right" if waste_long < 0.04 else "⚠️ partly",
          why="short chats waste more"),
    Claim("\"vLLM limits all the memory wastes for a request within one block\"",
          "Kwon et al. 2023, Sec. 4.3",
          f"≤ {VLLM_BLOCK_SIZE - 1} tokens ({worst / 1e6:.1f} MB)",
          verdict="✅ right" if worst == (VLLM_BLOCK_SIZE - 1) * kv_tok else "❌ wrong",
          why="blocks fill in order"),
    Claim("\"This flag controls how much VRAM vLLM pre-allocates for KV cache, NOT for model weights\"",
          "chopratejas/gpu-checkpoint-benchmarks, GPU_MEMORY_EXPLAINED.md",
          f"KV {G(budget_bf16)} of {G(VLLM_GPU_MEMORY_UTILIZATION * cap_a100)}",
          claimed=VLLM_GPU_MEMORY_UTILIZATION * cap_a100, computed=budget_bf16,
          why="the fraction caps weights, workspace and cache together"),
    Claim("\"Loading model weights took 67.7229 GB\"",
          "vLLM PR #12569 (Llama-3.1-70B int8)",
          f"{G(int8_31, 2)} ({GB(int8_31, 2)})",
          claimed=67.7229 * 2**30, computed=int8_31,
          why="vLLM prints GiB labelled GB"),
    Claim("\"Maximum concurrency for 2048 tokens per request: 10.79x\"",
          "same log, utilization 0.98",
          f"{pred_conc:.2f}x",
          claimed=LOG_CONC, computed=pred_conc,
          why=f"memlib misses {G(gap)} vLLM held"),
    Claim("\"FP8 allows for a 2x reduction in model memory requirements\"",
          "vLLM docs, FP8 W8A8",
          f"{fp8_ratio:.2f}×",
          claimed=2, computed=fp8_ratio,
          why="the 16-bit embedding and head"),
]
display(Markdown(fact_check_table(facts, right=0.03, partly=0.25,
                                  headers=["claim", "source", "memlib", "verdict", "why"])))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Every layout · 全部方案
#
# Per GPU, at 8k context: weights, the chats memlib.max_batch fits (all replicas), what vLLM's
# default reservation admits, and the decode limit per chat at that many chats.

# %% tags=["nbval-check-output"]
ledger = []
for g, tp, reps, label in ((A100, 2, 1, "2×A100 tp2"), (H100, 8, 1, "8×H100 tp8"),
                           (H100, 4, 2, "8×H100 2×tp4")):
    for k, f in FORMATS.items():
        for kv in ("bf16", "fp8"):
            n = chats(g, tp, f, kv)
            w = estimate_inference(m, 1, CTX, weights=f, kv_cache=kv, tp=tp).weight_bytes
            d = decode_bound(m, g, max(n, 1), CTX, weights=f, kv_cache=kv, tp=tp)
            v = vllm_max_concurrency(m, g, CTX, weights=f, kv_cache=kv, tp=tp)
            ledger.append([label, f"{k} / {kv}", GB(w), reps * n, f"{reps * v:.0f}",
                           f"{d.tokens_per_s_per_sequence:.0f}"])
print(len(ledger), "layouts")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(markdown_table(ledger, ["GPUs", "weights / KV", "weights per GPU", "chats",
                                         "vLLM", "tok/s per chat ≤"])))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The decode roofline against the batch · 解码上限
#
# **Takeaway: total tokens/s rise with the batch (the weights are read once per step for
# everyone) while each chat slows down; tp 8 goes further because it holds more chats.**
# 8 × H100, bf16, 8k chats, `memlib.serving.decode_bound`, log-log lines.

# %% tags=["nbval-check-output"]
batches = [1, 2, 4, 8, 16, 32, 64, 128, t8]
b4 = chats(H100, 4, "bf16")   # each tp 4 replica holds at most this many


def replicas_tokens_per_s(b):
    """Two tp 4 replicas sharing b chats (one at b = 1), each capped at what fits."""
    if b == 1:
        return decode_bound(m, H100, 1, CTX, weights="bf16", tp=4).tokens_per_s
    half = min(b // 2, b4)
    return 2 * decode_bound(m, H100, half, CTX, weights="bf16", tp=4).tokens_per_s


speed = {"tp 8: total": [decode_bound(m, H100, b, CTX, weights="bf16", tp=8).tokens_per_s
                         for b in batches],
         f"2 × tp 4: total (≤ {2 * b4})": [replicas_tokens_per_s(b) for b in batches],
         "tp 8: per chat": [decode_bound(m, H100, b, CTX, weights="bf16", tp=8)
                            .tokens_per_s_per_sequence for b in batches]}
for k, v in speed.items():
    print(f"{k}: {v[0]:,.0f} -> {v[-1]:,.0f} tokens/s")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
fig, ax = plt.subplots(figsize=(7, 3.6))
count_sweep(batches, speed, ax=ax, logx=True, logy=True, xlabel="concurrent 8k chats on 8 × H100",
            ylabel="tokens/s, upper bound", title="Decode roofline (memlib.serving.decode_bound), bf16")
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The derivation memlib prints · memlib 的推导
#
# `estimate_inference(...).explain()` for 2 × A100 in bf16 at the largest batch, every term with
# its formula.

# %%
at_max = estimate_inference(m, chats(A100, 2, "bf16"), CTX, weights="bf16", tp=2,
                            prefill_tokens=vllm_default_max_num_batched_tokens(A100))
display(Markdown(at_max.explain()))
