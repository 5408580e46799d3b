"""estimate_rlhf: GPU memory of RLHF post-training (PPO, GRPO, DPO), built from memlib's own estimates.

No new per-tensor formula lives here: every role is one of memlib's existing estimates, and this
module only decides which of them are alive at the same time.

Roles (Ouyang et al. 2022, InstructGPT, Sec. 3.5; Schulman et al. 2017, PPO):
  actor      the policy being trained: memlib.estimate_training (weights, gradients, optimizer
             states, activations) at prompt_len + response_len tokens, ZeRO over the role's GPUs.
  critic     PPO only: the value model, trained too (estimate_training of the critic model; a value
             head replaces the LM head, so the logits term is an over-count of a few hundred MB).
  reference  the frozen initial policy, for the KL penalty: weights (bf16) + one forward's
             activations without autograd (estimate_inference's weights + prefill activations; no KV
             cache, a scoring forward runs with use_cache=False). Under ZeRO-3 its weights are sharded
             over the role's GPUs too (OpenRLHF and verl wrap it like the actor).
  reward     the frozen reward model, counted like the reference (reward=None: a rule or verifier
             reward, as GRPO on math often uses, costs no GPU memory).
  rollout    the generation engine (vLLM/SGLang) holding its own copy of the actor's weights and the
             KV cache of rollout_batch x group_size sequences of prompt_len + response_len tokens
             (estimate_inference(engine="vllm"): memlib.serving.inference.kv_cache_bytes), chunked
             prefill of prefill_tokens.
GRPO (Shao et al. 2024, DeepSeekMath, Sec. 4.1): no critic; G = group_size samples per prompt, the
advantage is each reward's z-score within its group. DPO (Rafailov et al. 2023): the policy (actor)
and a frozen reference; each preference pair is a chosen and a rejected sequence, so every forward
holds 2 x micro_batch sequences; no rollout, no reward model, no critic.

Placement:
  colocated  every role on the same `gpus` GPUs (verl's hybrid engine, OpenRLHF's --colocate_all).
             offload_idle=True: idle roles sleep (vLLM sleep mode frees its weights and KV cache,
             DeepSpeed/FSDP offload the trainers' parameters and optimizer states), so each phase
             holds only what it runs: peak = max over the phases. offload_idle=False: every role's
             resident bytes stay on the GPU (trainable: model states; frozen: weights; rollout:
             weights + the preallocated KV pool) and each phase adds its own transient on top:
             peak = sum of the resident bytes + the largest transient.
  separate   each role on a group of its own (OpenRLHF's distributed mode): `gpus` is a dict
             role -> GPU count (or one count for every group); the result is each group's per-GPU
             figure, peak = the largest, total GPUs = the sum.

Phases (colocated): rollout (the engine generates), scoring (actor, reference, reward and critic
forwards: old log-probs, KL reference, rewards, values; each role in turn), train_actor, train_critic.

Not counted: the CUDA context and allocator headroom (`fits` adds them), vLLM's
gpu_memory_utilization reservation (memlib.serving.capacity), the fp32 log-softmax of the response
tokens, experience buffers (kept in host RAM by OpenRLHF and verl), weight-sync staging buffers,
and the pinned host RAM that offloading needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memlib._checks import choice, flag, positive_int
from memlib.models import get_model
from memlib.serving.inference import estimate_inference
from memlib.units import fmt_bytes, gb

ALGORITHMS = ("ppo", "grpo", "dpo")
PLACEMENTS = ("colocated", "separate")
ROLES = ("actor", "critic", "reference", "reward", "rollout")
SAME = "same"  # critic/reward default: the actor's model
ROLLOUT_ENGINE = "vllm"
KINDS = {"actor": "trainable", "critic": "trainable", "reference": "frozen", "reward": "frozen", "rollout": "rollout"}
PHASES = ("rollout", "scoring", "train_actor", "train_critic")


@dataclass
class RoleMemory:
    """One role's memory per GPU of its group: its own peak, what stays resident, the transient on top."""

    role: str
    model: str
    kind: str  # "trainable" | "frozen" | "rollout"
    gpus: int
    peak_bytes: int  # the role's own peak per GPU (training step, forward, or generation)
    resident_bytes: int  # what stays while the role is idle and not offloaded
    forward_bytes: int  # weights + one forward's activations without autograd (scoring)
    forward_activation_bytes: int  # the activations of that forward alone
    estimate: object  # the memlib estimate behind it (Estimate or InferenceEstimate)
    breakdown: dict = field(default_factory=dict)


