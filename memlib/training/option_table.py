"""The options of estimate_training, declared once: name, kind, accepted values, default, its source, one help line.

Everything else is generated from OPTIONS by memlib/options.py's OptionTable, the machinery estimate_inference's
table (serving/inference.py: SERVING_OPTIONS) uses too, with the same kinds and validators:

    estimate_training's signature and help()      training/__init__.py: document()
    TrainingSetup.create / .replace, the presets   training/options.py: defaults(), validate()
    the recipe presets' keys and values           training/recipes.py: checked against the table at import
    `memlib estimate` / `memlib fit` flags         cli.py: add_arguments()
    the option table in docs/usage.md             tools/make_option_table.py (--check in the tests)

Each value is checked by its kind's one validator (memlib.options.KINDS, shared with serving; the kinds only
training has are registered below): a flag is True or False, never the string "false";
a choice is one of its values, never a list; a count is a positive integer, never 2.0 or True; a probability is in
[0, 1). Options that depend on each other (LoRA options under finetune='full', zero_stage against dp, ...) are
checked after this, in training/options.py.

Adding an option: one Option(...) entry below (signature, help, CLI flag, docs row and value check follow), a
TrainingSetup field of the same name (options.py), and the term that reads it. See docs/architecture.md.
"""

from __future__ import annotations

import argparse
import numbers

from memlib._checks import positive_int, show
from memlib.options import KINDS, Kind, Option, OptionTable, option, register_kind  # noqa: F401 (re-exported)
from memlib.training.lora import TARGET_GROUPS
from memlib.training.optimizers import OPTIMIZERS

PRECISIONS = ("fp32", "bf16", "fp16", "bf16-mixed", "fp16-mixed")
FINETUNES = ("full", "lora", "qlora")
RECOMPUTES = ("none", "selective", "full")
ATTENTIONS = ("sdpa", "eager")
OFFLOADS = ("none", "optimizer", "optimizer+params")
OFFLOAD_DEVICES = ("cpu", "nvme")
OPTIMIZER_IMPLS = ("foreach", "fused", "for-loop")  # torch.optim's implementations (foreach: CUDA's default)
ADAPTER_DTYPES = ("fp32", "bf16", "fp16")  # fp32: peft's autocast_adapter_dtype=True (its default)
BASE_DTYPES = ("auto", "fp32", "bf16", "fp16")  # LoRA/QLoRA frozen base; auto: 16-bit unless precision fp32
# bitsandbytes >= 0.43.2 (MatMul4Bit keeps only the packed weight); before 0.43.2 it also kept each 4-bit
# matmul's 16-bit input (`ctx.tensors = (A, B)`, bitsandbytes PR #1270); "lightning-": Lightning Fabric's
# BitsandbytesPrecision, LitGPT's QLoRA (every nn.Linear in 4 bits, lm_head too, quantized from fp16);
# torchao's NF4Tensor (torchtune).
QLORA_BACKENDS = ("bitsandbytes", "bitsandbytes<0.43.2", "lightning-bitsandbytes", "lightning-bitsandbytes<0.43.2",
                  "torchao")
