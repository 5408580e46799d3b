"""Every pipeline stage of a layout, and what evaluating them costs plan() and min_gpus().

    python benchmarks/pipeline_stages.py

Prints the peak of each stage of DeepSeek-V3 at tp=4, pp=31 (the layout min_gpus answered with 124 H100s when only
the first and last stages were evaluated: a middle stage of two MoE layers needs far more), the stages
memlib.training.layout.stages() evaluates, then the wall-clock of plan() at a few counts and of min_gpus() for
DeepSeek-V3 on H100 80GB. Not a test: timings depend on the machine, so they are reported, never asserted.
"""

from __future__ import annotations

import time

from memlib.hardware.fit import fits
from memlib.hardware.gpus import get_gpu
from memlib.parallel.plan import min_gpus, plan
from memlib.training import estimate_training, layout
from memlib.training.step import _estimate_stage

MODEL, GPU = "deepseek-v3", "h100-80gb"


def per_stage() -> None:
    est = estimate_training(MODEL, seq_len=2048, grad_accum=8, tp=4, pp=31)
    s, m, g = est.setup, est.setup.model, get_gpu(GPU)
    moe = set(m.moe_layers)
    print(f"{MODEL}, tp=4 pp=31, seq 2048, 8 micro-batches: estimate {est.peak_bytes / 2**30:.2f} GiB ({est.stage})")
    for st in layout.all_stages(s):
        e = _estimate_stage(s, st)
        kinds = "".join("M" if i in moe else "d" for i in range(st.first_layer, st.first_layer + st.layers))
        print(f"  {st.name:38s} {kinds:3s} in flight {st.in_flight}  {e.peak_bytes / 2**30:7.2f} GiB"
              f"{'' if fits(e, g).fits else '  does not fit ' + GPU}")
    print("  evaluated:", ", ".join(st.name for st in layout.stages(s)))


def timing() -> None:
    for count in (124, 128, 160, 256):
        t = time.perf_counter()
        r = plan(MODEL, GPU, count)
        print(f"plan({MODEL}, {GPU}, {count}): {time.perf_counter() - t:.2f} s, {len(r.feasible)} feasible of "
              f"{len(r.feasible) + len(r.infeasible)} layouts")
    t = time.perf_counter()
    r = min_gpus(MODEL, GPU)
    print(f"min_gpus({MODEL}, {GPU}): {time.perf_counter() - t:.2f} s -> {r.count} GPUs ({r.best.describe()}; "
          f"{r.best.estimate.peak_bytes / 2**30:.2f} GiB); {len(r.searched)} counts planned")


if __name__ == "__main__":
    per_stage()
    timing()
