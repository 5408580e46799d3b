"""layout='megatron-deepspeed' (and recipe='megatron-deepspeed'): Megatron-LM's legacy model and vocabulary-parallel
loss (microsoft/Megatron-DeepSpeed@f4157bea) trained by DeepSpeed's ZeRO. Expected values are the ALCF Polaris
log's figures (validation/published.jsonl row alcf-megatron-deepspeed-*) or hand derivations from the sources,
written out below."""

from __future__ import annotations


import pytest

import memlib
from benchmark_support import load

bench = load("published")
ROW = next(r for r in bench.load_rows() if r["id"].startswith("alcf-megatron-deepspeed-"))
MiB = 2**20


def _estimate(**over):
    kw = {**ROW["memlib"]["kwargs"], **over}
    kw["model"] = bench.resolve_model(kw["model"])
    return memlib.estimate_training(**kw)


def test_states_against_the_bytes_allocated_after_the_step():
    """After iteration 1 the line shows 14,165.525 MiB allocated: DeepSpeed ZeRO-2 keeps bf16 parameters (2 B) and
    the fp32 master + Adam partition (12 B / dp 4) of each tp rank's parameters: 5 B each. Per tp-2 rank of the
    32-layer, h 4096, GQA 8 x 128, f 11008, V 32000 untied model: attention 4096 x (4096 + 2 x 1024 + 4096) / 2 =
    20,971,520; MLP 3 x 4096 x 11008 / 2 = 67,633,152; two norms 8,192 (replicated): 88,612,864 a layer, x 32 =
    2,835,611,648; embedding and output layer 2 x 32000 x 4096 / 2 = 131,072,000; final norm 4,096:
    2,966,687,744 parameters, x 5 B = 14,146.2 MiB, 0.14% under the line (DeepSpeed's small buffers)."""
    per_layer = 4096 * (4096 + 2 * 1024 + 4096) // 2 + 3 * 4096 * 11008 // 2 + 2 * 4096
    n = 32 * per_layer + 2 * 32000 * 4096 // 2 + 4096
    est = _estimate()
    assert n == 2_966_687_744 and est.counts["trainable"] == n
    assert est.counts["param_bytes"] == 2 * n and est.counts["optimizer_bytes"] == 12 * n // 4
    measured = 14165.525390625 * MiB
    assert abs(5 * n - measured) / measured < 0.01


def test_first_iteration_peak_near_the_log():
    r = bench.evaluate(ROW)
    assert r.status == "ok" and r.peak_bytes == _estimate().first_iteration_peak_bytes
    assert 0 <= r.error <= 0.05, f"{r.error:+.2%}"


def test_out_of_place_cross_entropy_by_hand():
    """Megatron-DeepSpeed's loss: the bf16 logits over V/tp (2 B), output.float() (4 B) and the max subtracted out
    of place (4 B): 10 B per logit, 4096 x 8 tokens x 16,000 logits = 5,242,880,000 B at the loss. In place
    (Megatron-Core since 9634c0e): 6 B."""
    tok, v = 4096 * 8, 32000 // 2
    terms = {t.name: t.nbytes for t in _estimate().terms}
    assert terms["vocab_parallel_cross_entropy_bytes"] == 10 * tok * v == 5_242_880_000
    inplace = {t.name: t.nbytes for t in _estimate(megatron_ce_inplace=True).terms}
    assert inplace["vocab_parallel_cross_entropy_bytes"] == 6 * tok * v


def test_hidden_dropout_masks_in_the_op_by_op_layer():
    """Megatron's bias-dropout-add after the attention and after the MLP: a 1-byte mask per residual element each,
    replicated over tp without sequence parallelism: 2 x 4096 x 32,768 tokens = 268,435,456 B a layer."""
    with_masks = _estimate(recompute="none").counts["layer_activation_bytes"]
    without = _estimate(recompute="none", hidden_dropout=0.0).counts["layer_activation_bytes"]
    assert with_masks - without == 2 * 4096 * 4096 * 8


def test_llama_layer_is_transformers_ledger_plus_masks():
    """The LLaMA layer runs op by op (rmsnorm.py's fp32 upcast): transformers' ledger under DeepSpeed's bf16 (the
    auto layout with the same ZeRO-2 and tp 2), not Transformer Engine's fused one (layout='megatron')."""
    mds = _estimate(recompute="none", hidden_dropout=0.0, attention_dropout=0.0)
    auto = _estimate(recompute="none", hidden_dropout=0.0, attention_dropout=0.0, layout="auto")
    assert mds.counts["layer_activation_bytes"] == auto.counts["layer_activation_bytes"]
    te = _estimate(recompute="none", hidden_dropout=0.0, attention_dropout=0.0, layout="megatron", zero_stage=1)
    assert te.counts["layer_activation_bytes"] < mds.counts["layer_activation_bytes"]