# full: transformers' loss over the full logits; chunked: Liger's fused linear cross-entropy (no logits);
# chunked-head: LitGPT's head in 128-token chunks, fp32 under Lightning Fabric, cross-entropy per chunk.
LOSSES = ("full", "chunked", "chunked-head")
# The dtype transformers-style cross-entropy works in over the full logits: "fp32" (ForCausalLMLoss's
# logits.float(), and what autocast does to cross_entropy/log_softmax/nll_loss: torch's CUDA ops that autocast to
# float32) or "16-bit": F.cross_entropy called on the bf16/fp16 logits as they are, in a loop without autocast
# (precision 'bf16'/'fp16': model.to(bf16), a custom loop over out.logits), so log_softmax keeps a 16-bit output.
LOSS_DTYPES = ("fp32", "16-bit")
# float8 training of the decoder's linear layers: "none", or "torchao" (torchao.float8 Float8Linear, torchtitan's
# --model.converters float8; pytorch/ao@36027d8 torchao/float8/float8_linear.py matmul_with_hp_or_float8_args saves
# (input_hp, weight_hp_t), the high-precision tensors, so the saved activations and the model states are bf16's)
FLOAT8S = ("none", "torchao")
# How ring attention exchanges K/V between the context-parallel GPUs (torch's _RotateMethod; torchtitan's
# parallelism.context_parallel_rotate_method, default "allgather"): one all-gather of every rank's K/V, or
# cp - 1 ring rotations of one block (all_to_all / permute_tensor).
CP_ROTATES = ("allgather", "alltoall")
# Whose memory layout: "auto" (DeepSpeed's for an integer zero_stage over dp > 1, Megatron's under tp/pp with a
# *-mixed precision, FSDP's for its names, torch's otherwise), "megatron" (Megatron-Core's on any parallelism:
# 16-bit params, fp32 main grads, fp32 master + Adam; zero_stage=1 is its distributed optimizer), "deepspeed"
# (DeepSpeed's ZeRO, on one GPU too) or "megatron-deepspeed" (Megatron's model and loss, DeepSpeed's ZeRO states).
LAYOUTS = ("auto", "megatron", "deepspeed", "megatron-deepspeed")
# Megatron-Core's --cross-entropy-loss-fusion with --cross-entropy-fusion-impl (None: the flag off, Megatron's default)
MEGATRON_CE_FUSIONS = (None, "native", "te")
# FSDP's sharding strategies, accepted as zero_stage, mean PyTorch's layout (parameters,
# gradients and AdamW states in the parameter dtype; AMP keeps them fp32).
FSDP_ALIASES = {"FULL_SHARD": 3, "SHARD_GRAD_OP": 2, "NO_SHARD": 0}


def zero_stage_of(zero_stage) -> tuple[int, bool]:
    """(stage, is an FSDP name). Integers 0-3, or those digits as a string ("3"), are DeepSpeed stages."""
    if isinstance(zero_stage, str):
        name = zero_stage.strip()
        if name in ("0", "1", "2", "3"):
            return int(name), False
        if name.upper() not in FSDP_ALIASES:
            raise ValueError(f"unknown zero_stage {show(zero_stage)}; accepted: 0, 1, 2, 3 (DeepSpeed ZeRO) or "
                             f"{', '.join(FSDP_ALIASES)} (PyTorch FSDP)")
        return FSDP_ALIASES[name.upper()], True
    zero_stage = positive_int("zero_stage", zero_stage, allow_zero=True)
    if zero_stage > 3:
        raise ValueError(f"zero_stage must be 0, 1, 2 or 3 (or an FSDP name: {', '.join(FSDP_ALIASES)}), "
                         f"got {zero_stage}")
    return zero_stage, False


# --- the kinds: one validator each, what it accepts in words, its Python type and its command-line parsing ------
def _targets(name: str, value):
    """LoRA targets: a group name or module names (checked against the model by lora.resolve_targets)."""
    if isinstance(value, (list, tuple, set, frozenset)) and not value:
        raise ValueError(f"{name} is empty; name at least one projection")
    if isinstance(value, str) or (isinstance(value, (list, tuple, set, frozenset))
                                  and all(isinstance(t, str) for t in value)):
        return value
    raise ValueError(f"{name} must be projection names (a list of strings) or a group name "
                     f"({', '.join(TARGET_GROUPS)}), got {show(value)}")


def _layer_counts(name: str, value):
    if isinstance(value, (list, tuple)) and value and all(
            isinstance(n, numbers.Integral) and not isinstance(n, bool) and n > 0 for n in value):
        return tuple(int(n) for n in value)
    raise ValueError(f"{name} must be a list or tuple of positive layer counts, one per pipeline stage, got "
                     f"{show(value)}")


