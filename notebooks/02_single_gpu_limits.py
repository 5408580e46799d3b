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
# # 02 · One GPU: how large a model can you train, fine-tune or serve? · 单卡能训多大的模型
#
# **You will be able to answer:** the largest model a 24, 48 or 80 GB card fully fine-tunes,
# LoRA/QLoRA-tunes or serves; why ZeRO alone saves nothing on one GPU; what CPU offload costs.
#
# **Reading time:** core path ~15 min (sections 1-9); section 10 is a deep dive you can skip.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
# %matplotlib inline
import matplotlib.pyplot as plt
from IPython.display import Markdown, display

import memlib
from memlib import estimate_inference, estimate_training, fits, fmt_bytes, gb, gib, step_time
from memlib.activations import korthikanti_layer_bytes
from memlib.claims import claim_verdict, overall
from memlib.cost.conventions import optimizer_step_hbm_bytes, recompute_overhead
from memlib.explain import markdown_table
from memlib.fit import max_peak_bytes
from memlib.models.llama_like import ladder, largest_size_that_fits
from memlib.plan import Plan, max_micro_batch, max_seq_len
from memlib.playground import Playground
from memlib.units import fmt_count
from memlib.viz import breakdown_bars, sweep

SEQ, MB = 2048, 1  # the seed's setting: one sequence of 2,048 tokens per micro-batch
A100 = "a100-80gb"
GPUS = ["rtx-4090", "a100-40gb", "l40s", "a100-80gb", "h100-80gb", "h200"]
LORA = dict(lora_targets="all-linear", lora_rank=16)  # adapters on every projection, rank 16
M7 = memlib.get_model("llama-7b")
LADDER = ladder()  # LLaMA-like shapes from 0.37B to 175B (step 5)

# Each recipe maps a model to a memlib estimate. Training: memlib.estimate_training with the common
# recipe's defaults (PyTorch AMP "bf16-mixed", torch's foreach AdamW; LoRA/QLoRA: 16-bit or NF4 frozen
# base, autocast, fp32 adapters as PEFT keeps them). Serving: memlib.estimate_inference, batch 1, 4,096 tokens.
RECIPES = {
    "full · AdamW": lambda m: estimate_training(m, SEQ, MB),
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
_done = {}


def estimate(recipe, model):
    """RECIPES[recipe](model), computed once per (recipe, model)."""
    key = (recipe, model.name)
    if key not in _done:
        _done[key] = RECIPES[recipe](model)
    return _done[key]


_limits = {}


def limit(recipe, gpu):
    """The largest LLaMA-like shape memlib.fits under the recipe, searched continuously
    (memlib.models.llama_like.largest_size_that_fits: width and depth interpolated along the ladder)."""
    if (recipe, gpu) not in _limits:
        _limits[recipe, gpu] = largest_size_that_fits(gpu, lambda m: estimate(recipe, m))
    return _limits[recipe, gpu]


def size(recipe, gpu):
    """limit(), as said aloud ('4B')."""
    best = limit(recipe, gpu)
    return B(best.num_params) if best else "nothing"


def offload_vs_baseline(gpu, accum):
    """memlib.step_time of llama-7b under ZeRO-Offload + recompute, and the time it is compared with: plain
    AMP + recompute where that fits the GPU, else the offload run's own compute (the ideal)."""
    plain = estimate_training(M7, SEQ, MB, recompute="full", grad_accum=accum)
    off = estimate_training(M7, SEQ, MB, recompute="full", zero_stage=2, offload="optimizer", grad_accum=accum)
    t_off = step_time(off, gpu)
    plain_fits = fits(plain, gpu).fits
    return t_off, (step_time(plain, gpu).step_s if plain_fits else t_off.compute_s), plain_fits


def offload_slowdown(gpu, accum):
    """ZeRO-Offload's step time over its baseline (offload_vs_baseline)."""
    t, base, _ = offload_vs_baseline(gpu, accum)
    return t.step_s / base


def spoken(x):
    """A figure as said aloud: 2 significant figures, 3 from 100 up (134.9 -> '135', 6.74 -> '6.7')."""
    return f"{float(f'{x:.{3 if abs(x) >= 100 else 2}g}'):,g}"


def B(n):
    """A parameter count as said aloud ('33B')."""
    return f"{spoken(n / 1e9)}B"


def verdict(e, gpu):
    return "fits" if fits(e, gpu).fits else "does not fit"


# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. The question · 问题
#
# > 想要训练1个LLM，如果只想用1张显卡，那么对显卡的要求是什么
#
# *You want to train an LLM on a single GPU. What does that demand of the GPU?*

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. The 30-second answer · 30 秒回答

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"> **EN** Count bytes per parameter at the peak. Mixed-precision AdamW keeps "
    f"{spoken(estimate('full · AdamW', M7).model_state_bytes / M7.num_params)}, so an A100 80GB fully trains "
    f"only about {size('full · AdamW', A100)}. Levers: 8-bit AdamW with recompute (about "
    f"{size('full · 8-bit AdamW + recompute', A100)}), LoRA ({size('LoRA + recompute', A100)}) or QLoRA "
    f"({size('QLoRA + recompute', A100)}); ZeRO shards nothing on one GPU, and CPU offload buys size with host "
    f"RAM and a slower step. Caveat: these limits assume one short sequence per step; longer sequences lower "
    f"them.\n\n"
    f"> **中文** 按峰值时每参数字节数算。混合精度 AdamW 每参数 "
    f"{spoken(estimate('full · AdamW', M7).model_state_bytes / M7.num_params)} 字节，A100 80GB 全量只能训约 "
    f"{size('full · AdamW', A100)}。手段：8-bit AdamW 加重计算约 {size('full · 8-bit AdamW + recompute', A100)}，"
    f"LoRA 约 {size('LoRA + recompute', A100)}，QLoRA 约 {size('QLoRA + recompute', A100)}；单卡上 ZeRO 无可分片，"
    f"CPU 卸载用内存和速度换规模。注意：这是每步一条短序列时的上限，序列更长上限更低。\n\n"
    "The long answer follows: every figure above is derived in section 5."))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. What the interviewer is probing · 考察意图
#
# The circulating answer (seed 001): "以 A100 80GB 为例，能训的最大模型约 7B（需配合激进优化），而 13B+
# 基本不可能", with ZeRO-1 + 8-bit Adam + gradient checkpointing as its recipe (checked in section 10).
#
# - **A memory model, not a slogan.** Split the bytes into parameters, gradients, optimizer states
#   and activations, per parameter and per token, and find the *peak* of a step, not the sum.
# - **Which tricks are real on one GPU.** Recompute and 8-bit optimizer states shrink memory on any
#   GPU; ZeRO *partitions* states across data-parallel peers, so with one GPU it partitions nothing.
#   Offload moves states to the host and pays in PCIe traffic and CPU time.
# - **"Train" is three jobs.** Full fine-tuning, LoRA/QLoRA and serving differ by an order of
#   magnitude in bytes per parameter; a good answer gives the limit of each.
# - **Units.** An "80GB" GPU holds 80 GiB, and torch sees a little less; most write-ups add decimal GB.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Words we use · 术语
#
# - **GB / GiB**: 10⁹ bytes / 2³⁰ bytes (7.4% more). GPU makers' "80GB" means 80 GiB; torch and nvidia-smi print MiB.
# - **Model states**: parameters, gradients and optimizer states, alive for the whole step.
# - **AMP, bf16-mixed**: PyTorch automatic mixed precision: fp32 weights, gradients and optimizer
#   states, matmuls in bf16 under `autocast`.
# - **Master weights**: the fp32 copy of the weights the optimizer updates (AMP's weights themselves;
#   DeepSpeed counts it with the optimizer beside 16-bit working weights).
# - **AdamW m, v**: the two fp32 moments Adam keeps per parameter (momentum and variance).
# - **foreach AdamW**: torch's default CUDA AdamW; its step briefly allocates a copy of the second
#   moments (4 bytes per parameter).
# - **8-bit AdamW**: bitsandbytes' optimizer with m and v in 8 bits (plus one fp32 scale per 256 values).
# - **Activations**: tensors the forward saves for the backward. Korthikanti et al.'s sizes use
#   **s** (sequence length), **b** (micro-batch), **h** (hidden size), **a** (attention heads), **L** (layers).
# - **Recompute** (activation / gradient checkpointing): keep only each layer's input and rerun its
#   forward during the backward.
# - **Autocast copies**: the 16-bit copies of fp32 weights a matmul under autocast keeps until its backward.
# - **ZeRO stages**: DeepSpeed partitions over data-parallel GPUs the optimizer states (stage 1,
#   P_os), also the gradients (stage 2), also the parameters (stage 3).
# - **ZeRO-Offload / ZeRO-Infinity**: optimizer states (and fp32 gradients) kept and updated on the
#   CPU; ZeRO-Infinity also offloads the 16-bit parameters, to RAM or NVMe.
# - **LoRA**: train two small matrices per projection (rank r) beside a frozen base.
# - **QLoRA**: LoRA over a base stored in 4-bit **NF4** (NormalFloat4, with double-quantized scales).
# - **KV cache**: keys and values of every past token in every layer, kept while serving.
# - **MFU**: model-FLOPs utilisation, the fraction of the GPU's peak FLOP/s a step achieves.
# - **CUDA context, allocator headroom**: memory a process needs beyond its tensors; `memlib.fits`
#   budgets both (`memlib.fit.DEFAULT_CUDA_CONTEXT_BYTES`, `DEFAULT_ALLOCATOR_HEADROOM`).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. The answer, step by step · 推导
#
# ### Step 1 · What an "80GB" card holds

