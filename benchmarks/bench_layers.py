"""Wall-clock of every entry point at huge layer counts (issue 23 item 3): layers are a pattern, not a tuple.

    python benchmarks/bench_layers.py                 # 126 to 10**9 layers (memlib's MAX_LAYERS)
    python benchmarks/bench_layers.py --past-bound    # also 10**12 layers, the bound lifted for the run

Each catalog config.json family is read with num_hidden_layers set to each count, then estimated (pp = 1 and a
4-stage pipeline), served, fitted, timed and planned. Not a test: timings depend on the machine, so they are
printed, never asserted; a row over 20 s is cut and shown as "> 20 s".
"""

from __future__ import annotations

import copy
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import memlib  # noqa: E402
from memlib import Model, estimate_inference, estimate_training, fits, step_time  # noqa: E402
from memlib.models import hf_readers  # noqa: E402
from memlib.models.hf_configs import HF_CONFIGS  # noqa: E402
from memlib.parallel.plan import min_gpus, plan  # noqa: E402

FAMILIES = ("tiny", "llama-3.1-8b", "deepseek-v3", "gemma-3-27b", "llama-4-maverick", "gpt-oss-20b", "qwen3-30b-a3b")
LIMIT_S = 20


def _with_layers(name: str, n: int) -> dict:
    cfg = copy.deepcopy(HF_CONFIGS[name]["config"])
    text = cfg.get("text_config", cfg)
    text["num_hidden_layers"] = n
    text.pop("layer_types", None)  # a per-layer list of the published depth; the family default pattern instead
    return cfg


class _Slow(Exception):
    pass


def timed(f):
    def alarm(*_):
        raise _Slow
    signal.signal(signal.SIGALRM, alarm)
    signal.alarm(LIMIT_S)
    t0 = time.perf_counter()
    try:
        f()
        return time.perf_counter() - t0
    except _Slow:
        return float("inf")
    except ValueError:  # a clear refusal (e.g. a byte count past 2**53) is an answer too
        return -(time.perf_counter() - t0)
    finally:
        signal.alarm(0)


TINY = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
        "num_hidden_layers": 2, "vocab_size": 1000}  # narrow enough that 10**12 layers stay under 2**53 bytes


def with_layers(name: str, n: int) -> dict:
    if name == "tiny":
        return {**TINY, "num_hidden_layers": n}
    return _with_layers(name, n)


def row(name: str, n: int) -> dict:
    m = Model.from_hf_config(with_layers(name, n), name=name)
    e = None
    try:
        e = estimate_training(m, seq_len=512)
    except ValueError:
        pass
    checks = {
        "from_hf_config": lambda: Model.from_hf_config(with_layers(name, n), name=name).num_params,
        "estimate_training": lambda: estimate_training(m, seq_len=512, micro_batch=2),
        "estimate pp=4": lambda: estimate_training(m, seq_len=512, pp=4, grad_accum=8),
        "estimate_inference": lambda: estimate_inference(m, context_len=1024),
        "fits": lambda: fits(e, "h100") if e else None,
        "step_time": lambda: step_time(estimate_training(m, seq_len=512, dp=8), "h100"),
        "to_dict": lambda: json.dumps(e.to_dict()) if e else None,
        "plan (8 GPUs)": lambda: plan(m, "h100", 8),
        "min_gpus (<= 64)": lambda: min_gpus(m, "h100", max_count=64),
    }
    return {k: timed(f) for k, f in checks.items()}


def main() -> None:
    counts = [126, 10**5, 10**7, 10**9]
    if "--past-bound" in sys.argv:
        hf_readers.MAX_LAYERS = 10**12  # read at call time by the checks
        counts.append(10**12)
    print(f"memlib {memlib.__version__ if hasattr(memlib, '__version__') else ''}, bound {hf_readers.MAX_LAYERS:,} layers")
    for n in counts:
        worst: dict = {}
        for name in FAMILIES:
            for k, v in row(name, n).items():
                if abs(v) >= abs(worst.get(k, (0, ""))[0]):
                    worst[k] = (v, name)
        print(f"\n{n:,} layers: slowest family per entry point (refused: a clear ValueError, e.g. bytes past 2**53)")
        for k, (v, name) in worst.items():
            shown = f"> {LIMIT_S} s" if v == float("inf") else f"{abs(v) * 1e3:9.1f} ms" + (" refused" if v < 0 else "")
            print(f"  {k:20s} {shown:>20s}  ({name})")


if __name__ == "__main__":
    main()
