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

# %% [markdown] slideshow={"slide_type": "slide"}
# # 01 · Can 4× V100 32GB train Vicuna-65B? · 能否用 4×V100 32G 训练 Vicuna-65B
#
# **What you will be able to answer:** how many bytes full fine-tuning of a 65B model needs
# per GPU under DDP, ZeRO-1/2/3, tensor and pipeline parallelism and offload; which of those
# fit four 32 GB V100s (only offload does, and what it costs in host RAM and speed); and
# whether QLoRA rescues the setup (not on a 32 GB card).
#
# Every number below is computed by `memlib` when the notebook runs; none is typed.

# %% tags=["hide-input"]
# %matplotlib inline
import json

import matplotlib.pyplot as plt
import numpy as np
from IPython.display import Markdown, display

import memlib
from memlib import estimate_inference, estimate_training, fits, fmt_bytes, get_gpu, get_model, gib, step_time
from memlib.explain import markdown_table
from memlib.fit import usable_bytes
from memlib.lora import NF4_BITS_PER_PARAM, lora_params
from memlib.plan import max_micro_batch, min_gpus, plan, to_deepspeed_config
from memlib.playground import Playground
from memlib.timing import INTERNODE_BYTES_PER_S
from memlib.units import GiB, fmt_count
from memlib.viz import breakdown_bars, sweep
from memlib.zero import partitioned, zero_model_state_bytes

MODEL, GPU, N = "vicuna-65b", "v100-32gb", 4
PREC = "fp16-mixed"          # V100 tensor cores have no bf16 (see step 1)
SEQ, MB, ACCUM = 2048, 1, 8  # the seed's sequence length and batch; 8 micro-batches per step
# the QLoRA paper's recipe (Dettmers et al. 2023, App. B; artidoro/qlora qlora.py): r=64 on all linear
# layers, dropout 0.05 for 65B, adapters cast to the 16-bit compute dtype, paged 32-bit AdamW (a fused
# kernel: no foreach copy)
LORA = dict(finetune="qlora", lora_rank=64, lora_targets="all-linear", lora_dropout=0.05, optimizer_impl="fused")


def G(n_bytes):
    """GiB, labelled (what torch and nvidia-smi show)."""
    return f"{gib(n_bytes):,.1f} GiB"


def GB(n_bytes):
    """GB (1e9), labelled (what the seed's arithmetic uses)."""
    return f"{n_bytes / 1e9:,.1f} GB"


# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. The question · 问题
#
# > **能否用4 * v100 32G训练vicuna 65b**
#
# *Can you train (fully fine-tune) Vicuna-65B on four V100 32GB GPUs?*
#
# Vicuna-65B is a fine-tune of LLaMA-65B with the same architecture, so "training" it means
# instruction fine-tuning all of LLaMA-65B's weights (or, as the circulating answer proposes,
# only LoRA adapters on a 4-bit base: QLoRA).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. What the interviewer is probing · 考察意图
#
# - **Model states, not weights.** Weights are the smallest of the per-parameter costs of
#   mixed-precision Adam; the interviewer wants gradients, fp32 master weights and both Adam
#   moments counted, and the total compared with the cluster.
# - **What each parallelism shards.** ZeRO-1/2/3 shard optimizer states, then gradients, then
#   parameters; tensor and pipeline parallelism split the model but keep every byte per
#   parameter; none of them shards the activations of a data-parallel micro-batch.
# - **The escape hatches and their price.** Offload (ZeRO-Offload / ZeRO-Infinity) moves states
#   to host RAM or NVMe and pays in PCIe time; QLoRA changes the task (adapters on a frozen 4-bit
#   base) and has its own floor: the 4-bit weights must fit somewhere.
# - **Hardware literacy.** V100 has no bf16, so fp16 with loss scaling; NVLink vs PCIe; GB vs GiB.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. The answer, derived step by step · 推导
#
# ### Step 1: the model and the GPU
# `memlib.get_model` counts Vicuna-65B's parameters tensor by tensor; `memlib.get_gpu` gives the
# V100's capacity as NVIDIA means it (binary: 32 GiB) and what torch reports.

# %%
# NBVAL_CHECK_OUTPUT
m = get_model(MODEL)   # memlib.get_model
g = get_gpu(GPU)       # memlib.get_gpu
P = m.num_params
cap = usable_bytes(g)  # memlib.fit.usable_bytes: what torch.cuda reports as total
display(Markdown(
    f"**{m.name}** has **{P:,} parameters** ({fmt_count(P)}) in **{m.num_layers} decoder layers** "
    f"(hidden {m.hidden_size:,}, {m.num_heads} heads, MLP {m.intermediate_size:,}). "
    f"A **{g.display_name}** has {g.memory_gib:.0f} GiB = {g.memory_gb:.2f} GB; torch sees "
    f"{G(cap)}. Four of them hold {fmt_bytes(N * g.memory_bytes)}. "
    f"bf16 tensor cores: **{'yes' if g.supports_bf16 else 'no'}** (so we train in `{PREC}`, "
    f"{g.fp16_tflops:g} TFLOP/s dense fp16). GPU link: {g.interconnect} "
    f"{g.interconnect_gb_per_s:,.0f} GB/s per GPU (both directions together); host link: "
    f"{memlib.gpus.HOST_LINK[g.name][0]} {g.host_link_bytes_per_s / 1e9:.0f} GB/s each way."))
print(m.describe())
print(g.describe())

# %% [markdown]
# ### Step 2: model states of full fine-tuning: 16 bytes per parameter
# Mixed-precision AdamW costs the same bytes per parameter in either common layout: PyTorch AMP
# (fp32 weights, fp32 gradients, fp32 Adam m and v) or DeepSpeed/ZeRO (fp16 weights, fp16
# gradients, and K bytes of fp32 master copy, m and v). `memlib.estimate_training` gives the
# first (`counts`), `memlib.zero.zero_model_state_bytes` the second; `k=8` reproduces the seed's
# sum, which forgot the fp32 master copy.

