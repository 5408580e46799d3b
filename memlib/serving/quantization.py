"""Quantization arithmetic: how a weight becomes a small integer and back, what it costs in bits per
weight, and when storing fewer bits makes decoding faster.

  affine_params     r = S·(q − Z) (Jacob et al. 2018, arXiv:1712.05877, Sec. 2.1). Symmetric ("absmax"):
                    Z = 0, S = max|x| / (2^(b−1) − 1), codes in [−127, 127] for 8 bits (Dettmers et al.
                    2022, LLM.int8(), arXiv:2208.07339, Sec. 2.1: X_i8 = round(127 / max|X| · X)).
                    Asymmetric ("min/max", zero-point): S = (max − min) / (2^b − 1), Z = round(−min / S),
                    codes in [0, 2^b − 1]; the range is widened to hold 0 so that 0 is exact (Jacob et al.
                    2018, Sec. 2.1: "the real value 0 be exactly representable").
  quantize, dequantize, max_rounding_error
                    q = clamp(round(x / S) + Z), x̂ = S·(q − Z); round to nearest moves a value in the range
                    by at most S/2. round() is Python's (half to even), as torch.round.
  bits_per_weight   b + (scale bits + zero bits) / g for one scale (and zero point) per group of g weights;
                    per-channel is g = in_features (one scale per output row), per-tensor g = every weight.
                    A second level (QLoRA's double quantization, Dettmers et al. 2023, arXiv:2305.14314,
                    Sec. 3) stores the scales in 8 bits with one fp32 constant per 256 of them:
                    4 + 8/64 + 32/(64·256) = 4.127 bits.
  decode_crossover_batch
                    a decode step multiplies every weight once per sequence: 2 FLOPs per weight per sequence
                    against bits/8 bytes read, so the weight matmuls' arithmetic intensity is 16·B / bits FLOP
                    per byte at batch B; they turn compute-bound where it reaches the GPU's ridge point (peak
                    FLOP/s over HBM bytes/s; Williams et al. 2009, roofline; Pope et al. 2022,
                    arXiv:2211.05102, Sec. 2-3 on small-batch decode being memory-bound): B* = ridge · bits / 16.
  quantized_decode_bound, decode_speedup
                    memlib.serving.capacity.decode_bound with the format's bytes; weight-only formats (W4A16,
                    W8A16) compute in 16-bit, W8A8 (SmoothQuant, Xiao et al. 2022, arXiv:2211.10438) runs its
                    matmuls on the int8 (or fp8) tensor cores, so its compute roof is that peak. Upper bounds:
                    dequantization, kernel launches and communication are not counted.
  decode_speedup_end_batch
                    where a weight-only format's decode speed-up ends: the larger of the two ridges. Below the
                    quantized format's own ridge (ridge · bits / 16) both are memory-bound and the speed-up is
                    the bytes ratio; between the two ridges the quantized step is compute-bound while the 16-bit
                    one still reads its bytes, so the speed-up falls as 1 / B; past the 16-bit ridge both are
                    compute-bound on the same 16-bit tensor cores: 1.0 (W4A16 on an H100: 77, then 295).
  FloatFormat, FLOAT_FORMATS
                    sign + e exponent + m mantissa bits, bias 2^(e−1) − 1. fp8 E4M3 ("fn": no infinities, only
                    S.1111.111 is NaN) tops out at 2^8 × 1.75 = 448; E5M2 keeps IEEE infinities, 2^15 × 1.75 =
                    57,344 (OCP 8-bit Floating Point Specification (OFP8) rev. 1.0, 2023; Micikevicius et al. 2022,
                    arXiv:2209.05433, Table 1); fp4 E2M1 has no special values, 2^2 × 1.5 = 6 (OCP Microscaling
                    Formats (MX) Specification v1.0, 2023, Sec. 5.3.3).
  SCALED_FORMATS, scaled_format_bits
                    an element format plus its scales: one scale per block of k elements, and optionally one per
                    tensor. MXFP4: E2M1 + an E8M0 (8-bit power of two) scale per 32 = 4 + 8/32 = 4.25 bits (OCP MX
                    v1.0, Sec. 5, Table 1); NVFP4: E2M1 + an E4M3 scale per 16 + one fp32 per tensor = 4 + 8/16 +
                    32/n = 4.5 bits (NVIDIA, "Introducing NVFP4 for Efficient and Accurate Low-Precision
                    Inference", 2025); fp8 with an fp32 scale per tensor, per output channel, or per 128×128 block
                    (DeepSeek-V3 Technical Report, arXiv:2412.19437, Sec. 3.3.2: 8 + 32/16,384 bits; its activations
                    1×128 tiles: 8 + 32/128).
  w4a4_serving_bytes, online_hadamard_flops_per_token
                    W4A4 with rotations (QuaRot, Ashkboos et al. 2024, arXiv:2404.00456; SpinQuant, Liu et al. 2024,
                    arXiv:2405.16406): an orthogonal (Hadamard) rotation Q with W·x = (W·Q)(Qᵀ·x) spreads an
                    activation's outlier channels over all channels, so per-token int4 activations lose little.
                    Most rotations fold into the weights offline; QuaRot keeps online Hadamards on the down_proj
                    input (size I) and on the attention heads (Sec. 4, Fig. 4); a fast Walsh-Hadamard transform of
                    n values costs n·log2 n additions (counted per token). Its KV cache is int4, asymmetric, one
                    fp16 scale and zero per group of 128 (the head dimension; Sec. 5.1): 4 + 32/128 = 4.25 bits.
  LLM_INT8_*        LLM.int8()'s own measured speed against 16-bit (arXiv:2208.07339, App. D, Tables 5-6):
                    published figures, quoted, not modelled.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from memlib._checks import choice, flag, plain, plain_args, positive_float, positive_int
from memlib.hardware.gpus import get_gpu
from memlib.models import get_model
from memlib.serving.capacity import DecodeBound, decode_bound
from memlib.training.lora import NF4_BITS_PER_PARAM

ACTIVATIONS = ("16-bit", "int8", "fp8")  # the dtype the matmuls run in: W4A16/W8A16, W8A8 (int8 or fp8)

# LLM.int8() (Dettmers et al. 2022, arXiv:2208.07339), App. D.1, Table 5: speed-up over a 16-bit matmul of the first
# feed-forward layer of GPT-3-shaped models (hidden = 4 x model dimension), by model dimension; < 1 is a slowdown.
LLM_INT8_MATMUL_SPEEDUP = {  # model dimension: (GPT-3 size, int8 without overhead, vector-wise, LLM.int8())
    768: ("Small", 0.99, 0.43, 0.14), 1024: ("Medium", 1.08, 0.49, 0.20), 1536: ("Large", 1.43, 0.74, 0.36),
    2048: ("XL", 1.61, 0.91, 0.51), 2560: ("2.7B", 1.63, 0.94, 0.64), 4096: ("6.7B", 1.67, 1.18, 0.86),
    5140: ("13B", 2.13, 1.59, 1.22), 12288: ("175B", 2.29, 2.00, 1.81),
}
# Same paper, App. D.2, Table 6: BLOOM-176B end to end in Hugging Face, ms per generated token at batch 1 / 8 / 32.
LLM_INT8_BLOOM_MS_PER_TOKEN = {
    "bfloat16, 8 x A100 80GB": (239, 32, 9.94), "LLM.int8(), 8 x A100 80GB": (253, 34, 10.44),
    "LLM.int8(), 4 x A100 80GB": (246, 33, 9.40), "LLM.int8(), 3 x A100 80GB": (247, 33, 9.11),
}
# SmoothQuant (Xiao et al. 2022, arXiv:2211.10438), Table 10: GPU latency (ms) of a batch of 4 in PyTorch on an A100.
SMOOTHQUANT_LATENCY_MS = {  # (OPT-13B at 256, 512 tokens, OPT-30B at 256, 512 tokens)
    "FP16": (152.6, 296.3, 343.0, 659.9), "LLM.int8()": (237.1, 371.5, 387.9, 654.9),
    "SmoothQuant-O3": (112.1, 223.1, 227.6, 458.4),
}


@dataclass(frozen=True)
class AffineParams:
    """One scale S and zero point Z for a group of values: x̂ = S·(q − Z), q an integer in [qmin, qmax]."""

    scale: float
    zero_point: int
    qmin: int
    qmax: int
    bits: int
    symmetric: bool

    @property
    def max_error(self) -> float:
        """The largest rounding error of a value inside the range: half a step, S/2."""
        return self.scale / 2


def _values(values) -> list[float]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise ValueError(f"values must be a list of numbers, got {type(values).__name__}")
    out = []
    for v in values:
        v = plain(v)  # numpy scalars (a row of a numpy array) as Python numbers
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"values must be finite numbers, got {v!r}")
        out.append(float(v))
    if not out:
        raise ValueError("values is empty: there is no range to quantize")
    return out


def _finite_scale(scale: float, span: float) -> float:
    """A scale a float can hold and divide by: a range of 1e-320 gives a subnormal or 0 scale (x / S overflows),
    a range near 1e308 an infinite one (every code 0). Real tensors are nowhere near either."""
    if not (math.isfinite(scale) and scale >= 2.2250738585072014e-308):
        raise ValueError(f"the values span {span!r}: the scale {scale!r} is {'0 or subnormal' if scale < 1 else 'infinite'}"
                         " in float64, so quantize/dequantize would give inf or nan; rescale the values first")
    return scale


@plain_args
def affine_params(values, bits: int = 8, symmetric: bool = True) -> AffineParams:
    """Scale and zero point for `values` at `bits` (module docstring: Jacob et al. 2018; LLM.int8() Sec. 2.1).

    symmetric=True: absmax, Z = 0, codes in [−(2^(b−1) − 1), 2^(b−1) − 1]. symmetric=False: min/max with
    the range widened to include 0, Z = round(−min / S), codes in [0, 2^b − 1]."""
    symmetric = flag("symmetric", symmetric)
    xs = _values(values)
    bits = positive_int("bits", bits, maximum=16)
    if bits < 2:
        raise ValueError(f"bits must be at least 2 (one bit has no symmetric range), got {bits}")
    if symmetric:
        qmax = 2 ** (bits - 1) - 1
        absmax = max(abs(x) for x in xs)
        if absmax == 0:
            raise ValueError("every value is 0: absmax quantization has no range (scale would be 0)")
        return AffineParams(_finite_scale(absmax / qmax, absmax), 0, -qmax, qmax, bits, True)
    lo, hi = min(min(xs), 0.0), max(max(xs), 0.0)
    if hi == lo:
        raise ValueError("every value is 0: min/max quantization has no range (scale would be 0)")
    qmax = 2 ** bits - 1
    scale = _finite_scale((hi - lo) / qmax, hi - lo)
    return AffineParams(scale, min(max(round(-lo / scale), 0), qmax), 0, qmax, bits, False)


def quantize(values, params: AffineParams) -> list[int]:
    """q = clamp(round(x / S) + Z, qmin, qmax) for each value (Jacob et al. 2018, Sec. 2.1)."""
    if not isinstance(params, AffineParams):
        raise ValueError(f"params must be an AffineParams (from affine_params), got {type(params).__name__}")
    return [min(max(round(x / params.scale) + params.zero_point, params.qmin), params.qmax) for x in _values(values)]


def dequantize(codes, params: AffineParams) -> list[float]:
    """x̂ = S·(q − Z) for each integer code."""
    if not isinstance(params, AffineParams):
        raise ValueError(f"params must be an AffineParams (from affine_params), got {type(params).__name__}")
    if isinstance(codes, (str, bytes)) or not hasattr(codes, "__iter__"):
        raise ValueError(f"codes must be a list of integers, got {type(codes).__name__}")
    out = []
    for q in codes:
        q = plain(q)
        if isinstance(q, bool) or not isinstance(q, int) or not params.qmin <= q <= params.qmax:
            raise ValueError(f"codes must be integers in [{params.qmin}, {params.qmax}], got {q!r}")
        out.append(params.scale * (q - params.zero_point))
    return out


def max_rounding_error(params: AffineParams) -> float:
    """S/2: round to nearest moves a value inside the range by at most half a step."""
    if not isinstance(params, AffineParams):
        raise ValueError(f"params must be an AffineParams (from affine_params), got {type(params).__name__}")
    return params.max_error


@plain_args
def bits_per_weight(bits: int, group_size: int, scale_bits: int = 16, zero_bits: int = 0,
                    scale_group_size: int | None = None, scale_scale_bits: int = 32) -> float:
    """Storage bits per weight: bits + (scale_bits + zero_bits) / group_size (module docstring).

    group_size: weights sharing one scale (128 for GPTQ/AWQ "g128", in_features for per-channel, the whole
    tensor for per-tensor). scale_group_size: QLoRA's double quantization, the scales themselves quantized to
    scale_bits with one scale_scale_bits constant per scale_group_size of them (64 and 256, fp32)."""
    bits = positive_int("bits", bits, maximum=32)
    g = positive_int("group_size", group_size)
    extra = positive_int("scale_bits", scale_bits, maximum=32) + positive_int("zero_bits", zero_bits, allow_zero=True,
                                                                               maximum=32)
    out = bits + extra / g
    scale_scale_bits = positive_int("scale_scale_bits", scale_scale_bits, maximum=64)  # checked even when unused
    if scale_group_size is not None:
        out += scale_scale_bits / (
            g * positive_int("scale_group_size", scale_group_size))
    return out


NF4_DOUBLE_QUANT_BITS = NF4_BITS_PER_PARAM  # 4 + 8/64 + 32/(64·256) = 4.127 (memlib.training.lora)


def _peak_tflops(gpu, activations: str) -> float:
    g = get_gpu(gpu)
    peak = {"16-bit": g.bf16_tflops or g.fp16_tflops, "int8": g.int8_tops, "fp8": g.fp8_tflops}[activations]
    if not peak:
        raise ValueError(f"{g.name} has no {activations} tensor-core peak in the catalog")
    return float(peak)


@plain_args
def decode_crossover_batch(gpu, bits: float, activations: str = "16-bit") -> float:
    """The batch at which a decode step's weight matmuls turn compute-bound: ridge · bits / 16 (module docstring).

    bits: storage bits per weight (16 for bf16, ~4.16 for int4 g128); activations: the dtype the matmuls run in
    ("16-bit" for weight-only W4A16/W8A16, "int8" or "fp8" for W8A8). KV-cache reads are not counted: they add
    bytes that grow with the batch and push the crossover later."""
    bits = positive_float("bits", bits, maximum=64.0)
    choice("activations", activations, ACTIVATIONS)
    g = get_gpu(gpu)
    ridge = _peak_tflops(g, activations) * 1e12 / g.memory_bandwidth_bytes_per_s
    return ridge * bits / 16


@plain_args
def decode_speedup_end_batch(gpu, bits: float, baseline_bits: float = 16) -> float:
    """The batch past which a weight-only format decodes no faster than the baseline (module docstring): the larger
    of the two formats' crossover batches, max(ridge · bits / 16, ridge · baseline_bits / 16).

    Both compute in 16-bit (W4A16, W8A16 against bf16), so the compute roof is the same; the weight bytes differ.
    Between the smaller and the larger crossover the quantized step is compute-bound and the baseline still
    memory-bound: the speed-up is (baseline bytes / bandwidth) / (FLOPs / peak) = larger crossover / B, falling to 1.
    KV-cache reads are not counted (they delay both crossovers)."""
    bits = positive_float("bits", bits, maximum=64.0)
    baseline_bits = positive_float("baseline_bits", baseline_bits, maximum=64.0)
    return max(decode_crossover_batch(gpu, bits), decode_crossover_batch(gpu, baseline_bits))


@dataclass(frozen=True)
class FloatFormat:
    """A small floating-point format: 1 sign bit, `exponent_bits`, `mantissa_bits`, bias 2^(e−1) − 1.

    specials: "ieee" (the top exponent holds infinities and NaNs: E5M2), "nan" (no infinities; only the all-ones
    pattern is NaN: E4M3 "fn"), "none" (every pattern is a number: FP4 E2M1). Module docstring for the sources."""

    name: str
    exponent_bits: int
    mantissa_bits: int
    specials: str

    @property
    def bits(self) -> int:
        return 1 + self.exponent_bits + self.mantissa_bits

    @property
    def bias(self) -> int:
        return 2 ** (self.exponent_bits - 1) - 1

    @property
    def max_value(self) -> float:
        """The largest finite value: 2^(top exponent − bias) × (1 + largest mantissa / 2^m)."""
        top = 2 ** self.exponent_bits - 1 - (self.specials == "ieee")
        frac = 2 ** self.mantissa_bits - 1 - (self.specials == "nan")
        return 2.0 ** (top - self.bias) * (1 + frac / 2 ** self.mantissa_bits)

    @property
    def min_subnormal(self) -> float:
        """The smallest positive value: 2^(1 − bias − m)."""
        return 2.0 ** (1 - self.bias - self.mantissa_bits)


FLOAT_FORMATS = {
    "fp8-e4m3": FloatFormat("fp8-e4m3", 4, 3, "nan"),     # weights and activations (forward): more precision
    "fp8-e5m2": FloatFormat("fp8-e5m2", 5, 2, "ieee"),    # gradients (backward): more range
    "fp4-e2m1": FloatFormat("fp4-e2m1", 2, 1, "none"),    # MXFP4 / NVFP4 elements
}

# name: (element format, elements per scale, scale bits, scale format, per-tensor scale bits, what it is)
SCALED_FORMATS = {
    "fp8 per-tensor": ("fp8-e4m3", None, 0, "", 32, "one fp32 scale per tensor (vLLM --quantization fp8)"),
    "fp8 per-channel": ("fp8-e4m3", "in_features", 32, "fp32", 0, "one fp32 scale per output row"),
    "fp8 block 128x128": ("fp8-e4m3", 128 * 128, 32, "fp32", 0, "DeepSeek-V3 weights: one fp32 per 128x128 block"),
    "fp8 tile 1x128": ("fp8-e4m3", 128, 32, "fp32", 0, "DeepSeek-V3 activations: one fp32 per 128 values of a token"),
    "mxfp8": ("fp8-e4m3", 32, 8, "e8m0", 0, "OCP MX: an E8M0 scale per 32"),
    "mxfp4": ("fp4-e2m1", 32, 8, "e8m0", 0, "OCP MX: an E8M0 scale per 32 (gpt-oss's experts)"),
    "nvfp4": ("fp4-e2m1", 16, 8, "e4m3", 32, "NVIDIA: an E4M3 scale per 16 and an fp32 per tensor (Blackwell)"),
}


@plain_args
def scaled_format_bits(name: str, numel: int | None = None, in_features: int | None = None) -> float:
    """Storage bits per element of a scaled float format (SCALED_FORMATS; module docstring for the sources):
    element bits + block scale bits / block + per-tensor scale bits / numel.

    numel: elements of the tensor (for the per-tensor scale; None: a large tensor, where it costs ~0 bits).
    in_features: the row length, for the per-channel format."""
    choice("format", name, tuple(SCALED_FORMATS))
    # checked even where the format has no use for them: a wrong value is never silently ignored
    numel = None if numel is None else positive_int("numel", numel)
    in_features = None if in_features is None else positive_int("in_features", in_features)
    element, block, scale_bits, _, tensor_bits, _ = SCALED_FORMATS[name]
    out = float(FLOAT_FORMATS[element].bits)
    if block == "in_features":
        if in_features is None:
            raise ValueError(f"{name!r} has one scale per output row: give in_features (the row length)")
        block = positive_int("in_features", in_features)
    if block:
        out += scale_bits / block
    if tensor_bits and numel is not None:
        out += tensor_bits / positive_int("numel", numel)
    return out


@plain_args
def quantized_decode_bound(model, gpu, batch: int = 1, context_len: int = 4096, weights: str = "bf16",
                           activations: str = "16-bit", kv_cache: str = "bf16", tp: int = 1) -> DecodeBound:
    """decode_bound with the matmuls' compute roof set by `activations`: 16-bit (weight-only formats), or the
    int8/fp8 tensor-core peak for W8A8 (SmoothQuant). The bytes are `weights`' storage (estimate_inference)."""
    choice("activations", activations, ACTIVATIONS)
    b = decode_bound(model, gpu, batch, context_len, weights, kv_cache, tp)
    if activations == "16-bit":
        return b
    return dataclasses.replace(b, peak_flops=_peak_tflops(gpu, activations) * 1e12)


