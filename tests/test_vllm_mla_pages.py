"""vLLM's fp8_ds_mla cache (DeepSeek-V3.2's sparse MLA) and its KV pool rules, against hand derivations
from vllm-project/vllm@001cabc1 (vllm/v1/kv_cache_interface.py, vllm/v1/core/kv_cache_utils.py,
vllm/v1/attention/backends/mla/flashmla_sparse.py, vllm/model_executor/models/config.py)."""

import pytest

import memlib
from memlib.models import get_model
from memlib.serving.engines import (fp8_ds_mla_bytes_per_token, kv_formats, vllm_kv_pool_tokens,
                                    vllm_padded_page_bytes)
from memlib.serving.inference import kv_bytes_per_token

GiB = 2**30


def test_fp8_ds_mla_token_is_656_bytes():
    # flashmla_sparse.py's layout note: 512 float8_e4m3 latent values (512 B), 4 float32 scales, one per 128
    # values (16 B), 64 bfloat16 rope values (128 B): 512 + 4 * 4 + 64 * 2 = 656, the constant
    # MLAAttentionSpec.real_page_size_bytes multiplies by block_size.
    assert fp8_ds_mla_bytes_per_token(512, 64) == 512 + 4 * 4 + 64 * 2 == 656


def test_deepseek_v3_fp8_ds_mla_per_token_and_against_plain_fp8():
    m = get_model("deepseek-v3")  # 61 layers, kv_lora_rank 512, qk_rope_head_dim 64
    assert kv_bytes_per_token(m, "fp8_ds_mla") == 61 * 656 == 40_016
    # the plain fp8 latent memlib had: (512 + 64) x 1 B = 576 per layer, 61 x 576 = 35,136
    assert kv_bytes_per_token(m, "fp8") == 61 * 576 == 35_136
    # the latent is one vector per token, not split by tp
    assert kv_bytes_per_token(m, "fp8_ds_mla", tp=8) == 40_016
    est = memlib.estimate_inference("deepseek-v3", 2, 1000, engine="vllm", kv_cache="fp8_ds_mla", tp=8)
    # vLLM pages: 1000 tokens take ceil(1000 / 16) = 63 blocks = 1,008 slots; 2 x 1,008 x 40,016 B
    assert est.kv_cache_bytes == 2 * 1008 * 40_016
    assert "656 B" in est.explain()


def test_pool_tokens_one_kind_is_floor_budget_over_layers_times_page_times_block():
    # get_num_blocks: blocks = budget // page // layers; tokens = blocks x block_size.
    # DeepSeek-V3.2 on FlashMLA sparse: block_size 64, page 64 x 656 = 41,984 B, 61 layers:
    # 40 GiB = 42,949,672,960 B; 42,949,672,960 / (61 x 41,984 = 2,561,024) = 16,770.4 -> 16,770 blocks
    # -> 16,770 x 64 = 1,073,280 tokens.
    assert vllm_kv_pool_tokens(40 * GiB, [(61, 64 * 656)], block_size=64) == 1_073_280
    # with memlib's old 576 B fp8 latent the same budget promised 42,949,672,960 // (61 x 64 x 576) = 19,099
    # blocks = 1,222,336 tokens: 1,222,336 / 1,073,280 - 1 = +13.9%, the 656 / 576 ratio
    assert vllm_kv_pool_tokens(40 * GiB, [(61, 64 * 576)], block_size=64) == 1_222_336


def test_pool_tokens_v32_indexer_cache_in_the_same_group():
    # DeepSeek-V3.2's indexer keeps its own key cache in every layer: head_dim 128 fp8 + 128 // 128 fp32
    # scales = 132 B a token (deepseek_v2.py DeepseekV32IndexerCache, an MLAAttentionSpec of head_size 132,
    # uint8). Both are full-attention specs, so they form one UniformTypeKVCacheSpecs group: a block is one
    # page of each of the 122 caches. bf16 latent (1,152 B): 40 GiB // (61 x 64 x (1,152 + 132) = 5,012,736)
    # = 8,568 blocks = 548,352 tokens; without the indexer 40 GiB // (61 x 64 x 1,152) = 9,549 blocks =
    # 611,136 tokens: memlib's latent alone reads 611,136 / 548,352 - 1 = +11.4%.
    with_indexer = vllm_kv_pool_tokens(40 * GiB, [(61, 64 * 1152), (61, 64 * 132)], block_size=64)
    assert with_indexer == 548_352
    alone = vllm_kv_pool_tokens(40 * GiB, [(61, 64 * 1152)], block_size=64)
    assert alone == 611_136
    assert alone / with_indexer - 1 == pytest.approx(0.1145, abs=5e-4)
    # fp8: 656 + 132 = 788 B a layer: 40 GiB // (61 x 64 x 788) = 13,961 blocks = 893,504 tokens
    assert vllm_kv_pool_tokens(40 * GiB, [(61, 64 * 656), (61, 64 * 132)], block_size=64) == 893_504


