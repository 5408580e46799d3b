"""Command line: `memlib estimate MODEL [options]`, `memlib serve MODEL [options]`, `memlib models`, `memlib gpus`;
for teachers `memlib quiz --topic NN --seed S` and `memlib class-report FOLDER` (memlib.learn.classroom)."""

from __future__ import annotations

import argparse
import json
import math
import sys

from memlib.training import lora as lora_mod
from memlib._checks import MAX_INT, positive_int
from memlib.hardware.fit import DEFAULT_ALLOCATOR_HEADROOM, DEFAULT_CUDA_CONTEXT_BYTES, fits
from memlib import training
from memlib.serving import inference
from memlib.training import optimizers
from memlib.hardware.gpus import list_gpus
from memlib.models import Model, get_model, list_models
from memlib.units import fmt_bytes, gb, gib

COMMON_GPUS = ("t4", "l4", "a10", "rtx-3090", "rtx-4090", "v100-32gb", "a100-40gb", "a100-80gb", "h100-80gb", "h200")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (the message and where to find help), exit 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} -h)\n")


def _host_ram_gib(text: str) -> float:
    """--host-ram-gib: a finite number >= 0 (0 means no host RAM for offload)."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of GiB, got {text!r}") from None
    if not math.isfinite(x) or x < 0 or x * 2**30 > MAX_INT:
        raise argparse.ArgumentTypeError(f"expected a finite number of GiB >= 0 and <= 2**23, got {text!r}")
    return x


def _layer_counts(text: str) -> tuple[int, ...]:
    """--pp-split: comma-separated layer counts, one per pipeline stage."""
    try:
        return tuple(int(n) for n in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected layer counts separated by commas such as 2,4,4,2, got {text!r}") \
            from None


def _headroom(text: str) -> float:
    """--allocator-headroom: a fraction of the peak in [0, 1)."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction of the peak such as 0.05, got {text!r}") from None
    if not 0 <= x < 1:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"expected a fraction of the peak in [0, 1), got {text!r}")
    return x


