"""fp8 training in practice: what each recipe keeps in which dtype, and the memory it really saves.

fp8 training runs the linear layers' matmuls on fp8 tensor cores (twice bf16's peak on an H100). It does not
shrink the model states: every recipe keeps fp32 master weights, and the Adam moments stay fp32 (bf16 in
DeepSeek-V3). What changes is (1) a cast fp8 copy of each linear weight that some recipes keep, and (2) the
inputs the linears save for their weight gradients, which some recipes save in fp8.

Bytes per parameter (one GPU, no sharding; Adam):
  megatron-bf16     Megatron-LM mixed precision: bf16 weight 2 + fp32 main grad 4 + fp32 master 4 + m 4 + v 4 = 18
                    (memlib.parallel.megatron, NVIDIA/Megatron-LM docs/source/api-guide/dist_optimizer.md).
  te-fp8            the same + Transformer Engine's fp8 weight workspace of every linear weight: row-wise data and
                    its column-wise (transposed) copy, 1 + 1 byte, cached across micro-batches and saved for the
                    backward (transformer_engine/pytorch/module/linear.py at NVIDIA/TransformerEngine@d0067d0,
                    2.20.0.dev0: quantize_weight(..., workspace=...), weight_quantizer.set_usage(rowwise=True,
                    columnwise=...), wt_save = weightmat). Per-tensor delayed (amax history) or current scaling:
                    one fp32 scale per tensor, ~0 bytes per parameter.
  torchao-float8    torchtitan's FSDP2 layout (fp32 parameters, fp32 gradients, fp32 m and v: 16) with torchao's
                    Float8Linear: the weight is cast to fp8 inside each matmul and not kept (pytorch/ao
                    torchao/float8/float8_linear.py@7ca1bfb, matmul_with_hp_or_float8_args). Dynamic (current)
                    tensor-wise scaling by default.
  deepseek-v3       DeepSeek-V3 Technical Report (arXiv:2412.19437) Sec. 3.3.3: fp32 master weights and weight
                    gradients, AdamW moments in bf16 (4 + 4 + 2 + 2 = 12), plus the fp8 weight the GEMMs read with
                    one fp32 scale per 128x128 block (1 + 4/16,384 bytes; the report does not say whether a
                    transposed copy is kept, so one copy is counted).

Saved activations (bytes per token of one decoder layer): memlib's LLaMA-layer ledger in bf16
(memlib.training.activations.llama_layer_ledger), with the matmul inputs re-typed as each recipe saves them:
  te-fp8            LayerNormLinear (q/k/v) and LayerNormMLP (gate/up, and down's input) save their fp8 input,
                    1 byte instead of 2 (linear.py above: saved_inputmat = inputmat, the quantized tensor). The
                    attention output stays bf16 for the attention kernel's backward and o_proj saves its own fp8
                    copy: + 1 byte per element of the attention output.
  torchao-float8    eager mode saves the high-precision input (ctx.save_for_backward(input_hp, weight_hp_t)): no
                    change.
  deepseek-v3       Sec. 3.3.3: linear inputs cached in fp8 with one fp32 scale per 1x128 tile (1 + 4/128 bytes);
                    the SwiGLU inputs cached in fp8 and its output recomputed in the backward (so SiLU's output and
                    the product are not kept). The attention output (E5M6 in the report) is left at 16 bits here.
"""

from __future__ import annotations

from dataclasses import dataclass

from memlib._checks import choice
from memlib.models import Model, get_model
from memlib.training import activations as act
from memlib.training.terms import NUMERICS

FP8_TRAINING_RECIPES = ("megatron-bf16", "te-fp8", "torchao-bf16", "torchao-float8", "deepseek-v3")

DSV3_TILE, DSV3_BLOCK = 128, 128 * 128   # activations: one fp32 scale per 1x128 tile; weights: per 128x128 block

# recipe: {state: bytes per parameter}, for every parameter ("all") and extra for linear weights only ("linear")
_STATE_BYTES = {
    "megatron-bf16": {"all": {"bf16 weight": 2, "fp32 main grad": 4, "fp32 master weight": 4, "Adam m (fp32)": 4,
                              "Adam v (fp32)": 4}, "linear": {}},
    "te-fp8": {"all": {"bf16 weight": 2, "fp32 main grad": 4, "fp32 master weight": 4, "Adam m (fp32)": 4,
                       "Adam v (fp32)": 4}, "linear": {"fp8 weight (row-wise)": 1, "fp8 weight (column-wise)": 1}},
    "torchao-bf16": {"all": {"fp32 weight": 4, "fp32 grad": 4, "Adam m (fp32)": 4, "Adam v (fp32)": 4},
                     "linear": {}},
    "torchao-float8": {"all": {"fp32 weight": 4, "fp32 grad": 4, "Adam m (fp32)": 4, "Adam v (fp32)": 4},
                       "linear": {}},
    "deepseek-v3": {"all": {"fp32 master weight": 4, "fp32 weight grad": 4, "Adam m (bf16)": 2, "Adam v (bf16)": 2},
                    "linear": {"fp8 weight + 128x128 scales": 1 + 4 / DSV3_BLOCK}},
}
_MATMUL_INPUTS = ("attn_norm.out", "mlp_norm.out", "mlp.product")   # inputs of q/k/v, gate/up, down (saved)


