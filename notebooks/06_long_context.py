# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,slideshow,jupyter,-user_expressions
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
# # 06 · What changes when you train at 128k tokens? · 128k 长上下文训练，显存怎么变？
#
# ## 1. The question · 问题
#
# > **把训练的序列长度从 8k 提到 128k，显存和时间会发生什么变化？怎么训？** <br> *What changes when you
# > train at 128k tokens instead of 8k, and how do you actually train at that length?*
#
# Llama-3.1-8B (and 70B), bf16 on H100 80GB GPUs, one sequence per micro-batch.
# **Reading time:** core path ~12 min; the [deep dive](06_long_context_deep_dive.ipynb) (fact-check,
# ledger tables, more follow-ups) is its own page.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
# %matplotlib inline
import math

import matplotlib.pyplot as plt

import memlib
from memlib import estimate_inference, estimate_training, fits, get_gpu, get_model, step_time
from memlib.activations import korthikanti_layer_bytes
from memlib.fit import usable_bytes
from memlib.long_context_playground import LongContextPlayground
from memlib.plan import plan
from memlib.timing import attention_flops_per_token, cp_kv_bytes, flops_per_token
from memlib.cost.conventions import (attention_hbm_accesses, attention_to_weights_flops,
                                     sequence_flops_ratio, windowed_attention_flops_per_token)
from memlib.viz import breakdown_bars, sweep

MODEL, GPU, N_GPU = "llama-3.1-8b", "h100-80gb", 8   # one 8 x H100 node
SHORT, LONG = 8192, 131072                          # Llama 3's pre-training length and its long-context stage
FSDP = dict(zero_stage="FULL_SHARD")                # FSDP2 with bf16 compute (torchtitan's default)
# FlashAttention's SRAM: "M around 100KB" (Dao et al. 2022, arXiv:2205.14135, Sec. 3.2), in bf16 elements
SRAM_ELEMENTS = 100_000 // 2


def GB(n_bytes):
    """GB (1e9), labelled: the unit of the prose."""
    return f"{n_bytes / 1e9:,.1f} GB"


def G(n_bytes):
    """GiB, labelled: what torch reports, for verdicts against a GPU."""
    return f"{n_bytes / 2**30:,.1f} GiB"


def sig(x, digits=2):
    """x rounded to `digits` significant figures, for the spoken answer."""
    if x == 0:
        return "0"
    d = digits - 1 - math.floor(math.log10(abs(x)))
    return f"{round(x, d):,.{max(d, 0)}f}"


def term(e, name):
    """The bytes of one named term of an estimate (est.terms)."""
    return next(t.nbytes for t in e.terms if t.name == name)


