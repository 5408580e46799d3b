"""Time, not only memory: FLOPs, communication and offload traffic of one training step.

step_time(estimate, gpu) reads the setup of a training estimate and returns a StepTime
with every term named. The model is deliberately simple and stated:

* compute: the FLOPs the GPU executes per token (PaLM's 6N + 12·L·H·Q·T, Chowdhery et al.
  2022 App. B; N the parameters a token passes through, the active ones for a mixture of
  experts; full recompute adds a forward: 8N + 16·L·H·Q·T; LoRA skips weight gradients:
  4N + 12·L·H·Q·T) at a utilisation of the GPU's dense 16-bit tensor peak. The forward is
  2N + 4·L·H·Q·T of it, the backward (with any recompute) the rest.
  MFU and HFU, as PaLM defines them (Chowdhery et al. 2022, Sec. 4.1 and App. B): model FLOPs
  utilisation counts the model FLOPs only (flops_per_token with recompute="none": 6N + 12·L·H·Q·T,
  4N + 12·L·H·Q·T for LoRA/QLoRA); hardware FLOPs utilisation counts every FLOP the GPU runs,
  the recomputed forward included (flops_per_token with the setup's recompute). So
  MFU = HFU x model FLOPs / hardware FLOPs: 40% HFU with full recompute is 40% x 6/8 = 30% MFU
  for a dense full fine-tune. step_time takes either: hfu=x (the GPU's kernels run at x of peak;
  recompute costs its own time), or mfu=x (the run reaches x MFU; the implied HFU,
  x x hardware / model FLOPs, must not exceed 1). Given neither, hfu=DEFAULT_HFU: kernel
  efficiency is what stays the same when a run adds recompute, so recompute keeps its time;
* pipeline bubble (p - 1) / (m + p - 1) of the compute (Narayanan et al. 2021, Sec. 2.2); a
  device_map split (QLoRA over pp GPUs) runs the GPUs one after another: (p - 1) / p;
* data parallel: the collectives each scheme issues, when, and how many times per optimizer
  step with m = grad_accum micro-batches (dp_collectives(); ring volumes per GPU: all-reduce
  2(n-1)/n·B, reduce-scatter and all-gather (n-1)/n·B each, Patarasuk & Yuan 2009):
  DDP and Megatron all-reduce gradients once per step; DeepSpeed ZeRO-1 reduces them at the
  accumulation boundary, ZeRO-2 after every micro-batch's backward, both all-gather the
  updated parameters once per step; ZeRO-3 and FSDP FULL_SHARD all-gather parameters in every
  micro-batch's forward and again in its backward and reduce-scatter gradients after every
  backward (m = 1 gives the ZeRO paper's 1.5x of DDP's volume), SHARD_GRAD_OP gathers once
  per micro-batch. See dp_collectives() for the source of each;
* overlap (explicit): a collective marked hidden overlaps the compute of its own phase of
  its own micro-batch (forward gathers the forward, backward gathers and gradient reductions
  the backward; once-per-step gradient reductions the last micro-batch's backward); per
  micro-batch and phase only the excess over that compute is exposed. Collectives not
  hidden (ZeRO-1's reduction without overlap_comm, Megatron's without --overlap-grad-reduce,
  the parameter all-gather after a ZeRO-1/2 optimizer step) are exposed in full. Not
  modelled: the first gather before any compute, latency of small messages, contention of
  the same link by TP and DP at once;
* tensor parallelism: 4 all-reduces of b·s·h activations per layer per micro-batch
  (2 forward, 2 backward; Shoeybi et al. 2019 Sec. 3), 6 with full recompute, not overlapped;
* pipeline: each micro-batch sends its b·s·h activations forward and gradients back;
* expert parallelism (MoE, ep > 1): two all-to-alls per MoE layer in the forward (dispatch the
  routed tokens to their experts' GPUs, combine the results back) and two in the backward
  (GShard, Lepikhin et al. 2020; DeepSpeed-MoE, Rajbhandari et al. 2022),
  plus the forward's two again under full recompute; each moves tokens x top-k x hidden in the
  compute dtype, of which each GPU sends (ep - 1)/ep; not overlapped. Expert gradients are
  reduced over the dp / ep GPUs that hold the same experts, the rest over dp;
* context parallelism (cp > 1): the GPUs are dp x cp x tp x pp, each holding seq_len / cp tokens of every
  sequence (its FLOPs are 1/cp of the sequence's, attention included); FSDP / gradient collectives run over
  dp x cp (torchtitan's dp_shard_cp mesh); ring attention sends each layer's K/V block to the other cp - 1
  ranks in the forward and again in the backward, plus the fp32 dK/dV around the ring (cp_kv_bytes), hidden
  behind the attention blocks' compute as the implementation overlaps it (cp_exposed_seconds);
* offload: the gradient partition through a 16-bit CPU buffer every micro-batch, down in fp32 at the
  step's last one, and the 16-bit parameters up once per step over the host link (ZeRO-Offload, Ren et
  al. 2021, as DeepSpeed runs it: zero_offload_traffic_bytes); with ZeRO-Infinity the parameters also come up
  for every micro-batch's forward and backward; NVMe traffic at `nvme_bytes_per_s`; the CPU
  Adam step at `cpu_adam_params_per_s`, a rate of one server's CPUs shared by the offloading
  processes on that node (see step_time).
Links: the catalog's GPU interconnect within a node of `gpus_per_node`, `internode_bytes_per_s`
beyond it; the host link per GPU (gpus.HOST_LINK).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from memlib._checks import bandwidth, choice, flag, finite_number, fraction, positive_float, positive_int, show, plain_args
from memlib.hardware.gpus import GPU, MAX_PEAK_TFLOPS, get_gpu
from memlib.models.flops import _model, active_params, attention_flops_per_token, forward_flops_per_token
from memlib.training import FINETUNES, RECOMPUTES, Estimate
from memlib.training.terms import PARAM_BYTES

# The utilisation step_time assumes when given neither mfu nor hfu: 40% of the dense 16-bit peak for every FLOP
# the GPU runs (hardware FLOPs, recompute included). Without recompute MFU = HFU, so this is also 40% MFU there;
# with full recompute it is 30% MFU for a dense model (6N / 8N). DEFAULT_MFU is kept for code that imports it:
# the same number, applied as HFU by step_time, training_run and plan (as MFU only where FLOPs have no recompute).
DEFAULT_HFU = 0.4
DEFAULT_MFU = DEFAULT_HFU
INTERNODE_BYTES_PER_S = 25 * 10**9  # one 200 Gb/s InfiniBand HDR port per GPU, one direction
NVME_BYTES_PER_S = 3 * 10**9  # one PCIe 4.0 NVMe drive per GPU, sustained
# DeepSpeed CPU-Adam, per server (node), not per process: Ren et al. 2021 (ZeRO-Offload) Table 2
# times one Adam step of DeepSpeedCPUAdam on the evaluation server's two CPU sockets at about
# 0.2 s per billion parameters, i.e. ~5e9 parameters/s for the whole server. The processes of
# one node share those cores, so each gets this rate / (offloading processes on the node).
# Hosts differ several-fold: DeepSpeed PR #735 reports 8.2 s for an 11.6B-parameter step
# (1.4e9/s) on another machine; pass cpu_adam_params_per_s= for yours.
CPU_ADAM_PARAMS_PER_S = 5 * 10**9
# FSDP's CPU offload steps with torch.optim's own AdamW on the CPU, which DeepSpeed's maintainers put at up to 6x
# slower than DeepSpeedCPUAdam (microsoft/DeepSpeed#479: "up to a 6X throughput boost" over torch.optim.Adam).
TORCH_CPU_ADAM_SLOWDOWN = 6
# DeepSpeed ZeRO-3 keeps a gathered parameter when the trace shows it is used again within
# stage3_max_reuse_distance elements (default 1e9; zero/config.py, partitioned_param_coordinator.py
# __params_to_release): the last layers of the forward are reused at the start of the backward
# after 2x their own size, so about max_reuse_distance / 2 parameters are not gathered again.
DS_MAX_REUSE_DISTANCE = 10**9
# Upper bounds that only catch typos, as memlib.hardware.gpus.MAX_PEAK_TFLOPS: NVLink 5 moves 9e11 B/s.
MAX_BYTES_PER_S = 1e15
MAX_PARAMS_PER_S = 1e15


@dataclass(frozen=True)
class StepTime:
    """One optimizer step, term by term (see the module docstring).

    flops_per_token are the *hardware* FLOPs per token (what the GPU executes, recompute included);
    model_flops_per_token the *model* FLOPs (no recompute: PaLM's MFU numerator). hfu and mfu are the
    compute phase's utilisations (busy seconds only): hfu = the rate of every executed FLOP over the
    peak, mfu = hfu x model / hardware FLOPs. achieved_mfu and achieved_hfu are end to end: tokens/s
    per GPU over the whole step (pipeline bubble, exposed communication, offload included) x the FLOPs
    per token / peak, the figure a paper reports (Chowdhery et al. 2022, Sec. 4.1 and App. B).
    """

    flops_per_token: float  # hardware FLOPs per token: what the GPU executes, the recomputed forward included
    tokens_per_step: int  # across all GPUs
    compute_s: float  # per GPU, at the compute phase's HFU, including the pipeline bubble
    bubble_fraction: float
    dp_comm_bytes: int  # per GPU per optimizer step, every micro-batch's collectives included
    dp_comm_s: float
    dp_exposed_s: float  # what the compute could not hide (see the module docstring's overlap rule)
    tp_comm_bytes: int
    tp_comm_s: float
    pp_comm_bytes: int
    pp_comm_s: float
    offload_bytes: int  # host link, per GPU per step
    offload_s: float
    nvme_s: float
    cpu_optimizer_s: float
    gpus: int
    # added with the per-micro-batch data-parallel model; defaults keep old constructors working
    dp_scheme: str = "none"  # "DDP" | "Megatron DP" | "DeepSpeed ZeRO-1" ... | "FSDP FULL_SHARD" ...
    dp_collectives: str = ""  # one line per collective: what, bytes per GPU, how often, overlap
    dp_gather_bytes: int = 0  # parameter all-gathers, per GPU per step (part of dp_comm_bytes)
    dp_reduce_bytes: int = 0  # gradient all-reduces / reduce-scatters, per GPU per step
    micro_batches: int = 1  # grad_accum
    forward_s: float = 0.0  # compute of one micro-batch's forward, per GPU (what hides forward gathers)
    backward_s: float = 0.0  # compute of one micro-batch's backward incl. recompute
    cpu_adam_processes_per_node: int = 0  # processes sharing one node's CPU-Adam rate (0: no offload)
    peak_flops: float = 0.0  # the dense 16-bit peak per GPU it was timed against, FLOP/s
    mfu: float = 0.0  # the compute phase's model-FLOPs utilisation: hfu x model_flops_per_token / flops_per_token
    ep_comm_bytes: int = 0  # expert-parallel all-to-alls, per GPU per step (MoE with ep > 1)
    ep_comm_s: float = 0.0
    cp_comm_bytes: int = 0  # context parallelism: ring attention's K/V (and dK/dV) traffic, per GPU per step
    cp_comm_s: float = 0.0  # its seconds on the link
    cp_exposed_s: float = 0.0  # what the attention blocks' compute does not hide (cp_exposed_seconds)
    model_flops_per_token: float = 0.0  # model FLOPs per token (no recompute; 0 from old constructors: = flops)
    hfu: float = 0.0  # the compute phase's hardware-FLOPs utilisation (every executed FLOP, recompute included)

    @property
    def step_s(self) -> float:
        return (self.compute_s + self.dp_exposed_s + self.tp_comm_s + self.pp_comm_s + self.offload_s
                + self.nvme_s + self.cpu_optimizer_s + self.ep_comm_s + self.cp_exposed_s)

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return self.tokens_per_step / self.step_s / self.gpus

    @property
    def achieved_mfu(self) -> float:
        """End-to-end MFU: tokens/s per GPU x model FLOPs per token / dense peak, with the bubble, exposed
        communication and offload in the step (Chowdhery et al. 2022, PaLM, Sec. 4.1)."""
        if not self.peak_flops:
            return math.nan
        return self.tokens_per_s_per_gpu * (self.model_flops_per_token or self.flops_per_token) / self.peak_flops

    @property
    def achieved_hfu(self) -> float:
        """End-to-end HFU: tokens/s per GPU x hardware FLOPs per token (recompute included) / dense peak."""
        return self.tokens_per_s_per_gpu * self.flops_per_token / self.peak_flops if self.peak_flops else math.nan

    def as_dict(self) -> dict:
        return {**{k: getattr(self, k) for k in self.__dataclass_fields__}, "step_s": self.step_s,
                "tokens_per_s_per_gpu": self.tokens_per_s_per_gpu, "achieved_mfu": self.achieved_mfu,
                "achieved_hfu": self.achieved_hfu}


def _training_estimate(estimate) -> Estimate:
    """step_time times a training step: anything else is named in the error, with what to pass."""
    if isinstance(estimate, Estimate):
        return estimate
    kind = type(estimate).__name__
    if kind == "InferenceEstimate":
        raise ValueError("step_time times one training step; an InferenceEstimate (serving) has none: "
                         "pass memlib.estimate_training(...)")
    if kind == "Plan":  # memlib.parallel.plan.Plan: its estimate, and the time it was ranked by
        raise ValueError("step_time needs a training estimate, got a Plan: pass plan.estimate (plan.time holds "
                         "the time it was ranked by)")
    raise ValueError(f"step_time needs a training estimate from memlib.estimate_training(...), got "
                     f"{show(estimate)} ({kind})")


@plain_args
def flops_per_token(model, seq_len: int, recompute: str = "none", finetune: str = "full") -> float:
    """Training FLOPs per token: 6N + 12·L·H·Q·T (Chowdhery et al. 2022, PaLM, App. B), with a
    second forward under full recompute (+2N + 4·L·H·Q·T), and no weight gradients (-2N) for a
    frozen base. Selective recompute: for LLaMA-style models torchtitan's op-level policy, which
    recomputes every other matmul of a layer (k, o and up projections) but keeps the attention
    kernel's output (+2·L·(h·kv + q·h + h·I)); for GPT-style models Korthikanti et al.'s attention
    recompute (+4·L·H·Q·T). N is active_params(model): the parameters a token passes through
    (Kaplan et al. 2020's 6N rule counts the active parameters of a mixture of experts)."""
    model = _model(model, "flops_per_token")
    seq_len = positive_int("seq_len", seq_len)
    choice("recompute", recompute, RECOMPUTES)
    choice("finetune", finetune, FINETUNES)
    if recompute == "selective" and model.mlp == "gated":
        h = model.hidden_size
        rebuilt = 2 * model.num_layers * (h * model.kv_size + model.q_size * h + h * model.intermediate_size)
        return palm_flops_per_token(active_params(model), model.num_layers, model.num_heads, model.head_dim,
                                    seq_len, "none", finetune) + rebuilt
    return palm_flops_per_token(active_params(model), model.num_layers, model.num_heads, model.head_dim, seq_len,
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


@plain_args
def model_flops_per_token(model, seq_len: int, finetune: str = "full") -> float:
    """Model FLOPs per token, the numerator of MFU (Chowdhery et al. 2022, PaLM, App. B): flops_per_token
    without recompute, 6N + 12·L·H·Q·T (4N + 12·L·H·Q·T for a frozen base). A recomputed forward is
    hardware FLOPs, counted by HFU only."""
    return flops_per_token(model, seq_len, "none", finetune)


def utilisation(model_flops: float, hardware_flops: float, mfu=None, hfu=None) -> tuple[float, float]:
    """(mfu, hfu) from the one given, for work of `model_flops` that the GPU runs as `hardware_flops`
    (per token or in total): MFU = HFU x model / hardware FLOPs (Chowdhery et al. 2022, PaLM, App. B).
    Neither given: hfu = DEFAULT_HFU. Both given, or an mfu that needs more than the peak (HFU > 1), is a
    ValueError."""
    if mfu is not None and hfu is not None:
        raise ValueError(f"give mfu= (model FLOPs utilisation, recompute not counted) or hfu= (hardware FLOPs "
                         f"utilisation, recompute counted), not both: got mfu={show(mfu)}, hfu={show(hfu)}")
    model_flops = positive_float("model_flops", model_flops)
    hardware_flops = positive_float("hardware_flops", hardware_flops)
    ratio = hardware_flops / model_flops  # >= 1: recompute only adds FLOPs
    if mfu is not None:
        mfu = fraction("mfu", mfu, what="a fraction of peak (model FLOPs utilisation)")
        if mfu * ratio > 1 + 1e-12:
            raise ValueError(f"mfu={mfu:g} is not reachable here: the run executes {ratio:.3f}x the model FLOPs "
                             f"(recompute), so it needs an HFU of {mfu:g} x {ratio:.3f} = {mfu * ratio:.0%} of the "
                             f"peak; give mfu <= {1 / ratio:.3f}, or hfu= for the kernels' utilisation")
        return mfu, mfu * ratio
    hfu = DEFAULT_HFU if hfu is None else fraction("hfu", hfu, what="a fraction of peak (hardware FLOPs "
                                                                     "utilisation, recompute included)")
    return hfu / ratio, hfu


# ---- collectives of data parallelism --------------------------------------------------------------
def all_reduce_bytes(nbytes: float, n: int) -> float:
    """Bytes each GPU sends in a ring all-reduce of `nbytes` over n GPUs: 2(n-1)/n·B
    (a reduce-scatter then an all-gather; Patarasuk & Yuan 2009)."""
    nbytes, n = finite_number("nbytes", nbytes), positive_int("n", n)
    return 2 * (n - 1) / n * nbytes if n > 1 else 0.0


def reduce_scatter_bytes(nbytes: float, n: int) -> float:
    """Bytes each GPU sends in a ring reduce-scatter of a `nbytes` tensor over n GPUs: (n-1)/n·B."""
    nbytes, n = finite_number("nbytes", nbytes), positive_int("n", n)
    return (n - 1) / n * nbytes if n > 1 else 0.0


def all_gather_bytes(nbytes: float, n: int) -> float:
    """Bytes each GPU sends in a ring all-gather that assembles a `nbytes` tensor on n GPUs: (n-1)/n·B."""
    nbytes, n = finite_number("nbytes", nbytes), positive_int("n", n)
    return (n - 1) / n * nbytes if n > 1 else 0.0


def all_to_all_bytes(nbytes: float, n: int) -> float:
    """Bytes each GPU sends in an all-to-all of its `nbytes` buffer over n GPUs: (n-1)/n·B (the 1/n addressed to
    itself stays; NCCL's alltoall as torch.distributed.all_to_all_single sends one slice to every peer)."""
    nbytes, n = finite_number("nbytes", nbytes), positive_int("n", n)
    return (n - 1) / n * nbytes if n > 1 else 0.0


def ep_all_to_all_bytes(estimate) -> float:
    """Expert-parallel all-to-all traffic of one optimizer step, bytes sent per GPU: per MoE layer on this GPU and
    micro-batch, a dispatch and a combine in the forward and their two transposes in the backward (the
    all-to-all of each MoE layer's expert-sharded dispatch and combine: GShard, Lepikhin et al. 2020; DeepSpeed-MoE,
    Rajbhandari et al. 2022; Megatron-Core's MoEAlltoAllTokenDispatcher token_dispatch/token_combine), plus the
    forward's two again under full recompute; each carries the routed rows (tokens x top-k, or the capacity-padded
    buffer) x hidden in the compute dtype.
    """
    estimate = _training_estimate(estimate)
    s = estimate.setup
    if s.ep == 1 or not estimate.counts.get("moe_layers"):
        return 0.0
    width = 4 if s.precision == "fp32" else 2
    buffer = estimate.counts["routed_rows"] * s.model.hidden_size * width // s.tp
    per_layer = 6 if s.recompute == "full" else 4
    return all_to_all_bytes(buffer, s.ep) * per_layer * estimate.counts["moe_layers"] * s.grad_accum


def cp_block_bytes(estimate) -> tuple[int, int]:
    """(K/V block, dK/dV block): the bytes of one layer's local key and value on one GPU of a context-parallel
    group (compute dtype; MLA's per-head key and value) and of their gradients, which the ring backward carries in
    fp32 (torch 2.13 _templated_ring_attention_backward: accum_dtype float32 under convert_to_f32)."""
    from memlib.training.context_parallel import kv_width
    estimate = _training_estimate(estimate)
    s = estimate.setup
    width = 4 if s.precision == "fp32" else 2
    elements = kv_width(s.model) * s.tokens_per_gpu // s.tp
    return width * elements, 4 * elements


def cp_kv_bytes(estimate) -> int:
    """Ring attention's traffic of one decoder layer and one micro-batch, bytes sent per GPU: the forward sends
    its K/V block to the other cp - 1 ranks (one all-gather, or cp - 1 ring steps: the same bytes), the backward
    does it again and passes the fp32 dK/dV around the whole ring (cp sends: the last returns it to its owner);
    full recompute runs the forward's again (torch 2.13 _context_parallel/_attention.py; Megatron-Core gathers KV
    again in backward and reduce-scatters its gradients). 0 without context parallelism."""
    estimate = _training_estimate(estimate)
    s = estimate.setup
    if s.cp == 1:
        return 0
    kv, dkv = cp_block_bytes(estimate)
    forwards = 2 if s.recompute == "full" else 1
    return forwards * (s.cp - 1) * kv + (s.cp - 1) * kv + s.cp * dkv


def cp_exposed_seconds(estimate, bytes_per_s: float, attn_fwd_s: float) -> float:
    """Seconds of one layer's ring traffic (one micro-batch) the attention compute does not hide, given the layer's
    attention forward compute on this GPU (`attn_fwd_s`; the backward's is twice it). Each step of the ring
    computes one of cp blocks while the next block travels (Liu et al. 2023, Sec. 3: communication overlapped
    with blockwise attention): alltoall hides each of the cp - 1 transfers behind one block; allgather issues one
    all-gather before the local block and waits for it after that block (torch's _AllGatherRotater), so only
    one block's compute hides it; the dK/dV ring sends after each block and waits before the next, the last
    send is waited for after the loop (exposed whole)."""
    estimate = _training_estimate(estimate)
    s = estimate.setup
    if s.cp == 1:
        return 0.0
    kv, dkv = cp_block_bytes(estimate)
    cp = s.cp

    def kv_exposed(block_s: float) -> float:
        t_block = kv / bytes_per_s
        if s.cp_rotate == "allgather":
            return max(0.0, (cp - 1) * t_block - block_s)
        return (cp - 1) * max(0.0, t_block - block_s)

    fwd_block, bwd_block = attn_fwd_s / cp, 2 * attn_fwd_s / cp
    t_dkv = dkv / bytes_per_s
    forwards = 2 if s.recompute == "full" else 1
    return (forwards * kv_exposed(fwd_block) + kv_exposed(bwd_block)
            + (cp - 1) * max(0.0, t_dkv - bwd_block) + t_dkv)


_ring = all_reduce_bytes  # tensor parallel's activation all-reduces use the same ring

PHASES = ("forward", "backward", "last backward", "optimizer step")


@dataclass(frozen=True)
class Collective:
    """One data-parallel collective: what it moves, how often, and which compute can hide it."""

    op: str  # "all-reduce" | "reduce-scatter" | "all-gather"
    of: str  # "gradients" | "parameters"
    bytes_per_gpu: float  # sent by each GPU, one occurrence
    per_step: int  # occurrences per optimizer step
    phase: str  # "forward" | "backward" (every micro-batch) | "last backward" | "optimizer step" (once)
    hidden: bool  # overlaps the compute of its phase (only the excess is exposed)
    source: str  # the implementation it models

    def describe(self) -> str:
        how = "overlapped" if self.hidden else "not overlapped"
        return (f"{self.op} of {self.of}: {self.bytes_per_gpu / 1e9:.3g} GB per GPU x {self.per_step} per step "
                f"({self.phase}, {how}; {self.source})")


def _dp_scheme(s) -> str:
    if s.dp * s.cp == 1:
        return "none"
    if s.sharding == "deepspeed":
        return f"DeepSpeed ZeRO-{s.zero_stage}"
    if s.sharding == "fsdp":
        return {3: "FSDP FULL_SHARD", 2: "FSDP SHARD_GRAD_OP"}.get(s.zero_stage, "DDP")
    if s.sharding == "megatron":
        return "Megatron DP"
    return "DDP"


def dp_collectives(estimate, ds_bucket_allreduce: bool = True) -> tuple[str, list[Collective]]:
    """The data-parallel collectives of one optimizer step of `estimate`, per GPU.

    Returns (scheme, collectives). Volumes are ring volumes over the dp GPUs; bytes are those of
    this GPU's tensor/pipeline slice, in the dtype the implementation sends. m = grad_accum.
    ds_bucket_allreduce=False models DeepSpeed ZeRO-1/2 with use_multi_rank_bucket_allreduce off
    (a reduce of each slice to its owner: (n-1)/n·B per GPU, the ZeRO paper's reduce-scatter).
    One function per scheme, each with the implementation it models: _ddp_collectives (torch DDP),
    _megatron_dp_collectives (Megatron-LM), _zero12_collectives and _zero3_collectives (DeepSpeed),
    _fsdp_collectives and _fsdp_adapter_collectives (FSDP2, FSDP-QLoRA). With m = 1 and no reuse
    ZeRO-3 moves 3(n-1)/n·2Ψ bytes, the ZeRO paper's 1.5x of data parallelism's 2Ψ
    (Rajbhandari et al. 2020, Sec. 7).
    """
    estimate = _training_estimate(estimate)
    ds_bucket_allreduce = flag("ds_bucket_allreduce", ds_bucket_allreduce)
    s = estimate.setup
    scheme = _dp_scheme(s)
    if scheme == "none":
        return scheme, []
    dp = _dp_context(estimate)
    if scheme == "DDP":
        return scheme, _ddp_collectives(dp)
    if scheme == "Megatron DP":
        return scheme, _megatron_dp_collectives(dp)
    if scheme.startswith("DeepSpeed"):
        return scheme, _zero12_collectives(dp, ds_bucket_allreduce) if s.zero_stage <= 2 else _zero3_collectives(dp)
    if dp.adapters:
        return scheme, _fsdp_adapter_collectives(dp)
    return scheme, _fsdp_collectives(dp, full_shard=scheme == "FSDP FULL_SHARD")


@dataclass(frozen=True)
class _DPContext:
    """What every scheme's collectives are computed from: the estimate, its setup, n = dp x cp GPUs
    (context parallelism: FSDP / gradient reduction over dp x cp, torchtitan), m = grad_accum, and
    the ring volume functions (split by expert group under MoE with ep > 1)."""

    estimate: Estimate
    n: int
    m: int
    all_reduce: object
    reduce_scatter: object
    all_gather: object

    @property
    def s(self):
        return self.estimate.setup

    @property
    def trainable(self) -> int:
        return self.estimate.counts["trainable"]

    @property
    def mixed(self) -> bool:
        return self.s.precision.endswith("-mixed")

    @property
    def wide(self) -> bool:
        return self.s.precision == "fp32"

    @property
    def adapters(self) -> bool:
        return self.s.finetune != "full"

    @property
    def grad_w(self):
        """LoRA/QLoRA: only the adapters have gradients, in the adapters' own dtype (bytes each); else None."""
        return self.estimate.counts["grad_bytes_unsharded"] / max(self.trainable, 1) if self.adapters else None


def _dp_context(estimate) -> _DPContext:
    s = estimate.setup
    trainable = estimate.counts["trainable"]
    expert_share = estimate.counts.get("expert_params", 0) / max(trainable, 1) if s.ep > 1 else 0.0
    ops = all_reduce_bytes, reduce_scatter_bytes, all_gather_bytes
    if expert_share:
        # MoE with ep > 1: the routed experts' gradients and parameters travel only among the dp / ep GPUs that
        # hold the same experts (DeepSpeed-MoE's expert data-parallel group); the dense rest over all dp GPUs
        def split(fn):
            return lambda nbytes, group: (fn(nbytes * (1 - expert_share), group)
                                          + fn(nbytes * expert_share, group // s.ep))
        ops = tuple(split(fn) for fn in ops)
    return _DPContext(estimate, s.dp * s.cp, s.grad_accum, *ops)


def _ddp_collectives(dp: _DPContext) -> list[Collective]:
    """torch DistributedDataParallel under HF Trainer/accelerate: gradient accumulation runs under
    no_sync (accelerate's Accelerator.accumulate), so one all-reduce of the gradients per step, in
    the last micro-batch's backward, overlapped by the Reducer's bucket hooks
    (torch/nn/parallel/distributed.py). AMP gradients are fp32: 4 bytes."""
    g = dp.grad_w or (4 if dp.mixed or dp.wide else 2)
    return [Collective("all-reduce", "gradients", dp.all_reduce(dp.trainable * g, dp.n), 1, "last backward",
                       True, "torch DDP under no_sync, bucketed all-reduce")]


def _megatron_dp_collectives(dp: _DPContext) -> list[Collective]:
    """Megatron DP (tensor/pipeline parallel layouts): one all-reduce of the fp32 main gradients per
    step after the last backward, not overlapped (Megatron-LM arguments.py: --overlap-grad-reduce
    defaults to False)."""
    return [Collective("all-reduce", "gradients", dp.all_reduce(dp.trainable * 4, dp.n), 1, "last backward",
                       False, "Megatron-LM DDP, fp32 main grads, --overlap-grad-reduce off")]


def _zero12_collectives(dp: _DPContext, bucket_allreduce: bool) -> list[Collective]:
    """DeepSpeed ZeRO-1/2 (stage_1_and_2.py): gradients are reduced with an all-reduce of each
    bucket (average_tensor: use_multi_rank_bucket_allreduce=True, the zero/config.py default
    since v0.12.4, PR #4695), each rank keeping its partition; ZeRO-1 only at the accumulation
    boundary, ZeRO-2 after every micro-batch's backward (engine.py allreduce_gradients: "ZeRO
    stage >= 2 communicates during non gradient accumulation boundaries as well";
    reduce_ready_partitions_and_remove_grads). overlap_comm defaults to False for stages 1-2
    (zero/config.py overlap_comm_valid); memlib's to_deepspeed_config and HF's ZeRO-2 example
    set it for stage 2, so ZeRO-2's reduction overlaps the backward and ZeRO-1's does not.
    After the optimizer step each rank's updated 16-bit partition is all-gathered once
    (step(): all_gather_dp_groups), before the next forward: not overlapped. DeepSpeed
    communicates in the model's 16-bit dtype."""
    w = 4 if dp.wide else 2
    every = dp.s.zero_stage == 2
    per_step, phase = (dp.m if every else 1), ("backward" if every else "last backward")
    when = " after every backward" if every else " at the accumulation boundary"
    if bucket_allreduce:
        red = Collective("all-reduce", "gradients", dp.all_reduce(dp.trainable * w, dp.n), per_step, phase, every,
                         "stage_1_and_2.py average_tensor, multi-rank bucket all-reduce" + when)
    else:
        red = Collective("reduce-scatter", "gradients", dp.reduce_scatter(dp.trainable * w, dp.n), per_step, phase,
                         every, "stage_1_and_2.py average_tensor, a reduce of each slice to its owner" + when)
    return [red, Collective("all-gather", "parameters", dp.all_gather(dp.trainable * w, dp.n), 1, "optimizer step",
                            False, "stage_1_and_2.py step(): all_gather_dp_groups of the updated 16-bit partitions")]


def _zero3_collectives(dp: _DPContext) -> list[Collective]:
    """DeepSpeed ZeRO-3 (stage3.py, partitioned_param_coordinator.py): parameters all-gathered in
    every micro-batch's forward (prefetched, overlapped) and again in its backward, except the
    ~DS_MAX_REUSE_DISTANCE / 2 parameters used last in the forward and first in the backward,
    which are kept; gradients reduce-scattered after every backward (__avg_scatter_grads:
    reduce_scatter_coalesced), overlapped (overlap_comm defaults to True for stage 3). All in 16 bits."""
    w = 4 if dp.wide else 2
    stored = dp.estimate.counts["param_bytes_unsharded"] // (4 if dp.wide else 2)  # elements of this slice
    kept = min(stored, DS_MAX_REUSE_DISTANCE // 2)
    return [
        Collective("all-gather", "parameters", dp.all_gather(stored * w, dp.n), dp.m, "forward", True,
                   "stage3.py fetch in every forward (prefetched)"),
        Collective("all-gather", "parameters", dp.all_gather((stored - kept) * w, dp.n), dp.m, "backward", True,
                   f"stage3.py fetch again in every backward, less {kept:.3g} kept (max_reuse_distance)"),
        Collective("reduce-scatter", "gradients", dp.reduce_scatter(dp.trainable * w, dp.n), dp.m, "backward", True,
                   "stage3.py __avg_scatter_grads after every backward")]


def _fsdp_adapter_collectives(dp: _DPContext) -> list[Collective]:
    """FSDP(-QLoRA): the frozen base is gathered as stored (NF4 packed in a 16-bit quant_storage for
    QLoRA) in every forward and again in every backward; the adapters' gradients reduce-scattered."""
    stored_bytes = dp.estimate.counts["param_bytes_unsharded"]
    return [
        Collective("all-gather", "parameters", dp.all_gather(stored_bytes, dp.n), dp.m, "forward", True,
                   "FSDP2 pre_forward unshard of the frozen base (Answer.AI fsdp_qlora)"),
        Collective("all-gather", "parameters", dp.all_gather(stored_bytes, dp.n), dp.m, "backward", True,
                   "FSDP2 pre_backward unshard"),
        Collective("reduce-scatter", "gradients", dp.reduce_scatter(dp.trainable * dp.grad_w, dp.n), dp.m,
                   "backward", True, "FSDP2 post_backward reduce-scatter of the adapters' gradients")]


def _fsdp_collectives(dp: _DPContext, full_shard: bool) -> list[Collective]:
    """FSDP2 (torch/distributed/fsdp/_fully_shard, torchtitan's recipe). FULL_SHARD:
    reshard_after_forward=True all-gathers each group in every forward (pre_forward) and again
    in the backward (pre_backward), except the root module, which lazy_init keeps unsharded
    after forward (_fsdp_state.py); post_backward reduce-scatters the gradients after every
    micro-batch (reduce_grads=True by default; torchtitan does not call
    set_requires_gradient_sync, pytorch/torchtitan#292, #1710). Gathers in the
    MixedPrecisionPolicy param_dtype (bf16), reduce-scatters in reduce_dtype (fp32 for
    "-mixed"). Overlapped (separate all-gather and reduce-scatter streams).
    SHARD_GRAD_OP (reshard_after_forward=False): one all-gather per micro-batch
    (reshard_after_backward=True frees the parameters after each backward), reduce-scatter
    after every backward."""
    s = dp.s
    gather_w = 4 if dp.wide else 2  # param_dtype: bf16/fp16 under the mixed-precision policy
    reduce_w = 4 if dp.mixed or dp.wide else 2  # reduce_dtype fp32 for "-mixed"
    stored = dp.estimate.counts["param_bytes_unsharded"] // PARAM_BYTES[s.precision]
    out = [Collective("all-gather", "parameters", dp.all_gather(stored * gather_w, dp.n), dp.m, "forward", True,
                      "FSDP2 pre_forward unshard")]
    if full_shard:
        from memlib.training.layout import layer_indices
        root = sum(t.numel * t.count for t in s.model.tensors()  # embeddings, final norm, head
                   if layer_indices(s.model, t) is None) // s.tp
        again = max(0, stored - root)
        out.append(Collective("all-gather", "parameters", dp.all_gather(again * gather_w, dp.n), dp.m, "backward",
                              True, "FSDP2 pre_backward unshard (the root stays unsharded after forward)"))
    out.append(Collective("reduce-scatter", "gradients", dp.reduce_scatter(dp.trainable * reduce_w, dp.n), dp.m,
                          "backward", True, "FSDP2 post_backward reduce-scatter every micro-batch"))
    return out


def _dp_time(collectives: list[Collective], bytes_per_s: float, m: int, fwd_s: float, bwd_s: float) -> tuple:
    """(total bytes, seconds on the link, exposed seconds) of one step under the stated overlap rule."""
    total = sum(c.bytes_per_gpu * c.per_step for c in collectives)
    if not collectives:
        return 0.0, 0.0, 0.0
    sec = {ph: 0.0 for ph in PHASES}  # hidden seconds per occurrence of each phase
    exposed = 0.0
    for c in collectives:
        t = c.bytes_per_gpu / bytes_per_s
        if c.hidden:
            sec[c.phase] += t  # per micro-batch for forward/backward, once for the others
        else:
            exposed += t * c.per_step
    per_mb = max(0.0, sec["forward"] - fwd_s)
    exposed += m * per_mb + (m - 1) * max(0.0, sec["backward"] - bwd_s)
    exposed += max(0.0, sec["backward"] + sec["last backward"] - bwd_s)  # the last micro-batch's backward
    exposed += sec["optimizer step"]
    return total, total / bytes_per_s, exposed


def zero_offload_traffic_bytes(partition_numel: int, micro_batches: int) -> int:
    """Host-link bytes per GPU per step of DeepSpeed's ZeRO-Offload (deepspeedai/DeepSpeed@7dee2e0
    runtime/zero/stage_1_and_2.py, copy_grads_in_partition): with k > 1 micro-batches each one's 16-bit gradient
    partition goes down to a pinned 16-bit CPU buffer except at the boundary, and comes back up to be added
    from the second micro-batch on (async_accumulate_grad_in_cpu_via_gpu); at the boundary the sum goes down in
    fp32 into the optimizer's gradient partition (async_inplace_copy_grad_to_fp32_buffer_from_gpu); the updated
    16-bit parameters come up once: 2 + 2(k-1) + 2(k-2) + 4 + 2 = 4k + 2 bytes per element (k = 1: 4 + 2)."""
    partition_numel = positive_int("partition_numel", partition_numel, allow_zero=True)
    k = positive_int("micro_batches", micro_batches)
    return (2 + 2 * (k - 1) + 2 * (k - 2) + 4 + 2) * partition_numel


@plain_args
def step_time(estimate, gpu, mfu: float | None = None, gpus_per_node: int = 8,
              internode_bytes_per_s: float = INTERNODE_BYTES_PER_S, nvme_bytes_per_s: float = NVME_BYTES_PER_S,
              cpu_adam_params_per_s: float = CPU_ADAM_PARAMS_PER_S, peak_tflops: float | None = None, *,
              hfu: float | None = None) -> StepTime:
    """Time of one optimizer step for a training estimate on `gpu`, and tokens/s per GPU.

    The compute's rate, one of (PaLM's definitions, Chowdhery et al. 2022, Sec. 4.1 and App. B):
    hfu=x: every FLOP the GPU executes (flops_per_token, the recomputed forward included) runs at x of
    the dense peak, so recompute shows as extra time; mfu=x: the compute reaches x model-FLOPs
    utilisation (model_flops_per_token: no recompute; 4N + attention for LoRA), i.e. HFU
    x · hardware / model FLOPs, which must not exceed 1. Neither: hfu=DEFAULT_HFU (0.4). Both: ValueError.
    The StepTime carries both (mfu, hfu) for the compute phase and achieved_mfu for the whole step.

    cpu_adam_params_per_s is the CPU-Adam rate of one node's CPUs (Ren et al. 2021 Table 2 measures
    a whole server), shared by the processes that offload on that node: each of the
    min(dp·tp·pp, gpus_per_node) processes updates its partition at rate / that count.
    The terms, each a function of its own: _compute_seconds (FLOPs and the pipeline bubble),
    _dp_time (the data-parallel collectives), _tp_pp_traffic, ep_all_to_all_bytes, _cp_traffic and
    _offload_traffic.
    """
    estimate = _training_estimate(estimate)
    gpu: GPU = get_gpu(gpu)
    gpus_per_node = positive_int("gpus_per_node", gpus_per_node)
    internode_bytes_per_s = bandwidth("internode_bytes_per_s", internode_bytes_per_s, maximum=MAX_BYTES_PER_S)
    nvme_bytes_per_s = bandwidth("nvme_bytes_per_s", nvme_bytes_per_s, maximum=MAX_BYTES_PER_S)
    cpu_adam_params_per_s = positive_float("cpu_adam_params_per_s", cpu_adam_params_per_s,
                                           maximum=MAX_PARAMS_PER_S, unit=" parameters/s")
    s = estimate.setup
    peak_tflops = _peak_tflops(s, gpu, peak_tflops)
    peak = positive_float("peak_tflops", peak_tflops, maximum=MAX_PEAK_TFLOPS, unit=" TFLOP/s") * 1e12
    n_gpus = s.dp * s.tp * s.pp * s.cp
    tokens = s.seq_len * s.micro_batch * s.grad_accum * s.dp
    fpt = flops_per_token(s.model, s.seq_len, s.recompute, s.finetune)  # hardware FLOPs
    model_fpt = model_flops_per_token(s.model, s.seq_len, s.finetune)
    mfu, hfu = utilisation(model_fpt, fpt, mfu, hfu)
    bubble, compute, fwd_s, bwd_s = _compute_seconds(s, fpt, tokens, n_gpus, peak * hfu)

    def link(group: int, stride: int) -> float:
        """Bandwidth of a group of `group` GPUs spaced `stride` apart: in-node or not."""
        return gpu.interconnect_bytes_per_s_per_direction if group * stride <= gpus_per_node else internode_bytes_per_s

    # data parallel: each scheme's collectives, per micro-batch or per step (dp_collectives)
    scheme, colls = dp_collectives(estimate)
    dp_bytes, dp_s, dp_exposed = _dp_time(colls, link(s.dp * s.cp, s.tp * s.pp), s.grad_accum, fwd_s, bwd_s)
    gather = sum(c.bytes_per_gpu * c.per_step for c in colls if c.of == "parameters")
    tp_bytes, tp_s, pp_bytes, pp_s = _tp_pp_traffic(s, link)
    # expert parallelism: the MoE layers' all-to-alls over the ep group (consecutive data-parallel ranks)
    ep_bytes = ep_all_to_all_bytes(estimate)
    ep_s = ep_bytes / link(s.ep, s.tp * s.pp) if ep_bytes else 0.0
    cp_bytes, cp_s, cp_exposed = _cp_traffic(estimate, link, peak * hfu)
    off_bytes, nvme_s, cpu_s, procs = _offload_traffic(estimate, min(n_gpus, gpus_per_node), nvme_bytes_per_s,
                                                       cpu_adam_params_per_s)
    off_s = off_bytes / gpu.host_link_bytes_per_s if off_bytes else 0.0  # no offload: no host link needed
    t = StepTime(fpt, tokens, compute, bubble, int(dp_bytes), dp_s, dp_exposed, int(tp_bytes), tp_s,
                 int(pp_bytes), pp_s, off_bytes, off_s, nvme_s, cpu_s, n_gpus,
                 dp_scheme=scheme, dp_collectives="\n".join(c.describe() for c in colls),
                 dp_gather_bytes=int(gather), dp_reduce_bytes=int(dp_bytes) - int(gather),
                 micro_batches=s.grad_accum, forward_s=fwd_s, backward_s=bwd_s, cpu_adam_processes_per_node=procs,
                 peak_flops=peak, mfu=mfu, ep_comm_bytes=int(ep_bytes), ep_comm_s=ep_s,
                 cp_comm_bytes=int(cp_bytes), cp_comm_s=cp_s, cp_exposed_s=cp_exposed,
                 model_flops_per_token=model_fpt, hfu=hfu)
    if not (0 < t.step_s < math.inf and t.tokens_per_s_per_gpu > 0):  # e.g. mfu=1e-300: no finite answer
        raise ValueError(f"these rates give a step time of {t.step_s!r} s; check mfu={mfu!r} (hfu={hfu!r}), "
                         f"peak_tflops={peak_tflops!r} and the link rates")
    return t


def _peak_tflops(s, gpu: GPU, peak_tflops):
    """The given peak, else the GPU's dense 16-bit tensor peak for the setup's precision."""
    if peak_tflops is not None:
        return peak_tflops
    if s.precision == "fp32":
        raise ValueError(f"the catalog has no fp32 throughput for {gpu.name}; pass peak_tflops=")
    peak_tflops = gpu.bf16_tflops if s.precision.startswith("bf16") else gpu.fp16_tflops
    if peak_tflops is None:
        raise ValueError(f"{gpu.name} has no bf16 tensor cores; use precision 'fp16-mixed' or pass peak_tflops=")
    return peak_tflops


def _compute_seconds(s, fpt: float, tokens: int, n_gpus: int, flops_per_s: float) -> tuple:
    """(bubble, compute seconds with the bubble, forward and backward seconds of one micro-batch).

    Pipeline bubble (p - 1) / (m + p - 1) (Narayanan et al. 2021, Sec. 2.2), and with v model chunks per GPU
    (interleaved 1F1B, vpp) the bubble time shrinks v-fold: (p - 1) / (v m + p - 1) of the step (Sec. 2.2.2); a
    device_map split runs the GPUs one after another: (p - 1) / p."""
    if s.sharding == "device_map":  # naive model parallelism: the GPUs work one after another
        bubble = (s.pp - 1) / s.pp
    else:
        bubble = (s.pp - 1) / (s.vpp * s.grad_accum + s.pp - 1)
    work = fpt * tokens / n_gpus / flops_per_s  # busy seconds per GPU, without the bubble
    compute = work / (1 - bubble)
    fwd_s = work / s.grad_accum * forward_flops_per_token(s.model, s.seq_len) / fpt
    bwd_s = work / s.grad_accum - fwd_s
    return bubble, compute, fwd_s, bwd_s


def _tp_pp_traffic(s, link) -> tuple:
    """(tensor-parallel bytes, seconds, pipeline bytes, seconds) of one step. Tensor parallel: 4
    all-reduces of this GPU's b·s·h activations per layer per micro-batch (Shoeybi et al. 2019
    Sec. 3), 6 with full recompute; pipeline: activations forward and gradients back per micro-batch."""
    m = s.model
    act_bytes = s.tokens_per_gpu * m.hidden_size * 2  # this GPU's tokens: seq_len / cp of each sequence
    layers_here = -(-m.num_layers // s.pp)
    per_layer = 6 if s.recompute == "full" else 4
    tp_bytes = _ring(act_bytes, s.tp) * per_layer * layers_here * s.grad_accum
    tp_s = tp_bytes / link(s.tp, 1) if s.tp > 1 else 0.0
    pp_bytes = 2 * act_bytes * s.grad_accum // s.tp if s.pp > 1 else 0
    pp_s = pp_bytes / link(2, s.tp) if s.pp > 1 else 0.0
    return tp_bytes, tp_s, pp_bytes, pp_s


def _cp_traffic(estimate, link, flops_per_s: float) -> tuple:
    """(bytes, seconds on the link, exposed seconds) of context parallelism in one step: ring
    attention's K/V and dK/dV, hidden behind the attention blocks' compute (cp_exposed_seconds)."""
    s = estimate.setup
    if s.cp == 1:
        return 0.0, 0.0, 0.0
    m = s.model
    layers_here = -(-m.num_layers // s.pp)
    cp_bw = link(s.cp, s.tp)  # torchtitan's mesh [pp, dp_replicate, dp_shard, cp, tp]: cp ranks tp apart
    attn_fwd_s = attention_flops_per_token(m, s.seq_len) / 3 * s.tokens_per_gpu / s.tp / flops_per_s
    cp_bytes = cp_kv_bytes(estimate) * layers_here * s.grad_accum
    cp_s = cp_bytes / cp_bw
    cp_exposed = cp_exposed_seconds(estimate, cp_bw, attn_fwd_s) * layers_here * s.grad_accum
    return cp_bytes, cp_s, cp_exposed


def _offload_traffic(estimate, procs: int, nvme_bytes_per_s: float, cpu_adam_params_per_s: float) -> tuple:
    """(host-link bytes, NVMe seconds, CPU-Adam seconds, offloading processes per node) of one step
    (ZeRO-Offload, Ren et al. 2021; ZeRO-Infinity; FSDP's CPU offload). `procs` is
    min(GPUs, gpus_per_node): the processes sharing one node's CPU-Adam rate."""
    s = estimate.setup
    if s.offload == "none":
        return 0, 0.0, 0.0, 0
    part = estimate.counts["trainable"] // s.dp
    # DeepSpeed's gradient round trips per micro-batch and the 16-bit parameters up once per step
    off_bytes = zero_offload_traffic_bytes(part, s.grad_accum)
    if s.offload == "optimizer+params":  # fetched for every micro-batch's forward and backward
        off_bytes += 2 * 2 * part * s.grad_accum
    if s.sharding == "fsdp":  # FSDP's CPU offload: every shard (frozen ones too) up for the forward's and the
        # backward's all-gather of every micro-batch, every gradient shard down (in the parameters' dtype)
        c = estimate.counts
        off_bytes = s.grad_accum * (2 * c["param_bytes_unsharded"] // s.dp + c["grad_bytes_unsharded"] // s.dp)
    cpu_s = part / (cpu_adam_params_per_s / procs)  # CPU-Adam: one node's rate shared by its processes
    if s.sharding == "fsdp":  # torch's CPU AdamW, not DeepSpeed's CPU-Adam
        cpu_s *= TORCH_CPU_ADAM_SLOWDOWN
    nvme_s = 0.0
    if s.offload_device == "nvme":  # the optimizer states stream through: read and write once
        nvme_s = 2 * estimate.nvme_bytes / nvme_bytes_per_s
    return off_bytes, nvme_s, cpu_s, procs
