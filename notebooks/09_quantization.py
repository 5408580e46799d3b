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
# # 09 · Quantization: less memory, more speed? · 量化省显存，也更快吗？
#
# ## 1. The question · 问题
#
# > **int8/int4 量化为什么能省显存？推理一定更快吗？精度为什么还能保住？** <br> *Why does int8/int4
# > quantization save GPU memory? Is inference always faster? Why does accuracy survive?*
#
# Our example: serving **Llama-2-70B** on **H100 80GB** cards.
# **Reading time:** core path ~12 min; the [deep dive](09_quantization_deep_dive.ipynb) (fact-check, the papers' accuracy tables) is its own page.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
# %matplotlib inline
import matplotlib.pyplot as plt

from memlib.learn.kit import GB, R
from memlib import estimate_inference, fits, fmt_bytes, get_gpu, get_model, max_batch
from memlib.learn.playgrounds.serving import ServingPlayground
from memlib.serving import decode_bound
from memlib.serving.quantization import (FLOAT_FORMATS, LLM_INT8_MATMUL_SPEEDUP, NF4_DOUBLE_QUANT_BITS,
                                         affine_params, bits_per_weight, decode_crossover_batch, decode_speedup,
                                         decode_speedup_end_batch, dequantize, quantize, scaled_format_bits)
from memlib.units import fmt_count
from memlib.learn.viz import breakdown_bars, count_sweep

MODEL, GPU = "llama-2-70b", "h100-80gb"
CTX = 4096          # a chat's context for the memory steps
SHORT = 256         # a short context for the batch sweep, so the weights, not the KV cache, dominate the bytes
FORMATS = ("bf16", "int8", "int4-awq")   # 16-bit; int8 per-channel weights run by a W8A16 kernel; AWQ int4 g128
# AWQ (Lin et al. 2023, arXiv:2306.00978), Table 4: WikiText-2 perplexity of Llama-2-70B (quoted, not computed)
AWQ_T4_70B = {"FP16": 3.32, "INT4 g128 RTN": 3.46, "INT4 g128 GPTQ": 3.42, "INT4 g128 AWQ": 3.41,
              "INT3 g128 RTN": 3.98, "INT3 g128 AWQ": 3.74}


def cards(weights):
    """The fewest H100s (tensor parallel 1, 2, 4, 8) that hold one 4k chat in `weights` (memlib.fits)."""
    return next(tp for tp in (1, 2, 4, 8)
                if fits(estimate_inference(MODEL, 1, CTX, weights=weights, tp=tp), GPU).fits)


# The figures the 30-second answer quotes; the steps below derive each one.
m, g = get_model(MODEL), get_gpu(GPU)
weights = {w: estimate_inference(m, 1, CTX, weights=w).weight_bytes for w in FORMATS}       # step 3
need = {w: cards(w) for w in FORMATS}                                                       # step 3
x1 = decode_speedup(m, GPU, 1, SHORT, "int4-awq", tp=need["bf16"])                          # step 4
cross = decode_crossover_batch(GPU, bits_per_weight(4, 128, scale_bits=16, zero_bits=4))   # step 5: int4's ridge
end = decode_speedup_end_batch(GPU, bits_per_weight(4, 128, scale_bits=16, zero_bits=4))  # step 5: bf16's ridge
serve = {}   # the batch that fits two H100s at 4k, and its decode roofline (deep dive: the throughput gain)
for w in ("bf16", "int4-awq"):
    b = max_batch(m, GPU, CTX, weights=w, tp=need["bf16"]).value
    serve[w] = (b, decode_bound(m, GPU, b, CTX, weights=w, tp=need["bf16"]).tokens_per_s)
