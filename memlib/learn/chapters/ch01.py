"""The setup that notebook 01_65b_on_4x_v100 and its deep dive share:
constants and helpers, defined once.

    from memlib.learn.chapters.ch01 import ACCUM, GPU, MB, MODEL

01 · Vicuna-65B on 4× V100? · 4×V100 训练 Vicuna-65B
"""


# LMSYS released Vicuna 7B, 13B and 33B, no 65B: the question means a Vicuna-style SFT of LLaMA-65B
MODEL, GPU, N = "llama-65b", "v100-32gb", 4
SEQ, MB = 2048, 1     # Vicuna's context length; the seed's micro-batch
PREC = "fp16-mixed"   # V100 tensor cores have no bf16: fp16 with loss scaling
# The QLoRA paper's recipe (Dettmers et al. 2023, App. B; artidoro/qlora qlora.py): LoRA r=64 on every
# linear layer, dropout 0.05 for 65B, gradient checkpointing, paged 32-bit AdamW (one fused kernel, no
# foreach copy), batch 16 = 1 x 16 accumulation; without --bf16 the adapters stay fp32 (PEFT's default).
QLORA = dict(lora_rank=64, lora_targets="all-linear", lora_dropout=0.05, optimizer_impl="fused")
ACCUM = 16


__all__ = ['ACCUM', 'GPU', 'MB', 'MODEL', 'N', 'PREC', 'QLORA', 'SEQ']
