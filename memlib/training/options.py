"""The options of estimate_training, checked once: TrainingSetup is what every term reads.

Bad input is a ValueError naming the argument, the value and what is accepted; an option
that does not apply to the chosen setup is an error too (never silently ignored).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from memlib.training import lora as lora_mod
from memlib.training import optimizers as opt
from memlib._checks import choice, flag, positive_int
from memlib.models import Model, get_model
from memlib.models.families import of as family_of

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
# How ring attention exchanges K/V between the context-parallel GPUs (torch's _RotateMethod; torchtitan's
# parallelism.context_parallel_rotate_method, default "allgather"): one all-gather of every rank's K/V, or
# cp - 1 ring rotations of one block (all_to_all / permute_tensor).
CP_ROTATES = ("allgather", "alltoall")
# Whose memory layout: "auto" (DeepSpeed's for an integer zero_stage over dp > 1, Megatron's under tp/pp with a
# *-mixed precision, FSDP's for its names, torch's otherwise), "megatron" (Megatron-Core's on any parallelism:
# 16-bit params, fp32 main grads, fp32 master + Adam; zero_stage=1 is its distributed optimizer), "deepspeed"
# (DeepSpeed's ZeRO, on one GPU too) or "megatron-deepspeed" (Megatron's model and loss, DeepSpeed's ZeRO states).
LAYOUTS = ("auto", "megatron", "deepspeed", "megatron-deepspeed")
MEGATRON_MODELS = ("megatron", "megatron-deepspeed")  # layouts whose model and loss are Megatron's
# estimate_training's defaults (HF Trainer + PEFT: the common recipe), what a preset or a setup starts from
DEFAULTS = dict(seq_len=2048, micro_batch=1, precision="bf16-mixed", optimizer="adamw", finetune="full", lora_rank=16,
                lora_targets=None, recompute="none", attention="sdpa", zero_stage=0, dp=1, tp=1, pp=1, offload="none",
                offload_device="cpu", grad_accum=1, sequence_parallel=False, optimizer_impl="foreach",
                lora_dropout=0.0, adapter_dtype="fp32", base_dtype="auto", qlora_backend="bitsandbytes",
                double_quant=True, loss="full", activation_offload=False, fsdp_mixed_precision=True, ep=1,
                router_aux_loss=True, capacity_factor=None, cp=1, cp_rotate="allgather",
                gradient_as_bucket_view=False, layout="auto", reduce_bucket_size=500_000_000, overlap_comm=None,
                contiguous_gradients=True, zero_init=True, vpp=1, hidden_dropout=None, attention_dropout=None,
                megatron_ce_inplace=None, megatron_ce_fusion=None, megatron_wgrad_deferral=None, keep_outputs=True,
                etp=None, pp_split=None)
# Megatron-Core's --cross-entropy-loss-fusion with --cross-entropy-fusion-impl (None: the flag off, Megatron's default)
MEGATRON_CE_FUSIONS = (None, "native", "te")
# FSDP's sharding strategies, accepted as zero_stage, mean PyTorch's layout (parameters,
# gradients and AdamW states in the parameter dtype; AMP keeps them fp32).
FSDP_ALIASES = {"FULL_SHARD": 3, "SHARD_GRAD_OP": 2, "NO_SHARD": 0}


@dataclass(frozen=True)
class TrainingSetup:
    model: Model
    seq_len: int
    micro_batch: int
    precision: str
    optimizer: str
    finetune: str
    lora_rank: int
    lora_targets: tuple[str, ...]
    recompute: str
    attention: str
    zero_stage: int
    dp: int
    tp: int
    pp: int
    offload: str
    offload_device: str = "cpu"
    grad_accum: int = 1
    sequence_parallel: bool = False
    sharding: str = "none"  # "none" | "deepspeed" | "fsdp" | "megatron": whose memory layout applies
    optimizer_impl: str = "foreach"
    lora_dropout: float = 0.0
    adapter_dtype: str = "fp32"
    base_dtype: str = "auto"  # resolved: "fp32" | "bf16" | "fp16" for LoRA/QLoRA, "auto" for full
    qlora_backend: str = "bitsandbytes"
    double_quant: bool = True
    loss: str = "full"
    activation_offload: bool = False
    fsdp_mixed_precision: bool = True
    notes: tuple[str, ...] = ()  # defaults that do not apply here, said once
    ep: int = 1  # expert-parallel degree (MoE): routed experts split over ep GPUs of the data-parallel group
    etp: int | None = None  # Megatron's expert tensor-parallel size (MoE); None: tp (expert_tp)
    router_aux_loss: bool = True  # MoE: the load-balancing loss over the router logits (where the family has one)
    capacity_factor: float | None = None  # MoE: expert capacity (token dropping); None: dropless
    attention_note: str = ""  # why the attention runs eagerly whatever was asked (Gemma 2, gpt-oss)
    cp: int = 1  # context-parallel degree: each sequence split over cp GPUs (ring attention); see context_parallel.py
    cp_rotate: str = "allgather"  # how ring attention moves K/V (CP_ROTATES)
    cp_shard: bool = False  # this is one GPU's view of a cp > 1 setup (context_parallel.local_setup)
    ddp: bool = False  # plain data parallelism over dp > 1 replicas with torch's DistributedDataParallel
    gradient_as_bucket_view: bool = False  # DDP's option: gradients as views into its all-reduce buckets
    layout: str = "auto"  # LAYOUTS
    # DeepSpeed's zero_optimization options (runtime/zero/config.py defaults): the gradient bucket in elements,
    # double-buffered with overlap_comm (None: DeepSpeed's default, on for stage 3 only), contiguous_gradients
    reduce_bucket_size: int = 500_000_000
    overlap_comm: bool = False
    contiguous_gradients: bool = True
    # ZeRO-3: the model was built under deepspeed.zero.Init (False: partitioned by deepspeed.initialize; then
    # torch's linear keeps each layer's gathered weights until its backward, terms.zero3_saved_weight_bytes)
    zero_init: bool = True
    # Megatron-Core (layout='megatron'): model chunks per pipeline GPU (interleaved 1F1B) and --hidden-dropout
    vpp: int = 1
    hidden_dropout: float = 0.0
    attention_dropout: float = 0.0  # --attention-dropout: masks kept only by the unfused core attention (eager)
    megatron_ce_inplace: bool = True  # the vocab-parallel loss subtracts the max in place (Megatron-LM >= 2024-06)
    megatron_ce_fusion: str | None = None  # --cross-entropy-loss-fusion's implementation (MEGATRON_CE_FUSIONS)
    # --defer-embedding-wgrad-compute with --wgrad-deferral-limit N (0: every micro-batch); None: the flag off
    megatron_wgrad_deferral: int | None = None
    # decoder layers of each pipeline stage, first to last (Megatron's --decoder-first/last-pipeline-num-layers);
    # None: the even split of layout.pipeline_split
    pp_split: tuple[int, ...] | None = None
    # the loop keeps the model's output (its logits) until the next forward (a custom loop's `out = model(...)`);
    # False: HF Trainer's compute_loss returns the loss alone, the logits are freed before the backward
    keep_outputs: bool = True
    # The options as given (every keyword of check_setup, defaults included): what replace() starts from
    options: tuple = field(default=(), compare=False, repr=False)
    recipe: str = ""  # the preset it came from (memlib.RECIPES), if any
    recipe_set: tuple[tuple[str, object], ...] = field(default=(), compare=False, repr=False)  # what the preset set

    def replace(self, **changes) -> "TrainingSetup":
        """The same run with some options changed (a what-if), checked again: `setup.replace(dp=8, zero_stage=1)`;
        `model=` swaps the model. Options a recipe set and that are changed here stop counting as the recipe's."""
        model = changes.pop("model", self.model)
        if not self.options:
            raise ValueError("this TrainingSetup was not made from options (use TrainingSetup.create or "
                             "estimate_training's keywords)")
        given = dict(self.options)
        unknown = sorted(set(changes) - set(given))
        if unknown:
            raise ValueError(f"unknown option(s) {', '.join(unknown)}; accepted: model, {', '.join(given)}")
        given.update(changes)
        new = check_setup(model, **given)
        return dataclasses.replace(new, recipe=self.recipe,
                                   recipe_set=tuple((k, v) for k, v in self.recipe_set if k not in changes))

    @classmethod
    def create(cls, model, recipe: str | None = None, **options) -> "TrainingSetup":
        """A checked setup from estimate_training's keywords, optionally starting from a preset of memlib.RECIPES
        (explicit options override it): `TrainingSetup.create("llama-2-7b", recipe="torchtune", finetune="lora")`."""
        from memlib.training.recipes import resolve

        return resolve(model, recipe, options)

    @property
    def tokens(self) -> int:
        return self.seq_len * self.micro_batch

    @property
    def bnb_keeps_input(self) -> bool:
        """QLoRA on bitsandbytes before 0.43.2: every 4-bit matmul keeps its 16-bit input on ctx (not as a saved
        tensor, so it outlives the backward: terms.bnb_retained_input_bytes)."""
        return self.finetune == "qlora" and self.qlora_backend.endswith("<0.43.2")

    @property
    def qlora_lightning(self) -> bool:
        """QLoRA through Lightning Fabric's BitsandbytesPrecision (LitGPT): lm_head in 4 bits too, quantized from
        fp16."""
        return self.finetune == "qlora" and self.qlora_backend.startswith("lightning-")

    @property
    def expert_tp(self) -> int:
        """GPUs each routed expert's matrices split over: Megatron's --expert-tensor-parallel-size, tp by default."""
        return self.etp or self.tp

    @property
    def expert_dp(self) -> int:
        """GPUs holding the same routed experts, over which their states shard: dp tp / (ep etp) (Megatron's expert
        data-parallel group; dp / ep when etp = tp, DeepSpeed-MoE's)."""
        return self.dp * self.tp // (self.ep * self.expert_tp)

    @property
    def tokens_per_gpu(self) -> int:
        """Tokens of one micro-batch on one GPU: the sequence split over the cp context-parallel GPUs."""
        return self.tokens if self.cp_shard else self.seq_len // self.cp * self.micro_batch


