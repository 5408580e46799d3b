"""step_time, plan, min_gpus, to_deepspeed_config and the `memlib fit` command."""

from __future__ import annotations

import json

import math

import pytest

import memlib
from memlib.cli import main
from memlib.parallel.plan import max_micro_batch, max_seq_len, min_gpus, plan, to_deepspeed_config
from memlib.cost.timing import flops_per_token, step_time


# --- FLOPs and time ----------------------------------------------------------------------------
def test_flops_per_token_palm_formula():
    """PaLM (Chowdhery et al. 2022) App. B: 6N + 12*L*H*Q*T per token."""
    m = memlib.get_model("llama-7b")
    n, L, H, Q, T = 6_738_415_616, 32, 32, 128, 2048
    assert flops_per_token(m, T) == 6 * n + 12 * L * H * Q * T
    assert flops_per_token(m, T, recompute="full") == 8 * n + 16 * L * H * Q * T  # one more forward
    assert flops_per_token(m, T, finetune="lora") == 4 * n + 12 * L * H * Q * T  # no weight gradients


def test_compute_time_at_mfu():
    est = memlib.estimate_training("llama-7b", seq_len=2048, micro_batch=1, grad_accum=4, precision="bf16-mixed")
    t = step_time(est, "a100-80gb", mfu=0.5)
    flops = (6 * 6_738_415_616 + 12 * 32 * 32 * 128 * 2048) * 2048 * 4
    assert t.compute_s == pytest.approx(flops / (312e12 * 0.5))  # A100 dense bf16: 312 TFLOP/s
    assert t.tokens_per_s_per_gpu == pytest.approx(2048 * 4 / t.step_s)


def test_data_parallel_traffic_ring_and_zero3():
    kw = dict(seq_len=2048, precision="bf16-mixed", dp=8)
    psi = memlib.get_model("llama-7b").num_params
    ddp = step_time(memlib.estimate_training("llama-7b", **kw), "a100-80gb")
    z3 = step_time(memlib.estimate_training("llama-7b", zero_stage=3, **kw), "a100-80gb")
    assert ddp.dp_comm_bytes == int(2 * 7 / 8 * psi * 4)  # AMP all-reduces fp32 gradients
    # 16-bit: gather in forward, again in backward (less the 5e8 parameters DeepSpeed's max_reuse_distance
    # keeps), reduce-scatter: 3 x 7/8 x 2 psi without the reuse, the ZeRO paper's 1.5x (Sec. 7)
    assert z3.dp_comm_bytes == pytest.approx(7 / 8 * 2 * (3 * psi - 5 * 10**8), abs=2)


def test_offload_time_is_reported():
    est = memlib.estimate_training("llama-13b", zero_stage=2, offload="optimizer", recompute="full",
                                   precision="fp16-mixed")
    t = step_time(est, "v100-32gb")
    psi = memlib.get_model("llama-13b").num_params
    # DeepSpeed stage_1_and_2.py (copy_grads_in_partition @7dee2e0): grad_accum=1 sends the gradient partition
    # down once, upcast to fp32 (4 B), and the updated 16-bit parameters come up (2 B)
    assert t.offload_bytes == 4 * psi + 2 * psi
    acc = step_time(memlib.estimate_training("llama-13b", zero_stage=2, offload="optimizer", recompute="full",
                                             precision="fp16-mixed", grad_accum=8), "v100-32gb")
    # 8 micro-batches: 16-bit down after micro-batches 1..7 (7 x 2), up before adding on 2..8 (7 x 2), the fp32
    # sum down at the 8th (4), the parameters up (2)
    assert acc.offload_bytes == 7 * 2 * psi + 7 * 2 * psi + 4 * psi + 2 * psi
    assert t.offload_s == pytest.approx(6 * psi / 16e9)  # V100: PCIe 3.0 x16, 16 GB/s each way
    assert t.cpu_optimizer_s > 0


def test_step_time_bad_input():
    est = memlib.estimate_training("llama-7b", precision="bf16-mixed")
    with pytest.raises(ValueError, match="no bf16 tensor cores"):
        step_time(est, "v100-32gb")
    with pytest.raises(ValueError, match=r"mfu is a fraction"):
        step_time(est, "a100-80gb", mfu=40)