def test_gpt_layer_is_megatrons():
    """Megatron's GPT layer (LayerNorm, GELU MLP with biases) is the same legacy layer in Megatron-DeepSpeed."""
    gpt = memlib.Model(name="gpt-345m", hidden_size=1024, num_layers=24, num_heads=16, num_kv_heads=16,
                       intermediate_size=4096, vocab_size=50304, tie_word_embeddings=True, qkv_bias=True,
                       o_bias=True, mlp_bias=True, mlp="standard", norm="layernorm", position="learned",
                       max_position_embeddings=1024, model_type="gpt")
    kw = dict(seq_len=1024, micro_batch=2, hidden_dropout=0.1, dp=4)
    mds = memlib.estimate_training(gpt, layout="megatron-deepspeed", zero_stage=1, **kw)
    meg = memlib.estimate_training(gpt, layout="megatron", zero_stage=1, **kw)
    assert mds.counts["layer_activation_bytes"] == meg.counts["layer_activation_bytes"]
    assert mds.setup.sharding == "deepspeed" and meg.setup.sharding == "megatron"


def test_recipe_sets_megatron_deepspeeds_defaults():
    est = memlib.estimate_training("llama-2-7b", recipe="megatron-deepspeed", dp=8, seq_len=4096)
    s = est.setup
    assert (s.layout, s.zero_stage, s.hidden_dropout, s.megatron_ce_inplace) == ("megatron-deepspeed", 1, 0.1, False)
    assert "megatron-deepspeed" in est.explain()


@pytest.mark.parametrize("kw, words", [
    (dict(zero_stage=0, precision="fp16-mixed"), "BF16_Optimizer"),
    (dict(attention="eager"), "flash attention"),
    (dict(recompute="selective"), "flash attention"),
    (dict(finetune="lora"), "finetune='full'"),
    (dict(vpp=2, pp=2, zero_stage=1), "vpp"),
])
def test_refusals_name_the_reason(kw, words):
    with pytest.raises(ValueError, match=words):
        _estimate(**kw)


def test_unfused_attention_score_buffer_in_every_moment():
    """Megatron-DeepSpeed's legacy CoreAttention writes its scores into the global memory buffer
    (megatron/model/transformer.py: get_global_memory_buffer().get_tensor(..., "mpu")), a 16-bit a x s x s x b
    tensor kept for the run: 2 B x 16 heads x 1024^2 x micro-batch 2 = 67,108,864 B, in every moment."""
    gpt = memlib.Model(name="gpt-345m", hidden_size=1024, num_layers=24, num_heads=16, num_kv_heads=16,
                       intermediate_size=4096, vocab_size=50304, tie_word_embeddings=True, qkv_bias=True,
                       o_bias=True, mlp_bias=True, mlp="standard", norm="layernorm", position="learned",
                       max_position_embeddings=1024, model_type="gpt")
    est = memlib.estimate_training(gpt, seq_len=1024, micro_batch=2, layout="megatron-deepspeed", zero_stage=1, dp=4,
                                   attention="eager", attention_dropout=0.1, hidden_dropout=0.1)
    buffer = 2 * 16 * 1024 * 1024 * 2
    assert {t.name: t.nbytes for t in est.terms}["megatron_attention_score_buffer_bytes"] == buffer == 67_108_864
    assert all(mo.parts.get("temporaries", 0) >= buffer for mo in est.moments)


def test_bf16_optimizer_without_zero_by_hand():
    """zero_stage=0 with bf16 is DeepSpeed's BF16_Optimizer (v0.14.0 bf16_optimizer.py): bf16 params (2 B), an fp32
    gradient buffer for every parameter (4 B, allocated at start-up), the bf16 gradients each backward leaves and
    clear_lp_grads() only zeroes (2 B: engine.py's zero_grad passes for bf16 without ZeRO), and the fp32 master + Adam
    partitioned over dp (12 B / 4): 8 + 12/4 = 11 bytes per parameter at the step. The first iteration's forward has
    neither the bf16 gradients nor Adam's moments (8 B / 4)."""
    est = memlib.estimate_training("llama-2-7b", seq_len=4096, dp=4, tp=2, layout="megatron-deepspeed", zero_stage=0)
    n = est.counts["trainable"]
    step = next(mo for mo in est.moments if mo.name == "optimizer")
    assert step.parts["parameters"] == 2 * n
    assert step.parts["gradients"] == 4 * n + 2 * n
    assert step.parts["optimizer"] == 12 * n // 4
    assert {t.name: t.nbytes for t in est.terms}["bf16_lp_grad_bytes"] == 2 * n
    fwd = max((mo for mo in est.moments if mo.name == "forward"), key=lambda mo: mo.total)
    assert fwd.lazy_bytes == 2 * n + 8 * n // 4
    # the same states as Megatron's distributed optimizer, plus the bf16 gradients
    meg = memlib.estimate_training("llama-2-7b", seq_len=4096, dp=4, tp=2, layout="megatron", zero_stage=1)
    meg_step = next(mo for mo in meg.moments if mo.name == "optimizer")
    assert step.parts["gradients"] - meg_step.parts["gradients"] == 2 * n
