"""Pipeline parallelism: the per-GPU figure is the heaviest stage's, every stage considered.

A model whose layers differ (DeepSeek's first `first_k_dense_replace` layers dense, the rest MoE) can have a middle
stage heavier than the first (embedding, most micro-batches in flight) and the last (head, logits). The stages here
are built by the tests themselves (their own split of the layers and their own 1F1B in-flight counts) and each is
evaluated with the per-stage model, so a layout that checks only some stages is caught.
"""

from __future__ import annotations

import pytest

from memlib.hardware.fit import fits
from memlib.hardware.gpus import get_gpu
from memlib.models import Model, get_model
from memlib.parallel.plan import min_gpus
from memlib.training import estimate_training
from memlib.training import layout
from memlib.training.layout import Stage
from memlib.training.step import _estimate_stage

# A tiny DeepSeek-style MoE: 8 LLaMA-type layers, the first 3 dense (first_k_dense_replace = 3), then 5 MoE layers of
# 16 routed experts (top-2, width 64). A 32-token vocabulary keeps the head small, so the middle stages decide.
H, E, IE, V = 64, 16, 64, 32
TINY = Model("tiny-deepseek-style", hidden_size=H, num_layers=8, num_heads=4, intermediate_size=128, vocab_size=V,
             num_experts=E, num_experts_per_tok=2, moe_intermediate_size=IE, moe_layers=tuple(range(3, 8)))
# A dense one whose layers 4-5 alone attend over a sliding window (Gemma/gpt-oss-style mixes of local and global layers)
SLIDING = Model("tiny-sliding-mix", hidden_size=H, num_layers=8, num_heads=4, intermediate_size=128, vocab_size=V,
                layer_types=("full_attention",) * 4 + ("sliding_attention",) * 2 + ("full_attention",) * 2,
                sliding_window=32)
PP, M, SEQ = 4, 8, 256  # 4 stages, 8 micro-batches per step


def hand_stages(num_layers: int, pp: int, grad_accum: int) -> list[Stage]:
    """Every stage, as written out here: L = q*pp + r, the first r stages one layer more (torchtitan's split);
    1F1B: stage i (0-based) keeps min(pp - i, m) micro-batches in flight (Narayanan et al. 2021, Sec. 2.2)."""
    q, r = divmod(num_layers, pp)
    out, first = [], 0
    for i in range(pp):
        n = q + (1 if i < r else 0)
        out.append(Stage(f"hand stage {i}", n, min(pp - i, grad_accum), i == 0, i == pp - 1, first))
        first += n
    return out


def test_split_gives_the_remainder_to_the_earliest_stages():
    # 61 = 31 x 1 + 30: the first 30 stages hold 2 layers, the last one 1 (DeepSeek-V3 at pp=31)
    split = layout.pipeline_split(61, 31)
    assert split[:30] == [(2 * i, 2) for i in range(30)] and split[30] == (60, 1)
    assert layout.pipeline_split(8, 4) == [(0, 2), (2, 2), (4, 2), (6, 2)]
    assert layout.pipeline_split(10, 4) == [(0, 3), (3, 3), (6, 2), (8, 2)]


def test_tiny_deepseek_style_heaviest_stage_is_a_middle_one():
    """pp = 4 over 8 layers (dense 0-2, MoE 3-7), 2 layers a stage, m = 8 micro-batches:

        stage  layers  kinds          in flight (min(4 - i, 8))   embedding / head
        0      0-1     dense, dense   4                           embedding
        1      2-3     dense, MoE     3
        2      4-5     MoE, MoE       2
        3      6-7     MoE, MoE       1                           final norm + head

    Parameters of one MoE layer (LLaMA layer, no biases, 4 heads of 16 = h):
        input_layernorm h + q, k, v, o 4h^2 + post_attention_layernorm h + router E*h + experts 3*E*h*Ie
        = 128 + 16,384 + 1,024 + 196,608 = 214,144
    Stage 2 holds 2 of them: 428,288 parameters; stage 3 the same plus the final norm (64) and the head (32 x 64).
    Stage 2 keeps two micro-batches' activations of its two MoE layers, stage 3 one (and the tiny vocabulary's
    logits): stage 2 is the heaviest. Under Megatron mixed precision a parameter costs 2 (bf16 weight) + 4 (fp32 main
    gradient) + 12 (fp32 master, Adam m and v) = 18 bytes (Megatron-LM's distributed optimizer paper table, and the
    estimate's own note)."""
    est = estimate_training(TINY, seq_len=SEQ, pp=PP, grad_accum=M)
    s = est.setup
    stages = hand_stages(TINY.num_layers, PP, M)
    assert [(st.first_layer, st.layers, st.in_flight) for st in stages] == [(0, 2, 4), (2, 2, 3), (4, 2, 2), (6, 2, 1)]
    peaks = [_estimate_stage(s, st).peak_bytes for st in stages]
    heaviest = max(range(PP), key=lambda i: peaks[i])
    assert heaviest == 2, peaks
    assert peaks[2] > max(peaks[0], peaks[3])  # a middle stage outweighs both ends
    # the estimate is that stage's figure, and it says so
    assert est.peak_bytes == peaks[2]
    assert est.stage.startswith("pipeline stage 3 of 4 (layers 4-5)")
    assert "pipeline stage 3 of 4" in est.peak_moment.where and "stage 3 of 4" in est.explain()
    # its model states, from the parameter count written out above
    moe_layer = 2 * H + 4 * H * H + E * H + 3 * E * H * IE
    assert moe_layer == 214_144
    stage_params = 2 * moe_layer
    assert est.counts["trainable"] == stage_params
    assert (est.counts["param_bytes"], est.counts["grad_bytes"], est.counts["optimizer_bytes"]) == \
        (2 * stage_params, 4 * stage_params, 12 * stage_params)
    # the last stage holds more parameters (the head) yet less: its model states are not what decides
    last = _estimate_stage(s, stages[3])
    assert last.counts["trainable"] == stage_params + H + V * H


