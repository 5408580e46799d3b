"""Which tensors one GPU holds: its pipeline stage, split by tensor parallelism, and the
LoRA adapters on it. Counts only; the byte widths are decided in terms.py."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from memlib import lora as lora_mod
from memlib.models import Model, Tensor
from memlib.training.options import TrainingSetup

# Tensors split by Megatron tensor parallelism: column-parallel (q, k, v, gate, up: output
# dim) and row-parallel (o, down: input dim) weights, the column-parallel biases, and the
# vocabulary-parallel embedding and head. Norms and row-parallel biases are replicated.
TP_SPLIT = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "embed_tokens",
            "lm_head", "q_proj.bias", "k_proj.bias", "v_proj.bias", "gate_proj.bias", "up_proj.bias")
COLUMN_PARALLEL = ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj")
ATTN_TENSORS = ("input_layernorm", "q_proj", "k_proj", "v_proj", "o_proj")


@dataclass(frozen=True)
class Stage:
    """The part of the model one GPU holds: its pipeline stage, split by tp."""

    name: str
    layers: int
    in_flight: int  # micro-batches whose activations 1F1B keeps on this stage
    embed: bool
    head: bool


def stages(s: TrainingSetup) -> list[Stage]:
    """The whole model, or the first and last pipeline stages (the two that can peak)."""
    L, pp = s.model.num_layers, s.pp
    if pp == 1:
        return [Stage("only", L, 1, True, True)]
    first = -(-L // pp)  # earlier stages take the remainder
    last = L // pp
    if s.sharding == "device_map":
        # Naive model parallelism (transformers' device_map="auto", accelerate's balanced split): one
        # micro-batch goes through the GPUs one after another, so each holds its layers' activations of one.
        return [Stage("first GPU (device_map)", first, 1, True, False), Stage("last GPU (device_map)", last, 1,
                                                                              False, True)]
    # 1F1B (Narayanan et al. 2021, Sec. 2.2): stage i keeps up to pp - i micro-batches in flight.
    return [Stage("first pipeline stage", first, min(pp, s.grad_accum), True, False),
            Stage("last pipeline stage", last, 1, False, True)]


@dataclass(frozen=True)
class StageSums:
    """Element counts of one GPU's parameters that every estimate needs."""

    total: int
    linear: int  # matmul weights (what autocast casts), the tied head not counted twice
    layer_linear: int  # matmul weights of one decoder layer
    layer_all: int  # all parameters of one decoder layer
    layer_linear_numels: tuple[int, ...]  # each matmul weight of one decoder layer (QLoRA quantizes these)


def stage_tensors(m: Model, s: TrainingSetup, st: Stage) -> list[tuple[Tensor, tuple[int, int] | None]]:
    """Parameter tensors on one GPU with their 2-D shapes (Adafactor, 8-bit Adam need them)."""
    return _stage_tensors(m, s.tp, st)


@lru_cache(maxsize=512)
def _stage_tensors(m: Model, tp: int, st: Stage) -> list[tuple[Tensor, tuple[int, int] | None]]:
    h = m.hidden_size
    out = []
    for t in m.tensors():
        if t.count == m.num_layers and not t.name.startswith(("embed", "final", "lm_head")):
            count = st.layers
        elif t.name.startswith("embed"):
            count = 1 if st.embed else 0
        else:  # final norm, lm_head
            count = 1 if st.head else 0
        if not count:
            continue
        numel = t.numel // tp if t.name in TP_SPLIT else t.numel
        shape = (numel // h, h) if t.kind in ("linear", "embedding") else None
        out.append((Tensor(t.name, numel, count, t.kind), shape))
    if m.tie_word_embeddings and st.head and not st.embed:  # Megatron keeps a tied copy on the last stage
        out.append((Tensor("lm_head (tied copy)", m.vocab_size * h // tp, 1), (m.vocab_size // tp, h)))
    return out


@lru_cache(maxsize=512)
def stage_sums(m: Model, tp: int, st: Stage) -> StageSums:
    ts = _stage_tensors(m, tp, st)
    layer = [t for t, _ in ts if t.count == st.layers and not t.name.startswith(("embed", "final", "lm_head"))]
    linear = sum(t.numel * t.count for t, _ in ts if t.kind == "linear")
    if m.tie_word_embeddings and st.head and st.embed:  # the tied head is the embedding matrix
        linear += m.vocab_size * m.hidden_size // tp
    return StageSums(
        total=sum(t.numel * t.count for t, _ in ts), linear=linear,
        layer_linear=sum(t.numel for t in layer if t.kind == "linear"), layer_all=sum(t.numel for t in layer),
        layer_linear_numels=tuple(t.numel for t in layer if t.kind == "linear"))


def adapter_tensors(m: Model, s: TrainingSetup, st: Stage) -> list[tuple[Tensor, tuple[int, int]]]:
    """LoRA A (r x in) and B (out x r) per target; tp splits B of column-parallel layers and A of row-parallel ones."""
    return _adapter_tensors(m, s.lora_targets, s.lora_rank, s.tp, st.layers)


@lru_cache(maxsize=512)
def _adapter_tensors(m: Model, targets: tuple, rank: int, tp: int, layers: int):
    out = []
    for name in targets:
        fan_in, fan_out = lora_mod.linear_shape(m, name)
        a_in = fan_in if name in COLUMN_PARALLEL else fan_in // tp
        b_out = fan_out // tp if name in COLUMN_PARALLEL else fan_out
        out.append((Tensor(f"{name}.lora_A", rank * a_in, layers), (rank, a_in)))
        out.append((Tensor(f"{name}.lora_B", b_out * rank, layers), (b_out, rank)))
    return out


def trainable_tensors(s: TrainingSetup, st: Stage):
    """(Tensor, 2-D shape or None) for every trainable tensor on the GPU holding `st`."""
    return stage_tensors(s.model, s, st) if s.finetune == "full" else adapter_tensors(s.model, s, st)


def numel(tensors) -> int:
    return sum(t.numel * t.count for t, _ in tensors)


@lru_cache(maxsize=256)
def half_weights(m: Model) -> dict[str, tuple[int, int, int]]:
    """Per decoder layer, for each half: (matmul weight elements, all elements, largest matmul weight)."""
    out = {}
    for half in ("attn", "mlp"):
        w = [t for t in m.tensors() if t.count == m.num_layers and t.kind != "embedding"
             and t.name.split(".")[0].startswith(ATTN_TENSORS) == (half == "attn")
             and not t.name.startswith(("final", "lm_head"))]
        lin = [t.numel for t in w if t.kind == "linear"]
        out[half] = (sum(lin), sum(t.numel for t in w), max(lin))
    return out