_flag = flag  # the one bool check (memlib._checks.flag)


def _zero_stage(zero_stage) -> tuple[int, bool]:
    """(stage, is an FSDP name). Integers 0-3, or those digits as a string ("3"), are DeepSpeed stages."""
    if isinstance(zero_stage, str):
        name = zero_stage.strip()
        if name in ("0", "1", "2", "3"):
            return int(name), False
        if name.upper() not in FSDP_ALIASES:
            raise ValueError(f"unknown zero_stage {zero_stage!r}; accepted: 0, 1, 2, 3 (DeepSpeed ZeRO) or "
                             f"{', '.join(FSDP_ALIASES)} (PyTorch FSDP)")
        return FSDP_ALIASES[name.upper()], True
    zero_stage = positive_int("zero_stage", zero_stage, allow_zero=True)
    if zero_stage > 3:
        raise ValueError(f"zero_stage must be 0, 1, 2 or 3 (or an FSDP name: {', '.join(FSDP_ALIASES)}), "
                         f"got {zero_stage}")
    return zero_stage, False


class NotApplicable(ValueError):
    """An option set away from its default where it does not apply (`option` names it): a recipe preset that set
    it drops it (memlib.training.recipes.resolve); a user who set it gets this error."""

    def __init__(self, option: str, message: str):
        super().__init__(message)
        self.option = option


def _not_for(option: str, value, default, why: str) -> None:
    """An option set away from its default where it does not apply is an error, never ignored."""
    if value != default:
        raise NotApplicable(option, f"{option}={value!r} does not apply here: {why}")


