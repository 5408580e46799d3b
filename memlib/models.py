"""Model architectures and exact parameter counts.

A `Model` is the shape of a decoder-only transformer, enough to count every tensor and
every saved activation. Parameter counts are exact: summed tensor by tensor as the
Hugging Face implementations create them (LlamaForCausalLM, MistralForCausalLM,
Qwen2ForCausalLM), so they match `sum(p.numel() for p in model.parameters())`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, fields, replace
from functools import cached_property

from memlib._checks import lookup, positive_int

MLP_KINDS = ("gated", "standard")  # gated: SwiGLU, 3 matrices (LLaMA); standard: 2 matrices + GELU (GPT)
NORM_KINDS = ("rmsnorm", "layernorm")  # layernorm has a bias, rmsnorm does not
POSITION_KINDS = ("rope", "learned")


@dataclass(frozen=True)
class Tensor:
    """One parameter tensor of the model; `count` copies of it (one per layer for layer tensors)."""

    name: str
    numel: int
    count: int = 1
    kind: str = "linear"  # "linear" | "embedding" | "norm" | "bias"


@dataclass(frozen=True)
class Model:
    name: str
    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    vocab_size: int
    num_kv_heads: int = 0  # 0: same as num_heads (multi-head attention); fewer: GQA
    head_dim: int = 0  # 0: hidden_size // num_heads
    tie_word_embeddings: bool = False
    qkv_bias: bool = False  # Qwen2 has biases on q, k and v only
    o_bias: bool = False
    mlp: str = "gated"
    mlp_bias: bool = False
    norm: str = "rmsnorm"
    position: str = "rope"
    max_position_embeddings: int = 2048
    model_type: str = "llama"
    source: str = field(default="", compare=False)

    def __post_init__(self):
        for f in ("hidden_size", "num_layers", "num_heads", "intermediate_size", "vocab_size",
                  "max_position_embeddings"):
            positive_int(f, getattr(self, f))
        positive_int("num_kv_heads", self.num_kv_heads, allow_zero=True)
        positive_int("head_dim", self.head_dim, allow_zero=True)
        if self.num_kv_heads == 0:
            object.__setattr__(self, "num_kv_heads", self.num_heads)
        if self.head_dim == 0:
            if self.hidden_size % self.num_heads:
                raise ValueError(f"hidden_size {self.hidden_size} is not divisible by num_heads "
                                 f"{self.num_heads}; give head_dim explicitly")
            object.__setattr__(self, "head_dim", self.hidden_size // self.num_heads)
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_heads {self.num_heads} must be a multiple of num_kv_heads {self.num_kv_heads}")
        for f, kinds in (("mlp", MLP_KINDS), ("norm", NORM_KINDS), ("position", POSITION_KINDS)):
            if getattr(self, f) not in kinds:
                raise ValueError(f"unknown {f} {getattr(self, f)!r}; accepted: {', '.join(kinds)}")

    # --- shapes -------------------------------------------------------------------------
    @property
    def q_size(self) -> int:
        """Width of the query projection output: heads x head_dim."""
        return self.num_heads * self.head_dim

    @property
    def kv_size(self) -> int:
        """Width of each of the key and value projection outputs (smaller than q_size under GQA)."""
        return self.num_kv_heads * self.head_dim

    def tensors(self) -> list[Tensor]:
        """Every parameter tensor, in the order the HF implementations create them."""
        return self._tensors

    @cached_property
    def _tensors(self) -> list[Tensor]:
        h, L, V, I = self.hidden_size, self.num_layers, self.vocab_size, self.intermediate_size
        norm_numel = h * (2 if self.norm == "layernorm" else 1)
        t = [Tensor("embed_tokens", V * h, 1, "embedding")]
        if self.position == "learned":
            t.append(Tensor("embed_positions", self.max_position_embeddings * h, 1, "embedding"))
        t += [
            Tensor("input_layernorm", norm_numel, L, "norm"),
            Tensor("q_proj", h * self.q_size, L),
            Tensor("k_proj", h * self.kv_size, L),
            Tensor("v_proj", h * self.kv_size, L),
            Tensor("o_proj", self.q_size * h, L),
        ]
        if self.qkv_bias:
            t += [Tensor("q_proj.bias", self.q_size, L, "bias"), Tensor("k_proj.bias", self.kv_size, L, "bias"),
                  Tensor("v_proj.bias", self.kv_size, L, "bias")]
        if self.o_bias:
            t.append(Tensor("o_proj.bias", h, L, "bias"))
        t.append(Tensor("post_attention_layernorm", norm_numel, L, "norm"))
        if self.mlp == "gated":
            t += [Tensor("gate_proj", h * I, L), Tensor("up_proj", h * I, L), Tensor("down_proj", I * h, L)]
            if self.mlp_bias:
                t += [Tensor("gate_proj.bias", I, L, "bias"), Tensor("up_proj.bias", I, L, "bias"),
                      Tensor("down_proj.bias", h, L, "bias")]
        else:
            t += [Tensor("fc_in", h * I, L), Tensor("fc_out", I * h, L)]
            if self.mlp_bias:
                t += [Tensor("fc_in.bias", I, L, "bias"), Tensor("fc_out.bias", h, L, "bias")]
        t.append(Tensor("final_norm", norm_numel, 1, "norm"))
        if not self.tie_word_embeddings:
            t.append(Tensor("lm_head", V * h, 1))
        return t

    @cached_property
    def num_params(self) -> int:
        """Exact parameter count (tied embeddings counted once, as torch's parameters() does)."""
        return sum(t.numel * t.count for t in self.tensors())

    @cached_property
    def params_per_layer(self) -> int:
        return sum(t.numel for t in self.tensors() if t.count == self.num_layers and self.num_layers > 0
                   and not t.name.startswith(("embed", "final", "lm_head")))

    @cached_property
    def linear_params(self) -> int:
        """Parameters of matmul weights (what autocast casts to 16-bit); the tied head reuses the embedding."""
        n = sum(t.numel * t.count for t in self.tensors() if t.kind == "linear")
        return n + (self.vocab_size * self.hidden_size if self.tie_word_embeddings else 0)

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
        """A copy with some fields changed, e.g. model.with_(num_layers=2)."""
        return replace(self, **changes)

    def describe(self) -> str:
        from memlib.units import fmt_count
        gqa = f", GQA {self.num_heads}/{self.num_kv_heads}" if self.num_kv_heads != self.num_heads else ""
        return (f"{self.name}: {fmt_count(self.num_params)} parameters ({self.num_params:,}); "
                f"{self.num_layers} layers, hidden {self.hidden_size}, {self.num_heads} heads{gqa}, "
                f"MLP {self.intermediate_size} ({self.mlp}), vocab {self.vocab_size}"
                f"{', tied embeddings' if self.tie_word_embeddings else ''}")

    # --- Hugging Face config.json ------------------------------------------------------
    @classmethod
    def from_hf_config(cls, config, name: str | None = None) -> "Model":
        """Read a Hugging Face config.json (a dict, a path to the file, or a folder holding it).

        Supported model_type: llama, mistral, qwen2 (their defaults follow transformers'
        LlamaConfig, MistralConfig and Qwen2Config). Works offline.
        """
        if isinstance(config, (str, os.PathLike)):
            path = os.fspath(config)
            if os.path.isdir(path):
                path = os.path.join(path, "config.json")
            if not os.path.isfile(path):
                raise ValueError(f"no config.json at {path!r}")
            try:
                with open(path, encoding="utf-8") as f:
                    config = json.load(f)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path!r} is not valid JSON: {e}") from None
            name = name or os.path.basename(os.path.dirname(os.path.abspath(path))) or "hf-model"
        if not isinstance(config, dict):
            raise ValueError(f"config must be a dict or a path to config.json, got {type(config).__name__}")
        model_type = config.get("model_type")
        if model_type not in HF_TYPES:
            raise ValueError(f"unsupported model_type {model_type!r}; supported: {', '.join(HF_TYPES)}")
        required = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size")
        missing = [k for k in required if k not in config]
        if missing:
            raise ValueError(f"config.json for {model_type} is missing {', '.join(missing)}")
        act = config.get("hidden_act", "silu")
        if act not in ("silu", "swish"):
            raise ValueError(f"hidden_act {act!r} is not supported (expected silu, the gated SwiGLU MLP)")
        defaults = HF_TYPES[model_type]
        return cls(
            name=name or config.get("_name_or_path") or model_type,
            hidden_size=config["hidden_size"],
            num_layers=config["num_hidden_layers"],
            num_heads=config["num_attention_heads"],
            num_kv_heads=config.get("num_key_value_heads") or config["num_attention_heads"],
            head_dim=config.get("head_dim") or 0,
            intermediate_size=config["intermediate_size"],
            vocab_size=config["vocab_size"],
            tie_word_embeddings=bool(config.get("tie_word_embeddings", False)),
            qkv_bias=defaults["qkv_bias"] if defaults["qkv_bias"] is not None else bool(config.get("attention_bias", False)),
            o_bias=False if defaults["qkv_bias"] is not None else bool(config.get("attention_bias", False)),
            mlp_bias=bool(config.get("mlp_bias", False)),
            max_position_embeddings=config.get("max_position_embeddings", defaults["max_position_embeddings"]),
            model_type=model_type,
            source="Hugging Face config.json",
        )


