"""estimate_inference: memory to serve an LLM, per GPU: weights + KV cache + the prefill's workspace.

What is counted (per GPU, exact bytes):
  weights     every tensor of `Model.tensors()` in the storage of the chosen format, the
              quantized formats counted buffer by buffer from their libraries' layouts;
              with tensor parallelism (tp > 1) the Megatron shard one GPU holds
  kv_cache    keys and values of batch x context_len tokens in every layer (the cache when
              the context is full; what vLLM preallocates, what HF's DynamicCache grows to)
  activations the largest transient of one prefill forward over the whole context without
              autograd (torch.inference_mode): each tensor is freed when its last reference
              dies, so only one layer's intermediates live at a time
  dequant_workspace  quantized formats only: what a quantized matmul allocates on top of
              the activations during a prefill (counted as if it coincided with the largest
              activation moment: an upper bound)

peak = weights + kv_cache + activations + dequant_workspace. It is a serving-capacity
figure: the prefill of a full-context prompt while the cache holds the full context.
Not counted: the CUDA context and allocator headroom (`fits()` adds them), vLLM's
`gpu_memory_utilization` reservation, CUDA graphs, the sampler's top-k/top-p temporaries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from memlib._checks import choice, positive_int
from memlib.fit import Verdict, fits
from memlib.lora import linear_shape, nf4_bytes
from memlib.models import Model, get_model
from memlib.units import fmt_bytes, gb, gib

WEIGHT_FORMATS = ("bf16", "fp16", "fp32", "int8", "int4-gptq", "int4-awq", "nf4")
KV_FORMATS = ("bf16", "fp16", "fp8", "int8")
LOGITS = ("last", "all")
QUANTIZED = ("int8", "int4-gptq", "int4-awq", "nf4")

# Bytes per element of the unquantized formats; the quantized formats keep every tensor
# they do not quantize (embeddings, lm_head, norms, biases) in 16-bit.
FLOAT_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
# The dtype the matmuls and activations run in: fp32 for fp32 weights, else 16-bit
# (GPTQ/AWQ kernels and LLM.int8() compute in fp16, bitsandbytes 4-bit in bf16 by default).
COMPUTE_BYTES = {"fp32": 4}
# KV cache element bytes; int8 adds its scales (see kv_bytes_per_token).
KV_ELEMENT_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}

BREAKDOWN_KEYS = ("weights", "kv_cache", "activations", "dequant_workspace")

# Megatron-LM tensor parallelism (Shoeybi et al. 2019, Sec. 3): the first matmul of each
# block is split by output columns, the second by input rows.
COLUMN_PARALLEL = ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj", "fc_in")
ROW_PARALLEL = ("o_proj", "down_proj", "fc_out")


# --- quantized storage of one linear layer --------------------------------------------------
def quantized_linear_bytes(in_features: int, out_features: int, fmt: str, group_size: int = 128) -> int:
    """Bytes one (in_features -> out_features) weight matrix occupies in `fmt`, every buffer counted.

    int8      in*out + 4*out: int8 weight CB plus one fp32 absmax per output row (SCB)
              (Dettmers et al. 2022, LLM.int8(), Sec. 3; bitsandbytes Int8Params CB/SCB).
    int4-gptq qweight int32 [in//32*4, out] + qzeros int32 [ceil(in/g), out//32*4]
              + scales fp16 [ceil(in/g), out] + g_idx int32 [in]
              (Frantar et al. 2022, GPTQ; AutoGPTQ qlinear QuantLinear buffers).
    int4-awq  qweight int32 [in, out//8] + qzeros int32 [in//g, out//8] + scales fp16 [in//g, out]
              (Lin et al. 2023, AWQ; AutoAWQ WQLinear_GEMM buffers; no g_idx).
    nf4       memlib.lora.nf4_bytes: QLoRA NF4 with double quantization (Dettmers et al. 2023).
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
        return nf4_bytes(i * o)
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


def kv_bytes_per_token(model: Model, kv_cache: str = "bf16", tp: int = 1) -> int:
    """KV cache bytes of one token on one GPU: 2 (K and V) x layers x kv_heads/tp x head_dim x bytes
    (Pope et al. 2022, Efficiently Scaling Transformer Inference, Sec. 2.1; Kwon et al. 2023, vLLM, Sec. 2).

    GQA-aware: only the num_kv_heads key/value heads are cached. "fp8" is vLLM's fp8 cache
    (one scale per layer tensor, not per token: counted as 0 here). "int8" is LMDeploy's
    quant_policy=8 (asymmetric, per head per token): uint8 values plus a 16-bit scale and
    zero point for each (token, kv head) of K and of V, i.e. head_dim + 2*2 bytes per head.
    """
    choice("kv_cache", kv_cache, KV_FORMATS)
    per_head = model.head_dim * KV_ELEMENT_BYTES[kv_cache] + (2 * 2 if kv_cache == "int8" else 0)
    return 2 * model.num_layers * (model.num_kv_heads // tp) * per_head


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

    @property
    def tokens(self) -> int:
        return self.batch * self.context_len


@dataclass
class InferenceEstimate:
    setup: InferenceSetup
    weight_parts: dict[str, int]  # per GPU, by tensor kind: linear, lm_head, embedding, norm, bias
    kv_bytes_per_token: int  # per GPU
    moments: dict[str, int]  # transient bytes of each moment of the prefill forward
    moment_formulas: dict[str, str]
    dequant_workspace: int
    notes: list[str] = field(default_factory=list)

    @property
    def weight_bytes(self) -> int:
        return sum(self.weight_parts.values())

    @property
    def kv_cache_bytes(self) -> int:
        return self.kv_bytes_per_token * self.setup.tokens

    @property
    def phase(self) -> str:
        """The moment of the prefill whose transient is largest: 'rotary', 'attention', 'mlp' or 'lm_head'."""
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
            "model": s.model.name, "num_params": s.model.num_params, "batch": s.batch,
            "context_len": s.context_len, "weights": s.weights, "kv_cache": s.kv_cache, "tp": s.tp,
            "group_size": s.group_size, "logits": s.logits,
            "peak_bytes": self.peak_bytes, "phase": self.phase, "breakdown": self.breakdown,
            "weight_parts": dict(self.weight_parts), "kv_bytes_per_token": self.kv_bytes_per_token,
            "moments": dict(self.moments), "notes": list(self.notes),
        }

    def explain(self) -> str:
        return _explain(self)

    def __repr__(self) -> str:
        return (f"InferenceEstimate({self.setup.model.name}: peak {fmt_bytes(self.peak_bytes)} per GPU; "
                + ", ".join(f"{k} {gb(v):.2f} GB" for k, v in self.breakdown.items() if v) + ")")


def _check(model, batch, context_len, weights, kv_cache, tp, group_size, logits) -> InferenceSetup:
    model = get_model(model) if isinstance(model, str) else model
    if not isinstance(model, Model):
        raise ValueError(f"model must be a catalog name or a memlib.Model, got {type(model).__name__}")
    batch = positive_int("batch", batch)
    context_len = positive_int("context_len", context_len)
    choice("weights", weights, WEIGHT_FORMATS)
    choice("kv_cache", kv_cache, KV_FORMATS)
    choice("logits", logits, LOGITS)
    tp = positive_int("tp", tp)
    group_size = positive_int("group_size", group_size)
    for what, n in (("num_heads", model.num_heads), ("num_kv_heads", model.num_kv_heads),
                    ("intermediate_size", model.intermediate_size)):
        if n % tp:
            raise ValueError(f"tp {tp} does not divide {model.name}'s {what} {n}: tensor parallelism "
                             f"splits them evenly across GPUs; accepted tp: {', '.join(map(str, _divisors(model)))}")
    if model.position == "learned" and context_len > model.max_position_embeddings:
        raise ValueError(f"context_len {context_len} exceeds {model.name}'s learned position table "
                         f"({model.max_position_embeddings})")
    return InferenceSetup(model, batch, context_len, weights, kv_cache, tp, group_size, logits)


def _divisors(model: Model) -> list[int]:
    return [d for d in range(1, model.num_kv_heads + 1)
            if not (model.num_heads % d or model.num_kv_heads % d or model.intermediate_size % d)]


def _shape(model: Model, name: str) -> tuple[int, int]:
    """(in_features, out_features) of a decoder-layer projection."""
    if name == "fc_in":
        return model.hidden_size, model.intermediate_size
    if name == "fc_out":
        return model.intermediate_size, model.hidden_size
    return linear_shape(model, name)


@lru_cache(maxsize=1024)
def _weight_parts(model: Model, weights: str = "bf16", tp: int = 1, group_size: int = 128) -> dict[str, int]:
    """Weight bytes on one GPU by kind ('linear', 'lm_head', 'embedding', 'norm', 'bias').

    Quantized formats quantize the decoder layers' projections only; embeddings, lm_head,
    norms and biases stay 16-bit (the defaults of bitsandbytes via transformers, AutoGPTQ
    and AutoAWQ, which skip lm_head and do not touch embeddings or norms).
    Under tp (Megatron, Shoeybi et al. 2019 Sec. 3): projections split by output columns
    (q, k, v, gate, up) or input rows (o, down); embedding and lm_head split by vocabulary
    rows (VocabParallelEmbedding, ceil(V/tp) rows each, vLLM's padding ignored); norms,
    learned positions and the biases of row-parallel layers are replicated.
    """
    fmt_bytes16 = FLOAT_BYTES.get(weights, 2)
    parts = {"linear": 0, "lm_head": 0, "embedding": 0, "norm": 0, "bias": 0}
    h = model.hidden_size
    for t in model.tensors():
        base = t.name.split(".")[0]
        if t.kind == "linear" and t.name != "lm_head":
            fan_in, fan_out = _shape(model, t.name)
            if base in COLUMN_PARALLEL:
                fan_out //= tp
            else:
                fan_in //= tp
            parts["linear"] += quantized_linear_bytes(fan_in, fan_out, weights, group_size) * t.count
        elif t.name in ("lm_head", "embed_tokens"):
            rows = -(-model.vocab_size // tp)
            parts["lm_head" if t.name == "lm_head" else "embedding"] += rows * h * fmt_bytes16
        elif t.kind == "bias":
            numel = t.numel // tp if base in COLUMN_PARALLEL else t.numel
            parts["bias"] += numel * t.count * fmt_bytes16
        elif t.kind == "norm":
            parts["norm"] += t.numel * t.count * fmt_bytes16
        else:  # learned position embeddings: replicated
            parts["embedding"] += t.numel * t.count * fmt_bytes16
    return parts


def estimate_inference(model, batch: int = 1, context_len: int = 4096, weights: str = "bf16",
                       kv_cache: str = "bf16", tp: int = 1, group_size: int = 128,
                       logits: str = "last") -> InferenceEstimate:
    """Memory to serve `model` on one of `tp` GPUs: weights, KV cache, the prefill's activations.

    weights:  "bf16" | "fp16" | "fp32" | "int8" (LLM.int8()) | "int4-gptq" | "int4-awq" | "nf4".
    kv_cache: "bf16" | "fp16" | "fp8" | "int8".
    tp:       tensor-parallel degree; must divide num_heads, num_kv_heads and intermediate_size.
    group_size: GPTQ/AWQ quantization group (default 128).
    logits:   "last" (HF generate with logits_to_keep=1, vLLM: the head runs on the last
              position only) | "all" (a plain forward: logits for every position).
    """
    s = _check(model, batch, context_len, weights, kv_cache, tp, group_size, logits)
    m = s.model
    parts = dict(_weight_parts(m, s.weights, s.tp, s.group_size))  # a copy: the cached one stays intact
    kv_tok = kv_bytes_per_token(m, s.kv_cache, s.tp)
    moments, formulas = _prefill_moments(s)
    notes = []
    if m.position == "rope" and s.context_len > m.max_position_embeddings:
        notes.append(f"context_len {s.context_len:,} exceeds the model's trained context "
                     f"({m.max_position_embeddings:,}); memory is counted anyway")
    return InferenceEstimate(s, parts, kv_tok, moments, formulas, _dequant_workspace(s), notes)


def _prefill_moments(s: InferenceSetup) -> tuple[dict[str, int], dict[str, str]]:
    """Transient bytes at each candidate peak of one prefill forward (HF LlamaDecoderLayer order).

    T = batch x context tokens, c = compute bytes; per GPU q, kv, I and heads are divided by tp,
    the residual stream (hidden h) is not. The KV cache tensors themselves are not counted here.
    """
    m, tp, T, b = s.model, s.tp, s.tokens, s.batch
    c = COMPUTE_BYTES.get(s.weights, 2)
    h, q, kv, inter, heads = m.hidden_size, m.q_size // tp, m.kv_size // tp, m.intermediate_size // tp, m.num_heads // tp
    # Alive through every layer: the residual (held by `residual`) and the normed input
    # (held by the caller's `hidden_states` while attention or the MLP runs); with RoPE the
    # cos and sin tables (b, s, head_dim) computed once per forward.
    rope = 2 * T * m.head_dim * c if m.position == "rope" else 0
    base = 2 * T * h * c + rope
    base_f = "2*T*h*c (residual + normed input)" + (" + 2*T*head_dim*c (RoPE cos, sin)" if rope else "")
    moments, formulas = {}, {}
    if m.position == "rope":
        # apply_rotary_pos_emb: q*cos + rotate_half(q)*sin with q, both products and the
        # result alive; the unrotated k too (v and the rotated k are the cache's tensors).
        moments["rotary"] = base + 4 * T * q * c + T * kv * c
        formulas["rotary"] = base_f + " + 4*T*q*c (q, q*cos, rot(q)*sin, q_rot) + T*kv*c (k before RoPE)"
    # FlashAttention / SDPA: no s x s scores; rotated q, the output, fp32 log-sum-exp per head.
    moments["attention"] = base + 2 * T * q * c + 4 * T * heads
    formulas["attention"] = base_f + " + 2*T*q*c (q, attention output) + 4*T*heads (fp32 softmax LSE)"
    if m.mlp == "gated":  # down(act(gate(x)) * up(x)): act, up and their product at the multiply
        moments["mlp"] = base + 3 * T * inter * c
        formulas["mlp"] = base_f + " + 3*T*I*c (act(gate), up, product)"
    else:  # fc_out(act(fc_in(x))): fc_in's output and the activation's
        moments["mlp"] = base + 2 * T * inter * c
        formulas["mlp"] = base_f + " + 2*T*I*c (fc_in output, activation)"
    # Head: the final norm's output, the head's logits (a vocabulary shard per GPU, gathered to
    # the full vocabulary when tp > 1) and generate's fp32 copy of the last position's logits.
    rows = b if s.logits == "last" else T
    V = m.vocab_size
    shard = rows * -(-V // tp) * c
    gathered = rows * V * c if tp > 1 else 0
    moments["lm_head"] = T * h * c + rope + shard + gathered + 4 * b * V
    formulas["lm_head"] = (("T*h*c (final norm output)" + (" + RoPE cos, sin" if rope else ""))
                           + f" + {'b' if s.logits == 'last' else 'T'}*ceil(V/tp)*c (logits)"
                           + (f" + {'b' if s.logits == 'last' else 'T'}*V*c (gathered)" if tp > 1 else "")
                           + " + 4*b*V (fp32 logits of the last position)")
    return moments, formulas


@lru_cache(maxsize=1024)
def _largest_linear(model: Model, tp: int) -> tuple[int, int]:
    """Over the per-GPU projection shards: the largest in*out and the largest in + 4*out."""
    best_numel, best_io = 0, 0
    for t in model.tensors():
        if t.kind != "linear" or t.name == "lm_head":
            continue
        fi, fo = _shape(model, t.name)
        fo, fi = (fo // tp, fi) if t.name in COLUMN_PARALLEL else (fo, fi // tp)
        best_numel = max(best_numel, fi * fo)
        best_io = max(best_io, fi + 4 * fo)
    return best_numel, best_io


def _dequant_workspace(s: InferenceSetup) -> int:
    """Extra bytes a quantized matmul allocates during a prefill (upper bound, see module docstring).

    4-bit formats: a 16-bit copy of the largest weight shard (bitsandbytes dequantize_4bit for
    inputs of more than one token; exllama / AWQ GEMM kernels reconstruct fp16 weights for large
    batches). int8 (LLM.int8()): the int8 copy of the input (T*in) and the int32 accumulator
    (4*T*out) of the largest matmul, before int8_mm_dequant writes the 16-bit output.
    """
    if s.weights not in QUANTIZED:
        return 0
    numel, io = _largest_linear(s.model, s.tp)
    if s.weights == "int8":
        return s.tokens * io
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


def max_batch(model, gpu, context_len: int = 4096, cuda_context_bytes: int | None = None,
              allocator_headroom: float | None = None, **kwargs) -> Limit:
    """Largest batch whose estimate at `context_len` still fits() `gpu` (binary search).

    Returns a Limit (value 0 with the reason when even batch 1 does not fit; no exception).
    `kwargs` go to estimate_inference (weights, kv_cache, tp, ...); the verdict is per GPU.
    """
    estimate_inference(model, 1, context_len, **kwargs)  # validates the inputs once
    fkw = _fits_kw(cuda_context_bytes, allocator_headroom)
    return _largest(lambda n: estimate_inference(model, n, context_len, **kwargs), gpu, None, "batch", fkw)


def max_context(model, gpu, batch: int = 1, cuda_context_bytes: int | None = None,
                allocator_headroom: float | None = None, **kwargs) -> Limit:
    """Largest context_len (up to the model's max_position_embeddings) that still fits() `gpu`.

    Returns a Limit (value 0 with the reason when even one token does not fit; no exception).
    """
    m = get_model(model) if isinstance(model, str) else model
    estimate_inference(m, batch, 1, **kwargs)
    fkw = _fits_kw(cuda_context_bytes, allocator_headroom)
    return _largest(lambda n: estimate_inference(m, batch, n, **kwargs), gpu, m.max_position_embeddings,
                    "context_len", fkw)


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
    "int4-gptq": "qweight in*out/2 + qzeros ceil(in/g)*out/2 + scales 2*ceil(in/g)*out + g_idx 4*in: AutoGPTQ QuantLinear",
    "int4-awq": "qweight in*out/2 + qzeros (in/g)*out/2 + scales 2*(in/g)*out: AutoAWQ WQLinear_GEMM",
    "nf4": "4 + 8/64 + 32/(64*256) bits per weight: QLoRA NF4 with double quantization",
}


def _row(label: str, formula: str, nbytes: int) -> str:
    return f"| {label} | {formula} | {gb(nbytes):,.3f} GB | {gib(nbytes):,.3f} GiB |"


def _explain(est: InferenceEstimate) -> str:
    s, m = est.setup, est.setup.model
    per = " per GPU" if s.tp > 1 else ""
    wp = est.weight_parts
    kv_elem = KV_ELEMENT_BYTES[s.kv_cache]
    lines = [
        f"### Serving memory: {m.name}",
        "",
        f"{m.describe()}.",
        f"Setup: batch {s.batch} x context {s.context_len:,} = {s.tokens:,} tokens, weights **{s.weights}**, "
        f"KV cache **{s.kv_cache}**, tensor parallel **{s.tp}**"
        + (f", group size {s.group_size}" if s.weights in ("int4-gptq", "int4-awq") else "")
        + f", logits for **{s.logits}** positions.",
        "",
        f"**1. Weights{per}** ({WEIGHT_FORMULAS[s.weights]}"
        + ("; embeddings, lm_head, norms and biases stay 16-bit" if s.weights in QUANTIZED else "") + ")",
        "",
        "| tensors | how | GB | GiB |",
        "|---|---|---:|---:|",
        _row("projections", f"{s.weights}" + (f", split over tp={s.tp}" if s.tp > 1 else ""), wp["linear"]),
    ]
    for k in ("lm_head", "embedding", "norm", "bias"):
        if wp[k]:
            lines.append(_row(k, "16-bit" if s.weights in QUANTIZED else s.weights, wp[k]))
    lines += [
        _row("**weights**", "sum", est.weight_bytes),
        "",
        f"**2. KV cache{per}**: 2 (K, V) x {m.num_layers} layers x {m.num_kv_heads // s.tp} KV heads"
        + (f" ({m.num_kv_heads}/{s.tp})" if s.tp > 1 else "")
        + f" x (head_dim {m.head_dim} x {kv_elem} B"
        + (" + 2 x 2 B scale and zero point" if s.kv_cache == "int8" else "")
        + f") = **{est.kv_bytes_per_token:,} bytes per token**; x {s.tokens:,} tokens "
        f"= {fmt_bytes(est.kv_cache_bytes)} (Pope et al. 2022, Sec. 2.1).",
        "",
        f"**3. Prefill workspace** (one forward over {s.tokens:,} tokens, no autograd; the largest moment counts)",
        "",
        f"T = {s.tokens:,} tokens, c = {COMPUTE_BYTES.get(s.weights, 2)} bytes (compute dtype), h = {m.hidden_size}; "
        + (f"per GPU q = {m.q_size // s.tp}, kv = {m.kv_size // s.tp}, I = {m.intermediate_size // s.tp}, "
           f"heads = {m.num_heads // s.tp}." if s.tp > 1 else
           f"q = {m.q_size}, kv = {m.kv_size}, I = {m.intermediate_size}, heads = {m.num_heads}.")
        + " FlashAttention-style kernels store no s x s scores; the logits are for the "
        + ("last position only (HF generate, vLLM)." if s.logits == "last" else "every position (a plain forward)."),
        "",
        "| moment | what is alive besides weights and cache | GB | GiB |",
        "|---|---|---:|---:|",
    ]
    for name, nbytes in est.moments.items():
        mark = " **(peak)**" if name == est.phase else ""
        lines.append(_row(name + mark, est.moment_formulas[name], nbytes))
    if est.dequant_workspace:
        lines += ["", f"Quantized matmul workspace: {fmt_bytes(est.dequant_workspace)} "
                      + ("(int8 input copy and int32 accumulator of the largest matmul)" if s.weights == "int8"
                         else "(a 16-bit copy of the largest weight, dequantized for the prefill)")
                      + ", counted as coinciding with the peak moment (upper bound)."]
    lines += ["", "| term | GB | GiB |", "|---|---:|---:|"]
    for k, v in est.breakdown.items():
        lines.append(f"| {k} | {gb(v):,.3f} | {gib(v):,.3f} |")
    lines += [f"| **peak{per}** | **{gb(est.peak_bytes):,.3f}** | **{gib(est.peak_bytes):,.3f}** |", ""]
    lines.append("`fits()` adds the CUDA context and allocator headroom to this peak.")
    for note in est.notes:
        lines.append(f"- {note}")
    return "\n".join(lines)
