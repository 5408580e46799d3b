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
# # 08 · PPO on a 7B: how many A100s? · RLHF 显存：PPO 训练 7B 要几张 A100
#
# ## 1. The question · 问题
#
# > **你用 PPO 训练 7B 模型，需要几张 A100-80G？四个模型各占多少显存？** <br> *You train a 7B model with PPO: how
# > many A100 80GB GPUs do you need, and how much memory does each of the four models take?*
#
# **Reading time:** core path ~12 min; the [deep dive](08_rlhf_memory_deep_dive.ipynb) (fact-check, published
# layouts, more follow-ups) is its own page.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
# %matplotlib inline
import matplotlib.pyplot as plt

from memlib.learn.chapters.ch08 import GPU, MODEL, N
from memlib.learn.kit import GB
from memlib import estimate_inference, estimate_rlhf, estimate_training, fits, get_gpu, get_model, gib, min_rlhf_gpus
from memlib.hardware.fit import usable_bytes
from memlib.serving.inference import kv_bytes_per_token
from memlib.learn.playgrounds.rlhf import RLHFPlayground
from memlib.serving.capacity import VLLM_GPU_MEMORY_UTILIZATION
from memlib.training.rlhf import rollout_pool, rollout_token_slots
from memlib.units import fmt_count

PROMPT, RESPONSE = 1024, 1024   # OpenRLHF's example scripts: --prompt_max_len 1024 --generate_max_len 1024
FRAC = 0.5   # the engine's share of each card: OpenRLHF's hybrid example (--vllm_gpu_memory_utilization 0.5), verl's default
RB = 128     # prompts each engine generates per step: OpenRLHF's --rollout_batch_size 1024 over 8 engines
RUN = dict(prompt_len=PROMPT, response_len=RESPONSE, rollout_batch=RB)  # bf16-mixed AdamW, ZeRO-3, full recompute


# The figures the 30-second answer quotes; the steps below derive each one.
m, P = get_model(MODEL), get_model(MODEL).num_params
whole = estimate_rlhf(MODEL, "ppo", gpus=1, zero_stage=0, gpu=GPU, **RUN)       # step 1: each role unsharded
n_asleep = min_rlhf_gpus(MODEL, GPU, offload_idle=True, **RUN)                  # step 5
n_awake = min_rlhf_gpus(MODEL, GPU, offload_idle=False, **RUN)
a_n_sleep, a_n_wake = f"{n_asleep}", f"{n_awake}"
a_train = f"{whole.roles['actor'].resident_bytes / P:.0f}"
a_frozen = f"{whole.roles['reference'].resident_bytes / P:.0f}"
a_frac = f"{FRAC:g}"
a_serve = f"{VLLM_GPU_MEMORY_UTILIZATION:g}"   # vLLM's own default, a serving value
CAP_GIB = gib(usable_bytes(get_gpu(GPU)))   # what torch reports as the card's total

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. The 30-second answer · 30 秒回答
#
# > **EN** **{eval}`a_n_sleep` A100 80GB minimum if idle models sleep, {eval}`a_n_wake` if every model stays resident:
# > one node.** Rule: two trained models at {eval}`a_train` bytes per parameter, two frozen ones at {eval}`a_frozen`,
# > plus an inference engine that reserves a share of each card you choose ({eval}`a_frac` here). Levers: sleep mode,
# > ZeRO-3, GRPO drops the critic, a rule-based reward drops the reward model, LoRA. Caveat: generation takes most of
# > the time; a bigger batch or group costs time, not memory.
#
# > **中文** **空闲模型休眠时最少 {eval}`a_n_sleep` 张 A100-80G，全部常驻要 {eval}`a_n_wake` 张，一台机。** 规则：两个训练的
# > 模型每参数 {eval}`a_train` 字节，两个冻结的 {eval}`a_frozen` 字节，再加推理引擎：它按你给的比例（这里
# > {eval}`a_frac`）预留每张卡的显存。手段：休眠、ZeRO-3、GRPO 去掉 critic、规则奖励去掉奖励模型、LoRA。注意：生成占大部分
# > 时间；更大的 batch 或 group 花的是时间，不是显存。
#
# The long answer follows: every figure above is derived in section 5.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. What the interviewer is probing · 考察意图
#
# - **Trainable vs frozen.** Two of the four models carry gradients and AdamW states; two are forward-only.
#   "Four times SFT" is the answer of someone who did not count.
# - **The generation engine is a fifth tenant, with a fixed share.** vLLM and SGLang reserve a fraction of each card
#   at start-up and fill it with their weights and a KV pool; what does not fit waits. The batch costs time.
# - **Phases, not a sum.** Rollout, scoring and training happen one after another; frameworks (verl, OpenRLHF's
#   hybrid engine) put idle models to sleep, so the peak is the largest phase.
# - **Placement.** Colocated (one set of GPUs, time-shared) or separate groups per role: a memory and a
#   throughput trade-off, and what 70B runs do.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Words we use · 术语
#
# - **PPO** (proximal policy optimisation): RLHF's classic algorithm; the **actor** (policy) and the **critic** (value model) are trained, the **reference** (the frozen starting policy, for the KL penalty) and the **reward model** only run forwards.
# - **Rollout / rollout engine**: generating responses to prompts; done by an inference engine (vLLM, SGLang) holding a copy of the actor's weights and a **KV cache** (keys and values of every token it is decoding).
# - **Engine share** (`gpu_memory_utilization` in vLLM, `mem_fraction_static` in SGLang): the fraction of each card the engine reserves at start-up; its **KV pool** is what is left after its weights. A **wave** is one round of decoding as many sequences as the pool holds.
# - **Scoring**: the forwards that turn rollouts into training data: old log-probs (actor), KL reference (reference), rewards, values (critic).
# - **GRPO**: no critic; G samples per prompt, each advantage is the reward's z-score inside its group. **DPO**: no rollout and no reward model; a policy and a reference score chosen and rejected answers.
# - **Colocated / hybrid engine, sleep mode**: every role on the same GPUs, idle ones offloaded or asleep; **separate**: a GPU group per role.
# - **ZeRO-3**: parameters, gradients and optimizer states sharded over the data-parallel GPUs. **bf16-mixed AdamW**: 16 bytes per trainable parameter. **GB / GiB**: 1e9 / 2**30 bytes.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. The answer, step by step · 推导
#
# ### Step 1 · Four models: who trains, who only reads
#
# ✏️ **Back of the envelope.** Actor and critic: 7e9 × 16 B = **112 GB each**. Reference and reward model in bf16:
# 7e9 × 2 B = **14 GB each**. Together 252 GB before a single activation: 2.25× the actor alone, not 4×.

