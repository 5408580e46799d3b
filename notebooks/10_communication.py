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
# # 10 · When does communication bind? · 通信什么时候成为瓶颈？
#
# ## 1. The question · 问题
#
# > **一次 all-reduce 要多久？数据并行、FSDP、张量并行、专家并行，各自在什么条件下变成通信瓶颈？10GbE 能用来训练吗？**
# > <br> *How long does an all-reduce take? When do data, FSDP, tensor and expert parallelism become
# > communication-bound? Can you train over 10 GbE?*
#
# Llama-3-8B in bf16 on H100s: one node of 8 (NVLink), or 8 nodes over 400 Gb/s InfiniBand.
# **Reading time:** core path ~12 min; the [deep dive](10_communication_deep_dive.ipynb) (fact-check, the
# collectives drawn, more follow-ups) is its own page.
# %% jupyter={"source_hidden": true} tags=["hide-input"]
# %matplotlib inline
import matplotlib.pyplot as plt
from IPython.display import Markdown, display

import memlib
from memlib import get_gpu, get_model
from memlib.cost.collectives import (DDP_BUCKET_CAP_BYTES, bytes_sent, collective_seconds, collective_steps,
                                     comm_roofline, half_bandwidth_bytes, link_bytes_per_s)
from memlib.cost.timing import flops_per_token, palm_flops_per_token
from memlib.learn import mechanisms as mech
from memlib.learn.playgrounds.communication import CommPlayground
from memlib.parallel.pipeline import bubble_fraction, dualpipe_bubble_time, zb_h1_bubble_time
from memlib.training.activations import korthikanti_layer_bytes
from memlib.training.lora import lora_params

MODEL, GPU = "llama-3-8b", "h100-80gb"
NODE, CLUSTER = 8, 64              # one DGX H100; eight of them
IB, ETH10 = link_bytes_per_s("IB NDR"), link_bytes_per_s("10GbE")   # 400 Gb/s per GPU; 10 Gb/s
ALPHA = 5e-6                       # assumed per-message latency, seconds (measure yours with nccl-tests)
SEQ = 4096


def sig(x, n=2):
    """A number rounded to n significant figures, with thousands separators."""
    r = float(f"{x:.{n}g}")
    return f"{r:,.0f}" if r >= 10 else f"{r:g}"


def k(x):
    """11,454 -> '11k'."""
    return f"{sig(x / 1e3)}k" if x >= 1e4 else sig(x)


