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

# %% [markdown] tags=["solution"]
# **This is the solutions copy:** every exercise is answered and checked. The student copy,
# `exercises/10_communication_exercises.ipynb`, is generated from this file by
# `tools/make_exercises.py`. It keeps no progress file (the next cell), so its score below is
# always the same.

# %% tags=["solution"]
import os

os.environ["MEMLIB_PROGRESS"] = "off"

# %%
import memlib
from memlib.learn.grading import check, hint, mark, practice, score, show, solution

# %% [markdown]
# ## 10.1 · What a ring all-reduce sends

# %%
show("10.1")

# %%
# BEGIN SOLUTION
n = memlib.get_model("llama-3.1-70b").num_params
answer = f"{2 * 15 / 16 * 2 * n / 1e9:.1f} GB"  # 2(n-1)/n of the bf16 gradients, n = 16
# END SOLUTION
check("10.1", answer)
# hint("10.1")  # stuck? each call shows one more hint; solution("10.1") shows the worked answer

# %% tags=["solution"]
solution("10.1")

# %% [markdown]
# ## 10.2 · How long, across two nodes?

# %%
show("10.2")

# %%
# BEGIN SOLUTION
n = memlib.get_model("llama-3.1-70b").num_params
beta = 400e9 / 8                                   # 400 Gb/s in bytes per second
answer = f"{2 * 15 * 10e-6 + 2 * 15 / 16 * 2 * n / beta:.2f} s"  # 2(n-1) alpha + 2(n-1)/n B / beta
# END SOLUTION
check("10.2", answer)
# hint("10.2")  # stuck? each call shows one more hint; solution("10.2") shows the worked answer

# %% tags=["solution"]
solution("10.2")

# %% [markdown]
# ## 10.3 · Is a DDP bucket latency-bound across 64 GPUs?

# %%
show("10.3")

# %%
# BEGIN SOLUTION
bucket, beta, alpha = 25 * 2**20, 400e9 / 8, 20e-6
bandwidth = 2 * 63 / 64 * bucket / beta
latency = 2 * 63 * alpha                           # one latency per ring step, 2(n - 1) steps
answer = f"{100 * bandwidth / (bandwidth + latency):.1f}%"
# END SOLUTION
check("10.3", answer)
# hint("10.3")  # stuck? each call shows one more hint; solution("10.3") shows the worked answer

# %% tags=["solution"]
solution("10.3")

# %% [markdown]
# ## 10.4 · The data-parallel roofline of a 70B

# %%
show("10.4")

# %%
# BEGIN SOLUTION
from memlib.cost.timing import flops_per_token

m = memlib.get_model("llama-3.1-70b")
comm_s = 2 * 31 / 32 * 2 * m.num_params / (400e9 / 8)       # one bf16 all-reduce per step over 32 GPUs
per_token_s = flops_per_token(m, 4096) / (memlib.get_gpu("h100-80gb").bf16_tflops * 1e12)
answer = f"{comm_s / per_token_s:,.0f}"
# END SOLUTION
check("10.4", answer)
# hint("10.4")  # stuck? each call shows one more hint; solution("10.4") shows the worked answer

# %% tags=["solution"]
solution("10.4")

# %% [markdown]
# ## 10.5 · FSDP over 100 GbE

# %%
show("10.5")

# %%
# BEGIN SOLUTION
from memlib.cost.timing import flops_per_token

m = memlib.get_model("llama-3.1-8b")
comm_s = 3 * 15 / 16 * 2 * m.num_params / (100e9 / 8)       # 2 all-gathers + 1 reduce-scatter per micro-batch
per_token_s = flops_per_token(m, 4096) / (memlib.get_gpu("h100-80gb").bf16_tflops * 1e12)
answer = f"{comm_s / per_token_s:,.0f}"
# END SOLUTION
check("10.5", answer)
# hint("10.5")  # stuck? each call shows one more hint; solution("10.5") shows the worked answer

# %% tags=["solution"]
solution("10.5")

# %% [markdown]
# ## 10.6 · Tensor parallelism of a 70B in one node

# %%
show("10.6")

# %%
# BEGIN SOLUTION
from memlib.cost.timing import flops_per_token

m = memlib.get_model("llama-3.1-70b")
comm_s = m.num_layers * 4 * 2 * 7 / 8 * 2 * m.hidden_size / 450e9   # per token: 4 all-reduces per layer
compute_s = flops_per_token(m, 4096) / 8 / (memlib.get_gpu("h100-80gb").bf16_tflops * 1e12)
answer = f"{comm_s / compute_s:.3f}x"
# END SOLUTION
check("10.6", answer)
# hint("10.6")  # stuck? each call shows one more hint; solution("10.6") shows the worked answer

# %% tags=["solution"]
solution("10.6")

# %% [markdown]
# ## 10.7 · What still runs over 10 GbE?

# %%
show("10.7")

# %%
# BEGIN SOLUTION
answer = ("a", 1)
# END SOLUTION
check("10.7", answer)
# hint("10.7")  # stuck? each call shows one more hint; solution("10.7") shows the worked answer

# %% tags=["solution"]
solution("10.7")

# %% [markdown]
# ## 10.8 · An interleaved pipeline's bubble

# %%
show("10.8")

# %%
# BEGIN SOLUTION
p, v, m = 8, 3, 32
answer = f"{100 * (p - 1) / (v * m + p - 1):.2f}%"
# END SOLUTION
check("10.8", answer)
# hint("10.8")  # stuck? each call shows one more hint; solution("10.8") shows the worked answer