# %%
# NBVAL_CHECK_OUTPUT
amp = estimate_training(m, seq_len=SEQ, micro_batch=MB, precision=PREC)  # one full replica (DDP)
ds = estimate_training(m, seq_len=SEQ, micro_batch=MB, precision=PREC, zero_stage=1, dp=N)  # DeepSpeed layout
states = zero_model_state_bytes(P, stage=0, dp=1)             # Rajbhandari et al. 2020: (2 + 2 + 12) psi
seed_sum = zero_model_state_bytes(P, stage=0, dp=1, k=8)      # the seed: fp16 w + fp16 g + fp32 m, v only
rows = [
    ["AMP (PyTorch)", "fp32 weights", GB(amp.counts["param_bytes"]), f"{amp.counts['param_bytes'] // P} B"],
    ["AMP (PyTorch)", "fp32 gradients", GB(amp.counts["grad_bytes"]), f"{amp.counts['grad_bytes'] // P} B"],
    ["AMP (PyTorch)", "AdamW m + v (fp32)", GB(amp.counts["optimizer_bytes"]), f"{amp.counts['optimizer_bytes'] // P} B"],
    ["ZeRO (DeepSpeed)", "fp16 weights", GB(ds.counts["param_bytes_unsharded"]),
     f"{ds.counts['param_bytes_unsharded'] // P} B"],
    ["ZeRO (DeepSpeed)", "fp16 gradients", GB(ds.counts["grad_bytes_unsharded"]),
     f"{ds.counts['grad_bytes_unsharded'] // P} B"],
    ["ZeRO (DeepSpeed)", "fp32 master + m + v", GB(ds.counts["optimizer_bytes_unsharded"]),
     f"{ds.counts['optimizer_bytes_unsharded'] // P} B"],
]
display(Markdown(markdown_table(rows, ["layout", "state", "size", "per parameter"])))
display(Markdown(
    f"Both layouts total **{fmt_bytes(states)}** of model states ({states // P} bytes per parameter; "
    f"AMP: {fmt_bytes(amp.model_state_bytes)}). The seed's {GB(seed_sum)} is this sum without the "
    f"{GB(states - seed_sum)} fp32 master copy. That is before a single activation."))
print(f"model states: {fmt_bytes(states)} ({states // P} B/param); seed's sum without master: {fmt_bytes(seed_sum)}")

# %% [markdown]
# ### Step 3: against the whole cluster
# Even if the states could be spread perfectly over all four GPUs, they are several times the
# memory the four cards have.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
# NBVAL_CHECK_OUTPUT
cluster = N * cap  # what torch can see on 4 GPUs
display(Markdown(
    f"{fmt_bytes(states)} of states against {fmt_bytes(cluster)} visible on {N} V100s: "
    f"**{states / cluster:.1f}×** too much (the seed's \"差6倍\" used {GB(seed_sum)} and 128 GB). "
    f"No sharding scheme alone can close that; only moving states off the GPUs (offload) or "
    f"training far fewer parameters (LoRA/QLoRA) can."))
print(f"states / visible memory of {N} GPUs = {states / cluster:.2f}")

# %% [markdown]
# ### Step 4: ZeRO-1, -2, -3 over 4 GPUs
# `memlib.zero.zero_model_state_bytes(psi, stage, dp)` is the ZeRO paper's per-GPU formula;
# `memlib.estimate_training(..., zero_stage=s, dp=4)` adds the activations of the seed's
# micro-batch, the gathered layer, the step's temporaries, and finds the peak; `memlib.fits`
# adds the CUDA context and allocator headroom.

# %%
# NBVAL_CHECK_OUTPUT
zero_est = {s: estimate_training(m, seq_len=SEQ, micro_batch=MB, precision=PREC, zero_stage=s, dp=N)
            for s in range(4)}
z3_rc = estimate_training(m, seq_len=SEQ, micro_batch=MB, precision=PREC, zero_stage=3, dp=N, recompute="full")
rows = []
for s, e in zero_est.items():
    v = fits(e, g)
    rows.append([f"ZeRO-{s}" if s else "DDP (no ZeRO)", GB(zero_model_state_bytes(P, s, N)), G(e.peak_bytes),
                 e.phase, f"{v.margin_gib:+,.1f} GiB"])
v = fits(z3_rc, g)
rows.append(["ZeRO-3 + full recompute", GB(zero_model_state_bytes(P, 3, N)), G(z3_rc.peak_bytes), z3_rc.phase,
             f"{v.margin_gib:+,.1f} GiB"])
display(Markdown(markdown_table(rows, ["layout on 4 GPUs", "model states per GPU", "peak per GPU",
                                       "peak in", "margin on V100 32GB"])))
z3_states = zero_model_state_bytes(P, 3, N)
display(Markdown(
    f"ZeRO-3 leaves each GPU **{fmt_bytes(z3_states)}** of model states (16 bytes × psi / 4), "
    f"{gib(z3_states) / gib(cap):.1f}× a V100's {G(cap)}: it is short by about "
    f"**{G(z3_states - cap)} per GPU**, not \"about 2 GB\". ZeRO-2 holds 2 psi of fp16 weights "
    f"plus 14 psi / 4: {GB(zero_model_state_bytes(P, 2, N))}; sharding only the optimizer (that is "
    f"ZeRO-1, which the seed calls ZeRO-2) leaves {GB(zero_model_state_bytes(P, 1, N))}."))
print("\n".join(f"{r[0]}: states {r[1]}, peak {r[2]}, margin {r[4]}" for r in rows))

# %% [markdown]
# ### Step 5: activations of one micro-batch
# The seed guesses 1-2 GB per layer and "about 40 layers". memlib's ledger of the tensors a
# LLaMA layer saves for backward (fp16 autocast, sdpa attention, 2,048 tokens):

