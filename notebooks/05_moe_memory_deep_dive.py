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
# # 05 · deep dive · 深入：DeepSeek-V3 推理与微调要多少显存
#
# The material behind [notebook 05](05_moe_memory.ipynb)'s answer, for a second reading: more
# follow-up questions, the fact-check of circulating MoE figures, where the 671B live, every
# serving layout on 8 × H200, full fine-tuning on other GPUs and the measured runs behind it.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
# %matplotlib inline
import json
import math
from pathlib import Path

import matplotlib.pyplot as plt
from IPython.display import Markdown, display

import memlib
from memlib.learn.chapters.ch05 import CONTEXTS, CTX, FT_SEQ, GPU, GQA_PEER, MODEL, N, TB
from memlib.learn.kit import GB
from memlib import cost, estimate_inference, estimate_training, fits, fmt_bytes, get_gpu, get_model, gib
from memlib.training.explain import markdown_table
from memlib.learn.factcheck import Claim, fact_check_table
from memlib.hardware.fit import usable_bytes
from memlib.training.measured import estimate_case
from memlib.serving.inference import gqa_kv_bytes_per_token, kv_bytes_per_token
from memlib.parallel.moe import (decode_weight_bytes, expected_experts_touched, expert_ridge_tokens, min_gpus_sharded,
                        tokens_per_expert)
from memlib.parallel.plan import plan_serving
from memlib.cost.timing import flops_per_token
from memlib.cost.conventions import deepseek_v3_implied_mfu
from memlib.units import fmt_count
from memlib.learn.viz import sweep
from memlib.parallel.zero import zero_model_state_bytes



# The figures of the core page (05_moe_memory), computed the same way.
m, g = get_model(MODEL), get_gpu(GPU)
P, A = m.num_params, m.num_active_params
fp8_total = estimate_inference(m, batch=1, context_len=1).weight_bytes
bf16_total = estimate_inference(m, batch=1, context_len=1, weights="bf16").weight_bytes
nf4_total = estimate_inference(m, batch=1, context_len=1, weights="nf4").weight_bytes
serve = plan_serving(m, g, N, context_len=CTX)
tp_only = next(p for p in serve.feasible if p.settings["tp"] == N and p.settings["ep"] == 1)
states = zero_model_state_bytes(P, 0, 1)
h2 = min_gpus_sharded(m, GPU, seq_len=FT_SEQ)
with_attention = flops_per_token(m, FT_SEQ)
peer = flops_per_token(GQA_PEER, FT_SEQ)
floors = {fmt: math.ceil(nbytes / usable_bytes(get_gpu("h100-80gb"))) for fmt, nbytes in
          (("bf16", bf16_total), ("fp8", fp8_total), ("nf4", nf4_total))}

# %% [markdown] slideshow={"slide_type": "slide"}
# ## More follow-up questions · 更多追问

# %% [markdown]
# ### Expert load at inference: why does DeepSeek decode with large expert parallelism?

# %% tags=["nbval-check-output"]
node_batch, unit_batch = serve.best.sequences, 32 * 256   # one node; DeepSeek's decode unit, 32 per GPU
per_expert = {b: tokens_per_expert(b, m.num_experts_per_tok, m.num_experts)   # memlib.parallel.moe: B·k/E
              for b in (node_batch, unit_batch)}
