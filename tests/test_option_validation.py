"""Options validated one way everywhere: booleans through memlib._checks.flag (a string such as "false" is an
error that says what to pass, never a silent True), fractions through fraction() (no bool, no string), names
through choice() (a list is a clear error, not "unhashable type"), a recipe preset that never sets an option the
setup cannot take, and the command line where a flag you type always wins over the preset."""

from __future__ import annotations

import ast
import json
import pathlib
import subprocess
import sys

import pytest

import memlib
from memlib._checks import flag, fraction
from memlib.serving import quantization as q
from memlib.serving.capacity import sglang_max_total_tokens
from memlib.serving.engines import llama_cpp_kv_cache

ROOT = pathlib.Path(__file__).resolve().parents[1]
# bool parameters validated by a helper of the same module (check_setup hands them to _deepspeed_options /
# _check_moe), or the validators' own switches
CHECKED_ELSEWHERE = {("_checks.py", "positive_int", "allow_zero"), ("catalog.py", "int", "allow_zero"),
                     ("options.py", "check_setup", "router_aux_loss"),
                     ("options.py", "check_setup", "contiguous_gradients"), ("options.py", "check_setup", "zero_init")}


def _unchecked_bools() -> list[str]:
    """Public functions of the core (not memlib.learn) with a bool-default parameter their body never flag()s."""
    out = []
    for f in sorted((ROOT / "memlib").rglob("*.py")):
        if "learn" in f.parts:
            continue
        tree = ast.parse(f.read_text())
        # module-level functions and methods: the API (a helper nested inside a function is not)
        tops = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
        tops += [m for c in tree.body if isinstance(c, ast.ClassDef) for m in c.body if isinstance(m, ast.FunctionDef)]
        for node in tops:
            if node.name.startswith("_"):
                continue
            a = node.args
            pos = a.posonlyargs + a.args
            pairs = list(zip(pos[len(pos) - len(a.defaults):], a.defaults)) + list(zip(a.kwonlyargs, a.kw_defaults))
            bools = [p.arg for p, d in pairs if isinstance(d, ast.Constant) and isinstance(d.value, bool)]
            named = {c.args[0].value for c in ast.walk(node) if isinstance(c, ast.Call) and c.args
                     and getattr(c.func, "id", "") in ("flag", "_flag") and isinstance(c.args[0], ast.Constant)}
            # map(flag, ("a", "b"), (a, b))
            named |= {e.value for c in ast.walk(node) if isinstance(c, ast.Call) and getattr(c.func, "id", "") == "map"
                      and c.args and getattr(c.args[0], "id", "") == "flag" and isinstance(c.args[1], ast.Tuple)
                      for e in c.args[1].elts if isinstance(e, ast.Constant)}
            # ("name", name) pairs handed to a loop of flag() calls (deepspeed_zero3_estimate, _check_values)
            named |= {t.elts[0].value for t in ast.walk(node) if isinstance(t, ast.Tuple) and len(t.elts) == 2
                      and isinstance(t.elts[0], ast.Constant) and isinstance(t.elts[1], ast.Name)
                      and t.elts[0].value == t.elts[1].id}
            out += [f"{f.name}:{node.lineno} {node.name}({b})" for b in bools
                    if b not in named and (f.name, node.name, b) not in CHECKED_ELSEWHERE]
    return out


def test_every_public_bool_parameter_goes_through_flag():
    assert _unchecked_bools() == []


@pytest.mark.parametrize("text,word", [("false", "False"), ("no", "False"), ("True", "True"), ("1", "True")])
def test_a_bool_written_as_a_word_is_an_error_that_says_what_to_pass(text, word):
    with pytest.raises(ValueError, match=f"got the string .*pass {word}"):
        flag("x", text)


@pytest.mark.parametrize("call", [
    lambda: llama_cpp_kv_cache("llama-2-7b", 4096, kv_unified="false"),
    lambda: llama_cpp_kv_cache("gemma-3-27b", 4096, swa_full="no"),
    lambda: q.affine_params([-1.0, 2.0], 8, symmetric="false"),
])
def test_bool_options_refuse_strings(call):
    with pytest.raises(ValueError, match="must be True or False"):
        call()


