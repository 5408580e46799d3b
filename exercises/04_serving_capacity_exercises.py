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
# # 04 · Exercises: how many 8k chats can Llama-3-70B serve?
#
# Companion to `notebooks/04_serving_capacity.ipynb`: the KV cache per token with GQA, quantized
# weights split over GPUs, the chats that fit, vLLM's reservation, PagedAttention's blocks, the
# layout of eight GPUs, the decode speed limit, speculative decoding, MHA converted to GQA and the request rate. Most
# numeric exercises change the notebook's setup: derive them with its method. Each exercise says its difficulty (warm-up ·
# interview · stretch) and about how long it takes.
# `check("04.k", answer)` grades an answer against a value memlib computes now; numbers may
# carry units (`"987.6 GB"`, `"919.8 GiB"`, `"98.7 ms"`; a plain number means the unit the question
# names, else bytes). `hint("04.k")` shows the concept, then the formula, then the first step. The
# open question is self-assessed: `check` shows a rubric and a model answer, `mark` records your
# marks. Progress is saved in `.memlib_progress.json` beside the notebook; `score()` sums it up.

# %% [markdown]
# > Work through each exercise: replace the placeholder, run the cell, and read what `check` says. `hint("NN.k")` gives a hint (call again for the next one: the concept, the formula, the first step), `solution("NN.k")` shows the worked answer. Open questions are self-assessed: `check` shows a rubric and a model answer, then `mark("NN.k", [True, False, ...])` records your marks. Your progress is saved in `.memlib_progress.json` in this folder (it survives a kernel restart; the best attempt counts): `score("04")` sums up this notebook, `score()` all of them.

# %%
import memlib
from memlib.learn.grading import check, hint, mark, practice, score, show, solution

# %% [markdown]
# ## 04.1 · One token of Llama-3-70B's KV cache

# %%
show("04.1")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or "919.8 GiB"
check("04.1", answer)
# hint("04.1")  # stuck? each call shows one more hint; solution("04.1") shows the worked answer

# %% [markdown]
# ## 04.2 · "Just under 8GB" for 3,000 tokens

# %%
show("04.2")

# %%
answer = ...  # your answer here: (the wrong figure as written, the right value), e.g. ("99GB", "987.6 GB")
check("04.2", answer)
# hint("04.2")

# %% [markdown]
# *Your reasoning here.*

# %% [markdown]
# ## 04.3 · int4 Llama-2-70B per A100

# %%
show("04.3")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("04.3", answer)
# hint("04.3")

# %% [markdown]
# ## 04.4 · 8k chats on 2 x A100 with fp8 weights

# %%
show("04.4")

# %%
answer = ...  # your answer here: a number with its unit, e.g. 999
check("04.4", answer)
# hint("04.4")

# %% [markdown]
# ## 04.5 · Eight H100s: one group or replicas?

# %%
show("04.5")

# %%
answer = ...  # your answer here: a pair ("option letter", reason number)
check("04.5", answer)
# hint("04.5")

# %% [markdown]
# ## 04.6 · What vLLM leaves for the cache: fp8 at 0.95

# %%
show("04.6")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "919.8 GiB" or 919.8 (GiB)
check("04.6", answer)
# hint("04.6")

# %% [markdown]
# ## 04.7 · PagedAttention's last block

# %%
show("04.7")


# %%
def paged_kv_waste(tokens, kv_bytes_per_token, block_size):
    """Bytes of a sequence's KV blocks that hold no token."""
    ...  # TODO: your code here (until then it returns None: "not answered yet")


check("04.7", paged_kv_waste)
# hint("04.7")

# %% [markdown]
# ## 04.8 · The decode speed limit at 185 chats

# %%
show("04.8")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "98.7 s" or 98.7
check("04.8", answer)
# hint("04.8")

# %% [markdown]
# ## 04.9 · Serving claims, checked

# %%
show("04.9")

# %%
answer = ...  # your answer here: the letters of every option that applies, separated by commas (or "none")
check("04.9", answer)
# hint("04.9")

# %% [markdown]
# ## 04.10 · 300 chats at 30 tokens/s on 8 x H100

# %%
show("04.10")

# %%
answer = ...  # your answer here: a few sentences in a string
check("04.10", answer)

# %%
marks = ...  # your marks here, after check() shows the rubric: one True/False per point (6 in order)
mark("04.10", marks)

# %% [markdown]
# ## 04.11 · Speculative decoding: the expected speed-up

# %%
show("04.11")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "98.7x" or 98.7
check("04.11", answer)
# hint("04.11")

# %% [markdown]
# ## 04.12 · An MHA checkpoint converted to GQA

# %%
show("04.12")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("04.12", answer)
# hint("04.12")

# %% [markdown]
# ## 04.13 · Little's law: the KV cache a request rate needs

# %%
show("04.13")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("04.13", answer)
# hint("04.13")

# %% [markdown]
# ## 04.14 · Why continuous batching raises throughput

# %%
show("04.14")

# %%
answer = ...  # your answer here: a pair ("option letter", reason number)
check("04.14", answer)
# hint("04.14")

# %% [markdown]
# ## 04.15 · What caps the request rate: the cache or the FLOPs?

# %%
show("04.15")

# %%
answer = ...  # your answer here: a pair ("option letter", reason number)
check("04.15", answer)
# hint("04.15")

# %% [markdown]
# ## 04.16 · Prefill/decode disaggregation: the cache on the wire

# %%
show("04.16")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "98.7 s" or 98.7
check("04.16", answer)
# hint("04.16")

# %% [markdown]
# ## 04.17 · KIVI: a 4-bit cache with its scales

# %%
show("04.17")

# %%
answer = ...  # your answer here: a number with its unit, e.g. "987.6 GB" or 987.6 (GB)
check("04.17", answer)
# hint("04.17")

# %% [markdown]
# ## 04.18 · Disaggregated pools: which workload needs more prefill GPUs?

# %%
show("04.18")

# %%
answer = ...  # your answer here: a pair ("option letter", reason number)
check("04.18", answer)
# hint("04.18")

# %% [markdown]
# ## Your score

# %%
score("04")

# %% [markdown]
# ## Practice: one more, never the same
#
# `practice("04")` draws a new question of this notebook's kinds with a fresh setup from memlib's
# catalogs (models, GPUs, precisions, counts); a seed makes it reproducible for a class. Answer with
# `check(q.id, answer)`; `hint(q.id)` and `solution(q.id)` work as above. Practice does not count in
# `score()`.

# %%
q = practice("04", seed=1)  # drop the seed for a new question each time
q

# %%
# check(q.id, "your answer")  # then hint(q.id), solution(q.id)

# %% [markdown]
# *Generated file: do not edit.* `tools/make_exercises.py` writes this notebook from `solutions/04_serving_capacity_solutions.py`; change that file and rerun the tool.