def _utilisation(text: str) -> float:
    """--mfu / --hfu: a fraction of the dense peak in (0, 1]."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction of the peak such as 0.4, got {text!r}") from None
    if not 0 < x <= 1:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"expected a fraction of the peak in (0, 1], got {text!r}")
    return x


MFU_HELP = ("training: rank layouts at this model-FLOPs utilisation, MFU (model FLOPs 6N + attention, recompute not "
            "counted, PaLM App. B): every layout gets the same MFU, so recompute looks free; not with --hfu")
HFU_HELP = ("training: rank layouts at this hardware-FLOPs utilisation, HFU (every FLOP the GPU runs, recompute "
            "included: recompute costs its time). Default 0.4 when neither --mfu nor --hfu is given")

HEADROOM_HELP = ("allocator headroom on top of the peak, a fraction of it (default 0.05; published FSDP runs reserve "
                 "up to 0.24 more than they allocate: 0.25 plans with that margin)")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="memlib", description="GPU memory to train, fine-tune or serve an LLM.")
    sub = p.add_subparsers(dest="command", required=True)
    _add_estimate(sub)
    _add_serve(sub)
    _add_fit(sub)
    sub.add_parser("models", help="list catalog models with exact parameter counts")
    sub.add_parser("gpus", help="list catalog GPUs with capacity in GB and GiB")
    _add_classroom(sub)
    return p


def _add_estimate(sub) -> None:
    """`memlib estimate`: the training options of estimate_training, one flag each."""
    e = sub.add_parser("estimate", help="peak training memory on one GPU, its breakdown and per-GPU verdicts",
                       description="Peak memory of one training step on one GPU (the max over forward, "
                                   "backward and optimizer step), what is alive then, and whether it fits "
                                   "common GPUs. Sizes are shown in GB (1e9) and GiB (2**30).")
    e.add_argument("model", nargs="?", help=f"catalog name ({', '.join(list_models())})")
    e.add_argument("--hf-config", metavar="PATH", help="a Hugging Face config.json (or its folder) instead of a name")
    e.add_argument("--recipe", choices=tuple(training.RECIPES), default=None,
                   help="start from a framework's defaults (memlib.RECIPES); flags set away from their default override it")
    e.add_argument("--seq-len", type=int, default=None, help="tokens per sequence (default 2048)")
    e.add_argument("--micro-batch", type=int, default=None, help="sequences per step on one GPU (default 1)")
    e.add_argument("--precision", default=None, choices=training.PRECISIONS, help="default bf16-mixed")
    e.add_argument("--optimizer", default=None, choices=optimizers.OPTIMIZERS, help="default adamw")
    e.add_argument("--finetune", default=None, choices=training.FINETUNES, help="default full")
    e.add_argument("--lora-rank", type=int, help="LoRA rank (LoRA/QLoRA; default 16)")
    e.add_argument("--lora-targets",
                   help="comma-separated projections or a group: " + ", ".join(lora_mod.TARGET_GROUPS)
                        + " (LoRA/QLoRA; default q_proj,v_proj)")
    e.add_argument("--lora-dropout", type=float, default=None, help="LoRA dropout probability (default 0)")
    e.add_argument("--adapter-dtype", default=None, choices=training.ADAPTER_DTYPES,
                   help="LoRA adapters' dtype (default fp32, peft's autocast_adapter_dtype=True)")
    e.add_argument("--base-dtype", default=None, choices=training.BASE_DTYPES,
                   help="LoRA/QLoRA frozen base dtype (default auto: 16-bit unless --precision fp32)")
    e.add_argument("--qlora-backend", default=None, choices=training.QLORA_BACKENDS, help="default bitsandbytes")
    e.add_argument("--no-double-quant", action="store_true", help="QLoRA without double quantization")
    e.add_argument("--optimizer-impl", default=None, choices=training.OPTIMIZER_IMPLS,
                   help="torch.optim implementation (default foreach, torch's CUDA default)")
    e.add_argument("--loss", default=None, choices=training.LOSSES,
                   help="full logits, or chunked: Liger's fused linear cross-entropy (default full)")
    e.add_argument("--loss-dtype", default=None, choices=training.LOSS_DTYPES,
                   help="fp32 (default: the logits upcast before cross-entropy) or 16-bit (F.cross_entropy on the "
                        "bf16/fp16 logits, precision bf16/fp16 only)")
    e.add_argument("--lora-head", action="store_true",
                   help="a LoRA adapter on lm_head too (LitGPT's lora_head; peft's target_modules with lm_head)")
    e.add_argument("--float8", default=None, choices=training.FLOAT8S,
                   help="torchao: torchao's Float8Linear on the decoder's linears (torchtitan's float8 converter)")
    e.add_argument("--compile", action="store_true", help="torch.compile (modelled with --recompute full only)")
    e.add_argument("--activation-offload", action="store_true", help="torchtune's activation offloading to CPU")
    e.add_argument("--no-fsdp-mixed-precision", action="store_true",
                   help="FSDP with fp32 params under autocast instead of MixedPrecisionPolicy(bf16, fp32 reduce)")
    e.add_argument("--recompute", default=None, choices=training.RECOMPUTES, help="default none")
    e.add_argument("--attention", default=None, choices=training.ATTENTIONS, help="default sdpa")
    e.add_argument("--zero-stage", default=None,
                   help="ZeRO stage 0-3 (DeepSpeed layout; with --dp 1 it shards nothing) or an FSDP strategy: "
                        "FULL_SHARD, SHARD_GRAD_OP, NO_SHARD")
    e.add_argument("--dp", type=int, default=None, help="data-parallel GPUs (default 1)")
    e.add_argument("--tp", type=int, default=None, help="tensor-parallel GPUs (Megatron; default 1)")
    e.add_argument("--sequence-parallel", action="store_true", default=None, help="Megatron sequence parallelism (with --tp)")
    e.add_argument("--pp", type=int, default=None, help="pipeline stages (1F1B; default 1)")
    e.add_argument("--grad-accum", type=int, default=None, help="micro-batches per step (default 1)")
    e.add_argument("--pp-split", type=_layer_counts, default=None, metavar="N,N,...",
                   help="decoder layers of each pipeline stage, first to last (e.g. 2,4,4,2 for Megatron's "
                        "--decoder-first/last-pipeline-num-layers 2; default: an even split)")
    e.add_argument("--ep", type=int, default=None,
                   help="MoE: expert-parallel GPUs within --dp (experts split whole over them; default 1)")
    e.add_argument("--etp", type=int, default=None, help="MoE, --layout megatron: Megatron's "
                   "--expert-tensor-parallel-size (default: --tp)")
    e.add_argument("--capacity-factor", type=float, default=None,
                   help="MoE: expert capacity factor (tokens beyond it dropped; default: dropless)")
    e.add_argument("--no-router-aux-loss", action="store_true",
                   help="MoE: without the router's load-balancing loss (output_router_logits off)")
    e.add_argument("--cp", type=int, default=None,
                   help="context parallelism: each sequence split over CP GPUs, ring attention (seq-len divisible "
                        "by 2 x CP; default 1)")
    e.add_argument("--cp-rotate", default=None, choices=training.CP_ROTATES,
                   help="ring attention's K/V exchange with --cp (default allgather, torchtitan's)")
    e.add_argument("--offload", default=None, choices=training.OFFLOADS, help="ZeRO-Offload/Infinity (default none)")
    e.add_argument("--offload-device", choices=training.OFFLOAD_DEVICES, help="with --offload (default cpu)")
    _add_megatron_flags(e)
    e.add_argument("--no-zero-init", action="store_true",
                   help="ZeRO-3 on a model built before deepspeed.initialize (not under zero.Init): torch's linear "
                        "keeps every layer's gathered weights until its backward")
    e.add_argument("--no-keep-outputs", action="store_true",
                   help="the loop drops the model's output (its logits) before the backward, as HF Trainer does "
                        "(--recipe hf-trainer sets it)")
    e.add_argument("--gpu", action="append", help="GPU(s) for the verdict (repeatable; default: common GPUs)")
    e.add_argument("--allocator-headroom", type=_headroom, default=DEFAULT_ALLOCATOR_HEADROOM, help=HEADROOM_HELP)
    e.add_argument("--json", action="store_true", help="machine-readable output")
    e.add_argument("--explain", action="store_true", help="print the step-by-step derivation (markdown)")


def _add_megatron_flags(e) -> None:
    """The layout flag and Megatron-Core's own options."""
    e.add_argument("--layout", default=None, choices=training.options.LAYOUTS,
                   help="megatron: Megatron-Core's layout on any parallelism (default auto)")
    e.add_argument("--vpp", type=int, default=None,
                   help="Megatron: model chunks per pipeline GPU, interleaved 1F1B (with --layout megatron --pp > 1)")
    e.add_argument("--hidden-dropout", type=float, default=None,
                   help="Megatron: --hidden-dropout, a 1-byte mask per residual element (with --layout megatron)")
    e.add_argument("--attention-dropout", type=float, default=None,
                   help="Megatron: --attention-dropout; with --attention eager (unfused core attention) a 1-byte mask "
                        "and the 16-bit dropped-out probabilities per score (with --layout megatron)")
    e.add_argument("--no-megatron-ce-inplace", action="store_true",
                   help="Megatron-LM before 2024-06 (9634c0e): the loss subtracts the logits' max out of place, 4 more "
                        "bytes per logit (with --layout megatron)")
    e.add_argument("--megatron-ce-fusion", default=None, choices=("native", "te"),
                   help="Megatron: --cross-entropy-loss-fusion with that --cross-entropy-fusion-impl (native: 4 more "
                        "bytes per logit in the loss's backward; te: 4 fewer; with --layout megatron)")
    e.add_argument("--megatron-wgrad-deferral", type=int, default=None, metavar="N",
                   help="Megatron: --defer-embedding-wgrad-compute with --wgrad-deferral-limit N (0: every "
                        "micro-batch): the head's inputs and logit gradients held to the pipeline flush (with "
                        "--layout megatron --pp > 1)")