# %% [markdown]
# ✏️ **Back of the envelope.** 80 GiB = 80 × 1.074 = 86 GB. Keep ~0.5 GB for the CUDA context and
# ~5% for the allocator: a tensor peak of about **80 GB** fits.

# %% tags=["nbval-check-output"]
# memlib.get_gpu: the nominal capacity and what torch reports (torch.cuda.get_device_properties().total_memory);
# memlib.fit.max_peak_bytes: the largest tensor peak memlib.fits accepts (CUDA context + allocator headroom)
pencil_peak = 80e9  # the pencil's figure above
rows = []
for name in GPUS:
    g = memlib.get_gpu(name)
    rows.append((g.display_name, f"{g.memory_gib:.0f} GiB = {g.memory_gb:.1f} GB",
                 f"{g.torch_total_mib:,} MiB = {gib(g.torch_total_bytes):.2f} GiB", f"{gb(max_peak_bytes(g)):.1f} GB"))
gpu_table = markdown_table(rows, ["GPU", "nominal", "torch reports", "largest peak that fits"])
a100 = memlib.get_gpu(A100)
print(gpu_table)
print(f"A100 80GB: largest peak {gb(max_peak_bytes(a100)):.2f} GB; pencil {gb(pencil_peak):.0f} GB "
      f"({gb(max_peak_bytes(a100)) / gb(pencil_peak) - 1:+.1%})")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(gpu_table))
display(Markdown(
    f"torch sees **{gib(a100.torch_total_bytes):.2f} GiB** of an A100 80GB's {a100.memory_gib:.0f} GiB (the driver keeps "
    f"the rest), and after the context and headroom the largest tensor peak `memlib.fits` accepts is "
    f"**{gb(max_peak_bytes(a100)):.1f} GB**: the pencil was within "
    f"{abs(gb(max_peak_bytes(a100)) / gb(pencil_peak) - 1):.1%}. What it left out: the driver's reservation "
    f"({1 - a100.torch_total_bytes / a100.memory_bytes:.1%} of the card). Cards with ECC on GDDR6 lose more: an L40S "
    f"\"48GB\" shows {gib(memlib.get_gpu('l40s').torch_total_bytes):.1f} GiB."))

# %% [markdown]
# ### Step 2 · Model states: 16 bytes per parameter, and 4 more during torch's foreach AdamW step

# %% [markdown]
# ✏️ **Back of the envelope.** Mixed-precision AdamW: 16-bit weights 2 + gradients 2 + fp32 master 4
# + m 4 + v 4 = **16 B/param** (PyTorch AMP stores 4 + 4 + 8: the same 16). 7e9 × 16 B = **112 GB**:
# more than the 80 GB of step 1 before a single activation.

# %% tags=["nbval-check-output"]
# memlib.estimate_training(llama-7b): PyTorch AMP (bf16-mixed) with torch's default foreach AdamW
amp7 = estimate("full · AdamW", M7)
N7 = M7.num_params
pencil_states = 112e9  # the pencil's figure above
bpp = amp7.model_state_bytes / N7
step_extra = amp7.counts["optimizer_temporary_bytes"]
ds7 = estimate_training(M7, SEQ, MB, zero_stage=1, dp=2)  # DeepSpeed's layout; its unsharded counts
P_ds, G_ds, O_ds = (ds7.counts[k + "_unsharded"] for k in ("param_bytes", "grad_bytes", "optimizer_bytes"))
P_amp, G_amp, O_amp = (amp7.counts[k] for k in ("param_bytes", "grad_bytes", "optimizer_bytes"))
print(f"llama-7b: {N7:,} parameters; states {gb(amp7.model_state_bytes):.1f} GB ({bpp:.0f} B/param)")
print(f"AMP {P_amp / N7:.0f} + {G_amp / N7:.0f} + {O_amp / N7:.0f}, DeepSpeed {P_ds / N7:.0f} + {G_ds / N7:.0f} + "
      f"{O_ds / N7:.0f} bytes per parameter")
print(f"foreach AdamW step temporary {gb(step_extra):.1f} GB ({step_extra / N7:.0f} B/param)")
print(f"peak {fmt_bytes(amp7.peak_bytes)} during {amp7.phase}; pencil {gb(pencil_states):.0f} GB "
      f"({amp7.peak_bytes / pencil_states - 1:+.0%})")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"llama-7b has {fmt_count(N7)} parameters, so its states are **{gb(amp7.model_state_bytes):.1f} GB** "
    f"({amp7.model_state_bytes / pencil_states - 1:+.1%} against the pencil, which rounded {fmt_count(N7)} up to 7B), "
    f"stored as {P_amp / N7:.0f} + {G_amp / N7:.0f} + {O_amp / N7:.0f} bytes per parameter by PyTorch AMP and "
    f"{P_ds / N7:.0f} + {G_ds / N7:.0f} + {O_ds / N7:.0f} by DeepSpeed (section 10). "
    f"The peak is **{gb(amp7.peak_bytes):.1f} GB** during the {amp7.phase} step, "
    f"{amp7.peak_bytes / pencil_states - 1:+.0%} over the pencil: it left out torch's foreach AdamW, whose step "
    f"allocates a temporary the size of the second moments ({gb(step_extra):.1f} GB, "
    f"{step_extra / N7:.0f} B/param). The temporary belongs to that implementation: torch's fused AdamW "
    f"(`optimizer_impl=\"fused\"`) and DeepSpeed's FusedAdam update in place and allocate none."))

# %% [markdown]
# ### Step 3 · Activations, and what recompute keeps

# %% [markdown]
# ✏️ **Back of the envelope.** With flash/sdpa attention a layer saves about 34·s·b·h bytes
# (Korthikanti et al.): 34 × 2048 × 1 × 4096 ≈ 0.29 GB, × 32 layers ≈ **9 GB**. Full recompute keeps
# each layer's input (2·s·b·h = 17 MB × 32 = 0.5 GB) plus one rebuilt layer (0.29 GB): **≈ 0.8 GB**.

# %% tags=["nbval-check-output"]
# memlib's LLaMA layer ledger (Estimate.layer, memlib.activations) against Korthikanti et al.'s GPT layer
# (memlib.activations.korthikanti_layer_bytes; "selective" drops the 5as^2b scores, as sdpa does)
rc7 = estimate_training(M7, SEQ, MB, recompute="full")


def largest(est, part):
    """The largest bytes of one part over the moments of the step (the estimate's own figures)."""
    return max(mo.parts.get(part, 0) for mo in est.moments)