# --- plan ----------------------------------------------------------------------------------------
def test_65b_on_4_v100_full_training_needs_offload():
    """16 bytes/param even fully sharded: 16 * 65.29e9 / 4 = 261 GB per GPU > 32 GiB."""
    r = plan("llama-65b", "v100-32gb", 4, allow_offload=False)
    assert r.feasible == []
    assert all("GiB" in why or "invalid" in why for _, why in r.infeasible)
    with_offload = plan("llama-65b", "v100-32gb", 4)
    assert with_offload.feasible and all(p.settings["offload"] != "none" for p in with_offload.feasible)
    limited = plan("llama-65b", "v100-32gb", 4, host_bytes_per_node=512 * 2**30)
    assert limited.feasible == [] and any("host RAM" in why for _, why in limited.infeasible)


def test_plans_fit_and_are_ranked():
    r = plan("llama-7b", "a100-80gb", 8)
    assert r.feasible
    assert all(p.verdict.fits for p in r.feasible)
    speeds = [p.tokens_per_s_per_gpu for p in r.feasible]
    assert speeds == sorted(speeds, reverse=True)
    assert all(p.settings["dp"] * p.settings["tp"] * p.settings["pp"] == 8 for p in r.feasible)


def test_min_gpus_respects_the_model_state_floor():
    """Without offload ZeRO-3 still needs 16 bytes/param across the GPUs: n >= 16*psi/capacity."""
    r = min_gpus("llama-65b", "a100-80gb")
    psi = memlib.get_model("llama-65b").num_params
    assert r is not None and r.feasible
    assert r.count >= 16 * psi / (80 * 2**30)
    smaller = plan("llama-65b", "a100-80gb", 8, allow_offload=False)
    assert not smaller.feasible


def test_min_gpus_65b_full_finetuning_needs_15_a100s_not_16():
    """The fewest A100 80GB for full fine-tuning of LLaMA-65B without offload is 15, not a multiple of 8.

    fits() allows a peak of (79.15 GiB, what torch reports for an A100 80GB, - 0.5 GiB CUDA context)
    / 1.05 (5% allocator headroom) = 74.9 GiB.
    14 GPUs, the leanest layout (dp=14, ZeRO-3, full recompute): model states 16 B x 65.29e9 / 14 =
      74.6e9 B = 69.5 GiB, two gathered decoder layers in 16 bits (the one in use and the prefetched
      next: 2 x 2 B x (4 x 8192^2 + 3 x 8192 x 22016 + 2 x 8192) = 3.0 GiB) and the checkpointed layer
      inputs (80 x 2048 x 8192 x 2 B = 2.5 GiB) already make 75.0 GiB > 74.9 GiB, before any temporary.
    15 GPUs: the states shrink to 16 x 65.29e9 / 15 = 64.9 GiB, 4.6 GiB less: room for the same 5.5 GiB
      of gathered layers and checkpoints plus a few GiB of backward temporaries.
    """
    psi, layer = memlib.get_model("llama-65b").num_params, 4 * 8192**2 + 3 * 8192 * 22016 + 2 * 8192
    allowed = (79.15 - 0.5) / 1.05 * 2**30
    gathered, checkpoints = 2 * 2 * layer, 80 * 2048 * 8192 * 2
    assert 16 * psi / 14 + gathered + checkpoints > allowed
    assert 16 * psi / 15 + gathered + checkpoints + 2 * 2**30 < allowed
    r = min_gpus("llama-65b", "a100-80gb")
    assert r.count == 15 and r.count % 8
    assert plan("llama-65b", "a100-80gb", 14, allow_offload=False).feasible == []
    assert plan("llama-65b", "a100-80gb", 15, allow_offload=False).feasible
    # counts below ceil(16 psi / allowed) = 13 cannot hold the states: the search starts there
    floor = math.ceil(16 * psi / allowed)
    assert floor == 13 and r.searched == list(range(floor, 16)) and "14 has no feasible layout" in r.method
    assert r.to_dict()["searched"] == r.searched


def test_min_gpus_beyond_the_exhaustive_window_is_still_an_exact_count():
    """Past two nodes min_gpus bisects whole nodes, then plans every count of the last node: for
    LLaMA-65B on L40S it must equal a brute-force scan (every count planned), whatever that count is."""
    r = min_gpus("llama-65b", "l40s")
    brute = next(c for c in range(1, 65) if plan("llama-65b", "l40s", c, allow_offload=False).feasible)
    assert r.count == brute and brute > 16 and brute % 8  # 28: not a node multiple
    assert "whole nodes of 8 bisected" in r.method
    # the work is bounded: 16 counts, about 2 log2(4096 / 8) node counts, at most 7 counts in the last node
    assert len(r.searched) <= 16 + 2 * 9 + 7 and len(r.searched) < brute
    # a window of 1 exercises the node search from the start and still finds the same count
    assert min_gpus("llama-65b", "l40s", exhaustive_up_to=1).count == brute
    assert min_gpus("llama-65b", "l40s", max_count=brute - 1) is None