# %% tags=["solution"]
solution("10.8")

# %% [markdown]
# ## 10.9 · How many micro-batches for a 5% bubble?

# %%
show("10.9")

# %%
# BEGIN SOLUTION
p, m = 16, 1
while (p - 1) / (m + p - 1) > 0.05:
    m += 1
answer = m
# END SOLUTION
check("10.9", answer)
# hint("10.9")  # stuck? each call shows one more hint; solution("10.9") shows the worked answer

# %% tags=["solution"]
solution("10.9")

# %% [markdown]
# ## 10.10 · Activations on 1F1B's first stage

# %%
show("10.10")

# %%
# BEGIN SOLUTION
layer = memlib.estimate_training("llama-2-13b", seq_len=2048, micro_batch=1, pp=4, grad_accum=12).layer.total
answer = f"{4 * 10 * layer / 1e9:.2f} GB"         # p = 4 micro-batches in flight x 10 layers
# END SOLUTION
check("10.10", answer)
# hint("10.10")  # stuck? each call shows one more hint; solution("10.10") shows the worked answer

# %% tags=["solution"]
solution("10.10")

# %% [markdown]
# ## 10.11 · ZB-H1's bubble

# %%
show("10.11")

# %%
# BEGIN SOLUTION
p, m = 8, 24
idle = (p - 1) * (1 + 1 - 1)                       # (p - 1)(F + B - W)
answer = f"{100 * idle / (m * 3 + idle):.2f}%"
# END SOLUTION
check("10.11", answer)
# hint("10.11")  # stuck? each call shows one more hint; solution("10.11") shows the worked answer

# %% tags=["solution"]
solution("10.11")

# %% [markdown]
# ## 10.12 · Causal work without the zigzag

# %%
show("10.12")

# %%
# BEGIN SOLUTION
c, n = 32768 // 8, 8                              # one contiguous eighth per GPU
work = [c * c * g + c * (c + 1) // 2 for g in range(n)]  # causal pairs of query block g
answer = f"{max(work) / (sum(work) / n):.3f}x"
# END SOLUTION
check("10.12", answer)
# hint("10.12")  # stuck? each call shows one more hint; solution("10.12") shows the worked answer

# %% tags=["solution"]
solution("10.12")

# %% [markdown]
# ## 10.13 · Is pipeline traffic O(1)?

# %%
show("10.13")

# %%
# BEGIN SOLUTION
h = memlib.get_model("llama-3.1-70b").hidden_size
answer = f"{2 * 4096 * h * 2 / 1e6:.1f} MB"        # activations forward + gradients back, bf16
# END SOLUTION
check("10.13", answer)
# hint("10.13")  # stuck? each call shows one more hint; solution("10.13") shows the worked answer

# %% tags=["solution"]
solution("10.13")

# %% [markdown]
# ## 10.14 · Which link joins the nodes?

# %%
show("10.14")

# %%
# BEGIN SOLUTION
n = memlib.get_model("llama-2-13b").num_params
answer = ("600GB/s", f"{2 * 15 / 16 * 2 * n / (200e9 / 8):.2f} s")  # NVLink stays inside a node; 25 GB/s per GPU
# END SOLUTION
check("10.14", answer)
# hint("10.14")

# %% [markdown]
# <!-- BEGIN SOLUTION -->
# **Why.** NVLink (600 GB/s both ways on an A100) joins the GPUs of one node. Between two DGX A100 nodes each
# GPU reaches the network through its own 200 Gb/s HDR port, 25 GB/s each way: the ring is as fast as that hop.
# <!-- END SOLUTION -->

# %% [markdown]
# ## 10.15 · A ring all-reduce's time

# %%
show("10.15")


# %%
# BEGIN SOLUTION
def ring_all_reduce_seconds(nbytes, n, bytes_per_s, alpha_s):
    """Latency per step plus the bytes each GPU sends, over the link's one-way bandwidth."""
    steps = 2 * (n - 1)                               # a reduce-scatter, then an all-gather
    return steps * alpha_s + steps / n * nbytes / bytes_per_s
# END SOLUTION


check("10.15", ring_all_reduce_seconds)
# hint("10.15")

# %% [markdown]
# ## 10.16 · Lay out a 70B on 8 nodes

# %%
show("10.16")

# %%
# BEGIN SOLUTION
answer = """
Tensor parallelism goes inside each node: every layer all-reduces its activations twice in the forward and
twice in the backward, so its traffic grows with the tokens and no batch hides it; on NVLink it costs about a
third of the compute, across 400 Gb/s InfiniBand several times the compute. Across the 8 nodes I use data
parallelism (or FSDP, 1.5 times the traffic per micro-batch) of the tensor-parallel groups: the gradients move
once per step and hide once each GPU computes some thousands of tokens per step. A pipeline across nodes is
the other option: it sends only the activations at stage boundaries, but idles (p-1)/(m+p-1) of the step and
keeps p micro-batches of activations on its first stage. Memory: 16 bytes per parameter, over a terabyte, must
be sharded with ZeRO or FSDP or Megatron's distributed optimizer.
"""
# END SOLUTION
check("10.16", answer)

# %%
# BEGIN SOLUTION
marks = [True, True, True, True, True]  # every rubric point is covered above
# END SOLUTION
mark("10.16", marks)

# %% [markdown]
# ## Your score

# %%
# NBVAL_CHECK_OUTPUT
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
