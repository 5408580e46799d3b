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

# %% [markdown] tags=["solution"]
# **This is the solutions copy:** every exercise is answered and checked. The student copy,
# `exercises/03_when_the_model_does_not_fit_exercises.ipynb`, is generated from this file by
# `tools/make_exercises.py`. It keeps no progress file (the next cell), so its score below is
# always the same.

# %% tags=["solution"]
import os

os.environ["MEMLIB_PROGRESS"] = "off"

# %%
import memlib
from memlib.learn.grading import check, hint, mark, practice, score, show, solution

# %% [markdown]
# ## 03.1 · A 4-bit LLaMA-7B, really

# %%
show("03.1")

# %%
# BEGIN SOLUTION
m = memlib.get_model("llama-7b")
embedding_and_head = 2 * m.vocab_size * m.hidden_size
quantized = m.num_params - embedding_and_head  # the linear layers (norms are a rounding error here)
answer = f"{(quantized * 4.127 / 8 + embedding_and_head * 2) / 1e9:.2f} GB"
# END SOLUTION
check("03.1", answer)
# hint("03.1")  # stuck? each call shows one more hint; solution("03.1") shows the worked answer

# %% tags=["solution"]
solution("03.1")

# %% [markdown]
# ## 03.2 · ZeRO-3 on 8 GPUs for a 7B

# %%
show("03.2")

# %%
# BEGIN SOLUTION
n = memlib.get_model("llama-7b").num_params
answer = ("10GB", f"{16 * n / 8 / 1e9:.1f} GB")
# END SOLUTION
check("03.2", answer)
# hint("03.2")

# %% [markdown]
# <!-- BEGIN SOLUTION -->
# **Why.** The paragraph starts from 56GB, which already lacks the fp32 master copy and
# counts Adam's states at half their size; dividing a wrong total by 8 keeps it wrong.
# <!-- END SOLUTION -->

# %% [markdown]
# ## 03.3 · LoRA parameters of LLaMA-7B

# %%
show("03.3")

# %%
# BEGIN SOLUTION
h, inter, layers, r = 4096, 11008, 32, 16
per_layer = r * ((h + h) * 4 + (h + inter) * 3)  # q, k, v, o are h x h; gate, up, down h <-> I
answer = layers * per_layer
# END SOLUTION
check("03.3", answer)
# hint("03.3")

# %% [markdown]
# ## 03.4 · LoRA parameter count

# %%
show("03.4")


# %%
# BEGIN SOLUTION
def lora_param_count(hidden, kv_dim, intermediate, layers, rank, targets):
    """Trainable parameters LoRA adds: rank x (in + out) per adapted matrix per layer."""
    shapes = {"q_proj": (hidden, hidden), "k_proj": (hidden, kv_dim), "v_proj": (hidden, kv_dim),
              "o_proj": (hidden, hidden), "gate_proj": (hidden, intermediate),
              "up_proj": (hidden, intermediate), "down_proj": (intermediate, hidden)}
    return layers * sum(rank * (fan_in + fan_out) for fan_in, fan_out in (shapes[t] for t in targets))
# END SOLUTION


check("03.4", lora_param_count)
# hint("03.4")

# %% [markdown]
# ## 03.5 · LLaMA-13B on 8x A100 40GB

# %%
show("03.5")

# %%
# BEGIN SOLUTION
answer = ("c", 1)
# END SOLUTION
check("03.5", answer)
# hint("03.5")

# %% tags=["solution"]
solution("03.5")

# %% [markdown]
# ## 03.6 · What full recompute shrinks in one layer

# %%
show("03.6")

# %%
# BEGIN SOLUTION
h, a, s = 4096, 32, 2048
answer = f"{(34 + 5 * a * s / h) / 2:.1f}x"
# END SOLUTION
check("03.6", answer)
# hint("03.6")

# %% [markdown]
# ## 03.7 · What ZeRO-Offload saves at the peak

# %%
show("03.7")

# %%
# BEGIN SOLUTION
plain = memlib.estimate_training("llama-13b", seq_len=2048, precision="bf16-mixed")
offload = memlib.estimate_training("llama-13b", seq_len=2048, precision="bf16-mixed", zero_stage=2,
                                   offload="optimizer")
