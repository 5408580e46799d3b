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
# # 09 · Exercises: quantization
#
# Companion to `notebooks/09_quantization.ipynb`: a zero-point by hand, the bytes of a grouped 3-bit
# format, a 72B model in AWQ int4, where W4A16 decode turns compute-bound, a batch-1 decode step,
# which format speeds up a full server, the "4 bits is a quarter" error, what GPTQ, AWQ and
# SmoothQuant do, a serving recommendation, and a 70B in NVFP4. Each exercise says its difficulty (warm-up ·
# interview · stretch) and about how long it takes.
# `check("09.k", answer)` grades an answer against a value memlib computes now; numbers may
# carry units (`"98.7 GB"`, `"9.9 ms"`, `"98.7x"`, `"5.2 bits"` where bytes per weight are asked; a plain
# number means the unit the question names).
# `hint("09.k")` shows the concept, then the formula, then the first step. The open question is
# self-assessed: `check` shows a rubric and a model answer, `mark` records your marks. Progress is
# saved in `.memlib_progress.json` beside the notebook; `score()` sums it up.

# %% [markdown] tags=["solution"]
# **This is the solutions copy:** every exercise is answered and checked. The student copy,
# `exercises/09_quantization_exercises.ipynb`, is generated from this file by
# `tools/make_exercises.py`. It keeps no progress file (the next cell), so its score below is
# always the same.

# %% tags=["solution"]
import os

os.environ["MEMLIB_PROGRESS"] = "off"

# %%
import memlib
from memlib.learn.grading import check, hint, mark, practice, score, show, solution

# %% [markdown]
# ## 09.1 · The zero-point of an int8 activation range

# %%
show("09.1")

# %%
# BEGIN SOLUTION
scale = (3.0 - (-0.5)) / 255  # 255 steps between code 0 and code 255
answer = f"{round(0.5 / scale)}"  # the code of the real value 0: -min / S steps above the bottom
# END SOLUTION
check("09.1", answer)
# hint("09.1")  # stuck? each call shows one more hint; solution("09.1") shows the worked answer

# %% tags=["solution"]
solution("09.1")

# %% [markdown]
# ## 09.2 · Bytes per weight of a 3-bit GPTQ checkpoint

# %%
show("09.2")

# %%
# BEGIN SOLUTION
bits = 3 + (16 + 3) / 64  # the code, plus the group's fp16 scale and 3-bit zero-point shared by 64 weights
answer = f"{bits / 8:.4f}"
# END SOLUTION
check("09.2", answer)
# hint("09.2")

# %% [markdown]
# ## 09.3 · Qwen2.5-72B in AWQ int4

# %%
show("09.3")

# %%
# BEGIN SOLUTION
est = memlib.estimate_inference("qwen2.5-72b", weights="int4-awq")  # projections at 4.156 bits, the rest 16-bit
answer = f"{est.weight_bytes / 1e9:.2f} GB"
# END SOLUTION
check("09.3", answer)
# hint("09.3")

# %% tags=["solution"]
solution("09.3")

# %% [markdown]
# ## 09.4 · Where W4A16 decode turns compute-bound on an A100

# %%
show("09.4")

# %%
# BEGIN SOLUTION
ridge = 312e12 / 2039e9  # FLOP per byte where an A100's bf16 roof meets its bandwidth
bits = 4 + 16 / 128 + 4 / 128  # AWQ int4 g128
answer = f"{ridge * bits / 16:.0f}"  # 2B FLOPs per weight over bits/8 bytes = ridge; a whole batch
# END SOLUTION
check("09.4", answer)
# hint("09.4")

# %% [markdown]
# ## 09.5 · A large batch: which format decodes faster?

# %%
show("09.5")

# %%
# BEGIN SOLUTION
answer = ("b", 1)  # compute-bound at 2,048 sequences: only the int8 tensor cores raise the roof
# END SOLUTION
check("09.5", answer)
# hint("09.5")

# %% tags=["solution"]
solution("09.5")

# %% [markdown]
# ## 09.6 · A batch-1 decode step on a gaming card

# %%
show("09.6")

# %%
# BEGIN SOLUTION
est = memlib.estimate_inference("llama-3.1-8b", batch=1, context_len=1024, weights="int4-awq")
read = est.weight_bytes - est.weight_parts["embedding"] + est.kv_cache_bytes  # one embedding row, not the table
answer = f"{read / 1008e9 * 1e3:.2f} ms"
# END SOLUTION
check("09.6", answer)
# hint("09.6")

# %% [markdown]
# ## 09.7 · "4 bits is a quarter of fp16"

