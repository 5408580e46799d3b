"""Exercises for notebook 10: when does communication bind? What a ring all-reduce sends and how long it takes,
why DDP buckets, the communication roofline of data parallelism, FSDP and tensor parallelism, what a 10 GbE link
can still do, the pipeline schedules' bubbles and memory, context parallelism's causal balance, and a seed's
communication-volume claims. Every setup differs from the ones notebook 10 prints."""

from __future__ import annotations


from memlib.cost.collectives import (DDP_BUCKET_CAP_BYTES, bytes_sent, collective_seconds, comm_roofline,
                                     link_bytes_per_s)
from memlib.cost.timing import flops_per_token, step_time
from memlib.hardware.gpus import get_gpu
from memlib.learn.exercises._common import n_params
from memlib.learn.exercises.kinds import Choice, Figure, Implement, Numeric, Option, SelfAssessed, Slip, SpotError
from memlib.learn import mechanisms as mech
from memlib.models import get_model
from memlib.parallel.pipeline import bubble_fraction
from memlib.training import estimate_training
from memlib.training.lora import lora_params

NOTEBOOK = "10_communication"
_70B, _8B, _13B, _H100 = "llama-3.1-70b", "llama-3.1-8b", "llama-2-13b", "h100-80gb"
_SEQ = 4096
_IB, _E100, _E10 = link_bytes_per_s("IB NDR"), link_bytes_per_s("100GbE"), link_bytes_per_s("10GbE")
_NVLINK = get_gpu(_H100).interconnect_bytes_per_s_per_direction
_PEAK = get_gpu(_H100).bf16_tflops * 1e12


def _g(x: float) -> str:
    return f"{x / 1e9:,.1f} GB"


# --- 10.1, 10.2: a 70B's gradients over 16 GPUs ------------------------------------------------------------
_AR_GPUS, _AR_ALPHA = 16, 10e-6


def _grad_bytes(width: int = 2) -> float:
    return width * n_params(_70B)


def _ar_sent() -> float:
    return bytes_sent("all-reduce", _grad_bytes(), _AR_GPUS)


def _ar_s(beta: float = _IB, nbytes: float | None = None) -> float:
    return collective_seconds("all-reduce", _grad_bytes() if nbytes is None else nbytes, _AR_GPUS, beta, _AR_ALPHA)


# --- 10.3: a DDP bucket across 64 GPUs ---------------------------------------------------------------------
_B_GPUS, _B_ALPHA = 64, 20e-6


def _bucket_share(nbytes: float = DDP_BUCKET_CAP_BYTES, alpha: float = _B_ALPHA) -> float:
    """% of a ring all-reduce's time spent moving bytes (the rest is latency)."""
    t = collective_seconds("all-reduce", nbytes, _B_GPUS, _IB, alpha)
    return 100 * (bytes_sent("all-reduce", nbytes, _B_GPUS) / _IB) / t


# --- 10.4, 10.5, 10.6: the roofline ------------------------------------------------------------------------
def _dp70(**kw) -> float:
    return comm_roofline(_70B, _H100, "dp", 32, bytes_per_s=kw.pop("beta", _IB), **kw).critical_tokens


def _fsdp8(beta: float = _E100, **kw) -> float:
    return comm_roofline(_8B, _H100, "fsdp", 16, bytes_per_s=beta, **kw).critical_tokens


def _tp70(**kw) -> float:
    return comm_roofline(_70B, _H100, "tp", 8, bytes_per_s=kw.pop("beta", None), **kw).comm_to_compute


# --- 10.7: what runs over 10 GbE ---------------------------------------------------------------------------
_ETH_TOKENS = 8192  # per GPU per step


def _eth_ratios() -> dict[str, float]:
    """Communication over compute at 8,192 tokens per GPU per step, Llama-3.1-8B over 2 nodes joined by 10 GbE."""
    m = get_model(_8B)
    lora = 2 * lora_params(m, 16, "all-linear")  # bf16 adapter gradients
    lora_comm = bytes_sent("all-reduce", lora, 16) / _E10
    lora_compute = flops_per_token(m, _SEQ, finetune="lora") * _ETH_TOKENS / _PEAK
    return {"a": lora_comm / lora_compute,
            "b": comm_roofline(m, _H100, "dp", 16, bytes_per_s=_E10).ratio(_ETH_TOKENS),
            "c": comm_roofline(m, _H100, "tp", 2, bytes_per_s=_E10).ratio(_ETH_TOKENS),
            "d": comm_roofline(m, _H100, "fsdp", 16, bytes_per_s=_E10).ratio(_ETH_TOKENS)}


def _eth_right() -> str:
    ok = sorted(k for k, r in _eth_ratios().items() if r < 1)
    if len(ok) != 1:
        raise RuntimeError(f"expected exactly one compute-bound option, memlib says {ok}: update the exercise")
    return ok[0]


# --- 10.8 - 10.11: pipelines ----------------------------------------------------------------------------
def _bubble(p: int, m: int, v: int = 1) -> float:
    return 100 * float(bubble_fraction(p, m, v))


