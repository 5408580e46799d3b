"""Which AdamW implementation each recipe steps with, and where it puts LLaMA-7B's peak (notebooks 00 and 02),
against hand derivations.

HF Trainer: TrainingArguments.optim defaults to "adamw_torch_fused" when torch >= 2.8
(huggingface/transformers@v5.15.0:src/transformers/training_args.py; PR #37358). Bare torch.optim.AdamW on CUDA
defaults to foreach, whose step allocates a temporary the size of v (`torch._foreach_sqrt(exp_avg_sq)`).
"""

import pytest

import memlib

N = 6_738_415_616                     # LLaMA-7B parameters
SEQ, H, I, L, V = 2048, 4096, 11008, 32, 32000
SBH = SEQ * H


def test_hf_trainer_preset_steps_with_fused_adamw():
    est = memlib.estimate_training("llama-7b", seq_len=SEQ, recipe="hf-trainer")
    assert dict(est.setup.recipe_set) == {"keep_outputs": False, "optimizer_impl": "fused"}
    assert est.setup.optimizer_impl == "fused"
    for ft in ("lora", "qlora"):
        assert memlib.estimate_training("llama-7b", seq_len=SEQ, recipe="hf-trainer", finetune=ft) \
            .setup.optimizer_impl == "fused"


@pytest.mark.parametrize("kw", [dict(zero_stage=3, dp=8), dict(zero_stage=2, dp=8), dict(optimizer="adamw-8bit"),
                                dict(optimizer="adafactor")])
def test_hf_trainer_preset_sets_no_torch_adamw_option_where_torch_adamw_does_not_step(kw):
    # DeepSpeed's layout brings its own fused Adam; bitsandbytes and Adafactor are not torch's AdamW
    est = memlib.estimate_training("llama-7b", seq_len=SEQ, recipe="hf-trainer", **kw)
    assert "optimizer_impl" not in dict(est.setup.recipe_set)
    assert est.setup.optimizer_impl == "foreach"      # memlib's default, which these layouts ignore


def test_explicit_optimizer_impl_overrides_the_preset():
    est = memlib.estimate_training("llama-7b", seq_len=SEQ, recipe="hf-trainer", optimizer_impl="foreach")
    assert est.setup.optimizer_impl == "foreach" and "optimizer_impl" not in dict(est.setup.recipe_set)


def test_foreach_adamw_peaks_at_the_step_near_135_gb():
    # fp32 weights 4 + fp32 gradients 4 + m 4 + v 4 + foreach's copy of v 4 = 20 B/param at optimizer.step():
    # 20 × 6,738,415,616 = 134,768,312,320 B; the loop also holds the previous step's bf16 logits,
    # 2 B × 32,000 × 2,048 = 131,072,000 B: 134,899,384,320 B
    hand = 20 * N + 2 * V * SEQ
    est = memlib.estimate_training("llama-7b", seq_len=SEQ)
    assert est.peak_moment.where == "optimizer.step()"
    assert est.peak_bytes == pytest.approx(hand, rel=0.002)


def test_fused_adamw_peaks_at_the_start_of_the_backward_near_110_gb():
    # start of the backward: fp32 weights + m + v = 12 B/param = 80,860,987,392 B; the LLaMA layer's saved
    # tensors ≈ 55.5 sbh bytes per layer (the review's tensor-by-tensor count) × 32 = 14,898,167,808 B;
    # autocast's bf16 copies 2 × (32 × (4h² + 3h·11008) + 32,000·h) = 13,214,154,752 B; logits bf16 + fp32 upcast
    # + log-softmax = (2 + 4 + 4) × 32,000 × 2,048 = 655,360,000 B. Sum 109,628,669,952 B.
    copies = 2 * (L * (4 * H * H + 3 * H * I) + V * H)
    assert copies == 13_214_154_752
    hand = 12 * N + int(55.5 * SBH) * L + copies + 10 * V * SEQ
    est = memlib.estimate_training("llama-7b", seq_len=SEQ, optimizer_impl="fused")
    assert est.peak_moment.where.startswith("start: gradient of the loss")
    assert est.peak_bytes == pytest.approx(hand, rel=0.01)
    # and the step itself: 16 B/param + the held logits, below the backward's start
    step = next(mo for mo in est.moments if mo.name == "optimizer")
    assert step.total == pytest.approx(16 * N + 2 * V * SEQ, rel=0.002) and step.total < est.peak_bytes


def test_one_a100_full_fine_tuning_limit_4b_foreach_about_5b_fused():
    # the largest tensor peak fits() accepts on an A100 80GB: (79.15 GiB torch sees − 0.5 GiB context) / 1.05
    # headroom = 74.90 GiB = 80.4 GB. foreach: 20 B/param at the step → 80.4e9 / 20 = 4.02B, less for the
    # activations; fused: 16 B/param at the step → 5.03B at most, less for the backward's activations.
    from memlib.hardware.fit import largest_size_that_fits
    cap = 80.4e9
    foreach, fused = (largest_size_that_fits("a100-80gb",
                                             lambda m, i=impl: memlib.estimate_training(m, SEQ, 1, optimizer_impl=i))
                      .num_params for impl in ("foreach", "fused"))
    assert 0.95 * cap / 20 < foreach <= cap / 20
    assert cap / 20 < fused <= cap / 16
    assert round(foreach / 1e9) == 4 and round(fused / 1e9, 1) in (4.7, 4.8, 4.9, 5.0)
