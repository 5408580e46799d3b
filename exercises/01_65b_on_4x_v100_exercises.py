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

# %% [markdown]
# > Work through each exercise: replace the placeholder, run the cell, and read what `check` says. `hint("NN.k")` gives a hint (call again for the next one: the concept, the formula, the first step), `solution("NN.k")` shows the worked answer. Open questions are self-assessed: `check` shows a rubric and a model answer, then `mark("NN.k", [True, False, ...])` records your marks. Your progress is saved in `.memlib_progress.json` in this folder (it survives a kernel restart; the best attempt counts): `score("01")` sums up this notebook, `score()` all of them.

# %%
import memlib
from memlib.learn.grading import check, hint, mark, practice, score, show, solution

# %% [markdown]
# ## 01.1 · What does a DGX A100 40GB hold?

# %%
show("01.1")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("01.1", answer)
# hint("01.1")  # stuck? each call shows one more hint; solution("01.1") shows the worked answer

# %% [markdown]
# ## 01.2 · 780GB: what is missing?

# %%
show("01.2")

# %%
answer = ...  # your answer here: (the wrong figure as written, the right value), e.g. ("99GB", "987.6 GB")
check("01.2", answer)
# hint("01.2")

# %% [markdown]
# *Your reasoning here.*

# %% [markdown]
# ## 01.3 · ZeRO-3 over four GPUs

# %%
show("01.3")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or "919.8 GiB"
check("01.3", answer)
# hint("01.3")

# %% [markdown]
# ## 01.4 · "Only the optimizer states sharded"

# %%
show("01.4")

# %%
answer = ...  # your answer here: ([the wrong figures as written], the right value), e.g. (["99GB", "ZeRO-9"], "987.6 GB")
check("01.4", answer)
# hint("01.4")

# %% [markdown]
# ## 01.5 · How many V100s for the states alone?

# %%
show("01.5")

# %%
answer = ...  # your answer here: a number with its unit, e.g. 999
check("01.5", answer)
# hint("01.5")

# %% [markdown]
# ## 01.6 · Which layout fits 4x V100 32GB?

# %%
show("01.6")

# %%
answer = ...  # your answer here: a pair ("option letter", reason number)
check("01.6", answer)
# hint("01.6")

# %% [markdown]
# ## 01.7 · Training FLOPs per token

# %%
show("01.7")


# %%
def train_flops_per_token(num_params, layers, heads, head_dim, seq_len, recompute):
    """FLOPs of one training token: forward + backward, plus what recompute runs again."""
    ...  # TODO: your code here (until then it returns None: "not answered yet")


check("01.7", train_flops_per_token)
# hint("01.7")

# %% [markdown]
# ## 01.8 · Host RAM for ZeRO-Infinity, one size down

# %%
show("01.8")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or "919.8 GiB"
check("01.8", answer)
# hint("01.8")

# %% [markdown]
# ## 01.9 · How long is one step?

# %%
show("01.9")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "98.7 s" or 98.7
check("01.9", answer)
# hint("01.9")

# %% [markdown]
# ## 01.10 · Fine-tune LLaMA-65B (a Vicuna-style SFT) on 4x V100 this week

# %%
show("01.10")

# %%
answer = ...  # your answer here: a few sentences in a string
check("01.10", answer)

# %%
marks = ...  # your marks here, after check() shows the rubric: one True/False per point (6 in order)
mark("01.10", marks)

# %% [markdown]
# ## 01.11 · The gigabytes a late model load costs under ZeRO-3

# %%
show("01.11")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or "919.8 GiB"
check("01.11", answer)
# hint("01.11")

# %% [markdown]
# ## 01.12 · Why does the allocator report more than was allocated?

# %%
show("01.12")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or "919.8 GiB"
check("01.12", answer)
# hint("01.12")

# %% [markdown]
# ## 01.13 · Step 1 fitted. Will step 2?

# %%
show("01.13")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or "919.8 GiB"
check("01.13", answer)
# hint("01.13")

# %% [markdown]
# ## Your score

# %%
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

# %% [markdown]
# *Generated file: do not edit.* `tools/make_exercises.py` writes this notebook from `solutions/01_65b_on_4x_v100_solutions.py`; change that file and rerun the tool.
