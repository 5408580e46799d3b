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
# ## Topic notebooks (coming)
#
# - `00_memory_anatomy`: where the bytes go: parameters, gradients, optimizer states,
#   activations, and the peak within a training step.
# - `01_65b_on_4x_v100`: can you fully fine-tune a 65B model on 4x V100 32GB?
# - `02_single_gpu_limits`: the largest model one GPU can train, fine-tune or serve.
# - `03_when_the_model_does_not_fit`: mixed precision, recomputation, ZeRO, offload,
#   LoRA and QLoRA, and what each one saves.

# %%
import memlib

print(f"memlib {memlib.__version__}")