def check_setup(model, seq_len, micro_batch, precision, optimizer, finetune, lora_rank, lora_targets,
                recompute, attention, zero_stage, dp, tp, pp, offload, offload_device="cpu", grad_accum=1,
                sequence_parallel=False, *, optimizer_impl="foreach", lora_dropout=0.0, adapter_dtype="fp32",
                base_dtype="auto", qlora_backend="bitsandbytes", double_quant=True, loss="full",
                activation_offload=False, fsdp_mixed_precision=True, ep=1, router_aux_loss=True,
                capacity_factor=None, cp=1, cp_rotate="allgather", gradient_as_bucket_view=False,
                layout="auto", reduce_bucket_size=500_000_000, overlap_comm=None,
                contiguous_gradients=True, zero_init=True, vpp=1, hidden_dropout=None, attention_dropout=None,
                megatron_ce_inplace=None, megatron_ce_fusion=None, megatron_wgrad_deferral=None, keep_outputs=True,
                etp=None, pp_split=None) -> TrainingSetup:
    """Every option checked once (a ValueError naming the option, its value and what is accepted), then resolved into
    the TrainingSetup that every term reads."""
    given = dict(locals())
    del given["model"]
    model = _check_model(model)
    seq_len, micro_batch, grad_accum, lora_dropout, cp, capacity_factor = _check_values(
        model, seq_len, micro_batch, grad_accum, precision, optimizer, finetune, recompute, attention, offload,
        offload_device, optimizer_impl, adapter_dtype, base_dtype, qlora_backend, loss,
        (("sequence_parallel", sequence_parallel), ("double_quant", double_quant),
         ("activation_offload", activation_offload), ("fsdp_mixed_precision", fsdp_mixed_precision),
         ("gradient_as_bucket_view", gradient_as_bucket_view)),
        lora_dropout, dp, tp, pp, ep, router_aux_loss, cp, cp_rotate, capacity_factor, etp)
    zero_stage_arg = zero_stage
    zero_stage, fsdp = _zero_stage(zero_stage)
    if offload == "none" and offload_device != "cpu":
        raise ValueError(f"offload_device={offload_device!r} needs offload='optimizer' or 'optimizer+params' "
                         "(nothing is offloaded with offload='none')")
    lora_rank = _check_adapter_options(model, finetune, lora_rank, lora_targets, lora_dropout, adapter_dtype, base_dtype,
                                       qlora_backend, double_quant)
    sharding, fsdp_offload = _sharding(model, finetune, precision, zero_stage, zero_stage_arg, fsdp, dp, tp, pp, offload,
                                       offload_device, qlora_backend)
    choice("layout", layout, LAYOUTS)
    if layout == "deepspeed":
        sharding = _deepspeed_layout(finetune, zero_stage, fsdp, tp, pp)
    if layout == "megatron":
        sharding = _megatron_layout(model, finetune, precision, zero_stage, fsdp, offload)
    if layout == "megatron-deepspeed":
        sharding = _megatron_deepspeed_layout(model, finetune, precision, zero_stage, fsdp, attention, recompute)
    _check_parallel_shapes(model, seq_len, sharding, zero_stage, tp, pp, sequence_parallel, layout)
    _check_etp(model, layout, tp, etp)
    pp_split = _check_pp_split(model, pp, vpp, pp_split)
    vpp, hidden_dropout, attention_dropout, megatron_ce_inplace = _megatron_options(
        model, sharding, layout, pp, vpp, hidden_dropout, attention_dropout, megatron_ce_inplace)
    megatron_ce_fusion, megatron_wgrad_deferral = _megatron_head_options(
        model, layout, pp, megatron_ce_fusion, megatron_wgrad_deferral, given["megatron_ce_inplace"])
    overlap_comm = _deepspeed_options(sharding, zero_stage, reduce_bucket_size, overlap_comm, contiguous_gradients,
                                      zero_init, finetune)
    _check_numerics(model, sharding, precision, finetune, optimizer, optimizer_impl, fsdp_mixed_precision, loss,
                    activation_offload, tp, pp)
    _flag("keep_outputs", keep_outputs)
    if loss != "full" or sharding == "megatron" or layout in MEGATRON_MODELS or model.mlp != "gated":
        _not_for("keep_outputs", keep_outputs, True, "only transformers' full loss leaves logits in the model's output "
                 "(Liger's and Megatron's losses make none to keep, LitGPT's loop holds its own; GPT-style models use "
                 "Korthikanti et al.'s formula)")
    attention, attention_note = _resolve_attention(model, attention, recompute, layout)
    targets, lora_rank, base = _resolve_adapters(model, finetune, precision, lora_rank, lora_targets, base_dtype,
                                                 adapter_dtype)
    # torch DDP: replicas over dp > 1 GPUs with no ZeRO/FSDP name (what HF Trainer / Accelerate run on several GPUs
    # without DeepSpeed or FSDP). FSDP's NO_SHARD and Megatron's DDP keep no bucket copy of the gradients.
    ddp = sharding == "none" and dp > 1 and not fsdp
    if not ddp:
        _not_for("gradient_as_bucket_view", gradient_as_bucket_view, False,
                 "it is an option of torch's DistributedDataParallel: plain data parallelism (dp > 1, zero_stage=0, "
                 "no tp/pp) only")
    if cp > 1 or cp_rotate != "allgather":
        _check_context_parallel(model, seq_len, cp, cp_rotate, attention, finetune, zero_stage, fsdp, offload,
                                tp, sequence_parallel)
    return TrainingSetup(model, seq_len, micro_batch, precision, optimizer, finetune, lora_rank, targets,
                         recompute, attention, zero_stage, dp, tp, pp, offload, offload_device, grad_accum,
                         sequence_parallel, sharding, optimizer_impl, lora_dropout, adapter_dtype, base,
                         qlora_backend, double_quant, loss, activation_offload, fsdp_mixed_precision,
                         ep=ep, router_aux_loss=router_aux_loss, capacity_factor=capacity_factor,
                         attention_note=attention_note, cp=cp, cp_rotate=cp_rotate, ddp=ddp,
                         gradient_as_bucket_view=gradient_as_bucket_view, layout=layout,
                         reduce_bucket_size=reduce_bucket_size, overlap_comm=overlap_comm,
                         contiguous_gradients=contiguous_gradients, zero_init=zero_init, vpp=vpp, hidden_dropout=hidden_dropout,
                         attention_dropout=attention_dropout, megatron_ce_inplace=megatron_ce_inplace,
                         megatron_ce_fusion=megatron_ce_fusion, megatron_wgrad_deferral=megatron_wgrad_deferral,
                         keep_outputs=keep_outputs, etp=etp, pp_split=pp_split, options=tuple(given.items()))


def _check_pp_split(model, pp, vpp, pp_split) -> tuple[int, ...] | None:
    """pp_split: the decoder layers of each of the pp stages, first to last, all of them (Megatron's
    --decoder-first-pipeline-num-layers F --decoder-last-pipeline-num-layers K on L layers is
    (F, (L - F - K) / (pp - 2), ..., K))."""
    if pp_split is None:
        return None
    if isinstance(pp_split, str) or not isinstance(pp_split, (list, tuple)) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in pp_split):
        raise ValueError(f"pp_split must be a list or tuple of positive layer counts, one per pipeline stage, got "
                         f"{pp_split!r}")
    if len(pp_split) != pp or pp < 2:
        raise ValueError(f"pp_split gives {len(pp_split)} stage(s): it needs one layer count per pipeline stage, "
                         f"pp={pp} (and pp > 1)")
    if sum(pp_split) != model.num_layers:
        raise ValueError(f"pp_split {tuple(pp_split)} holds {sum(pp_split)} layers; {model.name} has "
                         f"{model.num_layers}")
    if vpp > 1:
        raise ValueError("pp_split with vpp > 1 (an uneven interleaved pipeline) is not modelled")
    return tuple(pp_split)


def _check_etp(model, layout, tp, etp) -> None:
    if etp is not None and etp != tp and (layout != "megatron" or not megatron_moe_layer(model)):
        raise ValueError(f"etp={etp} (an expert tensor-parallel size other than tp={tp}) is Megatron-Core's "
                         "--expert-tensor-parallel-size: layout='megatron' (or recipe='megatron') with Mixtral-style "
                         f"layers (LLaMA attention, per-head q/k norms allowed; SwiGLU experts) only; {model.name} is not "
                         "one")


def _deepspeed_options(sharding, zero_stage, reduce_bucket_size, overlap_comm, contiguous_gradients, zero_init,
                       finetune) -> bool:
    """DeepSpeed's bucket options and zero_init, checked; they apply to its layout only. Returns overlap_comm resolved
    as DeepSpeed does (runtime/zero/config.py overlap_comm_valid: None means stage == 3)."""
    positive_int("reduce_bucket_size", reduce_bucket_size)
    _flag("contiguous_gradients", contiguous_gradients)
    _flag("zero_init", zero_init)
    if overlap_comm is not None:
        _flag("overlap_comm", overlap_comm)
    if sharding != "deepspeed":
        why = "it is an option of DeepSpeed's ZeRO (an integer zero_stage >= 1 over dp > 1 GPUs, or offload)"
        _not_for("reduce_bucket_size", reduce_bucket_size, 500_000_000, why)
        _not_for("overlap_comm", overlap_comm, None, why)
        _not_for("contiguous_gradients", contiguous_gradients, True, why)
        _not_for("zero_init", zero_init, True, why)
        return False
    if zero_stage != 3:
        _not_for("zero_init", zero_init, True, "deepspeed.zero.Init partitions parameters: ZeRO stage 3 only")
    if finetune == "qlora":
        _not_for("zero_init", zero_init, True, "zero_init=False is modelled for full and LoRA fine-tuning (QLoRA's "
                 "4-bit matmuls do not go through torch.nn.functional.linear)")
    return zero_stage == 3 if overlap_comm is None else overlap_comm


