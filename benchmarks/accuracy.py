"""memlib's estimate against every measured peak in validation/results.json.

    python benchmarks/accuracy.py

Prints one line per recorded case (measured peak, estimate, error, phase of the peak)
and the median and worst absolute error. Needs no torch: the measurements are recorded.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from memlib.measured import estimate_case

RESULTS = Path(__file__).resolve().parents[1] / "validation" / "results.json"


def main() -> None:
    data = json.loads(RESULTS.read_text())
    meta = data["metadata"]
    print(f"measured with torch {meta['torch']}, transformers {meta['transformers']}, peft {meta['peft']} "
          f"(fake {meta['fake_device']} tensors)\n")
    print(f"{'case':<52}{'measured GiB':>13}{'memlib GiB':>12}{'error':>9}  phase (measured / memlib)")
    errors = []
    for case in data["cases"]:
        m = case["measured"]
        est = estimate_case(case["inputs"])
        err = (est.peak_bytes - m["peak_bytes"]) / m["peak_bytes"]
        errors.append(abs(err))
        tag = " (holdout)" if case.get("holdout") else ""
        print(f"{case['name'] + tag:<52}{m['peak_bytes'] / 2**30:>13.3f}{est.peak_bytes / 2**30:>12.3f}"
              f"{err:>+9.2%}  {m['peak_phase']} / {est.phase}")
    print(f"\n{len(errors)} cases: median |error| {statistics.median(errors):.3%}, worst {max(errors):.3%}")

    fsdp = json.loads(RESULTS.with_name("results_fsdp.json").read_text())
    print(f"\nFSDP2 (fully_shard per layer + root, fake process group, FSDPMemTracker rank 0):")
    print(f"{'case':<52}{'measured GiB':>13}{'memlib GiB':>12}{'error':>9}")
    errors = []
    for case in fsdp["cases"]:
        m = case["measured"]
        est = estimate_case(case["inputs"])
        err = (est.peak_bytes - m["peak_bytes"]) / m["peak_bytes"]
        errors.append(abs(err))
        print(f"{case['name']:<52}{m['peak_bytes'] / 2**30:>13.3f}{est.peak_bytes / 2**30:>12.3f}{err:>+9.2%}")
    print(f"\n{len(errors)} FSDP cases: median |error| {statistics.median(errors):.3%}, worst {max(errors):.3%}")


if __name__ == "__main__":
    main()
