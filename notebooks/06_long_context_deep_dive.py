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
# follow-up questions (context extension by RoPE scaling, prefill time, sequence packing), FlashAttention's memory and HBM accesses at every length, the fact-check of
# the claims that circulate about long-context training, and the ledger tables.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
from IPython.display import Markdown, display

import memlib
from memlib.learn.chapters.ch06 import FSDP, GPU, LONG, MODEL, N_GPU, SHORT, SRAM_ELEMENTS, term
from memlib.learn.kit import GB, G
from memlib import estimate_inference, estimate_training, fits, get_gpu, get_model, step_time
from memlib.training.activations import korthikanti_layer_bytes
from memlib.training.explain import markdown_table
from memlib.learn.factcheck import Claim, fact_check_table
from memlib.parallel.plan import Plan, max_seq_len, plan
from memlib.cost.timing import cp_kv_bytes, flops_per_token
from memlib.cost.conventions import (attention_hbm_accesses, mean_attended_keys, sequence_flops_ratio,
                                     ulysses_all_to_all_bytes, windowed_attention_flops_per_token)


SEQS = (8192, 32768, 131072)


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
# memlib.cost.conventions.ulysses_all_to_all_bytes (DeepSpeed-Ulysses) against memlib.cost.timing.cp_kv_bytes (ring /
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

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### How do you stretch RoPE past its training length? · RoPE 怎么扩展到更长的上下文？
#
# RoPE rotates each of a head's d/2 pairs of query and key channels by the angle position × θ_i, with
# θ_i = base^(−2i/d): the first pair turns every few positions, the last one barely turns in millions. A model
# trained on L tokens has seen each pair's angles only up to L·θ_i. To serve L' = s·L tokens, every method
# changes the θ_i (and YaRN the softmax temperature), nothing else. The methods' constants, as memlib holds them
# (`memlib.models.rope`):

# %%
from memlib.models.rope import (LLAMA3_ROPE_SCALING, LLAMA3_ROPE_THETA, YARN_ALPHA, YARN_BETA, rope_attention_scale,
                                rope_inv_freq, rope_stretch, rope_wavelengths)

S, L0 = LLAMA3_ROPE_SCALING["factor"], LLAMA3_ROPE_SCALING["original_max_position_embeddings"]
r_alpha, r_beta = f"{YARN_ALPHA:g}", f"{YARN_BETA:g}"
r_l3_factor, r_l3_low = f"{S:g}", f"{LLAMA3_ROPE_SCALING['low_freq_factor']:g}"
r_l3_high, r_l3_orig = f"{LLAMA3_ROPE_SCALING['high_freq_factor']:g}", f"{L0:,}"

# %% [markdown]
# - **position interpolation** (Chen et al. 2023): positions × 1/s, so every θ_i is divided by s;
# - **NTK-aware scaling** (bloc97 2023): the base becomes b·s^(d/(d−2)), so the fastest pair is unchanged and
#   the slowest is divided by exactly s;
# - **YaRN** (Peng et al. 2023): a pair that turns more than β = {eval}`r_beta` times over L is kept, one that turns
#   less than α = {eval}`r_alpha` time is divided by s, a linear ramp in between; and the logits are multiplied by
#   1/t, with √(1/t) = 0.1·ln(s) + 1;
# - **Llama 3.1's `rope_scaling`** (factor {eval}`r_l3_factor`, low and high frequency factors {eval}`r_l3_low` and
#   {eval}`r_l3_high`, original length {eval}`r_l3_orig`): the same blend with α = {eval}`r_l3_low` and
#   β = {eval}`r_l3_high`, and no temperature.
#
# ✏️ **Back of the envelope.** Llama 3.1: d = 128, base 500,000, L = 8k. Pair i's wavelength is
# 2π·500,000^(i/64) positions: pair 0 about 6, pair 32 about 2π·707 ≈ 4,400, pair 63 millions. Pair 32 turns
# 8,192 / 4,400 ≈ 2 times in 8k: between 1 and 4, so Llama 3.1 blends it; YaRN (1 to 32) blends it too;
# position interpolation divides it by 8 like every other pair.