def megatron_gpt_layer(model) -> bool:
    """Megatron's default GPT layer: LayerNorm and a GELU MLP with biases, no MoE."""
    return model.mlp == "standard" and model.norm == "layernorm" and not model.is_moe


def megatron_moe_layer(model) -> bool:
    """A MoE model whose layers Megatron-Core builds as Mixtral's: LLaMA's attention (per-head q/k norms allowed, as
    Qwen3-MoE's) and SwiGLU experts (no MLA, no attention sinks), so layout='megatron' gives them its fused ledger
    (activations.megatron_moe_block)."""
    from memlib.training.activations import megatron_attention
    return model.is_moe and model.mlp == "gated" and model.activation == "silu" and megatron_attention(model)


def megatron_head(model) -> bool:
    """Does layout='megatron' give this model Megatron's layers and vocabulary-parallel loss (step.py vocab_loss)?
    LLaMA-style layers (q/k norms too), GPT layers and Mixtral-style MoE layers."""
    return model.head == "lm" and (model.is_llama_layer or megatron_dense_layer(model) or megatron_gpt_layer(model)
                                   or megatron_moe_layer(model))


def megatron_dense_layer(model) -> bool:
    """A dense model whose layers Megatron-Core builds as LLaMA's, with TE's fused modules: the LLaMA layer, also
    with per-head q/k norms (--qk-layernorm: Qwen3)."""
    from memlib.training.activations import megatron_attention
    return (not model.is_moe and model.mlp == "gated" and model.activation == "silu" and model.head == "lm"
            and megatron_attention(model))


def _check_megatron_model(layout, what, model, finetune, precision) -> None:
    """Megatron's layouts model full pretraining in a *-mixed precision of LLaMA-style or GPT layers."""
    if finetune != "full" or not precision.endswith("mixed") or not (model.mlp == "gated" or megatron_gpt_layer(model)):
        raise ValueError(f"layout={layout!r} models {what}: finetune='full', a *-mixed precision and a LLaMA-style or "
                         f"GPT (LayerNorm, GELU MLP) model; got finetune={finetune!r}, precision={precision!r}, "
                         f"{model.name}")


def _megatron_layout(model, finetune, precision, zero_stage, fsdp, offload) -> str:
    """layout='megatron': Megatron-Core's mixed precision on any parallelism (NVIDIA/Megatron-LM
    docs/source/api-guide/dist_optimizer.md); zero_stage=1 is its distributed optimizer (6 + 12/dp B/param).
    Its models: LLaMA-style layers, or Megatron's default GPT layer (LayerNorm, GELU MLP with biases)."""
    _check_megatron_model("megatron", "Megatron-Core's pretraining layout", model, finetune, precision)
    if fsdp or zero_stage > 1 or offload != "none":
        raise ValueError("layout='megatron' takes zero_stage=0 (optimizer states on every rank) or zero_stage=1 (its "
                         f"distributed optimizer), no offload; got zero_stage={zero_stage!r}, offload={offload!r}")
    return "megatron"


def _megatron_deepspeed_layout(model, finetune, precision, zero_stage, fsdp, attention, recompute) -> str:
    """layout='megatron-deepspeed': Megatron-DeepSpeed (microsoft/Megatron-DeepSpeed@f4157bea), Megatron-LM's legacy
    model (megatron/model/transformer.py) and vocabulary-parallel loss trained by DeepSpeed's engine. DeepSpeed's ZeRO
    1-3 keeps the states (16-bit params and grads, fp32 master + Adam sharded, its buckets: runtime/engine.py
    _do_optimizer_sanity_check sends bf16 with ZeRO to the ZeRO optimizer unless grad_accum_dtype is fp32). Its
    LLaMA layer is op by op (rmsnorm.py upcasts to fp32; swiglu is F.silu(x[0]) * x[1]): transformers' ledger plus
    the hidden-dropout masks; its GPT layer is Megatron's (activations.megatron_layer_ledger). zero_stage=0 with
    bf16-mixed is DeepSpeed's BF16_Optimizer (engine.py: bf16 without ZeRO accumulates gradients in fp32)."""
    _check_megatron_model("megatron-deepspeed", "Megatron-DeepSpeed's pretraining", model, finetune, precision)
    if fsdp or (not zero_stage and precision != "bf16-mixed"):
        raise ValueError("layout='megatron-deepspeed' takes DeepSpeed's ZeRO (an integer zero_stage 1-3), or "
                         "zero_stage=0 with bf16-mixed (DeepSpeed's BF16_Optimizer); its fp16 optimizer without ZeRO "
                         f"is not modelled; got zero_stage={zero_stage!r}, precision={precision!r}")
    if model.mlp == "gated" and (attention == "eager" or recompute == "selective"):
        raise ValueError("layout='megatron-deepspeed' with a LLaMA-style model is modelled with flash attention "
                         "(--use-flash-attn-v2, attention='sdpa') and recompute 'none' or 'full' (DeepSpeed's "
                         f"activation checkpointing of every layer); got attention={attention!r}, "
                         f"recompute={recompute!r}")
    # bf16 without ZeRO is DeepSpeed's BF16_Optimizer: whole fp32 gradients, fp32 master + Adam partitioned over dp,
    # the states of Megatron's distributed optimizer (step._context), and its bf16 gradients (terms.bf16_lp_grad_bytes)
    return "deepspeed" if zero_stage else "megatron"


def _deepspeed_layout(finetune, zero_stage, fsdp, tp, pp) -> str:
    """layout='deepspeed': DeepSpeed's ZeRO layout even on one GPU (dp=1), where it shards nothing but still keeps
    its own buffers: 16-bit working parameters and gradients, the fp32 master and Adam states, the gradient bucket
    and the step's fp32 upcast (runtime/zero/stage_1_and_2.py, stage3.py); "auto" treats ZeRO over one GPU as
    plain training."""
    if fsdp or not zero_stage or tp > 1 or pp > 1 or finetune == "qlora":
        raise ValueError("layout='deepspeed' is DeepSpeed's ZeRO: an integer zero_stage 1-3, no tp/pp, not QLoRA; got "
                         f"zero_stage={zero_stage!r}, tp={tp}, pp={pp}, finetune={finetune!r}")
    return "deepspeed"


def _megatron_head_options(model, layout, pp, fusion, deferral, inplace_given) -> tuple:
    """megatron_ce_fusion and megatron_wgrad_deferral, checked: both act on Megatron's loss and output layer."""
    fusion, deferral = _megatron_ce_fusion(fusion, layout, inplace_given), _megatron_wgrad_deferral(deferral, layout, pp)
    if (fusion is not None or deferral is not None) and not megatron_head(model):
        raise ValueError(f"megatron_ce_fusion and megatron_wgrad_deferral act on Megatron's vocabulary-parallel "
                         f"loss and output layer; {model.name}'s layers are estimated with transformers' ledger and "
                         "loss (memlib's Megatron ledger covers LLaMA-style, GPT and Mixtral-style layers)")
    return fusion, deferral


