"""Megatron-LM's model-state bytes per parameter, by parameter and gradient dtype.

Source: Megatron-LM, docs/source/api-guide/dist_optimizer.md ("Distributed Optimizer"), the table
of bytes per parameter: fp16 params + fp16 grads 20 (distributed: 4 + 16/d), bf16 params + fp32
grads 18 (6 + 12/d), fp32 params + fp32 grads 16 (8 + 8/d), d = data-parallel size. The parts
(derived here, as the docs explain them): the working parameter and gradient in their dtypes; with
16-bit parameters an fp32 main copy of the parameters; with fp16 gradients an fp32 main copy of
the gradients too (the optimizer steps on fp32 gradients); Adam's fp32 m and v. The distributed
optimizer shards the main copies, the fp32 main gradients and the moments over d.
"""

from __future__ import annotations

from fractions import Fraction

WIDTH = {"fp16": 2, "bf16": 2, "fp32": 4}
LAYOUTS = {("fp16", "fp16"), ("bf16", "fp32"), ("fp32", "fp32")}  # the three rows of Megatron's table


def megatron_bytes_per_param(param_dtype: str = "bf16", grad_dtype: str = "fp32", dp: int = 1,
                             distributed_optimizer: bool = False) -> Fraction:
    """Bytes per parameter of Megatron-LM's model states (exact; a Fraction when sharded over dp)."""
    if (param_dtype, grad_dtype) not in LAYOUTS:
        raise ValueError(f"Megatron's table has (param, grad) in {sorted(LAYOUTS)}, not {(param_dtype, grad_dtype)!r}")
    if not isinstance(dp, int) or dp < 1:
        raise ValueError(f"dp must be a positive int, got {dp!r}")
    p, g = WIDTH[param_dtype], WIDTH[grad_dtype]
    main_param = 4 if p == 2 else 0          # fp32 main copy of 16-bit parameters
    main_grad = 4 if g == 2 else 0           # fp32 main gradients when the grads are fp16
    moments = 8                              # Adam m and v, fp32
    kept = p + g                             # never sharded by the distributed optimizer
    sharded = main_param + main_grad + moments
    if distributed_optimizer:
        return Fraction(kept) + Fraction(sharded, dp)
    return Fraction(kept + sharded)


def megatron_model_state_bytes(num_params: int, param_dtype: str = "bf16", grad_dtype: str = "fp32",
                               dp: int = 1, distributed_optimizer: bool = False) -> int:
    """Model-state bytes per GPU (rounded up) for num_params parameters in Megatron-LM's layout."""
    if not isinstance(num_params, int) or num_params < 0:
        raise ValueError(f"num_params must be a non-negative int, got {num_params!r}")
    b = megatron_bytes_per_param(param_dtype, grad_dtype, dp, distributed_optimizer) * num_params
    return -(-b.numerator // b.denominator)