# %% tags=["nbval-check-output"]
whole = estimate_rlhf(MODEL, "ppo", gpus=1, zero_stage=0, gpu=GPU, **RUN)   # memlib.estimate_rlhf: each role, unsharded
states = {name: r.resident_bytes for name, r in whole.roles.items() if name != "rollout"}
for name, b in states.items():
    print(f"{name:<9} {GB(b)} ({b / P:.2f} B/param)")
print(f"four models: {GB(sum(states.values()))} for {fmt_count(P)} parameters")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s1_p, s1_four = f"{fmt_count(P)}", f"{GB(sum(states.values()))}"
s1_x = f"{sum(states.values()) / states['actor']:.2f}"
s1_low = f"{1 - 7e9 / P:+.1%}"
s1_head = f"{GB(states['reference'] - states['reward'])}"
s1_vocab = f"{m.vocab_size:,}"

# %% [markdown]
# memlib: **{eval}`s1_four`** for the four models of a {eval}`s1_p`-parameter Llama-2-7B, {eval}`s1_x`× the actor's
# states: a frozen model costs an eighth of a trained one. The pencil's 7e9 is {eval}`s1_low` off the exact count.
# The reward model is {eval}`s1_head` lighter than the reference: it scores with a one-output value head instead of
# the {eval}`s1_vocab`-word LM head.

# %% [markdown]
# ### Step 2 · The rollout engine: a share of the card, not a batch
#
# ✏️ **Back of the envelope.** vLLM takes half of an 80 GB card: **40 GB**. Its bf16 weights are 14 GB; the rest,
# ~26 GB, is the KV pool. Llama-2-7B caches 2 (K and V) × 32 layers × 4,096 dims × 2 B = 0.5 MB per token, so the
# pool holds 26 GB / 0.5 MB ≈ 50k tokens: **about 25 sequences** of 2,048 tokens decode at once.

