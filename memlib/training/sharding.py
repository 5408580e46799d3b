"""How data parallelism shards one GPU's model states: the pieces of ZeRO and Megatron-LM's distributed
optimizer that the training estimate's terms (memlib.training.terms) are built from. memlib.parallel.zero and
memlib.parallel.megatron build their per-GPU totals and DeepSpeed's own estimators on these.

ZeRO: Rajbhandari et al. 2020, Sec. 5.1-5.3. Megatron-LM: docs/source/api-guide/dist_optimizer.md (commit
50b073cc), the table of bytes per parameter.
"""

from __future__ import annotations

from memlib._checks import choice, positive_int, plain_args


@plain_args
def partitioned(nbytes: int, state: str, stage: int, dp: int) -> int:
    """Bytes of one kind of model state ('optimizer', 'gradients', 'parameters') on one GPU
    under ZeRO `stage` over `dp` GPUs: stage 1 partitions optimizer states, stage 2 also
    gradients, stage 3 also parameters (Rajbhandari et al. 2020, Sec. 5.1-5.3)."""
    nbytes = positive_int("nbytes", nbytes, allow_zero=True)
    choice("state", state, ("optimizer", "gradients", "parameters"))
    stage = _stage(stage)
    dp = positive_int("dp", dp)
    first = {"optimizer": 1, "gradients": 2, "parameters": 3}[state]
    return nbytes // dp if stage >= first else nbytes


def _stage(stage) -> int:
    if isinstance(stage, bool) or stage not in (0, 1, 2, 3):
        raise ValueError(f"stage must be 0, 1, 2 or 3, got {stage!r}")
    return int(stage)


# (param dtype, main-grad dtype) -> (bytes kept whole on every rank, bytes sharded over dp by the distributed
# optimizer). Without the distributed optimizer everything is whole: the sum.
#   fp16/bf16 params + fp16/bf16 grads: 2 + 2 whole; fp32 main params 4 + fp32 main grads 4 + Adam 8 = 16 sharded
#   fp16/bf16 params + fp32 grads:      2 + 4 whole; fp32 main params 4 + Adam 8 = 12 sharded
#   fp32 params + fp32 grads:           4 + 4 whole; Adam 8 sharded
MEGATRON_LAYOUTS = {
    "fp16-grads": (4, 16),   # --fp16 / --bf16 with --accumulate-allreduce-grads-in-fp32 off
    "fp32-grads": (6, 12),   # --bf16 (grads accumulated and all-reduced in fp32: Megatron's bf16 default)
    "fp32": (8, 8),          # fp32 training
}
