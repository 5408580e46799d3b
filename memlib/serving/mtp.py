"""DeepSeek-V3's multi-token-prediction (MTP) module: its parameters, from the config's shapes.

DeepSeek-V3 Technical Report (arXiv:2412.19437), Sec. 2.2, eq. (21)-(23): the k-th MTP module is one Transformer
block TRM_k (the same MLA + MoE layer as the main model's), a projection M_k of shape d x 2d that mixes
RMSNorm(h_i) with RMSNorm(Emb(t_{i+k})), and two RMSNorms; it shares the embedding and the output head with the
main model. The released checkpoint (README_WEIGHTS.md, deepseek-ai/DeepSeek-V3) stores layer 61 with its own
copies of the embedding and the head (plus the head's norm, `shared_head.norm`): "671B main model weights and 14B
MTP module weights", of which 11.5B unique. Depth D = 1 (Sec. 4.2; config.json num_nextn_predict_layers = 1).
"""

from __future__ import annotations

from memlib._checks import positive_int
from memlib.models import Model, get_model
from memlib.serving.inference import quantized_linear_bytes

DSV3_MTP_DEPTH = 1   # Sec. 4.2: "we set the MTP depth D to 1"


def _model(model) -> Model:
    m = get_model(model)
    if not (m.is_moe and m.is_mla):
        raise ValueError(f"{m.name}: the MTP module is DeepSeek-V3's (an MLA + MoE block); this model has "
                         f"{'no MLA' if not m.is_mla else 'no MoE layers'}")
    return m


def _moe_layer_tensors(m: Model):
    """(tensor, numel) of one MoE decoder layer: the tensors every layer has, and the MoE block's."""
    return [t for t in m.tensors() if t.count == m.num_layers or (t.count == m.num_moe_layers and t.kind != "embedding"
                                                                    and t.name not in ("lm_head", "final_norm"))]


def mtp_module_params(model, depth: int = DSV3_MTP_DEPTH) -> dict[str, int]:
    """Parameters of `depth` MTP modules by part (module docstring): the block (one MoE layer), M (2h x h), the
    norms (RMSNorm of h and of the embedding, and the head's norm: 3h), and the checkpoint's own copies of the
    embedding and head (V x h each; shared with the main model at training time)."""
    m, d = _model(model), positive_int("depth", depth)
    h, V = m.hidden_size, m.vocab_size
    block = sum(t.numel for t in _moe_layer_tensors(m))
    return {"transformer block (MLA + MoE)": d * block, "projection M (2h x h)": d * 2 * h * h,
            "RMSNorms (3 x h)": d * 3 * h, "embedding copy (V x h)": d * V * h, "head copy (h x V)": d * V * h}


def mtp_active_params(model, depth: int = DSV3_MTP_DEPTH) -> int:
    """Parameters one token reads through `depth` MTP modules when it drafts: the block's attention, norms, router
    and shared expert, top-k of its routed experts, M, and the output head (V x h), which the draft needs to turn
    its hidden state into a token (shared with the main model, but read again)."""
    m, d = _model(model), positive_int("depth", depth)
    h, k = m.hidden_size, m.num_experts_per_tok
    block = sum(t.numel * k // t.experts if t.experts else t.numel for t in _moe_layer_tensors(m))
    return d * (block + 2 * h * h + 3 * h + m.vocab_size * h)


def mtp_module_bytes(model, weights: str = "fp8-block", depth: int = DSV3_MTP_DEPTH) -> int:
    """Bytes of the MTP module's unique part (block, M, norms; the embedding and head shared with the main model)
    with its linear weights in `weights` (memlib.serving.inference.quantized_linear_bytes: fp8-block = 1 byte + one
    fp32 per 128x128 block, as the released checkpoint) and the norms and router in bf16, as the main model's."""
    m, d = _model(model), positive_int("depth", depth)
    h, total = m.hidden_size, 0
    for t in _moe_layer_tensors(m):
        if t.kind == "linear" and t.name != "router" and t.shape:
            per = max(t.experts, 1)
            total += per * quantized_linear_bytes(t.shape[0], t.shape[1], weights)
        else:
            total += 2 * t.numel
    total += quantized_linear_bytes(2 * h, h, weights) + 2 * 3 * h
    return d * total


__all__ = ["DSV3_MTP_DEPTH", "mtp_module_params", "mtp_active_params", "mtp_module_bytes"]
