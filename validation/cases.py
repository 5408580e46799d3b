"""Validation cases as plain data.

Every case is a dict that the harness turns into one two-step training run. The config
dicts are complete on purpose: the estimator under test reads the same dicts, so a field
left to a transformers default would be a silent disagreement between the two.

Keys of a case:
    name         unique id (used on the command line and in results.json)
    config       transformers config dict (model_type + architecture fields)
    seq_len      tokens per sequence
    micro_batch  sequences per step
    precision    "fp32" | "bf16" | "fp16" (everything in that dtype) or "bf16-mixed" |
                 "fp16-mixed" (autocast; full fine-tuning: fp32 params; LoRA: 16-bit base)
    recompute    "none" | "full" (activation checkpointing of every decoder layer) |
                 "selective" (torchtitan's op-level SAC policy, validation/recipes.py)
    attention    "sdpa" or "eager"
    optimizer    "adamw" (default), "sgd", "sgd-momentum"
    optimizer_impl  "foreach" (default, torch's CUDA default) | "fused" | "for-loop" (foreach=False)
    finetune     "full", "lora" or "qlora"
    lora         {"r": int, "alpha": int, "targets": [module names], "dropout": float} when
                 finetune == "lora"
    adapter_dtype   LoRA adapters: "fp32" (peft's autocast_adapter_dtype=True, the default) or
                 the base dtype ("bf16"/"fp16": autocast_adapter_dtype=False)
    base_dtype   LoRA only: None (the recipe's: 16-bit under *-mixed) or "fp32" (a model loaded
                 without torch_dtype and trained under autocast)
    grad_accum   micro-batches per optimizer step (gradients accumulate)
    loss         "full" (transformers' loss over full logits) | "chunked" (Liger's fused linear
                 cross-entropy, emulated in validation/recipes.py) | "chunked-head" (LitGPT's head
                 in 128-token chunks, fp32 under Fabric, cross-entropy per chunk: recipes.py)
    activation_offload  torchtune's activation offloading (validation/recipes.py)
    qlora        finetune == "qlora": {"double_quant": bool, "backend": one of qlora.BACKENDS}
                 (bitsandbytes NF4, validation/qlora.py)
    holdout      True for cases kept aside to test a fitted formula on unseen shapes

The cases recorded before these options existed ran AdamW(foreach=False) and, for LoRA,
adapters in the base dtype (fp32 base under *-mixed); `_legacy` writes that down in
their dicts, so their measurements keep saying exactly what was run.
"""

from __future__ import annotations

import copy

_COMMON = {
    "hidden_act": "silu",
    "attention_dropout": 0.0,
    "attention_bias": False,
    "mlp_bias": False,
    "initializer_range": 0.02,
    "use_cache": False,
}


def _llama_like(model_type: str, **fields) -> dict:
    cfg = {"model_type": model_type, **_COMMON, **fields}
    if model_type != "llama":
        # mlp_bias / attention_bias are llama-only fields; qwen2 has fixed q/k/v biases
        # and mistral has none, so leave them out rather than pass unknown keys.
        cfg.pop("mlp_bias")
        cfg.pop("attention_bias")
    return cfg


# --- configs -------------------------------------------------------------------------

# Small but realistic proportions (head_dim 64, SwiGLU ratio ~2.7) so runs take seconds.
TINY_LLAMA = _llama_like(
    "llama", hidden_size=512, intermediate_size=1376, num_hidden_layers=4,
    num_attention_heads=8, num_key_value_heads=8, vocab_size=32000,
    max_position_embeddings=8192, rms_norm_eps=1e-6, tie_word_embeddings=False,
    rope_theta=10000.0,
)

TINY_LLAMA_GQA = _llama_like(
    "llama", hidden_size=512, intermediate_size=1376, num_hidden_layers=4,
    num_attention_heads=8, num_key_value_heads=2, vocab_size=32000,
    max_position_embeddings=8192, rms_norm_eps=1e-5, tie_word_embeddings=False,
    rope_theta=500000.0,
)

