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
# # 03 · Exercises: when the model does not fit
#
# Companion to `notebooks/03_when_the_model_does_not_fit.ipynb`: quantized bases, LoRA,
# ZeRO stages, recompute and offload, what each saves and what it costs. Each exercise says its
# difficulty (warm-up · interview · stretch) and about how long it takes.
# `check("03.k", answer)` grades an answer against a value memlib computes now; numbers may
# carry units (`"987.6 GB"`, `"919.8 GiB"`, `"98.7M"` parameters).
# `hint("03.k")` shows the concept, then the formula, then the first step. The open question
# is self-assessed: `check` shows a rubric and a model answer, `mark` records your marks.
# Progress is saved in `.memlib_progress.json` beside the notebook; `score()` sums it up.

# %% [markdown]
# > Work through each exercise: replace the placeholder, run the cell, and read what `check` says. `hint("NN.k")` gives a hint (call again for the next one: the concept, the formula, the first step), `solution("NN.k")` shows the worked answer. Open questions are self-assessed: `check` shows a rubric and a model answer, then `mark("NN.k", [True, False, ...])` records your marks. Your progress is saved in `.memlib_progress.json` in this folder (it survives a kernel restart; the best attempt counts): `score("03")` sums up this notebook, `score()` all of them.

# %%
import memlib
from memlib.learn.grading import check, hint, mark, practice, score, show, solution

# %% [markdown]
# ## 03.1 · A 4-bit LLaMA-7B, really

# %%
show("03.1")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("03.1", answer)
# hint("03.1")  # stuck? each call shows one more hint; solution("03.1") shows the worked answer

# %% [markdown]
# ## 03.2 · ZeRO-3 on 8 GPUs for a 7B

# %%
show("03.2")

# %%
answer = ...  # your answer here: (the wrong figure as written, the right value), e.g. ("99GB", "987.6 GB")
check("03.2", answer)
# hint("03.2")

# %% [markdown]
# *Your reasoning here.*

# %% [markdown]
# ## 03.3 · LoRA parameters of LLaMA-7B

# %%
show("03.3")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "9.87B" or 9.87e9
check("03.3", answer)
# hint("03.3")

# %% [markdown]
# ## 03.4 · LoRA parameter count

# %%
show("03.4")


# %%
def lora_param_count(hidden, kv_dim, intermediate, layers, rank, targets):
    """Trainable parameters LoRA adds: rank x (in + out) per adapted matrix per layer."""
    ...  # TODO: your code here (until then it returns None: "not answered yet")


check("03.4", lora_param_count)
# hint("03.4")

# %% [markdown]
# ## 03.5 · LLaMA-13B on 8x A100 40GB

# %%
show("03.5")

# %%
answer = ...  # your answer here: a pair ("option letter", reason number)
check("03.5", answer)
# hint("03.5")

# %% [markdown]
# ## 03.6 · What full recompute shrinks in one layer

# %%
show("03.6")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "98.7x" or 98.7
check("03.6", answer)
# hint("03.6")

# %% [markdown]
# ## 03.7 · What ZeRO-Offload saves at the peak

# %%
show("03.7")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("03.7", answer)
# hint("03.7")

# %% [markdown]
# ## 03.8 · Host RAM for a 7B on a 12GB card

# %%
show("03.8")

# %%
answer = ...  # your answer here: (the wrong figure as written, the right value), e.g. ("99GB", "987.6 GB")
check("03.8", answer)
# hint("03.8")

# %% [markdown]
# ## 03.9 · Rank the remedies

# %%
show("03.9")

# %%
answer = ...  # your answer here: a few sentences in a string
check("03.9", answer)

# %%
marks = ...  # your marks here, after check() shows the rubric: one True/False per point (7 in order)
mark("03.9", marks)

# %% [markdown]
# ## 03.10 · Serving Llama-2-70B with tensor parallelism

# %%
show("03.10")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("03.10", answer)
# hint("03.10")

# %% [markdown]
# ## 03.11 · Serve a 70B on A100 80GB cards

# %%
show("03.11")

# %%
answer = ...  # your answer here: the letters of every option that applies, separated by commas (or "none")
check("03.11", answer)
# hint("03.11")

# %% [markdown]
# ## 03.12 · When does recompute lower the peak?

# %%
show("03.12")

# %%
answer = ...  # your answer here: the letters of every option that applies, separated by commas (or "none")
check("03.12", answer)
# hint("03.12")

# %% [markdown]
# ## 03.13 · DataParallel's first GPU against a DDP rank

# %%
show("03.13")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("03.13", answer)
# hint("03.13")

# %% [markdown]
# ## Your score

# %%
score("03")

# %% [markdown]
# ## Practice: one more, never the same
#
# `practice("03")` draws a new question of this notebook's kinds with a fresh setup from memlib's
# catalogs (models, GPUs, precisions, counts); a seed makes it reproducible for a class. Answer with
# `check(q.id, answer)`; `hint(q.id)` and `solution(q.id)` work as above. Practice does not count in
# `score()`.

# %%
q = practice("03", seed=1)  # drop the seed for a new question each time
q

# %%
# check(q.id, "your answer")  # then hint(q.id), solution(q.id)

# %% [markdown]
# *Generated file: do not edit.* `tools/make_exercises.py` writes this notebook from `solutions/03_when_the_model_does_not_fit_solutions.py`; change that file and rerun the tool.
