"""Collectives: what they cost (the alpha-beta model) and when a parallelism becomes communication-bound.

The alpha-beta model (Hockney 1994; Thakur, Rabenseifner & Gropp 2005, "Optimization of Collective
Communication Operations in MPICH", Sec. 2): sending a message of B bytes costs alpha + B / beta, alpha the
per-message latency (seconds), beta the link's bandwidth (bytes/s, one direction). A collective over n GPUs is a
sequence of such steps:

* ring all-reduce = a reduce-scatter then an all-gather, 2(n - 1) steps of B / n bytes each:
  2(n - 1) alpha + 2 (n - 1)/n B / beta, bandwidth-optimal (Patarasuk & Yuan 2009, "Bandwidth optimal
  all-reduce algorithms for clusters of workstations"; Thakur et al. 2005, Sec. 4.5);
* ring reduce-scatter and ring all-gather: (n - 1) alpha + (n - 1)/n B / beta each;
* all-to-all (pairwise exchange): (n - 1) alpha + (n - 1)/n B / beta (Thakur et al. 2005, Sec. 4.6);
* tree all-reduce (NCCL's double binary tree, Jeaugey 2019, "Massively Scale Your Deep Learning Training with
  NCCL 2.4", NVIDIA blog; Sanders, Speck & Traeff 2009): latency logarithmic, 2 log2(n) alpha, and the data
  pipelined through two trees at about 2 B / beta: better than the ring for small messages on many GPUs.

The bytes each GPU sends are memlib.cost.timing's ring volumes (all_reduce_bytes, ...), the ones step_time
prices. NCCL's tests report "bus bandwidth", the algorithm bandwidth B / t scaled by the same factor
(2(n - 1)/n for all-reduce, (n - 1)/n for reduce-scatter, all-gather and all-to-all; NVIDIA/nccl-tests
doc/PERFORMANCE.md), so a bus bandwidth is comparable with the link's beta.

The communication roofline: a parallelism is communication-bound when its communication takes longer than the
compute it could hide behind. comm_roofline() gives, per scheme, the per-GPU tokens where the two are equal (data
parallelism and FSDP: the gradient and parameter traffic is fixed per step, the compute grows with the tokens),
or the fixed ratio of the two (tensor and expert parallelism: both grow with the tokens, so no batch size helps),
as in *How to Scale Your Model* (Austin et al. 2025, "Sharded matrices" and "Training" chapters).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from memlib._checks import bandwidth, choice, finite_number, positive_float, positive_int
from memlib.cost.timing import (all_gather_bytes, all_reduce_bytes, all_to_all_bytes, flops_per_token,
                                reduce_scatter_bytes)
from memlib.hardware.gpus import NETWORK_LINKS, get_gpu, link_bytes_per_s
from memlib.models import Model, get_model

# torch DistributedDataParallel's bucket_cap_mb default: "If None, a default size of 25 MiB will be used"
# (PyTorch docs, torch.nn.parallel.DistributedDataParallel; Li et al. 2020, "PyTorch Distributed", Sec. 3.2.3)
DDP_BUCKET_CAP_BYTES = 25 * 2**20
COLLECTIVES = ("all-reduce", "reduce-scatter", "all-gather", "all-to-all")
ALGORITHMS = ("ring", "tree")

def bytes_sent(collective: str, nbytes: float, n: int) -> float:
    """Bytes each GPU sends in a ring `collective` of a `nbytes` tensor over n GPUs (memlib.cost.timing's ring
    volumes: all-reduce 2(n - 1)/n B, the others (n - 1)/n B)."""
    choice("collective", collective, COLLECTIVES)
    n = positive_int("n", n)
    nbytes = finite_number("nbytes", nbytes)
    return {"all-reduce": all_reduce_bytes, "reduce-scatter": reduce_scatter_bytes,
            "all-gather": all_gather_bytes, "all-to-all": all_to_all_bytes}[collective](nbytes, n)


def collective_steps(collective: str, n: int, algorithm: str = "ring") -> int:
    """Messages in sequence (latency terms) of a collective over n GPUs: ring all-reduce 2(n - 1), ring
    reduce-scatter, all-gather and pairwise all-to-all n - 1 (Thakur et al. 2005); tree all-reduce 2 ceil(log2 n)
    (up the tree and down again; Jeaugey 2019)."""
    choice("collective", collective, COLLECTIVES)
    choice("algorithm", algorithm, ALGORITHMS)
    n = positive_int("n", n)
    if n == 1:
        return 0
    if algorithm == "tree":
        if collective != "all-reduce":
            raise ValueError("the tree algorithm is NCCL's for all-reduce only; use algorithm='ring'")
        return 2 * math.ceil(math.log2(n))
    return 2 * (n - 1) if collective == "all-reduce" else n - 1


def collective_seconds(collective: str, nbytes: float, n: int, bytes_per_s: float, alpha_s: float = 0.0,
                       algorithm: str = "ring") -> float:
    """Alpha-beta time of a collective of a `nbytes` tensor over n GPUs on links of bytes_per_s (one direction):
    steps x alpha + bytes sent / beta. Ring: bytes_sent(); tree all-reduce: about 2 B (each tree carries half the
    tensor up and down, pipelined; Jeaugey 2019). alpha_s is the per-message latency you assume (NCCL's is a few
    microseconds within a node, more across nodes; measure it with nccl-tests on small messages)."""
    beta = bandwidth("bytes_per_s", bytes_per_s)
    if isinstance(alpha_s, bool) or not (isinstance(alpha_s, (int, float)) and 0 <= alpha_s < 1):
        raise ValueError(f"alpha_s is a latency in seconds, >= 0 and < 1, got {alpha_s!r}")
    steps = collective_steps(collective, n, algorithm)
    if algorithm == "tree":
        volume = 2.0 * finite_number("nbytes", nbytes) if n > 1 else 0.0
    else:
        volume = bytes_sent(collective, nbytes, n)
    return steps * alpha_s + volume / beta


def bus_bandwidth(algorithm_bytes_per_s: float, collective: str, n: int) -> float:
    """nccl-tests' busbw from its algbw (= tensor bytes / time): x 2(n - 1)/n for all-reduce, x (n - 1)/n for
    reduce-scatter, all-gather and all-to-all (NVIDIA/nccl-tests doc/PERFORMANCE.md); comparable with the link's
    bytes/s whatever n is."""
    algbw = positive_float("algorithm_bytes_per_s", algorithm_bytes_per_s)
    return bytes_sent(collective, algbw, n)


def half_bandwidth_bytes(collective: str, n: int, bytes_per_s: float, alpha_s: float) -> float:
    """The tensor size at which a ring collective spends as long on latency as on bandwidth, steps x alpha =
    bytes sent / beta (Hockney's n_1/2): a ring all-reduce's n alpha beta. Messages much smaller than this are
    latency-bound, which is why DDP packs gradients into buckets (25 MB by default) instead of one all-reduce per
    tensor (Li et al. 2020, "PyTorch Distributed", Sec. 3.2.3)."""
    beta = bandwidth("bytes_per_s", bytes_per_s)
    alpha = positive_float("alpha_s", alpha_s, maximum=1)
    steps = collective_steps(collective, n)
    per_byte = bytes_sent(collective, 1.0, n)  # bytes sent per byte of tensor
    if not steps:
        raise ValueError("n = 1: no communication")
    return steps * alpha * beta / per_byte


# --- the communication roofline -----------------------------------------------------------------------------------
PARALLELISMS = ("dp", "fsdp", "tp", "ep")


@dataclass(frozen=True)
class CommRoofline:
    """Communication against compute for one parallelism, per GPU.

    dp / fsdp: comm_bytes_per_step is fixed (gradients, or parameters and gradients), compute grows with the
    tokens: critical_tokens is where they take equally long; below it the step is communication-bound.
    tp / ep: both grow with the tokens (activations travel): comm_to_compute is a fixed ratio and
    critical_tokens None; above 1 the scheme is communication-bound at any batch."""

    parallelism: str
    degree: int
    flops_per_s: float  # sustained, per GPU
    bytes_per_s: float  # link, one direction
    flops_per_token: float  # per GPU: what one token costs this GPU (6N + attention, divided over tp)
    comm_bytes_per_step: float  # dp: per optimizer step; fsdp: per micro-batch (gathered again each one)
    comm_bytes_per_token: float  # tp, ep
    critical_tokens: float | None
    comm_to_compute: float | None

    def ratio(self, tokens: float) -> float:
        """Communication time over compute time at `tokens` per GPU (per step for dp, per micro-batch for fsdp)."""
        t = positive_float("tokens", tokens)
        comm = (self.comm_bytes_per_step + self.comm_bytes_per_token * t) / self.bytes_per_s
        return comm / (self.flops_per_token * t / self.flops_per_s)

    def comm_bound(self, tokens: float) -> bool:
        return self.ratio(tokens) > 1


def _model(model) -> Model:
    return model if isinstance(model, Model) else get_model(model)


def comm_roofline(model, gpu, parallelism: str, degree: int, seq_len: int = 4096, bytes_per_s: float | None = None,
                  mfu: float = 1.0, param_bytes: int = 2, grad_bytes: int = 2, act_bytes: int = 2) -> CommRoofline:
    """Where `parallelism` over `degree` GPUs becomes communication-bound for `model` on `gpu`.

    Compute per token per GPU: memlib.cost.timing.flops_per_token(model, seq_len) (6N + 12·L·H·Q·T, PaLM App. B),
    divided over tp for tensor parallelism, at mfu x the GPU's dense bf16 peak (mfu=1: the roofline's peak).
    Links: bytes_per_s, one direction (default the GPU's own interconnect: one node; across nodes pass a network
    from link_bytes_per_s). Traffic, ring volumes (memlib.cost.timing):

    * dp (DDP): one all-reduce of the gradients per optimizer step, all_reduce_bytes(grad_bytes x N, dp); DDP
      overlaps it with the backward only (2/3 of the compute), so hiding it fully takes 1.5 x critical_tokens;
    * fsdp (ZeRO-3 / FULL_SHARD): per micro-batch an all-gather of the parameters in the forward, another in the
      backward and a reduce-scatter of the gradients: 2 all_gather_bytes(param_bytes N) + reduce_scatter_bytes(
      grad_bytes N) (Rajbhandari et al. 2020, Sec. 7.2.2: 1.5x DDP's volume);
    * tp (Megatron): per layer and token 2 all-reduces of the hidden vector in the forward and 2 in the backward,
      4 all_reduce_bytes(act_bytes x h, tp) (Shoeybi et al. 2019, Sec. 3);
    * ep: per MoE layer and token 2 all-to-alls (dispatch, combine) forward and 2 backward of its top-k copies,
      4 all_to_all_bytes(act_bytes x k x h, ep) (Lepikhin et al. 2020, GShard).
    N counts every parameter (memlib's Model.num_params); the experts' gradients of a MoE reduce over dp / ep
    GPUs, not modelled here (use dp for dense models)."""
    m = _model(model)
    g = get_gpu(gpu)
    choice("parallelism", parallelism, PARALLELISMS)
    n = positive_int("degree", degree)
    if n < 2:
        raise ValueError("degree must be at least 2: one GPU does not communicate")
    mfu = positive_float("mfu", mfu, maximum=1)
    for name, v in (("param_bytes", param_bytes), ("grad_bytes", grad_bytes), ("act_bytes", act_bytes)):
        positive_int(name, v, maximum=8)
    beta = float(g.interconnect_bytes_per_s_per_direction) if bytes_per_s is None else \
        bandwidth("bytes_per_s", bytes_per_s)
    peak = (g.bf16_tflops or g.fp16_tflops) * 1e12
    flops_per_s = peak * mfu
    fpt = flops_per_token(m, seq_len)
    N = m.num_params
    per_step = per_token = 0.0
    if parallelism == "dp":
        per_step = all_reduce_bytes(grad_bytes * N, n)
    elif parallelism == "fsdp":
        per_step = 2 * all_gather_bytes(param_bytes * N, n) + reduce_scatter_bytes(grad_bytes * N, n)
    elif parallelism == "tp":
        if m.num_heads % n or m.num_kv_heads % n:
            raise ValueError(f"tp={n} must divide {m.name}'s {m.num_heads} heads and {m.num_kv_heads} KV heads")
        fpt = fpt / n
        per_token = m.num_layers * 4 * all_reduce_bytes(act_bytes * m.hidden_size, n)
    else:
        if not m.is_moe:
            raise ValueError(f"expert parallelism needs a mixture of experts; {m.name} is dense")
        if m.num_experts % n:
            raise ValueError(f"ep={n} must divide {m.name}'s {m.num_experts} experts")
        per_token = m.num_moe_layers * 4 * all_to_all_bytes(act_bytes * m.num_experts_per_tok * m.hidden_size, n)
    if per_token:
        ratio = (per_token / beta) / (fpt / flops_per_s)
        return CommRoofline(parallelism, n, flops_per_s, beta, fpt, 0.0, per_token, None, ratio)
    critical = (per_step / beta) * flops_per_s / fpt
    return CommRoofline(parallelism, n, flops_per_s, beta, fpt, per_step, 0.0, critical, None)


__all__ = ["DDP_BUCKET_CAP_BYTES", "COLLECTIVES", "ALGORITHMS", "NETWORK_LINKS", "PARALLELISMS", "link_bytes_per_s", "bytes_sent",
           "collective_steps", "collective_seconds", "bus_bandwidth", "half_bandwidth_bytes", "CommRoofline",
           "comm_roofline"]
