"""Serving engines (memlib.serving.engines): llama.cpp's ggml cache formats and cell sizing, vLLM's pages,
SGLang's pool, and `engine=` on estimate_inference / plan_serving / `memlib serve`.

Every expected value is written out by hand from the engines' sources (ggml-common.h block structs,
llama-context.cpp / llama-kv-cache-iswa.cpp sizing) or quoted from a published startup log."""

from __future__ import annotations


import pytest

import memlib
from benchmark_support import load
from memlib.cli import main
from memlib.parallel.plan import plan_serving
from memlib.serving.engines import (GGML_BLOCKS, ggml_row_bytes, llama_cpp_kv_bytes, llama_cpp_kv_cache, paged_tokens,
                                    sglang_max_total_tokens)



# --- ggml block formats ---------------------------------------------------------------------------
@pytest.mark.parametrize("t, block_bytes", [
    ("q8_0", 2 + 32),          # block_q8_0: ggml_half d; int8_t qs[32]
    ("q4_0", 2 + 16),          # block_q4_0: ggml_half d; uint8_t qs[16] (two 4-bit values a byte)
    ("q4_1", 2 + 2 + 16),      # block_q4_1: d, m; qs[16]
    ("iq4_nl", 2 + 16),        # block_iq4_nl: d; qs[16]
    ("q5_0", 2 + 4 + 16),      # block_q5_0: d; uint8_t qh[4] (the fifth bits); qs[16]
    ("q5_1", 2 + 2 + 4 + 16),  # block_q5_1: d, m; qh[4]; qs[16]
])
def test_ggml_block_bytes(t, block_bytes):
    assert GGML_BLOCKS[t] == (32, block_bytes)
    # a 128-wide row (one head of 128) is 4 blocks
    assert ggml_row_bytes(t, 128) == 4 * block_bytes


def test_q8_0_is_8_5_bits():
    assert ggml_row_bytes("q8_0", 32) * 8 / 32 == 8.5
    assert ggml_row_bytes("f16", 32) == 64 and ggml_row_bytes("f32", 32) == 128


def test_ggml_row_not_a_whole_block():
    with pytest.raises(ValueError, match="blocks of 32"):
        ggml_row_bytes("q4_0", 48)


# --- llama.cpp cache sizing -------------------------------------------------------------------------
def test_q8_0_k_cache_qwen3_8b_by_hand():
    # Qwen3-8B: 36 layers, 8 KV heads x head_dim 128 = 1024 values per token per layer.
    # K (q8_0) = layers x cells x 1024/32 blocks x 34 B = 36 x 8192 x 1088
    (c,) = llama_cpp_kv_cache("qwen3-8b", 8192, "q8_0")
    assert c.cells == 8192 and c.layers == 36 and c.streams == 1
    assert c.k_bytes == 36 * 8192 * 1088 == 320_864_256
    assert c.v_bytes == c.k_bytes


def test_k_and_v_typed_apart():
    # V in q4_0: 1024/32 blocks x 18 B = 576 B per token per layer
    (c,) = llama_cpp_kv_cache("qwen3-8b", 8192, "q8_0", "q4_0")
    assert c.k_bytes == 36 * 8192 * 1088
    assert c.v_bytes == 36 * 8192 * 576
    assert "K (q8_0)" in c.log_line() and "V (q4_0)" in c.log_line()


def test_context_padded_to_256_cells():
    (c,) = llama_cpp_kv_cache("qwen3-8b", 5000, "f16")
    assert c.cells == 5120  # GGML_PAD(5000, 256)


def test_not_unified_splits_the_context_per_sequence():
    # -c 4096 -np 10: 4096 / 10 = 409 cells -> padded to 512 per sequence, 10 streams
    (c,) = llama_cpp_kv_cache("qwen3-8b", 4096, "f16", n_seq=10, kv_unified=False)
    assert (c.cells, c.streams, c.n_seq) == (512, 10, 10)
    assert c.bytes == 36 * 10 * 512 * 2 * 1024 * 2


