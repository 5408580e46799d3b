"""Pictures of the mechanisms: who holds which bytes on which rank at which moment.

Each picture is two functions: a data function that returns plain dataclasses computed from memlib's own objects
(an estimate's moments, a model's tensors, the pipeline and paged-KV functions), and a draw function that only
draws them. The data functions need no matplotlib (it is imported inside the draw functions), so a test checks a
picture's shapes and bytes against a hand derivation, and a changed setting changes the picture.

    ring_all_reduce(n)      a ring all-reduce step by step: which chunk each rank sends, how much of the sum it
                            holds                                                 draw_ring_all_reduce
    zero_sharding(...)      ZeRO-1/2/3 and FSDP: ranks x (parameters, gradients, optimizer states, the gathered
                            layer, activations) at each moment of a step        draw_zero_sharding
    pipeline_schedule(...)  GPipe, 1F1B, interleaved 1F1B, ZB-H1 as a timeline of F/B/W passes per stage, with the
                            micro-batches in flight and activation bytes per stage over time  draw_pipeline_schedule
    tensor_parallel_layer() the column-then-row split of an MLP and an attention block: the shape each rank holds,
                            and the all-reduce (or reduce-scatter + all-gather under sequence parallelism)
                                                                                  draw_tensor_parallel_layer
    context_parallel_balance()  ring attention's causal work per rank with and without the zigzag split (rank i
                            holds chunks i and 2cp-1-i), and Ulysses' all-to-all shapes  draw_context_parallel_balance
    paged_kv_table(...)     vLLM's block table: logical blocks of each sequence -> physical blocks, full blocks of a
                            shared prefix stored once                              draw_paged_kv_table
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from memlib._checks import choice, flag, positive_float, positive_int
from memlib.models import Model, get_model

GiB = 2**30

# --------------------------------------------------------------------------------------------------------------
# ZeRO / FSDP: who holds what
# --------------------------------------------------------------------------------------------------------------

# The states drawn, in order; "gathered_parameters" is the unsharded layer ZeRO-3/FSDP all-gathers for the
# forward and again for the backward; "activations" are each rank's own micro-batch (never sharded by ZeRO).
ZERO_STATES = ("parameters", "gradients", "optimizer", "gathered_parameters", "activations")
_PHASES = ("forward", "backward", "optimizer")


@dataclass(frozen=True)
class Holding:
    """What one rank holds of one state at one moment.

    layout: "whole" (every rank the same full copy), "shard" (rank r holds part r of dp), "gathered" (a full copy of
    the current layer, assembled by an all-gather and freed after use), "own" (data of the rank's own micro-batch),
    "none" (not alive at this moment). parts: indices of the dp parts of the state this rank holds."""

    state: str
    nbytes: int
    layout: str
    parts: tuple[int, ...]


@dataclass(frozen=True)
class RankMoment:
    rank: int
    moment: str  # "forward", "backward" or "optimizer"
    where: str  # the estimate's description of the moment drawn
    holdings: tuple[Holding, ...]

    @property
    def total(self) -> int:
        return sum(h.nbytes for h in self.holdings)

    def holding(self, state: str) -> Holding:
        return next(h for h in self.holdings if h.state == state)


@dataclass(frozen=True)
class ShardingPicture:
    scheme: str  # "DDP", "ZeRO-1", "ZeRO-2", "ZeRO-3", "FSDP (FULL_SHARD)", ...
    dp: int
    moments: tuple[str, ...]
    cells: tuple[RankMoment, ...]  # len(moments) x dp, moment-major
    peak_bytes: int  # the estimate's per-GPU peak

    def cell(self, rank: int, moment: str) -> RankMoment:
        return next(c for c in self.cells if c.rank == rank and c.moment == moment)


def _sharded_states(setup) -> tuple[str, set]:
    """(scheme name, the states partitioned over dp) of a training setup: ZeRO stage k partitions optimizer states
    (k >= 1), gradients (k >= 2) and parameters (k = 3) (Rajbhandari et al. 2020, Sec. 5; memlib.parallel.zero
    .partitioned); FSDP's FULL_SHARD all three, SHARD_GRAD_OP optimizer states and gradients."""
    from memlib.training.options import FSDP_ALIASES
    k = setup.zero_stage
    fsdp = setup.sharding.startswith("fsdp") if isinstance(setup.sharding, str) else False
    states = {1: {"optimizer"}, 2: {"optimizer", "gradients"}, 3: {"optimizer", "gradients", "parameters"}}.get(k, set())
    if setup.dp == 1:
        states = set()
    if fsdp:
        name = {v: n for n, v in FSDP_ALIASES.items()}.get(k, str(k))
        return f"FSDP ({name})", states
    return ("DDP" if k == 0 else f"ZeRO-{k}"), states


def zero_sharding(model, dp: int, zero_stage=1, **training) -> ShardingPicture:
    """Ranks x states at three moments of a step (the largest forward, backward and optimizer-step moments of
    memlib.estimate_training(model, zero_stage=..., dp=..., **training)): the bytes are the estimate's, the layout
    (whole, shard r of dp, the gathered layer, the rank's own batch) follows from the stage."""
    from memlib.training import estimate_training
    dp = positive_int("dp", dp)
    est = estimate_training(model, zero_stage=zero_stage, dp=dp, **training)
    scheme, sharded = _sharded_states(est.setup)
    reshard_after_backward = scheme == "FSDP (SHARD_GRAD_OP)" and dp > 1
    if reshard_after_backward:
        sharded = sharded | {"parameters"}
    cells = []
    moments = []
    for phase in _PHASES:
        mos = [mo for mo in est.moments if mo.name == phase]
        if not mos:
            continue
        mo = max(mos, key=lambda x: x.total)
        moments.append(phase)
        for r in range(dp):
            hold = []
            for state in ZERO_STATES:
                n = mo.parts.get(state, 0)
                if not n:
                    layout, parts = "none", ()
                elif state == "activations":
                    layout, parts = "own", (r,)
                elif state == "gathered_parameters":
                    layout, parts = "gathered", tuple(range(dp))
                elif state == "parameters" and reshard_after_backward and phase != "optimizer":
                    # FSDP SHARD_GRAD_OP: the parameters are all-gathered in the forward and kept unsharded
                    # through the backward (no re-gather), sharded again for the optimizer step
                    layout, parts = "gathered", tuple(range(dp))
                elif state in sharded:
                    layout, parts = "shard", (r,)
                else:
                    layout, parts = "whole", tuple(range(dp))
                hold.append(Holding(state, int(n), layout, parts))
            cells.append(RankMoment(r, phase, mo.where, tuple(hold)))
    return ShardingPicture(scheme, dp, tuple(moments), tuple(cells), est.peak_bytes)


_STATE_COLORS = {"parameters": "#4C72B0", "gradients": "#DD8452", "optimizer": "#55A868",
                 "gathered_parameters": "#CCB974", "activations": "#C44E52"}


def draw_zero_sharding(picture: ShardingPicture, ax=None, max_ranks: int = 8):
    """One panel per moment; a row per rank, a column per state; each cell a strip of dp parts, the parts the rank
    holds filled (hatched: the gathered layer), its GiB written under it."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    ranks = min(picture.dp, max_ranks)
    n = len(picture.moments)
    if ax is None:
        fig, axes = plt.subplots(1, n, figsize=(4.2 * n, 0.55 * ranks + 1.6), squeeze=False)
        axes = list(axes[0])
    else:
        axes = list(ax) if hasattr(ax, "__len__") else [ax]
    states = ZERO_STATES
    for a, moment in zip(axes, picture.moments):
        for r in range(ranks):
            cell = picture.cell(r, moment)
            for j, state in enumerate(states):
                h = cell.holding(state)
                y = ranks - 1 - r
                for part in range(picture.dp):
                    held = part in h.parts
                    a.add_patch(Rectangle((j + part * 0.9 / picture.dp, y + 0.35), 0.9 / picture.dp, 0.5,
                                          facecolor=_STATE_COLORS[state] if held else "white",
                                          edgecolor="#999", lw=0.4, hatch="//" if h.layout == "gathered" else None))
                a.text(j + 0.45, y + 0.08, f"{h.nbytes / GiB:.2f}" if h.nbytes else "-", ha="center", fontsize=6)
        a.set_xlim(-0.05, len(states))
        a.set_ylim(0, ranks)
        a.set_xticks([j + 0.45 for j in range(len(states))],
                     ["params", "grads", "optim.", "gathered\nlayer", "activ."], fontsize=7)
        a.set_yticks([ranks - 1 - r + 0.6 for r in range(ranks)], [f"rank {r}" for r in range(ranks)], fontsize=7)
        a.set_title(f"{picture.scheme}, dp={picture.dp}: {moment} (GiB)", fontsize=9)
        for s in a.spines.values():
            s.set_visible(False)
        a.tick_params(length=0)
    return axes


# --------------------------------------------------------------------------------------------------------------
# The ring all-reduce: a reduce-scatter, then an all-gather
# --------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RingStep:
    phase: str  # "reduce-scatter" | "all-gather"
    index: int  # 0-based within its phase
    sends: tuple[tuple[int, int, int], ...]  # (from rank, to rank, chunk)
    counts: tuple[tuple[int, ...], ...]  # after the step: counts[rank][chunk] = GPUs' contributions summed in it


@dataclass(frozen=True)
class RingAllReduce:
    n: int
    nbytes: int  # the tensor each GPU starts with
    steps: tuple[RingStep, ...]

    @property
    def bytes_sent_per_rank(self) -> int:
        """Each rank sends one chunk of nbytes / n per step: 2 (n - 1) nbytes / n in all."""
        return len(self.steps) * self.nbytes // self.n


def ring_all_reduce(n: int, nbytes: int = 0) -> RingAllReduce:
    """The ring all-reduce of Patarasuk & Yuan 2009 over n GPUs, step by step: the tensor cut in n chunks; in
    reduce-scatter step s rank r sends chunk (r - s) mod n to rank r + 1, which adds it to its own, so after n - 1
    steps rank r holds chunk (r + 1) mod n summed over all n GPUs; in all-gather step s it sends chunk
    (r + 1 - s) mod n on, so after n - 1 more steps every rank holds every summed chunk. Each step moves nbytes / n
    per rank: 2 (n - 1) / n x nbytes in all, memlib.cost.timing.all_reduce_bytes."""
    n = positive_int("n", n)
    if n < 2:
        raise ValueError("a ring all-reduce needs at least 2 GPUs")
    nbytes = positive_int("nbytes", nbytes, allow_zero=True)
    counts = [[1] * n for _ in range(n)]
    steps = []
    for phase in ("reduce-scatter", "all-gather"):
        for step in range(n - 1):
            sends = []
            new = [row[:] for row in counts]
            for r in range(n):
                chunk = (r - step) % n if phase == "reduce-scatter" else (r + 1 - step) % n
                dst = (r + 1) % n
                sends.append((r, dst, chunk))
                if phase == "reduce-scatter":
                    new[dst][chunk] = counts[dst][chunk] + counts[r][chunk]
                else:
                    new[dst][chunk] = counts[r][chunk]
            counts = new
            steps.append(RingStep(phase, step, tuple(sends), tuple(tuple(row) for row in counts)))
    return RingAllReduce(n, nbytes, tuple(steps))


def draw_ring_all_reduce(ring: RingAllReduce, ax=None):
    """One column per step (reduce-scatter, then all-gather), one row per rank; each cell the rank's n chunks after
    the step, darker the more GPUs' contributions they hold (darkest: the full sum); outlined in red, the chunk the
    rank sent during the step."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    n, cols = ring.n, len(ring.steps)
    if ax is None:
        _, ax = plt.subplots(figsize=(min(7.5, 1.0 + 0.55 * cols * n / 4), 0.45 * n + 1.2))
    w = 1.0 / (n + 1)
    for c, st in enumerate(ring.steps):
        sent = {src: chunk for src, _, chunk in st.sends}
        for r in range(n):
            y = n - 1 - r
            for k in range(n):
                share = st.counts[r][k] / n
                ax.add_patch(Rectangle((c + k * w, y + 0.15), w, 0.7, facecolor=plt.get_cmap("Blues")(0.15 + 0.85 * share),
                                       edgecolor="#C44E52" if sent[r] == k else "white",
                                       lw=1.2 if sent[r] == k else 0.4))
    ax.set_xlim(0, cols)
    ax.set_ylim(0, n)
    ax.set_xticks([c + 0.45 for c in range(cols)], [f"{'RS' if st.phase == 'reduce-scatter' else 'AG'} {st.index + 1}"
                                                    for st in ring.steps], fontsize=7)
    ax.set_yticks([n - 1 - r + 0.5 for r in range(n)], [f"rank {r}" for r in range(n)], fontsize=7)
    sent = f", {ring.bytes_sent_per_rank / 1e9:.2f} GB sent per rank" if ring.nbytes else ""
    ax.set_title(f"ring all-reduce over {n} GPUs: {n - 1} reduce-scatter + {n - 1} all-gather steps{sent}",
                 fontsize=9)
    for sp in ax.spines.values():
        sp.set_visible(False)
    ax.tick_params(length=0)
    return ax


# --------------------------------------------------------------------------------------------------------------
# Pipeline schedules
# --------------------------------------------------------------------------------------------------------------

SCHEDULES = ("gpipe", "1f1b", "interleaved", "zb-h1")


@dataclass(frozen=True)
class Op:
    stage: int  # the GPU
    kind: str  # "F" forward, "B" backward (input and weight gradients; under zb-h1 the input gradient only), "W"
    micro_batch: int
    chunk: int  # model chunk on this GPU (interleaved); 0 otherwise
    start: float
    end: float


@dataclass(frozen=True)
class PipelineSchedule:
    schedule: str
    pp: int
    micro_batches: int
    vpp: int
    ops: tuple[Op, ...]
    makespan: float  # step time in units of one micro-batch's forward on one stage (t_f = 1)
    busy: float  # work per stage, the same on every stage
    activation_bytes_per_chunk: int  # one micro-batch's saved activations of one model chunk of one stage (0: unknown)
    in_flight: tuple[tuple[tuple[float, int], ...], ...]  # per stage: (time, chunk-micro-batches alive) steps

    @property
    def bubble_fraction(self) -> float:
        """Idle share of the step, measured on the timeline: 1 - busy / makespan."""
        return 1 - self.busy / self.makespan

    @property
    def peak_in_flight(self) -> tuple[int, ...]:
        """Per stage, the most micro-batch chunks whose activations are alive at once."""
        return tuple(max(n for _, n in steps) for steps in self.in_flight)

    @property
    def peak_activation_bytes(self) -> tuple[int, ...]:
        return tuple(k * self.activation_bytes_per_chunk for k in self.peak_in_flight)


def _orders(schedule: str, p: int, m: int, v: int) -> list[list[tuple[str, int, int]]]:
    """Each stage's order of critical passes (kind, micro-batch, chunk): GPipe all forwards then all backwards;
    1F1B and ZB-H1 min(p - s - 1, m) warm-up forwards, then one forward and one backward, then the remaining
    backwards (Narayanan et al. 2021, Sec. 2.2.1; Megatron-LM schedules.py forward_backward_pipelining_without_
    interleaving); interleaved: Megatron's order, forward k of a GPU runs chunk (k // p) mod v of micro-batch
    (k // (p v)) p + k mod p, backward k chunk v - 1 - (k // p) mod v, with 2 (p - s - 1) + (v - 1) p warm-up
    forwards (NVIDIA/Megatron-LM@d98e8a64 megatron/core/pipeline_parallel/schedules.py,
    forward_backward_pipelining_with_interleaving)."""
    out = []
    for s in range(p):
        if schedule == "gpipe":
            out.append([("F", i, 0) for i in range(m)] + [("B", i, 0) for i in range(m)])
            continue
        if schedule == "interleaved":
            def fwd(k):
                return ("F", (k // (p * v)) * p + k % p, (k // p) % v)

            def bwd(k):
                return ("B", (k // (p * v)) * p + k % p, v - 1 - (k // p) % v)
            total = m * v
            warm = min(total, 2 * (p - s - 1) + (v - 1) * p)
        else:
            def fwd(k):
                return ("F", k, 0)

            def bwd(k):
                return ("B", k, 0)
            total = m
            warm = min(total, p - s - 1)
        order = [fwd(k) for k in range(warm)]
        for i in range(total - warm):
            order += [fwd(warm + i), bwd(i)]
        order += [bwd(k) for k in range(total - warm, total)]
        out.append(order)
    return out


def _deps(p: int, V: int, s: int, kind: str, mb: int, c: int) -> list[tuple]:
    """The passes a pass of stage s, chunk c, micro-batch mb waits for (virtual stage u = c x p + s of V)."""
    u = c * p + s
    if kind == "F":
        return [("F", u - 1, mb)] if u > 0 else []
    if kind == "B":
        return [("B", u + 1, mb)] if u < V - 1 else [("F", u, mb)]
    return [("B", u, mb)]


# With t_f = t_b >= t_w and m >= p the greedy zb-h1 timeline below has exactly the closed-form bubble
# (p - 1)(t_f + t_b - t_w) (memlib.parallel.pipeline.zb_h1_bubble_time; tests/test_mechanisms.py); with a W longer
# than the gaps it fills, or t_b != t_f, it is longer than the closed form, which assumes the W passes fit the gaps
# exactly (Qi et al.'s handcrafted schedule).
def _simulate(schedule: str, p: int, m: int, v: int, t_f: float, t_b: float, t_w: float) -> tuple[list[Op], float]:
    """Run the orders against their dependencies, each pass as early as its inputs and its GPU allow.
    A forward of virtual stage u = chunk x p + stage needs the forward of u - 1; a backward needs the backward of
    u + 1 (the last virtual stage: its own forward); W needs its B. Under zb-h1 each stage runs its critical
    passes in the 1F1B order and, whenever the next one is not ready, a pending W instead (Qi et al. 2024, Sec.
    3.1: W passes fill the bubbles), and never holds more than min(p, m) micro-batches between F and W (1F1B's
    peak, ZB-H1's memory limit); the last W's run at the end."""
    orders = _orders(schedule, p, m, v)
    V = p * v
    split = schedule == "zb-h1"
    dur = {"F": t_f / v, "B": t_b / v, "W": t_w / v}
    end: dict[tuple, float] = {}
    ops: list[Op] = []
    ptr = [0] * p
    pending_w: list[list[tuple[int, int]]] = [[] for _ in range(p)]
    alive = [0] * p
    cap = min(p, m)
    free = [0.0] * p
    done_stage = [False] * p
    seq = iter(range(10**9))  # FIFO among stages free at the same time
    heap = [(0.0, next(seq), s) for s in range(p)]
    last_wait = -1.0
    stalled = 0  # stages that waited in a row without any pass being run: all of them is a deadlock

    def run(s, kind, mb, c, t):
        d = dur[kind]
        ops.append(Op(s, kind, mb, c, t, t + d))
        end[(kind, c * p + s, mb)] = t + d
        free[s] = t + d

    def run_w(s, t) -> int:
        """Run stage s's oldest pending W at t; the stage is free again when it ends. Returns the stall count 0."""
        mb_w, c_w = pending_w[s].pop(0)
        run(s, "W", mb_w, c_w, t)
        alive[s] -= 1
        heapq.heappush(heap, (free[s], next(seq), s))
        return 0

    while heap:
        t, _, s = heapq.heappop(heap)
        if done_stage[s]:
            continue
        if ptr[s] < len(orders[s]):
            kind, mb, c = orders[s][ptr[s]]
            need = _deps(p, V, s, kind, mb, c)
            ready = all(k in end and end[k] <= t for k in need)
            if ready and not (split and kind == "F" and alive[s] >= cap):
                run(s, kind, mb, c, t)
                ptr[s] += 1
                if split and kind == "F":
                    alive[s] += 1
                if split and kind == "B":
                    pending_w[s].append((mb, c))
                stalled = 0
                heapq.heappush(heap, (free[s], next(seq), s))
                continue
            if split and pending_w[s]:
                stalled = run_w(s, t)
                continue
            # wait for the next event: another pass ending, or another stage becoming free
            later = [e for e in end.values() if e > t] + [f for f, _, _ in heap if f > t] or \
                [f for f, _, _ in heap if f == t]
            stalled = stalled + 1 if t == last_wait else 1
            last_wait = t
            if not later or stalled > 2 * p:
                raise RuntimeError(f"pipeline schedule {schedule!r} deadlocked at stage {s}, t={t}")
            heapq.heappush(heap, (min(later), next(seq), s))
            continue
        if split and pending_w[s]:
            stalled = run_w(s, t)
            continue
        done_stage[s] = True
    makespan = max(o.end for o in ops)
    return ops, makespan


def _in_flight(ops: list[Op], p: int, split: bool) -> tuple:
    """Per stage, the step function of chunk-micro-batches whose activations are alive: from the start of a forward
    to the end of its backward (of its W under zb-h1, which still needs the layer inputs)."""
    out = []
    free_kind = "W" if split else "B"
    for s in range(p):
        ev = []
        for o in ops:
            if o.stage != s:
                continue
            if o.kind == "F":
                ev.append((o.start, 1))
            elif o.kind == free_kind:
                ev.append((o.end, -1))
        ev.sort(key=lambda e: (e[0], e[1]))  # a release at t before an allocation at t
        steps, n = [(0.0, 0)], 0
        for t, d in ev:
            n += d
            if steps[-1][0] == t:  # several passes start or end at t: keep the count after all of them
                steps[-1] = (t, n)
            else:
                steps.append((t, n))
        out.append(tuple(steps))
    return tuple(out)


def pipeline_schedule(schedule: str = "1f1b", pp: int = 4, micro_batches: int = 8, vpp: int = 1,
                      t_f: float = 1.0, t_b: float = 2.0, t_w: float = 0.0, model=None, **training) -> PipelineSchedule:
    """The timeline of one step of a pipeline schedule over pp GPUs and micro_batches micro-batches.

    Times are in units of one micro-batch's forward on one stage: t_b = 2 t_f by default (the backward computes
    the input and the weight gradients: twice the forward's FLOPs). zb-h1 splits it: pass t_b (input gradient) and
    t_w (weight gradient), e.g. t_b=1, t_w=1. interleaved needs vpp >= 2 and micro_batches a multiple of pp
    (Megatron's requirement). With `model` (and memlib.estimate_training options such as seq_len, micro_batch),
    the activation bytes per stage come from memlib's own per-layer ledger: estimate.layer.total x layers per chunk.
    """
    schedule = choice("schedule", schedule, SCHEDULES)
    p, m, v = positive_int("pp", pp), positive_int("micro_batches", micro_batches), positive_int("vpp", vpp)
    t_f, t_b = positive_float("t_f", t_f), positive_float("t_b", t_b)
    if schedule == "zb-h1":
        t_w = positive_float("t_w", t_w)
    elif isinstance(t_w, bool) or not isinstance(t_w, (int, float)) or t_w != 0:
        raise ValueError(f"t_w splits the backward into B and W: only schedule='zb-h1' takes it (leave t_w=0 for "
                         f"{schedule!r}), got t_w={t_w!r}")
    if schedule == "interleaved":
        if v < 2:
            raise ValueError("interleaved 1F1B needs vpp >= 2 model chunks per GPU (vpp=1 is plain 1F1B)")
        if m % p:
            raise ValueError(f"interleaved 1F1B needs micro_batches a multiple of pp (Megatron-LM's schedule), "
                             f"got m={m}, pp={p}")
    elif v != 1:
        raise ValueError(f"vpp > 1 is the interleaved schedule: pass schedule='interleaved', got {schedule!r}")
    act = 0
    if model is not None:
        from memlib.training import estimate_training
        from memlib.training.layout import pipeline_split
        est = estimate_training(model, pp=p, grad_accum=m, **({"vpp": v} if v > 1 else {}), **training)
        L = est.setup.model.num_layers
        if L % (p * v):
            raise ValueError(f"{L} layers do not split evenly into pp x vpp = {p * v} chunks")
        layers = pipeline_split(L, p * v)[0][1]
        act = est.layer.total * layers
    elif training:
        raise ValueError(f"training options {sorted(training)} need a model")
    ops, makespan = _simulate(schedule, p, m, v, t_f, t_b, t_w)
    busy = m * (t_f + t_b + (t_w if schedule == "zb-h1" else 0))
    return PipelineSchedule(schedule, p, m, v, tuple(sorted(ops, key=lambda o: (o.stage, o.start))), makespan,
                            busy, act, _in_flight(ops, p, schedule == "zb-h1"))


_PASS_COLORS = {"F": "#4C72B0", "B": "#55A868", "W": "#8172B3"}


def draw_pipeline_schedule(sched: PipelineSchedule, ax=None, memory: bool = True):
    """The timeline, one row per GPU (micro-batch numbers in the boxes, lighter for later chunks), and under it the
    activation memory of each stage over time (GiB when the schedule has a model, else micro-batches in flight)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    if ax is None:
        rows = 2 if memory else 1
        fig, axes = plt.subplots(rows, 1, figsize=(min(16, 2 + 0.45 * sched.makespan), 0.5 * sched.pp + 1.2 +
                                                   (2.2 if memory else 0)), squeeze=False,
                                 gridspec_kw={"height_ratios": [sched.pp, 4][:rows]})
        axes = [a[0] for a in axes]
    else:
        axes = list(ax) if hasattr(ax, "__len__") else [ax]
    a = axes[0]
    for o in sched.ops:
        y = sched.pp - 1 - o.stage
        alpha = 1.0 - 0.45 * (o.chunk / max(1, sched.vpp - 1)) if sched.vpp > 1 else 1.0
        a.add_patch(Rectangle((o.start, y + 0.1), o.end - o.start, 0.8, facecolor=_PASS_COLORS[o.kind],
                              alpha=alpha, edgecolor="white", lw=0.5))
        if o.end - o.start >= 0.4:
            a.text((o.start + o.end) / 2, y + 0.5, str(o.micro_batch + 1), ha="center", va="center", fontsize=6,
                   color="white")
    a.set_xlim(0, sched.makespan)
    a.set_ylim(0, sched.pp)
    a.set_yticks([sched.pp - 1 - s + 0.5 for s in range(sched.pp)], [f"GPU {s}" for s in range(sched.pp)],
                 fontsize=7)
    kinds = "F, B, W" if sched.schedule == "zb-h1" else "F, B"
    a.set_title(f"{sched.schedule}: p={sched.pp}, m={sched.micro_batches}"
                f"{f', v={sched.vpp}' if sched.vpp > 1 else ''} ({kinds}); bubble {sched.bubble_fraction:.1%}",
                fontsize=9)
    a.set_xlabel("time (one forward of one micro-batch on one stage = 1)", fontsize=7)
    if memory and len(axes) > 1:
        b = axes[1]
        scale = sched.activation_bytes_per_chunk / GiB if sched.activation_bytes_per_chunk else 1
        for s, steps in enumerate(sched.in_flight):
            xs = [t for t, _ in steps] + [sched.makespan]
            ys = [n * scale for _, n in steps]
            b.step(xs, ys + ys[-1:], where="post", label=f"GPU {s}", lw=1)
        b.set_xlim(0, sched.makespan)
        b.set_ylabel("activations, GiB" if sched.activation_bytes_per_chunk else "micro-batches\nin flight",
                     fontsize=7)
        b.legend(fontsize=6, ncol=min(4, sched.pp))
        b.grid(alpha=0.3)
    return axes


# --------------------------------------------------------------------------------------------------------------
# Tensor parallelism on one decoder layer
# --------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TPStep:
    """One step of a tensor-parallel block on one rank: a weight the rank holds, an activation it computes, or the
    collective that joins the ranks."""

    block: str  # "attention" | "mlp"
    name: str
    kind: str  # "weight" | "activation" | "collective"
    split: str  # weight: "column" | "row" | "replicated"; activation: "whole" | "split" | "partial" | "sequence"
    shape: tuple[int, ...]  # on one rank (weights out x in, as torch stores them; activations tokens x features)
    nbytes: int  # on one rank (collective: bytes each rank sends, ring algorithm)


@dataclass(frozen=True)
class TPPicture:
    model: str
    tp: int
    tokens: int
    sequence_parallel: bool
    steps: tuple[TPStep, ...]

    def step(self, block: str, name: str) -> TPStep:
        return next(s for s in self.steps if s.block == block and s.name == name)


def tensor_parallel_layer(model, tp: int = 2, tokens: int = 4096, sequence_parallel: bool = False,
                          dtype_bytes: int = 2) -> TPPicture:
    """Megatron's split of one decoder layer over tp GPUs (Shoeybi et al. 2019, Sec. 3, Fig. 3): the first
    projections column-parallel (each rank its slice of the outputs: q/k/v by heads, gate/up by intermediate
    features), the output projections row-parallel, so each block ends in one all-reduce of the tokens x hidden
    output in the forward (and one in the backward). With sequence parallelism (Korthikanti et al. 2022, Sec. 4.2.2)
    the all-reduce becomes a reduce-scatter to tokens/tp rows and an all-gather before the next block: the same
    bytes, and the norms' activations split too. Weight shapes come from the model's tensors (Tensor.tp) as
    memlib.training.layout splits them; collective bytes from memlib.cost.timing's ring volumes."""
    from memlib.cost.timing import all_gather_bytes, all_reduce_bytes, reduce_scatter_bytes
    from memlib.training.layout import _matrix_shape
    m = model if isinstance(model, Model) else get_model(model)
    tp = positive_int("tp", tp)
    tokens = positive_int("tokens", tokens)
    flag("sequence_parallel", sequence_parallel)
    dtype_bytes = positive_int("dtype_bytes", dtype_bytes, maximum=8)
    if m.is_mla or m.is_moe or m.mlp != "gated":
        raise ValueError(f"tensor_parallel_layer draws a dense decoder layer with GQA attention and a gated MLP; "
                         f"{m.name} is not one (MLA, MoE or a non-gated MLP)")
    if m.num_kv_heads % tp or m.num_heads % tp or m.intermediate_size % tp:
        raise ValueError(f"tp={tp} must divide {m.name}'s {m.num_heads} heads, {m.num_kv_heads} KV heads and "
                         f"intermediate size {m.intermediate_size}")
    if sequence_parallel and tokens % tp:
        raise ValueError(f"sequence parallelism splits the tokens: tp={tp} must divide tokens={tokens}")
    h = m.hidden_size
    tensors = {t.name: t for t in m.tensors()}
    steps = []
    full = tokens * h * dtype_bytes

    def weight(block, name):
        t = tensors[name]
        shape = _matrix_shape(t, tp)
        steps.append(TPStep(block, name, "weight", t.tp or "replicated", shape, shape[0] * shape[1] * dtype_bytes))

    def act(block, name, split, width, rows=tokens):
        steps.append(TPStep(block, name, "activation", split, (rows, width), rows * width * dtype_bytes))

    for block, first, last, inner in (("attention", ("q_proj", "k_proj", "v_proj"), "o_proj", m.q_size),
                                      ("mlp", ("gate_proj", "up_proj"), "down_proj", m.intermediate_size)):
        if sequence_parallel:
            act(block, "input (sequence shard)", "sequence", h, tokens // tp)
            steps.append(TPStep(block, "all-gather", "collective", "sequence", (tokens, h),
                                int(all_gather_bytes(full, tp))))
        act(block, "input", "whole", h)
        for name in first:
            weight(block, name)
        if block == "attention":
            act(block, f"q ({m.num_heads // tp} heads)", "split", m.q_size // tp)
            act(block, f"k, v ({m.num_kv_heads // tp} KV heads each)", "split", 2 * m.kv_size // tp)
            act(block, "attention output", "split", inner // tp)
        else:
            act(block, "SiLU(gate) x up", "split", inner // tp)
        weight(block, last)
        act(block, "output (partial sum)", "partial", h)
        if sequence_parallel:
            steps.append(TPStep(block, "reduce-scatter", "collective", "sequence", (tokens // tp, h),
                                int(reduce_scatter_bytes(full, tp))))
            act(block, "output (sequence shard)", "sequence", h, tokens // tp)
        else:
            steps.append(TPStep(block, "all-reduce", "collective", "whole", (tokens, h),
                                int(all_reduce_bytes(full, tp))))
            act(block, "output", "whole", h)
    return TPPicture(m.name, tp, tokens, sequence_parallel, tuple(steps))


_TP_COLORS = {"whole": "#8C8C8C", "split": "#4C72B0", "partial": "#DD8452", "sequence": "#55A868",
              "column": "#4C72B0", "row": "#8172B3", "replicated": "#8C8C8C"}


def draw_tensor_parallel_layer(pic: TPPicture, ax=None, blocks=("attention", "mlp")):
    """The steps of each block (of `blocks`) top to bottom on one rank: each as a bar whose length is its bytes
    on that rank, labelled with its shape; the collectives in red with the bytes each rank sends."""
    import matplotlib.pyplot as plt
    steps = [st for st in pic.steps if st.block in blocks]
    if not steps:
        raise ValueError(f"blocks must name 'attention' and/or 'mlp', got {blocks!r}")
    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 0.24 * len(steps) + 0.9))
    ys = list(range(len(steps)))[::-1]
    for y, st in zip(ys, steps):
        color = "#C44E52" if st.kind == "collective" else _TP_COLORS[st.split]
        ax.barh(y, st.nbytes / 2**20, color=color, height=0.7)
        shape = " x ".join(f"{d:,}" for d in st.shape)
        what = f"sends {st.nbytes / 2**20:,.0f} MiB" if st.kind == "collective" else f"[{shape}] {st.split}"
        ax.text(st.nbytes / 2**20, y, f"  {what}", va="center", fontsize=6)
    ax.set_yticks(ys, [f"{st.block}: {st.name}" for st in steps], fontsize=7)
    ax.set_xlabel("MiB on one rank", fontsize=7)
    ax.set_title(f"{pic.model}, tp={pic.tp}, {pic.tokens:,} tokens"
                 f"{', sequence parallel' if pic.sequence_parallel else ''}: one rank's view", fontsize=9)
    ax.margins(x=0.35)
    return ax


# --------------------------------------------------------------------------------------------------------------
# Context parallelism: ring attention's causal balance, Ulysses' all-to-all
# --------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CPBalance:
    seq_len: int
    cp: int
    chunk_tokens: int  # seq_len / (2 cp)
    owner: tuple[int, ...]  # owner[j]: the rank holding chunk j of the 2 cp chunks
    pairs: tuple[tuple[int, ...], ...]  # pairs[i][j]: causal (query, key) pairs of query chunk i with key chunk j
    work: tuple[int, ...]  # per rank: causal query-key pairs it computes
    zigzag: bool

    @property
    def imbalance(self) -> float:
        """The busiest rank's work over the mean: the step waits for the busiest."""
        return max(self.work) * self.cp / sum(self.work)


def _causal_pairs(c: int, i: int, j: int) -> int:
    """(query, key) pairs with key position <= query position between query chunk i and key chunk j of c tokens
    each: c^2 below the diagonal, c (c + 1) / 2 on it, 0 above."""
    return c * c if j < i else c * (c + 1) // 2 if j == i else 0


def context_parallel_balance(seq_len: int, cp: int, zigzag: bool = True) -> CPBalance:
    """Causal attention work per rank when a sequence is split over cp ranks in 2 cp chunks. zigzag (torch's
    _HeadTailLoadBalancer, Megatron-Core's context parallelism, as memlib.training.context_parallel models it):
    rank i holds chunks i and 2cp - 1 - i, so every rank has one early and one late chunk and the same work,
    c^2 (2cp - 1) + c (c + 1) pairs for c = seq_len / (2cp) tokens per chunk. Without it, rank i holds chunks 2i
    and 2i + 1: the last rank's queries see almost the whole sequence, the first's almost nothing."""
    seq_len, cp = positive_int("seq_len", seq_len), positive_int("cp", cp)
    flag("zigzag", zigzag)
    if seq_len % (2 * cp):
        raise ValueError(f"seq_len ({seq_len}) must be divisible by 2 x cp = {2 * cp} (the load balancer's chunks)")
    n = 2 * cp
    c = seq_len // n
    owner = tuple((j if j < cp else n - 1 - j) if zigzag else j // 2 for j in range(n))
    pairs = tuple(tuple(_causal_pairs(c, i, j) for j in range(n)) for i in range(n))
    work = [0] * cp
    for i in range(n):
        work[owner[i]] += sum(pairs[i])
    return CPBalance(seq_len, cp, c, owner, pairs, tuple(work), zigzag)


@dataclass(frozen=True)
class UlyssesShapes:
    """DeepSpeed-Ulysses (Jacobs et al. 2023, Sec. 3): each rank holds seq_len / cp tokens of every head outside
    attention; an all-to-all turns that into all seq_len tokens of num_heads / cp heads for attention, and another
    turns the output back."""

    before: tuple[int, int, int]  # (tokens, heads, head_dim) of q on one rank outside attention
    inside: tuple[int, int, int]  # (tokens, heads, head_dim) of q on one rank inside attention
    bytes_sent_per_layer: float  # per rank, forward and backward (memlib.cost.conventions.ulysses_all_to_all_bytes)


def ulysses_shapes(model, seq_len: int, cp: int, dtype_bytes: int = 2) -> UlyssesShapes:
    from memlib.cost.conventions import ulysses_all_to_all_bytes
    m = model if isinstance(model, Model) else get_model(model)
    seq_len, cp = positive_int("seq_len", seq_len), positive_int("cp", cp)
    if seq_len % cp or m.num_heads % cp:
        raise ValueError(f"cp={cp} must divide seq_len={seq_len} and {m.name}'s {m.num_heads} heads")
    nbytes = ulysses_all_to_all_bytes(m, seq_len, cp, dtype_bytes)
    return UlyssesShapes((seq_len // cp, m.num_heads, m.head_dim), (seq_len, m.num_heads // cp, m.head_dim), nbytes)


def draw_context_parallel_balance(balances, ax=None):
    """For each CPBalance (e.g. contiguous and zigzag): the 2cp x 2cp grid of query chunk x key chunk, the causal
    cells coloured by the rank that computes them, and the work per rank as bars beside it."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    balances = list(balances) if isinstance(balances, (list, tuple)) else [balances]
    if ax is None:
        fig, axes = plt.subplots(len(balances), 2, figsize=(7.5, 3.4 * len(balances)), squeeze=False,
                                 gridspec_kw={"width_ratios": [1.2, 1]}, layout="constrained")
    else:
        axes = ax
    cmap = plt.get_cmap("tab10")
    for row, bal in zip(axes, balances):
        a, b = row
        n = 2 * bal.cp
        full = bal.chunk_tokens ** 2
        for i in range(n):
            for j in range(n):
                if bal.pairs[i][j]:
                    a.add_patch(Rectangle((j, n - 1 - i), 1, 1, facecolor=cmap(bal.owner[i] % 10),
                                          alpha=0.35 + 0.65 * bal.pairs[i][j] / full, edgecolor="white"))
        a.set_xlim(0, n)
        a.set_ylim(0, n)
        a.set_xticks([j + 0.5 for j in range(n)], [str(j) for j in range(n)], fontsize=7)
        a.set_yticks([n - 1 - i + 0.5 for i in range(n)], [f"q{i} (rank {bal.owner[i]})" for i in range(n)],
                     fontsize=6)
        a.set_xlabel("key chunk", fontsize=7)
        a.set_title(f"{'zigzag' if bal.zigzag else 'contiguous'} split, cp={bal.cp}", fontsize=9)
        b.bar([str(r) for r in range(bal.cp)], [w / 1e6 for w in bal.work], color=[cmap(r % 10) for r in range(bal.cp)])
        b.set_xlabel("rank", fontsize=7)
        b.set_ylabel("causal pairs (millions)", fontsize=7)
        b.set_title(f"busiest / mean = {bal.imbalance:.2f}", fontsize=9)
    return axes


# --------------------------------------------------------------------------------------------------------------
# Paged KV cache: the block table and prefix sharing
# --------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PagedKVTable:
    block_size: int
    bytes_per_block: int  # block_size x the model's KV bytes per token
    table: tuple[tuple[int, ...], ...]  # per sequence, its physical block ids in logical order
    shared_blocks: int  # physical blocks of the common prefix, stored once
    tokens: tuple[int, ...]  # per sequence

    @property
    def physical_blocks(self) -> int:
        return len({b for row in self.table for b in row})

    @property
    def blocks_without_sharing(self) -> int:
        return sum(len(row) for row in self.table)

    @property
    def bytes(self) -> int:
        return self.physical_blocks * self.bytes_per_block

    @property
    def saved_bytes(self) -> int:
        return (self.blocks_without_sharing - self.physical_blocks) * self.bytes_per_block

    def ref_counts(self) -> dict[int, int]:
        counts: dict[int, int] = {}
        for row in self.table:
            for blk in row:
                counts[blk] = counts.get(blk, 0) + 1
        return counts


def paged_kv_table(model, tokens, shared_prefix: int = 0, block_size: int | None = None,
                   kv_cache: str = "bf16") -> PagedKVTable:
    """The block table of a batch of sequences under PagedAttention (Kwon et al. 2023, Sec. 4.2-4.4): each
    sequence of n tokens maps ceil(n / block_size) logical blocks (memlib.serving.capacity.paged_kv_blocks) to
    physical blocks anywhere in the pool. With a common prefix of shared_prefix tokens, the prefix's full blocks
    are stored once and referenced by every sequence (vLLM's automatic prefix caching hashes full blocks only: a
    partly filled block is never shared; docs.vllm.ai/en/v0.8.0/design/v1/prefix_caching.html: blocks are hashed by their tokens and their prefix, only full blocks); the rest is private.
    Block bytes: block_size x memlib.serving.inference.kv_bytes_per_token(model, kv_cache)."""
    from memlib.serving.capacity import VLLM_BLOCK_SIZE, paged_kv_blocks
    from memlib.serving.inference import kv_bytes_per_token
    m = model if isinstance(model, Model) else get_model(model)
    bs = VLLM_BLOCK_SIZE if block_size is None else positive_int("block_size", block_size)
    if isinstance(tokens, int) or not tokens:
        raise ValueError("tokens must be a non-empty list of sequence lengths (tokens per sequence)")
    tokens = tuple(positive_int("tokens", t) for t in tokens)
    shared_prefix = positive_int("shared_prefix", shared_prefix, allow_zero=True)
    if shared_prefix > min(tokens):
        raise ValueError(f"shared_prefix ({shared_prefix}) exceeds the shortest sequence ({min(tokens)} tokens)")
    shared = shared_prefix // bs if len(tokens) > 1 else 0
    table = []
    nxt = shared
    for t in tokens:
        n = paged_kv_blocks(t, bs)
        row = list(range(shared)) + list(range(nxt, nxt + n - shared))
        nxt += n - shared
        table.append(tuple(row))
    return PagedKVTable(bs, bs * kv_bytes_per_token(m, kv_cache), tuple(table), shared, tokens)


def draw_paged_kv_table(tab: PagedKVTable, ax=None):
    """Left, each sequence's logical blocks; right, the physical pool; shared blocks in one colour with their
    reference count, private ones in the sequence's colour; the last block of a sequence shows its unused slots."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 0.6 * len(tab.table) + 1.6))
    cmap = plt.get_cmap("tab10")
    refs = tab.ref_counts()
    n_seq = len(tab.table)
    for s, row in enumerate(tab.table):
        y = n_seq - s
        for k, blk in enumerate(row):
            used = min(tab.block_size, tab.tokens[s] - k * tab.block_size)
            color = "#CCB974" if refs[blk] > 1 else cmap(s % 10)
            ax.add_patch(Rectangle((k, y), used / tab.block_size, 0.8, facecolor=color, edgecolor="k", lw=0.3))
            if used < tab.block_size:
                ax.add_patch(Rectangle((k + used / tab.block_size, y), 1 - used / tab.block_size, 0.8,
                                       facecolor="white", edgecolor="k", lw=0.3, hatch="..."))
            ax.text(k + 0.5, y + 0.4, str(blk), ha="center", va="center", fontsize=5)
    ax.set_xlim(0, max(len(r) for r in tab.table))
    ax.set_ylim(0.8, n_seq + 1)
    ax.set_yticks([n_seq - s + 0.4 for s in range(n_seq)], [f"seq {s} ({t} tok)" for s, t in enumerate(tab.tokens)],
                  fontsize=7)
    ax.set_xlabel(f"logical block (block = {tab.block_size} tokens, {tab.bytes_per_block / 2**20:.1f} MiB); "
                  "number = physical block", fontsize=7)
    ax.set_title(f"{tab.physical_blocks} physical blocks for {tab.blocks_without_sharing} logical "
                 f"({tab.shared_blocks} shared prefix blocks, saving {tab.saved_bytes / 2**20:,.0f} MiB)", fontsize=9)
    return ax


__all__ = ["ring_all_reduce", "draw_ring_all_reduce", "RingStep", "RingAllReduce", "zero_sharding",
           "draw_zero_sharding", "pipeline_schedule", "draw_pipeline_schedule",
           "tensor_parallel_layer", "draw_tensor_parallel_layer", "context_parallel_balance", "ulysses_shapes",
           "draw_context_parallel_balance", "paged_kv_table", "draw_paged_kv_table", "Holding", "RankMoment",
           "ShardingPicture", "Op", "PipelineSchedule", "TPStep", "TPPicture", "CPBalance", "UlyssesShapes",
           "PagedKVTable", "SCHEDULES", "ZERO_STATES"]
