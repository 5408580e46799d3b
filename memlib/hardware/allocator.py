"""PyTorch's CUDA caching allocator: why max_memory_reserved sits above max_memory_allocated.

Everything here follows c10/cuda/CUDACachingAllocator.cpp at pytorch/pytorch@001074d25084fdb87a799823e395a50f5ec044d3
(the same rules since torch 2.1; expandable segments since 2.1, the constants since 1.x):

* every request is rounded up to a multiple of kMinBlockSize = 512 B (round_size);
* requests <= kSmallSize = 1 MiB come from the small pool, carved out of 2 MiB segments (kSmallBuffer);
  larger ones from the large pool: requests < kMinLargeAlloc = 10 MiB get a 20 MiB segment (kLargeBuffer),
  larger ones a segment of their own size rounded up to kRoundLarge = 2 MiB (get_allocation_size);
* a freed block stays cached ("reserved") and can serve later requests on the same stream only
  ("Once freed, blocks can be re-allocated on the same stream, but not on any other stream");
  the smallest cached block that fits is taken (best fit) and split when the remainder is worth keeping
  (should_split: small pool >= 512 B left; large pool > 1 MiB left and the request < max_split_size);
* with max_split_size_mb set, blocks that large are never split, and a request below it never takes one;
  a request above it takes a cached block at most kLargeBuffer (20 MiB) larger (get_free_block);
* only when cudaMalloc fails are cached blocks given back: first one unsplit block large enough, then every
  unsplit block; a segment that is partly in use cannot be given back: that is fragmentation, reported in the
  out-of-memory message as "reserved by PyTorch but unallocated";
* expandable_segments:True maps one growing segment per stream and pool in pages of 2 MiB (small pool) or
  20 MiB (large pool) instead of one cudaMalloc per segment, and splits any block with >= 512 B left: a larger
  request extends the segment's end instead of leaving slivers at the ends of fixed segments;
* garbage_collection_threshold (with a memory fraction set) frees the oldest unsplit cached blocks when reserved
  memory passes that fraction of what is allowed, before calling cudaMalloc.

`CachingAllocator` replays a sequence of malloc/free calls with these rules (a model, single device, no CUDA
events or graphs) and reports allocated and reserved bytes and their peaks, as torch.cuda.memory_stats() does.
`reserved_bytes(estimate)` turns a memlib training estimate into the reserved peak it predicts, with its
assumptions; `fits(est, gpu, allocator="caching")` uses it instead of the flat 5% headroom.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

from memlib._checks import flag, positive_int, show
from memlib.hardware.gpus import DEFAULT_CUDA_CONTEXT_BYTES, get_gpu, usable_bytes

KIB, MIB = 2**10, 2**20

# c10/cuda/CUDACachingAllocator.cpp @001074d (the names are the source's)
K_MIN_BLOCK_SIZE = 512           # "all sizes are rounded to at least 512 bytes"
K_SMALL_SIZE = 1_048_576         # "largest 'small' allocation is 1 MiB"
K_SMALL_BUFFER = 2_097_152       # "'small' allocations are packed in 2 MiB blocks"
K_MIN_LARGE_ALLOC = 10_485_760   # "allocations between 1 and 10 MiB may use kLargeBuffer"
K_LARGE_BUFFER = 20_971_520      # "'large' allocations may be packed in 20 MiB blocks"
K_ROUND_LARGE = 2_097_152        # "round up large allocations to 2 MiB"


def _size(name: str, n) -> int:
    return positive_int(name, n, allow_zero=True, maximum=2**62)


def round_size(n: int) -> int:
    """Bytes the allocator books for a request of n bytes (round_size, default settings): at least 512 B,
    else n rounded up to a multiple of 512 B."""
    n = _size("size", n)
    if n < K_MIN_BLOCK_SIZE:
        return K_MIN_BLOCK_SIZE
    return K_MIN_BLOCK_SIZE * ((n + K_MIN_BLOCK_SIZE - 1) // K_MIN_BLOCK_SIZE)


def pool_of(n: int) -> str:
    """'small' for requests of at most 1 MiB after rounding, else 'large' (get_pool)."""
    return "small" if round_size(n) <= K_SMALL_SIZE else "large"


def segment_size(n: int) -> int:
    """Size of the cudaMalloc made when no cached block can serve a request of n bytes (get_allocation_size):
    2 MiB for small requests, 20 MiB below 10 MiB, else the request rounded up to 2 MiB."""
    size = round_size(n)
    if size <= K_SMALL_SIZE:
        return K_SMALL_BUFFER
    if size < K_MIN_LARGE_ALLOC:
        return K_LARGE_BUFFER
    return K_ROUND_LARGE * ((size + K_ROUND_LARGE - 1) // K_ROUND_LARGE)


def should_split(block_size: int, request: int, *, small: bool, max_split_size: int | None = None,
                 expandable_segments: bool = False) -> bool:
    """Whether a cached block of block_size bytes serving a (rounded) request is split, the rest staying cached
    (should_split): small pool or expandable segments when >= 512 B remain; large pool when the request is below
    max_split_size and more than 1 MiB remains. Otherwise the request gets the whole block."""
    small, expandable_segments = flag("small", small), flag("expandable_segments", expandable_segments)
    remaining = block_size - request
    if remaining < 0:
        raise ValueError(f"a block of {block_size} B cannot serve a request of {request} B")
    if small or expandable_segments:
        return remaining >= K_MIN_BLOCK_SIZE
    return (max_split_size is None or request < max_split_size) and remaining > K_SMALL_SIZE


@dataclass(frozen=True)
class AllocatorConfig:
    """PYTORCH_CUDA_ALLOC_CONF's memory options (c10/cuda/CUDAAllocatorConfig.cpp): defaults are torch's."""

    expandable_segments: bool = False
    max_split_size_mb: int | None = None      # None: unlimited (SIZE_MAX)
    garbage_collection_threshold: float = 0.0  # 0: off; needs a memory fraction (set_per_process_memory_fraction)

    def __post_init__(self):
        if not isinstance(self.expandable_segments, bool):
            raise ValueError(f"expandable_segments is True or False, got {show(self.expandable_segments)}")
        if self.max_split_size_mb is not None:
            # the source refuses values <= kLargeBuffer / MiB: "CachingAllocator option max_split_size_mb too small"
            v = positive_int("max_split_size_mb", self.max_split_size_mb)
            if v * MIB <= K_LARGE_BUFFER:
                raise ValueError(f"max_split_size_mb must be > {K_LARGE_BUFFER // MIB} (torch refuses smaller), got {v}")
        g = self.garbage_collection_threshold
        if isinstance(g, bool) or not isinstance(g, numbers.Real) or not 0 <= g < 1:
            raise ValueError(f"garbage_collection_threshold is a fraction in [0, 1) (0 = off), got {show(g)}")

    @property
    def max_split_size(self) -> int | None:
        return None if self.max_split_size_mb is None else self.max_split_size_mb * MIB

    @classmethod
    def parse(cls, text: str) -> "AllocatorConfig":
        """From a PYTORCH_CUDA_ALLOC_CONF string, e.g. 'expandable_segments:True,max_split_size_mb:128'."""
        if not isinstance(text, str):
            raise ValueError(f"PYTORCH_CUDA_ALLOC_CONF is a string, got {show(text)}")
        kw: dict = {}
        for item in filter(None, (t.strip() for t in text.split(","))):
            key, sep, value = item.partition(":")
            if not sep:
                raise ValueError(f"PYTORCH_CUDA_ALLOC_CONF items are key:value, got {item!r}")
            key, value = key.strip(), value.strip()
            if key == "expandable_segments":
                if value not in ("True", "False"):
                    raise ValueError(f"expandable_segments takes True or False, got {value!r}")
                kw[key] = value == "True"
            elif key == "max_split_size_mb":
                if not value.isdigit():
                    raise ValueError(f"max_split_size_mb takes a whole number of MiB, got {value!r}")
                kw[key] = int(value)
            elif key == "garbage_collection_threshold":
                try:
                    kw[key] = float(value)
                except ValueError:
                    raise ValueError(f"garbage_collection_threshold takes a fraction, got {value!r}") from None
            else:
                raise ValueError(f"unknown or unmodelled PYTORCH_CUDA_ALLOC_CONF key {key!r}; modelled: "
                                 "expandable_segments, max_split_size_mb, garbage_collection_threshold")
        return cls(**kw)


class OutOfMemoryError(MemoryError):
    """The model's torch.OutOfMemoryError, worded as the source's message."""


@dataclass
class _Block:
    segment: int
    offset: int
    size: int
    allocated: bool = False
    requested: int = 0
    age: int = 0  # get_free_blocks calls since it was cached (garbage collection)


@dataclass
class _Segment:
    sid: int
    pool: str
    stream: int
    size: int
    expandable: bool
    blocks: list = field(default_factory=list)  # _Block in address order


class CachingAllocator:
    """A replay of PyTorch's caching allocator on one device (the rules in the module docstring).

    >>> a = CachingAllocator(capacity_bytes=2 * 2**30)
    >>> x = a.malloc(3 * 2**20)      # a 3 MiB tensor: a 20 MiB segment, split
    >>> a.reserved_bytes // 2**20, a.allocated_bytes // 2**20
    (20, 3)

    `capacity_bytes` is what the allocator may reserve (the card's total less the CUDA context and other
    processes); None means unlimited. `memory_fraction` plays torch.cuda.set_per_process_memory_fraction.
    Not modelled: CUDA events / record_stream (a block freed while another stream uses it), CUDA graph pools,
    roundup_power2_divisions, pinned host memory.
    """

    def __init__(self, capacity_bytes: int | None = None, config: AllocatorConfig | str | None = None,
                 memory_fraction: float | None = None):
        self.capacity = None if capacity_bytes is None else positive_int("capacity_bytes", capacity_bytes,
                                                                          maximum=2**62)
        if config is None:
            config = AllocatorConfig()
        elif isinstance(config, str):
            config = AllocatorConfig.parse(config)
        elif not isinstance(config, AllocatorConfig):
            raise ValueError(f"config is an AllocatorConfig or a PYTORCH_CUDA_ALLOC_CONF string, got {show(config)}")
        self.config = config
        if memory_fraction is not None:
            if isinstance(memory_fraction, bool) or not isinstance(memory_fraction, numbers.Real) \
                    or not 0 < memory_fraction <= 1 or self.capacity is None:
                raise ValueError("memory_fraction is in (0, 1] and needs capacity_bytes, got "
                                 f"{show(memory_fraction)}")
            self.allowed = int(memory_fraction * self.capacity)
        else:
            self.allowed = self.capacity
        self._fraction_set = memory_fraction is not None
        self._segments: dict[int, _Segment] = {}
        self._live: dict[int, _Block] = {}
        self._next_sid = 0
        self._next_handle = 0
        self.allocated_bytes = self.reserved_bytes = 0
        self.peak_allocated_bytes = self.peak_reserved_bytes = 0
        self.requested_bytes = 0
        self.num_alloc_retries = self.num_ooms = 0
        self.history: list[tuple[str, int, int, int]] = []  # (event, handle, allocated, reserved) after each call

    # ---- the public calls -------------------------------------------------------------------------------
    def malloc(self, size: int, stream: int = 0) -> int:
        """Allocate `size` bytes on `stream`; returns a handle for free(). OutOfMemoryError as torch raises it."""
        orig = _size("size", size)
        if orig == 0:
            raise ValueError("a request of 0 bytes allocates nothing in torch (no block); pass a size >= 1")
        stream = positive_int("stream", stream, allow_zero=True)
        rounded = round_size(orig)
        pool = "small" if rounded <= K_SMALL_SIZE else "large"
        block = self._get_free_block(rounded, pool, stream)
        if block is None:
            if self._fraction_set and self.config.garbage_collection_threshold > 0:
                self._garbage_collect()
            block = (self._alloc_segment(rounded, pool, stream)
                     or (self._release_available(rounded, pool) and self._alloc_segment(rounded, pool, stream))
                     or (self._release_all() and self._alloc_segment(rounded, pool, stream)) or None)
            if block is None:
                self.num_ooms += 1
                limit = self.allowed
                raise OutOfMemoryError(
                    f"CUDA out of memory. Tried to allocate {_fmt(self._request_size(rounded, pool))}. "
                    f"{_fmt(limit - self.reserved_bytes)} of {_fmt(limit)} is free. Of the allocated memory "
                    f"{_fmt(self.allocated_bytes)} is allocated by PyTorch, and "
                    f"{_fmt(self.reserved_bytes - self.allocated_bytes)} is reserved by PyTorch but unallocated. "
                    "If reserved but unallocated memory is large try setting "
                    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.")
        seg = self._segments[block.segment]
        if should_split(block.size, rounded, small=pool == "small", max_split_size=self.config.max_split_size,
                        expandable_segments=seg.expandable):
            i = seg.blocks.index(block)
            rest = _Block(seg.sid, block.offset + rounded, block.size - rounded)
            block.size = rounded
            seg.blocks.insert(i + 1, rest)
        block.allocated, block.requested = True, orig
        handle = self._next_handle
        self._next_handle += 1
        self._live[handle] = block
        self.allocated_bytes += block.size
        self.requested_bytes += orig
        self._record("malloc", handle)
        return handle

    def free(self, handle: int) -> None:
        """Free a block: it stays cached (reserved), merged with free neighbours of its segment."""
        if handle not in self._live:
            raise ValueError(f"no live allocation with handle {show(handle)}")
        block = self._live.pop(handle)
        self.allocated_bytes -= block.size
        self.requested_bytes -= block.requested
        block.allocated, block.requested, block.age = False, 0, 0
        seg = self._segments[block.segment]
        i = seg.blocks.index(block)
        if i + 1 < len(seg.blocks) and not seg.blocks[i + 1].allocated:  # merge with the next block
            block.size += seg.blocks.pop(i + 1).size
        if i > 0 and not seg.blocks[i - 1].allocated:                    # and the previous one
            prev = seg.blocks[i - 1]
            prev.size += block.size
            prev.age = 0
            seg.blocks.pop(i)
        self._record("free", handle)

    def empty_cache(self) -> None:
        """torch.cuda.empty_cache(): give back every cached segment no tensor uses (and free pages of
        expandable segments)."""
        self._release_all()
        self._record("empty_cache", -1)

    def reset_peak_stats(self) -> None:
        self.peak_allocated_bytes, self.peak_reserved_bytes = self.allocated_bytes, self.reserved_bytes

    # ---- what memory_stats() / memory_snapshot() show --------------------------------------------------
    @property
    def inactive_split_bytes(self) -> int:
        """Cached bytes in segments partly in use: what empty_cache() cannot give back (fragmentation)."""
        return sum(b.size for s in self._segments.values() if not s.expandable and len(s.blocks) > 1
                   for b in s.blocks if not b.allocated)

    def segments(self) -> list[dict]:
        """torch.cuda.memory_snapshot()'s segments, in allocation order: pool, stream, total size and blocks
        (size, allocated) in address order."""
        return [{"segment": s.sid, "pool": s.pool, "stream": s.stream, "total_size": s.size,
                 "expandable": s.expandable,
                 "blocks": [{"size": b.size, "allocated": b.allocated, "requested": b.requested} for b in s.blocks]}
                for s in self._segments.values()]

    def memory_summary(self) -> str:
        """A short table in the words of torch.cuda.memory_summary()."""
        rows = [("Allocated memory", self.allocated_bytes, self.peak_allocated_bytes),
                ("Requested memory", self.requested_bytes, None),
                ("GPU reserved memory", self.reserved_bytes, self.peak_reserved_bytes),
                ("Non-releasable memory", self.inactive_split_bytes, None)]
        lines = [f"{'Metric':<24}{'Cur Usage':>14}{'Peak Usage':>14}"]
        for name, cur, peak in rows:
            lines.append(f"{name:<24}{_fmt(cur):>14}{'' if peak is None else _fmt(peak):>14}")
        lines.append(f"{'GPU reserved segments':<24}{len(self._segments):>14}")
        return "\n".join(lines)

    # ---- internals, each named after the source's function ---------------------------------------------
    def _record(self, event: str, handle: int) -> None:
        self.peak_allocated_bytes = max(self.peak_allocated_bytes, self.allocated_bytes)
        self.peak_reserved_bytes = max(self.peak_reserved_bytes, self.reserved_bytes)
        self.history.append((event, handle, self.allocated_bytes, self.reserved_bytes))

    def _request_size(self, rounded: int, pool: str) -> int:
        if self.config.expandable_segments:
            page = K_SMALL_BUFFER if pool == "small" else K_LARGE_BUFFER
            return -(-rounded // page) * page
        return segment_size(rounded)

    def _free_blocks(self, pool: str, stream: int):
        for s in self._segments.values():
            if s.pool == pool and s.stream == stream:
                for b in s.blocks:
                    if not b.allocated:
                        yield s, b

    def _get_free_block(self, rounded: int, pool: str, stream: int):
        """get_free_block: the smallest cached block on this stream and pool that fits (address breaks ties),
        with max_split_size's two refusals."""
        mss = self.config.max_split_size
        best = None
        for s, b in self._free_blocks(pool, stream):
            b.age += 1
            if b.size >= rounded and (best is None or (b.size, b.segment, b.offset) < (best.size, best.segment,
                                                                                       best.offset)):
                best = b
        if best is None:
            return None
        if mss is not None and rounded < mss and best.size >= mss:
            return None  # "Do not return an oversized block for a large request"
        if mss is not None and rounded >= mss and best.size >= rounded + K_LARGE_BUFFER:
            return None  # "Allow oversized block size to be rounded up but within a limit"
        return best

    def _room(self) -> int | None:
        return None if self.allowed is None else self.allowed - self.reserved_bytes

    def _alloc_segment(self, rounded: int, pool: str, stream: int):
        """alloc_block: a new segment (cudaMalloc), or with expandable segments more pages mapped at the end
        of this stream and pool's segment; None when the device has no room."""
        room = self._room()
        if self.config.expandable_segments:
            page = K_SMALL_BUFFER if pool == "small" else K_LARGE_BUFFER
            seg = next((s for s in self._segments.values() if s.expandable and s.pool == pool and s.stream == stream),
                       None)
            tail_free = seg.blocks[-1].size if seg is not None and seg.blocks and not seg.blocks[-1].allocated else 0
            grow = -(-(rounded - tail_free) // page) * page
            if room is not None and grow > room:
                return None
            if seg is None:
                seg = _Segment(self._next_sid, pool, stream, 0, True)
                self._segments[seg.sid] = seg
                self._next_sid += 1
            if tail_free:
                seg.blocks[-1].size += grow
            else:
                seg.blocks.append(_Block(seg.sid, seg.size, grow))
            seg.size += grow
            self.reserved_bytes += grow
            return seg.blocks[-1]
        size = segment_size(rounded)
        if room is not None and size > room:
            return None
        seg = _Segment(self._next_sid, pool, stream, size, False, [])
        seg.blocks.append(_Block(seg.sid, 0, size))
        self._segments[seg.sid] = seg
        self._next_sid += 1
        self.reserved_bytes += size
        return seg.blocks[0]

    def _release_segment(self, seg: _Segment) -> None:
        self.reserved_bytes -= seg.size
        del self._segments[seg.sid]

    def _release_expandable_tail(self, seg: _Segment) -> int:
        """Unmap the whole free pages at the end of an expandable segment."""
        if not seg.blocks or seg.blocks[-1].allocated:
            return 0
        page = K_SMALL_BUFFER if seg.pool == "small" else K_LARGE_BUFFER
        tail = seg.blocks[-1]
        start = tail.offset
        cut_from = -(-start // page) * page
        freed = seg.size - cut_from
        if freed <= 0:
            return 0
        if cut_from == start:
            seg.blocks.pop()
        else:
            tail.size = cut_from - start
        seg.size = cut_from
        self.reserved_bytes -= freed
        if not seg.blocks:
            del self._segments[seg.sid]
        return freed

    def _release_available(self, rounded: int, pool: str) -> bool:
        """release_available_cached_blocks (simplified): give back unsplit cached segments of this pool,
        smallest first, until the request's segment would fit."""
        self.num_alloc_retries += 1
        need = self._request_size(rounded, pool)
        freed = False
        for seg in sorted(self._segments.values(), key=lambda s: s.size):
            if (self._room() or 0) >= need:
                break
            if seg.pool == pool and not seg.expandable and len(seg.blocks) == 1 and not seg.blocks[0].allocated:
                self._release_segment(seg)
                freed = True
        return freed

    def _release_all(self) -> bool:
        """release_cached_blocks: every unsplit cached segment, and the free tail pages of expandable ones."""
        freed = False
        for seg in list(self._segments.values()):
            if seg.expandable:
                freed = bool(self._release_expandable_tail(seg)) or freed
            elif len(seg.blocks) == 1 and not seg.blocks[0].allocated:
                self._release_segment(seg)
                freed = True
        return freed

    def _garbage_collect(self) -> None:
        """garbage_collect_cached_blocks: above threshold x allowed, free unsplit large cached segments whose age
        (get_free_block calls since cached) is at least the average, until back under the threshold."""
        threshold = int(self.config.garbage_collection_threshold * self.allowed)
        if self.reserved_bytes <= threshold:
            return
        target = self.reserved_bytes - threshold
        reclaimed = 0
        while reclaimed < target:
            cands = [s for s in self._segments.values() if s.pool == "large" and not s.expandable
                     and len(s.blocks) == 1 and not s.blocks[0].allocated]
            if not cands:
                return
            avg = sum(s.blocks[0].age for s in cands) / len(cands)
            for s in cands:
                if s.blocks[0].age >= avg:
                    reclaimed += s.size
                    self._release_segment(s)


def _fmt(n: int) -> str:
    """torch's format_size: bytes, KiB, MiB, GiB with two decimals."""
    if n <= 1024:
        return f"{n} bytes"
    if n <= 1048576:
        return f"{n / 1024:.2f} KiB"
    if n <= 1073741824:
        return f"{n / 1048576:.2f} MiB"
    return f"{n / 1073741824:.2f} GiB"


# ---------------------------------------------------------------------------------------------------------------
# The reserved peak of an estimate
# ---------------------------------------------------------------------------------------------------------------

#: the parts of a training moment that keep their size from step to step and live through it (allocated once)
PERSISTENT_PARTS = ("parameters", "gradients", "optimizer")

#: fraction of the step's transient bytes (allocated and freed within every step: activations, logits and loss,
#: temporaries, gathered parameters, autocast copies) that end up stranded in cached blocks the peak moment's
#: requests cannot use, by allocator setting. Fitted, not derived: the medians of (published reserved - memlib's
#: allocated peak) / memlib's transient bytes over the rows that publish a reserved peak (validation/published.jsonl):
#:   default segments: Answer.AI's FSDP1 runs of Llama-2 7B/70B on RTX 3090s (fsdp_qlora train.py @50efa1e,
#:     torch 2.2, no PYTORCH_CUDA_ALLOC_CONF), the 9 rows whose step sets the reserved peak: 0.30 ... 0.60, median 0.49;
#:   expandable segments: torchtitan's FSDP2 Llama-3.1-8B runs (run_llama_train.sh @9dec370 sets
#:     PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True"): 0.16 (8 GPUs) and 0.08 (128 GPUs), midpoint 0.12.
FRAGMENTATION_FACTOR = {False: 0.5, True: 0.12}

RESERVED_ASSUMPTIONS = (
    "the caching allocator keeps every block it frees: the reserved peak is the allocated peak plus cached blocks "
    "the peak's requests could not reuse (different stream, too small after splitting, or in a segment a "
    "long-lived tensor still pins)",
    "that stranded part is a fixed fraction of the bytes the step allocates and frees again (activations, logits "
    "and loss, temporaries, gathered parameters, autocast copies): 0.5 with default segments, 0.12 with "
    "expandable_segments:True, fitted on the published reserved rows (FSDP1 / FSDP2 runs), not derived",
    "parameters, gradients and optimizer states are allocated once and reused at the same sizes: no fragmentation",
    "the reserved figure is since the last reset_peak_memory_stats() of a training loop: what loading or a "
    "previous phase left cached is not included (call empty_cache() after loading to match)",
    "near the card's limit the allocator gives back unsplit cached segments before failing: the reserved "
    "figure is capped at what the GPU leaves the process (total - CUDA context); the stranded part is treated as "
    "unreleasable, so fits() counts it in full",
)


@dataclass(frozen=True)
class Reserved:
    """What torch.cuda.max_memory_reserved() should show for an estimate, and why."""

    allocated_peak_bytes: int   # the estimate's peak_bytes (max_memory_allocated)
    transient_bytes: int        # bytes of the peak moment that are allocated and freed within the step
    fragmentation_factor: float
    fragmentation_bytes: int    # the stranded part: int(factor * transient)
    reserved_bytes: int         # allocated peak + fragmentation (capped when a GPU was given)
    expandable_segments: bool
    capped: bool = False        # reserved_bytes was capped at the card's room
    mechanism: str = ("caching allocator: freed blocks stay reserved and split; the part the peak cannot reuse "
                      "is fragmentation")
    assumptions: tuple = RESERVED_ASSUMPTIONS

    @property
    def overhead(self) -> float:
        """reserved / allocated - 1."""
        return self.reserved_bytes / self.allocated_peak_bytes - 1 if self.allocated_peak_bytes else 0.0


def transient_bytes(estimate) -> int:
    """Bytes of the estimate's peak moment that the step allocates and frees again (all but parameters,
    gradients and optimizer states)."""
    moment = getattr(estimate, "peak_moment", None)
    parts = getattr(moment, "parts", None)
    if not isinstance(parts, dict):
        raise ValueError("the caching-allocator model needs a training estimate (memlib.estimate_training: its peak "
                         f"moment's parts), got {show(estimate)} ({type(estimate).__name__}); for other estimates "
                         "use fits()'s flat allocator_headroom")
    return sum(v for k, v in parts.items() if k not in PERSISTENT_PARTS)


def reserved_bytes(estimate, *, expandable_segments: bool = False, gpu=None,
                   cuda_context_bytes: int | None = None, fragmentation_factor: float | None = None) -> Reserved:
    """The reserved peak (torch.cuda.max_memory_reserved) memlib predicts for a training estimate:
    allocated peak + fragmentation_factor x the peak moment's transient bytes (RESERVED_ASSUMPTIONS).

    gpu (a catalog name or GPU) caps the figure at the card's total less the CUDA context: near the limit the
    allocator frees unsplit cached blocks instead of growing. fragmentation_factor overrides the fitted value.
    """
    expandable_segments = flag("expandable_segments", expandable_segments)
    peak = getattr(estimate, "peak_bytes", None)
    transient = transient_bytes(estimate)
    if fragmentation_factor is None:
        factor = FRAGMENTATION_FACTOR[expandable_segments]
    else:
        f = fragmentation_factor
        if isinstance(f, bool) or not isinstance(f, numbers.Real) or not 0 <= f <= 4:
            raise ValueError(f"fragmentation_factor is a fraction of the transient bytes in [0, 4], got {show(f)}")
        factor = float(f)
    frag = int(transient * factor)
    reserved = peak + frag
    capped = False
    if gpu is not None:
        ctx = DEFAULT_CUDA_CONTEXT_BYTES if cuda_context_bytes is None else positive_int(
            "cuda_context_bytes", cuda_context_bytes, allow_zero=True)
        room = usable_bytes(get_gpu(gpu)) - ctx
        if peak <= room < reserved:
            reserved, capped = room, True
    elif cuda_context_bytes is not None:
        raise ValueError("cuda_context_bytes is used with gpu= (the cap at the card's room); pass gpu too")
    return Reserved(peak, transient, factor, frag, reserved, expandable_segments, capped)


# ---------------------------------------------------------------------------------------------------------------
# A training loop replayed through the allocator, and torch's out-of-memory message read back
# ---------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class StepReplay:
    """One training step of `replay_training`: the peaks torch.cuda.max_memory_allocated/reserved would show
    for it (peak stats reset at the step's start), and the out-of-memory error if it failed."""

    step: int
    seq_len: int
    allocated_peak_bytes: int
    reserved_peak_bytes: int
    reserved_end_bytes: int
    inactive_split_bytes: int   # cached bytes in partly used segments at the step's end (not releasable)
    segments: int
    oom: str = ""


def _layers(est) -> int:
    s = est.setup
    if getattr(est, "layer_kinds", None) or getattr(s, "pp", 1) != 1:
        raise ValueError("replay_training takes estimates of one GPU holding every layer alike (pp 1, one layer "
                         "kind); this one has pipeline stages or mixed layer kinds")
    return s.model.num_layers


def replay_training(estimates, config: AllocatorConfig | str | None = None,
                    capacity_bytes: int | None = None) -> list[StepReplay]:
    """Replay one training step per estimate (e.g. one per batch of a data loader, each at its own seq_len)
    through `CachingAllocator`, as a synthetic trace built from each estimate's ledger:

      start      the parameters, one tensor per layer (counts['param_bytes'] / layers), allocated once;
      each step  zero_grad(set_to_none=True) frees last step's gradients; forward: every line of the layer's
                 activation ledger (est.layer) one tensor, layer after layer, then the logits and loss (the
                 largest logits_and_loss of the estimate's moments) as one tensor; backward: the logits freed,
                 then per layer from the top: its weight gradient allocated (grad_bytes / layers), a temporary
                 the size of its largest saved tensor allocated and freed, its saved tensors freed;
                 optimizer: on the first step its states (optimizer_bytes / layers per layer), then its temporary.

    A model of the order of events, not a recorded trace: real steps make many more, smaller tensors. What it
    shows is how the allocator's caching, splitting and segments turn a sequence of sizes into reserved bytes.
    """
    estimates = list(estimates)
    if not estimates:
        raise ValueError("replay_training needs at least one estimate (one per step)")
    a = CachingAllocator(capacity_bytes, config)
    layers = _layers(estimates[0])
    first = estimates[0]
    out: list[StepReplay] = []
    grads: list[int] = []
    states_made = False
    try:
        params = [a.malloc(max(1, first.counts["param_bytes"] // layers)) for _ in range(layers)]
    except OutOfMemoryError as e:
        return [StepReplay(0, first.setup.seq_len, a.peak_allocated_bytes, a.peak_reserved_bytes,
                           a.reserved_bytes, a.inactive_split_bytes, len(a.segments()), str(e))]
    del params
    for i, est in enumerate(estimates, 1):
        if _layers(est) != layers:
            raise ValueError("every estimate of replay_training must be of the same model (its steps)")
        a.reset_peak_stats()
        items = [n for _, n, _ in est.layer.items if n > 0]
        logits = max((m.parts.get("logits_and_loss", 0) for m in est.moments), default=0)
        try:
            for h in grads:
                a.free(h)
            grads = []
            saved = [[a.malloc(n) for n in items] for _ in range(layers)]
            lg = a.malloc(logits) if logits else None
            if lg is not None:
                a.free(lg)
            for layer in reversed(saved):
                grads.append(a.malloc(max(1, est.counts["grad_bytes"] // layers)))
                if items:
                    a.free(a.malloc(max(items)))
                for h in reversed(layer):
                    a.free(h)
            if not states_made and est.counts.get("optimizer_bytes"):
                for _ in range(layers):
                    a.malloc(max(1, est.counts["optimizer_bytes"] // layers))
                states_made = True
            if est.counts.get("optimizer_temporary_bytes"):
                a.free(a.malloc(est.counts["optimizer_temporary_bytes"]))
            oom = ""
        except OutOfMemoryError as e:
            oom = str(e)
        out.append(StepReplay(i, est.setup.seq_len, a.peak_allocated_bytes, a.peak_reserved_bytes,
                              a.reserved_bytes, a.inactive_split_bytes, len(a.segments()), oom))
        if oom:
            break
    return out


@dataclass(frozen=True)
class OomReport:
    """torch's out-of-memory message, read: the figures it states and what follows from them (GiB = 2**30 B)."""

    tried_bytes: int
    total_bytes: int
    free_bytes: int
    process_bytes: int | None      # "this process has X memory in use" / "Process N has X" (when NVML reports it)
    allocated_bytes: int           # "X is allocated by PyTorch"
    unallocated_reserved_bytes: int  # "X is reserved by PyTorch but unallocated"

    @property
    def reserved_bytes(self) -> int:
        """What torch.cuda.memory_reserved() showed: allocated + reserved-but-unallocated."""
        return self.allocated_bytes + self.unallocated_reserved_bytes

    @property
    def non_pytorch_bytes(self) -> int | None:
        """The process's memory outside the caching allocator: CUDA context, cuBLAS/cuDNN workspaces, NCCL
        buffers (process in use - reserved); None when the message does not give the process's total."""
        return None if self.process_bytes is None else self.process_bytes - self.reserved_bytes

    @property
    def would_fit_unfragmented(self) -> bool:
        """Whether the request would have fitted had the cached bytes been one piece: tried <= free + reserved but
        unallocated. False: no allocator setting helps, the step needs less memory. True: fragmentation is at
        least part of it (expandable segments, fewer size changes)."""
        return self.tried_bytes <= self.free_bytes + self.unallocated_reserved_bytes

    @property
    def fragmentation_share(self) -> float:
        """Reserved-but-unallocated as a share of reserved: the part expandable segments could have used."""
        return self.unallocated_reserved_bytes / self.reserved_bytes if self.reserved_bytes else 0.0


_UNITS = {"bytes": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def parse_oom_message(text: str) -> OomReport:
    """Read torch.OutOfMemoryError's message (the format of CUDACachingAllocator.cpp's malloc, torch 2.1+):
    "Tried to allocate X. GPU 0 has a total capacity of X of which X is free. [Process N has|Including
    non-PyTorch memory, this process has] X memory in use. Of the allocated memory X is allocated by PyTorch,
    and X is reserved by PyTorch but unallocated." Sizes are torch's format_size (2 decimals, binary units)."""
    import re

    if not isinstance(text, str):
        raise ValueError(f"parse_oom_message reads the error's text, got {show(text)}")
    size = r"([\d.]+) (bytes|KiB|MiB|GiB|TiB)"

    def grab(pattern: str, required: bool = True):
        m = re.search(pattern, text)
        if not m:
            if required:
                raise ValueError(f"not a torch CUDA out-of-memory message (no {pattern!r} in it)")
            return None
        return int(round(float(m.group(1)) * _UNITS[m.group(2)]))

    return OomReport(
        tried_bytes=grab(r"Tried to allocate " + size),
        total_bytes=grab(r"total capacit(?:y|y) of " + size),
        free_bytes=grab(r"of which " + size + r" is free"),
        process_bytes=grab(r"(?:Process \d+|this process) has " + size + r" memory in use", required=False),
        allocated_bytes=grab(size + r" is allocated by PyTorch"),
        unallocated_reserved_bytes=grab(size + r" is reserved by PyTorch but unallocated"),
    )
