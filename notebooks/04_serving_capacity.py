# ---
# jupyter:
#   jupytext:
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
# **You will be able to answer:** how many concurrent 8k-token chats Llama-3-70B serves on
# 2 × A100 80GB and on 8 × H100, in which weight and KV-cache format, with which
# tensor-parallel layout; what PagedAttention wastes, what vLLM's `gpu_memory_utilization`
# reserves, and how fast each chat can decode at best.
#
# **Reading time:** core path ~15 min (sections 1-9); section 10 is a deep dive you can skip.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
# %matplotlib inline
import matplotlib.pyplot as plt
from IPython.display import Markdown, display

import memlib
from memlib import estimate_inference, get_gpu, get_model, max_batch
from memlib.explain import markdown_table
from memlib.fit import fits, usable_bytes
from memlib.inference import gqa_kv_bytes_per_token, kv_bytes_per_token, kv_cache_bytes, quantized_linear_bytes
from memlib.serving import (VLLM_BLOCK_SIZE, VLLM_GPU_MEMORY_UTILIZATION, decode_bound, paged_kv_waste_bytes,
                            vllm_default_max_num_batched_tokens, vllm_kv_cache_budget_bytes, vllm_max_concurrency)
from memlib.serving_playground import ServingPlayground
from memlib.units import fmt_count, gib
from memlib.viz import breakdown_bars, count_sweep

MODEL = "llama-3-70b"
CTX = 8192  # the question's "8k-token chat": every chat may grow to 8,192 tokens (prompt + reply)
A100, H100 = "a100-80gb", "h100-80gb"
FORMATS = {"bf16": "bf16", "fp8": "fp8-block", "int8": "int8", "int4 (AWQ)": "int4-awq"}


def GB(n_bytes, digits=1):
    """GB (1e9), labelled."""
    return f"{n_bytes / 1e9:,.{digits}f} GB"


def G(n_bytes, digits=1):
    """GiB (2**30), labelled: what torch and nvidia-smi show."""
    return f"{gib(n_bytes):,.{digits}f} GiB"


def r2(x):
    """Round half up to two significant figures, for sentences said aloud (185 -> 190, 7 -> 7)."""
    if x < 10:
        return f"{x:.0f}"
    step = 10 ** (len(str(int(x))) - 2)
    return f"{int(x / step + 0.5) * step:,}"


def pct(a, b):
    """How far a is from b, signed, in %."""
    return f"{(a / b - 1) * 100:+.1f}%"


def chats(gpu, tp, weights, kv_cache="bf16", context=CTX, model=MODEL):
    """memlib.max_batch: concurrent chats of `context` tokens on one tensor-parallel group, with vLLM's
    default prefill chunk for that GPU."""
    return max_batch(model, gpu, context, weights=weights, kv_cache=kv_cache, tp=tp,
                     prefill_tokens=vllm_default_max_num_batched_tokens(gpu)).value


# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. The question · 问题
#
# > **「Llama-3-70B 在 2 张 A100 80GB 上能同时服务多少个 8k token 的对话？换成 8 张 H100 呢？」**
# >
# > *How many concurrent 8k-token chats can Llama-3-70B serve on 2 × A100 80GB, and on 8 × H100?*
#
# A chat here is one sequence that can grow to 8,192 tokens (prompt and reply together), served
# by vLLM with continuous batching. "Serve" means every chat's KV cache stays on the GPUs.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. The 30-second answer · 30 秒回答

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"> **EN** Serving memory is weights plus KV cache, and the cache decides how many users fit. Llama-3-70B's "
    f"cache costs ≈ {r2(kv_bytes_per_token(get_model(MODEL)) / 2**10)} KiB per token, so an 8k chat needs "
    f"{G(kv_bytes_per_token(get_model(MODEL)) * CTX)}; after {G(estimate_inference(MODEL, weights='bf16').weight_bytes, 0)} "
    f"of bf16 weights, two A100s hold about {r2(chats(A100, 2, 'bf16'))} chats. Levers: fp8 or int4 weights, an fp8 "
    f"cache, tensor parallelism over more GPUs. Caveat: that count is worst-case, every chat at full length; real "
    f"chats average shorter, so a server admits more and preempts when memory runs out.\n\n"
    f"> **中文** 推理显存 = 权重 + KV cache，能服务多少用户由 KV cache 决定。Llama-3-70B 每个 token 的 KV cache 约 "
    f"{r2(kv_bytes_per_token(get_model(MODEL)) / 2**10)} KiB，一个 8k 对话要 {G(kv_bytes_per_token(get_model(MODEL)) * CTX)}；"
    f"两张 A100 放下 {G(estimate_inference(MODEL, weights='bf16').weight_bytes, 0)} 的 bf16 权重后约能放 "
    f"{r2(chats(A100, 2, 'bf16'))} 个对话。手段：fp8 或 int4 权重、fp8 KV cache、更多卡张量并行。注意：这是最坏情况，"
    f"每个对话都到满长度；实际平均更短，服务器会多接纳，显存不够时再抢占。\n\n"
    "The long answer follows: every figure above is derived in section 5."))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. What the interviewer is probing · 考察意图
#
# - **Serving memory is weights plus KV cache**, and the KV cache, not the weights, decides how
#   many users you serve: can you size one token's cache from the config, with grouped-query
#   attention (8 KV heads, not 64)?
# - **Precision as a lever on both terms**: fp8/int8/int4 weights free room for chats; an fp8 KV
#   cache doubles the chats again. Do you know what each GPU can run (A100 has no fp8 tensor cores)?
# - **Tensor parallelism splits weights and cache alike**; replicas copy the weights. Which layout
#   of 8 GPUs holds more chats, and what does it cost in communication?
# - **What the server reserves**: vLLM's `gpu_memory_utilization`, the prefill chunk, the block size.
# - **Speed, not only memory**: decode is memory-bound; every step reads all the weights and the
#   whole cache, so a step takes at least (bytes read ÷ bandwidth), and each chat decodes at most
#   (bandwidth ÷ bytes read) tokens per second: a full GPU's step is about its memory ÷ its bandwidth.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Words we use · 术语
#
# - **KV cache**: the keys and values of every past token in every layer, kept so that each new
#   token attends to them without recomputing them.
# - **GQA (grouped-query attention)**: several query heads share one key/value head; Llama-3-70B
#   has 64 query heads and 8 KV heads, so its cache is 8× smaller than with one KV head per query head (MHA).
# - **Prefill / decode**: prefill runs the prompt's tokens through the model at once; decode then
#   produces one token per step for every running chat.
# - **Chunked prefill, `max_num_batched_tokens`**: vLLM processes at most this many tokens per step
#   (2,048 on an A100, 8,192 on an H100 by default), so a long prompt's workspace stays small.
# - **PagedAttention, block**: vLLM stores the cache in fixed blocks of 16 tokens, allocated as a chat
#   grows, so the only waste is the last block's empty slots.
# - **`gpu_memory_utilization`**: the fraction of the GPU vLLM allows itself (0.9 by default); the KV
#   cache gets what is left of it after weights and the profiled workspace.
# - **Tensor parallelism (tp)**: each matrix split across the GPUs of a group (Megatron); each GPU
#   holds 1/tp of the weights and of the KV heads. **Replica**: an independent copy serving its own chats.
# - **bf16 / fp8 / int8 / int4 (AWQ, GPTQ)**: 2, 1, 1 and ½ byte per weight, plus scales. fp8 runs as
#   W8A8 on H100 and weight-only (W8A16, Marlin kernels) on A100; int8 stores a byte per weight and a
#   scale per output row (vLLM's W8A8 checkpoints, LLM.int8()).
# - **HBM bandwidth, memory-bound, roofline**: bytes per second between a GPU's memory and its cores
#   (2.0 TB/s A100, 3.35 TB/s H100); a step is memory-bound when reading its bytes takes longer than
#   its arithmetic. **MBU**: the share of that bandwidth a server achieves.
# - **GB / GiB**: 10⁹ / 2³⁰ bytes. A "80GB" GPU has 80 GiB = 85.9 GB.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. The answer, step by step · 推导
#
# ### Step 1 · The model and the GPUs
#
# ✏️ **Back of the envelope.** "70B" parameters; an "80GB" card is 80 GiB = 80 × 1.074 ≈ 86 GB,
# of which the process sees a bit less. A100: ~2 TB/s of HBM bandwidth; H100 SXM: ~3.35 TB/s (the
# H100 of an 8-GPU HGX server; the PCIe card has 2 TB/s).

