"""Notebook 11 (debugging an out-of-memory error): the ladder of fixes, and two pictures drawn the way PyTorch's
memory_viz draws a snapshot (pytorch.org/memory_viz; torch/cuda/_memory_viz.py), from memlib's own objects:

* moment_timeline: the "Active Memory Timeline" view, one band per kind of tensor over the moments of a step,
  from an estimate's moments: memlib's estimate, not a recorded snapshot, and labelled so on the chart;
* segment_picture: the "Allocator State History" view at one instant: each segment the caching allocator model
  (memlib.hardware.allocator.CachingAllocator) holds, cut into its blocks, used or cached.
"""

from __future__ import annotations

from dataclasses import dataclass

from memlib.hardware.fit import fits
from memlib.learn.viz import COLORS, GiB, _axes

#: the fixes a practitioner tries, in order, each added to the ones before: (name, the estimate_training options it
#: sets, what it costs). Cheapest first: the first two change no result, the last changes the method.
LADDER = (
    ("as configured", {}, "-"),
    ("micro-batch 1, gradient accumulation", {"micro_batch": 1, "grad_accum": None}, "nothing (same global batch)"),
    ("activation checkpointing", {"recompute": "full"}, "about a third more compute (the forward runs twice)"),
    ("chunked loss", {"loss": "chunked"}, "a loss kernel that never holds the fp32 logits"),
    ("8-bit AdamW", {"optimizer": "adamw-8bit"}, "bitsandbytes; near-identical training in its paper"),
    ("shard states (FSDP / ZeRO-3)", {"zero_stage": 3}, "all-gathers every step (needs dp > 1)"),
    ("offload optimizer to CPU", {"offload": "optimizer"}, "host RAM and PCIe time"),
    ("LoRA instead of full fine-tuning", {"finetune": "lora", "optimizer": "adamw", "offload": "none"},
     "a different method: only adapters train"),
)


@dataclass(frozen=True)
class Rung:
    name: str
    settings: dict
    cost: str
    peak_bytes: int
    reserved_bytes: int
    fits: bool
    margin_bytes: int


def fix_ladder(model, gpu, *, allocator: str = "caching", **setup) -> list[Rung]:
    """Each rung of LADDER added to the setup and the ones before it, estimated (memlib.estimate_training) and
    judged on `gpu` with the caching-allocator model (fits(..., allocator=allocator)). A rung whose option the
    setup cannot take (e.g. sharding with dp=1) keeps the previous settings and is skipped."""
    from memlib import estimate_training

    settings = dict(setup)
    # the setup as given is checked first: a wrong model, GPU or option is its own error, never an empty ladder
    fits(estimate_training(model, **settings), gpu, allocator=allocator)
    rungs = []
    for name, change, cost in LADDER:
        trial = dict(settings)
        for k, v in change.items():
            if k == "grad_accum":  # keep the global batch: accumulate what the micro-batch gave up
                trial["grad_accum"] = settings.get("grad_accum", 1) * settings.get("micro_batch", 1)
            else:
                trial[k] = v
        if change.get("zero_stage") and trial.get("dp", 1) < 2:
            continue
        try:
            est = estimate_training(model, **trial)
        except ValueError:
            continue
        settings = trial
        v = fits(est, gpu, allocator=allocator)
        rungs.append(Rung(name, dict(settings), cost, est.peak_bytes, est.peak_bytes + v.headroom_bytes, v.fits,
                          v.margin_bytes))
    return rungs


def moment_timeline(est, ax=None, title: str | None = None, gpu=None):
    """memlib's moments of one step as stacked bands (GiB), left to right in step order, like memory_viz's Active
    Memory Timeline; the chart says it is memlib's estimate. With gpu, the card's total dashed."""
    ax = _axes(ax, figsize=(7.5, 3.6))
    keys = [k for k in COLORS if any(m.parts.get(k, 0) for m in est.moments)]
    xs = list(range(len(est.moments)))
    bottom = [0.0] * len(xs)
    for k in keys:
        vals = [m.parts.get(k, 0) / GiB for m in est.moments]
        top = [b + v for b, v in zip(bottom, vals)]
        ax.fill_between(xs, bottom, top, step="mid", color=COLORS[k], label=k.replace("_", " "), lw=0)
        bottom = top
    ax.set_xticks(xs)
    ax.set_xticklabels([f"{m.name[:3]}·{i}" for i, m in enumerate(est.moments)], fontsize=7)
    ax.set_ylabel("GiB alive")
    ax.set_xlabel("moments of one step (fwd · bwd · opt), memlib's estimate, not a recorded snapshot")
    if gpu is not None:
        from memlib.hardware.fit import usable_bytes
        from memlib.hardware.gpus import get_gpu
        ax.axhline(usable_bytes(get_gpu(gpu)) / GiB, color="k", ls="--", lw=1)
    ax.legend(fontsize=7, loc="upper right", ncol=2)
    ax.set_title(title or "memlib's estimate of one step, drawn like memory_viz's timeline", fontsize=9)
    return ax


def segment_picture(allocator, ax=None, title: str | None = None):
    """The allocator model's segments at this instant (MiB), one row each, blocks in address order: allocated
    dark, cached light, like memory_viz's Allocator State view."""
    ax = _axes(ax, figsize=(7.5, 2.8))
    segs = allocator.segments()
    for row, s in enumerate(segs):
        x = 0.0
        for b in s["blocks"]:
            w = b["size"] / 2**20
            ax.barh(row, w, left=x, color="#C44E52" if b["allocated"] else "#E8E8E8", edgecolor="k", lw=0.4)
            x += w
    ax.set_yticks(range(len(segs)))
    ax.set_yticklabels([f"seg {s['segment']} ({s['pool']})" for s in segs], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("MiB within the segment (red: allocated, grey: cached, reserved but unallocated)")
    ax.set_title(title or "the caching allocator model's segments", fontsize=9)
    return ax


def replay_chart(replays: dict, ax=None, title: str | None = None):
    """Allocated vs reserved peak per step (GiB) for labelled replay_training runs."""
    ax = _axes(ax)
    for label, steps in replays.items():
        xs = [s.step for s in steps]
        line, = ax.plot(xs, [s.reserved_peak_bytes / GiB for s in steps], marker="o", label=f"{label}: reserved")
        ax.plot(xs, [s.allocated_peak_bytes / GiB for s in steps], ls=":", color=line.get_color(),
                label=f"{label}: allocated")
    ax.set_xticks(sorted({s.step for steps in replays.values() for s in steps}))
    ax.set_xlabel("training step")
    ax.set_ylabel("GiB (peak of the step)")
    ax.legend(fontsize=7)
    ax.set_title(title or "the allocator model replaying a loop", fontsize=9)
    return ax
