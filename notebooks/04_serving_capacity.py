# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,slideshow,jupyter,-user_expressions
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # 04 · How many 8k chats can Llama-3-70B serve? · Llama-3-70B 能同时服务多少个 8k 对话
#
# ## 1. The question · 问题
#
# > **「Llama-3-70B 在 2 张 A100 80GB 上能同时服务多少个 8k token 的对话？换成 8 张 H100 呢？」**
# > <br> *How many concurrent 8k-token chats can Llama-3-70B serve on 2 × A100 80GB, and on 8 × H100?*
#
# A chat is one sequence that may grow to 8,192 tokens (prompt and reply), served by vLLM with
# continuous batching; every chat's KV cache stays on the GPUs.
# **Reading time:** core path ~15 min; the [deep dive](04_serving_capacity_deep_dive.ipynb)
# (vLLM and SGLang inside, fact-check, every layout) is its own page.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
# %matplotlib inline
import matplotlib.pyplot as plt

import memlib
from memlib import estimate_inference, get_gpu, get_model, max_batch
from memlib.cost.conventions import littles_law_arrival_rate
from memlib.fit import usable_bytes
from memlib.inference import (gqa_kv_bytes_per_token, kv_bytes_per_token, kv_cache_bytes,
                              quantized_linear_bytes)
from memlib.serving import (VLLM_GPU_MEMORY_UTILIZATION, decode_bound, littles_law_concurrency,
                            speculative_expected_tokens, speculative_speedup, token_forwards,
                            vllm_default_max_num_batched_tokens, vllm_kv_cache_budget_bytes,
                            vllm_max_concurrency)
from memlib.serving_playground import ServingPlayground
from memlib.units import fmt_count, gib
from memlib.viz import breakdown_bars, count_sweep

MODEL = "llama-3-70b"
CTX = 8192  # the question's "8k-token chat": prompt + reply may grow to 8,192 tokens
A100, H100 = "a100-80gb", "h100-80gb"
FORMATS = {"bf16": "bf16", "fp8": "fp8-block", "int8": "int8", "int4 (AWQ)": "int4-awq"}
CHUNK_A100 = vllm_default_max_num_batched_tokens(A100)  # vLLM's prefill chunk (2,048)
CHUNK_H100 = vllm_default_max_num_batched_tokens(H100)


def GB(n_bytes, digits=1):
    """GB (1e9), labelled."""
    return f"{n_bytes / 1e9:,.{digits}f} GB"


def G(n_bytes, digits=1):
    """GiB (2**30), labelled: what torch and nvidia-smi show."""
    return f"{gib(n_bytes):,.{digits}f} GiB"


def r2(x):
    """Round half up to two significant figures, for sentences said aloud (185 -> 190)."""
    if x < 10:
        return f"{x:.0f}"
    step = 10 ** (len(str(int(x))) - 2)
    return f"{int(x / step + 0.5) * step:,}"


def pct(a, b):
    """How far a is from b, signed, in %."""
    return f"{(a / b - 1) * 100:+.1f}%"


def chats(gpu, tp, weights, kv_cache="bf16", context=CTX, model=MODEL):
    """memlib.max_batch: chats of `context` tokens one tensor-parallel group holds, with
    vLLM's default prefill chunk for that GPU."""
    return max_batch(model, gpu, context, weights=weights, kv_cache=kv_cache, tp=tp,
                     prefill_tokens=vllm_default_max_num_batched_tokens(gpu)).value


