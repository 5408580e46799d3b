"""Notebook 11's pictures and ladder (memlib.learn.oom, memlib.learn.playgrounds.oom): the shapes drawn are the
objects' own bytes, checked by hand."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

import memlib  # noqa: E402
from memlib.hardware.allocator import CachingAllocator  # noqa: E402
from memlib.learn.oom import LADDER, fix_ladder, moment_timeline, segment_picture  # noqa: E402
from memlib.learn.playgrounds.oom import parse_lengths, replay_summary  # noqa: E402

MiB, GiB = 2**20, 2**30


def test_moment_timeline_stacks_each_moment_to_its_total():
    est = memlib.estimate_training("llama-2-7b", seq_len=1024, finetune="lora")
    ax = moment_timeline(est)
    bands = ax.collections
    assert len(bands) == len({k for m in est.moments for k, v in m.parts.items() if v})
    top = bands[-1].get_paths()[0].vertices[:, 1].max()
    assert top == pytest.approx(est.peak_bytes / GiB)  # the highest stack is the peak moment's total
    assert "not a recorded snapshot" in ax.get_xlabel()


def test_segment_picture_draws_each_block():
    a = CachingAllocator()
    a.free(a.malloc(100 * MiB))
    a.malloc(60 * MiB)                  # splits the cached 100 MiB block: 60 used + 40 cached
    ax = segment_picture(a)
    widths = sorted(round(p.get_width()) for p in ax.patches)
    assert widths == [40, 60]


def test_fix_ladder_keeps_the_global_batch_and_shards_only_with_dp():
    rungs = fix_ladder("llama-3-8b", "a100-80gb", seq_len=2048, micro_batch=4, dp=8)
    assert [r.name for r in rungs] == [name for name, _, _ in LADDER]
    accum = rungs[1].settings
    assert accum["micro_batch"] == 1 and accum["grad_accum"] == 4          # 4 x 1 = the configured 4 x 1
    assert rungs[0].peak_bytes > rungs[1].peak_bytes > rungs[2].peak_bytes  # smaller batch, then checkpointing
    assert all(r.reserved_bytes >= r.peak_bytes for r in rungs)
    solo = fix_ladder("llama-3-8b", "a100-80gb", seq_len=2048, dp=1)
    assert "shard states (FSDP / ZeRO-3)" not in [r.name for r in solo]


def test_playground_summary_and_bad_lengths():
    s = replay_summary("llama-2-7b", "512,1024", gpu="a100-80gb")
    assert [r.seq_len for r in s["steps"]] == [512, 1024]
    assert parse_lengths([2048, 512]) == [2048, 512]
    for bad in ("", "512,abc", [0], list(range(1, 20))):
        with pytest.raises(ValueError, match="lengths|sequence lengths"):
            parse_lengths(bad)
