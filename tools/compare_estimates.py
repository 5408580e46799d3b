"""Every estimate memlib gives for the validation cases, and every figure the notebooks show, as one JSON
snapshot; and the differences between two snapshots. Run it before a refactoring and after (issue 44).

    python tools/compare_estimates.py snapshot before.json            # on the old code
    python tools/compare_estimates.py snapshot after.json             # on the new code
    python tools/compare_estimates.py compare before.json after.json  # "identical", or every difference
    python tools/compare_estimates.py check before.json               # snapshot now and compare in one go

What a snapshot holds (keys of its "estimates" and "notebooks" sections):
  case:NAME           estimate_case (memlib.training.measured) for every case of validation/cases.py
                      (ALL_CASES, SHARDED_CASES): the case dicts are the harness's inputs
  recorded:FILE:NAME  the same for every measured case recorded in validation/results*.json (their "inputs")
  published:ID        benchmarks/published.py's evaluate() for every row of validation/published.jsonl (status,
                      compared bytes) and, when the row is expressible, the estimate itself
  serving:ID:WHAT     benchmarks/published_serving.py's checks (validation/published_serving.jsonl)
  notebooks:PATH      the figures a notebook shows: its inline `{eval}` values (each markdown cell's
                      metadata.user_expressions, which tools/inline_values.py stores) and the text outputs of
                      the cells tagged nbval-check-output (notebooks/); for solutions/*.ipynb, the text outputs
                      of every code cell (they are all computed answers)
An estimate is recorded whole: every dataclass field, recursively (moments with their parts, counts, terms,
notes, the setup), its peak properties (peak_bytes, phase, breakdown, first_iteration_peak_bytes, ...) and
its explain() text. Anything that raises is recorded as its error type and message, so a change in what
memlib refuses shows up too. The snapshot's JSON is written with sorted keys: two snapshots of the same
figures are byte-identical.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

PROPERTIES = ("peak_bytes", "phase", "breakdown", "first_iteration_peak_bytes", "active_peak_bytes",
              "weight_bytes", "activation_bytes", "kv_cache_bytes", "total_bytes", "stage")
MAX_DEPTH = 12


def plain(obj, depth: int = 0):
    """A JSON value for `obj`: dataclasses field by field, containers item by item, floats by repr (so every
    digit counts), anything else by repr."""
    if depth > MAX_DEPTH:
        return repr(obj)
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, float):
        return repr(obj) if not math.isfinite(obj) else float(repr(obj))
    if isinstance(obj, dict):
        return {str(k): plain(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v, depth + 1) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted(repr(v) for v in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {"__class__": type(obj).__name__}
        out.update({f.name: plain(getattr(obj, f.name), depth + 1) for f in dataclasses.fields(obj)})
        return out
    if hasattr(obj, "__len__") and hasattr(obj, "__iter__") and not isinstance(obj, type):  # LayerPattern & co
        try:
            return {"__class__": type(obj).__name__, "items": [plain(v, depth + 1) for v in obj]}
        except Exception:  # noqa: BLE001 - fall back to its repr
            pass
    return repr(obj)


def _error(e: Exception) -> dict:
    return {"error": type(e).__name__, "message": str(e)}


def record_estimate(est) -> dict:
    out = {"fields": plain(est)}
    for name in PROPERTIES:
        if hasattr(type(est), name) and not (dataclasses.is_dataclass(est) and
                                             name in {f.name for f in dataclasses.fields(est)}):
            try:
                out[name] = plain(getattr(est, name))
            except Exception as e:  # noqa: BLE001 - a property that raises is part of the record
                out[name] = _error(e)
    if hasattr(est, "explain"):
        try:
            out["explain"] = est.explain()
        except Exception as e:  # noqa: BLE001
            out["explain"] = _error(e)
    return out


def _guarded(fn, *args):
    try:
        return record_estimate(fn(*args))
    except Exception as e:  # noqa: BLE001 - memlib refusing a case is a figure too
        return _error(e)


def validation_estimates() -> dict:
    from memlib.training.measured import estimate_case
    from validation import cases

    out = {}
    for case in [*cases.ALL_CASES, *cases.SHARDED_CASES]:
        out[f"case:{case['name']}"] = _guarded(estimate_case, case)
    for path in sorted((ROOT / "validation").glob("results*.json")):
        data = json.loads(path.read_text())
        for case in data.get("cases", []) if isinstance(data, dict) else []:
            if isinstance(case, dict) and isinstance(case.get("inputs"), dict) and "config" in case["inputs"]:
                out[f"recorded:{path.name}:{case['name']}"] = _guarded(estimate_case, case["inputs"])
    return out


def published_estimates() -> dict:
    import published
    import published_serving

    out = {}
    for row in published.load_rows():
        try:
            r = published.evaluate(row)
            rec = {"status": r.status, "detail": r.detail, "memlib_bytes": r.memlib_bytes,
                   "peak_bytes": r.peak_bytes, "phase": r.phase, "stream_held_bytes": r.stream_held_bytes}
        except Exception as e:  # noqa: BLE001
            rec = _error(e)
        ml = row.get("memlib", {})
        if rec.get("status") == "ok":
            kwargs = dict(ml["kwargs"])
            kwargs["model"] = published.resolve_model(kwargs["model"])
            rec["estimate"] = _guarded(lambda: published.FUNCTIONS[ml["function"]](**kwargs))
        out[f"published:{row['id']}"] = rec
    try:
        for c in published_serving.evaluate_all():
            out[f"serving:{c.row_id}:{c.what}"] = plain(c)
    except Exception as e:  # noqa: BLE001
        out["serving"] = _error(e)
    return out


def _text(outputs: list) -> list[str]:
    """A cell's text outputs; consecutive stream chunks joined (how the kernel splits a printed text into
    messages varies from run to run, the text does not)."""
    texts: list[str] = []
    stream = False
    for o in outputs:
        if o.get("output_type") == "stream":
            chunk = "".join(o.get("text", ""))
            if stream:
                texts[-1] += chunk
            else:
                texts.append(chunk)
            stream = True
            continue
        stream = False
        if "data" in o and "text/plain" in o["data"]:
            texts.append("".join(o["data"]["text/plain"]))
        elif o.get("output_type") == "error":
            texts.append(f"{o.get('ename')}: {o.get('evalue')}")
    return texts


def notebook_figures(path: Path) -> dict:
    nb = json.loads(path.read_text(encoding="utf-8"))
    inline, checked = [], []
    every_output = path.parent.name == "solutions"
    for cell in nb["cells"]:
        md = cell.get("metadata", {})
        for ue in md.get("user_expressions", []) or []:
            data = (ue.get("result") or {}).get("data", {})
            inline.append([ue.get("expression"), "".join(data.get("text/plain", ""))])
        if cell["cell_type"] == "code" and (every_output or "nbval-check-output" in md.get("tags", [])):
            checked.append(_text(cell.get("outputs", [])))
    return {"inline": inline, "checked_outputs": checked}


def notebooks_snapshot() -> dict:
    paths = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "solutions").glob("*.ipynb"))
    return {str(p.relative_to(ROOT)): notebook_figures(p) for p in paths}


def snapshot(notebooks: bool = True, estimates: bool = True) -> dict:
    snap = {}
    if estimates:
        snap["estimates"] = {**validation_estimates(), **published_estimates()}
    if notebooks:
        snap["notebooks"] = notebooks_snapshot()
    return snap


def dumps(snap: dict) -> str:
    return json.dumps(snap, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def differences(before, after, where: str = "") -> list[str]:
    """Every place where two snapshots differ, as 'path: before -> after' lines."""
    if isinstance(before, dict) and isinstance(after, dict):
        out = []
        for k in sorted(set(before) | set(after)):
            sub = f"{where}/{k}" if where else k
            if k not in after:
                out.append(f"{sub}: removed")
            elif k not in before:
                out.append(f"{sub}: added")
            else:
                out += differences(before[k], after[k], sub)
        return out
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [d for i, (b, a) in enumerate(zip(before, after)) for d in differences(b, a, f"{where}[{i}]")]
    if before != after:
        show = lambda v: (s if len(s := json.dumps(v, ensure_ascii=False)) <= 300 else s[:300] + "...")  # noqa: E731
        return [f"{where}: {show(before)} -> {show(after)}"]
    return []


def compare(before: dict, after: dict, out=sys.stdout) -> int:
    """Print "identical" (byte-identical snapshots) or the differences; return how many differ."""
    if dumps(before) == dumps(after):
        n = sum(len(v) for v in before.values())
        print(f"identical: {n} entries ({', '.join(f'{len(v)} {k}' for k, v in sorted(before.items()))})", file=out)
        return 0
    diffs = differences(before, after)
    for d in diffs:
        print(d, file=out)
    print(f"{len(diffs)} differences", file=out)
    return len(diffs)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("snapshot", help="write a snapshot")
    s.add_argument("out")
    c = sub.add_parser("compare", help="compare two snapshots")
    c.add_argument("before")
    c.add_argument("after")
    k = sub.add_parser("check", help="snapshot now and compare with a saved one")
    k.add_argument("before")
    k.add_argument("--save", help="also write the new snapshot here")
    for q in (s, k):
        q.add_argument("--no-notebooks", action="store_true", help="estimates only")
        q.add_argument("--no-estimates", action="store_true", help="notebook figures only")
    a = p.parse_args(argv)
    if a.command == "snapshot":
        Path(a.out).write_text(dumps(snapshot(not a.no_notebooks, not a.no_estimates)), encoding="utf-8")
        return 0
    if a.command == "compare":
        before, after = (json.loads(Path(f).read_text(encoding="utf-8")) for f in (a.before, a.after))
        return 1 if compare(before, after) else 0
    before = json.loads(Path(a.before).read_text(encoding="utf-8"))
    after = json.loads(dumps(snapshot(not a.no_notebooks, not a.no_estimates)))
    before = {k: v for k, v in before.items() if k in after}
    if a.save:
        Path(a.save).write_text(dumps(after), encoding="utf-8")
    return 1 if compare(before, after) else 0


if __name__ == "__main__":
    sys.exit(main())