# The figures the 30-second answer quotes; steps 4, 6 and 8 derive each one.
m = get_model(MODEL)
a_kv = f"{r2(kv_bytes_per_token(m) / 2**10)}"
a_chat = f"{G(kv_cache_bytes(m, 1, CTX))}"
a_w = f"{G(estimate_inference(m, weights='bf16').weight_bytes, 0)}"
a_a100, a_h100 = f"{r2(chats(A100, 2, 'bf16'))}", f"{r2(chats(H100, 8, 'bf16'))}"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. The 30-second answer · 30 秒回答
#
# > **EN** Serving memory is weights plus KV cache, and the cache decides how many users fit.
# > Llama-3-70B's cache costs ≈ {eval}`a_kv` KiB per token; an 8k chat needs {eval}`a_chat`.
# > After {eval}`a_w` of bf16 weights, two A100s hold about {eval}`a_a100` chats, eight H100s about
# > {eval}`a_h100`. Levers: fp8 or int4 weights, an fp8 cache, wider tensor parallelism.
# > Caveat: that count is worst-case, every chat at full length; real chats average shorter, so a
# > server admits more and preempts when memory runs out.
#
# > **中文** 推理显存 = 权重 + KV cache，能服务多少用户由 KV cache 决定。Llama-3-70B 每个 token 的
# > KV cache 约 {eval}`a_kv` KiB，一个 8k 对话要 {eval}`a_chat`；两张 A100 放下 {eval}`a_w` 的 bf16
# > 权重后约能放 {eval}`a_a100` 个对话，八张 H100 约 {eval}`a_h100` 个。手段：fp8 或 int4 权重、fp8
# > KV cache、更多卡张量并行。注意：这是最坏情况，每个对话都到满长度；实际更短，服务器会多接纳，
# > 显存不够时再抢占。
#
# The long answer follows: every figure above is derived in section 5.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. What the interviewer is probing · 考察意图
#
# - **The KV cache as a mechanism and a bill**: why decode reuses K and V (not Q), and how many
#   bytes a token costs with GQA (8 KV heads, not 64).
# - **Precision and tensor parallelism as levers** on weights and cache; replicas copy the weights.
# - **What the server reserves** (vLLM's `gpu_memory_utilization`, the prefill chunk) and how it
#   schedules (continuous batching, chunked prefill, paged blocks, preemption).
# - **Memory to latency**: the cache caps the batch, the batch sets TPOT and throughput (Little's
#   law), and decode is memory-bound: a step reads all weights and the whole cache.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Words we use · 术语
#
# - **Prefill / decode**: the prompt's tokens in one forward / then one token per step per chat.
# - **KV cache**: every past token's keys and values in every layer, kept so decode computes them once.
# - **MHA / MQA / GQA**: one K/V head per query head / one for all / one per group (Llama-3-70B:
#   64 query heads, 8 KV heads).
# - **Continuous batching**: the batch changes every step (Orca); **chunked prefill**: a prompt is
#   split into chunks of `max_num_batched_tokens` (2,048 on an A100, 8,192 on an H100 in vLLM).
# - **PagedAttention, block**: vLLM stores the cache in 16-token blocks allocated as a chat grows.
# - **`gpu_memory_utilization`**: the share of the GPU vLLM allows itself (0.9); the cache gets the rest.
# - **tp / replica**: each matrix split over a group's GPUs (Megatron) / an independent copy.
# - **bf16 / fp8 / int8 / int4 (AWQ)**: 2, 1, 1, ½ byte per weight, plus scales.
# - **TTFT / TPOT (ITL)**: time to first token / per output token; **QPS**: requests per second;
#   **p99**: the latency 99% of requests beat. **Roofline, memory-bound**: a step takes at least
#   bytes read ÷ HBM bandwidth.
# - **Speculative decoding**: a small draft proposes tokens, the model verifies several per step.
# - **GB / GiB**: 10⁹ / 2³⁰ bytes. An "80GB" GPU has 80 GiB = 85.9 GB.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. The answer, step by step · 推导
#
# ### Step 1 · The model and the GPUs
#
# ✏️ **Back of the envelope.** "70B" parameters; an "80GB" card is 80 GiB ≈ 86 GB, of which the
# process sees a bit less. HBM bandwidth: A100 ~2 TB/s, H100 SXM ~3.35 TB/s.

# %% tags=["nbval-check-output"]
m = get_model(MODEL)                          # memlib.get_model: Meta's config.json
a100, h100 = get_gpu(A100), get_gpu(H100)     # memlib.get_gpu
cap_a100, cap_h100 = usable_bytes(a100), usable_bytes(h100)  # memlib.fit.usable_bytes
print(f"{m.name}: {fmt_count(m.num_params)} parameters, {m.num_layers} layers, "
      f"{m.num_heads} query heads, {m.num_kv_heads} KV heads of {m.head_dim}")
for g, cap in ((a100, cap_a100), (h100, cap_h100)):
    print(f"{g.name}: torch sees {G(cap, 2)}, {g.memory_bandwidth_gb_per_s:,.0f} GB/s")
mib = h100.reported_total_mib
print(f"H100 in nvidia-smi: {mib:,} MiB = {mib / 1024:.1f} GiB")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s1_p, s1_over = f"{fmt_count(m.num_params)}", f"{m.num_params / 70e9 - 1:.1%}"
s1_a100, s1_h100 = f"{G(cap_a100, 2)}", f"{G(cap_h100, 2)}"
s1_low = f"{1 - cap_a100 / (80 * 2**30):.1%}"

# %% [markdown]
# memlib: **{eval}`s1_p`** parameters, {eval}`s1_over` more than "70B". torch sees
# **{eval}`s1_a100`** of an A100 80GB and {eval}`s1_h100` of an H100: the pencil left out the
# {eval}`s1_low` the driver keeps.

# %% [markdown]
# ### Step 2 · Weights by precision
#
# ✏️ **Back of the envelope.** 70B × 2 bytes = **140 GB** in bf16; × 1 byte = **70 GB** in fp8
# or int8; × ½ byte = **35 GB** in int4. bf16 does not fit one 80 GB card.

