"""Long-context prefill: its FLOPs and its time at a stated MFU, next to the KV cache it leaves behind."""

from __future__ import annotations

from memlib._checks import fraction, positive_int
from memlib.hardware.gpus import peak_flops
from memlib.serving.capacity import request_flops


def prefill_flops(model, prompt_tokens: int) -> float:
    """Forward FLOPs of a prefill of T tokens: 2N·T + 4·L·H·Q·T(T + 1)/2 (memlib.serving.request_flops with a
    one-token reply: Kaplan et al. 2020's 2N per token plus the causal attention of each position)."""
    return request_flops(model, positive_int("prompt_tokens", prompt_tokens), 1)


def prefill_seconds(model, gpu, prompt_tokens: int, mfu: float = 0.5, gpus: int = 1) -> float:
    """Time to prefill T tokens: prefill_flops / (gpus x dense bf16 peak x mfu). A compute-bound estimate at the
    stated MFU (model FLOPs over peak), split evenly over `gpus` with no communication counted; the time to first
    token adds queueing and the first decode step."""
    mfu = fraction("mfu", mfu, what="the fraction of the dense peak the prefill reaches")
    return prefill_flops(model, prompt_tokens) / (positive_int("gpus", gpus) * peak_flops(gpu) * mfu)
