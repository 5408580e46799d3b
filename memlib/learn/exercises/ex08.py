"""Exercises for notebook 08: RLHF memory. PPO's four models (two trained at 16 bytes per parameter, two frozen
at 2), the rollout engine's fixed share of the card and the sequences its KV pool holds (G samples sharing their
prompt), colocated phases with and without sleep mode, GRPO against PPO, DPO's policy and reference, and the fewest
GPUs for a PPO run. Every figure comes from memlib.estimate_rlhf and memlib.training.rlhf.rollout_pool."""

from __future__ import annotations

from memlib.learn.exercises._common import b
import random

from memlib.learn.exercises.kinds import (Choice, Figure, Implement, MultiChoice, Numeric, Option, SelfAssessed, Slip,
                                          SpotError)
from memlib.hardware.fit import fits, usable_bytes
from memlib.hardware.gpus import get_gpu
from memlib.models import get_model
from memlib.serving.inference import gqa_kv_bytes_per_token, kv_bytes_per_token
from memlib.training.rlhf import estimate_rlhf, min_rlhf_gpus, rollout_pool, rollout_token_slots
from memlib.cost.weight_sync import weight_sync

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


# --- 08.2: how many sequences GRPO's engine decodes at once -------------------------------------------
_PROMPTS, _G, _PROMPT_LEN, _RESP, _FRAC = 24, 8, 512, 1536, 0.5


def _pool2():
    """The vLLM engine's pool on one A100 80GB at gpu_memory_utilization 0.5 (memlib.training.rlhf.rollout_pool)."""
    return rollout_pool(_L8, _A100, "vllm", _FRAC)


def _seqs2(shared: bool = True, prompt_len: int = _PROMPT_LEN) -> float:
    return float(_pool2().sequences_at_once(prompt_len, _RESP, _G, shared))


def _pool2_table() -> str:
    p = _pool2()
    return ("| what the engine logs at start-up | value |\n|---|---|\n"
            f"| KV cache size (tokens) | {p.token_slots:,} |\n| block size (tokens) | {p.page} |\n"
            f"| max_num_seqs | {p.max_num_seqs} |")


# --- 08.3: hybrid engine vs resident on 4 GPUs ---------------------------------------------------------
_RUN3 = dict(gpus=2, rollout_batch=32, prompt_len=1024, response_len=1024, gpu=_A100, gpu_memory_utilization=0.5)


def _mistral(offload_idle: bool = True):
    return estimate_rlhf(_M7, "ppo", offload_idle=offload_idle, **_RUN3)


def _actor_states3() -> float:
    """The actor's model states per GPU alone (no activations): a states-only hand derivation."""
    return float(_mistral().roles["actor"].resident_bytes)


def _given_table(e) -> str:
    """The figures a fair interviewer gives: the actor's training transient and the card's total as torch sees it."""
    a = e.roles["actor"]
    return ("| given | per GPU |\n|---|---|\n"
            f"| the actor's training step on top of its model states (activations, logits, a gathered layer) | "
            f"{b(a.peak_bytes - a.resident_bytes)} |\n"
            f"| an A100 80GB's memory as torch reports it | {b(usable_bytes(get_gpu(_A100)))} |")


# --- 08.4: GRPO vs PPO, every role resident, the same engine share --------------------------------------
_RUN4 = dict(gpus=8, rollout_batch=128, prompt_len=1024, response_len=1024, gpu=_A100, gpu_memory_utilization=0.5)


def _est4(algorithm: str, offload_idle: bool = False):
    return estimate_rlhf(_L8, algorithm, group_size=8 if algorithm == "grpo" else None, offload_idle=offload_idle,
                         **_RUN4)


def _peak4(algorithm: str) -> int:
    return _est4(algorithm).peak_bytes


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
             "c": asleep.sequences_at_once < short.sequences_at_once,
             "d": asleep.phases["rollout"] > short.phases["rollout"],
             "e": "critic" in grpo.roles,
             "f": "rollout" in dpo.roles}
    return frozenset(k for k, v in facts.items() if v)


