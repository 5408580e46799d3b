"""memlib.parallel.moe and memlib.learn.playgrounds.moe (notebook 05): every expected value derived by hand below from
the models' published shapes, not by running the code under test."""

from __future__ import annotations

import math

import pytest

from memlib import estimate_training, fits, get_gpu, get_model
from memlib.hardware.fit import usable_bytes
from memlib.parallel.moe import (decode_weight_bytes, expected_experts_touched, min_gpus_sharded, routed_expert_params,
                        weight_bytes_read)

# Mixtral-8x7B (config.json): 32 layers, hidden 4096, 8 experts of intermediate 14336, top-2; every
# expert is w1, w3 (4096 x 14336) and w2 (14336 x 4096).
MIXTRAL_EXPERTS = 32 * 8 * 3 * 4096 * 14336  # 45,097,156,608
MIXTRAL_TOTAL = 46_702_792_704  # transformers' count (README table; tests/test_param_counts.py)
# DeepSeek-V3 (config.json): 61 layers, the first 3 dense, 256 routed experts of 2048 per MoE layer, hidden 7168.
DSV3_EXPERTS = (61 - 3) * 256 * 3 * 7168 * 2048  # 653,908,770,816


def test_routed_expert_params_by_hand():
    assert MIXTRAL_EXPERTS == 45_097_156_608 and DSV3_EXPERTS == 653_908_770_816
    assert routed_expert_params("mixtral-8x7b") == MIXTRAL_EXPERTS
    assert routed_expert_params("deepseek-v3") == DSV3_EXPERTS
    assert routed_expert_params("llama-7b") == 0
    # the active count is the total less the routed experts a token skips: 6 of Mixtral's 8
    assert get_model("mixtral-8x7b").num_active_params == MIXTRAL_TOTAL - MIXTRAL_EXPERTS * 6 // 8


@pytest.mark.parametrize("e, k, t, expected", [
    (8, 2, 1, 2.0),                    # one token: exactly its top-k
    (8, 2, 2, 8 * (1 - 0.75 ** 2)),    # 3.5: the second token repeats one of the first's with probability 1/4 each
    (4, 1, 2, 4 * (1 - 0.75 ** 2)),    # 1.75
    (256, 8, 1, 8.0),
    (256, 256, 3, 256.0),              # top-k = E: every expert, whatever the batch
])
def test_expected_experts_touched_by_hand(e, k, t, expected):
    assert expected_experts_touched(e, k, t) == pytest.approx(expected, rel=1e-12)


def test_expected_experts_touched_grows_to_every_expert():
    values = [expected_experts_touched(256, 8, t) for t in (1, 8, 32, 128, 1024)]
    assert values == sorted(values) and values[-1] == pytest.approx(256, rel=1e-9)
    # by 128 tokens a DeepSeek-V3 layer has touched 98% of its experts: 256 (1 - (31/32)^128)
    assert values[3] == pytest.approx(256 * (1 - (31 / 32) ** 128)) and values[3] / 256 > 0.98


@pytest.mark.parametrize("args, says", [((8, 9, 1), "exceeds num_experts"), ((0, 1, 1), "num_experts"),
                                        ((8, 2, 0), "tokens")])
def test_expected_experts_touched_bad_input(args, says):
    with pytest.raises(ValueError, match=says):
        expected_experts_touched(*args)


def test_weight_bytes_read_by_hand():
    # 10 GB of shared weights, 80 GB of experts in 8 experts of top-2: one token reads 10 + 80 x 2/8 = 30 GB;
    # two tokens touch 8 (1 - (6/8)^2) = 3.5 experts: 10 + 80 x 3.5/8 = 45 GB
    assert weight_bytes_read(10e9, 80e9, 8, 2, 1) == pytest.approx(30e9)
    assert weight_bytes_read(10e9, 80e9, 8, 2, 2) == pytest.approx(45e9)
    assert weight_bytes_read(0, 80e9, 8, 8, 5) == pytest.approx(80e9)
    for bad in (-1, float("nan"), "1 GB", True):
        with pytest.raises(ValueError, match="other_bytes"):
            weight_bytes_read(bad, 80e9, 8, 2, 1)


def test_decode_weight_bytes_by_hand():
    # bf16: one token reads the shared weights and its 2 of 8 experts per layer = 2 bytes x the active count,
    # less the input embedding table (32,000 x 4,096: a step looks up rows, decode_bound's convention)
    emb = 32000 * 4096
    active = MIXTRAL_TOTAL - MIXTRAL_EXPERTS * 6 // 8 - emb
    assert decode_weight_bytes("mixtral-8x7b", 1, weights="bf16") == pytest.approx(2 * active, rel=1e-12)
    two = 2 * (MIXTRAL_TOTAL - emb - MIXTRAL_EXPERTS + MIXTRAL_EXPERTS * (8 * (1 - 0.75 ** 2)) / 8)
    assert decode_weight_bytes("mixtral-8x7b", 2, weights="bf16") == pytest.approx(two, rel=1e-12)
    assert decode_weight_bytes("mixtral-8x7b", 10_000, weights="bf16") == pytest.approx(2 * (MIXTRAL_TOTAL - emb),
                                                                                       rel=1e-9)
    # a dense model reads every weight but the input table at any batch
    n7 = get_model("llama-7b").num_params
    assert decode_weight_bytes("llama-7b", 1, weights="bf16") == decode_weight_bytes("llama-7b", 64, weights="bf16") \
        == 2 * (n7 - 32000 * 4096)