# %% tags=["nbval-check-output"]
pool = rollout_pool(MODEL, GPU, "vllm", FRAC)   # memlib.training.rlhf.rollout_pool: vLLM's budget at that share
at_once = pool.sequences_at_once(PROMPT, RESPONSE)
waves = pool.waves(RB, PROMPT, RESPONSE)
print(f"{kv_bytes_per_token(m):,} B/token; share {GB(pool.reserved_bytes)} = weights {GB(pool.weight_bytes)} "
      f"+ KV pool {GB(pool.kv_pool_bytes)} + other {GB(pool.other_bytes)}; {at_once} sequences at once, "
      f"{waves} waves for {RB} prompts")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s2_share, s2_pool = f"{GB(pool.reserved_bytes)}", f"{GB(pool.kv_pool_bytes)}"
s2_tokens, s2_seqs, s2_waves = f"{pool.token_slots:,}", f"{at_once}", f"{waves}"
s2_rb = f"{RB}"

# %% [markdown]
# memlib: the engine holds **{eval}`s2_share` per GPU**, whatever you ask it to generate. Its KV pool is
# {eval}`s2_pool`, room for {eval}`s2_tokens` tokens: **{eval}`s2_seqs` sequences at once**. The pencil left out the
# activation peak vLLM profiles and the memory outside torch (the "other" above). A step's {eval}`s2_rb` prompts per
# engine take {eval}`s2_waves` waves: more prompts cost time, not memory. (OpenRLHF's `--micro_rollout_batch_size`,
# 8 to 32 in its example scripts, is the batch of the scoring forwards, not what the engine decodes.)

# %% [markdown]
# ### Step 3 · Everything resident on eight GPUs
#
# ✏️ **Back of the envelope.** ZeRO-3 shards the four models: 252 GB / 8 = 31.5 GB per card. The engine keeps its
# share on every card: + 42 GB (half of the 85 GB torch sees). About **74 GB per card**, before activations.

# %% tags=["nbval-check-output"]
awake = estimate_rlhf(MODEL, "ppo", gpus=N, offload_idle=False, gpu=GPU, **RUN)   # memlib.estimate_rlhf, nothing asleep
for phase, b in awake.phases.items():
    print(f"{phase:<13} {GB(b)} per GPU")
