"""The options of estimate_training, checked once: TrainingSetup is what every term reads.

Bad input is a ValueError naming the argument, the value and what is accepted; an option
that does not apply to the chosen setup is an error too (never silently ignored).
"""

from __future__ import annotations

from dataclasses import dataclass

from memlib import lora as lora_mod
from memlib import optimizers as opt
from memlib._checks import choice, positive_int
from memlib.models import Model, get_model

PRECISIONS = ("fp32", "bf16", "fp16", "bf16-mixed", "fp16-mixed")
FINETUNES = ("full", "lora", "qlora")
RECOMPUTES = ("none", "selective", "full")
ATTENTIONS = ("sdpa", "eager")
OFFLOADS = ("none", "optimizer", "optimizer+params")
OFFLOAD_DEVICES = ("cpu", "nvme")
# FSDP's sharding strategies, accepted as zero_stage, mean PyTorch's layout (parameters,
# gradients and AdamW states in the parameter dtype; AMP keeps them fp32).
FSDP_ALIASES = {"FULL_SHARD": 3, "SHARD_GRAD_OP": 2, "NO_SHARD": 0}


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
    sharding: str = "none"  # "none" | "deepspeed" | "fsdp" | "megatron": whose memory layout applies

    @property
    def tokens(self) -> int:
        return self.seq_len * self.micro_batch


def check_setup(model, seq_len, micro_batch, precision, optimizer, finetune, lora_rank, lora_targets,
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
