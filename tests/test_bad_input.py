"""Bad input: a ValueError whose message says what was wrong and what is accepted."""

import json

import pytest

import memlib
from memlib import Model, estimate_training, get_gpu, get_model
from memlib.training.lora import lora_params


def est(**kw):
    base = dict(model="llama-7b", seq_len=512)
    base.update(kw)
    return estimate_training(base.pop("model"), **base)


# --- catalogs -------------------------------------------------------------------------------
@pytest.mark.parametrize("name, suggestion", [
    ("llama-7", "llama-7b"),
    ("lama-65b", "llama-65b"),
    ("mistral-7", "mistral-7b"),
    ("qwen2-0.5", "qwen2-0.5b"),
])
def test_unknown_model_suggests(name, suggestion):
    with pytest.raises(ValueError, match=r"(?i)unknown model") as e:
        get_model(name)
    assert suggestion in str(e.value)
    with pytest.raises(ValueError, match=suggestion):
        est(model=name)


def test_unknown_model_lists_known():
    with pytest.raises(ValueError, match="Known:.*llama-7b") as e:
        get_model("totally-not-a-model")
    assert "gpt-3-175b" in str(e.value)


@pytest.mark.parametrize("name, suggestion", [("v100-33gb", "v100-32gb"), ("a100-90gb", "a100-80gb"),
                                              ("h100-8gb", "h100-80gb")])
def test_unknown_gpu_suggests(name, suggestion):
    with pytest.raises(ValueError, match=r"(?i)unknown gpu") as e:
        get_gpu(name)
    assert suggestion in str(e.value)
    assert "Accepted" in str(e.value) or "accepted" in str(e.value)


@pytest.mark.parametrize("bad", [32, None, 1.5])
def test_gpu_name_not_string(bad):
    with pytest.raises(ValueError, match="string"):
        get_gpu(bad)


def test_estimate_model_wrong_type():
    with pytest.raises(ValueError, match="model"):
        estimate_training(7, seq_len=512)


# --- counts ---------------------------------------------------------------------------------
@pytest.mark.parametrize("field", ["seq_len", "micro_batch"])
@pytest.mark.parametrize("value", [0, -1, -2048])
def test_non_positive_counts(field, value):
    with pytest.raises(ValueError, match=rf"{field} must be >= 1, got {value}"):
        est(**{field: value})


@pytest.mark.parametrize("field", ["seq_len", "micro_batch", "dp", "tp", "pp", "zero_stage", "grad_accum"])
@pytest.mark.parametrize("value", [2.5, "8", True, None, [8]])
def test_non_integer_counts(field, value):
    if field == "zero_stage" and isinstance(value, str):  # strings are FSDP strategy names
        with pytest.raises(ValueError, match=r"unknown zero_stage '8'; accepted: 0, 1, 2, 3 .*FULL_SHARD"):
            est(zero_stage=value)
        return
    with pytest.raises(ValueError, match=rf"{field} must be an integer"):
        est(**{field: value})


def test_integral_float_message_suggests_int():
    with pytest.raises(ValueError, match=r"seq_len must be an integer count.*pass 2048"):
        est(seq_len=2048.0)


@pytest.mark.parametrize("value", [2.5, "8", True, 0, -4])
def test_bad_lora_rank(value):
    with pytest.raises(ValueError, match="lora_rank"):
        est(finetune="lora", lora_rank=value)


@pytest.mark.parametrize("field", ["dp", "tp", "pp"])
def test_zero_parallel_degree(field):
    with pytest.raises(ValueError, match=rf"{field} must be >= 1, got 0"):
        est(**{field: 0})


# --- choices: the message lists the accepted values ----------------------------------------
CHOICES = {
    "precision": ("fp32", "bf16", "fp16", "bf16-mixed", "fp16-mixed"),
    "optimizer": ("adamw", "adamw-8bit", "sgd", "sgd-momentum", "adafactor"),
    "finetune": ("full", "lora", "qlora"),
    "recompute": ("none", "selective", "full"),
    "attention": ("sdpa", "eager"),
}


@pytest.mark.parametrize("field, bad", [
    ("precision", "fp8"), ("precision", "BF16-MIXED"), ("precision", "mixed"), ("precision", 16),
    ("optimizer", "adam"), ("optimizer", "lion"), ("optimizer", None),
    ("finetune", "qlora4"), ("finetune", "freeze"),
    ("recompute", "partial"), ("recompute", True),
    ("attention", "flash"), ("attention", "xformers"),
])
def test_unknown_choice_lists_accepted(field, bad):
    with pytest.raises(ValueError, match=rf"unknown {field} {bad!r}") as e:
        est(**{field: bad})
    msg = str(e.value)
    assert "accepted" in msg
    for ok in CHOICES[field]:
        assert repr(ok) in msg, ok


