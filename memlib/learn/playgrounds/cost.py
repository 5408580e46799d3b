"""Notebook 07's playground: how long and how much does a training run take?

Pick a model, the tokens, a GPU, how many, the MFU you believe and the price you pay per
GPU-hour; read the FLOPs, GPU-hours, days and cost (memlib.cost.training_run: 6ND plus the
attention term, at that MFU). No layout search runs, so it redraws as fast as a slider moves;
whether the model fits those GPUs is memlib.parallel.plan's question (notebooks 01-03, the calculator).

    from memlib.learn.playgrounds.cost import CostPlayground, run_summary
    CostPlayground(model="llama-2-7b", tokens=2e12, gpu="h100-80gb", gpus=256, mfu=0.4, price=2.0)
    run_summary("llama-2-7b", 2e12, "h100-80gb", 256, mfu=0.4, price=2.0)   # the same figures, no widgets
"""

from __future__ import annotations

from memlib.learn.playgrounds._panel import SummaryPanel

from memlib import cost
from memlib._checks import choice, positive_float
from memlib.hardware.gpus import get_gpu, list_gpus
from memlib.models import get_model, list_models
from memlib.cost.timing import active_params

TASKS = {"pretrain or full fine-tune": "full", "LoRA / QLoRA (frozen base)": "lora"}
RECOMPUTES = ("none", "full")


def run_summary(model, tokens: float, gpu, gpus: int, mfu: float | None = 0.4, price: float = 2.0,
                seq_len: int = 4096, task: str = "full", recompute: str = "none", *, hfu: float | None = None) -> dict:
    """The playground's figures for one setting: FLOPs, GPU-hours, days, cost at `price` per
    GPU-hour (a figure you set, not a quote), tokens per parameter against Chinchilla's ~20, and
    the 6ND-only figure a pencil gives (to show what the attention term adds).

    mfu is model-FLOPs utilisation (PaLM App. B: recompute not counted), so at a fixed MFU recompute
    adds no GPU-hours, only the HFU the kernels must reach (reported as "hfu"); pass hfu= (and mfu=None)
    to fix the kernels' utilisation instead, so that recompute costs its time."""
    choice("task", task, tuple(TASKS.values()))
    choice("recompute", recompute, RECOMPUTES)
    price = positive_float("price", price, maximum=1e6)
    m = get_model(model)
    run = cost.training_run(m, tokens, gpu, gpus, mfu=mfu, seq_len=seq_len, recompute=recompute, finetune=task,
                            hfu=hfu)
    pencil = cost.training_flops(m, tokens, finetune=task)  # no attention term, no recompute
    return {"model": m.name, "gpu": get_gpu(gpu).name, "gpus": run.gpus, "mfu": run.mfu, "hfu": run.hfu,
            "tokens": run.tokens,
            "flops": run.flops, "gpu_hours": run.gpu_hours, "days": run.days, "cost": run.cost(price), "price": price,
            "tokens_per_param": run.tokens / active_params(m),
            "chinchilla_ratio": run.tokens / cost.chinchilla_tokens(m), "pencil_flops": pencil,
            "beyond_pencil": run.flops / pencil - 1}


def _hfu_words(s: dict) -> str:
    """The HFU beside the MFU when they differ (recompute): PaLM's two utilisations (Chowdhery et al. 2022, App. B)."""
    hfu = s.get("hfu", s["mfu"])
    return "" if abs(hfu - s["mfu"]) < 5e-4 else f" ({hfu:.0%} HFU: the recomputed forward's FLOPs count too)"


def describe(s: dict) -> str:
    """One short HTML block of run_summary's figures (the playground's output)."""
    return (f"<b>{s['model']}</b> on {s['tokens']:.3g} tokens, {s['gpus']:,} x {s['gpu']} at {s['mfu']:.0%} MFU"
            f"{_hfu_words(s)}:<br>"
            f"<b>{s['flops']:.3g} FLOPs</b> ({s['beyond_pencil']:+.0%} over the pencil's 6ND or 4ND: attention and "
            f"recompute) &middot; <b>{s['gpu_hours']:,.0f} GPU-hours</b> &middot; <b>{s['days']:,.2f} days</b> "
            f"wall-clock &middot; <b>${s['cost']:,.0f}</b> at ${s['price']:g} per GPU-hour<br>"
            f"{s['tokens_per_param']:,.0f} tokens per parameter: {s['chinchilla_ratio']:,.2f}x Chinchilla's ~20")


class CostPlayground(SummaryPanel):
    """`CostPlayground(model="llama-2-7b", tokens=2e12, gpu="h100-80gb", gpus=256)`; display it in a cell."""

    summarize = staticmethod(run_summary)
    render = staticmethod(describe)

    def __init__(self, model: str = "llama-2-7b", tokens: float = 2e12, gpu: str = "h100-80gb", gpus: int = 256,
                 mfu: float = 0.4, price: float = 2.0, seq_len: int = 4096, task: str = "full",
                 recompute: str = "none"):
        import ipywidgets as w
        style = {"description_width": "120px"}
        lay = w.Layout(width="360px")
        controls = {
            "model": w.Dropdown(options=list_models(), value=get_model(model).name, description="model", style=style,
                                layout=lay),
            "tokens": w.FloatLogSlider(value=tokens, base=10, min=8, max=13.5, step=0.05, description="tokens",
                                       readout_format=".3g", style=style, layout=lay),
            "gpu": w.Dropdown(options=[g.name for g in list_gpus() if g.bf16_tflops], value=get_gpu(gpu).name,
                              description="GPU", style=style, layout=lay),
            "gpus": w.SelectionSlider(options=[2 ** i for i in range(15)], value=gpus, description="GPUs",
                                      style=style, layout=lay),
            "mfu": w.FloatSlider(value=mfu, min=0.05, max=0.75, step=0.01, description="MFU", readout_format=".0%",
                                 style=style, layout=lay),
            "price": w.FloatSlider(value=price, min=0.25, max=10.0, step=0.05, description="$ per GPU-hour",
                                   readout_format=".2f", style=style, layout=lay),
            "seq_len": w.SelectionSlider(options=[2 ** i for i in range(9, 18)], value=seq_len, description="sequence",
                                         style=style, layout=lay),
            "task": w.Dropdown(options=list(TASKS), value=next(k for k, v in TASKS.items() if v == task),
                               description="task", style=style, layout=lay),
            "recompute": w.Dropdown(options=list(RECOMPUTES), value=recompute, description="recompute", style=style,
                                    layout=lay),
        }
        self._start(controls)

    def values(self) -> dict:
        v = super().values()
        v["task"] = TASKS[v["task"]]
        return v
