"""The named terms of a training step's memory, one small function each, with its source.

Every function takes the step's context `c` (the setup, the GPU's stage, its byte widths)
and returns bytes on one GPU. step.py adds them up into the moments of a step; an
Estimate keeps them (est.terms) and explain() prints each with the first line of its
docstring, which says where the term comes from.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from memlib._checks import flag
from memlib.models.families import of as family_of
from memlib.training.sharding import MEGATRON_LAYOUTS
from memlib.training import activations as act
from memlib.training import lora as lora_mod
from memlib.training import optimizers as opt
from memlib.training import sharding as zero
from memlib.training.layout import Stage, StageSums
from memlib.training.options import TrainingSetup

DEEPSPEED_SUB_GROUP = 10**9  # zero_optimization.sub_group_size default (DeepSpeed config docs)
DEEPSPEED_REDUCE_BUCKET = 5 * 10**8  # zero_optimization.reduce_bucket_size default, elements
DEEPSPEED_NVME_BUFFERS = 5 * 10**8  # offload_param buffer_count x buffer_size defaults (5 x 1e8 elements)

# Under AMP the weights are fp32 and every matmul reads a 16-bit copy; the embedding runs
# outside autocast, so the residual stream is fp32 too (torch.autocast op lists).
NUMERICS = {
    "fp32": act.Numerics(residual=4, compute=4, autocast=False),
    "bf16": act.Numerics(residual=2, compute=2, autocast=False),
    "fp16": act.Numerics(residual=2, compute=2, autocast=False),
    "bf16-mixed": act.Numerics(residual=4, compute=2, autocast=True),
    "fp16-mixed": act.Numerics(residual=4, compute=2, autocast=True),
}
PARAM_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "bf16-mixed": 4, "fp16-mixed": 4}


BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}


@dataclass(frozen=True)
class Widths:
    """Byte widths of the model states and the numerics of the compute, per framework layout."""

    param: int  # trainable parameters (full fine-tuning: all parameters; LoRA/QLoRA: the adapters)
    grad: int
    state: int  # optimizer states
    master: int  # a separate fp32 master copy (DeepSpeed, Megatron), 0 if none
    num: act.Numerics
    note: str = ""
    base: int = 0  # the frozen base (LoRA) or its unquantized part (QLoRA); full fine-tuning: = param
    cast_base: bool = False  # autocast makes 16-bit copies of fp32 base weights
    cast_adapters: bool = False  # ... and of fp32 adapters
    gathered: int = 0  # FSDP: width of the all-gathered (unsharded) parameters and their gradients
    reduce: int = 0  # FSDP: width of the reduce-scatter input
    gathered_base: int = 0  # FSDP, LoRA: width the frozen base is gathered at (0: its stored width, base)

    @property
    def base_gathered(self) -> int:
        return self.gathered_base or self.base


def widths(s: TrainingSetup, k: int) -> Widths:
    """Byte widths of parameters, gradients, states and activations for the setup's layout."""
    if s.sharding == "megatron":
        # Megatron-LM's mixed precision (NVIDIA/Megatron-LM dist_optimizer.md's table, memlib.parallel.megatron):
        # 16-bit parameters, fp32 master weights + Adam moments; 16-bit compute, no autocast copies. --bf16 forces
        # accumulate_allreduce_grads_in_fp32 (arguments.py), so its main-grad buffer is fp32 (18 bytes/param);
        # --fp16 keeps it 16-bit, and the step copies it to fp32 (optimizer_step_temporaries): 20 bytes/param.
        if s.layout == "megatron-deepspeed":  # zero_stage=0: DeepSpeed's BF16_Optimizer (bf16_lp_grad_bytes)
            whole, shard = MEGATRON_LAYOUTS["fp32-grads"]
            return Widths(2, 4, 4, 4, NUMERICS["bf16"],
                          f"DeepSpeed's BF16_Optimizer: 2-byte params, 4-byte fp32 gradients and the 2-byte bf16 ones "
                          f"backward leaves, {shard}-byte fp32 master + Adam partitioned over dp={s.dp}: {whole + 2} + "
                          f"{shard}/{s.dp} = {whole + 2 + shard / s.dp:g} bytes/param", base=2, gathered=2, reduce=4)
        grads = "fp32-grads" if s.precision == "bf16-mixed" else "fp16-grads"
        whole, shard = MEGATRON_LAYOUTS[grads]
        dist = (f"; its distributed optimizer shards the {shard} bytes over dp={s.dp}: {whole} + {shard}/{s.dp} = "
                f"{whole + shard / s.dp:g} bytes/param" if k == 1 and s.dp > 1 else "")
        if dist and s.expert_dp != s.dp and s.model.is_moe:  # the routed experts' states over their own group
            edp = s.expert_dp
            dist += (f" (the routed experts' over their {edp} expert data-parallel GPUs, dp tp / (ep etp): {whole} + "
                     f"{shard}/{edp} = {whole + shard / edp:g})")
        g = 4 if grads == "fp32-grads" else 2
        return Widths(2, g, 4, 4, NUMERICS["bf16"],
                      f"Megatron-LM mixed precision: 2-byte params, {g}-byte main grads"
                      + ("" if g == 4 else " (fp32 copies, 4 bytes, made at the step)")
                      + f", 12-byte fp32 master + Adam states = {whole + shard} bytes/param" + dist,
                      base=2, gathered=2, reduce=g)
    if s.sharding == "deepspeed":
        # DeepSpeed's mixed precision (Rajbhandari et al. 2020, Sec. 3.1): 16-bit working
        # parameters and gradients; fp32 master weights + fp32 optimizer states (K = 12 for Adam).
        wide = s.precision == "fp32"
        pb = 4 if wide else 2
        master = 0 if wide else 4
        return Widths(pb, pb, 4, master, NUMERICS["fp32"] if wide else NUMERICS["bf16"],
                      f"DeepSpeed ZeRO-{k} over {s.dp} GPUs: {pb}-byte working params and grads, fp32 optimizer "
                      f"states{' + fp32 master copy' if master else ''} (the ZeRO paper's layout)", base=pb,
                      gathered=pb, reduce=pb)
    autocast = s.precision.endswith("mixed")
    if s.finetune != "full":
        return _adapter_widths(s, autocast)
    pb = PARAM_BYTES[s.precision]
    note = ""
    if s.sharding == "fsdp" and autocast and s.fsdp_mixed_precision:
        # FSDP2 MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32) over fp32 sharded parameters
        # (torchtitan's default): all-gathers cast to 16-bit, the layers compute in 16-bit without
        # autocast, the 16-bit unsharded gradients are reduce-scattered in fp32 into fp32 shards.
        return Widths(4, 4, 4, 0, NUMERICS["bf16"],
                      f"FSDP2 over {s.dp} GPUs (stage {k} equivalent) with MixedPrecisionPolicy(param_dtype="
                      f"{s.precision[:4]}, reduce_dtype=fp32): fp32 sharded params, grads and AdamW states; "
                      "16-bit gathered params and compute", base=4, gathered=2, reduce=4)
    if s.sharding == "fsdp":
        note = (f"FSDP over {s.dp} GPUs (stage {k} equivalent): parameters, gradients and optimizer states "
                f"in {pb}-byte {('fp32 (AMP, no MixedPrecisionPolicy)' if pb == 4 else 'bf16/fp16')}, "
                "PyTorch's layout")
    elif s.zero_stage and s.dp == 1:
        note = f"zero_stage={s.zero_stage} over one GPU shards nothing: same as no ZeRO"
    return Widths(pb, pb, pb, 0, NUMERICS[s.precision], note, base=pb, cast_base=autocast, gathered=pb, reduce=pb)


