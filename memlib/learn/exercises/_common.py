"""Small helpers the exercise modules share; each is a call into memlib (no formula lives here)."""

from __future__ import annotations

from typing import Callable

from memlib.parallel import zero
from memlib.hardware.fit import fits
from memlib.models import Model, get_model
from memlib.units import fmt_bytes, gib


def n_params(model: str) -> int:
    return get_model(model).num_params


def states(model: str, stage: int = 0, dp: int = 1, **kw) -> int:
    """Per-GPU model states in the ZeRO paper's accounting (memlib.parallel.zero, K = 12)."""
    return zero.zero_model_state_bytes(n_params(model), stage, dp, **kw)


def b(nbytes: float) -> str:
    return fmt_bytes(nbytes)


def fitting(candidates: dict[str, Callable], gpu: str) -> frozenset:
    """The option keys whose estimate fits `gpu` (memlib.fits)."""
    return frozenset(k for k, make in candidates.items() if fits(make(), gpu).fits)


def only_fitting(candidates: dict[str, Callable], gpu: str) -> str:
    """The one option key whose estimate fits `gpu`; the exercise promises exactly one."""
    keys = sorted(fitting(candidates, gpu))
    if len(keys) != 1:
        raise RuntimeError(f"expected exactly one layout to fit {gpu}, memlib says {keys}: update the exercise")
    return keys[0]


def verdict(estimate, gpu: str) -> str:
    return "fits" if fits(estimate, gpu).fits else "does not fit"


def md_table(header: tuple[str, ...], rows: list[tuple]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])


def peak_rows(candidates: dict[str, Callable], gpu: str) -> str:
    """A markdown table of each option's per-GPU peak and memlib.fits verdict on `gpu`."""
    return md_table(("option", "per-GPU peak", f"on {gpu}"),
                    [(f"({k})", f"{gib(make().peak_bytes):.1f} GiB", verdict(make(), gpu))
                     for k, make in candidates.items()])


def llama_like(k: dict, gqa: bool = True) -> Model:
    """A LLaMA-shaped memlib.Model from an implement exercise's keyword arguments."""
    heads = k.get("heads") or k["hidden"] // k.get("head_dim", 128)
    kv_heads = k.get("kv_heads", (k["kv_dim"] // (k["hidden"] // heads)) if "kv_dim" in k else 0) if gqa else 0
    return Model("exercise", hidden_size=k["hidden"], num_layers=k["layers"], num_heads=heads,
                 intermediate_size=k["intermediate"], vocab_size=k.get("vocab", 32000), num_kv_heads=kv_heads)


def moments_table(first, second, first_label: str, second_label: str) -> str:
    """Each moment of two estimates' steps, side by side (GB): the figures to find each peak from."""
    rows: list[list[str]] = []
    for col, est in ((0, first), (1, second)):
        at = -1
        for m in est.moments:
            row = next((r for r in rows if r[:2] == [m.name, m.where]), None)
            if row is None:  # a moment only this step has: after the one before it
                row = [m.name, m.where, "—", "—"]
                rows.insert(at + 1, row)
            at = rows.index(row)
            row[2 + col] = f"{m.total / 1e9:,.1f} GB"
    return md_table(("phase", "moment", first_label, second_label), [tuple(r) for r in rows])


def max_part(estimate, part: str) -> int:
    """The largest amount of one breakdown category alive at any moment of the step."""
    return max(m.parts.get(part, 0) for m in estimate.moments)
