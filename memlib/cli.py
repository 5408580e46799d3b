"""Command line: `memlib estimate MODEL [options]`, `memlib serve MODEL [options]`, `memlib models`, `memlib gpus`;
for teachers `memlib quiz --topic NN --seed S` and `memlib class-report FOLDER` (memlib.learn.classroom)."""

from __future__ import annotations

import argparse
import inspect
import json
import math
import re
import sys

from memlib._checks import MAX_INT, positive_int
from memlib.hardware.fit import DEFAULT_ALLOCATOR_HEADROOM, DEFAULT_CUDA_CONTEXT_BYTES, fits
from memlib import training
from memlib.serving import inference
from memlib.training import option_table
from memlib.hardware.gpus import list_gpus
from memlib.models import Model, get_model, list_models
from memlib.units import fmt_bytes, gb, gib

COMMON_GPUS = ("t4", "l4", "a10", "rtx-3090", "rtx-4090", "v100-32gb", "a100-40gb", "a100-80gb", "h100-80gb", "h200")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (the message and where to find help), exit 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} -h)\n")


def _host_ram_gib(text: str) -> float:
    """--host-ram-gib: a finite number >= 0 (0 means no host RAM for offload)."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of GiB, got {text!r}") from None
    if not math.isfinite(x) or x < 0 or x * 2**30 > MAX_INT:
        raise argparse.ArgumentTypeError(f"expected a finite number of GiB >= 0 and <= 2**23, got {text!r}")
    return x


def _headroom(text: str) -> float:
    """--allocator-headroom: a fraction of the peak in [0, 1)."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction of the peak such as 0.05, got {text!r}") from None
    if not 0 <= x < 1:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"expected a fraction of the peak in [0, 1), got {text!r}")
    return x


def _utilisation(text: str) -> float:
    """--mfu / --hfu: a fraction of the dense peak in (0, 1]."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction of the peak such as 0.4, got {text!r}") from None
    if not 0 < x <= 1:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"expected a fraction of the peak in (0, 1], got {text!r}")
    return x


MFU_HELP = ("training: rank layouts at this model-FLOPs utilisation, MFU (model FLOPs 6N + attention, recompute not "
            "counted, PaLM App. B): every layout gets the same MFU, so recompute looks free; not with --hfu")
HFU_HELP = ("training: rank layouts at this hardware-FLOPs utilisation, HFU (every FLOP the GPU runs, recompute "
            "included: recompute costs its time). Default 0.4 when neither --mfu nor --hfu is given")

HEADROOM_HELP = ("allocator headroom on top of the peak, a fraction of it (default 0.05; published FSDP runs reserve "
                 "up to 0.24 more than they allocate: 0.25 plans with that margin)")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="memlib", description="GPU memory to train, fine-tune or serve an LLM.")
    sub = p.add_subparsers(dest="command", required=True)
    _add_estimate(sub)
    _add_serve(sub)
    _add_fit(sub)
    sub.add_parser("models", help="list catalog models with exact parameter counts")
    sub.add_parser("gpus", help="list catalog GPUs with capacity in GB and GiB")
    _add_classroom(sub)
    return p


def _add_estimate(sub) -> None:
    """`memlib estimate`: one flag per option of estimate_training, made from the option table
    (memlib.training.option_table: its help line, accepted values and default)."""
    e = sub.add_parser("estimate", help="peak training memory on one GPU, its breakdown and per-GPU verdicts",
                       description="Peak memory of one training step on one GPU (the max over forward, "
                                   "backward and optimizer step), what is alive then, and whether it fits "
                                   "common GPUs. Sizes are shown in GB (1e9) and GiB (2**30).")
    e.add_argument("model", nargs="?", help=f"catalog name ({', '.join(list_models())})")
    e.add_argument("--hf-config", metavar="PATH", help="a Hugging Face config.json (or its folder) instead of a name")
    e.add_argument("--recipe", choices=tuple(training.RECIPES), default=None,
                   help="start from a framework's defaults (memlib.RECIPES); a flag you give overrides it")
    option_table.add_arguments(e)
    e.add_argument("--gpu", action="append", help="GPU(s) for the verdict (repeatable; default: common GPUs)")
    e.add_argument("--allocator-headroom", type=_headroom, default=DEFAULT_ALLOCATOR_HEADROOM, help=HEADROOM_HELP)
    e.add_argument("--json", action="store_true", help="machine-readable output")
    e.add_argument("--explain", action="store_true", help="print the step-by-step derivation (markdown)")


def _add_serve(sub) -> None:
    """`memlib serve`: one flag per option of estimate_inference, made from its option table
    (memlib.serving.inference.SERVING_OPTIONS; --count is its tp); a flag left out gets the table's default."""
    v = sub.add_parser("serve", help="serving memory per GPU: weights, KV cache, prefill workspace; largest batch/context",
                       description="Memory to serve a model with tensor parallelism over --count GPUs: the per-GPU "
                                   "breakdown, whether it fits, KV cache bytes per token, and the largest batch "
                                   "and context that fit. Sizes are shown in GB (1e9) and GiB (2**30).")
    v.add_argument("model", nargs="?", help=f"catalog name ({', '.join(list_models())})")
    v.add_argument("--hf-config", metavar="PATH", help="a Hugging Face config.json (or its folder) instead of a name")
    v.add_argument("--gpu", default="a100-80gb", help="GPU model (default a100-80gb)")
    inference.SERVING_TABLE.add_arguments(v, flags=inference.SERVING_FLAGS)  # one flag per option, the table's help
    v.add_argument("--allocator-headroom", type=_headroom, default=DEFAULT_ALLOCATOR_HEADROOM, help=HEADROOM_HELP)
    v.add_argument("--json", action="store_true", help="machine-readable output")
    v.add_argument("--explain", action="store_true", help="print the step-by-step derivation (markdown)")


