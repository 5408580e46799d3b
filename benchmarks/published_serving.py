"""memlib against what serving engines printed at startup (validation/published_serving.jsonl).

    python benchmarks/published_serving.py
    python benchmarks/published.py          # prints this section after the training rows

Row kinds and what is compared (error = (memlib - published) / published; negative = memlib LOW):
  llama.cpp-kv  llama.cpp's KV cache lines ("llama_kv_cache: size = X MiB (N cells, L layers, S/T seqs),
                K (t): X MiB, V (t): X MiB", or the older "KV self size = ..."): every printed field of
                every quoted line against memlib.serving.engines.llama_cpp_kv_cache; "exact" when all
                agree at the printed precision (two decimals of MiB), the error on the total MiB.
  vllm-profile  vLLM's memory-profiling lines: the weights, the profile run's activation peak and the KV
                budget (total x gpu_memory_utilization - weights - activations - non-torch) against
                memlib.estimate_inference(engine="vllm"), memlib.serving.capacity.vllm_profile_peak_bytes (the
                forward or the sampler's warm-up over max_num_seqs rows) and vllm_kv_cache_budget_bytes with
                memlib's defaults (non-torch 0.1 GiB at tp 1, 0.5 GiB above), the card's total as the log
                prints it. max_num_batched_tokens and max_num_seqs: the row's flags, or vLLM V0's defaults for
                the logged max_model_len (max(max_model_len, 2048) tokens without chunked prefill; 256 seqs).
                V1 rows name the sampler the log says it warmed ("Using FlashInfer for top-p & top-k sampling").
  kv-tokens     vLLM's "GPU KV cache size: N tokens" from its logged KV memory: whole 16-token blocks of
                memlib's per-token bytes.
  vllm-budget-tokens  the same N from memlib's own budget (nothing taken from the log but the setup).
  sglang-kv     SGLang's "KV Cache is allocated. #tokens: N, K size: X GB": K bytes of N tokens (SGLang's
                "GB" is GiB: it divides by 1 << 30), and N from mem_fraction_static
                (memlib.serving.capacity.sglang_max_total_tokens).
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import memlib
from memlib.serving.capacity import vllm_kv_cache_budget_bytes, vllm_profile_peak_bytes
from memlib.serving.capacity import sglang_max_total_tokens
from memlib.serving.engines import llama_cpp_kv_cache

ROWS = Path(__file__).resolve().parents[1] / "validation" / "published_serving.jsonl"
GiB, MiB = 2**30, 2**20
KV_LINE = re.compile(r"size\s*=\s*([\d.]+) MiB(?: \(\s*(\d+) cells,\s*(\d+) layers,\s*(\d+)(?:/\s*(\d+))? seqs\))?,"
                     r"\s+K \((\w+)\):\s*([\d.]+) MiB, V \((\w+)\):\s*([\d.]+) MiB")


def load_rows(path: Path = ROWS) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _model(spec):
    if isinstance(spec, dict):
        return memlib.Model.from_hf_config(spec, name=spec.get("_name_or_path") or spec["model_type"])
    return memlib.get_model(spec)


@dataclass
class Check:
    row_id: str
    what: str
    published: float
    memlib: float
    unit: str
    exact: bool | None = None  # llama.cpp lines: every printed field equal

    @property
    def error(self) -> float:
        return (self.memlib - self.published) / self.published


def _fields(line: str) -> tuple:
    m = KV_LINE.search(line)
    if not m:
        raise ValueError(f"not a llama.cpp KV line: {line!r}")
    total, cells, layers, seqs, streams, tk, k, tv, v = m.groups()
    return (total, cells, layers, seqs, streams, tk, k, tv, v)


def check_llama_cpp(row: dict) -> list[Check]:
    ml = row["memlib"]
    caches = llama_cpp_kv_cache(_model(ml["model"]), **ml["kwargs"])
    caches = [c for c in caches if c.name in ml.get("caches", [c.name for c in caches])]
    quoted = [q for q in row["quote"] if KV_LINE.search(q)]
    if len(quoted) != len(caches):
        raise ValueError(f"{row['id']}: {len(quoted)} quoted cache lines, memlib has {len(caches)} caches")
    out = []
    for q, c in zip(quoted, caches):
        pub, mine = _fields(q), _fields(c.log_line(ml["style"]))
        # a field the quote does not print (older formats: cells, seqs, streams) is not compared
        exact = all(p is None or p == m for p, m in zip(pub, mine))
        out.append(Check(row["id"], f"{c.name} cache", float(pub[0]), c.bytes / MiB, "MiB", exact))
    return out


def check_vllm_profile(row: dict) -> list[Check]:
    ml, pub = row["memlib"], row["published"]
    tokens, seqs, model = ml["max_num_batched_tokens"], ml.get("max_num_seqs", 256), _model(ml["model"])
    est = memlib.estimate_inference(model, 1, 1, tp=ml["tp"], engine="vllm")
    sampler = ml.get("sampler", "torch")
    peak = vllm_profile_peak_bytes(model, tokens, seqs, tp=ml["tp"], sampler=sampler)
    out = [Check(row["id"], "weights", pub["weights_gib"], est.weight_bytes / GiB, "GiB"),
           Check(row["id"], "profile activation peak", pub["activation_gib"], peak / GiB, "GiB")]
    if "available_kv_gib" in pub:
        budget = vllm_kv_cache_budget_bytes(model, ml["gpu"], tp=ml["tp"], max_num_batched_tokens=tokens,
                                            max_num_seqs=seqs, gpu_memory_utilization=ml["gpu_memory_utilization"],
                                            total_bytes=round(ml["total_gib"] * GiB), sampler=sampler)
        out.append(Check(row["id"], "KV cache budget", pub["available_kv_gib"], budget / GiB, "GiB"))
    return out


def check_kv_tokens(row: dict) -> list[Check]:
    ml = row["memlib"]
    est = memlib.estimate_inference(ml["model"], 1, 1, tp=ml["tp"], kv_cache=ml["kv_cache"], engine=row["engine"])
    page = ml["page"]
    tokens = round(ml["memory_gib"] * GiB) // (page * est.kv_bytes_per_token) * page
    return [Check(row["id"], "KV tokens from the logged KV memory", row["published"]["tokens"], tokens, "tokens")]


def check_vllm_budget_tokens(row: dict) -> list[Check]:
    ml, pub = row["memlib"], row["published"]
    tokens = ml["max_num_batched_tokens"]
    est = memlib.estimate_inference(ml["model"], 1, tokens, tp=ml["tp"], prefill_tokens=tokens, engine="vllm")
    budget = vllm_kv_cache_budget_bytes(ml["model"], ml["gpu"], tp=ml["tp"], max_num_batched_tokens=tokens,
                                        gpu_memory_utilization=ml["gpu_memory_utilization"])
    kv_tokens = max(budget, 0) // (16 * est.kv_bytes_per_token) * 16
    return [Check(row["id"], "weights", pub["weights_gib"], est.weight_bytes / GiB, "GiB"),
            Check(row["id"], "GPU KV cache size from the budget", pub["tokens"], kv_tokens, "tokens")]


def check_sglang(row: dict) -> list[Check]:
    ml, pub = row["memlib"], row["published"]
    est = memlib.estimate_inference(ml["model"], 1, 1, tp=ml["tp"], weights=ml["weights"], kv_cache=ml["kv_cache"],
                                    engine="sglang")
    k_bytes = pub["tokens"] * est.kv_bytes_per_token // 2
    tokens = sglang_max_total_tokens(ml["model"], ml["gpu"], tp=ml["tp"], weights=ml["weights"],
                                     kv_cache=ml["kv_cache"], mem_fraction_static=ml["mem_fraction_static"])
    return [Check(row["id"], "K size of the logged #tokens", pub["k_gib"], k_bytes / GiB, "GiB",
                  exact=f"{k_bytes / GiB:.2f}" == f"{pub['k_gib']:.2f}"),
            Check(row["id"], "#tokens from mem_fraction_static", pub["tokens"], tokens, "tokens")]


CHECKS = {"llama.cpp-kv": check_llama_cpp, "vllm-profile": check_vllm_profile, "kv-tokens": check_kv_tokens,
          "vllm-budget-tokens": check_vllm_budget_tokens, "sglang-kv": check_sglang}


def evaluate_all(rows: list[dict] | None = None) -> list[Check]:
    return [c for row in (rows or load_rows()) for c in CHECKS[row["kind"]](row)]


def main(argv=None, out=None) -> int:
    out = out or sys.stdout
    rows = load_rows()
    checks = evaluate_all(rows)
    print(f"\nServing engines: {len(rows)} startup logs ({ROWS.name}); memlib {memlib.__version__}\n", file=out)
    print(f"{'row':<42}{'figure':<38}{'published':>14}{'memlib':>14}{'error':>9}  exact", file=out)
    for c in checks:
        ex = "" if c.exact is None else ("yes" if c.exact else "NO")
        print(f"{c.row_id:<42}{c.what:<38}{c.published:>10,.2f} {c.unit:<3}{c.memlib:>10,.2f} {c.unit:<3}"
              f"{c.error:>+8.1%}  {ex}", file=out)
    lcpp = [c for c in checks if c.exact is not None and c.unit == "MiB"]
    print(f"\nllama.cpp KV lines exact at the printed precision: {sum(c.exact for c in lcpp)} of {len(lcpp)}", file=out)
    eng = [c for c in checks if c.exact is None or c.unit != "MiB"]
    errs = [c.error for c in eng]
    if errs:
        print(f"vLLM/SGLang figures: {len(errs)}, median |error| {statistics.median(abs(e) for e in errs):.1%}, "
              f"worst {max(errs, key=abs):+.1%}, {sum(e < -0.10 for e in errs)} more than 10% low", file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
