"""An analytical floor for min_gpus: when no number of GPUs can fit, say so without searching.

Adding GPUs shrinks what is sharded over them (parameters, gradients and optimizer states under
ZeRO/FSDP) and, through tp/pp/cp, each GPU's slice of the layers; it never shrinks one
micro-batch's activations below what the most-split layout keeps. So the floor of the per-GPU
peak over every count is the smallest non-state part (activations, logits and loss,
temporaries, gathered layers: the peak less parameters, gradients and optimizer states) among
the most-split layouts: tp at its largest allowed degree, pp = 1 and pp = num_layers, each cp,
precision and recompute the plan searches, states sharded over 2**30 data-parallel GPUs. If
that floor exceeds what `fits` accepts on the GPU, no count fits. This assumes, as min_gpus'
node bisection does, that more parallelism never needs more memory per GPU.
"""

from __future__ import annotations

from memlib.hardware.fit import max_peak_bytes
from memlib.training import estimate_training

STATE_PARTS = ("parameters", "gradients", "optimizer")
_DP = 2**30
_PLAN_ONLY = ("allow_offload", "gpus_per_node", "mfu", "hfu", "host_bytes_per_node", "peak_tflops", "internode_bytes_per_s",
              "cuda_context_bytes", "allocator_headroom", "precisions", "recomputes", "cps", "top")


def nothing_fits(model, gpu, task: str, plan_kw: dict, tps: list[int]) -> str | None:
    """A sentence saying why no count of `gpu` fits `model`, or None when the floor does fit (or cannot be
    estimated: then the search decides)."""
    if task not in ("full", "lora") or plan_kw.get("activation_offload"):
        return None
    est_kw = {k: v for k, v in plan_kw.items() if k not in _PLAN_ONLY}
    fit_kw = {k: plan_kw[k] for k in ("cuda_context_bytes", "allocator_headroom") if k in plan_kw}
    layers = getattr(model, "num_layers", None) or 1
    best = None
    try:
        limit = max_peak_bytes(gpu, **fit_kw)
        for precision in plan_kw.get("precisions") or ("bf16-mixed", "fp16-mixed", "fp32"):
            for recompute in plan_kw.get("recomputes") or ("none", "full"):
                for cp in plan_kw.get("cps") or (1,):
                    for pp, zero in ((1, 3), (layers, 1)):
                        e = estimate_training(model, precision=precision, recompute=recompute, tp=max(tps), pp=pp,
                                              dp=_DP, zero_stage=zero, cp=cp, finetune=task, **est_kw)
                        floor = e.peak_bytes - sum(e.breakdown.get(k, 0) for k in STATE_PARTS)
                        best = floor if best is None else min(best, floor)
    except ValueError:
        return None
    if best is None or best <= limit:
        return None
    return (f"no count fits: even with the model states sharded over {_DP:,} GPUs and every layer split to the "
            f"most (tp {max(tps)}, pp 1 or {layers}), one GPU needs at least {best / 2**30:,.1f} GiB of "
            f"activations, logits and temporaries; {limit / 2**30:,.1f} GiB fit")


def state_floor_count(model, gpu, task: str, plan_kw: dict) -> int:
    """The fewest GPUs that can hold the model states at all: ceil(states / the largest peak `fits` accepts).

    Every layout divides the states at most evenly over its GPUs (ZeRO-3 over all of them; tp and pp
    split the layers they own, the distributed optimizer keeps more), so a count below this bound has
    no feasible layout whatever else it does. Full fine-tuning without offload only (LoRA's frozen base
    and offloaded states follow other rules): 1 otherwise, or when the estimate cannot be made."""
    if task != "full" or plan_kw.get("allow_offload") or plan_kw.get("offload", "none") != "none":
        return 1
    est_kw = {k: v for k, v in plan_kw.items() if k not in _PLAN_ONLY}
    fit_kw = {k: plan_kw[k] for k in ("cuda_context_bytes", "allocator_headroom") if k in plan_kw}
    try:
        limit = max_peak_bytes(gpu, **fit_kw)
        states = min(estimate_training(model, precision=precision, **est_kw).model_state_bytes
                     for precision in plan_kw.get("precisions") or ("bf16-mixed", "fp16-mixed", "fp32"))
    except ValueError:
        return 1
    return max(1, -(-states // limit)) if limit > 0 else 1
