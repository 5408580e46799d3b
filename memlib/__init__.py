"""memlib: how much GPU memory it takes to train, fine-tune or serve an LLM.

    import memlib
    est = memlib.estimate_training("llama-7b", seq_len=2048, precision="bf16-mixed")
    est.peak_bytes, est.phase, est.breakdown
    print(est.explain())
"""

__version__ = "0.1.0"

from memlib import playground, viz, zero
from memlib.fit import Verdict, fits
from memlib.gpus import GPU, get_gpu, list_gpus
from memlib.inference import InferenceEstimate, estimate_inference, max_batch, max_context
from memlib.models import Model, get_model, list_models
from memlib.timing import StepTime, flops_per_token, step_time
from memlib.training import Estimate, estimate_training
from memlib.units import GB, GiB, fmt_bytes, gb, gib

__all__ = [
    "Model", "get_model", "list_models", "GPU", "get_gpu", "list_gpus",
    "Estimate", "estimate_training", "InferenceEstimate", "estimate_inference", "max_batch", "max_context",
    "Verdict", "fits", "StepTime", "step_time", "flops_per_token", "zero", "viz", "playground",
    "GB", "GiB", "fmt_bytes", "gb", "gib",
]
