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
# # 05 · Exercises: DeepSeek-V3, serving and fine-tuning a 671B MoE
#
# Companion to `notebooks/05_moe_memory.ipynb`: every expert resident, FLOPs from the active
# parameters, MLA's latent cache and tensor parallelism, the serving layout with the most chats,
# the states of full fine-tuning, what a decode step reads, expert parallelism's all-to-all, and
# what LoRA saves. Each exercise says its difficulty (warm-up · interview · stretch) and about how
# long it takes. `check("05.k", answer)` grades an answer against a value memlib computes now;
# numbers may carry units (`"987.6 GB"`, `"98.7 KB"`; a plain number means the unit the question
# names). `hint("05.k")` shows the concept, then the formula, then the first step. The open
# question is self-assessed: `check` shows a rubric and a model answer, `mark` records your marks.
# Progress is saved in `.memlib_progress.json` beside the notebook; `score()` sums it up.

# %% [markdown] tags=["solution"]
# **This is the solutions copy:** every exercise is answered and checked. The student copy,
# `exercises/05_moe_memory_exercises.ipynb`, is generated from this file by
# `tools/make_exercises.py`. It keeps no progress file (the next cell), so its score below is
# always the same.

# %% tags=["solution"]
import os

os.environ["MEMLIB_PROGRESS"] = "off"

# %%
import memlib
from memlib.learn.grading import check, hint, mark, practice, score, show, solution

# %% [markdown]
# ## 05.1 · Mixtral-8x22B's weights on the serving GPUs

# %%
show("05.1")

# %%
# BEGIN SOLUTION
n = memlib.get_model("mixtral-8x22b").num_params
answer = f"{n * 2 / 1e9:.0f} GB"  # every expert resident, 2 bytes per weight in bf16
# END SOLUTION
check("05.1", answer)
# hint("05.1")  # stuck? each call shows one more hint; solution("05.1") shows the worked answer

# %% tags=["solution"]
solution("05.1")

# %% [markdown]
# ## 05.2 · MLA's KV cache per token

# %%
show("05.2")

# %%
# BEGIN SOLUTION
answer = f"{(512 + 64) * 61 * 2} bytes"  # latent + rope key, per layer, bf16
# END SOLUTION
check("05.2", answer)
# hint("05.2")

# %% tags=["solution"]
solution("05.2")

# %% [markdown]
# ## 05.3 · Weight bytes one decode step reads

# %%
show("05.3")


# %%
# BEGIN SOLUTION
def weight_bytes_read(other_bytes, expert_bytes, num_experts, top_k, tokens):
    """Weight bytes a decode step of `tokens` tokens reads: non-expert weights once, the touched experts."""
    missed = (1 - top_k / num_experts) ** tokens  # a given expert is picked by none of the tokens
    touched = num_experts * (1 - missed)  # distinct experts the batch touches, in expectation
    return other_bytes + expert_bytes * touched / num_experts
# END SOLUTION


check("05.3", weight_bytes_read)
# hint("05.3")

# %% [markdown]
# ## 05.4 · How many times fewer FLOPs?

# %%
show("05.4")

# %%
# BEGIN SOLUTION
m = memlib.get_model("qwen3-235b-a22b")
answer = f"{m.num_params / m.num_active_params:.1f}x"  # 6N / 6N_active: the 6s cancel
# END SOLUTION
check("05.4", answer)
# hint("05.4")

# %% [markdown]
# <!-- BEGIN SOLUTION -->
# **Why not 16x.** 128 / 8 compares the routed experts only. Every token also passes through the
# attention, the routers, the embeddings and the output head, about 8B parameters that no routing
# skips, so the ratio is lower. DeepSeek-V3's 18x (notebook 05) is the same method on other counts.
# <!-- END SOLUTION -->

# %% [markdown]
# ## 05.5 · "Tensor parallelism splits the latent cache"

# %%
show("05.5")

# %%
# BEGIN SOLUTION
per_chat = 70_272 * 8192  # the whole latent of an 8k chat, on every tensor-parallel GPU
answer = ("8.8 KB", round(55e9 / per_chat))
# END SOLUTION
check("05.5", answer)
# hint("05.5")

# %% tags=["solution"]
solution("05.5")

# %% [markdown]
# ## 05.6 · Most 8k chats on 8 x H200

# %%
show("05.6")

# %%
# BEGIN SOLUTION
answer = ("c", 2)
# END SOLUTION
check("05.6", answer)
# hint("05.6")

