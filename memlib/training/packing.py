"""Sequence packing: several documents concatenated into one row of the batch, and the attention it costs.

Without a per-document mask, the causal mask of the packed row lets every token attend to the documents before
it in the row. A block-diagonal causal mask keeps each document to itself: FlashAttention's varlen kernels take
the documents' boundaries as cumulative lengths (`flash_attn_varlen_func(..., cu_seqlens_q, cu_seqlens_k, ...)`,
Dao-AILab/flash-attention, flash_attn_interface.py), and transformers' DataCollatorWithFlattening restarts
position_ids at each document, from which its FlashAttention-2 path rebuilds cu_seqlens
(transformers' modeling_flash_attention_utils.prepare_fa2_from_position_ids: the indices where position_ids == 0,
then the total). The kernel then skips every cross-document block, so the mask also saves attention FLOPs. A
position-id restart alone, under another attention implementation, only restarts RoPE's positions.
"""

from __future__ import annotations

from memlib._checks import flag, positive_int, show
from memlib.models.flops import _model, attention_flops_per_token


def _docs(doc_lens) -> list[int]:
    if isinstance(doc_lens, (str, bytes)) or not hasattr(doc_lens, "__iter__"):
        raise ValueError(f"doc_lens must be a list of document lengths in tokens, got {show(doc_lens)}")
    docs = [positive_int("doc_lens[i]", d) for d in doc_lens]
    if not docs:
        raise ValueError("doc_lens must name at least one document")
    return docs


def cu_seqlens(doc_lens) -> list[int]:
    """The documents' boundaries in the packed row, as FlashAttention's varlen kernels take them:
    [0, d_1, d_1 + d_2, ..., sum d_i] (flash_attn_varlen_func's cu_seqlens, batch + 1 int32 entries)."""
    out = [0]
    for d in _docs(doc_lens):
        out.append(out[-1] + d)
    return out


def causal_attention_pairs(doc_lens, per_document: bool = True) -> int:
    """Query-key pairs a causal kernel computes over one packed row (each query with itself and every key before
    it): sum d_i (d_i + 1) / 2 with a block-diagonal (per-document) mask, T (T + 1) / 2 with one causal mask over
    the whole row, T = sum d_i. About sum d_i^2 / 2 against T^2 / 2."""
    docs, per_document = _docs(doc_lens), flag("per_document", per_document)
    if per_document:
        return sum(d * (d + 1) // 2 for d in docs)
    t = sum(docs)
    return t * (t + 1) // 2


def cross_document_pairs(doc_lens) -> int:
    """Pairs where a token attends to another document: what packing without a per-document mask adds
    (T (T + 1) / 2 - sum d_i (d_i + 1) / 2 = sum over i < j of d_i d_j)."""
    return causal_attention_pairs(doc_lens, False) - causal_attention_pairs(doc_lens, True)


def packed_attention_flops(model, doc_lens, per_document: bool = True, training: bool = True) -> float:
    """Attention FLOPs of one packed row: 12·L·H·Q per query-key pair for a training step (the forward and
    backward of PaLM's 12·L·H·Q·T per token, Chowdhery et al. 2022, App. B, which charges T pairs to each
    token), 4·L·H·Q for the forward alone; times causal_attention_pairs."""
    model = _model(model, "packed_attention_flops")
    per_document = flag("per_document", per_document)
    per_pair = attention_flops_per_token(model, 1) / (1 if flag("training", training) else 3)
    return per_pair * causal_attention_pairs(doc_lens, per_document)


def packing_attention_saving(doc_lens) -> float:
    """The fraction of a packed row's causal attention work a per-document mask removes:
    1 - sum d_i (d_i + 1) / T (T + 1) (about 1 - 1/k for k equal documents)."""
    return cross_document_pairs(doc_lens) / causal_attention_pairs(doc_lens, False)
