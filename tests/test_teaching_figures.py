"""The teaching figures of notebooks 02-07 that a review corrected (issue 21), each against a hand derivation
written out here, and the stored notebooks' 30-second answers and fact-checks that quote them."""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import nbformat
import pytest

import memlib
from memlib.cost import conventions as cv
from memlib.hardware.fit import max_peak_bytes
from memlib.hardware.fit import largest_size_that_fits
from memlib.models.llama_like import LADDER_SHAPES, llama_like, llama_like_of_size
from memlib.parallel.moe import decode_weight_bytes
from memlib.serving.capacity import DecodeBound
from memlib.serving.inference import quantized_linear_bytes

ROOT = Path(__file__).resolve().parents[1]
NB = ROOT / "notebooks"
sys.path.insert(0, str(Path(__file__).parent))
from test_notebooks import _rendered_markdown, thirty_second_answers  # noqa: E402

LORA = dict(lora_targets="all-linear", lora_rank=16)
SEQ = 2048


# --- item 1: the size limit is searched continuously, not over ladder rungs ---------------------------

def test_interpolated_shapes_hit_the_rungs_and_fill_the_gaps():
    for h, L, _ in LADDER_SHAPES:  # at a rung, the rung itself
        n = llama_like(h, L).num_params
        m = llama_like_of_size(n)
        assert (m.hidden_size, m.num_layers) == (h, L)
    for n in (0.5e9, 2.2e9, 4e9, 10.5e9, 50e9, 300e9):  # between rungs and beyond: within 3% of the target
        assert llama_like_of_size(n).num_params == pytest.approx(n, rel=0.03)
    for bad in (0, -1e9, float("nan")):
        with pytest.raises(ValueError):
            llama_like_of_size(bad)


def test_a100_fully_trains_about_4b_with_adamw():
    # AMP AdamW peaks in the optimizer step at 16 B/param of states + 4 B/param of foreach AdamW's temporary
    # = 20 B/param; the largest peak memlib.fits accepts on an A100 80GB is ~80.4 GB -> 80.4e9 / 20 = 4.02e9.
    limit = largest_size_that_fits("a100-80gb", lambda m: memlib.estimate_training(m, SEQ, 1))
    assert max_peak_bytes(memlib.get_gpu("a100-80gb")) == pytest.approx(80.4e9, rel=0.002)
    assert limit.num_params == pytest.approx(80.4e9 / 20, rel=0.04)


def test_rtx_4090_limits_are_above_the_old_rungs():
    # the review: "4090: full 1.4B" -- a 2.2B shape fits with 8-bit AdamW + recompute
    # (4 + 4 + 2 = 10 B/param: 2.2e9 x 10 = 22 GB < ~23.6 GB); "LoRA 6.7B" -- a 10.5B shape fits at 23.2 GB
    # (16-bit base 2 B/param: 10.5e9 x 2 = 21 GB + adapters and activations).
    full = largest_size_that_fits("rtx-4090", lambda m: memlib.estimate_training(
        m, SEQ, 1, optimizer="adamw-8bit", recompute="full"))
    lora = largest_size_that_fits("rtx-4090", lambda m: memlib.estimate_training(
        m, SEQ, 1, finetune="lora", recompute="full", **LORA))
    assert full.num_params >= 2.2e9
    assert lora.num_params == pytest.approx(10.5e9, rel=0.03)
    peak = memlib.estimate_training(lora, SEQ, 1, finetune="lora", recompute="full", **LORA).peak_bytes
    assert peak == pytest.approx(23.2e9, rel=0.02)


def test_largest_size_that_fits_rejects_bad_bounds_and_says_none():
    with pytest.raises(ValueError):
        largest_size_that_fits("a100-80gb", lambda m: memlib.estimate_training(m, SEQ, 1), lo=5e9, hi=1e9)
    assert largest_size_that_fits("rtx-4090", lambda m: memlib.estimate_training(m, SEQ, 1), lo=50e9,
                                  hi=100e9) is None


# --- item 9: the optimizer step is bandwidth-bound; 8-bit moves fewer bytes -------------------------

def test_optimizer_step_bytes_by_hand():
    # AdamW: read w, g, m, v (4 B each) = 16, write w, m, v = 12 -> 28 B/param.
    # 8-bit: read w 4, g 4, m 1, v 1 = 10, write w 4, m 1, v 1 = 6, and an fp32 absmax per 256 values for m and v,
    # read and written: 2 x 2 x 4 / 256 = 0.0625 -> 16.0625 B/param.
    assert cv.optimizer_step_hbm_bytes(1_000_000, "adamw") == 28_000_000
    assert cv.optimizer_step_hbm_bytes(1_000_000, "adamw-8bit") == pytest.approx(16.0625e6)
    with pytest.raises(ValueError):
        cv.optimizer_step_hbm_bytes(10, "sgd")


