"""allocator_headroom through plan(), min_gpus(), max_micro_batch(), plan_serving() and the CLI: fits()'s margin for
PyTorch's caching allocator (memlib.hardware.fit), 5% of the peak by default; published FSDP runs reserve up to 24% more than
they allocate, so a user planning FSDP passes 0.25."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

import memlib
from memlib.cli import main
from memlib.hardware.fit import DEFAULT_CUDA_CONTEXT_BYTES, usable_bytes
from memlib.parallel.plan import max_micro_batch, min_gpus, plan, plan_serving


def _cli(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def test_fits_adds_the_given_fraction_of_the_peak():
    est = memlib.estimate_training("llama-7b", seq_len=1024, precision="bf16")
    v = memlib.fits(est, "a100-80gb", allocator_headroom=0.25)
    # by hand: peak + 0.5 GiB of CUDA context + a quarter of the peak
    assert v.required_bytes == est.peak_bytes + 512 * 2**20 + est.peak_bytes // 4
    assert v.allocator_headroom == 0.25


def test_plan_judges_every_layout_with_the_headroom_and_drops_those_it_sinks():
    loose, tight = (plan("llama-2-7b", "a100-80gb", 8, allocator_headroom=h) for h in (0.05, 0.25))
    for p in tight.feasible:
        assert p.verdict.headroom_bytes == int(p.estimate.peak_bytes * 0.25)
        assert p.estimate.peak_bytes * 1.25 + DEFAULT_CUDA_CONTEXT_BYTES <= usable_bytes(memlib.get_gpu("a100-80gb"))
    dropped = {repr(p.settings) for p in loose.feasible} - {repr(p.settings) for p in tight.feasible}
    assert dropped, "a 5x larger headroom should sink at least one layout that fits with 5%"
    assert {repr(p.settings) for p in tight.feasible} <= {repr(p.settings) for p in loose.feasible}


def test_max_micro_batch_keeps_the_plans_headroom():
    r = plan("llama-2-7b", "a100-80gb", 8, allocator_headroom=0.25)
    best = r.best
    b = max_micro_batch(best, "a100-80gb")
    at = lambda n: memlib.estimate_training(best.estimate.setup.model, **{**best.settings, "micro_batch": n})  # noqa: E731
    assert memlib.fits(at(b), "a100-80gb", allocator_headroom=0.25).fits
    assert not memlib.fits(at(b + 1), "a100-80gb", allocator_headroom=0.25).fits


def test_min_gpus_needs_more_with_more_headroom():
    base, tight = (min_gpus("llama-65b", "a100-80gb", allocator_headroom=h) for h in (0.05, 0.25))
    assert tight.count > base.count
    assert all(p.verdict.allocator_headroom == 0.25 for p in tight.feasible)


def test_plan_serving_passes_it_on():
    r = plan_serving("llama-3-8b", "a100-80gb", 1, context_len=8192, allocator_headroom=0.25)
    assert r.best.verdict.allocator_headroom == 0.25
    loose = plan_serving("llama-3-8b", "a100-80gb", 1, context_len=8192)
    assert r.best.sequences < loose.best.sequences


@pytest.mark.parametrize("bad", [1, 1.5, -0.1, float("nan"), True, "0.2"])
def test_bad_headroom_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="allocator_headroom is a fraction of the peak"):
        plan("llama-2-7b", "a100-80gb", 8, allocator_headroom=bad)
    with pytest.raises(ValueError, match="allocator_headroom is a fraction of the peak"):
        plan_serving("llama-3-8b", "a100-80gb", 1, allocator_headroom=bad)


def test_cli_flag_on_estimate_fit_and_serve():
    rc, out, _ = _cli(["estimate", "llama-7b", "--seq-len", "1024", "--precision", "bf16", "--gpu", "a100-80gb",
                       "--allocator-headroom", "0.25", "--json"])
    d = json.loads(out)
    assert rc == 0 and d["verdicts"][0]["required_bytes"] == d["peak_bytes"] + 512 * 2**20 + d["peak_bytes"] // 4
    rc, out, _ = _cli(["fit", "llama-2-7b", "--gpu", "a100-80gb", "--count", "8", "--allocator-headroom", "0.25"])
    assert rc == 0 and "allocator headroom 25% of the peak" in out
    rc, out, _ = _cli(["serve", "llama-3-8b", "--context-len", "8192", "--allocator-headroom", "0.25", "--json"])
    assert rc == 0 and json.loads(out)["verdict"]["required_bytes"] > 0
    for bad in ("1", "nan", "-0.5", "lots"):
        with pytest.raises(SystemExit) as e, contextlib.redirect_stderr(io.StringIO()) as err:
            main(["fit", "llama-2-7b", "--gpu", "a100-80gb", "--count", "8", "--allocator-headroom", bad])
        assert e.value.code == 2 and "--allocator-headroom" in err.getvalue() and len(err.getvalue().splitlines()) == 1
