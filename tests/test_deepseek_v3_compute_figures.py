"""DeepSeek-V3 figures of chapter 05 and exercises 05.7 / 05.10, each derived by hand from the HF config, the
DeepSeek-V3 report and the datasheets (not from memlib's output):

  total 671,026,404,352 parameters; routed experts 58 MoE layers x 256 x 3 x 7168 x 2048; a token uses 8 of 256,
  so active = total - 58 x 248 x 3 x 7168 x 2048 = 37,552,282,624 (with the input embedding, 129,280 x 7168).
  H100 / H200 SXM: 989.4 TFLOP/s dense bf16; HBM 3.35 / 4.8 TB/s; an H200 as torch reports it 143,156 MiB.
"""

from __future__ import annotations

import math

import pytest

from memlib import cost, get_model
from memlib.cost.conventions import ridge_flop_per_byte
from memlib.hardware.fit import usable_bytes
from memlib.hardware.gpus import get_gpu
from memlib.parallel.zero import zero_model_state_bytes

N = 671_026_404_352
ACTIVE = N - 58 * 248 * 3 * 7168 * 2048
EMBED = 129_280 * 7168
PEAK = 989.4e12


def test_counts():
    m = get_model("deepseek-v3")
    assert m.num_params == N and m.num_active_params == ACTIVE == 37_552_282_624
    # "37B activated": the count without the input embedding (a lookup does no matmul)
    assert m.active_params_without_embedding == ACTIVE - EMBED == 36_625_603_584
    assert round(m.active_params_without_embedding / 1e9) == 37


def test_finetune_gpu_hours_at_40_percent_mfu():
    # 05.10: 1B tokens x 6 x 37e9 = 2.22e20 FLOPs; 0.4 x 989.4e12 = 3.958e14 FLOP/s per GPU;
    # 2.22e20 / 3.958e14 = 5.61e5 GPU-s = 155.8 GPU-hours (the review's 156), not 1,500
    assert cost.gpu_hours(cost.training_flops(37e9, 1e9), "h200", mfu=0.4) == \
        pytest.approx(6 * 37e9 * 1e9 / (0.4 * PEAK) / 3600, rel=1e-12)
    assert 155 < cost.gpu_hours(cost.training_flops(37e9, 1e9), "h200", mfu=0.4) < 157
    # with memlib's N (the active count with the embedding): 6 x 37,552,282,624 x 1e9 / 3.958e14 / 3600 = 158.1
    m = get_model("deepseek-v3")
    assert cost.gpu_hours(cost.training_flops(m, 1e9), "h200", mfu=0.4) == \
        pytest.approx(6 * ACTIVE * 1e9 / (0.4 * PEAK) / 3600, rel=1e-12)
    # counting attention at 4k-token sequences, as MFU does (PaLM App. B: 12 x L x H x Q x T per token with
    # MLA's query/key head of 192): 12 x 61 x 128 x 192 x 4096 = 73.7 GFLOP more per token -> 209.9 GPU-hours
    attn = 12 * 61 * 128 * 192 * 4096
    assert cost.gpu_hours(cost.training_flops(m, 1e9, seq_len=4096), "h200", mfu=0.4) == \
        pytest.approx((6 * ACTIVE + attn) * 1e9 / (0.4 * PEAK) / 3600, rel=1e-9)


def test_deepseek_optimizer_layout_is_4_4_2_2():
    # report, Sec. 3.3.3: master weights and gradients in fp32, AdamW's m and v in bf16 -> 12 bytes per parameter
    assert zero_model_state_bytes(N, 0, 1, k=4, working_bytes=4) == (4 + 4 + 2 + 2) * N
    # 05.7: whole H200s at torch's 143,156 MiB: 12 x 671.03e9 / 150.11e9 = 53.6 -> 54
    assert usable_bytes(get_gpu("h200")) == 143_156 * 2**20
    assert math.ceil(12 * N / (143_156 * 2**20)) == 54


def test_h200_ridge_is_below_absorbed_mla_intensity():
    # step 3: ridge = peak / bandwidth: H200 989.4e12 / 4.8e12 = 206.1, H100 989.4e12 / 3.35e12 = 295.3;
    # absorbed MLA at 8k: 2 x 61 x 128 x (2 x 512 + 64) x 8192 FLOP / (8192 x 70,272 B) = 242 FLOP/B
    assert ridge_flop_per_byte("h200") == pytest.approx(PEAK / 4.8e12, rel=1e-12)
    assert ridge_flop_per_byte("h100-80gb") == pytest.approx(PEAK / 3.35e12, rel=1e-12)
    intensity = 2 * 61 * 128 * (2 * 512 + 64) * 8192 / (8192 * (512 + 64) * 61 * 2)
    assert ridge_flop_per_byte("h200") < intensity < ridge_flop_per_byte("h100-80gb")
