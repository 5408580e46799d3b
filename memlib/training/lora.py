"""LoRA and QLoRA: adapter sizes and the bytes of a 4-bit NF4 base model."""

from __future__ import annotations

from functools import lru_cache

from memlib._checks import flag, positive_int
from memlib.models import Model

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
TARGET_GROUPS = {
    "all-linear": LORA_TARGETS,  # the QLoRA paper's recipe (Dettmers et al. 2023, Sec. 4)
    "attention": ("q_proj", "k_proj", "v_proj", "o_proj"),
    "qv": ("q_proj", "v_proj"),  # Hu et al. 2021 (LoRA), Sec. 7.1; peft's default for LLaMA
}
DEFAULT_TARGETS = ("q_proj", "v_proj")
# Phi-3 / Phi-4 (transformers' Phi3Attention, Phi3MLP): one qkv_proj (h -> q + 2 kv) and one gate_up_proj (h -> 2I).
# peft wraps each fused nn.Linear in one adapter whose B is as wide as the fused output (tuners/lora/layer.py Linear
# over the base layer's in/out features), so q, k, v (or gate, up) cannot be adapted apart. peft has no default
# target_modules for phi3 (utils/constants.py TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING has no "phi3" key,
# huggingface/peft@5d602fd): its LoraConfig then raises, so memlib asks for them too.
# The output head as a LoRA target: peft's target_modules=[..., "lm_head"] (never part of "all-linear": peft's
# _maybe_include_all_linear_layers excludes get_output_embeddings()), LitGPT's lora_head=True (litgpt/lora.py GPT:
# self.lm_head = LoRALinear(n_embd, padded_vocab_size, r=lora_r if lora_head else 0)). One adapter, r (h + V).
HEAD_TARGET = "lm_head"


def head_lora_params(model: Model, rank: int) -> int:
    """Adapter parameters on the output head: r x (h + V) once (A: r x h, B: V x r; Hu et al. 2021, Sec. 4.1)."""
    rank = positive_int("lora_rank", rank)
    if rank > min(model.hidden_size, model.vocab_size):
        raise ValueError(f"lora_rank {rank} exceeds the smaller side of lm_head ({model.hidden_size}x"
                         f"{model.vocab_size})")
    return rank * (model.hidden_size + model.vocab_size)


def linear_shape(model: Model, target: str) -> tuple[int, int]:
    """(in_features, out_features) of one projection in a decoder layer."""
    return _shapes(model)[target]


@lru_cache(maxsize=256)
def _shapes(model: Model) -> dict[str, tuple[int, int]]:
    h, I = model.hidden_size, model.intermediate_size
    return {
        "q_proj": (h, model.q_size), "k_proj": (h, model.kv_size), "v_proj": (h, model.kv_size),
        "o_proj": (model.q_size, h), "gate_proj": (h, I), "up_proj": (h, I), "down_proj": (I, h),
        "qkv_proj": (h, model.q_size + 2 * model.kv_size), "gate_up_proj": (h, 2 * I),
    }


def fused(model: Model) -> bool:
    """Phi-3's layout: one qkv_proj and/or one gate_up_proj (transformers' Phi3Attention, Phi3MLP)."""
    return bool(model.fused_qkv or model.fused_gate_up)


def target_names(model: Model) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]]:
    """The projections a LoRA adapter can wrap in this model's decoder layer, and the group names over them."""
    attn = ("qkv_proj",) if model.fused_qkv else ("q_proj", "k_proj", "v_proj")
    mlp = ("gate_up_proj",) if model.fused_gate_up else ("gate_proj", "up_proj")
    names = attn + ("o_proj",) + mlp + ("down_proj",)
    if not fused(model):
        return LORA_TARGETS, TARGET_GROUPS
    return names, {"all-linear": names, "attention": attn + ("o_proj",)}


