"""Mixture-of-experts arithmetic beside the estimates: where a MoE's parameters live, how many of
its experts a batch touches, the weight bytes one decode step reads, and the fewest GPUs that
fully fine-tune it with ZeRO-3 or FSDP and expert parallelism.

Why MoE is cheap in FLOPs but not in memory, in three numbers a notebook can compute:

* routed_expert_params: the routed experts' share of the parameters (all resident in memory,
  top-k of them used per token: Model.num_active_params);
* expected_experts_touched: with uniform routing, a batch of T tokens touches
  E x (1 - (1 - k/E)^T) distinct experts of a layer, so a decode step of a realistic batch reads
  nearly every expert's weights (weight_bytes_read, decode_weight_bytes), not the active share;
* min_gpus_sharded: full fine-tuning holds every expert's parameters, gradients and optimizer
  states; expert parallelism shrinks the layer ZeRO-3 gathers, not the 16 bytes per parameter.

Serving layouts (tp/ep) are memlib.parallel.plan.plan_serving's; training estimates are
memlib.estimate_training's (ep=, measured for the MoE/MLA families in validation/).
"""

from __future__ import annotations

from dataclasses import dataclass

from memlib._checks import choice, positive_int, show, plain_args
from memlib.hardware.fit import Verdict, fits
from memlib.hardware.gpus import get_gpu
from memlib.serving.inference import AUTO, estimate_inference
from memlib.models import Model, get_model
from memlib.cost.timing import StepTime, step_time
from memlib.training import RECOMPUTES, estimate_training


def _moe(model, fn: str) -> Model:
    m = get_model(model) if isinstance(model, str) else model
    if not isinstance(m, Model):
        raise ValueError(f"{fn} needs a catalog model name or a memlib.Model, got {show(model)}")
    return m


def routed_expert_params(model) -> int:
    """Parameters of the routed experts, every MoE layer (Model.tensors' stacked expert tensors and their
    biases); 0 for a dense model. The shared experts, attention, router and embeddings are the rest."""
    m = _moe(model, "routed_expert_params")
    return sum(t.numel * t.count for t in m.tensors() if t.experts)


@plain_args
def expected_experts_touched(num_experts: int, top_k: int, tokens: int) -> float:
    """Distinct experts of one MoE layer that `tokens` tokens are routed to, in expectation, when each
    token picks its top_k experts uniformly at random and independently: E x (1 - (1 - k/E)^T).

    A token's k-subset misses a given expert with probability (1 - k/E) (C(E-1, k) / C(E, k)); T
    independent tokens miss it with (1 - k/E)^T. Uniform routing is what the load-balancing loss
    (Shazeer et al. 2017; Fedus et al. 2022, Switch Transformers, Sec. 2.2) and DeepSeek-V3's bias
    terms (DeepSeek-V3 report, Sec. 2.1.2) push the router toward; a skewed router touches fewer.
    """
    e = positive_int("num_experts", num_experts)
    k = positive_int("top_k", top_k)
    if k > e:
        raise ValueError(f"top_k {k} exceeds num_experts {e}: a token picks top_k distinct experts")
    t = positive_int("tokens", tokens)
    return e * (1.0 - (1.0 - k / e) ** t)


@plain_args
def tokens_per_expert(batch: int, top_k: int, num_experts: int) -> float:
    """Tokens each routed expert of a layer receives per step, on average, when `batch` tokens each pick
    top_k of num_experts experts: B·k/E (balanced routing). At decode B is the sequences in flight across
    the expert-parallel group, which is why DeepSeek decodes with expert parallelism over 320 GPUs
    (DeepSeek-V3 report, arXiv:2412.19437, Sec. 3.4.2): a larger group gathers more tokens per expert."""
    b = positive_int("batch", batch)
    k = positive_int("top_k", top_k)
    e = positive_int("num_experts", num_experts)
    if k > e:
        raise ValueError(f"top_k {k} exceeds num_experts {e}: a token picks top_k distinct experts")
    return b * k / e


@plain_args
def expert_ridge_tokens(gpu, weight_bytes: float = 1.0, precision: str = "fp8") -> float:
    """Tokens per step an expert's matmul needs to be compute-bound on `gpu`: T tokens do 2·T FLOP per
    weight, read once at weight_bytes bytes, an intensity of 2·T / weight_bytes FLOP/B; it reaches the
    roofline's ridge (memlib.cost.conventions.ridge_flop_per_byte, Williams et al. 2009) at
    T = ridge x weight_bytes / 2 (fp8 weights on an fp8 peak by default)."""
    from memlib.cost.conventions import ridge_flop_per_byte  # the roofline lives with the FLOP conventions

    if isinstance(weight_bytes, bool) or not isinstance(weight_bytes, (int, float)) or not 0 < weight_bytes < 1e3:
        raise ValueError(f"weight_bytes must be a positive number of bytes per weight, got {show(weight_bytes)}")
    return ridge_flop_per_byte(gpu, precision) * weight_bytes / 2


