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
# # 02 · One GPU: how large a model can you train, fine-tune or serve? · 单卡能训多大的模型
#
# ## 1. The question · 问题
#
# > **想要训练1个LLM，如果只想用1张显卡，那么对显卡的要求是什么** <br> *You want to train an LLM on a single GPU. What does that demand of the GPU?*
#
# **Reading time:** core path ~14 min; the [deep dive](02_single_gpu_limits_deep_dive.ipynb) (fact-check, every card, more follow-ups) is its own page.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
# %matplotlib inline
import matplotlib.pyplot as plt
from IPython.display import Markdown, display

import memlib
from memlib.learn.chapters.ch02 import (A100, B, CARDS, LADDER, LORA, M7, MB, MFU, SEQ, largest,
                                        offload_vs_baseline, spoken, verdict)
from memlib import cost, estimate_inference, estimate_training, fits, gb, gib
from memlib.training.explain import markdown_table
from memlib.hardware.fit import max_peak_bytes
from memlib.hardware.fit import largest_size_that_fits
from memlib.models.llama_like import ladder
from memlib.learn.playgrounds import Playground
from memlib.units import fmt_count
from memlib.learn.viz import breakdown_bars, sweep
from memlib.parallel.zero import deepspeed_zero2_estimate


# Each recipe maps a model to a memlib estimate. Training: memlib.estimate_training with the common
# recipe's defaults (PyTorch AMP "bf16-mixed", bare torch's foreach AdamW; "fused": HF Trainer's AdamW on torch
# >= 2.8, torchtitan's; LoRA/QLoRA: 16-bit or NF4 frozen
# base, autocast, fp32 adapters as PEFT keeps them). Serving: memlib.estimate_inference, batch 1, 4,096 tokens.
RECIPES = {
    "full · AdamW": lambda m: estimate_training(m, SEQ, MB),
    "full · fused AdamW": lambda m: estimate_training(m, SEQ, MB, optimizer_impl="fused"),
    "full · 8-bit AdamW + recompute": lambda m: estimate_training(m, SEQ, MB, optimizer="adamw-8bit",
                                                                   recompute="full"),
    "full · ZeRO-Offload + recompute": lambda m: estimate_training(m, SEQ, MB, zero_stage=2, offload="optimizer",
                                                                    recompute="full"),
    "LoRA + recompute": lambda m: estimate_training(m, SEQ, MB, finetune="lora", recompute="full", **LORA),
    "QLoRA + recompute": lambda m: estimate_training(m, SEQ, MB, finetune="qlora", recompute="full", **LORA),
    "full · pure bf16 + 8-bit AdamW + recompute": lambda m: estimate_training(m, SEQ, MB, optimizer="adamw-8bit",
                                                                              precision="bf16", recompute="full"),
    "serve · bf16": lambda m: estimate_inference(m, batch=1, context_len=4096, weights="bf16"),
    "serve · int4 (AWQ)": lambda m: estimate_inference(m, batch=1, context_len=4096, weights="int4-awq"),
}
SHORT = {"full · AdamW": "full, AdamW", "full · fused AdamW": "full, fused AdamW", "full · 8-bit AdamW + recompute": "full, 8-bit AdamW + rc",
         "full · ZeRO-Offload + recompute": "full, ZeRO-Offload + rc", "LoRA + recompute": "LoRA + rc",
         "QLoRA + recompute": "QLoRA + rc", "full · pure bf16 + 8-bit AdamW + recompute": "full, pure bf16 + 8-bit",
         "serve · bf16": "serve bf16", "serve · int4 (AWQ)": "serve int4 (AWQ)"}
_done, _limits = {}, {}


def estimate(recipe, model):
    """RECIPES[recipe](model), computed once per (recipe, model)."""
    key = (recipe, model.name)
    if key not in _done:
        _done[key] = RECIPES[recipe](model)
    return _done[key]


def limit(recipe, gpu):
    """The largest LLaMA-like shape memlib.fits under the recipe, searched continuously
    (memlib.hardware.fit.largest_size_that_fits: width and depth interpolated along the ladder)."""
    if (recipe, gpu) not in _limits:
        _limits[recipe, gpu] = largest_size_that_fits(gpu, lambda m: estimate(recipe, m))
    return _limits[recipe, gpu]


