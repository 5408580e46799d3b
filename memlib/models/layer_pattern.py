"""Per-layer attributes of a decoder (attention type, MoE or dense) as a short pattern, not a per-layer tuple.

Real configs are regular: DeepSeek-V3 is 3 dense layers then 58 MoE ones, Llama 4 Maverick has a MoE layer every
2nd layer and a full-attention layer every 4th, Gemma 3 five sliding layers to one full, gpt-oss alternates. A
`LayerPattern` stores such a sequence as segments, each a block of runs (value, count) repeated some times, so a
config with 10**9 layers is a few tuples and "how many layers of each kind in layers [lo, hi)" (what a pipeline
stage needs) costs O(pattern), not O(layers). `LayerIndices` is the sorted MoE layer indices over a True/False
pattern. Both behave as read-only sequences (len, indexing, iteration, `in`, equality with an equal tuple).
"""

from __future__ import annotations

import itertools
import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

# Patterns of at most this many layers are stored in one canonical form (computed from the expanded sequence),
# so equal sequences are equal patterns with the tuple's hash whatever built them; longer ones keep their
# builder's segments (normalized), which the readers build the same way for the same config.
SMALL = 1024
# The most runs one zipped (attention type, MoE) block may have: two periodic patterns with large coprime periods
# (never seen in a real config) are refused with a clear message instead of expanded.
MAX_RUNS = 100_000


def _merge_runs(runs) -> tuple:
    out: list = []
    for v, c in runs:
        if c <= 0:
            continue
        if out and out[-1][0] == v:
            out[-1] = (v, out[-1][1] + c)
        else:
            out.append((v, c))
    return tuple(out)


def _normalize(segments) -> tuple:
    out: list = []
    for runs, reps in segments:
        runs = _merge_runs(runs)
        if not runs or reps <= 0:
            continue
        if len(runs) == 1:
            runs, reps = ((runs[0][0], runs[0][1] * reps),), 1
        if out and out[-1][0] == runs:
            out[-1] = (runs, out[-1][1] + reps)
        elif out and len(runs) == 1 and len(out[-1][0]) == 1 and out[-1][0][0][0] == runs[0][0]:
            out[-1] = (((runs[0][0], out[-1][0][0][1] + runs[0][1]),), 1)
        else:
            out.append((runs, reps))
    return tuple(out)


def _compress(seq: tuple) -> tuple:
    """Canonical segments of a plain sequence: its smallest period p (prefix function, O(n)) repeated, then the
    rest as runs; no period: its runs."""
    n = len(seq)
    if n == 0:
        return ()
    fail = [0] * n
    k = 0
    for i in range(1, n):
        while k and seq[i] != seq[k]:
            k = fail[k - 1]
        if seq[i] == seq[k]:
            k += 1
        fail[i] = k
    p = n - fail[-1]
    runs = lambda s: _merge_runs((v, len(tuple(g))) for v, g in itertools.groupby(s))  # noqa: E731
    if 2 * p <= n:
        reps = n // p
        return _normalize([(runs(seq[:p]), reps), (runs(seq[p * reps:]), 1)])
    return _normalize([(runs(seq), 1)])


def _runs_from(runs: tuple, phase: int, length: int):
    """The runs of `runs` repeated cyclically, from position `phase` of the block, for `length` positions."""
    i = 0
    while phase >= runs[i][1]:
        phase -= runs[i][1]
        i += 1
    left = length
    c = runs[i][1] - phase
    while left:
        take = min(c, left)
        yield runs[i][0], take
        left -= take
        i = (i + 1) % len(runs)
        c = runs[i][1]


class _TupleLike:
    """Equality and hash shared by the compact sequences: equal to an equal plain tuple or list; hashed as that
    tuple up to SMALL entries (so the canonical small forms hash like the tuples they replace), by the compact
    form above it (no expansion)."""

    def __eq__(self, other):
        if isinstance(other, type(self)):
            return self._compact() == other._compact()
        if isinstance(other, (tuple, list)):
            return self._len == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self):
        return hash(tuple(self)) if self._len <= SMALL else hash((type(self), self._compact()))