gpt_layer = korthikanti_layer_bytes(SEQ, MB, M7.hidden_size, M7.num_heads, recompute="selective")
act_none, act_full = largest(amp7, "activations"), largest(rc7, "activations")
casts7 = largest(amp7, "autocast_copies")
rc_at_max = max(rc7.moments, key=lambda mo: mo.parts.get("activations", 0))  # when full recompute keeps the most
rc_at_loss = next(mo for mo in rc7.moments if mo.where.startswith("at the loss")).parts["activations"]  # end of the forward
print(f"one layer: GPT 34sbh {gb(gpt_layer):.3f} GB, LLaMA ledger {gb(amp7.layer.total):.3f} GB")
print(f"activations, no recompute: {gb(act_none):.2f} GB (34sbh x L: {gb(gpt_layer * M7.num_layers):.2f} GB)")
print(f"activations, full recompute: {gb(act_full):.2f} GB ({rc_at_max.name}: {rc_at_max.where}), "
      f"{gb(rc_at_loss):.2f} GB at the loss; autocast copies at most {gb(casts7):.2f} GB")
print(f"at the peak ({amp7.phase}): activations {gb(amp7.breakdown['activations']):.2f} GB")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"memlib's LLaMA ledger saves **{gb(amp7.layer.total):.2f} GB** per layer, {amp7.layer.total / gpt_layer - 1:+.0%} "
    f"over 34·s·b·h, so **{gb(act_none):.1f} GB** over {M7.num_layers} layers. The pencil left out what a LLaMA "
    f"layer adds to a GPT one: the SwiGLU MLP keeps four tensors of s × {M7.intermediate_size:,}, and Hugging Face's "
    f"RMSNorm keeps an fp32 copy of its input and a 16-bit cast of its output per projection. Full recompute keeps "
    f"**{gb(act_full):.2f} GB** at its largest, {rc_at_max.where} in the backward; at the loss, the moment notebook 00 "
    f"quotes, it keeps {gb(rc_at_loss):.2f} GB (each layer's input alone), so the two notebooks' figures are two "
    f"moments of one step. Under AMP, autocast also holds up to **{gb(casts7):.1f} GB** of 16-bit weight "
    f"copies at the end of the forward. None of it is alive at plain AdamW's peak: the {amp7.phase} step comes "
    f"after the backward freed them ({gb(amp7.breakdown['activations']):.1f} GB there)."))

# %% [markdown]
# ### Step 4 · 7B on one A100 80GB: the seed's menu, peak by peak

# %% [markdown]
# ✏️ **Back of the envelope.** 8-bit AdamW under AMP: fp32 weights 4 + fp32 gradients 4 + 8-bit m, v 2
# = 10 B/param → 7e9 × 10 = 70 GB, + ~1 GB of recomputed activations ≈ **71 GB < 80 GB: fits**.
# ZeRO-1 on one GPU divides the optimizer by dp = 1: nothing.

# %% tags=["nbval-check-output"]
# one memlib.estimate_training per item; the verdict is memlib.fits on an A100 80GB
pencil_8bit = 71e9  # the pencil's figure above
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
rows = [(k, f"{gb(e.peak_bytes):.1f} GB", e.phase, "fits" if v[k].fits else "does not fit",
         f"{v[k].margin_gib:+.1f} GiB", f"{gb(e.host_bytes):.0f} GB" if e.host_bytes else "") for k, e in MENU.items()]
menu_table = markdown_table(rows, ["llama-7b, 2,048 tokens", "peak", "phase", "A100 80GB", "margin", "host RAM"])
e8 = MENU["+ 8-bit AdamW"]
print(menu_table)
print("ZeRO-1 on one GPU == plain AMP:", MENU["ZeRO-1, one GPU"].peak_bytes == amp7.peak_bytes)
print(f"8-bit: {gb(e8.peak_bytes):.1f} GB vs pencil {gb(pencil_8bit):.0f} GB ({e8.peak_bytes / pencil_8bit - 1:+.0%})")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(menu_table))
display(Markdown(
    f"8-bit AdamW + recompute peaks at **{gb(e8.peak_bytes):.1f} GB** in the {e8.phase} "
    f"({e8.peak_bytes / pencil_8bit - 1:+.0%} against the pencil) and {verdict(e8, A100)}, with "
    f"{v['+ 8-bit AdamW'].margin_gib:.1f} GiB to spare. The pencil is high: it rounded {fmt_count(N7)} up to 7B and "
    f"added activations that are mostly freed by the end of the backward, where the peak sits "
    f"({gb(e8.breakdown['activations']):.2f} GB there). "
    f"Recompute alone changes nothing ({gb(rc7.peak_bytes):.1f} GB: the peak is the {rc7.phase} step). "
    f"`zero_stage=1` on one GPU gives exactly the plain peak (memlib: \"{MENU['ZeRO-1, one GPU'].notes[0]}\"). "
    f"ZeRO-Offload leaves **{gb(MENU['ZeRO-Offload'].peak_bytes):.1f} GB** on the GPU and needs "
    f"{gb(MENU['ZeRO-Offload'].host_bytes):.0f} GB of host RAM. LoRA and QLoRA (16-bit or NF4 frozen base, fp32 "
    f"adapters, PEFT's defaults) peak at {gb(MENU['LoRA'].peak_bytes):.1f} and {gb(MENU['QLoRA'].peak_bytes):.1f} GB."))

# %% [markdown]
# ### Step 5 · The largest model per GPU and recipe
#
# The catalog jumps from 0.5B to 7B, so the search runs over memlib's **LLaMA-like shapes**: LLaMA-1
# blocks whose width and depth are interpolated between published widths and depths
# (`memlib.models.llama_like.llama_like_of_size`; the rungs of `ladder()` are the anchors, and the
# 6.74B, 13.0B, 32.5B and 65.3B rungs are exactly LLaMA-7B/13B/33B/65B). They are shapes, not
# checkpoints. `largest_size_that_fits` bisects the size to 1%, so a limit is a size, not a rung.

# %% [markdown]
# ✏️ **Back of the envelope.** Divide the ~80 GB of step 1 by the bytes per parameter at the peak:
# full AdamW 20 → **4B**; 8-bit AdamW 10 → **8B**; ZeRO-Offload and LoRA, 16-bit weights 2 → **40B**;
# QLoRA, NF4 ≈ 0.55 → **145B**; serving bf16 2 → **40B**, int4 ≈ 0.55 → **145B**.

# %% tags=["nbval-check-output"]
# memlib.models.llama_like.largest_size_that_fits: the largest interpolated shape memlib.fits (to 1%)
PENCIL_LARGEST = {"full · AdamW": 4e9, "full · 8-bit AdamW + recompute": 8e9, "full · ZeRO-Offload + recompute": 40e9,
                  "LoRA + recompute": 40e9, "QLoRA + recompute": 145e9, "serve · bf16": 40e9,
                  "serve · int4 (AWQ)": 145e9}  # the pencil's figures above


def cell(recipe, gpu):
    best = limit(recipe, gpu)
    return fmt_count(best.num_params) if best else "none"


largest_table = markdown_table([(r, *(cell(r, g) for g in GPUS)) for r in RECIPES],
                               ["largest LLaMA-like size that fits", *GPUS])
print(largest_table)
pencil_ratio = {r: p / limit(r, A100).num_params for r, p in PENCIL_LARGEST.items()}
print("pencil / memlib on an A100 80GB:", {r: round(x, 2) for r, x in pencil_ratio.items()})
off_limit = limit("full · ZeRO-Offload + recompute", A100)
off_host = estimate("full · ZeRO-Offload + recompute", off_limit).host_bytes  # memlib: fp32 master, m, v, gradients
print(f"ZeRO-Offload limit {fmt_count(off_limit.num_params)}: host RAM {gb(off_host):.0f} GB "
      f"({off_host / off_limit.num_params:.0f} B/param)")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(largest_table))
