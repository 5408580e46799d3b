"""plan_serving: serving layouts (tensor/expert parallelism, weight format) with the weights, KV cache and
largest batch per GPU; the issue's done-when: DeepSeek-V3 on 8 x H200 at 8k context. The figures are
derived by hand below (the same derivation as tests/test_inference_families.py's 8 x H200 test)."""

import json

import pytest

from memlib import get_gpu
from memlib.cli import main
from memlib.parallel.plan import SERVE_PREFILL_TOKENS, plan, plan_serving

H, HEADS, LAYERS, MOE_LAYERS, DENSE_LAYERS, VOCAB = 7168, 128, 61, 58, 3, 129280
KV_PER_TOKEN = (512 + 64) * 61 * 2  # the latent + rope key per token per layer, bf16: 70,272 B
CONTEXT = 8192


def fp8(i, o):  # DeepSeek-V3's block fp8: e4m3 weight + an fp32 scale per 128 x 128 block
    return i * o + 4 * -(-i // 128) * -(-o // 128)


def weights_per_gpu(tp: int, ep: int) -> int:
    """fp8 projections split over tp (q_a/kv_a replicated), routed experts whole over ep (else split over tp);
    norms, routers, embedding and head in bf16, the vocabulary split over tp."""
    attn = (fp8(H, 1536) + fp8(1536, HEADS * 192 // tp) + fp8(H, 576) + fp8(512, HEADS * 256 // tp)
            + fp8(HEADS * 128 // tp, H))
    dense_mlp = 2 * fp8(H, 18432 // tp) + fp8(18432 // tp, H)
    split = 1 if ep > 1 else tp
    expert = 2 * fp8(H, 2048 // split) + fp8(2048 // split, H)
    shared = 2 * fp8(H, 2048 // tp) + fp8(2048 // tp, H)
    moe = 256 // ep * expert + shared
    norms = 2 * (LAYERS * (1536 + 512 + 2 * H) + H)
    router = 2 * MOE_LAYERS * 256 * H
    vocab = 2 * 2 * (VOCAB // tp) * H
    return LAYERS * attn + DENSE_LAYERS * dense_mlp + MOE_LAYERS * moe + norms + router + vocab


def batch_bounds(weights: int) -> tuple[int, int]:
    """Sequences of 8k one GPU can cache: what torch reports for an H200, less fits()'s 0.5 GiB CUDA context, over
    its 1.05 allocator headroom, less the weights, in 8,192 x 70,272 B per sequence; at most that with no prefill
    workspace, at least that with a workspace of 4 GB (an 8,192-token prefill's activations: about 2 GB)."""
    budget = (get_gpu("h200").torch_total_bytes - 2**29) / 1.05
    per_seq = CONTEXT * KV_PER_TOKEN
    return int((budget - weights - 4e9) // per_seq), int((budget - weights) // per_seq)


@pytest.fixture(scope="module")
def deepseek():
    return plan_serving("deepseek-v3", "h200", 8, context_len=CONTEXT)


def layout(result, tp, ep):
    return next(p for p in result.feasible if (p.settings["tp"], p.settings["ep"]) == (tp, ep))


def test_deepseek_v3_on_8_h200_tensor_parallel(deepseek):
    p = layout(deepseek, 8, 1)
    assert p.settings["weights"] == "fp8-block"  # the checkpoint's own format (quantization_config): weights="auto"
    assert p.settings["prefill_tokens"] == SERVE_PREFILL_TOKENS == 8192
    assert p.weight_bytes == weights_per_gpu(8, 1)
    assert 84e9 < p.weight_bytes < 86e9
    assert p.estimate.kv_bytes_per_token == KV_PER_TOKEN == 70_272  # the latent is replicated over tp
    lo, hi = batch_bounds(p.weight_bytes)
    assert lo <= p.max_batch.value <= hi and 95 <= p.max_batch.value <= 100
    assert p.kv_cache_bytes == p.max_batch.value * CONTEXT * KV_PER_TOKEN
    assert p.attention_groups == 1 and p.sequences == p.max_batch.value and p.replicas == 1


def test_deepseek_v3_on_8_h200_data_parallel_attention(deepseek):
    # tp=1, ep=8: every GPU its own attention (and dense layers, replicated), 32 whole experts each
    p = layout(deepseek, 1, 8)
    assert p.weight_bytes == weights_per_gpu(1, 8)
    assert 100e9 < p.weight_bytes < 101e9
    lo, hi = batch_bounds(p.weight_bytes)
    assert lo <= p.max_batch.value <= hi
    assert p.attention_groups == 8 and p.sequences == 8 * p.max_batch.value
    # fewer sequences per GPU (bigger weights), but each GPU caches its own: the most sequences in all
    assert deepseek.best is p
    assert p.sequences > 5 * layout(deepseek, 8, 1).sequences


def test_infeasible_layouts_say_why(deepseek):
    reasons = {(s["tp"], s["ep"]): why for s, why in deepseek.infeasible}
    assert (1, 1) in reasons and "not even one sequence" in reasons[(1, 1)]
    assert all(s["ep"] == 1 or s["ep"] % s["tp"] == 0 for s, _ in deepseek.infeasible)
    d = deepseek.to_dict()
    assert d["feasible"][0]["sequences"] == deepseek.best.sequences
    json.dumps(d)


def test_weight_formats_compared():
    r = plan_serving("llama-3-70b", "h100-80gb", 4, context_len=8192, weights=["auto", "int4-awq"])
    formats = {p.settings["weights"] for p in r.feasible}
    assert formats == {"bf16", "int4-awq"}  # auto is the checkpoint's bf16
    # on the same layout, AWQ's smaller weights leave room for more sequences
    bf16, awq = (next(p for p in r.feasible if p.settings["weights"] == w and p.settings["tp"] == 4)
                 for w in ("bf16", "int4-awq"))
    assert awq.weight_bytes < 0.3 * bf16.weight_bytes and awq.max_batch.value > bf16.max_batch.value


@pytest.mark.parametrize("kw, msg", [
    (dict(count=0), "count must be >= 1"),
    (dict(weights="fp4"), "unknown weights 'fp4'"),
    (dict(weights=[]), "weights must be 'auto'"),
    (dict(kv_cache="int4"), "unknown kv_cache"),
    (dict(context_len=0), "context_len must be >= 1"),
])
def test_bad_input(kw, msg):
    args = {**dict(model="mixtral-8x7b", gpu="h100-80gb", count=8), **kw}
    with pytest.raises(ValueError, match=msg):
        plan_serving(**args)


def test_plan_points_serving_to_plan_serving():
    with pytest.raises(ValueError, match="plan_serving"):
        plan("llama-7b", "a100-80gb", 1, task="serve")


def test_cli_fit_task_serve(capsys):
    assert main(["fit", "deepseek-v3", "--gpu", "h200", "--count", "8", "--task", "serve"]) == 0
    out = capsys.readouterr().out
    assert "tp=1, ep=8" in out and "fp8-block" in out and "70,272" in out and "Best:" in out
    assert main(["fit", "deepseek-v3", "--gpu", "h200", "--count", "8", "--task", "serve", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["context_len"] == 8192 and d["feasible"][0]["settings"]["ep"] == 8
    # a training option with --task serve (and the other way round) is one line, exit 2
    assert main(["fit", "deepseek-v3", "--gpu", "h200", "--count", "8", "--task", "serve", "--micro-batch", "2"]) == 2
    assert "--micro-batch applies to training tasks" in capsys.readouterr().err
    assert main(["fit", "llama-7b", "--gpu", "a100-80gb", "--count", "1", "--context-len", "4096"]) == 2
    assert "--context-len applies to --task serve" in capsys.readouterr().err
