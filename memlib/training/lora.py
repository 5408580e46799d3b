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


def linear_shape(model: Model, target: str) -> tuple[int, int]:
    """(in_features, out_features) of one projection in a decoder layer."""
    return _shapes(model)[target]


@lru_cache(maxsize=256)
def _shapes(model: Model) -> dict[str, tuple[int, int]]:
    h, I = model.hidden_size, model.intermediate_size
    return {
        "q_proj": (h, model.q_size), "k_proj": (h, model.kv_size), "v_proj": (h, model.kv_size),
        "o_proj": (model.q_size, h), "gate_proj": (h, I), "up_proj": (h, I), "down_proj": (I, h),
    }


def resolve_targets(model: Model, targets) -> tuple[str, ...]:
    if targets is None:
        return DEFAULT_TARGETS
    if isinstance(targets, str):
        targets = TARGET_GROUPS.get(targets, (targets,))
    if not isinstance(targets, (list, tuple, set, frozenset)) or not all(isinstance(t, str) for t in targets):
        raise ValueError(f"lora_targets must be projection names (a list of strings) or a group name "
                         f"({', '.join(TARGET_GROUPS)}), got {targets!r}")
    out = []
    for t in targets:
        if t not in LORA_TARGETS:
            raise ValueError(f"unknown LoRA target {t!r}; accepted: {', '.join(LORA_TARGETS)} "
                             f"or a group: {', '.join(TARGET_GROUPS)}")
        if model.mlp != "gated" and t in ("gate_proj", "up_proj", "down_proj"):
            raise ValueError(f"{model.name} has no {t} (its MLP is {model.mlp!r})")
        if t not in out:
            out.append(t)
    if not out:
        raise ValueError("lora_targets is empty; name at least one projection")
    return tuple(out)


def lora_params(model: Model, rank: int, targets) -> int:
    """Adapter parameters: r x (in + out) per adapted matrix per layer (Hu et al. 2021, LoRA, Sec. 4.1)."""
    rank = positive_int("lora_rank", rank)
    total = 0
    for t in resolve_targets(model, targets):
        fan_in, fan_out = linear_shape(model, t)
        if rank > min(fan_in, fan_out):
            raise ValueError(f"lora_rank {rank} exceeds the smaller side of {t} ({fan_in}x{fan_out}); "
                             f"a rank above {min(fan_in, fan_out)} is not low-rank")
        total += rank * (fan_in + fan_out)
    return total * model.num_layers


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
