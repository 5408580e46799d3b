"""What transformers assumes for a field a config.json leaves out, per model_type.

Read from each family's configuration class in huggingface/transformers
(src/transformers/models/<family>/configuration_<family>.py, commit 008e574391258935f3ecc3035c882e73bbcac419;
mistral and deepseek_v3 at 001f85b38fb432858ace93f18622f07cec46d874, gemma3 at
008f5c8c29be84d4721dc6d1e0fcd72300580be4). A reader that silently used another default (the
attention heads for a missing num_key_value_heads, say) counts a different model from the one
transformers builds: Mistral-7B without the field is 7,241,732,096 parameters in transformers
(8 key/value heads), 8,047,038,464 with one key/value head per query head.

num_key_value_heads: an int is the class default; HEADS means `None`, which the class's
__post_init__ turns into num_attention_heads. head_dim: an int is the class default; HIDDEN_OVER_HEADS
means hidden_size // num_attention_heads (the class has no head_dim field, or defaults it to None,
and the attention module falls back to that). The four shape fields (hidden_size,
num_hidden_layers, num_attention_heads, intermediate_size) have defaults in transformers too (a
7B-ish shape), but memlib refuses a config.json without them: a file that omits the model's size
describes no model, and counting transformers' example shape instead would be a silently wrong number.
"""

from __future__ import annotations

HEADS = "num_attention_heads"
HIDDEN_OVER_HEADS = 0

HF_DEFAULTS: dict[str, dict] = {
    "llama": {"num_key_value_heads": HEADS, "head_dim": HIDDEN_OVER_HEADS, "vocab_size": 32000},
    "mistral": {"num_key_value_heads": 8, "head_dim": HIDDEN_OVER_HEADS, "vocab_size": 32000},
    "qwen2": {"num_key_value_heads": 32, "head_dim": HIDDEN_OVER_HEADS, "vocab_size": 151936},
    "qwen3": {"num_key_value_heads": 32, "head_dim": 128, "vocab_size": 151936},
    # Qwen3MoeConfig has no head_dim field: Qwen3MoeAttention falls back to hidden_size // heads
    "qwen3_moe": {"num_key_value_heads": 4, "head_dim": HIDDEN_OVER_HEADS, "vocab_size": 151936},
    "mixtral": {"num_key_value_heads": 8, "head_dim": HIDDEN_OVER_HEADS, "vocab_size": 32000},
    "gemma2": {"num_key_value_heads": 4, "head_dim": 256, "vocab_size": 256000},
    "gemma3_text": {"num_key_value_heads": 4, "head_dim": 256, "vocab_size": 262208},
    "phi3": {"num_key_value_heads": HEADS, "head_dim": HIDDEN_OVER_HEADS, "vocab_size": 32064},
    # MLA: the key/value head count shapes no tensor (kv_b_proj is per attention head)
    "deepseek_v2": {"num_key_value_heads": HEADS, "head_dim": HIDDEN_OVER_HEADS, "vocab_size": 32000},
    "deepseek_v3": {"num_key_value_heads": 128, "head_dim": HIDDEN_OVER_HEADS, "vocab_size": 129280},
    "llama4_text": {"num_key_value_heads": 8, "head_dim": 128, "vocab_size": 202048},
    "gpt_oss": {"num_key_value_heads": 8, "head_dim": 64, "vocab_size": 201088},
    "olmo2": {"num_key_value_heads": HEADS, "head_dim": HIDDEN_OVER_HEADS, "vocab_size": 50304},
}

# transformers' quantization configs (src/transformers/utils/quantization_config.py):
# BitsAndBytesConfig(load_in_8bit=False, load_in_4bit=False, bnb_4bit_quant_type="fp4",
# bnb_4bit_use_double_quant=False) raises "load_in_4bit and load_in_8bit are both True, but only
# one can be used at the same time"; GPTQConfig(bits, group_size=128); AwqConfig(bits=4, group_size=128).
BNB_DEFAULTS = {"load_in_8bit": False, "load_in_4bit": False, "bnb_4bit_quant_type": "fp4",
                "bnb_4bit_use_double_quant": False}
GROUP_SIZE_DEFAULT = 128


def kv_heads_default(model_type: str, num_heads: int) -> int:
    d = HF_DEFAULTS[model_type]["num_key_value_heads"]
    return num_heads if d == HEADS else d


def head_dim_default(model_type: str) -> int:
    return HF_DEFAULTS[model_type]["head_dim"]


def vocab_default(model_type: str) -> int:
    return HF_DEFAULTS[model_type]["vocab_size"]
