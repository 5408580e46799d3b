"""Exercises for notebook 08: RLHF memory. PPO's four models (two trained at 16 bytes per parameter, two frozen
at 2), the rollout engine's KV cache, colocated phases with and without sleep mode, GRPO against PPO, DPO's
policy and reference, and the fewest GPUs for a PPO run. Every figure comes from memlib.estimate_rlhf."""

from __future__ import annotations

from memlib.learn.exercises._common import b
import random

from memlib.learn.exercises.kinds import (Choice, Figure, Implement, MultiChoice, Numeric, Option, SelfAssessed, Slip,
                                          SpotError)
from memlib.hardware.fit import fits
from memlib.models import get_model
from memlib.serving.inference import gqa_kv_bytes_per_token, kv_bytes_per_token, kv_cache_bytes
from memlib.training.rlhf import estimate_rlhf, min_rlhf_gpus

NOTEBOOK = "08_rlhf_memory"
_Q7, _L8, _M7, _L13 = "qwen3-8b", "llama-3.1-8b", "qwen2.5-7b", "llama-2-13b"
_A100 = "a100-80gb"
_FOUR = ("actor", "critic", "reference", "reward")


def _states(model: str, algorithm: str = "ppo", frozen_bytes: int | None = None) -> float:
    """The models' resident bytes, unsharded (one GPU, no ZeRO): memlib.estimate_rlhf; rollout engine excluded.

    frozen_bytes=16: what counting the frozen models like trained ones gives (a slip)."""
    e = estimate_rlhf(model, algorithm, gpus=1, zero_stage=0, rollout_batch=1)
    total = 0
    for name, r in e.roles.items():
        if name == "rollout":
            continue
        total += r.resident_bytes if frozen_bytes is None or r.kind == "trainable" else \
            r.resident_bytes * frozen_bytes // 2
    return float(total)


# --- 08.2: GRPO's rollout cache ------------------------------------------------------------------------
_PROMPTS, _G, _PROMPT_LEN, _RESP = 24, 8, 512, 1536


def _grpo_kv(group: int = _G, **changes) -> float:
    """The engine's KV cache: memlib.estimate_rlhf's rollout role; a slip's variant through the same
    memlib.serving.inference.kv_cache_bytes (vLLM's 16-token pages) with one input changed."""
    if group == _G and not changes:
        e = estimate_rlhf(_L8, "grpo", gpus=8, group_size=_G, rollout_batch=_PROMPTS, prompt_len=_PROMPT_LEN,
                          response_len=_RESP)
        return float(e.roles["rollout"].estimate.kv_cache_bytes)
    m = get_model(_L8)
    return float(kv_cache_bytes(m.with_(**changes) if changes else m, _PROMPTS * group, _PROMPT_LEN + _RESP,
                                engine="vllm"))


# --- 08.3: hybrid engine vs resident on 4 GPUs ---------------------------------------------------------
_RUN3 = dict(gpus=2, rollout_batch=32, prompt_len=1024, response_len=1024)


def _mistral(offload_idle: bool = True):
    return estimate_rlhf(_M7, "ppo", offload_idle=offload_idle, **_RUN3)


# --- 08.4: GRPO vs PPO with sleep mode -----------------------------------------------------------------
_RUN4 = dict(gpus=8, rollout_batch=16, prompt_len=1024, response_len=1024)


def _peak4(algorithm: str) -> int:
    return estimate_rlhf(_L8, algorithm, group_size=8 if algorithm == "grpo" else None, **_RUN4).peak_bytes


def _heavier() -> str:
    ppo, grpo = _peak4("ppo"), _peak4("grpo")
    return "b" if grpo > 1.05 * ppo else "a" if ppo > 1.05 * grpo else "c"


# --- 08.6: true statements -------------------------------------------------------------------------------
def _true_statements() -> frozenset:
    asleep = estimate_rlhf(_L8, "ppo", **_RUN4)
    short = estimate_rlhf(_L8, "ppo", **{**_RUN4, "response_len": 512})
    grpo = estimate_rlhf(_L8, "grpo", **_RUN4)
    dpo = estimate_rlhf(_L8, "dpo", gpus=8)
    whole = estimate_rlhf(_L8, "ppo", gpus=1, zero_stage=0, rollout_batch=1)
    facts = {"a": asleep.peak_bytes == max(asleep.phases.values()),
             "b": whole.roles["reference"].resident_bytes >= whole.roles["actor"].resident_bytes,
             "c": asleep.roles["rollout"].estimate.kv_cache_bytes > short.roles["rollout"].estimate.kv_cache_bytes,
             "d": "critic" in grpo.roles,
             "e": "rollout" in dpo.roles}
    return frozenset(k for k, v in facts.items() if v)


