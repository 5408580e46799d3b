"""Issue 42: LoRA on lm_head (lora_head), LoRA on Phi-3's fused projections, the 16-bit cross-entropy (loss_dtype).

Every expected value is derived by hand below from the shapes (LoRA: Hu et al. 2021, Sec. 4.1: r (in + out) per
adapted matrix), not read from memlib's output.
"""

import pytest

import memlib
from memlib import estimate_training
from memlib.training import activations as act
from memlib.training.terms import NUMERICS


def _moment(est, where):
    return next(m for m in est.moments if m.where.startswith(where))


# --- LoRA on the output head ---------------------------------------------------------------------

def test_head_adapter_parameters_by_hand():
    # llama-2-7b: h = 4096, V = 32000, 32 layers; q_proj and v_proj are 4096 x 4096 (no GQA).
    # decoder: 2 targets x 16 x (4096 + 4096) x 32 layers = 8,388,608; head: 16 x (4096 + 32000) = 577,536
    base = estimate_training("llama-2-7b", seq_len=1024, finetune="lora", lora_rank=16)
    head = estimate_training("llama-2-7b", seq_len=1024, finetune="lora", lora_rank=16, lora_head=True)
    assert base.counts["adapter_params"] == 8_388_608
    assert head.counts["adapter_params"] == 8_388_608 + 577_536
    # peft's spelling: target_modules with "lm_head" is the same setup
    peft = estimate_training("llama-2-7b", seq_len=1024, finetune="lora", lora_rank=16,
                             lora_targets=["q_proj", "v_proj", "lm_head"])
    assert peft.peak_bytes == head.peak_bytes
    assert memlib.training.lora.lora_params(memlib.get_model("llama-2-7b"), 16, ["q_proj", "v_proj", "lm_head"]) \
        == 8_388_608 + 577_536


def test_head_adapter_saved_activations_by_hand():
    # bf16 base, bf16 adapters, no autocast, dropout 0.05, b*s = 1024 tokens, r = 16, h = 4096:
    # dropout's output (lora_A's input) 2 x 4096 x 1024 = 8,388,608; its bool mask 4096 x 1024 = 4,194,304;
    # lora_A's output kept by lora_B 2 x 16 x 1024 = 32,768. Total 12,615,680 bytes.
    est = estimate_training("llama-2-7b", seq_len=1024, precision="bf16", finetune="lora", lora_rank=16,
                            lora_head=True, lora_dropout=0.05, adapter_dtype="bf16")
    terms = {t.name: t.nbytes for t in est.terms}
    assert terms["head_adapter_activations"] == 12_615_680
    # no dropout: lora_A keeps the final norm's bf16 output itself (2 x 4096 x 1024) and its r-wide output
    est0 = estimate_training("llama-2-7b", seq_len=1024, precision="bf16", finetune="lora", lora_rank=16,
                             lora_head=True, adapter_dtype="bf16")
    assert {t.name: t.nbytes for t in est0.terms}["head_adapter_activations"] == 8_388_608 + 32_768
    # they are alive at the loss, and the parameters grow by the adapter's 577,536 bf16 parameters
    plain = estimate_training("llama-2-7b", seq_len=1024, precision="bf16", finetune="lora", lora_rank=16,
                              lora_dropout=0.05, adapter_dtype="bf16")
    at_loss, at_loss_plain = _moment(est, "at the loss"), _moment(plain, "at the loss")
    assert at_loss.parts["activations"] - at_loss_plain.parts["activations"] == 12_615_680
    assert at_loss.parts["parameters"] - at_loss_plain.parts["parameters"] == 2 * 577_536


@pytest.mark.parametrize("kw, msg", [
    (dict(finetune="full", lora_head=True), "lora_head=True does not apply here"),
    (dict(finetune="lora", lora_head="yes"), "lora_head must be True or False"),
    (dict(finetune="lora", lora_head=True, tp=2, dp=1), "lora_head .* one GPU or over DDP"),
    (dict(finetune="lora", lora_head=True, zero_stage="FULL_SHARD", dp=2), "lora_head .* one GPU or over DDP"),
    (dict(finetune="lora", lora_head=True, loss="chunked"), "Liger"),
    (dict(finetune="lora", lora_targets=["lm_head"]), "adapts the head alone"),
    (dict(finetune="lora", lora_targets="lm_head"), "lora_head=True"),
])
def test_head_adapter_refusals(kw, msg):
    with pytest.raises(ValueError, match=msg):
        estimate_training("llama-2-7b", seq_len=512, **kw)


# --- LoRA on Phi-3's fused projections -----------------------------------------------------------

