"""Issue 11: every example of the issue as a named regression test.

Each test is named after the example it pins; each failed on the code the issue was filed
against.
Expected values are derived in the test (a hand count or a capacity argument), never pasted
from the code's own output.
"""

from __future__ import annotations

import json
import math
import time

import pytest

import memlib
from memlib import Model, estimate_training
from memlib.cli import main
from memlib.parallel.plan import max_micro_batch, min_gpus, plan, to_deepspeed_config
from memlib.cost.timing import step_time


def run_cli(argv, capsys):
    """main() in-process: (exit code, stdout, stderr); argparse's SystemExit is an exit code too."""
    try:
        rc = main(argv)
    except SystemExit as e:
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


def assert_one_line_exit_2(argv, capsys, *words):
    rc, out, err = run_cli(argv, capsys)
    assert rc == 2, (rc, out, err)
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    for w in words:
        assert w in err, (w, err)
    assert "No layout fits" not in out
    return err



# ---- 1. invalid options of plan / min_gpus / `memlib fit` -----------------------------------------
def test_fit_seq_len_0_exits_2_one_line(capsys):
    assert_one_line_exit_2(["fit", "llama-7b", "--gpu", "a100-80gb", "--count", "8", "--seq-len", "0"], capsys,
                           "seq_len", ">= 1", "0")


def test_fit_micro_batch_0_min_gpus_exits_2_one_line(capsys):
    assert_one_line_exit_2(["fit", "llama-7b", "--gpu", "a100-80gb", "--count", "8", "--micro-batch", "0",
                            "--min-gpus"], capsys, "micro_batch", ">= 1")


def test_plan_optimizer_adam_is_value_error():
    with pytest.raises(ValueError, match=r"unknown optimizer 'adam'; accepted: .*'adamw'"):
        plan("llama-7b", "a100-80gb", 8, optimizer="adam")


def test_plan_grad_accum_0_is_value_error():
    with pytest.raises(ValueError, match=r"grad_accum must be >= 1, got 0"):
        plan("llama-7b", "a100-80gb", 8, grad_accum=0)


def test_plan_lora_rank_0_is_value_error():
    with pytest.raises(ValueError, match=r"lora_rank must be >= 1, got 0"):
        plan("llama-7b", "a100-80gb", 8, task="lora", lora_rank=0)


def test_plan_precisions_string_is_value_error():
    # a string would be iterated character by character: 'b', 'f', '1', ...
    with pytest.raises(ValueError, match=r"precisions must be a list or tuple .*got the string 'bf16-mixed'"):
        plan("llama-7b", "a100-80gb", 8, precisions="bf16-mixed")


def test_min_gpus_invalid_option_is_value_error():
    with pytest.raises(ValueError, match=r"micro_batch must be >= 1, got 0"):
        min_gpus("llama-7b", "a100-80gb", micro_batch=0)


# ---- 2. --host-ram-gib 0 --------------------------------------------------------------------------
def test_fit_llama_65b_4_v100_host_ram_gib_0_is_a_limit(capsys):
    """0 GiB of host RAM leaves no room for offload. Without offload 65B cannot fit 4 x V100 32GB:
    even fully sharded the model states are 16 bytes/param / 4 = 4 x 65.3e9 = 261 GB per GPU, more
    than 32 GiB (34.4 GB). So no layout fits, and offload layouts fail for host RAM."""
    psi = memlib.get_model("llama-65b").num_params
    assert 16 * psi / 4 > 32 * 2**30
    rc, out, err = run_cli(["fit", "llama-65b", "--gpu", "v100", "--count", "4", "--host-ram-gib", "0", "--json"],
                           capsys)
    assert rc == 0, err
    data = json.loads(out)
    assert data["feasible"] == []
    assert any("host RAM" in row["reason"] for row in data["infeasible"])
    rc, out, _ = run_cli(["fit", "llama-65b", "--gpu", "v100", "--count", "4", "--host-ram-gib", "0"], capsys)
    assert rc == 0 and "No layout fits." in out


