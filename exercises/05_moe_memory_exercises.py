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

# %% [markdown]
# > Work through each exercise: replace the placeholder, run the cell, and read what `check` says. `hint("NN.k")` gives a hint (call again for the next one: the concept, the formula, the first step), `solution("NN.k")` shows the worked answer. Open questions are self-assessed: `check` shows a rubric and a model answer, then `mark("NN.k", [True, False, ...])` records your marks. Your progress is saved in `.memlib_progress.json` in this folder (it survives a kernel restart; the best attempt counts): `score("05")` sums up this notebook, `score()` all of them.

# %%
import memlib
from memlib.learn.grading import check, hint, mark, practice, score, show, solution

# %% [markdown]
# ## 05.1 · Mixtral-8x22B's weights on the serving GPUs

# %%
show("05.1")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("05.1", answer)
# hint("05.1")  # stuck? each call shows one more hint; solution("05.1") shows the worked answer

# %% [markdown]
# ## 05.2 · MLA's KV cache per token

# %%
show("05.2")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or "919.8 GiB"
check("05.2", answer)
# hint("05.2")

# %% [markdown]
# ## 05.3 · Weight bytes one decode step reads

# %%
show("05.3")


# %%
def weight_bytes_read(other_bytes, expert_bytes, num_experts, top_k, tokens):
    """Weight bytes a decode step of `tokens` tokens reads: non-expert weights once, the touched experts."""
    ...  # TODO: your code here (until then it returns None: "not answered yet")


check("05.3", weight_bytes_read)
# hint("05.3")

# %% [markdown]
# ## 05.4 · How many times fewer FLOPs?

# %%
show("05.4")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "98.7x" or 98.7
check("05.4", answer)
# hint("05.4")

# %% [markdown]
# *Your reasoning here.*

# %% [markdown]
# ## 05.5 · "Tensor parallelism splits the latent cache"

# %%
show("05.5")

# %%
answer = ...  # your answer here: (the wrong figure as written, the right value), e.g. ("99GB", "987.6 GB")
check("05.5", answer)
# hint("05.5")

# %% [markdown]
# ## 05.6 · Most 8k chats on 8 x H200

# %%
show("05.6")

# %%
answer = ...  # your answer here: a pair ("option letter", reason number)
check("05.6", answer)
# hint("05.6")

# %% [markdown]
# ## 05.7 · H200s for the model states alone, DeepSeek's way

# %%
show("05.7")

# %%
answer = ...  # your answer here: a number with its unit, e.g. 999
check("05.7", answer)
# hint("05.7")

# %% [markdown]
# ## 05.8 · LoRA, expert parallelism, decode, MLA: what is true?

# %%
show("05.8")

# %%
answer = ...  # your answer here: the letters of every option that applies, separated by commas (or "none")
check("05.8", answer)
# hint("05.8")

# %% [markdown]
# ## 05.9 · One dispatch all-to-all

# %%
show("05.9")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("05.9", answer)
# hint("05.9")

# %% [markdown]
# ## 05.10 · Fine-tune and serve your own DeepSeek-V3

# %%
show("05.10")

# %%
answer = ...  # your answer here: a few sentences in a string
check("05.10", answer)

# %%
marks = ...  # your marks here, after check() shows the rubric: one True/False per point (6 in order)
mark("05.10", marks)

# %% [markdown]
# ## 05.11 · MTP as a free draft: the speed-up

# %%
show("05.11")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "98.7x" or 98.7
check("05.11", answer)
# hint("05.11")

# %% [markdown]
# ## Your score

# %%
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

# %% [markdown]
# *Generated file: do not edit.* `tools/make_exercises.py` writes this notebook from `solutions/05_moe_memory_solutions.py`; change that file and rerun the tool.
