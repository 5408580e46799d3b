# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: -user_expressions
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.7
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Can I run this? · memlib calculator
#
# Pick a model (from the catalog, or paste its Hugging Face `config.json`), a GPU and how
# many of them, and what you want to do with it. The calculator says whether it fits, shows
# what one GPU holds at the peak, ranks the layouts that work (and says why the others do
# not), estimates the step time of the best one and hands you its DeepSpeed config.
# Every number comes from `memlib`; sizes are in GiB (2**30 bytes, what `nvidia-smi` and
# PyTorch show). Run it as a web app with `voila notebooks/calculator.ipynb`.

# %%
import base64
import html
import json

import ipywidgets as w
from IPython.display import Markdown, display

import memlib
from memlib.serving.inference import WEIGHT_FORMATS
from memlib.parallel.plan import Plan, plan, plan_serving, to_deepspeed_config
from memlib.units import gib
from memlib.learn.viz import breakdown_html

TASKS = {"full fine-tune": "full", "LoRA": "lora", "QLoRA": "qlora", "serving": "serve"}
TRAIN_PRECISIONS = ["bf16-mixed", "fp16-mixed", "bf16", "fp16", "fp32"]
SERVE_WEIGHTS = ["auto"] + list(WEIGHT_FORMATS)  # auto: the checkpoint's own format (its quantization_config)
KV_CACHE = ["bf16", "fp16", "fp8", "int8"]
SEQ_LENS = [(f"{n:,}", n) for n in (2 ** i for i in range(8, 18))]
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256]
COUNTS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
LORA = dict(lora_rank=16, lora_targets="all-linear")
EXAMPLE_CONFIG = json.dumps({
    "_name_or_path": "my-llama-1b", "model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16,
    "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 8192,
    "vocab_size": 128256, "max_position_embeddings": 131072, "tie_word_embeddings": True,
    "hidden_act": "silu"}, indent=1)


# %%
# The calculation, separate from the widgets (code cells are hidden in Voilà, so the notes on
# how it works are comments): `resolve_model` reads the model choice, `training_answer` runs
# `memlib.parallel.plan.plan` (every tensor/pipeline/ZeRO/offload/recompute layout on the GPUs) and
# `serving_answer` runs `memlib.parallel.plan.plan_serving` (tensor/expert-parallel layouts on the GPUs, each with its
# largest batch), then `memlib.estimate_inference` at the chosen batch and `memlib.max_context` on the best one.
def resolve_model(source: str, name: str, config_text: str) -> memlib.Model:
    """A catalog model, or a memlib.Model from pasted config.json text (ValueError if unusable)."""
    if source == "model from the catalog":
        return memlib.get_model(name)
    try:
        cfg = json.loads(config_text)
    except json.JSONDecodeError as e:
        raise ValueError(f"the pasted config.json is not valid JSON: {e.msg} "
                         f"(line {e.lineno}, column {e.colno})") from None
    if not isinstance(cfg, dict):
        raise ValueError("the pasted config.json must be a JSON object ({...})")
    return memlib.Model.from_hf_config(cfg, name=str(cfg.get("_name_or_path") or cfg.get("model_type") or "pasted"))


def _closest(result, model, extra: dict):
    """The infeasible layout that needs the least memory per GPU, as (estimate, verdict, settings)."""
    best = None
    for settings, reason in result.infeasible:
        if reason.startswith("invalid"):
            continue
        est = memlib.estimate_training(model, **{**extra, **settings})
        v = memlib.fits(est, result.gpu)
        if best is None or v.required_bytes < best[1].required_bytes:
            best = (est, v, settings)
    return best


def training_answer(model, gpu: str, count: int, task: str, precision: str, seq_len: int, batch: int,
                    allow_offload: bool, recipe: str | None = None) -> dict:
    notes = []
    extra = dict(LORA) if task in ("lora", "qlora") else {}
    if recipe:  # the framework's defaults (memlib.RECIPES); the layout searched and the controls override them
        extra["recipe"] = recipe
    result = plan(model, gpu, count, task, seq_len=seq_len, micro_batch=batch, precisions=(precision,),
                  allow_offload=allow_offload, **extra)
    answer = {"result": result, "notes": notes, "best": result.best, "time": None, "time_error": None,
              "deepspeed": None, "deepspeed_error": None}
    if result.best is not None:
        answer.update(estimate=result.best.estimate, verdict=result.best.verdict,
                      layout=result.best.describe())
        try:
            answer["time"] = memlib.step_time(result.best.estimate, gpu)
        except ValueError as e:
            answer["time_error"] = str(e)
        try:
            answer["deepspeed"] = to_deepspeed_config(result.best)
        except ValueError as e:
            answer["deepspeed_error"] = str(e)
    else:
        closest = _closest(result, model, extra)
        if closest is None:  # every layout was invalid: say why
            raise ValueError(result.infeasible[0][1] if result.infeasible else "no layout to try")
        est, v, settings = closest
        answer.update(estimate=est, verdict=v, layout=Plan(settings, est, v).describe())
    return answer


