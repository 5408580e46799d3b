"""Prefill/decode disaggregation: the KV cache a prompt hands from a prefill GPU to a decode GPU, and how many
GPUs of each kind a load needs.

Prefill runs the whole prompt in one forward: many tokens per weight read, so it is compute-bound. Decode
makes one token per chat per step: every step reads the weights and the batch's cache, so it is
bandwidth-bound (memlib.serving.decode_bound). On one GPU the two interfere: a prefill in the batch stalls
every decoding chat's next token (TPOT), and decode steps delay the prefill (TTFT). DistServe (Zhong et al.
2024, OSDI) and Splitwise (Patel et al. 2024, ISCA) put them in separate pools sized separately;
Mooncake (Qin et al. 2025, FAST) runs Kimi's service so, with the cache moved over RDMA.

  kv_transfer_bytes   the cache a prefill hands over: prompt tokens x KV bytes per token (all layers, the
                      whole model: memlib.serving.inference.kv_bytes_per_token at tp 1); each of tp GPUs
                      sends its 1/tp share in parallel.
  kv_transfer_s       those bytes over one link, one direction, at its nominal rate (memlib.cost.collectives
                      .link_bytes_per_s: NVLink, IB NDR, 100GbE ...): a lower bound (no latency, no protocol).
  prefill_time_s      one prompt's forward FLOPs (memlib.serving.request_flops with one reply token: the
                      prompt's positions only) over tp GPUs' dense peak x mfu.
  pd_ratio            prefill GPU-seconds per request (prefill_time_s x tp) against decode GPU-seconds per
                      request at the largest decode batch whose step meets a TPOT SLO (decode_bound):
                      tp x reply x TPOT(B) / B. Their ratio is the prefill : decode GPU ratio a steady load
                      needs (DistServe's placement sizes each pool for its own SLO the same way, with measured
                      rather than roofline times).
"""

from __future__ import annotations

from dataclasses import dataclass

from memlib._checks import fraction, model_or_name, positive_float, positive_int, plain_args
from memlib.hardware.gpus import get_gpu, link_bytes_per_s
from memlib.models import Model, get_model
from memlib.serving.capacity import (_tensor_peak_flops, decode_bound, request_flops,
                                     vllm_default_max_num_batched_tokens, vllm_default_max_num_seqs)
from memlib.serving.inference import AUTO, estimate_inference, kv_bytes_per_token, max_batch


def _model(model):
    return model_or_name(model, Model, get_model)


@plain_args
def kv_transfer_bytes(model, prompt_tokens: int, kv_cache: str = "bf16") -> int:
    """Bytes of KV cache a prefill instance sends a decode instance for one prompt: prompt tokens x KV bytes
    per token over all layers (DistServe, Zhong et al. 2024, OSDI; memlib.serving.inference.kv_bytes_per_token)."""
    m = _model(model)
    return positive_int("prompt_tokens", prompt_tokens) * kv_bytes_per_token(m, kv_cache)


@plain_args
def kv_transfer_s(model, prompt_tokens: int, link: str, kv_cache: str = "bf16", tp: int = 1) -> float:
    """Seconds to send one prompt's KV cache over `link` (a memlib.cost.collectives.NETWORK_LINKS name or a
    catalog GPU's interconnect), tp GPUs each sending its 1/tp share over its own link in parallel:
    bytes / (tp x link bytes/s), one direction, nominal rate, no latency (a lower bound)."""
    tp = positive_int("tp", tp)
    return kv_transfer_bytes(model, prompt_tokens, kv_cache) / (tp * link_bytes_per_s(link))


@plain_args
def prefill_time_s(model, gpu, prompt_tokens: int, tp: int = 1, mfu: float = 1.0, weights: str = AUTO) -> float:
    """Seconds of one prompt's prefill on tp GPUs: its forward FLOPs (request_flops(model, prompt, 1): 2N per
    position plus causal attention; Kaplan et al. 2020, Sec. 2.1, PaLM App. B) / (tp x dense peak x mfu); the
    peak is fp8 for fp8 weights on a GPU with fp8 tensor cores, else 16-bit. Compute-bound: a lower bound."""
    m, g = _model(model), get_gpu(gpu)
    tp = positive_int("tp", tp)
    mfu = fraction("mfu", mfu, what="a fraction of the dense tensor peak (model FLOPs utilisation)")
    fmt = estimate_inference(m, 1, 1, weights=weights).setup.weights
    return request_flops(m, positive_int("prompt_tokens", prompt_tokens), 1) / (tp * _tensor_peak_flops(g, fmt) * mfu)