def _megatron_ce_fusion(fusion, layout, inplace_given) -> str | None:
    """Megatron-Core's --cross-entropy-loss-fusion (True is its default implementation, 'native') and
    --cross-entropy-fusion-impl ('native' or 'te'); False or None: the flag off."""
    fusion = {True: "native", False: None}[fusion] if isinstance(fusion, bool) else fusion
    if fusion is None:
        return None
    if fusion not in MEGATRON_CE_FUSIONS:
        raise ValueError(f"unknown megatron_ce_fusion {fusion!r}; accepted: None (the flag off), True or 'native', "
                         "'te'")
    if layout != "megatron":
        raise ValueError(f"megatron_ce_fusion={fusion!r} is Megatron-Core's --cross-entropy-loss-fusion: give "
                         f"layout='megatron' (or recipe='megatron'), got layout={layout!r}")
    if inplace_given is False:
        raise ValueError(f"megatron_ce_fusion={fusion!r} with megatron_ce_inplace=False: the fused loss came after "
                         "the in-place one (Megatron-LM 2024-06), so the two do not go together")
    return fusion


def _megatron_wgrad_deferral(limit, layout, pp) -> int | None:
    """Megatron-Core's --defer-embedding-wgrad-compute (True or 0: every micro-batch) with --wgrad-deferral-limit N
    (the first N micro-batches of a step); None or False: the flag off. Megatron refuses it without pipeline
    parallelism (model_parallel_config.py __post_init__)."""
    if limit is None or limit is False:
        return None
    limit = 0 if limit is True else limit
    if not isinstance(limit, int) or limit < 0:
        raise ValueError(f"megatron_wgrad_deferral must be None, True or a micro-batch count >= 0 (Megatron's "
                         f"--wgrad-deferral-limit; 0 defers every micro-batch), got {limit!r}")
    if layout != "megatron" or pp < 2:
        raise ValueError("megatron_wgrad_deferral is Megatron-Core's --defer-embedding-wgrad-compute: it needs "
                         f"layout='megatron' and pp > 1 (Megatron refuses it without a pipeline), got "
                         f"layout={layout!r}, pp={pp}")
    return limit


def _megatron_options(model, sharding, layout, pp, vpp, hidden_dropout, attention_dropout,
                      megatron_ce_inplace) -> tuple[int, float, float, bool]:
    """vpp (model chunks per pipeline GPU: Megatron's interleaved 1F1B, --num-layers-per-virtual-pipeline-stage =
    L / (pp x vpp)), hidden_dropout and attention_dropout (--hidden-dropout, --attention-dropout) are Megatron's
    options: layout='megatron' (vpp) or 'megatron-deepspeed'. megatron_ce_inplace None is the layout's own: in place
    for Megatron-Core (since 9634c0e), out of place for Megatron-DeepSpeed (core/tensor_parallel/cross_entropy.py
    at f4157bea: `vocab_parallel_logits - logits_max.unsqueeze(dim=-1)`)."""
    vpp = positive_int("vpp", vpp)
    for name, value in (("hidden_dropout", hidden_dropout), ("attention_dropout", attention_dropout)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1):
            raise ValueError(f"{name} must be a number in [0, 1), got {value!r}")
    if megatron_ce_inplace is not None:
        _flag("megatron_ce_inplace", megatron_ce_inplace)
    if sharding != "megatron" or layout == "megatron-deepspeed":  # tp/pp > 1 alone is Megatron's layout too
        _not_for("vpp", vpp, 1, "it is a Megatron-Core option (DeepSpeed's pipeline does not interleave): give "
                 "layout='megatron' (or recipe='megatron')")
    if layout not in MEGATRON_MODELS:  # only Megatron's layer ledgers and loss have these
        _not_for("hidden_dropout", hidden_dropout or 0.0, 0.0,
                 "it is a Megatron-Core option of its fused layers: give layout='megatron' (or recipe='megatron')")
        _not_for("attention_dropout", attention_dropout or 0.0, 0.0,
                 "it is a Megatron-Core option of its core attention: give layout='megatron' (or recipe='megatron')")
        _not_for("megatron_ce_inplace", megatron_ce_inplace, None,
                 "it describes Megatron's vocabulary-parallel cross entropy: give layout='megatron'")
    if vpp > 1:
        if pp < 2:
            raise ValueError(f"vpp={vpp} interleaves model chunks over pipeline stages: it needs pp > 1, got pp={pp}")
        if model.num_layers % (pp * vpp):
            raise ValueError(f"vpp={vpp} with pp={pp}: the {model.num_layers} layers of {model.name} must split into "
                             f"pp x vpp = {pp * vpp} equal model chunks (Megatron's --num-layers-per-virtual-"
                             "pipeline-stage)")
        if (model.is_moe and model.num_moe_layers != model.num_layers) or len(set(model.layer_types)) > 1:
            raise ValueError("vpp > 1 is modelled for models whose layers are all alike (all dense or all MoE, one "
                             "attention type)")
    if megatron_ce_inplace is None:
        megatron_ce_inplace = layout != "megatron-deepspeed"
    # None: Megatron-Core's TransformerConfig default, 0.1, for GPT layers (its GPT scripts leave it); 0 for
    # LLaMA-style and MoE layers, whose Megatron-LM scripts set --hidden-dropout 0.0 --attention-dropout 0.0
    default = 0.1 if layout in MEGATRON_MODELS and megatron_gpt_layer(model) else 0.0
    hidden_dropout, attention_dropout = (default if v is None else v for v in (hidden_dropout, attention_dropout))
    return vpp, float(hidden_dropout), float(attention_dropout), megatron_ce_inplace


def _check_model(model) -> Model:
    """A catalog name or a Model, with a causal-LM head."""
    model = get_model(model) if isinstance(model, str) else model
    if not isinstance(model, Model):
        raise ValueError(f"model must be a catalog name or a memlib.Model, got {type(model).__name__}")
    if model.head != "lm":
        raise ValueError(f"training estimates model a causal-LM head; {model.name} has a {model.head!r} head "
                         "(architectures *ForSequenceClassification / *Model); serving is modelled for it")
    return model


