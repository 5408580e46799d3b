"""The recipe options the harness runs besides the plain loop, each as the library does it.

Written for fake CPU tensors, so that the allocations (not the values) are the library's:

- `cuda_dropout`: dropout as CUDA runs it (aten.native_dropout: the output and a 1-byte
  bool mask; CPU's composite path would keep an input-dtype noise tensor instead).
- `cuda_autocast_queries`: `torch.is_autocast_enabled()` (no device: CUDA's) answers for the
  fake device's autocast, as it would on a GPU.
- `cuda_sdpa_unequal_head_dims`: sdpa with a value head narrower than the query/key head
  (multi-head latent attention: 192 vs 128 in DeepSeek-V3) runs CUDA's memory-efficient
  kernel, as CUDA's dispatcher picks it (flash needs equal head dims), instead of the CPU
  math fallback, which upcasts to fp32 and keeps the b x a x s x s probabilities.
- `OffloadActivations`: torchtune's activation offloading (training/_activation_offloading.py,
  pytorch/torchtune@bd2a0fc): saved tensors of at least 1024 bytes that are not parameters go
  to host memory at pack time; the 5 most recent stay on the GPU until their copy is done;
  in backward each tensor comes back when its node unpacks it and is freed after the next
  node that unpacks. Host memory is the `meta` device here: the trackers count only the
  fake compute device, so what went to the host is not counted (HOST_DEVICE).
- `liger_fused_linear_cross_entropy`: Liger-Kernel's fused linear cross-entropy
  (ops/fused_linear_cross_entropy.py, linkedin/Liger-Kernel@ead96b6): the logits are made
  one chunk of tokens at a time, their gradient is written over them in place by a Triton
  kernel (no allocation), and only grad_input (and grad_weight when the head trains) are
  kept for the backward. Emulated with the same tensors; the Triton kernel is an in-place op.
- `apply_selective_ac`: torchtitan's op-level selective activation checkpointing
  (distributed/activation_checkpoint.py, pytorch/torchtitan@b5bcd76, SelectiveAC): save
  the outputs of compute-intensive ops (torch._functorch.partitioners' list: mm, bmm,
  addmm, the sdpa kernels) except every second mm, recompute everything else.
"""

from __future__ import annotations

import contextlib

import torch
from torch.autograd.graph import saved_tensors_hooks

HOST_DEVICE = "meta"  # stands for host (CPU) memory: not the fake compute device, not counted


# --------------------------------------------------------------------------------------
# dropout as CUDA keeps it
# --------------------------------------------------------------------------------------

@contextlib.contextmanager
def cuda_dropout():
    """F.dropout through aten.native_dropout, the path CUDA takes (at::dropout uses the fused
    kernel when the input is on CUDA and 0 < p < 1): its backward keeps only the bool mask."""
    F = torch.nn.functional
    original = F.dropout

    def dropout(input, p=0.5, training=True, inplace=False):
        if not training or p == 0:
            return input
        return torch.native_dropout(input, p, True)[0]

    F.dropout = dropout
    try:
        yield
    finally:
        F.dropout = original


@contextlib.contextmanager
def cuda_autocast_queries(device_type: str):
    """`torch.is_autocast_enabled()` with no device means CUDA; code that asks it (peft's bitsandbytes LoRA
    layer: `requires_conversion = not torch.is_autocast_enabled()`) must see the harness's autocast on the
    fake device the way it would see CUDA's on a GPU."""
    original = torch.is_autocast_enabled

    def is_autocast_enabled(*args, **kwargs):
        if not args and not kwargs:
            return original(device_type)
        return original(*args, **kwargs)

    torch.is_autocast_enabled = is_autocast_enabled
    try:
        yield
    finally:
        torch.is_autocast_enabled = original


