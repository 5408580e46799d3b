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
# # 11 · Exercises: debugging an out-of-memory error
#
# Companion to `notebooks/11_debugging_oom.ipynb`: a tensor at the allocator's 10 MiB boundary, a
# replay of the caching allocator with and without expandable segments, two published OOM messages
# read (what lives outside PyTorch; fragmentation or too big), the jump at the first optimizer step,
# what an eval loop without `no_grad` keeps, rank 0's extra contexts, the reserved peak to budget for,
# the "everything is rounded to 2 MB" error, the segment size in code, and a debugging plan. Each exercise says its difficulty (warm-up · interview · stretch) and about how
# long it takes.
# `check("11.k", answer)` grades an answer against a value memlib computes now; numbers may
# carry units (`"20 MiB"`, `"3.5 GiB"`; a plain number means the unit the question names).
# `hint("11.k")` shows the concept, then the formula, then the first step. The open question is
# self-assessed: `check` shows a rubric and a model answer, `mark` records your marks. Progress is
# saved in `.memlib_progress.json` beside the notebook; `score()` sums it up.

# %% [markdown]
# > Work through each exercise: replace the placeholder, run the cell, and read what `check` says. `hint("NN.k")` gives a hint (call again for the next one: the concept, the formula, the first step), `solution("NN.k")` shows the worked answer. Open questions are self-assessed: `check` shows a rubric and a model answer, then `mark("NN.k", [True, False, ...])` records your marks. Your progress is saved in `.memlib_progress.json` in this folder (it survives a kernel restart; the best attempt counts): `score("11")` sums up this notebook, `score()` all of them.

# %%
import memlib
from memlib.learn.grading import check, hint, mark, practice, score, show, solution

# %% [markdown]
# ## 11.1 · One tensor at the 10 MiB boundary

# %%
show("11.1")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or "919.8 GiB"
check("11.1", answer)
# hint("11.1")  # stuck? each call shows one more hint; solution("11.1") shows the worked answer

# %% [markdown]
# ## 11.2 · Reserved after a freed block is reused

# %%
show("11.2")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or "919.8 GiB"
check("11.2", answer)
# hint("11.2")

# %% [markdown]
# ## 11.3 · The same requests with expandable segments

# %%
show("11.3")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or "919.8 GiB"
check("11.3", answer)
# hint("11.3")

# %% [markdown]
# ## 11.4 · What the process holds outside PyTorch

# %%
show("11.4")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "919.8 GiB" or 919.8 (GiB)
check("11.4", answer)
# hint("11.4")

# %% [markdown]
# ## 11.5 · Fragmentation or too big?

# %%
show("11.5")

# %%
answer = ...  # your answer here: a pair ("option letter", reason number)
check("11.5", answer)
# hint("11.5")

# %% [markdown]
# ## 11.6 · The jump at the first optimizer step

# %%
show("11.6")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "919.8 GiB" or 919.8 (GiB)
check("11.6", answer)
# hint("11.6")

# %% [markdown]
# ## 11.7 · An eval loop without no_grad

# %%
show("11.7")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "919.8 GiB" or 919.8 (GiB)
check("11.7", answer)
# hint("11.7")

# %% [markdown]
# ## 11.8 · Rank 0's extra contexts

# %%
show("11.8")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or "919.8 GiB"
check("11.8", answer)
# hint("11.8")

# %% [markdown]
# ## 11.9 · The reserved peak to budget for

# %%
show("11.9")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "919.8 GiB" or 919.8 (GiB)
check("11.9", answer)
# hint("11.9")

# %% [markdown]
# ## 11.10 · "Everything is rounded up to 2 MB"

# %%
show("11.10")

# %%
answer = ...  # your answer here: ([the wrong figures as written], the right value), e.g. (["99GB", "ZeRO-9"], "987.6 GB")
check("11.10", answer)
# hint("11.10")

# %% [markdown]
# *Your reasoning here.*

# %% [markdown]
# ## 11.11 · The allocator's segment size

# %%
show("11.11")


# %%
def segment_for(nbytes):
    """The segment the caching allocator cudaMallocs for a request of `nbytes` bytes (default settings)."""
    ...  # TODO: your code here (until then it returns None: "not answered yet")


check("11.11", segment_for)
# hint("11.11")

# %% [markdown]
# ## 11.12 · Your colleague's run OOMs after two hours

# %%
show("11.12")

# %%
answer = ...  # your answer here: a few sentences in a string
check("11.12", answer)

# %%
marks = ...  # your marks here, after check() shows the rubric: one True/False per point (5 in order)
mark("11.12", marks)

# %% [markdown]
# ## Your score

# %%
score("11")

# %% [markdown]
# ## Practice: one more, never the same
#
# `practice("11")` draws a new question of this notebook's kinds with a fresh setup (a tensor's
# segment, the reserved peak of a LoRA step); a seed makes it reproducible for a class. Answer with
# `check(q.id, answer)`; `hint(q.id)` and `solution(q.id)` work as above. Practice does not count in
# `score()`.

# %%
q = practice("11", seed=1)  # drop the seed for a new question each time
q

# %%
# check(q.id, "your answer")  # then hint(q.id), solution(q.id)

# %% [markdown]
# *Generated file: do not edit.* `tools/make_exercises.py` writes this notebook from `solutions/11_debugging_oom_solutions.py`; change that file and rerun the tool.
