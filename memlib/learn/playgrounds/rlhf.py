"""Notebook 08's playground: how much memory does an RLHF step take, role by role and phase by phase?

Pick the policy model, the algorithm (PPO, GRPO, DPO), the GPU and how many, whether idle roles sleep
(hybrid engine), the rollout engine and the share of each card it reserves (gpu_memory_utilization), the
prompts per engine and the lengths; read each phase's bytes per GPU, the verdict, and the rollout's time side:
sequences decoded at once and waves (memlib.training.rlhf.estimate_rlhf, memlib.fits). Nothing is searched,
so it redraws as a slider moves.

    from memlib.learn.playgrounds.rlhf import RLHFPlayground, rlhf_summary
    RLHFPlayground(model="llama-2-7b", algorithm="ppo", gpu="a100-80gb", gpus=8)
    rlhf_summary("llama-2-7b", "ppo", "a100-80gb", 8)      # the same figures, no widgets
"""

from __future__ import annotations

from memlib.learn.playgrounds._panel import SummaryPanel

from memlib.hardware.fit import fits
from memlib.hardware.gpus import get_gpu, list_gpus
from memlib.models import get_model, list_models
from memlib.training.rlhf import ALGORITHMS, COLOCATED_ENGINE_FRACTION, ROLLOUT_ENGINES, estimate_rlhf
from memlib.units import gib


def rlhf_summary(model, algorithm: str, gpu, gpus: int, offload_idle: bool = True, rollout_batch: int = 128,
                 group_size: int | None = None, prompt_len: int = 1024, response_len: int = 1024,
                 rollout_tp: int = 1, rollout_engine: str = "vllm",
                 gpu_memory_utilization: float = COLOCATED_ENGINE_FRACTION) -> dict:
    """The playground's figures for one setting: the estimate, each phase in GiB, the verdict on `gpu`.
    The engine's share is ignored for DPO (no rollout) and for transformers' generate ("hf": sized by the batch)."""
    engine_kw = {} if algorithm == "dpo" else {"rollout_engine": rollout_engine}
    if algorithm != "dpo" and rollout_engine != "hf":
        engine_kw["gpu_memory_utilization"] = gpu_memory_utilization
    e = estimate_rlhf(model, algorithm, gpus=gpus, offload_idle=offload_idle, rollout_batch=rollout_batch,
                      group_size=group_size if algorithm != "dpo" else None, prompt_len=prompt_len,
                      response_len=response_len, rollout_tp=rollout_tp, gpu=gpu, **engine_kw)
    return {"estimate": e, "phases_gib": {p: gib(v) for p, v in e.phases.items()}, "verdict": fits(e, gpu),
            "gpu": get_gpu(gpu).name}


def describe(s: dict) -> str:
    """One short HTML block of rlhf_summary's figures."""
    e, v = s["estimate"], s["verdict"]
    phases = " &middot; ".join(f"{p.replace('_', ' ')} <b>{x:,.1f} GiB</b>" for p, x in s["phases_gib"].items())
    word = "fits" if v.fits else "does not fit"
    time = ""
    if e.waves is not None:
        engine = (f"{e.pool.engine} at {e.pool.fraction:g} of the card" if e.pool is not None
                  else "transformers' generate, the whole batch at once")
        time = (f"<br>rollout ({engine}): <b>{e.sequences_at_once}</b> sequences at once per engine, "
                f"<b>{e.waves}</b> wave(s) per step")
    return (f"<b>{e.algorithm.upper()}</b>, {e.gpus} x {s['gpu']}, "
            f"{'idle roles asleep' if e.offload_idle else 'every role resident'}:<br>{phases}<br>"
            f"peak <b>{gib(e.peak_bytes):,.1f} GiB</b> per GPU during {e.peak_at.replace('_', ' ')}: "
            f"<b>{word}</b> ({v.margin_gib:+,.1f} GiB){time}")


class RLHFPlayground(SummaryPanel):
    """`RLHFPlayground(model="llama-2-7b", algorithm="ppo", gpu="a100-80gb", gpus=8)`; display it in a cell."""

    summarize = staticmethod(rlhf_summary)
    render = staticmethod(describe)

    def __init__(self, model: str = "llama-2-7b", algorithm: str = "ppo", gpu: str = "a100-80gb", gpus: int = 8,
                 offload_idle: bool = True, rollout_batch: int = 128, group_size: int = 8, response_len: int = 1024,
                 rollout_engine: str = "vllm", gpu_memory_utilization: float = COLOCATED_ENGINE_FRACTION):
        import ipywidgets as w
        style = {"description_width": "120px"}
        lay = w.Layout(width="360px")
        controls = {
            "model": w.Dropdown(options=list_models(), value=get_model(model).name, description="policy model",
                                style=style, layout=lay),
            "algorithm": w.Dropdown(options=list(ALGORITHMS), value=algorithm, description="algorithm", style=style,
                                    layout=lay),
            "gpu": w.Dropdown(options=[g.name for g in list_gpus()], value=get_gpu(gpu).name, description="GPU",
                              style=style, layout=lay),
            "gpus": w.SelectionSlider(options=[1, 2, 4, 8, 16, 32, 64, 128], value=gpus, description="GPUs",
                                      style=style, layout=lay),
            "offload_idle": w.Checkbox(value=offload_idle, description="idle roles sleep (hybrid engine)",
                                       style=style, layout=lay),
            "rollout_engine": w.Dropdown(options=list(ROLLOUT_ENGINES), value=rollout_engine,
                                         description="rollout engine", style=style, layout=lay),
            "gpu_memory_utilization": w.SelectionSlider(options=[0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9],
                                                        value=gpu_memory_utilization, description="engine share",
                                                        style=style, layout=lay),
            "rollout_batch": w.SelectionSlider(options=[1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
                                               value=rollout_batch, description="prompts per engine", style=style,
                                               layout=lay),
            "group_size": w.SelectionSlider(options=[2, 4, 8, 16, 32, 64], value=group_size,
                                            description="GRPO group G", style=style, layout=lay),
            "response_len": w.SelectionSlider(options=[256, 512, 1024, 2048, 4096, 8192, 16384, 32768],
                                              value=response_len, description="response tokens", style=style,
                                              layout=lay),
        }
        self._start(controls)

    def values(self) -> dict:
        v = super().values()
        if v["algorithm"] != "grpo":
            v["group_size"] = None  # PPO: one sample per prompt; DPO: no rollout
        return v
