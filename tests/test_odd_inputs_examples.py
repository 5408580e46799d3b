"""Odd inputs users reported (a flag given at its default over a recipe, "false" as a string, a list for a name, a
read-only home, ...), one test each, with the behaviour expected derived by hand (the figures written out
below), not pasted from memlib's output. The classes behind them are tested in tests/test_option_table.py (one
table, one validator per kind), tests/test_option_validation.py and tests/test_progress_robustness.py."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
import textwrap

import pytest

import memlib
from memlib.cli import main
from memlib.learn import grading, interview
from memlib.learn.exercises import get_exercise, progress
from memlib.learn.exercises.answers import example
from memlib.learn.exercises.practice import KINDS
from memlib.learn.grading import grade, practice
from memlib.serving import quantization as q
from memlib.serving.capacity import sglang_max_total_tokens
from memlib.serving.engines import llama_cpp_kv_cache

N_7B = 6_738_415_616  # LLaMA-2-7B's parameters (HF LlamaForCausalLM, counted in tests/test_models.py)


@pytest.fixture(autouse=True)
def _memory_only(monkeypatch):
    monkeypatch.setenv("MEMLIB_PROGRESS", "off")
    grading.reset()


def _cli(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return rc, out.getvalue(), err.getvalue()


# ---- recipes vs explicit options ------------------------------------------------------------------------------------
def test_cli_recipe_megatron_with_zero_stage_0_is_zero_0():
    """Megatron's layout in bf16-mixed: 2 B bf16 params + 4 B fp32 main grads + 12 B fp32 master, m and v = 18 B per
    parameter without the distributed optimizer; the preset's ZeRO-1 would give 2 + 4 + 12/8 = 7.5 B on dp=8."""
    rc, out, _ = _cli("estimate", "llama-2-7b", "--recipe", "megatron", "--dp", "8", "--zero-stage", "0", "--json")
    assert rc == 0 and json.loads(out)["zero_stage"] == 0
    e = memlib.estimate_training("llama-2-7b", recipe="megatron", dp=8, zero_stage=0)
    assert e.model_state_bytes == 18 * N_7B
    assert memlib.estimate_training("llama-2-7b", recipe="megatron", dp=8).model_state_bytes * 2 == 15 * N_7B


def test_cli_recipe_torchtune_with_recompute_none_keeps_activations():
    rc, out, _ = _cli("estimate", "llama-2-7b", "--recipe", "torchtune", "--recompute", "none", "--json")
    none = json.loads(out)
    rc2, out2, _ = _cli("estimate", "llama-2-7b", "--recipe", "torchtune", "--json")
    full = json.loads(out2)
    assert rc == rc2 == 0 and none["recompute"] == "none" and full["recompute"] == "full"
    # without recompute every layer keeps its whole ledger, far more than its one 2 B x 2048 x 4096 input
    def forward_activations(**kw):
        e = memlib.estimate_training("llama-2-7b", recipe="torchtune", **kw)
        return max(m.parts.get("activations", 0) for m in e.moments if m.name == "forward")
    assert forward_activations(recompute="none") > forward_activations() + 32 * 2048 * 4096 * 2


def test_hf_trainer_preset_with_the_chunked_loss_drops_keep_outputs():
    """Liger's chunked loss makes no logits, so the preset's keep_outputs=False has nothing to free: the estimate is
    the chunked loss with the preset's other option (fused AdamW)."""
    e = memlib.estimate_training("llama-2-7b", recipe="hf-trainer", loss="chunked")
    assert e.peak_bytes == memlib.estimate_training("llama-2-7b", loss="chunked", optimizer_impl="fused").peak_bytes


def test_plan_with_the_torchtitan_recipe_keeps_fsdp_and_finds_layouts_for_a_7b_on_8_h100s():
    """torchtitan's FSDP2 FULL_SHARD in bf16-mixed keeps 16 B per parameter of states sharded over 8 GPUs:
    16 x 6.74e9 / 8 = 13.5 GB per GPU, far below an H100's 80 GB, so layouts fit; every one is FSDP's."""
    from memlib.parallel.plan import plan
    r = plan("llama-2-7b", "h100-80gb", 8, recipe="torchtitan")
    assert r.feasible and {p.settings["zero_stage"] for p in r.feasible} == {"FULL_SHARD"}
    assert {p.estimate.setup.sharding for p in r.feasible} == {"fsdp"}
    assert any("FULL_SHARD" in n for n in r.notes)
    best = r.best.estimate
    assert best.counts["param_bytes"] + best.counts["grad_bytes"] + best.counts["optimizer_bytes"] \
        == pytest.approx(16 * N_7B / 8, rel=1e-3)


# ---- strings and lists read wrongly -----------------------------------------------------------------------------------
def test_llama_cpp_kv_unified_false_as_a_string_is_an_error():
    with pytest.raises(ValueError, match="kv_unified must be True or False.*pass False"):
        llama_cpp_kv_cache("llama-2-7b", 4096, kv_unified="false")


def test_llama_cpp_swa_full_no_as_a_string_is_an_error():
    with pytest.raises(ValueError, match="swa_full must be True or False.*pass False"):
        llama_cpp_kv_cache("gemma-3-27b", 4096, swa_full="no")