def _add_serve(sub) -> None:
    """`memlib serve`: the serving options of estimate_inference."""
    v = sub.add_parser("serve", help="serving memory per GPU: weights, KV cache, prefill workspace; largest batch/context",
                       description="Memory to serve a model with tensor parallelism over --count GPUs: the per-GPU "
                                   "breakdown, whether it fits, KV cache bytes per token, and the largest batch "
                                   "and context that fit. Sizes are shown in GB (1e9) and GiB (2**30).")
    v.add_argument("model", nargs="?", help=f"catalog name ({', '.join(list_models())})")
    v.add_argument("--hf-config", metavar="PATH", help="a Hugging Face config.json (or its folder) instead of a name")
    v.add_argument("--gpu", default="a100-80gb", help="GPU model (default a100-80gb)")
    v.add_argument("--count", type=int, default=1, help="GPUs, as the tensor-parallel degree (default 1)")
    v.add_argument("--context-len", type=int, default=4096, help="tokens per sequence (default 4096)")
    v.add_argument("--batch", type=int, default=1, help="sequences served at once (default 1)")
    v.add_argument("--weights", default="auto", choices=("auto",) + inference.WEIGHT_FORMATS,
                   help="weight format (default auto: the checkpoint's own, from its quantization_config; "
                        "bf16 when it has none)")
    v.add_argument("--kv-cache", default="bf16", choices=inference.ALL_KV_FORMATS,
                   help="default bf16; vllm/sglang also fp8_e4m3, fp8_e5m2; vllm with an MLA model fp8_ds_mla; "
                        "llama.cpp a ggml type (q8_0, q4_0, ...)")
    v.add_argument("--kv-cache-v", default=None, choices=inference.ALL_KV_FORMATS,
                   help="llama.cpp: V's cache type when it differs from K's (--cache-type-v)")
    v.add_argument("--engine", default="hf", choices=inference.ENGINES,
                   help="how the cache is sized and typed: hf (default), vllm, sglang, llama.cpp")
    v.add_argument("--ep", type=int, default=1,
                   help="expert-parallel degree for MoE models: routed experts split whole over EP GPUs "
                        "(a multiple of --count; vLLM --enable-expert-parallel; default 1)")
    v.add_argument("--mla-cache", default="latent", choices=inference.MLA_CACHES,
                   help="MLA models (DeepSeek-V2/V3): latent = the compressed cache vLLM/SGLang keep, "
                        "full = transformers' full K and V (default latent)")
    v.add_argument("--prefill-tokens", type=int, default=None,
                   help="tokens in one prefill forward (vLLM's max_num_batched_tokens with chunked prefill); "
                        "default: the whole batch x context at once")
    v.add_argument("--allocator-headroom", type=_headroom, default=DEFAULT_ALLOCATOR_HEADROOM, help=HEADROOM_HELP)
    v.add_argument("--json", action="store_true", help="machine-readable output")
    v.add_argument("--explain", action="store_true", help="print the step-by-step derivation (markdown)")