def serving_answer(model, gpu: str, count: int, weights: str, kv_cache: str, context_len: int, batch: int) -> dict:
    result = plan_serving(model, gpu, count, context_len=context_len, weights=weights, kv_cache=kv_cache)
    if result.best is not None:
        kw = dict(result.best.settings)
    else:  # nothing holds one sequence: show the layout that needs the least memory per GPU
        if not result.infeasible:
            raise ValueError(f"{model.name} cannot be split over {count} GPUs (tensor parallelism needs a count "
                             "dividing its heads)")
        kw = min((s for s, _ in result.infeasible),
                 key=lambda s: memlib.estimate_inference(model, 1, context_len, **s).peak_bytes)
    est = memlib.estimate_inference(model, batch=batch, context_len=context_len, **kw)
    layout = (result.best.describe() if result.best else f"tp={kw['tp']}" + (f", ep={kw['ep']}" if kw["ep"] > 1
                                                                             else ""))
    return {"estimate": est, "verdict": memlib.fits(est, gpu), "notes": list(est.notes), "result": result,
            "layout": f"{layout}, batch {batch} per attention group, context {context_len:,} "
                      f"(prefill {kw['prefill_tokens']:,} tokens per forward)",
            "max_batch": result.best.max_batch if result.best else memlib.max_batch(model, gpu, context_len, **kw),
            "max_context": memlib.max_context(model, gpu, batch=batch, **kw)}


# %%
# The page: controls on the left; verdict, per-GPU breakdown, step time and the DeepSpeed
# config on the right; the ranked layouts below. The verdict and the breakdown carry the CSS
# classes `memlib-verdict` and `memlib-breakdown` (tests/test_calculator_browser.py reads them).
def _e(text) -> str:
    return html.escape(str(text))


def _plans_html(answer: dict) -> str:
    r = answer["result"]
    rows = []
    for i, p in enumerate(r.feasible[:10], 1):
        t = p.time
        host = f"{gib(p.estimate.host_bytes):.0f}" if p.estimate.host_bytes else "–"
        rows.append(f"<tr><td>{i}</td><td>{_e(p.describe())}</td><td>{gib(p.verdict.required_bytes):.1f}</td>"
                    f"<td>{p.verdict.margin_gib:+.1f}</td>"
                    f"<td>{f'{t.tokens_per_s_per_gpu:,.0f}' if t else 'n/a'}</td>"
                    f"<td>{f'{t.step_s:.2f}' if t else 'n/a'}</td><td>{host}</td></tr>")
    head = ("<tr><th>#</th><th>layout</th><th>needs GiB/GPU</th><th>margin GiB</th><th>tokens/s/GPU</th>"
            "<th>step s</th><th>host RAM GiB/GPU</th></tr>")
    out = [f"<h4>Layouts that fit ({len(r.feasible)}), fastest first</h4>"]
    if rows:
        more = f"<p>…and {len(r.feasible) - 10} more.</p>" if len(r.feasible) > 10 else ""
        out.append(f"<table class='memlib-table'>{head}{''.join(rows)}</table>{more}")
    else:
        out.append("<p>None. Try more GPUs, LoRA or QLoRA, a shorter sequence or a smaller batch.</p>")
    if r.infeasible:
        items = "".join(f"<li><b>{_e(Plan(s, None, None).describe())}</b>: {_e(reason)}</li>"
                        for s, reason in r.infeasible[:40])
        more = f"<li>…and {len(r.infeasible) - 40} more</li>" if len(r.infeasible) > 40 else ""
        out.append(f"<details><summary>Why the other {len(r.infeasible)} layouts do not fit</summary>"
                   f"<ul style='font-size:12px'>{items}{more}</ul></details>")
    return "".join(out)


