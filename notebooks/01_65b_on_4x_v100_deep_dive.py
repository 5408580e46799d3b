# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: jupyter,slideshow,tags,-user_expressions
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

# %% [markdown] slideshow={"slide_type": "slide"}
# # 01 · deep dive · 深入：4×V100 训练 Vicuna-65B
#
# The material behind [notebook 01](01_65b_on_4x_v100.ipynb)'s answer, for a second reading: more
# follow-up questions, the fact-check of seed 000, every layout of full fine-tuning on four V100s
# and the DeepSpeed config of the offload layout.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
# %matplotlib inline
import json

import matplotlib.pyplot as plt
import numpy as np
from IPython.display import Markdown, display

import memlib
from memlib.learn.chapters.ch01 import ACCUM, GPU, MB, MODEL, N, PREC, QLORA, SEQ
from memlib.learn.kit import GB, G
from memlib import cost, estimate_inference, estimate_training, fits, fmt_bytes, get_gpu, get_model, step_time
from memlib.training.explain import markdown_table
from memlib.learn.factcheck import Claim, fact_check_table
from memlib.hardware.fit import usable_bytes
from memlib.hardware.gpus import HOST_LINK
from memlib.training.lora import lora_params
from memlib.parallel.plan import max_micro_batch, min_gpus, plan, to_deepspeed_config
from memlib.cost.timing import dp_collectives
from memlib.parallel.megatron import megatron_bytes_per_param
from memlib.units import fmt_count
from memlib.parallel.zero import zero_model_state_bytes


# The figures of the core page (01_65b_on_4x_v100), computed the same way.
m, g = get_model(MODEL), get_gpu(GPU)
P, cap = m.num_params, usable_bytes(g)
states = zero_model_state_bytes(P, stage=0, dp=1)         # step 2
z3_states = zero_model_state_bytes(P, stage=3, dp=N)      # step 3
full_plan = plan(MODEL, GPU, N, seq_len=SEQ, micro_batch=MB, grad_accum=8)                             # step 4
qlora_plan = plan(MODEL, GPU, N, task="qlora", seq_len=SEQ, micro_batch=MB, grad_accum=ACCUM,
                  allow_offload=False, **QLORA)  # step 5; GPUs alone (FSDP CPU offload: notebook 03)
dm = next(p for p in qlora_plan.feasible if p.estimate.setup.sharding == "device_map")
fsdp = next(p for p in qlora_plan.feasible if p.estimate.setup.sharding == "fsdp")
no_offload_fits = any(p.settings["offload"] == "none" for p in full_plan.feasible)
# what the core page's steps compute, for the tables below
seed_sum = zero_model_state_bytes(P, stage=0, dp=1, k=8)
amp = estimate_training(m, seq_len=SEQ, micro_batch=MB, precision=PREC)
layouts = {f"ZeRO-{s}" if s else "DDP": dict(zero_stage=s, dp=N) for s in range(4)}
layouts.update({"TP=4": dict(tp=N, grad_accum=8), "PP=4": dict(pp=N, grad_accum=8)})
split = {name: estimate_training(m, seq_len=SEQ, micro_batch=MB, precision=PREC, recompute="full", **kw)
         for name, kw in layouts.items()}
meg_fp16 = megatron_bytes_per_param("fp16-grads")
# states at the step: + the fp32 copy of the fp16 main gradients that Megatron's optimizer makes there
step_states = {k: split[k].model_state_bytes + split[k].counts["optimizer_temporary_bytes"] for k in ("TP=4", "PP=4")}
tp_bpp = step_states["TP=4"] / (P / N)   # B per owned parameter in estimate_training's TP layout
best = full_plan.best
host = N * best.estimate.host_bytes
nvme_plan = plan(MODEL, GPU, N, seq_len=SEQ, micro_batch=MB, grad_accum=8, host_bytes_per_node=512 * 2**30,
                 offload_device="nvme", recomputes=("full",))
nv = nvme_plan.best
adapters = lora_params(m, 64, "all-linear")
nf4 = estimate_inference(m, batch=1, context_len=1, weights="nf4").breakdown["weights"]
t_dm, t_fsdp = dm.time, fsdp.time
mmb = {{"device_map": "device_map", "fsdp": "FSDP-QLoRA"}[p.estimate.setup.sharding]: max_micro_batch(p, GPU)
       for p in qlora_plan.feasible}
a100_min = min_gpus(MODEL, "a100-80gb")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## More follow-up questions · 更多追问
#
# ### Can four V100s at least serve the 65B?

# %% tags=["nbval-check-output"]
serve = {w: estimate_inference(m, batch=1, context_len=SEQ, weights=w, kv_cache="fp16", tp=N)  # memlib, per GPU
         for w in ("fp16", "int8", "int4-gptq")}