@contextlib.contextmanager
def cuda_sdpa_unequal_head_dims(device_type: str):
    """`F.scaled_dot_product_attention` with v.size(-1) != q.size(-1) on the fake CPU device runs
    `aten._scaled_dot_product_efficient_attention`, the kernel CUDA dispatches to.

    CUDA's sdpa picks flash attention only when q, k and v share one head dim (pytorch
    aten/src/ATen/native/transformers/cuda/sdp_utils.cpp, check_head_dim_size_flash); the
    memory-efficient kernel accepts a different value head dim, so MLA's 192/192/128 heads run it.
    Its backward keeps q, k, v, the output and an fp32 log-sum-exp (b, a, s rounded up to 32), no
    s x s matrix (derivatives.yaml, _scaled_dot_product_efficient_attention). On CPU the same call
    has no fused kernel: the math path upcasts q, k, v to fp32 and keeps the fp32 probabilities
    (b x a x s x s), which a GPU never allocates. Equal head dims (every other family) are left
    to the CPU flash kernel, whose saved tensors match CUDA flash's (validation/README.md).
    Under autocast the inputs are cast to the autocast dtype first, as autocast does for sdpa."""
    F = torch.nn.functional
    original = F.scaled_dot_product_attention

    def sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        if device_type != "cpu" or query.size(-1) == value.size(-1) or enable_gqa:
            return original(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                            scale=scale, enable_gqa=enable_gqa)
        if torch.is_autocast_enabled(device_type):
            dtype = torch.get_autocast_dtype(device_type)
            query, key, value = (t.to(dtype) for t in (query, key, value))
        if attn_mask is not None and attn_mask.dtype == torch.bool:  # sdpa's convert_boolean_attn_mask
            attn_mask = torch.zeros_like(attn_mask, dtype=query.dtype).masked_fill_(~attn_mask, float("-inf"))
        needs_grad = query.requires_grad or key.requires_grad or value.requires_grad
        return torch.ops.aten._scaled_dot_product_efficient_attention(
            query, key, value, attn_mask, needs_grad, dropout_p, is_causal, scale=scale)[0]

    F.scaled_dot_product_attention = sdpa
    try:
        yield
    finally:
        F.scaled_dot_product_attention = original


# --------------------------------------------------------------------------------------
# torchtune's activation offloading
# --------------------------------------------------------------------------------------

class OffloadActivations(saved_tensors_hooks):
    """Saved tensors >= 1024 bytes (not parameters) move to the host at pack time.

    torchtune's rules with use_streams=True: the last `max_fwd_stash_size` (5) offloaded
    tensors stay alive on the GPU until their copy is done (modelled as: until 5 newer ones
    were packed); in backward a tensor still in that stash is used as is, any other comes
    back as a new GPU tensor that stays until the next autograd node that unpacks has run;
    the forward stash is emptied at the first backward node.
    """

    def __init__(self, device: str, min_offload_size: int = 1024, max_fwd_stash_size: int = 5,
                 host: str = HOST_DEVICE):
        self.device = device
        self.host = host  # "meta" on the fake CPU device; on a real GPU, pinned CPU memory
        self.min_bytes = min_offload_size
        self.stash_size = max_fwd_stash_size
        self.next_id = 0
        self.tracker: dict[int, tuple[torch.Tensor, bool]] = {}  # id -> (tensor, on host)
        self.fwd_stash: dict[int, torch.Tensor] = {}
        self.bwd_stash: dict[int, torch.Tensor] = {}
        self.node = None
        self.offloaded_bytes = 0

        def pack(t: torch.Tensor) -> int:
            self.next_id += 1
            tid = self.next_id
            nbytes = t.element_size() * t.nelement()
            if (t.device.type == torch.device(self.device).type and nbytes >= self.min_bytes
                    and not isinstance(t, torch.nn.Parameter)):
                for old in [i for i in self.fwd_stash if i <= tid - self.stash_size]:
                    del self.fwd_stash[old]
                if self.host == HOST_DEVICE:
                    copy = torch.empty_like(t, device=HOST_DEVICE)
                else:
                    copy = torch.empty_like(t, device=self.host, pin_memory=True)
                    copy.copy_(t, non_blocking=True)
                self.tracker[tid] = (copy, True)
                self.fwd_stash[tid] = t
                self.offloaded_bytes += nbytes
            else:
                self.tracker[tid] = (t, False)
            return tid

        def unpack(tid: int) -> torch.Tensor:
            t, on_host = self.tracker.pop(tid)
            if not on_host:
                return t
            node = torch._C._current_autograd_node()
            previous = []
            if node is not self.node:
                self.node = node
                previous = list(self.bwd_stash)
            if tid in self.fwd_stash:
                gpu = self.fwd_stash[tid]
            else:
                gpu = torch.empty_like(t, device=self.device) if self.host == HOST_DEVICE \
                    else t.to(self.device, non_blocking=True)
                self.bwd_stash[tid] = gpu

            def after_node(outputs, inputs):
                self.fwd_stash.clear()
                for i in previous:
                    self.bwd_stash.pop(i, None)
                return outputs

            if node is not None and previous is not None:
                node.register_hook(after_node)
            return gpu

        super().__init__(pack, unpack)

    def finish_backward(self) -> None:
        """torchtune queues this at the end of autograd: drop what is still stashed."""
        self.bwd_stash.clear()
        self.fwd_stash.clear()
        self.node = None


