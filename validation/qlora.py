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

import contextlib
import math

import torch

# How the 4-bit base is built and which bitsandbytes semantics it runs (memlib's qlora_backend):
#   "bitsandbytes"                    transformers + PEFT on bitsandbytes >= 0.43.2 (the release installed here)
#   "bitsandbytes<0.43.2"             the same with MatMul4Bit keeping its input (matmul4bit_keeps_input)
#   "lightning-bitsandbytes[<0.43.2]" Lightning Fabric's BitsandbytesPrecision, as LitGPT runs QLoRA: every
#                                     nn.Linear (lm_head too) in 4 bits, quantized from fp16 (lightning_linear)
BACKENDS = ("bitsandbytes", "bitsandbytes<0.43.2", "lightning-bitsandbytes", "lightning-bitsandbytes<0.43.2")


def keeps_input(backend: str) -> bool:
    return backend.endswith("<0.43.2")


def lightning(backend: str) -> bool:
    return backend.startswith("lightning-")


@contextlib.contextmanager
def matmul4bit_keeps_input():
    """bitsandbytes before 0.43.2: MatMul4Bit.forward stored `ctx.tensors = (A, B)` (autograd/_functions.py at
    0.41.1 and 0.42.0, the releases LitGPT pinned); PR #1270 (0.43.2, "fix QLoRA mem bug: delete useless buffered
    activation") made it `(None, B)`. A tensor stored on ctx as a plain attribute is not a saved tensor: the
    engine does not free it after the backward, so it lives as long as the graph's nodes do. Wraps the installed
    release's forward and stores the input back, as those releases did."""
    from bitsandbytes.autograd._functions import MatMul4Bit
    original = MatMul4Bit.forward

    def forward(ctx, A, B, out=None, bias=None, quant_state=None):
        output = original(ctx, A, B, out, bias, quant_state)
        if not ctx.is_empty and any(ctx.needs_input_grad[:2]):
            ctx.tensors = (A, B)
        return output

    MatMul4Bit.forward = staticmethod(forward)
    try:
        yield
    finally:
        MatMul4Bit.forward = original

_LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def _linear4bit_class():
    import bitsandbytes as bnb
    from bitsandbytes.functional import QuantState

    class FakeLinear4bit(bnb.nn.Linear4bit):
        """bnb.nn.Linear4bit whose packed weight and QuantState are fake tensors made directly."""

        def __init__(self, in_features: int, out_features: int, compute_dtype: torch.dtype, double_quant: bool,
                     device: str, dynamic_code: torch.Tensor, quant_storage: torch.dtype = torch.uint8,
                     quant_dtype: torch.dtype | None = None):
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
                                shape=torch.Size([out_features, in_features]), dtype=quant_dtype or compute_dtype,
                                blocksize=64,
                                code=code, quant_type="nf4",
                                offset=torch.empty((), dtype=torch.float32, device=device), state2=state2)
                extra = [qs.absmax, state2.absmax, qs.offset]
            else:
                qs = QuantState(absmax=torch.empty(blocks, dtype=torch.float32, device=device),
                                shape=torch.Size([out_features, in_features]), dtype=quant_dtype or compute_dtype,
                                blocksize=64, code=code, quant_type="nf4")
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
            self.cuda_path = quant_dtype is not None

        def forward(self, x: torch.Tensor):
            if not self.cuda_path:
                return super().forward(x)
            # Linear4bit.forward as it runs on CUDA: bitsandbytes' matmul_4bit resets quant_state.dtype to the
            # input's dtype on a CPU tensor (autograd/_functions.py, 0.49.2), which CUDA does not; for more than
            # one token matmul_4bit is MatMul4Bit.apply, which dequantizes in quant_state.dtype, then casts.
            from bitsandbytes.autograd._functions import MatMul4Bit
            inp_dtype = x.dtype
            x = x.to(self.compute_dtype)
            return MatMul4Bit.apply(x, self.weight.t(), None, None, self.quant_state).to(inp_dtype)

    return FakeLinear4bit


def quantize_projections(model, compute_dtype: torch.dtype, double_quant: bool, device: str,
                         backend: str = "bitsandbytes") -> int:
    """Replace every decoder-layer projection by a 4-bit one; returns how many.

    transformers' bitsandbytes integration keeps lm_head 16-bit (llm_int8_skip_modules) and quantizes the weight in
    its loaded dtype (quant_state.dtype = the compute dtype). Lightning's BitsandbytesPrecision (the Lightning
    backends) replaces every nn.Linear, lm_head included, and quantizes from `weight.to(torch.half)`
    (lightning/fabric/plugins/precision/bitsandbytes.py, _Linear4bit.quantize, Lightning 2.1-2.4): quant_state.dtype
    is fp16, so each 4-bit matmul dequantizes to fp16 and then casts to the bf16 compute dtype."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown qlora backend {backend!r}; the harness runs {', '.join(BACKENDS)}")
    cls = _linear4bit_class()
    quant_dtype = torch.float16 if lightning(backend) else None
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
                                          dynamic_code, quant_dtype=quant_dtype))
                done += 1
    if lightning(backend):
        head = model.lm_head
        model.lm_head = cls(head.in_features, head.out_features, compute_dtype, double_quant, device, dynamic_code,
                            quant_dtype=quant_dtype)
        done += 1
    model.is_loaded_in_4bit = True  # what from_pretrained(quantization_config=...) sets; PEFT reads it
    return done