for est in (plain, offload):  # the peak changes moment: optimizer step -> backward
    print(est.setup.offload, est.phase, f"{est.peak_bytes / 1e9:.1f} GB")
answer = f"{(plain.peak_bytes - offload.peak_bytes) / 1e9:.1f} GB"
# END SOLUTION
check("03.7", answer)
# hint("03.7")

# %% tags=["solution"]
solution("03.7")

# %% [markdown]
# ## 03.8 · Host RAM for a 7B on a 12GB card

# %%
show("03.8")

# %%
# BEGIN SOLUTION
n = memlib.get_model("llama-7b").num_params
answer = ("64GB", f"{n * (12 + 4 + 2) / 1e9:.0f} GB")  # states + fp32 grads + fp16 params on the host
# END SOLUTION
check("03.8", answer)
# hint("03.8")

# %% tags=["solution"]
solution("03.8")

# %% [markdown]
# ## 03.9 · Rank the remedies

# %%
show("03.9")

# %%
# BEGIN SOLUTION
answer = """
1. Gradient checkpointing / recompute: activations shrink to each layer's input, for about a third
   more compute. 2. Mixed precision done right (bf16 autocast); pure bf16 halves model states but
   loses small updates. 3. ZeRO / FSDP sharding across data-parallel GPUs: states divided by N, paid
   in communication (all-gather, reduce-scatter), mostly overlapped. 4. Tensor parallel inside a node
   (all-reduces per layer) and pipeline parallel across nodes (bubble). 5. 8-bit optimizer states:
   12 bytes/param become about 6 with little quality risk. 6. Offload to CPU or NVMe: fits almost
   anything, paid in PCIe bandwidth, host RAM and a slow step. 7. LoRA / QLoRA: train adapters on
   a frozen (4-bit) base when full fine-tuning is not required.
"""
# END SOLUTION
check("03.9", answer)

# %%
# BEGIN SOLUTION
marks = [False, True, True, True, True, True, True]  # it never asks where the peak is: point 1 missed
# END SOLUTION
mark("03.9", marks)

# %% tags=["solution"]
solution("03.9")

# %% [markdown]
# ## 03.10 · Serving Llama-2-70B with tensor parallelism

# %%
show("03.10")

# %%
# BEGIN SOLUTION
n = memlib.get_model("llama-2-70b").num_params
weights = n * 2 / 4  # bf16, every matrix split four ways
kv_cache = 2 * 80 * 8 * 128 * 2 * 8 * 4096 / 4  # K and V, 80 layers, 8 KV heads, bf16, 8 x 4096 tokens; 2 heads per GPU
answer = f"{(weights + kv_cache) / 1e9:.1f} GB"
# END SOLUTION
check("03.10", answer)
# hint("03.10")

# %% tags=["solution"]
solution("03.10")

# %% [markdown]
# ## 03.11 · Serve a 70B on A100 80GB cards

# %%
show("03.11")

# %%
# BEGIN SOLUTION
answer = "c, d"  # 4-bit weights on one card, or bf16 split over four
# END SOLUTION
check("03.11", answer)
# hint("03.11")

# %% tags=["solution"]
solution("03.11")

# %% [markdown]
# ## 03.12 · When does recompute lower the peak?

# %%
show("03.12")

# %%
# BEGIN SOLUTION
answer = ["b", "c", "d"]  # activations dominate once states are sharded, offloaded or frozen
# END SOLUTION
check("03.12", answer)
# hint("03.12")

# %% tags=["solution"]
solution("03.12")

# %% [markdown]
# ## 03.13 · DataParallel's first GPU against a DDP rank

# %%
show("03.13")

# %%
# BEGIN SOLUTION
m = memlib.get_model("qwen2-0.5b")
logits = 4096 * m.vocab_size * 4  # one sequence's fp32 logits
# cuda:0 gathers all 16 sequences, a DDP rank keeps its own 4 and a 4-byte bucket copy of every gradient;
# gradients and AdamW states are on both
surplus = (16 - 16 // 4) * logits - 4 * m.num_params
answer = f"{surplus / 1e9:.1f} GB"
# END SOLUTION
check("03.13", answer)
# hint("03.13")

# %% tags=["solution"]
solution("03.13")

# %% [markdown]
# ## Your score

# %%
# NBVAL_CHECK_OUTPUT
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
