"""LoRA on an fp32 base under FSDP2's MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32), as RL trainers
run their actors: no whole-model 16-bit copy (each unit is gathered in 16 bits as it runs), measured by the FSDP2
harness (validation/results_fsdp.json, *-lora-fp32base-* cases: -0.0% to +0.02%) and derived by hand here."""

from __future__ import annotations

import memlib


def test_the_fp32_base_is_sharded_and_gathered_in_16_bits_without_autocast_copies():
    m = memlib.get_model("llama-3-8b")
    e = memlib.estimate_training(m, finetune="lora", lora_rank=16, zero_stage="FULL_SHARD", dp=8,
                                 precision="bf16-mixed", base_dtype="fp32", seq_len=2048)
    parts = e.peak_moment.parts
    assert parts["autocast_copies"] == 0  # autocast made a 16-bit copy of every layer (15.0 GB) before
    # the fp32 base sharded over 8: 8,030,261,248 x 4 B / 8 = 4,015,130,624 B (plus the fp32 adapters' shard)
    assert 4_015_130_624 <= parts["parameters"] <= 4_015_130_624 * 1.01
    # at most the root unit (embedding + head: 2 x 128,256 x 4,096) and one layer gathered, in 2 bytes each
    root = 2 * 128_256 * 4_096 * 2
    layer = (4_096 * (4_096 + 2 * 1_024 + 4_096) + 3 * 4_096 * 14_336 + 2 * 4_096) * 2
    assert parts["gathered_parameters"] <= root + 2 * layer


def test_a_16_bit_base_keeps_the_autocast_layout():
    e = memlib.estimate_training("llama-3-8b", finetune="lora", zero_stage="FULL_SHARD", dp=8, precision="bf16-mixed")
    assert e.setup.base_dtype == "bf16"