ridge_tokens = expert_ridge_tokens(GPU)   # memlib.parallel.moe: tokens an fp8 expert matmul needs, ridge / 2
print({b: round(v, 1) for b, v in per_expert.items()}, f"tokens per expert; ridge {ridge_tokens:.0f}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
f2_node, f2_node_t, f2_k = f"{node_batch}", f"{per_expert[node_batch]:.0f}", f"{m.num_experts_per_tok}"
f2_unit, f2_unit_t, f2_ridge = f"{unit_batch:,}", f"{per_expert[unit_batch]:.0f}", f"{ridge_tokens:.0f}"

# %% [markdown]
# A decode step gives each expert batch × {eval}`f2_k` / 256 tokens: **{eval}`f2_node_t`** at the
# {eval}`f2_node` chats of one H200 node, far below the ~{eval}`f2_ridge` an fp8 expert matmul needs on an
# H200 to be compute-bound. So DeepSeek decodes with expert parallelism over 320 GPUs (report, Sec. 3.4.2:
# one expert per GPU, 64 GPUs for redundant and shared experts): {eval}`f2_unit` sequences in flight (an
# assumed 32 per expert GPU) give each expert **{eval}`f2_unit_t`** tokens per step. Routing is never
# uniform, and the GPU with a hot expert sets the step: DeepSeek's load balancer (EPLB) copies hot experts
# to more GPUs as *redundant experts*, re-placed from observed load.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Is MoE decode cheap in memory bandwidth too?


# %% tags=["nbval-check-output"]
read = {b: decode_weight_bytes(m, b) for b in (1, 8, 32, 128, 512)}   # memlib.parallel.moe.decode_weight_bytes, fp8
for b, r in read.items():
    print(f"batch {b}: {GB(r)} of weights read per decode step, {GB(r / b)} per token")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
f4_1, f4_512, f4_tok = f"{GB(read[1])}", f"{GB(read[512])}", f"{GB(read[512] / 512)}"

# %% [markdown]
# Only at small batches. A step reads every weight it uses once: with one chat, the active share,
# **{eval}`f4_1`**, so it decodes like a 37B model. At 512 chats the batch touches nearly every expert and
# reads **{eval}`f4_512`** ({eval}`f4_tok` per token), what a dense model of the same size reads. At a
# large batch MoE saves FLOPs, not bandwidth; its capacity need is always the total.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Does expert parallelism's all-to-all cost more than the experts' compute? · 专家并行的通信比计算还贵吗？

# %%
from memlib.cost.collectives import comm_roofline, link_bytes_per_s

ep_ib = comm_roofline("deepseek-v3", "h100-80gb", "ep", 64, bytes_per_s=link_bytes_per_s("IB NDR"))
ep_nvl = comm_roofline("deepseek-v3", "h100-80gb", "ep", 8)
display(Markdown(
    f"Each routed token travels to its experts' GPUs and back, forward and backward: the all-to-alls grow with the "
    f"tokens, as the compute does, so their ratio is fixed. For DeepSeek-V3 with expert parallelism over 64 GPUs on "
    f"InfiniBand NDR, the all-to-alls take **{ep_ib.comm_to_compute:.1f}×** the compute at the GPUs' peak "
    f"(`memlib.cost.collectives.comm_roofline`); inside one NVLink node, over 8, **{ep_nvl.comm_to_compute:.2f}×**. "
    "That is why DeepSeek limits each token to 4 nodes and overlaps the transfers with compute (DualPipe, "
    "DeepSeek-V3 report Sec. 3.2); notebook 10 derives the roofline."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Capacity factor and dropped tokens

# %% tags=["nbval-check-output"]
cf = {c: estimate_training(m, seq_len=FT_SEQ, zero_stage=3, dp=h2.count, ep=h2.ep, capacity_factor=c)
      for c in (None, 1.25, 2.0)}   # no recompute: the routed activations show
for c, e in cf.items():
    print(f"capacity factor {c}: {e.counts['routed_rows']:,} rows per MoE layer, activations "
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
print({t_: round(v, 1) for t_, v in touched.items()})   # memlib.parallel.moe.expected_experts_touched, uniform routing

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
# ### Training a MoE under Megatron: which GPU runs out first?

# %% tags=["nbval-check-output"]
mx = estimate_training("mixtral-8x7b", recipe="megatron", seq_len=4096, tp=2, pp=4, ep=4, dp=16,
                       sequence_parallel=True, grad_accum=64)   # Megatron-Core's MoE layers on 128 GPUs
for name in mx.stage_names:
    print(f"{name}: {GB(mx.stage_peak_bytes(name))}")   # memlib.Estimate.stage_peak_bytes

# %%
mx_first, mx_last = GB(mx.stage_peak_bytes("first")), GB(mx.stage_peak_bytes("last"))
mx_inflight = mx.setup.pp

# %% [markdown]
# Under pipeline parallelism the GPUs do not hold the same. With 1F1B the first stage keeps the activations of
# {eval}`mx_inflight` micro-batches in flight, the last stage one, so Mixtral-8x7B at tp 2, pp 4, ep 4 needs
# **{eval}`mx_first`** on the first GPU and **{eval}`mx_last`** on the last. Megatron-LM logs its memory on the
# last rank only, so the figure in a log is the smaller one: size the cluster by the first GPU. The
# `megatron-ci-mixtral-*` rows of `docs/validation.md` compare memlib's last stage with Megatron-LM's own Mixtral
# runs.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Can you offload the experts to CPU memory?

# %% tags=["nbval-check-output"]
q = estimate_inference(m, batch=1, context_len=CTX, weights="int4-gptq").weight_parts   # 4-bit: the local-inference case
host = q["experts"]
gpu_side = sum(q.values()) - host
print(f"host RAM: 4-bit routed experts {GB(host)}")
print(f"GPU: the rest {GB(gpu_side)} + latent cache {GB(kv_bytes_per_token(m) * CTX)} per 8k chat")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
display(Markdown(
    f"Yes, and local runners do (KTransformers, llama.cpp's `--override-tensor`): keep attention, the shared experts, "
    f"the dense layers and the cache on the GPU and the routed experts in host RAM, computed by the CPU. In 4-bit, "
    f"memlib puts **{GB(host)}** of routed experts in host RAM and **{GB(gpu_side)}** of the rest on the GPU, plus "
    f"{GB(kv_bytes_per_token(m) * CTX)} of latent cache per 8k chat: consistent with KTransformers' \"14GB VRAM and "
    "382GB DRAM\" (the fact-check below). What memlib cannot say is the speed: it does not model CPU matmul throughput or "
    "which experts a prompt's tokens pick, and every decode step needs 8 experts per layer from host memory."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### And on other GPUs?

# %% tags=["nbval-check-output"]
other = {(gpu, n, fmt): plan_serving(m, gpu, n, context_len=CTX, weights=fmt).best   # memlib.parallel.plan.plan_serving
         for gpu, n, fmt in (("h100-80gb", 8, "auto"), ("h100-80gb", 16, "auto"), ("h200", 16, "bf16"),
                             ("a100-80gb", 8, "int4-awq"), ("b200", 8, "auto"), ("mi300x", 8, "auto"))}
for (gpu, n, fmt), p in other.items():
    print(f"{n} x {gpu}, {fmt}: " + (f"tp={p.settings['tp']} ep={p.settings['ep']}, {p.sequences} chats"
                                      if p else "no layout fits"))

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
    "cores, so it serves a 4-bit (AWQ) or int8 copy, or an upcast bf16 copy on four nodes (the fact-check below). B200 and "
    f"MI300X hold the fp8 model in one node with room for {min(p.sequences for p in big):,} or more 8k chats."))

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### LoRA and QLoRA on DeepSeek-V3: what memlib refuses, and the honest answer
#
# ✏️ **Back of the envelope.** LoRA trains small adapters, but the frozen base stays on the GPUs:
# 671e9 × 2 B ≈ **1.34 TB** in bf16, / 85 GB ≈ **16 H100s** before a single adapter or activation.
# A 4-bit base: 671e9 × 0.5 B ≈ 336 GB, 4 H100s.

# %% tags=["nbval-check-output"]
import textwrap

try:
    estimate_training(m, finetune="lora", lora_rank=16)   # memlib.estimate_training refuses it
except ValueError as err:
    print(textwrap.shorten(str(err), 88))
nf4_total = estimate_inference(m, batch=1, context_len=1, weights="nf4").weight_bytes
floors = {fmt: math.ceil(nbytes / usable_bytes(get_gpu("h100-80gb"))) for fmt, nbytes in
          (("bf16", bf16_total), ("fp8", fp8_total), ("nf4", nf4_total))}
print(f"frozen base: bf16 {GB(bf16_total)}, nf4 {GB(nf4_total)}; H100s for its weights: "
      f"bf16 {floors['bf16']}, nf4 {floors['nf4']}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s7_bf16_h100, s7_bf16_h200 = f"{floors['bf16']}", f"{math.ceil(bf16_total / usable_bytes(g))}"
s7_nf4_h100, s7_nf4 = f"{floors['nf4']}", f"{GB(nf4_total)}"

# %% [markdown]
# memlib **refuses** LoRA on this model: no measured run, and transformers stores the 256 experts as
# stacked 3-D parameters that peft's usual `target_modules` does not reach. It *can* give the floor: the
# bf16 base needs **at least {eval}`s7_bf16_h100` H100s** ({eval}`s7_bf16_h200` H200s) for its weights
# alone, a 4-bit base ({eval}`s7_nf4`) {eval}`s7_nf4_h100`. LoRA saves the optimizer states and gradients,
# not the base (Colossal-AI's recipe: 24 H100s, short sequences).

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### MTP: how big is DeepSeek-V3's multi-token-prediction module, and what does it buy at serving? · MTP 模块
#
# DeepSeek-V3 trains with one **multi-token-prediction** (MTP) module (report, Sec. 2.2): one more
# Transformer block (the same MLA + MoE layer as the main model's) and a projection *M* (2h → h) that
# mixes the main model's last hidden state with the embedding of the next token, to predict the token
# after it. It shares the embedding and the head. At serving, its prediction is a free **draft** for
# speculative decoding: the main model checks it in its next step.
#
# ✏️ **Back of the envelope.** One MoE layer: 256 experts × 3 × 7k × 2k ≈ 11.3B, plus ~0.2B of attention
# → ~11.5B; the released checkpoint also stores a copy of the embedding and of the head, 2 × 129k × 7k ≈ 1.9B:
# ~13.4B, the report's "14B" on top of 671B. In fp8, ~11.6 GB. One draft token accepted 85-90% of the time:
# ~1.85-1.9 tokens per main-model step.

# %% tags=["nbval-check-output"]
from memlib.serving.mtp import mtp_active_params, mtp_module_bytes, mtp_module_params
from memlib.serving.techniques import speculative_expected_tokens, speculative_speedup

mtp = mtp_module_params(m)                          # memlib.serving.mtp: from config.json's shapes
mtp_fp8 = mtp_module_bytes(m, "fp8-block")          # the unique part, 128x128 block fp8 as released
mtp_act = mtp_active_params(m)                      # read per drafted token (top-8 experts, M, the head)
draft_cost = mtp_act / A                            # draft step / main step, bytes read at equal precision
mtp_tok = {a: speculative_expected_tokens(a, 1) for a in (0.85, 0.90)}                 # Leviathan et al. eq. 1
mtp_up = {a: speculative_speedup(a, 1, draft_cost) for a in (0.85, 0.90)}
print(f"{sum(mtp.values()) / 1e9:.2f}B params, {GB(mtp_fp8)} fp8 (unique), active {mtp_act / 1e9:.2f}B "
      f"({draft_cost:.3f} of a step); tokens/step {[round(t, 2) for t in mtp_tok.values()]}, "
      f"speed-up {[round(x, 2) for x in mtp_up.values()]}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
f9_block = f"{mtp['transformer block (MLA + MoE)'] / 1e9:.1f}B"
f9_copies = f"{(mtp['embedding copy (V x h)'] + mtp['head copy (h x V)']) / 1e9:.1f}B"
f9_total, f9_fp8 = f"{sum(mtp.values()) / 1e9:.1f}B", f"{GB(mtp_fp8)}"
f9_share = f"{mtp_fp8 / fp8_total:.1%}"
f9_act, f9_cost = f"{mtp_act / 1e9:.1f}B", f"{draft_cost:.1%}"
f9_t85, f9_t90 = f"{mtp_tok[0.85]:.2f}", f"{mtp_tok[0.90]:.2f}"
f9_u85, f9_u90 = f"{mtp_up[0.85]:.2f}×", f"{mtp_up[0.90]:.2f}×"

# %% [markdown]
# From the config's shapes (`memlib.serving.mtp.mtp_module_params`): the block is **{eval}`f9_block`**
# parameters, nearly all of it routed experts; with *M*, its norms and the checkpoint's own copies of the
# embedding and head ({eval}`f9_copies`) it is **{eval}`f9_total`**, the report's "14B" (685B in the
# checkpoint, 671B in the main model). transformers does not build it, so memlib's 671B leave it out.
# Served as released, its unique part is **{eval}`f9_fp8`** of fp8, {eval}`f9_share` of the
# weights: an engine that loads it for speculative decoding needs that much more per replica.
#
# What it buys: the report measures an acceptance of 85-90% for the second token (Sec. 5.4.3). With one
# draft token, a main-model step yields 1 + α tokens (`speculative_expected_tokens`): **{eval}`f9_t85`
# to {eval}`f9_t90`**. The draft is not free: it reads {eval}`f9_act` parameters per token (attention,
# 8 of 256 experts, *M*, and the 0.9B head again), {eval}`f9_cost` of a main step's active bytes, so the
# roofline speed-up (`speculative_speedup`) is **{eval}`f9_u85` to {eval}`f9_u90`**. The report's
# "1.8 times TPS" (batch and hardware not stated) sits in that range: the draft is one layer on top of
# 61, so it costs little. The caveat: at a large batch decode is no longer memory-bound, and verifying
# two tokens per sequence costs compute; the gain shrinks.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Fact-check · 纠错
#
# Circulating figures about DeepSeek-V3 and MoE memory, each quoted from its source, against memlib,
# with a verdict and its word (✅ right · ⚠️ partly · ❌ wrong).

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
ds67 = gqa_kv_bytes_per_token(95, 8, 128)            # memlib.serving.inference: 2 x layers x KV heads x head_dim x 2 B
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
print(f"DeepSeek-V3 pre-training: implied MFU {implied_mfu:.1%} on DeepSeek's 250 GFLOP/token;")
print(f"  {memlib_mfu:.1%} on memlib's {pretrain_flops:.3g} FLOPs (6N + attention, no causal discount)")
for k, p in other_serving.items():
    print(f"{k[1]} x {k[0]} {k[2]}: {p.sequences if p else 0} chats of 8k")

# %%
V3, V2 = "[DeepSeek-V3 report](https://arxiv.org/abs/2412.19437)", "[DeepSeek-V2 report](https://arxiv.org/abs/2405.04434)"
INS = "[Zhao et al. 2025, Insights into DeepSeek-V3](https://arxiv.org/abs/2505.09343)"
SGL = "[SGLang docs, DeepSeek V3/V3.1/R1 Usage](https://github.com/sgl-project/sglang/blob/main/docs/basic_usage/deepseek_v3.md)"
HF = "[Hugging Face blog, Mixture of Experts Explained](https://huggingface.co/blog/moe)"
MIS = "[Mistral AI, Mixtral of experts](https://mistral.ai/news/mixtral-of-experts)"
p16 = other_serving[("h200", 16, "bf16")]
h16 = other["h100-80gb", 16, "auto"]
facts = [
    Claim("\"671B total parameters with 37B activated for each token\"",
          f"{V3}, abstract",
          f"{fmt_count(m.num_params)} total, {fmt_count(m.num_active_params)} active ({fmt_count(m.active_params_without_embedding)} "
          "without the input embedding)",
          verdict="✅",
          why="memlib counts tensor by tensor; DeepSeek's 37B leaves out the input embedding"),
    Claim("\"DeepSeek-V3 requires only 2.788M H800 GPU hours for its full training\"; pre-training \"2.664M H800 GPU hours\" "
          "on \"14.8T tokens\"",
          f"{V3}, abstract and Table 1",
          f"{implied_mfu:.0%} MFU on DeepSeek's own 250 GFLOP/token against the H800's bf16 dense peak "
          f"(memlib's 6N + attention without a causal discount: {memlib_mfu:.0%})",
          verdict="⚠️",
          why="plausible, and the collection's one convention is the publisher's FLOPs per token over the bf16 dense "
                    "peak; the report gives no MFU and ran its matmuls in FP8 (twice the bf16 peak)"),
    Claim("\"reduces the KV cache by 93.3%\"",
          f"{V2}, abstract (compared with DeepSeek 67B)",
          f"latent {v2_latent:,} B vs DeepSeek 67B's GQA {ds67:,} B per token: {1 - v2_latent / ds67:.1%} in bf16; "
          f"with the deployed 6-bit cache {1 - v2_6bit / ds67:.1%}; vs V2's own full K/V ({v2_full:,} B) "
          f"{1 - v2_latent / v2_full:.1%}",
          verdict="⚠️",
          why="right, but it compares with a GQA model and includes KV quantization (\"6 bits on average\"); MLA alone "
              f"in bf16 is {1 - v2_latent / ds67:.0%}"),
    Claim("\"DeepSeek-V3 (MLA) 70.272 KB … LLaMA-3.1 405B (GQA) 516.096 KB\" per token (BF16)",
          f"{INS}, Table 1",
          f"{kv_bytes_per_token(m):,} B and {kv_bytes_per_token(get_model(GQA_PEER)):,} B",
          verdict="✅",
          why="exact to the byte"),
    Claim("\"DeepSeek-V3 MoE 671B … 250 GFLOPS/token; LLaMa-405B Dense … 2448 GFLOPS/token\" (training, 4k)",
          f"{INS}, Table 2",
          f"{with_attention / 1e9:,.0f} and {peer / 1e9:,.0f} GFLOP per token "
          f"({peer / with_attention:.1f}x; theirs {2448 / 250:.1f}x)",
          verdict="✅",
          why=f"the ratio agrees; memlib's PaLM attention term (no causal discount, 192-wide heads for QK and V) gives "
              f"{with_attention / 250e9 - 1:+.0%} over DeepSeek's count"),
    Claim("\"Mixtral has 46.7B total parameters but only uses 12.9B parameters per token\"",
          MIS,
          f"{fmt_count(mix.num_params)} and {fmt_count(mix.num_active_params)}",
          verdict="✅" if round(mix.num_params / 1e8) == 467 and round(mix.num_active_params / 1e8) == 129 else "❌",
          why="right to the digits quoted"),
    Claim("\"It, therefore, processes input and generates output at the same speed and for the same cost as a 12.9B model\"",
          MIS,
          f"FLOPs: yes; weights {GB(mix_bf16)} in bf16 (a 12.9B: {GB(2 * mix.num_active_params)}); a batch of 32 "
          f"reads {GB(mix_read32)} of weights per decode step",
          verdict="⚠️",
          why="true for compute; memory is that of a 47B model, and at a batch most experts are read every step"),
    Claim("\"we'll need to have enough VRAM to hold a dense 47B parameter model\"",
          f"{HF}, What is a Mixture of Experts",
          f"Mixtral weights {GB(mix_bf16)} in bf16; its KV cache {kv_bytes_per_token(mix):,} B per token, a 7B's",
          verdict="✅",
          why="right for the weights; the cache is set by the attention, not the total size"),
    Claim("MoEs \"Require high VRAM as all experts are loaded in memory\"",
          f"{HF}, TL;DR",
          f"weights and 16 B/param of training states follow the total ({TB(states)} for DeepSeek-V3); the KV cache "
          f"({kv_bytes_per_token(m):,} B/token) and routed activations (tokens x top-k) do not",
          verdict="⚠️",
          why="weights and optimizer states, yes; \"as much as a dense model of its size\" overstates the cache and activations"),
    Claim("\"Full precision FP8 (recommended) | 8 x H200\"",
          SGL,
          f"{serve.best.sequences} chats of 8k (expert parallel + DP attention), {tp_only.sequences} with tensor parallel",
          verdict="✅" if serve.feasible else "❌",
          why="fits, with room for the cache"),
    Claim("FP8: \"2 x 8 x H100/800/20\"",
          SGL,
          f"8 x H100: {'no layout fits' if other['h100-80gb', 8, 'auto'] is None else 'fits'}; 16 x H100: "
          f"{h16.sequences if h16 else 0} chats of 8k",
          verdict="✅" if h16 and other["h100-80gb", 8, "auto"] is None else "❌",
          why=f"{GB(fp8_total)} of fp8 weights leave eight H100s ({GB(usable_bytes(get_gpu('h100-80gb')))} each) no room"),
    Claim("BF16 \"(upcast from original FP8) | 2 x 8 x H200 … 4 x 8 x H100/800/20\"",
          SGL,
          f"16 x H200: {p16.sequences if p16 else 0} chats; 16 x H100: "
          f"{other_serving[('h100-80gb', 16, 'bf16')].sequences if other_serving[('h100-80gb', 16, 'bf16')] else 'none'}; "
          f"32 x H100: {other_serving[('h100-80gb', 32, 'bf16')].sequences} chats",
          verdict="✅" if p16 and other_serving[("h100-80gb", 32, "bf16")] else "❌",
          why=f"{GB(bf16_total)} of bf16 weights"),
    Claim("Quantized weights (AWQ): \"8 x A100/A800\"; (W4A8) \"4 x H200\"",
          SGL,
          f"8 x A100 int4-awq: {other['a100-80gb', 8, 'int4-awq'].sequences} chats; 4 x H200: "
          f"{other_serving[('h200', 4, 'int4-awq')].sequences} chats",
          verdict="✅" if other["a100-80gb", 8, "int4-awq"] and other_serving[("h200", 4, "int4-awq")] else "❌",
          why=f"4-bit weights: {GB(nf4_total)}"),
    Claim("\"If you do not use DP attention, KV cache will be duplicated among all TP ranks.\"",
          SGL,
          f"tensor parallel 8: {GB(tp_only.kv_cache_bytes)} of cache per GPU for {tp_only.max_batch.value} chats, the same "
          "on every GPU",
          verdict="✅" if kv_replicated else "❌",
          why="the latent has no head dimension to split"),
    Claim("\"Tensor-parallel is usually better for low-latency / low-load scenarios, while data-parallel works better for "
          "high-load workloads.\"",
          "[vLLM recipes, DeepSeek-V3](https://docs.vllm.ai/projects/recipes/en/latest/DeepSeek/DeepSeek-V3.html)",
          f"capacity {tp_only.sequences} vs {serve.best.sequences} chats of 8k",
          verdict="✅" if serve.best.sequences > tp_only.sequences else "❌",
          why="memlib sizes capacity, not latency"),
    Claim("\"The minimum hardware requirement for sample command is … 24 H100/H800 GPUs (with `ep=8,pp=3`)\" (LoRA, bf16 "
          "weights)",
          "[Colossal-AI ColossalChat examples README, SFT for DeepSeek V3]"
          "(https://github.com/hpcaitech/ColossalAI/tree/main/applications/ColossalChat/examples)",
          f"bf16 base {GB(bf16_total)}: {GB(bf16_total / 24)} per GPU over 24; at least {floors['bf16']} H100s for the "
          "weights alone",
          verdict="⚠️",
          why="plausible (their sample uses 256-token sequences); memlib does not model LoRA on MoE"),
    Claim("\"Running its Q4_K_M version using only 14GB VRAM and 382GB DRAM\"",
          "[KTransformers README](https://github.com/kvcache-ai/ktransformers)",
          f"4-bit: routed experts {GB(host)} in host RAM, the rest {GB(gpu_side)} on the GPU",
          verdict="⚠️",
          why="consistent in memory (GGUF's Q4_K_M is ~4.8 bits, a little more than memlib's 4-bit layout); speed not modelled"),
    Claim("\"685B ... 671B of the Main Model weights and 14B of the Multi-Token Prediction (MTP) Module weights\"",
          "[DeepSeek-V3 README](https://github.com/deepseek-ai/DeepSeek-V3)",
          f"MTP from config.json's shapes: {sum(mtp.values()) / 1e9:.1f}B, of which "
          f"{(mtp['embedding copy (V x h)'] + mtp['head copy (h x V)']) / 1e9:.1f}B are the checkpoint's copies of the "
          "embedding and head",
          verdict="✅",
          why="one MLA + MoE block, a 2h × h projection and norms, plus the stored copies; "
              "memlib's 671B leave the module out, as transformers does"),
]
display(Markdown(fact_check_table(facts, headers=["claim", "source", "memlib", "verdict", "why"])))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Where the 671B live

# %% tags=["nbval-check-output"]
parts_fp8 = estimate_inference(m, batch=1, context_len=1).weight_parts   # memlib.estimate_inference, by tensor kind
parts_bf16 = estimate_inference(m, batch=1, context_len=1, weights="bf16").weight_parts
for k, v in parts_fp8.items():
    print(f"{k}: {GB(v)} in fp8 as released, {GB(parts_bf16[k])} in bf16")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
labels = {"linear": "attention (MLA), dense and shared-expert MLPs, router", "experts": "routed experts",
          "embedding": "input embedding", "lm_head": "output head", "norm": "norms", "bias": "biases"}
rows = [[labels[k], GB(parts_fp8[k]), GB(parts_bf16[k])] for k in labels if parts_bf16[k] >= 5e7]
rows.append(["norms and biases", fmt_bytes(parts_fp8["norm"] + parts_fp8["bias"]),
             fmt_bytes(parts_bf16["norm"] + parts_bf16["bias"])])
rows.append(["total", GB(sum(parts_fp8.values())), GB(sum(parts_bf16.values()))])
display(Markdown(markdown_table(rows, ["weights", "fp8 as released (block-wise; the rest bf16)", "bf16"])))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Every serving layout on 8 × H200, at 8k, 32k and 128k

# %% tags=["nbval-check-output"]
by_ctx = {c: plan_serving(m, g, N, context_len=c) for c in CONTEXTS}   # memlib.parallel.plan.plan_serving
for c, r in by_ctx.items():
    print(f"{c // 1024}k: " + ", ".join(f"tp={p.settings['tp']} ep={p.settings['ep']} {p.sequences}"
                                       for p in r.feasible))

# %% jupyter={"source_hidden": true} tags=["hide-input"]
rows = []
for c, r in by_ctx.items():
    rows += [[f"{c // 1024}k", f"tp={p.settings['tp']} ep={p.settings['ep']}", GB(p.weight_bytes),
              GB(p.kv_cache_bytes), p.max_batch.value, p.sequences]
             for p in r.feasible]
display(Markdown(markdown_table(rows, ["context", "layout", "weights/GPU", "KV cache/GPU", "batch per group",
                                       "sequences"])))
display(Markdown("Layouts with tensor parallel 1 and expert parallel below 8 hold no sequence: "
                 + "; ".join(f"ep={s['ep']}: {why}" for s, why in by_ctx[CTX].infeasible if s["tp"] == 1)))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Full fine-tuning on other GPUs

# %% tags=["nbval-check-output"]
ft_all = {(gpu, z): min_gpus_sharded(m, gpu, zero_stage=z, seq_len=FT_SEQ)   # memlib.parallel.moe.min_gpus_sharded
          for gpu in ("h100-80gb", "h200", "b200", "mi300x") for z in (3, "FULL_SHARD")}
for (gpu, z), r in ft_all.items():
    print(f"{gpu} {'ZeRO-3' if z == 3 else z}: {r.count} GPUs, expert parallel {r.ep}")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
rows = [[gpu, "DeepSpeed ZeRO-3" if z == 3 else "FSDP FULL_SHARD (fp32 shards)", r.count, r.ep,
         GB(r.estimate.peak_bytes), GB(r.verdict.capacity_bytes)] for (gpu, z), r in ft_all.items()]
display(Markdown(markdown_table(rows, ["GPU", "sharding", "fewest GPUs (whole nodes)", "expert parallel",
                                       "peak per GPU", "torch sees per GPU"])))
more = [gpu for (gpu, z), r in ft_all.items() if z != 3 and r.count > ft_all[(gpu, 3)].count]
display(Markdown(
    "FSDP under PyTorch AMP keeps fp32 parameters (4 bytes) where DeepSpeed keeps bf16 ones beside an fp32 master, "
    f"and gathers bf16 copies under its mixed-precision policy: a node more on {len(more)} of the "
    f"{len(ft_all) // 2} GPUs ({', '.join(more)}), the same count on the others. Pipeline layouts are not "
    "searched here; DeepSeek's own pre-training used 16-way pipeline, 64-way expert parallelism and ZeRO-1 over "
    "2,048 H800s (report, Sec. 3.2)."))

# %% [markdown]
# **Takeaway: expert parallelism moves the fewest H200s left, because each GPU gathers 1/ep of a layer's
# experts; the states per GPU are the same.** Full fine-tuning per GPU against the number of H200s
# (`memlib.learn.viz.sweep`: ZeRO-3, full recompute, 4k tokens; GiB, what torch shows; the dotted line marks the
# largest count that still does not fit, with the CUDA context and headroom `fits` adds).

# %%
counts = list(range(160, 55, -8))
runs = {f"expert parallel {ep}": [estimate_training(m, seq_len=FT_SEQ, recompute="full", zero_stage=3, dp=n, ep=ep)
                                  for n in counts] for ep in (1, 8)}   # memlib.estimate_training, per GPU
fig, ax = plt.subplots(figsize=(7, 3.4))
sweep(counts, {k: [e.peak_bytes for e in v] for k, v in runs.items()}, gpu=GPU, ax=ax,
      xlabel="number of H200s (ZeRO-3 data parallel)", title="DeepSeek-V3 full fine-tuning: per-GPU peak")
plt.show()
first = {k: min((n for n, e in zip(counts, v) if fits(e, g).fits), default=None) for k, v in runs.items()}
print("fewest H200s on the chart: " + "; ".join(f"{k}: {n if n else f'none up to {max(counts)}'}"
                                               for k, n in first.items()))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## What the training estimates stand on
#
# `validation/results_families.json` holds small DeepSeek-V3- and V2-shaped models (MLA, routed and
# shared experts, dense first layers) built from transformers' own classes under FakeTensorMode and
# trained for two steps; memlib's estimate of each against the measured peak:

# %% tags=["nbval-check-output"]
cases = json.loads((Path("..") / "validation" / "results_families.json").read_text())["cases"]
mla = [c for c in cases if "measured" in c and c["family"].startswith(("deepseek", "mixtral", "qwen3-moe"))]
for c in mla:
    est = estimate_case(c["inputs"]).peak_bytes   # memlib.training.measured.estimate_case -> memlib.estimate_training
    print(f"{c['name']}: measured {gib(c['measured']['peak_bytes']):.3f} GiB, memlib {gib(est):.3f} GiB "
          f"({est / c['measured']['peak_bytes'] - 1:+.2%})")

