"""Weight sync in RL post-training: the bytes the trainer's new actor weights cost the rollout engines, and the time.

After every optimizer step the rollout engines (vLLM, SGLang) must generate with the new policy, so the actor's
weights travel from the trainer to each engine once per step (once per `sync_every` steps in asynchronous setups).
What travels is the actor in the engine's dtype (bf16: 2 bytes per parameter, memlib.estimate_inference's
weight_bytes at tp 1: W). How it travels decides the bytes each engine GPU receives:

  nccl-broadcast  separate engines (OpenRLHF's distributed mode; OpenRLHF ppo_actor.py `_broadcast_to_vllm` at
                  OpenRLHF@22697a1b): trainer rank 0 gathers each parameter (ZeRO-3 GatheredParameters) and
                  torch.distributed.broadcast()s the *whole* tensor to a group of 1 + engines x tp ranks; each vLLM
                  worker receives it and its load_weights keeps its 1/tp slice. Every engine GPU receives W, an
                  engine tp x W. NCCL pipelines a broadcast along a chain, so every link carries W once and the time
                  is about W / beta whatever the number of receivers (nccl-tests doc/PERFORMANCE.md: for broadcast
                  busbw = algbw), beta the slowest link on the chain (across nodes: the sender's NIC).
  resharded       separate engines that receive only their own shard (a reshard-aware sync: the trainer sends each
                  engine rank the slice its tensor parallelism needs): W / tp per engine GPU, W per engine; each
                  engine GPU on a link of its own: time W / (tp x beta).
  gather-ipc      colocated, trainer sharded over n GPUs (FSDP / ZeRO-3; verl's FSDP workers: per parameter
                  `param.full_tensor()` then vLLM's load_weights, verl fsdp_workers.py at volcengine/verl@b10cabe4;
                  OpenRLHF `_broadcast_to_vllm_cudaipc` with --colocate_all_models: GatheredParameters, then a CUDA
                  IPC handle to the engine on the same GPU): each GPU all-gathers the full weights,
                  (n - 1)/n x W received (ring all-gather), and the engine copies its slice from the same GPU's
                  memory (CUDA IPC: no link bytes). Time: memlib.cost.collectives.collective_seconds("all-gather").
  3d-hybrid       colocated with Megatron training parallelism tp x pp and generation parallelism tg x pg (verl's
                  3D-HybridEngine; Sheng et al. 2024, HybridFlow, Sec. 5.4 and Table 2): the training shards are
                  grouped so each GPU already holds a part of its generation shard and all-gathers the rest within a
                  micro-DP group of k = (tp x pp) / (tg x pg) GPUs: (tp pp - tg pg) / (tg pg tp pp) x W received
                  per GPU, zero redundancy; time: the all-gather of W / (tg pg) over k GPUs.

Not counted: the trainer-side gather before an nccl-broadcast (ZeRO-3: an all-gather inside the actor group, on
NVLink), per-tensor latency beyond alpha_s x steps, the engine's wake-up and the KV cache it rebuilds.
"""

from __future__ import annotations

from dataclasses import dataclass

from memlib._checks import bandwidth, choice, finite_number, positive_float, positive_int
from memlib.cost.collectives import collective_seconds, link_bytes_per_s
from memlib.models import get_model
from memlib.serving.inference import estimate_inference
from memlib.units import fmt_bytes

SYNC_METHODS = ("nccl-broadcast", "resharded", "gather-ipc", "3d-hybrid")