def size(recipe, gpu):
    """limit(), as said aloud ('4B')."""
    best = limit(recipe, gpu)
    return B(best.num_params) if best else "nothing"


# The figures the 30-second answer quotes; the steps below derive each one.
amp7 = estimate("full · AdamW", M7)
a_bpp = f"{spoken(amp7.model_state_bytes / M7.num_params)}"
a_tmp_bpp = f"{spoken(amp7.counts['optimizer_temporary_bytes'] / M7.num_params)}"   # foreach AdamW's copy of v
a_full, a_fused = f"{size('full · AdamW', A100)}", f"{size('full · fused AdamW', A100)}"
a_qlora = f"{size('QLoRA + recompute', A100)}"
_x8 = limit("full · 8-bit AdamW + recompute", A100).num_params / limit("full · AdamW", A100).num_params
a_8bit_x = {2: "doubles", 3: "triples"}.get(round(_x8), f"multiplies by {_x8:.1f}")   # said as a word
a_8bit_zh = {2: "翻倍", 3: "翻三倍"}.get(round(_x8), f"乘以 {_x8:.1f}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. The 30-second answer · 30 秒回答
#
# > **EN** Count bytes per parameter at the peak. Mixed-precision AdamW keeps {eval}`a_bpp`, plus
# > {eval}`a_tmp_bpp` for torch's foreach step: an A100 80GB fully trains about {eval}`a_full` (about
# > {eval}`a_fused` with fused AdamW). Levers: 8-bit AdamW with recompute {eval}`a_8bit_x` it; LoRA, or QLoRA
# > up to about {eval}`a_qlora`. ZeRO shards nothing on one GPU; CPU offload buys size with host RAM and a
# > slower step. Caveat: one short sequence per step; longer ones lower these limits.
#
# > **中文** 按峰值时每参数字节数算。混合精度 AdamW 每参数 {eval}`a_bpp` 字节，torch 的 foreach step 再加
# > {eval}`a_tmp_bpp`：A100 80GB 全量约 {eval}`a_full`（fused AdamW 约 {eval}`a_fused`）。手段：8-bit AdamW
# > 加重计算让它{eval}`a_8bit_zh`；LoRA，或 QLoRA 约 {eval}`a_qlora`。单卡上 ZeRO 无可分片，
# > CPU 卸载用内存和速度换规模。注意：这是每步一条短序列时的上限。
#
# The long answer follows: every figure above is derived in section 5.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. What the interviewer is probing · 考察意图
#
# - **A memory model, not a slogan**: bytes per parameter and per token, and the *peak* of a step, not a
#   sum. Seed 001 says "about 7B on an A100 80GB, 13B+ basically impossible" (checked on the deep dive).
# - **Which tricks are real on one GPU**: recompute and 8-bit states are; ZeRO partitions over peers, so
#   with one GPU it partitions nothing.
# - **"Train" is three jobs**: full fine-tuning, LoRA/QLoRA and serving; give the limit of each.
# - **The rest of the requirement**: host RAM for offload, the generation for bf16 or fp8, and time.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Words we use · 术语
#
# - **GB / GiB**: 10⁹ / 2³⁰ bytes; a card's "80GB" is 80 GiB. **s, b, h**: sequence, micro-batch, hidden size.
# - **Model states**: weights, gradients and optimizer states (AdamW's fp32 moments m, v).
# - **AMP**: fp32 states, bf16 matmuls under `autocast`. **foreach AdamW**: bare torch's default; its step copies v. **fused AdamW** (HF Trainer on torch ≥ 2.8, torchtitan): no copy.
# - **8-bit AdamW**: m, v in 8 bits (bitsandbytes). **Recompute**: keep layer inputs, rerun the forward.
# - **ZeRO-1/2/3**: shard optimizer / + gradients / + weights over GPUs; **ZeRO-Offload**: states in host RAM.
# - **LoRA / QLoRA**: rank-r adapters on a frozen 16-bit / 4-bit (NF4) base. **KV cache**: kept keys, values.
# - **Compute capability (sm_XY)**: 7.0 Volta, 8.0 Ampere, 8.9 Ada, 9.0 Hopper. **MFU**: share of peak FLOP/s.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. The answer, step by step · 推导
#
# ### Step 1 · What an "80GB" card holds
#
# ✏️ **Back of the envelope.** 80 GiB = 80 × 1.074 = 86 GB. Keep ~0.5 GB for the CUDA context and
# ~5% for the allocator: a tensor peak of about **80 GB** fits.

# %% tags=["nbval-check-output"]
a100 = memlib.get_gpu(A100)  # memlib.get_gpu: nominal capacity and what torch reports
peak_ok = max_peak_bytes(a100)  # memlib.hardware.fit.max_peak_bytes: the largest tensor peak memlib.fits accepts
print(f"A100 80GB: {a100.memory_gib:.0f} GiB nominal, torch sees {gib(a100.torch_total_bytes):.2f} GiB")
print(f"largest peak that fits: {gb(peak_ok):.2f} GB (pencil: 80 GB)")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s1_torch, s1_peak = f"{gib(a100.torch_total_bytes):.2f} GiB", f"{gb(peak_ok):.1f} GB"
s1_err, s1_driver = f"{abs(peak_ok / 80e9 - 1):.1%}", f"{1 - a100.torch_total_bytes / a100.memory_bytes:.1%}"
s1_l40s = f"{gib(memlib.get_gpu('l40s').torch_total_bytes):.1f} GiB"

# %% [markdown]
# torch sees **{eval}`s1_torch`** of the card, and the largest tensor peak `memlib.fits` accepts is
# **{eval}`s1_peak`**: the pencil was within {eval}`s1_err`. It left out the driver's reservation
# ({eval}`s1_driver` of the card). GDDR6 cards with ECC on lose more: an L40S "48GB" shows {eval}`s1_l40s`.

# %% [markdown]
# ### Step 2 · Bytes per parameter at the peak: 16, and 4 more with foreach AdamW
#
# [Chapter 00](00_memory_anatomy.ipynb) (steps 2 and 5) derives the 16 B/param of mixed-precision AdamW and
# where the peak sits; here only what it means for one card.
#
# ✏️ **Back of the envelope.** 7e9 × 16 B = **112 GB**: more than the 80 GB of step 1 before a single
# activation. At the step, foreach AdamW adds a copy of v (4 B): 20 B/param.

# %% tags=["nbval-check-output"]
N7 = M7.num_params  # memlib.estimate_training(llama-7b) in the setup cell: AMP, foreach AdamW
bpp = amp7.model_state_bytes / N7
step_extra = amp7.counts["optimizer_temporary_bytes"]  # foreach AdamW's copy of the second moments
print(f"llama-7b: {N7:,} parameters; states {gb(amp7.model_state_bytes):.1f} GB ({bpp:.0f} B/param)")
print(f"foreach AdamW temporary {gb(step_extra):.1f} GB; peak {gb(amp7.peak_bytes):.1f} GB ({amp7.phase})")
fused7 = estimate("full · fused AdamW", M7)
print(f"fused AdamW: peak {gb(fused7.peak_bytes):.1f} GB ({fused7.phase})")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s2_states, s2_low = f"{gb(amp7.model_state_bytes):.1f} GB", f"{amp7.model_state_bytes / 112e9 - 1:+.1%}"
s2_n, s2_peak, s2_phase = f"{fmt_count(N7)}", f"{gb(amp7.peak_bytes):.1f} GB", f"{amp7.phase}"
s2_over, s2_tmp = f"{amp7.peak_bytes / 112e9 - 1:+.0%}", f"{gb(step_extra):.1f} GB"
s2_fused, s2_fused_phase = f"{gb(fused7.peak_bytes):.1f} GB", f"{fused7.phase}"

# %% [markdown]
# llama-7b has {eval}`s2_n` parameters, so its states are **{eval}`s2_states`** ({eval}`s2_low` against the
# pencil's 7B). With foreach AdamW the peak is **{eval}`s2_peak`**, in the {eval}`s2_phase` step, where the
# copy of v adds {eval}`s2_tmp`. Fused AdamW (`optimizer_impl="fused"`) and DeepSpeed's FusedAdam allocate
# none: the peak is then **{eval}`s2_fused`**, in the {eval}`s2_fused_phase`.

# %% [markdown]
# ### Step 3 · 7B on one A100 80GB: the seed's menu, peak by peak
#
# ✏️ **Back of the envelope.** 8-bit AdamW under AMP: fp32 weights 4 + fp32 gradients 4 + 8-bit m, v 2
# = 10 B/param → 7e9 × 10 = 70 GB, + ~1 GB of recomputed activations ≈ **71 GB < 80 GB: fits**.
# ZeRO-1 on one GPU divides the optimizer by dp = 1: nothing.

# %% tags=["nbval-check-output"]
# one memlib.estimate_training per item; the verdict is memlib.fits on an A100 80GB
rc7 = estimate_training(M7, SEQ, MB, recompute="full")
MENU = {
    "AdamW (AMP)": amp7,
    "+ full recompute": rc7,
    "+ 8-bit AdamW": estimate("full · 8-bit AdamW + recompute", M7),
    "ZeRO-1, one GPU": estimate_training(M7, SEQ, MB, zero_stage=1, dp=1),
    "ZeRO-Offload": estimate("full · ZeRO-Offload + recompute", M7),
    "LoRA": estimate("LoRA + recompute", M7),
    "QLoRA": estimate("QLoRA + recompute", M7),
}
v = {k: fits(e, A100) for k, e in MENU.items()}
e8 = MENU["+ 8-bit AdamW"]
print("ZeRO-1 on one GPU == plain AMP:", MENU["ZeRO-1, one GPU"].peak_bytes == amp7.peak_bytes)
print(f"8-bit AdamW + recompute: {gb(e8.peak_bytes):.1f} GB, pencil 71 GB")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
rows = [(k, f"{gb(e.peak_bytes):.1f} GB", e.phase, "fits" if v[k].fits else "does not fit",
         f"{v[k].margin_gib:+.1f} GiB", f"{gb(e.host_bytes):.0f} GB" if e.host_bytes else "")
        for k, e in MENU.items()]
display(Markdown(markdown_table(rows, ["llama-7b, 2,048 tokens", "peak", "phase", "A100 80GB", "margin",
                                       "host RAM"])))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s3_8, s3_8err, s3_8v = f"{gb(e8.peak_bytes):.1f} GB", f"{e8.peak_bytes / 71e9 - 1:+.0%}", f"{verdict(e8, A100)}"
s3_margin, s3_rc = f"{v['+ 8-bit AdamW'].margin_gib:.1f} GiB", f"{gb(rc7.peak_bytes):.1f} GB"
s3_note = f"{MENU['ZeRO-1, one GPU'].notes[0]}"
s3_off, s3_off_host = f"{gb(MENU['ZeRO-Offload'].peak_bytes):.1f} GB", f"{gb(MENU['ZeRO-Offload'].host_bytes):.0f} GB"

# %% [markdown]
# 8-bit AdamW + recompute peaks at **{eval}`s3_8`** ({eval}`s3_8err` against the pencil) and {eval}`s3_8v`,
# {eval}`s3_margin` to spare: the peak sits at the end of the backward, where most activations are freed.
# Recompute alone changes nothing ({eval}`s3_rc`: the peak is the optimizer step). ZeRO-1 on one GPU is the
# plain peak (memlib: "{eval}`s3_note`"). ZeRO-Offload leaves **{eval}`s3_off`** on the GPU and moves
# {eval}`s3_off_host` to host RAM.

# %% [markdown]
# ### Step 4 · The largest model per GPU and recipe
#
# The search runs over memlib's **LLaMA-like shapes** (width and depth interpolated between LLaMA-7B, 13B,
# 33B and 65B; `memlib.models.llama_like`), bisected to 1%: shapes, not checkpoints.
#
# ✏️ **Back of the envelope.** Divide the ~80 GB of step 1 by the bytes per parameter at the peak:
# full AdamW 20 → **4B**; 8-bit AdamW 10 → **8B**; ZeRO-Offload and LoRA, 16-bit weights 2 → **40B**;
# QLoRA, NF4 ≈ 0.55 → **145B**; serving bf16 2 → **40B**, int4 ≈ 0.55 → **145B**.

# %% tags=["nbval-check-output"]
# memlib.hardware.fit.largest_size_that_fits: the largest interpolated shape memlib.fits (to 1%)
PENCIL = {"full · AdamW": 4e9, "full · 8-bit AdamW + recompute": 8e9, "full · ZeRO-Offload + recompute": 40e9,
          "LoRA + recompute": 40e9, "QLoRA + recompute": 145e9, "serve · bf16": 40e9,
          "serve · int4 (AWQ)": 145e9}  # the pencil's figures above
largest_table = markdown_table([(SHORT[r], *(size(r, g) for g in CARDS)) for r in RECIPES if "pure" not in r
                                and "fused" not in r],
                               ["largest size that fits", "RTX 4090 24GB", "L40S 48GB", "A100 80GB",
                                "H200 141GB"])
ratio = {r: p / limit(r, A100).num_params for r, p in PENCIL.items()}
off_limit = limit("full · ZeRO-Offload + recompute", A100)
off_host = estimate("full · ZeRO-Offload + recompute", off_limit).host_bytes  # memlib: the offloaded states
ds_cpu, _ = deepspeed_zero2_estimate(off_limit.num_params, cpu_offload=True)  # DeepSpeed's own estimator
print(f"pencil / memlib on an A100 80GB: {min(ratio.values()):.2f} to {max(ratio.values()):.2f}")
print(f"ZeRO-Offload limit {fmt_count(off_limit.num_params)}: host {gb(off_host):.0f} GB "
      f"({off_host / off_limit.num_params:.0f} B/param); DeepSpeed's estimator {gb(ds_cpu):.0f} GB")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(largest_table))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s4_err = f"{max(abs(x - 1) for x in ratio.values()):.0%}"
