"""Issue 42: GPTQ 8-bit weights (int8-gptq), as GPTQModel's QuantLinear registers its buffers with bits=8
(ModelCloud/GPTQModel@f4c327a gptqmodel/nn_modules/qlinear/__init__.py _register_gptq_buffers). Expected values are
derived by hand from the buffer shapes below."""

import pytest

import memlib
from memlib import estimate_inference
from memlib.serving.inference import quantized_linear_bytes


def test_int8_gptq_4096x4096_from_buffer_shapes():
    # bits 8, group 128, int32 words (4 codes per word), in = out = 4096:
    qweight = (4096 * 8 // 32) * 4096 * 4   # int32 [1024, 4096]: one byte per weight
    qzeros = (4096 // 128) * (4096 * 8 // 32) * 4  # int32 [32 groups, 1024]
    scales = (4096 // 128) * 4096 * 2      # fp16 [32 groups, 4096]
    g_idx = 4096 * 4                        # int32, the group of each input row
    assert (qweight, qzeros, scales, g_idx) == (16_777_216, 131_072, 262_144, 16_384)
    assert quantized_linear_bytes(4096, 4096, "int8-gptq") == 17_186_816
    # 8 + 8/128 + 16/128 + 32/4096 bits per weight
    assert quantized_linear_bytes(4096, 4096, "int8-gptq") * 8 / 4096**2 == pytest.approx(
        8 + 8 / 128 + 16 / 128 + 32 / 4096)


def test_int8_gptq_widths_not_multiples_of_32():
    # GPTQModel's torch kernel takes any width: ceil(in * 8 / 32) words per column. in 100, out 10, group 32:
    # qweight ceil(800/32) = 25 words x 10 columns x 4 = 1000; 4 groups: qzeros 4 x ceil(80/32) = 3 words x 4 = 48;
    # scales 4 x 10 x 2 = 80; g_idx 100 x 4 = 400. Total 1528.
    assert quantized_linear_bytes(100, 10, "int8-gptq", group_size=32) == 1000 + 48 + 80 + 400


def test_llama2_7b_int8_gptq_by_hand():
    # per layer: 4 of 4096 -> 4096; gate, up 4096 -> 11008; down 11008 -> 4096 (86 groups of 128)
    sq = 4096 * 4096 + 32 * 4096 * 3 + 4096 * 4               # 17,186,816
    up = 4096 * 11008 + 32 * 11008 * 3 + 4096 * 4             # 46,139,392
    down = 11008 * 4096 + 86 * 4096 * 3 + 11008 * 4           # 46,187,008
    linear = 32 * (4 * sq + 2 * up + down)
    est = estimate_inference("llama-2-7b", weights="int8-gptq")
    assert est.weight_parts["linear"] == linear
    assert est.breakdown["weights"] == linear + 2 * 32000 * 4096 * 2 + 65 * 4096 * 2


def test_config_json_gptq_8_bits_reads_as_int8_gptq():
    cfg = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
           "num_attention_heads": 32, "vocab_size": 32000,
           "quantization_config": {"quant_method": "gptq", "bits": 8, "group_size": 64, "desc_act": True}}
    m = memlib.Model.from_hf_config(cfg)
    assert (m.quantization, m.quantization_group_size) == ("int8-gptq", 64)
    est = estimate_inference(m, weights="auto")
    assert est.setup.weights == "int8-gptq" and est.setup.group_size == 64
    cfg["quantization_config"]["bits"] = 3
    with pytest.raises(ValueError, match="gptq with 3 bits is not modelled.*8-bit gptq"):
        memlib.Model.from_hf_config(cfg)
    cfg["quantization_config"].update(quant_method="awq", bits=8)
    with pytest.raises(ValueError, match="awq with 8 bits is not modelled"):
        memlib.Model.from_hf_config(cfg)