def test_middle_stage_grows_with_micro_batches_in_flight():
    """layout.stages() evaluates, of the middle stages with the same layers, only the one with the most micro-batches
    in flight: that relies on a stage's peak never falling as micro-batches in flight are added."""
    cases = [(TINY, kw) for kw in (dict(), dict(recompute="full"), dict(zero_stage=1, dp=2),
                                   dict(tp=2, sequence_parallel=True))]
    cases += [(SLIDING, dict(finetune="lora")), (SLIDING, dict(finetune="lora", recompute="full")),
              (get_model("llama-7b").with_(num_layers=8), dict(recompute="selective"))]
    for model, kw in cases:
        s = estimate_training(model, seq_len=SEQ, pp=PP, grad_accum=M, **kw).setup
        peaks = [_estimate_stage(s, Stage("mid", 2, k, False, False, 4)).peak_bytes for k in (1, 2, 3, 4)]
        assert peaks == sorted(peaks) and peaks[0] < peaks[-1], (model.name, kw, peaks)


def test_stages_evaluated_cover_every_distinct_stage():
    s = estimate_training("deepseek-v3", seq_len=2048, tp=4, pp=31, grad_accum=8).setup
    every = layout.all_stages(s)
    assert len(every) == 31 and sum(st.layers for st in every) == 61
    assert [st.in_flight for st in every] == [min(31 - i, 8) for i in range(31)]
    picked = layout.stages(s)
    # the two dense-holding stages, one all-MoE middle stage (8 in flight, the earliest such), and the last
    assert [(st.first_layer, st.layers, st.in_flight, st.embed, st.head) for st in picked] == [
        (0, 2, 8, True, False), (2, 2, 8, False, False), (4, 2, 8, False, False), (60, 1, 1, False, True)]


def test_device_map_every_gpu_considered():
    """QLoRA over pp GPUs (device_map): one micro-batch at a time, so each GPU holds one micro-batch's activations of
    its layers. With layers 4-5 the only sliding-window ones (window 32 < 256 tokens: each keeps its (b, 1, s, s)
    mask, terms.window_mask_activations) the third GPU is the heaviest, heavier than the first and the last."""
    est = estimate_training(SLIDING, seq_len=SEQ, finetune="qlora", pp=PP)
    s = est.setup
    stages = [Stage(st.name, st.layers, 1, st.embed, st.head, st.first_layer)
              for st in hand_stages(SLIDING.num_layers, PP, M)]
    peaks = [_estimate_stage(s, st).peak_bytes for st in stages]
    assert peaks[2] > max(peaks[0], peaks[1], peaks[3]), peaks
    assert est.peak_bytes == peaks[2]
    assert est.stage.startswith("GPU 3 of 4 (device_map, layers 4-5)")


@pytest.mark.parametrize("gpu", ["h100-80gb"])
def test_min_gpus_deepseek_v3_every_stage_fits(gpu):
    """Regression: min_gpus answered 124 H100s (tp=4, pp=31), checking only the first and last stages; its middle
    stages of two MoE layers with 8 micro-batches in flight need about 112 GiB. Every stage of every feasible layout
    of the answer must fit."""
    r = min_gpus("deepseek-v3", gpu)
    assert r is not None and r.feasible
    g = get_gpu(gpu)
    model = get_model("deepseek-v3")
    for p in r.feasible:
        s = p.estimate.setup
        if s.pp == 1:
            assert fits(p.estimate, g).fits
            continue
        for st in hand_stages(model.num_layers, s.pp, s.grad_accum):
            assert fits(_estimate_stage(s, st), g).fits, (p.describe(), st)