s4_off, s4_host = f"{B(off_limit.num_params)}", f"{gb(off_host):.0f} GB"
s4_host_bpp, s4_ds = f"{off_host / off_limit.num_params:.0f}", f"{gb(ds_cpu):.0f} GB"
s4_ds_bpp = f"{ds_cpu / off_limit.num_params:.0f}"
s4_slow = f"{offload_vs_baseline(A100, 1)[0].step_s / offload_vs_baseline(A100, 1)[1]:.1f}x"

# %% [markdown]
# The pencil is within {eval}`s4_err` of every A100 limit: what it leaves out (activations, logits, the KV
# cache, the 16-bit embedding and head that 4-bit formats keep) is small beside the states. Offload's
# limit is the GPU's; the host holds the rest. At the {eval}`s4_off` shape that is **{eval}`s4_host` of
# RAM**: {eval}`s4_host_bpp` B/param (fp32 master, m, v and an fp32 gradient). DeepSpeed's own estimator
# (`estimate_zero2_model_states_mem_needs`, ×1.5 for its buffers) asks **{eval}`s4_ds`**
# ({eval}`s4_ds_bpp` B/param). And a 7B step takes {eval}`s4_slow` its compute (PCIe and CPU Adam; every card
# on the deep dive). A real model with a larger vocabulary (Llama 3, Qwen2) needs more than its shape.

