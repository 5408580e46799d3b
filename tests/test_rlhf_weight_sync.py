"""memlib.cost.weight_sync: the bytes and time of one trainer -> rollout-engine weight sync, derived by hand.

Llama-3-70B's parameters from its config (hidden 8192, 80 layers, MLP 28672, vocabulary 128256, 8 KV heads of 128,
untied head): per layer q and o 2 x 8192^2 = 134,217,728, k and v 2 x 8192 x 1024 = 16,777,216, MLP
3 x 8192 x 28672 = 704,643,072, two norms 16,384: 855,654,400; x 80 = 68,452,352,000; embedding and head
2 x 128256 x 8192 = 2,101,346,304; final norm 8192: 70,553,706,496 parameters, W = 2 bytes each (bf16)."""

import pytest

from memlib.cost.weight_sync import weight_sync

N70 = 68_452_352_000 + 2_101_346_304 + 8192
W70 = 2 * N70
IB_NDR = 400e9 / 8  # 400 Gb/s per port, one direction
NVLINK4 = 900e9 / 2  # H100 SXM: 900 GB/s bidirectional, 450 GB/s each way


def test_parameter_count_is_the_hand_count():
    assert N70 == 70_553_706_496
    assert weight_sync("llama-3-70b", engines=1, link="IB NDR").weight_bytes == W70


def test_nccl_broadcast_sends_the_whole_tensor_to_every_engine_gpu():
    # OpenRLHF: rank 0 broadcasts each full parameter to 1 + 4 x 8 ranks; every vLLM worker receives all of it
    s = weight_sync("llama-3-70b", "nccl-broadcast", engines=4, rollout_tp=8, link="IB NDR")
    assert s.bytes_per_gpu == W70
    assert s.bytes_per_engine == 8 * W70
    assert s.kept_per_gpu == -(-W70 // 8)
    # a pipelined broadcast: each link carries W once: 141.1e9 / 50e9 = 2.82 s
    assert s.seconds == pytest.approx(W70 / IB_NDR)
    assert 2.8 < s.seconds < 2.85


def test_resharded_sends_each_engine_gpu_its_slice():
    s = weight_sync("llama-3-70b", "resharded", engines=4, rollout_tp=8, link="IB NDR")
    assert s.bytes_per_gpu == -(-W70 // 8)  # 17.6 GB
    assert s.bytes_per_engine == W70
    assert s.seconds == pytest.approx(W70 / 8 / IB_NDR)  # 0.353 s: 8x less than the broadcast


def test_gather_ipc_is_an_all_gather_on_nvlink():
    # colocated FSDP over 8 H100s: each GPU receives 7/8 of W, (7/8) x 141.1e9 / 450e9 = 0.274 s
    s = weight_sync("llama-3-70b", "gather-ipc", engines=1, rollout_tp=8, link="h100-80gb")
    assert s.bytes_per_gpu == 7 * W70 // 8
    assert s.seconds == pytest.approx(7 / 8 * W70 / NVLINK4)


def test_3d_hybrid_matches_hybridflow_table_2():
    # HybridFlow Table 2: (t p - tg pg) / (tg pg t p) x M per GPU. Train tp 8, generation tp 4: 4/32 = 1/8 W,
    # an all-gather of W/4 over the micro-DP group of 2: (1/2)(W/4) / beta
    s = weight_sync("llama-3-70b", "3d-hybrid", engines=2, rollout_tp=4, train_tp=8, link="h100-80gb")
    assert s.bytes_per_gpu == W70 // 8
    assert s.seconds == pytest.approx(W70 / 8 / NVLINK4)
    # train tp 8 x pp 2 -> generation tp 2: (16 - 2) / (2 x 16) = 7/16 W per GPU
    s2 = weight_sync("llama-3-70b", "3d-hybrid", engines=8, rollout_tp=2, train_tp=8, train_pp=2, link="h100-80gb")
    assert s2.bytes_per_gpu == 14 * W70 // 32
    # the same parallelism for training and generation: nothing moves
    s3 = weight_sync("llama-3-70b", "3d-hybrid", engines=1, rollout_tp=8, train_tp=8, link="h100-80gb")
    assert s3.bytes_per_gpu == 0 and s3.seconds == 0


def test_sync_every_divides_the_time():
    s = weight_sync("llama-3-70b", engines=4, rollout_tp=8, link="IB NDR")
    assert s.per_step(10) == pytest.approx(10 * s.seconds)
    assert s.per_step(10, sync_every=2) == pytest.approx(5 * s.seconds)


@pytest.mark.parametrize("kwargs, words", [
    (dict(method="broadcast", link="IB NDR"), "method"),
    (dict(link="IB NDR", bytes_per_s=1e9), "either"),
    (dict(), "either"),
    (dict(link="carrier pigeon"), "unknown link"),
    (dict(method="3d-hybrid", rollout_tp=3, train_tp=8, link="IB NDR"), "must divide"),
    (dict(method="gather-ipc", engines=2, rollout_tp=4, train_gpus=4, link="IB NDR"), "train_gpus"),
    (dict(method="nccl-broadcast", train_tp=8, link="IB NDR"), "colocated"),
    (dict(engines=0, link="IB NDR"), "engines"),
])
def test_bad_input_names_the_problem(kwargs, words):
    with pytest.raises(ValueError, match=words):
        weight_sync("llama-3-70b", **kwargs)