# The figures of the 30-second answer (section 2), each derived in section 5
m, g = get_model(MODEL), get_gpu(GPU)
base_long = estimate_training(m, seq_len=LONG, dp=N_GPU, **FSDP)                   # no lever pulled
cp8_sel = estimate_training(m, seq_len=LONG, cp=N_GPU, recompute="selective", **FSDP)
cp8_min = estimate_training(m, seq_len=LONG, cp=N_GPU, recompute="full", loss="chunked", **FSDP)
attn_ratio = attention_flops_per_token(m, LONG) / (6 * m.num_params)  # PaLM's count, no causal discount
# what a causal FlashAttention kernel computes (memlib.cost.conventions): attention over the weights' 6N, and
# one 128k sequence's training FLOPs over one 8k sequence's
attn_ratio_causal = attention_to_weights_flops(m, LONG, causal=True)
seq_ratio_causal, seq_ratio_full = (sequence_flops_ratio(m, LONG, SHORT, causal=c) for c in (True, False))
act_total = max(mo.parts.get("activations", 0) for mo in base_long.moments)  # all layers, one GPU, no lever
fit_word, fit_zh = ("fits", "放得下") if fits(cp8_sel, g).fits else ("does not fit", "放不下")
a_act, a_peak, a_cp8 = sig(act_total / 1e9, 3), sig(base_long.peak_bytes / 1e12), sig(cp8_sel.peak_bytes / 1e9)
a_attn, a_seq = sig(attn_ratio_causal), sig(seq_ratio_causal)
# section 6's first chart: peak per GPU from 4k to 1M tokens (memlib.estimate_training), four layouts
xs = [2 ** i for i in range(12, 21)]
lever = dict(recompute="full", loss="chunked", **FSDP)
series = {
    "eager attention": [estimate_training(m, seq_len=s, dp=N_GPU, attention="eager", **FSDP).peak_bytes
                        for s in xs],
    "sdpa": [estimate_training(m, seq_len=s, dp=N_GPU, **FSDP).peak_bytes for s in xs],
    "sdpa + full recompute + chunked loss": [estimate_training(m, seq_len=s, dp=N_GPU, **lever).peak_bytes
                                             for s in xs],
    "… + context parallel 8": [estimate_training(m, seq_len=s, cp=N_GPU, **lever).peak_bytes for s in xs],
}

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. The 30-second answer · 30 秒回答
#
# > **EN** At 128k the activations, not the weights, decide: Llama-3.1-8B saves about {eval}`a_act` GB
# > of them, a {eval}`a_peak` TB peak on one GPU. Levers: split the sequence over the GPUs (context
# > parallelism) with FSDP and selective recompute, {eval}`a_cp8` GB per H100, it {eval}`fit_word`; chunked
# > loss and full recompute cut more. Caveat: compute grows too: a causal FlashAttention kernel spends
# > {eval}`a_attn`x the weights' FLOPs on attention, and a 128k sequence costs {eval}`a_seq`x an 8k one.
#
# > **中文** 128k 时决定显存的是激活，不是权重：Llama-3.1-8B 要存约 {eval}`a_act` GB 激活，单卡峰值约
# > {eval}`a_peak` TB。手段：上下文并行把序列切到多张卡，加 FSDP 和选择性重计算，每张 H100 约 {eval}`a_cp8` GB，
# > {eval}`fit_zh`；分块 loss 和全量重计算还能再省。注意算力也涨：因果 FlashAttention 的注意力计算量是权重部分的
# > {eval}`a_attn` 倍，一条 128k 序列的计算量是 8k 的 {eval}`a_seq` 倍。
#
# The long answer follows: every figure above is derived in section 5.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. What the interviewer is probing · 考察意图
#
# - **Which term grows with s.** Model states do not; activations grow linearly, eager attention's
#   score matrices quadratically, attention FLOPs per token linearly (per sequence quadratically).
# - **What FlashAttention does, and does not.** It never writes the s×s matrix to memory (tiling,
#   online softmax, recompute in the backward): it saves memory and memory traffic, not FLOPs.
# - **What each lever saves at the peak.** Recompute, a chunked loss, offload and context
#   parallelism each remove a different term; the peak moves to whatever is left.
# - **How it is really done.** Context parallelism (ring attention) over a node, FSDP over the same
#   GPUs, selective or full recompute (Llama 3, torchtitan, Megatron), and what that costs in time.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Words we use · 术语
#
# - **s, b, h, a, L, V**: sequence length, micro-batch, hidden size, heads, layers, vocabulary. Llama-3.1-8B: h = 4,096, a = 32 heads of 128, 8 K/V heads (**GQA**: query heads share K/V heads), L = 32, V = 128,256.
# - **Activations**: tensors the forward saves for the backward (`memlib.activations.llama_layer_ledger` lists them).
# - **Eager attention**: softmax(QKᵀ)V as separate ops, keeping the (b, a, s, s) probabilities. **sdpa / FlashAttention**: a fused kernel that keeps Q, K, V, the output and one log-sum-exp per row.
# - **HBM / SRAM**: the GPU's 80 GB of memory / the on-chip memory of each streaming multiprocessor (A100 192 KB, H100 228 KB); **tiling**: computing on blocks that fit in SRAM; **online softmax**: a softmax built block by block from a running max and sum.
# - **Logits, chunked loss**: the b·s·V scores of the output head; a loss computed chunk by chunk so they never exist whole (`loss="chunked"`).
# - **Recompute**: *full* keeps each layer's input and reruns the layer in backward; *selective* keeps every other matmul output and the attention output.
# - **Activation offload**: saved tensors copied to pinned host memory in the forward, back for the backward.
# - **FSDP (ZeRO-3)**: parameters, gradients and optimizer states sharded over the GPUs. **Model states**: those three, 16 B per parameter with mixed-precision AdamW.
# - **Context parallelism (CP), ring attention**: each sequence split over cp GPUs; attention fetches the others' K and V (all at once or around a ring).
# - **Sliding-window attention**: each token attends to the last w tokens only (Mistral 7B: w = 4,096).
# - **12·L·H·Q·T**: attention FLOPs per training token (PaLM App. B), beside 6N for N weights. **MFU**: the share of peak FLOP/s achieved.
# - **GB / GiB**: 10⁹ / 2³⁰ bytes. Prose in GB; verdicts against an H100 in GiB (what torch reports).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. The answer, step by step · 推导
#
# ### Step 1 · The same layout at 8k and at 128k
#
# ✏️ **Back of the envelope.** Model states of mixed-precision AdamW: 16 bytes per parameter,
# 8e9 x 16 B = 128 GB, over 8 GPUs with FSDP: **16 GB per GPU**, whatever the sequence.
# Activations: about 200 KB per token per layer (step 2), x 32 layers x 8,192 tokens = **52 GB** per
# GPU at 8k; x 16 at 128k = **840 GB**.

# %% tags=["nbval-check-output"]
base_short = estimate_training(m, seq_len=SHORT, dp=N_GPU, **FSDP)   # memlib.estimate_training
states = base_short.model_state_bytes                               # params + grads + AdamW, this GPU's shard
acts = {s: estimate_training(m, seq_len=s, dp=N_GPU, **FSDP).counts["layer_activation_bytes"]
        * m.num_layers for s in (SHORT, LONG)}
