"""The context-parallel harness (validation/context_parallel.py) runs torch's ring attention and sees its buffers.

Needs torch and transformers (the validation venv); skipped otherwise."""

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")  # validation.measure reports peft's version

from validation.cases import TINY_LLAMA  # noqa: E402
from validation.context_parallel import _cp, measure_cp_case  # noqa: E402


def _tiny(cp, rotate="allgather", seq_len=2048):
    cfg = dict(TINY_LLAMA, hidden_size=128, intermediate_size=344, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=4, vocab_size=256)
    return _cp(f"test-cp{cp}-{rotate}", cfg, seq_len, cp, rotate=rotate)


def test_ring_attention_runs_in_every_layer_and_trackers_agree():
    m = measure_cp_case(_tiny(4))
    assert m["ring_calls"]["ring_forward"] >= 4 and m["ring_calls"]["ring_backward"] >= 4
    assert m["local_seq_len"] == 512 and m["rank"] == 3
    assert abs(m["agreement"]["rel_diff"]) <= 0.01


def test_allgather_holds_more_than_alltoall():
    """The all-gathered K/V of every rank is alive during the attention; the ring holds a few blocks."""
    ag = measure_cp_case(_tiny(8, seq_len=8192), use_dispatch=False)
    a2a = measure_cp_case(_tiny(8, "alltoall", seq_len=8192), use_dispatch=False)
    assert ag["peak_bytes"] > a2a["peak_bytes"]
