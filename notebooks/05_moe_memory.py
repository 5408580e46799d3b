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
# # 05 · DeepSeek-V3: serve and fine-tune a 671B MoE · DeepSeek-V3 推理与微调要多少显存
#
# **You will be able to answer:** how many GPUs serve DeepSeek-V3 and how many chats they hold, how
# many it takes to fine-tune it, and why a mixture of experts is cheap in FLOPs but not in memory.
#
# **Reading time:** core path ~15 min (sections 1-9); section 10 is a deep dive you can skip.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
# %matplotlib inline
import json
import math
from pathlib import Path

import matplotlib.pyplot as plt
from IPython.display import Markdown, display

import memlib
from memlib import cost, estimate_inference, estimate_training, fits, fmt_bytes, get_gpu, get_model, gib, step_time
from memlib.explain import markdown_table
from memlib.fit import usable_bytes
from memlib.measured import estimate_case
from memlib.inference import gqa_kv_bytes_per_token, kv_bytes_per_token, kv_cache_bytes
from memlib.moe import decode_weight_bytes, expected_experts_touched, min_gpus_sharded, routed_expert_params
from memlib.moe_playground import MoEServingPlayground
from memlib.plan import plan_serving
from memlib.timing import flops_per_token, forward_flops_per_token
from memlib.cost.conventions import (deepseek_v3_implied_mfu, mla_absorbed_attention_flops, mla_absorbed_intensity,
                                     ridge_flop_per_byte)
from memlib.units import fmt_count
from memlib.viz import breakdown_bars, sweep
from memlib.zero import zero_model_state_bytes

MODEL, GPU, N = "deepseek-v3", "h200", 8   # the question: DeepSeek-V3 on one 8-GPU H200 server
CTX = 8192                                 # an 8k-token chat; vLLM's default 8,192-token prefill chunks
FT_SEQ = 4096                              # fine-tuning sequences of 4k tokens, micro-batch 1
GQA_PEER = "llama-3.1-405b"                # a dense GQA model of similar size
CONTEXTS = (8192, 32768, 131072)


def GB(n_bytes):
    """GB (1e9 bytes), labelled: the unit of this notebook."""
    return f"{n_bytes / 1e9:,.1f} GB"


def TB(n_bytes):
    return f"{n_bytes / 1e12:,.2f} TB"


def R(x, sig=2):
    """A figure rounded to `sig` significant digits, as a person says it (544 -> '540')."""
    return f"{float(f'{x:.{sig}g}'):g}"


# The figures the 30-second answer quotes; section 5 derives each one step by step.
m, g = get_model(MODEL), get_gpu(GPU)
P, A = m.num_params, m.num_active_params
fp8_total = estimate_inference(m, batch=1, context_len=1).weight_bytes                    # step 2
fp8_per_gpu = estimate_inference(m, batch=1, context_len=1, tp=N).weight_bytes            # step 2
flops_ratio = cost.training_flops(P, 1) / cost.training_flops(m, 1)                       # step 3
kv_latent = kv_bytes_per_token(m)                                                         # step 4
serve = plan_serving(m, g, N, context_len=CTX)                                            # step 5
tp_only = next(p for p in serve.feasible if p.settings["tp"] == N and p.settings["ep"] == 1)
states = zero_model_state_bytes(P, 0, 1)                                                  # step 6
ft = {gpu: min_gpus_sharded(m, gpu, seq_len=FT_SEQ) for gpu in (GPU, "h100-80gb")}        # step 6
bf16_total = estimate_inference(m, batch=1, context_len=1, weights="bf16").weight_bytes   # step 7
lora_floor = math.ceil(bf16_total / usable_bytes(get_gpu("h100-80gb")))                   # step 7

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. The question · 问题
#
# > **DeepSeek-V3（总参数 671B，每 token 激活 37B）推理要多少显存、几张卡？微调呢？为什么 MoE 省算力却不省显存？**
# > <br> *How much memory does DeepSeek-V3 (671B total, 37B active) need to serve, and to fine-tune?
# > Why is MoE cheap in FLOPs but not in memory?*

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. The 30-second answer · 30 秒回答

# %% jupyter={"source_hidden": true} tags=["hide-input"]
serve_en, serve_zh = ("fit", "放得下") if serve.feasible else ("do not fit", "放不下")
display(Markdown(
    f"> **EN** Memory follows all {R(m.num_params / 1e9, 3)}B parameters; compute follows the "
    f"{R(A / 1e9, 3)}B active ones. Serving keeps every expert resident: {R(fp8_total / 1e9)} GB of fp8 weights, "
    f"so eight H200s {serve_en}, and MLA's compressed cache leaves room for about {R(serve.best.sequences)} chats. "
    f"Levers: fp8 or 4-bit weights, expert parallelism with data-parallel attention, more GPUs. Caveat: "
    f"fine-tuning needs about {R(states / 1e12, 3)} TB of states, and even LoRA must hold the whole base.\n\n"
    f"> **中文** 显存看全部 {R(m.num_params / 1e9, 3)}B 参数，算力只看 {R(A / 1e9, 3)}B 激活参数。推理时专家全部常驻："
    f"fp8 权重约 {R(fp8_total / 1e9)} GB，8 张 H200 {serve_zh}；MLA 的压缩缓存还能放约 {R(serve.best.sequences)} "
    f"个对话。手段：fp8 或 4-bit 权重、专家并行加数据并行注意力、更多卡。注意：微调的模型状态约 "
    f"{R(states / 1e12, 3)} TB，LoRA 也要放下整个底座。\n\n"
    "The long answer follows: every figure above is derived in section 5."))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. What the interviewer is probing · 考察意图
#
# - **Total vs active.** Memory is sized by the total parameters (every expert is resident),
#   compute by the active ones. Candidates who size the GPUs from "37B" are off by more than ten times.
# - **The KV cache of MLA.** DeepSeek caches a 576-number latent per token and layer, not 128
#   heads of keys and values; and under tensor parallelism that latent is *replicated*, not split.
# - **Expert vs tensor parallelism.** Why SGLang and vLLM serve DeepSeek with data-parallel
#   attention and expert parallelism (and the all-to-all that costs).
# - **Formats.** The checkpoint is released in block-wise fp8; upcasting to bf16 doubles it.
# - **Fine-tuning realism.** Full fine-tuning keeps 16 bytes per parameter of all 671B; expert
#   parallelism does not shrink that. LoRA does not remove the frozen base. Say what a practitioner
#   would actually run.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Words we use · 术语
#
# - **MoE (mixture of experts)**: each MoE layer has many MLPs ("experts"); a **router** sends each token to its **top-k** of them.
# - **Routed / shared expert**: routed experts are chosen per token (DeepSeek-V3: 256 per layer, top-8); a shared expert sees every token (1 per layer).
# - **Active parameters**: the parameters one token passes through: attention, shared expert, its k routed experts, embeddings (DeepSeek-V3: 37.6B of 671B).
# - **MLA (multi-head latent attention)**: keys and values are rebuilt from a compressed **latent** c_KV (512 numbers) plus a 64-number **rope key** per token and layer; engines cache only those.
# - **KV cache**: the keys and values of past tokens kept for decoding; **MHA** caches them for every head, **GQA** for a few shared key/value heads.
# - **TP (tensor parallelism)**: every matrix split over GPUs; **EP (expert parallelism)**: whole experts spread over GPUs.
# - **Data-parallel attention**: each GPU runs attention for its own batch (its own KV cache), and the experts are shared over all GPUs by EP (SGLang `--enable-dp-attention`).
# - **All-to-all**: the collective that sends each token's hidden state to the GPUs holding its experts, and back.
# - **Block-wise fp8**: 1-byte weights with one fp32 scale per 128 x 128 block (DeepSeek-V3's release format).
# - **ZeRO-3 / FSDP**: parameters, gradients and optimizer states sharded over all data-parallel GPUs; a layer is gathered when used.
# - **Recompute** (gradient checkpointing): keep only each layer's input, run its forward again in backward.
# - **LoRA / QLoRA**: train small low-rank adapters on a frozen base (QLoRA: the base in 4-bit).
# - **Capacity factor**: the buffer per expert, as a multiple of its fair share of tokens; tokens over it are dropped. **Aux loss**: a loss term that pushes the router toward balanced load.
# - **6N FLOPs**: training costs about 6 FLOPs per parameter per token (forward 2, backward 4); N is the active parameters of a MoE. **MFU**: the share of the GPU's peak FLOP/s a run achieves.
# - **GB / GiB**: 1e9 / 2**30 bytes. This notebook speaks GB; an H200 "141GB" holds 141 GiB (151 GB), of which torch reports 150 GB.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. The answer, step by step · 推导
#
# ### Step 1 · Total and active parameters

