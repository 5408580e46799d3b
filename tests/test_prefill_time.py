"""Prefill FLOPs and time (memlib.serving.prefill), derived by hand."""

import pytest

from memlib.models import get_model
from memlib.serving.prefill import prefill_flops, prefill_seconds


def test_prefill_flops_by_hand():
    # Llama-3.1-8B, T = 1,000: 2N x 1000 + 4 x L x H x Q x T(T+1)/2 = 2N x 1000 + 4 x 32 x 32 x 128 x 500,500
    n = get_model("llama-3.1-8b").num_params
    expect = 2 * n * 1000 + 4 * 32 * 32 * 128 * 500_500
    assert prefill_flops("llama-3.1-8b", 1000) == pytest.approx(expect)


def test_prefill_seconds_by_hand():
    # 128k on one H100 (989.4 TFLOP/s dense bf16) at 50% MFU:
    # 2 x 8.03e9 x 131,072 = 2.105e15; 4 x 131,072 x 131,073 / 2 x 32 x 32 x 128 = 4.504e15; total 6.609e15
    # / (989.4e12 x 0.5) = 13.36 s
    assert prefill_seconds("llama-3.1-8b", "h100-80gb", 131072, mfu=0.5) == pytest.approx(13.36, rel=1e-3)
    assert prefill_seconds("llama-3.1-8b", "h100-80gb", 131072, mfu=0.5, gpus=8) == pytest.approx(13.36 / 8,
                                                                                                  rel=1e-3)


@pytest.mark.parametrize("kw", [dict(mfu=0), dict(mfu=1.5), dict(gpus=0), dict(prompt_tokens=0)])
def test_bad_input(kw):
    args = dict(model="llama-3.1-8b", gpu="h100-80gb", prompt_tokens=1024, mfu=0.5) | kw
    with pytest.raises(ValueError):
        prefill_seconds(**args)