TINY_LLAMA_TIED = _llama_like(
    "llama", hidden_size=512, intermediate_size=1376, num_hidden_layers=4,
    num_attention_heads=8, num_key_value_heads=4, vocab_size=32000,
    max_position_embeddings=8192, rms_norm_eps=1e-5, tie_word_embeddings=True,
    rope_theta=10000.0,
)

TINY_MISTRAL = _llama_like(
    "mistral", hidden_size=512, intermediate_size=1792, num_hidden_layers=4,
    num_attention_heads=8, num_key_value_heads=2, vocab_size=32000,
    max_position_embeddings=8192, rms_norm_eps=1e-5, tie_word_embeddings=False,
    rope_theta=10000.0, sliding_window=None, head_dim=64,
)

# Qwen2 with its real 151936 vocabulary: the logits/loss terms dominate at this width,
# which is exactly what a formula gets wrong most often. Qwen2 has q/k/v biases.
QWEN2_SMALL_VOCAB152K = _llama_like(
    "qwen2", hidden_size=896, intermediate_size=4864, num_hidden_layers=2,
    num_attention_heads=14, num_key_value_heads=2, vocab_size=151936,
    max_position_embeddings=32768, rms_norm_eps=1e-6, tie_word_embeddings=True,
    rope_theta=1000000.0, use_sliding_window=False, sliding_window=None,
    max_window_layers=24,
)

# Reduced-depth real models: real width/vocab, few layers.
LLAMA3_8B_2L = _llama_like(
    "llama", hidden_size=4096, intermediate_size=14336, num_hidden_layers=2,
    num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
    max_position_embeddings=8192, rms_norm_eps=1e-5, tie_word_embeddings=False,
    rope_theta=500000.0,
)

QWEN2_7B_2L = _llama_like(
    "qwen2", hidden_size=3584, intermediate_size=18944, num_hidden_layers=2,
    num_attention_heads=28, num_key_value_heads=4, vocab_size=152064,
    max_position_embeddings=32768, rms_norm_eps=1e-6, tie_word_embeddings=False,
    rope_theta=1000000.0, use_sliding_window=False, sliding_window=None,
    max_window_layers=28,
)

LLAMA2_7B_4L = _llama_like(
    "llama", hidden_size=4096, intermediate_size=11008, num_hidden_layers=4,
    num_attention_heads=32, num_key_value_heads=32, vocab_size=32000,
    max_position_embeddings=4096, rms_norm_eps=1e-5, tie_word_embeddings=False,
    rope_theta=10000.0,
)

# Whole 7B-sized models.
LLAMA_7B = _llama_like(
    "llama", hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
    num_attention_heads=32, num_key_value_heads=32, vocab_size=32000,
    max_position_embeddings=2048, rms_norm_eps=1e-6, tie_word_embeddings=False,
    rope_theta=10000.0,
)

MISTRAL_7B = _llama_like(
    "mistral", hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
    num_attention_heads=32, num_key_value_heads=8, vocab_size=32000,
    max_position_embeddings=32768, rms_norm_eps=1e-5, tie_word_embeddings=False,
    rope_theta=1000000.0, sliding_window=None, head_dim=128,
)


def _case(name, config, seq_len, micro_batch, precision="bf16", recompute="none",
          attention="sdpa", finetune="full", lora=None, optimizer="adamw",
          holdout=False, **options) -> dict:
    case = {
        "name": name,
        "config": copy.deepcopy(config),
        "seq_len": seq_len,
        "micro_batch": micro_batch,
        "precision": precision,
        "recompute": recompute,
        "attention": attention,
        "optimizer": optimizer,
        "finetune": finetune,
        "lora": copy.deepcopy(lora),
        "holdout": holdout,
    }
    unknown = set(options) - set(OPTION_DEFAULTS)
    if unknown:
        raise ValueError(f"unknown case options {sorted(unknown)}")
    case.update({k: options[k] for k in OPTION_DEFAULTS if k in options})
    return case