# %% tags=["solution"]
solution("05.6")

# %% [markdown]
# ## 05.7 · H200s for the model states alone, DeepSeek's way

# %%
show("05.7")

# %%
# BEGIN SOLUTION
import math

n = memlib.get_model("deepseek-v3").num_params
h200 = memlib.hardware.fit.usable_bytes(memlib.get_gpu("h200"))  # what torch reports: 150.1 GB
answer = math.ceil((4 + 4 + 2 + 2) * n / h200)  # fp32 weights, fp32 gradients, bf16 m, v; all 671B; whole GPUs
# END SOLUTION
check("05.7", answer)
# hint("05.7")

# %% tags=["solution"]
solution("05.7")

# %% [markdown]
# ## 05.8 · LoRA, expert parallelism, decode, MLA: what is true?

# %%
show("05.8")

# %%
# BEGIN SOLUTION
answer = "b, d"
# END SOLUTION
check("05.8", answer)
# hint("05.8")

# %% tags=["solution"]
solution("05.8")

# %% [markdown]
# ## 05.9 · One dispatch all-to-all

# %%
show("05.9")

# %%
# BEGIN SOLUTION
rows = 4096 * 8  # every token sent to its top-8 experts
answer = f"{rows * 7168 * 2 * 7 / 8 / 1e9:.3f} GB"  # bf16 hidden states; 1/8 of the rows stay on the GPU
# END SOLUTION
check("05.9", answer)
# hint("05.9")

# %% tags=["solution"]
solution("05.9")

# %% [markdown]
# ## 05.10 · Fine-tune and serve your own DeepSeek-V3

# %%
show("05.10")

# %%
# BEGIN SOLUTION
answer = """
Serving: keep the fp8 checkpoint as released (about 670 GB, never upcast to bf16) on one 8 x H200 node
with SGLang (--enable-dp-attention) or vLLM (data parallel 8 + expert parallel). Each GPU then holds
all attention weights and 32 of the 256 experts per layer, about 100 GB, and caches only its own chats:
MLA's latent is 70 KB per token, so roughly 540 chats of 8k fit; with tensor parallel 8 alone about 100,
because the latent is replicated on every GPU. Two 8 x H100 nodes would also do.
Fine-tuning: full fine-tuning keeps 16 bytes per parameter of all 671B, about 10.7 TB, so ZeRO-3 with
expert parallelism and full recompute over about 96 H200s (or 176 H100s), whole nodes. Time: 1B tokens at
6 x 37B FLOPs per token are 2.2e20 FLOPs; at 40% MFU of an H200's 989 TFLOP/s that is about 160 GPU-hours
(about 210 counting attention at 4k tokens), under 3 hours on 96 GPUs. That MFU is optimistic here: a step
model of this layout leaves about half of each step to exposed expert-parallel all-to-all, an achieved
MFU under 10% and roughly 900 GPU-hours. I would quote both and say which is which. LoRA would save the gradients and
optimizer states but still holds the 1.3 TB bf16 base over 2-3 nodes, and needs a framework that adapts
stacked experts. I would never size anything from the 37B active parameters.
"""
# END SOLUTION
check("05.10", answer)

# %%
# BEGIN SOLUTION
marks = [True, True, True, True, True, True]  # every rubric point is covered above
# END SOLUTION
mark("05.10", marks)

# %% [markdown]
# ## 05.11 · MTP as a free draft: the speed-up

# %%
show("05.11")

# %%
# BEGIN SOLUTION
alpha, draft, main = 0.75, 1.61e9, 37.6e9  # from the question
c = draft / main  # one draft forward costs this fraction of a main forward (memory-bound)
answer = f"{(1 + alpha) / (1 + c):.2f}x"  # 1 + alpha tokens per main step, each step now costs 1 + c
# END SOLUTION
check("05.11", answer)
# hint("05.11")

# %% [markdown]
# ## Your score

# %%
# NBVAL_CHECK_OUTPUT
score("05")

# %% [markdown]
# ## Practice: one more, never the same
#
# `practice("05")` draws a new question of this notebook's kinds with a fresh setup from memlib's
# catalogs (models, GPUs, precisions, counts); a seed makes it reproducible for a class. Answer with
# `check(q.id, answer)`; `hint(q.id)` and `solution(q.id)` work as above. Practice does not count in
# `score()`.

# %%
q = practice("05", seed=1)  # drop the seed for a new question each time
q

# %%
# check(q.id, "your answer")  # then hint(q.id), solution(q.id)
