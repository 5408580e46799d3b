"""A serving playground: pick a model, a GPU, how many of them share it (tensor parallel), the weight
and KV-cache formats and the context; see the per-GPU breakdown at the largest batch that fits, that
batch, what vLLM's default reservation admits, and the decode speed limit. memlib.learn.playgrounds.Playground
is its training counterpart. ipywidgets is imported on use; the chart is an HTML bar, so it redraws as
fast as a slider moves (each update is one max_batch search, a few milliseconds)."""

from __future__ import annotations

from memlib.hardware.fit import fits, usable_bytes
from memlib.hardware.gpus import get_gpu, list_gpus
from memlib.serving.engines import kv_formats
from memlib.serving.inference import KV_FORMATS, WEIGHT_FORMATS, estimate_inference, max_batch
from memlib.models import list_models
from memlib.learn.playgrounds import Controls
from memlib.serving import VLLM_GPU_MEMORY_UTILIZATION, decode_bound, vllm_default_max_num_batched_tokens, \
    vllm_max_concurrency
from memlib.units import gb, gib

CONTEXTS = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
TP = (1, 2, 4, 8)
CHUNKS = ("vLLM default", 2048, 4096, 8192, 16384)


def serving_summary(values: dict) -> dict:
    """Everything the playground shows, from its control values (model, gpu, tp, weights, kv_cache,
    context, chunk, utilization); a ValueError names a bad combination (tp not dividing the heads)."""
    m, g, tp, ctx = values["model"], values["gpu"], values["tp"], values["context"]
    chunk = values.get("chunk", "vLLM default")
    tokens = vllm_default_max_num_batched_tokens(g) if chunk == "vLLM default" else chunk
    kw = dict(weights=values["weights"], kv_cache=values["kv_cache"], tp=tp)
    limit = max_batch(m, g, ctx, prefill_tokens=tokens, **kw)
    batch = max(limit.value, 1)
    est = estimate_inference(m, batch, ctx, prefill_tokens=tokens, **kw)
    util = values.get("utilization", VLLM_GPU_MEMORY_UTILIZATION)
    # vLLM's own cache formats only: an int8 cache is LMDeploy's (quant_policy=8), which vLLM does not offer
    vllm = (vllm_max_concurrency(m, g, ctx, max_num_batched_tokens=tokens, gpu_memory_utilization=util, **kw)
            if values["kv_cache"] in kv_formats("vllm") else None)
    full, one = decode_bound(m, g, batch, ctx, **kw), decode_bound(m, g, 1, ctx, **kw)
    return {"estimate": est, "verdict": fits(est, g), "max_batch": limit.value, "reason": limit.reason,
            "vllm_concurrency": vllm, "prefill_tokens": tokens, "decode_full": full, "decode_one": one,
            "capacity": usable_bytes(get_gpu(g))}


class ServingPlayground(Controls):
    """`ServingPlayground(model="llama-3-70b", gpu="a100-80gb", tp=2)`; display it in a notebook cell."""

    def __init__(self, model: str = "llama-3-70b", gpu: str = "a100-80gb", tp: int = 2, weights: str = "bf16",
                 kv_cache: str = "bf16", context: int = 8192, chunk="vLLM default",
                 utilization: float = VLLM_GPU_MEMORY_UTILIZATION):
        import ipywidgets as w
        style = {"description_width": "120px"}
        lay = w.Layout(width="340px")
        self.controls = {
            "model": w.Dropdown(options=list_models(), value=model, description="model", style=style, layout=lay),
            "gpu": w.Dropdown(options=[g.name for g in list_gpus()], value=gpu, description="GPU", style=style,
                              layout=lay),
            "tp": w.SelectionSlider(options=TP, value=tp, description="GPUs (tensor par.)", style=style, layout=lay),
            "weights": w.Dropdown(options=list(WEIGHT_FORMATS), value=weights, description="weights", style=style,
                                  layout=lay),
            "kv_cache": w.Dropdown(options=list(KV_FORMATS), value=kv_cache, description="KV cache", style=style,
                                   layout=lay),
            "context": w.SelectionSlider(options=CONTEXTS, value=context, description="context (tokens)",
                                         style=style, layout=lay),
            "chunk": w.Dropdown(options=list(CHUNKS), value=chunk, description="prefill chunk", style=style,
                                layout=lay),
            "utilization": w.FloatSlider(value=utilization, min=0.5, max=0.98, step=0.01,
                                         description="vLLM gpu_mem_util", style=style, layout=lay),
        }
        self.summary_html = w.HTML()
        self.chart = w.HTML()
        self.widget = w.HBox([w.VBox(list(self.controls.values())), w.VBox([self.summary_html, self.chart])])
        self._watch()
        self.summary = None
        self.update()

    def update(self) -> None:
        """Recompute and redraw the summary and the per-GPU bar."""
        from memlib.learn.viz import breakdown_html
        v = self.values()
        try:
            s = serving_summary(v)
        except ValueError as e:  # an invalid combination: say why instead of drawing
            self.summary_html.value = f"<span style='color:#b00'>{e}</span>"
            return
        self.summary = s
        est, full, one = s["estimate"], s["decode_full"], s["decode_one"]
        n = s["max_batch"]
        colour = "#070" if n else "#b00"
        per_chat = est.kv_bytes_per_token * v["context"]
        self.summary_html.value = (
            f"<b style='color:{colour}'>{n:,} concurrent chats</b> of {v['context']:,} tokens fit "
            f"({'memlib.max_batch' if n else s['reason']}); "
            + (f"vLLM at gpu_memory_utilization {v['utilization']:.2f} admits {s['vllm_concurrency']:.1f}.<br>"
               if s["vllm_concurrency"] is not None else
               f"vLLM has no {v['kv_cache']} KV cache (it is LMDeploy's), so no vLLM figure.<br>")
            + f"Per GPU: weights {gib(est.weight_bytes):.1f} GiB, KV cache {gib(per_chat):.2f} GiB per chat, "
            f"prefill chunk {s['prefill_tokens']:,} tokens, of {gib(s['capacity']):.1f} GiB.<br>"
            f"Decode limit ({full.bound}-bound, HBM {gb(full.bandwidth_bytes_per_s):,.0f} GB/s): one chat alone "
            f"&le; {one.tokens_per_s_per_sequence:,.0f} tokens/s; at {max(n, 1):,} chats &le; "
            f"{full.tokens_per_s_per_sequence:,.0f} tokens/s each, {full.tokens_per_s:,.0f} in total.")
        self.chart.value = breakdown_html(est, v["gpu"])

    def _ipython_display_(self):
        from IPython.display import display
        display(self.widget)
