"""The model families memlib reads, one record each: how a config.json of the family is read (its transformers
class prefix, the defaults of its config class, the reader in catalog.py) and what its layers do that the Model's
fields do not say (fp32 norms, its router, Llama 4's every-expert MoE, Gemma's scaled embedding, ...), which the
training ledger (training/activations.py) and terms (training/terms.py, options.py, step.py) read from here.

Adding a family whose layers memlib already counts is one `Family` below (reader: an existing one, such as
"llama"); see docs/architecture.md, "how to add a model family".

Sources: transformers 5.24, src/transformers/models/<family>/configuration_<family>.py for the defaults (commit
008e574391258935f3ecc3035c882e73bbcac419; mistral and deepseek_v3 at 001f85b38fb432858ace93f18622f07cec46d874,
gemma3 at 008f5c8c29be84d4721dc6d1e0fcd72300580be4; memlib/models/hf_defaults.py explains each field), and
modeling_<family>.py for the traits (each trait's comment names the code).
"""

from __future__ import annotations

from dataclasses import dataclass, field

# num_key_value_heads default HEADS: the class default is None, which __post_init__ turns into num_attention_heads;
# head_dim default HIDDEN_OVER_HEADS: hidden_size // num_attention_heads (no head_dim field, or None)
HEADS = "num_attention_heads"
HIDDEN_OVER_HEADS = 0


@dataclass(frozen=True)
class Family:
    """One transformers model_type."""

    model_type: str
    prefix: str  # its classes' prefix: LlamaForCausalLM, LlamaModel, ... -> "Llama"
    max_position_embeddings: int | None = None  # the config class's default
    # defaults of the config class for fields a config.json may omit (hf_defaults.py):
    # num_key_value_heads, head_dim, vocab_size
    defaults: dict = field(default_factory=dict)
    reader: str = ""  # the config reader (catalog._READERS); "" = model_type's own
    wraps: str = ""  # a multimodal config: its text model's model_type (read from text_config)
    omitted: str = ""  # what memlib leaves out of a wrapping config
    # --- what its layers save (training/activations.py, terms.py) beyond the Model's fields ---
    # RMSNorm multiplies by its weight in fp32 before casting back: an fp32 normalized tensor (Gemma's
    # `output * (1.0 + self.weight.float())`, OLMo 2's and gpt-oss's `(self.weight * x).to(dtype)`)
    fp32_norms: bool = False
    router_scores: str = ""  # the router's score function over all experts, kept in fp32 (T x E): softmax/sigmoid
    router_in_fp32: bool = False  # DeepseekV3TopkRouter: F.linear(hidden.float(), weight.float())
    topk_softmax: bool = False  # softmax over the top-k logits, kept (gpt-oss)
    topk_renormalized: bool = False  # top-k weights renormalized to sum 1: the sum and quotient kept
    fp32_routing_weights: bool = False  # each routed row's weight kept in fp32
    clamped_swiglu: bool = False  # gpt-oss's clamped SwiGLU experts
    # Llama4TextMoe: every token through every expert (T x E rows, no routing to drop), scaled by its router score
    every_expert: bool = False
    qk_l2_norm: bool = False  # Llama 4's L2 q/k norm on its rope (chunked-attention) layers
    rope_complex64: bool = False  # Llama 4 keeps one complex64 freqs_cis of head_dim / 2
    local_rope_table: bool = False  # Gemma 3: a second rotary table for its local layers (rope_local_base_freq)
    scaled_embedding: bool = False  # Gemma: the embedding output times sqrt(hidden) into a new tensor
    # the load-balancing loss with output_router_logits (load_balancing_loss_func in modeling_mixtral/qwen3_moe/
    # gpt_oss.py); DeepSeek-V3 balances without one (bias-based, DeepSeek-V3 Sec. 2.1.2), transformers' Llama 4 none
    aux_loss: bool = False

    def hf_type(self) -> dict:
        """The catalog's HF_TYPES entry: prefix and max_position_embeddings, or prefix, wraps and omitted."""
        if self.wraps:
            return {"prefix": self.prefix, "wraps": self.wraps, "omitted": self.omitted}
        return {"prefix": self.prefix, "max_position_embeddings": self.max_position_embeddings}


