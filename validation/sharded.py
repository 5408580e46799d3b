"""Per-GPU peaks of FSDP2-sharded training, measured on fake CPU tensors.

The way torchtitan's memory estimator does it: a fake process group (FakeStore +
`init_process_group("fake", rank=0, world_size=N)`), FSDP2 `fully_shard` on every
decoder layer and then on the root (default options: non-root layers reshard after
forward, the root does not; *-mixed cases with torchtitan's MixedPrecisionPolicy unless
they say otherwise), FakeTensorMode, and
`FSDPMemTracker` for rank 0. The training loop, inputs and precision handling are the
harness's own (`validation.measure._train_steps`); see validation/README.md.

    python -m validation.harness --sharded --list
    python -m validation.harness --sharded --case fsdp4-tiny-llama-bf16
    python -m validation.harness --sharded --all --write    # validation/results_fsdp.json
    python -m validation.harness --sharded --check
"""

from __future__ import annotations

import contextlib
import copy
import datetime as _dt
import json
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch._subclasses.fake_tensor import FakeTensorMode

from validation import measure as H
from validation.cases import SHARDED_CASES, SHARDED_CHECK_DEFAULT, get_sharded_case

RESULTS_FSDP_PATH = Path(__file__).with_name("results_fsdp.json")
DEVICE = "cpu"  # fake CPU: see README ("Fake device is CPU")


# --------------------------------------------------------------------------------------
# Process group, model, sharding
# --------------------------------------------------------------------------------------

def _init_fake_pg(world_size: int):
    """Fresh fake process group of `world_size` (this process is rank 0) and a 1-D mesh.

    The mesh is built outside FakeTensorMode: DeviceMesh reads its rank tensor with
    `.tolist()`, which FakeTensorMode refuses (DataDependentOutputException on
    aten._local_scalar_dense), and fully_shard's default mesh would be built inside it.
    """
    from torch.distributed.device_mesh import init_device_mesh
    from torch.testing._internal.distributed.fake_pg import FakeStore

    if dist.is_initialized():
        dist.destroy_process_group()
    dist.init_process_group("fake", rank=0, world_size=world_size, store=FakeStore())
    return init_device_mesh(DEVICE, (world_size,))


def _decoder_layers(model):
    base = model.get_base_model() if hasattr(model, "get_base_model") else model  # a peft model: its base
    inner = getattr(base, "model", base)
    return inner.layers


def _make_optimizer(case: dict, params):
    name = case.get("optimizer", "adamw")
    flags = {"foreach": dict(foreach=True), "fused": dict(fused=True),
             "for-loop": dict(foreach=False)}[case.get("optimizer_impl", "foreach")]
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-4, **flags)
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-4, **flags)
    if name == "sgd-momentum":
        return torch.optim.SGD(params, lr=1e-4, momentum=0.9, **flags)
    raise ValueError(f"unknown optimizer {name!r}")


