"""ZeRO: which model states are partitioned at each stage, and DeepSpeed's own estimators.

Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter
Models", Sec. 5 and Figure 1: with mixed-precision Adam each parameter costs 2 bytes of
16-bit weights, 2 of 16-bit gradients and K = 12 of optimizer state (fp32 master copy,
momentum, variance). Over N data-parallel GPUs:

    stage 0 (DDP)      (2 + 2 + K) * psi
    stage 1 (P_os)     2 psi + 2 psi + K psi / N
    stage 2 (P_os+g)   2 psi + (2 + K) psi / N
    stage 3 (P_os+g+p) (2 + 2 + K) psi / N
"""

from __future__ import annotations

from memlib._checks import flag, positive_float, positive_int, plain_args
from memlib.training.sharding import _stage, partitioned


@plain_args
def zero_model_state_bytes(num_params: int, stage: int, dp: int, k: int = 12, working_bytes: int = 2) -> int:
    """Per-GPU model states of ZeRO-`stage` over `dp` GPUs (Rajbhandari et al. 2020, Figure 1)."""
    num_params = positive_int("num_params", num_params)
    dp = positive_int("dp", dp)
    stage = _stage(stage)
    k = positive_int("k", k, allow_zero=True)  # optimizer bytes per parameter (12: mixed-precision Adam)
    working_bytes = positive_int("working_bytes", working_bytes, allow_zero=True)  # 0: optimizer states alone
    return (partitioned(working_bytes * num_params, "parameters", stage, dp)
            + partitioned(working_bytes * num_params, "gradients", stage, dp)
            + partitioned(k * num_params, "optimizer", stage, dp))


@plain_args
def deepspeed_zero2_estimate(total_params: int, num_gpus_per_node: int = 1, num_nodes: int = 1,
                             cpu_offload: bool = True, additional_buffer_factor: float = 1.5) -> tuple[int, int]:
    """(cpu_bytes, gpu_bytes) per DeepSpeed's documented ZeRO-2 estimator
    (deepspeed.runtime.zero.stage_1_and_2.estimate_zero2_model_states_mem_needs)."""
    total_params, num_gpus_per_node, num_nodes = _ds_counts(total_params, num_gpus_per_node, num_nodes)
    flag("cpu_offload", cpu_offload)
    additional_buffer_factor = positive_float("additional_buffer_factor", additional_buffer_factor, maximum=100)
    total_gpus = num_nodes * num_gpus_per_node
    if cpu_offload:
        gpu = 2 * total_params
        cpu = total_params * max(4 * total_gpus, 16) * additional_buffer_factor
    else:
        gpu = 4 * total_params + int(16 * total_params / total_gpus)
        cpu = total_params * 4 * num_gpus_per_node * additional_buffer_factor
    return int(cpu), int(gpu)


@plain_args
def deepspeed_zero3_estimate(total_params: int, largest_layer_params: int, num_gpus_per_node: int = 1,
                             num_nodes: int = 1, cpu_offload: bool = True, cpu_offload_params: bool = True,
                             zero_init: bool = True, additional_buffer_factor: float = 1.5) -> tuple[int, int]:
    """(cpu_bytes, gpu_bytes) per DeepSpeed's documented ZeRO-3 estimator
    (deepspeed.runtime.zero.stage3.estimate_zero3_model_states_mem_needs): 18 bytes/param
    of model states spread over the GPUs, plus the largest layer gathered in fp32 (4 B/param)."""
    total_params, num_gpus_per_node, num_nodes = _ds_counts(total_params, num_gpus_per_node, num_nodes)
    largest_layer_params = positive_int("largest_layer_params", largest_layer_params, allow_zero=True)  # 0 isolates the per-parameter term
    if largest_layer_params > total_params:
        raise ValueError(f"largest_layer_params {largest_layer_params:,} exceeds total_params {total_params:,}")
    for name, v in (("cpu_offload", cpu_offload), ("cpu_offload_params", cpu_offload_params), ("zero_init", zero_init)):
        flag(name, v)
    additional_buffer_factor = positive_float("additional_buffer_factor", additional_buffer_factor, maximum=100)
    total_gpus = num_nodes * num_gpus_per_node
    per_node = 1 / num_nodes
    largest = 4 * largest_layer_params
    if cpu_offload and cpu_offload_params:
        gpu = largest
        factor = 18 * per_node if zero_init else max(4 * num_gpus_per_node, 18 * per_node)
        cpu = total_params * factor * additional_buffer_factor
    elif cpu_offload:
        gpu = largest + int(2 * total_params / total_gpus)
        factor = 16 * per_node if zero_init else max(4 * num_gpus_per_node, 16 * per_node)
        cpu = total_params * factor * additional_buffer_factor
    else:
        gpu = largest + int(18 * total_params / total_gpus)
        cpu = (largest_layer_params if zero_init else total_params) * 4 * num_gpus_per_node * additional_buffer_factor
    return int(cpu), int(gpu)


def _ds_counts(total_params, num_gpus_per_node, num_nodes) -> tuple[int, int, int]:
    """DeepSpeed's estimators take a parameter count and GPU counts: positive integers (a float count such
    as 7e9 is accepted when it is a whole number, as DeepSpeed's own examples write it)."""
    if isinstance(total_params, float) and total_params.is_integer() and 0 < total_params <= 2**53:
        total_params = int(total_params)
    return (positive_int("total_params", total_params), positive_int("num_gpus_per_node", num_gpus_per_node),
            positive_int("num_nodes", num_nodes))