m8, h100 = get_model(MODEL), get_gpu(GPU)
dp_node = comm_roofline(MODEL, GPU, "dp", NODE)                       # NVLink inside one node
dp_ib = comm_roofline(MODEL, GPU, "dp", CLUSTER, bytes_per_s=IB)      # 8 nodes over InfiniBand
tp_node = comm_roofline(MODEL, GPU, "tp", NODE)
tp_ib = comm_roofline(MODEL, GPU, "tp", NODE, bytes_per_s=IB)
a_dp, a_ib, a_tp_ib = k(dp_node.critical_tokens), k(dp_ib.critical_tokens), f"{tp_ib.comm_to_compute:.0f}"
# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. The 30-second answer · 30 秒回答
#
# > **EN** **A ring all-reduce sends each GPU about twice the tensor, so its time is twice the bytes over
# > the link, plus a latency per step.** Data parallelism and FSDP move a fixed amount per step, so they hide
# > once each GPU computes enough tokens: about {eval}`a_dp` for an 8B on NVLink, {eval}`a_ib` across
# > InfiniBand. Tensor and expert parallelism move activations, so no batch helps: tensor parallelism across
# > nodes is {eval}`a_tp_ib`× communication-bound. Caveat: small messages pay latency; hence DDP's buckets.
#
# > **中文** **环形 all-reduce 每卡发送约两倍张量，时间≈两倍字节数÷链路带宽，加每步延迟。**数据并行和 FSDP
# > 每步通信量固定，每卡算的 token 够多就能藏住：8B 在 NVLink 上约 {eval}`a_dp`，跨 InfiniBand 约 {eval}`a_ib`。
# > 张量并行和专家并行传的是激活，加大 batch 无用：跨节点张量并行通信是计算的 {eval}`a_tp_ib` 倍。注意：小消息受延迟支配，所以 DDP 要分桶。
#
# The long answer follows: every figure above is derived in section 5.
# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. What the interviewer is probing · 考察意图
#
# - **The collectives by name.** All-reduce is a reduce-scatter then an all-gather; what FSDP, tensor and
#   expert parallelism each call, and how many bytes each GPU sends.
# - **The cost model.** α + B/β per message; a ring's 2(n−1) steps; when a tree wins.
# - **The roofline.** Which schemes a bigger batch rescues (fixed traffic per step) and which it cannot
#   (traffic per token), hence "tensor parallelism inside the node".
# - **Numbers for real links.** NVLink against InfiniBand against Ethernet, and reading nccl-tests' bus bandwidth.
# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Words we use · 术语
#
# - **All-reduce**: every GPU ends with the sum of all GPUs' tensors. **Reduce-scatter**: each ends with its
#   1/n slice of the sum. **All-gather**: each ends with every GPU's slice. **All-to-all**: each sends a
#   different slice to every other GPU (expert dispatch, Ulysses).
# - **Ring / tree**: the two algorithms NCCL uses; **α** (latency per message), **β** (bytes/s of a link,
#   one direction); **algbw / busbw**: nccl-tests' tensor bytes per second, and that scaled to the link.
# - **DP** (data parallel, DDP), **FSDP/ZeRO-3** (sharded data parallel), **TP** (tensor parallel, Megatron),
#   **SP** (sequence parallel), **EP** (expert parallel), **PP** (pipeline parallel), **bucket** (DDP's
#   package of gradients all-reduced together), **communication-bound** (the link, not the math, sets the time).
# - **1F1B**, **interleaved**, **ZB-H1**, **DualPipe**: pipeline schedules; **bubble**: a stage's idle share.
# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. The answer, step by step · 推导
#
# ### Step 1 · What an all-reduce sends
#
# ✏️ **Back of the envelope.** An 8B's bf16 gradients are 16 GB. A ring all-reduce over 8 GPUs is a
# reduce-scatter then an all-gather, each sending 7/8 of the tensor: 2 × 7/8 × 16 = **28 GB per GPU**. At
# NVLink 4's 450 GB/s each way: 28 / 450 ≈ **62 ms**.
# %% tags=["nbval-check-output"]
grad_bytes = 2 * m8.num_params                                              # bf16 gradients
sent = bytes_sent("all-reduce", grad_bytes, NODE)                           # memlib.cost.collectives: 2(n-1)/n B
t_ring = collective_seconds("all-reduce", grad_bytes, NODE, h100.interconnect_bytes_per_s_per_direction, ALPHA)
t_rsag = sum(collective_seconds(c, grad_bytes, NODE, h100.interconnect_bytes_per_s_per_direction, ALPHA)
             for c in ("reduce-scatter", "all-gather"))
print(f"gradients {grad_bytes / 1e9:.2f} GB; sent per GPU {sent / 1e9:.2f} GB; ring {t_ring * 1e3:.1f} ms "
      f"(= reduce-scatter + all-gather {t_rsag * 1e3:.1f} ms)")
