"""A fuzzing pass over memlib's public API and CLI: the input kinds of issue 11 and more.

    python benchmarks/fuzz_inputs.py            # the table and a summary
    python benchmarks/fuzz_inputs.py --bad      # only the rows that are not right

Each input kind runs in a forked child with a time limit, and is classed as
  clear error          ValueError naming the problem (CLI: exit 2, one line)
  correct result       a result whose figure is checked against an independent derivation
  traceback            any other exception type (or a CLI traceback / exit code)
  unclear error        a ValueError from Python itself ("max() arg is an empty sequence",
                       "invalid literal for int()", a codec error without the file name)
  hang                 still running after the limit
  silent wrong number  a result where an error was due, or a figure that fails its check
The owner column names the file whose fix a bad row waits for (issue 11 split the work).
Not a test: tests/test_api_odd_inputs.py pins the same examples.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import multiprocessing as mp
import os
import re
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import memlib  # noqa: E402
from memlib import Model, estimate_inference, estimate_training, fits, get_gpu, get_model, step_time  # noqa: E402
from memlib.cli import main  # noqa: E402
from memlib.parallel.plan import max_micro_batch, min_gpus, plan, to_deepspeed_config  # noqa: E402
from memlib.units import dtype_bytes, fmt_count, gb  # noqa: E402

LIMIT_S = 20.0
warnings.filterwarnings("ignore", category=RuntimeWarning)  # numpy's int32 overflow warning: row "numpy int32"
BUILTIN = re.compile(r"max\(\) arg is an empty|invalid literal for int|could not convert|cannot convert float|"
                     r"math domain|codec can't decode|unpack|is not in list|Exceeds the limit")

GOOD = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008, "num_attention_heads": 32,
        "num_hidden_layers": 32, "vocab_size": 32000}
LLAMA_7B_PARAMS = 6_738_415_616  # HF LlamaForCausalLM, counted in tests/test_models.py from the shapes
LLAMA_65B = dict(hidden_size=8192, num_layers=80, num_heads=64, intermediate_size=22016, vocab_size=32000)
LLAMA_65B_PARAMS = 2 * 32000 * 8192 + 80 * (4 * 8192**2 + 3 * 8192 * 22016 + 2 * 8192) + 8192


# ---- expectations -------------------------------------------------------------------------------------
class Err:
    """A ValueError (CLI: exit 2, one line) whose message holds every word."""

    def __init__(self, *words):
        self.words = words


class Ok:
    """A result for which check(result) is true."""

    def __init__(self, check):
        self.check = check


class Either:
    """A clear error with these words, or a result passing check."""

    def __init__(self, check, *words):
        self.check, self.words = check, words


CASES: list[tuple[str, str, object, object]] = []  # (kind, owner, thunk, expectation)


def case(kind, expect, owner="mine"):
    def deco(fn):
        CASES.append((kind, owner, fn, expect))
        return fn
    return deco


def cli(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as e:
            rc = e.code
    return {"cli": True, "rc": rc, "out": out.getvalue(), "err": err.getvalue()}


def add_cli(kind, argv, expect, owner="mine"):
    CASES.append((kind, owner, lambda: cli(argv), expect))


def add(kind, thunk, expect, owner="mine"):
    CASES.append((kind, owner, thunk, expect))


def est(**kw):
    return estimate_training(kw.pop("model", "llama-7b"), **kw)


def fwd_acts(e):
    return max(m.parts.get("activations", 0) for m in e.moments if m.name == "forward")


def tmp_config(data: bytes) -> str:
    d = tempfile.mkdtemp()
    with open(os.path.join(d, "config.json"), "wb") as f:
        f.write(data)
    return d


TRAINING_OWNER = "memlib/training/"
MODELS_OWNER = "memlib/models/catalog.py"

# ---- estimate_training -----------------------------------------------------------------------------------
add("estimate seq_len=0", lambda: est(seq_len=0), Err("seq_len", ">= 1"))
add("estimate micro_batch=-1", lambda: est(micro_batch=-1), Err("micro_batch"))
add("estimate seq_len=2.5", lambda: est(seq_len=2.5), Err("seq_len", "integer"))
add("estimate seq_len=2048.0", lambda: est(seq_len=2048.0), Err("seq_len", "pass 2048"))
add("estimate dp=True", lambda: est(dp=True), Err("dp"))
add("estimate seq_len=nan", lambda: est(seq_len=math.nan), Err("seq_len"))
add("estimate seq_len=inf", lambda: est(seq_len=math.inf), Err("seq_len"))
add("estimate seq_len=10**400", lambda: est(seq_len=10**400), Err("seq_len", "2**53"))
add("estimate seq_len=numpy int64", lambda: est(seq_len=np.int64(2048)),
    Ok(lambda e: e.peak_bytes == est(seq_len=2048).peak_bytes and type(e.setup.seq_len) is int))
add("estimate precision='BF16-MIXED'", lambda: est(precision="BF16-MIXED"), Err("precision", "'bf16-mixed'"))
add("estimate optimizer='adam'", lambda: est(optimizer="adam"), Err("optimizer", "'adamw'"))
add("estimate zero_stage='3' (a string)", lambda: est(zero_stage="3", dp=2),
    Either(lambda e: e.peak_bytes == est(zero_stage=3, dp=2).peak_bytes, "int"), TRAINING_OWNER)
add("estimate zero_stage=4", lambda: est(zero_stage=4), Err("zero_stage", "0, 1, 2 or 3"))
add("estimate zero_stage='full_shard'", lambda: est(zero_stage="full_shard", dp=8),
    Ok(lambda e: e.peak_bytes == est(zero_stage="FULL_SHARD", dp=8).peak_bytes))
add("estimate tp=3 (32 heads)", lambda: est(tp=3), Err("tp=3", "32"))
add("estimate pp=33 (32 layers)", lambda: est(pp=33), Err("pp=33", "32 layers"))
add("estimate lora_rank=-5 with finetune=full", lambda: est(lora_rank=-5), Err("lora_rank"), TRAINING_OWNER)
add("estimate lora_targets='garbage' with full", lambda: est(lora_targets="garbage"), Err("LoRA target", "accepted"), TRAINING_OWNER)
add("estimate lora_targets=5", lambda: est(finetune="lora", lora_targets=5), Err("lora_targets"),
    "memlib/training/lora.py (training helper)")
add("estimate lora_targets=b'q_proj'", lambda: est(finetune="lora", lora_targets=b"q_proj"), Err("b'q_proj'"),
    "memlib/training/lora.py (training helper)")
add("estimate offload_device='nvme', no offload", lambda: est(offload_device="nvme"), Err("offload"), TRAINING_OWNER)
add("estimate grad_accum=0", lambda: est(grad_accum=0), Err("grad_accum"))
add("estimate sequence_parallel='yes'", lambda: est(sequence_parallel="yes", tp=2), Err("sequence_parallel"))
add("estimate model=7", lambda: estimate_training(7), Err("model"))
add("estimate model='llama-7' (typo)", lambda: estimate_training("llama-7"), Err("llama-7b"))
add("estimate model=None", lambda: estimate_training(None), Err("model"))
add("estimate lora_rank=5000 (> 4096)", lambda: est(finetune="lora", lora_rank=5000), Err("lora_rank 5000"))
# GPT-3: eager keeps the softmax output, 2 bytes x 96 heads x 2048^2 per layer, 96 layers, that sdpa does not
add("estimate GPT eager vs sdpa", lambda: (fwd_acts(est(model="gpt-3-175b", attention="eager")),
                                          fwd_acts(est(model="gpt-3-175b", attention="sdpa"))),
    Ok(lambda p: p[0] - p[1] >= 96 * 96 * 2048**2 * 2), TRAINING_OWNER)
add("estimate GPT to_dict() as JSON", lambda: json.dumps(est(model="gpt-3-175b").to_dict()),
    Ok(lambda s: json.loads(s)["peak_bytes"] > 0), TRAINING_OWNER)
# ZeRO-Infinity: the same layout on twice the GPUs holds a smaller share of everything sharded
_zi = dict(zero_stage=3, offload="optimizer+params", recompute="full")
add("estimate ZeRO-Infinity dp 2 -> 4 per-GPU peak", lambda: (est(dp=2, **_zi).peak_bytes, est(dp=4, **_zi).peak_bytes),
    Ok(lambda p: p[1] <= p[0]), TRAINING_OWNER)
# ---- estimate_inference ----------------------------------------------------------------------------------
add("serve batch=0", lambda: estimate_inference("llama-7b", batch=0), Err("batch"))
add("serve context_len=-5", lambda: estimate_inference("llama-7b", context_len=-5), Err("context_len"))
add("serve weights='int3'", lambda: estimate_inference("llama-7b", weights="int3"), Err("weights", "int4-gptq"))
add("serve tp=3 on llama-2-70b", lambda: estimate_inference("llama-2-70b", tp=3), Err("tp 3"))
add("serve group_size=0", lambda: estimate_inference("llama-7b", weights="int4-gptq", group_size=0),
    Err("group_size"))
add("serve llama-2-7b context 100000 (25x window)", lambda: estimate_inference("llama-2-7b", context_len=100_000),
    Either(lambda e: any("exceeds" in n for n in e.notes), "context"), "memlib/serving/inference.py")
add("serve mistral-7b 32k (sliding window 4096)", lambda: estimate_inference("mistral-7b", context_len=32768),
    Ok(lambda e: e.kv_cache_bytes == e.kv_bytes_per_token * 4096 or any("sliding" in n.lower() for n in e.notes)),
    "memlib/serving/inference.py / models/catalog.py")
# ---- Model and config.json ---------------------------------------------------------------------------------
add("Model numpy int32 sizes (65B)", lambda: Model("n", **{k: np.int32(v) for k, v in LLAMA_65B.items()}).num_params,
    Ok(lambda n: n == LLAMA_65B_PARAMS), MODELS_OWNER)
add("Model numpy int64 sizes, to_dict JSON",
    lambda: json.dumps(est(model=Model("n", **{k: np.int64(v) for k, v in LLAMA_65B.items()}), seq_len=256).to_dict()),
    Ok(lambda s: json.loads(s)["num_params"] == LLAMA_65B_PARAMS), MODELS_OWNER)
add("Model numpy int64 sizes, fits()",
    lambda: fits(est(model=Model("n", **{k: np.int64(v) for k, v in LLAMA_65B.items()}), seq_len=256), "a100-80gb"),
    Ok(lambda v: not v.fits and type(v.margin_bytes) is int))
add("config tie_word_embeddings='false'", lambda: Model.from_hf_config({**GOOD, "tie_word_embeddings": "false"}),
    Either(lambda m: m.num_params == LLAMA_7B_PARAMS, "tie_word_embeddings"), MODELS_OWNER)
add("config tie_word_embeddings=[False]", lambda: Model.from_hf_config({**GOOD, "tie_word_embeddings": [False]}),
    Either(lambda m: m.num_params == LLAMA_7B_PARAMS, "tie_word_embeddings"), MODELS_OWNER)
add("config model_type=['llama']", lambda: Model.from_hf_config({**GOOD, "model_type": ["llama"]}),
    Err("model_type"), MODELS_OWNER)
add("config LlamaForSequenceClassification", lambda: Model.from_hf_config(
    {**GOOD, "architectures": ["LlamaForSequenceClassification"]}),
    Either(lambda m: "lm_head" not in [t.name for t in m.tensors()], "architectures"), MODELS_OWNER)
add("config LlamaModel (no head)", lambda: Model.from_hf_config({**GOOD, "architectures": ["LlamaModel"]}),
    Either(lambda m: "lm_head" not in [t.name for t in m.tensors()], "architectures"), MODELS_OWNER)
add("config MoE fields under mistral", lambda: Model.from_hf_config(
    {**GOOD, "model_type": "mistral", "num_local_experts": 8, "num_experts_per_tok": 2}),
    Either(lambda m: m.num_params > LLAMA_7B_PARAMS + 7 * 32 * 3 * 4096 * 11008, "expert"), MODELS_OWNER)
add("config quantization_config (GPTQ 4-bit)", lambda: estimate_inference(Model.from_hf_config(
    {**GOOD, "quantization_config": {"quant_method": "gptq", "bits": 4}})),
    Either(lambda e: any("quantiz" in n.lower() for n in e.notes), "quantization"), MODELS_OWNER)
add("config '[' x 100000", lambda: Model.from_hf_config(tmp_config(b"[" * 100_000)), Err("config.json"), MODELS_OWNER)
add("config.json in UTF-16", lambda: Model.from_hf_config(tmp_config(json.dumps(GOOD).encode("utf-16"))),
    Err("config.json"), MODELS_OWNER)
add("config '{not json'", lambda: Model.from_hf_config(tmp_config(b"{not json")), Err("not valid JSON"))
add("config missing num_hidden_layers", lambda: Model.from_hf_config(
    {k: v for k, v in GOOD.items() if k != "num_hidden_layers"}), Err("num_hidden_layers"))
add("config hidden_size=0", lambda: Model.from_hf_config({**GOOD, "hidden_size": 0}), Err("hidden_size"))
add("config 42 (not a dict)", lambda: Model.from_hf_config(42), Err("dict or a path"))
add("config path that does not exist", lambda: Model.from_hf_config("/nonexistent/x"), Err("no config.json"))
add("config hidden_act='gelu'", lambda: Model.from_hf_config({**GOOD, "hidden_act": "gelu"}), Err("hidden_act"))
add("config num_attention_heads='32'", lambda: Model.from_hf_config({**GOOD, "num_attention_heads": "32"}),
    Err("num_heads"))
add("config model_type='gpt2'", lambda: Model.from_hf_config({**GOOD, "model_type": "gpt2"}), Err("gpt2", "llama"))
add("config hidden_size=4096.0", lambda: Model.from_hf_config({**GOOD, "hidden_size": 4096.0}),
    Either(lambda m: m.num_params == LLAMA_7B_PARAMS, "hidden_size"))
add("config a 65B model (exact count)", lambda: Model.from_hf_config(
    {"model_type": "llama", "hidden_size": 8192, "intermediate_size": 22016, "num_attention_heads": 64,
     "num_hidden_layers": 80, "vocab_size": 32000}).num_params, Ok(lambda n: n == LLAMA_65B_PARAMS))
# ---- catalogs ------------------------------------------------------------------------------------------------
add("get_gpu('v100-33gb')", lambda: get_gpu("v100-33gb"), Err("v100-32gb"))
add("get_gpu(32)", lambda: get_gpu(32), Err("string"))
add("get_gpu('V100 32GB')", lambda: get_gpu("V100 32GB").memory_bytes, Ok(lambda n: n == 32 * 2**30))
add("get_model(['llama-7b'])", lambda: get_model(["llama-7b"]), Err("string"))
# ---- fits ------------------------------------------------------------------------------------------------------
add("fits cuda_context_bytes=True", lambda: fits(est(seq_len=512), "a100-80gb", cuda_context_bytes=True),
    Err("cuda_context_bytes"))
add("fits allocator_headroom=1.0", lambda: fits(est(seq_len=512), "a100-80gb", allocator_headroom=1.0),
    Err("allocator_headroom"))
add("fits('llama-7b', gpu)", lambda: fits("llama-7b", "a100-80gb"), Err("estimate"))
add("fits peak 10**400", lambda: fits(type("E", (), {"peak_bytes": 10**400})(), "a100-80gb"), Err("peak_bytes"))
# ---- step_time -----------------------------------------------------------------------------------------------
_dp16 = dict(dp=16, zero_stage=3, offload="optimizer")
add("step_time('llama-7b', 'a100')", lambda: step_time("llama-7b", "a100"), Err("training estimate"))
add("step_time(inference estimate)", lambda: step_time(estimate_inference("llama-7b"), "a100"),
    Err("InferenceEstimate"))
add("step_time peak_tflops=inf", lambda: step_time(est(**_dp16), "a100", peak_tflops=math.inf), Err("peak_tflops"))
add("step_time internode_bytes_per_s=0", lambda: step_time(est(**_dp16), "a100", internode_bytes_per_s=0),
    Err("internode_bytes_per_s"))
add("step_time cpu_adam_params_per_s=0", lambda: step_time(est(**_dp16), "a100", cpu_adam_params_per_s=0),
    Err("cpu_adam_params_per_s"))
add("step_time internode_bytes_per_s=-25e9", lambda: step_time(est(**_dp16), "a100", internode_bytes_per_s=-25e9),
    Err("internode_bytes_per_s"))
add("step_time mfu=0", lambda: step_time(est(), "a100", mfu=0), Err("mfu"))
add("step_time mfu=40", lambda: step_time(est(), "a100", mfu=40), Err("mfu"))
add("step_time bf16 on a V100", lambda: step_time(est(), "v100"), Err("bf16"))
add("step_time mfu and hfu both", lambda: step_time(est(), "a100", mfu=0.4, hfu=0.4), Err("not both"))
add("step_time hfu=0", lambda: step_time(est(), "a100", hfu=0), Err("hfu"))
add("step_time mfu=0.8 with full recompute (HFU > 1)", lambda: step_time(est(recompute="full"), "a100", mfu=0.8),
    Err("not reachable"))
# A100 dense bf16 312 TFLOP/s (NVIDIA A100 datasheet); PaLM's 6N + 12 L H Q T FLOPs per token
add("step_time compute at 50% MFU", lambda: step_time(est(seq_len=2048), "a100-80gb", mfu=0.5).compute_s,
    Ok(lambda s: math.isclose(s, (6 * LLAMA_7B_PARAMS + 12 * 32 * 32 * 128 * 2048) * 2048 / (312e12 * 0.5))))
# ---- plan and friends ----------------------------------------------------------------------------------------
add("plan optimizer='adam'", lambda: plan("llama-7b", "a100", 8, optimizer="adam"), Err("optimizer"))
add("plan grad_accum=0", lambda: plan("llama-7b", "a100", 8, grad_accum=0), Err("grad_accum"))
add("plan lora_rank=0", lambda: plan("llama-7b", "a100", 8, task="lora", lora_rank=0), Err("lora_rank"))
add("plan precisions='bf16-mixed' (a string)", lambda: plan("llama-7b", "a100", 8, precisions="bf16-mixed"),
    Err("precisions"))
add("plan mfu=0", lambda: plan("llama-7b", "a100", 8, mfu=0), Err("mfu"))
add("plan mfu=5", lambda: plan("llama-7b", "a100", 8, mfu=5), Err("mfu"))
add("plan mfu and hfu both", lambda: plan("llama-7b", "a100", 8, mfu=0.4, hfu=0.4), Err("not both"))
add("plan bf16 on a V100", lambda: plan("llama-7b", "v100", 8, precisions=("bf16-mixed",)), Err("bf16"))
add("plan fp32, no peak_tflops (untimed)", lambda: plan("llama-7b", "a100", 8, precisions=("fp32",)).to_dict(),
    Ok(lambda d: d["feasible"] and all(row["tokens_per_s_per_gpu"] is None for row in d["feasible"])))
add("plan gpus_per_node=0", lambda: plan("llama-7b", "a100", 8, gpus_per_node=0), Err("gpus_per_node"))
add("plan count=10**9", lambda: plan("llama-7b", "a100", 10**9),
    Ok(lambda r: r.feasible and all(p.settings["dp"] * p.settings["tp"] * p.settings["pp"] == 10**9
                                    for p in r.feasible)))
add("plan count=2**53+1", lambda: plan("llama-7b", "a100", 2**53 + 1), Err("count", "2**53"))
add("plan optimzer= (misspelt option)", lambda: plan("llama-7b", "a100", 8, optimzer="adamw"), Err("optimzer"))
add("plan dp=2 (a searched option)", lambda: plan("llama-7b", "a100", 8, dp=2), Err("dp"))
add("plan allow_offload='no'", lambda: plan("llama-7b", "a100", 8, allow_offload="no"), Err("allow_offload"))
add("plan host_bytes_per_node=-1", lambda: plan("llama-7b", "a100", 8, host_bytes_per_node=-1),
    Err("host_bytes_per_node"))
add("min_gpus max_count=0", lambda: min_gpus("llama-7b", "a100", max_count=0), Err("max_count"))
# 16 bytes/param of model states even fully sharded: n >= 16 * 65.3e9 / 80 GiB = 12.2, so at least 13
add("min_gpus llama-65b a100-80gb", lambda: min_gpus("llama-65b", "a100-80gb"),
    Ok(lambda r: r is not None and r.count >= 16 * get_model("llama-65b").num_params / (80 * 2**30)))
add("max_micro_batch(None)", lambda: max_micro_batch(None, "a100"), Err("Plan"))
add("max_micro_batch limit=0", lambda: max_micro_batch(plan("llama-7b", "a100", 8).best, "a100", limit=0),
    Err("limit"))
add("to_deepspeed_config(best) when nothing fits",
    lambda: to_deepspeed_config(plan("llama-65b", "v100", 4, allow_offload=False).best), Err("Plan"))
# ---- units --------------------------------------------------------------------------------------------------
add("dtype_bytes(['fp32'])", lambda: dtype_bytes(["fp32"]), Err("dtype"))
add("gb('5')", lambda: gb("5"), Err("number"))
add("fmt_count(nan)", lambda: fmt_count(math.nan), Ok(lambda s: s == "nan"))


# ---- issue 23's classes, widened beyond its examples (each expected figure derived by hand below) -------------
import copy  # noqa: E402
import dataclasses  # noqa: E402

from memlib.learn.grading import grade  # noqa: E402
from memlib.models.hf_configs import HF_CONFIGS  # noqa: E402
from memlib.parallel.plan import plan_serving  # noqa: E402
from memlib.serving.capacity import decode_bound  # noqa: E402
from memlib.serving.inference import max_batch  # noqa: E402

# numpy scalars: every integer knob, every width that holds the value, equals the plain-int answer
for _knob, _v in (("seq_len", 2048), ("micro_batch", 2), ("grad_accum", 4), ("tp", 2), ("pp", 2), ("dp", 8)):
    for _t in (np.int16, np.uint32, np.int64):
        _extra = {"zero_stage": 3} if _knob == "dp" else {}
        add(f"estimate {_knob}=np.{_t.__name__}({_v})",
            lambda k=_knob, v=_v, t=_t, x=_extra: est(**{k: t(v)}, **x),
            Ok(lambda e, k=_knob, v=_v, x=_extra: type(e.peak_bytes) is int
               and e.peak_bytes == est(**{k: v}, **x).peak_bytes and json.dumps(e.to_dict()) is not None))
add("fits allocator_headroom=np.float16(0.25)", lambda: fits(est(), "a100", allocator_headroom=np.float16(0.25)),
    Ok(lambda v: type(v.margin_bytes) is int))


# user-defined GPUs: a catalog entry under a new name answers as the entry, at every entry point
def _twin(name="a100-80gb", **kw):
    return dataclasses.replace(get_gpu(name), name="my-gpu", **kw)


add("user GPU: step_time", lambda: step_time(est(), _twin()).step_s,
    Ok(lambda v: v == step_time(est(), "a100-80gb").step_s))
add("user GPU: max_batch", lambda: max_batch("llama-3-8b", _twin(), context_len=4096).value,
    Ok(lambda v: v == max_batch("llama-3-8b", "a100-80gb", context_len=4096).value))
add("user GPU: decode_bound", lambda: decode_bound("llama-3-8b", _twin("h100-80gb"), batch=8).tokens_per_s,
    Ok(lambda v: v == decode_bound("llama-3-8b", "h100-80gb", batch=8).tokens_per_s))
add("user GPU: plan_serving", lambda: plan_serving("llama-3-8b", _twin(), 2, context_len=4096).best.settings,
    Ok(lambda v: v == plan_serving("llama-3-8b", "a100-80gb", 2, context_len=4096).best.settings))
add("user GPU: min_gpus", lambda: min_gpus("llama-7b", _twin(), max_count=64).count,
    Ok(lambda v: v == min_gpus("llama-7b", "a100-80gb", max_count=64).count))
add("user GPU: 40 GiB keeping the 80 GB card's totals", lambda: _twin(memory_bytes=40 * 2**30),
    Err("is more than memory_bytes"))
add("user GPU: v100 without fp16 peak, decode_bound",
    lambda: decode_bound("llama-7b", _twin("v100-32gb", fp16_tflops=None)), Err("16-bit tensor peak"))

# config defaults per family and empty MoE layer sets
_MISTRAL = {"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
            "num_hidden_layers": 32, "vocab_size": 32000}
# MistralConfig defaults to 8 KV heads: 32 x (2 x 4096² + 2 x 4096 x 1024 + 3 x 4096 x 14336 + 2 x 4096)
# + 2 x 32000 x 4096 + 4096 = 7,241,732,096
add("config mistral without num_key_value_heads", lambda: Model.from_hf_config(_MISTRAL).num_params,
    Ok(lambda n: n == 32 * (2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096) + 2 * 32000 * 4096 + 4096))
add("config mixtral without num_key_value_heads",
    lambda: Model.from_hf_config({k: v for k, v in HF_CONFIGS["mixtral-8x7b"]["config"].items()
                                  if k != "num_key_value_heads"}).num_kv_heads, Ok(lambda n: n == 8))
add("config qwen3_moe with every layer mlp_only",
    lambda: Model.from_hf_config(dict(HF_CONFIGS["qwen3-30b-a3b"]["config"],
                                      mlp_only_layers=list(range(HF_CONFIGS["qwen3-30b-a3b"]["config"]
                                                                 ["num_hidden_layers"])))).is_moe,
    Ok(lambda moe: moe is False))
add("config llama4 moe_layers=[]", lambda: Model.from_hf_config(
    {**copy.deepcopy(HF_CONFIGS["llama-4-scout"]["config"]),
     "text_config": {**HF_CONFIGS["llama-4-scout"]["config"]["text_config"], "moe_layers": []}}).num_params,
    # 48 dense layers of 5120: attention 2 x 5120 x 40 x 128 + 2 x 5120 x 8 x 128, MLP 3 x 5120 x 16384, 2 norms
    Ok(lambda n: n == 48 * (2 * 5120 * 5120 + 2 * 5120 * 1024 + 3 * 5120 * 16384 + 2 * 5120)
       + 2 * 202048 * 5120 + 5120))
add("config num_hidden_layers=10**12", lambda: Model.from_hf_config({**GOOD, "num_hidden_layers": 10**12}),
    Err("1,000,000,000"))
add("config num_hidden_layers=10**9+1", lambda: Model.from_hf_config({**GOOD, "num_hidden_layers": 10**9 + 1}),
    Err("1,000,000,000"))
# layers are a pattern (issue 23 item 3): 10**9 layers are counted exactly and at once; the 7B shape's
# parameters are L x (4 h^2 + 3 h I + 2 h) + 2 V h + h (q, k, v, o; gate, up, down; 2 RMSNorms; embedding, head, norm)
add("config num_hidden_layers=10**9", lambda: Model.from_hf_config({**GOOD, "num_hidden_layers": 10**9}).num_params,
    Ok(lambda n: n == 10**9 * (4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096) + 2 * 32000 * 4096 + 4096))
add("deepseek-v3 with 10**9 layers, pp=10**9 (one layer a stage)",
    lambda: estimate_training(get_model("deepseek-v3").with_(num_layers=10**9), pp=10**9, dp=2**20,
                              zero_stage=1).peak_bytes,
    Either(lambda b: b > 0, "2**53"))

# bounded searches and linear-time parsing
add("min_gpus deepseek-v3 on t4, 2**20 tokens, max_count 2**53",
    lambda: min_gpus("deepseek-v3", "t4", seq_len=2**20, max_count=2**53), Ok(lambda r: r is None))
add("min_gpus llama-405b on rtx-4090, max_count 2**40",
    lambda: min_gpus("llama-3.1-405b", "rtx-4090", max_count=2**40),
    # 16 B/param over at most 2**40 cards always fits the states; the answer is a count or None, fast
    Ok(lambda r: r is None or r.count >= 16 * get_model("llama-3.1-405b").num_params / (24 * 2**30)))
add("grade 02.10, 'a and ' x 200", lambda: grade("02.10", "a and " * 200 + "!").status,
    Ok(lambda st: st in ("incorrect", "malformed")))
add("grade 07.7, '5 ' + 'a1aa' x 400", lambda: grade("07.7", "5 " + "a1aa" * 400 + "!").status,
    Ok(lambda st: st in ("incorrect", "malformed")))
add("grade 01.3, 10,000 digits", lambda: grade("01.3", "9" * 10_000 + " GB").status,
    Ok(lambda st: st in ("incorrect", "malformed")))


# ---- issue 43: one table of options, every entry point validated the same way ------------------------------------
from memlib.training.option_table import OPTIONS  # noqa: E402

# every option of the table with its kind's wrong values: a string for a bool, a list for a name, a bool or a float
# for a count, a string or a bool for a probability (the class, not an example: a new option is fuzzed by its kind)
_KIND_BAD = {"flag": ("false", "no", 1), "choice": (["x"], "garbage"), "count": (True, 2.5, 0, "8"), "count0": (-1, True),
             "probability": (True, "0.1", 1.0), "positive": ("1.5", True, 0), "zero_stage": ("ZERO", 4, [3]),
             "targets": (5, []), "layer_counts": ("2,2", [0, 2]), "ce_fusion": ("fast", ["te"]), "deferral": (-1, "0"),
             "version": (4.44, "4", "4.30")}
for _name, _o in OPTIONS.items():
    for _bad in _KIND_BAD[_o.kind]:
        add(f"estimate {_name}={_bad!r}", lambda n=_name, b=_bad: est(**{n: b}), Err(_name))
add("TrainingSetup.create recipe=['torchtune']", lambda: memlib.TrainingSetup.create("llama-7b", recipe=["torchtune"]),
    Err("recipe"))
add("TrainingSetup.create unknown option", lambda: memlib.TrainingSetup.create("llama-7b", zero_stagee=1),
    Err("zero_stagee", "did you mean zero_stage"))
# recipes vs explicit options: 18 B/param of Megatron states without the distributed optimizer (2 + 4 + 12)
add_cli("cli --recipe megatron --zero-stage 0", ["estimate", "llama-2-7b", "--recipe", "megatron", "--dp", "8",
                                                 "--zero-stage", "0", "--json"],
        Ok(lambda r: r["rc"] == 0 and json.loads(r["out"])["zero_stage"] == 0))
add_cli("cli --recipe torchtune --recompute none", ["estimate", "llama-2-7b", "--recipe", "torchtune", "--recompute",
                                                    "none", "--json"],
        Ok(lambda r: r["rc"] == 0 and json.loads(r["out"])["recompute"] == "none"))
add_cli("cli --no-double-quant (full)", ["estimate", "llama-7b", "--no-double-quant"], Err("--no-double-quant"))
add("recipe hf-trainer + loss chunked", lambda: est(model="llama-2-7b", recipe="hf-trainer", loss="chunked").peak_bytes,
    Ok(lambda n: n == est(model="llama-2-7b", loss="chunked", optimizer_impl="fused").peak_bytes))
add("plan 7B on 8 H100 recipe=torchtitan", lambda: plan("llama-2-7b", "h100-80gb", 8, recipe="torchtitan"),
    Ok(lambda r: r.feasible and {p.settings["zero_stage"] for p in r.feasible} == {"FULL_SHARD"}))
# the serving table (memlib.serving.inference.SERVING_OPTIONS): the same kinds, so the same wrong values, on
# estimate_inference, on max_batch's passed-on keywords and on memlib serve's flags (--count is tp)
from memlib.serving.inference import SERVING_FLAGS, SERVING_OPTIONS  # noqa: E402

# (text, whose name the error gives): argparse refuses a text its type cannot parse naming the flag; a text that
# parses ("0", a version string) reaches the kind's validator, which names the option
_CLI_BAD = {"count": (("8.5", "flag"), ("two", "flag"), ("0", "option")), "choice": (("garbage", "flag"),
            ("FP8", "flag")), "version": (("4", "option"), ("4.30", "option"))}
for _name, _o in SERVING_OPTIONS.items():
    for _bad in _KIND_BAD[_o.kind]:
        add(f"estimate_inference {_name}={_bad!r}",
            lambda n=_name, b=_bad: estimate_inference("llama-2-7b", **{n: b}), Err(_name))
        add(f"max_batch {_name}={_bad!r}",  # max_batch searches batch: given, it is refused by name too
            lambda n=_name, b=_bad: memlib.max_batch("llama-2-7b", "a100-80gb", **{n: b}), Err(_name))
    _flag = SERVING_FLAGS.get(_name, _o.flag)
    for _text, _whose in _CLI_BAD[_o.kind]:
        add_cli(f"cli serve {_flag} {_text}", ["serve", "llama-2-7b", _flag, _text],
                Err(_name if _whose == "option" else _flag))
# strings, lists and unknown values elsewhere
from memlib.serving import quantization as _q  # noqa: E402
from memlib.serving.capacity import sglang_max_total_tokens  # noqa: E402
from memlib.serving.engines import llama_cpp_kv_cache  # noqa: E402
add("llama_cpp_kv_cache kv_unified='false'", lambda: llama_cpp_kv_cache("llama-2-7b", 4096, kv_unified="false"),
    Err("kv_unified", "pass False"))
add("llama_cpp_kv_cache swa_full='no'", lambda: llama_cpp_kv_cache("gemma-3-27b", 4096, swa_full="no"),
    Err("swa_full", "pass False"))
add("llama_cpp 1000 streams x 256 tokens", lambda: llama_cpp_kv_cache("llama-2-7b", 256, n_seq=1000, kv_unified=False),
    Err("cell"))
add("affine_params symmetric='false'", lambda: _q.affine_params([-1.0, 2.0], 8, symmetric="false"), Err("symmetric"))
add("affine_params scale underflow", lambda: _q.affine_params([0.0, 1e-320], 8), Err("scale"))
add("affine_params scale overflow", lambda: _q.affine_params([-1e308, 1.7e308], 8, symmetric=False), Err("scale"))
add("sglang mem_fraction_static=True", lambda: sglang_max_total_tokens("llama-3-8b", "h100-80gb",
                                                                       mem_fraction_static=True), Err("mem_fraction"))
add("sglang mem_fraction_static='0.8'", lambda: sglang_max_total_tokens("llama-3-8b", "h100-80gb",
                                                                        mem_fraction_static="0.8"), Err("mem_fraction"))
add("stage_peak_bytes(['last'])", lambda: est(model="llama-2-7b", recipe="megatron", pp=2, dp=2).stage_peak_bytes(
    ["last"]), Err("stage"))
add("estimate_rlhf dpo kv_cache='garbage'", lambda: memlib.estimate_rlhf("llama-2-7b", "dpo", kv_cache="garbage"),
    Err("kv_cache"))
add("estimate_rlhf ppo kv_cache=['bf16']", lambda: memlib.estimate_rlhf("llama-2-7b", "ppo", kv_cache=["bf16"]),
    Err("kv_cache"))
add("estimate_rlhf ppo critic=None", lambda: memlib.estimate_rlhf("llama-2-7b", "ppo", critic=None), Err("critic"))
add("config head_dim 0", lambda: Model.from_hf_config({**GOOD, "head_dim": 0}), Err("head_dim"))
# grader and progress
from memlib.learn import grading as _grading, interview as _interview  # noqa: E402
add("grade(1.10, ...)", lambda: _grading.grade(1.10, "1 GB").status, Ok(lambda st: st == "unknown exercise"))
add("interview.assess('04.10', ...)", lambda: _interview.assess("04.10", "the cache of every chat grows with its "
                                                                "context so the weights come first and the rest is cache"),
    Ok(lambda t: t.startswith("**Rubric**")))
add("grade 09.2 '0.412 B per weight'", lambda: _grading.grade("09.2", "0.412 B per weight").passed, Ok(bool))
add("grade 01.11 width slip 58.38 GB", lambda: _grading.grade("01.11", "58.38 GB").message,
    Ok(lambda m: "size is right" not in m and "8192" in m))
add("grade 08.5 quote 'Llama-2-13B'", lambda: _grading.grade("08.5", ("Llama-2-13B", "1 GB")).message,
    Ok(lambda m: "not one of the figures" not in m))
add("export_progress(None)", lambda: _grading.export_progress(None), Ok(lambda r: r is None))
add("import_progress('/nonexistent/x.json')", lambda: _grading.import_progress("/nonexistent/x.json"),
    Ok(lambda n: n == 0))


# ---- every entry point, not only the option tables (issue 43's held-out probe classes) ------------------------
from memlib.cost import collectives as _col, conventions as _conv, timing as _timing  # noqa: E402
from memlib.hardware import fit as _fit  # noqa: E402
from memlib.learn import classroom as _classroom, mechanisms as _mech, oom as _oom, scenarios as _scen  # noqa: E402
from memlib.models import llama_like as _ll  # noqa: E402
from memlib.parallel import pipeline as _pipe  # noqa: E402
from memlib.serving import engines as _eng, inference as _inf, kv_compression as _kvc  # noqa: E402
from memlib.cost import weight_sync as _ws  # noqa: E402
from memlib.training import rlhf as _rlhf  # noqa: E402
from memlib.units import fmt_bytes  # noqa: E402

# a model argument that is not a model: an int, a config dict, a list
add("kv_cache_bytes(7, ...)", lambda: _inf.kv_cache_bytes(7, 1, 4096), Err("model", "memlib.Model"))
add("kv_bytes_per_token({config dict})", lambda: _inf.kv_bytes_per_token(dict(GOOD)), Err("model", "from_hf_config"))
add("kv_tokens_kept(['llama-2-7b'], ...)", lambda: _inf.kv_tokens_kept(["llama-2-7b"], 4096), Err("model"))
add("kivi_cache_bytes(None, ...)", lambda: _kvc.kivi_cache_bytes(None, 8192), Err("model"))
add("fix_ladder(7, gpu)", lambda: _oom.fix_ladder(7, "a100-40gb"), Err("model"))
# 2 x 32 layers x 32 heads x 128 x 2 B x 4096 tokens (llama-2-7b, MHA) = 2 GiB
add("kv_cache_bytes('llama-2-7b', 1, 4096) by name", lambda: _inf.kv_cache_bytes("llama-2-7b", 1, 4096),
    Ok(lambda b: b == 2 * 32 * 32 * 128 * 2 * 4096))
# counts and sizes: bools, strings, nan, inf, negatives, None
add("kv_cache_bytes batch=-1", lambda: _inf.kv_cache_bytes("llama-2-7b", -1, 4096), Err("batch"))
add("kv_cache_bytes context_len=nan", lambda: _inf.kv_cache_bytes("llama-2-7b", 1, math.nan), Err("context_len"))
add("all_reduce_bytes n=True", lambda: _timing.all_reduce_bytes(1e9, True), Err("n"))
add("all_gather_bytes nbytes=nan", lambda: _timing.all_gather_bytes(math.nan, 8), Err("nbytes"))
add("bytes_sent nbytes=None", lambda: _col.bytes_sent("all-reduce", None, 8), Err("nbytes"))
add("all_reduce_bytes(1e9, 8)", lambda: _timing.all_reduce_bytes(1e9, 8), Ok(lambda b: abs(b - 1.75e9) < 1))
add("required_bytes headroom=nan", lambda: _fit.required_bytes(10**10, 0, math.nan), Err("allocator_headroom"))
add("required_bytes peak=inf", lambda: _fit.required_bytes(math.inf), Err("peak_bytes"))
add("paged_tokens tokens=-1", lambda: _eng.paged_tokens(-1, "vllm"), Err("tokens"))
add("zero_offload_traffic_bytes micro_batches=True", lambda: _timing.zero_offload_traffic_bytes(10, True),
    Err("micro_batches"))
add("implied_mfu flops_per_token='1e10'", lambda: _conv.implied_mfu("1e10", 1e12, 1e5, "h100-80gb"),
    Err("flops_per_token"))
add("implied_mfu gpu_hours=inf", lambda: _conv.implied_mfu(1e10, 1e12, math.inf, "h100-80gb"), Err("gpu_hours"))
add("utilisation model_flops=nan", lambda: _timing.utilisation(math.nan, 1e15, mfu=0.4), Err("model_flops"))
add("weight_sync train_tp=True", lambda: _ws.weight_sync("llama-2-7b", link="IB NDR", train_tp=True), Err("train_tp"))
add("weight_sync alpha_s=nan", lambda: _ws.weight_sync("llama-2-7b", link="IB NDR", alpha_s=math.nan), Err("alpha_s"))
add("llama_like head_dim=0", lambda: _ll.llama_like(4096, 32, head_dim=0), Err("head_dim"))
add("llama_like_of_size(inf)", lambda: _ll.llama_like_of_size(math.inf), Err("num_params"))
add("fmt_bytes(nan)", lambda: fmt_bytes(math.nan), Err("n_bytes"))
add("fmt_bytes digits='8'", lambda: fmt_bytes(1e9, "8"), Err("digits"))
add("scaled_format_bits numel=-1", lambda: _q.scaled_format_bits("mxfp4", numel=-1), Err("numel"))
add("bits_per_weight scale_scale_bits='8'", lambda: _q.bits_per_weight(4, 128, scale_scale_bits="8"),
    Err("scale_scale_bits"))
add("pipeline_schedule t_w=None", lambda: _mech.pipeline_schedule(t_w=None), Err("t_w"))
add("handout interview=None", lambda: _classroom.handout("01", 1, interview=None), Err("interview"))
add("scenarios.build seed=8.5", lambda: _scen.build("04", 8.5), Err("seed"))
# "false" where a bool goes
from memlib.learn import interview as _iv  # noqa: E402
add("interview.timer block='false'", lambda: _iv.timer(1, block="false"), Err("block"))
# lists and sets where a name goes
add("link_bytes_per_s(['IB NDR'])", lambda: _col.link_bytes_per_s(["IB NDR"]), Err("link"))
add("kv_cache_bytes kv_cache_v=['q8_0']", lambda: _inf.kv_cache_bytes("llama-2-7b", 1, 4096, kv_cache_v=["q8_0"]),
    Err("kv_cache_v"))
add("kv_bytes_per_token kv_cache_v=''", lambda: _inf.kv_bytes_per_token("llama-2-7b", kv_cache_v=""), Err("kv_cache_v"))
add("peak_micro_batches_in_flight(['1f1b'])", lambda: _pipe.peak_micro_batches_in_flight(["1f1b"], 4, 8),
    Err("schedule"))
add("optimizer_step_hbm_bytes optimizer=['adamw']", lambda: _conv.optimizer_step_hbm_bytes(10**9, ["adamw"]),
    Err("optimizer"))
add("scenarios.build(['04'], 1)", lambda: _scen.build(["04"], 1), Err("topic"))
# unit slips: 400 meant as 400 Gb/s, 2 as 2 GB/s, 512 as 512 GiB
add("collective_seconds bytes_per_s=400", lambda: _col.collective_seconds("all-reduce", 1e9, 8, 400),
    Err("bytes_per_s", "400e9"))
add("checkpoint_write_s storage 2 B/s", lambda: __import__("memlib.cost.checkpointing", fromlist=["x"])
    .checkpoint_write_s(1e12, 2), Err("storage_bytes_per_s"))
add("plan host_bytes_per_node=512", lambda: plan("llama-2-7b", "h100-80gb", 8, host_bytes_per_node=512),
    Err("host_bytes_per_node", "GiB"))
# an error naming the argument the user passed
add("rollout_pool fraction=True", lambda: _rlhf.rollout_pool("llama-2-7b", fraction=True), Err("fraction"))
add_cli("cli serve --count 0", ["serve", "llama-2-7b", "--count", "0"], Err("--count"))
add_cli("cli quiz --interview -1", ["quiz", "--topic", "01", "--seed", "1", "--interview", "-1"], Err("interview"))
add_cli("cli quiz --out x.pdf", ["quiz", "--topic", "01", "--seed", "1", "--out",
                                 os.path.join(tempfile.mkdtemp(), "x.pdf")], Err(".pdf"))


# ---- CLI ------------------------------------------------------------------------------------------------------
def one_line(r, *words):
    return r["rc"] == 2 and len(r["err"].strip().splitlines()) == 1 and all(w in r["err"] for w in words)


_FIT = ["fit", "llama-7b", "--gpu", "a100-80gb", "--count", "8"]
add_cli("cli fit --seq-len 0", _FIT + ["--seq-len", "0"], Err("seq_len"))
add_cli("cli fit --micro-batch 0 --min-gpus", _FIT + ["--micro-batch", "0", "--min-gpus"], Err("micro_batch"))
add_cli("cli fit 65b 4xV100 --host-ram-gib 0", ["fit", "llama-65b", "--gpu", "v100", "--count", "4",
                                               "--host-ram-gib", "0", "--json"],
        Ok(lambda r: r["rc"] == 0 and not json.loads(r["out"])["feasible"]
           and any("host RAM" in x["reason"] for x in json.loads(r["out"])["infeasible"])))
add_cli("cli fit --top -1", _FIT + ["--top", "-1"], Err("--top"))
add_cli("cli fit --seq-len <400 digits>", _FIT + ["--seq-len", "9" * 400], Err("seq_len"))
add_cli("cli fit --host-ram-gib inf", _FIT + ["--host-ram-gib", "inf"], Err("--host-ram-gib"))
add_cli("cli fit --host-ram-gib nan", _FIT + ["--host-ram-gib", "nan"], Err("--host-ram-gib"))
add_cli("cli estimate --zero-stage ³", ["estimate", "llama-7b", "--zero-stage", "³"], Err("zero_stage", "FULL_SHARD"))
add_cli("cli serve --context-len 100000 (text)", ["serve", "llama-2-7b", "--context-len", "100000"],
        Either(lambda r: r["rc"] == 0 and re.search(r"note: (WARNING: )?context_len 100,000 exceeds", r["out"]) is not None, "context"))
add_cli("cli fit --optimizer adam", _FIT + ["--optimizer", "adam"], Err("adamw"))
add_cli("cli estimate --seq-len 1e3", ["estimate", "llama-7b", "--seq-len", "1e3"], Err("--seq-len"))
add_cli("cli serve --count 3 (70B)", ["serve", "llama-2-70b", "--count", "3"], Err("tp 3"))
add_cli("cli estimate (no model)", ["estimate"], Err("exactly one"))
add_cli("cli estimate --hf-config /nonexistent", ["estimate", "--hf-config", "/nonexistent"], Err("config.json"))
add_cli("cli estimate --lora-rank 8 (full)", ["estimate", "llama-7b", "--lora-rank", "8"], Err("--lora-rank"))
add_cli("cli fit --count 0", ["fit", "llama-7b", "--gpu", "a100", "--count", "0"], Err("count"))
add_cli("cli unknown subcommand", ["nope"], Err("invalid choice"))
add_cli("cli estimate gpt-3-175b --json", ["estimate", "gpt-3-175b", "--seq-len", "512", "--json"],
        Ok(lambda r: r["rc"] == 0 and json.loads(r["out"])["peak_bytes"] > 0), TRAINING_OWNER)
add_cli("cli fit --deepspeed, nothing fits", ["fit", "llama-65b", "--gpu", "v100", "--count", "4", "--no-offload",
                                              "--deepspeed"],
        Ok(lambda r: r["rc"] == 0 and "No DeepSpeed config" in r["out"]))


# ---- the runner ------------------------------------------------------------------------------------------------
def classify(expect, got):
    """got: ("ok", value) | ("value_error", msg) | ("exception", "Type: msg")."""
    kind, value = got
    if kind == "ok" and isinstance(value, dict) and value.get("cli"):
        r = value
        if r["rc"] == 2:
            lines = r["err"].strip().splitlines()
            if len(lines) != 1 or "Traceback" in r["err"]:
                return "traceback", r["err"].strip()[-200:]
            msg = lines[0]
            kind, value = "value_error", msg
        elif r["rc"] != 0:
            return "traceback", f"exit {r['rc']}: {r['err'].strip()[-200:]}"
        else:
            value = r
    if kind == "exception":
        return "traceback", value
    if kind == "value_error":
        words = getattr(expect, "words", None)
        if BUILTIN.search(value):
            return "unclear error", value
        if isinstance(expect, Ok):
            return "clear error", value  # refused what should work: shown as a clear error, flagged by "expected"
        if words and not all(w in value for w in words):
            return "unclear error", value + f"  [missing {[w for w in words if w not in value]}]"
        return "clear error", value
    # a result
    if isinstance(expect, Err):
        return "silent wrong number", f"accepted: {str(value)[:150]}"
    try:
        good = expect.check(value)
    except Exception as e:  # the check itself tripping on the result is a wrong result
        return "silent wrong number", f"check raised {type(e).__name__}: {e}"
    return ("correct result", str(value)[:150]) if good else ("silent wrong number", str(value)[:150])


def _child(i, conn):
    kind_, owner, thunk, expect = CASES[i]
    t0 = time.perf_counter()
    try:
        out = ("ok", thunk())
    except ValueError as e:
        out = ("value_error", str(e))
    except BaseException as e:  # noqa: BLE001 - classifying every failure is the point
        out = ("exception", f"{type(e).__name__}: {str(e)[:200]}")
    dt = time.perf_counter() - t0
    outcome, msg = classify(expect, out)
    conn.send((outcome, " ".join(str(msg).split())[:160], dt))
    conn.close()


def run_one(i):
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_child, args=(i, child))
    t0 = time.perf_counter()
    p.start()
    child.close()
    if parent.poll(LIMIT_S):
        outcome, msg, dt = parent.recv()
        p.join()
        return outcome, msg, dt
    p.kill()
    p.join()
    return "hang", f"still running after {LIMIT_S:.0f} s", time.perf_counter() - t0


def expected_class(expect):
    return {Err: "clear error", Ok: "correct result", Either: "error or result"}[type(expect)]


def main_(argv=None):
    only_bad = "--bad" in (argv or sys.argv[1:])
    rows = []
    for i, (kind, owner, _, expect) in enumerate(CASES):
        outcome, msg, dt = run_one(i)
        rows.append((kind, owner, expected_class(expect), outcome, dt, msg))
    good = ("clear error", "correct result")
    print(f"{'#':>3}  {'input kind':<46} {'outcome':<20} {'ms':>7}  {'owner if bad':<22} message")
    for n, (kind, owner, exp, outcome, dt, msg) in enumerate(rows, 1):
        bad = outcome not in good or (exp == "correct result" and outcome != "correct result")
        if only_bad and not bad:
            continue
        print(f"{n:>3}  {kind:<46} {outcome:<20} {dt * 1000:>7.1f}  {(owner if bad else ''):<22} {msg[:110]}")
    print()
    counts: dict[str, int] = {}
    for r in rows:
        counts[r[3]] = counts.get(r[3], 0) + 1
    print(f"{len(rows)} input kinds: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])))
    bad_rows = [r for r in rows if r[3] not in good or (r[2] == "correct result" and r[3] != "correct result")]
    by_owner: dict[str, int] = {}
    for r in bad_rows:
        by_owner[r[1]] = by_owner.get(r[1], 0) + 1
    print("not right, by owner: " + (", ".join(f"{k}: {v}" for k, v in by_owner.items()) or "none"))
    print(f"slowest: {max(rows, key=lambda r: r[4])[0]} {max(r[4] for r in rows) * 1000:.0f} ms")
    return 1 if any(r[1] == "mine" for r in bad_rows) else 0


if __name__ == "__main__":
    sys.exit(main_())
