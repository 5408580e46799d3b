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
# # 09 · deep dive · 深入：量化
#
# The material behind [notebook 09](09_quantization.ipynb)'s answer, for a second reading: more follow-up
# questions, the fact-check of the claims that circulate, and the papers' accuracy and speed tables quoted
# with their table numbers.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
# %matplotlib inline
import matplotlib.pyplot as plt
from IPython.display import Markdown, display

from memlib.learn.kit import GB
from memlib import estimate_inference, fits, fmt_bytes, get_gpu, get_model, max_batch
from memlib.training.explain import markdown_table
from memlib.learn.factcheck import Claim, fact_check_table
from memlib.serving import decode_bound
from memlib.serving.inference import kv_cache_bytes, quantized_linear_bytes
from memlib.serving.quantization import (FLOAT_FORMATS, LLM_INT8_BLOOM_MS_PER_TOKEN, LLM_INT8_MATMUL_SPEEDUP,
                                         NF4_DOUBLE_QUANT_BITS, SCALED_FORMATS, SMOOTHQUANT_LATENCY_MS, affine_params,
                                         bits_per_weight, decode_crossover_batch, decode_speedup,
                                         decode_speedup_end_batch, scaled_format_bits)

MODEL, GPU, CTX, SHORT = "llama-2-70b", "h100-80gb", 4096, 256   # as on the core page
FORMATS = ("bf16", "int8", "int4-awq", "nf4")
m, g = get_model(MODEL), get_gpu(GPU)
table5, table6, sq10 = dict(LLM_INT8_MATMUL_SPEEDUP), dict(LLM_INT8_BLOOM_MS_PER_TOKEN), dict(SMOOTHQUANT_LATENCY_MS)


# %% [markdown] slideshow={"slide_type": "slide"}
# ## More follow-up questions · 更多追问
#
# ### PTQ or QAT?
#
# **Post-training quantization** takes a trained model and a small calibration set and quantizes it in
# minutes to hours: GPTQ calibrates on 128 random 2,048-token segments of C4 and quantizes a 175B model in
# about four GPU hours (arXiv:2210.17323, Sec. 5). **Quantization-aware training** puts the rounding in the
# forward pass (a straight-through estimator in the backward) and trains on: better at very low bit-widths,
# but it costs a training run of the full model, with its 16 bytes per parameter of states. For LLMs at 8 and
# 4 bits, PTQ (GPTQ, AWQ, SmoothQuant) is the default; QAT is for 2-3 bits or when a vendor ships a
# quantized checkpoint it trained for.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### fp8 and FP4: the formats, their scales, and what they buy on an H100
#
# A float of 1 sign, e exponent and m mantissa bits keeps the same relative precision over its whole range,
# where int8's 255 codes are evenly spaced: an outlier costs a float less. Two fp8 layouts share the 8 bits
# (OCP OFP8 rev. 1.0; Micikevicius et al. 2022, arXiv:2209.05433): **E4M3** for weights and activations
# (precision) and **E5M2** for gradients (range). FP4 is **E2M1**: 16 values, ±6 at most, so it only works
# with a scale per small block.

# %% tags=["nbval-check-output"]
ff = FLOAT_FORMATS                                             # memlib.serving.quantization
print({k: (f.bits, f.max_value, f.min_subnormal) for k, f in ff.items()})
sb = {k: scaled_format_bits(k, in_features=m.hidden_size) for k in SCALED_FORMATS}   # bits per weight, scales in
print({k: round(v, 4) for k, v in sb.items()})
ds = estimate_inference("deepseek-v3", 1, CTX)                 # its released block-fp8 checkpoint
oss = fits(estimate_inference("gpt-oss-120b", 1, CTX), GPU)    # MXFP4 experts, the rest bf16
fp8_big = decode_speedup(m, GPU, 1024, SHORT, "fp8-block", tp=2)   # W8A8 fp8: the fp8 tensor-core roof
print(f"DeepSeek-V3 {fmt_bytes(ds.weight_bytes)}; gpt-oss-120b on one H100: {oss.margin_gib:+.1f} GiB; "
      f"fp8 W8A8 at batch 1,024: {fp8_big:.2f}x")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
use = {"fp8-e4m3": "weights, activations (inference; training forward)", "fp8-e5m2": "gradients (training backward)",
       "fp4-e2m1": "MXFP4 / NVFP4 elements"}
rows = [[k, f"{f.bits}", f"E{f.exponent_bits}M{f.mantissa_bits}, bias {f.bias}", f"{f.max_value:,g}",
         f"{f.min_subnormal:.3g}", use[k]] for k, f in ff.items()]
