"""Exercises for notebook 11: debugging an out-of-memory error. A segment at the 10 MiB boundary, a replay of
the caching allocator with and without expandable segments, reading two published OOM messages, the jump at the
first optimizer step, what an eval loop without no_grad keeps, rank 0's extra contexts, the reserved figure of an
estimate, the "everything is rounded to 2 MB" error, the segment size in code, and a debugging plan."""

from __future__ import annotations

from memlib.hardware.allocator import CachingAllocator, parse_oom_message, reserved_bytes, segment_size
from memlib.learn.exercises.kinds import Choice, Figure, Implement, Numeric, Option, SelfAssessed, Slip, SpotError
from memlib.models import get_model
from memlib.training import estimate_training
from memlib.training.leaks import first_step_before_optimizer_bytes, kept_graph_bytes, rank0_context_bytes
from memlib.units import fmt_bytes

NOTEBOOK = "11_debugging_oom"
MiB, GiB = 2**20, 2**30
_SHAPE = (8, 2048, 320)                                  # 11.1: a bf16 tensor of exactly 10 MiB
_SEQ = (100, 60, 60)                                     # 11.2/11.3: MiB: allocate, free; then two requests
# 11.4: kaito-project/kaito issue 976 (vLLM engine, 2025-04-03), the message as logged
_KAITO = ("Tried to allocate 546.00 MiB. GPU 0 has a total capacity of 15.77 GiB of which 514.19 MiB is free. Process "
          "562167 has 15.25 GiB memory in use. Of the allocated memory 13.73 GiB is allocated by PyTorch, with 46.00 MiB "
          "allocated in private pools (e.g., CUDA Graphs), and 736.86 MiB is reserved by PyTorch but unallocated.")
# 11.5: murong-xu/CADS issue 4 (inference of a segmentation model), the message as logged
_CADS = ("Tried to allocate 22.78 GiB. GPU 0 has a total capacity of 31.47 GiB of which 12.73 GiB is free. Including "
         "non-PyTorch memory, this process has 18.73 GiB memory in use. Of the allocated memory 9.08 GiB is allocated "
         "by PyTorch, and 9.35 GiB is reserved by PyTorch but unallocated.")
_FT = dict(model="qwen2.5-7b", seq_len=1024)            # 11.6: full fine-tuning, AdamW, bf16-mixed, one GPU
_EVAL = dict(model="llama-3-8b", seq_len=1024, micro_batch=8, finetune="lora")   # 11.7
_RANKS, _CTX_MIB = 8, 600                               # 11.8
_RES = dict(model="mistral-7b", seq_len=4096, micro_batch=1, finetune="lora", recompute="full")   # 11.9


def _replay(conf: str) -> float:
    """11.2/11.3: reserved bytes after 100 MiB allocated and freed, then 60 MiB twice (memlib's allocator model)."""
    a = CachingAllocator(config=conf)
    a.free(a.malloc(_SEQ[0] * MiB))
    a.malloc(_SEQ[1] * MiB)
    a.malloc(_SEQ[2] * MiB)
    return float(a.reserved_bytes)


def _est(kw: dict):
    kw = dict(kw)
    return estimate_training(kw.pop("model"), **kw)


def _first_gap() -> float:
    e = _est(_FT)
    return float(e.peak_bytes - first_step_before_optimizer_bytes(e))


def _small_tensors() -> float:
    """11.10: reserved bytes for 5,000 tensors of 1 KB (1,000 B) each, kept (memlib's allocator model)."""
    a = CachingAllocator()
    for _ in range(5000):
        a.malloc(1000)
    return float(a.reserved_bytes)


def _segment_case(rng) -> dict:
    kind = rng.choice(("small", "mid", "large", "edge"))
    if kind == "small":
        n = rng.randint(1, 2**20)
    elif kind == "mid":
        n = rng.randint(2**20 + 1, 10 * 2**20 - 1)
    elif kind == "edge":
        n = rng.choice((2**20, 2**20 + 1, 10 * 2**20 - 512, 10 * 2**20, 10 * 2**20 + 1))
    else:
        n = rng.randint(10 * 2**20, 2**34)
    return dict(nbytes=n)


