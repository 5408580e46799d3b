"""The setup that notebook 04_serving_capacity and its deep dive share:
constants and helpers, defined once.

    from memlib.learn.chapters.ch04 import A100, CTX, FORMATS, H100

04 · How many 8k chats can Llama-3-70B serve? · Llama-3-70B 能同时服务多少个 8k 对话
"""


MODEL = "llama-3-70b"
CTX = 8192  # the question's "8k-token chat": prompt + reply may grow to 8,192 tokens
A100, H100 = "a100-80gb", "h100-80gb"
FORMATS = {"bf16": "bf16", "fp8": "fp8-block", "int8": "int8", "int4 (AWQ)": "int4-awq"}


__all__ = ['A100', 'CTX', 'FORMATS', 'H100', 'MODEL']
