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
# # 06 · Exercises: what changes when you train at 128k tokens?
#
# Companion to `notebooks/06_long_context.ipynb`: the logits of a large vocabulary, eager attention's
# s², what recompute keeps, context parallelism's memory and ring traffic, what a long sequence costs
# in FLOPs, the KV cache at 128k, a layout that fits, what FlashAttention and a sliding window save,
# what a per-document mask saves in a packed row, which RoPE pairs Llama 3.1's scaling stretches.
# Most setups differ from the notebook's (another model, length or cp degree): use its method. Each exercise says its difficulty (warm-up ·
# interview · stretch) and about how long it takes. `check("06.k", answer)` grades an answer against a
# value memlib computes now; numbers may carry units (`"987.6 GB"`, `"919.8 GiB"`; a plain number means
# the unit the question names, else bytes). `hint("06.k")` shows the concept, then the formula, then
# the first step. The open question is self-assessed: `check` shows a rubric and a model answer,
# `mark` records your marks. Progress is saved in `.memlib_progress.json` beside the notebook;
# `score()` sums it up.

# %% [markdown]
# > Work through each exercise: replace the placeholder, run the cell, and read what `check` says. `hint("NN.k")` gives a hint (call again for the next one: the concept, the formula, the first step), `solution("NN.k")` shows the worked answer. Open questions are self-assessed: `check` shows a rubric and a model answer, then `mark("NN.k", [True, False, ...])` records your marks. Your progress is saved in `.memlib_progress.json` in this folder (it survives a kernel restart; the best attempt counts): `score("06")` sums up this notebook, `score()` all of them.

# %%
import memlib
from memlib.learn.grading import check, hint, mark, practice, score, show, solution

# %% [markdown]
# ## 06.1 · The logits and loss of a 152k vocabulary

# %%
show("06.1")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("06.1", answer)
# hint("06.1")  # stuck? each call shows one more hint; solution("06.1") shows the worked answer

# %% [markdown]
# ## 06.2 · Activations per GPU with context parallelism

# %%
show("06.2")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("06.2", answer)
# hint("06.2")

# %% [markdown]
# ## 06.3 · "~32 GB * num_heads"

# %%
show("06.3")

# %%
answer = ...  # your answer here: (the wrong figure as written, the right value), e.g. ("99GB", "987.6 GB")
check("06.3", answer)
# hint("06.3")

# %% [markdown]
# *Your reasoning here.*

# %% [markdown]
# ## 06.4 · What full recompute keeps for a 70B at 96k

# %%
show("06.4")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("06.4", answer)
# hint("06.4")

# %% [markdown]
# ## 06.5 · Which layout trains Llama-3.1-8B at 128k on 8 H100s?

# %%
show("06.5")

# %%
answer = ...  # your answer here: a pair ("option letter", reason number)
check("06.5", answer)
# hint("06.5")

# %% [markdown]
# ## 06.6 · How much more does a 128k sequence cost than an 8k one?

# %%
show("06.6")


# %%
def seq_flops(T):
    ...  # TODO: your code here (until then it returns None: "not answered yet")
answer = ...  # your answer here: a number with its unit, e.g. "98.7x" or 98.7
check("06.6", answer)
# hint("06.6")

# %% [markdown]
# ## 06.7 · Ring attention's traffic per layer

# %%
show("06.7")


# %%
def ring_kv_bytes_per_layer(kv_heads, head_dim, seq_len, cp, micro_batch, recompute):
    """Bytes one GPU sends for one layer and one micro-batch under context parallelism (bf16 K/V, fp32 dK/dV)."""
    ...  # TODO: your code here (until then it returns None: "not answered yet")


check("06.7", ring_kv_bytes_per_layer)
# hint("06.7")

# %% [markdown]
# ## 06.8 · The KV cache of one 128k conversation with the 405B

# %%
show("06.8")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("06.8", answer)
# hint("06.8")

# %% [markdown]
# ## 06.9 · Train Llama-3.1-70B at 128k

# %%
show("06.9")

# %%
answer = ...  # your answer here: a few sentences in a string
check("06.9", answer)

# %%
marks = ...  # your marks here, after check() shows the rubric: one True/False per point (7 in order)
mark("06.9", marks)

# %% [markdown]
# ## 06.10 · What a sliding window saves in attention FLOPs

# %%
show("06.10")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "98.7x" or 98.7
check("06.10", answer)
# hint("06.10")

# %% [markdown]
# ## 06.11 · What does FlashAttention save?

# %%
show("06.11")

# %%
answer = ...  # your answer here: a pair ("option letter", reason number)
check("06.11", answer)
# hint("06.11")

# %% [markdown]
# ## 06.12 · What a per-document mask saves in a packed row

# %%
show("06.12")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "98.7%" or 98.7
check("06.12", answer)
# hint("06.12")

# %% [markdown]
# ## 06.13 · Which RoPE pairs does Llama 3.1 stretch?

# %%
show("06.13")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "98.7x" or 98.7
check("06.13", answer)
# hint("06.13")

# %% [markdown]
# ## Your score

# %%
score("06")

# %% [markdown]
# ## Practice: one more, never the same
#
# `practice("06")` draws a new question of this notebook's kinds with a fresh setup from memlib's
# catalogs (models, GPUs, precisions, counts); a seed makes it reproducible for a class. Answer with
# `check(q.id, answer)`; `hint(q.id)` and `solution(q.id)` work as above. Practice does not count in
# `score()`.

# %%
q = practice("06", seed=1)  # drop the seed for a new question each time
q

# %%
# check(q.id, "your answer")  # then hint(q.id), solution(q.id)

# %% [markdown]
# *Generated file: do not edit.* `tools/make_exercises.py` writes this notebook from `solutions/06_long_context_solutions.py`; change that file and rerun the tool.