def _adapter_widths(s: TrainingSetup, autocast: bool) -> Widths:
    """Widths of a LoRA/QLoRA setup outside Megatron and DeepSpeed."""
    # LoRA / QLoRA: the frozen base as the recipe loads it (16-bit under *-mixed, torch_dtype=bf16), the
    # adapters in adapter_dtype (peft's autocast_adapter_dtype=True keeps them fp32), autocast on under *-mixed.
    base, ad = BYTES[s.base_dtype], BYTES[s.adapter_dtype]
    compute = 4 if s.precision == "fp32" else 2
    num = act.Numerics(residual=base, compute=compute, autocast=autocast)
    note = (f"{s.finetune}: frozen base in {s.base_dtype}, adapters in {s.adapter_dtype}"
            + (", autocast" if autocast else ""))
    if s.sharding == "fsdp" and autocast and base == 4 and ad == 4 and s.finetune == "lora" \
            and s.fsdp_mixed_precision:
        # FSDP2 MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32) over an fp32 base and fp32 adapters
        # (RL trainers such as verl load the actor in fp32 and shard it so): each unit is cast to 16 bits and
        # all-gathered when it runs, then freed (torch/distributed/fsdp/_fully_shard/_fsdp_param.py
        # init_all_gather_outputs with param_dtype); the layers compute in 16 bits without autocast, so there is
        # no whole-model 16-bit copy, only the gathered unit; adapter gradients reduce-scatter into fp32 shards.
        return Widths(4, 4, 4, 0, NUMERICS[s.precision[:4]],
                      f"lora under FSDP2 over {s.dp} GPUs with MixedPrecisionPolicy(param_dtype="
                      f"{s.precision[:4]}, reduce_dtype=fp32): fp32 base and adapters sharded, each unit gathered "
                      "in 16 bits as it runs (no autocast copies)", base=4, gathered=2, reduce=4,
                      gathered_base=2)
    if s.sharding == "fsdp":
        note += (f"; {'FSDP-QLoRA (AnswerDotAI/fsdp_qlora: the 4-bit base in a 16-bit quant_storage)' if s.finetune == 'qlora' else 'FSDP'}"
                 f" sharded over {s.dp} GPUs, each decoder layer gathered in turn")
    elif s.dp > 1:
        note += f"; DDP over {s.dp} GPUs: each holds a replica"
    return Widths(ad, ad, ad, 0, num, note, base=base, cast_base=autocast and base == 4,
                  cast_adapters=autocast and ad == 4, gathered=ad, reduce=ad)


@dataclass(frozen=True)
class Term:
    """One named term of an estimate: its bytes on this GPU and where it comes from."""

    name: str
    nbytes: int
    source: str


@lru_cache(maxsize=None)
def source(fn) -> str:
    """The first paragraph of a term function's docstring: what it is and whose code or paper it follows."""
    first_paragraph = (fn.__doc__ or "").strip().split("\n\n")[0]
    return " ".join(first_paragraph.split())


@dataclass(frozen=True)
class Ctx:
    """Everything a term reads: the setup, the GPU's stage and the byte widths."""

    s: TrainingSetup
    st: Stage
    w: Widths
    k: int  # the ZeRO stage in effect (0 when nothing is sharded)
    sums: StageSums
    tensors: list  # trainable tensors on this GPU: [(Tensor, shape)]
    trainable: int  # their elements
    expert: int = 0  # of them, routed experts' elements (sharded by ZeRO over dp / ep GPUs)

    @property
    def full_ft(self) -> bool:
        return self.s.finetune == "full"


# --- model states -------------------------------------------------------------------------

def quantized_head_numel(c: Ctx) -> int:
    """lm_head in 4 bits: Lightning's BitsandbytesPrecision replaces every nn.Linear, the head included
    (lightning/fabric/plugins/precision/bitsandbytes.py _convert_layers / the init context's class replacement;
    LitGPT passes no ignore list); transformers' integration keeps it 16-bit (llm_int8_skip_modules)."""
    m = c.s.model
    return m.vocab_size * m.hidden_size if (c.s.qlora_lightning and c.st.head) else 0


def nf4_weight_bytes(c: Ctx) -> int:
    """QLoRA's 4-bit projections: NF4 codes + block absmax per weight (lora.nf4_bytes: bitsandbytes'
    quantize_4bit with or without double quantization, or torchao's NF4Tensor); lm_head stays 16-bit
    (bitsandbytes skips it by default, llm_int8_skip_modules) except under Lightning (quantized_head_numel)."""
    s = c.s
    nf4 = c.st.layers * sum(lora_mod.nf4_bytes(n, double_quant=s.double_quant, backend=s.qlora_backend)
                            for n in c.sums.layer_linear_numels)
    head = quantized_head_numel(c)
    return nf4 + (lora_mod.nf4_bytes(head, double_quant=s.double_quant) if head else 0)


def quantized_numel(c: Ctx) -> int:
    """Elements QLoRA stores in 4 bits: every projection of the decoder layers (and the head under Lightning)."""
    return c.sums.layer_linear * c.st.layers + quantized_head_numel(c) if c.s.finetune == "qlora" else 0


def parameter_bytes(c: Ctx) -> int:
    """Weights on this GPU before sharding: every parameter at its width; LoRA/QLoRA: the frozen base at the base
    width (QLoRA: projections in NF4) plus the adapters at theirs (Hu et al. 2021; Dettmers et al. 2023)."""
    pb, sums = c.w.param, c.sums
    if c.full_ft:
        return sums.total * pb
    if c.s.finetune == "lora":
        return sums.total * c.w.base + c.trainable * pb
    return nf4_weight_bytes(c) + (sums.total - quantized_numel(c)) * c.w.base + c.trainable * pb


def gradient_bytes(c: Ctx) -> int:
    """Gradients of the trainable parameters, in the gradient dtype (present from their backward to zero_grad)."""
    return c.trainable * c.w.grad


def deepspeed_bucket_bytes(c: Ctx) -> int:
    """DeepSpeed's gradient bucket with contiguous_gradients (deepspeedai/DeepSpeed@7dee2e0 runtime/zero): ZeRO-1/2's
    ipg_buffer, reduce_bucket_size 16-bit elements allocated in backward(), two with overlap_comm
    (stage_1_and_2.py backward), one under pipeline parallelism; ZeRO-3's __ipg_bucket_flat_buffer, one, allocated
    with the optimizer and alive from then on (stage3.py). With offload the gradients pass through it instead
    (offload's grad_bucket)."""
    s = c.s
    if s.sharding != "deepspeed" or not s.contiguous_gradients or s.offload != "none" or c.k == 0:
        return 0
    buffers = 2 if (s.overlap_comm and c.k < 3 and s.pp == 1) else 1
    return buffers * s.reduce_bucket_size * c.w.grad


def deepspeed_grad_partition_bytes(c: Ctx) -> int:
    """ZeRO-3's flat 16-bit gradient partition: one torch.zeros of every trainable parameter's partition_numel,
    made with the optimizer and never freed; each parameter's reduced gradient is copied into its slice
    (deepspeedai/DeepSpeed@20cfce0 runtime/zero/stage3.py _setup_for_real_optimizer: grad_partitions_flat_buffer,
    __param_id_to_grad_partition). So the whole gradient partition is alive at every moment, the forward too, not
    only once the backward has filled it. With offload_optimizer it is made on the CPU (self.device)."""
    s = c.s
    if s.sharding != "deepspeed" or c.k != 3 or s.offload != "none":
        return 0
    return sharded(c, gradient_bytes(c), "gradients")


# stage3.py DeepSpeedZeroOptimizer_Stage3.__init__: self.max_param_reduce_events = 2 (not configurable)
DEEPSPEED_MAX_PARAM_REDUCE_EVENTS = 2


def deepspeed_stream_held_grad_bytes(c: Ctx) -> int:
    """ZeRO-3 with overlap_comm over more than one GPU: 16-bit gradients freed while the reduce stream may still read
    them, up to (max_param_reduce_events + 1) = 3 buckets of reduce_bucket_size elements (deepspeedai/DeepSpeed
    v0.14.2 runtime/zero/stage3.py __add_grad_to_ipg_bucket: each gradient is copied into the bucket on
    reduce_and_partition_stream and freed under record_stream; __reduce_and_partition_ipg_grads blocks the host only
    when more than two bucket reductions are outstanding). torch counts such blocks in active_bytes, not in
    allocated bytes, and frees them before it would raise out-of-memory (release_cached_blocks synchronizes their
    events), so they raise the active and reserved peaks, not the OOM point; they reach the bound when the
    reduce-scatters lag the backward."""
    s = c.s
    if s.sharding != "deepspeed" or c.k != 3 or not s.overlap_comm or s.dp == 1:
        return 0
    return min((DEEPSPEED_MAX_PARAM_REDUCE_EVENTS + 1) * s.reduce_bucket_size, c.trainable) * c.w.grad


def largest_trainable_numel(c: Ctx) -> int:
    """Elements of this GPU's largest trainable tensor (what per-tensor temporaries and buffers are sized by)."""
    return max(t.numel for t, _ in c.tensors)


