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
# # 02 · Exercises: what one GPU can train, fine-tune and serve
#
# Companion to `notebooks/02_single_gpu_limits.ipynb`: the largest model one card holds,
# 8-bit optimizers, what ZeRO does on one GPU, the KV cache, and LoRA on a 24GB card. Each
# exercise says its difficulty (warm-up · interview · stretch) and about how long it takes.
# `check("02.k", answer)` grades an answer against a value memlib computes now; numbers may
# carry units (`"987.6 GB"`, `"919.8 GiB"`, `"9.87B"` parameters).
# `hint("02.k")` shows the concept, then the formula, then the first step. The open question
# is self-assessed: `check` shows a rubric and a model answer, `mark` records your marks.
# Progress is saved in `.memlib_progress.json` beside the notebook; `score()` sums it up.

# %% [markdown] tags=["solution"]
# **This is the solutions copy:** every exercise is answered and checked. The student copy,
# `exercises/02_single_gpu_limits_exercises.ipynb`, is generated from this file by
# `tools/make_exercises.py`. It keeps no progress file (the next cell), so its score below is
# always the same.

# %% tags=["solution"]
import os

os.environ["MEMLIB_PROGRESS"] = "off"

# %%
import memlib
from memlib.learn.grading import check, hint, mark, practice, score, show, solution

# %% [markdown]
# ## 02.1 · The largest model an A100 80GB can fully fine-tune

# %%
show("02.1")

# %%
# BEGIN SOLUTION
capacity = memlib.get_gpu("a100-80gb").memory_bytes  # 80 GiB
answer = f"{capacity / 16 / 1e9:.2f}B"  # 16 bytes/param of mixed-precision AdamW states
# END SOLUTION
check("02.1", answer)
# hint("02.1")  # stuck? each call shows one more hint; solution("02.1") shows the worked answer

# %% tags=["solution"]
solution("02.1")

# %% [markdown]
# ## 02.2 · 8-bit Adam: what is 28GB?

# %%
show("02.2")

# %%
# BEGIN SOLUTION
n = memlib.get_model("llama-7b").num_params
fp32_copy = 4 * n
eight_bit_states = 2 * n * (1 + 4 / 256)  # m and v in uint8, one fp32 absmax per 256 values each
answer = ("28GB", f"{(fp32_copy + eight_bit_states) / 1e9:.1f} GB")
# END SOLUTION
check("02.2", answer)
# hint("02.2")

# %% tags=["solution"]
solution("02.2")

# %% [markdown]
# ## 02.3 · ZeRO-1 on one GPU

# %%
show("02.3")

# %%
# BEGIN SOLUTION
n = memlib.get_model("llama-7b").num_params
answer = ("28GB", f"{12 * n / 1e9:.1f} GB")  # dp = 1: nothing is partitioned
# END SOLUTION
check("02.3", answer)
# hint("02.3")

# %% [markdown]
# <!-- BEGIN SOLUTION -->
# **Why.** ZeRO removes the *redundant copies* that data-parallel ranks keep; with a single
# rank there is no redundancy to remove, whatever the stage. Only offload frees GPU memory then.
# <!-- END SOLUTION -->

# %% [markdown]
# ## 02.4 · ZeRO-3 with one GPU

# %%
show("02.4")

# %%
# BEGIN SOLUTION
answer = "c"
# END SOLUTION
check("02.4", answer)
# hint("02.4")

# %% [markdown]
# ## 02.5 · KV-cache bytes

# %%
show("02.5")


# %%
# BEGIN SOLUTION
def kv_cache_bytes(layers, kv_heads, head_dim, dtype_bytes, batch, context):
    """Bytes of the KV cache of `batch` sequences of `context` tokens."""
    per_token = 2 * layers * kv_heads * head_dim * dtype_bytes  # K and V in every layer
    return per_token * batch * context
# END SOLUTION


check("02.5", kv_cache_bytes)
# hint("02.5")