# --- LoRA -----------------------------------------------------------------------------------
def test_lora_rank_larger_than_layer():
    # llama-7b q_proj is 4096 x 4096: a rank above 4096 is not low-rank
    with pytest.raises(ValueError, match=r"lora_rank 5000 exceeds .*q_proj.*4096x4096") as e:
        est(finetune="lora", lora_rank=5000, lora_targets=["q_proj"])
    assert "4096" in str(e.value)
    with pytest.raises(ValueError, match=r"lora_rank 5000 exceeds"):
        lora_params(get_model("llama-7b"), 5000, ["q_proj"])


def test_lora_rank_larger_than_gqa_kv_projection():
    # mistral-7b k_proj is 4096 -> 1024: rank 2048 exceeds its smaller side
    with pytest.raises(ValueError, match=r"lora_rank 2048 exceeds .*k_proj.*1024"):
        est(model="mistral-7b", finetune="qlora", precision="bf16", lora_rank=2048, lora_targets=["k_proj"])


@pytest.mark.parametrize("targets", [["q"], ["qproj"], ["q_proj", "lm_heads"], "everything", ["c_attn"]])
def test_unknown_lora_target(targets):
    with pytest.raises(ValueError, match=r"unknown LoRA target") as e:
        est(finetune="lora", lora_targets=targets)
    msg = str(e.value)
    for ok in ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "all-linear"):
        assert ok in msg


def test_empty_lora_targets():
    with pytest.raises(ValueError, match="lora_targets is empty"):
        est(finetune="lora", lora_targets=[])


def test_qlora_fp32_rejected():
    with pytest.raises(ValueError, match=r"qlora.*'bf16'"):
        est(finetune="qlora", precision="fp32")


def test_lora_on_gpt_rejected():
    with pytest.raises(ValueError, match="LLaMA-style"):
        est(model="gpt-3-175b", finetune="lora")


# --- parallelism ----------------------------------------------------------------------------
@pytest.mark.parametrize("stage", [4, 5, 99])
def test_zero_stage_too_large(stage):
    with pytest.raises(ValueError, match=rf"zero_stage must be 0, 1, 2 or 3 .*got {stage}"):
        est(zero_stage=stage)


def test_negative_zero_stage():
    with pytest.raises(ValueError, match=r"zero_stage must be >= 0, got -1"):
        est(zero_stage=-1)


def test_invalid_parallel_splits():
    # LLaMA-7B: 32 heads, 32 layers; Llama-2-70B: 64 heads but 8 key/value heads
    with pytest.raises(ValueError, match=r"tp=3 must divide the 32 attention heads"):
        est(tp=3)
    with pytest.raises(ValueError, match=r"tp=16 must divide .* 8 key/value heads"):
        memlib.estimate_training("llama-2-70b", tp=16)
    with pytest.raises(ValueError, match=r"pp=33 stages but llama-7b has only 32 layers"):
        est(pp=33)
    with pytest.raises(ValueError, match=r"pipeline engine supports ZeRO stage 0 or 1"):
        est(pp=2, dp=4, zero_stage=3)
    with pytest.raises(ValueError, match=r"offloading parameters .* needs zero_stage=3"):
        est(dp=4, zero_stage=2, offload="optimizer+params")
    with pytest.raises(ValueError, match=r"integer zero_stage >= 1"):
        est(dp=4, zero_stage="FULL_SHARD", offload="optimizer")
    with pytest.raises(ValueError, match=r"sequence_parallel needs tp > 1"):
        est(sequence_parallel=True)


def test_unknown_offload():
    with pytest.raises(ValueError, match=r"offload 'cpu'.*accepted: 'none'"):
        est(offload="cpu")


def test_seq_len_beyond_learned_positions():
    # GPT-3 has a learned position table of 2048 entries (Brown et al. 2020, Table 2.1 context)
    with pytest.raises(ValueError, match=r"seq_len 4096 exceeds .*2048"):
        est(model="gpt-3-175b", seq_len=4096)


# --- config.json ----------------------------------------------------------------------------
GOOD = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008, "num_attention_heads": 32,
        "num_hidden_layers": 32, "vocab_size": 32000}