# ---- 3, 4, 6, 8, 9: Model, config.json, GPT attention (other helpers' files) ----------------------
LLAMA_65B = dict(hidden_size=8192, num_layers=80, num_heads=64, intermediate_size=22016, vocab_size=32000)


def llama_65b_params() -> int:
    """Hand count (HF LlamaForCausalLM): embedding + head V*h each, per layer 4h^2 (q, k, v, o)
    + 3hI (gate, up, down) + 2h (two RMSNorms), final norm h."""
    h, L, I, V = 8192, 80, 22016, 32000
    return 2 * V * h + L * (4 * h * h + 3 * h * I + 2 * h) + h


def test_model_numpy_int32_sizes_count_exactly():
    np = pytest.importorskip("numpy")
    m = Model("np32", **{k: np.int32(v) for k, v in LLAMA_65B.items()})
    assert type(m.num_params) is int and m.num_params == llama_65b_params() == 65_285_660_672


def test_model_numpy_int64_sizes_json_round_trip():
    np = pytest.importorskip("numpy")
    m = Model("np64", **{k: np.int64(v) for k, v in LLAMA_65B.items()})
    d = estimate_training(m, seq_len=512).to_dict()
    assert json.loads(json.dumps(d)) == d


def test_model_numpy_int64_sizes_fits():
    """fits() takes any integral peak (mine: memlib/hardware/fit.py)."""
    np = pytest.importorskip("numpy")
    m = Model("np64", **{k: np.int64(v) for k, v in LLAMA_65B.items()})
    v = memlib.fits(estimate_training(m, seq_len=512), "a100-80gb")
    assert type(v.margin_bytes) is int and not v.fits  # 65B params x 16 bytes >> 80 GiB


GOOD = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008, "num_attention_heads": 32,
        "num_hidden_layers": 32, "vocab_size": 32000}


def test_config_reward_model_architecture_has_no_lm_head():
    try:
        m = Model.from_hf_config({**GOOD, "architectures": ["LlamaForSequenceClassification"]})
    except ValueError:
        return  # refusing is a clear answer too
    assert "lm_head" not in [t.name for t in m.tensors()]


def test_config_base_model_architecture_has_no_lm_head():
    try:
        m = Model.from_hf_config({**GOOD, "architectures": ["LlamaModel"]})
    except ValueError:
        return
    assert "lm_head" not in [t.name for t in m.tensors()]


def test_config_moe_fields_under_mistral_are_not_counted_dense():
    dense = Model.from_hf_config({**GOOD, "model_type": "mistral"})
    try:
        moe = Model.from_hf_config({**GOOD, "model_type": "mistral", "num_local_experts": 8,
                                    "num_experts_per_tok": 2})
    except ValueError:
        return  # "until then refuse"
    # 8 experts each hold a gate, up and down projection: 7 more MLPs per layer than dense
    assert moe.num_params >= dense.num_params + 7 * 32 * 3 * 4096 * 11008


def test_gpt_attention_eager_differs_from_sdpa():
    # eager keeps the b*a*s*s softmax output (and more) per layer that sdpa never materialises:
    # GPT-3 175B, 96 layers x 96 heads x 2048^2 x 2 bytes = 77 GB at micro-batch 1, alive at the
    # end of the forward (the peak itself is the optimizer step's, where activations are gone)
    def forward_activations(est):
        return max(m.parts.get("activations", 0) for m in est.moments if m.name == "forward")

    sdpa = estimate_training("gpt-3-175b", seq_len=2048, attention="sdpa")
    eager = estimate_training("gpt-3-175b", seq_len=2048, attention="eager")
    assert forward_activations(eager) - forward_activations(sdpa) >= 96 * 96 * 2048 * 2048 * 2


