"""estimate_inference: memory to serve an LLM, per GPU: weights + KV cache + the prefill's workspace.

What is counted (per GPU, exact bytes):
  weights     every tensor of `Model.tensors()` in the storage of the chosen format, the
              quantized formats counted buffer by buffer from their libraries' layouts;
              with tensor parallelism (tp > 1) the Megatron shard one GPU holds. A MoE model
              keeps every expert resident (split over tp, or whole experts over ep GPUs).
  kv_cache    keys and values of batch x context_len tokens in every layer (the cache when
              the context is full; what vLLM preallocates, what HF's DynamicCache grows to).
              A sliding-window layer holds at most its window, a chunked-attention layer
              (Llama 4) its chunk; multi-head latent attention (DeepSeek) caches the
              compressed latent plus the rope key (mla_cache="latent", vLLM/SGLang) or full
              K and V per head (mla_cache="full", transformers' eager cache).
  activations the largest transient of one prefill forward over T tokens without autograd
              (torch.inference_mode): each tensor is freed when its last reference dies, so
              only one layer's intermediates live at a time. T = batch x context_len (HF
              generate's one prefill), or prefill_tokens (vLLM's chunked prefill budget).
  dequant_workspace  quantized formats only: what a quantized matmul allocates on top of
              the activations during a prefill (counted as if it coincided with the largest
              activation moment: an upper bound)

peak = weights + kv_cache + activations + dequant_workspace. It is a serving-capacity
figure: the prefill of a full-context prompt while the cache holds the full context.
Not counted: the CUDA context and allocator headroom (`fits()` adds them), vLLM's
`gpu_memory_utilization` reservation, CUDA graphs, the sampler's top-k/top-p temporaries,
DeepSeek-V3's MTP layer (loaded only for speculative decoding) and the vision towers of
multimodal checkpoints (`Model.omitted`).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from functools import lru_cache

from memlib._checks import choice, flag, model_or_name, positive_int, plain_args
from memlib.models.hf_readers import checkpoint_group_size
from memlib.options import Option, OptionTable, option
from memlib.hardware.fit import Verdict, fits
from memlib.training.lora import nf4_bytes
from memlib.models import Model, Tensor, get_model
from memlib.serving.engines import (DEFAULT_ENGINE, ENGINES, FP8_KV, GGML_BLOCKS, ggml_row_bytes, kv_formats,
                                    llama_cpp_kv_bytes, paged_tokens)
from memlib.units import fmt_bytes, gb, gib

WEIGHT_FORMATS = ("bf16", "fp16", "fp32", "int8", "int8-gptq", "int4-gptq", "int4-awq", "nf4", "fp8-block", "mxfp4")
AUTO = "auto"  # the checkpoint's own format (config.json quantization_config), else bf16
KV_FORMATS = ("bf16", "fp16", "fp8", "int8")
# Every cache type some engine accepts (memlib.serving.engines.kv_formats(engine) says which).
ALL_KV_FORMATS = tuple(dict.fromkeys(KV_FORMATS + FP8_KV + ("fp8_ds_mla",) + tuple(GGML_BLOCKS)))
# "all-fp32": transformers 4.31-4.44's generate, whose LlamaForCausalLM.forward runs the head over every prompt position
# and upcasts all of it (hf_generate_logits)
LOGITS = ("last", "all", "all-fp32")
MLA_CACHES = ("latent", "full")
QUANTIZED = ("int8", "int8-gptq", "int4-gptq", "int4-awq", "nf4", "fp8-block", "mxfp4")
GROUPED = ("int8-gptq", "int4-gptq", "int4-awq")  # the formats with a quantization group (group_size)

# Bytes per element of the unquantized formats; the quantized formats keep every tensor
# they do not quantize (embeddings, lm_head, norms, biases, routers) in 16-bit.
FLOAT_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
# The dtype the matmuls and activations run in: fp32 for fp32 weights, else 16-bit
# (GPTQ/AWQ kernels and LLM.int8() compute in fp16, bitsandbytes 4-bit in bf16 by default).
COMPUTE_BYTES = {"fp32": 4}
# KV cache element bytes; int8 adds its scales (see kv_bytes_per_token).
KV_ELEMENT_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}
FP8_BLOCK = 128  # DeepSeek-V3 weight_block_size [128, 128]
MX_BLOCK = 32  # OCP Microscaling Formats (MX) v1.0, Sec. 5: 32 elements share one E8M0 scale
# vLLM fused_moe processes at most this many tokens per call (vllm/envs.py VLLM_FUSED_MOE_CHUNK_SIZE,
# default 16 * 1024): its workspace is sized for that chunk.
FUSED_MOE_CHUNK = 16 * 1024

BREAKDOWN_KEYS = ("weights", "kv_cache", "activations", "dequant_workspace")

# Megatron-LM tensor parallelism (Shoeybi et al. 2019, Sec. 3): the first matmul of each
# block is split by output columns, the second by input rows. Kept for readers; the split of
# each tensor is its Tensor.tp.
COLUMN_PARALLEL = ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj", "fc_in")
ROW_PARALLEL = ("o_proj", "down_proj", "fc_out")


# --- quantized storage of one linear layer --------------------------------------------------
@plain_args
def quantized_linear_bytes(in_features: int, out_features: int, fmt: str, group_size: int = 128,
                           double_quant: bool = True) -> int:
    """Bytes one (in_features -> out_features) weight matrix occupies in `fmt`, every buffer counted.

    int8      in*out + 4*out: int8 weight CB plus one fp32 absmax per output row (SCB)
              (Dettmers et al. 2022, LLM.int8(), Sec. 3; bitsandbytes Int8Params CB/SCB).
    int4-gptq qweight int32 [in//32*4, out] + qzeros int32 [ceil(in/g), out//32*4]
              + scales fp16 [ceil(in/g), out] + g_idx int32 [in]
              (Frantar et al. 2022, GPTQ; AutoGPTQ qlinear QuantLinear buffers).
    int8-gptq GPTQ with bits=8: qweight int32 [ceil(in*8/32), out] + qzeros int32 [ceil(in/g), ceil(out*8/32)]
              + scales fp16 [ceil(in/g), out] + g_idx int32 [in] = in*out + ceil(in/g)*out*(1 + 2) + 4*in
              bytes (ModelCloud/GPTQModel@f4c327a gptqmodel/nn_modules/qlinear/__init__.py
              _register_gptq_buffers, pack_dtype int32; its torch kernel takes bits 2-8 and any in/out
              width): 8 + 24/g bits per weight, 8.19 at g=128.
    int4-awq  qweight int32 [in, out//8] + qzeros int32 [in//g, out//8] + scales fp16 [in//g, out]
              (Lin et al. 2023, AWQ; AutoAWQ WQLinear_GEMM buffers; no g_idx).
    nf4       memlib.training.lora.nf4_bytes: QLoRA NF4 with double quantization (Dettmers et al. 2023);
              double_quant=False (bnb_4bit_use_double_quant false): an fp32 absmax per 64 weights.
    fp8-block in*out fp8 (e4m3) + 4*ceil(out/128)*ceil(in/128): one fp32 weight_scale_inv per
              128x128 block (DeepSeek-V3 Technical Report Sec. 3.3.2; transformers
              finegrained_fp8 FP8Linear, vLLM block-wise fp8 Fp8LinearMethod).
    mxfp4     out*ceil(in/32)*(16 + 1): 32 E2M1 values packed two per byte plus one E8M0 scale
              byte per block of 32 along the input (OCP MX v1.0; gpt-oss *_blocks/*_scales
              tensors; transformers mxfp4 integration): 4.25 bits per weight.
    bf16/fp16/fp32: in*out*(2, 2, 4).
    """
    i = positive_int("in_features", in_features)
    o = positive_int("out_features", out_features)
    choice("weights", fmt, WEIGHT_FORMATS)
    g = positive_int("group_size", group_size)
    if fmt in FLOAT_BYTES:
        return i * o * FLOAT_BYTES[fmt]
    if fmt == "int8":
        return i * o + 4 * o
    if fmt == "nf4":
        return nf4_bytes(i * o, double_quant=flag("double_quant", double_quant))
    if fmt == "fp8-block":
        return i * o + 4 * -(-o // FP8_BLOCK) * -(-i // FP8_BLOCK)
    if fmt == "mxfp4":
        if i % MX_BLOCK:
            raise ValueError(f"mxfp4 packs blocks of {MX_BLOCK} input features: in_features {i} is not a multiple")
        return o * (i // MX_BLOCK) * (MX_BLOCK // 2 + 1)
    if fmt == "int8-gptq":
        groups = -(-i // g)
        words = lambda n: -(-n * 8 // 32)  # noqa: E731  int32 words holding n 8-bit codes
        return 4 * words(i) * o + 4 * groups * words(o) + 2 * groups * o + 4 * i
    bits = 4
    if fmt == "int4-gptq":
        if i % 32 or o % 32:
            raise ValueError(f"int4-gptq packs 32 input rows and 32 output columns into int32 words: "
                             f"a {i}x{o} layer is not a multiple of 32 on both sides")
        groups = -(-i // g)
        qweight = (i // 32 * bits) * o * 4
        qzeros = groups * (o // 32 * bits) * 4
        scales = groups * o * 2
        g_idx = i * 4
        return qweight + qzeros + scales + g_idx
    # int4-awq
    pack = 32 // bits
    if i % g or o % pack:
        raise ValueError(f"int4-awq needs in_features a multiple of group_size {g} and out_features a "
                         f"multiple of {pack}; got a {i}x{o} layer")
    qweight = i * (o // pack) * 4
    qzeros = (i // g) * (o // pack) * 4
    scales = (i // g) * o * 2
    return qweight + qzeros + scales


# --- which logits transformers' generate makes at the prefill ---------------------------------------
HF_LOGITS_TO_KEEP = (4, 45)  # first release with PR #31292's num_logits_to_keep in LlamaForCausalLM and generate
HF_LOGITS_FLOAT = (4, 31)    # Llama 2's release: `logits = logits.float()` after the pretraining_tp head


def hf_generate_logits(transformers_version: str) -> str:
    """The `logits` setting that describes transformers' generate() at a release, for LLaMA-style models
    (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM and the families copied from them):

    4.31-4.44  "all-fp32": forward runs lm_head over every prompt position and upcasts the whole result
               (`logits = self.lm_head(hidden_states); logits = logits.float()`, the line huggingface/transformers
               issue #30860 proposed to remove), so the prefill holds T x V logits in 16 bits and their fp32 copy.
    4.45 on    "last": PR #31292 (huggingface/transformers, released in v4.45.0) slices the hidden states to
               num_logits_to_keep (now logits_to_keep) before the head and generate passes 1; the upcast is of that
               one row (removed from the model in v4.46, PR #33902; generate's own `.float()` of the last row stays).
    Older releases (no upcast; Llama before v4.31) are not modelled here: pass logits="all" for a plain forward."""
    if not isinstance(transformers_version, str):
        raise ValueError(f"transformers_version must be a version string such as '4.44.2', got "
                         f"{type(transformers_version).__name__}")
    parts = transformers_version.strip().split(".")
    try:
        major, minor = int(parts[0]), int(parts[1])
    except (ValueError, IndexError):
        raise ValueError(f"transformers_version {transformers_version!r} is not a version such as '4.44' or "
                         "'4.44.2'") from None
    if (major, minor) < HF_LOGITS_FLOAT:
        raise ValueError(f"transformers_version {transformers_version!r}: releases before 4.31 are not modelled "
                         "(LlamaForCausalLM had no fp32 upcast then); pass logits='all' for 16-bit logits of every "
                         "position")
    return "all-fp32" if (major, minor) < HF_LOGITS_TO_KEEP else "last"


# --- KV cache --------------------------------------------------------------------------------------
def kv_layer_bytes_per_token(model: Model, kv_cache: str = "bf16", tp: int = 1, mla_cache: str = "latent",
                             kv_cache_v: str | None = None) -> int:
    """KV cache bytes of one token in one layer on one GPU; see kv_bytes_per_token for the formula.

    A llama.cpp (ggml) type, or a K type and a different V type (kv_cache_v): K and V each one row
    of kv_heads/tp x head_dim values in their ggml block format (memlib.serving.engines.ggml_row_bytes)."""
    model = model_or_name(model, Model, get_model)
    choice("kv_cache", kv_cache, ALL_KV_FORMATS)
    choice("mla_cache", mla_cache, MLA_CACHES)
    positive_int("tp", tp)
    if kv_cache_v is not None:
        choice("kv_cache_v", kv_cache_v, ALL_KV_FORMATS)
    if kv_cache == "fp8_ds_mla":  # vLLM's DeepSeek-V3.2 sparse-MLA cache: memlib.serving.engines
        from memlib.serving.engines import fp8_ds_mla_bytes_per_token
        if not model.is_mla or mla_cache != "latent" or kv_cache_v is not None:
            raise ValueError(f"kv_cache 'fp8_ds_mla' is vLLM's MLA latent layout (DeepSeek-V3.2, FlashMLA sparse): "
                             f"{model.name} " + ("has no MLA latent (ordinary attention); use 'fp8' / 'fp8_e4m3'"
                                                 if not model.is_mla else "needs mla_cache='latent' and no kv_cache_v"))
        return fp8_ds_mla_bytes_per_token(model.kv_lora_rank, model.qk_rope_head_dim)
    if kv_cache_v is not None or kv_cache not in KV_ELEMENT_BYTES:
        if model.is_mla:
            raise ValueError(f"ggml cache types (kv_cache {kv_cache!r}) have no MLA layout in memlib")
        width = model.num_kv_heads // tp * model.head_dim
        return ggml_row_bytes(_ggml(kv_cache), width) + ggml_row_bytes(_ggml(kv_cache_v or kv_cache), width)
    e = KV_ELEMENT_BYTES[kv_cache]
    scale = 2 * 2 if kv_cache == "int8" else 0
    if model.is_mla:
        if mla_cache == "latent":
            if kv_cache == "int8":
                raise ValueError("kv_cache 'int8' (LMDeploy, per head) has no MLA latent layout; use bf16/fp16/fp8")
            return (model.kv_lora_rank + model.qk_rope_head_dim) * e
        heads = model.num_heads // tp
        return heads * ((model.head_dim + model.v_head_dim) * e + 2 * scale)
    return gqa_kv_bytes_per_token(1, model.num_kv_heads, model.head_dim, kv_cache, tp)


def _ggml(kv_cache: str) -> str:
    """memlib's 16/32-bit cache names as ggml's (fp16 -> f16); ggml names unchanged."""
    return {"fp16": "f16", "fp32": "f32"}.get(kv_cache, kv_cache)


def gqa_kv_bytes_per_token(num_layers: int, num_kv_heads: int, head_dim: int, kv_cache: str = "bf16",
                           tp: int = 1) -> int:
    """Standard (MHA/GQA) cache bytes of one token from the shape numbers alone:
    2 (K and V) x layers x kv_heads/tp x head_dim x bytes (Pope et al. 2022, Sec. 2.1), plus
    int8's per-head scale and zero point; kv_bytes_per_token applies it to a Model."""
    for name, v in (("num_layers", num_layers), ("num_kv_heads", num_kv_heads), ("head_dim", head_dim),
                    ("tp", tp)):
        positive_int(name, v)
    choice("kv_cache", kv_cache, tuple(KV_ELEMENT_BYTES))
    scale = 2 * 2 if kv_cache == "int8" else 0
    return 2 * num_layers * (num_kv_heads // tp) * (head_dim * KV_ELEMENT_BYTES[kv_cache] + scale)


@plain_args
def kv_bytes_per_token(model: Model, kv_cache: str = "bf16", tp: int = 1, mla_cache: str = "latent",
                       kv_cache_v: str | None = None) -> int:
    """KV cache bytes of one token over all layers on one GPU, before any window cap (sliding and
    chunked layers stop growing at their window: kv_cache_bytes). Per layer:

    Standard attention: 2 (K and V) x kv_heads/tp x head_dim x bytes (Pope et al. 2022, Sec. 2.1;
    Kwon et al. 2023, vLLM, Sec. 2). GQA-aware: only the num_kv_heads key/value heads are cached.
    MLA, mla_cache="latent": (kv_lora_rank + qk_rope_head_dim) x bytes, the compressed latent c_KV
    and the decoupled rope key k^R (DeepSeek-V2 Sec. 2.1.2-2.1.3, eq. 9-10; vLLM and SGLang MLA
    backends). It is one vector per token, not per head, so tensor parallelism does not split it:
    every TP rank holds the whole latent (vLLM's MLA cache spec has one head of that width).
    MLA, mla_cache="full": K (heads x (nope + rope)) and V (heads x v_head_dim) per token, what
    transformers' DeepseekV3Attention stores in its cache; split by heads over tp.
    "fp8" is vLLM's fp8 cache (one scale per layer tensor, not per token: counted as 0 here).
    "int8" is LMDeploy's quant_policy=8 (asymmetric, per head per token): uint8 values plus a
    16-bit scale and zero point for each (token, kv head) of K and of V. "fp8_e4m3"/"fp8_e5m2":
    vLLM's and SGLang's fp8 caches, one byte per element. "fp8_ds_mla" (vLLM, MLA only): DeepSeek-V3.2's
    latent in fp8 with an fp32 scale per 128 values and the rope key in bf16, 656 B a layer
    (memlib.serving.engines.fp8_ds_mla_bytes_per_token). llama.cpp's ggml types ("q8_0" = 34 B
    per 32 values, "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1", "f16", "bf16", "f32"), K and V
    typed separately with kv_cache_v: memlib.serving.engines.
    """
    model = model_or_name(model, Model, get_model)
    return model.num_layers * kv_layer_bytes_per_token(model, kv_cache, tp, mla_cache, kv_cache_v)


def kv_cap(model: Model, layer_type: str) -> int | None:
    """Tokens a layer of this type keeps in its cache: the window (sliding), the chunk (chunked), None (all).

    Sliding window (Beltagy et al. 2020; Mistral 7B Sec. 2 "rolling buffer cache"; Gemma 2/3 local
    layers, gpt-oss): a token attends to the last `sliding_window` tokens, so older keys are
    dropped (HF DynamicSlidingWindowLayer, vLLM SlidingWindowManager). Chunked attention (Llama 4's
    local layers): a token attends within its chunk of `attention_chunk_size`, so at most one
    chunk is kept (vLLM ChunkedLocalAttention). Block rounding of paged caches is not counted.
    """
    if layer_type == "sliding_attention":
        return model.sliding_window
    if layer_type == "chunked_attention":
        return model.attention_chunk_size
    return None


@plain_args
def kv_cache_bytes(model: Model, batch: int, context_len: int, kv_cache: str = "bf16", tp: int = 1,
                   mla_cache: str = "latent", engine: str = DEFAULT_ENGINE, kv_cache_v: str | None = None) -> int:
    """Bytes of the cache holding `batch` sequences of `context_len` tokens on one GPU:
    batch x sum over layers of slots(min(context_len, the layer's cap)) x per-layer bytes per token,
    slots() the engine's paging (vLLM: whole blocks of 16 tokens; SGLang, transformers: exact).
    engine="llama.cpp": memlib.serving.engines.llama_cpp_kv_bytes with --parallel batch and
    --ctx-size batch x context_len (cells padded to 256, sliding layers at window + ubatch)."""
    model = model_or_name(model, Model, get_model)
    batch, context_len = positive_int("batch", batch), positive_int("context_len", context_len)
    choice("engine", engine, ENGINES)
    if engine == "llama.cpp":
        return llama_cpp_kv_bytes(model, batch * context_len, _ggml(kv_cache), _ggml(kv_cache_v or kv_cache),
                                  n_seq=batch, kv_unified=batch == 1)
    per_layer = kv_layer_bytes_per_token(model, kv_cache, tp, mla_cache, kv_cache_v)
    tokens = sum(n * kept for _, n, kept in kv_tokens_kept(model, context_len, engine))
    return batch * tokens * per_layer


def kv_tokens_kept(model: Model, context_len: int, engine: str = DEFAULT_ENGINE) -> list[tuple[str, int, int]]:
    """(layer type, layers of that type, token slots each keeps) for one sequence of context_len tokens: full
    attention keeps them all, sliding/chunked layers at most their window (kv_cap), in the engine's pages."""
    model = model_or_name(model, Model, get_model)
    context_len = positive_int("context_len", context_len)
    out = []
    for layer_type, n in model.layer_counts().items():
        cap = kv_cap(model, layer_type)
        out.append((layer_type, n, paged_tokens(context_len if cap is None else min(context_len, cap), engine)))
    return out


# --- the estimate ------------------------------------------------------------------------------
@dataclass(frozen=True)
class InferenceSetup:
    model: Model
    batch: int
    context_len: int
    weights: str
    kv_cache: str
    tp: int
    group_size: int
    logits: str
    mla_cache: str
    ep: int
    prefill_tokens: int | None
    engine: str
    kv_cache_v: str | None  # llama.cpp: V's type when it differs from K's (kv_cache)

    @property
    def tokens(self) -> int:
        return self.batch * self.context_len

    @property
    def forward_tokens(self) -> int:
        """Tokens of the one prefill forward whose workspace is counted."""
        return self.tokens if self.prefill_tokens is None else min(self.prefill_tokens, self.tokens)


@dataclass
class InferenceEstimate:
    setup: InferenceSetup
    weight_parts: dict[str, int]  # per GPU, by tensor kind: linear, experts, lm_head, embedding, norm, bias
    kv_bytes_per_token: int  # per GPU, every layer, before window caps
    moments: dict[str, int]  # transient bytes of each moment of the prefill forward
    moment_formulas: dict[str, str]
    dequant_workspace: int
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # also in notes; a caller should show these
    kv_cache_bytes: int = -1  # per GPU; set by estimate_inference (window caps applied)

    def __post_init__(self):
        if self.kv_cache_bytes < 0:
            self.kv_cache_bytes = self.kv_bytes_per_token * self.setup.tokens

    @property
    def weight_bytes(self) -> int:
        return sum(self.weight_parts.values())

    @property
    def phase(self) -> str:
        """The moment of the prefill whose transient is largest: 'rotary', 'attention', 'mlp', 'moe', 'lm_head'."""
        return max(self.moments, key=self.moments.get)

    @property
    def activation_bytes(self) -> int:
        return self.moments[self.phase]

    @property
    def breakdown(self) -> dict[str, int]:
        return {"weights": self.weight_bytes, "kv_cache": self.kv_cache_bytes,
                "activations": self.activation_bytes, "dequant_workspace": self.dequant_workspace}

    @property
    def peak_bytes(self) -> int:
        """Allocated bytes at the peak, on one GPU (of tp)."""
        return sum(self.breakdown.values())

    def to_dict(self) -> dict:
        s = self.setup
        return {
            "model": s.model.name, "num_params": s.model.num_params, "num_active_params": s.model.num_active_params,
            "batch": s.batch, "context_len": s.context_len, "weights": s.weights, "kv_cache": s.kv_cache,
            "tp": s.tp, "ep": s.ep, "group_size": s.group_size, "logits": s.logits, "mla_cache": s.mla_cache,
            "prefill_tokens": s.prefill_tokens, "engine": s.engine, "kv_cache_v": s.kv_cache_v,
            "peak_bytes": self.peak_bytes, "phase": self.phase, "breakdown": self.breakdown,
            "weight_parts": dict(self.weight_parts), "kv_bytes_per_token": self.kv_bytes_per_token,
            "moments": dict(self.moments), "notes": list(self.notes), "warnings": list(self.warnings),
        }

    def explain(self) -> str:
        return _explain(self)

    def __repr__(self) -> str:
        return (f"InferenceEstimate({self.setup.model.name}: peak {fmt_bytes(self.peak_bytes)} per GPU; "
                + ", ".join(f"{k} {gb(v):.2f} GB" for k, v in self.breakdown.items() if v) + ")")


ENGINE_NOTES = {
    "vllm": "engine 'vllm': each sequence's cache in whole 16-token blocks; vLLM's startup KV budget (total x "
            "gpu_memory_utilization - weights - profile activations - non-torch, and from v0.21 its CUDA graph "
            "estimate) is memlib.serving.capacity.vllm_kv_cache_budget_bytes",
    "sglang": "engine 'sglang': page size 1; SGLang's pool size from mem_fraction_static is "
              "memlib.serving.capacity.sglang_max_total_tokens",
    "llama.cpp": "engine 'llama.cpp': KV cache as llama.cpp allocates it (cells padded to 256, one stream per "
                 "sequence, sliding layers at window + ubatch: memlib.serving.engines.llama_cpp_kv_cache); the "
                 "prefill workspace is transformers' op by op, not llama.cpp's compute buffer",
}


def resolve_weights(model: Model, weights) -> str:
    """'auto' -> the checkpoint's format (Model.quantization, from config.json) or bf16."""
    if weights == AUTO:
        return model.quantization or "bf16"
    if not isinstance(weights, str) or weights not in WEIGHT_FORMATS:
        raise ValueError(f"unknown weights {weights!r}; accepted: {AUTO!r} (the checkpoint's format), "
                         + ", ".join(repr(f) for f in WEIGHT_FORMATS))
    return weights


def _check(model, batch, context_len, weights, kv_cache, tp, group_size, logits, mla_cache, ep, prefill_tokens, engine,
           kv_cache_v) -> InferenceSetup:
    model = get_model(model) if isinstance(model, str) else model
    if not isinstance(model, Model):
        raise ValueError(f"model must be a catalog name or a memlib.Model, got {type(model).__name__}")
    batch = positive_int("batch", batch)
    context_len = positive_int("context_len", context_len)
    weights = resolve_weights(model, weights)
    choice("engine", engine, ENGINES)
    choice("kv_cache", kv_cache, kv_formats(engine))
    if kv_cache_v is not None:
        if engine != "llama.cpp":
            raise ValueError(f"kv_cache_v (a separate V cache type) is llama.cpp's --cache-type-v; engine {engine!r} "
                             "types K and V alike")
        choice("kv_cache_v", kv_cache_v, kv_formats(engine))
    if engine == "llama.cpp" and tp > 1:
        raise ValueError("engine 'llama.cpp' splits layers across GPUs (--split-mode layer), not heads: use tp=1")
    choice("logits", logits, LOGITS)
    if logits == "all-fp32" and engine != "hf":
        raise ValueError(f"logits='all-fp32' is transformers' generate before v4.45 (engine 'hf'); engine {engine!r} "
                         "runs the head on the last position only")
    choice("mla_cache", mla_cache, MLA_CACHES)
    tp = positive_int("tp", tp)
    ep = positive_int("ep", ep)
    group_size = checkpoint_group_size(model, weights, group_size)
    if prefill_tokens is not None:
        prefill_tokens = positive_int("prefill_tokens", prefill_tokens)
    divisible = [("num_heads", model.num_heads), ("num_kv_heads", model.num_kv_heads)]
    if model.num_dense_layers:
        divisible.append(("intermediate_size", model.intermediate_size))
    if model.is_moe and ep == 1:
        divisible.append(("moe_intermediate_size", model.moe_intermediate_size))
    if model.num_shared_experts:
        divisible.append(("shared_expert_intermediate_size", model.shared_expert_intermediate_size))
    for what, n in divisible:
        if n % tp:
            raise ValueError(f"tp {tp} does not divide {model.name}'s {what} {n}: tensor parallelism "
                             f"splits them evenly across GPUs; accepted tp: {', '.join(map(str, _divisors(model)))}")
    if ep > 1:
        if not model.is_moe:
            raise ValueError(f"ep {ep}: expert parallelism needs a mixture-of-experts model; {model.name} is dense")
        if model.num_experts % ep:
            raise ValueError(f"ep {ep} does not divide {model.name}'s {model.num_experts} experts")
        if ep % tp:
            raise ValueError(f"ep {ep} must be a multiple of tp {tp}: the expert-parallel group spans the "
                             "tensor-parallel group (vLLM: ep = tp x data-parallel size)")
    if model.position == "learned" and context_len > model.max_position_embeddings:
        raise ValueError(f"context_len {context_len} exceeds {model.name}'s learned position table "
                         f"({model.max_position_embeddings})")
    return InferenceSetup(model, batch, context_len, weights, kv_cache, tp, group_size, logits, mla_cache, ep,
                          prefill_tokens, engine, kv_cache_v)


def _divisors(model: Model) -> list[int]:
    dims = [model.num_heads, model.num_kv_heads]
    if model.num_dense_layers:
        dims.append(model.intermediate_size)
    return [d for d in range(1, model.num_kv_heads + 1) if not any(n % d for n in dims)]


def _quantized(t: Tensor, weights: str, model_is_moe: bool = False) -> bool:
    """Does `weights` quantize this tensor? Decoder-layer matmul weights only: embeddings, lm_head,
    score heads, norms, biases and MoE routers stay 16-bit (AutoGPTQ, AutoAWQ and bitsandbytes skip
    lm_head and the router 'gate'; DeepSeek-V3's fp8 checkpoint keeps its router in bf16). mxfp4
    in a MoE model quantizes the routed experts only, as gpt-oss is released (quantization_config
    modules_to_not_convert: self_attn, router, embed_tokens, lm_head); in a dense model, which has
    no experts, every decoder projection."""
    if weights not in QUANTIZED or t.kind != "linear" or t.name in ("lm_head", "score", "router"):
        return False
    if weights == "mxfp4":
        return bool(t.experts) or not model_is_moe
    return True


@lru_cache(maxsize=1024)
def _weight_parts(model: Model, weights: str = "bf16", tp: int = 1, group_size: int = 128,
                  ep: int = 1) -> dict[str, int]:
    """Weight bytes on one GPU by kind ('linear', 'experts', 'lm_head', 'embedding', 'norm', 'bias').

    Quantized formats quantize the decoder layers' projections only (see _quantized); the rest
    stays 16-bit. Under tp (Megatron, Shoeybi et al. 2019 Sec. 3; vLLM's parallel layers): each
    tensor splits as its Tensor.tp says: column-parallel by output features (q, k, v, gate, up,
    MLA's q_b_proj and kv_b_proj), row-parallel by input features (o, down); embedding and lm_head
    by vocabulary rows (VocabParallelEmbedding, ceil(V/tp) rows each, vLLM's padding ignored);
    norms, routers, MLA's q_a_proj and kv_a_proj_with_mqa (ReplicatedLinear in vLLM) and the
    biases of row-parallel layers are replicated. Routed experts: with ep == 1 every GPU holds
    every expert, each split over tp like an MLP (vLLM FusedMoE); with ep > 1 each GPU holds
    num_experts/ep whole experts (vLLM --enable-expert-parallel, SGLang --ep-size).
    """
    fmt16 = FLOAT_BYTES.get(weights, 2)
    parts = {"linear": 0, "experts": 0, "lm_head": 0, "embedding": 0, "norm": 0, "bias": 0}
    for t in model.tensors():
        experts = t.experts // ep if t.experts else 0
        split = 1 if (t.experts and ep > 1) else tp
        if t.kind == "linear" and t.name not in ("lm_head", "score"):
            fan_in, fan_out = t.shape
            if t.tp == "column":
                fan_out //= split
            elif t.tp == "row":
                fan_in //= split
            if _quantized(t, weights, model.is_moe):
                one = quantized_linear_bytes(fan_in, fan_out, weights, group_size,
                                             double_quant=weights != model.quantization or model.quantization_double_quant)
            else:
                one = fan_in * fan_out * fmt16
            parts["experts" if t.experts else "linear"] += one * (experts or 1) * t.count
        elif t.name in ("lm_head", "embed_tokens"):
            rows = -(-model.vocab_size // tp)
            parts["lm_head" if t.name == "lm_head" else "embedding"] += rows * model.hidden_size * fmt16
        elif t.name == "score":
            parts["lm_head"] += t.numel * fmt16
        elif t.kind == "bias":
            numel = t.numel // t.experts * experts if t.experts else t.numel
            parts["bias"] += (numel // split if t.tp == "column" else numel) * t.count * fmt16
        elif t.kind == "norm":
            parts["norm"] += t.numel * t.count * fmt16
        else:  # learned position embeddings: replicated
            parts["embedding"] += t.numel * t.count * fmt16
    return parts


# --- estimate_inference's options, declared once (memlib/options.py) -----------------------------------------------
# Its signature, help(), `memlib serve`'s flags and docs/usage.md's serving table are made from this table, and each
# value is checked by its kind's validator (the same kinds and messages as estimate_training's table); what depends
# on the model or on another option (kv_cache by engine, tp dividing the heads, ...) is checked after, in _check.
MEMLIB = "memlib's convention"
SERVING_OPTIONS: dict[str, Option] = {o.name: o for o in (
    option("batch", "count", 1, "sequences served at once", f"{MEMLIB}: one prompt, as HF generate on one input",
           positional=True),
    option("context_len", "count", 4096, "tokens per sequence, prompt and generated: the cache when the context is "
           "full", "Llama 2's context length, 4096 tokens: Touvron et al. 2023, Table 1", positional=True),
    option("weights", "choice", AUTO, "weight format: 'auto' the checkpoint's own; int8 LLM.int8(); int8-gptq (GPTQ 8-bit: 8 + "
           "24/g bits per weight, GPTQModel@f4c327a), int4-gptq, int4-awq, nf4, fp8-block; mxfp4 a MoE's routed experts only (as gpt-oss ships)",
           "transformers' from_pretrained loads the checkpoint's config.json quantization_config; bf16 when it has "
           "none", (AUTO,) + WEIGHT_FORMATS, positional=True),
    option("kv_cache", "choice", "bf16", "KV cache type: bf16, fp16, fp8, int8 (LMDeploy); vllm/sglang also "
           "fp8_e4m3, fp8_e5m2; vllm with an MLA model fp8_ds_mla (DeepSeek-V3.2 sparse-MLA cache, 656 B per "
           "token per layer, vllm@001cabc1); llama.cpp a ggml type (K's; kv_cache_v V's)", "the model's 16-bit dtype: vLLM "
           "kv_cache_dtype='auto', transformers' DynamicCache", ALL_KV_FORMATS, positional=True),
    option("tp", "count", 1, "tensor-parallel GPUs (Megatron shards; must divide the heads and MLP widths)",
           "one GPU: vLLM --tensor-parallel-size 1", positional=True),
    option("group_size", "count", None, "GPTQ/AWQ quantization group: weights int4-gptq, int4-awq",
           "GPTQConfig / AwqConfig group_size 128", none="the checkpoint's quantization_config group_size for its "
           "own format, else 128", positional=True),
    option("logits", "choice", "last", "'last': the head on the last position only (generate, vLLM); 'all': a "
           "plain forward's logits for every position; 'all-fp32' every position plus its fp32 copy (transformers "
           "4.31-4.44 generate, before PR #31292)", "transformers' generate with logits_to_keep=1, and vLLM",
           LOGITS, positional=True),
    option("mla_cache", "choice", "latent", "MLA models: 'latent' the compressed latent + rope key per token, "
           "'full' K and V per head", "vLLM and SGLang's MLA cache; transformers' eager cache is 'full'",
           MLA_CACHES, positional=True),
    option("ep", "count", 1, "MoE: expert-parallel GPUs, routed experts split whole over them (a multiple of tp)",
           "no expert parallelism: vLLM without --enable-expert-parallel", positional=True),
    option("prefill_tokens", "count", None, "tokens in one prefill forward (vLLM's max_num_batched_tokens with "
           "chunked prefill)", "HF generate prefills the whole prompt in one forward",
           none="the whole batch x context at once", positional=True),
    option("engine", "choice", DEFAULT_ENGINE, "how the cache is sized and typed: 'hf' exactly batch x context, "
           "'vllm' 16-token pages, 'sglang' page 1, 'llama.cpp' cells padded to 256",
           "transformers' generate: memlib.serving.engines.DEFAULT_ENGINE", ENGINES, positional=True),
    option("kv_cache_v", "choice", None, "llama.cpp: V's cache type when it differs from K's (--cache-type-v)",
           "llama.cpp types K and V alike by default: -ctk and -ctv f16", ALL_KV_FORMATS, none="V typed as kv_cache",
           positional=True),
    option("transformers_version", "version", None, "engine 'hf': the transformers release whose generate() to "
           "describe; sets logits by transformers release (4.31-4.44 'all-fp32', 4.45 on 'last')",
           "transformers PR #31292 (v4.45: logits_to_keep in generate)", ("4.31",), none="logits as given",
           positional=True),
)}
SERVING_TABLE = OptionTable("memlib.serving.inference.SERVING_OPTIONS", SERVING_OPTIONS)
SERVING_FLAGS = {"tp": "--count"}  # `memlib serve --count N`: the GPUs the model is split over


def _estimate_inference(*args, **kwargs) -> InferenceEstimate:
    given = SERVING_TABLE.bind(_estimate_inference, args, kwargs, "estimate_inference")
    model = given.pop("model")
    return _estimate(model, **SERVING_TABLE.validate(given))


def _estimate(model, batch, context_len, weights, kv_cache, tp, group_size, logits, mla_cache, ep, prefill_tokens,
              engine, kv_cache_v, transformers_version) -> InferenceEstimate:
    """estimate_inference once every option is given, each checked by its kind (SERVING_TABLE.validate)."""
    if transformers_version is not None:
        if engine != "hf":
            raise ValueError(f"transformers_version describes transformers' generate (engine 'hf'); engine {engine!r} "
                             "is another program")
        derived = hf_generate_logits(transformers_version)
        if logits not in ("last", derived):
            raise ValueError(f"logits={logits!r} contradicts transformers_version={transformers_version!r}, whose "
                             f"generate makes {derived!r} logits: give one of the two")
        logits = derived
    s = _check(model, batch, context_len, weights, kv_cache, tp, group_size, logits, mla_cache, ep, prefill_tokens,
               engine, kv_cache_v)
    m = s.model
    parts = dict(_weight_parts(m, s.weights, s.tp, s.group_size, s.ep))  # a copy: the cached one stays intact
    kv_tok = kv_bytes_per_token(m, s.kv_cache, s.tp, s.mla_cache, s.kv_cache_v)
    kv_total = kv_cache_bytes(m, s.batch, s.context_len, s.kv_cache, s.tp, s.mla_cache, s.engine, s.kv_cache_v)
    moments, formulas = _prefill_moments(s)
    notes, warnings = [], []
    if m.position == "rope" and s.context_len > m.max_position_embeddings:
        warnings.append(f"context_len {s.context_len:,} exceeds {m.name}'s context window "
                        f"({m.max_position_embeddings:,} tokens, max_position_embeddings): it was not trained "
                        "for it and servers refuse it (vLLM --max-model-len); memory is counted anyway")
    if weights == AUTO and m.quantization:
        notes.append(f"weights {m.quantization!r}: the format {m.name}'s checkpoint is released in "
                     "(config.json quantization_config); pass weights= to count another")
    for layer_type, n in m.layer_counts().items():
        cap = kv_cap(m, layer_type)
        if cap is not None and s.context_len > cap:
            what = "sliding-window" if layer_type == "sliding_attention" else "chunked-attention"
            notes.append(f"{n} of {m.num_layers} layers are {what} layers: their KV cache stops at {cap:,} tokens "
                         f"of the {s.context_len:,}")
    if m.is_mla:
        notes.append(f"MLA cache {s.mla_cache!r}: "
                     + ("latent + rope key per token (vLLM, SGLang), the same on every tensor-parallel GPU"
                        if s.mla_cache == "latent" else "full K and V per head (transformers' eager cache)"))
    if m.is_moe:
        notes.append(f"all {m.num_experts} experts of each MoE layer are resident"
                     + (f", {m.num_experts // s.ep} per GPU (ep={s.ep})" if s.ep > 1 else
                        (f", each split over tp={s.tp}" if s.tp > 1 else "")))
    if s.engine in ENGINE_NOTES:
        notes.append(ENGINE_NOTES[s.engine])
    if m.omitted:
        notes.append(f"not counted: {m.omitted} ({m.name}'s config.json describes them; load them too and "
                     "they add to the weights)")
    return InferenceEstimate(s, parts, kv_tok, moments, formulas, _dequant_workspace(s),
                             [*("WARNING: " + w for w in warnings), *notes], warnings, kv_total)



estimate_inference = plain_args(_estimate_inference)  # numpy scalars become Python numbers first (issue 23)

HEADER = """Memory to serve `model` on one of `tp` GPUs: weights, KV cache, the prefill's activations.

    estimate_inference(model, batch=..., ...): model is a catalog name or a memlib.Model; every other argument is an
    option of the table below (memlib.serving.inference.SERVING_OPTIONS: what it accepts, its default and where that
    default comes from; the same table makes `memlib serve`'s flags and the docs' serving table). Each value is
    checked by its kind's validator (the kinds of estimate_training's table), then against the model and the other
    options: kv_cache by engine (memlib.serving.engines.kv_formats), tp dividing the heads and MLP widths, ep a
    multiple of tp dividing the experts, kv_cache_v under llama.cpp only."""
_P = inspect.Parameter
_FIRST = (_P("model", _P.POSITIONAL_OR_KEYWORD),)


def document() -> None:
    """(Re)make estimate_inference's signature and help() from the table (run at import; run it again after
    changing an entry of SERVING_OPTIONS)."""
    for fn in (_estimate_inference, estimate_inference):
        SERVING_TABLE.document(fn, HEADER, _FIRST, returns="InferenceEstimate")
        fn.__name__ = fn.__qualname__ = "estimate_inference"


document()

def _prefill_moments(s: InferenceSetup) -> tuple[dict[str, int], dict[str, str]]:
    """Transient bytes at each candidate peak of one prefill forward (HF LlamaDecoderLayer order).

    T = prefill tokens, c = compute bytes; per GPU q, kv, I and heads are divided by tp,
    the residual stream (hidden h) is not. The KV cache tensors themselves are not counted here.
    """
    m, tp, T, b = s.model, s.tp, s.forward_tokens, s.batch
    c = COMPUTE_BYTES.get(s.weights, 2)
    h, heads = m.hidden_size, m.num_heads // tp
    # Alive through every layer: the residual (held by `residual`) and the normed input
    # (held by the caller's `hidden_states` while attention or the MLP runs); with RoPE the
    # cos and sin tables (b, s, rope dim) computed once per forward.
    rope_dim = m.qk_rope_head_dim if m.is_mla else m.head_dim
    rope = 2 * T * rope_dim * c if m.position == "rope" else 0
    base = 2 * T * h * c + rope
    base_f = "2*T*h*c (residual + normed input)" + (" + 2*T*rope_dim*c (RoPE cos, sin)" if rope else "")
    moments, formulas = {}, {}
    if m.is_mla:
        # vLLM's MLA prefill decompresses the latent with kv_b_proj and runs ordinary attention:
        # q and k of (nope + rope) per head, v and the output of v_head_dim, plus the latent itself.
        qk, v, lat = heads * m.head_dim, heads * m.v_head_dim, m.kv_lora_rank + m.qk_rope_head_dim
        moments["attention"] = base + T * (2 * qk + 2 * v + lat) * c + 4 * T * heads
        formulas["attention"] = (base_f + " + T*(2*heads*(nope+rope) + 2*heads*v_head_dim + latent)*c "
                                 "(q, k, v, output, c_KV + k_rope) + 4*T*heads (fp32 softmax LSE)")
    else:
        q, kv = m.q_size // tp, m.kv_size // tp
        capped = any(kv_cap(m, t) is not None and kv_cap(m, t) < s.context_len for t in m.layer_counts())
        win = 2 * T * kv * c if capped else 0  # a windowed layer's K, V of the whole prompt, before the cache crops
        if m.position == "rope":
            # apply_rotary_pos_emb: q*cos + rotate_half(q)*sin with q, both products and the
            # result alive; the unrotated k too (v and the rotated k are the cache's tensors).
            moments["rotary"] = base + 4 * T * q * c + T * kv * c + win
            formulas["rotary"] = (base_f + " + 4*T*q*c (q, q*cos, rot(q)*sin, q_rot) + T*kv*c (k before RoPE)"
                                  + (" + 2*T*kv*c (K, V of the prompt in windowed layers)" if win else ""))
        # FlashAttention / SDPA: no s x s scores; rotated q, the output, fp32 log-sum-exp per head.
        moments["attention"] = base + 2 * T * q * c + 4 * T * heads + win
        formulas["attention"] = (base_f + " + 2*T*q*c (q, attention output) + 4*T*heads (fp32 softmax LSE)"
                                 + (" + 2*T*kv*c (K, V of the prompt in windowed layers)" if win else ""))
    if m.num_dense_layers:
        inter = m.intermediate_size // tp
        if m.mlp == "gated":  # down(act(gate(x)) * up(x)): act, up and their product at the multiply
            moments["mlp"] = base + 3 * T * inter * c
            formulas["mlp"] = base_f + " + 3*T*I*c (act(gate), up, product)"
        else:  # fc_out(act(fc_in(x))): fc_in's output and the activation's
            moments["mlp"] = base + 2 * T * inter * c
            formulas["mlp"] = base_f + " + 2*T*I*c (fc_in output, activation)"
    if m.is_moe:
        # vLLM fused_moe (fused_experts_impl): per chunk of at most FUSED_MOE_CHUNK tokens, the
        # (tokens x top-k) rows of gate_up output (2*Ie), activation (Ie) and down output (h);
        # the router's logits (tokens x E) and top-k weights/ids. The shared expert's output
        # (T x h) waits for the routed sum.
        k, Ie = m.num_experts_per_tok, m.moe_intermediate_size // (tp if s.ep == 1 else 1)
        Tm = min(T, FUSED_MOE_CHUNK)
        shared = T * h * c if m.num_shared_experts else 0
        moments["moe"] = base + T * m.num_experts * c + 8 * T * k + shared + Tm * k * (3 * Ie + h) * c
        formulas["moe"] = (base_f + " + T*E*c (router logits) + 8*T*k (top-k weights, ids)"
                           + (" + T*h*c (shared expert output)" if shared else "")
                           + f" + min(T, {FUSED_MOE_CHUNK})*k*(3*Ie/tp + h)*c (fused_moe workspace)")
        if m.num_shared_experts:
            Is = m.shared_expert_intermediate_size // tp
            moments["shared_expert"] = base + 3 * T * Is * c
            formulas["shared_expert"] = base_f + " + 3*T*Is*c (the shared expert's act(gate), up, product)"
    if m.head == "lm":
        # Head: the final norm's output, the head's logits (a vocabulary shard per GPU, gathered to
        # the full vocabulary when tp > 1) and generate's fp32 copy of the last position's logits.
        # "all-fp32" (transformers 4.31-4.44, hf_generate_logits): forward's `logits = logits.float()` over every
        # position, the 16-bit logits and their fp32 copy alive together at the cast (generate then slices a view).
        rows = b if s.logits == "last" else T
        V = m.vocab_size
        shard = rows * -(-V // tp) * c
        gathered = rows * V * c if tp > 1 else 0
        upcast = 4 * T * V if s.logits == "all-fp32" else 4 * b * V
        moments["lm_head"] = T * h * c + rope + shard + gathered + upcast
        formulas["lm_head"] = (("T*h*c (final norm output)" + (" + RoPE cos, sin" if rope else ""))
                               + f" + {'b' if s.logits == 'last' else 'T'}*ceil(V/tp)*c (logits)"
                               + (f" + {'b' if s.logits == 'last' else 'T'}*V*c (gathered)" if tp > 1 else "")
                               + (" + 4*T*V (fp32 copy of every position's logits: logits.float(), transformers "
                                  "4.31-4.44)" if s.logits == "all-fp32" else " + 4*b*V (fp32 logits of the last "
                                  "position)"))
    return moments, formulas


@lru_cache(maxsize=1024)
def _largest_linear(model: Model, tp: int, weights: str, ep: int = 1) -> tuple[int, int]:
    """Over the per-GPU shards of the quantized matrices (one expert's matrix for stacked experts):
    the largest in*out and the largest in + 4*out."""
    best_numel, best_io = 0, 0
    for t in model.tensors():
        if not _quantized(t, weights, model.is_moe):
            continue
        fi, fo = t.shape
        split = 1 if (t.experts and ep > 1) else tp
        fo, fi = (fo // split, fi) if t.tp == "column" else ((fo, fi // split) if t.tp == "row" else (fo, fi))
        best_numel = max(best_numel, fi * fo)
        best_io = max(best_io, fi + 4 * fo)
    return best_numel, best_io


def _dequant_workspace(s: InferenceSetup) -> int:
    """Extra bytes a quantized matmul allocates during a prefill (upper bound, see module docstring).

    4-bit formats: a 16-bit copy of the largest weight shard (bitsandbytes dequantize_4bit for
    inputs of more than one token; exllama / AWQ GEMM kernels reconstruct fp16 weights for large
    batches). int8 (LLM.int8()): the int8 copy of the input (T*in) and the int32 accumulator
    (4*T*out) of the largest matmul, before int8_mm_dequant writes the 16-bit output.
    fp8-block: the fp8 copy of the input and its fp32 scale per 128 inputs (vLLM
    per_token_group_quant_fp8 before the block-scaled GEMM), T*in*(1 + 4/128).
    mxfp4: 0 for MoE experts (the fused MoE kernels read the packed weights directly); for a
    dense model, like the other 4-bit formats, a 16-bit copy of the largest weight shard.
    """
    if s.weights not in QUANTIZED or (s.weights == "mxfp4" and s.model.is_moe):
        return 0
    numel, io = _largest_linear(s.model, s.tp, s.weights, s.ep)
    T = s.forward_tokens
    if s.weights == "int8":
        return T * io
    if s.weights == "fp8-block":
        widest_in = max((t.shape[0] // (s.tp if t.tp == "row" else 1) for t in s.model.tensors()
                         if _quantized(t, s.weights, s.model.is_moe)), default=0)
        return T * widest_in + 4 * T * -(-widest_in // FP8_BLOCK)
    return 2 * numel


# --- capacity search -------------------------------------------------------------------------
@dataclass(frozen=True)
class Limit:
    """The largest batch or context that fits; `value` 0 when even 1 does not. int(limit) works."""

    value: int
    reason: str
    verdict: Verdict  # at `value`, or at 1 when value is 0

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value

    def __str__(self) -> str:
        return f"{self.value:,} ({self.reason})"


def _largest(make, gpu, cap: int | None, what: str, fits_kw: dict) -> Limit:
    v1 = fits(make(1), gpu, **fits_kw)
    if not v1.fits:
        return Limit(0, f"even {what} 1 {v1}", v1)
    lo, hi = 1, 2  # invariant: lo fits; hi does not, or hi > cap
    while (cap is None or hi <= cap) and fits(make(hi), gpu, **fits_kw).fits:
        lo, hi = hi, hi * 2
    if cap is not None:
        hi = min(hi, cap + 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(make(mid), gpu, **fits_kw).fits:
            lo = mid
        else:
            hi = mid
    verdict = fits(make(lo), gpu, **fits_kw)
    if cap is not None and lo == cap:
        return Limit(lo, f"the model's context window ({cap:,}) is reached before memory runs out", verdict)
    return Limit(lo, f"{what} {lo + 1:,} would not fit on {verdict.gpu.name}", verdict)


@plain_args
def max_batch(model, gpu, context_len: int = SERVING_OPTIONS["context_len"].default,
              cuda_context_bytes: int | None = None, allocator_headroom: float | None = None, **kwargs) -> Limit:
    """Largest batch whose estimate at `context_len` still fits() `gpu` (binary search).

    Returns a Limit (value 0 with the reason when even batch 1 does not fit; no exception).
    `kwargs` go to estimate_inference (weights, kv_cache, tp, ep, mla_cache, prefill_tokens, ...);
    the verdict is per GPU.
    """
    _searched("max_batch", "batch", kwargs)
    estimate_inference(model, 1, context_len, **kwargs)  # validates the inputs once
    fkw = _fits_kw(cuda_context_bytes, allocator_headroom)
    return _largest(lambda n: estimate_inference(model, n, context_len, **kwargs), gpu, None, "batch", fkw)


@plain_args
def max_context(model, gpu, batch: int = SERVING_OPTIONS["batch"].default,
                cuda_context_bytes: int | None = None, allocator_headroom: float | None = None, **kwargs) -> Limit:
    """Largest context_len (up to the model's max_position_embeddings) that still fits() `gpu`.

    Returns a Limit (value 0 with the reason when even one token does not fit; no exception).
    """
    _searched("max_context", "context_len", kwargs)
    m = get_model(model) if isinstance(model, str) else model
    estimate_inference(m, batch, 1, **kwargs)
    fkw = _fits_kw(cuda_context_bytes, allocator_headroom)
    return _largest(lambda n: estimate_inference(m, batch, n, **kwargs), gpu, m.max_position_embeddings,
                    "context_len", fkw)


def _searched(fn: str, name: str, kwargs: dict) -> None:
    """max_batch searches the batch and max_context the context: that option given too is a mistake, said so."""
    if name in kwargs:
        raise ValueError(f"{fn} searches {name} (the largest that fits), so {name}={kwargs[name]!r} cannot be given; "
                         f"{'pass context_len' if name == 'batch' else 'pass batch'} and the other options")


def _fits_kw(cuda_context_bytes, allocator_headroom) -> dict:
    kw = {}
    if cuda_context_bytes is not None:
        kw["cuda_context_bytes"] = cuda_context_bytes
    if allocator_headroom is not None:
        kw["allocator_headroom"] = allocator_headroom
    return kw


# --- explanation ---------------------------------------------------------------------------------
WEIGHT_FORMULAS = {
    "bf16": "2 bytes per parameter",
    "fp16": "2 bytes per parameter",
    "fp32": "4 bytes per parameter",
    "int8": "in*out int8 + 4*out (fp32 row absmax SCB): LLM.int8(), bitsandbytes Linear8bitLt",
    "int8-gptq": "qweight in*out + qzeros ceil(in/g)*out + scales 2*ceil(in/g)*out + g_idx 4*in: GPTQModel QuantLinear, bits=8",
    "int4-gptq": "qweight in*out/2 + qzeros ceil(in/g)*out/2 + scales 2*ceil(in/g)*out + g_idx 4*in: AutoGPTQ QuantLinear",
    "int4-awq": "qweight in*out/2 + qzeros (in/g)*out/2 + scales 2*(in/g)*out: AutoAWQ WQLinear_GEMM",
    "nf4": "4 + 8/64 + 32/(64*256) bits per weight: QLoRA NF4 with double quantization",
    "fp8-block": "in*out fp8 + 4*ceil(in/128)*ceil(out/128) fp32 block scales: DeepSeek-V3 block-wise fp8",
    "mxfp4": "out*(in/32)*17 bytes (E2M1 pairs + one E8M0 scale per 32): OCP MX, gpt-oss experts only",
}


def _row(label: str, formula: str, nbytes: int) -> str:
    return f"| {label} | {formula} | {gb(nbytes):,.3f} GB | {gib(nbytes):,.3f} GiB |"


def _explain(est: InferenceEstimate) -> str:
    lines = _explain_setup(est) + _explain_weights(est) + _explain_kv(est) + _explain_prefill(est)
    return "\n".join(lines + _explain_total(est))


def _per(s: InferenceSetup) -> str:
    return " per GPU" if s.tp > 1 or s.ep > 1 else ""


def _explain_setup(est: InferenceEstimate) -> list[str]:
    s, m = est.setup, est.setup.model
    kv = s.kv_cache + (f" (K), {s.kv_cache_v} (V)" if s.kv_cache_v else "")
    lines = [
        f"### Serving memory: {m.name}",
        "",
        f"{m.describe()}.",
        f"Setup: batch {s.batch} x context {s.context_len:,} = {s.tokens:,} tokens, engine **{s.engine}**, "
        f"weights **{s.weights}**, KV cache **{kv}**, tensor parallel **{s.tp}**"
        + (f", expert parallel **{s.ep}**" if s.ep > 1 else "")
        + (f", group size {s.group_size}" if s.weights in GROUPED else "")
        + f", logits **{s.logits}** (" + {"last": "last position", "all": "every position",
                                              "all-fp32": "every position, and their fp32 copy"}[s.logits] + ").",
        "",
    ]
    return lines + [f"**Warning:** {w}" for w in est.warnings] + ([""] if est.warnings else [])


def _explain_weights(est: InferenceEstimate) -> list[str]:
    s, m, wp = est.setup, est.setup.model, est.weight_parts
    q16 = "16-bit" if s.weights in QUANTIZED else s.weights
    lines = [
        f"**1. Weights{_per(s)}** ({WEIGHT_FORMULAS[s.weights]}"
        + ("; embeddings, lm_head, norms, biases and routers stay 16-bit" if s.weights in QUANTIZED else "") + ")",
        "",
        "| tensors | how | GB | GiB |",
        "|---|---|---:|---:|",
        _row("projections", (q16 if s.weights == "mxfp4" else s.weights)
             + (f", split over tp={s.tp}" if s.tp > 1 else ""), wp["linear"]),
    ]
    if wp["experts"]:
        lines.append(_row("routed experts", f"{s.weights}, all {m.num_experts} resident"
                          + (f", {m.num_experts // s.ep} per GPU (ep={s.ep})" if s.ep > 1 else
                             (f", each split over tp={s.tp}" if s.tp > 1 else "")), wp["experts"]))
    for k in ("lm_head", "embedding", "norm", "bias"):
        if wp[k]:
            lines.append(_row(k, q16, wp[k]))
    return lines + [_row("**weights**", "sum", est.weight_bytes), ""]


def _kv_how(s: InferenceSetup) -> str:
    m = s.model
    if s.kv_cache == "fp8_ds_mla":
        return (f"kv_lora_rank {m.kv_lora_rank} fp8 + {m.kv_lora_rank // 128} fp32 scales + rope {m.qk_rope_head_dim}"
                " x 2 B per layer, not split by tp (vLLM fp8_ds_mla, FlashMLA sparse)")
    if s.kv_cache_v is not None or s.kv_cache not in KV_ELEMENT_BYTES:
        w = m.num_kv_heads // s.tp * m.head_dim
        return (f"K: {w} values ({m.num_kv_heads} KV heads x head_dim {m.head_dim}) in {s.kv_cache}, V: {w} in "
                f"{s.kv_cache_v or s.kv_cache} (ggml block formats, ggml-common.h) per layer")
    kv_elem = KV_ELEMENT_BYTES[s.kv_cache]
    if m.is_mla and s.mla_cache == "latent":
        return (f"(kv_lora_rank {m.kv_lora_rank} + rope {m.qk_rope_head_dim}) x {kv_elem} B per layer, "
                "not split by tp (DeepSeek-V2 Sec. 2.1.2)")
    if m.is_mla:
        return f"{m.num_heads // s.tp} heads x (K {m.head_dim} + V {m.v_head_dim}) x {kv_elem} B per layer (transformers' cache)"
    return (f"2 (K, V) x {m.num_kv_heads // s.tp} KV heads" + (f" ({m.num_kv_heads}/{s.tp})" if s.tp > 1 else "")
            + f" x (head_dim {m.head_dim} x {kv_elem} B"
            + (" + 2 x 2 B scale and zero point" if s.kv_cache == "int8" else "") + ") per layer")


def _explain_kv(est: InferenceEstimate) -> list[str]:
    s, m = est.setup, est.setup.model
    per_layer = kv_layer_bytes_per_token(m, s.kv_cache, s.tp, s.mla_cache, s.kv_cache_v)
    spans = ", ".join(f"{n} {t.replace('_attention', '')} layer(s)"
                      + (f" capped at {kv_cap(m, t):,} tokens" if kv_cap(m, t) else "")
                      for t, n in m.layer_counts().items())
    sizing = {"vllm": "; each sequence in whole 16-token blocks (vLLM PagedAttention)",
              "llama.cpp": "; llama.cpp cells: the context padded to 256, sliding layers at window + ubatch"}
    return [
        f"**2. KV cache{_per(s)}**: {_kv_how(s)} = {per_layer:,} B; x {m.num_layers} layers = "
        f"**{est.kv_bytes_per_token:,} bytes per token**; {spans}; x batch {s.batch}{sizing.get(s.engine, '')} "
        f"= {fmt_bytes(est.kv_cache_bytes)} (Pope et al. 2022, Sec. 2.1).",
        "",
    ]


def _explain_prefill(est: InferenceEstimate) -> list[str]:
    s, m = est.setup, est.setup.model
    lines = [
        f"**3. Prefill workspace** (one forward over {s.forward_tokens:,} tokens, no autograd; the largest moment counts)",
        "",
        f"T = {s.forward_tokens:,} tokens, c = {COMPUTE_BYTES.get(s.weights, 2)} bytes (compute dtype), "
        f"h = {m.hidden_size}; " + (f"per GPU q = {m.q_size // s.tp}, kv = {m.kv_size // s.tp}, "
                                    f"heads = {m.num_heads // s.tp}." if s.tp > 1 else
                                    f"q = {m.q_size}, kv = {m.kv_size}, heads = {m.num_heads}.")
        + " FlashAttention-style kernels store no s x s scores; the logits are for "
        + ("the last position only (HF generate, vLLM)." if s.logits == "last" else "every position (a plain forward)."
           if s.logits == "all" else "every position, upcast to fp32 (transformers 4.31-4.44's generate)."),
        "",
        "| moment | what is alive besides weights and cache | GB | GiB |",
        "|---|---|---:|---:|",
    ]
    for name, nbytes in est.moments.items():
        mark = " **(peak)**" if name == est.phase else ""
        lines.append(_row(name + mark, est.moment_formulas[name], nbytes))
    if est.dequant_workspace:
        lines += ["", f"Quantized matmul workspace: {fmt_bytes(est.dequant_workspace)} "
                      + {"int8": "(int8 input copy and int32 accumulator of the largest matmul)",
                         "fp8-block": "(fp8 copy of the widest matmul input and its per-128 fp32 scales)"}.get(
                          s.weights, "(a 16-bit copy of the largest weight, dequantized for the prefill)")
                      + ", counted as coinciding with the peak moment (upper bound)."]
    return lines


def _explain_total(est: InferenceEstimate) -> list[str]:
    per = _per(est.setup)
    lines = ["", "| term | GB | GiB |", "|---|---:|---:|"]
    for k, v in est.breakdown.items():
        lines.append(f"| {k} | {gb(v):,.3f} | {gib(v):,.3f} |")
    lines += [f"| **peak{per}** | **{gb(est.peak_bytes):,.3f}** | **{gib(est.peak_bytes):,.3f}** |", ""]
    lines.append("`fits()` adds the CUDA context and allocator headroom to this peak.")
    return lines + [f"- {note}" for note in est.notes if not note.startswith("WARNING: ")]
