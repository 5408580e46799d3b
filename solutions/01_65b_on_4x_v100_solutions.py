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
# # 01 · Exercises: can you fully fine-tune a 65B on 4x V100 32GB?
#
# Companion to `notebooks/01_65b_on_4x_v100.ipynb`: model states under ZeRO, what the
# circulating answer gets wrong, which layout fits, and what it costs. Each exercise says its
# difficulty (warm-up · interview · stretch) and about how long it takes.
# `check("01.k", answer)` grades an answer against a value memlib computes now; numbers may
# carry units (`"987.6 GB"`, `"919.8 GiB"`; a plain number means the unit the question names,
# else bytes). `hint("01.k")` shows the concept, then the formula, then the first step. The
# open question is self-assessed: `check` shows a rubric and a model answer, `mark` records your
# marks. Progress is saved in `.memlib_progress.json` beside the notebook; `score()` sums it up.

# %% [markdown] tags=["solution"]
# **This is the solutions copy:** every exercise is answered and checked. The student copy,
# `exercises/01_65b_on_4x_v100_exercises.ipynb`, is generated from this file by
# `tools/make_exercises.py`. It keeps no progress file (the next cell), so its score below is
# always the same.

# %% tags=["solution"]
import os

os.environ["MEMLIB_PROGRESS"] = "off"

# %%
import memlib
from memlib.learn.grading import check, hint, mark, practice, score, show, solution

# %% [markdown]
# ## 01.1 · What does a DGX A100 40GB hold?

# %%
show("01.1")

# %%
# BEGIN SOLUTION
answer = f"{8 * 40 * 2**30 / 1e9:.1f} GB"  # each "40GB" is 40 GiB
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
n = memlib.get_model("llama-65b").num_params
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
n = memlib.get_model("llama-65b").num_params
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
n = memlib.get_model("llama-65b").num_params
per_gpu = 2 * n + 2 * n + 12 * n / 4  # ZeRO-1: weights and grads replicated, optimizer (with master) sharded
answer = (["ZeRO-2", "390GB"], f"{per_gpu / 1e9:.0f} GB")
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

n = memlib.get_model("llama-65b").num_params
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
# ## 01.7 · Training FLOPs per token

# %%
show("01.7")


# %%
# BEGIN SOLUTION
def train_flops_per_token(num_params, layers, heads, head_dim, seq_len, recompute):
    """FLOPs of one training token: forward + backward, plus what recompute runs again."""
    attn = layers * heads * head_dim * seq_len  # the attention scores and their use
    flops = 6 * num_params + 12 * attn  # forward 2N + 4 attn, backward twice that
    if recompute == "full":
        flops += 2 * num_params + 4 * attn  # a second forward
    elif recompute == "selective":
        flops += 4 * attn  # only the attention scores again
    return flops
# END SOLUTION


check("01.7", train_flops_per_token)
# hint("01.7")

# %% [markdown]
# ## 01.8 · Host RAM for ZeRO-Infinity, one size down

# %%
show("01.8")

# %%
# BEGIN SOLUTION
n = memlib.get_model("llama-33b").num_params
host_per_param = 12 + 4 + 2  # fp32 master, m, v; fp32 gradient; fp16 parameters
answer = f"{n * host_per_param / 1e9:.0f} GB"  # summed over the four processes' shards
# END SOLUTION
check("01.8", answer)
# hint("01.8")

# %% tags=["solution"]
solution("01.8")

# %% [markdown]
# ## 01.9 · How long is one step?

# %%
show("01.9")

# %%
# BEGIN SOLUTION
m = memlib.get_model("llama-65b")
attn = m.num_layers * m.num_heads * m.head_dim * 2048
flops_per_token = 8 * m.num_params + 16 * attn  # full recompute: the forward runs twice
tokens = 4 * 2048  # one sequence per GPU
answer = f"{flops_per_token * tokens / (4 * 125e12 * 0.4):.1f} s"  # 4 GPUs at 40% of 125 TFLOPS
# END SOLUTION
check("01.9", answer)
# hint("01.9")

