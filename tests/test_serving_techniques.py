"""memlib.serving.techniques: KV-cache token work, Little's law, speculative decoding.

Expected values are derived by hand in each test (sums written out, powers multiplied out)."""

from __future__ import annotations

import pytest

from memlib.cost.conventions import littles_law_arrival_rate
from memlib.serving.techniques import (littles_law_concurrency, speculative_expected_tokens, speculative_speedup,
                                       token_forwards)


def test_token_forwards_with_and_without_cache():
    # prompt 4, 3 new tokens: steps run sequences of 4, 5, 6 tokens without a cache = 15;
    # with a cache: 4 (prefill) + 1 + 1 = 6
    assert token_forwards(4, 3, kv_cache=False) == 4 + 5 + 6
    assert token_forwards(4, 3) == 4 + 1 + 1
    # one new token: the prefill alone either way
    assert token_forwards(7, 1) == token_forwards(7, 1, kv_cache=False) == 7


def test_without_cache_the_work_grows_quadratically():
    # prompt 1, n new: 1 + 2 + ... + n = n(n+1)/2 against n
    n = 1000
    assert token_forwards(1, n, kv_cache=False) == n * (n + 1) // 2
    assert token_forwards(1, n) == n


def test_littles_law_concurrency_inverts_the_arrival_rate():
    # 10 requests/s, each 20 s in the server: 200 in flight
    assert littles_law_concurrency(10, 20) == 200
    assert littles_law_arrival_rate(littles_law_concurrency(3.5, 12.0), 12.0) == pytest.approx(3.5)


def test_speculative_expected_tokens_by_hand():
    # alpha 0.8, gamma 4: 1 + 0.8 + 0.64 + 0.512 + 0.4096 = 3.3616 = (1 - 0.8^5) / 0.2
    assert speculative_expected_tokens(0.8, 4) == pytest.approx(1 + 0.8 + 0.64 + 0.512 + 0.4096)
    assert speculative_expected_tokens(0.0, 5) == 1  # nothing accepted: the target's own token
    assert speculative_expected_tokens(1.0, 5) == 6  # all accepted plus one


def test_speculative_speedup_by_hand():
    # alpha 0.8, gamma 4, draft at 5% of a target forward: 3.3616 / (4 x 0.05 + 1) = 3.3616 / 1.2
    assert speculative_speedup(0.8, 4, 0.05) == pytest.approx(3.3616 / 1.2)
    # a draft as slow as the target never pays: (1 - a^5)/(1 - a) <= 5 = gamma x 1 + 1
    assert speculative_speedup(0.99, 4, 1.0) < 1


@pytest.mark.parametrize("call", [
    lambda: token_forwards(0, 3), lambda: token_forwards(3, 0), lambda: token_forwards(3, 3, kv_cache="no"),
    lambda: littles_law_concurrency(-1, 2), lambda: littles_law_concurrency(1, 0),
    lambda: speculative_expected_tokens(1.2, 4), lambda: speculative_expected_tokens(0.5, 0),
    lambda: speculative_speedup(0.5, 4, 0)])
def test_bad_input_is_refused_with_a_message(call):
    with pytest.raises(ValueError):
        call()