def _defaults(kv, head_dim, vocab) -> dict:
    return {"num_key_value_heads": kv, "head_dim": head_dim, "vocab_size": vocab}


_H, _HD = HEADS, HIDDEN_OVER_HEADS
_FAMILIES = [
    Family("llama", "Llama", 2048, _defaults(_H, _HD, 32000)),
    Family("mistral", "Mistral", 131072, _defaults(8, _HD, 32000)),
    Family("qwen2", "Qwen2", 32768, _defaults(32, _HD, 151936)),
    Family("qwen3", "Qwen3", 32768, _defaults(32, 128, 151936)),
    # Qwen3MoeConfig has no head_dim field: Qwen3MoeAttention falls back to hidden_size // heads
    Family("qwen3_moe", "Qwen3Moe", 32768, _defaults(4, _HD, 151936), router_scores="softmax", aux_loss=True),
    Family("mixtral", "Mixtral", 131072, _defaults(8, _HD, 32000), router_scores="softmax", topk_renormalized=True,
           fp32_routing_weights=True, aux_loss=True),
    Family("gemma2", "Gemma2", 8192, _defaults(4, 256, 256000), fp32_norms=True, scaled_embedding=True),
    Family("gemma3_text", "Gemma3", 131072, _defaults(4, 256, 262208), fp32_norms=True, scaled_embedding=True,
           local_rope_table=True),
    Family("gemma3", "Gemma3", wraps="gemma3_text", omitted="the vision tower (SigLIP) and the multimodal projector"),
    Family("phi3", "Phi3", 4096, _defaults(_H, _HD, 32064)),
    # MLA: the key/value head count shapes no tensor (kv_b_proj is per attention head)
    Family("deepseek_v2", "DeepseekV2", 2048, _defaults(_H, _HD, 32000), router_scores="softmax",
           router_in_fp32=True, fp32_routing_weights=True),
    Family("deepseek_v3", "DeepseekV3", 4096, _defaults(128, _HD, 129280), router_scores="sigmoid",
           router_in_fp32=True, topk_renormalized=True, fp32_routing_weights=True),
    Family("llama4_text", "Llama4", 131072, _defaults(8, 128, 202048), router_scores="sigmoid", every_expert=True,
           qk_l2_norm=True, rope_complex64=True),
    Family("llama4", "Llama4", wraps="llama4_text", omitted="the vision encoder and the multimodal projector"),
    Family("gpt_oss", "GptOss", 131072, _defaults(8, 64, 201088), fp32_norms=True, topk_softmax=True,
           clamped_swiglu=True, aux_loss=True),
    Family("olmo2", "Olmo2", 2048, _defaults(_H, _HD, 50304), fp32_norms=True),
]
FAMILIES: dict[str, Family] = {f.model_type: f for f in _FAMILIES}

# A Model of a model_type memlib does not read (a hand-made Model, the GPT-style ones): its layers are those its
# fields describe, nothing more.
PLAIN = Family("", "")


def family(model_type: str) -> Family:
    """The family of a model_type; a wrapping (multimodal) type gives its text model's; an unknown one PLAIN."""
    f = FAMILIES.get(model_type, PLAIN)
    return FAMILIES[f.wraps] if f.wraps else f


def of(model) -> Family:
    """The family of a Model (its model_type)."""
    return family(model.model_type)


def reader_of(model_type: str) -> str:
    """The name of the config reader a model_type's config.json is read with (catalog._READERS)."""
    return FAMILIES[model_type].reader or model_type


def _check() -> None:
    """The records are consistent: a wrapper wraps a text family; a text family has its defaults and positions."""
    for f in _FAMILIES:
        ok = (f.wraps in FAMILIES and not FAMILIES[f.wraps].wraps) if f.wraps else (
            bool(f.max_position_embeddings) and set(f.defaults) == {"num_key_value_heads", "head_dim", "vocab_size"})
        if not ok or f.router_scores not in ("", "softmax", "sigmoid"):
            raise ValueError(f"memlib/models/families.py: the record of {f.model_type!r} is incomplete (a wrapper "
                             "names a text family; a text family gives max_position_embeddings and the three "
                             "defaults; router_scores is '', 'softmax' or 'sigmoid')")


_check()
