"""Model architectures and exact parameter counts.

A `Model` is the shape of a decoder-only transformer, enough to count every tensor and
every saved activation. Parameter counts are exact: summed tensor by tensor as the
Hugging Face implementations create them, so they equal
`sum(p.numel() for p in model.parameters())` of transformers' own class built from the
same config (checked for every catalog entry by validation/param_counts.py, recorded in
validation/param_counts.json and asserted by tests/test_param_counts.py without torch).

Families read by `Model.from_hf_config` (transformers 5.x modeling files):
  llama, mistral, qwen2            the LLaMA layer (RMSNorm, GQA, SwiGLU MLP, RoPE)
  qwen3, qwen3_moe                 + RMSNorm on each query and key head (q_norm, k_norm)
  gemma2, gemma3_text, gemma3      four norms per layer, GELU-tanh MLP, tied 256k/262k vocabulary,
                                   local (sliding) and global layers; gemma3 reads text_config
  phi3 (Phi-3, Phi-4)              fused qkv_proj and gate_up_proj
  mixtral                          sparse MoE MLP (router + stacked experts)
  deepseek_v2, deepseek_v3         multi-head latent attention (MLA) + shared and routed experts
  llama4_text, llama4              interleaved MoE with a shared expert, chunked local attention;
                                   llama4 reads text_config
  gpt_oss                          MoE with biases, attention sinks, alternating sliding layers
  olmo2                            norms after attention and MLP (no pre-norm), q/k norms over all heads

Multimodal configs (gemma3, llama4) are read for their text model only: the vision tower
and the multimodal projector are not counted (`Model.omitted` says so). DeepSeek-V3's
multi-token-prediction (MTP) layer is in the checkpoint (`num_nextn_predict_layers`) but
transformers does not build it, so it is not counted either (inference engines load it
only for speculative decoding).
"""

from __future__ import annotations

import difflib
import json
import numbers
import os
import re
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from importlib import resources

from memlib._checks import positive_int
from memlib.models import families, hf_defaults
from memlib.models.families import FAMILIES
from memlib.models.layer_pattern import LayerIndices, LayerPattern
from memlib.models.hf_readers import (_check_layer_count, _check_quantization_options, dense_if_no_moe,
                                      moe_layer_set, parse_int, quantization_options, refuse_long_ints)

MLP_KINDS = ("gated", "standard")  # gated: SwiGLU, 3 matrices (LLaMA); standard: 2 matrices + GELU (GPT)
NORM_KINDS = ("rmsnorm", "layernorm")  # layernorm has a bias, rmsnorm does not
POSITION_KINDS = ("rope", "learned")
NORM_LAYOUTS = ("pre", "sandwich", "post")  # LLaMA: 2 pre-norms; Gemma 2/3: 4 norms; OLMo 2: 2 post-norms
QK_NORMS = ("", "head", "full")  # none; RMSNorm(head_dim) per head (Qwen3, Gemma 3); RMSNorm(all heads) (OLMo 2)
ACTIVATIONS = ("silu", "gelu_tanh", "gelu")
HEADS = ("lm", "score", "none")  # *ForCausalLM, *ForSequenceClassification, *Model
LAYER_TYPES = ("full_attention", "sliding_attention", "chunked_attention")
# Weight formats a config.json's quantization_config can name (memlib.serving.inference counts their bytes).
RELEASED_FORMATS = ("", "int8", "nf4", "int8-gptq", "int4-gptq", "int4-awq", "fp8-block", "mxfp4")


@dataclass(frozen=True)
class Tensor:
    """One parameter tensor of the model; `count` copies of it (one per layer for layer tensors).

    shape:   (in_features, out_features) of one matrix, for linear tensors (and the embedding as
             (vocab, hidden)); () for vectors.
    experts: > 0 for a stacked tensor of that many routed experts (numel = experts x in x out).
    tp:      how Megatron/vLLM tensor parallelism splits it: "column" (output features),
             "row" (input features), "vocab" (vocabulary rows), "" (replicated).
    """

    name: str
    numel: int
    count: int = 1
    kind: str = "linear"  # "linear" | "embedding" | "norm" | "bias"
    shape: tuple = ()
    experts: int = 0
    tp: str = ""