# %% tags=["nbval-check-output"]
numel = m.hidden_size * m.intermediate_size   # one MLP matrix, 8192 -> 28672
# memlib.inference.quantized_linear_bytes: every buffer (weights, scales, zeros)
bits = {k: 8 * quantized_linear_bytes(m.hidden_size, m.intermediate_size, f) / numel
        for k, f in FORMATS.items()}
# memlib.estimate_inference(weights=...): every tensor in its stored format
weights = {k: estimate_inference(m, 1, CTX, weights=f) for k, f in FORMATS.items()}
emb = weights["bf16"].weight_parts["embedding"] + weights["bf16"].weight_parts["lm_head"]
for k, e in weights.items():
    print(f"{k:>10}: {bits[k]:6.3f} bits per projection weight, "
          f"model {GB(e.weight_bytes)}")
print(f"int4 AWQ: {bits['int4 (AWQ)']:.3f} bits = 4 + 16/128 + 4/128")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s2_emb = f"{GB(emb)}"
s2_fp8 = f"{pct(weights['fp8'].weight_bytes, 70e9)}"
s2_int4 = f"{pct(weights['int4 (AWQ)'].weight_bytes, 35e9)}"
s2_bf16 = f"{abs(weights['bf16'].weight_bytes / 140e9 - 1):.1%}"

# %% [markdown]
# *What the pencil left out:* the embedding and the output head ({eval}`s2_emb` together) stay
# 16-bit in every quantized checkpoint; int8 adds a 4-byte scale per output row, int4 AWQ a 16-bit
# scale and a 4-bit zero per group of 128. So fp8 is {eval}`s2_fp8` and int4 {eval}`s2_int4` above
# the pencil; bf16 is within {eval}`s2_bf16`.

# %% [markdown]
# ### Step 3 · The KV cache: prefill, then decode
#
# ✏️ **Back of the envelope.** A 1,000-token prompt, a 500-token reply. Without a cache, step t
# reruns all 1,000 + t − 1 tokens: 500 × 1,000 + 500²/2 ≈ **625k** token passes, O(s²). With it:
# 1,000 once (prefill) + 1 per later step ≈ **1.5k**, O(s), about 400× fewer.

# %% tags=["nbval-check-output"]
PROMPT, REPLY = 1000, 500
# memlib.serving.token_forwards: positions whose q, k, v (and MLP) are computed
work = {c: token_forwards(PROMPT, REPLY, kv_cache=c) for c in (True, False)}
held = kv_cache_bytes(m, 1, PROMPT + REPLY)   # memlib.inference.kv_cache_bytes: the price
print(f"token passes: {work[True]:,} with a cache, {work[False]:,} without")
print(f"memory spent: {GB(held, 2)} of cache for this {PROMPT + REPLY:,}-token chat")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s3_with, s3_without = f"{work[True]:,}", f"{work[False]:,}"
s3_x, s3_held = f"{work[False] / work[True]:.0f}", f"{GB(held, 2)}"

# %% [markdown]
# **Prefill** runs the prompt in one forward: each layer computes every token's q, k and v and keeps
# k and v. Each **decode** step then feeds only the newest token: its q, k, v are computed, its k and
# v appended, and its q attends over all cached keys and values. A past token's query served only
# to produce that token's own output, long done, so **Q is never cached**. memlib: {eval}`s3_with`
# token passes instead of {eval}`s3_without` ({eval}`s3_x`× fewer); the bill is memory,
# {eval}`s3_held` for this one chat, and every step still reads the whole cache (step 9).

# %% [markdown]
# ### Step 4 · One token's cache: MHA, MQA, GQA
#
# ✏️ **Back of the envelope.** Per token: 2 (K, V) × 80 layers × **8 KV heads** × 128 × 2 bytes
# = **327,680 B ≈ 0.33 MB**; an 8k chat ≈ **2.7 GB**. MHA (64 KV heads) would be 8× that, 2.6 MB
# per token; MQA (1 KV head) 8× less, 41 KB.

# %% tags=["nbval-check-output"]
heads = {"MHA": m.num_heads, "GQA": m.num_kv_heads, "MQA": 1}
# memlib.inference.gqa_kv_bytes_per_token: 2 x layers x kv_heads x head_dim x bytes
per_tok = {k: gqa_kv_bytes_per_token(m.num_layers, h, m.head_dim)
           for k, h in heads.items()}
kv_tok = kv_bytes_per_token(m)                # memlib.inference.kv_bytes_per_token (bf16)
per_chat = kv_cache_bytes(m, 1, CTX)          # one full 8k chat
for k, v in per_tok.items():
    print(f"{k} ({heads[k]:>2} KV heads): {v:>9,} B per token, "
          f"{GB(v * CTX, 2)} per 8k chat")
