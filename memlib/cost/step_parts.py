"""Where the time of one training step goes: a StepTime split into named seconds.

step_parts(t) returns the terms memlib.step_time adds up, with the pipeline bubble taken
out of the compute so that a chart can show it on its own. The parts sum to t.step_s.
"""

from __future__ import annotations

from memlib.cost.timing import StepTime

PARTS = ("compute", "pipeline bubble", "DP/ZeRO traffic (exposed)", "TP all-reduces", "PP sends",
         "offload over PCIe", "NVMe traffic", "CPU Adam")


def step_parts(t: StepTime) -> dict[str, float]:
    """Seconds of one step by component (keys: PARTS), summing to `t.step_s`."""
    if not isinstance(t, StepTime):
        raise ValueError(f"step_parts needs a memlib.StepTime (from memlib.step_time), got {type(t).__name__}")
    # t.compute_s is the work divided by (1 - bubble), so the idle share of it is compute_s x bubble
    # (bubble fraction (p - 1) / (m + p - 1): Narayanan et al. 2021, Sec. 2.2).
    bubble = t.compute_s * t.bubble_fraction
    return {
        "compute": t.compute_s - bubble,
        "pipeline bubble": bubble,
        "DP/ZeRO traffic (exposed)": t.dp_exposed_s,  # ring all-reduce beyond what the backward hides (Patarasuk & Yuan 2009)
        "TP all-reduces": t.tp_comm_s,  # 4 per layer per micro-batch (Shoeybi et al. 2019, Sec. 3)
        "PP sends": t.pp_comm_s,  # activations forward, gradients back at each stage boundary
        "offload over PCIe": t.offload_s,  # 16-bit gradients down, parameters up (Ren et al. 2021, ZeRO-Offload)
        "NVMe traffic": t.nvme_s,  # optimizer states streamed (Rajbhandari et al. 2021, ZeRO-Infinity)
        "CPU Adam": t.cpu_optimizer_s,  # DeepSpeed CPU-Adam (Ren et al. 2021, Table 2)
    }