# %% [markdown]
# ## 02.6 · KV cache of Llama-2-70B at batch 16

# %%
show("02.6")

# %%
# BEGIN SOLUTION
per_token = 2 * 80 * 8 * 128 * 2  # K and V, 80 layers, 8 KV heads, head_dim 128, bf16
answer = f"{per_token * 16 * 4096 / 2**30:.2f} GiB"
# END SOLUTION
check("02.6", answer)
# hint("02.6")

# %% tags=["solution"]
solution("02.6")

# %% [markdown]
# ## 02.7 · Serving Llama-3-8B in bf16: the weights

# %%
show("02.7")

# %%
# BEGIN SOLUTION
answer = f"{memlib.get_model('llama-3-8b').num_params * 2 / 1e9:.2f} GB"  # bf16: 2 bytes per parameter
# END SOLUTION
check("02.7", answer)
# hint("02.7")

# %% [markdown]
# ## 02.8 · Fine-tune Llama-2-7B on an RTX 4090

# %%
show("02.8")

# %%
# BEGIN SOLUTION
answer = ("d", 1)
# END SOLUTION
check("02.8", answer)
# hint("02.8")

# %% tags=["solution"]
solution("02.8")

# %% [markdown]
# ## 02.9 · Full fine-tuning a 13B on one A100 80GB

# %%
show("02.9")

# %%
# BEGIN SOLUTION
answer = """
Mixed-precision AdamW needs 16 bytes/param, about 208 GB for 13B: it cannot stay on the GPU. Options:
(1) ZeRO-Offload: optimizer states, fp32 master and fp32 gradients on the CPU (host RAM ~16 bytes/param,
over 200 GB), the GPU keeps 16-bit weights and activations; costs PCIe traffic and a CPU Adam step,
so throughput drops. (2) Pure bf16 weights with an 8-bit optimizer (bitsandbytes): fits without a
host, but small updates are lost without an fp32 master (Kahan summation or stochastic rounding help).
(3) Gradient checkpointing / recompute in every case to keep activations small. (4) If "full" is
negotiable, LoRA or QLoRA. I would pick ZeRO-Offload for fidelity, 8-bit + bf16 for speed.
"""
# END SOLUTION
check("02.9", answer)

# %%
# BEGIN SOLUTION
marks = [True, True, True, True, True, True]  # every rubric point is covered above
# END SOLUTION
mark("02.9", marks)

# %% tags=["solution"]
solution("02.9")

# %% [markdown]
# ## 02.10 · Which questions change the verdict?

# %%
show("02.10")

# %%
# BEGIN SOLUTION
answer = "a, b, d"  # what is trained, the tokens in flight, the card; not data size, epochs or links
# END SOLUTION
check("02.10", answer)
# hint("02.10")

# %% tags=["solution"]
solution("02.10")

# %% [markdown]
# ## 02.11 · What ZeRO-Offload sends over PCIe

# %%
show("02.11")

# %%
# BEGIN SOLUTION
n = memlib.get_model("llama-7b").num_params
answer = f"{(2 * n * 7 + 2 * n * 7 + 4 * n + 2 * n) / 1e9:.1f} GB"  # sums down/up 7 times, fp32 sum down, weights up
# END SOLUTION
check("02.11", answer)
# hint("02.11")

# %% tags=["solution"]
solution("02.11")

# %% [markdown]
# ## Your score

# %%
# NBVAL_CHECK_OUTPUT
score("02")

# %% [markdown]
# ## Practice: one more, never the same
#
# `practice("02")` draws a new question of this notebook's kinds with a fresh setup from memlib's
# catalogs (models, GPUs, precisions, counts); a seed makes it reproducible for a class. Answer with
# `check(q.id, answer)`; `hint(q.id)` and `solution(q.id)` work as above. Practice does not count in
# `score()`.

# %%
q = practice("02", seed=1)  # drop the seed for a new question each time
q

# %%
# check(q.id, "your answer")  # then hint(q.id), solution(q.id)
