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
# # 08 · deep dive · 深入：RLHF 显存
#
# The material behind [notebook 08](08_rlhf_memory.ipynb)'s answer, for a second reading: more follow-up
# questions, OpenRLHF's published layouts checked against memlib, and the fact-check of claims that circulate.

# %% jupyter={"source_hidden": true} tags=["hide-input"]
from IPython.display import Markdown, display

from memlib.learn.chapters.ch08 import GPU, MODEL, N
from memlib.learn.kit import GB, G
from memlib import estimate_rlhf, estimate_training, fits, get_gpu, get_model
from memlib.training.explain import markdown_table
from memlib.learn.factcheck import Claim, fact_check_table
from memlib.hardware.fit import max_peak_bytes, usable_bytes
from memlib.serving.capacity import vllm_max_concurrency
from memlib.serving.inference import kv_cache_bytes

PROMPT, RESPONSE, RB = 1024, 1024, 128
RUN = dict(prompt_len=PROMPT, response_len=RESPONSE, rollout_batch=RB)


# The figures of the core page (08_rlhf_memory), computed the same way.
P = get_model(MODEL).num_params
whole = estimate_rlhf(MODEL, "ppo", gpus=1, zero_stage=0, **RUN)
awake = estimate_rlhf(MODEL, "ppo", gpus=N, offload_idle=False, **RUN)
asleep = estimate_rlhf(MODEL, "ppo", gpus=N, offload_idle=True, **RUN)
grpo = {off: estimate_rlhf(MODEL, "grpo", gpus=N, offload_idle=off, group_size=8, **RUN) for off in (True, False)}
# DPO against SFT at equal tokens: one pair (a chosen and a rejected sequence) against two SFT sequences; the
# reference stays on the GPU (TRL's and OpenRLHF's default)
dpo = estimate_rlhf(MODEL, "dpo", gpus=N, prompt_len=PROMPT, response_len=RESPONSE, micro_batch=1, offload_idle=False)
sft = estimate_training(MODEL, seq_len=PROMPT + RESPONSE, micro_batch=2, zero_stage=3, dp=N, recompute="full")
CAP = usable_bytes(get_gpu(GPU))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## More follow-up questions · 更多追问
#
# ### Colocated or separate groups? OpenRLHF's Llama-3-8B layout
#
# OpenRLHF's Ray PPO example (`examples/scripts/train_ppo_llama_ray.sh` at OpenRLHF@473f61bd) puts the actor and
# the reference on 2 GPUs (`--colocate_actor_ref`), the critic and the reward model on 2 (`--colocate_critic_reward`),
# and 2 vLLM engines of tensor parallel 2 on 4: eight A100 80GB, ZeRO-3 with `--adam_offload`, prompts and responses
# up to 1,024 tokens, `--micro_train_batch_size 16` with packed samples.

# %% tags=["nbval-check-output"]
LAYOUT = {"actor": 2, "critic": 2, "reference": 2, "reward": 2, "rollout": 4}
sep = {mb: estimate_rlhf("llama-3-8b", "ppo", placement="separate", gpus=LAYOUT, rollout_tp=2, offload="optimizer",
                         micro_batch=mb, **RUN) for mb in (4, 16)}     # memlib.estimate_rlhf, one group per role
pair = {mb: e.roles["actor"].peak_bytes + e.roles["reference"].resident_bytes for mb, e in sep.items()}
print({mb: G(b) for mb, b in pair.items()}, "engine", G(sep[4].roles["rollout"].peak_bytes), "card", G(CAP))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
d1_four, d1_sixteen, d1_cap = f"{G(pair[4])}", f"{G(pair[16])}", f"{G(CAP)}"
d1_engine, d1_frac = f"{G(sep[4].roles['rollout'].peak_bytes)}", f"{sep[4].pool.fraction:g}"

# %% [markdown]
# Two models share a pair of GPUs without sleeping, so their bytes add: the actor's training peak plus the
# reference's weights. With 4 full-length sequences of 2,048 tokens per micro-batch the pair needs
# {eval}`d1_four`. With 16 it needs {eval}`d1_sixteen`, at the edge of the card's {eval}`d1_cap` before the CUDA
# context. The script works because packed batches hold 16 *real* sequences, most far shorter than the maximum.
# The engines, alone on their GPUs, take vLLM's own share ({eval}`d1_frac`): {eval}`d1_engine` per GPU.
# Separate groups cost GPUs but let generation and training overlap (OpenRLHF's async mode); the hybrid engine
# (notebook 08, step 4) uses fewer GPUs and runs the phases one after another.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### What does the engine's share buy?
#
# vLLM reserves `gpu_memory_utilization` of each card when it starts (OpenRLHF's flag:
# `--vllm_gpu_memory_utilization`; its hybrid PPO example passes 0.5, its GRPO example 0.6; verl's rollout default is
# 0.5). The pool holds what it holds; a larger batch waits for a free slot. So the share sets the rollout's speed and
# the room left for training, and the model's KV bytes per token decide how many sequences one share holds.