def _m_for(target: float, p: int = 16, form=None) -> int:
    """The fewest micro-batches whose 1F1B bubble is at most `target` (a fraction)."""
    form = form or (lambda m: float(bubble_fraction(p, m)))
    m = 1
    while form(m) > target:
        m += 1
    return m


_PP_M = 12


def _pp_act(schedule: str = "1f1b", stage: int = 0) -> float:
    s = mech.pipeline_schedule(schedule, 4, _PP_M, model=_13B, seq_len=2048, micro_batch=1)
    return float(s.peak_activation_bytes[stage])


def _zb(p: int = 8, m: int = 24, t_w: float = 1.0) -> float:
    s = mech.pipeline_schedule("zb-h1", p, m, t_b=1, t_w=t_w)
    return 100 * s.bubble_fraction


def _1f1b_split(p: int = 8, m: int = 24) -> float:
    """1F1B with the same passes (F = 1, B + W = 2): what ZB-H1 improves on."""
    return 100 * mech.pipeline_schedule("1f1b", p, m).bubble_fraction


# --- 10.12: context parallelism ------------------------------------------------------------------------------
def _cp(zigzag: bool = False) -> float:
    return mech.context_parallel_balance(32768, 8, zigzag=zigzag).imbalance


def _cp_max_min() -> float:
    w = mech.context_parallel_balance(32768, 8, zigzag=False).work
    return max(w) / min(w)


# --- 10.13: a pipeline boundary's traffic ----------------------------------------------------------------------
def _pp_bytes(micro_batch: int = 1) -> float:
    """Bytes one pipeline boundary carries per micro-batch: activations forward and their gradients back
    (memlib.step_time's pp_comm_bytes, one micro-batch, two stages)."""
    est = estimate_training(_70B, seq_len=_SEQ, micro_batch=micro_batch, pp=2, grad_accum=1)
    return float(step_time(est, _H100).pp_comm_bytes)


