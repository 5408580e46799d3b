"""LitGPT's own training step on fake tensors: the third reference for the LitGPT rows of published.jsonl.

    python -m validation.litgpt_probe --litgpt-git PATH [--row ID ...] [--write]

The published LitGPT peaks come from LitGPT's own model code (fused qkv, its LoRA layers, its
RMSNorm), Lightning Fabric and Lightning's bitsandbytes plugin, not from transformers + PEFT.
To tell memlib's error from what the framework does differently, this runs LitGPT's code at the
row's pinned commit (extracted with `git archive` from a clone of Lightning-AI/litgpt given as
--litgpt-git; nothing of it is stored here) under FakeTensorMode, with the harness's dispatch
tracker (validation.measure.LiveBytesTracker), the way the row's script runs it:

- the model built in bf16 (Fabric's bf16-true init), `mark_only_lora_as_trainable`, the rope cache
  rebuilt outside the forward when train() sets `model.max_seq_length`;
- the loop of finetune/lora.py (or full.py): `logits = model(input_ids, lm_head_chunk_size=128)`
  inside Fabric's forward context (default dtype bf16), the returned collection converted to fp32
  (_FabricModule.forward: precision.convert_output), `logits[-1] = logits[-1][..., :-1, :]`,
  `chunked_cross_entropy`, backward of loss / grad_accum; the previous iteration's `logits`
  alive until the next assignment;
- CUDA's dropout (aten.native_dropout: a 1-byte mask), as the harness does;
- QLoRA as Lightning's BitsandbytesPrecision builds it on the bitsandbytes LitGPT pinned
  (0.41.1, 0.42.0): every nn.Linear, lm_head included, replaced at construction by a 4-bit
  layer quantized from fp16; MatMul4Bit as those releases run it (`F.linear(A,
  dequantize_4bit(B).to(A.dtype).t())`, `ctx.tensors = (A, B)`, the backward dequantizing
  again); bitsandbytes' PagedAdamW keeps its states in CUDA unified memory, outside torch's
  allocator, so the probe steps a state-less SGD instead (LoRA's states are a few MB anyway).

Recorded per row: the peak of the first iteration (no previous graph; the 2023 table forces the
longest sample into iteration 0 only) and the steady-state peak (two optimizer steps of two
micro-batches each, the second step's peak), with the commit and the arguments, in
validation/results_litgpt.json. Fake tensors on CPU: what CUDA's kernels allocate beyond their
outputs (cuBLAS/cuDNN workspaces), the caching allocator's block rounding and flash-attention's
exact saved layout are not measured.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import importlib
import json
import math
import subprocess
import sys
import tempfile
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results_litgpt.json"
PUBLISHED = HERE / "published.jsonl"

# Modules LitGPT imports that the model code does not use: empty stand-ins, written at run time.
_STUBS = {
    "lightning_utilities/__init__.py": "",
    "lightning_utilities/core/__init__.py": "",
    "lightning_utilities/core/imports.py": (
        "class RequirementCache:\n"
        "    def __init__(self, req, *a, **k): self.req = req\n"
        "    def __bool__(self): return self.req.startswith('lightning')  # flash-attn absent\n"),
    "lightning/__init__.py": "class Fabric: pass\n",
    "lightning/fabric/__init__.py": "",
    "lightning/fabric/strategies/__init__.py": "class FSDPStrategy: pass\n",
    "lightning/fabric/utilities/__init__.py": "",
    "lightning/fabric/utilities/load.py": "def _lazy_load(*a, **k): raise NotImplementedError\n",
    "lightning/fabric/loggers/__init__.py": "class CSVLogger: pass\nclass TensorBoardLogger: pass\n",
    "lightning/pytorch/__init__.py": "",
    "lightning/pytorch/loggers/__init__.py": "class WandbLogger: pass\n",
    "lightning/pytorch/cli/__init__.py": "def instantiate_class(*a, **k): raise NotImplementedError\n",
}


def litgpt_rows(path: Path = PUBLISHED) -> list[dict]:
    """The LitGPT training rows that name a LLaMA-family model and run on one GPU."""
    out = []
    for line in path.read_text().splitlines():
        r = json.loads(line)
        s = r["setup"]
        if (r["id"].startswith("litgpt") and r["kind"] == "training" and s["num_gpus"] == 1
                and s["model"]["config"]["model_type"] in ("llama", "mistral")):
            out.append(r)
    return out


def probe_args(row: dict) -> dict:
    """What to run for a row, read from its setup."""
    s = row["setup"]
    lora = s.get("lora") or {}
    targets = set(lora.get("targets", ()))
    q = s.get("quantization") or {}
    return {
        "commit": row["source"]["code"]["commit"],
        "name": s["model"]["hf_id"].split("/")[-1],
        "method": s["method"].split(" ")[0],
        "seq_len": s["seq_len"], "micro_batch": s["micro_batch"],
        "lora": {"r": lora.get("r", 0), "alpha": lora.get("alpha", 1), "dropout": lora.get("dropout", 0.0),
                 "query": "q" in targets, "key": "k" in targets, "value": "v" in targets,
                 "projection": "proj" in targets, "mlp": "mlp" in targets, "head": "head" in targets},
        "quantize": ("nf4-dq" if q.get("double_quant") else "nf4") if q else None,
    }


def _extract(git_dir: str, commit: str, into: Path) -> tuple[str, Path]:
    """`git archive` the commit's package; returns (package name, directory holding it)."""
    names = subprocess.run(["git", "-C", git_dir, "ls-tree", "--name-only", commit],
                           capture_output=True, text=True, check=True).stdout.split()
    pkg = "lit_gpt" if "lit_gpt" in names else "litgpt"
    dest = into / commit
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", git_dir, "archive", commit, pkg], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return pkg, dest