print(f"fp8 cache: {kv_bytes_per_token(m, kv_cache='fp8'):,} B per token")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s4_tok, s4_chat = f"{kv_tok:,}", f"{GB(per_chat, 2)}"
s4_mha = f"{per_tok['MHA'] // kv_tok}"
s4_mqa = f"{kv_tok // per_tok['MQA']}"

# %% [markdown]
# memlib: **{eval}`s4_tok` bytes per token**, **{eval}`s4_chat` per 8k chat**; the pencil is exact.
# Counting the query heads gives {eval}`s4_mha`× too much, the commonest error in circulating
# answers. MQA (Shazeer 2019) saves another {eval}`s4_mqa`× at some quality; GQA sits between. An MHA
# checkpoint converts to GQA by mean-pooling each group's K and V heads into one, then
# pre-training ~5% of the original compute more (Ainslie et al. 2023, Sec. 2.1).

# %% [markdown]
# ### Step 5 · Tensor parallelism splits weights and cache
#
# ✏️ **Back of the envelope.** tp 2: 141 GB / 2 ≈ **70.5 GB of weights per GPU**, 4 of the 8 KV
# heads: **164 KB per token**. tp 8: **17.6 GB** and **41 KB**.

# %% tags=["nbval-check-output"]
# memlib.estimate_inference(tp=...): each GPU's shard of every tensor
tp_est = {tp: estimate_inference(m, 1, CTX, weights="bf16", tp=tp) for tp in (1, 2, 4, 8)}
for tp, e in tp_est.items():
    print(f"tp={tp}: weights {GB(e.weight_bytes, 2)} per GPU, "
          f"KV {e.kv_bytes_per_token:,} B per token per GPU")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s5_norm = f"{tp_est[8].weight_parts['norm'] / 1e6:.1f} MB"
s5_off = f"{pct(tp_est[8].weight_bytes, tp_est[1].weight_bytes / 8)}"
s5_kv = f"{m.num_kv_heads}"

# %% [markdown]
# The RMSNorm weights ({eval}`s5_norm`) are copied on every GPU, and the vocabulary rows round up:
# {eval}`s5_off` over an even split at tp 8. The cache splits exactly, each GPU running whole KV
# heads; memlib refuses a tp that does not divide the {eval}`s5_kv` KV heads (vLLM would replicate).

# %% [markdown]
# ### Step 6 · 2 × A100 80GB: how many chats fit
#
# ✏️ **Back of the envelope.** Per GPU: 85 GB − 70.5 GB of weights − 0.5 GB context − 0.25 GB
# prefill chunk − 5% headroom (~3.6 GB) ≈ **10 GB**, ÷ 1.34 GB per chat per GPU ≈ **7 chats**. fp8
# weights (~36 GB per GPU): ≈ **32**; plus an fp8 cache: ≈ **65**.

# %% tags=["nbval-check-output"]
# memlib.max_batch: the largest batch memlib.fits() each GPU (peak + context + 5%)
a100_rows = {(k, kv): chats(A100, 2, f, kv)
             for k, f in FORMATS.items() for kv in ("bf16", "fp8")}
n_bf16 = a100_rows[("bf16", "bf16")]
for k in FORMATS:
    print(f"weights {k:>10}: {a100_rows[(k, 'bf16')]:>3} chats with a bf16 cache, "
          f"{a100_rows[(k, 'fp8')]:>3} with fp8")
chunked = estimate_inference(m, 7, CTX, weights="bf16", tp=2, prefill_tokens=CHUNK_A100)
whole = estimate_inference(m, 7, CTX, weights="bf16", tp=2)   # 7 prompts at once
print(f"prefill workspace per GPU: {GB(chunked.activation_bytes, 2)} in "
      f"{CHUNK_A100:,}-token chunks, {GB(whole.activation_bytes)} for 7 whole prompts")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s6_n, s6_fp8 = f"{n_bf16}", f"{a100_rows[('fp8', 'bf16')]}"
s6_int8 = f"{a100_rows[('int8', 'bf16')]}"
s6_fp8kv, s6_int4 = f"{a100_rows[('fp8', 'fp8')]}", f"{a100_rows[('int4 (AWQ)', 'fp8')]}"
s6_chunk, s6_whole = f"{GB(chunked.activation_bytes, 2)}", f"{GB(whole.activation_bytes)}"

# %% [markdown]
# bf16 weights leave room for only **{eval}`s6_n`** chats. A practitioner serves 8-bit weights:
# fp8 (weight-only W8A16 through vLLM's Marlin kernels, an A100 has no fp8 tensor cores) or int8
# W8A8 hold **{eval}`s6_fp8`** and **{eval}`s6_int8`**; an fp8 cache doubles it to
# **{eval}`s6_fp8kv`**; int4 AWQ with fp8 KV reaches {eval}`s6_int4`, at a larger quality cost. The
# pencil landed; it skipped the 16-bit embedding. Chunked prefill keeps the workspace at
# {eval}`s6_chunk`; prefilling 7 whole prompts would take {eval}`s6_whole`.