# The options added with the recipes (issue 9); a case that leaves one out runs the default.
OPTION_DEFAULTS = {"optimizer_impl": "foreach", "adapter_dtype": "fp32", "base_dtype": None, "grad_accum": 1,
                   "loss": "full", "activation_offload": False, "qlora": None}


def option(case: dict, key: str):
    """A case's option, or its default."""
    return case.get(key, OPTION_DEFAULTS[key])


def _legacy(case: dict) -> dict:
    """What the cases recorded before the recipe options ran: AdamW/SGD(foreach=False) and, for
    LoRA, peft's autocast_adapter_dtype=False (adapters in the base dtype; fp32 base under AMP)."""
    case["optimizer_impl"] = "for-loop"
    if case["finetune"] == "lora":
        p = case["precision"]
        case["adapter_dtype"] = "fp32" if p.endswith("mixed") or p == "fp32" else p
        if p.endswith("mixed"):
            case["base_dtype"] = "fp32"
    return case


_ATTN = ["q_proj", "k_proj", "v_proj", "o_proj"]
_ALL_LINEAR = _ATTN + ["gate_proj", "up_proj", "down_proj"]

CASES: list[dict] = [
    # precision x recompute on one small model
    _case("tiny-llama-bf16", TINY_LLAMA, 512, 2),
    _case("tiny-llama-mixed", TINY_LLAMA, 512, 2, precision="bf16-mixed"),
    _case("tiny-llama-bf16-ckpt", TINY_LLAMA, 512, 2, recompute="full"),
    _case("tiny-llama-mixed-ckpt", TINY_LLAMA, 512, 2, precision="bf16-mixed", recompute="full"),
    # eager attention materialises the s x s scores
    _case("tiny-llama-bf16-eager", TINY_LLAMA, 512, 2, attention="eager"),
    _case("tiny-llama-mixed-eager", TINY_LLAMA, 1024, 1, precision="bf16-mixed", attention="eager"),
    # micro-batch and sequence sweeps
    _case("tiny-llama-bf16-mb1-s128", TINY_LLAMA, 128, 1),
    _case("tiny-llama-bf16-mb8-s512", TINY_LLAMA, 512, 8),
    _case("tiny-llama-bf16-s8192", TINY_LLAMA, 8192, 1),
    _case("tiny-llama-mixed-ckpt-s8192", TINY_LLAMA, 8192, 1, precision="bf16-mixed", recompute="full"),
    # GQA, tied embeddings, mistral class
    _case("tiny-llama-gqa-bf16", TINY_LLAMA_GQA, 1024, 2),
    _case("tiny-llama-tied-bf16", TINY_LLAMA_TIED, 512, 4),
    _case("tiny-llama-tied-mixed", TINY_LLAMA_TIED, 512, 4, precision="bf16-mixed"),
    _case("tiny-mistral-bf16", TINY_MISTRAL, 1024, 2),
    # large vocabulary + q/k/v biases
    _case("qwen2-152k-2l-bf16", QWEN2_SMALL_VOCAB152K, 1024, 2),
    _case("qwen2-152k-2l-mixed", QWEN2_SMALL_VOCAB152K, 1024, 2, precision="bf16-mixed"),
    # reduced-depth real widths
    _case("llama3-8b-2l-bf16", LLAMA3_8B_2L, 2048, 1),
    _case("llama3-8b-2l-mixed-ckpt", LLAMA3_8B_2L, 4096, 1, precision="bf16-mixed", recompute="full"),
    _case("qwen2-7b-2l-bf16-ckpt", QWEN2_7B_2L, 2048, 2, recompute="full"),
    _case("llama2-7b-4l-mixed-eager", LLAMA2_7B_4L, 1024, 1, precision="bf16-mixed", attention="eager"),
    # whole 7B models
    _case("llama-7b-bf16", LLAMA_7B, 2048, 1),
    _case("llama-7b-bf16-ckpt-mb4", LLAMA_7B, 2048, 4, recompute="full"),
    _case("mistral-7b-bf16-ckpt", MISTRAL_7B, 4096, 1, recompute="full"),
    # other optimizers (optional reference semantics)
    _case("tiny-llama-bf16-sgd", TINY_LLAMA, 512, 2, optimizer="sgd"),
    _case("tiny-llama-bf16-sgdm", TINY_LLAMA, 512, 2, optimizer="sgd-momentum"),
    # LoRA (frozen base: MemTracker cannot be used, dispatch tracker only)
    _case("tiny-llama-lora8-attn-bf16", TINY_LLAMA, 512, 2, finetune="lora",
          lora={"r": 8, "alpha": 16, "targets": _ATTN}),
    _case("tiny-llama-lora64-all-mixed", TINY_LLAMA, 512, 2, precision="bf16-mixed",
          finetune="lora", lora={"r": 64, "alpha": 128, "targets": _ALL_LINEAR}),
    _case("llama3-8b-2l-lora16-qv-bf16", LLAMA3_8B_2L, 2048, 1, finetune="lora",
          lora={"r": 16, "alpha": 32, "targets": ["q_proj", "v_proj"]}),
    _case("llama-7b-lora16-all-bf16-ckpt", LLAMA_7B, 2048, 2, recompute="full",
          finetune="lora", lora={"r": 16, "alpha": 32, "targets": _ALL_LINEAR}),
    _case("tiny-llama-gqa-lora32-all-mixed-ckpt", TINY_LLAMA_GQA, 1024, 2,
          precision="bf16-mixed", recompute="full", finetune="lora",
          lora={"r": 32, "alpha": 64, "targets": _ALL_LINEAR}),
]