def test_serve_llama_2_7b_context_100000_prints_the_window_note(capsys):
    """The note that 100,000 tokens exceed Llama-2's 4,096-token window shows in the text output,
    not only with --json/--explain."""
    rc, out, err = run_cli(["serve", "llama-2-7b", "--context-len", "100000"], capsys)
    if rc == 2:  # refusing a context beyond the window (inference.py's call) is clear too
        assert len(err.strip().splitlines()) == 1 and "4,096" in err.replace("4096", "4,096")
        return
    assert rc == 0
    note = [line for line in out.splitlines() if line.startswith(("note:", "warning:"))]
    assert note and any("4,096" in line and "exceeds" in line for line in note), out
    assert out.index(note[0]) < out.index("Verdict:")


def test_mistral_sliding_window_is_documented():
    est = memlib.estimate_inference("mistral-7b", context_len=32768)
    per_token = est.kv_bytes_per_token
    capped = est.kv_cache_bytes == per_token * 4096  # the cache holds only the 4,096-token window
    noted = any("sliding" in n.lower() for n in est.notes)
    assert capped or noted


def test_config_string_boolean_false_reads_false():
    try:
        m = Model.from_hf_config({**GOOD, "tie_word_embeddings": "false"})
    except ValueError:
        return
    # untied: the head is its own V x h matrix (LLaMA-7B: 6,738,415,616 parameters)
    assert m.num_params == Model.from_hf_config({**GOOD, "tie_word_embeddings": False}).num_params


def test_config_list_valued_boolean_is_value_error():
    with pytest.raises(ValueError, match="tie_word_embeddings"):
        Model.from_hf_config({**GOOD, "tie_word_embeddings": [False]})