# %% [markdown]
# ### Step 5 · Beyond bytes: the GPU's generation, and the clock
#
# ✏️ **Back of the envelope.** bf16 tensor cores need compute capability 8.0 (Ampere); fp8 ones 8.9
# (Ada) or 9.0 (Hopper). Pre-training time is 6·N·D FLOPs: 6 × 7e9 × 1e12 tokens = 4.2e22 FLOP; one
# A100 at 40% of 312 TFLOP/s does 1.25e14 FLOP/s → 3.4e8 s ≈ **3,900 days, 11 years**.

# %% tags=["nbval-check-output"]
gens = {n: memlib.get_gpu(n) for n in ("v100-32gb", A100, "rtx-4090", "h100-80gb")}  # the GPU catalog
print("compute capability:", ", ".join(f"{n} {g.compute_capability}" for n, g in gens.items()))
print("no bf16:", [n for n, g in gens.items() if not g.supports_bf16], "; fp8:", [n for n, g in gens.items() if g.fp8_tflops])
flops_6nd = cost.training_flops(M7, 1e12)  # memlib.cost: 6·N·D (Kaplan et al. 2020)
days_6nd = cost.gpu_hours(flops_6nd, A100, mfu=MFU) / 24  # memlib.cost.gpu_hours: / (peak x MFU)
run_ft = cost.training_run(M7, 1e8, A100, 1, hfu=MFU, seq_len=SEQ, recompute="full")  # a fine-tune, 8N + 16LHQT
print(f"7B on 1T tokens: {flops_6nd:.2e} FLOP, {days_6nd:,.0f} days on one A100 at {MFU:.0%} MFU (6N per token)")
print(f"7B fine-tune on 100M tokens with recompute: {run_ft.gpu_hours:.0f} A100-hours at {run_ft.hfu:.0%} HFU "
      f"= {run_ft.mfu:.0%} MFU")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s5_days, s5_years = f"{days_6nd:,.0f} days", f"{days_6nd / 365:.0f} years"