def _check_values(model, seq_len, micro_batch, grad_accum, precision, optimizer, finetune, recompute, attention,
                  offload, offload_device, optimizer_impl, adapter_dtype, base_dtype, qlora_backend, loss, flags,
                  lora_dropout, dp, tp, pp, ep, router_aux_loss, cp, cp_rotate, capacity_factor, etp=None) -> tuple:
    """Each option on its own: its type and its accepted values (memlib._checks); MoE options against the model."""
    seq_len = positive_int("seq_len", seq_len)
    micro_batch = positive_int("micro_batch", micro_batch)
    grad_accum = positive_int("grad_accum", grad_accum)
    choice("precision", precision, PRECISIONS)
    choice("optimizer", optimizer, opt.OPTIMIZERS)
    choice("finetune", finetune, FINETUNES)
    choice("recompute", recompute, RECOMPUTES)
    choice("attention", attention, ATTENTIONS)
    choice("offload", offload, OFFLOADS)
    choice("offload_device", offload_device, OFFLOAD_DEVICES)
    choice("optimizer_impl", optimizer_impl, OPTIMIZER_IMPLS)
    choice("adapter_dtype", adapter_dtype, ADAPTER_DTYPES)
    choice("base_dtype", base_dtype, BASE_DTYPES)
    choice("qlora_backend", qlora_backend, QLORA_BACKENDS)
    choice("loss", loss, LOSSES)
    for name, v in flags:
        _flag(name, v)
    if isinstance(lora_dropout, bool) or not isinstance(lora_dropout, (int, float)) or not 0 <= lora_dropout < 1:
        raise ValueError(f"lora_dropout must be a probability in [0, 1), got {lora_dropout!r}")
    lora_dropout = float(lora_dropout)
    for name, v in (("dp", dp), ("tp", tp), ("pp", pp), ("ep", ep)):
        positive_int(name, v)
    _flag("router_aux_loss", router_aux_loss)
    cp = positive_int("cp", cp)
    choice("cp_rotate", cp_rotate, CP_ROTATES)
    if etp is not None:
        positive_int("etp", etp)
    _check_moe_options(model, dp * cp, ep, router_aux_loss, capacity_factor,
                       dp_label=f"dp x cp = {dp} x {cp}" if cp > 1 else None, tp=tp, etp=etp)
    if capacity_factor is not None:
        capacity_factor = float(capacity_factor)
    return seq_len, micro_batch, grad_accum, lora_dropout, cp, capacity_factor


def _check_adapter_options(model, finetune, lora_rank, lora_targets, lora_dropout, adapter_dtype, base_dtype,
                           qlora_backend, double_quant) -> int:
    """LoRA/QLoRA options are errors where they do not apply (peft's and bitsandbytes' options)."""
    # LoRA settings are checked even under full fine-tuning: a wrong one is an error, not a silent default.
    lora_rank = positive_int("lora_rank", lora_rank)
    if finetune == "full":
        if model.mlp == "gated" and lora_targets is not None:
            lora_mod.resolve_targets(model, lora_targets)
        why = "finetune='full' trains every weight (LoRA options need finetune='lora' or 'qlora')"
        _not_for("lora_rank", lora_rank, 16, why)
        _not_for("lora_targets", lora_targets, None, why)
        _not_for("lora_dropout", lora_dropout, 0.0, why)
        _not_for("adapter_dtype", adapter_dtype, "fp32", why)
        _not_for("base_dtype", base_dtype, "auto", why + "; its dtypes follow precision")
    if finetune != "qlora":
        why = "it describes QLoRA's 4-bit base (finetune='qlora')"
        _not_for("qlora_backend", qlora_backend, "bitsandbytes", why)
        _not_for("double_quant", double_quant, True, why)
    elif qlora_backend == "torchao" and not double_quant:
        raise ValueError("double_quant=False does not apply to qlora_backend='torchao': torchao's NF4Tensor always "
                         "quantizes its block scalers (scaler_block_size=256)")
    return lora_rank


def _sharding(model, finetune, precision, zero_stage, zero_stage_arg, fsdp, dp, tp, pp, offload, offload_device,
              qlora_backend) -> tuple[str, bool]:
    """Whose memory layout applies (none, deepspeed, fsdp, megatron, device_map) and whether FSDP's CPU offload is on."""
    # FSDP's CPU offload: one switch moves the sharded parameters, their gradients and the optimizer step to the CPU
    fsdp_offload = fsdp and offload != "none"
    if fsdp_offload and (zero_stage != 3 or offload != "optimizer+params" or offload_device != "cpu"):
        raise ValueError("FSDP's CPU offload (FSDP1 CPUOffload(offload_params=True), FSDP2 CPUOffloadPolicy) moves "
                         "the sharded parameters, their gradients and the optimizer step to the CPU together: use "
                         "zero_stage='FULL_SHARD', offload='optimizer+params', offload_device='cpu'; got "
                         f"zero_stage={zero_stage_arg!r}, offload={offload!r}, offload_device={offload_device!r} "
                         "(DeepSpeed's ZeRO-Offload/Infinity, any offload to NVMe: give an integer zero_stage >= 1)")
    # Which memory layout applies. ZeRO over one GPU shards nothing: identical to no ZeRO.
    if finetune == "qlora":
        if (offload != "none" and not fsdp_offload) or tp > 1 or (zero_stage and not fsdp) or (fsdp and zero_stage not in (0, 3)):
            raise ValueError("QLoRA over several GPUs is modelled three ways: pp=N (the 4-bit layers split over N "
                             "GPUs, device_map style), zero_stage='FULL_SHARD' with dp=N (FSDP-QLoRA, optionally "
                             "with offload='optimizer+params': FSDP's CPU offload), or dp=N replicas (DDP, or "
                             "FSDP's NO_SHARD); got "
                             f"zero_stage={zero_stage!r}, tp={tp}, offload={offload!r}")
        if pp > 1 and fsdp:
            raise ValueError("QLoRA: choose pp=N (device_map) or zero_stage='FULL_SHARD' (FSDP-QLoRA), not both")
        if qlora_backend.startswith("lightning-") and (pp > 1 or fsdp or dp > 1):
            raise ValueError(f"qlora_backend={qlora_backend!r} is LitGPT's QLoRA through Lightning's "
                             "BitsandbytesPrecision, which LitGPT runs on one GPU (finetune/lora.py: 'Quantization is "
                             "currently not supported for multi-GPU training'); got "
                             f"pp={pp}, dp={dp}, zero_stage={zero_stage!r}")
        if pp > 1 and dp > 1:
            raise ValueError(f"QLoRA with pp={pp} splits one model over {pp} GPUs (device_map); data parallelism "
                             "over several such groups is not modelled (dp must be 1)")
        # dp > 1 without FULL_SHARD: DDP (or FSDP's NO_SHARD, which is DDP), each GPU a replica
        sharding = "device_map" if pp > 1 else ("fsdp" if fsdp and zero_stage == 3 else "none")
    elif offload != "none" and not fsdp_offload:
        if fsdp or zero_stage == 0:
            raise ValueError(f"offload={offload!r} is DeepSpeed's ZeRO-Offload/Infinity: give an integer "
                             "zero_stage >= 1 (FSDP's CPU offload is not modelled)")
        if offload == "optimizer+params" and zero_stage != 3:
            raise ValueError("offloading parameters (ZeRO-Infinity) needs zero_stage=3")
        sharding = "deepspeed"
    elif (zero_stage == 0 or (dp == 1 and not fsdp)) and (tp > 1 or pp > 1) and precision.endswith("mixed"):
        sharding = "megatron"  # tensor/pipeline parallel training is Megatron's mixed precision
    elif zero_stage == 0 or (dp == 1 and not fsdp):
        sharding = "none"  # ZeRO over one GPU shards nothing: DeepSpeed then is plain training
    else:
        # FSDP on one GPU still keeps sharded and unsharded copies apart (PyTorch's FSDP2
        # does; FSDPMemTracker shows it), so it is modelled as such even for dp=1.
        sharding = "fsdp" if fsdp else "deepspeed"
    return sharding, fsdp_offload