def _add_fit(sub) -> None:
    """`memlib fit`: the plan search (memlib.parallel.plan) for training or serving on COUNT GPUs."""
    f = sub.add_parser("fit", help="ranked ways to train (or serve) a model on COUNT GPUs, and why the others fail",
                       description="Search tensor/pipeline/expert parallelism, ZeRO stage, offload, recompute and "
                                   "precision for MODEL on COUNT GPUs of one kind; print the feasible layouts "
                                   "ranked by estimated tokens/s per GPU and the reasons the others fail. "
                                   "--task serve searches serving layouts (tensor/expert parallelism, weight "
                                   "format): weights, KV cache and the largest batch per GPU at --context-len.")
    f.add_argument("model", help="catalog name")
    f.add_argument("--gpu", required=True, help="GPU kind (catalog name)")
    f.add_argument("--count", type=int, required=True, help="number of GPUs")
    f.add_argument("--task", default="full", choices=("full", "lora", "qlora", "serve"), help="default full")
    f.add_argument("--seq-len", type=int, default=None, help="training: tokens per sequence (default 2048)")
    f.add_argument("--micro-batch", type=int, default=None, help="training: default 1")
    f.add_argument("--grad-accum", type=int, default=None, help="training: micro-batches per step (default 8)")
    f.add_argument("--optimizer", default=None, choices=optimizers.OPTIMIZERS, help="training: default adamw")
    f.add_argument("--context-len", type=int, default=None, help="serve: tokens per sequence (default 8192)")
    f.add_argument("--weights", action="append", choices=("auto",) + inference.WEIGHT_FORMATS,
                   help="serve: weight format(s) to compare (repeatable; default auto: the checkpoint's own)")
    f.add_argument("--kv-cache", default=None, choices=inference.KV_FORMATS, help="serve: default bf16")
    f.add_argument("--mla-cache", default=None, choices=inference.MLA_CACHES,
                   help="serve, MLA models: latent (vLLM/SGLang, default) or full (transformers)")
    f.add_argument("--prefill-tokens", type=int, default=None,
                   help="serve: tokens per prefill forward (default 8192, vLLM's chunk; 0: the whole batch at once)")
    f.add_argument("--no-offload", action="store_true", help="leave ZeRO-Offload/Infinity out of the search")
    rate = f.add_mutually_exclusive_group()
    rate.add_argument("--mfu", type=_utilisation, default=None, help=MFU_HELP)
    rate.add_argument("--hfu", type=_utilisation, default=None, help=HFU_HELP)
    f.add_argument("--cp", type=int, action="append", default=None,
                   help="training: also try context parallelism of this degree (repeatable; FSDP over dp x cp)")
    f.add_argument("--host-ram-gib", type=_host_ram_gib, help="host RAM per node; offload plans needing more fail")
    f.add_argument("--allocator-headroom", type=_headroom, default=DEFAULT_ALLOCATOR_HEADROOM, help=HEADROOM_HELP)
    f.add_argument("--top", type=int, default=10, help="feasible plans to show (default 10, at least 1)")
    f.add_argument("--min-gpus", action="store_true", help="also find the fewest GPUs of this kind (no offload)")
    f.add_argument("--deepspeed", action="store_true", help="print the DeepSpeed config of the best plan")
    f.add_argument("--json", action="store_true", help="machine-readable output")


def _zero_stage(text: str):
    """'0'-'3' as the integer stage; anything else goes on as a name (FULL_SHARD, ...) for
    estimate_training to accept or refuse with the accepted list. ASCII digits only: '³'.isdigit()."""
    return int(text) if text.isascii() and text.isdecimal() else text


def _estimate_options(a) -> dict:
    """LoRA and offload-device flags go on only when given, and only where they apply."""
    kw = {}
    if a.lora_rank is not None or a.lora_targets is not None:
        if a.finetune in (None, "full"):
            raise ValueError("--lora-rank and --lora-targets apply to --finetune lora or qlora, not full")
        if a.lora_rank is not None:
            kw["lora_rank"] = a.lora_rank
        if a.lora_targets is not None:
            kw["lora_targets"] = _targets(a.lora_targets)
    if a.offload_device is not None:
        if a.offload in (None, "none"):
            raise ValueError("--offload-device applies with --offload optimizer or optimizer+params")
        kw["offload_device"] = a.offload_device
    return kw


