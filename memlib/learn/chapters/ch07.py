"""The setup that notebook 07_time_and_cost and its deep dive share:
constants and helpers, defined once.

    from memlib.learn.chapters.ch07 import BATCH_SEQS, GPU, PRE_GPUS, PRE_MODEL

07 · How long, and how much, to train? · 训练要多久、花多少钱
"""


# The question's inputs. Llama-2-7B is the 7B: its pretraining was exactly 2.0T tokens at 4k context
# with a 4M-token global batch (Touvron et al. 2023, Table 1). The 70B is Llama-3.1-70B.
PRE_MODEL, PRE_TOKENS, PRE_SEQ, BATCH_SEQS = "llama-2-7b", 2e12, 4096, 1024  # 1,024 x 4,096 = 4M tokens
GPU, PRE_GPUS = "h100-80gb", 256
RECOMPUTES = ("none", "selective", "full")


def pct(x):
    return f"{x:+.1%}"


__all__ = ['BATCH_SEQS', 'GPU', 'PRE_GPUS', 'PRE_MODEL', 'PRE_SEQ', 'PRE_TOKENS', 'RECOMPUTES', 'pct']