WORDS = {1: "one", 2: "two", 4: "four", 8: "eight"}
WORDS_ZH = {1: "一", 2: "两", 4: "四", 8: "八"}
a_cards, a_from = f"{WORDS[need['int4-awq']]}", f"{WORDS[need['bf16']]}"
z_cards, z_from = f"{WORDS_ZH[need['int4-awq']]}", f"{WORDS_ZH[need['bf16']]}"
a_x1, a_cross, a_end = f"{x1:.1f}", f"{R(cross, 1)}", f"{R(end, 1)}"
a_thr = f"{serve['int4-awq'][1] / serve['bf16'][1]:.0f}"
a_ppl = f"{AWQ_T4_70B['INT4 g128 AWQ'] - AWQ_T4_70B['FP16']:.2f}"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. The 30-second answer · 30 秒回答
#
# > **EN** **Memory, always:** at 4 bits, scales included, Llama-2-70B needs {eval}`a_cards` 80 GB card instead
# > of {eval}`a_from`. **Speed, while decode is bandwidth-bound:** on the same cards int4 is up to {eval}`a_x1`×
# > faster at batch 1; the gain shrinks past about {eval}`a_cross` sequences (int4's ridge) and is gone near
# > {eval}`a_end` (bf16's). **Serving**, same cards: more chats fit, about {eval}`a_thr`× the tokens/s at 4k.
# > **Accuracy:** AWQ adds {eval}`a_ppl` perplexity on 70B. **Caveat:** real W4A16 kernels lose the
# > speed earlier (dequantization).
#
# > **中文** **显存：一定省。** 4-bit（含 scale）后 Llama-2-70B 从{eval}`z_from`张 80 GB 卡变{eval}`z_cards`张。
# > **速度：只在 decode 受带宽限制时更快。** 同样的卡上 batch 1 int4 最多快 {eval}`a_x1` 倍；并发超过约
# > {eval}`a_cross`（int4 的拐点）后收益变小，到约 {eval}`a_end`（bf16 的拐点）消失。**服务：** 同样的卡能放下更多对话，4k
# > 上下文吞吐约 {eval}`a_thr` 倍。**精度：** 70B 上 AWQ 困惑度只升 {eval}`a_ppl`。**注意：**
# > W4A16 kernel 要反量化，收益更早消失。
#
# The long answer follows: every figure above is derived in section 5.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. What the interviewer is probing · 考察意图
#
# - **The mechanism.** A quantized weight is a small integer times a scale; say where the scale comes
#   from (absmax or min/max), what the zero-point is for, and what the rounding error is.
# - **Bytes, honestly counted.** Scales and zero-points cost bits; embeddings, the head and the KV cache
#   usually stay 16-bit. "4 bits" is about 4.16 bits of the projections, not a quarter of the model.
# - **The roofline.** Decode at small batch is bound by HBM bandwidth, so fewer bytes mean faster
#   steps; the gain shrinks once the quantized step turns compute-bound and ends when the 16-bit one does
#   too; only W8A8 (int8 or fp8 tensor cores) raises the compute roof. LLM.int8() is usually slower than fp16.
# - **fp8 and FP4.** E4M3 vs E5M2, per-tensor vs block scales, and what Hopper and Blackwell run natively.
# - **Why accuracy survives.** Group-wise scales, error compensation (GPTQ), protecting salient
#   channels (AWQ), and the activation outliers that break naive int8 past ~6.7B (SmoothQuant, LLM.int8()).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Words we use · 术语
#
# - **Scale S, zero-point Z**: a quantized value q stands for S·(q − Z). **Symmetric (absmax)**: Z = 0, S = max|x| / 127 for int8; **asymmetric (min/max)**: S = (max − min) / 255, Z shifts the range.
# - **Per-tensor / per-channel / per-group g**: one scale for the whole matrix / for each output row / for each run of g weights (g = 128: "g128").
# - **PTQ / QAT**: post-training quantization (quantize a trained model with a little calibration data) / quantization-aware training (train with the rounding in the loop).
# - **GPTQ**: PTQ that quantizes a layer column by column and corrects the remaining weights for each rounding error, using second-order (Hessian) information.
# - **AWQ**: activation-aware weight quantization; scales up the ~1% salient input channels (large activations) before rounding, so their weights lose less.
# - **SmoothQuant**: moves activation outliers into the weights with a per-channel factor s, so both quantize to int8 (W8A8).
# - **Outlier features**: a few hidden dimensions with values up to 20× the rest, in every layer of models past ~6.7B (LLM.int8()).
# - **W4A16 / W8A16 / W8A8**: 4- or 8-bit weights with 16-bit activations (weight-only: dequantized to 16-bit for the matmul) / 8-bit weights and activations (an int8 or fp8 matmul on the tensor cores; SmoothQuant, LLM.int8()).
# - **fp8 E4M3 / E5M2, MXFP4 / NVFP4**: 8-bit floats with 4 or 5 exponent bits / 4-bit floats (E2M1) with a scale per block of 32 or 16.
# - **NF4**: QLoRA's 4-bit NormalFloat, one absmax per 64 weights. **Roofline, ridge point**: a kernel is memory-bound below peak FLOP/s ÷ bandwidth FLOPs per byte, compute-bound above. **GB**: 1e9 bytes.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. The answer, step by step · 推导
#
# ### Step 1 · A float becomes an integer times a scale
#
# ✏️ **Back of the envelope.** Symmetric int8 of w = [−1, 0.5, 1]: absmax 1, so S = 1/127 ≈ 0.0079.
# −1 → −127, 1 → 127, 0.5 → 63.5 → 64 (round half to even). Back: 64/127 = 0.504, off by 1/254 ≈ 0.004 = S/2,
# the worst a value inside the range can be off.