def test_sliding_window_cache_is_window_plus_ubatch():
    # gpt-oss-20b: 24 layers, every other one sliding with a 128-token window; 8 KV heads x 64.
    base, swa = llama_cpp_kv_cache("gpt-oss-20b", 131072, "f16")
    assert (base.layers, base.cells) == (12, 131072)
    assert (swa.layers, swa.cells) == (12, 768)  # GGML_PAD(128 + 512, 256)
    assert swa.bytes == 12 * 768 * 2 * 512 * 2
    # --swa-full: the sliding layers get the full context
    _, full = llama_cpp_kv_cache("gpt-oss-20b", 131072, "f16", swa_full=True)
    assert full.cells == 131072
    # unified with 4 sequences: window x 4 + ubatch = 1024, padded to 1024
    _, four = llama_cpp_kv_cache("gpt-oss-20b", 131072, "f16", n_seq=4, kv_unified=True)
    assert four.cells == 1024
    # a short context: ubatch = min(512, n_ctx) and the SWA cache never exceeds the base
    _, short = llama_cpp_kv_cache("gpt-oss-20b", 300, "f16")
    assert short.cells == 512


def test_log_line_matches_a_published_llama_cpp_line():
    # llama-completion, build 8164 (b68d75165), gpt-oss-20b, default n_ctx 131072 (validation/published_serving.jsonl)
    published = ["llama_kv_cache: size = 3072.00 MiB (131072 cells,  12 layers,  1/1 seqs), K (f16): 1536.00 MiB, "
                 "V (f16): 1536.00 MiB",
                 "llama_kv_cache: size =   18.00 MiB (   768 cells,  12 layers,  1/1 seqs), K (f16):    9.00 MiB, "
                 "V (f16):    9.00 MiB"]
    assert [c.log_line() for c in llama_cpp_kv_cache("gpt-oss-20b", 131072, "f16", kv_unified=False)] == published


def test_llama_cpp_refuses_mla():
    with pytest.raises(ValueError, match="latent"):
        llama_cpp_kv_cache("deepseek-v3", 4096, "q8_0")


# --- engine= on estimate_inference ------------------------------------------------------------------
def test_default_engine_is_todays_behaviour():
    a = memlib.estimate_inference("llama-3-8b", 3, 1000)
    b = memlib.estimate_inference("llama-3-8b", 3, 1000, engine="hf")
    assert a.peak_bytes == b.peak_bytes
    # 2 (K, V) x 32 layers x 8 KV heads x 128 x 2 B = 131072 B per token, exactly batch x context tokens
    assert a.kv_cache_bytes == 3 * 1000 * 131072


def test_vllm_rounds_each_sequence_to_16_token_blocks():
    e = memlib.estimate_inference("llama-3-8b", 3, 1000, engine="vllm")
    assert e.kv_cache_bytes == 3 * 1008 * 131072  # ceil(1000 / 16) x 16 = 1008
    assert paged_tokens(1000, "sglang") == 1000


def test_vllm_fp8_cache_dtypes():
    e4 = memlib.estimate_inference("llama-3-8b", 1, 1024, engine="vllm", kv_cache="fp8_e4m3")
    e5 = memlib.estimate_inference("llama-3-8b", 1, 1024, engine="sglang", kv_cache="fp8_e5m2")
    assert e4.kv_bytes_per_token == e5.kv_bytes_per_token == 131072 // 2


def test_llama_cpp_engine_uses_llama_cpp_sizing():
    e = memlib.estimate_inference("gpt-oss-20b", 1, 131072, engine="llama.cpp", kv_cache="q8_0")
    assert e.kv_cache_bytes == llama_cpp_kv_bytes("gpt-oss-20b", 131072, "q8_0")
    # base: 12 x 131072 x 2 x (512/32 x 34); SWA: 12 x 768 x 2 x 544
    assert e.kv_cache_bytes == 12 * 131072 * 2 * 544 + 12 * 768 * 2 * 544
    assert "engine **llama.cpp**" in e.explain() and "q8_0" in e.explain()


