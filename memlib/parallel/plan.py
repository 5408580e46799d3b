"""Does it fit, and how? Search the ways to lay a model out on `count` GPUs.

plan() enumerates tensor parallel (within a node), pipeline parallel, ZeRO stage, offload,
recompute, precision and, for a mixture of experts, expert parallelism; estimates each per-GPU
peak, checks it with fits(), times it with step_time(), and returns the feasible layouts ranked
by estimated tokens/s per GPU, plus every infeasible one with the reason it fails.

plan_serving() does the same for inference: tensor/expert-parallel layouts and weight formats,
each with its per-GPU weights, KV cache and the largest batch at a context length.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

from memlib import training
from memlib._checks import choice, choices, flag, positive_int, show, plain_args
from memlib.hardware.fit import DEFAULT_ALLOCATOR_HEADROOM, Verdict, check_allocator_headroom, fits
from memlib.hardware.gpus import get_gpu
from memlib.serving.engines import DEFAULT_ENGINE, ENGINES, kv_formats
from memlib.serving.inference import AUTO, KV_FORMATS, MLA_CACHES, WEIGHT_FORMATS, Limit, estimate_inference, max_batch
from memlib.models import Model, get_model
from memlib.cost.timing import INTERNODE_BYTES_PER_S, StepTime, step_time, utilisation
from memlib.training import Estimate, estimate_training
from memlib.units import gib

TASKS = ("full", "lora", "qlora")
_DEFAULT = training.option_table.defaults()  # seq_len and micro_batch: estimate_training's (the option table's)
# estimate_training options the search itself sets for every layout: not extra keywords.
_SEARCHED = ("seq_len", "micro_batch", "grad_accum", "precision", "recompute", "zero_stage", "dp", "tp", "pp",
             "offload", "finetune", "ep", "cp")


@dataclass
class Plan:
    """One layout: the estimate_training keyword arguments and what they give."""

    settings: dict
    estimate: Estimate
    verdict: Verdict
    time: StepTime | None = None

    @property
    def tokens_per_s_per_gpu(self) -> float:
        """0.0 when the plan has no time (fp32 without peak_tflops): it ranks last, and to_dict() says None."""
        return self.time.tokens_per_s_per_gpu if self.time else 0.0

    def describe(self) -> str:
        s = self.settings
        if s.get("finetune") == "qlora" and (s["dp"] > 1 or s["pp"] > 1):
            n = s["dp"] * s["pp"]
            how = {"device_map": f"device_map over {n} GPUs (one busy at a time)",
                   "fsdp": f"FSDP-QLoRA over {n} GPUs" + (" with CPU offload" if s["offload"] != "none" else "")
                   }.get(self.estimate.setup.sharding,
                                                           f"{n} DDP replicas")
            return ", ".join([how, s["precision"], f"recompute {s['recompute']}", f"micro-batch {s['micro_batch']}"])
        bits = [f"dp={s['dp']}", f"tp={s['tp']}", f"pp={s['pp']}"] + ([f"ep={s['ep']}"] if s.get("ep", 1) > 1 else [])
        bits += [f"cp={s['cp']}"] if s.get("cp", 1) > 1 else []
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
    notes: list[str] = field(default_factory=list)  # what the search kept fixed and why (a recipe's sharding)

    @property
    def best(self) -> Plan | None:
        return self.feasible[0] if self.feasible else None

    def to_dict(self, top: int = 10) -> dict:
        top = positive_int("top", top, allow_zero=True)
        return {
            "model": self.model, "gpu": self.gpu, "count": self.count, "task": self.task,
            "feasible": [{"settings": _jsonable(p.settings), "peak_bytes": p.estimate.peak_bytes,
                          "margin_bytes": p.verdict.margin_bytes, "tokens_per_s_per_gpu": p.tokens_per_s_per_gpu if p.time else None,
                          "step_s": p.time.step_s if p.time else None, "host_bytes": p.estimate.host_bytes,
                          "nvme_bytes": p.estimate.nvme_bytes} for p in self.feasible[:top]],
            "infeasible": [{"settings": _jsonable(s), "reason": r} for s, r in self.infeasible],
            **({"notes": list(self.notes)} if self.notes else {}),
        }


def _jsonable(settings: dict) -> dict:
    """Settings as JSON gives them back (tuples as lists), so to_dict() round-trips."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in settings.items()}


def _divisors(n: int, limit: int) -> list[int]:
    """Divisors of n up to `limit` (never a loop to n: plan(count=10**9) must not hang)."""
    return [d for d in range(1, min(n, limit) + 1) if n % d == 0]


