# ---
# jupyter:
#   jupytext:
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

# %% [markdown]
# # 04 · Exercises: how many 8k chats can Llama-3-70B serve?
#
# Companion to `notebooks/04_serving_capacity.ipynb`: the KV cache per token with GQA, quantized
# weights split over GPUs, the chats that fit, vLLM's reservation, PagedAttention's blocks, the
# layout of eight GPUs, the decode speed limit, speculative decoding, MHA converted to GQA and the request rate. Most
# numeric exercises change the notebook's setup: derive them with its method. Each exercise says its difficulty (warm-up ·
# interview · stretch) and about how long it takes.
# `check("04.k", answer)` grades an answer against a value memlib computes now; numbers may
# carry units (`"987.6 GB"`, `"919.8 GiB"`, `"98.7 ms"`; a plain number means the unit the question
# names, else bytes). `hint("04.k")` shows the concept, then the formula, then the first step. The
# open question is self-assessed: `check` shows a rubric and a model answer, `mark` records your
# marks. Progress is saved in `.memlib_progress.json` beside the notebook; `score()` sums it up.

# %% [markdown] tags=["solution"]
# **This is the solutions copy:** every exercise is answered and checked. The student copy,
# `exercises/04_serving_capacity_exercises.ipynb`, is generated from this file by
# `tools/make_exercises.py`. It keeps no progress file (the next cell), so its score below is
# always the same.

# %% tags=["solution"]
import os

os.environ["MEMLIB_PROGRESS"] = "off"

# %%
import memlib
from memlib.learn.grading import check, hint, mark, practice, score, show, solution

# %% [markdown]
# ## 04.1 · One token of Llama-3-70B's KV cache

# %%
show("04.1")

# %%
# BEGIN SOLUTION
answer = f"{2 * 80 * 8 * 128 * 2} bytes"  # K and V, 80 layers, 8 KV heads of 128, 2 bytes
# END SOLUTION
check("04.1", answer)
# hint("04.1")  # stuck? each call shows one more hint; solution("04.1") shows the worked answer

# %% [markdown]
# ## 04.2 · "Just under 8GB" for 3,000 tokens

# %%
show("04.2")

# %%
# BEGIN SOLUTION
per_token = 2 * 80 * 8 * 128 * 2  # 8 KV heads, not the hidden size 8,192
answer = ("8192 dim", f"{per_token * 3000 / 1e9:.3f} GB")
# END SOLUTION
check("04.2", answer)
# hint("04.2")

# %% [markdown]
# <!-- BEGIN SOLUTION -->
# **Why.** 8,192 is the hidden size (64 query heads x 128); grouped-query attention caches only
# the 8 KV heads, 1,024 values per layer for K and as many for V. Everything after that factor,
# the 8 GB and the "~30 sequences", is 8x off.
# <!-- END SOLUTION -->

# %% [markdown]
# ## 04.3 · int4 Llama-2-70B per A100

# %%
show("04.3")

# %%
# BEGIN SOLUTION
m = memlib.get_model("llama-2-70b")  # Llama-3-70B's projections, a 32,000-token vocabulary
h, inter, kv = m.hidden_size, m.intermediate_size, m.num_kv_heads * m.head_dim
projections = m.num_layers * (2 * h * h + 2 * h * kv + 3 * h * inter)  # q, o; k, v; gate, up, down
bits = 4 + 16 / 128 + 4 / 128  # 4-bit weight, a 16-bit scale and a 4-bit zero per group of 128
embedding_and_head = 2 * m.vocab_size * h * 2  # stay bf16
answer = f"{(projections * bits / 8 + embedding_and_head) / 2 / 1e9:.2f} GB"  # split over 2 GPUs
# END SOLUTION
check("04.3", answer)
# hint("04.3")

# %% tags=["solution"]
solution("04.3")

# %% [markdown]
# ## 04.4 · 8k chats on 2 x A100 with fp8 weights

# %%
show("04.4")