def _ce_fusion(name: str, value):
    if isinstance(value, bool):
        return "native" if value else None
    if value in ("native", "te"):
        return value
    raise ValueError(f"unknown {name} {show(value)}; accepted: None (the flag off), True or 'native', 'te'")


def _deferral(name: str, value):
    if isinstance(value, bool):
        return 0 if value else None
    if isinstance(value, numbers.Integral) and value >= 0:
        return int(value)
    raise ValueError(f"{name} must be None, True or a micro-batch count >= 0 (Megatron's --wgrad-deferral-limit; 0 "
                     f"defers every micro-batch), got {show(value)}")


def _cli_zero_stage(text: str):
    """'0'-'3' as the integer stage; anything else goes on as a name (FULL_SHARD, ...) for the check to accept or
    refuse with the accepted list. ASCII digits only: '³'.isdigit()."""
    return int(text) if text.isascii() and text.isdecimal() else text


def _cli_targets(text: str):
    text = text.strip()
    return text if text in TARGET_GROUPS or text == "lm_head" else [t.strip() for t in text.split(",") if t.strip()]


def _cli_layer_counts(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(n) for n in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected layer counts separated by commas such as 2,4,4,2, got {text!r}") \
            from None


# the kinds only training has (flag, choice, count, ... are memlib.options.KINDS, shared with serving)
for _name, _kind in {
    "zero_stage": Kind("0, 1, 2, 3 (DeepSpeed ZeRO) or FULL_SHARD, SHARD_GRAD_OP, NO_SHARD (PyTorch FSDP)",
                       lambda n, v, _: (zero_stage_of(v), v)[1], "int | str",
                       {"type": _cli_zero_stage, "metavar": "STAGE"}),
    "targets": Kind("projection names or a group: " + ", ".join(TARGET_GROUPS), lambda n, v, _: _targets(n, v),
                    "str | list[str]", {"type": _cli_targets, "metavar": "NAMES"}),
    "layer_counts": Kind("layer counts, one per pipeline stage", lambda n, v, _: _layer_counts(n, v), "tuple[int, ...]",
                         {"type": _cli_layer_counts, "metavar": "N,N,..."}),
    "ce_fusion": Kind("'native' (or True) or 'te'", lambda n, v, _: _ce_fusion(n, v), "str | bool",
                      {"choices": ("native", "te")}),
    "deferral": Kind("True or a micro-batch count >= 0", lambda n, v, _: _deferral(n, v), "int | bool",
                     {"type": int, "metavar": "N"}),
}.items():
    register_kind(_name, _kind)
del _name, _kind


_o = option  # option(name, kind, default, help, source, values=(), none="", positional=False)


MEMLIB = "memlib's convention"
MEGATRON_ONLY = "Megatron-Core's default (layout='megatron')"
OPTIONS: dict[str, Option] = {o.name: o for o in (
    # estimate_training's positional parameters, in order
    _o("seq_len", "count", 2048, "tokens per sequence",
       f"{MEMLIB}: LLaMA-1's training context, 2048 tokens (Touvron et al. 2023, Llama 2 paper Sec. 2.2)",
       positional=True),
    _o("micro_batch", "count", 1, "sequences per micro-batch on one GPU",
       f"{MEMLIB}: the smallest run (transformers' per_device_train_batch_size is 8)", positional=True),
    _o("precision", "choice", "bf16-mixed", "'*-mixed': fp32 params, grads and states under autocast; 'bf16'/'fp16': "
       "everything in that dtype", "HF Trainer bf16=True: torch.autocast over fp32 weights (design.md, 'Defaults "
       "mean the common recipe')", PRECISIONS, positional=True),
    _o("optimizer", "choice", "adamw", "the optimizer whose states are held",
       "transformers TrainingArguments.optim: AdamW (adamw_torch, adamw_torch_fused on torch >= 2.8)", OPTIMIZERS,
       positional=True),
    _o("finetune", "choice", "full", "train every weight, or LoRA adapters on a 16-bit (lora) or 4-bit (qlora) base",
       MEMLIB, FINETUNES, positional=True),
    _o("lora_rank", "count", 16, "LoRA rank r: r x (in + out) parameters per adapted matrix (lora/qlora only)",
       f"{MEMLIB} (peft's LoraConfig r defaults to 8; the recipes use 8-64)", positional=True),
    _o("lora_targets", "targets", None, "the projections LoRA adapts (lora/qlora only)",
       "peft's default for LLaMA, q_proj and v_proj (Hu et al. 2021, Sec. 7.1)", none="q_proj, v_proj",
       positional=True),
    _o("recompute", "choice", "none", "activation recompute: 'full' keeps each layer's input, 'selective' "
       "torchtitan's op-level policy", "transformers' gradient_checkpointing=False", RECOMPUTES, positional=True),
    _o("attention", "choice", "sdpa", "'sdpa' stores no s x s scores; 'eager' keeps the attention probabilities",
       "transformers' attn_implementation default, sdpa", ATTENTIONS, positional=True),
    _o("zero_stage", "zero_stage", 0, "ZeRO stage over the dp GPUs (DeepSpeed's layout), or an FSDP strategy "
       "(PyTorch's layout); dp=1 shards nothing", "no sharding (DeepSpeed's zero_optimization.stage defaults to 0)",
       positional=True),
    _o("dp", "count", 1, "data-parallel GPUs", "one GPU", positional=True),
    _o("tp", "count", 1, "tensor-parallel GPUs (Megatron; whole heads per GPU)", "one GPU", positional=True),
    _o("pp", "count", 1, "pipeline stages (1F1B)", "one GPU", positional=True),
    _o("offload", "choice", "none", "ZeRO-Offload ('optimizer') or ZeRO-Infinity ('optimizer+params', stage 3)",
       "DeepSpeed's offload_optimizer / offload_param: none", OFFLOADS, positional=True),
    _o("offload_device", "choice", "cpu", "where offload goes (with offload only)",
       "ZeRO-Offload's host memory (offload_optimizer.device 'cpu'; 'nvme' is ZeRO-Infinity's)", OFFLOAD_DEVICES, positional=True),
    _o("grad_accum", "count", 1, "micro-batches per step: gradients stay alive through the next micro-batch (and "
       "what 1F1B keeps in flight)", "TrainingArguments.gradient_accumulation_steps=1", positional=True),
    _o("sequence_parallel", "flag", False, "Megatron's sequence parallelism (tp > 1): norms and dropouts sharded",
       "Megatron-LM's --sequence-parallel is off by default", positional=True),
    # keyword-only
    _o("optimizer_impl", "choice", "foreach", "torch.optim's implementation: 'foreach' holds a state-sized "
       "temporary at the step, 'fused' none", "torch.optim on CUDA: _default_to_fused_or_foreach picks foreach",
       OPTIMIZER_IMPLS),
    _o("lora_dropout", "probability", 0.0, "LoRA dropout: each adapter keeps its mask and dropped input",
       "peft's LoraConfig.lora_dropout=0.0"),
    _o("adapter_dtype", "choice", "fp32", "the LoRA adapters' dtype", "peft's autocast_adapter_dtype=True (fp32 "
       "adapters)", ADAPTER_DTYPES),
    _o("base_dtype", "choice", "auto", "the LoRA/QLoRA frozen base's dtype; auto: the precision's 16-bit type (fp32 "
       "under 'fp32')", "the base loaded with torch_dtype=bf16, as the recipes do", BASE_DTYPES),
    _o("qlora_backend", "choice", "bitsandbytes", "whose 4-bit layers (qlora only): bitsandbytes' before 0.43.2 keep "
       "each matmul's input; Lightning's quantize lm_head too; torchao's NF4Tensor", "transformers + PEFT on "
       "bitsandbytes >= 0.43.2", QLORA_BACKENDS),
    _o("double_quant", "flag", True, "QLoRA's double quantization: 4.127 instead of 4.5 bits per weight",
       "the QLoRA recipe, bnb_4bit_use_double_quant=True (Dettmers et al. 2023, Sec. 3)"),
    _o("loss", "choice", "full", "'full': fp32 logits and log-softmax; 'chunked': Liger's fused linear cross-entropy; "
       "'chunked-head': LitGPT's head in 128-token chunks", "transformers' ForCausalLMLoss over the full logits",
       LOSSES),
    _o("activation_offload", "flag", False, "torchtune's activation offloading: saved activations in host memory",
       "torchtune's enable_activation_offloading: False"),
    _o("fsdp_mixed_precision", "flag", True, "FSDP with MixedPrecisionPolicy(param bf16, reduce fp32); False: fp32 "
       "parameters under autocast", "torchtitan's FSDP2 mixed precision policy"),
    _o("ep", "count", 1, "MoE: expert-parallel GPUs within dp, each holding num_experts / ep whole experts",
       "no expert parallelism (DeepSpeed-MoE ep_size=1, Megatron's --expert-model-parallel-size 1)"),
    _o("router_aux_loss", "flag", True, "MoE: the router's load-balancing loss where the family has one",
       "LLaMA-Factory and Megatron turn output_router_logits / the aux loss on"),
    _o("capacity_factor", "positive", None, "MoE: each expert's buffer is capacity_factor x tokens x top-k / experts "
       "rows; the overflow is dropped (GShard)", "dropless routing: transformers, torchtitan, Megatron's "
       "--moe-expert-capacity-factor None", none="dropless: every token routed"),
    _o("cp", "count", 1, "context parallelism: each sequence split over cp GPUs (ring attention; seq_len divisible "
       "by 2 x cp)", "none"),
    _o("cp_rotate", "choice", "allgather", "how ring attention exchanges K/V between the cp GPUs",
       "torchtitan's context_parallel_rotate_method default", CP_ROTATES),
    _o("gradient_as_bucket_view", "flag", False, "torch DDP (dp > 1, zero_stage=0): gradients as views into the "
       "all-reduce buckets, no second copy", "torch DistributedDataParallel's default (HF Trainer, Accelerate)"),
    _o("layout", "choice", "auto", "whose memory layout: 'auto' what the options imply; 'megatron' Megatron-Core's; "
       "'deepspeed' ZeRO's even on one GPU; 'megatron-deepspeed'", MEMLIB, LAYOUTS),
    _o("reduce_bucket_size", "count", 500_000_000, "DeepSpeed's gradient bucket in elements (2 bytes each, x2 with "
       "overlap_comm under ZeRO-1/2)", "DeepSpeed runtime/zero/config.py: reduce_bucket_size 5e8"),
    _o("overlap_comm", "flag", None, "DeepSpeed's overlap_comm: a second gradient bucket",
       "DeepSpeed runtime/zero/config.py overlap_comm_valid", none="DeepSpeed's: on for stage 3 only"),
    _o("contiguous_gradients", "flag", True, "DeepSpeed's contiguous gradient buffer",
       "DeepSpeed runtime/zero/config.py: contiguous_gradients True"),
    _o("zero_init", "flag", True, "ZeRO-3: the model was built under deepspeed.zero.Init; False: torch's linear "
       "keeps each layer's gathered weights to its backward", "transformers' from_pretrained under ZeRO-3 "
       "(HfDeepSpeedConfig) builds under zero.Init"),
    _o("vpp", "count", 1, "Megatron: model chunks per pipeline GPU, interleaved 1F1B (pp > 1)",
       f"{MEGATRON_ONLY}: no interleaving"),
    _o("hidden_dropout", "probability", None, "Megatron's --hidden-dropout: a 1-byte mask per residual element, "
       "twice a layer", "Megatron-Core's TransformerConfig 0.1 (GPT layers); its LLaMA scripts set 0.0",
       none="0.1 for GPT layers, else 0"),
    _o("attention_dropout", "probability", None, "Megatron's --attention-dropout (attention='eager'): a mask and the "
       "dropped 16-bit probabilities", "Megatron-Core's TransformerConfig 0.1 (GPT layers); its LLaMA scripts set 0.0",
       none="0.1 for GPT layers, else 0"),
    _o("megatron_ce_inplace", "flag", None, "Megatron's loss subtracts the logits' max in place (Megatron-LM since "
       "9634c0e, 2024-06); False: 4 more bytes per logit", "Megatron-LM core/tensor_parallel/cross_entropy.py",
       none="the layout's: in place for 'megatron', out of place for 'megatron-deepspeed'"),
    _o("megatron_ce_fusion", "ce_fusion", None, "Megatron's --cross-entropy-loss-fusion: 'native' 10 bytes per "
       "logit in its backward, 'te' 2", f"{MEGATRON_ONLY}: the flag off", none="the flag off"),
    _o("megatron_wgrad_deferral", "deferral", None, "Megatron's --defer-embedding-wgrad-compute with "
       "--wgrad-deferral-limit N (pp > 1): the head's inputs held to the pipeline flush", f"{MEGATRON_ONLY}: off",
       none="off"),
    _o("keep_outputs", "flag", True, "the loop keeps the model's output (its logits) until the next forward; False as "
       "HF Trainer's compute_loss does", "a custom loop's `out = model(...); out.loss.backward()`"),
    _o("etp", "count", None, "MoE, layout='megatron': Megatron's --expert-tensor-parallel-size",
       "Megatron-Core: the expert tensor-parallel size defaults to tp", none="tp"),
    _o("pp_split", "layer_counts", None, "pp > 1: each stage's decoder layers, first to last (Megatron's "
       "--decoder-first/last-pipeline-num-layers)", "Megatron's even split", none="an even split"),
    _o("lora_head", "flag", False, "LoRA on lm_head too: r(h+V) params, grads, states, saved input",
       "LitGPT's lora_head=False (lora.py@43c4432); peft adapts lm_head only when target_modules names it "
       "(peft@5d602fd)"),
    _o("loss_dtype", "choice", "fp32", "cross-entropy on 16-bit logits, no fp32 upcast ('16-bit', precision "
       "'bf16'/'fp16' only)", "transformers' ForCausalLMLoss upcasts the logits (logits.float()); torch autocast's "
       "fp32 op list (cross_entropy, log_softmax, nll_loss)", LOSS_DTYPES),
    _o("float8", "choice", "none", "torchao Float8Linear: bf16's bytes (saved inputs and states as bf16)",
       "torchao's float8 is opt-in (pytorch/ao@36027d8 torchao/float8/float8_linear.py; torchtitan's "
       "--model.converters float8)", FLOAT8S),
    _o("compile", "flag", False, "torch.compile, full recompute only (recompute='full')",
       "eager mode, as torch runs by default (torchao float8 README@d99785c; torchtitan benchmark@31a17bf)"),
)}


TABLE = OptionTable("memlib.training.option_table.OPTIONS", OPTIONS)
close_names = TABLE.close_names      # ' (did you mean zero_stage?)' for misspelt option names, or ''
defaults = TABLE.defaults            # {name: default} of every option, read from the table now
complete = TABLE.complete            # the given options and the table's defaults for the rest
validate = TABLE.validate            # each option checked by its kind's validator
signature = TABLE.signature          # the table as an inspect.Signature
docstring = TABLE.docstring          # help(): one line per option
document = TABLE.document            # give a function the table's signature and help text
add_arguments = TABLE.add_arguments  # one command-line flag per option
markdown_table = TABLE.markdown_table  # the docs' option table