@pytest.mark.parametrize("kw, match", [
    (dict(engine="hf", kv_cache="fp8_e4m3"), "kv_cache"),
    (dict(engine="hf", kv_cache="q8_0"), "kv_cache"),
    (dict(engine="vllm", kv_cache="bf16", kv_cache_v="fp8"), "kv_cache_v"),
    (dict(engine="llama.cpp", kv_cache="q8_0", tp=2), "split"),
    (dict(engine="tensorrt"), "engine"),
])
def test_bad_engine_options(kw, match):
    with pytest.raises(ValueError, match=match):
        memlib.estimate_inference("llama-3-8b", 1, 1024, **kw)


def test_sglang_k_size_matches_its_log():
    # vllm-project/vllm#21348: SGLang, Qwen3-235B-A22B-FP8, tp 4: "#tokens: 367404, K size: 8.23 GB" (GB = 2**30 B).
    # K = tokens x 94 layers x (4 KV heads / 4) x 128 x 2 B
    e = memlib.estimate_inference("qwen3-235b-a22b", 1, 1, tp=4, engine="sglang")
    k = 367404 * e.kv_bytes_per_token // 2
    assert k == 367404 * 94 * 1 * 128 * 2
    assert f"{k / 2**30:.2f}" == "8.23"


def test_sglang_pool_grows_with_mem_fraction():
    lo = sglang_max_total_tokens("llama-3-8b", "h100-80gb", mem_fraction_static=0.8)
    hi = sglang_max_total_tokens("llama-3-8b", "h100-80gb", mem_fraction_static=0.9)
    # 0.1 of the card's total more, in tokens of 131072 B
    total = memlib.get_gpu("h100-80gb").torch_total_bytes
    assert abs((hi - lo) - total * 0.1 / 131072) <= 2
    with pytest.raises(ValueError):
        sglang_max_total_tokens("llama-3-8b", "h100-80gb", mem_fraction_static=1.5)


def test_plan_serving_engine():
    r = plan_serving("llama-3-8b", "a100-80gb", 1, context_len=8192, engine="vllm", kv_cache="fp8_e4m3")
    assert r.best.settings["engine"] == "vllm" and r.best.settings["kv_cache"] == "fp8_e4m3"
    hf = plan_serving("llama-3-8b", "a100-80gb", 1, context_len=8192)
    assert "engine" not in hf.best.settings
    # fp8 halves the cache: more sequences fit than with bf16
    assert r.best.max_batch.value > hf.best.max_batch.value


