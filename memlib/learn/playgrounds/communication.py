"""Notebook 10's playground: when does a parallelism become communication-bound?

Pick a model, a GPU, the link the collective crosses (the GPU's own NVLink/PCIe within a node, or a network
between nodes), the parallelism and its degree, and the tokens each GPU computes per step; read the
communication and compute times and the verdict (memlib.cost.collectives.comm_roofline).

    from memlib.learn.playgrounds.communication import CommPlayground, roofline_summary
    CommPlayground(model="llama-3-8b", gpu="h100-80gb", link="IB NDR", parallelism="dp", degree=64)
    roofline_summary("llama-3-8b", "h100-80gb", "IB NDR", "dp", 64, tokens=4096)   # the same figures, no widgets
"""

from __future__ import annotations

from memlib.cost.collectives import NETWORK_LINKS, PARALLELISMS, comm_roofline, link_bytes_per_s
from memlib.hardware.gpus import get_gpu, list_gpus
from memlib.learn.playgrounds._panel import SummaryPanel
from memlib.models import get_model, list_models

OWN = "the GPU's own interconnect"


def roofline_summary(model, gpu, link: str, parallelism: str, degree: int, tokens: float = 4096,
                     mfu: float = 1.0, seq_len: int = 4096) -> dict:
    """comm_roofline's figures for one setting, and the comm/compute ratio at `tokens` per GPU (per step for dp,
    per micro-batch for fsdp)."""
    g = get_gpu(gpu)
    beta = float(g.interconnect_bytes_per_s_per_direction) if link == OWN else link_bytes_per_s(link)
    r = comm_roofline(model, g, parallelism, degree, seq_len=seq_len, bytes_per_s=beta, mfu=mfu)
    ratio = r.ratio(tokens)
    return {"model": get_model(model).name, "gpu": g.name, "link": g.interconnect if link == OWN else link,
            "bytes_per_s": beta, "parallelism": parallelism, "degree": degree, "tokens": tokens, "ratio": ratio,
            "critical_tokens": r.critical_tokens, "bound": "communication-bound" if ratio > 1 else "compute-bound",
            "compute_s": r.flops_per_token * tokens / r.flops_per_s,
            "comm_s": (r.comm_bytes_per_step + r.comm_bytes_per_token * tokens) / beta}


def describe(s: dict) -> str:
    crit = ("no batch size changes it (activations travel with the tokens)" if s["critical_tokens"] is None else
            f"communication hides above <b>{s['critical_tokens']:,.0f} tokens</b> per GPU")
    return (f"<b>{s['model']}</b>, {s['parallelism']} over {s['degree']} x {s['gpu']} on {s['link']} "
            f"({s['bytes_per_s'] / 1e9:,.1f} GB/s each way), {s['tokens']:,.0f} tokens per GPU:<br>"
            f"compute {s['compute_s'] * 1e3:,.2f} ms, communication {s['comm_s'] * 1e3:,.2f} ms: "
            f"<b>{s['bound']}</b> (ratio {s['ratio']:.2f})<br>{crit}")


class CommPlayground(SummaryPanel):
    """`CommPlayground(model="llama-3-8b", gpu="h100-80gb", link="IB NDR", parallelism="dp", degree=64)`."""

    summarize = staticmethod(roofline_summary)
    render = staticmethod(describe)

    def __init__(self, model: str = "llama-3-8b", gpu: str = "h100-80gb", link: str = OWN, parallelism: str = "dp",
                 degree: int = 8, tokens: float = 4096, mfu: float = 1.0):
        import ipywidgets as w
        style = {"description_width": "120px"}
        lay = w.Layout(width="360px")
        self._start({
            "model": w.Dropdown(options=list_models(), value=get_model(model).name, description="model",
                                style=style, layout=lay),
            "gpu": w.Dropdown(options=[g.name for g in list_gpus() if g.bf16_tflops], value=get_gpu(gpu).name,
                              description="GPU", style=style, layout=lay),
            "link": w.Dropdown(options=[OWN, *NETWORK_LINKS], value=link, description="link", style=style,
                               layout=lay),
            "parallelism": w.Dropdown(options=list(PARALLELISMS), value=parallelism, description="parallelism",
                                      style=style, layout=lay),
            "degree": w.SelectionSlider(options=[2 ** i for i in range(1, 11)], value=degree, description="GPUs",
                                        style=style, layout=lay),
            "tokens": w.FloatLogSlider(value=tokens, base=2, min=7, max=20, step=1, description="tokens per GPU",
                                       readout_format=",.0f", style=style, layout=lay),
            "mfu": w.FloatSlider(value=mfu, min=0.1, max=1.0, step=0.05, description="MFU", readout_format=".0%",
                                 style=style, layout=lay),
        })