def _add_fit(sub) -> None:
    """`memlib fit`: the plan search (memlib.parallel.plan) for training or serving on COUNT GPUs."""
    f = sub.add_parser("fit", help="ranked ways to train (or serve) a model on COUNT GPUs, and why the others fail",
                       description="Search tensor/pipeline/expert parallelism, ZeRO stage, offload, recompute and "
                                   "precision for MODEL on COUNT GPUs of one kind; print the feasible layouts "
                                   "ranked by estimated tokens/s per GPU and the reasons the others fail. "
                                   "--task serve searches serving layouts (tensor/expert parallelism, weight "
                                   "format): weights, KV cache and the largest batch per GPU at --context-len.")
    f.add_argument("model", help="catalog name")
    f.add_argument("--gpu", required=True, help="GPU kind (catalog name)")
    f.add_argument("--count", type=int, required=True, help="number of GPUs")
    f.add_argument("--task", default="full", choices=("full", "lora", "qlora", "serve"), help="default full")
    option_table.add_arguments(f, ("seq_len", "micro_batch", "optimizer"), prefix="training: ")
    f.add_argument("--grad-accum", type=int, default=None, help="training: micro-batches per step (default 8, plan's)")
    f.add_argument("--context-len", type=int, default=None, help="serve: tokens per sequence (default 8192)")
    f.add_argument("--weights", action="append", choices=("auto",) + inference.WEIGHT_FORMATS,
                   help="serve: weight format(s) to compare (repeatable; default auto: the checkpoint's own)")
    f.add_argument("--kv-cache", default=None, choices=inference.KV_FORMATS, help="serve: default bf16")
    f.add_argument("--mla-cache", default=None, choices=inference.MLA_CACHES,
                   help="serve, MLA models: latent (vLLM/SGLang, default) or full (transformers)")
    f.add_argument("--prefill-tokens", type=int, default=None,
                   help="serve: tokens per prefill forward (default 8192, vLLM's chunk; 0: the whole batch at once)")
    f.add_argument("--no-offload", action="store_true", help="leave ZeRO-Offload/Infinity out of the search")
    rate = f.add_mutually_exclusive_group()
    rate.add_argument("--mfu", type=_utilisation, default=None, help=MFU_HELP)
    rate.add_argument("--hfu", type=_utilisation, default=None, help=HFU_HELP)
    f.add_argument("--cp", type=int, action="append", default=None,
                   help="training: also try context parallelism of this degree (repeatable; FSDP over dp x cp)")
    f.add_argument("--host-ram-gib", type=_host_ram_gib, help="host RAM per node; offload plans needing more fail")
    f.add_argument("--allocator-headroom", type=_headroom, default=DEFAULT_ALLOCATOR_HEADROOM, help=HEADROOM_HELP)
    f.add_argument("--top", type=int, default=10, help="feasible plans to show (default 10, at least 1)")
    f.add_argument("--min-gpus", action="store_true", help="also find the fewest GPUs of this kind (no offload)")
    f.add_argument("--deepspeed", action="store_true", help="print the DeepSpeed config of the best plan")
    f.add_argument("--json", action="store_true", help="machine-readable output")