def deepspeed_offload_grad_buffer_bytes(c: Ctx) -> int:
    """ZeRO-1/2 with offload_optimizer: a 16-bit GPU buffer the size of the largest trainable parameter, made with the
    optimizer and never freed (deepspeedai/DeepSpeed v0.14.2 runtime/zero/stage_1_and_2.py __init__:
    temp_grad_buffer_for_gpu_offload = torch.zeros(largest_param_numel)); gradient accumulation stages each
    parameter's host-side sum through it."""
    s = c.s
    if s.sharding != "deepspeed" or c.k not in (1, 2) or s.offload == "none":
        return 0
    return largest_trainable_numel(c) * c.w.grad


def deepspeed_offload_check_bytes(c: Ctx, numel: int) -> int:
    """ZeRO-1/2 with offload_optimizer, as each reduced gradient of this GPU's partition is sent to the host: the
    overflow check on the whole gradient (stage_1_and_2.py copy_grads_in_partition -> update_overflow_tracker_for_
    param_grad -> _has_inf_or_nan: x.float(), isnan, isinf, logical_or, .float(), alive together: 4 + 1 + 1 + 1 + 4
    bytes per element; no copy for fp32 gradients), the largest of that parameter's temporaries (its fp64 norm,
    8 bytes per element of its slice, and its fp32 copy for the host, 4, come one after the other)."""
    return ((0 if c.w.grad == 4 else 4) + 1 + 1 + 1 + 4) * numel


def zero3_saved_weight_bytes(c: Ctx) -> int:
    """ZeRO-3 with a model that was not built under deepspeed.zero.Init (zero_init=False: an already-built model
    partitioned by deepspeed.initialize): torch.nn.functional.linear stays torch's, because DeepSpeed swaps in its
    memory-efficient linear (LinearFunctionForZeroStage3, which saves the parameter itself) only on entering
    zero.Init (v0.14.2 runtime/zero/partition_parameters.py patch_init_and_builtins; Init(module=...) converts
    without entering). torch's linear saves weight.t(), a view that keeps the gathered 16-bit weight allocated after
    DeepSpeed releases the parameter, until that matmul's backward: one decoder layer's matmul weights (LoRA: its
    adapters too) per layer whose forward ran with gradients. Over one GPU nothing is gathered (the parameter is a
    view of its own partition, unless parameters are offloaded), so nothing extra is held."""
    s, sums, w = c.s, c.sums, c.w
    if s.sharding != "deepspeed" or c.k != 3 or s.zero_init or (s.dp == 1 and s.offload != "optimizer+params"):
        return 0
    return layer_parameter_bytes(c) - (sums.layer_all - sums.layer_linear) * (w.gathered if c.full_ft else w.base)


def ddp_bucket_bytes(c: Ctx) -> int:
    """torch DistributedDataParallel's all-reduce buckets: a flat copy of every trainable gradient, in the gradient
    dtype, allocated when the model is wrapped and alive from then on; none with gradient_as_bucket_view=True
    (torch docs of DistributedDataParallel; PyTorch PR #41954: 'the saved memory size will be equal to the total
    gradients size')."""
    return c.trainable * c.w.grad if c.s.ddp and not c.s.gradient_as_bucket_view else 0


def optimizer_state_bytes(c: Ctx) -> int:
    """Optimizer states per trainable tensor (optimizers.state_bytes) plus a separate fp32 master copy where the
    framework keeps one (ZeRO paper Sec. 3.1: K = 12 bytes/param for mixed-precision Adam)."""
    return opt.state_bytes(c.s.optimizer, c.tensors, c.w.state) + c.w.master * c.trainable


def bf16_lp_grad_bytes(c: Ctx) -> int:
    """DeepSpeed's BF16_Optimizer (bf16 without ZeRO; deepspeedai/DeepSpeed v0.14.0 runtime/bf16_optimizer.py): each
    backward leaves the bf16 parameters' own gradients, 2 bytes per parameter, beside the fp32 gradient buffer it adds
    them into (update_hp_grads(clear_lp_grads=False)); clear_lp_grads() zeroes them in place before the next backward
    and engine.py's zero_grad passes for bf16 without ZeRO, so from the first backward on they are never freed."""
    s = c.s
    if s.layout != "megatron-deepspeed" or s.sharding != "megatron":
        return 0
    return 2 * c.trainable


def first_step_optimizer_state_bytes(c: Ctx) -> int:
    """Optimizer states on this GPU that the optimizer creates inside its first step(), so the first iteration's
    forward and backward run without them: torch.optim's Adam/AdamW/SGD initialise state lazily (_init_group), as do
    apex/Transformer Engine FusedAdam, bitsandbytes and Adafactor; Megatron-LM's CI logs the gap (gpt3_7b
    golden values: step 1's peak is the steady peak less the Adam moments of the rank's shard); DeepSpeed's ZeRO 1-3 and
    BF16_Optimizer do so from v0.13.2 (deepspeedai/DeepSpeed#5104, 18179807; before, a step with zero
    gradients at initialisation made them). The fp32 master copy is made with the optimizer wrapper, not lazily."""
    if c.s.offload != "none":  # ZeRO-Offload, FSDP CPU offload: the states live in host memory
        return 0
    return sharded(c, opt.state_bytes(c.s.optimizer, c.tensors, c.w.state), "optimizer")


def root_numel(c: Ctx) -> int:
    """Parameters outside the decoder layers on this GPU: embeddings, final norm, lm_head (FSDP's root unit)."""
    return c.sums.total - c.sums.layers_all


def layer_parameter_bytes(c: Ctx) -> int:
    """One decoder layer's parameters as ZeRO-3 / FSDP gathers them: at the gathered width (FSDP2's
    MixedPrecisionPolicy casts to 16-bit); LoRA: the base plus the layer's adapters; QLoRA: NF4 projections
    (stored in a 16-bit quant_storage for FSDP-QLoRA: the same bytes), 16-bit norms, the adapters."""
    sums, w = c.sums, c.w
    if c.full_ft:
        return w.gathered * sums.layer_all
    adapters = c.trainable // max(c.st.layers, 1) * (w.gathered or w.param)
    if c.s.finetune == "lora":
        return w.base_gathered * sums.layer_all + adapters
    nf4 = sum(lora_mod.nf4_bytes(n, double_quant=c.s.double_quant, backend=c.s.qlora_backend)
              for n in sums.layer_linear_numels)
    return nf4 + w.base_gathered * (sums.layer_all - sums.layer_linear) + adapters


def root_parameter_bytes(c: Ctx) -> int:
    """The root unit's parameters (embeddings, final norm, lm_head) at the gathered width (the base's under LoRA)."""
    return (c.w.gathered if c.full_ft else c.w.base_gathered) * root_numel(c)


def sharded(c: Ctx, nbytes: int, state: str) -> int:
    """ZeRO (Rajbhandari et al. 2020, Sec. 5): stage 1 shards optimizer states, 2 also gradients, 3 also
    parameters, each over the dp data-parallel GPUs; with expert parallelism the routed experts' share over
    the dp / ep GPUs that hold the same experts (DeepSpeed-MoE's expert data-parallel group, Rajbhandari et al.
    2022; torchtitan's dp_shard_mod_ep mesh): num_experts / ep experts per GPU, sharded dp / ep ways (Megatron with
    expert tensor parallelism etp: dp tp / (ep etp) ways, TrainingSetup.expert_dp)."""
    s = c.s
    if s.expert_dp == s.dp or not c.expert:
        return zero.partitioned(nbytes, state, c.k, s.dp)
    experts = nbytes * c.expert // c.trainable
    return zero.partitioned(nbytes - experts, state, c.k, s.dp) + zero.partitioned(experts, state, c.k, s.expert_dp)