def _limits_html(answer: dict) -> str:
    mb, mc, r = answer["max_batch"], answer["max_context"], answer["result"]
    out = ["<h4>Serving limits on these GPUs</h4><ul>",
           f"<li>largest batch at this context (per attention group): <b>{mb.value:,}</b> ({_e(mb.reason)})</li>",
           f"<li>longest context at this batch: <b>{mc.value:,}</b> ({_e(mc.reason)})</li></ul>"]
    rows = [f"<tr><td>{i}</td><td>{_e(p.describe())}</td><td>{gib(p.weight_bytes):.1f}</td>"
            f"<td>{gib(p.kv_cache_bytes):.1f}</td><td>{p.max_batch.value:,}</td><td>{p.sequences:,}</td></tr>"
            for i, p in enumerate(r.feasible[:10], 1)]
    if rows:
        out.append(f"<h4>Serving layouts that fit ({len(r.feasible)}), most sequences first</h4>"
                   "<table class='memlib-table'><tr><th>#</th><th>layout</th><th>weights GiB/GPU</th>"
                   "<th>KV cache GiB/GPU</th><th>largest batch per group</th><th>sequences on all GPUs</th></tr>"
                   + "".join(rows) + "</table>")
    if r.infeasible:
        items = "".join(f"<li><b>tp={s['tp']}, ep={s['ep']}, {_e(s['weights'])}</b>: {_e(why)}</li>"
                        for s, why in r.infeasible[:20])
        out.append(f"<details><summary>Why the other {len(r.infeasible)} layouts do not fit</summary>"
                   f"<ul style='font-size:12px'>{items}</ul></details>")
    return "".join(out)


def _download_html(cfg: dict) -> str:
    text = json.dumps(cfg, indent=2)
    uri = "data:application/json;base64," + base64.b64encode(text.encode()).decode()
    return (f"<a class='memlib-download-link' download='deepspeed_config.json' href='{uri}' "
            "style='font-weight:bold'>&#11015; Download the DeepSpeed config (deepspeed_config.json)</a>"
            f"<details><summary>show it</summary><pre style='font-size:11px'>{_e(text)}</pre></details>")


