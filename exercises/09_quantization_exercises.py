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
# # 09 · Exercises: quantization
#
# Companion to `notebooks/09_quantization.ipynb`: a zero-point by hand, the bytes of a grouped 3-bit
# format, a 72B model in AWQ int4, where W4A16 decode turns compute-bound, a batch-1 decode step,
# which format speeds up a full server, the "4 bits is a quarter" error, what GPTQ, AWQ and
# SmoothQuant do, a serving recommendation, and a 70B in NVFP4. Each exercise says its difficulty (warm-up ·
# interview · stretch) and about how long it takes.
# `check("09.k", answer)` grades an answer against a value memlib computes now; numbers may
# carry units (`"98.7 GB"`, `"9.9 ms"`, `"98.7x"`, `"5.2 bits"` where bytes per weight are asked; a plain
# number means the unit the question names).
# `hint("09.k")` shows the concept, then the formula, then the first step. The open question is
# self-assessed: `check` shows a rubric and a model answer, `mark` records your marks. Progress is
# saved in `.memlib_progress.json` beside the notebook; `score()` sums it up.

# %% [markdown]
# > Work through each exercise: replace the placeholder, run the cell, and read what `check` says. `hint("NN.k")` gives a hint (call again for the next one: the concept, the formula, the first step), `solution("NN.k")` shows the worked answer. Open questions are self-assessed: `check` shows a rubric and a model answer, then `mark("NN.k", [True, False, ...])` records your marks. Your progress is saved in `.memlib_progress.json` in this folder (it survives a kernel restart; the best attempt counts): `score("09")` sums up this notebook, `score()` all of them.

# %%
import memlib
from memlib.learn.grading import check, hint, mark, practice, score, show, solution

# %% [markdown]
# ## 09.1 · The zero-point of an int8 activation range

# %%
show("09.1")

# %%
answer = ...  # your answer here: a number with its unit, e.g. 999
check("09.1", answer)
# hint("09.1")  # stuck? each call shows one more hint; solution("09.1") shows the worked answer

# %% [markdown]
# ## 09.2 · Bytes per weight of a 3-bit GPTQ checkpoint

# %%
show("09.2")

# %%
answer = ...  # your answer here: a number with its unit, e.g. 987
check("09.2", answer)
# hint("09.2")

# %% [markdown]
# ## 09.3 · Qwen2.5-72B in AWQ int4

# %%
show("09.3")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("09.3", answer)
# hint("09.3")

# %% [markdown]
# ## 09.4 · Where W4A16 decode turns compute-bound on an A100

# %%
show("09.4")

# %%
answer = ...  # your answer here: a number with its unit, e.g. 999
check("09.4", answer)
# hint("09.4")

# %% [markdown]
# ## 09.5 · A large batch: which format decodes faster?

# %%
show("09.5")

# %%
answer = ...  # your answer here: a pair ("option letter", reason number)
check("09.5", answer)
# hint("09.5")

# %% [markdown]
# ## 09.6 · A batch-1 decode step on a gaming card

# %%
show("09.6")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "98.7 s" or 98.7
check("09.6", answer)
# hint("09.6")

# %% [markdown]
# ## 09.7 · "4 bits is a quarter of fp16"

# %%
show("09.7")

# %%
answer = ...  # your answer here: (the wrong figure as written, the right value), e.g. ("99GB", "987.6 GB")
check("09.7", answer)
# hint("09.7")

# %% [markdown]
# *Your reasoning here.*

# %% [markdown]
# ## 09.8 · What GPTQ, AWQ and SmoothQuant do

# %%
show("09.8")

# %%
answer = ...  # your answer here: the letters of every option that applies, separated by commas (or "none")
check("09.8", answer)
# hint("09.8")

# %% [markdown]
# ## 09.9 · Should we serve our 70B in int4?

# %%
show("09.9")

# %%
answer = ...  # your answer here: a few sentences in a string
check("09.9", answer)

# %%
marks = ...  # your marks here, after check() shows the rubric: one True/False per point (5 in order)
mark("09.9", marks)

# %% [markdown]
# ## 09.10 · Quantize and dequantize one value

# %%
show("09.10")


# %%
def round_trip(x, absmax, bits):
    """x after symmetric (absmax) quantization to `bits`-bit signed codes and back."""
    ...  # TODO: your code here (until then it returns None: "not answered yet")


check("09.10", round_trip)
# hint("09.10")

# %% [markdown]
# ## 09.11 · A 70B's projections in NVFP4

# %%
show("09.11")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("09.11", answer)
# hint("09.11")

# %% [markdown]
# ## 09.12 · What fp8 training does to the model states

# %%
show("09.12")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("09.12", answer)
# hint("09.12")

# %% [markdown]
# ## Your score

# %%
score("09")

# %% [markdown]
# ## Practice: one more, never the same
#
# `practice("09")` draws a new question of this notebook's kinds with a fresh setup from memlib's
# catalogs (models, GPUs, formats); a seed makes it reproducible for a class. Answer with
# `check(q.id, answer)`; `hint(q.id)` and `solution(q.id)` work as above. Practice does not count in
# `score()`.

# %%
q = practice("09", seed=1)  # drop the seed for a new question each time
q

# %%
# check(q.id, "your answer")  # then hint(q.id), solution(q.id)

# %% [markdown]
# *Generated file: do not edit.* `tools/make_exercises.py` writes this notebook from `solutions/09_quantization_solutions.py`; change that file and rerun the tool.
