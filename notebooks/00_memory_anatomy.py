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
# # 00 · Memory anatomy of a training step · 训练一步的显存解剖
#
# After this notebook you can answer "where does the GPU memory go when you train an LLM?"
# term by term (parameters, gradients, optimizer states, activations, logits and loss,
# temporaries), say why mixed-precision AdamW costs 16 bytes per parameter (and where the
# 12 and 18 you will also hear come from), find the peak of a step, and tell GB from GiB
# when you say whether it fits.

# %% tags=["hide-input"]
# %matplotlib inline
import json
import statistics
from pathlib import Path
from types import SimpleNamespace

import matplotlib.pyplot as plt
from IPython.display import Markdown, display

import memlib
from memlib import activations, zero
from memlib.explain import markdown_table
from memlib.fit import usable_bytes
from memlib.measured import estimate_case
from memlib.playground import Playground
from memlib.units import DTYPE_BYTES, fmt_bytes, gb, gib
from memlib.viz import breakdown_bars, crossover, sweep

MODEL, SEQ, GPU = "llama-7b", 2048, "a100-80gb"
print(f"memlib {memlib.__version__}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. The question · 问题
#
# > **「训练一个大模型时，显存都花在哪里了？」**
# >
# > *Where does GPU memory go when you train an LLM?*
#
# No seed asks this in one line; all three answer it on the way to their own question,
# and this notebook checks those parts:
#
# - seed 000 (「能否用4 * v100 32G训练vicuna 65b」): its 「显存需求计算（FP16混合精度）」 for 65B;
# - seed 001 (「想要训练1个LLM，如果只想用1张显卡，那么对显卡的要求是什么」): its
#   「显存占用拆解（以 7B 模型为例）」 and the activation figures in its pitfalls and follow-ups;
# - seed 003 (「如果显卡的显存不够装下一个完整的模型呢」): its 7B FP16 total and its ZeRO-3 figure.
#
# We work with LLaMA-7B, sequence 2048, micro-batch 1, full fine-tuning with AdamW under
# bf16 mixed precision (PyTorch AMP), on an A100 80GB, unless a cell says otherwise.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. What the interviewer is probing · 考察意图
#
# - That you know the **four kinds of bytes** (model states: parameters, gradients, optimizer
#   states; and activations) and the smaller ones people forget: logits and the loss over
#   the vocabulary, autocast's 16-bit weight copies, the optimizer's temporaries.
# - That you can say **bytes per parameter** for a given precision and optimizer and know
#   which convention you are using (PyTorch AMP's 4+4+8 or the ZeRO paper's 2+2+12), instead of
#   reciting "2 bytes per parameter".
# - That activations scale with **tokens** (sequence x batch), not with parameters, and what
#   the attention kernel and recomputation do to them.
# - That the peak is **the largest moment of a step**, not the sum of everything, and that
#   you state units (GB or GiB) when you compare with a card.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. The answer, derived step by step · 推导
#
# ### Step 1: the model and bytes per dtype
# `memlib.get_model` counts parameters tensor by tensor; `memlib.units.DTYPE_BYTES` holds
# the element sizes.

# %%
# NBVAL_CHECK_OUTPUT
model = memlib.get_model(MODEL)
N = model.num_params
# bf16-mixed AdamW, full fine-tuning, with torch's for-loop AdamW step (foreach=False; the CUDA default,
# foreach, holds one more fp32 copy of the second moments at the step: memlib's optimizer_impl="foreach")
est = memlib.estimate_training(MODEL, seq_len=SEQ, optimizer_impl="for-loop")
est_bf16 = memlib.estimate_training(MODEL, seq_len=SEQ, precision="bf16")
print(model.describe())
print("bytes per element:", ", ".join(f"{k} {v}" for k, v in DTYPE_BYTES.items()))
print(f"one copy of the weights: fp32 {fmt_bytes(est.counts['param_bytes'])}, "
      f"bf16 {fmt_bytes(est_bf16.counts['param_bytes'])}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"LLaMA-7B has **{N:,}** parameters ({N / 1e9:.2f} billion, not 7). One copy of the weights "
    f"is {fmt_bytes(est_bf16.counts['param_bytes'])} in bf16 ({DTYPE_BYTES['bf16']} bytes each) and "
    f"{fmt_bytes(est.counts['param_bytes'])} in fp32 ({DTYPE_BYTES['fp32']} bytes each). "
    "Everything below is a multiple of these two numbers, except the activations."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Step 2: model states per parameter
# `memlib.estimate_training(...).counts` gives parameter, gradient and optimizer bytes; divided
# by the parameter count they are bytes per parameter. The last row is DeepSpeed's layout
# (`zero_stage=1, dp=2` switches it on; the `*_unsharded` counts are before ZeRO divides them).

# %%
# NBVAL_CHECK_OUTPUT
SETUPS = {
    "bf16-mixed AdamW (PyTorch AMP)": dict(precision="bf16-mixed"),
    "fp32 AdamW": dict(precision="fp32"),
    "bf16 AdamW (pure bf16)": dict(precision="bf16"),
    "bf16-mixed 8-bit AdamW": dict(optimizer="adamw-8bit"),
    "bf16-mixed SGD + momentum": dict(optimizer="sgd-momentum"),
    "bf16-mixed SGD": dict(optimizer="sgd"),
    "bf16-mixed Adafactor": dict(optimizer="adafactor"),
}
per_param = {}
for label, kw in SETUPS.items():
    c = memlib.estimate_training(MODEL, seq_len=SEQ, **kw).counts
    per_param[label] = (c["param_bytes"] / N, c["grad_bytes"] / N, c["optimizer_bytes"] / N)
ds = memlib.estimate_training(MODEL, seq_len=SEQ, zero_stage=1, dp=2).counts
per_param["DeepSpeed / ZeRO paper (fp16 working copy)"] = (
    ds["param_bytes_unsharded"] / N, ds["grad_bytes_unsharded"] / N, ds["optimizer_bytes_unsharded"] / N)
rows = [(label, f"{p:.2f}", f"{g:.2f}", f"{o:.2f}", f"**{p + g + o:.2f}**", f"{gb((p + g + o) * N):.1f} GB")
        for label, (p, g, o) in per_param.items()]
table_states = markdown_table(rows, ["setup", "params B/param", "grads B/param", "optimizer B/param",
                                     "total B/param", "LLaMA-7B model states"])
print(table_states)

# %% jupyter={"source_hidden": true} tags=["hide-input"]
amp = per_param["bf16-mixed AdamW (PyTorch AMP)"]
dsp = per_param["DeepSpeed / ZeRO paper (fp16 working copy)"]
pure = per_param["bf16 AdamW (pure bf16)"]
display(Markdown(table_states))
display(Markdown(
    f"**Mixed-precision AdamW is {sum(amp):.0f} bytes per parameter in both conventions**, split differently. "
    f"PyTorch AMP keeps the weights in fp32 ({amp[0]:.0f}), their gradients in fp32 ({amp[1]:.0f}) and AdamW's "
    f"exp_avg and exp_avg_sq in fp32 ({amp[2]:.0f}): {amp[0]:.0f}+{amp[1]:.0f}+{amp[2]:.0f}; the 16-bit copies "
    "are made on the fly by autocast (step 6). The ZeRO paper and DeepSpeed keep 16-bit working weights "
    f"({dsp[0]:.0f}) and gradients ({dsp[1]:.0f}) and count the fp32 master copy with the optimizer "
    f"(K = {dsp[2]:.0f}: master, momentum, variance): {dsp[0]:.0f}+{dsp[1]:.0f}+{dsp[2]:.0f}. "
    f"Pure bf16 AdamW (torch.optim.AdamW on bf16 parameters) halves everything: {sum(pure):.0f} bytes per "
    f"parameter. For LLaMA-7B, mixed precision means {fmt_bytes(est.model_state_bytes)} of model states "
    "before a single activation."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Step 3: where "12 bytes" and "18 bytes" come from
# Both numbers circulate. Each is a real count of something, just not of mixed-precision AdamW's model states.

# %%
# NBVAL_CHECK_OUTPUT
momentum = per_param["bf16-mixed SGD + momentum"]
twelve = {
    "16-bit weights + 16-bit grads + Adam m, v (forgets the fp32 master; seed 000's 2+2+8)":
        dsp[0] + dsp[1] + amp[2],
    "fp32 master + Adam m, v only (forgets weights and gradients; the ZeRO paper's K)": dsp[2],
    "SGD with momentum under AMP (fp32 weights, grads, momentum): a real 12": sum(momentum),
}
QLORA_65B_GB, QLORA_65B_PARAMS = 780, 65  # QLoRA paper, Sec. 1: "more than 780 GB" for LLaMA 65B
twelve["QLoRA paper's 780 GB for a 65B model"] = QLORA_65B_GB / QLORA_65B_PARAMS
# DeepSpeed's ZeRO-3 estimator (memlib.zero.deepspeed_zero3_estimate reproduces it).
# largest_layer_params=0 isolates the per-parameter term; additional_buffer_factor=1 removes the CPU margin.
ds_none = zero.deepspeed_zero3_estimate(N, 0, cpu_offload=False, additional_buffer_factor=1)
ds_opt = zero.deepspeed_zero3_estimate(N, 0, cpu_offload=True, cpu_offload_params=False, additional_buffer_factor=1)
ds_all = zero.deepspeed_zero3_estimate(N, 0, cpu_offload=True, cpu_offload_params=True, additional_buffer_factor=1)
per_largest = zero.deepspeed_zero3_estimate(N, 1, cpu_offload=False, additional_buffer_factor=1)[1] - ds_none[1]
eighteen = {"no offload: GPU": ds_none[1] / N,
            "offload optimizer: GPU": ds_opt[1] / N, "offload optimizer: CPU": ds_opt[0] / N,
            "offload optimizer + params: CPU": ds_all[0] / N}
for k, v in {**twelve, **eighteen}.items():
    print(f"{v:5.2f} B/param  {k}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(markdown_table([(k, f"{v:.0f}") for k, v in twelve.items()], ["a '12 bytes' you will hear", "B/param"])))
display(Markdown(
    f"**12** is what you get by dropping one term of the {sum(amp):.0f}: seed 000's 130+130+520 GB is "
    f"{twelve[next(iter(twelve))]:.0f} B/param (no fp32 master copy); the ZeRO paper's optimizer-only K is "
    f"{dsp[2]:.0f}; the QLoRA paper's \"more than 780 GB\" for 65B parameters is also "
    f"{twelve[list(twelve)[-1]]:.0f} B/param, a lower bound it quotes, not a full mixed-precision count. "
    f"SGD with momentum under AMP really is {sum(momentum):.0f}.\n\n"
    f"**18** is DeepSpeed's ZeRO-3 estimator (`estimate_zero3_model_states_mem_needs`, reproduced by "
    f"`memlib.zero.deepspeed_zero3_estimate`): {eighteen['no offload: GPU']:.0f} bytes per parameter spread "
    f"over the GPUs without offload. Its code names no terms, but its branches split them: offloading the "
    f"optimizer leaves {eighteen['offload optimizer: GPU']:.0f} on the GPU (the 16-bit parameters) and moves "
    f"{eighteen['offload optimizer: CPU']:.0f} to the CPU; offloading the parameters too moves all "
    f"{eighteen['offload optimizer + params: CPU']:.0f}. Read in the paper's terms, the "
    f"{eighteen['offload optimizer: CPU']:.0f} that travels with the optimizer is the fp32 master, momentum and "
    f"variance ({dsp[2]:.0f}) plus the gradient held in fp32 ({DTYPE_BYTES['fp32']}), the form DeepSpeed's "
    f"optimizer steps on. So DeepSpeed budgets the gradient at {DTYPE_BYTES['fp32']} bytes where the paper "
    f"counts {dsp[1]:.0f}: that is the extra "
    f"{eighteen['no offload: GPU'] - sum(dsp):.0f} over {sum(dsp):.0f}. On top, the estimator adds the largest "
    f"layer gathered on the GPU ({per_largest} bytes per parameter of that layer) and, by default, a 1.5x margin "
    "on the CPU side."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Step 4: the activations of one layer, tensor by tensor
# `est.layer.items` is the ledger of what one LLaMA decoder layer keeps for its backward
# (`memlib.activations.llama_layer_ledger`, derived from the Hugging Face implementation).

# %%
# NBVAL_CHECK_OUTPUT
tokens = est.setup.tokens
rows = [(f"`{name}`", why, f"{nbytes / 1e6:.1f}", f"{nbytes / (tokens * model.hidden_size):.2f}")
        for name, nbytes, why in est.layer.items]
rows.append(("**one layer**", "sum", f"**{est.layer.total / 1e6:.1f}**",
             f"**{est.layer.total / (tokens * model.hidden_size):.2f}**"))
table_layer = markdown_table(rows, ["tensor kept for backward", "why", "MB", "bytes per token per hidden unit (x sbh)"])
print(f"one layer {est.layer.total:,} bytes x {model.num_layers} layers = "
      f"{est.layer.total * model.num_layers:,} bytes")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(table_layer))
display(Markdown(
    f"One decoder layer keeps {fmt_bytes(est.layer.total)} at sequence {SEQ:,}; {model.num_layers} layers keep "
    f"{fmt_bytes(est.layer.total * model.num_layers)}. The largest items are the four MLP tensors of width "
    f"{model.intermediate_size:,} (SwiGLU's gate, SiLU, up and product) and, under AMP, the fp32 residual "
    "that each RMSNorm keeps plus one bf16 cast of the norm's output per projection that reads it."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Step 5: compare with Korthikanti's 34sbh + 5as²b
# `memlib.activations.korthikanti_layer_bytes` is the classic GPT-layer formula (Korthikanti
# et al. 2022, eq. 1), 16-bit activations with dropout masks; `recompute="selective"` drops its
# attention-score term.

# %%
# NBVAL_CHECK_OUTPUT
sbh = tokens * model.hidden_size
k_full = activations.korthikanti_layer_bytes(SEQ, 1, model.hidden_size, model.num_heads)
k_sel = activations.korthikanti_layer_bytes(SEQ, 1, model.hidden_size, model.num_heads, recompute="selective")
groups = {"RMSNorm fp32 inputs": "x_fp32", "RMSNorm outputs and casts": ("normalized", "out_casts", "_norm.out"),
          "attention (sdpa)": "sdpa.", "SwiGLU MLP": "mlp."}


def group_bytes(ledger, key):
    keys = (key,) if isinstance(key, str) else key
    return sum(n for name, n, _ in ledger.items if any(k in name for k in keys))


compare = {
    "Korthikanti GPT layer (with 5as²b)": k_full,
    "Korthikanti GPT layer, s² term dropped": k_sel,
    "LLaMA layer, bf16-mixed (memlib)": est.layer.total,
    "LLaMA layer, pure bf16 (memlib)": est_bf16.layer.total,
}
for k, v in compare.items():
    print(f"{k:<42}{v / 1e6:9.1f} MB  {v / sbh:6.2f} x sbh")
for g, key in groups.items():
    print(f"  {g:<40}{group_bytes(est.layer, key) / sbh:6.2f} x sbh (bf16-mixed)  "
          f"{group_bytes(est_bf16.layer, key) / sbh:6.2f} x sbh (bf16)")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(markdown_table(
    [(k, f"{v / 1e6:.1f}", f"{v / sbh:.1f}") for k, v in compare.items()]
    + [(f"of which {g} (bf16-mixed / bf16)", "",
        f"{group_bytes(est.layer, key) / sbh:.1f} / {group_bytes(est_bf16.layer, key) / sbh:.1f}")
       for g, key in groups.items()],
    [f"one layer, s = {SEQ}, b = 1", "MB", "x sbh"])))
display(Markdown(
    f"Korthikanti's formula gives {k_full / est.layer.total:.1f}x memlib's LLaMA layer here, because of its s² "
    f"term: {(k_full - k_sel) / sbh:.0f} sbh at this length, the attention scores, softmax output and its "
    f"dropout mask. A fused attention kernel (sdpa / FlashAttention) keeps the row log-sum-exp "
    f"({group_bytes(est.layer, 'logsumexp') / 1e6:.2f} MB) instead of the s x s matrix. Without that term, "
    f"Korthikanti's {k_sel / sbh:.0f} sbh is *below* LLaMA's {est.layer.total / sbh:.1f} sbh under AMP "
    f"({est_bf16.layer.total / sbh:.1f} sbh in pure bf16), because LLaMA differs in four ways: "
    f"(1) **no dropout**, so none of the 1-byte masks; (2) **RMSNorm keeps its input in fp32** "
    f"({group_bytes(est_bf16.layer, 'x_fp32') / sbh:.0f} sbh for two norms even in pure bf16) and, under AMP, "
    f"one bf16 cast of the norm output per consuming projection; (3) **SwiGLU** keeps four tensors of width "
    f"{model.intermediate_size:,} = {model.intermediate_size / model.hidden_size:.2f}h "
    f"({group_bytes(est.layer, 'mlp.') / sbh:.1f} sbh) where a GELU MLP keeps two of width 4h plus a mask; "
    f"(4) **sdpa** stores q, k, v and the output ({group_bytes(est.layer, 'sdpa.') / sbh:.1f} sbh) and no s² "
    "tensor. The formula is right for the GPT layer it describes; for LLaMA, count the tensors."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Step 6: the moments of a step, and the peak
# `est.moments` lists what is alive at each moment memlib models (forward at the loss; backward
# at the loss gradient, the top layer, the first layer and the embedding; `optimizer.step()`).
# `est.peak_bytes` is the largest of them.

# %%
# NBVAL_CHECK_OUTPUT
SHORT = {"at the loss (log-softmax over the vocabulary)": "forward: loss",
         "start: gradient of the loss over the vocabulary": "backward: loss grad",
         "top decoder layer, mlp backward": "backward: top MLP", "top decoder layer, attn backward": "backward: top attn",
         "first decoder layer, mlp backward": "backward: first MLP",
         "first decoder layer, attn backward": "backward: first attn",
         "embedding backward": "backward: embedding", "optimizer.step()": "optimizer: step()"}


def moment_rows(e):
    out = []
    for mo in e.moments:
        parts = ", ".join(f"{k.replace('_', ' ')} {gb(v):.2f}" for k, v in
                          sorted(mo.parts.items(), key=lambda kv: -kv[1]) if v)
        mark = " **(peak)**" if mo is e.peak_moment else ""
        out.append((SHORT.get(mo.where, mo.where) + mark, f"{gb(mo.total):.2f}", f"{gib(mo.total):.2f}", parts))
    return out


table_moments = markdown_table(moment_rows(est), ["moment", "GB", "GiB", "alive (GB)"])
print(f"peak {fmt_bytes(est.peak_bytes)} during {est.phase} ({est.peak_moment.where})")
fwd = est.moments[0]
naive = est.model_state_bytes + fwd.parts["activations"] + fwd.parts["autocast_copies"] + fwd.parts["logits_and_loss"]
print(f"naive sum of everything {fmt_bytes(naive)}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
peak_parts = est.peak_moment.parts
opt_moment = est.moments[-1]
display(Markdown(table_moments))
display(Markdown(
    f"The peak is **{fmt_bytes(est.peak_bytes)}**, at the start of the backward: the loss gradient over "
    f"the {model.vocab_size:,}-word vocabulary is being formed while all saved activations "
    f"({gb(peak_parts['activations']):.2f} GB) and autocast's bf16 weight copies "
    f"({gb(peak_parts['autocast_copies']):.2f} GB, one per matmul weight, kept until that matmul's backward) "
    f"are still alive. The optimizer step is close behind at {fmt_bytes(opt_moment.total)}: by then the "
    f"activations are gone, but the gradients ({gb(opt_moment.parts['gradients']):.2f} GB) and the step's "
    f"temporaries ({gb(opt_moment.parts['temporaries']):.2f} GB: AdamW's sqrt and quotient for the largest "
    "tensor) are there. Gradients and activations are never both whole: as the backward walks down the "
    "layers, activations are freed and gradients appear. Adding every term, as write-ups do, gives "
    f"{fmt_bytes(naive)}, {gb(naive - est.peak_bytes):.1f} GB more than is ever alive at once."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Step 7: GB or GiB, and does it fit?
# `memlib.fit.usable_bytes` is the capacity torch reports for a card; `memlib.fits` adds the CUDA
# context (0.5 GiB) and allocator headroom (5% of the peak) and compares.

# %%
# NBVAL_CHECK_OUTPUT
a100, v100 = memlib.get_gpu("a100-80gb"), memlib.get_gpu("v100-32gb")
near = {s: memlib.estimate_training(MODEL, seq_len=s, precision="bf16") for s in (6144, 6400)}
for s, e in near.items():
    print(f"pure bf16, seq {s}: peak {fmt_bytes(e.peak_bytes)}; {memlib.fits(e, a100)}")
print(f"A100 80GB: {fmt_bytes(usable_bytes(a100))}; V100 32GB: nominal {fmt_bytes(v100.memory_bytes)}, "
      f"reported {fmt_bytes(usable_bytes(v100))}")
print(memlib.fits(est, a100))

# %%
(s1, e1), (s2, e2) = near.items()
card = gib(usable_bytes(a100))
v1, v2 = memlib.fits(e1, a100), memlib.fits(e2, a100)
display(Markdown(
    f"NVIDIA's \"{card:.0f}GB\" is **{card:.0f} GiB = {gb(usable_bytes(a100)):.1f} GB**; a V100 \"32GB\" is 32 GiB = "
    f"{gb(v100.memory_bytes):.2f} GB nominal, and torch reports {gib(usable_bytes(v100)):.2f} GiB of it. "
    f"Pure-bf16 LLaMA-7B at sequence {s1:,} peaks at {gb(e1.peak_bytes):.2f} GB: more than {card:.0f} GB, so a "
    f"reader who takes the card as {card:.0f} GB says it does not fit, yet it is {gib(e1.peak_bytes):.2f} GiB and "
    f"memlib says it {'fits' if v1.fits else 'does not fit'} with {v1.margin_gib:+.2f} GiB to spare after "
    f"context and headroom. At {s2:,} the peak is {gib(e2.peak_bytes):.2f} GiB, under {card:.0f} GiB on paper, but "
    f"with the CUDA context and allocator headroom it {'fits' if v2.fits else 'does not fit'} "
    f"({v2.margin_gib:+.2f} GiB). Our bf16-mixed baseline needs {gib(memlib.fits(est, a100).required_bytes):.1f} "
    f"GiB: it {'fits' if memlib.fits(est, a100).fits else 'does not fit'} on one A100 {card:.0f}GB either way."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Step 8: are these numbers real?
# `validation/results.json` holds peaks measured from real PyTorch training steps of transformers'
# own model classes; `memlib.measured.estimate_case` turns each recorded case into the matching estimate.

# %%
# NBVAL_CHECK_OUTPUT
results = json.loads(Path("../validation/results.json").read_text())
errors = []
for case in results["cases"]:
    measured = case["measured"]["peak_bytes"]
    errors.append(abs(estimate_case(case["inputs"]).peak_bytes - measured) / measured)
meta = results["metadata"]
print(f"{len(errors)} cases, torch {meta['torch']}, transformers {meta['transformers']}: "
      f"median |error| {statistics.median(errors):.3%}, worst {max(errors):.3%}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"Over the {len(errors)} recorded single-GPU cases (torch {meta['torch']}, transformers "
    f"{meta['transformers']}), memlib's peak is off by a median of **{statistics.median(errors):.3%}** and at "
    f"worst {max(errors):.3%} (`benchmarks/accuracy.py` prints each case). That is what lets this notebook "
    "say \"alive at the peak\" rather than \"roughly\"."))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Charts · 图
#
# **What is alive at the peak, by setup.** Look at how little the activations change across
# setups while the model states halve (pure bf16) or shrink (8-bit AdamW, SGD), and at which bars
# cross the dashed A100 80GB line.

# %%
BARS = {
    "fp32\nAdamW": dict(precision="fp32"),
    "bf16-mixed\nAdamW": dict(),
    "bf16-mixed\n8-bit AdamW": dict(optimizer="adamw-8bit"),
    "bf16-mixed\nSGD": dict(optimizer="sgd"),
    "bf16-mixed\nfull recompute": dict(recompute="full"),
    "bf16\nAdamW": dict(precision="bf16"),
    "bf16\n8-bit AdamW": dict(precision="bf16", optimizer="adamw-8bit"),
}
bar_estimates = {label: memlib.estimate_training(MODEL, seq_len=SEQ, **kw) for label, kw in BARS.items()}
fig, ax = plt.subplots(figsize=(8, 3.8))
breakdown_bars(bar_estimates, gpu=GPU, ax=ax, title=f"{MODEL}, seq {SEQ}, micro-batch 1: alive at the peak")
ax.set_ylim(top=ax.get_ylim()[1] * 1.08)  # room for the value labels under the title
fig.tight_layout()
plt.show()

# %%
fits_labels = [lab.replace("\n", " ") for lab, e in bar_estimates.items() if memlib.fits(e, GPU).fits]
display(Markdown(
    f"On one A100 80GB, only these fit after context and headroom: {', '.join(fits_labels)}. Under AMP the "
    f"model states alone ({gb(est.model_state_bytes):.1f} GB) already exceed the card."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# **The moments of one step.** Each bar is one moment of `est.moments`; the tallest is the peak. Look
# at how activations and autocast copies (red, purple) turn into gradients (orange) from left to right.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
moment_views = {SHORT.get(mo.where, mo.where).replace(": ", "\n"): SimpleNamespace(breakdown=mo.parts, peak_bytes=mo.total)
                for mo in est.moments}
fig, ax = plt.subplots(figsize=(8, 3.8))
breakdown_bars(moment_views, gpu=GPU, ax=ax, title=f"{MODEL} bf16-mixed AdamW, seq {SEQ}: the moments of a step")
ax.set_ylabel("GiB alive")
ax.set_ylim(top=ax.get_ylim()[1] * 1.08)
fig.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Peak against sequence length, several models** (pure bf16 AdamW, micro-batch 1). Dotted
# verticals mark where each model stops fitting under the A100's 80 GiB. Look for the flat start
# (the optimizer step is the peak and does not depend on tokens) and the bend where activations take over.

# %%
XS = [2 ** i for i in range(9, 16)]
SWEEP_MODELS = ["qwen2-0.5b", "llama-7b", "mistral-7b", "llama-3-8b", "llama-2-13b"]
series = {m: [memlib.estimate_training(m, seq_len=x, precision="bf16").peak_bytes for x in XS] for m in SWEEP_MODELS}
fig, ax = plt.subplots(figsize=(7.5, 3.8))
sweep(XS, series, gpu=GPU, xlabel="sequence length (tokens), micro-batch 1", ax=ax, logx=True,
      title="pure bf16 AdamW, full fine-tuning: peak per GPU")
plt.show()

# %%
cap = usable_bytes(a100)
cross = {m: crossover(XS, series[m], cap) for m in SWEEP_MODELS}
lines = [f"{m}: " + ("fits at every length shown" if x is None else "over at every length shown" if x == XS[0]
                    else f"over from {x:,} tokens") for m, x in cross.items()]
qwen = memlib.get_model("qwen2-0.5b")
l2_13 = memlib.estimate_training("llama-2-13b", seq_len=XS[0], precision="bf16")
display(Markdown(
    f"Where each peak crosses {gib(cap):.0f} GiB (before context and headroom): " + "; ".join(lines) + ". "
    f"Qwen2-0.5B has only {qwen.num_params / 1e9:.2f}B parameters, but its {qwen.vocab_size:,}-word vocabulary "
    "makes the logits and the loss grow with every token. LLaMA-2-13B's model states alone are "
    f"{gib(l2_13.model_state_bytes):.1f} GiB, {'over' if l2_13.model_state_bytes > cap else 'under'} the line."))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. Playground · 动手试
#
# Try: switch precision between bf16-mixed and bf16 and watch the model states halve, then move the
# sequence slider to 8192 and see the peak move from the optimizer step to the backward.

# %%
Playground(model="llama-7b", gpu="a100-80gb")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Fact-check of the circulating answer · 纠错
#
# Claims about memory anatomy from the three seeds, quoted as written. memlib's figures use the
# exact parameter counts (LLaMA-7B, LLaMA-65B as the stand-in for Vicuna-65B), sequence 2048,
# micro-batch 1.

# %%
# NBVAL_CHECK_OUTPUT
m65 = memlib.get_model("llama-65b")
N65 = m65.num_params
e65 = memlib.estimate_training(m65, seq_len=SEQ)                       # PyTorch AMP
e65_16 = memlib.estimate_training(m65, seq_len=SEQ, precision="fp16")  # 16-bit everything
z65_0 = zero.zero_model_state_bytes(N65, 0, 1)
z65_3 = zero.zero_model_state_bytes(N65, 3, 4)
e7_rc = memlib.estimate_training(MODEL, seq_len=SEQ, recompute="full")
e7_rc_bf16 = memlib.estimate_training(MODEL, seq_len=SEQ, precision="bf16", recompute="full")
e7_z1 = memlib.estimate_training(MODEL, seq_len=SEQ, zero_stage=1, dp=1)
e7_z3 = memlib.estimate_training(MODEL, seq_len=SEQ, zero_stage=3, dp=1)
e7_8 = memlib.estimate_training(MODEL, seq_len=SEQ, optimizer="adamw-8bit")
e7_8rc = memlib.estimate_training(MODEL, seq_len=SEQ, optimizer="adamw-8bit", recompute="full")
e7_fp16 = memlib.estimate_training(MODEL, seq_len=SEQ, precision="fp16")
z7_3_8 = zero.zero_model_state_bytes(N, 3, 8)
z15 = zero.zero_model_state_bytes(1_500_000_000, 0, 1)
acts7 = est.moments[0].parts["activations"]
casts7 = est.moments[0].parts["autocast_copies"]
acts7_bf16 = est_bf16.moments[0].parts["activations"]
acts7_rc = e7_rc.moments[0].parts["activations"]
acts7_rc_bf16 = e7_rc_bf16.moments[0].parts["activations"]
G = lambda b: f"{gb(b):.1f} GB"  # noqa: E731

rows = [
    ("000", "模型参数：65B × 2 bytes（FP16）= 130GB",
     f"{G(e65_16.counts['param_bytes'])} in 16-bit ({N65 / 1e9:.2f}B params); fp32 under AMP {G(e65.counts['param_bytes'])}",
     "✅", "Right for the 16-bit working copy (ZeRO/DeepSpeed layout)."),
    ("000", "梯度：与参数同大小，130GB（混合精度下梯度为FP16）",
     f"{G(e65_16.counts['grad_bytes'])} in fp16; {G(e65.counts['grad_bytes'])} under PyTorch AMP",
     "⚠️", "True in DeepSpeed's layout; PyTorch AMP keeps gradients in fp32 (the parameters' dtype)."),
    ("000", "优化器状态：AdamW需存储momentum和variance，均为FP32（4 bytes），即65B × 4 × 2 = 520GB",
     f"m + v {G(e65.counts['optimizer_bytes'])}; + fp32 master {G(e65.counts['param_bytes'])}",
     "⚠️", "m and v are right; the fp32 master copy that mixed precision needs is missing."),
    ("000", "总需求：130（参数）+ 130（梯度）+ 520（优化器）= 780GB（纯数据，不含中间激活值）",
     f"{G(z65_0)} = {z65_0 / N65:.0f} B/param (memlib model states {G(e65.model_state_bytes)})",
     "❌", f"780 GB is {QLORA_65B_GB / QLORA_65B_PARAMS:.0f} B/param (the QLoRA paper's lower bound); "
           f"with the master copy it is {z65_0 / N65:.0f}."),
    ("000", "激活值：以序列长度2048、batch size 1为例，每层约1-2GB，65B约40层，额外40-80GB",
     f"{G(e65.layer.total)} per layer x {m65.num_layers} layers = {G(e65.layer.total * m65.num_layers)}",
     "⚠️", f"LLaMA-65B has {m65.num_layers} layers, not 40; the total lands in the range by two errors cancelling. "
           f"At the 65B peak ({e65.phase}) {gb(e65.breakdown['activations']):.0f} GB of activations are alive."),
    ("000", "ZeRO-3（分片）：将参数、梯度、优化器状态分片到4卡，每卡需存储：参数130/4=32.5GB + 梯度130/4=32.5GB + 优化器520/4=130GB = 195GB",
     f"{G(z65_3)} per GPU (memlib.zero.zero_model_state_bytes, stage 3, 4 GPUs)",
     "❌", f"Inherits the missing master copy: {z65_0 / N65:.0f} B/param over 4 GPUs, not "
           f"{QLORA_65B_GB / QLORA_65B_PARAMS:.0f}."),
    ("001", "参数：FP16 下 7B × 2 bytes = 14GB",
     f"{G(est_bf16.counts['param_bytes'])} ({N / 1e9:.2f}B params)", "✅", "Right (7B is nominal)."),
    ("001", "加上参数本身 FP32 副本，共 7B × 4 × 3 = 84GB",
     f"{G(est.counts['param_bytes'] + est.counts['optimizer_bytes'])} (fp32 master + m + v)",
     "✅", f"Right: the ZeRO paper's K = {dsp[2]:.0f}; with 16-bit weights and grads the total is "
           f"{sum(dsp):.0f} B/param."),
    ("001", "激活值约 2-3GB（使用激活重计算后）。若不重计算，可达 20-30GB",
     f"full recompute {G(acts7_rc)}; none {G(acts7)} + autocast copies {G(casts7)}",
     "⚠️", "The no-recompute range holds only if autocast's bf16 weight copies are counted; with recompute it is "
           "below 2-3 GB."),
    ("001", "总显存：14 + 14 + 84 + 3 = 115GB，远超 80GB",
     f"peak {G(e7_rc.peak_bytes)} with full recompute ({e7_rc.phase}); {G(est.peak_bytes)} without",
     "✅", "Conclusion right (does not fit); the peak is a moment, not this sum."),
    ("001", "单卡用 ZeRO-1 可将优化器状态从 84GB 降到 28GB",
     f"ZeRO-1 on 1 GPU: peak {G(e7_z1.peak_bytes)} = no ZeRO {G(est.peak_bytes)}",
     "❌", "ZeRO partitions across data-parallel GPUs; over one GPU it shards nothing."),
    ("001", "ZeRO-3 在单卡上等价于 ZeRO-1",
     f"peak on 1 GPU: ZeRO-3 {G(e7_z3.peak_bytes)}, ZeRO-1 {G(e7_z1.peak_bytes)}, no ZeRO {G(est.peak_bytes)}",
     "⚠️", "Equivalent, but to no ZeRO at all, not to a ZeRO-1 that saves memory."),
    ("001", "8-bit Adam，将优化器状态压缩到 2 bytes 每参数，即 7B × 2 × 2 = 28GB（参数 FP32 副本 + 8-bit 状态）",
     f"8-bit states {G(e7_8.counts['optimizer_bytes'])} ({e7_8.counts['optimizer_bytes'] / N:.2f} B/param); "
     f"+ fp32 weights {G(e7_8.counts['param_bytes'])}",
     "❌", f"About {e7_8.counts['optimizer_bytes'] / N:.0f} B/param is both states together; the fp32 weights add "
           f"{e7_8.counts['param_bytes'] / N:.0f} B/param on top."),
    ("001", "总显存：14 + 14 + 28 + 3 = 59GB，可放入 80GB",
     f"peak {G(e7_8rc.peak_bytes)} (AMP, 8-bit AdamW, full recompute); "
     f"{'fits' if memlib.fits(e7_8rc, a100).fits else 'does not fit'} an A100 80GB",
     "⚠️", "Conclusion right, number low: AMP's weights and gradients are fp32."),
    ("001", "LLaMA 7B 在 seq_len=2048、batch=1 时，激活值约 2.5GB（无重计算），重计算后约 0.8GB",
     f"{G(acts7)} AMP / {G(acts7_bf16)} bf16; recompute {G(acts7_rc)} / {G(acts7_rc_bf16)}",
     "❌", f"Without recompute memlib finds {acts7 / 2.5e9:.0f}x the seed's 2.5GB (and the same seed says 20-30GB elsewhere)."),
    ("001", "以 1.5B 为例：参数 3GB（FP16）、梯度 3GB、优化器状态（Adam FP32）18GB",
     f"{G(z15)} model states for 1.5B params (2+2+12)", "✅", f"Right: 3 + 3 + 18 GB = {z15 / 1.5e9:.0f} B/param."),
    ("003", "参数占 14GB，梯度同 14GB，Adam 优化器状态（动量+方差）占 28GB，合计 56GB",
     f"pure fp16 {G(e7_fp16.model_state_bytes)}; mixed precision {G(est.model_state_bytes)}",
     "⚠️", f"Right only for pure 16-bit AdamW ({e7_fp16.model_state_bytes / N:.0f} B/param); mixed precision is "
           f"{est.model_state_bytes / N:.0f}."),
    ("003", "ZeRO-3 配合 8 卡，每卡仅存 14GB/8=1.75GB 参数，加上梯度、优化器状态，单卡显存从 56GB 降到约 10GB",
     f"{G(z7_3_8)} model states per GPU", "⚠️",
     f"With {z65_0 / N65:.0f} B/param the states alone exceed 10 GB; activations come on top."),
]
table_fc = markdown_table(rows, ["seed", "claim (as written)", "memlib", "verdict", "why"])
print(f"{len(rows)} claims checked")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(table_fc))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. The 30-second answer · 30 秒回答

# %%
nb_bf16 = sum(pure)
fit_en, fit_zh = ("fits", "放得下") if memlib.fits(est, a100).fits else ("does not fit", "放不下")
display(Markdown(
    f"**English.** Four kinds of bytes. Model states scale with parameters: mixed-precision AdamW is "
    f"{sum(amp):.0f} bytes per parameter (PyTorch AMP: fp32 weights {amp[0]:.0f} + fp32 gradients {amp[1]:.0f} + "
    f"Adam moments {amp[2]:.0f}; the ZeRO paper splits the same {sum(dsp):.0f} as {dsp[0]:.0f}+{dsp[1]:.0f}+"
    f"{dsp[2]:.0f}), so LLaMA-7B ({N / 1e9:.2f}B) needs {gb(est.model_state_bytes):.0f} GB before any "
    f"activation. Activations scale with tokens: at {SEQ:,} tokens they are {gb(acts7):.0f} GB, plus "
    f"{gb(casts7):.0f} GB of autocast weight copies, and about {gb(acts7_rc):.1f} GB with full recomputation. "
    f"The peak is the largest moment of the step, not the sum: {gb(est.peak_bytes):.0f} GB "
    f"({gib(est.peak_bytes):.0f} GiB) at the start of the backward, so it {fit_en} one {card:.0f} GiB A100. "
    f"Pure bf16 AdamW is {nb_bf16:.0f} bytes per parameter and peaks at {gb(est_bf16.peak_bytes):.0f} GB.\n\n"
    f"**中文。** 显存分四块。模型状态随参数量线性增长：混合精度 AdamW 每个参数 {sum(amp):.0f} 字节"
    f"（PyTorch AMP：fp32 权重 {amp[0]:.0f} + fp32 梯度 {amp[1]:.0f} + Adam 两个动量 {amp[2]:.0f}；ZeRO 论文的拆法是 "
    f"{dsp[0]:.0f}+{dsp[1]:.0f}+{dsp[2]:.0f}，总数相同），LLaMA-7B（{N / 1e9:.2f}B 参数）光模型状态就要 "
    f"{gb(est.model_state_bytes):.0f} GB。激活值随 token 数增长：{SEQ} 个 token 时约 {gb(acts7):.0f} GB，"
    f"另有 autocast 的 bf16 权重副本 {gb(casts7):.0f} GB；全量重计算后约 {gb(acts7_rc):.1f} GB。峰值是一步中"
    f"最大的那个时刻，而不是各项相加：{gb(est.peak_bytes):.0f} GB（{gib(est.peak_bytes):.0f} GiB），出现在反向"
    f"传播开始时，单张 {card:.0f} GiB 的 A100 {fit_zh}。纯 bf16 AdamW 每参数 {nb_bf16:.0f} 字节，峰值 "
    f"{gb(est_bf16.peak_bytes):.0f} GB。"))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8. Follow-up questions · 追问

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### What changes with pure bf16 AdamW? With 8-bit AdamW? With SGD?

# %%
# NBVAL_CHECK_OUTPUT
alts = {"bf16-mixed AdamW": est, "pure bf16 AdamW": est_bf16,
        "bf16-mixed 8-bit AdamW": e7_8, "pure bf16 8-bit AdamW": bar_estimates["bf16\n8-bit AdamW"],
        "bf16-mixed SGD": bar_estimates["bf16-mixed\nSGD"],
        "bf16-mixed SGD + momentum": memlib.estimate_training(MODEL, seq_len=SEQ, optimizer="sgd-momentum")}
alt_rows = [(k, f"{e.model_state_bytes / N:.2f}", f"{gb(e.model_state_bytes):.1f}", f"{gb(e.peak_bytes):.1f}", e.phase)
            for k, e in alts.items()]
print(markdown_table(alt_rows, ["setup", "model states B/param", "model states GB", "peak GB", "peak in"]))

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(markdown_table(alt_rows, ["setup", "model states B/param", "model states GB", "peak GB", "peak in"])))
display(Markdown(
    f"Pure bf16 halves the model states to {nb_bf16:.0f} B/param and drops the autocast copies; the price is "
    "numerical: bf16 weights cannot absorb updates much smaller than themselves, which is why mixed precision "
    "keeps an fp32 master (Micikevicius et al. 2018). bitsandbytes' 8-bit AdamW stores both moments in "
    f"{e7_8.counts['optimizer_bytes'] / N:.2f} B/param (uint8 plus an fp32 scale per 2,048-element block); "
    f"SGD stores nothing and SGD with momentum one buffer. Note how the peak moves to the backward once the "
    "optimizer side shrinks."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Why is the peak in the backward here, and in the optimizer step for a bigger model?

# %%
# NBVAL_CHECK_OUTPUT
def bwd_vs_opt(e):
    bwd = max((mo for mo in e.moments if mo.name == "backward"), key=lambda mo: mo.total)
    opt = next(mo for mo in e.moments if mo.name == "optimizer")
    return bwd, opt


pair = {m: memlib.estimate_training(m, seq_len=SEQ) for m in ("llama-7b", "llama-13b")}
for m, e in pair.items():
    bwd, opt = bwd_vs_opt(e)
    print(f"{m}: backward {gb(bwd.total):.2f} GB, optimizer {gb(opt.total):.2f} GB -> peak in {e.phase}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
(b7, o7), (b13, o13) = bwd_vs_opt(pair["llama-7b"]), bwd_vs_opt(pair["llama-13b"])


def extra(mo):  # what a moment holds beyond parameters and optimizer states
    return mo.total - mo.parts["parameters"] - mo.parts["optimizer"]


display(Markdown(
    "Both moments hold the parameters and optimizer states. The backward's highest moment adds what the "
    "forward left behind (activations, autocast copies, logits); the optimizer step adds the gradients "
    "and its temporaries. The first grows with tokens x layers x width, the second with parameters. For "
    f"LLaMA-7B at {SEQ:,} tokens the backward holds {gb(b7.total - o7.total):+.2f} GB more than the step "
    f"({gb(extra(b7)):.2f} GB of activations, copies and logits vs {gb(extra(o7)):.2f} GB of gradients, "
    f"temporaries and logits); for LLaMA-13B it is {gb(b13.total - o13.total):+.2f} GB "
    f"({gb(extra(b13)):.2f} vs {gb(extra(o13)):.2f}), so the optimizer step is the peak. Shorter sequences or "
    "recomputation push the peak to the optimizer step; longer sequences and bigger micro-batches push it "
    "to the backward."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### How much does sequence length matter?

# %%
# NBVAL_CHECK_OUTPUT
SEQ_SETUPS = {"bf16-mixed AdamW": dict(), "bf16 AdamW": dict(precision="bf16"),
              "bf16 8-bit AdamW": dict(precision="bf16", optimizer="adamw-8bit"),
              "bf16 AdamW, full recompute": dict(precision="bf16", recompute="full")}
seq_series = {k: [memlib.estimate_training(MODEL, seq_len=x, **kw).peak_bytes for x in XS] for k, kw in SEQ_SETUPS.items()}
eager = {s: memlib.estimate_training(MODEL, seq_len=s, precision="bf16", attention="eager").layer.total
         for s in (SEQ, 2 * SEQ)}
sdpa = {s: memlib.estimate_training(MODEL, seq_len=s, precision="bf16").layer.total for s in (SEQ, 2 * SEQ)}
print(f"one layer, bf16: sdpa {gb(sdpa[SEQ]):.3f} -> {gb(sdpa[2 * SEQ]):.3f} GB, "
      f"eager {gb(eager[SEQ]):.3f} -> {gb(eager[2 * SEQ]):.3f} GB ({SEQ} -> {2 * SEQ})")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
rc_line = seq_series["bf16 AdamW, full recompute"]
fig, ax = plt.subplots(figsize=(7.5, 3.8))
sweep(XS, seq_series, gpu=GPU, xlabel="sequence length (tokens), micro-batch 1", ax=ax, logx=True,
      title=f"{MODEL}: peak per GPU against sequence length")
plt.show()
display(Markdown(
    f"With a fused attention kernel the saved activations are linear in tokens: doubling {SEQ:,} to {2 * SEQ:,} takes "
    f"one layer from {gb(sdpa[SEQ]):.3f} to {gb(sdpa[2 * SEQ]):.3f} GB ({sdpa[2 * SEQ] / sdpa[SEQ]:.1f}x). Eager "
    f"attention stores the s x s probabilities, so the same doubling goes from {gb(eager[SEQ]):.3f} to "
    f"{gb(eager[2 * SEQ]):.3f} GB ({eager[2 * SEQ] / eager[SEQ]:.1f}x). Full recomputation keeps only each layer's "
    f"input, which is why its line only climbs from {gib(rc_line[0]):.1f} to {gib(rc_line[-1]):.1f} GiB between "
    f"{XS[0]:,} and {XS[-1]:,} tokens."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### 梯度检查点具体节省多少显存？(seed 001's follow-up: how much does checkpointing save?)

# %%
# NBVAL_CHECK_OUTPUT
saved = acts7 - acts7_rc
print(f"activations at the loss: none {gb(acts7):.2f} GB, full {gb(acts7_rc):.2f} GB; "
      f"autocast copies {gb(casts7):.2f} -> {gb(e7_rc.moments[0].parts['autocast_copies']):.2f} GB at the loss, "
      f"{gb(e7_rc.moments[1].parts['autocast_copies']):.2f} GB from the backward on; peak {gb(est.peak_bytes):.2f} -> "
      f"{gb(e7_rc.peak_bytes):.2f} GB")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"Full recomputation cuts the saved activations from {gb(acts7):.2f} GB to {gb(acts7_rc):.2f} GB "
    f"({saved / acts7:.0%} less, not the 50-70% the seed quotes) and lets autocast's weight copies die with the "
    f"forward. The peak only falls from {gb(est.peak_bytes):.1f} to {gb(e7_rc.peak_bytes):.1f} GB because the "
    f"model states dominate and the peak moves to the {e7_rc.phase} step. The cost is one extra forward pass "
    "of each layer during the backward."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Why does LLaMA-3-8B need more than LLaMA-7B beyond its parameters?

# %%
# NBVAL_CHECK_OUTPUT
l3 = memlib.estimate_training("llama-3-8b", seq_len=SEQ)
print(f"logits and loss at the loss: llama-7b {gb(est.moments[0].parts['logits_and_loss']):.2f} GB, "
      f"llama-3-8b {gb(l3.moments[0].parts['logits_and_loss']):.2f} GB")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"Its vocabulary is {memlib.get_model('llama-3-8b').vocab_size:,} words against {model.vocab_size:,}: the "
    f"logits, their fp32 upcast and the log-softmax over the vocabulary take "
    f"{gb(l3.moments[0].parts['logits_and_loss']):.2f} GB at the loss instead of "
    f"{gb(est.moments[0].parts['logits_and_loss']):.2f} GB, at only {SEQ:,} tokens. These scale with tokens x "
    "vocabulary and are easy to forget."))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9. Pitfalls and further reading · 避坑与延伸阅读
#
# **Pitfalls**
# - Saying "2 bytes per parameter" for training. That is one 16-bit copy of the weights; training with
#   mixed-precision AdamW keeps 16.
# - Forgetting the fp32 master copy (12 instead of 16) or counting PyTorch AMP's gradients as fp16.
# - Adding activations to all the gradients: they never coexist whole; the peak is a moment.
# - Quoting a GPT activation formula (with its s² term and dropout) for LLaMA with a fused attention kernel.
# - Forgetting autocast's 16-bit weight copies, the logits over the vocabulary and the optimizer's temporaries.
# - Comparing GB with GiB: NVIDIA's "80GB" is 80 GiB, and what you can use is less (CUDA context,
#   allocator fragmentation).
# - Expecting ZeRO to save anything on one GPU.
#
# **Further reading**
# - Rajbhandari et al. 2020, *ZeRO: Memory Optimizations Toward Training Trillion Parameter Models*,
#   [arXiv:1910.02054](https://arxiv.org/abs/1910.02054) (Sec. 3.1: 2+2+12 bytes per parameter).
# - Korthikanti et al. 2022, *Reducing Activation Recomputation in Large Transformer Models*,
#   [arXiv:2205.05198](https://arxiv.org/abs/2205.05198) (Sec. 4: 34sbh + 5as²b).
# - Micikevicius et al. 2018, *Mixed Precision Training*, [arXiv:1710.03740](https://arxiv.org/abs/1710.03740).
# - PyTorch, *Automatic Mixed Precision* ([torch.amp docs](https://pytorch.org/docs/stable/amp.html)).
# - Dettmers et al. 2022, *8-bit Optimizers via Block-wise Quantization*,
#   [arXiv:2110.02861](https://arxiv.org/abs/2110.02861).
# - Dettmers et al. 2023, *QLoRA*, [arXiv:2305.14314](https://arxiv.org/abs/2305.14314) (the 780 GB figure).
# - DeepSpeed, *Memory Requirements* ([deepspeed.readthedocs.io/en/latest/memory.html](https://deepspeed.readthedocs.io/en/latest/memory.html)).
