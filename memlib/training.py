"""estimate_training: peak memory of one training step on one GPU.

The peak is the maximum over the moments of a step, not the sum of everything ever
allocated. Steady state (step 2 and later) of an ordinary loop:

    out = model(input_ids, labels=input_ids)   # 'out' of the previous step is alive until here
    out.loss.backward()
    optimizer.step(); optimizer.zero_grad(set_to_none=True)

moments modelled (each a breakdown of what is alive):
  forward    at the loss: all saved activations, the logits and the fp32 log-softmax,
             the previous step's logits, no gradients (they were set to None)
  backward   max of (a) the top: activations still alive plus the loss gradients over the
             vocabulary, (b) the top decoder layer, (c) the bottom: all gradients plus the
             last layer's backward temporaries
  optimizer  parameters + gradients + states + the optimizer's own temporaries
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from memlib import activations as act
from memlib import lora as lora_mod
from memlib import optimizers as opt
from memlib import zero
from memlib._checks import choice, positive_int
from memlib.models import Model, Tensor, get_model
from memlib.units import fmt_bytes, fmt_count

PRECISIONS = ("fp32", "bf16", "fp16", "bf16-mixed", "fp16-mixed")
FINETUNES = ("full", "lora", "qlora")
RECOMPUTES = ("none", "selective", "full")
ATTENTIONS = ("sdpa", "eager")
OFFLOADS = ("none", "optimizer", "optimizer+params")
OFFLOAD_DEVICES = ("cpu", "nvme")
# FSDP's sharding strategies, accepted as zero_stage, mean PyTorch's layout (parameters,
# gradients and AdamW states in the parameter dtype; AMP keeps them fp32).
FSDP_ALIASES = {"FULL_SHARD": 3, "SHARD_GRAD_OP": 2, "NO_SHARD": 0}
DEEPSPEED_SUB_GROUP = 10**9  # zero_optimization.sub_group_size default (DeepSpeed config docs)
DEEPSPEED_REDUCE_BUCKET = 5 * 10**8  # zero_optimization.reduce_bucket_size default, elements

# Under AMP the weights are fp32 and every matmul reads a 16-bit copy; the embedding runs
# outside autocast, so the residual stream is fp32 too (torch.autocast op lists).
NUMERICS = {
    "fp32": act.Numerics(residual=4, compute=4, autocast=False),
    "bf16": act.Numerics(residual=2, compute=2, autocast=False),
    "fp16": act.Numerics(residual=2, compute=2, autocast=False),
    "bf16-mixed": act.Numerics(residual=4, compute=2, autocast=True),
    "fp16-mixed": act.Numerics(residual=4, compute=2, autocast=True),
}
PARAM_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "bf16-mixed": 4, "fp16-mixed": 4}

BREAKDOWN_KEYS = ("parameters", "gradients", "optimizer", "activations", "autocast_copies", "logits_and_loss",
                  "previous_output", "temporaries", "gathered_parameters")


@dataclass(frozen=True)
class TrainingSetup:
    model: Model
    seq_len: int
    micro_batch: int
    precision: str
    optimizer: str
    finetune: str
    lora_rank: int
    lora_targets: tuple[str, ...]
    recompute: str
    attention: str
    zero_stage: int
    dp: int
    tp: int
    pp: int
    offload: str
    offload_device: str = "cpu"
    grad_accum: int = 1
    sequence_parallel: bool = False
    sharding: str = "none"  # "none" | "deepspeed" (integer ZeRO stages) | "fsdp" (FSDP names)

    @property
    def tokens(self) -> int:
        return self.seq_len * self.micro_batch


@dataclass
class Moment:
    """What is alive at one moment of the step: bytes per category."""

    name: str
    where: str
    parts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.parts.values())


@dataclass
class Estimate:
    setup: TrainingSetup
    moments: list[Moment]
    counts: dict[str, int]
    layer: act.Ledger
    notes: list[str] = field(default_factory=list)
    host_bytes: int = 0  # host RAM per GPU's process for offloaded states/params (and staging)
    nvme_bytes: int = 0  # NVMe per GPU's process for ZeRO-Infinity

    @property
    def peak_moment(self) -> Moment:
        return max(self.moments, key=lambda m: m.total)

    @property
    def peak_bytes(self) -> int:
        """Allocated bytes at the peak, on one GPU."""
        return self.peak_moment.total

    @property
    def phase(self) -> str:
        """'forward', 'backward' or 'optimizer': where the peak happens."""
        return self.peak_moment.name

    @property
    def breakdown(self) -> dict[str, int]:
        """What is alive at the peak, by category (every BREAKDOWN_KEYS key present)."""
        parts = self.peak_moment.parts
        return {k: parts.get(k, 0) for k in BREAKDOWN_KEYS}

    @property
    def model_state_bytes(self) -> int:
        return self.counts["param_bytes"] + self.counts["grad_bytes"] + self.counts["optimizer_bytes"]

    def to_dict(self) -> dict:
        s = self.setup
        return {
            "model": s.model.name, "num_params": s.model.num_params, "trainable_params": self.counts["trainable"],
            "seq_len": s.seq_len, "micro_batch": s.micro_batch, "precision": s.precision,
            "optimizer": s.optimizer, "finetune": s.finetune, "recompute": s.recompute, "attention": s.attention,
            "peak_bytes": self.peak_bytes, "phase": self.phase, "breakdown": self.breakdown,
            "moments": {name: max(m.total for m in self.moments if m.name == name)
                        for name in ("forward", "backward", "optimizer")},
            "zero_stage": s.zero_stage, "sharding": s.sharding, "dp": s.dp, "tp": s.tp, "pp": s.pp,
            "offload": s.offload, "host_bytes": self.host_bytes, "nvme_bytes": self.nvme_bytes,
        }

    def explain(self) -> str:
        from memlib.explain import explain_training
        return explain_training(self)

    def __repr__(self) -> str:
        return (f"Estimate({self.setup.model.name}: peak {fmt_bytes(self.peak_bytes)} during {self.phase}; "
                + ", ".join(f"{k} {v / 1e9:.2f} GB" for k, v in self.breakdown.items() if v) + ")")


def _check_setup(model, seq_len, micro_batch, precision, optimizer, finetune, lora_rank, lora_targets,
                 recompute, attention, zero_stage, dp, tp, pp, offload, offload_device="cpu", grad_accum=1,
                 sequence_parallel=False) -> TrainingSetup:
    model = get_model(model) if isinstance(model, str) else model
    if not isinstance(model, Model):
        raise ValueError(f"model must be a catalog name or a memlib.Model, got {type(model).__name__}")
    seq_len = positive_int("seq_len", seq_len)
    micro_batch = positive_int("micro_batch", micro_batch)
    grad_accum = positive_int("grad_accum", grad_accum)
    choice("precision", precision, PRECISIONS)
    choice("optimizer", optimizer, opt.OPTIMIZERS)
    choice("finetune", finetune, FINETUNES)
    choice("recompute", recompute, RECOMPUTES)
    choice("attention", attention, ATTENTIONS)
    choice("offload", offload, OFFLOADS)
    choice("offload_device", offload_device, OFFLOAD_DEVICES)
    if not isinstance(sequence_parallel, bool):
        raise ValueError(f"sequence_parallel must be True or False, got {sequence_parallel!r}")
    for name, v in (("dp", dp), ("tp", tp), ("pp", pp)):
        positive_int(name, v)
    fsdp = isinstance(zero_stage, str)
    if fsdp:
        if zero_stage.upper() not in FSDP_ALIASES:
            raise ValueError(f"unknown zero_stage {zero_stage!r}; accepted: 0, 1, 2, 3 (DeepSpeed ZeRO) or "
                             f"{', '.join(FSDP_ALIASES)} (PyTorch FSDP)")
        zero_stage = FSDP_ALIASES[zero_stage.upper()]
    else:
        zero_stage = positive_int("zero_stage", zero_stage, allow_zero=True)
        if zero_stage > 3:
            raise ValueError(f"zero_stage must be 0, 1, 2 or 3 (or an FSDP name: {', '.join(FSDP_ALIASES)}), "
                             f"got {zero_stage}")
    # Which memory layout applies. ZeRO over one GPU shards nothing: identical to no ZeRO.
    if offload != "none":
        if fsdp or zero_stage == 0:
            raise ValueError(f"offload={offload!r} is DeepSpeed's ZeRO-Offload/Infinity: give an integer "
                             "zero_stage >= 1 (FSDP's CPU offload is not modelled)")
        if offload == "optimizer+params" and zero_stage != 3:
            raise ValueError("offloading parameters (ZeRO-Infinity) needs zero_stage=3")
        sharding = "deepspeed"
    elif (zero_stage == 0 or (dp == 1 and not fsdp)) and (tp > 1 or pp > 1) and precision.endswith("mixed"):
        sharding = "megatron"  # tensor/pipeline parallel training is Megatron's mixed precision
    elif zero_stage == 0 or (dp == 1 and not fsdp):
        sharding = "none"  # ZeRO over one GPU shards nothing: DeepSpeed then is plain training
    else:
        # FSDP on one GPU still keeps sharded and unsharded copies apart (PyTorch's FSDP2
        # does; FSDPMemTracker shows it), so it is modelled as such even for dp=1.
        sharding = "fsdp" if fsdp else "deepspeed"
    if model.mlp != "gated" and (tp > 1 or pp > 1 or sharding != "none"):
        raise ValueError(f"parallel layouts are modelled for LLaMA-style models; {model.name} is {model.model_type}")
    if model.num_heads % tp or model.num_kv_heads % tp:
        raise ValueError(f"tp={tp} must divide the {model.num_heads} attention heads and the "
                         f"{model.num_kv_heads} key/value heads of {model.name} (Megatron splits whole heads)")
    if model.intermediate_size % tp:
        raise ValueError(f"tp={tp} must divide the MLP width {model.intermediate_size}")
    if pp > model.num_layers:
        raise ValueError(f"pp={pp} stages but {model.name} has only {model.num_layers} layers")
    if pp > 1 and sharding == "deepspeed" and zero_stage >= 2:
        raise ValueError("DeepSpeed's pipeline engine supports ZeRO stage 0 or 1 only; use zero_stage<=1 with pp>1")
    if sequence_parallel and tp == 1:
        raise ValueError("sequence_parallel needs tp > 1 (it shards the tensor-parallel group's norms and dropouts)")
    if seq_len > model.max_position_embeddings and model.position == "learned":
        raise ValueError(f"seq_len {seq_len} exceeds {model.name}'s learned position table "
                         f"({model.max_position_embeddings})")
    if finetune == "full":
        targets: tuple[str, ...] = ()
        lora_rank = 0
    else:
        if model.mlp != "gated":
            raise ValueError(f"LoRA/QLoRA estimates need a LLaMA-style model; {model.name} is {model.model_type}")
        targets = lora_mod.resolve_targets(model, lora_targets)
        lora_mod.lora_params(model, lora_rank, targets)  # validates the rank against each layer
        if finetune == "qlora" and precision in ("fp32",):
            raise ValueError("qlora computes in 16-bit; use precision 'bf16', 'fp16', 'bf16-mixed' or 'fp16-mixed'")
        if finetune == "qlora" and (sharding != "none" or tp > 1 or pp > 1):
            raise ValueError("QLoRA is modelled on one GPU (its 4-bit base does not shard with ZeRO/TP here)")
    return TrainingSetup(model, seq_len, micro_batch, precision, optimizer, finetune, lora_rank, targets,
                         recompute, attention, zero_stage, dp, tp, pp, offload, offload_device, grad_accum,
                         sequence_parallel, sharding)


def estimate_training(model, seq_len: int = 2048, micro_batch: int = 1, precision: str = "bf16-mixed",
                      optimizer: str = "adamw", finetune: str = "full", lora_rank: int = 16, lora_targets=None,
                      recompute: str = "none", attention: str = "sdpa", zero_stage=0, dp: int = 1,
                      tp: int = 1, pp: int = 1, offload: str = "none", offload_device: str = "cpu",
                      grad_accum: int = 1, sequence_parallel: bool = False) -> Estimate:
    """Peak memory of one training step, per GPU, with its breakdown and the phase of the peak.

    precision: "fp32" | "bf16" | "fp16" (params, grads and optimizer states all in that dtype)
               | "bf16-mixed" | "fp16-mixed" (fp32 params/grads/states, autocast compute).
    optimizer: "adamw" | "adamw-8bit" | "sgd" | "sgd-momentum" | "adafactor".
    finetune:  "full" | "lora" | "qlora" (lora_rank, lora_targets: names, or "all-linear"/"attention"/"qv").
    recompute: "none" | "selective" | "full";  attention: "sdpa" | "eager".
    zero_stage: 0-3 over dp GPUs with DeepSpeed's layout (16-bit params and grads, fp32 master
               counted with the optimizer states), or "FULL_SHARD" | "SHARD_GRAD_OP" | "NO_SHARD"
               for PyTorch FSDP's layout. With dp=1 it shards nothing and changes nothing.
    tp, pp:    Megatron tensor and pipeline parallel degrees (sequence_parallel with tp);
               grad_accum micro-batches per step (what 1F1B keeps in flight on the first stage).
    offload:   "none" | "optimizer" (ZeRO-Offload) | "optimizer+params" (ZeRO-Infinity, stage 3),
               to offload_device "cpu" | "nvme"; est.host_bytes and est.nvme_bytes report them.
    """
    s = _check_setup(model, seq_len, micro_batch, precision, optimizer, finetune, lora_rank, lora_targets,
                     recompute, attention, zero_stage, dp, tp, pp, offload, offload_device, grad_accum,
                     sequence_parallel)
    if s.model.mlp != "gated":
        return _estimate_gpt(s)
    return _estimate_llama(s)


# Tensors split by Megatron tensor parallelism: column-parallel (q, k, v, gate, up: output
# dim) and row-parallel (o, down: input dim) weights, the column-parallel biases, and the
# vocabulary-parallel embedding and head. Norms and row-parallel biases are replicated.
_TP_SPLIT = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "embed_tokens",
             "lm_head", "q_proj.bias", "k_proj.bias", "v_proj.bias", "gate_proj.bias", "up_proj.bias")
_COLUMN_PARALLEL = ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj")


@dataclass(frozen=True)
class _Stage:
    """The part of the model one GPU holds: its pipeline stage, split by tp."""

    name: str
    layers: int
    in_flight: int  # micro-batches whose activations 1F1B keeps on this stage
    embed: bool
    head: bool


def _stages(s: TrainingSetup) -> list[_Stage]:
    L, pp = s.model.num_layers, s.pp
    if pp == 1:
        return [_Stage("only", L, 1, True, True)]
    first = -(-L // pp)  # earlier stages take the remainder
    last = L // pp
    # 1F1B (Narayanan et al. 2021, Sec. 2.2): stage i keeps up to pp - i micro-batches in flight.
    return [_Stage("first pipeline stage", first, min(pp, s.grad_accum), True, False),
            _Stage("last pipeline stage", last, 1, False, True)]


def _stage_tensors(m: Model, s: TrainingSetup, st: _Stage) -> list[tuple[Tensor, tuple[int, int] | None]]:
    """Parameter tensors on one GPU with their 2-D shapes (Adafactor, 8-bit Adam need them)."""
    return _stage_tensors_cached(m, s.tp, st)


@dataclass(frozen=True)
class _StageSums:
    """Element counts of one GPU's parameters that every estimate needs."""

    total: int
    linear: int  # matmul weights (what autocast casts), the tied head not counted twice
    layer_linear: int  # matmul weights of one decoder layer
    layer_all: int  # all parameters of one decoder layer
    quantized_bytes: int  # NF4 bytes of the matmul weights (QLoRA)


