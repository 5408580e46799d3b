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
# # 10 · Exercises: when does communication bind?
#
# Companion to `notebooks/10_communication.ipynb`: what a ring all-reduce sends and how long it takes across
# nodes, whether a DDP bucket is latency-bound, the communication roofline of data parallelism, FSDP and tensor
# parallelism, what still runs over 10 GbE, pipeline bubbles (interleaved, 1F1B, ZB-H1) and memory, context
# parallelism's causal balance, and a seed's "O(1)" pipeline traffic. Each exercise says its difficulty
# (warm-up · interview · stretch) and about how long it takes.
# `check("10.k", answer)` grades an answer against a value memlib computes now; numbers may
# carry units (`"98.7 GB"`, `"9.9 s"`, `"98.7%"`, `"0.42x"`; a plain number means the unit the question names).
# `hint("10.k")` shows the concept, then the formula, then the first step. Progress is saved in
# `.memlib_progress.json` beside the notebook; `score()` sums it up.

# %% [markdown]
# > Work through each exercise: replace the placeholder, run the cell, and read what `check` says. `hint("NN.k")` gives a hint (call again for the next one: the concept, the formula, the first step), `solution("NN.k")` shows the worked answer. Open questions are self-assessed: `check` shows a rubric and a model answer, then `mark("NN.k", [True, False, ...])` records your marks. Your progress is saved in `.memlib_progress.json` in this folder (it survives a kernel restart; the best attempt counts): `score("10")` sums up this notebook, `score()` all of them.

# %%
import memlib
from memlib.learn.grading import check, hint, mark, practice, score, show, solution

# %% [markdown]
# ## 10.1 · What a ring all-reduce sends

# %%
show("10.1")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("10.1", answer)
# hint("10.1")  # stuck? each call shows one more hint; solution("10.1") shows the worked answer

# %% [markdown]
# ## 10.2 · How long, across two nodes?

# %%
show("10.2")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "98.7 s" or 98.7
check("10.2", answer)
# hint("10.2")  # stuck? each call shows one more hint; solution("10.2") shows the worked answer

# %% [markdown]
# ## 10.3 · Is a DDP bucket latency-bound across 64 GPUs?

# %%
show("10.3")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "98.7%" or 98.7
check("10.3", answer)
# hint("10.3")  # stuck? each call shows one more hint; solution("10.3") shows the worked answer

# %% [markdown]
# ## 10.4 · The data-parallel roofline of a 70B

# %%
show("10.4")

# %%
answer = ...  # your answer here: a number with its unit, e.g. 999
check("10.4", answer)
# hint("10.4")  # stuck? each call shows one more hint; solution("10.4") shows the worked answer

# %% [markdown]
# ## 10.5 · FSDP over 100 GbE

# %%
show("10.5")

# %%
answer = ...  # your answer here: a number with its unit, e.g. 999
check("10.5", answer)
# hint("10.5")  # stuck? each call shows one more hint; solution("10.5") shows the worked answer

# %% [markdown]
# ## 10.6 · Tensor parallelism of a 70B in one node

# %%
show("10.6")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "98.7x" or 98.7
check("10.6", answer)
# hint("10.6")  # stuck? each call shows one more hint; solution("10.6") shows the worked answer

# %% [markdown]
# ## 10.7 · What still runs over 10 GbE?

# %%
show("10.7")

# %%
answer = ...  # your answer here: a pair ("option letter", reason number)
check("10.7", answer)
# hint("10.7")  # stuck? each call shows one more hint; solution("10.7") shows the worked answer

# %% [markdown]
# ## 10.8 · An interleaved pipeline's bubble

# %%
show("10.8")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "98.7%" or 98.7
check("10.8", answer)
# hint("10.8")  # stuck? each call shows one more hint; solution("10.8") shows the worked answer

# %% [markdown]
# ## 10.9 · How many micro-batches for a 5% bubble?

# %%
show("10.9")

# %%
answer = ...  # your answer here: a number with its unit, e.g. 999
check("10.9", answer)
# hint("10.9")  # stuck? each call shows one more hint; solution("10.9") shows the worked answer

# %% [markdown]
# ## 10.10 · Activations on 1F1B's first stage

# %%
show("10.10")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("10.10", answer)
# hint("10.10")  # stuck? each call shows one more hint; solution("10.10") shows the worked answer

# %% [markdown]
# ## 10.11 · ZB-H1's bubble

# %%
show("10.11")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "98.7%" or 98.7
check("10.11", answer)
# hint("10.11")  # stuck? each call shows one more hint; solution("10.11") shows the worked answer

# %% [markdown]
# ## 10.12 · Causal work without the zigzag

# %%
show("10.12")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "98.7x" or 98.7
check("10.12", answer)
# hint("10.12")  # stuck? each call shows one more hint; solution("10.12") shows the worked answer

# %% [markdown]
# ## 10.13 · Is pipeline traffic O(1)?

# %%
show("10.13")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("10.13", answer)
# hint("10.13")  # stuck? each call shows one more hint; solution("10.13") shows the worked answer

# %% [markdown]
# ## 10.14 · Which link joins the nodes?

# %%
show("10.14")

# %%
answer = ...  # your answer here: (the wrong figure as written, the right value), e.g. ("99GB", "987.6 GB")
check("10.14", answer)
# hint("10.14")

# %% [markdown]
# *Your reasoning here.*

# %% [markdown]
# ## 10.15 · A ring all-reduce's time

# %%
show("10.15")


# %%
def ring_all_reduce_seconds(nbytes, n, bytes_per_s, alpha_s):
    """Latency per step plus the bytes each GPU sends, over the link's one-way bandwidth."""
    ...  # TODO: your code here (until then it returns None: "not answered yet")


check("10.15", ring_all_reduce_seconds)
# hint("10.15")

# %% [markdown]
# ## 10.16 · Lay out a 70B on 8 nodes

# %%
show("10.16")

# %%
answer = ...  # your answer here: a few sentences in a string
check("10.16", answer)

# %%
marks = ...  # your marks here, after check() shows the rubric: one True/False per point (5 in order)
mark("10.16", marks)

# %% [markdown]
# ## Your score

# %%
score("10")

# %% [markdown]
# ## Practice: one more, never the same
#
# `practice("10")` draws a new question of this notebook's kinds with a fresh setup from memlib's
# catalogs (models, GPUs, links, counts); a seed makes it reproducible for a class. Answer with
# `check(q.id, answer)`; `hint(q.id)` and `solution(q.id)` work as above. Practice does not count in
# `score()`.

# %%
q = practice("10", seed=1)  # drop the seed for a new question each time
q

# %%
# check(q.id, "your answer")  # then hint(q.id), solution(q.id)

# %% [markdown]
# *Generated file: do not edit.* `tools/make_exercises.py` writes this notebook from `solutions/10_communication_solutions.py`; change that file and rerun the tool.