def _targets(text: str):
    text = text.strip()
    return text if text in lora_mod.TARGET_GROUPS or text == "lm_head" else [t.strip() for t in text.split(",") if t.strip()]


def _verdicts(est, gpu_names, allocator_headroom: float = DEFAULT_ALLOCATOR_HEADROOM) -> list[dict]:
    out = []
    for name in gpu_names:
        v = fits(est, name, allocator_headroom=allocator_headroom)
        out.append({"gpu": v.gpu.name, "capacity_bytes": v.capacity_bytes, "required_bytes": v.required_bytes,
                    "fits": v.fits, "margin_bytes": v.margin_bytes})
    return out


def cmd_estimate(a) -> int:
    if bool(a.model) == bool(a.hf_config):
        raise ValueError("give either a catalog model name or --hf-config PATH (exactly one)")
    model = Model.from_hf_config(a.hf_config) if a.hf_config else get_model(a.model)
    # valued flags given on the command line, and --no-X switches that turn option X off
    options = {name: getattr(a, name) for name in (
        "lora_dropout", "adapter_dtype", "base_dtype", "qlora_backend", "optimizer_impl", "loss", "ep", "etp",
        "capacity_factor", "cp", "cp_rotate", "layout", "vpp", "hidden_dropout", "attention_dropout",
        "megatron_ce_fusion", "megatron_wgrad_deferral", "pp_split", "loss_dtype", "float8")
        if getattr(a, name) is not None}
    options.update({name: False for name in ("double_quant", "fsdp_mixed_precision", "router_aux_loss", "zero_init",
                                             "megatron_ce_inplace", "keep_outputs") if getattr(a, f"no_{name}")})
    if a.activation_offload:
        options["activation_offload"] = True
    if a.lora_head:
        options["lora_head"] = True
    if a.compile:
        options["compile"] = True
    # every flag defaults to None (not given): a given flag always wins, even when it equals memlib's default
    # (--recipe megatron --zero-stage 0 is ZeRO 0); one not given leaves the recipe's value or memlib's default
    flags = dict(seq_len=a.seq_len, micro_batch=a.micro_batch, precision=a.precision, optimizer=a.optimizer,
                 finetune=a.finetune, recompute=a.recompute, attention=a.attention,
                 zero_stage=None if a.zero_stage is None else _zero_stage(a.zero_stage), dp=a.dp, tp=a.tp, pp=a.pp,
                 grad_accum=a.grad_accum, sequence_parallel=a.sequence_parallel, offload=a.offload)
    flags = {k: v for k, v in flags.items() if v is not None}
    est = training.estimate_training(model, recipe=a.recipe, **flags, **_estimate_options(a), **options)
    verdicts = _verdicts(est, a.gpu or COMMON_GPUS, a.allocator_headroom)
    if a.json:
        print(json.dumps({**est.to_dict(), "verdicts": verdicts}, indent=2))
        return 0
    if a.explain:
        print(est.explain())
        print()
    print(model.describe())
    s = est.setup
    print(f"seq_len {s.seq_len}, micro_batch {s.micro_batch}, {s.precision}, {s.optimizer}, {s.finetune}, "
          f"recompute {s.recompute}, attention {s.attention}"
          + (f", cp {s.cp} ({s.tokens_per_gpu // s.micro_batch} tokens of each sequence per GPU)" if s.cp > 1 else ""))
    print(f"\nPeak {fmt_bytes(est.peak_bytes)} during {est.phase} ({est.peak_moment.where})")
    print(f"\n{'alive at the peak':<20}{'GB':>12}{'GiB':>12}")
    for k, v in est.breakdown.items():
        if v:
            print(f"{k:<20}{gb(v):>12,.2f}{gib(v):>12,.2f}")
    print(f"{'total':<20}{gb(est.peak_bytes):>12,.2f}{gib(est.peak_bytes):>12,.2f}")
    if est.stream_held_bytes:
        print(f"{'active peak':<20}{gb(est.active_peak_bytes):>12,.2f}{gib(est.active_peak_bytes):>12,.2f}"
              "   (+ blocks freed but held for another stream; see the note)")
    if est.first_iteration_peak_bytes < est.peak_bytes:
        first = est.first_iteration_peak_bytes
        print(f"{'first iteration':<20}{gb(first):>12,.2f}{gib(first):>12,.2f}"
              "   (before the optimizer's first step creates its states; later steps reach the total)")
    if est.stage_names and est.stage != est.stage_names[-1]:
        last = est.stage_peak_bytes("last")
        print(f"{'last stage':<20}{gb(last):>12,.2f}{gib(last):>12,.2f}"
              "   (the last pipeline GPU: the rank whose memory Megatron logs)")
    if est.host_bytes or est.nvme_bytes:
        print(f"\nOffload needs, per GPU: host RAM {fmt_bytes(est.host_bytes)}, NVMe {fmt_bytes(est.nvme_bytes)}")
    for note in est.notes:
        print(f"note: {note}")
    print(f"\nOne GPU: peak + CUDA context {gib(DEFAULT_CUDA_CONTEXT_BYTES):.1f} GiB + allocator headroom "
          f"{a.allocator_headroom:.0%} of the peak, against the capacity torch reports:")
    for v in verdicts:
        word = "fits " if v["fits"] else "OOM  "
        print(f"  {word} {v['gpu']:<12} needs {gib(v['required_bytes']):>8.2f} of {gib(v['capacity_bytes']):>6.1f} GiB"
              f"   margin {gib(v['margin_bytes']):>+9.2f} GiB")
    return 0