# %% jupyter={"source_hidden": true} tags=["remove-input"]
s1_grad, s1_sent, s1_t = f"{grad_bytes / 1e9:.1f} GB", f"{sent / 1e9:.1f} GB", f"{t_ring * 1e3:.0f} ms"
s1_fp32 = f"{collective_seconds('all-reduce', 2 * grad_bytes, NODE, h100.interconnect_bytes_per_s_per_direction, ALPHA) * 1e3:.0f} ms"
s1_steps, s1_alpha = f"{collective_steps('all-reduce', NODE)}", f"{ALPHA * 1e6:g} µs"
s1_lat = f"{collective_steps('all-reduce', NODE) * ALPHA * 1e6:.0f} µs"
# %% [markdown]
# `memlib.cost.collectives.collective_seconds`: Llama-3-8B's gradients are {eval}`s1_grad`; each GPU sends
# **{eval}`s1_sent`** and the all-reduce takes **{eval}`s1_t`**, exactly a reduce-scatter plus an all-gather.
# **What the pencil left out:** the {eval}`s1_steps` latency terms, {eval}`s1_lat` at an assumed
# {eval}`s1_alpha` each: nothing at this size. Gradients kept in fp32 (torch DDP over fp32 parameters under
# autocast; Megatron's bf16 default) are twice the bytes: {eval}`s1_fp32`. This chapter reduces bf16 gradients. The ring is bandwidth-optimal: no algorithm sends less than 2(n−1)/n of the tensor
# (Patarasuk & Yuan 2009).
# %% [markdown]
# ### Step 2 · Latency: why DDP buckets, and when a tree wins
#
# ✏️ **Back of the envelope.** A ring pays 2(n−1) latencies and 2(n−1)/n × B/β of bandwidth; they are equal
# at B = n·α·β = 8 × 5 µs × 450 GB/s = **18 MB**. An 8 KB norm weight alone would be all latency: DDP packs
# gradients into 25 MiB buckets, all-reduced while the backward goes on.
# %% tags=["nbval-check-output"]
beta = h100.interconnect_bytes_per_s_per_direction
n_half = half_bandwidth_bytes("all-reduce", NODE, beta, ALPHA)             # Hockney's n_1/2 for the ring
small = 2 * m8.hidden_size                                                  # one RMSNorm weight's bf16 gradient
eff = {name: (bytes_sent("all-reduce", b, NODE) / beta) / collective_seconds("all-reduce", b, NODE, beta, ALPHA)
       for name, b in (("norm", small), ("bucket", DDP_BUCKET_CAP_BYTES))}   # share of the time spent moving bytes
ring_1k = collective_seconds("all-reduce", DDP_BUCKET_CAP_BYTES, 1024, IB, ALPHA)
tree_1k = collective_seconds("all-reduce", DDP_BUCKET_CAP_BYTES, 1024, IB, ALPHA, "tree")
print(f"n_1/2 {n_half / 1e6:.1f} MB; bandwidth share: norm {eff['norm']:.1%}, bucket {eff['bucket']:.1%}; "
      f"1,024 GPUs: ring {ring_1k * 1e3:.2f} ms, tree {tree_1k * 1e3:.2f} ms")
# %% jupyter={"source_hidden": true} tags=["remove-input"]
s2_half, s2_norm, s2_bucket = f"{n_half / 1e6:.0f} MB", f"{eff['norm']:.2%}", f"{eff['bucket']:.0%}"
s2_ring, s2_tree = f"{ring_1k * 1e3:.1f} ms", f"{tree_1k * 1e3:.1f} ms"
s2_cap, s2_steps = f"{DDP_BUCKET_CAP_BYTES / 2**20:g} MiB", f"{collective_steps('all-reduce', 1024):,}"
# %% [markdown]
# `memlib.cost.collectives.half_bandwidth_bytes`: **{eval}`s2_half`**. An all-reduce of one norm weight's
# gradient spends {eval}`s2_norm` of its time moving bytes, a {eval}`s2_cap` bucket (DDP's default)
# {eval}`s2_bucket`. **What the pencil left out:** scale. Over 1,024 GPUs on InfiniBand the ring's
# {eval}`s2_steps` latencies make one bucket's all-reduce {eval}`s2_ring`; NCCL's double binary tree pays
# 2·log₂ n of them, {eval}`s2_tree`. α is an assumption here: it is the number to measure (nccl-tests on
# small messages).
# %% [markdown]
# ### Step 3 · The roofline of data parallelism
#
# ✏️ **Back of the envelope.** Step 1's 62 ms must hide behind compute. A token costs 6 × 8e9 ≈ 5e10 FLOPs;
# an H100 does ~1e15 per second, 50 µs per token: 62 ms / 50 µs ≈ **1.2k tokens per GPU per step**. Over
# 400 Gb/s InfiniBand (50 GB/s, 9× slower): **~11k**.
# %% tags=["nbval-check-output"]
fpt = flops_per_token(m8, SEQ)                                              # 6N + 12·L·H·Q·T (PaLM App. B)
dp_eth = comm_roofline(MODEL, GPU, "dp", CLUSTER, bytes_per_s=ETH10)
for name, r in (("NVLink, 8", dp_node), ("IB NDR, 64", dp_ib), ("10GbE, 64", dp_eth)):
    print(f"{name}: {r.comm_bytes_per_step / 1e9:.1f} GB per step; communication-bound below "
          f"{r.critical_tokens:,.0f} tokens per GPU")
