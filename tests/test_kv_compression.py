"""The KV cache beyond paging (memlib.serving.kv_compression): token budgets (StreamingLLM, H2O), a cache read
from host memory, KIVI's quantized cache. Expected values are derived by hand in each test."""

import pytest

from memlib.serving.kv_compression import (h2o_cache_bytes, kivi_bytes_per_token, kivi_cache_bytes,
                                           offloaded_kv_read_s, streaming_llm_cache_bytes, token_budget_cache_bytes)

L70 = "llama-3-70b"
KV70 = 327_680  # 2 x 80 layers x 8 KV heads x 128 x 2 bytes per token


def test_streaming_llm_is_fixed_at_sinks_plus_window():
    # 4 sinks + 1,020 recent = 1,024 tokens x 327,680 B = 335,544,320 B, at 100k tokens as at 1M
    assert streaming_llm_cache_bytes(L70, 100_000, window=1020) == 1024 * KV70 == 335_544_320
    assert streaming_llm_cache_bytes(L70, 1_000_000, window=1020) == 335_544_320
    # shorter than the budget: everything is kept
    assert streaming_llm_cache_bytes(L70, 500, window=1020) == 500 * KV70


def test_h2o_budget_heavy_plus_recent():
    # H2O's 20% budget of an 8k chat: 819 heavy + 819 recent = 1,638 tokens
    assert h2o_cache_bytes(L70, 8192, heavy=819, recent=819) == 1638 * KV70 == 536_739_840
    assert h2o_cache_bytes(L70, 8192, 819, 819, batch=4, tp=8) == 4 * 1638 * KV70 // 8
    with pytest.raises(ValueError, match="at least 1 token"):
        h2o_cache_bytes(L70, 8192, 0, 0)


def test_token_budget_fp8():
    assert token_budget_cache_bytes(L70, 8192, 2048, kv_cache="fp8") == 2048 * KV70 // 2


def test_offloaded_read_over_pcie_vs_hbm():
    # 32 chats x 8,192 tokens x 327,680 B / 8 GPUs = 10,737,418,240 B per GPU per step
    per_gpu = 32 * 8192 * KV70 // 8
    pcie, hbm = offloaded_kv_read_s(L70, "h100-80gb", 32, 8192, tp=8)
    assert pcie == pytest.approx(per_gpu / 64e9)      # PCIe 5.0 x16: 64 GB/s one way -> 0.168 s
    assert hbm == pytest.approx(per_gpu / 3.35e12)    # HBM3: 3.35 TB/s -> 3.2 ms
    assert pcie / hbm == pytest.approx(3.35e12 / 64e9)  # 52x slower


def test_kivi_bytes_per_token_by_hand():
    # 163,840 elements per token (2 x 80 x 8 x 128); per element bits/8 + (2 B scale + 2 B zero) / 32
    assert kivi_bytes_per_token(L70, bits=4) == 163_840 * (0.5 + 4 / 32) == 102_400
    assert kivi_bytes_per_token(L70, bits=2) == 163_840 * (0.25 + 4 / 32) == 61_440
    assert kivi_bytes_per_token(L70, bits=2, group_size=128) == 163_840 * (0.25 + 4 / 128)


def test_kivi_cache_keeps_the_residual_in_16_bit():
    # 8,192 tokens: 128 recent in bf16 (41,943,040 B) + 8,064 at 102,400 B (825,753,600 B)
    assert kivi_cache_bytes(L70, 8192, bits=4) == 128 * KV70 + 8064 * 102_400 == 867_696_640
    assert kivi_cache_bytes(L70, 100, bits=4) == 100 * KV70            # all inside the residual
    assert kivi_cache_bytes(L70, 8192, bits=2, residual_length=0, batch=2) == 2 * 8192 * 61_440


def test_kivi_bad_bits():
    with pytest.raises(ValueError, match="2, 4 or 8"):
        kivi_bytes_per_token(L70, bits=3)
