"""Measured truth for memlib: the command line of the measurement harness.

Builds transformers' own model classes from config dicts under FakeTensorMode (no real
memory, no weights), runs the reference training loop twice and records the second step's
peak. The measuring itself is validation/measure.py; this module reads the options and writes
results.json. See validation/README.md for the semantics and how to regenerate results.json.

    python -m validation.harness --list
    python -m validation.harness --case tiny-llama-bf16 [--case ...]
    python -m validation.harness --all --write
    python -m validation.harness --check [--case ...]
    python -m validation.harness --cuda --case ...      (real GPU only)
    python -m validation.harness --sharded --all --write  (FSDP2, results_fsdp.json)
    python -m validation.harness --families --all --write (newer families, results_families.json)
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
import time
from pathlib import Path

import torch

from validation.cases import ALL_CASES, CHECK_DEFAULT, get_case
# the measuring pieces, also importable from here as before (validation.harness.measure_case, ...)
from validation.measure import (  # noqa: F401
    CHECK_REL_TOL, LiveBytesTracker, _fmt, _summary_line, _versions, measure_case, measure_case_cuda,
    probe_fake_cuda,
)

RESULTS_PATH = Path(__file__).with_name("results.json")


def _load_results() -> dict | None:
    if RESULTS_PATH.exists():
        return json.loads(RESULTS_PATH.read_text())
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m validation.harness", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", action="append", default=[], help="case name (repeatable)")
    ap.add_argument("--all", action="store_true", help="every case, holdouts included")
    ap.add_argument("--list", action="store_true", help="list case names")
    ap.add_argument("--write", action="store_true", help="write validation/results.json")
    ap.add_argument("--check", action="store_true",
                    help="re-measure and compare with results.json (exit 1 on mismatch)")
    ap.add_argument("--cuda", action="store_true", help="real CUDA tensors (needs a GPU)")
    ap.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto",
                    help="fake device (auto: fake CUDA if this build supports it)")
    ap.add_argument("--no-memtracker", action="store_true",
                    help="dispatch tracker only (faster); with --sharded: FSDPMemTracker "
                         "only, no dispatch cross-check")
    ap.add_argument("--sharded", action="store_true",
                    help="FSDP2-sharded cases (cases.SHARDED_CASES, results_fsdp.json); "
                         "combine with --list/--case/--all/--write/--check")
    ap.add_argument("--families", action="store_true",
                    help="newer model families (validation/families.py, results_families.json); "
                         "combine with --list/--case/--all/--write")
    args = ap.parse_args(argv)

    if args.families:
        from validation.families import main_families
        return main_families(args)

    if args.sharded:
        from validation.sharded import main_sharded
        return main_sharded(args)

    if args.list:
        for c in ALL_CASES:
            tag = " [holdout]" if c["holdout"] else ""
            print(f"{c['name']}{tag}")
        return 0

    if args.cuda:
        if not torch.cuda.is_available():
            print("--cuda: torch.cuda.is_available() is False; nothing measured.")
            return 2
        names = args.case or [c["name"] for c in ALL_CASES]
        out = {"metadata": {**_versions(), "device": torch.cuda.get_device_name(),
                            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(),
                            "tracker": "torch.cuda.max_memory_allocated"}, "cases": {}}
        for n in names:
            try:
                r = measure_case_cuda(get_case(n))
                out["cases"][n] = r
                print(f"{n}: cuda peak {_fmt(r['peak_bytes'])} in {r['peak_phase']}")
            except torch.cuda.OutOfMemoryError as e:
                out["cases"][n] = {"error": f"OutOfMemoryError: {e}"}
                print(f"{n}: OOM")
                torch.cuda.empty_cache()
        if args.write:
            p = RESULTS_PATH.with_name("results_cuda.json")
            p.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
            print(f"wrote {p}")
        return 0

    if args.device == "auto":
        ok, why = probe_fake_cuda()
        device = "cuda" if ok else "cpu"
    else:
        device, why = args.device, "chosen with --device"

    if args.check:
        recorded = _load_results()
        if recorded is None:
            print("no results.json to check against")
            return 2
        rec_dev = recorded["metadata"]["fake_device"]
        if args.device == "auto":
            device = rec_dev  # compare like with like
        by_name = {c["name"]: c for c in recorded["cases"]}
        failed = 0
        for n in args.case or CHECK_DEFAULT:
            if n not in by_name:
                print(f"{n}: not in results.json"); failed += 1; continue
            old = by_name[n]["measured"]
            new = measure_case(get_case(n), device)
            a, b = old["peak_bytes"], new["peak_bytes"]
            if a == b:
                verdict = "exact match"
            elif abs(b - a) <= CHECK_REL_TOL * a:
                verdict = f"within 0.1% ({(b - a) / a:+.2e})"
            else:
                verdict = f"MISMATCH ({(b - a) / a:+.2e})"; failed += 1
            print(f"{n}: recorded {a:,}  measured {b:,}  [{old['peak_source']}]  {verdict}")
        return 1 if failed else 0

    names = [c["name"] for c in ALL_CASES] if args.all else args.case
    if not names:
        ap.print_help()
        return 2
    print(f"fake device: {device} ({why})")
    results = []
    for n in names:
        case = get_case(n)
        t0 = time.time()
        m = measure_case(case, device, use_memtracker=not args.no_memtracker)
        print(_summary_line(n, m) + f"  [{time.time() - t0:.1f}s]", flush=True)
        results.append({"name": n, "holdout": case["holdout"], "inputs": case, "measured": m})

    if args.write:
        meta = {
            **_versions(),
            "fake_device": device,
            "fake_device_note": why,
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "tracker": ("torch.distributed._tools.mem_tracker.MemTracker for full "
                        "fine-tuning; validation.measure.LiveBytesTracker (dispatch) for "
                        "LoRA/QLoRA; both record raw storage nbytes on the fake CPU device"),
            "peak": "second training step, bytes of live tensor storages",
            "semantics": ("AutoModelForCausalLM.from_config, labels=input_ids, use_cache=False, "
                          "train(), out kept alive across steps, zero_grad(set_to_none=True); each case's "
                          "inputs name its options (cases.py OPTION_DEFAULTS: optimizer_impl foreach, LoRA "
                          "adapters fp32 over a 16-bit base under *-mixed, grad_accum 1, loss full, no "
                          "activation offload; cases recorded before these options carry their own values)"),
            "recipes": ("validation/recipes.py: CUDA's native_dropout, Liger's fused linear cross-entropy, "
                        "torchtune's activation offloading (host = meta device), torchtitan's selective "
                        "checkpointing, LitGPT's chunked head and loss under Fabric (fp32 logits); "
                        "validation/qlora.py: bitsandbytes' MatMul4Bit on fake packed weights, as transformers "
                        "builds the 4-bit base or as Lightning's BitsandbytesPrecision does (lm_head in 4 bits, "
                        "quantized from fp16), and bitsandbytes<0.43.2's ctx.tensors = (A, B)"),
        }
        if args.all:
            data = {"metadata": meta, "cases": results}
        else:  # merge into the existing file
            data = _load_results() or {"metadata": meta, "cases": []}
            data["metadata"] = meta
            keep = [c for c in data["cases"] if c["name"] not in set(names)]
            order = {c["name"]: i for i, c in enumerate(ALL_CASES)}
            data["cases"] = sorted(keep + results, key=lambda c: order.get(c["name"], 1e9))
        RESULTS_PATH.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {RESULTS_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
