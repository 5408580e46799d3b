"""Pieces of reading a config.json the way transformers reads it (used by memlib.models.catalog).

quantization_options: the whole quantization_config, with transformers' defaults
    (memlib.models.hf_defaults: BitsAndBytesConfig, GPTQConfig, AwqConfig).
moe_layer_set: an empty set of MoE layers means a dense model, as in transformers
    (DeepSeek-V3 with num_hidden_layers <= first_k_dense_replace; Llama 4 with moe_layers [] or
    interleave_moe_layer_step > num_hidden_layers; Qwen3-MoE with every layer in mlp_only_layers).
MAX_LAYERS: the largest layer count memlib accepts.
"""

from __future__ import annotations

from memlib.models.hf_defaults import BNB_DEFAULTS, GROUP_SIZE_DEFAULT

# The deepest published decoder has 126 layers (Llama 3.1 405B). Layers are a pattern
# (memlib.models.layer_pattern), so no work grows with their count: at 10**9 layers every entry
# point answers in milliseconds (benchmarks/bench_layers.py). The bound only refuses counts that
# mean nothing (10**12 layers of even a 64-wide model is past 2**53 bytes of weights and states).
MAX_LAYERS = 1_000_000_000

MOE_FIELD_NAMES = ("num_experts", "num_experts_per_tok", "moe_intermediate_size", "num_shared_experts",
                   "shared_expert_intermediate_size", "moe_layers", "router_bias", "expert_bias")


def _check_layer_count(n: int) -> None:
    if n > MAX_LAYERS:
        raise ValueError(f"num_layers {n:,} is more than memlib models (at most {MAX_LAYERS:,}; the deepest "
                         "published decoder, Llama 3.1 405B, has 126)")


def _check_quantization_options(m) -> None:
    if m.quantization_group_size and m.quantization not in ("int8-gptq", "int4-gptq", "int4-awq"):
        raise ValueError(f"quantization_group_size is the group of int8-gptq / int4-gptq / int4-awq weights; quantization "
                         f"is {m.quantization!r}")
    if not m.quantization_double_quant and m.quantization != "nf4":
        raise ValueError(f"quantization_double_quant=False describes nf4 weights; quantization is {m.quantization!r}")


def quantization_options(c) -> tuple[str, dict]:
    """(Model.quantization, the Model fields of its options) from c's quantization_config."""
    q = c.d.get("quantization_config")
    if q is None:
        return "", {}
    if not isinstance(q, dict):
        raise ValueError(f"config.json field 'quantization_config' must be an object, got {type(q).__name__}")
    qc = type(c)(q, "config.json quantization_config")
    method = qc.str("quant_method", "")
    if method in ("gptq", "awq"):
        bits = qc.int("bits", 4)
        if bits != 4 and not (method == "gptq" and bits == 8):
            raise ValueError(f"{method} with {bits} bits is not modelled; memlib counts 4-bit {method}"
                             + (" and 8-bit gptq" if method == "gptq" else ""))
        g = q.get("group_size", GROUP_SIZE_DEFAULT)
        if g == -1:
            raise ValueError(f"{method} group_size -1 (one group per column) is not modelled; memlib counts "
                             "grouped weights (group_size >= 1)")
        g = qc.int("group_size", GROUP_SIZE_DEFAULT)
        return f"int{bits}-{method}", {"quantization_group_size": g}
    if method == "bitsandbytes":
        four = qc.bool("load_in_4bit", BNB_DEFAULTS["load_in_4bit"])
        eight = qc.bool("load_in_8bit", BNB_DEFAULTS["load_in_8bit"])
        if four and eight:  # transformers' BitsAndBytesConfig raises the same
            raise ValueError("config.json quantization_config: load_in_4bit and load_in_8bit are both true, but "
                             "only one can be used at the same time (transformers' BitsAndBytesConfig refuses it)")
        if four:
            qtype = qc.str("bnb_4bit_quant_type", BNB_DEFAULTS["bnb_4bit_quant_type"])
            if qtype != "nf4":
                raise ValueError(f"bitsandbytes 4-bit {qtype!r} is not modelled; memlib counts nf4")
            dq = qc.bool("bnb_4bit_use_double_quant", BNB_DEFAULTS["bnb_4bit_use_double_quant"])
            return "nf4", {"quantization_double_quant": dq}
        if eight:
            return "int8", {}
        raise ValueError("bitsandbytes quantization_config with neither load_in_4bit nor load_in_8bit")
    if method == "fp8":
        block = q.get("weight_block_size")
        if block != [128, 128] and block != (128, 128):
            raise ValueError(f"fp8 with weight_block_size {c_show(block)} is not modelled; memlib counts "
                             "128x128 block-wise fp8 (DeepSeek-V3's layout)")
        return "fp8-block", {}
    if method == "mxfp4":
        return "mxfp4", {}
    raise ValueError(f"quantization_config quant_method {c_show(method)} is not modelled; supported: gptq, awq, "
                     "bitsandbytes, fp8, mxfp4 (remove quantization_config to count the architecture in 16-bit)")


def c_show(v) -> str:
    from memlib._checks import show
    return show(v)


def moe_layer_set(layers, n: int, what: str) -> tuple:
    """Validated MoE layer indices; () is a dense model (the caller drops the MoE fields)."""
    layers = tuple(layers)
    bad = [i for i in layers if not 0 <= i < n]
    if bad:
        raise ValueError(f"config.json {what} names layer {bad[0]}, outside 0..{n - 1} ({n} layers)")
    if len(set(layers)) != len(layers):
        raise ValueError(f"config.json {what} repeats a layer index")
    return tuple(sorted(layers))


def dense_if_no_moe(kw: dict) -> dict:
    """A MoE reader's fields with no MoE layer left: the dense model transformers builds (every
    layer's MLP the dense one, no router and no experts)."""
    if kw.get("moe_layers"):
        return kw
    return {k: v for k, v in kw.items() if k not in MOE_FIELD_NAMES}


def checkpoint_group_size(model, weights: str, group_size) -> int:
    """group_size None: the checkpoint's own (quantization_config group_size) when `weights` is the format
    it is released in, else GPTQConfig/AwqConfig's default 128; a given group size is validated."""
    from memlib._checks import positive_int
    if group_size is None:
        own = model.quantization_group_size if weights == model.quantization else 0
        return own or GROUP_SIZE_DEFAULT
    return positive_int("group_size", group_size)


# --- integers too long to be a size -----------------------------------------------------------------
_LONG_DIGITS = 100  # no config.json size has anywhere near 100 digits (Python refuses to parse > 4300)


class _LongInt:
    def __init__(self, text: str):
        self.digits = len(text.lstrip("-"))


def parse_int(text: str):
    """json's parse_int: an integer of over 100 digits becomes a marker instead of Python's "Exceeds the
    limit (4300 digits)" error, so refuse_long_ints can name the field holding it."""
    return _LongInt(text) if len(text) > _LONG_DIGITS else int(text)


def refuse_long_ints(data, path: str, where: str = ""):
    """A ValueError naming the file and the field of the first over-long integer; `data` unchanged otherwise."""
    stack = [(where, data)]
    while stack:
        key, v = stack.pop()
        if isinstance(v, _LongInt):
            raise ValueError(f"{path!r}: field {key or '(top level)'} holds an integer of {v.digits:,} digits, "
                             "far beyond any model size")
        if isinstance(v, dict):
            stack += [(f"{key}.{k}" if key else str(k), x) for k, x in v.items()]
        elif isinstance(v, list):
            stack += [(f"{key}[{i}]", x) for i, x in enumerate(v)]
    return data
