"""fp8 training's memory, derived by hand for Llama-3-8B (h 4,096, I 14,336, 32 layers, 8 KV heads of 128, V 128,256).

Parameters: embedding and head 2 x 128,256 x 4,096 = 1,050,673,152; per layer q and o 2 x 4,096^2 = 33,554,432,
k and v 2 x 4,096 x 1,024 = 8,388,608, gate/up/down 3 x 4,096 x 14,336 = 176,160,768 (linear: 218,103,808), two
norms 8,192; final norm 4,096: 8,030,261,248 in all, 32 x 218,103,808 = 6,979,321,856 in the layers' linears.

Bytes per parameter: Megatron bf16 2 + 4 + 4 + 4 + 4 = 18; Transformer Engine fp8 adds 1 + 1 bytes (fp8 weight and its
transpose) per linear weight: 18 + 2 x 6,979,321,856 / 8,030,261,248; torchtitan 4 x 4 = 16 with or without float8;
DeepSeek-V3 4 + 4 + 2 + 2 = 12 plus 1 + 4/16,384 per linear weight.

Saved activations per token of one layer (bf16 ledger): norms 2 x (4h + 2h + 2h) = 16h = 65,536; q 2 x 4,096, k and v
2 x 2 x 1,024, attention output 2 x 4,096, log-sum-exp 4 x 32 = 8,192 + 4,096 + 8,192 + 128 = 20,608; MLP 4 x 2 x
14,336 = 114,688: 200,832. TE: q/k/v input 8,192 -> 4,096, gate/up input 8,192 -> 4,096, down input 28,672 -> 14,336,
plus o_proj's fp8 copy 4,096: 200,832 - 4,096 - 4,096 - 14,336 + 4,096 = 182,400. DeepSeek-V3: those two inputs at
4,096 x 1.03125 = 4,224, gate and up at 14,336 x 1.03125 = 14,784, SiLU output and product dropped:
200,832 - 2 x 8,192 - 4 x 28,672 + 2 x 4,224 + 2 x 14,784 = 107,776.
"""

import pytest

from memlib.training.fp8 import FP8_TRAINING_RECIPES, fp8_training_memory

LIN, N = 6_979_321_856, 8_030_261_248


def test_bytes_per_parameter_by_recipe():
    got = {r: fp8_training_memory("llama-3-8b", r) for r in FP8_TRAINING_RECIPES}
    assert got["megatron-bf16"].params == N and got["megatron-bf16"].linear_params == LIN
    assert got["megatron-bf16"].bytes_per_param == 18
    assert got["te-fp8"].bytes_per_param == pytest.approx(18 + 2 * LIN / N)
    assert got["torchao-bf16"].bytes_per_param == got["torchao-float8"].bytes_per_param == 16
    assert got["deepseek-v3"].bytes_per_param == pytest.approx(12 + (1 + 4 / 16_384) * LIN / N)


def test_fp8_does_not_shrink_the_states():
    bf16, fp8 = fp8_training_memory("llama-3-8b", "megatron-bf16"), fp8_training_memory("llama-3-8b", "te-fp8")
    assert fp8.state_bytes > bf16.state_bytes


def test_saved_activations_per_token_per_layer():
    per = {r: fp8_training_memory("llama-3-8b", r).layer_activation_bytes_per_token for r in FP8_TRAINING_RECIPES}
    assert per["megatron-bf16"] == per["torchao-float8"] == 200_832
    assert per["te-fp8"] == 182_400
    assert per["deepseek-v3"] == pytest.approx(107_776)
    assert fp8_training_memory("llama-3-8b", "te-fp8").activation_bytes(8192) == 182_400 * 8192 * 32


def test_bad_input():
    with pytest.raises(ValueError, match="recipe"):
        fp8_training_memory("llama-3-8b", "fp8")
    with pytest.raises(ValueError, match="dense LLaMA-style"):
        fp8_training_memory("mixtral-8x7b", "te-fp8")


def test_a_model_that_is_not_a_name_or_model():
    with pytest.raises(ValueError, match="model name"):
        fp8_training_memory(3, "te-fp8")