s5_err, s5_ft = f"{days_6nd / 3900 - 1:+.0%}", f"{run_ft.gpu_hours:.0f} hours"
s5_v100, s5_t4, s5_a100 = f"{gens['v100-32gb'].compute_capability}", f"{memlib.get_gpu('t4').compute_capability}", f"{gens[A100].compute_capability}"
s5_4090, s5_h100 = f"{gens['rtx-4090'].compute_capability}", f"{gens['h100-80gb'].compute_capability}"
s5_mfu = f"{MFU:.0%}"
s5_ft_hfu, s5_ft_mfu = f"{run_ft.hfu:.0%}", f"{run_ft.mfu:.0%}"

# %% [markdown]
# V100 ({eval}`s5_v100`) and T4 ({eval}`s5_t4`) have fp16 tensor cores only: train in fp16 with a loss scaler
# (notebook 01, step 7). bf16 starts with the A100 ({eval}`s5_a100`); fp8 matmuls (`torch._scaled_mm`,
# Transformer Engine) need an RTX 4090 or L40S ({eval}`s5_4090`) or an H100 ({eval}`s5_h100`). And memory is
# not time: 1T tokens on one A100 take **{eval}`s5_days`** ({eval}`s5_years`; the pencil is {eval}`s5_err`
# off) at {eval}`s5_mfu` MFU, counting 6N per token (no attention, no recompute). One GPU fine-tunes: 100M
# tokens take about {eval}`s5_ft` with recompute, counting what the GPU runs, 8N plus attention, at
# {eval}`s5_ft_hfu` of peak (HFU; that is {eval}`s5_ft_mfu` MFU, which counts no recompute).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Charts · 图
#
# **Takeaway: the gap between the full fine-tuning lines and the QLoRA / int4 lines is the whole answer.**
# Peak against model size along the ladder, RTX 4090 (left) and A100 80GB (right), capacity dashed
# (`memlib.learn.viz.sweep`, lines on a log scale).