@dataclass(frozen=True)
class Model:
    name: str
    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int  # dense MLP width (the dense layers' MLP in a MoE model)
    vocab_size: int
    num_kv_heads: int = 0  # 0: same as num_heads (multi-head attention); fewer: GQA
    head_dim: int = 0  # 0: hidden_size // num_heads; under MLA the query/key head dim (nope + rope)
    tie_word_embeddings: bool = False
    qkv_bias: bool = False  # Qwen2 has biases on q, k and v only
    o_bias: bool = False
    mlp: str = "gated"
    mlp_bias: bool = False
    norm: str = "rmsnorm"
    position: str = "rope"
    max_position_embeddings: int = 2048
    model_type: str = "llama"
    # --- layer variants (defaults: the LLaMA layer) -------------------------------------
    activation: str = "silu"  # the gated MLP's activation: SiLU (LLaMA), GELU-tanh (Gemma)
    norm_layout: str = "pre"
    qk_norm: str = ""
    fused_qkv: bool = False  # Phi-3: one qkv_proj instead of q, k, v
    fused_gate_up: bool = False  # Phi-3: one gate_up_proj instead of gate, up
    attention_sinks: bool = False  # gpt-oss: one learned sink logit per head
    attn_logit_softcap: float = 0.0  # Gemma 2: tanh soft-capping of attention scores (0: none)
    final_logit_softcap: float = 0.0  # Gemma 2: of the output logits
    # --- multi-head latent attention (DeepSeek-V2/V3); kv_lora_rank 0: ordinary attention --
    q_lora_rank: int = 0  # 0: a plain q_proj (DeepSeek-V2-Lite)
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    # --- mixture of experts; num_experts 0: dense ------------------------------------------
    num_experts: int = 0  # routed experts per MoE layer
    num_experts_per_tok: int = 0  # top-k
    moe_intermediate_size: int = 0  # one routed expert's MLP width
    num_shared_experts: int = 0  # always-active shared experts (DeepSeek n_shared_experts, Llama 4: 1)
    shared_expert_intermediate_size: int = 0  # width of the shared MLP (all shared experts fused)
    moe_layers: tuple = ()  # indices of the MoE layers (stored as a LayerIndices); empty with num_experts > 0: every layer
    router_bias: bool = False  # gpt-oss
    expert_bias: bool = False  # gpt-oss: biases on every expert's projections
    # --- attention span per layer ---------------------------------------------------------
    layer_types: tuple = ()  # per layer, one of LAYER_TYPES (stored as a LayerPattern); empty: all full (or all
    # sliding if sliding_window)
    sliding_window: int = 0  # tokens a sliding_attention layer sees (and caches)
    attention_chunk_size: int = 0  # tokens of a chunked_attention layer's chunk (Llama 4)
    # --- output head ------------------------------------------------------------------------
    head: str = "lm"
    num_labels: int = 0  # score head width (sequence classification)
    quantization: str = ""  # the weight format the checkpoint is released in ("" : 16-bit)
    quantization_group_size: int = 0  # int4-gptq/int4-awq: quantization_config group_size (0: the default 128)
    quantization_double_quant: bool = True  # nf4: bnb_4bit_use_double_quant (False: fp32 absmax per block)
    source: str = field(default="", compare=False)
    omitted: str = field(default="", compare=False)  # what the config describes but is not counted

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty string, got {self.name!r}")
        # Store plain Python ints: numpy int32 sizes overflow in products (issue 11) and int64
        # ones break json.dumps; positive_int validates, the setattr keeps what it returns.
        for f in ("hidden_size", "num_layers", "num_heads", "intermediate_size", "vocab_size",
                  "max_position_embeddings"):
            object.__setattr__(self, f, positive_int(f, getattr(self, f)))
        for f in ("num_kv_heads", "head_dim", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                  "qk_rope_head_dim", "v_head_dim", "num_experts", "num_experts_per_tok",
                  "moe_intermediate_size", "num_shared_experts", "shared_expert_intermediate_size",
                  "sliding_window", "attention_chunk_size", "num_labels", "quantization_group_size"):
            object.__setattr__(self, f, positive_int(f, getattr(self, f), allow_zero=True))
        for f in ("tie_word_embeddings", "qkv_bias", "o_bias", "mlp_bias", "fused_qkv", "fused_gate_up",
                  "attention_sinks", "router_bias", "expert_bias", "quantization_double_quant"):
            object.__setattr__(self, f, _flag(f, getattr(self, f)))
        for f in ("attn_logit_softcap", "final_logit_softcap"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0 <= v < float("inf"):
                raise ValueError(f"{f} must be a number >= 0 (0: no soft-capping), got {v!r}")
            object.__setattr__(self, f, float(v))
        for f, kinds in (("mlp", MLP_KINDS), ("norm", NORM_KINDS), ("position", POSITION_KINDS),
                         ("activation", ACTIVATIONS), ("norm_layout", NORM_LAYOUTS), ("qk_norm", QK_NORMS),
                         ("head", HEADS), ("quantization", RELEASED_FORMATS)):
            if not isinstance(getattr(self, f), str) or getattr(self, f) not in kinds:
                raise ValueError(f"unknown {f} {getattr(self, f)!r}; accepted: {', '.join(repr(k) for k in kinds)}")
        if not isinstance(self.model_type, str):
            raise ValueError(f"model_type must be a string, got {self.model_type!r}")
        _check_quantization_options(self)
        _check_layer_count(self.num_layers)
        if self.num_kv_heads == 0:
            object.__setattr__(self, "num_kv_heads", self.num_heads)
        if self.kv_lora_rank:
            if not (self.qk_nope_head_dim and self.qk_rope_head_dim and self.v_head_dim):
                raise ValueError("multi-head latent attention (kv_lora_rank > 0) needs qk_nope_head_dim, "
                                 "qk_rope_head_dim and v_head_dim")
            object.__setattr__(self, "head_dim", self.qk_nope_head_dim + self.qk_rope_head_dim)
        elif self.q_lora_rank:
            raise ValueError("q_lora_rank is part of multi-head latent attention: give kv_lora_rank too")
        if self.head_dim == 0:
            if self.hidden_size % self.num_heads:
                raise ValueError(f"hidden_size {self.hidden_size} is not divisible by num_heads "
                                 f"{self.num_heads}; give head_dim explicitly")
            object.__setattr__(self, "head_dim", self.hidden_size // self.num_heads)
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_heads {self.num_heads} must be a multiple of num_kv_heads {self.num_kv_heads}")
        self._check_moe()
        self._check_layer_types()
        if self.head == "score" and not self.num_labels:
            raise ValueError("a sequence-classification head needs num_labels >= 1")
        if self.head != "score" and self.num_labels:
            raise ValueError(f"num_labels is the score head's width; head {self.head!r} has none")
        if (self.mlp != "gated" or self.position != "rope") and self._is_variant():
            raise ValueError("the layer variants (MoE, MLA, q/k norms, fused projections, other norm layouts) "
                             "are modelled for gated-MLP RoPE models only")

    def _check_moe(self):
        moe_fields = (self.num_experts_per_tok, self.moe_intermediate_size, self.num_shared_experts,
                      self.shared_expert_intermediate_size, self.router_bias, self.expert_bias, self.moe_layers)
        if not self.num_experts:
            if any(moe_fields):
                raise ValueError("mixture-of-experts fields are set but num_experts is 0 (a dense model)")
            return
        if not 1 <= self.num_experts_per_tok <= self.num_experts:
            raise ValueError(f"num_experts_per_tok must be between 1 and num_experts {self.num_experts}, "
                             f"got {self.num_experts_per_tok}")
        if not self.moe_intermediate_size:
            object.__setattr__(self, "moe_intermediate_size", self.intermediate_size)
        if bool(self.num_shared_experts) != bool(self.shared_expert_intermediate_size):
            raise ValueError("num_shared_experts and shared_expert_intermediate_size go together (both 0 or both > 0)")
        layers = self.moe_layers
        if isinstance(layers, LayerIndices):
            if layers.num_layers != self.num_layers:
                raise ValueError(f"moe_layers covers {layers.num_layers:,} layers, the model has {self.num_layers:,}")
        else:
            if not isinstance(layers, (tuple, list)):
                raise ValueError(f"moe_layers must be a tuple of layer indices, got {layers!r}")
            layers = tuple(positive_int("moe_layers entry", i, allow_zero=True) for i in layers)
            if len(set(layers)) != len(layers) or (layers and max(layers) >= self.num_layers):
                raise ValueError(f"moe_layers must be distinct indices below num_layers {self.num_layers}, "
                                 f"got {layers}")
            layers = LayerIndices.from_indices(layers, self.num_layers)
        if not layers:
            layers = LayerIndices(LayerPattern.runs((True, self.num_layers)))
        object.__setattr__(self, "moe_layers", layers)

    def _check_layer_types(self):
        types = self.layer_types
        if not isinstance(types, (tuple, list, LayerPattern)):
            raise ValueError(f"layer_types must be a tuple of strings, got {types!r}")
        if not types:
            types = LayerPattern.runs(("sliding_attention" if self.sliding_window else "full_attention",
                                       self.num_layers))
        if not isinstance(types, LayerPattern):
            for t in types:
                if not isinstance(t, str):
                    raise ValueError(f"unknown layer type {t!r}; accepted: {', '.join(LAYER_TYPES)}")
            types = LayerPattern.of(types)
        if len(types) != self.num_layers:
            raise ValueError(f"layer_types has {len(types)} entries for {self.num_layers} layers")
        for t in types.counts():
            if t not in LAYER_TYPES:
                raise ValueError(f"unknown layer type {t!r}; accepted: {', '.join(LAYER_TYPES)}")
        if "sliding_attention" in types and not self.sliding_window:
            raise ValueError("sliding_attention layers need sliding_window > 0")
        if "chunked_attention" in types and not self.attention_chunk_size:
            raise ValueError("chunked_attention layers need attention_chunk_size > 0")
        object.__setattr__(self, "layer_types", types)

    def _is_variant(self) -> bool:
        return bool(self.num_experts or self.kv_lora_rank or self.qk_norm or self.fused_qkv or self.fused_gate_up
                    or self.norm_layout != "pre" or self.attention_sinks or self.activation != "silu")

    # --- shapes -------------------------------------------------------------------------
    @property
    def q_size(self) -> int:
        """Width of the query projection output: heads x head_dim."""
        return self.num_heads * self.head_dim

    @property
    def kv_size(self) -> int:
        """Width of each of the key and value projection outputs (smaller than q_size under GQA)."""
        return self.num_kv_heads * self.head_dim

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def is_mla(self) -> bool:
        """Multi-head latent attention (DeepSeek-V2 Sec. 2.1): K and V come from a compressed latent."""
        return self.kv_lora_rank > 0

    @property
    def is_llama_layer(self) -> bool:
        """True when every decoder layer is the LLaMA layer (HF LlamaDecoderLayer: pre-norms, q/k/v/o, SwiGLU,
        no q/k norms, no MoE, no MLA), the layer memlib's training estimator was first derived and validated
        on; the other families add their own entries to it (memlib.training.activations)."""
        return self.mlp == "gated" and not self._is_variant() and self.head == "lm"

    @property
    def num_moe_layers(self) -> int:
        return len(self.moe_layers)

    @property
    def num_dense_layers(self) -> int:
        return self.num_layers - len(self.moe_layers)

    def layer_counts(self) -> dict[str, int]:
        """How many layers of each attention type ('full_attention', 'sliding_attention', 'chunked_attention')."""
        counts = self.layer_types.counts()
        return {t: counts[t] for t in LAYER_TYPES if t in counts}

    @cached_property
    def layer_kind_pattern(self) -> LayerPattern:
        """(attention type, is a MoE layer) of every layer, as a LayerPattern (a few segments whatever num_layers)."""
        moe = self.moe_layers.mask if self.is_moe else LayerPattern.runs((False, self.num_layers))
        return self.layer_types.zip(moe)

    def layer_kinds(self, lo: int = 0, hi: int | None = None) -> dict[tuple[str, bool], int]:
        """{(attention type, is a MoE layer): how many} over the layers [lo, hi) (default all), in order of first
        appearance; O(pattern), not O(layers), so a pipeline stage of a 10**9-layer model counts at once."""
        return self.layer_kind_pattern.counts(lo, self.num_layers if hi is None else hi)

    def tensors(self) -> list[Tensor]:
        """Every parameter tensor, in the order the HF implementations create them."""
        return self._tensors

    @cached_property
    def _tensors(self) -> list[Tensor]:
        h, L, V, I = self.hidden_size, self.num_layers, self.vocab_size, self.intermediate_size
        norm_numel = h * (2 if self.norm == "layernorm" else 1)
        t = [Tensor("embed_tokens", V * h, 1, "embedding", (V, h), tp="vocab")]
        if self.position == "learned":
            t.append(Tensor("embed_positions", self.max_position_embeddings * h, 1, "embedding",
                            (self.max_position_embeddings, h)))
        if self.norm_layout != "post":
            t.append(Tensor("input_layernorm", norm_numel, L, "norm", (h,)))
        t += self._attention_tensors()
        if self.norm_layout == "sandwich":  # Gemma: normed attention output, then a pre-MLP norm
            t += [Tensor("post_attention_layernorm", norm_numel, L, "norm", (h,)),
                  Tensor("pre_feedforward_layernorm", norm_numel, L, "norm", (h,))]
        elif self.norm_layout == "pre":
            t.append(Tensor("post_attention_layernorm", norm_numel, L, "norm", (h,)))
        else:  # OLMo 2: the attention output is normed before the residual add
            t.append(Tensor("post_attention_layernorm", norm_numel, L, "norm", (h,)))
        t += self._mlp_tensors(I, L - self.num_moe_layers, "")
        if self.is_moe:
            t += self._moe_tensors()
        if self.norm_layout in ("sandwich", "post"):
            t.append(Tensor("post_feedforward_layernorm", norm_numel, L, "norm", (h,)))
        t.append(Tensor("final_norm", norm_numel, 1, "norm", (h,)))
        if self.head == "lm" and not self.tie_word_embeddings:
            t.append(Tensor("lm_head", V * h, 1, "linear", (h, V), tp="vocab"))
        elif self.head == "score":
            t.append(Tensor("score", h * self.num_labels, 1, "linear", (h, self.num_labels)))
        return t

    def _attention_tensors(self) -> list[Tensor]:
        h, L = self.hidden_size, self.num_layers
        t: list[Tensor] = []
        if self.is_mla:  # DeepSeek-V2 Sec. 2.1.2-2.1.3; HF DeepseekV3Attention
            heads, qk, v = self.num_heads, self.head_dim, self.v_head_dim
            kv_a_out = self.kv_lora_rank + self.qk_rope_head_dim
            b = self.o_bias  # config.attention_bias: q_a_proj, kv_a_proj_with_mqa and o_proj
            if self.q_lora_rank:
                r = self.q_lora_rank
                t += [Tensor("q_a_proj", h * r, L, "linear", (h, r)),
                      *([Tensor("q_a_proj.bias", r, L, "bias", (r,))] if b else []),
                      Tensor("q_a_layernorm", r, L, "norm", (r,)),
                      Tensor("q_b_proj", r * heads * qk, L, "linear", (r, heads * qk), tp="column")]
            else:
                t.append(Tensor("q_proj", h * heads * qk, L, "linear", (h, heads * qk), tp="column"))
            t += [Tensor("kv_a_proj_with_mqa", h * kv_a_out, L, "linear", (h, kv_a_out)),
                  *([Tensor("kv_a_proj_with_mqa.bias", kv_a_out, L, "bias", (kv_a_out,))] if b else []),
                  Tensor("kv_a_layernorm", self.kv_lora_rank, L, "norm", (self.kv_lora_rank,)),
                  Tensor("kv_b_proj", self.kv_lora_rank * heads * (self.qk_nope_head_dim + v), L, "linear",
                         (self.kv_lora_rank, heads * (self.qk_nope_head_dim + v)), tp="column"),
                  Tensor("o_proj", heads * v * h, L, "linear", (heads * v, h), tp="row")]
            if b:
                t.append(Tensor("o_proj.bias", h, L, "bias", (h,)))
            return t
        q, kv = self.q_size, self.kv_size
        if self.attention_sinks:
            t.append(Tensor("sinks", self.num_heads, L, "bias", (self.num_heads,), tp="column"))
        if self.fused_qkv:
            t.append(Tensor("qkv_proj", h * (q + 2 * kv), L, "linear", (h, q + 2 * kv), tp="column"))
        else:
            t += [Tensor("q_proj", h * q, L, "linear", (h, q), tp="column"),
                  Tensor("k_proj", h * kv, L, "linear", (h, kv), tp="column"),
                  Tensor("v_proj", h * kv, L, "linear", (h, kv), tp="column")]
        t.append(Tensor("o_proj", q * h, L, "linear", (q, h), tp="row"))
        if self.qkv_bias:
            t += [Tensor("q_proj.bias", q, L, "bias", (q,), tp="column"),
                  Tensor("k_proj.bias", kv, L, "bias", (kv,), tp="column"),
                  Tensor("v_proj.bias", kv, L, "bias", (kv,), tp="column")]
        if self.o_bias:
            t.append(Tensor("o_proj.bias", h, L, "bias", (h,)))
        if self.qk_norm == "head":
            t += [Tensor("q_norm", self.head_dim, L, "norm", (self.head_dim,)),
                  Tensor("k_norm", self.head_dim, L, "norm", (self.head_dim,))]
        elif self.qk_norm == "full":
            t += [Tensor("q_norm", q, L, "norm", (q,)), Tensor("k_norm", kv, L, "norm", (kv,))]
        return t

    def _mlp_tensors(self, I: int, count: int, prefix: str) -> list[Tensor]:
        """One dense MLP (`count` copies): the layers' own MLP, or a shared expert (prefix 'shared_expert.')."""
        if not count:
            return []
        h = self.hidden_size
        t: list[Tensor] = []
        if self.mlp == "gated":
            if self.fused_gate_up:
                t.append(Tensor(prefix + "gate_up_proj", h * 2 * I, count, "linear", (h, 2 * I), tp="column"))
            else:
                t += [Tensor(prefix + "gate_proj", h * I, count, "linear", (h, I), tp="column"),
                      Tensor(prefix + "up_proj", h * I, count, "linear", (h, I), tp="column")]
            t.append(Tensor(prefix + "down_proj", I * h, count, "linear", (I, h), tp="row"))
            if self.mlp_bias and not prefix:
                t += [Tensor("gate_proj.bias", I, count, "bias", (I,), tp="column"),
                      Tensor("up_proj.bias", I, count, "bias", (I,), tp="column"),
                      Tensor("down_proj.bias", h, count, "bias", (h,))]
        else:
            t += [Tensor("fc_in", h * I, count, "linear", (h, I), tp="column"),
                  Tensor("fc_out", I * h, count, "linear", (I, h), tp="row")]
            if self.mlp_bias:
                t += [Tensor("fc_in.bias", I, count, "bias", (I,), tp="column"),
                      Tensor("fc_out.bias", h, count, "bias", (h,))]
        return t

    def _moe_tensors(self) -> list[Tensor]:
        """Router, stacked routed experts (HF stores each as one (E, ...) parameter) and the shared expert."""
        h, E, Ie, n = self.hidden_size, self.num_experts, self.moe_intermediate_size, self.num_moe_layers
        t = [Tensor("router", E * h, n, "linear", (h, E))]
        if self.router_bias:
            t.append(Tensor("router.bias", E, n, "bias", (E,)))
        t += [Tensor("experts.gate_up_proj", E * h * 2 * Ie, n, "linear", (h, 2 * Ie), experts=E, tp="column"),
              Tensor("experts.down_proj", E * Ie * h, n, "linear", (Ie, h), experts=E, tp="row")]
        if self.expert_bias:
            t += [Tensor("experts.gate_up_proj.bias", E * 2 * Ie, n, "bias", (2 * Ie,), experts=E, tp="column"),
                  Tensor("experts.down_proj.bias", E * h, n, "bias", (h,), experts=E)]
        if self.num_shared_experts:
            t += self._mlp_tensors(self.shared_expert_intermediate_size, n, "shared_expert.")
        return t

    @cached_property
    def num_params(self) -> int:
        """Exact parameter count (tied embeddings counted once, as torch's parameters() does)."""
        return sum(t.numel * t.count for t in self.tensors())

    @cached_property
    def num_active_params(self) -> int:
        """Parameters one token passes through: everything except the routed experts it is not sent to
        (shared experts and top-k routed experts count; embeddings and head count, as Mixtral's 12.9B
        and DeepSeek-V3's 37B do). Equal to num_params for a dense model."""
        inactive = 0
        for t in self.tensors():
            if t.experts:
                inactive += t.numel // t.experts * (t.experts - self.num_experts_per_tok) * t.count
        return self.num_params - inactive

    @cached_property
    def active_params_without_embedding(self) -> int:
        """num_active_params less the input embedding table (a lookup reads one row per token), the way
        DeepSeek-V3 (36.6B 'activated', incl. the 0.9B output head) and OpenAI (gpt-oss-20b: 3.61B
        active) count; a tied embedding stays, it is also the output head."""
        emb = self.vocab_size * self.hidden_size if not (self.tie_word_embeddings and self.head == "lm") else 0
        return self.num_active_params - emb

    @cached_property
    def params_per_layer(self) -> int:
        return sum(t.numel for t in self.tensors() if t.count == self.num_layers and self.num_layers > 0
                   and not t.name.startswith(("embed", "final", "lm_head")))

    @cached_property
    def linear_params(self) -> int:
        """Parameters of matmul weights (what autocast casts to 16-bit); the tied head reuses the embedding."""
        n = sum(t.numel * t.count for t in self.tensors() if t.kind == "linear")
        return n + (self.vocab_size * self.hidden_size if self.tie_word_embeddings and self.head == "lm" else 0)

    @cached_property
    def largest_tensor_numel(self) -> int:
        return max(t.numel for t in self.tensors())

    def __hash__(self) -> int:  # computed once: models key the per-model caches
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash(tuple(getattr(self, f) for f in _HASH_FIELDS))
            self.__dict__["_hash"] = h
        return h

    def with_(self, **changes) -> "Model":
        """A copy with some fields changed, e.g. model.with_(num_layers=2).

        A new num_layers keeps the layer pattern: layer_types repeat cyclically, MoE layers stay
        where they were (all layers if all were), e.g. a 4-layer DeepSeek keeps its 3 dense layers."""
        n = changes.get("num_layers", self.num_layers)
        if n != self.num_layers and isinstance(n, numbers.Integral) and n > 0:
            _check_layer_count(n)  # before the per-layer pattern is repeated n times
            if "layer_types" not in changes:
                changes["layer_types"] = self.layer_types.cycled(n)
            if "moe_layers" not in changes and self.is_moe:
                every = len(self.moe_layers) == self.num_layers
                mask = self.moe_layers.mask
                kept = () if every else LayerIndices(
                    mask[:n] if n <= self.num_layers else mask + LayerPattern.runs((False, n - self.num_layers)))
                if not every and not kept:
                    raise ValueError(f"{self.name} with {n} layers would keep none of its MoE layers "
                                     f"{self.moe_layers[:4]}...; give moe_layers")
                changes["moe_layers"] = kept
        return replace(self, **changes)

    def describe(self) -> str:
        from memlib.units import fmt_count
        gqa = f", GQA {self.num_heads}/{self.num_kv_heads}" if self.num_kv_heads != self.num_heads else ""
        if self.is_mla:
            gqa = f", MLA (latent {self.kv_lora_rank} + rope {self.qk_rope_head_dim})"
        if self.is_moe:
            shared = f" + {self.num_shared_experts} shared" if self.num_shared_experts else ""
            mlp = (f"MoE {self.num_experts} experts of {self.moe_intermediate_size}, top-{self.num_experts_per_tok}"
                   f"{shared}, in {self.num_moe_layers} of {self.num_layers} layers"
                   + (f" (dense MLP {self.intermediate_size})" if self.num_dense_layers else ""))
            active = f", {fmt_count(self.num_active_params)} active per token"
        else:
            mlp, active = f"MLP {self.intermediate_size} ({self.mlp})", ""
        spans = self.layer_counts()
        span = ""
        if "sliding_attention" in spans:
            span += f", {spans['sliding_attention']} sliding-window layers ({self.sliding_window:,} tokens)"
        if "chunked_attention" in spans:
            span += f", {spans['chunked_attention']} chunked-attention layers ({self.attention_chunk_size:,} tokens)"
        head = {"lm": "", "score": f", score head ({self.num_labels} labels)", "none": ", no output head"}[self.head]
        return (f"{self.name}: {fmt_count(self.num_params)} parameters ({self.num_params:,}){active}; "
                f"{self.num_layers} layers, hidden {self.hidden_size}, {self.num_heads} heads{gqa}, "
                f"{mlp}, vocab {self.vocab_size}"
                f"{', tied embeddings' if self.tie_word_embeddings else ''}{span}{head}"
                + (f"; not counted: {self.omitted}" if self.omitted else ""))

    # --- Hugging Face config.json ------------------------------------------------------
    @classmethod
    def from_hf_config(cls, config, name: str | None = None) -> "Model":
        """Read a Hugging Face config.json (a dict, a path to the file, or a folder holding it).

        Supported model_type: see HF_TYPES (defaults follow transformers' config classes).
        `architectures` picks the head: *ForCausalLM / *ForConditionalGeneration an lm_head,
        *ForSequenceClassification a score head (num_labels), *Model none. A
        `quantization_config` sets `Model.quantization`, the released weight format.
        Works offline.
        """
        if isinstance(config, (str, os.PathLike)):
            path = os.fspath(config)
            if os.path.isdir(path):
                path = os.path.join(path, "config.json")
            if not os.path.isfile(path):
                raise ValueError(f"no config.json at {path!r}")
            config = _read_json(path)
            name = name or os.path.basename(os.path.dirname(os.path.abspath(path))) or "hf-model"
        if not isinstance(config, dict):
            raise ValueError(f"config must be a dict or a path to config.json, got {type(config).__name__}")
        if name is not None and (not isinstance(name, str) or not name):
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        return _from_config(cls, config, name)


_HASH_FIELDS = tuple(f.name for f in fields(Model) if f.compare)  # what __eq__ compares


def _flag(name: str, value) -> bool:
    if isinstance(value, bool) or (type(value).__module__ == "numpy" and type(value).__name__ in ("bool_", "bool")):
        return bool(value)
    raise ValueError(f"{name} must be True or False, got {value!r} ({type(value).__name__})")


# --- reading config.json ---------------------------------------------------------------------
def _read_json(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            return refuse_long_ints(json.load(f, parse_int=parse_int), path)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path!r} is not valid JSON: {e}") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"{path!r} is not UTF-8 text (a config.json is JSON): {e.reason} at byte {e.start}") from None
    except RecursionError:
        raise ValueError(f"{path!r} nests too deeply to be a config.json") from None
    except OSError as e:
        raise ValueError(f"cannot read {path!r}: {e.strerror or e}") from None


_MISSING = object()


_FIELD_NAMES = {"num_hidden_layers": "num_layers", "num_attention_heads": "num_heads",
                "num_key_value_heads": "num_kv_heads"}


class _Cfg:
    """Typed access to a config.json dict; every bad value is a ValueError naming the field."""

    def __init__(self, d: dict, where: str):
        self.d, self.where = d, where

    def _raw(self, key, default):
        v = self.d.get(key, _MISSING)
        if v is _MISSING or v is None:
            if default is _MISSING:
                raise ValueError(f"{self.where} is missing {key}")
            return default
        return v

    def int(self, key, default=_MISSING, *, allow_zero=False):
        v = self._raw(key, default)
        if v is None:
            return None
        what = f"{self.where} field {key!r}" + (f" (Model.{_FIELD_NAMES[key]})" if key in _FIELD_NAMES else "")
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise ValueError(f"{what} must be an integer, got {v!r} ({type(v).__name__})")
        if v < 0 or (v == 0 and not allow_zero):
            raise ValueError(f"{what} must be {'>= 0' if allow_zero else '>= 1'}, got {v}")
        return int(v)

    def bool(self, key, default):
        v = self._raw(key, default)
        if not isinstance(v, bool):
            raise ValueError(f"{self.where} field {key!r} must be a JSON boolean (true or false), got {v!r} "
                             f"({type(v).__name__})")
        return v

    def str(self, key, default=_MISSING):
        v = self._raw(key, default)
        if not isinstance(v, str):
            raise ValueError(f"{self.where} field {key!r} must be a string, got {v!r} ({type(v).__name__})")
        return v

    def float(self, key, default):
        v = self._raw(key, default)
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise ValueError(f"{self.where} field {key!r} must be a number, got {v!r}")
        return float(v)

    def int_list(self, key, default=()):
        v = self._raw(key, default)
        if not isinstance(v, (list, tuple)) or not all(isinstance(i, int) and not isinstance(i, bool) for i in v):
            raise ValueError(f"{self.where} field {key!r} must be a list of integers, got {v!r}")
        return tuple(v)

    def str_list(self, key, default=()):
        v = self._raw(key, default)
        if not isinstance(v, (list, tuple)) or not all(isinstance(i, str) for i in v):
            raise ValueError(f"{self.where} field {key!r} must be a list of strings, got {v!r}")
        return tuple(v)


# Per model_type: the architecture prefix of its classes, and defaults where config.json may
# omit a field (transformers 5.24 configuration_*.py). "wraps": a multimodal config whose text
# model is read from text_config (with the text model_type's defaults). From the family records
# (memlib/models/families.py).
HF_TYPES = {t: f.hf_type() for t, f in FAMILIES.items()}
ARCHITECTURE_SUFFIXES = {"ForCausalLM": "lm", "ForConditionalGeneration": "lm",
                         "ForSequenceClassification": "score", "Model": "none"}
# Fields that make a model a mixture of experts in some family; under a dense model_type they
# would be ignored by transformers and the model counted dense, which is never what was meant.
MOE_FIELDS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_intermediate_size")
MLA_FIELDS = ("kv_lora_rank", "q_lora_rank")
QUANT_METHODS = ("gptq", "awq", "bitsandbytes", "fp8", "mxfp4")


def _from_config(cls, config: dict, name):
    c = _Cfg(config, "config.json")
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or model_type not in HF_TYPES:
        shown = model_type if isinstance(model_type, (str, int, float, type(None))) else type(model_type).__name__
        raise ValueError(f"unsupported model_type {shown!r}; supported: {', '.join(HF_TYPES)}")
    fam = HF_TYPES[model_type]
    head, num_labels = _head(c, model_type, fam["prefix"])
    quant, quant_options = quantization_options(c)
    omitted = ""
    if "wraps" in fam:
        text = config.get("text_config")
        if not isinstance(text, dict):
            raise ValueError(f"config.json of model_type {model_type!r} needs a text_config object")
        omitted = fam["omitted"]
        tc = dict(text)
        tc.setdefault("model_type", fam["wraps"])
        if tc.get("model_type") != fam["wraps"]:
            raise ValueError(f"text_config.model_type {tc.get('model_type')!r} under {model_type!r}; "
                             f"expected {fam['wraps']!r}")
        c = _Cfg(tc, "config.json text_config")
        model_type = fam["wraps"]
    elif head == "lm" and c.str_list("architectures", ())[:1] and \
            c.str_list("architectures", ())[0].endswith("ForConditionalGeneration"):
        raise ValueError(f"{c.d['architectures'][0]} is a multimodal class; model_type {model_type!r} is text-only")
    kw = _READERS[families.reader_of(model_type)](c, HF_TYPES[model_type])
    default_name = config.get("_name_or_path")
    if not isinstance(default_name, str) or not default_name:
        default_name = model_type
    return cls(name=name or default_name, model_type=model_type, head=head, num_labels=num_labels,
               quantization=quant, source="Hugging Face config.json", omitted=omitted, **quant_options, **kw)


def _head(c: _Cfg, model_type: str, prefix: str) -> tuple[str, int]:
    archs = c.str_list("architectures", ())
    if not archs:
        return "lm", 0  # transformers' AutoModelForCausalLM is what a config without architectures gets
    arch = archs[0]
    for suffix, head in ARCHITECTURE_SUFFIXES.items():
        if arch.endswith(suffix):
            if arch[: -len(suffix)] != prefix:
                other = [t for t, f in HF_TYPES.items() if f["prefix"] == arch[: -len(suffix)]]
                raise ValueError(f"architectures names {arch!r} but model_type is {model_type!r} "
                                 f"({prefix}* classes)" + (f"; {arch} is model_type {other[0]!r}" if other else ""))
            if head == "score":
                n = c.int("num_labels", 0, allow_zero=True)
                if not n:
                    labels = c.d.get("id2label")
                    n = len(labels) if isinstance(labels, dict) and labels else 2  # PretrainedConfig default
                return head, n
            return head, 0
    raise ValueError(f"unsupported architectures {arch!r}: memlib counts {prefix}ForCausalLM (lm_head), "
                     f"{prefix}ForConditionalGeneration (its text model with lm_head), "
                     f"{prefix}ForSequenceClassification (score head) and {prefix}Model (no head)")


def _refuse_foreign_fields(c: _Cfg, model_type: str, moe: bool, mla: bool):
    if not moe:
        for k in MOE_FIELDS:
            v = c.d.get(k)
            if v not in (None, 0, False):
                raise ValueError(f"config.json has the mixture-of-experts field {k}={v!r}, but model_type "
                                 f"{model_type!r} is a dense model (transformers would ignore it and count a "
                                 "dense model); use the MoE family's model_type (mixtral, qwen3_moe, "
                                 "deepseek_v3, llama4_text, gpt_oss)")
    if not mla:
        for k in MLA_FIELDS:
            v = c.d.get(k)
            if v not in (None, 0, False):
                raise ValueError(f"config.json has the latent-attention field {k}={v!r}, but model_type "
                                 f"{model_type!r} has ordinary attention; use deepseek_v2 or deepseek_v3")



def _head_dim(c, mt) -> int:
    """config.json's head_dim; absent or null: the family's default (0 means hidden_size // heads). An explicit 0
    is refused: transformers would build projections 0 wide (LlamaConfig keeps head_dim as given unless None)."""
    if c.d.get("head_dim", None) is not None and c.d.get("head_dim") == 0 and not isinstance(c.d.get("head_dim"), bool):
        raise ValueError(f"{c.where} field 'head_dim' is 0: a head has no width (transformers takes it as given, only "
                         "a missing or null head_dim defaults to hidden_size // num_attention_heads); remove it or "
                         "give the real width")
    return c.int("head_dim", hf_defaults.head_dim_default(mt), allow_zero=True)

def _common(c: _Cfg, fam: dict, head_dim_default=None, vocab_default=None) -> dict:
    # Defaults of the family's transformers config class (memlib/models/hf_defaults.py); the
    # readers' own head_dim_default / vocab_default arguments are kept for callers, unused.
    mt = c.d["model_type"]
    required = ["hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size"]
    missing = [k for k in required if c.d.get(k) is None]
    if missing:
        raise ValueError(f"{c.where} for {c.d.get('model_type')} is missing {', '.join(missing)}")
    heads = c.int("num_attention_heads")
    _check_layer_count(c.int("num_hidden_layers"))  # before any per-layer list is built
    kv_default = hf_defaults.kv_heads_default(mt, heads)
    if c.d.get("num_key_value_heads") is None and heads % kv_default:
        raise ValueError(f"{c.where} has no num_key_value_heads: transformers' {fam['prefix']}Config defaults it "
                         f"to {kv_default}, which does not divide num_attention_heads {heads}; give "
                         "num_key_value_heads")
    return dict(
        hidden_size=c.int("hidden_size"),
        num_layers=c.int("num_hidden_layers"),
        num_heads=heads,
        num_kv_heads=c.int("num_key_value_heads", kv_default),
        head_dim=_head_dim(c, mt),
        intermediate_size=c.int("intermediate_size"),
        vocab_size=c.int("vocab_size", hf_defaults.vocab_default(mt)),
        max_position_embeddings=c.int("max_position_embeddings", fam["max_position_embeddings"]),
        tie_word_embeddings=c.bool("tie_word_embeddings", False),
    )


def _act(c: _Cfg, key: str, default: str, accepted: dict) -> str:
    act = c.str(key, default)
    if act not in accepted:
        raise ValueError(f"{key} {act!r} is not supported (expected {' or '.join(accepted)})")
    return accepted[act]


_SILU = {"silu": "silu", "swish": "silu"}


def _layer_types(c: _Cfg, n: int, default: tuple) -> tuple:
    types = c.str_list("layer_types", ())
    return LayerPattern.of(types) if types else default


def _every(n: int, step: int, every, other) -> LayerPattern:
    """Layer i is `every` when (i + 1) % step == 0, else `other`, over n layers (a LayerPattern)."""
    return LayerPattern.periodic(((other, step - 1), (every, 1)), n)


def _qwen_window(c: _Cfg, n: int) -> dict:
    """Qwen2/Qwen3: sliding window only with use_sliding_window, on layers >= max_window_layers."""
    if not c.bool("use_sliding_window", False):
        return {}  # Qwen2Config sets sliding_window to None: every layer attends to everything
    w = c.int("sliding_window", 4096)
    first = c.int("max_window_layers", 28, allow_zero=True)
    return {"sliding_window": w, "layer_types": _layer_types(
        c, n, LayerPattern.runs(("full_attention", min(first, n)), ("sliding_attention", max(n - first, 0))))}


def _read_llama(c, fam):
    _refuse_foreign_fields(c, c.d["model_type"], False, False)  # (also a family that reuses this reader)
    bias = c.bool("attention_bias", False)
    return dict(**_common(c, fam), qkv_bias=bias, o_bias=bias, mlp_bias=c.bool("mlp_bias", False),
                activation=_act(c, "hidden_act", "silu", _SILU))


def _read_mistral(c, fam):
    _refuse_foreign_fields(c, c.d["model_type"], False, False)  # (also a family that reuses this reader)
    kw = _common(c, fam)
    # MistralConfig's default is a 4,096-token window (v0.1); v0.2 and later write "sliding_window": null.
    w = 0 if "sliding_window" in c.d and c.d["sliding_window"] is None else c.int("sliding_window", 4096)
    return dict(**kw, activation=_act(c, "hidden_act", "silu", _SILU), sliding_window=w)


def _read_qwen2(c, fam):
    _refuse_foreign_fields(c, c.d["model_type"], False, False)  # (also a family that reuses this reader)
    kw = _common(c, fam)
    return dict(**kw, qkv_bias=True, activation=_act(c, "hidden_act", "silu", _SILU),
                **_qwen_window(c, kw["num_layers"]))


def _read_qwen3(c, fam, moe=False):
    _refuse_foreign_fields(c, "qwen3_moe" if moe else "qwen3", moe, False)
    kw = _common(c, fam, head_dim_default=128)
    bias = c.bool("attention_bias", False)
    out = dict(**kw, qkv_bias=bias, o_bias=bias, qk_norm="head", activation=_act(c, "hidden_act", "silu", _SILU),
               **_qwen_window(c, kw["num_layers"]))
    if moe:  # HF Qwen3MoeDecoderLayer: MoE unless in mlp_only_layers, every decoder_sparse_step-th layer
        E = c.int("num_experts", 128)
        step = c.int("decoder_sparse_step", 1)
        n = kw["num_layers"]
        dense = {i for i in c.int_list("mlp_only_layers", ()) if 0 <= i < n}
        moe = _every(n, step, True, False)
        if dense:
            moe = moe.zip(LayerIndices.from_indices(dense, n).mask).map(lambda v: v[0] and not v[1])
        out.update(num_experts=E, num_experts_per_tok=c.int("num_experts_per_tok", 8),
                   moe_intermediate_size=c.int("moe_intermediate_size", 768), moe_layers=LayerIndices(moe))
        out = dense_if_no_moe(out)  # every layer in mlp_only_layers: transformers builds a dense model
    return out


def _read_mixtral(c, fam):
    kw = _common(c, fam)
    w = c.int("sliding_window", 0, allow_zero=True)
    return dict(**kw, activation=_act(c, "hidden_act", "silu", _SILU), sliding_window=w,
                num_experts=c.int("num_local_experts", 8), num_experts_per_tok=c.int("num_experts_per_tok", 2))


_GELU = {"gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu"}


def _read_gemma(c, fam, gen: int):
    _refuse_foreign_fields(c, "gemma%d" % gen, False, False)
    # Gemma3TextConfig's vocab_size default, 262,208: Gemma 3 config.json files omit the field.
    kw = _common(c, fam, head_dim_default=256, vocab_default=262208 if gen == 3 else _MISSING)
    kw["tie_word_embeddings"] = c.bool("tie_word_embeddings", True)
    n = kw["num_layers"]
    bias = c.bool("attention_bias", False)
    act_key = "hidden_activation" if "hidden_activation" in c.d else "hidden_act"
    if gen == 2:  # Gemma2Config: every other layer local
        pattern = 2
        caps = dict(attn_logit_softcap=c.float("attn_logit_softcapping", 50.0),
                    final_logit_softcap=c.float("final_logit_softcapping", 30.0))
    else:  # Gemma3TextConfig: sliding_window_pattern (default 6): 5 local layers, then 1 global
        pattern = c.int("sliding_window_pattern", 6)
        caps = dict(attn_logit_softcap=c.float("attn_logit_softcapping", 0.0),
                    final_logit_softcap=c.float("final_logit_softcapping", 0.0))
    types = _layer_types(c, n, _every(n, pattern, "full_attention", "sliding_attention"))
    return dict(**kw, qkv_bias=bias, o_bias=bias, norm_layout="sandwich", qk_norm="head" if gen == 3 else "",
                activation=_act(c, act_key, "gelu_pytorch_tanh", _GELU), sliding_window=c.int("sliding_window", 4096),
                layer_types=types, **caps)


def _read_phi3(c, fam):
    _refuse_foreign_fields(c, "phi3", False, False)
    kw = _common(c, fam)
    return dict(**kw, fused_qkv=True, fused_gate_up=True, activation=_act(c, "hidden_act", "silu", _SILU),
                sliding_window=c.int("sliding_window", 0, allow_zero=True))


def _read_deepseek(c, fam, v: int):
    kw = _common(c, fam)
    kw["head_dim"] = 0  # DeepseekV*Config.head_dim is the rope dim; MLA's head dims are their own fields
    n = kw["num_layers"]
    first = c.int("first_k_dense_replace", 3 if v == 3 else 0, allow_zero=True)
    freq = c.int("moe_layer_freq", 1)
    if freq != 1:
        raise ValueError(f"moe_layer_freq {freq}: transformers' DeepseekV{v} makes every layer from "
                         "first_k_dense_replace on a MoE layer; memlib follows it and refuses other values")
    shared = c.int("n_shared_experts", 1 if v == 3 else 2, allow_zero=True)
    moe_I = c.int("moe_intermediate_size", 2048 if v == 3 else 1407)
    # "q_lora_rank": null means no query compression (DeepSeek-V2-Lite): a plain q_proj.
    q_rank = 0 if "q_lora_rank" in c.d and c.d["q_lora_rank"] is None else c.int("q_lora_rank", 1536, allow_zero=True)
    mla = dict(q_lora_rank=q_rank, kv_lora_rank=c.int("kv_lora_rank", 512),
               qk_nope_head_dim=c.int("qk_nope_head_dim", 128), qk_rope_head_dim=c.int("qk_rope_head_dim", 64),
               v_head_dim=c.int("v_head_dim", 128))
    bias = c.bool("attention_bias", False)
    out = dict(**kw, **mla, o_bias=bias, mlp_bias=c.bool("mlp_bias", False) if v == 2 else False,
               activation=_act(c, "hidden_act", "silu", _SILU),
               num_experts=c.int("n_routed_experts", 256 if v == 3 else 64),
               num_experts_per_tok=c.int("num_experts_per_tok", 8 if v == 3 else _MISSING),
               moe_intermediate_size=moe_I, num_shared_experts=shared,
               shared_expert_intermediate_size=moe_I * shared,
               moe_layers=LayerIndices(LayerPattern.runs((False, min(first, n)), (True, max(n - first, 0)))))
    return dense_if_no_moe(out)  # num_hidden_layers <= first_k_dense_replace: every layer dense


def _read_llama4(c, fam):
    kw = _common(c, fam, head_dim_default=128)
    n = kw["num_layers"]
    step = c.int("interleave_moe_layer_step", 1)
    # Llama4TextConfig: moe_layers (even []) overrides interleave_moe_layer_step; no MoE layer is a dense model
    if c.d.get("moe_layers") is not None:
        moe_layers = LayerIndices.from_indices(moe_layer_set(c.int_list("moe_layers"), n, "moe_layers"), n)
    else:
        moe_layers = LayerIndices(_every(n, step, True, False))
    expert_I = kw["intermediate_size"]
    kw["intermediate_size"] = c.int("intermediate_size_mlp", 16384)  # the dense layers' MLP
    chunk = c.int("attention_chunk_size", 8192, allow_zero=True)
    interval = c.int("no_rope_layer_interval", 4)
    rope = c.int_list("no_rope_layers", ())
    rope = LayerPattern.of(rope) if rope else _every(n, interval, 0, 1)
    types = _layer_types(c, n, rope.map(lambda r: "chunked_attention" if r and chunk else "full_attention"))
    bias = c.bool("attention_bias", False)
    return dense_if_no_moe(dict(
        **kw, qkv_bias=bias, o_bias=bias, activation=_act(c, "hidden_act", "silu", _SILU),
        num_experts=c.int("num_local_experts", 16), num_experts_per_tok=c.int("num_experts_per_tok", 1),
        moe_intermediate_size=expert_I, num_shared_experts=1, shared_expert_intermediate_size=expert_I,
        moe_layers=moe_layers, attention_chunk_size=chunk, layer_types=types))


def _read_gpt_oss(c, fam):
    kw = _common(c, fam, head_dim_default=64)
    n = kw["num_layers"]
    bias = c.bool("attention_bias", True)
    k = c.int("num_experts_per_tok", 4)  # GptOssConfig's field; config.json's "experts_per_token" is unread there
    types = _layer_types(c, n, _every(n, 2, "full_attention", "sliding_attention"))
    return dict(**kw, qkv_bias=bias, o_bias=bias, attention_sinks=True, activation="silu",
                num_experts=c.int("num_local_experts", 128), num_experts_per_tok=k, router_bias=True,
                expert_bias=True, sliding_window=c.int("sliding_window", 128), layer_types=types)


def _read_olmo2(c, fam):
    _refuse_foreign_fields(c, "olmo2", False, False)
    bias = c.bool("attention_bias", False)
    return dict(**_common(c, fam), qkv_bias=bias, o_bias=bias, qk_norm="full", norm_layout="post",
                activation=_act(c, "hidden_act", "silu", _SILU))


def _moe_only(reader, model_type):
    def read(c, fam):
        _refuse_foreign_fields(c, model_type, True, model_type.startswith("deepseek"))
        return reader(c, fam)
    return read


# The config readers, by name (a family's record names its reader: memlib/models/families.py)
_READERS = {
    "llama": _read_llama,
    "mistral": _read_mistral,
    "qwen2": _read_qwen2,
    "qwen3": lambda c, f: _read_qwen3(c, f),
    "qwen3_moe": _moe_only(lambda c, f: _read_qwen3(c, f, moe=True), "qwen3_moe"),
    "mixtral": _moe_only(_read_mixtral, "mixtral"),
    "gemma2": lambda c, f: _read_gemma(c, f, 2),
    "gemma3_text": lambda c, f: _read_gemma(c, f, 3),
    "phi3": _read_phi3,
    "deepseek_v2": _moe_only(lambda c, f: _read_deepseek(c, f, 2), "deepseek_v2"),
    "deepseek_v3": _moe_only(lambda c, f: _read_deepseek(c, f, 3), "deepseek_v3"),
    "llama4_text": _moe_only(_read_llama4, "llama4_text"),
    "gpt_oss": _moe_only(_read_gpt_oss, "gpt_oss"),
    "olmo2": _read_olmo2,
}


# --- the catalog: memlib/models/data/models.json -----------------------------------------------
# One record per model with its source: either Model fields ("architecture") or the published
# config.json ("hf_config", read by Model.from_hf_config like any pasted config); then "aliases".
# tests/test_catalog_schema.py checks every record.
def _read_catalog() -> dict:
    """The parsed data file (memlib/models/data/models.json), shipped inside the package."""
    return json.loads(resources.files("memlib.models").joinpath("data", "models.json").read_text(encoding="utf-8"))


def _model_from_record(rec: dict) -> Model:
    """One catalog record -> Model; a config.json record is read exactly as a pasted config.json."""
    if "hf_config" in rec:
        return replace(Model.from_hf_config(rec["hf_config"], name=rec["name"]), source=rec["source"])
    return Model(rec["name"], source=rec["source"], **rec["architecture"])


_RAW = _read_catalog()
CATALOG: dict[str, Model] = {r["name"]: _model_from_record(r) for r in _RAW["models"]}
ALIASES: dict[str, str] = dict(_RAW["aliases"])


def _family(key: str) -> str:
    """'mixtral' of 'mixtral-8x7b', 'llama' of 'llama-3.1-8b', 'qwen' of 'qwen3-8b'."""
    m = re.match(r"[a-z]+", key)
    return m.group(0) if m else ""


def _sizes(key: str) -> set:
    """Size tokens: '8x7b', '7b', '0.5b', 'a3b' (active size)."""
    return set(re.findall(r"\d+(?:\.\d+)?x\d+(?:\.\d+)?b|a?\d+(?:\.\d+)?b", key))


def suggest_models(key: str, n: int = 4) -> list[str]:
    """Close catalog names, same family first: 'mixtral-8x7' suggests mixtral-8x7b, never mistral-7b
    ahead of it; among one family, names sharing a size token rank first."""
    names = list(CATALOG) + list(ALIASES)
    fam = _family(key)
    sizes = _sizes(key)

    def score(c: str) -> float:
        s = difflib.SequenceMatcher(None, key, c).ratio()
        if fam and _family(c) == fam:
            s += 1.0
        if sizes & _sizes(c):
            s += 0.5
        return s

    ranked = sorted((c for c in names if difflib.SequenceMatcher(None, key, c).ratio() >= 0.5
                     or (fam and _family(c) == fam)), key=score, reverse=True)
    out = []
    for c in ranked:
        c = ALIASES.get(c, c)
        if c not in out:
            out.append(c)
    return out[:n]


def get_model(name: str) -> Model:
    """A catalog model by name ('llama-65b', 'mixtral-8x7b', ...); ValueError with close names if unknown."""
    if isinstance(name, Model):
        return name
    if not isinstance(name, str):
        raise ValueError(f"model name must be a string, got {name!r}")
    key = name.strip().lower().replace("_", "-").replace(" ", "-")
    key = ALIASES.get(key, key)
    if key in CATALOG:
        return CATALOG[key]
    close = suggest_models(key)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise ValueError(f"unknown model {name!r}.{hint} Known: {', '.join(sorted(CATALOG))}")


def list_models() -> list[str]:
    return list(CATALOG)