# %% tags=["nbval-check-output"]
m = get_model(MODEL)                            # memlib.get_model: Meta's config.json shapes
a100, h100 = get_gpu(A100), get_gpu(H100)       # memlib.get_gpu
cap_a100, cap_h100 = usable_bytes(a100), usable_bytes(h100)  # memlib.fit.usable_bytes: what torch reports
print(m.describe())
print(f"{a100.display_name}: torch sees {G(cap_a100, 2)} ({GB(cap_a100, 2)}), {a100.memory_bandwidth_gb_per_s:,.0f} GB/s")
print(f"{h100.display_name}: torch sees {G(cap_h100, 2)} ({GB(cap_h100, 2)}), {h100.memory_bandwidth_gb_per_s:,.0f} GB/s")
print(f"pencil/memlib: parameters {70e9 / m.num_params:.3f}, A100 capacity {80 * 2**30 / cap_a100:.3f}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"**{m.name}** has **{m.num_params:,}** parameters ({fmt_count(m.num_params)}): {m.num_layers} layers, "
    f"hidden {m.hidden_size:,}, {m.num_heads} query heads of {m.head_dim} and **{m.num_kv_heads} KV heads**, "
    f"MLP {m.intermediate_size:,}, vocabulary {m.vocab_size:,}, context window {m.max_position_embeddings:,}. "
    f"torch sees **{G(cap_a100, 2)}** on an A100 80GB and **{G(cap_h100, 2)}** on an H100 80GB. "
    f"*What the pencil left out:* the \"70B\" is really {m.num_params / 70e9 - 1:.1%} more; the memory a process "
    f"can use is {1 - cap_a100 / (80 * 2**30):.1%} below the card's nominal 80 GiB."))

# %% [markdown]
# ### Step 2 · Weights by precision
#
# ✏️ **Back of the envelope.** 70B × 2 bytes = **140 GB** in bf16; × 1 byte = **70 GB** in fp8
# or int8; × ½ byte = **35 GB** in int4. Already: bf16 does not fit one 80 GB card; fp8 or int8
# barely does, with ~15 GB left for everything else.

# %% tags=["nbval-check-output"]
# memlib.inference.quantized_linear_bytes: one MLP matrix (8192 -> 28672), every buffer of each format
mlp_numel = m.hidden_size * m.intermediate_size
per_param = {k: quantized_linear_bytes(m.hidden_size, m.intermediate_size, f) / mlp_numel for k, f in FORMATS.items()}
# memlib.estimate_inference(weights=...): the whole model, every tensor in its stored format
weights = {k: estimate_inference(m, 1, CTX, weights=f) for k, f in FORMATS.items()}
pencil_w = {"bf16": 140e9, "fp8": 70e9, "int8": 70e9, "int4 (AWQ)": 35e9}
for k, e in weights.items():
    print(f"{k:>10}: {per_param[k]:.4f} B/param in a projection; model {GB(e.weight_bytes, 2)} "
          f"({G(e.weight_bytes, 2)}); pencil/memlib {pencil_w[k] / e.weight_bytes:.3f}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
emb = weights["bf16"].weight_parts["embedding"] + weights["bf16"].weight_parts["lm_head"]
display(Markdown(
    markdown_table([[k, f"{per_param[k]:.3f}", GB(e.weight_bytes), GB(pencil_w[k], 0), pct(e.weight_bytes, pencil_w[k])]
                    for k, e in weights.items()],
                   ["weights", "bytes per weight in a projection", "memlib: whole model", "pencil", "memlib vs pencil"])
    + f"\n\n*What the pencil left out:* the embedding and the output head ({GB(emb)} together) stay 16-bit in "
    f"every quantized checkpoint; int8 adds a 4-byte scale per output row, int4 AWQ a 16-bit scale and a 4-bit "
    f"zero per group of 128 "
    f"({per_param['int4 (AWQ)'] * 8:.3f} bits = 4 + 16/128 + 4/128, not 4). So fp8 and int8 are {pct(weights['fp8'].weight_bytes, 70e9)} "
    f"and int4 is {pct(weights['int4 (AWQ)'].weight_bytes, 35e9)} above the pencil, while bf16 is within "
    f"{abs(weights['bf16'].weight_bytes / 140e9 - 1):.1%}."))

# %% [markdown]
# ### Step 3 · The KV cache of one token, with GQA
#
# ✏️ **Back of the envelope.** Per token: 2 (K and V) × 80 layers × **8 KV heads** × 128 × 2 bytes
# = **327,680 B ≈ 0.33 MB**. One 8k chat: 0.33 MB × 8,192 ≈ **2.7 GB**. The common slip is to use
# the 64 query heads (or the hidden size 8,192): 8× too much, 2.6 MB per token.

# %% tags=["nbval-check-output"]
kv_tok = kv_bytes_per_token(m)                              # memlib.inference.kv_bytes_per_token (bf16)
kv_tok_fp8 = kv_bytes_per_token(m, kv_cache="fp8")          # vLLM --kv-cache-dtype fp8
kv_mha = gqa_kv_bytes_per_token(m.num_layers, m.num_heads, m.head_dim)  # as if every head had its own K, V
per_chat = kv_cache_bytes(m, 1, CTX)                        # memlib.inference.kv_cache_bytes: one full chat
print(f"KV per token: {kv_tok:,} B (fp8 {kv_tok_fp8:,} B; with 64 KV heads {kv_mha:,} B)")
print(f"one {CTX:,}-token chat: {GB(per_chat, 2)} ({G(per_chat, 2)}); pencil/memlib {2 * 80 * 8 * 128 * 2 / kv_tok:.3f}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"memlib: **{kv_tok:,} bytes per token**, **{GB(per_chat, 2)} per {CTX:,}-token chat** in bf16 "
    f"({GB(kv_tok_fp8 * CTX, 2)} in fp8). The pencil is exact here (nothing left out: Llama's cache is K and V "
    f"per KV head, nothing else). Counting all {m.num_heads} heads gives {kv_mha:,} B per token, "
    f"{kv_mha // kv_tok}× too much: it is the single most common error in circulating answers (section 10)."))