# %% tags=["nbval-check-output"]
D, BASE = m.head_dim, LLAMA3_ROPE_THETA                                 # Llama-3.1-8B: d = 128
METHODS = {"linear": "position interpolation", "ntk": "NTK-aware", "yarn": "YaRN", "llama3": "Llama 3.1"}
lam = rope_wavelengths(rope_inv_freq(D, BASE))                          # 2π / θ_i, positions per turn
stretch = {k: rope_stretch(k, D, BASE, S, L0) for k in METHODS}         # θ_i / θ'_i: 1 kept, S squeezed
kept = {k: sum(abs(x - 1) < 1e-9 for x in v) for k, v in stretch.items()}
squeezed = {k: sum(abs(x - S) < 1e-9 for x in v) for k, v in stretch.items()}
temp = {k: rope_attention_scale(k, S) for k in METHODS}                 # the factor on cos and sin
yarn_hf = rope_stretch("yarn", D, BASE, S, L0, ramp="index")            # transformers' ramp over the pair index
for k, name in METHODS.items():
    print(f"{name}: {kept[k]} pairs kept, {squeezed[k]} divided by {S:g}, {D // 2 - kept[k] - squeezed[k]} blended; "
          f"cos/sin x {temp[k]:.3f}")
print(f"YaRN with transformers' ramp: {sum(abs(x - 1) < 1e-9 for x in yarn_hf)} kept, "
      f"{sum(abs(x - S) < 1e-9 for x in yarn_hf)} divided by {S:g}; at most "
      f"{max(abs(x - y) for x, y in zip(yarn_hf, stretch['yarn'])):.2f} apart from the paper's ramp")
print(f"pair 32: wavelength {lam[32]:,.0f} positions, {L0 / lam[32]:.2f} turns in {L0:,}; "
      f"Llama 3.1 divides it by {stretch['llama3'][32]:.2f}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
PAIRS = (0, 16, 24, 28, 30, 32, 34, 36, 40, 48, 63)
rows = [[i, f"{lam[i]:,.0f}", f"{L0 / lam[i]:,.2f}"] + [f"{stretch[k][i]:.2f}" for k in METHODS] for i in PAIRS]
display(Markdown(markdown_table(rows, ["pair i", "wavelength (positions)", f"turns in {L0:,}"]
                                + [f"÷ by, {n}" for n in METHODS.values()])))

# %% jupyter={"source_hidden": true} tags=["hide-input"]
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(7, 3.2))
for k, name in METHODS.items():
    ax.plot(lam, stretch[k], label=name, marker=".")
ax.axvline(L0, color="grey", lw=0.8, ls=":")
ax.set(xscale="log", xlabel="wavelength of the pair (positions, log scale)", ylabel="frequency divided by",
       title=f"Which RoPE pairs each method stretches (Llama-3.1-8B, s = {S:g})")
ax.legend(fontsize=8)
plt.show()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
r_pairs = f"{D // 2}"
r_l3_kept, r_l3_sq = f"{kept['llama3']}", f"{squeezed['llama3']}"
r_l3_blend = f"{D // 2 - kept['llama3'] - squeezed['llama3']}"
r_yarn_kept, r_yarn_sq = f"{kept['yarn']}", f"{squeezed['yarn']}"
r_p32 = f"{stretch['llama3'][32]:.2f}"
r_temp, r_logit = f"{temp['yarn']:.3f}", f"{temp['yarn'] ** 2:.3f}"
r_ctx_ratio = f"{m.max_position_embeddings // L0}"
r_hf_kept, r_hf_sq = f"{sum(abs(x - 1) < 1e-9 for x in yarn_hf)}", f"{sum(abs(x - S) < 1e-9 for x in yarn_hf)}"
r_hf_gap = f"{max(abs(x - y) for x, y in zip(yarn_hf, stretch['yarn'])):.1f}"

