"""What a training loop keeps alive by mistake, and what other processes put on a GPU: the usual causes of an
out-of-memory error that an estimate of the step itself does not show (notebook 11).

Each function turns one mechanism into bytes, from a training estimate's moments where a tensor of the step is
involved:

* kept_graph_bytes: a forward run with autograd on (no torch.no_grad()) whose output or loss is kept, and no
  backward: the graph keeps every tensor saved for backward (PyTorch FAQ, "My model reports 'cuda runtime error(2):
  out of memory'": "Don't accumulate history across your training loop"; docs/source/notes/faq.rst);
* kept_scalar_bytes: `losses.append(loss)` after backward keeps only the 0-d loss tensor (its saved tensors are
  freed by backward): one 512 B block of the caching allocator per step (kMinBlockSize);
* kept_output_bytes: keeping the model's output (the logits) of every step, e.g. `outputs.append(out.logits)`;
* rank0_context_bytes: under DDP, every rank that creates a CUDA context on GPU 0 (no torch.cuda.set_device(rank)
  before the first CUDA call, or torch.load of a checkpoint saved from cuda:0 without map_location) adds a context
  there (torch docs, notes/cuda.rst and torch.load's map_location; NCCL's own buffers come on top).
"""

from __future__ import annotations

from memlib._checks import positive_int, show
from memlib.hardware.allocator import round_size

#: parts of a forward moment that a kept autograd graph holds (what the step allocates for backward)
GRAPH_PARTS = ("activations", "logits_and_loss", "autocast_copies")


def _forward_moment(est):
    moments = getattr(est, "moments", None)
    if not moments or not all(hasattr(m, "parts") and hasattr(m, "name") for m in moments):
        raise ValueError(f"needs a training estimate (memlib.estimate_training), got {show(est)}")
    fwd = [m for m in moments if m.name == "forward"]
    if not fwd:
        raise ValueError("the estimate has no forward moment")
    return max(fwd, key=lambda m: m.total)


def kept_graph_bytes(est) -> int:
    """Bytes one batch's autograd graph keeps when its loss or output is kept and backward never runs (evaluation
    without torch.no_grad(), or `total += loss` on a validation loop): the forward's saved activations, the
    autocast copies of the weights and the logits and loss, at the end of the forward (the estimate's heaviest
    forward moment). Under no_grad none of it is saved."""
    m = _forward_moment(est)
    return sum(m.parts.get(k, 0) for k in GRAPH_PARTS)


def kept_scalar_bytes(steps: int) -> int:
    """GPU bytes of `steps` kept 0-d loss tensors after backward: one 512 B block each (round_size of 4 B)."""
    steps = positive_int("steps", steps, allow_zero=True)
    return steps * round_size(4)


def kept_output_bytes(est, steps: int) -> int:
    """GPU bytes of the model's output (the logits, 16-bit [batch, seq, vocab]) kept for `steps` steps: the
    estimate's previous_output part (the output a loop keeps until the next step replaces it) each."""
    steps = positive_int("steps", steps, allow_zero=True)
    out = max(m.parts.get("previous_output", 0) for m in [_forward_moment(est), *est.moments])
    if not out:
        raise ValueError("the estimate keeps no output (keep_outputs=False, or a layout that frees it); "
                         "estimate with keep_outputs=True")
    return steps * out


def rank0_context_bytes(world_size: int, cuda_context_bytes: int | None = None) -> int:
    """Extra bytes on GPU 0 when every other rank of a data-parallel job also creates a CUDA context there:
    (world_size - 1) contexts (memlib.hardware.fit.DEFAULT_CUDA_CONTEXT_BYTES each unless given)."""
    from memlib.hardware.fit import DEFAULT_CUDA_CONTEXT_BYTES

    world_size = positive_int("world_size", world_size)
    ctx = DEFAULT_CUDA_CONTEXT_BYTES if cuda_context_bytes is None else positive_int(
        "cuda_context_bytes", cuda_context_bytes, allow_zero=True)
    return (world_size - 1) * ctx


def batches_until_oom(per_batch_bytes: int, free_bytes: int) -> int:
    """How many batches of a leak fill `free_bytes`: the first batch that does not fit is this count + 1."""
    per_batch_bytes = positive_int("per_batch_bytes", per_batch_bytes)
    free_bytes = positive_int("free_bytes", free_bytes, allow_zero=True, maximum=2**62)
    return free_bytes // per_batch_bytes


def first_step_before_optimizer_bytes(est) -> int:
    """Allocated peak of the first iteration's forward and backward, before its optimizer.step(): the moments
    without the optimizer states (created lazily by that first step: terms.first_step_optimizer_state_bytes) or a
    previous step's output. Compare with est.peak_bytes: a run whose first forward and backward fit and whose first
    optimizer.step() runs out of memory is this gap."""
    moments = getattr(est, "moments", None) or []
    if not all(hasattr(m, "parts") and hasattr(m, "lazy_bytes") for m in moments):
        moments = []
    moments = [m for m in moments if m.name != "optimizer"]
    if not moments:
        raise ValueError(f"needs a training estimate with forward/backward moments, got {show(est)}")
    return max(m.total - m.lazy_bytes for m in moments)
