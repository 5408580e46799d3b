# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,slideshow,jupyter,-user_expressions
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
# # 03 · When the model does not fit · 显存装不下整个模型怎么办
#
# ## 1. The question · 问题
#
# > **如果显卡的显存不够装下一个完整的模型呢** <br> *What if the GPU's memory cannot hold the whole model?*
#
# Training or serving, one GPU or many: the question does not say, so the answer covers both.
# **Reading time:** core path ~15 min; the [deep dive](03_when_the_model_does_not_fit_deep_dive.ipynb) (fact-check, every table) is its own page.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
# %matplotlib inline
import matplotlib.pyplot as plt

import memlib
from memlib.learn.chapters.ch03 import A100, GiB, M7, RTX3080, RTX4090, largest, yes
from memlib.learn.kit import GB
from memlib.parallel import zero
from memlib.parallel.plan import plan
from memlib.learn.playgrounds import Playground
from memlib.cost.step_parts import step_parts
from memlib.cost.timing import flops_per_token
from memlib.units import gb
from memlib.learn.viz import breakdown_bars, sweep


def spoken(x):
    """A figure as said aloud: 2 significant figures, 3 from 100 up (107.8 -> '108', 5.83 -> '5.8')."""
    return f"{float(f'{x:.{3 if abs(x) >= 100 else 2}g}'):,g}"


SEQ, CTX = 2048, 4096  # training sequence; serving context

m7 = memlib.get_model(M7)
P7 = m7.num_params


def train7(**kw):
    """memlib.estimate_training of llama-2-7b at SEQ tokens (the keyword arguments of the layout)."""
    return memlib.estimate_training(M7, seq_len=SEQ, **kw)


def offload_slowdown(ga):
    """memlib.step_time of 7B ZeRO-3 over 8 A100s with the optimizer offloaded, over the same without offload."""
    return (memlib.step_time(train7(zero_stage=3, dp=8, grad_accum=ga, offload="optimizer"), A100).step_s
            / memlib.step_time(train7(zero_stage=3, dp=8, grad_accum=ga), A100).step_s)


# The figures the 30-second answer quotes; the steps below derive each one.
a_states = f"{spoken(gb(train7().model_state_bytes))} GB"                         # step 1
a_z3 = f"{spoken(gb(zero.zero_model_state_bytes(P7, 3, 8)))} GB"                  # step 2
a_int4 = f"{spoken(gb(memlib.estimate_inference(M7, weights='int4-awq').weight_bytes))} GB"  # step 7

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. The 30-second answer · 30 秒回答
#
# > **EN** First ask: training or serving, how many GPUs, and must it be full fine-tuning? If not, QLoRA
# > first. Otherwise remove the largest part at the peak: 7B holds {eval}`a_states` of AdamW states.
# > Levers: ZeRO-3 shards them ({eval}`a_z3` per GPU on eight), recompute trades compute for activations,
# > tensor parallelism splits each layer's matrices within a node, CPU offload comes last. Serving: 4-bit weights
# > ({eval}`a_int4`), then the KV cache limits. Caveat: every lever costs communication, compute or accuracy.
#
# > **中文** 先问：训练还是推理？几张卡？必须全参微调吗？不必就先用 QLoRA。否则去掉峰值时最大的那部分：7B 光 AdamW
# > 模型状态就 {eval}`a_states`。手段：ZeRO-3 分片（8 卡每卡 {eval}`a_z3`），重计算用算力换激活值，张量并行在机内切分每层的矩阵，CPU 卸载放最后。
# > 推理：4-bit 权重 {eval}`a_int4`，之后瓶颈是 KV cache。注意：每个手段都有代价（通信、算力或精度）。
#
# The long answer follows: every figure above is derived in section 5.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. What the interviewer is probing · 考察意图
#
# - Can you **split the memory into its parts** (weights, gradients, optimizer states, activations; for serving
#   weights, KV cache, prefill workspace) and say which part each technique removes *at the peak*?
# - Do you know each lever's **price**: collectives, recompute FLOPs, PCIe and CPU time, accuracy, the bubble?
# - Can you **combine** them for a budget (one 24 GB card, 8×A100, several nodes), training and serving apart?

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Words we use · 术语
#
# - **GB / GiB**: 10⁹ / 2³⁰ bytes. **Model states**: weights, gradients, fp32 master, Adam's m, v (16 B/param).
# - **Recompute**: keep each layer's input, rerun its forward in the backward. **DP / DDP**: `nn.DataParallel`
#   (one process, threads) / `DistributedDataParallel` (a process per GPU). **Micro-batch**: one forward's batch.
# - **ZeRO-1/2/3**: shard optimizer states / + gradients / + parameters (FSDP FULL_SHARD ≈ ZeRO-3). **TP / PP**:
#   split every matrix / layers per GPU; PP's idle **bubble** is (p-1)/(m+p-1). **Offload**: states in host RAM.
# - **Collectives** (per GPU, ring over n GPUs): **all-reduce** sums a tensor so every GPU has the total (sends
#   2(n-1)/n of it); **reduce-scatter** sums it and leaves each GPU 1/n; **all-gather** assembles the n slices on
#   every GPU (each sends (n-1)/n). **Exposed**: communication the compute does not hide.
# - **QLoRA**: adapters on a 4-bit (NF4) base. **AWQ, GPTQ**: 4-bit weights. **KV cache**: past keys and values.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. The answer, step by step · 推导
#
# ### Step 1 · Where the bytes go (7B, one GPU)
#
# ✏️ **Back of the envelope.** Mixed-precision AdamW: 16 B/param × 7e9 = **112 GB** of states. The
# circulating "14 + 14 + 28 = 56 GB" is pure 16-bit training, 8 B/param × 7e9 = **56 GB**, which almost
# nobody runs (small updates vanish in 16-bit weights).

