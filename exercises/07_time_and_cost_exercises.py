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

# %% [markdown]
# > Work through each exercise: replace the placeholder, run the cell, and read what `check` says. `hint("NN.k")` gives a hint (call again for the next one: the concept, the formula, the first step), `solution("NN.k")` shows the worked answer. Open questions are self-assessed: `check` shows a rubric and a model answer, then `mark("NN.k", [True, False, ...])` records your marks. Your progress is saved in `.memlib_progress.json` in this folder (it survives a kernel restart; the best attempt counts): `score("07")` sums up this notebook, `score()` all of them.

# %%
import memlib
from memlib.learn.grading import check, hint, mark, practice, score, show, solution

# %% [markdown]
# ## 07.1 · Pretraining FLOPs of Llama-2-7B

# %%
show("07.1")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "9.87e25 FLOPs" or 9.87e25
check("07.1", answer)
# hint("07.1")  # stuck? each call shows one more hint; solution("07.1") shows the worked answer

# %% [markdown]
# ## 07.2 · How far past Chinchilla?

# %%
show("07.2")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "98.7x" or 98.7
check("07.2", answer)
# hint("07.2")

# %% [markdown]
# ## 07.3 · Days on 256 B200s

# %%
show("07.3")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987 days" or 987
check("07.3", answer)
# hint("07.3")

# %% [markdown]
# ## 07.4 · MFU from a measured throughput

# %%
show("07.4")


# %%
def mfu(num_params, layers, heads, head_dim, seq_len, tokens_per_s_per_gpu, peak_tflops):
    """The model's FLOPs per second on one GPU over its dense peak (recompute not counted)."""
    ...  # TODO: your code here (until then it returns None: "not answered yet")


check("07.4", mfu)
# hint("07.4")

# %% [markdown]
# ## 07.5 · Does recompute cost more on a deeper model?

# %%
show("07.5")

# %%
answer = ...  # your answer here: (the wrong figure as written, the right value), e.g. ("99GB", "987.6 GB")
check("07.5", answer)
# hint("07.5")

# %% [markdown]
# *Your reasoning here.*

# %% [markdown]
# ## 07.6 · ZeRO-3's traffic per micro-batch

# %%
show("07.6")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("07.6", answer)
# hint("07.6")

# %% [markdown]
# ## 07.7 · GPU-hours of a 70B fine-tune

# %%
show("07.7")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987k GPU-hours" or 987000
check("07.7", answer)
# hint("07.7")

# %% [markdown]
# ## 07.8 · What sets the GPU count of the 70B fine-tune?

# %%
show("07.8")

# %%
answer = ...  # your answer here: a pair ("option letter", reason number)
check("07.8", answer)
# hint("07.8")

# %% [markdown]
# ## 07.9 · What MFU do DeepSeek-V3's GPU-hours imply?

# %%
show("07.9")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "98.7%" or 98.7
check("07.9", answer)
# hint("07.9")

# %% [markdown]
# ## 07.10 · A budget request for both runs

# %%
show("07.10")

# %%
answer = ...  # your answer here: a few sentences in a string
check("07.10", answer)

# %%
marks = ...  # your marks here, after check() shows the rubric: one True/False per point (6 in order)
mark("07.10", marks)

# %% [markdown]
# ## 07.11 · How often to checkpoint a 4,096-GPU run

# %%
show("07.11")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "98.7 s" or 98.7
check("07.11", answer)
# hint("07.11")

# %% [markdown]
# ## 07.12 · What a million served tokens cost

# %%
show("07.12")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "$98.70" or 98.7
check("07.12", answer)
# hint("07.12")

# %% [markdown]
# ## Your score

# %%
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

# %% [markdown]
# *Generated file: do not edit.* `tools/make_exercises.py` writes this notebook from `solutions/07_time_and_cost_solutions.py`; change that file and rerun the tool.
