"""Measured truth for memlib, the measuring part: peak memory of two real training steps.

Builds transformers' own model classes from config dicts under FakeTensorMode (no real
memory, no weights), runs the reference training loop twice and records the second step's
peak. The pieces every measuring script shares live here (the trackers, the model builder,
the training loop, measure_case, the versions and summary lines): validation/harness.py
(the command line), sharded.py, families.py, context_parallel.py, gpu_check.py and
litgpt_probe.py import this module, and it imports none of them, so validation/ has no
import cycle (tests/test_layers.py checks). See validation/README.md for the semantics.
"""

from __future__ import annotations

import contextlib
import platform
import subprocess
import sys
import time
import types
import weakref

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.weak import WeakIdKeyDictionary

from validation import recipes

CHECK_REL_TOL = 1e-3  # --check passes exactly, or within 0.1% (and says which)
CUDA_BLOCK = 512  # the CUDA caching allocator rounds every block up to this


# --------------------------------------------------------------------------------------
# Fake device
# --------------------------------------------------------------------------------------

_PROBE = r"""
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
with FakeTensorMode():
    w = torch.empty(8, 8, device="cuda", requires_grad=True)
    x = torch.ones(2, 8).to("cuda")
    (x @ w).sum().backward()
    w.detach().copy_(w.grad)
print("ok")
"""


def probe_fake_cuda() -> tuple[bool, str]:
    """Can this torch build run a training step on *fake* CUDA tensors?

    Run in a subprocess because on CPU-only builds the failure can be a C++ abort
    (std::terminate from the autograd engine), which would kill this process.
    """
    try:
        p = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True,
                           text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return False, "fake-CUDA probe timed out"
    if p.returncode == 0 and "ok" in p.stdout:
        return True, "fake CUDA tensors work on this build"
    err = [ln for ln in p.stderr.splitlines() if "Error" in ln or "error" in ln]
    return False, (f"fake-CUDA probe failed (rc={p.returncode}): "
                   + (err[-1].strip() if err else p.stderr.strip()[-300:]))


_aten = torch.ops.aten
_RANDOM_INPLACE = {
    _aten.uniform_.default, _aten.normal_.default, _aten.bernoulli_.float,
    _aten.exponential_.default, _aten.random_.default, getattr(_aten.random_, "from"),
    _aten.random_.to, _aten.log_normal_.default, _aten.geometric_.default,
    _aten.cauchy_.default,
}


class _SkipRandomInit(TorchDispatchMode):
    """Turn in-place random fills into no-ops during model construction.

    Values are meaningless under FakeTensorMode, and the random decompositions need a
    real generator for the fake device (which a CPU-only build lacks for CUDA).
    """

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in _RANDOM_INPLACE:
            return args[0]
        return func(*args, **(kwargs or {}))


# --------------------------------------------------------------------------------------
# Dispatch live-bytes tracker
# --------------------------------------------------------------------------------------