# %% [markdown]
# In the chart, the dotted line is one turn in the original {eval}`r_l3_orig` positions: pairs to its left turned
# at least once in training.
#
# memlib (`memlib.models.rope`, each method checked against transformers' `modeling_rope_utils.py`): position
# interpolation squeezes all {eval}`r_pairs` pairs, so the fast pairs that tell neighbouring tokens apart lose
# resolution too. NTK-aware scaling spreads the squeeze over the pairs, from none on the fastest to the full
# factor on the slowest. Llama 3.1 keeps {eval}`r_l3_kept` pairs as trained, divides {eval}`r_l3_sq` by the full
# factor and blends {eval}`r_l3_blend`; pair 32 is divided by **{eval}`r_p32`**, as the pencil expected. YaRN,
# with its wider ramp, keeps {eval}`r_yarn_kept` and squeezes {eval}`r_yarn_sq`.
#
# YaRN's temperature multiplies cos and sin by {eval}`r_temp`, so the logits by **{eval}`r_logit`**: it sharpens
# the softmax that longer contexts flatten. Llama 3.1 has no temperature. Its factor ({eval}`r_l3_factor`) is smaller
# than the ratio of its context to the original ({eval}`r_ctx_ratio`x): it was trained at long context afterwards, so
# the frequencies need not cover the whole ratio untrained. What the pencil left out: transformers' YaRN ramps
# linearly over the pair index between the pairs where r = β and r = α, the paper linearly in r (`ramp="index"`):
# it also keeps {eval}`r_hf_kept` and squeezes {eval}`r_hf_sq` pairs, but a blended pair's divisor differs by up to
# {eval}`r_hf_gap`; check which ramp your engine runs before comparing perplexities.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Does a longer context cost memory? · 扩展上下文要更多显存吗？
#
# ✏️ **Back of the envelope.** The frequencies are d/2 = 64 numbers computed at load time, not weights; the KV
# cache stores K after the rotation, 2 × 32 layers × 8 KV heads × 128 × 2 B = 128 KB per token, whatever the
# frequencies. So the weights and the bytes per token stay; only the number of cached tokens grows.

# %% tags=["nbval-check-output"]
from memlib.serving.inference import kv_bytes_per_token

l3 = get_model("llama-3-8b")                                            # the same 8B before the extension
kv_tok = {x.name: kv_bytes_per_token(x) for x in (l3, m)}               # memlib.serving.inference
kv_full = {x.name: estimate_inference(x, batch=1, context_len=x.max_position_embeddings).breakdown["kv_cache"]
           for x in (l3, m)}
