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
# # 05 · DeepSeek-V3: serve and fine-tune a 671B MoE · DeepSeek-V3 推理与微调要多少显存
#
# ## 1. The question · 问题
#
# > **DeepSeek-V3（总参数 671B，每 token 激活 37B）推理要多少显存、几张卡？微调呢？为什么 MoE 省算力却不省显存？**
# > <br> *How much memory does DeepSeek-V3 (671B total, 37B active) need to serve, and to fine-tune?
# > Why is MoE cheap in FLOPs but not in memory?*
#
# **Reading time:** core path ~14 min; the [deep dive](05_moe_memory_deep_dive.ipynb) (fact-check, every layout) is its own page.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
# %matplotlib inline
import math
import textwrap

import matplotlib.pyplot as plt

import memlib
from memlib.learn.chapters.ch05 import CONTEXTS, CTX, FT_SEQ, GPU, GQA_PEER, MODEL, N, TB
from memlib.learn.kit import GB, R
from memlib import cost, estimate_inference, estimate_training, fits, get_gpu, get_model
from memlib.hardware.fit import usable_bytes
from memlib.serving.inference import kv_bytes_per_token, kv_cache_bytes
from memlib.parallel.moe import min_gpus_sharded, routed_expert_params
from memlib.learn.playgrounds.moe import MoEServingPlayground
from memlib.parallel.plan import plan_serving
from memlib.serving import vllm_concurrency_for_estimate
from memlib.cost.timing import flops_per_token
from memlib.cost.conventions import mla_absorbed_attention_flops, mla_absorbed_intensity, ridge_flop_per_byte
from memlib.units import fmt_count
from memlib.learn.viz import breakdown_bars, sweep
from memlib.parallel.zero import zero_model_state_bytes


