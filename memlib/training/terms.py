"""The named terms of a training step's memory, one small function each, with its source.

Every function takes the step's context `c` (the setup, the GPU's stage, its byte widths)
and returns bytes on one GPU. step.py adds them up into the moments of a step; an
Estimate keeps them (est.terms) and explain() prints each with the first line of its
docstring, which says where the term comes from.
"""

from __future__ import annotations

from dataclasses import dataclass

from memlib import activations as act
from memlib import lora as lora_mod
from memlib import optimizers as opt
from memlib import zero
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


@dataclass(frozen=True)
class Widths:
    """Byte widths of the model states and the numerics of the compute, per framework layout."""

    param: int  # trainable (and, in full fine-tuning, all) parameters
    grad: int
    state: int  # optimizer states
    master: int  # a separate fp32 master copy (DeepSpeed, Megatron), 0 if none
    num: act.Numerics
    note: str = ""


def widths(s: TrainingSetup, k: int) -> Widths:
    """Byte widths of parameters, gradients, states and activations for the setup's layout."""
    if s.sharding == "megatron":
        # Megatron-LM's mixed precision (NVIDIA/Megatron-LM theoretical_memory_usage.py: 18 bytes
        # per parameter without the distributed optimizer): 16-bit parameters, fp32 main
        # gradients, fp32 master weights + Adam moments; 16-bit compute, no autocast copies.
        return Widths(2, 4, 4, 4, NUMERICS["bf16"],
                      "Megatron-LM mixed precision: 2-byte params, 4-byte fp32 main grads, 12-byte fp32 master "
                      "+ Adam states = 18 bytes/param")
    if s.sharding == "deepspeed":
        # DeepSpeed's mixed precision (Rajbhandari et al. 2020, Sec. 3.1): 16-bit working
        # parameters and gradients; fp32 master weights + fp32 optimizer states (K = 12 for Adam).
        wide = s.precision == "fp32"
        pb = 4 if wide else 2
        master = 0 if wide else 4
        return Widths(pb, pb, 4, master, NUMERICS["fp32"] if wide else NUMERICS["bf16"],
                      f"DeepSpeed ZeRO-{k} over {s.dp} GPUs: {pb}-byte working params and grads, fp32 optimizer "
                      f"states{' + fp32 master copy' if master else ''} (the ZeRO paper's layout)")
    pb = PARAM_BYTES[s.precision]
    note = ""
    if s.sharding == "fsdp":
        note = (f"FSDP over {s.dp} GPUs (stage {k} equivalent): parameters, gradients and optimizer states "
                f"in {pb}-byte {('fp32 (AMP)' if pb == 4 else 'bf16/fp16')}, PyTorch's layout")
    elif s.zero_stage and s.dp == 1:
        note = f"zero_stage={s.zero_stage} over one GPU shards nothing: same as no ZeRO"
    return Widths(pb, pb, pb, 0, NUMERICS[s.precision], note)


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

    @property
    def full_ft(self) -> bool:
        return self.s.finetune == "full"


# --- model states -------------------------------------------------------------------------

def parameter_bytes(c: Ctx) -> int:
    """Weights on this GPU before sharding: every parameter at its width; LoRA adds the adapters, QLoRA stores
    the projections in NF4 (Dettmers et al. 2023, Sec. 3)."""
    pb, sums = c.w.param, c.sums
    if c.full_ft:
        return sums.total * pb
    if c.s.finetune == "lora":
        return sums.total * pb + c.trainable * pb
    # QLoRA: the decoder layers' projections in NF4; embeddings, lm_head and norms in 16-bit
    quantized = sums.layer_linear * c.st.layers  # (bitsandbytes skips lm_head by default)
    return sums.quantized_bytes + (sums.total - quantized) * 2 + c.trainable * pb


def gradient_bytes(c: Ctx) -> int:
    """Gradients of the trainable parameters, in the gradient dtype (present from their backward to zero_grad)."""
    return c.trainable * c.w.grad


def optimizer_state_bytes(c: Ctx) -> int:
    """Optimizer states per trainable tensor (optimizers.state_bytes) plus a separate fp32 master copy where the
    framework keeps one (ZeRO paper Sec. 3.1: K = 12 bytes/param for mixed-precision Adam)."""
    return opt.state_bytes(c.s.optimizer, c.tensors, c.w.state) + c.w.master * c.trainable


def sharded(c: Ctx, nbytes: int, state: str) -> int:
    """ZeRO (Rajbhandari et al. 2020, Sec. 5): stage 1 shards optimizer states, 2 also gradients, 3 also
    parameters, each over the dp data-parallel GPUs."""
    return zero.partitioned(nbytes, state, c.k, c.s.dp)