print(f"peak {GB(awake.peak_bytes)} during {awake.peak_at}; fits an A100 80GB: {fits(awake, GPU).fits}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s3_peak, s3_at = f"{GB(awake.peak_bytes)}", f"{awake.peak_at.replace('_', ' ')}"
s3_margin = f"{fits(awake, GPU).margin_gib:+.1f} GiB"
s3_verdict = f"{'It fits' if fits(awake, GPU).fits else 'It does not fit'}"
s3_act = f"{GB(awake.roles['actor'].peak_bytes - awake.roles['actor'].resident_bytes)}"

# %% [markdown]
# memlib: **{eval}`s3_peak` per GPU** during {eval}`s3_at`; the pencil left out the actor's activations, logits and
# gathered layer ({eval}`s3_act` on top of its states). {eval}`s3_verdict`: the margin is {eval}`s3_margin` once the
# CUDA context and allocator headroom are counted. A smaller engine share buys room, at the price of fewer sequences
# at once.

# %% [markdown]
# ### Step 4 · Hybrid engine: idle models sleep, the peak is one phase
#
# ✏️ **Back of the envelope.** Only one thing runs at a time. Generation: the engine's 42 GB. Training the actor:
# 112 GB / 8 = 14 GB of states plus activations. The largest phase, **about 42 GB**, is the peak.

# %% tags=["nbval-check-output"]
asleep = estimate_rlhf(MODEL, "ppo", gpus=N, offload_idle=True, gpu=GPU, **RUN)   # memlib.estimate_rlhf, vLLM/DeepSpeed sleep
for phase, b in asleep.phases.items():
    print(f"{phase:<13} {GB(b)} per GPU")
print(f"peak {GB(asleep.peak_bytes)} during {asleep.peak_at}; sum of every role's own peak {GB(asleep.sum_of_roles)}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s4_peak, s4_at = f"{GB(asleep.peak_bytes)}", f"{asleep.peak_at.replace('_', ' ')}"
s4_sum, s4_train = f"{GB(asleep.sum_of_roles)}", f"{GB(asleep.phases['train_actor'])}"
s4_x = f"{awake.peak_bytes / asleep.peak_bytes:.1f}"

# %% [markdown]
# memlib: **{eval}`s4_peak`** during {eval}`s4_at`: the engine's share is the largest phase. That is {eval}`s4_x`×
# less than with everything resident. Training the actor needs {eval}`s4_train`. Adding every role's own peak ({eval}`s4_sum`) is the mistake sleep mode exists to
# avoid. The price: the sleeping states live in pinned host RAM and move back each step.

# %% [markdown]
# ### Step 5 · How many A100 80GB?
#
# ✏️ **Back of the envelope.** Asleep, the actor's training is the wall: 112 GB / n + activations < 80 GB gives
# n = **2** (the engine's 42 GB fits on any count). Resident, 252 GB / n + 42 GB + activations < 80 GB gives
# n ≥ **8**.

# %% tags=["nbval-check-output"]
n_asleep = min_rlhf_gpus(MODEL, GPU, offload_idle=True, **RUN)    # memlib.min_rlhf_gpus: fewest that fit (colocated)
n_awake = min_rlhf_gpus(MODEL, GPU, offload_idle=False, **RUN)
at_min = estimate_rlhf(MODEL, "ppo", gpus=n_asleep, gpu=GPU, **RUN)
print(f"hybrid engine: {n_asleep} GPUs (peak {GB(at_min.peak_bytes)} at {at_min.peak_at}); resident: {n_awake}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s5_min_peak, s5_min_at = f"{GB(at_min.peak_bytes)}", f"{at_min.peak_at.replace('_', ' ')}"
s5_min_margin = f"{fits(at_min, GPU).margin_gib:+.1f} GiB"

# %% [markdown]
# memlib: **{eval}`a_n_sleep` GPUs** with sleep mode, **{eval}`a_n_wake`** with everything resident. At the minimum
# the peak is {eval}`s5_min_peak` during {eval}`s5_min_at` (margin {eval}`s5_min_margin`). In an interview say both, then what people
# run: one 8-GPU node (OpenRLHF's Llama-3-8B hybrid example uses eight), because two cards would generate and train
# slowly.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Charts · 图
#
# **Takeaway: with everything resident every phase carries the whole stack; asleep, each phase carries only itself.**
# Per-GPU bytes of each phase on 8 A100s (`memlib.estimate_rlhf`, linear bars, the card's capacity dashed).

# %% jupyter={"source_hidden": true} tags=["hide-input"]
fig, ax = plt.subplots(figsize=(7.5, 3.4))
names = list(awake.phases)
xs = range(len(names))
ax.bar([x - 0.2 for x in xs], [gib(awake.phases[p]) for p in names], width=0.4, label="every role resident")
ax.bar([x + 0.2 for x in xs], [gib(asleep.phases[p]) for p in names], width=0.4, label="idle roles asleep")
ax.axhline(CAP_GIB, color="k", ls="--", lw=1)
ax.set_xticks(list(xs), [p.replace("_", " ") for p in names])
ax.set_ylabel("GiB per GPU")
ax.set_title(f"PPO on {MODEL}, {N} A100 80GB, ZeRO-3: each phase", fontsize=10)
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# **Takeaway: the engine's share is a dial you set; the KV pool is what is left after its weights, and it decides how
# many sequences decode at once.** One card's share at each `gpu_memory_utilization` (`memlib.training.rlhf.rollout_pool`),
# split into weights, KV pool and the rest; the label on each bar is the sequences of 2,048 tokens it decodes at once.

# %%
FRACS = [0.3, 0.4, 0.5, 0.6, 0.7]
pools = [rollout_pool(MODEL, GPU, "vllm", f) for f in FRACS]
fig, ax = plt.subplots(figsize=(7, 3.4))
labels = [f"{f:g}" for f in FRACS]
bottom = [0.0] * len(FRACS)
for part, colour in (("weight_bytes", "tab:blue"), ("kv_pool_bytes", "tab:orange"), ("other_bytes", "tab:gray")):
    vals = [gib(getattr(p, part)) for p in pools]
    ax.bar(labels, vals, bottom=bottom, color=colour, label=part.replace("_bytes", "").replace("_", " "))
    bottom = [b + v for b, v in zip(bottom, vals)]
for i, p in enumerate(pools):
    ax.text(i, bottom[i], f"{p.sequences_at_once(PROMPT, RESPONSE)} seqs", ha="center", va="bottom", fontsize=8)
ax.axhline(CAP_GIB, color="k", ls="--", lw=1)
ax.set_xlabel("gpu_memory_utilization")
ax.set_ylabel("GiB per GPU")
ax.set_title(f"vLLM's share of an A100 80GB, {MODEL}", fontsize=10)
ax.legend(fontsize=8)
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. Playground · 动手试
#
# Try: switch to GRPO and raise the group size to 64 (watch the waves, not the memory); lower the engine's share;
# untick "idle roles sleep"; set the model to llama-3.1-70b and find the GPU count where it fits.

# %%
RLHFPlayground(model=MODEL, algorithm="ppo", gpu=GPU, gpus=N, rollout_batch=RB)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8. Follow-up questions · 追问
#
# ### 追问 1 · GRPO instead of PPO: what does dropping the critic save, and what does the group cost?

# %% tags=["nbval-check-output"]
G8 = 8   # samples per prompt (OpenRLHF's GRPO examples: --n_samples_per_prompt 8)
grpo = estimate_rlhf(MODEL, "grpo", gpus=N, offload_idle=False, group_size=G8, gpu=GPU, **RUN)   # memlib.estimate_rlhf
shared, apart = rollout_token_slots(PROMPT, RESPONSE, G8), rollout_token_slots(PROMPT, RESPONSE, G8, shared_prefix=False)
print(f"peak {GB(grpo.peak_bytes)} vs PPO {GB(awake.peak_bytes)}; waves {grpo.waves} vs {awake.waves}; "
      f"slots per group {shared:,} vs {apart:,}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
f1_grpo, f1_critic = f"{GB(grpo.peak_bytes)}", f"{GB(awake.roles['critic'].resident_bytes)}"
f1_g, f1_wg, f1_wp = f"{G8}", f"{grpo.waves}", f"{awake.waves}"
f1_shared, f1_apart = f"{shared:,}", f"{apart:,}"
f1_save = f"{1 - shared / apart:.0%}"

# %% [markdown]
# With the same engine share and everything resident, GRPO needs **{eval}`f1_grpo`** per GPU: lighter than PPO by
# exactly the critic's {eval}`f1_critic` of sharded states. The group of {eval}`f1_g` does not grow the engine: it
# multiplies the sequences to decode, so the rollout takes more waves.
#
# | per engine, {eval}`s2_rb` prompts | PPO | GRPO, G = {eval}`f1_g` |
# |---|---|---|
# | waves of decoding | {eval}`f1_wp` | {eval}`f1_wg` |
#
# The G samples share their prompt's KV blocks: a group needs {eval}`f1_shared` token slots, not {eval}`f1_apart`
# ({eval}`f1_save` fewer), when the engine caches prefixes (vLLM V1's default; OpenRLHF's flag
# `--enable_prefix_caching` is off unless set).

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### 追问 2 · DPO: what does it need?

# %% tags=["nbval-check-output"]
dpo = estimate_rlhf(MODEL, "dpo", gpus=N, prompt_len=PROMPT, response_len=RESPONSE, micro_batch=2)  # 2 pairs
n_dpo = min_rlhf_gpus(MODEL, GPU, "dpo", prompt_len=PROMPT, response_len=RESPONSE, micro_batch=2)
print(list(dpo.roles), GB(dpo.peak_bytes), n_dpo)

# %% jupyter={"source_hidden": true} tags=["remove-input"]
f2_peak, f2_n = f"{GB(dpo.peak_bytes)}", f"{n_dpo}"
f2_ref = f"{GB(whole.roles['reference'].resident_bytes)}"

# %% [markdown]
# Two models, no generation: the policy trains and a frozen reference ({eval}`f2_ref` in bf16) scores. Each pair is a
# chosen and a rejected sequence, so 2 pairs are 4 sequences per forward. On 8 GPUs: **{eval}`f2_peak`** per GPU; it
# fits on {eval}`f2_n`, like supervised fine-tuning plus a reference. Precomputing the reference's log-probs once
# (TRL's `precompute_ref_log_probs`) removes even that.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### 追问 3 · And a 70B with PPO?

# %% tags=["nbval-check-output"]
BIG = "llama-3.1-70b"
n70 = {off: min_rlhf_gpus(BIG, GPU, offload_idle=off, rollout_tp=4, **RUN) for off in (True, False)}  # memlib
try:
    rollout_pool(BIG, GPU, "vllm", FRAC, tp=2)
    tp2 = "starts"
except ValueError:
    tp2 = "refuses to start"
actor70 = estimate_training(BIG, seq_len=PROMPT + RESPONSE).model_state_bytes   # memlib: 16 B/param, one GPU
w70 = estimate_inference(BIG, weights="bf16", tp=2).weight_bytes   # memlib: bf16 weights per GPU at tensor parallel 2
print(n70, f"tp 2 at {FRAC}: {tp2} ({GB(w70)} of weights per GPU)")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
f3_sleep, f3_wake, f3_tp2 = f"{n70[True]}", f"{n70[False]}", f"{tp2}"
f3_states = f"{GB(actor70)}"
f3_w = f"{GB(w70)}"

# %% [markdown]
# The actor's states alone are {eval}`f3_states`. Colocated with sleep mode and engines of tensor parallel 4, memlib
# finds **{eval}`f3_sleep` A100 80GB**; with everything resident **{eval}`f3_wake`**. At tensor parallel 2 and half
# of each card, the engine {eval}`f3_tp2`: its {eval}`f3_w` of weights per GPU exceed its share. OpenRLHF's tuning guide
# suggests 48 A100s for a 70B, 16 each for vLLM, actor and critic; the deep dive checks that and a 32-GPU layout.
#
# More follow-ups (the objectives and the models RLVR and DAPO keep, colocated or separate engines, the weight sync's
# bytes and time, asynchronous RL and the sampler mismatch, what the engine's share buys, what OpenRLHF's published
# layouts need) are on the [deep-dive page](08_rlhf_memory_deep_dive.ipynb).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9. Pitfalls · 避坑
#
# - Counting 16 B/param for all four models: the frozen ones need bf16 weights only.
# - Sizing the rollout's KV cache as batch × G × length: vLLM and SGLang reserve a fixed share and queue the rest;
#   the batch and G add waves (time), not memory. Only transformers' `generate` holds the whole batch at once.
# - Calling GRPO heavier because of G: at an equal engine share it is lighter by the critic's states ({eval}`f1_critic`).
# - Adding every role's peak ({eval}`s4_sum`) when the framework sleeps idle models: the peak is one phase.
# - Leaving `gpu_memory_utilization` at a serving value ({eval}`a_serve`) when colocated: the trainer needs the rest of the card.
# - Forgetting the host RAM sleep mode and `--adam_offload` need: the offloaded states move to pinned memory.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10. Deep dive (skip on first read) · 深入（可跳过）
#
# On its own page, [08 · deep dive](08_rlhf_memory_deep_dive.ipynb): the fact-check of claims that circulate about
# RLHF memory, OpenRLHF's published layouts checked against memlib, colocated vs separate groups, what the
# engine's share buys, PPO/GRPO/DPO/RLVR/DAPO side by side, the weight sync, and asynchronous RL.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 11. Further reading · 延伸阅读
#
# - Ouyang et al. 2022, *Training language models to follow instructions with human feedback* (InstructGPT), [arXiv:2203.02155](https://arxiv.org/abs/2203.02155)
# - Schulman et al. 2017, *Proximal Policy Optimization Algorithms*, [arXiv:1707.06347](https://arxiv.org/abs/1707.06347)
# - Shao et al. 2024, *DeepSeekMath* (GRPO, Sec. 4.1), [arXiv:2402.03300](https://arxiv.org/abs/2402.03300)
# - Rafailov et al. 2023, *Direct Preference Optimization*, [arXiv:2305.18290](https://arxiv.org/abs/2305.18290)
# - Hu et al. 2024, *OpenRLHF: An Easy-to-use, Scalable and High-performance RLHF Framework*, [arXiv:2405.11143](https://arxiv.org/abs/2405.11143); [github.com/OpenRLHF/OpenRLHF](https://github.com/OpenRLHF/OpenRLHF) (hybrid engine example: `examples/scripts/train_ppo_llama_ray_hybrid_engine.sh`)
# - Sheng et al. 2024, *HybridFlow: A Flexible and Efficient RLHF Framework* (verl), [arXiv:2409.19256](https://arxiv.org/abs/2409.19256); rollout settings in `verl/trainer/config/rollout/rollout.yaml`
# - Yao et al. 2023, *DeepSpeed-Chat*, [arXiv:2308.01320](https://arxiv.org/abs/2308.01320)
# - Kwon et al. 2023, *Efficient Memory Management for Large Language Model Serving with PagedAttention* (vLLM), [arXiv:2309.06180](https://arxiv.org/abs/2309.06180)