# %% [markdown]
# ✏️ **Back of the envelope.** 61 layers; 58 of them hold 256 routed experts, each three
# 7168 x 2048 matrices: 58 x 256 x 3 x 7168 x 2048 ≈ **654e9** parameters in routed experts, of
# 671e9. A token uses 8 of 256 routed experts: 654e9 x 8 / 256 ≈ 20e9, plus the ~17e9 everything
# else has, ≈ **37e9** active.

# %% tags=["nbval-check-output"]
m = get_model(MODEL)            # memlib.get_model: counted tensor by tensor, equal to transformers' count
experts = routed_expert_params(m)  # memlib.moe.routed_expert_params
pencil = {"routed": 654e9, "rest": 17e9, "active": 37e9}   # the round numbers above
print(m.describe())
print(f"routed experts {experts:,} ({experts / m.num_params:.1%}); active per token {m.num_active_params:,} "
      f"({m.num_active_params / m.num_params:.1%}); without the input embedding {m.active_params_without_embedding:,}")
print(f"memlib / pencil: routed {experts / pencil['routed']:.3f}, rest {(m.num_params - experts) / pencil['rest']:.3f}, "
      f"active {m.num_active_params / pencil['active']:.3f}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
rest = m.num_params - experts
display(Markdown(
    f"memlib: **{fmt_count(m.num_params)} parameters**, **{fmt_count(m.num_active_params)} active per token** "
    f"({m.num_active_params / m.num_params:.1%}). The routed experts are {fmt_count(experts)} "
    f"({experts / m.num_params:.1%} of the model); everything else (MLA attention, the shared experts, the three dense "
    f"layers, router, embeddings) is {fmt_count(rest)}. The pencil's routed count is off by only "
    f"{abs(experts / pencil['routed'] - 1):.2%}; its round \"17e9 of the rest\" was {pencil['rest'] / rest - 1:+.0%} off, "
    f"and the active total {pencil['active'] / m.num_active_params - 1:+.1%}. DeepSeek's own \"37B activated\" matches the count without the input embedding "
    f"({fmt_count(m.active_params_without_embedding)}): an inference from the figures, which the report does not "
    "state. The multi-token-prediction module is not counted, as transformers does not build it: MTP is a training "
    "objective (predict one more token), whose module can be reused for speculative decoding."))

# %% [markdown]
# ### Step 2 · Weights: every expert resident, fp8 as released
#
# ✏️ **Back of the envelope.** The checkpoint stores the matrices in fp8: 671e9 x 1 B ≈ **671 GB**.
# Over 8 GPUs: 671 / 8 ≈ **84 GB per GPU**, well under an H200's ~150 GB. Upcast to bf16 it doubles:
# 1.34 TB, 168 GB per GPU: over the H200.

# %% tags=["nbval-check-output"]
w = {fmt: estimate_inference(m, batch=1, context_len=CTX, weights=fmt, tp=N, prefill_tokens=CTX)  # memlib.estimate_inference
     for fmt in ("auto", "bf16")}      # "auto": the checkpoint's own format (config.json: block-wise fp8)
fp8_total = estimate_inference(m, batch=1, context_len=1).weight_bytes   # all weights, one copy
bf16_total = estimate_inference(m, batch=1, context_len=1, weights="bf16").weight_bytes
pencil = 671e9   # 671e9 parameters x 1 byte
for fmt, e in w.items():
    print(f"{e.setup.weights}: {GB(e.weight_bytes)} per GPU over tp={N}; one sequence of {CTX:,} tokens fits an "
          f"{GPU}: {fits(e, g).fits}")
print(f"all weights: fp8 {GB(fp8_total)} (memlib / pencil {fp8_total / pencil:.3f}), bf16 {GB(bf16_total)}; "
      f"torch sees {GB(usable_bytes(g))} per {GPU}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
fp8 = w["auto"]
display(Markdown(
    f"memlib: **{GB(fp8_total)}** of weights in the released format, **{GB(fp8.weight_bytes)} per GPU** over eight "
    f"(the pencil's {GB(pencil)} and {GB(pencil / N)} left out {fp8_total / pencil - 1:+.1%}: one fp32 scale per 128 x 128 block, and the "
    f"embeddings, output head, norms and router kept in bf16). In bf16 it is {GB(bf16_total)}, "
    f"{GB(w['bf16'].weight_bytes)} per GPU: eight H200s **{'fit' if fits(w['bf16'], g).fits else 'do not fit'}** "
    f"it. All {m.num_experts} experts of every MoE layer are resident although a token uses {m.num_experts_per_tok}: "
    "a router decides per token and per layer, so any expert may be needed at the next step."))

# %% [markdown]
# ### Step 3 · FLOPs follow the active parameters
#
# ✏️ **Back of the envelope.** Training costs 6 FLOPs per active parameter per token:
# 6 x 37e9 ≈ **222 GFLOP per token**, against 6 x 671e9 ≈ **4.0 TFLOP** for a dense model of the
# same total size: **18x** fewer. Serving a token costs the forward only: 2 x 37e9 ≈ 74 GFLOP.

# %% tags=["nbval-check-output"]
six_n_active = cost.training_flops(m, 1)        # memlib.cost.training_flops: 6N, N = the active parameters
six_n_dense = cost.training_flops(m.num_params, 1)   # 6N for a dense model of the same total
with_attention = flops_per_token(m, FT_SEQ)      # memlib.timing.flops_per_token: + 12·L·H·Q·T (PaLM, App. B)
peer = flops_per_token(GQA_PEER, FT_SEQ)
serve_flops = forward_flops_per_token(m, CTX)    # memlib.timing.forward_flops_per_token: 2N + 4·L·H·Q·T
# served MLA is absorbed (DeepSeek-V2 Sec. 2.1.2): memlib.cost.conventions.mla_absorbed_attention_flops
attn_absorbed = mla_absorbed_attention_flops(m, CTX)     # 2·L·H·(2·d_c + d_r)·T
serve_absorbed = 2 * A + attn_absorbed
mla_ai, h100_ridge = mla_absorbed_intensity(m, CTX), ridge_flop_per_byte("h100-80gb")
print(f"absorbed MLA at {CTX}: attention {attn_absorbed / 1e9:,.0f} GFLOP/token, forward {serve_absorbed / 1e9:,.0f} "
      f"GFLOP/token; {mla_ai:,.0f} FLOP per byte of latent cache vs H100 ridge {h100_ridge:,.0f}")
print(f"6N active {six_n_active / 1e9:,.0f} GFLOP/token; 6N total {six_n_dense / 1e12:.2f} TFLOP/token "
      f"({six_n_dense / six_n_active:.1f}x); with attention at {FT_SEQ} tokens {with_attention / 1e9:,.0f} GFLOP; "
      f"{GQA_PEER} {peer / 1e9:,.0f} GFLOP; serving (forward at {CTX} tokens) {serve_flops / 1e9:,.0f} GFLOP")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"memlib: **{six_n_active / 1e9:,.0f} GFLOP per training token** (6 x {fmt_count(m.num_active_params)}), "
    f"**{six_n_dense / six_n_active:.1f}x** fewer than the {six_n_dense / 1e12:.2f} TFLOP of a dense 671B. The pencil "
    f"left out the attention scores: at {FT_SEQ:,} tokens they add {with_attention / six_n_active - 1:+.0%} "
    f"({with_attention / 1e9:,.0f} GFLOP). A dense GQA model of similar size, {GQA_PEER}, costs "
    f"{peer / 1e9:,.0f} GFLOP, {peer / with_attention:.1f}x more. Serving a token runs the forward only: "
    f"{serve_flops / 1e9:,.0f} GFLOP at {CTX:,} tokens of context counted MHA-style (4·L·H·Q·T over decompressed K "
    f"and V). Served MLA is **absorbed** (DeepSeek-V2, Sec. 2.1.2): the key up-projection folds into the query and "
    f"the value up-projection into the output, so all {m.num_heads} heads attend over the cached "
    f"{m.kv_lora_rank}-wide latent and {m.qk_rope_head_dim}-wide RoPE key: 2·L·H·(2·d_c + d_r)·T = "
    f"**{attn_absorbed / 1e9:,.0f} GFLOP of attention alone** at {CTX:,} tokens ({serve_absorbed / 1e9:,.0f} with the "
    f"weights), and **{mla_ai:,.0f} FLOP per byte** of cache read, near an H100's ridge of {h100_ridge:,.0f} FLOP/B "
    f"(`memlib.cost.conventions`): absorbed MLA decode is close to compute-bound, where GQA decode reads bytes. **That is the whole MoE bargain: FLOPs follow "
    f"{fmt_count(m.num_active_params)}, memory follows {fmt_count(m.num_params)}.**"))