def _build_sharded(case: dict, mesh):
    """Model (sharded), optimizer over the sharded params, inputs. Call under FakeTensorMode.

    Order as in torchtitan: dtype cast ("bf16": model.to(bf16) in measure._build), then
    activation checkpointing of each decoder layer (checkpoint_wrapper, non-reentrant,
    preserve_rng_state=False), then fully_shard per layer, then fully_shard(root).
    """
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
    from torch.distributed.fsdp import fully_shard

    if case["finetune"] == "qlora":
        raise ValueError("sharded cases are full fine-tuning or LoRA (peft, then fully_shard as RL trainers do)")
    base_case = dict(case, recompute="none")  # recompute is applied here, torchtitan's way
    with H._SkipRandomInit(), H._fake_safe_module_to():
        model, opt, ids, _ = H._build(base_case, DEVICE)
    del opt  # built over the unsharded params; rebuilt below over the DTensor shards
    facts = H._model_facts(model, base_case, None)

    layers = _decoder_layers(model)
    if case["recompute"] == "selective":
        from validation import recipes
        recipes.apply_selective_ac(layers)
        facts["gradient_checkpointing"] = True
        facts["checkpoint_kwargs"] = {"impl": "checkpoint_wrapper + torchtitan op-level SAC policy"}
    elif case["recompute"] == "full":
        for i in range(len(layers)):
            layers[i] = checkpoint_wrapper(layers[i], preserve_rng_state=False)
        facts["gradient_checkpointing"] = True
        facts["checkpoint_kwargs"] = {"impl": "checkpoint_wrapper", "use_reentrant": False,
                                      "preserve_rng_state": False}
    elif case["recompute"] != "none":
        raise ValueError(f"unknown recompute {case['recompute']!r}")

    kw = {}
    if H.fsdp_mixed_precision(case):  # torchtitan: MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)
        from torch.distributed.fsdp import MixedPrecisionPolicy
        kw["mp_policy"] = MixedPrecisionPolicy(param_dtype=H._DTYPES[case["precision"][:4]],
                                               reduce_dtype=torch.float32)
        facts["mp_policy"] = {"param_dtype": case["precision"][:4], "reduce_dtype": "fp32"}
    for layer in layers:
        fully_shard(layer, mesh=mesh, **kw)
    fully_shard(model, mesh=mesh, **kw)
    opt = _make_optimizer(case, [p for p in model.parameters() if p.requires_grad])

    local = [p.to_local() for p in model.parameters()]
    facts["sharded_param_bytes_rank0"] = sum(t.untyped_storage().nbytes() for t in local)
    facts["sharded_param_numel_rank0"] = sum(t.numel() for t in local)
    facts["world_size"] = mesh.size()
    facts["fsdp_units"] = 1 + len(layers)
    return model, opt, ids, facts


def _unit_bytes(model) -> dict:
    """Unsharded bytes of each FSDP unit (the root's own params and each layer)."""
    from torch.distributed.fsdp import FSDPModule
    out = {}
    for name, mod in model.named_modules():
        if not isinstance(mod, FSDPModule):
            continue
        pg = mod._get_fsdp_state()._fsdp_param_group
        if pg is None:
            continue
        out[name or "<root>"] = {
            "unsharded_bytes": sum(fp._orig_size.numel() * fp.sharded_param.element_size()
                                   for fp in pg.fsdp_params),
            "sharded_bytes_rank0": sum(fp.sharded_param.to_local().untyped_storage().nbytes()
                                       for fp in pg.fsdp_params),
        }
    return out


def _units_unsharded_now(model) -> list[str]:
    """Names of the FSDP units whose unsharded parameter storage is allocated right now."""
    from torch.distributed.fsdp import FSDPModule
    names = []
    for name, mod in model.named_modules():
        if not isinstance(mod, FSDPModule):
            continue
        pg = mod._get_fsdp_state()._fsdp_param_group
        if pg is None:
            continue
        alive = False
        for fp in pg.fsdp_params:
            up = getattr(fp, "_unsharded_param", None)
            if up is not None and up.untyped_storage().size() > 0:
                alive = True
                break
        if alive:
            names.append(name or "<root>")
    return names


# --------------------------------------------------------------------------------------
# FSDPMemTracker run
# --------------------------------------------------------------------------------------

class _FSDPAdapter(H._MemTrackerAdapter):
    """The harness's phase-peak adapter on top of FSDPMemTracker.

    Also notes, whenever the phase peak rises, which FSDP units hold unsharded params and
    whether autograd is in backward: that is the "what is in flight at the peak" answer.
    """

    def __init__(self, model, optimizer, inputs):  # noqa: D401 - no super().__init__
        from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker
        self.model = model
        self.mt = FSDPMemTracker(model, optimizer)
        self.mt.track_inputs((inputs,))
        self.phase = None
        self.phase_peaks = {}
        self.phase_breakdowns = {}
        self.phase_context = {}
        self._ctx = None
        orig = self.mt._update_peak_stats
        mt = self.mt

        def update_peak_stats(peak_state):
            before = dict(mt._peak_mem)
            orig(peak_state)
            if any(mt._peak_mem.get(d, 0) > v for d, v in before.items()) or (
                    not before and mt._peak_mem):
                self._ctx = {
                    "unsharded_units": _units_unsharded_now(model),
                    "in_backward": bool(mt._mod_tracker.is_bw),
                    "module_stack": sorted(mt._mod_tracker.parents - {"Global"}),
                }

        self.mt._update_peak_stats = update_peak_stats

    def _close_phase(self) -> None:
        if self.phase is None:
            return
        total, bd = self._one_device(self.mt.get_tracker_snapshot("peak"))
        if total >= self.phase_peaks.get(self.phase, -1):
            self.phase_peaks[self.phase] = total
            self.phase_breakdowns[self.phase] = bd
            self.phase_context[self.phase] = self._ctx

    def begin_phase(self, name: str) -> None:
        self._close_phase()
        self._reset_peak_to_current()
        self._ctx = {"unsharded_units": _units_unsharded_now(self.model),
                     "in_backward": bool(self.mt._mod_tracker.is_bw), "module_stack": [],
                     "note": "phase start"}
        self.phase = name