class Calculator:
    """The dashboard. `Calculator()` builds it; display it (or `calc.widget`) in a cell."""

    def __init__(self, model: str = "llama-7b", gpu: str = "a100-80gb", count: int = 1, task: str = "LoRA",
                 precision: str = "bf16-mixed", seq_len: int = 2048, batch: int = 1):
        style = {"description_width": "120px"}

        def lay():  # one Layout per control: a shared one would show or hide them all at once
            return w.Layout(width="360px")

        self.source = w.ToggleButtons(options=["model from the catalog", "paste config.json"],
                                      value="model from the catalog", style={"button_width": "172px"})
        self.model = w.Dropdown(options=memlib.list_models(), value=model, description="model", style=style,
                                layout=lay())
        self.config_text = w.Textarea(value=EXAMPLE_CONFIG, description="config.json", continuous_update=False,
                                      style=style, layout=w.Layout(width="360px", height="180px", display="none"))
        self.gpu = w.Dropdown(options=[g.name for g in memlib.list_gpus()], value=gpu, description="GPU",
                              style=style, layout=lay())
        self.count = w.Dropdown(options=COUNTS, value=count, description="number of GPUs", style=style, layout=lay())
        self.task = w.Dropdown(options=list(TASKS), value=task, description="task", style=style, layout=lay())
        self.precision = w.Dropdown(options=TRAIN_PRECISIONS, value=precision, description="precision",
                                    style=style, layout=lay())
        self.kv_cache = w.Dropdown(options=KV_CACHE, value="bf16", description="KV cache", style=style,
                                   layout=w.Layout(width="360px", display="none"))
        self.seq_len = w.Dropdown(options=SEQ_LENS, value=seq_len, description="sequence length", style=style,
                                  layout=lay())
        self.batch = w.Dropdown(options=BATCHES, value=batch, description="micro-batch", style=style, layout=lay())
        self.recipe = w.Dropdown(options=[("(memlib defaults)", None)] + [(r, r) for r in memlib.RECIPES],
                                 value=None, description="recipe", style=style, layout=lay())
        self.offload = w.Checkbox(value=True, description="allow CPU offload (ZeRO-Offload)", indent=False,
                                  layout=lay())
        for c, cls in ((self.model, "model"), (self.config_text, "config"), (self.gpu, "gpu"),
                       (self.count, "count"), (self.task, "task"), (self.precision, "precision"),
                       (self.seq_len, "seq-len"), (self.batch, "batch"), (self.recipe, "recipe")):
            c.add_class(f"memlib-{cls}")

        self.verdict = w.HTML().add_class("memlib-verdict")
        self.breakdown = w.HTML().add_class("memlib-breakdown")
        self.time = w.HTML().add_class("memlib-step-time")
        self.download = w.HTML().add_class("memlib-download")
        self.plans = w.HTML().add_class("memlib-plans")
        self.derivation = w.Output()
        details = w.Accordion(children=[self.derivation], selected_index=None)
        details.set_title(0, "How the peak is computed (memlib's derivation)")
        controls = w.VBox([self.source, self.model, self.config_text, self.gpu, self.count, self.task,
                           self.precision, self.kv_cache, self.seq_len, self.batch, self.recipe, self.offload],
                          layout=w.Layout(width="380px"))
        results = w.VBox([self.verdict, self.breakdown, self.time, self.download],
                         layout=w.Layout(width="540px", padding="0 0 0 16px"))
        style_tag = w.HTML("<style>.memlib-table{border-collapse:collapse;font-size:12px}"
                           ".memlib-table td,.memlib-table th{border-bottom:1px solid #ddd;padding:2px 8px;"
                           "text-align:left}</style>")
        self.widget = w.VBox([style_tag, w.HBox([controls, results]), self.plans, details]).add_class("memlib-app")
        self._holding = False
        for c in (self.source, self.model, self.config_text, self.gpu, self.count, self.task, self.precision,
                  self.kv_cache, self.seq_len, self.batch, self.recipe, self.offload):
            c.observe(self._changed, names="value")
        self.answer = None
        self.error = None
        self.update()

    def _changed(self, change) -> None:
        if self._holding:
            return
        if change["owner"] in (self.task, self.source):
            self._adapt_controls()
        self.update()

    def _adapt_controls(self) -> None:
        """Show the controls that apply: config text or catalog; serving or training options."""
        self._holding = True
        try:
            paste = self.source.value == "paste config.json"
            self.model.layout.display = "none" if paste else None
            self.config_text.layout.display = None if paste else "none"
            serving = TASKS[self.task.value] == "serve"
            options = SERVE_WEIGHTS if serving else TRAIN_PRECISIONS
            if list(self.precision.options) != options:
                self.precision.options = options
                self.precision.value = options[0]
            self.precision.description = "weights" if serving else "precision"
            self.kv_cache.layout.display = None if serving else "none"
            self.offload.layout.display = "none" if serving else None
            self.recipe.layout.display = "none" if serving else None
            self.seq_len.description = "context length" if serving else "sequence length"
            self.batch.description = "batch" if serving else "micro-batch"
        finally:
            self._holding = False

    def update(self) -> None:
        """Recompute and redraw; any problem becomes a message on the page, never a traceback."""
        try:
            self._update()
            self.error = None
        except Exception as e:  # noqa: BLE001: the page must explain, not crash
            self.error = str(e) if isinstance(e, ValueError) else f"{type(e).__name__}: {e}"
            self.answer = None
            self.verdict.value = ("<div data-verdict='error' style='font-size:15px;color:#a50'>"
                                  f"&#9888; <b>Cannot compute this:</b> {_e(self.error)}</div>")
            for out in (self.breakdown, self.time, self.download, self.plans):
                out.value = ""
            self.derivation.clear_output()

    def _update(self) -> None:
        model = resolve_model(self.source.value, self.model.value, self.config_text.value)
        gpu, count, task = self.gpu.value, self.count.value, TASKS[self.task.value]
        if task == "serve":
            a = serving_answer(model, gpu, count, self.precision.value, self.kv_cache.value, self.seq_len.value,
                               self.batch.value)
        else:
            a = training_answer(model, gpu, count, task, self.precision.value, self.seq_len.value,
                                self.batch.value, self.offload.value, self.recipe.value)
        self.answer = a
        v, est = a["verdict"], a["estimate"]
        ok = v.fits
        what = f"{_e(model.name)}, {_e(self.task.value)} on {count} &times; {_e(gpu)}"
        how = ("with the best layout" if ok else "even the layout that needs the least memory") \
            if task != "serve" else "as set"
        notes = "".join(f"<div style='color:#666;font-size:12px'>{_e(n)}</div>" for n in a["notes"])
        self.verdict.value = (
            f"<div data-verdict='{'fits' if ok else 'no'}' style='font-size:15px'>"
            f"<span style='font-size:20px;font-weight:bold;color:{'#070' if ok else '#b00'}'>"
            f"{'&#10004; Yes, it fits' if ok else '&#10008; No, it does not fit'}</span><br>{what}: {how} "
            f"needs <b>{gib(v.required_bytes):.1f} GiB per GPU</b> of {gib(v.capacity_bytes):.1f} GiB, "
            f"margin <b>{v.margin_gib:+.1f} GiB</b> (peak {gib(est.peak_bytes):.1f} GiB in {_e(est.phase)}, "
            f"plus the CUDA context and allocator headroom).<br><span style='font-size:12px'>Layout: "
            f"{_e(a['layout'])}</span>{notes}</div>")
        self.breakdown.value = (f"<h4 style='margin:10px 0 0'>One GPU at the peak ({_e(est.phase)})</h4>"
                                + breakdown_html(est, gpu, width_px=500))
        if task == "serve":
            self.time.value = ("<h4>Step time</h4><p style='font-size:12px'>memlib models the time of a "
                               "training step; serving throughput is not modelled.</p>")
            self.download.value = ""
            self.plans.value = _limits_html(a)
        else:
            t = a["time"]
            if t is not None:
                s = a["best"].settings
                seqs = s["micro_batch"] * s["grad_accum"] * s["dp"]
                self.time.value = (f"<h4 style='margin:10px 0 0'>Step time of the best layout</h4><p>"
                                   f"<b>{t.step_s:.2f} s</b> per optimizer step, {t.tokens_per_s_per_gpu:,.0f} "
                                   f"tokens/s per GPU (memlib.step_time, kernels at 40% of peak on every FLOP, recompute "
                                   f"included: 40% HFU, {t.mfu:.0%} MFU; micro-batch {s['micro_batch']} "
                                   f"&times; {s['grad_accum']} accumulation steps &times; dp {s['dp']} = {seqs:,} "
                                   f"sequences of {s['seq_len']:,} tokens).</p>")
            elif a["best"] is not None:
                self.time.value = f"<h4>Step time</h4><p style='font-size:12px'>n/a: {_e(a['time_error'])}</p>"
            else:
                self.time.value = ""
            if a["deepspeed"] is not None:
                self.download.value = _download_html(a["deepspeed"])
            elif a["deepspeed_error"]:
                self.download.value = f"<p style='font-size:12px'>No DeepSpeed config: {_e(a['deepspeed_error'])}</p>"
            else:
                self.download.value = ""
            self.plans.value = _plans_html(a)
        with self.derivation:
            self.derivation.clear_output(wait=True)
            display(Markdown(est.explain()))

    def close(self) -> None:
        """Close every widget of the page, their layouts and styles too (each holds a comm): done
        now, not whenever the garbage collector gets to them, when the kernel may be idle."""
        seen = set()

        def close_tree(widget):
            if id(widget) in seen:
                return
            seen.add(id(widget))
            for key in widget.keys:
                value = getattr(widget, key)
                for item in value if isinstance(value, (list, tuple)) else [value]:
                    if isinstance(item, w.Widget):
                        close_tree(item)
            widget.close()

        close_tree(self.widget)

    def _ipython_display_(self):
        display(self.widget)