# Added after the estimator was written, to try settings it had not been compared with:
# fp32 and fp16 numerics, eager attention with GQA, LoRA under AMP with biases.
# (torch.optim.Adafactor cannot be measured here: its step reads a tensor's value on the
# host, aten._local_scalar_dense, which FakeTensorMode refuses as data-dependent.)
CASES += [
    _case("tiny-llama-fp32", TINY_LLAMA, 512, 2, precision="fp32"),
    _case("tiny-llama-fp16-mixed-eager", TINY_LLAMA, 1024, 1, precision="fp16-mixed", attention="eager"),
    _case("tiny-llama-gqa-bf16-eager", TINY_LLAMA_GQA, 1024, 2, attention="eager"),
    _case("qwen2-152k-2l-lora8-all-mixed", QWEN2_SMALL_VOCAB152K, 1024, 2, precision="bf16-mixed",
          finetune="lora", lora={"r": 8, "alpha": 16, "targets": _ALL_LINEAR}),
    _case("tiny-mistral-lora16-qv-fp16-eager", TINY_MISTRAL, 1024, 2, precision="fp16", attention="eager",
          finetune="lora", lora={"r": 16, "alpha": 32, "targets": ["q_proj", "v_proj"]}),
]

# Kept aside: shapes/batches/sequences no calibration should have seen.
HOLDOUT_CASES: list[dict] = [
    _case("holdout-tiny-gqa-mixed-mb3-s1536", TINY_LLAMA_GQA, 1536, 3,
          precision="bf16-mixed", holdout=True),
    _case("holdout-tiny-mistral-bf16-ckpt-mb6-s768", TINY_MISTRAL, 768, 6,
          recompute="full", holdout=True),
    _case("holdout-qwen2-152k-bf16-eager-s2048", QWEN2_SMALL_VOCAB152K, 2048, 1,
          attention="eager", holdout=True),
    _case("holdout-llama3-8b-2l-bf16-mb2-s3072", LLAMA3_8B_2L, 3072, 2, holdout=True),
    _case("holdout-tiny-tied-lora4-attn-bf16-s2048", TINY_LLAMA_TIED, 2048, 2,
          finetune="lora", lora={"r": 4, "alpha": 8, "targets": _ATTN}, holdout=True),
]

ALL_CASES: list[dict] = CASES + HOLDOUT_CASES

for _c in ALL_CASES:
    _legacy(_c)