@dataclass
class RLHFEstimate:
    algorithm: str
    placement: str
    offload_idle: bool
    roles: dict  # role -> RoleMemory
    phases: dict  # colocated: phase -> bytes per GPU; separate: {}
    notes: list = field(default_factory=list)

    @property
    def gpus(self) -> int:
        """GPUs in use: the shared set (colocated) or the sum of the groups (separate)."""
        if self.placement == "colocated":
            return next(iter(self.roles.values())).gpus
        return sum(r.gpus for r in self.roles.values())

    @property
    def per_group(self) -> dict:
        """separate: role -> bytes per GPU of its group; colocated: {'all roles': peak}."""
        if self.placement == "separate":
            return {name: r.peak_bytes for name, r in self.roles.items()}
        return {"all roles": self.peak_bytes}

    @property
    def peak_bytes(self) -> int:
        """The largest per-GPU figure: max over phases (colocated) or over groups (separate)."""
        return max(self.phases.values()) if self.placement == "colocated" else max(self.per_group.values())

    @property
    def peak_at(self) -> str:
        """The phase (colocated) or the role's group (separate) where the peak is."""
        source = self.phases if self.placement == "colocated" else self.per_group
        return max(source, key=source.get)

    @property
    def sum_of_roles(self) -> int:
        """Every role's own peak per GPU added up: what colocating with nothing freed would approach."""
        return sum(r.peak_bytes for r in self.roles.values())

    def table(self) -> str:
        """A markdown table: each role's model, GPUs, peak, resident and scoring-forward bytes (GB)."""
        rows = ["| role | model | kind | GPUs | own peak / GPU | resident / GPU | forward / GPU |",
                "|---|---|---|---|---|---|---|"]
        for r in self.roles.values():
            rows.append(f"| {r.role} | {r.model} | {r.kind} | {r.gpus} | {gb(r.peak_bytes):,.1f} GB | "
                        f"{gb(r.resident_bytes):,.1f} GB | {gb(r.forward_bytes):,.1f} GB |")
        if self.phases:
            rows += ["", "| phase | bytes / GPU |", "|---|---|"]
            rows += [f"| {p} | {gb(v):,.1f} GB |" for p, v in self.phases.items()]
        return "\n".join(rows)

    def explain(self) -> str:
        lines = [f"{self.algorithm.upper()}, {self.placement}"
                 + (f" ({'idle roles offloaded' if self.offload_idle else 'every role resident'})"
                    if self.placement == "colocated" else "") + f", {self.gpus} GPUs in use"]
        for r in self.roles.values():
            lines.append(f"  {r.role:<9} {r.model} ({r.kind}, {r.gpus} GPUs): peak {fmt_bytes(r.peak_bytes)}, "
                         f"resident {fmt_bytes(r.resident_bytes)}, forward {fmt_bytes(r.forward_bytes)} per GPU")
        if self.placement == "colocated":
            rule = ("max over phases" if self.offload_idle else
                    "sum of resident bytes + the phase's transient")
            for p, v in self.phases.items():
                lines.append(f"  phase {p:<12} {fmt_bytes(v)} per GPU")
            lines.append(f"peak {fmt_bytes(self.peak_bytes)} per GPU during {self.peak_at} ({rule})")
        else:
            lines.append(f"peak {fmt_bytes(self.peak_bytes)} per GPU in the {self.peak_at} group")
        return "\n".join(lines + [f"note: {n}" for n in self.notes])

    def __repr__(self) -> str:
        return (f"RLHFEstimate({self.algorithm}, {self.placement}: peak {fmt_bytes(self.peak_bytes)} per GPU at "
                f"{self.peak_at}, {self.gpus} GPUs)")


