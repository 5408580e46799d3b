"""Megatron-LM's bytes per parameter against the table of its distributed-optimizer docs
(NVIDIA/Megatron-LM docs/source/api-guide/dist_optimizer.md), typed from the docs, not from memlib."""

from fractions import Fraction

import pytest

from memlib.parallel.megatron import megatron_bytes_per_param, megatron_model_state_bytes

# the docs' rows (param + grad dtype): (non-distributed, distributed as (a, b) meaning a + b/d)
TABLE = {"fp16-grads": (20, (4, 16)), "fp32-grads": (18, (6, 12)), "fp32": (16, (8, 8))}


@pytest.mark.parametrize("grads", sorted(TABLE))
def test_megatron_table(grads):
    plain, (a, b) = TABLE[grads]
    assert megatron_bytes_per_param(grads) == plain
    for d in (1, 2, 8, 64):
        assert megatron_bytes_per_param(grads, distributed_optimizer=True, dp=d) == a + Fraction(b, d)


def test_v100_case_65b():
    # V100 has no bf16: fp16 params + fp16 grads, 20 B/param; 65,285,660,672 x 20 by hand = 1,305,713,213,440
    assert megatron_model_state_bytes(65_285_660_672, "fp16-grads") == 1_305_713_213_440


@pytest.mark.parametrize("args", [("bf16",), ("fp16-grads", True, 0), ("int8",), ("fp32", "yes")])
def test_bad_input(args):
    with pytest.raises(ValueError):
        megatron_bytes_per_param(*args)