# --- 08.7: fewest GPUs -----------------------------------------------------------------------------------
_RUN7 = dict(rollout_batch=16, prompt_len=1024, response_len=1024)


def _r13(gpus: int):
    return estimate_rlhf(_L13, "ppo", gpus=gpus, offload_idle=False, **_RUN7)


def _min13(offload_idle: bool = True) -> float:
    return float(min_rlhf_gpus(_L13, _A100, offload_idle=offload_idle, **_RUN7))


# --- 08.9: implement the rollout cache ------------------------------------------------------------------
def _kv_case(model: str, prompts: int, group: int, prompt_len: int, response_len: int) -> dict:
    m = get_model(model)
    return dict(layers=m.num_layers, kv_heads=m.num_kv_heads, head_dim=m.head_dim, prompts=prompts, group_size=group,
                prompt_len=prompt_len, response_len=response_len)


def _kv_reference(k: dict) -> float:
    """memlib.serving.inference.gqa_kv_bytes_per_token (bf16) x sequences x tokens: the cache when all are complete."""
    per_token = gqa_kv_bytes_per_token(k["layers"], k["kv_heads"], k["head_dim"])
    return float(per_token * k["prompts"] * k["group_size"] * (k["prompt_len"] + k["response_len"]))


def _random_kv_cases(rng: random.Random) -> list[dict]:
    return [dict(layers=rng.randint(2, 128), kv_heads=rng.choice((1, 2, 4, 8, 16, 32, 64)),
                 head_dim=rng.choice((64, 80, 96, 128, 256)), prompts=rng.randint(1, 256),
                 group_size=rng.choice((1, 2, 4, 5, 8, 16, 64)), prompt_len=rng.randint(1, 8192),
                 response_len=rng.randint(1, 32768)) for _ in range(3)]