def _role_gpus(gpus, roles: list[str], placement: str) -> dict:
    if placement == "colocated":
        if isinstance(gpus, dict):
            raise ValueError("placement 'colocated' puts every role on the same GPUs: gpus is one count, "
                             "not a dict (a dict of GPU counts per role is placement 'separate')")
        n = positive_int("gpus", gpus)
        return {r: n for r in roles}
    if isinstance(gpus, dict):
        unknown = sorted(set(gpus) - set(roles))
        if unknown:
            raise ValueError(f"gpus names roles {unknown} that this setup does not have; its roles are {roles}")
        missing = [r for r in roles if r not in gpus]
        if missing:
            raise ValueError(f"placement 'separate' needs a GPU count for every role; missing {missing}")
        return {r: positive_int(f"gpus[{r!r}]", gpus[r]) for r in roles}
    n = positive_int("gpus", gpus)
    return {r: n for r in roles}


def _forward(model, gpus: int, zero_stage: int, micro_batch: int, seq: int, logits: str) -> tuple[int, int, object]:
    """(16-bit weights per GPU, one forward's activations, the estimate) of a forward without autograd."""
    est = estimate_inference(model, batch=micro_batch, context_len=seq, weights="bf16", logits=logits)
    weights = est.weight_bytes if zero_stage != 3 else -(-est.weight_bytes // gpus)  # ZeRO-3 shards frozen weights
    return weights, est.activation_bytes, est


def estimate_rlhf(actor, algorithm: str = "ppo", *, critic=SAME, reward=SAME, gpus=8, placement: str = "colocated",
                  offload_idle: bool = True, prompt_len: int = 1024, response_len: int = 1024, micro_batch: int = 1,
                  rollout_batch: int = 64, group_size: int | None = None, rollout_tp: int = 1, prefill_tokens: int = 8192,
                  kv_cache: str = "bf16", zero_stage: int = 3, **train_options) -> RLHFEstimate:
    """Per-GPU memory of one RLHF step: each role's estimate, each phase, the peak.

    actor:         a catalog name or memlib.Model (the policy; DPO's policy too).
    algorithm:     "ppo" (actor, critic, reference, reward, rollout) | "grpo" (no critic) |
                   "dpo" (actor and reference only; chosen + rejected: 2 x micro_batch sequences).
    critic:        PPO's value model ("same": the actor's model; or another name, e.g. the reward's size).
    reward:        the reward model ("same": the actor's model; None: a rule/verifier, no GPU memory).
    gpus:          colocated: the GPUs every role shares; separate: a dict role -> GPUs, or one count each.
    offload_idle:  colocated only: idle roles sleep/offload (hybrid engine) -> peak = max over phases;
                   False -> every role resident, peak = sum of resident + the largest transient.
    prompt_len, response_len: tokens per sequence (training and scoring see prompt + response).
    micro_batch:   sequences per GPU per training and scoring forward (DPO: pairs).
    rollout_batch: prompts decoded at once per rollout engine (vLLM's running batch);
                   group_size: samples per prompt (GRPO's G, default 8 as OpenRLHF's GRPO examples'
                   n_samples_per_prompt; PPO default 1; DPO none): KV cache of
                   rollout_batch x group_size sequences of prompt_len + response_len tokens.
    rollout_tp:    tensor parallelism of each rollout engine (it must divide the rollout GPUs).
    zero_stage:    ZeRO stage of the trainable roles over their GPUs (3 also shards frozen weights).
    train_options: passed to memlib.estimate_training for the trainable roles (precision, recompute,
                   offload, optimizer, attention, ...; default recompute "full", bf16-mixed AdamW).
    """
    offload_idle = flag("offload_idle", offload_idle)
    c = _check(algorithm, placement, offload_idle, prompt_len, response_len, micro_batch, rollout_batch, group_size,
               rollout_tp, prefill_tokens, zero_stage, critic, reward, train_options)
    c["kv_cache"] = kv_cache
    actor_model = get_model(actor)
    roles = ["actor"] + (["critic"] if algorithm == "ppo" else []) + ["reference"]
    roles += (["reward"] if reward is not None else []) + ["rollout"] if algorithm != "dpo" else []
    n = _role_gpus(gpus, roles, placement)
    if "rollout" in roles and n["rollout"] % c["rollout_tp"]:
        raise ValueError(f"rollout_tp {c['rollout_tp']} must divide the rollout engine's {n['rollout']} GPUs")
    models = {"actor": actor_model, "reference": actor_model, "rollout": actor_model}
    if "critic" in roles:
        models["critic"] = actor_model if critic == SAME else get_model(critic)
    if "reward" in roles:
        models["reward"] = actor_model if reward == SAME else get_model(reward)
    out = {role: _role(role, models[role], n[role], c, train_options) for role in roles}
    notes = []
    if placement == "colocated":
        phases = _phases(out, algorithm, c["offload_idle"])
        if c["offload_idle"]:
            notes.append("idle roles sleep or are offloaded (hybrid engine): their states need pinned host RAM, "
                         "not counted here")
    else:
        phases = {}
        notes.append("separate groups: the weights are synchronised from the actor group to the rollout engines "
                     "after each step (staging buffers not counted)")
    if algorithm == "dpo":
        notes.append("DPO: each pair is a chosen and a rejected sequence; the reference's log-probs can also be "
                     "precomputed once (TRL precompute_ref_log_probs), which removes the reference from the step")
    if "critic" in out:
        notes.append("the critic's value head replaces the LM head: its logits term is a slight over-count")
    return RLHFEstimate(algorithm, placement, c["offload_idle"], out, phases, notes)


def _check(algorithm, placement, offload_idle, prompt_len, response_len, micro_batch, rollout_batch, group_size,
           rollout_tp, prefill_tokens, zero_stage, critic, reward, train_options) -> dict:
    """estimate_rlhf's options, checked: a ValueError that names the option, else the cleaned values."""
    choice("algorithm", algorithm, ALGORITHMS)
    choice("placement", placement, PLACEMENTS)
    c = dict(offload_idle=flag("offload_idle", offload_idle))
    for name, v in (("prompt_len", prompt_len), ("response_len", response_len), ("micro_batch", micro_batch),
                    ("rollout_batch", rollout_batch), ("rollout_tp", rollout_tp), ("prefill_tokens", prefill_tokens)):
        c[name] = positive_int(name, v)
    c["group_size"] = positive_int("group_size", (8 if algorithm == "grpo" else 1) if group_size is None else group_size)
    if zero_stage not in (0, 1, 2, 3) or isinstance(zero_stage, bool):
        raise ValueError(f"zero_stage must be 0, 1, 2 or 3, got {zero_stage!r}")
    c["zero_stage"] = int(zero_stage)
    for bad in ("model", "seq_len", "micro_batch", "dp", "zero_stage"):
        if bad in train_options:
            raise ValueError(f"{bad!r} is set by estimate_rlhf itself (from the actor, prompt_len + response_len, "
                             f"micro_batch, gpus and zero_stage); do not pass it as a training option")
    if algorithm == "grpo" and c["group_size"] < 2:
        raise ValueError(f"GRPO compares G samples of the same prompt: group_size must be >= 2, got {group_size}")
    if algorithm != "ppo" and critic not in (SAME, None):
        raise ValueError(f"{algorithm.upper()} has no critic (GRPO takes its baseline from the group, DPO has no "
                         f"value function): leave critic unset, got {critic!r}")
    if algorithm == "dpo" and reward not in (SAME, None):
        raise ValueError(f"DPO learns from preference pairs and has no reward model: leave reward unset, got {reward!r}")
    if algorithm == "dpo" and c["group_size"] != 1:
        raise ValueError("DPO generates nothing: group_size applies to PPO and GRPO rollouts")
    c["seq"] = c["prompt_len"] + c["response_len"]
    c["rows"] = 2 * c["micro_batch"] if algorithm == "dpo" else c["micro_batch"]  # DPO: chosen + rejected
    return c


def _role(role: str, m, g: int, c: dict, train_options: dict) -> RoleMemory:
    """One role's RoleMemory on g GPUs, from memlib's training or serving estimate."""
    seq, rows, z = c["seq"], c["rows"], c["zero_stage"]
    if KINDS[role] == "trainable":
        from memlib.training import estimate_training  # here: memlib.training's package imports this module's
        est = estimate_training(m, seq_len=seq, micro_batch=rows, zero_stage=z, dp=g,
                                **{"precision": "bf16-mixed", "recompute": "full", **train_options})
        weights, acts, _ = _forward(m, g, z, rows, seq, "all")
        return RoleMemory(role, m.name, "trainable", g, est.peak_bytes, est.model_state_bytes, weights + acts, acts,
                          est, est.breakdown)
    if KINDS[role] == "frozen":
        # the reference needs every response token's log-probability (all logits); a reward model one score
        weights, acts, est = _forward(m, g, z, rows, seq, "all" if role == "reference" else "last")
        return RoleMemory(role, m.name, "frozen", g, weights + acts, weights, weights + acts, acts, est,
                          {"weights": weights, "activations": acts})
    est = estimate_inference(m, batch=c["rollout_batch"] * c["group_size"], context_len=seq, weights="bf16",
                             kv_cache=c["kv_cache"], tp=c["rollout_tp"], engine=ROLLOUT_ENGINE,
                             prefill_tokens=c["prefill_tokens"])
    return RoleMemory(role, m.name, "rollout", g, est.peak_bytes, est.weight_bytes + est.kv_cache_bytes,
                      est.peak_bytes, est.activation_bytes, est, est.breakdown)


def _phases(out: dict, algorithm: str, offload_idle: bool) -> dict:
    """Bytes per GPU in each phase of a colocated step: with sleep, what the running role holds; without,
    every role's resident bytes plus what the running role needs on top."""
    resident = sum(r.resident_bytes for r in out.values())
    active = {"rollout": [out["rollout"]] if "rollout" in out else [],
              "scoring": [out[r] for r in ("actor", "critic", "reference", "reward")
                          if r in out and (algorithm != "dpo" or r == "reference")],
              "train_actor": [out["actor"]],
              "train_critic": [out["critic"]] if "critic" in out else []}
    phases = {}
    for phase in PHASES:
        running = active[phase]
        if not running:
            continue
        if offload_idle:  # only the running role is awake; scoring wakes one model at a time
            phases[phase] = max(r.forward_bytes if phase == "scoring" else r.peak_bytes for r in running)
        else:
            phases[phase] = resident + max(r.forward_activation_bytes if phase == "scoring"
                                           else r.peak_bytes - r.resident_bytes for r in running)
    return phases


# Every count up to one 8-GPU node, then whole nodes up to 32 of them.
GPU_COUNTS = tuple(range(1, 9)) + tuple(range(16, 257, 8))


def min_rlhf_gpus(actor, gpu, algorithm: str = "ppo", candidates=GPU_COUNTS, **kwargs) -> int | None:
    """The fewest colocated GPUs (from `candidates`: every count up to 8, then whole 8-GPU nodes) on which
    estimate_rlhf's peak fits `gpu` (memlib.fits); None if none of them does. kwargs go to estimate_rlhf
    (counts that rollout_tp does not divide are skipped)."""
    from memlib.hardware.fit import fits
    if kwargs.get("placement", "colocated") != "colocated":
        raise ValueError("min_rlhf_gpus sizes a colocated setup; for separate groups size each role's group")
    for c in candidates:
        c = positive_int("candidate GPU count", c)
        if c % kwargs.get("rollout_tp", 1):
            continue
        if fits(estimate_rlhf(actor, algorithm, gpus=c, **kwargs), gpu).fits:
            return c
    return None


__all__ = ["ALGORITHMS", "PLACEMENTS", "ROLES", "PHASES", "GPU_COUNTS", "RoleMemory", "RLHFEstimate", "estimate_rlhf",
           "min_rlhf_gpus"]