# %% jupyter={"source_hidden": true} tags=["hide-input"]
xs = [m.num_params / 1e9 for m in LADDER]
SWEEP = ["full · AdamW", "full · 8-bit AdamW + recompute", "full · ZeRO-Offload + recompute", "LoRA + recompute",
         "QLoRA + recompute", "serve · bf16", "serve · int4 (AWQ)"]
series = {SHORT[r]: [estimate(r, m).peak_bytes for m in LADDER] for r in SWEEP}
fig, axes = plt.subplots(1, 2, figsize=(8, 3.3), sharey=True)
for ax, g in zip(axes, ("rtx-4090", A100)):
    sweep(xs, series, gpu=g, xlabel="parameters (billions, LLaMA-like ladder)", ax=ax, logx=True, title=g)
    ax.set_yscale("log")
    ax.legend(fontsize=5, loc="upper left")
plt.tight_layout()
plt.show()

# %% [markdown]
# **Takeaway: ZeRO-1 on one GPU is the same bar as plain AMP; only 8-bit states, offload or adapters
# shrink the optimizer block.** What is alive at the peak for llama-7b on one A100 80GB, per item of
# step 3 (`memlib.learn.viz.breakdown_bars`, linear scale).

# %% jupyter={"source_hidden": true} tags=["hide-input"]
fig, ax = plt.subplots(figsize=(8, 3.4))
breakdown_bars(MENU, gpu=A100, ax=ax, title="llama-7b, seq 2048, batch 1, one A100 80GB")
ax.tick_params(axis="x", rotation=20)
ax.set_ylim(0, 1.12 * ax.get_ylim()[1])
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. Playground · 动手试
#
# Try: llama-7b on a100-80gb, full fine-tune; set recompute to "full" (nothing changes), ZeRO to
# "ZeRO-1" (nothing changes on one GPU), then "ZeRO-3 + offload optimizer"; then set the GPU to
# rtx-4090, the method to LoRA and QLoRA, and raise the sequence length until it stops fitting.