# --- items 15-17: decode bound, AWQ bits, nvidia-smi ------------------------------------------------

def test_decode_bound_is_a_minimum_step_and_a_maximum_speed():
    # 80 GB read per step at 3.35 TB/s: the step takes at least 80e9 / 3.35e12 = 23.9 ms, so at most 41.9 tokens/s
    d = DecodeBound(batch=1, context_len=1, tp=1, weight_bytes=80 * 10**9, kv_bytes=0, flops=0.0,
                    bandwidth_bytes_per_s=3_350_000_000_000, peak_flops=989.4e12)
    assert d.step_s == pytest.approx(0.02388, rel=1e-3)
    assert d.tokens_per_s_per_sequence == pytest.approx(41.875, rel=1e-3)


def test_awq_is_4_156_bits_not_4_25():
    # AWQ int4: 4 bits + a 16-bit scale and a 4-bit zero per group of 128 = 4 + 16/128 + 4/128 = 4.15625 bits
    h, i = 8192, 28672
    assert quantized_linear_bytes(h, i, "int4-awq") * 8 / (h * i) == pytest.approx(4 + 16 / 128 + 4 / 128, rel=1e-9)


def test_h100_shows_81559_mib():
    # nvidia-smi's memory.total on an H100 SXM: 81,559 MiB = 81,559 / 1,024 = 79.65 GiB (not 80)
    g = memlib.get_gpu("h100-80gb")
    assert g.reported_total_mib == 81559
    assert g.reported_total_mib / 1024 == pytest.approx(79.65, abs=0.005)


# --- item 19: one convention for the input embedding in decode bandwidth ----------------------------

def test_decode_weight_bytes_leaves_out_the_input_embedding_like_decode_bound():
    # DeepSeek-V3's input table: 129,280 x 7,168 in bf16 = 1.853 GB; it is not read by a decode step
    ds = memlib.get_model("deepseek-v3")
    parts = memlib.estimate_inference(ds, batch=1, context_len=1).weight_parts
    assert parts["embedding"] == 129280 * 7168 * 2
    dense_read = sum(parts.values()) - parts["embedding"]  # a batch large enough to touch every expert
    assert decode_weight_bytes(ds, 10**6) == pytest.approx(dense_read, rel=1e-6)
    # and a dense model: decode_bound's weight bytes equal decode_weight_bytes at any batch
    m = memlib.get_model("llama-3-70b")
    b = memlib.serving.decode_bound(m, "h100-80gb", 1, 8192, weights="bf16")
    assert b.weight_bytes == decode_weight_bytes(m, 1, weights="bf16")


# --- items 20-24: FLOP conventions ----------------------------------------------------------------

def test_causal_attention_ratios_for_llama_3_1_8b():
    # PaLM's attention 12·L·H·Q·T = 12 x 32 x 4096 x 131072 = 2.062e11 per token at 128k; 6N = 6 x 8.030e9 = 4.818e10.
    # Non-causal: 4.28x; causal (half the scores): 2.14x.
    m = memlib.get_model("llama-3.1-8b")
    n6 = 6 * 8_030_261_248
    attn = 12 * 32 * 4096 * 131072
    assert cv.attention_to_weights_flops(m, 131072, causal=False) == pytest.approx(attn / n6, rel=1e-9)
    assert cv.attention_to_weights_flops(m, 131072) == pytest.approx(2.14, abs=0.005)
    # one 128k sequence over one 8k: 16 x (6N + attn(128k)) / (6N + attn(8k)); causal halves both attention terms
    full = 16 * (n6 + attn) / (n6 + attn / 16)
    causal = 16 * (n6 + attn / 2) / (n6 + attn / 32)
    assert cv.sequence_flops_ratio(m, 131072, 8192, causal=False) == pytest.approx(full, rel=1e-9)
    assert full == pytest.approx(66.6, abs=0.1) and causal == pytest.approx(44.3, abs=0.1)
    assert cv.sequence_flops_ratio(m, 131072, 8192) == pytest.approx(causal, rel=1e-9)


