"""Recipe presets (memlib.RECIPES), TrainingSetup as the public description of a run, and Megatron's layout.
Expected values come from the frameworks' own sources, quoted here, or from the keyword calls that existed before."""

from __future__ import annotations

import re
import subprocess
import sys
from fractions import Fraction

import pytest

import memlib
from memlib.training.options import DEFAULTS, check_setup
from memlib.training.step import estimate


# NVIDIA/Megatron-LM@50b073cc docs/source/api-guide/dist_optimizer.md, "theoretical number of bytes per parameter":
# | float16 param, float16 grads | 20 | 4 + 16/d |  | float16 param, fp32 grads | 18 | 6 + 12/d |
# | fp32 param, fp32 grads | 16 | 8 + 8/d |
@pytest.mark.parametrize("grads,plain,whole,sharded", [("fp16-grads", 20, 4, 16), ("fp32-grads", 18, 6, 12),
                                                       ("fp32", 16, 8, 8)])
def test_megatron_bytes_per_param_is_megatrons_table(grads, plain, whole, sharded):
    assert memlib.megatron_bytes_per_param(grads) == plain
    for d in (1, 2, 8, 64):
        assert memlib.megatron_bytes_per_param(grads, distributed_optimizer=True, dp=d) == whole + Fraction(sharded, d)


def test_megatron_bytes_per_param_rejects_bad_input():
    with pytest.raises(ValueError):
        memlib.megatron_bytes_per_param("bf16")
    with pytest.raises(ValueError):
        memlib.megatron_bytes_per_param(dp=0)


@pytest.mark.parametrize("dp", [1, 4, 8])
def test_megatron_layout_model_states(dp):
    """theoretical_memory_usage.py: 18 bytes/param, or 6 + 12/dp with --use-distributed-optimizer."""
    model = memlib.get_model("llama-2-7b")
    for zero_stage, per_param in ((0, Fraction(18)), (1, 6 + Fraction(12, dp))):
        est = memlib.estimate_training(model, layout="megatron", zero_stage=zero_stage, dp=dp)
        c = est.counts
        states = c["param_bytes"] + c["grad_bytes"] + c["optimizer_bytes"]
        assert abs(Fraction(states, model.num_params) - per_param) < Fraction(1, 10**6)


def test_megatron_layout_refuses_what_it_does_not_model():
    with pytest.raises(ValueError, match="layout='megatron'"):
        memlib.estimate_training("llama-2-7b", layout="megatron", finetune="lora")
    with pytest.raises(ValueError, match="layout='megatron'"):
        memlib.estimate_training("llama-2-7b", layout="megatron", zero_stage=3, dp=8)


def test_recipes_listed_with_pinned_sources():
    assert {"hf-trainer", "torchtune", "litgpt", "torchtitan", "megatron", "deepspeed"} <= set(memlib.RECIPES)
    for r in memlib.RECIPES.values():
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}:\S+", r.source), r.source
        assert set(r.applied("qlora")) <= set(DEFAULTS)


def test_torchtune_preset_is_its_config():
    """pytorch/torchtune@2943c61 recipes/configs/llama3_1/8B_lora_single_device.yaml: `dtype: bf16`,
    `optimizer: torch.optim.AdamW, fused: True`, `enable_activation_checkpointing: True`, `lora_dropout: 0.0`."""
    s = memlib.estimate_training("llama-2-7b", recipe="torchtune", finetune="lora").setup
    assert (s.precision, s.optimizer_impl, s.recompute, s.lora_dropout, s.adapter_dtype) == (
        "bf16", "fused", "full", 0.0, "bf16")


def test_litgpt_preset_is_its_config():
    """Lightning-AI/litgpt@56ac240 config_hub/finetune/llama-2-7b/lora.yaml: `precision: bf16-true`,
    `lora_dropout: 0.05`."""
    s = memlib.estimate_training("llama-2-7b", recipe="litgpt", finetune="lora").setup
    assert (s.precision, s.lora_dropout, s.adapter_dtype) == ("bf16", 0.05, "bf16")