def cmd_serve(a) -> int:
    if bool(a.model) == bool(a.hf_config):
        raise ValueError("give either a catalog model name or --hf-config PATH (exactly one)")
    model = Model.from_hf_config(a.hf_config) if a.hf_config else get_model(a.model)
    opts = dict(weights=a.weights, kv_cache=a.kv_cache, tp=a.count, ep=a.ep, mla_cache=a.mla_cache,
                prefill_tokens=a.prefill_tokens, engine=a.engine, kv_cache_v=a.kv_cache_v)
    est = inference.estimate_inference(model, batch=a.batch, context_len=a.context_len, **opts)
    v = fits(est, a.gpu, allocator_headroom=a.allocator_headroom)
    mb = inference.max_batch(model, a.gpu, a.context_len, allocator_headroom=a.allocator_headroom, **opts)
    mc = inference.max_context(model, a.gpu, a.batch, allocator_headroom=a.allocator_headroom, **opts)
    if a.json:
        print(json.dumps({**est.to_dict(), "gpu": v.gpu.name, "count": a.count,
                          "verdict": {"fits": v.fits, "required_bytes": v.required_bytes,
                                      "capacity_bytes": v.capacity_bytes, "margin_bytes": v.margin_bytes},
                          "max_batch": mb.value, "max_batch_reason": mb.reason,
                          "max_context": mc.value, "max_context_reason": mc.reason}, indent=2))
        return 0
    if a.explain:
        print(est.explain())
        print()
    s = est.setup
    print(model.describe())
    print(f"engine {s.engine}, batch {s.batch} x context {s.context_len:,}, weights {s.weights}, KV cache {s.kv_cache}"
          + (f" (K), {s.kv_cache_v} (V)" if s.kv_cache_v else "") + ", "
          f"tensor parallel over {a.count} x {v.gpu.name}")
    where = "per GPU" if a.count > 1 else "on one GPU"
    print(f"\nPeak {fmt_bytes(est.peak_bytes)} {where} (prefill workspace at: {est.phase})")
    print(f"\n{'held ' + where:<20}{'GB':>12}{'GiB':>12}")
    for k, n in est.breakdown.items():
        if n:
            print(f"{k:<20}{gb(n):>12,.2f}{gib(n):>12,.2f}")
    print(f"{'total':<20}{gb(est.peak_bytes):>12,.2f}{gib(est.peak_bytes):>12,.2f}")
    print(f"\nKV cache: {est.kv_bytes_per_token:,} bytes per token {where}")
    for note in est.notes:  # e.g. a context beyond the trained window: shown before the verdict, not only in --json
        print(f"note: {note}")
    caveat = " (but read the warning above)" if getattr(est, "warnings", None) else ""
    print(f"\nVerdict: {v}{caveat}")
    print(f"Largest batch at context {s.context_len:,}: {mb}")
    print(f"Largest context at batch {s.batch}: {mc}")
    return 0


_TRAIN_ONLY = ("seq_len", "micro_batch", "grad_accum", "optimizer", "cp", "mfu", "hfu")
_SERVE_ONLY = ("context_len", "weights", "kv_cache", "mla_cache", "prefill_tokens")


def _flag_name(key: str) -> str:
    return "--" + key.replace("_", "-")


def _rate_words(a) -> str:
    """The utilisation the plans were timed at, named as PaLM defines it (Chowdhery et al. 2022, App. B)."""
    if a.mfu is not None:
        return f"{a.mfu:.0%} MFU (model FLOPs; a recompute layout's kernels run faster)"
    from memlib.cost.timing import DEFAULT_HFU
    hfu = DEFAULT_HFU if a.hfu is None else a.hfu
    return f"{hfu:.0%} HFU: every FLOP the GPU runs, recompute included; MFU is lower with recompute"


