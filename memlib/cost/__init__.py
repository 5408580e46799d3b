"""Time and cost: step time from FLOPs, bandwidths and overlap; training FLOPs, GPU-hours,
Chinchilla-optimal sizes and published runs."""

from memlib.cost.checkpointing import (
    CHECKPOINT_BYTES_PER_PARAM, async_interval_s, checkpoint_size_bytes, checkpoint_waste, checkpoint_write_s, job_mtbf_s,
    young_interval_s,
)
from memlib.cost.compute_budget import (
    CHINCHILLA_TOKENS_PER_PARAM, PRECISIONS, TrainingRun, chinchilla_optimal, chinchilla_tokens, gpu_hours,
    mfu_from_throughput, peak_flops, reproduce_published, training_flops, training_run, training_run_from_step,
)
from memlib.cost.serving_cost import cost_per_million_tokens

__all__ = [
    "CHECKPOINT_BYTES_PER_PARAM", "async_interval_s", "checkpoint_size_bytes", "checkpoint_waste", "checkpoint_write_s", "job_mtbf_s",
    "young_interval_s",
    "TrainingRun", "chinchilla_optimal", "chinchilla_tokens", "gpu_hours", "mfu_from_throughput", "peak_flops",
    "reproduce_published", "training_flops", "training_run", "training_run_from_step", "cost_per_million_tokens",
]
