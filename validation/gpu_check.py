"""Real-GPU check: the harness's cases and the published setups, run on CUDA with random weights.

    python -m validation.gpu_check --dry-run --all      # what would run, with time estimates (no torch needed)
    python -m validation.gpu_check --quick --write      # the important cases (a few minutes)
    python -m validation.gpu_check --all --write        # every case that one GPU can run
    python -m validation.gpu_check --case NAME --published ID ... [--write]

Two kinds of job:
  harness    every unsharded case of validation/cases.py, built and trained exactly as the
             fake-tensor harness does (validation.measure._build and _train_steps: its
             reference semantics), on real CUDA tensors;
  published  every row of validation/published.jsonl that memlib can express and one GPU can
             run, rebuilt in the reference stack (transformers from_config + PEFT +
             bitsandbytes, random weights, no download) with the row's memlib options:
             precision (issue 9's semantics: LoRA/QLoRA keep a 16-bit base, adapters in
             adapter_dtype), lora_dropout, optimizer_impl, grad_accum, recompute, loss
             ("chunked-head": LitGPT's head per 128 tokens, fp32 under Fabric, cross-entropy
             per chunk, validation/recipes.py; "chunked": Liger's fused loss as recipes.py
             emulates it), QLoRA through bnb.nn.Linear4bit (NF4, double_quant) on every
             decoder projection, or as Lightning's BitsandbytesPrecision builds it (every
             Linear, lm_head too, quantized from fp16) for the "lightning-" backends, with
             bitsandbytes<0.43.2's ctx.tensors = (A, B) for the "<0.43.2" ones
             (validation/qlora.py). It measures the recipe's *setup*, not the framework that
             published the figure (LitGPT's own model code, for example).
For each job: torch.cuda.max_memory_allocated, max_memory_reserved and the allocator's active
peak per phase (forward, backward, optimizer) of the second optimizer step, the first step's
peak, and the model's parameter facts. Gradient accumulation runs min(grad_accum, 2) micro-
batches per step: from the second micro-batch on, every micro-batch sees the same live set
(gradients already allocated), so the peak does not change with more.

Results go to validation/results_cuda.json ("cases" for harness jobs, in the schema of
`harness --cuda`, plus "published"), with torch, transformers, peft and bitsandbytes versions,
the GPU's name and total memory; --write merges into an existing file and saves after every
job, so a run cut short keeps what it measured. Skipped: FSDP and other multi-GPU setups,
inference rows, torch.compile, activation offloading, recompute="selective" (no transformers
equivalent), QLoRA when bitsandbytes is missing. Without CUDA it refuses (exit 2).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import gc
import json
import platform
import sys
import time
from pathlib import Path

from validation.cases import ALL_CASES, get_case

HERE = Path(__file__).resolve().parent
PUBLISHED = HERE / "published.jsonl"
RESULTS_CUDA = HERE / "results_cuda.json"
GRAD_ACCUM_RUN = 2  # micro-batches per step actually run (see the module docstring)

QUICK_HARNESS = ["tiny-llama-bf16", "tiny-llama-mixed-ckpt", "tiny-llama-lora8-attn-bf16",
                 "llama3-8b-2l-mixed-ckpt", "llama-7b-bf16", "llama-7b-lora16-all-bf16-ckpt"]
QUICK_PUBLISHED = ["litgpt-2023-llama-2-7b-lora-mb1", "litgpt-2023-llama-2-7b-qlora-nf4dq-mb1",
                   "litgpt-hub-llama-3-8b-lora-mb1", "litgpt-hub-llama-3-8b-qlora-mb2",
                   "litgpt-hub-tinyllama-full-mb4", "torchtune-llama-3.2-3b-full-packed"]

# Rough H100-class speed for the time estimates (seconds): startup, per billion parameters
# built on the GPU, per 1e15 training FLOPs (6 * params * tokens), per billion params quantized.
EST_START_S, EST_BUILD_S_PER_B, EST_S_PER_PFLOP, EST_QUANT_S_PER_B = 3.0, 1.5, 4.0, 2.0


# --------------------------------------------------------------------------------------
# Planning (no torch)
# --------------------------------------------------------------------------------------

def _num_params(config: dict) -> int:
    """Parameter count for the time estimate (memlib where it reads the family, else 12 h^2 L + V h)."""
    try:
        import memlib
        return memlib.Model.from_hf_config(config).num_params
    except ValueError:
        h, L = config["hidden_size"], config["num_hidden_layers"]
        return 12 * h * h * L + 2 * config["vocab_size"] * h


def load_published(path: Path = PUBLISHED) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def published_spec(row: dict) -> dict:
    """The job for one published row: its model config and memlib options, read from the row."""
    kw, setup = row["memlib"]["kwargs"], row["setup"]
    spec = {
        "name": row["id"], "config": dict(setup["model"]["config"]),
        "seq_len": kw["seq_len"], "micro_batch": kw["micro_batch"], "grad_accum": kw.get("grad_accum", 1),
        "precision": kw.get("precision", "bf16-mixed"), "finetune": kw.get("finetune", "full"),
        "optimizer": kw.get("optimizer", "adamw"), "optimizer_impl": kw.get("optimizer_impl", "foreach"),
        "recompute": kw.get("recompute", "none"), "attention": kw.get("attention", "sdpa"),
        "loss": kw.get("loss", "full"), "activation_offload": kw.get("activation_offload", False),
        "num_gpus": setup["num_gpus"], "compile": setup.get("compile", False),
    }
    if spec["finetune"] in ("lora", "qlora"):
        spec["lora"] = {"r": kw["lora_rank"], "alpha": setup["lora"]["alpha"],
                        "dropout": kw.get("lora_dropout", 0.0), "targets": list(kw["lora_targets"]),
                        "adapter_dtype": kw.get("adapter_dtype", "fp32")}
    if spec["finetune"] == "qlora":
        spec["double_quant"] = kw.get("double_quant", True)
        spec["qlora_backend"] = kw.get("qlora_backend", "bitsandbytes")
    spec["grad_accum_run"] = min(spec["grad_accum"], GRAD_ACCUM_RUN)
    return spec


def skip_reason(row: dict) -> str | None:
    """Why one GPU cannot run a published row here (None: it can)."""
    ml = row["memlib"]
    if not ml["expressible"]:
        return "not expressible in memlib: " + ml["missing"]
    if row["kind"] != "training":
        return "inference row: gpu_check runs training steps"
    spec = published_spec(row)
    kw = ml["kwargs"]
    if spec["num_gpus"] > 1 or kw.get("tp", 1) * kw.get("pp", 1) * kw.get("dp", 1) > 1:
        return f"needs {spec['num_gpus']} GPUs ({row['setup']['sharding']})"
    if spec["compile"]:
        return "torch.compile"
    if spec["activation_offload"]:
        return "activation offloading is not implemented here"
    if spec["recompute"] == "selective":
        return "recompute='selective' has no transformers equivalent"
    if spec["optimizer"] not in ("adamw", "adamw-8bit"):
        return f"optimizer {spec['optimizer']!r} is not run here"
    if spec.get("qlora_backend", "bitsandbytes") == "torchao":
        return "QLoRA backend torchao is not run here"
    return None


def estimate_seconds(kind: str, spec: dict) -> float:
    n = _num_params(spec["config"])
    tokens = spec["seq_len"] * spec["micro_batch"]
    micro = 2 * (spec.get("grad_accum_run", 1))
    build = EST_BUILD_S_PER_B * n / 1e9 * (2 if kind == "harness" else 1)  # harness builds fp32 then casts
    train = EST_S_PER_PFLOP * 6 * n * tokens * micro / 1e15
    quant = EST_QUANT_S_PER_B * n / 1e9 if spec.get("finetune") == "qlora" else 0.0
    return EST_START_S + build + train + quant


def plan(cases: list[str], published: list[str], rows: list[dict] | None = None) -> list[dict]:
    """Jobs to run, in order; each {"kind", "name", "spec", "skip", "est_s"}."""
    rows = load_published() if rows is None else rows
    by_id = {r["id"]: r for r in rows}
    jobs = []
    for name in cases:
        spec = get_case(name)
        jobs.append({"kind": "harness", "name": name, "spec": spec, "skip": None,
                     "est_s": estimate_seconds("harness", spec)})
    for rid in published:
        if rid not in by_id:
            raise ValueError(f"unknown published row {rid!r}; see validation/published.jsonl")
        row = by_id[rid]
        why = skip_reason(row)
        spec = published_spec(row) if why is None else None
        jobs.append({"kind": "published", "name": rid, "spec": spec, "skip": why,
                     "est_s": estimate_seconds("published", spec) if spec else 0.0})
    return jobs


def selection(args, rows: list[dict]) -> tuple[list[str], list[str]]:
    if args.all:
        return [c["name"] for c in ALL_CASES], [r["id"] for r in rows]
    if args.quick:
        return list(QUICK_HARNESS), list(QUICK_PUBLISHED)
    return list(args.case), list(args.published)


def print_plan(jobs: list[dict], out=None) -> None:
    out = out or sys.stdout
    run = [j for j in jobs if j["skip"] is None]
    for j in jobs:
        if j["skip"] is None:
            print(f"run   {j['kind']:<10}{j['name']:<62}~{j['est_s']:5.0f} s", file=out)
    for j in jobs:
        if j["skip"] is not None:
            print(f"skip  {j['kind']:<10}{j['name']:<62}{j['skip']}", file=out)
    total = sum(j["est_s"] for j in run)
    print(f"\n{len(run)} jobs to run, {len(jobs) - len(run)} skipped; estimated {total / 60:.1f} min on an "
          f"H100-class GPU (plus CUDA start-up)", file=out)


# --------------------------------------------------------------------------------------
# Running (torch, CUDA)
# --------------------------------------------------------------------------------------

def _versions() -> dict:
    import torch
    import transformers
    v = {"torch": torch.__version__, "transformers": transformers.__version__, "python": platform.python_version()}
    for mod in ("peft", "bitsandbytes"):
        try:
            v[mod] = __import__(mod).__version__
        except Exception as e:  # recorded: the reason QLoRA jobs were skipped
            v[mod] = f"unavailable ({type(e).__name__})"
    return v


class PhaseRecorder:
    """Allocated, reserved and active peaks per phase, from the CUDA caching allocator's counters."""

    def __init__(self, torch):
        self.torch = torch
        self.phase = None
        self.peaks: dict[str, dict[str, int]] = {}

    def _read(self) -> dict[str, int]:
        cuda = self.torch.cuda
        cuda.synchronize()
        return {"allocated": cuda.max_memory_allocated(), "reserved": cuda.max_memory_reserved(),
                "active": cuda.memory_stats().get("active_bytes.all.peak", 0)}

    def close(self) -> None:
        if self.phase is not None:
            now = self._read()
            old = self.peaks.get(self.phase, {})
            self.peaks[self.phase] = {k: max(v, old.get(k, 0)) for k, v in now.items()}
        self.phase = None

    def begin(self, name: str) -> None:
        self.close()
        self.torch.cuda.reset_peak_memory_stats()
        self.phase = name

    def summary(self) -> dict:
        self.close()
        pp = self.peaks
        phase = max(pp, key=lambda p: pp[p]["allocated"])
        return {"peak_bytes": pp[phase]["allocated"], "peak_phase": phase,
                "peak_reserved_bytes": max(v["reserved"] for v in pp.values()),
                "peak_active_bytes": max(v["active"] for v in pp.values()),
                "phase_peaks": {k: v["allocated"] for k, v in pp.items()},
                "phase_peaks_reserved": {k: v["reserved"] for k, v in pp.items()},
                "phase_peaks_active": {k: v["active"] for k, v in pp.items()}}


