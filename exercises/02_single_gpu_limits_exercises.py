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
# # 02 · Exercises: what one GPU can train, fine-tune and serve
#
# Companion to `notebooks/02_single_gpu_limits.ipynb`: the largest model one card holds,
# 8-bit optimizers, what ZeRO does on one GPU, the KV cache, and LoRA on a 24GB card. Each
# exercise says its difficulty (warm-up · interview · stretch) and about how long it takes.
# `check("02.k", answer)` grades an answer against a value memlib computes now; numbers may
# carry units (`"987.6 GB"`, `"919.8 GiB"`, `"9.87B"` parameters).
# `hint("02.k")` shows the concept, then the formula, then the first step. The open question
# is self-assessed: `check` shows a rubric and a model answer, `mark` records your marks.
# Progress is saved in `.memlib_progress.json` beside the notebook; `score()` sums it up.

# %% [markdown]
# > Work through each exercise: replace the placeholder, run the cell, and read what `check` says. `hint("NN.k")` gives a hint (call again for the next one: the concept, the formula, the first step), `solution("NN.k")` shows the worked answer. Open questions are self-assessed: `check` shows a rubric and a model answer, then `mark("NN.k", [True, False, ...])` records your marks. Your progress is saved in `.memlib_progress.json` in this folder (it survives a kernel restart; the best attempt counts): `score("02")` sums up this notebook, `score()` all of them.

# %%
import memlib
from memlib.learn.grading import check, hint, mark, practice, score, show, solution

# %% [markdown]
# ## 02.1 · The largest model an A100 80GB can fully fine-tune

# %%
show("02.1")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "9.87B" or 9.87e9
check("02.1", answer)
# hint("02.1")  # stuck? each call shows one more hint; solution("02.1") shows the worked answer

# %% [markdown]
# ## 02.2 · 8-bit Adam: what is 28GB?

# %%
show("02.2")

# %%
answer = ...  # your answer here: (the wrong figure as written, the right value), e.g. ("99GB", "987.6 GB")
check("02.2", answer)
# hint("02.2")

# %% [markdown]
# ## 02.3 · ZeRO-1 on one GPU

# %%
show("02.3")

# %%
answer = ...  # your answer here: (the wrong figure as written, the right value), e.g. ("99GB", "987.6 GB")
check("02.3", answer)
# hint("02.3")

# %% [markdown]
# *Your reasoning here.*

# %% [markdown]
# ## 02.4 · ZeRO-3 with one GPU

# %%
show("02.4")

# %%
answer = ...  # your answer here: one option letter in quotes
check("02.4", answer)
# hint("02.4")

# %% [markdown]
# ## 02.5 · KV-cache bytes

# %%
show("02.5")


# %%
def kv_cache_bytes(layers, kv_heads, head_dim, dtype_bytes, batch, context):
    """Bytes of the KV cache of `batch` sequences of `context` tokens."""
    ...  # TODO: your code here (until then it returns None: "not answered yet")


check("02.5", kv_cache_bytes)
# hint("02.5")

# %% [markdown]
# ## 02.6 · KV cache of Llama-2-70B at batch 16

# %%
show("02.6")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or "919.8 GiB"
check("02.6", answer)
# hint("02.6")

# %% [markdown]
# ## 02.7 · Serving Llama-3-8B in bf16: the weights

# %%
show("02.7")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("02.7", answer)
# hint("02.7")

# %% [markdown]
# ## 02.8 · Fine-tune Llama-2-7B on an RTX 4090

# %%
show("02.8")

# %%
answer = ...  # your answer here: a pair ("option letter", reason number)
check("02.8", answer)
# hint("02.8")

# %% [markdown]
# ## 02.9 · Full fine-tuning a 13B on one A100 80GB

# %%
show("02.9")

# %%
answer = ...  # your answer here: a few sentences in a string
check("02.9", answer)

# %%
marks = ...  # your marks here, after check() shows the rubric: one True/False per point (6 in order)
mark("02.9", marks)

# %% [markdown]
# ## 02.10 · Which questions change the verdict?

# %%
show("02.10")

# %%
answer = ...  # your answer here: the letters of every option that applies, separated by commas (or "none")
check("02.10", answer)
# hint("02.10")

# %% [markdown]
# ## 02.11 · What ZeRO-Offload sends over PCIe

# %%
show("02.11")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("02.11", answer)
# hint("02.11")

# %% [markdown]
# ## Your score

# %%
score("02")

# %% [markdown]
# ## Practice: one more, never the same
#
# `practice("02")` draws a new question of this notebook's kinds with a fresh setup from memlib's
# catalogs (models, GPUs, precisions, counts); a seed makes it reproducible for a class. Answer with
# `check(q.id, answer)`; `hint(q.id)` and `solution(q.id)` work as above. Practice does not count in
# `score()`.

# %%
q = practice("02", seed=1)  # drop the seed for a new question each time
q

# %%
# check(q.id, "your answer")  # then hint(q.id), solution(q.id)

# %% [markdown]
# *Generated file: do not edit.* `tools/make_exercises.py` writes this notebook from `solutions/02_single_gpu_limits_solutions.py`; change that file and rerun the tool.
