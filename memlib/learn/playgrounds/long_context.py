"""Notebook 06's playground: train at a long sequence length and watch what each lever does.

memlib.learn.playgrounds.Playground has no control for the levers of long-context training (the attention kernel,
the chunked loss, activation offload, context parallelism) and stops at 32k tokens; this widget has them,
from 4k to 1M tokens. It shows the verdict (memlib.fits), what one GPU holds at the peak, the step time
(memlib.step_time: the attention share of the FLOPs, the ring's exposed traffic) and the derivation.
ipywidgets is imported on use.
"""

from __future__ import annotations

from memlib.hardware.fit import fits
from memlib.hardware.gpus import list_gpus
from memlib.models import list_models
from memlib.learn.playgrounds import Controls
from memlib.cost.timing import attention_flops_per_token, step_time
from memlib.training import estimate_training
from memlib.units import gib

SEQ_LENS = tuple(2 ** i for i in range(12, 21))  # 4k ... 1M tokens
CPS = (1, 2, 4, 8, 16, 32)


def settings_from(values: dict) -> dict:
    """estimate_training keyword arguments from the widget's control values (GPUs = dp x cp)."""
    kw = dict(seq_len=values["seq_len"], precision=values["precision"], attention=values["attention"],
              recompute=values["recompute"], loss=values["loss"], activation_offload=values["offload"],
              cp=values["cp"], dp=values["dp"])
    kw["zero_stage"] = "FULL_SHARD" if values["fsdp"] else 0
    return kw


def step_line(estimate, gpu: str) -> str:
    """One line of timing: tokens/s per GPU at memlib's default 40% HFU (every FLOP the GPU runs, recompute included;
    the MFU it means is printed beside it), the attention share of the FLOPs, the ring."""
    s = estimate.setup
    try:
        t = step_time(estimate, gpu)
    except ValueError as e:  # a precision the GPU cannot time (fp32, bf16 on a V100)
        return f"step time: {e}"
    share = attention_flops_per_token(s.model, s.seq_len) / t.flops_per_token
    ring = (f"; ring attention moves {t.cp_comm_bytes / 1e9:,.0f} GB per GPU per step, {t.cp_exposed_s:.2f} s of it "
            "not hidden by attention" if s.cp > 1 else "")
    return (f"step of {t.tokens_per_step:,} tokens on {t.gpus} GPUs: {t.step_s:,.1f} s, "
            f"{t.tokens_per_s_per_gpu:,.0f} tokens/s per GPU ({t.hfu:.0%} HFU, {t.mfu:.0%} MFU); attention is {share:.0%} of the FLOPs{ring}")


class LongContextPlayground(Controls):
    """`LongContextPlayground(model="llama-3.1-8b", gpu="h100-80gb")`; display it in a notebook cell."""

    def __init__(self, model: str = "llama-3.1-8b", gpu: str = "h100-80gb", seq_len: int = 131072, cp: int = 8,
                 dp: int = 1, precision: str = "bf16-mixed", attention: str = "sdpa", recompute: str = "selective",
                 loss: str = "full", offload: bool = False, fsdp: bool = True):
        import ipywidgets as w
        style = {"description_width": "120px"}
        lay = w.Layout(width="340px")
        self.controls = {
            "model": w.Dropdown(options=list_models(), value=model, description="model", style=style, layout=lay),
            "gpu": w.Dropdown(options=[g.name for g in list_gpus()], value=gpu, description="GPU", style=style,
                              layout=lay),
            "seq_len": w.SelectionSlider(options=SEQ_LENS, value=seq_len, description="sequence (tokens)",
                                         style=style, layout=lay),
            "cp": w.SelectionSlider(options=CPS, value=cp, description="context parallel", style=style, layout=lay),
            "dp": w.IntSlider(value=dp, min=1, max=64, description="data parallel", style=style, layout=lay),
            "fsdp": w.Checkbox(value=fsdp, description="FSDP over dp x cp", style=style, layout=lay),
            "precision": w.Dropdown(options=["bf16-mixed", "bf16", "fp16-mixed"], value=precision,
                                    description="precision", style=style, layout=lay),
            "attention": w.Dropdown(options=["sdpa", "eager"], value=attention, description="attention",
                                    style=style, layout=lay),
            "recompute": w.Dropdown(options=["none", "selective", "full"], value=recompute,
                                    description="recompute", style=style, layout=lay),
            "loss": w.Dropdown(options=["full", "chunked"], value=loss, description="loss", style=style, layout=lay),
            "offload": w.Checkbox(value=offload, description="activation offload", style=style, layout=lay),
        }
        self.verdict = w.HTML()
        self.chart = w.HTML()
        self.timing = w.HTML()
        self.derivation = w.Output(layout=w.Layout(max_height="320px", overflow="auto"))
        self.widget = w.VBox([w.HBox([w.VBox(list(self.controls.values())),
                                      w.VBox([self.verdict, self.chart, self.timing])]),
                              w.HTML("<b>Derivation</b>"), self.derivation])
        self._watch()
        self.estimate = None
        self.update()

    def update(self) -> None:
        """Recompute the estimate and redraw the verdict, the chart, the timing and the derivation."""
        from IPython.display import Markdown, display

        from memlib.learn.viz import breakdown_html
        v = self.values()
        try:
            est = estimate_training(v["model"], **settings_from(v))
        except ValueError as e:  # an invalid combination (eager with cp, a length not divisible by 2 x cp, ...)
            self.verdict.value = f"<span style='color:#b00'>{e}</span>"
            self.timing.value = ""
            return
        self.estimate = est
        verdict = fits(est, v["gpu"])
        colour = "#070" if verdict.fits else "#b00"
        word = "fits" if verdict.fits else "does not fit"
        gpus = v["dp"] * v["cp"]
        extra = f"; host RAM for offloaded activations {gib(est.host_bytes):.0f} GiB per GPU" if est.host_bytes else ""
        self.verdict.value = (f"<b style='color:{colour}'>{word}</b> on {gpus} x {v['gpu']}: needs "
                              f"{gib(verdict.required_bytes):.1f} GiB per GPU (peak {gib(est.peak_bytes):.1f} GiB in "
                              f"{est.phase}) of {gib(verdict.capacity_bytes):.1f} GiB, margin "
                              f"{verdict.margin_gib:+.1f} GiB{extra}")
        self.chart.value = breakdown_html(est, v["gpu"])
        self.timing.value = f"<span style='font-size:12px'>{step_line(est, v['gpu'])}</span>"
        with self.derivation:
            self.derivation.clear_output(wait=True)
            display(Markdown(est.explain()))

    def _ipython_display_(self):
        from IPython.display import display
        display(self.widget)