class LiveBytesTracker(TorchDispatchMode):
    """Live tensor bytes seen through dispatch, counting each storage once.

    Why not only MemTracker: it installs grad hooks on every parameter, which fails for
    frozen (requires_grad=False) parameters, so LoRA runs need this. It is deliberately
    simple: bytes = sum of nbytes of every untyped storage that is alive, where a storage
    enters when an op returns a tensor on it (or via `track`) and leaves when its Python
    storage object is finalized (PyTorch keeps that object alive as long as the C++
    storage is, so the finalizer fires exactly when the memory would be freed).

    Also keeps a second sum with every storage rounded up to 512 bytes, which is what the
    CUDA caching allocator charges; useful when comparing with a real GPU.
    """

    def __init__(self) -> None:
        super().__init__()
        self._sizes = WeakIdKeyDictionary()  # storage -> [nbytes, rounded]
        self.live = 0
        self.live_rounded = 0
        self.peak = 0
        self.peak_rounded = 0
        self.phase: str | None = None
        self.phase_peaks: dict[str, int] = {}
        self.attention_ops: set[str] = set()

    # -- accounting
    def _add(self, st: torch.UntypedStorage) -> None:
        n = st.nbytes()
        rec = self._sizes.get(st)
        if rec is None:
            rec = [n, -(-n // CUDA_BLOCK) * CUDA_BLOCK]
            self._sizes[st] = rec
            self.live += rec[0]
            self.live_rounded += rec[1]
            weakref.finalize(st, self._release, rec)
        elif rec[0] != n:  # resized in place
            r = -(-n // CUDA_BLOCK) * CUDA_BLOCK
            self.live += n - rec[0]
            self.live_rounded += r - rec[1]
            rec[0], rec[1] = n, r
        self._bump()

    def _release(self, rec: list) -> None:
        self.live -= rec[0]
        self.live_rounded -= rec[1]

    def _bump(self) -> None:
        if self.live > self.peak:
            self.peak = self.live
        if self.live_rounded > self.peak_rounded:
            self.peak_rounded = self.live_rounded
        if self.phase is not None and self.live > self.phase_peaks.get(self.phase, 0):
            self.phase_peaks[self.phase] = self.live

    def track(self, *objs) -> None:
        """Count tensors that already exist (params, grads, optimizer states, inputs)."""
        for obj in objs:
            if isinstance(obj, torch.nn.Module):
                for t in list(obj.parameters()) + list(obj.buffers()):
                    self.track(t)
                    if getattr(t, "grad", None) is not None:
                        self.track(t.grad)
            elif isinstance(obj, torch.optim.Optimizer):
                for state in obj.state.values():
                    self.track(*[v for v in state.values() if isinstance(v, torch.Tensor)])
            elif isinstance(obj, torch.Tensor) and obj.device.type != recipes.HOST_DEVICE:
                self._add(obj.untyped_storage())

    # -- control
    def reset_peak(self) -> None:
        self.peak = self.live
        self.peak_rounded = self.live_rounded
        self.phase_peaks = {}

    def begin_phase(self, name: str) -> None:
        self.phase = name
        self.phase_peaks[name] = max(self.phase_peaks.get(name, 0), self.live)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if "attention" in func.name():
            self.attention_ops.add(func.name())
        out = func(*args, **(kwargs or {}))
        for t in _flat_tensors(out):
            if t.device.type != recipes.HOST_DEVICE:  # offloaded activations live in host memory
                self._add(t.untyped_storage())
        return out


def _flat_tensors(x):
    from torch.utils._pytree import tree_leaves
    return [t for t in tree_leaves(x) if isinstance(t, torch.Tensor)]


# --------------------------------------------------------------------------------------
# MemTracker adapter
# --------------------------------------------------------------------------------------

class _MemTrackerAdapter:
    """Phase peaks and breakdowns from torch's MemTracker.

    MemTracker has one peak for its whole context and refuses a second forward of the
    root module; resetting its peak and module stats between steps/phases uses private
    fields (`_peak_mem`, `_peak_mem_snap`), checked against the torch version recorded in
    results.json.
    """

    def __init__(self, model, optimizer, inputs):
        from torch.distributed._tools.mem_tracker import MemTracker
        self.mt = MemTracker()
        self.mt.track_external(model, optimizer, inputs)
        self.phase: str | None = None
        self.phase_peaks: dict[str, int] = {}
        self.phase_breakdowns: dict[str, dict] = {}

    @staticmethod
    def _one_device(snap: dict) -> tuple[int, dict]:
        snap = {d: v for d, v in snap.items() if torch.device(d).type != recipes.HOST_DEVICE}
        if not snap:
            return 0, {}
        if len(snap) != 1:
            raise RuntimeError(f"expected one device, MemTracker saw {list(snap)}")
        (dev_snap,) = snap.values()
        breakdown = {str(getattr(k, "name", k)): int(v) for k, v in dev_snap.items()}
        return int(breakdown.get("Total", 0)), breakdown

    def _close_phase(self) -> None:
        if self.phase is None:
            return
        total, bd = self._one_device(self.mt.get_tracker_snapshot("peak"))
        if total >= self.phase_peaks.get(self.phase, -1):
            self.phase_peaks[self.phase] = total
            self.phase_breakdowns[self.phase] = bd

    def _reset_peak_to_current(self) -> None:
        cur = self.mt.get_tracker_snapshot("current")
        self.mt._peak_mem_snap = cur
        self.mt._peak_mem = {d: s["Total"] for d, s in cur.items()}

    def begin_phase(self, name: str) -> None:
        self._close_phase()
        self._reset_peak_to_current()
        self.phase = name

    def end(self) -> None:
        self._close_phase()
        self.phase = None

    def current(self) -> tuple[int, dict]:
        return self._one_device(self.mt.get_tracker_snapshot("current"))

    def start_second_step(self) -> dict:
        """Close step 1 and return its peak figures; clear the per-phase records and
        MemTracker's module stats (it raises on a second forward of the root otherwise)."""
        self.end()
        first = {"peak_bytes": max(self.phase_peaks.values()), "phase_peaks": dict(self.phase_peaks)}
        self.phase_peaks, self.phase_breakdowns = {}, {}
        self.mt.reset_mod_stats()
        return first

    def peak_summary(self) -> dict:
        """Step 2's overall peak, the phase holding it and the per-phase figures."""
        pp = self.phase_peaks
        peak_phase = max(pp, key=pp.get)
        return {"peak_bytes": pp[peak_phase], "phase_peaks": dict(pp), "peak_phase": peak_phase,
                "breakdown_at_peak": self.phase_breakdowns[peak_phase], "phase_breakdowns": self.phase_breakdowns}


# --------------------------------------------------------------------------------------
# Building and running a case
# --------------------------------------------------------------------------------------

@contextlib.contextmanager
def _fake_safe_module_to():
    """Let `nn.Module.to` work on fake parameters while a model is being built.

    Module.to moves fake parameters with torch.utils.swap_tensors, which refuses any
    tensor with a weakref attached; under FakeTensorMode every nn.Parameter is held
    weakly by the fake-tensor converter's memo, so plain `Linear(4, 4).to(bf16)` fails
    ("Cannot swap t1 because it has weakref associated with it", torch 2.13). This
    replacement does what Module.to does to memory (new storages in the target
    dtype/device, old ones freed, tied parameters kept tied, a no-op where nothing
    changes); transformers' `model.to(bf16)` and peft's adapter placement both go
    through it. Real tensors are never affected: it is only active during fake builds.
    """
    orig = torch.nn.Module.to

    def to(self, *args, **kwargs):
        device, dtype, non_blocking, _ = torch._C._nn._parse_to(*args, **kwargs)

        def convert(t):
            if dtype is not None and (t.is_floating_point() or t.is_complex()):
                return t.to(device, dtype, non_blocking)
            return t.to(device, non_blocking=non_blocking)

        memo: dict[int, torch.Tensor] = {}
        with torch.no_grad():
            for mod in self.modules():
                for key, p in list(mod._parameters.items()):
                    if p is None:
                        continue
                    if id(p) not in memo:
                        q = convert(p)
                        memo[id(p)] = p if q is p else torch.nn.Parameter(
                            q, requires_grad=p.requires_grad)
                    mod._parameters[key] = memo[id(p)]
                for key, b in list(mod._buffers.items()):
                    if b is None:
                        continue
                    if id(b) not in memo:
                        memo[id(b)] = convert(b)
                    mod._buffers[key] = memo[id(b)]
        return self

    torch.nn.Module.to = to
    try:
        yield
    finally:
        torch.nn.Module.to = orig


def _build(case: dict, device: str):
    """Model, optimizer and inputs for a case, created on `device` (fake or real)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = dict(case["config"])
    cfg_obj = AutoConfig.for_model(cfg.pop("model_type"), **cfg)
    cfg_obj.use_cache = False
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(
            cfg_obj, attn_implementation=case["attention"], dtype=torch.float32)
    # Full fine-tuning: "bf16"/"fp16" everything in that dtype; "fp32" and "*-mixed" fp32 weights
    # (AMP casts inside autocast; fp16-mixed runs without a GradScaler, whose state is a few
    # scalars). LoRA: the frozen base in `base_dtype(case)` (16-bit under *-mixed, as every
    # recipe loads it), adapters in case["adapter_dtype"].
    if case["precision"] not in ("fp32", "bf16", "fp16", "bf16-mixed", "fp16-mixed"):
        raise ValueError(f"unknown precision {case['precision']!r}")
    weights = base_dtype(case)
    if case["finetune"] == "qlora":  # a 16-bit load, then every decoder projection in 4 bits (validation/qlora.py)
        from validation import qlora
        q = case.get("qlora") or {}
        sixteen = _DTYPES[case["precision"][:4]]
        model.to(sixteen)
        qlora.quantize_projections(model, sixteen, q.get("double_quant", True), device,
                                   backend=q.get("backend", "bitsandbytes"))
        if weights == torch.float32:  # peft's prepare_model_for_kbit_training: the non-4-bit params in fp32
            from peft import prepare_model_for_kbit_training
            model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
    elif weights != torch.float32:
        model.to(weights)
    model.train()

    recompute_setting = None
    if case["recompute"] == "full":
        recompute_setting = {"use_reentrant": False}
        # transformers 5 renamed the method; the old one still works but warns.
        enable = getattr(model, "activation_checkpointing_enable", None)
        if enable is not None:
            enable(activation_checkpointing_kwargs=recompute_setting)
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=recompute_setting)
    elif case["recompute"] == "selective":  # torchtitan's op-level SAC on every decoder layer
        recipes.apply_selective_ac(model.model.layers)
        recompute_setting = {"impl": "checkpoint_wrapper + torchtitan op-level SAC policy"}
    elif case["recompute"] != "none":
        raise ValueError(f"unknown recompute {case['recompute']!r}")

    if case["finetune"] in ("lora", "qlora"):
        from peft import LoraConfig, get_peft_model
        lc = case["lora"]
        adapters = case.get("adapter_dtype", "fp32")
        if adapters != "fp32" and _DTYPES[adapters] != weights:
            raise ValueError(f"adapter_dtype {adapters!r} needs a {adapters} base (peft gives adapters the base "
                             "dtype or, with autocast_adapter_dtype=True, fp32)")
        model = get_peft_model(
            model,
            LoraConfig(r=lc["r"], lora_alpha=lc["alpha"], lora_dropout=lc.get("dropout", 0.0),
                       target_modules=list(lc["targets"]), task_type="CAUSAL_LM"),
            autocast_adapter_dtype=adapters == "fp32",
        )
        model.train()

    params = [p for p in model.parameters() if p.requires_grad]
    opt_name = case.get("optimizer", "adamw")
    impl = case.get("optimizer_impl", "foreach")
    flags = {"foreach": dict(foreach=True), "fused": dict(fused=True), "for-loop": dict(foreach=False)}[impl]
    if opt_name == "adamw":
        opt = torch.optim.AdamW(params, lr=1e-4, **flags)
    elif opt_name == "sgd":
        opt = torch.optim.SGD(params, lr=1e-4, **flags)
    elif opt_name == "sgd-momentum":
        opt = torch.optim.SGD(params, lr=1e-4, momentum=0.9, **flags)
    elif opt_name == "adafactor":
        opt = torch.optim.Adafactor(params, lr=1e-2, **flags)
    else:
        raise ValueError(f"unknown optimizer {opt_name!r}")

    # Token values do not matter for memory; zeros avoid a random generator on fake CUDA.
    ids = torch.zeros(case["micro_batch"], case["seq_len"], dtype=torch.long, device=device)
    return model, opt, ids, recompute_setting


def _model_facts(model, case: dict, recompute_setting) -> dict:
    ps = list(model.parameters())  # parameters() already de-duplicates tied weights
    dtypes = sorted({str(p.dtype) for p in ps})
    trainable = [p for p in ps if p.requires_grad]
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    inner = getattr(base, "model", base)
    tied = (getattr(base, "lm_head", None) is not None
            and base.lm_head.weight is inner.embed_tokens.weight)
    return {
        "model_class": type(base).__name__,
        "param_count": sum(p.numel() for p in ps),
        "trainable_count": sum(p.numel() for p in trainable),
        "param_bytes": sum(p.numel() * p.element_size() for p in ps),
        "trainable_bytes": sum(p.numel() * p.element_size() for p in trainable),
        "param_dtypes": dtypes,
        "trainable_dtypes": sorted({str(p.dtype) for p in trainable}),
        "buffer_bytes": sum(b.numel() * b.element_size() for b in base.buffers()),
        "embeddings_tied": bool(tied),
        "attn_implementation": base.config._attn_implementation,
        "gradient_checkpointing": bool(getattr(
            base, "is_activation_checkpointing",
            getattr(base, "is_gradient_checkpointing", False))),
        "checkpoint_kwargs": recompute_setting,
    }


_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def base_dtype(case: dict) -> torch.dtype:
    """The dtype the model's weights are loaded in: the precision's own for full fine-tuning
    ("*-mixed" and "fp32": fp32); for LoRA the frozen base is 16-bit under "*-mixed" unless
    the case says base_dtype "fp32" (a model loaded without torch_dtype, trained under AMP)."""
    p = case["precision"]
    if case["finetune"] in ("lora", "qlora"):
        if case.get("base_dtype"):
            return _DTYPES[case["base_dtype"]]
        return torch.float32 if p == "fp32" else _DTYPES[p[:4]]
    return _DTYPES[p] if p in ("bf16", "fp16") else torch.float32


def fsdp_mixed_precision(case: dict) -> bool:
    """A sharded *-mixed case under FSDP2's MixedPrecisionPolicy (torchtitan's default): no autocast."""
    fsdp = case.get("fsdp")
    return bool(fsdp) and case["precision"].endswith("mixed") and fsdp.get("mp_policy", True)


def _autocast(case: dict, device_type: str):
    if case["precision"] in ("bf16-mixed", "fp16-mixed") and not fsdp_mixed_precision(case):
        return torch.autocast(device_type=device_type, dtype=_DTYPES[case["precision"][:4]])
    return contextlib.nullcontext()


def _forward(model, ids, case: dict, device_type: str, offload):
    """One forward with its loss, the way the case's recipe computes it. Returns an object
    with .loss and .logits (None when the loss never makes them); LitGPT's chunked head returns
    the logits only (.loss None): its loop computes the loss after the assignment."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    with _autocast(case, device_type):
        if case.get("loss", "full") == "chunked":  # Liger's fused linear cross-entropy (recipes.py)
            hidden = base.model(input_ids=ids).last_hidden_state
            loss = recipes.liger_fused_linear_cross_entropy(hidden, base.lm_head.weight, ids)
            return types.SimpleNamespace(loss=loss, logits=None)
        if case.get("loss", "full") == "chunked-head":  # LitGPT's chunked head (recipes.py); the loss follows
            logits = recipes.litgpt_chunked_head(base.model(input_ids=ids).last_hidden_state, base.lm_head)
            return types.SimpleNamespace(loss=None, logits=logits)
        if offload is not None:  # torchtune: the model's forward offloaded, the loss outside
            with offload:
                out = model(input_ids=ids)
            out.loss = base.loss_function(logits=out.logits, labels=ids, vocab_size=base.config.vocab_size)
            return out
        return model(input_ids=ids, labels=ids)


def _offload_manager(model, case: dict, device_type: str):
    """torchtune's get_act_offloading_ctx_manager: offload everything but the output head."""
    if not case.get("activation_offload"):
        return None
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    ctx = recipes.OffloadActivations(device_type, host=recipes.HOST_DEVICE if device_type == "cpu" else "cpu")
    noop = recipes.NoOffload()
    base.lm_head.register_forward_pre_hook(lambda *a: noop.__enter__())
    base.lm_head.register_forward_hook(lambda *a: noop.__exit__(None, None, None), always_call=True)
    return ctx


def _train_steps(model, opt, ids, case, device_type, on_phase, on_step_start, on_fw_end, on_micro=None):
    """The reference loop. `out` stays bound until the next forward returns, as in an
    ordinary training loop, so step 2's forward runs while step 1's logits are alive.
    With grad_accum > 1, that many forward/backward pairs per optimizer step (gradients
    accumulate in .grad); each phase's peak is the max over the micro-batches."""
    out = None
    offload = _offload_manager(model, case, device_type)
    dropout = recipes.cuda_dropout() if (case.get("lora") or {}).get("dropout") else contextlib.nullcontext()
    keeps = contextlib.nullcontext()
    if case["finetune"] == "qlora":
        from validation import qlora
        if qlora.keeps_input((case.get("qlora") or {}).get("backend", "bitsandbytes")):
            keeps = qlora.matmul4bit_keeps_input()
    with dropout, keeps, recipes.cuda_autocast_queries(device_type), recipes.cuda_sdpa_unequal_head_dims(device_type):
        for step in range(2):
            on_step_start(step)
            for micro in range(case.get("grad_accum", 1)):
                if micro and on_micro is not None:
                    on_micro()
                on_phase(step, "forward")
                out = _forward(model, ids, case, device_type, offload)
                if out.loss is None:  # LitGPT: `logits = model(...)` replaced the previous step's, then the loss
                    out.loss = recipes.litgpt_chunked_cross_entropy(out.logits, ids)
                on_fw_end(step, out)
                on_phase(step, "backward")
                out.loss.backward()
                if offload is not None:
                    offload.finish_backward()
            on_phase(step, "optimizer")
            opt.step()
            opt.zero_grad(set_to_none=True)
    return out


@contextlib.contextmanager
def _unpacked_batch():
    """Tell transformers the batch is not packed, which it cannot see under FakeTensorMode.

    With no attention_mask, transformers checks whether position_ids hold several packed
    sequences; it cannot read a fake tensor's values, so it assumes they might and builds
    an explicit (b, 1, s, s) causal mask, which every sdpa call then converts to a float
    mask and keeps for its backward (~2*L*s^2 bytes, 10% of a 4-layer model at s=8192).
    A real run sees position_ids = arange(s), skips the mask and calls sdpa with
    is_causal=True. Answering "not packed" reproduces the real run.
    """
    import transformers.masking_utils as mu
    original = mu.find_packed_sequence_indices
    mu.find_packed_sequence_indices = lambda position_ids: None
    try:
        yield
    finally:
        mu.find_packed_sequence_indices = original


def _tracked_steps(tr, model, opt, ids, case, device, fw_end_facts=None) -> tuple[dict, object]:
    """The reference loop under a dispatch tracker: step 1's peak, then step 2's peak, phase
    peaks and live bytes at step start, forward end and the end. Call inside `with tr:`."""
    rec: dict = {"step1": {}, "step2": {}}

    def on_step_start(step):
        if step == 1:
            rec["step1"].update(peak_bytes=tr.peak, phase_peaks=dict(tr.phase_peaks))
            tr.reset_peak()
            rec["step2"]["live_at_step_start"] = tr.live

    def on_phase(step, name):
        tr.begin_phase(name)

    def on_fw_end(step, out):
        key = "step1" if step == 0 else "step2"
        rec[key]["live_at_forward_end"] = tr.live
        if fw_end_facts is not None:
            rec[key].update(fw_end_facts(out))

    out = _train_steps(model, opt, ids, case, device, on_phase, on_step_start, on_fw_end)
    rec["step2"].update(peak_bytes=tr.peak, peak_bytes_rounded512=tr.peak_rounded,
                        phase_peaks=dict(tr.phase_peaks), live_at_end=tr.live)
    return rec, out


def _run_dispatch(case: dict, device: str) -> dict:
    t0 = time.time()
    fake = FakeTensorMode()
    with fake, _unpacked_batch():
        with _SkipRandomInit(), _fake_safe_module_to():
            model, opt, ids, rs = _build(case, device)
        facts = _model_facts(model, case, rs)
        tr = LiveBytesTracker()
        tr.track(model, opt, ids)

        def logits_facts(out) -> dict:
            if out.logits is None:  # a fused loss makes no logits
                return {"logits_dtype": None, "logits_bytes": 0, "loss_dtype": str(out.loss.dtype)}
            chunks = out.logits if isinstance(out.logits, list) else [out.logits]  # LitGPT's head: a list
            return {"logits_dtype": str(chunks[0].dtype),
                    "logits_bytes": sum({id(c.untyped_storage()): c.untyped_storage().nbytes() for c in chunks}.values()),
                    "loss_dtype": str(out.loss.dtype)}

        with tr:
            rec, out = _tracked_steps(tr, model, opt, ids, case, device, logits_facts)
            rec["attention_ops"] = sorted(tr.attention_ops)
            rec["opt_state_bytes"] = sum(
                v.untyped_storage().nbytes() for s in opt.state.values()
                for v in s.values() if isinstance(v, torch.Tensor) and v.dim() > 0)
        del out
    rec["facts"] = facts
    rec["seconds"] = round(time.time() - t0, 2)
    return rec


def _run_memtracker(case: dict, device: str) -> dict:
    t0 = time.time()
    fake = FakeTensorMode()
    with fake, _unpacked_batch():
        with _SkipRandomInit(), _fake_safe_module_to():
            model, opt, ids, _ = _build(case, device)
        ad = _MemTrackerAdapter(model, opt, ids)
        rec: dict = {"step1": {}, "step2": {}}

        def on_step_start(step):
            if step == 1:
                rec["step1"].update(ad.start_second_step())

        def on_phase(step, name):
            ad.begin_phase(name)

        def on_fw_end(step, out):
            key = "step1" if step == 0 else "step2"
            total, bd = ad.current()
            rec[key]["live_at_forward_end"] = total
            rec[key]["breakdown_at_forward_end"] = bd

        with ad.mt:  # MemTracker refuses a second forward of a module until its module stats are cleared
            out = _train_steps(model, opt, ids, case, device, on_phase, on_step_start, on_fw_end,
                               on_micro=ad.mt.reset_mod_stats)
            ad.end()
        del out
    rec["step2"].update(ad.peak_summary())
    rec["seconds"] = round(time.time() - t0, 2)
    return rec


def measure_case(case: dict, device: str, use_memtracker: bool = True) -> dict:
    """All measurements of one case on a fake `device`."""
    d = _run_dispatch(case, device)
    m = {
        "facts": d.pop("facts"),
        "dispatch": d,
    }
    if case["finetune"] != "full" or not use_memtracker:
        m["memtracker"] = None
        if case["finetune"] == "lora":
            m["memtracker_error"] = _memtracker_lora_error(case, device)
        primary, src = d, "dispatch"
    else:
        mt = _run_memtracker(case, device)
        m["memtracker"] = mt
        primary, src = mt, "memtracker"
        a, b = mt["step2"]["peak_bytes"], d["step2"]["peak_bytes"]
        m["agreement"] = {"memtracker_peak": a, "dispatch_peak": b,
                          "rel_diff": (b - a) / a if a else None}
    pp = d["step2"]["phase_peaks"]
    m["peak_bytes"] = primary["step2"]["peak_bytes"]
    m["peak_source"] = src
    m["peak_phase"] = max(pp, key=pp.get)  # from dispatch: same phases, also for LoRA
    m["phase_peaks"] = primary["step2"]["phase_peaks"]
    m["step1_peak_bytes"] = primary["step1"]["peak_bytes"]
    m["live_at_forward_end"] = primary["step2"]["live_at_forward_end"]
    return m


def _memtracker_lora_error(case: dict, device: str) -> str | None:
    """Why MemTracker is not used for LoRA: try it for one forward and keep the error."""
    try:
        with FakeTensorMode():
            with _SkipRandomInit(), _fake_safe_module_to():
                model, opt, ids, _ = _build(case, device)
            ad = _MemTrackerAdapter(model, opt, ids)
            with ad.mt, _autocast(case, device):
                model(input_ids=ids, labels=ids)
        return None
    except Exception as e:  # recorded, not swallowed: it is the reason for the fallback
        return f"{type(e).__name__}: {e}"


# --------------------------------------------------------------------------------------
# Real CUDA
# --------------------------------------------------------------------------------------

def measure_case_cuda(case: dict) -> dict:
    """Same loop on real tensors; torch.cuda.max_memory_allocated per phase of step 2."""
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    model, opt, ids, rs = _build(case, "cuda")
    ids = torch.randint(0, case["config"]["vocab_size"], ids.shape, device="cuda")
    facts = _model_facts(model, case, rs)
    rec: dict = {"phase_peaks": {}}
    state = {"phase": None}

    def close():
        if state["phase"] is not None:
            torch.cuda.synchronize()
            rec["phase_peaks"][state["phase"]] = torch.cuda.max_memory_allocated()

    def on_step_start(step):
        if step == 1:
            close()
            state["phase"] = None
            rec["step1_peak_bytes"] = max(rec["phase_peaks"].values())
            rec["phase_peaks"] = {}
            torch.cuda.reset_peak_memory_stats()

    def on_phase(step, name):
        close()
        torch.cuda.reset_peak_memory_stats()
        state["phase"] = name

    def on_fw_end(step, out):
        if step == 1:
            torch.cuda.synchronize()
            rec["live_at_forward_end"] = torch.cuda.memory_allocated()

    out = _train_steps(model, opt, ids, case, "cuda", on_phase, on_step_start, on_fw_end)
    close()
    del out
    pp = rec["phase_peaks"]
    rec.update(peak_bytes=max(pp.values()), peak_phase=max(pp, key=pp.get), facts=facts,
               device_name=torch.cuda.get_device_name())
    del model, opt
    torch.cuda.empty_cache()
    return rec


# --------------------------------------------------------------------------------------
# Versions and summary lines (every results file and script prints them the same way)
# --------------------------------------------------------------------------------------

def _versions() -> dict:
    import peft
    import transformers
    out = {"torch": torch.__version__, "transformers": transformers.__version__,
           "peft": peft.__version__, "python": platform.python_version()}
    try:
        import bitsandbytes
        out["bitsandbytes"] = bitsandbytes.__version__
    except ImportError:
        pass
    return out


def _fmt(n: int) -> str:
    return f"{n:,} B ({n / 2**30:.3f} GiB)"


def _summary_line(name: str, m: dict) -> str:
    pp = ", ".join(f"{k}={v / 2**20:.1f}MiB" for k, v in m["phase_peaks"].items())
    extra = ""
    if m.get("agreement"):
        extra = f"  [memtracker vs dispatch rel diff {m['agreement']['rel_diff']:+.2e}]"
    return f"{name}: peak {_fmt(m['peak_bytes'])} in {m['peak_phase']} ({pp}){extra}"