# %% tags=["nbval-check-output"]
pencil_amp = 112e9  # the pencil's figure above
# memlib.estimate_training: pure fp16 (the seed), bf16-mixed AMP
fp16_pure, amp = train7(precision="fp16"), train7()
amp_bpp = amp.model_state_bytes / P7
s1_fit = "Nothing fits" if not memlib.fits(amp, A100).fits else "It fits"
states = (fp16_pure.model_state_bytes, amp.model_state_bytes)
print(f"states: pure fp16 {GB(states[0])}, bf16-mixed {GB(states[1])} "
      f"({amp_bpp:.0f} B/param)")
print(f"bf16-mixed peak {GB(amp.peak_bytes)} ({amp.phase})")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s1_p, s1_fp16, s1_amp = f"{P7 / 1e9:.2f}B", f"{GB(fp16_pure.model_state_bytes)}", f"{GB(amp.model_state_bytes)}"
s1_vs, s1_peak, s1_phase = f"{amp.model_state_bytes / pencil_amp - 1:+.0%}", f"{GB(amp.peak_bytes)}", f"{amp.phase}"
s1_tmp = f"{GB(amp.counts['optimizer_temporary_bytes'])}"

# %% [markdown]
# 7B has {eval}`s1_p` parameters: pure fp16 states are **{eval}`s1_fp16`**, mixed precision **{eval}`s1_amp`**
# ({eval}`s1_vs` against the pencil, which rounded the count up). The step peaks at **{eval}`s1_peak`** in the
# {eval}`s1_phase` step, which the pencil left out: torch's foreach AdamW allocates a temporary copy of the second
# moments there ({eval}`s1_tmp`; fused AdamW, HF Trainer's default, does not). {eval}`s1_fit` on one 80 GB GPU; every step below removes some of these bytes.

# %% [markdown]
# ### Step 2 · ZeRO 1/2/3: shard the states, pay in traffic
#
# ✏️ **Back of the envelope.** DeepSpeed keeps 2 (16-bit weights) + 2 (16-bit gradients) + 12 (fp32 master, m,
# v) B/param. On 8 GPUs: DDP 16 B → 112 GB; ZeRO-1 2 + 2 + 12/8 = 5.5 B → **39 GB**; ZeRO-2 2 + 14/8 → **26 GB**;
# ZeRO-3 16/8 = 2 B → **14 GB** per GPU. Its price: per micro-batch ZeRO-3 gathers the 14 GB of weights twice
# and reduce-scatters the gradients once, 3 × 7/8 × 14 ≈ **36 GB** per GPU; 8 micro-batches, **~290 GB**.