# The figures the 30-second answer quotes; section 5 derives each one step by step.
m, g = get_model(MODEL), get_gpu(GPU)
P, A = m.num_params, m.num_active_params
fp8_total = estimate_inference(m, batch=1, context_len=1).weight_bytes                    # step 2
bf16_total = estimate_inference(m, batch=1, context_len=1, weights="bf16").weight_bytes   # step 2
serve = plan_serving(m, g, N, context_len=CTX)                                            # step 5
tp_only = next(p for p in serve.feasible if p.settings["tp"] == N and p.settings["ep"] == 1)
states = zero_model_state_bytes(P, 0, 1)                                                  # step 6
flops_ratio = cost.training_flops(P, 1) / cost.training_flops(m, 1)                       # step 3
serve_en, serve_zh = ("fit", "放得下") if serve.feasible else ("do not fit", "放不下")
# vLLM at its default gpu_memory_utilization (0.9), on the same layout: every GPU an engine of its own (step 5)
vllm_chats = N // serve.best.settings["tp"] * int(vllm_concurrency_for_estimate(serve.best.estimate, g))
# "37B": DeepSeek's count, the active parameters without the input embedding (a lookup does no matmul; step 1)
a_total, a_active = f"{R(P / 1e9, 3)}", f"{R(m.active_params_without_embedding / 1e9)}"
a_vllm = f"{R(vllm_chats)}"
a_fp8, a_chats, a_states = f"{R(fp8_total / 1e9)}", f"{R(serve.best.sequences)}", f"{R(states / 1e12, 3)}"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. The 30-second answer · 30 秒回答
#
# > **EN** Memory follows all {eval}`a_total`B parameters; compute follows the {eval}`a_active`B active
# > ones. Serving keeps every expert resident: {eval}`a_fp8` GB of fp8 weights, so eight H200s
# > {eval}`serve_en`, and MLA's compressed cache leaves room for about {eval}`a_chats` 8k-token chats,
# > {eval}`a_vllm` at vLLM's default memory fraction. Levers: fp8 or 4-bit weights, expert parallelism
# > with data-parallel attention, more GPUs. Caveat: fine-tuning keeps gradients and optimizer states for
# > every expert, and even LoRA must hold the whole base.
#
# > **中文** 显存看全部 {eval}`a_total`B 参数，算力只看 {eval}`a_active`B 激活参数。推理时专家全部常驻：fp8 权重约
# > {eval}`a_fp8` GB，8 张 H200 {eval}`serve_zh`；MLA 的压缩缓存还能放约 {eval}`a_chats` 个 8k 对话，按 vLLM 默认
# > 显存比例约 {eval}`a_vllm` 个。手段：fp8 或 4-bit 权重、专家并行加数据并行注意力、更多卡。注意：微调要为每个专家存梯度和
# > 优化器状态，LoRA 也要放下整个底座。
#
# The long answer follows: every figure above is derived in section 5.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. What the interviewer is probing · 考察意图
#
# - **Total vs active.** Memory follows the total parameters, compute the active ones.
# - **MLA's cache.** A 576-number latent per token and layer, *replicated* under tensor parallelism.
# - **Expert vs tensor parallelism.** Why engines serve DeepSeek with data-parallel attention + EP.
# - **Formats and realism.** fp8 as released; full fine-tuning keeps 16 B/param of all 671B; LoRA
#   keeps the frozen base.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Words we use · 术语
#
# - **MoE, routed / shared expert, top-k**: many MLPs ("experts") per layer; a router sends each token to its top-k routed experts (256, top-8); a shared expert sees every token. **Active parameters**: those one token passes through.
# - **MLA**: keys and values rebuilt from a 512-number **latent** and a 64-number rope key per token and layer, the only things cached; **absorbed** at decode (up-projections folded into query and output). **GQA**: a few shared key/value heads.
# - **TP / EP / data-parallel attention**: matrices split over GPUs / whole experts spread over GPUs / each GPU runs attention, and caches, for its own chats. **All-to-all**: tokens sent to their experts' GPUs and back.
# - **Block-wise fp8**: 1-byte weights, an fp32 scale per 128 × 128 block. **ZeRO-3**: states sharded over all GPUs; **recompute**: keep each layer's input only. **LoRA**: adapters on a frozen base.
# - **EPLB, redundant experts**: DeepSeek's load balancer copies hot experts to more GPUs. **6N, ridge**: training FLOPs per token (N active); the FLOP per byte where a kernel stops being bandwidth-bound.
# - **GB / GiB**: 1e9 / 2**30 bytes; this notebook speaks GB (torch sees 150 GB of an H200).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. The answer, step by step · 推导
#
# ### Step 1 · Total and active parameters
#
# ✏️ **Back of the envelope.** 58 of the 61 layers hold 256 routed experts, each three 7168 × 2048
# matrices: 58 × 256 × 3 × 7168 × 2048 ≈ **654e9** parameters in routed experts, of 671e9. A token
# uses 8 of 256: 654e9 × 8 / 256 ≈ 20e9, plus the ~17e9 everything else has, ≈ **37e9** active.