def _cads_fix() -> str:
    return "a" if parse_oom_message(_CADS).would_fit_unfragmented else "b"


EXERCISES = [
    Numeric(
        id="11.1", title="One tensor at the 10 MiB boundary", difficulty="warm-up", minutes=4,
        formula="segment size: <= 1 MiB -> 2 MiB; < 10 MiB -> 20 MiB; else rounded up to 2 MiB "
                "(CUDACachingAllocator.cpp get_allocation_size; memlib.hardware.allocator.segment_size)",
        prompt=f"A bf16 tensor of shape **{list(_SHAPE)}** is allocated and no cached block can hold it. How large a "
               "segment does PyTorch's caching allocator `cudaMalloc` for it (default settings)? Answer with a unit, "
               "like `\"4 MiB\"`.",
        expected=lambda: float(segment_size(_SHAPE[0] * _SHAPE[1] * _SHAPE[2] * 2)), unit="bytes", tolerance=0.001,
        slips=(Slip("20 MiB block", lambda: 20.0 * MiB,
                    "the 20 MiB segments serve requests strictly below kMinLargeAlloc (size < kMinLargeAlloc): check "
                    "which side of that boundary this tensor falls on"),
               Slip("MB", lambda: 10e6 * 1.0, "a MiB is 2²⁰ bytes, not 10⁶")),
        hints=("First compute the tensor's bytes, then apply the allocator's size classes.",
               "bytes = elements × 2; then: ≤ kSmallSize → 2 MiB, < kMinLargeAlloc → 20 MiB, else round up to 2 MiB.",
               "Compare the tensor's bytes with kMinLargeAlloc in the formula line: strictly below, or not?"),
        worked=lambda: (f"8 × 2048 × 320 × 2 B = {_SHAPE[0] * _SHAPE[1] * _SHAPE[2] * 2:,} B = 10 MiB exactly, not "
                        f"below kMinLargeAlloc (10 MiB): its own segment rounded to 2 MiB, **"
                        f"{segment_size(_SHAPE[0] * _SHAPE[1] * _SHAPE[2] * 2) // MiB} MiB** "
                        "(`memlib.hardware.allocator.segment_size`). One byte less would have taken a 20 MiB segment."),
    ),
    Numeric(
        id="11.2", title="Reserved after a freed block is reused", difficulty="interview", minutes=5,
        formula="best fit on cached blocks of the same stream, split when > 1 MiB remains; a new segment otherwise "
                "(memlib.hardware.allocator.CachingAllocator)",
        prompt=f"On a fresh process (default allocator settings, one stream) you allocate a **{_SEQ[0]} MiB** tensor "
               f"and free it, then allocate **{_SEQ[1]} MiB** and **{_SEQ[2]} MiB** more, both kept. How much does "
               "`torch.cuda.memory_reserved()` show? Answer with a unit.",
        expected=lambda: _replay(""), unit="bytes", tolerance=0.001,
        slips=(Slip("no reuse", lambda: float(sum(_SEQ) * MiB),
                    "a freed block stays cached and the next request that fits takes it"),
               Slip("both in the cached block", lambda: float(_SEQ[0] * MiB),
                    "after the first 60 MiB only 40 MiB of the cached block remain: the second 60 MiB needs a new segment"),
               Slip("freed memory returned", lambda: float((_SEQ[1] + _SEQ[2]) * MiB),
                    "free() keeps the block reserved; only empty_cache() or an OOM retry gives it back")),
        hints=("A freed block is cached, and a smaller request can take it and split it.",
               "100 MiB cached → 60 MiB taken, 40 MiB left cached; the next 60 MiB does not fit in 40.",
               "Add the segments that exist at the end."),
        worked=lambda: (f"The first 60 MiB takes the cached 100 MiB block and splits it (40 MiB > 1 MiB remains); the "
                        f"second 60 MiB fits nowhere and gets its own segment: 100 + 60 = **{_replay('') / MiB:.0f} "
                        "MiB** reserved for 120 MiB allocated (`CachingAllocator` replay)."),
    ),
    Numeric(
        id="11.3", title="The same requests with expandable segments", difficulty="interview", minutes=5,
        formula="expandable_segments:True: one segment per stream, grown in 20 MiB pages (large pool) at its end "
                "(memlib.hardware.allocator.CachingAllocator)",
        prompt="Repeat exercise 11.2's requests with `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`. How much is "
               "reserved at the end? Answer with a unit.",
        expected=lambda: _replay("expandable_segments:True"), unit="bytes", tolerance=0.001,
        slips=(Slip("default segments", lambda: _replay(""), "that is the default allocator (exercise 11.2)"),
               Slip("no growth", lambda: float(_SEQ[0] * MiB),
                    "40 MiB are left after the first 60 MiB: the second needs the segment to grow")),
        hints=("With expandable segments the free space at the end of the segment and new pages join into one block.",
               "100 MiB = 5 pages; after 60 MiB, 40 MiB free at the end; 60 MiB needs 20 more: how many pages?",
               "Count the 20 MiB pages mapped at the end."),
        worked=lambda: (f"One segment of 5 × 20 MiB; the first 60 MiB leaves 40 MiB free at its end; the second 60 MiB "
                        f"grows it by one 20 MiB page and uses the 40 + 20: **{_replay('expandable_segments:True') / MiB:.0f}"
                        f" MiB** reserved instead of {_replay('') / MiB:.0f}."),
    ),
    Numeric(
        id="11.4", title="What the process holds outside PyTorch", difficulty="interview", minutes=5,
        formula="reserved = allocated (private pools included) + reserved but unallocated; outside = process − reserved "
                "(memlib.hardware.allocator.parse_oom_message)",
        prompt="A vLLM engine logged (kaito-project/kaito issue 976): *\"" + _KAITO + "\"* How much of the process's "
               "memory is **outside** PyTorch's caching allocator (CUDA context, CUDA graphs' own buffers, NCCL, "
               "other libraries)? Answer in GiB.",
        expected=lambda: float(parse_oom_message(_KAITO).non_pytorch_bytes), unit="GiB", tolerance=0.02,
        slips=(Slip("allocated only", lambda: float(parse_oom_message(_KAITO).process_bytes
                                                    - parse_oom_message(_KAITO).allocated_bytes),
                    "the reserved-but-unallocated bytes belong to PyTorch's allocator too"),
               Slip("private pools twice", lambda: float(parse_oom_message(_KAITO).non_pytorch_bytes - 46 * MiB),
                    "the 13.73 GiB already include the 46 MiB in private pools")),
        hints=("PyTorch's part of the process is everything its allocator reserved.",
               "reserved = 13.73 GiB + 736.86 MiB; outside = 15.25 GiB − reserved.",
               "Convert 736.86 MiB to GiB first (÷ 1024)."),
        worked=lambda: (f"reserved = 13.73 + 736.86/1024 = {parse_oom_message(_KAITO).reserved_bytes / GiB:.2f} GiB; "
                        f"15.25 − that = **{parse_oom_message(_KAITO).non_pytorch_bytes / GiB:.2f} GiB** outside the "
                        "allocator (`parse_oom_message(...).non_pytorch_bytes`): the CUDA context plus what vLLM's "
                        "CUDA graphs and NCCL allocate directly."),
    ),
    Choice(
        id="11.5", title="Fragmentation or too big?", difficulty="interview", minutes=5,
        formula="the request fits an unfragmented cache iff tried <= free + reserved but unallocated "
                "(memlib.hardware.allocator.OomReport.would_fit_unfragmented)",
        prompt="A model logged (murong-xu/CADS issue 4): *\"" + _CADS + "\"* The message suggests expandable "
               "segments. What is the first change to make?",
        options=(Option("a", "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: 9.35 GiB reserved but unused is "
                             "fragmentation",
                        "9.35 + 12.73 = 22.08 GiB < 22.78 GiB requested: even a perfectly packed cache is too small",
                        misconception="a large 'reserved but unallocated' always means fragmentation"),
                 Option("b", "Make the step smaller (split the input, a smaller batch or tile)",
                        "the single request is larger than all free and cached memory together", "1"),
                 Option("c", "Call torch.cuda.empty_cache() before the call",
                        "the OOM path has already released every unused segment; empty_cache frees nothing more",
                        misconception="empty_cache makes room for PyTorch"),
                 Option("d", "Set max_split_size_mb:128",
                        "it changes how blocks are split, not the total; 22.78 GiB cannot fit 22.08 GiB",
                        misconception="max_split_size_mb is a general OOM fix")),
        reasons=(Option("1", "the request exceeds free + reserved-but-unallocated, so no allocator setting can place it"),
                 Option("2", "reserved but unallocated is above 5% of reserved",
                        "the share is not the test; compare the request with what could hold it"),
                 Option("3", "this process has non-PyTorch memory in use",
                        "that is 0.3 GiB here, not the reason")),
        right=_cads_fix,
        hints=("Ask whether the request would have fitted if all the cached bytes were one piece.",
               "compare 22.78 GiB with 12.73 GiB free + 9.35 GiB reserved but unallocated",
               "Add the free and the unallocated memory first."),
        worked=lambda: (f"free + unallocated = 12.73 + 9.35 = 22.08 GiB < 22.78 GiB: `would_fit_unfragmented` is "
                        f"{parse_oom_message(_CADS).would_fit_unfragmented}, so **({_cads_fix()})**: no allocator "
                        "setting helps; one 22.78 GiB tensor has to become smaller (chunk the input)."),
    ),
    Numeric(
        id="11.6", title="The jump at the first optimizer step", difficulty="interview", minutes=6,
        formula="first step: forward and backward without the Adam states; optimizer.step() creates them and its "
                "temporaries (memlib.training.leaks.first_step_before_optimizer_bytes, Estimate.peak_bytes)",
        prompt=f"Full fine-tuning of **{_FT['model']}** at {_FT['seq_len']:,} tokens, micro-batch 1, mixed-precision "
               "AdamW (torch's default foreach implementation), one GPU, memlib's defaults. Step 1's forward and "
               "backward run fine. By how many GiB does the first `optimizer.step()`'s peak exceed the peak of step "
               "1's forward and backward (memlib.estimate_training's moments)?",
        expected=_first_gap, unit="GiB", tolerance=0.02,
        slips=(Slip("Adam states only", lambda: 8.0 * get_model(_FT["model"]).num_params,
                    "the step also allocates its foreach temporaries (and the gradients are still alive)"),
               Slip("16 bytes per parameter", lambda: 16.0 * get_model(_FT["model"]).num_params,
                    "the weights and master copy exist before the first step; only exp_avg, exp_avg_sq and the "
                    "step's temporaries are new"),
               Slip("the whole peak", lambda: float(_est(_FT).peak_bytes), "the question asks for the jump, not the peak")),
        hints=("torch's AdamW creates exp_avg and exp_avg_sq in its first step(), not at construction.",
               "jump = optimizer.step() peak − max over step 1's forward/backward moments (without the lazy states)",
               "Use memlib.estimate_training and memlib.training.leaks.first_step_before_optimizer_bytes."),
        worked=lambda: (f"step 1 forward/backward: {fmt_bytes(first_step_before_optimizer_bytes(_est(_FT)))}; "
                        f"optimizer.step(): {fmt_bytes(_est(_FT).peak_bytes)}; the jump is **"
                        f"{_first_gap() / GiB:.1f} GiB**: the fp32 Adam states (8 B per parameter) plus the foreach "
                        "step's temporaries. A run that OOMs there never fitted."),
    ),
    Numeric(
        id="11.7", title="An eval loop without no_grad", difficulty="interview", minutes=6,
        formula="a kept autograd graph holds the forward's saved tensors, autocast copies and logits "
                "(memlib.training.leaks.kept_graph_bytes)",
        prompt=f"You evaluate **{_EVAL['model']}** with LoRA adapters ({_EVAL['seq_len']:,} tokens, micro-batch "
               f"{_EVAL['micro_batch']}, bf16 autocast) in a loop that forgot `torch.no_grad()` and does "
               "`val_losses.append(loss)`. How many GiB does **each batch** leave on the GPU until the list is cleared?",
        expected=lambda: float(kept_graph_bytes(_est(_EVAL))), unit="GiB", tolerance=0.03,
        slips=(Slip("just the loss", lambda: 512.0,
                    "without backward the 0-d loss keeps its whole graph alive, and the graph keeps every saved tensor"),
               Slip("no logits", lambda: float(kept_graph_bytes(_est(_EVAL))
                                               - max(m.parts.get("logits_and_loss", 0) for m in _est(_EVAL).moments
                                                     if m.name == "forward")),
                    "the loss's graph also holds the logits and the log-softmax the loss saved"),
               Slip("with the weights", lambda: float(kept_graph_bytes(_est(_EVAL)) + _est(_EVAL).counts["param_bytes"]),
                    "the weights are alive anyway; the question asks what each batch adds")),
        hints=("loss.backward() is what frees a graph's saved tensors; an eval loop never calls it.",
               "per batch = activations saved in the forward + autocast weight copies + the logits and loss",
               "Take the forward moment of memlib.estimate_training for the same setup."),
        worked=lambda: (f"`kept_graph_bytes(estimate_training(...))` = **{kept_graph_bytes(_est(_EVAL)) / GiB:.1f} "
                        "GiB** per batch: the second or third batch runs out of memory. `with torch.no_grad():` (or "
                        "`inference_mode`) saves nothing, and `loss.item()` keeps a Python float."),
    ),
    Numeric(
        id="11.8", title="Rank 0's extra contexts", difficulty="warm-up", minutes=3,
        formula="extra on GPU 0 = (world size − 1) × one CUDA context (memlib.training.leaks.rank0_context_bytes)",
        prompt=f"An {_RANKS}-GPU DDP job. Every process touches CUDA before `torch.cuda.set_device(local_rank)`, so "
               f"each creates a CUDA context on GPU 0 as well as on its own; a context takes {_CTX_MIB} MiB here. How "
               "much more does GPU 0 hold than the others? Answer with a unit.",
        expected=lambda: float(rank0_context_bytes(_RANKS, _CTX_MIB * MiB)), unit="bytes", tolerance=0.01,
        slips=(Slip("every rank", lambda: float(_RANKS * _CTX_MIB * MiB),
                    "rank 0's own context is on every GPU's list too: only the other ranks' are extra"),
               Slip("one context", lambda: float(_CTX_MIB * MiB), "each of the other ranks adds one")),
        hints=("Every GPU has its own process's context; GPU 0 also has the strays.",
               "extra = (ranks − 1) × context",
               "How many processes other than rank 0 are there?"),
        worked=lambda: (f"({_RANKS} − 1) × {_CTX_MIB} MiB = **{rank0_context_bytes(_RANKS, _CTX_MIB * MiB) // MiB:,} "
                        "MiB** (`rank0_context_bytes`); set the device first thing, and load checkpoints with "
                        "map_location='cpu'."),
    ),
    Numeric(
        id="11.9", title="The reserved peak to budget for", difficulty="interview", minutes=6,
        formula="reserved ≈ allocated peak + 0.5 × the step's transient bytes, default segments "
                "(memlib.hardware.allocator.reserved_bytes, fitted on published reserved rows)",
        prompt=f"**{_RES['model']}** LoRA, {_RES['seq_len']:,} tokens, micro-batch {_RES['micro_batch']}, every "
               "decoder layer checkpointed, one GPU, memlib's defaults otherwise. What `max_memory_reserved()` does "
               "memlib's caching-allocator model predict (default segments)? Answer in GiB.",
        expected=lambda: float(reserved_bytes(_est(_RES)).reserved_bytes), unit="GiB", tolerance=0.02,
        slips=(Slip("allocated", lambda: float(_est(_RES).peak_bytes),
                    "that is max_memory_allocated; the allocator holds more"),
               Slip("flat 5%", lambda: _est(_RES).peak_bytes * 1.05,
                    "a flat 5% is fits()'s old headroom; the model scales with the transient bytes"),
               Slip("expandable", lambda: float(reserved_bytes(_est(_RES), expandable_segments=True).reserved_bytes),
                    "that is the expandable-segments figure")),
        hints=("Split the peak into what lives all step (weights, gradients, optimizer) and what comes and goes.",
               "reserved = peak + 0.5 × (peak − parameters − gradients − optimizer states)",
               "Take est.peak_moment.parts from memlib.estimate_training."),
        worked=lambda: (f"allocated peak {fmt_bytes(_est(_RES).peak_bytes)}; transient "
                        f"{fmt_bytes(reserved_bytes(_est(_RES)).transient_bytes)}; reserved ≈ **"
                        f"{reserved_bytes(_est(_RES)).reserved_bytes / GiB:.1f} GiB** (`reserved_bytes`), "
                        f"{reserved_bytes(_est(_RES)).overhead:.0%} above allocated."),
    ),
    SpotError(
        id="11.10", title="\"Everything is rounded up to 2 MB\"", difficulty="interview", minutes=6,
        formula="requests <= 1 MiB are rounded to 512 B and packed into 2 MiB segments; 1-10 MiB share 20 MiB "
                "segments (CUDACachingAllocator.cpp; memlib.hardware.allocator.CachingAllocator)",
        prompt="A note on PyTorch's allocator explains why small tensors waste memory. Find where it goes wrong, and "
               "give how much memory the 5,000 small tensors (1 KB = 1,000 bytes each, all kept) really make the "
               "allocator reserve, with a unit.",
        quote="PyTorch 的缓存分配器把每次分配都向上取整到 2MB：5000 个 1KB 的小张量要占 10GB 显存；一个 3MB 的张量也要占 4MB。",
        source="a circulating explanation of the caching allocator (paraphrased)",
        figures=(Figure("2MB", "error", "only the *segment* for small requests is 2 MiB; each small block is rounded "
                                       "to 512 B and many share one segment", group="rounding"),
                 Figure("10GB", "inherits", "5,000 × 2 MB follows from the error above"),
                 Figure("4MB", "error", "a 3 MB request is rounded to 512 B and carved out of a 20 MiB segment that "
                                       "later 1-10 MiB requests share; large requests (>= 10 MiB) are rounded to 2 MiB",
                        group="large"),
                 Figure("1KB", "right", "the tensors' size as stated")),
        expected=_small_tensors, unit="bytes", tolerance=0.01,
        slips=(Slip("the quote's 10GB", lambda: 10e9, "that is the note's own product"),
               Slip("allocated, not reserved", lambda: 5000 * 1024.0,
                    "the blocks hold that much; the allocator reserves whole segments")),
        hints=("Separate the block a tensor gets from the segment the block is carved from.",
               "block = round up to 512 B; small segments are 2 MiB and are shared by many blocks.",
               "How many 1,024-byte blocks fit in one 2 MiB segment?"),
        worked=lambda: ("**\"2MB\"** is the error (the segment, not the block) and **\"4MB\"** a second one: each "
                        "1,000-byte tensor gets a 1,024-byte block, 2,048 of which fit one 2 MiB segment, so the "
                        f"5,000 tensors reserve **{_small_tensors() / MiB:g} MiB** (`CachingAllocator` replay). A "
                        "3 MB tensor takes a 20 MiB segment the next 1-10 MiB tensors share."),
    ),
    Implement(
        id="11.11", title="The allocator's segment size", difficulty="stretch", minutes=10,
        formula="round to 512 B; <= 1 MiB -> 2 MiB; < 10 MiB -> 20 MiB; else round up to 2 MiB "
                "(CUDACachingAllocator.cpp round_size, get_allocation_size)",
        prompt="Write `segment_for(nbytes)` returning the size of the segment PyTorch's caching allocator "
               "`cudaMalloc`s for a request of `nbytes` bytes when no cached block can serve it (default settings): "
               "first round the request up to a multiple of 512 bytes (at least 512); a rounded size of at most "
               "1 MiB gets a 2 MiB segment; below 10 MiB a 20 MiB segment; otherwise the rounded size rounded up to "
               "a multiple of 2 MiB. Tested against `memlib.hardware.allocator.segment_size` on the shown inputs and "
               "on inputs drawn at random each time you check.",
        function_name="segment_for", reference_name="memlib.hardware.allocator.segment_size",
        cases=lambda: [dict(nbytes=1000), dict(nbytes=3 * 2**20), dict(nbytes=10 * 2**20 - 100), dict(nbytes=250_000_000)],
        held_out=lambda rng: [_segment_case(rng) for _ in range(6)],
        reference=lambda k: float(segment_size(k["nbytes"])),
        slips=(Slip("<= 10 MiB", lambda k, w: 20.0 * MiB if 2**20 < k["nbytes"] <= 10 * 2**20 else w,
                    "the 20 MiB class is for sizes strictly below 10 MiB (size < kMinLargeAlloc)"),
               Slip("no 2 MiB rounding", lambda k, w: float(-(-k["nbytes"] // 512) * 512)
                    if k["nbytes"] >= 10 * 2**20 else w,
                    "large requests are rounded up to a multiple of 2 MiB (kRoundLarge)")),
        hints=("Three size classes, decided on the size rounded to 512 B.",
               "r = 512 * ceil(n / 512); r <= 2**20 -> 2**21; r < 10 * 2**20 -> 20 * 2**20; else 2**21 * ceil(r / 2**21)",
               "Write the 512-byte rounding first, with integer arithmetic."),
        worked=lambda: ("```python\ndef segment_for(nbytes):\n"
                        "    r = max(512, -(-nbytes // 512) * 512)\n"
                        "    if r <= 2**20:\n        return 2**21\n"
                        "    if r < 10 * 2**20:\n        return 20 * 2**20\n"
                        "    return -(-r // 2**21) * 2**21\n```\n\n"
                        f"250,000,000 bytes get **{segment_size(250_000_000) // MiB} MiB**."),
    ),
    SelfAssessed(
        id="11.12", title="Your colleague's run OOMs after two hours", difficulty="stretch", minutes=12,
        formula="read the message (would_fit_unfragmented), snapshot, the causes of notebook 11, the ladder of fixes",
        prompt="A colleague's Llama-3-8B LoRA fine-tune on one 80 GB card crashes with CUDA out of memory after two "
               "hours, on a batch of the same length as many before. The loader does not bucket by length and logs "
               "`loss` (the tensor) every step. Write how you would find the cause and what you would change, in "
               "order. Then mark your answer against the rubric.",
        rubric=("Read the message: compare the request with free + reserved-but-unallocated (fragmentation or too big)",
                "Record a memory snapshot (_record_memory_history, memory_viz) over a few steps around the failure",
                "Check for kept tensors: the logged loss after backward costs only 512 B per step, but anything kept "
                "without backward (eval without no_grad) keeps a whole graph",
                "Varying lengths fragment the cache: expandable_segments:True, or bucket/sort by length, or pad",
                "If the step itself is too big: micro-batch + accumulation, checkpointing, chunked loss, then sharding"),
        hints=("Crash after hours on a length that ran before: think about what changed in the allocator, not the step.",
               "OOM message → snapshot → cause → cheapest fix.",
               "Start from the two numbers of the message."),
        worked=lambda: ("Read the message: a request far below 'reserved but unallocated' points at fragmentation, "
                        "which a bucketless loader causes (notebook 11, deep dive: a shuffled loader fails on a length "
                        "that ran before). Confirm with a snapshot around the failing step; rule out kept tensors (a "
                        "logged loss tensor after backward costs 512 B a step; an eval without no_grad keeps "
                        f"{kept_graph_bytes(_est(_EVAL)) / GiB:.0f} GiB per batch in exercise 11.7's setup). Fix: "
                        "expandable_segments:True, or bucket by length; if the step itself is too big, climb the "
                        "ladder (accumulation, checkpointing, chunked loss)."),
    ),
]