# %% tags=["nbval-check-output"]
FRACS = (0.3, 0.4, 0.5, 0.6, 0.7)
share = {(m, f): estimate_rlhf(m, "ppo", gpus=N, gpu_memory_utilization=f, **RUN)   # memlib.estimate_rlhf, asleep
         for m in (MODEL, "llama-3.1-8b") for f in FRACS}
print({k: (G(e.phases["rollout"]), e.sequences_at_once, e.waves) for k, e in share.items() if k[1] in (0.3, 0.7)})

# %% jupyter={"source_hidden": true} tags=["hide-input"]
rows = [[f"{f:g}", G(share[(MODEL, f)].phases["rollout"]), f"{share[(MODEL, f)].sequences_at_once}",
         f"{share[(MODEL, f)].waves}", f"{share[('llama-3.1-8b', f)].sequences_at_once}",
         f"{share[('llama-3.1-8b', f)].waves}"] for f in FRACS]
display(Markdown(markdown_table(rows, ["share", "rollout phase / GPU", "Llama-2-7B: at once", "waves",
                                       "Llama-3.1-8B (GQA): at once", "waves"])))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
d2_rb, d2_seq = f"{RB}", f"{PROMPT + RESPONSE:,}"

# %% [markdown]
# Each row is one engine per A100 80GB, {eval}`d2_rb` prompts of {eval}`d2_seq` tokens per step, idle roles asleep
# (`memlib.estimate_rlhf`, `RLHFEstimate.sequences_at_once` and `.waves`). The rollout phase is the share itself,
# whatever the batch. Llama-2-7B caches 0.5 MB per token (no grouped-query attention); Llama-3.1-8B caches a quarter
# of that (8 KV heads), so the same share holds several times the sequences. Colocated setups tune the share against
# the training phase: too small and generation, most of the step's time, crawls; too large and the resident
# trainer states no longer fit.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### PPO, GRPO, DPO, RLVR and DAPO on one screen: what each keeps in memory
#
# The objectives, with the models each term needs ($\pi_\theta$ the actor, $\pi_{\theta_\text{old}}$ the policy that
# sampled, $\pi_\text{ref}$ the frozen reference, $V_\phi$ the critic, $r_\phi$ the reward model):
#
# - **PPO** (Schulman et al. 2017; InstructGPT, Ouyang et al. 2022, Sec. 3.5): with the ratio
#   $\rho_t = \pi_\theta(a_t \mid s_t) / \pi_{\theta_\text{old}}(a_t \mid s_t)$,
#   $L = \mathbb{E}_t\big[\min(\rho_t \hat A_t,\ \operatorname{clip}(\rho_t, 1-\epsilon, 1+\epsilon)\,\hat A_t)\big]$.
#   $\hat A_t$ comes from GAE over the critic $V_\phi$; the reward is
#   $r_\phi(x, y) - \beta \log \frac{\pi_\theta(y \mid x)}{\pi_\text{ref}(y \mid x)}$. Memory: actor, critic,
#   reference, reward model, and the rollout engine.
# - **GRPO** (Shao et al. 2024, DeepSeekMath, Sec. 4.1): G samples per prompt; the advantage is each reward's
#   z-score within its group, $\hat A_{i,t} = \frac{r_i - \operatorname{mean}(r_1, \dots, r_G)}{\operatorname{std}(r_1, \dots, r_G)}$,
#   and the KL term moves into the loss, $-\beta\, D_\text{KL}[\pi_\theta \,\|\, \pi_\text{ref}]$. No critic: actor,
#   reference, reward model, engine.
# - **DPO** ([Rafailov et al. 2023](https://arxiv.org/abs/2305.18290)): no sampling, no reward model; for a chosen $y_w$ and a rejected $y_l$,
#   $L = -\log \sigma\big(\beta \log \frac{\pi_\theta(y_w \mid x)}{\pi_\text{ref}(y_w \mid x)} - \beta \log \frac{\pi_\theta(y_l \mid x)}{\pi_\text{ref}(y_l \mid x)}\big)$.
#   Actor and reference; the reference's log-probs can be computed once beforehand (TRL `precompute_ref_log_probs`).
# - **RLVR** ([Lambert et al. 2024](https://arxiv.org/abs/2411.15124), Tülu 3, Sec. 6; DeepSeek-R1's rule-based
#   rewards): the reward is a verifier's verdict, a fixed reward when the answer checks or the tests pass and none
#   otherwise (DAPO: +1 or −1). A program on the CPU, no reward model.
# - **DAPO** ([Yu et al. 2025](https://arxiv.org/abs/2503.14476)): GRPO's group advantage with four changes. It removes the KL term (Sec. 2.3), so no
#   reference. It clips higher, $\operatorname{clip}(\rho, 1-\epsilon_\text{low}, 1+\epsilon_\text{high})$ with
#   $\epsilon_\text{high} > \epsilon_\text{low}$ (the paper uses 0.28 and 0.2). Dynamic sampling drops groups whose G
#   rewards are all equal, since their advantage is 0, and samples more. The loss is token-level,
#   $\frac{1}{\sum_i |o_i|} \sum_i \sum_t$, not a mean per sequence. With a verifier reward it keeps two things on
#   the GPU: the actor and its engine.
#
# ✏️ **Back of the envelope.** An 8B model on 8 GPUs, ZeRO-3: a frozen model is 2 B × 8e9 = 16 GB, / 8 = 2 GB per GPU;
# a trained one 16 B × 8e9 / 8 = 16 GB per GPU. PPO over DAPO, all resident: 16 (critic) + 2 (reference) + 2 (reward)
# = 20 GB per GPU more. Asleep, only the largest phase counts.