EXERCISES = [
    Numeric(
        id="08.1", title="PPO's four models for Qwen3-8B", difficulty="warm-up", minutes=4,
        formula="trained roles 16 B/param (bf16-mixed AdamW), frozen roles 2 B/param (bf16) (memlib.estimate_rlhf)",
        prompt="PPO fine-tunes **Qwen3-8B** with a critic and a reward model of the same size. The actor and the "
               "critic train with mixed-precision AdamW; the reference and the reward model only run forwards in bf16. "
               "On one GPU, without any sharding, how many GB do the four models hold (weights, gradients and optimizer "
               "states; no activations, no generation engine)? Use the exact parameter count "
               "(`memlib.get_model('qwen3-8b').num_params`).",
        expected=lambda: _states(_Q7), unit="GB",
        slips=(Slip("all four trained", lambda: _states(_Q7, frozen_bytes=16),
                    "the reference and the reward model are frozen: no gradients, no optimizer states, 2 B/param"),
               Slip("nominal 8B", lambda: 36 * 8e9,
                    "you used the nominal 8B; Qwen3-8B has more parameters (memlib.get_model(...).num_params)"),
               Slip("no master copy", lambda: _states(_Q7) - 2 * 4 * get_model(_Q7).num_params,
                    "mixed-precision AdamW keeps 16 bytes per trained parameter: the fp32 master copy is one of them")),
        hints=("Two of the four models train, two only read.",
               "bytes = 2 x 16 x N (actor, critic) + 2 x 2 x N (reference, reward) = 36 N.",
               "Start from N = memlib.get_model('qwen3-8b').num_params."),
        worked=lambda: (f"N = {get_model(_Q7).num_params:,}: actor and critic 16 N each, reference and reward 2 N "
                        f"each: 36 N = **{b(_states(_Q7))}** (`memlib.estimate_rlhf(..., gpus=1, zero_stage=0)`, "
                        "the roles' resident bytes). Four trained models would be 64 N."),
    ),
    Numeric(
        id="08.2", title="GRPO's rollout KV cache", difficulty="interview", minutes=6,
        formula="KV cache = prompts x G x (prompt + response) x 2 x layers x kv_heads x head_dim x 2 B "
                "(memlib.serving.inference.kv_cache_bytes, inside memlib.estimate_rlhf)",
        prompt=f"GRPO on **Llama-3.1-8B**: each vLLM engine decodes **{_PROMPTS} prompts** at once, **G = {_G}** "
               f"samples per prompt, {_PROMPT_LEN} prompt tokens + {_RESP:,} response tokens each, bf16 KV cache, "
               "one engine per GPU. How many GB of KV cache does one engine hold when every sequence is complete?",
        expected=lambda: _grpo_kv(), unit="GB",
        slips=(Slip("no group", lambda: _grpo_kv(group=1),
                    "each prompt is sampled G times: the group multiplies the sequences in the cache"),
               Slip("no GQA", lambda: _grpo_kv(num_kv_heads=32),
                    "Llama-3.1-8B caches 8 KV heads, not its 32 query heads (grouped-query attention)"),
               Slip("response only", lambda: _grpo_kv() * _RESP / (_PROMPT_LEN + _RESP),
                    "the prompt's tokens stay in the cache too: prompt + response")),
        hints=("The engine caches K and V for every token of every sequence it is decoding.",
               "bytes = prompts x G x (prompt + response) x 2 x 32 layers x 8 kv_heads x 128 x 2 B.",
               "Compute the bytes of one token first (memlib.serving.inference.kv_bytes_per_token)."),
        worked=lambda: (f"{kv_bytes_per_token(get_model(_L8)):,} B per token × {_PROMPTS} × {_G} × "
                        f"{_PROMPT_LEN + _RESP:,} tokens = **{b(_grpo_kv())}** (`estimate_rlhf(..., 'grpo')"
                        ".roles['rollout'].estimate.kv_cache_bytes`)."),
    ),
    Numeric(
        id="08.3", title="Qwen2.5-7B PPO on 2 GPUs with a hybrid engine", difficulty="interview", minutes=8,
        formula="colocated peak with idle roles asleep = max over phases (memlib.estimate_rlhf, offload_idle=True)",
        prompt="PPO on **Qwen2.5-7B** (critic and reward model of the same size), all roles colocated on **2 GPUs**, "
               "ZeRO-3, bf16-mixed AdamW, full recompute, micro-batch 1; prompts and responses of 1,024 tokens; each "
               "vLLM engine (one per GPU) decodes 32 prompts at once. Idle roles sleep (vLLM sleep mode, DeepSpeed "
               "offload). What is the per-GPU peak in GB (`memlib.estimate_rlhf`)?",
        expected=lambda: float(_mistral().peak_bytes), unit="GB",
        slips=(Slip("everything resident", lambda: float(_mistral(False).peak_bytes),
                    "that is the peak with every role resident; sleeping roles free their memory"),
               Slip("sum of the roles", lambda: float(_mistral().sum_of_roles),
                    "you added every role's own peak; with sleep mode only one phase is alive at a time")),
        hints=("The phases run one after another: generation, scoring, training the actor, training the critic.",
               "peak = max(rollout engine: weights + KV cache; actor's training peak; critic's training peak; "
               "the largest scoring forward).",
               "Call memlib.estimate_rlhf('qwen2.5-7b', 'ppo', gpus=2, rollout_batch=32) and look at .phases."),
        worked=lambda: ("Phases per GPU: " + ", ".join(f"{p} {b(v)}" for p, v in _mistral().phases.items())
                        + f". The peak is the largest, **{b(_mistral().peak_bytes)}** during {_mistral().peak_at}; "
                        f"with every role resident it would be {b(_mistral(False).peak_bytes)}."),
    ),
    Choice(
        id="08.4", title="GRPO or PPO: which needs more memory?", difficulty="interview", minutes=6,
        formula="GRPO: no critic, G samples per prompt in the rollout cache (memlib.estimate_rlhf)",
        prompt="Llama-3.1-8B on 8 A100s, all roles colocated with sleep mode, 1,024 + 1,024 tokens, 16 prompts per "
               "engine. PPO samples one response per prompt; GRPO samples **G = 8** and has no critic. Which run has "
               "the higher per-GPU peak?",
        options=(Option("a", "PPO: it keeps a critic as large as the actor",
                        "the critic's states sleep while the rollout runs; the rollout is the peak",
                        misconception="dropping the critic always saves memory"),
                 Option("b", "GRPO: its rollout holds G times the sequences", "", "1"),
                 Option("c", "About the same: the models are the same size",
                        "the phases differ: the rollout cache grows with G",
                        misconception="the memory is set by the model sizes only")),
        reasons=(Option("1", "with sleep mode the peak is the largest phase, and the rollout's KV cache grows with the "
                             "number of sequences in flight (prompts x G)"),
                 Option("2", "GRPO computes advantages on the GPU from the group's rewards",
                        "the group statistics are a handful of numbers per prompt"),
                 Option("3", "GRPO's reference model is larger", "the reference is the same frozen copy in both")),
        right=_heavier,
        hints=("With sleep mode, the peak is one phase: which phase grows when G grows?",
               "rollout KV = prompts x G x tokens x bytes per token; the critic is asleep during the rollout.",
               "Compare estimate_rlhf(..., 'ppo').phases with estimate_rlhf(..., 'grpo', group_size=8).phases."),
        worked=lambda: (f"PPO peaks at {b(_peak4('ppo'))} per GPU, GRPO at {b(_peak4('grpo'))} "
                        f"(`memlib.estimate_rlhf`): **({_heavier()}), reason 1**. GRPO saves the critic's states, but "
                        "16 prompts × 8 samples put 8× the sequences in the rollout cache. With 2 prompts × 8 the cache "
                        "matches PPO's and so does the peak: the critic's saving shows only when every role stays "
                        "resident."),
    ),
    SpotError(
        id="08.5", title="DPO on a 13B: \"two models, 416 GB\"", difficulty="interview", minutes=6,
        formula="DPO: policy 16 B/param (bf16-mixed AdamW) + frozen reference 2 B/param (memlib.estimate_rlhf)",
        prompt="A circulating answer sizes DPO on Llama-2-13B. Find the error and give the model states of the two "
               "models, unsharded, in GB (exact parameter count; no activations).",
        quote="DPO 要同时加载 policy 和 reference 两个 13B 模型，每个 13B × 16 字节 = 208GB，共 416GB，所以至少要 6 张 A100-80G。",
        source="a typical circulating answer (paraphrased)",
        figures=(Figure("13B", "right", "Llama-2-13B, about 13.0 billion parameters"),
                 Figure("208GB", "error", "the reference is frozen: bf16 weights only, 2 B/param, not 16",
                        group="ref"),
                 Figure("416GB", "inherits", "the total inherits the reference counted at 16 B/param"),
                 Figure("6", "inherits", "the GPU count follows from the inflated total")),
        expected=lambda: _states(_L13, "dpo"),
        slips=(Slip("reference trained", lambda: _states(_L13, "dpo", frozen_bytes=16),
                    "that is the quote's own total: the reference has no gradients or optimizer states"),
               Slip("policy only", lambda: _states(_L13, "dpo") - 2 * get_model(_L13).num_params,
                    "the reference's bf16 weights stay on the GPU too (unless its log-probs are precomputed)")),
        hints=("Which of the two models has gradients and optimizer states?",
               "policy 16 N + reference 2 N = 18 N.",
               "N = memlib.get_model('llama-2-13b').num_params."),
        worked=lambda: (f"**208GB** for the reference is the error: it is frozen, 2 B/param. 16 N + 2 N = 18 × "
                        f"{get_model(_L13).num_params:,} = **{b(_states(_L13, 'dpo'))}** "
                        f"(`memlib.estimate_rlhf(..., 'dpo', gpus=1, zero_stage=0)`); with ZeRO-3 and activations "
                        f"memlib fits it on {min_rlhf_gpus(_L13, _A100, 'dpo')} A100 80GB."),
    ),
    MultiChoice(
        id="08.6", title="What is true of RLHF memory?", difficulty="warm-up", minutes=4,
        formula="roles and phases of estimate_rlhf (memlib.training.rlhf)",
        prompt="Llama-3.1-8B, 8 A100s, roles colocated with sleep mode unless stated. Which statements hold "
               "(memlib.estimate_rlhf)?",
        options=(Option("a", "With idle roles asleep, the per-GPU peak equals the largest phase",
                        "sleep mode frees what is idle, so phases do not add"),
                 Option("b", "The reference model holds at least as many bytes as the actor",
                        "the reference is frozen: 2 B/param against the actor's 16",
                        misconception="every RLHF model costs the same"),
                 Option("c", "Longer responses grow the rollout engine's KV cache",
                        "the cache holds every token of every sequence in flight"),
                 Option("d", "GRPO keeps a critic model",
                        "GRPO takes its baseline from the group's rewards: no value model",
                        misconception="every RL algorithm for LLMs has a critic"),
                 Option("e", "DPO runs a rollout engine",
                        "DPO learns from fixed preference pairs; it generates nothing",
                        misconception="DPO is online RL like PPO")),
        right=_true_statements,
        hints=("Separate what trains from what only reads, and what runs at the same time.",
               "Trained roles 16 B/param, frozen 2 B/param; KV = sequences x tokens x bytes per token; "
               "asleep: peak = max over phases.",
               "Look at estimate_rlhf(...).roles for each algorithm."),
        worked=lambda: (f"True: **{', '.join(sorted(_true_statements()))}**. The reference holds "
                        f"{b(estimate_rlhf(_L8, 'ppo', gpus=1, zero_stage=0, rollout_batch=1).roles['reference'].resident_bytes)}"
                        f" against the actor's "
                        f"{b(estimate_rlhf(_L8, 'ppo', gpus=1, zero_stage=0, rollout_batch=1).roles['actor'].resident_bytes)};"
                        " GRPO has no critic; DPO has no rollout."),
    ),
    Numeric(
        id="08.7", title="PPO on a 13B with every role resident", difficulty="stretch", minutes=10,
        formula="colocated, nothing asleep: resident bytes of every role + the running phase's transient "
                "(memlib.estimate_rlhf, offload_idle=False; memlib.training.rlhf.min_rlhf_gpus)",
        prompt="PPO on **Llama-2-13B** (critic and reward model of the same size), every role colocated on **8 A100 "
               "80GB**, ZeRO-3, bf16-mixed AdamW, full recompute, 1,024 + 1,024 tokens, 16 prompts per vLLM engine "
               "(one per GPU). No sleep mode: **every role stays resident** (model states, frozen weights, the "
               "engine's weights and KV cache). What is the per-GPU peak in GB, and does it fit?",
        expected=lambda: float(_r13(8).peak_bytes), unit="GB",
        slips=(Slip("asleep", lambda: float(estimate_rlhf(_L13, gpus=8, **_RUN7).peak_bytes),
                    "that is the peak with idle roles asleep; resident, every role's bytes stay at once"),
               Slip("engine sharded", lambda: float(_r13(8).peak_bytes - _r13(8).roles["rollout"].resident_bytes
                                                     * 7 / 8),
                    "ZeRO-3 shards the trainers and the frozen models, not the engine: each GPU's engine holds a "
                    "whole copy of the weights (tensor parallel 1) and its own KV cache")),
        hints=("Resident, everything adds up; ZeRO-3 divides the four models' states but not the engine's copy.",
               "per GPU ≈ (16 + 16 + 2 + 2) x N / 8 + 2 x N + KV cache + the actor's activations.",
               "Call memlib.estimate_rlhf('llama-2-13b', gpus=8, offload_idle=False, rollout_batch=16)."),
        worked=lambda: (f"Phases per GPU: " + ", ".join(f"{p} {b(v)}" for p, v in _r13(8).phases.items())
                        + f": **{b(_r13(8).peak_bytes)}**, which "
                        + ("fits" if fits(_r13(8), _A100).fits else "does not fit") + " an A100 80GB with the CUDA "
                        f"context and headroom. The engine's unsharded 2 N + KV cache sits on every GPU whatever the "
                        f"count: `min_rlhf_gpus` finds {_min13(False):.0f} GPUs resident, {_min13(True):.0f} asleep."),
    ),
    SelfAssessed(
        id="08.8", title="Colocated or separate for a 70B PPO run?", difficulty="stretch", minutes=12,
        formula="placement: hybrid engine (max over phases) vs one group per role (each group's own peak)",
        prompt="You must run PPO on a 70B policy with a 70B reward model on A100 80GB nodes. Argue for a placement: "
               "all roles colocated with sleep mode, or separate GPU groups (actor + reference, critic + reward, "
               "vLLM engines). Give the per-GPU memory of each choice as memlib computes it, the GPU count, what limits "
               "throughput, and the host RAM it needs. Then mark your answer against the rubric.",
        rubric=("The four models' bytes per parameter: 16 for actor and critic, 2 for reference and reward",
                "The rollout engine: a 70B in bf16 is ~141 GB, so tensor parallelism of at least 2 per engine, and its "
                "KV cache decides how many sequences decode at once",
                "Colocated with sleep: the peak is one phase; fewer GPUs, but generation and training take turns",
                "Separate: each group's peak; more GPUs, generation can overlap training (async), weights synced "
                "each step",
                "Adam offload (or enough GPUs for ZeRO-3 without it) and the host RAM that offload and sleep need",
                "A concrete count with memlib's figures (e.g. min_rlhf_gpus, or OpenRLHF's 32- and 48-GPU layouts)"),
        hints=("Start from the bytes of each role, then decide what must be on a GPU at the same time.",
               "colocated asleep: max over phases; separate: sum of the models sharing a group.",
               "Compute both with memlib.estimate_rlhf('llama-3-70b', ...), placement='colocated' and 'separate'."),
        worked=lambda: (lambda col, sep: (
            f"Colocated with sleep mode (engines of tensor parallel 4) fits on {col} A100 80GB (memlib.min_rlhf_gpus); "
            f"the phases take turns, so generation (most of the step) cannot overlap training. Separate, as "
            f"OpenRLHF's 70B script: actor + reference on 8 GPUs at "
            f"{b(sep.roles['actor'].peak_bytes + sep.roles['reference'].resident_bytes)} per GPU with Adam "
            f"offloaded, critic + reward on 8, and 8 vLLM engines of tensor parallel 2 on 16 (weights "
            f"{b(sep.roles['rollout'].estimate.weight_bytes)} per GPU, little room for cache): 32 GPUs, generation and "
            f"training can overlap, weights are broadcast after every step. Either way the offloaded Adam states "
            f"need about 12 bytes per trained parameter of host RAM."))(
            min_rlhf_gpus("llama-3-70b", _A100, rollout_tp=4, **_RUN7),
            estimate_rlhf("llama-3-70b", "ppo", placement="separate", rollout_tp=2, offload="optimizer", rollout_batch=8,
                          gpus={"actor": 8, "critic": 8, "reference": 8, "reward": 8, "rollout": 16})),
    ),
    Implement(
        id="08.9", title="The rollout engine's KV cache", difficulty="stretch", minutes=8,
        formula="rollout KV = prompts x G x (prompt + response) x 2 x layers x kv_heads x head_dim x 2 B "
                "(memlib.serving.inference.gqa_kv_bytes_per_token)",
        prompt="Write `rollout_kv_bytes(layers, kv_heads, head_dim, prompts, group_size, prompt_len, response_len)` "
               "returning the bytes of a bf16 KV cache holding `prompts x group_size` complete sequences of "
               "`prompt_len + response_len` tokens (K and V in every layer, only the KV heads cached; no paging). "
               "Tested against `memlib.serving.inference.gqa_kv_bytes_per_token` times the tokens, on Llama-3.1-8B, "
               "Llama-2-7B, Qwen2.5-72B and Mistral-7B rollouts and on inputs drawn at random each time you check.",
        function_name="rollout_kv_bytes", reference_name="memlib.serving.inference.gqa_kv_bytes_per_token",
        cases=lambda: [_kv_case(_L8, 32, 8, 512, 1536), _kv_case("llama-2-7b", 16, 1, 1024, 1024),
                       _kv_case("qwen2.5-72b", 4, 16, 2048, 8192), _kv_case("mistral-7b", 64, 4, 256, 768)],
        held_out=_random_kv_cases,
        reference=_kv_reference,
        slips=(Slip("no group", lambda k, w: w / k["group_size"],
                    "each prompt is sampled group_size times: every sample is its own sequence in the cache"),
               Slip("K only", lambda k, w: w / 2, "both K and V are cached: the factor 2"),
               Slip("response only", lambda k, w: w * k["response_len"] / (k["prompt_len"] + k["response_len"]),
                    "the prompt's tokens stay in the cache too")),
        hints=("Every token of every sequence keeps one key and one value vector per KV head per layer.",
               "bytes = 2 x layers x kv_heads x head_dim x 2 x prompts x group_size x (prompt_len + response_len).",
               "Write the bytes of one token first: 2 * layers * kv_heads * head_dim * 2."),
        worked=lambda: ("```python\ndef rollout_kv_bytes(layers, kv_heads, head_dim, prompts, group_size, prompt_len, "
                        "response_len):\n    per_token = 2 * layers * kv_heads * head_dim * 2  # K and V, bf16\n"
                        "    return per_token * prompts * group_size * (prompt_len + response_len)\n```\n\n"
                        f"Llama-3.1-8B, 32 prompts x G = 8 x 2,048 tokens: "
                        f"**{b(_kv_reference(_kv_case(_L8, 32, 8, 512, 1536)))}** per engine."),
    ),
]
