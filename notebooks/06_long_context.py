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
from memlib.learn.chapters.ch06 import FSDP, GPU, LONG, MODEL, N_GPU, SHORT, SRAM_ELEMENTS, term
from memlib.learn.kit import GB, G
from memlib import estimate_training, fits, get_gpu, get_model, step_time
from memlib.training.activations import korthikanti_layer_bytes
from memlib.hardware.fit import usable_bytes
from memlib.learn.playgrounds.long_context import LongContextPlayground
from memlib.parallel.plan import plan
from memlib.cost.timing import attention_flops_per_token, cp_kv_bytes, flops_per_token
from memlib.cost.conventions import (attention_hbm_accesses, attention_to_weights_flops, causal_flops_per_token,
                                     sequence_flops_ratio, windowed_attention_flops_per_token)
from memlib.training.context_parallel import causal_attention_pairs_per_rank
from memlib.learn.viz import breakdown_bars, sweep


def sig(x, digits=2):
    """x rounded to `digits` significant figures, for the spoken answer."""
    if x == 0:
        return "0"
    d = digits - 1 - math.floor(math.log10(abs(x)))
    return f"{round(x, d):,.{max(d, 0)}f}"


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
act_total = base_long.counts["layer_activation_bytes"] * m.num_layers  # all layers, one GPU, no lever (step 1)
v_cp8 = fits(cp8_sel, g)                        # memlib.fits: + CUDA context and allocator headroom
JUST_GIB = 5                                    # a margin under 5 GiB is "just"
fit_word, fit_zh = (("just fits", "刚好放得下") if v_cp8.margin_gib < JUST_GIB else ("fits", "放得下")) \
    if v_cp8.fits else ("does not fit", "放不下")
