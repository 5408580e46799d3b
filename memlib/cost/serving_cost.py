"""Serving cost: dollars per million tokens from a GPU price, a throughput and a utilisation.

    cost_per_million_tokens(usd_per_gpu_hour=2.5, gpus=8, tokens_per_s=3000, utilization=0.5)

One formula: a server of `gpus` GPUs costs gpus x $/GPU-hour every hour whether busy or not; in that hour it
makes tokens_per_s x 3600 x utilization tokens (utilization: the share of the hour it runs at that throughput,
the rest idle or below it). $ per million tokens = gpus x $/GPU-hour / (tokens/s x 3600 x utilization) x 1e6
(the accounting of Databricks 2023, "LLM Inference Performance Engineering", cost section, and of any
$/token price sheet). The price is an input: rental, cloud list and amortised ownership differ by 2-4x.
"""

from __future__ import annotations

from memlib._checks import fraction, positive_float, positive_int

SECONDS_PER_HOUR = 3600


def cost_per_million_tokens(usd_per_gpu_hour: float, gpus: int, tokens_per_s: float, utilization: float = 1.0) -> float:
    """Dollars per million tokens: gpus x usd_per_gpu_hour / (tokens_per_s x 3600 x utilization) x 1e6, with
    tokens_per_s the whole server's throughput while busy and utilization the busy share of the hours paid."""
    price = positive_float("usd_per_gpu_hour", usd_per_gpu_hour, unit=" $/GPU-hour")
    gpus = positive_int("gpus", gpus)
    rate = positive_float("tokens_per_s", tokens_per_s, unit=" tokens/s")
    util = fraction("utilization", utilization, what="the busy share of the paid hours")
    return gpus * price / (rate * SECONDS_PER_HOUR * util) * 1e6


__all__ = ["SECONDS_PER_HOUR", "cost_per_million_tokens"]