display(Markdown(
    f"On an A100 80GB: full AdamW **{size('full · AdamW', A100)}**, 8-bit AdamW + recompute "
    f"**{size('full · 8-bit AdamW + recompute', A100)}**, ZeRO-Offload **{size('full · ZeRO-Offload + recompute', A100)}**, "
    f"LoRA **{size('LoRA + recompute', A100)}**, QLoRA **{size('QLoRA + recompute', A100)}**; it serves "
    f"{size('serve · bf16', A100)} in bf16 and {size('serve · int4 (AWQ)', A100)} in int4. The pencil is within "
    f"{max(abs(x - 1) for x in pencil_ratio.values()):.0%} of every limit: what it leaves out (activations, logits, "
    f"the KV cache, the 16-bit embedding and head that 4-bit formats keep) is small beside the states. "
    f"Offload's limit is the GPU's; the host must hold the rest: **{gb(off_host):.0f} GB of RAM** for the "
    f"{size('full · ZeRO-Offload + recompute', A100)} shape ({off_host / off_limit.num_params:.0f} B/param: fp32 "
    f"master weights, m, v and gradients), and DeepSpeed's pinned staging buffers add more on top "
    f"(memlib leaves them out). A real model with a larger vocabulary (Qwen2, Llama 3) needs more than its shape here."))

# %% [markdown]
# ### Step 6 · What offload costs in time

# %% [markdown]
# ✏️ **Back of the envelope.** ZeRO-Offload (7B, one A100, one 2,048-token sequence per step): 16-bit
# gradients down (2 B × 7e9 = 14 GB) and updated 16-bit weights up (14 GB) over PCIe 4.0 at 32 GB/s:
# ~0.9 s; Adam on the CPU at ~5e9 parameters/s: ~1.4 s. Compute with recompute: 8 × 7e9 × 2048
# ≈ 1.1e14 FLOP at 40% of 312 TFLOP/s ≈ 0.9 s. Total ≈ 3.2 s: **≈ 3.5× the compute**.

# %% tags=["nbval-check-output"]
# memlib.step_time: compute at memlib.timing.DEFAULT_MFU, PCIe at the catalog's host link, CPU Adam at
# memlib.timing.CPU_ADAM_PARAMS_PER_S (one node's rate), no overlap. Baseline: plain AMP where it fits, else compute.
pencil_slowdown = 3.5  # the pencil's figure above
slow, rows = {}, []
for g in ("a100-80gb", "rtx-4090", "h200"):
    for accum in (1, 8):
        t, base, plain_fits = offload_vs_baseline(g, accum)
        slow[(g, accum)] = t.step_s / base
        rows.append((g, f"{SEQ * accum:,}", "plain AMP" if plain_fits else "its own compute", f"{base:.2f} s",
                     f"{t.step_s:.2f} s", f"{t.offload_s:.2f} s", f"{t.cpu_optimizer_s:.2f} s", f"{slow[(g, accum)]:.1f}x"))
time_table = markdown_table(rows, ["GPU", "tokens per step", "baseline", "baseline step", "ZeRO-Offload step",
                                   "PCIe", "CPU Adam", "slowdown"])
print(f"assumed: MFU {memlib.timing.DEFAULT_MFU:.0%}, CPU Adam {memlib.timing.CPU_ADAM_PARAMS_PER_S:.0e} params/s per node")
print(time_table)
t1, t8 = offload_vs_baseline(A100, 1)[0], offload_vs_baseline(A100, 8)[0]
print(f"A100, one sequence per step: {slow[(A100, 1)]:.2f}x vs pencil {pencil_slowdown}x; "
      f"PCIe {t1.offload_s:.2f} s at 1 micro-batch, {t8.offload_s:.2f} s at 8")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(time_table))
display(Markdown(
    f"On an A100 80GB, where plain AMP does not fit 7B, ZeRO-Offload takes **{slow[(A100, 1)]:.1f}x** its own compute "
    f"time at one sequence per step (pencil {pencil_slowdown}x) and **{slow[(A100, 8)]:.1f}x** with 8 sequences "
    f"accumulated. The CPU Adam step ({t1.cpu_optimizer_s:.2f} s) and the weight upload are paid once per optimizer "
    f"step; the running gradient sum crosses PCIe down and back up with **every** micro-batch (DeepSpeed adds on "
    f"the GPU through a pinned 16-bit CPU buffer), so the PCIe time grows with accumulation "
    f"({t1.offload_s:.2f} s → {t8.offload_s:.2f} s). On an H200, where plain AMP fits, offload costs "
    f"{slow[('h200', 1)]:.1f}x and {slow[('h200', 8)]:.1f}x against it. The model is simple (nominal PCIe, no "
    f"overlap); a slower host CPU moves these factors up (`step_time(..., cpu_adam_params_per_s=)`)."))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Charts · 图
#
# **Peak memory against model size** along the ladder, one line per recipe, with the RTX 4090 (left)
# and A100 80GB (right) capacity dashed; a dotted vertical line marks the first rung a recipe no longer
# fits (`memlib.viz.sweep`). Look at the vertical gap between the full fine-tuning lines and the
# QLoRA / int4 lines (log scale): that gap is the whole answer.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
xs = [m.num_params / 1e9 for m in LADDER]
SWEEP = ["full · AdamW", "full · 8-bit AdamW + recompute", "full · ZeRO-Offload + recompute", "LoRA + recompute",
         "QLoRA + recompute", "serve · bf16", "serve · int4 (AWQ)"]
series = {r: [estimate(r, m).peak_bytes for m in LADDER] for r in SWEEP}
fig, axes = plt.subplots(1, 2, figsize=(8, 3.8), sharey=True)
for ax, g in zip(axes, ("rtx-4090", A100)):
    sweep(xs, series, gpu=g, xlabel="parameters (billions, LLaMA-like ladder)", ax=ax, logx=True, title=g)
    ax.set_yscale("log")
    ax.legend(fontsize=5, loc="upper left")
plt.tight_layout()
plt.show()

# %% [markdown]
# **What is alive at the peak for llama-7b on one A100 80GB** under each item of step 4
# (`memlib.viz.breakdown_bars`). Look at the first and fourth bars: ZeRO-1 on one GPU is the same bar
# as plain AMP; the optimizer block only shrinks with 8-bit states or offload.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
fig, ax = plt.subplots(figsize=(8, 3.8))
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

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### 追问 1: 如果我用 RTX 4090（24GB），能训多大的模型？48 GB、80 GB 的卡呢？ (24, 48 and 80 GB cards)

# %% tags=["nbval-check-output"]
# memlib.models.llama_like.largest_size_that_fits per card, against what torch reports (memlib.gpus torch_total_mib)
CARDS = ["rtx-4090", "rtx-a6000", "l40s", "a100-80gb", "h100-80gb", "h200"]
SHOW = ["full · 8-bit AdamW + recompute", "full · ZeRO-Offload + recompute", "LoRA + recompute", "QLoRA + recompute",
        "serve · bf16", "serve · int4 (AWQ)"]
rows = [(memlib.get_gpu(g).display_name, f"{gib(memlib.get_gpu(g).torch_total_bytes):.1f} GiB",
         *(cell(r, g) for r in SHOW)) for g in CARDS]
cards_table = markdown_table(rows, ["card", "torch sees", "full (8-bit + rc)", "ZeRO-Offload", "LoRA", "QLoRA",
                                    "serve bf16", "serve int4"])
