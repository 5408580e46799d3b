"""Rotary position embeddings and the ways to stretch them to a longer context.

RoPE (Su et al. 2021, RoFormer, arXiv:2104.09864, eq. 15) rotates each pair i = 0..d/2-1 of a head's query and
key by the angle position x theta_i, theta_i = base^(-2i/d). Context extension changes these frequencies (and,
for YaRN, the softmax temperature) and nothing else: no weight, no cache entry changes size. Each method is
checked against huggingface/transformers @0044e3b3 `src/transformers/modeling_rope_utils.py`
(`_compute_linear_scaling_rope_parameters`, `_compute_ntk_parameters`, `_compute_yarn_parameters`,
`_compute_llama3_parameters`), which computes the inverse frequencies the same way.
"""

from __future__ import annotations

import math

from memlib._checks import choice, positive_float, positive_int, show

ROPE_METHODS = ("default", "linear", "ntk", "yarn", "llama3")
YARN_ALPHA, YARN_BETA = 1.0, 32.0          # Peng et al. 2023, Sec. 3.2: "alpha = 1 and beta = 32" for LLaMA
LLAMA3_ROPE_SCALING = dict(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                           original_max_position_embeddings=8192)   # Meta-Llama-3.1-8B config.json, rope_type llama3
LLAMA3_ROPE_THETA = 500_000.0              # Meta-Llama-3.1-8B config.json, rope_theta


def _head_dim(head_dim) -> int:
    d = positive_int("head_dim", head_dim)
    if d % 2 or d < 4:
        raise ValueError(f"head_dim must be an even number >= 4 (RoPE rotates pairs), got {show(head_dim)}")
    return d


def _factor(factor) -> float:
    s = positive_float("factor", factor, maximum=1e6)
    if s < 1:
        raise ValueError(f"factor must be >= 1 (the new context over the original one), got {show(factor)}")
    return s