def _hf_targets(model_type: str, targets: list[str]) -> list[str]:
    # GPT-NeoX fuses q, k and v in one Linear; LoRA on "q and v" adapts that module.
    if model_type == "gpt_neox":
        return sorted({"query_key_value" if t in ("q_proj", "k_proj", "v_proj") else t for t in targets})
    return targets


def _quantize_decoder_linears(model, torch, double_quant: bool, backend: str = "bitsandbytes") -> None:
    """Every nn.Linear inside the decoder layers -> bnb.nn.Linear4bit (NF4, bf16 compute), as
    transformers' bitsandbytes integration does (lm_head and embeddings stay 16-bit). The
    "lightning-" backends do what Lightning's BitsandbytesPrecision does: the head too, and every
    weight quantized from fp16 (quant_state.dtype fp16: dequantized to fp16, then cast)."""
    import bitsandbytes as bnb
    from validation import qlora
    lightning = qlora.lightning(backend)

    def four_bit(child):
        q = bnb.nn.Linear4bit(child.in_features, child.out_features, bias=child.bias is not None,
                              compute_dtype=torch.bfloat16, compress_statistics=double_quant,
                              quant_type="nf4", device="meta")
        w = child.weight.data.half() if lightning else child.weight.data
        q.weight = bnb.nn.Params4bit(w, requires_grad=False, quant_type="nf4", compress_statistics=double_quant)
        if child.bias is not None:
            q.bias = torch.nn.Parameter(child.bias.data, requires_grad=False)
        return q.to(child.weight.device)  # Params4bit.to(cuda) quantizes

    layers = model.get_decoder().layers if hasattr(model, "get_decoder") else model.model.layers
    for layer in layers:
        for parent in list(layer.modules()):
            for name, child in list(parent.named_children()):
                if type(child) is torch.nn.Linear:
                    setattr(parent, name, four_bit(child))
    if lightning:
        model.set_output_embeddings(four_bit(model.get_output_embeddings()))
    model.is_loaded_in_4bit = True  # PEFT's LoRA dispatch looks for it