def test_fused_projection_adapter_parameters_by_hand():
    # phi-4: h = 5120, 40 query heads and 10 KV heads of 128 (q = 5120, kv = 1280), I = 17920, 40 layers.
    # qkv_proj: 5120 -> 5120 + 2 x 1280 = 7680; gate_up_proj: 5120 -> 2 x 17920 = 35840.
    # r = 16: qkv 16 x (5120 + 7680) = 204,800; o 16 x (5120 + 5120) = 163,840; gate_up 16 x (5120 + 35840) = 655,360;
    # down 16 x (17920 + 5120) = 368,640. Per layer 1,392,640; x 40 = 55,705,600. qkv alone x 40 = 8,192,000.
    m = memlib.get_model("phi-4")
    assert (m.hidden_size, m.q_size, m.kv_size, m.intermediate_size, m.num_layers) == (5120, 5120, 1280, 17920, 40)
    est = estimate_training(m, seq_len=512, finetune="lora", lora_rank=16, lora_targets="all-linear")
    assert est.counts["adapter_params"] == 55_705_600
    est = estimate_training(m, seq_len=512, finetune="lora", lora_rank=16, lora_targets=["qkv_proj"])
    assert est.counts["adapter_params"] == 8_192_000
    est = estimate_training(m, seq_len=512, finetune="qlora", lora_rank=16, lora_targets="attention")
    assert est.counts["adapter_params"] == 40 * (204_800 + 163_840)


def test_fused_qkv_adapter_is_one_adapter_in_the_ledger():
    # One peft adapter reads the attention norm's output for the fused qkv_proj: with dropout it keeps one dropped
    # 2-byte copy (h wide), one 1-byte mask and one r-wide lora_A output, not three of each.
    m = memlib.get_model("phi-4")
    tok, r, h = 1024, 16, 5120
    kw = dict(attention="sdpa", trainable_linears=False, lora_rank=r, adapter_bytes=2, lora_dropout=0.05)
    plain = act.llama_layer_ledger(m, NUMERICS["bf16"], tok, 1, tok, **kw)
    led = act.llama_layer_ledger(m, NUMERICS["bf16"], tok, 1, tok, adapters=frozenset({"qkv_proj"}), **kw)
    assert led.total - plain.total == (2 + 1) * h * tok + 2 * r * tok
    assert [n for n, _, _ in led.items if n.startswith("lora.")] == [
        "lora.qkv_proj.input", "lora.qkv_proj.dropout_mask", "lora.qkv_proj.A_out"]


@pytest.mark.parametrize("targets, msg", [
    (None, "peft has no default target_modules"),
    (["q_proj", "v_proj"], "take one adapter each"),
    ("qv", "accepted: qkv_proj, o_proj, gate_up_proj, down_proj"),
])
def test_fused_projection_refusals(targets, msg):
    with pytest.raises(ValueError, match=msg):
        estimate_training("phi-4", seq_len=512, finetune="lora", lora_targets=targets)


def test_unfused_model_refuses_fused_names():
    with pytest.raises(ValueError, match="has this projection unfused"):
        estimate_training("llama-2-7b", seq_len=512, finetune="lora", lora_targets=["qkv_proj"])


# --- cross-entropy on the 16-bit logits ------------------------------------------------------------

def test_sixteen_bit_loss_by_hand():
    # llama-2-7b LoRA (q, v), bf16, b*s = 2048 tokens, V = 32000: at the loss, transformers' path holds the bf16
    # logits (2) + their fp32 upcast (4) + log_softmax's fp32 output (4) = 10 bytes per logit; F.cross_entropy on
    # the bf16 logits holds the logits (2) + a bf16 log_softmax output (2) = 4. Difference 6 x 32000 x 2048.
    kw = dict(seq_len=2048, precision="bf16", finetune="lora", adapter_dtype="bf16")
    fp32 = _moment(estimate_training("llama-2-7b", **kw), "at the loss").parts["logits_and_loss"]
    b16 = _moment(estimate_training("llama-2-7b", loss_dtype="16-bit", **kw), "at the loss").parts["logits_and_loss"]
    assert fp32 == 10 * 32000 * 2048 and b16 == 4 * 32000 * 2048
    # backward start: logits (2) + NLL grad, log-softmax grad and saved output: 3 x 4 (fp32) or 3 x 2 (16-bit)
    fp32 = _moment(estimate_training("llama-2-7b", **kw), "start").parts["logits_and_loss"]
    b16 = _moment(estimate_training("llama-2-7b", loss_dtype="16-bit", **kw), "start").parts["logits_and_loss"]
    assert fp32 == 14 * 32000 * 2048 and b16 == 8 * 32000 * 2048


