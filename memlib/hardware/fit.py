"""Does it fit? A peak estimate against a GPU, with the memory PyTorch itself needs.

An estimate's peak counts the bytes tensors occupy. A real process also needs:
  * the CUDA context (driver state, kernels, cuBLAS/cuDNN workspaces): a few hundred MiB
    per process, more with many kernels loaded. Default 0.5 GiB, overridable.
  * allocator headroom: PyTorch's caching allocator reserves whole blocks and fragments,
    so reserved memory runs above allocated. Default 5% of the peak, overridable.
The capacity is what PyTorch reports as the card's total memory (a "V100 32GB" shows
31.74 GiB, an "A100 80GB" 79.15 GiB), recorded with its source for every catalog card.

What published runs say about the headroom (validation/published.jsonl, validation/README.md):
the only runs that publish both max_memory_allocated and max_memory_reserved are Answer.AI's
FSDP1 LoRA runs of Llama-2-7B on 2 GPUs (fsdp_qlora train.py @50efa1e): reserved 24% above
allocated at 512 tokens (10.24 vs 8.28 GiB) and 12% at 2048 (10.22 vs 9.16), a reserved peak
that includes what loading and wrapping cached before the peak statistics were reset.
torchtitan's FSDP2 runs publish reserved only, 8-14% above memlib's allocated estimate. So 5%
is too little for those FSDP runs; they are too few (and the FSDP1 ones confounded) to derive
a per-layout default, so the default stays 5% and FSDP users should pass
allocator_headroom=0.25 (the largest measured) to fits(), plan(), min_gpus(), plan_serving(), max_batch() or
the CLI's --allocator-headroom; plan()'s layouts keep it for max_micro_batch() and max_seq_len(). A GPU run of the FSDP2 cases with
max_memory_reserved (validation/gpu_check.py records it) would settle the value.

fits(..., allocator="caching") (or "expandable", for PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) replaces the
flat fraction by the caching allocator's fragmentation for a training estimate (memlib.hardware.allocator.reserved_bytes:
a fraction of the bytes the step allocates and frees again, fitted on those published reserved rows): the
reserved rows then read median 1.7% instead of 15.7% (benchmarks/published.py).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable
from fractions import Fraction
from dataclasses import dataclass

from memlib._checks import MAX_INT, positive_int, show, plain_args
from memlib.hardware.allocator import reserved_bytes
from memlib.hardware.gpus import DEFAULT_CUDA_CONTEXT_BYTES, GPU, get_gpu, usable_bytes
from memlib.models import Model
from memlib.models.llama_like import llama_like_of_size
from memlib.units import fmt_bytes, gib

DEFAULT_ALLOCATOR_HEADROOM = 0.05


@dataclass(frozen=True)
class Verdict:
    gpu: GPU
    peak_bytes: int  # the estimate's tensors at the peak, per GPU
    cuda_context_bytes: int
    headroom_bytes: int
    capacity_bytes: int
    allocator_headroom: float = DEFAULT_ALLOCATOR_HEADROOM  # the fraction headroom_bytes was computed with

    @property
    def required_bytes(self) -> int:
        return required_bytes(self.peak_bytes, self.cuda_context_bytes, 0) + self.headroom_bytes

    @property
    def margin_bytes(self) -> int:
        """Capacity minus what is required; negative when it does not fit."""
        return self.capacity_bytes - self.required_bytes

    @property
    def margin_gib(self) -> float:
        return gib(self.margin_bytes)

    @property
    def fits(self) -> bool:
        return self.margin_bytes >= 0

    def __str__(self) -> str:
        word = "fits" if self.fits else "does not fit"
        return (f"{word} on {self.gpu.name}: needs {fmt_bytes(self.required_bytes)} "
                f"(peak {fmt_bytes(self.peak_bytes)} + CUDA context {gib(self.cuda_context_bytes):.2f} GiB "
                f"+ allocator headroom {gib(self.headroom_bytes):.2f} GiB) of {fmt_bytes(self.capacity_bytes)}; "
                f"margin {self.margin_gib:+.2f} GiB")


@plain_args
def required_bytes(peak_bytes: int, cuda_context_bytes: int = DEFAULT_CUDA_CONTEXT_BYTES,
                   allocator_headroom: float = DEFAULT_ALLOCATOR_HEADROOM) -> int:
    """What a process with this tensor peak needs from the GPU: peak + context + headroom."""
    peak_bytes = positive_int("peak_bytes", peak_bytes, allow_zero=True)
    cuda_context_bytes = positive_int("cuda_context_bytes", cuda_context_bytes, allow_zero=True)
    return peak_bytes + cuda_context_bytes + _headroom_bytes(peak_bytes, check_allocator_headroom(allocator_headroom))


ALLOCATORS = ("flat", "caching", "expandable")


@plain_args
def fits(estimate, gpu, cuda_context_bytes: int = DEFAULT_CUDA_CONTEXT_BYTES,
         allocator_headroom: float = DEFAULT_ALLOCATOR_HEADROOM, allocator: str = "flat") -> Verdict:
    """Verdict for one GPU: `.fits`, `.margin_bytes` (int), `.margin_gib`; str() explains it.

    `estimate` is anything with an integer `peak_bytes` (training or inference estimates,
    per GPU). `gpu` is a catalog name or a GPU.

    allocator: "flat" (default) adds allocator_headroom x the peak; "caching" adds the caching allocator's
    fragmentation that memlib.hardware.allocator.reserved_bytes models for a training estimate (default
    PYTORCH_CUDA_ALLOC_CONF), "expandable" the same with expandable_segments:True. With either model the
    Verdict's headroom_bytes is that fragmentation and allocator_headroom its fraction of the peak.
    """
    if allocator not in ALLOCATORS:
        raise ValueError(f"allocator is one of {', '.join(map(repr, ALLOCATORS))}, got {show(allocator)}")
    if allocator != "flat":
        gpu = get_gpu(gpu)
        cuda_context_bytes = positive_int("cuda_context_bytes", cuda_context_bytes, allow_zero=True)
        r = reserved_bytes(estimate, expandable_segments=allocator == "expandable")
        peak = r.allocated_peak_bytes
        return Verdict(gpu, peak, cuda_context_bytes, r.fragmentation_bytes, usable_bytes(gpu),
                       r.fragmentation_bytes / peak if peak else 0.0)
    gpu = get_gpu(gpu)
    peak = getattr(estimate, "peak_bytes", None)
    if isinstance(peak, bool) or not isinstance(peak, numbers.Integral) or peak < 0:
        raise ValueError(f"fits() needs an estimate with an integer peak_bytes >= 0 (estimate_training or "
                         f"estimate_inference), got {show(estimate)} ({type(estimate).__name__})")
    # a numpy integer becomes exact Python int arithmetic; beyond 1e300 bytes no figure can be printed
    peak = positive_int("peak_bytes", peak, allow_zero=True, maximum=10**300)
    cuda_context_bytes = positive_int("cuda_context_bytes", cuda_context_bytes, allow_zero=True)
    allocator_headroom = check_allocator_headroom(allocator_headroom)
    return Verdict(gpu, peak, cuda_context_bytes, _headroom_bytes(peak, allocator_headroom), usable_bytes(gpu),
                   allocator_headroom)


def check_allocator_headroom(allocator_headroom) -> float:
    """The allocator headroom as a fraction of the peak in [0, 1), or a ValueError naming it."""
    if isinstance(allocator_headroom, bool) or not isinstance(allocator_headroom, numbers.Real) \
            or not 0 <= allocator_headroom < 1:
        raise ValueError(f"allocator_headroom is a fraction of the peak in [0, 1), got {show(allocator_headroom)}")
    return allocator_headroom


def _headroom_bytes(peak: int, allocator_headroom: float) -> int:
    # peak * headroom in floats loses exactness (and overflows) past 2**53; Fraction keeps it exact there
    return int(peak * allocator_headroom) if peak <= MAX_INT else int(Fraction(allocator_headroom) * peak)


@plain_args
def max_peak_bytes(gpu, cuda_context_bytes: int = DEFAULT_CUDA_CONTEXT_BYTES,
                   allocator_headroom: float = DEFAULT_ALLOCATOR_HEADROOM) -> int:
    """The largest tensor peak (bytes, per GPU) that `fits` accepts on `gpu`: the inverse of
    `required_bytes` against what torch reports as the card's total (`usable_bytes`).

    "How large a peak may an A100 80GB hold?" is (torch's total - CUDA context) / (1 + headroom),
    rounded down to the exact integer `fits` agrees with; 0 when the context alone does not fit.
    """
    gpu = get_gpu(gpu)
    cuda_context_bytes = positive_int("cuda_context_bytes", cuda_context_bytes, allow_zero=True)
    allocator_headroom = check_allocator_headroom(allocator_headroom)
    free = usable_bytes(gpu) - cuda_context_bytes
    if free < 0:
        return 0
    p = int(Fraction(free) / (1 + Fraction(allocator_headroom)))  # within a few bytes; settle it with fits' rounding
    while p + 1 + _headroom_bytes(p + 1, allocator_headroom) <= free:
        p += 1
    while p > 0 and p + _headroom_bytes(p, allocator_headroom) > free:
        p -= 1
    return p


# --- the largest model that fits: a search over a family of shapes (memlib.models.llama_like) ---------------
def largest_that_fits(models: Iterable[Model], gpu, estimate: Callable[[Model], object], **fits_kw):
    """(largest fitting model, smallest non-fitting model) of `models` ordered by size, where
    `estimate(model)` returns an estimate for memlib.fits; either is None when there is none.
    Assumes the peak grows with the model (true along the ladder)."""
    best = first_fail = None
    for m in sorted(models, key=lambda m: m.num_params):
        if fits(estimate(m), gpu, **fits_kw).fits:
            best = m
        elif first_fail is None:
            first_fail = m
    return best, first_fail


def largest_size_that_fits(gpu, estimate: Callable[[Model], object], lo: float = 0.3e9, hi: float = 400e9,
                           rel_tol: float = 0.01, **fits_kw):
    """The largest llama_like_of_size shape that memlib.fits `gpu` under `estimate(model)`, found by
    bisection on the parameter count to within rel_tol; None when even `lo` does not fit. Assumes
    the peak grows with the size (true along the interpolated family up to rounding)."""
    if not (0 < lo < hi) or not 0 < rel_tol < 1:
        raise ValueError(f"need 0 < lo < hi and 0 < rel_tol < 1, got lo={lo!r}, hi={hi!r}, rel_tol={rel_tol!r}")

    def ok(n: float):
        m = llama_like_of_size(n)
        return m if fits(estimate(m), gpu, **fits_kw).fits else None

    best = ok(lo)
    if best is None:
        return None
    top = ok(hi)
    if top is not None:
        return top
    while hi / lo > 1 + rel_tol:
        mid = (lo * hi) ** 0.5
        m = ok(mid)
        if m is not None:
            lo, best = mid, (m if m.num_params > best.num_params else best)
        else:
            hi = mid
    return best