# %% [markdown]
# ### Step 4 · The KV cache: MLA's latent vs full K/V vs GQA
#
# ✏️ **Back of the envelope.** MLA caches the latent and the rope key: (512 + 64) x 61 layers
# x 2 bytes ≈ **70 KB per token**. Rebuilt as full keys and values (transformers' eager cache):
# 128 heads x (192 + 128) x 61 x 2 B ≈ **5.0 MB**, 71x more. Llama-3.1-405B with GQA: 2 x 126
# layers x 8 KV heads x 128 x 2 B ≈ **516 KB**. An 8k chat with MLA: 70 KB x 8192 ≈ **0.58 GB**.

# %% tags=["nbval-check-output"]
per_token = {"MLA latent (vLLM, SGLang)": kv_bytes_per_token(m),            # memlib.inference.kv_bytes_per_token
             "MLA as full K/V (transformers)": kv_bytes_per_token(m, mla_cache="full"),
             f"{GQA_PEER} (GQA)": kv_bytes_per_token(get_model(GQA_PEER))}
caches = {"MLA latent (vLLM, SGLang)": (m, "latent"), "MLA as full K/V (transformers)": (m, "full"),
          f"{GQA_PEER} (GQA)": (get_model(GQA_PEER), "latent")}   # mla_cache does not apply to a GQA model
per_seq = {k: {c: kv_cache_bytes(mod, 1, c, mla_cache=mla) for c in CONTEXTS}   # memlib.inference.kv_cache_bytes
           for k, (mod, mla) in caches.items()}
BATCH = 32
for k, v in per_token.items():
    print(f"{k}: {v:,} B/token; one sequence " + ", ".join(f"{c // 1024}k {GB(per_seq[k][c])}" for c in CONTEXTS))

# %% jupyter={"source_hidden": true} tags=["hide-input"]
rows = [[k, f"{v / 1e3:,.1f} KB"] + [GB(per_seq[k][c]) for c in CONTEXTS] + [GB(BATCH * per_seq[k][CTX])]
        for k, v in per_token.items()]  # a batch holds BATCH sequences' caches
display(Markdown(markdown_table(rows, ["cache", "per token"] + [f"one {c // 1024}k sequence" for c in CONTEXTS]
                                + [f"{BATCH} sequences of 8k"])))
lat, full, gqa = per_token.values()
display(Markdown(
    f"memlib: **{lat:,} bytes per token** (the pencil was exact), {full / lat:.0f}x less than full K/V and "
    f"{gqa / lat:.1f}x less than {GQA_PEER}'s GQA cache. A 128k-token conversation holds {GB(per_seq[next(iter(per_seq))][131072])} "
    f"of latent cache, against {GB(per_seq[f'{GQA_PEER} (GQA)'][131072])} for the dense model. "
    "The cache is one vector per token, not per head, so **tensor parallelism does not split it**: every GPU of a "
    "tensor-parallel group keeps the whole latent. That is the fact step 5 turns on."))

# %% [markdown]
# ### Step 5 · Serving on 8 × H200: tensor or expert parallelism
#
# ✏️ **Back of the envelope.** *Tensor parallel over 8:* each GPU holds 84 GB of weights and
# has 150 - 84 ≈ 66 GB left; the latent cache is replicated, so the server holds 66 / 0.58 ≈
# **110** chats of 8k. *Data-parallel attention + expert parallel 8:* each GPU keeps all of the
# attention and dense weights (~19 GB) and 32 of 256 experts (654 / 8 ≈ 82 GB), ≈ 101 GB, leaving
# ~49 GB for its **own** chats: 49 / 0.58 ≈ 85 per GPU, **~680** on the server.

# %% tags=["nbval-check-output"]
serve = plan_serving(m, g, N, context_len=CTX)   # memlib.plan.plan_serving: every tp/ep layout, fp8 as released
for p in serve.feasible:
    print(f"{p.describe()}: weights {GB(p.weight_bytes)}/GPU, KV {GB(p.kv_cache_bytes)}/GPU, "
          f"batch {p.max_batch.value} per attention group, {p.sequences} sequences")
