"""What an estimate is: the moments of a step, each a breakdown of what is alive then."""

from __future__ import annotations

from dataclasses import dataclass, field

from memlib._checks import flag, show
from memlib.training import activations as act
from memlib.training.options import TrainingSetup
from memlib.units import fmt_bytes

BREAKDOWN_KEYS = ("parameters", "gradients", "optimizer", "activations", "autocast_copies", "logits_and_loss",
                  "previous_output", "temporaries", "gathered_parameters")


@dataclass
class Moment:
    """What is alive at one moment of the step: bytes per category."""

    name: str
    where: str
    parts: dict[str, int]
    # of total, bytes that exist only after the first optimizer step (states created lazily, the previous step's
    # output): the first iteration's moment lacks them (terms.first_step_optimizer_state_bytes)
    lazy_bytes: int = 0

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
    terms: list = field(default_factory=list)  # [Term]: the named terms the moments were built from
    # [(label, layers of that kind on this GPU, Ledger)] when layers differ (MoE/dense, sliding/full); else []
    layer_kinds: list = field(default_factory=list)
    stage: str = ""  # pp > 1: the pipeline stage (device_map: the GPU) whose peak this is, the heaviest; else ""
    # freed blocks another CUDA stream may still read (record_stream): active, not allocated (e.g.
    # terms.deepspeed_stream_held_grad_bytes); an upper bound, reached when communication lags the compute
    stream_held_bytes: int = 0
    stage_names: list = field(default_factory=list)  # pp > 1: the stages evaluated, first to last; else []

    @property
    def peak_moment(self) -> Moment:
        return max(self.moments, key=lambda m: m.total)

    @property
    def peak_bytes(self) -> int:
        """Allocated bytes at the peak, on one GPU."""
        return self.peak_moment.total

    @property
    def active_peak_bytes(self) -> int:
        """The allocator's active bytes at most (torch.cuda.memory_stats()['active_bytes.all.peak']): the allocated
        peak plus blocks freed while another stream may still use them. Those are released before an
        out-of-memory error, so fits() goes by peak_bytes; active_peak_bytes is what the active and reserved
        counters (and nvidia-smi) can show."""
        return self.peak_bytes + self.stream_held_bytes

    @property
    def first_iteration_peak_bytes(self) -> int:
        """Allocated bytes at the first iteration's peak: its forward and backward run before the optimizer has
        created its states (terms.first_step_optimizer_state_bytes) and without a previous step's output. What
        max_memory_allocated() shows after one step, e.g. Megatron's "(after 1 iterations) memory (MB)" line;
        later steps reach peak_bytes, which is what has to fit."""
        return max(m.total - m.lazy_bytes for m in self.moments)

    def stage_peak_bytes(self, stage: str = "last", first_iteration: bool = False) -> int:
        """The peak on one pipeline stage's GPU: stage "first", "last" or one of stage_names (peak_bytes is the
        heaviest stage's). Megatron-LM logs its memory scalars on the last rank only (training/global_vars.py
        _set_tensorboard_writer), so a Megatron log quotes the last stage. first_iteration: that stage's
        first_iteration_peak_bytes. Without pipeline parallelism every GPU is alike: the whole estimate's."""
        first_iteration = flag("first_iteration", first_iteration)
        if not self.stage_names:
            moments = self.moments
        else:
            if not isinstance(stage, str):
                raise ValueError(f"stage must be 'first', 'last' or one of {self.stage_names}, got {show(stage)}")
            name = {"first": self.stage_names[0], "last": self.stage_names[-1]}.get(stage, stage)
            if name not in self.stage_names:
                raise ValueError(f"unknown stage {stage!r}; accepted: 'first', 'last' or one of {self.stage_names}")
            moments = [m for m in self.moments if m.where.startswith(name + ": ")]
        return max(m.total - (m.lazy_bytes if first_iteration else 0) for m in moments)

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
            "peak_bytes": self.peak_bytes, "active_peak_bytes": self.active_peak_bytes,
            "first_iteration_peak_bytes": self.first_iteration_peak_bytes, "phase": self.phase,
            "breakdown": self.breakdown,
            "moments": {name: max(m.total for m in self.moments if m.name == name)
                        for name in ("forward", "backward", "optimizer") if any(m.name == name for m in self.moments)},
            "zero_stage": s.zero_stage, "sharding": s.sharding, "dp": s.dp, "tp": s.tp, "pp": s.pp,
            "offload": s.offload, "host_bytes": self.host_bytes, "nvme_bytes": self.nvme_bytes,
            "grad_accum": s.grad_accum, "optimizer_impl": s.optimizer_impl, "loss": s.loss, "loss_dtype": s.loss_dtype,
            "lora_head": s.lora_head if s.finetune != "full" else None,
            "activation_offload": s.activation_offload, "lora_dropout": s.lora_dropout,
            "adapter_dtype": s.adapter_dtype if s.finetune != "full" else None,
            "base_dtype": s.base_dtype if s.finetune != "full" else None,
            "qlora_backend": s.qlora_backend if s.finetune == "qlora" else None,
            "double_quant": s.double_quant if s.finetune == "qlora" else None,
            "terms": {t.name: t.nbytes for t in self.terms},
            **({"gradient_as_bucket_view": s.gradient_as_bucket_view} if s.ddp else {}),
            **({"stage": self.stage, "stage_peaks": {n: self.stage_peak_bytes(n) for n in self.stage_names}}
               if s.pp > 1 else {}),
            **({"cp": s.cp, "cp_rotate": s.cp_rotate, "tokens_per_gpu": s.tokens_per_gpu} if s.cp > 1 else {}),
            **({"ep": s.ep, "etp": s.expert_tp, "router_aux_loss": s.router_aux_loss, "capacity_factor": s.capacity_factor,
                "routed_rows": self.counts.get("routed_rows", 0)} if s.model.is_moe else {}),
        }

    def explain(self) -> str:
        from memlib.training.explain import explain_training
        return explain_training(self)

    def __repr__(self) -> str:
        return (f"Estimate({self.setup.model.name}: peak {fmt_bytes(self.peak_bytes)} during {self.phase}; "
                + ", ".join(f"{k} {v / 1e9:.2f} GB" for k, v in self.breakdown.items() if v) + ")")
