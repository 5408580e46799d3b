"""Estimates for the cases the measurement harness records (validation/results*.json).

A recorded case names its model by a Hugging Face config dict and its training by the
harness's keys; this turns one into the matching estimate_training call, so the tests and
the accuracy benchmark compare like with like through one piece of code.
"""

from __future__ import annotations

from memlib.models import Model
from memlib.training import Estimate, estimate_training


def estimate_case(inputs: dict) -> Estimate:
    """estimate_training for a harness case (its "inputs" dict); FSDP2 cases carry "fsdp"."""
    model = Model.from_hf_config(inputs["config"], name=inputs["name"])
    kw = dict(seq_len=inputs["seq_len"], micro_batch=inputs["micro_batch"], precision=inputs["precision"],
              optimizer=inputs.get("optimizer", "adamw"), finetune=inputs["finetune"],
              recompute=inputs["recompute"], attention=inputs["attention"])
    if inputs["finetune"] == "lora":
        kw.update(lora_rank=inputs["lora"]["r"], lora_targets=inputs["lora"]["targets"])
    if inputs.get("fsdp"):
        kw.update(zero_stage="FULL_SHARD", dp=inputs["fsdp"]["world_size"])
    return estimate_training(model, **kw)
