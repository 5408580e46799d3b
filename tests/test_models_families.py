"""The newer families: counts derived by hand from the published config.json, the vendors' own
totals, architectures/heads, and the config.json inputs that used to give silent wrong numbers.

Hand derivations restate each architecture's tensors (transformers' modeling files) as
arithmetic; the published totals come from the model cards and papers named in each test.
"""

import json

import numpy as np
import pytest

from memlib import Model, get_model
from memlib.models import suggest_models


def swiglu(h, i):
    return 3 * h * i


# --- hand counts ------------------------------------------------------------------------------
def test_mixtral_8x7b_total_and_active():
    # Mixtral-8x7B-v0.1 config.json: h 4096, 32 layers, 32 heads, 8 KV heads of 128, experts of
    # width 14336, 8 experts, top-2, vocab 32000, untied. Per layer: attention q,o 4096^2 each,
    # k,v 4096x1024 each; router 8x4096; 8 SwiGLU experts; two RMSNorms.
    h, L, I, E, V = 4096, 32, 14336, 8, 32000
    attn = 2 * h * h + 2 * h * 1024
    expert = swiglu(h, I)
    layer = attn + E * h + E * expert + 2 * h
    total = L * layer + 2 * V * h + h
    active = total - L * (E - 2) * expert
    assert total == 46_702_792_704
    m = get_model("mixtral-8x7b")
    assert (m.num_params, m.num_active_params) == (total, active)
    # Jiang et al. 2024 (Mixtral of Experts): 46.7B total; Mistral AI: 12.9B used per token
    assert round(total / 1e9, 1) == 46.7 and round(active / 1e9, 1) == 12.9


def test_deepseek_v3_by_tensor_and_published():
    # deepseek-ai/DeepSeek-V3 config.json: h 7168, 61 layers (first 3 dense, MLP 18432), 128 heads,
    # MLA q_lora_rank 1536, kv_lora_rank 512, nope 128, rope 64, v 128; 256 routed experts of 2048,
    # 1 shared, top-8; vocab 129280, untied.
    h, H, V = 7168, 128, 129280
    mla = (h * 1536 + 1536 + 1536 * H * 192      # q_a_proj, q_a_layernorm, q_b_proj
           + h * (512 + 64) + 512 + 512 * H * (128 + 128)  # kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj
           + H * 128 * h)                          # o_proj
    norms = 2 * h
    dense = mla + swiglu(h, 18432) + norms
    moe = mla + 256 * h + 256 * swiglu(h, 2048) + swiglu(h, 2048) + norms  # router, experts, shared
    total = 3 * dense + 58 * moe + 2 * V * h + h
    m = get_model("deepseek-v3")
    assert m.num_params == total
    # Technical report: 671B total; README_WEIGHTS.md: 36.6B activated (incl. 0.9B output head,
    # i.e. without the input embedding)
    assert round(total / 1e9) == 671
    assert round(m.active_params_without_embedding / 1e9, 1) == 36.6
    assert m.num_active_params == total - 58 * 248 * swiglu(h, 2048)
    assert (m.is_mla, m.is_moe, m.num_dense_layers, m.num_moe_layers) == (True, True, 3, 58)
    assert m.quantization == "fp8-block"


