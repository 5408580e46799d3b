"""Layers as a pattern (issue 23 item 3): Model.layer_types is a LayerPattern and Model.moe_layers a LayerIndices,
and every count that used to walk the layers one by one now walks the pattern. These tests hold the pattern path
to a per-layer reference written here: the pattern expanded to plain tuples, kinds recounted with Counter, every
pipeline stage visited, tensors' layers counted index by index."""

from __future__ import annotations

import contextlib
import copy
import time
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlib import Model, estimate_inference, estimate_training
from memlib.models import layer_pattern as lp
from memlib.models.catalog import CATALOG
from memlib.models.hf_configs import HF_CONFIGS
from memlib.models.layer_pattern import LayerIndices, LayerPattern
from memlib.training import layout

LLAMA = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
         "num_hidden_layers": 2, "vocab_size": 1000}


# --- the per-layer reference ------------------------------------------------------------------------------
def ref_kind_list(m: Model) -> list:
    types = tuple(m.layer_types)
    moe = set(m.moe_layers) if m.is_moe else set()
    assert len(types) == m.num_layers
    return [(types[i], i in moe) for i in range(m.num_layers)]


def ref_layer_kinds(m: Model, first: int, layers: int) -> tuple:
    return tuple(Counter(ref_kind_list(m)[first:first + layers]).items())


def ref_layer_counts(m: Model) -> dict:
    c = Counter(tuple(m.layer_types))
    return {t: c[t] for t in ("full_attention", "sliding_attention", "chunked_attention") if c[t]}


def ref_stages(s) -> list:
    """layout.stages as it was: every stage visited, keyed by the tuple of its layers' kinds."""
    kinds = ref_kind_list(s.model)
    kept: dict = {}
    for st_ in layout.all_stages(s):
        if st_.embed or st_.head:
            kept[("end", st_.first_layer)] = st_
            continue
        key = tuple(kinds[st_.first_layer:st_.first_layer + st_.layers])
        if key not in kept or st_.in_flight > kept[key].in_flight:
            kept[key] = st_
    return sorted(kept.values(), key=lambda x: x.first_layer)


