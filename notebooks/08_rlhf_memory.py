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

from memlib import estimate_rlhf, estimate_training, fits, fmt_bytes, get_gpu, get_model, gib, min_rlhf_gpus
from memlib.fit import usable_bytes
from memlib.inference import kv_bytes_per_token
from memlib.learn.playgrounds.rlhf import RLHFPlayground
from memlib.serving.capacity import vllm_max_concurrency
from memlib.units import fmt_count
from memlib.viz import sweep

MODEL, GPU, N = "llama-2-7b", "a100-80gb", 8   # the classic 7B; one 8-GPU node
PROMPT, RESPONSE = 1024, 1024   # OpenRLHF's example scripts: --prompt_max_len 1024 --generate_max_len 1024
RB = 16                         # prompts each rollout engine decodes at once (vLLM's running batch)
RUN = dict(prompt_len=PROMPT, response_len=RESPONSE, rollout_batch=RB)  # bf16-mixed AdamW, ZeRO-3, full recompute


def GB(n_bytes):
    """GB (1e9), labelled."""
    return f"{n_bytes / 1e9:,.1f} GB"


def G(n_bytes):
    """GiB, labelled (what torch and nvidia-smi show)."""
    return f"{gib(n_bytes):,.1f} GiB"


# The figures the 30-second answer quotes; the steps below derive each one.
m, P = get_model(MODEL), get_model(MODEL).num_params
whole = estimate_rlhf(MODEL, "ppo", gpus=1, zero_stage=0, **RUN)            # step 1: each role unsharded
awake = estimate_rlhf(MODEL, "ppo", gpus=N, offload_idle=False, **RUN)      # step 3: everything resident
asleep = estimate_rlhf(MODEL, "ppo", gpus=N, offload_idle=True, **RUN)      # step 4: hybrid engine
n_asleep = min_rlhf_gpus(MODEL, GPU, offload_idle=True, **RUN)              # step 5
n_awake = min_rlhf_gpus(MODEL, GPU, offload_idle=False, **RUN)
a_n_sleep, a_n_wake = f"{n_asleep}", f"{n_awake}"
a_actor, a_ref = GB(whole.roles["actor"].resident_bytes), GB(whole.roles["reference"].resident_bytes)
a_kv, a_seqs = GB(whole.roles["rollout"].estimate.kv_cache_bytes), f"{RB}"
a_wake, a_sleep = GB(awake.peak_bytes), GB(asleep.peak_bytes)
CAP_GIB = gib(usable_bytes(get_gpu(GPU)))   # what torch reports as the card's total

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. The 30-second answer · 30 秒回答
#
# > **EN** **{eval}`a_n_sleep` A100 80GB at the minimum with a hybrid engine, {eval}`a_n_wake` if every model stays
# > resident; one 8-GPU node in practice.** PPO holds four models. Actor and critic train: 16 bytes per parameter,
# > {eval}`a_actor` each. Reference and reward model are frozen bf16 weights, {eval}`a_ref` each. The rollout engine
# > adds its own weight copy and {eval}`a_kv` of KV cache for {eval}`a_seqs` sequences. On eight cards: {eval}`a_wake`
# > each with everything resident, {eval}`a_sleep` with idle models asleep.
#
# > **中文** **混合引擎（空闲模型休眠）最少 {eval}`a_n_sleep` 张 A100-80G；所有模型常驻要 {eval}`a_n_wake` 张；实际用一台
# > 8 卡机。** PPO 有四个模型：actor 和 critic 要训练，每参数 16 字节，各 {eval}`a_actor`；reference 和 reward 冻结，
# > 只存 bf16 权重，各 {eval}`a_ref`。rollout 引擎另有一份权重和 {eval}`a_seqs` 条序列的 KV cache {eval}`a_kv`。8 卡
# > 全部常驻每卡 {eval}`a_wake`；休眠时每卡 {eval}`a_sleep`。
#
# The long answer follows: every figure above is derived in section 5.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. What the interviewer is probing · 考察意图
#
# - **Trainable vs frozen.** Two of the four models carry gradients and AdamW states (16 B/param); two are
#   forward-only (2 B/param in bf16). "Four times SFT" is the answer of someone who did not count.
# - **The generation engine is a fifth tenant.** vLLM or SGLang keep their own copy of the actor's weights and a
#   KV cache sized by the rollout batch and the response length.
# - **Phases, not a sum.** Rollout, scoring and training happen one after another; frameworks (verl, OpenRLHF's
#   hybrid engine) put idle models to sleep, so the peak is the largest phase.
# - **Placement.** Colocated (one set of GPUs, time-shared) or separate groups per role: a memory and a
#   throughput trade-off, and what 70B runs do.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Words we use · 术语
#
# - **PPO** (proximal policy optimisation): RLHF's classic algorithm; the **actor** (policy) and the **critic** (value model) are trained, the **reference** (the frozen starting policy, for the KL penalty) and the **reward model** only run forwards.
# - **Rollout / rollout engine**: generating responses to prompts; done by an inference engine (vLLM, SGLang) holding a copy of the actor's weights and a **KV cache** (keys and values of every generated token).
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
whole = estimate_rlhf(MODEL, "ppo", gpus=1, zero_stage=0, **RUN)   # memlib.estimate_rlhf: each role, unsharded
states = {name: r.resident_bytes for name, r in whole.roles.items() if name != "rollout"}
for name, b in states.items():
    print(f"{name:<9} {GB(b)} ({b / P:.0f} B/param)")