# --- 08.7: fewest GPUs -----------------------------------------------------------------------------------
_RUN7 = dict(rollout_batch=16, prompt_len=1024, response_len=1024, gpu_memory_utilization=0.5)


def _r13(gpus: int):
    return estimate_rlhf(_L13, "ppo", gpus=gpus, offload_idle=False, **_RUN7)


def _min13(offload_idle: bool = True) -> float:
    return float(min_rlhf_gpus(_L13, _A100, offload_idle=offload_idle, **_RUN7))


# --- 08.9: implement the rollout cache with a shared prompt ---------------------------------------------
def _kv_case(model: str, prompts: int, group: int, prompt_len: int, response_len: int) -> dict:
    m = get_model(model)
    return dict(layers=m.num_layers, kv_heads=m.num_kv_heads, head_dim=m.head_dim, prompts=prompts, group_size=group,
                prompt_len=prompt_len, response_len=response_len)


def _kv_reference(k: dict) -> float:
    """memlib.serving.inference.gqa_kv_bytes_per_token (bf16) x prompts x memlib.training.rlhf.rollout_token_slots
    (the prompt once per group, page 1 as SGLang's radix cache): the cache when every response is complete."""
    per_token = gqa_kv_bytes_per_token(k["layers"], k["kv_heads"], k["head_dim"])
    slots = rollout_token_slots(k["prompt_len"], k["response_len"], k["group_size"], page=1)
    return float(per_token * k["prompts"] * slots)


def _random_kv_cases(rng: random.Random) -> list[dict]:
    return [dict(layers=rng.randint(2, 128), kv_heads=rng.choice((1, 2, 4, 8, 16, 32, 64)),
                 head_dim=rng.choice((64, 80, 96, 128, 256)), prompts=rng.randint(1, 256),
                 group_size=rng.choice((2, 4, 5, 8, 16, 64)), prompt_len=rng.randint(1, 8192),
                 response_len=rng.randint(1, 32768)) for _ in range(3)]


# --- 08.10: the weight sync of a 70B actor to 4 engines of tp 8 -------------------------------------------
_L70, _ENGINES10, _TP10, _LINK10 = "llama-3-70b", 4, 8, "IB NDR"


def _sync10(method: str = "nccl-broadcast"):
    """memlib.cost.weight_sync.weight_sync: OpenRLHF's broadcast of the bf16 actor to every engine GPU."""
    return weight_sync(_L70, method, engines=_ENGINES10, rollout_tp=_TP10, link=_LINK10)


# --- 08.11: which models a DAPO step keeps on the GPU -----------------------------------------------------
def _dapo_roles() -> frozenset:
    """The roles of estimate_rlhf(algorithm='grpo', reward=None, reference=False): DAPO with a rule-based verifier."""
    e = estimate_rlhf(_L8, "grpo", reward=None, reference=False, gpus=8)
    names = {"critic": "a", "actor": "b", "reference": "c", "rollout": "d", "reward": "e"}
    return frozenset(names[r] for r in e.roles)


def _dapo_saving(offload_idle: bool = False) -> int:
    """What dropping the reference and the reward model saves per GPU (memlib.estimate_rlhf), resident or asleep."""
    kw = dict(offload_idle=offload_idle, **_RUN4)
    return estimate_rlhf(_L8, "grpo", **kw).peak_bytes - estimate_rlhf(_L8, "grpo", reward=None, reference=False,
                                                                       **kw).peak_bytes


