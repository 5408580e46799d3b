"""Context parallelism (ring attention) measured on fake CPU tensors with a fake process group.

The way torchtitan runs it with dp_shard = 1: one 1-D mesh of cp ranks that FSDP2 shards the
model over (torchtitan's dp_shard_cp mesh) and that ring attention runs on. Rank 0 is measured,
with validation.sharded's FSDPMemTracker run (and its dispatch tracker as a cross-check).

What is real and what is arranged:
- torch's own ring attention runs: the CP DTensor dispatcher is enabled
  (_context_parallel/_attention.py _enable_cp_dtensor_dispatcher) and the model's attention
  calls `aten._scaled_dot_product_efficient_attention` on DTensors sharded on the sequence dim,
  which the dispatcher sends to `_scaled_dot_product_ring_efficient_attention` and, in the
  backward, `_scaled_dot_product_ring_efficient_attention_backward`: the all-gather (or
  all_to_all) buffers, the fp32 merge and the dK/dV ring are torch's own tensors. The fake
  process group moves no data but returns buffers of the real sizes.
- The model runs the local seq_len / cp tokens of its sequence (what torch's context_parallel
  buffers / torchtitan's cp_buffers hand each rank; token order does not change memory).
- The kernel is CUDA's memory-efficient one (on fake CPU tensors, as validation/recipes.py
  does for MLA): torch's CP handles the flash, efficient and cuDNN ops, and the CPU flash op
  is none of them. It saves the same q, k, v, output and fp32 log-sum-exp as flash.
- Multi-head cases only: the efficient kernel takes equal query and key/value heads; with GQA
  transformers would hand unrepeated K/V to flash (enable_gqa), which this cannot run.
- The measured rank is the last one (cp - 1): ring attention's work differs by rank, and every
  rank but 0 merges whole blocks (rank 0 merges half blocks), so the last rank is a worst case.
- Two fake-tensor artifacts are removed, each absent on a GPU: (1) the fake kernel of
  `_c10d_functional.wait_tensor` allocates a copy of its input (`_wait_tensor_meta` returns
  `torch.empty_like`) where CUDA's returns the same buffer: funcol.wait_tensor is the identity
  here; (2) DTensor's sharding propagation runs each op once on global-shape fake tensors to
  read the output's metadata (_sharding_prop.py _propagate_tensor_meta_non_cached, inside a
  FakeTensorMode of its own on a GPU: no memory); under the harness's FakeTensorMode those
  global-shape tensors would pass through the trackers, so it runs outside them.

    python -m validation.context_parallel --list
    python -m validation.context_parallel --case cp4-tiny-llama-bf16
    python -m validation.context_parallel --all --write        # validation/results_cp.json
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import time
from pathlib import Path

import torch
import torch.distributed as dist

from validation import measure as H
from validation import sharded as S
from validation.cases import LLAMA_7B_4L, TINY_LLAMA, _sharded

TINY_LLAMA_V1K = dict(TINY_LLAMA, vocab_size=1024)  # a small vocabulary: the peak moves into the layers
LLAMA_7B_2L_V1K = dict(LLAMA_7B_4L, num_hidden_layers=2, vocab_size=1024, max_position_embeddings=32768)

RESULTS_CP_PATH = Path(__file__).with_name("results_cp.json")
ATTENTION = "cp_ring"


def _cp(name, config, seq_len, cp, rotate="allgather", **kw) -> dict:
    """A context-parallel case: FSDP2 and ring attention over the same cp ranks (torchtitan, dp_shard=1)."""
    c = _sharded(name, config, seq_len, 1, cp, **kw)
    c["cp"] = {"degree": cp, "rotate": rotate}
    return c


CP_CASES: list[dict] = [
    # the loss decides the peak (32k vocabulary), as at real widths without a chunked loss
    _cp("cp4-tiny-llama-bf16", TINY_LLAMA, 4096, 4),
    _cp("cp4-llama-7b-4l-mixed-mp-ckpt", LLAMA_7B_4L, 8192, 4, precision="bf16-mixed", recompute="full"),
    # small vocabulary: the layers and the ring attention decide it
    _cp("cp4-tiny-llama-v1k-bf16", TINY_LLAMA_V1K, 16384, 4),
    _cp("cp4-tiny-llama-v1k-bf16-alltoall", TINY_LLAMA_V1K, 16384, 4, rotate="alltoall"),
    _cp("cp8-tiny-llama-v1k-bf16-ckpt", TINY_LLAMA_V1K, 32768, 8, recompute="full"),
    _cp("cp2-tiny-llama-v1k-mixed-mp", TINY_LLAMA_V1K, 8192, 2, precision="bf16-mixed"),
    _cp("cp8-llama-7b-2l-v1k-bf16-ckpt", LLAMA_7B_2L_V1K, 32768, 8, recompute="full"),
]


def get_cp_case(name: str) -> dict:
    for c in CP_CASES:
        if c["name"] == name:
            return c
    raise KeyError(f"unknown context-parallel case {name!r}; see --list")


def _attention(mesh, calls: dict):
    """A transformers attention function that runs torch's ring attention over `mesh`."""
    from torch.distributed.tensor import DTensor, Shard

    def ring(module, query, key, value, attention_mask, dropout=0.0, scaling=None, is_causal=None, **kwargs):
        if key.size(1) != query.size(1):
            raise ValueError("the CP harness runs multi-head attention only (equal query and key/value heads)")
        q, k, v = (DTensor.from_local(t, mesh, [Shard(2)], run_check=False) for t in (query, key, value))
        needs_grad = query.requires_grad or key.requires_grad or value.requires_grad
        out = torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, None, needs_grad, 0.0, True,
                                                                      scale=scaling)[0]
        calls["attention"] += 1
        return out.to_local().transpose(1, 2).contiguous(), None

    return ring