@pytest.mark.parametrize("kw, msg", [
    (dict(loss_dtype="bf16"), "loss_dtype"),
    (dict(loss_dtype="16-bit"), "needs precision 'bf16' or 'fp16'"),   # bf16-mixed: autocast runs it in fp32
    (dict(loss_dtype="16-bit", precision="bf16", loss="chunked"), "loss='full'"),
])
def test_sixteen_bit_loss_refusals(kw, msg):
    with pytest.raises(ValueError, match=msg):
        estimate_training("llama-2-7b", seq_len=512, **kw)


def test_head_adapter_sum_can_set_the_forward_peak_with_a_16_bit_loss():
    # Where the head adapter's output joins the base logits: base logits, scaled adapter output and their sum,
    # 3 x 2 bytes per logit in bf16 = 6 x 32000 x 2048; the 16-bit loss itself holds 4 x 32000 x 2048, the fp32
    # one 10 x 32000 x 2048 (so there the sum is not the forward's peak).
    kw = dict(seq_len=2048, precision="bf16", finetune="lora", adapter_dtype="bf16", lora_head=True)
    est = estimate_training("llama-2-7b", loss_dtype="16-bit", **kw)
    head = _moment(est, "the head adapter's output")
    loss = _moment(est, "at the loss")
    assert head.parts["logits_and_loss"] == 6 * 32000 * 2048
    assert loss.parts["logits_and_loss"] == 4 * 32000 * 2048
    assert head.total > loss.total
    est = estimate_training("llama-2-7b", **kw)
    assert _moment(est, "the head adapter's output").total < _moment(est, "at the loss").total


# --- float8 (torchao) and torch.compile --------------------------------------------------------------

def test_float8_torchao_and_compile_keep_the_eager_bf16_bytes():
    # torchao's Float8Linear saves (input_hp, weight_hp_t), the tensors a bf16 linear saves, and the states stay fp32;
    # a compiled step with full recompute keeps each layer's input: the same estimate, term for term.
    kw = dict(seq_len=8192, micro_batch=1, zero_stage="FULL_SHARD", dp=8, recompute="full")
    plain = estimate_training("llama-3-8b", **kw)
    f8 = estimate_training("llama-3-8b", float8="torchao", compile=True, **kw)
    assert f8.peak_bytes == plain.peak_bytes
    assert {t.name: t.nbytes for t in f8.terms} == {t.name: t.nbytes for t in plain.terms}
    assert any("Float8Linear" in n for n in f8.notes) and any("torch.compile" in n for n in f8.notes)


@pytest.mark.parametrize("kw, msg", [
    (dict(compile=True), "compile=True with recompute='none' is not modelled"),
    (dict(compile=True, recompute="selective"), "min-cut partitioner"),
    (dict(compile="true", recompute="full"), "compile must be True or False"),
    (dict(float8="fp8"), "float8"),
    (dict(float8="torchao", finetune="lora"), "full training of dense LLaMA-style layers"),
    (dict(float8="torchao", precision="bf16"), "precision 'bf16-mixed'"),
])
def test_float8_and_compile_refusals(kw, msg):
    with pytest.raises(ValueError, match=msg):
        estimate_training("llama-3-8b", seq_len=512, **kw)


def test_cli_new_training_flags(capsys):
    import json
    from memlib.cli import main
    assert main(["estimate", "llama-2-7b", "--finetune", "lora", "--lora-head", "--precision", "bf16",
                 "--loss-dtype", "16-bit", "--seq-len", "512", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["lora_head"], d["loss_dtype"]) == (True, "16-bit")
    assert d["trainable_params"] == 2 * 16 * (4096 + 4096) * 32 + 16 * (4096 + 32000)
    assert main(["estimate", "llama-3-8b", "--float8", "torchao", "--compile", "--recompute", "full",
                 "--seq-len", "512", "--json"]) == 0
    assert main(["estimate", "llama-3-8b", "--compile", "--seq-len", "512"]) == 2   # refused: recompute none


def test_head_adapter_under_autocast_with_fp32_adapters_by_hand():
    # peft's defaults (fp32 adapters) with QLoRA under bf16 autocast: the head is peft's plain lora.Linear (the
    # bitsandbytes integration keeps lm_head 16-bit), which casts the bf16 input to fp32; autocast then casts it back
    # to bf16 for lora_A's matmul, and that 2-byte copy is what lora_A keeps: 2 x 4096 x 1024; lora_A's output under
    # autocast is bf16: 2 x 16 x 1024. No dropout, no mask. 8,388,608 + 32,768 = 8,421,376 bytes.
    est = estimate_training("llama-2-7b", seq_len=1024, finetune="qlora", lora_rank=16, lora_head=True)
    assert {t.name: t.nbytes for t in est.terms}["head_adapter_activations"] == 8_421_376