def test_recompute_without_the_head():
    # Base: 6N + 12·L·H·Q·T (N with embedding and head). HF/torchtitan replay the decoder blocks only:
    # 2(N - 2·V·h) + 4·L·H·Q·T. Llama-3.1-8B at 4k: N = 8.030e9, V·h = 128256 x 4096 = 5.253e8,
    # attention 12 x 32 x 4096 x 4096 = 6.44e9 -> (2 x 6.979e9 + 2.147e9) / (4.818e10 + 6.44e9) = 29.5%.
    # Llama-3.1-70B: N = 70.55e9, V·h = 128256 x 8192, attention 12 x 80 x 8192 x 4096 -> 32.4%.
    for name, n, L, h, expect in (("llama-3.1-8b", 8_030_261_248, 32, 4096, 0.295),
                                  ("llama-3.1-70b", 70_553_706_496, 80, 8192, 0.324)):
        attn = 12 * L * h * 4096
        replay = 2 * (n - 2 * 128256 * h) + attn / 3
        by_hand = replay / (6 * n + attn)
        assert by_hand == pytest.approx(expect, abs=0.001)
        assert cv.recompute_overhead(name, 4096) == pytest.approx(by_hand, rel=1e-6)
    # checkpointing the head too: exactly one third
    assert cv.recompute_overhead("llama-3.1-8b", 4096, checkpoint_head=True) == pytest.approx(1 / 3, rel=1e-12)


def test_mla_absorbed_decode_attention():
    # DeepSeek-V3: 61 layers, 128 heads, latent d_c = 512, RoPE key d_r = 64, 8k context:
    # 2 x 61 x 128 x (2 x 512 + 64) x 8192 = 139.2 GFLOP; cache read 61 x 576 x 8192 x 2 B = 576 MB -> 241.8 FLOP/B
    ds = memlib.get_model("deepseek-v3")
    flops = 2 * 61 * 128 * (2 * 512 + 64) * 8192
    assert cv.mla_absorbed_attention_flops(ds, 8192) == flops
    assert flops / 1e9 == pytest.approx(139.2, abs=0.05)
    assert cv.mla_absorbed_intensity(ds, 8192) == pytest.approx(flops / (61 * 576 * 8192 * 2), rel=1e-12)
    assert cv.mla_absorbed_intensity(ds, 8192) == pytest.approx(241.8, abs=0.1)
    # H100 ridge: 989.4 TFLOP/s / 3.35 TB/s = 295 FLOP/B
    assert cv.ridge_flop_per_byte("h100-80gb") == pytest.approx(989.4e12 / 3.35e12, rel=1e-9)
    with pytest.raises(ValueError):
        cv.mla_absorbed_attention_flops("llama-3.1-8b", 8192)


def test_deepseek_v3_implied_mfu_one_convention():
    # 250 GFLOP/token x 14.8T tokens / (2.664M GPU-hours x 3600 s x 989.4 TFLOP/s) = 3.7e24 / 9.489e24 = 39.0%
    by_hand = 250e9 * 14.8e12 / (2.664e6 * 3600 * 989.4e12)
    assert by_hand == pytest.approx(0.390, abs=0.001)
    assert cv.deepseek_v3_implied_mfu() == pytest.approx(by_hand, rel=1e-9)
    with pytest.raises(ValueError):
        cv.implied_mfu(0, 1e12, 1e6, "h100-80gb")