@dataclass(frozen=True)
class PDRatio:
    """GPU-seconds each request costs in the prefill pool and in the decode pool, and the ratio they imply."""

    prompt_tokens: int
    reply_tokens: int
    tpot_slo_s: float
    decode_batch: int  # the largest batch per decode instance whose roofline step meets the SLO (and fits)
    decode_bound_by: str  # "SLO", "memory" (max_batch) or "max_num_seqs": what capped decode_batch
    tpot_s: float  # the decode step at that batch (decode_bound)
    prefill_gpu_s: float  # per request: prefill_time_s x tp_prefill
    decode_gpu_s: float  # per request: tp_decode x reply x tpot / batch

    @property
    def prefill_to_decode(self) -> float:
        """Prefill GPUs per decode GPU a steady load needs."""
        return self.prefill_gpu_s / self.decode_gpu_s

    def gpus(self, qps: float) -> tuple[float, float]:
        """(prefill GPUs, decode GPUs) busy at `qps` requests/s: qps x GPU-seconds per request (fractional;
        round each up to whole instances)."""
        qps = positive_float("qps", qps, unit=" requests/s")
        return qps * self.prefill_gpu_s, qps * self.decode_gpu_s


@plain_args
def pd_ratio(model, gpu, prompt_tokens: int, reply_tokens: int, tpot_slo_s: float, mfu: float = 0.5,
             weights: str = AUTO, kv_cache: str = "bf16", tp_prefill: int = 1, tp_decode: int = 1,
             max_num_seqs: int | None = None) -> PDRatio:
    """The prefill : decode GPU ratio of a disaggregated server (PDRatio), from rooflines.

    Prefill: tp_prefill x prefill_time_s(prompt, mfu) GPU-seconds per request. Decode: the largest batch B whose
    decode_bound step at full length (prompt + reply, every chat counted at its end: conservative) is <= the TPOT
    SLO, capped by what memory holds (max_batch with vLLM's default chunk) and by max_num_seqs (default vLLM's
    for the GPU); then tp_decode x reply x step(B) / B GPU-seconds per request. ValueError when even batch 1
    misses the SLO. DistServe (Zhong et al. 2024) sizes its two pools for their own SLOs this way."""
    m, g = _model(model), get_gpu(gpu)
    prompt_tokens = positive_int("prompt_tokens", prompt_tokens)
    reply_tokens = positive_int("reply_tokens", reply_tokens)
    slo = positive_float("tpot_slo_s", tpot_slo_s, unit=" s")
    tp_prefill, tp_decode = positive_int("tp_prefill", tp_prefill), positive_int("tp_decode", tp_decode)
    context = prompt_tokens + reply_tokens

    def step(b):
        return decode_bound(m, g, b, context, weights=weights, kv_cache=kv_cache, tp=tp_decode).step_s

    if step(1) > slo:
        raise ValueError(f"a TPOT of {slo * 1e3:g} ms is below one decode step even at batch 1 "
                         f"({step(1) * 1e3:.2f} ms on {g.name} at tp={tp_decode}): raise tp_decode or the SLO")
    fit = max_batch(m, g, context, weights=weights, kv_cache=kv_cache, tp=tp_decode,
                    prefill_tokens=vllm_default_max_num_batched_tokens(g)).value
    if fit == 0:
        raise ValueError(f"not one request of {context:,} tokens fits {g.name} at tp={tp_decode}")
    seqs = vllm_default_max_num_seqs(g) if max_num_seqs is None else positive_int("max_num_seqs", max_num_seqs)
    cap = min(fit, seqs)
    lo, hi = 1, cap  # step() grows with the batch: the largest b <= cap with step(b) <= slo
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if step(mid) <= slo:
            lo = mid
        else:
            hi = mid - 1
    by = "SLO" if lo < cap else ("memory" if fit <= seqs else "max_num_seqs")
    tpot = step(lo)
    return PDRatio(prompt_tokens, reply_tokens, slo, lo, by, tpot,
                   tp_prefill * prefill_time_s(m, g, prompt_tokens, tp_prefill, mfu, weights),
                   tp_decode * reply_tokens * tpot / lo)


__all__ = ["kv_transfer_bytes", "kv_transfer_s", "prefill_time_s", "PDRatio", "pd_ratio"]
