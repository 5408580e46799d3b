# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # GPU memory for LLMs: interview study notebooks
#
# How much GPU memory does it take to train, fine-tune or serve a large language model,
# and what do you do when it does not fit? Each notebook here takes one interview
# question, derives the answer step by step with `memlib` (so every number in the text
# is computed, not typed), checks the answer that usually circulates, and ends with a
# 30-second answer and follow-up questions.
#
# The `.py` file next to each notebook is its source (Jupytext percent format); the
# `.ipynb` keeps the outputs so you can read without running anything.
#
# ## Read them in this order
#
# 1. [00 · Memory anatomy of a training step](00_memory_anatomy.ipynb): where the bytes go
#    (parameters, gradients, optimizer states, activations, logits, temporaries); why
#    mixed-precision AdamW is 16 bytes per parameter; the peak as the highest moment of a step;
#    GB vs GiB.
# 2. [01 · Can 4× V100 32GB train Vicuna-65B?](01_65b_on_4x_v100.ipynb) (seed 000): ZeRO stages,
#    tensor and pipeline parallelism, offload and QLoRA against four 32 GB cards.
# 3. [02 · One GPU: how large a model can you train, fine-tune or serve?](02_single_gpu_limits.ipynb)
#    (seed 001): the largest model per GPU and recipe.
# 4. [03 · When the model does not fit](03_when_the_model_does_not_fit.ipynb) (seed 003):
#    quantization, TP/PP, ZeRO, offload and recompute, and how to combine them for training
#    and for serving.
#
# Then: [the calculator](calculator.ipynb) ("can I run this?"), the graded exercises in
# `../exercises/`, and the one-page [cheat sheet](../docs/cheatsheet.md).
#
# Each topic notebook has the same nine sections: the question (中文 and English), what the
# interviewer probes, the answer derived step by step, charts, a playground, a fact-check of
# the circulating answer, the 30-second answer (English and 中文), follow-up questions (追问)
# and pitfalls (避坑) with further reading. Every number in them comes from `memlib`, whose
# estimates are checked against measured PyTorch training steps (README, "Validation").

# %% tags=["hide-input"]
# NBVAL_CHECK_OUTPUT
import memlib

print(f"memlib {memlib.__version__}: {len(memlib.list_models())} models, {len(memlib.list_gpus())} GPUs in the catalog")