def _check_parallel_shapes(model, seq_len, sharding, zero_stage, tp, pp, sequence_parallel, layout="auto") -> None:
    """tp, pp and sequence parallelism against the model's shape (Megatron splits whole heads and widths)."""
    # DeepSpeed's ZeRO partitions flat copies of whatever parameters the model has (stage_1_and_2.py and stage3.py
    # flatten each param group), so it needs no LLaMA shape (step._estimate_gpt); Megatron's layout has its GPT
    # layer (activations.megatron_layer_ledger); other tensor/pipeline splits and FSDP's per-layer units are
    # modelled for LLaMA-style layers only.
    if model.mlp != "gated" and layout not in MEGATRON_MODELS and (tp > 1 or pp > 1 or sharding not in ("none", "deepspeed")):
        raise ValueError(f"parallel layouts are modelled for LLaMA-style models; {model.name} is {model.model_type}")
    if model.num_heads % tp or model.num_kv_heads % tp:
        raise ValueError(f"tp={tp} must divide the {model.num_heads} attention heads and the "
                         f"{model.num_kv_heads} key/value heads of {model.name} (Megatron splits whole heads)")
    if model.num_dense_layers and model.intermediate_size % tp:
        raise ValueError(f"tp={tp} must divide the MLP width {model.intermediate_size}")
    for what, width in (("expert width (moe_intermediate_size)", model.moe_intermediate_size),
                        ("shared expert width", model.shared_expert_intermediate_size)):
        if width and width % tp:  # Megatron's expert tensor parallelism defaults to tp
            raise ValueError(f"tp={tp} must divide the {what} {width} (Megatron splits the experts over "
                             "--expert-tensor-parallel-size, which defaults to tp)")
    if pp > model.num_layers:
        raise ValueError(f"pp={pp} stages but {model.name} has only {model.num_layers} layers")
    if pp > 1 and sharding == "deepspeed" and zero_stage >= 2:
        raise ValueError("DeepSpeed's pipeline engine supports ZeRO stage 0 or 1 only; use zero_stage<=1 with pp>1")
    if sequence_parallel and tp == 1:
        raise ValueError("sequence_parallel needs tp > 1 (it shards the tensor-parallel group's norms and dropouts)")
    if seq_len > model.max_position_embeddings and model.position == "learned":
        raise ValueError(f"seq_len {seq_len} exceeds {model.name}'s learned position table "
                         f"({model.max_position_embeddings})")


def _check_numerics(model, sharding, precision, finetune, optimizer, optimizer_impl, fsdp_mixed_precision, loss,
                    activation_offload, tp, pp) -> None:
    """Optimizer implementation, FSDP mixed precision, loss and activation offload against the layout."""
    # optimizer implementation: torch.optim's choice; other stacks bring their own fused kernels
    if optimizer == "adamw-8bit":
        _not_for("optimizer_impl", optimizer_impl, "foreach", "bitsandbytes' 8-bit AdamW runs its own fused kernel")
    if optimizer == "adafactor" and optimizer_impl == "fused":
        raise ValueError("optimizer_impl='fused' does not apply to adafactor: torch.optim.Adafactor has no fused "
                         "implementation (accepted: 'foreach', 'for-loop')")
    if sharding in ("deepspeed", "megatron"):
        _not_for("optimizer_impl", optimizer_impl, "foreach",
                 f"the {sharding} layout steps with its own fused Adam on the fp32 master copy")
    if not fsdp_mixed_precision and not (sharding == "fsdp" and precision.endswith("mixed") and finetune == "full"):
        raise ValueError("fsdp_mixed_precision=False describes FSDP with fp32 parameters under autocast (no "
                         "MixedPrecisionPolicy); it needs finetune='full', zero_stage='FULL_SHARD' or 'SHARD_GRAD_OP' "
                         "and a *-mixed precision")
    if model.mlp != "gated":
        why = f"{model.name} is estimated with Korthikanti et al.'s GPT formula"
        _not_for("loss", loss, "full", why)
        _not_for("activation_offload", activation_offload, False, why)
    if loss in ("chunked", "chunked-head") and tp > 1:
        raise ValueError(f"loss={loss!r} ({'Liger' if loss == 'chunked' else 'LitGPT'}'s chunked loss) with tp > 1 is "
                         "not modelled; Megatron's vocabulary-parallel cross-entropy already never gathers the full "
                         "vocabulary")
    if activation_offload and (tp > 1 or pp > 1 or sharding in ("deepspeed", "megatron")):
        raise ValueError("activation_offload (torchtune's OffloadActivations) is modelled on one GPU and with FSDP; "
                         f"not with tp={tp}, pp={pp}, sharding {sharding!r}")


def _resolve_attention(model, attention, recompute, layout) -> tuple[str, str]:
    """The attention transformers runs (eager where the family needs it: activations.needs_eager), with the note why.
    Under layout='megatron', recompute='selective' is Megatron's (the attention core) on any layer of its ledger."""
    attention_note = ""
    if model.mlp == "gated":
        from memlib.training.activations import needs_eager
        attention_note = needs_eager(model)
        if attention_note and attention == "sdpa":
            attention = "eager"  # what transformers runs: estimated as such, and said in a note
        megatron_selective = layout == "megatron" and (megatron_dense_layer(model) or megatron_moe_layer(model))
        if recompute == "selective" and not model.is_llama_layer and not megatron_selective:
            raise ValueError(f"recompute='selective' (torchtitan's op-level policy) is modelled for the LLaMA layer; "
                             f"{model.name} ({model.model_type}) has other ops: use recompute 'full' or 'none'")
    return attention, attention_note


