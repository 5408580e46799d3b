"""The setup that notebook 05_moe_memory and its deep dive share:
constants and helpers, defined once.

    from memlib.learn.chapters.ch05 import CONTEXTS, CTX, FT_SEQ, GPU

05 · DeepSeek-V3: serve and fine-tune a 671B MoE · DeepSeek-V3 推理与微调要多少显存
"""


MODEL, GPU, N = "deepseek-v3", "h200", 8   # the question: DeepSeek-V3 on one 8-GPU H200 server
CTX = 8192                                 # an 8k-token chat; vLLM's default 8,192-token prefill chunks
FT_SEQ = 4096                              # fine-tuning sequences of 4k tokens, micro-batch 1
GQA_PEER = "llama-3.1-405b"                # a dense GQA model of similar size
CONTEXTS = (8192, 32768, 131072)


def TB(n_bytes):
    return f"{n_bytes / 1e12:,.2f} TB"


__all__ = ['CONTEXTS', 'CTX', 'FT_SEQ', 'GPU', 'GQA_PEER', 'MODEL', 'N', 'TB']
