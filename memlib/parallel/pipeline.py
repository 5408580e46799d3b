"""Pipeline parallelism: the bubble of each schedule, in closed form.

A schedule of p stages and m micro-batches keeps every stage busy for m forward and m backward passes; the
rest of the step is the bubble (idle time). With uniform stages (each micro-batch takes t_f forward and t_b
backward on every stage, communication free):

* GPipe and 1F1B: the bubble is (p - 1)(t_f + t_b) per stage, a fraction (p - 1) / (m + p - 1) of the step
  (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM",
  Sec. 2.2.1). 1F1B keeps at most p micro-batches of activations in flight instead of m (Sec. 2.2.1).
* Interleaved 1F1B with v model chunks per GPU: the bubble time shrinks v-fold, (p - 1)(t_f + t_b) / v, a
  fraction (p - 1) / (v m + p - 1) of the step (Sec. 2.2.2).
* Zero bubble ZB-H1: the backward split into B (input gradient, t_b) and W (weight gradient, t_w); the W passes
  fill the idle time, leaving (p - 1)(t_f + t_b - t_w) with 1F1B's peak memory (Qi et al. 2024, "Zero Bubble
  Pipeline Parallelism", ICLR, Sec. 3.1). DeepSeek-V3's report (arXiv:2412.19437, Table 2) writes the same
  with B the whole backward: (PP - 1)(F + B - 2W).
* DualPipe: (p/2 - 1)(t_fb + t_b - 3 t_w), with t_fb a forward and a backward chunk overlapped, twice the
  parameters (two copies of the model chunks) and p + 1 micro-batches of activations (DeepSeek-V3, Table 2).
"""

from __future__ import annotations

from fractions import Fraction

from memlib._checks import positive_float, positive_int


def _pm(pp, micro_batches) -> tuple[int, int]:
    return positive_int("pp", pp), positive_int("micro_batches", micro_batches)


def bubble_fraction(pp: int, micro_batches: int, vpp: int = 1) -> Fraction:
    """Idle share of a pipeline step under GPipe/1F1B, (p - 1) / (m + p - 1), or under interleaved 1F1B with vpp
    model chunks per GPU, (p - 1) / (v m + p - 1) (Narayanan et al. 2021, Sec. 2.2.1-2.2.2). Exact, a Fraction."""
    p, m = _pm(pp, micro_batches)
    v = positive_int("vpp", vpp)
    return Fraction(p - 1, v * m + p - 1)


def bubble_time(pp: int, t_f: float, t_b: float, vpp: int = 1) -> float:
    """Idle time per stage of GPipe/1F1B, (p - 1)(t_f + t_b), divided by vpp for interleaved 1F1B (Narayanan et
    al. 2021, Sec. 2.2); t_f and t_b are one micro-batch's forward and backward time on one stage (all chunks)."""
    p = positive_int("pp", pp)
    v = positive_int("vpp", vpp)
    return (p - 1) * (positive_float("t_f", t_f) + positive_float("t_b", t_b)) / v


def zb_h1_bubble_time(pp: int, t_f: float, t_b: float, t_w: float) -> float:
    """Idle time per stage of ZB-H1, (p - 1)(t_f + t_b - t_w), with t_b the input-gradient pass only and t_w the
    weight-gradient pass (Qi et al. 2024, Zero Bubble Pipeline Parallelism, Sec. 3.1; DeepSeek-V3 Table 2's
    (PP - 1)(F + B - 2W) with B = t_b + t_w). Clipped at 0 (W cannot fill more than the idle time). It assumes
    m >= p micro-batches and W passes that fit the gaps they fill (the paper's t_f = t_b = t_w case)."""
    p = positive_int("pp", pp)
    return (p - 1) * max(0.0, positive_float("t_f", t_f) + positive_float("t_b", t_b) - positive_float("t_w", t_w))


def dualpipe_bubble_time(pp: int, t_fb: float, t_b: float, t_w: float) -> float:
    """Idle time per device of DualPipe, (p/2 - 1)(t_fb + t_b - 3 t_w) (DeepSeek-V3 report, arXiv:2412.19437,
    Table 2): t_fb a forward and a backward chunk run overlapped, t_b a full backward chunk, t_w its weight part.
    pp must be even (DualPipe feeds micro-batches from both ends)."""
    p = positive_int("pp", pp)
    if p % 2:
        raise ValueError(f"DualPipe needs an even number of pipeline ranks, got pp={p}")
    return (p / 2 - 1) * max(0.0, positive_float("t_fb", t_fb) + positive_float("t_b", t_b)
                             - 3 * positive_float("t_w", t_w))


# Peak micro-batches of activations on the busiest stage, and copies of the parameters, per schedule
# (DeepSeek-V3 report Table 2 for 1F1B, ZB1P and DualPipe; Narayanan et al. 2021 Sec. 2.2 for GPipe and
# interleaved, whose chunk count memlib.training.layout.interleaved_chunks_in_flight gives exactly).
def peak_micro_batches_in_flight(schedule: str, pp: int, micro_batches: int) -> int:
    """Micro-batches whose activations the first (busiest) stage holds at its peak: GPipe m; 1F1B and ZB-H1
    min(p, m); DualPipe p + 1 (DeepSeek-V3 Table 2). Interleaved 1F1B counts chunks:
    memlib.training.layout.interleaved_chunks_in_flight."""
    p, m = _pm(pp, micro_batches)
    table = {"gpipe": m, "1f1b": min(p, m), "zb-h1": min(p, m), "dualpipe": p + 1}
    if not isinstance(schedule, str) or schedule not in table:
        raise ValueError(f"schedule must be one of {sorted(table)}, got {schedule!r}")
    return table[schedule]


__all__ = ["bubble_fraction", "bubble_time", "zb_h1_bubble_time", "dualpipe_bubble_time",
           "peak_micro_batches_in_flight"]