def _verdicts(est, gpu_names, allocator_headroom: float = DEFAULT_ALLOCATOR_HEADROOM) -> list[dict]:
    out = []
    for name in gpu_names:
        v = fits(est, name, allocator_headroom=allocator_headroom)
        out.append({"gpu": v.gpu.name, "capacity_bytes": v.capacity_bytes, "required_bytes": v.required_bytes,
                    "fits": v.fits, "margin_bytes": v.margin_bytes})
    return out


def _as_flags(message: str) -> str:
    """An estimate_training message with its option=value pairs written as the command line's --option value."""
    table = option_table.OPTIONS
    names = "|".join(sorted(table, key=len, reverse=True))
    message = re.sub(rf"\b({names})=(True|False)\b", lambda m: (table[m.group(1)].flag if m.group(2) == "True" else
                                                                 "--no-" + table[m.group(1)].flag[2:]), message)
    return re.sub(rf"\b({names})=", lambda m: table[m.group(1)].flag + " ", message)


def cmd_estimate(a) -> int:
    if bool(a.model) == bool(a.hf_config):
        raise ValueError("give either a catalog model name or --hf-config PATH (exactly one)")
    model = Model.from_hf_config(a.hf_config) if a.hf_config else get_model(a.model)
    # every flag defaults to None (not given): a given flag always wins, even when it equals memlib's default
    # (--recipe megatron --zero-stage 0 is ZeRO 0); one not given leaves the recipe's value or memlib's default
    options = {name: getattr(a, name) for name in option_table.OPTIONS if getattr(a, name) is not None}
    try:
        est = training.estimate_training(model, recipe=a.recipe, **options)
    except ValueError as e:  # "lora_rank=8 does not apply" said as the flag typed: "--lora-rank 8 does not apply"
        raise ValueError(_as_flags(str(e))) from None
    verdicts = _verdicts(est, a.gpu or COMMON_GPUS, a.allocator_headroom)
    if a.json:
        print(json.dumps({**est.to_dict(), "verdicts": verdicts}, indent=2))
        return 0
    if a.explain:
        print(est.explain())
        print()
    print(model.describe())
    s = est.setup
    print(f"seq_len {s.seq_len}, micro_batch {s.micro_batch}, {s.precision}, {s.optimizer}, {s.finetune}, "
          f"recompute {s.recompute}, attention {s.attention}"
          + (f", cp {s.cp} ({s.tokens_per_gpu // s.micro_batch} tokens of each sequence per GPU)" if s.cp > 1 else ""))
    print(f"\nPeak {fmt_bytes(est.peak_bytes)} during {est.phase} ({est.peak_moment.where})")
    print(f"\n{'alive at the peak':<20}{'GB':>12}{'GiB':>12}")
    for k, v in est.breakdown.items():
        if v:
            print(f"{k:<20}{gb(v):>12,.2f}{gib(v):>12,.2f}")
    print(f"{'total':<20}{gb(est.peak_bytes):>12,.2f}{gib(est.peak_bytes):>12,.2f}")
    if est.stream_held_bytes:
        print(f"{'active peak':<20}{gb(est.active_peak_bytes):>12,.2f}{gib(est.active_peak_bytes):>12,.2f}"
              "   (+ blocks freed but held for another stream; see the note)")
    if est.first_iteration_peak_bytes < est.peak_bytes:
        first = est.first_iteration_peak_bytes
        print(f"{'first iteration':<20}{gb(first):>12,.2f}{gib(first):>12,.2f}"
              "   (before the optimizer's first step creates its states; later steps reach the total)")
    if est.stage_names and est.stage != est.stage_names[-1]:
        last = est.stage_peak_bytes("last")
        print(f"{'last stage':<20}{gb(last):>12,.2f}{gib(last):>12,.2f}"
              "   (the last pipeline GPU: the rank whose memory Megatron logs)")
    if est.host_bytes or est.nvme_bytes:
        print(f"\nOffload needs, per GPU: host RAM {fmt_bytes(est.host_bytes)}, NVMe {fmt_bytes(est.nvme_bytes)}")
    for note in est.notes:
        print(f"note: {note}")
    print(f"\nOne GPU: peak + CUDA context {gib(DEFAULT_CUDA_CONTEXT_BYTES):.1f} GiB + allocator headroom "
          f"{a.allocator_headroom:.0%} of the peak, against the capacity torch reports:")
    for v in verdicts:
        word = "fits " if v["fits"] else "OOM  "
        print(f"  {word} {v['gpu']:<12} needs {gib(v['required_bytes']):>8.2f} of {gib(v['capacity_bytes']):>6.1f} GiB"
              f"   margin {gib(v['margin_bytes']):>+9.2f} GiB")
    return 0


