"""The Hugging Face config.json behind each newer catalog model.

Each entry keeps the architecture fields of the repository's config.json as published
(values copied; token ids, RoPE scaling, dropout and initialisation fields left out, as
they change no tensor shape), and `source` names the repository. The catalog builds these
models with `Model.from_hf_config`, so a catalog entry and a pasted config.json of the same
repository are the same Model; validation/param_counts.py builds transformers' own class
from the same dict on the meta device and records its parameter count.

Cross-checks of the copied values (besides the parameter counts, which must equal
transformers'): the vendors' published totals, asserted in tests/test_models_families.py
(Llama 3.1 8.03B/70.6B/405B, Qwen3-235B-A22B 235B total 22B active, Mixtral 46.7B/12.9B,
DeepSeek-V3 671B with 36.6B activated excluding the input embedding, gpt-oss 20.9B/3.61B and
116.8B/5.13B, Llama 4 Scout 17B active, Maverick 400B, Phi-4 14.7B).
"""

from __future__ import annotations

_HF = "https://huggingface.co/{}/blob/main/config.json"


def _src(repo: str, note: str = "") -> str:
    return f"config.json of {repo} ({_HF.format(repo)})" + (f"; {note}" if note else "")


HF_CONFIGS: dict[str, dict] = {
    "llama-3.1-8b": {"source": _src("meta-llama/Llama-3.1-8B"), "config": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "attention_bias": False,
        "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 131072,
        "mlp_bias": False, "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
        "tie_word_embeddings": False, "vocab_size": 128256}},
    "llama-3.1-70b": {"source": _src("meta-llama/Llama-3.1-70B"), "config": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "attention_bias": False,
        "hidden_act": "silu", "hidden_size": 8192, "intermediate_size": 28672, "max_position_embeddings": 131072,
        "mlp_bias": False, "num_attention_heads": 64, "num_hidden_layers": 80, "num_key_value_heads": 8,
        "tie_word_embeddings": False, "vocab_size": 128256}},
    "llama-3.1-405b": {"source": _src("meta-llama/Llama-3.1-405B"), "config": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "attention_bias": False,
        "hidden_act": "silu", "hidden_size": 16384, "intermediate_size": 53248, "max_position_embeddings": 131072,
        "mlp_bias": False, "num_attention_heads": 128, "num_hidden_layers": 126, "num_key_value_heads": 8,
        "tie_word_embeddings": False, "vocab_size": 128256}},
    "qwen2.5-7b": {"source": _src("Qwen/Qwen2.5-7B"), "config": {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu", "hidden_size": 3584,
        "intermediate_size": 18944, "max_position_embeddings": 131072, "max_window_layers": 28,
        "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4, "sliding_window": 131072,
        "tie_word_embeddings": False, "use_sliding_window": False, "vocab_size": 152064}},
    "qwen2.5-72b": {"source": _src("Qwen/Qwen2.5-72B"), "config": {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu", "hidden_size": 8192,
        "intermediate_size": 29568, "max_position_embeddings": 131072, "max_window_layers": 80,
        "num_attention_heads": 64, "num_hidden_layers": 80, "num_key_value_heads": 8, "sliding_window": 131072,
        "tie_word_embeddings": False, "use_sliding_window": False, "vocab_size": 152064}},
    "qwen3-8b": {"source": _src("Qwen/Qwen3-8B"), "config": {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "attention_bias": False, "head_dim": 128,
        "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 12288, "max_position_embeddings": 40960,
        "max_window_layers": 36, "num_attention_heads": 32, "num_hidden_layers": 36, "num_key_value_heads": 8,
        "sliding_window": None, "tie_word_embeddings": False, "use_sliding_window": False, "vocab_size": 151936}},
    "qwen3-32b": {"source": _src("Qwen/Qwen3-32B"), "config": {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "attention_bias": False, "head_dim": 128,
        "hidden_act": "silu", "hidden_size": 5120, "intermediate_size": 25600, "max_position_embeddings": 40960,
        "max_window_layers": 64, "num_attention_heads": 64, "num_hidden_layers": 64, "num_key_value_heads": 8,
        "sliding_window": None, "tie_word_embeddings": False, "use_sliding_window": False, "vocab_size": 151936}},
    "qwen3-30b-a3b": {"source": _src("Qwen/Qwen3-30B-A3B"), "config": {
        "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "attention_bias": False,
        "decoder_sparse_step": 1, "head_dim": 128, "hidden_act": "silu", "hidden_size": 2048,
        "intermediate_size": 6144, "max_position_embeddings": 40960, "max_window_layers": 48, "mlp_only_layers": [],
        "moe_intermediate_size": 768, "norm_topk_prob": True, "num_attention_heads": 32, "num_experts": 128,
        "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4, "sliding_window": None,
        "tie_word_embeddings": False, "use_sliding_window": False, "vocab_size": 151936}},
    "qwen3-235b-a22b": {"source": _src("Qwen/Qwen3-235B-A22B"), "config": {
        "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "attention_bias": False,
        "decoder_sparse_step": 1, "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096,
        "intermediate_size": 12288, "max_position_embeddings": 40960, "max_window_layers": 94, "mlp_only_layers": [],
        "moe_intermediate_size": 1536, "norm_topk_prob": True, "num_attention_heads": 64, "num_experts": 128,
        "num_experts_per_tok": 8, "num_hidden_layers": 94, "num_key_value_heads": 4, "sliding_window": None,
        "tie_word_embeddings": False, "use_sliding_window": False, "vocab_size": 151936}},
    "mixtral-8x7b": {"source": _src("mistralai/Mixtral-8x7B-v0.1", "Jiang et al. 2024, Mixtral of Experts, "
                                    "Table 1 (46.7B total, 12.9B active: 13B in Sec. 2)"), "config": {
        "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_act": "silu", "hidden_size": 4096,
        "intermediate_size": 14336, "max_position_embeddings": 32768, "num_attention_heads": 32,
        "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8,
        "sliding_window": None, "tie_word_embeddings": False, "vocab_size": 32000}},
    "mixtral-8x22b": {"source": _src("mistralai/Mixtral-8x22B-v0.1", "Mistral AI announcement: 141B total, "
                                     "39B active"), "config": {
        "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_act": "silu", "hidden_size": 6144,
        "intermediate_size": 16384, "max_position_embeddings": 65536, "num_attention_heads": 48,
        "num_experts_per_tok": 2, "num_hidden_layers": 56, "num_key_value_heads": 8, "num_local_experts": 8,
        "sliding_window": None, "tie_word_embeddings": False, "vocab_size": 32000}},
    "deepseek-v3": {"source": _src("deepseek-ai/DeepSeek-V3", "DeepSeek-V3 Technical Report 2024, Sec. 4.2 "
                                   "(671B total, 37B activated); README_WEIGHTS.md (main model 671B, 36.6B activated "
                                   "incl. 0.9B output head; the 1 MTP module's 11.5B are in the checkpoint, not "
                                   "counted: transformers does not build it); weights released in 128x128 "
                                   "block-wise fp8"), "config": {
        "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "attention_bias": False,
        "first_k_dense_replace": 3, "hidden_act": "silu", "hidden_size": 7168, "intermediate_size": 18432,
        "kv_lora_rank": 512, "max_position_embeddings": 163840, "moe_intermediate_size": 2048, "moe_layer_freq": 1,
        "n_group": 8, "n_routed_experts": 256, "n_shared_experts": 1, "norm_topk_prob": True,
        "num_attention_heads": 128, "num_experts_per_tok": 8, "num_hidden_layers": 61, "num_key_value_heads": 128,
        "num_nextn_predict_layers": 1, "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
        "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                                "weight_block_size": [128, 128]},
        "tie_word_embeddings": False, "topk_group": 4, "v_head_dim": 128, "vocab_size": 129280}},
    "gemma-3-27b": {"source": _src("google/gemma-3-27b-it", "Gemma 3 Technical Report 2025, Table 1 (27B: "
                                   "vision encoder 417M, embedding 1,416M, non-embedding 25,600M); the text "
                                   "model only: the SigLIP vision tower is not counted"), "config": {
        "architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3", "mm_tokens_per_image": 256,
        "text_config": {"head_dim": 128, "hidden_size": 5376, "intermediate_size": 21504, "model_type": "gemma3_text",
                        "num_attention_heads": 32, "num_hidden_layers": 62, "num_key_value_heads": 16,
                        "query_pre_attn_scalar": 168, "sliding_window": 1024},
        "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                          "model_type": "siglip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 27,
                          "patch_size": 14, "vision_use_head": False}}},
    "phi-4": {"source": _src("microsoft/phi-4", "Abdin et al. 2024, Phi-4 Technical Report: 14B"), "config": {
        "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_act": "silu", "hidden_size": 5120,
        "intermediate_size": 17920, "max_position_embeddings": 16384, "num_attention_heads": 40,
        "num_hidden_layers": 40, "num_key_value_heads": 10, "original_max_position_embeddings": 16384,
        "sliding_window": None, "tie_word_embeddings": False, "vocab_size": 100352}},
    "gpt-oss-20b": {"source": _src("openai/gpt-oss-20b", "OpenAI gpt-oss model card 2025, Table 1 (20.91B total, "
                                   "3.61B active excl. the embedding; MoE weights in MXFP4)"), "config": {
        "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "attention_bias": True,
        "experts_per_token": 4, "head_dim": 64, "hidden_act": "silu", "hidden_size": 2880,
        "intermediate_size": 2880, "layer_types": ["sliding_attention", "full_attention"] * 12,
        "max_position_embeddings": 131072, "num_attention_heads": 64, "num_experts_per_tok": 4,
        "num_hidden_layers": 24, "num_key_value_heads": 8, "num_local_experts": 32,
        "quantization_config": {"modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                           "model.embed_tokens", "lm_head"], "quant_method": "mxfp4"},
        "sliding_window": 128, "tie_word_embeddings": False, "vocab_size": 201088}},
    "gpt-oss-120b": {"source": _src("openai/gpt-oss-120b", "OpenAI gpt-oss model card 2025, Table 1 (116.83B "
                                    "total, 5.13B active excl. the embedding; MoE weights in MXFP4)"), "config": {
        "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "attention_bias": True,
        "experts_per_token": 4, "head_dim": 64, "hidden_act": "silu", "hidden_size": 2880,
        "intermediate_size": 2880, "layer_types": ["sliding_attention", "full_attention"] * 18,
        "max_position_embeddings": 131072, "num_attention_heads": 64, "num_experts_per_tok": 4,
        "num_hidden_layers": 36, "num_key_value_heads": 8, "num_local_experts": 128,
        "quantization_config": {"modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                           "model.embed_tokens", "lm_head"], "quant_method": "mxfp4"},
        "sliding_window": 128, "tie_word_embeddings": False, "vocab_size": 201088}},
    "llama-4-scout": {"source": _src("meta-llama/Llama-4-Scout-17B-16E", "Meta Llama 4 model card: 17B active, "
                                     "109B total (incl. the vision encoder, not counted here)"), "config": {
        "architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
        "text_config": {"attention_bias": False, "attention_chunk_size": 8192, "head_dim": 128, "hidden_act": "silu",
                        "hidden_size": 5120, "interleave_moe_layer_step": 1, "intermediate_size": 8192,
                        "intermediate_size_mlp": 16384, "max_position_embeddings": 10485760,
                        "model_type": "llama4_text", "num_attention_heads": 40, "num_experts_per_tok": 1,
                        "num_hidden_layers": 48, "num_key_value_heads": 8, "num_local_experts": 16,
                        "use_qk_norm": True, "vocab_size": 202048},
        "vision_config": {"hidden_size": 1408, "intermediate_size": 5632, "model_type": "llama4_vision_model",
                          "num_attention_heads": 16, "num_hidden_layers": 34, "patch_size": 14,
                          "image_size": 336, "projector_input_dim": 4096, "projector_output_dim": 4096,
                          "vision_output_dim": 4096, "pixel_shuffle_ratio": 0.5}}},
    "llama-4-maverick": {"source": _src("meta-llama/Llama-4-Maverick-17B-128E", "Meta Llama 4 model card: 17B "
                                        "active, 400B total"), "config": {
        "architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
        "text_config": {"attention_bias": False, "attention_chunk_size": 8192, "head_dim": 128, "hidden_act": "silu",
                        "hidden_size": 5120, "interleave_moe_layer_step": 2, "intermediate_size": 8192,
                        "intermediate_size_mlp": 16384, "max_position_embeddings": 1048576,
                        "model_type": "llama4_text", "num_attention_heads": 40, "num_experts_per_tok": 1,
                        "num_hidden_layers": 48, "num_key_value_heads": 8, "num_local_experts": 128,
                        "use_qk_norm": False, "vocab_size": 202048},
        "vision_config": {"hidden_size": 1408, "intermediate_size": 5632, "model_type": "llama4_vision_model",
                          "num_attention_heads": 16, "num_hidden_layers": 34, "patch_size": 14,
                          "image_size": 336, "projector_input_dim": 4096, "projector_output_dim": 4096,
                          "vision_output_dim": 4096, "pixel_shuffle_ratio": 0.5}}},
}