_UNIT_STATES = ("Peak Forward", "After Pre-Forward", "After Post-Forward", "Peak Backward",
                "After Pre-Backward", "Before Post-Backward", "After Post-Backward")


def _unit_snapshots(mt, model) -> dict:
    """FSDPMemTracker's per-unit snapshots (step 2) for the root and the middle layer:
    the breakdown at the unit's own forward/backward peak and around its FSDP hooks.
    This is where "what is in flight while one layer runs" can be read off."""
    layers = _decoder_layers(model)
    mid = len(layers) // 2
    picks = {"<root>": model, f"model.layers.{mid}": layers[mid]}
    out = {}
    for name, mod in picks.items():
        stat = mt.memory_tracking.get(mod)
        if stat is None:
            continue
        snaps = {}
        for st, lst in stat.snapshots.items():
            if st.value in _UNIT_STATES and lst:
                snaps[st.value] = H._MemTrackerAdapter._one_device(lst[-1])[1]
        out[name] = snaps
    return out


def _run_fsdp_memtracker(case: dict, mesh) -> dict:
    t0 = time.time()
    with FakeTensorMode(), H._unpacked_batch():
        model, opt, ids, facts = _build_sharded(case, mesh)
        facts["units"] = _unit_bytes(model)
        ad = _FSDPAdapter(model, opt, ids)
        rec: dict = {"step1": {}, "step2": {}}

        def on_step_start(step):
            if step == 1:
                rec["step1"].update(ad.start_second_step())
                ad.phase_context = {}
                rec["step2"]["live_at_step_start"], rec["step2"]["breakdown_at_step_start"] = \
                    ad.current()

        def on_phase(step, name):
            ad.begin_phase(name)

        def on_fw_end(step, out):
            key = "step1" if step == 0 else "step2"
            total, bd = ad.current()
            rec[key]["live_at_forward_end"] = total
            rec[key]["breakdown_at_forward_end"] = bd
            rec[key]["unsharded_units_at_forward_end"] = _units_unsharded_now(model)
            rec[key]["logits_dtype"] = str(out.logits.dtype) if out.logits is not None else None
            rec[key]["logits_bytes"] = out.logits.untyped_storage().nbytes() if out.logits is not None else 0

        with ad.mt:
            out = H._train_steps(model, opt, ids, case, DEVICE, on_phase, on_step_start,
                                 on_fw_end)
            ad.end()
            rec["step2"]["live_at_end"], rec["step2"]["breakdown_at_end"] = ad.current()
        rec["step2"]["unit_snapshots"] = _unit_snapshots(ad.mt, model)
        rec["opt_state_bytes_rank0"] = sum(
            (v.to_local() if hasattr(v, "to_local") else v).untyped_storage().nbytes()
            for s in opt.state.values() for v in s.values()
            if isinstance(v, torch.Tensor) and v.dim() > 0)
        del out
    rec["step2"].update(ad.peak_summary(), phase_peak_context=ad.phase_context)
    rec["facts"] = facts
    rec["seconds"] = round(time.time() - t0, 2)
    return rec


# --------------------------------------------------------------------------------------
# Dispatch tracker run (cross-check)
# --------------------------------------------------------------------------------------