# %% tags=["nbval-check-output"]
M8 = "llama-3.1-8b"
ALGOS = {"PPO": dict(algorithm="ppo"), "GRPO": dict(algorithm="grpo"),
         "GRPO + verifier (RLVR)": dict(algorithm="grpo", reward=None),
         "DAPO (verifier, no KL)": dict(algorithm="grpo", reward=None, reference=False),
         "DPO": dict(algorithm="dpo")}
keeps = {}
for name, a in ALGOS.items():   # memlib.estimate_rlhf, every role resident and with idle roles asleep
    kw = dict(prompt_len=PROMPT, response_len=RESPONSE, gpus=N, **a, **({} if a["algorithm"] == "dpo" else
                                                                        dict(rollout_batch=RB)))
    keeps[name] = {off: estimate_rlhf(M8, offload_idle=off, **kw) for off in (False, True)}
ONLINE = [e[True] for k, e in keeps.items() if k != "DPO"]
AT_SHARE = ("every online algorithm peaks at the engine's share" if all(e.peak_at == "rollout" for e in ONLINE) else
            "the peak is the engine's share or the actor's training, whichever is larger")
print({k: (list(e[False].roles), GB(e[False].peak_bytes), GB(e[True].peak_bytes)) for k, e in keeps.items()})

# %% jupyter={"source_hidden": true} tags=["hide-input"]
rows = [[k, ", ".join(e[False].roles), GB(e[False].peak_bytes), f"{GB(e[True].peak_bytes)} ({e[True].peak_at})"]
        for k, e in keeps.items()]
display(Markdown(markdown_table(rows, ["algorithm", "on the GPUs", "peak / GPU, all resident",
                                       "peak / GPU, idle roles asleep"])))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
d3_gap = f"{GB(keeps['PPO'][False].peak_bytes - keeps['DAPO (verifier, no KL)'][False].peak_bytes)}"
d3_share = f"{keeps['DAPO (verifier, no KL)'][True].pool.fraction:g}"
d3_asleep = f"{AT_SHARE}"

# %% [markdown]
# Llama-3.1-8B on 8 A100 80GB, 1,024 + 1,024 tokens (`memlib.estimate_rlhf`; DAPO is
# `estimate_rlhf(..., "grpo", reward=None, reference=False)`). With every role resident, DAPO holds {eval}`d3_gap`
# per GPU less than PPO: the critic's sharded states and two frozen copies. With sleep mode {eval}`d3_asleep`
# ({eval}`d3_share` of the card), so dropping models does not lower the peak there: it leaves room for a larger
# share for the engine, or for fewer GPUs. DAPO's dynamic sampling costs rollout time, not memory: it generates more
# groups to fill a batch, through the same pool.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Colocated or separate rollout engines?
#
# Colocated (verl's hybrid engine, OpenRLHF's `--colocate_all_models`): the engine and the trainer take turns on the
# same GPUs, each sleeping while the other runs. Nothing sits idle, but the engine gets only a share of each card, and
# generation and training cannot overlap. Separate: the engines own their GPUs, so each has most of a card for its
# KV pool and can keep generating while the trainer trains. A synchronous step leaves one group idle while the other
# runs, though.
#
# ✏️ **Back of the envelope.** DAPO on an 8B, 8 GPUs either way. Colocated: 8 engines at half a card each. Separate:
# 4 trainer GPUs (16 B × 8e9 / 4 = 32 GB of states each) and 4 engines at 0.9 of a card; each engine then takes twice
# the prompts.

