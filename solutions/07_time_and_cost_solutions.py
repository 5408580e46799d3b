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
# # 07 · Exercises: how long, and how much, to train?
#
# Companion to `notebooks/07_time_and_cost.ipynb`: 6ND and the Chinchilla ratio, days and GPU-hours
# at an MFU, MFU from a throughput, what recompute and ZeRO-3 cost, what sets the GPU count of a
# 70B fine-tune, and what a MoE's published GPU-hours imply. Each exercise says its difficulty
# (warm-up · interview · stretch) and about how long it takes.
# `check("07.k", answer)` grades an answer against a value memlib computes now; numbers may
# carry units (`"9.87e25 FLOPs"`, `"987 days"`, `"987k GPU-hours"`, `"98.7%"`; a plain number means the
# unit the question names). `hint("07.k")` shows the concept, then the formula, then the first
# step. The open question is self-assessed: `check` shows a rubric and a model answer, `mark`
# records your marks. Progress is saved in `.memlib_progress.json` beside the notebook; `score()`
# sums it up.

# %% [markdown] tags=["solution"]
# **This is the solutions copy:** every exercise is answered and checked. The student copy,
# `exercises/07_time_and_cost_exercises.ipynb`, is generated from this file by
# `tools/make_exercises.py`. It keeps no progress file (the next cell), so its score below is
# always the same.

# %% tags=["solution"]
import os

os.environ["MEMLIB_PROGRESS"] = "off"

# %%
import memlib
from memlib.learn.grading import check, hint, mark, practice, score, show, solution

# %% [markdown]
# ## 07.1 · Pretraining FLOPs of Llama-2-7B

# %%
show("07.1")

# %%
# BEGIN SOLUTION
n = memlib.get_model("llama-2-7b").num_params
answer = f"{6 * n * 2e12:.3e} FLOPs"  # 2 FLOPs per parameter forward, 4 backward
# END SOLUTION
check("07.1", answer)
# hint("07.1")  # stuck? each call shows one more hint; solution("07.1") shows the worked answer

# %% tags=["solution"]
solution("07.1")

# %% [markdown]
# ## 07.2 · How far past Chinchilla?

# %%
show("07.2")

# %%
# BEGIN SOLUTION
n = memlib.get_model("llama-3-8b").num_params
answer = f"{15e12 / (20 * n):.2f}x"  # Llama 3's tokens over Chinchilla's 20 per parameter
# END SOLUTION
check("07.2", answer)
# hint("07.2")

# %% [markdown]
# ## 07.3 · Days on 256 B200s

# %%
show("07.3")

# %%
# BEGIN SOLUTION
from memlib import cost

flops = cost.training_flops("llama-2-7b", 2e12, seq_len=4096)  # 6ND + attention
sustained = 256 * memlib.get_gpu("b200").bf16_tflops * 1e12 * 0.40  # FLOP/s at 40% of the dense peak
answer = f"{flops / sustained / 86400:.2f} days"
# END SOLUTION
check("07.3", answer)
# hint("07.3")

# %% tags=["solution"]
solution("07.3")

# %% [markdown]
# ## 07.4 · MFU from a measured throughput

# %%
show("07.4")


# %%
# BEGIN SOLUTION
def mfu(num_params, layers, heads, head_dim, seq_len, tokens_per_s_per_gpu, peak_tflops):
    """The model's FLOPs per second on one GPU over its dense peak (recompute not counted)."""
    flops_per_token = 6 * num_params + 12 * layers * heads * head_dim * seq_len  # PaLM App. B
    return flops_per_token * tokens_per_s_per_gpu / (peak_tflops * 1e12)
# END SOLUTION


check("07.4", mfu)
# hint("07.4")

# %% [markdown]
# ## 07.5 · Does recompute cost more on a deeper model?

# %%
show("07.5")

# %%
# BEGIN SOLUTION
m = memlib.get_model("llama-3.1-70b")
attn = m.num_layers * m.num_heads * m.head_dim * 4096
extra = (2 * m.num_params + 4 * attn) / (6 * m.num_params + 12 * attn)  # one more forward
answer = ("40%", f"{100 * extra:.1f}%")
# END SOLUTION
check("07.5", answer)
# hint("07.5")

# %% [markdown]
# <!-- BEGIN SOLUTION -->
# **Why.** The recomputed forward is a third of the step term by term (2N of 6N, 4·L·H·Q·T of
# 12·L·H·Q·T), so the ratio is the same for 8 layers or 80: depth adds work to both sides.
# <!-- END SOLUTION -->

# %% [markdown]
# ## 07.6 · ZeRO-3's traffic per micro-batch

# %%
show("07.6")

# %%
# BEGIN SOLUTION
psi = memlib.get_model("llama-2-7b").num_params
ring = 255 / 256  # each GPU sends (n - 1) / n of the tensor
gathers = 2 * psi * ring + 2 * (psi - 0.5e9) * ring  # forward, then backward less the 0.5B kept
reduce_scatter = 2 * psi * ring  # bf16 gradients
answer = f"{(gathers + reduce_scatter) / 1e9:.1f} GB"
# END SOLUTION
check("07.6", answer)
# hint("07.6")