# %% [markdown]
# ### Step 4 · PagedAttention: what the blocks waste
#
# ✏️ **Back of the envelope.** vLLM allocates 16-token blocks as a chat grows, so at most 15 slots
# of the last block are empty: 15 × 0.33 MB ≈ **5 MB per chat**, under 0.2% of 2.7 GB. A server that
# reserves the full 8k for every chat instead wastes everything the chat does not use: a chat that ends
# at 2,000 tokens leaves 6,192 / 8,192 ≈ **76%** of its reservation empty.

# %% tags=["nbval-check-output"]
worst = paged_kv_waste_bytes(CTX - VLLM_BLOCK_SIZE + 1, kv_tok)  # memlib.serving.paged_kv_waste_bytes: 15 empty slots
short = paged_kv_waste_bytes(100, kv_tok)                         # a 100-token chat: 7 blocks, 12 empty slots
reserved, used = kv_cache_bytes(m, 1, CTX), kv_cache_bytes(m, 1, 2000)  # contiguous pre-allocation
print(f"paged, worst case per chat: {worst:,} B = {worst / per_chat:.3%} of a full chat")
print(f"paged, a 100-token chat: {short:,} B = {short / (short + kv_cache_bytes(m, 1, 100)):.1%} of its blocks")
print(f"contiguous max_model_len reservation, chat of 2,000 tokens: {1 - used / reserved:.1%} empty")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"memlib (`memlib.serving.paged_kv_waste_bytes`): at most **{worst / 1e6:.1f} MB** per chat "
    f"({worst / per_chat:.2%} of an 8k chat): the pencil was exact. For capacity at full context the waste "
    f"is nil (8,192 is a multiple of 16). It matters only for short chats: a 100-token chat leaves "
    f"{short / (short + kv_cache_bytes(m, 1, 100)):.0%} of its 7 blocks empty. Reserving max_model_len per chat "
    f"(what pre-vLLM servers did) would leave {1 - used / reserved:.0%} empty for a 2,000-token chat."))

# %% [markdown]
# ### Step 5 · Tensor parallelism splits weights and cache
#
# ✏️ **Back of the envelope.** tp = 2 on the A100s: 141 GB / 2 ≈ **70.5 GB of weights per GPU**, and
# each GPU keeps 4 of the 8 KV heads: 0.33 MB / 2 ≈ **164 KB per token**. tp = 8 on the H100s:
# 141 / 8 ≈ **17.6 GB** and **41 KB per token** per GPU. tp cannot exceed the 8 KV heads without
# copying them.

# %% tags=["nbval-check-output"]
tp_est = {tp: estimate_inference(m, 1, CTX, weights="bf16", tp=tp) for tp in (1, 2, 4, 8)}  # memlib.estimate_inference
for tp, e in tp_est.items():
    print(f"tp={tp}: weights per GPU {GB(e.weight_bytes, 2)}, KV per token per GPU {e.kv_bytes_per_token:,} B; "
          f"pencil/memlib {141e9 / tp / e.weight_bytes:.3f}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"Per GPU: **{GB(tp_est[2].weight_bytes)}** (tp 2) and **{GB(tp_est[8].weight_bytes)}** (tp 8) of bf16 "
    f"weights; {tp_est[2].kv_bytes_per_token:,} and {tp_est[8].kv_bytes_per_token:,} bytes of cache per token. "
    f"*What the pencil left out:* the RMSNorm weights ({tp_est[8].weight_parts['norm'] / 1e6:.1f} MB) are copied on "
    f"every GPU, not split, and the vocabulary rows round up: {pct(tp_est[8].weight_bytes, tp_est[1].weight_bytes / 8)} "
    f"at tp 8. "
    f"The split of the cache is exact because each GPU runs whole KV heads; memlib refuses a tp that does "
    f"not divide the {m.num_kv_heads} KV heads (vLLM would replicate them)."))

# %% [markdown]
# ### Step 6 · Prefill workspace versus decode
#
# ✏️ **Back of the envelope.** The largest transient of a prefill is inside the MLP: 3 tensors of
# T × 14,336 (the MLP's width per GPU at tp 2) × 2 B, plus the residual stream 2 × T × 8,192 × 2 B. With
# vLLM's chunk of T = 2,048 tokens on an A100: 176 MB + 67 MB ≈ **0.25 GB**. Prefilling 7 whole chats at
# once (T = 57,344, what HF `generate` does) would be 28× that, ≈ **7 GB**. A decode step has one token
# per chat: negligible.

# %% tags=["nbval-check-output"]
chunk_a100, chunk_h100 = vllm_default_max_num_batched_tokens(A100), vllm_default_max_num_batched_tokens(H100)
chunked = estimate_inference(m, 7, CTX, weights="bf16", tp=2, prefill_tokens=chunk_a100)  # vLLM: chunked prefill
whole = estimate_inference(m, 7, CTX, weights="bf16", tp=2)                              # HF generate: all at once
print(f"vLLM's default chunk: {chunk_a100:,} tokens on an A100, {chunk_h100:,} on an H100")
print(f"prefill workspace, 7 chats at tp=2: chunked {GB(chunked.activation_bytes, 2)} ({chunked.phase}), "
      f"whole {GB(whole.activation_bytes, 2)}; pencil/memlib {0.25e9 / chunked.activation_bytes:.2f}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"memlib: **{GB(chunked.activation_bytes, 2)}** per GPU with {chunk_a100:,}-token chunks (peak in the "
    f"{chunked.phase}), **{GB(whole.activation_bytes)}** if the 7 chats were prefilled at once: the same "
    f"order as the cache of {whole.activation_bytes / (per_chat / 2):.0f} chats per GPU. That is why servers "
    f"chunk the prefill. *What the pencil left out:* nothing but rounding (memlib is "
    f"{pct(chunked.activation_bytes, 0.25e9)} from 0.25 GB; RoPE's cos and sin tables add a few MB). A decode "
    f"step's activations are one token per chat, bytes, not gigabytes; its cost is time (step 10)."))

# %% [markdown]
# ### Step 7 · 2 × A100 80GB: how many chats fit
#
# ✏️ **Back of the envelope.** Per GPU: 85 GB − 70.5 GB of bf16 weights − 0.5 GB (CUDA context) −
# 0.25 GB (prefill) − 5% headroom (~3.6 GB) ≈ **10 GB** for the cache; one chat costs 2.7 GB / 2 =
# 1.34 GB per GPU: **≈ 7 chats**. With fp8 or int8 weights (~36 GB per GPU) ≈ **32**; with an fp8 cache
# on top, ≈ **65**.

# %% tags=["nbval-check-output"]
# memlib.max_batch: the largest batch whose estimate memlib.fits() both GPUs (peak + 0.5 GiB context + 5%)
a100_rows = {(k, kv): chats(A100, 2, f, kv) for k, f in FORMATS.items() for kv in ("bf16", "fp8")}
for (k, kv), n in a100_rows.items():
    print(f"2 x A100, tp=2, weights {k:>10}, KV {kv:>4}: {n:>3} chats of {CTX:,} tokens")