def test_padded_page_matches_a_published_hybrid_spec():
    # A KV config in a public vLLM-plugin test fixture (a Mamba2 hybrid, 4 KV heads x 128 in bf16): block_size 400,
    # MambaSpec shapes ((3, 3328), (48, 64, 128)) bf16 with page_size_padded 819,200.
    # State page: (3 x 3,328 + 48 x 64 x 128) x 2 B = 19,968 + 786,432 = 806,400 B; attention per token
    # 2 (K, V) x 4 x 128 x 2 B = 2,048 B; block = 16 x ceil(806,400 / (16 x 2,048)) = 16 x 25 = 400;
    # page = 400 x 2,048 = 819,200 B, the state page padded by 12,800 B (1.6%).
    assert vllm_padded_page_bytes(2048, 806_400) == (400, 819_200)
    # a larger block the user set is kept: 512 x 2,048 = 1,048,576
    assert vllm_padded_page_bytes(2048, 806_400, block_size=512) == (512, 1_048_576)
    # a smaller one is raised
    assert vllm_padded_page_bytes(2048, 806_400, block_size=16) == (400, 819_200)


def test_shared_pool_groups_and_padding_layers():
    # gpt-oss-20b shape: 12 sliding + 12 full layers, 8 KV heads x 64, bf16: page 16 x 2 x 8 x 64 x 2 = 32,768 B.
    # Layers per group g = 12 (most 12 < 1.5 x fewest 12), 2 groups; blocks = 10 GiB // 32,768 // 12 = 27,306;
    # tokens = 27,306 // 2 x 16 = 218,448.
    assert vllm_kv_pool_tokens(10 * GiB, [(12, 32_768), (12, 32_768)], shared=True) == 218_448
    # Gemma-3-27B shape: 52 sliding + 10 full, 16 KV heads x 128: page 16 x 2 x 16 x 128 x 2 = 131,072 B.
    # g = 10 (52 >= 15), groups = ceil(52 / 10) + 1 = 7, so 70 layer slots for 62 layers (vLLM warns
    # "Add 8 padding layers, may waste at most 15.38%"); blocks = 10 GiB // 131,072 // 10 = 8,192;
    # tokens = 8,192 // 7 x 16 = 18,720 (one group of 62 layers would give 81,920 // 62 x 16 = 21,136).
    assert vllm_kv_pool_tokens(10 * GiB, [(52, 131_072), (10, 131_072)], shared=True) == 18_720
    assert vllm_kv_pool_tokens(10 * GiB, [(62, 131_072)]) == 21_136
    # pages of different sizes share the largest: 5 state layers padded from 806,400 to 819,200 B and one
    # attention layer of 819,200 B: g = 1 (5 >= 1.5), 6 groups; 10 GiB // 819,200 // 1 = 13,107 blocks;
    # 13,107 // 6 = 2,184 blocks a group x 400 tokens = 873,600.
    assert vllm_kv_pool_tokens(10 * GiB, [(5, 806_400), (1, 819_200)], block_size=400, shared=True) == 873_600


def test_refusals_name_the_argument():
    with pytest.raises(ValueError, match="no MLA latent"):
        kv_bytes_per_token(get_model("llama-3-8b"), "fp8_ds_mla")
    with pytest.raises(ValueError, match="no MLA latent"):
        memlib.estimate_inference("llama-3-8b", 1, 128, engine="vllm", kv_cache="fp8_ds_mla")
    with pytest.raises(ValueError, match="mla_cache='latent'"):
        kv_bytes_per_token(get_model("deepseek-v3"), "fp8_ds_mla", mla_cache="full")
    with pytest.raises(ValueError, match="kv_lora_rank 512"):
        fp8_ds_mla_bytes_per_token(256, 64)
    # SGLang and transformers have no such cache type
    assert "fp8_ds_mla" in kv_formats("vllm")
    for engine in ("sglang", "hf"):
        assert "fp8_ds_mla" not in kv_formats(engine)
        with pytest.raises(ValueError, match="kv_cache"):
            memlib.estimate_inference("deepseek-v3", 1, 128, engine=engine, kv_cache="fp8_ds_mla")
    with pytest.raises(ValueError, match="kinds"):
        vllm_kv_pool_tokens(GiB, [])
    with pytest.raises((ValueError, TypeError), match="layers"):
        vllm_kv_pool_tokens(GiB, [(0, 100)])