@plain_args
def decode_speedup(model, gpu, batch: int = 1, context_len: int = 4096, weights: str = "int4-awq",
                   activations: str = "16-bit", baseline: str = "bf16", kv_cache: str = "bf16", tp: int = 1) -> float:
    """How much shorter the decode step's roofline gets: baseline step / quantized step (upper bound: the
    dequantization in the kernel, which can make W4A16 slower than 16-bit at large batch, is not counted)."""
    base = decode_bound(model, gpu, batch, context_len, baseline, kv_cache, tp)
    return base.step_s / quantized_decode_bound(model, gpu, batch, context_len, weights, activations, kv_cache,
                                                tp).step_s


QUAROT_KV_GROUP = 128   # QuaRot Sec. 5.1: KV cache int4, asymmetric, group size 128 (= head_dim of Llama-2)
W4_SCHEMES = ("W16A16", "W4A16", "W4A4-KV4")


@plain_args
def w4a4_serving_bytes(model, batch: int, context_len: int, scheme: str = "W4A4-KV4") -> dict[str, float]:
    """Weights and KV cache (bytes, one GPU) of a serving scheme (module docstring): "W16A16" (bf16 weights and
    cache), "W4A16" (int4 g128 GPTQ weights, bf16 cache), "W4A4-KV4" (QuaRot: 4-bit weights and activations, int4
    KV cache with an fp16 scale and zero per 128). The weights of W4A16 and W4A4 are both memlib's int4-gptq
    storage (QuaRot's per-channel scales are a little smaller); the activations, transient, are not counted."""
    from memlib.serving.inference import estimate_inference, kv_cache_bytes
    choice("scheme", scheme, W4_SCHEMES)
    m = get_model(model)
    weights = "bf16" if scheme == "W16A16" else "int4-gptq"
    w = estimate_inference(m, batch, context_len, weights=weights).weight_bytes
    if scheme == "W4A4-KV4":
        elements = kv_cache_bytes(m, batch, context_len, kv_cache="fp8")          # one byte per element
        kv = elements * bits_per_weight(4, QUAROT_KV_GROUP, 16, 16) / 8
    else:
        kv = kv_cache_bytes(m, batch, context_len, kv_cache="bf16")
    return {"weights": float(w), "kv_cache": float(kv)}


