# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,slideshow,jupyter,-user_expressions
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
from memlib.learn.chapters.ch04 import A100, CTX, FORMATS, H100, MODEL
from memlib.learn.kit import GB, G
from memlib import estimate_inference, get_gpu, get_model, max_batch
from memlib.hardware.fit import usable_bytes
from memlib.serving.inference import (gqa_kv_bytes_per_token, kv_bytes_per_token, kv_cache_bytes,
                              quantized_linear_bytes)
from memlib.serving import (VLLM_GPU_MEMORY_UTILIZATION, concurrency_at_rate, decode_bound,
                            littles_law_concurrency, request_rate_bound, token_forwards,
                            vllm_default_max_num_batched_tokens, vllm_kv_cache_budget_bytes,
                            vllm_max_concurrency)
from memlib.learn.playgrounds.serving import ServingPlayground
from memlib.units import fmt_count
from memlib.learn.viz import breakdown_bars, count_sweep


CHUNK_A100 = vllm_default_max_num_batched_tokens(A100)  # vLLM's prefill chunk (2,048)
CHUNK = {A100: CHUNK_A100, H100: vllm_default_max_num_batched_tokens(H100)}


def r2(x):
    """Round half up to two significant figures, for sentences said aloud (185 -> 190)."""
    if x < 10:
        return f"{x:.0f}"
    step = 10 ** (len(str(int(x))) - 2)
    return f"{int(x / step + 0.5) * step:,}"


def pct(a, b):
    """How far a is from b, signed, in %."""
    return f"{(a / b - 1) * 100:+.1f}%"


# the charts' setups: (GPU, tp, weights, KV cache)
BARS = {"A100 bf16": (A100, 2, "bf16", "bf16"), "A100 fp8": (A100, 2, "fp8-block", "bf16"),
        "A100 fp8+KV8": (A100, 2, "fp8-block", "fp8"), "H100 tp8": (H100, 8, "bf16", "bf16"),
        "H100 tp4": (H100, 4, "bf16", "bf16"), "H100 fp8+KV8": (H100, 8, "fp8-block", "fp8")}
SWEEP = {"8×H100 bf16": (H100, 8, "bf16", "bf16"), "8×H100 fp8+KV8": (H100, 8, "fp8-block", "fp8"),
         "2×A100 fp8+KV8": (A100, 2, "fp8-block", "fp8"), "2×A100 bf16": (A100, 2, "bf16", "bf16")}


def chats(gpu, tp, weights, kv_cache="bf16", context=CTX, model=MODEL):
    """memlib.max_batch: chats of `context` tokens one tensor-parallel group holds, with
    vLLM's default prefill chunk for that GPU."""
    return max_batch(model, gpu, context, weights=weights, kv_cache=kv_cache, tp=tp,
                     prefill_tokens=vllm_default_max_num_batched_tokens(gpu)).value


# The figures the 30-second answer quotes; steps 3, 4 and 6 derive each one.
m = get_model(MODEL)
a100, h100 = get_gpu(A100), get_gpu(H100)
cap_a100 = usable_bytes(a100)   # what torch sees of an A100 80GB
a_kv = f"{r2(kv_bytes_per_token(m) / 2**10)}"
a_chat = f"{G(kv_cache_bytes(m, 1, CTX))}"
a_w = f"{G(estimate_inference(m, weights='bf16').weight_bytes, 0)}"
a_a100, a_h100 = f"{r2(chats(A100, 2, 'bf16'))}", f"{r2(chats(H100, 8, 'bf16'))}"
# what vLLM itself admits on the two A100s: its startup log's maximum concurrency (step 5)
a_v09, a_v95 = (f"{vllm_max_concurrency(m, A100, CTX, weights='bf16', tp=2, gpu_memory_utilization=u):.0f}"
                for u in (VLLM_GPU_MEMORY_UTILIZATION, 0.95))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. The 30-second answer · 30 秒回答