@pytest.mark.parametrize("value", [True, "0.8", 0, 1.5])
def test_fractions_refuse_bools_strings_and_out_of_range(value):
    with pytest.raises(ValueError, match=r"in \(0, 1\]"):
        sglang_max_total_tokens("llama-3-8b", "h100-80gb", mem_fraction_static=value)
    with pytest.raises(ValueError):
        fraction("f", value)


def test_lists_where_a_name_goes_are_clear_errors():
    with pytest.raises(ValueError, match="unknown recipe"):
        memlib.estimate_training("llama-2-7b", recipe=["torchtune"])
    est = memlib.estimate_training("llama-2-7b", recipe="megatron", pp=2, dp=2)
    with pytest.raises(ValueError, match="stage must be"):
        est.stage_peak_bytes(["last"])


def test_a_preset_drops_an_option_that_does_not_apply_and_the_user_still_gets_the_error():
    # HF Trainer's preset frees the logits before the backward (keep_outputs=False); with the chunked loss
    # there are no logits to free, so the preset's option is dropped: the same estimate as without the preset
    # (the preset's other option, torch's fused AdamW, applies and stays)
    with_preset = memlib.estimate_training("llama-2-7b", recipe="hf-trainer", loss="chunked")
    plain = memlib.estimate_training("llama-2-7b", loss="chunked", optimizer_impl="fused")
    assert with_preset.peak_bytes == plain.peak_bytes
    assert dict(with_preset.setup.recipe_set) == {"optimizer_impl": "fused"}
    with pytest.raises(ValueError, match="keep_outputs=False does not apply"):
        memlib.estimate_training("llama-2-7b", loss="chunked", keep_outputs=False)


def _cli_json(*args) -> dict:
    out = subprocess.run([sys.executable, "-m", "memlib", "estimate", "llama-2-7b", *args, "--json"],
                         capture_output=True, text=True, cwd=ROOT, check=True).stdout
    return json.loads(out)


def test_a_flag_typed_on_the_command_line_wins_over_the_recipe_even_at_memlibs_default():
    assert _cli_json("--recipe", "megatron", "--dp", "8")["zero_stage"] == 1  # the preset's distributed optimizer
    assert _cli_json("--recipe", "megatron", "--dp", "8", "--zero-stage", "0")["zero_stage"] == 0
    assert _cli_json("--recipe", "torchtune")["recompute"] == "full"
    assert _cli_json("--recipe", "torchtune", "--recompute", "none")["recompute"] == "none"


def test_llama_cpp_streams_without_a_cell_are_an_error_not_zero_bytes():
    # --parallel 1000 with --ctx-size 256 and no unified cache: 256 // 1000 = 0 cells per stream
    with pytest.raises(ValueError, match="no cell per stream"):
        llama_cpp_kv_cache("llama-2-7b", 256, n_seq=1000, kv_unified=False)


@pytest.mark.parametrize("values,symmetric", [([0.0, 1e-320], True), ([0.0, 1e-320], False),
                                              ([-1e308, 1.7e308], False)])
def test_quantization_scales_that_underflow_or_overflow_are_refused(values, symmetric):
    with pytest.raises(ValueError, match="scale"):
        q.affine_params(values, 8, symmetric=symmetric)


def test_a_config_with_head_dim_0_is_refused_and_null_is_derived():
    cfg = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32,
           "intermediate_size": 11008, "vocab_size": 32000}
    with pytest.raises(ValueError, match="head_dim' is 0"):
        memlib.Model.from_hf_config({**cfg, "head_dim": 0})
    assert memlib.Model.from_hf_config({**cfg, "head_dim": None}).head_dim == 4096 // 32


def test_every_option_the_serving_playground_offers_works_from_its_defaults():
    from memlib.learn.playgrounds.serving import CONTEXTS, TP, serving_summary
    from memlib.serving.inference import KV_FORMATS, WEIGHT_FORMATS
    base = dict(model="llama-3-70b", gpu="a100-80gb", tp=2, weights="bf16", kv_cache="bf16", context=8192)
    for name, options in (("weights", WEIGHT_FORMATS), ("kv_cache", KV_FORMATS), ("tp", TP), ("context", CONTEXTS)):
        for value in options:
            s = serving_summary({**base, name: value})
            assert s["max_batch"] >= 0
    assert serving_summary({**base, "kv_cache": "int8"})["vllm_concurrency"] is None  # LMDeploy's, not vLLM's
