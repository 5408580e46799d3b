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
# # 00 · Exercises: the anatomy of training memory
#
# Companion to `notebooks/00_memory_anatomy.ipynb`: weights, gradients, optimizer states,
# activations, and the moment of the step where memory peaks. Each exercise says its
# difficulty (warm-up · interview · stretch) and about how long it takes.
# `check("00.k", answer)` grades an answer against a value memlib computes now; numbers may
# carry units (`"987.6 GB"`, `"919.8 GiB"`; a plain number means the unit the question names,
# else bytes). `hint("00.k")` shows the concept, then the formula, then the first step. The
# open question is self-assessed: `check` shows a rubric and a model answer, `mark` records your
# marks. Progress is saved in `.memlib_progress.json` beside the notebook; `score()` sums it up.

# %% [markdown] tags=["solution"]
# **This is the solutions copy:** every exercise is answered and checked. The student copy,
# `exercises/00_memory_anatomy_exercises.ipynb`, is generated from this file by
# `tools/make_exercises.py`. It keeps no progress file (the next cell), so its score below is
# always the same.

# %% tags=["solution"]
import os

os.environ["MEMLIB_PROGRESS"] = "off"

# %%
import memlib
from memlib.learn.grading import check, hint, mark, practice, score, show, solution

# %% [markdown]
# ## 00.1 · Weights of LLaMA-7B in bf16

# %%
show("00.1")

# %%
# BEGIN SOLUTION
n = memlib.get_model("llama-7b").num_params  # exact, not "7B"
answer = f"{n * 2 / 1e9:.2f} GB"  # bf16: 2 bytes per parameter
# END SOLUTION
check("00.1", answer)
# hint("00.1")  # stuck? each call shows one more hint; solution("00.1") shows the worked answer

# %% tags=["solution"]
solution("00.1")

# %% [markdown]
# ## 00.2 · Model states of mixed-precision AdamW for Llama-2-13B

# %%
show("00.2")

# %%
# BEGIN SOLUTION
n = memlib.get_model("llama-2-13b").num_params
per_param = 2 + 2 + 4 + 4 + 4  # 16-bit weights, 16-bit grads, fp32 master, momentum, variance
answer = f"{n * per_param / 1e9:.1f} GB"
# END SOLUTION
check("00.2", answer)
# hint("00.2")

# %% tags=["solution"]
solution("00.2")

# %% [markdown]
# ## 00.3 · The missing master copy in a 7B estimate

# %%
show("00.3")

# %%
# BEGIN SOLUTION
n = memlib.get_model("llama-7b").num_params
answer = ("28GB", f"{n * 16 / 1e9:.1f} GB")  # Adam in mixed precision: 12 bytes/param, not 4
# END SOLUTION
check("00.3", answer)
# hint("00.3")

# %% [markdown]
# <!-- BEGIN SOLUTION -->
# **Why.** "动量+方差" in fp32 is already twice the seed's figure, and the update runs on an
# fp32 master copy of the weights that the paragraph forgets entirely. The 56GB total only
# inherits that error.
# <!-- END SOLUTION -->

# %% [markdown]
# ## 00.4 · Activations of a 7B-shaped GPT, no recompute

# %%
show("00.4")

# %%
# BEGIN SOLUTION
s, b, h, a, layers = 2048, 1, 4096, 32, 32
per_layer = s * b * h * (34 + 5 * a * s / h)  # Korthikanti et al. 2022, eq. (2)
answer = f"{per_layer * layers / 2**30:.2f} GiB"
# END SOLUTION
check("00.4", answer)
# hint("00.4")

# %% tags=["solution"]
solution("00.4")

# %% [markdown]
# ## 00.5 · What full recompute saves at the peak

# %%
show("00.5")

# %%
# BEGIN SOLUTION
plain = memlib.estimate_training("llama-7b", seq_len=2048, micro_batch=4, precision="bf16-mixed", recompute="none")
recomputed = memlib.estimate_training("llama-7b", seq_len=2048, micro_batch=4, precision="bf16-mixed", recompute="full")
for est in (plain, recomputed):  # where each peak sits
    print(est.setup.recompute, est.phase, est.peak_moment.where, f"{est.peak_bytes / 1e9:.2f} GB")