def test_cli_serve_engine(capsys):
    rc = main(["serve", "qwen3-8b", "--gpu", "rtx-4090", "--engine", "llama.cpp", "--kv-cache", "q8_0",
               "--kv-cache-v", "q4_0", "--context-len", "8192"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "engine llama.cpp" in out and "q8_0 (K), q4_0 (V)" in out
    # per token: 36 layers x (1088 B K + 576 B V)
    assert f"{36 * (1088 + 576):,} bytes per token" in out


# --- the published startup logs -----------------------------------------------------------------------
def _bench():
    mod = load("published_serving")
    return mod


def test_published_llama_cpp_lines_are_exact():
    bench = _bench()
    rows = [r for r in bench.load_rows() if r["kind"] == "llama.cpp-kv"]
    assert len(rows) >= 8
    for r in rows:
        assert r["quote"] and (r["source"].get("url") or r["source"].get("index_id"))
        for c in bench.check_llama_cpp(r):
            assert c.exact, (r["id"], c.what, c.published, c.memlib)


def test_published_serving_rows_all_evaluate():
    bench = _bench()
    checks = bench.evaluate_all()
    assert all(c.published > 0 and c.memlib > 0 for c in checks)
    weights = [c for c in checks if c.what == "weights"]
    # vLLM's "model weights take" at 0.01 GiB; it also holds the RoPE cos/sin cache (max_position x head_dim, fp32
    # in some versions: 8 MiB for Qwen2.5-0.5B's 32K positions) and other buffers memlib does not count
    assert weights and all(abs(c.error) < 0.012 for c in weights)
    prof = [c for c in checks if c.what == "profile activation peak"]
    assert len(prof) >= 8 and all(abs(c.error) < 0.10 for c in prof)  # docs/validation.md: within 10%, median < 1%
    budgets = [c for c in checks if c.what == "KV cache budget"]
    assert len(budgets) >= 6 and all(abs(c.error) < 0.05 for c in budgets)


def test_vllm_budget_is_the_smallest_ranks():
    from memlib.serving.capacity import vllm_kv_cache_budget_bytes as budget
    GiB = 2**30
    kw = dict(tp=2, max_num_batched_tokens=8192, total_bytes=80 * GiB)
    # rank 0 with 2 GiB outside torch, rank 1 with 0.5: vLLM keeps the smaller budget, rank 0's
    assert budget("llama-3-8b", "h100-80gb", non_torch_bytes=[2 * GiB, GiB // 2], **kw) == \
        budget("llama-3-8b", "h100-80gb", non_torch_bytes=2 * GiB, **kw)
    # the logged total, not the catalog's: 1 GiB more total is 0.9 GiB more budget at 0.9 utilization
    more = budget("llama-3-8b", "h100-80gb", **{**kw, "total_bytes": 81 * GiB})
    assert more - budget("llama-3-8b", "h100-80gb", **kw) == int(81 * GiB * 0.9) - int(80 * GiB * 0.9)
    with pytest.raises(ValueError, match="per-rank"):
        budget("llama-3-8b", "h100-80gb", non_torch_bytes=[1, 2, 3], **kw)


def test_vllm_budget_less_the_cuda_graph_estimate_from_v0_21():
    """vLLM v0.21+ logs "Estimated CUDA graph memory: 0.36 GiB total" and takes it off the budget before sizing the
    cache (gpustack/runner#251's log: "--gpu-memory-utilization=0.8200 is equivalent to 0.8048 without CUDA graph
    memory profiling", so 0.36 GiB = (0.82 - 0.8048) x the card's 23.7 GiB): exactly that many bytes fewer."""
    from memlib.serving.capacity import vllm_kv_cache_budget_bytes as budget
    graphs = int(0.36 * 2**30)
    kw = dict(tp=2, max_num_batched_tokens=2048, gpu_memory_utilization=0.82)
    assert budget("llama-3-8b", "rtx-4090", **kw) - budget("llama-3-8b", "rtx-4090", cudagraph_bytes=graphs, **kw) \
        == graphs
    with pytest.raises(ValueError, match="cudagraph_bytes"):
        budget("llama-3-8b", "rtx-4090", cudagraph_bytes=-1, **kw)


def test_sglang_reserve_counts_the_communicators_above_tp_1():
    """SGLang's reserve comes from the free memory init_torch_distributed leaves: the CUDA context (memlib's 0.5 GiB)
    and, above tp 1, the NCCL communicators and custom all-reduce buffers (0.5 GiB, as for vLLM above tp 1). So the
    default equals 0.5 GiB at tp 1 and 1 GiB at tp 2, and one more GiB of non-torch memory costs 2^30 / the cell
    size tokens (Llama-3-8B at tp 2: 32 layers x 4 KV heads x 128 x 2 (K, V) x 2 bytes = 65,536 B a token)."""
    GiB = 2**30
    one = sglang_max_total_tokens("llama-3-8b", "h100-80gb", tp=1)
    assert one == sglang_max_total_tokens("llama-3-8b", "h100-80gb", tp=1, non_torch_bytes=GiB // 2)
    two = sglang_max_total_tokens("llama-3-8b", "h100-80gb", tp=2)
    assert two == sglang_max_total_tokens("llama-3-8b", "h100-80gb", tp=2, non_torch_bytes=GiB)
    less = sglang_max_total_tokens("llama-3-8b", "h100-80gb", tp=2, non_torch_bytes=2 * GiB)
    assert two - less in (GiB // 65_536, GiB // 65_536 + 1)
