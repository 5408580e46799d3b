"""Model catalog and config.json reading: exact parameter counts derived by hand.

Every expected count below is re-derived tensor by tensor from the architecture numbers
(hidden size h, layers L, MLP width I, vocabulary V, key/value width) of the published
configs, never pasted from memlib's output.
"""

import json

import pytest

import memlib
from memlib import Model, get_model


# --- hand derivations ---------------------------------------------------------------------
def llama_style_count(h, L, I, V, kv_width=None, tied=False, qkv_bias=False):
    """LLaMA-style decoder (RMSNorm, SwiGLU MLP, RoPE), written out per tensor.

    per layer: q_proj h*h, k_proj h*kv, v_proj h*kv, o_proj h*h,
               gate/up/down 3*h*I, two RMSNorm weights 2*h, (+ q/k/v biases h + 2*kv)
    model:     embed_tokens V*h, final norm h, lm_head V*h unless tied
    """
    kv = h if kv_width is None else kv_width
    per_layer = h * h + h * kv + h * kv + h * h + 3 * h * I + 2 * h
    if qkv_bias:
        per_layer += h + kv + kv
    total = L * per_layer + V * h + h
    if not tied:
        total += V * h
    return total


def test_llama_7b_exact():
    # Touvron et al. 2023 (LLaMA), Table 2: 6.7B; dims 4096, 32 heads, 32 layers; MLP 11008
    # (huggyllama/llama-7b config.json), vocab 32000, untied head.
    per_layer = 4096 * 4096 * 4 + 3 * 4096 * 11008 + 2 * 4096
    assert per_layer == 202_383_360
    expected = 32 * per_layer + 2 * 32000 * 4096 + 4096
    assert expected == 6_738_415_616
    m = get_model("llama-7b")
    assert isinstance(m.num_params, int)
    assert m.num_params == expected


@pytest.mark.parametrize("name, h, L, I, paper_billions", [
    # Touvron et al. 2023 (LLaMA), Table 2: 6.7B / 13.0B / 32.5B / 65.2B
    ("llama-7b", 4096, 32, 11008, 6.7),
    ("llama-13b", 5120, 40, 13824, 13.0),
    ("llama-33b", 6656, 60, 17920, 32.5),
    ("llama-65b", 8192, 80, 22016, 65.2),
])
def test_llama1_family_matches_hand_count_and_paper(name, h, L, I, paper_billions):
    expected = llama_style_count(h, L, I, 32000)
    m = get_model(name)
    assert m.num_params == expected
    # the paper rounds (and 65.2 is a truncation of 65.29); within 0.15B of the table
    assert abs(m.num_params / 1e9 - paper_billions) < 0.15


def test_llama_65b_rounds_to_65_29b():
    per_layer = 8192 * 8192 * 4 + 3 * 8192 * 22016 + 2 * 8192
    expected = 80 * per_layer + 2 * 32000 * 8192 + 8192
    assert expected == 65_285_660_672
    n = get_model("llama-65b").num_params
    assert n == expected
    assert round(n / 1e9, 2) == 65.29


def test_vicuna_65b_same_shape_as_llama_65b():
    v, l = get_model("vicuna-65b"), get_model("llama-65b")
    for f in ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "intermediate_size", "vocab_size",
              "tie_word_embeddings"):
        assert getattr(v, f) == getattr(l, f), f
    assert v.num_params == l.num_params == llama_style_count(8192, 80, 22016, 32000)


def test_llama_2_70b_gqa():
    # Touvron et al. 2023 (Llama 2): 70B uses GQA with 8 KV heads; h 8192, 64 heads of 128,
    # 80 layers, MLP 28672, vocab 32000 (meta-llama/Llama-2-70b-hf config.json).
    kv = 8 * 128
    per_layer = 2 * 8192 * 8192 + 2 * 8192 * kv + 3 * 8192 * 28672 + 2 * 8192
    expected = 80 * per_layer + 2 * 32000 * 8192 + 8192
    assert expected == 68_976_648_192
    m = get_model("llama-2-70b")
    assert m.num_kv_heads == 8
    assert m.num_params == expected
    assert round(m.num_params / 1e9, 2) == 68.98


def test_llama_3_8b():
    # Llama 3 8B: vocab 128256, h 4096, 32 layers, 8 kv heads of 128, MLP 14336, untied.
    per_layer = 2 * 4096 * 4096 + 2 * 4096 * (8 * 128) + 3 * 4096 * 14336 + 2 * 4096
    expected = 32 * per_layer + 2 * 128256 * 4096 + 4096
    assert expected == 8_030_261_248
    assert get_model("llama-3-8b").num_params == expected


def test_mistral_7b():
    # Jiang et al. 2023 (Mistral 7B), Table 1: dim 4096, 32 layers, 32 heads, 8 kv heads,
    # hidden_dim 14336, vocab 32000; untied, no biases.
    per_layer = 2 * 4096 * 4096 + 2 * 4096 * (8 * 128) + 3 * 4096 * 14336 + 2 * 4096
    expected = 32 * per_layer + 2 * 32000 * 4096 + 4096
    assert expected == 7_241_732_096
    assert get_model("mistral-7b").num_params == expected


