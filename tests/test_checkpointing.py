"""memlib.cost.checkpointing: checkpoint size, write time, job MTBF, Young's interval and the waste it
minimises. Every expected value is derived by hand below."""

import math

import pytest

from memlib.cost import (async_interval_s, checkpoint_size_bytes, checkpoint_waste, checkpoint_write_s, job_mtbf_s,
                         young_interval_s)

# Llama-3.1-70B, tensor by tensor: 80 layers of q, o (8192 x 8192), k, v (8192 x 1024), gate, up, down
# (8192 x 28672) and two norms; untied embedding and head (128,256 x 8192); the final norm
N70 = 80 * (2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672 + 2 * 8192) + 2 * 128256 * 8192 + 8192
assert N70 == 70_553_706_496


def test_checkpoint_holds_weights_and_optimizer_states_not_gradients():
    assert checkpoint_size_bytes("llama-3.1-70b") == 14 * N70  # 2 (bf16 weights) + 12 (fp32 master, m, v)
    assert checkpoint_size_bytes("llama-3.1-70b", "megatron") == 14 * N70
    assert checkpoint_size_bytes("llama-3.1-70b", "fsdp2") == 12 * N70  # fp32 params are the master
    assert checkpoint_size_bytes("llama-3.1-70b", "weights-bf16") == 2 * N70


def test_sharded_write_is_limited_by_the_slower_of_storage_and_the_ranks():
    # 1 TB over 64 ranks at 1 GB/s each (64 GB/s) into a 100 GB/s file system: the ranks limit, 15.625 s
    assert checkpoint_write_s(1e12, 100e9, ranks=64, per_rank_bytes_per_s=1e9) == pytest.approx(1e12 / 64e9)
    # 256 ranks (256 GB/s) into the same storage: the storage limits, 10 s
    assert checkpoint_write_s(1e12, 100e9, ranks=256, per_rank_bytes_per_s=1e9) == pytest.approx(10.0)
    assert checkpoint_write_s(1e12, 2e9) == pytest.approx(500.0)  # one writer, 2 GB/s


def test_llama3_interruptions_give_a_three_hour_mtbf():
    # 54 days x 86,400 s / 419 unexpected interruptions = 11,135 s = 3.09 h (Llama 3 paper, Sec. 3.3.4)
    assert job_mtbf_s(419, 54) == pytest.approx(54 * 86400 / 419)
    assert job_mtbf_s(419, 54) / 3600 == pytest.approx(3.093, abs=1e-3)
    # the same failure rate per GPU on 1,024 GPUs instead of 16,384: 16x longer between failures
    assert job_mtbf_s(419, 54, gpus=16384, at_gpus=1024) == pytest.approx(16 * 54 * 86400 / 419)


def test_young_interval_balances_the_two_losses():
    # write 60 s, MTBF 3 h: sqrt(2 x 60 x 10,800) = sqrt(1,296,000) = 1,138.4 s
    tau = young_interval_s(60, 10800)
    assert tau == pytest.approx(math.sqrt(1_296_000))
    # at the optimum the stall share (60 / tau) equals the lost-work share (tau / 2 / 10,800)
    assert 60 / tau == pytest.approx(tau / 2 / 10800)
    waste = checkpoint_waste(tau, 60, 10800)
    assert waste == pytest.approx(2 * 60 / tau)  # 10.5%
    # any other interval loses more
    assert checkpoint_waste(tau / 2, 60, 10800) > waste and checkpoint_waste(tau * 2, 60, 10800) > waste
    # a restart of 10 minutes per failure adds 600 / 10,800 = 5.6 points
    assert checkpoint_waste(tau, 60, 10800, restart_s=600) - waste == pytest.approx(600 / 10800)


def test_async_saves_are_bounded_by_the_background_write():
    # stall 5 ms, MTBF 3 h: Young alone says sqrt(2 x 0.005 x 10,800) = 10.4 s, but a 57 s background write
    # must finish first: every 57 s, losing 0.005 / 57 + 28.5 / 10,800 = 0.27%
    assert async_interval_s(0.005, 57, 10800) == 57
    assert checkpoint_waste(57, 0.005, 10800) == pytest.approx(0.005 / 57 + 28.5 / 10800)
    # a fast write: the stall's own Young interval governs
    assert async_interval_s(0.5, 2, 10800) == pytest.approx(math.sqrt(2 * 0.5 * 10800))


@pytest.mark.parametrize("call", [
    lambda: checkpoint_size_bytes("llama-3.1-70b", "zip"),
    lambda: checkpoint_write_s(0, 1e9),
    lambda: checkpoint_write_s(1e12, -5),
    lambda: checkpoint_write_s(1e12, 1e9, ranks=0),
    lambda: job_mtbf_s(0, 54),
    lambda: job_mtbf_s(419, 54, gpus=16384),
    lambda: young_interval_s(float("nan"), 10800),
    lambda: checkpoint_waste(100, 60, 10800, restart_s=-1),
    lambda: checkpoint_waste(100, 60, 10800, restart_s="10 min"),
    lambda: checkpoint_waste(0, 60, 10800),
])
def test_bad_input_is_a_clear_error(call):
    with pytest.raises(ValueError):
        call()
