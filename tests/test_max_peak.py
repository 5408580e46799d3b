"""memlib.hardware.fit.max_peak_bytes: the largest tensor peak memlib.fits accepts on a GPU."""

from types import SimpleNamespace

import pytest

import memlib
from memlib.hardware.fit import max_peak_bytes


def _fits(peak, gpu, **kw):
    return memlib.fits(SimpleNamespace(peak_bytes=peak), gpu, **kw).fits


@pytest.mark.parametrize("gpu", [g.name for g in memlib.list_gpus()])
def test_it_is_the_boundary_of_fits(gpu):
    p = max_peak_bytes(gpu)
    assert _fits(p, gpu) and not _fits(p + 1, gpu)


def test_a100_80gb_by_hand():
    # torch reports 81,051 MiB on an A100 SXM4 80GB (memlib.hardware.gpus); less the 512 MiB CUDA context,
    # divided by 1.05 (5% allocator headroom): 80,539 MiB / 1.05 = 76,703.8 MiB = 80.43 GB
    p = max_peak_bytes("a100-80gb")
    assert abs(p - (81051 - 512) * 2**20 / 1.05) < 2
    assert round(p / 1e9, 2) == 80.43


@pytest.mark.parametrize("ctx, headroom", [(0, 0.0), (2**30, 0.0), (0, 0.2), (3 * 2**30, 0.1)])
def test_other_context_and_headroom(ctx, headroom):
    kw = dict(cuda_context_bytes=ctx, allocator_headroom=headroom)
    p = max_peak_bytes("rtx-4090", **kw)
    assert _fits(p, "rtx-4090", **kw) and not _fits(p + 1, "rtx-4090", **kw)
    if headroom == 0.0:  # no headroom: everything but the context
        assert p == memlib.get_gpu("rtx-4090").torch_total_bytes - ctx


def test_context_larger_than_the_card_is_zero():
    assert max_peak_bytes("t4", cuda_context_bytes=10**12) == 0


@pytest.mark.parametrize("kw, word", [(dict(allocator_headroom=1.0), "allocator_headroom"),
                                      (dict(allocator_headroom=-0.1), "allocator_headroom"),
                                      (dict(allocator_headroom=True), "allocator_headroom"),
                                      (dict(cuda_context_bytes=-1), "cuda_context_bytes")])
def test_bad_input(kw, word):
    with pytest.raises(ValueError, match=word):
        max_peak_bytes("a100-80gb", **kw)
    with pytest.raises(ValueError):
        max_peak_bytes("no-such-gpu")
