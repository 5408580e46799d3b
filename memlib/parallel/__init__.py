"""Parallel layouts: ZeRO's per-GPU model states, plans over data/tensor/pipeline/expert
parallelism, and the fewest GPUs for a MoE."""