def build_published(spec: dict, device: str = "cuda"):
    """Model, optimizer and inputs for a published setup (random weights, no download)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    bf16 = torch.bfloat16
    cfg = dict(spec["config"])
    cfg_obj = AutoConfig.for_model(cfg.pop("model_type"), **cfg)
    cfg_obj.use_cache = False
    prec, ft = spec["precision"], spec["finetune"]
    if prec not in ("fp32", "bf16", "bf16-mixed"):
        raise ValueError(f"precision {prec!r} is not run here")
    # issue 9: full fine-tuning in bf16-mixed keeps fp32 weights; LoRA/QLoRA keep a 16-bit base
    dtype = torch.float32 if prec == "fp32" or (ft == "full" and prec == "bf16-mixed") else bf16
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cfg_obj, attn_implementation=spec["attention"], dtype=dtype)
    model.train()
    if spec["recompute"] == "full":
        enable = getattr(model, "activation_checkpointing_enable", None)
        kw = {"use_reentrant": False}
        if enable is not None:
            enable(activation_checkpointing_kwargs=kw)
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kw)
    if ft == "qlora":
        _quantize_decoder_linears(model, torch, spec["double_quant"], spec.get("qlora_backend", "bitsandbytes"))
    if ft in ("lora", "qlora"):
        from peft import LoraConfig, get_peft_model
        lc = spec["lora"]
        model = get_peft_model(model, LoraConfig(
            r=lc["r"], lora_alpha=lc["alpha"], lora_dropout=lc["dropout"], task_type="CAUSAL_LM",
            target_modules=_hf_targets(spec["config"]["model_type"], lc["targets"])))
        want = torch.float32 if lc["adapter_dtype"] == "fp32" else bf16
        for n, p in model.named_parameters():
            if "lora_" in n and p.dtype != want:
                p.data = p.data.to(want)
        model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    if spec["optimizer"] == "adamw-8bit":
        import bitsandbytes as bnb
        opt = bnb.optim.AdamW8bit(params, lr=1e-4)
    else:
        impl = spec["optimizer_impl"]
        opt = torch.optim.AdamW(params, lr=1e-4, foreach=impl == "foreach", fused=impl == "fused" or None)
    ids = torch.randint(0, spec["config"]["vocab_size"], (spec["micro_batch"], spec["seq_len"]), device=device)
    return model, opt, ids


def train_published(model, opt, ids, spec: dict, device_type: str, on_phase) -> None:
    """Two optimizer steps of grad_accum_run micro-batches; the last step's output stays alive
    until the next forward returns (as the harness loop and ordinary training loops do; LitGPT's
    loop replaces its `logits` after the head and before the loss)."""
    import torch
    from validation import qlora, recipes
    autocast = (torch.autocast(device_type=device_type, dtype=torch.bfloat16)
                if spec["precision"] == "bf16-mixed" else contextlib.nullcontext())
    keeps = (qlora.matmul4bit_keeps_input() if qlora.keeps_input(spec.get("qlora_backend", "bitsandbytes"))
             else contextlib.nullcontext())
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    keep = None
    with keeps:
        for step in range(2):
            for _ in range(spec["grad_accum_run"]):
                on_phase(step, "forward")
                with autocast:
                    if spec["loss"] == "chunked-head":
                        keep = recipes.litgpt_chunked_head(base.get_decoder()(input_ids=ids).last_hidden_state,
                                                           base.get_output_embeddings())
                    elif spec["loss"] == "chunked":
                        hidden = base.get_decoder()(input_ids=ids).last_hidden_state
                        loss = recipes.liger_fused_linear_cross_entropy(
                            hidden, base.get_output_embeddings().weight, ids)
                        keep = None
                    else:
                        out = model(input_ids=ids, labels=ids)
                        loss = out.loss
                        keep = out  # replaces the previous output only now, after the new forward
                if spec["loss"] == "chunked-head":
                    loss = recipes.litgpt_chunked_cross_entropy(keep, ids)
                on_phase(step, "backward")
                (loss / spec["grad_accum_run"]).backward()
                del loss
            on_phase(step, "optimizer")
            opt.step()
            opt.zero_grad(set_to_none=True)
    del keep


def _model_facts(model) -> dict:
    ps = list(model.parameters())
    return {"param_count": sum(p.numel() for p in ps),
            "param_bytes": sum(p.numel() * p.element_size() for p in ps),
            "trainable_count": sum(p.numel() for p in ps if p.requires_grad),
            "param_dtypes": sorted({str(p.dtype) for p in ps}),
            "trainable_dtypes": sorted({str(p.dtype) for p in ps if p.requires_grad})}


def run_job(job: dict, device: str = "cuda") -> dict:
    """Build and train one job on `device`, reading the CUDA allocator's counters per phase."""
    import torch
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.time()
    rec = PhaseRecorder(torch)
    first: dict = {}

    def on_phase(step, name):
        if step == 1 and not first:  # close step 1 and keep its peaks
            rec.close()
            first.update(rec.summary())
            rec.peaks = {}
        rec.begin(name)

    if job["kind"] == "harness":
        from validation import measure
        case = job["spec"]
        model, opt, ids, rs = measure._build(case, device)
        ids = torch.randint(0, case["config"]["vocab_size"], ids.shape, device=device)
        facts = measure._model_facts(model, case, rs)
        fw_end: dict = {}

        def on_fw_end(step, out):
            if step == 1:
                torch.cuda.synchronize()
                fw_end["live_at_forward_end"] = torch.cuda.memory_allocated()

        out = measure._train_steps(model, opt, ids, case, device, on_phase, lambda step: None, on_fw_end)
        del out
    else:
        model, opt, ids = build_published(job["spec"], device)
        facts = _model_facts(model)
        train_published(model, opt, ids, job["spec"], device, on_phase)
    result = rec.summary()
    if job["kind"] == "harness":
        result.update(fw_end)
    result.update(step1_peak_bytes=first.get("peak_bytes"), step1_peak_reserved_bytes=first.get("peak_reserved_bytes"),
                  facts=facts, seconds=round(time.time() - t0, 1), device_name=torch.cuda.get_device_name())
    if job["kind"] == "published":
        result["spec"] = job["spec"]
    del model, opt, ids
    gc.collect()
    torch.cuda.empty_cache()
    return result