print(f"four models: {GB(sum(states.values()))} for {fmt_count(P)} parameters")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s1_p, s1_four = f"{fmt_count(P)}", f"{GB(sum(states.values()))}"
s1_x = f"{sum(states.values()) / states['actor']:.2f}"
s1_low = f"{1 - 7e9 / P:+.1%}"

# %% [markdown]
# memlib: **{eval}`s1_four`** for the four models of a {eval}`s1_p`-parameter Llama-2-7B, {eval}`s1_x`× the actor's
# states: frozen models cost an eighth of a trained one. The pencil's 7e9 is {eval}`s1_low` off the exact count.

# %% [markdown]
# ### Step 2 · The rollout engine: a weight copy and a KV cache
#
# ✏️ **Back of the envelope.** Llama-2-7B caches 2 (K and V) × 32 layers × 4,096 dims × 2 B = 0.5 MB per token.
# 16 prompts × 2,048 tokens × 0.5 MB = **17 GB**, plus the engine's bf16 weights, 14 GB.

# %% tags=["nbval-check-output"]
kv_tok = kv_bytes_per_token(m)                     # memlib.serving.inference: 2 x layers x kv_heads x head_dim x 2 B
engine = whole.roles["rollout"].estimate           # estimate_inference(engine="vllm") inside estimate_rlhf
print(f"{kv_tok:,} B/token; KV {GB(engine.kv_cache_bytes)}; weights {GB(engine.weight_bytes)}; "
      f"peak {GB(engine.peak_bytes)}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s2_tok, s2_kv, s2_w = f"{kv_tok:,}", f"{GB(engine.kv_cache_bytes)}", f"{GB(engine.weight_bytes)}"
s2_peak, s2_act = f"{GB(engine.peak_bytes)}", f"{GB(engine.activation_bytes)}"
s2_conc = f"{vllm_max_concurrency(MODEL, GPU, max_model_len=PROMPT + RESPONSE):.0f}"

# %% [markdown]
# memlib: {eval}`s2_tok` bytes per token, so **{eval}`s2_kv`** of KV cache next to {eval}`s2_w` of weights; the
# chunked prefill adds {eval}`s2_act` ({eval}`s2_peak` in all). vLLM does not wait for you to choose: it fills the
# memory you give it with cache, room for {eval}`s2_conc` such sequences on one A100 at its default 0.9 fraction.

# %% [markdown]
# ### Step 3 · Everything resident on eight GPUs
#
# ✏️ **Back of the envelope.** ZeRO-3 shards the four models: 252 GB / 8 = 31.5 GB per card. The engine is not
# sharded (tensor parallel 1): + 31 GB. About **63 GB per card**, before activations.

# %% tags=["nbval-check-output"]
awake = estimate_rlhf(MODEL, "ppo", gpus=N, offload_idle=False, **RUN)   # memlib.estimate_rlhf, nothing asleep
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
# CUDA context and allocator headroom are counted.

# %% [markdown]
# ### Step 4 · Hybrid engine: idle models sleep, the peak is one phase
#
# ✏️ **Back of the envelope.** Only one thing runs at a time. Generation: 14 + 17 = 31 GB. Training the actor:
# 112 GB / 8 = 14 GB of states plus activations. The largest phase, **about 31 GB**, is the peak.

# %% tags=["nbval-check-output"]
asleep = estimate_rlhf(MODEL, "ppo", gpus=N, offload_idle=True, **RUN)   # memlib.estimate_rlhf, vLLM/DeepSpeed sleep
for phase, b in asleep.phases.items():
    print(f"{phase:<13} {GB(b)} per GPU")
print(f"peak {GB(asleep.peak_bytes)} during {asleep.peak_at}; sum of every role's own peak {GB(asleep.sum_of_roles)}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s4_peak, s4_at = f"{GB(asleep.peak_bytes)}", f"{asleep.peak_at.replace('_', ' ')}"
s4_sum, s4_train = f"{GB(asleep.sum_of_roles)}", f"{GB(asleep.phases['train_actor'])}"
s4_x = f"{awake.peak_bytes / asleep.peak_bytes:.1f}"

# %% [markdown]
# memlib: **{eval}`s4_peak`** during {eval}`s4_at`, {eval}`s4_x`× less than with everything resident; training the
# actor needs {eval}`s4_train`. Adding every role's own peak ({eval}`s4_sum`) is the mistake sleep mode exists to
# avoid. The price: the sleeping states live in pinned host RAM and move back each step.

# %% [markdown]
# ### Step 5 · How many A100 80GB?
#
# ✏️ **Back of the envelope.** Asleep, the actor's training is the wall: 112 GB / n + activations < 80 GB gives
# n = **2**. Resident, 252 GB / n + 31 GB of engine < 80 GB gives n ≥ **6**.

# %% tags=["nbval-check-output"]
n_asleep = min_rlhf_gpus(MODEL, GPU, offload_idle=True, **RUN)    # memlib.min_rlhf_gpus: fewest that fit (colocated)
n_awake = min_rlhf_gpus(MODEL, GPU, offload_idle=False, **RUN)
at_min = estimate_rlhf(MODEL, "ppo", gpus=n_asleep, **RUN)
print(f"hybrid engine: {n_asleep} GPUs (peak {GB(at_min.peak_bytes)} at {at_min.peak_at}); resident: {n_awake}")

# %% jupyter={"source_hidden": true} tags=["remove-input"]
s5_min_peak, s5_min_at = f"{GB(at_min.peak_bytes)}", f"{at_min.peak_at.replace('_', ' ')}"
s5_min_margin = f"{fits(at_min, GPU).margin_gib:+.1f} GiB"

# %% [markdown]
# memlib: **{eval}`a_n_sleep` GPUs** with sleep mode ({eval}`s5_min_peak` during {eval}`s5_min_at`,
# {eval}`s5_min_margin`), **{eval}`a_n_wake`** with everything resident. In an interview say both, then what people
# run: one 8-GPU node (OpenRLHF's Llama-3-8B example uses eight), because two cards would generate and train slowly.

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
# **Takeaway: sleep mode moves the fewest cards that hold PPO from {eval}`a_n_wake` down to {eval}`a_n_sleep`.** Per-GPU peak
# against the GPU count (`memlib.viz.sweep`, with the CUDA context and allocator headroom `fits` adds).

# %%
COUNTS = [1, 2, 3, 4, 6, 8, 16]
runs = {label: [fits(estimate_rlhf(MODEL, "ppo", gpus=c, offload_idle=off, **RUN), GPU).required_bytes
                for c in COUNTS] for label, off in (("every role resident", False), ("idle roles asleep", True))}
fig, ax = plt.subplots(figsize=(7, 3.4))
sweep(COUNTS, runs, gpu=GPU, ax=ax, xlabel="GPUs (all roles colocated, ZeRO-3)",
      title=f"PPO on {MODEL}: per-GPU requirement")
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. Playground · 动手试
#
# Try: switch to GRPO and raise the group size to 64; untick "idle roles sleep"; set the model to llama-3.1-70b
# and find the GPU count where it fits; push the response to 32k tokens and watch the rollout phase.

# %%
RLHFPlayground(model=MODEL, algorithm="ppo", gpu=GPU, gpus=N, rollout_batch=RB)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8. Follow-up questions · 追问
#
# ### 追问 1 · GRPO instead of PPO: what does dropping the critic save?

# %% tags=["nbval-check-output"]
G8 = 8   # samples per prompt (OpenRLHF's GRPO examples: --n_samples_per_prompt 8)
grpo = {rb: estimate_rlhf(MODEL, "grpo", gpus=N, offload_idle=False, group_size=G8, prompt_len=PROMPT,
                          response_len=RESPONSE, rollout_batch=rb) for rb in (RB // G8, RB)}   # memlib.estimate_rlhf
print({rb: GB(e.peak_bytes) for rb, e in grpo.items()}, "PPO", GB(awake.peak_bytes))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
f1_same, f1_more = f"{GB(grpo[RB // G8].peak_bytes)}", f"{GB(grpo[RB].peak_bytes)}"
f1_critic = f"{GB(awake.roles['critic'].resident_bytes)}"
f1_prompts, f1_seqs = f"{RB // G8}", f"{RB * G8}"

# %% [markdown]
# With everything resident and the same {eval}`a_seqs` sequences in flight ({eval}`f1_prompts` prompts × 8), GRPO
# needs {eval}`f1_same` per GPU instead of {eval}`a_wake`: exactly the critic's {eval}`f1_critic` of sharded states.
# Keep 16 prompts per engine and the group of 8 makes {eval}`f1_seqs` sequences: **{eval}`f1_more`**. GRPO trades
# the critic's memory for rollout KV cache.

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
# Two models, no generation: the policy trains (16 B/param) and a frozen reference ({eval}`f2_ref` in bf16) scores;
# each pair is a chosen and a rejected sequence, so 2 pairs are 4 sequences per forward. On 8 GPUs: **{eval}`f2_peak`**
# per GPU; it fits on {eval}`f2_n`, like supervised fine-tuning plus a reference. Precomputing the reference's
# log-probs once (TRL's `precompute_ref_log_probs`) removes even that.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### 追问 3 · And a 70B with PPO?

# %% tags=["nbval-check-output"]
BIG = "llama-3.1-70b"
n70 = {off: min_rlhf_gpus(BIG, GPU, offload_idle=off, rollout_tp=4, **RUN) for off in (True, False)}  # memlib
print(n70)

# %% jupyter={"source_hidden": true} tags=["remove-input"]
f3_sleep, f3_wake = f"{n70[True]}", f"{n70[False]}"
f3_states = f"{GB(16 * get_model(BIG).num_params)}"

# %% [markdown]
# The actor's states alone are {eval}`f3_states`. Colocated with sleep mode (engines of tensor parallel 4) memlib
# finds **{eval}`f3_sleep` A100 80GB**; with everything resident **{eval}`f3_wake`**. OpenRLHF's tuning guide suggests
# 48 A100s for a 70B, 16 each for vLLM, actor and critic; the deep dive checks that and a 32-GPU layout.
#
# More follow-ups (colocated or separate groups, why the rollout's KV cache decides the batch, what OpenRLHF's
# published layouts need) are on the [deep-dive page](08_rlhf_memory_deep_dive.ipynb).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9. Pitfalls · 避坑
#
# - Counting 16 B/param for all four models: the frozen ones need {eval}`a_ref` each, not {eval}`a_actor`.
# - Forgetting the rollout engine: its weight copy and {eval}`a_kv` of KV cache are a fifth tenant.
# - Adding every role's peak ({eval}`s4_sum`) when the framework sleeps idle models: the peak is one phase.
# - Assuming GRPO is always lighter: the group of G multiplies the sequences in the cache ({eval}`f1_more` above).
# - Sizing vLLM's `gpu_memory_utilization` for serving: colocated, it must leave room for the training phase.
# - Forgetting the host RAM sleep mode and `--adam_offload` need: the offloaded states move to pinned memory.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10. Deep dive (skip on first read) · 深入（可跳过）
#
# On its own page, [08 · deep dive](08_rlhf_memory_deep_dive.ipynb): the fact-check of claims that circulate about
# RLHF memory, OpenRLHF's published layouts checked against memlib, colocated vs separate groups, and the rollout's
# KV cache against its batch.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 11. Further reading · 延伸阅读
#
# - Ouyang et al. 2022, *Training language models to follow instructions with human feedback* (InstructGPT), [arXiv:2203.02155](https://arxiv.org/abs/2203.02155)
# - Schulman et al. 2017, *Proximal Policy Optimization Algorithms*, [arXiv:1707.06347](https://arxiv.org/abs/1707.06347)
# - Shao et al. 2024, *DeepSeekMath* (GRPO, Sec. 4.1), [arXiv:2402.03300](https://arxiv.org/abs/2402.03300)
# - Rafailov et al. 2023, *Direct Preference Optimization*, [arXiv:2305.18290](https://arxiv.org/abs/2305.18290)
# - Hu et al. 2024, *OpenRLHF: An Easy-to-use, Scalable and High-performance RLHF Framework*, [arXiv:2405.11143](https://arxiv.org/abs/2405.11143); [github.com/OpenRLHF/OpenRLHF](https://github.com/OpenRLHF/OpenRLHF)
# - Sheng et al. 2024, *HybridFlow: A Flexible and Efficient RLHF Framework* (verl), [arXiv:2409.19256](https://arxiv.org/abs/2409.19256)
# - Yao et al. 2023, *DeepSpeed-Chat*, [arXiv:2308.01320](https://arxiv.org/abs/2308.01320)
# - Kwon et al. 2023, *Efficient Memory Management for Large Language Model Serving with PagedAttention* (vLLM), [arXiv:2309.06180](https://arxiv.org/abs/2309.06180)
