"""Megatron-LM's bytes per parameter against the table of its distributed-optimizer docs
(NVIDIA/Megatron-LM docs/source/api-guide/dist_optimizer.md), typed from the docs, not from memlib."""

from fractions import Fraction

import pytest

from memlib.training.megatron import megatron_bytes_per_param, megatron_model_state_bytes

# (param, grad): (non-distributed, distributed as (a, b) meaning a + b/d), from the docs' table
TABLE = {("fp16", "fp16"): (20, (4, 16)), ("bf16", "fp32"): (18, (6, 12)), ("fp32", "fp32"): (16, (8, 8))}


@pytest.mark.parametrize("dtypes", sorted(TABLE))
def test_megatron_table(dtypes):
    plain, (a, b) = TABLE[dtypes]
    assert megatron_bytes_per_param(*dtypes) == plain
    for d in (1, 2, 8, 64):
        assert megatron_bytes_per_param(*dtypes, dp=d, distributed_optimizer=True) == a + Fraction(b, d)


def test_v100_case_65b():
    # V100 has no bf16: fp16 params + fp16 grads, 20 B/param; 65,285,660,672 x 20 by hand = 1,305,713,213,440
    assert megatron_model_state_bytes(65_285_660_672, "fp16", "fp16") == 1_305_713_213_440


@pytest.mark.parametrize("args", [("bf16", "bf16"), ("fp16", "fp32", 0), ("int8", "fp32")])
def test_bad_input(args):
    with pytest.raises(ValueError):
        megatron_bytes_per_param(*args)