def cmd_fit(a) -> int:
    from memlib.parallel.plan import min_gpus, plan, to_deepspeed_config
    positive_int("--top", a.top)
    serve = a.task == "serve"
    wrong = [k for k in (_TRAIN_ONLY if serve else _SERVE_ONLY) if getattr(a, k) is not None]
    wrong += [k for k in ("no_offload", "min_gpus", "deepspeed") if serve and getattr(a, k)]
    wrong += ["host_ram_gib"] if serve and a.host_ram_gib is not None else []
    if wrong:
        raise ValueError(f"{', '.join(_flag_name(k) for k in wrong)} "
                         f"{'apply' if len(wrong) > 1 else 'applies'} to "
                         + ("training tasks (full, lora, qlora), not --task serve" if serve else "--task serve"))
    if serve:
        return _fit_serve(a)
    host = int(a.host_ram_gib * 2**30) if a.host_ram_gib is not None else None  # 0 GiB is a limit too
    a.seq_len = 2048 if a.seq_len is None else a.seq_len
    a.micro_batch = 1 if a.micro_batch is None else a.micro_batch
    a.grad_accum = 8 if a.grad_accum is None else a.grad_accum
    kw = dict(seq_len=a.seq_len, micro_batch=a.micro_batch, grad_accum=a.grad_accum, optimizer=a.optimizer or "adamw")
    cps = (1,) + tuple(a.cp) if a.cp else (1,)
    kw["allocator_headroom"] = a.allocator_headroom
    kw.update({k: getattr(a, k) for k in ("mfu", "hfu") if getattr(a, k) is not None})
    r = plan(a.model, a.gpu, a.count, a.task, allow_offload=not a.no_offload, host_bytes_per_node=host, cps=cps, **kw)
    fewest = min_gpus(a.model, a.gpu, a.task, **kw) if a.min_gpus else None
    if a.json:
        out = r.to_dict(top=a.top)
        if fewest is not None:
            out["min_gpus"] = {"count": fewest.count, "settings": fewest.best.settings}
        if a.deepspeed and r.best and r.best.estimate.setup.sharding not in ("fsdp", "device_map"):
            out["deepspeed_config"] = to_deepspeed_config(r.best)
        print(json.dumps(out, indent=2))
        return 0
    print(f"{a.model} on {a.count} x {a.gpu}, task {a.task}, seq_len {a.seq_len}, micro-batch {a.micro_batch}, "
          f"{a.grad_accum} micro-batches per step; "
          f"fits() budgets a CUDA context {gib(DEFAULT_CUDA_CONTEXT_BYTES):.1f} GiB and allocator headroom "
          f"{a.allocator_headroom:.0%} of the peak per GPU")
    if not r.feasible:
        print("\nNo layout fits.")
    else:
        print(f"\n{len(r.feasible)} layouts fit; best first (estimated at {_rate_words(a)}):")
        print(f"  {'tok/s/GPU':>9}  {'peak GiB':>8}  {'margin':>7}  {'host GiB':>8}  layout")
        for p in r.feasible[:a.top]:
            speed = f"{p.tokens_per_s_per_gpu:>9.0f}" if p.time else f"{'n/a':>9}"  # untimed: fp32
            print(f"  {speed}  {gib(p.estimate.peak_bytes):>8.1f}  "
                  f"{p.verdict.margin_gib:>+7.1f}  {gib(p.estimate.host_bytes):>8.0f}  {p.describe()}")
    if r.infeasible:
        print(f"\n{len(r.infeasible)} layouts do not fit, for example:")
        seen = set()
        for settings, why in r.infeasible:
            key = (settings["zero_stage"], settings["offload"], settings["tp"], settings["pp"], settings.get("cp", 1))
            if key in seen:
                continue
            seen.add(key)
            zs = settings["zero_stage"]
            z = (f"ZeRO-{zs}" if isinstance(zs, int) else str(zs)) if zs else "no ZeRO"
            cp = f" cp={settings['cp']}" if settings.get("cp", 1) > 1 else ""
            print(f"  dp={settings['dp']} tp={settings['tp']} pp={settings['pp']}{cp} {z} offload {settings['offload']}, "
                  f"recompute {settings['recompute']}: {why}")
            if len(seen) >= a.top:
                break
    if fewest is not None:
        print(f"\nFewest {a.gpu} without offload: {fewest.count} ({fewest.best.describe()})")
    elif a.min_gpus:
        print(f"\nNo count of {a.gpu} up to 4096 fits without offload.")
    if a.deepspeed and r.best:
        try:
            config = to_deepspeed_config(r.best)
        except ValueError as e:  # an FSDP or device_map layout has no DeepSpeed config
            print(f"\nNo DeepSpeed config for the best layout: {e}")
        else:
            print("\nDeepSpeed config of the best layout:")
            print(json.dumps(config, indent=2))
    elif a.deepspeed:
        print("\nNo DeepSpeed config: no layout fits.")
    return 0