tp_only = next(p for p in serve.feasible if p.settings["tp"] == N and p.settings["ep"] == 1)
pencil = {"tensor parallel": 110, "expert parallel + DP attention": 680}   # the round numbers above
print(f"memlib / pencil: {tp_only.sequences / pencil['tensor parallel']:.2f} and "
      f"{serve.best.sequences / pencil['expert parallel + DP attention']:.2f}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
best = serve.best
act = best.estimate.breakdown["activations"]
display(Markdown(
    f"memlib: **{best.describe()}** holds **{best.sequences} chats of 8k tokens** "
    f"({best.max_batch.value} per GPU, each GPU with {GB(best.weight_bytes)} of weights and {GB(best.kv_cache_bytes)} "
    f"of cache); tensor parallel over 8 holds **{tp_only.sequences}**, all of them replicated on every GPU. The pencil "
    f"({pencil['tensor parallel']} and {pencil['expert parallel + DP attention']}) left out what `memlib.fits` keeps "
    f"free: the CUDA context, 5% allocator headroom and the prefill of one 8,192-token chunk ({GB(act)} of "
    f"activations per GPU): {tp_only.sequences / pencil['tensor parallel'] - 1:+.0%} and "
    f"{best.sequences / pencil['expert parallel + DP attention'] - 1:+.0%}. "
    f"**{'Eight H200s serve it' if serve.feasible else 'Eight H200s cannot serve it'}**, and a practitioner runs it "
    "the way this ranking says, with both flags: SGLang `--tp 8 --dp 8 --enable-dp-attention` alone is "
    "data-parallel attention with *tensor-parallel* MoE layers; the ep = 8 layout adds `--ep 8` (SGLang docs, "
    "DeepSeek usage), or vLLM `--data-parallel-size 8 --enable-expert-parallel`, for throughput; plain tensor parallel 8 for the lowest latency at small batch. "
    "The price of expert parallelism is an all-to-all before and after every MoE layer (section 8)."))

# %% [markdown]
# ### Step 6 · Full fine-tuning: 16 bytes per parameter, all of them
#
# ✏️ **Back of the envelope.** Mixed-precision AdamW: bf16 weights 2 + bf16 gradients 2 + fp32
# master, m, v 12 = 16 bytes per parameter, for every expert (each is trained when tokens reach it):
# 671e9 x 16 B ≈ **10.7 TB**. ZeRO-3 divides it by the GPU count: 10.7 TB / 150 GB ≈ **72 H200s**,
# / 85 GB ≈ **127 H100s**. Expert parallelism does not divide it further: it changes *who* holds which
# expert, not how many bytes there are.

# %% tags=["nbval-check-output"]
states = zero_model_state_bytes(m.num_params, 0, 1)   # memlib.zero: (2 + 2 + 12) x psi
ft = {gpu: min_gpus_sharded(m, gpu, seq_len=FT_SEQ) for gpu in (GPU, "h100-80gb")}   # memlib.moe.min_gpus_sharded
for gpu, r in ft.items():
    e = r.estimate
    print(f"{gpu}: {r.describe()}; peak {GB(e.peak_bytes)} in {e.phase}, margin {GB(r.verdict.margin_bytes)}, "
          f"{r.time.tokens_per_s_per_gpu:.0f} tokens/s/GPU")
pencil = {GPU: 72, "h100-80gb": 127}   # 10.7 TB / 150 GB and / 85 GB, from above
print(f"model states {states / 1e12:.2f} TB ({states // m.num_params} B/param); memlib / pencil: "
      + ", ".join(f"{gpu} {ft[gpu].count / n:.2f}" for gpu, n in pencil.items()))

# %% jupyter={"source_hidden": true} tags=["hide-input"]
h2 = ft[GPU]
parts = h2.estimate.breakdown
display(Markdown(
    f"memlib: **{TB(states)}** of model states; the fewest whole nodes that fit are **{h2.count} H200s** "
    f"(ZeRO-3, expert parallel {h2.ep}, full recompute, {FT_SEQ:,}-token sequences) or **{ft['h100-80gb'].count} "
    f"H100s** (expert parallel {ft['h100-80gb'].ep}). The pencil's {pencil[GPU]} and {pencil['h100-80gb']} left out what each GPU holds besides its "
    f"{GB(states / h2.count)} share of the states: the MoE layer ZeRO-3 gathers ({GB(parts['gathered_parameters'])}), "
    f"the backward's temporaries ({GB(parts['temporaries'])}), checkpointed activations ({GB(parts['activations'])}), "
    f"the CUDA context and headroom: {h2.count / pencil[GPU] - 1:+.0%} and "
    f"{ft['h100-80gb'].count / pencil['h100-80gb'] - 1:+.0%}. "
    f"Expert parallelism matters here, not for the states but for the gather: without it each GPU would gather all "
    f"{m.num_experts} experts of a layer at once. Full recompute is required: without it one 4k sequence keeps "
    f"{GB(estimate_training(m, seq_len=FT_SEQ, zero_stage=3, dp=h2.count, ep=h2.ep).breakdown['activations'])} of "
    "activations per GPU. These estimates rest on the harness's measured DeepSeek-V3-shaped runs (section 10)."))

# %% [markdown]
# ### Step 7 · LoRA and QLoRA: what memlib refuses, and the honest answer
#
# ✏️ **Back of the envelope.** LoRA trains small adapters, but the frozen base must still be on the
# GPUs: 671e9 x 2 B ≈ **1.34 TB** in bf16 (the weights LoRA recipes load), 1.34 TB / 85 GB ≈
# **16 H100s** before a single adapter or activation. A 4-bit base: 671e9 x 0.5 B ≈ 336 GB, 4 H100s.

# %% tags=["nbval-check-output"]
try:
    estimate_training(m, finetune="lora", lora_rank=16)   # memlib.estimate_training
    refusal = "accepted"
except ValueError as err:
    refusal = str(err)
h100 = get_gpu("h100-80gb")
nf4_total = estimate_inference(m, batch=1, context_len=1, weights="nf4").weight_bytes
floors = {fmt: math.ceil(nbytes / usable_bytes(h100)) for fmt, nbytes in
          (("bf16", bf16_total), ("fp8", fp8_total), ("nf4", nf4_total))}
print(refusal)
print(f"frozen base: bf16 {GB(bf16_total)}, fp8 {GB(fp8_total)}, nf4 {GB(nf4_total)}; H100s for the weights alone: {floors}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"memlib **refuses** LoRA and QLoRA on this model: *{refusal}* It has no measured run to stand on, and the layout "
    "differs from a LLaMA's: transformers stores a layer's 256 routed experts as stacked 3-D parameters, which peft's "
    "usual `target_modules` (nn.Linear layers) does not reach (peft's newer `target_parameters` option does, with its own "
    "buffers), and MLA's low-rank projections are not LLaMA's q/k/v/o. What memlib *can* say is the floor: the frozen "
    f"base is {GB(bf16_total)} in bf16, so **at least {floors['bf16']} H100s** (or {math.ceil(bf16_total / usable_bytes(g))} "
    f"H200s) hold its weights alone, {floors['nf4']} H100s for a 4-bit base ({GB(nf4_total)}). The honest answer: LoRA "
    "saves the optimizer states and gradients, not the base; practitioners load the bf16 base over a few nodes with "
    "expert and pipeline parallelism (Colossal-AI's recipe: 24 H100s, short sequences; section 10), and a 4-bit base "
    "needs MoE-aware 4-bit kernels the common recipe (bitsandbytes + peft) does not have for stacked experts."))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Charts · 图
#
# **Per GPU on 8 × H200 at the largest batch of 8k chats** (`memlib.viz.breakdown_bars`). Look at the
# split: tensor parallel keeps less weight per GPU but fills the rest with a replicated cache; expert
# parallel with data-parallel attention keeps more weight per GPU but each GPU's cache serves its own
# chats. The bf16 bar (one chat) is over the line.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
bars = {"tensor par. 8,\nfp8": tp_only.estimate, "expert par. 8 +\nDP attention, fp8": serve.best.estimate,
        "tensor par. 8,\nbf16 (1 chat)": w["bf16"]}
fig, ax = plt.subplots(figsize=(7.5, 3.6))
breakdown_bars(bars, gpu=GPU, ax=ax, title=f"DeepSeek-V3 on 8 x H200, {CTX:,}-token chats: per-GPU memory")
ax.set_ylim(top=185)  # room for the labels under the title
plt.show()

# %% [markdown]
# **KV cache of one sequence against its length** (`memlib.viz.sweep`, log scale). Look at the gap between the
# lines: the latent cache stays a small fraction of a GPU even at 128k tokens; the same attention stored as full
# keys and values outgrows a whole H200 (the dotted line marks where) on its own.

# %%
lengths = [2 ** k for k in range(10, 18)]   # 1k ... 128k tokens
curves = {k: [kv_cache_bytes(mod, 1, n, mla_cache=mla) for n in lengths] for k, (mod, mla) in caches.items()}
fig, ax = plt.subplots(figsize=(7, 3.4))
sweep(lengths, curves, gpu=GPU, ax=ax, logx=True, xlabel="tokens in one sequence",
      title="KV cache of one sequence: MLA latent vs full K/V vs GQA")
ax.set_yscale("log")
ax.set_ylabel("GiB (one sequence)")
plt.show()

# %% [markdown]
# **Full fine-tuning per GPU against the number of H200s** (ZeRO-3, full recompute, 4k tokens). Look at where
# each line crosses the dashed capacity (the dotted line marks the largest count that still does not fit, with the
# CUDA context and headroom `fits` adds): expert parallelism moves it left because each GPU gathers 1/ep of a
# layer's experts. The charts are in GiB, what torch shows.

# %%
counts = list(range(160, 55, -8))
runs = {f"expert parallel {ep}": [estimate_training(m, seq_len=FT_SEQ, recompute="full", zero_stage=3, dp=n, ep=ep)
                                  for n in counts] for ep in (1, 8)}   # memlib.estimate_training, per GPU
fig, ax = plt.subplots(figsize=(7, 3.4))
sweep(counts, {k: [e.peak_bytes for e in v] for k, v in runs.items()}, gpu=GPU, ax=ax,
      xlabel="number of H200s (ZeRO-3 data parallel)", title="DeepSeek-V3 full fine-tuning: per-GPU peak")
plt.show()
first = {k: min((n for n, e in zip(counts, v) if fits(e, g).fits), default=None) for k, v in runs.items()}
display(Markdown("Fewest H200s on the chart: " + "; ".join(f"{k}: {n if n else f'none up to {max(counts)}'}"
                                                          for k, n in first.items()) + "."))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. Playground · 动手试