#
# > **EN** Serving memory is weights plus KV cache; the cache decides how many users fit.
# > Llama-3-70B caches ≈ {eval}`a_kv` KiB per token, {eval}`a_chat` per 8k chat. After {eval}`a_w`
# > of bf16 weights, two A100s hold {eval}`a_v09` chats at vLLM's default memory fraction,
# > {eval}`a_v95` at 95%; eight H100s about {eval}`a_h100`. Levers: fp8 or int4 weights, an fp8 cache,
# > wider tensor parallelism. Caveat: that is worst-case, every chat at full length; real chats are
# > shorter, so servers admit more, preempting when full.
#
# > **中文** 推理显存 = 权重 + KV cache，能服务多少用户由 KV cache 决定。一个 8k 对话要 {eval}`a_chat`
# > 的 KV cache；两张 A100 放下 {eval}`a_w` 的 bf16 权重后，按 vLLM 默认显存比例只能放约 {eval}`a_v09`
# > 个对话，放开到 95% 约 {eval}`a_v95` 个；八张 H100 约 {eval}`a_h100` 个。手段：fp8 或 int4 权重、fp8
# > KV cache、更多卡张量并行。注意：这是最坏情况，每个对话都到满长度；实际更短，服务器会多接纳，显存不够时再抢占。
#
# The long answer follows: every figure above is derived in section 5.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. What the interviewer is probing · 考察意图
#
# - **The KV cache as mechanism and bill**: why decode keeps K and V (not Q); bytes per token with GQA.
# - **Levers**: precision and tensor parallelism on weights and cache; replicas copy the weights.
# - **The server**: vLLM's reservation, continuous batching, chunked prefill, paged blocks.
# - **Memory and compute to QPS**: the cache caps the batch and the batch sets TPOT; the request rate
#   is the smaller of the cache's bound (Little's law) and the FLOPs' bound.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Words we use · 术语
#
# - **Prefill / decode**: the prompt in one forward / then one token per step per chat. **KV cache**:
#   every past token's keys and values, per layer. **MHA / MQA / GQA**: one K/V head per query head /
#   one for all / one per group (Llama-3-70B: 64 query heads, 8 KV heads).
# - **Continuous batching**: the batch changes every step; **chunked prefill**: prompts cut into
#   chunks; **PagedAttention**: the cache in 16-token blocks; **`gpu_memory_utilization`**: the
#   share of the GPU vLLM takes (0.9); **tp / replica**: matrices split over GPUs / a whole copy.
# - **bf16 / fp8 / int8 / int4 (AWQ)**: 2, 1, 1, ½ byte per weight, plus scales.
# - **TTFT / TPOT (ITL) / QPS / p99**: time to first token / per output token / requests per second /
#   the latency 99% of requests beat. **Memory-bound**: a step takes ≥ bytes read ÷ HBM bandwidth.
# - **MFU / MBU**: model FLOPs utilisation, the model's FLOPs per second over the GPUs' dense peak;
#   model bandwidth utilisation, the bytes a decode step must read per second over the peak HBM
#   bandwidth (Databricks 2023). **Little's law**: requests in flight = arrival rate × time in the server.
# - **GB / GiB**: 10⁹ / 2³⁰ bytes; an "80GB" GPU has 80 GiB.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. The answer, step by step · 推导
#
# ### Step 1 · Weights by precision
#
# ✏️ **Back of the envelope.** 70B × 2 bytes = **140 GB** in bf16; × 1 byte = **70 GB** in fp8
# or int8; × ½ byte = **35 GB** in int4. An "80GB" card is 80 GiB ≈ 86 GB: bf16 needs two.

# %% tags=["nbval-check-output"]
numel = m.hidden_size * m.intermediate_size   # one MLP matrix, 8192 -> 28672
# memlib.serving.inference.quantized_linear_bytes: every buffer (weights, scales, zeros)
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
s2_emb, s1_p = f"{GB(emb)}", f"{fmt_count(m.num_params)}"
s2_fp8 = f"{pct(weights['fp8'].weight_bytes, 70e9)}"
s2_int4 = f"{pct(weights['int4 (AWQ)'].weight_bytes, 35e9)}"
s2_bf16 = f"{abs(weights['bf16'].weight_bytes / 140e9 - 1):.1%}"

# %% [markdown]
# *What the pencil left out:* "70B" is {eval}`s1_p` parameters, and the embedding and the output
# head ({eval}`s2_emb` together) stay 16-bit in every quantized checkpoint; int8 adds a 4-byte
# scale per output row, int4 AWQ a 16-bit scale and a 4-bit zero per group of 128. So fp8 is
# {eval}`s2_fp8` and int4 {eval}`s2_int4` above the pencil; bf16 is within {eval}`s2_bf16`.