def test_qwen2_0_5b_tied_with_qkv_bias():
    # Qwen2-0.5B config.json: h 896, 24 layers, 14 heads of 64, 2 kv heads (kv width 128),
    # MLP 4864, vocab 151936, tie_word_embeddings true; q/k/v have biases, o_proj does not.
    h, kv, I, V, L = 896, 2 * 64, 4864, 151936, 24
    per_layer = (h * h + h) + (h * kv + kv) + (h * kv + kv) + h * h + 3 * h * I + 2 * h
    expected = L * per_layer + V * h + h  # embedding counted once (tied head)
    assert expected == 494_032_768
    assert get_model("qwen2-0.5b").num_params == expected


def test_gpt3_175b():
    # Brown et al. 2020 (GPT-3), Table 2.1: n_layers 96, d_model 12288, 96 heads, context 2048,
    # "175.0B". Per layer: qkv 3h^2 + 3h bias, out proj h^2 + h, MLP h*4h + 4h and 4h*h + h,
    # two LayerNorms with weight and bias 2*2h.  Model: token embedding V*h (V = 50257, the GPT-2
    # BPE), learned positions 2048*h, final LayerNorm 2h, head tied to the token embedding.
    h = 12288
    per_layer = (3 * h * h + 3 * h) + (h * h + h) + (h * 4 * h + 4 * h) + (4 * h * h + h) + 2 * 2 * h
    assert per_layer == 12 * h * h + 13 * h
    expected = 96 * per_layer + 50257 * h + 2048 * h + 2 * h
    assert expected == 174_604_259_328
    n = get_model("gpt-3-175b").num_params
    assert n == expected
    assert round(n / 1e9, 1) == 174.6
    assert abs(n - 175.0e9) / 175.0e9 < 0.005  # the paper's rounded 175.0B


# --- from_hf_config -------------------------------------------------------------------------
LLAMA_7B_CFG = {  # huggyllama/llama-7b config.json (relevant fields)
    "model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008, "num_attention_heads": 32,
    "num_hidden_layers": 32, "vocab_size": 32000, "hidden_act": "silu", "max_position_embeddings": 2048,
    "tie_word_embeddings": False,
}
MISTRAL_7B_CFG = {  # mistralai/Mistral-7B-v0.1 config.json
    "model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 32000, "hidden_act": "silu",
    "max_position_embeddings": 32768, "tie_word_embeddings": False,
}
QWEN2_05B_CFG = {  # Qwen/Qwen2-0.5B config.json
    "model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_attention_heads": 14,
    "num_hidden_layers": 24, "num_key_value_heads": 2, "vocab_size": 151936, "hidden_act": "silu",
    "max_position_embeddings": 131072, "tie_word_embeddings": True,
}

HF_CASES = [
    (LLAMA_7B_CFG, llama_style_count(4096, 32, 11008, 32000)),
    (MISTRAL_7B_CFG, llama_style_count(4096, 32, 14336, 32000, kv_width=8 * 128)),
    (QWEN2_05B_CFG, llama_style_count(896, 24, 4864, 151936, kv_width=2 * 64, tied=True, qkv_bias=True)),
]
HF_IDS = ["llama", "mistral", "qwen2"]


@pytest.mark.parametrize("cfg, expected", HF_CASES, ids=HF_IDS)
def test_from_hf_config_dict(cfg, expected):
    m = Model.from_hf_config(dict(cfg))
    assert isinstance(m, Model)
    assert m.num_params == expected
    assert m.model_type == cfg["model_type"]
    assert m.num_layers == cfg["num_hidden_layers"]


@pytest.mark.parametrize("cfg, expected", HF_CASES, ids=HF_IDS)
def test_from_hf_config_file_and_folder(tmp_path, cfg, expected):
    folder = tmp_path / "my-model"
    folder.mkdir()
    path = folder / "config.json"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    assert Model.from_hf_config(path).num_params == expected
    assert Model.from_hf_config(str(path)).num_params == expected
    assert Model.from_hf_config(folder).num_params == expected
    assert Model.from_hf_config(str(folder)).num_params == expected


def test_from_hf_config_matches_catalog():
    assert Model.from_hf_config(LLAMA_7B_CFG).num_params == get_model("llama-7b").num_params
    assert Model.from_hf_config(MISTRAL_7B_CFG).num_params == get_model("mistral-7b").num_params
    assert Model.from_hf_config(QWEN2_05B_CFG).num_params == get_model("qwen2-0.5b").num_params


def test_mistral_kv_heads_and_no_biases():
    m = Model.from_hf_config(MISTRAL_7B_CFG)
    assert m.num_kv_heads == 8
    assert m.kv_size == 8 * 128
    assert not m.qkv_bias and not m.o_bias
    # MistralAttention's projections are built with bias=False whatever the config says
    m2 = Model.from_hf_config({**MISTRAL_7B_CFG, "attention_bias": True})
    assert m2.num_params == llama_style_count(4096, 32, 14336, 32000, kv_width=1024)