_HASH_FIELDS = tuple(f.name for f in fields(Model) if f.compare)  # what __eq__ compares

# qkv_bias None: read config["attention_bias"] (llama puts it on q, k, v and o alike).
HF_TYPES = {
    "llama": {"qkv_bias": None, "max_position_embeddings": 2048},
    "mistral": {"qkv_bias": False, "max_position_embeddings": 4096 * 32},
    "qwen2": {"qkv_bias": True, "max_position_embeddings": 32768},
}


def _llama(name, h, L, a, I, V=32000, kv=0, ctx=2048, source="", **kw):
    return Model(name, hidden_size=h, num_layers=L, num_heads=a, intermediate_size=I, vocab_size=V,
                 num_kv_heads=kv, max_position_embeddings=ctx, source=source, **kw)


_LLAMA1 = "Touvron et al. 2023, LLaMA, Table 2; HF config.json of huggyllama/llama-*"
_LLAMA2 = "Touvron et al. 2023, Llama 2, Table 1; HF config.json of meta-llama/Llama-2-*-hf"
_LLAMA3 = "Meta Llama 3 model card; HF config.json of meta-llama/Meta-Llama-3-*"
_VICUNA = "LMSYS Vicuna (LLaMA fine-tune, same architecture as the LLaMA base); lmsys/vicuna-*-v1.3 config.json"