def _qlora_layouts(model, count, seq_len, micro_batch, grad_accum, precisions, recomputes, allow_offload=False):
    """QLoRA on `count` GPUs: DDP replicas (each GPU the whole 4-bit model), the 4-bit layers split over
    the GPUs device_map style (transformers' device_map="auto", as the QLoRA reference code loads it),
    or FSDP-QLoRA (the 4-bit base in a 16-bit quant_storage, sharded: AnswerDotAI/fsdp_qlora), with FSDP's CPU
    offload where offload is allowed (how fsdp_qlora trains Llama-2-70B on two 24 GB cards)."""
    shapes = [dict(dp=count, pp=1, zero_stage=0, offload="none")]
    if count > 1:
        if count <= model.num_layers:
            shapes.append(dict(dp=1, pp=count, zero_stage=0, offload="none"))
        shapes.append(dict(dp=count, pp=1, zero_stage="FULL_SHARD", offload="none"))
    if allow_offload:
        shapes.append(dict(dp=count, pp=1, zero_stage="FULL_SHARD", offload="optimizer+params"))
    for shape in shapes:
        for precision in precisions:
            for recompute in recomputes:
                yield dict(seq_len=seq_len, micro_batch=micro_batch, grad_accum=grad_accum, precision=precision,
                           recompute=recompute, tp=1, finetune="qlora", **shape)


def _tp_ok(model: Model, tp: int) -> bool:
    """Can Megatron split this model over tp GPUs (whole heads; the dense, expert and shared MLP widths)?"""
    widths = [model.num_heads, model.num_kv_heads]
    widths += [model.intermediate_size] if model.num_dense_layers else []
    widths += [w for w in (model.moe_intermediate_size, model.shared_expert_intermediate_size) if w]
    return not any(w % tp for w in widths)


def _ep_choices(model: Model, dp: int) -> list[int]:
    """Expert-parallel degrees for a MoE model over dp data-parallel GPUs: 1 and every degree dividing both dp and
    the number of experts (the expert-parallel group is carved out of the data-parallel group)."""
    if not model.is_moe:
        return [1]
    return [e for e in _divisors(dp, min(dp, model.num_experts)) if model.num_experts % e == 0]