def test_gpt_oss_published_totals():
    # OpenAI gpt-oss model card, Table 1: 20b 20.91B total / 3.61B active, 120b 116.83B / 5.13B
    # (active without the embedding)
    for name, total, active in (("gpt-oss-20b", 20.91, 3.61), ("gpt-oss-120b", 116.83, 5.13)):
        m = get_model(name)
        assert round(m.num_params / 1e9, 2) == total
        assert round(m.active_params_without_embedding / 1e9, 2) == active
        assert m.quantization == "mxfp4" and m.attention_sinks and m.layer_counts() == {
            "sliding_attention": m.num_layers // 2, "full_attention": m.num_layers // 2}


def test_gpt_oss_20b_by_tensor():
    # h 2880, 24 layers, 64 heads of 64, 8 KV heads, q/k/v/o with biases, one sink per head;
    # 32 experts of 2880 with gate_up (h -> 2I) and down biases; router with bias; vocab 201088.
    h, I, E, V = 2880, 2880, 32, 201088
    attn = h * 4096 + 4096 + 2 * (h * 512 + 512) + 4096 * h + h + 64
    moe = E * h + E + E * (h * 2 * I + 2 * I) + E * (I * h + h)
    total = 24 * (attn + moe + 2 * h) + 2 * V * h + h
    assert get_model("gpt-oss-20b").num_params == total


@pytest.mark.parametrize("name, billions", [
    ("llama-3.1-8b", 8.03), ("llama-3.1-70b", 70.55), ("llama-3.1-405b", 405.85),  # Meta model card: 8B/70B/405B
    ("qwen2.5-7b", 7.62), ("qwen2.5-72b", 72.71),  # Qwen2.5 report: 7.61B (7.62 incl. rounding), 72.7B
    ("qwen3-8b", 8.19), ("qwen3-32b", 32.76), ("qwen3-30b-a3b", 30.53), ("qwen3-235b-a22b", 235.09),
    ("phi-4", 14.66), ("mixtral-8x22b", 140.62), ("llama-4-maverick", 400.71),
])
def test_published_totals_round(name, billions):
    assert round(get_model(name).num_params / 1e9, 2) == billions


def test_active_parameter_claims():
    # Qwen3: 30B-A3B has 3.3B activated, 235B-A22B 22B (Qwen3 Technical Report, Table 2);
    # Llama 4 Scout and Maverick: 17B active (Meta model card); Mixtral-8x22B: 39B active (Mistral AI)
    assert round(get_model("qwen3-30b-a3b").num_active_params / 1e9, 1) == 3.4  # 3.35: the report rounds down
    assert round(get_model("qwen3-235b-a22b").num_active_params / 1e9) == 22
    assert round(get_model("llama-4-scout").num_active_params / 1e9) == 17
    assert round(get_model("llama-4-maverick").num_active_params / 1e9) == 17
    assert round(get_model("mixtral-8x22b").num_active_params / 1e9) == 39


def test_dense_models_active_equals_total():
    for n in ("llama-7b", "qwen3-8b", "gemma-3-27b", "phi-4"):
        m = get_model(n)
        assert m.num_active_params == m.num_params and not m.is_moe


def test_qwen3_8b_by_tensor():
    # h 4096, 36 layers, 32 heads of 128 (q 4096), 8 KV heads (1024), q/k RMSNorm of 128, MLP 12288
    h, V = 4096, 151936
    layer = 2 * h * 4096 + 2 * h * 1024 + 2 * 128 + swiglu(h, 12288) + 2 * h
    assert get_model("qwen3-8b").num_params == 36 * layer + 2 * V * h + h


def test_gemma_3_27b_text_by_tensor():
    # text_config: h 5376, 62 layers, 32 heads of 128 (4096), 16 KV heads (2048), q/k norms of 128,
    # four RMSNorms per layer, GELU-tanh SwiGLU-shaped MLP 21504, vocab 262208 tied
    h, V = 5376, 262208
    layer = 2 * h * 4096 + 2 * h * 2048 + 2 * 128 + swiglu(h, 21504) + 4 * h
    m = get_model("gemma-3-27b")
    assert m.num_params == 62 * layer + V * h + h
    assert m.layer_counts() == {"sliding_attention": 52, "full_attention": 10}  # 5 local : 1 global
    assert "vision" in m.omitted


def test_phi_4_fused_projections():
    # qkv_proj (h -> q + 2 kv) and gate_up_proj (h -> 2I) hold what LLaMA splits in five matrices
    m = get_model("phi-4")
    names = {t.name for t in m.tensors()}
    assert {"qkv_proj", "gate_up_proj"} <= names and not {"q_proj", "gate_proj"} & names
    h = 5120
    layer = h * (5120 + 2 * 1280) + 5120 * h + h * 2 * 17920 + 17920 * h + 2 * h
    assert m.num_params == 40 * layer + 2 * 100352 * h + h


def test_olmo2_norms_after_and_on_all_heads():
    cfg = {"architectures": ["Olmo2ForCausalLM"], "model_type": "olmo2", "hidden_size": 2048,
           "intermediate_size": 8192, "num_attention_heads": 16, "num_hidden_layers": 16,
           "num_key_value_heads": 16, "vocab_size": 100352}  # allenai/OLMo-2-0425-1B
    m = Model.from_hf_config(cfg)
    names = [t.name for t in m.tensors()]
    assert "input_layernorm" not in names and "post_feedforward_layernorm" in names
    h = 2048
    layer = 4 * h * h + 2 * h + swiglu(h, 8192) + 2 * h  # q_norm, k_norm over all heads (2h), 2 post-norms
    assert m.num_params == 16 * layer + 2 * 100352 * h + h


def test_dense_llama_tensor_names_unchanged():
    # training.py relies on these names and kinds for LLaMA-style models
    names = {t.name: t.kind for t in get_model("llama-3.1-8b").tensors()}
    assert names == {"embed_tokens": "embedding", "input_layernorm": "norm", "q_proj": "linear",
                     "k_proj": "linear", "v_proj": "linear", "o_proj": "linear",
                     "post_attention_layernorm": "norm", "gate_proj": "linear", "up_proj": "linear",
                     "down_proj": "linear", "final_norm": "norm", "lm_head": "linear"}
    assert get_model("llama-3.1-8b").is_llama_layer and not get_model("qwen3-8b").is_llama_layer


# --- architectures -------------------------------------------------------------------------------
BASE = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4,
        "num_hidden_layers": 2, "vocab_size": 1000}