# %% [markdown]
# ### Step 2 · The KV cache: prefill, then decode
#
# ✏️ **Back of the envelope.** A 1,000-token prompt, a 500-token reply. Without a cache, step t
# reruns all 1,000 + t − 1 tokens: 500 × 1,000 + 500²/2 ≈ **625k** token passes, O(s²). With it:
# 1,000 once (prefill) + 1 per later step ≈ **1.5k**, O(s), about 400× fewer.

# %% tags=["nbval-check-output"]
PROMPT, REPLY = 1000, 500
# memlib.serving.token_forwards: positions whose q, k, v (and MLP) are computed
work = {c: token_forwards(PROMPT, REPLY, kv_cache=c) for c in (True, False)}
held = kv_cache_bytes(m, 1, PROMPT + REPLY)   # memlib.serving.inference.kv_cache_bytes: the price
print(f"token passes: {work[True]:,} with a cache, {work[False]:,} without; "
      f"cache {GB(held, 2)}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s3_with, s3_without = f"{work[True]:,}", f"{work[False]:,}"
s3_x, s3_held = f"{work[False] / work[True]:.0f}", f"{GB(held, 2)}"

# %% [markdown]
# **Prefill** runs the prompt in one forward, computing every token's q, k, v and keeping k and v.
# Each **decode** step feeds only the newest token: its k and v are appended and its q attends over
# the whole cache. A past token's query only produced that token's own output, long done, so **Q is
# never cached**. memlib: {eval}`s3_with` token passes instead of {eval}`s3_without`
# ({eval}`s3_x`× fewer); the bill is {eval}`s3_held` of memory for this one chat.

# %% [markdown]
# ### Step 3 · One token's cache: MHA, MQA, GQA
#
# ✏️ **Back of the envelope.** Per token: 2 (K, V) × 80 layers × **8 KV heads** × 128 × 2 bytes
# = **327,680 B ≈ 0.33 MB**; an 8k chat ≈ **2.7 GB**. MHA (64 KV heads) would be 8× that, 2.6 MB
# per token; MQA (1 KV head) 8× less, 41 KB.

# %% tags=["nbval-check-output"]
heads = {"MHA": m.num_heads, "GQA": m.num_kv_heads, "MQA": 1}
# memlib.serving.inference.gqa_kv_bytes_per_token: 2 x layers x kv_heads x head_dim x bytes
per_tok = {k: gqa_kv_bytes_per_token(m.num_layers, h, m.head_dim)
           for k, h in heads.items()}
kv_tok = kv_bytes_per_token(m)                # memlib.serving.inference.kv_bytes_per_token (bf16)
per_chat = kv_cache_bytes(m, 1, CTX)          # one full 8k chat
for k, v in per_tok.items():
    print(f"{k} ({heads[k]:>2} KV heads): {v:>9,} B per token, "
          f"{GB(v * CTX, 2)} per 8k chat")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s4_tok, s4_chat = f"{kv_tok:,}", f"{GB(per_chat, 2)}"
s4_mha = f"{per_tok['MHA'] // kv_tok}"
s4_mqa = f"{kv_tok // per_tok['MQA']}"

# %% [markdown]
# memlib: **{eval}`s4_tok` bytes per token**, **{eval}`s4_chat` per 8k chat**; the pencil is exact.
# Counting the query heads gives {eval}`s4_mha`× too much, the commonest error. MQA saves another
# {eval}`s4_mqa`× at some quality. An MHA checkpoint converts to GQA by mean-pooling each group's K
# and V heads, then ~5% more pre-training (Ainslie et al. 2023, Sec. 2.1).

# %% [markdown]
# ### Step 4 · 2 × A100 80GB: how many chats fit
#
# ✏️ **Back of the envelope.** Tensor parallelism (tp 2) splits the weights and the 8 KV heads:
# per GPU 85 GB − 70.5 GB of weights − 0.5 GB context − 0.25 GB prefill chunk − 5% headroom ≈
# **10 GB**, ÷ 1.34 GB per chat ≈ **7 chats**. fp8 weights: ≈ **32**; plus an fp8 cache: ≈ **65**.

# %% tags=["nbval-check-output"]
cap_h100, mib = usable_bytes(h100), h100.reported_total_mib   # memlib.hardware.fit.usable_bytes
print(f"torch sees {G(cap_a100, 2)} of an A100, {G(cap_h100, 2)} of an H100 "
      f"(nvidia-smi: {mib:,} MiB = {mib / 1024:.1f} GiB)")
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
s1_a100 = f"{G(cap_a100, 2)}"

# %% [markdown]
# bf16 weights leave room for only **{eval}`s6_n`** chats. A practitioner serves 8-bit weights:
# fp8 (weight-only W8A16 on an A100, which has no fp8 tensor cores) or int8 W8A8 hold
# **{eval}`s6_fp8`** and **{eval}`s6_int8`**; an fp8 cache doubles that to **{eval}`s6_fp8kv`**;
# int4 AWQ with fp8 KV reaches {eval}`s6_int4`, at a larger quality cost. The pencil landed.

# %% [markdown]
# ### Step 5 · What vLLM's `gpu_memory_utilization` reserves
#
# ✏️ **Back of the envelope.** 0.9 × 85 GB ≈ 76.5 GB per GPU; minus 70.5 GB of weights, ~1.3 GB
# for the profile run (its sampler sorts 256 dummy rows × 128k logits at ~38 B each) and 0.5 GB of
# context ≈ **4 GB** of cache ÷ 1.34 GB ≈ **3 chats** in bf16.

# %% tags=["nbval-check-output"]
# memlib.serving: vLLM's determine_available_memory and "Maximum concurrency" log
budget = {k: vllm_kv_cache_budget_bytes(m, A100, weights=FORMATS[k], tp=2)
          for k in ("bf16", "fp8")}
conc = {k: vllm_max_concurrency(m, A100, CTX, weights=FORMATS[k], tp=2) for k in budget}
for k in ("bf16", "fp8"):
    print(f"weights {k}: KV budget {G(budget[k], 2)} per GPU, concurrency {conc[k]:.2f}x")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s7_u, s7_b = f"{VLLM_GPU_MEMORY_UTILIZATION}", f"{G(budget['bf16'])}"
s7_c, s7_c8 = f"{conc['bf16']:.1f}", f"{conc['fp8']:.0f}"

# %% [markdown]
# At its default {eval}`s7_u`, vLLM gives the cache **{eval}`s7_b`** per GPU in bf16. Its startup log
# then reports a maximum concurrency of **{eval}`s7_c`×** for 8k requests, against {eval}`s6_n` chats by
# memlib's 5% headroom; with fp8 weights it reports {eval}`s7_c8`×. On a tight fit the 10% it leaves is half the chats: read the
# startup log before promising a number, or raise the fraction to 0.95.

# %% [markdown]
# ### Step 6 · 8 × H100: one tp 8 group or two tp 4 replicas?
#
# ✏️ **Back of the envelope.** tp 8: 17.6 GB of weights per GPU. 680 GB − 141 GB − ~40 GB of
# overheads ≈ 500 GB ÷ 2.7 GB ≈ **185 chats**. Two tp 4 replicas store the weights twice:
# 680 − 282 − 40 ≈ 360 GB ≈ **130**.

# %% tags=["nbval-check-output"]
# memlib.estimate_inference(tp=...): each GPU's shard of every tensor
tp_est = {tp: estimate_inference(m, 1, CTX, weights="bf16", tp=tp) for tp in (1, 4, 8)}
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
s5_off = f"{pct(tp_est[8].weight_bytes, tp_est[1].weight_bytes / 8)}"

# %% [markdown]
# Memory says **one tp 8 group**: {eval}`s8_t8` chats against {eval}`s8_t4` for two replicas. The weights
# are stored once, {eval}`s8_w8` per GPU instead of {eval}`s8_w4` (norms copied on every GPU add {eval}`s5_off`).
# But each tp 8 all-reduce crosses eight GPUs, and users report throughput that stops scaling
# beyond tp 4 (vLLM issue #8089): benchmark both. fp8 weights and cache: {eval}`s8_fp8`+ either way.

# %% [markdown]
# ### Step 7 · The decode speed limit
#
# ✏️ **Back of the envelope.** A decode step reads all the weights and every chat's cache: one
# chat on tp 8, 17.6 GB ÷ 3.35 TB/s ≈ 5.3 ms, **≈ 190 tokens/s**; 185 chats, 17.6 + 185 × 2.7 / 8
# ≈ 80 GB per GPU ≈ 24 ms: **≈ 42 tokens/s per chat**.

# %% tags=["nbval-check-output"]
cases = {f"A100 x2, {n_bf16} chats": (A100, 2, n_bf16),
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
# At most **{eval}`s9_one` tokens/s** for one chat on 8 × H100; **{eval}`s9_each` each,
# {eval}`s9_all` in all** at {eval}`s8_t8` chats; {eval}`s9_a100` on a full 2 × A100. All
# {eval}`s9_bound`-bound (arithmetic {eval}`s9_ratio` of the read time): a full GPU reads about its
# whole memory per step ({eval}`s9_ms`), so smaller formats buy more chats, not faster ones.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Charts · 图
#
# **Takeaway: on 2 × A100 in bf16 the cache is a sliver; smaller weights hand the room to chats.**
# Per GPU at the largest batch that fits (`memlib.learn.viz.breakdown_bars`, linear scale).

# %%
# memlib.estimate_inference at the largest batch memlib.max_batch finds
at_max = {lab: estimate_inference(m, max(chats(g, tp, w, kv), 1), CTX, weights=w,
                                  kv_cache=kv, tp=tp, prefill_tokens=CHUNK[g])
          for lab, (g, tp, w, kv) in BARS.items()}

# %% jupyter={"source_hidden": true} tags=["hide-input"]
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 2.8))
breakdown_bars({k: v for k, v in at_max.items() if k.startswith("A100")}, gpu=A100, ax=ax1,
               title="2 × A100 80GB (tp 2), per GPU")