def cmd_serve(a) -> int:
    if bool(a.model) == bool(a.hf_config):
        raise ValueError("give either a catalog model name or --hf-config PATH (exactly one)")
    model = Model.from_hf_config(a.hf_config) if a.hf_config else get_model(a.model)
    opts = {name: getattr(a, name) for name in inference.SERVING_OPTIONS if getattr(a, name) is not None}
    try:
        est = inference.estimate_inference(model, **opts)
    except ValueError as e:  # the table names the option tp; on this command its flag is --count
        if str(e).startswith("tp must"):
            raise ValueError(f"--count (tp: the GPUs of tensor parallelism){str(e)[2:]}") from None
        raise
    s = est.setup  # every option as estimate_inference resolved it (the table's default where no flag was given)
    opts = {k: v for k, v in opts.items() if k not in ("batch", "context_len")}
    v = fits(est, a.gpu, allocator_headroom=a.allocator_headroom)
    mb = inference.max_batch(model, a.gpu, s.context_len, allocator_headroom=a.allocator_headroom, **opts)
    mc = inference.max_context(model, a.gpu, s.batch, allocator_headroom=a.allocator_headroom, **opts)
    if a.json:
        print(json.dumps({**est.to_dict(), "gpu": v.gpu.name, "count": s.tp,
                          "verdict": {"fits": v.fits, "required_bytes": v.required_bytes,
                                      "capacity_bytes": v.capacity_bytes, "margin_bytes": v.margin_bytes},
                          "max_batch": mb.value, "max_batch_reason": mb.reason,
                          "max_context": mc.value, "max_context_reason": mc.reason}, indent=2))
        return 0
    if a.explain:
        print(est.explain())
        print()
    print(model.describe())
    print(f"engine {s.engine}, batch {s.batch} x context {s.context_len:,}, weights {s.weights}, KV cache {s.kv_cache}"
          + (f" (K), {s.kv_cache_v} (V)" if s.kv_cache_v else "") + ", "
          f"tensor parallel over {s.tp} x {v.gpu.name}")
    where = "per GPU" if s.tp > 1 else "on one GPU"
    print(f"\nPeak {fmt_bytes(est.peak_bytes)} {where} (prefill workspace at: {est.phase})")
    print(f"\n{'held ' + where:<20}{'GB':>12}{'GiB':>12}")
    for k, n in est.breakdown.items():
        if n:
            print(f"{k:<20}{gb(n):>12,.2f}{gib(n):>12,.2f}")
    print(f"{'total':<20}{gb(est.peak_bytes):>12,.2f}{gib(est.peak_bytes):>12,.2f}")
    print(f"\nKV cache: {est.kv_bytes_per_token:,} bytes per token {where}")
    for note in est.notes:  # e.g. a context beyond the trained window: shown before the verdict, not only in --json
        print(f"note: {note}")
    caveat = " (but read the warning above)" if getattr(est, "warnings", None) else ""
    print(f"\nVerdict: {v}{caveat}")
    print(f"Largest batch at context {s.context_len:,}: {mb}")
    print(f"Largest context at batch {s.batch}: {mc}")
    return 0