# %% tags=["solution"]
solution("01.9")

# %% [markdown]
# ## 01.10 · Fine-tune LLaMA-65B (a Vicuna-style SFT) on 4x V100 this week

# %%
show("01.10")

# %%
# BEGIN SOLUTION
answer = """
Full fine-tuning needs 16 bytes/param, about 1 TB of model states: on 4x V100 it only fits as
ZeRO-Infinity (optimizer and parameters offloaded to CPU), which needs over a terabyte of host RAM
and runs at a few tens of tokens/s per GPU: days, not hours. I would run QLoRA instead: a 4-bit
NF4 base with LoRA adapters, fp16 with dynamic loss scaling (V100 has no bf16), gradient
checkpointing on, the 4-bit layers split across the four GPUs (device_map or FSDP-QLoRA). If the
quality target allows, a 33B QLoRA is cheaper still. For real full fine-tuning I would ask for
A100/H100 80GB GPUs.
"""
# END SOLUTION
check("01.10", answer)

# %%
# BEGIN SOLUTION
marks = [True, True, True, True, True, True]  # every rubric point is covered above
# END SOLUTION
mark("01.10", marks)

# %% [markdown]
# ## 01.11 · The gigabytes a late model load costs under ZeRO-3

# %%
show("01.11")

# %%
# BEGIN SOLUTION
m = memlib.get_model("qwen3-32b")
h, q, kv, inter = m.hidden_size, m.num_heads * m.head_dim, m.num_kv_heads * m.head_dim, m.intermediate_size
layer = h * (q + 2 * kv) + q * h + 3 * h * inter  # q, k, v, o, gate, up, down: what torch's linear keeps
answer = f"{m.num_layers * layer * 2 / 1e9:.2f} GB"  # fp16, whole on every GPU
# END SOLUTION
check("01.11", answer)
# hint("01.11")

# %% tags=["solution"]
solution("01.11")

# %% [markdown]
# ## 01.12 · Why does the allocator report more than was allocated?

# %%
show("01.12")

# %%
# BEGIN SOLUTION
buckets = 2 + 1          # two reductions outstanding, and the third bucket filled before the host blocks
answer = f"{buckets * 3e8 * 2 / 1e9:.2f} GB"   # reduce_bucket_size x 2 bytes (fp16 gradients) each
# END SOLUTION
check("01.12", answer)
# hint("01.12")

# %% tags=["solution"]
solution("01.12")

# %% [markdown]
# ## 01.13 · Step 1 fitted. Will step 2?

# %%
show("01.13")

# %%
# BEGIN SOLUTION
h, f, kv, L, V = 4096, 14336, 1024, 32, 128256        # Llama-3-8B's config.json (8 KV heads of 128)
per_layer = (2 * h * h + 2 * h * kv + 3 * h * f) // 2 + 2 * h   # matrices split by tp 2, the two norms whole
rank_params = L * per_layer + 2 * V * h // 2 + h                 # untied embedding and head split by tp 2
answer = f"{8 * rank_params / 4 / 1e9:.2f} GB"   # Adam's two fp32 moments of this GPU's shard, over dp 4
# END SOLUTION
check("01.13", answer)
# hint("01.13")

# %% tags=["solution"]
solution("01.13")

# %% [markdown]
# ## Your score

# %%
# NBVAL_CHECK_OUTPUT
score("01")

# %% [markdown]
# ## Practice: one more, never the same
#
# `practice("01")` draws a new question of this notebook's kinds with a fresh setup from memlib's
# catalogs (models, GPUs, precisions, counts); a seed makes it reproducible for a class. Answer with
# `check(q.id, answer)`; `hint(q.id)` and `solution(q.id)` work as above. Practice does not count in
# `score()`.

# %%
q = practice("01", seed=1)  # drop the seed for a new question each time
q

# %%
# check(q.id, "your answer")  # then hint(q.id), solution(q.id)