breakdown_bars({k: v for k, v in at_max.items() if k.startswith("H100")}, gpu=H100, ax=ax2,
               title="8 × H100 80GB, per GPU")
ax1.get_legend().remove()
plt.tight_layout()
plt.show()

# %% [markdown]
# **Takeaway: chats halve each time the context doubles; at 128k eight H100s hold about a dozen
# in bf16.** Llama-3.1-70B (the same shapes, a 128k window), log-log lines.

# %%
contexts = [2**k for k in range(10, 18)]
by_context = {lab: [chats(g, tp, w, kv, context=c, model="llama-3.1-70b")  # memlib.max_batch
                    for c in contexts] for lab, (g, tp, w, kv) in SWEEP.items()}

# %% jupyter={"source_hidden": true} tags=["hide-input"]
fig, ax = plt.subplots(figsize=(7, 2.6))
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
#
# ✏️ **Back of the envelope.** Two limits, the smaller binds. *Memory:* ~740 chats of 2k fit; each
# stays ~12 s (500 tokens × 24 ms), so ≤ 740 / 12 ≈ **60 req/s**. *Compute:* a request of 2k tokens
# costs 2 × 70e9 × 2k ≈ 2.9e14 FLOP; 8 × 1e15 FLOP/s ÷ 2.9e14 ≈ **27 req/s** at 100% of peak, ~14 at 50%.

