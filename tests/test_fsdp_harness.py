"""FSDP2-sharded measurements (validation/sharded.py) run and shard.

A tiny model at world size 4 must peak below the same model at world size 1, with its
rank-0 parameter shards a quarter of the model and FSDPMemTracker agreeing with the
dispatch tracker. Needs torch and transformers (the validation venv); skipped otherwise.
"""

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")  # validation.measure reports peft's version

from validation.cases import TINY_LLAMA  # noqa: E402
from validation.sharded import measure_sharded_case  # noqa: E402


def _tiny(world_size, **over):
    cfg = dict(TINY_LLAMA, hidden_size=128, intermediate_size=344, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, vocab_size=4096)
    case = {"name": f"test-fsdp{world_size}", "config": cfg, "seq_len": 64,
            "micro_batch": 2, "precision": "bf16", "recompute": "none",
            "attention": "sdpa", "optimizer": "adamw", "finetune": "full", "lora": None,
            "holdout": False, "fsdp": {"world_size": world_size}}
    case.update(over)
    return case


def test_world_size_4_peaks_below_world_size_1():
    m1 = measure_sharded_case(_tiny(1))
    m4 = measure_sharded_case(_tiny(4))
    assert m1["peak_source"] == m4["peak_source"] == "fsdp_memtracker"
    assert 0 < m4["peak_bytes"] < m1["peak_bytes"]
    # rank 0 holds a quarter of every parameter (dim-0 chunks, padded to equal size)
    full, shard = m4["facts"]["param_bytes"], m4["facts"]["sharded_param_bytes_rank0"]
    assert full / 4 <= shard <= full / 4 * 1.01
    # optimizer step: weights, grads and both Adam moments are sharded
    assert m4["phase_peaks"]["optimizer"] < m1["phase_peaks"]["optimizer"] / 2
    for m in (m1, m4):
        a = m["agreement"]
        assert abs(a["rel_diff"]) <= 0.01, a


def test_recompute_and_mixed_precision_run_sharded():
    m = measure_sharded_case(_tiny(4, precision="bf16-mixed", recompute="full"),
                             use_dispatch=False)
    bd = m["breakdown_at_peak"]
    assert m["peak_bytes"] == bd["Total"] > 0
    assert m["facts"]["gradient_checkpointing"] is True