print(f"states per GPU {GB(states)}; all layers' activations: 8k {GB(acts[SHORT])}, "
      f"128k {GB(acts[LONG])}")
print(f"peak 8k {G(base_short.peak_bytes)}, 128k {G(base_long.peak_bytes)}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s1_states, s1_states_pencil = f"{GB(states)}", f"{states / 16e9 - 1:+.0%}"
s1_a8, s1_a128, s1_a_pencil = f"{GB(acts[SHORT])}", f"{GB(acts[LONG])}", f"{acts[SHORT] / 52e9 - 1:+.0%}"
s1_peak8, s1_where8 = f"{G(base_short.peak_bytes)}", f"{base_short.peak_moment.where}"
s1_req8, s1_cap = f"{G(fits(base_short, g).required_bytes)}", f"{G(usable_bytes(g))}"
s1_fit8 = f"{'fits' if fits(base_short, g).fits else 'does not fit'}"
s1_peak128, s1_vocab = f"{G(base_long.peak_bytes)}", f"{GB(base_long.breakdown['logits_and_loss'])}"

# %% [markdown]
# memlib: model states are **{eval}`s1_states`** per GPU at any length (pencil {eval}`s1_states_pencil`:
# 16 B/param is exact). The layers' saved activations are **{eval}`s1_a8`** at 8k and **{eval}`s1_a128`** at
# 128k (pencil {eval}`s1_a_pencil`). What the pencil left out: the peak is not states + activations. At 8k
# it is **{eval}`s1_peak8`** ({eval}`s1_where8`); with the CUDA context and allocator headroom it needs
# {eval}`s1_req8` of an H100's {eval}`s1_cap`, so it **{eval}`s1_fit8`** even at 8k without recompute. At
# 128k the peak is **{eval}`s1_peak128`**, of which {eval}`s1_vocab` are the logits and loss (step 3).

# %% [markdown]
# ### Step 2 · Attention: FlashAttention keeps it linear
#
# ✏️ **Back of the envelope.** Standard attention writes the scores S = QKᵀ and the probabilities
# P = softmax(S) to HBM: a·s² values per layer. At 32k, 32 x 32,768² ≈ 3.4e10 scores; at 5 bytes each
# (Korthikanti's 5·a·s²·b: softmax output 2 B, dropout mask 1 B, dropout output 2 B) ≈ **170 GB per layer**. A fused kernel
# keeps Q, K, V and the output, (4,096 + 1,024 + 1,024 + 4,096) x 2 B ≈ 20 KB per token; with the MLP's
# four 14,336-wide tensors (115 KB) and the norms' fp32 inputs (33 KB): **~170-200 KB per token per layer**.

# %% tags=["nbval-check-output"]
per_token = {att: estimate_training(m, seq_len=LONG, dp=N_GPU, attention=att, **FSDP).counts[
    "layer_activation_bytes"] // LONG for att in ("sdpa", "eager")}       # one layer, bytes per token
S32 = 32768
scores32 = (korthikanti_layer_bytes(S32, 1, m.hidden_size, m.num_heads)   # 5·a·s²·b, one layer
            - korthikanti_layer_bytes(S32, 1, m.hidden_size, m.num_heads, recompute="selective"))
lse32 = next(n for name, n, _ in estimate_training(m, seq_len=S32, dp=N_GPU, **FSDP).layer.items
             if name == "sdpa.logsumexp")                                 # what FlashAttention keeps instead
hbm_std, hbm_flash = attention_hbm_accesses(S32, m.head_dim, SRAM_ELEMENTS)   # Theorem 2, one head
print(f"128k, B/token/layer: sdpa {per_token['sdpa']:,}, eager {per_token['eager']:,}")
print(f"32k, one layer: s x s matrices {GB(scores32)}, logsumexp {lse32 / 1e6:.1f} MB")
print(f"32k, HBM accesses per head (Theorem 2): standard {hbm_std:.2e}, flash {hbm_flash:.2e}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s2_sdpa, s2_eager = f"{per_token['sdpa'] / 1e3:,.0f} KB", f"{per_token['eager'] / 1e6:,.1f} MB"
s2_eager_layer, s2_scores = f"{GB(per_token['eager'] * LONG)}", f"{GB(scores32)}"
s2_lse, s2_hbm = f"{lse32 / 1e6:.1f} MB", f"{hbm_std / hbm_flash:.1f}"
s2_sram = f"{SRAM_ELEMENTS * 2 / 1e3:.0f} KB"

# %% [markdown]
# memlib: at 32k the s×s matrices of one layer would take **{eval}`s2_scores`**
# (`korthikanti_layer_bytes`' 5·a·s²·b term); FlashAttention (Dao et al. 2022) never writes them:
#
# 1. **Tiling.** Blocks of Q, K and V are loaded into SRAM and the block of S = QKᵀ is computed there.
# 2. **Online softmax.** Each query row keeps a running max and a running sum of exponentials; a new
#    block rescales the partial output by exp(old max − new max), so the result is exact.
# 3. **Recompute.** The forward saves only the output and each row's logsumexp ({eval}`s2_lse` per layer
#    at 32k); the backward rebuilds S and P block by block from Q, K and that logsumexp.
#
# HBM traffic (Theorem 2): standard attention needs Θ(s·d + s²) accesses, FlashAttention Θ(s²·d²/M) for
# an SRAM of M elements: at d = 128 and M = {eval}`s2_sram` it is {eval}`s2_hbm`x fewer at 32k (about M/d² at any
# length; orders, not constants), and no s² memory. The FLOPs are the same, more in the backward (the recompute): it saves
# memory and memory traffic, not FLOPs. In training, a layer keeps **{eval}`s2_sdpa` per token** at every
# length with sdpa, against **{eval}`s2_eager`** with eager attention at 128k: {eval}`s2_eager_layer` for
# one layer. Every number below uses sdpa.

# %% [markdown]
# ### Step 3 · The vocabulary: logits and loss
#
# ✏️ **Back of the envelope.** transformers' loss keeps bf16 logits (2 B), casts them to fp32 (4 B)
# and log-softmax keeps its fp32 output (4 B); the backward starts with two more fp32 tensors of the
# same size. Per token that is 128,256 x (2 + 12) B ≈ **1.8 MB**, nine times a layer's 200 KB, and
# x 131,072 tokens ≈ **235 GB**. A chunked loss keeps none of it.

# %% tags=["nbval-check-output"]
chunked_long = estimate_training(m, seq_len=LONG, dp=N_GPU, loss="chunked", **FSDP)   # Liger's fused CE
vocab_bytes = max(mo.parts.get("logits_and_loss", 0) for mo in base_long.moments)
print(f"logits and loss at their largest {GB(vocab_bytes)}")
print(f"peak, full loss {G(base_long.peak_bytes)}; chunked {G(chunked_long.peak_bytes)}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s3_vocab, s3_pencil = f"{GB(vocab_bytes)}", f"{vocab_bytes / 235e9 - 1:+.0%}"
s3_drop = f"{GB(base_long.peak_bytes - chunked_long.peak_bytes)}"
s3_full, s3_chunked = f"{G(base_long.peak_bytes)}", f"{G(chunked_long.peak_bytes)}"
s3_where = f"{chunked_long.peak_moment.where}"

# %% [markdown]
# memlib: the logits and loss reach **{eval}`s3_vocab`** at the start of the backward (pencil
# {eval}`s3_pencil`). The chunked loss removes them, and the peak drops by **{eval}`s3_drop`**, from
# {eval}`s3_full` to {eval}`s3_chunked`; not by all of it, because the peak moves to the {eval}`s3_where`,
# where every layer's activations are still alive. What the pencil left out: the previous step's logits
# live through the next forward, and the chunked loss keeps its own gradient of the hidden states.

# %% [markdown]
# ### Step 4 · Recompute: what each mode saves at the peak
#
# ✏️ **Back of the envelope.** Full recompute keeps one tensor per layer, its input: 4,096 x 2 B = 8 KB
# per token per layer, x 32 layers x 131,072 = **34 GB**, plus one layer rebuilt in backward (26 GB).
# Selective keeps about a third of the 200 KB. Both cost FLOPs: full reruns the forward (+33%).

# %% tags=["nbval-check-output"]
rec = {rc: estimate_training(m, seq_len=LONG, dp=N_GPU, loss="chunked", recompute=rc, **FSDP)
       for rc in ("none", "selective", "full")}
ff = {rc: flops_per_token(m, LONG, rc) for rc in rec}   # memlib.timing.flops_per_token: what recompute costs
for rc, e in rec.items():
    print(f"{rc:>9}: peak {G(e.peak_bytes)}, activations {G(e.breakdown['activations'])}, "
          f"FLOPs {ff[rc] / ff['none'] - 1:+.0%}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s4_sel = f"{GB(rec['none'].peak_bytes - rec['selective'].peak_bytes)}"
s4_full = f"{GB(rec['none'].peak_bytes - rec['full'].peak_bytes)}"
s4_left = f"{G(rec['full'].peak_bytes)}"
s4_vs = f"{'just over' if not fits(rec['full'], g).fits else 'under'}"
s4_ckpt = f"{GB(term(rec['full'], 'checkpoint_bytes') * m.num_layers)}"
s4_ff_full, s4_ff_sel = f"{ff['full'] / ff['none'] - 1:+.0%}", f"{ff['selective'] / ff['none'] - 1:+.0%}"

# %% [markdown]
# At the peak, selective recompute saves **{eval}`s4_sel`** and full recompute **{eval}`s4_full`**; full
# leaves {eval}`s4_left` per GPU, {eval}`s4_vs` an H100 (checkpoints {eval}`s4_ckpt` and one rebuilt
# layer, as the pencil said). Full recompute's extra FLOPs at 128k: {eval}`s4_ff_full`, the same third as
# at 8k because attention's FLOPs are rerun too; selective costs {eval}`s4_ff_sel`.

# %% [markdown]
# ### Step 5 · Activation offload: what stays on the GPU
#
# ✏️ **Back of the envelope.** Offloading the 34 GB of checkpoints to host memory leaves the one
# layer being rebuilt (26 GB) plus states and buffers: about **45 GB** per GPU, and 34 GB of pinned
# host RAM per GPU process. The copies cross PCIe (about 50 GB/s per H100) once each way.

# %% tags=["nbval-check-output"]
off = estimate_training(m, seq_len=LONG, dp=N_GPU, loss="chunked", recompute="full",
                        activation_offload=True, **FSDP)
print(f"offload: peak {G(off.peak_bytes)} at {off.peak_moment.where}")
print(f"host {GB(off.host_bytes)} per GPU, fits {fits(off, g).fits}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s5_peak, s5_host = f"{G(off.peak_bytes)}", f"{GB(off.host_bytes)}"
s5_fit, s5_margin = f"{'fits' if fits(off, g).fits else 'does not fit'}", f"{fits(off, g).margin_gib:+.1f} GiB"
s5_saves = f"{GB(rec['full'].peak_bytes - off.peak_bytes)}"

# %% [markdown]
# memlib: with checkpoints offloaded the peak is **{eval}`s5_peak`** and the host holds **{eval}`s5_host`**
# per GPU process: it **{eval}`s5_fit`** an H100 (margin {eval}`s5_margin`), each GPU still running a whole
# 128k sequence. The pencil left out the two most recent checkpoints, on the GPU until their copy
# completes, and the backward's gradients and gathered layers. Offload saves {eval}`s5_saves` at the
# peak; time over PCIe is the price.

# %% [markdown]
# ### Step 6 · Context parallelism: split the sequence
#
# ✏️ **Back of the envelope.** With cp = 8 each GPU keeps 131,072 / 8 = 16,384 tokens: every
# per-token term divides by 8 (activations 840 → 105 GB, logits and loss 235 → 29 GB). The states
# stay 16 GB per GPU (FSDP over the same 8 GPUs). Attention fetches the other GPUs' K and V: per layer
# 7 blocks of 16,384 x 2,048 x 2 B = 67 MB each, sent in the forward and again in the backward, plus
# fp32 dK/dV around the ring: about **2 GB per layer, 64 GB per GPU per step** over NVLink.

# %% tags=["nbval-check-output"]
by_cp = {c: estimate_training(m, seq_len=LONG, dp=N_GPU // c, cp=c, **FSDP) for c in (1, 2, 4, 8)}
t_cp8 = step_time(by_cp[8], g)                         # memlib.step_time: the ring's traffic and overlap
for c, e in by_cp.items():
    print(f"cp={c}: peak {G(e.peak_bytes)}, activations {G(e.breakdown['activations'])}")
print(f"ring per layer {cp_kv_bytes(by_cp[8]) / 1e9:.2f} GB; per step {t_cp8.cp_comm_bytes / 1e9:.1f} GB, "
      f"{t_cp8.cp_exposed_s:.3f} s exposed")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s6_peak, s6_x = f"{G(by_cp[8].peak_bytes)}", f"{by_cp[1].peak_bytes / by_cp[8].peak_bytes:.1f}"
s6_states, s6_layer = f"{G(by_cp[8].model_state_bytes)}", f"{cp_kv_bytes(by_cp[8]) / 1e9:.2f} GB"
s6_step, s6_link = f"{t_cp8.cp_comm_bytes / 1e9:.0f} GB", f"{t_cp8.cp_comm_s:.2f} s"
s6_exposed, s6_buf = f"{t_cp8.cp_exposed_s * 1e3:.0f} ms", f"{GB(term(by_cp[8], 'ring_kv_buffer_bytes'))}"

# %% [markdown]
# memlib: at cp = 8 the peak is **{eval}`s6_peak`**, {eval}`s6_x`x less than at cp = 1; the model states
# ({eval}`s6_states`) are the same at every cp, because FSDP shards them over dp x cp = 8 GPUs either way.
# Ring attention sends **{eval}`s6_layer` per layer** (pencil 2 GB) and **{eval}`s6_step`** per GPU per step,
# {eval}`s6_link` on NVLink, of which only {eval}`s6_exposed` is not hidden behind the attention blocks.
# The pencil left out the ring's buffers (all 8 K/V blocks gathered at once, {eval}`s6_buf` in the
# forward) and that cp = 8 alone, without recompute, still needs {eval}`s6_peak`.

# %% [markdown]
# ### Step 7 · How a practitioner trains at 128k
#
# ✏️ **Back of the envelope.** Combine: cp = 8 divides the 840 GB of activations to 105 GB, selective
# recompute keeps about a third (35 GB), the logits and loss 29 GB, states 16 GB: about **80 GB**,
# borderline on an 80 GB H100. With a chunked loss and full recompute: 16 + 4 + 3 ≈ **25 GB**.

# %% tags=["nbval-check-output"]
r8 = plan(m, g, N_GPU, seq_len=LONG, grad_accum=1, cps=(1, 2, 4, 8),
          recomputes=("selective", "full"))              # memlib.plan.plan: every layout on 8 H100s
best = r8.best
v_sel, v_min = fits(cp8_sel, g), fits(cp8_min, g)
print(f"{len(r8.feasible)} of {len(r8.feasible) + len(r8.infeasible)} layouts fit; best:")
print(f"  {best.describe()}")
print(f"cp8 + selective: {G(cp8_sel.peak_bytes)} ({v_sel.margin_gib:+.1f} GiB); "
      f"+ chunked + full: {G(cp8_min.peak_bytes)} ({v_min.margin_gib:+.1f} GiB)")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s7_n, s7_best = f"{len(r8.feasible)}", f"{best.describe()}"
s7_sel, s7_fit = f"{G(cp8_sel.peak_bytes)}", f"{'fits' if v_sel.fits else 'does not fit'}"
s7_margin, s7_min = f"{v_sel.margin_gib:+.1f} GiB", f"{G(cp8_min.peak_bytes)}"
s7_pencil = f"{cp8_min.peak_bytes / 25e9 - 1:+.0%}"

# %% [markdown]
# memlib's search (`plan(..., cps=(1, 2, 4, 8))`) finds **{eval}`s7_n`** layouts that fit; fastest:
# **{eval}`s7_best`**. Context parallelism over the node with FSDP and selective recompute peaks at
# **{eval}`s7_sel`**: it **{eval}`s7_fit`** an H100 ({eval}`s7_margin` margin: the pencil's "borderline").
# Adding the chunked loss and full recompute brings it to **{eval}`s7_min`** (pencil {eval}`s7_pencil`),
# room for a longer sequence or a larger model, at a third more FLOPs. torchtitan's and Megatron's
# long-context recipes are this layout; a 70B adds tensor parallelism (deep dive).

# %% [markdown]
# ### Step 8 · Time: attention FLOPs grow with s
#
# ✏️ **Back of the envelope.** Per token, the weights cost 6N = 6 x 8e9 = 48 GFLOPs; attention
# 12·L·H·Q·T = 12 x 32 x 4,096 x T: 13 GFLOPs at 8k (a quarter of 6N), 206 GFLOPs at 128k (**4x 6N**).
# A 128k sequence therefore costs about 16 x (48 + 206) / (48 + 13) ≈ 66x an 8k one, not 16x.

# %% tags=["nbval-check-output"]
fpt = {s: flops_per_token(m, s) for s in (SHORT, LONG)}      # memlib.timing.flops_per_token (PaLM App. B)
t_short = step_time(estimate_training(m, seq_len=SHORT, dp=N_GPU, recompute="selective", **FSDP), g)
t_long = step_time(cp8_sel, g)
print(f"GFLOPs/token: 8k {fpt[SHORT] / 1e9:,.0f}, 128k {fpt[LONG] / 1e9:,.0f}; "
      f"causal 128k/8k sequence {seq_ratio_causal:.1f}x")
print(f"tokens/s per GPU: 8k {t_short.tokens_per_s_per_gpu:,.0f}, 128k cp=8 {t_long.tokens_per_s_per_gpu:,.0f}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s8_f8, s8_f128 = f"{fpt[SHORT] / 1e9:,.0f}", f"{fpt[LONG] / 1e9:,.0f}"
s8_attn_share = f"{attention_flops_per_token(m, LONG) / fpt[LONG]:.0%}"
s8_seq_palm = f"{fpt[LONG] * LONG / (fpt[SHORT] * SHORT):.0f}"
s8_causal, s8_palm = f"{attn_ratio_causal:.1f}", f"{attn_ratio:.1f}"
s8_seq_causal = f"{seq_ratio_causal:.0f}"
s8_tflops = f"{g.bf16_tflops:g}"
s8_t8, s8_t128 = f"{t_short.tokens_per_s_per_gpu:,.0f}", f"{t_long.tokens_per_s_per_gpu:,.0f}"

# %% [markdown]
# memlib (`flops_per_token`): {eval}`s8_f8` GFLOPs per token at 8k, **{eval}`s8_f128`** at 128k, of which
# attention is {eval}`s8_attn_share`. A 128k sequence costs **{eval}`s8_seq_palm`x** an 8k one (pencil 66x) by
# PaLM's count; a causal FlashAttention kernel computes half the scores, so attention is {eval}`s8_causal`x
# the weights' 6N, not {eval}`s8_palm`x, and the sequence costs **{eval}`s8_seq_causal`x**
# (`memlib.cost.conventions`). At 40% MFU on the H100's {eval}`s8_tflops` TFLOP/s, the same 8 GPUs train
# **{eval}`s8_t8` tokens/s per GPU** at 8k and **{eval}`s8_t128`** at 128k with cp = 8 (`memlib.step_time`).
# The pencil left out the causal discount: PaLM's count (and torchtitan's MFU) charges the masked half.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Charts · 图
#
# **Takeaway: eager attention stops fitting at a few thousand tokens, sdpa alone at 8k, recompute with a
# chunked loss near 128k; context parallelism over 8 GPUs goes far beyond.** Peak per GPU against the
# sequence length (8 H100s, FSDP; `memlib.viz.sweep`, lines on a log scale, the H100 dashed).

# %% jupyter={"source_hidden": true} tags=["hide-input"]
fig, ax = plt.subplots(figsize=(7.5, 3.6))
sweep(xs, series, gpu=GPU, xlabel="sequence length (tokens)", logx=True, ax=ax,
      title=f"{MODEL} on {N_GPU} x H100, FSDP, bf16: peak per GPU")
ax.set_yscale("log")
plt.show()

# %% [markdown]
# **Takeaway: the chunked loss removes the logits, recompute most of the activations, context
# parallelism a factor of 8 of both; the model states never move.** What one GPU holds at the peak at
# 128k for the layouts near the line (`memlib.viz.breakdown_bars`, linear bars).

# %% jupyter={"source_hidden": true} tags=["hide-input"]
bars = {"full recompute\n+ chunked": rec["full"], "+ activation\noffload": off, "cp 8\nonly": by_cp[8],
        "cp 8 +\nselective": cp8_sel, "cp 8 + full\n+ chunked": cp8_min}
fig, ax = plt.subplots(figsize=(8, 3.6))
breakdown_bars(bars, gpu=GPU, ax=ax, title=f"{MODEL}, 128k tokens, 8 x H100 with FSDP: per-GPU peak")
ax.margins(y=0.1)
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. Playground · 动手试
#
# Try: switch the attention to eager (ring attention needs sdpa), set cp to 1 and pull the other
# levers until it fits; raise the sequence to 1M tokens and find the cp that fits; pick Llama-3.1-70B.

# %%
LongContextPlayground(model=MODEL, gpu=GPU, seq_len=LONG, cp=N_GPU, recompute="selective")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8. Follow-up questions · 追问
#
# ### What did FlashAttention-2 and -3 change? · FlashAttention-2/3 改了什么？
#
# Not the memory: both keep FlashAttention's O(s) footprint and exact result. **FA-2** (Dao 2023) made
# it faster: fewer non-matmul FLOPs (rescaling once at the end), parallelism over the sequence as well
# as batch and heads (long sequences with small batches fill the GPU), and the work split between warps
# so they do not exchange partial results through shared memory: 50-73% of an A100's peak. **FA-3** (Shah et al. 2024) is for Hopper: asynchrony (TMA loads and warp specialization,
# producer warps feeding consumer warps), softmax interleaved with the matmuls of the next block, and
# FP8 with block quantization: up to 740 TFLOP/s in FP16 on an H100 (75%), about 1.2 PFLOP/s in FP8.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### What else removes attention's O(s²)? · 还有哪些办法对付 O(s²)？
#
# ✏️ **Back of the envelope.** Mistral 7B's sliding window, w = 4,096: at 32k a token attends to at
# most 4,096 keys instead of 16,384 on average (causal), about 4x fewer attention FLOPs, and the KV cache
# stops at 4,096 tokens: 32k / 4k = **8x less cache** at 32k, 32x at 128k.

# %% tags=["nbval-check-output"]
mis = get_model("mistral-7b")                                  # sliding window 4,096 on every layer
mis_full = mis.with_(sliding_window=0, layer_types=("full_attention",) * mis.num_layers)
win = {}
for s in (32768, LONG):
    kv = [estimate_inference(x, batch=1, context_len=s).breakdown["kv_cache"] for x in (mis, mis_full)]
    fl = [windowed_attention_flops_per_token(mis, s, w) for w in (mis.sliding_window, 0)]
    win[s] = kv + fl                            # memlib.cost.conventions: 12·L·H·Q x keys attended
    print(f"{s:>7,}: KV window {GB(kv[0])}, full {GB(kv[1])}; attention GFLOPs/token "
          f"{fl[0] / 1e9:.1f} vs {fl[1] / 1e9:.1f}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
w_kv, w_kv32, w_kv128 = f"{GB(win[32768][0])}", f"{GB(win[32768][1])}", f"{GB(win[LONG][1])}"
w_fl32, w_fl128 = f"{win[32768][3] / win[32768][2]:.1f}", f"{win[LONG][3] / win[LONG][2]:.0f}"
w_n6 = f"{6 * mis.num_params / 1e9:.0f}"

# %% [markdown]
# memlib: the window's KV cache is **{eval}`w_kv`** at any length, against {eval}`w_kv32` at 32k and
# {eval}`w_kv128` at 128k with full attention; attention FLOPs per token are {eval}`w_fl32`x fewer at 32k and
# {eval}`w_fl128`x at 128k (the weights' 6N is {eval}`w_n6` GFLOPs either way): KV and FLOPs grow as s·w, not
# s². The price: information beyond w travels only layer by layer (receptive field L·w). The remedies:
#
# - **FlashAttention**: exact; removes the s² *memory* and HBM traffic, not the s² FLOPs.
# - **Sliding window** (Longformer, Mistral): O(s·w) memory and FLOPs; Gemma and gpt-oss interleave it
#   with full layers.
# - **Sparse patterns** (Longformer: window + a few global tokens; BigBird: window + global + random):
#   O(s) with a fixed number of keys per query.
# - **Linear attention and state-space models** (Mamba): a fixed-size state instead of a KV cache, O(s)
#   time and O(1) memory per token at decode; weaker exact recall, hence hybrids.
#
# More follow-ups (the logits, Megatron SP vs CP, serving at 128k, all-gather vs ring, Ulysses, the 70B,
# FlashAttention's HBM accesses at every length) are on the [deep-dive page](06_long_context_deep_dive.ipynb).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9. Pitfalls · 避坑
#
# - **Eager attention at long context**: {eval}`s2_eager_layer` for one layer at 128k; check the model runs
#   sdpa/flash (`attn_implementation`): Gemma 2's soft-capping and gpt-oss's sinks force eager in transformers.
# - **Saying FlashAttention cuts FLOPs**: it cuts memory and HBM traffic; the backward recomputes S and P.
# - **Forgetting the logits**: {eval}`s3_vocab` at 128k, the largest term once recompute is on; use a
#   chunked/fused or vocabulary-parallel loss.
# - **Expecting CP to shard the model**: it splits tokens, not weights: combine it with FSDP over dp x cp.
# - **A length that does not divide**: load-balanced CP cuts each sequence into 2 x cp chunks.
# - **Reading MFU at long context**: PaLM's 12·L·H·Q·T has no causal discount, so MFU at 128k looks
#   inflated relative to 8k.
# - **Offload without the host RAM**: {eval}`s5_host` of pinned host RAM per GPU process here.
# - **Sliding windows and document masks with CP**: torch's ring attention handles causal SDPA only.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10. Deep dive (skip on first read) · 深入（可跳过）
#
# On its own page, [06 · deep dive](06_long_context_deep_dive.ipynb): the fact-check of the claims that
# circulate (FlashAttention's, Megatron's, Llama 3's, TRL's), the ledger tables (per token, recompute, cp,
# every layout that fits, one layer's saved tensors, the moments of the step), and the follow-ups above.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 11. Further reading · 延伸阅读
#
# - Dao et al. 2022, *FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness*, [arXiv:2205.14135](https://arxiv.org/abs/2205.14135)
# - Dao 2023, *FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning*, [arXiv:2307.08691](https://arxiv.org/abs/2307.08691)
# - Shah et al. 2024, *FlashAttention-3: Fast and Accurate Attention with Asynchrony and Low-precision*, [arXiv:2407.08608](https://arxiv.org/abs/2407.08608)
# - Milakov & Gimelshein 2018, *Online normalizer calculation for softmax*, [arXiv:1805.02867](https://arxiv.org/abs/1805.02867)
# - Korthikanti et al. 2022, *Reducing Activation Recomputation in Large Transformer Models*, [arXiv:2205.05198](https://arxiv.org/abs/2205.05198)
# - Liu, Zaharia, Abbeel 2023, *Ring Attention with Blockwise Transformers for Near-Infinite Context*, [arXiv:2310.01889](https://arxiv.org/abs/2310.01889)
# - Llama Team 2024, *The Llama 3 Herd of Models* (long-context pre-training, 4D parallelism), [arXiv:2407.21783](https://arxiv.org/abs/2407.21783)
# - Jiang et al. 2023, *Mistral 7B* (sliding-window attention, rolling buffer cache), [arXiv:2310.06825](https://arxiv.org/abs/2310.06825)
# - Beltagy et al. 2020, *Longformer*, [arXiv:2004.05150](https://arxiv.org/abs/2004.05150); Zaheer et al. 2020, *Big Bird*, [arXiv:2007.14062](https://arxiv.org/abs/2007.14062)
# - Gu & Dao 2023, *Mamba: Linear-Time Sequence Modeling with Selective State Spaces*, [arXiv:2312.00752](https://arxiv.org/abs/2312.00752)
# - Liang et al. 2024, *TorchTitan*, [arXiv:2410.06511](https://arxiv.org/abs/2410.06511); Megatron-Core, *context_parallel package*, [docs.nvidia.com](https://docs.nvidia.com/megatron-core/developer-guide/latest/api-guide/context_parallel.html)
# - Hsu et al. 2024, *Liger Kernel* (fused linear cross-entropy), [arXiv:2410.10989](https://arxiv.org/abs/2410.10989); Chowdhery et al. 2022, *PaLM* (App. B), [arXiv:2204.02311](https://arxiv.org/abs/2204.02311)