class _ShardedLiveBytesTracker(H.LiveBytesTracker):
    """LiveBytesTracker that sees through DTensor and FSDP's storage resizes.

    - DTensor ops: return NotImplemented so DTensor desugars to local ops first and the
      mode sees those (as FSDPMemTracker does); otherwise the mode would see only the
      DTensor-level op and none of the local allocations.
    - `UntypedStorage.resize_` (FSDP2 frees/reallocates unsharded params and all-gather
      outputs that way) is not a dispatched op; it is wrapped while the mode is active.
    """

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        from torch.distributed.tensor import DTensor
        if any(t is DTensor for t in types):
            return NotImplemented
        return super().__torch_dispatch__(func, types, args, kwargs)

    def track(self, *objs) -> None:
        from torch.distributed.tensor import DTensor
        for obj in objs:
            if isinstance(obj, DTensor):
                self._add(obj.to_local().untyped_storage())
            else:
                super().track(obj)

    def __enter__(self):
        self._orig_resize = torch.UntypedStorage.resize_
        orig, tracker = self._orig_resize, self

        def resize_(st, size):
            r = orig(st, size)
            tracker._add(st)
            return r

        torch.UntypedStorage.resize_ = resize_
        return super().__enter__()

    def __exit__(self, *a):
        torch.UntypedStorage.resize_ = self._orig_resize
        return super().__exit__(*a)


def _run_fsdp_dispatch(case: dict, mesh) -> dict:
    t0 = time.time()
    with FakeTensorMode(), H._unpacked_batch():
        model, opt, ids, _ = _build_sharded(case, mesh)
        tr = _ShardedLiveBytesTracker()
        tr.track(model, ids)
        with tr:
            rec, out = H._tracked_steps(tr, model, opt, ids, case, DEVICE)
        del out
    rec["seconds"] = round(time.time() - t0, 2)
    return rec


# --------------------------------------------------------------------------------------
# One case
# --------------------------------------------------------------------------------------

def measure_sharded_case(case: dict, use_dispatch: bool = True) -> dict:
    """FSDPMemTracker (primary) and, unless disabled, the dispatch tracker for one case."""
    ws = case["fsdp"]["world_size"]
    mesh = _init_fake_pg(ws)
    try:
        m: dict = {}
        try:
            mt = _run_fsdp_memtracker(case, mesh)
            m["facts"] = mt.pop("facts")
            m["fsdp_memtracker"] = mt
        except Exception as e:  # recorded: then the dispatch tracker is primary
            m["fsdp_memtracker"] = None
            m["fsdp_memtracker_error"] = f"{type(e).__name__}: {e}"
        d = _run_fsdp_dispatch(case, mesh) if (use_dispatch or m["fsdp_memtracker"] is None) \
            else None
        m["dispatch"] = d
    finally:
        dist.destroy_process_group()
    primary, src = (m["fsdp_memtracker"], "fsdp_memtracker") if m["fsdp_memtracker"] \
        else (d, "dispatch")
    if m["fsdp_memtracker"] and d:
        a, b = m["fsdp_memtracker"]["step2"]["peak_bytes"], d["step2"]["peak_bytes"]
        m["agreement"] = {"fsdp_memtracker_peak": a, "dispatch_peak": b,
                          "rel_diff": (b - a) / a if a else None,
                          "phase_peaks_dispatch": d["step2"]["phase_peaks"]}
    pp = primary["step2"]["phase_peaks"]
    m["world_size"] = ws
    m["rank"] = 0
    m["peak_bytes"] = primary["step2"]["peak_bytes"]
    m["peak_source"] = src
    m["peak_phase"] = max(pp, key=pp.get)
    m["phase_peaks"] = pp
    m["step1_peak_bytes"] = primary["step1"]["peak_bytes"]
    m["live_at_forward_end"] = primary["step2"]["live_at_forward_end"]
    if src == "fsdp_memtracker":
        m["breakdown_at_peak"] = primary["step2"]["breakdown_at_peak"]
    return m


# --------------------------------------------------------------------------------------
# CLI (called from validation.harness --sharded)
# --------------------------------------------------------------------------------------

def _load() -> dict | None:
    return json.loads(RESULTS_FSDP_PATH.read_text()) if RESULTS_FSDP_PATH.exists() else None


