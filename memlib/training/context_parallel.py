"""Context parallelism (ring attention): each sequence split over cp GPUs.

What is modelled is torch's `context_parallel` as torchtitan runs it (torch 2.13,
torch/distributed/tensor/experimental/_context_parallel/_attention.py; torchtitan
`parallelism.context_parallel_degree`), the scheme of Liu et al. 2023 ("Ring Attention with
Blockwise Transformers") and of Megatron-Core's context parallelism:

* Every activation outside attention belongs to the seq_len / cp tokens of this GPU: the
  load balancer gives rank i chunks i and 2cp-1-i of the 2cp chunks of each sequence
  (_load_balancer.py _HeadTailLoadBalancer), the embedding, norms, MLP, rotary tables
  (torchtitan shards freqs_cis as a cp buffer), logits and loss all see those tokens only, and
  the loss is computed over the local tokens (a scalar all-reduced over dp x cp).
* Attention: the SDPA op (flash, memory-efficient or cuDNN) is dispatched to ring attention
  (_sdpa_handler). Autograd saves what the op saves without CP, at the local size: the local
  q, k, v, the output and the fp32 log-sum-exp. Nothing of the other ranks is saved: the
  backward fetches their K/V again ("each GPU only stores the KV of a sequence chunk in forward
  and gathers KV again in backward", Megatron-Core docs/api-guide/context_parallel.md).
* In flight inside each layer's attention (transient, one layer at a time): the other ranks'
  K/V (ring_kv_buffer_bytes), the fp32 merge of the blockwise outputs in the forward
  (ring_merge_bytes) and the fp32 dQ/dK/dV accumulators of the backward, whose dK/dV travel
  around the ring back to their owner (ring_backward_bytes).
* Parameters, gradients and optimizer states do not depend on cp. torchtitan always shards
  them with FSDP over the dp_shard x cp GPUs (ParallelDims.fsdp_enabled = dp_shard > 1 or
  cp > 1; mesh "dp_shard_cp", torchtitan/distributed/parallel_dims.py @0119de1), which is what
  zero_stage="FULL_SHARD" gives here: the estimate shards over dp x cp. zero_stage=0 keeps a
  replica per GPU (gradients all-reduced over dp x cp).

So the estimate is the estimate of one GPU's view (local_setup: seq_len / cp tokens, dp x cp
data-parallel GPUs for sharding) plus the ring attention's moments. Not measured on a GPU; see
validation/README.md for what the fake-tensor harness measures.
"""

from __future__ import annotations

from dataclasses import replace

from memlib._checks import flag, positive_int
from memlib.training import activations as act
from memlib.training.estimate import Moment
from memlib.training.options import TrainingSetup