# %% [markdown]
# ### Step 7 · What vLLM's `gpu_memory_utilization` reserves
#
# ✏️ **Back of the envelope.** 0.9 × 85 GB ≈ 76.5 GB per GPU; minus 70.5 GB of weights and ~0.8 GB
# of profiled prefill and context ≈ **5 GB** of cache ÷ 1.34 GB ≈ **4 chats** in bf16.

# %% tags=["nbval-check-output"]
# memlib.serving: vLLM's determine_available_memory and "Maximum concurrency" log
budget = {k: vllm_kv_cache_budget_bytes(m, A100, weights=f, tp=2)
          for k, f in FORMATS.items()}
conc = {k: vllm_max_concurrency(m, A100, CTX, weights=f, tp=2)
        for k, f in FORMATS.items()}
for k in FORMATS:
    print(f"weights {k:>10}: KV budget {G(budget[k], 2)} per GPU, "
          f"concurrency {conc[k]:.2f}x")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s7_u, s7_b = f"{VLLM_GPU_MEMORY_UTILIZATION}", f"{G(budget['bf16'])}"
s7_c, s7_c8 = f"{conc['bf16']:.1f}", f"{conc['fp8']:.0f}"

# %% [markdown]
# With the default `gpu_memory_utilization` of {eval}`s7_u`, vLLM gives the cache **{eval}`s7_b`** per GPU in bf16
# and logs a maximum concurrency of **{eval}`s7_c`×** for 8k requests ({eval}`s6_n` by memlib's 5%
# headroom); with fp8 weights {eval}`s7_c8`×. On a tight fit the 10% it leaves is half the chats:
# read the startup log before promising a number, or raise the fraction to 0.95. vLLM's own log for
# the nearest published setup holds a little more than memlib counts (deep dive).

# %% [markdown]
# ### Step 8 · 8 × H100: one tp 8 group or two tp 4 replicas?
#
# ✏️ **Back of the envelope.** 8 × 85 GB = 680 GB; one copy of the weights (141 GB) and ~5 GB per
# GPU of overheads leave ≈ 500 GB ÷ 2.7 GB ≈ **185 chats**. Two replicas store the weights twice:
# 680 − 282 − 40 ≈ 360 GB ≈ **130 chats**.

# %% tags=["nbval-check-output"]
h100_rows = {}
for k, f, kv in (("bf16", "bf16", "bf16"), ("bf16", "bf16", "fp8"),
                 ("fp8", "fp8-block", "fp8")):
    # memlib.max_batch: one tp 8 group, or two tp 4 replicas
    h100_rows[(k, kv)] = (chats(H100, 8, f, kv), 2 * chats(H100, 4, f, kv))
    print(f"weights {k:>4}, KV {kv:>4}: tp 8 {h100_rows[(k, kv)][0]:>3} chats; "
          f"2 x tp 4 {h100_rows[(k, kv)][1]:>3}")
t8, t4 = h100_rows[("bf16", "bf16")]

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s8_t8, s8_t4 = f"{t8}", f"{t4}"
s8_w8, s8_w4 = f"{GB(tp_est[8].weight_bytes)}", f"{GB(tp_est[4].weight_bytes)}"
s8_fp8 = f"{min(h100_rows[('fp8', 'fp8')])}"

# %% [markdown]
# Memory says **one tp 8 group**: {eval}`s8_t8` chats against {eval}`s8_t4` in bf16, because the
# weights are stored once ({eval}`s8_w8` per GPU instead of {eval}`s8_w4`). What memory does not
# show: each tp 8 all-reduce crosses eight GPUs, and users report throughput that stops scaling
# beyond tp 4 (vLLM issue #8089); benchmark both. With fp8 weights and cache either layout holds
# {eval}`s8_fp8`+ chats, on native W8A8 kernels.

# %% [markdown]
# ### Step 9 · The decode speed limit
#
# ✏️ **Back of the envelope.** A decode step reads all the weights and every chat's cache. tp 8,
# one chat: 17.6 GB ÷ 3.35 TB/s ≈ 5.3 ms, **≈ 190 tokens/s**. At 185 chats each GPU reads 17.6 +
# 185 × 2.7 / 8 ≈ 80 GB per step ≈ 24 ms: **≈ 42 tokens/s per chat**, ≈ 7,800 in all.

# %% tags=["nbval-check-output"]
cases = {"A100 x2, 1 chat": (A100, 2, 1), f"A100 x2, {n_bf16} chats": (A100, 2, n_bf16),
         "H100 x8, 1 chat": (H100, 8, 1), f"H100 x8, {t8} chats": (H100, 8, t8)}