def _line(name: str, m: dict) -> str:
    pp = ", ".join(f"{k}={v / 2**20:.1f}MiB" for k, v in m["phase_peaks"].items())
    extra = ""
    if m.get("agreement"):
        extra = f"  [vs dispatch {m['agreement']['rel_diff']:+.2e}]"
    return (f"{name} (ws={m['world_size']}): peak {H._fmt(m['peak_bytes'])} in "
            f"{m['peak_phase']} ({pp}){extra}")


def main_sharded(args) -> int:
    if args.list:
        for c in SHARDED_CASES:
            print(f"{c['name']}  [world_size={c['fsdp']['world_size']}]")
        return 0

    if args.check:
        recorded = _load()
        if recorded is None:
            print(f"no {RESULTS_FSDP_PATH.name} to check against")
            return 2
        by_name = {c["name"]: c for c in recorded["cases"]}
        failed = 0
        for n in args.case or SHARDED_CHECK_DEFAULT:
            if n not in by_name:
                print(f"{n}: not in {RESULTS_FSDP_PATH.name}"); failed += 1; continue
            old = by_name[n]["measured"]
            new = measure_sharded_case(get_sharded_case(n), use_dispatch=False)
            a, b = old["peak_bytes"], new["peak_bytes"]
            if a == b:
                verdict = "exact match"
            elif abs(b - a) <= H.CHECK_REL_TOL * a:
                verdict = f"within 0.1% ({(b - a) / a:+.2e})"
            else:
                verdict = f"MISMATCH ({(b - a) / a:+.2e})"; failed += 1
            print(f"{n}: recorded {a:,}  measured {b:,}  [{old['peak_source']}]  {verdict}")
        return 1 if failed else 0

    names = [c["name"] for c in SHARDED_CASES] if args.all else args.case
    if not names:
        print("--sharded: name --case or --all (see --sharded --list)")
        return 2
    results = []
    for n in names:
        case = get_sharded_case(n)
        t0 = time.time()
        m = measure_sharded_case(case, use_dispatch=not args.no_memtracker)
        print(_line(n, m) + f"  [{time.time() - t0:.1f}s]", flush=True)
        results.append({"name": n, "inputs": case, "measured": m})

    if args.write:
        meta = {
            **H._versions(),
            "fake_device": DEVICE,
            "process_group": "torch.testing._internal.distributed.fake_pg.FakeStore + "
                             "init_process_group('fake', rank=0, world_size=N); "
                             "init_device_mesh('cpu', (N,)) built outside FakeTensorMode",
            "sharding": "FSDP2 fully_shard(layer) for every decoder layer, then "
                        "fully_shard(root); default options (reshard_after_forward=None: "
                        "layers reshard after forward, the root does not), no CPU offload; "
                        "*-mixed cases: MixedPrecisionPolicy(param_dtype=16-bit, reduce_dtype=fp32) "
                        "without autocast unless fsdp.mp_policy is False (then fp32 params under "
                        "autocast, no policy)",
            "recompute_full": "checkpoint_wrapper(layer, preserve_rng_state=False) "
                              "(non-reentrant) on every decoder layer before fully_shard",
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "tracker": "torch.distributed._tools.fsdp2_mem_tracker.FSDPMemTracker (rank 0); "
                       "cross-checked by validation.sharded._ShardedLiveBytesTracker "
                       "(dispatch); raw storage nbytes on CPU",
            "peak": "rank 0, second training step, bytes of live tensor storages",
            "semantics": ("as results.json: AutoModelForCausalLM.from_config, "
                          "labels=input_ids, use_cache=False, AdamW over the sharded params "
                          "(optimizer_impl per case), train(), dropout 0, out kept alive "
                          "across steps, zero_grad(set_to_none=True)"),
        }
        if args.all:
            data = {"metadata": meta, "cases": results}
        else:
            data = _load() or {"metadata": meta, "cases": []}
            data["metadata"] = meta
            keep = [c for c in data["cases"] if c["name"] not in set(names)]
            order = {c["name"]: i for i, c in enumerate(SHARDED_CASES)}
            data["cases"] = sorted(keep + results, key=lambda c: order.get(c["name"], 1e9))
        RESULTS_FSDP_PATH.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {RESULTS_FSDP_PATH}")
    return 0