@dataclass(frozen=True)
class WeightSync:
    """One weight sync from the trainer to the rollout engines. Bytes are exact ints; seconds a lower bound (the link's
    nominal rate, no contention)."""

    method: str
    model: str
    weight_bytes: int  # W: the actor's weights in the engine's dtype (bf16)
    engines: int
    rollout_tp: int
    bytes_per_gpu: int  # what one receiving GPU takes in over the link (engine GPU, or each trainer GPU colocated)
    bytes_per_engine: int  # what one engine (its rollout_tp GPUs) takes in
    kept_per_gpu: int  # what an engine GPU keeps: W / rollout_tp (its tensor-parallel slice)
    bytes_per_s: float  # the link, one direction
    seconds: float  # time of one sync over that link (alpha-beta)
    link: str = ""

    def per_step(self, steps: int = 1, sync_every: int = 1) -> float:
        """Seconds spent syncing over `steps` optimizer steps when the weights move every `sync_every` steps
        (1: synchronous RL and one-step-off async; k: rollouts up to k policies stale)."""
        steps, k = positive_int("steps", steps), positive_int("sync_every", sync_every)
        return -(-steps // k) * self.seconds

    def __str__(self) -> str:
        return (f"{self.method}: {self.model} {fmt_bytes(self.weight_bytes)} in bf16 -> {self.engines} engine(s) of tp "
                f"{self.rollout_tp}: {fmt_bytes(self.bytes_per_gpu)} received per GPU, {fmt_bytes(self.bytes_per_engine)} "
                f"per engine, {self.seconds:.3g} s at {self.bytes_per_s / 1e9:g} GB/s{' (' + self.link + ')' if self.link else ''}")


def _beta(link, bytes_per_s):
    if (link is None) == (bytes_per_s is None):
        raise ValueError("give the link either by name (link='IB NDR', link='h100-80gb' for its NVLink) or as "
                         "bytes_per_s, one of the two")
    if bytes_per_s is not None:
        return bandwidth("bytes_per_s", bytes_per_s), ""
    return link_bytes_per_s(link), str(link)


def weight_sync(actor, method: str = "nccl-broadcast", *, engines: int = 1, rollout_tp: int = 1, link=None,
                bytes_per_s: float | None = None, train_gpus: int | None = None, train_tp: int = 1, train_pp: int = 1,
                rollout_pp: int = 1, alpha_s: float = 0.0) -> WeightSync:
    """Bytes and time of one weight sync of `actor` (bf16) from the trainer to the rollout engines.

    method: "nccl-broadcast" (OpenRLHF, separate engines: every engine GPU receives the whole W),
            "resharded" (separate engines, each GPU receives its W / rollout_tp),
            "gather-ipc" (colocated FSDP / ZeRO-3 over train_gpus: an all-gather of W on each GPU, CUDA IPC to the
            engine), "3d-hybrid" (colocated Megatron train_tp x train_pp -> rollout_tp x rollout_pp: HybridFlow's
            micro-DP all-gather). Formulas and sources in the module docstring.
    link / bytes_per_s: the link, one direction: a name from memlib.cost.collectives.NETWORK_LINKS ("IB NDR") or a
            catalog GPU (its NVLink / PCIe), or a rate in bytes/s.
    engines: rollout engines (each of rollout_tp GPUs). alpha_s: per-message latency for collective_seconds.
    """
    choice("method", method, SYNC_METHODS)
    m = get_model(actor)
    e, tg = positive_int("engines", engines), positive_int("rollout_tp", rollout_tp)
    pg = positive_int("rollout_pp", rollout_pp)
    # checked here, before any comparison: train_tp=True would pass `train_tp != 1` as 1, alpha_s=nan would give nan s
    train_tp, train_pp = positive_int("train_tp", train_tp), positive_int("train_pp", train_pp)
    train_gpus = None if train_gpus is None else positive_int("train_gpus", train_gpus)
    alpha_s = finite_number("alpha_s", alpha_s)
    beta, name = _beta(link, bytes_per_s)
    W = estimate_inference(m, 1, 1, weights="bf16", tp=1).weight_bytes
    kept = -(-W // (tg * pg))
    if method in ("nccl-broadcast", "resharded") and (train_gpus is not None or train_tp != 1 or train_pp != 1):
        raise ValueError(f"method {method!r} sends from the trainer's gathered weights; train_gpus, train_tp and "
                         "train_pp apply to the colocated methods 'gather-ipc' and '3d-hybrid'")
    if method != "3d-hybrid" and pg != 1:
        raise ValueError("rollout_pp applies to '3d-hybrid' (HybridFlow's generation pipeline stages)")
    if method == "nccl-broadcast":
        per_gpu = W
        per_engine = tg * W
        steps = e * tg  # a chain of 1 + engines x tp ranks
        seconds = steps * alpha_s + W / beta
    elif method == "resharded":
        per_gpu = -(-W // tg)
        per_engine = W
        seconds = alpha_s + per_gpu / beta
    elif method == "gather-ipc":
        if train_tp != 1 or train_pp != 1:
            raise ValueError("'gather-ipc' models FSDP / ZeRO-3 data parallelism (train_gpus); Megatron's train_tp x "
                             "train_pp is '3d-hybrid'")
        n = positive_int("train_gpus", train_gpus if train_gpus is not None else e * tg)
        if n != e * tg:
            raise ValueError(f"colocated: the {n} trainer GPUs are the engines' GPUs, so train_gpus must be engines x "
                             f"rollout_tp = {e * tg}")
        per_gpu = (n - 1) * W // n
        per_engine = tg * per_gpu
        seconds = collective_seconds("all-gather", W, n, beta, alpha_s)
    else:
        t, p = positive_int("train_tp", train_tp), positive_int("train_pp", train_pp)
        if (t * p) % (tg * pg):
            raise ValueError(f"3D-HybridEngine groups training shards into generation shards: rollout_tp x rollout_pp "
                             f"({tg * pg}) must divide train_tp x train_pp ({t * p}) (HybridFlow Sec. 5.4)")
        if train_gpus is not None and positive_int("train_gpus", train_gpus) != e * tg * pg:
            raise ValueError(f"colocated: train_gpus must be engines x rollout_tp x rollout_pp = {e * tg * pg}")
        k = t * p // (tg * pg)  # the micro-DP group
        per_gpu = (t * p - tg * pg) * W // (tg * pg * t * p)
        per_engine = tg * pg * per_gpu
        seconds = collective_seconds("all-gather", kept, k, beta, alpha_s) if k > 1 else 0.0
    return WeightSync(method, m.name, W, e, tg, per_gpu, per_engine, kept, beta, seconds, name)


__all__ = ["SYNC_METHODS", "WeightSync", "weight_sync"]