@dataclass(frozen=True)
class Fp8TrainingMemory:
    """What one recipe keeps: bytes per parameter of each state, and the saved activations per token of one layer."""

    recipe: str
    model: str
    state_bytes_per_param: dict      # state: bytes per parameter (of all parameters; linear-only states averaged in)
    params: int
    linear_params: int
    layer_activation_bytes_per_token: float
    activation_items: tuple          # (ledger entry, bytes per token) after the recipe's re-typing
    layers: int

    @property
    def bytes_per_param(self) -> float:
        return sum(self.state_bytes_per_param.values())

    @property
    def state_bytes(self) -> float:
        return self.bytes_per_param * self.params

    def activation_bytes(self, tokens: int) -> float:
        """Saved activations of all decoder layers for `tokens` tokens (b x s) on one GPU."""
        return self.layer_activation_bytes_per_token * tokens * self.layers


def _linear_params(m: Model) -> int:
    """Parameters of the decoder layers' linear weights: the ones fp8 matmuls read (embedding and head stay 16-bit
    in TE, torchao and DeepSeek-V3 alike; routers too)."""
    return sum(t.numel * t.count for t in m.tensors() if t.kind == "linear" and t.name not in ("lm_head", "router"))


def fp8_layer_activation_items(model, recipe: str) -> list[tuple[str, float]]:
    """The saved tensors of one dense LLaMA-style layer, bytes per token, as `recipe` keeps them (module docstring)."""
    choice("recipe", recipe, FP8_TRAINING_RECIPES)
    m = get_model(model)
    if m.is_moe or m.is_mla or not m.is_llama_layer:
        raise ValueError(f"{m.name}: fp8 activations are modelled for dense LLaMA-style layers only (the matmul "
                         "inputs of MoE and MLA layers are not re-typed here)")
    led = act.llama_layer_ledger(m, NUMERICS["bf16"], 1, 1, 1, attention="sdpa", trainable_linears=True)
    items = [(n, float(b)) for n, b, _ in led.items]
    if recipe in ("megatron-bf16", "torchao-bf16", "torchao-float8"):
        return items
    out = []
    for name, b in items:
        if recipe == "te-fp8":
            if name in _MATMUL_INPUTS:
                b /= 2                                        # bf16 -> fp8, one byte per element
            out.append((name, b))
            if name == "sdpa.out":
                out.append(("o_proj.fp8_input", b / 2))      # o_proj's own fp8 copy of the attention output
            continue
        # deepseek-v3: fp8 + one fp32 scale per 128 elements for the linear inputs and the SwiGLU inputs
        if name in ("attn_norm.out", "mlp_norm.out", "mlp.gate", "mlp.up"):
            b = b / 2 * (1 + 4 / DSV3_TILE)
        elif name in ("mlp.silu", "mlp.product"):
            continue                                         # recomputed from the cached SwiGLU inputs
        out.append((name, b))
    return out


def fp8_training_memory(model, recipe: str) -> Fp8TrainingMemory:
    """Bytes per parameter and saved activations per token of one layer under `recipe` (module docstring):
    "megatron-bf16" | "te-fp8" (Transformer Engine on Megatron) | "torchao-bf16" | "torchao-float8" (torchtitan,
    FSDP2) | "deepseek-v3" (its report's recipe)."""
    choice("recipe", recipe, FP8_TRAINING_RECIPES)
    m = get_model(model)
    n, lin = m.num_params, _linear_params(m)
    states = dict(_STATE_BYTES[recipe]["all"])
    for k, v in _STATE_BYTES[recipe]["linear"].items():
        states[k] = v * lin / n
    items = fp8_layer_activation_items(m, recipe)
    return Fp8TrainingMemory(recipe, m.name, states, n, lin, sum(b for _, b in items), tuple(items),
                            m.num_layers)


__all__ = ["FP8_TRAINING_RECIPES", "Fp8TrainingMemory", "fp8_training_memory", "fp8_layer_activation_items"]
