"""The recipe options of estimate_training (issue 9), against hand derivations from the libraries' source.

Each expected value is written out here from its source: torch.optim's AdamW implementations, peft's LoRA layer,
bitsandbytes' quantize_4bit layout, torchao's NF4Tensor, Liger's fused linear cross-entropy, torchtitan's selective
checkpointing policy, or plain arithmetic on the architecture. The measured side of the same options is in
tests/test_validation.py (validation/results.json: harness cases named after each option).
"""

from __future__ import annotations

import math

import pytest

import memlib
from memlib import estimate_training, get_model
from memlib.training.lora import lora_params, nf4_bytes

LLAMA7B_PARAMS = 32 * (4096 * 4096 * 4 + 3 * 4096 * 11008 + 2 * 4096) + 2 * 32000 * 4096 + 4096


def step_moment(est):
    (mo,) = [m for m in est.moments if m.name == "optimizer"]
    return mo


# --- torch.optim AdamW implementations (torch/optim/adam.py, torch 2.13) ------------------------
@pytest.mark.parametrize("impl, temporaries", [
    # _multi_tensor_adam: exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs): one bf16 copy of every
    # second moment of the group at once = 2 bytes x all parameters
    ("foreach", 2 * LLAMA7B_PARAMS),
    # _single_tensor_adam: denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt): two tensors of the largest
    # parameter (the 32000 x 4096 embedding) in bf16
    ("for-loop", 2 * 2 * 32000 * 4096),
    # torch._fused_adamw_: in place
    ("fused", 0),
])
def test_adamw_step_temporaries(impl, temporaries):
    est = estimate_training("llama-7b", seq_len=256, precision="bf16", optimizer_impl=impl)
    assert step_moment(est).parts["temporaries"] == temporaries


def test_foreach_is_the_default_and_dominates_a_full_fine_tune():
    # bf16-mixed AdamW: 4 (params) + 4 (grads) + 8 (states) + 4 (the foreach sqrt copy) = 20 bytes/param
    est = estimate_training("llama-7b", seq_len=256, precision="bf16-mixed")
    assert est.setup.optimizer_impl == "foreach"
    assert est.phase == "optimizer"
    logits = 2 * 32000 * 256  # the loop's previous output (bf16 logits) is still alive at the step
    assert est.peak_bytes == 20 * LLAMA7B_PARAMS + logits


