"""Charts for the notebooks: what is alive at the peak against a GPU's capacity, memory
along a sweep with the point where it stops fitting. matplotlib is imported on use, so
memlib itself needs only numpy. Sizes are plotted in GiB (what torch and nvidia-smi show)."""

from __future__ import annotations

from memlib.hardware.fit import required_bytes, usable_bytes
from memlib.hardware.gpus import get_gpu

# One colour per breakdown key, the same in every chart of every notebook.
COLORS = {
    "parameters": "#4C72B0", "weights": "#4C72B0", "gradients": "#DD8452", "optimizer": "#55A868",
    "activations": "#C44E52", "autocast_copies": "#8172B3", "logits_and_loss": "#937860",
    "previous_output": "#DA8BC3", "temporaries": "#8C8C8C", "gathered_parameters": "#CCB974",
    "kv_cache": "#64B5CD", "dequant_workspace": "#8C8C8C",
}
GiB = 2**30


def _axes(ax, figsize=(7, 3.6)):
    if ax is None:
        import matplotlib.pyplot as plt
        _, ax = plt.subplots(figsize=figsize)
    return ax


def breakdown_bars(estimates: dict, gpu=None, ax=None, title: str | None = None):
    """Stacked bars, one per labelled estimate, of what is alive at its peak (GiB); with
    `gpu`, a dashed line at the capacity torch reports for it."""
    ax = _axes(ax)
    labels = list(estimates)
    keys = [k for k in COLORS if any(e.breakdown.get(k, 0) for e in estimates.values())]
    bottoms = [0.0] * len(labels)
    for k in keys:
        vals = [estimates[lab].breakdown.get(k, 0) / GiB for lab in labels]
        ax.bar(labels, vals, bottom=bottoms, color=COLORS[k], label=k.replace("_", " "))
        bottoms = [b + v for b, v in zip(bottoms, vals)]
    for i, lab in enumerate(labels):
        ax.text(i, bottoms[i], f"{estimates[lab].peak_bytes / GiB:.1f}", ha="center", va="bottom", fontsize=8)
    if gpu is not None:
        g = get_gpu(gpu)
        ax.axhline(usable_bytes(g) / GiB, color="k", ls="--", lw=1)
        ax.text(len(labels) - 0.5, usable_bytes(g) / GiB, f" {g.name} ({usable_bytes(g) / GiB:.1f} GiB)",
                va="bottom", ha="right", fontsize=8)
    ax.set_ylabel("GiB per GPU at the peak")
    if title:
        ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.tick_params(axis="x", labelsize=8)
    return ax


def crossover(xs, peaks, capacity_bytes):
    """The first x whose peak no longer fits: peak + CUDA context + allocator headroom above
    the capacity, as fits() judges it (None if all fit)."""
    for x, p in zip(xs, peaks):
        if required_bytes(p) > capacity_bytes:
            return x
    return None


def sweep(xs, series: dict, gpu=None, xlabel: str = "", ax=None, logx: bool = False, title: str | None = None):
    """Peak GiB against a swept quantity, one line per labelled series of peak bytes; with
    `gpu`, its capacity line and, per series, a marker where it stops fitting (fits()'s rule:
    the marker can sit left of where the line crosses the capacity)."""
    ax = _axes(ax)
    cap = usable_bytes(get_gpu(gpu)) if gpu is not None else None
    for label, peaks in series.items():
        (line,) = ax.plot(xs, [p / GiB for p in peaks], marker="o", ms=3, label=label)
        if cap is not None:
            x = crossover(xs, peaks, cap)
            if x is not None:
                ax.axvline(x, color=line.get_color(), ls=":", lw=1)
    if cap is not None:
        ax.axhline(cap / GiB, color="k", ls="--", lw=1, label=f"{get_gpu(gpu).name} ({cap / GiB:.1f} GiB)")
    if logx:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("peak GiB per GPU")
    if title:
        ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return ax


