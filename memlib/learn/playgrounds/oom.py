"""Notebook 11's playground: a data loader's sequence lengths replayed through the caching allocator model.

Pick a model, the lengths of successive batches (a bucketless loader: growing, shuffled, or longest first), the
micro-batch and whether PYTORCH_CUDA_ALLOC_CONF has expandable_segments:True; read each step's allocated and
reserved peaks (memlib.hardware.allocator.replay_training, a synthetic trace from memlib's estimates).

    from memlib.learn.playgrounds.oom import OOMPlayground, replay_summary
    OOMPlayground(model="llama-2-7b", lengths="512,1024,2048,4096")
    replay_summary("llama-2-7b", "512,1024,2048,4096")        # the same figures, no widgets
"""

from __future__ import annotations

from memlib.learn.playgrounds._panel import SummaryPanel

from memlib import estimate_training
from memlib.hardware.allocator import replay_training
from memlib.hardware.gpus import get_gpu, list_gpus
from memlib.hardware.fit import DEFAULT_CUDA_CONTEXT_BYTES, usable_bytes
from memlib.models import get_model, list_models

PATTERNS = {"growing (bucketless, sorted by arrival)": "512,1024,2048,4096",
            "shuffled lengths": "2048,512,4096,1024,3072,1536",
            "longest batch first": "4096,2048,1024,512"}


def parse_lengths(lengths) -> list[int]:
    """'512, 1024' or [512, 1024] -> [512, 1024]; each a whole number of tokens from 1 to 1,048,576."""
    if isinstance(lengths, str):
        parts = [p.strip() for p in lengths.split(",") if p.strip()]
        if not parts or not all(p.isdigit() for p in parts):
            raise ValueError(f"lengths are whole numbers separated by commas, e.g. '512,1024,2048', got {lengths!r}")
        lengths = [int(p) for p in parts]
    out = list(lengths)
    if not out or len(out) > 12 or not all(isinstance(n, int) and 1 <= n <= 2**20 for n in out):
        raise ValueError(f"give 1 to 12 sequence lengths between 1 and 1,048,576 tokens, got {lengths!r}")
    return out


def replay_summary(model, lengths, gpu: str = "a100-80gb", micro_batch: int = 1, finetune: str = "lora",
                   expandable: bool = False, recompute: str = "none") -> dict:
    """One replay_training run: a step per length, on `gpu`'s room (total less the CUDA context)."""
    lens = parse_lengths(lengths)
    m = get_model(model)
    ests = [estimate_training(m, seq_len=s, micro_batch=micro_batch, finetune=finetune, recompute=recompute)
            for s in lens]
    room = usable_bytes(get_gpu(gpu)) - DEFAULT_CUDA_CONTEXT_BYTES
    steps = replay_training(ests, "expandable_segments:True" if expandable else "", capacity_bytes=room)
    return {"model": m.name, "gpu": get_gpu(gpu).name, "expandable": expandable, "steps": steps,
            "estimated_peaks": [e.peak_bytes for e in ests], "room": room}


def describe(s: dict) -> str:
    rows = "".join(
        f"<tr><td>{r.step}</td><td>{r.seq_len:,}</td><td>{r.allocated_peak_bytes / 2**30:.2f}</td>"
        f"<td>{r.reserved_peak_bytes / 2**30:.2f}</td><td>{r.inactive_split_bytes / 2**30:.2f}</td>"
        f"<td>{'OOM' if r.oom else ''}</td></tr>" for r in s["steps"])
    conf = "expandable_segments:True" if s["expandable"] else "default segments"
    return (f"<b>{s['model']}</b> on {s['gpu']} ({s['room'] / 2**30:.1f} GiB for PyTorch), {conf}; "
            "the allocator model replaying memlib's estimates (a synthetic trace, not a recorded run)<br>"
            "<table><tr><th>step</th><th>tokens</th><th>allocated peak GiB</th><th>reserved peak GiB</th>"
            f"<th>stranded GiB</th><th></th></tr>{rows}</table>")


class OOMPlayground(SummaryPanel):
    """`OOMPlayground(model="llama-2-7b", lengths="512,1024,2048,4096")`; display it in a cell."""

    summarize = staticmethod(replay_summary)
    render = staticmethod(describe)

    def __init__(self, model: str = "llama-2-7b", lengths: str = "512,1024,2048,4096", gpu: str = "a100-80gb",
                 micro_batch: int = 1, finetune: str = "lora", expandable: bool = False, recompute: str = "none"):
        import ipywidgets as w
        style = {"description_width": "110px"}
        lay = w.Layout(width="340px")
        controls = {
            "model": w.Dropdown(options=list_models(), value=get_model(model).name, description="model", style=style,
                                layout=lay),
            "lengths": w.Combobox(value=lengths, options=list(PATTERNS.values()), description="batch lengths",
                                  style=style, layout=lay),
            "gpu": w.Dropdown(options=[g.name for g in list_gpus()], value=get_gpu(gpu).name, description="GPU",
                              style=style, layout=lay),
            "micro_batch": w.IntSlider(value=micro_batch, min=1, max=16, description="micro-batch", style=style,
                                       layout=lay),
            "finetune": w.Dropdown(options=["full", "lora", "qlora"], value=finetune, description="method",
                                   style=style, layout=lay),
            "recompute": w.Dropdown(options=["none", "selective", "full"], value=recompute, description="recompute",
                                    style=style, layout=lay),
            "expandable": w.Checkbox(value=expandable, description="expandable_segments:True", style=style,
                                     layout=lay),
        }
        self._start(controls)