def optimizer_step_temporaries(c: Ctx) -> int:
    """Temporaries inside optimizer.step() beyond parameters, gradients and states (optimizers.step_transient_bytes;
    DeepSpeed's fp32 gradient partition; Megatron's fp32 copies of 16-bit main grads under --fp16)."""
    s, k = c.s, c.k
    if s.sharding == "megatron":
        # Apex/TE fused Adam updates the fp32 master in place. With 16-bit main grads (--fp16) the step first sets
        # main_param.grad = main_grad.float() (NVIDIA/Megatron-LM@50b073c megatron/core/optimizer/optimizer.py
        # _copy_model_grads_to_main_grads; distrib_optimizer.py: of this rank's shard), kept until the next
        # step's zero_grad; with fp32 main grads .float() is the same tensor.
        return 4 * sharded(c, c.trainable, "optimizer") if c.w.grad == 2 else 0
    if s.sharding == "deepspeed":
        # DeepSpeed steps on the flat fp32 partition after upcasting its gradient partition to
        # fp32; ZeRO-3 does it one sub-group at a time (sub_group_size, default 1e9 elements).
        # The upcast is `self.flatten(averaged_gradients).to(fp32)` (deepspeedai/DeepSpeed@20cfce0
        # runtime/zero/stage_1_and_2.py step(), stage3.py _prepare_fp32_grad_for_sub_group): the flatten is a
        # 16-bit copy of the partition, alive next to its fp32 copy until the statement ends.
        if not c.w.master:
            return 0
        grad_partition = sharded(c, c.trainable, "optimizer")
        return (4 + c.w.grad) * (min(grad_partition, DEEPSPEED_SUB_GROUP) if k == 3 else grad_partition)
    shard = s.dp if k >= 1 else 1
    largest = largest_trainable_numel(c)
    if k >= 1 and s.expert_dp != s.dp and any(t.experts and t.numel == largest for t, _ in c.tensors):
        shard = s.expert_dp  # the largest tensor is a stacked expert tensor, sharded over the expert dp group
    return opt.step_transient_bytes(s.optimizer, largest // shard, c.w.state, impl=s.optimizer_impl,
                                    group_numel=sharded(c, c.trainable, "optimizer"))


@dataclass(frozen=True)
class Offload:
    """ZeRO-Offload / ZeRO-Infinity: what leaves the GPU and where it goes."""

    offloaded: int  # bytes per GPU moved off the GPU
    host_bytes: int
    nvme_bytes: int
    grad_bucket: int  # gradients on the GPU at most (reduce_bucket_size)


def offload(c: Ctx, state_bytes: int, param_bytes: int, grad_bytes: int) -> Offload:
    """ZeRO-Offload (Ren et al. 2021, Sec. 4): states, fp32 master and an fp32 gradient partition live in host
    memory and the optimizer steps on the CPU; ZeRO-Infinity (Rajbhandari et al. 2021) moves the 16-bit
    parameters too, to CPU or NVMe (with DeepSpeed's pinned staging buffers)."""
    s = c.s
    offloaded = state_bytes + 4 * c.trainable // s.dp
    staging = 0
    if s.offload == "optimizer+params":
        offloaded += param_bytes
        if s.offload_device == "nvme":  # DeepSpeed's default pinned buffers: 5 x 1e8 elements
            staging = DEEPSPEED_NVME_BUFFERS * c.w.param
    if s.offload_device == "cpu":
        host, nvme = offloaded, 0
    else:
        host, nvme = staging + 4 * c.trainable // s.dp, offloaded
    # gradients leave the GPU bucket by bucket during the backward (reduce_bucket_size)
    return Offload(offloaded, host, nvme, min(grad_bytes, s.reduce_bucket_size * c.w.grad))


def fsdp_cpu_offload(c: Ctx, state_bytes: int, param_bytes: int, grad_bytes: int) -> Offload:
    """FSDP's CPU offload (FSDP1 CPUOffload(offload_params=True); FSDP2 CPUOffloadPolicy, pinned by default): the
    sharded parameters, their sharded gradients and the optimizer states live in host memory and the optimizer
    steps on the CPU; each unit's shard is copied up for its all-gather and each reduce-scattered gradient shard
    copied down (PyTorch docs, torch.distributed.fsdp CPUOffload / CPUOffloadPolicy). Nothing sharded stays on
    the GPU between units."""
    offloaded = state_bytes + param_bytes + grad_bytes
    return Offload(offloaded, offloaded, 0, 0)


# --- activations outside the decoder layers --------------------------------------------------

def saved_model_activations(c: Ctx, num: act.Numerics) -> int:
    """Kept for the backward outside the layers: rotary cos/sin (saved by every layer's rotation, shared), the
    token ids and the shifted labels (saved by the NLL loss) (transformers LlamaModel.forward)."""
    return rope_table_bytes(c, num) + 2 * 8 * c.s.tokens


def rope_table_bytes(c: Ctx, num: act.Numerics) -> int:
    """The rotary tables the layers' rotations keep: cos and sin of head_dim per token in the residual dtype;
    MLA rotates only qk_rope_head_dim (DeepSeek-V2 Sec. 2.1.3); Gemma 3 has a second table for its local
    layers (rope_local_base_freq); Llama 4 keeps one complex64 freqs_cis of head_dim / 2 (8 bytes each)."""
    m, tok = c.s.model, c.s.tokens
    if m.is_mla:
        return 2 * m.qk_rope_head_dim * num.residual * tok
    if family_of(m).rope_complex64:
        return 4 * m.head_dim * tok
    tables = 2 if (family_of(m).local_rope_table and len(m.layer_counts()) > 1) else 1
    return tables * 2 * m.head_dim * num.residual * tok