CATALOG: dict[str, Model] = {m.name: m for m in [
    _llama("llama-7b", 4096, 32, 32, 11008, source=_LLAMA1),
    _llama("llama-13b", 5120, 40, 40, 13824, source=_LLAMA1),
    _llama("llama-33b", 6656, 60, 52, 17920, source=_LLAMA1),
    _llama("llama-65b", 8192, 80, 64, 22016, source=_LLAMA1),
    # Vicuna-65B was never released by LMSYS; the seed's model is LLaMA-65B fine-tuned, same shape.
    _llama("vicuna-7b", 4096, 32, 32, 11008, source=_VICUNA),
    _llama("vicuna-13b", 5120, 40, 40, 13824, source=_VICUNA),
    _llama("vicuna-33b", 6656, 60, 52, 17920, source=_VICUNA),
    _llama("vicuna-65b", 8192, 80, 64, 22016, source=_VICUNA + " (65B: LLaMA-65B shape)"),
    _llama("llama-2-7b", 4096, 32, 32, 11008, ctx=4096, source=_LLAMA2),
    _llama("llama-2-13b", 5120, 40, 40, 13824, ctx=4096, source=_LLAMA2),
    _llama("llama-2-70b", 8192, 80, 64, 28672, kv=8, ctx=4096, source=_LLAMA2),
    _llama("llama-3-8b", 4096, 32, 32, 14336, V=128256, kv=8, ctx=8192, source=_LLAMA3),
    _llama("llama-3-70b", 8192, 80, 64, 28672, V=128256, kv=8, ctx=8192, source=_LLAMA3),
    _llama("mistral-7b", 4096, 32, 32, 14336, kv=8, ctx=32768, model_type="mistral",
           source="Jiang et al. 2023, Mistral 7B, Table 1; mistralai/Mistral-7B-v0.1 config.json"),
    _llama("qwen2-0.5b", 896, 24, 14, 4864, V=151936, kv=2, ctx=32768, tie_word_embeddings=True, qkv_bias=True,
           model_type="qwen2", source="Qwen2 Technical Report 2024, Table 1; Qwen/Qwen2-0.5B config.json"),
    _llama("qwen2-7b", 3584, 28, 28, 18944, V=152064, kv=4, ctx=32768, qkv_bias=True, model_type="qwen2",
           source="Qwen2 Technical Report 2024, Table 1; Qwen/Qwen2-7B config.json"),
    Model("gpt-3-175b", hidden_size=12288, num_layers=96, num_heads=96, intermediate_size=4 * 12288,
          vocab_size=50257, tie_word_embeddings=True, qkv_bias=True, o_bias=True, mlp="standard", mlp_bias=True,
          norm="layernorm", position="learned", max_position_embeddings=2048, model_type="gpt",
          source="Brown et al. 2020, GPT-3, Table 2.1 (d_model 12288, 96 layers, 96 heads, context 2048)"),
]}

ALIASES = {"vicuna-65b-v1": "vicuna-65b", "llama2-7b": "llama-2-7b", "llama2-13b": "llama-2-13b",
           "llama2-70b": "llama-2-70b", "llama3-8b": "llama-3-8b", "llama3-70b": "llama-3-70b",
           "gpt3": "gpt-3-175b", "gpt-3": "gpt-3-175b", "mistral-7b-v0.1": "mistral-7b",
           "meta-llama-3-8b": "llama-3-8b", "meta-llama-3-70b": "llama-3-70b", "llama-30b": "llama-33b"}


def get_model(name: str) -> Model:
    """A catalog model by name ('llama-65b', 'mistral-7b', ...); ValueError with close names if unknown."""
    if isinstance(name, Model):
        return name
    return lookup("model", name, CATALOG, ALIASES)


def list_models() -> list[str]:
    return list(CATALOG)
