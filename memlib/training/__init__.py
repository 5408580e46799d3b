"""estimate_training: peak memory of one training step on one GPU.

The peak is the maximum over the moments of a step, not the sum of everything ever
allocated. Where to look:

    options.py   the options, checked (TrainingSetup)
    layout.py    which tensors one GPU holds (pipeline stage, tensor-parallel split, adapters)
    terms.py     the named terms, one function each with its source
    step.py      the moments of a step (forward at the loss, backward top and bottom, optimizer)
    estimate.py  Estimate and Moment: the result
    memlib/training/activations.py  the per-layer ledger of saved activations
"""

from __future__ import annotations

import functools
import inspect
from memlib._checks import plain_args

from memlib.training.estimate import BREAKDOWN_KEYS, Estimate, Moment
from memlib.training.options import (ADAPTER_DTYPES, ATTENTIONS, BASE_DTYPES, CP_ROTATES, FINETUNES, FSDP_ALIASES, LOSSES,
                                     LOSS_DTYPES, FLOAT8S,
                                     OFFLOAD_DEVICES, OFFLOADS, OPTIMIZER_IMPLS, PRECISIONS, QLORA_BACKENDS,
                                     RECOMPUTES, LAYOUTS, TrainingSetup, check_setup)
from memlib.training.recipes import RECIPES, Recipe, resolve
from memlib.training.step import estimate

__all__ = ["Estimate", "Moment", "TrainingSetup", "estimate_training", "PRECISIONS", "FINETUNES", "RECOMPUTES",
           "ATTENTIONS", "OFFLOADS", "OFFLOAD_DEVICES", "FSDP_ALIASES", "BREAKDOWN_KEYS", "OPTIMIZER_IMPLS",
           "ADAPTER_DTYPES", "BASE_DTYPES", "QLORA_BACKENDS", "LOSSES", "LOSS_DTYPES", "FLOAT8S", "CP_ROTATES",
           "RECIPES", "Recipe", "LAYOUTS"]