# --- the recipes people run (issue 9): every option at the recipes' defaults unless named ---
# LLaMA-1/2-7B widths at few layers keep the runs cheap while the layers, not the logits,
# decide the peak. Each case names the option it measures.
LLAMA_7B_4L = dict(copy.deepcopy(LLAMA_7B), num_hidden_layers=4)
LLAMA_7B_2L = dict(copy.deepcopy(LLAMA_7B), num_hidden_layers=2)
_QV = ["q_proj", "v_proj"]
RECIPE_CASES: list[dict] = [
    # torch.optim implementations (foreach: torch's CUDA default; fused; the for-loop cases above)
    _case("tiny-llama-mixed-foreach", TINY_LLAMA, 512, 2, precision="bf16-mixed", optimizer_impl="foreach"),
    _case("llama3-8b-2l-bf16-foreach", LLAMA3_8B_2L, 1024, 1, optimizer_impl="foreach"),
    _case("llama3-8b-2l-bf16-fused", LLAMA3_8B_2L, 1024, 1, optimizer_impl="fused"),
    # LoRA as HF Trainer + PEFT run it: 16-bit base, fp32 adapters, autocast, dropout
    _case("llama-7b-4l-lora16-all-mixed-drop05", LLAMA_7B_4L, 2048, 1, precision="bf16-mixed", finetune="lora",
          lora={"r": 16, "alpha": 32, "targets": _ALL_LINEAR, "dropout": 0.05}),
    _case("llama-7b-4l-lora16-qv-mixed", LLAMA_7B_4L, 2048, 2, precision="bf16-mixed", finetune="lora",
          lora={"r": 16, "alpha": 32, "targets": _QV}),
    _case("llama-7b-4l-lora64-all-bf16-fp32ad-drop10", LLAMA_7B_4L, 2048, 1, precision="bf16", finetune="lora",
          lora={"r": 64, "alpha": 16, "targets": _ALL_LINEAR, "dropout": 0.1}),
    _case("tiny-llama-lora64-all-mixed-bf16ad-drop10", TINY_LLAMA, 512, 2, precision="bf16-mixed",
          finetune="lora", adapter_dtype="bf16", lora={"r": 64, "alpha": 128, "targets": _ALL_LINEAR, "dropout": 0.1}),
    _case("llama-7b-4l-lora16-all-mixed-drop05-ckpt", LLAMA_7B_4L, 2048, 2, precision="bf16-mixed", recompute="full",
          finetune="lora", lora={"r": 16, "alpha": 32, "targets": _ALL_LINEAR, "dropout": 0.05}),
    # gradient accumulation: gradients alive through the next micro-batch
    _case("tiny-llama-mixed-accum2", TINY_LLAMA, 512, 2, precision="bf16-mixed", grad_accum=2),
    _case("llama3-8b-2l-bf16-accum2", LLAMA3_8B_2L, 1024, 1, grad_accum=2),
    _case("llama-7b-4l-lora16-all-mixed-accum4", LLAMA_7B_4L, 2048, 1, precision="bf16-mixed", finetune="lora",
          grad_accum=4, lora={"r": 16, "alpha": 32, "targets": _ALL_LINEAR, "dropout": 0.05}),
    # chunked loss: Liger's fused linear cross-entropy (no logits)
    _case("llama3-8b-2l-lora16-qv-mixed-chunked", LLAMA3_8B_2L, 2048, 1, precision="bf16-mixed", finetune="lora",
          loss="chunked", lora={"r": 16, "alpha": 32, "targets": _QV}),
    _case("qwen2-152k-2l-bf16-chunked", QWEN2_SMALL_VOCAB152K, 1024, 2, loss="chunked"),
    _case("qwen2-152k-2l-mixed-chunked", QWEN2_SMALL_VOCAB152K, 1024, 2, precision="bf16-mixed", loss="chunked"),
    # activation offloading: torchtune's OffloadActivations
    _case("llama-7b-4l-lora16-all-mixed-offload", LLAMA_7B_4L, 2048, 2, precision="bf16-mixed", finetune="lora",
          activation_offload=True, lora={"r": 16, "alpha": 32, "targets": _ALL_LINEAR}),
    _case("llama-7b-4l-lora16-all-mixed-offload-ckpt", LLAMA_7B_4L, 2048, 2, precision="bf16-mixed",
          recompute="full", finetune="lora", activation_offload=True,
          lora={"r": 16, "alpha": 32, "targets": _ALL_LINEAR}),
    _case("llama-7b-2l-bf16-offload", LLAMA_7B_2L, 2048, 2, activation_offload=True),
    # selective recompute: torchtitan's op-level SAC policy
    _case("llama-7b-4l-bf16-selective", LLAMA_7B_4L, 2048, 1, recompute="selective"),
    _case("tiny-llama-mixed-selective", TINY_LLAMA, 1024, 2, precision="bf16-mixed", recompute="selective"),
    _case("tiny-llama-bf16-eager-selective", TINY_LLAMA, 512, 2, attention="eager", recompute="selective"),
    # QLoRA with bitsandbytes' own 4-bit matmul (validation/qlora.py): 16-bit base, NF4 projections
    _case("llama-7b-4l-qlora64-all-mixed-drop05", LLAMA_7B_4L, 2048, 2, precision="bf16-mixed", finetune="qlora",
          lora={"r": 64, "alpha": 16, "targets": _ALL_LINEAR, "dropout": 0.05}),
    _case("llama-7b-4l-qlora64-all-mixed-ckpt-chunked", LLAMA_7B_4L, 2048, 4, precision="bf16-mixed",
          recompute="full", loss="chunked", finetune="qlora",
          lora={"r": 64, "alpha": 16, "targets": _ALL_LINEAR, "dropout": 0.1}),
    _case("llama-7b-4l-qlora16-qv-bf16-nodq-chunked", LLAMA_7B_4L, 2048, 2, precision="bf16", finetune="qlora",
          loss="chunked", qlora={"double_quant": False}, lora={"r": 16, "alpha": 32, "targets": _QV}),
    _case("llama-7b-4l-qlora64-all-mixed-kbit", LLAMA_7B_4L, 2048, 1, precision="bf16-mixed", finetune="qlora",
          base_dtype="fp32", lora={"r": 64, "alpha": 16, "targets": _ALL_LINEAR, "dropout": 0.1}),
    # eager attention at LLaMA-7B shapes, pure bf16, 2048 tokens (the held-out case)
    _case("llama-7b-4l-bf16-eager-s2048", LLAMA_7B_4L, 2048, 1, attention="eager", optimizer_impl="for-loop"),
]
CASES += RECIPE_CASES