def resolve_targets(model: Model, targets) -> tuple[str, ...]:
    """The decoder projections to adapt (names, or a group name), checked against the model. "lm_head" is not a
    decoder projection: split_head_target takes it out first (the head adapter is the lora_head option)."""
    is_fused = fused(model)
    names, groups = target_names(model)
    if targets is None:
        if is_fused:
            raise ValueError(f"{model.name} has fused projections and peft has no default target_modules for it: "
                             f"name the LoRA targets, e.g. lora_targets='all-linear' or "
                             f"{list(groups['attention'])!r} (accepted: {', '.join(names)})")
        return DEFAULT_TARGETS
    if isinstance(targets, str):
        targets = groups.get(targets, (targets,))
    if not isinstance(targets, (list, tuple, set, frozenset)) or not all(isinstance(t, str) for t in targets):
        raise ValueError(f"lora_targets must be projection names (a list of strings) or a group name "
                         f"({', '.join(groups)}), got {targets!r}")
    out = []
    for t in targets:
        if t not in names:
            hint = ""
            if is_fused and t in LORA_TARGETS + ("qkv_proj", "gate_up_proj"):
                hint = (f" ({model.name}'s fused qkv_proj / gate_up_proj take one adapter each, so q/k/v or gate/up "
                        "cannot be adapted apart)")
            elif t in ("qkv_proj", "gate_up_proj"):
                hint = f" ({model.name} has this projection unfused)"
            raise ValueError(f"unknown LoRA target {t!r} for {model.name}{hint}; accepted: {', '.join(names)} "
                             f"or a group: {', '.join(groups)}" + ("" if t != HEAD_TARGET else
                             "; the output head is adapted with lora_head=True"))
        if model.mlp != "gated" and t in ("gate_proj", "up_proj", "down_proj"):
            raise ValueError(f"{model.name} has no {t} (its MLP is {model.mlp!r})")
        if t not in out:
            out.append(t)
    if not out:
        raise ValueError("lora_targets is empty; name at least one projection")
    return tuple(out)


def split_head_target(targets) -> tuple[object, bool]:
    """peft's spelling of a head adapter, target_modules=[..., "lm_head"]: (the targets without it, whether it was
    there). A group name or None is returned as is."""
    if isinstance(targets, (list, tuple, set, frozenset)) and HEAD_TARGET in targets:
        rest = [t for t in targets if t != HEAD_TARGET]
        if not rest:
            raise ValueError("lora_targets=['lm_head'] adapts the head alone; memlib models adapters on the decoder "
                             "projections with the head optionally added: name at least one projection too")
        return rest, True
    return targets, False


def lora_params(model: Model, rank: int, targets, head: bool = False) -> int:
    """Adapter parameters: r x (in + out) per adapted matrix per layer (Hu et al. 2021, LoRA, Sec. 4.1), a fused
    projection's out being its fused width (Phi-3's qkv_proj: q + 2 kv; gate_up_proj: 2I); with `head`, r (h + V)
    more for the output head's adapter (head_lora_params)."""
    rank = positive_int("lora_rank", rank)
    head = flag("head", head)
    targets, in_list = split_head_target(targets)
    total = 0
    for t in resolve_targets(model, targets):
        fan_in, fan_out = linear_shape(model, t)
        if rank > min(fan_in, fan_out):
            raise ValueError(f"lora_rank {rank} exceeds the smaller side of {t} ({fan_in}x{fan_out}); "
                             f"a rank above {min(fan_in, fan_out)} is not low-rank")
        total += rank * (fan_in + fan_out)
    return total * model.num_layers + (head_lora_params(model, rank) if (head or in_list) else 0)


def nf4_bytes(numel: int, block: int = 64, block2: int = 256, double_quant: bool = True,
              backend: str = "bitsandbytes") -> int:
    """Bytes of one NF4 weight (Dettmers et al. 2023, QLoRA, Sec. 3): 4-bit codes, two per byte, and one absmax
    per 64-weight block. bitsandbytes (functional.quantize_4bit, 0.49.2): the absmax in fp32, or with double
    quantization (compress_statistics=True) in 8 bits plus one fp32 constant per 256 absmax blocks:
    4 + 8/64 + 32/(64*256) = 4.127 bits. torchao (NF4Tensor.from_tensor, always double-quantized): int8 scalers
    plus one 16-bit quantization factor per 256 scalers."""
    double_quant = flag("double_quant", double_quant)
    blocks = -(-numel // block)
    codes = -(-numel // 2)
    if backend == "torchao":
        return codes + blocks + 2 * -(-blocks // block2)
    if not double_quant:  # (any bitsandbytes release)
        return codes + 4 * blocks
    return codes + blocks + 4 * -(-blocks // block2)


NF4_BITS_PER_PARAM = 4 + 8 / 64 + 32 / (64 * 256)
NF4_BITS_PER_PARAM_NO_DQ = 4 + 32 / 64  # fp32 absmax per 64-block: 4.5 bits
