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
# # 06 · deep dive · 深入：128k 长上下文训练
#
# The material behind [notebook 06](06_long_context.ipynb)'s answer, for a second reading: more
# follow-up questions, FlashAttention's memory and HBM accesses at every length, the fact-check of
# the claims that circulate about long-context training, and the ledger tables.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
from IPython.display import Markdown, display

import memlib
from memlib import estimate_inference, estimate_training, fits, get_gpu, get_model, step_time
from memlib.activations import korthikanti_layer_bytes
from memlib.explain import markdown_table
from memlib.plan import Plan, max_seq_len, plan
from memlib.timing import cp_kv_bytes, flops_per_token
from memlib.cost.conventions import (attention_hbm_accesses, mean_attended_keys, sequence_flops_ratio,
                                     ulysses_all_to_all_bytes, windowed_attention_flops_per_token)

MODEL, GPU, N_GPU = "llama-3.1-8b", "h100-80gb", 8   # one 8 x H100 node
SHORT, LONG = 8192, 131072                          # Llama 3's pre-training length and its long-context stage
SEQS = (8192, 32768, 131072)
FSDP = dict(zero_stage="FULL_SHARD")                # FSDP2 with bf16 compute (torchtitan's default)
SRAM_ELEMENTS = 100_000 // 2   # "M around 100KB" (Dao et al. 2022, Sec. 3.2), in bf16 elements


def GB(n_bytes):
    """GB (1e9), labelled: the unit of the prose."""
    return f"{n_bytes / 1e9:,.1f} GB"


def G(n_bytes):
    """GiB, labelled: what torch reports, for verdicts against a GPU."""
    return f"{n_bytes / 2**30:,.1f} GiB"


def term(e, name):
    """The bytes of one named term of an estimate (est.terms)."""
    return next(t.nbytes for t in e.terms if t.name == name)


