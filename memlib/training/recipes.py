"""Recipe presets: the options each training framework uses by default, each with its source at a commit.

Data only: the merge with the user's options is options.resolve (this module imports no other part of
memlib.training but the option table, so options -> recipes is one way).

Users know their framework, not thirty options. `estimate_training(model, recipe="torchtune", ...)` starts
from the preset; any option given explicitly overrides it; `est.explain()` names the preset and what it set.
A preset's `lora` options apply only under finetune='lora'/'qlora', its `qlora` options only under 'qlora'
(an option that does not apply to a setup is an error in memlib, so a preset never sets one there).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from types import MappingProxyType

from memlib.training.option_table import OPTIONS


@dataclass(frozen=True)
class Recipe:
    name: str
    framework: str
    source: str  # repository@commit:path of the defaults read
    options: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))  # always
    lora: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))  # finetune 'lora' or 'qlora'
    qlora: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))  # finetune 'qlora'
    note: str = ""  # what the preset does not (yet) express
    # options that apply only when the run steps with torch.optim.AdamW (optimizer 'adamw' outside the DeepSpeed and
    # Megatron layouts, which bring their own fused Adam): a framework's choice of torch's implementation
    torch_adamw: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))

    def applied(self, finetune: str) -> dict:
        """The options this preset sets for a run with `finetune`."""
        out = dict(self.options)
        if finetune in ("lora", "qlora"):
            out.update(self.lora)
        if finetune == "qlora":
            out.update(self.qlora)
        return out


def _r(name, framework, source, options=None, lora=None, qlora=None, note="", torch_adamw=None) -> Recipe:
    mp = MappingProxyType
    return Recipe(name, framework, source, mp(options or {}), mp(lora or {}), mp(qlora or {}), note,
                  mp(torch_adamw or {}))


# HF Trainer's optimizer: TrainingArguments.optim defaults to "adamw_torch_fused" when torch >= 2.8, else
# "adamw_torch" (foreach on CUDA). huggingface/transformers@v5.15.0:src/transformers/training_args.py, the
# `# --- Optimizer ---` block: `default_optim = "adamw_torch"; if is_torch_greater_or_equal_than_2_8: default_optim =
# "adamw_torch_fused"` (read at that tag; introduced by huggingface/transformers#37358, merged 2025-07-10). The
# validate extra pins transformers>=5.24,<6 with torch >= 2.8, so the Trainer steps with fused AdamW.


RECIPES = MappingProxyType({r.name: r for r in (
    _r("hf-trainer", "Hugging Face Trainer + PEFT",
       "huggingface/peft@6b2556e6ff971c85b2b3d919ba7e67d41bf2c813:src/peft/tuners/lora/config.py",
       options={"keep_outputs": False}, torch_adamw={"optimizer_impl": "fused"},
       note="memlib's defaults are this recipe (but TrainingArguments.optim's adamw_torch_fused on torch >= 2.8: "
            "transformers@v5.15.0:src/transformers/training_args.py; memlib's own default is foreach, torch's), "
            "fp32 adapters (autocast_adapter_dtype=True), "
            "lora_dropout 0.0, bitsandbytes NF4 with double quantization) but for the loop: Trainer.compute_loss "
            "returns the loss alone (huggingface/transformers@2cda12cbf6e476183e68ec476551fa7e3717394a:"
            "src/transformers/trainer.py), so the model's output and its logits are freed before the backward"),
    _r("torchtune", "torchtune",
       "pytorch/torchtune@2943c61e7e4b73b1823e1518a32a24390446099f:recipes/configs/llama3_1/8B_lora_single_device.yaml",
       options={"precision": "bf16", "optimizer_impl": "fused", "recompute": "full"},
       lora={"adapter_dtype": "bf16", "lora_dropout": 0.0}, qlora={"qlora_backend": "torchao"},
       note="dtype: bf16 (the whole model, adapters too), torch.optim.AdamW fused: True, "
            "enable_activation_checkpointing: True; its LinearCrossEntropyLoss (chunked output) is estimated as "
            "the full loss (an overestimate)"),
    _r("litgpt", "LitGPT",
       "Lightning-AI/litgpt@56ac240732139626f6ab0e8191c15d396fda32c8:config_hub/finetune/llama-2-7b/lora.yaml",
       options={"precision": "bf16", "loss": "chunked-head"},
       lora={"adapter_dtype": "bf16", "lora_dropout": 0.05}, qlora={"qlora_backend": "lightning-bitsandbytes"},
       note="precision: bf16-true, lora_dropout: 0.05, the head in 128-token chunks (chunked_cross_entropy), "
            "quantize: bnb.nf4 through Lightning's BitsandbytesPrecision"),
    _r("torchtitan", "torchtitan",
       "pytorch/torchtitan@6404b932421f5ce382e7dac5ad381b2c17b1373c:torchtitan/config/job_config.py",
       options={"precision": "bf16-mixed", "zero_stage": "FULL_SHARD", "optimizer_impl": "fused",
                "recompute": "selective"},
       note="FSDP2 with MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32), Optimizer.implementation "
            "'fused'; ActivationCheckpoint.mode 'selective' (memlib models the op-level policy its llama3 configs "
            "choose, selective_ac_option='op'; the default option '2' checkpoints every second layer)"),
    _r("megatron", "Megatron-LM / Megatron-Core",
       "NVIDIA/Megatron-LM@50b073cc788271efb5d4fbc92d987aeed2384f4f:docs/source/api-guide/dist_optimizer.md",
       options={"precision": "bf16-mixed", "layout": "megatron", "zero_stage": 1},
       note="--bf16 with fp32 main grads and --use-distributed-optimizer: 6 + 12/dp bytes per parameter; "
            "Transformer Engine's fused layers (Korthikanti's terms), vocabulary-parallel cross entropy, the fp32 "
            "main-grad buffer alive throughout; the interleaved schedule with vpp=; Mixtral-style MoE layers get "
            "Megatron-Core's MoE block (other MoE layers use transformers' ledger); --cross-entropy-loss-fusion "
            "is off by default (megatron_ce_fusion=)"),
    _r("megatron-bridge", "Megatron-Bridge (NeMo)",
       "NVIDIA-NeMo/Megatron-Bridge@067f987df03b8355b03192d88d70f1709fedf51a:src/megatron/bridge/models/gpt_provider.py",
       options={"precision": "bf16-mixed", "layout": "megatron", "zero_stage": 1, "megatron_ce_fusion": "native"},
       note="Megatron-Core as Bridge's recipes configure it: the distributed optimizer with fp32 gradient "
            "reduction (recipes/common.py: use_distributed_optimizer=True, grad_reduce_in_fp32=True), and "
            "GPTModelProvider's cross_entropy_loss_fusion=True with Megatron-Core's 'native' implementation; its "
            "DeepSeek and Kimi bridges choose 'te' (megatron_ce_fusion='te'); hidden dropout 0, as its Llama and "
            "Qwen bridges set"),
    _r("megatron-deepspeed", "Megatron-DeepSpeed",
       "microsoft/Megatron-DeepSpeed@f4157bea69f3df8c6cb66f2ebcda66ba03d1288e:megatron/arguments.py",
       options={"precision": "bf16-mixed", "layout": "megatron-deepspeed", "zero_stage": 1, "hidden_dropout": 0.1,
                "attention_dropout": 0.1},
       note="Megatron-LM's legacy model (--hidden-dropout and --attention-dropout 0.1 by default) and its "
            "vocabulary-parallel cross entropy (the max subtracted out of place) under DeepSpeed's ZeRO (stage 1 "
            "here; --zero-stage sets it, 0 being bf16's BF16_Optimizer): 16-bit params and grads, fp32 master + "
            "Adam sharded, DeepSpeed's buckets; "
            "LLaMA-style layers op by op (Python RMSNorm with an fp32 upcast), GPT layers as Megatron's"),
    _r("deepspeed", "DeepSpeed",
       "deepspeedai/DeepSpeed@cbf3d6616244b003b6c55e506f246b0e0cf00540:deepspeed/runtime/zero/config.py",
       options={"precision": "bf16-mixed", "zero_stage": 2, "layout": "deepspeed"},
       note="ZeRO stage 2 (16-bit params and grads, fp32 master + Adam sharded; DeepSpeed's layout on one GPU too), "
            "contiguous_gradients with a "
            "reduce_bucket_size of 5e8 elements, overlap_comm off below stage 3 (terms.deepspeed_bucket_bytes); "
            "ZeRO-3's prefetch and max_live_parameters are modelled as two gathered layers"),
)})


def _check_presets(recipes) -> None:
    """Every preset's option is an option of the table, with a value its kind accepts (checked at import)."""
    for r in recipes.values():
        for part in (r.options, r.lora, r.qlora, r.torch_adamw):
            for name, value in part.items():
                if name not in OPTIONS:
                    raise ValueError(f"recipe {r.name!r} sets {name!r}, which is not an option of estimate_training")
                OPTIONS[name].check(value)


_check_presets(RECIPES)