# %% jupyter={"source_hidden": true} tags=["hide-input"]
# NBVAL_CHECK_OUTPUT
layer_act = amp.counts["layer_activation_bytes"]   # one decoder layer, tensor by tensor
fwd = next(mo for mo in amp.moments if mo.name == "forward")
all_act = fwd.parts["activations"]                 # every layer's saved tensors at the loss
display(Markdown(
    f"One layer saves **{fmt_bytes(layer_act)}** for seq {SEQ:,} × batch {MB}; the {m.num_layers} layers "
    f"together hold **{fmt_bytes(all_act)}** at the end of the forward. Full recomputation keeps only "
    f"each layer's input and brings the ZeRO-3 peak from {G(zero_est[3].peak_bytes)} to "
    f"{G(z3_rc.peak_bytes)}: the activations were never the problem; the states are."))
print(f"per layer {fmt_bytes(layer_act)}; all {m.num_layers} layers {fmt_bytes(all_act)}")

# %% [markdown]
# ### Step 6: tensor parallel 4, pipeline parallel 4
# Model parallelism splits the weights, but each GPU still keeps 16 bytes for each parameter it
# owns. memlib's `tp=` follows Megatron's splits (whole heads per GPU); `pp=` uses 1F1B with
# `ACCUM` micro-batches per step (memlib models each stage as PyTorch AMP, which keeps a 16-bit copy of
# the stage's weights for every micro-batch in flight). `memlib.step_time` gives the
# communication and the bubble.

# %%
# NBVAL_CHECK_OUTPUT
tp4 = estimate_training(m, seq_len=SEQ, micro_batch=MB, precision=PREC, tp=N, grad_accum=ACCUM)
pp4 = estimate_training(m, seq_len=SEQ, micro_batch=MB, precision=PREC, pp=N, grad_accum=ACCUM)
t_tp, t_pp = step_time(tp4, g), step_time(pp4, g)
display(Markdown(
    f"- **TP=4**: {m.num_heads} heads → {m.num_heads // N} per GPU. Per GPU: model states "
    f"{fmt_bytes(tp4.model_state_bytes)}, peak **{G(tp4.peak_bytes)}** "
    f"(margin {fits(tp4, g).margin_gib:+,.0f} GiB). The per-layer all-reduces over NVLink take "
    f"{t_tp.tp_comm_s:.2f} s of a {t_tp.step_s:.1f} s step ({t_tp.tp_comm_s / t_tp.step_s:.1%}): inside one "
    f"V100 server NVLink is not what stops TP; memory is.\n"
    f"- **PP=4**: {pp4.notes[-1]}. Per GPU of the first stage: model states "
    f"{fmt_bytes(pp4.model_state_bytes)}, peak **{G(pp4.peak_bytes)}** "
    f"(margin {fits(pp4, g).margin_gib:+,.0f} GiB). Bubble per `step_time`: {t_pp.bubble_fraction:.1%}."))
print(f"TP=4 peak {G(tp4.peak_bytes)}; PP=4 peak {G(pp4.peak_bytes)}, states/GPU {fmt_bytes(pp4.model_state_bytes)}, "
      f"bubble {t_pp.bubble_fraction:.3f}")

# %% [markdown]
# ### Step 7: what does fit: offload (ZeRO-Offload / ZeRO-Infinity)
# `memlib.plan.plan` tries every tp/pp/ZeRO/offload/recompute layout on 4 V100s, keeps the ones
# `fits()` accepts and ranks them by estimated tokens/s. We recommend the fastest one that
# leaves at least 2 GiB of margin (fragmentation, the seed's own pitfall 1).

# %%
# NBVAL_CHECK_OUTPUT
r = plan(MODEL, GPU, N, seq_len=SEQ, micro_batch=MB, grad_accum=ACCUM)
rows = [[p.describe(), G(p.estimate.peak_bytes), f"{p.verdict.margin_gib:+.1f} GiB", G(p.estimate.host_bytes),
         f"{p.tokens_per_s_per_gpu:.0f}"] for p in r.feasible]
display(Markdown(markdown_table(rows, ["feasible layout", "peak per GPU", "margin", "host RAM per GPU",
                                       "tokens/s per GPU (est.)"])))
no_offload = [s for s, _ in r.infeasible if s["offload"] == "none"]
best = next(p for p in r.feasible if p.verdict.margin_gib >= 2)
display(Markdown(
    f"{len(r.feasible)} of {len(r.feasible) + len(r.infeasible)} layouts fit, **all of them offload** "
    f"(all {len(no_offload)} layouts without offload fail). Recommended: **{best.describe()}**: "
    f"{G(best.estimate.peak_bytes)} per GPU, but **{G(best.estimate.host_bytes)} of host RAM per GPU "
    f"process**, {G(N * best.estimate.host_bytes)} for the server."))
print(f"feasible {len(r.feasible)}, infeasible {len(r.infeasible)}; best: {best.describe()}; "
      f"host RAM/GPU {G(best.estimate.host_bytes)}")

# %% [markdown]
# Most V100 servers (a DGX-1 included) have 512 GiB of RAM or less. `plan(..., host_bytes_per_node=)`
# checks that; `offload_device="nvme"` moves the states to NVMe (ZeRO-Infinity) and keeps only
# staging buffers and the fp32 gradient partition in RAM.

# %%
# NBVAL_CHECK_OUTPUT
HOST_RAM = 512 * GiB  # assumption: a 512 GiB dual-socket V100 server
r_ram = plan(MODEL, GPU, N, seq_len=SEQ, micro_batch=MB, grad_accum=ACCUM, host_bytes_per_node=HOST_RAM)
r_nvme = plan(MODEL, GPU, N, seq_len=SEQ, micro_batch=MB, grad_accum=ACCUM, host_bytes_per_node=HOST_RAM,
              offload_device="nvme", recomputes=("full",))
