"""The setup that notebook 03_when_the_model_does_not_fit and its deep dive share:
constants and helpers, defined once.

    from memlib.learn.chapters.ch03 import A100, GiB, M13, M7

03 · When the model does not fit · 显存装不下整个模型怎么办
"""

import memlib
from memlib.units import gib


def GiB(nbytes, d=1):
    """'12.6 GiB' (2**30 bytes, what torch and nvidia-smi show)."""
    return f"{gib(nbytes):,.{d}f} GiB"


def yes(verdict):
    return "✅ fits" if verdict.fits else "❌ does not fit"


def largest(est, part):
    """The largest bytes of one part over the moments of a step (est.moments), not only at the peak."""
    return max(mo.parts.get(part, 0) for mo in est.moments)


M7, M13, M70 = "llama-2-7b", "llama-2-13b", "llama-2-70b"  # LLaMA-1 7B/13B shapes; 4k context
A100, RTX4090, RTX3080 = memlib.get_gpu("a100-80gb"), memlib.get_gpu("rtx-4090"), memlib.get_gpu("rtx-3080-12gb")


__all__ = ['A100', 'GiB', 'M13', 'M7', 'M70', 'RTX3080', 'RTX4090', 'largest', 'yes']
