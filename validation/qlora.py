"""QLoRA on fake tensors: bitsandbytes' own 4-bit matmul, with the packed weights made as fake tensors.

bitsandbytes (0.49.2) registers fake kernels for its ops (bitsandbytes/_ops.py register_fake:
quantize_4bit, dequantize_4bit, dequantize_blockwise, ...), so its Python autograd function
MatMul4Bit (autograd/_functions.py) runs under FakeTensorMode and allocates what it allocates
on CUDA: the dequantized 16-bit weight in forward and again in backward, and it saves only the
packed weight (`ctx.tensors = (None, B)`, since 0.43.2). What cannot run on fake tensors is
Params4bit itself (`torch.Tensor._make_subclass` refuses a FakeTensor), so `FakeLinear4bit`
builds the packed weight and its QuantState directly, in the layout `functional.quantize_4bit`
returns: ceil(n/2) bytes of codes (uint8, or a 16-bit quant_storage), one absmax per 64-weight
block (fp32; with double quantization uint8, plus one fp32 absmax per 256 blocks, the shared
256-entry dynamic code and an fp32 offset), a 16-entry fp32 NF4 code per tensor.

The model is built as transformers + PEFT build a QLoRA model: the base loaded in 16-bit
(`torch_dtype`, bnb_4bit_compute_dtype the same), every decoder-layer projection a
Linear4bit (lm_head and embeddings stay 16-bit: llm_int8_skip_modules), `is_loaded_in_4bit`
set so that PEFT wraps them with its bitsandbytes LoRA layer (peft/tuners/lora/bnb.py), and
optionally peft's prepare_model_for_kbit_training (the non-4-bit parameters upcast to fp32;
case["base_dtype"] == "fp32").
"""

from __future__ import annotations

import math

import torch

_LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def _linear4bit_class():
    import bitsandbytes as bnb
    from bitsandbytes.functional import QuantState

    class FakeLinear4bit(bnb.nn.Linear4bit):
        """bnb.nn.Linear4bit whose packed weight and QuantState are fake tensors made directly."""

        def __init__(self, in_features: int, out_features: int, compute_dtype: torch.dtype, double_quant: bool,
                     device: str, dynamic_code: torch.Tensor, quant_storage: torch.dtype = torch.uint8):
            torch.nn.Module.__init__(self)
            self.in_features, self.out_features = in_features, out_features
            n = in_features * out_features
            blocks = math.ceil(n / 64)
            per = torch.tensor([], dtype=quant_storage).element_size()
            packed = torch.empty((math.ceil(n / 2) // per, 1), dtype=quant_storage, device=device)
            code = torch.empty(16, dtype=torch.float32, device=device)
            if double_quant:
                state2 = QuantState(absmax=torch.empty(math.ceil(blocks / 256), dtype=torch.float32, device=device),
                                    code=dynamic_code, blocksize=256, dtype=torch.float32)
                qs = QuantState(absmax=torch.empty(blocks, dtype=torch.uint8, device=device),
                                shape=torch.Size([out_features, in_features]), dtype=compute_dtype, blocksize=64,
                                code=code, quant_type="nf4",
                                offset=torch.empty((), dtype=torch.float32, device=device), state2=state2)
                extra = [qs.absmax, state2.absmax, qs.offset]
            else:
                qs = QuantState(absmax=torch.empty(blocks, dtype=torch.float32, device=device),
                                shape=torch.Size([out_features, in_features]), dtype=compute_dtype, blocksize=64,
                                code=code, quant_type="nf4")
                extra = [qs.absmax]
            packed.quant_state = qs
            packed.compress_statistics = double_quant
            packed.quant_type = "nf4"
            self.register_buffer("weight", packed, persistent=False)
            for i, t in enumerate(extra + [code]):  # so that the trackers count the quantization state
                self.register_buffer(f"_qstate{i}", t, persistent=False)
            self.bias = None
            self.compute_dtype = compute_dtype
            self.compute_type_is_set = True
            self.quant_state = qs
            self.quant_storage = quant_storage
            self.support_avx512bf16_for_cpu = False

    return FakeLinear4bit


def quantize_projections(model, compute_dtype: torch.dtype, double_quant: bool, device: str) -> int:
    """Replace every decoder-layer projection by a 4-bit one (lm_head stays 16-bit); returns how many."""
    cls = _linear4bit_class()
    # bitsandbytes keeps one 256-entry dynamic map per device for the second quantization (functional.name2qmap)
    dynamic_code = torch.empty(256, dtype=torch.float32, device=device) if double_quant else None
    if double_quant:
        model.register_buffer("_bnb_dynamic_code", dynamic_code, persistent=False)
    done = 0
    for layer in model.model.layers:
        for parent in (layer.self_attn, layer.mlp):
            for name in _LINEARS:
                lin = getattr(parent, name, None)
                if lin is None:
                    continue
                setattr(parent, name, cls(lin.in_features, lin.out_features, compute_dtype, double_quant, device,
                                          dynamic_code))
                done += 1
    model.is_loaded_in_4bit = True  # what from_pretrained(quantization_config=...) sets; PEFT reads it
    return done