# %% tags=["nbval-check-output"]
N, pencil_z3 = 8, {0: 112e9, 1: 39e9, 2: 26e9, 3: 14e9}  # the pencil's
zero_est = {st: train7(zero_stage=st, dp=N) for st in range(4)}
for st, e in zero_est.items():
    states = zero.zero_model_state_bytes(P7, st, N)  # ZeRO paper, Figure 1
    print(f"{f'ZeRO-{st}' if st else 'DDP':6s} states {GB(states):>8s} "
          f"({states / pencil_z3[st] - 1:+.0%}), peak {GiB(e.peak_bytes):>9s}"
          f", {yes(memlib.fits(e, A100))}")
ratio = {n: zero.zero_model_state_bytes(P7, 0, n)
         / zero.zero_model_state_bytes(P7, 1, n) for n in (8, 10**6)}
z3_traffic = {ga: memlib.step_time(train7(zero_stage=3, dp=N, grad_accum=ga),
                                   A100).dp_comm_bytes for ga in (1, 8)}
print(f"ZeRO-3 traffic per GPU: {GB(z3_traffic[1])} (1 micro-batch), "
      f"{GB(z3_traffic[8])} (8)")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s2_z3peak, s2_z3act = f"{GiB(zero_est[3].peak_bytes)}", f"{GiB(zero_est[3].breakdown['activations'])}"
s2_r8, s2_rinf = f"{ratio[8]:.2f}", f"{ratio[10**6]:.2f}"
s2_t1, s2_t8 = f"{GB(z3_traffic[1])}", f"{GB(z3_traffic[8])}"

# %% [markdown]
# The pencil left out what is not a model state: under ZeRO-3 the largest single part of the peak
# ({eval}`s2_z3peak`) is the **activations** ({eval}`s2_z3act`), which ZeRO does not shard. ZeRO-1 saves
# {eval}`s2_r8`× on 8 GPUs; the paper's "4x" ({eval}`s2_rinf`×) is a limit. ZeRO-3's traffic is per
# *micro-batch*: {eval}`s2_t1` at one, {eval}`s2_t8` at eight (DeepSpeed keeps the last layers gathered);
# step 4 compares it with TP and PP on the same step.

# %% [markdown]
# ### Step 3 · Recompute: what it saves at the peak
#
# ✏️ **Back of the envelope.** A layer saves ~34·s·b·h = 34 × 2048 × 4096 ≈ 0.29 GB with flash attention;
# × 32 layers ≈ **9 GB**. Full recompute keeps 2·s·b·h per layer plus one rebuilt layer: **≈ 0.8 GB**, for
# one extra forward: 8Ψ instead of 6Ψ FLOPs per token, **+33%**.

# %% tags=["nbval-check-output"]
pencil_act = 9e9  # the pencil's figure above; 8 GPUs under ZeRO-3
rc = {r: train7(zero_stage=3, dp=N, recompute=r)
      for r in ("none", "selective", "full")}
# memlib.cost.timing.flops_per_token: PaLM's 6N + 12LHQT, + a second forward
rc_cost = flops_per_token(m7, SEQ, "full") / flops_per_token(m7, SEQ, "none")
for r, e in rc.items():
    act = largest(e, "activations")
    print(f"recompute {r:9s}: activations {GiB(act, 2)}, "
          f"peak {GiB(e.peak_bytes)} ({e.phase})")
print(f"FLOPs with full recompute: {rc_cost:.3f}x")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s3_none, s3_vs = f"{GB(largest(rc['none'], 'activations'))}", f"{largest(rc['none'], 'activations') / pencil_act - 1:+.0%}"
s3_full, s3_cost = f"{GB(largest(rc['full'], 'activations'), 2)}", f"{rc_cost - 1:.0%}"
s3_peak_none, s3_peak_full = f"{GiB(rc['none'].peak_bytes)}", f"{GiB(rc['full'].peak_bytes)}"
s3_saved = f"{GiB(rc['none'].peak_bytes - rc['full'].peak_bytes)}"
s3_ph_none, s3_ph_full = f"{rc['none'].phase}", f"{rc['full'].phase}"

# %% [markdown]
# Saved activations: **{eval}`s3_none`** without recompute ({eval}`s3_vs` against the pencil: SwiGLU's wide
# tensors and HF RMSNorm's fp32 copies), **{eval}`s3_full`** with full recompute, for **{eval}`s3_cost` more
# FLOPs**. The peak falls less: {eval}`s3_peak_none` → **{eval}`s3_peak_full`** ({eval}`s3_saved` saved). It moves
# from the {eval}`s3_ph_none` to the {eval}`s3_ph_full` step, where gradients and the optimizer's temporary live.