a_act, a_peak = sig(act_total / 2**30, 3), f"{base_long.peak_bytes / 2**40:.1f}"
a_cp8, a_cap = sig(cp8_sel.peak_bytes / 2**30), f"{usable_bytes(g) / 2**30:.0f}"
a_attn, a_seq = sig(attn_ratio_causal), sig(seq_ratio_causal)
# section 6's second chart also shows full recompute + chunked loss with the checkpoints offloaded to host
off = estimate_training(m, seq_len=LONG, dp=N_GPU, loss="chunked", recompute="full", activation_offload=True,
                        **FSDP)
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
# > **EN** At 128k the activations, not the weights, decide: Llama-3.1-8B saves about {eval}`a_act` GiB
# > of them, far more than one GPU holds. Levers: split the sequence over the GPUs (context
# > parallelism) with FSDP and selective recompute, {eval}`a_cp8` GiB of the {eval}`a_cap` an H100 offers: it
# > {eval}`fit_word`; chunked loss and full recompute cut more. Caveat: compute grows too: a causal
# > FlashAttention kernel spends
# > {eval}`a_attn`x the weights' FLOPs on attention, and a 128k sequence costs {eval}`a_seq`x an 8k one.
#
# > **中文** 128k 时决定显存的是激活，不是权重：Llama-3.1-8B 要存约 {eval}`a_act` GiB 激活，
# > 远超单卡。手段：上下文并行把序列切到多张卡，加 FSDP 和选择性重计算，每张 H100 约 {eval}`a_cp8` GiB
# > （共 {eval}`a_cap` GiB），{eval}`fit_zh`；分块 loss 和全量重计算还能再省。注意算力也涨：因果 FlashAttention 的注意力计算量是权重部分的
# > {eval}`a_attn` 倍，一条 128k 序列的计算量是 8k 的 {eval}`a_seq` 倍。
#
# The long answer follows: every figure above is derived in section 5.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. What the interviewer is probing · 考察意图
#
# - **Which term grows with s**: states do not; activations linearly; eager attention's s×s matrices
#   quadratically; attention FLOPs per token linearly (per sequence quadratically).
# - **What FlashAttention does, and does not**: no s×s matrix in memory; the same FLOPs.
# - **What each lever saves at the peak**, and the layout practitioners use (Llama 3, torchtitan,
#   Megatron): context parallelism, FSDP, recompute, and what it costs in time.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Words we use · 术语
#
# - **s, h, a, L, V**: sequence, hidden size, heads, layers, vocabulary (Llama-3.1-8B: 4,096, 32 heads of 128, 8 K/V heads with **GQA**, 32, 128,256).
# - **Activations**: what the forward saves for the backward. **Eager attention** keeps the (a, s, s) probabilities; **sdpa / FlashAttention**, a fused kernel, keeps Q, K, V, the output and a logsumexp per row.
# - **HBM / SRAM**: the GPU's memory / each multiprocessor's on-chip memory (H100: 228 KB). **Online softmax**: a softmax built block by block from a running max and sum.
# - **Chunked loss**: the head and cross-entropy computed chunk by chunk, so the b·s·V logits never exist whole.
# - **Recompute**: *full* keeps each layer's input and reruns it; *selective* here is torchtitan's op-level SAC (`selective_ac_option="op"`): it keeps every other matmul output and the attention output. Megatron's selective recompute (Korthikanti: rerun the attention core) saves nothing more under a flash kernel.
# - **FSDP**: parameters, gradients, optimizer states (16 B/param: the **model states**) sharded over GPUs. **Context parallelism (cp)**: the sequence split over GPUs, K and V passed around (ring attention).
# - **Sliding window**: each token attends to the last w tokens. **12·L·H·Q·T**: attention FLOPs per training token (PaLM), beside 6N. **MFU**: achieved / peak FLOP/s.
# - **GB / GiB**: 10⁹ / 2³⁰ bytes; prose in GB, verdicts against an H100 in GiB (what torch reports).

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
# memlib: states **{eval}`s1_states`** per GPU (pencil {eval}`s1_states_pencil`). Activations: **{eval}`s1_a8`**
# at 8k and **{eval}`s1_a128`** at 128k (pencil {eval}`s1_a_pencil`). The pencil left out that the peak is
# not their sum: at 8k it is {eval}`s1_peak8` ({eval}`s1_where8`). With the CUDA context it needs
# {eval}`s1_req8` of {eval}`s1_cap`: it **{eval}`s1_fit8`** without recompute. At 128k: **{eval}`s1_peak128`**.

# %% [markdown]
# ### Step 2 · Attention: FlashAttention keeps it linear
#
# ✏️ **Back of the envelope.** Standard attention writes the scores S = QKᵀ and the probabilities
# P = softmax(S) to HBM: at 32k, 32 heads x 32,768² ≈ 3.4e10 values per layer, x 5 bytes (Korthikanti's
# 5·a·s²·b: softmax output, dropout mask, dropout output) ≈ **170 GB per layer**. A fused kernel keeps Q, K,
# V, the output (20 KB per token), the MLP's four 14,336-wide tensors (115 KB) and the norms' fp32 inputs
# (33 KB): **~170-200 KB per token per layer** at any length.