nv = r_nvme.best
display(Markdown(
    f"With {G(HOST_RAM)} of RAM, CPU offload leaves **{len(r_ram.feasible)}** feasible layouts "
    f"(e.g. \"{r_ram.infeasible[-1][1]}\"). With NVMe offload: {len(r_nvme.feasible)} fit; the best, "
    f"{nv.describe()}, needs {G(nv.estimate.host_bytes)} of RAM and {G(nv.estimate.nvme_bytes)} of NVMe "
    f"per GPU, at about {nv.tokens_per_s_per_gpu:.0f} tokens/s per GPU."))
print(f"CPU offload with 512 GiB RAM: {len(r_ram.feasible)} feasible; NVMe: {len(r_nvme.feasible)} feasible, "
      f"{nv.tokens_per_s_per_gpu:.0f} tokens/s/GPU")

# %% [markdown]
# ### Step 8: how fast is it?
# `memlib.step_time` times the recommended plan at memlib's default MFU of the V100's fp16 peak: compute,
# data-parallel traffic, PCIe offload traffic and the CPU Adam step.

# %%
# NBVAL_CHECK_OUTPUT
t = best.time
a100 = min_gpus(MODEL, "a100-80gb")  # fewest A100 80GB without offload (step 8 and follow-ups)
display(Markdown(
    f"One step of {t.tokens_per_step:,} tokens takes about **{t.step_s:.0f} s**: compute {t.compute_s:.0f} s, "
    f"offload over PCIe {t.offload_s:.1f} s, CPU Adam {t.cpu_optimizer_s:.1f} s, exposed DP traffic "
    f"{t.dp_exposed_s:.1f} s. That is **{t.tokens_per_s_per_gpu:.0f} tokens/s per V100**, "
    f"{t.tokens_per_s_per_gpu * N:.0f} for the four. For comparison, the smallest A100 80GB cluster "
    f"that needs no offload ({a100.count} GPUs, {a100.best.describe()}) runs at about "
    f"{a100.best.tokens_per_s_per_gpu:.0f} tokens/s per GPU. The offload estimate is optimistic: "
    f"ZeRO-Infinity fetches the parameters over PCIe for every micro-batch, not once per step."))
print(f"step {t.step_s:.1f} s, {t.tokens_per_s_per_gpu:.1f} tokens/s/GPU; A100 80GB min count {a100.count}")

# %% [markdown]
# ### Step 9: QLoRA: the seed's way out
# QLoRA freezes the base in NF4 (4-bit NormalFloat with double quantization) and trains LoRA
# adapters. memlib models QLoRA on one GPU, i.e. **every V100 would hold a whole replica** (data
# parallel). `memlib.lora.lora_params` counts the adapters (the seed's rank 64, on all linear layers: the
# QLoRA paper's recipe); `memlib.estimate_inference(weights="nf4")` sizes the 4-bit model.

# %%
# NBVAL_CHECK_OUTPUT
adapters = lora_params(m, 64, "all-linear")
nf4_model = estimate_inference(m, batch=1, context_len=1, weights="nf4").breakdown["weights"]
q = {rc: estimate_training(m, seq_len=SEQ, micro_batch=MB, precision=PREC, recompute=rc, adapter_dtype="fp16", **LORA)
     for rc in ("none", "full")}
q_short = estimate_training(m, seq_len=256, micro_batch=1, precision=PREC, recompute="full", adapter_dtype="fp16",
                            **LORA)
q16 = estimate_training(m, seq_len=SEQ, micro_batch=MB, precision="fp16", recompute="full", adapter_dtype="fp16",
                        **LORA)
qf = q["full"]
rows = [[f"seq {e.setup.seq_len}, recompute {e.setup.recompute}, {e.setup.precision}", G(e.peak_bytes),
         G(e.breakdown["parameters"]), f"{fits(e, g).margin_gib:+.1f} GiB"]
        for e in (q["none"], qf, q_short, q16)]
display(Markdown(markdown_table(rows, ["QLoRA on one V100 32GB", "peak", "of which parameters", "margin"])))
a6000 = fits(qf, "rtx-a6000")
display(Markdown(
    f"Adapters: **{adapters:,}** parameters ({fmt_count(adapters)}), i.e. {GB(q16.counts['grad_bytes'])} in fp16 "
    f"and {GB(qf.counts['grad_bytes'])} in fp32 (peft's default for adapters), with {GB(qf.counts['optimizer_bytes'])} "
    f"of AdamW states. The NF4 model alone is **{fmt_bytes(nf4_model)}** ({NF4_BITS_PER_PARAM:.3f} bits per projection "
    f"weight; embeddings and head stay 16-bit): already more than the {G(cap)} a V100 offers, so **QLoRA-65B does "
    f"not fit one V100 32GB at any sequence length** (margin at seq 256: {fits(q_short, g).margin_gib:+.1f} GiB). "
    f"It does fit a 48 GB card with full recompute (RTX A6000 margin {a6000.margin_gib:+.1f} GiB), which is the "
    f"QLoRA paper's claim."))
print(f"adapters {adapters:,}; NF4 model {fmt_bytes(nf4_model)}; QLoRA peak (recompute full) {G(qf.peak_bytes)}; "
      f"fits V100: {fits(qf, g).fits}")

# %% [markdown]
# The seed then shards QLoRA with ZeRO-3 over the 4 cards. memlib does not model a sharded
# 4-bit base end to end; sharding the QLoRA states as ZeRO-3 would (`memlib.zero.partitioned`)
# bounds what it could save. `memlib.step_time` on one replica checks the seed's speed.

# %%
# NBVAL_CHECK_OUTPUT
q_sharded = sum(partitioned(qf.counts[k], state, 3, N) for k, state in
                (("param_bytes", "parameters"), ("grad_bytes", "gradients"), ("optimizer_bytes", "optimizer")))