#
# Try: weights bf16 (eight H200s stop fitting; move GPUs to 16); the MLA cache "full" (transformers'
# cache: a handful of chats); then Mixtral-8x7B or Qwen3-235B-A22B on two or four GPUs, and watch the
# active share in the first line.

# %%
MoEServingPlayground(model=MODEL, gpu=GPU, count=N, context=CTX)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8. Follow-up questions · 追问
#
# ### Why does expert parallelism need an all-to-all?

# %% tags=["nbval-check-output"]
t = h2.time   # memlib.step_time of the fine-tuning layout of step 6 (memlib.timing.ep_all_to_all_bytes)
tokens = FT_SEQ * h2.estimate.setup.micro_batch
a2a_per_layer = 6 if h2.estimate.setup.recompute == "full" else 4  # all-to-alls per MoE layer and micro-batch
print(f"ep={h2.ep}, recompute {h2.estimate.setup.recompute}: {a2a_per_layer} all-to-alls per MoE layer; "
      f"all-to-all {GB(t.ep_comm_bytes)} per GPU per step ({t.ep_comm_s:.2f} s exposed), "
      f"step {t.step_s:.1f} s, {t.tokens_per_s_per_gpu:.0f} tokens/s/GPU")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"Each GPU holds 1/{h2.ep} of the experts but computes attention for its own tokens; after the router picks a "
    f"token's {m.num_experts_per_tok} experts, its hidden state must travel to the GPUs that hold them (*dispatch*) "
    "and the results must come back (*combine*): one all-to-all each way per MoE layer, two more in the backward. "
    f"In the fine-tuning layout of step 6 that is **{GB(t.ep_comm_bytes)} per GPU per step** for {tokens:,} tokens "
    f"(tokens x top-{m.num_experts_per_tok} x hidden x 2 bytes, (ep-1)/ep of it leaving the GPU, x {m.num_moe_layers} "
    f"layers x {a2a_per_layer}: dispatch and combine in the forward and in the backward"
    f"{', and the forward pair again under full recompute' if a2a_per_layer == 6 else ''}; "
    f"`memlib.timing.ep_all_to_all_bytes`), {t.ep_comm_s:.2f} s of a {t.step_s:.1f} s step that compute cannot hide. Tensor parallelism "
    "would instead all-reduce every layer's output. DeepSeek limits each token to experts on at most 4 nodes and "
    "sends the dispatch in fp8 to keep this traffic down (DeepSeek-V3 report, Secs. 2.1.2 and 3.3)."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Capacity factor and dropped tokens

# %% tags=["nbval-check-output"]
cf = {c: estimate_training(m, seq_len=FT_SEQ, zero_stage=3, dp=h2.count, ep=h2.ep, capacity_factor=c)
      for c in (None, 1.25, 2.0)}   # no recompute: the routed activations show
