"""MFU vs HFU in memlib.step_time, training_run and plan (PaLM's definitions, Chowdhery et al. 2022, App. B).

Model FLOPs utilisation counts the model's FLOPs (6N + 12·L·H·Q·T, 4N + 12·L·H·Q·T for a frozen base),
hardware FLOPs utilisation every FLOP the GPU runs, the recomputed forward included. Every expected value
below is derived by hand from the model's config and the GPU's datasheet peak, written out in the test.
"""

import subprocess
import sys

import pytest

import memlib
from memlib import cost
from memlib.cost.timing import DEFAULT_HFU, DEFAULT_MFU, model_flops_per_token, step_time, utilisation
from memlib.parallel.plan import plan

# LLaMA-65B (Touvron et al. 2023, Table 2; config.json of huggyllama/llama-65b): h 8192, 80 layers,
# 64 heads of 128, MLP 22016 (gated: 3 matrices), vocabulary 32000, untied head.
H, L, HEADS, HD, I, V = 8192, 80, 64, 128, 22016, 32000
PER_LAYER = 4 * H * H + 3 * H * I + 2 * H          # 268,435,456 + 541,065,216 + 16,384 = 809,517,056
N_65B = L * PER_LAYER + 2 * V * H + H               # 64,761,364,480 + 524,288,000 + 8,192 = 65,285,660,672
T = 2048
LHQT = L * HEADS * HD * T                           # 80 x 64 x 128 x 2048 = 1,342,177,280
QLORA_MODEL = 4 * N_65B + 12 * LHQT                 # 261.14e9 + 16.11e9 = 277.25e9 FLOP/token
QLORA_HARDWARE = 6 * N_65B + 16 * LHQT              # + the recomputed forward 2N + 4LHQT: 413.19e9
V100_FP16 = 125e12                                  # V100 SXM2 dense fp16 tensor peak (NVIDIA V100 datasheet)
QLORA = dict(lora_rank=64, lora_targets="all-linear", lora_dropout=0.05, optimizer_impl="fused")


def _qlora_device_map():
    """Notebook 01's QLoRA job: LLaMA-65B split layer by layer over 4 V100s (fp16, full recompute)."""
    return memlib.estimate_training("llama-65b", seq_len=T, micro_batch=1, grad_accum=16, precision="fp16-mixed",
                                    finetune="qlora", recompute="full", pp=4, tp=1, **QLORA)


def test_the_hand_counts_are_memlibs():
    assert memlib.get_model("llama-65b").num_params == N_65B == 65_285_660_672
    assert model_flops_per_token("llama-65b", T, "qlora") == QLORA_MODEL == pytest.approx(277.25e9, rel=1e-4)
    assert memlib.flops_per_token("llama-65b", T, "full", "qlora") == QLORA_HARDWARE
    assert memlib.get_gpu("v100-32gb").fp16_tflops * 1e12 == V100_FP16


def test_qlora_device_map_at_40_percent_mfu_runs_180_tokens_per_s():
    # device_map: one card works at a time (bubble 3/4), so the job gets one card's rate:
    # 0.4 x 125e12 / 277.25e9 = 180.3 tokens/s for the whole job
    t = step_time(_qlora_device_map(), "v100-32gb", mfu=0.4)
    assert t.bubble_fraction == pytest.approx(3 / 4)
    assert 4 * t.tokens_per_s_per_gpu == pytest.approx(0.4 * V100_FP16 / QLORA_MODEL, rel=0.01)
    assert 0.4 * V100_FP16 / QLORA_MODEL == pytest.approx(180.3, abs=0.1)
    # the kernels then run at 0.4 x 413.19 / 277.25 = 59.6% of peak (HFU)
    assert t.hfu == pytest.approx(0.4 * QLORA_HARDWARE / QLORA_MODEL) == pytest.approx(0.596, abs=1e-3)
    assert t.mfu == pytest.approx(0.4)


