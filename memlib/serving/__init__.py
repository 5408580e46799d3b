"""Serving: the inference estimate (weights, KV cache, activations), vLLM's budget and
PagedAttention blocks, and the decode speed limit."""

from memlib.serving.capacity import (
    USAGES, VLLM_BLOCK_SIZE, VLLM_GPU_MEMORY_UTILIZATION, DecodeBound, LoadPoint, RequestRateBound, concurrency_at_rate,
    decode_bound, decode_tokens_per_s_upper_bound, request_flops, request_rate_bound,
    paged_kv_blocks, paged_kv_waste_bytes, vllm_default_max_num_batched_tokens, vllm_default_max_num_seqs,
    vllm_concurrency_for_estimate, vllm_kv_budget_for_estimate, vllm_kv_cache_budget_bytes, vllm_max_concurrency,
    vllm_profile_peak_bytes, vllm_sampler_warmup_bytes,
)
from memlib.serving.inference import InferenceEstimate, estimate_inference, max_batch, max_context
from memlib.serving.quantization import (
    AffineParams, affine_params, bits_per_weight, decode_crossover_batch, decode_speedup, dequantize,
    max_rounding_error, quantize, quantized_decode_bound,
)
from memlib.serving.techniques import (littles_law_concurrency, random_routing_prefix_hit_rate,
                                       speculative_expected_tokens, speculative_speedup, token_forwards)
from memlib.serving.disaggregation import PDRatio, kv_transfer_bytes, kv_transfer_s, pd_ratio, prefill_time_s
from memlib.serving.kv_compression import (h2o_cache_bytes, kivi_bytes_per_token, kivi_cache_bytes, offloaded_kv_read_s,
                                           streaming_llm_cache_bytes, token_budget_cache_bytes)

__all__ = [
    "InferenceEstimate", "estimate_inference", "max_batch", "max_context", "DecodeBound", "decode_bound",
    "decode_tokens_per_s_upper_bound", "paged_kv_blocks", "paged_kv_waste_bytes",
    "vllm_default_max_num_batched_tokens", "vllm_default_max_num_seqs", "vllm_kv_cache_budget_bytes",
    "vllm_max_concurrency", "vllm_kv_budget_for_estimate", "vllm_concurrency_for_estimate", "vllm_profile_peak_bytes", "vllm_sampler_warmup_bytes",
    "AffineParams", "affine_params", "quantize", "dequantize", "max_rounding_error", "bits_per_weight",
    "decode_crossover_batch", "quantized_decode_bound", "decode_speedup",
    "request_flops", "RequestRateBound", "request_rate_bound", "LoadPoint", "concurrency_at_rate",
    "token_forwards", "littles_law_concurrency", "speculative_expected_tokens", "speculative_speedup",
    "random_routing_prefix_hit_rate", "PDRatio", "kv_transfer_bytes", "kv_transfer_s", "pd_ratio", "prefill_time_s",
    "token_budget_cache_bytes", "streaming_llm_cache_bytes", "h2o_cache_bytes", "offloaded_kv_read_s",
    "kivi_bytes_per_token", "kivi_cache_bytes",
]
