"""User-defined GPUs and numpy scalars at every public entry point, as properties (the classes behind
issue 23's examples; its single examples are in tests/test_api_odd_inputs.py).

- A user-defined GPU (a catalog entry under a new name, dataclasses.replace) answers exactly as its
  catalog twin at every public entry point that takes a GPU.
- numpy integer and float scalars of every width that holds the value give the same answer as the plain
  Python number, and what comes back is plain Python (JSON-serialisable).
The equality is the independent check: the twin is the catalog entry, whose figures the catalog tests pin.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from memlib import cost, estimate_inference, estimate_training, fits, get_gpu, step_time
from memlib.hardware.fit import usable_bytes
from memlib.hardware.gpus import list_gpus
from memlib.parallel.plan import max_micro_batch, min_gpus, plan, plan_serving
from memlib.serving.capacity import decode_bound
from memlib.serving.inference import max_batch

E7 = estimate_training("llama-7b", dp=8, zero_stage=3)
I8 = estimate_inference("llama-3-8b", batch=4, context_len=4096)


def _value(x):
    """A comparable form of an entry point's answer."""
    if hasattr(x, "to_dict"):
        return json.dumps(x.to_dict(), sort_keys=True, default=str).replace('"my-', '"')
    if dataclasses.is_dataclass(x):
        return json.dumps(dataclasses.asdict(x), sort_keys=True, default=str).replace('"my-', '"')
    return x


# every public entry point that takes a GPU, called the same way with a name or a GPU object
ENTRY_POINTS = {
    "fits(training)": lambda g: fits(E7, g).margin_gib,
    "fits(inference)": lambda g: fits(I8, g).fits,
    "usable_bytes": lambda g: usable_bytes(get_gpu(g)),
    "step_time": lambda g: step_time(E7, g).step_s,
    "training_run": lambda g: cost.training_run("llama-2-7b", 2e12, g, 256, seq_len=4096).gpu_hours,
    "mfu_from_throughput": lambda g: cost.mfu_from_throughput("llama-2-7b", 4096, 3000, g),
    "max_batch": lambda g: max_batch("llama-3-8b", g, context_len=4096).value,
    "decode_bound": lambda g: decode_bound("llama-3-8b", g, batch=8).tokens_per_s,
}
SLOW_ENTRY_POINTS = {  # the searches: on a few GPUs only
    "plan": lambda g: _value(plan("llama-7b", g, 8).best.settings),
    "min_gpus": lambda g: (r.count if (r := min_gpus("llama-7b", g, max_count=64)) else None),
    "max_micro_batch": lambda g: (max_micro_batch(p.best, g) if (p := plan("llama-7b", g, 8)).best else None),
    "plan_serving": lambda g: _value(plan_serving("llama-3-8b", g, 2, context_len=4096).best.settings)
    if plan_serving("llama-3-8b", g, 2, context_len=4096).best else None,
}
GPUS = [g.name for g in list_gpus()]
BF16 = [g.name for g in list_gpus() if g.bf16_tflops]


def _twin(name: str):
    return dataclasses.replace(get_gpu(name), name=f"my-{name}", display_name=f"My {name}")


def _same(fn, name):
    try:
        want = fn(name)
    except ValueError:  # a clear error for the catalog name (e.g. no 16-bit peak): a clear error for its twin
        with pytest.raises(ValueError):
            fn(_twin(name))
        return
    assert fn(_twin(name)) == want, name


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_a_user_defined_gpu_answers_as_its_catalog_twin(entry):
    for name in GPUS:
        _same(ENTRY_POINTS[entry], name)


@pytest.mark.parametrize("entry", sorted(SLOW_ENTRY_POINTS))
@pytest.mark.parametrize("name", ["a100-80gb", "v100-32gb", "rtx-4090"])
def test_a_user_defined_gpu_answers_as_its_catalog_twin_in_the_searches(entry, name):
    _same(SLOW_ENTRY_POINTS[entry], name)


def test_the_twin_check_can_fail():
    # a GPU with different figures under a new name is not its twin: the answers differ
    other = dataclasses.replace(get_gpu("a100-80gb"), name="my-a100-80gb", memory_bytes=40 * 2**30,
                                reported_total_mib=None, torch_total_mib=None)
    assert fits(E7, other).margin_gib < fits(E7, "a100-80gb").margin_gib - 30  # 40 GiB less to hold it


def test_a_smaller_card_that_keeps_the_catalog_totals_is_a_clear_error():
    # it used to be sized by the 80 GB card's reported totals, silently
    with pytest.raises(ValueError, match="total_mib .* is more than memory_bytes"):
        dataclasses.replace(get_gpu("a100-80gb"), name="my-a100", memory_bytes=40 * 2**30)


INTS = (np.int16, np.int32, np.int64, np.uint16, np.uint32, np.uint64)
KNOBS = {"seq_len": 2048, "micro_batch": 2, "grad_accum": 4, "dp": 8, "tp": 2, "pp": 2}


@pytest.mark.parametrize("knob", sorted(KNOBS))
@pytest.mark.parametrize("dtype", INTS, ids=lambda t: t.__name__)
def test_numpy_integers_answer_as_python_ints(knob, dtype):
    kw = {knob: KNOBS[knob]}
    if knob == "dp":
        kw["zero_stage"] = 3
    plain = estimate_training("llama-7b", **kw)
    numpy = estimate_training("llama-7b", **{k: dtype(v) if k == knob else v for k, v in kw.items()})
    assert type(numpy.peak_bytes) is int and numpy.peak_bytes == plain.peak_bytes
    json.dumps(numpy.to_dict())  # plain Python inside
    # the cache keys on the converted value: the plain call after the numpy one is unchanged
    assert estimate_training("llama-7b", **kw).peak_bytes == plain.peak_bytes


@pytest.mark.parametrize("dtype", (np.float16, np.float32, np.float64), ids=lambda t: t.__name__)
def test_numpy_floats_answer_as_python_floats(dtype):
    headroom = dtype(0.25)
    want = fits(E7, "a100-80gb", allocator_headroom=float(headroom))
    got = fits(E7, "a100-80gb", allocator_headroom=headroom)
    assert got.margin_gib == want.margin_gib and type(got.margin_gib) is float
    assert cost.training_run("llama-2-7b", dtype(2e12) if dtype is not np.float16 else 2e12, "h100-80gb", 256,
                             mfu=dtype(0.4)).gpu_hours == pytest.approx(
        cost.training_run("llama-2-7b", 2e12, "h100-80gb", 256, mfu=0.4).gpu_hours, rel=1e-3)