answer = f"{(plain.peak_bytes - recomputed.peak_bytes) / 1e9:.2f} GB"
# END SOLUTION
check("00.5", answer)
# hint("00.5")

# %% tags=["solution"]
solution("00.5")

# %% [markdown]
# ## 00.6 · Where is the peak with full recompute?

# %%
show("00.6")

# %%
# BEGIN SOLUTION
answer = ("c", 3)
# END SOLUTION
check("00.6", answer)
# hint("00.6")

# %% tags=["solution"]
solution("00.6")

# %% [markdown]
# ## 00.7 · Count a LLaMA's parameters

# %%
show("00.7")


# %%
# BEGIN SOLUTION
def llama_params(hidden, layers, heads, kv_heads, intermediate, vocab):
    """Exact parameter count of a LLaMA-architecture model (untied head, GQA)."""
    kv = kv_heads * (hidden // heads)  # width of k_proj and v_proj outputs
    attention = 2 * hidden * hidden + 2 * hidden * kv  # q, o and k, v
    mlp = 3 * hidden * intermediate  # gate, up, down
    norms = 2 * hidden  # input and post-attention RMSNorm
    return layers * (attention + mlp + norms) + 2 * vocab * hidden + hidden  # + embedding, head, final norm
# END SOLUTION


check("00.7", llama_params)
# hint("00.7")

# %% [markdown]
# ## 00.8 · How many GB is an "L40S 48GB"?

# %%
show("00.8")

# %%
# BEGIN SOLUTION
answer = f"{48 * 2**30 / 1e9:.2f} GB"  # the vendor's "48GB" is 48 GiB
# END SOLUTION
check("00.8", answer)
# hint("00.8")

# %% [markdown]
# ## 00.9 · What do you ask back?

# %%
show("00.9")

# %%
# BEGIN SOLUTION
answer = """
First: full fine-tuning or LoRA/QLoRA? Full keeps about 16 bytes per parameter of model states
(over 100 GB for 7B); LoRA keeps a frozen 16-bit base (2 bytes/param) or a 4-bit one. Which
precision and optimizer: mixed-precision AdamW, pure bf16 (8 bytes/param), 8-bit AdamW? What
sequence length and micro-batch: activations grow with the tokens, and with s squared under
eager attention. Is recompute allowed, and is the attention kernel SDPA/FlashAttention? How many
GPUs, and may we shard with ZeRO/FSDP or offload to the CPU? And is it really training, or
serving, which needs only the weights plus the KV cache?
"""
# END SOLUTION
check("00.9", answer)

# %%
# BEGIN SOLUTION
marks = [True, True, True, True, True, True]  # every rubric point is covered above
# END SOLUTION
mark("00.9", marks)

# %% [markdown]
# ## 00.10 · Why does bf16 train without loss scaling?

# %%
show("00.10")

# %%
# BEGIN SOLUTION
answer = ("b", "1")  # fp32's 8 exponent bits: gradients keep a representation far below fp16's smallest normal
# END SOLUTION
check("00.10", answer)
# hint("00.10")

# %% tags=["solution"]
solution("00.10")

# %% [markdown]
# ## Your score

# %%
# NBVAL_CHECK_OUTPUT
score("00")

# %% [markdown]
# ## Practice: one more, never the same
#
# `practice("00")` draws a new question of this notebook's kinds with a fresh setup from memlib's
# catalogs (models, GPUs, precisions, counts); a seed makes it reproducible for a class. Answer with
# `check(q.id, answer)`; `hint(q.id)` and `solution(q.id)` work as above. Practice does not count in
# `score()`.

# %%
q = practice("00", seed=1)  # drop the seed for a new question each time
q

# %%
# check(q.id, "your answer")  # then hint(q.id), solution(q.id)