# %%
# BEGIN SOLUTION
capacity = 79.15 * 2**30  # what torch sees on one A100 80GB
weights = memlib.estimate_inference("llama-3-70b", weights="fp8-block", tp=2).weight_bytes
per_chat = 2 * 80 * 8 * 128 * 2 / 2 * 8192  # each GPU holds 4 of the 8 KV heads
# peak x 1.05 + 0.5 GiB <= capacity, with peak = weights + prefill + chats x per_chat
room = (capacity - 0.5 * 2**30) / 1.05 - weights - 0.25e9
answer = int(room // per_chat)
# END SOLUTION
check("04.4", answer)
# hint("04.4")

# %% tags=["solution"]
solution("04.4")

# %% [markdown]
# ## 04.5 · Eight H100s: one group or replicas?

# %%
show("04.5")

# %%
# BEGIN SOLUTION
answer = ("a", 1)
# END SOLUTION
check("04.5", answer)
# hint("04.5")

# %% tags=["solution"]
solution("04.5")

# %% [markdown]
# ## 04.6 · What vLLM leaves for the cache: fp8 at 0.95

# %%
show("04.6")

# %%
# BEGIN SOLUTION
answer = f"{0.95 * 79.15 - 33.84 - 1.19 - 0.5:.2f} GiB"  # the cap, then weights, the profile peak, non-torch
# END SOLUTION
check("04.6", answer)
# hint("04.6")

# %% tags=["solution"]
solution("04.6")

# %% [markdown]
# ## 04.7 · PagedAttention's last block

# %%
show("04.7")


# %%
# BEGIN SOLUTION
def paged_kv_waste(tokens, kv_bytes_per_token, block_size):
    """Bytes of a sequence's KV blocks that hold no token."""
    blocks = -(-tokens // block_size)  # ceil: a block is allocated only when the last one is full
    return (blocks * block_size - tokens) * kv_bytes_per_token
# END SOLUTION


check("04.7", paged_kv_waste)
# hint("04.7")

# %% [markdown]
# ## 04.8 · The decode speed limit at 185 chats

# %%
show("04.8")

# %%
# BEGIN SOLUTION
weights_per_gpu = 141.1e9 / 8  # bf16 weights over tp 8
cache_per_gpu = 185 * 8192 * 2 * 80 * 8 * 128 * 2 / 8  # every chat's cache, 1/8 of its KV heads per GPU
answer = f"{(weights_per_gpu + cache_per_gpu) / 3.35e12 * 1e3:.1f} ms"
# END SOLUTION
check("04.8", answer)
# hint("04.8")

# %% tags=["solution"]
solution("04.8")

# %% [markdown]
# ## 04.9 · Serving claims, checked

# %%
show("04.9")

# %%
# BEGIN SOLUTION
answer = "a, c"
# END SOLUTION
check("04.9", answer)
# hint("04.9")

# %% tags=["solution"]
solution("04.9")

# %% [markdown]
# ## 04.10 · 300 chats at 30 tokens/s on 8 x H100

# %%
show("04.10")

# %%
# BEGIN SOLUTION
answer = """
One 8k chat caches about 2.7 GB in bf16 (2 x 80 x 8 x 128 x 2 bytes per token, GQA), 1.3 GB in fp8; the
weights are 141 GB in bf16, about 73 GB in fp8. bf16 weights and cache fit about 185 chats on one tp 8
group, short of 300, so I would serve an fp8 checkpoint (native W8A8 on H100) with an fp8 KV cache: about
420 chats on tp 8, about 370 on two tp 4 replicas. tp 8 holds more; its all-reduces cost more, so I would
benchmark both. vLLM's default gpu_memory_utilization of 0.9 lowers the count a little: read the
"Maximum concurrency" line at startup. Speed: with 300 chats each GPU reads its weights and caches every
step, so each chat gets at most about 57 tokens/s, perhaps 35-45 at real bandwidth utilisation: 30 tokens/s
is plausible but marginal. Before promising it I would load-test with real prompt lengths, chunked prefill
and prefix caching for the shared system prompt.
"""
# END SOLUTION
check("04.10", answer)

# %%
# BEGIN SOLUTION
marks = [True, True, True, True, True, True]  # every rubric point is covered above
# END SOLUTION
mark("04.10", marks)

# %% [markdown]
# ## 04.11 · Speculative decoding: the expected speed-up

# %%
show("04.11")

# %%
# BEGIN SOLUTION
a, g, c = 0.7, 5, 0.1
tokens = (1 - a ** (g + 1)) / (1 - a)  # 1 + a + ... + a^g: the accepted drafts plus the target's own
answer = f"{tokens / (g * c + 1):.2f}x"  # each step: g draft forwards + one target forward
# END SOLUTION
check("04.11", answer)
# hint("04.11")

# %% tags=["solution"]
solution("04.11")

# %% [markdown]
# ## 04.12 · An MHA checkpoint converted to GQA

# %%
show("04.12")

# %%
# BEGIN SOLUTION
kv_heads = 40 // 8  # one K and one V head per group of 8 query heads
answer = f"{2 * 40 * kv_heads * 128 * 2 * 4000 / 1e9:.3f} GB"  # K and V, 40 layers, bf16, 4,000 tokens
# END SOLUTION
check("04.12", answer)
# hint("04.12")

# %% tags=["solution"]
solution("04.12")

# %% [markdown]
# ## 04.13 · Little's law: the KV cache a request rate needs

# %%
show("04.13")

# %%
# BEGIN SOLUTION
in_flight = 8 * (0.5 + 400 * 0.025)              # Little's law: rate x time in the system
per_token = 2 * 32 * 8 * 128 * 2                 # K and V, 32 layers, 8 KV heads of 128, bf16
answer = f"{in_flight * 2048 * per_token / 1e9:.2f} GB"
# END SOLUTION
check("04.13", answer)
# hint("04.13")

# %% tags=["solution"]
solution("04.13")

# %% [markdown]
# ## 04.14 · Why continuous batching raises throughput

# %%
show("04.14")

# %%
# BEGIN SOLUTION
answer = ("b", "1")  # slots refill at every step; a decode step costs about the weights read once
# END SOLUTION
check("04.14", answer)
# hint("04.14")

# %% tags=["solution"]
solution("04.14")

# %% [markdown]
# ## 04.15 · What caps the request rate: the cache or the FLOPs?

# %%
show("04.15")

# %%
# BEGIN SOLUTION
kv = 2 * 32 * 8 * 128 * 2 * 4000                      # one request's cache at full length, bytes
tpot = (15.0e9 + 128 * kv) / 3.35e12                  # weights read + 128 caches, per decode step
memory = 128 / (0.5 + 1000 * tpot)                    # Little's law: 5.1 requests/s
compute = 0.4 * 989.4e12 / (2 * 8.03e9 * 4000)        # 2N per token, attention left out: 6.2 requests/s
answer = ("a", "1")                                   # the smaller binds: memory
# END SOLUTION
check("04.15", answer)
# hint("04.15")

# %% tags=["solution"]
solution("04.15")

# %% [markdown]
# ## 04.16 · Prefill/decode disaggregation: the cache on the wire

# %%
show("04.16")

# %%
# BEGIN SOLUTION
per_token = 2 * 28 * 4 * 128 * 1                     # K and V, 28 layers, 4 KV heads, head dim 128, fp8: 28,672 B
seconds = 32768 * per_token / (4 * 400e9 / 8)         # four GPUs, each its quarter over its own 50 GB/s port
answer = f"{seconds * 1e3:.1f} ms"
# END SOLUTION
check("04.16", answer)
# hint("04.16")

# %% tags=["solution"]
solution("04.16")

# %% [markdown]
# ## 04.17 · KIVI: a 4-bit cache with its scales

# %%
show("04.17")

# %%
# BEGIN SOLUTION
elements = 2 * 32 * 8 * 128                           # per token: 65,536
quantized = (32768 - 128) * elements * (0.5 + 4 / 32) # 4-bit codes + fp16 scale and zero per 32 elements
recent = 128 * elements * 2                           # the residual in bf16
answer = f"{(quantized + recent) / 1e9:.3f} GB"
# END SOLUTION
check("04.17", answer)
# hint("04.17")

# %% tags=["solution"]
solution("04.17")

# %% [markdown]
# ## 04.18 · Disaggregated pools: which workload needs more prefill GPUs?

# %%
show("04.18")

# %%
# BEGIN SOLUTION
prefill_a = 2 * 70e9 * 8000 / (0.5 * 989e12)          # GPU-seconds of prefill per request: ~2.3 (A)
prefill_b = 2 * 70e9 * 500 / (0.5 * 989e12)           # ~0.14 (B)
# decode: a 20 ms step reads 140 GB of weights + the batch's caches over 8 x 3.35 TB/s = 536 GB:
batch_a = (536e9 - 140e9) / (8200 * 327680)           # ~147 chats of 8,200 tokens
batch_b = (536e9 - 140e9) / (1500 * 327680)           # ~800 chats of 1,500 tokens
decode_a = 8 * 200 * 0.020 / batch_a                  # ~0.22 GPU-seconds per request
decode_b = 8 * 1000 * 0.020 / batch_b                 # ~0.20
answer = ("a", "1")                                   # A: ~11 : 1; B: ~0.7 : 1
# END SOLUTION
check("04.18", answer)
# hint("04.18")

# %% tags=["solution"]
solution("04.18")

# %% [markdown]
# ## Your score

# %%
# NBVAL_CHECK_OUTPUT
score("04")

# %% [markdown]
# ## Practice: one more, never the same
#
# `practice("04")` draws a new question of this notebook's kinds with a fresh setup from memlib's
# catalogs (models, GPUs, precisions, counts); a seed makes it reproducible for a class. Answer with
# `check(q.id, answer)`; `hint(q.id)` and `solution(q.id)` work as above. Practice does not count in
# `score()`.

# %%
q = practice("04", seed=1)  # drop the seed for a new question each time
q

# %%
# check(q.id, "your answer")  # then hint(q.id), solution(q.id)
