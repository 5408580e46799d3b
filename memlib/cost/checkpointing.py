"""Checkpointing a large run: how big a checkpoint is, how long it takes to write, how often to
write it when the job fails every few hours, and what an asynchronous save stalls.

What a checkpoint holds is what a restart needs: the weights and the optimizer states, never the
gradients or the activations (they are rebuilt by the next step).
"""

from __future__ import annotations

import math

from memlib._checks import bandwidth, choice, positive_float, positive_int
from memlib.models import get_model

# Bytes per parameter a training checkpoint of AdamW writes, by the framework's layout.
CHECKPOINT_BYTES_PER_PARAM = {
    # DeepSpeed ZeRO: mp_rank_*_model_states.pt holds the 16-bit module weights (2 B), and
    # zero_pp_rank_*_optim_states.pt the fp32 master copy, exp_avg and exp_avg_sq (12 B)
    # (deepspeed/runtime/engine.py, _save_checkpoint / _save_zero_checkpoint)
    "deepspeed": 2 + 12,
    # Megatron-Core: the bf16 model weights (2 B) plus the optimizer's fp32 main params and both Adam
    # moments (12 B) (megatron/core/optimizer/distrib_optimizer.py, sharded_state_dict)
    "megatron": 2 + 12,
    # torchtitan / FSDP2 with MixedPrecisionPolicy: the sharded parameters are the fp32 master (4 B),
    # cast to bf16 per step, plus exp_avg and exp_avg_sq (8 B) (torch.distributed.checkpoint state dicts)
    "fsdp2": 4 + 8,
    # the weights alone in bf16: what an inference export (safetensors) writes
    "weights-bf16": 2,
}


def checkpoint_size_bytes(model, layout: str = "deepspeed") -> int:
    """Bytes one full training checkpoint writes: CHECKPOINT_BYTES_PER_PARAM[layout] x parameters
    (all parameters, experts included: a restart needs every state)."""
    layout = choice("layout", layout, CHECKPOINT_BYTES_PER_PARAM)
    return CHECKPOINT_BYTES_PER_PARAM[layout] * get_model(model).num_params


def checkpoint_write_s(size_bytes: float, storage_bytes_per_s: float, ranks: int = 1,
                       per_rank_bytes_per_s: float | None = None) -> float:
    """Seconds to write a checkpoint of `size_bytes` when each of `ranks` writes its own shard
    (sharded checkpoint): the slower of the storage's aggregate bandwidth and the ranks' own links,
    size / min(storage, ranks x per_rank). One rank writing everything is ranks=1."""
    size = positive_float("size_bytes", size_bytes, unit=" bytes")
    storage = bandwidth("storage_bytes_per_s", storage_bytes_per_s)
    ranks = positive_int("ranks", ranks)
    rate = storage
    if per_rank_bytes_per_s is not None:
        rate = min(storage, ranks * bandwidth("per_rank_bytes_per_s", per_rank_bytes_per_s))
    return size / rate


def job_mtbf_s(interruptions: int, days: float, gpus: int | None = None, at_gpus: int | None = None) -> float:
    """Mean time between a job's interruptions, from an observed count over `days`; scaled from `gpus`
    to `at_gpus` assuming independent failures whose rate grows with the GPU count (MTBF x gpus / at_gpus).
    Llama 3 405B: 419 unexpected interruptions in 54 days on 16,384 H100s (arXiv:2407.21783, Sec. 3.3.4)."""
    n = positive_int("interruptions", interruptions)
    mtbf = positive_float("days", days, unit=" days") * 86400 / n
    if (gpus is None) != (at_gpus is None):
        raise ValueError("job_mtbf_s: give both gpus (the observed job's) and at_gpus (yours), or neither")
    if gpus is not None:
        mtbf *= positive_int("gpus", gpus) / positive_int("at_gpus", at_gpus)
    return mtbf


def young_interval_s(write_s: float, mtbf_s: float) -> float:
    """The checkpoint interval that minimises lost time to first order, sqrt(2 x write time x MTBF)
    (Young 1974, "A first order approximation to the optimum checkpoint interval", CACM 17(9))."""
    return math.sqrt(2 * positive_float("write_s", write_s, unit=" s") * positive_float("mtbf_s", mtbf_s, unit=" s"))


def checkpoint_waste(interval_s: float, write_s: float, mtbf_s: float, restart_s: float = 0.0) -> float:
    """Share of wall-clock lost to checkpointing, to first order (Young 1974; Daly 2006, FGCS 22(3)):
    the stall of each save (write_s / interval) plus, per failure, half an interval of lost work and the
    restart ((interval / 2 + restart) / MTBF). An asynchronous save passes its stall (the copy to host
    memory), not the whole write, as write_s."""
    interval = positive_float("interval_s", interval_s, unit=" s")
    stall = positive_float("write_s", write_s, unit=" s")
    mtbf = positive_float("mtbf_s", mtbf_s, unit=" s")
    restart = 0.0 if restart_s == 0 else positive_float("restart_s", restart_s, unit=" s")
    return stall / interval + (interval / 2 + restart) / mtbf


def async_interval_s(stall_s: float, write_s: float, mtbf_s: float) -> float:
    """Checkpoint interval with asynchronous saves (PyTorch DCP async_save: copy to host RAM, write in the
    background): Young's interval for the stall alone, but never shorter than the background write, since
    the next save cannot start before the last one is on storage: max(sqrt(2 x stall x MTBF), write_s)."""
    return max(young_interval_s(stall_s, mtbf_s), positive_float("write_s", write_s, unit=" s"))