# %%
Playground(model="llama-7b", gpu=A100)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8. Follow-up questions · 追问
#
# ### 追问 1 · 24, 48 and 80 GB cards: how large a model on each? (seed)

# %% jupyter={"source_hidden": true} tags=["remove-input"]
f1_4090_full, f1_4090_off = f"{size('full · 8-bit AdamW + recompute', 'rtx-4090')}", f"{size('full · ZeRO-Offload + recompute', 'rtx-4090')}"
f1_4090_lora, f1_4090_qlora = f"{size('LoRA + recompute', 'rtx-4090')}", f"{size('QLoRA + recompute', 'rtx-4090')}"
f1_l40s_full, f1_l40s_qlora = f"{size('full · 8-bit AdamW + recompute', 'l40s')}", f"{size('QLoRA + recompute', 'l40s')}"
f1_h200_full = f"{size('full · 8-bit AdamW + recompute', 'h200')}"

# %% [markdown]
# Read step 4's table by column. A 24 GB RTX 4090 fully fine-tunes only **{eval}`f1_4090_full`** with the
# states on the card ({eval}`f1_4090_off` with ZeRO-Offload); its real uses are LoRA up to
# **{eval}`f1_4090_lora`** and QLoRA up to **{eval}`f1_4090_qlora`**. A 48 GB L40S: {eval}`f1_l40s_full` full,
# {eval}`f1_l40s_qlora` QLoRA. An H200: {eval}`f1_h200_full` full. Every card, the RTX A6000 against the
# L40S (ECC), and what nvidia-smi shows: on the deep-dive page.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### 追问 2 · Does ZeRO-3 help on one GPU? (seed)

# %% jupyter={"source_hidden": true} tags=["remove-input"]
f2_same = f"{gb(estimate_training(M7, SEQ, MB, zero_stage=3, dp=1).peak_bytes):.1f} GB"
f2_gpu = f"{gb(estimate_training(M7, SEQ, MB, recompute='full', zero_stage=3, offload='optimizer+params').peak_bytes):.1f} GB"
f2_host = f"{gb(estimate_training(M7, SEQ, MB, recompute='full', zero_stage=3, offload='optimizer+params').host_bytes):.0f} GB"

# %% [markdown]
# No: `zero_stage` 0 to 3 with one GPU all give the plain **{eval}`f2_same`** for llama-7b (step 3's table).
# What helps is DeepSpeed's *offload* half: ZeRO-Offload or, with stage 3, parameter offload too
# (ZeRO-Infinity): **{eval}`f2_gpu`** on the GPU and {eval}`f2_host` in host RAM, paid in PCIe traffic.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### 追问 3 · What does checkpointing save at the peak, and cost? (seed)

# %% tags=["nbval-check-output"]
act_none, act_full = largest(amp7, "activations"), largest(rc7, "activations")  # the estimates' moments
f_none, f_full = (memlib.flops_per_token(M7, SEQ, rc) for rc in ("none", "full"))  # 6N (+2N) + attention
e8_norc = estimate_training(M7, SEQ, MB, optimizer="adamw-8bit")
print(f"activations {gb(act_none):.1f} -> {gb(act_full):.2f} GB; FLOPs/token {f_none:.3e} -> {f_full:.3e}")
print(f"peak, 8-bit AdamW: {gb(e8_norc.peak_bytes):.1f} GB ({e8_norc.phase}) -> {gb(e8.peak_bytes):.1f} GB")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
f3_none, f3_full, f3_more = f"{gb(act_none):.1f} GB", f"{gb(act_full):.2f} GB", f"{f_full / f_none - 1:.0%}"
f3_amp, f3_8 = f"{gb(amp7.peak_bytes - rc7.peak_bytes):.1f} GB", f"{gb(e8_norc.peak_bytes - e8.peak_bytes):.1f} GB"
f3_v = f"{verdict(e8_norc, A100) + ' an A100 80GB without it and ' + verdict(e8, A100) + ' with it' if verdict(e8_norc, A100) != verdict(e8, A100) else verdict(e8, A100) + ' an A100 80GB either way'}"

