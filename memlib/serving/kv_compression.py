"""The KV cache beyond paging: keep fewer tokens (StreamingLLM, H2O), move it to host memory, or store it in
fewer bits (fp8/int8 KV, KIVI).

  token_budget_cache_bytes  a cache that keeps at most `budget` tokens per sequence: min(context, budget) x
                            KV bytes per token x batch. StreamingLLM (Xiao et al. 2024, ICLR, Sec. 3.2) keeps the
                            first `sinks` tokens (attention sinks, 4 in the paper) and a rolling window of the most
                            recent ones; H2O (Zhang et al. 2023, NeurIPS) keeps `heavy` heavy hitters (the
                            tokens with the largest accumulated attention) and `recent` recent tokens. Both fix the
                            cache at their budget however long the chat runs; the evicted tokens are gone.
  offloaded_kv_read_s       a decode step that reads a cache kept in host RAM: the batch's cache per GPU crosses
                            the host link (PCIe) every step (FlexGen, Sheng et al. 2023, ICML), against the same
                            bytes from HBM (memlib.serving.decode_bound).
  kivi_bytes_per_token      KIVI (Liu et al. 2024, ICML): K quantized per channel in groups of G
                            tokens, V per token in groups of G channels, each group with an fp16 scale and an fp16
                            zero point (asymmetric), so bits/8 + 4/G bytes per element; the residual R most recent
                            tokens stay in 16-bit until a group fills (kivi_cache_bytes). The paper's setting:
                            G = 32, R = 128, 2 or 4 bits.
"""

from __future__ import annotations

from memlib._checks import model_or_name, positive_int, plain_args
from memlib.hardware.gpus import get_gpu
from memlib.models import Model, get_model
from memlib.serving.inference import estimate_inference, kv_bytes_per_token

KIVI_GROUP_SIZE = 32  # Liu et al. 2024 (KIVI), experiments: group size G = 32 (also jy-yuan/KIVI example.py)
KIVI_RESIDUAL_LENGTH = 128  # Liu et al. 2024 (KIVI), experiments: residual length R = 128
STREAMING_LLM_SINKS = 4  # Xiao et al. 2024 (StreamingLLM), Sec. 3.2: four initial tokens as attention sinks
KIVI_SCALE_BYTES = 2  # scale and min (zero point) per group, in the model dtype: fp16 (jy-yuan/KIVI quant/new_pack.py @150def81)


def _model(model):
    return model_or_name(model, Model, get_model)


@plain_args
def token_budget_cache_bytes(model, context_len: int, budget_tokens: int, batch: int = 1, kv_cache: str = "bf16",
                             tp: int = 1) -> int:
    """Cache bytes on one GPU when each of `batch` sequences keeps at most `budget_tokens` tokens (StreamingLLM's
    sinks + window, Xiao et al. 2024, Sec. 3.2; H2O's heavy hitters + recent, Zhang et al. 2023):
    batch x min(context_len, budget_tokens) x KV bytes per token."""
    m = _model(model)
    kept = min(positive_int("context_len", context_len), positive_int("budget_tokens", budget_tokens))
    return positive_int("batch", batch) * kept * kv_bytes_per_token(m, kv_cache, tp)


@plain_args
def streaming_llm_cache_bytes(model, context_len: int, window: int, sinks: int = STREAMING_LLM_SINKS, batch: int = 1,
                              kv_cache: str = "bf16", tp: int = 1) -> int:
    """StreamingLLM's cache (Xiao et al. 2024, Sec. 3.2): `sinks` first tokens + a rolling `window` of recent
    ones, token_budget_cache_bytes with budget sinks + window: fixed however long the stream runs."""
    budget = positive_int("sinks", sinks, allow_zero=True) + positive_int("window", window)
    return token_budget_cache_bytes(model, context_len, budget, batch, kv_cache, tp)


@plain_args
def h2o_cache_bytes(model, context_len: int, heavy: int, recent: int, batch: int = 1, kv_cache: str = "bf16",
                    tp: int = 1) -> int:
    """H2O's cache (Zhang et al. 2023): `heavy` heavy-hitter tokens + `recent` recent tokens per
    sequence, token_budget_cache_bytes with budget heavy + recent."""
    budget = positive_int("heavy", heavy, allow_zero=True) + positive_int("recent", recent, allow_zero=True)
    if budget == 0:
        raise ValueError("heavy + recent must be at least 1 token: H2O keeps a budget of tokens")
    return token_budget_cache_bytes(model, context_len, budget, batch, kv_cache, tp)


@plain_args
def offloaded_kv_read_s(model, gpu, batch: int, context_len: int, kv_cache: str = "bf16", tp: int = 1) -> tuple[float, float]:
    """(seconds over the host link, seconds from HBM) to read the batch's cache once, one decode step's reads,
    on one GPU of tp: the same bytes (memlib.estimate_inference's kv_cache_bytes) over the GPU's host link (PCIe,
    one direction: GPU.host_link_bytes_per_s) and over its HBM bandwidth (FlexGen, Sheng et al. 2023, ICML)."""
    g = get_gpu(gpu)
    kv = estimate_inference(_model(model), positive_int("batch", batch), positive_int("context_len", context_len),
                            kv_cache=kv_cache, tp=positive_int("tp", tp)).kv_cache_bytes
    return kv / g.host_link_bytes_per_s, kv / g.memory_bandwidth_bytes_per_s


@plain_args
def kivi_bytes_per_token(model, bits: int = 2, group_size: int = KIVI_GROUP_SIZE, tp: int = 1) -> float:
    """KIVI's bytes per quantized token on one GPU (Liu et al. 2024, ICML): K per channel in groups of
    `group_size` tokens, V per token in groups of `group_size` channels, each group with an fp16 scale and zero
    point: 2 (K and V) x layers x KV heads / tp x head dim x (bits/8 + 2 x 2 / group_size) bytes."""
    m = _model(model)
    bits = positive_int("bits", bits)
    if bits not in (2, 4, 8):
        raise ValueError(f"bits must be 2, 4 or 8 (KIVI packs 2- and 4-bit codes), got {bits}")
    group_size = positive_int("group_size", group_size)
    per_element = bits / 8 + 2 * KIVI_SCALE_BYTES / group_size
    elements = kv_bytes_per_token(m, "bf16", tp) / 2  # 16-bit cache: 2 bytes per element
    return elements * per_element


@plain_args
def kivi_cache_bytes(model, context_len: int, bits: int = 2, group_size: int = KIVI_GROUP_SIZE,
                     residual_length: int = KIVI_RESIDUAL_LENGTH, batch: int = 1, tp: int = 1) -> int:
    """KIVI's cache on one GPU (Liu et al. 2024, ICML): the most recent min(context,
    residual_length) tokens in 16-bit, the rest at kivi_bytes_per_token, times batch. (KIVI flushes the residual
    in whole groups, so the 16-bit part varies between R - G and R tokens; R is its upper end.)"""
    m = _model(model)
    context_len = positive_int("context_len", context_len)
    full = min(context_len, positive_int("residual_length", residual_length, allow_zero=True))
    quantized = (context_len - full) * kivi_bytes_per_token(m, bits, group_size, tp)
    return positive_int("batch", batch) * round(quantized + full * kv_bytes_per_token(m, "bf16", tp))


__all__ = ["KIVI_GROUP_SIZE", "KIVI_RESIDUAL_LENGTH", "STREAMING_LLM_SINKS", "token_budget_cache_bytes",
           "streaming_llm_cache_bytes", "h2o_cache_bytes", "offloaded_kv_read_s", "kivi_bytes_per_token",
           "kivi_cache_bytes"]