# %% jupyter={"source_hidden": true} tags=["remove-input"]
s3_dp, s3_ib, s3_attn = f"{dp_node.critical_tokens:,.0f}", f"{dp_ib.critical_tokens:,.0f}", \
    f"{fpt / (6 * m8.num_params) - 1:+.0%}"
s3_bwd = f"{1.5 * dp_ib.critical_tokens:,.0f}"
s3_mfu = f"{1 / 0.4:g}"  # at 40% MFU the compute takes 1 / 0.4 as long
# %% [markdown]
# `memlib.cost.collectives.comm_roofline`: communication takes as long as compute at **{eval}`s3_dp` tokens
# per GPU per step** inside the node and **{eval}`s3_ib`** across InfiniBand, at the dense peak (at 40% MFU
# the compute is {eval}`s3_mfu`× slower and the thresholds drop as much). **What the pencil left out:** attention's
# {eval}`s3_attn` of FLOPs, and the overlap: DDP starts each bucket's all-reduce during the backward, which
# is two thirds of the compute, so hiding it fully takes {eval}`s3_bwd` tokens across nodes. Gradient
# accumulation adds tokens per step without adding traffic.
# %% [markdown]
# ### Step 4 · FSDP, tensor and expert parallelism
#
# ✏️ **Back of the envelope.** FSDP gathers the parameters twice and reduce-scatters the gradients: 3 × 7/8
# × 16 GB, **1.5× DDP**. Tensor parallelism all-reduces each layer's 8 KB per token four times (2 × 7/8 ×
# 8 KB × 4 ≈ 57 KB) against 6 × 218M / 8 ≈ 1.6e8 FLOPs: 0.13 µs of NVLink against 0.16 µs of compute,
# **a fixed ratio ~0.8**, ×9 over InfiniBand.
# %% tags=["nbval-check-output"]
fsdp_ib = comm_roofline(MODEL, GPU, "fsdp", CLUSTER, bytes_per_s=IB)
tp_pic = mech.tensor_parallel_layer(MODEL, tp=4, tokens=SEQ, sequence_parallel=True)   # the picture in section 6
ep = {(name, lk): comm_roofline(name, GPU, "ep", deg, bytes_per_s=b)
      for name, deg in (("mixtral-8x7b", 8), ("deepseek-v3", 64)) for lk, b in (("NVLink", None), ("IB", IB))
      if not (deg > NODE and lk == "NVLink")}
print(f"FSDP over IB: bound below {fsdp_ib.critical_tokens:,.0f} tokens; TP 8 comm/compute: NVLink "
      f"{tp_node.comm_to_compute:.2f}, IB {tp_ib.comm_to_compute:.2f}")
print({f"{n} EP over {lk}": round(r.comm_to_compute, 2) for (n, lk), r in ep.items()})
# %% jupyter={"source_hidden": true} tags=["remove-input"]
s4_fsdp, s4_tp, s4_tpib = f"{fsdp_ib.critical_tokens:,.0f}", f"{tp_node.comm_to_compute:.2f}", \
    f"{tp_ib.comm_to_compute:.1f}"
