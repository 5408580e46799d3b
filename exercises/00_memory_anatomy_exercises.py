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

# %% [markdown]
# > Work through each exercise: replace the placeholder, run the cell, and read what `check` says. `hint("NN.k")` gives a hint (call again for the next one: the concept, the formula, the first step), `solution("NN.k")` shows the worked answer. Open questions are self-assessed: `check` shows a rubric and a model answer, then `mark("NN.k", [True, False, ...])` records your marks. Your progress is saved in `.memlib_progress.json` in this folder (it survives a kernel restart; the best attempt counts): `score("00")` sums up this notebook, `score()` all of them.

# %%
import memlib
from memlib.learn.grading import check, hint, mark, practice, score, show, solution

# %% [markdown]
# ## 00.1 · Weights of LLaMA-7B in bf16

# %%
show("00.1")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("00.1", answer)
# hint("00.1")  # stuck? each call shows one more hint; solution("00.1") shows the worked answer

# %% [markdown]
# ## 00.2 · Model states of mixed-precision AdamW for Llama-2-13B

# %%
show("00.2")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or "919.8 GiB"
check("00.2", answer)
# hint("00.2")

# %% [markdown]
# ## 00.3 · The missing master copy in a 7B estimate

# %%
show("00.3")

# %%
answer = ...  # your answer here: (the wrong figure as written, the right value), e.g. ("99GB", "987.6 GB")
check("00.3", answer)
# hint("00.3")

# %% [markdown]
# *Your reasoning here.*

# %% [markdown]
# ## 00.4 · Activations of a 7B-shaped GPT, no recompute

# %%
show("00.4")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or "919.8 GiB"
check("00.4", answer)
# hint("00.4")

# %% [markdown]
# ## 00.5 · What full recompute saves at the peak

# %%
show("00.5")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("00.5", answer)
# hint("00.5")

# %% [markdown]
# ## 00.6 · Where is the peak with full recompute?

# %%
show("00.6")

# %%
answer = ...  # your answer here: a pair ("option letter", reason number)
check("00.6", answer)
# hint("00.6")

# %% [markdown]
# ## 00.7 · Count a LLaMA's parameters

# %%
show("00.7")


# %%
def llama_params(hidden, layers, heads, kv_heads, intermediate, vocab):
    """Exact parameter count of a LLaMA-architecture model (untied head, GQA)."""
    ...  # TODO: your code here (until then it returns None: "not answered yet")


check("00.7", llama_params)
# hint("00.7")

# %% [markdown]
# ## 00.8 · How many GB is an "L40S 48GB"?

# %%
show("00.8")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("00.8", answer)
# hint("00.8")

# %% [markdown]
# ## 00.9 · What do you ask back?

# %%
show("00.9")

# %%
answer = ...  # your answer here: a few sentences in a string
check("00.9", answer)

# %%
marks = ...  # your marks here, after check() shows the rubric: one True/False per point (6 in order)
mark("00.9", marks)

# %% [markdown]
# ## 00.10 · Why does bf16 train without loss scaling?

# %%
show("00.10")

# %%
answer = ...  # your answer here: a pair ("option letter", reason number)
check("00.10", answer)
# hint("00.10")

# %% [markdown]
# ## Your score

# %%
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

# %% [markdown]
# *Generated file: do not edit.* `tools/make_exercises.py` writes this notebook from `solutions/00_memory_anatomy_solutions.py`; change that file and rerun the tool.