EXERCISES = [
    Numeric(
        id="10.1", title="What a ring all-reduce sends", difficulty="warm-up", minutes=4,
        formula="ring all-reduce: each GPU sends 2(n-1)/n of the tensor (Patarasuk & Yuan 2009; "
                "memlib.cost.collectives.bytes_sent)",
        prompt=f"Llama-3.1-70B's gradients are all-reduced in bf16 over {_AR_GPUS} GPUs with a ring. How many GB "
               f"does **each GPU** send? (Exact parameter count: `memlib.get_model('llama-3.1-70b').num_params`.)",
        expected=_ar_sent, unit="GB", tolerance=0.02,
        slips=(Slip("the tensor once", lambda: bytes_sent("reduce-scatter", _grad_bytes(), _AR_GPUS),
                    "that is a reduce-scatter alone; an all-reduce is a reduce-scatter then an all-gather"),
               Slip("2B flat", lambda: 2 * _grad_bytes(),
                    "each GPU keeps its own 1/n of every pass: it sends 2(n-1)/n of the tensor, not twice all of it"),
               Slip("fp32 gradients", lambda: bytes_sent("all-reduce", _grad_bytes(4), _AR_GPUS),
                    "the question reduces bf16 gradients: 2 bytes per parameter"),
               Slip("the tensor", lambda: _grad_bytes(),
                    "that is the gradients' size; the ring sends almost twice it")),
        hints=("An all-reduce is a reduce-scatter followed by an all-gather; in a ring each passes n-1 slices of "
               "1/n of the tensor.",
               "bytes sent = 2 (n - 1) / n × 2 bytes × N.",
               "Compute the bf16 gradients first: 2 × num_params bytes."),
        worked=lambda: (f"2 × {n_params(_70B):,} = {_g(_grad_bytes())} of gradients; 2 × 15/16 of it: "
                        f"**{_g(_ar_sent())}** per GPU (`memlib.cost.collectives.bytes_sent`)."),
    ),
    Numeric(
        id="10.2", title="How long, across two nodes?", difficulty="interview", minutes=6,
        formula="alpha-beta: 2(n-1) alpha + 2(n-1)/n B / beta (Thakur et al. 2005; "
                "memlib.cost.collectives.collective_seconds)",
        prompt=f"The same all-reduce (Llama-3.1-70B, bf16 gradients, ring over {_AR_GPUS} H100s) runs on two nodes "
               f"of 8, joined by one 400 Gb/s InfiniBand port per GPU; the ring crosses the network, so its slowest "
               f"hop is 400 Gb/s. Take a latency of {_AR_ALPHA * 1e6:g} µs per step. How many seconds does it take?",
        expected=_ar_s, unit="s", tolerance=0.03,
        slips=(Slip("bits as bytes", lambda: _ar_s(400e9),
                    "400 Gb/s is gigabits: 50 GB/s, not 400 GB/s"),
               Slip("NVLink", lambda: _ar_s(_NVLINK),
                    "NVLink joins the GPUs of one node; the ring's hops between nodes run at the network's speed"),
               Slip("tensor once", lambda: _ar_s(_IB, _grad_bytes() / 2),
                    "each GPU sends 2(n-1)/n of the tensor, almost twice it, not (n-1)/n")),
        hints=("A ring is as fast as its slowest hop.",
               "t = 2(n-1) α + 2(n-1)/n × B / β, β in bytes per second.",
               "Convert 400 Gb/s to bytes per second first: divide by 8."),
        worked=lambda: (f"2 × 15 × {_AR_ALPHA * 1e6:g} µs + {_g(_ar_sent())} / 50 GB/s = **{_ar_s():.2f} s** "
                        f"(`collective_seconds`); inside one node on NVLink it would take {_ar_s(_NVLINK):.3f} s."),
    ),
    Numeric(
        id="10.3", title="Is a DDP bucket latency-bound across 64 GPUs?", difficulty="interview", minutes=6,
        formula="share of a ring all-reduce spent on bandwidth: (2(n-1)/n B / beta) / (2(n-1) alpha + 2(n-1)/n B "
                "/ beta) (memlib.cost.collectives.collective_seconds)",
        prompt=f"DDP all-reduces gradients in buckets of 25 MiB (torch's default bucket_cap_mb). Over {_B_GPUS} GPUs "
               f"on 400 Gb/s InfiniBand with {_B_ALPHA * 1e6:g} µs of latency per ring step, what percentage of one "
               f"bucket's all-reduce time is spent moving bytes (the rest is latency)?",
        expected=_bucket_share, unit="%", tolerance=0.03,
        slips=(Slip("latency share", lambda: 100 - _bucket_share(),
                    "that is the latency's share; the question asks for the bandwidth's"),
               Slip("one latency", lambda: _bucket_share(alpha=_B_ALPHA / (2 * (_B_GPUS - 1))),
                    "a ring pays the latency at each of its 2(n-1) steps, not once")),
        hints=("Latency is paid per step; a ring has 2(n-1) steps however small the message.",
               "share = (2(n-1)/n × B/β) / (2(n-1) α + 2(n-1)/n × B/β).",
               "Compute the latency part first: 2 × 63 × 20 µs."),
        worked=lambda: (f"latency {2 * (_B_GPUS - 1) * _B_ALPHA * 1e3:.2f} ms, bytes "
                        f"{bytes_sent('all-reduce', DDP_BUCKET_CAP_BYTES, _B_GPUS) / _IB * 1e3:.2f} ms: "
                        f"**{_bucket_share():.0f}%** on bandwidth. At this scale the latency is a large part: larger "
                        f"buckets or NCCL's tree help."),
    ),
    Numeric(
        id="10.4", title="The data-parallel roofline of a 70B", difficulty="interview", minutes=8,
        formula="critical tokens = (all-reduce bytes / beta) x peak / FLOPs per token (memlib.cost.collectives."
                "comm_roofline)",
        prompt="Llama-3.1-70B trains with plain data parallelism (DDP, bf16 gradients, one all-reduce per step) over "
               "32 H100s in 4 nodes, 400 Gb/s InfiniBand per GPU. At the dense bf16 peak, and with FLOPs per token "
               "6N + 12·L·H·Q·T at 4,096-token sequences (`memlib.cost.timing.flops_per_token`), how many tokens "
               "must each GPU compute per optimizer step for the computation to last as long as the all-reduce?",
        expected=_dp70, unit="count", tolerance=0.03,
        slips=(Slip("NVLink", lambda: _dp70(beta=_NVLINK),
                    "the ring crosses nodes: its slow hops run on InfiniBand, not NVLink"),
               Slip("fp32 gradients", lambda: _dp70(grad_bytes=4),
                    "the question reduces bf16 gradients, 2 bytes per parameter"),
               Slip("backward only", lambda: 1.5 * _dp70(),
                    "that hides the all-reduce behind the backward alone; the question compares with the whole step"),
               Slip("bits as bytes", lambda: _dp70(beta=400e9), "400 Gb/s is 50 GB/s")),
        hints=("The gradients' traffic is fixed per step; the compute grows with the tokens: find where they meet.",
               "tokens = [2(n-1)/n × 2N / β] × peak / (6N + 12·L·H·Q·T).",
               "Compute the all-reduce's seconds first: 2 × 31/32 × 2N bytes at 50 GB/s."),
        worked=lambda: (f"{bytes_sent('all-reduce', 2 * n_params(_70B), 32) / _IB:.2f} s of all-reduce × "
                        f"{_PEAK:.4g} FLOP/s / {flops_per_token(_70B, _SEQ):.4g} FLOPs per token = "
                        f"**{_dp70():,.0f} tokens** per GPU per step (`comm_roofline`): about "
                        f"{_dp70() / _SEQ:.1f} sequences of 4k, independent of the model's size to first order "
                        f"(both sides scale with N)."),
    ),
    Numeric(
        id="10.5", title="FSDP over 100 GbE", difficulty="stretch", minutes=8,
        formula="FSDP per micro-batch: 2 all-gathers + 1 reduce-scatter, (n-1)/n x 2N each (Rajbhandari et al. 2020, "
                "Sec. 7.2.2; memlib.cost.collectives.comm_roofline)",
        prompt="Llama-3.1-8B trains with FSDP (FULL_SHARD, bf16 parameters gathered, bf16 gradients reduce-scattered) "
               "over 16 H100s in two nodes joined by 100 Gb/s Ethernet per GPU. FSDP gathers the parameters again for "
               "every micro-batch. At the dense peak (FLOPs per token at 4,096 tokens from "
               "`memlib.cost.timing.flops_per_token`), how many tokens must each GPU compute **per micro-batch** for "
               "the compute to last as long as the communication?",
        expected=_fsdp8, unit="count", tolerance=0.03,
        slips=(Slip("DDP's volume", lambda: _fsdp8() / 1.5,
                    "that is one all-reduce's traffic (one gather and one reduce-scatter); FSDP gathers the "
                    "parameters in the forward and again in the backward, then reduce-scatters the gradients"),
               Slip("bits as bytes", lambda: _fsdp8(100e9), "100 Gb/s is 12.5 GB/s")),
        hints=("FSDP's traffic is per micro-batch, so gradient accumulation does not amortise it.",
               "tokens = [3 × (n-1)/n × 2N / β] × peak / FLOPs per token.",
               "β = 100e9 / 8 bytes per second; N = memlib.get_model('llama-3.1-8b').num_params."),
        worked=lambda: (f"3 × 15/16 × {_g(2 * n_params(_8B))} = {_g(1.5 * bytes_sent('all-reduce', 2 * n_params(_8B), 16))}"
                        f" per micro-batch at 12.5 GB/s; **{_fsdp8():,.0f} tokens** per GPU per micro-batch "
                        f"(`comm_roofline`): across 100 GbE, FSDP needs long sequences or large micro-batches."),
    ),
    Numeric(
        id="10.6", title="Tensor parallelism of a 70B in one node", difficulty="interview", minutes=8,
        formula="TP per token per layer: 4 all-reduces of h x 2 bytes against 6 x layer FLOPs / t (Shoeybi et al. "
                "2019; memlib.cost.collectives.comm_roofline)",
        prompt="Llama-3.1-70B with Megatron tensor parallelism over the 8 H100s of one node (NVLink 4, 450 GB/s each "
               "way): each layer all-reduces its bf16 hidden vector (h values per token) twice in the forward and twice "
               "in the backward. At the dense peak, what is communication time over compute time (FLOPs per token "
               "at 4,096 tokens, `memlib.cost.timing.flops_per_token`, split over the 8 GPUs)? Answer as a ratio like "
               "`\"0.45x\"`.",
        expected=_tp70, unit="x", tolerance=0.03,
        slips=(Slip("forward only", lambda: _tp70() / 2,
                    "the backward all-reduces the activations' gradients too: 4 per layer, not 2"),
               Slip("compute not split", lambda: _tp70() / 8,
                    "each GPU computes 1/8 of every layer: divide the FLOPs by the TP degree")),
        hints=("Both the traffic and the compute grow with the tokens, so the ratio does not depend on the batch.",
               "ratio = [L × 4 × 2(t-1)/t × 2h / β] / [FLOPs per token / t / peak].",
               "Do it per token: the bytes one token sends, and the seconds its share of compute takes."),
        worked=lambda: (f"**{_tp70():.2f}x** (`comm_roofline`): that much time again on all-reduces inside the "
                        f"node unless they overlap the matmuls; across InfiniBand the same split would be "
                        f"{_tp70(beta=_IB):.1f}x."),
    ),
    Choice(
        id="10.7", title="What still runs over 10 GbE?", difficulty="interview", minutes=8,
        formula="communication over compute < 1 (memlib.cost.collectives.comm_roofline)",
        prompt="Two nodes of 8 H100s are joined only by 10 Gb/s Ethernet per GPU. You train Llama-3.1-8B with "
               f"{_ETH_TOKENS:,} tokens per GPU per step (two 4k sequences, no accumulation), bf16 communication, at "
               "the dense peak. Which one is compute-bound (communication shorter than compute)?",
        options=(Option("a", "LoRA rank 16 on every projection, adapters' gradients all-reduced over all 16 GPUs",
                        lambda: f"the adapters are {2 * lora_params(get_model(_8B), 16, 'all-linear') / 1e6:.0f} MB "
                                f"of gradients: communication is {_eth_ratios()['a']:.2f}x the compute", "1"),
                 Option("b", "Full fine-tuning with DDP over all 16 GPUs",
                        lambda: f"{_eth_ratios()['b']:.0f}x the compute: the gradients are 16 GB per step",
                        misconception="communication is a fixed overhead that a fast GPU hides"),
                 Option("c", "Tensor parallelism over 2 GPUs, one in each node",
                        lambda: f"{_eth_ratios()['c']:.0f}x: its traffic grows with the tokens",
                        misconception="tensor parallelism moves little data because it splits the model"),
                 Option("d", "FSDP over all 16 GPUs",
                        lambda: f"{_eth_ratios()['d']:.0f}x: 1.5 times DDP's traffic, every micro-batch",
                        misconception="sharding reduces communication as it reduces memory")),
        reasons=(Option("1", "only the trainable parameters' gradients cross the network, a few tens of MB"),
                 Option("2", "Ethernet is as fast as InfiniBand for large messages",
                        "10 Gb/s is 1.25 GB/s, forty times less than one 400 Gb/s port"),
                 Option("3", "a frozen base needs no forward pass",
                        "LoRA runs the whole forward and backward; it skips only the base weights' gradients")),
        right=_eth_right,
        hints=("Compare each scheme's seconds of communication with its seconds of compute at 8k tokens per GPU.",
               "DDP: 2(n-1)/n × 2N / β against FLOPs per token × tokens / peak; LoRA: the adapters' parameters only.",
               "β = 10e9 / 8 = 1.25e9 bytes per second: start with the full gradients' 16 GB."),
        worked=lambda: ("Communication over compute at 8k tokens per GPU: "
                        + ", ".join(f"({k}) {v:.2f}x" for k, v in _eth_ratios().items())
                        + f". Only **({_eth_right()})** is compute-bound: LoRA all-reduces the adapters alone."),
    ),
    Numeric(
        id="10.8", title="An interleaved pipeline's bubble", difficulty="warm-up", minutes=4,
        formula="interleaved 1F1B bubble (p-1)/(v m + p-1) (Narayanan et al. 2021, Sec. 2.2.2; "
                "memlib.parallel.pipeline.bubble_fraction)",
        prompt="A pipeline of 8 stages runs Megatron's interleaved 1F1B with 3 model chunks per GPU and 32 "
               "micro-batches per step. What percentage of the step is bubble (idle)?",
        expected=lambda: _bubble(8, 32, 3), unit="%", tolerance=0.02,
        slips=(Slip("not interleaved", lambda: _bubble(8, 32),
                    "that is plain 1F1B; interleaving with v chunks divides the bubble time by v"),
               Slip("over the ideal time", lambda: 100 * 7 / (3 * 32),
                    "(p-1)/(v m) is the bubble over the ideal (busy) time; as a share of the step it is "
                    "(p-1)/(v m + p-1)")),
        hints=("The bubble is the fill and drain of the pipeline; interleaving makes each fill v times shorter.",
               "share = (p - 1) / (v · m + p - 1).",
               "Here p - 1 = 7 and v · m = 96."),
        worked=lambda: (f"7 / (3 × 32 + 7) = **{_bubble(8, 32, 3):.1f}%** (`bubble_fraction`), against "
                        f"{_bubble(8, 32):.1f}% without interleaving; `memlib.learn.mechanisms.pipeline_schedule` "
                        f"measures the same on the simulated timeline."),
    ),
    Numeric(
        id="10.9", title="How many micro-batches for a 5% bubble?", difficulty="interview", minutes=5,
        formula="1F1B bubble (p-1)/(m+p-1) <= target (Narayanan et al. 2021, Sec. 2.2.1)",
        prompt="A 16-stage 1F1B pipeline (no interleaving). What is the fewest micro-batches per step that keeps the "
               "bubble at or below 5% of the step? Give a count.",
        expected=lambda: float(_m_for(0.05)), unit="count", tolerance=0.0, abs_tol=0.5,
        slips=(Slip("over the ideal time", lambda: float(_m_for(0.05, form=lambda m: 15 / m)),
                    "(p-1)/m is the bubble over the busy time; as a share of the step it is (p-1)/(m+p-1)"),
               Slip("p instead of p - 1", lambda: float(_m_for(0.05, form=lambda m: 16 / (m + 16))),
                    "the bubble is p - 1 fill steps, not p")),
        hints=("More micro-batches amortise the same fill and drain.",
               "(p - 1) / (m + p - 1) <= 0.05, so m >= 19 (p - 1).",
               "Solve for m with p - 1 = 15."),
        worked=lambda: (f"15 / (m + 15) <= 0.05 gives m >= 19 × 15: **{_m_for(0.05)}** micro-batches. Each holds "
                        f"activations only while in flight (at most p on the first stage under 1F1B), so the "
                        f"price is the global batch, not memory."),
    ),
    Numeric(
        id="10.10", title="Activations on 1F1B's first stage", difficulty="stretch", minutes=10,
        formula="1F1B keeps min(p - i, m) micro-batches in flight on stage i (Narayanan et al. 2021; "
                "memlib.learn.mechanisms.pipeline_schedule)",
        prompt=f"Llama-2-13B (40 layers) trains on a 4-stage 1F1B pipeline, 10 layers per stage, {_PP_M} micro-batches of "
               "one 2,048-token sequence, memlib's defaults otherwise (bf16-mixed, sdpa, no recompute). One layer's "
               "saved activations for one micro-batch are `memlib.estimate_training('llama-2-13b', seq_len=2048, "
               f"micro_batch=1, pp=4, grad_accum={_PP_M}).layer.total` bytes. How many GB of activations does the **first** "
               "stage hold at its peak?",
        expected=_pp_act, unit="GB", tolerance=0.02,
        slips=(Slip("GPipe", lambda: _pp_act("gpipe"),
                    f"GPipe keeps all {_PP_M} micro-batches until the backward starts; 1F1B starts each backward as soon "
                    "as the last stage allows"),
               Slip("last stage", lambda: _pp_act("1f1b", 3),
                    "the last stage holds one micro-batch; the first holds p"),
               Slip("whole model", lambda: 4 * _pp_act(),
                    "a stage holds its own 10 layers, not all 40")),
        hints=("Under 1F1B the first stage has started p forwards before its first backward can run.",
               "peak = min(p, m) × layers per stage × one layer's activations.",
               "Get one layer's bytes from the estimate's .layer.total, then multiply by 10 layers."),
        worked=lambda: (f"4 micro-batches × 10 layers × {mech.pipeline_schedule('1f1b', 4, _PP_M, model=_13B, seq_len=2048, micro_batch=1).activation_bytes_per_chunk / 10 / 1e6:,.0f} MB = "
                        f"**{_pp_act() / 1e9:.1f} GB** (`pipeline_schedule(...).peak_activation_bytes[0]`); GPipe "
                        f"would hold {_pp_act('gpipe') / 1e9:.1f} GB."),
    ),
    Numeric(
        id="10.11", title="ZB-H1's bubble", difficulty="interview", minutes=6,
        formula="ZB-H1 bubble (p-1)(t_F + t_B - t_W) (Qi et al. 2024, Sec. 3.1; "
                "memlib.learn.mechanisms.pipeline_schedule)",
        prompt="An 8-stage pipeline with 24 micro-batches. A forward (F), an input-gradient backward (B) and a "
               "weight-gradient backward (W) each take one time unit. ZB-H1 runs 1F1B's order but defers the W passes "
               "into the idle slots, at 1F1B's peak memory. What percentage of the step is bubble?",
        expected=_zb, unit="%", tolerance=0.02,
        slips=(Slip("1F1B", _1f1b_split, "that is 1F1B's bubble with B and W run together: (p-1)(F+B+W)"),
               Slip("zero", lambda: 0.0, "ZB-H1 fills only part of the bubble; the zero-bubble schedules need more "
                                         "memory (ZB-H2) or two chunks (ZB-V)")),
        hints=("W does not block the previous stage, so it can wait and fill the gaps.",
               "idle per stage (p - 1)(F + B - W); share = idle / (m (F + B + W) + idle).",
               "Here the idle time is 7 units and the work 72."),
        worked=lambda: (f"7 × (1 + 1 - 1) = 7 idle units against 24 × 3 = 72 of work: **{_zb():.1f}%** "
                        f"(the simulated timeline gives the same), against 1F1B's {_1f1b_split():.1f}%."),
    ),
    Numeric(
        id="10.12", title="Causal work without the zigzag", difficulty="interview", minutes=8,
        formula="causal (query, key) pairs per rank; zigzag: rank i holds chunks i and 2cp-1-i "
                "(memlib.learn.mechanisms.context_parallel_balance)",
        prompt="Ring attention splits a 32,768-token causal sequence over 8 GPUs, each holding one contiguous eighth "
               "(no load balancing). The step waits for the busiest GPU. How many times the mean attention work does "
               "the busiest GPU do? Answer like `\"1.3x\"`.",
        expected=_cp, unit="x", tolerance=0.02,
        slips=(Slip("busiest over least", _cp_max_min,
                    "that compares the busiest with the least busy; the step's loss is the busiest over the mean"),
               Slip("zigzag", lambda: _cp(True), "that is the balanced split; this one is contiguous")),
        hints=("With a causal mask a query attends only to earlier keys: the last GPU's queries see the most.",
               "query chunk j of c tokens scores c²·j + c(c+1)/2 pairs; the busiest GPU's two chunks over the mean.",
               "Mean work = all causal pairs / 8 = 32768 × 32769 / 2 / 8."),
        worked=lambda: (f"**{_cp():.2f}x** (`context_parallel_balance(32768, 8, zigzag=False)`): the last GPU computes "
                        f"almost twice the mean, the first almost nothing. With chunks i and 2cp-1-i every GPU does "
                        f"the mean ({_cp(True):.2f}x)."),
    ),
    Numeric(
        id="10.13", title="Is pipeline traffic O(1)?", difficulty="interview", minutes=6,
        formula="pipeline traffic per boundary per micro-batch: activations forward and gradients back, b·s·h each "
                "(memlib.step_time's pp_comm_bytes)",
        prompt="A circulating answer (seed 003, 模型放不下怎么办) says: \"PP 是层并行，通信量 O(1)，适合跨机\" (pipeline "
               "parallelism's communication is O(1), so it suits links between nodes). The conclusion holds; the "
               "order does not. How many MB does one pipeline boundary carry per micro-batch, activations forward plus "
               "their gradients back in bf16, for Llama-3.1-70B with micro-batches of one 4,096-token sequence?",
        expected=_pp_bytes, unit="GB", tolerance=0.02,
        slips=(Slip("forward only", lambda: _pp_bytes() / 2,
                    "the backward sends the activations' gradients back across the same boundary"),
               Slip("fp32", lambda: 2 * _pp_bytes(), "the activations cross in bf16, 2 bytes each"),
               Slip("every layer", lambda: get_model(_70B).num_layers * _pp_bytes(),
                    "only the stage boundary sends: the layers inside a stage hand activations over in memory")),
        hints=("A pipeline stage hands the next one its output activations, and gets their gradients back.",
               "per micro-batch: 2 × b × s × h × 2 bytes: O(b·s·h), not O(1).",
               "h = memlib.get_model('llama-3.1-70b').hidden_size."),
        worked=lambda: (f"2 × 4,096 × {get_model(_70B).hidden_size:,} × 2 bytes = **{_pp_bytes() / 1e6:,.0f} MB** per "
                        f"micro-batch (`step_time(...).pp_comm_bytes`): not O(1), but small against ZeRO-3's "
                        f"{_g(1.5 * bytes_sent('all-reduce', 2 * n_params(_70B), 8))} per micro-batch over 8 GPUs, "
                        f"which is why pipelines cross nodes and tensor parallelism stays inside them."),
    ),
    SpotError(
        id="10.14", title="Which link joins the nodes?", difficulty="interview", minutes=8,
        formula="ring all-reduce time 2(n-1)/n B / beta on the slowest hop (memlib.cost.collectives."
                "collective_seconds)",
        prompt="A circulating answer on training across two DGX A100 nodes names the links that limit it. Find the "
               "error, then give the time of one ring all-reduce of Llama-2-13B's bf16 gradients over the 16 GPUs of "
               "two DGX A100 nodes, whose nodes are joined by one 200 Gb/s InfiniBand HDR port per GPU (leave the "
               "latency out).",
        quote="但跨节点通信（A100 NVLink 600GB/s）和CPU-GPU带宽（PCIe 4.0 x16约32GB/s）会成为瓶颈",
        source="seed 000 (4×V100 能否训练 Vicuna-65B), 追问: 换成 A100 80GB",
        figures=(Figure("600GB/s", "error", "NVLink joins the GPUs inside a node (600 GB/s both ways); between nodes "
                                            "each GPU has a 200 Gb/s port, 25 GB/s each way"),
                 Figure("32GB/s", "right", "PCIe 4.0 x16 carries 32 GB/s each way: the host link, for offload")),
        expected=lambda: collective_seconds("all-reduce", 2 * n_params(_13B), 16, link_bytes_per_s("IB HDR")),
        unit="s",
        slips=(Slip("NVLink", lambda: collective_seconds("all-reduce", 2 * n_params(_13B), 16, 600e9),
                    "NVLink does not leave the node: the ring's hops between nodes run at 25 GB/s"),
               Slip("bits as bytes", lambda: collective_seconds("all-reduce", 2 * n_params(_13B), 16, 200e9),
                    "200 Gb/s is gigabits: 25 GB/s"),
               Slip("PCIe", lambda: collective_seconds("all-reduce", 2 * n_params(_13B), 16, 32e9),
                    "PCIe joins a GPU to its host; the network card's port is what crosses nodes")),
        hints=("Inside a node GPUs talk over NVLink; between nodes over the network card, one port per GPU.",
               "t = 2 (n - 1) / n × B / β, β the slowest hop in bytes per second.",
               "200 Gb/s / 8 = 25 GB/s; B = 2 × num_params bytes."),
        worked=lambda: (f"2 × 15/16 × {_g(2 * n_params(_13B))} / 25 GB/s = **"
                        f"{collective_seconds('all-reduce', 2 * n_params(_13B), 16, link_bytes_per_s('IB HDR')):.2f} s**"
                        f" (`collective_seconds`). **600GB/s** is the error: it is NVLink inside a node; a ring over "
                        f"two nodes runs at the network's 25 GB/s per GPU, {600 / 25:.0f}× slower."),
    ),
    Implement(
        id="10.15", title="A ring all-reduce's time", difficulty="stretch", minutes=10,
        formula="ring all-reduce 2(n-1) alpha + 2(n-1)/n B / beta (Thakur et al. 2005; "
                "memlib.cost.collectives.collective_seconds)",
        prompt="Write `ring_all_reduce_seconds(nbytes, n, bytes_per_s, alpha_s)`: the time of a ring all-reduce of a "
               "tensor of `nbytes` bytes over `n` GPUs (n >= 2) on links of `bytes_per_s` bytes per second in each "
               "direction, with a latency of `alpha_s` seconds per message. Tested against "
               "`memlib.cost.collectives.collective_seconds` on real cases and on settings drawn at random each time "
               "you check.",
        function_name="ring_all_reduce_seconds", reference_name="memlib.cost.collectives.collective_seconds",
        cases=lambda: [dict(nbytes=2 * n_params(_70B), n=16, bytes_per_s=link_bytes_per_s("IB NDR"), alpha_s=10e-6),
                       dict(nbytes=DDP_BUCKET_CAP_BYTES, n=64, bytes_per_s=link_bytes_per_s("IB NDR"), alpha_s=20e-6),
                       dict(nbytes=2 * n_params(_8B), n=8, bytes_per_s=_NVLINK, alpha_s=5e-6),
                       dict(nbytes=8192, n=1024, bytes_per_s=link_bytes_per_s("IB HDR"), alpha_s=10e-6)],
        held_out=lambda rng: [dict(nbytes=rng.randint(10**3, 10**11), n=rng.choice((2, 3, 8, 24, 256, 4096)),
                                   bytes_per_s=rng.choice((1.25e9, 12.5e9, 25e9, 50e9, 450e9)),
                                   alpha_s=rng.choice((1e-6, 5e-6, 2e-5))) for _ in range(3)],
        reference=lambda k: collective_seconds("all-reduce", k["nbytes"], k["n"], k["bytes_per_s"], k["alpha_s"]),
        slips=(Slip("one latency", lambda k, w: w - (2 * (k["n"] - 1) - 1) * k["alpha_s"],
                    "a ring pays the latency at each of its 2(n-1) steps, not once"),
               Slip("twice the tensor", lambda k, w: w + 2 * k["nbytes"] / k["n"] / k["bytes_per_s"],
                    "each GPU sends 2(n-1)/n of the tensor: it keeps its own 1/n on each pass")),
        hints=("A ring all-reduce is a reduce-scatter then an all-gather, n - 1 steps each.",
               "t = 2 (n - 1) × alpha + 2 (n - 1) / n × nbytes / bytes_per_s.",
               "Write the latency term and the bandwidth term separately, then add them."),
        worked=lambda: ("```python\ndef ring_all_reduce_seconds(nbytes, n, bytes_per_s, alpha_s):\n"
                        "    steps = 2 * (n - 1)                      # reduce-scatter, then all-gather\n"
                        "    return steps * alpha_s + steps / n * nbytes / bytes_per_s\n```\n\n"
                        f"Llama-3.1-70B's bf16 gradients over 16 GPUs on 400 Gb/s: **{_ar_s():.2f} s**."),
    ),
    SelfAssessed(
        id="10.16", title="Lay out a 70B on 8 nodes", difficulty="stretch", minutes=15,
        formula="a layout from the communication roofline: TP inside NVLink, DP/FSDP or PP across nodes "
                "(memlib.cost.collectives.comm_roofline)",
        prompt="You train Llama-3.1-70B on 64 H100s: 8 nodes of 8 on NVLink, one 400 Gb/s InfiniBand port per GPU. "
               "Which parallelism goes inside the nodes and which across them, and why? Say what each moves, "
               "what it costs against the compute, and what batch it needs. Then mark your answer against the rubric.",
        rubric=("Tensor parallelism inside the node: its all-reduces grow with the tokens, so only NVLink keeps them "
                "below the compute",
                "Tensor parallelism across nodes is communication-bound at any batch (several times the compute)",
                "Data parallelism or FSDP across nodes: traffic fixed per step (1.5x for FSDP, per micro-batch), hidden "
                "above some thousands of tokens per GPU",
                "Pipeline parallelism also crosses nodes cheaply (activations at stage boundaries) at the price of "
                "a bubble (p-1)/(m+p-1) and in-flight activations",
                "Memory: 16 bytes per parameter must be sharded (ZeRO/FSDP or the distributed optimizer) to fit"),
        hints=("Ask of each scheme: does its traffic grow with the tokens or stay fixed per step?",
               "ratio = communication seconds / compute seconds: TP's is fixed by h, the link and the TP degree; DP's "
               "falls as tokens per GPU grow.",
               "Compute TP 8's ratio on NVLink and on InfiniBand, and DP's critical tokens across nodes."),
        worked=lambda: (f"Tensor parallelism over the 8 GPUs of a node costs {_tp70():.2f}x its compute on NVLink, "
                        f"{_tp70(beta=_IB):.1f}x across InfiniBand (`comm_roofline`): keep it inside the node. Across "
                        f"the 8 nodes, data parallelism of the TP groups moves the gradients once per step; FSDP "
                        f"1.5x that per micro-batch; each hides above a few thousand tokens per GPU per step. A "
                        f"pipeline across nodes sends only {_pp_bytes() / 1e6:,.0f} MB per boundary per micro-batch "
                        f"but idles {_bubble(8, 32):.0f}% of the step with 8 stages and 32 micro-batches. Memory: 16 "
                        f"bytes per parameter ({_g(16 * n_params(_70B))}) must be sharded over the GPUs."),
    ),
]
