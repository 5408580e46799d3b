"""memlib against the rules people use instead, on every measured peak, and how fast it is.

    python benchmarks/anchors.py           # everything (the harness alone takes 10-20 s)
    python benchmarks/anchors.py --quick   # skips notebook execution and the harness timing

1. Accuracy. For every case of validation/results.json (40, one GPU) and
   validation/results_fsdp.json (16, FSDP2 over 1, 4 or 8 ranks): the measured peak and the
   signed error of memlib and of each rule below, then per method the median and worst
   |error| over the cases it can express ("n/a" where it cannot; those are left out of its
   figures). The measured peak is the bytes of live tensors (no CUDA context, no allocator
   cache), so rules are compared without their fixed overhead terms (see gpu_poor).
2. Speed: figures from bench_estimate.py and bench_notebooks.py, and the measurement
   harness's own time for one case against one memlib estimate of the same case.

Each rule is re-implemented from its public description, cited where it is written.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from memlib.training.measured import estimate_case
from memlib.models import Model
from memlib.parallel.zero import deepspeed_zero3_estimate

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "validation" / "results.json"
RESULTS_FSDP = ROOT / "validation" / "results_fsdp.json"
HARNESS_PYTHON = ROOT / ".venv-validate" / "bin" / "python"
HARNESS_CASE = "tiny-llama-bf16"
SIXTEEN_BIT = ("bf16", "fp16")


# ---------------------------------------------------------------------------- the cases

def load_cases() -> list[dict]:
    """Every recorded case as {"name", "inputs", "measured_bytes"}, one-GPU cases first."""
    cases = []
    for path in (RESULTS, RESULTS_FSDP):
        for c in json.loads(path.read_text())["cases"]:
            cases.append({"name": c["name"], "inputs": c["inputs"], "measured_bytes": c["measured"]["peak_bytes"]})
    return cases


def world_size(inputs: dict) -> int:
    return (inputs.get("fsdp") or {}).get("world_size", 1)


def num_params(inputs: dict) -> int:
    """Exact parameter count of the base model (tied embeddings once), as a tool that builds
    the model from its config counts it."""
    return Model.from_hf_config(inputs["config"], name=inputs["name"]).num_params


# ---------------------------------------------------------------------------- the methods
# Each takes a case's inputs and returns bytes on one GPU, or None where the rule cannot
# express the case.

def memlib_estimate(inputs: dict) -> int:
    return estimate_case(inputs).peak_bytes


def four_x_model_size_for_adam(inputs: dict) -> int | None:
    """Hugging Face Accelerate `accelerate estimate-memory`.

    Docs: https://huggingface.co/docs/accelerate/usage_guides/model_size_estimator -- the CLI
    loads the model on the meta device and reports per dtype "Total Size" (parameters x dtype
    bytes) and a "Training using Adam" column. The code behind it,
    accelerate/commands/estimate.py gather_data(): `dtype_training_size = dtype_total_size * 4`;
    the Model Memory Utility Space that runs it explains the column as: "When training with
    `Adam`, you can expect roughly 4x the reported results to be used. (1x for the model, 1x
    for the gradients, and 2x for the optimizer)."
    (huggingface.co/spaces/hf-accelerate/model-memory-usage, src/hub_utils.py).

    The dtype row is the one the weights are held in: float16/bfloat16 for "bf16"/"fp16",
    float32 for "fp32" and for AMP ("bf16-mixed": PyTorch keeps fp32 weights). Adam only, full
    fine-tuning only, one GPU only: the rule says nothing of LoRA, SGD or sharding.
    """
    if inputs["finetune"] != "full" or inputs.get("optimizer", "adamw") != "adamw" or world_size(inputs) > 1:
        return None
    dtype_bytes = 2 if inputs["precision"] in SIXTEEN_BIT else 4
    return 4 * num_params(inputs) * dtype_bytes


def eleuther_transformer_math(inputs: dict) -> int | None:
    """EleutherAI, "Transformer Math 101" (Anthony, Biderman, Schoelkopf 2023),
    https://blog.eleuther.ai/transformer-math/ , section "Training":

    - model: pure fp32 4 bytes/param, pure fp16/bf16 2 bytes/param, mixed precision 2
      bytes/param (the fp32 copy is counted with the optimizer);
    - optimizer: AdamW 12 bytes/param (fp32 copy 4, momentum 4, variance 4); SGD-like with
      momentum 8 bytes/param (fp32 copy 4, momentum 4); plain SGD is not given;
    - gradients: fp32 4 bytes/param, fp16 2 bytes/param ("gradients typically match the
      model's dtype", so 2 in mixed precision);
    - activations (16-bit, t = 1, no sequence parallelism): no recomputation
      sbhL(10 + 24/t + 5as/(ht)) = sbhL(34 + 5as/h) bytes; full recomputation 2sbhL bytes;
    - Total = model + optimizer + activations + gradients.
    Section "Sharded Optimizers", ZeRO-3 (what FSDP FULL_SHARD is): Total = activations +
    (model + optimizer + gradients) / No. GPUs + (ZeRO-3 live params, a DeepSpeed setting the
    page does not quantify: 0 here). LoRA is not covered.
    """
    optimizer_bytes = {"adamw": 12, "sgd-momentum": 8}.get(inputs.get("optimizer", "adamw"))
    if inputs["finetune"] != "full" or optimizer_bytes is None:
        return None
    cfg, p = inputs["config"], num_params(inputs)
    s, b = inputs["seq_len"], inputs["micro_batch"]
    h, L, a = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"]
    weight_bytes = 4 if inputs["precision"] == "fp32" else 2     # model and gradients alike
    if inputs["recompute"] == "full":
        activations = 2 * s * b * h * L
    else:
        activations = s * b * h * L * (34 + 5 * a * s / h)
    states = (weight_bytes + optimizer_bytes + weight_bytes) * p
    return int(activations + states / world_size(inputs))


def gpu_poor(inputs: dict) -> int | None:
    """gpu_poor ("Can your GPU run this?"), https://github.com/RahulSChand/gpu_poor ,
    src/App.js at commit 05d18ab8f093659c1689d93a66d549032e87c5ae (the README documents no
    formula; the code is the rule). Line numbers as counted in that file:

    - computeModelSize (l. 201-220): params = 2*V*h + 4*L*h^2 + 3*L*h*I (no GQA, no norms,
      both embeddings always counted); model bytes = 2 * params (convertToMBModelSize l.
      770-790; convertToBytes l. 792-794 returns 2 whatever dtype is picked);
    - getActivationMemory (l. 412-475), fB = 2, len = s, per layer
        attention  3*s*h*fB + 2*s*h*fB + s^2*a*fB + 4*s^2*a + s^2*a*fB + 3*s*h*fB
        MLP        2*h*s*fB + 5*s*I*fB + I*s*fB
        norms      8*s + 6*s*h*fB
      times L times batch; times 0.15 with gradient checkpointing (getAllComputedData l. 995-1000);
    - getGradOptMemory (l. 222-338), no quantization: full + Adam 3 * fB * params (l. 256-258),
      full + SGD 1 * fB * params (l. 276-278), LoRA + Adam L*8*h*2*4*3*2 (l. 297-301), LoRA +
      SGD L*8*h*2*4*2 (l. 318-320) -- LoRA is hardcoded to r = 8 on 4 matrices (README:
      "currently I have hardcoded r=8 for LoRA config"), so the case's rank and targets are
      not used, as in the tool;
    - total = model + grad/optimizer + activations + 650 MB "cuda + other overhead" (l. 825,
      1003-1007). The overhead is left out here: the measured peak has no CUDA context
      (memlib's peak has none either; memlib.fits budgets it separately).
    One GPU only (no sharding in the training path).
    """
    if world_size(inputs) > 1:
        return None
    cfg = inputs["config"]
    V, h, I = cfg["vocab_size"], cfg["hidden_size"], cfg["intermediate_size"]
    L, a = cfg["num_hidden_layers"], cfg["num_attention_heads"]
    s, b, fB = inputs["seq_len"], inputs["micro_batch"], 2
    params = V * h * 2 + L * 4 * h * h + L * 3 * I * h
    model = params * fB
    attention = 3 * s * h * fB + 2 * s * h * fB + s * s * a * fB + s * s * a * 4 + s * s * a * fB + 3 * s * h * fB
    mlp = 2 * h * s * fB + fB * 5 * s * I + I * s * fB
    norm = s * 4 * 2 + s * h * fB * 6
    activations = (attention + mlp + norm) * L * b * (0.15 if inputs["recompute"] == "full" else 1.0)
    adam = inputs.get("optimizer", "adamw") == "adamw"
    if inputs["finetune"] == "full":
        grad_opt = params * (3 if adam else 1) * fB
    else:
        grad_opt = L * 8 * h * 2 * 4 * (3 * 2 if adam else 2)
    return int(model + grad_opt + activations)


def deepspeed_zero3_model_states(inputs: dict) -> int | None:
    """DeepSpeed's documented ZeRO-3 estimator,
    deepspeed.runtime.zero.stage3.estimate_zero3_model_states_mem_needs (reproduced in
    memlib.parallel.zero.deepspeed_zero3_estimate; https://deepspeed.readthedocs.io/en/latest/memory.html),
    without offload: 4 * largest_layer_params + 18 * total_params / GPUs. Its
    largest_layer_params is the largest module's own parameters (model_to_params:
    `p.numel() for p in m.parameters(recurse=False)`), the V x h embedding or head here.
    It counts model states only -- no activations, logits or temporaries -- so it is a
    floor, not a peak. Applies to the sharded (FSDP) cases only.
    """
    if not inputs.get("fsdp"):
        return None
    model = Model.from_hf_config(inputs["config"], name=inputs["name"])
    _, gpu = deepspeed_zero3_estimate(model.num_params, model.largest_tensor_numel,
                                      num_gpus_per_node=world_size(inputs), cpu_offload=False)
    return gpu


METHODS = {
    "memlib": memlib_estimate,
    "4x Adam": four_x_model_size_for_adam,
    "Eleuther": eleuther_transformer_math,
    "gpu_poor": gpu_poor,
    "DS ZeRO-3": deepspeed_zero3_model_states,
}


# ---------------------------------------------------------------------------- accuracy

def errors_by_method(cases: list[dict]) -> dict[str, list[float | None]]:
    """Signed relative error (estimate - measured) / measured per method and case, None where n/a."""
    out = {}
    for label, method in METHODS.items():
        errs = []
        for c in cases:
            est = method(c["inputs"])
            errs.append(None if est is None else (est - c["measured_bytes"]) / c["measured_bytes"])
        out[label] = errs
    return out


def print_table(cases: list[dict], errors: dict[str, list[float | None]]) -> None:
    print(f"{'case':<42}{'meas GiB':>9}" + "".join(f"{label:>11}" for label in errors))
    for i, c in enumerate(cases):
        if c["inputs"].get("fsdp") and not (i and cases[i - 1]["inputs"].get("fsdp")):
            print("-- FSDP2 (fully_shard per layer + root, rank 0 of a fake process group) --")
        cells = "".join(f"{'n/a':>11}" if e[i] is None else f"{e[i]:>+11.2%}" for e in errors.values())
        print(f"{c['name']:<42}{c['measured_bytes'] / 2**30:>9.3f}{cells}")


def summary_lines(cases: list[dict], errors: dict[str, list[float | None]]) -> list[str]:
    """Per method: cases covered, median and worst |error|, and memlib's on the same cases."""
    lines = []
    for label, errs in errors.items():
        covered = [i for i, e in enumerate(errs) if e is not None]
        absolute = [abs(errs[i]) for i in covered]
        worst = max(covered, key=lambda i: abs(errs[i]))
        median = statistics.median(absolute)
        line = (f"{label:<10} covers {len(covered):>2}/{len(cases)}: median |error| {median:8.2%}, "
                f"worst {errs[worst]:+9.2%} ({cases[worst]['name']})")
        if label != "memlib":
            mine = [abs(errors["memlib"][i]) for i in covered]
            line += f"; memlib on the same cases: median {statistics.median(mine):.2%}, worst {max(mine):.2%}"
        lines.append(line)
    return lines


# ---------------------------------------------------------------------------- speed

def committed_notebooks() -> list[Path]:
    """The notebooks git tracks (work in progress beside them is not timed)."""
    out = subprocess.run(["git", "ls-files", "notebooks/*.ipynb"], cwd=ROOT, capture_output=True, text=True)
    return [ROOT / line for line in sorted(out.stdout.split())]


def time_estimate_case(inputs: dict, calls: int = 500) -> float:
    """Median seconds of estimate_case(inputs): config dict -> Model -> estimate, as a caller does."""
    estimate_case(inputs)
    samples = []
    for _ in range(calls):
        t0 = time.perf_counter()
        estimate_case(inputs)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def time_harness(case: str) -> tuple[float, str] | None:
    """Wall-clock seconds of one harness measurement of `case` and its summary line, or None
    if the validation environment is not installed."""
    if not HARNESS_PYTHON.exists():
        return None
    cmd = [str(HARNESS_PYTHON), "-m", "validation.harness", "--case", case, "--no-memtracker"]
    t0 = time.perf_counter()
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    secs = time.perf_counter() - t0
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({run.returncode}):\n{run.stderr[-2000:]}")
    line = next((ln for ln in run.stdout.splitlines() if ln.startswith(case + ":")), "")
    return secs, line


def print_speed(cases: list[dict], quick: bool) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_estimate
    import bench_notebooks

    f = bench_estimate.measure()
    row("one estimate_training (llama-7b, median of 2000 calls)", f"{f['one_s'] * 1e6:.1f} us")
    row(f"10,000-config sweep ({f['grid_points']}-point grid)",
        f"{f['sweep_s']:.3f} s ({f['sweep_s'] / f['sweep_calls'] * 1e6:.1f} us/config)")
    for count, (secs, layouts, gpu) in f["plans"].items():
        row(f"plan search, llama-65b on {count} x {gpu}", f"{secs * 1e3:.1f} ms ({layouts} layouts)")

    if quick:
        row("notebook execution", "skipped (--quick)")
    else:
        total = 0.0
        for path in committed_notebooks():
            try:
                secs = bench_notebooks.notebook_time(path)
            except Exception as e:  # a failing notebook is reported, the run goes on
                row(f"notebook {path.name}", f"failed: {type(e).__name__}")
                continue
            total += secs
            row(f"notebook {path.name} (fresh kernel)", f"{secs:.2f} s")
        row("notebooks, all of the above", f"{total:.2f} s")
    lat = bench_notebooks.playground_latency()
    row(f"playground widget update ({lat['n']} control changes)",
        f"median {lat['median_s'] * 1e3:.2f} ms, max {lat['max_s'] * 1e3:.2f} ms")

    inputs = next(c["inputs"] for c in cases if c["name"] == HARNESS_CASE)
    one = time_estimate_case(inputs)
    row(f"memlib estimate of {HARNESS_CASE} (from its config, median)", f"{one * 1e6:.1f} us")
    if quick:
        row("harness timing", "skipped (--quick)")
        return
    harness = time_harness(HARNESS_CASE)
    if harness is None:
        row("harness timing", f"skipped: {HARNESS_PYTHON.relative_to(ROOT)} is not installed")
        return
    secs, line = harness
    row(f"harness, --case {HARNESS_CASE} --no-memtracker (one process)", f"{secs:.2f} s wall")
    print(f"  harness said: {line}")
    print(f"\nmemlib is {secs / one:,.0f}x faster than measuring ({secs:.2f} s vs {one * 1e6:.1f} us)")


def row(label: str, value: str) -> None:
    print(f"{label:<62} {value}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="skip notebook execution and the harness timing")
    args = ap.parse_args(argv)

    cases = load_cases()
    errors = errors_by_method(cases)
    print("Accuracy: signed error of each estimate against the measured peak (live tensor bytes, "
          "second training step)\n")
    print_table(cases, errors)
    print()
    for line in summary_lines(cases, errors):
        print(line)
    print("n/a: the rule cannot express the case (LoRA, SGD, sharding) and it is left out of that rule's figures;\n"
          "gpu_poor without its fixed 650 MB 'cuda + other overhead'; DS ZeRO-3 counts model states only.")
    print("\nSpeed\n")
    print_speed(cases, args.quick)


if __name__ == "__main__":
    main()
