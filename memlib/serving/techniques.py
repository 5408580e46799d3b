"""Serving mechanisms as arithmetic: what the KV cache saves, Little's law, speculative decoding.

  token_forwards            token positions pushed through the layers to generate `new` tokens after a
                            `prompt`: with a KV cache each position once (prefill, then one per decode
                            step); without, every step recomputes the whole prefix, O(s^2) instead of O(s)
                            (Pope et al. 2022, "Efficiently Scaling Transformer Inference", Sec. 2).
  littles_law_concurrency   requests in flight L = lambda x W (Little 1961): the batch a server must hold
                            to sustain `qps` requests per second that each stay `latency_s` seconds.
  speculative_*             speculative decoding (Leviathan et al. 2023, arXiv:2211.17192): a draft model
                            proposes gamma tokens, the target verifies them in one forward; with acceptance
                            rate alpha the expected tokens per target forward are (1 - alpha^(gamma+1)) /
                            (1 - alpha) (eq. 1), and the wall-time speed-up with a draft costing c target
                            forwards each is that over (gamma c + 1) (Theorem 3.8).
  random_routing_prefix_hit_rate  a prefix cached on `holders` of `replicas` replicas, requests routed without
                            looking at it: holders / replicas of them find it.
"""

from __future__ import annotations

from memlib._checks import flag, plain_args, positive_float, positive_int


@plain_args
def token_forwards(prompt: int, new: int, kv_cache: bool = True) -> int:
    """Token positions the model runs (their q, k, v projections and MLP) to generate `new` tokens after a
    `prompt` of tokens. Step t (t = 1..new) needs the sequence of prompt + t - 1 tokens. With a KV cache
    the keys and values of earlier positions are kept, so step 1 runs the prompt (prefill) and each later
    step only its one new token: prompt + new - 1. Without, every step reruns the whole sequence:
    sum_t (prompt + t - 1) = new x prompt + new (new - 1) / 2 (Pope et al. 2022, Sec. 2)."""
    kv_cache = flag("kv_cache", kv_cache)
    prompt = positive_int("prompt", prompt)
    new = positive_int("new", new)
    if not isinstance(kv_cache, bool):
        raise ValueError(f"kv_cache must be True or False, got {kv_cache!r}")
    if kv_cache:
        return prompt + new - 1
    return new * prompt + new * (new - 1) // 2


def littles_law_concurrency(qps: float, latency_s: float) -> float:
    """Requests in flight at once, L = lambda x W (Little 1961): `qps` arrivals per second, each in the
    server for `latency_s` seconds (TTFT + output tokens x TPOT). The inverse of
    memlib.cost.conventions.littles_law_arrival_rate."""
    return positive_float("qps", qps) * positive_float("latency_s", latency_s, unit=" s")


def _acceptance(alpha) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 <= alpha <= 1:
        raise ValueError(f"alpha is the draft's acceptance rate in [0, 1], got {alpha!r}")
    return float(alpha)


@plain_args
def speculative_expected_tokens(alpha: float, gamma: int) -> float:
    """Expected tokens one target forward produces when a draft proposes `gamma` tokens, each accepted
    with probability `alpha` (i.i.d.): (1 - alpha^(gamma+1)) / (1 - alpha) (Leviathan et al. 2023,
    arXiv:2211.17192, eq. 1); gamma + 1 when alpha = 1 (all accepted, plus the target's own token)."""
    alpha = _acceptance(alpha)
    gamma = positive_int("gamma", gamma)
    if alpha == 1:
        return float(gamma + 1)
    return (1 - alpha ** (gamma + 1)) / (1 - alpha)


@plain_args
def speculative_speedup(alpha: float, gamma: int, cost_ratio: float) -> float:
    """Expected wall-time speed-up over plain decoding: expected tokens / (gamma x c + 1), c the time of
    one draft forward over one target forward (Leviathan et al. 2023, Theorem 3.8). Decode is
    memory-bound, so c is about the draft's bytes read over the target's."""
    c = positive_float("cost_ratio", cost_ratio)
    return speculative_expected_tokens(alpha, gamma) / (positive_int("gamma", gamma) * c + 1)


@plain_args
def random_routing_prefix_hit_rate(replicas: int, holders: int = 1) -> float:
    """Chance a request lands on a replica whose cache holds its prefix when a router spreads requests uniformly
    (round robin or random) over `replicas`, `holders` of which cache it: holders / replicas. A prefix-aware router
    (SGLang's cache-aware router, sgl-router CacheAwareConfig: cache_threshold 0.5; llm-d's prefix-cache scorer)
    sends it to a holder instead, so the hit rate stays near 1 until load balancing overrides it."""
    replicas = positive_int("replicas", replicas)
    holders = positive_int("holders", holders)
    if holders > replicas:
        raise ValueError(f"holders ({holders}) cannot exceed replicas ({replicas})")
    return holders / replicas


def littles_law_arrival_rate(concurrency: float, seconds_per_request: float) -> float:
    """Requests per second a server sustains with `concurrency` requests in flight, each in the system for
    `seconds_per_request`: Little's law L = λ·W (memlib.serving.techniques.littles_law_concurrency, its one
    statement) solved for λ = L / W."""
    if not concurrency > 0 or not seconds_per_request > 0:
        raise ValueError(f"concurrency and seconds_per_request must be positive, got {concurrency!r}, "
                         f"{seconds_per_request!r}")
    return concurrency / littles_law_concurrency(1.0, seconds_per_request)  # L / (1 request/s x W)