def test_config_missing_fields_named(tmp_path):
    cfg = {k: v for k, v in GOOD.items() if k not in ("num_hidden_layers", "intermediate_size")}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="missing") as e:
        Model.from_hf_config(tmp_path / "config.json")
    assert "num_hidden_layers" in str(e.value) and "intermediate_size" in str(e.value)
    assert "hidden_size" not in str(e.value).replace("num_hidden_layers", "")


def test_config_bad_activation():
    with pytest.raises(ValueError, match=r"hidden_act 'gelu'.*silu"):
        Model.from_hf_config({**GOOD, "hidden_act": "gelu"})


def test_config_unsupported_type_lists_supported():
    with pytest.raises(ValueError, match=r"unsupported model_type 'gpt2'.*llama.*mistral.*qwen2"):
        Model.from_hf_config({**GOOD, "model_type": "gpt2"})


@pytest.mark.parametrize("bad", [42, None, ["config.json"]])
def test_config_wrong_type(bad):
    with pytest.raises(ValueError, match="dict or a path"):
        Model.from_hf_config(bad)


def test_config_malformed_json(tmp_path):
    p = tmp_path / "config.json"
    p.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        Model.from_hf_config(str(p))


@pytest.mark.parametrize("field, value", [("hidden_size", 0), ("num_hidden_layers", -1), ("vocab_size", 2.5),
                                          ("num_attention_heads", "32")])
def test_config_bad_values(field, value):
    with pytest.raises(ValueError, match=field.replace("num_hidden_layers", "num_layers")
                       .replace("num_attention_heads", "num_heads")):
        Model.from_hf_config({**GOOD, field: value})


def test_config_heads_not_dividing_hidden():
    with pytest.raises(ValueError, match=r"not divisible by num_heads"):
        Model.from_hf_config({**GOOD, "num_attention_heads": 30})


def test_config_kv_heads_not_dividing_heads():
    with pytest.raises(ValueError, match=r"multiple of num_kv_heads"):
        Model.from_hf_config({**GOOD, "model_type": "mistral", "num_key_value_heads": 5})


# --- the shared checks themselves (memlib/_checks.py) ----------------------------------------
from memlib import _checks  # noqa: E402


def test_positive_int_refuses_beyond_2_to_53_with_a_short_message():
    with pytest.raises(ValueError, match=r"seq_len must be at most 2\*\*53") as e:
        _checks.positive_int("seq_len", 10**400)
    assert len(str(e.value)) < 120  # the 401 digits are abbreviated
    assert _checks.positive_int("seq_len", 2**53) == 2**53


def test_positive_int_takes_numpy_integers_as_python_ints():
    np = pytest.importorskip("numpy")
    v = _checks.positive_int("batch", np.int64(8))
    assert v == 8 and type(v) is int


@pytest.mark.parametrize("value", [0, -1.0, float("inf"), float("nan"), True, "1", None, 10**400])
def test_positive_float_refuses_non_finite_and_non_positive(value):
    with pytest.raises(ValueError, match="rate"):
        _checks.positive_float("rate", value)


@pytest.mark.parametrize("value", [0, 1.5, -0.1, float("nan"), True, "0.4"])
def test_fraction_refuses_outside_0_1(value):
    with pytest.raises(ValueError, match=r"mfu is a fraction in \(0, 1\]"):
        _checks.fraction("mfu", value)


@pytest.mark.parametrize("value", ["false", 1, None])
def test_flag_refuses_truthy_non_bools(value):
    with pytest.raises(ValueError, match="must be True or False"):
        _checks.flag("allow_offload", value)


def test_choices_refuses_a_bare_string_and_unknown_values():
    with pytest.raises(ValueError, match=r"got the string 'bf16'.*one value: \('bf16',\)"):
        _checks.choices("precisions", "bf16", ["bf16", "fp32"])
    with pytest.raises(ValueError, match=r"unknown value 'fp8' in precisions"):
        _checks.choices("precisions", ["bf16", "fp8"], ["bf16", "fp32"])
    with pytest.raises(ValueError, match="non-empty"):
        _checks.choices("precisions", [], ["bf16"])
    assert _checks.choices("precisions", ["bf16", "bf16", "fp32"], ["bf16", "fp32"]) == ("bf16", "fp32")


def test_show_shortens_long_values():
    assert len(_checks.show("x" * 10**6)) < 80
    assert len(_checks.show(10**400)) < 60
