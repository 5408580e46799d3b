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

from memlib import estimate_rlhf, estimate_training, fits, get_gpu, get_model, gib, min_rlhf_gpus
from memlib.explain import markdown_table
from memlib.learn.claims import claim_verdict
from memlib.fit import max_peak_bytes, usable_bytes
from memlib.serving.capacity import vllm_max_concurrency
from memlib.serving.inference import kv_cache_bytes
from memlib.training.rlhf import rollout_pool

MODEL, GPU, N = "llama-2-7b", "a100-80gb", 8
PROMPT, RESPONSE, RB = 1024, 1024, 128
RUN = dict(prompt_len=PROMPT, response_len=RESPONSE, rollout_batch=RB)


def GB(n_bytes):
    """GB (1e9), labelled."""
    return f"{n_bytes / 1e9:,.1f} GB"


def G(n_bytes):
    """GiB, labelled (what torch and nvidia-smi show)."""
    return f"{gib(n_bytes):,.1f} GiB"


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
dpo_mark = claim_verdict(sft.peak_bytes, dpo.peak_bytes)   # memlib.learn.claims: "about SFT" within 10%
print(f"{states4 / whole.roles['actor'].resident_bytes:.2f}x, awake/SFT {awake.peak_bytes / sft.peak_bytes:.1f}x, "
      f"asleep/SFT {asleep.peak_bytes / sft.peak_bytes:.1f}x; 48 GPUs: {G(pair48['optimizer'])} / {G(pair48['none'])}; "
      f"8B hybrid peak {G(he8.peak_bytes)} at {he8.peak_at}, fits {fits(he8, GPU).fits}")