def test_affine_params_symmetric_false_as_a_string_is_an_error():
    with pytest.raises(ValueError, match="symmetric must be True or False.*pass False"):
        q.affine_params([-1.0, 2.0], 8, symmetric="false")


def test_mem_fraction_static_true_is_not_100_percent():
    with pytest.raises(ValueError, match=r"mem_fraction_static .*\(0, 1\].*bool"):
        sglang_max_total_tokens("llama-3-8b", "h100-80gb", mem_fraction_static=True)


def test_a_numeric_string_is_a_clear_error_not_a_bare_comparison():
    with pytest.raises(ValueError, match=r"mem_fraction_static .*'0.8'.*str"):
        sglang_max_total_tokens("llama-3-8b", "h100-80gb", mem_fraction_static="0.8")
    with pytest.raises(ValueError, match="lora_dropout must be a probability"):
        memlib.estimate_training("llama-2-7b", finetune="lora", lora_dropout="0.1")


def test_a_list_where_a_recipe_name_goes_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown recipe"):
        memlib.estimate_training("llama-2-7b", recipe=["torchtune"])


def test_a_list_where_a_stage_name_goes_is_a_clear_error():
    e = memlib.estimate_training("llama-2-7b", recipe="megatron", pp=2, dp=2)
    with pytest.raises(ValueError, match="stage must be"):
        e.stage_peak_bytes(["last"])


def test_estimate_rlhf_dpo_refuses_a_garbage_kv_cache():
    with pytest.raises(ValueError, match="kv_cache='garbage' does not apply to DPO"):
        memlib.estimate_rlhf("llama-2-7b", "dpo", kv_cache="garbage")
    with pytest.raises(ValueError, match="unknown kv_cache 'garbage'"):
        memlib.estimate_rlhf("llama-2-7b", "ppo", kv_cache="garbage")


def test_a_config_with_head_dim_0_is_refused():
    cfg = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32,
           "intermediate_size": 11008, "vocab_size": 32000, "head_dim": 0}
    with pytest.raises(ValueError, match="head_dim"):
        memlib.Model.from_hf_config(cfg)


def test_llama_cpp_1000_streams_of_256_tokens_is_not_a_zero_byte_cache():
    """--ctx-size 256 split over --parallel 1000 streams: 256 // 1000 = 0 cells each, which llama.cpp cannot serve."""
    with pytest.raises(ValueError, match="no cell per stream"):
        llama_cpp_kv_cache("llama-2-7b", 256, n_seq=1000, kv_unified=False)


@pytest.mark.parametrize("values,symmetric", [([0.0, 1e-320], True), ([-1e308, 1.7e308], False)])
def test_quantization_scales_that_underflow_or_overflow_are_refused(values, symmetric):
    """absmax 1e-320 / 127 is below the smallest float (underflow to 0); a 3.4e308 range / 255 overflows."""
    with pytest.raises(ValueError, match="scale"):
        q.affine_params(values, 8, symmetric=symmetric)


def test_ppo_with_critic_none_names_the_critic():
    with pytest.raises(ValueError, match="critic=None: PPO trains a value model"):
        memlib.estimate_rlhf("llama-2-7b", "ppo", critic=None)
    with pytest.raises(ValueError, match="^critic: "):
        memlib.estimate_rlhf("llama-2-7b", "ppo", critic=5)


