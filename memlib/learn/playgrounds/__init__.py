"""The notebooks' playground: pick a model, GPU, count and method; see the verdict, the
breakdown chart and the derivation update. One widget for every notebook (ipywidgets is
imported on use; the chart is an HTML bar so it redraws as fast as a slider moves)."""

from __future__ import annotations

from memlib.hardware.fit import fits
from memlib.hardware.gpus import list_gpus
from memlib.models import list_models
from memlib.training import estimate_training
from memlib.units import gib

METHODS = {"full fine-tune": "full", "LoRA": "lora", "QLoRA": "qlora"}
ZERO = {"none": 0, "ZeRO-1": 1, "ZeRO-2": 2, "ZeRO-3": 3, "ZeRO-3 + offload optimizer": "offload",
        "ZeRO-3 + offload all": "offload-all"}


def settings_from(values: dict) -> dict:
    """estimate_training keyword arguments from the playground's control values."""
    z = ZERO[values["zero"]]
    kw = dict(seq_len=values["seq_len"], micro_batch=values["micro_batch"], precision=values["precision"],
              finetune=METHODS[values["method"]], recompute=values["recompute"], dp=values["count"])
    if kw["finetune"] != "full":
        kw.update(lora_rank=16, lora_targets="all-linear")
    if z == "offload":
        kw.update(zero_stage=3, offload="optimizer")
    elif z == "offload-all":
        kw.update(zero_stage=3, offload="optimizer+params")
    else:
        kw.update(zero_stage=z)
    if kw["finetune"] == "qlora":  # one GPU, or FSDP-QLoRA (the 4-bit base sharded) over several
        kw.update(zero_stage="FULL_SHARD" if kw["dp"] > 1 else 0, offload="none")
    return kw


class Controls:
    """What every playground shares: `self.controls` (name -> ipywidget), each change redrawn by `update()`."""

    controls: dict

    def _watch(self) -> None:
        for c in self.controls.values():
            c.observe(lambda _change: self.update(), names="value")

    def values(self) -> dict:
        return {k: c.value for k, c in self.controls.items()}

    def update(self) -> None:
        raise NotImplementedError


class Playground(Controls):
    """`Playground(model="llama-7b", gpu="a100-80gb")`; display it in a notebook cell."""

    def __init__(self, model: str = "llama-7b", gpu: str = "a100-80gb", count: int = 1,
                 precision: str = "bf16-mixed", method: str = "full fine-tune", zero: str = "none",
                 recompute: str = "none", seq_len: int = 2048, micro_batch: int = 1):
        import ipywidgets as w
        style = {"description_width": "110px"}
        lay = w.Layout(width="330px")
        self.controls = {
            "model": w.Dropdown(options=list_models(), value=model, description="model", style=style, layout=lay),
            "gpu": w.Dropdown(options=[g.name for g in list_gpus()], value=gpu, description="GPU", style=style,
                              layout=lay),
            "count": w.IntSlider(value=count, min=1, max=64, description="GPUs (data par.)", style=style,
                                 layout=lay),
            "precision": w.Dropdown(options=["bf16-mixed", "fp16-mixed", "bf16", "fp16", "fp32"], value=precision,
                                    description="precision", style=style, layout=lay),
            "method": w.Dropdown(options=list(METHODS), value=method, description="method", style=style, layout=lay),
            "zero": w.Dropdown(options=list(ZERO), value=zero, description="ZeRO", style=style, layout=lay),
            "recompute": w.Dropdown(options=["none", "selective", "full"], value=recompute,
                                    description="recompute", style=style, layout=lay),
            "seq_len": w.SelectionSlider(options=[2 ** i for i in range(8, 16)], value=seq_len,
                                         description="sequence", style=style, layout=lay),
            "micro_batch": w.SelectionSlider(options=[1, 2, 4, 8, 16, 32], value=micro_batch,
                                             description="micro-batch", style=style, layout=lay),
        }
        self.verdict = w.HTML()
        self.chart = w.HTML()
        self.derivation = w.Output(layout=w.Layout(max_height="320px", overflow="auto"))
        self.widget = w.VBox([w.HBox([w.VBox(list(self.controls.values())), w.VBox([self.verdict, self.chart])]),
                              w.HTML("<b>Derivation</b>"), self.derivation])
        self._watch()
        self.estimate = None
        self.update()

    def update(self) -> None:
        """Recompute the estimate and redraw the verdict, the chart and the derivation."""
        from IPython.display import Markdown, display

        from memlib.learn.viz import breakdown_html
        v = self.values()
        try:
            est = estimate_training(v["model"], **settings_from(v))
        except ValueError as e:  # an invalid combination: say why instead of drawing
            self.verdict.value = f"<span style='color:#b00'>{e}</span>"
            return
        self.estimate = est
        verdict = fits(est, v["gpu"])
        colour = "#070" if verdict.fits else "#b00"
        word = "fits" if verdict.fits else "does not fit"
        extra = f"; host RAM for offload {gib(est.host_bytes):.0f} GiB per GPU" if est.host_bytes else ""
        self.verdict.value = (f"<b style='color:{colour}'>{word}</b> on {v['gpu']}: needs "
                              f"{gib(verdict.required_bytes):.1f} GiB per GPU (peak {gib(est.peak_bytes):.1f} GiB "
                              f"in {est.phase}) of {gib(verdict.capacity_bytes):.1f} GiB, margin "
                              f"{verdict.margin_gib:+.1f} GiB{extra}")
        self.chart.value = breakdown_html(est, v["gpu"])
        with self.derivation:
            self.derivation.clear_output(wait=True)
            display(Markdown(est.explain()))

    def _ipython_display_(self):
        from IPython.display import display
        display(self.widget)
