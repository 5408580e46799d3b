"""Training-run arithmetic: total FLOPs, GPU-hours, wall-clock time and cost of a whole run.

How long, and how many GPU-hours, to pretrain a 7B model on 2T tokens on 256 H100s?

    from memlib import cost
    run = cost.training_run("llama-2-7b", tokens=2e12, gpu="h100-80gb", gpus=256, mfu=0.4, seq_len=4096)
    run.gpu_hours, run.days, run.cost(2.0)       # cost at a $/GPU-hour you give

The formulas, each once:

* training_flops: 6·N·D (Kaplan et al. 2020, "Scaling Laws for Neural Language Models", Sec. 2.1:
  C ≈ 6N per token, forward 2N and backward 4N), N the parameters a token passes through
  (timing.active_params: the active ones of a mixture of experts), D the tokens; with seq_len
  the attention term 12·L·H·Q·T per token is added (Chowdhery et al. 2022, PaLM, App. B), the
  same flops_per_token that step_time uses. It matters at long context: +8% for a 405B model
  at 8k tokens, +27% for Llama-3-8B at 8k;
* gpu_hours = FLOPs / (peak x utilisation) / 3600, with peak the GPU's dense 16-bit tensor
  throughput; wall-clock = gpu_hours / GPUs. The utilisation belongs to the FLOPs it divides
  (Chowdhery et al. 2022, PaLM, Sec. 4.1 and App. B): MFU (model FLOPs utilisation) to model
  FLOPs, 6ND + attention with no recompute; HFU (hardware FLOPs utilisation) to the FLOPs the
  GPUs execute, a recomputed forward included. training_run takes either (mfu= or hfu=; neither:
  hfu=0.4, which is also 40% MFU when nothing is recomputed) and reports both;
* training_run_from_step: the same from memlib.step_time for a concrete layout (its
  tokens/s per GPU already holds communication, bubble and offload);
* chinchilla_tokens: ~20 tokens per parameter is compute-optimal (Hoffmann et al. 2022,
  "Training Compute-Optimal Large Language Models", Table 3: 67B parameters for 1.5T tokens,
  the 70B Chinchilla trained on 1.4T); chinchilla_optimal: the model and data a FLOP budget
  buys at that ratio;
* mfu_from_throughput: the MFU a published tokens/s per GPU implies.

Not counted: restarts and failures, evaluation, checkpointing, data loading stalls; the
published GPU-hours include them, which is one reason the MFU they imply is below the one
measured in steady state (validation/published_gpu_hours.json, tests/test_cost.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from memlib._checks import fraction, positive_float, positive_int, show
from memlib.hardware.gpus import PRECISIONS, get_gpu, peak_flops  # noqa: F401 - PRECISIONS: memlib.cost exports it
from memlib.models import Model, get_model
from memlib.cost.timing import (DEFAULT_MFU, StepTime, active_params,
                                flops_per_token, palm_flops_per_token, utilisation)

CHINCHILLA_TOKENS_PER_PARAM = 20  # Hoffmann et al. 2022, Table 3
def _params_or_model(model):
    """A catalog name, a memlib.Model, or a plain parameter count (e.g. 37e9 active parameters)."""
    if isinstance(model, str):
        return get_model(model)
    if isinstance(model, Model):
        return model
    if isinstance(model, (int, float)) and not isinstance(model, bool):
        return positive_float("model (a parameter count)", model, maximum=1e16)
    raise ValueError(f"model must be a catalog name, a memlib.Model or a parameter count, got {show(model)}")


def training_flops(model, tokens: float, seq_len: int | None = None,
                   attention_flops_per_token: float | None = None, recompute: str = "none",
                   finetune: str = "full") -> float:
    """Total training FLOPs: 6·N·D (Kaplan et al. 2020), plus 12·L·H·Q·T·D for attention when
    seq_len is given with a Model (PaLM App. B), or attention_flops_per_token·D when given.

    model: catalog name, memlib.Model (N = its active parameters) or a plain parameter count.
    recompute and finetune as in memlib.cost.timing.flops_per_token: full recompute adds a forward
    (+2N, and +4·L·H·Q·T with seq_len); LoRA/QLoRA ("lora", "qlora") compute no weight gradients
    of the frozen base (4N instead of 6N: Hu et al. 2021's adapters are a rounding error in FLOPs).
    Selective recompute depends on the layer's shape: it needs a Model and seq_len.
    """
    m = _params_or_model(model)
    tokens = positive_float("tokens", tokens, maximum=1e18)
    if isinstance(m, Model):
        if seq_len is not None and attention_flops_per_token is not None:
            raise ValueError("give seq_len (attention from the model's shape) or attention_flops_per_token, not both")
        if seq_len is not None:
            per_token = flops_per_token(m, seq_len, recompute, finetune)
        else:
            per_token = _dense_flops_per_token(active_params(m), recompute, finetune)
    else:
        if seq_len is not None:
            raise ValueError("seq_len needs a Model for the attention term; with a parameter count pass "
                             "attention_flops_per_token=")
        per_token = _dense_flops_per_token(m, recompute, finetune)
    if attention_flops_per_token is not None:
        per_token += positive_float("attention_flops_per_token", attention_flops_per_token, maximum=1e16)
    return per_token * tokens


def _dense_flops_per_token(n: float, recompute: str, finetune: str) -> float:
    """6N (4N for a frozen base), +2N for full recompute: flops_per_token without the attention term."""
    if recompute == "selective":
        raise ValueError("recompute='selective' depends on the layer's shape: give a Model and seq_len")
    # palm_flops_per_token with no attention term (0 layers) checks recompute and finetune by name
    return palm_flops_per_token(max(1, round(n)), 0, 0, 0, 1, recompute, finetune) * (n / max(1, round(n)))


def chinchilla_tokens(model) -> float:
    """Compute-optimal training tokens, ~20 per parameter (Hoffmann et al. 2022, Table 3)."""
    m = _params_or_model(model)
    n = active_params(m) if isinstance(m, Model) else m
    return CHINCHILLA_TOKENS_PER_PARAM * float(n)


def chinchilla_optimal(flops: float) -> tuple[float, float]:
    """(parameters, tokens) that spend `flops` compute-optimally at ~20 tokens per parameter:
    C = 6·N·D with D = 20·N gives N = sqrt(C / (6 x 20)) (Hoffmann et al. 2022, Table 3's ratio;
    Chinchilla itself: 70B parameters on 1.4T tokens, 5.9e23 FLOPs)."""
    flops = positive_float("flops", flops, maximum=1e32)
    n = math.sqrt(flops / (6.0 * CHINCHILLA_TOKENS_PER_PARAM))
    return n, CHINCHILLA_TOKENS_PER_PARAM * n


def gpu_hours(flops: float, gpu, mfu: float = DEFAULT_MFU, precision: str = "bf16",
              peak_tflops: float | None = None) -> float:
    """GPU-hours to do `flops` at `mfu` of one GPU's dense peak: flops / (peak x mfu) / 3600 (MFU, model
    FLOPs utilisation: Chowdhery et al. 2022, PaLM, Sec. 4.1). The fraction is MFU when `flops` are model
    FLOPs (6ND + attention, no recompute, as training_flops gives by default); with FLOPs that include a
    recomputed forward it is HFU (training_run(..., recompute=) keeps the two apart)."""
    flops = positive_float("flops", flops, maximum=1e32)
    mfu = fraction("mfu", mfu, what="a fraction of peak (model FLOPs utilisation)")
    return flops / (peak_flops(gpu, precision, peak_tflops) * mfu) / 3600


def mfu_from_throughput(model, seq_len: int, tokens_per_s_per_gpu: float, gpu, precision: str = "bf16",
                        peak_tflops: float | None = None, finetune: str = "full") -> float:
    """MFU implied by a measured tokens/s per GPU: model FLOPs per token x tokens/s / peak (no recompute counted,
    Chowdhery et al. 2022, App. B). finetune="lora" / "qlora" counts a frozen base's 4N + 12·L·H·Q·T, the FLOPs
    such a run does (no weight gradients of the base)."""
    m = _params_or_model(model)
    if not isinstance(m, Model):
        raise ValueError("mfu_from_throughput needs a Model or catalog name (its attention term needs the shape)")
    rate = positive_float("tokens_per_s_per_gpu", tokens_per_s_per_gpu, maximum=1e12)
    return flops_per_token(m, seq_len, "none", finetune) * rate / peak_flops(gpu, precision, peak_tflops)


@dataclass(frozen=True)
class TrainingRun:
    """A whole training run: what it computes and what it takes."""

    flops: float  # total, FLOPs
    tokens: float
    gpu: str
    gpus: int
    mfu: float  # model-FLOPs utilisation (model FLOPs / GPU-seconds / peak): assumed, implied, or achieved by a layout
    gpu_hours: float
    wall_clock_s: float
    model_flops: float = math.nan  # total model FLOPs (no recompute); `flops` are hardware FLOPs (recompute included)
    hfu: float = math.nan  # hardware-FLOPs utilisation: flops / (GPU-seconds x peak)

    @property
    def days(self) -> float:
        return self.wall_clock_s / 86400

    def cost(self, price_per_gpu_hour: float) -> float:
        """Cost at `price_per_gpu_hour` (in that price's currency, e.g. $2.0 per H100-hour)."""
        return self.gpu_hours * positive_float("price_per_gpu_hour", price_per_gpu_hour, maximum=1e6)

    def as_dict(self) -> dict:
        return {**{k: getattr(self, k) for k in self.__dataclass_fields__}, "days": self.days}


def training_run(model, tokens: float, gpu, gpus: int, mfu: float | None = None, seq_len: int | None = None,
                 precision: str = "bf16", peak_tflops: float | None = None,
                 attention_flops_per_token: float | None = None, recompute: str = "none",
                 finetune: str = "full", *, hfu: float | None = None) -> TrainingRun:
    """GPU-hours and wall-clock of training `model` on `tokens` with `gpus` GPUs (recompute, finetune: see
    training_flops).

    The rate, one of (PaLM's definitions, Chowdhery et al. 2022, App. B): mfu=x, the run reaches x of the
    peak in model FLOPs (no recompute); hfu=x, every FLOP the GPUs execute, the recomputed forward included,
    runs at x of the peak, so recompute costs time. Neither: hfu=DEFAULT_HFU. Without recompute the two are
    the same number. The run's `flops` are the hardware FLOPs, `model_flops` the model's; it reports both
    utilisations. An mfu that needs more than the peak under recompute is a ValueError."""
    gpus = positive_int("gpus", gpus)
    f = training_flops(model, tokens, seq_len, attention_flops_per_token, recompute, finetune)
    model_f = training_flops(model, tokens, seq_len, attention_flops_per_token, "none", finetune)
    mfu, hfu = utilisation(model_f, f, mfu, hfu)
    hours = gpu_hours(f, gpu, hfu, precision, peak_tflops)
    return TrainingRun(f, float(tokens), get_gpu(gpu).name, gpus, mfu, hours, hours * 3600 / gpus, model_f, hfu)


def training_run_from_step(step: StepTime, tokens: float, gpu) -> TrainingRun:
    """The run a step_time layout gives: tokens / tokens_per_step steps of step_s on step.gpus GPUs.

    `flops` are step_time's hardware FLOPs (with the recompute's extra forward when the layout recomputes),
    `model_flops` its model FLOPs; mfu and hfu are the utilisations achieved after communication, bubble and
    offload: model FLOPs (resp. hardware FLOPs) / (GPU-s x peak), step.achieved_mfu and step.achieved_hfu.
    """
    if not isinstance(step, StepTime):
        raise ValueError(f"training_run_from_step needs a memlib.StepTime (from memlib.step_time), got "
                         f"{type(step).__name__}")
    tokens = positive_float("tokens", tokens, maximum=1e18)
    wall = tokens / step.tokens_per_step * step.step_s
    hours = wall * step.gpus / 3600
    f = step.flops_per_token * tokens
    model_f = (step.model_flops_per_token or step.flops_per_token) * tokens
    achieved = f / (hours * 3600 * step.peak_flops) if step.peak_flops else math.nan
    achieved_mfu = model_f / (hours * 3600 * step.peak_flops) if step.peak_flops else math.nan
    return TrainingRun(f, tokens, get_gpu(gpu).name, step.gpus, achieved_mfu, hours, wall, model_f, achieved)


def _row_model(row: dict):
    """The model a published row names: a catalog name, an architecture dict, or a parameter count."""
    if "model" in row:
        return get_model(row["model"])
    if "architecture" in row:
        arch = {k: v for k, v in row["architecture"].items() if k != "source"}
        return Model(**arch, source=row["architecture"].get("source", ""))
    return float(row["params"])


def _row_mfu(row: dict, rows: dict) -> tuple[float | None, str]:
    """(MFU, where it comes from) for a row: a reported value, one implied by a reported throughput,
    another row's, or (None, reason) where nothing is published."""
    spec = row.get("mfu")
    if isinstance(spec, str) and spec.startswith("same as "):
        mfu, why = _row_mfu(rows[spec[len("same as "):]], rows)
        return mfu, f"as {spec[len('same as '):]}: {why}"
    if spec is None:
        return None, "no published MFU"
    if "value" in spec:
        return fraction("mfu", spec["value"]), f"reported: {spec['source']['paper']}, {spec['source']['table']}"
    t = spec["from_throughput"]
    mfu = mfu_from_throughput(t["model"], t["seq_len"], t["tokens_per_s_per_gpu"], t["gpu"])
    return mfu, (f"{t['tokens_per_s_per_gpu']} tokens/s/GPU of {t['model']} at {t['seq_len']} tokens on {t['gpu']} "
                 f"({spec['source']['paper']}, {spec['source']['table']})")


def reproduce_published(data: dict) -> list[dict]:
    """memlib's GPU-hours for each published run in `data` (validation/published_gpu_hours.json, parsed):
    FLOPs from training_flops (6ND + attention), GPU-hours at the row's published MFU.

    Each result: id, published and memlib GPU-hours, error = (memlib - published) / published (None
    without a published MFU), the MFU used and its source, the MFU the published hours imply
    (FLOPs / (hours x peak)), and whether the row is asserted within data["max_error"].
    """
    rows = {r["id"]: r for r in data["rows"]}
    out = []
    for r in data["rows"]:
        m = _row_model(r)
        att = None
        if "attention" in r:  # a plain parameter count with its attention shape (e.g. MLA's dims)
            a = r["attention"]
            att = 6.0 * a["num_layers"] * a["num_heads"] * r["seq_len"] * (a["qk_head_dim"] + a["v_head_dim"])
        f = training_flops(m, r["tokens"], r["seq_len"] if isinstance(m, Model) else None, att)
        mfu, why = _row_mfu(r, rows)
        published = float(r["published_gpu_hours"])
        hours = gpu_hours(f, r["gpu"], mfu) if mfu is not None else None
        out.append({"id": r["id"], "gpu": r["gpu"], "tokens": r["tokens"], "flops": f, "published_gpu_hours": published,
                    "memlib_gpu_hours": hours, "error": None if hours is None else hours / published - 1,
                    "mfu": mfu, "mfu_source": why, "implied_mfu": f / (published * 3600 * peak_flops(r["gpu"])),
                    "asserted": bool(r.get("assert")), "max_error": data["max_error"]})
    return out