# --- calibration against the published LitGPT peaks (validation/published.jsonl): LitGPT's recipe, each
# mechanism on its own and together. bf16-true (everything bf16, adapters too), LoRA on q and v with dropout
# 0.05, LitGPT's chunked head and loss with Fabric's fp32 output; QLoRA as Lightning's BitsandbytesPrecision runs
# it on the bitsandbytes LitGPT pinned (0.41.1 in 2023, 0.42.0 in 2024: MatMul4Bit keeps its input).
_LITGPT_LORA = {"r": 8, "alpha": 16, "targets": _QV, "dropout": 0.05}
CALIBRATION_CASES: list[dict] = [
    _case("qwen2-152k-2l-bf16-chunkedhead", QWEN2_SMALL_VOCAB152K, 1024, 2, loss="chunked-head"),
    _case("llama-7b-4l-lora8-qv-bf16-chunkedhead", LLAMA_7B_4L, 2048, 1, finetune="lora", adapter_dtype="bf16",
          loss="chunked-head", lora=_LITGPT_LORA),
    _case("llama3-8b-2l-lora32-qv-bf16-chunkedhead-accum2", LLAMA3_8B_2L, 1024, 1, finetune="lora",
          adapter_dtype="bf16", loss="chunked-head", grad_accum=2,
          lora={"r": 32, "alpha": 16, "targets": _QV, "dropout": 0.05}),
    _case("llama-7b-4l-qlora16-qv-bf16-bnb042", LLAMA_7B_4L, 2048, 2, precision="bf16", finetune="qlora",
          qlora={"backend": "bitsandbytes<0.43.2"}, lora={"r": 16, "alpha": 32, "targets": _QV}),
    _case("llama-7b-4l-qlora64-all-mixed-bnb042-accum2", LLAMA_7B_4L, 2048, 1, precision="bf16-mixed",
          finetune="qlora", grad_accum=2, qlora={"backend": "bitsandbytes<0.43.2"},
          lora={"r": 64, "alpha": 16, "targets": _ALL_LINEAR, "dropout": 0.1}),
    _case("llama-7b-4l-qlora16-all-mixed-bnb042-ckpt", LLAMA_7B_4L, 2048, 2, precision="bf16-mixed",
          finetune="qlora", recompute="full", qlora={"backend": "bitsandbytes<0.43.2"},
          lora={"r": 16, "alpha": 32, "targets": _ALL_LINEAR, "dropout": 0.05}),
    _case("llama-7b-4l-qlora8-qv-bf16-lightning-chunkedhead", LLAMA_7B_4L, 2048, 1, finetune="qlora",
          adapter_dtype="bf16", loss="chunked-head", qlora={"backend": "lightning-bitsandbytes<0.43.2",
                                                             "double_quant": False}, lora=_LITGPT_LORA),
    _case("llama3-8b-2l-qlora32-qv-lightning-chunkhead-accum2", LLAMA3_8B_2L, 512, 2, finetune="qlora",
          adapter_dtype="bf16", loss="chunked-head", grad_accum=2,
          qlora={"backend": "lightning-bitsandbytes<0.43.2", "double_quant": False},
          lora={"r": 32, "alpha": 16, "targets": _QV, "dropout": 0.05}),
    _case("llama-7b-4l-qlora16-qv-bf16-lightning-newbnb", LLAMA_7B_4L, 2048, 1, finetune="qlora",
          adapter_dtype="bf16", qlora={"backend": "lightning-bitsandbytes"}, lora={"r": 16, "alpha": 32, "targets": _QV}),
]
CASES += CALIBRATION_CASES
ALL_CASES = CASES + HOLDOUT_CASES