# %%
show("09.7")

# %%
# BEGIN SOLUTION
right = memlib.estimate_inference("llama-2-13b", weights="int4-awq").weight_bytes
answer = ("4 bit", f"{right / 1e9:.2f} GB")
# END SOLUTION
check("09.7", answer)
# hint("09.7")

# %% [markdown]
# <!-- BEGIN SOLUTION -->
# **Why.** A 4-bit code is not the whole weight: each carries 1/128 of an fp16 scale and of a 4-bit
# zero-point (4.156 bits), and the embedding and head stay 16-bit, so the model shrinks about 3.6×.
# <!-- END SOLUTION -->

# %% [markdown]
# ## 09.8 · What GPTQ, AWQ and SmoothQuant do

# %%
show("09.8")

# %%
# BEGIN SOLUTION
answer = "a, c, e"
# END SOLUTION
check("09.8", answer)
# hint("09.8")

# %% tags=["solution"]
solution("09.8")

# %% [markdown]
# ## 09.9 · Should we serve our 70B in int4?

# %%
show("09.9")

# %%
# BEGIN SOLUTION
answer = """
Memory: AWQ int4 makes the weights about 3.5-3.8x smaller, not 4x (scales, zero-points and the 16-bit
embeddings and head): Llama-3-70B goes from about 141 GB to 40 GB, one H100 instead of two, or far more
KV cache on two. Latency at low load: batch-1 decode is memory-bound, so steps get up to ~3.7x shorter
on the same cards (kernels reach about 3.4x); on one card against bf16 on two, about 1.9x per sequence.
Throughput at high load: the per-step gain shrinks past about 77 sequences on an H100 (int4's ridge:
its step turns compute-bound) and is gone near 295 (bf16's ridge); real W4A16 kernels lose it earlier
(dequantization). The bigger gain comes from the larger batch that fits. Accuracy: AWQ's paper has Llama-2-70B at 3.41 vs 3.32 WikiText-2 perplexity at int4 g128;
we run our own evals before switching. Next: an fp8 KV cache for long chats, W8A8 or fp8 if the load
is compute-bound.
"""
# END SOLUTION
check("09.9", answer)

# %%
# BEGIN SOLUTION
marks = [True, True, True, True, True]  # every rubric point is covered above
# END SOLUTION
mark("09.9", marks)

# %% [markdown]
# ## 09.10 · Quantize and dequantize one value

# %%
show("09.10")


# %%
# BEGIN SOLUTION
def round_trip(x, absmax, bits):
    """x after symmetric (absmax) quantization to `bits`-bit signed codes and back."""
    scale = absmax / (2 ** (bits - 1) - 1)  # 127 steps each side for int8
    return scale * round(x / scale)  # the nearest code, times the step
# END SOLUTION


check("09.10", round_trip)
# hint("09.10")

# %% tags=["solution"]
solution("09.10")

# %% [markdown]
# ## 09.11 · A 70B's projections in NVFP4

# %%
show("09.11")

# %%
# BEGIN SOLUTION
bits = 4 + 8 / 16  # an E2M1 value plus its share of the block's E4M3 scale; the fp32 per-tensor scale is ~0
answer = f"{68.45e9 * bits / 8 / 1e9:.1f} GB"
# END SOLUTION
check("09.11", answer)
# hint("09.11")

# %% [markdown]
# ## 09.12 · What fp8 training does to the model states

# %%
show("09.12")

# %%
# BEGIN SOLUTION
n, linear = 7.24e9, 6.98e9  # all parameters, and the linear weights TE casts to fp8 (from the question)
per_param = 2 + 4 + 4 + 4 + 4  # bf16 weight, fp32 main grad, fp32 master, Adam m and v: unchanged by fp8
answer = f"{(per_param * n + 2 * linear) / 1e9:.0f} GB"  # + the fp8 weight and its transpose per linear weight
# END SOLUTION
check("09.12", answer)
# hint("09.12")

# %% [markdown]
# ## Your score

# %%
# NBVAL_CHECK_OUTPUT
score("09")

# %% [markdown]
# ## Practice: one more, never the same
#
# `practice("09")` draws a new question of this notebook's kinds with a fresh setup from memlib's
# catalogs (models, GPUs, formats); a seed makes it reproducible for a class. Answer with
# `check(q.id, answer)`; `hint(q.id)` and `solution(q.id)` work as above. Practice does not count in
# `score()`.

# %%
q = practice("09", seed=1)  # drop the seed for a new question each time
q

# %%
# check(q.id, "your answer")  # then hint(q.id), solution(q.id)