# %% [markdown]
# ### Step 4 · Tensor and pipeline parallelism: split the model itself
#
# ✏️ **Back of the envelope.** One step of 64 sequences of 2k tokens on 8 GPUs. TP = 8 gives each GPU 1/8 of
# every matrix, 14 GB / 8 ≈ **1.7 GB** of weights; it all-reduces b·s·h activations 4 times per layer:
# 4 × 32 × 2 × 7/8 × 17 MB ≈ 3.8 GB per sequence, × 64 ≈ **240 GB** per GPU per step. PP = 8 gives each GPU 4
# layers; with 64 micro-batches the bubble is 7/(64 + 7) ≈ **10%**. ZeRO-3: step 2's ~290 GB.

# %% tags=["nbval-check-output"]
GBS, pencil_tp = 64, 240e9  # sequences per step; the pencil's TP figure per step
lay = {"ZeRO-3": train7(zero_stage=3, dp=8, grad_accum=GBS // 8),
       "TP=8": train7(tp=8, grad_accum=GBS),
       "PP=8": train7(pp=8, grad_accum=GBS)}
lay_t = {k: memlib.step_time(e, A100) for k, e in lay.items()}
for k, e in lay.items():
    t = lay_t[k]
    moved = t.dp_comm_bytes + t.tp_comm_bytes + t.pp_comm_bytes
    w16 = e.counts["param_bytes"]  # the 16-bit weights this GPU holds
    print(f"{k:6s} weights {GB(w16, 2)}, peak {GiB(e.peak_bytes)}, "
          f"traffic {GB(moved)}, bubble {t.bubble_fraction:.1%}")
bubbles = {m: memlib.step_time(train7(pp=8, grad_accum=m), A100)
           .bubble_fraction for m in (8, 64)}
tp_per_seq = lay_t["TP=8"].tp_comm_bytes / GBS
# per GPU per step of the same 64 sequences: bytes sent, seconds on NVLink, seconds the compute does not hide
# (memlib.step_time: dp_collectives() for ZeRO-3, all_reduce_bytes for TP, point-to-point sends for PP)
sent = {"ZeRO-3": (lay_t["ZeRO-3"].dp_comm_bytes, lay_t["ZeRO-3"].dp_comm_s, lay_t["ZeRO-3"].dp_exposed_s),
        "TP=8": (lay_t["TP=8"].tp_comm_bytes, lay_t["TP=8"].tp_comm_s, lay_t["TP=8"].tp_comm_s),
        "PP=8": (lay_t["PP=8"].pp_comm_bytes, lay_t["PP=8"].pp_comm_s, lay_t["PP=8"].pp_comm_s)}

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s4_tpw, s4_ppw = f"{GB(lay['TP=8'].counts['param_bytes'], 2)}", f"{GB(lay['PP=8'].counts['param_bytes'], 2)}"
s4_z3w = f"{GB(lay['ZeRO-3'].counts['param_bytes'], 2)}"
s4_tpseq, s4_tpvs = f"{GB(tp_per_seq, 2)}", f"{sent['TP=8'][0] / pencil_tp - 1:+.0%}"
s4_pp, s4_bub, s4_b8 = f"{GB(sent['PP=8'][0], 2)}", f"{bubbles[64]:.0%}", f"{bubbles[8]:.0%}"
s4_z3, s4_tp = f"{GB(sent['ZeRO-3'][0])}", f"{GB(sent['TP=8'][0])}"
s4_z3_s, s4_z3_x = f"{sent['ZeRO-3'][1]:.2f} s", f"{sent['ZeRO-3'][2]:.2f} s"
s4_tp_s, s4_pp_s = f"{sent['TP=8'][1]:.2f} s", f"{sent['PP=8'][1]:.3f} s"
s4_ratio = f"{sent['TP=8'][0] / sent['ZeRO-3'][0]:.2f}"

# %% [markdown]
# The three layouts on the same step, per GPU (NVLink inside one node):
#
# | one step of 64 sequences | weights per GPU | sent per GPU | time on the link | exposed |
# |---|---|---|---|---|
# | ZeRO-3 (8 micro-batches a GPU) | {eval}`s4_z3w` | **{eval}`s4_z3`** | {eval}`s4_z3_s` | {eval}`s4_z3_x` |
# | TP=8 | {eval}`s4_tpw` | **{eval}`s4_tp`** | {eval}`s4_tp_s` | {eval}`s4_tp_s` (all) |
# | PP=8 (64 micro-batches) | {eval}`s4_ppw` | {eval}`s4_pp` | {eval}`s4_pp_s` | {eval}`s4_pp_s`, plus the bubble |
#
# TP's pencil was {eval}`s4_tpvs` off. TP sends {eval}`s4_ratio`× what ZeRO-3 sends, but on the critical path:
# keep it in an NVLink node. ZeRO-3's gathers overlap the compute. **PP** sends little, so it crosses nodes; it
# pays the bubble ({eval}`s4_bub` at 64 micro-batches, {eval}`s4_b8` at 8) and its first stage holds `pp`
# micro-batches of activations.

# %% [markdown]
# ### Step 5 · Offload: move the states to the host
#
# ✏️ **Back of the envelope.** ZeRO-3 + optimizer offload on 8 GPUs: each process keeps 1/8 of the fp32
# master, m, v and gradients (16 B/param) in host RAM, 7e9 × 16 / 8 = **14 GB** per GPU, **112 GB per node**.
# The node's CPU-Adam (~5e9 parameters/s, shared by 8 processes) updates 7e9 parameters in **~1.4 s per
# step**; one 2k sequence computes in ≈ 0.7 s per GPU, so ~3× slower at one micro-batch.

# %% tags=["nbval-check-output"]
off_kw = {"ZeRO-3": {}, "+ offload optimizer": dict(offload="optimizer"),
          "+ offload all (CPU)": dict(offload="optimizer+params"),
          "+ offload all (NVMe)": dict(offload="optimizer+params",
                                       offload_device="nvme")}
off = {(k, ga): train7(zero_stage=3, dp=8, grad_accum=ga, **kw)
       for k, kw in off_kw.items() for ga in (1, 8)}
off_t = {key: memlib.step_time(e, A100) for key, e in off.items()}
for k in off_kw:
    slow = [off_t[k, ga].step_s / off_t["ZeRO-3", ga].step_s for ga in (1, 8)]
    e = off[k, 1]
    print(f"{k:20s} peak {GiB(e.peak_bytes)}, host {GiB(e.host_bytes)}, "
          f"slower {slow[0]:.2f}× / {slow[1]:.2f}×")
opt1 = off_t["+ offload optimizer", 1]

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s5_z3, s5_opt = f"{GiB(off['ZeRO-3', 1].peak_bytes)}", f"{GiB(off['+ offload optimizer', 1].peak_bytes)}"
s5_host, s5_node = f"{GiB(off['+ offload optimizer', 1].host_bytes)}", f"{GiB(8 * off['+ offload optimizer', 1].host_bytes)}"
s5_adam = f"{opt1.cpu_optimizer_s:.2f} s"
s5_sl1, s5_sl8 = f"{offload_slowdown(1):.2f}", f"{offload_slowdown(8):.2f}"

# %% [markdown]
# (Slowdowns at 1 / 8 micro-batches.) Offloading the optimizer takes the peak from {eval}`s5_z3` to {eval}`s5_opt`
# for {eval}`s5_host` of host RAM per GPU, {eval}`s5_node` per node. CPU-Adam ({eval}`s5_adam`) is paid **once per
# step**, the gradients' trip down **every micro-batch**: **{eval}`s5_sl1`×** slower at one, {eval}`s5_sl8`× at
# eight. NVMe (ZeRO-Infinity) is for when RAM is too small, not faster.

# %% [markdown]
# ### Step 6 · Serving: quantize the weights, then the KV cache is the limit
#
# ✏️ **Back of the envelope.** 7B weights: bf16 2 B → 14 GB; int8 → 7 GB; int4 → 3.5 GB. KV cache per token:
# K and V × 32 layers × 4096 × 2 B = **0.5 MB**; a 4k-token sequence **2.1 GB**; batch 8 **17 GB**, more than
# the int4 weights.

# %% tags=["nbval-check-output"]
pencil_int4 = 3.5e9  # the pencil's figure above
serve = {w: memlib.estimate_inference(M7, batch=1, context_len=CTX, weights=w)
         for w in ("bf16", "int8", "int4-awq")}
for w, e in serve.items():
    most = memlib.max_batch(M7, RTX4090, context_len=CTX, weights=w).value
    ok = yes(memlib.fits(e, RTX4090))
    print(f"{w:8s} weights {GB(e.weight_bytes, 2)}, peak "
          f"{GB(e.peak_bytes, 2)}, {ok}, max batch {most}")
int4 = serve["int4-awq"]
b8 = memlib.estimate_inference(M7, batch=8, context_len=CTX,
                               weights="int4-awq")
contexts = [256, 512, 1024, 1536, 2048, 2560, 3072, 3584, 4096]  # section 6
series = {w: [memlib.estimate_inference(M7, batch=8, context_len=n, weights=w)
              .peak_bytes for n in contexts] for w in serve}

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s6_w, s6_vs = f"{GB(int4.weight_bytes, 2)}", f"{int4.weight_bytes / pencil_int4 - 1:+.0%}"
s6_kv, s6_kv8, s6_x = f"{int4.kv_bytes_per_token:,}", f"{GB(b8.kv_cache_bytes)}", f"{b8.kv_cache_bytes / b8.weight_bytes:.1f}"
s6_pre = f"{GB(b8.activation_bytes, 2)}"

# %% [markdown]
# INT4 (AWQ) weights are **{eval}`s6_w`** ({eval}`s6_vs`: group scales, 16-bit embedding and head). The KV cache,
# {eval}`s6_kv` B per token (the pencil's 0.5 MB is 0.5 MiB), is **{eval}`s6_kv8` at batch 8**, {eval}`s6_x`× the
# weights: it, not activations, grows with batch and context (no backward; the prefill's {eval}`s6_pre` is bounded
# by chunking). Then shrink the KV cache (fp8) or add TP; notebook 04 goes further.

# %% [markdown]
# ### Step 7 · The order
#
# Training: (1) mixed precision and a lean optimizer; (2) recompute when activations are alive at the peak;
# (3) with several GPUs, ZeRO 1 → 2 → 3 (or FSDP) when the states are the problem, watching the traffic; (4) TP
# inside an NVLink node and PP across nodes when a layer or a sequence is still too big; (5) offload, optimizer
# before parameters, CPU before NVMe, last; (6) if the task allows, adapters (LoRA, QLoRA). Serving: quantize,
# then shrink the KV cache, then TP. The [deep dive](03_when_the_model_does_not_fit_deep_dive.ipynb) tries each
# lever on one 24 GB card and has every table behind these steps.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Charts · 图
#
# **Takeaway: each technique removes one colour; TP and offload shrink several.** Peak per GPU, 7B on 8×A100
# (`memlib.learn.viz.breakdown_bars`, linear, the card dashed).

# %% jupyter={"source_hidden": true} tags=["hide-input"]
chart1 = {"DDP\n(AMP)": zero_est[0], "ZeRO-1": zero_est[1], "ZeRO-2": zero_est[2], "ZeRO-3": zero_est[3],
          "ZeRO-3\n+recomp.": rc["full"], "TP=8": lay["TP=8"], "PP=8\n(m=64)": lay["PP=8"],
          "ZeRO-3\n+off. opt": off["+ offload optimizer", 1], "ZeRO-3\n+off. all": off["+ offload all (CPU)", 1]}
fig, ax = plt.subplots(figsize=(8, 2.9))
breakdown_bars(chart1, gpu=A100, ax=ax, title="LLaMA-2-7B training, seq 2048, per GPU of 8×A100 80GB")
ax.tick_params(axis="x", labelsize=7)
fig.tight_layout()
plt.show()

# %% [markdown]
# **Takeaway: quantization lowers the intercept, the KV cache sets the slope.** Serving 7B, batch 8
# (`memlib.learn.viz.sweep`, step 6), the RTX 4090 dashed.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
fig, ax = plt.subplots(figsize=(7, 2.6))
sweep(contexts, series, gpu=RTX4090, xlabel="context length (tokens), batch 8", ax=ax,
      title="LLaMA-2-7B serving: weights + KV cache + prefill workspace")
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. Playground · 动手试
#
# LLaMA-13B on 4×A100 80GB (the seed's "4×A100 训练 13B"). Try ZeRO none → 3, recompute full, then one GPU
# with "offload optimizer" vs "offload all" (host RAM appears), then QLoRA.

# %%
Playground(model="llama-13b", gpu="a100-80gb", count=4)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8. Follow-up questions · 追问
#
# ### 追问 1: ZeRO-3 和模型并行（TP/PP）有什么区别？什么时候该用哪个？ (seed)
#
# ZeRO-3 is data parallelism with sharded states: each GPU runs the whole model and gathers each layer just in
# time, overlapped with the compute. TP splits weights *and* activations; per step it sends about as much as
# ZeRO-3 (step 4's table), all of it on the critical path: within NVLink. PP sends little, fits slow links, pays
# a bubble. ZeRO-3 first; add TP, then PP across nodes.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### 追问 2: 量化到 INT4 后，模型精度下降多少？怎么评估？ (seed)

# %% jupyter={"source_hidden": true} tags=["remove-input"]
f2_bf16, f2_int4 = f"{GB(serve['bf16'].weight_bytes, 2)}", f"{GB(int4.weight_bytes, 2)}"
f2_x = f"{serve['bf16'].weight_bytes / int4.weight_bytes:.1f}"

# %% [markdown]
# **Accuracy is outside memlib's scope**: the seed's MMLU baseline (38.9%) is unsourced; LLaMA-7B's 5-shot MMLU is
# 35.1% (Touvron et al. 2023, Table 9). Measure the loss yourself: perplexity and downstream tasks, bf16 and INT4
# in one prompt format (the GPTQ and AWQ papers report theirs). INT4 buys {eval}`f2_bf16` → {eval}`f2_int4` for 7B,
# {eval}`f2_x`× smaller, not 4×.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### 追问 3: 只有单卡 12GB 显存，要训练 7B 模型，具体怎么做？延迟多少？ (seed)

# %% tags=["nbval-check-output"]
r3080 = plan(M7, RTX3080, 1, seq_len=SEQ, grad_accum=1)  # memlib.parallel.plan
best3080, t3080 = r3080.best, r3080.best.time
parts3080 = step_parts(t3080)  # memlib.cost.step_parts: where the time goes
qlora3080 = train7(finetune="qlora", lora_targets="all-linear",
                   recompute="full")
tq = memlib.step_time(qlora3080, RTX3080)
print(f"{len(r3080.feasible)} layout fits, {t3080.step_s:.1f} s per step; "
      f"QLoRA {tq.tokens_per_s_per_gpu:,.0f} tokens/s")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
f3_n, f3_best = f"{len(r3080.feasible)}", f"{best3080.describe()}"
f3_host, f3_step = f"{GiB(best3080.estimate.host_bytes)}", f"{t3080.step_s:.1f} s"
f3_comp, f3_pcie = f"{parts3080['compute']:.1f} s", f"{parts3080['offload over PCIe']:.1f} s"
f3_adam, f3_tps = f"{parts3080['CPU Adam']:.1f} s", f"{t3080.tokens_per_s_per_gpu:,.0f}"
f3_q, f3_qtps = f"{GiB(qlora3080.peak_bytes)}", f"{tq.tokens_per_s_per_gpu:,.0f}"
f3_tflops, f3_hfu, f3_mfu = f"{t3080.peak_flops / 1e12:g}", f"{t3080.hfu:.0%}", f"{t3080.mfu:.0%}"

# %% [markdown]
# {eval}`f3_n` layout fits: {eval}`f3_best`, with **{eval}`f3_host` of host RAM**. A 2k-token step takes
# **{eval}`f3_step`** ({eval}`f3_comp` compute, {eval}`f3_pcie` PCIe, {eval}`f3_adam` CPU Adam): ~{eval}`f3_tps`
# tokens/s, not 0.2-0.3. QLoRA needs {eval}`f3_q`, ~{eval}`f3_qtps` tokens/s, no host RAM. The card is an RTX 3080
# 12GB: {eval}`f3_tflops` TFLOP/s dense 16-bit with fp32 accumulate (the rate mixed precision runs at; GeForce's
# headline fp16 figure, with fp16 accumulate, is twice that), its kernels at {eval}`f3_hfu` of it on every FLOP
# they run, recompute included (HFU; {eval}`f3_mfu` MFU).

# %% [markdown]
# More follow-ups (accumulation, FSDP, fewest A100s, QLoRA 70B on two cards, and DataParallel against DDP: why
# GPU 0 is the fullest) are on the [deep dive](03_when_the_model_does_not_fit_deep_dive.ipynb).

# %% jupyter={"source_hidden": true} tags=["remove-input"]
p_bpp, p_int4x, p_r8 = f"{amp_bpp:.0f}", f"{serve['bf16'].weight_bytes / int4.weight_bytes:.1f}", f"{ratio[8]:.2f}"
p_b8, p_host = f"{bubbles[8]:.0%}", f"{GiB(best3080.estimate.host_bytes, 0)}"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9. Pitfalls · 避坑
#
# - "FP16 training is 2 + 2 + 4 B/param": mixed precision is {eval}`p_bpp` B/param. "INT4 = bf16 / 4": it is {eval}`p_int4x`× for 7B.
# - Checkpointing for inference: there is no backward. ZeRO-1's "4×" on 8 GPUs: it is {eval}`p_r8`×.
# - "ZeRO-3 brings memory down to the states' share": activations are not sharded. "TP keeps full parameters":
#   a slice. Offload and ZeRO-3 traffic are paid per micro-batch, not only per step.
# - 4-8 micro-batches for 8 pipeline stages: the bubble is {eval}`p_b8`. Full offload of 7B needs {eval}`p_host` of RAM.
# - Sizing `nn.DataParallel` by the average GPU: cuda:0 holds the gathered outputs and the optimizer.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10. Deep dive (skip on first read) · 深入（可跳过）
#
# On its own page, [03 · deep dive](03_when_the_model_does_not_fit_deep_dive.ipynb): the fact-check of seed 003
# (every claim, memlib's figure, a verdict), the full table behind each step (ZeRO stages and their traffic, TP
# and PP layouts, offload, weight formats, the one-GPU recipe), serving Llama-2-70B option by option, ZeRO's
# collectives one by one, where a step's time goes, and the follow-ups above.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 11. Further reading · 延伸阅读
#
# - Rajbhandari et al. 2020, ZeRO: Memory Optimizations Toward Training Trillion Parameter Models, [arXiv:1910.02054](https://arxiv.org/abs/1910.02054)
# - Ren et al. 2021, ZeRO-Offload: Democratizing Billion-Scale Model Training, [arXiv:2101.06840](https://arxiv.org/abs/2101.06840)
# - Rajbhandari et al. 2021, ZeRO-Infinity: Breaking the GPU Memory Wall, [arXiv:2104.07857](https://arxiv.org/abs/2104.07857)
# - Zhao et al. 2023, PyTorch FSDP: Experiences on Scaling Fully Sharded Data Parallel, [arXiv:2304.11277](https://arxiv.org/abs/2304.11277)
# - Li et al. 2020, PyTorch Distributed: Experiences on Accelerating Data Parallel Training (DDP), [arXiv:2006.15704](https://arxiv.org/abs/2006.15704); PyTorch docs, [torch.nn.DataParallel](https://pytorch.org/docs/stable/generated/torch.nn.DataParallel.html)
# - Shoeybi et al. 2019, Megatron-LM: Training Multi-Billion Parameter Language Models Using Model Parallelism, [arXiv:1909.08053](https://arxiv.org/abs/1909.08053)
# - Narayanan et al. 2021, Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM, [arXiv:2104.04473](https://arxiv.org/abs/2104.04473)
# - Korthikanti et al. 2022, Reducing Activation Recomputation in Large Transformer Models, [arXiv:2205.05198](https://arxiv.org/abs/2205.05198)
# - Huang et al. 2019, GPipe: Efficient Training of Giant Neural Networks using Pipeline Parallelism, [arXiv:1811.06965](https://arxiv.org/abs/1811.06965)
# - Frantar et al. 2022, GPTQ: Accurate Post-Training Quantization for Generative Pre-trained Transformers, [arXiv:2210.17323](https://arxiv.org/abs/2210.17323)
# - Lin et al. 2023, AWQ: Activation-aware Weight Quantization for LLM Compression and Acceleration, [arXiv:2306.00978](https://arxiv.org/abs/2306.00978)
# - Dettmers et al. 2022, LLM.int8(): 8-bit Matrix Multiplication for Transformers at Scale, [arXiv:2208.07339](https://arxiv.org/abs/2208.07339)
# - Dettmers et al. 2023, QLoRA: Efficient Finetuning of Quantized LLMs, [arXiv:2305.14314](https://arxiv.org/abs/2305.14314)
# - Kwon et al. 2023, Efficient Memory Management for Large Language Model Serving with PagedAttention (vLLM), [arXiv:2309.06180](https://arxiv.org/abs/2309.06180)
# - Chen et al. 2016, Training Deep Nets with Sublinear Memory Cost, [arXiv:1604.06174](https://arxiv.org/abs/1604.06174)