def test_config_quantization_config_is_not_silently_ignored():
    cfg = {**GOOD, "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128}}
    try:
        m = Model.from_hf_config(cfg)
    except ValueError:
        return
    said = [n for n in memlib.estimate_inference(m).notes if "quantiz" in n.lower()]
    assert said or getattr(m, "quantization", None)


# ---- 9. accepted silently ----------------------------------------------------------------------------
def test_plan_gpus_per_node_0_is_value_error():
    with pytest.raises(ValueError, match=r"gpus_per_node must be >= 1, got 0"):
        plan("llama-7b", "a100-80gb", 8, gpus_per_node=0)


def test_lora_rank_minus_5_with_full_finetune_is_value_error():
    with pytest.raises(ValueError, match="lora_rank"):
        estimate_training("llama-7b", lora_rank=-5)


def test_lora_targets_garbage_with_full_finetune_is_value_error():
    with pytest.raises(ValueError, match="lora_targets|LoRA target"):
        estimate_training("llama-7b", lora_targets="garbage")


def test_offload_device_nvme_without_offload_is_value_error():
    with pytest.raises(ValueError, match="offload"):
        estimate_training("llama-7b", offload_device="nvme")


def test_zero_infinity_peak_never_rises_with_dp():
    kw = dict(zero_stage=3, offload="optimizer+params", recompute="full", precision="bf16-mixed")
    two = estimate_training("llama-7b", dp=2, **kw).peak_bytes
    four = estimate_training("llama-7b", dp=4, **kw).peak_bytes
    assert four <= two  # the same layout on more GPUs holds a smaller share of everything sharded


def test_zero_offload_stage_2_peak_never_rises_with_dp():
    kw = dict(zero_stage=2, offload="optimizer", precision="fp32")
    assert estimate_training("llama-7b", dp=16, **kw).peak_bytes <= estimate_training("llama-7b", dp=8,
                                                                                      **kw).peak_bytes


def test_min_gpus_max_count_0_is_value_error():
    with pytest.raises(ValueError, match=r"max_count must be >= 1, got 0"):
        min_gpus("llama-7b", "a100-80gb", max_count=0)


def test_min_gpus_max_count_bounds_the_search():
    # 7B with AdamW needs 16 x 6.74e9 = 108 GB of model states: more than one 80 GiB GPU
    assert 16 * memlib.get_model("llama-7b").num_params > 80 * 2**30
    assert min_gpus("llama-7b", "a100-80gb", max_count=1) is None


def test_max_micro_batch_limit_0_is_value_error():
    best = plan("llama-7b", "a100-80gb", 8).best
    with pytest.raises(ValueError, match=r"limit must be >= 1, got 0"):
        max_micro_batch(best, "a100-80gb", limit=0)


def test_fit_top_minus_1_exits_2(capsys):
    assert_one_line_exit_2(["fit", "llama-7b", "--gpu", "a100-80gb", "--count", "8", "--top", "-1"], capsys,
                           "--top", ">= 1")


def test_step_time_negative_link_rate_is_value_error():
    est = estimate_training("llama-7b", dp=16, zero_stage=3)
    with pytest.raises(ValueError, match=r"internode_bytes_per_s must be a finite number > 0"):
        step_time(est, "a100-80gb", internode_bytes_per_s=-25e9)


def test_fits_cuda_context_bytes_true_is_value_error():
    est = estimate_training("llama-7b", seq_len=512)
    with pytest.raises(ValueError, match=r"cuda_context_bytes must be an integer, got True"):
        memlib.fits(est, "a100-80gb", cuda_context_bytes=True)


# ---- tracebacks and wrong exception types ----------------------------------------------------------
def test_to_deepspeed_config_of_best_when_nothing_fits():
    r = plan("llama-65b", "v100-32gb", 4, allow_offload=False)  # 261 GB per GPU of states, see above
    assert r.best is None
    with pytest.raises(ValueError, match=r"needs a Plan .*got None.*no layout fits"):
        to_deepspeed_config(r.best)


def test_max_micro_batch_none_is_value_error():
    with pytest.raises(ValueError, match=r"max_micro_batch\(\) needs a Plan"):
        max_micro_batch(None, "a100-80gb")


def test_step_time_catalog_names_is_value_error():
    with pytest.raises(ValueError, match=r"step_time needs a training estimate .*'llama-7b'"):
        step_time("llama-7b", "a100")


def test_step_time_inference_estimate_is_value_error():
    with pytest.raises(ValueError, match=r"InferenceEstimate"):
        step_time(memlib.estimate_inference("llama-7b"), "a100-80gb")


def test_lora_targets_5_is_value_error():
    with pytest.raises(ValueError, match="lora_targets"):
        estimate_training("llama-7b", finetune="lora", lora_targets=5)


def test_config_list_valued_model_type_is_value_error():
    with pytest.raises(ValueError, match="model_type"):
        Model.from_hf_config({**GOOD, "model_type": ["llama"]})


@pytest.mark.parametrize("kw, name", [(dict(peak_tflops=math.inf), "peak_tflops"),
                                      (dict(internode_bytes_per_s=0), "internode_bytes_per_s"),
                                      (dict(cpu_adam_params_per_s=0), "cpu_adam_params_per_s")])
def test_step_time_peak_tflops_inf_internode_0_cpu_adam_0_is_value_error(kw, name):
    # offload, dp beyond one node: every rate is used
    est = estimate_training("llama-7b", dp=16, zero_stage=3, offload="optimizer")
    with pytest.raises(ValueError, match=rf"{name} must be a finite number > 0"):
        step_time(est, "a100-80gb", **kw)


def test_fit_seq_len_400_digits_exits_2_one_line(capsys):
    err = assert_one_line_exit_2(["fit", "llama-7b", "--gpu", "a100-80gb", "--count", "8", "--seq-len",
                                  str(10**400)], capsys, "seq_len", "2**53")
    assert len(err) < 300  # the 401 digits are not echoed


def test_fit_host_ram_gib_inf_exits_2_one_line(capsys):
    assert_one_line_exit_2(["fit", "llama-65b", "--gpu", "v100", "--count", "4", "--host-ram-gib", "inf"], capsys,
                           "--host-ram-gib", "finite")


def test_config_deeply_nested_json_is_value_error(tmp_path):
    (tmp_path / "config.json").write_text("[" * 100_000)
    with pytest.raises(ValueError, match="config.json"):
        Model.from_hf_config(tmp_path)


def test_estimate_zero_stage_superscript_three_names_the_accepted_stages(capsys):
    # '³'.isdigit() is True but int('³') fails: "invalid literal for int() with base 10"
    err = assert_one_line_exit_2(["estimate", "llama-7b", "--zero-stage", "³"], capsys, "zero_stage", "FULL_SHARD")
    assert "invalid literal" not in err


def test_fit_host_ram_gib_nan_names_the_flag(capsys):
    # was "cannot convert float NaN to integer"
    err = assert_one_line_exit_2(["fit", "llama-65b", "--gpu", "v100", "--count", "4", "--host-ram-gib", "nan"],
                                 capsys, "--host-ram-gib")
    assert "cannot convert" not in err


def test_config_codec_error_names_the_file(tmp_path):
    (tmp_path / "config.json").write_bytes(json.dumps(GOOD).encode("utf-16"))
    with pytest.raises(ValueError, match="config.json"):
        Model.from_hf_config(tmp_path)


def test_zero_stage_string_3_is_accepted_or_explained():
    try:
        est = estimate_training("llama-7b", dp=2, zero_stage="3")
    except ValueError as e:
        assert "integer" in str(e) or "int" in str(e).split("accepted")[0]
        return
    assert est.peak_bytes == estimate_training("llama-7b", dp=2, zero_stage=3).peak_bytes


def test_lora_target_bytes_is_named():
    with pytest.raises(ValueError, match=r"b'q_proj'|bytes"):
        estimate_training("llama-7b", finetune="lora", lora_targets=b"q_proj")


# ---- 5. time: mfu and bf16 on a V100 inside plan --------------------------------------------------
@pytest.mark.parametrize("mfu", [0, 5])
def test_plan_mfu_0_or_5_is_value_error(mfu):
    with pytest.raises(ValueError, match=rf"mfu is a fraction .*\(0, 1\], got {mfu}"):
        plan("llama-7b", "a100-80gb", 8, mfu=mfu)


def test_plan_bf16_on_v100_is_value_error_not_zero_tokens_per_s():
    with pytest.raises(ValueError, match=r"v100-32gb has no bf16"):
        plan("llama-7b", "v100-32gb", 8, precisions=("bf16-mixed",))


def test_plan_feasible_layouts_have_a_time():
    r = plan("llama-7b", "a100-80gb", 8)
    assert r.feasible and all(p.time is not None and p.tokens_per_s_per_gpu > 0 for p in r.feasible)


# ---- hang ---------------------------------------------------------------------------------------------
def test_plan_count_10_to_9_does_not_hang():
    """`_divisors` looped to n. A hang guard, not a performance claim: the bound is 30x what it takes."""
    t0 = time.perf_counter()
    r = plan("llama-7b", "a100-80gb", 10**9)
    assert time.perf_counter() - t0 < 30
    assert r.feasible
    assert all(p.settings["dp"] * p.settings["tp"] * p.settings["pp"] == 10**9 for p in r.feasible)


# ---- the CLI with invalid options: one line, exit 2, never "No layout fits." ----------------------------
@pytest.mark.parametrize("extra", [["--optimizer", "adam"], ["--grad-accum", "0"], ["--seq-len", "-1"],
                                   ["--count", "0"]])
def test_fit_invalid_option_exits_2_not_no_layout_fits(capsys, extra):
    argv = ["fit", "llama-7b", "--gpu", "a100-80gb", "--count", "8"] + extra
    assert_one_line_exit_2(argv, capsys)


def test_plan_fp32_without_peak_tflops_is_untimed_not_zero_tokens_per_s():
    """The catalog has no fp32 throughput: fp32 layouts are checked for memory and left untimed
    (to_dict() says None, the CLI says n/a), never ranked at a made-up 0 tokens/s."""
    r = plan("llama-7b", "a100-80gb", 8, precisions=("fp32",))
    assert r.feasible and all(p.time is None for p in r.feasible)
    assert all(row["tokens_per_s_per_gpu"] is None for row in r.to_dict()["feasible"])
    timed = plan("llama-7b", "a100-80gb", 8, precisions=("fp32",), peak_tflops=19.5)  # A100 dense fp32
    assert all(p.time is not None and p.tokens_per_s_per_gpu > 0 for p in timed.feasible)
