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
             over the role's GPUs too (OpenRLHF and verl wrap it like the actor). reference=False drops it:
             DAPO has no KL term (Yu et al. 2025, Sec. 2.3); DPO with precomputed reference log-probs.
  reward     the frozen reward model, counted like the reference (reward=None: a rule or verifier
             reward, as GRPO on math often uses, costs no GPU memory).
  rollout    the generation engine. vLLM and SGLang reserve a fixed share of each card when they start
             (vLLM's gpu_memory_utilization, SGLang's mem_fraction_static): their bf16 copy of the weights,
             the activation peak they profile, and a KV pool that fills the rest (rollout_pool below, built on
             memlib.serving.capacity.vllm_kv_cache_budget_bytes and memlib.serving.capacity.sglang_max_total_tokens).
             A rollout batch larger than the pool is queued or preempted, so the batch and GRPO's group size
             cost time (waves), not memory. rollout_engine="hf" is the mode whose cache does grow with the
             batch: transformers' generate (verl's rollout name "hf", DeepSpeed-Chat) holds the KV cache of
             rollout_batch x group_size sequences of prompt_len + response_len tokens at once
             (estimate_inference(engine="hf")), the prompt repeated for each sample.
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
             What each idle role keeps is per role (RoleMemory.idle_bytes), set by the frameworks' switches
             (each defaults to offload_idle): param_offload / optimizer_offload for the trainers (verl's
             fsdp_config and megatron flags; OpenRLHF's --deepspeed_enable_sleep is optimizer_offload alone: its
             offload_deepspeed_states leaves the 16-bit partition), ref_param_offload for the frozen roles (forced
             on under FSDP: verl wraps them in CPUOffload), free_cache_engine and sleep_level for the engine.
             A phase is the running role plus every other role's idle bytes.
  separate   each role on a group of its own (OpenRLHF's distributed mode): `gpus` is a dict
             role -> GPU count (or one count for every group); the result is each group's per-GPU
             figure, peak = the largest, total GPUs = the sum.

Phases (colocated): rollout (the engine generates), scoring (actor, reference, reward and critic
forwards: old log-probs, KL reference, rewards, values; each role in turn), train_actor, train_critic.

The engine's share (colocated default 0.5): OpenRLHF's hybrid-engine PPO example,
examples/scripts/train_ppo_llama_ray_hybrid_engine.sh at OpenRLHF@22697a1b (--colocate_all_models
--vllm_gpu_memory_utilization 0.5 --vllm_enable_sleep --deepspeed_enable_sleep --enforce_eager; its GRPO
example train_grpo_ray_hybrid_engine.sh at @dda5a145 uses 0.6), and verl's rollout default
(verl/trainer/config/rollout/rollout.yaml at volcengine/verl@b10cabe4: gpu_memory_utilization 0.5, "Fraction
of GPU memory used by vLLM/SGLang", n > 1 for GRPO). On GPUs of its own (placement "separate") an engine
defaults to vLLM's 0.9 (OpenRLHF's --vllm_gpu_memory_utilization flag defaults to 0.95 at @021d1b09).

Prefix sharing: the G samples of one prompt share its KV blocks: P + G x R token slots per group, not
G x (P + R) (rollout_token_slots). vLLM V1 fans SamplingParams(n=G) out into G child requests
(vllm/v1/engine/parallel_sampling.py, ParentRequest), which share the prompt's whole 16-token blocks through
prefix caching (V1's default; V0 forked the block table copy-on-write); SGLang's radix cache shares at page 1.
OpenRLHF exposes it as --enable_prefix_caching (off by default at @021d1b09): shared_prefix=False models an engine
that does not share.

Trainers (strategy): DeepSpeed's ZeRO (OpenRLHF), FSDP1/FSDP2 (verl's FSDP workers, fsdp_workers.py at
volcengine/verl@b178a3cd) or Megatron-Core with train_tp x train_pp (verl's Megatron workers, megatron_workers.py:
memlib.estimate_training(layout="megatron"), the reference sharded the same way, not over data parallelism).

Not counted: the CUDA context and allocator headroom (`fits` adds them), the fp32 log-softmax of the
response tokens, experience buffers (kept in host RAM by OpenRLHF and verl), weight-sync staging buffers,
the transient of waking an engine while a trainer's parameters are still on the GPU, DeepSpeed ZeRO-3's gathered
layers in a scoring forward (FSDP's root unit and two layers are counted), and the critic's value head (estimate_training models a causal-LM
head, so the critic is counted with its LM head: 16 x vocabulary x hidden bytes too many, sharded; the frozen
reward model is counted with its one-output value head).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

from memlib._checks import choice, flag, positive_int, show
from memlib._checks import fraction as _fraction
from memlib.hardware.fit import usable_bytes
from memlib.hardware.gpus import get_gpu
from memlib.models import get_model
from memlib.serving.capacity import (VLLM_BLOCK_SIZE, VLLM_GPU_MEMORY_UTILIZATION, vllm_default_max_num_batched_tokens,
                                     vllm_default_max_num_seqs, vllm_kv_cache_budget_bytes)
from memlib.serving.capacity import sglang_max_total_tokens
from memlib.serving.inference import estimate_inference, kv_bytes_per_token
from memlib.units import fmt_bytes, gb

ALGORITHMS = ("ppo", "grpo", "dpo")
PLACEMENTS = ("colocated", "separate")
ROLES = ("actor", "critic", "reference", "reward", "rollout")
SAME = "same"  # critic/reward default: the actor's model
ROLLOUT_ENGINE = "vllm"
KINDS = {"actor": "trainable", "critic": "trainable", "reference": "frozen", "reward": "frozen", "rollout": "rollout"}
PHASES = ("rollout", "scoring", "train_actor", "train_critic")
# Whose trainer runs the actor and critic: DeepSpeed's ZeRO (OpenRLHF), PyTorch FSDP1 / FSDP2 (verl's
# actor.strategy "fsdp" / "fsdp2", verl/workers/fsdp_workers.py) or Megatron-Core (verl's "megatron",
# verl/workers/megatron_workers.py), each at volcengine/verl@b178a3cd and OpenRLHF/OpenRLHF@3c3be623.
STRATEGIES = ("deepspeed", "fsdp", "fsdp2", "megatron")
SLEEP_LEVELS = (1, 2)
ROLLOUT_ENGINES = ("vllm", "sglang", "hf")
# The share of each card a colocated engine reserves by default: OpenRLHF's hybrid-engine PPO example
# (train_ppo_llama_ray_hybrid_engine.sh at OpenRLHF@22697a1b: --vllm_gpu_memory_utilization 0.5) and verl's
# rollout default (rollout.yaml at volcengine/verl@b10cabe4: gpu_memory_utilization 0.5).
COLOCATED_ENGINE_FRACTION = 0.5
# An engine on GPUs of its own: vLLM's default gpu_memory_utilization (OpenRLHF's flag defaults to 0.95)
SEPARATE_ENGINE_FRACTION = VLLM_GPU_MEMORY_UTILIZATION
DEFAULT_GPU = "a100-80gb"  # the card of OpenRLHF's and verl's published examples; estimate_rlhf(gpu=) sets it


# --- the rollout engine's pool -----------------------------------------------------------------------
def rollout_token_slots(prompt_len: int, response_len: int, group_size: int = 1, shared_prefix: bool = True,
                        page: int = VLLM_BLOCK_SIZE) -> int:
    """KV-cache slots (tokens) one prompt's group of G samples occupies when every response reaches response_len.

    shared_prefix=True: the samples share the prompt's whole pages (vLLM: parallel sampling n=G, or prefix caching,
    which shares only full 16-token blocks; SGLang's radix cache: page 1), and each sample keeps its own pages for
    the rest of the prompt's last page and its response:
        floor(P / page) x page + G x ceil((P mod page + R) / page) x page   (= P + G x R when page divides P).
    shared_prefix=False: each sample is a sequence of its own (transformers' generate repeats the prompt for
    num_return_sequences; vLLM with prefix caching off): G x ceil((P + R) / page) x page.
    page: 16 for vLLM (CacheConfig.block_size), 1 for SGLang and transformers."""
    p = positive_int("prompt_len", prompt_len)
    r = positive_int("response_len", response_len)
    g = positive_int("group_size", group_size)
    page = positive_int("page", page)
    ceil = lambda n: -(-n // page) * page  # noqa: E731
    if not flag("shared_prefix", shared_prefix):
        return g * ceil(p + r)
    shared = p // page * page
    return shared + g * ceil(p - shared + r)


@dataclass(frozen=True)
class RolloutPool:
    """What a vLLM/SGLang rollout engine holds on each of its GPUs while awake, and how many sequences it decodes at
    once. Built by rollout_pool(); every byte figure is per GPU, the token slots per engine (its tp GPUs)."""

    engine: str
    gpu: str
    fraction: float  # gpu_memory_utilization (vLLM) / mem_fraction_static (SGLang)
    tp: int
    reserved_bytes: int  # fraction x the card's total: the engine's share, whatever the batch
    weight_bytes: int  # its bf16 copy of the weights
    kv_pool_bytes: int  # the KV cache pool (vLLM: whole blocks' worth)
    kv_bytes_per_token: int  # K and V of one token on one GPU (the engine's heads / tp)
    token_slots: int  # tokens the pool holds (vLLM: whole 16-token blocks)
    page: int  # tokens per block: 16 (vLLM), 1 (SGLang)
    max_num_seqs: int | None  # the scheduler's cap on running sequences (vLLM's max_num_seqs; None: no cap)
    asleep_bytes: int = 0  # what stays while the engine sleeps: CUDA graphs cannot be offloaded

    @property
    def kv_cache_bytes(self) -> int:
        """The KV pool (the name estimate_inference uses for the cache)."""
        return self.kv_pool_bytes

    @property
    def other_bytes(self) -> int:
        """The rest of the share: the profiled activation peak, memory outside torch, CUDA graphs, the part block."""
        return self.reserved_bytes - self.weight_bytes - self.kv_pool_bytes

    def sequences_at_once(self, prompt_len: int, response_len: int, group_size: int = 1,
                          shared_prefix: bool = True) -> int:
        """Sequences the pool decodes at once when every one runs to prompt_len + response_len tokens:
        token_slots x G // rollout_token_slots(P, R, G), capped by max_num_seqs. The rest wait (or are preempted)."""
        shared_prefix = flag("shared_prefix", shared_prefix)
        per_group = rollout_token_slots(prompt_len, response_len, group_size, shared_prefix, self.page)
        n = self.token_slots * group_size // per_group
        return n if self.max_num_seqs is None else min(n, self.max_num_seqs)

    def waves(self, prompts: int, prompt_len: int, response_len: int, group_size: int = 1,
              shared_prefix: bool = True) -> int:
        """Rounds of decoding for `prompts` x G sequences: ceil(sequences / sequences_at_once). An upper bound when
        responses end early (continuous batching refills a slot as soon as a sequence finishes): the time side."""
        prompts, shared_prefix = positive_int("prompts", prompts), flag("shared_prefix", shared_prefix)
        at_once = self.sequences_at_once(prompt_len, response_len, group_size, shared_prefix)
        if at_once == 0:
            raise ValueError(f"the {self.engine} pool ({self.token_slots:,} tokens) holds no sequence of "
                             f"{prompt_len + response_len:,} tokens: raise the fraction or the tensor parallelism")
        return -(-prompts * positive_int("group_size", group_size) // at_once)

    def __str__(self) -> str:
        return (f"{self.engine} at {self.fraction:g} of {self.gpu} (tp {self.tp}): {fmt_bytes(self.reserved_bytes)} "
                f"per GPU = weights {fmt_bytes(self.weight_bytes)} + KV pool {fmt_bytes(self.kv_pool_bytes)} "
                f"({self.token_slots:,} tokens) + other {fmt_bytes(self.other_bytes)}")


def rollout_pool(model, gpu=DEFAULT_GPU, engine: str = "vllm", fraction: float = COLOCATED_ENGINE_FRACTION,
                 tp: int = 1, kv_cache: str = "bf16", cudagraph_bytes: int = 0,
                 max_num_batched_tokens: int | None = None, max_num_seqs: int | None = None) -> RolloutPool:
    """The pool a vLLM or SGLang rollout engine reserves on each of its GPUs.

    vLLM: reserved = fraction x the card's total (torch's figure); the KV pool is memlib.serving.capacity.
    vllm_kv_cache_budget_bytes at that fraction (the share minus the bf16 weights, the profiled activation peak,
    memory outside torch and cudagraph_bytes), in whole 16-token blocks. RL frameworks drive vLLM's offline
    LLM class, so max_num_batched_tokens / max_num_seqs default to vLLM's "offline" defaults for the card
    (memlib.serving.capacity.vllm_default_*). cudagraph_bytes: the CUDA graphs' memory (vLLM v0.21+ takes its
    estimate off the KV budget); they stay while the engine sleeps (verl rollout.yaml: "cudagraph in inference
    engine can not be offloaded during update policy"); 0 with enforce_eager, as OpenRLHF's hybrid examples run.
    SGLang: the pool is memlib.serving.capacity.sglang_max_total_tokens at mem_fraction_static = fraction (page 1);
    its activations live outside the fraction (not counted)."""
    m = get_model(model)
    g = get_gpu(gpu)
    choice("engine", engine, ("vllm", "sglang"))
    frac = _fraction("fraction (vLLM's gpu_memory_utilization)" if engine == "vllm"
                     else "fraction (SGLang's mem_fraction_static)", fraction,
                    what="the share of each card the engine reserves")
    tp = positive_int("tp", tp)
    graphs = positive_int("cudagraph_bytes", cudagraph_bytes, allow_zero=True)
    per_token = kv_bytes_per_token(m, kv_cache, tp)
    weights = estimate_inference(m, 1, 1, weights="bf16", kv_cache=kv_cache, tp=tp, engine=engine).weight_bytes
    reserved = int(usable_bytes(g) * frac)
    if engine == "vllm":
        tokens = vllm_default_max_num_batched_tokens(g, "offline") if max_num_batched_tokens is None else             positive_int("max_num_batched_tokens", max_num_batched_tokens)
        seqs = vllm_default_max_num_seqs(g, "offline") if max_num_seqs is None else             positive_int("max_num_seqs", max_num_seqs)
        budget = vllm_kv_cache_budget_bytes(m, g, weights="bf16", kv_cache=kv_cache, tp=tp,
                                            max_num_batched_tokens=tokens, max_num_seqs=seqs,
                                            gpu_memory_utilization=frac, cudagraph_bytes=graphs)
        page = VLLM_BLOCK_SIZE
        slots = max(budget, 0) // (page * per_token) * page
    else:
        if max_num_batched_tokens is not None or max_num_seqs is not None:
            raise ValueError("max_num_batched_tokens and max_num_seqs are vLLM's settings; SGLang's pool is set by "
                             "mem_fraction_static alone here")
        page, seqs = 1, None
        slots = sglang_max_total_tokens(m, g, tp=tp, weights="bf16", kv_cache=kv_cache, mem_fraction_static=frac)
    if slots <= 0:
        raise ValueError(f"{engine} at {frac:g} of each {g.name} has no room for a KV cache after {m.name}'s weights "
                         f"({fmt_bytes(weights)} per GPU at tp {tp}): the engine refuses to start; raise the fraction "
                         "or the rollout tensor parallelism")
    return RolloutPool(engine, g.name, frac, tp, reserved, weights, slots * per_token, per_token, slots, page, seqs,
                       graphs)



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
    estimate: object  # the memlib estimate behind it (Estimate, InferenceEstimate, or the engine's RolloutPool)
    breakdown: dict = field(default_factory=dict)
    asleep_bytes: int = 0  # what stays on the GPU while the role sleeps (an engine's CUDA graphs)
    idle_bytes: int | None = None  # colocated: what it holds while another role runs (None: resident_bytes)
    scoring_bytes: int | None = None  # colocated: what it holds during its own scoring forward (None: forward_bytes)
    host_bytes: int = 0  # per GPU, in host RAM while idle (offloaded states, a vLLM level-1 sleep's weights)

    def __post_init__(self):
        if self.idle_bytes is None:
            self.idle_bytes = self.resident_bytes
        if self.scoring_bytes is None:
            self.scoring_bytes = self.forward_bytes


@dataclass
class RLHFEstimate:
    algorithm: str
    placement: str
    offload_idle: bool
    roles: dict  # role -> RoleMemory
    phases: dict  # colocated: phase -> bytes per GPU; separate: {}
    notes: list = field(default_factory=list)
    pool: RolloutPool | None = None  # the vLLM/SGLang engine's pool (None: DPO, or transformers' generate)
    sequences_at_once: int | None = None  # sequences one engine decodes at once (the pool's, or the hf batch)
    waves: int | None = None  # rounds of decoding one engine needs for its rollout_batch x G sequences
    engine_error: str | None = None  # why the engine cannot start (its share cannot hold it): the peak is then refused

    def _check_engine(self) -> None:
        if self.engine_error:
            raise ValueError(self.engine_error)

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
        """The largest per-GPU figure: max over phases (colocated) or over groups (separate). A ValueError when the
        rollout engine cannot start (engine_error): the step does not run, whatever the other roles need."""
        self._check_engine()
        return max(self.phases.values()) if self.placement == "colocated" else max(self.per_group.values())

    @property
    def peak_at(self) -> str:
        """The phase (colocated) or the role's group (separate) where the peak is."""
        self._check_engine()
        source = self.phases if self.placement == "colocated" else self.per_group
        return max(source, key=source.get)

    @property
    def host_bytes(self) -> int:
        """Host RAM per GPU that the idle roles' offloaded states take (pinned; colocated): trainers' offloaded
        states, frozen weights under CPU offload, a vLLM level-1 sleep's weights. Not part of the GPU peak."""
        return sum(r.host_bytes for r in self.roles.values())

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
        if self.engine_error:
            return f"{self.algorithm.upper()}, {self.placement}: the rollout engine cannot start: {self.engine_error}"
        lines = [f"{self.algorithm.upper()}, {self.placement}"
                 + (f" ({'idle roles offloaded' if self.offload_idle else 'every role resident'})"
                    if self.placement == "colocated" else "") + f", {self.gpus} GPUs in use"]
        for r in self.roles.values():
            lines.append(f"  {r.role:<9} {r.model} ({r.kind}, {r.gpus} GPUs): peak {fmt_bytes(r.peak_bytes)}, "
                         f"resident {fmt_bytes(r.resident_bytes)}, forward {fmt_bytes(r.forward_bytes)} per GPU")
        if self.pool is not None:
            lines.append(f"  pool      {self.pool}; {self.sequences_at_once} sequences at once, {self.waves} "
                         f"wave(s) per step")
        if self.placement == "colocated":
            rule = "max over phases of the running role + what the idle roles keep"
            for p, v in self.phases.items():
                lines.append(f"  phase {p:<12} {fmt_bytes(v)} per GPU")
            lines.append(f"peak {fmt_bytes(self.peak_bytes)} per GPU during {self.peak_at} ({rule})")
        else:
            lines.append(f"peak {fmt_bytes(self.peak_bytes)} per GPU in the {self.peak_at} group")
        return "\n".join(lines + [f"note: {n}" for n in self.notes])

    def __repr__(self) -> str:
        if self.engine_error:
            return f"RLHFEstimate({self.algorithm}, {self.placement}: the rollout engine cannot start)"
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


def _forward(model, gpus: int, zero_stage: int, micro_batch: int, seq: int, logits: str,
             tp: int = 1) -> tuple[int, int, object]:
    """(16-bit weights per GPU, one forward's activations, the estimate) of a forward without autograd."""
    est = estimate_inference(model, batch=micro_batch, context_len=seq, weights="bf16", logits=logits, tp=tp)
    # ZeRO-3 and FSDP's FULL_SHARD shard the frozen weights too (OpenRLHF wraps the reference in DeepSpeed ZeRO-3;
    # verl's reference is an FSDP module like the actor)
    weights = est.weight_bytes if zero_stage not in (3, "FULL_SHARD") else -(-est.weight_bytes // gpus)
    return weights, est.activation_bytes, est


def estimate_rlhf(actor, algorithm: str = "ppo", *, critic=SAME, reward=SAME, gpus=8, placement: str = "colocated",
                  offload_idle: bool = True, prompt_len: int = 1024, response_len: int = 1024, micro_batch: int = 1,
                  rollout_batch: int = 64, group_size: int | None = None, rollout_tp: int = 1, prefill_tokens: int = 8192,
                  kv_cache: str = "bf16", zero_stage=None, gpu=DEFAULT_GPU, rollout_engine: str = "vllm",
                  gpu_memory_utilization: float | None = None, shared_prefix: bool = True, cudagraph_bytes: int = 0,
                  reference: bool = True, strategy: str | None = None, train_tp: int = 1, train_pp: int = 1,
                  param_offload: bool | None = None, optimizer_offload: bool | None = None,
                  ref_param_offload: bool | None = None, offload_policy: bool = False,
                  free_cache_engine: bool | None = None, sleep_level: int | None = None,
                  **train_options) -> RLHFEstimate:
    """Per-GPU memory of one RLHF step: each role's estimate, each phase, the peak.

    actor:         a catalog name or memlib.Model (the policy; DPO's policy too).
    algorithm:     "ppo" (actor, critic, reference, reward, rollout) | "grpo" (no critic) |
                   "dpo" (actor and reference only; chosen + rejected: 2 x micro_batch sequences).
    critic:        PPO's value model ("same": the actor's model; or another name, e.g. the reward's size).
    reward:        the reward model ("same": the actor's model with a one-output value head; None: a rule or
                   verifier, no GPU memory: RLVR).
    reference:     True: the frozen reference for the KL term. False: no reference on the GPU: DAPO drops the KL
                   term (Yu et al. 2025, DAPO, Sec. 2.3 "Removing KL Divergence"), as do PPO/GRPO runs with a KL
                   coefficient of 0; for DPO, the reference's log-probs precomputed once (TRL
                   precompute_ref_log_probs) or a reference-free loss (SimPO).
    gpus:          colocated: the GPUs every role shares; separate: a dict role -> GPUs, or one count each.
    offload_idle:  colocated only: idle roles sleep/offload (hybrid engine) -> peak = max over phases;
                   False -> every role resident, peak = sum of resident + the largest transient.
    prompt_len, response_len: tokens per sequence (training and scoring see prompt + response).
    micro_batch:   sequences per GPU per training and scoring forward (DPO: pairs).
    rollout_engine: "vllm" | "sglang": the engine reserves gpu_memory_utilization (mem_fraction_static) of each
                   `gpu` (default 0.5 colocated, as OpenRLHF's hybrid example and verl; 0.9 on GPUs of its own)
                   and decodes what its KV pool holds: memory set by the fraction, the batch costs time
                   (RLHFEstimate.pool, .sequences_at_once, .waves). "hf": transformers' generate, whose KV cache
                   holds all rollout_batch x group_size sequences at once (no shared prefix).
    rollout_batch: prompts handed to each rollout engine per step (OpenRLHF's --rollout_batch_size / engines).
    group_size:    samples per prompt (GRPO's G, default 8 as OpenRLHF's GRPO examples' n_samples_per_prompt;
                   PPO default 1; DPO none).
    shared_prefix: the G samples share their prompt's KV blocks (vLLM n=G / prefix caching, SGLang radix cache).
    cudagraph_bytes: the engine's CUDA graphs per GPU (0: enforce_eager, OpenRLHF's hybrid examples); inside the
                   fraction (vLLM v0.21+), and kept while the engine sleeps.
    rollout_tp:    tensor parallelism of each rollout engine (it must divide the rollout GPUs).
    gpu:           the card (the engine reserves a share of it); fits() should be asked about the same card.
    strategy ... sleep_level: how the frameworks train and park each role (see `_FRAMEWORK_OPTIONS` below,
                   appended to this help).
    train_options: passed to memlib.estimate_training for the trainable roles (precision, recompute,
                   offload, optimizer, attention, ...; default recompute "full", bf16-mixed AdamW).
    """
    offload_idle, shared_prefix = flag("offload_idle", offload_idle), flag("shared_prefix", shared_prefix)
    reference, offload_policy = flag("reference", reference), flag("offload_policy", offload_policy)
    c = _check(algorithm, placement, offload_idle, prompt_len, response_len, micro_batch, rollout_batch, group_size,
               rollout_tp, prefill_tokens, zero_stage, critic, reward, train_options, rollout_engine,
               gpu_memory_utilization, shared_prefix, cudagraph_bytes)
    c.update(_check_trainer(strategy, zero_stage, train_tp, train_pp, offload_policy, train_options))
    c.update(_check_offload(placement, offload_idle, c, param_offload, optimizer_offload, ref_param_offload,
                            free_cache_engine, sleep_level))
    c["gpu"] = get_gpu(gpu).name
    actor_model = get_model(actor)
    c["kv_cache"] = _check_kv_cache(kv_cache, algorithm, c["engine"])  # one the engine takes; none for DPO
    roles = ["actor"] + (["critic"] if algorithm == "ppo" else []) + (["reference"] if reference else [])
    roles += (["reward"] if reward is not None else []) + ["rollout"] if algorithm != "dpo" else []
    n = _role_gpus(gpus, roles, placement)
    _check_divisible(n, c)
    if c["fraction"] is None and c["engine"] != "hf":
        c["fraction"] = COLOCATED_ENGINE_FRACTION if placement == "colocated" else SEPARATE_ENGINE_FRACTION
    models = _role_models(actor_model, roles, critic, reward)
    # An engine whose share cannot hold it does not start (vLLM raises at start-up). The roles' own bytes stay
    # readable (a question about the models' states alone), but the peak, fits() and min_rlhf_gpus refuse.
    engine_error = None
    out = {}
    for role in roles:
        try:
            out[role] = _role(role, models[role], n[role], c, train_options)
        except _EngineCannotStart as err:
            engine_error = str(err)
            out[role] = err.role
    pool, at_once, waves, engine_error = _rollout_waves(out, c, engine_error)
    phases = _phases(out, algorithm) if placement == "colocated" else {}
    notes = _notes(algorithm, placement, c, out, pool, at_once, waves, engine_error)
    return RLHFEstimate(algorithm, placement, c["offload_idle"], out, phases, notes, pool, at_once, waves,
                        engine_error)


# The trainers' and engines' options of estimate_rlhf, kept apart so the function reads in one screen; help()
# shows them as part of its docstring.
_FRAMEWORK_OPTIONS = """
Framework options (verl @b178a3cd, OpenRLHF @3c3be623):
    strategy:      the trainer of actor and critic (None: "fsdp" when zero_stage is an FSDP name, else
                   "deepspeed"). "deepspeed": DeepSpeed's ZeRO (OpenRLHF). "fsdp" / "fsdp2": PyTorch FSDP, as verl's
                   FSDP workers (actor.strategy). "megatron": Megatron-Core with train_tp x train_pp model
                   parallelism (verl's Megatron workers), memlib.estimate_training(layout="megatron").
    zero_stage:    deepspeed: the ZeRO stage 0-3 (default 3; 3 also shards the frozen weights). fsdp/fsdp2: an FSDP
                   sharding strategy, "FULL_SHARD" (default; 3) or "SHARD_GRAD_OP" (2; verl's
                   reshard_after_forward=False); "NO_SHARD" with zero_stage alone. megatron: 1 (default: verl's
                   use_distributed_optimizer) or 0.
    train_tp, train_pp: Megatron's tensor and pipeline parallelism of the trainable and frozen roles (strategy
                   "megatron"); their product divides the GPUs, the rest is data parallelism.
    param_offload, optimizer_offload: colocated: whether the trainers' parameters / optimizer states leave the GPU
                   while another role runs (None: offload_idle). verl's actor/critic fsdp_config and megatron
                   flags (offload_fsdp_model_to_cpu / offload_fsdp_optimizer around each phase; Megatron's
                   param_offload moves the main-grad buffer with the parameters). DeepSpeed: optimizer_offload is
                   OpenRLHF's --deepspeed_enable_sleep (offload_states of the optimizer states, fp32 master,
                   gradient buffers), param_offload adds the 16-bit partitions (DeepSpeed's lp_params, which
                   OpenRLHF leaves on the GPU: OpenRLHF's exact setting is param_offload=False,
                   optimizer_offload=True).
    ref_param_offload: the frozen roles' (reference, reward) weights off the GPU while idle. fsdp/fsdp2: FSDP's
                   CPU offload, which verl forces on every non-actor FSDP module (fsdp_workers.py: "We force
                   reference policy to use CPUOffload"), the default there: the weights stream up one unit at a
                   time, so the forward holds the root unit + 2 layers (bf16) + activations. Elsewhere (None:
                   offload_idle) the weights are moved back whole for the forward (verl's ref param_offload).
    offload_policy: fsdp2 only: verl's fsdp_config.offload_policy, FSDP2's CPUOffloadPolicy for the actor and
                   critic (parameters, gradients and the optimizer step on the CPU: estimate_training's
                   offload="optimizer+params" under FULL_SHARD). verl turns FSDP1's CPUOffload off for the actor.
    free_cache_engine: colocated: the engine sleeps while the trainers run (verl rollout.free_cache_engine,
                   default True; OpenRLHF --vllm_enable_sleep) and frees its weights and KV pool; its CUDA graphs
                   stay (None: offload_idle). False: the engine's whole share stays through training.
    sleep_level:   vLLM's sleep level (1: the weights to pinned host RAM, the KV cache dropped; 2: both dropped,
                   the weights re-sent by the trainer). The GPU bytes freed are the same; level 1 costs host
                   RAM (RoleMemory.host_bytes). Default 1 (OpenRLHF; verl uses 2 from vLLM 0.8.5).
"""
estimate_rlhf.__doc__ += _FRAMEWORK_OPTIONS


def _check_divisible(n: dict, c: dict) -> None:
    """Each role's GPUs split evenly by its model parallelism (Megatron's tp x pp, the engine's tp)."""
    for role, g in n.items():
        if KINDS[role] != "rollout" and g % (c["train_tp"] * c["train_pp"]):
            raise ValueError(f"train_tp x train_pp ({c['train_tp']} x {c['train_pp']}) must divide the {role}'s "
                             f"{g} GPUs (the rest is Megatron's data parallelism)")
    if "rollout" in n and n["rollout"] % c["rollout_tp"]:
        raise ValueError(f"rollout_tp {c['rollout_tp']} must divide the rollout engine's {n['rollout']} GPUs")


def _role_models(actor_model, roles, critic, reward) -> dict:
    """The model of each role: the actor's, or the critic's and reward's own."""
    models = {"actor": actor_model, "reference": actor_model, "rollout": actor_model}
    if "critic" in roles:
        models["critic"] = actor_model if critic == SAME else _named_model("critic", critic)
    if "reward" in roles:
        rm = actor_model if reward == SAME else _named_model("reward", reward)
        # a reward model scores with a one-output value head instead of the LM head (OpenRLHF's get_llm_for_
        # sequence_regression: value_head = nn.Linear(hidden, 1); TRL's AutoModelForSequenceClassification)
        models["reward"] = rm.with_(head="score", num_labels=1) if rm.head == "lm" else rm
    return models


def _rollout_waves(out: dict, c: dict, engine_error):
    """(the engine's pool, sequences it decodes at once, waves per step, why the engine cannot start or None)."""
    pool = at_once = waves = None
    if "rollout" not in out or engine_error is not None:
        return pool, at_once, waves, engine_error
    r = out["rollout"]
    if c["engine"] == "hf":
        return None, c["rollout_batch"] * c["group_size"], 1, None
    pool = r.estimate
    at_once = pool.sequences_at_once(c["prompt_len"], c["response_len"], c["group_size"], c["shared_prefix"])
    if at_once == 0:
        return pool, at_once, None, (
            f"the {c['engine']} pool on a {c['gpu']} ({pool.token_slots:,} tokens at {pool.fraction:g}) holds no "
            f"sequence of {c['seq']:,} tokens: the engine refuses to start (max_model_len larger than its KV cache); "
            "raise gpu_memory_utilization or rollout_tp, or shorten prompt_len + response_len")
    waves = pool.waves(c["rollout_batch"], c["prompt_len"], c["response_len"], c["group_size"], c["shared_prefix"])
    return pool, at_once, waves, None


def _notes(algorithm, placement, c, out, pool, at_once, waves, engine_error) -> list[str]:
    """What the estimate assumes and leaves out, in words."""
    notes = []
    if placement == "colocated":
        kept = [name for name, r in out.items() if r.idle_bytes]
        off = [name for name, r in out.items() if r.host_bytes]
        if off:
            notes.append(f"offloaded while idle: {', '.join(off)} ({fmt_bytes(sum(r.host_bytes for r in out.values()))}"
                         " of pinned host RAM per GPU, RLHFEstimate.host_bytes)")
        if kept:
            notes.append(f"kept on the GPU while another role runs: {', '.join(kept)} (RoleMemory.idle_bytes)")
    else:
        notes.append("separate groups: the weights are synchronised from the actor group to the rollout engines "
                     "after each step (memlib.cost.weight_sync gives the bytes and time; staging buffers not counted)")
    if pool is not None and engine_error is None:
        notes.append(f"the {c['engine']} engine reserves {pool.fraction:g} of each {c['gpu']} whatever the batch; "
                     f"the {c['rollout_batch']} x {c['group_size']} sequences per engine take {waves} wave(s) of "
                     f"{at_once}: the batch and the group size cost time, not memory")
    if "reference" not in out:
        notes.append("no reference model: no KL term (DAPO), or for DPO its log-probs precomputed once; the reference "
                     "costs nothing on the GPU")
    if algorithm == "dpo" and "reference" in out:
        notes.append("DPO: each pair is a chosen and a rejected sequence; the reference's log-probs can also be "
                     "precomputed once (TRL precompute_ref_log_probs), which removes the reference from the step")
    if "critic" in out:
        notes.append("the critic is counted with an LM head (estimate_training models causal-LM heads); its value "
                     "head is one output: a slight over-count of its states and logits")
    if c["strategy"] != "deepspeed":
        what = {"fsdp": "PyTorch FSDP1", "fsdp2": "PyTorch FSDP2",
                "megatron": f"Megatron-Core (tp {c['train_tp']} x pp {c['train_pp']})"}[c["strategy"]]
        notes.append(f"trainers: {what}, as verl's {c['strategy']} workers"
                     + ("; the frozen roles under FSDP's CPU offload (verl forces it on non-actor modules)"
                        if c["fsdp_cpu_offload_frozen"] and any(r.kind == "frozen" for r in out.values()) else ""))
    if engine_error:
        notes.append(f"the rollout engine cannot start: {engine_error}")
    return notes


class _EngineCannotStart(ValueError):
    """rollout_pool's refusal, carrying a stand-in RoleMemory (the share it would reserve) so the other roles stay
    readable."""

    def __init__(self, message: str, role: RoleMemory):
        super().__init__(message)
        self.role = role


def _check(algorithm, placement, offload_idle, prompt_len, response_len, micro_batch, rollout_batch, group_size,
           rollout_tp, prefill_tokens, zero_stage, critic, reward, train_options, rollout_engine="vllm",
           gpu_memory_utilization=None, shared_prefix=True, cudagraph_bytes=0) -> dict:
    """estimate_rlhf's options, checked: a ValueError that names the option, else the cleaned values."""
    choice("algorithm", algorithm, ALGORITHMS)
    choice("placement", placement, PLACEMENTS)
    c = dict(offload_idle=flag("offload_idle", offload_idle), engine=choice("rollout_engine", rollout_engine,
                                                                           ROLLOUT_ENGINES),
             shared_prefix=flag("shared_prefix", shared_prefix),
             cudagraph_bytes=positive_int("cudagraph_bytes", cudagraph_bytes, allow_zero=True))
    for name, v in (("prompt_len", prompt_len), ("response_len", response_len), ("micro_batch", micro_batch),
                    ("rollout_batch", rollout_batch), ("rollout_tp", rollout_tp), ("prefill_tokens", prefill_tokens)):
        c[name] = positive_int(name, v)
    c["group_size"] = positive_int("group_size", (8 if algorithm == "grpo" else 1) if group_size is None else group_size)
    for bad in ("model", "seq_len", "micro_batch", "dp", "zero_stage", "tp", "pp", "layout"):
        if bad in train_options:
            raise ValueError(f"{bad!r} is set by estimate_rlhf itself (from the actor, prompt_len + response_len, "
                             f"micro_batch, gpus, zero_stage, strategy, train_tp and train_pp); do not pass it as a "
                             "training option")
    if algorithm == "grpo" and c["group_size"] < 2:
        raise ValueError(f"GRPO compares G samples of the same prompt: group_size must be >= 2, got {group_size}")
    if algorithm == "ppo" and critic is None:
        raise ValueError("critic=None: PPO trains a value model beside the actor; give critic='same' (the actor's "
                         "model) or a model name, or use algorithm='grpo' (no critic)")
    if algorithm != "ppo" and critic not in (SAME, None):
        raise ValueError(f"{algorithm.upper()} has no critic (GRPO takes its baseline from the group, DPO has no "
                         f"value function): leave critic unset, got {critic!r}")
    if algorithm == "dpo" and reward not in (SAME, None):
        raise ValueError(f"DPO learns from preference pairs and has no reward model: leave reward unset, got {reward!r}")
    if algorithm == "dpo" and c["group_size"] != 1:
        raise ValueError("DPO generates nothing: group_size applies to PPO and GRPO rollouts")
    if algorithm == "dpo" and (gpu_memory_utilization is not None or c["cudagraph_bytes"]):
        raise ValueError("DPO generates nothing: gpu_memory_utilization and cudagraph_bytes apply to PPO and GRPO "
                         "rollout engines")
    c["fraction"] = None
    if gpu_memory_utilization is not None:
        if c["engine"] == "hf":
            raise ValueError("rollout_engine 'hf' (transformers' generate) reserves no share of the card: its KV "
                             "cache is sized by the batch; gpu_memory_utilization applies to 'vllm' and 'sglang'")
        c["fraction"] = _fraction("gpu_memory_utilization", gpu_memory_utilization,
                                  what="the share of each card the rollout engine reserves")
    if c["engine"] == "hf" and c["cudagraph_bytes"]:
        raise ValueError("cudagraph_bytes applies to the 'vllm' and 'sglang' engines, not transformers' generate")
    c["seq"] = c["prompt_len"] + c["response_len"]
    c["rows"] = 2 * c["micro_batch"] if algorithm == "dpo" else c["micro_batch"]  # DPO: chosen + rejected
    return c


def _check_trainer(strategy, zero_stage, train_tp, train_pp, offload_policy, train_options) -> dict:
    """strategy, zero_stage, train_tp/train_pp and offload_policy, checked against what each framework runs."""
    from memlib.training.options import FSDP_ALIASES  # here: memlib.training's package imports this module
    offload_policy = flag("offload_policy", offload_policy)
    tp, pp = positive_int("train_tp", train_tp), positive_int("train_pp", train_pp)
    if strategy is None:
        strategy = "fsdp" if isinstance(zero_stage, str) else "deepspeed"
    choice("strategy", strategy, STRATEGIES)
    bad_int = isinstance(zero_stage, bool) or not isinstance(zero_stage, (int, str, type(None)))
    if strategy == "deepspeed":
        z = 3 if zero_stage is None else zero_stage
        if bad_int or isinstance(z, str) or z not in (0, 1, 2, 3):
            raise ValueError(f"zero_stage must be 0, 1, 2, 3 (DeepSpeed) or one of {sorted(FSDP_ALIASES)} (FSDP, as "
                             f"verl's trainers: strategy 'fsdp'/'fsdp2'), got {zero_stage!r}")
    elif strategy in ("fsdp", "fsdp2"):
        # verl get_sharding_strategy: FULL_SHARD, or SHARD_GRAD_OP when fsdp_config.reshard_after_forward is False
        z = None if bad_int else {None: "FULL_SHARD", 3: "FULL_SHARD", 2: "SHARD_GRAD_OP"}.get(zero_stage, zero_stage)
        if z not in FSDP_ALIASES:
            raise ValueError(f"strategy {strategy!r} takes zero_stage 'FULL_SHARD' (3, verl's default) or "
                             f"'SHARD_GRAD_OP' (2, reshard_after_forward=False) or 'NO_SHARD', got {zero_stage!r}")
    else:  # megatron
        z = 1 if zero_stage is None else zero_stage
        if bad_int or z not in (0, 1):
            raise ValueError("strategy 'megatron' takes zero_stage 1 (Megatron's distributed optimizer, verl's "
                             f"use_distributed_optimizer default) or 0, got {zero_stage!r}")
    if strategy != "megatron" and (tp, pp) != (1, 1):
        raise ValueError(f"train_tp and train_pp are Megatron's tensor and pipeline parallelism: strategy='megatron' "
                         f"(verl's Megatron workers); strategy {strategy!r} shards over data parallelism only")
    if offload_policy and strategy != "fsdp2":
        raise ValueError("offload_policy is FSDP2's CPUOffloadPolicy (verl's fsdp_config.offload_policy applies to "
                         "strategy 'fsdp2'; verl turns FSDP1's CPUOffload off for the actor, and DeepSpeed's and "
                         f"Megatron's optimizer offload are other options); got strategy {strategy!r}")
    if offload_policy and z != "FULL_SHARD":
        raise ValueError(f"offload_policy (FSDP2's CPUOffloadPolicy) is modelled under FULL_SHARD, got {z!r}")
    if offload_policy and "offload" in train_options:
        raise ValueError("offload_policy sets the trainers' offload (parameters, gradients and optimizer on the CPU); "
                         "do not pass offload as a training option too")
    if strategy == "megatron" and "offload" in train_options:
        raise ValueError("strategy 'megatron' models Megatron-Core's states on the GPU during the step (verl's "
                         "optimizer_offload moves them off between phases: use optimizer_offload=True)")
    return dict(strategy=strategy, zero_stage=z, train_tp=tp, train_pp=pp, offload_policy=offload_policy)


def _check_offload(placement, offload_idle, c, param_offload, optimizer_offload, ref_param_offload,
                   free_cache_engine, sleep_level) -> dict:
    """The per-role offload switches, resolved (None: offload_idle) and checked."""
    given = {"param_offload": param_offload, "optimizer_offload": optimizer_offload,
             "free_cache_engine": free_cache_engine, "sleep_level": sleep_level}
    if placement == "separate":
        named = [k for k, v in given.items() if v is not None]
        if named:
            raise ValueError(f"{', '.join(named)} apply to placement 'colocated' (a role on GPUs of its own keeps "
                             "its states between phases); for separate groups use the role's own training options")
    # separate groups: every role stays on its own GPUs between phases (nothing to sleep for)
    default = offload_idle if placement == "colocated" else False
    out = {k: default if v is None else flag(k, v) for k, v in given.items() if k != "sleep_level"}
    fsdp = c["strategy"] in ("fsdp", "fsdp2")
    # verl forces FSDP's CPU offload on every non-actor FSDP module (fsdp_workers.py _build_model_optimizer:
    # cpu_offload = None if role == "actor" else CPUOffload(offload_params=True); FSDP2: CPUOffloadPolicy)
    out["ref_param_offload"] = ((True if fsdp else default) if ref_param_offload is None
                                else flag("ref_param_offload", ref_param_offload))
    out["fsdp_cpu_offload_frozen"] = fsdp and out["ref_param_offload"] and c["zero_stage"] != "NO_SHARD"
    if sleep_level is not None:
        if isinstance(sleep_level, bool) or sleep_level not in SLEEP_LEVELS:
            raise ValueError(f"sleep_level must be 1 or 2 (vLLM's LLM.sleep(level=...)), got {sleep_level!r}")
        if c["engine"] != "vllm":
            raise ValueError(f"sleep_level is vLLM's sleep mode; rollout_engine is {c['engine']!r}")
        if not out["free_cache_engine"]:
            raise ValueError("sleep_level needs the engine to sleep: free_cache_engine=True (or offload_idle=True)")
    out["sleep_level"] = 1 if sleep_level is None else sleep_level
    return out


def _trainer_kwargs(g: int, c: dict) -> dict:
    """estimate_training's parallel layout for a trainable role on g GPUs under c's strategy."""
    if c["strategy"] == "megatron":
        tp, pp = c["train_tp"], c["train_pp"]
        # verl's Megatron config: sequence_parallel true (it applies with tp > 1)
        return dict(layout="megatron", tp=tp, pp=pp, dp=g // (tp * pp), zero_stage=c["zero_stage"],
                    sequence_parallel=tp > 1)
    kw = dict(zero_stage=c["zero_stage"], dp=g)
    if c["offload_policy"]:
        kw["offload"] = "optimizer+params"  # FSDP2 CPUOffloadPolicy (estimate_training's FSDP CPU offload)
    return kw


def _split_states(est) -> tuple[int, int, int]:
    """(parameters, gradients, optimizer states) a trainer keeps per GPU between steps: estimate_training's
    persistent parameter and optimizer terms, the gradients the rest of its model states."""
    params, opt = est.breakdown.get("parameters", 0), est.breakdown.get("optimizer", 0)
    return params, max(est.model_state_bytes - params - opt, 0), opt


def _fsdp_gathered_bytes(m) -> int:
    """bf16 bytes FULL_SHARD gathers around a forward: the root unit (embedding, final norm, head: gathered for the
    whole forward) and two decoder layers (the one running and the next, as memlib's FSDP model gathers them:
    memlib.training.step._gathered_parameters). A frozen module under CPUOffload(offload_params=True) holds only
    these on the GPU: its shards live in host RAM and each unit is copied up, all-gathered, then freed."""
    root_names = ("embed", "final", "lm_head", "score")
    root = sum(t.numel * t.count for t in m.tensors() if t.name.startswith(root_names))
    # a model whose layers differ (dense and MoE layers) is counted at its average layer
    layer = m.params_per_layer if m.params_per_layer * m.num_layers == m.num_params - root else \
        -(-(m.num_params - root) // m.num_layers)
    return 2 * (root + 2 * layer)


def _role(role: str, m, g: int, c: dict, train_options: dict) -> RoleMemory:
    """One role's RoleMemory on g GPUs, from memlib's training or serving estimate."""
    if KINDS[role] == "trainable":
        return _trainable_role(role, m, g, c, train_options)
    if KINDS[role] == "frozen":
        return _frozen_role(role, m, g, c)
    return _rollout_role(role, m, g, c)


def _trainable_role(role: str, m, g: int, c: dict, train_options: dict) -> RoleMemory:
    """The actor or critic: its training estimate, and what it keeps while another role runs."""
    seq, rows, z, tp = c["seq"], c["rows"], c["zero_stage"], c["train_tp"]
    from memlib.training import estimate_training  # here: memlib.training's package imports this module's
    est = estimate_training(m, seq_len=seq, micro_batch=rows, **_trainer_kwargs(g, c),
                            **{"precision": "bf16-mixed", "recompute": "full", **train_options})
    params, grads, opt = _split_states(est)
    gathered = 0
    if c["strategy"] == "megatron":  # the 16-bit parameters of this GPU's tp x pp shard
        weights, acts = params, _forward(m, g, 0, rows, seq, "all", tp)[1]
    elif c["strategy"] in ("fsdp", "fsdp2") and not c["offload_policy"]:
        # verl's FSDP actor keeps fp32 parameters (model_dtype fp32 for the actor); FULL_SHARD gathers the root
        # unit and two layers in bf16 (MixedPrecision param_dtype) around its shard for the forward
        acts = _forward(m, g, 0, rows, seq, "all")[1]
        gathered = _fsdp_gathered_bytes(m) if z == "FULL_SHARD" else 0
        weights = params + gathered
    else:
        weights, acts, _ = _forward(m, g, z, rows, seq, "all")
    # What stays on the GPU while another role runs. DeepSpeed: OpenRLHF's offload_deepspeed_states takes the
    # optimizer states, fp32 master and gradient buffers (optimizer_offload), the 16-bit partition only with
    # lp_params (param_offload). FSDP: verl's zero_grad() ends update_policy (dp_actor.py), so no gradients stay;
    # parameters and optimizer states each by their flag. Megatron: param_offload moves the parameters and the
    # main-grad buffer (offload_megatron_model_to_cpu), optimizer_offload the optimizer.
    if c["strategy"] == "deepspeed":
        idle = (0 if c["param_offload"] else params) + (0 if c["optimizer_offload"] else grads + opt)
    elif c["strategy"] == "megatron":
        idle = (0 if c["param_offload"] else params + grads) + (0 if c["optimizer_offload"] else opt)
    else:
        idle = (0 if c["param_offload"] else params) + (0 if c["optimizer_offload"] else opt)
    # its scoring forward (old log-probs, values): what it keeps, the activations, and the weights moved back
    scoring = idle + acts + (weights if c["param_offload"] else gathered)
    host = est.model_state_bytes - idle if idle < est.model_state_bytes else 0
    return RoleMemory(role, m.name, "trainable", g, est.peak_bytes, est.model_state_bytes, weights + acts, acts,
                      est, est.breakdown, idle_bytes=idle, scoring_bytes=scoring,
                      host_bytes=host + est.host_bytes)


def _frozen_role(role: str, m, g: int, c: dict) -> RoleMemory:
    """The reference or the reward model: 16-bit weights and one scoring forward."""
    seq, rows, z, tp = c["seq"], c["rows"], c["zero_stage"], c["train_tp"]
    # the reference needs every response token's log-probability (all logits); a reward model one score
    logits = "all" if role == "reference" else "last"
    if c["strategy"] == "megatron":
        from memlib.training import estimate_training
        # its 16-bit tp x pp shard on the busiest pipeline stage, from Megatron's layout; a reward model's one-
        # output head is counted as the LM head (an over-count of at most 2 x vocab x hidden / tp bytes)
        lm = m.with_(head="lm", num_labels=0) if m.head != "lm" else m
        shard = estimate_training(lm, seq_len=seq, micro_batch=rows, **_trainer_kwargs(g, c),
                                  precision="bf16-mixed", recompute="full")
        weights, acts = shard.breakdown["parameters"], _forward(m, g, 0, rows, seq, logits, tp)[1]
        est = shard
    else:
        weights, acts, est = _forward(m, g, z, rows, seq, logits)
    if c["fsdp_cpu_offload_frozen"]:
        gathered = _fsdp_gathered_bytes(m)
        return RoleMemory(role, m.name, "frozen", g, gathered + acts, weights, gathered + acts, acts, est,
                          {"gathered units": gathered, "activations": acts}, idle_bytes=0,
                          scoring_bytes=gathered + acts, host_bytes=weights)
    off = c["ref_param_offload"]
    return RoleMemory(role, m.name, "frozen", g, weights + acts, weights, weights + acts, acts, est,
                      {"weights": weights, "activations": acts}, idle_bytes=0 if off else weights,
                      scoring_bytes=weights + acts, host_bytes=weights if off else 0)


def _rollout_role(role: str, m, g: int, c: dict) -> RoleMemory:
    """The rollout engine: transformers' generate, or an engine's fixed share (rollout_pool)."""
    seq = c["seq"]
    if c["engine"] == "hf":  # transformers' generate: the cache holds every sequence of the batch at once
        est = estimate_inference(m, batch=c["rollout_batch"] * c["group_size"], context_len=seq, weights="bf16",
                                 kv_cache=c["kv_cache"], tp=c["rollout_tp"], engine="hf",
                                 prefill_tokens=c["prefill_tokens"])
        resident = est.weight_bytes + est.kv_cache_bytes
        return RoleMemory(role, m.name, "rollout", g, est.peak_bytes, resident, est.peak_bytes, est.activation_bytes,
                          est, est.breakdown, idle_bytes=0 if c["free_cache_engine"] else resident)
    try:
        pool = rollout_pool(m, c["gpu"], c["engine"], c["fraction"], c["rollout_tp"], c["kv_cache"],
                            c["cudagraph_bytes"])
    except ValueError as err:
        if "refuses to start" not in str(err):
            raise
        share = int(usable_bytes(get_gpu(c["gpu"])) * c["fraction"])
        raise _EngineCannotStart(str(err), RoleMemory(role, m.name, "rollout", g, share, share, 0, 0, None,
                                                      {"share": share})) from None
    # asleep (vLLM sleep mode / SGLang release_memory_occupation): the weights and the KV pool are freed, the CUDA
    # graphs stay; level 1 keeps the weights in pinned host RAM (vLLM CuMemAllocator.sleep(offload_tags=("weights",)))
    asleep = c["free_cache_engine"]
    host = pool.weight_bytes if asleep and c["engine"] == "vllm" and c["sleep_level"] == 1 else 0
    return RoleMemory(role, m.name, "rollout", g, pool.reserved_bytes, pool.reserved_bytes, 0, 0, pool,
                      {"weights": pool.weight_bytes, "kv pool": pool.kv_pool_bytes, "other": pool.other_bytes},
                      pool.asleep_bytes, idle_bytes=pool.asleep_bytes if asleep else pool.reserved_bytes,
                      host_bytes=host)


def _phases(out: dict, algorithm: str) -> dict:
    """Bytes per GPU in each phase of a colocated step: what the running role holds (its step's peak, its scoring
    forward, the engine's share) plus what every other role keeps while idle (RoleMemory.idle_bytes: nothing when
    offloaded or asleep but an engine's CUDA graphs; its resident states when not). Scoring runs one model at a
    time: the phase is the largest of them."""
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
        phases[phase] = max((r.scoring_bytes if phase == "scoring" else r.peak_bytes)
                            + sum(o.idle_bytes for o in out.values() if o is not r) for r in running)
    return phases


# Every count up to one 8-GPU node, then whole nodes up to 32 of them.
GPU_COUNTS = tuple(range(1, 9)) + tuple(range(16, 257, 8))


def min_rlhf_gpus(actor, gpu, algorithm: str = "ppo", candidates=GPU_COUNTS, **kwargs) -> int | None:
    """The fewest colocated GPUs (from `candidates`: every count up to 8, then whole 8-GPU nodes) on which
    estimate_rlhf's peak fits `gpu` (memlib.fits); None if none of them does. kwargs go to estimate_rlhf
    (counts that rollout_tp, or Megatron's train_tp x train_pp, does not divide are skipped)."""
    from memlib.hardware.fit import fits
    if kwargs.get("placement", "colocated") != "colocated":
        raise ValueError("min_rlhf_gpus sizes a colocated setup; for separate groups size each role's group")
    for c in candidates:
        c = positive_int("candidate GPU count", c)
        if c % kwargs.get("rollout_tp", 1) or c % (kwargs.get("train_tp", 1) * kwargs.get("train_pp", 1)):
            continue
        if fits(estimate_rlhf(actor, algorithm, gpus=c, gpu=gpu, **kwargs), gpu).fits:
            return c
    return None


__all__ = ["ALGORITHMS", "PLACEMENTS", "ROLES", "PHASES", "GPU_COUNTS", "ROLLOUT_ENGINES", "COLOCATED_ENGINE_FRACTION",
           "SEPARATE_ENGINE_FRACTION", "RoleMemory", "RLHFEstimate", "RolloutPool", "rollout_pool", "rollout_token_slots",
           "estimate_rlhf", "min_rlhf_gpus"]


def _named_model(role: str, model):
    """get_model for a role's argument, its errors naming the argument (critic=5 is about critic, not 'model')."""
    try:
        return get_model(model)
    except ValueError as e:
        raise ValueError(f"{role}: {e}") from None


def _check_kv_cache(kv_cache, algorithm: str, engine: str) -> str:
    """The rollout engine's KV cache type: one it accepts (memlib.serving.engines.kv_formats); DPO generates
    nothing, so a kv_cache other than the default is an error there, not ignored."""
    from memlib.serving.engines import kv_formats  # here: the module-level imports are another branch's to move
    default = inspect.signature(estimate_rlhf).parameters["kv_cache"].default
    if algorithm == "dpo":
        if kv_cache != default:
            raise ValueError(f"kv_cache={show(kv_cache)} does not apply to DPO: it generates nothing (the rollout "
                             "engine's cache is PPO's and GRPO's)")
        return kv_cache
    return choice("kv_cache", kv_cache, kv_formats("hf" if engine == "hf" else engine))