def test_qlora_device_map_at_40_percent_hfu_is_27_percent_mfu():
    # 0.4 x 125e12 / 413.19e9 = 121.0 tokens/s; MFU = 0.4 x 277.25 / 413.19 = 26.8%
    t = step_time(_qlora_device_map(), "v100-32gb", hfu=0.4)
    assert 4 * t.tokens_per_s_per_gpu == pytest.approx(0.4 * V100_FP16 / QLORA_HARDWARE, rel=0.01)
    assert 0.4 * V100_FP16 / QLORA_HARDWARE == pytest.approx(121.0, abs=0.1)
    assert t.mfu == pytest.approx(0.268, abs=1e-3)
    # end to end, per GPU: three of four cards idle, so a quarter of that
    assert t.achieved_mfu == pytest.approx(0.268 / 4, abs=1e-3)
    assert t.flops_per_token == QLORA_HARDWARE and t.model_flops_per_token == QLORA_MODEL


def test_default_is_40_percent_hfu():
    est = _qlora_device_map()
    assert DEFAULT_HFU == DEFAULT_MFU == 0.4
    assert step_time(est, "v100-32gb").step_s == step_time(est, "v100-32gb", hfu=0.4).step_s


def test_full_recompute_40_percent_hfu_is_30_percent_mfu():
    # (6N + 12A) / (8N + 16A) = 3/4 for any dense full fine-tune with full recompute: 0.4 x 3/4 = 0.30
    est = memlib.estimate_training("llama-2-7b", seq_len=4096, recompute="full")
    t = step_time(est, "h100-80gb", hfu=0.4)
    assert t.mfu == pytest.approx(0.30)
    # and 30% MFU asked for directly is the same run
    assert step_time(est, "h100-80gb", mfu=0.3).step_s == pytest.approx(t.step_s)


def test_without_recompute_mfu_is_hfu():
    est = memlib.estimate_training("llama-2-7b", seq_len=4096, finetune="lora", recompute="none")
    a, b = step_time(est, "h100-80gb", mfu=0.4), step_time(est, "h100-80gb", hfu=0.4)
    assert a.step_s == b.step_s and a.mfu == a.hfu == 0.4
    # one GPU, nothing to communicate: the whole step is compute, so the end-to-end MFU is the compute's
    assert a.achieved_mfu == pytest.approx(0.4)


def test_positional_mfu_still_works():
    est = memlib.estimate_training("llama-2-7b", seq_len=4096, recompute="full")
    assert step_time(est, "h100-80gb", 0.3).mfu == pytest.approx(0.3)


def test_both_given_is_an_error():
    with pytest.raises(ValueError, match="not both"):
        step_time(_qlora_device_map(), "v100-32gb", mfu=0.4, hfu=0.4)
    with pytest.raises(ValueError, match="not both"):
        cost.training_run("llama-2-7b", 1e9, "h100-80gb", 8, mfu=0.4, hfu=0.4)


def test_mfu_needing_more_than_the_peak_is_an_error():
    # QLoRA with recompute runs 413.19 / 277.25 = 1.49x the model FLOPs: 70% MFU needs 104% HFU
    with pytest.raises(ValueError, match="not reachable"):
        step_time(_qlora_device_map(), "v100-32gb", mfu=0.7)
    # full recompute, dense: 4/3 x; 0.75 MFU needs exactly 100% HFU (allowed), 0.76 does not
    est = memlib.estimate_training("llama-2-7b", seq_len=4096, recompute="full")
    assert step_time(est, "h100-80gb", mfu=0.75).hfu == pytest.approx(1.0)
    with pytest.raises(ValueError, match="not reachable"):
        step_time(est, "h100-80gb", mfu=0.76)
    with pytest.raises(ValueError, match="hfu"):
        step_time(est, "h100-80gb", hfu=1.5)


def test_utilisation_helper():
    assert utilisation(6.0, 8.0, mfu=0.3) == pytest.approx((0.3, 0.4))
    assert utilisation(6.0, 8.0, hfu=0.4) == pytest.approx((0.3, 0.4))
    assert utilisation(6.0, 8.0) == pytest.approx((0.3, 0.4))