def test_reward_model_has_a_score_head_not_an_lm_head():
    lm = Model.from_hf_config({**BASE, "architectures": ["LlamaForCausalLM"]})
    rm = Model.from_hf_config({**BASE, "architectures": ["LlamaForSequenceClassification"], "num_labels": 1})
    base = Model.from_hf_config({**BASE, "architectures": ["LlamaModel"]})
    assert lm.num_params - rm.num_params == 1000 * 256 - 256 * 1  # vocab head out, 1-label score in
    assert lm.num_params - base.num_params == 1000 * 256
    assert (rm.head, rm.num_labels, base.head) == ("score", 1, "none")


def test_sequence_classification_default_two_labels_or_id2label():
    two = Model.from_hf_config({**BASE, "architectures": ["LlamaForSequenceClassification"]})
    three = Model.from_hf_config({**BASE, "architectures": ["LlamaForSequenceClassification"],
                                  "id2label": {"0": "a", "1": "b", "2": "c"}})
    assert (two.num_labels, three.num_labels) == (2, 3)


@pytest.mark.parametrize("arch", ["LlamaForTokenClassification", "LlamaForQuestionAnswering", "Foo"])
def test_unsupported_architecture_names_supported(arch):
    with pytest.raises(ValueError, match=r"unsupported architectures.*ForCausalLM.*ForSequenceClassification"):
        Model.from_hf_config({**BASE, "architectures": [arch]})


def test_architecture_of_another_family_refused():
    with pytest.raises(ValueError, match=r"MixtralForCausalLM.*model_type is 'llama'.*'mixtral'"):
        Model.from_hf_config({**BASE, "architectures": ["MixtralForCausalLM"]})


def test_moe_fields_under_a_dense_model_type_refused():
    # issue 10: a relabelled Mixtral config was counted as a dense 7.24B model
    cfg = {**json.loads(json.dumps(__import__("memlib.models.hf_configs", fromlist=["x"]).HF_CONFIGS["mixtral-8x7b"]
                                   ["config"])), "model_type": "llama", "architectures": ["LlamaForCausalLM"]}
    with pytest.raises(ValueError, match=r"mixture-of-experts field num_local_experts=8.*mixtral"):
        Model.from_hf_config(cfg)
    with pytest.raises(ValueError, match=r"latent-attention field kv_lora_rank"):
        Model.from_hf_config({**BASE, "kv_lora_rank": 512})


def test_multimodal_config_reads_text_config():
    from memlib.models.hf_configs import HF_CONFIGS
    outer = HF_CONFIGS["gemma-3-27b"]["config"]
    m = Model.from_hf_config(outer)
    text = Model.from_hf_config({**outer["text_config"], "architectures": ["Gemma3ForCausalLM"]})
    assert m.num_params == text.num_params and m.omitted and not text.omitted
    with pytest.raises(ValueError, match="text_config"):
        Model.from_hf_config({"model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"]})


def test_mistral_sliding_window_default_and_null():
    cfg = {**BASE, "model_type": "mistral", "num_key_value_heads": 4}  # MistralConfig's default 8 needs >= 8 heads
    assert Model.from_hf_config(cfg).sliding_window == 4096  # MistralConfig's default (v0.1)
    assert Model.from_hf_config({**cfg, "sliding_window": None}).sliding_window == 0  # v0.2+
    assert get_model("mistral-7b").layer_counts() == {"sliding_attention": 32}


