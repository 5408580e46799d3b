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
# # 06 · Exercises: what changes when you train at 128k tokens?
#
# Companion to `notebooks/06_long_context.ipynb`: the logits of a large vocabulary, eager attention's
# s², what recompute keeps, context parallelism's memory and ring traffic, what a long sequence costs
# in FLOPs, the KV cache at 128k, a layout that fits, what FlashAttention and a sliding window save,
# what a per-document mask saves in a packed row, which RoPE pairs Llama 3.1's scaling stretches.
# Most setups differ from the notebook's (another model, length or cp degree): use its method. Each exercise says its difficulty (warm-up ·
# interview · stretch) and about how long it takes. `check("06.k", answer)` grades an answer against a
# value memlib computes now; numbers may carry units (`"987.6 GB"`, `"919.8 GiB"`; a plain number means
# the unit the question names, else bytes). `hint("06.k")` shows the concept, then the formula, then
# the first step. The open question is self-assessed: `check` shows a rubric and a model answer,
# `mark` records your marks. Progress is saved in `.memlib_progress.json` beside the notebook;
# `score()` sums it up.

# %% [markdown] tags=["solution"]
# **This is the solutions copy:** every exercise is answered and checked. The student copy,
# `exercises/06_long_context_exercises.ipynb`, is generated from this file by
# `tools/make_exercises.py`. It keeps no progress file (the next cell), so its score below is
# always the same.

# %% tags=["solution"]
import os

os.environ["MEMLIB_PROGRESS"] = "off"

# %%
import memlib
from memlib.learn.grading import check, hint, mark, practice, score, show, solution

# %% [markdown]
# ## 06.1 · The logits and loss of a 152k vocabulary

# %%
show("06.1")

# %%
# BEGIN SOLUTION
V, T = 152_064, 24_576  # Qwen2.5-7B's vocabulary, one 24k sequence
answer = f"{T * V * (2 + 3 * 4) / 1e9:.1f} GB"  # bf16 logits + fp32 log-softmax output and two fp32 gradients
# END SOLUTION
check("06.1", answer)
# hint("06.1")  # stuck? each call shows one more hint; solution("06.1") shows the worked answer

# %% tags=["solution"]
solution("06.1")

# %% [markdown]
# ## 06.2 · Activations per GPU with context parallelism

# %%
show("06.2")

# %%
# BEGIN SOLUTION
per_token_layer = 200_832  # bytes, one layer (the notebook's ledger)
answer = f"{per_token_layer * (98_304 // 2) * 32 / 1e9:.1f} GB"  # 49,152 tokens on each GPU, 32 layers
# END SOLUTION
check("06.2", answer)
# hint("06.2")

# %% tags=["solution"]
solution("06.2")

# %% [markdown]
# ## 06.3 · "~32 GB * num_heads"

# %%
show("06.3")

# %%
# BEGIN SOLUTION
per_layer = 32 * 131_072**2 * (4 + 2)  # 32 heads, s² scores, fp32 softmax + its bf16 copy
answer = (["2 bytes"], f"{per_layer / 1e9:.0f} GB")  # "~32 GB" is 32 GiB labelled GB, not an error
# END SOLUTION
check("06.3", answer)
# hint("06.3")

# %% [markdown]
# <!-- BEGIN SOLUTION -->
# **Why.** The arithmetic 128k x 128k x 2 bytes is one bf16 copy of one head's scores, and it is
# 34.4 GB, i.e. 32 GiB. transformers' eager attention keeps the fp32 softmax output and its bf16 cast,
# so one layer of Llama-3.1-8B keeps three times the quoted figure per head, for each of its 32 heads.
# <!-- END SOLUTION -->

# %% [markdown]
# ## 06.4 · What full recompute keeps for a 70B at 96k

# %%
show("06.4")

# %%
# BEGIN SOLUTION
answer = f"{98_304 * 8192 * 2 * 80 / 1e9:.1f} GB"  # each layer's bf16 input, 80 layers
# END SOLUTION
check("06.4", answer)
# hint("06.4")

# %% tags=["solution"]
solution("06.4")

# %% [markdown]
# ## 06.5 · Which layout trains Llama-3.1-8B at 128k on 8 H100s?

# %%
show("06.5")

# %%
# BEGIN SOLUTION
answer = ("d", 1)
# END SOLUTION
check("06.5", answer)
# hint("06.5")

# %% tags=["solution"]
solution("06.5")

# %% [markdown]
# ## 06.6 · How much more does a 128k sequence cost than an 8k one?

# %%
show("06.6")

# %%
# BEGIN SOLUTION
N, L, H, Q = 8_030_261_248, 32, 32, 128


def seq_flops(T):
    return T * (6 * N + 12 * L * H * Q * T)  # PaLM's FLOPs per token x tokens


answer = f"{seq_flops(131_072) / seq_flops(8_192):.1f}x"
# END SOLUTION
check("06.6", answer)
# hint("06.6")

# %% tags=["solution"]
solution("06.6")

# %% [markdown]
# ## 06.7 · Ring attention's traffic per layer

# %%
show("06.7")