# %%
calc = Calculator()
calc

# %%
# A quiet self-check for the test suite (nbval runs this notebook); it prints nothing. Voilà
# skips it: a second dashboard built in the last cell made Voilà's page hang now and then
# (about 1 load in 15 here), and the page's own test is tests/test_calculator_browser.py.
import os

if not any(k in os.environ for k in ("VOILA_BASE_URL", "VOILA_KERNEL_ID")):
    _probe = Calculator()
    assert _probe.error is None and "Yes, it fits" in _probe.verdict.value
    _probe.model.value = "llama-2-70b"
    assert "does not fit" in _probe.verdict.value
    _probe.source.value = "paste config.json"
    assert _probe.error is None and "my-llama-1b" in _probe.verdict.value
    assert _probe.model.layout.display == "none" and _probe.gpu.layout.display != "none"
    _probe.config_text.value = "{not json"
    assert "not valid JSON" in _probe.error and "Cannot compute" in _probe.verdict.value
    _probe.source.value = "model from the catalog"
    _probe.task.value = "serving"
    assert _probe.precision.value == "auto" and "Serving limits" in _probe.plans.value
    _probe.model.value, _probe.gpu.value, _probe.count.value = "deepseek-v3", "h200", 8  # fp8 weights, MLA, ep
    assert _probe.error is None and "Yes, it fits" in _probe.verdict.value and "ep=8" in _probe.plans.value
    _probe.task.value = "full fine-tune"
    _probe.model.value, _probe.gpu.value, _probe.count.value = "mixtral-8x7b", "h100-80gb", 16  # a MoE, trained
    assert _probe.error is None and "ep=" in _probe.plans.value
    assert "deepspeed_config.json" in _probe.download.value or "fit" in _probe.verdict.value
    _probe.model.value, _probe.gpu.value, _probe.count.value, _probe.task.value = "llama-2-7b", "a100-80gb", 1, "LoRA"
    _probe.recipe.value = "torchtune"  # the framework's defaults, the layout still searched
    assert _probe.error is None and "recipe **torchtune**" in _probe.answer["estimate"].explain()
    _probe.close()
    del _probe
