"""Execution time of every notebook and the playground's update latency.

    python benchmarks/bench_notebooks.py

Each notebook runs in a fresh kernel (nbclient, this environment's python3 kernel), as
nbval runs it; the time includes the kernel start. The playground is timed in-process by
setting its controls from Python, which runs the same update a slider change does.
Aims (issue): all notebooks together under 60 s on this 2-core machine; an update under 50 ms.
"""

from __future__ import annotations

import contextlib
import io
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_notebooks() -> None:
    import nbformat
    from nbclient import NotebookClient

    total = 0.0
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        t0 = time.perf_counter()
        NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
        dt = time.perf_counter() - t0
        total += dt
        print(f"{path.name:<40} {dt:6.2f} s")
    print(f"{'all notebooks':<40} {total:6.2f} s")


def playground_latency() -> None:
    from memlib.playground import Playground

    with contextlib.redirect_stdout(io.StringIO()):
        p = Playground()
    changes = [("seq_len", s) for s in (512, 1024, 4096, 8192, 2048)] + \
              [("model", m) for m in ("llama-13b", "llama-65b", "mistral-7b", "llama-7b")] + \
              [("zero", z) for z in ("ZeRO-3", "ZeRO-3 + offload optimizer", "none")] + \
              [("count", c) for c in (8, 64, 1)] + [("method", m) for m in ("LoRA", "QLoRA", "full fine-tune")]
    times = []
    with contextlib.redirect_stdout(io.StringIO()):  # outside a kernel, display() prints reprs
        for name, value in changes * 5:
            t0 = time.perf_counter()
            p.controls[name].value = value
            times.append(time.perf_counter() - t0)
    print(f"playground update: median {statistics.median(times) * 1e3:.2f} ms, "
          f"max {max(times) * 1e3:.2f} ms over {len(times)} control changes")


if __name__ == "__main__":
    run_notebooks()
    playground_latency()