s4_mix, s4_mixib = f"{ep['mixtral-8x7b', 'NVLink'].comm_to_compute:.2f}", f"{ep['mixtral-8x7b', 'IB'].comm_to_compute:.2f}"
s4_ds = f"{ep['deepseek-v3', 'IB'].comm_to_compute:.1f}"
# %% [markdown]
# `comm_roofline` again. **FSDP** across nodes is compute-bound above **{eval}`s4_fsdp` tokens** per GPU per
# micro-batch: it gathers again for every micro-batch, so accumulation does not help it. **Tensor
# parallelism** over 8 GPUs spends {eval}`s4_tp` of its compute time on all-reduces inside a node (hidden only
# if overlapped) and **{eval}`s4_tpib`×** its compute across nodes, at any batch: keep it inside NVLink.
# **Expert parallelism** sends each token's top-k copies twice each way: Mixtral's {eval}`s4_mix`× within a node,
# {eval}`s4_mixib`× across; DeepSeek-V3 over 64 GPUs on InfiniBand {eval}`s4_ds`×, which is why DeepSeek limits
# each token to 4 nodes and overlaps the all-to-alls with another micro-batch's compute (DualPipe). **What the
# pencil left out:** attention's FLOPs and the exact layer size.
# %% [markdown]
# ### Step 5 · Is 10 GbE usable?
#
# ✏️ **Back of the envelope.** 10 Gb/s is 1.25 GB/s: 28 GB of gradients take 22 s. To hide them each GPU must
# compute 22 s / 50 µs ≈ **450k tokens per step**. LoRA (rank 16, all projections) all-reduces 42M parameters,
# 84 MB: 0.1 s.
# %% tags=["nbval-check-output"]
lora = lora_params(m8, 16, "all-linear")                                    # memlib.training.lora: r(in + out)
lora_s = collective_seconds("all-reduce", 2 * lora, CLUSTER, ETH10, ALPHA)
lora_tokens = lora_s * h100.bf16_tflops * 1e12 / fpt
verdict = ("usable: one sequence per GPU hides it" if lora_tokens <= SEQ else
           "tight: it needs more than one sequence per GPU per step")
print(f"full: {dp_eth.critical_tokens:,.0f} tokens per GPU per step; LoRA {lora:,} params: "
      f"{lora_s:.3f} s, hidden above {lora_tokens:,.0f} tokens")
# %% jupyter={"source_hidden": true} tags=["remove-input"]
s5_full, s5_global = f"{dp_eth.critical_tokens / 1e3:,.0f}k", f"{dp_eth.critical_tokens * CLUSTER / 1e6:.0f}M"
s5_l3 = f"{dp_eth.critical_tokens * CLUSTER / 16e6:.1f}"  # Llama 3 405B's largest batch: 16M tokens
s5_lora, s5_lora_s, s5_lora_t = f"{lora / 1e6:.0f}M", f"{lora_s:.2f} s", f"{lora_tokens:,.0f}"
p_ib, p_eth = f"{IB / 1e9:g} GB/s", f"{ETH10 / 1e9:g} GB/s"
s5_verdict = f"{verdict}"
# %% [markdown]
# `comm_roofline` over 10 GbE: full-parameter data parallelism needs **{eval}`s5_full` tokens per GPU per
# step**, a global batch of {eval}`s5_global` tokens over 64 GPUs, {eval}`s5_l3`× the 16M tokens of Llama 3
# 405B's largest batch (Dubey et al. 2024, Sec. 3.4.1): possible only for large-batch pretraining with heavy
# gradient accumulation, hopeless for fine-tuning's small batches. LoRA's {eval}`s5_lora` adapter parameters take
# {eval}`s5_lora_s` and hide above {eval}`s5_lora_t` tokens per GPU: **{eval}`s5_verdict`**. Tensor parallelism
# over 10 GbE: never. **What the pencil left out:** nothing that changes the verdict.
# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Charts · 图
#
# **The roofline:** communication over compute against the tokens each GPU computes per step. Data parallelism
# and FSDP fall as the batch grows and cross 1 where they hide; tensor parallelism is flat: no batch rescues it.
# %% jupyter={"source_hidden": true} tags=["hide-input"]
tokens = [2 ** i for i in range(8, 21)]
curves = {"DP, NVLink (8)": dp_node, "DP, IB NDR (64)": dp_ib, "FSDP, IB NDR (64)": fsdp_ib,
          "DP, 10GbE (64)": dp_eth, "TP 8, NVLink": tp_node, "TP 8, IB NDR": tp_ib}