def test_explicit_option_overrides_the_preset_and_explain_names_it():
    est = memlib.estimate_training("llama-2-7b", recipe="torchtune", finetune="lora", recompute="none")
    assert est.setup.recompute == "none"
    assert "recompute" not in dict(est.setup.recipe_set)
    text = est.explain()
    assert "recipe **torchtune**" in text and "optimizer_impl='fused'" in text


def test_hf_trainer_preset_is_memlibs_defaults():
    model = memlib.get_model("llama-2-7b")
    for kw in ({}, {"finetune": "lora"}, {"finetune": "qlora"}):
        assert (memlib.estimate_training(model, recipe="hf-trainer", **kw).peak_bytes
                == memlib.estimate_training(model, **kw).peak_bytes)


def test_unknown_recipe_is_a_value_error():
    with pytest.raises(ValueError, match="unknown recipe"):
        memlib.estimate_training("llama-2-7b", recipe="axolotl")


KEYWORD_CALLS = [dict(), dict(seq_len=4096, micro_batch=2, recompute="full"), dict(finetune="lora", lora_rank=8),
                 dict(zero_stage=3, dp=8), dict(zero_stage="FULL_SHARD", dp=4), dict(tp=2, pp=2, grad_accum=4),
                 dict(finetune="qlora", loss="chunked"), dict(zero_stage=2, dp=8, offload="optimizer")]


@pytest.mark.parametrize("kw", KEYWORD_CALLS)
def test_keyword_calls_unchanged(kw):
    """The keyword call gives what the checked setup gave before (check_setup with every option, then estimate),
    and the same setup passed as an object gives it too."""
    model = memlib.get_model("llama-2-7b")
    before = estimate(check_setup(model, **{**DEFAULTS, **kw}))
    est = memlib.estimate_training(model, **kw)
    assert est.peak_bytes == before.peak_bytes and est.breakdown == before.breakdown
    setup = memlib.TrainingSetup.create(model, **kw)
    assert memlib.estimate_training(setup).peak_bytes == before.peak_bytes
    assert memlib.estimate_training(model, setup).peak_bytes == before.peak_bytes
    assert memlib.estimate_training(model, setup=setup).peak_bytes == before.peak_bytes


def test_positional_call_unchanged():
    model = memlib.get_model("llama-2-7b")
    assert (memlib.estimate_training(model, 1024, 2, "bf16").peak_bytes
            == memlib.estimate_training(model, seq_len=1024, micro_batch=2, precision="bf16").peak_bytes)


def test_setup_replace_is_a_what_if():
    model = memlib.get_model("llama-2-7b")
    setup = memlib.TrainingSetup.create(model, recipe="megatron", dp=8)
    smaller = setup.replace(dp=4)
    assert smaller.dp == 4 and smaller.recipe == "megatron" and smaller.layout == "megatron"
    assert (memlib.estimate_training(smaller).peak_bytes
            == memlib.estimate_training(model, recipe="megatron", dp=4).peak_bytes)
    assert memlib.estimate_training(setup, dp=4).peak_bytes == memlib.estimate_training(smaller).peak_bytes
    assert setup.replace(model=memlib.get_model("llama-2-13b")).model.name == "llama-2-13b"
    with pytest.raises(ValueError, match="unknown option"):
        setup.replace(batch=4)
    with pytest.raises(ValueError, match="carries its options"):
        memlib.estimate_training(setup, recipe="deepspeed")


def test_cli_recipe():
    out = subprocess.run([sys.executable, "-m", "memlib", "estimate", "llama-2-7b", "--recipe", "torchtune",
                          "--finetune", "lora", "--explain"], capture_output=True, text=True, check=True).stdout
    assert "recipe **torchtune**" in out