@dataclass(frozen=True, eq=False)
class LayerPattern(_TupleLike, Sequence):
    """A read-only per-layer sequence stored as segments (runs, repeats), so huge layer counts stay O(pattern)."""

    segments: tuple = ()  # ((value, count), ...) block, repeated `repeats` times, one after another

    def __post_init__(self):
        segs = _normalize(self.segments)
        n = sum(sum(c for _, c in runs) * reps for runs, reps in segs)
        if n <= SMALL:
            segs = _compress(tuple(self._expand(segs)))
        starts, pos = [], 0
        for runs, reps in segs:
            starts.append(pos)
            pos += sum(c for _, c in runs) * reps
        object.__setattr__(self, "segments", segs)
        object.__setattr__(self, "_starts", tuple(starts))
        object.__setattr__(self, "_len", pos)

    # --- builders -----------------------------------------------------------------------------------------
    @classmethod
    def of(cls, seq) -> "LayerPattern":
        """A pattern of a plain sequence (compressed), or the pattern itself."""
        if isinstance(seq, LayerPattern):
            return seq
        return cls(_compress(tuple(seq)))

    @classmethod
    def runs(cls, *runs) -> "LayerPattern":
        """LayerPattern.runs(('dense', 3), ('moe', 58)): runs one after another."""
        return cls(tuple(((r,), 1) for r in runs))

    @classmethod
    def periodic(cls, block_runs, n: int) -> "LayerPattern":
        """The block (runs) repeated cyclically to n layers, e.g. every 4th layer full attention:
        periodic((('chunked', 3), ('full', 1)), n)."""
        block = _merge_runs(block_runs)
        period = sum(c for _, c in block)
        reps, rest = divmod(n, period)
        return cls(((block, reps), (tuple(_runs_from(block, 0, rest)), 1)))

    # --- sequence protocol --------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._len

    @staticmethod
    def _expand(segs):
        for runs, reps in segs:
            for _ in range(reps):
                for v, c in runs:
                    yield from itertools.repeat(v, c)

    def __iter__(self):
        return self._expand(self.segments)

    def __getitem__(self, i):
        if isinstance(i, slice):
            lo, hi, step = i.indices(self._len)
            if step != 1:
                return tuple(self)[i]
            return LayerPattern(self._slice(lo, hi))
        i = _index(i, self._len)
        s = bisect_right(self._starts, i) - 1
        runs, _ = self.segments[s]
        off = (i - self._starts[s]) % sum(c for _, c in runs)
        for v, c in runs:
            if off < c:
                return v
            off -= c
        raise AssertionError("unreachable")

    def _slice(self, lo: int, hi: int) -> tuple:
        """Segments of positions [lo, hi) (0 <= lo, hi <= len), in O(log segments + segments in range)."""
        out = []
        if hi <= lo:
            return ()
        s = bisect_right(self._starts, lo) - 1
        while s < len(self.segments) and self._starts[s] < hi:
            runs, reps = self.segments[s]
            start, period = self._starts[s], sum(c for _, c in runs)
            a, b = max(lo, start) - start, min(hi, start + period * reps) - start  # within this segment
            first_block, last_block = a // period, b // period
            if first_block == last_block:
                out.append((tuple(_runs_from(runs, a % period, b - a)), 1))
            else:
                if a % period:
                    out.append((tuple(_runs_from(runs, a % period, period - a % period)), 1))
                    first_block += 1
                out.append((runs, last_block - first_block))
                if b % period:
                    out.append((tuple(_runs_from(runs, 0, b % period)), 1))
            s += 1
        return _normalize(out)

    def segment_at(self, i: int) -> tuple[int, int, int]:
        """(start, period, end) of the segment holding position i: positions [start, end) repeat every period."""
        s = bisect_right(self._starts, _index(i, self._len)) - 1
        runs, reps = self.segments[s]
        period = sum(c for _, c in runs)
        return self._starts[s], 1 if len(runs) == 1 else period, self._starts[s] + period * reps

    def __contains__(self, x) -> bool:
        return any(v == x for runs, _ in self.segments for v, _ in runs)

    def count(self, x) -> int:
        return self.counts().get(x, 0)

    def counts(self, lo: int = 0, hi: int | None = None) -> dict:
        """{value: how many} over positions [lo, hi) (default: all), in O(pattern), in order of first appearance."""
        hi = self._len if hi is None else hi
        if not (0 <= lo <= hi <= self._len):
            raise ValueError(f"layer range [{lo}, {hi}) is outside 0..{self._len}")
        segs = self.segments if (lo, hi) == (0, self._len) else self._slice(lo, hi)
        out: dict = {}
        for runs, reps in segs:
            for v, c in runs:
                out[v] = out.get(v, 0) + c * reps
        return out

    def _compact(self):
        return self._len, self.segments

    def __repr__(self):
        parts = [(f"[{', '.join(f'({v!r}, {c})' for v, c in runs)}]" + (f" * {reps}" if reps > 1 else ""))
                 for runs, reps in self.segments]
        return f"LayerPattern({' + '.join(parts) or '[]'})"

    def __add__(self, other):
        if isinstance(other, LayerPattern):
            return LayerPattern(self.segments + other.segments)
        if isinstance(other, (tuple, list)):
            return LayerPattern(self.segments + _compress(tuple(other)))
        return NotImplemented

    # --- operations ---------------------------------------------------------------------------------------
    def map(self, f) -> "LayerPattern":
        """The pattern of f(value), in O(pattern)."""
        return LayerPattern(tuple((tuple((f(v), c) for v, c in runs), reps) for runs, reps in self.segments))

    def cycled(self, n: int) -> "LayerPattern":
        """The sequence repeated cyclically to n entries (the first n when n <= len)."""
        if n <= self._len:
            return self[:n]
        reps, rest = divmod(n, self._len)
        flat = [r for runs, k in self.segments for r in runs * k] \
            if sum(len(runs) * k for runs, k in self.segments) <= MAX_RUNS else None
        if flat is not None:
            whole = ((tuple(flat), reps),)
        elif reps <= MAX_RUNS // max(len(self.segments), 1):
            whole = self.segments * reps
        else:
            raise ValueError(f"the layer pattern is too irregular to repeat to {n:,} layers")
        return LayerPattern(whole + self._slice(0, rest))

    def zip(self, other: "LayerPattern") -> "LayerPattern":
        """The pattern of pairs (self[i], other[i]); the two must have the same length."""
        if len(other) != self._len:
            raise ValueError(f"layer patterns of {self._len} and {len(other)} entries")
        out = []
        a, b = _cursor(self), _cursor(other)
        pos = 0
        while pos < self._len:
            (ra, pa, fa, na), (rb, pb, fb, nb) = a.at(pos), b.at(pos)
            n = min(na, nb)  # both stay in their segment for n positions
            period = pa * pb // math.gcd(pa, pb)
            span = min(n, period)
            if len(ra) * (span // pa + 2) + len(rb) * (span // pb + 2) > MAX_RUNS:
                raise ValueError(f"the layer pattern is too irregular to count by kind: periods of {pa:,} and "
                                 f"{pb:,} layers combine to {period:,}")
            if n <= period:
                out.append((_zip_runs(ra, fa, rb, fb, n), 1))
            else:
                block = _zip_runs(ra, fa, rb, fb, period)
                reps, rest = divmod(n, period)
                out.append((block, reps))
                if rest:
                    out.append((tuple(_runs_from(block, 0, rest)), 1))
            pos += n
        return LayerPattern(tuple(out))


def _zip_runs(ra, fa, rb, fb, n) -> tuple:
    out = []
    ga, gb = _runs_from(ra, fa, n), _runs_from(rb, fb, n)
    va, ca = next(ga)
    vb, cb = next(gb)
    while True:
        take = min(ca, cb)
        out.append(((va, vb), take))
        ca -= take
        cb -= take
        if not ca:
            nxt = next(ga, None)
            if nxt is None:
                break
            va, ca = nxt
        if not cb:
            vb, cb = next(gb)
    return _merge_runs(out)


class _cursor:
    def __init__(self, p: LayerPattern):
        self.p = p

    def at(self, pos: int):
        """(runs, period, phase at pos, positions left in the segment) of the segment holding pos."""
        p = self.p
        s = bisect_right(p._starts, pos) - 1
        runs, reps = p.segments[s]
        period = sum(c for _, c in runs)
        off = pos - p._starts[s]
        if len(runs) == 1:  # one value: period 1
            return ((runs[0][0], 1),), 1, 0, period * reps - off
        return runs, period, off % period, period * reps - off


def _index(i, n: int) -> int:
    if not isinstance(i, int):
        i = i.__index__()
    if i < 0:
        i += n
    if not 0 <= i < n:
        raise IndexError("layer index out of range")
    return i


@dataclass(frozen=True, eq=False)
class LayerIndices(_TupleLike, Sequence):
    """The sorted indices of the True layers of a True/False LayerPattern (the MoE layers), without listing them."""

    mask: LayerPattern

    def __post_init__(self):
        object.__setattr__(self, "_len", self.mask.count(True))

    @classmethod
    def from_indices(cls, indices, n: int) -> "LayerIndices":
        """Distinct indices in 0..n-1 (validated by the caller) -> their mask over n layers."""
        if isinstance(indices, LayerIndices):
            return indices
        runs, pos = [], 0
        for i in sorted(indices):
            runs += [(False, i - pos), (True, 1)]
            pos = i + 1
        runs.append((False, n - pos))
        return cls(LayerPattern(((tuple(runs), 1),)))

    @property
    def num_layers(self) -> int:
        return len(self.mask)

    def __len__(self) -> int:
        return self._len

    def __iter__(self):
        pos = 0
        for runs, reps in self.mask.segments:
            for _ in range(reps):
                for v, c in runs:
                    if v:
                        yield from range(pos, pos + c)
                    pos += c

    def __contains__(self, i) -> bool:
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(self.mask):
            return False
        return bool(self.mask[i])

    def __getitem__(self, k):
        if isinstance(k, slice):
            lo, hi, step = k.indices(self._len)
            return tuple(itertools.islice(self, lo, hi, step)) if step > 0 else tuple(self)[k]
        k = _index(k, self._len)
        pos = 0
        for runs, reps in self.mask.segments:
            period = sum(c for _, c in runs)
            per_block = sum(c for v, c in runs if v)
            if k < per_block * reps:
                blocks, k = divmod(k, per_block)
                pos += blocks * period
                for v, c in runs:
                    if v and k < c:
                        return pos + k
                    if v:
                        k -= c
                    pos += c
            k -= per_block * reps
            pos += period * reps
        raise AssertionError("unreachable")

    def count_in(self, lo: int, hi: int) -> int:
        """How many of the indices lie in [lo, hi), in O(pattern)."""
        lo, hi = max(lo, 0), min(hi, len(self.mask))
        return self.mask.counts(lo, hi).get(True, 0) if lo < hi else 0

    def complement(self) -> "LayerIndices":
        """The other layers (the dense ones of a MoE model)."""
        return LayerIndices(self.mask.map(lambda v: not v))

    def index(self, i, start=0, stop=None):
        if i not in self:
            raise ValueError(f"{i!r} is not a MoE layer")
        return self.mask.counts(0, i).get(True, 0)

    def count(self, i) -> int:
        return int(i in self)

    def _compact(self):
        return self.mask

    def __repr__(self):
        if self._len <= 16:
            return repr(tuple(self))
        return f"LayerIndices({self._len:,} of {len(self.mask):,} layers: {self.mask!r})"