print(cards_table)

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(cards_table))
display(Markdown(
    f"A 24 GB RTX 4090 fully fine-tunes only **{size('full · 8-bit AdamW + recompute', 'rtx-4090')}** with the states "
    f"on the card; ZeRO-Offload stretches that to {size('full · ZeRO-Offload + recompute', 'rtx-4090')} (with "
    f"{gb(MENU['ZeRO-Offload'].host_bytes):.0f} GB of host RAM for a 7B). Its realistic uses are LoRA up to "
    f"**{size('LoRA + recompute', 'rtx-4090')}**, QLoRA up to **{size('QLoRA + recompute', 'rtx-4090')}** and serving "
    f"{size('serve · bf16', 'rtx-4090')} in bf16. The two 48 GB cards differ: torch sees "
    f"{gib(memlib.get_gpu('rtx-a6000').torch_total_bytes):.1f} GiB of an RTX A6000 but "
    f"{gib(memlib.get_gpu('l40s').torch_total_bytes):.1f} GiB of an L40S (ECC on), enough to change the bf16 "
    f"serving limit ({size('serve · bf16', 'rtx-a6000')} vs {size('serve · bf16', 'l40s')})."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### 追问 2: 单卡场景下 ZeRO-3 有用吗？ (Does ZeRO-3 help on one GPU?)

# %% tags=["nbval-check-output"]
same = [estimate_training(M7, SEQ, MB, zero_stage=z, dp=1).peak_bytes for z in (0, 1, 2, 3)]
inf = estimate_training(M7, SEQ, MB, recompute="full", zero_stage=3, offload="optimizer+params")
print("ZeRO-0..3 on one GPU, peaks equal:", len(set(same)) == 1, fmt_bytes(same[0]))
print(f"ZeRO-3 + offload of optimizer and parameters (ZeRO-Infinity to CPU): GPU {fmt_bytes(inf.peak_bytes)}, "
      f"host {gb(inf.host_bytes):.0f} GB")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"No: `zero_stage` 0 to 3 with one GPU all give **{gb(same[0]):.1f} GB** for llama-7b. What helps on one GPU is "
    f"the *offload* half of DeepSpeed: ZeRO-Offload (step 4) or, with stage 3, parameter offload too "
    f"(ZeRO-Infinity): **{gb(inf.peak_bytes):.1f} GB** on the GPU and {gb(inf.host_bytes):.0f} GB in host RAM, paid "
    f"in PCIe traffic in every forward and backward."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### 追问 3: 梯度检查点具体节省多少显存？代价是什么？ (What does checkpointing save at the peak, and cost?)

# %% tags=["nbval-check-output"]
f_none = memlib.flops_per_token(M7, SEQ, "none")
f_full = memlib.flops_per_token(M7, SEQ, "full")
e8_norc = estimate_training(M7, SEQ, MB, optimizer="adamw-8bit")
print(f"activations {gb(act_none):.2f} -> {gb(act_full):.2f} GB; FLOPs/token {f_none:.3e} -> {f_full:.3e}")
rc_flips = fits(e8_norc, A100).fits != fits(e8, A100).fits  # does recompute change the 8-bit verdict?
print(f"peak, AdamW: {gb(amp7.peak_bytes):.1f} -> {gb(rc7.peak_bytes):.1f} GB; "
      f"8-bit AdamW: {gb(e8_norc.peak_bytes):.1f} ({e8_norc.phase}) -> {gb(e8.peak_bytes):.1f} GB ({e8.phase})")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"Full recompute keeps **{gb(act_full):.2f} GB** of activations instead of **{gb(act_none):.1f} GB** "
    f"({1 - act_full / act_none:.0%} less) and adds one forward: {f_full / f_none - 1:.0%} more FLOPs per token "
    f"(`memlib.flops_per_token`). What it saves **at the peak** depends on what is alive there: with AdamW the "
    f"peak is the {amp7.phase} step and recompute saves {gb(amp7.peak_bytes - rc7.peak_bytes):.1f} GB; with 8-bit "
    f"AdamW the peak is the end of the {e8_norc.phase}, when every gradient exists and most activations are freed, "
    f"so recompute saves only {gb(e8_norc.peak_bytes - e8.peak_bytes):.1f} GB there: 7B with 8-bit AdamW "
    + (f"{verdict(e8_norc, A100)} an A100 80GB without it and {verdict(e8, A100)} with it." if rc_flips else
       f"{verdict(e8_norc, A100)} an A100 80GB either way.")))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### How long a sequence can llama-7b LoRA/QLoRA take on an RTX 4090?