def test_ulysses_traffic_and_its_head_limit():
    # Llama-3.1-8B, 128k over 8 GPUs: each GPU's shard of q, k, v, o is (4096 + 1024 + 1024 + 4096) x 16,384 tokens
    # x 2 B = 335.5 MB; an all-to-all sends 7/8 of it; forward and backward: 2 x 7/8 x 335.5 MB = 587.2 MB per layer
    shard = (4096 + 1024 + 1024 + 4096) * (131072 // 8) * 2
    assert cv.ulysses_all_to_all_bytes("llama-3.1-8b", 131072, 8) == pytest.approx(2 * 7 / 8 * shard, rel=1e-12)
    with pytest.raises(ValueError, match="KV heads"):  # 8 KV heads: Ulysses cannot split 16 ways
        cv.ulysses_all_to_all_bytes("llama-3.1-8b", 131072, 16)


def test_littles_law():
    # 100 requests in flight, each 20 s in the system: 100 / 20 = 5 requests per second
    assert cv.littles_law_arrival_rate(100, 20) == 5
    with pytest.raises(ValueError):
        cv.littles_law_arrival_rate(0, 20)


# --- the stored notebooks ---------------------------------------------------------------------------

# A "figure" of a 30-second answer: a number with a unit after it (GB, KiB, B, x, %, days, FLOPs, 倍, 字节, ...);
# a model's name ("Llama-3.1-8B") and a rule's constant ("6 × parameters") are not figures.
FIGURE = re.compile(r"(?<![\w.\-])\d[\d,.]*(?:e\d+)?\s?(?:[KMGT]i?B\b|B\b|x(?![\w])|%|ms\b|days?\b|FLOPs\b|"
                    r"TFLOP/s|倍|字节|天)")


PRODUCT = re.compile(r"\b((?:A100|H100|H200|V100)\s?)\d+\s?GB")  # "A100 80GB" names a card, not a figure


def figures(text: str) -> list[str]:
    return FIGURE.findall(PRODUCT.sub(r"\1", text))


def test_figure_counter_can_fail():
    old_02 = ("Mixed-precision AdamW keeps 16 bytes per parameter, plus 4 during the optimizer step: 7B peaks near "
              "135 GB, so an A100 80GB fully trains only about 3.4B. 8-bit AdamW plus recompute brings 7B to 71 GB; "
              "it runs 2.6x slower at one sequence per step.")
    assert len(figures(old_02)) > 5
    assert figures("each 8k chat needs 2.5 GiB, 1.2x") == ["2.5 GiB", "1.2x"]


def _answers(stem):
    nb = nbformat.read(NB / f"{stem}.ipynb", as_version=4)
    en, zh = thirty_second_answers(nb)
    return en[0], zh[0]


STEMS = ["02_single_gpu_limits", "03_when_the_model_does_not_fit", "04_serving_capacity", "05_moe_memory",
         "06_long_context", "07_time_and_cost"]


@pytest.mark.parametrize("stem", STEMS)
def test_thirty_second_answer_says_rule_levers_caveat_in_five_figures(stem):
    en, zh = _answers(stem)
    assert "Levers:" in en and "Caveat:" in en, en
    assert "手段" in zh and "注意" in zh, zh
    assert len(figures(en)) <= 5, figures(en)
    assert len(figures(zh)) <= 5, figures(zh)


def test_answers_quote_the_corrected_figures():
    en02, _ = _answers("02_single_gpu_limits")
    assert "about 4B" in en02 and "3.4B" not in en02
    en03, zh03 = _answers("03_when_the_model_does_not_fit")
    assert "splits each layer's matrices" in en03 and "切分每层的矩阵" in zh03 and "切层" not in zh03
    en04, _ = _answers("04_serving_capacity")
    assert "≈ 320 KiB per token" in en04 and "worst-case" in en04
    en06, _ = _answers("06_long_context")
    assert "2.1x the weights' FLOPs" in en06 and "44x an 8k one" in en06


def _text(stem):
    """What a reader sees of a topic: its core page and its deep dive (a converted chapter, issue 19), each
    markdown cell with its stored {eval} values in place, the code and its outputs."""
    out = []
    for path in (NB / f"{stem}.ipynb", NB / f"{stem}_deep_dive.ipynb"):
        if not path.exists():
            continue
        nb = nbformat.read(path, as_version=4)
        for c in nb.cells:
            out.extend(_rendered_markdown([c]) if c.cell_type == "markdown" else [c.source])
            for o in c.get("outputs", []):
                out.append(o.get("text", ""))
                md = o.get("data", {}).get("text/markdown", "")
                out.append("".join(md) if isinstance(md, list) else md)
    return "\n".join(out)


def test_notebooks_carry_the_fixes():
    t04 = _text("04_serving_capacity")
    assert "4.156 bits = 4 + 16/128 + 4/128" in t04 and "81,559 MiB = 79.6 GiB" in t04
    t05 = _text("05_moe_memory")
    assert "39% MFU on DeepSeek's own 250 GFLOP/token" in t05 and "139 GFLOP of attention alone" in t05
    t07 = " ".join(_text("07_time_and_cost").split())  # prose wraps lines: compare with single spaces
    assert "+29.5%** for Llama-3.1-8B" in t07 and "+32.4%** for the 70B" in t07
    assert "implied MFU 39.0%" in t07 and "250 GFLOP per token" in t07
    t03 = _text("03_when_the_model_does_not_fit") + _text("03_when_the_model_does_not_fit_deep_dive")  # fact-check: deep dive
    for claim in ("DeepSpeed 的 PipeDream", "80% 的 MFU", "bitsandbytes、AutoGPTQ"):
        assert claim in t03
    assert "8× the traffic as" not in t03