def _cp_layouts(model, count, task, seq_len, micro_batch, grad_accum, precisions, recomputes, cps, gpus_per_node):
    """Context-parallel layouts (cp > 1 from `cps`): tp within a node, then cp x dp over the rest, the model states
    sharded by FSDP over dp x cp (torchtitan's layout) or replicated, no pipeline, no offload."""
    for tp in _divisors(count, min(gpus_per_node, model.num_heads)):
        if not _tp_ok(model, tp):
            continue
        for cp in cps:
            if cp == 1 or (count // tp) % cp:
                continue
            dp = count // (tp * cp)
            for zero in ("FULL_SHARD", 0):
                for precision in precisions:
                    for recompute in recomputes:
                        yield dict(seq_len=seq_len, micro_batch=micro_batch, grad_accum=grad_accum,
                                   precision=precision, recompute=recompute, zero_stage=zero, dp=dp, tp=tp, pp=1,
                                   offload="none", finetune=task, cp=cp)


def _layouts(model, gpu, count, task, seq_len, micro_batch, grad_accum, precisions, recomputes, allow_offload,
             gpus_per_node, cps=(1,)):
    if task == "qlora":
        yield from _qlora_layouts(model, count, seq_len, micro_batch, grad_accum, precisions, recomputes,
                                  allow_offload)
        return
    yield from _cp_layouts(model, count, task, seq_len, micro_batch, grad_accum, precisions, recomputes, cps,
                           gpus_per_node)
    if 1 not in cps:
        return
    for tp in _divisors(count, min(gpus_per_node, model.num_heads)):
        if tp > gpus_per_node or not _tp_ok(model, tp):
            continue
        for pp in _divisors(count // tp, model.num_layers):
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
                    for ep in _ep_choices(model, dp) if task == "full" else [1]:
                        for precision in precisions:
                            for recompute in recomputes:
                                extra = {"ep": ep} if ep > 1 else {}
                                yield dict(seq_len=seq_len, micro_batch=micro_batch, grad_accum=grad_accum,
                                           precision=precision, recompute=recompute, zero_stage=z, dp=dp, tp=tp,
                                           pp=pp, offload=offload, finetune=task, **extra)


@plain_args
def plan(model, gpu, count: int, task: str = "full", seq_len: int = _DEFAULT["seq_len"],
         micro_batch: int = _DEFAULT["micro_batch"],
         grad_accum: int = 8, precisions=None, recomputes=None, allow_offload: bool = True,
         gpus_per_node: int = 8, mfu: float | None = None, host_bytes_per_node: int | None = None,
         peak_tflops: float | None = None, internode_bytes_per_s: float = INTERNODE_BYTES_PER_S, cps=(1,),
         allocator_headroom: float = DEFAULT_ALLOCATOR_HEADROOM, *, hfu: float | None = None,
         **estimate_kw) -> PlanResult:
    """Feasible layouts of `model` on `count` GPUs of one kind, best estimated throughput first.

    task: "full" | "lora" | "qlora" (training). For serving see plan_serving() (and memlib.max_batch/max_context).
    A mixture of experts is also laid out with expert parallelism: ep from 1 to every degree dividing both dp
    and its number of experts (estimate_training's ep; step_time's all-to-alls).
    precisions defaults to bf16-mixed (fp16-mixed where the GPU has no bf16), recomputes to ("none", "full"); extra
    keyword arguments (optimizer=, lora_rank=, lora_targets=, attention=, recipe=) pass to estimate_training.
    recipe=: the preset's own sharding, precision and recompute are kept by the search (torchtitan's FSDP
    FULL_SHARD is not replaced by DeepSpeed's ZeRO stages), said in PlanResult.notes; precisions= and recomputes=
    given explicitly still search those.
    host_bytes_per_node: host RAM of one node; offload layouts that need more are infeasible
    (None: not checked, but every plan reports its host bytes). peak_tflops goes to step_time;
    the catalog has no fp32 throughput, so without it fp32 layouts are checked for memory only,
    untimed (Plan.time None) and ranked after the timed ones. internode_bytes_per_s goes to step_time:
    each GPU's link beyond its node (default one 200 Gb/s port, 25e9 B/s; 400 Gb/s per GPU is 50e9),
    which decides how much data-parallel traffic a layout exposes, and so how the layouts rank.
    cps: context-parallel degrees to try (default (1,): none). Each cp > 1 dividing count / tp is laid out as
    torchtitan does: dp x cp x tp GPUs, FSDP over dp x cp (or replicas), no pipeline or offload; seq_len must be
    divisible by 2 x cp (estimate_training's cp). Leave 1 in to compare with the layouts without it.
    allocator_headroom goes to fits() (default 5% of the peak; published FSDP runs reserve up to 24% more than
    they allocate, memlib.hardware.fit's docstring: pass 0.25 there to plan with that margin).
    mfu / hfu go to step_time (PaLM's definitions, Chowdhery et al. 2022, App. B): hfu=x runs every FLOP a
    layout executes, its recomputed forward included, at x of the peak, so recompute costs its time (neither
    given: hfu=0.4); mfu=x gives every layout the same model-FLOPs utilisation, and a recompute layout that
    would need more than the peak for it (HFU > 1) is listed as infeasible.
    Invalid options are a ValueError here, before the search, not a list of "invalid" layouts.
    """
    allow_offload = flag("allow_offload", allow_offload)
    model = get_model(model) if isinstance(model, str) else model
    if not isinstance(model, Model):
        raise ValueError(f"model must be a catalog name or a memlib.Model, got {show(model)}")
    g = get_gpu(gpu)
    count = positive_int("count", count)
    if task == "serve":
        raise ValueError("plan() lays out training; for serving call memlib.parallel.plan.plan_serving(model, gpu, count, "
                         "context_len=...) (CLI: memlib fit MODEL --gpu G --count N --task serve)")
    choice("task", task, TASKS)
    precisions, recomputes, pins, notes = _recipe_pins(estimate_kw.get("recipe"), task, precisions, recomputes)
    if precisions is None:
        precisions = ("bf16-mixed",) if g.supports_bf16 else ("fp16-mixed",)
    precisions, recomputes, estimate_kw = _check_plan_options(
        model, g, task, seq_len, micro_batch, grad_accum, precisions, recomputes, allow_offload, gpus_per_node,
        (mfu, hfu), host_bytes_per_node, peak_tflops, internode_bytes_per_s, estimate_kw)
    cps = _check_cps(cps, seq_len, task)
    allocator_headroom = check_allocator_headroom(allocator_headroom)
    result = PlanResult(model.name, g.name, count, task, notes=notes)
    for settings in _pinned(_layouts(model, g, count, task, seq_len, micro_batch, grad_accum, precisions, recomputes,
                                     allow_offload, gpus_per_node, cps), pins):
        settings = {**settings, **estimate_kw}  # every option, so the plan can be re-estimated as is
        if settings["offload"] == "none":
            settings.pop("offload_device", None)  # where the offload goes: offload layouts only
        if settings["tp"] == 1:
            settings.pop("sequence_parallel", None)  # shards the tensor-parallel group: tp > 1 only
        plan_or_why = _evaluate(model, g, count, settings, allocator_headroom, host_bytes_per_node, gpus_per_node,
                                (mfu, hfu), peak_tflops, internode_bytes_per_s)
        if isinstance(plan_or_why, Plan):
            result.feasible.append(plan_or_why)
        else:
            result.infeasible.append((settings, plan_or_why))
    if result.infeasible and not result.feasible and all(why.startswith("invalid: ") for _, why in result.infeasible):
        # not one layout could even be estimated: that is bad input, not "nothing fits"
        raise ValueError(f"no layout of {model.name} on {count} GPUs can be estimated; the first: "
                         f"{result.infeasible[0][1][len('invalid: '):]}")
    result.feasible.sort(key=lambda p: (-p.tokens_per_s_per_gpu, -p.verdict.margin_bytes))
    return result


def _recipe_pins(recipe, task, precisions, recomputes) -> tuple:
    """What a recipe preset fixes in the search: its sharding (zero_stage) always, its precision and recompute
    unless precisions= / recomputes= are given. Returns (precisions, recomputes, {option: value} kept on every
    layout, notes)."""
    if recipe is None or not isinstance(recipe, str) or recipe not in training.RECIPES:
        return precisions, recomputes or ("none", "full"), {}, []  # a bad recipe is refused by the option check
    preset = training.RECIPES[recipe].applied(task)
    pins = {k: preset[k] for k in ("zero_stage", "layout") if k in preset}
    if precisions is None and "precision" in preset:
        precisions = (preset["precision"],)
    if recomputes is None and "recompute" in preset:
        recomputes = (preset["recompute"],)
    kept = {**pins, **({"precision": precisions[0]} if "precision" in preset and precisions == (preset["precision"],)
                       else {}), **({"recompute": recomputes[0]} if recomputes == (preset.get("recompute"),) else {})}
    notes = [f"recipe {recipe!r} keeps " + ", ".join(f"{k}={v!r}" for k, v in kept.items()) + " on every layout "
             "(the framework's own; pass precisions= or recomputes= to search those)"] if kept else []
    return precisions, recomputes or ("none", "full"), pins, notes


def _pinned(layouts, pins: dict):
    """The layouts with a recipe's sharding kept: its zero_stage on every one (an offload layout only where that
    stage takes the offload: DeepSpeed's ZeRO-Offload from stage 1, ZeRO-Infinity and FSDP's CPU offload at stage 3),
    each layout once."""
    if not pins:
        yield from layouts
        return
    stage = pins.get("zero_stage")
    number = training.FSDP_ALIASES.get(stage, stage) if isinstance(stage, str) else stage
    seen = set()
    for s in layouts:
        if stage is not None:
            if s["offload"] == "optimizer+params" and number != 3:
                continue
            if s["offload"] == "optimizer" and (number == 0 or isinstance(stage, str)):
                continue
            s = {**s, "zero_stage": stage}
        key = tuple(sorted((k, repr(v)) for k, v in s.items()))
        if key not in seen:
            seen.add(key)
            yield s


def _evaluate(model, g, count, settings, allocator_headroom, host_bytes_per_node, gpus_per_node, rates, peak_tflops,
              internode_bytes_per_s):
    """One layout of plan(): its Plan, or why it is infeasible (a string; "invalid: ..." when it cannot be
    estimated)."""
    mfu, hfu = rates
    try:
        est = estimate_training(model, **settings)
    except ValueError as e:
        return f"invalid: {e}"
    v = fits(est, g, allocator_headroom=allocator_headroom)
    if not v.fits:
        part, nbytes = max(est.breakdown.items(), key=lambda kv: kv[1])
        return (f"needs {gib(v.required_bytes):.1f} GiB per GPU of {gib(v.capacity_bytes):.1f} GiB (peak in "
                f"{est.phase}; largest part {part} {gib(nbytes):.1f} GiB)")
    if host_bytes_per_node is not None:
        host = est.host_bytes * min(count, gpus_per_node)
        if host > host_bytes_per_node:
            return (f"needs {gib(host):.0f} GiB of host RAM per node for offload, more than "
                    f"{gib(host_bytes_per_node):.0f} GiB")
    # the options were checked against step_time up front: an error here is a bug, not a 0 tokens/s plan,
    # except an mfu= that this layout's recompute cannot reach (HFU > 1): that layout is infeasible at it
    try:
        t = None if _untimed(settings["precision"], peak_tflops) else \
            step_time(est, g, mfu=mfu, gpus_per_node=gpus_per_node, peak_tflops=peak_tflops,
                      internode_bytes_per_s=internode_bytes_per_s, hfu=hfu)
    except ValueError as e:
        if mfu is None or "not reachable" not in str(e):
            raise
        return f"recompute {settings['recompute']} cannot reach {mfu:.0%} MFU: {e}"
    return Plan(settings, est, v, t)


def _check_plan_options(model, g, task, seq_len, micro_batch, grad_accum, precisions, recomputes, allow_offload,
                        gpus_per_node, rates, host_bytes_per_node, peak_tflops, internode_bytes_per_s, estimate_kw):
    """Every plan() option checked once, before the search: a bad one is a ValueError naming it."""
    positive_int("seq_len", seq_len)
    positive_int("micro_batch", micro_batch)
    positive_int("grad_accum", grad_accum)
    precisions = choices("precisions", precisions, training.PRECISIONS)
    recomputes = choices("recomputes", recomputes, training.RECOMPUTES)
    flag("allow_offload", allow_offload)
    positive_int("gpus_per_node", gpus_per_node)
    mfu, hfu = rates
    utilisation(1.0, 1.0, mfu, hfu)  # one of mfu / hfu, each a fraction of the peak
    if host_bytes_per_node is not None:
        positive_int("host_bytes_per_node", host_bytes_per_node, allow_zero=True)
        if 0 < host_bytes_per_node < 2**20:  # 512 meant as 512 GiB: no node has under 1 MiB of RAM
            raise ValueError(f"host_bytes_per_node is in bytes; {host_bytes_per_node} B is under 1 MiB. GiB? pass "
                             f"{host_bytes_per_node} * 2**30 ({host_bytes_per_node * 2**30})")
    accepted = [n for n in inspect.signature(estimate_training).parameters if n != "model"]
    for key in estimate_kw:
        if key in _SEARCHED:
            raise ValueError(f"plan() sets {key} itself (it searches {', '.join(_SEARCHED)}); to fix the layout, "
                             f"call estimate_training(..., {key}=...)")
        if key not in accepted:
            raise ValueError(f"unknown plan() option {key!r}; accepted: the plan arguments and estimate_training's "
                             f"{', '.join(k for k in accepted if k not in _SEARCHED)}")
    if task == "full":
        given = [k for k in ("lora_rank", "lora_targets") if k in estimate_kw]
        if given:
            raise ValueError(f"{' and '.join(given)} apply to task 'lora' or 'qlora', not 'full'")
    if "offload_device" in estimate_kw and not (allow_offload and task == "full"):
        raise ValueError(f"offload_device={show(estimate_kw['offload_device'])} applies to offload layouts, which "
                         f"this search leaves out ({'allow_offload=False' if not allow_offload else 'task ' + task})")
    if "sequence_parallel" in estimate_kw:
        flag("sequence_parallel", estimate_kw["sequence_parallel"])
    # The options once on one GPU, every precision and recompute: an error here is the user's
    # option, not one layout's (a layout's own errors are its "invalid:" reason).
    trial_kw = {k: v for k, v in estimate_kw.items() if k not in ("offload_device", "sequence_parallel")}
    for precision in precisions:
        for recompute in recomputes:
            est = estimate_training(model, seq_len=seq_len, micro_batch=micro_batch, grad_accum=grad_accum,
                                    precision=precision, recompute=recompute, finetune=task, **trial_kw)
        # plans are ranked by time: a precision the GPU cannot run (bf16 on a V100) is refused, not a 0 tokens/s plan
        if not _untimed(precision, peak_tflops):
            step_time(est, g, gpus_per_node=gpus_per_node, peak_tflops=peak_tflops,
                      internode_bytes_per_s=internode_bytes_per_s, **({"hfu": hfu} if mfu is None else {"hfu": mfu}))
    return precisions, recomputes, estimate_kw


def _check_cps(cps, seq_len: int, task: str) -> tuple[int, ...]:
    """plan()'s context-parallel degrees: positive integers, each cp > 1 dividing seq_len / 2 (the 2 x cp load
    balancing of torch's context_parallel and Megatron-Core)."""
    if isinstance(cps, (int, str)) or not hasattr(cps, "__iter__"):
        raise ValueError(f"cps must be a list of context-parallel degrees such as (1, 2, 4, 8), got {show(cps)}")
    out = tuple(dict.fromkeys(positive_int("cps entry", c) for c in cps))
    if not out:
        raise ValueError("cps is empty; give at least one degree (1: no context parallelism)")
    for c in out:
        if c > 1 and seq_len % (2 * c):
            raise ValueError(f"cps entry {c}: seq_len={seq_len} must be divisible by 2 x cp = {2 * c} "
                             "(context parallelism's load-balanced chunks)")
        if c > 1 and task == "qlora":
            raise ValueError(f"cps entry {c}: context parallelism is not modelled with task 'qlora'")
    return out


def _untimed(precision: str, peak_tflops) -> bool:
    """fp32 runs on every GPU, but the catalog has no fp32 throughput to time it with."""
    return precision == "fp32" and peak_tflops is None


@dataclass
class MinGpusResult(PlanResult):
    """plan() at the fewest feasible count, with how min_gpus found it."""

    searched: list[int] = field(default_factory=list)  # the counts planned, in order
    method: str = ""  # how the count was found, and what it assumes

    def to_dict(self, top: int = 10) -> dict:
        return {**super().to_dict(top), "searched": list(self.searched), "method": self.method}


def _min_gpus_bounds(max_count, exhaustive_up_to, plan_kw) -> tuple[int, int, int]:
    """(max_count, gpus_per_node, the exhaustive window) of min_gpus, checked."""
    max_count = positive_int("max_count", max_count)
    if "count" in plan_kw:
        raise ValueError("min_gpus() searches count itself; give max_count= to bound it")
    per_node = positive_int("gpus_per_node", plan_kw.get("gpus_per_node", 8))
    exhaustive = 2 * per_node if exhaustive_up_to is None else positive_int("exhaustive_up_to", exhaustive_up_to)
    return max_count, per_node, exhaustive


@plain_args
def min_gpus(model, gpu, task: str = "full", max_count: int = 4096, allow_offload: bool = False,
             exhaustive_up_to: int | None = None, **plan_kw) -> MinGpusResult | None:
    """The fewest GPUs of one kind with a feasible plan, or None up to max_count.

    Every count from 1 to `exhaustive_up_to` (default two nodes: 2 x gpus_per_node) is planned:
    no assumption, about 5-50 ms of plan() each. Beyond it the search assumes feasibility is
    monotone in whole nodes (if k nodes of gpus_per_node GPUs have no feasible layout, no count
    up to k nodes has one) and bisects the number of nodes (doubling, then halving: about
    2·log2(max_count / gpus_per_node) plans); then it plans every count in the first node that
    fits, so the answer is a count, not a node multiple (e.g. 36 V100s rather than 40). The
    result says which (MinGpusResult.method, .searched). Offload is off by default: with it
    almost anything "fits" one GPU if the host has terabytes.
    """
    max_count, per_node, exhaustive = _min_gpus_bounds(max_count, exhaustive_up_to, plan_kw)
    plan_kw["allow_offload"] = flag("allow_offload", allow_offload)
    floor_says = _nothing_fits(model, gpu, task, plan_kw, per_node)  # analytical: no search when no count fits
    if floor_says:
        return None
    searched: list[int] = []
    results: dict[int, PlanResult] = {}

    def attempt(count: int) -> bool:
        if count not in results:
            searched.append(count)
            try:
                results[count] = plan(model, gpu, count, task, **plan_kw)
            except ValueError as e:
                if count == 1:
                    raise  # the options themselves are wrong: say so, do not search
                # no layout on this count can be estimated (e.g. a task planned on one GPU only)
                r = PlanResult(getattr(model, "name", str(model)), str(gpu), count, task)
                r.infeasible.append(({"count": count}, f"invalid: {e}"))
                results[count] = r
        return bool(results[count].feasible)

    def none_fit() -> None:
        """None when layouts were estimated and none fit; a ValueError when none could be estimated."""
        many = [results[c] for c in searched if c > 1]
        if many and all(why.startswith("invalid: ") for r in many for _, why in r.infeasible):
            name = model if isinstance(model, str) else getattr(model, "name", model)
            raise ValueError(f"no feasible layout of {name} on one GPU, and none on more than one can be "
                             f"estimated: {many[0].infeasible[0][1][len('invalid: '):]}")
        return None

    def answer(count: int, method: str) -> MinGpusResult:
        r = results[count]
        return MinGpusResult(r.model, r.gpu, r.count, r.task, r.feasible, r.infeasible, r.notes, list(searched), method)

    from memlib.parallel.count_bound import state_floor_count
    floor = state_floor_count(model, gpu, task, plan_kw)  # fewer GPUs cannot hold the model states at all
    if floor > max_count:
        return none_fit()
    for count in range(floor, min(exhaustive, max_count) + 1):
        if attempt(count):
            below = f"; {count - 1} has no feasible layout" if count > 1 else ""
            start = f"from {floor} (fewer cannot hold the model states)" if floor > 1 else "from 1"
            return answer(count, f"every count {start} to {count} planned{below}")
    if max_count <= exhaustive:
        return none_fit()
    # whole nodes beyond the exhaustive window: double, then bisect the number of nodes
    lo = max(exhaustive, floor - 1) // per_node  # nodes known not to fit (planned, or below the states floor)
    nodes = lambda k: min(k * per_node, max_count)  # noqa: E731  the cap is the last "node"
    hi = lo + 1
    while not attempt(nodes(hi)):
        if nodes(hi) == max_count:
            return none_fit()
        lo, hi = hi, min(2 * hi, -(-max_count // per_node))
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if attempt(nodes(mid)):
            hi = mid
        else:
            lo = mid
    first = max(lo * per_node, exhaustive, floor - 1) + 1
    for count in range(first, nodes(hi)):
        if attempt(count):
            break
    else:
        count = nodes(hi)
    return answer(count, _bisected_method(floor, exhaustive, per_node, lo * per_node, nodes(hi), first, count))


def _bisected_method(floor: int, exhaustive: int, per_node: int, known_bad: int, known_good: int, first: int,
                     count: int) -> str:
    """How min_gpus found a count beyond the exhaustive window, in words (MinGpusResult.method)."""
    window = (f"counts below {floor} cannot hold the model states" if floor > exhaustive
              else f"every count from {floor} to {exhaustive} planned")
    return (f"{window}; beyond, whole nodes of {per_node} bisected (assumes: if k nodes do not fit, no count up to k "
            f"nodes does): {known_bad} GPUs do not fit, {known_good} do; then every count from {first} planned: "
            f"{count} is the fewest")


def _nothing_fits(model, gpu, task, plan_kw, per_node) -> str | None:
    """memlib.parallel.count_bound.nothing_fits over the tp degrees plan() tries (after plan's own checks)."""
    from memlib.parallel.count_bound import nothing_fits
    try:
        m = get_model(model) if isinstance(model, str) else model
        plan(m, gpu, 1, task, **plan_kw)  # the options are checked here, as the search's first plan would
    except ValueError:
        return None  # let the search raise or answer as before
    tps = [t for t in range(1, min(per_node, m.num_heads) + 1) if m.num_heads % t == 0 and _tp_ok(m, t)]
    return nothing_fits(m, gpu, task, plan_kw, tps or [1])


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


def _plan_arg(fn: str, plan_) -> Plan:
    if not isinstance(plan_, Plan):
        hint = " (plan(...).best is None when no layout fits: check r.feasible first)" if plan_ is None else ""
        raise ValueError(f"{fn}() needs a Plan from plan(...).feasible or plan(...).best, got {show(plan_)}{hint}")
    return plan_


@plain_args
def max_micro_batch(plan_: Plan, gpu, limit: int = 4096) -> int:
    """Largest micro-batch that still fits the plan's GPU (0 if none), with the plan's allocator headroom."""
    _plan_arg("max_micro_batch", plan_)
    gpu = get_gpu(gpu)
    limit = positive_int("limit", limit)
    s = plan_.settings
    model = plan_.estimate.setup.model
    room = plan_.verdict.allocator_headroom
    return _largest(lambda b: fits(estimate_training(model, **{**s, "micro_batch": b}), gpu,
                                   allocator_headroom=room).fits, 1, limit)


@plain_args
def max_seq_len(plan_: Plan, gpu, limit: int | None = None) -> int:
    """Longest sequence that still fits the plan's GPU (0 if none), with the plan's allocator headroom; at most
    the model's learned position table where it has one."""
    _plan_arg("max_seq_len", plan_)
    gpu = get_gpu(gpu)
    limit = 1 << 20 if limit is None else positive_int("limit", limit)
    s = plan_.settings
    model = plan_.estimate.setup.model
    if model.position == "learned":
        limit = min(limit, model.max_position_embeddings)
    # context parallelism needs seq_len divisible by 2 x cp (x tp with sequence parallelism): search in such steps
    step = 2 * s.get("cp", 1) * (s["tp"] if s.get("sequence_parallel") else 1) if s.get("cp", 1) > 1 else 1
    room = plan_.verdict.allocator_headroom
    return step * _largest(lambda n: fits(estimate_training(model, **{**s, "seq_len": n * step}), gpu,
                                          allocator_headroom=room).fits, 1, limit // step) if limit >= step else 0


def to_deepspeed_config(plan_: Plan) -> dict:
    """The DeepSpeed JSON (as a dict) for a plan: precision, ZeRO stage and offload, batch sizes.

    Tensor and pipeline parallel degrees are not DeepSpeed config keys (Megatron's
    --tensor-model-parallel-size, DeepSpeed's PipelineModule(num_stages=...)), nor is a MoE's
    expert-parallel degree (deepspeed.moe.layer.MoE(ep_size=...)); activation recompute is the
    model's gradient_checkpointing. Keys follow DeepSpeed's config docs.
    """
    _plan_arg("to_deepspeed_config", plan_)
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
    setup = plan_.estimate.setup
    if s["zero_stage"] >= 1 and setup.sharding == "deepspeed":  # the buffers the estimate counted
        zero.update({"overlap_comm": setup.overlap_comm, "contiguous_gradients": setup.contiguous_gradients,
                     "reduce_bucket_size": setup.reduce_bucket_size})
    cfg["zero_optimization"] = zero
    return cfg


# --- serving ----------------------------------------------------------------------------------------------------------
# Tokens in one prefill forward when planning a server: vLLM's default max_num_batched_tokens for its offline LLM
# class (vllm/engine/arg_utils.py, V1 engine: 8192 on GPUs; chunked prefill splits longer prompts). None: the whole
# batch x context in one forward (HF generate).
SERVE_PREFILL_TOKENS = 8192


@dataclass
class ServingPlan:
    """One serving layout on `count` GPUs: replicas of a model instance over max(tp, ep) GPUs.

    Inside an instance the attention and dense layers are split over tp GPUs and the routed experts over ep
    (ep a multiple of tp; ep > tp is data-parallel attention: ep / tp attention groups, each serving its own
    batch, vLLM's --data-parallel-size with --enable-expert-parallel, SGLang's --enable-dp-attention).
    """

    settings: dict  # estimate_inference keyword arguments: weights, kv_cache, tp, ep, mla_cache, prefill_tokens
    count: int
    max_batch: Limit  # sequences one attention group (tp GPUs) holds at context_len
    estimate: object  # InferenceEstimate at max_batch (batch 1 when even that does not fit)
    verdict: Verdict

    @property
    def gpus_per_replica(self) -> int:
        return max(self.settings["tp"], self.settings["ep"])

    @property
    def replicas(self) -> int:
        return self.count // self.gpus_per_replica

    @property
    def attention_groups(self) -> int:
        """Groups of tp GPUs that each serve their own batch: count / tp."""
        return self.count // self.settings["tp"]

    @property
    def sequences(self) -> int:
        """Concurrent sequences of context_len tokens on all count GPUs: max_batch x attention groups."""
        return self.max_batch.value * self.attention_groups

    @property
    def weight_bytes(self) -> int:
        """Weights per GPU."""
        return self.estimate.weight_bytes

    @property
    def kv_cache_bytes(self) -> int:
        """KV cache per GPU at max_batch."""
        return self.estimate.kv_cache_bytes

    def describe(self) -> str:
        s = self.settings
        bits = [f"tp={s['tp']}"] + ([f"ep={s['ep']}"] if s["ep"] > 1 else [])
        if s["ep"] > s["tp"]:
            bits.append(f"{s['ep'] // s['tp']} data-parallel attention groups")
        if self.replicas > 1:
            bits.append(f"{self.replicas} replicas")
        return ", ".join(bits + [f"{s['weights']} weights", f"{s['kv_cache']} KV cache"])


@dataclass
class ServingPlanResult:
    model: str
    gpu: str
    count: int
    context_len: int
    feasible: list[ServingPlan] = field(default_factory=list)
    infeasible: list[tuple[dict, str]] = field(default_factory=list)

    @property
    def best(self) -> ServingPlan | None:
        return self.feasible[0] if self.feasible else None

    def to_dict(self, top: int = 10) -> dict:
        top = positive_int("top", top, allow_zero=True)
        return {
            "model": self.model, "gpu": self.gpu, "count": self.count, "context_len": self.context_len,
            "feasible": [{"settings": dict(p.settings), "layout": p.describe(), "gpus_per_replica": p.gpus_per_replica,
                          "replicas": p.replicas, "weight_bytes_per_gpu": p.weight_bytes,
                          "kv_cache_bytes_per_gpu": p.kv_cache_bytes, "kv_bytes_per_token_per_gpu":
                          p.estimate.kv_bytes_per_token, "max_batch_per_attention_group": p.max_batch.value,
                          "attention_groups": p.attention_groups, "sequences": p.sequences,
                          "peak_bytes_per_gpu": p.estimate.peak_bytes, "margin_bytes": p.verdict.margin_bytes}
                         for p in self.feasible[:top]],
            "infeasible": [{"settings": dict(s), "reason": r} for s, r in self.infeasible],
        }


def _serving_layouts(model: Model, count: int, gpus_per_node: int):
    """(tp, ep): tp divides count (within a node) and the model's heads and MLP widths; ep (MoE only) 1 or a multiple
    of tp dividing count and the number of experts."""
    for tp in _divisors(count, min(count, gpus_per_node)):
        if model.num_heads % tp or model.num_kv_heads % tp:
            continue
        if model.num_dense_layers and model.intermediate_size % tp:
            continue
        if model.num_shared_experts and model.shared_expert_intermediate_size % tp:
            continue
        eps = [1]
        if model.is_moe:
            eps += [e for e in _divisors(count, min(count, model.num_experts))
                    if e > 1 and e % tp == 0 and model.num_experts % e == 0]
        for ep in eps:
            if ep == 1 and model.is_moe and model.moe_intermediate_size % tp:
                continue
            yield tp, ep


@plain_args
def plan_serving(model, gpu, count: int, context_len: int = 8192, weights=AUTO, kv_cache: str = "bf16",
                 mla_cache: str = "latent", prefill_tokens: int | None = SERVE_PREFILL_TOKENS,
                 gpus_per_node: int = 8, allocator_headroom: float = DEFAULT_ALLOCATOR_HEADROOM,
                 engine: str = DEFAULT_ENGINE) -> ServingPlanResult:
    """Serving layouts of `model` on `count` GPUs, most concurrent sequences at `context_len` first.

    For each weight format and each tensor/expert-parallel layout (see ServingPlan): the weights and KV cache per
    GPU and the largest batch that fits (memlib.serving.inference.max_batch: weights + KV cache + the prefill's workspace,
    with fits()'s CUDA context and allocator headroom). weights: "auto" (the checkpoint's own format, e.g.
    DeepSeek-V3's block fp8, gpt-oss's MXFP4 experts; bf16 when config.json has no quantization_config), one
    format, or a list of them to compare. prefill_tokens: tokens per prefill forward (SERVE_PREFILL_TOKENS,
    vLLM's default chunk; None: the whole batch at once, as HF generate does). A layout where not even one
    sequence fits is in .infeasible with the reason. allocator_headroom goes to fits() (default 5% of the peak).
    engine: "hf" (default) | "vllm" | "sglang" | "llama.cpp" (memlib.serving.engines: the engine's cache types,
    paging and cell padding; llama.cpp layouts are tp=1 only, it splits layers rather than heads).
    """
    model = get_model(model) if isinstance(model, str) else model
    if not isinstance(model, Model):
        raise ValueError(f"model must be a catalog name or a memlib.Model, got {show(model)}")
    g = get_gpu(gpu)
    count = positive_int("count", count)
    context_len = positive_int("context_len", context_len)
    gpus_per_node = positive_int("gpus_per_node", gpus_per_node)
    allocator_headroom = check_allocator_headroom(allocator_headroom)
    formats = [weights] if isinstance(weights, str) else list(weights) if isinstance(weights, (list, tuple)) else None
    if not formats:
        raise ValueError(f"weights must be 'auto', a format ({', '.join(WEIGHT_FORMATS)}) or a list of them, "
                         f"got {show(weights)}")
    choice("engine", engine, ENGINES)
    choice("kv_cache", kv_cache, kv_formats(engine))
    choice("mla_cache", mla_cache, MLA_CACHES)
    eng = {} if engine == DEFAULT_ENGINE else {"engine": engine}
    resolved = []
    for w in formats:
        fmt = estimate_inference(model, 1, context_len, weights=w, kv_cache=kv_cache, mla_cache=mla_cache,
                                 prefill_tokens=prefill_tokens, **eng).setup.weights  # validates every option once
        if fmt not in resolved:
            resolved.append(fmt)
    result = ServingPlanResult(model.name, g.name, count, context_len)
    for fmt in resolved:
        for tp, ep in _serving_layouts(model, count, gpus_per_node):
            settings = dict(weights=fmt, kv_cache=kv_cache, tp=tp, ep=ep, prefill_tokens=prefill_tokens, **eng)
            if model.is_mla:
                settings["mla_cache"] = mla_cache
            try:
                lim = max_batch(model, g, context_len, allocator_headroom=allocator_headroom, **settings)
            except ValueError as e:
                result.infeasible.append((settings, f"invalid: {e}"))
                continue
            est = estimate_inference(model, max(lim.value, 1), context_len, **settings)
            v = fits(est, g, allocator_headroom=allocator_headroom)
            if lim.value == 0:
                result.infeasible.append((settings, f"not even one sequence of {context_len:,} tokens fits: needs "
                                          f"{gib(v.required_bytes):.1f} GiB per GPU of {gib(v.capacity_bytes):.1f} GiB "
                                          f"(weights {gib(est.weight_bytes):.1f} GiB)"))
                continue
            result.feasible.append(ServingPlan(settings, count, lim, est, v))
    result.feasible.sort(key=lambda p: (-p.sequences, p.gpus_per_replica, -p.verdict.margin_bytes))
    return result