# %% tags=["nbval-check-output"]
longest = {}
for label, recipe in (("LoRA", "LoRA + recompute"), ("QLoRA", "QLoRA + recompute")):
    kw = dict(seq_len=SEQ, micro_batch=MB, finetune=recipe.split()[0].lower(), recompute="full", **LORA)
    est = estimate_training(M7, **kw)
    p = Plan(kw, est, fits(est, "rtx-4090"))  # a Plan carrying every setting, so max_seq_len re-estimates it
    longest[label] = (max_seq_len(p, "rtx-4090"), max_micro_batch(p, "rtx-4090"))
    print(f"{label}: longest sequence {longest[label][0]:,} tokens at batch 1; "
          f"largest micro-batch at 2,048 tokens {longest[label][1]}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"With rank-16 adapters on every projection and full recompute (`memlib.plan.max_seq_len`): LoRA reaches "
    f"**{longest['LoRA'][0]:,} tokens** at batch 1 (micro-batch {longest['LoRA'][1]} at 2,048), QLoRA "
    f"**{longest['QLoRA'][0]:,} tokens** (micro-batch {longest['QLoRA'][1]})."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### How many users can an RTX 4090 serve llama-2-7b to at a 4k context?

# %% tags=["nbval-check-output"]
serve = {w: memlib.max_batch("llama-2-7b", "rtx-4090", context_len=4096, weights=w) for w in ("bf16", "int4-awq")}
l2 = memlib.get_model("llama-2-7b")
kv_tok = estimate_inference(l2, batch=1, context_len=4096).kv_bytes_per_token
for w, lim in serve.items():
    print(f"{w}: {lim}")
print(f"KV cache per token: {kv_tok:,} bytes")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"`memlib.max_batch`: **{serve['bf16'].value}** sequences of 4,096 tokens with bf16 weights, "
    f"**{serve['int4-awq'].value}** with int4 (AWQ). The KV cache costs {kv_tok / 2**20:.2f} MiB per token "
    f"({l2.num_layers} layers × {l2.num_kv_heads} KV heads of {l2.head_dim}, no grouped-query attention in "
    f"Llama-2-7B): {gb(kv_tok * 4096):.2f} GB per 4k sequence. Notebook 04 (serving capacity) goes further."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Which single GPU fully fine-tunes llama-13b, and how?

# %% tags=["nbval-check-output"]
m13 = memlib.get_model("llama-13b")
opts13 = {
    "AMP AdamW + recompute": dict(recompute="full"),
    "AMP 8-bit AdamW + recompute": dict(recompute="full", optimizer="adamw-8bit"),
    "pure bf16 + 8-bit AdamW + recompute": dict(recompute="full", optimizer="adamw-8bit", precision="bf16"),
    "ZeRO-Offload + recompute": dict(recompute="full", zero_stage=2, offload="optimizer"),
}
rows, fit13 = [], {}
for label, kw in opts13.items():
    e = estimate_training(m13, SEQ, MB, **kw)
    fit13[label] = [g for g in GPUS if fits(e, g).fits]
    rows.append((label, f"{gb(e.peak_bytes):.1f} GB", *("✓" if g in fit13[label] else "✗" for g in GPUS)))
t13 = markdown_table(rows, ["llama-13b, 2,048 tokens", "peak", *GPUS])
print(t13)

# %% jupyter={"source_hidden": true} tags=["hide-input"]
def where(label):
    return ", ".join(fit13[label]) or "no single GPU"


display(Markdown(t13))
display(Markdown(
    f"AMP AdamW fits {where('AMP AdamW + recompute')}; AMP with 8-bit AdamW: {where('AMP 8-bit AdamW + recompute')}. "
    f"Pure bf16 with 8-bit AdamW (no fp32 master: small updates are lost unless the optimizer uses Kahan summation "
    f"or stochastic rounding): {where('pure bf16 + 8-bit AdamW + recompute')}. ZeRO-Offload (16-bit weights on the "
    f"GPU, the rest in host RAM, at the time cost of step 6): {where('ZeRO-Offload + recompute')}."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### LoRA with checkpointing: what must you set, and what does sequence packing save?

# %% tags=["nbval-check-output"]
# memlib.estimate_training: llama-7b LoRA on an RTX 4090, with and without recompute; four 512-token samples
# padded to 2,048 each (micro-batch 4) against packed into one 2,048-token row (micro-batch 1)
lora_norc = estimate_training(M7, SEQ, MB, finetune="lora", **LORA)
padded = estimate_training(M7, SEQ, 4, finetune="lora", recompute="full", **LORA)
print(f"LoRA peak: {gb(lora_norc.peak_bytes):.1f} GB without recompute, {gb(MENU['LoRA'].peak_bytes):.1f} GB with; "
      f"4 samples padded {gb(padded.peak_bytes):.1f} GB, packed {gb(MENU['LoRA'].peak_bytes):.1f} GB")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"Recompute is what fits 7B LoRA on a 24 GB card: **{gb(lora_norc.peak_bytes):.1f} GB** without it "
    f"({verdict(lora_norc, 'rtx-4090')}), **{gb(MENU['LoRA'].peak_bytes):.1f} GB** with it. Two settings make it work "
    "with a frozen base. The embedding's output does not require grad, so torch's old reentrant checkpoint "
    "(`use_reentrant=True`) would pass no gradient into the checkpointed blocks and the adapters would not learn: "
    "call `model.enable_input_require_grads()` (PEFT's `prepare_model_for_kbit_training` does) or pass "
    "`gradient_checkpointing_kwargs={\"use_reentrant\": False}`. Packing short samples into one row instead of "
    f"padding each to 2,048 tokens saves memory and compute alike: four 512-token samples padded peak at "
    f"{gb(padded.peak_bytes):.1f} GB, packed into one row at {gb(MENU['LoRA'].peak_bytes):.1f} GB; with "
    "FlashAttention's variable-length kernels (`DataCollatorWithFlattening`) the samples do not attend to each other."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Memory is not the only limit: how long does one GPU take, and which GPUs run bf16?

# %% tags=["nbval-check-output"]
# memlib.cost.training_run: 6N + attention FLOPs per token (memlib.flops_per_token) / (dense peak x MFU)
from memlib import cost  # noqa: E402

run1 = cost.training_run(M7, 1e12, A100, 1, mfu=memlib.timing.DEFAULT_MFU, seq_len=SEQ)
no_bf16 = [g for g in ("v100-32gb", "t4", "rtx-4090", "a100-80gb", "h100-80gb") if not memlib.get_gpu(g).bf16_tflops]
print(f"llama-7b on 1T tokens, one A100 at {memlib.timing.DEFAULT_MFU:.0%} MFU: {run1.days:,.0f} days "
      f"({run1.days / 365:.1f} years)")
print("no bf16 tensor cores:", no_bf16)

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"A 7B that fits an A100 is not a 7B you can pre-train on one: 1T tokens at "
    f"{memlib.timing.DEFAULT_MFU:.0%} MFU take **{run1.days:,.0f} days** ({run1.days / 365:.0f} years; "
    f"`memlib.cost.training_run`). One GPU is for fine-tuning on millions of tokens, not pre-training. "
    f"The GPU requirement is also a generation: bf16 needs Ampere (A100, RTX 30xx) or newer; "
    f"{', '.join(no_bf16)} have no bf16 tensor cores, so they train in fp16 with a loss scaler "
    f"(`precision=\"fp16-mixed\"`)."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### nvidia-smi says 81,920 MiB, torch says less, and my job OOMs below both: why?

# %% tags=["nbval-check-output"]
rows = [(g.display_name, f"{g.memory_gib:.0f} GiB", f"{g.reported_total_mib:,} MiB" if g.reported_total_mib else "—",
         f"{g.torch_total_mib:,} MiB", f"{gib(max_peak_bytes(g)):.1f} GiB")
        for g in map(memlib.get_gpu, ("rtx-4090", "l40s", "a100-80gb", "h100-80gb", "h200"))]
smi_table = markdown_table(rows, ["card", "nominal", "nvidia-smi total", "torch total_memory",
                                  "largest allocated peak (memlib.fits)"])
print(smi_table)

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(smi_table))
display(Markdown(
    "Four numbers, four meanings. nvidia-smi's total is the card less what the driver reserves; "
    "`torch.cuda.get_device_properties(0).total_memory` is smaller again (the \"total capacity\" of torch's OOM "
    "message). Inside it, the CUDA context takes a few hundred MiB, and the caching allocator *reserves* whole "
    "blocks: `torch.cuda.max_memory_reserved()` runs above `max_memory_allocated()` (what memlib estimates), by "
    f"the fragmentation of the block pool. `memlib.fits` budgets {gib(memlib.fit.DEFAULT_CUDA_CONTEXT_BYTES):.1f} GiB "
    f"of context and {memlib.fit.DEFAULT_ALLOCATOR_HEADROOM:.0%} of the peak for it. That is too little for FSDP: "
    "Answer.AI's fsdp_qlora logs both statistics, and its LoRA runs of Llama-2-7B reserve 24% more than they "
    "allocate at 512 tokens and 12% at 2,048 (`validation/published.jsonl`), so plan FSDP jobs with "
    "`allocator_headroom=0.25` (CLI `--allocator-headroom 0.25`). "
    "`PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` lets segments grow instead of fragmenting, which often "
    "rescues a job that OOMs with GiBs \"reserved but unallocated\"."))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9. Pitfalls · 避坑

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown("\n".join([
    "- **ZeRO without peers.** ZeRO-1/2/3 partition states over data-parallel GPUs; on one GPU only the "
    "*offload* options (ZeRO-Offload, ZeRO-Infinity) save memory.",
    f"- **Mixing layouts.** DeepSpeed's {P_ds / N7:.0f} + {G_ds / N7:.0f} + {O_ds / N7:.0f} and AMP's "
    f"{P_amp / N7:.0f} + {G_amp / N7:.0f} + {O_amp / N7:.0f} bytes per parameter both total "
    f"{bpp:.0f}; 16-bit weights plus \"8-bit Adam including the master = 2 B/param\" is neither.",
    f"- **The peak is not a sum.** Plain AdamW peaks in the {amp7.phase} step, where activations are gone; "
    "adding \"+ 3 GB of activations\" to the model states double-counts one thing and misses another "
    f"(foreach AdamW's {gb(step_extra):.0f} GB temporary).",
    "- **Recompute is not a memory fix for model states.** It shrinks activations; it lowers the peak only "
    "where activations are alive at the peak (追问 3).",
    f"- **Offload's cost is not fixed per step.** CPU Adam and the weight upload are; the gradients go down "
    f"after every micro-batch ({t1.offload_s:.2f} s → {t8.offload_s:.2f} s of PCIe at 1 → 8 sequences per step).",
    f"- **Offload needs host RAM.** ZeRO-Offload of llama-7b needs {gb(MENU['ZeRO-Offload'].host_bytes):.0f} GB of it.",
    f"- **GB vs GiB, nominal vs torch.** \"80GB\" is {a100.memory_gib:.0f} GiB nominal; torch sees "
    f"{gib(a100.torch_total_bytes):.2f} GiB.",
    "- **Limits are sizes of a shape family.** The LLaMA-like shapes other than 7B/13B/33B/65B are illustrative; "
    "a real model of similar size with a larger vocabulary (Qwen2, Llama 3) needs more.",
])))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10. Deep dive (skip on first read) · 深入（可跳过）
#
# Long tables and derivations behind the core path.

# %% [markdown]
# ### Fact-check · 纠错
#
# Each claim is quoted from seed 001; the middle column is computed here (seq 2,048, batch 1,
# llama-7b unless the claim names another size). Verdicts come from `memlib.claims.claim_verdict`:
# ✅ within 10% of memlib's figure (or the same yes/no), ⚠️ within 30%, ❌ beyond; a claim with a
# figure and a conclusion is ⚠️ when one part is right and another is not (`memlib.claims.overall`).

# %% tags=["nbval-check-output"]
eight7 = e8.counts["optimizer_bytes"]
e13 = estimate_training(m13, SEQ, MB)
h200_13 = fits(estimate_training(m13, SEQ, MB, optimizer="adamw-8bit", recompute="full"), "h200")
off_a100 = limit("full · ZeRO-Offload + recompute", A100)
nvme4090 = estimate_training(M7, SEQ, MB, recompute="full", zero_stage=3, offload="optimizer+params",
                             offload_device="nvme")
t_nvme = step_time(nvme4090, "rtx-4090")
lora4090, qlora4090 = MENU["LoRA"], MENU["QLoRA"]
z3 = estimate_training(M7, SEQ, MB, zero_stage=3, dp=1)
m15 = memlib.Model.from_hf_config({"model_type": "qwen2", "hidden_size": 1536, "num_hidden_layers": 28,
                                   "num_attention_heads": 12, "num_key_value_heads": 2, "intermediate_size": 8960,
                                   "vocab_size": 151936, "tie_word_embeddings": True}, name="illustrative-1.5b")
ds15 = estimate_training(m15, SEQ, MB, zero_stage=1, dp=2)
P15, G15, O15 = (ds15.counts[k + "_unsharded"] for k in ("param_bytes", "grad_bytes", "optimizer_bytes"))
amp15 = estimate_training(m15, SEQ, MB, recompute="full")
bit15 = estimate_training(m15, SEQ, MB, recompute="full", optimizer="adamw-8bit")
m70 = memlib.get_model("llama-2-70b")
# bytes one AdamW update moves per parameter (memlib.cost.conventions.optimizer_step_hbm_bytes) over HBM bandwidth
adam_s = {o: optimizer_step_hbm_bytes(N7, o) / a100.memory_bandwidth_bytes_per_s for o in ("adamw", "adamw-8bit")}
t_fwd_bwd = step_time(rc7, A100).compute_s
act_casts = max(mo.parts.get("activations", 0) + mo.parts.get("autocast_copies", 0) for mo in amp7.moments)
cv = claim_verdict
FACTS = [
    ("以 A100 80GB 为例，能训的最大模型约 7B（需配合激进优化），而 13B+ 基本不可能",
     f"8-bit AdamW + recompute: {size('full · 8-bit AdamW + recompute', A100)}; ZeRO-Offload: {B(off_a100.num_params)}",
     overall(cv(7e9, limit('full · 8-bit AdamW + recompute', A100).num_params),
           cv(False, fits(estimate('full · ZeRO-Offload + recompute', m13), A100).fits)),
     "7B with aggressive tricks is right; 13B+ is possible with ZeRO-Offload (host RAM, slower), LoRA or QLoRA."),
    ("参数：FP16 下 7B × 2 bytes = 14GB", f"{gb(P_ds):.2f} GB in 16-bit; {gb(P_amp):.2f} GB as AMP's fp32 weights",
     cv(14e9, P_ds), "Right for 16-bit weights (DeepSpeed's layout); PyTorch AMP keeps fp32 weights."),
    ("梯度：与参数同大小，14GB", f"{gb(G_ds):.2f} GB (16-bit)", cv(14e9, G_ds),
     "Gradients take the dtype of the weights they belong to."),
    ("优化器状态：…共 7B × 4 × 3 = 84GB", f"{gb(O_ds):.2f} GB (fp32 master + m + v)", cv(84e9, O_ds),
     "The ZeRO paper's K = 12 bytes/param; 84 uses 7e9 instead of 6.74e9 parameters."),
    ("总显存：14 + 14 + 84 + 3 = 115GB，远超 80GB", f"peak {gb(amp7.peak_bytes):.1f} GB ({amp7.phase}); "
     f"{verdict(amp7, A100)}", overall(cv(115e9, amp7.peak_bytes), cv(False, fits(amp7, A100).fits)),
     "Conclusion right; the sum misses foreach AdamW's step temporary, and the 3 GB of activations are gone by then."),
    ("激活值约 2-3GB（使用激活重计算后）", f"{gb(act_full):.2f} GB with full recompute", cv((2e9, 3e9), act_full),
     "Recompute leaves less than claimed: each layer's input plus one rebuilt layer."),
    ("若不重计算，可达 20-30GB", f"{gb(act_none):.1f} GB; with autocast's weight copies {gb(act_casts):.1f} GB",
     overall(cv((20e9, 30e9), act_none), cv((20e9, 30e9), act_casts)),
     "The activations alone are below 20 GB; with the 16-bit weight copies autocast holds at the same moment, in range."),
    ("单卡用 ZeRO-1 可将优化器状态从 84GB 降到 28GB", f"ZeRO-1, one GPU: optimizer {gb(MENU['ZeRO-1, one GPU'].counts['optimizer_bytes']):.1f} GB",
     cv(28e9, MENU["ZeRO-1, one GPU"].counts["optimizer_bytes"]),
     "ZeRO-1 partitions optimizer states over data-parallel GPUs; with one GPU the partition is the whole."),
    ("8-bit Adam…7B × 2 × 2 = 28GB（参数 FP32 副本 + 8-bit 状态）",
     f"8-bit states {gb(eight7):.2f} GB + fp32 weights {gb(P_amp):.2f} GB = {gb(eight7 + P_amp):.2f} GB",
     cv(28e9, eight7 + P_amp), "2 B/param of 8-bit states is right; the fp32 copy adds 4 B/param, not 2."),
    ("总显存：14 + 14 + 28 + 3 = 59GB，可放入 80GB",
     f"peak {gb(e8.peak_bytes):.1f} GB (AMP + 8-bit AdamW + recompute): {verdict(e8, A100)}",
     overall(cv(59e9, e8.peak_bytes), cv(True, fits(e8, A100).fits)),
     "Conclusion right (it fits); the sum is short: 10 B/param of states, not 8."),
    ("改用 ZeRO-1 + FP32 Adam，显存 14+14+28+1=57GB，仍可放入 80GB",
     f"peak {gb(rc7.peak_bytes):.1f} GB (AMP AdamW + recompute, ZeRO-1 on one GPU): {verdict(rc7, A100)}",
     overall(cv(57e9, rc7.peak_bytes), cv(True, fits(rc7, A100).fits)),
     "fp32 Adam keeps 12 B/param with the master copy; ZeRO-1 on one GPU removes none of it."),
    ("LLaMA 7B 在 seq_len=2048、batch=1 时，激活值约 2.5GB（无重计算）", f"{gb(act_none):.1f} GB",
     cv(2.5e9, act_none), "Contradicts the seed's own 20-30 GB: 32 layers of ~0.47 GB each."),
    ("重计算后约 0.8GB", f"{gb(act_full):.2f} GB", cv(0.8e9, act_full),
     "The pencil's 2·s·b·h per layer plus one rebuilt layer; the LLaMA layer is larger than GPT's 34·s·b·h."),
    ("若 seq_len 翻倍到 4096，激活值翻倍",
     f"× {largest(estimate_training(M7, 2 * SEQ, MB), 'activations') / act_none:.2f} (sdpa attention)",
     cv(2.0, largest(estimate_training(M7, 2 * SEQ, MB), "activations") / act_none),
     "Right with flash/sdpa attention; eager attention adds an s² term."),
    ("若想训 13B，显存需求约 200GB+，单卡不可能",
     f"13B AMP AdamW peak {gb(e13.peak_bytes):.0f} GB; 8-bit AdamW + recompute {verdict(estimate_training(m13, SEQ, MB, optimizer='adamw-8bit', recompute='full'), 'h200')} an H200",
     overall(cv((200e9, 1e15), e13.peak_bytes), cv(False, h200_13.fits)),
     "200 GB+ is right for AdamW; 'impossible' is not: an H200 with 8-bit states, or ZeRO-Offload on an A100."),
    ("CPU/NVMe 卸载（ZeRO-Offload）…速度极慢（慢 10-100 倍）",
     f"A100: {slow[(A100, 1)]:.1f}x its compute at 2k tokens/step, {slow[(A100, 8)]:.1f}x at 16k; NVMe "
     f"(ZeRO-Infinity) on a 4090: {t_nvme.step_s / t_nvme.compute_s:.0f}x",
     overall(cv((10, 100), slow[(A100, 1)]), cv((10, 100), t_nvme.step_s / t_nvme.compute_s)),
     "Optimizer offload to RAM costs a few times the compute, less with accumulation; 10-100x fits NVMe/parameter offload."),
    ("24GB 显存下，只能训 1-2B 模型",
     f"RTX 4090, states on the card: AMP AdamW {size('full · AdamW', 'rtx-4090')}, AMP 8-bit AdamW + recompute "
     f"{size('full · 8-bit AdamW + recompute', 'rtx-4090')}, pure bf16 + 8-bit AdamW + recompute "
     f"{size('full · pure bf16 + 8-bit AdamW + recompute', 'rtx-4090')} "
     f"({estimate('full · pure bf16 + 8-bit AdamW + recompute', M7).model_state_bytes / N7:.0f} B/param)",
     cv((1e9, 2e9), limit("full · pure bf16 + 8-bit AdamW + recompute", "rtx-4090").num_params),
     "Right only for AMP with fp32 weights. Pure bf16 weights with 8-bit AdamW (no fp32 master; needs "
     "stochastic rounding or Kahan summation) reach the size in the middle column; LOMO (fused update, no "
     "optimizer state; Lv et al. 2023) and GaLore (low-rank gradient projection; Zhao et al. 2024 pre-train "
     "a 7B on a 24 GB RTX 4090) go further."),
    ("以 1.5B 为例：参数 3GB、梯度 3GB、优化器状态 18GB…总计 24.5GB，略超",
     f"{gb(P15):.1f} + {gb(G15):.1f} + {gb(O15):.1f} GB of states (illustrative 1.5B shape); AMP + recompute peak "
     f"{gb(amp15.peak_bytes):.1f} GB: {verdict(amp15, 'rtx-4090')} a 4090",
     overall(cv(24.5e9, amp15.peak_bytes), cv(False, fits(amp15, "rtx-4090").fits)),
     "The per-parameter figures are right; the peak adds foreach AdamW's temporary, well above 24 GB."),
    ("需用 ZeRO-1 + 8-bit Adam 将优化器状态压到 6GB，总显存 12.5GB，可放入",
     f"8-bit states {gb(bit15.counts['optimizer_bytes']):.1f} GB; peak {gb(bit15.peak_bytes):.1f} GB: "
     f"{verdict(bit15, 'rtx-4090')}", overall(cv(12.5e9, bit15.peak_bytes), cv(True, fits(bit15, "rtx-4090").fits)),
     "It fits, as claimed, but 12.5 GB drops AMP's fp32 weights and gradients. ZeRO-1 adds nothing on one GPU."),
    ("PCIe 带宽瓶颈（约 32GB/s）",
     f"{memlib.gpus.HOST_LINK['rtx-4090'][0]}: {memlib.get_gpu('rtx-4090').host_link_bytes_per_s / 1e9:.0f} GB/s per direction",
     cv(32e9, memlib.get_gpu("rtx-4090").host_link_bytes_per_s),
     "Right (64 GB/s is the two directions together); PCIe 5.0 hosts (H100, H200) double it."),
    ("4090 适合微调（LoRA）而非全量训练",
     f"7B LoRA {gb(lora4090.peak_bytes):.1f} GB ({verdict(lora4090, 'rtx-4090')}); QLoRA {gb(qlora4090.peak_bytes):.1f} GB "
     f"({verdict(qlora4090, 'rtx-4090')})", cv(True, fits(lora4090, "rtx-4090").fits),
     "Right: 7B LoRA with recompute fits; QLoRA leaves room for longer sequences."),
    ("ZeRO-3 在单卡上等价于 ZeRO-1（仅分片优化器状态）", f"ZeRO-3, one GPU: {gb(z3.peak_bytes):.1f} GB = plain AMP",
     overall(cv(True, z3.peak_bytes == amp7.peak_bytes),
             cv(True, MENU["ZeRO-1, one GPU"].counts["optimizer_bytes"] < amp7.counts["optimizer_bytes"])),
     "Equal, yes; but both equal no ZeRO at all: on one GPU ZeRO-1 shards no optimizer state either."),
    ("梯度检查点…代价是约 20-30% 的训练时间增加", f"FLOPs per token × {f_full / f_none:.2f}",
     cv((1.2, 1.3), f_full / f_none), "One extra forward: a third more FLOPs for a dense model at 2k tokens."),
    ("训练速度极慢（因 8-bit 优化器有额外量化/反量化开销…）",
     f"optimizer step, llama-7b on an A100: 32-bit {adam_s['adamw'] * 1e3:.0f} ms, 8-bit {adam_s['adamw-8bit'] * 1e3:.0f} ms; "
     f"the step's compute {t_fwd_bwd:.2f} s",
     cv(True, adam_s["adamw-8bit"] > adam_s["adamw"]),
     "The update is bandwidth-bound: bitsandbytes dequantizes and requantizes in registers, and 8-bit states move "
     "fewer bytes than fp32 ones; both updates are a few % of a step."),
    ("若模型层数多（如 70B 的 80 层），重计算开销更大，可能达 40%",
     f"{recompute_overhead(m70, SEQ):.1%} for 80 layers, {recompute_overhead(M7, SEQ):.1%} for 32 "
     "(decoder blocks checkpointed, head not)", cv(0.40, recompute_overhead(m70, SEQ)),
     "One extra forward of the blocks: about a third of 6N whatever the depth; a long sequence's attention "
     "share, not the layer count, moves it."),
    ("远超单卡 80GB", f"A100 80GB = {a100.memory_gb:.1f} GB; torch sees {gb(a100.torch_total_bytes):.1f} GB",
     cv(80e9, a100.torch_total_bytes), "The card is 80 GiB; decimal sums understate it by 6%."),
]
fact_table = markdown_table([(claim, "seed 001", *rest) for claim, *rest in FACTS],
                            ["claim (as written)", "source", "memlib", "verdict", "why"])
print(f"{len(FACTS)} claims checked: " + ", ".join(f"{m} {sum(f[2] == m for f in FACTS)}" for m in ("✅", "⚠️", "❌")))

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(fact_table))