# The figures of the core page (06_long_context), computed the same way.
m, g = get_model(MODEL), get_gpu(GPU)
base_long = estimate_training(m, seq_len=LONG, dp=N_GPU, **FSDP)
cp8_sel = estimate_training(m, seq_len=LONG, cp=N_GPU, recompute="selective", **FSDP)
per_token = {(s, att): estimate_training(m, seq_len=s, dp=N_GPU, attention=att, **FSDP).counts[
    "layer_activation_bytes"] // s for s in SEQS for att in ("sdpa", "eager")}   # one layer, bytes per token
vocab_bytes = max(mo.parts.get("logits_and_loss", 0) for mo in base_long.moments)
rec = {rc: estimate_training(m, seq_len=LONG, dp=N_GPU, loss="chunked", recompute=rc, **FSDP)
       for rc in ("none", "selective", "full")}
ff = {rc: flops_per_token(m, LONG, rc) for rc in rec}
by_cp = {c: estimate_training(m, seq_len=LONG, dp=N_GPU // c, cp=c, **FSDP) for c in (1, 2, 4, 8)}
t_cp8 = step_time(by_cp[8], g)
r8 = plan(m, g, N_GPU, seq_len=LONG, grad_accum=1, cps=(1, 2, 4, 8), recomputes=("selective", "full"))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## More follow-up questions · 更多追问
#
# ### Why do the logits weigh so much at 128k? · 为什么 128k 时 logits 这么大？

# %% tags=["nbval-check-output"]
per_tok_vocab = vocab_bytes // LONG
per_tok_layers = per_token[LONG, "sdpa"] * m.num_layers
print(f"vocabulary terms {per_tok_vocab:,} B/token vs all layers {per_tok_layers:,} B/token; "
      f"V/h = {m.vocab_size / m.hidden_size:.1f}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"Because the vocabulary is {m.vocab_size / m.hidden_size:.0f}x the hidden size and the loss works in fp32: "
    f"at the start of the backward the vocabulary terms are **{per_tok_vocab / 1e6:.1f} MB per token**, against "
    f"{per_tok_layers / 1e6:.1f} MB for all {m.num_layers} layers' saved activations. Both grow linearly with s, "
    f"so the ratio is the same at 8k; what changes at 128k is that recompute removes the layers' part and not "
    f"the logits, which then decide the peak. A chunked loss (or Megatron's vocabulary-parallel loss under "
    f"tensor parallelism) is the fix."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Does Megatron's fused cross entropy save memory? · Megatron 的融合交叉熵省显存吗？
#
# ✏️ **Back of the envelope.** Megatron's vocabulary-parallel loss keeps the 16-bit logits and one fp32 copy,
# 6 bytes per logit. Take Llama-3.1-8B at 8k tokens on one node: tp = 2 with sequence parallelism, dp = 4. Each
# GPU holds half the vocabulary, so the loss holds 8,192 × 64,128 × 6 B ≈ **3.2 GB**.
# The name `--cross-entropy-loss-fusion` suggests it shrinks this. Does it?

# %% tags=["nbval-check-output"]
ce = {f: estimate_training(m, recipe="megatron", seq_len=SHORT, tp=2, dp=N_GPU // 2, sequence_parallel=True,
                           recompute="selective", megatron_ce_fusion=f) for f in (None, "native", "te")}
for f, e in ce.items():
    print(f"{f or 'unfused'}: loss {G(term(e, 'vocab_parallel_cross_entropy_bytes'))}, its backward "
          f"{G(term(e, 'vocab_parallel_cross_entropy_backward_bytes'))}; peak {G(e.peak_bytes)}")

# %%
ce_unfused, ce_native, ce_te = (GB(term(ce[f], "vocab_parallel_cross_entropy_backward_bytes"))
                                for f in (None, "native", "te"))
ce_peak_unfused, ce_peak_native, ce_peak_te = (G(ce[f].peak_bytes) for f in (None, "native", "te"))

# %% [markdown]
# memlib: unfused, the loss's backward holds **{eval}`ce_unfused`**. With the fusion's default
# implementation (`native`) it holds **{eval}`ce_native`**, so the peak rises from {eval}`ce_peak_unfused`
# to **{eval}`ce_peak_native`**.
#
# The fused functions are compiled by `torch.compile`. Its compiled code turns the in-place update at the
# target tokens into a new fp32 copy of the softmax, which sits beside the saved softmax and the 16-bit
# gradient: 10 bytes per logit instead of 6. Megatron-LM's own CI shows the same: its tp 2 × pp 2 test with
# the fusion logs that extra copy (`docs/validation.md`, "The fused loss").
#
# Only `--cross-entropy-fusion-impl te` saves memory: Transformer Engine's kernel reads the 16-bit logits and
# writes the gradient into them, 2 bytes per logit ({eval}`ce_te`, peak {eval}`ce_peak_te`). The fusion buys
# speed; check which implementation you run before counting on memory.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Activation offload: what stays on the GPU? · 激活卸载
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

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### FlashAttention's memory and HBM accesses at every length · FlashAttention 的显存与访存

# %% tags=["nbval-check-output"]
fa = {}
for s in SEQS:
    s2 = (korthikanti_layer_bytes(s, 1, m.hidden_size, m.num_heads)      # 5·a·s²·b, one layer
          - korthikanti_layer_bytes(s, 1, m.hidden_size, m.num_heads, recompute="selective"))
    std, flash = attention_hbm_accesses(s, m.head_dim, SRAM_ELEMENTS)     # Dao et al. 2022, Theorem 2
    fa[s] = (s2, std, flash)
    print(f"{s:>7,}: s x s matrices {GB(s2)}/layer; HBM accesses/head {std:.2e} vs {flash:.2e}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
rows = [[f"{s:,}", GB(s2), f"{per_token[s, 'eager'] / 1e6:,.2f} MB", f"{per_token[s, 'sdpa'] / 1e3:,.0f} KB",
         f"{std:.2e}", f"{flash:.2e}"] for s, (s2, std, flash) in fa.items()]
display(Markdown(markdown_table(rows, ["tokens", "5·a·s²·b, one layer", "eager, per token", "sdpa, per token",
                                       "HBM, standard", "HBM, flash"])))
display(Markdown(
    "The s² memory grows 16x from 8k to 32k and again to 128k; FlashAttention's saved tensors per token do not "
    "move. The HBM accesses of Theorem 2 (one head's forward, orders without constants) fall by about "
    f"M/d² = {SRAM_ELEMENTS / m.head_dim ** 2:.1f} at every length with a 100 KB SRAM: the win in time is real but "
    "bounded by the SRAM, and both counts are still quadratic in s. Measured, the paper reports a 7.6x faster "
    "attention on GPT-2 (Fig. 1): standard attention also makes several passes over the s×s matrix (mask, "
    "softmax, dropout), each a kernel of its own, which the fused kernel does in one."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### How does a sliding window scale with the length? · 滑动窗口随长度怎么变？

# %% tags=["nbval-check-output"]
mis = get_model("mistral-7b")
mis_full = mis.with_(sliding_window=0, layer_types=("full_attention",) * mis.num_layers)
lens = (4096, 16384, 32768, LONG)
keys = {s: (mean_attended_keys(s, mis.sliding_window), mean_attended_keys(s)) for s in lens}
kv = {s: [estimate_inference(x, batch=1, context_len=s).breakdown["kv_cache"] for x in (mis, mis_full)]
      for s in lens}
for s in lens:
    print(f"{s:>7,}: keys per query {keys[s][0]:,.0f} vs {keys[s][1]:,.0f}; "
          f"KV {GB(kv[s][0])} vs {GB(kv[s][1])}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
rows = [[f"{s:,}", f"{keys[s][0]:,.0f}", f"{keys[s][1]:,.0f}",
         f"{windowed_attention_flops_per_token(mis, s, mis.sliding_window) / 1e9:.1f}",
         f"{windowed_attention_flops_per_token(mis, s) / 1e9:.1f}", GB(kv[s][0]), GB(kv[s][1])] for s in lens]
display(Markdown(markdown_table(rows, ["tokens", "keys/query, w = 4,096", "keys/query, full",
                                       "attn GFLOPs/token, window", "full", "KV cache, window", "full"])))
display(Markdown(
    f"`memlib.cost.conventions.mean_attended_keys`: a causal query sees T/2 keys on average, a windowed one "
    f"w - w²/(2T), which tends to w = {mis.sliding_window:,}; attention per token then stops growing, and per "
    f"sequence grows as T·w instead of T². The KV cache keeps {mis.sliding_window:,} tokens per layer "
    f"(Mistral's rolling buffer). What the window gives up: a token reaches back {mis.num_layers} x "
    f"{mis.sliding_window:,} = {mis.num_layers * mis.sliding_window:,} tokens only through the stack of layers."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Megatron sequence parallelism or context parallelism? · 序列并行和上下文并行有什么区别？

# %% tags=["nbval-check-output"]
sp = estimate_training(m, seq_len=LONG, tp=N_GPU, sequence_parallel=True, recompute="selective")
t_sp, t_cp = step_time(sp, g), step_time(cp8_sel, g)
print(f"tp8+SP: peak {G(sp.peak_bytes)}, TP traffic {t_sp.tp_comm_bytes / 1e9:.0f} GB/step")
print(f"cp8: peak {G(cp8_sel.peak_bytes)}, ring traffic {t_cp.cp_comm_bytes / 1e9:.0f} GB/step")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"Megatron's sequence parallelism lives inside tensor parallelism: TP splits the matmuls' activations by "
    f"heads and columns and SP splits what TP replicates (norms, dropouts, the residual) along the sequence. "
    f"Context parallelism splits *every* activation along the sequence and leaves the weights whole (FSDP "
    f"shards them). At 128k on 8 H100s with selective recompute: TP = 8 with SP peaks at {G(sp.peak_bytes)} and "
    f"all-reduces activations, **{t_sp.tp_comm_bytes / 1e9:,.0f} GB per GPU per step**, not overlapped; "
    f"CP = 8 peaks at {G(cp8_sel.peak_bytes)} and moves only K and V, **{t_cp.cp_comm_bytes / 1e9:,.0f} GB**, "
    f"hidden behind attention. Llama 3 used both: TP inside a node, CP on top."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### And serving at 128k? · 128k 推理要多少 KV cache？

# %% tags=["nbval-check-output"]
inf = estimate_inference(m, batch=1, context_len=LONG)          # memlib.estimate_inference
mb = memlib.max_batch(m, g, context_len=LONG)
print(f"KV cache per token {inf.kv_bytes_per_token:,} B; one 128k sequence {GB(inf.breakdown['kv_cache'])}; "
      f"max batch on one H100 {mb.value}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"Serving keeps K and V of every token and layer: 2 x {m.num_layers} layers x {m.num_kv_heads} KV heads x "
    f"{m.head_dim} x 2 B = **{inf.kv_bytes_per_token / 1e3:,.0f} KB per token**, "
    f"**{GB(inf.breakdown['kv_cache'])}** for one 128k sequence; one H100 holds the bf16 weights and "
    f"**{mb.value}** such sequences (`memlib.max_batch`). Training keeps "
    f"{per_token[LONG, 'sdpa'] * m.num_layers / 1e3:,.0f} KB per token, "
    f"{per_token[LONG, 'sdpa'] * m.num_layers / inf.kv_bytes_per_token:.0f}x more, because the backward "
    f"needs far more than K and V."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### All-gather or ring? · K/V 用 all-gather 还是环形传递？

# %% tags=["nbval-check-output"]
a2a = estimate_training(m, seq_len=LONG, cp=N_GPU, recompute="selective", cp_rotate="alltoall", **FSDP)
ring_term = {e.setup.cp_rotate: term(e, "ring_kv_buffer_bytes") for e in (cp8_sel, a2a)}
print(f"K/V buffers in flight: allgather {GB(ring_term['allgather'])}, alltoall {GB(ring_term['alltoall'])}; "
      f"peaks {G(cp8_sel.peak_bytes)} / {G(a2a.peak_bytes)}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"torch's `context_parallel` (and torchtitan, whose default is `allgather`) gathers every GPU's K/V of a layer "
    f"once and computes block by block: **{GB(ring_term['allgather'])}** of K/V in flight per layer at 128k over "
    f"8 GPUs. The ring (`alltoall`, and Megatron's P2P ring) holds about three blocks, "
    f"**{GB(ring_term['alltoall'])}**, and overlaps each transfer with one block of attention. Same bytes on the "
    f"wire; the all-gather is hidden behind only the first block. With GQA's 8 K/V heads both are small; "
    f"at cp = 16-32 or with multi-head K/V the ring's memory advantage grows."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Why does each GPU hold chunks i and 2·cp − 1 − i? · 为什么负载均衡要首尾配对？
#
# Under a causal mask a query attends only to the keys before it, so the last chunk of a sequence does far more
# work than the first. Split into 2·cp chunks and handed out in order, the last GPU would compute most of the
# attention and every other GPU would wait for it. Pairing an early chunk with a late one (rank i holds chunks i
# and 2·cp − 1 − i, as torch's load balancer and Megatron-Core do) gives every GPU the same work. The grid is the
# query chunk against the key chunk, each causal cell coloured by the GPU that computes it
# (`memlib.learn.mechanisms.context_parallel_balance`, the pairs counted exactly).

# %%
import matplotlib.pyplot as plt

from memlib.learn import mechanisms as mech

mech.draw_context_parallel_balance([mech.context_parallel_balance(LONG, N_GPU, zigzag=False),
                                    mech.context_parallel_balance(LONG, N_GPU)])
plt.show()

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Ulysses, ring or all-gather? And why extend the context in stages?

# %% tags=["nbval-check-output"]
# memlib.cost.conventions.ulysses_all_to_all_bytes (DeepSpeed-Ulysses) against memlib.timing.cp_kv_bytes (ring /
# all-gather) for one layer at 128k over 8 GPUs; sequence_flops_ratio for Llama 3's stages (8k -> 128k)
uly = ulysses_all_to_all_bytes(m, LONG, N_GPU)
ring = cp_kv_bytes(cp8_sel)
stages = {t: sequence_flops_ratio(m, t, SHORT) / (t / SHORT) for t in (16384, 32768, 65536, LONG)}
print(f"per layer at 128k, cp 8: Ulysses {GB(uly)}, ring/all-gather {GB(ring)}; Ulysses cp <= {m.num_kv_heads}")
print("FLOPs per token vs 8k (causal):", {t: round(v, 2) for t, v in stages.items()})

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"Three ways to split attention over cp GPUs. **Ulysses** (DeepSpeed) all-to-alls q, k, v from sequence "
    f"shards to head shards, runs ordinary attention on whole sequences, and all-to-alls the output back: "
    f"{GB(uly)} per layer at 128k on 8 GPUs, falling as 1/cp, but cp cannot exceed the KV heads "
    f"({m.num_kv_heads} for Llama-3.1-8B) unless K/V heads are replicated. The **ring** passes K/V blocks around "
    f"(Ring Attention, Megatron's CP) and the **all-gather** CP of Llama 3 and torch gathers a layer's K/V at "
    f"once: the same {GB(ring)} per layer, no head limit. torch's `cp_rotate=\"alltoall\"` is its ring "
    f"rotation, not Ulysses. Context is extended in **stages** because each token costs more at length: with a "
    f"causal kernel a token at 32k costs {stages[32768]:.2f}x, at 128k {stages[LONG]:.2f}x a token at 8k, so most "
    f"tokens are trained short and the length grows at the end (Llama 3: six stages from 8k to 128k, about 800B "
    f"tokens, Sec. 3.4.2)."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Llama-3.1-70B at 128k · 70B 怎么训 128k？
#
# ✏️ **Back of the envelope.** 70e9 x 16 B = 1.1 TB of states; over 64 GPUs with FSDP, 18 GB each.
# Activations: about 2.5x the 8B's per token (h = 8,192, 80 layers); split 64 ways by cp x tp,
# selective recompute: tens of GB per GPU.

# %% tags=["nbval-check-output"]
r70 = plan("llama-3.1-70b", g, 64, seq_len=LONG, grad_accum=1, cps=(8, 16), recomputes=("selective", "full"))
tp8cp8 = next(p for p in r70.feasible if p.settings["tp"] == 8 and p.settings["cp"] == 8)
print(f"70B on 64 H100: {len(r70.feasible)} fit; best {G(r70.best.estimate.peak_bytes)}:")
print(f"  {r70.best.describe()}")
print(f"tp8 x cp8: {G(tp8cp8.estimate.peak_bytes)}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"memlib on 64 H100s (8 nodes): {len(r70.feasible)} layouts fit; the fastest is **{r70.best.describe()}** at "
    f"{G(r70.best.estimate.peak_bytes)} per GPU. Tensor parallelism over the node and context parallelism across "
    f"nodes ({tp8cp8.describe()}) peaks at **{G(tp8cp8.estimate.peak_bytes)}**. The model states per GPU "
    f"({G(tp8cp8.estimate.model_state_bytes)}) are now the large part the pencil got right; what it left out is "
    f"that tp also splits the activations, and that cp across nodes sends K/V over InfiniBand, not NVLink."))

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
    kv_w = [estimate_inference(x, batch=1, context_len=s).breakdown["kv_cache"] for x in (mis, mis_full)]
    fl = [windowed_attention_flops_per_token(mis, s, w) for w in (mis.sliding_window, 0)]
    win[s] = kv_w + fl                          # memlib.cost.conventions: 12·L·H·Q x keys attended
    print(f"{s:>7,}: KV window {GB(kv_w[0])}, full {GB(kv_w[1])}; attention GFLOPs/token "
          f"{fl[0] / 1e9:.1f} vs {fl[1] / 1e9:.1f}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
w_kv, w_kv32, w_kv128 = f"{GB(win[32768][0])}", f"{GB(win[32768][1])}", f"{GB(win[LONG][1])}"
w_fl32, w_fl128 = f"{win[32768][3] / win[32768][2]:.1f}", f"{win[LONG][3] / win[LONG][2]:.0f}"
w_n6 = f"{6 * mis.num_params / 1e9:.0f}"

# %% [markdown]
# memlib: the window's KV cache is **{eval}`w_kv`** at any length, against {eval}`w_kv32` at 32k and
# {eval}`w_kv128` at 128k with full attention. Attention FLOPs per token are {eval}`w_fl32`x fewer at 32k,
# {eval}`w_fl128`x at 128k (the weights' 6N: {eval}`w_n6` GFLOPs): both grow as s·w, not s². The remedies:
#
# - **FlashAttention**: exact; removes the s² memory and HBM traffic, not the s² FLOPs.
# - **Sliding window** (Longformer, Mistral; Gemma, gpt-oss mix it with full layers): O(s·w); reach L·w.
# - **Sparse patterns** (Longformer's global tokens; BigBird: window + global + random): O(s) keys.
# - **Linear attention, state-space models** (Mamba): a fixed-size state, O(1) memory per decoded token.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Fact-check · 纠错
#
# Claims that circulate about long-context training, each quoted from its source, memlib's figure, and a
# verdict with its word, so it reads without an emoji font (✅ right · ⚠️ partly · ❌ wrong).

# %% tags=["nbval-check-output"]
attn_half = {}
for s in (2048, 4096):
    for att in ("sdpa", "eager"):
        led = estimate_training(m, seq_len=s, attention=att).layer   # the attention half of one layer's ledger
        attn_half[s, att] = sum(n for _, n, _ in led.items[:led.split])
kor = korthikanti_layer_bytes(LONG, 1, m.hidden_size, m.num_heads)      # Korthikanti et al. eq. (2), 16-bit
kor_lin = korthikanti_layer_bytes(LONG, 1, m.hidden_size, m.num_heads, recompute="selective")
full_none = flops_per_token(m, LONG, "full") / flops_per_token(m, LONG)
act_ratio = by_cp[1].breakdown["activations"] / by_cp[8].breakdown["activations"]


def plan_for(c):
    """torchtitan's CP benchmark layout as a memlib Plan: FSDP over dp 8 x cp c, full recompute."""
    settings = dict(seq_len=SHORT, recompute="full", dp=8, cp=c, **FSDP)
    e = estimate_training(m, **settings)
    return Plan(settings, e, fits(e, g))


longest = {c: max_seq_len(plan_for(c), g) for c in (1, 2, 4, 8)}       # memlib.plan.max_seq_len
l405 = estimate_training("llama-3.1-405b", seq_len=LONG, tp=8, cp=16, pp=16, dp=8, sequence_parallel=True,
                         grad_accum=16, recompute="full")
v405 = fits(l405, g)
q1m = estimate_training("qwen3-8b", seq_len=1_048_576, cp=8, recompute="full", activation_offload=True,
                        loss="chunked", **FSDP)
t_q1m = step_time(q1m, g)
slow = step_time(estimate_training(m, seq_len=SHORT, cp=8, cp_rotate="alltoall", **FSDP), g, gpus_per_node=1)
mis_span = mis.num_layers * mis.sliding_window                          # receptive field L·w
mis_cut = kv[32768][1] / kv[32768][0]                                   # full / rolling-buffer KV at 32k
print(f"attention half 2k: eager/sdpa {attn_half[2048, 'eager'] / attn_half[2048, 'sdpa']:.1f}x, 4k "
      f"{attn_half[4096, 'eager'] / attn_half[4096, 'sdpa']:.1f}x; Korthikanti 128k {GB(kor)}")
print(f"s^2 share {1 - kor_lin / kor:.1%}; full/none FLOPs {full_none:.3f}; activations cp1/cp8 {act_ratio:.2f}")
print(f"longest sequence, dp=8 + cp: {longest}")
print(f"405B TP8 CP16 PP16 DP8: {G(l405.peak_bytes)} fits={v405.fits}; Qwen3-8B 1M: {GB(q1m.peak_bytes)}, "
      f"step {t_q1m.step_s:.0f} s")
print(f"8k across nodes: ring exposed {slow.cp_exposed_s:.3f} of {slow.cp_comm_s:.3f} s; "
      f"Mistral span {mis_span:,}, KV cut at 32k {mis_cut:.0f}x")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
OK, PART, BAD = "✅ right", "⚠️ partly", "❌ wrong"
facts = [
    ["\"Transformers are slow and memory-hungry on long sequences, since the time and memory complexity of "
     "self-attention are quadratic in sequence length.\"", "Dao et al. 2022, FlashAttention, abstract",
     f"eager {per_token[LONG, 'eager'] / 1e6:.1f} MB/token/layer at 128k vs sdpa {per_token[LONG, 'sdpa'] / 1e3:.0f} KB "
     "at any length", PART, "true of the standard (eager) implementation, which is the paper's point: the fused "
                            "kernel's memory is linear; its time stays quadratic"],
    ["\"standard attention has memory quadratic in sequence length, whereas FlashAttention has memory linear in "
     "sequence length. We see 10X memory savings at sequence length 2K, and 20X at 4K.\"",
     "Dao-AILab/flash-attention README @1f7ce2f, L513-515",
     f"attention block of a Llama-3.1-8B layer: eager/sdpa {attn_half[2048, 'eager'] / attn_half[2048, 'sdpa']:.0f}x "
     f"at 2k, {attn_half[4096, 'eager'] / attn_half[4096, 'sdpa']:.0f}x at 4k", PART,
     "linear vs quadratic holds and the ratio doubles with s; 10x and 20x are the attention op alone on the "
     "README's benchmark shapes, a whole attention block (norm, Q, K, V, output) saves less"],
    ["\"Standard attention (Algorithm 0) requires Θ(Nd + N²) HBM accesses, while FlashAttention (Algorithm 1) "
     "requires Θ(N²d²M⁻¹) HBM accesses.\"", "Dao et al. 2022, arXiv:2205.14135, Theorem 2",
     f"32k, d = 128, M = 100 KB: {fa[32768][1]:.2e} vs {fa[32768][2]:.2e} accesses per head", OK,
     "fewer accesses by about M/d², with the same FLOPs: FlashAttention saves memory and traffic, not FLOPs"],
    ["Activations per layer = sbh(34 + 5as/h)", "Korthikanti et al. 2022, eq. 1-2 (16-bit, with dropout)",
     f"{GB(kor)} per layer at 128k with Llama-3.1-8B's shapes; the 5as/h term is {1 - kor_lin / kor:.1%} of it",
     PART, "right for GPT layers with eager attention; a fused kernel removes the 5as²b term, which is what the "
           "paper's selective recompute also removes"],
    ["\"With sequence length of 128k, the memory requirement of the attention matrix is 128k * 128k * 2 bytes * "
     "num_heads = ~32 GB * num_heads\"", "Hugging Face Accelerate docs, Context Parallel guide",
     f"eager keeps {per_token[LONG, 'eager'] * LONG / (m.num_heads * 2**30):.0f} GiB per head per layer",
     PART, "the arithmetic (32 GiB) is one bf16 copy; transformers' eager softmax keeps an fp32 copy too: 6 bytes "
           "per score, 3x the claim"],
    ["\"At the last layer, using a window size of W = 4096, we have a theoretical attention span of approximately "
     "131K tokens.\"", "Jiang et al. 2023, Mistral 7B, Sec. 2",
     f"{mis.num_layers} layers x {mis.sliding_window:,} = {mis_span:,} tokens", OK,
     "the receptive field of stacked windows is L·w; information that far back arrives only indirectly"],
    ["\"On a sequence length of 32k tokens, this reduces the cache memory usage by 8x, without impacting the "
     "model quality.\"", "Jiang et al. 2023, Mistral 7B, Sec. 2 (rolling buffer cache)",
     f"KV cache at 32k: {GB(kv[32768][1])} full vs {GB(kv[32768][0])} windowed, {mis_cut:.0f}x", OK,
     "32k / 4k; the quality half of the claim is the paper's measurement, not memlib's"],
    ["\"Recomputing activations in backward can avoid OOM but also introduce significant overheads (~30% with full "
     "recompute).\"", "Megatron-Core docs, context_parallel.md",
     f"full recompute: {full_none:.2f}x the FLOPs per token at 128k", OK,
     "a second forward: (8N + 16·L·H·Q·T) / (6N + 12·L·H·Q·T) = 4/3 at any length"],
    ["\"The activation memory footprint per GPU is also CP times smaller\"", "Megatron-Core docs, context_parallel.md",
     f"activations at the peak, cp = 1 vs 8: {act_ratio:.1f}x", PART,
     "activations yes; the peak less so: model states do not shrink with cp, and ring attention adds buffers"],
    ["\"each GPU only stores the KV of a sequence chunk in forward and gathers KV again in backward\"",
     "Megatron-Core docs, context_parallel.md", "ring_backward_bytes: the K/V fetched again in backward",
     OK, "torch's ring backward re-fetches K/V the same way (_templated_ring_attention_backward)"],
    ["\"Our approach enables training and inference of sequences that are up to device count times longer than "
     "those achievable by prior memory-efficient Transformers\"", "Liu et al. 2023, Ring Attention, abstract",
     "longest sequence on dp 8 x cp c H100s, full recompute: " + ", ".join(f"cp {c}: {n:,}" for c, n in
                                                                          longest.items()),
     OK, f"8x the GPUs reach {longest[8] / longest[1]:.1f}x the length: the per-token terms divide by cp, and "
         "FSDP over dp x cp shrinks the model states too"],
    ["\"adding more GPUs on the CP dimension allows longer input seq_len and this growth is linearly scalable\"",
     "torchtitan PR #592, enable Context Parallel (FSDP 8 x CP 1/2/4/8, full AC, H100)",
     ", ".join(f"cp {c}: {n / 1024:,.0f}k" for c, n in longest.items()), OK,
     "linear (slightly better) in memlib too, with the same layout"],
    ["\"...overlapping the communication of key-value blocks with the computation of blockwise attention\"",
     "Liu et al. 2023, Ring Attention, abstract",
     f"128k, cp 8 on NVLink: {t_cp8.cp_exposed_s * 1e3:.0f} ms exposed of {t_cp8.cp_comm_s * 1e3:.0f} ms; 8k, cp 8 "
     f"with one GPU per node (InfiniBand): {slow.cp_exposed_s * 1e3:.0f} ms of {slow.cp_comm_s * 1e3:.0f} ms", OK,
     "hidden while a block's attention outlasts its transfer; Llama's 8 K/V heads keep the blocks small, so even "
     "1k-token blocks over InfiniBand hide most of it (the last dK/dV send is always exposed)"],
    ["Llama 3 405B at 128k: 16,384 GPUs, TP 8, CP 16, PP 16, DP 8, 16M tokens per batch, 380 TFLOPS per GPU",
     "Llama Team 2024, The Llama 3 Herd of Models, arXiv:2407.21783, Table 4",
     f"Llama-3.1-405B, TP 8 x CP 16 x PP 16 x DP 8, full recompute (Megatron layout): {G(l405.peak_bytes)} per GPU",
     OK if v405.fits else BAD, f"the published layout {'fits' if v405.fits else 'does not fit'} an H100 in memlib "
                               f"({v405.margin_gib:+.0f} GiB)"],
    ["\"Measured: Qwen3-8B at 1,048,576 tokens, 380 s/step, 56.2 GB per GPU (bf16, per_device_train_batch_size=1, "
     "loss_type=\"chunked_nll\")\"", "huggingface/trl v1.13.0 release notes (8 x H100, CP 8)",
     f"{GB(q1m.peak_bytes)} ({G(q1m.peak_bytes)}) with cp 8, FSDP, full recompute, offloaded checkpoints, chunked "
     f"loss; {t_q1m.step_s:.0f} s at 40% HFU (recompute counted)", PART,
     f"memory within {abs(q1m.peak_bytes / 56.2e9 - 1):.0%} (the statistic is not stated); time 2x, because PaLM's "
     f"count charges the masked half of a causal 1M-token sequence: the run reached about "
     f"{t_q1m.achieved_mfu * t_q1m.step_s / 380:.0%} MFU by that count"],
]
display(Markdown(markdown_table(facts, ["claim (as written)", "source", "memlib", "verdict", "why"])))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Ledger tables · 明细表
#
# ### Saved activations per token, sdpa against eager

# %% jupyter={"source_hidden": true} tags=["hide-input"]
rows = [[f"{s:,}", f"{per_token[s, 'sdpa'] / 1e3:,.0f} KB", f"{per_token[s, 'eager'] / 1e6:,.2f} MB",
         GB(per_token[s, "sdpa"] * s), GB(per_token[s, "eager"] * s),
         f"{per_token[s, 'eager'] / per_token[s, 'sdpa']:,.0f}x"] for s in SEQS]
display(Markdown(markdown_table(rows, ["tokens", "sdpa per token", "eager per token", "one layer, sdpa",
                                       "one layer, eager", "eager / sdpa"])))

# %% [markdown]
# ### Recompute at 128k (chunked loss, FSDP over 8)
#
# "selective" is torchtitan's op-level SAC (`selective_ac_option="op"`: every other matmul output kept, k, o and
# up rerun). Megatron's selective recompute (Korthikanti et al.: rerun the attention core) would save nothing
# more here: a flash kernel already stores no s² tensor.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
rows = [[rc, G(e.peak_bytes), e.peak_moment.where, G(e.breakdown["activations"]),
         f"{ff[rc] / ff['none'] - 1:+.0%}"] for rc, e in rec.items()]
display(Markdown(markdown_table(rows, ["recompute (chunked loss)", "peak per GPU", "peak moment",
                                       "activations at the peak", "FLOPs per token"])))

# %% [markdown]
# ### Context parallelism on 8 GPUs at 128k (dp = 8 / cp)

# %% jupyter={"source_hidden": true} tags=["hide-input"]
rows = [[c, f"{LONG // c:,}", G(e.peak_bytes), G(e.breakdown["activations"]), G(e.breakdown["logits_and_loss"]),
         G(e.model_state_bytes)] for c, e in by_cp.items()]
display(Markdown(markdown_table(rows, ["cp (dp = 8 / cp)", "tokens per GPU", "peak per GPU", "activations",
                                       "logits and loss", "model states"])))

# %% [markdown]
# ### Every layout that fits 8 x H100 at 128k (`memlib.plan.plan`)

# %% jupyter={"source_hidden": true} tags=["hide-input"]
rows = [[p.describe(), G(p.estimate.peak_bytes), f"{p.verdict.margin_gib:+.1f} GiB",
         f"{p.tokens_per_s_per_gpu:,.0f}"] for p in r8.feasible]
display(Markdown(markdown_table(rows, ["layout on 8 x H100 at 128k", "peak per GPU", "margin", "tokens/s per GPU"])))

# %% [markdown]
# ### One layer's saved tensors per token at 128k · 单层激活明细
#
# `est.layer` is the ledger memlib sums (sdpa; bytes per token, one layer, bf16 compute under FSDP2's
# mixed precision). Eager attention adds the two s-wide probability rows of every head.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
led = base_long.layer
rows = [[f"`{name}`", why, f"{n // LONG:,}"] for name, n, why in led.items]
rows.append(["**one layer**", "", f"**{led.total // LONG:,}**"])
display(Markdown(markdown_table(rows, ["tensor kept for backward", "why", "bytes per token"])))

# %% [markdown]
# ### The moments of the 128k step with cp = 8 · 峰值出现在哪一刻
#
# Every moment memlib evaluates for cp = 8 + FSDP + selective recompute, and the ring attention's terms
# (`memlib/training/context_parallel.py`, read from torch 2.13's `_context_parallel/_attention.py` and
# measured with torch's own ring attention on fake tensors: `validation/results_cp.json`).

# %% jupyter={"source_hidden": true} tags=["hide-input"]
rows = [[mo.name + (" **(peak)**" if mo is cp8_sel.peak_moment else ""), mo.where, G(mo.total)]
        for mo in cp8_sel.moments]
display(Markdown(markdown_table(rows, ["phase", "moment", "alive, per GPU"])))
rows = [[f"`{t.name}`", t.source, GB(t.nbytes)] for t in cp8_sel.terms if t.name.startswith("ring_")]
display(Markdown(markdown_table(rows, ["ring term", "source", "one layer"])))