def _documented(model=None, seq_len: int = 2048, micro_batch: int = 1, precision: str = "bf16-mixed",
                      optimizer: str = "adamw", finetune: str = "full", lora_rank: int = 16, lora_targets=None,
                      recompute: str = "none", attention: str = "sdpa", zero_stage=0, dp: int = 1, tp: int = 1,
                      pp: int = 1, offload: str = "none", offload_device: str = "cpu", grad_accum: int = 1,
                      sequence_parallel: bool = False, *, optimizer_impl: str = "foreach", lora_dropout: float = 0.0,
                      adapter_dtype: str = "fp32", base_dtype: str = "auto", qlora_backend: str = "bitsandbytes",
                      double_quant: bool = True, loss: str = "full", activation_offload: bool = False,
                      fsdp_mixed_precision: bool = True, ep: int = 1, router_aux_loss: bool = True,
                      capacity_factor: float | None = None, cp: int = 1, cp_rotate: str = "allgather",
                      gradient_as_bucket_view: bool = False, layout: str = "auto",
                      reduce_bucket_size: int = 500_000_000, overlap_comm: bool | None = None,
                      contiguous_gradients: bool = True, zero_init: bool = True, vpp: int = 1,
                      hidden_dropout: float | None = None, attention_dropout: float | None = None,
                      megatron_ce_inplace: bool | None = None, megatron_ce_fusion: str | bool | None = None,
                      megatron_wgrad_deferral: int | bool | None = None, keep_outputs: bool = True,
                      etp: int | None = None, pp_split=None, lora_head: bool = False, loss_dtype: str = "fp32",
                      float8: str = "none", compile: bool = False, recipe: str | None = None,
                      setup: TrainingSetup | None = None) -> Estimate:
    """Peak memory of one training step, per GPU, with its breakdown and the phase of the peak.

    precision: "fp32" | "bf16" | "fp16" (all states in that dtype) | "bf16-mixed" | "fp16-mixed" (fp32, autocast).
    optimizer: "adamw" | "adamw-8bit" | "sgd" | "sgd-momentum" | "adafactor".
    finetune:  "full" | "lora" | "qlora" (lora_rank, lora_targets: names, or "all-linear"/"attention"/"qv").
    recompute: "none" | "selective" | "full";  attention: "sdpa" | "eager".
    zero_stage: 0-3 over dp GPUs with DeepSpeed's layout (16-bit params and grads, fp32 master
               counted with the optimizer states), or "FULL_SHARD" | "SHARD_GRAD_OP" | "NO_SHARD"
               for PyTorch FSDP's layout. dp=1 shards nothing (layout="deepspeed" keeps DeepSpeed's buffers there).
    tp, pp:    Megatron tensor and pipeline parallel degrees (sequence_parallel with tp); grad_accum micro-batches
               per step (what 1F1B keeps in flight on the first stage); pp_split: each stage's layers (default even).
    offload:   "none" | "optimizer" (ZeRO-Offload) | "optimizer+params" (ZeRO-Infinity, stage 3),
               to offload_device "cpu" | "nvme"; est.host_bytes and est.nvme_bytes report them.
    ep:        expert parallelism (MoE): each GPU of an ep-sized group holds num_experts / ep whole experts
               of every MoE layer; the group is carved out of the dp data-parallel GPUs (ep divides dp),
               and ZeRO shards the experts' states over the dp / ep GPUs holding the same experts (DeepSpeed-MoE,
               Rajbhandari et al. 2022); etp (layout="megatron"): --expert-tensor-parallel-size, None = tp.
    router_aux_loss: MoE: the router's load-balancing loss where the family has one (Mixtral, Qwen3-MoE,
               gpt-oss: transformers' output_router_logits, set by LLaMA-Factory and Megatron's default).
    capacity_factor: MoE: None (default) routes every token (dropless: transformers, torchtitan, Megatron's
               default); a number sizes each expert's buffer at capacity_factor x tokens x top-k / experts
               rows and drops the overflow (GShard, Lepikhin et al. 2020; DeepSpeed-MoE).
    cp:        context parallelism: each sequence split over cp GPUs (seq_len divisible by 2 x cp), ring attention
               (Liu et al. 2023, as torchtitan runs it): seq_len / cp tokens per GPU; FULL_SHARD shards the states
               over dp x cp GPUs; dp x cp x tp x pp GPUs in use (training/context_parallel.py).
    cp_rotate: "allgather" (torch's, torchtitan's default: all K/V gathered once a layer) | "alltoall" (ring steps).
    gradient_as_bucket_view: plain data parallelism (dp > 1 with zero_stage=0 and no tp/pp) is torch's
               DistributedDataParallel, whose all-reduce buckets hold a second copy of every gradient unless
               gradient_as_bucket_view=True (default False in torch, HF Trainer and Accelerate).
    layout:    "auto" (what the options imply) | "megatron" (Megatron-Core on any parallelism: 16-bit params, fp32
               main grads (16-bit under fp16-mixed), fp32 master + Adam; zero_stage=1 is its distributed optimizer,
               6 + 12/dp B/param) | "deepspeed" (ZeRO's layout even with dp=1: 16-bit params and grads, fp32 master
               + Adam, its buckets) | "megatron-deepspeed" (Megatron's legacy model and loss, DeepSpeed's ZeRO 0-3).
    reduce_bucket_size, overlap_comm, contiguous_gradients: DeepSpeed's zero_optimization options, with its
               defaults (5e8 elements; overlap_comm None = on for stage 3 only; True): the contiguous gradient
               bucket, 2 bytes x reduce_bucket_size, x2 with overlap_comm under ZeRO-1/2, alive through the backward
               (terms.deepspeed_bucket_bytes).
    zero_init: ZeRO-3: True (default) if the model was built under deepspeed.zero.Init; False if partitioned by
               deepspeed.initialize: torch's linear keeps each layer's gathered weights (terms.zero3_saved_weight_bytes).
    vpp:       layout="megatron" with pp > 1: model chunks per pipeline GPU, Megatron's interleaved 1F1B
               (--num-layers-per-virtual-pipeline-stage = num_layers / (pp x vpp)); GPU i of pp keeps
               min(grad_accum x vpp, 2(pp - i - 1) + (vpp - 1) pp + 1) chunks' activations in flight
               (schedules.py get_pp_rank_microbatches; Narayanan et al. 2021 Sec. 2.2).
    hidden_dropout, attention_dropout: Megatron's --hidden-dropout (a 1-byte mask per residual element, twice a layer)
               and --attention-dropout (attention="eager" only: mask + dropped 16-bit probabilities, 3as^2b a layer,
               Korthikanti et al. 2022). None: 0.1 for GPT layers (Megatron-Core's default), else 0 (its LLaMA scripts).
    megatron_ce_inplace: Megatron's loss subtracts the logits' max in place (Megatron-LM since 9634c0e, 2024-06);
               False for older releases and Megatron-DeepSpeed (4 more bytes per logit at the loss); None: the layout's.
    megatron_ce_fusion: layout="megatron": --cross-entropy-loss-fusion, "native" (or True: 10 bytes per logit in
               its backward, not 6) | "te" (2 bytes per logit: TE works in the 16-bit logits) | None (the flag off).
    megatron_wgrad_deferral: layout="megatron", pp > 1: --defer-embedding-wgrad-compute, True or 0 (every micro-batch)
               or N (--wgrad-deferral-limit): the head's input and 16-bit logit gradient held to the pipeline flush.
    keep_outputs: loss="full": True (default) if the loop keeps the model's output, its logits, until the next
               forward (`out = model(...); out.loss.backward()`); False as HF Trainer runs it (compute_loss returns
               the loss alone: the logits are freed before the backward), 2 bytes x vocabulary fewer per token then.
    lora_head=True: LoRA on lm_head too, r (h + V); loss_dtype="16-bit": cross-entropy on 16-bit logits, no upcast;
               float8="torchao": Float8Linear (bf16's bytes); compile=True needs recompute="full" (docs/usage.md).
    recipe:    a preset of memlib.RECIPES ("hf-trainer", "torchtune", "litgpt", "torchtitan", "megatron",
               "megatron-bridge", "megatron-deepspeed", "deepspeed"): that framework's defaults; options override it.
    setup:     a TrainingSetup (TrainingSetup.create(...), or an estimate's .setup) instead of the keywords:
               estimate_training(setup), estimate_training(model, setup); keywords with it change it (setup.replace).
    """