# Quick cases re-measured by `--check` when no case is named.
CHECK_DEFAULT = ["tiny-llama-bf16", "tiny-llama-mixed-ckpt", "tiny-llama-lora8-attn-bf16"]


def get_case(name: str) -> dict:
    for c in ALL_CASES:
        if c["name"] == name:
            return copy.deepcopy(c)
    raise KeyError(f"unknown case {name!r}; see --list")


# --- FSDP2-sharded cases (validation/results_fsdp.json) -------------------------------
# Per-GPU (rank 0) peaks of FSDP2 training: fully_shard on every decoder layer, then the
# root, default options, fake process group of `world_size` ranks. See validation/sharded.py.

LLAMA3_8B_4L = dict(copy.deepcopy(LLAMA3_8B_2L), num_hidden_layers=4)


def _sharded(name, config, seq_len, micro_batch, world_size, **kw) -> dict:
    c = _case(name, config, seq_len, micro_batch, **kw)
    c["fsdp"] = {"world_size": world_size}
    return c


SHARDED_CASES: list[dict] = [
    # world-size sweep on the small model
    _sharded("fsdp1-tiny-llama-bf16", TINY_LLAMA, 512, 2, 1),
    _sharded("fsdp4-tiny-llama-bf16", TINY_LLAMA, 512, 2, 4),
    _sharded("fsdp8-tiny-llama-bf16", TINY_LLAMA, 512, 2, 8),
    # precision x recompute at world size 4
    _sharded("fsdp4-tiny-llama-mixed", TINY_LLAMA, 512, 2, 4, precision="bf16-mixed"),
    _sharded("fsdp4-tiny-llama-bf16-ckpt", TINY_LLAMA, 512, 2, 4, recompute="full"),
    _sharded("fsdp4-tiny-llama-mixed-ckpt", TINY_LLAMA, 512, 2, 4, precision="bf16-mixed",
             recompute="full"),
    # GQA
    _sharded("fsdp8-tiny-llama-gqa-bf16", TINY_LLAMA_GQA, 1024, 2, 8),
    # reduced-depth Llama-3-8B width, world sizes 1/4/8
    _sharded("fsdp1-llama3-8b-4l-bf16", LLAMA3_8B_4L, 2048, 1, 1),
    _sharded("fsdp4-llama3-8b-4l-bf16", LLAMA3_8B_4L, 2048, 1, 4),
    _sharded("fsdp8-llama3-8b-4l-bf16", LLAMA3_8B_4L, 2048, 1, 8),
    _sharded("fsdp8-llama3-8b-4l-mixed-ckpt", LLAMA3_8B_4L, 4096, 1, 8,
             precision="bf16-mixed", recompute="full"),
    # whole 7B model
    _sharded("fsdp8-llama-7b-bf16", LLAMA_7B, 2048, 1, 8),
    _sharded("fsdp8-llama-7b-bf16-ckpt-mb4", LLAMA_7B, 2048, 4, 8, recompute="full"),
]

