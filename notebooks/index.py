# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: jupyter,tags,-user_expressions
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
# # GPU memory for LLMs: interview study notebooks
#
# How much GPU memory does it take to train, fine-tune or serve a large language model, and what
# do you do when it does not fit? Each notebook takes one interview question, gives the answer a
# candidate can say in thirty seconds, then derives it step by step: the pencil arithmetic with
# round numbers first, then `memlib`'s exact figure (every number in the text is computed, not
# typed), the follow-up questions, and a fact-check of the answer that usually circulates.
#
# **中文版 →** [目录](../zh/notebooks/index.ipynb)（全部章节、深入篇、练习、速查表的中文版；代码与数字相同）
#
# ## Read them in this order
#
# 0. [00 · Where does GPU memory go in a training step?](00_memory_anatomy.ipynb) Model states
#    and activations, 16 bytes per parameter (and where 12 and 18 come from), the peak as one
#    moment of the step, GB vs GiB, fp16 / bf16 / fp8 ranges. Its
#    [deep dive](00_memory_anatomy_deep_dive.ipynb): the fact-check and the ledgers.
# 1. [01 · Can 4× V100 32GB train Vicuna-65B?](01_65b_on_4x_v100.ipynb) (seed 000) Full
#    fine-tuning against ZeRO, TP, PP and offload; QLoRA split over the four cards; serving,
#    FlashAttention on Volta, fp16 loss scaling. Its [deep dive](01_65b_on_4x_v100_deep_dive.ipynb):
#    the fact-check of seed 000 and every layout.
# 2. [02 · One GPU: how large a model can you train, fine-tune or serve?](02_single_gpu_limits.ipynb)
#    (seed 001) The largest model per GPU and recipe, offload's host RAM and time, the GPU generation
#    bf16 and fp8 need, and what one GPU can pre-train. Its [deep dive](02_single_gpu_limits_deep_dive.ipynb):
#    the fact-check of seed 001, every card, PEFT with checkpointing and sequence packing.
# 3. [03 · When the model does not fit](03_when_the_model_does_not_fit.ipynb) (seed 003)
#    Quantization, TP/PP, ZeRO, offload and recompute, and how to combine them; DataParallel vs DDP.
#    Its [deep dive](03_when_the_model_does_not_fit_deep_dive.ipynb): the fact-check of seed 003 and every table.
# 4. [04 · How many 8k chats can Llama-3-70B serve?](04_serving_capacity.ipynb) Weights by
#    precision, the KV cache (prefill and decode; MHA, MQA, GQA), tensor parallelism, serving
#    metrics and Little's law, continuous batching, speculative decoding, what
#    vLLM's gpu_memory_utilization reserves, and the decode speed limit, on 2 × A100 80GB and 8 × H100.
#    Its [deep dive](04_serving_capacity_deep_dive.ipynb): vLLM and SGLang inside, prefix caching,
#    kernel fusion and CUDA graphs, the fact-check and every layout.
# 5. [05 · DeepSeek-V3: serve and fine-tune a 671B MoE](05_moe_memory.ipynb) Every expert resident
#    (fp8 weights), FLOPs from the 37B active, MLA's latent cache vs full K/V vs GQA, tensor vs expert
#    parallelism with data-parallel attention on 8 × H200, full fine-tuning with ZeRO-3 + expert
#    parallelism, what LoRA saves. Its [deep dive](05_moe_memory_deep_dive.ipynb): the fact-check,
#    every serving layout, fine-tuning on other GPUs.
# 6. [06 · What changes when you train at 128k tokens?](06_long_context.ipynb) Activations per token
#    with a fused kernel vs eager's s², the logits of a 128k vocabulary and the chunked loss, recompute,
#    activation offload, context parallelism (ring attention) and its traffic, the Llama-3.1 8B/70B
#    layouts at 128k, attention FLOPs, FlashAttention's principle and the other remedies for O(s²). Its
#    [deep dive](06_long_context_deep_dive.ipynb): the fact-check, the ledger tables, more follow-ups.
# 7. [07 · How long, and how much, to train?](07_time_and_cost.ipynb) FLOPs (6ND plus attention),
#    MFU, what data-parallel communication costs and when it hides, the Chinchilla ratio, GPU-hours
#    and cost of pretraining a 7B on 256 H100s and of fine-tuning a 70B, how often to checkpoint a run
#    that fails every few hours. Its [deep dive](07_time_and_cost_deep_dive.ipynb): Llama 2/3's
#    published GPU-hours reproduced, the fact-check of the rules of thumb.
# 8. [08 · PPO on a 7B: how many A100s?](08_rlhf_memory.ipynb) RLHF's four models (actor and critic
#    train, reference and reward only read), the rollout engine's weights and KV cache, colocated with
#    sleep mode vs everything resident vs separate groups, GRPO, DPO and a 70B. Its
#    [deep dive](08_rlhf_memory_deep_dive.ipynb): OpenRLHF's layouts checked and the fact-check.
# 9. [09 · Quantization: less memory, more speed?](09_quantization.ipynb) Scale and zero-point, bits
#    per weight by group (int8, GPTQ/AWQ int4 g128, NF4), Llama-2-70B on one or two H100s, when decode
#    gets faster (batch 1) and when not (compute-bound batches, LLM.int8()), W8A8, GPTQ/AWQ/SmoothQuant,
#    outlier features. Its [deep dive](09_quantization_deep_dive.ipynb): the fact-check and the papers'
#    accuracy tables.
# 10. [10 · When does communication bind?](10_communication.ipynb) The collectives (all-reduce = reduce-scatter
#    + all-gather, all-to-all) and their ring and tree α-β costs, why DDP buckets, the communication roofline of
#    data, FSDP, tensor and expert parallelism on NVLink, InfiniBand and 10 GbE, pipeline schedules (GPipe, 1F1B,
#    interleaved, ZB-H1, DualPipe) drawn, selective vs full recompute with FlashAttention. Its
#    [deep dive](10_communication_deep_dive.ipynb): the fact-check, nccl-tests' bus bandwidth, ZeRO rank by rank,
#    context parallelism's causal balance.
# 11. [11 · Debugging an out-of-memory error](11_debugging_oom.ipynb) Reading the OOM message,
#    allocated vs reserved vs nvidia-smi, PyTorch's caching allocator (512 B blocks, 2 and 20 MiB segments,
#    fragmentation, expandable segments) modelled and replayed, memory snapshots, the usual causes (kept tensors,
#    the first optimizer step, growing lengths, rank 0, checkpointing that misses the peak) and the ladder of fixes.
#    Its [deep dive](11_debugging_oom_deep_dive.ipynb): memory_summary line by line, the published reserved rows
#    before and after, profiling, the fact-check.
#
# ## Then
#
# - [The calculator](calculator.ipynb): "can I run this?" for any catalog model, GPU and recipe.
# - [A mock interview](mock_interview.ipynb): one question from any topic, 30 seconds, a rubric, a follow-up.
# - Graded exercises, one notebook per topic (student copies; `memlib.learn.grading` checks your answers):
#   [00](../exercises/00_memory_anatomy_exercises.ipynb),
#   [01](../exercises/01_65b_on_4x_v100_exercises.ipynb),
#   [02](../exercises/02_single_gpu_limits_exercises.ipynb),
#   [03](../exercises/03_when_the_model_does_not_fit_exercises.ipynb),
#   [04](../exercises/04_serving_capacity_exercises.ipynb),
#   [05](../exercises/05_moe_memory_exercises.ipynb),
#   [06](../exercises/06_long_context_exercises.ipynb),
#   [07](../exercises/07_time_and_cost_exercises.ipynb),
#   [08](../exercises/08_rlhf_memory_exercises.ipynb),
#   [09](../exercises/09_quantization_exercises.ipynb),
#   [10](../exercises/10_communication_exercises.ipynb),
#   [11](../exercises/11_debugging_oom_exercises.ipynb).
# - [The cheat sheet](../docs/cheatsheet.md): the key formulas on one page, each with its source.
#
# Each topic notebook has the same sections (`notebooks/STYLE.md`): the question (中文 and
# English), the 30-second answer, what the interviewer probes, the words it uses, the answer step
# by step, charts, a playground, follow-up questions (追问), pitfalls (避坑), a deep dive with the
# fact-check of the circulating answer, and further reading. Every number comes from `memlib`,
# whose estimates are checked against measured PyTorch training steps (README, "Validation").
#
# The `.py` file next to each notebook is its source (Jupytext percent format); the `.ipynb`
# keeps the outputs so you can read without running anything. Open this page with the README's
# first command (JupyterLab at the repository root), so that every link here works.

# %% jupyter={"source_hidden": true} tags=["nbval-check-output", "hide-input"]
import memlib

print(f"memlib {memlib.__version__}: {len(memlib.list_models())} models, {len(memlib.list_gpus())} GPUs in the catalog")