def _fit_serve(a) -> int:
    """memlib fit MODEL --task serve: plan_serving's layouts, per GPU weights, KV cache and the largest batch."""
    from memlib.parallel.plan import SERVE_PREFILL_TOKENS, plan_serving
    context = 8192 if a.context_len is None else a.context_len
    prefill = SERVE_PREFILL_TOKENS if a.prefill_tokens is None else (
        None if a.prefill_tokens == 0 else positive_int("--prefill-tokens", a.prefill_tokens))
    r = plan_serving(a.model, a.gpu, a.count, context_len=context, weights=a.weights or "auto",
                     kv_cache=a.kv_cache or "bf16", mla_cache=a.mla_cache or "latent", prefill_tokens=prefill,
                     allocator_headroom=a.allocator_headroom)
    if a.json:
        print(json.dumps(r.to_dict(top=a.top), indent=2))
        return 0
    model = get_model(a.model)
    print(model.describe())
    print(f"serving on {a.count} x {r.gpu} at context {context:,} tokens"
          + (f", prefill {prefill:,} tokens per forward" if prefill else ", each prefill over the whole batch"))
    if not r.feasible:
        print("\nNo layout holds even one sequence.")
    else:
        print(f"\n{len(r.feasible)} layouts fit; most concurrent sequences first (per GPU, GB = 1e9 bytes):")
        print(f"  {'sequences':>9}  {'batch/group':>11}  {'weights GB':>10}  {'KV cache GB':>11}  {'KV B/token':>10}  "
              f"{'margin GiB':>10}  layout")
        for p in r.feasible[:a.top]:
            print(f"  {p.sequences:>9,}  {p.max_batch.value:>11,}  {gb(p.weight_bytes):>10.1f}  "
                  f"{gb(p.kv_cache_bytes):>11.1f}  {p.estimate.kv_bytes_per_token:>10,}  "
                  f"{p.verdict.margin_gib:>+10.1f}  {p.describe()}")
        best = r.best
        print(f"\nBest: {best.describe()}: {gb(best.weight_bytes):.1f} GB of weights and "
              f"{gb(best.kv_cache_bytes):.1f} GB of KV cache per GPU; {best.max_batch.value:,} sequences per "
              f"attention group x {best.attention_groups} = {best.sequences:,} at {context:,} tokens "
              f"({best.max_batch.reason}).")
        for note in best.estimate.notes:
            print(f"note: {note}")
    if r.infeasible:
        print(f"\n{len(r.infeasible)} layouts do not fit, for example:")
        for settings, why in r.infeasible[:a.top]:
            print(f"  tp={settings['tp']} ep={settings['ep']} {settings['weights']}: {why}")
    return 0


def cmd_models(_a) -> int:
    for name in list_models():
        print(get_model(name).describe())
    return 0


def cmd_gpus(_a) -> int:
    for g in list_gpus():
        print(f"{g.name:<14} {g.memory_gb:>7.1f} GB  {g.memory_gib:>7.1f} GiB  {g.display_name}")
    return 0


# --- the classroom: `memlib quiz`, `memlib class-report` (memlib.learn.classroom) ------------------------------------
# The one place the core reaches into memlib.learn: lazily, only when one of these commands runs (tests/test_layers.py
# allows this import and checks that `import memlib.cli` loads no part of memlib.learn).
def _add_classroom(sub) -> None:
    q = sub.add_parser("quiz", help="a shared quiz for a class: the same questions for one class seed; handout + key",
                       description="Print or write a quiz of practice questions on one topic, the same for every "
                                   "learner with the same class seed, and its answer key for the teacher.")
    q.add_argument("--topic", required=True, help="the topic notebook's number: 00 to 11")
    q.add_argument("--seed", type=int, required=True, help="the class seed (0 to 999,999): same seed, same quiz")
    q.add_argument("--n", type=int, default=10, help="how many questions (1 to 50; default 10)")
    q.add_argument("--interview", type=int, default=0, metavar="K",
                   help="also K mock-interview questions (open; the key gives rubric and model answer)")
    q.add_argument("--out", help="write the handout here (.md, or .html for a printable page); default: print it")
    q.add_argument("--key", help="write the teacher's answer key here (.md or .html)")
    r = sub.add_parser("class-report", help="a class's results from a folder of exported progress files",
                       description="Read every file export_progress() wrote in FOLDER (one per learner) and show, per "
                                   "exercise, the pass rate, attempts, hints and the commonest named slips; damaged "
                                   "and duplicate files are refused and listed with the reason.")
    r.add_argument("folder", metavar="FOLDER", help="the folder of exported .json files")
    r.add_argument("--csv", help="also write the table as CSV here")
    r.add_argument("--chart", help="also write a chart (PNG, needs matplotlib) here")


def cmd_classroom(a) -> int:
    from memlib.learn import classroom
    return classroom.run_command(a)


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        return {"estimate": cmd_estimate, "serve": cmd_serve, "fit": cmd_fit, "models": cmd_models,
                "gpus": cmd_gpus, "quiz": cmd_classroom, "class-report": cmd_classroom}[args.command](args)
    except ValueError as e:  # bad input: one line, no traceback
        print(f"memlib: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head`
        return 0


if __name__ == "__main__":
    sys.exit(main())