def local_setup(s: TrainingSetup) -> TrainingSetup:
    """One GPU's view of a context-parallel setup: the local seq_len / cp tokens of each sequence, and the
    dp x cp GPUs FSDP shards the model states over (torchtitan's dp_shard_cp mesh; Liu et al. 2023, Ring
    Attention, for the sequence split)."""
    return replace(s, seq_len=s.seq_len // s.cp, dp=s.dp * s.cp, cp_shard=True)


def kv_width(model) -> int:
    """Elements of one token's key plus value over all heads (before any tensor-parallel split): 2 x kv_heads x
    head_dim with GQA; MLA's per-head key (nope + rope) and value heads, as training materializes them."""
    if model.is_mla:
        return model.num_heads * (model.qk_nope_head_dim + model.qk_rope_head_dim + model.v_head_dim)
    return 2 * model.kv_size


def _local_kv(s: TrainingSetup, num: act.Numerics) -> int:
    """Bytes of this GPU's K/V block of one layer: its seq_len / cp tokens' keys and values (compute dtype)."""
    return num.compute * kv_width(s.model) * s.tokens_per_gpu // s.tp


def ring_kv_buffer_bytes(s: TrainingSetup, num: act.Numerics) -> int:
    """The other ranks' K/V in flight during one layer's ring attention forward (torch 2.13
    _context_parallel/_attention.py _templated_ring_attention): with rotate method "allgather" (torch's and
    torchtitan's default, _AllGatherRotater) the all_gather_single output holding all cp blocks and the next
    step's `torch.cat([key.flatten(), value.flatten()])`; with "alltoall" (_AllToAllRotater, permute_tensor) the
    block received, the concatenation sent on and the next block in flight. cp + 1 and 3 blocks."""
    blocks = s.cp + 1 if s.cp_rotate == "allgather" else 3
    return blocks * _local_kv(s, num)


def ring_merge_bytes(s: TrainingSetup, num: act.Numerics) -> int:
    """The forward's merge of the blockwise results (_SDPAMerger, convert_to_f32=True): the running output in fp32,
    the block's fp32 copy and the fp32 temporary of `out - sigmoid(block_lse - lse) * (out - block_out)`, beside
    the block's output in the compute dtype; three fp32 log-sum-exp-sized ones. The worst rank (every rank but
    0 merges whole blocks: _is_causal_behavior and the round-robin branches)."""
    m, tok = s.model, s.tokens_per_gpu
    return ((12 + num.compute) * m.q_size * tok + 12 * m.num_heads * tok) // s.tp


def ring_backward_bytes(s: TrainingSetup, num: act.Numerics) -> int:
    """The ring backward (_templated_ring_attention_backward) beside the kernel's own gradients: the other ranks'
    K/V fetched again (all cp blocks gathered; or the block received and the next one in flight), the fp32 dQ
    accumulator, the fp32 dK/dV that travel around the ring to their owner (always all_to_all: the accumulator
    received, the concatenation sent and the next one arriving) and the previous block's gradients from the kernel,
    still referenced while the next block runs."""
    m, tok = s.model, s.tokens_per_gpu
    local = _local_kv(s, num)
    kv = (s.cp if s.cp_rotate == "allgather" else 2) * local
    fp32 = (4 * m.q_size * tok + 3 * 4 * kv_width(m) * tok) // s.tp
    previous = num.compute * m.q_size * tok // s.tp + local
    return kv + fp32 + previous


def ring_forward_moment(s: TrainingSetup, num: act.Numerics, layer: act.Ledger, parts: dict, kept_and_model: int,
                        held: int, recompute: bool) -> Moment:
    """Forward, inside the last decoder layer's ring attention: what the layers saved so far (the last layer's
    MLP half not yet; under recompute its attention's q, k, v and output exist unsaved), the layer's input and
    residual, and the ring's K/V buffers and merge temporaries."""
    attn_half = sum(n for _, n, _ in layer.items[:layer.split])
    mlp_half = layer.total - attn_half
    acts = kept_and_model + held + (attn_half if recompute else -mlp_half)
    return Moment("forward", "inside the last decoder layer's ring attention (context parallel)", {
        **parts, "activations": acts,
        "temporaries": ring_kv_buffer_bytes(s, num) + ring_merge_bytes(s, num)})


def add_ring_backward(s: TrainingSetup, num: act.Numerics, moments: list[Moment], next_layer_rs: int = 0) -> None:
    """The attention backward moments gain the ring's buffers. Under full recompute the rebuilt top layer runs its
    ring attention forward again (with the attention backward's other tensors alive: a bound from above). With
    FSDP the attention backward of the second layer from the top runs while the top layer's reduce-scatter buffer
    is still alive (`next_layer_rs`; FSDPMemTracker shows it: validation/results_cp.json, -ckpt cases)."""
    extra = ring_backward_bytes(s, num)
    added = []
    for mo in moments:
        if mo.name == "backward" and mo.where.endswith("attn backward"):
            if s.recompute == "full" and mo.where.startswith("top"):
                added.append(Moment("backward", "top decoder layer rebuilt: its ring attention forward again", {
                    **mo.parts, "temporaries": ring_kv_buffer_bytes(s, num) + ring_merge_bytes(s, num)}))
            mo.parts["temporaries"] = mo.parts.get("temporaries", 0) + extra
            if next_layer_rs and mo.where.startswith("top"):
                added.append(Moment("backward", "second decoder layer from the top, ring attention backward", {
                    **mo.parts, "gathered_parameters": mo.parts.get("gathered_parameters", 0) + next_layer_rs}))
    moments.extend(added)


RING_TERMS = (ring_kv_buffer_bytes, ring_merge_bytes, ring_backward_bytes)


def causal_attention_pairs_per_rank(seq_len: int, cp: int, load_balance: bool = True) -> list[int]:
    """Query-key pairs of causal attention each of the cp ranks computes for one sequence: the work of its
    ring attention (every rank waits for the slowest at each layer).

    The sequence is cut into 2·cp chunks of c = seq_len / (2·cp) tokens; chunk j's queries see the j chunks
    before it and the causal half of their own: j·c² + c(c + 1)/2 pairs. load_balance=True: rank i holds chunks
    i and 2cp − 1 − i (torch's _HeadTailLoadBalancer, Megatron-Core's CP, the "zigzag" split), 2cp·c² + c pairs
    each, equal; False: rank i holds the contiguous chunks 2i and 2i + 1, and the last rank does 2 − 1/cp times
    the mean (seq_len 131,072, cp 8: 1.875x)."""
    t, n = positive_int("seq_len", seq_len), positive_int("cp", cp)
    if t % (2 * n):
        raise ValueError(f"seq_len {t} must be divisible by 2 x cp = {2 * n}: the sequence is cut into 2 x cp chunks")
    c = t // (2 * n)

    def chunk(j: int) -> int:
        return j * c * c + c * (c + 1) // 2

    if flag("load_balance", load_balance):
        return [chunk(i) + chunk(2 * n - 1 - i) for i in range(n)]
    return [chunk(2 * i) + chunk(2 * i + 1) for i in range(n)]