# memlib.serving.decode_bound: (weights + KV read per GPU) / bandwidth, or FLOPs / peak
dec = {k: decode_bound(m, g, n, CTX, weights="bf16", tp=tp)
       for k, (g, tp, n) in cases.items()}
for k, d in dec.items():
    print(f"{k:>18}: {GB(d.bytes_read)} per GPU per step, {d.step_s * 1e3:5.1f} ms, "
          f"<= {d.tokens_per_s_per_sequence:3.0f} tok/s per chat")
full8, one8 = dec[f"H100 x8, {t8} chats"], dec["H100 x8, 1 chat"]

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s9_one = f"{one8.tokens_per_s_per_sequence:.0f}"
s9_each = f"{full8.tokens_per_s_per_sequence:.0f}"
s9_all = f"{full8.tokens_per_s:,.0f}"
s9_a100 = f"{dec[f'A100 x2, {n_bf16} chats'].tokens_per_s_per_sequence:.0f}"
s9_bound, s9_ratio = f"{full8.bound}", f"{full8.compute_s / full8.memory_s:.0%}"
s9_ms = f"{full8.memory_s * 1e3:.0f} ms"

# %% [markdown]
# One chat alone on 8 × H100 decodes at most **{eval}`s9_one` tokens/s**; with {eval}`s8_t8` chats,
# **{eval}`s9_each` each, {eval}`s9_all` in all**; 2 × A100 full: {eval}`s9_a100` each. Every case
# is {eval}`s9_bound`-bound (the arithmetic takes {eval}`s9_ratio` of the read time). A full GPU
# reads about its whole memory per step ({eval}`s9_ms` here), so smaller formats buy more chats,
# not faster ones. Left out: all-reduces, launches, and a real bandwidth use (MBU) of 50-80%.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Charts · 图
#
# **Takeaway: on 2 × A100 in bf16 the cache is a sliver; smaller weights hand the room to chats.**
# Per-GPU memory at the largest batch that fits (`memlib.viz.breakdown_bars`, linear scale).

# %% tags=["nbval-check-output"]
setups = {"A100 bf16": (A100, 2, "bf16", "bf16"),
          "A100 fp8": (A100, 2, "fp8-block", "bf16"),
          "A100 fp8+KV8": (A100, 2, "fp8-block", "fp8"),
          "H100 tp8": (H100, 8, "bf16", "bf16"), "H100 tp4": (H100, 4, "bf16", "bf16"),
          "H100 fp8+KV8": (H100, 8, "fp8-block", "fp8")}
# memlib.estimate_inference at the largest batch (memlib.max_batch)
at_max = {lab: estimate_inference(m, max(chats(g, tp, w, kv), 1), CTX, weights=w,
                                  kv_cache=kv, tp=tp,
                                  prefill_tokens=vllm_default_max_num_batched_tokens(g))
          for lab, (g, tp, w, kv) in setups.items()}
for gpu in ("A100", "H100"):
    row = [f"{k} {e.setup.batch}" for k, e in at_max.items() if gpu in k]
    print("chats:", ", ".join(row))

# %% jupyter={"source_hidden": true} tags=["hide-input"]
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 3.4))
breakdown_bars({k: v for k, v in at_max.items() if k.startswith("A100")}, gpu=A100, ax=ax1,
               title="2 × A100 80GB (tp 2), per GPU")
breakdown_bars({k: v for k, v in at_max.items() if k.startswith("H100")}, gpu=H100, ax=ax2,
               title="8 × H100 80GB, per GPU")
ax1.get_legend().remove()
plt.tight_layout()
plt.show()

# %% [markdown]
# **Takeaway: chats halve each time the context doubles; at 128k eight H100s hold about a dozen in
# bf16.** Llama-3.1-70B (the same shapes, a 128k window), log-log lines.

# %% tags=["nbval-check-output"]
m31 = get_model("llama-3.1-70b")
contexts = [2**k for k in range(10, 18)]
sweep_setups = {"8×H100 bf16": (H100, 8, "bf16", "bf16"),
                "8×H100 fp8+KV8": (H100, 8, "fp8-block", "fp8"),
                "2×A100 fp8+KV8": (A100, 2, "fp8-block", "fp8"),
                "2×A100 bf16": (A100, 2, "bf16", "bf16")}
by_context = {lab: [chats(g, tp, w, kv, context=c, model=m31) for c in contexts]
              for lab, (g, tp, w, kv) in sweep_setups.items()}   # memlib.max_batch
for lab, v in by_context.items():
    print(f"{lab:>15}: {v[0]:>5} chats at 1k, {v[3]:>4} at 8k, {v[-1]:>3} at 128k")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