serve_batch = {w: memlib.max_batch(m, g, context_len=SEQ, weights=w, kv_cache="fp16", tp=N).value for w in serve}
for w, e in serve.items():
    print(f"{w}: weights {G(e.breakdown['weights'])}/GPU, peak {G(e.peak_bytes)}, fits {fits(e, g).fits}, "
          f"max batch at {SEQ}: {serve_batch[w]}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
rows = [[w, G(e.breakdown["weights"]), G(e.peak_bytes), f"{fits(e, g).margin_gib:+.1f} GiB", serve_batch[w]]
        for w, e in serve.items()]
display(Markdown(markdown_table(rows, ["weights (tensor parallel 4)", "weights per GPU", "peak per GPU, batch 1",
                                       "margin", f"max batch at {SEQ:,} tokens"])))
display(Markdown(
    f"In fp16 the weights are {GB(2 * P)} in all, {G(serve['fp16'].breakdown['weights'])} per card: with the "
    f"KV cache ({serve['fp16'].kv_bytes_per_token:,} bytes per token per card), the prefill's activations and the "
    f"CUDA context it **{'fits' if fits(serve['fp16'], g).fits else 'does not fit'}** "
    f"({fits(serve['fp16'], g).margin_gib:+.1f} GiB). int8 or 4-bit weights do, with room for "
    f"{serve_batch['int8']} and {serve_batch['int4-gptq']} sequences of {SEQ:,} tokens."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Does FlashAttention run on a V100?

# %% tags=["nbval-check-output"]
attn = {a: estimate_training(m, seq_len=SEQ, micro_batch=MB, precision=PREC, attention=a) for a in ("sdpa", "eager")}
print({a: fmt_bytes(e.counts["layer_activation_bytes"]) for a, e in attn.items()})   # one layer's saved tensors

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    "No. FlashAttention 2 needs Ampere or newer (sm80+); on a V100 (sm70) PyTorch's `scaled_dot_product_attention` "
    "falls back to its memory-efficient kernel (from xformers). For memory that is the same: neither stores the "
    f"s × s attention matrix, only the output and a log-sum-exp per row, so one layer saves "
    f"{fmt_bytes(attn['sdpa'].counts['layer_activation_bytes'])} at {SEQ:,} tokens (memlib's `attention=\"sdpa\"`), "
    f"against {fmt_bytes(attn['eager'].counts['layer_activation_bytes'])} with eager attention, which keeps the "
    "softmax. The cost is speed: the fallback kernel is slower than FlashAttention on newer cards."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### V100 PCIe or SXM2: does it change the answer?

# %% tags=["nbval-check-output"]
pcie = get_gpu("v100-pcie-32gb")   # 112 TFLOP/s fp16, no NVLink: GPU-to-GPU over PCIe 3.0 x16 (datasheet)
form = {"device_map": dm, "FSDP-QLoRA": fsdp, "ZeRO-Infinity": best}
speed = {name: (step_time(p.estimate, g), step_time(p.estimate, pcie)) for name, p in form.items()}
for name, (sxm, pc) in speed.items():
    print(f"{name}: {sxm.tokens_per_s_per_gpu:.0f} vs {pc.tokens_per_s_per_gpu:.0f} tokens/s per GPU; "
          f"offload {pc.offload_s:.0f} s/step")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
v_sxm, v_pcie = f"{g.fp16_tflops:g}", f"{pcie.fp16_tflops:g}"
v_nvl, v_pci = f"{g.interconnect_bytes_per_s / 1e9:.0f} GB/s", f"{pcie.interconnect_bytes_per_s / 1e9:.0f} GB/s"
v_dm = f"{speed['device_map'][0].tokens_per_s_per_gpu:.0f} vs {speed['device_map'][1].tokens_per_s_per_gpu:.0f}"
v_fsdp = f"{speed['FSDP-QLoRA'][0].tokens_per_s_per_gpu:.0f} vs {speed['FSDP-QLoRA'][1].tokens_per_s_per_gpu:.0f}"
v_off, v_host = f"{speed['ZeRO-Infinity'][1].offload_s:.0f} s", f"{pcie.host_link_bytes_per_s / 1e9:.0f} GB/s"
v_off2 = f"{2 * speed['ZeRO-Infinity'][1].offload_s:.0f} s"

# %% [markdown]
# Memory: no difference, both hold 32 GB. Speed: the PCIe card's tensor peak is {eval}`v_pcie` TFLOP/s
# against the SXM2's {eval}`v_sxm` (lower clocks at 250 W), and its cards talk over PCIe 3.0 x16
# ({eval}`v_pci`, both directions) instead of NVLink ({eval}`v_nvl`). For QLoRA the compute dominates:
# `memlib.step_time` gives {eval}`v_dm` tokens/s per GPU with device_map (SXM2 vs PCIe) and
# {eval}`v_fsdp` with FSDP-QLoRA, whose gathers of the 4-bit layers still hide behind a 2,048-token
# micro-batch. Offload is the same on both (the host link is PCIe 3.0, {eval}`v_host` each way):
# {eval}`v_off` of transfers per ZeRO-Infinity step. The catch is the chassis: PCIe servers often put two
# cards behind one switch with one x16 uplink, so concurrent offload halves per card and that becomes
# {eval}`v_off2` (ask `nvidia-smi topo -m`).

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### How much CPU RAM to load and quantize the 130 GB checkpoint?

# %% tags=["nbval-check-output"]
ckpt16 = estimate_inference(m, weights="fp16").weight_bytes   # the fp16 checkpoint on disk
ckpt32 = estimate_inference(m, weights="fp32").weight_bytes   # what torch builds without torch_dtype
print(f"fp16 checkpoint {fmt_bytes(ckpt16)}; fp32 model {fmt_bytes(ckpt32)}; NF4 on the GPUs {fmt_bytes(nf4)}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
h_16, h_2x, h_32 = f"{fmt_bytes(ckpt16)}", f"{GB(2 * ckpt16)}", f"{GB(ckpt32 + ckpt16)}"
h_nf4 = f"{GB(nf4)}"

# %% [markdown]
# The checkpoint is {eval}`h_16` of fp16 tensors. How much of it sits in host RAM depends on how you load
# it. `from_pretrained(..., load_in_4bit=True, device_map="auto")` builds the model on the meta device
# (`device_map` turns `low_cpu_mem_usage` on), reads the safetensors shards by memory map one at a time and
# quantizes each weight as it is moved to its GPU: the host needs a shard in flight and page cache, and the
# GPUs end with {eval}`h_nf4` of NF4. A plain load (no `device_map`, no `low_cpu_mem_usage`) first builds the
# whole model in CPU RAM and then copies the state dict into it: about twice the model, {eval}`h_2x` with
# `torch_dtype=torch.float16`, and {eval}`h_32` if the model is built in fp32 (the default dtype) while an
# fp16 state dict is read. Offline GPTQ/AWQ quantization (AutoGPTQ, AutoAWQ) loads the fp16 model into CPU
# RAM and moves one layer at a time to the GPU: plan for {eval}`h_16` of host RAM plus the calibration
# activations. A 256 GB server is enough for QLoRA's streamed load and too small for either plain load.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### What utilisation should you expect from QLoRA on a V100?

# %% tags=["nbval-check-output"]
hfus = (0.40, 0.25, 0.15)     # the plan's assumption (HFU), then two lower ones a practitioner should budget for
times = {u: step_time(dm.estimate, g, hfu=u) for u in hfus}                             # memlib.step_time
job = {u: N * t.tokens_per_s_per_gpu for u, t in times.items()}                         # device_map: whole job
days_1b = {u: 1e9 / job[u] / 86400 for u in hfus}                                       # a billion tokens
print({f"{u:.0%} HFU = {times[u].mfu:.0%} MFU": f"{job[u]:.0f} tokens/s, {days_1b[u]:.0f} days per 1B tokens"
       for u in hfus})

# %% jupyter={"source_hidden": true} tags=["remove-input"]
q_40, q_25, q_15 = f"{job[0.40]:.0f}", f"{job[0.25]:.0f}", f"{job[0.15]:.0f}"
q_d40, q_d15 = f"{days_1b[0.40]:.0f}", f"{days_1b[0.15]:.0f}"
q_m40, q_m15 = f"{times[0.40].mfu:.0%}", f"{times[0.15].mfu:.0%}"

# %% [markdown]
# Less than the 40% the core page assumes; treat its figure as an upper bound. Three things pull a V100's
# QLoRA run down: bitsandbytes dequantizes every NF4 weight to fp16 before each matmul, in the forward, the
# recomputed forward and the backward (extra memory traffic and kernel launches); FlashAttention 2 does not
# run on sm70, so attention uses PyTorch's slower memory-efficient kernel; and fp16 with loss scaling skips
# the steps whose gradients overflow. memlib does not model these kernels, so this is a sensitivity, not a
# measurement: the whole device_map job makes {eval}`q_40` tokens/s with its kernels at 40% of peak (HFU, recompute
# counted; {eval}`q_m40` MFU), {eval}`q_25` at 25% and {eval}`q_15` at 15% HFU ({eval}`q_m15` MFU;
# `memlib.step_time(..., hfu=...)`); a billion tokens takes {eval}`q_d40` days at best
# and {eval}`q_d15` at 15%. Say "about a hundred tokens per second for the whole job, at best" and measure
# the first 20 steps.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### What do QLoRA's paged optimizers and double quantization save?

# %% tags=["nbval-check-output"]
dq = {d: estimate_training(m, seq_len=SEQ, precision=PREC, finetune="qlora", recompute="full", double_quant=d,
                           **QLORA) for d in (True, False)}     # one replica: the whole 4-bit model (memlib.training.lora.nf4_bytes)
dq_saved = dq[False].counts["param_bytes"] - dq[True].counts["param_bytes"]
quantized = sum(t.numel * t.count for t in m.tensors() if t.name.endswith("_proj"))
print(f"double quantization saves {fmt_bytes(dq_saved)} = {8 * dq_saved / quantized:.3f} bits per quantized weight")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"**Double quantization** stores each 64-weight block's absmax in 8 bits (plus one fp32 constant per 256 "
    f"blocks) instead of fp32: 4.127 instead of 4.5 bits, **{8 * dq_saved / quantized:.3f} bits per weight**, "
    f"**{fmt_bytes(dq_saved)}** on LLaMA-65B. **Paged optimizers** (bitsandbytes' `paged_adamw_32bit`) put the "
    "AdamW states in CUDA unified memory, which the driver pages to CPU RAM when the GPU runs out, so a long "
    "sequence's memory spike slows a step instead of crashing it. memlib counts the states as resident "
    f"({G(dm.estimate.breakdown['optimizer'])} per card here): an upper bound for a paged run."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### How do FSDP's sharding strategies map to ZeRO stages?

# %% tags=["nbval-check-output"]
strategies = {"NO_SHARD": "DDP", "SHARD_GRAD_OP": 2, "FULL_SHARD": 3}
fsdp_vs_zero = {k: (estimate_training(m, seq_len=SEQ, precision=PREC, zero_stage=k, dp=N, recompute="full"),
                    estimate_training(m, seq_len=SEQ, precision=PREC, zero_stage=0 if z == "DDP" else z, dp=N,
                                      recompute="full")) for k, z in strategies.items()}
for k, (f, z) in fsdp_vs_zero.items():
    print(f"{k}: {fmt_bytes(f.model_state_bytes)} per GPU; DeepSpeed {strategies[k]}: {fmt_bytes(z.model_state_bytes)}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
rows = [[k, f"ZeRO-{z}" if z != "DDP" else "DDP", G(f.model_state_bytes), G(zz.model_state_bytes)]
        for (k, (f, zz)), z in zip(fsdp_vs_zero.items(), strategies.values())]
display(Markdown(markdown_table(rows, ["FSDP strategy", "DeepSpeed equivalent", "FSDP states per GPU",
                                       "DeepSpeed states per GPU"])))
display(Markdown(
    "FULL_SHARD shards parameters, gradients and optimizer states (ZeRO-3); SHARD_GRAD_OP keeps the parameters "
    "whole between forward and backward (ZeRO-2); NO_SHARD is DDP; HYBRID_SHARD is FULL_SHARD inside a node and "
    "replicas across nodes. The states differ where the layouts do: FSDP under AMP keeps fp32 parameters "
    "(4 B) where DeepSpeed keeps fp16 ones (2 B) beside an fp32 master counted with the optimizer."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Under ZeRO-3, who holds what? · ZeRO-3 下每张卡上有什么
#
# Each V100 holds a quarter of every model state and gathers one layer at a time (hatched) while that layer
# runs; the bytes are the estimate's own moments (`memlib.learn.mechanisms.zero_sharding`). That is why ZeRO-3's
# per-card states are a quarter of the 16 bytes per parameter, yet the job still needs far more than four V100s.

# %%
from memlib.learn import mechanisms as mech

mech.draw_zero_sharding(mech.zero_sharding(MODEL, dp=N, zero_stage=3, seq_len=2048, micro_batch=1,
                                           precision="fp16-mixed"))
plt.show()

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Under ZeRO-3, a bigger micro-batch or more gradient accumulation?

# %% tags=["nbval-check-output"]
shapes = {"micro-batch 1 x 8 steps": dict(micro_batch=1, grad_accum=8),
          "micro-batch 8 x 1 step": dict(micro_batch=8, grad_accum=1)}
accum = {k: estimate_training(m, seq_len=SEQ, precision=PREC, zero_stage=3, dp=N, recompute="full", **kw)
         for k, kw in shapes.items()}
traffic = {k: sum(c.bytes_per_gpu * c.per_step for c in dp_collectives(e)[1]) for k, e in accum.items()}  # memlib.cost.timing
for k, e in accum.items():
    print(f"{k}: {fmt_bytes(traffic[k])} per GPU per step; activations at the peak {fmt_bytes(e.breakdown['activations'])}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
(k1, t1), (k8, t8) = traffic.items()
display(Markdown(
    f"The same 8 sequences per GPU per optimizer step: {k1} moves **{fmt_bytes(t1)}** per GPU, {k8} "
    f"**{fmt_bytes(t8)}**. ZeRO-3 gathers the parameters in every micro-batch's forward and again in its backward "
    f"and reduce-scatters gradients after every backward, so its traffic grows with accumulation "
    f"(`memlib.cost.timing.dp_collectives`). The larger micro-batch pays in activations instead "
    f"({fmt_bytes(accum[k8].breakdown['activations'])} against {fmt_bytes(accum[k1].breakdown['activations'])} "
    "at the peak). DDP and ZeRO-1 communicate once per step under accumulation; ZeRO-2 reduces every micro-batch."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### HF Trainer + DeepSpeed: why does the real run use gigabytes more than the estimate?

# %% tags=["nbval-check-output"]
# gpjt/fine-tune-2024-04@5a205a7: Llama-3-8B, HF Trainer 4.40 + DeepSpeed 0.14.2 on 8 GPUs, fp16, one 2,048-token
# sequence; the largest of the 8 GPUs' allocator peaks, in MiB (validation/published.jsonl rows of the same ids)
gpjt = {"gpjt-llama-3-8b-zero3-nozeroinit-seq2048-mb1": 49_086 * 2**20,
        "gpjt-llama-3-8b-zero2-offload-ckpt-seq2048-mb1": 24_497 * 2**20}
others = 21_363 * 2**20   # the same offload run's GPUs 1-4, whose partitions hold neither embedding nor head
l3 = get_model("llama-3-8b")
run = dict(seq_len=2048, precision="fp16", dp=8, recipe="hf-trainer")   # the Trainer drops the logits before backward
z3 = {zi: estimate_training("llama-3-8b", zero_stage=3, zero_init=zi, **run) for zi in (True, False)}
held = {t.name: t.nbytes for t in z3[False].terms}["zero3_saved_weight_bytes"]   # one layer's gathered weights
off = estimate_training("llama-3-8b", zero_stage=2, offload="optimizer", recompute="full", **run)
check = {t.name: t.nbytes for t in off.terms}["deepspeed_offload_check_bytes"]   # the embedding's overflow check
print(f"ZeRO-3: {G(z3[True].peak_bytes)} built under zero.Init, {G(z3[False].peak_bytes)} built first "
      f"(active {G(z3[False].active_peak_bytes)}); measured {G(gpjt['gpjt-llama-3-8b-zero3-nozeroinit-seq2048-mb1'])}")
print(f"ZeRO-2 + offload: {G(off.peak_bytes)} ({off.peak_moment.where}); "
      f"measured {G(gpjt['gpjt-llama-3-8b-zero2-offload-ckpt-seq2048-mb1'])}")

# %%
d_init, d_late, d_layer = G(z3[True].peak_bytes), G(z3[False].peak_bytes), G(held)
d_all, d_z3m = G(32 * held), G(gpjt["gpjt-llama-3-8b-zero3-nozeroinit-seq2048-mb1"])
d_stream, d_active = G(z3[False].stream_held_bytes), G(z3[False].active_peak_bytes)
d_off, d_offm, d_check = G(off.peak_bytes), G(gpjt["gpjt-llama-3-8b-zero2-offload-ckpt-seq2048-mb1"]), G(check)
d_n, d_emb = f"{l3.num_layers}", f"{l3.vocab_size * l3.hidden_size / 1e6:.0f}M"
d_lower = G(gpjt["gpjt-llama-3-8b-zero2-offload-ckpt-seq2048-mb1"] - others)

# %% [markdown]
# Two things a paper estimate leaves out decide a real run of Llama-3-8B fine-tuned with HF Trainer and
# DeepSpeed on 8 GPUs. Both are in DeepSpeed's source.
#
# **Where the model was built.** If the model is built after `TrainingArguments` (which carries the ZeRO-3
# config), `from_pretrained` builds it under `deepspeed.zero.Init`. DeepSpeed then replaces
# `torch.nn.functional.linear` with a version that saves the parameter itself, and the peak is {eval}`d_init`.
# If the model is loaded first, as in this run, `deepspeed.initialize` partitions a model that already exists
# and PyTorch's linear stays. It saves a view of each gathered weight for the backward, so every layer's
# gathered 16-bit weights ({eval}`d_layer` a layer, {eval}`d_all` for all {eval}`d_n`) stay on the GPU until that layer's
# backward. memlib's `zero_init=False` gives {eval}`d_late` allocated.
#
# **What the allocator still counts.** The run logged *active* bytes, which also count blocks already freed
# that another CUDA stream may still read. ZeRO-3 copies each gradient into its reduce bucket on a separate
# stream and frees it at once; the host waits only when three bucket reductions are outstanding. When the
# reduce-scatters lag the backward, up to three buckets of freed gradients ({eval}`d_stream`) are still counted.
# memlib's `active_peak_bytes` adds them: {eval}`d_active`, against {eval}`d_z3m` measured. They cannot cause an
# out-of-memory error, because the allocator waits for the stream and frees them first. But the allocator's
# counters and `nvidia-smi` show them.
#
# **What offload leaves on the GPU.** ZeRO-Offload moves the fp32 master weights and Adam states to the host.
# But the GPU whose partition holds the embedding (or the untied head) checks that {eval}`d_emb`-element gradient for
# overflow in fp32 before sending it: {eval}`d_check` of temporaries, on top of a 16-bit staging buffer as large
# as that parameter. memlib puts that GPU at {eval}`d_off`; it measured {eval}`d_offm`, and the GPUs
# without the embedding or the head {eval}`d_lower` lower. Size the run for its largest GPU, not the average one.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The first step fitted, the second ran out of memory: why?

# %% tags=["nbval-check-output"]
# NVIDIA/Megatron-LM@6e091e1b functional test gpt3_7b_tp4_pp1_memory_speed on DGX H100: torch's max allocated bytes
# after steps 1 and 2 (golden values; validation/published.jsonl rows megatron-ci-gpt3-7b-tp4-pp1-h100*)
ci = {"step 1": 50_289_487_872, "step 2 on": 57_143_791_616}
gpt7b = memlib.Model(name="megatron-ci-gpt3-7b", hidden_size=4096, num_layers=32, num_heads=32, num_kv_heads=8,
                     intermediate_size=16384, vocab_size=131584, tie_word_embeddings=False, qkv_bias=True,
                     o_bias=True, mlp_bias=True, mlp="standard", norm="layernorm", position="learned",
                     max_position_embeddings=8192, model_type="gpt")
mega = estimate_training(gpt7b, recipe="megatron", seq_len=8192, micro_batch=2, grad_accum=2, dp=2, tp=4,
                         hidden_dropout=0.1)
print(f"memlib: first iteration {G(mega.first_iteration_peak_bytes)}, then {G(mega.peak_bytes)}; "
      f"measured {G(ci['step 1'])}, then {G(ci['step 2 on'])}")

# %%
d_ci1, d_ci2, d_gap = G(ci["step 1"]), G(ci["step 2 on"]), G(ci["step 2 on"] - ci["step 1"])
d_first, d_steady = G(mega.first_iteration_peak_bytes), G(mega.peak_bytes)
d_moments = G(mega.peak_bytes - mega.first_iteration_peak_bytes)

# %% [markdown]
# Megatron-LM's own CI trains a 7B GPT with tensor parallelism 4 and the distributed optimizer over 2
# data-parallel GPUs, and logs torch's allocated peak after every step. Step 1 peaks at {eval}`d_ci1`; from step 2
# on the peak is {eval}`d_ci2`, {eval}`d_gap` more, on the same data.
#
# The difference is Adam's two moments. PyTorch's Adam, apex's and Transformer Engine's FusedAdam, and DeepSpeed
# since v0.13.2 all create the optimizer's state inside the first `step()`. So the first forward and backward run
# without it. From step 2 on, every forward and backward carries it: two fp32 tensors for this GPU's share of
# the parameters.
#
# memlib gives both peaks: `first_iteration_peak_bytes` is {eval}`d_first` and `peak_bytes` is {eval}`d_steady`.
# The gap is {eval}`d_moments`. Size a run by `peak_bytes`. A log line printed after iteration 1, such as
# Megatron's "(after 1 iterations) memory (MB)", shows the smaller figure. DeepSpeed before v0.13.2 ran one step
# with zero gradients at start-up, so its first iteration already held the states.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### GaLore or LOMO: full fine-tuning on a 24 GB card?

# %% tags=["nbval-check-output"]
l7 = {k: estimate_training("llama-7b", seq_len=SEQ, precision="bf16", recompute="full", **kw)   # memlib.estimate_training
      for k, kw in (("AdamW", dict()), ("8-bit AdamW", dict(optimizer="adamw-8bit")), ("SGD", dict(optimizer="sgd")))}
lomo_floor = l7["SGD"].counts["param_bytes"] + l7["SGD"].moments[0].parts["activations"]  # weights + activations
weights_65 = 2 * P   # LLaMA-65B in fp16
for k, e in l7.items():
    print(f"llama-7b pure bf16 {k}: peak {fmt_bytes(e.peak_bytes)}, fits a 4090: {fits(e, 'rtx-4090').fits}")
print(f"weights + saved activations: {fmt_bytes(lomo_floor)}; 65B fp16 weights {fmt_bytes(weights_65)} "
      f"vs 4 x {G(cap)}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"memlib computes the ends, not the methods. Pure bf16 LLaMA-7B with full recompute peaks at "
    f"{G(l7['AdamW'].peak_bytes)} with AdamW, {G(l7['8-bit AdamW'].peak_bytes)} with 8-bit AdamW and "
    f"{G(l7['SGD'].peak_bytes)} with plain SGD, which still holds every gradient: none fits a 24 GB RTX 4090. "
    f"LOMO (Lv et al. 2023) fuses the update into the backward, so no whole gradient and no optimizer state is "
    f"ever alive: its floor is the weights plus the saved activations, {G(lomo_floor)}. GaLore (Zhao et al. 2024) "
    "keeps Adam's moments in a rank-r projection of each gradient and, with 8-bit states and per-layer updates, "
    "reports 7B pre-training on a 24 GB card. memlib models neither the fused per-tensor update nor GaLore's "
    f"projected states. For this question: LLaMA-65B's fp16 weights alone are {G(weights_65)}, "
    f"{weights_65 / (N * cap):.0%} of the four V100s, so even LOMO leaves no room."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Why does nvidia-smi show more than `torch.cuda.max_memory_allocated()`?

# %% tags=["nbval-check-output"]
v_dm = fits(dm.estimate, g)   # memlib.fits: peak + CUDA context + allocator headroom against the card
print(f"allocated peak {G(v_dm.peak_bytes)}; + headroom {G(v_dm.headroom_bytes)} + context "
      f"{G(v_dm.cuda_context_bytes)} = {G(v_dm.required_bytes)} of {G(v_dm.capacity_bytes)}")
print(f"{g.name}: nominal {G(g.memory_bytes)}, nvidia-smi total {G(g.reported_total_bytes)}, torch total {G(cap)}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    "Three numbers, three meanings. `torch.cuda.max_memory_allocated()` is the peak of live tensors: what memlib's "
    f"estimates are ({G(v_dm.peak_bytes)} for device_map QLoRA). `max_memory_reserved()` adds the blocks PyTorch's "
    "caching allocator holds but has not filled (fragmentation); nvidia-smi adds the CUDA context (driver, "
    f"kernels, cuBLAS workspaces) on top. `memlib.fits` budgets {G(v_dm.headroom_bytes)} of headroom (5% of the "
    f"peak) and {G(v_dm.cuda_context_bytes)} of context: {G(v_dm.required_bytes)} against the {G(cap)} torch "
    f"reports. The V100's nominal {G(g.memory_bytes)} is not all usable: nvidia-smi's total is "
    f"{G(g.reported_total_bytes)}. When reserved runs far above allocated, "
    "`PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` lets the allocator grow segments in place instead of "
    "leaving unusable holes between fixed-size blocks."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### fp16 on a V100: how does loss scaling keep the gradients? · V100 上的 fp16 与 loss scaling
#
# ✏️ **Back of the envelope.** fp16 has 5 exponent bits: largest 65504, smallest normal
# 2^-14 ≈ 6e-5, smallest subnormal 2^-24 ≈ 6e-8. A gradient of 1e-9 becomes 0; times a loss
# scale of 2^16 it is about 7e-5, representable.

# %% tags=["nbval-check-output"]
f16 = np.finfo(np.float16)   # numpy's fp16 limits (IEEE 754 half); memlib.get_gpu says V100 has no bf16
scale = 2.0 ** 16            # a typical dynamic loss scale (torch.amp.GradScaler starts at 2**16)
print(f"fp16 max {float(f16.max):g}, smallest normal {float(f16.smallest_normal):.3g}, smallest subnormal "
      f"{float(f16.smallest_subnormal):.3g}; 1e-9 -> {float(np.float16(1e-9)):g}, x 2**16 -> "
      f"{float(np.float16(1e-9 * scale)):.3g}")

# %% [markdown]
# Dynamic loss scaling (torch's `GradScaler`, DeepSpeed's `fp16.loss_scale: 0`) raises the scale until
# a step overflows, skips that step and halves it. Two consequences: the trainable adapters stay fp32
# (GradScaler refuses to unscale fp16 gradients), which step 5 counts; and NF4 does not avoid the
# issue, because QLoRA dequantizes each weight to the fp16 compute dtype for every matmul.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Fact-check · 纠错
#
# Each claim of seed 000 as written, memlib's figure, and a verdict with its word, so it reads without an emoji font (✅ right · ⚠️ partly · ❌ wrong).

# %% tags=["nbval-check-output"]
fwd = next(mo for mo in amp.moments if mo.name == "forward")
layer_act, all_act = amp.counts["layer_activation_bytes"], fwd.parts["activations"]   # no recompute, SDPA
eager = estimate_training(m, seq_len=SEQ, micro_batch=MB, precision=PREC, attention="eager")  # softmax kept: 34sbh + 5as²b
layer_eager = eager.counts["layer_activation_bytes"]
ds = estimate_training(m, seq_len=SEQ, precision=PREC, zero_stage=1, dp=N)   # DeepSpeed layout, unsharded counts
tp2pp2 = estimate_training(m, seq_len=SEQ, precision="bf16-mixed", tp=2, pp=2, recompute="full", grad_accum=8)
try:
    estimate_training(m, seq_len=SEQ, precision="bf16-mixed", pp=2, dp=2, zero_stage=3)
    ds_pipeline = "accepted"
except ValueError as err:
    ds_pipeline = str(err)
seed_tps = 1.5                                   # the seed's "1-2 tokens/s/卡"
seed_mfu = fsdp.time.mfu * seed_tps / fsdp.tokens_per_s_per_gpu   # compute-bound: tokens/s scale with MFU
real_dm = step_time(dm.estimate, g, hfu=0.15)  # device_map at the realistic 15% HFU of "What utilisation should you expect"
print(f"per layer {fmt_bytes(layer_act)} (SDPA), {fmt_bytes(layer_eager)} (eager), all layers {fmt_bytes(all_act)}; TP2xPP2 A100 peak {G(tp2pp2.peak_bytes)}; "
      f"ZeRO-3 with a pipeline: {ds_pipeline}; seed's speed = MFU {seed_mfu:.2%}")

# %%
S = "seed 000 ·"
facts = [
    Claim("模型参数：65B × 2 bytes（FP16）= 130GB",
          f"{S} 标准答",
          f"{GB(2 * P)} of fp16 weights",
          verdict="✅ right",
          why="right for the 16-bit working copy"),
    Claim("梯度：与参数同大小，130GB（混合精度下梯度为FP16）",
          f"{S} 标准答",
          f"{GB(ds.counts['grad_bytes_unsharded'])} (DeepSpeed); PyTorch AMP fp32: {GB(amp.counts['grad_bytes'])}",
          verdict="⚠️ partly",
          why="right for DeepSpeed's fp16 layout; AMP keeps gradients in fp32"),
    Claim("优化器状态：AdamW需存储momentum和variance，均为FP32（4 bytes），即65B × 4 × 2 = 520GB",
          f"{S} 标准答",
          f"m + v {GB(amp.counts['optimizer_bytes'])}; with the fp32 master {GB(ds.counts['optimizer_bytes_unsharded'])}",
          verdict="⚠️ partly",
          why="m and v are right; mixed precision also keeps a 4-byte master copy"),
    Claim("总需求：130（参数）+ 130（梯度）+ 520（优化器）= 780GB",
          f"{S} 标准答",
          f"{GB(states)} ({states // P} B/param)",
          verdict="❌ wrong",
          why=f"the missing master copy is {GB(states - seed_sum)}"),
    Claim("激活值：以序列长度2048、batch size 1为例，每层约1-2GB，65B约40层，额外40-80GB",
          f"{S} 标准答",
          f"{GB(layer_eager)} per layer without fused attention (34sbh + 5as²b), {GB(layer_act)} with SDPA; "
          f"{m.num_layers} layers",
          verdict="⚠️ partly",
          why=f"1-2 GB per layer is right without fused attention; {m.num_layers} layers, not 40. Only with SDPA "
              f"(under 1 GB per layer) do two errors cancel: {GB(all_act)} in all"),
    Claim("即使使用ZeRO-3也差约2GB",
          f"{S} 标准答",
          f"ZeRO-3 states {G(z3_states)} per GPU vs {G(cap)}",
          verdict="❌ wrong",
          why=f"short by about {G(z3_states - cap)} per GPU; the seed's own 195 GB contradicts it"),
    Claim("参数130/4=32.5GB + 梯度130/4=32.5GB + 优化器520/4=130GB = 195GB",
          f"{S} 标准答 (ZeRO-3)",
          f"{GB(z3_states)} of states per GPU",
          verdict="❌ wrong",
          why=f"{states // P} B/param ÷ {N}, not 12"),
    Claim("若仅分片优化器状态（ZeRO-2），每卡需130+130+130=390GB",
          f"{S} 标准答",
          f"optimizer only is ZeRO-1: {GB(zero_model_state_bytes(P, 1, N))}; ZeRO-2: {GB(zero_model_state_bytes(P, 2, N))}",
          verdict="❌ wrong",
          why="ZeRO-2 also shards the gradients; both miss the master copy"),
    Claim("65B的hidden size（8192）可被4整除，但每卡仍需存储完整参数分片+激活值，显存仍不足",
          f"{S} 标准答 (TP)",
          f"TP=4 states at the step {G(step_states['TP=4'])} per GPU ({tp_bpp:.0f} B per owned parameter)",
          verdict="✅ right",
          why=f"a valid split; Megatron keeps {meg_fp16} B per owned parameter in fp16 (18 in bf16)"),
    Claim("V100 NVLink带宽仅300GB/s",
          f"{S} 标准答",
          f"{g.interconnect} {g.interconnect_gb_per_s:.0f} GB/s per GPU, both directions together",
          verdict="⚠️ partly",
          why="the figure is right; memory, not NVLink, is what stops TP=4 inside one server"),
    Claim("每卡负责约16层（65B约80层）",
          f"{S} 标准答 (PP)",
          f"{m.num_layers} layers / {N} stages = {m.num_layers // N}",
          verdict="⚠️ partly",
          why=f"{m.num_layers} layers is right; four stages take {m.num_layers // N} each"),
    Claim("每卡参数：130/4=32.5GB，加上梯度/优化器（若用ZeRO-1），每卡约97.5GB",
          f"{S} 标准答 (PP)",
          f"PP=4 first stage: states at the step {G(step_states['PP=4'])}",
          verdict="❌ wrong",
          why=f"{meg_fp16} B per stage parameter in fp16; ZeRO-1 needs data parallelism, and four stages on four GPUs leave dp = 1"),
    Claim("V100 32GB实际可用约31GB",
          f"{S} 坑1",
          f"torch reports {G(cap)}; fits() also budgets a CUDA context",
          verdict="✅ right",
          why="about 31 GiB usable"),
    Claim("参数显存降至65B × 0.5 bytes = 32.5GB",
          f"{S} 解法 (QLoRA)",
          f"NF4 model {GB(nf4)}",
          verdict="⚠️ partly",
          why="NF4 is 4.127 bits; embeddings and head stay fp16"),
    Claim("LoRA rank=64时适配器约0.5GB（FP16）",
          f"{S} 解法 (QLoRA)",
          f"{fmt_count(adapters)} params: {GB(2 * adapters)} in fp16, {GB(4 * adapters)} in fp32",
          verdict="❌ wrong",
          why="rank 64 on all seven projections of 80 layers"),
    Claim("优化器状态仅需约2GB",
          f"{S} 解法 (QLoRA)",
          f"fp32 m + v {GB(8 * adapters)}",
          verdict="❌ wrong",
          why="two fp32 moments per adapter parameter"),
    Claim("4卡通过ZeRO-3分片后每卡约9GB",
          f"{S} 解法 (QLoRA)",
          f"device_map {G(dm.estimate.peak_bytes)}, FSDP-QLoRA {G(fsdp.estimate.peak_bytes)} per GPU",
          verdict="⚠️ partly",
          why="right in substance (it fits, split four ways); low because of fp32 adapters, activations and the dequantized layer"),
    Claim("实际测试中，4×V100 32GB可跑batch size 1-2",
          f"{S} 解法 (QLoRA)",
          "max micro-batch " + ", ".join(f"{k} {v}" for k, v in mmb.items()),
          verdict="⚠️ partly",
          why="more fits at 2,048 tokens"),
    Claim("训练速度约1-2 tokens/s/卡",
          f"{S} 解法 (QLoRA)",
          f"{t_dm.tokens_per_s_per_gpu:.0f} (device_map), {t_fsdp.tokens_per_s_per_gpu:.0f} (FSDP) per card at "
          f"{t_fsdp.hfu:.0%} HFU ({t_fsdp.mfu:.0%} MFU); device_map {real_dm.tokens_per_s_per_gpu:.0f} at a realistic 15% HFU",
          verdict="❌ wrong",
          why=f"about {real_dm.tokens_per_s_per_gpu / seed_tps:.0f}x too low even for device_map at 15% HFU; 1.5 tokens/s per card "
              f"would be {seed_mfu:.1%} MFU. The QLoRA paper (abstract) fine-tunes 65B on one 48 GB GPU, Guanaco in 24 h"),
    Claim("若坚持全参数，需至少8×A100 80GB（共640GB）配合ZeRO-3+TP",
          f"{S} 工程取舍",
          f"min_gpus: {a100_min.count} × A100 80GB",
          verdict="❌ wrong",
          why=f"8 cards leave ZeRO-3 {G(zero_model_state_bytes(P, 3, 8))} of states each"),
    Claim("4×A100 80GB共320GB，仍不足780GB",
          f"{S} 追问 2",
          "plan(4 × A100 80GB): only offload layouts fit",
          verdict="✅ right",
          why=f"the conclusion holds; the need is {GB(states)}"),
    Claim("需进一步用ZeRO-3+TP+PP+activation offloading，将激活值卸载到CPU内存，每卡可降至约70GB",
          f"{S} 追问 2",
          f"any 4-way split keeps ≥ {GB(z3_states)} of states per GPU; TP=2 × PP=2: peak {GB(tp2pp2.peak_bytes)}",
          verdict="❌ wrong",
          why=f"activations are not the problem (full recompute keeps {GB(tp2pp2.breakdown['activations'])}); "
              f"and DeepSpeed refuses it: \"{ds_pipeline}\""),
    Claim("V100的Tensor Core仅支持FP16混合精度",
          f"{S} 追问 3",
          f"bf16: {g.supports_bf16}; fp16 {g.fp16_tflops:g} TFLOP/s",
          verdict="✅ right",
          why="Volta predates bf16 (Ampere)"),
    Claim("QLoRA的4-bit量化使用NormalFloat，对FP16精度不敏感，可规避此问题",
          f"{S} 追问 3",
          "QLoRA computes in the fp16 compute dtype",
          verdict="❌ wrong",
          why="NF4 is a storage format; matmuls and gradients are fp16, so loss scaling is still needed"),
    Claim("跨节点通信（PCIe 3.0 x16约16GB/s）会成为瓶颈",
          f"{S} 标准答 (TP)",
          f"{g.name} host link: {HOST_LINK[g.name][0]}, {g.host_link_bytes_per_s / 1e9:.0f} GB/s one way",
          verdict="⚠️ partly",
          why="16 GB/s is PCIe 3.0 x16, the GPU-to-CPU link inside a server; across nodes traffic goes over the "
              "network (InfiniBand or Ethernet NICs), not PCIe"),
    Claim("全参数训练 vs QLoRA：前者需牺牲模型精度（量化损失）换取可行性，后者保留原模型能力但仅微调少量参数",
          f"{S} 工程取舍",
          f"full: {states // P} B/param at 16-bit weights; QLoRA: 4-bit base ({GB(nf4)})",
          verdict="❌ wrong",
          why="roles swapped: QLoRA quantizes the base (the 4-bit loss); full fine-tuning keeps 16-bit weights"),
    Claim("论文显示4-bit QLoRA在MMLU上仅降0.5%",
          f"{S} 工程取舍",
          "accuracy: not modelled",
          verdict="⚠️ partly",
          why="the QLoRA paper claims NF4 + double quantization preserves 16-bit fine-tuning performance "
              "(Dettmers et al. 2023, abstract); it gives no single 0.5% figure: quote its tables, not a round number"),
    Claim("成本约10倍于4×V100",
          f"{S} 工程取舍",
          f"min_gpus: {a100_min.count} × A100 80GB vs 4 × V100",
          verdict="⚠️ partly",
          why=f"memlib prices no GPU: the seed's 8 cards are 2× the count, memlib's {a100_min.count} are "
              f"{a100_min.count / N:.1f}×, times the price ratio per GPU-hour, which depends on the provider"),
    Claim("显存层面：FP16混合精度下65B模型需约780GB（含优化器），4×V100共128GB，差6倍",
          f"{S} 30 秒",
          f"{GB(states)} vs {GB(N * cap)}: {states / (N * cap):.1f}×",
          verdict="⚠️ partly",
          why="16 B/param against what torch sees"),
]
display(Markdown(fact_check_table(facts)))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Every layout of full fine-tuning on 4 V100s
#
# `memlib.parallel.plan.plan` tries every tp/pp/ZeRO/offload/recompute layout, keeps those `fits()` accepts
# and ranks them by estimated tokens/s; with a host RAM limit and NVMe offload (ZeRO-Infinity) it
# says what a 512 GiB server allows.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
rows = [[p.describe(), G(p.estimate.peak_bytes), f"{p.verdict.margin_gib:+.1f} GiB", G(p.estimate.host_bytes),
         f"{p.tokens_per_s_per_gpu:.0f}"] for p in full_plan.feasible]
display(Markdown(markdown_table(rows, ["feasible layout", "peak per GPU", "margin", "host RAM per GPU",
                                       "tokens/s per GPU (est., 40% HFU)"])))
no_offload = [[f"dp={s['dp']} tp={s['tp']} pp={s['pp']} ZeRO-{s['zero_stage']}", why]
              for s, why in full_plan.infeasible if s["offload"] == "none" and s["recompute"] == "full"]
display(Markdown(markdown_table(no_offload, ["without offload, full recompute", "why it fails"])))
display(Markdown(
    f"With NVMe offload (step 4) and a 512 GiB server, {len(nvme_plan.feasible)} layouts fit; the best is "
    f"{nv.describe()}: {G(nv.estimate.nvme_bytes)} of NVMe and {G(nv.estimate.host_bytes)} of RAM per GPU, about "
    f"{nv.tokens_per_s_per_gpu:.0f} tokens/s per GPU."))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The DeepSpeed config of the offload layout

# %% tags=["nbval-check-output"]
print(json.dumps(to_deepspeed_config(best), indent=2))   # memlib.parallel.plan.to_deepspeed_config