print(f"pencil/memlib bf16: {7 / a100_rows[('bf16', 'bf16')]:.2f}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
n_bf16 = a100_rows[("bf16", "bf16")]
display(Markdown(
    markdown_table([[k, a100_rows[(k, "bf16")], a100_rows[(k, "fp8")]] for k in FORMATS],
                   ["weights (tp 2)", "chats, bf16 KV", "chats, fp8 KV"])
    + f"\n\nbf16 weights **{'do' if n_bf16 > 0 else 'do not'} leave room**"
    + (f", for only **{n_bf16}** chats of {CTX:,} tokens" if n_bf16 else "")
    + f". A practitioner serves an 8-bit checkpoint instead: fp8 (weight-only W8A16 through vLLM's Marlin "
    f"kernels, since an A100 has no fp8 tensor cores) or int8 W8A8: **{a100_rows[('fp8', 'bf16')]}** and "
    f"**{a100_rows[('int8', 'bf16')]}** chats; an fp8 KV cache doubles that to **{a100_rows[('fp8', 'fp8')]}**. "
    f"int4 AWQ reaches {a100_rows[('int4 (AWQ)', 'fp8')]} with fp8 KV, at a larger quality cost. *What the "
    f"pencil left out:* the embedding and head stay 16-bit and the headroom is 5% of the whole peak; it landed "
    f"on memlib's figure."))

# %% [markdown]
# ### Step 8 · What vLLM's `gpu_memory_utilization` reserves
#
# ✏️ **Back of the envelope.** vLLM caps itself at 0.9 × 85 GB ≈ 76.5 GB per GPU; weights (70.5 GB)
# and the profiled prefill and context (~0.8 GB) come off first: ≈ **5 GB** of cache, ÷ 1.34 GB per chat
# ≈ **4 chats** in bf16. The 10% it leaves is twice memlib's 5% headroom, and on a tight fit that is
# half the chats.

# %% tags=["nbval-check-output"]
# memlib.serving: vLLM's Worker.determine_available_memory and its "Maximum concurrency" log
budget = {k: vllm_kv_cache_budget_bytes(m, A100, weights=f, tp=2) for k, f in FORMATS.items()}
conc = {k: vllm_max_concurrency(m, A100, CTX, weights=f, tp=2) for k, f in FORMATS.items()}
for k in FORMATS:
    print(f"vLLM on 2 x A100, weights {k:>10}: KV budget {G(budget[k], 2)} per GPU, max concurrency {conc[k]:.2f}x")
# Check against vLLM's own log (PR #12569): Llama-3.1-70B int8 W8A8 on one 80 GB GPU, --max-model-len 2048,
# --gpu-memory-utilization 0.98: "# GPU blocks: 1381", "Maximum concurrency for 2048 tokens per request: 10.79x"
LOG_BLOCKS, LOG_CONC = 1381, 10.79
m31 = get_model("llama-3.1-70b")
pred_budget = vllm_kv_cache_budget_bytes(m31, H100, weights="int8", max_num_batched_tokens=2048,
                                         gpu_memory_utilization=0.98)
pred_conc = vllm_max_concurrency(m31, H100, 2048, weights="int8", max_num_batched_tokens=2048,
                                 gpu_memory_utilization=0.98)
gap = pred_budget - LOG_BLOCKS * VLLM_BLOCK_SIZE * kv_bytes_per_token(m31)  # what vLLM held that memlib does not count
print(f"vLLM log {LOG_CONC}x vs memlib {pred_conc:.2f}x: memlib's KV budget is {G(gap, 2)} larger")
print(f"pencil/memlib bf16 concurrency: {4 / conc['bf16']:.2f}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
lost = gap / (kv_tok // 2 * CTX)
display(Markdown(
    f"With the default `gpu_memory_utilization={VLLM_GPU_MEMORY_UTILIZATION}`, vLLM gives the cache "
    f"**{G(budget['bf16'])}** per GPU in bf16 and logs a maximum concurrency of **{conc['bf16']:.1f}×** for "
    f"{CTX:,}-token requests (memlib.max_batch: {n_bf16}); with fp8 weights **{conc['fp8']:.0f}×**. "
    f"*What the pencil and memlib leave out:* vLLM's own log for the nearest published setup (Llama-3.1-70B "
    f"int8 on one 80 GB GPU, PR #12569) shows {LOG_CONC}× where memlib predicts {pred_conc:.1f}×: vLLM held "
    f"**{G(gap)}** more that memlib does not model (the sampler's buffers of its profiling run, compile "
    f"caches). On 2 × A100 that is {lost:.1f} chats of 8k per GPU group: in bf16 expect about "
    f"{max(conc['bf16'] - lost, 0):.0f}-{conc['bf16']:.0f} under vLLM's defaults, and read the "
    f"\"Maximum concurrency\" line vLLM prints at startup before you promise a number. Raising "
    f"`--gpu-memory-utilization` to 0.95 buys back part of the 10%."))

# %% [markdown]
# ### Step 9 · 8 × H100: one tp = 8 group or two tp = 4 replicas?
#
# ✏️ **Back of the envelope.** 8 × 85 GB = 680 GB. One copy of the bf16 weights (141 GB) and ~5 GB per GPU
# of context, prefill and headroom leave ≈ 500 GB: ÷ 2.7 GB per chat ≈ **185 chats**. Two replicas store the
# weights twice: 680 − 282 − 40 ≈ 360 GB ≈ **130 chats**. Memory says tp = 8.

# %% tags=["nbval-check-output"]
h100_rows = {}
for k, f, kv in (("bf16", "bf16", "bf16"), ("bf16", "bf16", "fp8"), ("fp8", "fp8-block", "fp8")):
    one_group = chats(H100, 8, f, kv)            # memlib.max_batch, tp=8 over all eight GPUs
    two_replicas = 2 * chats(H100, 4, f, kv)     # two independent tp=4 groups
    h100_rows[(k, kv)] = (one_group, two_replicas)
    print(f"8 x H100, weights {k:>4}, KV {kv:>4}: tp=8 {one_group:>3} chats; 2 x tp=4 {two_replicas:>3} chats")
print(f"pencil/memlib bf16: tp=8 {185 / h100_rows[('bf16', 'bf16')][0]:.2f}, 2 x tp=4 {130 / h100_rows[('bf16', 'bf16')][1]:.2f}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
t8, t4 = h100_rows[("bf16", "bf16")]
winner = "one tp = 8 group" if t8 > t4 else "two tp = 4 replicas"
display(Markdown(
    markdown_table([[f"{k} weights, {kv} KV", a, b] for (k, kv), (a, b) in h100_rows.items()],
                   ["8 × H100", "tp = 8 (one group)", "2 × tp = 4 (replicas)"])
    + f"\n\nBy memory, **{winner}** holds more chats ({t8} against {t4} in bf16): the weights are stored "
    f"once, so {GB(tp_est[8].weight_bytes)} per GPU instead of {GB(tp_est[4].weight_bytes)}. vLLM's default "
    f"reservation admits {vllm_max_concurrency(m, H100, CTX, weights='bf16', tp=8):.0f} on tp = 8. *What the "
    f"pencil left out:* only rounding. What memory does not show: each tp = 8 all-reduce crosses eight GPUs, "
    f"and users report throughput that stops scaling beyond tp = 4 (vLLM issue #8089). A practitioner "
    f"benchmarks both; with an fp8 checkpoint and fp8 cache the H100s run native W8A8 and either layout "
    f"holds {min(h100_rows[('fp8', 'fp8')])}+ chats."))

# %% [markdown]
# ### Step 10 · The decode speed limit
#
# ✏️ **Back of the envelope.** Every decode step reads all the weights and every chat's cache once.
# tp = 8, one chat: 17.6 GB per GPU ÷ 3.35 TB/s ≈ 5.3 ms → at most **≈ 190 tokens/s**. At 185 chats each
# GPU reads 17.6 + 185 × 2.7 / 8 ≈ 80 GB per step ≈ 24 ms → **≈ 42 tokens/s per chat**, 185 × 42 ≈
# **7,800 tokens/s** in all. On 2 × A100 (bf16, 7 chats): ≈ 80 GB ÷ 2.04 TB/s ≈ 39 ms → **≈ 25 tokens/s**.

# %% tags=["nbval-check-output"]
dec = {
    "2 x A100, tp=2, bf16, 1 chat": decode_bound(m, A100, 1, CTX, weights="bf16", tp=2),  # memlib.serving.decode_bound
    f"2 x A100, tp=2, bf16, {n_bf16} chats": decode_bound(m, A100, n_bf16, CTX, weights="bf16", tp=2),
    "8 x H100, tp=8, bf16, 1 chat": decode_bound(m, H100, 1, CTX, weights="bf16", tp=8),
    f"8 x H100, tp=8, bf16, {t8} chats": decode_bound(m, H100, t8, CTX, weights="bf16", tp=8),
}
for k, d in dec.items():
    print(f"{k}: {GB(d.bytes_read)} read per GPU per step, {d.step_s * 1e3:.1f} ms ({d.bound}-bound), "
          f"<= {d.tokens_per_s_per_sequence:.0f} tokens/s per chat, <= {d.tokens_per_s:,.0f} in all")
print(f"pencil/memlib per-chat speed at {t8} chats: {42 / dec[f'8 x H100, tp=8, bf16, {t8} chats'].tokens_per_s_per_sequence:.2f}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
full8, one8 = dec[f"8 x H100, tp=8, bf16, {t8} chats"], dec["8 x H100, tp=8, bf16, 1 chat"]
fulla = dec[f"2 x A100, tp=2, bf16, {n_bf16} chats"]
display(Markdown(
    f"memlib (`memlib.serving.decode_bound`, the memory-bound roofline): one chat alone on 8 × H100 decodes at "
    f"most **{one8.tokens_per_s_per_sequence:.0f} tokens/s**; with {t8} chats, **{full8.tokens_per_s_per_sequence:.0f} "
    f"tokens/s each, {full8.tokens_per_s:,.0f} in all**; 2 × A100 with {n_bf16} chats: "
    f"{fulla.tokens_per_s_per_sequence:.0f} tokens/s each. Every case is {full8.bound}-bound: the arithmetic "
    f"would take {full8.compute_s / full8.memory_s:.0%} of the time the reads take. Note the pattern: a GPU "
    f"filled to capacity reads about its whole memory per step, so a step takes at least memory ÷ bandwidth "
    f"({full8.memory_s * 1e3:.0f} ms here) and each chat's speed is at most bandwidth ÷ memory, whatever the format; smaller formats buy more chats, not faster ones. *What the pencil and "
    f"memlib leave out:* the tensor-parallel all-reduces, kernel launches, and real bandwidth utilisation "
    f"(MBU) of 50-80%: measured speeds are lower. Prefill steps (new prompts) also take turns with decode."))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Charts · 图
#
# **Per-GPU memory at the largest batch that fits.** Look at how small the cache slice is on the A100s
# in bf16, and how the weights shrink from left to right while the cache grows into the room.

# %% tags=["nbval-check-output"]
layouts_a100 = {"bf16": ("bf16", "bf16"), "fp8": ("fp8-block", "bf16"), "fp8 + fp8 KV": ("fp8-block", "fp8")}
at_max_a100 = {lab: estimate_inference(m, max(chats(A100, 2, w, kv), 1), CTX, weights=w, kv_cache=kv, tp=2,
                                       prefill_tokens=chunk_a100) for lab, (w, kv) in layouts_a100.items()}
layouts_h100 = {"tp8 bf16": (8, "bf16", "bf16"), "tp4 bf16": (4, "bf16", "bf16"), "tp8 fp8+fp8KV": (8, "fp8-block", "fp8")}
at_max_h100 = {lab: estimate_inference(m, max(chats(H100, tp, w, kv), 1), CTX, weights=w, kv_cache=kv, tp=tp,
                                       prefill_tokens=chunk_h100) for lab, (tp, w, kv) in layouts_h100.items()}
print({k: e.setup.batch for k, e in {**at_max_a100, **at_max_h100}.items()})

# %% jupyter={"source_hidden": true} tags=["hide-input"]
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 3.4))
breakdown_bars(at_max_a100, gpu=A100, ax=ax1, title="2 × A100 80GB (tp 2), per GPU")
breakdown_bars(at_max_h100, gpu=H100, ax=ax2, title="8 × H100 80GB, per GPU")
ax1.get_legend().remove()
plt.tight_layout()
plt.show()

# %% [markdown]
# **Concurrent chats against context length** (Llama-3.1-70B: the same shapes with a 128k window).
# Look at the slope: the count halves each time the context doubles, and at 128k even eight H100s hold
# only a dozen chats in bf16.

# %% tags=["nbval-check-output"]
contexts = [2**k for k in range(10, 18)]
sweep_setups = {"8×H100 tp8 bf16": (H100, 8, "bf16", "bf16"), "8×H100 tp8 fp8+fp8KV": (H100, 8, "fp8-block", "fp8"),
                "2×A100 tp2 fp8+fp8KV": (A100, 2, "fp8-block", "fp8"), "2×A100 tp2 bf16": (A100, 2, "bf16", "bf16")}
by_context = {lab: [chats(g, tp, w, kv, context=c, model=m31) for c in contexts]
              for lab, (g, tp, w, kv) in sweep_setups.items()}
print({lab: (v[0], v[3], v[-1]) for lab, v in by_context.items()})

# %% jupyter={"source_hidden": true} tags=["hide-input"]
fig, ax = plt.subplots(figsize=(7, 3.6))
count_sweep(contexts, {k: [max(v, 0.5) for v in vals] for k, vals in by_context.items()}, ax=ax, logx=True,
            logy=True, xlabel="context per chat (tokens)", ylabel="concurrent chats (memlib.max_batch)",
            title="Llama-3.1-70B: chats that fit against context (0 drawn at 0.5)")
plt.show()

# %% [markdown]
# **The decode speed limit against the number of chats** (8 × H100, bf16, 8k chats). Look at the two
# curves of total tokens/s: both rise with the batch because the weights are read once per step for
# everyone; the tp = 8 group goes further because it holds more chats.

# %% tags=["nbval-check-output"]
batches = [1, 2, 4, 8, 16, 32, 64, 128, t8]
b4 = chats(H100, 4, "bf16")  # each tp=4 replica holds at most this many: the pair stops at 2 x b4


def replicas_tokens_per_s(b):
    """Two tp=4 replicas sharing b chats (one replica when b = 1), each capped at what fits."""
    if b == 1:
        return decode_bound(m, H100, 1, CTX, weights="bf16", tp=4).tokens_per_s
    return 2 * decode_bound(m, H100, min(b // 2, b4), CTX, weights="bf16", tp=4).tokens_per_s


speed = {"tp=8: total tokens/s": [decode_bound(m, H100, b, CTX, weights="bf16", tp=8).tokens_per_s for b in batches],
         f"2 × tp=4: total tokens/s (at most {2 * b4} chats)": [replicas_tokens_per_s(b) for b in batches],
         "tp=8: tokens/s per chat": [decode_bound(m, H100, b, CTX, weights="bf16", tp=8).tokens_per_s_per_sequence
                                      for b in batches]}
print({k: f"{v[0]:,.0f} -> {v[-1]:,.0f}" for k, v in speed.items()})

# %% jupyter={"source_hidden": true} tags=["hide-input"]
fig, ax = plt.subplots(figsize=(7, 3.6))
count_sweep(batches, speed, ax=ax, logx=True, logy=True, xlabel="concurrent 8k chats on 8 × H100",
            ylabel="tokens/s, upper bound", title="Decode roofline (memlib.serving.decode_bound), bf16")
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. Playground · 动手试
#
# Try: switch the weights to `fp8-block`, then the KV cache to `fp8` and watch the chats double; set the
# GPU to `h100-80gb` and the GPUs to 8; drag the context to 131072 (pick `llama-3.1-70b`); lower vLLM's
# `gpu_memory_utilization` and see how few chats bf16 leaves on the A100s.

# %%
ServingPlayground(model=MODEL, gpu=A100, tp=2)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8. Follow-up questions · 追问

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Why does GQA matter so much here? · 为什么 GQA 这么重要？

# %% tags=["nbval-check-output"]
mha = m.with_(name="llama-3-70b with 64 KV heads", num_kv_heads=m.num_heads)  # the same model, one K, V per head
mha_chats = chats(H100, 8, "bf16", model=mha)
print(f"KV per token {kv_bytes_per_token(mha):,} B; chats on 8 x H100 tp=8: {mha_chats} (GQA: {t8})")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"With one KV head per query head (MHA), each token would cache {kv_bytes_per_token(mha) / kv_tok:.0f}× as "
    f"much ({kv_bytes_per_token(mha) / 1e6:.1f} MB) and 8 × H100 would hold **{mha_chats}** chats of 8k instead "
    f"of {t8} (its larger K and V projections also add {GB(mha.num_params * 2 - m.num_params * 2)} of weights). "
    f"GQA (Ainslie et al. 2023) is what makes 70B serving affordable; MLA (DeepSeek) goes further."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### What changes at 128k context? · 上下文到 128k 会怎样？

# %% tags=["nbval-check-output"]
long = 131072
per_long = kv_cache_bytes(m31, 1, long)
long_rows = {lab: chats(g, tp, w, kv, context=long, model=m31) for lab, (g, tp, w, kv) in sweep_setups.items()}
print(f"one {long:,}-token chat: {GB(per_long)}; chats: {long_rows}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"One 128k chat of Llama-3.1-70B caches **{GB(per_long)}** in bf16, a third of the weights. Chats that fit: "
    + ", ".join(f"{lab} **{n}**" for lab, n in long_rows.items())
    + ". The cache grows linearly, so 16× the context means about 1/16 of the chats; fp8 KV, more GPUs, or "
    "prefix sharing are the levers. The prefill of one 128k prompt is also long: chunking keeps its memory small, "
    "not its time."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### What does speculative decoding cost in memory? · 投机解码要多少显存？

# %% tags=["nbval-check-output"]
draft = get_model("llama-3.1-8b")  # a typical draft model for Llama-3.x-70B
draft_w = estimate_inference(draft, 1, CTX, weights="bf16", tp=8).weight_bytes   # its weights per GPU at tp=8
draft_kv = kv_bytes_per_token(draft, tp=8) / kv_bytes_per_token(m, tp=8)          # its cache per token, relative
print(f"draft weights per GPU {GB(draft_w, 2)}; draft KV per token = {draft_kv:.0%} of the target's")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"A draft model (here Llama-3.1-8B) is served beside the target: {GB(draft_w)} more weights per GPU at "
    f"tp 8 and its own KV cache, **{draft_kv:.0%}** of the target's per token. The same cache budget therefore "
    f"holds about 1/{1 + draft_kv:.2f} of the chats, about {t8 / (1 + draft_kv):.0f} instead of {t8}, in "
    f"exchange for fewer, fuller decode steps. A small n-gram or EAGLE head costs far less memory."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### What does prefix caching buy? · 前缀缓存能省多少？

# %% tags=["nbval-check-output"]
PREFIX = 2048  # a system prompt every chat shares
plain = vllm_max_concurrency(m, H100, CTX, weights="bf16", tp=8)
shared = vllm_max_concurrency(m, H100, CTX - PREFIX, weights="bf16", tp=8)  # each chat stores only its own part
print(f"vLLM concurrency on 8 x H100 tp=8: {plain:.1f} without, about {shared:.1f} with a shared {PREFIX:,}-token prefix")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"vLLM's automatic prefix caching keeps the blocks of a common prefix once and points every chat's block "
    f"table at them. With a {PREFIX:,}-token system prompt shared by all chats, each chat stores only its own "
    f"{CTX - PREFIX:,} tokens: about **{shared:.0f}** concurrent chats instead of {plain:.0f} on 8 × H100 "
    f"(one copy of the prefix, {GB(kv_cache_bytes(m, 1, PREFIX))}, comes off the budget once)."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Worst case or average: how many users does the server really take?

# %% tags=["nbval-check-output"]
# worst case: every chat reserves 8k tokens (chats); average: chats of 2k tokens; memlib.serving.decode_bound for
# the speed, memlib.cost.conventions.littles_law_arrival_rate for the requests per second (L = λ·W)
from memlib.cost.conventions import littles_law_arrival_rate  # noqa: E402

AVG, REPLY = 2048, 500  # assumed: chats average 2k tokens of context, replies 500 tokens
n_worst, n_avg = chats(H100, 8, "bf16"), chats(H100, 8, "bf16", context=AVG)
tpot = decode_bound(m, H100, n_avg, AVG, weights="bf16", tp=8).step_s  # shortest time per output token
rate = littles_law_arrival_rate(n_avg, REPLY * tpot)
print(f"8 x H100 bf16: {n_worst} chats at {CTX} tokens (worst case), {n_avg} at {AVG}; "
      f"TPOT >= {tpot * 1e3:.0f} ms; <= {rate:.1f} requests/s of {REPLY}-token replies")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"Section 5 counts the worst case: every chat reserves its full {CTX:,} tokens, **{n_worst}** chats on 8 × H100. "
    f"vLLM allocates blocks as tokens arrive, so if chats average {AVG:,} tokens it runs about **{n_avg}** at once "
    f"(capped by `max_num_seqs`, 256 by default in recent vLLM), and when the cache runs out it *preempts* a chat: "
    f"frees its blocks and recomputes them later (or swaps them to CPU). Throughput follows Little's law, "
    f"L = λ·W: {n_avg} chats in flight, each held for {REPLY} tokens × ≥ {tpot * 1e3:.0f} ms (the time per output "
    f"token at that batch), serve at most **{rate:.1f} requests per second**. Targets for TTFT (time to first token) "
    f"and TPOT cap the batch before memory does. Two more levers: *chunked prefill* mixes prompt chunks into decode "
    f"steps, trading a little inter-token latency for a shorter TTFT; *prefill/decode disaggregation* runs the two on "
    f"different GPUs and ships the KV cache between them. An fp8 (e4m3) cache halves the bytes; vLLM scales K and "
    f"V per tensor (`k_scale`, `v_scale`, from the checkpoint or calibrated), and accuracy should be checked on "
    f"your own evaluation."))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9. Pitfalls · 避坑

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown("\n".join([
    f"- Using the query heads (or the hidden size) in the KV formula: {kv_mha // kv_tok}× too much for Llama-3-70B. "
    f"Use `num_key_value_heads` from config.json.",
    f"- Treating \"140 GB\" as the whole story: the cache of {chats(H100, 8, 'bf16')} chats of 8k is "
    f"{GB(chats(H100, 8, 'bf16') * per_chat, 0)}, more than three times the weights.",
    "- Forgetting that quantized checkpoints keep the embedding and head in 16-bit and add scales: int4 70B is "
    f"{GB(weights['int4 (AWQ)'].weight_bytes, 0)}, not 35 GB.",
    f"- Mixing GB and GiB: an \"80GB\" card shows {G(cap_a100)} in torch. nvidia-smi prints MiB, correctly labelled "
    f"(an H100 shows {h100.reported_total_mib:,} MiB = {h100.reported_total_mib / 1024:.1f} GiB, not 80); the mislabel "
    "is vLLM's old \"Loading model weights took X GB\", which printed GiB.",
    f"- Assuming vLLM uses the whole card: `gpu_memory_utilization` {VLLM_GPU_MEMORY_UTILIZATION} caps weights, "
    "workspace and cache together; the cache gets what is left.",
    "- Prefilling long prompts in one piece (HF `generate`): the workspace of a whole batch of 8k prompts rivals "
    "the cache. Chunked prefill bounds it.",
    "- Expecting fp8 speed on an A100: it has no fp8 tensor cores; fp8 checkpoints run as weight-only "
    "(W8A16), which saves memory and bandwidth, not arithmetic.",
    "- Picking tp by memory alone: tp = 8 holds more chats, but its all-reduces cross eight GPUs; benchmark "
    "against two tp = 4 replicas.",
    "- Promising decode speed from the roofline: it is an upper bound; real MBU is 50-80% and prefill steps "
    "interleave.",
])))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10. Deep dive (skip on first read) · 深入（可跳过）
#
# ### Fact-check · 纠错
#
# Circulating rules of thumb and published claims about serving memory, each quoted with its source,
# against memlib (✅ right within 3% · ⚠️ partly right or within 25% · ❌ wrong). The verdict is computed
# from the two figures.

# %% tags=["nbval-check-output"]
def verdict(claimed, actual, close=0.03, partly=0.25):
    """✅ within `close`, ⚠️ within `partly`, ❌ beyond (relative to memlib's figure)."""
    off = abs(claimed / actual - 1)
    return "✅" if off <= close else ("⚠️" if off <= partly else "❌")


w31 = {f: estimate_inference(m31, 1, 1024, weights=f).weight_bytes for f in ("bf16", "fp8-block", "int4-awq", "nf4")}
kv31 = kv_bytes_per_token(m31)
int8_31 = estimate_inference(m31, 1, 2048, weights="int8").weight_bytes
wrong_kv = 2 * m.num_layers * m.hidden_size * 2  # the "hidden size" formula: what the quoted rule computes
mlsys_4k = chats(H100, 1, "int4-awq", context=4096)  # one H100, int4 weights, 4k chats
issue_3k = chats(H100, 4, "fp8-block", context=3000)  # 4 x H100, fp8 70B, 3,000-token sequences
waste_long = worst / per_chat  # the worst case of an 8k chat: 15 empty slots
waste_short = short / (short + kv_cache_bytes(m, 1, 100))
# Databricks' MBU at 100%: the whole model and the cache of t8 chats over eight GPUs' bandwidth
tpot_databricks = (weights["bf16"].weight_bytes + t8 * per_chat) / (8 * h100.memory_bandwidth_bytes_per_s)
facts = [
    ["\"70B … FP16 140 GB\" (Hugging Face blog, *Llama 3.1 - 405B, 70B & 8B*, inference memory table)",
     GB(w31["bf16"]), verdict(140e9, w31["bf16"]), "2 bytes per parameter; the embedding and head are in it"],
    ["\"70B … FP8 70 GB\" (same table)", GB(w31["fp8-block"]), verdict(70e9, w31["fp8-block"]),
     "the embedding and head stay 16-bit in fp8 checkpoints"],
    ["\"70B … INT4 35 GB\" (same table)", GB(w31["int4-awq"]), verdict(35e9, w31["int4-awq"]),
     "16-bit embedding and head, plus a scale and zero per group of 128"],
    ["\"4-bit loading of the large 70B version takes about 34 GB\" (same blog, bitsandbytes)", GB(w31["nf4"]),
     verdict(34e9, w31["nf4"]), "NF4 with double quantization; embedding and head stay 16-bit"],
    ["\"In FP16, the KV cache … 70B … 128k tokens 39.06 GB\" (same blog)",
     f"{GB(kv31 * 131072, 2)} = {G(kv31 * 131072, 2)}", verdict(39.06e9, kv31 * 131072),
     "the figure is GiB of 128,000 tokens, labelled GB"],
    ["\"Size of KV cache per token in bytes = 2 * (num_layers) * (num_heads * dim_head) * precision_in_bytes\" "
     "(NVIDIA Technical Blog, *Mastering LLM Techniques: Inference Optimization*)",
     f"{wrong_kv:,} B vs {kv_tok:,} B", verdict(wrong_kv, kv_tok),
     "right for MHA (Llama 2 7B, its example); with GQA use the KV heads: 8× less here"],
    ["\"KV cache size for 3000 token long sequence is just under 8GB (8192 dim * 80 layers * 2 kv *2 fp16 * "
     "3000 len). That means that 4xH100 can fit only ~30 at once\" (vLLM issue #8089)",
     f"{GB(kv_tok * 3000, 2)} per sequence; {issue_3k} sequences fit (fp8 weights, tp 4)",
     verdict(8e9, kv_tok * 3000), "the hidden size stands in for the 8 KV heads: 8× too much, so ~8× too few"],
    ["\"KV cache grows with 64 KV heads across 80 layers, consuming roughly 1.25 GB per 1,000 tokens at FP16\" "
     "(gigagpu.com, *LLaMA 3 70B context length VRAM*)", GB(kv_tok * 1000, 3), verdict(1.25e9, kv_tok * 1000),
     "Llama-3-70B has 8 KV heads, not 64"],
    ["\"KV cache per request (4K context): → 160 MB per request\" … \"≈ 280 concurrent requests max\" "
     "(mlsysim blog, *How Much Memory Does Llama-3 70B Actually Need?*, INT4 on one H100)",
     f"{GB(kv_tok * 4096, 2)} per request; {mlsys_4k} requests", verdict(160e6, kv_tok * 4096),
     "the per-request cache is 8× larger; the count 8× smaller"],
    ["\"VRAM at each quantization … Assumes 8k context … KV cache 2.68 GB\" (canitrun.dev, Llama 3.1 70B)",
     GB(per_chat, 2), verdict(2.68e9, per_chat), "GQA-aware: 2 × 80 × 8 × 128 × 2 B × 8,192"],
    ["\"KV cache size = batch_size * seqlen * (d_model/n_heads) * n_layers * 2 (K and V) * 2 (bytes per Float16) "
     "* n_kv_heads\" (Databricks, *LLM Inference Performance Engineering: Best Practices*)",
     f"{m.hidden_size // m.num_heads * m.num_layers * 2 * 2 * m.num_kv_heads:,} B per token",
     verdict(m.hidden_size // m.num_heads * m.num_layers * 2 * 2 * m.num_kv_heads, kv_tok), "the GQA form"],
    ["\"achieved memory bandwidth is ((total model parameter size + KV cache size) / TPOT)\" (Databricks, same post)",
     f"at 100%: TPOT ≥ {tpot_databricks * 1e3:.1f} ms; memlib.serving.decode_bound {full8.step_s * 1e3:.1f} ms",
     verdict(tpot_databricks, full8.step_s), "the decode roofline of step 10 (memlib skips the embedding table)"],
    ["\"In PagedAttention, memory waste only happens in the last block of a sequence … a mere waste of under 4%\" "
     "(vLLM blog, 2023-06-20)", f"{waste_long:.2%} for an 8k chat; {waste_short:.0%} for a 100-token chat",
     "✅" if waste_short < 0.04 else "⚠️", "under 4% for chats longer than ~400 tokens; short chats waste more"],
    ["\"vLLM limits all the memory wastes for a request within one block\" (Kwon et al. 2023, Sec. 4.3)",
     f"at most {VLLM_BLOCK_SIZE - 1} tokens ({worst / 1e6:.1f} MB) per chat",
     "✅" if worst == (VLLM_BLOCK_SIZE - 1) * kv_tok else "❌", "blocks are filled left to right"],
    ["\"This flag controls how much VRAM vLLM pre-allocates for KV cache, NOT for model weights\" "
     "(gpu_memory_utilization; chopratejas/gpu-checkpoint-benchmarks, GPU_MEMORY_EXPLAINED.md)",
     f"KV gets {G(budget['bf16'])} of the {G(VLLM_GPU_MEMORY_UTILIZATION * cap_a100)} cap (bf16, tp 2)",
     verdict(VLLM_GPU_MEMORY_UTILIZATION * cap_a100, budget["bf16"]),
     "vLLM: available KV = total × utilization − (weights + profiled peak + non-torch)"],
    ["\"Loading model weights took 67.7229 GB\" (vLLM PR #12569: Llama-3.1-70B int8 W8A8)",
     f"{G(int8_31, 2)} ({GB(int8_31, 2)})", verdict(67.7229 * 2**30, int8_31),
     "vLLM prints GiB labelled GB; int8 weights plus one scale per output row"],
    ["\"# GPU blocks: 1381 … Maximum concurrency for 2048 tokens per request: 10.79x\" (same log, "
     "--gpu-memory-utilization 0.98)", f"{pred_conc:.2f}x", verdict(LOG_CONC, pred_conc),
     f"memlib's vLLM budget misses {G(gap)} of what vLLM held (section 5, step 8)"],
    ["\"Quantization of models with FP8 allows for a 2x reduction in model memory requirements\" "
     "(vLLM docs, FP8 W8A8)", f"{weights['bf16'].weight_bytes / weights['fp8'].weight_bytes:.2f}×",
     verdict(2, weights["bf16"].weight_bytes / weights["fp8"].weight_bytes), "the 16-bit embedding and head"],
]
print(f"{len(facts)} claims: " + " ".join(f[2] for f in facts))

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(markdown_table(facts, ["claim (source)", "memlib", "verdict", "why"])))

# %% [markdown]
# ### Ledger: every layout · 全部方案
#
# Per GPU, at 8k context: weights, cache per chat, the chats memlib.max_batch fits, what vLLM's default
# reservation admits, and the decode limit at that many chats.

# %% tags=["nbval-check-output"]
ledger = []
for (g, tp, label) in ((A100, 2, "2 × A100, tp 2"), (H100, 8, "8 × H100, tp 8"), (H100, 4, "8 × H100, 2 × tp 4")):
    replicas = 2 if label.endswith("2 × tp 4") else 1
    for k, f in FORMATS.items():
        for kv in ("bf16", "fp8"):
            n = chats(g, tp, f, kv)
            e = estimate_inference(m, 1, CTX, weights=f, kv_cache=kv, tp=tp)
            d = decode_bound(m, g, max(n, 1), CTX, weights=f, kv_cache=kv, tp=tp)
            ledger.append([label, k, kv, GB(e.weight_bytes), GB(e.kv_cache_bytes, 2), replicas * n,
                           f"{replicas * vllm_max_concurrency(m, g, CTX, weights=f, kv_cache=kv, tp=tp):.0f}",
                           f"{d.tokens_per_s_per_sequence:.0f}", f"{replicas * d.tokens_per_s:,.0f}"])
print(len(ledger), "layouts")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(markdown_table(ledger, ["GPUs", "weights", "KV", "weights per GPU", "cache per chat per GPU",
                                         "chats (max_batch)", "vLLM default", "tokens/s per chat ≤",
                                         "tokens/s in all ≤"])))

# %% [markdown]
# ### The derivation memlib prints · memlib 的推导
#
# `estimate_inference(...).explain()` for 2 × A100 in bf16 at the largest batch, every term with its formula.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(at_max_a100["bf16"].explain()))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 11. Further reading · 延伸阅读
#
# - Kwon et al. 2023, *Efficient Memory Management for Large Language Model Serving with PagedAttention* (SOSP), [arXiv:2309.06180](https://arxiv.org/abs/2309.06180); the vLLM announcement, [blog.vllm.ai/2023/06/20/vllm.html](https://blog.vllm.ai/2023/06/20/vllm.html)
# - Ainslie et al. 2023, *GQA: Training Generalized Multi-Query Transformer Models from Multi-Head Checkpoints*, [arXiv:2305.13245](https://arxiv.org/abs/2305.13245)
# - Pope et al. 2022, *Efficiently Scaling Transformer Inference*, [arXiv:2211.05102](https://arxiv.org/abs/2211.05102)
# - Shoeybi et al. 2019, *Megatron-LM* (tensor parallelism), [arXiv:1909.08053](https://arxiv.org/abs/1909.08053)
# - Agrawal et al. 2023, *SARATHI: Efficient LLM Inference by Piggybacking Decodes with Chunked Prefills*, [arXiv:2308.16369](https://arxiv.org/abs/2308.16369)
# - Frantar et al. 2022, *GPTQ*, [arXiv:2210.17323](https://arxiv.org/abs/2210.17323); Lin et al. 2023, *AWQ*, [arXiv:2306.00978](https://arxiv.org/abs/2306.00978); Micikevicius et al. 2022, *FP8 Formats for Deep Learning*, [arXiv:2209.05433](https://arxiv.org/abs/2209.05433)
# - Leviathan et al. 2023, *Fast Inference from Transformers via Speculative Decoding*, [arXiv:2211.17192](https://arxiv.org/abs/2211.17192)
# - Williams et al. 2009, *Roofline: An Insightful Visual Performance Model*, [doi:10.1145/1498765.1498785](https://doi.org/10.1145/1498765.1498785)
# - vLLM docs: [engine arguments](https://docs.vllm.ai/en/stable/configuration/engine_args/), [FP8 W8A8](https://docs.vllm.ai/en/stable/features/quantization/fp8/), [quantized KV cache](https://docs.vllm.ai/en/stable/features/quantization/quantized_kvcache/)
# - Databricks, *LLM Inference Performance Engineering: Best Practices*, [databricks.com/blog](https://www.databricks.com/blog/llm-inference-performance-engineering-best-practices)
# - Hugging Face, *Llama 3.1 - 405B, 70B & 8B with multilinguality and long context*, [huggingface.co/blog/llama31](https://huggingface.co/blog/llama31)
# - NVIDIA, *Mastering LLM Techniques: Inference Optimization*, [developer.nvidia.com/blog](https://developer.nvidia.com/blog/mastering-llm-techniques-inference-optimization/)