def _save(data: dict) -> None:
    RESULTS_CUDA.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m validation.gpu_check", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--all", action="store_true", help="every harness case and every published row")
    ap.add_argument("--quick", action="store_true", help="the important cases only (a few minutes)")
    ap.add_argument("--case", action="append", default=[], help="a harness case (repeatable)")
    ap.add_argument("--published", action="append", default=[], help="a published.jsonl row id (repeatable)")
    ap.add_argument("--dry-run", action="store_true", help="list the jobs and time estimates; run nothing")
    ap.add_argument("--write", action="store_true", help="merge results into validation/results_cuda.json")
    ap.add_argument("--max-minutes", type=float, default=None,
                    help="start no new job after this many minutes (what ran is kept)")
    args = ap.parse_args(argv)
    rows = load_published()
    cases, published = selection(args, rows)
    if not cases and not published:
        ap.print_help()
        return 2
    try:
        jobs = plan(cases, published, rows)
    except (KeyError, ValueError) as e:
        print(f"gpu_check: {e.args[0] if e.args else e}", file=sys.stderr)
        return 2
    if args.dry_run:
        print_plan(jobs)
        return 0
    try:
        import torch
    except ImportError:
        print("gpu_check: needs torch, transformers and peft (pip install -e '.[gpu]', which adds bitsandbytes) and a CUDA GPU; "
              "nothing measured", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("gpu_check: torch.cuda.is_available() is False; nothing measured (use --dry-run to list the jobs)",
              file=sys.stderr)
        return 2

    versions = _versions()
    props = torch.cuda.get_device_properties(0)
    meta = {**versions, "device": torch.cuda.get_device_name(), "total_memory_bytes": props.total_memory,
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "tracker": "torch.cuda.max_memory_allocated / max_memory_reserved / active_bytes.all.peak per phase",
            "semantics": "validation/gpu_check.py docstring; harness jobs: validation/README.md reference semantics"}
    data = json.loads(RESULTS_CUDA.read_text()) if (args.write and RESULTS_CUDA.exists()) else {}
    data["metadata"] = meta
    data.setdefault("cases", {})
    data.setdefault("published", {})
    print(f"{meta['device']}: {props.total_memory / 2**30:.1f} GiB; " +
          ", ".join(f"{k} {v}" for k, v in versions.items()))
    t_start = time.time()
    for job in jobs:
        key = "cases" if job["kind"] == "harness" else "published"
        if job["skip"] is not None:
            print(f"skip {job['name']}: {job['skip']}")
            continue
        if job["kind"] == "published" and job["spec"]["finetune"] == "qlora" and "unavailable" in versions["bitsandbytes"]:
            print(f"skip {job['name']}: bitsandbytes is {versions['bitsandbytes']}")
            continue
        if args.max_minutes is not None and time.time() - t_start > 60 * args.max_minutes:
            print(f"stop: --max-minutes {args.max_minutes} reached before {job['name']}")
            break
        try:
            r = run_job(job)
            print(f"{job['name']}: allocated {r['peak_bytes'] / 2**30:.3f} GiB in {r['peak_phase']}, "
                  f"reserved {r['peak_reserved_bytes'] / 2**30:.3f} GiB  [{r['seconds']:.0f} s]", flush=True)
        except torch.cuda.OutOfMemoryError as e:
            r = {"error": f"OutOfMemoryError: {str(e)[:300]}"}
            print(f"{job['name']}: OOM", flush=True)
        except Exception as e:  # recorded, so one broken job does not lose the others
            r = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
            print(f"{job['name']}: ERROR {r['error']}", flush=True)
        gc.collect()
        torch.cuda.empty_cache()
        data[key][job["name"]] = r
        if args.write:
            _save(data)
    if args.write:
        print(f"wrote {RESULTS_CUDA}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