# %%
# BEGIN SOLUTION
def ring_kv_bytes_per_layer(kv_heads, head_dim, seq_len, cp, micro_batch, recompute):
    """Bytes one GPU sends for one layer and one micro-batch under context parallelism (bf16 K/V, fp32 dK/dV)."""
    block = 2 * 2 * kv_heads * head_dim * seq_len // cp * micro_batch  # this GPU's keys and values, bf16
    forwards = 2 if recompute == "full" else 1  # full recompute runs the ring forward again
    return forwards * (cp - 1) * block + (cp - 1) * block + cp * 2 * block  # + fp32 dK/dV around the ring
# END SOLUTION


check("06.7", ring_kv_bytes_per_layer)
# hint("06.7")

# %% [markdown]
# ## 06.8 · The KV cache of one 128k conversation with the 405B

# %%
show("06.8")

# %%
# BEGIN SOLUTION
answer = f"{2 * 126 * 8 * 128 * 2 * 131_072 / 1e9:.2f} GB"  # K and V, 126 layers, 8 K/V heads of 128, bf16
# END SOLUTION
check("06.8", answer)
# hint("06.8")

# %% tags=["solution"]
solution("06.8")

# %% [markdown]
# ## 06.9 · Train Llama-3.1-70B at 128k

# %%
show("06.9")

# %%
# BEGIN SOLUTION
answer = """
No eager attention: a fused flash/cuDNN kernel, since one eager layer at 128k keeps terabytes. Split
the sequence with context parallelism (CP 8 across the nodes, seq_len a multiple of 2 x cp) and use
tensor parallelism 8 inside each node for the 70B; FSDP shards the model states over the data-parallel
and CP GPUs. Selective recompute (full if the margin is thin) and a vocabulary-parallel or chunked loss
for the 128k-vocabulary logits: memlib puts such layouts at 40-70 GiB per H100. CP adds K/V traffic per
layer, hidden behind attention; TP adds activation all-reduces, so it stays on NVLink. Attention is most
of the FLOPs at 128k, so expect several times fewer tokens/s per GPU than at 8k. First, measure one
step's peak memory (max_memory_allocated) with the real kernels on one node.
"""
# END SOLUTION
check("06.9", answer)

# %%
# BEGIN SOLUTION
marks = [True, True, True, True, True, True, True]  # every rubric point is covered above
# END SOLUTION
mark("06.9", marks)

# %% [markdown]
# ## 06.10 · What a sliding window saves in attention FLOPs

# %%
show("06.10")

# %%
# BEGIN SOLUTION
T, w = 65_536, 4_096
full = T / 2                     # causal: a query sees the tokens before it, T/2 on average
window = w - w * w / (2 * T)     # the first w queries form a triangle, the rest see w keys each
answer = f"{full / window:.2f}x"
# END SOLUTION
check("06.10", answer)
# hint("06.10")

# %% tags=["solution"]
solution("06.10")

# %% [markdown]
# ## 06.11 · What does FlashAttention save?

# %%
show("06.11")

# %%
# BEGIN SOLUTION
answer = ("b", 1)
# END SOLUTION
check("06.11", answer)
# hint("06.11")

# %% tags=["solution"]
solution("06.11")

# %% [markdown]
# ## 06.12 · What a per-document mask saves in a packed row

# %%
show("06.12")

# %%
# BEGIN SOLUTION
docs = [16_384] + [1_024] * 16
T = sum(docs)
kept = sum(d * (d + 1) // 2 for d in docs)     # each document attends only to itself (causal)
full = T * (T + 1) // 2                        # one causal mask over the whole row
answer = f"{100 * (1 - kept / full):.1f}%"
# END SOLUTION
check("06.12", answer)
# hint("06.12")

# %% tags=["solution"]
solution("06.12")

# %% [markdown]
# ## 06.13 · Which RoPE pairs does Llama 3.1 stretch?

# %%
show("06.13")

# %%
# BEGIN SOLUTION
import math

theta = 500_000 ** (-66 / 128)                 # pair 33 of d = 128
wavelength = 2 * math.pi / theta               # positions per turn
r = 8_192 / wavelength                         # turns in the original context: 1.5, between low 1 and high 4
gamma = (r - 1) / (4 - 1)                      # Llama 3.1's smooth factor
answer = f"{1 / ((1 - gamma) / 8 + gamma):.2f}x"
# END SOLUTION
check("06.13", answer)
# hint("06.13")

# %% tags=["solution"]
solution("06.13")

# %% [markdown]
# ## Your score

# %%
# NBVAL_CHECK_OUTPUT
score("06")

# %% [markdown]
# ## Practice: one more, never the same
#
# `practice("06")` draws a new question of this notebook's kinds with a fresh setup from memlib's
# catalogs (models, GPUs, precisions, counts); a seed makes it reproducible for a class. Answer with
# `check(q.id, answer)`; `hint(q.id)` and `solution(q.id)` work as above. Practice does not count in
# `score()`.

# %%
q = practice("06", seed=1)  # drop the seed for a new question each time
q

# %%
# check(q.id, "your answer")  # then hint(q.id), solution(q.id)
