"""Time, not only memory: FLOPs, communication and offload traffic of one training step.

step_time(estimate, gpu) reads the setup of a training estimate and returns a StepTime
with every term named. The model is deliberately simple and stated:

* compute: FLOPs per token (PaLM's 6N + 12·L·H·Q·T, Chowdhery et al. 2022 App. B; full
  recompute adds a forward: 8N + 16·L·H·Q·T; LoRA skips weight gradients: 4N + 12·L·H·Q·T)
  at a model-FLOPs utilisation `mfu` of the GPU's dense 16-bit tensor peak;
* pipeline bubble (p - 1) / (m + p - 1) of the compute (Narayanan et al. 2021, Sec. 2.2); a
  device_map split (QLoRA over pp GPUs) runs the GPUs one after another: (p - 1) / p;
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

from dataclasses import dataclass

from memlib._checks import positive_float
from memlib.gpus import GPU, get_gpu

DEFAULT_MFU = 0.4
INTERNODE_BYTES_PER_S = 25 * 10**9  # one 200 Gb/s InfiniBand HDR port per GPU, one direction
NVME_BYTES_PER_S = 3 * 10**9  # one PCIe 4.0 NVMe drive per GPU, sustained
# DeepSpeed CPU-Adam: Ren et al. 2021 (ZeRO-Offload) Table 2 reports ~0.2 s per billion
# parameters on a two-socket server; 5e9 parameters/s per process is that order.
CPU_ADAM_PARAMS_PER_S = 5 * 10**9


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


def flops_per_token(model, seq_len: int, recompute: str = "none", finetune: str = "full") -> float:
    """Training FLOPs per token: 6N + 12·L·H·Q·T (Chowdhery et al. 2022, PaLM, App. B), with a
    second forward under full recompute (+2N + 4·L·H·Q·T), and no weight gradients (-2N) for a
    frozen base. Selective recompute: for LLaMA-style models torchtitan's op-level policy, which
    recomputes every other matmul of a layer (k, o and up projections) but keeps the attention
    kernel's output (+2·L·(h·kv + q·h + h·I)); for GPT-style models Korthikanti et al.'s attention
    recompute (+4·L·H·Q·T)."""
    n = model.num_params
    attn = model.num_layers * model.num_heads * model.head_dim * seq_len
    dense = 6 * n if finetune == "full" else 4 * n
    f = dense + 12 * attn
    if recompute == "full":
        f += 2 * n + 4 * attn
    elif recompute == "selective" and model.mlp == "gated":
        h = model.hidden_size
        f += 2 * model.num_layers * (h * model.kv_size + model.q_size * h + h * model.intermediate_size)
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
    gpu: GPU = get_gpu(gpu)
    mfu = positive_float("mfu", mfu)
    if mfu > 1:
        raise ValueError(f"mfu is a fraction of peak in (0, 1], got {mfu}")
    s = estimate.setup
    m = s.model
    if peak_tflops is None:
        if s.precision == "fp32":
            raise ValueError(f"the catalog has no fp32 throughput for {gpu.name}; pass peak_tflops=")
        peak_tflops = gpu.bf16_tflops if s.precision.startswith("bf16") else gpu.fp16_tflops
        if peak_tflops is None:
            raise ValueError(f"{gpu.name} has no bf16 tensor cores; use precision 'fp16-mixed' or pass peak_tflops=")
    peak = positive_float("peak_tflops", peak_tflops) * 1e12
    n_gpus = s.dp * s.tp * s.pp
    tokens = s.seq_len * s.micro_batch * s.grad_accum * s.dp
    fpt = flops_per_token(m, s.seq_len, s.recompute, s.finetune)
    if s.sharding == "device_map":  # naive model parallelism: the GPUs work one after another
        bubble = (s.pp - 1) / s.pp
    else:
        bubble = (s.pp - 1) / (s.grad_accum + s.pp - 1)
    compute = fpt * tokens / n_gpus / (peak * mfu) / (1 - bubble)

    def link(group: int, stride: int) -> float:
        """Bandwidth of a group of `group` GPUs spaced `stride` apart: in-node or not."""
        return gpu.interconnect_bytes_per_s_per_direction if group * stride <= gpus_per_node else internode_bytes_per_s

    # data parallel: gradients of this GPU's share (the tp x pp slice), in the gradient dtype
    trainable = estimate.counts["trainable"]
    grad_b = 2 if s.sharding == "deepspeed" or s.precision in ("bf16", "fp16") else 4
    if s.finetune != "full":
        grad_b = estimate.counts["grad_bytes_unsharded"] / max(trainable, 1)
    dp_bytes = _ring(trainable * grad_b, s.dp)
    if s.sharding != "none" and s.zero_stage == 3:
        if s.finetune == "full":
            dp_bytes *= 1.5
        else:  # the frozen (4-bit) base is all-gathered in forward and again in backward; adapters reduce-scattered
            n = s.dp
            dp_bytes = (n - 1) / n * (2 * estimate.counts["param_bytes_unsharded"] + trainable * grad_b)
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
            nvme_s = 2 * estimate.nvme_bytes / positive_float("nvme_bytes_per_s", nvme_bytes_per_s)
    off_s = off_bytes / gpu.host_link_bytes_per_s
    return StepTime(fpt, tokens, compute, bubble, int(dp_bytes), dp_s, dp_exposed, int(tp_bytes), tp_s,
                    int(pp_bytes), pp_s, off_bytes, off_s, nvme_s, cpu_s, n_gpus)