# %% [markdown]
# ### The two bookkeeping conventions
#
# PyTorch AMP keeps fp32 weights, fp32 gradients and fp32 AdamW moments; DeepSpeed's layout (the
# ZeRO paper's, which memlib uses for any integer `zero_stage` over more than one GPU) keeps 16-bit
# weights and gradients and counts the fp32 master copy with the optimizer (K = 12). Same total.

# %% tags=["nbval-check-output"]
rows = [(label, *(f"{gb(x):.1f} GB ({x / N7:.0f} B/param)" for x in trio), f"{gb(sum(trio)):.1f} GB")
        for label, trio in (("PyTorch AMP (bf16-mixed)", (P_amp, G_amp, O_amp)),
                            ("DeepSpeed (16-bit + fp32 master)", (P_ds, G_ds, O_ds)))]
states_table = markdown_table(rows, ["convention", "parameters", "gradients", "optimizer (+ master)", "total"])
print(states_table)

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(states_table))

# %% [markdown]
# ### Peak against sequence length
#
# llama-7b with 8-bit AdamW on an A100 80GB, without and with full recompute. Look where each line
# crosses the dashed capacity: recompute is what buys long sequences, since the states do not grow.

# %%
seqs = [2**i for i in range(9, 16)]
seq_series = {f"8-bit AdamW, recompute {rc}": [estimate_training(M7, s, MB, optimizer="adamw-8bit",
                                                                 recompute=rc).peak_bytes for s in seqs]
              for rc in ("none", "full")}
fig, ax = plt.subplots(figsize=(7, 3.6))
sweep(seqs, seq_series, gpu=A100, xlabel="sequence length (tokens), batch 1", ax=ax, logx=True,
      title="llama-7b full fine-tuning, AMP + 8-bit AdamW")
plt.show()

# %% tags=["nbval-check-output"]
longest8 = {}
for rc in ("none", "full"):
    kw = dict(seq_len=SEQ, micro_batch=MB, optimizer="adamw-8bit", recompute=rc)
    est = estimate_training(M7, **kw)
    longest8[rc] = max_seq_len(Plan(kw, est, fits(est, A100)), A100)
print(f"longest sequence that fits (memlib.plan.max_seq_len): {longest8}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"With `memlib.fits` (CUDA context and allocator headroom included) the longest sequence is "
    f"**{longest8['none']:,} tokens** without recompute and **{longest8['full']:,} tokens** with it. The chart's "
    f"dotted markers compare the raw peak with the nominal capacity at the swept points only, so they are optimistic."))

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
# - PyTorch docs, *CUDA semantics: memory management* (caching allocator, `expandable_segments`), [pytorch.org](https://pytorch.org/docs/stable/notes/cuda.html#memory-management)
