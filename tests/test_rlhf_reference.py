"""estimate_rlhf(reference=False): DAPO (no KL term) and precomputed-reference DPO keep no reference on the GPU.

Llama-3.1-8B from its config (hidden 4096, 32 layers, MLP 14336, vocabulary 128256, 8 KV heads of 128, untied head):
per layer 2 x 4096^2 + 2 x 4096 x 1024 + 3 x 4096 x 14336 + 2 x 4096 = 218,112,000; x 32 = 6,979,584,000;
embedding and head 2 x 128256 x 4096 = 1,050,673,152; final norm 4096: 8,030,261,248 parameters. Its reference in
bf16, sharded by ZeRO-3 over 8 GPUs: 2 x 8,030,261,248 / 8 = 2,007,565,312 bytes per GPU."""

import pytest

from memlib import estimate_rlhf

REF_PER_GPU = 2 * 8_030_261_248 // 8


def test_dapo_keeps_actor_and_engine_only():
    e = estimate_rlhf("llama-3.1-8b", "grpo", reward=None, reference=False, gpus=8)
    assert list(e.roles) == ["actor", "rollout"]
    assert any("no reference" in n for n in e.notes)


def test_resident_peak_drops_by_the_reference_weights():
    kw = dict(reward=None, gpus=8, offload_idle=False)
    with_ref = estimate_rlhf("llama-3.1-8b", "grpo", **kw)
    without = estimate_rlhf("llama-3.1-8b", "grpo", reference=False, **kw)
    assert with_ref.roles["reference"].resident_bytes == REF_PER_GPU
    assert with_ref.phases["train_actor"] - without.phases["train_actor"] == REF_PER_GPU


def test_dpo_with_precomputed_reference_has_no_scoring_phase():
    e = estimate_rlhf("llama-3.1-8b", "dpo", reference=False, gpus=8)
    assert list(e.roles) == ["actor"] and list(e.phases) == ["train_actor"]


def test_reference_must_be_a_flag():
    with pytest.raises(ValueError, match="reference"):
        estimate_rlhf("llama-3.1-8b", "grpo", reference="no")
