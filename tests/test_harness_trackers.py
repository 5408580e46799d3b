"""The dispatch live-bytes tracker must agree with torch's MemTracker.

LoRA results in validation/results.json come from the dispatch tracker alone (MemTracker
cannot hook frozen parameters), so this is what vouches for them. Needs torch and
transformers (the validation venv); skipped otherwise.
"""

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from validation.cases import TINY_LLAMA_GQA  # noqa: E402
from validation.measure import measure_case  # noqa: E402


def _tiny_case(**over):
    cfg = dict(TINY_LLAMA_GQA, hidden_size=128, intermediate_size=344,
               num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
               vocab_size=4096)
    case = {"name": "test-tiny", "config": cfg, "seq_len": 64, "micro_batch": 2,
            "precision": "bf16-mixed", "recompute": "full", "attention": "sdpa",
            "optimizer": "adamw", "finetune": "full", "lora": None, "holdout": False}
    case.update(over)
    return case


def test_dispatch_tracker_agrees_with_memtracker():
    m = measure_case(_tiny_case(), "cpu")
    mt = m["memtracker"]["step2"]
    d = m["dispatch"]["step2"]
    assert mt["peak_bytes"] > 0
    assert abs(d["peak_bytes"] - mt["peak_bytes"]) <= 0.01 * mt["peak_bytes"]
    for phase in ("forward", "backward", "optimizer"):
        a, b = mt["phase_peaks"][phase], d["phase_peaks"][phase]
        assert abs(b - a) <= 0.01 * a, phase


def test_peak_exceeds_model_and_optimizer_state():
    # Weights + grads + two Adam moments are all alive during optimizer.step().
    m = measure_case(_tiny_case(precision="bf16", recompute="none"), "cpu",
                     use_memtracker=False)
    facts = m["facts"]
    assert m["peak_bytes"] >= 4 * facts["param_bytes"]
