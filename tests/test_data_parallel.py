"""torch.nn.DataParallel vs DistributedDataParallel (memlib.parallel.data_parallel), derived by hand from
torch/nn/parallel/data_parallel.py (pytorch@b288b6e): the gather puts every output on device_ids[0], the
replicas' gradients are summed into the module there, and the optimizer steps it there."""

from __future__ import annotations

import pytest

from memlib.parallel.data_parallel import data_parallel_memory


def test_a_small_case_by_hand():
    # 1,000 parameters, batch 8 over 4 GPUs, 16 tokens, vocabulary 100, fp32 outputs and gradients, AdamW 8 B/param.
    r = data_parallel_memory(1_000, 8, 16, 100, 4)
    assert r.dp_device0 == {"gradients": 4_000, "optimizer": 8_000, "gathered outputs": 8 * 16 * 100 * 4}
    assert r.dp_device0_bytes == 4_000 + 8_000 + 51_200 == 63_200
    assert sum(r.dp_other.values()) == 0
    # a DDP rank: the same .grad and states, a bucket copy of the gradients, and its own 8 / 4 = 2 sequences
    assert r.ddp_rank == {"gradients": 4_000, "optimizer": 8_000, "buckets": 4_000,
                          "own outputs": 2 * 16 * 100 * 4}
    assert r.ddp_rank_bytes == 4_000 + 8_000 + 4_000 + 12_800 == 28_800
    assert r.dp_over_ddp_bytes == 63_200 - 28_800 == 34_400


def test_bucket_view_and_uneven_chunks():
    # batch 10 over 4 GPUs: torch scatters chunks of ceil(10 / 4) = 3, 3, 3, 1; a rank holds at most 3
    r = data_parallel_memory(1_000, 10, 16, 100, 4, gradient_as_bucket_view=True, output_bytes=2)
    assert r.ddp_rank["buckets"] == 0
    assert r.ddp_rank["own outputs"] == 3 * 16 * 100 * 2
    assert r.dp_device0["gathered outputs"] == 10 * 16 * 100 * 2


def test_the_surplus_grows_with_the_batch_and_can_be_negative():
    small = data_parallel_memory(10**9, 2, 16, 100, 2)   # tiny outputs: DDP's bucket copy makes a rank heavier
    assert small.dp_over_ddp_bytes == 2 * 16 * 100 * 4 - (4 * 10**9 + 16 * 100 * 4) < 0
    big = data_parallel_memory(10**6, 64, 2048, 151_936, 8)
    assert big.dp_over_ddp_bytes == (64 - 8) * 2048 * 151_936 * 4 - 4 * 10**6 > 0


@pytest.mark.parametrize("kw,msg", [
    (dict(n_gpus=1), "at least 2"), (dict(batch=2), "batch size should be larger"),
    (dict(num_params=0), "num_params"), (dict(output_bytes=3.0), "integer"),
    (dict(gradient_as_bucket_view="no"), "True or False")])
def test_bad_input_is_a_clear_error(kw, msg):
    args = dict(num_params=10, batch=8, seq_len=4, vocab_size=10, n_gpus=4) | kw
    with pytest.raises(ValueError, match=msg):
        data_parallel_memory(**args)
