"""The setup that notebook 08_rlhf_memory and its deep dive share:
constants and helpers, defined once.

    from memlib.learn.chapters.ch08 import GPU, MODEL, N

08 · PPO on a 7B: how many A100s? · RLHF 显存：PPO 训练 7B 要几张 A100
"""


MODEL, GPU, N = "llama-2-7b", "a100-80gb", 8   # the classic 7B; one 8-GPU node


__all__ = ['GPU', 'MODEL', 'N']
