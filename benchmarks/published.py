"""memlib against peak memory that others measured on real GPUs (validation/published.jsonl).

    python benchmarks/published.py                 # every row
    python benchmarks/published.py --id ID [--id ...]
    python benchmarks/published.py --ignore-missing-options

Each row of published.jsonl quotes one figure from a framework's repository or a paper,
with the statistic it reports and the recipe's setup, and says how to ask memlib for the
same setup (`memlib.kwargs`, with issue 9's option names) or what memlib lacks to express it.

What a figure is compared with:
  allocated   (torch.cuda.max_memory_allocated) -> the estimate's peak_bytes
  active      (memory_stats()['active_bytes.all.peak']: allocated plus blocks freed while another stream may
              still use them) -> the estimate's active_peak_bytes (peak_bytes + stream_held_bytes, the
              ZeRO-3 gradients awaiting the reduce stream): reported on a line of its own
  reserved    (torch.cuda.max_memory_reserved) -> the caching allocator's reserved peak for a training estimate
              (memlib.hardware.allocator.reserved_bytes: peak + the fragmentation it models; a row whose
              setup has "alloc_conf": "expandable_segments:True" with expandable segments), + stream_held_bytes
              (the allocator reserves what it holds for another stream); the summary also shows these rows
              with fits()'s flat headroom (memlib.hardware.fit.required_bytes(peak, 0)), as before
  nvidia-smi  (whole process) -> fits()'s required bytes: peak + CUDA context + headroom (+ stream_held_bytes)
A row with "first_iteration": true quotes a figure that covers the first training iteration only (e.g.
Megatron's "(after 1 iterations) memory (MB)" line, or step 1 of a per-step series): it is compared with the
estimate's first_iteration_peak_bytes (the forward and backward before the optimizer has made its states).
A row with "pipeline_stage": "last" (or "first") quotes one pipeline stage's GPU, as Megatron's logs do (the
last rank's): it is compared with the estimate's stage_peak_bytes for that stage.
error = (memlib - published) / published: negative means memlib is LOW (the OOM direction).

Rows are not dropped when memlib cannot compute them. They are listed as
  inexpressible   the row's setup needs a feature memlib lacks (the row says which)
  needs option X  the row uses an estimate_training option this memlib does not accept yet
  needs model     memlib cannot read the row's model family yet
  refused         memlib accepts the options but rejects the combination (its ValueError)
With --ignore-missing-options, rows that only lack options are also estimated without those
options and shown separately, labelled as such: an indication, not a comparison.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

import memlib
from memlib.hardware.allocator import reserved_bytes
from memlib.hardware.fit import DEFAULT_CUDA_CONTEXT_BYTES, required_bytes

REPO = Path(__file__).resolve().parents[1]
PUBLISHED = REPO / "validation" / "published.jsonl"
FUNCTIONS = {"estimate_training": memlib.estimate_training, "estimate_inference": memlib.estimate_inference}
STATISTICS = ("allocated", "active", "reserved", "nvidia-smi")


def read_repo_file(path: Path) -> str:
    """A repository file's text; where it cannot be opened, the copy the book's JupyterLite site carries in its
    memlib wheel (memlib/_repo_data/<the path in the repository>, tools/build_site.py: that site's drive cannot
    serve JSON Lines files, so a deep dive's load_rows() finds them there)."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        from importlib.resources import files

        try:
            copy = files("memlib").joinpath("_repo_data", *path.resolve().relative_to(REPO).parts)
        except ValueError:  # not a repository file: no copy
            copy = None
        if copy is None or not copy.is_file():
            raise
        return copy.read_text(encoding="utf-8")


def load_rows(path: Path = PUBLISHED) -> list[dict]:
    rows = []
    for n, line in enumerate(read_repo_file(path).splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise ValueError(f"{path.name} line {n} is not valid JSON: {e}") from None
    return rows


def accepted_options(function: str) -> set[str]:
    """Keyword arguments this memlib's estimator accepts (so new options are picked up unchanged)."""
    return set(inspect.signature(FUNCTIONS[function]).parameters)


def megatron_gpt_model(cfg: dict) -> memlib.Model:
    """A model given by Megatron-LM's command-line shape (model_type 'megatron-gpt': no Hugging Face checkpoint),
    in the config's field names: --normalization, --swiglu, --add-bias-linear (on unless --disable-bias-linear),
    --position-embedding-type; vocab_size is the padded vocabulary the embedding holds."""
    gated = bool(cfg.get("swiglu"))
    bias = bool(cfg["add_bias_linear"])
    return memlib.Model(
        name=cfg.get("_name_or_path") or "megatron-gpt", hidden_size=cfg["hidden_size"],
        num_layers=cfg["num_hidden_layers"], num_heads=cfg["num_attention_heads"],
        num_kv_heads=cfg.get("num_key_value_heads", cfg["num_attention_heads"]),
        intermediate_size=cfg["intermediate_size"], vocab_size=cfg["vocab_size"],
        tie_word_embeddings=cfg["tie_word_embeddings"], qkv_bias=bias, o_bias=bias, mlp_bias=bias,
        mlp="gated" if gated else "standard", norm="layernorm" if cfg["normalization"] == "LayerNorm" else "rmsnorm",
        position="learned" if cfg["position_embedding_type"] == "learned_absolute" else "rope",
        max_position_embeddings=cfg["max_position_embeddings"], model_type="gpt" if not gated else "llama")


def resolve_model(spec):
    """A catalog name, an inline Hugging Face config dict (read with Model.from_hf_config), a Megatron-LM
    command-line shape (model_type 'megatron-gpt', megatron_gpt_model), or {"memlib.Model": {...}}: memlib.Model's
    own fields, for a model written in the script itself (no config.json to read)."""
    if isinstance(spec, dict) and spec.get("model_type") == "megatron-gpt":
        return megatron_gpt_model(spec)
    if isinstance(spec, dict) and set(spec) == {"memlib.Model"}:
        return memlib.Model(**spec["memlib.Model"])
    if isinstance(spec, dict):
        return memlib.Model.from_hf_config(spec, name=spec.get("_name_or_path") or spec["model_type"])
    return memlib.get_model(spec)


def compared_bytes(peak_bytes: int, statistic: str, stream_held_bytes: int = 0) -> int:
    """memlib's figure for a published statistic (see the module docstring)."""
    if statistic == "allocated":
        return peak_bytes
    if statistic == "active":
        return peak_bytes + stream_held_bytes
    if statistic == "reserved":
        return required_bytes(peak_bytes, cuda_context_bytes=0) + stream_held_bytes
    if statistic == "nvidia-smi":
        return required_bytes(peak_bytes) + stream_held_bytes
    raise ValueError(f"unknown statistic {statistic!r}; accepted: {', '.join(STATISTICS)}")


@dataclass
class Result:
    row: dict
    status: str  # "ok" | "inexpressible" | "needs-options" | "needs-model" | "refused"
    detail: str = ""
    memlib_bytes: int | None = None  # compared figure (peak, or peak + headroom for reserved ...)
    peak_bytes: int | None = None
    phase: str | None = None
    missing_options: list[str] = field(default_factory=list)
    approximate: bool = False  # computed with --ignore-missing-options
    stream_held_bytes: int = 0  # the estimate's blocks held for another stream (active, reserved; not allocated)

    @property
    def published_bytes(self) -> int:
        return self.row["bytes"]

    @property
    def error(self) -> float | None:
        if self.memlib_bytes is None:
            return None
        return (self.memlib_bytes - self.published_bytes) / self.published_bytes


def evaluate(row: dict, ignore_missing: bool = False) -> Result:
    ml = row["memlib"]
    if not ml["expressible"]:
        return Result(row, "inexpressible", ml["missing"])
    kwargs = dict(ml["kwargs"])
    missing = sorted(set(kwargs) - accepted_options(ml["function"]))
    if missing and not ignore_missing:
        return Result(row, "needs-options", "needs option " + ", ".join(missing), missing_options=missing)
    for name in missing:
        kwargs.pop(name)
    try:
        kwargs["model"] = resolve_model(kwargs["model"])
    except ValueError as e:
        return Result(row, "needs-model", f"needs model family: {e}", missing_options=missing)
    try:
        est = FUNCTIONS[ml["function"]](**kwargs)
    except ValueError as e:
        return Result(row, "refused", f"memlib refuses: {e}", missing_options=missing)
    held = getattr(est, "stream_held_bytes", 0)
    first = bool(row.get("first_iteration"))
    if row.get("pipeline_stage"):  # a figure logged on one pipeline stage's GPU (Megatron: the last rank)
        peak = est.stage_peak_bytes(row["pipeline_stage"], first_iteration=first)
    else:
        peak = est.first_iteration_peak_bytes if first else est.peak_bytes
    compared = compared_bytes(peak, row["statistic"], held)
    if row["statistic"] == "reserved" and hasattr(est, "peak_moment") and not row.get("pipeline_stage") \
            and not first:
        expandable = "expandable_segments:True" in row["setup"].get("alloc_conf", "")
        compared = reserved_bytes(est, expandable_segments=expandable).reserved_bytes + held
    return Result(row, "ok", "", compared, peak,
                  getattr(est, "phase", None), missing_options=missing, approximate=bool(missing),
                  stream_held_bytes=held)


def summary(row: dict) -> str:
    """A one-line setup: model, method, precision, tokens, layout."""
    s = row["setup"]
    model = s["model"]["hf_id"].split("/")[-1]
    kw = row["memlib"].get("kwargs", {})
    method = s["method"].split(" ")[0]
    lora = s.get("lora")
    if lora and method in ("lora", "qlora"):
        method += f" r{lora['r']}"
    q = s.get("quantization")
    if q and "double_quant" in q:
        method += " dq" if q["double_quant"] else " no-dq"
    prec = kw.get("precision") or s["precision"].split(" ")[0].rstrip(":")
    parts = [model, method, prec, f"s{s['seq_len']}x{s['micro_batch']}"]
    if s.get("grad_accum", 1) not in (1, None):
        parts.append(f"ga{s['grad_accum']}")
    ckpt = s.get("activation_checkpointing") or "none"
    if not ckpt.startswith("none"):
        parts.append("ckpt:" + ckpt.split(" ")[0])
    if s.get("compile"):
        parts.append("compile")
    parts.append(f"{s['num_gpus']}gpu")
    return " ".join(parts)


def _fmt_gib(n: int | None) -> str:
    return "" if n is None else f"{n / 2**30:.2f}"


def print_table(results: list[Result], out=None) -> None:
    out = out or sys.stdout
    print(f"{'row':<64}{'stat':<10}{'published':>16}{'GiB':>7}{'memlib GiB':>11}{'error':>9}  setup / why not",
          file=out)
    for r in results:
        row = r.row
        pub = f"{row['value'] / 1e9:.4f}e9 B" if row["unit"] == "B" else f"{row['value']:g} {row['unit']}"
        err = "" if r.error is None else f"{r.error:+.1%}"
        tail = summary(row)
        if r.status != "ok":
            tail += f"  [{r.status}: {r.detail}]"
        elif r.approximate:
            tail += f"  [approximate: ignoring {', '.join(r.missing_options)}]"
        print(f"{row['id']:<63} {row['statistic']:<9}{pub:>16}{_fmt_gib(row['bytes']):>7}"
              f"{_fmt_gib(r.memlib_bytes):>11}{err:>9}  {tail}", file=out)


def error_stats(results: list[Result]) -> dict | None:
    errs = [r.error for r in results if r.error is not None]
    if not errs:
        return None
    worst = max(errs, key=abs)
    return {"n": len(errs), "median_abs": statistics.median(abs(e) for e in errs), "worst": worst,
            "low_over_10pct": sum(e < -0.10 for e in errs), "low": sum(e < 0 for e in errs)}


def _stats_line(label: str, results: list[Result]) -> str:
    st = error_stats(results)
    if st is None:
        return f"{label}: no row computed"
    return (f"{label}: {st['n']} rows, median |error| {st['median_abs']:.1%}, worst {st['worst']:+.1%}, "
            f"{st['low']} low, {st['low_over_10pct']} more than 10% low")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python benchmarks/published.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--id", action="append", default=[], help="only this row (repeatable)")
    ap.add_argument("--ignore-missing-options", action="store_true",
                    help="also estimate rows whose options this memlib lacks, dropping those options (labelled)")
    args = ap.parse_args(argv)
    rows = load_rows()
    if args.id:
        known = {r["id"] for r in rows}
        unknown = [i for i in args.id if i not in known]
        if unknown:
            print(f"unknown row id(s): {', '.join(unknown)}", file=sys.stderr)
            return 2
        rows = [r for r in rows if r["id"] in set(args.id)]
    results = [evaluate(r) for r in rows]
    print(f"{len(rows)} published peaks from {len({r['source'].get('repo') or r['source'].get('paper') for r in rows})} "
          f"sources; memlib {memlib.__version__}\n")
    print_table(results)

    ok = [r for r in results if r.status == "ok"]
    print()
    print(_stats_line("allocated rows memlib computes", [r for r in ok if r.row["statistic"] == "allocated"]))
    print(_stats_line("active-bytes rows memlib computes (vs active_peak_bytes)",
                      [r for r in ok if r.row["statistic"] == "active"]))
    print(_stats_line("reserved / nvidia-smi rows memlib computes (reserved: the caching-allocator model)",
                      [r for r in ok if r.row["statistic"] in ("reserved", "nvidia-smi")]))
    # the reserved rows as compared before the caching-allocator model: fits()'s flat 5% headroom, then 25%
    flat = [dataclasses.replace(r, memlib_bytes=compared_bytes(r.peak_bytes, r.row["statistic"], r.stream_held_bytes))
            for r in ok if r.row["statistic"] in ("reserved", "nvidia-smi")]
    print(_stats_line("the same rows with fits()'s flat allocator headroom (5%)", flat))
    wide = [dataclasses.replace(r, memlib_bytes=required_bytes(
                r.peak_bytes, 0 if r.row["statistic"] == "reserved" else DEFAULT_CUDA_CONTEXT_BYTES, 0.25)
                + r.stream_held_bytes)
            for r in ok if r.row["statistic"] in ("reserved", "nvidia-smi")]
    print(_stats_line("the same rows with allocator_headroom=0.25", wide))
    by_status: dict[str, list[Result]] = {}
    for r in results:
        by_status.setdefault(r.status, []).append(r)
    counts = ", ".join(f"{len(v)} {k}" for k, v in sorted(by_status.items()))
    print(f"rows by status: {counts}")
    needed: dict[str, int] = {}
    for r in by_status.get("needs-options", []):
        for o in r.missing_options:
            needed[o] = needed.get(o, 0) + 1
    if needed:
        print("options this memlib lacks (rows needing each): "
              + ", ".join(f"{k} ({v})" for k, v in sorted(needed.items(), key=lambda kv: -kv[1])))

    serving = Path(__file__).with_name("published_serving.py")  # the serving engines' rows (own file, own schema)
    if serving.exists() and not args.id:
        import importlib.util
        spec = importlib.util.spec_from_file_location("published_serving", serving)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        mod.main()

    if args.ignore_missing_options:
        approx = [evaluate(r.row, ignore_missing=True) for r in by_status.get("needs-options", [])]
        print("\nRows that need options, estimated WITHOUT them (today's semantics for those options; "
              "an indication only):\n")
        print_table(approx)
        print()
        print(_stats_line("approximate, allocated", [r for r in approx if r.row["statistic"] == "allocated"]))
        print(_stats_line("approximate, reserved / nvidia-smi",
                          [r for r in approx if r.row["statistic"] in ("reserved", "nvidia-smi")]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