# Added after memlib's FSDP layout was written from the cases above, to try it on what it
# had not seen: tied embeddings with a 152k vocabulary, Mistral's GQA under AMP, a mixed
# 4-layer LLaMA-2 width with eager attention.
SHARDED_CASES += [
    _sharded("fsdp4-qwen2-152k-2l-bf16", QWEN2_SMALL_VOCAB152K, 1024, 2, 4),
    _sharded("fsdp8-tiny-mistral-mixed-ckpt", TINY_MISTRAL, 2048, 2, 8, precision="bf16-mixed",
             recompute="full"),
    _sharded("fsdp4-llama2-7b-4l-mixed-eager", LLAMA2_7B_4L, 1024, 1, 4, precision="bf16-mixed",
             attention="eager"),
]


for _c in SHARDED_CASES:
    _legacy(_c)
    if _c["precision"].endswith("mixed"):  # fp32 params + autocast, no MixedPrecisionPolicy
        _c["fsdp"]["mp_policy"] = False

# FSDP2 with torchtitan's MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32), foreach AdamW
SHARDED_CASES += [
    _sharded("fsdp4-tiny-llama-mixed-mp", TINY_LLAMA, 512, 2, 4, precision="bf16-mixed"),
    _sharded("fsdp8-llama3-8b-4l-mixed-mp-ckpt", LLAMA3_8B_4L, 4096, 1, 8, precision="bf16-mixed",
             recompute="full"),
    _sharded("fsdp8-llama-7b-4l-mixed-mp", LLAMA_7B_4L, 2048, 1, 8, precision="bf16-mixed"),
]

# LoRA on an fp32 base under FSDP2's MixedPrecisionPolicy(bf16, fp32 reduce), as RL trainers run their actors
# (verl loads the actor in fp32, wraps it with peft, then shards it): each unit gathered in 16 bits as it runs.
_LORA_ALL = {"r": 16, "alpha": 32, "targets": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                               "down_proj"], "dropout": 0.0}
SHARDED_CASES += [
    _sharded("fsdp4-tiny-llama-lora-fp32base-mixed", TINY_LLAMA, 512, 2, 4, precision="bf16-mixed",
             finetune="lora", lora=_LORA_ALL, base_dtype="fp32"),
    _sharded("fsdp8-llama3-8b-4l-lora-fp32base-mixed", LLAMA3_8B_4L, 2048, 1, 8, precision="bf16-mixed",
             finetune="lora", lora=_LORA_ALL, base_dtype="fp32"),
    _sharded("fsdp8-llama3-8b-4l-lora-fp32base-mixed-ckpt", LLAMA3_8B_4L, 2048, 1, 8, precision="bf16-mixed",
             finetune="lora", lora=_LORA_ALL, base_dtype="fp32", recompute="full"),
]

# Quick case re-measured by `--sharded --check` when no case is named.
SHARDED_CHECK_DEFAULT = ["fsdp4-tiny-llama-bf16"]


def get_sharded_case(name: str) -> dict:
    for c in SHARDED_CASES:
        if c["name"] == name:
            return copy.deepcopy(c)
    raise KeyError(f"unknown sharded case {name!r}; see --sharded --list")
