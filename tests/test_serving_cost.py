"""Cost per million tokens (memlib.cost.serving_cost), checked by hand."""

import pytest

from memlib.cost.serving_cost import cost_per_million_tokens


def test_cost_by_hand():
    # 8 GPUs x $2.50 = $20 an hour; 5,000 tokens/s x 3,600 s x 50% = 9,000,000 tokens an hour: $2.22 per million
    assert cost_per_million_tokens(2.5, 8, 5000, 0.5) == pytest.approx(20 / 9.0)
    # fully busy: 18 M tokens an hour, half the cost
    assert cost_per_million_tokens(2.5, 8, 5000) == pytest.approx(20 / 18.0)


@pytest.mark.parametrize("kw, match", [(dict(utilization=0), "utilization"), (dict(utilization=1.5), "utilization"),
                                       (dict(tokens_per_s=0), "tokens_per_s"), (dict(gpus=0), "gpus"),
                                       (dict(usd_per_gpu_hour=-1), "usd_per_gpu_hour")])
def test_cost_bad_input(kw, match):
    args = dict(usd_per_gpu_hour=2.5, gpus=8, tokens_per_s=5000, utilization=0.5) | kw
    with pytest.raises(ValueError, match=match):
        cost_per_million_tokens(**args)
