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

# %% [markdown]
# # 01 · Exercises: can you fully fine-tune a 65B on 4x V100 32GB?
#
# Companion to `notebooks/01_65b_on_4x_v100.ipynb`: model states under ZeRO, what the
# circulating answer gets wrong, which layout fits, and what it costs. Each exercise says its
# difficulty (warm-up · interview · stretch) and about how long it takes.
# `check("01.k", answer)` grades an answer against a value memlib computes now; numbers may
# carry units (`"123 GB"`, `"114.6 GiB"`; a plain number means the unit the question names,
# else bytes).

# %% [markdown] tags=["solution"]
# **This is the solutions copy:** every exercise is answered and checked. The student copy,
# `exercises/01_65b_on_4x_v100_exercises.ipynb`, is generated from this file by
# `tools/make_exercises.py`.

# %%
import memlib
from memlib.grading import check, hint, score, show, solution

# %% [markdown]
# ## 01.1 · What do 4x V100 32GB hold?

# %%
show("01.1")

# %%
# BEGIN SOLUTION
answer = f"{4 * 32 * 2**30 / 1e9:.1f} GB"  # each "32GB" is 32 GiB
# END SOLUTION
check("01.1", answer)
# hint("01.1")  # stuck? each call shows one more hint; solution("01.1") shows the worked answer

# %% tags=["solution"]
solution("01.1")

# %% [markdown]
# ## 01.2 · 780GB: what is missing?

# %%
show("01.2")

# %%
# BEGIN SOLUTION
n = memlib.get_model("vicuna-65b").num_params
answer = ("780GB", f"{n * (2 + 2 + 12) / 1e9:.0f} GB")  # + the fp32 master copy, 4 bytes/param
# END SOLUTION
check("01.2", answer)
# hint("01.2")

# %% [markdown]
# <!-- BEGIN SOLUTION -->
# **Why.** Every figure before the total is right on its own; the budget simply has no line
# for the fp32 master weights that mixed-precision Adam updates, so the total is a quarter short.
# <!-- END SOLUTION -->

# %% [markdown]
# ## 01.3 · ZeRO-3 over four GPUs

# %%
show("01.3")

# %%
# BEGIN SOLUTION
n = memlib.get_model("vicuna-65b").num_params
answer = f"{n * 16 / 4 / 1e9:.1f} GB"  # all 16 bytes/param divided over 4 GPUs
# END SOLUTION
check("01.3", answer)
# hint("01.3")

# %% tags=["solution"]
solution("01.3")

# %% [markdown]
# ## 01.4 · "Only the optimizer states sharded"

# %%
show("01.4")

# %%
# BEGIN SOLUTION
n = memlib.get_model("vicuna-65b").num_params
per_gpu = 2 * n + 2 * n + 12 * n / 4  # ZeRO-1: weights and grads replicated, optimizer sharded
answer = ("390GB", f"{per_gpu / 1e9:.0f} GB")
# END SOLUTION
check("01.4", answer)
# hint("01.4")

# %% tags=["solution"]
solution("01.4")

# %% [markdown]
# ## 01.5 · How many V100s for the states alone?

# %%
show("01.5")

# %%
# BEGIN SOLUTION
import math

n = memlib.get_model("vicuna-65b").num_params
answer = math.ceil(16 * n / (32 * 2**30))
# END SOLUTION
check("01.5", answer)
# hint("01.5")

# %% [markdown]
# ## 01.6 · Which layout fits 4x V100 32GB?

# %%
show("01.6")

# %%
# BEGIN SOLUTION
answer = ("e", 3)
# END SOLUTION
check("01.6", answer)
# hint("01.6")

# %% tags=["solution"]
solution("01.6")

# %% [markdown]
# ## 01.7 · ZeRO per-GPU model states

# %%
show("01.7")


# %%
# BEGIN SOLUTION
def zero_per_gpu(num_params, stage, dp):
    """Bytes of model states on one GPU under ZeRO `stage` over `dp` GPUs (2 + 2 + 12 bytes/param)."""
    weights = 2 * num_params / (dp if stage >= 3 else 1)
    grads = 2 * num_params / (dp if stage >= 2 else 1)
    optimizer = 12 * num_params / (dp if stage >= 1 else 1)
    return weights + grads + optimizer
# END SOLUTION


check("01.7", zero_per_gpu)
# hint("01.7")

# %% [markdown]
# ## 01.8 · Host RAM for ZeRO-Infinity

# %%
show("01.8")

# %%
# BEGIN SOLUTION
n = memlib.get_model("vicuna-65b").num_params
host_per_param = 12 + 4 + 2  # fp32 master, m, v; fp32 gradient; fp16 parameters
answer = f"{n * host_per_param / 1e9:.0f} GB"  # summed over the four processes' shards
# END SOLUTION
check("01.8", answer)
# hint("01.8")

# %% tags=["solution"]
solution("01.8")

# %% [markdown]
# ## 01.9 · Fine-tune Vicuna-65B on 4x V100 this week

# %%
show("01.9")

# %%
# BEGIN SOLUTION
answer = """
Full fine-tuning needs 16 bytes/param, about 1 TB of model states: on 4x V100 it only fits as
ZeRO-Infinity (optimizer and parameters offloaded to CPU), which needs over a terabyte of host RAM
and runs at a few tens of tokens/s per GPU: days, not hours. I would run QLoRA instead: a 4-bit
NF4 base with LoRA adapters, fp16 with dynamic loss scaling (V100 has no bf16), gradient
checkpointing on, the 4-bit layers split across the four GPUs (a 65B QLoRA needs ~40 GiB, more
than one V100). If the quality target allows, a 33B QLoRA fits one V100 and runs data-parallel.
For real full fine-tuning I would ask for A100/H100 80GB GPUs.
"""
# END SOLUTION
check("01.9", answer)

# %% tags=["solution"]
solution("01.9")

# %% [markdown]
# ## Your score

# %%
# NBVAL_CHECK_OUTPUT
score("01")