_TRAIN_ONLY = ("seq_len", "micro_batch", "grad_accum", "optimizer", "cp", "mfu", "hfu")
_SERVE_ONLY = ("context_len", "weights", "kv_cache", "mla_cache", "prefill_tokens")


def _flag_name(key: str) -> str:
    return "--" + key.replace("_", "-")


def _rate_words(a) -> str:
    """The utilisation the plans were timed at, named as PaLM defines it (Chowdhery et al. 2022, App. B)."""
    if a.mfu is not None:
        return f"{a.mfu:.0%} MFU (model FLOPs; a recompute layout's kernels run faster)"
    from memlib.cost.timing import DEFAULT_HFU
    hfu = DEFAULT_HFU if a.hfu is None else a.hfu
    return f"{hfu:.0%} HFU: every FLOP the GPU runs, recompute included; MFU is lower with recompute"


def cmd_fit(a) -> int:
    from memlib.parallel.plan import min_gpus, plan, to_deepspeed_config
    positive_int("--top", a.top)
    serve = a.task == "serve"
    wrong = [k for k in (_TRAIN_ONLY if serve else _SERVE_ONLY) if getattr(a, k) is not None]
    wrong += [k for k in ("no_offload", "min_gpus", "deepspeed") if serve and getattr(a, k)]
    wrong += ["host_ram_gib"] if serve and a.host_ram_gib is not None else []
    if wrong:
        raise ValueError(f"{', '.join(_flag_name(k) for k in wrong)} "
                         f"{'apply' if len(wrong) > 1 else 'applies'} to "
                         + ("training tasks (full, lora, qlora), not --task serve" if serve else "--task serve"))
    if serve:
        return _fit_serve(a)
    host = int(a.host_ram_gib * 2**30) if a.host_ram_gib is not None else None  # 0 GiB is a limit too
    table = option_table.defaults()
    a.seq_len = table["seq_len"] if a.seq_len is None else a.seq_len
    a.micro_batch = table["micro_batch"] if a.micro_batch is None else a.micro_batch
    a.grad_accum = inspect.signature(plan).parameters["grad_accum"].default if a.grad_accum is None else a.grad_accum
    kw = dict(seq_len=a.seq_len, micro_batch=a.micro_batch, grad_accum=a.grad_accum,
              optimizer=a.optimizer or table["optimizer"])
    cps = (1,) + tuple(a.cp) if a.cp else (1,)
    kw["allocator_headroom"] = a.allocator_headroom
    kw.update({k: getattr(a, k) for k in ("mfu", "hfu") if getattr(a, k) is not None})
    r = plan(a.model, a.gpu, a.count, a.task, allow_offload=not a.no_offload, host_bytes_per_node=host, cps=cps, **kw)
    fewest = min_gpus(a.model, a.gpu, a.task, **kw) if a.min_gpus else None
    if a.json:
        out = r.to_dict(top=a.top)
        if fewest is not None:
            out["min_gpus"] = {"count": fewest.count, "settings": fewest.best.settings}
        if a.deepspeed and r.best and r.best.estimate.setup.sharding not in ("fsdp", "device_map"):
            out["deepspeed_config"] = to_deepspeed_config(r.best)
        print(json.dumps(out, indent=2))
        return 0
    print(f"{a.model} on {a.count} x {a.gpu}, task {a.task}, seq_len {a.seq_len}, micro-batch {a.micro_batch}, "
          f"{a.grad_accum} micro-batches per step; "
          f"fits() budgets a CUDA context {gib(DEFAULT_CUDA_CONTEXT_BYTES):.1f} GiB and allocator headroom "
          f"{a.allocator_headroom:.0%} of the peak per GPU")
    if not r.feasible:
        print("\nNo layout fits.")
    else:
        print(f"\n{len(r.feasible)} layouts fit; best first (estimated at {_rate_words(a)}):")
        print(f"  {'tok/s/GPU':>9}  {'peak GiB':>8}  {'margin':>7}  {'host GiB':>8}  layout")
        for p in r.feasible[:a.top]:
            speed = f"{p.tokens_per_s_per_gpu:>9.0f}" if p.time else f"{'n/a':>9}"  # untimed: fp32
            print(f"  {speed}  {gib(p.estimate.peak_bytes):>8.1f}  "
                  f"{p.verdict.margin_gib:>+7.1f}  {gib(p.estimate.host_bytes):>8.0f}  {p.describe()}")
    if r.infeasible:
        print(f"\n{len(r.infeasible)} layouts do not fit, for example:")
        seen = set()
        for settings, why in r.infeasible:
            key = (settings["zero_stage"], settings["offload"], settings["tp"], settings["pp"], settings.get("cp", 1))
            if key in seen:
                continue
            seen.add(key)
            zs = settings["zero_stage"]
            z = (f"ZeRO-{zs}" if isinstance(zs, int) else str(zs)) if zs else "no ZeRO"
            cp = f" cp={settings['cp']}" if settings.get("cp", 1) > 1 else ""
            print(f"  dp={settings['dp']} tp={settings['tp']} pp={settings['pp']}{cp} {z} offload {settings['offload']}, "
                  f"recompute {settings['recompute']}: {why}")
            if len(seen) >= a.top:
                break
    if fewest is not None:
        print(f"\nFewest {a.gpu} without offload: {fewest.count} ({fewest.best.describe()})")
    elif a.min_gpus:
        print(f"\nNo count of {a.gpu} up to 4096 fits without offload.")
    if a.deepspeed and r.best:
        try:
            config = to_deepspeed_config(r.best)
        except ValueError as e:  # an FSDP or device_map layout has no DeepSpeed config
            print(f"\nNo DeepSpeed config for the best layout: {e}")
        else:
            print("\nDeepSpeed config of the best layout:")
            print(json.dumps(config, indent=2))
    elif a.deepspeed:
        print("\nNo DeepSpeed config: no layout fits.")
    return 0


