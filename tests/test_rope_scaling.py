"""RoPE context extension (memlib.models.rope): each method's per-pair frequencies, derived by hand."""

import math

import pytest

from memlib.models import get_model
from memlib.models.rope import (LLAMA3_ROPE_SCALING, ROPE_METHODS, rope_attention_scale, rope_inv_freq,
                                rope_stretch, rope_wavelengths, scaled_inv_freq, yarn_attention_factor, yarn_ramp)
from memlib.serving.inference import kv_bytes_per_token


def test_inv_freq_by_hand():
    # d = 4, base 10,000: theta_0 = 10000^0 = 1, theta_1 = 10000^(-2/4) = 0.01
    assert rope_inv_freq(4, 10_000) == pytest.approx([1.0, 0.01])
    # wavelength 2*pi / theta: 2*pi and 200*pi positions
    assert rope_wavelengths([1.0, 0.01]) == pytest.approx([2 * math.pi, 200 * math.pi])


def test_position_interpolation_squeezes_every_pair():
    # Chen et al. 2023: positions x 1/s, so every theta_i / s; s = 4 -> stretch 4 on all 64 pairs
    assert rope_stretch("linear", 128, 10_000, 4, 4096) == pytest.approx([4.0] * 64)
    assert rope_stretch("default", 128, 10_000, 4, 4096) == pytest.approx([1.0] * 64)


def test_ntk_by_hand():
    # d = 4: base' = b * s^(4/2) = b s^2; theta'_1 = (b s^2)^(-1/2) = theta_1 / s. s = 4: stretch [1, 4]
    assert rope_stretch("ntk", 4, 10_000, 4) == pytest.approx([1.0, 4.0])
    # d = 128: the slowest pair i = 63 is divided by s^(126/126) = s, the middle i = 32 by s^(64/126)
    st = rope_stretch("ntk", 128, 10_000, 8)
    assert st[0] == pytest.approx(1.0) and st[63] == pytest.approx(8.0)
    assert st[32] == pytest.approx(8 ** (64 / 126))


def test_yarn_paper_ramp_by_hand():
    # d = 4, base 10,000, L = 4,096, s = 4, alpha 1, beta 32.
    # pair 0: lambda = 2*pi = 6.283, r = 4096 / 6.283 = 651.9 > 32 -> gamma 1, untouched
    # pair 1: lambda = 200*pi = 628.3, r = 6.519 -> gamma = (6.519 - 1) / 31 = 0.17803
    #   theta'/theta = (1 - 0.17803) / 4 + 0.17803 = 0.38352 -> stretch 2.6074
    st = rope_stretch("yarn", 4, 10_000, 4, 4096)
    assert st[0] == pytest.approx(1.0)
    assert st[1] == pytest.approx(2.6074, rel=1e-4)
    assert yarn_ramp(0.5) == 0 and yarn_ramp(40) == 1 and yarn_ramp(16.5) == pytest.approx(0.5)


def test_yarn_index_ramp_matches_transformers_correction_range():
    # transformers' find_correction_dim(r) = d ln(L / (2 pi r)) / (2 ln base); Llama-2: d 128, base 1e4, L 4096
    # r = 32: 128 ln(4096 / (64 pi)) / (2 ln 1e4) = 128 x 3.01415 / 18.4207 = 20.94 -> floor 20
    # r = 1:  128 ln(4096 / (2 pi)) / 18.4207 = 128 x 6.4799 / 18.4207 = 45.03 -> ceil 46
    # ramp (i - 20) / 26: pair 20 untouched, pair 46 fully interpolated, pair 33 half: 0.5/4 + 0.5 = 0.625 -> 1.6
    st = rope_stretch("yarn", 128, 10_000, 4, 4096, ramp="index")
    assert st[20] == pytest.approx(1.0) and st[19] == pytest.approx(1.0)
    assert st[46] == pytest.approx(4.0) and st[63] == pytest.approx(4.0)
    assert st[33] == pytest.approx(1.6)


def test_llama31_rope_scaling_by_hand():
    # Llama 3.1: base 500,000, d 128, factor 8, low 1, high 4, original 8,192.
    # wavelength < 8192/4 = 2,048: unchanged; > 8192/1: theta / 8; between: smooth = (8192/lambda - 1) / 3
    kw = dict(factor=LLAMA3_ROPE_SCALING["factor"], original_len=LLAMA3_ROPE_SCALING["original_max_position_embeddings"])
    st = rope_stretch("llama3", 128, 500_000, **kw)
    lam = rope_wavelengths(rope_inv_freq(128, 500_000))
    for i, (x, w) in enumerate(zip(st, lam)):
        if w < 2048:
            assert x == pytest.approx(1.0), i
        elif w > 8192:
            assert x == pytest.approx(8.0), i
        else:
            sm = (8192 / w - 1) / 3
            assert x == pytest.approx(1 / ((1 - sm) / 8 + sm)), i
    # pair 40: lambda = 2 pi x 500000^(80/128) = 2 pi x e^(13.1224 x 0.625) = 2 pi x 3,634 = 22,830 > 8,192 -> 8;
    # pair 30: 2 pi x e^(13.1224 x 0.46875) = 2 pi x e^6.1511 = 2 pi x 469.25 = 2,948.4, in between:
    # smooth = (8192 / 2948.4 - 1) / 3 = 0.59282, stretch 1 / (0.40718 / 8 + 0.59282) = 1 / 0.64372 = 1.5535
    assert st[40] == pytest.approx(8.0)
    assert st[30] == pytest.approx(1.5535, rel=2e-4)


def test_yarn_temperature_by_hand():
    # sqrt(1/t) = 0.1 ln s + 1: s = 8 -> 0.1 x 2.0794 + 1 = 1.2079; logits x 1.459
    assert yarn_attention_factor(8) == pytest.approx(1.2079, rel=1e-4)
    assert rope_attention_scale("yarn", 8) == pytest.approx(1.2079, rel=1e-4)
    assert rope_attention_scale("llama3", 8) == 1.0 and rope_attention_scale("ntk", 8) == 1.0
    assert yarn_attention_factor(1) == 1.0


def test_no_method_changes_memory():
    # Llama 3 8B (8k) and Llama 3.1 8B (128k, rope_scaling llama3): 2 x 32 layers x 8 KV heads x 128 x 2 B =
    # 131,072 B per token, and the same parameters; only the context (and so the cache length) grows 16x
    a, b = get_model("llama-3-8b"), get_model("llama-3.1-8b")
    assert kv_bytes_per_token(a) == kv_bytes_per_token(b) == 2 * 32 * 8 * 128 * 2
    assert a.num_params == b.num_params
    assert b.max_position_embeddings // a.max_position_embeddings == 16
    # and the frequency table is still d/2 numbers under every method
    assert all(len(scaled_inv_freq(mth, 128, 500_000, 8, 8192)) == 64 for mth in ROPE_METHODS)


@pytest.mark.parametrize("kw, msg", [(dict(method="rope2"), "method"), (dict(head_dim=127), "even"),
                                     (dict(factor=0.5), "factor"), (dict(ramp="cosine"), "ramp"),
                                     (dict(alpha=40), "beta"), (dict(beta="32"), "beta")])
def test_bad_input(kw, msg):
    args = dict(method="yarn", head_dim=128, base=10_000, factor=4, original_len=4096) | kw
    with pytest.raises(ValueError, match=msg):
        scaled_inv_freq(**args)