def _resolve_adapters(model, finetune, precision, lora_rank, lora_targets, base_dtype, adapter_dtype) -> tuple:
    """The LoRA targets, rank and frozen base dtype (peft's defaults; QLoRA computes in 16-bit)."""
    if finetune == "full":
        targets: tuple[str, ...] = ()
        lora_rank = 0
        base = "auto"
    else:
        if model.mlp != "gated":
            raise ValueError(f"LoRA/QLoRA estimates need a LLaMA-style model; {model.name} is {model.model_type}")
        if model.is_moe or model.is_mla or model.fused_qkv or model.fused_gate_up:
            what = ("routed experts (stacked 3-D parameters)" if model.is_moe else
                    "MLA projections" if model.is_mla else "fused qkv_proj/gate_up_proj")
            raise ValueError(f"LoRA/QLoRA estimates are modelled for models with LLaMA's q/k/v/o and gate/up/down "
                             f"projections; {model.name} has {what}: use finetune='full' (or a dense model)")
        targets = lora_mod.resolve_targets(model, lora_targets)
        lora_mod.lora_params(model, lora_rank, targets)  # validates the rank against each layer
        if finetune == "qlora" and precision in ("fp32",):
            raise ValueError("qlora computes in 16-bit; use precision 'bf16', 'fp16', 'bf16-mixed' or 'fp16-mixed'")
        sixteen = "fp32" if precision == "fp32" else precision[:4]
        base = sixteen if base_dtype == "auto" else base_dtype
        if base == "fp32" and precision in ("bf16", "fp16"):
            raise ValueError(f"base_dtype='fp32' with precision={precision!r}: an fp32 base computes in fp32 unless "
                             "autocast is on; use precision 'bf16-mixed'/'fp16-mixed' (autocast) or 'fp32'")
        if base != "fp32" and base != sixteen:
            raise ValueError(f"base_dtype={base_dtype!r} does not match precision={precision!r} (accepted: 'auto', "
                             f"'fp32' or {sixteen!r})")
        if adapter_dtype not in ("fp32", base):
            raise ValueError(f"adapter_dtype={adapter_dtype!r} with a {base} base: peft keeps adapters in fp32 "
                             f"(autocast_adapter_dtype=True, its default) or in the base dtype ({base!r})")
    return targets, lora_rank, base


def _check_moe_options(model: Model, dp, ep, router_aux_loss, capacity_factor, dp_label: str | None = None,
                       tp: int = 1, etp: int | None = None) -> None:
    """ep, etp, router_aux_loss and capacity_factor: MoE options, each checked against the model and the layout."""
    if not model.is_moe:
        why = f"{model.name} is dense (no experts)"
        if ep != 1:
            raise ValueError(f"ep={ep}: expert parallelism needs a mixture-of-experts model; {why}")
        _not_for("etp", etp, None, why)
        _not_for("router_aux_loss", router_aux_loss, True, why)
        _not_for("capacity_factor", capacity_factor, None, why)
        return
    if model.num_experts % ep:
        raise ValueError(f"ep={ep} must divide {model.name}'s {model.num_experts} experts (each GPU of the "
                         "expert-parallel group holds num_experts / ep whole experts)")
    if etp is not None and etp != tp:  # Megatron's MoE parallel folding: ep x etp GPUs out of the tp x dp ones
        if (dp * tp) % (ep * etp) or model.moe_intermediate_size % etp:
            raise ValueError(f"ep x etp = {ep} x {etp} must divide tp x {dp_label or 'dp'} = {tp} x {dp} and etp "
                             f"{model.name}'s expert width {model.moe_intermediate_size} (Megatron's "
                             "--expert-model-parallel-size and --expert-tensor-parallel-size fold the experts over the "
                             "tp x dp GPUs)")
    elif dp % ep:
        raise ValueError(f"ep={ep} must divide {dp_label or f'dp={dp}'}: the expert-parallel group is carved out of the data-parallel "
                         "group (DeepSpeed-MoE's ep_size, Megatron's --expert-model-parallel-size)")
    if capacity_factor is not None:
        if family_of(model).every_expert:
            raise ValueError(f"capacity_factor={capacity_factor!r} does not apply to {model.name}: transformers' "
                             "Llama 4 experts run every token through every expert (no routing to drop)")
        if isinstance(capacity_factor, bool) or not isinstance(capacity_factor, (int, float)) \
                or not 0 < capacity_factor < float("inf"):
            raise ValueError(f"capacity_factor must be a number > 0 (or None: dropless), got {capacity_factor!r}")


def _check_context_parallel(model: Model, seq_len, cp, cp_rotate, attention, finetune, zero_stage, fsdp, offload, tp,
                            sequence_parallel) -> None:
    """Context parallelism as torch's context_parallel (torchtitan) and Megatron-Core run it: what they accept.

    - seq_len divisible by 2 x cp: the load balancer cuts each sequence into 2 x cp chunks and gives rank i
      chunks i and 2cp - 1 - i (torch _context_parallel/_load_balancer.py _HeadTailLoadBalancer; torchtitan
      ParallelDims.seq_len_divisor = tp x 2 x cp; Megatron-Core's get_batch_on_this_cp_rank); with sequence
      parallelism each of the cp shards is split over tp GPUs too, so 2 x cp x tp.
    - the attention is an SDPA kernel (flash, memory-efficient, cuDNN): ring attention replaces exactly those
      ops (_context_parallel/_attention.py _sdpa_handler); eager attention, and the explicit masks of
      sliding-window / chunked layers, are not ring attention.
    - parameters are sharded by FSDP over the dp x cp GPUs (torchtitan's dp_shard_cp mesh) or replicated
      (zero_stage=0); DeepSpeed's ZeRO and offload pair with DeepSpeed-Ulysses, a different scheme.
    """
    if cp_rotate != "allgather" and cp == 1:
        raise ValueError(f"cp_rotate={cp_rotate!r} describes ring attention's K/V exchange; it needs cp > 1")
    need = 2 * cp * (tp if sequence_parallel else 1)
    if seq_len % need:
        what = f"2 x cp x tp = {need}" if sequence_parallel and tp > 1 else f"2 x cp = {need}"
        raise ValueError(f"seq_len={seq_len} must be divisible by {what}: context parallelism cuts each sequence into "
                         f"2 x cp chunks for load balancing (torchtitan's seq_len_divisor; Megatron-Core's CP); "
                         f"pad it to {-(-seq_len // need) * need}")
    if model.mlp != "gated":
        raise ValueError(f"cp={cp}: context parallelism is modelled for LLaMA-style models; {model.name} is "
                         f"{model.model_type} (estimated with Korthikanti et al.'s GPT formula)")
    from memlib.training.activations import _explicit_mask, needs_eager
    if needs_eager(model):
        raise ValueError(f"cp={cp}: {model.name}'s attention runs eagerly ({needs_eager(model)}), which ring attention "
                         "cannot replace")
    if attention != "sdpa":
        raise ValueError(f"cp={cp} with attention={attention!r}: context parallelism replaces the SDPA kernels "
                         "(flash, memory-efficient, cuDNN) with ring attention; eager attention is not supported "
                         "(use attention='sdpa')")
    masked = [t for t in model.layer_counts() if _explicit_mask(model, t, seq_len)]
    if masked:
        raise ValueError(f"cp={cp}: {model.name}'s {', '.join(masked)} layers need an explicit (s x s) mask at "
                         f"seq_len={seq_len}; torch's ring attention handles causal SDPA only")
    if finetune == "qlora":
        raise ValueError(f"cp={cp} with finetune='qlora' is not modelled (FSDP-QLoRA and device_map QLoRA do not "
                         "combine with ring attention here); use finetune 'full' or 'lora'")
    if offload != "none" or (zero_stage and not fsdp):
        raise ValueError(f"cp={cp} is modelled with FSDP (zero_stage='FULL_SHARD' or 'SHARD_GRAD_OP' over dp x cp GPUs, "
                         "torchtitan) or without sharding (zero_stage=0); DeepSpeed's ZeRO stages and offload go with "
                         f"DeepSpeed-Ulysses, another scheme (got zero_stage={zero_stage!r}, offload={offload!r})")