def forward_only_activations(c: Ctx, num: act.Numerics, sp: int) -> int:
    """Alive only during the forward: the embedding output (LlamaModel.forward's inputs_embeds; under AMP it is
    also layer 0's saved fp32 input, unless the embeddings are frozen), the padded labels, and for eager
    attention the additive (b, 1, s, s) causal mask shared by all layers (transformers masking_utils)."""
    s = c.s
    r, tok = num.residual, s.tokens
    own = c.st.embed and (r != 4 or not c.full_ft)
    out = saved_model_activations(c, num) + (r * s.model.hidden_size * tok // sp if own else 0)
    out += 8 * tok + attention_mask_bytes(c, num) + embedding_scale_bytes(c, num, sp)
    return out


def attention_mask_bytes(c: Ctx, num: act.Numerics) -> int:
    """The (b, 1, s, s) masks transformers builds once per layer type and shares between layers, alive through
    the forward (masking_utils.create_causal_mask / create_sliding_window_causal_mask / chunked): eager
    attention adds them as floats in the model dtype; sdpa gets a bool mask (1 byte) only for a sliding-window
    or chunked layer type once the sequence reaches its window (none for full attention: is_causal)."""
    s, m = c.s, c.s.model
    area = s.micro_batch * s.seq_len * s.seq_len
    types = list(m.layer_counts()) if m.mlp == "gated" else ["full_attention"]
    if s.attention == "eager":
        return num.residual * area * len(types)
    return area * sum(1 for t in types if act._explicit_mask(m, t, s.seq_len))


def embedding_scale_bytes(c: Ctx, num: act.Numerics, sp: int) -> int:
    """Gemma scales the embedding output by sqrt(hidden) into a new tensor while the unscaled one is still
    referenced (Gemma2/Gemma3TextModel.forward: hidden_states = inputs_embeds * normalizer): one more residual-sized
    tensor during the forward."""
    m = c.s.model
    if not (c.st.embed and family_of(m).scaled_embedding):
        return 0
    return num.residual * m.hidden_size * c.s.tokens // sp


def final_norm_activations(c: Ctx, num: act.Numerics, sp: int) -> int:
    """Final RMSNorm before the head: its fp32 input, plus (normalized, output) when its weight is trained."""
    if not c.st.head:
        return 0
    h, tok, r = c.s.model.hidden_size, c.s.tokens, num.residual
    normalized = 4 if family_of(c.s.model).fp32_norms else r  # Gemma/OLMo 2/gpt-oss: fp32
    return (4 * h * tok + ((normalized * h + (2 if num.autocast else r) * h) * tok if c.full_ft else 0)) // sp


def layer_forward_transient(c: Ctx, num: act.Numerics, layer: act.Ledger, sp: int, rebuilding: bool = False,
                            moe: bool = False) -> int:
    """Forward, inside the last decoder layer, besides what the layers saved: the layer's input (held by
    LlamaModel's loop) and the residual, plus the largest of: an adapted projection's base output (and
    bitsandbytes' defensive clone of it, peft lora/bnb.py), lora_B's output and its scaled copy; at up_proj,
    SiLU(gate) when checkpointing saves nothing; at down_proj, the SwiGLU product (unless kept), the output
    and an adapter's fp32 copies of its input (peft's cast, then dropout's). rebuilding: the same inside a layer
    recomputed for its backward."""
    rebuilding = flag("rebuilding", rebuilding)
    moe = flag("moe", moe)
    m, s = c.s.model, c.s
    tok, r, cb, I, h, tp = s.tokens, num.residual, num.compute, m.intermediate_size, m.hidden_size, s.tp
    cm = 4 if (s.finetune == "qlora" and num.autocast and c.w.base == 4) else cb
    targets = set(s.lora_targets)
    ckpt = s.recompute != "none" and not rebuilding  # a layer rebuilt in backward saves as usual
    lw = 2 if num.autocast else c.w.param  # lora_B's output width
    clones = 2 if s.finetune == "qlora" and s.qlora_backend != "torchao" else 1
    widths = {"q_proj": m.q_size, "k_proj": m.kv_size, "v_proj": m.kv_size, "o_proj": h,
              "gate_proj": I, "up_proj": I, "down_proj": h, "qkv_proj": m.q_size + 2 * m.kv_size,
              "gate_up_proj": 2 * I}

    def adapted(t: str) -> int:
        w = widths[t] // (tp if t != "o_proj" and t != "down_proj" else 1)
        return (cm if t in ("gate_proj", "up_proj", "gate_up_proj") else cb) * w * clones * tok + 2 * lw * w * tok

    points = [adapted(t) for t in ("q_proj", "k_proj", "v_proj", "qkv_proj", "o_proj") if t in targets]
    silu = cm * I * tok // tp if ckpt else 0
    up_out = cm * I * tok // tp if ckpt else 0
    up = "gate_up_proj" if m.fused_gate_up else "up_proj"  # Phi-3: gate_up_proj's adapter, at its 2I width
    points.append(silu + (adapted(up) if up in targets else up_out))
    product_kept = any(name == "mlp.product" for name, _, _ in layer.items) and not ckpt
    down = (0 if product_kept else cm * I * tok // tp)
    down += adapted("down_proj") if "down_proj" in targets else cb * h * tok
    if "down_proj" in targets and c.w.param != cm and not (clones == 2 and num.autocast):
        down += c.w.param * I * tok // tp * (2 if s.lora_dropout > 0 else 1)
    points.append(down)
    if rebuilding:  # by its last projection the rebuilt layer has saved everything else: only that point
        points = [down]
    if moe:  # the MoE block instead of the dense MLP (moe_forward_transient)
        points = [moe_forward_transient(c, num)]
    if s.attention == "eager" and not rebuilding:  # inside the attention, before the MLP has saved anything
        points.append(eager_forward_transient(c, num) - sum(n for _, n, _ in layer.items[layer.split:]))
    held = (1 if rebuilding else 2) * r * h * tok // sp  # (a rebuilt layer's input is its checkpoint)
    return held + max(points)


def eager_forward_transient(c: Ctx, num: act.Numerics) -> int:
    """Eager attention's forward, beyond what it saves: the scores entering the softmax while it writes its output
    (HF eager_attention_forward); gpt-oss's sinks: the scores concatenated with the sink logit and the row-max
    subtracted from them, two s x (s + 1) tensors per head at once (GptOss eager_attention_forward)."""
    m, s = c.s.model, c.s
    if m.attention_sinks:
        return 2 * num.compute * m.num_heads * s.seq_len * (s.seq_len + 1) * s.micro_batch // s.tp
    return num.compute * m.num_heads * s.seq_len * s.seq_len * s.micro_batch // s.tp


# --- mixture of experts -----------------------------------------------------------------------

def routed_rows(c: Ctx) -> int:
    """(token, expert) rows a MoE layer processes on one GPU: tokens x top-k, whatever the router picks
    (transformers' grouped_mm path sorts the pairs; no token is dropped). With a capacity factor each expert
    takes at most ceil(capacity_factor x tokens x top-k / experts) rows and its buffer is that size, padded
    (GShard, Lepikhin et al. 2020, expert capacity; DeepSpeed-MoE's top-k gating with drop_tokens). Under expert
    parallelism a GPU receives the rows routed to its experts: the same count with balanced routing. Llama 4 in
    transformers sends every token through every expert: tokens x experts (on this GPU's experts)."""
    m, s = c.s.model, c.s
    if family_of(m).every_expert:  # transformers' Llama4TextExperts: every token, every (local) expert
        return s.tokens * m.num_experts // s.ep
    # Megatron's expert tensor parallelism: each GPU routes its tokens / tp (sequence parallel) and the rows are
    # gathered over etp (token_dispatcher.py): tokens x top-k x etp / tp rows, tokens x top-k when etp = tp
    rows = s.tokens * m.num_experts_per_tok * s.expert_tp // s.tp
    if s.capacity_factor is None:
        return rows
    return m.num_experts * -(-int(s.capacity_factor * rows) // m.num_experts)


def all_to_all_buffer_bytes(c: Ctx, num: act.Numerics) -> int:
    """Expert parallelism: the dispatch all-to-all's send buffer and the combine's receive buffer, routed rows x
    hidden each (Megatron-Core MoEAlltoAllTokenDispatcher, DeepSpeed-MoE's _AllToAll), alive around the experts."""
    if c.s.ep == 1:
        return 0
    return 2 * num.compute * routed_rows(c) * c.s.model.hidden_size // c.s.tp


def moe_forward_transient(c: Ctx, num: act.Numerics) -> int:
    """Inside a MoE block's forward, beyond what it saves: the routing-weighted expert outputs in fp32 and their
    copy in token order (integrations/moe.py: `weighted_out = proj_out * sample_weights_g`, then
    `weighted_out[inv_perm]`: S x h x 4 each); Llama 4: the experts' E x T x h output before its sum; plus the
    all-to-all buffers under expert parallelism. Megatron-Core (layout='megatron'): fc2's output and its copy
    back in the received order, S x h each (experts.py TEGroupedMLP, token_dispatcher.py)."""
    m, tok, h = c.s.model, c.s.tokens, c.s.model.hidden_size
    if c.s.layout == "megatron":  # TEGroupedMLP: fc2's output and its copy back in the received order (S x h each)
        return 2 * num.compute * routed_rows(c) * h
    if family_of(m).every_expert:  # + the shared expert's output and the experts' sum over E
        out = num.compute * (routed_rows(c) + 2 * tok) * h
    else:
        out = 2 * 4 * routed_rows(c) * h
    return out // c.s.tp + all_to_all_buffer_bytes(c, num)


def moe_backward_temporaries(c: Ctx, num: act.Numerics) -> int:
    """A MoE block's backward, beside its saved tensors: at the routing-weight multiply (fp32, promoted by the fp32
    weights) the rows' fp32 gradient from the index backward and the two fp32 products for the gradients of the
    expert output and of the weights (S x h x 4 each), the expert output's 16-bit gradient, or later the
    gate_up/product gradients (S x 3I); the gradient arriving at the block; Llama 4: two E x T x I gradients beyond
    the saved tensors freed by then. Plus the all-to-all buffers under expert parallelism. (Measured:
    fam-mixtral-bf16-s4096-v128, where this moment holds the peak.) Megatron-Core (layout='megatron'): the
    gradients of fc1's output and fc2's input (S x 3I / tp) and of the experts' input and output (S x h each)."""
    m, tok, cb = c.s.model, c.s.tokens, num.compute
    h, Ie = m.hidden_size, m.moe_intermediate_size
    if c.s.layout == "megatron":  # the gradients of fc1's output, of fc2's input (widths split over tp) and of the
        # experts' input and output (S x h each, gathered over tp), beside the gradient arriving at the block
        rows = routed_rows(c)
        return cb * rows * (2 * h + 3 * Ie // c.s.expert_tp) + cb * tok * h // c.s.tp
    if family_of(m).every_expert:  # the product's and gate/up gradients, as the saved ones are freed
        out = 2 * cb * routed_rows(c) * Ie + cb * tok * h
    else:
        rows = routed_rows(c)
        out = max(3 * 4 * rows * h + cb * rows * h, cb * rows * (h + 3 * Ie)) + cb * tok * h
    return out // c.s.tp + all_to_all_buffer_bytes(c, num)


def router_aux_loss_bytes(c: Ctx, num: act.Numerics) -> int:
    """The router's load-balancing loss (transformers' load_balancing_loss_func, Fedus et al. 2021 Switch
    Transformer Sec. 2.2) with output_router_logits: every MoE layer's router logits (T x E) stay in the model's
    output, and the loss's softmax over each keeps its own T x E output for the backward (Mixtral, Qwen3-MoE,
    gpt-oss; DeepSeek-V3 and Llama 4 in transformers compute none)."""
    m, s = c.s.model, c.s
    if s.layout == "megatron":  # Megatron-Core's router keeps its own (activations.megatron_moe_block)
        return 0
    if not (m.is_moe and s.router_aux_loss and family_of(m).aux_loss and c.st.head):
        return 0
    return 2 * num.compute * s.tokens * m.num_experts * m.num_moe_layers


def logit_softcap_bytes(c: Ctx, num: act.Numerics) -> int:
    """Gemma 2's final-logit soft-capping (logits / cap, tanh, x cap; Gemma2ForCausalLM.forward): tanh keeps its
    output, one more b*s*V tensor in the compute dtype until the backward reaches it."""
    m = c.s.model
    if not (m.final_logit_softcap and c.st.head):
        return 0
    return num.compute * m.vocab_size * c.s.tokens // c.s.tp


def head_adapter_activations(c: Ctx, num: act.Numerics, sp: int) -> int:
    """lora_head: what the head's adapter keeps for its backward (litgpt/lora.py LoRALinear.forward,
    `(self.lora_dropout(x) @ lora_A.T @ lora_B.T) * scaling`; peft's lora.Linear the same): lora_A's input (the final
    norm's output, or its dropped / dtype-cast copy: activations.adapter_input_bytes), dropout's 1-byte mask, and
    lora_A's r-wide output, kept by lora_B. The frozen head's own matmul keeps no input (no weight gradient).
    Its forward temporaries over the vocabulary are head_adapter_sum_bytes."""
    s = c.s
    if not (s.lora_head and c.st.head):
        return 0
    h, tok = s.model.hidden_size, s.tokens
    ad = c.w.gathered or c.w.param
    x_bytes = num.residual  # the final norm's output (the residual dtype, as LlamaRMSNorm returns it)
    # peft wraps the head in its plain lora.Linear (transformers' bitsandbytes integration keeps lm_head 16-bit), which
    # casts the input to the adapter dtype; LitGPT's LoRALinear does not, but its adapters share the base dtype
    copy = act.adapter_input_bytes(x_bytes, ad, autocast=num.autocast, cast_input=True, dropout=s.lora_dropout > 0)
    # no copy: lora_A keeps the norm's output itself (a 4-bit head's retained input is that same tensor)
    kept_input = copy * h * tok if copy else (0 if bnb_retained_head_input_bytes(c, num, sp) else x_bytes * h * tok)
    mask = h * tok if s.lora_dropout > 0 else 0
    a_out = (2 if num.autocast else ad) * s.lora_rank * tok
    return (kept_input + mask) // sp + a_out


def head_adapter_sum_bytes(c: Ctx, num: act.Numerics) -> int:
    """lora_head, transformers' full loss: where the head adapter's output joins the base head's, three b*s*V tensors
    in the compute dtype are alive (peft lora.Linear: `result = result + lora_B(lora_A(dropout(x))) * scaling`;
    LitGPT: `pretrained + lora`): the base logits, the scaled adapter output and their sum (lora_B's own output is
    freed once scaled). Below the loss's 10 bytes per logit with the fp32 upcast; above its 4 with loss_dtype='16-bit'."""
    s = c.s
    if not (s.lora_head and c.st.head and s.loss == "full"):
        return 0
    return 3 * num.compute * s.model.vocab_size * s.tokens


def final_norm_output_bytes(c: Ctx, num: act.Numerics, sp: int) -> int:
    """The final norm's output as the head's matmul keeps it when the head trains (16-bit cast under autocast)."""
    if not (c.st.head and c.full_ft):
        return 0
    return (2 if num.autocast else num.residual) * c.s.model.hidden_size * c.s.tokens // sp


def input_leaf_bytes(c: Ctx, num: act.Numerics, sp: int) -> int:
    """LoRA/QLoRA with full recompute: transformers' activation_checkpointing_enable calls
    enable_input_require_grads() (modeling_utils.py, transformers 5.24), so the frozen embedding's output
    is a leaf that requires grad: it gets a .grad at the end of the backward, and both stay alive as long as
    the step's autograd graph (the loop's `out`) does: through the optimizer step and the next forward."""
    if c.full_ft or c.s.recompute != "full" or not c.st.embed:
        return 0
    return num.residual * c.s.model.hidden_size * c.s.tokens // sp


def frozen_first_norm(c: Ctx, sp: int) -> int:
    """With frozen embeddings (LoRA/QLoRA) layer 0's input needs no gradient, so its first RMSNorm keeps nothing
    for the backward and its q/k/v adapters' dropout keeps no mask (activations.frozen_input_savings):
    subtracted from layer 0's ledger."""
    if c.full_ft or not c.st.embed or c.s.recompute == "full":  # (input_leaf_bytes: then it requires grad)
        return 0
    return act.frozen_input_savings(c.s.model, c.s.tokens, frozenset(c.s.lora_targets), c.s.lora_dropout) // sp


def checkpoint_bytes(c: Ctx, num: act.Numerics, sp: int) -> int:
    """Full recompute (non-reentrant torch.utils.checkpoint per decoder layer) keeps each layer's input only."""
    return num.residual * c.s.model.hidden_size * c.s.tokens // sp


def offload_brought_back(layer: act.Ledger, attention_half: bool) -> int:
    """Activation offloading in backward: the saved tensors of the node running and of the node before it are on
    the GPU (torchtune frees a brought-back tensor after the next node that unpacks); taken as the three largest
    saved tensors of the layer's half, so that no pair of consecutive nodes is under-counted."""
    items = layer.items[:layer.split] if attention_half else layer.items[layer.split:]
    return sum(sorted((n for _, n, _ in items), reverse=True)[:3])


# --- autocast -------------------------------------------------------------------------------

def autocast_weight_copies(c: Ctx) -> int:
    """torch.autocast makes a 16-bit copy of every fp32 weight a matmul uses (cached for trainable leaves until
    autocast exits) and the matmul saves it for its backward: the fp32 base weights (full fine-tuning under AMP,
    a base loaded in fp32; QLoRA's 4-bit projections dequantize instead) and fp32 LoRA adapters."""
    out = 2 * (c.sums.linear - quantized_numel(c)) if c.w.cast_base else 0
    if c.w.cast_adapters:
        out += 2 * c.trainable
    return out


def autocast_layer_copies(c: Ctx) -> int:
    """The 16-bit weight copies of one decoder layer (what a rebuilt layer holds under full recompute)."""
    out = 2 * c.sums.layer_linear if (c.w.cast_base and c.s.finetune != "qlora") else 0
    if c.w.cast_adapters:
        out += 2 * c.trainable // max(c.st.layers, 1)
    return out


def autocast_head_copy(c: Ctx) -> int:
    """The 16-bit copy of the lm_head weight (held by the head's matmul until its backward)."""
    m = c.s.model
    return 2 * m.vocab_size * m.hidden_size // c.s.tp if (c.w.cast_base and c.st.head) else 0


def dequantized_weight_bytes(c: Ctx, numel: int) -> int:
    """QLoRA: a 4-bit matmul dequantizes its weight to 16-bit in forward and again in backward (bitsandbytes
    autograd/_functions.py MatMul4Bit, 0.43.2-0.49.2: `F.linear(A, F.dequantize_4bit(B, quant_state)...)` and
    `torch.matmul(grad_output, F.dequantize_4bit(B, ctx.state)...)`; 0.50 keeps dequant + F.linear for more than
    512 tokens on CUDA). torchao's NF4Tensor.get_original_weight (eager) holds two int64 index tensors of half the
    weight each, the two dequantized halves, their scaled copies and the stacked result at once: 14 bytes per
    weight (torchao quantize_/workflows/nf4/nf4_tensor.py, pytorch/ao@36027d8)."""
    if c.s.finetune != "qlora":
        return 0
    if c.s.qlora_backend == "torchao":
        return 14 * numel
    # Lightning quantizes from `weight.to(torch.half)` (_Linear4bit.quantize), so quant_state.dtype is fp16:
    # `F.dequantize_4bit(B, quant_state).to(A.dtype)` makes an fp16 copy, then a bf16 one, both alive at the cast.
    if c.s.qlora_lightning and c.s.precision.startswith("bf16"):
        return 4 * numel
    return 2 * numel


def bnb_retained_input_bytes(c: Ctx, layer: act.Ledger) -> int:
    """bitsandbytes before 0.43.2: MatMul4Bit.forward stores `ctx.tensors = (A, B)` (autograd/_functions.py at
    0.41.1 and 0.42.0; PR #1270 made it `(None, B)` in 0.43.2). A plain ctx attribute is not a saved tensor: the
    engine does not free it after the node's backward, so every 4-bit matmul's 16-bit input lives as long as the
    graph does, and the loop keeps the graph (its `out`) through the optimizer step and the next forward. One decoder
    layer's: the two norm outputs (or Linear4bit's per-projection casts of an fp32 one), the attention output
    (o_proj's input) and the SwiGLU product (down_proj's input); the estimate lists the step's (every layer, less
    layer 0's q/k/v input under frozen embeddings, plus a 4-bit head's)."""
    if not c.s.bnb_keeps_input:
        return 0
    names = ("attn_norm.out", "attn_norm.out_casts", "sdpa.out", "eager.out", "mlp_norm.out", "mlp_norm.out_casts",
             "mlp.product")
    return sum(n for k, n, _ in layer.items if k in names)


def bnb_retained_head_input_bytes(c: Ctx, num: act.Numerics, sp: int) -> int:
    """The same for a 4-bit lm_head (Lightning): its input, the final norm's output, kept on ctx by every chunk."""
    if not (c.s.bnb_keeps_input and quantized_head_numel(c)):
        return 0
    return num.residual * c.s.model.hidden_size * c.s.tokens // sp


def bnb_layer0_unkept_bytes(c: Ctx, layer: act.Ledger) -> int:
    """Layer 0's q/k/v matmuls keep nothing when the embeddings are frozen and nothing is recomputed: their input
    needs no gradient and the packed weight none, so `any(ctx.needs_input_grad[:2])` is False and ctx.tensors is
    (None, None). (Its norm output may still be saved by the q/k/v adapters' lora_A: that is the ledger's business.)"""
    if not c.s.bnb_keeps_input or c.full_ft or not c.st.embed or c.s.recompute == "full":
        return 0
    return sum(n for k, n, _ in layer.items if k in ("attn_norm.out", "attn_norm.out_casts"))


# --- logits and the loss ---------------------------------------------------------------------

def logits_bytes(c: Ctx, num: act.Numerics) -> int:
    """The head's output (b*s*V in the compute dtype), held by the model's output until the next forward
    replaces it; vocabulary-parallel under tp (Megatron's cross entropy never gathers the vocabulary)."""
    m = c.s.model
    return num.compute * m.vocab_size * c.s.tokens // c.s.tp if c.st.head else 0


def loss_upcast_bytes(c: Ctx, num: act.Numerics) -> int:
    """transformers' ForCausalLMLoss upcasts 16-bit logits to fp32 (logits.float()) before cross_entropy (none with
    loss_dtype='16-bit': F.cross_entropy on the 16-bit logits as they are)."""
    m = c.s.model
    upcast = num.compute != 4 and c.s.loss_dtype == "fp32"
    return 4 * m.vocab_size * c.s.tokens // c.s.tp if (upcast and c.st.head) else 0


def loss_bytes_per_logit(c: Ctx) -> int:
    """Width of the loss's tensors over the vocabulary: 4 (fp32, after the upcast), or 2 with loss_dtype='16-bit'
    (torch's log_softmax and nll_loss return their input's dtype)."""
    return 2 if c.s.loss_dtype == "16-bit" else 4


def log_softmax_bytes(c: Ctx) -> int:
    """cross_entropy = log_softmax + nll_loss; log_softmax keeps its output (b*s*V, fp32 after the upcast) for its
    backward."""
    m = c.s.model
    return loss_bytes_per_logit(c) * m.vocab_size * c.s.tokens // c.s.tp if c.st.head else 0


def loss_backward_bytes(c: Ctx) -> int:
    """Start of backward: the NLL gradient, the log-softmax gradient and its saved output over the vocabulary (fp32
    after the upcast; 16-bit with loss_dtype='16-bit')."""
    m = c.s.model
    return 3 * loss_bytes_per_logit(c) * m.vocab_size * c.s.tokens // c.s.tp if c.st.head else 0


def megatron_attention_score_buffer_bytes(c: Ctx) -> int:
    """Megatron's unfused core attention (layout='megatron', attention='eager') computes the a/t x s x s x b scores
    into a tensor of its global memory buffer (NVIDIA/Megatron-LM@040eac9 megatron/model/transformer.py CoreAttention;
    core/transformer/dot_product_attention.py: parallel_state.get_global_memory_buffer().get_tensor(..., "mpu")),
    16-bit, made at the first forward and kept for the whole run."""
    s = c.s
    if s.layout not in ("megatron", "megatron-deepspeed") or s.attention != "eager" or not c.st.layers:
        return 0
    m = s.model
    return 2 * (m.num_heads // s.tp) * s.seq_len * s.seq_len * s.micro_batch


def vocab_parallel_cross_entropy_bytes(c: Ctx) -> int:
    """Megatron's vocabulary-parallel cross entropy at the loss: the head's 16-bit logits over V/tp and their fp32
    copy (megatron/core/tensor_parallel/cross_entropy.py, calculate_logits_max: `vocab_parallel_logits.float()`;
    the max subtraction, exp and normalisation then work in place). Nothing is kept to the next step. Before
    NVIDIA/Megatron-LM@9634c0e (2024-06-13, megatron_ce_inplace=False) the subtraction made a new fp32 tensor:
    4 more bytes per logit. --cross-entropy-fusion-impl te (megatron_ce_fusion='te') keeps only the 16-bit logits:
    Transformer Engine's Triton kernel reads them in place (transformer_engine/pytorch/triton/cross_entropy.py)."""
    if c.s.megatron_ce_fusion == "te":
        return _vocab_parallel_logit_bytes(c, 2)
    return _vocab_parallel_logit_bytes(c, 6 if c.s.megatron_ce_inplace else 10)


def vocab_parallel_cross_entropy_backward_bytes(c: Ctx) -> int:
    """Its backward: the saved fp32 softmax becomes the gradient in place, then the 16-bit copy the head's backward
    takes (cross_entropy.py backward; the .float() node casts back). --cross-entropy-loss-fusion, native
    (megatron/core/fusions/fused_cross_entropy.py, torch.compile'd): Inductor functionalises the in-place update
    at the targets into a new fp32 copy of the softmax before the 16-bit gradient is written (its generated code,
    torch 2.13): 4 more bytes per logit. te: the kernel writes the gradient into the 16-bit logits."""
    per_logit = {"native": 10, "te": 2}.get(c.s.megatron_ce_fusion, 6)
    return _vocab_parallel_logit_bytes(c, per_logit)


def deferred_embedding_wgrad_bytes(c: Ctx, held: int = 1) -> int:
    """--defer-embedding-wgrad-compute (megatron_wgrad_deferral): the output layer does not compute its weight
    gradient in each micro-batch's backward; it keeps that micro-batch's input (its tokens x h, over tp under
    sequence parallelism) and its 16-bit logit gradient (tokens x V/tp) until the pipeline flush, for the first
    --wgrad-deferral-limit micro-batches of a step (all with 0) (megatron/core/tensor_parallel/layers.py
    ColumnParallelLinear.forward and LinearWithGradAccumulationAndAsyncCommunication.backward; drained by
    core/utils.py drain_embedding_wgrad_compute). `held` micro-batches' worth, on the head's stage only."""
    s = c.s
    if not c.st.head or s.megatron_wgrad_deferral is None:
        return 0
    head_input = 2 * s.tokens * s.model.hidden_size // (s.tp if s.sequence_parallel else 1)
    return held * (_vocab_parallel_logit_bytes(c, 2) + head_input)


def _vocab_parallel_logit_bytes(c: Ctx, per_logit: int) -> int:
    """per_logit bytes for each of this GPU's V/tp logits of every token (none off the head's stage)."""
    m = c.s.model
    return per_logit * m.vocab_size * c.s.tokens // c.s.tp if c.st.head else 0


# --- the chunked head: LitGPT's loss under Lightning Fabric -----------------------------------
# litgpt/finetune/lora.py (lit-gpt 8641822 through litgpt 0.5): `logits = model(input_ids, lm_head_chunk_size=128)`,
# `logits[-1] = logits[-1][..., :-1, :]`, `loss = chunked_cross_entropy(logits, targets[..., 1:])`; the model runs
# inside Fabric's module wrapper, which converts the returned list to fp32 after the forward
# (lightning/fabric/wrappers.py _FabricModule.forward: precision.convert_output, to torch.get_default_dtype()).
LITGPT_HEAD_CHUNK = 128


def chunked_head_logits_bytes(c: Ctx) -> int:
    """LitGPT's logits: the head applied per 128-token chunk, the list converted to fp32 by Fabric
    (4 bytes x b*s x V), held by the loop's `logits` until the next step's head output replaces it."""
    m = c.s.model
    return 4 * m.vocab_size * c.s.tokens if c.st.head else 0


def chunked_head_conversion_bytes(c: Ctx, num: act.Numerics) -> int:
    """While Fabric converts the head's output (apply_to_collection builds a new list), the chunks in the compute
    dtype still exist beside their fp32 copies."""
    m = c.s.model
    return num.compute * m.vocab_size * c.s.tokens if c.st.head else 0


def chunked_head_log_softmax_bytes(c: Ctx) -> int:
    """utils.chunked_cross_entropy: F.cross_entropy per chunk (reduction="none"); each chunk's log_softmax keeps
    its fp32 output for the backward: 4 x b*s x V in all. At the start of the backward autograd runs every chunk's
    nll and log-softmax backward before any chunk's cast or head (they were recorded last, and the engine runs
    the highest sequence numbers first): their fp32 gradients replace these outputs, the same bytes."""
    m = c.s.model
    return 4 * m.vocab_size * c.s.tokens if c.st.head else 0


def chunked_head_chunk_bytes(c: Ctx) -> int:
    """One 128-token chunk over the vocabulary in fp32: the log-softmax being computed (forward) or the nll
    gradient beside the log-softmax gradient (backward)."""
    m = c.s.model
    return 4 * m.vocab_size * min(LITGPT_HEAD_CHUNK, c.s.seq_len) * c.s.micro_batch if c.st.head else 0


# --- the chunked loss: Liger's fused linear cross-entropy -------------------------------------
# LigerFusedLinearCrossEntropyFunction (linkedin/Liger-Kernel@ead96b6, src/liger_kernel/ops/
# fused_linear_cross_entropy.py; HF Trainer use_liger_kernel=True, apply_liger_kernel_to_llama):
# the head and the loss run together, chunk by chunk of tokens, and the gradients are computed
# in the forward; no logits are kept or returned.

def liger_chunk_tokens(c: Ctx) -> int:
    """Tokens per chunk: next_power_of_2(ceil(BT / ceil(V / H))), so a chunk's logits are about the size of the
    hidden states (fused_linear_cross_entropy_forward: inc_factor, chunk_size)."""
    m, tok = c.s.model, c.s.tokens
    inc = -(-m.vocab_size // m.hidden_size)
    n = -(-tok // inc)
    return min(1 << (n - 1).bit_length(), tok)


def fused_loss_saved_bytes(c: Ctx, hidden_bytes: int) -> int:
    """What the fused loss keeps for its backward: grad_input (b*s x h, the hidden's dtype) and, when the head
    trains, grad_weight (V x h, the weight's dtype): `ctx.save_for_backward(grad_input, grad_weight, ...)`
    (Liger-Kernel's fused linear cross-entropy; no b*s x V logits are kept)."""
    m, tok = c.s.model, c.s.tokens
    head_trains = c.full_ft
    return hidden_bytes * tok * m.hidden_size + (c.w.param * m.vocab_size * m.hidden_size if head_trains else 0)


def fused_loss_chunk_bytes(c: Ctx, num: act.Numerics, hidden_bytes: int) -> int:
    """Inside the fused loss, per chunk: the chunk's logits (overwritten in place by their gradient), grad_input's
    chunk product, the fp32 per-token losses, under autocast a 16-bit copy of an fp32 head weight (torch's
    autocast caches casts of leaf tensors only, not of the `weight.t()` view) and, when the head trains, the
    grad_weight update: CUDA's
    addmm(out_dtype=fp32) with the input chunk cast to 16-bit into fp32 grad_weight; else
    `grad_weight += torch.mm(grad_logits_chunk.t(), _input_chunk).float()` (a V x h product and its fp32 copy)."""
    m, tok, cb = c.s.model, c.s.tokens, num.compute
    chunk = liger_chunk_tokens(c)
    out = cb * chunk * m.vocab_size + cb * chunk * m.hidden_size + 4 * tok
    if c.w.cast_base:  # `_input_chunk @ weight.t()` under autocast: a view is never taken from the autocast
        out += 2 * m.vocab_size * m.hidden_size  # cache, so each chunk casts the fp32 head weight anew
    if c.full_ft:
        if c.w.param == 4 and cb == 2:
            out += 2 * chunk * m.hidden_size
        else:
            out += (cb + 4) * m.vocab_size * m.hidden_size
    return out


# --- the newer families' layer entries, summed over the stage's layers (for est.terms and explain) ----------

def _ledger_sum(layers, prefixes: tuple[str, ...]) -> int:
    """Bytes of the ledger entries whose names start with `prefixes`, over [(ledger, layers of that kind)]."""
    return sum(n * sum(v for name, v, _ in led.items if name.startswith(prefixes)) for led, n in layers)


def router_activations(c: Ctx, layers) -> int:
    """MoE routers: the score function over all experts in fp32 (softmax: Mixtral, Qwen3-MoE, DeepSeek-V2;
    sigmoid: DeepSeek-V3, Llama 4), the top-k indices, DeepSeek's fp32 copy of the router input, gpt-oss's
    softmax over the top-k (transformers 5.24 *TopKRouter.forward), per MoE layer."""
    return _ledger_sum(layers, ("moe.router",))


def routed_expert_activations(c: Ctx, layers) -> int:
    """Routed experts at tokens x top-k rows (integrations/moe.py grouped_mm_experts_forward: the gathered input,
    gate_up's output, the activation and product, the down output and the routing weights, the sort indices);
    Llama 4's experts at tokens x experts rows (Llama4TextExperts: every token through every expert)."""
    return _ledger_sum(layers, ("moe.experts", "moe.scores", "moe.repeated_input"))


def shared_expert_activations(c: Ctx, layers) -> int:
    """Shared experts (DeepSeek's n_shared_experts, Llama 4's shared_expert): a dense SwiGLU MLP on every token."""
    return _ledger_sum(layers, ("moe.shared",))


def mla_activations(c: Ctx, layers) -> int:
    """Multi-head latent attention (DeepSeek-V2 Sec. 2.1; HF DeepseekV3Attention): the query and KV latents with
    their RMSNorms, the per-head query and key rebuilt from nope + rope parts, kv_b_proj's whole output (the value
    is a view of it)."""
    return _ledger_sum(layers, ("mla.",))


def qk_norm_activations(c: Ctx, layers) -> int:
    """q/k norms: RMSNorm per head (Qwen3, Gemma 3) or over all heads (OLMo 2) keeps its fp32 input and normalized
    output; Llama 4's weightless L2 norm its fp32 input (transformers 5.24 *Attention.forward)."""
    return _ledger_sum(layers, ("attn.q_norm", "attn.k_norm", "attn.l2_norm"))


def post_norm_activations(c: Ctx, layers) -> int:
    """Norms on the attention and MLP outputs (Gemma 2/3's post_attention/post_feedforward_layernorm, OLMo 2's
    post-norms): fp32 input and fp32 normalized output each (the weight is applied in fp32)."""
    return _ledger_sum(layers, ("attn_norm_post", "mlp_norm_post"))


def window_mask_activations(c: Ctx, layers) -> int:
    """Sliding-window and chunked layers at or beyond their window: the (b, 1, s, s) mask each sdpa call keeps as
    its float bias, and K and V repeated to every head (transformers' use_gqa_in_sdpa is off with a mask)."""
    return _ledger_sum(layers, ("sdpa.mask",))


def fused_projection_activations(c: Ctx, layers) -> int:
    """Phi-3's fused qkv_proj: its whole output stays (the value is a view of it), and o_proj's input is a copy."""
    return _ledger_sum(layers, ("attn.qkv_out", "attn.o_proj_input"))


def eager_variant_activations(c: Ctx, layers) -> int:
    """Eager-only families: Gemma 2's soft-capped scores (tanh output, s x s per head), gpt-oss's softmax over s + 1
    logits with its sink (s x (s + 1) per head, in the logits' dtype) and the row-max indices."""
    return _ledger_sum(layers, ("eager.softcap_tanh", "eager.probs_with_sink", "eager.max_index"))


FAMILY_LAYER_TERMS = (router_activations, routed_expert_activations, shared_expert_activations, mla_activations,
                      qk_norm_activations, post_norm_activations, window_mask_activations,
                      fused_projection_activations, eager_variant_activations)