def rope_inv_freq(head_dim: int, base: float = 10_000.0) -> list[float]:
    """theta_i = base^(-2i/d), i = 0..d/2-1 (Su et al. 2021, RoFormer, eq. 15): radians per position of pair i."""
    d = _head_dim(head_dim)
    b = positive_float("base", base, maximum=1e12)
    return [b ** (-2 * i / d) for i in range(d // 2)]


def rope_wavelengths(inv_freq) -> list[float]:
    """lambda_i = 2*pi / theta_i: the positions one full turn of pair i takes (Peng et al. 2023, YaRN, eq. 13)."""
    return [2 * math.pi / positive_float("inv_freq", t) for t in inv_freq]


def yarn_ramp(rotations: float, alpha: float = YARN_ALPHA, beta: float = YARN_BETA) -> float:
    """gamma(r) of YaRN (Peng et al. 2023, eq. 18): 0 when a pair turns fewer than alpha times over the original
    context (interpolate it fully), 1 above beta turns (leave it), linear between."""
    rotations = float(rotations)
    alpha, beta = positive_float("alpha", alpha, maximum=1e6), positive_float("beta", beta, maximum=1e6)
    if not beta > alpha:
        raise ValueError(f"beta must be greater than alpha, got alpha={show(alpha)}, beta={show(beta)}")
    return min(1.0, max(0.0, (rotations - alpha) / (beta - alpha)))


def yarn_attention_factor(factor: float) -> float:
    """sqrt(1/t) = 0.1 ln(s) + 1 (Peng et al. 2023, eq. 22): YaRN multiplies cos and sin by it, so q and k both
    grow and the logits by its square, 1/t; 1 for s <= 1 (transformers' attention_factor, same formula)."""
    s = positive_float("factor", factor, maximum=1e6)
    return 1.0 if s <= 1 else 0.1 * math.log(s) + 1.0


def scaled_inv_freq(method: str, head_dim: int, base: float = 10_000.0, factor: float = 1.0,
                    original_len: int = 4096, alpha: float | None = None, beta: float | None = None,
                    ramp: str = "rotations") -> list[float]:
    """The per-pair frequencies theta'_i after context extension by `factor` s = L'/L (L = original_len):

    - "default": theta_i (no scaling).
    - "linear": position interpolation, positions scaled by 1/s, so theta_i / s for every pair (Chen et al. 2023,
      arXiv:2306.15595, eq. 4; kaiokendev).
    - "ntk": NTK-aware scaling, the base raised to b * s^(d/(d-2)) (bloc97 2023; Peng et al. 2023, eq. 16): the
      fastest pair is untouched, the slowest is divided by exactly s.
    - "yarn": "NTK-by-parts" (Peng et al. 2023, eq. 17-18): pair i turns r_i = L / lambda_i times over L; it is
      interpolated by (1 - gamma(r_i)) theta_i / s + gamma(r_i) theta_i, alpha = 1, beta = 32 unless given.
      ramp="rotations" ramps linearly in r (the paper); ramp="index" ramps linearly over the pair index between
      floor and ceil of the pairs where r = beta and r = alpha, as transformers does (find_correction_range).
      transformers @0044e3b3 reads L from config.max_position_embeddings (the original length, for YaRN
      configs); later versions read rope_scaling's original_max_position_embeddings when present.
    - "llama3": Llama 3.1's rope_scaling (factor 8, low_freq_factor 1, high_freq_factor 4, original 8192): the
      same blend with alpha = low_freq_factor, beta = high_freq_factor (transformers' smooth_factor is
      (L/lambda - low) / (high - low), i.e. gamma(r)); no temperature.
    """
    choice("method", method, ROPE_METHODS)
    choice("ramp", ramp, ("rotations", "index"))
    d = _head_dim(head_dim)
    theta = rope_inv_freq(d, base)
    s = _factor(factor)
    if method == "default":
        return theta
    if method == "linear":
        return [t / s for t in theta]
    if method == "ntk":
        return rope_inv_freq(d, base * s ** (d / (d - 2)))
    big_l = positive_int("original_len", original_len)
    if method == "llama3":
        a = LLAMA3_ROPE_SCALING["low_freq_factor"] if alpha is None else alpha
        bt = LLAMA3_ROPE_SCALING["high_freq_factor"] if beta is None else beta
    else:
        a = YARN_ALPHA if alpha is None else alpha
        bt = YARN_BETA if beta is None else beta
    yarn_ramp(0.0, a, bt)                                    # checks alpha and beta before they are used
    rot = [big_l / lam for lam in rope_wavelengths(theta)]   # r_i = L / lambda_i
    if ramp == "rotations" or method == "llama3":
        gam = [yarn_ramp(r, a, bt) for r in rot]
    else:
        def pair_at(turns: float) -> float:   # the (fractional) pair index whose r equals `turns`
            return d * math.log(big_l / (turns * 2 * math.pi)) / (2 * math.log(base))
        lo, hi = max(math.floor(pair_at(bt)), 0), min(math.ceil(pair_at(a)), d - 1)
        hi = hi + 0.001 if hi == lo else hi
        gam = [1 - min(1.0, max(0.0, (i - lo) / (hi - lo))) for i in range(d // 2)]
    return [(1 - g) * t / s + g * t for t, g in zip(theta, gam)]


def rope_stretch(method: str, head_dim: int, base: float = 10_000.0, factor: float = 1.0,
                 original_len: int = 4096, **kw) -> list[float]:
    """theta_i / theta'_i per pair: 1 = the pair is left as trained, s = its positions are squeezed by the full
    factor (scaled_inv_freq's arguments)."""
    return [t / u for t, u in zip(rope_inv_freq(head_dim, base),
                                  scaled_inv_freq(method, head_dim, base, factor, original_len, **kw))]


def rope_attention_scale(method: str, factor: float) -> float:
    """The factor on cos and sin (so sqrt of the one on the logits): yarn_attention_factor for YaRN, 1 for the
    others (transformers returns attention_factor = 1.0 for linear, ntk and llama3)."""
    choice("method", method, ROPE_METHODS)
    return yarn_attention_factor(factor) if method == "yarn" else 1.0