# %% tags=["solution"]
solution("07.6")

# %% [markdown]
# ## 07.7 · GPU-hours of a 70B fine-tune

# %%
show("07.7")

# %%
# BEGIN SOLUTION
m = memlib.get_model("llama-3.1-70b")
per_token = memlib.cost.timing.flops_per_token(m, 4096, "full")  # 8N + 16·L·H·Q·T with the recomputed forward
answer = f"{per_token * 1e9 / (989.4e12 * 0.40) / 3600:.0f} GPU-hours"  # independent of the GPU count
# END SOLUTION
check("07.7", answer)
# hint("07.7")

# %% [markdown]
# ## 07.8 · What sets the GPU count of the 70B fine-tune?

# %%
show("07.8")

# %%
# BEGIN SOLUTION
answer = ("b", 1)
# END SOLUTION
check("07.8", answer)
# hint("07.8")

# %% tags=["solution"]
solution("07.8")

# %% [markdown]
# ## 07.9 · What MFU do DeepSeek-V3's GPU-hours imply?

# %%
show("07.9")

# %%
# BEGIN SOLUTION
model_flops = 6 * 37e9 * 14.8e12  # active parameters only
capacity = 2.664e6 * 3600 * 989.4e12  # pretraining GPU-seconds x dense bf16 peak
answer = f"{100 * model_flops / capacity:.1f}%"
# END SOLUTION
check("07.9", answer)
# hint("07.9")

# %% tags=["solution"]
solution("07.9")

# %% [markdown]
# ## 07.10 · A budget request for both runs

# %%
show("07.10")

# %%
# BEGIN SOLUTION
answer = """
Pretraining the 7B: 6ND with the exact 6.74B parameters plus the attention term at 4k is about 9.4e22
FLOPs. I assume 40% MFU, the middle of Llama 3's reported 38-43% on H100s. On 256 H100s that is about
11 days and 66k GPU-hours; with 400 Gb/s per GPU, ZeRO-3's gathers and reduce-scatters hide behind the
compute, on 200 Gb/s they would not. Fine-tuning the 70B: full fine-tuning keeps 16 bytes per parameter,
so memory, not the deadline, sets the count at 16 H100s; it needs full recompute, a third more FLOPs,
about 430 GPU-hours. At $2 per GPU-hour: about $130k and $1k. Risks: failures, restarts, evaluation and
checkpoints add 5-15% over 6ND, and MFU drops at scale, so I ask for a 20% margin.
"""
# END SOLUTION
check("07.10", answer)

# %%
# BEGIN SOLUTION
marks = [True, True, True, True, True, True]  # every rubric point is covered above
# END SOLUTION
mark("07.10", marks)

# %% [markdown]
# ## 07.11 · How often to checkpoint a 4,096-GPU run

# %%
show("07.11")

# %%
# BEGIN SOLUTION
n = memlib.get_model("llama-3.1-70b").num_params
write_s = 14 * n / 200e9                      # bf16 weights 2 + fp32 master, m, v 12 bytes per parameter
mtbf_s = 54 * 86400 / 419 * 16384 / 4096      # Llama 3's failure rate, a quarter of its GPUs
answer = f"{(2 * write_s * mtbf_s) ** 0.5:.0f} s"  # Young 1974
# END SOLUTION
check("07.11", answer)
# hint("07.11")

# %% tags=["solution"]
solution("07.11")

# %% [markdown]
# ## 07.12 · What a million served tokens cost

# %%
show("07.12")

# %%
# BEGIN SOLUTION
kv = 48 * 4096 * 2 * 32 * 8 * 128 * 2                # 48 chats' bf16 caches, bytes
step = (15.0e9 + kv) / 3.35e12                        # the decode roofline, seconds per step
tokens_per_hour = 48 / step * 3600 * 0.40             # one token per chat per step, busy 40% of the hours
answer = f"${3.00 / tokens_per_hour * 1e6:.2f}"
# END SOLUTION
check("07.12", answer)
# hint("07.12")

# %% tags=["solution"]
solution("07.12")

# %% [markdown]
# ## Your score

# %%
# NBVAL_CHECK_OUTPUT
score("07")

# %% [markdown]
# ## Practice: one more, never the same
#
# `practice("07")` draws a new question of this notebook's kinds with a fresh setup from memlib's
# catalogs (models, GPUs, precisions, counts); a seed makes it reproducible for a class. Answer with
# `check(q.id, answer)`; `hint(q.id)` and `solution(q.id)` work as above. Practice does not count in
# `score()`.

# %%
q = practice("07", seed=1)  # drop the seed for a new question each time
q

# %%
# check(q.id, "your answer")  # then hint(q.id), solution(q.id)