def optimizer_step_temporaries(c: Ctx) -> int:
    """Temporaries inside optimizer.step() beyond parameters, gradients and states (optimizers.step_transient_bytes;
    DeepSpeed's fp32 gradient partition; none for Megatron's fused Adam)."""
    s, k = c.s, c.k
    if s.sharding == "megatron":
        return 0  # Apex/TE fused Adam updates the fp32 master in place
    if s.sharding == "deepspeed":
        # DeepSpeed steps on the flat fp32 partition after upcasting its gradient partition to
        # fp32; ZeRO-3 does it one sub-group at a time (sub_group_size, default 1e9 elements).
        if not c.w.master:
            return 0
        grad_partition = c.trainable // (s.dp if k >= 1 else 1)
        return 4 * (min(grad_partition, DEEPSPEED_SUB_GROUP) if k == 3 else grad_partition)
    largest = max(t.numel for t, _ in c.tensors)
    return opt.step_transient_bytes(s.optimizer, largest // (s.dp if k >= 1 else 1), c.w.state)


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
    return Offload(offloaded, host, nvme, min(grad_bytes, DEEPSPEED_REDUCE_BUCKET * c.w.grad))


# --- activations outside the decoder layers --------------------------------------------------

def saved_model_activations(c: Ctx, num: act.Numerics) -> int:
    """Kept for the backward outside the layers: rotary cos/sin (saved by every layer's rotation, shared), the
    token ids and the shifted labels (saved by the NLL loss) (transformers LlamaModel.forward)."""
    m = c.s.model
    return 2 * m.head_dim * num.residual * c.s.tokens + 2 * 8 * c.s.tokens


def forward_only_activations(c: Ctx, num: act.Numerics, sp: int) -> int:
    """Alive only during the forward: the embedding output (a tensor of its own when the residual is 16-bit;
    under AMP it is layer 0's saved fp32 input), the padded labels, and for eager attention the additive
    (b, 1, s, s) causal mask shared by all layers (transformers masking_utils)."""
    s = c.s
    r, tok = num.residual, s.tokens
    out = saved_model_activations(c, num) + (r * s.model.hidden_size * tok // sp if (r != 4 and c.st.embed) else 0)
    out += 8 * tok
    if s.attention == "eager":
        out += r * s.micro_batch * s.seq_len * s.seq_len
    return out


def final_norm_activations(c: Ctx, num: act.Numerics, sp: int) -> int:
    """Final RMSNorm before the head: its fp32 input, plus (normalized, output) when its weight is trained."""
    if not c.st.head:
        return 0
    h, tok, r = c.s.model.hidden_size, c.s.tokens, num.residual
    return (4 * h * tok + ((r * h + (2 if num.autocast else r) * h) * tok if c.full_ft else 0)) // sp


def frozen_first_norm(c: Ctx, sp: int) -> int:
    """With frozen embeddings (LoRA/QLoRA) layer 0's input needs no gradient, so its first RMSNorm keeps nothing
    for the backward: subtracted from layer 0's ledger."""
    return 0 if (c.full_ft or not c.st.embed) else 4 * c.s.model.hidden_size * c.s.tokens // sp


def checkpoint_bytes(c: Ctx, num: act.Numerics, sp: int) -> int:
    """Full recompute (non-reentrant torch.utils.checkpoint per decoder layer) keeps each layer's input only."""
    return num.residual * c.s.model.hidden_size * c.s.tokens // sp


# --- autocast -------------------------------------------------------------------------------

def autocast_weight_copies(c: Ctx, num: act.Numerics) -> int:
    """torch.autocast caches a 16-bit copy of every fp32 weight a matmul used and the matmul saves it for its
    backward (torch/csrc/autograd autocast cache; cleared when autocast exits)."""
    if not num.autocast:
        return 0
    return 2 * c.sums.linear + (0 if c.full_ft else 2 * c.trainable)


def autocast_layer_copies(c: Ctx, num: act.Numerics) -> int:
    """The 16-bit weight copies of one decoder layer (what a rebuilt layer holds under full recompute)."""
    return 2 * c.sums.layer_linear if num.autocast else 0


def autocast_head_copy(c: Ctx, num: act.Numerics) -> int:
    """The 16-bit copy of the lm_head weight (held by the head's matmul until its backward)."""
    m = c.s.model
    return 2 * m.vocab_size * m.hidden_size // c.s.tp if (num.autocast and c.st.head) else 0


# --- logits and the loss ---------------------------------------------------------------------

def logits_bytes(c: Ctx, num: act.Numerics) -> int:
    """The head's output (b*s*V in the compute dtype), held by the model's output until the next forward
    replaces it; vocabulary-parallel under tp (Megatron's cross entropy never gathers the vocabulary)."""
    m = c.s.model
    return num.compute * m.vocab_size * c.s.tokens // c.s.tp if c.st.head else 0


def loss_upcast_bytes(c: Ctx, num: act.Numerics) -> int:
    """transformers' ForCausalLMLoss upcasts 16-bit logits to fp32 (logits.float()) before cross_entropy."""
    m = c.s.model
    return 4 * m.vocab_size * c.s.tokens // c.s.tp if (num.compute != 4 and c.st.head) else 0


def log_softmax_bytes(c: Ctx) -> int:
    """cross_entropy = log_softmax + nll_loss; log_softmax keeps its fp32 output (b*s*V) for its backward."""
    m = c.s.model
    return 4 * m.vocab_size * c.s.tokens // c.s.tp if c.st.head else 0


def loss_backward_bytes(c: Ctx) -> int:
    """Start of backward: the NLL gradient, the log-softmax gradient and its saved output, fp32 over the vocabulary."""
    m = c.s.model
    return 3 * 4 * m.vocab_size * c.s.tokens // c.s.tp if c.st.head else 0