for c, e in cf.items():
    print(f"capacity factor {c}: {e.counts['routed_rows']:,} routed rows per MoE layer, activations "
          f"{GB(e.breakdown['activations'])}, peak {GB(e.peak_bytes)}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
none_, c125, c2 = cf.values()
display(Markdown(
    f"GShard-style implementations give each expert a fixed buffer of capacity factor x tokens x top-k / experts rows; "
    f"tokens beyond it are **dropped** (they skip the expert through the residual). A {FT_SEQ:,}-token sequence "
    f"routes {none_.counts['routed_rows']:,} (token, expert) rows per layer; at capacity factor 1.25 the buffers hold "
    f"{c125.counts['routed_rows']:,}, at 2.0 {c2.counts['routed_rows']:,}, and without recompute the activations grow "
    f"from {GB(none_.breakdown['activations'])} to {GB(c125.breakdown['activations'])} and "
    f"{GB(c2.breakdown['activations'])} per GPU. Which tokens are dropped depends on how balanced the router "
    "is, which memlib cannot know. DeepSeek-V3 drops none in training or inference (its report, Sec. 2.1.2), and "
    "vLLM and SGLang are dropless: the default here is dropless (`capacity_factor=None`)."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Router load balancing: what happens if the router is skewed?

# %% tags=["nbval-check-output"]
touched = {t_: expected_experts_touched(m.num_experts, m.num_experts_per_tok, t_) for t_ in (1, 8, 32, 128, 1024)}
print({t_: round(v, 1) for t_, v in touched.items()})   # memlib.moe.expected_experts_touched, uniform routing

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    "A router that favours a few experts overloads the GPUs holding them: under expert parallelism the slowest "
    "GPU sets the step, and with a capacity factor the overflow is dropped. Switch Transformers and GShard add an "
    "auxiliary loss that rewards a uniform load (memlib counts its router logits with `router_aux_loss=True`); "
    "DeepSeek-V3 instead adds a per-expert bias to the routing scores, raised for under-loaded experts and lowered "
    "for over-loaded ones, with only a tiny sequence-wise auxiliary loss. With uniform routing a layer's experts are "
    "touched as follows: " + ", ".join(f"{t_:,} tokens → {v:.0f} of {m.num_experts}" for t_, v in touched.items())
    + ". Balanced routing is what makes every expert busy, and every expert's weights needed."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Expert load at inference, and DeepSeek's bf16 optimizer moments

# %% tags=["nbval-check-output"]
# tokens each expert gets per decode step: batch x top-k / experts; an fp8 expert matmul does 2 FLOP per weight
# byte per token, so it reaches the H100's fp8 ridge (memlib.cost.conventions.ridge_flop_per_byte) at ridge / 2 tokens
per_expert = {b: b * m.num_experts_per_tok / m.num_experts for b in (serve.best.sequences, 32 * 256)}
tokens_at_ridge = ridge_flop_per_byte("h100-80gb", "fp8") / 2
# DeepSeek-V3 keeps AdamW's moments in bf16 (report, Sec. 3.3.3): fp32 master 4 + m 2 + v 2 = K of 8, plus 16-bit
# weights and gradients (memlib.zero.zero_model_state_bytes with k=8)
states_bf16_moments = zero_model_state_bytes(P, 0, 1, k=8)
print({b: round(t, 1) for b, t in per_expert.items()}, f"tokens per expert per step; ridge at {tokens_at_ridge:.0f}")
print(f"states: {states / 1e12:.2f} TB at 16 B/param, {states_bf16_moments / 1e12:.2f} TB with bf16 moments "
      f"({states_bf16_moments / P:.0f} B/param)")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
b0, b1 = per_expert
display(Markdown(
    f"Each decode step gives every expert batch × {m.num_experts_per_tok} / {m.num_experts} tokens: "
    f"**{per_expert[b0]:.0f}** at the {b0} chats of one 8 × H200 node, far below the ~{tokens_at_ridge:.0f} tokens an "
    f"fp8 expert matmul needs to be compute-bound, so every expert's weights are read for a handful of tokens. "
    f"That is why DeepSeek decodes with large expert parallelism (the report deploys decoding on 320 GPUs): "
    f"{b1:,} sequences across the deployment give each expert **{per_expert[b1]:.0f}** tokens per step. Skew makes "
    f"it worse, since the GPU holding a hot expert sets the step; the answer is load balancing at inference "
    f"(DeepSeek's EPLB), which duplicates hot experts as *redundant experts* on other GPUs. In training, "
    f"DeepSeek-V3 stores AdamW's moments in bf16: **{states_bf16_moments / P:.0f} B/param** with 16-bit gradients, "
    f"{states_bf16_moments / 1e12:.1f} TB of states instead of {states / 1e12:.1f} TB at 16 (the report keeps the "
    f"master weights and the gradients it accumulates in fp32, which adds 2 B/param to that count)."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Is MoE decode cheap in memory bandwidth too?

# %% tags=["nbval-check-output"]
read = {b: decode_weight_bytes(m, b) for b in (1, 8, 32, 128, 512)}   # memlib.moe.decode_weight_bytes (fp8 weights)
for b, r in read.items():
    print(f"batch {b}: {GB(r)} of weights read per decode step, {GB(r / b)} per token")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"Only at small batches. A decode step reads every weight it uses from HBM once. With one sequence that is the "
    f"active share, **{GB(read[1])}** of the {GB(fp8_total)}, so a single chat decodes like a 37B model. With "
    f"{max(read):,} sequences in flight the batch touches nearly every expert and the step reads "
    f"**{GB(read[max(read)])}**, the whole model, shared by {max(read):,} tokens ({GB(read[max(read)] / max(read))} "
    "each), exactly what a dense model of the same total size reads per token at that batch. MoE's advantage at a "
    "large batch is FLOPs, not bandwidth; its memory *capacity* need is always the total."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Can you offload the experts to CPU memory?

# %% tags=["nbval-check-output"]
q = estimate_inference(m, batch=1, context_len=CTX, weights="int4-gptq").weight_parts   # 4-bit: the local-inference case
host = q["experts"]
gpu_side = sum(q.values()) - host
print(f"4-bit routed experts {GB(host)} (host RAM); the rest {GB(gpu_side)} + latent cache "
      f"{GB(kv_bytes_per_token(m) * CTX)} per 8k chat (GPU)")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"Yes, and local runners do (KTransformers, llama.cpp's `--override-tensor`): keep attention, the shared experts, "
    f"the dense layers and the cache on the GPU and the routed experts in host RAM, computed by the CPU. In 4-bit, "
    f"memlib puts **{GB(host)}** of routed experts in host RAM and **{GB(gpu_side)}** of the rest on the GPU, plus "
    f"{GB(kv_bytes_per_token(m) * CTX)} of latent cache per 8k chat: consistent with KTransformers' \"14GB VRAM and "
    "382GB DRAM\" (section 10). What memlib cannot say is the speed: it does not model CPU matmul throughput or "
    "which experts a prompt's tokens pick, and every decode step needs 8 experts per layer from host memory."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### And on other GPUs?

# %% tags=["nbval-check-output"]
other = {(gpu, n, fmt): plan_serving(m, gpu, n, context_len=CTX, weights=fmt).best   # memlib.plan.plan_serving
         for gpu, n, fmt in (("h100-80gb", 8, "auto"), ("h100-80gb", 16, "auto"), ("h200", 16, "bf16"),
                             ("a100-80gb", 8, "int4-awq"), ("b200", 8, "auto"), ("mi300x", 8, "auto"))}
for (gpu, n, fmt), p in other.items():
    print(f"{n} x {gpu}, {fmt}: " + (f"{p.describe()}, {p.sequences} sequences" if p else "no layout fits"))

# %% jupyter={"source_hidden": true} tags=["hide-input"]
rows = [[f"{n} x {gpu}", fmt if fmt != "auto" else "fp8 (as released)",
         GB(p.weight_bytes) if p else "—", p.sequences if p else "does not fit"]
        for (gpu, n, fmt), p in other.items()]
display(Markdown(markdown_table(rows, ["GPUs", "weights", "weights per GPU (best layout)", "8k chats"])))
h8, h16 = other["h100-80gb", 8, "auto"], other["h100-80gb", 16, "auto"]
big = [other["b200", 8, "auto"], other["mi300x", 8, "auto"]]
display(Markdown(
    f"Eight H100s **{'cannot' if h8 is None else 'can'}** hold the fp8 weights with room to serve; two nodes "
    f"{'can' if h16 else 'cannot'}. The A100 has {'no' if get_gpu('a100-80gb').fp8_tflops is None else ''} fp8 tensor "
    "cores, so it serves a 4-bit (AWQ) or int8 copy, or an upcast bf16 copy on four nodes (section 10). B200 and "
    f"MI300X hold the fp8 model in one node with room for {min(p.sequences for p in big):,} or more 8k chats."))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9. Pitfalls · 避坑

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown("\n".join([
    f"- Sizing a MoE by its active parameters: \"37B in fp8 fits one H100\" forgets the other "
    f"{fmt_count(m.num_params - m.num_active_params)}; every expert is resident ({GB(fp8_total)}).",
    f"- Upcasting the fp8 checkpoint to bf16 without need: {GB(bf16_total)}, no longer one H200 node.",
    "- Dividing MLA's cache by the tensor-parallel degree: the latent is one vector per token, replicated on every "
    "tensor-parallel GPU (SGLang: \"KV cache will be duplicated among all TP ranks\").",
    f"- Measuring MLA with transformers' eager cache and concluding MLA saves nothing: it stores full K/V, "
    f"{kv_bytes_per_token(m, mla_cache='full') // kv_bytes_per_token(m)}x the latent.",
    "- Expecting expert parallelism to shrink the fine-tuning states: ZeRO-3 already divides 16 bytes per parameter "
    "by every GPU; ep shrinks what a layer gathers and spreads the expert work.",
    f"- Assuming LoRA makes a 671B model small: the frozen base is still {TB(bf16_total)} in bf16; LoRA removes the "
    "optimizer "
    "states and gradients.",
    f"- Expecting MoE decode to read only the {fmt_count(m.num_active_params)} active parameters per step at production "
    "batches: a large batch touches nearly every "
    "expert.",
    f"- Quoting \"{R(flops_ratio)}x cheaper\" for everything: it is FLOPs; memory, checkpoint size and load time "
    "follow the total.",
])))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10. Deep dive (skip on first read) · 深入（可跳过）
#
# ### Fact-check · 纠错
#
# Circulating figures about DeepSeek-V3 and MoE memory, each quoted from its source, against memlib
# (✅ right · ⚠️ partly · ❌ wrong).

# %% tags=["nbval-check-output"]
# DeepSeek-V2 (deepseek-ai/DeepSeek-V2 config.json) and DeepSeek LLM 67B (95 layers, 8 KV heads of 128: DeepSeek LLM
# report, Table 2), for the "93.3% smaller KV cache" claim
v2 = memlib.Model.from_hf_config({
    "architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2", "hidden_size": 5120,
    "num_hidden_layers": 60, "num_attention_heads": 128, "num_key_value_heads": 128, "intermediate_size": 12288,
    "moe_intermediate_size": 1536, "n_routed_experts": 160, "n_shared_experts": 2, "num_experts_per_tok": 6,
    "first_k_dense_replace": 1, "moe_layer_freq": 1, "kv_lora_rank": 512, "q_lora_rank": 1536,
    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 102400,
    "max_position_embeddings": 163840, "tie_word_embeddings": False}, name="deepseek-v2")
v2_latent, v2_full = kv_bytes_per_token(v2), kv_bytes_per_token(v2, mla_cache="full")
ds67 = gqa_kv_bytes_per_token(95, 8, 128)            # memlib.inference: 2 x layers x KV heads x head_dim x 2 B
v2_6bit = v2_latent * 6 / 16                         # the deployed cache: "6 bits on average" per element
pretrain_flops = cost.training_flops(m, 14.8e12, seq_len=FT_SEQ)   # 6N (active) + attention, 14.8T tokens
# the collection's convention: DeepSeek's own 250 GFLOP/token over the H800's bf16 dense peak
implied_mfu = deepseek_v3_implied_mfu()          # memlib.cost.conventions.deepseek_v3_implied_mfu
memlib_mfu = pretrain_flops / (2.664e6 * 3600 * cost.peak_flops("h100-80gb"))   # memlib's 6N + attention, no causal discount
mix = get_model("mixtral-8x7b")
mix_read32 = decode_weight_bytes(mix, 32, weights="bf16")
mix_bf16 = estimate_inference(mix, batch=1, context_len=1, weights="bf16").weight_bytes
kv_replicated = kv_bytes_per_token(m, tp=N) == kv_bytes_per_token(m)   # per GPU under tensor parallel 8
other_serving = {k: plan_serving(m, k[0], k[1], context_len=CTX, weights=k[2]).best
                 for k in (("h200", 16, "bf16"), ("h100-80gb", 16, "bf16"), ("h100-80gb", 32, "bf16"),
                           ("a100-80gb", 32, "bf16"), ("h200", 4, "int4-awq"))}
print(f"V2: latent {v2_latent:,}, full {v2_full:,} B/token; DeepSeek 67B {ds67:,}; V2 6-bit {v2_6bit:,.0f}")
print(f"DeepSeek-V3 pre-training: implied MFU {implied_mfu:.1%} on DeepSeek's 250 GFLOP/token; "
      f"{memlib_mfu:.1%} on memlib's {pretrain_flops:.3g} FLOPs (6N + attention, no causal discount)")
print({f"{k[1]} x {k[0]} {k[2]}": (p.sequences if p else 0) for k, p in other_serving.items()})

# %% jupyter={"source_hidden": true} tags=["hide-input"]
V3, V2 = "[DeepSeek-V3 report](https://arxiv.org/abs/2412.19437)", "[DeepSeek-V2 report](https://arxiv.org/abs/2405.04434)"
INS = "[Zhao et al. 2025, Insights into DeepSeek-V3](https://arxiv.org/abs/2505.09343)"
SGL = "[SGLang docs, DeepSeek V3/V3.1/R1 Usage](https://github.com/sgl-project/sglang/blob/main/docs/basic_usage/deepseek_v3.md)"
HF = "[Hugging Face blog, Mixture of Experts Explained](https://huggingface.co/blog/moe)"
MIS = "[Mistral AI, Mixtral of experts](https://mistral.ai/news/mixtral-of-experts)"
p16 = other_serving[("h200", 16, "bf16")]
h16 = other["h100-80gb", 16, "auto"]
facts = [
    ["\"671B total parameters with 37B activated for each token\"", f"{V3}, abstract",
     f"{fmt_count(m.num_params)} total, {fmt_count(m.num_active_params)} active ({fmt_count(m.active_params_without_embedding)} "
     "without the input embedding)", "✅", "memlib counts tensor by tensor; DeepSeek's 37B leaves out the input embedding"],
    ["\"DeepSeek-V3 requires only 2.788M H800 GPU hours for its full training\"; pre-training \"2.664M H800 GPU hours\" "
     "on \"14.8T tokens\"", f"{V3}, abstract and Table 1",
     f"{implied_mfu:.0%} MFU on DeepSeek's own 250 GFLOP/token against the H800's bf16 dense peak "
     f"(memlib's 6N + attention without a causal discount: {memlib_mfu:.0%})",
     "⚠️", "plausible, and the collection's one convention is the publisher's FLOPs per token over the bf16 dense "
           "peak; the report gives no MFU and ran its matmuls in FP8 (twice the bf16 peak)"],
    ["\"reduces the KV cache by 93.3%\"", f"{V2}, abstract (compared with DeepSeek 67B)",
     f"latent {v2_latent:,} B vs DeepSeek 67B's GQA {ds67:,} B per token: {1 - v2_latent / ds67:.1%} in bf16; "
     f"with the deployed 6-bit cache {1 - v2_6bit / ds67:.1%}; vs V2's own full K/V ({v2_full:,} B) "
     f"{1 - v2_latent / v2_full:.1%}", "⚠️",
     "right, but it compares with a GQA model and includes KV quantization (\"6 bits on average\"); MLA alone "
     f"in bf16 is {1 - v2_latent / ds67:.0%}"],
    ["\"DeepSeek-V3 (MLA) 70.272 KB … LLaMA-3.1 405B (GQA) 516.096 KB\" per token (BF16)", f"{INS}, Table 1",
     f"{kv_bytes_per_token(m):,} B and {kv_bytes_per_token(get_model(GQA_PEER)):,} B", "✅", "exact to the byte"],
    ["\"DeepSeek-V3 MoE 671B … 250 GFLOPS/token; LLaMa-405B Dense … 2448 GFLOPS/token\" (training, 4k)",
     f"{INS}, Table 2", f"{with_attention / 1e9:,.0f} and {peer / 1e9:,.0f} GFLOP per token "
     f"({peer / with_attention:.1f}x; theirs {2448 / 250:.1f}x)", "✅",
     f"the ratio agrees; memlib's PaLM attention term (no causal discount, 192-wide heads for QK and V) gives "
     f"{with_attention / 250e9 - 1:+.0%} over DeepSeek's count"],
    ["\"Mixtral has 46.7B total parameters but only uses 12.9B parameters per token\"", MIS,
     f"{fmt_count(mix.num_params)} and {fmt_count(mix.num_active_params)}",
     "✅" if round(mix.num_params / 1e8) == 467 and round(mix.num_active_params / 1e8) == 129 else "❌",
     "right to the digits quoted"],
    ["\"It, therefore, processes input and generates output at the same speed and for the same cost as a 12.9B model\"",
     MIS, f"FLOPs: yes; weights {GB(mix_bf16)} in bf16 (a 12.9B: {GB(2 * mix.num_active_params)}); a batch of 32 "
     f"reads {GB(mix_read32)} of weights per decode step", "⚠️",
     "true for compute; memory is that of a 47B model, and at a batch most experts are read every step"],
    ["\"we'll need to have enough VRAM to hold a dense 47B parameter model\"", f"{HF}, What is a Mixture of Experts",
     f"Mixtral weights {GB(mix_bf16)} in bf16; its KV cache {kv_bytes_per_token(mix):,} B per token, a 7B's", "✅",
     "right for the weights; the cache is set by the attention, not the total size"],
    ["MoEs \"Require high VRAM as all experts are loaded in memory\"", f"{HF}, TL;DR",
     f"weights and 16 B/param of training states follow the total ({TB(states)} for DeepSeek-V3); the KV cache "
     f"({kv_bytes_per_token(m):,} B/token) and routed activations (tokens x top-k) do not", "⚠️",
     "weights and optimizer states, yes; \"as much as a dense model of its size\" overstates the cache and activations"],
    ["\"Full precision FP8 (recommended) | 8 x H200\"", SGL,
     f"{serve.best.sequences} chats of 8k (expert parallel + DP attention), {tp_only.sequences} with tensor parallel",
     "✅" if serve.feasible else "❌", "fits, with room for the cache"],
    ["FP8: \"2 x 8 x H100/800/20\"", SGL,
     f"8 x H100: {'no layout fits' if other['h100-80gb', 8, 'auto'] is None else 'fits'}; 16 x H100: "
     f"{h16.sequences if h16 else 0} chats of 8k", "✅" if h16 and other["h100-80gb", 8, "auto"] is None else "❌",
     f"{GB(fp8_total)} of fp8 weights leave eight H100s ({GB(usable_bytes(get_gpu('h100-80gb')))} each) no room"],
    ["BF16 \"(upcast from original FP8) | 2 x 8 x H200 … 4 x 8 x H100/800/20\"", SGL,
     f"16 x H200: {p16.sequences if p16 else 0} chats; 16 x H100: "
     f"{other_serving[('h100-80gb', 16, 'bf16')].sequences if other_serving[('h100-80gb', 16, 'bf16')] else 'none'}; "
     f"32 x H100: {other_serving[('h100-80gb', 32, 'bf16')].sequences} chats",
     "✅" if p16 and other_serving[("h100-80gb", 32, "bf16")] else "❌", f"{GB(bf16_total)} of bf16 weights"],
    ["Quantized weights (AWQ): \"8 x A100/A800\"; (W4A8) \"4 x H200\"", SGL,
     f"8 x A100 int4-awq: {other['a100-80gb', 8, 'int4-awq'].sequences} chats; 4 x H200: "
     f"{other_serving[('h200', 4, 'int4-awq')].sequences} chats",
     "✅" if other["a100-80gb", 8, "int4-awq"] and other_serving[("h200", 4, "int4-awq")] else "❌",
     f"4-bit weights: {GB(nf4_total)}"],
    ["\"If you do not use DP attention, KV cache will be duplicated among all TP ranks.\"", SGL,
     f"tensor parallel 8: {GB(tp_only.kv_cache_bytes)} of cache per GPU for {tp_only.max_batch.value} chats, the same "
     "on every GPU", "✅" if kv_replicated else "❌",
     "the latent has no head dimension to split"],
    ["\"Tensor-parallel is usually better for low-latency / low-load scenarios, while data-parallel works better for "
     "high-load workloads.\"", "[vLLM recipes, DeepSeek-V3](https://docs.vllm.ai/projects/recipes/en/latest/DeepSeek/DeepSeek-V3.html)",
     f"capacity {tp_only.sequences} vs {serve.best.sequences} chats of 8k",
     "✅" if serve.best.sequences > tp_only.sequences else "❌", "memlib sizes capacity, not latency"],
    ["\"The minimum hardware requirement for sample command is … 24 H100/H800 GPUs (with `ep=8,pp=3`)\" (LoRA, bf16 "
     "weights)", "[Colossal-AI ColossalChat examples README, SFT for DeepSeek V3]"
     "(https://github.com/hpcaitech/ColossalAI/tree/main/applications/ColossalChat/examples)",
     f"bf16 base {GB(bf16_total)}: {GB(bf16_total / 24)} per GPU over 24; at least {floors['bf16']} H100s for the "
     "weights alone", "⚠️", "plausible (their sample uses 256-token sequences); memlib does not model LoRA on MoE"],
    ["\"Running its Q4_K_M version using only 14GB VRAM and 382GB DRAM\"",
     "[KTransformers README](https://github.com/kvcache-ai/ktransformers)",
     f"4-bit: routed experts {GB(host)} in host RAM, the rest {GB(gpu_side)} on the GPU", "⚠️",
     "consistent in memory (GGUF's Q4_K_M is ~4.8 bits, a little more than memlib's 4-bit layout); speed not modelled"],
]
display(Markdown(markdown_table(facts, ["claim", "source", "memlib", "verdict", "why"])))

# %% [markdown]
# ### Where the 671B live

# %% tags=["nbval-check-output"]
parts_fp8 = estimate_inference(m, batch=1, context_len=1).weight_parts   # memlib.estimate_inference, by tensor kind
parts_bf16 = estimate_inference(m, batch=1, context_len=1, weights="bf16").weight_parts
print({k: GB(v) for k, v in parts_fp8.items()})

# %% jupyter={"source_hidden": true} tags=["hide-input"]
labels = {"linear": "attention (MLA), dense and shared-expert MLPs, router", "experts": "routed experts",
          "embedding": "input embedding", "lm_head": "output head", "norm": "norms", "bias": "biases"}
rows = [[labels[k], GB(parts_fp8[k]), GB(parts_bf16[k])] for k in labels if parts_bf16[k] >= 5e7]
rows.append(["norms and biases", fmt_bytes(parts_fp8["norm"] + parts_fp8["bias"]),
             fmt_bytes(parts_bf16["norm"] + parts_bf16["bias"])])
rows.append(["total", GB(sum(parts_fp8.values())), GB(sum(parts_bf16.values()))])
display(Markdown(markdown_table(rows, ["weights", "fp8 as released (block-wise; the rest bf16)", "bf16"])))

# %% [markdown]
# ### Every serving layout on 8 × H200, at 8k, 32k and 128k

# %% tags=["nbval-check-output"]
by_ctx = {c: plan_serving(m, g, N, context_len=c) for c in CONTEXTS}   # memlib.plan.plan_serving
print({c: [p.sequences for p in r.feasible] for c, r in by_ctx.items()})

# %% jupyter={"source_hidden": true} tags=["hide-input"]
rows = []
for c, r in by_ctx.items():
    rows += [[f"{c // 1024}k", p.describe(), GB(p.weight_bytes), GB(p.kv_cache_bytes), p.max_batch.value, p.sequences]
             for p in r.feasible]
display(Markdown(markdown_table(rows, ["context", "layout", "weights/GPU", "KV cache/GPU", "batch per group",
                                       "sequences"])))
display(Markdown("Layouts with tensor parallel 1 and expert parallel below 8 hold no sequence: "
                 + "; ".join(f"ep={s['ep']}: {why}" for s, why in by_ctx[CTX].infeasible if s["tp"] == 1)))

# %% [markdown]
# ### Full fine-tuning on other GPUs

# %% tags=["nbval-check-output"]
ft_all = {(gpu, z): min_gpus_sharded(m, gpu, zero_stage=z, seq_len=FT_SEQ)   # memlib.moe.min_gpus_sharded
          for gpu in ("h100-80gb", "h200", "b200", "mi300x") for z in (3, "FULL_SHARD")}
print({f"{k[0]} {k[1]}": (r.count, r.ep) for k, r in ft_all.items()})

# %% jupyter={"source_hidden": true} tags=["hide-input"]
rows = [[gpu, "DeepSpeed ZeRO-3" if z == 3 else "FSDP FULL_SHARD (fp32 shards)", r.count, r.ep,
         GB(r.estimate.peak_bytes), GB(r.verdict.capacity_bytes)] for (gpu, z), r in ft_all.items()]
display(Markdown(markdown_table(rows, ["GPU", "sharding", "fewest GPUs (whole nodes)", "expert parallel",
                                       "peak per GPU", "torch sees per GPU"])))
display(Markdown(
    "FSDP under PyTorch AMP keeps fp32 parameters (4 bytes) where DeepSpeed keeps bf16 ones beside an fp32 master, "
    "and gathers bf16 copies under its mixed-precision policy: a node more on most GPUs. Pipeline layouts are not "
    "searched here; DeepSeek's own pre-training used 16-way pipeline, 64-way expert parallelism and ZeRO-1 over "
    "2,048 H800s (report, Sec. 3.2)."))

# %% [markdown]
# ### What the training estimates stand on
#
# `validation/results_families.json` holds small DeepSeek-V3- and V2-shaped models (MLA, routed and
# shared experts, dense first layers) built from transformers' own classes under FakeTensorMode and
# trained for two steps; memlib's estimate of each against the measured peak:

# %% tags=["nbval-check-output"]
cases = json.loads((Path("..") / "validation" / "results_families.json").read_text())["cases"]
mla = [c for c in cases if "measured" in c and c["family"].startswith(("deepseek", "mixtral", "qwen3-moe"))]
for c in mla:
    est = estimate_case(c["inputs"]).peak_bytes   # memlib.measured.estimate_case -> memlib.estimate_training
    print(f"{c['name']}: measured {gib(c['measured']['peak_bytes']):.3f} GiB, memlib {gib(est):.3f} GiB "
          f"({est / c['measured']['peak_bytes'] - 1:+.2%})")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 11. Further reading · 延伸阅读
#
# - DeepSeek-AI 2024, *DeepSeek-V3 Technical Report*, [arXiv:2412.19437](https://arxiv.org/abs/2412.19437) (MLA, DeepSeekMoE, auxiliary-loss-free balancing, FP8 training, DualPipe, deployment)
# - DeepSeek-AI 2024, *DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts Language Model*, [arXiv:2405.04434](https://arxiv.org/abs/2405.04434) (MLA, Sec. 2.1)
# - Zhao et al. 2025, *Insights into DeepSeek-V3: Scaling Challenges and Reflections on Hardware for AI Architectures*, [arXiv:2505.09343](https://arxiv.org/abs/2505.09343)
# - Jiang et al. 2024, *Mixtral of Experts*, [arXiv:2401.04088](https://arxiv.org/abs/2401.04088)
# - Fedus, Zoph, Shazeer 2022, *Switch Transformers*, [arXiv:2101.03961](https://arxiv.org/abs/2101.03961) (capacity factor, load-balancing loss)
# - Lepikhin et al. 2020, *GShard*, [arXiv:2006.16668](https://arxiv.org/abs/2006.16668) (expert capacity, all-to-all)
# - Rajbhandari et al. 2022, *DeepSpeed-MoE*, [arXiv:2201.05596](https://arxiv.org/abs/2201.05596) (expert parallelism with ZeRO)
# - Hugging Face, *Mixture of Experts Explained*, [huggingface.co/blog/moe](https://huggingface.co/blog/moe)
# - SGLang, *DeepSeek V3/V3.1/R1 Usage* (DP attention, block-wise FP8), [docs](https://github.com/sgl-project/sglang/blob/main/docs/basic_usage/deepseek_v3.md); vLLM recipes, [DeepSeek-V3](https://docs.vllm.ai/projects/recipes/en/latest/DeepSeek/DeepSeek-V3.html)
# - peft, *LoRA on nn.Parameter* (`target_parameters`, MoE experts), [huggingface/peft#2638](https://github.com/huggingface/peft/pull/2638)
