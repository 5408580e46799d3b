"""memlib.hardware.allocator: PyTorch's caching allocator (c10/cuda/CUDACachingAllocator.cpp @001074d) and the
reserved peak it predicts for an estimate, against the published rows that report max_memory_reserved.

Expected values are the source's constants written out, hand derivations (arithmetic in the test), or the
published figures (validation/published.jsonl), never memlib's own output."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import memlib
from memlib.hardware import allocator as A
from memlib.hardware.allocator import AllocatorConfig, CachingAllocator, OutOfMemoryError, reserved_bytes

MiB = 2**20
GiB = 2**30
ROOT = Path(__file__).resolve().parents[1]


# ---- the source's constants and size rules ------------------------------------------------------------------
def test_constants_are_the_sources():
    # constexpr size_t kMinBlockSize = 512; kSmallSize = 1048576; kSmallBuffer = 2097152;
    # kMinLargeAlloc = 10485760; kRoundLarge = 2097152; const size_t kLargeBuffer = 20971520;
    assert A.K_MIN_BLOCK_SIZE == 512
    assert A.K_SMALL_SIZE == 1048576
    assert A.K_SMALL_BUFFER == 2097152
    assert A.K_MIN_LARGE_ALLOC == 10485760
    assert A.K_ROUND_LARGE == 2097152
    assert A.K_LARGE_BUFFER == 20971520


@pytest.mark.parametrize("n, rounded", [(1, 512), (511, 512), (512, 512), (513, 1024), (4 * 1000, 4096),
                                        (3 * 2**20 + 1, 3 * 2**20 + 512)])
def test_round_size(n, rounded):
    assert A.round_size(n) == rounded


@pytest.mark.parametrize("n, seg, pool", [
    (1, 2 * MiB, "small"),                      # packed in a 2 MiB segment
    (MiB, 2 * MiB, "small"),                    # 1 MiB is still small (<= kSmallSize)
    (MiB + 1, 20 * MiB, "large"),               # rounds to 1 MiB + 512: a 20 MiB segment
    (10 * MiB - 512, 20 * MiB, "large"),        # below kMinLargeAlloc
    (10 * MiB, 10 * MiB, "large"),              # its own size, a multiple of 2 MiB already
    (11 * MiB + 1, 12 * MiB, "large"),          # rounded up to 2 MiB
    (250 * 10**6, 240 * MiB, "large"),          # 250e6 B = 238.4 MiB -> 240 MiB
])
def test_segment_sizes(n, seg, pool):
    assert A.segment_size(n) == seg
    assert A.pool_of(n) == pool


def test_should_split_rules():
    # small pool: split when >= 512 B remain
    assert A.should_split(2 * MiB, 2 * MiB - 512, small=True)
    assert not A.should_split(1024, 1024 - 256, small=True)
    # large pool: split only when more than 1 MiB remains
    assert A.should_split(20 * MiB, 3 * MiB, small=False)
    assert not A.should_split(20 * MiB, 19 * MiB, small=False)          # exactly 1 MiB left: not > kSmallSize
    # ... and the request is below max_split_size
    assert not A.should_split(400 * MiB, 200 * MiB, small=False, max_split_size=128 * MiB)
    # expandable segments split any block with >= 512 B left
    assert A.should_split(20 * MiB, 19 * MiB, small=False, expandable_segments=True)


def test_config_parse_and_refusals():
    c = AllocatorConfig.parse("expandable_segments:True, max_split_size_mb:128,garbage_collection_threshold:0.6")
    assert c.expandable_segments and c.max_split_size == 128 * MiB and c.garbage_collection_threshold == 0.6
    with pytest.raises(ValueError, match="max_split_size_mb must be > 20"):
        AllocatorConfig(max_split_size_mb=20)  # torch: "max_split_size_mb too small" at <= kLargeBuffer
    with pytest.raises(ValueError, match="unknown or unmodelled"):
        AllocatorConfig.parse("backend:cudaMallocAsync")
    with pytest.raises(ValueError, match="key:value"):
        AllocatorConfig.parse("expandable_segments")
    with pytest.raises(ValueError, match="True or False"):
        AllocatorConfig.parse("expandable_segments:yes")


# ---- the replay: hand-derived sequences ---------------------------------------------------------------------
def test_small_requests_share_a_2mib_segment():
    a = CachingAllocator()
    hs = [a.malloc(1000) for _ in range(4)]       # 4 x 1024 B blocks in one 2 MiB segment
    assert a.allocated_bytes == 4 * 1024 and a.reserved_bytes == 2 * MiB
    for h in hs:
        a.free(h)
    assert a.allocated_bytes == 0 and a.reserved_bytes == 2 * MiB   # cached, not given back
    a.empty_cache()
    assert a.reserved_bytes == 0


def test_a_3mib_tensor_takes_a_20mib_segment_and_shares_it():
    a = CachingAllocator()
    x = a.malloc(3 * MiB)
    y = a.malloc(3 * MiB)                         # the 17 MiB remainder serves it
    assert a.reserved_bytes == 20 * MiB and a.allocated_bytes == 6 * MiB
    a.free(x)
    a.free(y)
    assert len(a.segments()) == 1 and a.segments()[0]["blocks"] == [{"size": 20 * MiB, "allocated": False,
                                                                     "requested": 0}]


def test_blocks_are_cached_per_stream():
    a = CachingAllocator()
    x = a.malloc(100 * MiB, stream=1)
    a.free(x)
    a.malloc(100 * MiB, stream=0)                 # the cached block belongs to stream 1
    assert a.reserved_bytes == 200 * MiB


def test_a_growing_batch_leaves_the_old_segment_cached():
    # 100 MiB then 101 MiB (a batch one row longer): 101 MiB does not fit the cached 100 MiB block,
    # a new segment of 102 MiB (rounded to 2 MiB) is made; the old one stays reserved
    a = CachingAllocator()
    a.free(a.malloc(100 * MiB))
    a.malloc(101 * MiB)
    assert a.allocated_bytes == 102 * MiB and a.reserved_bytes == 202 * MiB
    # with expandable segments: 5 pages of 20 MiB, then one more page appended to the same segment
    e = CachingAllocator(config="expandable_segments:True")
    e.free(e.malloc(100 * MiB))
    e.malloc(101 * MiB)
    assert e.reserved_bytes == 120 * MiB and len(e.segments()) == 1


def test_fragmentation_oom_and_expandable_segments_avoid_it():
    def run(conf):
        a = CachingAllocator(capacity_bytes=100 * MiB, config=conf)
        a.free(a.malloc(40 * MiB))
        a.malloc(12 * MiB)                        # pins the first segment: 12 MiB used, 28 MiB cached after it
        a.malloc(40 * MiB)
        a.malloc(30 * MiB)                        # 28 MiB free block too small, 20 MiB of room left
        return a
    with pytest.raises(OutOfMemoryError, match=r"Tried to allocate 30\.00 MiB.*28\.00 MiB is reserved by PyTorch "
                                               r"but unallocated.*expandable_segments:True"):
        run("")
    a = run("expandable_segments:True")
    # one segment: 40 MiB mapped, 12 used + 28 free; 40 more: grow 20 MiB (28 + 20 >= 40); 30 more: 8 MiB left
    # at the end, grow 2 pages -> 100 MiB mapped, exactly the capacity
    assert a.reserved_bytes == 100 * MiB and a.allocated_bytes == 82 * MiB


def test_oom_retry_frees_unsplit_cached_segments_first():
    a = CachingAllocator(capacity_bytes=100 * MiB)
    a.free(a.malloc(60 * MiB))                    # a cached, unsplit 60 MiB segment
    a.malloc(70 * MiB)                            # does not fit the room (40): the 60 MiB segment is released
    assert a.reserved_bytes == 70 * MiB and a.num_alloc_retries == 1


def test_max_split_size_keeps_large_blocks_whole():
    a = CachingAllocator(config="max_split_size_mb:128")
    a.free(a.malloc(200 * MiB))
    a.malloc(50 * MiB)                            # below 128 MiB: may not take the oversize 200 MiB block
    assert a.reserved_bytes == 250 * MiB
    b = CachingAllocator(config="max_split_size_mb:128")
    b.free(b.malloc(200 * MiB))
    b.malloc(190 * MiB)                           # oversize request, block within 20 MiB: taken whole, not split
    assert b.reserved_bytes == 200 * MiB and b.allocated_bytes == 200 * MiB
    c = CachingAllocator()                        # default: the 200 MiB block is split for 50 MiB
    c.free(c.malloc(200 * MiB))
    c.malloc(50 * MiB)
    assert c.reserved_bytes == 200 * MiB and c.allocated_bytes == 50 * MiB


def test_garbage_collection_threshold_frees_old_blocks_before_cudamalloc():
    a = CachingAllocator(capacity_bytes=1000 * MiB, memory_fraction=1.0,
                         config="garbage_collection_threshold:0.5")
    a.free(a.malloc(600 * MiB))                   # reserved 600 MiB > 0.5 x 1000
    a.malloc(700 * MiB)                           # no fit: GC releases the old 600 MiB block first
    assert a.reserved_bytes == 700 * MiB and a.num_alloc_retries == 0


def test_bad_input_is_a_clear_error():
    a = CachingAllocator()
    with pytest.raises(ValueError, match="size must be"):
        a.malloc(-1)
    with pytest.raises(ValueError, match="no live allocation"):
        a.free(12345)
    with pytest.raises(ValueError, match="PYTORCH_CUDA_ALLOC_CONF string"):
        CachingAllocator(config=3)


# ---- the reserved peak of an estimate, against published max_memory_reserved ------------------------------
sys.path.insert(0, str(ROOT / "benchmarks"))
import published as bench  # noqa: E402

ROWS = {r["id"]: r for r in bench.load_rows()}


def _estimate(row_id):
    row = ROWS[row_id]
    kw = dict(row["memlib"]["kwargs"])
    kw["model"] = bench.resolve_model(kw["model"])
    return row, bench.FUNCTIONS[row["memlib"]["function"]](**kw)


# rows whose reserved peak is set by the training step (fsdp_qlora train.py @50efa1e resets the peak stats before
# the loop; at 512 tokens what loading left cached sets it instead: see test_short_context_rows_read_low)
STEP_ROWS = [
    "fsdp-qlora-llama-2-7b-qlora-fsdp-2gpu-ctx2048-reserved",
    "fsdp-qlora-llama-2-7b-lora-fsdp-2gpu-ctx2048-reserved",
    "fsdp-qlora-llama-2-7b-qlora-fsdp-2gpu-ctx2048-bs4-reserved",
    "fsdp-qlora-llama-2-7b-lora-fsdp-2gpu-ctx2048-bs4-reserved",
    "fsdp-qlora-llama-2-7b-lora-fsdp-2gpu-ctx2048-bs6-reserved",
    "fsdp-qlora-llama-2-7b-qlora-noshard-2gpu-ctx2048-bs8-reserved",
    "fsdp-qlora-llama-2-7b-lora-noshard-2gpu-ctx2048-bs4-reserved",
    "fsdp-qlora-llama-2-70b-qlora-fsdp-2gpu-cpuoffload-bs2-reserved",   # issue 42: FSDP1 + CPU offload, -31% flat
]


@pytest.mark.parametrize("row_id", STEP_ROWS)
def test_fsdp1_reserved_rows_within_5_percent(row_id):
    row, est = _estimate(row_id)
    r = reserved_bytes(est)
    assert abs(r.reserved_bytes - row["bytes"]) / row["bytes"] < 0.05, (r.reserved_bytes / GiB, row["value"])


@pytest.mark.parametrize("row_id", ["torchtitan-llama-3.1-8b-fsdp-8gpu", "torchtitan-llama-3.1-8b-fsdp-128gpu"])
def test_torchtitan_expandable_segments_rows_within_5_percent(row_id):
    row, est = _estimate(row_id)
    assert row["setup"]["alloc_conf"] == "expandable_segments:True"
    r = reserved_bytes(est, expandable_segments=True)
    assert abs(r.reserved_bytes - row["bytes"]) / row["bytes"] < 0.05, (r.reserved_bytes / GiB, row["value"])


def test_the_70b_cpu_offload_row_was_31_percent_low_with_the_flat_headroom():
    row, est = _estimate("fsdp-qlora-llama-2-70b-qlora-fsdp-2gpu-cpuoffload-bs2-reserved")
    flat = bench.compared_bytes(est.peak_bytes, "reserved")
    assert (flat - row["bytes"]) / row["bytes"] < -0.25          # issue 42's -29...-32%
    assert abs(reserved_bytes(est).reserved_bytes - row["bytes"]) / row["bytes"] < 0.03


def test_published_reserved_allocated_pair():
    # Answer.AI publish both for LoRA at 2048 tokens: 9.16 GiB allocated, 10.22 GiB reserved (+11.6%)
    alloc = ROWS["fsdp-qlora-llama-2-7b-lora-fsdp-2gpu-ctx2048-allocated"]["value"]
    res = ROWS["fsdp-qlora-llama-2-7b-lora-fsdp-2gpu-ctx2048-reserved"]["value"]
    assert (alloc, res) == (9.16, 10.22)
    _, est = _estimate("fsdp-qlora-llama-2-7b-lora-fsdp-2gpu-ctx2048-reserved")
    r = reserved_bytes(est)
    assert abs(r.allocated_peak_bytes / GiB - alloc) / alloc < 0.02
    assert abs((r.reserved_bytes / r.allocated_peak_bytes) - res / alloc) < 0.03


def test_short_context_rows_read_low_because_loading_sets_their_reserved_peak():
    # the post: "the reported peak reserved memory for both 512 and 2048 context length is roughly the same"
    # (10.24 vs 10.22 GiB): the 512-token peak is what loading and wrapping left cached (train.py resets the peak
    # stats, not the cache), which memlib does not model; documented in RESERVED_ASSUMPTIONS
    for method in ("qlora", "lora"):
        row, est = _estimate(f"fsdp-qlora-llama-2-7b-{method}-fsdp-2gpu-ctx512-reserved")
        assert reserved_bytes(est).reserved_bytes < 0.9 * row["bytes"]
    assert any("reset_peak_memory_stats" in a for a in A.RESERVED_ASSUMPTIONS)


def test_cap_near_the_cards_limit_and_fits():
    _, est = _estimate("fsdp-qlora-llama-2-7b-qlora-fsdp-2gpu-ctx2048-bs10-reserved")
    r = reserved_bytes(est, gpu="rtx-3090")
    room = memlib.get_gpu("rtx-3090").torch_total_bytes - 512 * MiB
    assert r.capped and r.reserved_bytes == room
    v = memlib.fits(est, "rtx-3090", allocator="caching")
    assert v.headroom_bytes == reserved_bytes(est).fragmentation_bytes
    assert v.required_bytes == est.peak_bytes + 512 * MiB + v.headroom_bytes
    assert not v.fits                              # 16.7 GiB + 7.2 GiB of fragmentation + context > 23.6 GiB
    assert memlib.fits(est, "rtx-3090").fits       # the flat 5% says it fits: the run reserved 21 GiB of 24
    e = memlib.fits(est, "rtx-3090", allocator="expandable")
    assert e.headroom_bytes < v.headroom_bytes


def test_reserved_bad_input():
    with pytest.raises(ValueError, match="needs a training estimate"):
        reserved_bytes(memlib.estimate_inference("llama-2-7b", context_len=1024))
    est = memlib.estimate_training("llama-2-7b", seq_len=512)
    with pytest.raises(ValueError, match="allocator is one of"):
        memlib.fits(est, "a100-80gb", allocator="cached")
    with pytest.raises(ValueError, match="expandable_segments must be True or False"):
        reserved_bytes(est, expandable_segments="yes")
    with pytest.raises(ValueError, match="fragmentation_factor"):
        reserved_bytes(est, fragmentation_factor=-1)


# ---- torch's OOM message read back, and the leaks ------------------------------------------------------------
def test_parse_oom_message_of_published_logs():
    # pytorch/pytorch issue 152135 (2025-04-24): 74.77 + 3.87 = 78.64 GiB reserved; 79.14 - 78.64 = 0.50 GiB outside
    r = A.parse_oom_message(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 250.00 MiB. GPU 0 has a total capacity of "
        "79.26 GiB of which 104.75 MiB is free. Process 1007710 has 79.14 GiB memory in use. Of the allocated memory "
        "74.77 GiB is allocated by PyTorch, and 3.87 GiB is reserved by PyTorch but unallocated. If reserved but ...")
    assert r.tried_bytes == 250 * MiB
    assert abs(r.reserved_bytes / GiB - 78.64) < 0.005 and abs(r.non_pytorch_bytes / GiB - 0.50) < 0.005
    assert r.would_fit_unfragmented          # 250 MiB < 3.87 GiB cached: fragmentation (expandable segments were on)
    # kaito-project/kaito issue 976 (vLLM, private pools): 13.73 GiB includes the 46 MiB of private pools
    k = A.parse_oom_message(
        "Tried to allocate 546.00 MiB. GPU 0 has a total capacity of 15.77 GiB of which 514.19 MiB is free. Process "
        "562167 has 15.25 GiB memory in use. Of the allocated memory 13.73 GiB is allocated by PyTorch, with 46.00 MiB "
        "allocated in private pools (e.g., CUDA Graphs), and 736.86 MiB is reserved by PyTorch but unallocated.")
    assert abs(k.non_pytorch_bytes / GiB - (15.25 - 13.73 - 736.86 / 1024)) < 0.001
    # murong-xu/CADS issue 4: 22.78 GiB requested > 12.73 free + 9.35 unallocated = 22.08: no setting helps
    c = A.parse_oom_message(
        "Tried to allocate 22.78 GiB. GPU 0 has a total capacity of 31.47 GiB of which 12.73 GiB is free. Including "
        "non-PyTorch memory, this process has 18.73 GiB memory in use. Of the allocated memory 9.08 GiB is allocated "
        "by PyTorch, and 9.35 GiB is reserved by PyTorch but unallocated.")
    assert not c.would_fit_unfragmented and abs(c.non_pytorch_bytes / GiB - 0.30) < 0.005
    with pytest.raises(ValueError, match="not a torch CUDA out-of-memory message"):
        A.parse_oom_message("RuntimeError: CUDA error: an illegal memory access was encountered")


def test_replay_training_steady_state_and_growing_lengths():
    lora = {s: memlib.estimate_training("llama-2-7b", seq_len=s, finetune="lora") for s in (512, 2048)}
    same = A.replay_training([lora[2048]] * 3)
    # identical steps: after the first step (optimizer states created) the allocator's state repeats
    assert same[1].reserved_peak_bytes == same[2].reserved_peak_bytes
    assert all(s.reserved_peak_bytes >= s.allocated_peak_bytes for s in same)
    grow = A.replay_training([lora[512], lora[2048]])
    first = A.replay_training([lora[2048], lora[512]])
    assert grow[-1].reserved_peak_bytes > first[-1].reserved_peak_bytes   # the longer batch needs new segments
    with pytest.raises(ValueError, match="at least one estimate"):
        A.replay_training([])


def test_leaks_by_hand():
    from memlib.training import leaks
    assert leaks.kept_scalar_bytes(10_000) == 10_000 * 512          # one 512 B block per 0-d loss
    assert leaks.rank0_context_bytes(8, 600 * MiB) == 7 * 600 * MiB
    assert leaks.batches_until_oom(10, 95) == 9
    est = memlib.estimate_training("llama-3-8b", seq_len=2048)
    # the Adam states (2 x 4 B per parameter) arrive in the first optimizer.step(): the gap is at least them
    gap = est.peak_bytes - leaks.first_step_before_optimizer_bytes(est)
    assert gap >= 8 * memlib.get_model("llama-3-8b").num_params
    fwd = max((m for m in est.moments if m.name == "forward"), key=lambda m: m.total)
    assert leaks.kept_graph_bytes(est) == fwd.parts["activations"] + fwd.parts.get("logits_and_loss", 0) + \
        fwd.parts.get("autocast_copies", 0)
    with pytest.raises(ValueError):
        leaks.kept_graph_bytes(memlib.estimate_inference("llama-2-7b"))
