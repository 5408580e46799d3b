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
    kw.update(optimizer_impl=inputs.get("optimizer_impl", "foreach"), grad_accum=inputs.get("grad_accum", 1),
              loss=inputs.get("loss", "full"), activation_offload=inputs.get("activation_offload", False))
    if inputs["finetune"] in ("lora", "qlora"):
        lora = inputs["lora"]
        kw.update(lora_rank=lora["r"], lora_targets=lora["targets"], lora_dropout=lora.get("dropout", 0.0),
                  adapter_dtype=inputs.get("adapter_dtype", "fp32"), base_dtype=inputs.get("base_dtype") or "auto")
    if inputs["finetune"] == "qlora":
        q = inputs.get("qlora", {})
        kw.update(qlora_backend=q.get("backend", "bitsandbytes"), double_quant=q.get("double_quant", True))
    if model.is_moe:  # transformers adds the load-balancing loss only with output_router_logits (config default off)
        kw.update(router_aux_loss=bool(inputs["config"].get("output_router_logits", False)))
    if inputs.get("cp"):  # context parallelism: FSDP and ring attention over the same cp ranks (dp = 1)
        kw.update(zero_stage="FULL_SHARD", dp=inputs["fsdp"]["world_size"] // inputs["cp"]["degree"],
                  cp=inputs["cp"]["degree"], cp_rotate=inputs["cp"]["rotate"])
        if inputs["precision"].endswith("mixed"):
            kw.update(fsdp_mixed_precision=inputs["fsdp"].get("mp_policy", True))
    elif inputs.get("fsdp"):
        kw.update(zero_stage="FULL_SHARD", dp=inputs["fsdp"]["world_size"])
        if inputs["precision"].endswith("mixed"):
            kw.update(fsdp_mixed_precision=inputs["fsdp"].get("mp_policy", True))
    return estimate_training(model, **kw)