fig, ax = plt.subplots(figsize=(7.5, 3.6))
for label, r in curves.items():
    ax.plot(tokens, [r.ratio(t) for t in tokens], marker="o", ms=3, label=label)
ax.axhline(1, color="k", ls="--", lw=1)
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xlabel("tokens per GPU per step")
ax.set_ylabel("communication / compute")
ax.set_title("Llama-3-8B on H100s at the dense peak (memlib.cost.collectives.comm_roofline)", fontsize=10)
ax.legend(fontsize=7, ncol=2)
ax.grid(alpha=0.3)
plt.show()
# %% [markdown]
# **The mechanism of tensor parallelism:** one rank's view of the MLP over 4 GPUs with sequence parallelism:
# the all-gather of the sequence shards, gate and up split by columns, down by rows, and the reduce-scatter
# back to a sequence shard (red bars: what each rank sends).
# %% jupyter={"source_hidden": true} tags=["hide-input"]
mech.draw_tensor_parallel_layer(tp_pic, blocks=("mlp",))
plt.show()
# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. Playground · 动手试
#
# Try: DP over 64 GPUs on 10GbE and find the tokens that hide it; TP 8 on InfiniBand; DeepSeek-V3 EP 64.
# %%
CommPlayground(model=MODEL, gpu=GPU, link="IB NDR", parallelism="dp", degree=CLUSTER, tokens=SEQ)
# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8. Follow-up questions · 追问
#
# More on the [deep dive](10_communication_deep_dive.ipynb): reading nccl-tests, ZeRO's 1.5×, the
# pipeline's point-to-point traffic, context parallelism's ring and Ulysses, 2D/3D tensor parallelism.
# %% [markdown] slideshow={"slide_type": "subslide"}
# ### How do pipeline schedules trade bubble for memory? · 流水线调度怎样在气泡和显存之间取舍？
# %% tags=["nbval-check-output"]
P, M = 4, 8
scheds = {"GPipe": mech.pipeline_schedule("gpipe", P, M), "1F1B": mech.pipeline_schedule("1f1b", P, M),
          "interleaved, v=2": mech.pipeline_schedule("interleaved", P, M, vpp=2),
          "ZB-H1": mech.pipeline_schedule("zb-h1", P, M, t_b=1, t_w=1)}
# DualPipe is not simulated: DeepSeek-V3's Table 2 formula, a forward and a backward chunk overlapped (F&B = F + B)
dual = dualpipe_bubble_time(P, 1 + 2, 2, 1)      # (p/2 - 1)(F&B + B - 3W) with F = 1, B = 2, W = 1
print({n: (s.makespan - s.busy, f"{s.bubble_fraction:.3f}", s.peak_in_flight[0]) for n, s in scheds.items()},
      float(bubble_fraction(P, M)), float(bubble_fraction(P, M, 2)), zb_h1_bubble_time(P, 1, 1, 1), dual)
# %% jupyter={"source_hidden": true} tags=["hide-input"]
rows = [f"| {n} | {s.makespan - s.busy:g} | {s.bubble_fraction:.1%} | {s.peak_in_flight[0]} | 1 |"
        for n, s in scheds.items()]
rows.append(f"| DualPipe (formula) | {dual:g} | - | {P + 1} | 2 |")
display(Markdown("| schedule (p = 4, m = 8) | idle time per GPU (one forward = 1) | bubble | micro-batches "
                 "(chunks) in flight on GPU 0 | parameter copies |\n|---|---|---|---|---|\n" + "\n".join(rows)))