# %% tags=["nbval-check-output"]
m = get_model(MODEL)               # memlib.get_model: counted tensor by tensor, as transformers counts
experts = routed_expert_params(m)  # memlib.parallel.moe.routed_expert_params
rest = m.num_params - experts
print(f"total {fmt_count(m.num_params)}: routed experts {fmt_count(experts)}, rest {fmt_count(rest)}")
print(f"active per token {fmt_count(A)}; without the input embedding "
      f"{fmt_count(m.active_params_without_embedding)}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s1_total, s1_active, s1_share = f"{fmt_count(P)}", f"{fmt_count(A)}", f"{A / P:.1%}"
s1_experts, s1_eshare, s1_rest = f"{fmt_count(experts)}", f"{experts / P:.1%}", f"{fmt_count(rest)}"
s1_routed_off, s1_active_off = f"{abs(experts / 654e9 - 1):.2%}", f"{37e9 / A - 1:+.1%}"
s1_noemb = f"{fmt_count(m.active_params_without_embedding)}"

# %% [markdown]
# memlib, tensor by tensor:
#
# | part | parameters | share |
# |---|---|---|
# | total | {eval}`s1_total` | |
# | routed experts | {eval}`s1_experts` | {eval}`s1_eshare` |
# | the rest: MLA, shared experts, three dense layers, router, embeddings | {eval}`s1_rest` | |
# | active per token | {eval}`s1_active` | {eval}`s1_share` |
#
# The pencil is off by {eval}`s1_routed_off` and {eval}`s1_active_off`. DeepSeek's "37B activated" matches
# the count without the input embedding ({eval}`s1_noemb`), the right N for FLOPs too: a lookup does no
# matmul. The multi-token-prediction module is not counted (transformers does not build it).

# %% [markdown]
# ### Step 2 · Weights: every expert resident, fp8 as released
#
# ✏️ **Back of the envelope.** The checkpoint stores the matrices in fp8: 671e9 × 1 B ≈ **671 GB**,
# / 8 GPUs ≈ **84 GB per GPU**, well under an H200's ~150 GB. Upcast to bf16 it doubles: 1.34 TB,
# 168 GB per GPU, over the H200.

# %% tags=["nbval-check-output"]
w = {fmt: estimate_inference(m, batch=1, context_len=CTX, weights=fmt, tp=N, prefill_tokens=CTX)
     for fmt in ("auto", "bf16")}   # memlib.estimate_inference; "auto": the checkpoint's block-wise fp8
fp8_total = estimate_inference(m, batch=1, context_len=1).weight_bytes   # all weights, one copy
bf16_total = estimate_inference(m, batch=1, context_len=1, weights="bf16").weight_bytes
for fmt, e in w.items():
    print(f"{e.setup.weights}: {GB(e.weight_bytes)} per GPU over {N}; one 8k chat fits: {fits(e, g).fits}")
print(f"all weights: fp8 {GB(fp8_total)}, bf16 {GB(bf16_total)}; torch sees {GB(usable_bytes(g))}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s2_fp8, s2_fp8_gpu, s2_over = f"{GB(fp8_total)}", f"{GB(w['auto'].weight_bytes)}", f"{fp8_total / 671e9 - 1:+.1%}"
s2_bf16, s2_bf16_gpu = f"{GB(bf16_total)}", f"{GB(w['bf16'].weight_bytes)}"
s2_fit = f"{'fit' if fits(w['bf16'], g).fits else 'do not fit'}"
s2_e, s2_k = f"{m.num_experts}", f"{m.num_experts_per_tok}"

# %% [markdown]
# memlib: **{eval}`s2_fp8`** in the released format, **{eval}`s2_fp8_gpu` per GPU** over eight; the
# pencil left out {eval}`s2_over` (an fp32 scale per 128 × 128 block; embeddings, head, norms and router in
# bf16). In bf16: {eval}`s2_bf16`, {eval}`s2_bf16_gpu` per GPU, and eight H200s **{eval}`s2_fit`** it. All
# {eval}`s2_e` experts are resident although a token uses {eval}`s2_k`: any may be needed next.

# %% [markdown]
# ### Step 3 · FLOPs follow the active parameters
#
# ✏️ **Back of the envelope.** Training costs 6 FLOPs per active parameter per token:
# 6 × 37e9 ≈ **222 GFLOP**, against 6 × 671e9 ≈ **4.0 TFLOP** for a dense model of the same total:
# **18×** fewer. Serving a token costs the forward only, 2 × 37e9 ≈ 74 GFLOP plus attention.

# %% tags=["nbval-check-output"]
six_n_active = cost.training_flops(m, 1)              # memlib.cost.training_flops: 6N, N active
six_n_dense = cost.training_flops(m.num_params, 1)    # 6N of a dense model of the same total
with_attention = flops_per_token(m, FT_SEQ)           # memlib.cost.timing: + 12·L·H·Q·T (PaLM, App. B)
peer = flops_per_token(GQA_PEER, FT_SEQ)
attn_absorbed = mla_absorbed_attention_flops(m, CTX)  # memlib.cost.conventions: 2·L·H·(2·d_c + d_r)·T
mla_ai, h100_ridge = mla_absorbed_intensity(m, CTX), ridge_flop_per_byte("h100-80gb")
h200_ridge = ridge_flop_per_byte(GPU)                 # the question's GPU: same FLOP/s, more bandwidth
print(f"6N {six_n_active / 1e9:,.0f} GFLOP/token (dense {six_n_dense / 1e12:.2f} TFLOP); + attention at 4k "
      f"{with_attention / 1e9:,.0f}; {GQA_PEER} {peer / 1e9:,.0f}")
print(f"absorbed MLA at 8k: {attn_absorbed / 1e9:,.0f} GFLOP of attention alone, {mla_ai:,.0f} FLOP/B "
      f"(ridge: H200 {h200_ridge:,.0f}, H100 {h100_ridge:,.0f})")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s3_active, s3_x = f"{six_n_active / 1e9:,.0f}", f"{six_n_dense / six_n_active:.1f}"
s3_attn_pct = f"{with_attention / six_n_active - 1:+.0%}"
s3_peer, s3_peer_x = f"{peer / 1e9:,.0f}", f"{peer / with_attention:.1f}"
s3_absorbed = f"{attn_absorbed / 1e9:,.0f}"
s3_fwd, s3_ai, s3_ridge = f"{(2 * A + attn_absorbed) / 1e9:,.0f}", f"{mla_ai:,.0f}", f"{h100_ridge:,.0f}"
s3_ridge200 = f"{h200_ridge:,.0f}"
s3_side = f"{'above' if mla_ai > h200_ridge else 'below'}"
s3_bound = f"{'compute-bound' if mla_ai > h200_ridge else 'still bandwidth-bound'}"

# %% [markdown]
# memlib: **{eval}`s3_active` GFLOP per training token**, **{eval}`s3_x`×** fewer than a dense 671B. The
# pencil left out attention, {eval}`s3_attn_pct` at 4k tokens. Llama-3.1-405B costs {eval}`s3_peer` GFLOP,
# {eval}`s3_peer_x`× more.
#
# **At decode, MLA absorbs its weights** (DeepSeek-V2, Sec. 2.1.2): the key up-projection folds into the
# query, the value up-projection into the output, and all 128 heads attend over the cached latent
# directly. That is {eval}`s3_absorbed` GFLOP of attention alone at 8k tokens ({eval}`s3_fwd` per token
# with the weights), at **{eval}`s3_ai` FLOP per byte** of cache. The question's H200 has a ridge of
# {eval}`s3_ridge200` (an H100's, with less bandwidth, is {eval}`s3_ridge`), so the intensity is
# {eval}`s3_side` it: on the H200 that attention is {eval}`s3_bound`, where GQA decode reads bytes.

# %% [markdown]
# ### Step 4 · The KV cache: MLA's latent vs full K/V vs GQA
#
# ✏️ **Back of the envelope.** MLA caches the latent and the rope key: (512 + 64) × 61 layers × 2 B
# ≈ **70 KB per token**. Rebuilt as full keys and values (transformers' cache): 128 heads ×
# (192 + 128) × 61 × 2 B ≈ **5.0 MB**. Llama-3.1-405B's GQA: 2 × 126 × 8 × 128 × 2 B ≈ **516 KB**.
# An 8k chat with MLA: 70 KB × 8192 ≈ **0.58 GB**.

# %% tags=["nbval-check-output"]
caches = {"MLA latent": (m, "latent"), "MLA full K/V": (m, "full"),
          "GQA 405B": (get_model(GQA_PEER), "latent")}   # mla_cache does not apply to a GQA model
per_token = {k: kv_bytes_per_token(mod, mla_cache=mla) for k, (mod, mla) in caches.items()}  # memlib
lengths = [2 ** k for k in range(10, 18)]   # 1k ... 128k tokens, for the chart in section 6
per_seq = {k: {c: kv_cache_bytes(mod, 1, c, mla_cache=mla) for c in lengths}   # memlib.serving.inference
           for k, (mod, mla) in caches.items()}
for k, v in per_token.items():
    print(f"{k:<12} {v:>9,} B/token; one sequence: "
          + ", ".join(f"{c // 1024}k {GB(per_seq[k][c])}" for c in CONTEXTS))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s4_lat, s4_full_x = f"{per_token['MLA latent']:,}", f"{per_token['MLA full K/V'] / per_token['MLA latent']:.0f}"
s4_gqa_x = f"{per_token['GQA 405B'] / per_token['MLA latent']:.1f}"
s4_8k, s4_128k = f"{GB(per_seq['MLA latent'][CTX])}", f"{GB(per_seq['MLA latent'][131072])}"
s4_gqa_128k = f"{GB(per_seq['GQA 405B'][131072])}"
s4_tp = f"{kv_bytes_per_token(m, tp=N):,}"

# %% [markdown]
# memlib: **{eval}`s4_lat` bytes per token**; the pencil was exact. That is {eval}`s4_full_x`× less than
# full K/V and {eval}`s4_gqa_x`× less than Llama-3.1-405B's GQA. An 8k chat holds {eval}`s4_8k`; a 128k one
# {eval}`s4_128k`, against {eval}`s4_gqa_128k` for the dense model. The cache is one vector per token, not
# per head, so **tensor parallelism does not split it**: at tensor parallel 8 each GPU keeps {eval}`s4_tp`
# bytes per token.

# %% [markdown]
# ### Step 5 · Serving on 8 × H200: tensor or expert parallelism
#
# ✏️ **Back of the envelope.** *Tensor parallel 8:* 84 GB of weights per GPU leave 150 − 84 ≈
# 66 GB, and the latent cache is replicated: 66 / 0.58 ≈ **110** chats of 8k on the server.
# *Data-parallel attention + expert parallel 8:* each GPU keeps all attention and dense weights
# (~19 GB) and 32 of 256 experts (654 / 8 ≈ 82 GB), ≈ 101 GB, leaving ~49 GB for its **own** chats:
# 49 / 0.58 ≈ 85 per GPU, **~680** on the server.

# %% tags=["nbval-check-output"]
serve = plan_serving(m, g, N, context_len=CTX)   # memlib.parallel.plan.plan_serving: every tp/ep layout, fp8
for p in serve.feasible:
    s = p.settings
    print(f"tp={s['tp']} ep={s['ep']}: weights {GB(p.weight_bytes)}/GPU, KV {GB(p.kv_cache_bytes)}/GPU, "
          f"{p.sequences} chats")
tp_only = next(p for p in serve.feasible if p.settings["tp"] == N and p.settings["ep"] == 1)

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s5_layout = f"{N // serve.best.settings['tp']} data-parallel attention groups, expert parallel {serve.best.settings['ep']}"
s5_best, s5_per_gpu = f"{serve.best.sequences}", f"{serve.best.max_batch.value}"
s5_w, s5_kv, s5_tp = f"{GB(serve.best.weight_bytes)}", f"{GB(serve.best.kv_cache_bytes)}", f"{tp_only.sequences}"
s5_off_tp, s5_off_ep = f"{tp_only.sequences / 110 - 1:+.0%}", f"{serve.best.sequences / 680 - 1:+.0%}"
s5_act = f"{GB(serve.best.estimate.breakdown['activations'])}"
s5_verdict = f"{'Eight H200s serve it' if serve.feasible else 'Eight H200s cannot serve it'}"
s5_vllm, s5_vllm_gpu = f"{vllm_chats}", f"{vllm_chats // (N // serve.best.settings['tp'])}"

# %% [markdown]
# memlib: with **{eval}`s5_layout`** the server holds **{eval}`s5_best` chats of 8k**, {eval}`s5_per_gpu`
# per GPU. Each GPU keeps {eval}`s5_w` of weights and {eval}`s5_kv` of cache. Tensor parallel 8 holds
# **{eval}`s5_tp`**, each chat's latent replicated on all eight GPUs. memlib is {eval}`s5_off_tp` and
# {eval}`s5_off_ep` off the pencil, which left out the CUDA context, 5% allocator headroom and one 8k
# prefill chunk ({eval}`s5_act` per GPU). **{eval}`s5_verdict`**: SGLang
# `--tp 8 --dp 8 --enable-dp-attention --ep 8` or vLLM `--data-parallel-size 8 --enable-expert-parallel`
# for throughput; tensor parallel 8 for the lowest latency.
#
# Those counts fill each card up to memlib's headroom (the CUDA context and 5% of the peak). vLLM at its
# default `gpu_memory_utilization` of 0.9, with its profile run's sampler warm-up
# (`memlib.serving.vllm_concurrency_for_estimate`), admits **{eval}`s5_vllm`** chats of 8k
# ({eval}`s5_vllm_gpu` per GPU): read its "Maximum concurrency" log line before promising a number.

# %% [markdown]
# ### Step 6 · Full fine-tuning: 16 bytes per parameter, all of them
#
# ✏️ **Back of the envelope.** Mixed-precision AdamW: bf16 weights 2 + bf16 gradients 2 + fp32
# master, m, v 12 = 16 bytes per parameter, for every expert: 671e9 × 16 B ≈ **10.7 TB**. ZeRO-3
# divides it by the GPU count: 10.7 TB / 150 GB ≈ **72 H200s**, / 85 GB ≈ **127 H100s**. Expert
# parallelism changes *who* holds which expert, not how many bytes there are.

# %% tags=["nbval-check-output"]
states = zero_model_state_bytes(m.num_params, 0, 1)   # memlib.parallel.zero: (2 + 2 + 12) x psi
ft = {gpu: min_gpus_sharded(m, gpu, seq_len=FT_SEQ) for gpu in (GPU, "h100-80gb")}  # memlib.parallel.moe
for gpu, r in ft.items():
    e = r.estimate
    print(f"{gpu}: {r.count} GPUs, ep {r.ep}; peak {GB(e.peak_bytes)} in {e.phase}, "
          f"margin {GB(r.verdict.margin_bytes)}")
h2 = ft[GPU]
no_rc = estimate_training(m, seq_len=FT_SEQ, zero_stage=3, dp=h2.count, ep=h2.ep)   # the same, no recompute
# DeepSeek-V3 report, Sec. 3.3.3: master weights and gradients in fp32 (4 + 4), AdamW's m and v in bf16 (2 + 2)
states_bf16_moments = zero_model_state_bytes(P, 0, 1, k=4, working_bytes=4)
print(f"states {TB(states)} ({states // P} B/param), {TB(states_bf16_moments)} in DeepSeek's layout "
      f"({states_bf16_moments // P} B/param)")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s6_states, s6_h200, s6_ep = f"{TB(states)}", f"{h2.count}", f"{h2.ep}"
s6_h100, s6_h100_ep = f"{ft['h100-80gb'].count}", f"{ft['h100-80gb'].ep}"
s6_share, s6_gather = f"{GB(states / h2.count)}", f"{GB(h2.estimate.breakdown['gathered_parameters'])}"
s6_tmp, s6_act = f"{GB(h2.estimate.breakdown['temporaries'])}", f"{GB(h2.estimate.breakdown['activations'])}"
s6_off = f"{h2.count / 72 - 1:+.0%} and {ft['h100-80gb'].count / 127 - 1:+.0%}"
s6_no_rc = f"{GB(no_rc.breakdown['activations'])}"
s6_bpp12, s6_tb12 = f"{states_bf16_moments // P}", f"{TB(states_bf16_moments)}"

# %% [markdown]
# memlib: **{eval}`s6_states`** of states. The fewest whole nodes that fit are **{eval}`s6_h200` H200s**
# (ZeRO-3, expert parallel {eval}`s6_ep`, full recompute, 4k sequences). On H100s: **{eval}`s6_h100`**
# (expert parallel {eval}`s6_h100_ep`). That is {eval}`s6_off` over the pencil, which left out what an H200
# holds beside its share of the states:
#
# | on one H200 | bytes |
# |---|---|
# | its share of the states | {eval}`s6_share` |
# | the MoE layer ZeRO-3 gathers (expert parallelism shrinks it to 1/ep of the experts) | {eval}`s6_gather` |
# | the backward's temporaries | {eval}`s6_tmp` |
# | checkpointed activations | {eval}`s6_act` |
#
# plus the CUDA context and headroom. Without recompute one 4k sequence keeps {eval}`s6_no_rc` of
# activations. **DeepSeek kept fp32 master weights and fp32 gradients but bf16 AdamW moments** (report,
# Sec. 3.3.3: gradients in fp32 for accumulation over micro-batches): 4 + 4 + 2 + 2 =
# **{eval}`s6_bpp12` B/param, not 16**, {eval}`s6_tb12` of states. A bf16 working copy of the weights, if
# kept, adds 2 bytes per parameter.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Charts · 图
#
# **Takeaway: expert parallelism keeps more weight per GPU than tensor parallelism, yet serves more
# chats, because each GPU's cache holds only its own; the bf16 copy does not fit at all.** Per-GPU
# memory at the largest batch of 8k chats (`memlib.learn.viz.breakdown_bars`, linear, the card dashed).

# %% jupyter={"source_hidden": true} tags=["hide-input"]
bars = {"tensor par. 8,\nfp8": tp_only.estimate, "expert par. 8 +\nDP attention, fp8": serve.best.estimate,
        "tensor par. 8,\nbf16 (1 chat)": w["bf16"]}
fig, ax = plt.subplots(figsize=(7.5, 3.2))
breakdown_bars(bars, gpu=GPU, ax=ax, title=f"DeepSeek-V3 on 8 x H200, {CTX:,}-token chats: per-GPU memory")
ax.set_ylim(top=185)  # room for the labels under the title
plt.show()

# %% [markdown]
# **Takeaway: the latent cache of a 128k conversation is a small part of one GPU; the same attention
# stored as full keys and values outgrows a whole H200 on its own.** KV cache of one sequence against
# its length (`memlib.learn.viz.sweep`, lines on log axes; the dotted line marks where a curve crosses the card).

# %% jupyter={"source_hidden": true} tags=["hide-input"]
curves = {k: list(v.values()) for k, v in per_seq.items()}   # step 4's caches, 1k ... 128k tokens
fig, ax = plt.subplots(figsize=(7, 3.0))
sweep(lengths, curves, gpu=GPU, ax=ax, logx=True, xlabel="tokens in one sequence",
      title="KV cache of one sequence: MLA latent vs full K/V vs GQA")
ax.set_yscale("log")
ax.set_ylabel("GiB (one sequence)")
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. Playground · 动手试
#
# Try: weights bf16 (eight H200s stop fitting; move GPUs to 16); the MLA cache "full" (a handful of
# chats); then Mixtral-8x7B or Qwen3-235B-A22B on two or four GPUs.

# %%
MoEServingPlayground(model=MODEL, gpu=GPU, count=N, context=CTX)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8. Follow-up questions · 追问
#
# ### Why does expert parallelism need an all-to-all?

# %% tags=["nbval-check-output"]
t = h2.time   # memlib.step_time of step 6's layout (memlib.cost.timing.ep_all_to_all_bytes)
a2a_per_layer = 6 if h2.estimate.setup.recompute == "full" else 4  # per MoE layer and micro-batch
print(f"ep={h2.ep}: {a2a_per_layer} all-to-alls per MoE layer, {GB(t.ep_comm_bytes)} per GPU per step")
print(f"{t.ep_comm_s:.2f} s exposed of a {t.step_s:.1f} s step")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
f1_k, f1_bytes, f1_layers = f"{m.num_experts_per_tok}", f"{GB(t.ep_comm_bytes)}", f"{m.num_moe_layers}"
f1_n, f1_exposed, f1_step = f"{a2a_per_layer}", f"{t.ep_comm_s:.2f} s", f"{t.step_s:.1f} s"

# %% [markdown]
# Each GPU holds 1/8 of the experts but runs attention for its own tokens: once the router picks a
# token's {eval}`f1_k` experts, its hidden state travels to their GPUs (*dispatch*) and back (*combine*),
# {eval}`f1_n` all-to-alls per MoE layer with the backward and the recomputed forward. In step 6's layout:
# **{eval}`f1_bytes` per GPU per step** over {eval}`f1_layers` MoE layers, {eval}`f1_exposed` of a
# {eval}`f1_step` step that compute cannot hide. DeepSeek sends the dispatch in fp8 and limits each token
# to 4 nodes (report, Secs. 2.1.2, 3.3).

# %% [markdown]
# More follow-ups (LoRA and QLoRA on DeepSeek-V3, expert load at decode and DeepSeek's large expert parallelism, is MoE decode cheap in bandwidth, capacity factor and dropped tokens, router load
# balancing, experts in CPU memory, other GPUs) are on the [deep-dive page](05_moe_memory_deep_dive.ipynb).


# %% jupyter={"source_hidden": true} tags=["remove-input"]
p_other, p_full_x = f"{fmt_count(P - A)}", f"{per_token['MLA full K/V'] // per_token['MLA latent']}"
p_bf16, p_ratio = f"{TB(bf16_total)}", f"{R(flops_ratio)}"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9. Pitfalls · 避坑
#
# - Sizing a MoE by its active parameters: every expert is resident ({eval}`s2_fp8`), not only the
#   active share; the other {eval}`p_other` parameters are there too.
# - Upcasting the fp8 checkpoint to bf16 without need: {eval}`s2_bf16`, no longer one H200 node.
# - Dividing MLA's cache by the tensor-parallel degree: the latent is replicated on every TP GPU.
# - Measuring MLA with transformers' cache: it stores full K/V, {eval}`p_full_x`× the latent.
# - Expecting ep to shrink the fine-tuning states, or LoRA the base ({eval}`p_bf16` in bf16).
# - Quoting "{eval}`p_ratio`× cheaper" for everything: it is FLOPs; memory and checkpoint follow the total.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10. Deep dive (skip on first read) · 深入（可跳过）
#
# On its own page, [05 · deep dive](05_moe_memory_deep_dive.ipynb): the fact-check (DeepSeek's reports,
# SGLang's and vLLM's recipes, Mixtral, the MoE blog posts), where the 671B live, every serving layout at
# 8k, 32k and 128k, full fine-tuning on other GPUs and against the GPU count, capacity factor, router
# balancing, experts in CPU memory, other GPUs, and the measured runs the training estimates stand on.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 11. Further reading · 延伸阅读
#
# - DeepSeek-AI 2024, *DeepSeek-V3 Technical Report*, [arXiv:2412.19437](https://arxiv.org/abs/2412.19437) (MLA, DeepSeekMoE, auxiliary-loss-free balancing, FP8 training, deployment)
# - DeepSeek-AI 2024, *DeepSeek-V2*, [arXiv:2405.04434](https://arxiv.org/abs/2405.04434) (MLA and its weight absorption, Sec. 2.1)
# - DeepSeek-AI, *Expert Parallelism Load Balancer (EPLB)*, [github.com/deepseek-ai/EPLB](https://github.com/deepseek-ai/EPLB)
# - Zhao et al. 2025, *Insights into DeepSeek-V3: Scaling Challenges and Reflections on Hardware for AI Architectures*, [arXiv:2505.09343](https://arxiv.org/abs/2505.09343)
# - Jiang et al. 2024, *Mixtral of Experts*, [arXiv:2401.04088](https://arxiv.org/abs/2401.04088)
# - Fedus, Zoph, Shazeer 2022, *Switch Transformers*, [arXiv:2101.03961](https://arxiv.org/abs/2101.03961) (capacity factor, load-balancing loss)
# - Lepikhin et al. 2020, *GShard*, [arXiv:2006.16668](https://arxiv.org/abs/2006.16668) (expert capacity, all-to-all)
# - Rajbhandari et al. 2022, *DeepSpeed-MoE*, [arXiv:2201.05596](https://arxiv.org/abs/2201.05596) (expert parallelism with ZeRO)
# - Hugging Face, *Mixture of Experts Explained*, [huggingface.co/blog/moe](https://huggingface.co/blog/moe)
# - SGLang, *DeepSeek V3/V3.1/R1 Usage* (DP attention, block-wise FP8), [docs](https://github.com/sgl-project/sglang/blob/main/docs/basic_usage/deepseek_v3.md); vLLM recipes, [DeepSeek-V3](https://docs.vllm.ai/projects/recipes/en/latest/DeepSeek/DeepSeek-V3.html)
# - peft, *LoRA on nn.Parameter* (`target_parameters`, MoE experts), [huggingface/peft#2638](https://github.com/huggingface/peft/pull/2638)