def test_training_run_70b_finetune_mfu_vs_hfu():
    # Llama-2-70B full fine-tune, 100M tokens at 4,096, full recompute, H100 989.4 TFLOP/s dense bf16.
    # Model FLOPs 6N + 12LHQT per token; hardware 8N + 16LHQT = 4/3 of it. At 40% HFU the GPU-hours are
    # 4/3 of those at 40% MFU, and the run's MFU is 30%.
    m = memlib.get_model("llama-2-70b")
    n, a = m.num_params, 12 * m.num_layers * m.num_heads * m.head_dim * 4096
    model_flops = (6 * n + a) * 1e8
    at_mfu = cost.training_run(m, 1e8, "h100-80gb", 16, mfu=0.4, seq_len=4096, recompute="full")
    at_hfu = cost.training_run(m, 1e8, "h100-80gb", 16, hfu=0.4, seq_len=4096, recompute="full")
    assert at_mfu.model_flops == pytest.approx(model_flops)
    assert at_mfu.gpu_hours == pytest.approx(model_flops / (0.4 * 989.4e12) / 3600)
    assert at_hfu.gpu_hours == pytest.approx(at_mfu.gpu_hours * 4 / 3)
    assert at_hfu.mfu == pytest.approx(0.30) and at_hfu.hfu == pytest.approx(0.40)
    assert at_hfu.flops == pytest.approx(model_flops * 4 / 3)


def test_training_run_from_step_reports_both():
    # one GPU, no communication: achieved MFU = compute MFU = 0.4 x 3/4
    est = memlib.estimate_training("llama-2-7b", seq_len=4096, recompute="full")
    run = cost.training_run_from_step(step_time(est, "h100-80gb", hfu=0.4), 1e9, "h100-80gb")
    assert run.hfu == pytest.approx(0.4) and run.mfu == pytest.approx(0.3)


def test_plan_at_an_unreachable_mfu_lists_the_layout_as_infeasible():
    # 0.8 MFU: every full-recompute layout would need 0.8 x 4/3 = 107% HFU
    r = plan("llama-2-7b", "h100-80gb", 8, mfu=0.8, recomputes=("none", "full"), allow_offload=False)
    assert r.feasible and all(p.settings["recompute"] == "none" for p in r.feasible)
    assert any("cannot reach 80% MFU" in why for _, why in r.infeasible)
    with pytest.raises(ValueError, match="not both"):
        plan("llama-2-7b", "h100-80gb", 8, mfu=0.4, hfu=0.4)


def test_cli_mfu_and_hfu_flags():
    base = [sys.executable, "-m", "memlib", "fit", "llama-2-7b", "--gpu", "h100-80gb", "--count", "8", "--top", "1"]
    out = subprocess.run(base + ["--hfu", "0.5"], capture_output=True, text=True)
    assert out.returncode == 0 and "50% HFU" in out.stdout
    out = subprocess.run(base + ["--mfu", "0.3"], capture_output=True, text=True)
    assert out.returncode == 0 and "30% MFU" in out.stdout
    out = subprocess.run(base + ["--mfu", "0.3", "--hfu", "0.4"], capture_output=True, text=True)
    assert out.returncode != 0 and "not allowed with" in out.stderr


def test_mfu_from_throughput_counts_a_frozen_base_as_4n():
    # Llama-2-7B LoRA at 4,096: model FLOPs 4N + 12LHQT; 1,000 tokens/s on an H100 (989.4 TFLOP/s dense bf16)
    m = memlib.get_model("llama-2-7b")
    a = 12 * m.num_layers * m.num_heads * m.head_dim * 4096
    assert cost.mfu_from_throughput(m, 4096, 1000, "h100-80gb", finetune="lora") == \
        pytest.approx((4 * m.num_params + a) * 1000 / 989.4e12)
    assert cost.mfu_from_throughput(m, 4096, 1000, "h100-80gb") == \
        pytest.approx((6 * m.num_params + a) * 1000 / 989.4e12)