# %% tags=["nbval-check-output"]
G8 = 8
DAPO = dict(algorithm="grpo", reward=None, reference=False, group_size=G8, prompt_len=PROMPT, response_len=RESPONSE)
col = estimate_rlhf(M8, gpus=N, rollout_batch=RB // 2, **DAPO)                    # 8 engines, 64 prompts each
sepd = estimate_rlhf(M8, placement="separate", gpus={"actor": 4, "rollout": 4}, rollout_batch=RB, **DAPO)
CAPPED = ("vLLM's max_num_seqs caps the separate engine" if sepd.sequences_at_once == sepd.pool.max_num_seqs
          else "the separate engine's pool holds more at once")
print("colocated", GB(col.peak_bytes), col.peak_at, col.sequences_at_once, col.waves,
      "| separate", {r: GB(b) for r, b in sepd.per_group.items()}, sepd.sequences_at_once, sepd.waves)

# %% jupyter={"source_hidden": true} tags=["remove-input"]
d4_col, d4_col_at = f"{GB(col.peak_bytes)}", f"{col.peak_at.replace('_', ' ')}"
d4_col_seqs, d4_col_waves = f"{col.sequences_at_once}", f"{col.waves}"
d4_sep_actor, d4_sep_engine = f"{GB(sepd.per_group['actor'])}", f"{GB(sepd.per_group['rollout'])}"
d4_sep_seqs, d4_sep_waves = f"{sepd.sequences_at_once}", f"{sepd.waves}"
d4_prompts, d4_g = f"{N * (RB // 2)}", f"{G8}"
d4_capped = f"{CAPPED}"

# %% [markdown]
# The same {eval}`d4_prompts` prompts × G = {eval}`d4_g` per step (`memlib.estimate_rlhf`, placement `"colocated"` and `"separate"`):
#
# | | colocated, 8 GPUs | separate, 4 + 4 GPUs |
# |---|---|---|
# | peak per GPU | {eval}`d4_col` ({eval}`d4_col_at`) | trainer {eval}`d4_sep_actor`, engine {eval}`d4_sep_engine` |
# | sequences one engine decodes at once | {eval}`d4_col_seqs` | {eval}`d4_sep_seqs` |
# | decoding waves per engine per step | {eval}`d4_col_waves` | {eval}`d4_sep_waves` |
#
# Half as many engines, each with a larger pool: {eval}`d4_capped`. Memory does not decide this choice: both fit. Time does. Colocated, the step is rollout +
# training, with no GPU idle. Separate and synchronous, the trainer waits through the rollout and the engines wait
# through training. Separate pays off when generation and training overlap: the asynchronous RL below.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Weight sync: how many bytes, how long, how often
#
# After every optimizer step the engines must generate with the new weights, so the actor travels to them once per
# step, in the engine's dtype (bf16, W = 2 bytes × N). How it travels sets the bytes
# (`memlib.cost.weight_sync.weight_sync`):
#
# - OpenRLHF, separate engines (`_broadcast_to_vllm`): rank 0 gathers each parameter and NCCL-broadcasts the *whole*
#   tensor to every vLLM worker, and each keeps its tensor-parallel slice. Every engine GPU receives W. A pipelined
#   broadcast carries W once over each link, so the time is about W / link speed, whatever the number of engines.
# - A reshard-aware sync sends each engine GPU only its slice, W / tp.
# - Colocated FSDP (verl's FSDP workers, `param.full_tensor()`; OpenRLHF's `--colocate_all_models` with CUDA IPC): each
#   GPU all-gathers the full weights, (n − 1)/n × W, and the engine on the same GPU copies its slice through a CUDA
#   IPC handle, with no link bytes.
# - verl's 3D-HybridEngine ([HybridFlow](https://arxiv.org/abs/2409.19256), Sheng et al. 2024, Sec. 5.4 and Table 2), Megatron training tp × pp to
#   generation tg × pg: each GPU already holds part of its generation shard and gathers the rest in a group of
#   (tp × pp)/(tg × pg) GPUs, $\frac{tp \cdot pp - tg \cdot pg}{tg \cdot pg \cdot tp \cdot pp} W$ per GPU.
#
# ✏️ **Back of the envelope.** Llama-3-70B: 70e9 × 2 B = 140 GB. IB NDR: 400 Gb/s = 50 GB/s per GPU, so 140 / 50 =
# 2.8 s per sync. Each of 8 slices is 140 / 8 = 17.5 GB, 0.35 s. On NVLink (450 GB/s each way) 140 GB takes 0.3 s.

# %% tags=["nbval-check-output"]
from memlib.cost.weight_sync import weight_sync   # noqa: E402

SYNCS = {
    "70B → 4 engines of tp 8, OpenRLHF NCCL broadcast, IB NDR":
        weight_sync("llama-3-70b", "nccl-broadcast", engines=4, rollout_tp=8, link="IB NDR"),
    "70B → 4 engines of tp 8, resharded, IB NDR":
        weight_sync("llama-3-70b", "resharded", engines=4, rollout_tp=8, link="IB NDR"),
    "70B colocated on 32 GPUs, FSDP gather + CUDA IPC, IB NDR":
        weight_sync("llama-3-70b", "gather-ipc", engines=4, rollout_tp=8, link="IB NDR"),
    "70B colocated on 32 GPUs, Megatron tp 8 × pp 4 → tp 8, 3D-HybridEngine, IB NDR":
        weight_sync("llama-3-70b", "3d-hybrid", engines=4, rollout_tp=8, train_tp=8, train_pp=4, link="IB NDR"),
    "8B colocated on 8 H100, FSDP gather + CUDA IPC, NVLink":
        weight_sync(M8, "gather-ipc", engines=8, rollout_tp=1, link="h100-80gb"),
}
_b = SYNCS["70B → 4 engines of tp 8, OpenRLHF NCCL broadcast, IB NDR"]
print([(s.method, GB(s.bytes_per_gpu), f"{s.seconds:.2f} s") for s in SYNCS.values()])

# %% jupyter={"source_hidden": true} tags=["hide-input"]
rows = [[k, GB(s.weight_bytes), GB(s.bytes_per_gpu), GB(s.bytes_per_engine), f"{s.seconds:.2f} s"]
        for k, s in SYNCS.items()]
display(Markdown(markdown_table(rows, ["sync", "W (bf16)", "received per GPU", "received per engine",
                                       "time at line rate"])))

# %% jupyter={"source_hidden": true} tags=["remove-input"]
d5_bcast, d5_engine = f"{_b.seconds:.2f} s", f"{GB(_b.bytes_per_engine)}"
d5_times = f"{_b.bytes_per_engine // _b.weight_bytes}"
d5_ten, d5_ten_async = f"{_b.per_step(10):.0f} s", f"{_b.per_step(10, sync_every=2):.0f} s"

# %% [markdown]
# The times are lower bounds: the nominal line rate, no per-tensor latency, and the trainer's own ZeRO-3 gather
# before the broadcast is not counted. OpenRLHF's broadcast takes {eval}`d5_bcast` per step for a 70B actor and pushes
# {eval}`d5_engine` into each engine, {eval}`d5_times` times the weights, because every GPU receives what only its slice needs.
# It happens every step: over 10 steps {eval}`d5_ten`, or {eval}`d5_ten_async` when the engines take new weights every
# second step. Next to a rollout of minutes it is small; next to a short step it is not, which is why the colocated
# methods that move slices over NVLink matter.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Which trainer, which switches: verl's FSDP and Megatron workers, OpenRLHF's DeepSpeed
#
# Colocated, a phase holds the role that runs plus whatever the idle roles keep. The frameworks decide that with a
# few switches, read from their source (`estimate_rlhf`'s `strategy`, `param_offload`, `optimizer_offload`,
# `ref_param_offload`, `free_cache_engine`, `sleep_level`; docs/usage.md lists them):
#
# - **OpenRLHF** (`--deepspeed_enable_sleep`): `offload_deepspeed_states` moves the optimizer states, the fp32 master
#   and the gradient buffers to the host, but leaves the 16-bit ZeRO-3 partition on the GPU.
# - **verl's FSDP workers**: the actor keeps fp32 parameters and AdamW's m and v (12 bytes per parameter, sharded);
#   `zero_grad()` ends each update, so no gradient stays. `param_offload` and `optimizer_offload` (both off by
#   default) move them out between phases. The reference is always under FSDP's CPU offload: it streams one layer
#   at a time and keeps nothing on the GPU.
# - **verl's Megatron workers**: Megatron keeps bf16 parameters, fp32 main gradients and, with the distributed
#   optimizer, 12 / dp bytes of master and Adam per parameter, split over tp × pp.
#
# ✏️ **Back of the envelope.** Llama-3.1-8B, 8 × A100, verl's FSDP defaults: the actor keeps 8e9 × 12 B / 8 = 12 GB
# per GPU while vLLM's 0.5 share (42.5 GB) generates: about 55 GB. With both offloads on, the rollout phase is the
# share alone, which is why verl's tuning guide (docs/perf/best_practices.rst at volcengine/verl@b178a3cd) puts
# `gpu_memory_utilization` at 0.8-0.9 once the offloads are on.

# %% tags=["nbval-check-output"]
GRPO8 = dict(reward=None, gpus=N, group_size=8, **RUN)
TRAINERS = {
    "OpenRLHF, DeepSpeed sleep": estimate_rlhf(M8, "grpo", param_offload=False, optimizer_offload=True, **GRPO8),
    "verl FSDP, defaults": estimate_rlhf(M8, "grpo", strategy="fsdp", param_offload=False, optimizer_offload=False,
                                         **GRPO8),
    "verl FSDP, both offloads": estimate_rlhf(M8, "grpo", strategy="fsdp", param_offload=True, optimizer_offload=True,
                                              **GRPO8),
    "verl FSDP, both offloads, 0.8": estimate_rlhf(M8, "grpo", strategy="fsdp", param_offload=True,
                                                   optimizer_offload=True, gpu_memory_utilization=0.8, **GRPO8),
    "verl Megatron tp 2, defaults": estimate_rlhf(M8, "grpo", strategy="megatron", train_tp=2, param_offload=False,
                                                  optimizer_offload=False, **GRPO8),
}
print({k: (GB(e.phases["rollout"]), GB(e.peak_bytes), e.waves) for k, e in TRAINERS.items()})
_orl, _fsdp, _off, _off8, _meg = TRAINERS.values()

# %% jupyter={"source_hidden": true} tags=["remove-input"]
t1_orl, t1_fsdp = f"{GB(_orl.phases['rollout'])}", f"{GB(_fsdp.phases['rollout'])}"
t1_kept = f"{GB(_fsdp.roles['actor'].idle_bytes)}"
t1_off, t1_host = f"{GB(_off.phases['rollout'])}", f"{GB(_off.host_bytes)}"
t1_08, t1_w5, t1_w8 = f"{GB(_off8.phases['rollout'])}", f"{_off.waves}", f"{_off8.waves}"
t1_meg, t1_meg_kept = f"{GB(_meg.phases['rollout'])}", f"{GB(_meg.roles['actor'].idle_bytes)}"

# %% [markdown]
# The rollout phase is where they differ. OpenRLHF's sleep leaves the 16-bit partition: {eval}`t1_orl`. verl's FSDP
# defaults leave the actor's {eval}`t1_kept` beside the engine: {eval}`t1_fsdp`. With both offloads the phase is the
# engine's share, {eval}`t1_off`, at the price of {eval}`t1_host` of pinned host RAM per GPU. Raising the share to 0.8
# then fills the card ({eval}`t1_08`) and cuts the decoding waves from {eval}`t1_w5` to {eval}`t1_w8`. Megatron at
# tp 2 without offload keeps {eval}`t1_meg_kept` per GPU (its fp32 main gradients stay between steps), so the phase
# reaches {eval}`t1_meg`: on Megatron the offload switches matter most.

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Asynchronous RL and the trainer/sampler mismatch
#
# **Asynchronous RL.** Separate engines keep generating while the trainer updates, so the rollouts of step k come from
# the weights of step k − 1 or older. verl's one-step-off-policy trainer (`verl/experimental/one_step_off_policy`:
# separate actor and rollout worker groups, an NCCL weight sync) overlaps exactly one step; its `fully_async_policy`
# goes further. [AReaL](https://arxiv.org/abs/2505.24298) (Fu et al. 2025) lets samples be up to η versions stale and corrects with a decoupled PPO objective: the clip is anchored on a
# recent proximal policy, and an importance weight corrects for the stale behaviour policy. Memory: the groups must be
# separate (both run at once, so neither can sleep). Each engine holds one policy version. The queue of finished
# rollouts stays in host RAM. The sync still happens once per version (`WeightSync.per_step(steps, sync_every)`).
# The cost is statistical: the gradient is off-policy. The ratio $\pi_\theta / \pi_\text{behaviour}$ drifts
# further from 1 the staler the samples, and more tokens hit the clip.
#
# **The log-prob mismatch.** Even synchronous RL is slightly off-policy. vLLM's sampler and the trainer's forward
# compute the same weights with different kernels, batch shapes and precisions (bf16 engine, fused ops, a sampler
# log-softmax vs the trainer's fp32 loss), so $\pi_\text{sampler}(y) \ne \pi_\text{trainer}(y)$ for the same tokens.
# [Yao et al. (2025)](https://fengyao.notion.site/off-policy-rl), "Your efficient RL framework secretly brings you
# off-policy RL training", measured the gap and
# proposed **truncated importance sampling** (TIS): weight each token's gradient by
# $\min\big(\pi_\text{trainer}/\pi_\text{sampler},\ C\big)$, computed from the engine's own log-probs
# (integrated in verl, OpenRLHF, SkyRL and slime; SkyRL's option is `tis_imp_ratio_cap`). A mixture of experts makes it worse:
# a tiny difference in the router's logits picks another expert, and that token's probability jumps. GSPO's Routing
# Replay ([Zheng et al. 2025](https://arxiv.org/abs/2507.18071)) and **Rollout Routing Replay**
# ([R3](https://arxiv.org/abs/2510.11370), Ma et al. 2025) record the experts the engine chose
# and replay them in the trainer's forward. The memory cost is small: the sampler's log-probs (one fp32 per
# response token) and, for R3, the routed expert ids per token and layer, held with the rollouts.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Published layouts checked · 已发表配置核对
#
# `tests/test_rlhf.py` checks both layouts below. A published "it runs on these GPUs" is checked with a 20% slack:
# memlib must say it fits even with its peak raised by 20%, so a small under-count cannot turn a wrong model into a
# pass; where the source needs a flag (`--adam_offload`), memlib must say it does not fit without it.

# %% tags=["nbval-check-output"]
four = estimate_rlhf(MODEL, "ppo", placement="separate", gpus=1, offload="optimizer", micro_batch=4,
                     rollout_batch=4, prompt_len=PROMPT, response_len=RESPONSE)
four_no = estimate_rlhf(MODEL, "ppo", placement="separate", gpus=1, micro_batch=4, rollout_batch=4,
                        prompt_len=PROMPT, response_len=RESPONSE)
big = {"actor": 8, "critic": 8, "reference": 8, "reward": 8, "rollout": 16}
e70 = estimate_rlhf("llama-3-70b", "ppo", placement="separate", gpus=big, rollout_tp=2, offload="optimizer",
                    rollout_batch=8, prompt_len=PROMPT, response_len=RESPONSE)
pair70 = e70.roles["actor"].peak_bytes + e70.roles["reference"].resident_bytes
conc70 = vllm_max_concurrency("llama-3-70b", GPU, max_model_len=PROMPT + RESPONSE, tp=2)
ok40 = fits(four.roles["actor"].estimate, "a100-40gb").fits            # memlib.fits on the heaviest role
ok80 = pair70 <= max_peak_bytes(GPU)                                     # fits' rule for two roles' sum
print({r: G(x.peak_bytes) for r, x in four.roles.items() if r != "rollout"}, "no offload",
      G(four_no.roles["actor"].peak_bytes), "| 70B actor+ref", G(pair70), f"vLLM {conc70:.0f} seqs")

# %% jupyter={"source_hidden": true} tags=["hide-input"]
rows = [
    ["[OpenRLHF issue #254](https://github.com/OpenRLHF/OpenRLHF/issues/254) (2024-03): \"For 7B full fine-tuning, 4*A100 40G should be enough, "
     "ref/reward/actor/critic=1:1:1:1\"", "ZeRO-3 on one GPU per role (nothing to shard), `--adam_offload`, "
     "recompute, micro-batch 4, 2,048 tokens",
     f"actor {G(four.roles['actor'].peak_bytes)}, reference {G(four.roles['reference'].peak_bytes)} per GPU; "
     f"actor without offload {G(four_no.roles['actor'].peak_bytes)}",
     "fits a 40 GB card" if ok40 else "does not fit"],
    ["[OpenRLHF issue #566](https://github.com/OpenRLHF/OpenRLHF/issues/566) (2024-12), `train_ppo_llama_ray_70b.sh` on 32 A100 80GB: 8 actor+ref, 8 critic+reward, "
     "16 vLLM (tp 2)", "ZeRO-3, `--adam_offload`, micro-batch 1",
     f"actor+ref {G(pair70)} per GPU; vLLM fits {conc70:.0f} sequences of 2,048 tokens",
     "fits" if ok80 else "does not fit"],
]
display(Markdown(markdown_table(rows, ["published", "setup memlib uses", "memlib", "verdict"])))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Fact-check · 纠错
#
# Claims about RLHF memory as they circulate, memlib's figure, and a verdict with its word (✅ right · ⚠️ partly ·
# ❌ wrong). Sources marked "circulating" are paraphrases of common interview answers, not one author's text.

# %% tags=["nbval-check-output"]
states4 = sum(r.resident_bytes for k, r in whole.roles.items() if k != "rollout")   # four models, unsharded
e48 = {off: estimate_rlhf("llama-3-70b", "ppo", placement="separate", rollout_tp=2, offload=off, rollout_batch=8,
                          gpus=dict(actor=16, critic=16, reference=16, reward=16, rollout=16), prompt_len=PROMPT,
                          response_len=RESPONSE) for off in ("optimizer", "none")}
pair48 = {off: e.roles["actor"].peak_bytes + e.roles["reference"].resident_bytes for off, e in e48.items()}
# OpenRLHF's hybrid PPO example: Llama-3-8B on 8 A100s, 4 vLLM engines of tp 2 at --vllm_gpu_memory_utilization 0.5
he8 = estimate_rlhf("llama-3-8b", "ppo", gpus=8, rollout_tp=2, gpu_memory_utilization=0.5, **RUN)
kv16 = {m: kv_cache_bytes(get_model(m), 16, PROMPT + RESPONSE) for m in (MODEL, "llama-3-8b")}  # 16 sequences
print(f"{states4 / whole.roles['actor'].resident_bytes:.2f}x, awake/SFT {awake.peak_bytes / sft.peak_bytes:.1f}x, "
      f"asleep/SFT {asleep.peak_bytes / sft.peak_bytes:.1f}x; 48 GPUs: {G(pair48['optimizer'])} / {G(pair48['none'])}; "
      f"8B hybrid peak {G(he8.peak_bytes)} at {he8.peak_at}, fits {fits(he8, GPU).fits}")

# %%
C = "circulating (paraphrase)"
grpo_lighter_resident = grpo[False].peak_bytes < awake.peak_bytes
grpo_lighter_asleep = grpo[True].peak_bytes < asleep.peak_bytes
facts = [
    Claim("PPO needs about 4× the memory of SFT: four models",
          C,
          f"four models' states {states4 / whole.roles['actor'].resident_bytes:.2f}× the actor's; per GPU on 8 A100s "
          f"{awake.peak_bytes / sft.peak_bytes:.1f}× SFT resident, {asleep.peak_bytes / sft.peak_bytes:.1f}× asleep",
          verdict="⚠️ partly",
          why="two of the four are frozen (2 B/param, not 16); sleep mode makes the peak one phase"),
    Claim("The reference and reward models take as much memory as the actor",
          C,
          f"{GB(whole.roles['reference'].resident_bytes)} vs {GB(whole.roles['actor'].resident_bytes)}",
          verdict="❌ wrong",
          why="no gradients, no optimizer states: bf16 weights only"),
    Claim("The rollout's KV cache is small next to training",
          C,
          f"16 sequences of 2,048 tokens: {GB(kv16[MODEL])} on Llama-2-7B, {GB(kv16['llama-3-8b'])} on Llama-3-8B (GQA); "
          f"the engine reserves {GB(asleep.phases['rollout'])} per GPU at {asleep.pool.fraction:g}",
          verdict="⚠️ partly",
          why="it depends on GQA, the length and the share you reserve: the engine's share, not the batch, is "
                  "what a colocated card gives up, and asleep it is often the largest phase"),
    Claim("GRPO saves memory because it has no critic",
          C,
          f"resident: {GB(grpo[False].peak_bytes)} vs PPO {GB(awake.peak_bytes)} per GPU; asleep: "
          f"{GB(grpo[True].peak_bytes)} vs {GB(asleep.peak_bytes)} (same engine share, G = 8)",
          verdict="✅ right" if grpo_lighter_resident and grpo_lighter_asleep else
                  "⚠️ partly" if grpo_lighter_resident or grpo_lighter_asleep else "❌ wrong",
          why="at an equal engine share it drops the critic's sharded states; asleep the peak is the engine's share or the "
              "actor's training, the same for both. G costs rollout time (waves), not memory"),
    Claim("DPO needs about the memory of SFT",
          C,
          f"{GB(dpo.peak_bytes)} vs SFT {GB(sft.peak_bytes)} per GPU at equal tokens (1 pair vs 2 sequences)",
          claimed=sft.peak_bytes, computed=dpo.peak_bytes,   # "about SFT": within 10%
          why="the same tokens through the policy, plus the frozen reference's sharded bf16 weights"),
    Claim("Colocating all models means paying for all of them at once",
          C,
          f"{GB(awake.peak_bytes)} resident vs {GB(asleep.peak_bytes)} with sleep mode",
          verdict="⚠️ partly",
          why="only without sleep/offload; verl's and OpenRLHF's hybrid engines time-share the GPUs"),
    Claim("\"For 7B full fine-tuning, 4*A100 40G should be enough, ref/reward/actor/critic=1:1:1:1\"",
          "[OpenRLHF issue #254](https://github.com/OpenRLHF/OpenRLHF/issues/254) (maintainer)",
          f"largest role {G(max(r.peak_bytes for k, r in four.roles.items() if k != 'rollout'))} per GPU",
          verdict="✅ right",
          why="with `--adam_offload`: the Adam states live in host RAM"),
    Claim("70B PPO on 32 A100 80GB: 8 actor+ref, 8 critic+reward, 16 vLLM (tp 2)",
          "[OpenRLHF issue #566](https://github.com/OpenRLHF/OpenRLHF/issues/566) (maintainer)",
          f"actor+ref {G(pair70)} per GPU; vLLM room for {conc70:.0f} sequences",
          verdict="✅ right",
          why=f"ZeRO-3 over 8 and `--adam_offload`; each engine GPU holds {GB(e70.pool.weight_bytes)} of weights, little cache"),
    Claim("\"for a 70B model with 48 A100 GPUs, ... 16 ... vLLM Engine, 16 ... Actor ... 16 ... Critic\"",
          "[OpenRLHF README](https://github.com/OpenRLHF/OpenRLHF), performance tuning guide",
          f"actor+ref {G(pair48['optimizer'])} per GPU with `--adam_offload`, {G(pair48['none'])} without",
          verdict="⚠️ partly",
          why="fits only with the Adam states offloaded; the guide also advises disabling offload when memory allows"),
    Claim("Llama-3-8B PPO on 8 A100 80GB, hybrid engine: `--colocate_all_models --vllm_gpu_memory_utilization 0.5 "
          "--vllm_enable_sleep --deepspeed_enable_sleep`",
          "OpenRLHF `examples/scripts/train_ppo_llama_ray_hybrid_engine.sh` (OpenRLHF@22697a1b)",
          f"peak {G(he8.peak_bytes)} per GPU during {he8.peak_at.replace('_', ' ')}; training phase "
          f"{G(he8.phases['train_actor'])}",
          verdict="✅ right" if fits(he8, GPU).fits else "❌ wrong",
          why="half of each card for the engine, the other half holds the training phase while the engine sleeps"),
]
display(Markdown(fact_check_table(facts, headers=["claim", "source", "memlib", "verdict", "why"])))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## What memlib does not model · 未建模
#
# - The experience buffer (rollouts, log-probs, values, advantages): OpenRLHF and verl keep it in host RAM or move it
#   batch by batch; it is small next to the models.
# - The staging buffers of the weight sync (NCCL broadcast buffers, verl's 512 MB update buckets; its bytes and time are
#   `memlib.cost.weight_sync`). CUDA graphs are an input (`cudagraph_bytes`): give the figure vLLM logs;
#   OpenRLHF's hybrid examples run `--enforce_eager` (none). (The pinned host RAM of offloaded states and of a vLLM
#   level-1 sleep is counted: `RLHFEstimate.host_bytes`.)
# - The critic's value head: estimate_training models causal-LM heads, so the critic is counted with its LM head, a
#   slight over-count; the frozen reward model is counted with its one-output value head.
# - SGLang's activations and CUDA graph buffers, which live outside `mem_fraction_static`.
# - LoRA-based RLHF (the reference is then the base model with adapters off: no second copy); pass
#   `finetune="lora"` through estimate_rlhf's training options for the trainable roles' part.