display(Markdown(markdown_table(rows, ["format", "bits", "layout", "largest", "smallest > 0", "used for"])))
rows = [[k, SCALED_FORMATS[k][0], f"{sb[k]:.4f}", SCALED_FORMATS[k][5]] for k in SCALED_FORMATS]
display(Markdown("Bits per weight with the scales (`scaled_format_bits`; per-channel for a "
                 f"{m.hidden_size:,}-wide row, the per-tensor fp32 of fp8 and NVFP4 counted as ~0 on a large "
                 "tensor):\n\n" + markdown_table(rows, ["scaling", "element", "bits per weight", "scales"])
                 + f"\n\n**Per tensor** (vLLM's `--quantization fp8` on a bf16 checkpoint: fp32 weight scales, "
                 "activation scales computed at each step) is the cheapest; **per 128×128 block** (DeepSeek-V3: "
                 f"{GB(ds.weight_bytes)} of weights, its fp8 matrices at {sb['fp8 block 128x128']:.4f} bits each, and 1×128 tiles for "
                 f"activations, {sb['fp8 tile 1x128']:.2f} bits) keeps an outlier's damage inside its block. "
                 f"W8A8 fp8 runs on the {g.fp8_tflops:,.0f} TFLOP/s fp8 tensor cores, twice bf16's "
                 f"{g.bf16_tflops:,.0f}: at batch 1,024 its roofline is **{fp8_big:.2f}×** bf16's, where "
                 "weight-only int4 has none left. **MXFP4** (OCP MX v1.0: an E8M0, power-of-two scale per 32) "
                 f"is how gpt-oss ships its experts: gpt-oss-120b fits one H100 ({oss.margin_gib:+.1f} GiB). "
                 "**NVFP4** (a finer E4M3 scale per 16 and an fp32 per tensor) is NVIDIA's own; Blackwell's FP4 "
                 "tensor cores run both. Hopper has no FP4 tensor cores, so FP4 there is weight-only (dequantized to "
                 "16-bit, as W4A16)."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### fp8 training in practice: what stays in bf16 and fp32, and what it really saves
#
# fp8 training runs the linear layers' matmuls on the fp8 tensor cores; everything the optimizer touches
# stays in high precision. **Transformer Engine** (Megatron-LM, NeMo) keeps Megatron's states (bf16 weights,
# fp32 main gradients, fp32 master weights and Adam moments), casts each linear weight to fp8 and caches that
# copy and its transpose across micro-batches, and saves the fp8 cast of each linear's input for the weight
# gradient. Its Hopper recipes scale per tensor: **delayed** scaling (`DelayedScaling`) takes the scale from a
# history of past amax values (no extra pass over the tensor, but a stale scale clips or underflows a tensor whose
# range jumped), **current** scaling (`Float8CurrentScaling`) from this tensor's amax; TE 2.x also has
# `Float8BlockScaling` (DeepSeek-V3's tiles) and `MXFP8BlockScaling` (Blackwell).
# **torchao's float8** (torchtitan) casts weights and inputs inside each matmul with current scaling and, in
# eager mode, saves the bf16 input for the backward. **DeepSeek-V3** (report, Sec. 3.3) scales activations per
# 1×128 tile and weights per 128×128 block, caches linear inputs in fp8, and keeps fp32 master weights and
# gradients but bf16 Adam moments.
#
# ✏️ **Back of the envelope.** 8B parameters × 18 B (Megatron's bf16 states) = 144 GB, and fp8 changes none of
# them; TE adds 2 bytes per linear weight. Of a layer's ~200 kB of saved activations per token, the three
# matmul inputs TE keeps in fp8 are ~45 kB, halved: about −10%.

# %% tags=["nbval-check-output"]
from memlib.training.fp8 import FP8_TRAINING_RECIPES, fp8_training_memory

M8, TOK = "llama-3-8b", 8 * 8192                       # a dense 8B model, 64k tokens per GPU step
f8 = {r: fp8_training_memory(M8, r) for r in FP8_TRAINING_RECIPES}   # memlib.training.fp8
print({r: (round(x.bytes_per_param, 2), GB(x.state_bytes), GB(x.activation_bytes(TOK))) for r, x in f8.items()})

# %% jupyter={"source_hidden": true} tags=["hide-input"]
keeps = {"megatron-bf16": "bf16 weight, fp32 main grad, master, m, v", "te-fp8": "the same + fp8 weight and its "
         "transpose per linear; fp8 linear inputs", "torchao-bf16": "fp32 weight, grad, m, v (FSDP2)",
         "torchao-float8": "the same; fp8 casts live inside each matmul; bf16 inputs saved (eager)",
         "deepseek-v3": "fp32 master and grad, bf16 m and v, fp8 weight (128×128); fp8 inputs (1×128)"}
rows = [[r, keeps[r], f"{x.bytes_per_param:.2f}", GB(x.state_bytes), GB(x.activation_bytes(TOK))]
        for r, x in f8.items()]
te, base = f8["te-fp8"], f8["megatron-bf16"]
act_cut = 1 - te.layer_activation_bytes_per_token / base.layer_activation_bytes_per_token
display(Markdown(
    f"{M8}, {TOK:,} tokens per step (`memlib.training.fp8.fp8_training_memory`; activations: memlib's bf16 "
    "layer ledger with the matmul inputs re-typed as each recipe saves them):\n\n"
    + markdown_table(rows, ["recipe", "what it keeps", "bytes per parameter", "states", "saved activations"])
    + f"\n\nSwitching Megatron from bf16 to TE's fp8 **adds** {GB(te.state_bytes - base.state_bytes)} of fp8 "
    f"weight copies and cuts the saved activations by **{act_cut:.0%}** ({GB(base.activation_bytes(TOK) - te.activation_bytes(TOK))}): "
    "the norms, the attention kernel's q/k/v/output and the SwiGLU intermediates stay bf16. torchao's float8 "
    "changes neither in eager mode. What fp8 buys is compute: the H100's dense fp8 peak is "
    f"{g.fp8_tflops:,.0f} TFLOP/s against {g.bf16_tflops:,.0f} in bf16, for the linear layers only. The memory "
    f"savings come from elsewhere: DeepSeek-V3's bf16 moments, fp8 caching and recomputed SwiGLU outputs bring it to "
    f"{f8['deepseek-v3'].bytes_per_param:.1f} bytes per parameter and "
    f"{f8['deepseek-v3'].layer_activation_bytes_per_token / base.layer_activation_bytes_per_token:.0%} of the bf16 "
    "activations. TE's `fp8_model_init` (fp8 primary weights) makes the fp8 copy the model's weight and drops "
    "the bf16 one: it gives back about what the workspace added, no more."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### W4A4 with rotations: QuaRot and SpinQuant
#
# Weight-only int4 (W4A16) still computes in 16-bit. **W4A4** quantizes the activations to 4 bits too, so the
# matmuls can run on int4 tensor cores; what stops it is the activations' outlier channels, which a per-token
# 4-bit scale cannot hold. **QuaRot** (Ashkboos et al. 2024) multiplies by an orthogonal Hadamard matrix *Q*:
# *W x = (W Q)(Qᵀ x)*, the same output, while *Qᵀ x* spreads an outlier over every channel. Most rotations fold
# into the weights offline; a few must run **online**, on the down_proj input and in attention (which also
# lets the KV cache go to 4 bits). **SpinQuant** (Liu et al. 2024) learns the rotations instead of using
# random Hadamards.
#
# ✏️ **Back of the envelope.** The weights are 4-bit in both: ~35 GB for 70B. The KV cache is not: 32 chats of 4k
# at 320 kB per token in bf16 is 43 GB; at ~4.25 bits, ~11 GB.

# %% tags=["nbval-check-output"]
from memlib.serving.quantization import W4_SCHEMES, online_hadamard_flops_per_token, w4a4_serving_bytes

w4a4 = {sc: w4a4_serving_bytes(m, 32, CTX, sc) for sc in W4_SCHEMES}   # memlib.serving.quantization
had = online_hadamard_flops_per_token(m)
print({sc: {k: GB(v) for k, v in d.items()} for sc, d in w4a4.items()}, f"Hadamard share {had['ratio']:.2e}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
rows = [[sc, GB(d["weights"]), GB(d["kv_cache"]), GB(d["weights"] + d["kv_cache"])] for sc, d in w4a4.items()]
a16, a4 = w4a4["W4A16"], w4a4["W4A4-KV4"]
display(Markdown(
    f"{MODEL}, 32 chats of {CTX:,} tokens (`w4a4_serving_bytes`; the activations are transient and not counted):\n\n"
    + markdown_table(rows, ["scheme", "weights", "KV cache", "total"])
    + f"\n\nW4A4 saves **no weight memory** over W4A16; its memory gain is the 4-bit KV cache "
    f"({GB(a16['kv_cache'] - a4['kv_cache'])} here), and its speed gain is compute: int4 matmuls, for prefill and "
    "large batches, where W4A16 has none (the roofline below). The price is the online Hadamards: "
    f"{had['hadamard'] / 1e6:,.0f} million additions per token, {had['ratio']:.2e} of the matmul FLOPs "
    "(`online_hadamard_flops_per_token`), small in FLOPs but an extra pass over the activations unless fused "
    "into the quantization kernel, and a kernel that must exist: Hopper's tensor cores have no int4 mode "
    "(int8 and fp8 only), so W4A4 pays on Ampere and Ada, and FP4 (W4A4 in NVFP4/MXFP4) is Blackwell's version."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### NF4 or int4 g128?

# %% tags=["nbval-check-output"]
w4 = {w: estimate_inference(m, 1, CTX, weights=w).weight_bytes for w in ("int4-awq", "nf4")}   # memlib
print({w: fmt_bytes(b) for w, b in w4.items()}, round(bits_per_weight(4, 128, 16, 4), 4), round(NF4_DOUBLE_QUANT_BITS, 4))

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"The same memory: {GB(w4['int4-awq'])} (int4 g128 with zero-points, {bits_per_weight(4, 128, 16, 4):.3f} bits) "
    f"against {GB(w4['nf4'])} (NF4 with double quantization, {NF4_DOUBLE_QUANT_BITS:.3f} bits). NF4's 16 levels are "
    "quantiles of a normal distribution, a good fit for weights, and it needs no calibration: it is what QLoRA "
    "fine-tunes on (bitsandbytes dequantizes each weight to 16-bit for the matmul). GPTQ and AWQ checkpoints "
    "are calibrated once and served with fused W4A16 kernels (vLLM's Marlin, AWQ's GEMM/GEMV), which is why "
    "they, not NF4, are what serving engines load."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### 8 bits: LLM.int8() or GPTQ 8-bit?

# %% tags=["nbval-check-output"]
w8 = {w: estimate_inference(m, 1, CTX, weights=w).weight_bytes for w in ("int8", "int8-gptq")}   # memlib
per = {w: quantized_linear_bytes(8192, 8192, w) * 8 / 8192**2 for w in ("int8", "int8-gptq")}   # one 8192 x 8192 matrix
print({w: fmt_bytes(b) for w, b in w8.items()}, {w: round(b, 4) for w, b in per.items()})

# %% jupyter={"source_hidden": true} tags=["remove-input"]
g1_int8, g1_gptq8 = f"{w8['int8'] / 1e9:,.1f} GB", f"{w8['int8-gptq'] / 1e9:,.1f} GB"
g1_bits_int8, g1_bits_gptq8 = f"{per['int8']:.3f}", f"{per['int8-gptq']:.3f}"

# %% [markdown]
# Both keep one byte per weight; they differ in the side buffers. LLM.int8() (bitsandbytes) adds one fp32
# scale per output row: {eval}`g1_bits_int8` bits per weight on an 8192 × 8192 matrix. GPTQ with `bits=8`
# (GPTQModel's `QuantLinear`: the int8 codes packed four to an int32, an int8 zero-point and an fp16 scale per
# group of 128 inputs, an int32 group index per input row) adds 24 bits per group: {eval}`g1_bits_gptq8`.
# For {eval}`MODEL`'s weights that is {eval}`g1_int8` against {eval}`g1_gptq8`: the memory is a wash, so the
# choice is speed and accuracy. GPTQ's rounding is calibrated and its W8A16 kernels leave the activations in
# 16-bit; LLM.int8() quantizes the activations too and routes the outlier columns through an fp16 side path
# (追问 3 below).

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### What does weight quantization leave untouched? The KV cache

# %% tags=["nbval-check-output"]
kv = {c: kv_cache_bytes(m, 32, CTX, kv_cache=c) for c in ("bf16", "fp8")}   # memlib.serving.inference.kv_cache_bytes
step = {w: decode_bound(m, GPU, 32, CTX, weights=w, tp=2) for w in ("int8", "int4-awq")}  # 32 chats of 4k, two H100s
long = step["int4-awq"]
print({c: fmt_bytes(b) for c, b in kv.items()}, f"KV share of the bytes read: {long.kv_bytes / long.bytes_read:.0%}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
kv_saved = (kv["bf16"] - kv["fp8"]) / 2                                    # per GPU, tensor parallel 2
w_saved = step["int8"].weight_bytes - step["int4-awq"].weight_bytes        # per GPU
display(Markdown(
    f"32 chats of {CTX:,} tokens keep {GB(kv['bf16'])} of bf16 KV cache, as much as the int4 weights, and with "
    f"int4 weights the cache is **{long.kv_bytes / long.bytes_read:.0%}** of what each decode step reads. An fp8 "
    f"cache would save {GB(kv_saved)} per GPU per step; int8 → int4 weights saved {GB(w_saved)}: at long contexts "
    "the cache is the next thing to quantize. It is a separate switch (vLLM's `kv_cache_dtype`), with its own "
    "accuracy check."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Where does the throughput gain at large batch come from, then?

# %% tags=["nbval-check-output"]
serve = {}
for w in ("bf16", "int4-awq"):
    b = max_batch(m, GPU, CTX, weights=w, tp=2).value                        # memlib.max_batch: what fits
    serve[w] = (b, decode_bound(m, GPU, b, CTX, weights=w, tp=2).tokens_per_s)
print({w: (b, round(t)) for w, (b, t) in serve.items()})

# %% jupyter={"source_hidden": true} tags=["hide-input"]
(b16, t16), (b4, t4) = serve["bf16"], serve["int4-awq"]
display(Markdown(
    f"From memory. On two H100s at {CTX:,} tokens, bf16 weights leave room for **{b16}** chats and int4 for "
    f"**{b4}**: the decode roofline of the whole batch goes from {t16:,.0f} to **{t4:,.0f} tokens/s** "
    f"({t4 / t16:.1f}×), far more than the per-step gain. In a serving interview, that is the answer to \"does "
    "int4 speed up a loaded server\": fewer bytes per step, and, above all, more sequences per step."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The roofline: where each format's decode steps sit
#
# The core page's speed-up chart, drawn as a roofline (Williams et al. 2009): the same decode steps of
# Llama-2-70B on two H100s, one point per batch size.

# %% tags=["nbval-check-output"]
BATCHES = [1, 8, 32, 64, 128, 256, 512, 1024]
roof = {w: [decode_bound(m, GPU, b, SHORT, weights=w, tp=2) for b in BATCHES] for w in ("bf16", "int4-awq")}  # memlib
print({w: "".join(p.bound[0] for p in pts) for w, pts in roof.items()})   # m: memory-bound, c: compute-bound

# %% jupyter={"source_hidden": true} tags=["remove-input"]
r_batches, r_short = f"{BATCHES[0]} to {BATCHES[-1]:,}", f"{SHORT}"

# %% [markdown]
# **Takeaway: the same decode steps on the roofline; int4's points reach the compute roof at a quarter of bf16's
# batch, and between the two ridges bf16 is still on the bandwidth slope, below int4.** Each point is one batch
# size ({eval}`r_batches`, {eval}`r_short`-token contexts): its arithmetic intensity (FLOPs per byte read) and the FLOP/s it reaches
# (`memlib.serving.decode_bound`, log-log; the roof is min(peak, bandwidth × intensity) of one H100).

# %% jupyter={"source_hidden": true} tags=["hide-input"]
fig, ax = plt.subplots(figsize=(7, 3.6))
peak, bw = roof["bf16"][0].peak_flops, roof["bf16"][0].bandwidth_bytes_per_s
xs_roof = [2 ** (k / 4) for k in range(0, 49)]   # 1 to 4,096 FLOP/byte
ax.plot(xs_roof, [min(peak, bw * x) / 1e12 for x in xs_roof], color="k", lw=1, label="roof: min(peak, bandwidth × intensity)")
pt = {w: [(p.flops / p.bytes_read, p.flops / p.step_s / 1e12, p.batch) for p in roof[w]] for w in roof}
for w, marker, off in (("bf16", "o", (4, -12)), ("int4-awq", "s", (-30, 6))):
    ax.plot([x for x, _, _ in pt[w]], [y for _, y, _ in pt[w]], marker=marker, ls="", label=w)
    for x, y, b in pt[w]:
        if b in (8, 128, 1024):
            ax.annotate(f"B={b}", (x, y), fontsize=7, textcoords="offset points", xytext=off)
for (x16, y16, _), (x4, y4, _) in zip(pt["bf16"], pt["int4-awq"]):   # the same batch: int4 sits further right
    ax.plot([x16, x4], [y16, y4], color="grey", lw=0.6, ls=":")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("arithmetic intensity (FLOP per byte read)")
ax.set_ylabel("TFLOP/s per GPU")
ax.set_title("Llama-2-70B decode on 2 × H100: the roofline")
ax.legend(fontsize=8)
plt.show()

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Is LLM.int8() slower end to end as well?

# %% jupyter={"source_hidden": true} tags=["hide-input"]
rows = [[f"{d:,}", name, f"{a:.2f}x", f"{v:.2f}x", f"{q:.2f}x"]
        for d, (name, a, v, q) in table5.items()]
display(Markdown("Dettmers et al. 2022 (arXiv:2208.07339), App. D.1, **Table 5**, quoted: speed of the first "
                 "feed-forward matmul against 16-bit (hidden = 4 × model dimension); below 1.00x is a slowdown.\n\n"
                 + markdown_table(rows, ["model dimension", "GPT-3 size", "int8, no overhead", "vector-wise int8",
                                         "LLM.int8() (vector-wise + decomposition)"])))
rows = [[k, *(f"{x:g}" for x in v)] for k, v in table6.items()]
display(Markdown("Same paper, App. D.2, **Table 6**, quoted: BLOOM-176B in Hugging Face, ms per token.\n\n"
                 + markdown_table(rows, ["precision, GPUs", "batch 1", "batch 8", "batch 32"])
                 + "\n\nOn the same eight A100s LLM.int8() is slower at every batch; its gain is memory: the model "
                 "runs on three or four cards at about the latency of eight. SmoothQuant's Table 10 (PyTorch, "
                 "batch 4) has LLM.int8() at " + f"{sq10['LLM.int8()'][0]} ms against FP16's "
                 f"{sq10['FP16'][0]} ms on OPT-13B at 256 tokens, and SmoothQuant-O3 at "
                 f"{sq10['SmoothQuant-O3'][0]} ms."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### 追问 2 · GPTQ, AWQ, SmoothQuant: what does each one do?
#
# - **GPTQ** (Frantar et al. 2022): quantize a layer's weight matrix one column at a time; after rounding a
#   column, update the columns not yet quantized to cancel its error on the calibration inputs, using the
#   inverse Hessian H⁻¹ of the layer's squared error (H = 2XXᵀ, the Optimal Brain Quantization update). A 175B
#   model in about four GPU hours. Weight-only (W4A16, W3A16).
# - **AWQ** (Lin et al. 2023): the weights that matter are those of the ~1% input channels with large
#   activations. Multiply those weight columns by s > 1 and divide the activations by s: the product is
#   unchanged, but the salient weights lose relatively less to rounding. s is searched per layer; no
#   backpropagation, no reordering. Weight-only.
# - **SmoothQuant** (Xiao et al. 2022): activations have outlier channels, weights do not. Divide activation
#   channel j by s_j = max|X_j|^α / max|W_j|^(1−α) and multiply the weight row by it (α = 0.5 for OPT/BLOOM);
#   both then quantize to int8 and the matmul runs on int8 tensor cores (W8A8). The 1/s folds into the
#   previous LayerNorm.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### 追问 3 · Why does naive int8 break on large models? (outlier features)

# %% tags=["nbval-check-output"]
from memlib.serving.quantization import affine_params, dequantize, quantize

row = [0.21, -0.35, 0.08, 0.5, -0.12, 60.0]    # one hidden state: five ordinary values and one outlier feature
p_all = affine_params(row, bits=8)             # per-tensor absmax: the outlier sets S
p_rest = affine_params(row[:-1], bits=8)       # LLM.int8(): the outlier column kept in fp16, the rest in int8
print(f"with the outlier: S = {p_all.scale:.3f}, codes {quantize(row, p_all)}; "
      f"without: S = {p_rest.scale:.4f}, codes {quantize(row[:-1], p_rest)}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
f3_s, f3_codes = f"{p_all.scale:.3f}", f"{quantize(row[:-1], p_all)}"
f3_s2 = f"{p_rest.scale:.4f}"

# %% [markdown]
# One feature of 60 makes S = {eval}`f3_s`, and the five ordinary values round to {eval}`f3_codes`: almost
# all information gone. Dettmers et al. (LLM.int8(), arXiv:2208.07339, Sec. 4) find such features in about
# 25% of layers at smaller scale and, **at around 6.7B parameters, in every layer**, concentrated in about 6
# hidden dimensions, with magnitudes up to 20× the others. Their fix, LLM.int8(), is **W8A8 with an fp16
# side path**: the outlier columns go through an fp16 matmul, the rest through an int8 × int8 matmul with a
# scale per activation row and per weight column (S drops to {eval}`f3_s2` for the rest); SmoothQuant moves
# them into the weights; weight-only formats (GPTQ, AWQ) avoid the
# problem by leaving the activations in 16-bit.
#

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Fact-check · 纠错
#
# Claims that circulate about quantization, memlib's figure, and a verdict with its word, so it reads without
# an emoji font (✅ right · ⚠️ partly · ❌ wrong).

# %% tags=["nbval-check-output"]
W = {w: estimate_inference(m, 1, CTX, weights=w).weight_bytes for w in ("bf16", "int8", "int4-awq")}
on_4090 = fits(estimate_inference(m, 1, CTX, weights="int4-awq"), "rtx-4090")            # memlib.fits
x_b1 = decode_speedup(m, GPU, 1, SHORT, "int4-awq", tp=2)                                 # memlib, batch 1
x_big = decode_speedup(m, GPU, 1024, SHORT, "int4-awq", tp=2)                             # batch 1,024
x_w8a8 = decode_speedup(m, GPU, 1024, SHORT, "int8", "int8", tp=2)
x_128 = decode_speedup(m, GPU, 128, SHORT, "int4-awq", tp=2)                              # between the ridges
c4, end4 = decode_crossover_batch(GPU, bits_per_weight(4, 128, 16, 4)), decode_speedup_end_batch(GPU, bits_per_weight(4, 128, 16, 4))
sym = affine_params([-1.0, 0.5, 1.0])
g128 = bits_per_weight(4, 128, 16, 4) - 4
ratios = [i / b - 1 for i, b in zip(table6["LLM.int8(), 8 x A100 80GB"], table6["bfloat16, 8 x A100 80GB"])]
slow = (min(ratios), max(ratios))   # the paper's Table 6, quoted: LLM.int8() vs bf16 on the same 8 GPUs
print(f"bf16/int4 {W['bf16'] / W['int4-awq']:.2f}, int8/bf16 {W['int8'] / W['bf16']:.3f}, 4090 margin "
      f"{on_4090.margin_gib:+.1f} GiB, batch 1 {x_b1:.2f}x, batch 1024 {x_big:.2f}x, W8A8 {x_w8a8:.2f}x, "
      f"g128 +{g128:.3f} bits, S/2 = {sym.max_error:.5f}, batch 128 {x_128:.2f}x, ridges {c4:.0f} / {end4:.0f}")

# %%
facts = [
    Claim("int4 makes the model 4× smaller",
          "common interview answer",
          f"{W['bf16'] / W['int4-awq']:.2f}× "
          "(weights of Llama-2-70B)",
          verdict="⚠️ partly",
          why="the scales cost bits and the embeddings and head stay 16-bit; "
              "the KV cache does not shrink at all"),
    Claim("\"cut the memory needed for inference by half\"",
          "LLM.int8() abstract (arXiv:2208.07339)",
          f"int8 / bf16 = {W['int8'] / W['bf16']:.3f}",
          verdict="✅ right",
          why="one fp32 scale per row adds 0.4%"),
    Claim("A 70B model at 4 bits runs on one 24 GB gaming GPU",
          "forum answers",
          f"{on_4090.margin_gib:+.1f} GiB on an "
          "RTX 4090",
          verdict="❌ wrong",
          why=f"the weights alone are {GB(W['int4-awq'])}; it takes two 24 GB cards"),
    Claim("Quantization always makes inference faster",
          "common interview answer",
          f"int4 W4A16 {x_b1:.2f}× at batch 1, "
          f"{x_big:.2f}× at batch 1,024",
          verdict="❌ wrong",
          why="only while decode is memory-bound; LLM.int8() is slower than fp16 "
              "below the 13B shape (Table 5)"),
    Claim("\"TinyChat on RTX 4090 (3.4x faster than FP16)\"",
          "mit-han-lab/llm-awq README",
          f"roofline {x_b1:.2f}× "
          "(Llama-2-70B on H100s, batch 1)",
          verdict="✅ consistent",
          why="a 7B-class measurement on a 4090, not the same setup; it "
              "sits below W4A16's bytes-ratio ceiling, as a measured kernel should"),
    Claim("Past about 80 sequences weight-only int4 gains nothing",
          "this chapter's first draft (review 2026-12-06)",
          f"{x_128:.2f}× at batch 128; ridges {c4:.0f} (int4) and {end4:.0f} (bf16)",
          verdict="❌ wrong",
          why=f"{c4:.0f} is int4's own "
              "ridge; bf16 stays memory-bound, reading 3.85× the bytes, until its ridge: the gain shrinks as 295 / B and "
              "ends there"),
    Claim("W8A8 speeds up large batches and prefill, weight-only does not",
          "SmoothQuant, Sec. 5.3",
          f"W8A8 {x_w8a8:.2f}× "
          f"vs W4A16 {x_big:.2f}× at batch 1,024",
          verdict="✅ right",
          why="int8 tensor cores double the compute roof; weight-only "
              "formats still compute in 16-bit"),
    Claim("\"BLOOM-176B with LLM.int8() is about 15% to 23% slower than the fp16 version\"",
          "Hugging Face blog, *A Gentle Introduction to 8-bit Matrix Multiplication* (2022)",
          f"quoted: paper Table 6, 253 vs 239 ms/token on "
          f"8 A100s ({ratios[0]:.0%})",
          verdict="⚠️ partly",
          why=f"the blog's figure; the paper's own end to end on 8 cards is {slow[0]:.0%}-{slow[1]:.0%} "
              "slower, and its matmuls run at 0.14×-0.86× of fp16 below the 13B shape"),
    Claim("\"group-size 128 (≈ 0.15 extra bits)\"",
          "GPTQ (arXiv:2210.17323), Sec. 5",
          f"+{g128:.3f} bits (scale + 4-bit zero)",
          verdict="✅ right",
          why="16/128 for the fp16 scale, 4/128 for the zero-point"),
    Claim("NF4 stores exactly 4 bits per weight",
          "common reading of QLoRA",
          f"{NF4_DOUBLE_QUANT_BITS:.3f} bits "
          "(double quantization), 4.5 without",
          verdict="⚠️ partly",
          why="one absmax per 64 weights; double quantization cuts "
              "it to 0.127 bits (QLoRA Sec. 3)"),
    Claim("Symmetric int8 is off by at most absmax/254",
          "LLM.int8(), Sec. 2.1",
          f"S/2 = {sym.max_error:.5f} for absmax 1",
          verdict="✅ right",
          why="half a step of 1/127, for values inside the range"),
    Claim("fp8 training halves the memory of training",
          "common interview answer",
          f"{M8}, Transformer Engine: {f8['te-fp8'].bytes_per_param:.1f} against {f8['megatron-bf16'].bytes_per_param:.0f} bytes "
          f"per parameter; saved activations {f8['te-fp8'].layer_activation_bytes_per_token / f8['megatron-bf16'].layer_activation_bytes_per_token - 1:+.0%}",
          verdict="❌ wrong",
          why="master weights, gradients and Adam moments stay fp32 and TE adds fp8 weight copies; fp8 halves only "
              "the matmul inputs it saves, and doubles the tensor-core peak"),
]
display(Markdown(fact_check_table(facts, headers=["claim", "source", "memlib", "verdict", "why"])))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The papers' accuracy tables · 论文精度表
#
# memlib does not model accuracy. These are the papers' own measurements, quoted (lower perplexity is
# better; accuracy in %).
#
# **GPTQ** (Frantar et al. 2022, arXiv:2210.17323), **Table 3**, OPT, WikiText-2 perplexity (selected columns):
#
# | OPT | bits | 6.7B | 13B | 30B | 66B | 175B |
# |---|---|---|---|---|---|---|
# | full | 16 | 10.86 | 10.13 | 9.56 | 9.34 | 8.34 |
# | RTN | 4 | 12.10 | 11.32 | 10.98 | 110 | 10.54 |
# | GPTQ | 4 | 11.39 | 10.31 | 9.63 | 9.55 | 8.37 |
# | RTN | 3 | 5.8e3 | 3.4e3 | 1.6e3 | 6.1e3 | 7.3e3 |
# | GPTQ | 3 | 14.86 | 11.61 | 10.27 | 14.16 | 8.68 |
#
# **AWQ** (Lin et al. 2023, arXiv:2306.00978), **Table 4**, Llama-2, WikiText-2 perplexity:
#
# | Llama-2 | 7B | 13B | 70B |
# |---|---|---|---|
# | FP16 | 5.47 | 4.88 | 3.32 |
# | INT3 g128 RTN | 6.66 | 5.52 | 3.98 |
# | INT3 g128 GPTQ-R | 6.42 | 5.41 | 3.86 |
# | INT3 g128 AWQ | 6.24 | 5.32 | 3.74 |
# | INT4 g128 RTN | 5.73 | 4.98 | 3.46 |
# | INT4 g128 GPTQ | 5.69 | 4.98 | 3.42 |
# | INT4 g128 GPTQ-R | 5.63 | 4.99 | 3.43 |
# | INT4 g128 AWQ | 5.60 | 4.97 | 3.41 |
#
# **SmoothQuant** (Xiao et al. 2022, arXiv:2211.10438), **Table 4**, W8A8, average zero-shot accuracy
# (OPT/BLOOM: WinoGrande, HellaSwag, PIQA, LAMBADA; GLM-130B: LAMBADA, MMLU, MNLI, QNLI):
#
# | method | OPT-175B | BLOOM-176B | GLM-130B |
# |---|---|---|---|
# | FP16 | 71.6% | 68.2% | 73.8% |
# | W8A8 (naive, per-tensor dynamic) | 32.3% | 64.2% | 26.9% |
# | LLM.int8() | 71.4% | 68.0% | 73.8% |
# | SmoothQuant-O3 | 71.1% | 67.4% | 72.8% |
#
# and **Table 6**, LLaMA W8A8 with SmoothQuant (α = 0.8), WikiText-2 perplexity: 7B 11.51 → 11.56, 13B
# 10.05 → 10.08, 30B 7.53 → 7.56, 65B 6.17 → 6.20.
#
# What they say together: plain rounding (RTN) at 4 bits costs a little on large models and much on small
# ones (OPT-66B's 110 is an outlier the GPTQ paper flags); at 3 bits it collapses, where GPTQ and AWQ still
# work. Naive W8A8 destroys OPT-175B (32.3% from 71.6%); migrating the outliers (SmoothQuant) or keeping
# them in fp16 (LLM.int8()) recovers it. The perplexities are not comparable across tables: GPTQ's and
# SmoothQuant's LLaMA setups differ from AWQ's.
