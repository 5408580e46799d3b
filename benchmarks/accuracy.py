"""memlib's estimate against every measured peak in validation/results.json, results_fsdp.json and
results_families.json (the newer families: Qwen3, Gemma, Phi-3, OLMo 2, MoE and MLA models) and
results_cp.json (context parallelism).

    python benchmarks/accuracy.py

Prints one line per recorded case (measured peak, estimate, error, phase of the peak), grouped
into the cases recorded before the recipe options (issue 9), the recipe cases (each named
after the option it measures), the calibration cases (LitGPT's recipe, measured to explain
the published LitGPT peaks) and the FSDP2 cases, with the median and worst absolute error
of each group. Needs no torch: the measurements are recorded.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from memlib.training.measured import estimate_case

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "validation" / "results.json"


def _names(group: str) -> set[str]:
    import sys
    sys.path.insert(0, str(ROOT))
    from validation import cases  # plain data, no torch
    return {c["name"] for c in getattr(cases, group)}


def _table(cases, title: str, phases: bool = True) -> None:
    print(f"\n{title}")
    print(f"{'case':<52}{'measured GiB':>13}{'memlib GiB':>12}{'error':>9}" + ("  phase (measured / memlib)"
                                                                              if phases else ""))
    errors = []
    for case in cases:
        m = case["measured"]
        est = estimate_case(case["inputs"])
        err = (est.peak_bytes - m["peak_bytes"]) / m["peak_bytes"]
        errors.append(abs(err))
        tag = " (holdout)" if case.get("holdout") else ""
        line = f"{case['name'] + tag:<52}{m['peak_bytes'] / 2**30:>13.3f}{est.peak_bytes / 2**30:>12.3f}{err:>+9.2%}"
        if phases:
            line += f"  {m['peak_phase']} / {est.phase}"
        print(line)
    print(f"{len(errors)} cases: median |error| {statistics.median(errors):.3%}, worst {max(errors):.3%}")


def main() -> None:
    data = json.loads(RESULTS.read_text())
    meta = data["metadata"]
    bnb = f", bitsandbytes {meta['bitsandbytes']}" if meta.get("bitsandbytes") else ""
    print(f"measured with torch {meta['torch']}, transformers {meta['transformers']}, peft {meta['peft']}{bnb} "
          f"(fake {meta['fake_device']} tensors)")
    recipes, calibration = _names("RECIPE_CASES"), _names("CALIBRATION_CASES")
    _table([c for c in data["cases"] if c["name"] not in recipes | calibration],
           "Cases recorded before the recipe options (AdamW for-loop, adapters in the base dtype):")
    _table([c for c in data["cases"] if c["name"] in recipes],
           "Recipe cases (issue 9), each named after the option it measures:")
    _table([c for c in data["cases"] if c["name"] in calibration],
           "Calibration cases: LitGPT's recipe (chunked head, Lightning's 4-bit layers, bitsandbytes<0.43.2):")
    fsdp = json.loads(RESULTS.with_name("results_fsdp.json").read_text())
    _table(fsdp["cases"], "FSDP2 (fully_shard per layer + root, fake process group, FSDPMemTracker rank 0):",
           phases=False)
    families = json.loads(RESULTS.with_name("results_families.json").read_text())
    _table([c for c in families["cases"] if "measured" in c],
           "Newer families (issue 10: q/k norms, post-norms, fused projections, sliding windows, MoE, MLA):")
    cp = json.loads(RESULTS.with_name("results_cp.json").read_text())
    _table(cp["cases"], "Context parallelism (torch's ring attention under FSDP2, fake process group, rank cp - 1):",
           phases=False)


if __name__ == "__main__":
    main()
