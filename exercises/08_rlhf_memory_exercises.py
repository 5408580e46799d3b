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
# # 08 · Exercises: RLHF memory
#
# Companion to `notebooks/08_rlhf_memory.ipynb`: PPO's four models (two trained at 16 bytes per parameter,
# two frozen at 2), the rollout engine's share of the card and the sequences its pool holds, colocated phases
# with and without sleep mode, GRPO against PPO, DPO's policy and reference, and the fewest GPUs for a PPO run. Each exercise says its
# difficulty (warm-up · interview · stretch) and about how long it takes.
# `check("08.k", answer)` grades an answer against a value memlib computes now; numbers may carry units
# (`"987.6 GB"`, `"919.8 GiB"`; a plain number means the unit the question names). `hint("08.k")` shows the
# concept, then the formula, then the first step. The open question is self-assessed: `check` shows a
# rubric and a model answer, `mark` records your marks. Progress is saved in `.memlib_progress.json`
# beside the notebook; `score()` sums it up.

# %% [markdown]
# > Work through each exercise: replace the placeholder, run the cell, and read what `check` says. `hint("NN.k")` gives a hint (call again for the next one: the concept, the formula, the first step), `solution("NN.k")` shows the worked answer. Open questions are self-assessed: `check` shows a rubric and a model answer, then `mark("NN.k", [True, False, ...])` records your marks. Your progress is saved in `.memlib_progress.json` in this folder (it survives a kernel restart; the best attempt counts): `score("08")` sums up this notebook, `score()` all of them.

# %%
import memlib
from memlib.learn.grading import check, hint, mark, practice, score, show, solution

# %% [markdown]
# ## 08.1 · PPO's four models for Qwen3-8B

# %%
show("08.1")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("08.1", answer)
# hint("08.1")

# %% [markdown]
# ## 08.2 · GRPO's rollout: how many sequences at once?

# %%
show("08.2")

# %%
answer = ...  # your answer here: a number with its unit, e.g. 999
check("08.2", answer)
# hint("08.2")

# %% [markdown]
# ## 08.3 · Qwen2.5-7B PPO on 2 GPUs with a hybrid engine

# %%
show("08.3")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("08.3", answer)
# hint("08.3")

# %% [markdown]
# *Your reasoning here.*

# %% [markdown]
# ## 08.4 · GRPO or PPO: which needs more memory?

# %%
show("08.4")

# %%
answer = ...  # your answer here: a pair ("option letter", reason number)
check("08.4", answer)
# hint("08.4")

# %% [markdown]
# ## 08.5 · DPO on a 13B: "two models, 416 GB"

# %%
show("08.5")

# %%
answer = ...  # your answer here: (the wrong figure as written, the right value), e.g. ("99GB", "987.6 GB")
check("08.5", answer)
# hint("08.5")

# %% [markdown]
# ## 08.6 · What is true of RLHF memory?

# %%
show("08.6")

# %%
answer = ...  # your answer here: the letters of every option that applies, separated by commas (or "none")
check("08.6", answer)
# hint("08.6")

# %% [markdown]
# ## 08.7 · PPO on a 13B with every role resident

# %%
show("08.7")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("08.7", answer)
# hint("08.7")

# %% [markdown]
# ## 08.8 · Colocated or separate for a 70B PPO run?

# %%
show("08.8")

# %%
answer = ...  # your answer here: a few sentences in a string
check("08.8", answer)

# %%
marks = ...  # your marks here, after check() shows the rubric: one True/False per point (6 in order)
mark("08.8", marks)

# %% [markdown]
# ## 08.9 · The rollout's KV cache with a shared prompt

# %%
show("08.9")


# %%
def rollout_kv_bytes(layers, kv_heads, head_dim, prompts, group_size, prompt_len, response_len):
    """bf16 K and V of every KV head in every layer; each group caches its prompt once and its G responses."""
    ...  # TODO: your code here (until then it returns None: "not answered yet")


check("08.9", rollout_kv_bytes)
# hint("08.9")

# %% [markdown]
# ## 08.10 · Weight sync: a 70B actor to 4 engines of tensor parallel 8

# %%
show("08.10")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "98.7 s" or 98.7
check("08.10", answer)
# hint("08.10")

# %% [markdown]
# ## 08.11 · Which models does DAPO keep on the GPU?

# %%
show("08.11")

# %%
answer = ...  # your answer here: the letters of every option that applies, separated by commas (or "none")
check("08.11", answer)
# hint("08.11")

# %% [markdown]
# ## Your score

# %%
score("08")

# %% [markdown]
# ## Practice: one more, never the same
#
# `practice("08")` draws a new question of this notebook's kinds with a fresh setup from memlib's
# catalogs (models, algorithms, lengths, counts); a seed makes it reproducible for a class. Answer with
# `check(q.id, answer)`; `hint(q.id)` and `solution(q.id)` work as above. Practice does not count in
# `score()`.

# %%
q = practice("08", seed=1)  # drop the seed for a new question each time
q

# %%
# check(q.id, "your answer")  # then hint(q.id), solution(q.id)

# %% [markdown]
# *Generated file: do not edit.* `tools/make_exercises.py` writes this notebook from `solutions/08_rlhf_memory_solutions.py`; change that file and rerun the tool.
