"""Megatron-LM's model states per parameter, with and without its distributed optimizer.

Source: NVIDIA/Megatron-LM docs/source/api-guide/dist_optimizer.md (commit 50b073cc), the table of
"theoretical number of bytes per parameter (where 'd' is the data parallel size)", and
megatron/training/theoretical_memory_usage.py: ``18 if not args.use_distributed_optimizer else 6 + (12 / dp)``.
The distributed optimizer shards only the fp32 main parameters and Adam's two moments (12 bytes, or 16
when the main parameters are separate from fp16 gradients); model parameters and gradients stay whole.
"""

from __future__ import annotations

from fractions import Fraction

from memlib._checks import choice, flag, positive_int
from memlib.training.sharding import MEGATRON_LAYOUTS


def megatron_bytes_per_param(grads: str = "fp32-grads", distributed_optimizer: bool = False,
                             dp: int = 1) -> Fraction:
    """Bytes of model states per parameter on one GPU under Megatron-LM's mixed-precision Adam.

    grads: "fp32-grads" (16-bit params, fp32 main grads: 18 B, or 6 + 12/dp with the distributed optimizer),
    "fp16-grads" (16-bit params and grads: 20 B, or 4 + 16/dp) or "fp32" (16 B, or 8 + 8/dp).
    Megatron-LM dist_optimizer.md's table; theoretical_memory_usage.py. Exact, as a Fraction.
    """
    distributed_optimizer = flag("distributed_optimizer", distributed_optimizer)
    choice("grads", grads, tuple(MEGATRON_LAYOUTS))
    if not isinstance(distributed_optimizer, bool):
        raise ValueError(f"distributed_optimizer must be True or False, got {distributed_optimizer!r}")
    dp = positive_int("dp", dp)
    whole, sharded = MEGATRON_LAYOUTS[grads]
    return Fraction(whole) + Fraction(sharded, dp if distributed_optimizer else 1)


def megatron_model_state_bytes(num_params: int, grads: str = "fp32-grads", distributed_optimizer: bool = False,
                               dp: int = 1) -> int:
    """Model-state bytes on one GPU (rounded up) for num_params parameters: megatron_bytes_per_param x N."""
    distributed_optimizer = flag("distributed_optimizer", distributed_optimizer)
    num_params = positive_int("num_params", num_params)
    b = megatron_bytes_per_param(grads, distributed_optimizer, dp) * num_params
    return -(-b.numerator // b.denominator)
