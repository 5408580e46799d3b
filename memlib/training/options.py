"""The options of estimate_training, checked once: TrainingSetup is what every term reads.

Bad input is a ValueError naming the argument, the value and what is accepted; an option
that does not apply to the chosen setup is an error too (never silently ignored).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from memlib.training import lora as lora_mod
from memlib._checks import choice, flag
from memlib.models import Model, get_model
from memlib.models.families import of as family_of

# The options' accepted values, defaults and validators: training/option_table.py (one entry per option)
from memlib.training.option_table import (  # noqa: E402  (re-exported: these names were defined here)
    ADAPTER_DTYPES, ATTENTIONS, BASE_DTYPES, CP_ROTATES, FINETUNES, FSDP_ALIASES, LAYOUTS, LOSSES, MEGATRON_CE_FUSIONS,
    LOSS_DTYPES, FLOAT8S, OFFLOAD_DEVICES, OFFLOADS, OPTIMIZER_IMPLS, PRECISIONS, QLORA_BACKENDS, RECOMPUTES,
    zero_stage_of)
from memlib.training import option_table
from memlib.training.recipes import RECIPES

MEGATRON_MODELS = ("megatron", "megatron-deepspeed")  # layouts whose model and loss are Megatron's
# estimate_training's defaults as the table had them at import (option_table.defaults() reads it now)
DEFAULTS = option_table.defaults()


@dataclass(frozen=True)
class TrainingSetup:
    """A checked run: every option of the table (option_table.OPTIONS) as a field of the same name, resolved
    (base_dtype 'auto' -> its dtype, lora_targets -> the projections, None -> what it means), plus what the options
    imply (sharding, ddp, ...). Made by check_setup / TrainingSetup.create, never by hand: no option has a default
    here, the table holds them."""
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
    offload_device: str
    grad_accum: int
    sequence_parallel: bool
    optimizer_impl: str
    lora_dropout: float
    adapter_dtype: str
    base_dtype: str  # resolved: "fp32" | "bf16" | "fp16" for LoRA/QLoRA, "auto" for full
    qlora_backend: str
    double_quant: bool
    loss: str
    activation_offload: bool
    fsdp_mixed_precision: bool
    ep: int  # expert-parallel degree (MoE): routed experts split over ep GPUs of the data-parallel group
    etp: int | None  # Megatron's expert tensor-parallel size (MoE); None: tp (expert_tp)
    router_aux_loss: bool  # MoE: the load-balancing loss over the router logits (where the family has one)
    capacity_factor: float | None  # MoE: expert capacity (token dropping); None: dropless
    cp: int  # context-parallel degree: each sequence split over cp GPUs (ring attention); see context_parallel.py
    cp_rotate: str  # how ring attention moves K/V (CP_ROTATES)
    gradient_as_bucket_view: bool  # DDP's option: gradients as views into its all-reduce buckets
    layout: str  # LAYOUTS
    # DeepSpeed's zero_optimization options (runtime/zero/config.py defaults): the gradient bucket in elements,
    # double-buffered with overlap_comm (resolved: DeepSpeed's default is on for stage 3 only), contiguous_gradients
    reduce_bucket_size: int
    overlap_comm: bool
    contiguous_gradients: bool
    # ZeRO-3: the model was built under deepspeed.zero.Init (False: partitioned by deepspeed.initialize; then
    # torch's linear keeps each layer's gathered weights until its backward, terms.zero3_saved_weight_bytes)
    zero_init: bool
    # Megatron-Core (layout='megatron'): model chunks per pipeline GPU (interleaved 1F1B) and --hidden-dropout
    vpp: int
    hidden_dropout: float  # resolved (None -> the layer's default)
    attention_dropout: float  # --attention-dropout: masks kept only by the unfused core attention (eager)
    megatron_ce_inplace: bool  # resolved: the vocab-parallel loss subtracts the max in place (Megatron-LM >= 2024-06)
    megatron_ce_fusion: str | None  # --cross-entropy-loss-fusion's implementation (MEGATRON_CE_FUSIONS)
    # --defer-embedding-wgrad-compute with --wgrad-deferral-limit N (0: every micro-batch); None: the flag off
    megatron_wgrad_deferral: int | None
    # decoder layers of each pipeline stage, first to last (Megatron's --decoder-first/last-pipeline-num-layers);
    # None: the even split of layout.pipeline_split
    pp_split: tuple[int, ...] | None
    # the loop keeps the model's output (its logits) until the next forward (a custom loop's `out = model(...)`);
    # False: HF Trainer's compute_loss returns the loss alone, the logits are freed before the backward
    keep_outputs: bool
    # a LoRA adapter on the output head too (LitGPT's lora_head=True; peft's target_modules with "lm_head")
    lora_head: bool
    # the dtype the cross-entropy works in over the logits: "fp32" (transformers' ForCausalLMLoss upcasts; the
    # usual) or "16-bit" (F.cross_entropy on the bf16/fp16 logits as they are: LOSS_DTYPES)
    loss_dtype: str
    float8: str  # FLOAT8S: torchao's Float8Linear on the decoder's linears, or none
    compile: bool  # torch.compile of the model (modelled with full recompute only: _check_compile)
    # --- what the options imply ---
    sharding: str = "none"  # "none" | "deepspeed" | "fsdp" | "megatron": whose memory layout applies
    notes: tuple[str, ...] = ()  # defaults that do not apply here, said once
    attention_note: str = ""  # why the attention runs eagerly whatever was asked (Gemma 2, gpt-oss)
    cp_shard: bool = False  # this is one GPU's view of a cp > 1 setup (context_parallel.local_setup)
    ddp: bool = False  # plain data parallelism over dp > 1 replicas with torch's DistributedDataParallel
    # The options as given (every option of the table, defaults included): what replace() starts from
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
_zero_stage = zero_stage_of  # option_table's: (stage, is an FSDP name)


class NotApplicable(ValueError):
    """An option set away from its default where it does not apply (`option` names it): a recipe preset that set
    it drops it (memlib.training.recipes.resolve); a user who set it gets this error."""

    def __init__(self, option: str, message: str):
        super().__init__(message)
        self.option = option


def _not_for(option: str, value, why: str) -> None:
    """An option set away from its default (the table's) where it does not apply is an error, never ignored."""
    if value != option_table.OPTIONS[option].default:
        raise NotApplicable(option, f"{option}={value!r} does not apply here: {why}")


def check_setup(model, **options) -> TrainingSetup:
    """Every option checked once, then resolved into the TrainingSetup that every term reads. First each value on
    its own by its kind's validator (option_table.validate: an unknown option, a bad flag, choice or count is a
    ValueError naming it and what it accepts), then the options against each other and the model (an option set away
    from its default where it does not apply is a NotApplicable error). Options left out take the table's default."""
    given = option_table.complete(options)
    checked = option_table.validate(given)
    return _resolve(_check_model(model), given, **checked)


def _resolve(model, given, *, seq_len, micro_batch, precision, optimizer, finetune, lora_rank, lora_targets,
             recompute, attention, zero_stage, dp, tp, pp, offload, offload_device, grad_accum, sequence_parallel,
             optimizer_impl, lora_dropout, adapter_dtype, base_dtype, qlora_backend, double_quant, loss,
             activation_offload, fsdp_mixed_precision, ep, router_aux_loss, capacity_factor, cp, cp_rotate,
             gradient_as_bucket_view, layout, reduce_bucket_size, overlap_comm, contiguous_gradients, zero_init, vpp,
             hidden_dropout, attention_dropout, megatron_ce_inplace, megatron_ce_fusion, megatron_wgrad_deferral,
             keep_outputs, etp, pp_split, lora_head, loss_dtype, float8, compile, **plain) -> TrainingSetup:
    """The checked options against each other and the model. `plain`: options no rule here reads, which go into the
    TrainingSetup as checked (a newly added option lands there until a rule needs it)."""
    _check_moe_options(model, dp * cp, ep, router_aux_loss, capacity_factor,
                       dp_label=f"dp x cp = {dp} x {cp}" if cp > 1 else None, tp=tp, etp=etp)
    zero_stage_arg = zero_stage
    zero_stage, fsdp = _zero_stage(zero_stage)
    if offload == "none" and offload_device != "cpu":
        raise ValueError(f"offload_device={offload_device!r} needs offload='optimizer' or 'optimizer+params' "
                         "(nothing is offloaded with offload='none')")
    lora_rank = _check_adapter_options(model, finetune, lora_rank, lora_targets, lora_dropout, adapter_dtype, base_dtype,
                                       qlora_backend, double_quant)
    sharding, fsdp_offload = _sharding(model, finetune, precision, zero_stage, zero_stage_arg, fsdp, dp, tp, pp, offload,
                                       offload_device, qlora_backend)
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
    if loss != "full" or sharding == "megatron" or layout in MEGATRON_MODELS or model.mlp != "gated":
        _not_for("keep_outputs", keep_outputs, "only transformers' full loss leaves logits in the model's output "
                 "(Liger's and Megatron's losses make none to keep, LitGPT's loop holds its own; GPT-style models use "
                 "Korthikanti et al.'s formula)")
    attention, attention_note = _resolve_attention(model, attention, recompute, layout)
    targets, lora_rank, base, lora_head, loss_dtype = _adapters_and_loss(
        model, finetune, precision, recompute, sharding, layout, (tp, pp, cp), loss, lora_rank, lora_targets, lora_head,
        base_dtype, adapter_dtype, loss_dtype, float8, compile)
    # torch DDP: replicas over dp > 1 GPUs with no ZeRO/FSDP name (what HF Trainer / Accelerate run on several GPUs
    # without DeepSpeed or FSDP). FSDP's NO_SHARD and Megatron's DDP keep no bucket copy of the gradients.
    ddp = sharding == "none" and dp > 1 and not fsdp
    if not ddp:
        _not_for("gradient_as_bucket_view", gradient_as_bucket_view,
                 "it is an option of torch's DistributedDataParallel: plain data parallelism (dp > 1, zero_stage=0, "
                 "no tp/pp) only")
    if cp > 1 or cp_rotate != "allgather":
        _check_context_parallel(model, seq_len, cp, cp_rotate, attention, finetune, zero_stage, fsdp, offload,
                                tp, sequence_parallel)
    return TrainingSetup(
        model=model, seq_len=seq_len, micro_batch=micro_batch, precision=precision, optimizer=optimizer,
        finetune=finetune, lora_rank=lora_rank, lora_targets=targets, recompute=recompute, attention=attention,
        zero_stage=zero_stage, dp=dp, tp=tp, pp=pp, offload=offload, offload_device=offload_device,
        grad_accum=grad_accum, sequence_parallel=sequence_parallel, sharding=sharding, optimizer_impl=optimizer_impl,
        lora_dropout=lora_dropout, adapter_dtype=adapter_dtype, base_dtype=base, qlora_backend=qlora_backend,
        double_quant=double_quant, loss=loss, activation_offload=activation_offload,
        fsdp_mixed_precision=fsdp_mixed_precision, ep=ep, router_aux_loss=router_aux_loss,
        capacity_factor=capacity_factor, attention_note=attention_note, cp=cp, cp_rotate=cp_rotate, ddp=ddp,
        gradient_as_bucket_view=gradient_as_bucket_view, layout=layout, reduce_bucket_size=reduce_bucket_size,
        overlap_comm=overlap_comm, contiguous_gradients=contiguous_gradients, zero_init=zero_init, vpp=vpp,
        hidden_dropout=hidden_dropout, attention_dropout=attention_dropout, megatron_ce_inplace=megatron_ce_inplace,
        megatron_ce_fusion=megatron_ce_fusion, megatron_wgrad_deferral=megatron_wgrad_deferral,
        keep_outputs=keep_outputs, etp=etp, pp_split=pp_split, lora_head=lora_head, loss_dtype=loss_dtype, float8=float8,
        compile=compile, options=tuple(given.items()), **plain)


def _check_float8(model, float8, finetune, precision, sharding, layout) -> None:
    """float8='torchao': torchao's Float8Linear on every decoder linear, as torchtitan converts them. Modelled for full
    training of dense LLaMA-style layers in bf16-mixed (FSDP2's MixedPrecisionPolicy or one GPU's autocast)."""
    if float8 == "none":
        return
    if (finetune != "full" or precision != "bf16-mixed" or sharding not in ("none", "fsdp") or layout != "auto"
            or model.is_moe or model.is_mla or not model.is_llama_layer):
        raise ValueError(f"float8='torchao' (torchao's Float8Linear, torchtitan's float8 converter) is modelled for "
                         "full training of dense LLaMA-style layers in precision 'bf16-mixed' on one GPU or under FSDP "
                         f"(zero_stage='FULL_SHARD'); got finetune={finetune!r}, precision={precision!r}, "
                         f"sharding {sharding!r}, layout={layout!r}, {model.name} (Transformer Engine's and "
                         "DeepSeek-V3's recipes: memlib.training.fp8.fp8_training_memory)")


def _check_compile(compile, recompute) -> None:
    """compile=True: torch.compile of the model. Only with recompute='full' is what a compiled step keeps known here:
    each layer's input, as in eager mode (torchao's float8nocompile benchmark, pytorch/ao@d99785c
    torchao/prototype/float8nocompile/README.md, full AC: bf16 eager 28.07 GB, float8 + torch.compile 28.03 GB)."""
    if compile and recompute != "full":
        raise ValueError(f"compile=True with recompute={recompute!r} is not modelled: Inductor's min-cut partitioner "
                         "recomputes pointwise ops (norms, SiLU, casts) in the backward and saves fewer intermediates "
                         "than memlib's eager ledger (torchtitan's Llama 3.1 8B: 82.4 -> 77.0 GiB with selective "
                         "recompute); with recompute='full' a compiled step keeps each layer's input, as eager does")


def _adapters_and_loss(model, finetune, precision, recompute, sharding, layout, tp_pp_cp, loss, lora_rank, lora_targets,
                       lora_head, base_dtype, adapter_dtype, loss_dtype, float8, compile) -> tuple:
    """The adapters (targets, rank, base dtype; the head adapter) and the loss dtype, float8 and compile options,
    checked: (targets, lora_rank, base, lora_head, loss_dtype)."""
    tp, pp, cp = tp_pp_cp
    lora_targets, lora_head = _lora_head(model, finetune, lora_targets, lora_head, lora_rank, sharding, tp, pp, cp, loss)
    targets, lora_rank, base = _resolve_adapters(model, finetune, precision, lora_rank, lora_targets, base_dtype,
                                                 adapter_dtype)
    _check_float8(model, float8, finetune, precision, sharding, layout)
    _check_compile(compile, recompute)
    return targets, lora_rank, base, lora_head, _check_loss_dtype(model, loss_dtype, loss, precision, finetune,
                                                                  sharding, layout)


def _check_loss_dtype(model, loss_dtype, loss, precision, finetune, sharding, layout) -> str:
    """loss_dtype='16-bit': cross-entropy over the 16-bit logits without the fp32 upcast; only where it can happen."""
    if loss_dtype == "fp32":
        return loss_dtype
    if precision not in ("bf16", "fp16"):
        raise ValueError(f"loss_dtype='16-bit' needs precision 'bf16' or 'fp16' (no autocast); got precision="
                         f"{precision!r}: fp32 logits have no 16-bit loss, and under autocast torch runs cross_entropy, "
                         "log_softmax and nll_loss in fp32 (its CUDA ops that autocast to float32)")
    if loss != "full" or sharding == "megatron" or layout in MEGATRON_MODELS or model.mlp != "gated":
        raise ValueError(f"loss_dtype='16-bit' describes F.cross_entropy over the whole 16-bit logits (loss='full', "
                         f"transformers' LLaMA-style models); got loss={loss!r}, layout={layout!r}, {model.name} "
                         "(Megatron's loss: megatron_ce_fusion='te' keeps the logits 16-bit; LitGPT's chunked head is "
                         "fp32 under Fabric; Liger's chunked loss keeps no logits)")
    return loss_dtype


def _lora_head(model, finetune, lora_targets, lora_head, lora_rank, sharding, tp, pp, cp, loss) -> tuple:
    """lora_head (LitGPT's name) or "lm_head" among lora_targets (peft's target_modules): one adapter on the output
    head, r (h + V) parameters (lora.head_lora_params). Modelled on one GPU or DDP replicas, without tp/pp/cp and
    without Megatron's vocabulary-parallel loss."""
    targets, in_list = lora_mod.split_head_target(lora_targets)
    if finetune == "full":
        _not_for("lora_head", lora_head, "finetune='full' trains the head itself (LoRA options need "
                 "finetune='lora' or 'qlora')")
        return lora_targets, False  # (a "lm_head" target is refused with the other LoRA options)
    head = bool(lora_head or in_list)
    if head:
        if model.head != "lm" or model.mlp != "gated":
            raise ValueError(f"lora_head: {model.name} has no separate LLaMA-style output head to adapt here")
        if sharding not in ("none",) or tp > 1 or pp > 1 or cp > 1:
            raise ValueError("lora_head (LoRA on lm_head) is modelled on one GPU or over DDP replicas; with "
                             f"sharding {sharding!r}, tp={tp}, pp={pp}, cp={cp} the head adapter's placement "
                             "(FSDP's root unit, a vocabulary-parallel B) is not modelled")
        if loss == "chunked":
            raise ValueError("lora_head with loss='chunked' (Liger's fused linear cross-entropy reads the head's "
                             "weight alone; an adapter on the head is not part of its kernel)")
        lora_mod.head_lora_params(model, lora_rank)  # the rank against the head's sides
    return targets, head


def _check_pp_split(model, pp, vpp, pp_split) -> tuple[int, ...] | None:
    """pp_split: the decoder layers of each of the pp stages, first to last, all of them (Megatron's
    --decoder-first-pipeline-num-layers F --decoder-last-pipeline-num-layers K on L layers is
    (F, (L - F - K) / (pp - 2), ..., K))."""
    if pp_split is None:
        return None
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
    if sharding != "deepspeed":
        why = "it is an option of DeepSpeed's ZeRO (an integer zero_stage >= 1 over dp > 1 GPUs, or offload)"
        _not_for("reduce_bucket_size", reduce_bucket_size, why)
        _not_for("overlap_comm", overlap_comm, why)
        _not_for("contiguous_gradients", contiguous_gradients, why)
        _not_for("zero_init", zero_init, why)
        return False
    if zero_stage != 3:
        _not_for("zero_init", zero_init, "deepspeed.zero.Init partitions parameters: ZeRO stage 3 only")
    if finetune == "qlora":
        _not_for("zero_init", zero_init, "zero_init=False is modelled for full and LoRA fine-tuning (QLoRA's "
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
    if fusion is None:  # the table's check made True 'native' and False None
        return None
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
    if limit is None:  # the table's check made True 0 and False None
        return None
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
    if sharding != "megatron" or layout == "megatron-deepspeed":  # tp/pp > 1 alone is Megatron's layout too
        _not_for("vpp", vpp, "it is a Megatron-Core option (DeepSpeed's pipeline does not interleave): give "
                 "layout='megatron' (or recipe='megatron')")
    if layout not in MEGATRON_MODELS:  # only Megatron's layer ledgers and loss have these
        _not_for("hidden_dropout", hidden_dropout or None,
                 "it is a Megatron-Core option of its fused layers: give layout='megatron' (or recipe='megatron')")
        _not_for("attention_dropout", attention_dropout or None,
                 "it is a Megatron-Core option of its core attention: give layout='megatron' (or recipe='megatron')")
        _not_for("megatron_ce_inplace", megatron_ce_inplace,
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


def _check_adapter_options(model, finetune, lora_rank, lora_targets, lora_dropout, adapter_dtype, base_dtype,
                           qlora_backend, double_quant) -> int:
    """LoRA/QLoRA options are errors where they do not apply (peft's and bitsandbytes' options)."""
    # LoRA settings are checked even under full fine-tuning: a wrong one is an error, not a silent default.
    if finetune == "full":
        if model.mlp == "gated" and lora_targets is not None:
            lora_mod.resolve_targets(model, lora_targets)
        why = "finetune='full' trains every weight (LoRA options need finetune='lora' or 'qlora')"
        _not_for("lora_rank", lora_rank, why)
        _not_for("lora_targets", lora_targets, why)
        _not_for("lora_dropout", lora_dropout, why)
        _not_for("adapter_dtype", adapter_dtype, why)
        _not_for("base_dtype", base_dtype, why + "; its dtypes follow precision")
    if finetune != "qlora":
        why = "it describes QLoRA's 4-bit base (finetune='qlora')"
        _not_for("qlora_backend", qlora_backend, why)
        _not_for("double_quant", double_quant, why)
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


def _check_parallel_shapes(model, seq_len, sharding, zero_stage, tp, pp, sequence_parallel, layout) -> None:
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
        _not_for("optimizer_impl", optimizer_impl, "bitsandbytes' 8-bit AdamW runs its own fused kernel")
    if optimizer == "adafactor" and optimizer_impl == "fused":
        raise NotApplicable("optimizer_impl", "optimizer_impl='fused' does not apply to adafactor: torch.optim.Adafactor has no fused "
                         "implementation (accepted: 'foreach', 'for-loop')")
    if sharding in ("deepspeed", "megatron"):
        _not_for("optimizer_impl", optimizer_impl,
                 f"the {sharding} layout steps with its own fused Adam on the fp32 master copy")
    if not fsdp_mixed_precision and not (sharding == "fsdp" and precision.endswith("mixed") and finetune == "full"):
        raise ValueError("fsdp_mixed_precision=False describes FSDP with fp32 parameters under autocast (no "
                         "MixedPrecisionPolicy); it needs finetune='full', zero_stage='FULL_SHARD' or 'SHARD_GRAD_OP' "
                         "and a *-mixed precision")
    if model.mlp != "gated":
        why = f"{model.name} is estimated with Korthikanti et al.'s GPT formula"
        _not_for("loss", loss, why)
        _not_for("activation_offload", activation_offload, why)
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
        if model.is_moe or model.is_mla:
            what = "routed experts (stacked 3-D parameters)" if model.is_moe else "MLA projections"
            raise ValueError(f"LoRA/QLoRA estimates are modelled for models with LLaMA's q/k/v/o and gate/up/down "
                             f"projections (or Phi-3's fused qkv_proj/gate_up_proj); {model.name} has {what}: use "
                             "finetune='full' (or a dense model)")
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


def _check_moe_options(model: Model, dp, ep, router_aux_loss, capacity_factor, dp_label: str | None, tp: int,
                       etp: int | None) -> None:
    """ep, etp, router_aux_loss and capacity_factor: MoE options, each checked against the model and the layout."""
    if not model.is_moe:
        why = f"{model.name} is dense (no experts)"
        if ep != 1:
            raise ValueError(f"ep={ep}: expert parallelism needs a mixture-of-experts model; {why}")
        _not_for("etp", etp, why)
        _not_for("router_aux_loss", router_aux_loss, why)
        _not_for("capacity_factor", capacity_factor, why)
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


# --- the recipe presets (training/recipes.py) merged with the user's options -------------------------------------
def resolve(model, recipe: str | None, options: dict) -> TrainingSetup:
    """check_setup on a preset's options overridden by `options`; the setup remembers the preset and what it set.
    The preset's values were checked against the option table when recipes.py was imported."""
    option_table.complete(options)  # an unknown option is an error before any preset is read
    if recipe is None:
        return check_setup(model, **options)
    r = RECIPES[choice("recipe", recipe, RECIPES)]
    finetune = options.get("finetune", r.options.get("finetune", option_table.OPTIONS["finetune"].default))
    preset = {k: v for k, v in r.applied(finetune).items() if k not in options}
    s = _checked(model, preset, options, recipe)
    adamw = {k: v for k, v in r.torch_adamw.items() if k not in options and k not in preset}
    if adamw and s.optimizer == "adamw" and s.sharding not in ("deepspeed", "megatron"):
        preset.update(adamw)   # the run steps with torch.optim.AdamW: the framework's choice of its implementation
        s = _checked(model, preset, options, recipe)
    return dataclasses.replace(s, recipe=recipe, recipe_set=tuple(preset.items()))


def _checked(model, preset: dict, options: dict, recipe: str) -> TrainingSetup:
    """check_setup on the preset overridden by the user's options. A preset never sets an option that does not
    apply to this setup: such an option is dropped from `preset` (in place); the user's own is an error. Any other
    error that names an option the preset set says so (the user never typed it)."""
    while True:
        try:
            return check_setup(model, **{**preset, **options})
        except NotApplicable as e:
            if e.option not in preset:
                raise  # the user's own option: say so
            del preset[e.option]
        except ValueError as e:
            named = [k for k in preset if re.search(rf"\b{k}=", str(e))]
            if not named:
                raise
            set_by = ", ".join(f"{k}={preset[k]!r}" for k in named)
            raise ValueError(f"{e} ({set_by} set by recipe {recipe!r}; give the option yourself to override it)") \
                from None