# %% tags=["nbval-check-output"]
AVG, PROMPT_F1 = 2048, 2048 - REPLY   # assumed: 2k-token requests, 1,548 prompt + 500 reply tokens
QPS, TTFT, MFU = 5.0, 0.5, 0.5        # assumed: 5 req/s offered, 0.5 s to first token, 50% MFU
# memlib.serving.request_rate_bound: min(cache batch / latency at that batch, peak x MFU / FLOPs)
rate = request_rate_bound(m, H100, PROMPT_F1, REPLY, TTFT, mfu=MFU, weights="bf16", tp=8)
peak = request_rate_bound(m, H100, PROMPT_F1, REPLY, TTFT, mfu=1.0, weights="bf16", tp=8)
# memlib.serving.concurrency_at_rate: Little's law with TPOT at the batch actually in flight
load = concurrency_at_rate(m, H100, QPS, PROMPT_F1, REPLY, TTFT, weights="bf16", tp=8)
naive = littles_law_concurrency(QPS, rate.latency_s)   # the full-batch latency: wrong at 5 req/s
print(f"memory {rate.memory_rate:.1f} req/s ({rate.batch} chats), compute {rate.compute_rate:.1f} "
      f"at {MFU:.0%} MFU ({peak.compute_rate:.1f} at peak): {rate.bound} binds")
print(f"{QPS:g} req/s: {load.in_flight:.1f} in flight, TPOT {load.tpot_s * 1e3:.1f} ms "
      f"(full-batch latency would claim {naive:.0f})")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