@plain_args
def online_hadamard_flops_per_token(model) -> dict[str, float]:
    """Additions per token of QuaRot's online Hadamards, all layers (module docstring): the down_proj input, I·log2 I,
    and the attention's, q·log2(head_dim) + kv·log2(head_dim) (queries and keys rotated per head before the int4
    KV cache), against the linear layers' 2 FLOPs per weight. n·log2 n is the power-of-two count (QuaRot uses a
    Kronecker of a power of two and a small Hadamard for other sizes: the same order)."""
    m = get_model(model)
    if m.is_moe or m.is_mla:
        raise ValueError(f"{m.name}: the online Hadamard count is for dense attention layers (QuaRot's Llama-2)")
    I, q, kv, d = m.intermediate_size, m.q_size, m.kv_size, m.head_dim
    had = m.num_layers * (I * math.log2(I) + (q + kv) * math.log2(d))
    matmul = 2 * m.linear_params
    return {"hadamard": had, "matmul": float(matmul), "ratio": had / matmul}


__all__ = ["W4_SCHEMES", "QUAROT_KV_GROUP", "w4a4_serving_bytes", "online_hadamard_flops_per_token", "ACTIVATIONS", "AffineParams", "affine_params", "quantize", "dequantize", "max_rounding_error",
           "bits_per_weight", "NF4_DOUBLE_QUANT_BITS", "decode_crossover_batch", "quantized_decode_bound",
           "decode_speedup", "decode_speedup_end_batch", "FloatFormat", "FLOAT_FORMATS", "SCALED_FORMATS",
           "scaled_format_bits", "LLM_INT8_MATMUL_SPEEDUP", "LLM_INT8_BLOOM_MS_PER_TOKEN", "SMOOTHQUANT_LATENCY_MS"]