# ---- grader and progress --------------------------------------------------------------------------------------------
def test_a_read_only_home_keeps_a_pass_across_a_restart_and_a_later_slip(tmp_path, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    monkeypatch.setattr(progress, "_writable", lambda p: not str(p).startswith(str(ro)))
    monkeypatch.setenv("MEMLIB_PROGRESS", str(ro / ".memlib_progress.json"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    grading.reset()
    grading.check("00.1", f"{N_7B * 2 / 1e9:.2f} GB")  # LLaMA-7B's bf16 weights: 6,738,415,616 x 2 B = 13.48 GB
    grading.reset()
    grading.check("00.1", f"{N_7B * 4 / 1e9:.2f} GB")  # fp32 by mistake, after the restart
    grading.reset()
    assert progress.entry("00.1")["best"] == "correct"


def test_two_processes_writing_progress_keep_both_entries(tmp_path):
    f = tmp_path / "shared.json"
    script = textwrap.dedent(f"""
        import os, sys
        os.environ["MEMLIB_PROGRESS"] = {str(f)!r}
        from memlib.learn.exercises import progress
        for i in range(15):
            progress.update(f"{{sys.argv[1]}}.{{i}}", attempts=1)
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, tag]) for tag in ("a", "b")]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    assert len(json.loads(f.read_text())["exercises"]) == 2 * 15


def test_import_and_export_progress_with_none_or_a_missing_folder_say_so(tmp_path, capsys):
    assert grading.import_progress(None) == 0
    assert grading.export_progress(None) is None
    assert grading.export_progress(tmp_path / "missing" / "x.json") is None
    assert "does not exist" in capsys.readouterr().out


def test_check_with_the_float_1_10_does_not_grade_01_1(capsys):
    grading.check(1.10, "13.4 GiB")
    out = capsys.readouterr().out
    assert "01.10" in out and "strings" in out and "correct" not in out.lower().replace("incorrect", "")
    assert progress.entry("01.1") is None or progress.entry("01.1").get("attempts", 0) == 0


def test_interview_assess_04_10_gives_the_rubric():
    answer = ("each chat keeps its own KV cache for every layer and KV head, so I size the weights first and then "
              "divide what is left by one chat's cache")
    text = interview.assess("04.10", answer)
    assert text.startswith("**Rubric**") and "Model answer" in text
    assert interview.assess("4.10", answer) == text  # the ids check() takes
    with pytest.raises(ValueError, match="ids are strings.*04.1 from 04.10"):
        interview.assess(4.10, answer)


def _windowed_questions():
    for seed in range(400):
        p = practice("06", seed=seed)
        m = re.match(r"KV cache of (.+)$", p.title)
        if m and "in total" in p.prompt and memlib.get_model(m.group(1)).sliding_window:
            yield p, memlib.get_model(m.group(1))


def test_sliding_window_practice_names_the_window_and_its_worked_products_add_up():
    """Per sequence: full layers keep every token, sliding layers min(context, window) tokens, each token
    2 (K, V) x kv_heads x head_dim x 2 B (bf16); times the sequences."""
    seen = 0
    for p, m in _windowed_questions():
        seen += 1
        batch, ctx = (int(x.replace(",", "")) for x in re.findall(r"\*\*([\d,]+)\*\*", p.prompt)[:2])
        assert f"{m.sliding_window:,}" in p.prompt  # the prompt names the window
        counts = m.layer_counts()
        per_token = 2 * m.num_kv_heads * m.head_dim * 2
        by_hand = batch * per_token * (counts.get("full_attention", 0) * ctx
                                       + counts.get("sliding_attention", 0) * min(ctx, m.sliding_window))
        ex = get_exercise(p.id)
        assert float(ex.expected()) == by_hand
        worked = ex.worked()
        products = re.findall(r"(\d+) [a-z ]+ layers x ([\d,]+) tokens x ([\d,]+) B", worked)
        assert batch * sum(int(n) * int(t.replace(",", "")) * int(b.replace(",", "")) for n, t, b in products) \
            == by_hand, worked
    assert seen >= 3


@pytest.mark.parametrize("topic", sorted(KINDS))
def test_a_practice_prompts_format_example_is_never_its_answer(topic):
    for seed in range(12):
        p = practice(topic, seed=seed)
        ex = get_exercise(p.id)
        for shown in re.findall(r'"([^"]+)"', example(ex.unit)) or [example(ex.unit)]:
            assert not grade(p.id, shown).passed, (p.id, shown)


def test_0_412_bytes_per_weight_is_read():
    """3-bit weights with a 16-bit scale and a 3-bit zero per 64: 3 + (16 + 3) / 64 = 3.297 bits = 0.412 bytes."""
    for answer in ("0.412 bytes per weight", "0.412 B per weight", "0.412 bytes/weight", "3.3 bits per weight"):
        assert grade("09.2", answer).passed, answer


def test_a_quoted_figure_with_its_neighbours_is_found_in_the_paragraph():
    ex = get_exercise("08.5")
    error = next(f for f in ex.figures if f.role == "error")
    right = next(f for f in ex.figures if f.role == "right" and "13B" in f.text)
    fb = grade("08.5", ("Llama-2-" + right.text, "1 GB"))  # the model's name as copied from the paragraph
    assert "not one of the figures" not in fb.message and "is not an error" in fb.message
    fb = grade("08.5", ("= " + error.text + ",", "1 GB"))
    assert "not one of the figures" not in fb.message and "you found the error" in fb.message


def test_01_11s_width_slip_is_named_not_told_the_size_is_right():
    """Qwen3-32B: 64 layers x (q, o at 64 x 128 = 8192 wide: 2 x 5120 x 8192; k, v at 8 x 128: 2 x 5120 x 1024;
    gate, up, down: 3 x 5120 x 25600) x 2 B = 62.41 GB. The slip takes q and o at the hidden 5120:
    64 x (2 x 5120² + 2 x 5120 x 1024 + 3 x 5120 x 25600) x 2 B = 58.38 GB, which is also near 62.41 GB in GiB."""
    right = 64 * (2 * 5120 * 8192 + 2 * 5120 * 1024 + 3 * 5120 * 25600) * 2
    slip = 64 * (2 * 5120 * 5120 + 2 * 5120 * 1024 + 3 * 5120 * 25600) * 2
    assert grade("01.11", f"{right / 1e9:.2f} GB").passed
    fb = grade("01.11", f"{slip / 1e9:.2f} GB")
    assert not fb.passed and "size is right" not in fb.message and "8192" in fb.message


def test_the_serving_playground_takes_its_own_int8_option():
    from memlib.learn.playgrounds.serving import serving_summary
    s = serving_summary(dict(model="llama-3-70b", gpu="a100-80gb", tp=2, weights="bf16", kv_cache="int8",
                             context=8192))
    assert s["max_batch"] >= 0
