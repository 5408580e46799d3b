"""Which tensors one GPU holds: its pipeline stage, split by tensor parallelism and expert
parallelism, and the LoRA adapters on it. Counts only; the byte widths are decided in terms.py.

Layers need not be alike: a MoE model mixes dense and MoE layers (DeepSeek's first
`first_k_dense_replace` layers, Llama 4's interleaved ones), so each layer tensor belongs to
the layers that hold it (`layer_indices`) and a pipeline stage counts the ones in its range.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from math import gcd

from memlib._checks import flag
from memlib.training import lora as lora_mod
from memlib.models import Model, Tensor
from memlib.models.layer_pattern import LayerIndices, LayerPattern
from memlib.training.options import TrainingSetup

# Tensors split by Megatron tensor parallelism are those with a Tensor.tp: column-parallel (q, k,
# v, gate, up, MLA's q_b/kv_b: output dim), row-parallel (o, down: input dim), the column-parallel
# biases, and the vocabulary-parallel embedding and head. Norms, routers and row-parallel biases are
# replicated. Kept for readers: the LLaMA layer's split tensors.
TP_SPLIT = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "embed_tokens",
            "lm_head", "q_proj.bias", "k_proj.bias", "v_proj.bias", "gate_proj.bias", "up_proj.bias")
COLUMN_PARALLEL = ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj", "qkv_proj", "gate_up_proj", "lm_head")
# The attention half of a decoder layer: its pre-norm, projections, q/k norms and sinks (MLA's too).
ATTN_TENSORS = ("input_layernorm", "q_proj", "k_proj", "v_proj", "o_proj", "qkv_proj", "q_norm", "k_norm",
                "sinks", "q_a_proj", "q_a_layernorm", "q_b_proj", "kv_a_proj_with_mqa", "kv_a_layernorm",
                "kv_b_proj")
MOE_TENSORS = ("router", "experts.", "shared_expert.")  # the MoE block's tensors (Model._moe_tensors)
DENSE_MLP = ("gate_proj", "up_proj", "down_proj", "gate_up_proj", "fc_in", "fc_out")
OUTSIDE_LAYERS = ("embed", "final", "lm_head", "score")


@dataclass(frozen=True)
class Stage:
    """The part of the model one GPU holds: its pipeline stage, split by tp. The name is a label only (not part of
    equality or the hash), so stages that hold the same layers share the per-stage caches."""

    name: str = field(compare=False)
    layers: int
    in_flight: int  # micro-batches whose activations 1F1B keeps on this stage
    embed: bool
    head: bool
    first_layer: int = 0  # index of the stage's first decoder layer
    chunks: int = 1  # model chunks this GPU holds (Megatron's interleaved 1F1B, vpp): `layers` is one chunk's


def pipeline_split(num_layers: int, pp: int) -> list[tuple[int, int]]:
    """(first layer, number of layers) of each of the pp stages: the decoder layers split evenly, the remainder
    L mod pp going one each to the earliest stages (torchtitan's generate_llm_fqn_per_model_part,
    torchtitan/distributed/pipeline_parallel.py, which by default also weighs the embedding and the head as a
    layer each; memlib does not. Megatron-LM requires L divisible by pp unless told the first/last stages' sizes)."""
    q, r = divmod(num_layers, pp)
    out, first = [], 0
    for i in range(pp):
        n = q + (1 if i < r else 0)
        out.append((first, n))
        first += n
    return out


def all_stages(s: TrainingSetup) -> list[Stage]:
    """Every stage of the layout, first to last (one: the whole model when pp = 1).

    1F1B (Narayanan et al. 2021, Sec. 2.2): stage i (0-based) keeps up to pp - i micro-batches in flight, at most
    the grad_accum micro-batches of the step. device_map (transformers' device_map="auto", naive model
    parallelism): one micro-batch goes through the GPUs one after another, so each holds its layers' activations
    of one. Interleaved 1F1B (vpp > 1 model chunks per GPU, Narayanan et al. 2021 Sec. 2.2): see interleaved_stages."""
    if s.pp == 1:
        return [Stage("only", s.model.num_layers, 1, True, True)]
    if s.vpp > 1:
        return interleaved_stages(s.model.num_layers, s.pp, s.vpp, s.grad_accum)
    return [_stage(s, i) for i in range(s.pp)]


def _split_at(num_layers: int, pp: int, i: int) -> tuple[int, int]:
    """pipeline_split(num_layers, pp)[i] in O(1)."""
    q, r = divmod(num_layers, pp)
    return i * q + min(i, r), q + (1 if i < r else 0)


def _stage(s: TrainingSetup, i: int) -> Stage:
    """Stage i of all_stages(s) (pp > 1), in O(1) (O(pp) with an explicit pp_split)."""
    pp = s.pp
    if s.pp_split:
        first, n = sum(s.pp_split[:i]), s.pp_split[i]
    else:
        first, n = _split_at(s.model.num_layers, pp, i)
    where = f"layers {first}-{first + n - 1}" if n > 1 else f"layer {first}"
    if s.sharding == "device_map":
        name, in_flight = f"GPU {i + 1} of {pp} (device_map, {where})", 1
    else:
        name, in_flight = f"pipeline stage {i + 1} of {pp} ({where})", min(pp - i, s.grad_accum)
    return Stage(name, n, in_flight, i == 0, i == pp - 1, first)


def interleaved_chunks_in_flight(pp: int, vpp: int, rank: int, micro_batches: int) -> int:
    """Model-chunk forwards whose activations pipeline GPU `rank` (0-based) holds at its peak under Megatron's
    interleaved 1F1B: its warm-up forwards, 2 (pp - rank - 1) + (vpp - 1) x pp, plus the one forward of the first
    1F1B step, at most all micro_batches x vpp of the step (NVIDIA/Megatron-LM@d98e8a64
    megatron/core/pipeline_parallel/schedules.py get_pp_rank_microbatches, microbatch_group_size_per_vp_stage =
    pp by default). On the first GPU that is pp x vpp + pp - 1 chunks of L / (pp vpp) layers: L (1 + (pp - 1) /
    (pp vpp)) layers, theoretical_memory_usage.py's "interleaved schedule memory penalty" (Narayanan et al. 2021,
    Sec. 2.2: the interleaved schedule keeps more activations in flight)."""
    warmup = 2 * (pp - rank - 1) + (vpp - 1) * pp
    return min(micro_batches * vpp, warmup + 1)


def interleaved_stages(L: int, pp: int, vpp: int, micro_batches: int) -> list[Stage]:
    """GPU i of pp holds vpp chunks of L / (pp vpp) layers (chunk j of GPU i is layers (j pp + i) x n ...); the
    embedding is in GPU 0's first chunk, the head in the last GPU's last chunk. Layers are alike (checked), so each
    Stage counts its chunk's layers from i x L / pp and its parameters over all chunks (Stage.chunks)."""
    n = L // (pp * vpp)
    out = []
    for i in range(pp):
        k = interleaved_chunks_in_flight(pp, vpp, i, micro_batches)
        out.append(Stage(f"pipeline GPU {i + 1} of {pp} ({vpp} chunks of {n} layer{'s' if n > 1 else ''}, "
                         f"{k} chunk forwards in flight)", n, k, i == 0, i == pp - 1, i * n * vpp, vpp))
    return out


def stages(s: TrainingSetup) -> list[Stage]:
    """The stages whose peaks decide the per-GPU figure, first to last: every distinct stage of all_stages().

    Stages differ in their layers (dense or MoE, sliding or full attention: a middle stage of DeepSeek-V3 holds
    only MoE layers, the first stage dense ones), in the micro-batches in flight and in the embedding (first)
    and head (last). Two stages without embedding or head whose layers are of the same kinds in the same order
    differ only in the micro-batches in flight, and every activation term grows with those: of such stages only
    the one with the most in flight (the earliest) can be the heaviest, and it alone is evaluated."""
    m = s.model
    if s.pp == 1 or s.vpp > 1:  # interleaved: pp stages of alike layers (checked), each evaluated
        return all_stages(s)
    kept: dict = {}
    candidates = range(s.pp) if s.pp_split else _candidate_stages(m.layer_kind_pattern, m.num_layers, s.pp)
    for i in candidates:
        st = _stage(s, i)
        if st.embed or st.head:
            kept[("end", st.first_layer)] = st
            continue
        key = m.layer_kind_pattern[st.first_layer:st.first_layer + st.layers]  # its layers' kinds, in order
        if key not in kept or st.in_flight > kept[key].in_flight:
            kept[key] = st
    return sorted(kept.values(), key=lambda st: st.first_layer)


def _candidate_stages(pattern: LayerPattern, num_layers: int, pp: int):
    """Indices of the stages that can be the earliest of their kind, without visiting all pp of them (pp may be
    num_layers): in a segment of the layer pattern (a block of period P repeated), stages of n layers that lie
    inside it repeat their layers' kinds every P / gcd(P, n) stages, and the micro-batches in flight never grow
    with the stage index, so of those only the first cycle can be kept; the rest of the segment is skipped."""
    q, r = divmod(num_layers, pp)
    i = 0
    while i < pp:
        yield i
        first, n = _split_at(num_layers, pp, i)
        start, period, end = pattern.segment_at(first)
        if 0 < i and first + n <= end:  # a middle stage inside one segment: the same size until stage r
            cycle = period // gcd(period, n)
            # the last stage j of this size whose layers end inside the segment
            last_same = r - 1 if i < r else pp - 1
            base = i * q + min(i, r) - i * n  # first_j = base + j * n for stages of this size
            last_inside = min(last_same, (end - n - base) // n, pp - 2)  # the last stage (the head) is kept
            if last_inside - i > cycle:
                for j in range(i + 1, i + cycle + 1):
                    yield j
                i = last_inside + 1
                continue
        i += 1


def layer_indices(m: Model, t: Tensor) -> LayerIndices | None:
    """The decoder layers that hold tensor `t` (a LayerIndices: a sequence of indices kept as a pattern), or None
    for a tensor outside the layers (embeddings, final norm, head): the MoE block's tensors are in the MoE layers,
    the dense MLP's in the others."""
    if t.name.startswith(OUTSIDE_LAYERS):
        return None
    if m.is_moe:
        if t.name.startswith(MOE_TENSORS):
            return m.moe_layers
        if t.name.split(".")[0] in DENSE_MLP:
            return _dense_layers(m)
    return _all_layers(m)


@lru_cache(maxsize=256)
def _dense_layers(m: Model) -> LayerIndices:
    return m.moe_layers.complement()


@lru_cache(maxsize=256)
def _all_layers(m: Model) -> LayerIndices:
    return LayerIndices(LayerPattern.runs((True, m.num_layers)))


def is_attention_tensor(m: Model, name: str) -> bool:
    """Does the tensor belong to the attention half of its layer? Gemma's and OLMo 2's post-attention norm
    normalizes the attention output (attention half); LLaMA's is the MLP's pre-norm."""
    base = name.split(".")[0]
    if base == "post_attention_layernorm":
        return m.norm_layout != "pre"
    return base in ATTN_TENSORS


@lru_cache(maxsize=256)
def layer_kinds(m: Model, first_layer: int, layers: int) -> tuple[tuple[tuple[str, bool], int], ...]:
    """((attention type, is a MoE layer), how many) for the layers [first_layer, first_layer + layers), in order of
    first appearance (Model.layer_kinds: O(pattern), not O(layers))."""
    return tuple(m.layer_kinds(first_layer, first_layer + layers).items())


@dataclass(frozen=True)
class StageSums:
    """Element counts of one GPU's parameters that every estimate needs."""

    total: int
    linear: int  # matmul weights (what autocast casts), the tied head not counted twice
    layer_linear: int  # matmul weights of one decoder layer (the largest layer of the stage)
    layer_all: int  # all parameters of one decoder layer (the largest: what ZeRO-3/FSDP gathers at once)
    layer_linear_numels: tuple[int, ...]  # each matmul weight of one decoder layer (QLoRA quantizes these)
    layers_all: int = 0  # all parameters of the stage's decoder layers
    expert: int = 0  # routed experts' parameters on this GPU (their ZeRO group is dp / ep)


def stage_tensors(m: Model, s: TrainingSetup, st: Stage) -> list[tuple[Tensor, tuple[int, int] | None]]:
    """Parameter tensors on one GPU with their 2-D shapes (Adafactor, 8-bit Adam need them)."""
    return _stage_tensors(m, s.tp, st, s.ep, s.expert_tp)


def _tp_of(t: Tensor, tp: int, etp: int | None) -> int:
    """The tensor-parallel size `t` splits over: the routed experts' is etp (Megatron's
    --expert-tensor-parallel-size, tp by default), every other tensor's tp."""
    return (etp or tp) if t.experts else tp


def _split(t: Tensor, tp: int, ep: int, etp: int | None = None) -> int:
    """Elements of tensor `t` on one GPU: Tensor.tp's split over its tensor-parallel size (_tp_of) and whole routed
    experts over ep (expert parallelism)."""
    numel = t.numel // _tp_of(t, tp, etp) if t.tp else t.numel
    return numel // ep if t.experts else numel


@lru_cache(maxsize=512)
def _stage_tensors(m: Model, tp: int, st: Stage, ep: int = 1,
                   etp: int | None = None) -> list[tuple[Tensor, tuple[int, int] | None]]:
    h = m.hidden_size
    lo, hi = st.first_layer, st.first_layer + st.layers * st.chunks
    out = []
    for t in m.tensors():
        where = layer_indices(m, t)
        if where is not None:
            count = where.count_in(lo, hi)
        elif t.name.startswith("embed"):
            count = 1 if st.embed else 0
        else:  # final norm, lm_head
            count = 1 if st.head else 0
        if not count:
            continue
        numel = _split(t, tp, ep, etp)
        out.append((Tensor(t.name, numel, count, t.kind, experts=t.experts // ep if t.experts else 0),
                    _matrix_shape(t, _tp_of(t, tp, etp))))
    if m.tie_word_embeddings and st.head and not st.embed:  # Megatron keeps a tied copy on the last stage
        out.append((Tensor("lm_head (tied copy)", m.vocab_size * h // tp, 1), (m.vocab_size // tp, h)))
    return out


def _matrix_shape(t: Tensor, tp: int) -> tuple[int, int] | None:
    """(rows, columns) of one matrix of `t` on this GPU (weight layout: out x in; an embedding V x h), or None
    for a vector; a stacked expert tensor gives one expert's matrix (optimizers count Tensor.experts of them)."""
    if t.kind not in ("linear", "embedding") or len(t.shape) != 2:
        return None
    if t.kind == "embedding":
        rows, cols = t.shape
        return (rows // tp if t.tp else rows, cols)
    fan_in, fan_out = t.shape
    if t.tp in ("column", "vocab"):
        fan_out //= tp
    elif t.tp == "row":
        fan_in //= tp
    return (fan_out, fan_in)




@lru_cache(maxsize=512)
def _layer_tensors(m: Model, tp: int, ep: int, moe: bool, etp: int | None = None) -> tuple[Tensor, ...]:
    """One decoder layer's tensors on one GPU: a MoE layer's, or a dense layer's."""
    out = []
    for t in m.tensors():
        where = layer_indices(m, t)
        if where is None:
            continue
        if m.is_moe and len(where) != m.num_layers and (t.name.startswith(MOE_TENSORS) != moe):
            continue
        out.append(Tensor(t.name, _split(t, tp, ep, etp), 1, t.kind, experts=t.experts // ep if t.experts else 0))
    return tuple(out)


def layer_expert_numel(m: Model, tp: int, ep: int, etp: int | None = None) -> int:
    """Routed-expert elements of one MoE layer on one GPU (whole experts over ep, each split over etp, tp by
    default)."""
    return sum(t.numel for t in _layer_tensors(m, tp, ep, True, etp) if t.experts) if m.is_moe else 0


def representative_layer(m: Model, st: Stage) -> bool:
    """Which layer stands for "one decoder layer" of the stage (the largest): a MoE layer when it has one."""
    return any(moe for (_, moe), _ in layer_kinds(m, st.first_layer, st.layers))


@lru_cache(maxsize=512)
def stage_sums(m: Model, tp: int, st: Stage, ep: int = 1, etp: int | None = None) -> StageSums:
    ts = _stage_tensors(m, tp, st, ep, etp)
    layer = _layer_tensors(m, tp, ep, representative_layer(m, st), etp)
    linear = sum(t.numel * t.count for t, _ in ts if t.kind == "linear")
    if m.tie_word_embeddings and st.head and st.embed:  # the tied head is the embedding matrix
        linear += m.vocab_size * m.hidden_size // tp
    inside = [(t, where) for t, where in ((t, layer_indices(m, t)) for t, _ in ts) if where is not None]
    return StageSums(
        total=sum(t.numel * t.count for t, _ in ts), linear=linear,
        layer_linear=sum(t.numel for t in layer if t.kind == "linear"), layer_all=sum(t.numel for t in layer),
        layer_linear_numels=tuple(t.numel for t in layer if t.kind == "linear"),
        layers_all=sum(t.numel * t.count for t, _ in inside),
        expert=sum(t.numel * t.count for t, _ in ts if t.experts))


def adapter_tensors(m: Model, s: TrainingSetup, st: Stage) -> list[tuple[Tensor, tuple[int, int]]]:
    """LoRA A (r x in) and B (out x r) per target; tp splits B of column-parallel layers and A of row-parallel ones.
    With lora_head, the head's adapter (A: r x h, B: V x r, once) on the GPU holding the head."""
    out = _adapter_tensors(m, s.lora_targets, s.lora_rank, s.tp, st.layers)
    if s.lora_head and st.head:
        r = s.lora_rank
        out = out + [(Tensor("lm_head.lora_A", r * m.hidden_size, 1), (r, m.hidden_size)),
                     (Tensor("lm_head.lora_B", m.vocab_size // s.tp * r, 1), (m.vocab_size // s.tp, r))]
    return out


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
def half_weights(m: Model, moe: bool = False, ep: int = 1) -> dict[str, tuple[int, int, int]]:
    """Per decoder layer (a MoE layer's when `moe`), for each half: (matmul weight elements, all elements, largest
    matmul weight), on one GPU of the expert-parallel group (before the tp split, which the caller applies)."""
    moe = flag("moe", moe)
    layer = _layer_tensors(m, 1, ep, moe)
    out = {}
    for half in ("attn", "mlp"):
        w = [t for t in layer if t.kind != "embedding" and is_attention_tensor(m, t.name) == (half == "attn")]
        lin = [t.numel for t in w if t.kind == "linear"]
        out[half] = (sum(lin), sum(t.numel for t in w), max(lin))
    return out