# %%
C = "circulating (paraphrase)"
dpo_verdict = f"{dpo_mark} {({'✅': 'right', '⚠️': 'partly', '❌': 'wrong'})[dpo_mark]}"
grpo_lighter_resident = grpo[False].peak_bytes < awake.peak_bytes
grpo_lighter_asleep = grpo[True].peak_bytes < asleep.peak_bytes
facts = [
    ["PPO needs about 4× the memory of SFT: four models", C,
     f"four models' states {states4 / whole.roles['actor'].resident_bytes:.2f}× the actor's; per GPU on 8 A100s "
     f"{awake.peak_bytes / sft.peak_bytes:.1f}× SFT resident, {asleep.peak_bytes / sft.peak_bytes:.1f}× asleep",
     "⚠️ partly", "two of the four are frozen (2 B/param, not 16); sleep mode makes the peak one phase"],
    ["The reference and reward models take as much memory as the actor", C,
     f"{GB(whole.roles['reference'].resident_bytes)} vs {GB(whole.roles['actor'].resident_bytes)}", "❌ wrong",
     "no gradients, no optimizer states: bf16 weights only"],
    ["The rollout's KV cache is small next to training", C,
     f"16 sequences of 2,048 tokens: {GB(kv16[MODEL])} on Llama-2-7B, {GB(kv16['llama-3-8b'])} on Llama-3-8B (GQA); "
     f"the engine reserves {GB(asleep.phases['rollout'])} per GPU at {asleep.pool.fraction:g}",
     "⚠️ partly", "it depends on GQA, the length and the share you reserve: the engine's share, not the batch, is "
                  "what a colocated card gives up, and asleep it is often the largest phase"],
    ["GRPO saves memory because it has no critic", C,
     f"resident: {GB(grpo[False].peak_bytes)} vs PPO {GB(awake.peak_bytes)} per GPU; asleep: "
     f"{GB(grpo[True].peak_bytes)} vs {GB(asleep.peak_bytes)} (same engine share, G = 8)",
     "✅ right" if grpo_lighter_resident and grpo_lighter_asleep else
     "⚠️ partly" if grpo_lighter_resident or grpo_lighter_asleep else "❌ wrong",
     "at an equal engine share it drops the critic's sharded states; asleep the peak is the engine's share or the "
     "actor's training, the same for both. G costs rollout time (waves), not memory"],
    ["DPO needs about the memory of SFT", C,
     f"{GB(dpo.peak_bytes)} vs SFT {GB(sft.peak_bytes)} per GPU at equal tokens (1 pair vs 2 sequences)",
     dpo_verdict,
     "the same tokens through the policy, plus the frozen reference's sharded bf16 weights"],
    ["Colocating all models means paying for all of them at once", C,
     f"{GB(awake.peak_bytes)} resident vs {GB(asleep.peak_bytes)} with sleep mode", "⚠️ partly",
     "only without sleep/offload; verl's and OpenRLHF's hybrid engines time-share the GPUs"],
    ["\"For 7B full fine-tuning, 4*A100 40G should be enough, ref/reward/actor/critic=1:1:1:1\"",
     "[OpenRLHF issue #254](https://github.com/OpenRLHF/OpenRLHF/issues/254) (maintainer)",
     f"largest role {G(max(r.peak_bytes for k, r in four.roles.items() if k != 'rollout'))} per GPU",
     "✅ right", "with `--adam_offload`: the Adam states live in host RAM"],
    ["70B PPO on 32 A100 80GB: 8 actor+ref, 8 critic+reward, 16 vLLM (tp 2)", "[OpenRLHF issue #566](https://github.com/OpenRLHF/OpenRLHF/issues/566) (maintainer)",
     f"actor+ref {G(pair70)} per GPU; vLLM room for {conc70:.0f} sequences", "✅ right",
     f"ZeRO-3 over 8 and `--adam_offload`; each engine GPU holds {GB(e70.pool.weight_bytes)} of weights, little cache"],
    ["\"for a 70B model with 48 A100 GPUs, ... 16 ... vLLM Engine, 16 ... Actor ... 16 ... Critic\"",
     "[OpenRLHF README](https://github.com/OpenRLHF/OpenRLHF), performance tuning guide",
     f"actor+ref {G(pair48['optimizer'])} per GPU with `--adam_offload`, {G(pair48['none'])} without", "⚠️ partly",
     "fits only with the Adam states offloaded; the guide also advises disabling offload when memory allows"],
    ["Llama-3-8B PPO on 8 A100 80GB, hybrid engine: `--colocate_all_models --vllm_gpu_memory_utilization 0.5 "
     "--vllm_enable_sleep --deepspeed_enable_sleep`",
     "OpenRLHF `examples/scripts/train_ppo_llama_ray_hybrid_engine.sh` (OpenRLHF@22697a1b)",
     f"peak {G(he8.peak_bytes)} per GPU during {he8.peak_at.replace('_', ' ')}; training phase "
     f"{G(he8.phases['train_actor'])}", "✅ right" if fits(he8, GPU).fits else "❌ wrong",
     "half of each card for the engine, the other half holds the training phase while the engine sleeps"],
]
display(Markdown(markdown_table(facts, ["claim", "source", "memlib", "verdict", "why"])))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## What memlib does not model · 未建模
#
# - The experience buffer (rollouts, log-probs, values, advantages): OpenRLHF and verl keep it in host RAM or move it
#   batch by batch; it is small next to the models.
# - Weight synchronisation from the trainer to the engines (NCCL broadcast buffers, verl's 512 MB update buckets) and
#   the host RAM that sleep mode and `--adam_offload` need. CUDA graphs are an input (`cudagraph_bytes`): give the
#   figure vLLM logs; OpenRLHF's hybrid examples run `--enforce_eager` (none).
# - The critic's value head: estimate_training models causal-LM heads, so the critic is counted with its LM head, a
#   slight over-count; the frozen reward model is counted with its one-output value head.
# - SGLang's activations and CUDA graph buffers, which live outside `mem_fraction_static`.
# - LoRA-based RLHF (the reference is then the base model with adapters off: no second copy); pass
#   `finetune="lora"` through estimate_rlhf's training options for the trainable roles' part.