# %% tags=["nbval-check-output"]
w = [-1.0, 0.5, 1.0]
sym = affine_params(w, bits=8, symmetric=True)    # memlib.serving.quantization: r = S(q - Z), Jacob et al. 2018
codes = quantize(w, sym)
back = dequantize(codes, sym)
asym = affine_params([-0.5, 0.0, 1.5], bits=4, symmetric=False)   # min/max with a zero-point
print(f"S = {sym.scale:.5f}, codes {codes}, back {[round(x, 4) for x in back]}, max error {sym.max_error:.5f}; "
      f"int4 min/max: S = {asym.scale:.4f}, Z = {asym.zero_point}, codes {quantize([-0.5, 0.0, 1.5], asym)}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s1_scale, s1_codes, s1_err = f"{sym.scale:.5f}", f"{codes}", f"{sym.max_error:.5f}"
s1_half = f"{back[1]:.4f}"
s1_as, s1_az = f"{asym.scale:.4f}", f"{asym.zero_point}"
s1_acodes = f"{quantize([-0.5, 0.0, 1.5], asym)}"

# %% [markdown]
# memlib: S = {eval}`s1_scale`, codes {eval}`s1_codes`, 0.5 comes back as {eval}`s1_half`; no value inside the
# range is off by more than **{eval}`s1_err`**. A skewed range wastes the symmetric codes on the side it never
# reaches, so asymmetric quantization shifts it with a zero-point: [−0.5, 0, 1.5] at 4 bits gets S = {eval}`s1_as`,
# Z = {eval}`s1_az`, codes {eval}`s1_acodes`, and 0 stays exact. The pencil left out nothing; the catch is
# the range: **one outlier sets S for every value that shares it** (follow-up 3), which is why scales are
# kept per row or per small group.

# %% [markdown]
# ### Step 2 · Bits per weight: the scales are not free
#
# ✏️ **Back of the envelope.** int4 with an fp16 scale and a 4-bit zero-point per 128 weights (AWQ's
# g128): 4 + 16/128 + 4/128 = 4 + 0.125 + 0.031 = **4.16 bits**. NF4 with double quantization: 4 + 8/64 +
# 32/(64 × 256) = **4.127**. Per-channel int8 with one fp32 scale per 8,192-wide row: 8 + 32/8192 ≈ 8.004.

# %% tags=["nbval-check-output"]
bpw = {"int4 g128 + zero (AWQ)": bits_per_weight(4, 128, scale_bits=16, zero_bits=4),   # memlib.serving.quantization
       "int4 g128 symmetric": bits_per_weight(4, 128),
       "NF4, double quant (QLoRA)": NF4_DOUBLE_QUANT_BITS,
       "NF4, fp32 absmax per 64": bits_per_weight(4, 64, scale_bits=32),
       "int8 per-channel (8,192 in)": bits_per_weight(8, m.hidden_size, scale_bits=32),
       "int4 per-tensor": bits_per_weight(4, m.hidden_size * m.hidden_size)}
print({k: round(v, 4) for k, v in bpw.items()})

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s2_awq, s2_nf4 = f"{bpw['int4 g128 + zero (AWQ)']:.3f}", f"{bpw['NF4, double quant (QLoRA)']:.3f}"
s2_nf4_nodq, s2_ch = f"{bpw['NF4, fp32 absmax per 64']:.1f}", f"{bpw['int8 per-channel (8,192 in)']:.4f}"
s2_ratio = f"{16 / bpw['int4 g128 + zero (AWQ)']:.2f}"

# %% [markdown]
# memlib: AWQ-style int4 g128 costs **{eval}`s2_awq` bits** per weight, so bf16 → int4 divides the projections
# by {eval}`s2_ratio`, not 4. NF4 is {eval}`s2_nf4` bits with double quantization ({eval}`s2_nf4_nodq` with an
# fp32 absmax per 64 weights); per-channel int8 {eval}`s2_ch`. Smaller groups track the weights more closely
# and cost more bits: the GPTQ paper puts g128 at "≈ 0.15 extra bits", worth about 0.1 perplexity over g1024.

# %% [markdown]
# ### Step 3 · Llama-2-70B on one or two 80 GB cards
#
# ✏️ **Back of the envelope.** 69e9 parameters × 2 B = **138 GB** in bf16: two H100s. int8 (1 B): 69 GB,
# one card with little left. int4 g128: 69e9 × 4.16 / 8 ≈ **36 GB**, one card with ~40 GB for the KV cache.

# %% tags=["nbval-check-output"]
est = {w: estimate_inference(m, 1, CTX, weights=w) for w in FORMATS}   # memlib.estimate_inference, one GPU
verdict = {w: fits(e, g) for w, e in est.items()}                      # memlib.fits: + CUDA context, headroom
for w in FORMATS:
    print(f"{w}: weights {fmt_bytes(weights[w])}, one 4k chat {fmt_bytes(est[w].peak_bytes)}, "
          f"one H100: {verdict[w].margin_gib:+.1f} GiB; fewest H100s {need[w]}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s3_p, s3_bf16 = f"{fmt_count(m.num_params)}", f"{GB(weights['bf16'])}"
s3_int8, s3_int4 = f"{GB(weights['int8'])}", f"{GB(weights['int4-awq'])}"
s3_ratio = f"{weights['bf16'] / weights['int4-awq']:.2f}"
s3_m8, s3_m4 = f"{verdict['int8'].margin_gib:+.1f} GiB", f"{verdict['int4-awq'].margin_gib:+.1f} GiB"
s3_m16 = f"{verdict['bf16'].margin_gib:+.1f} GiB"
s3_n16, s3_n8, s3_n4 = f"{need['bf16']}", f"{need['int8']}", f"{need['int4-awq']}"

# %% [markdown]
# memlib, {eval}`s3_p` parameters, one 4k chat, with the CUDA context and the allocator's headroom:
#
# | weights | bytes | margin on one H100 | fewest H100s |
# |---|---|---|---|
# | bf16 | {eval}`s3_bf16` | {eval}`s3_m16` | {eval}`s3_n16` |
# | int8 | {eval}`s3_int8` | {eval}`s3_m8` | {eval}`s3_n8` |
# | int4 g128 | {eval}`s3_int4` | {eval}`s3_m4` | {eval}`s3_n4` |
#
# bf16 over int4 is {eval}`s3_ratio`, not 3.85: the pencil left out that the embeddings and the head stay
# 16-bit. What quantization does not shrink: the **KV cache** (bf16 here) and the activations.

# %% [markdown]
# ### Step 4 · Batch 1: every token reads every weight
#
# ✏️ **Back of the envelope.** One decode step multiplies each weight once: 2 FLOPs per 2 bytes in bf16.
# H100: 3.35 TB/s and 989 TFLOP/s. bf16 over two cards: 69 GB per card / 3.35 TB/s ≈ 21 ms, **~48
# tokens/s**. int4 over the same two cards: 18 GB / 3.35 TB/s ≈ 5.5 ms, **~180 tokens/s**, ~3.8× faster.
# int4 on one card: 37 GB / 3.35 TB/s ≈ 11 ms, ~1.9× bf16-on-two per sequence.

# %% tags=["nbval-check-output"]
tp = need["bf16"]   # compare on the same two cards
one = {w: decode_bound(m, GPU, 1, SHORT, weights=w, tp=tp) for w in FORMATS}   # memlib.serving.decode_bound
alone = decode_bound(m, GPU, 1, SHORT, weights="int4-awq", tp=need["int4-awq"])  # int4 as deployed: one card
for w, b in one.items():
    print(f"{w}: {fmt_bytes(b.bytes_read)} read per GPU per step, {b.step_s * 1e3:.2f} ms, "
          f"{b.tokens_per_s_per_sequence:.0f} tokens/s, {b.bound}-bound")
print(f"int4 on {need['int4-awq']} card: {alone.step_s * 1e3:.2f} ms, {alone.tokens_per_s_per_sequence:.0f} tokens/s")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s4_t16 = f"{one['bf16'].tokens_per_s_per_sequence:.0f}"
s4_t8, s4_t4 = f"{one['int8'].tokens_per_s_per_sequence:.0f}", f"{one['int4-awq'].tokens_per_s_per_sequence:.0f}"
s4_x8 = f"{one['bf16'].step_s / one['int8'].step_s:.2f}"
s4_x4 = f"{one['bf16'].step_s / one['int4-awq'].step_s:.2f}"
s4_bound = f"{one['int4-awq'].bound}"
s4_alone, s4_xcard = f"{alone.tokens_per_s_per_sequence:.0f}", f"{one['bf16'].step_s / alone.step_s:.1f}"

# %% [markdown]
# memlib, at most, on the same two H100s; every step is {eval}`s4_bound`-bound, so the speed-up is the bytes ratio:
#
# | weights | tokens/s per sequence | speed-up |
# |---|---|---|
# | bf16 | {eval}`s4_t16` | 1× |
# | int8 (a W8A16 kernel) | {eval}`s4_t8` | {eval}`s4_x8`× |
# | int4 g128 | {eval}`s4_t4` | **{eval}`s4_x4`×** |
#
# Deployed on one card, int4 makes {eval}`s4_alone` tokens/s: **{eval}`s4_xcard`×
# per sequence** against bf16 on two, with half the GPUs. These are rooflines: real W4A16 kernels reach less
# (AWQ's TinyChat reports 3.4× over FP16 on an RTX 4090).

# %% [markdown]
# ### Step 5 · Large batch: where weight-only quantization stops helping
#
# ✏️ **Back of the envelope.** At batch B a weight read once serves B sequences: 2B FLOPs per 2 bytes in
# bf16, B FLOP/byte. The H100's ridge: 989 / 3.35 ≈ **295 FLOP/byte**, so bf16 decode turns compute-bound
# near B ≈ 295. int4 (4.16 bits, 0.52 B) gets there 3.85× sooner: **B ≈ 77**. Between 77 and 295 int4 is
# compute-bound but bf16 still reads 3.85× the bytes, so int4 stays faster, by about 295 / B. Past 295
# both are compute-bound on the same 16-bit tensor cores: no speed-up left.

# %% tags=["nbval-check-output"]
bits = {"bf16": 16, "int8": 8, "int4-awq": bpw["int4 g128 + zero (AWQ)"]}
crossover = {w: decode_crossover_batch(GPU, b) for w, b in bits.items()}     # memlib: ridge x bits / 16
w8a8_cross = decode_crossover_batch(GPU, 8, activations="int8")               # W8A8 on the int8 tensor cores
end4 = decode_speedup_end_batch(GPU, bits["int4-awq"])                         # the larger ridge: the gain ends
BATCHES = [1, 8, 32, 64, 128, 256, 512, 1024]
gain = {"int8 weight-only (W8A16)": [decode_speedup(m, GPU, b, SHORT, "int8", tp=tp) for b in BATCHES],
        "int4 weight-only (W4A16)": [decode_speedup(m, GPU, b, SHORT, "int4-awq", tp=tp) for b in BATCHES],
        "int8 W8A8 (SmoothQuant)": [decode_speedup(m, GPU, b, SHORT, "int8", "int8", tp=tp) for b in BATCHES]}
print({w: round(c) for w, c in crossover.items()}, round(w8a8_cross), round(end4),
      {k: [round(v, 2) for v in vals] for k, vals in gain.items()})

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s5_ridge, s5_c16, s5_c4 = f"{crossover['bf16']:.0f}", f"{crossover['bf16']:.0f}", f"{crossover['int4-awq']:.0f}"
s5_big = f"{BATCHES[-1]:,}"
s5_g4, s5_g8a8 = f"{gain['int4 weight-only (W4A16)'][-1]:.2f}", f"{gain['int8 W8A8 (SmoothQuant)'][-1]:.2f}"
s5_int8_tops, s5_short = f"{g.int8_tops:,.0f}", f"{SHORT}"
s5_end, s5_g128 = f"{end4:.0f}", f"{gain['int4 weight-only (W4A16)'][BATCHES.index(128)]:.2f}"

# %% [markdown]
# memlib: int4 decode turns compute-bound near batch **{eval}`s5_c4`**, bf16 near **{eval}`s5_c16`**. In between
# int4 is still faster (**{eval}`s5_g128`×** at batch 128, {eval}`s5_short`-token contexts); the gain ends at the
# larger ridge, **{eval}`s5_end`** (`decode_speedup_end_batch`). At {eval}`s5_big` sequences the int4 roofline is
# **{eval}`s5_g4`×** bf16's: the weights are read once per step either way, and the FLOPs are the same. Real W4A16
# kernels dequantize every weight for every step, so they lose the gain earlier than the roofline. The deep
# dive plots these steps on the roofline itself. **W8A8** changes the compute roof instead:
# SmoothQuant's int8 matmuls run on the {eval}`s5_int8_tops` TOPS int8 tensor cores, twice the bf16 peak,
# so it keeps **{eval}`s5_g8a8`×** there, and it speeds up prefill, compute-bound even for one long prompt.
# The pencil left out the KV cache: it is read every step too, unquantized, and at long contexts it is
# most of the bytes (the deep dive's KV-cache follow-up).

# %% [markdown]
# ### Step 6 · What accuracy costs: the papers' own tables
#
# memlib does not model accuracy; these are the papers' measurements, WikiText-2 perplexity (lower is better),
# quoted. Llama-2-70B, AWQ (Lin et al. 2023, arXiv:2306.00978, Table 4): **FP16 3.32**; int4 g128: RTN
# (plain rounding) 3.46, GPTQ 3.42, **AWQ 3.41**; int3 g128: RTN 3.98, AWQ 3.74. Why it survives: a g128
# scale keeps each group's error at S/2 of *its* range, and GPTQ/AWQ spend that error where it matters
# least. The deep dive has the full tables (GPTQ's OPT, SmoothQuant's W8A8).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Charts · 图
#
# **Takeaway: bf16 does not fit one H100; int8 fits with little room; int4 leaves half the card for the
# KV cache.** Llama-2-70B, one 4k chat on one GPU (`memlib.learn.viz.breakdown_bars`, linear bars, the card's
# capacity dashed).

# %% jupyter={"source_hidden": true} tags=["hide-input"]
fig, ax = plt.subplots(figsize=(7, 3.4))
breakdown_bars({w: est[w] for w in FORMATS}, gpu=GPU, ax=ax, title="Llama-2-70B, batch 1, 4k context, one GPU")
plt.show()

# %% [markdown]
# **Takeaway: weight-only int4 is ~3.8× faster at batch 1; the gain shrinks past int4's ridge and is gone past
# bf16's (a few hundred sequences); only W8A8 keeps a gain there.** Decode roofline speed-up over bf16 on two H100s, {eval}`s5_short`-token contexts
# (`memlib.serving.quantization.decode_speedup`, linear y).

# %% jupyter={"source_hidden": true} tags=["hide-input"]
fig, ax = plt.subplots(figsize=(7, 3.4))
count_sweep(BATCHES, gain, ax=ax, logx=True, xlabel="sequences decoded together (batch)",
            ylabel="speed-up over bf16 (roofline)", title="Llama-2-70B decode on 2 × H100: when quantization pays")
ax.axhline(1.0, color="k", lw=0.8, ls="--")
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. Playground · 动手试
#
# Try: switch the weights between `bf16`, `int8`, `int4-awq` and `nf4` and watch the largest batch and the
# decode limit; then set the KV cache to `fp8` and the context to 32768 to see what weight quantization
# does not touch.

# %%
ServingPlayground(model=MODEL, gpu=GPU, tp=1, weights="int4-awq", context=CTX)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8. Follow-up questions · 追问
#
# ### 追问 1 · When does quantization NOT make inference faster?

# %% tags=["nbval-check-output"]
llm_int8 = {LLM_INT8_MATMUL_SPEEDUP[d][0]: LLM_INT8_MATMUL_SPEEDUP[d][3] for d in (4096, 5140, 12288)}  # quoted
print(f"LLM.int8() matmul vs fp16 (paper's Table 5): {llm_int8}; W4A16 at batch {BATCHES[-1]}: "
      f"{gain['int4 weight-only (W4A16)'][-1]:.2f}x")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
f1_67, f1_13, f1_175 = f"{llm_int8['6.7B']:.2f}", f"{llm_int8['13B']:.2f}", f"{llm_int8['175B']:.2f}"

# %% [markdown]
# Three cases. (1) **Compute-bound work**: large-batch decode and prefill; weight-only int4 gives
# {eval}`s5_g4`× at batch {eval}`s5_big`, and its dequantization can make it slower than bf16. (2) **Kernels
# that do extra work**: LLM.int8() splits out the outlier columns into an fp16 matmul; its own paper measures
# the first feed-forward matmul at {eval}`f1_67`× fp16 for the 6.7B shape, {eval}`f1_13`× for 13B and
# {eval}`f1_175`× for 175B (arXiv:2208.07339, Table 5), and SmoothQuant's Table 10 has it slower than FP16 in
# three of its four settings. (3) **No fast kernel on the GPU**: a V100 has no int8 tensor cores, and fp8 ones
# arrived with Ada and Hopper.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### 追问 4 · fp8 or int8 on an H100? And FP4?

# %% tags=["nbval-check-output"]
fp = {k: FLOAT_FORMATS[k].max_value for k in ("fp8-e4m3", "fp8-e5m2", "fp4-e2m1")}   # memlib.serving.quantization
fp_bits = {k: scaled_format_bits(k) for k in ("fp8 block 128x128", "mxfp4", "nvfp4")}  # per weight, scales included
print(fp, {k: round(v, 3) for k, v in fp_bits.items()}, f"fp8 peak {g.fp8_tflops:,.0f} TFLOP/s")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
f4_e4m3, f4_e5m2 = f"{fp['fp8-e4m3']:g}", f"{fp['fp8-e5m2']:,.0f}"
f4_peak, f4_bf16 = f"{g.fp8_tflops:,.0f}", f"{g.bf16_tflops:,.0f}"
f4_mx, f4_nv = f"{fp_bits['mxfp4']:.2f}", f"{fp_bits['nvfp4']:.1f}"

# %% [markdown]
# On Hopper, **fp8 is the default W8A8**: the same 8 bits as int8, but a float keeps its relative precision
# across the range, so outliers hurt it less than int8's evenly spaced codes; its tensor cores run at
# {eval}`f4_peak` TFLOP/s against {eval}`f4_bf16` in bf16. E4M3 (max {eval}`f4_e4m3`) holds weights and activations; E5M2 (max {eval}`f4_e5m2`)
# gradients. FP4 stores E2M1 values with a scale per small block: **MXFP4** {eval}`f4_mx` bits per weight
# (gpt-oss ships it), **NVFP4** {eval}`f4_nv` (NVIDIA's; Blackwell's FP4 tensor cores run both). Scales, formats and DeepSeek's
# block fp8 are on the deep-dive page.
#
# More follow-ups (GPTQ, AWQ and SmoothQuant; why naive int8 breaks on large models; fp8 and FP4 in detail, PTQ vs QAT, NF4 vs int4, quantizing the KV cache, the bigger batch
# that quantization buys, LLM.int8()'s end-to-end speed) are on the [deep-dive page](09_quantization_deep_dive.ipynb).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9. Pitfalls · 避坑
#
# - Saying "int4 is 4× smaller": the projections shrink {eval}`s2_ratio`×, the model {eval}`s3_ratio`×, the KV
#   cache not at all.
# - Promising a speed-up without naming the batch: weight-only int4 is {eval}`s4_x4`× at batch 1 and
#   {eval}`s5_g4`× at batch {eval}`s5_big`.
# - Calling LLM.int8() a speed optimisation: it saves memory and costs time ({eval}`f1_67`× fp16 on a 6.7B-shaped matmul).
# - Quantizing activations per tensor naively past ~6.7B: outlier features destroy the small values (追问 3).
# - Forgetting that W8A8 needs int8 (or fp8) tensor cores: a V100 has neither.
# - Saying "past the int4 crossover, int4 gains nothing": it gains until bf16 is compute-bound too ({eval}`s5_g128`× at batch 128).
# - Quoting perplexity from one table as "lossless": 4-bit g128 is close on 70B (+{eval}`a_ppl`), worse on small models and at 3 bits.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10. Deep dive (skip on first read) · 深入（可跳过）
#
# On its own page, [09 · deep dive](09_quantization_deep_dive.ipynb): the fact-check of the claims that
# circulate (memlib's figure and a verdict for each), fp8 and FP4 (E4M3/E5M2, block scales, MXFP4, NVFP4), the
# decode steps on a roofline, the papers' accuracy tables quoted in full (GPTQ, AWQ, SmoothQuant), LLM.int8()'s
# measured speed, and the follow-ups above.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 11. Further reading · 延伸阅读
#
# - Jacob et al. 2018, *Quantization and Training of Neural Networks for Efficient Integer-Arithmetic-Only Inference*, [arXiv:1712.05877](https://arxiv.org/abs/1712.05877)
# - Dettmers et al. 2022, *LLM.int8(): 8-bit Matrix Multiplication for Transformers at Scale*, [arXiv:2208.07339](https://arxiv.org/abs/2208.07339)
# - Frantar et al. 2022, *GPTQ: Accurate Post-Training Quantization for Generative Pre-trained Transformers*, [arXiv:2210.17323](https://arxiv.org/abs/2210.17323)
# - Xiao et al. 2022, *SmoothQuant: Accurate and Efficient Post-Training Quantization for Large Language Models*, [arXiv:2211.10438](https://arxiv.org/abs/2211.10438)
# - Lin et al. 2023, *AWQ: Activation-aware Weight Quantization for LLM Compression and Acceleration*, [arXiv:2306.00978](https://arxiv.org/abs/2306.00978); code [mit-han-lab/llm-awq](https://github.com/mit-han-lab/llm-awq)
# - Dettmers et al. 2023, *QLoRA: Efficient Finetuning of Quantized LLMs* (NF4, double quantization), [arXiv:2305.14314](https://arxiv.org/abs/2305.14314)
# - Pope et al. 2022, *Efficiently Scaling Transformer Inference* (memory- vs compute-bound decode), [arXiv:2211.05102](https://arxiv.org/abs/2211.05102)
# - Williams et al. 2009, *Roofline: An Insightful Visual Performance Model for Multicore Architectures*, [CACM](https://doi.org/10.1145/1498765.1498785)
