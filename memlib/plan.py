"""Does it fit, and how? Search the ways to lay a model out on `count` GPUs.

plan() enumerates tensor parallel (within a node), pipeline parallel, ZeRO stage, offload,
recompute and precision; estimates each per-GPU peak, checks it with fits(), times it
with step_time(), and returns the feasible layouts ranked by estimated tokens/s per GPU,
plus every infeasible one with the reason it fails.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memlib._checks import choice, positive_int
from memlib.fit import Verdict, fits
from memlib.gpus import get_gpu
from memlib.models import get_model
from memlib.timing import StepTime, step_time
from memlib.training import Estimate, estimate_training
from memlib.units import gib

TASKS = ("full", "lora", "qlora")


@dataclass
class Plan:
    """One layout: the estimate_training keyword arguments and what they give."""

    settings: dict
    estimate: Estimate
    verdict: Verdict
    time: StepTime | None = None

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return self.time.tokens_per_s_per_gpu if self.time else 0.0

    def describe(self) -> str:
        s = self.settings
        if s.get("finetune") == "qlora" and (s["dp"] > 1 or s["pp"] > 1):
            n = s["dp"] * s["pp"]
            how = {"device_map": f"device_map over {n} GPUs (one busy at a time)",
                   "fsdp": f"FSDP-QLoRA over {n} GPUs"}.get(self.estimate.setup.sharding,
                                                           f"{n} DDP replicas")
            return ", ".join([how, s["precision"], f"recompute {s['recompute']}", f"micro-batch {s['micro_batch']}"])
        bits = [f"dp={s['dp']}", f"tp={s['tp']}", f"pp={s['pp']}"]
        if s["zero_stage"]:
            bits.append(f"ZeRO-{s['zero_stage']}" if isinstance(s["zero_stage"], int) else str(s["zero_stage"]))
        if s["offload"] != "none":
            bits.append(f"offload {s['offload']}")
        bits += [s["precision"], f"recompute {s['recompute']}", f"micro-batch {s['micro_batch']}"]
        return ", ".join(bits)


@dataclass
class PlanResult:
    model: str
    gpu: str
    count: int
    task: str
    feasible: list[Plan] = field(default_factory=list)
    infeasible: list[tuple[dict, str]] = field(default_factory=list)

    @property
    def best(self) -> Plan | None:
        return self.feasible[0] if self.feasible else None

    def to_dict(self, top: int = 10) -> dict:
        return {
            "model": self.model, "gpu": self.gpu, "count": self.count, "task": self.task,
            "feasible": [{"settings": p.settings, "peak_bytes": p.estimate.peak_bytes,
                          "margin_bytes": p.verdict.margin_bytes, "tokens_per_s_per_gpu": p.tokens_per_s_per_gpu,
                          "step_s": p.time.step_s if p.time else None, "host_bytes": p.estimate.host_bytes,
                          "nvme_bytes": p.estimate.nvme_bytes} for p in self.feasible[:top]],
            "infeasible": [{"settings": s, "reason": r} for s, r in self.infeasible],
        }


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _qlora_layouts(model, count, seq_len, micro_batch, grad_accum, precisions, recomputes):
    """QLoRA on `count` GPUs: DDP replicas (each GPU the whole 4-bit model), the 4-bit layers split over
    the GPUs device_map style (transformers' device_map="auto", as the QLoRA reference code loads it),
    or FSDP-QLoRA (the 4-bit base in a 16-bit quant_storage, sharded: AnswerDotAI/fsdp_qlora)."""
    shapes = [dict(dp=count, pp=1, zero_stage=0)]
    if count > 1:
        if count <= model.num_layers:
            shapes.append(dict(dp=1, pp=count, zero_stage=0))
        shapes.append(dict(dp=count, pp=1, zero_stage="FULL_SHARD"))
    for shape in shapes:
        for precision in precisions:
            for recompute in recomputes:
                yield dict(seq_len=seq_len, micro_batch=micro_batch, grad_accum=grad_accum, precision=precision,
                           recompute=recompute, tp=1, offload="none", finetune="qlora", **shape)


def _layouts(model, gpu, count, task, seq_len, micro_batch, grad_accum, precisions, recomputes, allow_offload,
             gpus_per_node):
    if task == "qlora":
        yield from _qlora_layouts(model, count, seq_len, micro_batch, grad_accum, precisions, recomputes)
        return
    for tp in _divisors(count):
        if tp > gpus_per_node or model.num_heads % tp or model.num_kv_heads % tp or model.intermediate_size % tp:
            continue
        for pp in _divisors(count // tp):
            if pp > model.num_layers:
                continue
            dp = count // (tp * pp)
            stages = [0, 1, 2, 3] if dp > 1 else [0]
            for zero in stages:
                if pp > 1 and zero >= 2:
                    continue  # DeepSpeed's pipeline engine allows ZeRO-1 at most
                offloads = ["none"]
                if allow_offload and task == "full" and pp == 1:
                    offloads += ["optimizer"] if zero >= 1 or dp == 1 else []
                    offloads += ["optimizer+params"] if zero == 3 or dp == 1 else []
                for offload in offloads:
                    z = zero
                    if offload != "none" and z == 0:
                        z = 3 if offload == "optimizer+params" else 2  # ZeRO-Offload needs a ZeRO stage
                    for precision in precisions:
                        for recompute in recomputes:
                            yield dict(seq_len=seq_len, micro_batch=micro_batch, grad_accum=grad_accum,
                                       precision=precision, recompute=recompute, zero_stage=z, dp=dp, tp=tp,
                                       pp=pp, offload=offload, finetune=task)


def plan(model, gpu, count: int, task: str = "full", seq_len: int = 2048, micro_batch: int = 1,
         grad_accum: int = 8, precisions=None, recomputes=("none", "full"), allow_offload: bool = True,
         gpus_per_node: int = 8, mfu: float = 0.4, host_bytes_per_node: int | None = None,
         **estimate_kw) -> PlanResult:
    """Feasible layouts of `model` on `count` GPUs of one kind, best estimated throughput first.

    task: "full" | "lora" | "qlora" (training). For serving see memlib.max_batch/max_context.
    precisions defaults to bf16-mixed (fp16-mixed where the GPU has no bf16); extra keyword
    arguments (optimizer=, lora_rank=, lora_targets=, attention=) pass to estimate_training.
    host_bytes_per_node: host RAM of one node; offload layouts that need more are infeasible
    (None: not checked, but every plan reports its host bytes).
    """
    model = get_model(model)
    g = get_gpu(gpu)
    count = positive_int("count", count)
    choice("task", task, TASKS)
    if precisions is None:
        precisions = ("bf16-mixed",) if g.supports_bf16 else ("fp16-mixed",)
    result = PlanResult(model.name, g.name, count, task)
    for settings in _layouts(model, g, count, task, seq_len, micro_batch, grad_accum, precisions, recomputes,
                             allow_offload, gpus_per_node):
        settings = {**settings, **estimate_kw}  # every option, so the plan can be re-estimated as is
        try:
            est = estimate_training(model, **settings)
        except ValueError as e:
            result.infeasible.append((settings, f"invalid: {e}"))
            continue
        v = fits(est, g)
        if not v.fits:
            part, nbytes = max(est.breakdown.items(), key=lambda kv: kv[1])
            result.infeasible.append((settings, f"needs {gib(v.required_bytes):.1f} GiB per GPU of "
                                      f"{gib(v.capacity_bytes):.1f} GiB (peak in {est.phase}; largest part "
                                      f"{part} {gib(nbytes):.1f} GiB)"))
            continue
        if host_bytes_per_node is not None:
            host = est.host_bytes * min(count, gpus_per_node)
            if host > host_bytes_per_node:
                result.infeasible.append((settings, f"needs {gib(host):.0f} GiB of host RAM per node for offload, "
                                          f"more than {gib(host_bytes_per_node):.0f} GiB"))
                continue
        try:
            t = step_time(est, g, mfu=mfu, gpus_per_node=gpus_per_node)
        except ValueError:
            t = None
        result.feasible.append(Plan(settings, est, v, t))
    result.feasible.sort(key=lambda p: (-p.tokens_per_s_per_gpu, -p.verdict.margin_bytes))
    return result


def min_gpus(model, gpu, task: str = "full", max_count: int = 4096, allow_offload: bool = False,
             **plan_kw) -> PlanResult | None:
    """The fewest GPUs of one kind with a feasible plan (counts 1-8, then multiples of 8 by bisection).

    Offload is off by default: with it almost anything "fits" one GPU if the host has terabytes.
    """
    plan_kw["allow_offload"] = allow_offload
    candidates = list(range(1, 9))
    n = 16
    while n <= max_count:
        candidates.append(n)
        n *= 2
    for i, count in enumerate(candidates):
        r = plan(model, gpu, count, task, **plan_kw)
        if r.feasible:
            if count > 8:  # bisect multiples of 8 between the last failure and this success
                lo, hi, best = candidates[i - 1], count, r
                while hi - lo > 8:
                    mid = (lo + hi) // 2 // 8 * 8
                    rm = plan(model, gpu, mid, task, **plan_kw)
                    if rm.feasible:
                        hi, best = mid, rm
                    else:
                        lo = mid
                return best
            return r
    return None


def _largest(check, start: int, limit: int) -> int:
    """Largest n in [1, limit] with check(n) true, assuming monotone; 0 if none."""
    if not check(1):
        return 0
    lo, hi = 1, 2
    while hi <= limit and check(hi):
        lo, hi = hi, hi * 2
    hi = min(hi, limit + 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if check(mid):
            lo = mid
        else:
            hi = mid
    return lo


def max_micro_batch(plan_: Plan, gpu, limit: int = 4096) -> int:
    """Largest micro-batch that still fits the plan's GPU (0 if none)."""
    s = plan_.settings
    model = plan_.estimate.setup.model
    return _largest(lambda b: fits(estimate_training(model, **{**s, "micro_batch": b}), gpu).fits, 1, limit)


def max_seq_len(plan_: Plan, gpu, limit: int | None = None) -> int:
    """Longest sequence that still fits the plan's GPU (0 if none)."""
    s = plan_.settings
    model = plan_.estimate.setup.model
    limit = limit or 1 << 20
    return _largest(lambda n: fits(estimate_training(model, **{**s, "seq_len": n}), gpu).fits, 1, limit)


def to_deepspeed_config(plan_: Plan) -> dict:
    """The DeepSpeed JSON (as a dict) for a plan: precision, ZeRO stage and offload, batch sizes.

    Tensor and pipeline parallel degrees are not DeepSpeed config keys (Megatron's
    --tensor-model-parallel-size, DeepSpeed's PipelineModule(num_stages=...)); activation
    recompute is the model's gradient_checkpointing. Keys follow DeepSpeed's config docs.
    """
    s = plan_.settings
    if plan_.estimate.setup.sharding == "fsdp":
        raise ValueError("this plan uses FSDP, not DeepSpeed")
    if plan_.estimate.setup.sharding == "device_map":
        raise ValueError("this plan splits the model with transformers' device_map, not DeepSpeed")
    cfg: dict = {
        "train_micro_batch_size_per_gpu": s["micro_batch"],
        "gradient_accumulation_steps": s["grad_accum"],
        "train_batch_size": s["micro_batch"] * s["grad_accum"] * s["dp"],
        "gradient_clipping": 1.0,
    }
    if s["precision"].startswith("bf16"):
        cfg["bf16"] = {"enabled": True}
    elif s["precision"].startswith("fp16"):
        cfg["fp16"] = {"enabled": True, "loss_scale": 0, "initial_scale_power": 16}
    zero: dict = {"stage": s["zero_stage"]}
    if s["offload"] != "none":
        device = plan_.estimate.setup.offload_device
        target = {"device": device, "pin_memory": True}
        if device == "nvme":
            target["nvme_path"] = "/local_nvme"
        zero["offload_optimizer"] = dict(target)
        if s["offload"] == "optimizer+params":
            zero["offload_param"] = dict(target)
    if s["zero_stage"] >= 2:
        zero.update({"overlap_comm": True, "contiguous_gradients": True})
    cfg["zero_optimization"] = zero
    return cfg