_SIGNATURE = inspect.signature(_documented)


@functools.wraps(_documented)
def estimate_training(*args, **kwargs) -> Estimate:
    try:
        given = dict(_SIGNATURE.bind(*args, **kwargs).arguments)
    except TypeError as e:  # as Python words it for an ordinary function
        raise TypeError(f"estimate_training() {e}") from None
    model, setup, recipe = given.pop("model", None), given.pop("setup", None), given.pop("recipe", None)
    if isinstance(model, TrainingSetup):  # estimate_training(setup, ...)
        setup, model = model, None
    if isinstance(given.get("seq_len"), TrainingSetup):  # estimate_training(model, setup, ...)
        setup = given.pop("seq_len")
    if setup is None:
        if model is None:
            raise ValueError("estimate_training needs a model (a catalog name or a memlib.Model) or a setup")
        return estimate(resolve(model, recipe, given))
    if not isinstance(setup, TrainingSetup):
        raise ValueError(f"setup must be a memlib.TrainingSetup, got {type(setup).__name__}")
    if recipe is not None:
        raise ValueError("a setup already carries its options; start from a recipe with "
                         "TrainingSetup.create(model, recipe=...), or change options with setup.replace(...)")
    if model is not None and model != setup.model:
        given["model"] = model
    return estimate(setup.replace(**given) if given else setup)


estimate_training.__name__ = estimate_training.__qualname__ = "estimate_training"
estimate_training = plain_args(estimate_training)  # numpy scalars become Python numbers first (issue 23)
