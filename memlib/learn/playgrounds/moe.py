"""A serving playground for mixture-of-experts models: pick a MoE, a GPU, how many of them, the
context, the weight and KV-cache formats (and for MLA models the latent or full cache); see every
tensor/expert-parallel layout memlib.parallel.plan.plan_serving finds, ranked by concurrent sequences, the
per-GPU bar of the best one, and the line that says why MoE is cheap in FLOPs but not in memory
(active vs total parameters). ipywidgets is imported on use; each update is one plan_serving
search (tens of milliseconds), so it follows a slider."""

from __future__ import annotations

from memlib.hardware.fit import usable_bytes
from memlib.hardware.gpus import get_gpu, list_gpus
from memlib.serving.inference import AUTO, KV_FORMATS, MLA_CACHES, WEIGHT_FORMATS
from memlib.models import get_model, list_models
from memlib.parallel.moe import routed_expert_params
from memlib.learn.playgrounds import Controls
from memlib.parallel.plan import plan_serving
from memlib.units import gb

CONTEXTS = (2048, 4096, 8192, 16384, 32768, 65536, 131072)
COUNTS = (1, 2, 4, 8, 16, 32, 64)
WEIGHTS = (AUTO,) + WEIGHT_FORMATS


def moe_models() -> list[str]:
    """The catalog's mixture-of-experts models."""
    return [name for name in list_models() if get_model(name).is_moe]


def serving_summary(values: dict) -> dict:
    """What the playground shows, from its control values (model, gpu, count, context, weights, kv_cache,
    mla_cache): the plan_serving result and the parameter split. A bad combination is a ValueError."""
    m = get_model(values["model"])
    result = plan_serving(m, values["gpu"], values["count"], context_len=values["context"],
                          weights=values["weights"], kv_cache=values["kv_cache"],
                          mla_cache=values.get("mla_cache", "latent"))
    return {"model": m, "plan": result, "total": m.num_params, "active": m.num_active_params,
            "experts": routed_expert_params(m), "capacity": usable_bytes(get_gpu(values["gpu"]))}


def _rows_html(summary: dict) -> str:
    r = summary["plan"]
    head = ("<tr><th align='left'>layout</th><th>weights / GPU</th><th>KV cache / GPU</th><th>batch per group</th>"
            "<th>sequences</th></tr>")
    rows = "".join(f"<tr><td>{p.describe()}</td><td align='right'>{gb(p.weight_bytes):.1f} GB</td>"
                   f"<td align='right'>{gb(p.kv_cache_bytes):.1f} GB</td><td align='right'>{p.max_batch.value:,}</td>"
                   f"<td align='right'><b>{p.sequences:,}</b></td></tr>" for p in r.feasible[:6])
    why = "".join(f"<li>tp={s['tp']}, ep={s['ep']}, {s['weights']}: {reason}</li>" for s, reason in r.infeasible[:3])
    return (f"<table style='font-size:12px'>{head}{rows}</table>"
            + (f"<div style='font-size:11px'>Layouts that hold no sequence ({len(r.infeasible)}):<ul>{why}</ul></div>"
               if r.infeasible else ""))


class MoEServingPlayground(Controls):
    """`MoEServingPlayground(model="deepseek-v3", gpu="h200", count=8)`; display it in a notebook cell."""

    def __init__(self, model: str = "deepseek-v3", gpu: str = "h200", count: int = 8, context: int = 8192,
                 weights: str = AUTO, kv_cache: str = "bf16", mla_cache: str = "latent"):
        import ipywidgets as w
        style = {"description_width": "110px"}
        lay = w.Layout(width="320px")
        self.controls = {
            "model": w.Dropdown(options=moe_models(), value=model, description="MoE model", style=style, layout=lay),
            "gpu": w.Dropdown(options=[g.name for g in list_gpus()], value=gpu, description="GPU", style=style,
                              layout=lay),
            "count": w.SelectionSlider(options=COUNTS, value=count, description="GPUs", style=style, layout=lay),
            "context": w.SelectionSlider(options=CONTEXTS, value=context, description="context (tokens)",
                                         style=style, layout=lay),
            "weights": w.Dropdown(options=list(WEIGHTS), value=weights, description="weights", style=style,
                                  layout=lay),
            "kv_cache": w.Dropdown(options=list(KV_FORMATS), value=kv_cache, description="KV cache", style=style,
                                   layout=lay),
            "mla_cache": w.Dropdown(options=list(MLA_CACHES), value=mla_cache, description="MLA cache",
                                    style=style, layout=lay),
        }
        self.summary_html = w.HTML()
        self.table = w.HTML()
        self.chart = w.HTML()
        self.widget = w.VBox([w.HBox([w.VBox(list(self.controls.values())), w.VBox([self.summary_html, self.chart])]),
                              self.table])
        self._watch()
        self.summary = None
        self.update()

    def update(self) -> None:
        """Re-plan and redraw the summary, the best layout's per-GPU bar and the table of layouts."""
        from memlib.learn.viz import breakdown_html
        v = self.values()
        try:
            s = serving_summary(v)
        except ValueError as e:  # an invalid combination: say why instead of drawing
            self.summary_html.value = f"<span style='color:#b00'>{e}</span>"
            self.table.value = self.chart.value = ""
            return
        self.summary = s
        m, best = s["model"], s["plan"].best
        share = s["active"] / s["total"]
        head = (f"<b>{m.name}</b>: {s['total'] / 1e9:,.1f}B parameters, {s['active'] / 1e9:,.1f}B active per token "
                f"({share:.1%}; routed experts {s['experts'] / s['total']:.0%} of all). FLOPs follow the active "
                f"parameters; memory holds all of them.<br>")
        if best is None:
            self.summary_html.value = head + (f"<b style='color:#b00'>no layout holds one sequence of "
                                              f"{v['context']:,} tokens</b> on {v['count']} x {v['gpu']}")
            self.chart.value = ""
        else:
            self.summary_html.value = head + (
                f"<b style='color:#070'>{best.sequences:,} sequences</b> of {v['context']:,} tokens on {v['count']} x "
                f"{v['gpu']}: {best.describe()}; per GPU weights {gb(best.weight_bytes):.1f} GB, KV cache "
                f"{gb(best.kv_cache_bytes):.1f} GB, of {gb(s['capacity']):.1f} GB.")
            self.chart.value = breakdown_html(best.estimate, v["gpu"])
        self.table.value = _rows_html(s)

    def _ipython_display_(self):
        from IPython.display import display
        display(self.widget)