tq = {mfu: step_time(qf, g, mfu=mfu) for mfu in (0.4, 0.1)}
display(Markdown(
    f"QLoRA's model states are {fmt_bytes(qf.model_state_bytes)} in total; a quarter of each is "
    f"**{fmt_bytes(q_sharded)} per GPU** before activations (the seed says \"about 9 GB\" from a 35 GB total). "
    f"Sharding a 4-bit base needs FSDP/ZeRO-3 support for quantized storage (2024-era bitsandbytes/peft), "
    f"or the 4-bit layers split over the cards (`device_map=\"auto\"`, one GPU busy at a time). "
    f"Speed: one replica at 40% MFU would do **{tq[0.4].tokens_per_s_per_gpu:.0f} tokens/s**, and "
    f"{tq[0.1].tokens_per_s_per_gpu:.0f} tokens/s even at 10% MFU: the seed's \"1-2 tokens/s/卡\" is far too low "
    f"as an estimate of compute."))
print(f"QLoRA states sharded /{N}: {fmt_bytes(q_sharded)}; tokens/s at MFU 0.4: "
      f"{tq[0.4].tokens_per_s_per_gpu:.0f}, at 0.1: {tq[0.1].tokens_per_s_per_gpu:.0f}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Charts · 图
#
# **Per-GPU peak of each strategy on 4 GPUs** (`memlib.viz.breakdown_bars`). Look at the dashed
# line: only the offloaded ZeRO-3 bar gets under it; the QLoRA replica misses it by its 4-bit
# weights alone, and the rest miss it by hundreds of GiB of model states.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
strategies = {"DDP": zero_est[0], "ZeRO-1": zero_est[1], "ZeRO-2": zero_est[2], "ZeRO-3": zero_est[3],
              "TP=4": tp4, "PP=4": pp4, "ZeRO-3\n+offload": best.estimate, "QLoRA\n(1 GPU)": qf}
fig, ax = plt.subplots(figsize=(8, 3.8))
breakdown_bars(strategies, gpu=GPU, ax=ax, title=f"{MODEL}, seq {SEQ}, micro-batch {MB}, {PREC}: per-GPU peak on 4 GPUs")
ax.margins(y=0.12)
plt.show()

# %% [markdown]
# **The candidates near the line**: the four offload layouts `plan()` accepts and the QLoRA replica
# (`fp16-mixed` and pure `fp16`), all with the same breakdown colours. Look at the offload layout without
# recompute: its activations alone almost reach the line; and at the QLoRA bars: their parameters
# (the 4-bit base plus adapters) alone are at the line.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
near = {f"dp{p.settings['dp']} tp{p.settings['tp']}\nrecompute\n{p.settings['recompute']}": p.estimate
        for p in r.feasible}
near.update({"QLoRA\nfp16-mixed": qf, "QLoRA\nfp16": q16})
fig, ax = plt.subplots(figsize=(8, 3.4))
breakdown_bars(near, gpu=GPU, ax=ax, title="ZeRO-3 + offload layouts and QLoRA replicas on one V100 32GB")
ax.margins(y=0.12)
plt.show()

# %% [markdown]
# **ZeRO-3 memory per GPU against the number of V100s** (`memlib.viz.sweep`, counts from 64 down
# to 4). Plotted is what `fits` requires: the peak plus the CUDA context and allocator headroom, so
# the dotted line marks the largest count that still does not fit. Look at how many GPUs pure
# sharding takes: many more than four, and without recompute it never fits, because one
# micro-batch's activations alone exceed a V100.

# %%
counts = list(range(64, 3, -4))
sweep_est = {label: [estimate_training(m, seq_len=SEQ, micro_batch=MB, precision=PREC, zero_stage=3, dp=n,
                                       recompute=rc) for n in counts]
             for label, rc in (("ZeRO-3", "none"), ("ZeRO-3 + full recompute", "full"))}
fig, ax = plt.subplots(figsize=(7, 3.6))
sweep(counts, {label: [fits(e, g).required_bytes for e in ests] for label, ests in sweep_est.items()}, gpu=GPU,
      xlabel="number of V100 32GB (data parallel)", ax=ax, title=f"{MODEL} full fine-tuning, seq {SEQ}, micro-batch {MB}")
plt.show()

# %%
# NBVAL_CHECK_OUTPUT
first_fit = {label: min((n for n, e in zip(counts, ests) if fits(e, g).fits), default=None)
             for label, ests in sweep_est.items()}
v100_min = min_gpus(MODEL, GPU)  # any tp/pp/ZeRO layout, no offload
no_rc = first_fit["ZeRO-3"]
display(Markdown(
    f"Pure ZeRO-3 without recompute fits {f'from **{no_rc}** V100s' if no_rc else f'on **none** of up to {max(counts)} V100s'} "
    f"(its activations at the peak on {counts[0]} GPUs: {G(sweep_est['ZeRO-3'][0].breakdown['activations'])} per GPU, "
    f"never sharded); with full "
    f"recompute it fits from **{first_fit['ZeRO-3 + full recompute']} V100s** (multiples of 4 tried, checked with `fits`). "
    f"`memlib.plan.min_gpus` over every layout without offload: **{v100_min.count} V100 32GB** "
    f"({v100_min.best.describe()})."))
print(first_fit, v100_min.count)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. Playground · 动手试
#
# Try: switch ZeRO to "ZeRO-3 + offload all" and recompute to "full" (it fits; see the host RAM);
# then drag the GPU count until plain ZeRO-3 fits; then pick QLoRA and change the GPU to an
# A6000 or A100 80GB.

# %%
Playground(model=MODEL, gpu=GPU, count=N, precision=PREC)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Fact-check of the circulating answer · 纠错
#
# Each claim quoted as the seed writes it, memlib's figure computed above, and a verdict
# (✅ right · ⚠️ partly · ❌ wrong).

# %% jupyter={"source_hidden": true} tags=["hide-input"]
t_tp_share = t_tp.tp_comm_s / t_tp.step_s
facts = [
    ["模型参数：65B × 2 bytes（FP16）= 130GB", f"{GB(ds.counts['param_bytes_unsharded'])} of fp16 weights", "✅",
     "right for the 16-bit working copy"],
    ["梯度：与参数同大小，130GB（混合精度下梯度为FP16）", f"{GB(ds.counts['grad_bytes_unsharded'])} (DeepSpeed); "
     f"PyTorch AMP keeps fp32 gradients: {GB(amp.counts['grad_bytes'])}", "✅", "right for DeepSpeed's fp16 layout"],
    ["优化器状态：AdamW需存储momentum和variance，均为FP32（4 bytes），即65B × 4 × 2 = 520GB",
     f"m + v {GB(amp.counts['optimizer_bytes'])}; with the fp32 master copy {GB(ds.counts['optimizer_bytes_unsharded'])}",
     "⚠️", "m and v are right, but mixed precision also keeps an fp32 master copy of the weights (4 B/param)"],
    ["总需求：130（参数）+ 130（梯度）+ 520（优化器）= 780GB", f"{GB(states)} ({states // P} B/param)", "❌",
     f"the missing master copy is {GB(states - seed_sum)}"],
    ["激活值：以序列长度2048、batch size 1为例，每层约1-2GB，65B约40层，额外40-80GB",
     f"{GB(layer_act)} per layer × {m.num_layers} layers = {GB(all_act)}", "⚠️",
     "per layer is under 1 GB and there are 80 layers; the total lands in the range by two errors cancelling"],
    ["4×V100 32GB（共128GB）", f"128 GiB = {GB(N * g.memory_bytes)}; torch sees {G(cap)} per card", "✅",
     "\"32GB\" on a V100 is binary (GiB)"],
    ["即使使用ZeRO-3也差约2GB", f"ZeRO-3 states {G(z3_states)} per GPU vs {G(cap)}", "❌",
     f"short by about {G(z3_states - cap)} per GPU, not 2 GB; the seed contradicts its own 195 GB below"],
    ["参数130/4=32.5GB + 梯度130/4=32.5GB + 优化器520/4=130GB = 195GB",
     f"states {GB(z3_states)}; peak with activations {G(zero_est[3].peak_bytes)}", "❌",
     f"each GPU keeps {states // P} B/param ÷ {N} (the seed used 12 B/param); activations are not sharded"],
    ["若仅分片优化器状态（ZeRO-2），每卡需130+130+130=390GB",
     f"optimizer only = ZeRO-1: {GB(zero_model_state_bytes(P, 1, N))}; ZeRO-2: {GB(zero_model_state_bytes(P, 2, N))}",
     "❌", "ZeRO-2 also shards gradients; both figures omit the master copy"],
    ["65B的hidden size（8192）可被4整除…每卡仍需存储完整参数分片+激活值，显存仍不足",
     f"hidden {m.hidden_size}, {m.num_heads} heads → {m.num_heads // N} per GPU; TP=4 peak {G(tp4.peak_bytes)}",
     "✅", "valid split, still 16 B per owned parameter"],
    ["V100 NVLink带宽仅300GB/s", f"{g.interconnect} {g.interconnect_gb_per_s:.0f} GB/s per GPU, both directions "
     f"({g.interconnect_bytes_per_s_per_direction / 1e9:.0f} each way)", "⚠️",
     f"figure right; TP=4 all-reduces are only {t_tp_share:.1%} of the step, so NVLink is not the blocker"],
    ["跨节点通信（PCIe 3.0 x16约16GB/s）", f"{memlib.gpus.HOST_LINK[g.name][0]}: {g.host_link_bytes_per_s / 1e9:.0f} GB/s "
     f"each way (GPU↔CPU)", "⚠️", f"16 GB/s is right for PCIe 3.0 x16, but that is the host link; between nodes "
     f"it is InfiniBand/Ethernet (memlib assumes {INTERNODE_BYTES_PER_S / 1e9:.0f} GB/s)"],
    ["每卡负责约16层（65B约80层）", f"{m.num_layers} layers; {pp4.notes[-1].split('; ')[1]}", "⚠️", f"{m.num_layers} layers is right; "
     f"4 stages take {m.num_layers // N} each, not 16"],
    ["每卡参数：130/4=32.5GB，加上梯度/优化器（若用ZeRO-1），每卡约97.5GB",
     f"stage states {GB(pp4.model_state_bytes)}; peak {G(pp4.peak_bytes)}", "❌",
     "16 B per stage parameter; ZeRO-1 needs data parallelism, and 4 GPUs in 4 stages leave dp = 1"],
    ["PP存在气泡（bubble）问题，效率低", f"bubble {t_pp.bubble_fraction:.1%} with {ACCUM} micro-batches", "✅",
     "(p-1)/(m+p-1); more micro-batches shrink it"],
    ["V100 32GB实际可用约31GB", f"torch sees {G(cap)}; minus a {G(fits(amp, g).cuda_context_bytes)} CUDA context",
     "✅", "about 31 GiB usable"],
    ["参数显存降至65B × 0.5 bytes = 32.5GB", f"NF4 model {GB(nf4_model)}", "⚠️",
     f"NF4 is {NF4_BITS_PER_PARAM:.3f} bits, embeddings and head stay 16-bit"],
    ["LoRA rank=64时适配器约0.5GB（FP16）", f"{fmt_count(adapters)} params: {GB(q16.counts['grad_bytes'])} fp16, "
     f"{GB(qf.counts['grad_bytes'])} fp32", "❌", "rank 64 on all 7 projections of 80 layers"],
    ["优化器状态仅需约2GB", f"{GB(qf.counts['optimizer_bytes'])}", "❌", "fp32 m and v for every adapter parameter"],
    ["总显存约35GB", f"QLoRA peak {G(qf.peak_bytes)} (full recompute), {G(q['none'].peak_bytes)} without", "❌",
     "states alone exceed a V100; it needs a 48 GB card"],
    ["4卡通过ZeRO-3分片后每卡约9GB", f"states / 4 = {GB(q_sharded)} + activations; memlib models QLoRA per GPU: "
     f"replica does not fit", "⚠️", "needs FSDP/ZeRO-3 with 4-bit storage support; the order of magnitude holds"],
    ["训练速度约1-2 tokens/s/卡", f"{tq[0.4].tokens_per_s_per_gpu:.0f} tokens/s at 40% MFU, "
     f"{tq[0.1].tokens_per_s_per_gpu:.0f} at 10%", "❌", "the compute of one replica, step_time"],
    ["若坚持全参数，需至少8×A100 80GB（共640GB）", f"min_gpus: {a100.count} × A100 80GB ({a100.best.describe()})", "❌",
     f"8 cards give ZeRO-3 {G(zero_model_state_bytes(P, 3, 8))} of states per GPU"],
    ["4×A100 80GB共320GB，仍不足780GB", f"plan(4 × A100 80GB): only offload layouts fit", "✅",
     f"right conclusion; the need is {GB(states)}"],
    ["V100的Tensor Core仅支持FP16混合精度", f"bf16 tensor cores: {g.supports_bf16}; fp16 {g.fp16_tflops:g} TFLOP/s", "✅",
     "Volta predates bf16 (Ampere)"],
    ["显存层面：…差6倍", f"{states / cluster:.1f}×", "⚠️", "the ratio with 16 B/param against what torch sees"],
]
display(Markdown(markdown_table(facts, ["claim (seed)", "memlib", "verdict", "why"])))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. The 30-second answer · 30 秒回答

# %% jupyter={"source_hidden": true} tags=["hide-input"]
z3_best = best.estimate
display(Markdown(
    f"**English.** No, not as plain full fine-tuning. Mixed-precision AdamW costs {states // P} bytes per "
    f"parameter: {GB(states)} of model states for {fmt_count(P)} parameters, {states / cluster:.1f}× the "
    f"{G(cluster)} four V100s expose. ZeRO-3 still leaves {GB(z3_states)} per GPU; TP=4 or PP=4 leave "
    f"{G(tp4.peak_bytes)} and {G(pp4.peak_bytes)}. The only layouts that fit offload the states: "
    f"{best.describe()} peaks at {G(z3_best.peak_bytes)} per GPU but needs {G(N * z3_best.host_bytes)} "
    f"of host RAM (or NVMe) and runs at roughly {best.tokens_per_s_per_gpu:.0f} tokens/s per GPU at best. "
    f"QLoRA does not rescue a 32 GB card either: the NF4 model alone is {GB(nf4_model)}. Full fine-tuning "
    f"without offload needs {a100.count} A100 80GB or {v100_min.count} V100 32GB; QLoRA needs a 48 GB card."))
display(Markdown(
    f"**中文。** 不能直接全参数训练。混合精度 AdamW 每个参数 {states // P} 字节：{fmt_count(P)} 参数的模型状态共 "
    f"{GB(states)}，是 4 张 V100 可用显存（{G(cluster)}）的 {states / cluster:.1f} 倍。ZeRO-3 每卡仍需 "
    f"{GB(z3_states)}；TP=4 / PP=4 每卡峰值 {G(tp4.peak_bytes)} / {G(pp4.peak_bytes)}。能放下的只有卸载方案："
    f"ZeRO-3 + 参数与优化器卸载 + 重计算，每卡峰值 {G(z3_best.peak_bytes)}，但要 {G(N * z3_best.host_bytes)} 内存"
    f"（或 NVMe），约 {best.tokens_per_s_per_gpu:.0f} tokens/s/卡（乐观估计）。QLoRA 在 32GB 卡上也不行：NF4 模型本身就有 "
    f"{GB(nf4_model)}。不卸载的全参数训练需要 {a100.count} 张 A100 80GB 或 {v100_min.count} 张 V100 32GB；"
    f"QLoRA 需要 48GB 级别的卡。"))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8. Follow-up questions · 追问

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### 追问 1: 你说QLoRA可行，那具体显存占用是多少？能跑多大batch size？ (QLoRA memory and batch size)

# %%
# NBVAL_CHECK_OUTPUT
rq = plan(MODEL, "rtx-a6000", 1, task="qlora", seq_len=SEQ, adapter_dtype="bf16",
          **{k: v for k, v in LORA.items() if k != "finetune"})
qbest = rq.best
qmb = max_micro_batch(qbest, "rtx-a6000")
display(Markdown(
    f"On a V100 32GB: none (step 9, peak {G(qf.peak_bytes)} with full recompute). On a 48 GB RTX A6000 "
    f"(`plan(..., task=\"qlora\")`): {qbest.describe()}, peak {G(qbest.estimate.peak_bytes)}, and "
    f"**`max_micro_batch` = {qmb}** at seq {SEQ:,}; grow the batch with gradient accumulation."))
print(qbest.describe(), G(qbest.estimate.peak_bytes), "max micro-batch", qmb)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### 追问 2: 如果换成4×A100 80GB，能全参数训练吗？ How many A100 80GB does full fine-tuning need?

# %%
# NBVAL_CHECK_OUTPUT
r_a100 = plan(MODEL, "a100-80gb", N, seq_len=SEQ, grad_accum=ACCUM)
display(Markdown(
    f"On 4 × A100 80GB, {len(r_a100.feasible)} layouts fit and "
    f"{'all' if all(p.settings['offload'] != 'none' for p in r_a100.feasible) else 'not all'} of them offload: "
    f"the fastest, {r_a100.best.describe()}, "
    f"needs {G(r_a100.best.estimate.host_bytes)} of host RAM per GPU. Without offload `min_gpus` says "
    f"**{a100.count} × A100 80GB** ({a100.best.describe()}, peak {G(a100.best.estimate.peak_bytes)}, "
    f"about {a100.best.tokens_per_s_per_gpu:.0f} tokens/s per GPU); 8 cards would still hold "
    f"{G(zero_model_state_bytes(P, 3, 8))} of ZeRO-3 states each."))
print(len(r_a100.feasible), r_a100.best.describe(), a100.count)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### 追问 3: V100不支持BF16，FP16训练65B会有精度问题吗？ (fp16 on V100)

# %%
# NBVAL_CHECK_OUTPUT
f16 = np.finfo(np.float16)
ds_cfg = to_deepspeed_config(best)
display(Markdown(
    f"Yes, it is a real risk. V100 bf16 support: **{g.supports_bf16}**. fp16 has 5 exponent bits: largest value "
    f"{float(f16.max):,.0f}, smallest normal {float(f16.smallest_normal):.2e}; gradients below that lose precision "
    f"and vanish, activations above it overflow. bf16 has fp32's 8 exponent bits. Mitigation: dynamic loss "
    f"scaling (the DeepSpeed config below has `fp16` = `{ds_cfg['fp16']}`, where loss_scale 0 means dynamic), "
    f"keep the master weights and optimizer in fp32 (the {ds.counts['optimizer_bytes_unsharded'] // P} bytes per "
    f"parameter counted above), and watch for skipped steps. "
    f"QLoRA also computes in 16-bit, so it has the same issue on a V100 (plus slow 4-bit kernels)."))
print(g.supports_bf16, float(f16.max), ds_cfg["fp16"])

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### What would the DeepSpeed config look like?

# %% jupyter={"source_hidden": true} tags=["hide-input"]
# NBVAL_CHECK_OUTPUT
display(Markdown(f"`memlib.plan.to_deepspeed_config` for **{best.describe()}** "
                 f"(recompute is the model's `gradient_checkpointing_enable()`):"))
print(json.dumps(ds_cfg, indent=2))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### How much host RAM, and what if the server has less?

# %% jupyter={"source_hidden": true} tags=["hide-input"]
# NBVAL_CHECK_OUTPUT
display(Markdown(
    f"CPU offload of everything: {G(best.estimate.host_bytes)} per GPU process, {G(N * best.estimate.host_bytes)} "
    f"for the four (fp32 master, m, v, fp32 gradient partition and fp16 parameters). With {G(HOST_RAM)} of RAM, "
    f"offload to NVMe instead: {G(nv.estimate.nvme_bytes)} of NVMe and {G(nv.estimate.host_bytes)} of RAM per GPU, "
    f"about {nv.tokens_per_s_per_gpu:.0f} tokens/s per GPU (NVMe reads and writes the states every step)."))
print(G(best.estimate.host_bytes), G(nv.estimate.nvme_bytes), f"{nv.tokens_per_s_per_gpu:.0f}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9. Pitfalls and further reading · 避坑与延伸阅读

# %% jupyter={"source_hidden": true} tags=["hide-input"]
tight = [p for p in r.feasible if p.verdict.margin_gib < 2]
display(Markdown("\n".join([
    "**Pitfalls**",
    f"- Counting {seed_sum // P} bytes per parameter (fp16 weights + fp16 grads + fp32 m, v) and forgetting the fp32 "
    f"master copy: mixed-precision Adam is {states // P} bytes per parameter in PyTorch AMP and in DeepSpeed alike.",
    f"- Mixing GB and GiB: a \"32GB\" V100 is {g.memory_gib:.0f} GiB = {g.memory_gb:.2f} GB, and torch sees {G(cap)}; "
    f"the {g.memory_gb / g.memory_gib - 1:.1%} between the units is enough to flip a verdict.",
    "- Mislabelling ZeRO stages: ZeRO-1 shards optimizer states, ZeRO-2 adds gradients, ZeRO-3 adds parameters. "
    "None of them shards a data-parallel micro-batch's activations.",
    "- Expecting TP or PP alone to help much: they split the model but keep every byte per owned parameter; "
    "ZeRO-2/3 cannot be combined with DeepSpeed's pipeline engine.",
    f"- Treating offload as free: it needs host RAM of the order of the model states ({G(N * best.estimate.host_bytes)} "
    "here) and PCIe time for every micro-batch (parameters are fetched for each forward and backward); speed estimates "
    "that count the traffic once per step are optimistic.",
    f"- Assuming QLoRA fits anything: the NF4 base of a 65B model ({GB(nf4_model)}) is larger than a V100's {G(cap)}, "
    "and bitsandbytes' 4-bit kernels on a V100 (no bf16) are slow.",
    f"- Leaving no margin: a layout that fits by {min((p.verdict.margin_gib for p in tight), default=0):.1f} GiB "
    f"({tight[0].describe() if tight else 'none here'}) fails on fragmentation or the first longer sequence.",
])))

# %% [markdown]
# **Further reading**
# - Rajbhandari et al. 2020, *ZeRO: Memory Optimizations Toward Training Trillion Parameter Models*, [arXiv:1910.02054](https://arxiv.org/abs/1910.02054)
# - Ren et al. 2021, *ZeRO-Offload: Democratizing Billion-Scale Model Training*, [arXiv:2101.06840](https://arxiv.org/abs/2101.06840)
# - Rajbhandari et al. 2021, *ZeRO-Infinity: Breaking the GPU Memory Wall for Extreme Scale Deep Learning*, [arXiv:2104.07857](https://arxiv.org/abs/2104.07857)
# - Dettmers et al. 2023, *QLoRA: Efficient Finetuning of Quantized LLMs*, [arXiv:2305.14314](https://arxiv.org/abs/2305.14314)
# - Shoeybi et al. 2019, *Megatron-LM: Training Multi-Billion Parameter Language Models Using Model Parallelism*, [arXiv:1909.08053](https://arxiv.org/abs/1909.08053)
# - Narayanan et al. 2021, *Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM*, [arXiv:2104.04473](https://arxiv.org/abs/2104.04473)
# - Touvron et al. 2023, *LLaMA: Open and Efficient Foundation Language Models*, [arXiv:2302.13971](https://arxiv.org/abs/2302.13971)
# - Micikevicius et al. 2018, *Mixed Precision Training* (loss scaling, fp32 master weights), [arXiv:1710.03740](https://arxiv.org/abs/1710.03740)
# - DeepSpeed config JSON reference: [deepspeed.ai/docs/config-json](https://www.deepspeed.ai/docs/config-json/)
