"""Speed of estimate_training (one call; 10,000 over a grid), estimate_inference and plan().

    python benchmarks/bench_estimate.py

Prints wall-clock figures; the aims: under 50 microseconds an estimate, under one second
for a 4-GPU or a 1024-GPU plan search. Not a test: timings
depend on the machine, so they are reported, never asserted. `measure()` returns the
figures (benchmarks/anchors.py uses it).
"""

from __future__ import annotations

import itertools
import statistics
import time

import memlib


def measure() -> dict:
    """The figures: one_s, sweep_s, sweep_calls, grid_points, serve_s, plans {count: (s, layouts, gpu)}."""
    model = memlib.get_model("llama-7b")
    # one call: median of many single calls (the first warms caches)
    samples = []
    for _ in range(2000):
        t0 = time.perf_counter()
        memlib.estimate_training(model, seq_len=2048, micro_batch=1, precision="bf16-mixed")
        samples.append(time.perf_counter() - t0)
    one = statistics.median(samples)

    models = [memlib.get_model(n) for n in ("llama-7b", "llama-2-70b", "mistral-7b", "qwen2-0.5b", "llama-3-8b")]
    grid = list(itertools.product(
        models, (512, 1024, 2048, 4096, 8192), (1, 2, 4, 8),
        ("bf16", "bf16-mixed", "fp32"), ("none", "full"), ("sdpa", "eager"), ("full", "lora", "qlora")))
    grid = [g for g in grid if not (g[6] == "qlora" and g[3] == "fp32")]
    configs = list(itertools.islice(itertools.cycle(grid), 10_000))
    t0 = time.perf_counter()
    for m, s, b, p, r, a, f in configs:
        memlib.estimate_training(m, seq_len=s, micro_batch=b, precision=p, recompute=r, attention=a, finetune=f)
    sweep = time.perf_counter() - t0

    llama70 = memlib.get_model("llama-2-70b")
    memlib.estimate_inference(llama70, weights="int4-gptq", tp=2)
    t0 = time.perf_counter()
    for b in range(1, 2001):
        memlib.estimate_inference(llama70, batch=b, weights="int4-gptq", tp=2)
    serve = (time.perf_counter() - t0) / 2000

    from memlib.parallel.plan import plan
    plans = {}
    for count, gpu in ((4, "v100-32gb"), (1024, "a100-80gb")):
        t0 = time.perf_counter()
        r = plan("llama-65b", gpu, count)
        plans[count] = (time.perf_counter() - t0, len(r.feasible) + len(r.infeasible), gpu)
    return {"one_s": one, "sweep_s": sweep, "sweep_calls": len(configs), "grid_points": len(grid),
            "serve_s": serve, "plans": plans}


def main() -> None:
    f = measure()
    print(f"estimate_training, one call (llama-7b, median of 2000): {f['one_s'] * 1e6:8.1f} us")
    print(f"estimate_training, 10,000 calls over a {f['grid_points']}-point grid: {f['sweep_s']:8.3f} s "
          f"({f['sweep_s'] / f['sweep_calls'] * 1e6:.1f} us/call)")
    print(f"estimate_inference, mean of 2000 calls (llama-2-70b, int4-gptq, tp=2): {f['serve_s'] * 1e6:8.1f} us")
    for count, (secs, layouts, gpu) in f["plans"].items():
        print(f"plan(llama-65b, {gpu}, {count}): {secs * 1e3:8.1f} ms for {layouts} layouts")


if __name__ == "__main__":
    main()