def test_min_gpus_qlora_beyond_one_gpu_says_why():
    """A QLoRA layout that fits one GPU is the answer; when one does not fit and plan() cannot lay QLoRA
    over several GPUs, the error says so rather than a silent None."""
    assert min_gpus("llama-7b", "a100-80gb", task="qlora").count == 1
    try:
        r = min_gpus("llama-65b", "v100-32gb", task="qlora", max_count=16)
    except ValueError as e:
        assert "QLoRA" in str(e)
    else:  # plan() lays QLoRA over several GPUs: then the count is a real plan
        assert r is None or (r.count > 1 and r.feasible)


def test_largest_micro_batch_and_sequence():
    r = plan("llama-7b", "a100-80gb", 8, allow_offload=False)
    best = r.best
    b = max_micro_batch(best, "a100-80gb")
    s = best.estimate.setup.model
    assert b >= 1
    assert memlib.fits(memlib.estimate_training(s, **{**best.settings, "micro_batch": b}), "a100-80gb").fits
    assert not memlib.fits(memlib.estimate_training(s, **{**best.settings, "micro_batch": b + 1}), "a100-80gb").fits
    n = max_seq_len(best, "a100-80gb", limit=1 << 17)
    assert memlib.fits(memlib.estimate_training(s, **{**best.settings, "seq_len": n}), "a100-80gb").fits


def test_deepspeed_config_for_a_plan():
    r = plan("llama-13b", "v100-32gb", 1)  # only ZeRO-Offload can fit 13B on one V100
    cfg = to_deepspeed_config(r.best)
    zero = cfg["zero_optimization"]
    assert zero["stage"] == r.best.settings["zero_stage"] >= 2
    assert zero["offload_optimizer"]["device"] == "cpu"
    assert cfg["fp16"]["enabled"] is True and "bf16" not in cfg  # V100 has no bf16
    assert cfg["train_batch_size"] == cfg["train_micro_batch_size_per_gpu"] * cfg["gradient_accumulation_steps"]
    json.dumps(cfg)


# --- CLI -------------------------------------------------------------------------------------------
def test_cli_fit(capsys):
    assert main(["fit", "llama-65b", "--gpu", "v100-32gb", "--count", "4", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "layouts fit" in out and "do not fit" in out and "offload optimizer+params" in out


def test_cli_fit_json(capsys):
    assert main(["fit", "llama-7b", "--gpu", "a100-80gb", "--count", "8", "--json", "--deepspeed"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["feasible"] and "deepspeed_config" in data


def test_cli_fit_bad_input(capsys):
    assert main(["fit", "llama-7b", "--gpu", "a100-81gb", "--count", "8"]) == 2
    err = capsys.readouterr().err
    assert "unknown gpu" in err.lower() and err.count("\n") == 1


def test_deepspeed_config_keeps_the_nvme_device():
    r = plan("llama-13b", "v100-32gb", 1, offload_device="nvme")
    offloaded = [p for p in r.feasible if p.settings["offload"] != "none"]
    assert offloaded
    assert to_deepspeed_config(offloaded[0])["zero_optimization"]["offload_optimizer"]["device"] == "nvme"


def test_plan_limits_keep_every_option():
    """max_seq_len re-estimates with the plan's LoRA options, not the defaults."""
    r = plan("llama-7b", "rtx-4090", 1, task="lora", lora_rank=16, lora_targets="all-linear", recomputes=("full",),
             precisions=("bf16",))
    best = r.best
    n = max_seq_len(best, "rtx-4090", limit=1 << 16)
    model = best.estimate.setup.model
    assert memlib.fits(memlib.estimate_training(model, **{**best.settings, "seq_len": n}), "rtx-4090").fits
    assert not memlib.fits(memlib.estimate_training(model, **{**best.settings, "seq_len": n + 1}), "rtx-4090").fits
    assert best.settings["lora_targets"] == "all-linear"