def ref_stage_tensors(m, tp, st_, ep=1, etp=None):
    """layout._stage_tensors with each tensor's layers listed and counted index by index."""
    lo, hi = st_.first_layer, st_.first_layer + st_.layers
    out = []
    for t in m.tensors():
        where = layout.layer_indices(m, t)
        if where is not None:
            count = sum(1 for i in tuple(where) if lo <= i < hi)
        elif t.name.startswith("embed"):
            count = 1 if st_.embed else 0
        else:
            count = 1 if st_.head else 0
        if not count:
            continue
        out.append((layout.Tensor(t.name, layout._split(t, tp, ep, etp), count, t.kind,
                                  experts=t.experts // ep if t.experts else 0),
                    layout._matrix_shape(t, layout._tp_of(t, tp, etp))))
    if m.tie_word_embeddings and st_.head and not st_.embed:
        h = m.hidden_size
        out.append((layout.Tensor("lm_head (tied copy)", m.vocab_size * h // tp, 1), (m.vocab_size // tp, h)))
    return out


@contextlib.contextmanager
def per_layer():
    """memlib switched to the per-layer reference path for the block."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(layout, "layer_kinds", ref_layer_kinds)
        mp.setattr(layout, "stages", ref_stages)
        mp.setattr(layout, "_stage_tensors", ref_stage_tensors)
        mp.setattr(Model, "layer_counts", ref_layer_counts)
        yield


def reference_twin(m: Model) -> Model:
    """The same model under another name: equal in everything the estimate reads, but no cache entry shared."""
    return m.with_(name=m.name + " (per-layer reference)")


OPTIONS = [dict(seq_len=512), dict(seq_len=512, pp=2, grad_accum=4), dict(seq_len=256, pp=4, grad_accum=8),
           dict(seq_len=256, pp=3, finetune="qlora")]  # QLoRA over pp GPUs: device_map


# --- (a) every catalog model: the same numbers as the per-layer reference ----------------------------------
@pytest.mark.parametrize("name", sorted(CATALOG))
def test_catalog_counts_match_per_layer_reference(name):
    m = CATALOG[name]
    kinds = ref_kind_list(m)
    assert m.layer_kinds() == dict(Counter(kinds))
    assert m.layer_counts() == ref_layer_counts(m)
    assert m.num_moe_layers == (len(set(m.moe_layers)) if m.is_moe else 0)
    for pp in (2, 3, 4):
        for first, n in layout.pipeline_split(m.num_layers, pp):
            assert layout.layer_kinds(m, first, n) == ref_layer_kinds(m, first, n)
    # every layer tensor's count is the number of layers holding it, counted index by index
    total = 0
    for t in m.tensors():
        where = layout.layer_indices(m, t)
        if where is None:
            total += t.numel * t.count
            continue
        if t.name.startswith(layout.MOE_TENSORS):
            holders = [i for i, (_, moe) in enumerate(kinds) if moe]
        elif m.is_moe and t.name.split(".")[0] in layout.DENSE_MLP:
            holders = [i for i, (_, moe) in enumerate(kinds) if not moe]
        else:
            holders = list(range(m.num_layers))
        assert list(where) == holders and t.count == len(holders), t.name
        total += t.numel * len(holders)
    assert m.num_params == total


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_catalog_estimates_match_per_layer_reference(name):
    m = CATALOG[name]
    options = [o for o in OPTIONS if o.get("pp", 1) <= m.num_layers]

    def peaks(model):
        out = []
        for o in options:
            try:
                out.append(estimate_training(model, **o).peak_bytes)
            except ValueError as e:  # e.g. QLoRA of a GPT-style model: refused the same way on both paths
                out.append(str(e).replace(model.name, "M"))
        return out + [estimate_inference(model, context_len=min(4096, model.max_position_embeddings)).peak_bytes]
    got = peaks(m)
    assert sum(isinstance(x, int) for x in got) >= 2  # GPT-style models: pp=1 and serving only
    with per_layer():
        want = peaks(reference_twin(m))
    assert got == want


def test_stages_skip_only_repeats():
    """layout.stages visits a cycle of each segment, not every stage: the stages it keeps are the reference's."""
    for name in ("deepseek-v3", "gemma-3-27b", "llama-4-maverick", "gpt-oss-20b", "qwen3-30b-a3b", "llama-3.1-8b"):
        m = CATALOG[name]
        for pp in (2, 3, 5, 7, 8, 13, m.num_layers // 2, m.num_layers - 1, m.num_layers):
            for ga in (1, 3, 64):
                s = estimate_training(m, seq_len=256, pp=pp, grad_accum=ga).setup
                assert layout.stages(s) == ref_stages(s), (name, pp, ga)


# --- (b) properties: random per-layer tuples round-trip through the compact form ---------------------------
values = st.sampled_from(["full_attention", "sliding_attention", "chunked_attention"])
blocks = st.lists(values, min_size=1, max_size=7)
sequences = st.builds(lambda head, block, reps, tail: head + block * reps + tail,
                      st.lists(values, max_size=5), blocks, st.integers(1, 9), st.lists(values, max_size=5))


@settings(max_examples=150, deadline=None)
@given(seq=sequences, data=st.data(), small=st.sampled_from([lp.SMALL, 0]))
def test_pattern_round_trip(seq, data, small):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lp, "SMALL", small)  # 0: the segments kept as built (the path of huge patterns)
        _round_trip(seq, data, small)


def _round_trip(seq, data, small):
    seq = tuple(seq)
    p = LayerPattern.of(seq)
    assert len(p) == len(seq) and tuple(p) == seq and p == seq and list(p) == list(seq)
    assert all(p[i] == seq[i] for i in range(-len(seq), len(seq)))
    lo = data.draw(st.integers(0, len(seq)))
    hi = data.draw(st.integers(lo, len(seq)))
    assert p.counts(lo, hi) == dict(Counter(seq[lo:hi]))
    assert tuple(p[lo:hi]) == seq[lo:hi]
    assert all((v in p) == (v in seq) for v in ("full_attention", "sliding_attention", "chunked_attention", 3))
    n = data.draw(st.integers(1, 3 * len(seq)))
    assert tuple(p.cycled(n)) == tuple(seq[i % len(seq)] for i in range(n))
    moe = data.draw(st.lists(st.integers(0, len(seq) - 1), unique=True))
    idx = LayerIndices.from_indices(moe, len(seq))
    assert list(idx) == sorted(moe) and len(idx) == len(moe) and idx == tuple(sorted(moe))
    assert all(idx[k] == v for k, v in enumerate(sorted(moe)))
    assert all((i in idx) == (i in moe) for i in range(-1, len(seq) + 1))
    assert idx.count_in(lo, hi) == sum(lo <= i < hi for i in moe)
    z = p.zip(idx.mask)
    assert tuple(z) == tuple((t, i in moe) for i, t in enumerate(seq))
    assert z.counts(lo, hi) == dict(Counter((seq[i], i in moe) for i in range(lo, hi)))
    if small:  # canonical: whatever built it, an equal sequence is an equal pattern with the tuple's hash
        assert hash(p) == hash(seq) and p == LayerPattern(((tuple((v, 1) for v in seq), 1),))
        assert hash(idx) == hash(tuple(sorted(moe)))


@settings(max_examples=60, deadline=None)
@given(kinds=st.lists(st.tuples(st.sampled_from(["full_attention", "sliding_attention"]), st.booleans()),
                      min_size=2, max_size=40),
       data=st.data())
def test_models_from_per_layer_tuples(kinds, data):
    """A Model given explicit per-layer tuples compresses them and estimates as the per-layer reference does."""
    types = tuple(t for t, _ in kinds)
    moe = tuple(i for i, (_, e) in enumerate(kinds) if e)
    kw = dict(hidden_size=64, num_layers=len(kinds), num_heads=4, intermediate_size=128, vocab_size=1000,
              layer_types=types, sliding_window=16)
    if moe:
        kw.update(num_experts=4, num_experts_per_tok=2, moe_layers=moe)
    m = Model("random", **kw)
    assert m.layer_types == types and tuple(m.moe_layers) == moe and m.moe_layers == moe  # no MoE layer: dense
    assert m == Model("random", **kw) and hash(m) == hash(Model("random", **{**kw, "layer_types": list(types)}))
    pp = data.draw(st.integers(1, len(kinds)))
    ga = data.draw(st.integers(1, 9))
    got = estimate_training(m, seq_len=64, pp=pp, grad_accum=ga)
    assert layout.stages(got.setup) == ref_stages(got.setup)
    with per_layer():
        want = estimate_training(reference_twin(m), seq_len=64, pp=pp, grad_accum=ga)
    assert got.peak_bytes == want.peak_bytes


# --- (c) huge layer counts: a clear error or a fast answer --------------------------------------------------
def test_huge_layer_count_refused_fast():
    t = time.perf_counter()
    with pytest.raises(ValueError, match="num_layers 1,000,000,000,000 is more than memlib models .*at most"):
        Model.from_hf_config({**LLAMA, "num_hidden_layers": 10**12})
    assert time.perf_counter() - t < 5


def _deep(name: str, n: int) -> Model:
    cfg = copy.deepcopy(HF_CONFIGS[name]["config"])
    text = cfg.get("text_config", cfg)
    text["num_hidden_layers"] = n
    text.pop("layer_types", None)  # gpt-oss lists its 24 layers; the family's rule (alternating) instead
    return Model.from_hf_config(cfg, name=name)


def test_billion_layers_counted_by_pattern_fast():
    """10**9 layers of each family: the kinds counted from the family's rule by hand, every entry point in ms."""
    n = 10**9
    t = time.perf_counter()
    ds, gemma, maverick = _deep("deepseek-v3", n), _deep("gemma-3-27b", n), _deep("llama-4-maverick", n)
    # DeepSeek-V3: first_k_dense_replace = 3 dense layers, then MoE (transformers' DeepseekV3DecoderLayer)
    assert ds.layer_kinds() == {("full_attention", False): 3, ("full_attention", True): n - 3}
    # Gemma 3: every 6th layer global (sliding_window_pattern 6), the others sliding
    assert gemma.layer_counts() == {"full_attention": n // 6, "sliding_attention": n - n // 6}
    # Llama 4 Maverick: MoE every 2nd layer (interleave_moe_layer_step 2); every 4th layer without RoPE attends
    # fully (no_rope_layer_interval 4), the others in chunks: layer i is (i % 4 == 3: full, MoE), odd: MoE
    assert maverick.layer_kinds() == {("chunked_attention", False): n // 2, ("chunked_attention", True): n // 4,
                                      ("full_attention", True): n // 4}
    def among(lo, hi, mod, r):  # how many i in [lo, hi) have i % mod == r
        return (hi - r + mod - 1) // mod - (lo - r + mod - 1) // mod
    for first, layers in (layout.pipeline_split(n, 7)[3], layout.pipeline_split(n, 3)[1]):  # middle stages
        lo, hi = first, first + layers
        assert dict(layout.layer_kinds(maverick, first, layers)) == {
            ("chunked_attention", False): among(lo, hi, 2, 0), ("chunked_attention", True): among(lo, hi, 4, 1),
            ("full_attention", True): among(lo, hi, 4, 3)}
    for m in (ds, gemma, maverick, _deep("gpt-oss-20b", n), _deep("qwen3-30b-a3b", n)):
        estimate_inference(m, context_len=4096)
        for o in ({"pp": 4, "grad_accum": 8}, {"pp": n, "dp": 2**20, "zero_stage": 1}):
            try:
                estimate_training(m, seq_len=512, **o)
            except ValueError as e:  # bytes past 2**53: refused clearly, not computed wrong
                assert "2**53" in str(e)
    assert time.perf_counter() - t < 5


def test_with_keeps_the_pattern_without_expanding():
    ds = CATALOG["deepseek-v3"]  # 3 dense layers, then 58 MoE; Model.with_ keeps the MoE layers where they were
    deep = ds.with_(num_layers=100_000)
    assert deep.layer_kinds() == {("full_attention", False): 100_000 - 58, ("full_attention", True): 58}
    assert list(deep.moe_layers) == list(range(3, 61))
    assert len(deep.layer_types.segments) == 1 and len(deep.moe_layers.mask.segments) <= 2
    gemma = CATALOG["gemma-3-27b"]  # 5 sliding : 1 full, repeated cyclically
    g = gemma.with_(num_layers=99_999)
    want = Counter(gemma.layer_types[i % gemma.num_layers] for i in range(99_999))
    assert g.layer_counts() == {t: want[t] for t in ("full_attention", "sliding_attention")}