fig, ax = plt.subplots(figsize=(7, 3.4))
count_sweep(contexts, {k: [max(v, 0.5) for v in vals] for k, vals in by_context.items()}, ax=ax,
            logx=True, logy=True, xlabel="context per chat (tokens)",
            ylabel="concurrent chats", title="Llama-3.1-70B: chats that fit (0 drawn at 0.5)")
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. Playground · 动手试
#
# Try: weights `fp8-block`, then KV cache `fp8`, and watch the chats double; GPU `h100-80gb` × 8;
# context 131072 with `llama-3.1-70b`; lower `gpu_memory_utilization` on the A100s.

# %%
ServingPlayground(model=MODEL, gpu=A100, tp=2)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8. Follow-up questions · 追问
#
# ### 追问 1 · TTFT, TPOT, throughput, QPS, p99: where does memory come in?

# %% tags=["nbval-check-output"]
AVG, QPS, TTFT = 2048, 5.0, 0.5   # assumed: 2k-token chats, 5 req/s, 0.5 s to 1st token
n_avg = chats(H100, 8, "bf16", context=AVG)                            # memlib.max_batch
tpot = decode_bound(m, H100, n_avg, AVG, weights="bf16", tp=8).step_s  # shortest TPOT
latency = TTFT + REPLY * tpot                      # each request's time in the server
need = littles_law_concurrency(QPS, latency)       # memlib.serving: L = lambda x W
most = littles_law_arrival_rate(n_avg, latency)    # memlib.cost.conventions: L / W
print(f"{n_avg} chats of {AVG:,} fit; TPOT >= {tpot * 1e3:.0f} ms; "
      f"latency {latency:.1f} s")
print(f"{QPS:g} req/s need {need:.0f} in flight; memory caps it at {most:.1f} req/s")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
f1_n, f1_tpot, f1_lat = f"{n_avg}", f"{tpot * 1e3:.0f} ms", f"{latency:.1f} s"
f1_need, f1_most, f1_qps = f"{need:.0f}", f"{most:.1f}", f"{QPS:g}"
f1_reply = f"{REPLY}"

# %% [markdown]
# **TTFT** is queueing plus prefill; **TPOT** (inter-token latency) is one decode step, which grows
# with the batch because each step reads every chat's cache; **throughput** is tokens/s over all
# chats; **QPS** requests/s; **p99** the tail, where queueing and preemptions show. Memory enters
# through the batch: on 8 × H100, {eval}`f1_n` chats of 2k fit, TPOT ≥ {eval}`f1_tpot`, so a
# {eval}`f1_reply`-token reply stays ≈ {eval}`f1_lat`. Little's law, concurrency = QPS × latency:
# {eval}`f1_qps` req/s need {eval}`f1_need` in flight; the cache caps the server at
# **{eval}`f1_most` req/s**. Past that, queues grow and p99 TTFT explodes.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### 追问 2 · Continuous batching and chunked prefill: what do they change?
#
# *Static* batching runs a fixed batch until its longest reply ends: finished slots idle and each
# request reserves its maximum length. *Continuous* (iteration-level) batching, from Orca (Yu et
# al., OSDI '22), admits and retires requests at every step, so the cache holds only live chats.
# *Chunked prefill* (Sarathi-Serve, Agrawal et al. 2024) cuts a long prompt into chunks (vLLM:
# {eval}`s6_chunk` of workspace instead of {eval}`s6_whole`) and runs each chunk beside the decode
# tokens of the running chats: their inter-token latency stays flat instead of stalling behind a
# whole 8k prefill, while that prompt's TTFT grows by a few steps. The chunk size is the dial.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### 追问 3 · Speculative decoding: how much faster, and what memory?

# %% tags=["nbval-check-output"]
ALPHA, GAMMA = 0.8, 4                 # assumed: acceptance rate, draft tokens per step
draft = get_model("llama-3.1-8b")     # a typical draft for Llama-3.x-70B
per_step = speculative_expected_tokens(ALPHA, GAMMA)   # memlib.serving: Leviathan eq. 1
c = (decode_bound(draft, H100, 1, CTX, weights="bf16", tp=8).step_s
     / decode_bound(m, H100, 1, CTX, weights="bf16", tp=8).step_s)  # draft / target step
gain = speculative_speedup(ALPHA, GAMMA, c)            # Leviathan Theorem 3.8
draft_w = estimate_inference(draft, 1, CTX, weights="bf16", tp=8).weight_bytes
draft_kv = kv_bytes_per_token(draft, tp=8) / kv_bytes_per_token(m, tp=8)
print(f"{per_step:.2f} tokens per target step; draft step = {c:.2f} target; {gain:.2f}x")
print(f"draft: {GB(draft_w, 2)} per GPU; KV per token {draft_kv:.0%} of the target's")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
f3_tok, f3_c, f3_gain = f"{per_step:.2f}", f"{c:.2f}", f"{gain:.1f}"
f3_w, f3_kv = f"{GB(draft_w)}", f"{draft_kv:.0%}"
f3_chats = f"{t8 / (1 + draft_kv):.0f}"