# %% tags=["nbval-check-output"]
per_token = {att: estimate_training(m, seq_len=LONG, dp=N_GPU, attention=att, **FSDP).counts[
    "layer_activation_bytes"] // LONG for att in ("sdpa", "eager")}       # one layer, bytes per token
S32, kor = 32768, (m.hidden_size, m.num_heads)                            # one layer at 32k: 5·a·s²·b
scores32 = korthikanti_layer_bytes(S32, 1, *kor) - korthikanti_layer_bytes(S32, 1, *kor, recompute="selective")
lse32 = dict((k, n) for k, n, _ in estimate_training(m, seq_len=S32).layer.items)["sdpa.logsumexp"]
hbm_std, hbm_flash = attention_hbm_accesses(S32, m.head_dim, SRAM_ELEMENTS)   # Theorem 2, one head
print(f"128k, B/token/layer: sdpa {per_token['sdpa']:,}, eager {per_token['eager']:,}")
print(f"32k: s x s matrices {GB(scores32)}/layer; HBM accesses {hbm_std:.2e} vs flash {hbm_flash:.2e}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s2_sdpa, s2_eager = f"{per_token['sdpa'] / 1e3:,.0f} KB", f"{per_token['eager'] / 1e6:,.1f} MB"
s2_eager_layer, s2_scores = f"{GB(per_token['eager'] * LONG)}", f"{GB(scores32)}"
s2_lse, s2_hbm = f"{lse32 / 1e6:.1f} MB", f"{hbm_std / hbm_flash:.1f}"
s2_sram = f"{SRAM_ELEMENTS * 2 / 1e3:.0f} KB"

# %% [markdown]
# memlib: the s×s matrices of one layer at 32k: **{eval}`s2_scores`**. FlashAttention (Dao et al. 2022)
# never writes them: **tiling** (blocks of Q, K, V in SRAM, S computed there), an **online softmax** (per row
# a running max and sum; each new block rescales the partial output by exp(old max − new max): exact), and
# **recompute** (the forward saves the output and a row's logsumexp, {eval}`s2_lse` per layer at 32k; the
# backward rebuilds S and P from Q, K and it). HBM accesses (Theorem 2): Θ(s·d + s²) standard, Θ(s²·d²/M)
# flash for an SRAM of M elements, {eval}`s2_hbm`x fewer at d = 128, M = {eval}`s2_sram` (orders). Same FLOPs,
# more in the backward: it saves **memory and HBM traffic, not FLOPs**. A layer keeps **{eval}`s2_sdpa` per
# token** with sdpa, **{eval}`s2_eager`** with eager attention at 128k ({eval}`s2_eager_layer` per layer).

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
s3_chunked = f"{G(chunked_long.peak_bytes)}"
s3_where = f"{chunked_long.peak_moment.where}"

# %% [markdown]
# memlib: the logits and loss reach **{eval}`s3_vocab`** at the start of the backward (pencil
# {eval}`s3_pencil`). The chunked loss drops the peak by **{eval}`s3_drop`**, to {eval}`s3_chunked`, not by all
# of it: the peak moves to the {eval}`s3_where`, where every layer's activations are alive.

# %% [markdown]
# ### Step 4 · Recompute: what each mode saves at the peak
#
# ✏️ **Back of the envelope.** Full recompute keeps one tensor per layer, its input: 4,096 x 2 B = 8 KB
# per token per layer, x 32 layers x 131,072 = **34 GB**, plus one layer rebuilt in backward (26 GB).
# Selective keeps about a third of the 200 KB. Both cost FLOPs: full reruns the forward (+33%).

# %% tags=["nbval-check-output"]
rec = {rc: estimate_training(m, seq_len=LONG, dp=N_GPU, loss="chunked", recompute=rc, **FSDP)
       for rc in ("none", "selective", "full")}
ff = {rc: flops_per_token(m, LONG, rc) for rc in rec}   # memlib.cost.timing.flops_per_token: what recompute costs
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
# At the peak, torchtitan's op-level selective recompute saves **{eval}`s4_sel`** and full recompute **{eval}`s4_full`**
# (Megatron's selective recompute, the attention core only, saves nothing more under a flash kernel: it
# removes the s² probabilities a fused kernel never stores). Full recompute
# leaves {eval}`s4_left` per GPU, {eval}`s4_vs` an H100 (checkpoints {eval}`s4_ckpt` and one rebuilt
# layer, as the pencil said). Full recompute's extra FLOPs at 128k: {eval}`s4_ff_full`, the same third as
# at 8k because attention's FLOPs are rerun too; selective costs {eval}`s4_ff_sel`.

# %% [markdown]
# ### Step 5 · Context parallelism: split the sequence
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
pairs = {lb: causal_attention_pairs_per_rank(LONG, N_GPU, load_balance=lb) for lb in (False, True)}  # causal work
print("attention share per GPU, contiguous / zigzag:", *([f"{p / sum(v):.1%}" for p in v] for v in pairs.values()))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s6_peak, s6_x = f"{G(by_cp[8].peak_bytes)}", f"{by_cp[1].peak_bytes / by_cp[8].peak_bytes:.1f}"
s6_states, s6_layer = f"{G(by_cp[8].model_state_bytes)}", f"{cp_kv_bytes(by_cp[8]) / 1e9:.2f} GB"
s6_step, s6_link = f"{t_cp8.cp_comm_bytes / 1e9:.0f} GB", f"{t_cp8.cp_comm_s:.2f} s"
s6_exposed, s6_buf = f"{t_cp8.cp_exposed_s * 1e3:.0f} ms", f"{GB(term(by_cp[8], 'ring_kv_buffer_bytes'))}"

# %% [markdown]
# memlib: at cp = 8 the peak is **{eval}`s6_peak`**, {eval}`s6_x`x less than at cp = 1; the states
# ({eval}`s6_states`) stay, FSDP shards them over dp x cp = 8 either way. The ring sends **{eval}`s6_layer` per
# layer**, {eval}`s6_step` per GPU per step, {eval}`s6_link` on NVLink, {eval}`s6_exposed` of it not hidden behind
# attention. The pencil left out the K/V buffers ({eval}`s6_buf` per layer) and that cp alone is not enough.

# %% [markdown]
# **Load balance.** Under a causal mask a token attends only to the tokens before it, so cutting the sequence
# into 8 contiguous pieces gives the last GPU far more attention work than the first, and every layer waits for
# it. torch's context parallelism (and Megatron's) cuts the sequence into 2·cp chunks and gives rank i chunks i
# and 2·cp − 1 − i, one early and one late ("zigzag"): query-key pairs per GPU at 128k, cp = 8
# (`causal_attention_pairs_per_rank`, computed with step 5):

# %% jupyter={"source_hidden": true} tags=["remove-input"]
lb_first, lb_last = f"{pairs[False][0] / sum(pairs[False]):.1%}", f"{pairs[False][-1] / sum(pairs[False]):.1%}"
lb_slow = f"{max(pairs[False]) / (sum(pairs[False]) / N_GPU):.2f}"
lb_even, lb_slow_z = f"{pairs[True][0] / sum(pairs[True]):.1%}", f"{max(pairs[True]) / (sum(pairs[True]) / N_GPU):.2f}"
lb_chunks, lb_last_chunks = f"{0} and {1}", f"{2 * N_GPU - 2} and {2 * N_GPU - 1}"
lb_z0, lb_z7 = f"0 and {2 * N_GPU - 1}", f"{N_GPU - 1} and {N_GPU}"

# %% [markdown]
# | split | GPU 0 holds chunks | its share | last GPU holds chunks | its share | slowest / mean |
# |---|---|---|---|---|---|
# | contiguous | {eval}`lb_chunks` | {eval}`lb_first` | {eval}`lb_last_chunks` | {eval}`lb_last` | {eval}`lb_slow`× |
# | zigzag (2·cp chunks) | {eval}`lb_z0` | {eval}`lb_even` | {eval}`lb_z7` | {eval}`lb_even` | {eval}`lb_slow_z`× |
#
# Without the split the step's attention takes {eval}`lb_slow`× as long as with it; with it every GPU does
# one eighth. It is also why the sequence length must divide by 2·cp.

# %% [markdown]
# ### Step 6 · How a practitioner trains at 128k
#
# ✏️ **Back of the envelope.** Combine: cp = 8 divides the 840 GB of activations to 105 GB, selective
# recompute keeps about a third (35 GB), the logits and loss 29 GB, states 16 GB: about **80 GB**,
# borderline on an 80 GB H100. With a chunked loss and full recompute: 16 + 4 + 3 ≈ **25 GB**.

# %% tags=["nbval-check-output"]
r8 = plan(m, g, N_GPU, seq_len=LONG, grad_accum=1, cps=(1, 2, 4, 8),
          recomputes=("selective", "full"))              # memlib.parallel.plan.plan: every layout on 8 H100s
best = r8.best
v_sel, v_min = fits(cp8_sel, g), fits(cp8_min, g)
print(f"{len(r8.feasible)} of {len(r8.feasible) + len(r8.infeasible)} layouts fit; "
      f"best: cp={best.settings['cp']}, recompute {best.settings['recompute']}")
print(f"cp8 + selective: {G(cp8_sel.peak_bytes)} ({v_sel.margin_gib:+.1f} GiB); "
      f"+ chunked + full: {G(cp8_min.peak_bytes)} ({v_min.margin_gib:+.1f} GiB)")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s7_n = f"{len(r8.feasible)}"
s7_best = f"{'cp = 8 with FSDP and selective recompute' if (best.settings['cp'], best.settings['recompute']) == (8, 'selective') else best.describe()}"
s7_sel, s7_fit = f"{G(cp8_sel.peak_bytes)}", f"{'fits' if v_sel.fits else 'does not fit'}"
s7_margin, s7_min = f"{v_sel.margin_gib:+.1f} GiB", f"{G(cp8_min.peak_bytes)}"
s7_pencil = f"{cp8_min.peak_bytes / 25e9 - 1:+.0%}"

# %% [markdown]
# memlib's search finds **{eval}`s7_n`** layouts that fit. The fastest is {eval}`s7_best`:
# **{eval}`s7_sel`**, it **{eval}`s7_fit`** ({eval}`s7_margin`, "borderline"). A chunked loss and full
# recompute bring it to **{eval}`s7_min`** (pencil {eval}`s7_pencil`), at a third more FLOPs: the torchtitan
# and Megatron long-context recipe; a 70B adds tensor parallelism (deep dive).

# %% [markdown]
# ### Step 7 · Time: attention FLOPs grow with s
#
# ✏️ **Back of the envelope.** Per token, the weights cost 6N = 6 x 8e9 = 48 GFLOPs; attention
# 12·L·H·Q·T = 12 x 32 x 4,096 x T: 13 GFLOPs at 8k (a quarter of 6N), 206 GFLOPs at 128k (**4x 6N**).
# A 128k sequence therefore costs about 16 x (48 + 206) / (48 + 13) ≈ 66x an 8k one, not 16x.

# %% tags=["nbval-check-output"]
fpt = {s: flops_per_token(m, s) for s in (SHORT, LONG)}      # memlib.cost.timing.flops_per_token (PaLM App. B)
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
s8_hfu, s8_m8, s8_m128 = f"{t_short.hfu:.0%}", f"{t_short.mfu:.0%}", f"{t_long.mfu:.0%}"

# %% [markdown]
# memlib: {eval}`s8_f8` GFLOPs per token at 8k, **{eval}`s8_f128`** at 128k ({eval}`s8_attn_share` attention):
# a 128k sequence costs **{eval}`s8_seq_palm`x** an 8k one by PaLM's count. The pencil left out the causal
# mask: a FlashAttention kernel skips the masked half, so attention is {eval}`s8_causal`x the weights' 6N (not
# {eval}`s8_palm`x) and the sequence **{eval}`s8_seq_causal`x**. With the kernels at {eval}`s8_hfu` of {eval}`s8_tflops`
# TFLOP/s on every FLOP, the selective recompute included (HFU): **{eval}`s8_t8` tokens/s per GPU** at 8k,
# **{eval}`s8_t128`** at 128k with cp = 8 (`memlib.step_time`; {eval}`s8_m8` and {eval}`s8_m128` MFU, which
# counts no recompute).

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s8_gain = f"{flops_per_token(m, LONG, 'selective') / causal_flops_per_token(m, LONG, 'selective'):.2f}"
s8_causal_tps = f"{sig(t_long.tokens_per_s_per_gpu * flops_per_token(m, LONG, 'selective') / causal_flops_per_token(m, LONG, 'selective'))}"
s8_causal_f = f"{causal_flops_per_token(m, LONG) / 1e9:,.0f}"

# %% [markdown]
# That 128k speed counts FLOPs as PaLM does, non-causal attention included. A causal kernel computes
# {eval}`s8_causal_f` GFLOPs per token, not {eval}`s8_f128`: at the same hardware FLOP/s it makes about
# {eval}`s8_gain`× the tokens, **≈{eval}`s8_causal_tps` tokens/s per GPU** (`causal_flops_per_token`). Quote a
# long-context speed with its FLOP count.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Charts · 图
#
# **Takeaway: eager attention stops fitting at a few thousand tokens, sdpa alone at 8k, recompute with a
# chunked loss near 128k; context parallelism over 8 GPUs goes far beyond.** Peak per GPU against the
# sequence length (8 H100s, FSDP; `memlib.learn.viz.sweep`, lines on a log scale, the H100 dashed).

# %% jupyter={"source_hidden": true} tags=["hide-input"]
fig, ax = plt.subplots(figsize=(7.5, 3.2))
sweep(xs, series, gpu=GPU, xlabel="sequence length (tokens)", logx=True, ax=ax,
      title=f"{MODEL} on {N_GPU} x H100, FSDP, bf16: peak per GPU")
ax.set_yscale("log")
plt.show()

# %% [markdown]
# **Takeaway: the chunked loss removes the logits, recompute most of the activations, context
# parallelism a factor of 8 of both; the model states never move.** What one GPU holds at the peak at
# 128k for the layouts near the line (`memlib.learn.viz.breakdown_bars`, linear bars).

# %% jupyter={"source_hidden": true} tags=["hide-input"]
bars = {"full recompute\n+ chunked": rec["full"], "+ activation\noffload": off, "cp 8\nonly": by_cp[8],
        "cp 8 +\nselective": cp8_sel, "cp 8 + full\n+ chunked": cp8_min}
fig, ax = plt.subplots(figsize=(8, 3.2))
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
# Speed, not memory (the footprint stays O(s), the result exact). **FA-2** (Dao 2023): fewer non-matmul
# FLOPs (one rescale at the end), parallelism over the sequence too, and work split between warps without
# shared-memory exchanges: 50-73% of an A100's peak. **FA-3** (Shah et al. 2024), for Hopper: asynchrony
# (TMA, warp specialization), softmax interleaved with the next block's matmuls, FP8: up to 740 TFLOP/s
# in FP16 on an H100 (75%), about 1.2 PFLOP/s in FP8.

# %% [markdown]
# More follow-ups (what else removes attention's O(s²), offload, the logits, SP vs CP, serving, all-gather vs ring, Ulysses, the 70B, HBM
# accesses at every length) are on the [deep-dive page](06_long_context_deep_dive.ipynb).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9. Pitfalls · 避坑
#
# - **Eager attention at long context**: {eval}`s2_eager_layer` for one layer at 128k. sdpa cannot do Gemma 2's
#   soft-capping or gpt-oss's attention sinks; FlashAttention-2 (softcap since 2.6), flex attention and a sinks
#   kernel can: check `attn_implementation`, since a silent fallback to eager is the s² matrix.
# - **"FlashAttention cuts FLOPs"**: it cuts memory and HBM traffic; the backward recomputes S and P.
# - **Forgetting the logits** ({eval}`s3_vocab` at 128k): use a chunked or vocabulary-parallel loss.
# - **Expecting CP to shard the model**: it splits tokens; FSDP over dp x cp shards the states.
# - **Reading MFU at long context**: PaLM's count has no causal discount, so MFU at 128k looks inflated.

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
