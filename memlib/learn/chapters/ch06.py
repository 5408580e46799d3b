"""The setup that notebook 06_long_context and its deep dive share:
constants and helpers, defined once.

    from memlib.learn.chapters.ch06 import FSDP, GPU, LONG, MODEL

06 · What changes when you train at 128k tokens? · 128k 长上下文训练，显存怎么变？
"""


MODEL, GPU, N_GPU = "llama-3.1-8b", "h100-80gb", 8   # one 8 x H100 node
SHORT, LONG = 8192, 131072                          # Llama 3's pre-training length and its long-context stage
FSDP = dict(zero_stage="FULL_SHARD")                # FSDP2 with bf16 compute (torchtitan's default)
# FlashAttention's SRAM: "M around 100KB" (Dao et al. 2022, arXiv:2205.14135, Sec. 3.2), in bf16 elements
SRAM_ELEMENTS = 100_000 // 2


def term(e, name):
    """The bytes of one named term of an estimate (est.terms)."""
    return next(t.nbytes for t in e.terms if t.name == name)


__all__ = ['FSDP', 'GPU', 'LONG', 'MODEL', 'N_GPU', 'SHORT', 'SRAM_ELEMENTS', 'term']