# %% [markdown]
# Full recompute keeps **{eval}`f3_full`** of activations instead of **{eval}`f3_none`** (a LLaMA layer saves
# more than GPT's 34·s·b·h: the deep dive derives it) and adds one forward: {eval}`f3_more` more FLOPs per
# token. At the **peak** it saves only what is alive there: {eval}`f3_amp` with AdamW (the optimizer step),
# {eval}`f3_8` with 8-bit AdamW (the end of the backward): 7B with 8-bit AdamW {eval}`f3_v`. With a frozen
# base (LoRA), set `use_reentrant=False` or call `enable_input_require_grads()`, else the adapters get no gradient.
#
# More follow-ups (every card, activations layer by layer, LoRA's longest sequence and serving on a 4090,
# 13B on one GPU, PEFT with checkpointing and sequence packing, nvidia-smi against torch, offload's time
# on every card) are on the [deep-dive page](02_single_gpu_limits_deep_dive.ipynb).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9. Pitfalls · 避坑
#
# - **ZeRO without peers.** On one GPU only ZeRO's *offload* options save memory.
# - **The peak is not a sum.** Foreach AdamW peaks in the {eval}`s2_phase` step, where activations are gone;
#   "+ 3 GB of activations" double-counts one thing and misses foreach AdamW's {eval}`s2_tmp`.
# - **Offload needs host RAM**: {eval}`s3_off_host` for llama-7b, {eval}`s4_host` at the {eval}`s4_off` limit.
# - **Padding is paid twice**: pad tokens cost activation memory and FLOPs; pack short samples (deep dive).
# - **The wrong generation**: no bf16 tensor cores on a V100 or T4; fp8 needs sm_89 or newer.
# - **GB vs GiB**: "80GB" is 80 GiB nominal; torch sees {eval}`s1_torch`.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10. Deep dive (skip on first read) · 深入（可跳过）
#
# On its own page, [02 · deep dive](02_single_gpu_limits_deep_dive.ipynb): the fact-check of seed 001 (every
# claim, memlib's figure, a verdict), every card's limits, offload's time on three cards, the follow-ups
# above, the two bookkeeping conventions and the peak against sequence length.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 11. Further reading · 延伸阅读
#
# - Rajbhandari et al. 2020, *ZeRO: Memory Optimizations Toward Training Trillion Parameter Models*, [arXiv:1910.02054](https://arxiv.org/abs/1910.02054)
# - Ren et al. 2021, *ZeRO-Offload: Democratizing Billion-Scale Model Training*, [arXiv:2101.06840](https://arxiv.org/abs/2101.06840)
# - Dettmers et al. 2021, *8-bit Optimizers via Block-wise Quantization*, [arXiv:2110.02861](https://arxiv.org/abs/2110.02861)
# - Hu et al. 2021, *LoRA: Low-Rank Adaptation of Large Language Models*, [arXiv:2106.09685](https://arxiv.org/abs/2106.09685)
# - Dettmers et al. 2023, *QLoRA: Efficient Finetuning of Quantized LLMs*, [arXiv:2305.14314](https://arxiv.org/abs/2305.14314)
# - Chen et al. 2016, *Training Deep Nets with Sublinear Memory Cost* (gradient checkpointing), [arXiv:1604.06174](https://arxiv.org/abs/1604.06174)
# - Korthikanti et al. 2022, *Reducing Activation Recomputation in Large Transformer Models*, [arXiv:2205.05198](https://arxiv.org/abs/2205.05198)
# - Kaplan et al. 2020, *Scaling Laws for Neural Language Models* (6·N·D), [arXiv:2001.08361](https://arxiv.org/abs/2001.08361)
# - NVIDIA, *CUDA GPUs: compute capability*, [developer.nvidia.com/cuda-gpus](https://developer.nvidia.com/cuda-gpus)
# - PyTorch docs, *CUDA semantics: memory management* (caching allocator, `expandable_segments`), [pytorch.org](https://pytorch.org/docs/stable/notes/cuda.html#memory-management)
