"""memlib: how much GPU memory it takes to train, fine-tune or serve an LLM.

    import memlib
    est = memlib.estimate_training("llama-7b", seq_len=2048, precision="bf16-mixed")
    est.peak_bytes, est.phase, est.breakdown
    print(est.explain())

The calculation core is in folders by what it computes (models/, hardware/, training/,
serving/, parallel/, cost/); memlib/learn/ holds what exists for the notebooks. Older flat
import paths (memlib.grading, memlib.inference, memlib.zero, ...) still work: memlib/_compat.py.
"""

__version__ = "0.1.0"

import importlib as _importlib

from memlib import _compat
from memlib.cost.timing import StepTime, flops_per_token, step_time
from memlib.hardware.fit import Verdict, fits
from memlib.hardware.gpus import GPU, get_gpu, list_gpus
from memlib.models import Model, get_model, list_models
from memlib.parallel import zero
from memlib.serving.inference import InferenceEstimate, estimate_inference, max_batch, max_context
from memlib.parallel.megatron import megatron_bytes_per_param
from memlib.training import RECIPES, Estimate, TrainingSetup, estimate_training
from memlib.training.rlhf import RLHFEstimate, estimate_rlhf, min_rlhf_gpus
from memlib.units import GB, GiB, fmt_bytes, gb, gib

_compat.install()


def __getattr__(name: str):
    # memlib.viz, memlib.playground, memlib.grading, ...: the old flat names, imported on first use
    if name in _compat.MOVED:
        return _importlib.import_module(f"memlib.{name}")
    raise AttributeError(f"module 'memlib' has no attribute {name!r}")


__all__ = [
    "Model", "get_model", "list_models", "GPU", "get_gpu", "list_gpus",
    "Estimate", "estimate_training", "TrainingSetup", "RECIPES", "megatron_bytes_per_param", "InferenceEstimate", "estimate_inference", "max_batch", "max_context",
    "RLHFEstimate", "estimate_rlhf", "min_rlhf_gpus",
    "Verdict", "fits", "StepTime", "step_time", "flops_per_token", "zero",
    "GB", "GiB", "fmt_bytes", "gb", "gib",
]
