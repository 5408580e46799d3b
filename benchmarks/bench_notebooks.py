"""Execution time of every notebook and the playground's update latency.

    python benchmarks/bench_notebooks.py

Each notebook runs in a fresh kernel (nbclient, this environment's python3 kernel), as
nbval runs it; the time includes the kernel start. The playground is timed in-process by
setting its controls from Python, which runs the same update a slider change does.
Aims (issue): all notebooks together under 60 s on this 2-core machine; an update under 50 ms.
`notebook_time(path)`, `notebook_times()` and `playground_latency()` return the figures
(benchmarks/anchors.py uses them).
"""

from __future__ import annotations

import contextlib
import io
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def notebook_time(path: Path) -> float:
    """Seconds to execute one notebook in a fresh kernel (raises if a cell fails)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    t0 = time.perf_counter()
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    return time.perf_counter() - t0


def notebook_times() -> list[tuple[str, float]]:
    """(notebook file name, seconds to execute it in a fresh kernel), in name order."""
    return [(path.name, notebook_time(path)) for path in sorted((ROOT / "notebooks").glob("*.ipynb"))]


def run_notebooks() -> None:
    times = notebook_times()
    for name, dt in times:
        print(f"{name:<40} {dt:6.2f} s")
    print(f"{'all notebooks':<40} {sum(dt for _, dt in times):6.2f} s")


def playground_latency() -> dict:
    """Seconds per control change of the playground: {"median_s", "max_s", "n"}."""
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
    return {"median_s": statistics.median(times), "max_s": max(times), "n": len(times)}


if __name__ == "__main__":
    run_notebooks()
    lat = playground_latency()
    print(f"playground update: median {lat['median_s'] * 1e3:.2f} ms, "
          f"max {lat['max_s'] * 1e3:.2f} ms over {lat['n']} control changes")
