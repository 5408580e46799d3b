"""The setup that notebook 02_single_gpu_limits and its deep dive share:
constants and helpers, defined once.

    from memlib.learn.chapters.ch02 import A100, B, CARDS, LADDER

02 · One GPU: how large a model can you train, fine-tune or serve? · 单卡能训多大的模型
"""

import memlib
from memlib import estimate_training, fits, step_time
from memlib.models.llama_like import ladder

SEQ, MB = 2048, 1  # the seed's setting: one sequence of 2,048 tokens per micro-batch
A100 = "a100-80gb"
CARDS = ["rtx-4090", "l40s", A100, "h200"]  # 24, 48, 80 and 141 GB
LORA = dict(lora_targets="all-linear", lora_rank=16)  # adapters on every projection, rank 16
M7 = memlib.get_model("llama-7b")
LADDER = ladder()  # LLaMA-like shapes from 0.37B to 175B (step 4)
MFU = memlib.cost.timing.DEFAULT_MFU  # 40% of peak: MFU without recompute, HFU (recompute counted) with it


def spoken(x):
    """A figure as said aloud: 2 significant figures, 3 from 100 up (134.9 -> '135', 6.74 -> '6.7')."""
    return f"{float(f'{x:.{3 if abs(x) >= 100 else 2}g}'):,g}"


def B(n):
    """A parameter count as said aloud ('33B')."""
    return f"{spoken(n / 1e9)}B"


def largest(est, part):
    """The largest bytes of one part over the moments of the step (the estimate's own figures)."""
    return max(mo.parts.get(part, 0) for mo in est.moments)


def verdict(e, gpu):
    return "fits" if fits(e, gpu).fits else "does not fit"


def offload_vs_baseline(gpu, accum):
    """memlib.step_time of llama-7b under ZeRO-Offload + recompute, and the time it is compared with: plain
    AMP + recompute where that fits the GPU, else the offload run's own compute (the ideal)."""
    plain = estimate_training(M7, SEQ, MB, recompute="full", grad_accum=accum)
    off = estimate_training(M7, SEQ, MB, recompute="full", zero_stage=2, offload="optimizer", grad_accum=accum)
    t_off = step_time(off, gpu)
    plain_fits = fits(plain, gpu).fits
    return t_off, (step_time(plain, gpu).step_s if plain_fits else t_off.compute_s), plain_fits


__all__ = ['A100', 'B', 'CARDS', 'LADDER', 'LORA', 'M7', 'MB', 'MFU', 'SEQ', 'largest', 'offload_vs_baseline', 'spoken', 'verdict']