def _fit_serve(a) -> int:
    """memlib fit MODEL --task serve: plan_serving's layouts, per GPU weights, KV cache and the largest batch."""
    from memlib.parallel.plan import SERVE_PREFILL_TOKENS, plan_serving
    context = 8192 if a.context_len is None else a.context_len
    prefill = SERVE_PREFILL_TOKENS if a.prefill_tokens is None else (
        None if a.prefill_tokens == 0 else positive_int("--prefill-tokens", a.prefill_tokens))
    r = plan_serving(a.model, a.gpu, a.count, context_len=context, weights=a.weights or "auto",
                     kv_cache=a.kv_cache or "bf16", mla_cache=a.mla_cache or "latent", prefill_tokens=prefill,
                     allocator_headroom=a.allocator_headroom)
    if a.json:
        print(json.dumps(r.to_dict(top=a.top), indent=2))
        return 0
    model = get_model(a.model)
    print(model.describe())
    print(f"serving on {a.count} x {r.gpu} at context {context:,} tokens"
          + (f", prefill {prefill:,} tokens per forward" if prefill else ", each prefill over the whole batch"))
    if not r.feasible:
        print("\nNo layout holds even one sequence.")
    else:
        print(f"\n{len(r.feasible)} layouts fit; most concurrent sequences first (per GPU, GB = 1e9 bytes):")
        print(f"  {'sequences':>9}  {'batch/group':>11}  {'weights GB':>10}  {'KV cache GB':>11}  {'KV B/token':>10}  "
              f"{'margin GiB':>10}  layout")
        for p in r.feasible[:a.top]:
            print(f"  {p.sequences:>9,}  {p.max_batch.value:>11,}  {gb(p.weight_bytes):>10.1f}  "
                  f"{gb(p.kv_cache_bytes):>11.1f}  {p.estimate.kv_bytes_per_token:>10,}  "
                  f"{p.verdict.margin_gib:>+10.1f}  {p.describe()}")
        best = r.best
        print(f"\nBest: {best.describe()}: {gb(best.weight_bytes):.1f} GB of weights and "
              f"{gb(best.kv_cache_bytes):.1f} GB of KV cache per GPU; {best.max_batch.value:,} sequences per "
              f"attention group x {best.attention_groups} = {best.sequences:,} at {context:,} tokens "
              f"({best.max_batch.reason}).")
        for note in best.estimate.notes:
            print(f"note: {note}")
    if r.infeasible:
        print(f"\n{len(r.infeasible)} layouts do not fit, for example:")
        for settings, why in r.infeasible[:a.top]:
            print(f"  tp={settings['tp']} ep={settings['ep']} {settings['weights']}: {why}")
    return 0