f1_n, f1_tpot, f1_lat = f"{rate.batch}", f"{rate.tpot_s * 1e3:.0f} ms", f"{rate.latency_s:.1f} s"
f1_most, f1_qps, f1_reply = f"{rate.memory_rate:.0f}", f"{QPS:g}", f"{REPLY}"
f1_flops, f1_mfu = f"{rate.flops_per_request / 1e14:.1f} × 10¹⁴", f"{MFU:.0%}"
f1_comp, f1_peak, f1_bound = f"{rate.compute_rate:.0f}", f"{peak.compute_rate:.0f}", f"{rate.bound}"
f1_need, f1_tpot5, f1_naive = f"{load.in_flight:.0f}", f"{load.tpot_s * 1e3:.1f} ms", f"{naive:.0f}"
f1_lat5, f1_x = f"{load.latency_s:.1f} s", f"{rate.memory_rate / rate.compute_rate:.0f}"

# %% [markdown]
# **TTFT** is queueing plus prefill; **TPOT** (inter-token latency) one decode step, longer as the
# batch grows (each step reads every cache); **p99** is the tail, where queueing and preemptions show.
# The request rate a server sustains is the smaller of two bounds (2k-token requests with a
# {eval}`f1_reply`-token reply, 8 × H100, bf16):
#
# | bound | what it counts | req/s |
# |---|---|---|
# | memory | {eval}`f1_n` chats fit; at that batch TPOT ≥ {eval}`f1_tpot`, so each stays {eval}`f1_lat` (Little's law) | {eval}`f1_most` |
# | compute, at peak | {eval}`f1_flops` FLOP per request (2N per token + attention) | {eval}`f1_peak` |
# | compute, at {eval}`f1_mfu` MFU | the same FLOPs at an assumed utilisation | {eval}`f1_comp` |
#
# **The {eval}`f1_bound` bound binds**: the FLOPs of prefill and decode run out long before the cache
# does: quoting the cache's bound as the server's rate overstates it {eval}`f1_x`×. Little's law also needs
# the latency *at the load*. At {eval}`f1_qps` req/s about **{eval}`f1_need` chats** are in flight; at
# that batch TPOT is {eval}`f1_tpot5`, so a request stays {eval}`f1_lat5`. The full-batch latency would
# claim {eval}`f1_naive` in flight. Past the compute bound, queues and p99 TTFT grow without limit.

# %% [markdown]
# More follow-ups (continuous batching and chunked prefill, speculative decoding, vLLM's scheduler and preemption, SGLang, TensorRT-LLM and TGI, prefix caching,
# kernel fusion and CUDA graphs, MHA to GQA, 128k) are on the [deep-dive page](04_serving_capacity_deep_dive.ipynb).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9. Pitfalls · 避坑
#
# - Query heads (or the hidden size) in the KV formula: {eval}`s4_mha`× too much.
# - "140 GB" as the whole story: at {eval}`s8_t8` chats of 8k the cache is over three times the weights.
# - Quantized checkpoints keep the embedding and head 16-bit: int4 is {eval}`s2_int4` over 35 GB.
# - GB vs GiB: an "80GB" card shows {eval}`s1_a100` in torch; vLLM's 0.9 caps weights and cache together.
# - fp8 on an A100 runs weight-only (no fp8 tensor cores); the roofline is an upper bound (MBU 50-80%).

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
# - Leviathan et al. 2023, *Fast Inference from Transformers via Speculative Decoding*, [arXiv:2211.17192](https://arxiv.org/abs/2211.17192); Li et al. 2025, *EAGLE-3: Scaling up Inference Acceleration of Large Language Models via Training-Time Test*, [arXiv:2503.01840](https://arxiv.org/abs/2503.01840)
# - Pope et al. 2022, *Efficiently Scaling Transformer Inference*, [arXiv:2211.05102](https://arxiv.org/abs/2211.05102)
# - Frantar et al. 2022, *GPTQ*, [arXiv:2210.17323](https://arxiv.org/abs/2210.17323); Lin et al. 2023, *AWQ*, [arXiv:2306.00978](https://arxiv.org/abs/2306.00978)
# - vLLM docs: [engine arguments](https://docs.vllm.ai/en/stable/configuration/engine_args/), [quantized KV cache](https://docs.vllm.ai/en/stable/features/quantization/quantized_kvcache/)
# - Databricks, *LLM Inference Performance Engineering: Best Practices*, [databricks.com/blog](https://www.databricks.com/blog/llm-inference-performance-engineering-best-practices)