def test_fsdp_foreach_copies_only_the_local_shard():
    est = estimate_training("llama-7b", seq_len=256, precision="bf16", zero_stage="FULL_SHARD", dp=8)
    assert step_moment(est).parts["temporaries"] == 2 * (LLAMA7B_PARAMS // 8)


# --- LoRA as PEFT runs it: 16-bit base, fp32 adapters ----------------------------------------------
def test_lora_bf16_mixed_is_a_16_bit_base_with_fp32_adapters():
    adapters = lora_params(get_model("llama-7b"), 16, ["q_proj", "v_proj"])
    assert adapters == 32 * 2 * 16 * (4096 + 4096)
    est = estimate_training("llama-7b", seq_len=512, finetune="lora", lora_rank=16)
    c = est.counts
    assert c["param_bytes"] == 2 * LLAMA7B_PARAMS + 4 * adapters  # torch_dtype=bf16 base, fp32 adapters
    assert c["grad_bytes"] == 4 * adapters
    assert c["optimizer_bytes"] == 2 * 4 * adapters
    # autocast copies only the fp32 adapters (the bf16 base needs no cast): 2 bytes each
    fwd = [m for m in est.moments if m.name == "forward"][0]
    assert fwd.parts["autocast_copies"] == 2 * adapters
    # the calculator's question: LoRA on LLaMA-7B no longer counts an fp32 base (54 GiB before)
    assert est.peak_bytes < 20 * 2**30


def test_only_fp32_precision_gives_an_fp32_base():
    est = estimate_training("llama-7b", seq_len=512, finetune="lora", precision="fp32")
    adapters = lora_params(get_model("llama-7b"), 16, ["q_proj", "v_proj"])
    assert est.counts["param_bytes"] == 4 * LLAMA7B_PARAMS + 4 * adapters
    # a model loaded without torch_dtype and trained under autocast is base_dtype="fp32"
    amp = estimate_training("llama-7b", seq_len=512, finetune="lora", base_dtype="fp32")
    assert amp.counts["param_bytes"] == 4 * LLAMA7B_PARAMS + 4 * adapters


def _ledger(est):
    return {name: n for name, n, _ in est.layer.items}


def test_lora_dropout_keeps_a_one_byte_mask_per_adapted_input():
    # CUDA's fused dropout (aten::native_dropout) keeps a bool mask: 1 byte per element of the input
    tok = 2048
    base = estimate_training("llama-7b", seq_len=tok, finetune="lora", lora_targets="all-linear")
    drop = estimate_training("llama-7b", seq_len=tok, finetune="lora", lora_targets="all-linear", lora_dropout=0.1)
    masks = {k: v for k, v in _ledger(drop).items() if k.endswith("dropout_mask")}
    fan_in = {"q_proj": 4096, "k_proj": 4096, "v_proj": 4096, "o_proj": 4096, "gate_proj": 4096,
              "up_proj": 4096, "down_proj": 11008}
    assert masks == {f"lora.{t}.dropout_mask": n * tok for t, n in fan_in.items()}
    # under autocast with fp32 adapters each adapter already keeps its own bf16 copy, so dropout adds the masks
    assert drop.layer.total - base.layer.total == sum(masks.values())


def test_peft_fp32_adapters_without_autocast_keep_fp32_inputs():
    # precision "bf16" (no autocast), fp32 adapters: peft casts x to fp32 and lora_A keeps it: 4 bytes per element
    tok = 1024
    est = estimate_training("llama-7b", seq_len=tok, precision="bf16", finetune="lora", lora_targets=["q_proj"])
    led = _ledger(est)
    assert led["lora.q_proj.input"] == 4 * 4096 * tok
    assert led["lora.q_proj.A_out"] == 4 * 16 * tok  # lora_A's fp32 output, kept by lora_B
    # adapters in the base dtype share the norm output instead
    same = estimate_training("llama-7b", seq_len=tok, precision="bf16", finetune="lora", lora_targets=["q_proj"],
                             adapter_dtype="bf16")
    assert "lora.q_proj.input" not in _ledger(same) and _ledger(same)["attn_norm.out"] == 2 * 4096 * tok


def test_gradient_accumulation_keeps_gradients_through_the_forward():
    one = estimate_training("llama-7b", seq_len=512, precision="bf16", optimizer_impl="fused")
    four = estimate_training("llama-7b", seq_len=512, precision="bf16", optimizer_impl="fused", grad_accum=4)
    fwd = [m for m in four.moments if m.name == "forward"][0]
    assert fwd.parts["gradients"] == 2 * LLAMA7B_PARAMS
    assert [m for m in one.moments if m.name == "forward"][0].parts.get("gradients", 0) == 0
    assert four.peak_bytes > one.peak_bytes


# --- QLoRA storage: bitsandbytes quantize_4bit, torchao NF4Tensor -----------------------------------------
def test_nf4_without_double_quant_keeps_fp32_absmax():
    n = 4096 * 11008
    # bitsandbytes functional.quantize_4bit (compress_statistics=False): ceil(n/2) code bytes + one fp32 absmax
    # per 64-weight block = 4.5 bits per weight
    assert nf4_bytes(n, double_quant=False) == n // 2 + 4 * (n // 64)
    assert 8 * nf4_bytes(n, double_quant=False) / n == 4.5


def test_torchao_nf4_layout():
    n = 4096 * 4096
    # torchao NF4Tensor.from_tensor: uint8 codes (n/2), int8 scalers (n/64), one bf16 quantization factor per
    # 256 scalers
    assert nf4_bytes(n, backend="torchao") == n // 2 + n // 64 + 2 * (n // 64 // 256)


def test_qlora_double_quant_option():
    m = get_model("llama-7b")
    linears = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008)
    dq = estimate_training(m, seq_len=256, finetune="qlora")
    plain = estimate_training(m, seq_len=256, finetune="qlora", double_quant=False)
    # the difference is the absmax: fp32 per 64 weights versus 8 bits per 64 weights + fp32 per 256 blocks
    per_tensor = [4096 * 4096] * 4 + [4096 * 11008] * 3
    diff = 32 * sum(4 * (n // 64) - (n // 64 + 4 * math.ceil(n / 64 / 256)) for n in per_tensor)
    assert plain.counts["param_bytes"] - dq.counts["param_bytes"] == diff
    assert diff / linears == pytest.approx((32 - 8 - 32 / 256) / 64 / 8, rel=1e-3)


def test_bitsandbytes_before_0_43_2_keeps_the_matmul_input():
    # MatMul4Bit before 0.43.2 kept A (ctx.tensors = (A, B)): with adapters only on q/v, the MLP's frozen
    # 4-bit matmuls now keep the mlp norm's output (2 bytes) and down_proj its input, the SwiGLU product
    tok = 512
    new = estimate_training("llama-7b", seq_len=tok, finetune="qlora", precision="bf16", adapter_dtype="bf16")
    old = estimate_training("llama-7b", seq_len=tok, finetune="qlora", precision="bf16", adapter_dtype="bf16",
                            qlora_backend="bitsandbytes<0.43.2")
    added = {k: v for k, v in _ledger(old).items() if k not in _ledger(new)}
    assert added == {"mlp_norm.out": 2 * 4096 * tok, "mlp.product": 2 * 11008 * tok}


def _moment(est, where):
    return next(m for m in est.moments if m.where.startswith(where))


def test_bitsandbytes_before_0_43_2_keeps_inputs_past_the_backward():
    """ctx.tensors is a plain attribute, not a saved tensor: every 4-bit matmul's input lives as long as the step's
    graph, which the loop keeps (its `out`) through the optimizer step and the next forward."""
    h, I, L, tok = 4096, 11008, 32, 512
    kw = dict(seq_len=tok, finetune="qlora", precision="bf16", adapter_dtype="bf16", optimizer_impl="fused")
    new = estimate_training("llama-7b", **kw)
    old = estimate_training("llama-7b", qlora_backend="bitsandbytes<0.43.2", **kw)
    # per layer: the two norm outputs, the attention output and the SwiGLU product, 2 bytes each; layer 0's q/k/v
    # keep nothing (frozen embeddings: no input needs a gradient, `any(ctx.needs_input_grad[:2])` is False)
    retained = L * 2 * tok * (h + h + h + I) - 2 * tok * h
    assert _moment(old, "optimizer").total - _moment(new, "optimizer").total == retained
    assert (_moment(old, "inside the last").parts["previous_output"]
            - _moment(new, "inside the last").parts["previous_output"]) == retained
    # at the bottom of the backward the other 31 layers' inputs are still there
    bottom = _moment(old, "first decoder layer, mlp").parts["activations"] - \
        _moment(new, "first decoder layer, mlp").parts["activations"]
    # layers 1..31's inputs, and layer 0's ledger now also holding its mlp norm output and SwiGLU product (its
    # attention norm output was saved anyway, by the q/v adapters' lora_A)
    per_layer = 2 * tok * (h + h + h + I)
    assert bottom == (L - 1) * per_layer + 2 * tok * (h + I)
    # from 0.43.2 on, nothing outlives the backward
    assert "activations" not in _moment(new, "optimizer").parts or _moment(new, "optimizer").parts["activations"] == 0


def test_lightning_qlora_quantizes_the_head_from_fp16():
    """Lightning's BitsandbytesPrecision (LitGPT's QLoRA): lm_head in NF4 too; every weight quantized from fp16, so
    a 4-bit matmul under bf16 holds the fp16 dequantized weight and its bf16 cast at once (4 bytes per weight)."""
    V, h = 32000, 4096
    kw = dict(seq_len=512, finetune="qlora", precision="bf16", adapter_dtype="bf16", double_quant=False)
    hf = estimate_training("llama-7b", **kw)
    lit = estimate_training("llama-7b", qlora_backend="lightning-bitsandbytes", **kw)
    assert hf.counts["param_bytes"] - lit.counts["param_bytes"] == 2 * V * h - nf4_bytes(V * h, double_quant=False)
    deq = {t.name: t.nbytes for t in lit.terms}["dequantized_weight_bytes"]
    assert deq == 4 * 4096 * 11008  # the largest decoder projection, fp16 + bf16
    fp16 = estimate_training("llama-7b", qlora_backend="lightning-bitsandbytes",
                             **dict(kw, precision="fp16", adapter_dtype="fp16"))
    assert {t.name: t.nbytes for t in fp16.terms}["dequantized_weight_bytes"] == 2 * 4096 * 11008  # no cast
    # the note counts the head among the 4-bit weights, still 4 + 32/64 = 4.5 bits each (fp32 absmax per
    # 64-weight block without double quantization): 32 x (4 x 4096^2 + 3 x 4096 x 11008) + 32000 x 4096 = 6.61B
    (note,) = [n for n in lit.notes if n.startswith("QLoRA")]
    assert "6.61B projection weights (lm_head too) in NF4 (4.500 bits each)" in note


def test_litgpt_chunked_head_keeps_fp32_logits_and_log_softmax():
    """LitGPT: the head per 128 tokens, Fabric's convert_output makes the list fp32 (4 bytes x tokens x V), each
    chunk's cross-entropy keeps an fp32 log-softmax; the previous step's logits are replaced before the loss."""
    V, tok = 128256, 1024
    est = estimate_training("llama-3-8b", seq_len=tok, finetune="lora", precision="bf16", adapter_dtype="bf16",
                            loss="chunked-head")
    at_loss = _moment(est, "at the loss")
    assert at_loss.parts["logits_and_loss"] == 4 * V * tok + 4 * V * tok + 4 * V * 128
    assert at_loss.parts.get("previous_output", 0) == 0
    conv = _moment(est, "the head's chunks converted")
    assert conv.parts["logits_and_loss"] == 4 * V * tok + 2 * V * tok  # fp32 list beside the bf16 one
    assert conv.parts["previous_output"] == 4 * V * tok
    assert _moment(est, "optimizer").parts["logits_and_loss"] == 4 * V * tok  # the loop's `logits`
    # with Lightning's 4-bit head the head's dequantized weight (fp16 + bf16) joins its last chunk
    q = estimate_training("llama-3-8b", seq_len=tok, finetune="qlora", precision="bf16", adapter_dtype="bf16",
                          loss="chunked-head", qlora_backend="lightning-bitsandbytes")
    last = _moment(q, "the 4-bit head's last chunk")
    assert last.parts["temporaries"] == 4 * V * 4096
    assert last.parts["logits_and_loss"] == 2 * V * (tok - 128)


def test_bitsandbytes_before_0_43_2_retains_inputs_in_every_kind_of_layer():
    """Gemma 3 (52 sliding-window and 10 full-attention layers, a ledger per kind): every layer's 4-bit matmuls keep
    their inputs past the backward, whatever its attention. Gemma 3 27B (its config.json): h=5376, 32 heads x
    head_dim 128 (the attention output 4096 wide), I=21504, 62 layers; Gemma3RMSNorm returns the input's dtype."""
    h, q, I, L, tok = 5376, 32 * 128, 21504, 62, 512
    kw = dict(seq_len=tok, finetune="qlora", precision="bf16", adapter_dtype="bf16", optimizer_impl="fused")
    new = estimate_training("gemma-3-27b", **kw)
    old = estimate_training("gemma-3-27b", qlora_backend="bitsandbytes<0.43.2", **kw)
    # per layer: the two norm outputs, the attention output and the GeGLU product, 2 bytes each; layer 0's q/k/v
    # keep nothing (frozen embeddings)
    retained = L * 2 * tok * (h + q + h + I) - 2 * tok * h
    assert _moment(old, "optimizer").total - _moment(new, "optimizer").total == retained
    assert (_moment(old, "inside the last").parts["previous_output"]
            - _moment(new, "inside the last").parts["previous_output"]) == retained


def test_litgpt_chunked_head_keeps_a_soft_capped_heads_tanh_outputs():
    """Gemma 2 under LitGPT: clamp_head(lm_head(x_i)) per chunk (litgpt/model.py GPT.forward), do_softcapping's
    tanh keeps its output (b x s x V in bf16) beside the chunks while Fabric converts them to fp32."""
    cfg = {"model_type": "gemma2", "hidden_size": 512, "num_attention_heads": 8, "num_key_value_heads": 4,
           "head_dim": 64, "intermediate_size": 1376, "num_hidden_layers": 4, "vocab_size": 32000,
           "tie_word_embeddings": True, "sliding_window": 256}  # final_logit_softcapping: Gemma2Config's 30.0
    V, tok = 32000, 512
    est = estimate_training(memlib.Model.from_hf_config(cfg, name="gemma2-tiny"), seq_len=tok, finetune="lora",
                            precision="bf16", adapter_dtype="bf16", loss="chunked-head")
    conv = _moment(est, "the head's chunks converted")
    assert conv.parts["logits_and_loss"] == 4 * V * tok + 2 * V * tok + 2 * V * tok  # fp32 list, bf16 list, tanh
    at_loss = _moment(est, "at the loss")
    assert at_loss.parts["logits_and_loss"] == 4 * V * tok + 4 * V * tok + 4 * V * 128 + 2 * V * tok


# --- Liger's fused linear cross-entropy ------------------------------------------------------------------
def test_chunked_loss_keeps_no_logits():
    full = estimate_training("llama-3-8b", seq_len=4096, finetune="lora")
    chunked = estimate_training("llama-3-8b", seq_len=4096, finetune="lora", loss="chunked")
    fwd = [m for m in chunked.moments if m.name == "forward"][0]
    assert fwd.parts.get("previous_output", 0) == 0
    # at the loss: grad_input (4096 tokens x 4096, bf16) + one chunk's logits: Liger's chunk is
    # next_pow2(ceil(BT / ceil(V / H))) = next_pow2(ceil(4096 / 32)) = 128 tokens, x 128256 x 2 bytes, its
    # grad_input product 128 x 4096 x 2, and the fp32 per-token losses 4 x 4096
    assert fwd.parts["logits_and_loss"] == 2 * 4096 * 4096 + 2 * 128 * 128256 + 2 * 128 * 4096 + 4 * 4096
    assert chunked.peak_bytes < full.peak_bytes


# --- torchtitan's selective activation checkpointing ----------------------------------------------------------
def test_selective_recompute_saves_every_other_matmul_and_the_attention_kernel():
    from memlib.training.activations import selective_saved_bytes
    from memlib.training.terms import NUMERICS
    m, tok = get_model("llama-7b"), 2048
    saved, shared = selective_saved_bytes(m, NUMERICS["bf16"], tok, 1, tok, attention="sdpa")
    # mm order q, k, v, o, gate, up, down: saved q, v, gate, down; plus sdpa's output and fp32 log-sum-exp
    assert saved == 2 * tok * (4096 + 4096 + 11008 + 4096) + 2 * tok * 4096 + 4 * 32 * tok
    # v (sdpa keeps it), gate (SiLU keeps it), sdpa's outputs are also what the rebuilt layer keeps
    assert shared == 2 * tok * 4096 + 2 * tok * 11008 + 2 * tok * 4096 + 4 * 32 * tok
    kw = dict(seq_len=tok, precision="bf16", optimizer_impl="fused", micro_batch=4)
    est = estimate_training(m, recompute="selective", **kw)
    saved *= 4  # four sequences
    # forward: every layer keeps its input (2 bytes x h) and what the policy saved
    fwd = [mo for mo in est.moments if mo.name == "forward"][0]
    none = estimate_training(m, **kw)
    full = estimate_training(m, recompute="full", **kw)
    assert fwd.parts["activations"] - [mo for mo in full.moments if mo.name == "forward"][0].parts["activations"] \
        == 32 * saved
    assert full.peak_bytes < est.peak_bytes < none.peak_bytes


# --- multi-GPU QLoRA ------------------------------------------------------------------------------------------
def test_device_map_qlora_splits_the_layers():
    m = get_model("llama-65b")
    est = estimate_training(m, seq_len=512, finetune="qlora", pp=4, precision="fp16-mixed")
    assert est.setup.sharding == "device_map"
    per_layer_linears = [8192 * 8192] * 4 + [8192 * 22016] * 3
    adapters_per_layer = 16 * 2 * (8192 + 8192)  # q_proj, v_proj at rank 16
    # first GPU: 20 layers (NF4 projections + two fp16 norms + fp32 adapters) and the fp16 embedding
    first = 20 * (sum(nf4_bytes(n) for n in per_layer_linears) + 2 * 2 * 8192 + 4 * adapters_per_layer) \
        + 2 * 32000 * 8192
    last = first - 2 * 32000 * 8192 + 2 * (8192 + 32000 * 8192)  # final norm and lm_head instead
    assert est.counts["param_bytes"] in (first, last)
    assert "device_map over 4 GPUs" in est.notes[-1]


def test_fsdp_qlora_shards_the_4_bit_base():
    m = get_model("llama-2-70b")
    one = estimate_training(m, seq_len=512, finetune="qlora", precision="bf16")
    fsdp = estimate_training(m, seq_len=512, finetune="qlora", precision="bf16", zero_stage="FULL_SHARD", dp=2)
    assert fsdp.setup.sharding == "fsdp"
    assert fsdp.counts["param_bytes"] == one.counts["param_bytes"] // 2
    assert fsdp.peak_bytes < one.peak_bytes
    # (Answer.AI's two 24 GB cards for Llama-2-70B also offload the sharded parameters to the CPU,
    # --use_cpu_offload; FSDP's CPU offload is not modelled, so that claim is not checked here.)


def test_plan_offers_multi_gpu_qlora_with_speed():
    from memlib.parallel.plan import plan
    r = plan("llama-65b", "v100-32gb", 4, task="qlora")
    kinds = {p.estimate.setup.sharding for p in r.feasible}
    assert {"device_map", "fsdp"} <= kinds
    assert all(p.time is not None and p.tokens_per_s_per_gpu > 0 for p in r.feasible)
    assert all(p.settings["precision"] == "fp16-mixed" for p in r.feasible)  # V100: no bf16
    # device_map runs the GPUs one after another: the step takes the whole model's compute on one GPU
    dm = next(p for p in r.feasible if p.estimate.setup.sharding == "device_map")
    t = dm.time
    gpu = memlib.get_gpu("v100-32gb")
    work = t.flops_per_token * t.tokens_per_step / (gpu.fp16_tflops * 1e12 * 0.4)
    assert t.compute_s == pytest.approx(work)


def test_cli_fit_lists_qlora_layouts(capsys):
    from memlib.cli import main
    assert main(["fit", "llama-65b", "--gpu", "v100-32gb", "--count", "4", "--task", "qlora"]) == 0
    out = capsys.readouterr().out
    assert "layouts fit" in out and "device_map over 4 GPUs" in out and "FSDP-QLoRA over 4 GPUs" in out


# --- bad input (issue 11's estimate_training items) -------------------------------------------------------------
@pytest.mark.parametrize("kw, message", [
    (dict(grad_accum=0), r"grad_accum must be >= 1, got 0"),
    (dict(lora_rank=0), r"lora_rank must be >= 1, got 0"),
    (dict(lora_rank=-5), r"lora_rank must be >= 1, got -5"),
    (dict(lora_targets="garbage"), r"unknown LoRA target 'garbage'"),
    (dict(lora_targets=5), r"lora_targets must be projection names .* got 5"),
    (dict(lora_targets=b"q_proj"), r"lora_targets must be projection names .* got b'q_proj'"),
    (dict(lora_rank=32), r"lora_rank=32 does not apply here: finetune='full'"),
    (dict(lora_targets=["q_proj"]), r"lora_targets=\['q_proj'\] does not apply here"),
    (dict(lora_dropout=0.1), r"lora_dropout=0.1 does not apply here"),
    (dict(offload_device="nvme"), r"offload_device='nvme' needs offload="),
    (dict(zero_stage="7"), r"unknown zero_stage '7'"),
    (dict(optimizer_impl="fast"), r"unknown optimizer_impl 'fast'; accepted: 'foreach', 'fused', 'for-loop'"),
    (dict(adapter_dtype="int8", finetune="lora"), r"unknown adapter_dtype 'int8'"),
    (dict(adapter_dtype="fp16", finetune="lora"), r"adapter_dtype='fp16' with a bf16 base"),
    (dict(base_dtype="fp32", finetune="lora", precision="bf16"), r"base_dtype='fp32' with precision='bf16'"),
    (dict(qlora_backend="torchao"), r"qlora_backend='torchao' does not apply here"),
    (dict(qlora_backend="gptq", finetune="qlora"), r"unknown qlora_backend 'gptq'"),
    (dict(double_quant=False, finetune="qlora", qlora_backend="torchao"), r"double_quant=False does not apply"),
    (dict(double_quant="yes", finetune="qlora"), r"double_quant must be True or False"),
    (dict(loss="fused"), r"unknown loss 'fused'; accepted: 'full', 'chunked', 'chunked-head'"),
    (dict(loss="chunked", tp=2), r"loss='chunked' .* tp > 1"),
    (dict(loss="chunked-head", tp=2), r"loss='chunked-head' \(LitGPT's chunked loss\) with tp > 1"),
    (dict(qlora_backend="lightning-bitsandbytes"), r"qlora_backend='lightning-bitsandbytes' does not apply here"),
    (dict(finetune="qlora", qlora_backend="lightning-bitsandbytes<0.43.2", pp=2),
     r"LitGPT's QLoRA through Lightning's BitsandbytesPrecision, which LitGPT runs on one GPU"),
    (dict(finetune="qlora", qlora_backend="lightning-bitsandbytes", zero_stage="FULL_SHARD", dp=2),
     r"runs on one GPU"),
    (dict(activation_offload=1), r"activation_offload must be True or False"),
    (dict(activation_offload=True, tp=2), r"activation_offload .* not with tp=2"),
    (dict(lora_dropout=1.0, finetune="lora"), r"lora_dropout must be a probability in \[0, 1\), got 1.0"),
    (dict(optimizer="adamw-8bit", optimizer_impl="fused"), r"optimizer_impl='fused' does not apply here"),
    (dict(optimizer="adafactor", optimizer_impl="fused"), r"torch.optim.Adafactor has no fused"),
    (dict(zero_stage=2, dp=4, optimizer_impl="fused"), r"optimizer_impl='fused' does not apply here"),
    (dict(fsdp_mixed_precision=False), r"fsdp_mixed_precision=False describes FSDP"),
    (dict(finetune="qlora", zero_stage=3, dp=4), r"QLoRA over several GPUs is modelled three ways"),
    (dict(finetune="qlora", pp=2, zero_stage="FULL_SHARD", dp=2), r"not both"),
])
def test_bad_recipe_options_are_named(kw, message):
    with pytest.raises(ValueError, match=message):
        estimate_training("llama-7b", seq_len=512, **kw)


def test_zero_stage_digits_are_accepted():
    assert (estimate_training("llama-7b", seq_len=512, zero_stage="3", dp=8).peak_bytes
            == estimate_training("llama-7b", seq_len=512, zero_stage=3, dp=8).peak_bytes)


def test_gpt_path_honours_attention_and_refuses_what_it_cannot_model():
    eager = estimate_training("gpt-3-175b", seq_len=2048, attention="eager")
    sdpa = estimate_training("gpt-3-175b", seq_len=2048, attention="sdpa")
    assert eager.counts["layer_activation_bytes"] > sdpa.counts["layer_activation_bytes"]
    with pytest.raises(ValueError, match="loss='chunked' does not apply here"):
        estimate_training("gpt-3-175b", seq_len=2048, loss="chunked")


@pytest.mark.parametrize("offload", ["optimizer", "optimizer+params"])
@pytest.mark.parametrize("recompute", ["none", "full", "selective"])
def test_zero_offload_per_gpu_peak_never_rises_with_dp(offload, recompute):
    peaks = [estimate_training("llama-7b", zero_stage=3, dp=dp, offload=offload, recompute=recompute).peak_bytes
             for dp in (1, 2, 4, 8, 16, 64, 512)]
    assert peaks == sorted(peaks, reverse=True)


def test_explain_names_the_recipe_and_its_terms():
    text = estimate_training("llama-7b", finetune="qlora", lora_dropout=0.05, loss="chunked", grad_accum=4).explain()
    for needle in ("LoRA dropout **0.05**", "chunked loss", "4** micro-batches", "`nf4_weight_bytes`",
                   "`fused_loss_saved_bytes`", "MatMul4Bit"):
        assert needle in text