def cmd_models(_a) -> int:
    for name in list_models():
        print(get_model(name).describe())
    return 0


def cmd_gpus(_a) -> int:
    for g in list_gpus():
        print(f"{g.name:<14} {g.memory_gb:>7.1f} GB  {g.memory_gib:>7.1f} GiB  {g.display_name}")
    return 0


# --- the classroom: `memlib quiz`, `memlib class-report` (memlib.learn.classroom) ------------------------------------
# The one place the core reaches into memlib.learn: lazily, only when one of these commands runs (tests/test_layers.py
# allows this import and checks that `import memlib.cli` loads no part of memlib.learn).
def _add_classroom(sub) -> None:
    q = sub.add_parser("quiz", help="a shared quiz for a class: the same questions for one class seed; handout + key",
                       description="Print or write a quiz of practice questions on one topic, the same for every "
                                   "learner with the same class seed, and its answer key for the teacher.")
    q.add_argument("--topic", required=True, help="the topic notebook's number: 00 to 11")
    q.add_argument("--seed", type=int, required=True, help="the class seed (0 to 999,999): same seed, same quiz")
    q.add_argument("--n", type=int, default=10, help="how many questions (1 to 50; default 10)")
    q.add_argument("--interview", type=int, default=0, metavar="K",
                   help="also K mock-interview questions (open; the key gives rubric and model answer)")
    q.add_argument("--out", help="write the handout here (.md, or .html for a printable page); default: print it")
    q.add_argument("--key", help="write the teacher's answer key here (.md or .html)")
    r = sub.add_parser("class-report", help="a class's results from a folder of exported progress files",
                       description="Read every file export_progress() wrote in FOLDER (one per learner) and show, per "
                                   "exercise, the pass rate, attempts, hints and the commonest named slips; damaged "
                                   "and duplicate files are refused and listed with the reason.")
    r.add_argument("folder", metavar="FOLDER", help="the folder of exported .json files")
    r.add_argument("--csv", help="also write the table as CSV here")
    r.add_argument("--chart", help="also write a chart (PNG, needs matplotlib) here")


def cmd_classroom(a) -> int:
    from memlib.learn import classroom
    return classroom.run_command(a)


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        return {"estimate": cmd_estimate, "serve": cmd_serve, "fit": cmd_fit, "models": cmd_models,
                "gpus": cmd_gpus, "quiz": cmd_classroom, "class-report": cmd_classroom}[args.command](args)
    except ValueError as e:  # bad input: one line, no traceback
        print(f"memlib: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head`
        return 0


if __name__ == "__main__":
    sys.exit(main())