def test_min_gpus_sharded_deepseek_v3():
    m, g = get_model("deepseek-v3"), get_gpu("h200")
    r = min_gpus_sharded(m, "h200")
    # pencil lower bound: ZeRO-3 leaves 16 bytes/param / N on each GPU, and it must fit what torch reports
    assert r.count >= math.ceil(16 * m.num_params / usable_bytes(g))
    assert r.count % 8 == 0 and r.verdict.fits and r.estimate.setup.dp == r.count
    assert r.estimate.setup.ep == r.ep and r.count % r.ep == 0 and 256 % r.ep == 0
    # one node fewer holds no layout of the family, whatever the expert-parallel degree
    fewer = r.count - 8
    for ep in (e for e in range(1, 257) if fewer % e == 0 and 256 % e == 0):
        est = estimate_training(m, seq_len=4096, recompute="full", zero_stage=3, dp=fewer, ep=ep)
        assert not fits(est, g).fits, ep
    assert r.searched == tuple(range(8, r.count + 1, 8))
    assert "ZeRO-3" in r.describe() and f"expert parallel {r.ep}" in r.describe()


def test_min_gpus_sharded_dense_and_fsdp():
    r = min_gpus_sharded("llama-7b", "a100-80gb")  # 16 x 6.7e9 / 8 = 13.5 GB of states per GPU: one node
    assert r.count == 8 and r.ep == 1
    f = min_gpus_sharded("deepseek-v3", "h200", zero_stage="FULL_SHARD")
    assert f.estimate.setup.sharding == "fsdp" and "FSDP" in f.describe()
    assert min_gpus_sharded("deepseek-v3", "h200", max_count=16) is None


@pytest.mark.parametrize("kw, says", [(dict(zero_stage=2), "zero_stage must be 3"), (dict(recompute="some"), "recompute"),
                                      (dict(gpus_per_node=0), "gpus_per_node"), (dict(seq_len=0), "seq_len")])
def test_min_gpus_sharded_bad_input(kw, says):
    with pytest.raises(ValueError, match=says):
        min_gpus_sharded("deepseek-v3", "h200", **kw)


def test_moe_serving_summary_by_hand():
    from memlib.learn.playgrounds.moe import moe_models, serving_summary
    assert "deepseek-v3" in moe_models() and "llama-7b" not in moe_models()
    s = serving_summary(dict(model="deepseek-v3", gpu="h200", count=8, context=8192, weights="auto",
                             kv_cache="bf16", mla_cache="latent"))
    assert s["experts"] == DSV3_EXPERTS and s["total"] == get_model("deepseek-v3").num_params
    latent = (512 + 64) * 61 * 2  # 70,272 bytes per token, on every GPU of a tensor-parallel group
    for p in s["plan"].feasible:
        assert p.kv_cache_bytes == p.max_batch.value * 8192 * latent
        assert p.sequences == p.max_batch.value * (8 // p.settings["tp"])
    assert s["plan"].best.sequences == max(p.sequences for p in s["plan"].feasible)


def test_moe_playground_updates_and_reports_bad_combinations():
    pytest.importorskip("ipywidgets")
    from memlib.learn.playgrounds.moe import MoEServingPlayground
    p = MoEServingPlayground()
    assert "sequences" in p.summary_html.value and "<table" in p.table.value
    p.controls["kv_cache"].value = "int8"  # LMDeploy's per-head int8 has no MLA latent layout
    assert "no MLA latent layout" in p.summary_html.value and p.table.value == ""
    p.controls["kv_cache"].value = "bf16"
    p.controls["count"].value = 1  # 671 GB of fp8 weights on one H200
    assert "no layout holds one sequence" in p.summary_html.value


def test_tokens_per_expert_and_the_expert_ridge_by_hand():
    from memlib.parallel.moe import expert_ridge_tokens, tokens_per_expert
    # DeepSeek-V3 decode, 544 sequences on one node (256 experts, top-8): 544 x 8 / 256 = 17 tokens per expert;
    # DeepSeek's decode unit (report Sec. 3.4.2) with 32 sequences per GPU on 256 expert GPUs: 8192 x 8 / 256 = 256
    assert tokens_per_expert(544, 8, 256) == 17.0
    assert tokens_per_expert(32 * 256, 8, 256) == 256.0
    # H100 SXM: 1978.9 TFLOP/s fp8 dense, 3.35 TB/s -> ridge 590.7 FLOP/B; fp8 weights (1 B): 2T FLOP/B -> T = 295.4
    assert expert_ridge_tokens("h100-80gb") == pytest.approx(1978.9e12 / 3.35e12 / 2, rel=1e-12)
    assert expert_ridge_tokens("h100-80gb") == pytest.approx(295.4, abs=0.05)
    # bf16 weights on the bf16 peak: 989.4e12 / 3.35e12 x 2 B / 2 = 295.3 tokens
    assert expert_ridge_tokens("h100-80gb", weight_bytes=2, precision="bf16") == pytest.approx(989.4e12 / 3.35e12,
                                                                                                rel=1e-12)
    for bad in (dict(batch=0, top_k=8, num_experts=256), dict(batch=8, top_k=9, num_experts=8)):
        with pytest.raises(ValueError):
            tokens_per_expert(**bad)
    with pytest.raises(ValueError):
        expert_ridge_tokens("h100-80gb", weight_bytes=0)