# %% jupyter={"source_hidden": true} tags=["hide-input"]
fig, axes = plt.subplots(2, 1, figsize=(7.5, 3.4), gridspec_kw={"height_ratios": [4, 3]})
mech.draw_pipeline_schedule(scheds["1F1B"], ax=axes)
plt.show()
# %% [markdown]
# `memlib.learn.mechanisms.pipeline_schedule` runs each schedule's order against its dependencies; the idle
# share it measures equals Narayanan et al.'s (p−1)/(m+p−1) for GPipe and 1F1B, and (p−1)/(v·m+p−1) interleaved
# (`memlib.parallel.pipeline.bubble_fraction`). 1F1B has GPipe's bubble with at most p micro-batches of
# activations instead of m; interleaving divides the bubble by v for more in flight and v× the
# point-to-point sends; ZB-H1 splits the backward into B and W and fills the bubble with W passes at
# 1F1B's memory; DualPipe (DeepSeek-V3) feeds micro-batches from both ends and overlaps a forward with a
# backward (and their all-to-alls), for the smallest bubble here at the price of two copies of the parameters
# (its row is the report's Table 2 formula, not a simulation).
# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Selective or full recompute, once FlashAttention is on? · 用了 FlashAttention 还要选择性重计算吗？
# %% tags=["nbval-check-output"]
s_, b_, h_, a_, t_ = 2048, 1, 12288, 96, 8                     # Korthikanti et al.'s GPT-3 175B shape, TP 8 + SP
act = {r: korthikanti_layer_bytes(s_, b_, h_, a_, t_, sequence_parallel=True, recompute=r)
       for r in ("none", "selective", "full")}
# its FLOPs per token: 175B parameters, 96 layers of 96 heads of 128 (PaLM App. B; + a second forward when full)
extra = {r: palm_flops_per_token(175 * 10**9, 96, 96, 128, s_, recompute=r) /
         palm_flops_per_token(175 * 10**9, 96, 96, 128, s_) - 1 for r in ("selective", "full")}
print({r: f"{v / 2**20:.0f} MiB" for r, v in act.items()}, {r: f"{v:+.1%}" for r, v in extra.items()})
# %% jupyter={"source_hidden": true} tags=["remove-input"]
f2_none, f2_sel, f2_full = f"{act['none'] / 2**20:,.0f} MiB", f"{act['selective'] / 2**20:,.0f} MiB", \
    f"{act['full'] / 2**20:,.0f} MiB"