def _init_fake_pg(world_size: int, rank: int):
    """validation.sharded._init_fake_pg for any rank: a fake process group and a 1-D mesh."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.testing._internal.distributed.fake_pg import FakeStore

    if dist.is_initialized():
        dist.destroy_process_group()
    dist.init_process_group("fake", rank=rank, world_size=world_size, store=FakeStore())
    return init_device_mesh(S.DEVICE, (world_size,))


@contextlib.contextmanager
def _no_fake_artifacts():
    """funcol.wait_tensor as CUDA runs it (the same buffer back), and DTensor's sharding propagation outside the
    trackers (see the module docstring)."""
    import torch.distributed._functional_collectives as ft_c
    from torch.distributed.tensor._sharding_prop import ShardingPropagator
    from torch.utils._python_dispatch import _disable_current_modes

    wait, prop = ft_c.wait_tensor, ShardingPropagator._propagate_tensor_meta_non_cached

    def propagate_outside(self, op_schema):
        with _disable_current_modes():
            return prop(self, op_schema)

    ft_c.wait_tensor = lambda tensor: tensor
    ShardingPropagator._propagate_tensor_meta_non_cached = propagate_outside
    try:
        yield
    finally:
        ft_c.wait_tensor, ShardingPropagator._propagate_tensor_meta_non_cached = wait, prop


@contextlib.contextmanager
def _ring_attention(mesh, rotate: str, calls: dict):
    """torch's CP dispatcher on, the rotate method set, ring attention registered as a transformers attention;
    counts the ring forward and backward calls so a run that did not go through the ring is refused."""
    from torch.distributed.tensor.experimental._context_parallel import _attention as A
    from transformers import AttentionInterface

    AttentionInterface.register(ATTENTION, _attention(mesh, calls))
    old_method = A._cp_options.rotate_method
    A._cp_options.rotate_method = {"allgather": A._RotateMethod.ALL_GATHER,
                                   "alltoall": A._RotateMethod.ALL_TO_ALL}[rotate]
    fwd, bwd = A._templated_ring_attention, A._templated_ring_attention_backward

    def counted_fwd(*a, **k):
        calls["ring_forward"] += 1
        return fwd(*a, **k)

    def counted_bwd(*a, **k):
        calls["ring_backward"] += 1
        return bwd(*a, **k)

    A._templated_ring_attention, A._templated_ring_attention_backward = counted_fwd, counted_bwd
    A._enable_cp_dtensor_dispatcher()
    try:
        yield
    finally:
        A._disable_cp_dtensor_dispatcher()
        A._templated_ring_attention, A._templated_ring_attention_backward = fwd, bwd
        A._cp_options.rotate_method = old_method


def measure_cp_case(case: dict, use_dispatch: bool = True) -> dict:
    """Rank 0's peak of a context-parallel case: FSDPMemTracker (primary) and the dispatch tracker."""
    cp, rotate = case["cp"]["degree"], case["cp"]["rotate"]
    if case["seq_len"] % (2 * cp):
        raise ValueError(f"{case['name']}: seq_len must be divisible by 2 x cp")
    local = dict(case, seq_len=case["seq_len"] // cp, attention=ATTENTION)
    rank = cp - 1
    mesh = _init_fake_pg(cp, rank)
    calls = {"attention": 0, "ring_forward": 0, "ring_backward": 0}
    try:
        with _ring_attention(mesh, rotate, calls), _no_fake_artifacts():
            mt = S._run_fsdp_memtracker(local, mesh)
            d = S._run_fsdp_dispatch(local, mesh) if use_dispatch else None
    finally:
        dist.destroy_process_group()
    layers = case["config"]["num_hidden_layers"]
    if calls["ring_forward"] < 2 * layers or calls["ring_backward"] < 2 * layers:  # two steps of every layer
        raise RuntimeError(f"{case['name']}: ring attention did not run in every layer ({calls})")
    m: dict = {"facts": mt.pop("facts"), "ring_calls": calls, "cp": cp, "rotate": rotate,
               "local_seq_len": local["seq_len"], "world_size": cp, "rank": rank}
    if d:
        a, b = mt["step2"]["peak_bytes"], d["step2"]["peak_bytes"]
        m["agreement"] = {"fsdp_memtracker_peak": a, "dispatch_peak": b, "rel_diff": (b - a) / a,
                          "phase_peaks_dispatch": d["step2"]["phase_peaks"]}
    pp = mt["step2"]["phase_peaks"]
    m.update(peak_bytes=mt["step2"]["peak_bytes"], peak_source="fsdp_memtracker", peak_phase=max(pp, key=pp.get),
             phase_peaks=pp, step1_peak_bytes=mt["step1"]["peak_bytes"],
             live_at_forward_end=mt["step2"]["live_at_forward_end"],
             breakdown_at_peak=mt["step2"]["breakdown_at_peak"],
             phase_peak_context=mt["step2"].get("phase_peak_context"))
    return m


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--case", action="append")
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--write", action="store_true", help=f"write {RESULTS_CP_PATH.name}")
    ap.add_argument("--no-dispatch", action="store_true", help="FSDPMemTracker only (faster)")
    args = ap.parse_args(argv)
    if args.list:
        for c in CP_CASES:
            print(f"{c['name']}  [cp={c['cp']['degree']}, {c['cp']['rotate']}, seq_len {c['seq_len']}]")
        return 0
    names = [c["name"] for c in CP_CASES] if args.all else args.case
    if not names:
        print("name --case or --all (see --list)")
        return 2
    results = []
    for n in names:
        case = get_cp_case(n)
        t0 = time.time()
        m = measure_cp_case(case, use_dispatch=not args.no_dispatch)
        agree = f"  [vs dispatch {m['agreement']['rel_diff']:+.2e}]" if m.get("agreement") else ""
        print(f"{n}: peak {H._fmt(m['peak_bytes'])} in {m['peak_phase']}{agree}  [{time.time() - t0:.1f}s]",
              flush=True)
        results.append({"name": n, "inputs": case, "measured": m})
    if args.write:
        meta = {
            **H._versions(), "fake_device": S.DEVICE,
            "process_group": "fake (FakeStore), world_size = cp, rank cp - 1 (a worst rank); one 1-D mesh for FSDP2 and "
                             "ring attention",
            "artifacts_removed": "funcol.wait_tensor returns its input (CUDA's behaviour; the fake kernel copies it); "
                                 "DTensor sharding propagation's global-shape fake run outside the trackers",
            "context_parallel": "torch _context_parallel._attention: _enable_cp_dtensor_dispatcher, the model's "
                                "attention as aten._scaled_dot_product_efficient_attention on DTensors Shard(2) "
                                "(ring forward and backward counted per run), load balancing on (torch default), "
                                "rotate method per case; the model runs seq_len / cp tokens",
            "sharding": "as results_fsdp.json: fully_shard every decoder layer then the root; *-mixed under "
                        "MixedPrecisionPolicy(bf16, fp32 reduce)",
            "peak": "rank cp - 1, second training step, bytes of live tensor storages (FSDPMemTracker)",
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        }
        data = {"metadata": meta, "cases": results}
        if not args.all and RESULTS_CP_PATH.exists():
            old = json.loads(RESULTS_CP_PATH.read_text())
            keep = [c for c in old["cases"] if c["name"] not in set(names)]
            order = {c["name"]: i for i, c in enumerate(CP_CASES)}
            data["cases"] = sorted(keep + results, key=lambda c: order.get(c["name"], 1e9))
        RESULTS_CP_PATH.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {RESULTS_CP_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