# %% [markdown]
# A draft proposes γ tokens; the target checks all of them in one forward and keeps the accepted
# prefix plus one token of its own, so the output distribution is unchanged. With acceptance rate α
# the target yields (1 − α^(γ+1)) / (1 − α) tokens per step (Leviathan et al. 2023, eq. 1):
# **{eval}`f3_tok`** at α = 0.8, γ = 4. A draft step costs {eval}`f3_c` of a target step (both
# memory-bound), so the speed-up is ≈ **{eval}`f3_gain`×** at small batch. The memory: the draft's
# weights ({eval}`f3_w` per GPU) and its cache, {eval}`f3_kv` of the target's per token: about
# {eval}`f3_chats` chats instead of {eval}`s8_t8`. At a full batch decode nears compute-bound and
# the gain shrinks.
#
# More follow-ups (vLLM's scheduler and preemption, SGLang's RadixAttention, TensorRT-LLM and TGI,
# prefix caching, kernel fusion and CUDA graphs, MHA to GQA, 128k context) are on the
# [deep-dive page](04_serving_capacity_deep_dive.ipynb).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9. Pitfalls · 避坑
#
# - Query heads (or the hidden size) in the KV formula: {eval}`s4_mha`× too much. Use
#   `num_key_value_heads`.
# - "140 GB" as the whole story: at {eval}`s8_t8` chats of 8k the cache is over three times the weights.
# - Quantized checkpoints keep the embedding and head 16-bit: int4 is {eval}`s2_int4` over 35 GB.
# - Mixing GB and GiB: an "80GB" card shows {eval}`s1_a100` in torch.
# - Assuming vLLM uses the whole card: `gpu_memory_utilization` caps weights, workspace and cache together.
# - Expecting fp8 speed on an A100: no fp8 tensor cores; fp8 runs weight-only (W8A16).
# - Picking tp by memory alone: tp 8 holds more chats, but benchmark it against two tp 4 replicas.
# - Promising speed from the roofline: real bandwidth use is 50-80%, and prefills interleave.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10. Deep dive (skip on first read) · 深入（可跳过）
#
# On its own page, [04 · deep dive](04_serving_capacity_deep_dive.ipynb): how vLLM and SGLang work
# inside, prefix caching, kernel fusion and CUDA graphs, the fact-check of circulating serving
# claims, every layout's ledger, and the decode roofline against the batch.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 11. Further reading · 延伸阅读
#
# - Kwon et al. 2023, *Efficient Memory Management for Large Language Model Serving with PagedAttention* (SOSP), [arXiv:2309.06180](https://arxiv.org/abs/2309.06180)
# - Yu et al. 2022, *Orca: A Distributed Serving System for Transformer-Based Generative Models* (OSDI), [usenix.org](https://www.usenix.org/conference/osdi22/presentation/yu)
# - Agrawal et al. 2024, *Taming Throughput-Latency Tradeoff in LLM Inference with Sarathi-Serve* (OSDI), [arXiv:2403.02310](https://arxiv.org/abs/2403.02310)
# - Zheng et al. 2024, *SGLang: Efficient Execution of Structured Language Model Programs* (RadixAttention), [arXiv:2312.07104](https://arxiv.org/abs/2312.07104)
# - Ainslie et al. 2023, *GQA: Training Generalized Multi-Query Transformer Models from Multi-Head Checkpoints*, [arXiv:2305.13245](https://arxiv.org/abs/2305.13245); Shazeer 2019, *Fast Transformer Decoding: One Write-Head is All You Need* (MQA), [arXiv:1911.02150](https://arxiv.org/abs/1911.02150)
# - Leviathan et al. 2023, *Fast Inference from Transformers via Speculative Decoding*, [arXiv:2211.17192](https://arxiv.org/abs/2211.17192)
# - Pope et al. 2022, *Efficiently Scaling Transformer Inference*, [arXiv:2211.05102](https://arxiv.org/abs/2211.05102)
# - Frantar et al. 2022, *GPTQ*, [arXiv:2210.17323](https://arxiv.org/abs/2210.17323); Lin et al. 2023, *AWQ*, [arXiv:2306.00978](https://arxiv.org/abs/2306.00978)
# - vLLM docs: [engine arguments](https://docs.vllm.ai/en/stable/configuration/engine_args/), [quantized KV cache](https://docs.vllm.ai/en/stable/features/quantization/quantized_kvcache/)
# - Databricks, *LLM Inference Performance Engineering: Best Practices*, [databricks.com/blog](https://www.databricks.com/blog/llm-inference-performance-engineering-best-practices)