class NoOffload(saved_tensors_hooks):
    """torchtune's NoOpManager: the output head's saved tensors stay on the GPU."""

    def __init__(self):
        super().__init__(lambda t: t, lambda t: t)


# --------------------------------------------------------------------------------------
# Liger's fused linear cross-entropy
# --------------------------------------------------------------------------------------

def _next_pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


class _LigerFLCE(torch.autograd.Function):
    """fused_linear_cross_entropy_forward: chunk_size = next_pow2(ceil(BT / ceil(V / H))) tokens at a time."""

    @staticmethod
    def forward(ctx, hidden, weight, target):
        BT, H = hidden.shape
        V = weight.shape[0]
        inc = -(-V // H)
        chunk = _next_pow2(-(-BT // inc))
        grad_input = torch.zeros_like(hidden)
        grad_weight = torch.zeros_like(weight) if weight.requires_grad else None
        loss_1d = torch.zeros(BT, dtype=torch.float32, device=hidden.device)
        for start in range(0, BT, chunk):
            x = hidden[start:start + chunk]
            logits = x @ weight.t()  # chunk x V, in the autocast / input dtype
            logits = logits.contiguous()
            logits.mul_(1.0)  # the Triton kernel: loss and d(loss)/d(logits) written in place
            grad_input[start:start + chunk] = logits @ weight
            if grad_weight is not None:
                if grad_weight.dtype == torch.float32 and logits.dtype != torch.float32:
                    # CUDA sm80+: addmm(..., out_dtype=fp32, out=grad_weight) after casting the
                    # input chunk to the logits dtype; no weight-sized temporary
                    x = x.to(logits.dtype)
                    grad_weight.add_(0.0)
                else:
                    grad_weight += torch.mm(logits.t(), x).float()
        loss = loss_1d.sum()
        ctx.save_for_backward(grad_input.detach(), grad_weight.detach() if grad_weight is not None else None)
        return loss

    @staticmethod
    def backward(ctx, grad_output):
        grad_input, grad_weight = ctx.saved_tensors
        return grad_input, grad_weight, None


def liger_fused_linear_cross_entropy(hidden: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor):
    """LigerForCausalLMLoss (transformers' model patched by apply_liger_kernel_to_llama): labels shifted with
    a pad, hidden flattened to (b*s, h), then the fused linear cross-entropy; no logits are returned."""
    shift_labels = torch.nn.functional.pad(labels, (0, 1), value=-100)[..., 1:]
    return _LigerFLCE.apply(hidden.reshape(-1, hidden.shape[-1]), weight, shift_labels.reshape(-1))


# --------------------------------------------------------------------------------------
# LitGPT's chunked head and loss, under Lightning Fabric
# --------------------------------------------------------------------------------------

LITGPT_HEAD_CHUNK = 128  # litgpt/finetune/lora.py: model(input_ids, lm_head_chunk_size=128)


def litgpt_chunked_head(hidden: torch.Tensor, lm_head) -> list:
    """LitGPT's GPT.forward with lm_head_chunk_size=128 (litgpt/model.py, lit_gpt/lora.py at 8641822): the head
    applied to each 128-token slice of the final norm's output, a list of (b, 128, V) logits. Lightning Fabric's
    module wrapper then converts the returned collection to the default dtype, fp32, after the forward
    (lightning/fabric/wrappers.py _FabricModule.forward: `output = self._precision.convert_output(output)`;
    HalfPrecision, MixedPrecision and BitsandbytesPrecision all convert to `torch.get_default_dtype()`): a new
    list of fp32 chunks, made while the 16-bit list still exists."""
    if type(lm_head) is torch.nn.Linear:  # the same op as calling it; MemTracker refuses a module called repeatedly
        chunks = [torch.nn.functional.linear(x, lm_head.weight, lm_head.bias)
                  for x in hidden.split(LITGPT_HEAD_CHUNK, dim=1)]
    else:  # a 4-bit head (Lightning's BitsandbytesPrecision) runs its own forward
        chunks = [lm_head(x) for x in hidden.split(LITGPT_HEAD_CHUNK, dim=1)]
    converted = [c.to(torch.get_default_dtype()) for c in chunks]
    del chunks
    return converted


def litgpt_chunked_cross_entropy(logits: list, ids: torch.Tensor) -> torch.Tensor:
    """LitGPT's training loss (finetune/lora.py: `logits[-1] = logits[-1][..., :-1, :]`, then
    utils.chunked_cross_entropy(logits, targets[..., 1:])): cross-entropy per chunk with reduction="none" (each
    chunk's log-softmax output kept for the backward), concatenated, summed and divided by the number of targets
    (LitGPT's `non_masked_elems.maximum(torch.ones_like(...))`: no host read)."""
    F = torch.nn.functional
    targets = ids[..., 1:]
    logits[-1] = logits[-1][..., :-1, :]
    logit_chunks = [c.reshape(-1, c.size(-1)) for c in logits]
    target_chunks = [t.reshape(-1) for t in targets.split(logits[0].size(1), dim=1)]
    losses = [F.cross_entropy(c, t, ignore_index=-100, reduction="none") for c, t in zip(logit_chunks, target_chunks)]
    n = (targets != -100).sum()
    return torch.cat(losses).sum() / n.maximum(torch.ones_like(n))


# --------------------------------------------------------------------------------------
# torchtitan's op-level selective activation checkpointing
# --------------------------------------------------------------------------------------

def _save_ops() -> set:
    from torch._functorch.partitioners import get_default_op_list
    aten = torch.ops.aten
    ops = {op.default for op in get_default_op_list().compute_intensive_ops}
    ops |= {aten._scaled_dot_product_cudnn_attention.default, aten._scaled_dot_product_attention_math.default,
            aten.max.default, aten.linear.default,
            # on the fake CPU device sdpa runs this kernel; on CUDA it is the flash/efficient one above
            aten._scaled_dot_product_flash_attention_for_cpu.default}
    return ops


def torchtitan_sac_policy():
    """A fresh policy (torchtitan builds one per checkpointed call): MUST_SAVE the compute-intensive ops'
    outputs except every second mm, PREFER_RECOMPUTE the rest; counts forward and recompute separately."""
    from torch.utils.checkpoint import CheckpointPolicy
    save = _save_ops()
    mm_ops = (torch.ops.aten.mm.default, torch.ops.aten.linear.default)
    meta = {"forward": 0, "recompute": 0}

    def policy(ctx, func, *args, **kwargs):
        mode = "recompute" if ctx.is_recompute else "forward"
        if func in mm_ops:
            meta[mode] += 1
        if func in save:
            if func in mm_ops and meta[mode] % 2 == 0:
                return CheckpointPolicy.PREFER_RECOMPUTE
            return CheckpointPolicy.MUST_SAVE
        return CheckpointPolicy.PREFER_RECOMPUTE

    return policy


def apply_selective_ac(layers) -> None:
    """checkpoint_wrapper(layer, context_fn=create_selective_checkpoint_contexts(policy)) on every decoder layer."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
    from torch.utils.checkpoint import create_selective_checkpoint_contexts
    for i in range(len(layers)):
        layers[i] = checkpoint_wrapper(
            layers[i], preserve_rng_state=False,
            context_fn=lambda: create_selective_checkpoint_contexts(torchtitan_sac_policy()))