EXERCISES = [
    Numeric(
        id="08.1", title="PPO's four models for Qwen3-8B", difficulty="warm-up", minutes=4,
        formula="trained roles 16 B/param (bf16-mixed AdamW), frozen roles 2 B/param (bf16) (memlib.estimate_rlhf)",
        prompt="PPO fine-tunes **Qwen3-8B** with a critic and a reward model of the same size. The actor and the "
               "critic train with mixed-precision AdamW; the reference and the reward model only run forwards in bf16. "
               "On one GPU, without any sharding, how many GB do the four models hold (weights, gradients and optimizer "
               "states; no activations, no generation engine)? Use the exact parameter count "
               "(`memlib.get_model('qwen3-8b').num_params`).",
        expected=lambda: _states(_Q7), unit="GB", tolerance=0.015,
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
                        "the roles' resident bytes; the reward model's one-output value head replaces its LM head, "
                        "a fraction of a percent less than 2 N). Four trained models would be 64 N."),
    ),
    Numeric(
        id="08.2", title="GRPO's rollout: how many sequences at once?", difficulty="interview", minutes=6,
        formula="sequences at once = pool tokens x G // (prompt + G x response), the G samples sharing their prompt "
                "(memlib.training.rlhf.RolloutPool.sequences_at_once, rollout_token_slots)",
        prompt=f"GRPO on **Llama-3.1-8B**: one vLLM engine per A100 80GB, started with `gpu_memory_utilization` "
               f"**{_FRAC:g}**; its start-up log is below. Each step hands it {_PROMPTS} prompts of {_PROMPT_LEN} tokens, "
               f"**G = {_G}** samples each, {_RESP:,} response tokens per sample, and the samples of a prompt share its "
               "KV blocks (prefix caching). When every response runs to its full length, how many sequences does the "
               "engine decode at once (the rest wait for a free slot)?",
        table=_pool2_table,
        expected=lambda: _seqs2(), unit="count",
        slips=(Slip("no shared prompt", lambda: _seqs2(shared=False),
                    "the G samples of a prompt share its KV blocks: a group needs prompt + G x response slots, "
                    "not G x (prompt + response)"),
               Slip("response only", lambda: float(_pool2().token_slots // _RESP),
                    "the prompt's tokens sit in the pool too, once per group")),
        hints=("The engine's pool is fixed when it starts; the group decides how the pool is shared, not its size.",
               "one group = prompt + G x response slots; sequences at once = pool tokens x G / that, rounded down.",
               f"Start with one group: {_PROMPT_LEN} + {_G} x {_RESP:,} slots."),
        worked=lambda: (lambda p, at_once: (
            f"A group of {_G} needs {rollout_token_slots(_PROMPT_LEN, _RESP, _G):,} slots "
            f"({_PROMPT_LEN} + {_G} × {_RESP:,}); {p.token_slots:,} × {_G} // that = **{at_once:.0f} sequences** at "
            f"once (`memlib.training.rlhf.rollout_pool(...).sequences_at_once`). Without the shared prompt "
            f"{_seqs2(shared=False):.0f}. The {_PROMPTS} × {_G} sequences of a step take "
            f"{p.waves(_PROMPTS, _PROMPT_LEN, _RESP, _G)} wave(s): the group size costs time, the pool stays "
            f"{b(p.reserved_bytes)} per GPU whatever G is."))(_pool2(), _seqs2()),
    ),
    Numeric(
        id="08.3", title="Qwen2.5-7B PPO on 2 GPUs with a hybrid engine", difficulty="interview", minutes=8,
        formula="colocated peak with idle roles asleep = max over phases: the engine's share of the card, the "
                "scoring forwards, training the actor or the critic (memlib.estimate_rlhf, offload_idle=True)",
        prompt="PPO on **Qwen2.5-7B** (critic and reward model of the same size), all roles colocated on **2 A100 "
               "80GB**, ZeRO-3, bf16-mixed AdamW, full recompute, micro-batch 1; prompts and responses of 1,024 tokens. "
               "One vLLM engine per GPU reserves `gpu_memory_utilization` **0.5** of the card. Idle roles sleep "
               "(vLLM sleep mode, DeepSpeed offload). What is the per-GPU peak in GB? The figures below are given.",
        table=lambda: _given_table(_mistral()),
        expected=lambda: float(_mistral().peak_bytes), unit="GB",
        close_advice="the largest phase is training one model: its states over 2 GPUs plus the step's activations "
                     "and logits (a few GB)",
        # (adding every role's own peak, sum_of_roles, lands within 5% of the resident figure: one slip names both)
        slips=(Slip("everything resident", lambda: float(_mistral(False).peak_bytes),
                    "that is the peak with every role resident (or every role's own peak added up); sleeping roles "
                    "free their memory, so only one phase is alive at a time"),
               Slip("states only", _actor_states3,
                    "training the actor also holds the step's activations, logits and a gathered layer on top of "
                    "its states"),
               Slip("engine's share", lambda: float(_mistral().phases["rollout"]),
                    "the engine's share is the rollout phase; another phase is larger here")),
        hints=("The phases run one after another: generation, scoring, training the actor, training the critic.",
               "peak = max(engine: 0.5 x the card; training the actor: 16 B/param / 2 GPUs + activations; critic; "
               "the largest scoring forward).",
               "Compare half of an 80 GB card with 16 x 7.6e9 / 2 bytes of states."),
        worked=lambda: ("Phases per GPU: " + ", ".join(f"{p} {b(v)}" for p, v in _mistral().phases.items())
                        + f". The peak is the largest, **{b(_mistral().peak_bytes)}** during {_mistral().peak_at}; "
                        f"with every role resident it would be {b(_mistral(False).peak_bytes)}."),
    ),
    Choice(
        id="08.4", title="GRPO or PPO: which needs more memory?", difficulty="interview", minutes=6,
        formula="GRPO: no critic; G samples per prompt decoded from the same engine share (memlib.estimate_rlhf)",
        prompt="Llama-3.1-8B on 8 A100 80GB, all roles colocated and **resident** (no sleep mode), one vLLM engine per "
               "GPU reserving `gpu_memory_utilization` 0.5, 1,024 + 1,024 tokens, 128 prompts per engine per step. PPO "
               "samples one response per prompt; GRPO samples **G = 8** and has no critic. Which run has the higher "
               "per-GPU peak?",
        options=(Option("a", "PPO: it keeps a critic as large as the actor", "", "1"),
                 Option("b", "GRPO: its rollout holds G times the sequences",
                        "the engine reserves the same share whatever G is: the extra sequences wait for a free slot "
                        "(more waves, more time)",
                        misconception="the rollout's KV cache grows with the group size"),
                 Option("c", "About the same: the models are the same size",
                        "PPO's critic keeps its sharded states on every GPU; GRPO has none",
                        misconception="the memory is set by the model sizes only")),
        reasons=(Option("1", "the engine's share is fixed, so G costs decoding waves, not memory; resident, PPO carries "
                             "the critic's sharded model states on top of everything GRPO holds"),
                 Option("2", "GRPO computes advantages on the GPU from the group's rewards",
                        "the group statistics are a handful of numbers per prompt"),
                 Option("3", "GRPO's reference model is larger", "the reference is the same frozen copy in both")),
        right=_heavier,
        hints=("Which roles differ between the two, and does the engine's memory depend on G?",
               "resident peak = every role's resident bytes + the running phase's transient; the engine holds 0.5 of "
               "the card whatever the batch.",
               "Compare estimate_rlhf(..., 'ppo', offload_idle=False) with estimate_rlhf(..., 'grpo', group_size=8, "
               "offload_idle=False)."),
        worked=lambda: (f"PPO peaks at {b(_peak4('ppo'))} per GPU, GRPO at {b(_peak4('grpo'))} "
                        f"(`memlib.estimate_rlhf`): **({_heavier()}), reason 1**. The difference is the critic's "
                        f"{b(_est4('ppo').roles['critic'].resident_bytes)} of sharded states. The group costs time "
                        f"instead: {_est4('ppo').waves} waves of decoding per step for PPO, {_est4('grpo').waves} for "
                        f"GRPO. With sleep mode both peak at {b(_est4('ppo', True).peak_bytes)} and "
                        f"{b(_est4('grpo', True).peak_bytes)}: the engine's share is the largest phase of each."),
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
        prompt="Llama-3.1-8B, 8 A100 80GB, roles colocated with sleep mode unless stated, vLLM engines reserving "
               "half of each card. Which statements hold (memlib.estimate_rlhf)?",
        options=(Option("a", "With idle roles asleep, the per-GPU peak equals the largest phase",
                        "sleep mode frees what is idle, so phases do not add"),
                 Option("b", "The reference model holds at least as many bytes as the actor",
                        "the reference is frozen: 2 B/param against the actor's 16",
                        misconception="every RLHF model costs the same"),
                 Option("c", "Longer responses mean fewer sequences decoded at once",
                        "the pool is fixed: each sequence takes more of its slots"),
                 Option("d", "Longer responses raise the rollout phase's memory",
                        "vLLM reserves the same share of the card whatever the lengths; longer sequences fill its "
                        "pool with fewer of them",
                        misconception="the rollout's KV cache grows with batch x length"),
                 Option("e", "GRPO keeps a critic model",
                        "GRPO takes its baseline from the group's rewards: no value model",
                        misconception="every RL algorithm for LLMs has a critic"),
                 Option("f", "DPO runs a rollout engine",
                        "DPO learns from fixed preference pairs; it generates nothing",
                        misconception="DPO is online RL like PPO")),
        right=_true_statements,
        hints=("Separate what trains from what only reads, what runs at the same time, and what is fixed when the "
               "engine starts.",
               "Trained roles 16 B/param, frozen 2 B/param; the engine's share is fixed, sequences at once = pool "
               "tokens / tokens per sequence; asleep: peak = max over phases.",
               "Look at estimate_rlhf(...).roles for each algorithm."),
        worked=lambda: (f"True: **{', '.join(sorted(_true_statements()))}**. The reference holds "
                        f"{b(estimate_rlhf(_L8, 'ppo', gpus=1, zero_stage=0, rollout_batch=1).roles['reference'].resident_bytes)}"
                        f" against the actor's "
                        f"{b(estimate_rlhf(_L8, 'ppo', gpus=1, zero_stage=0, rollout_batch=1).roles['actor'].resident_bytes)};"
                        " GRPO has no critic; DPO has no rollout; the engine's share does not move with the lengths, "
                        f"its sequences at once do ({estimate_rlhf(_L8, 'ppo', **_RUN4).sequences_at_once} at 2,048 "
                        f"tokens, {estimate_rlhf(_L8, 'ppo', **{**_RUN4, 'response_len': 512}).sequences_at_once} "
                        "at 1,536)."),
    ),
    Numeric(
        id="08.7", title="PPO on a 13B with every role resident", difficulty="stretch", minutes=10,
        formula="colocated, nothing asleep: resident bytes of every role (the engine: its share of the card) + the "
                "running phase's transient (memlib.estimate_rlhf, offload_idle=False; memlib.training.rlhf.min_rlhf_gpus)",
        prompt="PPO on **Llama-2-13B** (critic and reward model of the same size), every role colocated on **8 A100 "
               "80GB**, ZeRO-3, bf16-mixed AdamW, full recompute, 1,024 + 1,024 tokens. One vLLM engine per GPU "
               "reserves `gpu_memory_utilization` **0.5** of the card. No sleep mode: **every role stays resident** "
               "(model states, frozen weights, the engine's share). What is the per-GPU peak in GB, and does it fit? "
               "Answer with the figure and the verdict (\"987.6 GB, fits\" is the form). The figures below are given.",
        table=lambda: _given_table(_r13(8)),
        expected=lambda: float(_r13(8).peak_bytes), unit="GB", tolerance=0.04,
        fits=lambda: fits(_r13(8), _A100).fits,
        close_advice="per GPU = 36 x N / 8 (four models, sharded) + the engine's share (0.5 x the card torch sees) + "
                     "the actor's activations",
        slips=(Slip("asleep", lambda: float(estimate_rlhf(_L13, gpus=8, **_RUN7).peak_bytes),
                    "that is the peak with idle roles asleep; resident, every role's bytes stay at once"),
               Slip("engine sharded", lambda: float(_r13(8).peak_bytes - _r13(8).roles["rollout"].resident_bytes
                                                     * 7 / 8),
                    "ZeRO-3 shards the trainers and the frozen models, not the engine: each GPU's engine reserves "
                    "its own share of the card")),
        hints=("Resident, everything adds up; ZeRO-3 divides the four models' states but not the engine's share.",
               "per GPU ≈ (16 + 16 + 2 + 2) x N / 8 + 0.5 x the card + the actor's activations.",
               "Call memlib.estimate_rlhf('llama-2-13b', gpus=8, offload_idle=False, gpu_memory_utilization=0.5)."),
        worked=lambda: (f"Phases per GPU: " + ", ".join(f"{p} {b(v)}" for p, v in _r13(8).phases.items())
                        + f": **{b(_r13(8).peak_bytes)}**, which "
                        + ("fits" if fits(_r13(8), _A100).fits else "does not fit") + " an A100 80GB with the CUDA "
                        f"context and headroom. By hand: the four models' states, 36 N / 8 = "
                        f"{b(sum(r.resident_bytes for k, r in _r13(8).roles.items() if k != 'rollout'))}, + the "
                        f"engine's {b(_r13(8).roles['rollout'].resident_bytes)} + activations. The engine's share sits "
                        f"on every GPU whatever the count: `min_rlhf_gpus` finds {_min13(False):.0f} GPUs resident, "
                        f"{_min13(True):.0f} asleep."),
    ),
    SelfAssessed(
        id="08.8", title="Colocated or separate for a 70B PPO run?", difficulty="stretch", minutes=12,
        formula="placement: hybrid engine (max over phases) vs one group per role (each group's own peak)",
        prompt="You must run PPO on a 70B policy with a 70B reward model on A100 80GB nodes. Argue for a placement: "
               "all roles colocated with sleep mode, or separate GPU groups (actor + reference, critic + reward, "
               "vLLM engines). Give the per-GPU memory of each choice as memlib computes it, the GPU count, what limits "
               "throughput, and the host RAM it needs. Then mark your answer against the rubric.",
        rubric=("The four models' bytes per parameter: 16 for actor and critic, 2 for reference and reward",
                "The rollout engine reserves a share of each card (gpu_memory_utilization): a 70B in bf16 is about "
                "140 GB, so its tensor parallelism must put the weights inside that share, and the KV pool left "
                "decides how many sequences decode at once",
                "Colocated with sleep: the peak is one phase; fewer GPUs, but generation and training take turns",
                "Separate: each group's peak; more GPUs, generation can overlap training (async), weights synced "
                "each step",
                "Adam offload (or enough GPUs for ZeRO-3 without it) and the host RAM that offload and sleep need",
                "A concrete count with memlib's figures (e.g. min_rlhf_gpus, or OpenRLHF's 32- and 48-GPU layouts)"),
        hints=("Start from the bytes of each role, then decide what must be on a GPU at the same time.",
               "colocated asleep: max over phases; separate: sum of the models sharing a group.",
               "Compute both with memlib.estimate_rlhf('llama-3-70b', ...), placement='colocated' and 'separate'."),
        worked=lambda: (lambda col, sep: (
            f"Colocated with sleep mode (engines of tensor parallel 4, each reserving half of every card) fits on "
            f"{col} A100 80GB (memlib.min_rlhf_gpus); the phases take turns, so generation (most of the step) cannot "
            f"overlap training. Separate, as "
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
        id="08.9", title="The rollout's KV cache with a shared prompt", difficulty="stretch", minutes=8,
        formula="rollout KV = prompts x (prompt + G x response) x 2 x layers x kv_heads x head_dim x 2 B "
                "(memlib.serving.inference.gqa_kv_bytes_per_token x memlib.training.rlhf.rollout_token_slots)",
        prompt="Write `rollout_kv_bytes(layers, kv_heads, head_dim, prompts, group_size, prompt_len, response_len)` "
               "returning the bytes of a bf16 KV cache holding `prompts` groups of `group_size` complete samples, "
               "the samples of a prompt sharing its `prompt_len` tokens (SGLang's radix cache: one slot per token, "
               "no pages) and each keeping its own `response_len` tokens (K and V in every layer, only the KV heads "
               "cached). Tested against `memlib.serving.inference.gqa_kv_bytes_per_token` times "
               "`memlib.training.rlhf.rollout_token_slots`, on Llama-3.1-8B, Llama-2-7B, Qwen2.5-72B and Mistral-7B "
               "rollouts and on inputs drawn at random each time you check.",
        function_name="rollout_kv_bytes", reference_name="memlib.training.rlhf.rollout_token_slots",
        cases=lambda: [_kv_case(_L8, 32, 8, 512, 1536), _kv_case("llama-2-7b", 16, 4, 1024, 1024),
                       _kv_case("qwen2.5-72b", 4, 16, 2048, 8192), _kv_case("mistral-7b", 64, 4, 256, 768)],
        held_out=_random_kv_cases,
        reference=_kv_reference,
        slips=(Slip("prompt per sample", lambda k, w: w * k["group_size"] * (k["prompt_len"] + k["response_len"])
                    / (k["prompt_len"] + k["group_size"] * k["response_len"]),
                    "the samples of a prompt share its tokens: prompt + G x response per group, not G x (prompt + "
                    "response)"),
               Slip("K only", lambda k, w: w / 2, "both K and V are cached: the factor 2"),
               Slip("response only", lambda k, w: w * k["group_size"] * k["response_len"]
                    / (k["prompt_len"] + k["group_size"] * k["response_len"]),
                    "the prompt's tokens stay in the cache too, once per group")),
        hints=("Every cached token keeps one key and one value vector per KV head per layer; a shared prompt is "
               "cached once per group.",
               "bytes = 2 x layers x kv_heads x head_dim x 2 x prompts x (prompt_len + group_size x response_len).",
               "Write the bytes of one token first: 2 * layers * kv_heads * head_dim * 2."),
        worked=lambda: ("```python\ndef rollout_kv_bytes(layers, kv_heads, head_dim, prompts, group_size, prompt_len, "
                        "response_len):\n    per_token = 2 * layers * kv_heads * head_dim * 2  # K and V, bf16\n"
                        "    return per_token * prompts * (prompt_len + group_size * response_len)  # prompt shared\n"
                        "```\n\n"
                        f"Llama-3.1-8B, 32 prompts x G = 8, 512 + 1,536 tokens: "
                        f"**{b(_kv_reference(_kv_case(_L8, 32, 8, 512, 1536)))}**; without sharing the prompt "
                        f"{b(_kv_reference(_kv_case(_L8, 32, 8, 512, 1536)) * rollout_token_slots(512, 1536, 8, False, 1) / rollout_token_slots(512, 1536, 8, page=1))}."),
    ),
    Numeric(
        id="08.10", title="Weight sync: a 70B actor to 4 engines of tensor parallel 8", difficulty="interview",
        minutes=6,
        formula="NCCL broadcast of each whole bf16 tensor to every engine GPU: W = 2 B x N per GPU, time about W / "
                "link bytes/s, pipelined (memlib.cost.weight_sync.weight_sync, method 'nccl-broadcast')",
        prompt=f"A separate-placement PPO run trains **Llama-3-70B** on its own nodes and generates with "
               f"**{_ENGINES10} vLLM engines of tensor parallel {_TP10}** on other nodes. After every optimizer step the "
               "trainer's rank 0 gathers each parameter and broadcasts the whole bf16 tensor over NCCL to every vLLM "
               "worker (OpenRLHF's `_broadcast_to_vllm`); each worker keeps its tensor-parallel slice. The path "
               "crosses one **InfiniBand NDR port (400 Gb/s)** per GPU. Ignoring latency, how many seconds does one "
               "sync take at the link's line rate? (Use the exact parameter count, "
               "`memlib.get_model('llama-3-70b').num_params`.)",
        expected=lambda: _sync10().seconds, unit="s", tolerance=0.03,
        close_advice="the bytes are the whole bf16 actor; a pipelined broadcast carries them once over each link",
        slips=(Slip("bits as bytes or slices", lambda: _sync10("resharded").seconds,
                    "400 Gb/s is 50 GB/s, and OpenRLHF's broadcast sends every engine GPU the whole tensor, not its "
                    "1/8 slice (a reshard-aware sync would send the slice: that figure)"),
               Slip("engines one after another", lambda: _ENGINES10 * _sync10().seconds,
                    "one broadcast reaches every engine at once: NCCL pipelines it along a chain, each link carries "
                    "the weights once"),
               Slip("every GPU one after another", lambda: _ENGINES10 * _TP10 * _sync10().seconds,
                    "one broadcast reaches every engine GPU at once: NCCL pipelines it along a chain"),
               Slip("fp32 weights", lambda: 2 * _sync10().seconds,
                    "the engines run bf16: 2 bytes per parameter travel, not the fp32 master copy")),
        hints=("What arrives at each engine GPU, and does a pipelined broadcast get slower with more receivers?",
               "time = 2 x N bytes / (400e9 / 8 bytes/s).",
               "Start from N = memlib.get_model('llama-3-70b').num_params and 2 bytes each."),
        worked=lambda: (lambda s: (
            f"W = 2 × {get_model(_L70).num_params:,} = {b(s.weight_bytes)}; every engine GPU receives all of it "
            f"({b(s.bytes_per_engine)} per engine, {b(s.kept_per_gpu)} kept per GPU), and one pipelined broadcast "
            f"takes W / 50 GB/s = **{s.seconds:.2f} s** per step "
            f"(`memlib.cost.weight_sync.weight_sync(..., 'nccl-broadcast')`). A reshard-aware sync that sends "
            f"each GPU only its slice takes {_sync10('resharded').seconds:.2f} s; colocated on NVLink, verl's "
            f"3D-HybridEngine moves a fraction of that. It happens every step: next to a rollout of minutes it is "
            "small, next to a fast step it is not."))(_sync10()),
    ),
    MultiChoice(
        id="08.11", title="Which models does DAPO keep on the GPU?", difficulty="interview", minutes=5,
        formula="DAPO = GRPO's group advantage, no KL term (no reference), a rule-based verifier reward (no reward "
                "model) (memlib.estimate_rlhf(..., 'grpo', reward=None, reference=False))",
        prompt="DAPO (Yu et al. 2025) trains **Llama-3.1-8B** on math with a rule-based answer checker as its reward, "
               "GRPO-style group advantages, clip-higher, dynamic sampling and a token-level loss, and removes the KL "
               "penalty. Which of these hold model weights on the GPUs during a DAPO step?",
        options=(Option("a", "a critic (value model)", "the baseline is the group's mean reward, as in GRPO",
                        misconception="every RL algorithm for LLMs has a critic"),
                 Option("b", "the actor (policy)", "it is the model being trained"),
                 Option("c", "a frozen reference model",
                        "the reference exists only for the KL term, which DAPO removes",
                        misconception="the clipped ratio needs the reference model"),
                 Option("d", "the rollout engine (vLLM / SGLang)", "the policy still samples its G responses"),
                 Option("e", "a reward model", "the reward is a rule (RLVR): the answer checker runs on the CPU",
                        misconception="every RL reward comes from a learned model")),
        right=_dapo_roles,
        hints=("For each model, ask which term of DAPO's loss or which step of its loop needs it.",
               "GRPO keeps actor + reference (+ reward model); DAPO's changes remove the KL term; RLVR's reward is a "
               "program.",
               "Compare estimate_rlhf(..., 'grpo').roles with estimate_rlhf(..., 'grpo', reward=None, "
               "reference=False).roles."),
        worked=lambda: (f"**{', '.join(sorted(_dapo_roles()))}**: the actor and its rollout engine "
                        "(`memlib.estimate_rlhf('llama-3.1-8b', 'grpo', reward=None, reference=False).roles`). The "
                        "clip ratio compares the new policy with the *old* policy's log-probs, which the actor "
                        "computes before its update: no extra model. With every role resident, dropping the reference "
                        f"and the reward model saves {b(_dapo_saving())} per GPU on 8 A100s; with sleep mode "
                        f"the peak is one phase (the engine's share or training the actor) and moves by "
                        f"{b(_dapo_saving(True))}."),
    ),
]