# --- config.json robustness (issue 11) -----------------------------------------------------------
def test_string_boolean_refused_clearly():
    with pytest.raises(ValueError, match=r"tie_word_embeddings.*JSON boolean.*'false'"):
        Model.from_hf_config({**BASE, "tie_word_embeddings": "false"})


@pytest.mark.parametrize("field, value", [("hidden_size", [256]), ("model_type", ["llama"]),
                                          ("num_key_value_heads", {"a": 1}), ("architectures", "LlamaForCausalLM"),
                                          ("hidden_act", ["silu"]), ("attention_bias", [True])])
def test_list_and_dict_valued_fields_are_value_errors(field, value):
    with pytest.raises(ValueError, match=field if field != "model_type" else "model_type"):
        Model.from_hf_config({**BASE, field: value})


def test_deeply_nested_json_names_the_file(tmp_path):
    p = tmp_path / "config.json"
    p.write_text("[" * 100000)
    with pytest.raises(ValueError, match=str(p).replace("\\", "\\\\")):
        Model.from_hf_config(p)


def test_undecodable_file_names_the_file(tmp_path):
    p = tmp_path / "config.json"
    p.write_bytes(b'{"model_type": "llama", "x": "\xff\xfe"}')
    with pytest.raises(ValueError, match=r"config\.json.*not UTF-8"):
        Model.from_hf_config(p)


def test_numpy_sizes_stored_as_python_ints():
    # issue 11: int32 sizes overflowed (num_params -1,851,518,976); int64 broke json.dumps
    m = Model("np", hidden_size=np.int32(8192), num_layers=np.int32(80), num_heads=np.int64(64),
              intermediate_size=np.int32(22016), vocab_size=np.int64(32000), tie_word_embeddings=np.bool_(False))
    assert type(m.hidden_size) is int and type(m.num_layers) is int and type(m.tie_word_embeddings) is bool
    assert m.num_params == get_model("llama-65b").num_params == 65_285_660_672
    json.dumps({"n": m.num_params, "h": m.hidden_size})


@pytest.mark.parametrize("qc, fmt", [
    ({"quant_method": "gptq", "bits": 4, "group_size": 128}, "int4-gptq"),
    ({"quant_method": "awq", "bits": 4}, "int4-awq"),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}, "nf4"),
    ({"quant_method": "bitsandbytes", "load_in_8bit": True}, "int8"),
    ({"quant_method": "fp8", "weight_block_size": [128, 128]}, "fp8-block"),
    ({"quant_method": "mxfp4"}, "mxfp4"),
])
def test_quantization_config_sets_the_released_format(qc, fmt):
    assert Model.from_hf_config({**BASE, "quantization_config": qc}).quantization == fmt


@pytest.mark.parametrize("qc, msg", [({"quant_method": "gptq", "bits": 3}, "3 bits"),
                                     ({"quant_method": "hqq"}, "supported: gptq"),
                                     ({"quant_method": "fp8"}, "weight_block_size None"),
                                     ("fp8", "must be an object")])
def test_quantization_config_unsupported_is_clear(qc, msg):
    with pytest.raises(ValueError, match=msg):
        Model.from_hf_config({**BASE, "quantization_config": qc})


# --- catalog suggestions and with_() --------------------------------------------------------------
@pytest.mark.parametrize("typo, first", [("mixtral-8x7", "mixtral-8x7b"), ("mixtral-7b", "mixtral-8x7b"),
                                         ("mixtrall-8x22b", "mixtral-8x22b"), ("qwen3-30b-a3", "qwen3-30b-a3b"),
                                         ("deepseek-v3.1", "deepseek-v3"), ("gpt-oss-21b", "gpt-oss-20b")])
def test_suggestions_prefer_same_family_and_size(typo, first):
    try:
        get_model(typo)
        pytest.fail(f"{typo} resolved")
    except ValueError as e:
        assert f"Did you mean '{first}'" in str(e)
    assert "mistral-7b" not in suggest_models("mixtral-8x7")[:2]


def test_with_fewer_layers_keeps_the_pattern():
    ds = get_model("deepseek-v3").with_(num_layers=4)
    assert (ds.num_dense_layers, ds.num_moe_layers) == (3, 1)
    g = get_model("gemma-3-27b").with_(num_layers=12)
    assert g.layer_counts() == {"sliding_attention": 10, "full_attention": 2}
    assert get_model("llama-7b").with_(num_layers=2).num_layers == 2