def breakdown_html(estimate, gpu, width_px: int = 460) -> str:
    """The breakdown at the peak as one horizontal stacked bar in HTML, with the GPU's
    capacity marked: instant to redraw, so the playground can follow a slider."""
    g = get_gpu(gpu)
    cap = usable_bytes(g)
    parts = [(k, v) for k, v in estimate.breakdown.items() if v]
    scale = max(estimate.peak_bytes, cap) or 1
    segs = "".join(
        f"<div title='{k.replace('_', ' ')}: {v / GiB:.2f} GiB' style='display:inline-block;height:22px;"
        f"width:{v / scale * width_px:.1f}px;background:{COLORS.get(k, '#999')}'></div>" for k, v in parts)
    marker = (f"<div style='position:absolute;left:{cap / scale * width_px:.1f}px;top:-4px;height:30px;"
              f"border-left:2px dashed #000'></div>")
    legend = " ".join(f"<span style='color:{COLORS.get(k, '#999')}'>&#9632;</span> {k.replace('_', ' ')} "
                      f"{v / GiB:.2f}" for k, v in parts)
    return (f"<div style='position:relative;width:{width_px}px;white-space:nowrap;margin:8px 0'>{segs}{marker}</div>"
            f"<div style='font-size:11px;width:{width_px}px'>{legend} GiB &nbsp;|&nbsp; dashed: {g.name} "
            f"{cap / GiB:.1f} GiB</div>")


def count_sweep(xs, series: dict, xlabel: str = "", ylabel: str = "", ax=None, logx: bool = False,
                logy: bool = False, title: str | None = None, annotate_last: bool = True):
    """A count (concurrent sequences, tokens/s, ...) against a swept quantity, one line per labelled
    series; with `annotate_last`, each line's last value written at its end. For capacities that are
    not bytes (sweep() plots peak GiB against a GPU's capacity)."""
    ax = _axes(ax)
    for label, ys in series.items():
        (line,) = ax.plot(xs, ys, marker="o", ms=3, label=label)
        if annotate_last and len(ys):
            ax.annotate(f"{ys[-1]:,.0f}", (xs[-1], ys[-1]), textcoords="offset points", xytext=(4, 0),
                        fontsize=7, color=line.get_color(), va="center")
    if logx:
        ax.set_xscale("log", base=2)
# --- time and cost (notebook 07): values computed elsewhere, drawn as they are ------------------------
TIME_COLORS = {"compute": "#4C72B0", "bubble": "#8172B3", "exposed communication": "#C44E52",
               "tensor parallel": "#DD8452", "offload": "#8C8C8C"}


def lines(xs, series: dict, xlabel: str = "", ylabel: str = "", ax=None, marks: dict | None = None,
          logx: bool = False, logy: bool = False, title: str | None = None):
    """One line per labelled series of y values over `xs` (e.g. GPU-hours against MFU); `marks`
    draws a dotted vertical line at each labelled x (e.g. the MFU a paper reports)."""
    ax = _axes(ax)
    for label, ys in series.items():
        ax.plot(list(xs), list(ys), marker="o", ms=3, label=label)
    for label, x in (marks or {}).items():
        ax.axvline(x, color="k", ls=":", lw=1)
        ax.text(x, 0.98, f" {label}", transform=ax.get_xaxis_transform(), rotation=90, va="top", ha="right",
                fontsize=7)
    if logx:
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(xs), [f"{x:,}" for x in xs])  # the swept values, not powers of two
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return ax


def stacked_bars(labels, parts: dict, ylabel: str = "", xlabel: str = "", ax=None, title: str | None = None,
                 totals_fmt: str = "{:.1f}"):
    """Stacked bars, one per label, of named parts (e.g. days of compute and of exposed communication
    per GPU count); each bar's total printed on top with `totals_fmt`."""
    ax = _axes(ax)
    labels = [str(x) for x in labels]
    bottoms = [0.0] * len(labels)
    for name, vals in parts.items():
        vals = [float(v) for v in vals]
        if not any(vals):
            continue
        ax.bar(labels, vals, bottom=bottoms, color=TIME_COLORS.get(name), label=name)
        bottoms = [b + v for b, v in zip(bottoms, vals)]
    for i, total in enumerate(bottoms):
        ax.text(i, total, totals_fmt.format(total), ha="center", va="bottom", fontsize=8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, axis="y")
    return ax