def test_qwen2_biases_on_qkv_only():
    m = Model.from_hf_config(QWEN2_05B_CFG)
    assert m.qkv_bias and not m.o_bias
    no_bias = llama_style_count(896, 24, 4864, 151936, kv_width=128, tied=True)
    # biases: q 896 + k 128 + v 128 per layer
    assert m.num_params - no_bias == 24 * (896 + 128 + 128)


def test_llama_attention_bias_puts_bias_on_q_k_v_and_o():
    # LlamaAttention: q/k/v/o_proj all use bias=config.attention_bias
    m = Model.from_hf_config({**LLAMA_7B_CFG, "attention_bias": True})
    assert m.num_params - llama_style_count(4096, 32, 11008, 32000) == 32 * 4 * 4096


@pytest.mark.parametrize("cfg", [LLAMA_7B_CFG, MISTRAL_7B_CFG, QWEN2_05B_CFG], ids=HF_IDS)
def test_tied_vs_untied(cfg):
    tied = Model.from_hf_config({**cfg, "tie_word_embeddings": True})
    untied = Model.from_hf_config({**cfg, "tie_word_embeddings": False})
    # untying adds one lm_head of V x h
    assert untied.num_params - tied.num_params == cfg["vocab_size"] * cfg["hidden_size"]


@pytest.mark.parametrize("field", ["hidden_size", "num_hidden_layers", "num_attention_heads",
                                   "intermediate_size"])
def test_missing_field_named(field):
    cfg = {k: v for k, v in LLAMA_7B_CFG.items() if k != field}
    with pytest.raises(ValueError, match=field):
        Model.from_hf_config(cfg)


def test_missing_vocab_size_is_the_family_default():
    # transformers' LlamaConfig / MistralConfig: vocab_size defaults to 32000 (issue 23: defaults as transformers reads them)
    for cfg in (LLAMA_7B_CFG, MISTRAL_7B_CFG):
        assert Model.from_hf_config({k: v for k, v in cfg.items() if k != "vocab_size"}).vocab_size == 32000


def test_missing_field_in_file(tmp_path):
    cfg = {k: v for k, v in MISTRAL_7B_CFG.items() if k != "hidden_size"}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="hidden_size"):
        Model.from_hf_config(tmp_path)


def test_unsupported_model_type_lists_supported():
    with pytest.raises(ValueError, match="gpt2") as e:
        Model.from_hf_config({"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12})
    msg = str(e.value)
    for t in ("llama", "mistral", "qwen2"):
        assert t in msg


def test_missing_model_type():
    cfg = {k: v for k, v in LLAMA_7B_CFG.items() if k != "model_type"}
    with pytest.raises(ValueError, match="model_type"):
        Model.from_hf_config(cfg)


def test_malformed_json(tmp_path):
    p = tmp_path / "config.json"
    p.write_text('{"model_type": "llama", "hidden_size": 4096,,}')
    with pytest.raises(ValueError, match="JSON"):
        Model.from_hf_config(p)


def test_missing_file(tmp_path):
    with pytest.raises(ValueError, match="config.json"):
        Model.from_hf_config(tmp_path / "nowhere")


def test_non_dict_json(tmp_path):
    p = tmp_path / "config.json"
    p.write_text("[1, 2, 3]")
    with pytest.raises(ValueError, match="dict"):
        Model.from_hf_config(p)


# --- get_model ------------------------------------------------------------------------------
def test_get_model_unknown_suggests_close():
    with pytest.raises(ValueError, match="llama-7b") as e:
        get_model("llama-7")
    assert "unknown model" in str(e.value).lower()
    assert "did you mean" in str(e.value).lower()


def test_get_model_unknown_typo_suggests():
    with pytest.raises(ValueError, match="mistral-7b"):
        get_model("mistrall-7b")


@pytest.mark.parametrize("name", ["LLaMA-7B", "llama-7b", "LLAMA-7B", " Llama-7b "])
def test_get_model_case_insensitive(name):
    assert get_model(name) == get_model("llama-7b")
    assert get_model(name).num_params == llama_style_count(4096, 32, 11008, 32000)


@pytest.mark.parametrize("bad", [7, None, 3.5, ["llama-7b"], b"llama-7b"])
def test_get_model_non_string(bad):
    with pytest.raises(ValueError, match="string"):
        get_model(bad)


def test_get_model_returns_model_unchanged():
    m = get_model("llama-7b").with_(num_layers=2)
    assert get_model(m) is m


def test_catalog_entries_are_models_with_int_counts():
    names = memlib.list_models()
    for expected in ("llama-7b", "llama-65b", "vicuna-65b", "llama-2-70b", "llama-3-8b", "mistral-7b",
                     "qwen2-0.5b", "gpt-3-175b"):
        assert expected in names
    for n in names:
        assert isinstance(get_model(n).num_params, int)