@lru_cache(maxsize=512)
def _stage_sums(m: Model, tp: int, st: _Stage) -> _StageSums:
    ts = _stage_tensors_cached(m, tp, st)
    layer = [t for t, _ in ts if t.count == st.layers and not t.name.startswith(("embed", "final", "lm_head"))]
    linear = sum(t.numel * t.count for t, _ in ts if t.kind == "linear")
    if m.tie_word_embeddings and st.head and st.embed:  # the tied head is the embedding matrix
        linear += m.vocab_size * m.hidden_size // tp
    return _StageSums(
        total=sum(t.numel * t.count for t, _ in ts), linear=linear,
        layer_linear=sum(t.numel for t in layer if t.kind == "linear"), layer_all=sum(t.numel for t in layer),
        quantized_bytes=sum(lora_mod.nf4_bytes(t.numel) * st.layers for t in layer if t.kind == "linear"))


@lru_cache(maxsize=512)
def _stage_tensors_cached(m: Model, tp: int, st: _Stage) -> list[tuple[Tensor, tuple[int, int] | None]]:
    h = m.hidden_size
    out = []
    for t in m.tensors():
        if t.count == m.num_layers and not t.name.startswith(("embed", "final", "lm_head")):
            count = st.layers
        elif t.name.startswith("embed"):
            count = 1 if st.embed else 0
        else:  # final norm, lm_head
            count = 1 if st.head else 0
        if not count:
            continue
        numel = t.numel // tp if t.name in _TP_SPLIT else t.numel
        shape = (numel // h, h) if t.kind in ("linear", "embedding") else None
        out.append((Tensor(t.name, numel, count, t.kind), shape))
    if m.tie_word_embeddings and st.head and not st.embed:  # Megatron keeps a tied copy on the last stage
        out.append((Tensor("lm_head (tied copy)", m.vocab_size * h // tp, 1), (m.vocab_size // tp, h)))
    return out


def _adapter_tensors(m: Model, s: TrainingSetup, st: _Stage) -> list[tuple[Tensor, tuple[int, int]]]:
    """LoRA A (r x in) and B (out x r) per target; tp splits B of column-parallel layers and A of row-parallel ones."""
    return _adapter_tensors_cached(m, s.lora_targets, s.lora_rank, s.tp, st.layers)


@lru_cache(maxsize=512)
def _adapter_tensors_cached(m: Model, targets: tuple, rank: int, tp: int, layers: int):
    out = []
    for name in targets:
        fan_in, fan_out = lora_mod.linear_shape(m, name)
        a_in = fan_in if name in _COLUMN_PARALLEL else fan_in // tp
        b_out = fan_out // tp if name in _COLUMN_PARALLEL else fan_out
        out.append((Tensor(f"{name}.lora_A", rank * a_in, layers), (rank, a_in)))
        out.append((Tensor(f"{name}.lora_B", b_out * rank, layers), (b_out, rank)))
    return out


def _state_tensors(model: Model, s: TrainingSetup):
    """(Tensor, 2-D shape or None) for every trainable tensor of the whole model on one GPU."""
    st = _stages(s)[0] if s.pp == 1 else _Stage("all", model.num_layers, 1, True, True)
    return _stage_tensors(model, s, st) if s.finetune == "full" else _adapter_tensors(model, s, st)


def _numel(tensors) -> int:
    return sum(t.numel * t.count for t, _ in tensors)


def _estimate_llama(s: TrainingSetup) -> Estimate:
    stages = _stages(s)
    results = [_estimate_stage(s, st) for st in stages]
    if len(results) == 1:
        return results[0]
    moments, host, nvme = [], 0, 0
    for est, st in zip(results, stages):
        moments += [Moment(mo.name, f"{st.name}: {mo.where}", mo.parts) for mo in est.moments]
    worst = max(results, key=lambda e: e.peak_bytes)
    bubble = (s.pp - 1) / (s.grad_accum + s.pp - 1)
    notes = worst.notes + [
        f"pipeline: {s.pp} stages; first stage {stages[0].layers} layers + embedding with "
        f"{stages[0].in_flight} micro-batch(es) in flight (1F1B), last stage {stages[1].layers} layers + head; "
        f"bubble (p-1)/(m+p-1) = {bubble:.1%} with m={s.grad_accum} micro-batches (Narayanan et al. 2021)"]
    return Estimate(s, moments, worst.counts, worst.layer, notes, worst.host_bytes, worst.nvme_bytes)


def _estimate_stage(s: TrainingSetup, st: _Stage) -> Estimate:
    m = s.model
    b, seq, tok = s.micro_batch, s.seq_len, s.tokens
    h, V, tp, dp = m.hidden_size, m.vocab_size, s.tp, s.dp
    full_ft = s.finetune == "full"
    notes: list[str] = []
    k = s.zero_stage if s.sharding != "none" else 0

    # --- numerics and byte widths ---------------------------------------------------------
    if s.sharding == "megatron":
        # Megatron-LM's mixed precision (NVIDIA/Megatron-LM theoretical_memory_usage.py: 18 bytes
        # per parameter without the distributed optimizer): 16-bit parameters, fp32 main
        # gradients, fp32 master weights + Adam moments; 16-bit compute, no autocast copies.
        pb, gb_, state_b, master_b = 2, 4, 4, 4
        num = NUMERICS["bf16"]
        notes.append("Megatron-LM mixed precision: 2-byte params, 4-byte fp32 main grads, 12-byte fp32 master "
                     "+ Adam states = 18 bytes/param")
    elif s.sharding == "deepspeed":
        # DeepSpeed's mixed precision (Rajbhandari et al. 2020, Sec. 3.1): 16-bit working
        # parameters and gradients; fp32 master weights + fp32 optimizer states (K = 12 for Adam).
        wide = s.precision == "fp32"
        pb = gb_ = 4 if wide else 2
        state_b = 4
        master_b = 0 if wide else 4
        num = NUMERICS["fp32"] if wide else NUMERICS["bf16"]
        notes.append(f"DeepSpeed ZeRO-{k} over {dp} GPUs: {pb}-byte working params and grads, fp32 optimizer "
                     f"states{' + fp32 master copy' if master_b else ''} (the ZeRO paper's layout)")
    else:
        pb = gb_ = state_b = PARAM_BYTES[s.precision]
        master_b = 0
        num = NUMERICS[s.precision]
        if s.sharding == "fsdp":
            notes.append(f"FSDP over {dp} GPUs (stage {k} equivalent): parameters, gradients and optimizer states "
                         f"in {pb}-byte {('fp32 (AMP)' if pb == 4 else 'bf16/fp16')}, PyTorch's layout")
        elif s.zero_stage and dp == 1:
            notes.append(f"zero_stage={s.zero_stage} over one GPU shards nothing: same as no ZeRO")

    # --- model states on this GPU ----------------------------------------------------------
    stage_params = _stage_tensors(m, s, st)
    sums = _stage_sums(m, tp, st)
    tensors = stage_params if full_ft else _adapter_tensors(m, s, st)
    trainable = sums.total if full_ft else _numel(tensors)
    base_numel = sums.total
    if full_ft:
        param_full = base_numel * pb
    elif s.finetune == "lora":
        param_full = base_numel * pb + trainable * pb
    else:  # QLoRA: the decoder layers' projections in NF4; embeddings, lm_head and norms in 16-bit
        quantized = sums.layer_linear * st.layers  # (bitsandbytes skips lm_head by default)
        param_full = sums.quantized_bytes + (base_numel - quantized) * 2 + trainable * pb
        notes.append(f"QLoRA: {fmt_count(quantized)} projection weights in NF4 "
                     f"({lora_mod.NF4_BITS_PER_PARAM:.3f} bits each), the rest in 16-bit")
    grad_full = trainable * gb_
    state_full = opt.state_bytes(s.optimizer, tensors, state_b) + master_b * trainable
    # ZeRO (Rajbhandari et al. 2020, Sec. 5): stage 1 shards optimizer states, 2 also
    # gradients, 3 also parameters, each over the dp data-parallel GPUs.
    state_bytes = zero.partitioned(state_full, "optimizer", k, dp)
    grad_bytes = zero.partitioned(grad_full, "gradients", k, dp)
    param_rest = zero.partitioned(param_full, "parameters", k, dp)
    # SHARD_GRAD_OP keeps parameters unsharded from forward to backward; sharded only at rest.
    param_live = param_full if (s.sharding == "fsdp" and k == 2) else param_rest
    param_step = param_full // dp if (s.sharding == "fsdp" and k == 2) else param_rest
    largest_trainable = max(t.numel for t, _ in tensors)
    if s.sharding == "megatron":
        opt_tmp = 0  # Apex/TE fused Adam updates the fp32 master in place
    elif s.sharding == "deepspeed":
        # DeepSpeed steps on the flat fp32 partition after upcasting its gradient partition to
        # fp32; ZeRO-3 does it one sub-group at a time (sub_group_size, default 1e9 elements).
        grad_partition = trainable // (dp if k >= 1 else 1)
        opt_tmp = 4 * (min(grad_partition, DEEPSPEED_SUB_GROUP) if k == 3 else grad_partition) if master_b else 0
    else:
        opt_tmp = opt.step_transient_bytes(s.optimizer, largest_trainable // (dp if k >= 1 else 1), state_b)

    host_bytes = nvme_bytes = 0
    if s.offload != "none":
        # ZeRO-Offload (Ren et al. 2021, Sec. 4): states, fp32 master and an fp32 gradient
        # partition live in host memory and the optimizer steps on the CPU.
        offloaded = state_bytes + 4 * trainable // dp
        staging = 0
        if s.offload == "optimizer+params":  # ZeRO-Infinity (Rajbhandari et al. 2021): 16-bit params too
            offloaded += param_rest
            param_live = param_step = param_rest = 0
            if s.offload_device == "nvme":  # DeepSpeed's default pinned buffers: 5 x 1e8 elements
                staging = 5 * 10**8 * pb
        if s.offload_device == "cpu":
            host_bytes = offloaded
        else:
            nvme_bytes, host_bytes = offloaded, staging + 4 * trainable // dp
        state_bytes, opt_tmp = 0, 0
        # gradients leave the GPU bucket by bucket during the backward (reduce_bucket_size)
        grad_bytes = min(grad_bytes, DEEPSPEED_REDUCE_BUCKET * gb_)
        notes.append(f"offload {s.offload} to {s.offload_device}: {fmt_bytes(offloaded)} per GPU leave the GPU; "
                     "the optimizer steps on the CPU")

    # --- activations -------------------------------------------------------------------------
    adapters = frozenset(s.lora_targets)
    if s.finetune == "qlora":  # 4-bit matmuls dequantize to 16-bit on the fly and keep no weight copy
        num = act.Numerics(residual=2, compute=2, autocast=False)
    adapter_dtype = pb if not full_ft else 2
    layer = act.llama_layer_ledger(m, num, tok, b, seq, attention=s.attention, trainable_linears=full_ft,
                                   adapters=adapters, lora_rank=s.lora_rank, adapter_bytes=adapter_dtype)
    if tp > 1:  # Korthikanti et al. 2022 Sec. 4.2: the tensor-parallel region splits by t; with
        # sequence parallelism the norms' tensors split too.
        layer = act.Ledger([(n, v // tp if (s.sequence_parallel or not n.startswith(("attn_norm", "mlp_norm")))
                             else v, why) for n, v, why in layer.items], layer.split)
    layer_act = layer.total
    if s.recompute == "selective":  # Korthikanti et al. 2022 Sec. 5: recompute only the s x s attention part
        layer_act -= sum(n for key, n, _ in layer.items if key.startswith("eager.probs"))
    r = num.residual
    sp = tp if s.sequence_parallel else 1
    # Per-model tensors. Kept for the backward: cos/sin of the rotary embedding (saved by
    # every layer's rotation), the token ids and the shifted labels (saved by the NLL loss).
    # Alive only during the forward: the embedding output (a tensor of its own when the
    # residual is 16-bit; under AMP it is layer 0's saved fp32 input), the padded labels,
    # and for eager attention the additive (b, 1, s, s) causal mask shared by all layers.
    saved_model_act = 2 * m.head_dim * r * tok + 2 * 8 * tok
    fwd_model_act = saved_model_act + (r * h * tok // sp if (r != 4 and st.embed) else 0) + 8 * tok
    if s.attention == "eager":
        fwd_model_act += r * b * seq * seq
    # Final RMSNorm before the head: fp32 input + (normalized, output) when trainable.
    final_norm = (4 * h * tok + ((r * h + (2 if num.autocast else r) * h) * tok if full_ft else 0)) // sp
    if not st.head:
        final_norm = 0
    # With frozen embeddings (LoRA/QLoRA) layer 0's input needs no gradient, so its first
    # RMSNorm keeps nothing for the backward.
    frozen_input = 0 if (full_ft or not st.embed) else 4 * h * tok // sp
    # A rebuilt layer under AMP/fp32 keeps its checkpointed input itself as the norm's fp32 input.
    checkpoint = r * h * tok // sp
    rebuilt_shared = checkpoint if r == 4 else 0
    n_kept = st.layers * st.in_flight
    if s.recompute == "full":
        # Non-reentrant checkpointing keeps each layer's input; one layer is rebuilt at a time.
        kept = n_kept * checkpoint
        notes.append("full recompute: each decoder layer keeps only its input; backward rebuilds one layer at a time")
    else:
        kept = n_kept * layer_act - frozen_input * st.in_flight

    # Autocast keeps a 16-bit copy of every weight a matmul used until that matmul's backward.
    casts_all = casts_layer = 0
    if num.autocast:
        casts_all = 2 * sums.linear + (0 if full_ft else 2 * trainable)
        casts_layer = 2 * sums.layer_linear
    lm_head_cast = 2 * V * h // tp if (num.autocast and st.head) else 0

    # logits: the head's output (c bytes), held by `out` until the next forward replaces it;
    # vocabulary-parallel under tp (Megatron's cross entropy never gathers the full vocabulary).
    c = num.compute
    logits = c * V * tok // tp if st.head else 0
    upcast = 4 * V * tok // tp if (c != 4 and st.head) else 0  # transformers' loss does logits.float()
    log_softmax = 4 * V * tok // tp if st.head else 0

    # ZeRO-3 / FULL_SHARD gather each layer's parameters just in time: the layer in use and
    # the next one, prefetched (DeepSpeed's prefetch bucket, FSDP's forward/backward prefetch).
    halves = _layer_halves(m, s, layer, num, gb_, full_ft)
    attn, mlp = halves["attn"], halves["mlp"]
    layer_param_bytes = pb * sums.layer_all
    gathered_layers = 2 * layer_param_bytes if k == 3 else 0
    head_param_bytes = pb * V * h // tp if st.head else 0
    gathered_head = head_param_bytes if k == 3 else 0
    gathered_bottom = gathered_layers
    fsdp3 = s.sharding == "fsdp" and k == 3
    if fsdp3:
        # FSDP2 (fully_shard per layer, then the root), as FSDPMemTracker shows it: the root's
        # parameters (embedding, final norm, head) are gathered at the start of the forward and
        # stay unsharded until the end of the backward; each layer's all-gather buffer outlives
        # its unpacked parameters until the next layer unpacks (the last layer's until the loss);
        # in backward the next layer is prefetched and the previous layer's reduce-scatter
        # buffer is still alive.
        root_bytes = pb * (sums.total - sums.layer_all * st.layers)
        gathered_head = root_bytes + layer_param_bytes
        gathered_layers = root_bytes + 2 * layer_param_bytes
        gathered_bottom = root_bytes + 2 * layer_param_bytes  # layer 0 + layer 1's reduce-scatter buffer
        root_grads = gb_ * (sums.total - sums.layer_all * st.layers) if full_ft else 0
    # Gradients of the layer in backward exist unsharded until reduce-scattered (ZeRO-2/3, FSDP).
    unsharded_layer_grads = (attn.grad + mlp.grad) if k >= 2 else 0

    base = {"parameters": param_live, "optimizer": state_bytes}

    # forward, at log_softmax inside the loss of step N, with step N-1's output still alive
    moments = []
    if st.head:
        moments.append(Moment("forward", "at the loss (log-softmax over the vocabulary)", {
            **base,
            "activations": kept + fwd_model_act + final_norm,
            "autocast_copies": casts_all,
            "logits_and_loss": logits + upcast + log_softmax,
            "previous_output": logits,
            "gathered_parameters": gathered_head,
        }))
    else:
        moments.append(Moment("forward", "end of the stage's forward, all in-flight micro-batches", {
            **base,
            "activations": kept + fwd_model_act,
            "autocast_copies": casts_all * st.in_flight if s.recompute != "full" else casts_all,
            "gathered_parameters": gathered_layers,
        }))

    # backward (a): the first nodes: NLL grad, log-softmax grad and its saved output (fp32)
    # Under checkpointing the layers' weight copies died with the autocast cache at the end
    # of the forward (nothing saved them); only the head's copy is still held by its matmul.
    casts_after_fwd = casts_all if s.recompute != "full" else lm_head_cast
    if st.head:
        moments.append(Moment("backward", "start: gradient of the loss over the vocabulary", {
            **base,
            "activations": kept + saved_model_act + final_norm,
            "autocast_copies": casts_after_fwd,
            "logits_and_loss": logits + 3 * 4 * V * tok // tp,
            "gathered_parameters": gathered_head,
        }))

    # backward (b): the decoder layers, top to bottom. Each layer runs its MLP backward,
    # then its attention backward; gradients appear as saved tensors are released, so the
    # high points are the first layer reached (everything still saved) and the last one
    # (nearly all gradients present). Evaluated at both halves of both ends.
    per_layer_grad = attn.grad + mlp.grad
    layers_grad = per_layer_grad * st.layers
    if k >= 2:
        layers_grad //= dp
    head_grad = grad_bytes - layers_grad - (V * h // tp * gb_ // (dp if k >= 2 else 1)
                                            if full_ft and st.embed and not m.tie_word_embeddings else 0)
    if not st.head:
        head_grad = 0
    embed_grad = grad_bytes - layers_grad - head_grad
    if fsdp3 and full_ft:  # the root's gradients stay unsharded until its post-backward
        head_grad = gb_ * (V * h // tp + h) if not m.tie_word_embeddings else root_grads
        embed_grad = 0
    shard = dp if k >= 2 else 1
    if s.recompute == "full":  # checkpoints of every layer, plus the one layer being rebuilt
        top_acts = {"mlp": kept + layer_act - rebuilt_shared, "attn": kept + attn.act - rebuilt_shared}
        bottom_acts = {"mlp": layer_act - frozen_input, "attn": attn.act - frozen_input}
        top_casts = {"mlp": casts_layer, "attn": attn.casts}
    else:
        top_acts = {"mlp": kept, "attn": kept - mlp.act}
        bottom_acts = {"mlp": layer_act - frozen_input, "attn": attn.act - frozen_input}
        top_casts = {"mlp": casts_all * st.in_flight - lm_head_cast, "attn": casts_all * st.in_flight
                     - lm_head_cast - mlp.casts}
    if st.in_flight > 1:  # other micro-batches' activations stay while the oldest one runs backward
        bottom_acts = {key: v + (st.in_flight - 1) * (st.layers * layer_act if s.recompute != "full"
                                                      else st.layers * checkpoint) for key, v in bottom_acts.items()}
    bottom_casts = {"mlp": casts_layer, "attn": attn.casts}
    for half, done_grads in (("mlp", 0), ("attn", mlp.grad)):
        moments.append(Moment("backward", f"top decoder layer, {half} backward", {
            **base,
            "gradients": head_grad + (done_grads // shard if k >= 2 else done_grads),
            "activations": top_acts[half] + saved_model_act,
            "autocast_copies": top_casts[half],
            "logits_and_loss": logits,
            "temporaries": halves[half].tmp + unsharded_layer_grads,
            "gathered_parameters": gathered_layers,
        }))
    for half, missing in (("mlp", per_layer_grad), ("attn", attn.grad)):
        moments.append(Moment("backward", f"first decoder layer, {half} backward", {
            **base,
            "gradients": (layers_grad - missing // shard + head_grad) if fsdp3 else
                         grad_bytes - embed_grad - missing // shard,
            "activations": bottom_acts[half] + saved_model_act,
            "autocast_copies": bottom_casts[half],
            "logits_and_loss": logits,
            "temporaries": halves[half].tmp + unsharded_layer_grads,
            "gathered_parameters": gathered_bottom,
        }))
    # backward (c): the embedding's gradient; with tied embeddings it is added into the
    # head's gradient, so for a moment both exist.
    if st.embed and fsdp3:
        # the root's post-backward: its parameters are resharded, its gradients copied into a
        # flat reduce-scatter input (root-sized) and out comes the shard; one vocabulary-sized
        # gradient is not yet freed.
        moments.append(Moment("backward", "end: the root's gradients reduce-scattered", {
            **base,
            "gradients": layers_grad + (gb_ * V * h // tp if full_ft else 0),
            "logits_and_loss": logits,
            "temporaries": root_grads + root_grads // dp,  # its parameters are resharded by now
        }))
    elif st.embed:
        moments.append(Moment("backward", "embedding backward", {
            **base,
            "gradients": grad_bytes,
            "logits_and_loss": logits,
            "temporaries": V * h // tp * gb_ if (full_ft and m.tie_word_embeddings and st.head) else 0,
            "gathered_parameters": head_param_bytes if k == 3 else 0,
        }))

    # optimizer step: everything persistent plus the optimizer's temporaries
    moments.append(Moment("optimizer", "optimizer.step()", {
        "parameters": param_step, "optimizer": state_bytes, "gradients": grad_bytes, "logits_and_loss": logits,
        "temporaries": opt_tmp,
    }))

    if s.offload != "none":  # gradients leave the GPU per bucket: never more than the bucket on it
        for mo in moments:
            if "gradients" in mo.parts:
                mo.parts["gradients"] = min(max(mo.parts["gradients"], 0), grad_bytes)

    counts = {"trainable": trainable, "param_bytes": param_rest, "grad_bytes": grad_bytes,
              "optimizer_bytes": state_bytes, "layer_activation_bytes": layer_act,
              "optimizer_temporary_bytes": opt_tmp, "adapter_params": trainable if not full_ft else 0,
              "param_bytes_unsharded": param_full, "grad_bytes_unsharded": grad_full,
              "optimizer_bytes_unsharded": state_full}
    return Estimate(s, moments, counts, layer, notes, host_bytes, nvme_bytes)


@dataclass(frozen=True)
class _Half:
    """One half of a decoder layer (attention or MLP) as its backward sees it."""

    act: int  # saved activations of this half
    grad: int  # gradient bytes of this half's trainable weights
    casts: int  # autocast 16-bit weight copies this half keeps
    tmp: int  # largest temporaries inside this half's backward


_ATTN_TENSORS = ("input_layernorm", "q_proj", "k_proj", "v_proj", "o_proj")


@lru_cache(maxsize=256)
def _half_weights(m: Model) -> dict[str, tuple[int, int, int]]:
    """Per decoder layer, for each half: (matmul weight elements, all elements, largest matmul weight)."""
    out = {}
    for half in ("attn", "mlp"):
        w = [t for t in m.tensors() if t.count == m.num_layers and t.kind != "embedding"
             and t.name.split(".")[0].startswith(_ATTN_TENSORS) == (half == "attn")
             and not t.name.startswith(("final", "lm_head"))]
        lin = [t.numel for t in w if t.kind == "linear"]
        out[half] = (sum(lin), sum(t.numel for t in w), max(lin))
    return out


def _layer_halves(m: Model, s: TrainingSetup, layer: act.Ledger, num: act.Numerics, pb: int,
                  full_ft: bool) -> dict[str, _Half]:
    L, tok, c = m.num_layers, s.tokens, num.compute
    out = {}
    for half in ("attn", "mlp"):
        is_attn = half == "attn"
        acts = sum(n for _, n, _ in (layer.items[:layer.split] if is_attn else layer.items[layer.split:]))
        if s.recompute == "selective":
            acts -= sum(n for k, n, _ in layer.items if k.startswith("eager.probs")) if is_attn else 0
        linear_whole, all_weights, largest_whole = _half_weights(m)[half]
        tp = s.tp
        # under tp the projections split (norms stay whole); activations were split by the caller
        linear, largest_linear = linear_whole // tp, largest_whole // tp
        if full_ft:
            trainable = all_weights - linear_whole + linear
        else:
            one_layer = _Stage("one layer", 1, 1, False, False)
            trainable = sum(t.numel for t, _ in _adapter_tensors(m, s, one_layer)
                            if (t.name.split(".")[0] in _ATTN_TENSORS) == is_attn)
        casts = 2 * (linear + (0 if full_ft else trainable)) if num.autocast else 0
        # Backward temporaries: gradients of the half's activations in flight, plus under
        # autocast the 16-bit weight gradient before it is added into the fp32 .grad.
        if is_attn:
            if s.attention == "sdpa":
                tmp = (c * (2 * m.q_size + 2 * m.kv_size) * tok + 4 * m.q_size * tok) // tp
            else:
                tmp = (c + 4 + 4) * m.num_heads * s.seq_len * s.seq_len * s.micro_batch // tp
                if s.recompute == "selective":  # the layer's probabilities are rebuilt for its backward
                    tmp += sum(n for k, n, _ in layer.items if k.startswith("eager.probs"))
        else:
            tmp = 3 * c * m.intermediate_size * tok // tp
        if num.autocast and full_ft:
            tmp += 2 * largest_linear
        out[half] = _Half(acts, trainable * pb, casts, tmp)
    return out


def _estimate_gpt(s: TrainingSetup) -> Estimate:
    """GPT-style models (LayerNorm, GELU MLP, dropout): Korthikanti et al. 2022 activations,
    16 bytes/param model states for mixed-precision AdamW (Rajbhandari et al. 2020, Sec. 3.1)."""
    m = s.model
    pb = PARAM_BYTES[s.precision]
    tensors = _state_tensors(m, s)
    grad_bytes = m.num_params * pb
    state = opt.state_bytes(s.optimizer, tensors, pb)
    layer_bytes = act.korthikanti_layer_bytes(s.seq_len, s.micro_batch, m.hidden_size, m.num_heads,
                                              recompute=s.recompute)
    if NUMERICS[s.precision].compute == 4:
        layer_bytes *= 2
    layer = act.Ledger()
    layer.add("korthikanti", layer_bytes, "s*b*h*(34 + 5*a*s/h), Korthikanti et al. 2022 eq. (1)")
    acts = layer_bytes * m.num_layers
    logits = 4 * m.vocab_size * s.tokens
    moments = [
        Moment("forward", "end of forward", {"parameters": m.num_params * pb, "optimizer": state,
                                             "activations": acts, "logits_and_loss": 2 * logits}),
        Moment("optimizer", "optimizer.step()", {"parameters": m.num_params * pb, "gradients": grad_bytes,
                                                 "optimizer": state}),
    ]
    counts = {"trainable": m.num_params, "param_bytes": m.num_params * pb, "grad_bytes": grad_bytes,
              "optimizer_bytes": state, "layer_activation_bytes": layer_bytes, "optimizer_temporary_bytes": 0,
              "adapter_params": 0}
    return Estimate(s, moments, counts, layer, ["GPT-style model: Korthikanti et al. 2022 activation formula"])