@plain_args
def weight_bytes_read(other_bytes: float, expert_bytes: float, num_experts: int, top_k: int, tokens: int) -> float:
    """Weight bytes a decode step of `tokens` tokens reads: every non-expert byte once, and the routed experts'
    bytes in the share the batch touches, expected_experts_touched / num_experts (uniform routing).

    other_bytes: attention, dense and shared-expert MLPs, router, embeddings, head; expert_bytes: all routed
    experts of all MoE layers (one layer's share scales the same way in every layer).
    """
    for name, v in (("other_bytes", other_bytes), ("expert_bytes", expert_bytes)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or v != v or v == float("inf"):
            raise ValueError(f"{name} must be a finite number of bytes >= 0, got {show(v)}")
    return float(other_bytes + expert_bytes * expected_experts_touched(num_experts, top_k, tokens) / num_experts)


@plain_args
def decode_weight_bytes(model, tokens: int, weights: str = AUTO) -> float:
    """Weight bytes one decode step reads from HBM (the whole model, one copy) when `tokens` tokens are
    in flight: every non-expert weight once (less the untied input embedding table, as decode_bound), and of each MoE layer's routed experts only those the
    batch touches (expected_experts_touched; weights in the format estimate_inference counts).

    A dense model reads all its weights at any batch; a MoE reads its active share at batch 1 and
    approaches all of its weights as the batch grows: MoE decode is cheap in bandwidth only at
    small batches. Caches, activations and the all-to-all are not counted.
    """
    m = _moe(model, "decode_weight_bytes")
    t = positive_int("tokens", tokens)
    parts = estimate_inference(m, batch=1, context_len=1, weights=weights).weight_parts
    # One convention with memlib.serving.capacity.decode_bound: the input embedding table is not read
    # (a step looks up one row per token); a tied table is read in full as the output head.
    other = sum(parts.values()) - (0 if m.tie_word_embeddings else parts.get("embedding", 0))
    experts = parts.get("experts", 0)
    if not m.is_moe or not experts:
        return float(other)
    return weight_bytes_read(other - experts, experts, m.num_experts, m.num_experts_per_tok, t)


@dataclass(frozen=True)
class ShardedFit:
    """The fewest GPUs (whole nodes) on which a ZeRO-3/FSDP layout with expert parallelism fits."""

    count: int
    ep: int
    estimate: object  # memlib.Estimate of that layout, per GPU
    verdict: Verdict
    time: StepTime  # memlib.step_time of the layout (compute, ZeRO-3 gathers, all-to-alls)
    searched: tuple[int, ...]  # GPU counts tried, in order

    def describe(self) -> str:
        s = self.estimate.setup
        stage = "FSDP FULL_SHARD" if s.sharding == "fsdp" else f"ZeRO-{s.zero_stage}"
        return (f"{self.count} GPUs: {stage} over {self.count}, expert parallel {self.ep}, "
                f"recompute {s.recompute}, micro-batch {s.micro_batch} x {s.seq_len:,} tokens")


def _ep_degrees(m: Model, count: int) -> list[int]:
    if not m.is_moe:
        return [1]
    return [e for e in range(1, min(count, m.num_experts) + 1) if count % e == 0 and m.num_experts % e == 0]


@plain_args
def min_gpus_sharded(model, gpu, zero_stage=3, seq_len: int = 4096, micro_batch: int = 1,
                     recompute: str = "full", gpus_per_node: int = 8, max_count: int = 4096, mfu: float | None = None,
                     *, hfu: float | None = None, **estimate_kw) -> ShardedFit | None:
    """Fewest GPUs, in whole nodes of gpus_per_node, for full fine-tuning with ZeRO-3 (DeepSpeed,
    zero_stage=3) or FSDP (zero_stage="FULL_SHARD") over every GPU, no pipeline and no offload; for a
    MoE, of the expert-parallel degrees that fit (every ep dividing the count and the experts), the one
    memlib.step_time rates fastest (then the largest margin). None if no count up to max_count fits.

    Each count is judged by memlib.estimate_training and memlib.fits (CUDA context, allocator
    headroom). This is the layout a Hugging Face Trainer + DeepSpeed/FSDP fine-tuning job runs; the
    whole search (memlib.parallel.plan.min_gpus) also tries tensor and pipeline splits.
    mfu / hfu rate the layouts as memlib.step_time does (neither: hfu=0.4, recompute costing its time).
    """
    m = _moe(model, "min_gpus_sharded")
    g = get_gpu(gpu)
    if zero_stage not in (3, "FULL_SHARD"):
        raise ValueError(f"zero_stage must be 3 (DeepSpeed ZeRO-3) or 'FULL_SHARD' (FSDP), got {show(zero_stage)}: "
                         "the other stages keep a full copy of the parameters on every GPU")
    choice("recompute", recompute, RECOMPUTES)
    node = positive_int("gpus_per_node", gpus_per_node)
    limit = positive_int("max_count", max_count)
    estimate_training(m, seq_len=seq_len, micro_batch=micro_batch, recompute=recompute, **estimate_kw)  # options once
    from memlib.parallel.count_bound import nothing_fits
    if nothing_fits(m, g, "full", dict(estimate_kw, seq_len=seq_len, micro_batch=micro_batch,
                                       recomputes=(recompute,)), [1]):
        return None  # analytical: no count can fit, so none up to max_count is searched
    searched = []
    for count in range(node, limit + 1, node):
        searched.append(count)
        best = None
        for ep in _ep_degrees(m, count):
            kw = dict(estimate_kw, ep=ep) if m.is_moe else dict(estimate_kw)
            est = estimate_training(m, seq_len=seq_len, micro_batch=micro_batch, recompute=recompute,
                                    zero_stage=zero_stage, dp=count, **kw)
            v = fits(est, g)
            if not v.fits:
                continue
            t = step_time(est, g, mfu=mfu, gpus_per_node=node, hfu=hfu)
            if best is None or (t.tokens_per_s_per_gpu, v.margin_bytes) > (best[3].tokens_per_s_per_gpu,
                                                                          best[2].margin_bytes):
                best = (ep, est, v, t)
        if best is not None:
            return ShardedFit(count, best[0], best[1], best[2], best[3], tuple(searched))
    return None
