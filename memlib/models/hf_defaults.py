"""What transformers assumes for a field a config.json leaves out, per model_type (the values are in each
family's record, memlib/models/families.py).

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

from memlib.models.families import FAMILIES, HEADS, HIDDEN_OVER_HEADS  # noqa: F401 (HEADS, HIDDEN_OVER_HEADS: read here)

# per model_type, from its record in memlib/models/families.py (a wrapping multimodal type has none: its text
# model's are used)
HF_DEFAULTS: dict[str, dict] = {t: dict(f.defaults) for t, f in FAMILIES.items() if f.defaults}

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