f2_saved = f"{1 - act['selective'] / act['none']:.0%}"
f2_full_c = f"{extra['full']:+.0%}"
# %% [markdown]
# Per layer of GPT-3 175B at 2,048 tokens (tensor and sequence parallel over 8; `memlib.training.activations
# .korthikanti_layer_bytes`, Korthikanti et al. 2022): {eval}`f2_none` stored, {eval}`f2_sel` with selective
# recompute (the attention's s² softmax, dropout mask and scores recomputed: {eval}`f2_saved` less), {eval}`f2_full`
# with full recompute (only the layer input), which costs {eval}`f2_full_c` of compute. A fused attention kernel
# (FlashAttention, cuDNN) never stores the s² tensors, so it already gives selective's saving: Megatron's
# `--recompute-granularity selective` recomputes `--recompute-modules`, "default is core_attn" (Megatron-LM
# arguments.py), which then saves almost nothing; what still saves memory are the other modules (mlp, layernorm,
# moe_act) or full recompute.
# %% [markdown] slideshow={"slide_type": "subslide"}
# ### What are 2D and 3D tensor parallelism? · 2D/3D 张量并行是什么？
#
# Megatron's split is 1D: each weight split along one dimension, the activations whole on every GPU (or split
# by sequence) and all-reduced over all t GPUs, so each GPU's traffic does not shrink as t grows. 2D (Optimus, Xu et al. 2021; SUMMA) arranges the
# GPUs in a √t × √t grid and splits both the weights and the activations along both, broadcasting blocks along
# rows and columns; 3D (Bian et al. 2021) uses a cube. Per-GPU memory and traffic shrink with t faster than 1D,
# at the cost of more, smaller messages; Colossal-AI implements them. Interviews ask for the idea; memlib does not
# compute them.
# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9. Pitfalls · 避坑
#
# - **"All-reduce sends the tensor once."** A ring sends 2(n−1)/n of it from every GPU: almost twice.
# - **Quoting nccl-tests' algbw as the link.** busbw is comparable with the link; algbw is B/t.
# - **Bits vs bytes.** 400 Gb/s InfiniBand is {eval}`p_ib` each way; 10 GbE is {eval}`p_eth`.
# - **Tensor parallelism across nodes.** Its traffic grows with the tokens: {eval}`s4_tpib`× the compute on InfiniBand.
# - **FSDP with gradient accumulation.** It gathers the parameters again for every micro-batch.
# - **"Bigger batch fixes communication."** Only for data parallelism and FSDP.
# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10. Deep dive (skip on first read) · 深入（可跳过）
#
# On its own page, [10 · deep dive](10_communication_deep_dive.ipynb): the fact-check of the communication rules
# of thumb, the collectives and ZeRO's sharding drawn, nccl-tests' bus bandwidth, ZeRO's 1.5×, the pipeline's
# schedules side by side, context parallelism's ring and Ulysses.
# %% [markdown] slideshow={"slide_type": "slide"}
# ## 11. Further reading · 延伸阅读
#
# - Thakur, Rabenseifner & Gropp 2005, *Optimization of Collective Communication Operations in MPICH*, [doi:10.1177/1094342005051521](https://doi.org/10.1177/1094342005051521)
# - Patarasuk & Yuan 2009, *Bandwidth optimal all-reduce algorithms for clusters of workstations*, [doi:10.1016/j.jpdc.2008.09.002](https://doi.org/10.1016/j.jpdc.2008.09.002)
# - Jeaugey 2019, *Massively Scale Your Deep Learning Training with NCCL 2.4* (double binary trees), [NVIDIA blog](https://developer.nvidia.com/blog/massively-scale-deep-learning-training-nccl-2-4/)
# - NVIDIA, *nccl-tests: performance* (algbw and busbw), [github.com/NVIDIA/nccl-tests](https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md)
# - Li et al. 2020, *PyTorch Distributed: Experiences on Accelerating Data Parallel Training* (buckets), [arXiv:2006.15704](https://arxiv.org/abs/2006.15704)
# - Shoeybi et al. 2019, *Megatron-LM*, [arXiv:1909.08053](https://arxiv.org/abs/1909.08053); Korthikanti et al. 2022, [arXiv:2205.05198](https://arxiv.org/abs/2205.05198)
# - Narayanan et al. 2021, *Efficient Large-Scale Language Model Training on GPU Clusters*, [arXiv:2104.04473](https://arxiv.org/abs/2104.04473)
# - Qi et al. 2024, *Zero Bubble Pipeline Parallelism*, [arXiv:2401.10241](https://arxiv.org/abs/2401.10241); DeepSeek-AI 2024, *DeepSeek-V3* (DualPipe), [arXiv:2412.19437](https://arxiv.org/abs/2412.19437)
# - Austin et al. 2025, *How to Scale Your Model*, [jax-ml.github.io/scaling-book](https://jax-ml.github.io/scaling-book/); Hugging Face, *The Ultra-Scale Playbook*, [huggingface.co/spaces/nanotron/ultrascale-playbook](https://huggingface.co/spaces/nanotron/ultrascale-playbook)
# - Xu et al. 2021, *An Efficient 2D Method for Training Super-Large Deep Learning Models* (Optimus), [arXiv:2104.05343](https://arxiv.org/abs/2104.05343); Bian et al. 2021, *Maximizing Parallelism in Distributed Training for Huge Neural Networks* (3D), [arXiv:2105.14450](https://arxiv.org/abs/2105.14450)
