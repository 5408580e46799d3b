"""Optimizer state bytes and the transient bytes of one optimizer step.

States are counted tensor by tensor (see Model.tensors), because 8-bit Adam and
Adafactor treat small and 2-D tensors differently from the rest.
"""

from __future__ import annotations

from memlib.models import Tensor

OPTIMIZERS = ("adamw", "adamw-8bit", "sgd", "sgd-momentum", "adafactor")

# bitsandbytes 8-bit blockwise Adam (Dettmers et al. 2022, "8-bit Optimizers via Block-wise
# Quantization"; bitsandbytes/optim/optimizer.py Optimizer2State.init_state, 0.49.2: tensors
# with fewer than min_8bit_size = 4096 elements keep two fp32 states; larger ones keep two uint8
# states plus one fp32 absmax per block of `blocksize = 256` elements per state (the paper's
# 2048-element blocks are what releases before the 256-element kernels used), and share two
# 256-entry fp32 quantile maps.
BNB_MIN_8BIT_SIZE = 4096
BNB_BLOCK = 256
BNB_QMAP_BYTES = 2 * 256 * 4


def adamw_8bit_state_bytes(numel: int) -> int:
    """bitsandbytes AdamW8bit state of one tensor: 2 x uint8 + 2 x fp32 absmax per 256-element block."""
    if numel < BNB_MIN_8BIT_SIZE:
        return 2 * 4 * numel
    blocks = -(-numel // BNB_BLOCK)
    return 2 * numel + 2 * 4 * blocks


def adafactor_state_numel(t: Tensor, shape: tuple[int, int] | None) -> int:
    """Adafactor second moment (Shazeer & Stern 2018, Sec. 3): rows + columns for a matrix,
    the full tensor otherwise; no first moment (beta1=None, torch.optim.Adafactor's default).
    A stacked tensor of E experts (E, out, in) keeps rows + columns per expert (torch.optim.Adafactor
    factors the last two dimensions)."""
    if shape is None:
        return t.numel
    return (shape[0] + shape[1]) * max(t.experts, 1)


def state_bytes(optimizer: str, tensors: list[tuple[Tensor, tuple[int, int] | None]], state_dtype_bytes: int) -> int:
    """Bytes of optimizer state for the trainable tensors [(tensor, 2-D shape or None)].

    AdamW (Loshchilov & Hutter 2019): exp_avg and exp_avg_sq, each in the parameter's
    dtype (torch.optim.AdamW allocates them with zeros_like(param)). SGD with momentum:
    one momentum buffer. Plain SGD: nothing.
    """
    if optimizer == "adamw":
        return sum(2 * state_dtype_bytes * t.numel * t.count for t, _ in tensors)
    if optimizer == "adamw-8bit":
        return BNB_QMAP_BYTES + sum(adamw_8bit_state_bytes(t.numel) * t.count for t, _ in tensors)
    if optimizer == "sgd":
        return 0
    if optimizer == "sgd-momentum":
        return sum(state_dtype_bytes * t.numel * t.count for t, _ in tensors)
    if optimizer == "adafactor":
        return sum(state_dtype_bytes * adafactor_state_numel(t, s) * t.count for t, s in tensors)
    raise ValueError(f"unknown optimizer {optimizer!r}; accepted: {', '.join(OPTIMIZERS)}")


def step_transient_bytes(optimizer: str, largest_numel: int, state_dtype_bytes: int, impl: str = "for-loop",
                         group_numel: int | None = None) -> int:
    """Peak temporaries inside optimizer.step() beyond params, grads and states.

    AdamW, torch 2.13 (torch/optim/adam.py, which AdamW runs):
    * "for-loop" (foreach=False, `_single_tensor_adam`): denom = (exp_avg_sq.sqrt() /
      bias_correction2_sqrt).add_(eps): the sqrt and the quotient briefly coexist, two
      tensors the size of the largest parameter;
    * "foreach" (`_multi_tensor_adam`, the default on CUDA): `exp_avg_sq_sqrt =
      torch._foreach_sqrt(device_exp_avg_sqs)` holds a square root of every second moment of
      the group (per device and dtype) at once; the other list ops work in place: one
      state-sized copy of the whole group (`group_numel` elements);
    * "fused" (`torch._fused_adamw_`): one kernel, in place, no temporaries.
    bitsandbytes' fused 8-bit kernel and SGD's in-place updates allocate none; Adafactor's
    row/column update needs about one full-size tensor for the reconstructed second moment
    and one for the update.
    """
    if optimizer == "adamw":
        if impl == "fused":
            return 0
        if impl == "foreach":
            return state_dtype_bytes * (largest_numel if group_numel is None else group_numel)
        return 2 * largest_numel * state_dtype_bytes
    if optimizer == "adafactor":
        return 2 * largest_numel * state_dtype_bytes
    return 0
