"""memlib.models.llama_like: the illustrative LLaMA-like ladder reproduces the real LLaMA-1 shapes,
and largest_that_fits picks the last rung that fits."""

import pytest

import memlib
from memlib.hardware.fit import largest_that_fits
from memlib.models.llama_like import LADDER_SHAPES, ladder, llama_ffn_size, llama_like


@pytest.mark.parametrize("h,ffn", [(4096, 11008), (5120, 13824), (6656, 17920), (8192, 22016)])
def test_ffn_rule_matches_llama_configs(h, ffn):
    # huggyllama/llama-{7b,13b,30b,65b} config.json intermediate_size
    assert llama_ffn_size(h) == ffn


@pytest.mark.parametrize("h,L,name", [(4096, 32, "llama-7b"), (5120, 40, "llama-13b"),
                                       (6656, 60, "llama-33b"), (8192, 80, "llama-65b")])
def test_ladder_rungs_are_the_llama_models(h, L, name):
    real = memlib.get_model(name)
    m = llama_like(h, L)
    assert m.num_params == real.num_params
    assert (m.num_heads, m.intermediate_size, m.vocab_size) == (real.num_heads, real.intermediate_size,
                                                                 real.vocab_size)


def test_ladder_is_increasing_and_labelled():
    models = ladder()
    assert len(models) == len(LADDER_SHAPES)
    sizes = [m.num_params for m in models]
    assert sizes == sorted(sizes) and len(set(sizes)) == len(sizes)
    assert all(m.name.startswith("llama-like-") for m in models)
    # GPT-3 1.3B width/depth with LLaMA blocks: 24 * (4h^2 + 3*h*5632 + 2h) + 2*32000*h + h
    h = 2048
    gpt3_13 = next(m for m in models if (m.hidden_size, m.num_layers) == (2048, 24))
    assert gpt3_13.num_params == 24 * (4 * h * h + 3 * h * 5632 + 2 * h) + 2 * 32000 * h + h


def test_largest_that_fits_picks_last_rung():
    models = ladder()
    best, fail = largest_that_fits(models, "a100-80gb", lambda m: memlib.estimate_inference(m, weights="bf16"))
    assert best is not None and fail is not None
    assert best.num_params < fail.num_params
    assert memlib.fits(memlib.estimate_inference(best), "a100-80gb").fits
    assert not memlib.fits(memlib.estimate_inference(fail), "a100-80gb").fits
    # nothing fits: a 1M-token context on a 24 GB card
    none, first = largest_that_fits(models, "rtx-4090",
                                    lambda m: memlib.estimate_inference(m, batch=1, context_len=10**6))
    assert none is None and first is models[0]


def test_bad_shape():
    with pytest.raises(ValueError):
        llama_like(1000, 4)
    with pytest.raises(ValueError):
        llama_like(0, 4)