for x in (l3, m):
    print(f"{x.name}: {x.num_params:,} parameters, KV {kv_tok[x.name]:,} B/token, "
          f"context {x.max_position_embeddings:,}: KV {GB(kv_full[x.name])}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
k_tok = f"{kv_tok[m.name] / 1024:,.0f} KiB"
k_8k, k_128k = f"{GB(kv_full[l3.name])}", f"{GB(kv_full[m.name])}"
k_ratio = f"{kv_full[m.name] / kv_full[l3.name]:.0f}x"

# %% [markdown]
# memlib: Llama 3 8B and Llama 3.1 8B have the same parameters and the same **{eval}`k_tok` per token** of KV
# cache (`kv_bytes_per_token`), with or without `rope_scaling`. What grows is the length: a full context holds
# {eval}`k_8k` of cache at 8k and **{eval}`k_128k`** at 128k, {eval}`k_ratio`. Context extension is a change of
# numbers inside the rotation; its memory cost is the cache of the tokens you then let in.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### How long does a 128k prompt take to prefill? · 128k 的预填充要多久？
#
# ✏️ **Back of the envelope.** Prefill runs the prompt forward once: 2N per token, 2 × 8e9 × 128k ≈ 2.1e15, plus
# causal attention, 4·L·H·Q per pair × T²/2 = 4 × 32 × 4,096 × (1.3e5)²/2 ≈ 4.5e15 FLOPs. About 6.6e15 FLOPs; at
# half of an H100's 1e15 FLOP/s, about 13 s. Attention is two thirds of it: past a few tens of thousands of
# tokens, prefill time grows as T².

# %% tags=["nbval-check-output"]
from memlib.cost.timing import active_params
from memlib.serving.prefill import prefill_flops, prefill_seconds

MFU_PREFILL = 0.5          # an assumption: the fraction of the dense bf16 peak the prefill reaches
PRE = (8192, 32768, 131072)
pre = {t: dict(flops=prefill_flops(m, t), attn=prefill_flops(m, t) - 2 * active_params(m) * t,
               s1=prefill_seconds(m, g, t, MFU_PREFILL), s8=prefill_seconds(m, g, t, MFU_PREFILL, gpus=N_GPU),
               kv=estimate_inference(m, batch=1, context_len=t).breakdown["kv_cache"]) for t in PRE}
for t, p in pre.items():
    print(f"{t:>7,}: {p['flops']:.2e} FLOPs, attention {p['attn'] / p['flops']:.0%}, {p['s1']:.2f} s on 1 H100, "
          f"KV {GB(p['kv'])}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
rows = [[f"{t:,}", f"{p['flops'] / 1e15:,.2f}", f"{p['attn'] / p['flops']:.0%}", f"{p['s1']:,.2f} s",
         f"{p['s8']:,.2f} s", GB(p["kv"])] for t, p in pre.items()]
display(Markdown(markdown_table(rows, ["prompt tokens", "prefill PFLOPs", "attention share",
                                       f"1 H100 at {MFU_PREFILL:.0%} MFU", f"{N_GPU} H100s, same MFU",
                                       "KV cache after"])))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
p_128 = f"{pre[LONG]['s1']:.1f} s"
p_share = f"{pre[LONG]['attn'] / pre[LONG]['flops']:.0%}"
p_time_ratio = f"{pre[LONG]['s1'] / pre[SHORT]['s1']:.0f}x"
p_kv_ratio = f"{pre[LONG]['kv'] / pre[SHORT]['kv']:.0f}x"
p_mfu = f"{MFU_PREFILL:.0%}"

# %% [markdown]
# memlib (`memlib.serving.prefill`, on `request_flops`: 2N·T + 4·L·H·Q·T(T+1)/2): at an assumed {eval}`p_mfu` MFU
# a 128k prompt takes **{eval}`p_128`** on one H100, attention {eval}`p_share` of the FLOPs. From 8k to 128k the
# cache grows {eval}`p_kv_ratio` and the prefill time {eval}`p_time_ratio`: memory is linear in the length, time
# grows faster, toward T² as attention takes over. That is why long prompts are prefilled in chunks (so decodes keep running between them), split over
# GPUs by tensor or context parallelism, and why a cached prefix is worth so much at 128k. The 8-GPU column
# divides the time and ignores the communication.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Packing documents into one row: what does the mask change? · 序列打包与注意力掩码
#
# Packing concatenates short documents into one training row so no token is padding. With only the usual causal
# mask, a token then attends to every document before it in the row: the model learns from context it will never
# have at inference, and RoPE's positions run on across document boundaries. Three ways to keep documents apart:
# FlashAttention's varlen kernels, given the boundaries as cumulative lengths (`cu_seqlens`); position ids that
# restart at each document (transformers' `DataCollatorWithFlattening`, whose FlashAttention-2 path rebuilds
# `cu_seqlens` from the restarts; a restart alone only resets RoPE's positions, it masks nothing); or a
# block-diagonal causal mask (FlexAttention's document mask). Llama 3 masks across documents and found it
# important in long-context pre-training (Llama Team 2024, Sec. 3.2).
#
# ✏️ **Back of the envelope.** 8 documents of 4k in a 32k row. One causal mask: (32k)²/2 ≈ 537 M query-key pairs.
# Per document: 8 × (4k)²/2 ≈ 67 M, one eighth. The mask removes 7/8 of the attention work.

# %% tags=["nbval-check-output"]
from memlib.training.packing import (causal_attention_pairs, cross_document_pairs, cu_seqlens,
                                     packed_attention_flops, packing_attention_saving)

docs = [4096] * 8
row = sum(docs)
pk = {mask: packed_attention_flops(m, docs, per_document=mask) for mask in (True, False)}   # training step
weights6 = 6 * active_params(m) * row                                  # 6N·T, the same either way
print(f"pairs: per document {causal_attention_pairs(docs):,}, one mask {causal_attention_pairs(docs, False):,}, "
      f"cross-document {cross_document_pairs(docs):,} ({packing_attention_saving(docs):.2%})")
print(f"training FLOPs of the row: 6N·T {weights6:.3e} + attention {pk[True]:.3e} vs {pk[False]:.3e}")
print("cu_seqlens:", cu_seqlens(docs))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
pk_cross = f"{cross_document_pairs(docs) / 1e6:,.0f} M"
pk_save = f"{packing_attention_saving(docs):.1%}"
pk_step = f"{1 - (weights6 + pk[True]) / (weights6 + pk[False]):.0%}"
pk_attn_share = f"{pk[False] / (weights6 + pk[False]):.0%}"
pk_cu = f"{cu_seqlens(docs)[:3]}"

# %% [markdown]
# memlib (`memlib.training.packing`): without the mask, the row computes **{eval}`pk_cross`** cross-document
# query-key pairs, {eval}`pk_save` of its causal attention work: exactly what the per-document mask removes (the
# pencil's 7/8, less the diagonal each document keeps). For Llama-3.1-8B's training step over this row,
# attention is {eval}`pk_attn_share` of the FLOPs under one causal mask, and the per-document mask makes the step
# **{eval}`pk_step` cheaper**, at no cost in memory. `cu_seqlens` starts {eval}`pk_cu`: the varlen kernel
# never visits a block across a boundary. In the MFU count, use the masked pairs, not T²/2.

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


longest = {c: max_seq_len(plan_for(c), g) for c in (1, 2, 4, 8)}       # memlib.parallel.plan.max_seq_len
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

# %%
OK, PART, BAD = "✅ right", "⚠️ partly", "❌ wrong"
facts = [
    Claim("\"Transformers are slow and memory-hungry on long sequences, since the time and memory complexity of "
          "self-attention are quadratic in sequence length.\"",
          "Dao et al. 2022, FlashAttention, abstract",
          f"eager {per_token[LONG, 'eager'] / 1e6:.1f} MB/token/layer at 128k vs sdpa {per_token[LONG, 'sdpa'] / 1e3:.0f} KB "
          "at any length",
          verdict=PART,
          why="true of the standard (eager) implementation, which is the paper's point: the fused "
                            "kernel's memory is linear; its time stays quadratic"),
    Claim("\"standard attention has memory quadratic in sequence length, whereas FlashAttention has memory linear in "
          "sequence length. We see 10X memory savings at sequence length 2K, and 20X at 4K.\"",
          "Dao-AILab/flash-attention README @1f7ce2f, L513-515",
          f"attention block of a Llama-3.1-8B layer: eager/sdpa {attn_half[2048, 'eager'] / attn_half[2048, 'sdpa']:.0f}x "
          f"at 2k, {attn_half[4096, 'eager'] / attn_half[4096, 'sdpa']:.0f}x at 4k",
          verdict=PART,
          why="linear vs quadratic holds and the ratio doubles with s; 10x and 20x are the attention op alone on the "
              "README's benchmark shapes, a whole attention block (norm, Q, K, V, output) saves less"),
    Claim("\"Standard attention (Algorithm 0) requires Θ(Nd + N²) HBM accesses, while FlashAttention (Algorithm 1) "
          "requires Θ(N²d²M⁻¹) HBM accesses.\"",
          "Dao et al. 2022, arXiv:2205.14135, Theorem 2",
          f"32k, d = 128, M = 100 KB: {fa[32768][1]:.2e} vs {fa[32768][2]:.2e} accesses per head",
          verdict=OK,
          why="fewer accesses by about M/d², with the same FLOPs: FlashAttention saves memory and traffic, not FLOPs"),
    Claim("Activations per layer = sbh(34 + 5as/h)",
          "Korthikanti et al. 2022, eq. 1-2 (16-bit, with dropout)",
          f"{GB(kor)} per layer at 128k with Llama-3.1-8B's shapes; the 5as/h term is {1 - kor_lin / kor:.1%} of it",
          verdict=PART,
          why="right for GPT layers with eager attention; a fused kernel removes the 5as²b term, which is what the "
                    "paper's selective recompute also removes"),
    Claim("\"With sequence length of 128k, the memory requirement of the attention matrix is 128k * 128k * 2 bytes * "
          "num_heads = ~32 GB * num_heads\"",
          "Hugging Face Accelerate docs, Context Parallel guide",
          f"eager keeps {per_token[LONG, 'eager'] * LONG / (m.num_heads * 2**30):.0f} GiB per head per layer",
          verdict=PART,
          why="the arithmetic (32 GiB) is one bf16 copy; transformers' eager softmax keeps an fp32 copy too: 6 bytes "
                    "per score, 3x the claim"),
    Claim("\"At the last layer, using a window size of W = 4096, we have a theoretical attention span of approximately "
          "131K tokens.\"",
          "Jiang et al. 2023, Mistral 7B, Sec. 2",
          f"{mis.num_layers} layers x {mis.sliding_window:,} = {mis_span:,} tokens",
          verdict=OK,
          why="the receptive field of stacked windows is L·w; information that far back arrives only indirectly"),
    Claim("\"On a sequence length of 32k tokens, this reduces the cache memory usage by 8x, without impacting the "
          "model quality.\"",
          "Jiang et al. 2023, Mistral 7B, Sec. 2 (rolling buffer cache)",
          f"KV cache at 32k: {GB(kv[32768][1])} full vs {GB(kv[32768][0])} windowed, {mis_cut:.0f}x",
          verdict=OK,
          why="32k / 4k; the quality half of the claim is the paper's measurement, not memlib's"),
    Claim("\"Recomputing activations in backward can avoid OOM but also introduce significant overheads (~30% with full "
          "recompute).\"",
          "Megatron-Core docs, context_parallel.md",
          f"full recompute: {full_none:.2f}x the FLOPs per token at 128k",
          verdict=OK,
          why="a second forward: (8N + 16·L·H·Q·T) / (6N + 12·L·H·Q·T) = 4/3 at any length"),
    Claim("\"The activation memory footprint per GPU is also CP times smaller\"",
          "Megatron-Core docs, context_parallel.md",
          f"activations at the peak, cp = 1 vs 8: {act_ratio:.1f}x",
          verdict=PART,
          why="activations yes; the peak less so: model states do not shrink with cp, and ring attention adds buffers"),
    Claim("\"each GPU only stores the KV of a sequence chunk in forward and gathers KV again in backward\"",
          "Megatron-Core docs, context_parallel.md",
          "ring_backward_bytes: the K/V fetched again in backward",
          verdict=OK,
          why="torch's ring backward re-fetches K/V the same way (_templated_ring_attention_backward)"),
    Claim("\"Our approach enables training and inference of sequences that are up to device count times longer than "
          "those achievable by prior memory-efficient Transformers\"",
          "Liu et al. 2023, Ring Attention, abstract",
          "longest sequence on dp 8 x cp c H100s, full recompute: " + ", ".join(f"cp {c}: {n:,}" for c, n in
                                                                          longest.items()),
          verdict=OK,
          why=f"8x the GPUs reach {longest[8] / longest[1]:.1f}x the length: the per-token terms divide by cp, and "
                  "FSDP over dp x cp shrinks the model states too"),
    Claim("\"adding more GPUs on the CP dimension allows longer input seq_len and this growth is linearly scalable\"",
          "torchtitan PR #592, enable Context Parallel (FSDP 8 x CP 1/2/4/8, full AC, H100)",
          ", ".join(f"cp {c}: {n / 1024:,.0f}k" for c, n in longest.items()),
          verdict=OK,
          why="linear (slightly better) in memlib too, with the same layout"),
    Claim("\"...overlapping the communication of key-value blocks with the computation of blockwise attention\"",
          "Liu et al. 2023, Ring Attention, abstract",
          f"128k, cp 8 on NVLink: {t_cp8.cp_exposed_s * 1e3:.0f} ms exposed of {t_cp8.cp_comm_s * 1e3:.0f} ms; 8k, cp 8 "
          f"with one GPU per node (InfiniBand): {slow.cp_exposed_s * 1e3:.0f} ms of {slow.cp_comm_s * 1e3:.0f} ms",
          verdict=OK,
          why="hidden while a block's attention outlasts its transfer; Llama's 8 K/V heads keep the blocks small, so even "
              "1k-token blocks over InfiniBand hide most of it (the last dK/dV send is always exposed)"),
    Claim("Llama 3 405B at 128k: 16,384 GPUs, TP 8, CP 16, PP 16, DP 8, 16M tokens per batch, 380 TFLOPS per GPU",
          "Llama Team 2024, The Llama 3 Herd of Models, arXiv:2407.21783, Table 4",
          f"Llama-3.1-405B, TP 8 x CP 16 x PP 16 x DP 8, full recompute (Megatron layout): {G(l405.peak_bytes)} per GPU",
          verdict=OK if v405.fits else BAD,
          why=f"the published layout {'fits' if v405.fits else 'does not fit'} an H100 in memlib "
                               f"({v405.margin_gib:+.0f} GiB)"),
    Claim("\"Measured: Qwen3-8B at 1,048,576 tokens, 380 s/step, 56.2 GB per GPU (bf16, per_device_train_batch_size=1, "
          "loss_type=\"chunked_nll\")\"",
          "huggingface/trl v1.13.0 release notes (8 x H100, CP 8)",
          f"{GB(q1m.peak_bytes)} ({G(q1m.peak_bytes)}) with cp 8, FSDP, full recompute, offloaded checkpoints, chunked "
          f"loss; {t_q1m.step_s:.0f} s at 40% HFU (recompute counted)",
          verdict=PART,
          why=f"memory within {abs(q1m.peak_bytes / 56.2e9 - 1):.0%} (the statistic is not stated); time 2x, because PaLM's "
              f"count charges the masked half of a causal 1M-token sequence: the run reached about "
              f"{t_q1m.achieved_mfu * t_q1m.step_s / 380:.0%} MFU by that count"),
]
display(Markdown(fact_check_table(facts)))

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
# ### Every layout that fits 8 x H100 at 128k (`memlib.parallel.plan.plan`)

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
