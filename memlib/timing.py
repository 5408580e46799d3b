"""Time, not only memory: FLOPs, communication and offload traffic of one training step.

step_time(estimate, gpu) reads the setup of a training estimate and returns a StepTime
with every term named. The model is deliberately simple and stated:

* compute: FLOPs per token (PaLM's 6N + 12·L·H·Q·T, Chowdhery et al. 2022 App. B; full
  recompute adds a forward: 8N + 16·L·H·Q·T; LoRA skips weight gradients: 4N + 12·L·H·Q·T)
  at a model-FLOPs utilisation `mfu` of the GPU's dense 16-bit tensor peak;
* pipeline bubble (p - 1) / (m + p - 1) of the compute (Narayanan et al. 2021, Sec. 2.2);
* data-parallel gradient traffic: ring all-reduce moves 2(n-1)/n of the gradient bytes per
  GPU; ZeRO-1/2 the same (reduce-scatter + all-gather); ZeRO-3 / FULL_SHARD 1.5x that
  (parameters are all-gathered in forward and again in backward; Rajbhandari et al. 2020
  Sec. 7). It overlaps with the backward (2/3 of compute); only the excess is exposed;
* tensor parallelism: 4 all-reduces of b·s·h activations per layer per micro-batch
  (2 forward, 2 backward; Shoeybi et al. 2019 Sec. 3), 6 with full recompute, not overlapped;
* pipeline: each micro-batch sends its b·s·h activations forward and gradients back;
* offload: 16-bit gradients down every micro-batch and parameters up once per step over the
  host link (ZeRO-Offload, Ren et al. 2021); with ZeRO-Infinity the parameters also come up
  for every micro-batch's forward and backward; NVMe traffic
  at `nvme_bytes_per_s`; the CPU Adam step at `cpu_adam_params_per_s`.
Links: the catalog's GPU interconnect within a node of `gpus_per_node`, `internode_bytes_per_s`
beyond it; the host link per GPU (gpus.HOST_LINK).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from memlib._checks import choice, fraction, positive_float, positive_int, show
from memlib.gpus import GPU, get_gpu
from memlib.models import Model, get_model
from memlib.training import FINETUNES, RECOMPUTES, Estimate

DEFAULT_MFU = 0.4
INTERNODE_BYTES_PER_S = 25 * 10**9  # one 200 Gb/s InfiniBand HDR port per GPU, one direction
NVME_BYTES_PER_S = 3 * 10**9  # one PCIe 4.0 NVMe drive per GPU, sustained
# DeepSpeed CPU-Adam: Ren et al. 2021 (ZeRO-Offload) Table 2 reports ~0.2 s per billion
# parameters on a two-socket server; 5e9 parameters/s per process is that order.
CPU_ADAM_PARAMS_PER_S = 5 * 10**9
# Upper bounds that only catch typos (a rate in bits, a TFLOP/s figure in FLOP/s): a B200 is
# ~2.3e3 dense bf16 TFLOP/s and NVLink 5 moves 9e11 B/s; nothing here is within 1000x of them.
MAX_PEAK_TFLOPS = 1e6
MAX_BYTES_PER_S = 1e15
MAX_PARAMS_PER_S = 1e15


@dataclass(frozen=True)
class StepTime:
    flops_per_token: float
    tokens_per_step: int  # across all GPUs
    compute_s: float  # per GPU, at the given MFU, including the pipeline bubble
    bubble_fraction: float
    dp_comm_bytes: int  # per GPU per step
    dp_comm_s: float
    dp_exposed_s: float  # what the backward could not hide
    tp_comm_bytes: int
    tp_comm_s: float
    pp_comm_bytes: int
    pp_comm_s: float
    offload_bytes: int  # host link, per GPU per step
    offload_s: float
    nvme_s: float
    cpu_optimizer_s: float
    gpus: int

    @property
    def step_s(self) -> float:
        return (self.compute_s + self.dp_exposed_s + self.tp_comm_s + self.pp_comm_s + self.offload_s
                + self.nvme_s + self.cpu_optimizer_s)

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return self.tokens_per_step / self.step_s / self.gpus

    def as_dict(self) -> dict:
        return {**{k: getattr(self, k) for k in self.__dataclass_fields__}, "step_s": self.step_s,
                "tokens_per_s_per_gpu": self.tokens_per_s_per_gpu}


def _training_estimate(estimate) -> Estimate:
    """step_time times a training step: anything else is named in the error, with what to pass."""
    if isinstance(estimate, Estimate):
        return estimate
    kind = type(estimate).__name__
    if kind == "InferenceEstimate":
        raise ValueError("step_time times one training step; an InferenceEstimate (serving) has none: "
                         "pass memlib.estimate_training(...)")
    if kind == "Plan":  # memlib.plan.Plan: its estimate, and the time it was ranked by
        raise ValueError("step_time needs a training estimate, got a Plan: pass plan.estimate (plan.time holds "
                         "the time it was ranked by)")
    raise ValueError(f"step_time needs a training estimate from memlib.estimate_training(...), got "
                     f"{show(estimate)} ({kind})")


def flops_per_token(model, seq_len: int, recompute: str = "none", finetune: str = "full") -> float:
    """Training FLOPs per token: 6N + 12·L·H·Q·T (Chowdhery et al. 2022, PaLM, App. B), with a
    second forward under full recompute (+2N + 4·L·H·Q·T) or the attention scores recomputed
    under selective recompute (+4·L·H·Q·T), and no weight gradients (-2N) for a frozen base."""
    if not isinstance(model, Model):
        model = get_model(model) if isinstance(model, str) else None
        if model is None:
            raise ValueError("flops_per_token needs a catalog model name or a memlib.Model")
    seq_len = positive_int("seq_len", seq_len)
    choice("recompute", recompute, RECOMPUTES)
    choice("finetune", finetune, FINETUNES)
    return palm_flops_per_token(model.num_params, model.num_layers, model.num_heads, model.head_dim, seq_len,
                                recompute, finetune)


def palm_flops_per_token(num_params: int, num_layers: int, num_heads: int, head_dim: int, seq_len: int,
                         recompute: str = "none", finetune: str = "full") -> float:
    """flops_per_token from the shape numbers alone (Chowdhery et al. 2022, PaLM, App. B):
    6N + 12·L·H·Q·T, +2N + 4·L·H·Q·T for a second forward (full recompute), +4·L·H·Q·T for
    the recomputed attention scores (selective), 4N instead of 6N for a frozen base."""
    positive_int("num_params", num_params)
    positive_int("seq_len", seq_len)
    for name, v in (("num_layers", num_layers), ("num_heads", num_heads), ("head_dim", head_dim)):
        positive_int(name, v, allow_zero=True)  # 0: the attention term left out
    choice("recompute", recompute, RECOMPUTES)
    choice("finetune", finetune, FINETUNES)
    n = num_params
    attn = num_layers * num_heads * head_dim * seq_len
    dense = 6 * n if finetune == "full" else 4 * n
    f = dense + 12 * attn
    if recompute == "full":
        f += 2 * n + 4 * attn
    elif recompute == "selective":
        f += 4 * attn
    return float(f)


def _ring(nbytes: float, n: int) -> float:
    """Bytes each GPU sends in a ring all-reduce of `nbytes` over n GPUs (Patarasuk & Yuan 2009)."""
    return 2 * (n - 1) / n * nbytes if n > 1 else 0.0


def step_time(estimate, gpu, mfu: float = DEFAULT_MFU, gpus_per_node: int = 8,
              internode_bytes_per_s: float = INTERNODE_BYTES_PER_S, nvme_bytes_per_s: float = NVME_BYTES_PER_S,
              cpu_adam_params_per_s: float = CPU_ADAM_PARAMS_PER_S, peak_tflops: float | None = None) -> StepTime:
    """Time of one optimizer step for a training estimate on `gpu`, and tokens/s per GPU."""
    estimate = _training_estimate(estimate)
    gpu: GPU = get_gpu(gpu)
    mfu = fraction("mfu", mfu, what="a fraction of peak (model FLOPs utilisation)")
    gpus_per_node = positive_int("gpus_per_node", gpus_per_node)
    internode_bytes_per_s = positive_float("internode_bytes_per_s", internode_bytes_per_s, maximum=MAX_BYTES_PER_S,
                                           unit=" bytes/s")
    nvme_bytes_per_s = positive_float("nvme_bytes_per_s", nvme_bytes_per_s, maximum=MAX_BYTES_PER_S, unit=" bytes/s")
    cpu_adam_params_per_s = positive_float("cpu_adam_params_per_s", cpu_adam_params_per_s,
                                           maximum=MAX_PARAMS_PER_S, unit=" parameters/s")
    s = estimate.setup
    m = s.model
    if peak_tflops is None:
        if s.precision == "fp32":
            raise ValueError(f"the catalog has no fp32 throughput for {gpu.name}; pass peak_tflops=")
        peak_tflops = gpu.bf16_tflops if s.precision.startswith("bf16") else gpu.fp16_tflops
        if peak_tflops is None:
            raise ValueError(f"{gpu.name} has no bf16 tensor cores; use precision 'fp16-mixed' or pass peak_tflops=")
    peak = positive_float("peak_tflops", peak_tflops, maximum=MAX_PEAK_TFLOPS, unit=" TFLOP/s") * 1e12
    n_gpus = s.dp * s.tp * s.pp
    tokens = s.seq_len * s.micro_batch * s.grad_accum * s.dp
    fpt = flops_per_token(m, s.seq_len, s.recompute, s.finetune)
    bubble = (s.pp - 1) / (s.grad_accum + s.pp - 1)
    compute = fpt * tokens / n_gpus / (peak * mfu) / (1 - bubble)

    def link(group: int, stride: int) -> float:
        """Bandwidth of a group of `group` GPUs spaced `stride` apart: in-node or not."""
        return gpu.interconnect_bytes_per_s_per_direction if group * stride <= gpus_per_node else internode_bytes_per_s

    # data parallel: gradients of this GPU's share (the tp x pp slice), in the gradient dtype
    trainable = estimate.counts["trainable"]
    grad_b = 2 if s.sharding == "deepspeed" or s.precision in ("bf16", "fp16") else 4
    dp_bytes = _ring(trainable * grad_b, s.dp)
    if s.sharding != "none" and s.zero_stage == 3:
        dp_bytes *= 1.5
    dp_s = dp_bytes / link(s.dp, s.tp * s.pp) if s.dp > 1 else 0.0
    dp_exposed = max(0.0, dp_s - 2 / 3 * compute)
    # tensor parallel: activations all-reduced per layer
    act_bytes = s.micro_batch * s.seq_len * m.hidden_size * 2
    layers_here = -(-m.num_layers // s.pp)
    per_layer = 6 if s.recompute == "full" else 4
    tp_bytes = _ring(act_bytes, s.tp) * per_layer * layers_here * s.grad_accum
    tp_s = tp_bytes / link(s.tp, 1) if s.tp > 1 else 0.0
    # pipeline: activations forward and gradients backward per micro-batch and boundary
    pp_bytes = 2 * act_bytes * s.grad_accum // s.tp if s.pp > 1 else 0
    pp_s = pp_bytes / link(2, s.tp) if s.pp > 1 else 0.0
    # offload traffic
    off_bytes, nvme_s, cpu_s = 0, 0.0, 0.0
    if s.offload != "none":
        part = trainable // s.dp
        # 16-bit gradients go down every micro-batch (accumulated in fp32 on the CPU), the
        # updated 16-bit parameters come up once per step
        off_bytes = 2 * part * s.grad_accum + 2 * part
        if s.offload == "optimizer+params":  # fetched for every micro-batch's forward and backward
            off_bytes += 2 * 2 * part * s.grad_accum
        cpu_s = part / cpu_adam_params_per_s
        if s.offload_device == "nvme":  # the optimizer states stream through: read and write once
            nvme_s = 2 * estimate.nvme_bytes / nvme_bytes_per_s
    off_s = off_bytes / gpu.host_link_bytes_per_s
    t = StepTime(fpt, tokens, compute, bubble, int(dp_bytes), dp_s, dp_exposed, int(tp_bytes), tp_s,
                 int(pp_bytes), pp_s, off_bytes, off_s, nvme_s, cpu_s, n_gpus)
    if not (0 < t.step_s < math.inf and t.tokens_per_s_per_gpu > 0):  # e.g. mfu=1e-300: no finite answer
        raise ValueError(f"these rates give a step time of {t.step_s!r} s; check mfu={mfu!r}, "
                         f"peak_tflops={peak_tflops!r} and the link rates")
    return t