def _import_litgpt(pkg: str, where: Path, stubs: Path):
    for k in [k for k in sys.modules if k == pkg or k.startswith(pkg + ".")]:
        del sys.modules[k]
    sys.path[:0] = [str(where), str(stubs)]
    shell = types.ModuleType(pkg)  # skip the package's __init__ (the whole API, the CLI, data modules)
    shell.__path__ = [str(where / pkg)]
    sys.modules[pkg] = shell
    model = importlib.import_module(pkg + ".model")  # before config, as the package's __init__ does
    lora = importlib.import_module(pkg + ".lora")
    utils = importlib.import_module(pkg + ".utils")
    utils.max = lambda a, b: b.clamp(min=a) if hasattr(b, "clamp") else max(a, b)  # fake tensors have no value
    return lora, model, utils


def _bnb_041(torch, quantize: str):
    """A 4-bit layer as Lightning's BitsandbytesPrecision makes it and bitsandbytes 0.41.1/0.42.0 run it."""

    class MatMul4Bit(torch.autograd.Function):
        @staticmethod
        def forward(ctx, A, B, shape):
            # F.linear(A, F.dequantize_4bit(B, quant_state).to(A.dtype).t()): quant_state.dtype is fp16
            output = torch.nn.functional.linear(A, torch.empty(shape, dtype=torch.float16, device=A.device).to(A.dtype))
            ctx.shape = shape
            ctx.tensors = (A, B) if any(ctx.needs_input_grad[:2]) else (None, None)
            return output

        @staticmethod
        def backward(ctx, grad_output):
            weight = torch.empty(ctx.shape, dtype=torch.float16, device=grad_output.device).to(grad_output.dtype)
            return torch.matmul(grad_output, weight), None, None

    class Linear4bit(torch.nn.Module):
        def __init__(self, in_features, out_features, bias=False, device=None, dtype=None):
            super().__init__()
            n = in_features * out_features
            self.in_features, self.out_features = in_features, out_features
            self.register_buffer("packed", torch.empty((n // 2, 1), dtype=torch.uint8))
            blocks = math.ceil(n / 64)
            if quantize == "nf4-dq":
                self.register_buffer("absmax", torch.empty(blocks, dtype=torch.uint8))
                self.register_buffer("absmax2", torch.empty(math.ceil(blocks / 256), dtype=torch.float32))
            else:
                self.register_buffer("absmax", torch.empty(blocks, dtype=torch.float32))
            self.weight = self.packed  # LitGPT reads .weight.device

        def forward(self, x):
            return MatMul4Bit.apply(x, self.packed, (self.out_features, self.in_features))

    return Linear4bit


def run(args: dict, git_dir: str, work: Path, first_iteration: bool) -> int:
    """Peak bytes of LitGPT's step for `args` (see the module docstring)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from validation import measure, recipes

    pkg, where = _extract(git_dir, args["commit"], work)
    stubs = work / "stubs"
    for rel, text in _STUBS.items():
        f = stubs / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    L, M, U = _import_litgpt(pkg, where, stubs)
    lo = args["lora"]
    if pkg == "lit_gpt":
        kw = dict(r=lo["r"], alpha=lo["alpha"], dropout=lo["dropout"], to_query=lo["query"], to_key=lo["key"],
                  to_value=lo["value"], to_projection=lo["projection"], to_mlp=lo["mlp"], to_head=lo["head"])
    else:
        kw = dict(lora_r=lo["r"], lora_alpha=lo["alpha"], lora_dropout=lo["dropout"], lora_query=lo["query"],
                  lora_key=lo["key"], lora_value=lo["value"], lora_projection=lo["projection"], lora_mlp=lo["mlp"],
                  lora_head=lo["head"])
    full = args["method"] == "full"
    mb, seq = args["micro_batch"], args["seq_len"]
    accum, steps = (1, 1) if first_iteration else (2, 2)
    tr = measure.LiveBytesTracker()
    with FakeTensorMode(), measure._fake_safe_module_to():
        cfg = (M.Config if full else L.Config).from_name(args["name"], **({} if full else kw))
        linear = torch.nn.Linear
        if args["quantize"]:  # Lightning's init context: torch.nn.Linear replaced while the model is built
            torch.nn.Linear = _bnb_041(torch, args["quantize"])
        torch.set_default_dtype(torch.bfloat16)
        try:
            with measure._SkipRandomInit():
                model = (M.GPT if full else L.GPT)(cfg)
        finally:
            torch.set_default_dtype(torch.float32)
            torch.nn.Linear = linear
        if not full:
            L.mark_only_lora_as_trainable(model)
        model.max_seq_length = seq  # train(): outside the forward context, an fp32 rope cache
        params = [p for p in model.parameters() if p.requires_grad]
        opt = (torch.optim.SGD(params, lr=1e-4) if args["quantize"]
               else torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01, foreach=True))
        ids = torch.zeros((mb, seq), dtype=torch.int64)
        with tr, recipes.cuda_dropout():
            tr.track(model, ids)
            logits = None
            for it in range(steps * accum):
                if it == accum * (steps - 1):
                    tr.reset_peak()
                torch.set_default_dtype(torch.bfloat16)  # Fabric's forward context
                try:
                    out = model(ids) if full else model(ids, lm_head_chunk_size=128)
                finally:
                    torch.set_default_dtype(torch.float32)
                out = [o.to(torch.float32) for o in out] if isinstance(out, list) else out.to(torch.float32)
                logits = out  # Fabric's convert_output, then the loop's assignment
                del out
                if full:
                    loss = U.chunked_cross_entropy(logits[..., :-1, :], ids[..., 1:])
                else:
                    logits[-1] = logits[-1][..., :-1, :]
                    loss = U.chunked_cross_entropy(logits, ids[..., 1:])
                (loss / accum).backward()
                if (it + 1) % accum == 0:
                    opt.step()
                    opt.zero_grad()
            return tr.peak


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m validation.litgpt_probe", description=__doc__.split("\n\n")[0])
    ap.add_argument("--litgpt-git", required=True, help="a clone of github.com/Lightning-AI/litgpt (with history)")
    ap.add_argument("--row", action="append", default=[], help="a published row id (default: every LitGPT row)")
    ap.add_argument("--write", action="store_true", help="write validation/results_litgpt.json")
    a = ap.parse_args(argv)
    rows = litgpt_rows()
    if a.row:
        unknown = set(a.row) - {r["id"] for r in rows}
        if unknown:
            print(f"not a one-GPU LitGPT LLaMA-family row: {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        rows = [r for r in rows if r["id"] in a.row]
    import torch
    out = {"metadata": {"torch": torch.__version__, "date": _dt.datetime.now(_dt.timezone.utc).isoformat(
        timespec="seconds"), "tracker": "validation.measure.LiveBytesTracker on fake CPU tensors",
        "semantics": " ".join(" ".join(__doc__.split("\n\n")[i].split()) for i in (2, 3)),
        "git": "Lightning-AI/litgpt at each row's source.code.commit (args.commit)"}, "rows": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for r in rows:
            args = probe_args(r)
            rec = {"args": args}
            for key, first in (("first_iteration_peak_bytes", True), ("steady_peak_bytes", False)):
                rec[key] = run(args, a.litgpt_git, Path(tmp), first)
            out["rows"][r["id"]] = rec
            print(f"{r['id']:<48} published {r['bytes'] / 1e9:6.2f} GB  LitGPT on fake tensors: first iteration "
                  f"{rec['first_iteration_peak_bytes'] / 1e9:6.2f} GB, steady {rec['steady_peak_bytes'] / 1e9:6.2f} GB"
                  f" ({(rec['steady_peak_bytes'] - r['bytes']) / r['bytes']:+.1%})", flush=True)
    if a.write:
        RESULTS.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
        print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
