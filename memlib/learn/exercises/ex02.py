"""Exercises for notebook 02: what one GPU can train or serve (A100 80GB, RTX 4090), 8-bit
optimizers, ZeRO on one GPU, what offload sends over PCIe, the KV cache, and the questions to ask back
first."""

from __future__ import annotations

import random

from memlib.learn.exercises._common import b, fits, md_table, n_params, only_fitting, peak_rows, states, verdict
from memlib.learn.exercises.kinds import (Choice, Figure, Implement, MultiChoice, Numeric, Option, SelfAssessed, Slip,
                                    SpotError)
from memlib.hardware.gpus import get_gpu
from memlib.serving.inference import estimate_inference, gqa_kv_bytes_per_token, kv_bytes_per_token
from memlib.models import get_model
from memlib.training.optimizers import adamw_8bit_state_bytes
from memlib.cost.timing import step_time
from memlib.training import estimate_training
from memlib.hardware.fit import largest_size_that_fits
from memlib.units import gib

NOTEBOOK = "02_single_gpu_limits"


def _8bit_states(model: str) -> int:
    return sum(adamw_8bit_state_bytes(t.numel) * t.count for t in get_model(model).tensors())


def _4090(**kw):
    return lambda: estimate_training("llama-2-7b", recompute="full", **kw)


_4090_LAYOUTS = {"a": _4090(precision="bf16-mixed"), "b": _4090(precision="bf16"),
                 "c": _4090(precision="bf16", optimizer="adamw-8bit"),
                 "d": _4090(precision="bf16", finetune="lora", lora_rank=16, lora_targets="qv")}

_KV_FORMAT = {2: "bf16", 1: "fp8"}


def _kv(k: dict) -> int:
    """memlib.serving.inference.kv_bytes_per_token x tokens for the shape in the implement exercise's arguments."""
    per_token = gqa_kv_bytes_per_token(k["layers"], k["kv_heads"], k["head_dim"], _KV_FORMAT[k["dtype_bytes"]])
    return per_token * k["batch"] * k["context"]


def _kv_case(name: str, dtype_bytes: int, batch: int, context: int) -> dict:
    m = get_model(name)
    return dict(layers=m.num_layers, kv_heads=m.num_kv_heads, head_dim=m.head_dim, dtype_bytes=dtype_bytes,
                batch=batch, context=context)


def _random_kv_case(rng: random.Random) -> dict:
    return dict(layers=rng.randint(2, 96), kv_heads=rng.choice((1, 2, 4, 8, 16, 32, 64)),
                head_dim=rng.choice((64, 80, 96, 128, 256)), dtype_bytes=rng.choice((1, 2)),
                batch=rng.randint(1, 64), context=rng.choice((512, 1000, 2048, 4096, 8192, 32768)))


def _kv_total(model: str, fmt: str, batch: int, ctx: int, mha: bool = False) -> int:
    m = get_model(model)
    if mha:
        m = m.with_(num_kv_heads=0)
    return kv_bytes_per_token(m, fmt) * batch * ctx


# "Fine-tune LLaMA-13B on one A100 80GB": the most likely recipe, and each question's other answer.
_ASK_BASE = dict(finetune="lora", lora_rank=16, lora_targets="qv", precision="bf16", seq_len=2048, micro_batch=1)
_ASK = {  # option -> (setup if the answer is the usual one, setup if it is the other, GPU for each)
    "a": (dict(), dict(finetune="full", precision="bf16-mixed"), "a100-80gb", "a100-80gb"),
    "b": (dict(), dict(seq_len=16384), "a100-80gb", "a100-80gb"),
    "c": (dict(), dict(), "a100-80gb", "a100-80gb"),  # dataset size: the same step
    "d": (dict(), dict(), "a100-80gb", "rtx-4090"),
    "e": (dict(), dict(), "a100-80gb", "a100-80gb"),  # epochs: the same step
    "f": (dict(), dict(), "a100-80gb", "a100-80gb"),  # interconnect: one GPU, nothing to connect
}


def _limit_at_peak(impl: str) -> int:
    """02.1's reconciliation with the chapter: the largest LLaMA-like shape whose whole step (activations, the
    optimizer's temporaries, torch's view of the card, fits()' headroom) fits an A100 80GB, with torch's AdamW
    `impl` ('foreach' or 'fused'), one 2,048-token sequence (notebook 02, steps 2 and 4)."""
    return largest_size_that_fits("a100-80gb", lambda m: estimate_training(m, 2048, 1, optimizer_impl=impl)).num_params


def _said(n: int) -> str:
    """A parameter count as notebook 02 says it, 2 significant figures ('4B', '4.8B')."""
    return f"{float(f'{n / 1e9:.2g}'):g}B"


def _ask_verdicts(key: str) -> tuple[bool, bool]:
    usual, other, gpu1, gpu2 = _ASK[key]
    return (fits(estimate_training("llama-13b", **_ask_setup(usual)), gpu1).fits,
            fits(estimate_training("llama-13b", **_ask_setup(other)), gpu2).fits)


def _ask_setup(change: dict) -> dict:
    """_ASK_BASE with one answer's change; a full fine-tune drops the LoRA options (they would not apply)."""
    setup = {**_ASK_BASE, **change}
    if setup["finetune"] == "full":
        setup = {k: v for k, v in setup.items() if k not in ("lora_rank", "lora_targets")}
    return setup


def _offload7b(accum: int = 8):
    """ZeRO-Offload of LLaMA-7B on one A100 80GB: estimate and memlib.step_time."""
    e = estimate_training("llama-7b", recompute="full", zero_stage=2, offload="optimizer", grad_accum=accum)
    return e, step_time(e, "a100-80gb")


def _ask_right() -> frozenset:
    return frozenset(k for k in _ASK if len(set(_ask_verdicts(k))) == 2)


EXERCISES = [
    Numeric(
        id="02.1", title="The largest model an A100 80GB can fully fine-tune", difficulty="warm-up", minutes=5,
        formula="model states of mixed-precision AdamW: 16 bytes/param (ZeRO paper, K = 12; memlib.parallel.zero)",
        prompt="Ignoring activations, the CUDA context and fragmentation, what is the largest number of parameters "
               "whose mixed-precision AdamW model states (16 bytes/param) fit in one A100 80GB (80 GiB)? Answer as a "
               "parameter count, e.g. `\"3.2B\"`.",
        expected=lambda: get_gpu("a100-80gb").memory_bytes / (states("llama-7b") / n_params("llama-7b")),
        unit="params",
        slips=(Slip("GB for GiB", lambda: 80e9 / (states("llama-7b") / n_params("llama-7b")),
                    "you divided 80 GB; an A100 80GB holds 80 GiB"),
               Slip("forgot the fp32 master copy", lambda: get_gpu("a100-80gb").memory_bytes / 12,
                    "12 bytes/param leaves out the fp32 master copy"),
               Slip("pure bf16", lambda: get_gpu("a100-80gb").memory_bytes / 8,
                    "8 bytes/param is pure bf16 AdamW, not mixed precision")),
        hints=("Turn the question around: the capacity is fixed, each parameter costs a fixed number of bytes.",
               "num_params = capacity in bytes / bytes per parameter = 80 x 2³⁰ / 16.",
               "Compute the capacity in bytes first (80 GiB), then divide."),
        worked=lambda: (lambda per: f"{get_gpu('a100-80gb').memory_bytes:,} bytes / {per:g} bytes/param = **"
                        f"{get_gpu('a100-80gb').memory_bytes / per / 1e9:.2f}B parameters**: a 7B does not fit with "
                        "plain mixed-precision AdamW, before any activation; the seed's \"7B fits with tricks\" needs "
                        "exactly those tricks.\n\nThis is the bound on the states alone. Notebook 02's \"about "
                        f"{_said(_limit_at_peak('foreach'))}\" is the bound on the whole step: torch sees less than "
                        "80 GiB, fits() keeps headroom, and torch's foreach AdamW adds a copy of v at the step (4 more "
                        f"bytes/param, 20 in all). With fused AdamW (HF Trainer's default on torch >= 2.8) the step "
                        f"adds nothing and the limit is about {_said(_limit_at_peak('fused'))}, set by the backward's "
                        "activations.")(states("llama-7b") / n_params("llama-7b")),
    ),
    SpotError(
        id="02.2", title="8-bit Adam: what is 28GB?", difficulty="interview", minutes=8,
        formula="8-bit AdamW states: 2 bytes/param + one fp32 absmax per 256 (memlib.training.optimizers)",
        prompt="About 8-bit AdamW (bitsandbytes) for a 7B model. Find the error and give the right size of what "
               "the parenthesis says it holds (the fp32 weight copy plus the 8-bit states) for LLaMA-7B.",
        quote="更激进：用 bitsandbytes 的 8-bit Adam，将优化器状态压缩到 2 bytes 每参数，即 7B × 2 × 2 = 28GB（参数 FP32 副本 + "
              "8-bit 状态）。总显存：14 + 14 + 28 + 3 = 59GB，可放入 80GB。",
        source="seed 001 (想要训练1个LLM，如果只想用1张显卡，那么对显卡的要求是什么), 标准答",
        figures=(Figure("2 bytes", "right", "right: two 1-byte states (plus a small absmax per 256 values)"),
                 Figure("14", "right", "7B x 2 bytes: right for 16-bit weights and gradients"),
                 Figure("28GB", "error", "7B x 2 x 2 is 4 bytes/param: the fp32 copy alone; the 8-bit states add ~2 "
                                         "more"),
                 Figure("59GB", "inherits", "the total inherits the 28GB error"),
                 Figure("80GB", "right", "the A100's capacity")),
        expected=lambda: 4 * n_params("llama-7b") + _8bit_states("llama-7b"),
        slips=(Slip("fp32 copy only", lambda: 4 * n_params("llama-7b"),
                    "that is the fp32 copy alone, without the 8-bit states"),
               Slip("states only", lambda: _8bit_states("llama-7b"),
                    "that is the 8-bit states alone, without the fp32 copy")),
        hints=("8-bit Adam shrinks momentum and variance, not the fp32 copy of the weights that mixed precision "
               "updates.",
               "fp32 copy: 4 bytes/param; 8-bit m and v: 1 byte each, plus one fp32 absmax per block of 256 values.",
               "Ask what 7B x 2 x 2 bytes actually counts, then add what the parenthesis also names."),
        worked=lambda: (f"**28GB** is 4 bytes/param: exactly the fp32 copy ({b(4 * n_params('llama-7b'))}). The 8-bit "
                        f"states add {b(_8bit_states('llama-7b'))} (`memlib.training.optimizers.adamw_8bit_state_bytes`, per "
                        f"tensor): together **{b(4 * n_params('llama-7b') + _8bit_states('llama-7b'))}**, so the seed's "
                        "59GB total is about 14 GB short."),
    ),
    SpotError(
        id="02.3", title="ZeRO-1 on one GPU", difficulty="interview", minutes=5,
        formula="ZeRO partitioning divides by the data-parallel degree (memlib.parallel.zero.zero_model_state_bytes)",
        prompt="Find the error and give the optimizer-state bytes (fp32 master, momentum, variance) of LLaMA-7B "
               "under ZeRO-1 on a single GPU.",
        quote="实际中，单卡用 ZeRO-1 可将优化器状态从 84GB 降到 28GB（仅存参数 FP32 副本 + 1 个 momentum 或 variance，取决于实现）。",
        source="seed 001, 标准答 (优化手段)",
        figures=(Figure("84GB", "right", "7B x 12 bytes: right for fp32 master, momentum and variance"),
                 Figure("28GB", "error", "ZeRO partitions over data-parallel ranks; with one GPU there is nothing to "
                                         "partition, and no implementation drops Adam's momentum or variance")),
        expected=lambda: states("llama-7b", 1, 1, working_bytes=0),
        slips=(Slip("divided by 3", lambda: states("llama-7b", 1, 1, working_bytes=0) / 3,
                    "ZeRO divides by the number of data-parallel GPUs, here 1, not by 3"),),
        hints=("ZeRO = Zero *Redundancy* Optimizer: it removes copies that several GPUs would each keep.",
               "Optimizer states per GPU under ZeRO-1 = 12 bytes/param x num_params / dp.",
               "What is dp on a single GPU?"),
        worked=lambda: (f"**28GB** is wrong: ZeRO-1 divides optimizer states by dp = 1, so they stay "
                        f"**{b(states('llama-7b', 1, 1, working_bytes=0))}** "
                        "(`zero.zero_model_state_bytes(n, 1, 1, working_bytes=0)`); `memlib.estimate_training(..., "
                        "zero_stage=1, dp=1)` equals plain training."),
    ),
    Choice(
        id="02.4", title="ZeRO-3 with one GPU", difficulty="warm-up", minutes=3,
        formula="ZeRO partitioning divides by the data-parallel degree (memlib.parallel.zero.zero_model_state_bytes)",
        prompt="You enable DeepSpeed ZeRO stage 3 on a single GPU (no offload). Compared with plain training on that "
               "GPU, the peak memory…",
        options=(Option("a", "drops to about a third", "ZeRO divides by the data-parallel degree, here 1",
                        misconception="ZeRO-3 shards three kinds of state, so it divides memory by three"),
                 Option("b", "drops like ZeRO-1's: optimizer states only", "with one rank there is nothing to "
                        "partition at any stage", misconception="ZeRO compresses the optimizer states"),
                 Option("c", "does not change: with one rank nothing is partitioned",
                        "ZeRO removes redundancy across data-parallel ranks; one rank has none (offload is another "
                        "matter)"),
                 Option("d", "grows because of communication buffers", "memlib models no buffers for a world of one",
                        misconception="sharding always costs memory for communication buffers")),
        right=lambda: (lambda p0, p3: "c" if p3 == p0 else ("d" if p3 > p0 else ("a" if p3 < 0.5 * p0 else "b")))(
            estimate_training("llama-7b", zero_stage=0).peak_bytes,
            estimate_training("llama-7b", zero_stage=3, dp=1).peak_bytes),
        hints=("ZeRO = Zero *Redundancy* Optimizer: redundancy between whom?",
               "Each stage divides some states by dp, the number of data-parallel GPUs.",
               "Set dp = 1 in 2ψ/dp + 2ψ/dp + 12ψ/dp."),
        worked=lambda: (f"**(c)**: `estimate_training('llama-7b', zero_stage=3, dp=1).peak_bytes` = "
                        f"{b(estimate_training('llama-7b', zero_stage=3, dp=1).peak_bytes)}, the same as without ZeRO. "
                        "On one GPU only offload (ZeRO-Offload/Infinity) saves GPU memory."),
    ),
    Implement(
        id="02.5", title="KV-cache bytes", difficulty="interview", minutes=8,
        formula="KV cache = 2 x layers x kv_heads x head_dim x bytes x tokens (memlib.serving.inference.kv_bytes_per_token)",
        prompt="Write `kv_cache_bytes(layers, kv_heads, head_dim, dtype_bytes, batch, context)` returning the bytes of "
               "the KV cache for `batch` sequences of `context` tokens. Tested against "
               "`memlib.serving.inference.kv_bytes_per_token(model, kv_cache) * batch * context` for LLaMA-7B, Llama-2-70B "
               "(GQA), Llama-3-8B and Qwen2-7B in 16-bit and fp8 (full-attention models: a sliding-window model such as Mistral-7B v0.1 caps its cache at the window), and on shapes drawn at random each "
               "time you check.",
        function_name="kv_cache_bytes", reference_name="memlib.serving.inference.kv_bytes_per_token x tokens",
        cases=lambda: [_kv_case("llama-7b", 2, 8, 2048), _kv_case("llama-2-70b", 2, 1, 4096),
                       _kv_case("qwen2-7b", 1, 4, 32768), _kv_case("llama-3-8b", 2, 16, 8192),
                       _kv_case("qwen2-7b", 2, 2, 32768)],
        held_out=lambda rng: [_random_kv_case(rng) for _ in range(3)],
        reference=_kv,
        slips=(Slip("K only", lambda k, w: w / 2, "both K and V are cached: a factor 2"),
               Slip("one layer", lambda k, w: w / k["layers"], "every layer has its own cache: multiply by layers"),
               Slip("elements", lambda k, w: w / k["dtype_bytes"], "you counted elements; multiply by dtype_bytes")),
        hints=("Each generated token leaves its key and value vectors in every layer, for every sequence.",
               "Per token and layer: K and V, each kv_heads x head_dim values of dtype_bytes.",
               "Write per_token = 2 * layers * kv_heads * head_dim * dtype_bytes first."),
        worked=lambda: ("```python\ndef kv_cache_bytes(layers, kv_heads, head_dim, dtype_bytes, batch, context):\n"
                        "    return 2 * layers * kv_heads * head_dim * dtype_bytes * batch * context\n```\n\n"
                        f"Llama-2-70B in bf16: {kv_bytes_per_token(get_model('llama-2-70b'), 'bf16'):,} bytes per token "
                        f"(8 KV heads); with 64 it would be "
                        f"{kv_bytes_per_token(get_model('llama-2-70b').with_(num_kv_heads=0), 'bf16'):,}."),
    ),
    Numeric(
        id="02.6", title="KV cache of Llama-2-70B at batch 16", difficulty="interview", minutes=6,
        formula="KV cache = 2 x layers x kv_heads x head_dim x bytes x tokens (memlib.serving.inference.kv_bytes_per_token)",
        prompt="Llama-2-70B (80 layers, 64 query heads, 8 key/value heads, head_dim 128) serves 16 sequences of 4,096 "
               "tokens with a bf16 KV cache. How large is the cache **for all 16 sequences together** (one copy, no "
               "tensor parallelism)?",
        expected=lambda: _kv_total("llama-2-70b", "bf16", 16, 4096), count=16, per="total",
        count_unit=("sequence", "sequences"),
        slips=(Slip("no GQA", lambda: _kv_total("llama-2-70b", "bf16", 16, 4096, mha=True),
                    "you cached 64 heads; Llama-2-70B uses grouped-query attention with 8 KV heads"),
               Slip("K only", lambda: _kv_total("llama-2-70b", "bf16", 16, 4096) / 2, "both K and V are cached")),
        hints=("The KV cache grows with every token of every sequence in the batch.",
               "bytes = 2 x layers x kv_heads x head_dim x 2 bytes, per token; x batch x context.",
               "Use the 8 KV heads, not the 64 query heads: grouped-query attention caches only the KV heads."),
        worked=lambda: (f"{kv_bytes_per_token(get_model('llama-2-70b'), 'bf16'):,} bytes/token "
                        f"(`memlib.serving.inference.kv_bytes_per_token`) x 16 x 4,096 = "
                        f"**{b(_kv_total('llama-2-70b', 'bf16', 16, 4096))}**; without GQA it would be 8x."),
    ),
    Numeric(
        id="02.7", title="Serving Llama-3-8B in bf16: the weights", difficulty="warm-up", minutes=3,
        formula="weights = num_params x bytes per element (Model.num_params)",
        prompt="How much memory do the weights of Llama-3-8B take when served in bf16? (Its vocabulary has 128,256 "
               "tokens and its lm_head is not tied to the embedding.)",
        expected=lambda: estimate_inference("llama-3-8b", weights="bf16").weight_bytes, unit="GB",
        slips=(Slip("fp32", lambda: 2 * estimate_inference("llama-3-8b", weights="bf16").weight_bytes,
                    "4 bytes per parameter is fp32; bf16 is 2"),
               Slip("no embedding", lambda: estimate_inference("llama-3-8b", weights="bf16").weight_bytes
                    - 2 * 2 * get_model("llama-3-8b").vocab_size * get_model("llama-3-8b").hidden_size,
                    "the embedding and the lm_head (128,256 x 4,096 each) are weights too")),
        close_advice="use the exact parameter count (memlib.get_model('llama-3-8b').num_params), not the nominal 8B",
        hints=("Serving keeps only the weights (plus the KV cache and a little workspace): no gradients, no "
               "optimizer.",
               "bytes = num_params x 2 in bf16.",
               "Take the exact count from memlib.get_model('llama-3-8b').num_params; the big vocabulary counts twice."),
        worked=lambda: (f"{n_params('llama-3-8b'):,} parameters x 2 bytes = "
                        f"**{b(estimate_inference('llama-3-8b', weights='bf16').weight_bytes)}** "
                        "(`estimate_inference(...).weight_bytes`); the 128K vocabulary makes embedding + head "
                        f"{b(4 * get_model('llama-3-8b').vocab_size * get_model('llama-3-8b').hidden_size)} of it."),
    ),
    Choice(
        id="02.8", title="Fine-tune Llama-2-7B on an RTX 4090", difficulty="interview", minutes=8,
        formula="does it fit: per-GPU peak + CUDA context + headroom vs capacity (memlib.fits)",
        prompt="You have one RTX 4090 (24GB) and want to fine-tune Llama-2-7B at sequence 2048, micro-batch 1, full "
               "recompute. Which of these fits (memlib.fits)?",
        options=(Option("a", "full fine-tuning, bf16-mixed AdamW", "16 bytes/param of states for 6.7B parameters",
                        misconception="recompute and a small batch make any 7B fit a 24GB card"),
                 Option("b", "full fine-tuning, pure bf16 AdamW", "8 bytes/param for 6.7B parameters is still about "
                        "twice the card", misconception="pure bf16 halves mixed precision, which must be enough"),
                 Option("c", "full fine-tuning, pure bf16 with 8-bit AdamW", "weights and gradients alone are 4 "
                        "bytes/param, and the 8-bit states add 2 more",
                        misconception="an 8-bit optimizer makes full fine-tuning as cheap as the weights"),
                 Option("d", "LoRA r=16 on q_proj and v_proj over a frozen bf16 base", "the base costs 2 bytes/param; "
                        "gradients and states exist only for the adapters", "1")),
        reasons=(Option("1", "full fine-tuning keeps gradients and optimizer states for every parameter: even 8-bit "
                             "states leave more than 24 GiB; LoRA keeps them only for the adapters"),
                 Option("2", "recompute removes enough activations for any of them", "recompute trims activations, "
                        "not model states"),
                 Option("3", "pure bf16 halves mixed precision, which is enough", "half of 16 bytes/param x 6.7B is "
                        "still about twice a 4090")),
        right=lambda: only_fitting(_4090_LAYOUTS, "rtx-4090"),
        hints=("Model states, not activations, decide here: which options keep gradients and optimizer states for "
               "every parameter?",
               "Bytes per parameter: (a) 16, (b) 8, (c) 2 + 2 + ~2, (d) 2 for the frozen base + small adapters.",
               "Multiply each by 6.7B and compare with 24 GiB (about 25.8 GB)."),
        worked=lambda: ("Per GPU (memlib.estimate_training + memlib.fits on rtx-4090):\n\n"
                        + peak_rows(_4090_LAYOUTS, "rtx-4090") + "\n\nOnly LoRA fits; QLoRA would leave even more room."),
    ),
    SelfAssessed(
        id="02.9", title="Full fine-tuning a 13B on one A100 80GB", difficulty="stretch", minutes=12,
        formula="a plan: which term each remedy shrinks or moves (memlib.estimate_training, memlib.fits)",
        prompt="Someone must fully fine-tune LLaMA-13B on one A100 80GB (plenty of host RAM). What are the options, "
               "what does each need, and which would you pick? Then mark your answer against the rubric.",
        rubric=("Plain mixed-precision AdamW needs 16 bytes/param (~208 GB for 13B): it cannot stay on the GPU",
                "ZeRO-Offload: optimizer states, fp32 master and gradients on the CPU, with ~16 bytes/param of "
                "host RAM",
                "The cost of offload: PCIe traffic and a CPU Adam step, so lower throughput",
                "Pure bf16 with an 8-bit optimizer fits without a host, at a precision cost (no fp32 master; "
                "Kahan summation or stochastic rounding help)",
                "Recompute (gradient checkpointing) to keep the activations small",
                "LoRA/QLoRA as the alternative when 'full' is negotiable"),
        hints=("13B x 16 bytes/param is ~208 GB: which tricks divide it, which move it elsewhere?",
               "Offload moves 12-16 bytes/param to the host; pure bf16 + 8-bit AdamW keeps ~6 bytes/param on the GPU.",
               "List each option with its per-GPU peak (memlib.estimate_training) and its cost."),
        worked=lambda: ("Per GPU on a100-80gb (memlib):\n\n" + md_table(("layout", "per-GPU peak", "verdict", "host"), [
            (label, f"{gib(e.peak_bytes):.1f} GiB", verdict(e, "a100-80gb"), b(e.host_bytes) if e.host_bytes else "-")
            for label, e in (("bf16-mixed AdamW", estimate_training("llama-13b", recompute="full")),
                             ("8-bit AdamW, bf16-mixed", estimate_training("llama-13b", recompute="full",
                                                                           optimizer="adamw-8bit")),
                             ("pure bf16 + 8-bit AdamW", estimate_training("llama-13b", recompute="full", precision="bf16",
                                                                          optimizer="adamw-8bit")),
                             ("ZeRO-Offload (optimizer on CPU)", estimate_training("llama-13b", recompute="full",
                                                                                   zero_stage=2, offload="optimizer")),
                             ("LoRA r=16 (q,v), bf16 base", estimate_training("llama-13b", recompute="full",
                                                                             finetune="lora", precision="bf16",
                                                                             lora_rank=16, lora_targets="qv")))])
            + "\n\nZeRO-Offload keeps full mixed precision and fits with room for larger batches, at the cost of "
              "PCIe traffic and a CPU Adam step each iteration; pure bf16 + 8-bit AdamW fits without a host but "
              "loses small updates; LoRA is the cheap answer when 'full' is negotiable."),
    ),
    MultiChoice(
        id="02.10", title="Which questions change the verdict?", difficulty="interview", minutes=8,
        formula="clarifying questions: which setup choices change memlib.fits (memlib.estimate_training options)",
        prompt="A manager asks: \"Can we fine-tune LLaMA-13B on our A100 80GB?\" You assume the usual recipe (LoRA "
               "r=16 on q_proj and v_proj over a bf16 base, sequence 2048, micro-batch 1, no recompute). Which of "
               "these questions, asked back, could turn memlib's verdict (memlib.fits) from *fits* to *does not fit* "
               "or back, if the answer is the one in brackets?",
        options=(Option("a", "Full fine-tuning or LoRA? (full fine-tuning, bf16-mixed AdamW)",
                        "full fine-tuning adds gradients and AdamW states for every parameter"),
                 Option("b", "How long are the training sequences? (16,384 tokens)",
                        "activations grow with the tokens in flight: 8x the tokens is far more than the base model"),
                 Option("c", "How large is the dataset? (1 million examples instead of 10,000)",
                        "the dataset streams from disk or host RAM; only one micro-batch is on the GPU at a time",
                        misconception="more training data needs more GPU memory"),
                 Option("d", "Is it really an A100 80GB? (an RTX 4090 24GB)",
                        lambda: f"a bf16 13B base alone is {b(2 * n_params('llama-13b'))}: more than a 24GB card"),
                 Option("e", "How many epochs? (3 instead of 1)", "every epoch repeats the same steps",
                        misconception="training longer needs more memory"),
                 Option("f", "Is there NVLink between the GPUs? (no, PCIe only)", "with one GPU there is nothing to "
                        "connect; the link changes speed across GPUs, never what fits on one",
                        misconception="the interconnect decides whether a model fits")),
        right=_ask_right,
        hints=("Memory is decided by what one step holds on the GPU; how long you train or what the data looks like "
               "on disk does not enter.",
               "A question matters when its answer changes bytes/param (what is trained, precision), tokens in flight "
               "(sequence x micro-batch), or the capacity.",
               "For each option ask: does the other answer change a memlib.estimate_training argument or the GPU?"),
        worked=lambda: ("memlib.fits for the usual recipe and for each question's other answer:\n\n" + md_table(
            ("question", "usual answer", "other answer", "changes the verdict?"),
            [(f"({k})", *("fits" if v else "does not fit" for v in _ask_verdicts(k)),
              "**yes**" if len(set(_ask_verdicts(k))) == 2 else "no") for k in _ASK])
            + "\n\nAsk first about what is trained, the sequence length (and micro-batch) and the GPU; dataset size, "
              "epochs and the interconnect change the time, not whether one step fits."),
    ),
    Numeric(
        id="02.11", title="What ZeRO-Offload sends over PCIe", difficulty="interview", minutes=6,
        formula="ZeRO-Offload traffic per step, k micro-batches: the 16-bit gradient partition down after micro-batches "
                "1..k-1 and back up before 2..k, the fp32 sum down at the k-th, 16-bit weights up once: 4k + 2 "
                "bytes/param (memlib.cost.timing.zero_offload_traffic_bytes; DeepSpeed stage_1_and_2.py)",
        prompt="LLaMA-7B full fine-tuning on one A100 80GB with ZeRO-Offload (`zero_stage=2, offload=\"optimizer\"`: "
               "fp32 master weights, Adam states and fp32 gradients on the CPU), 8 micro-batches of one 2,048-token "
               "sequence per optimizer step, as DeepSpeed runs it (stage_1_and_2.py, gradient accumulation on). How many "
               "bytes cross the PCIe link **per optimizer step** (`memlib.step_time(...).offload_bytes`)?",
        expected=lambda: _offload7b()[1].offload_bytes, unit="GB", count=8, per="total",
        count_unit=("micro-batch", "micro-batches"),
        slips=(Slip("gradients once per step", lambda: 6 * n_params("llama-7b"),
                    "with 8 micro-batches DeepSpeed does not keep the gradients on the GPU between micro-batches: "
                    "each micro-batch's 16-bit gradient goes to a pinned 16-bit CPU buffer and comes back to be added"),
               Slip("16-bit gradients down, accumulated on the CPU", lambda: 8 * 2 * n_params("llama-7b")
                    + 2 * n_params("llama-7b"),
                    "DeepSpeed adds on the GPU (async_accumulate_grad_in_cpu_via_gpu): the running sum comes back up "
                    "before each later micro-batch's gradient is added, and the last sum goes down in fp32"),
               Slip("gradients only", lambda: 32 * n_params("llama-7b"),
                    "the updated 16-bit weights also come back up to the GPU once per step")),
        hints=("Ask what crosses the link and how often, as DeepSpeed's copy_grads_in_partition does it: the running "
               "gradient sum after each backward, and the weights after each optimizer step.",
               "Micro-batches 1..7: 16-bit sum down (2 B); micro-batches 2..8: the sum back up to add to (2 B); "
               "micro-batch 8: the sum down in fp32 (4 B); weights up (2 B).",
               "Take the exact count from memlib.get_model('llama-7b').num_params; there are 8 micro-batches."),
        worked=lambda: (lambda e, t: (
            f"(2 x 7 down + 2 x 7 up + 4 fp32 down + 2 weights up) = 34 bytes x {n_params('llama-7b'):,} = "
            f"**{b(t.offload_bytes)}** per step (`memlib.step_time(...).offload_bytes`; DeepSpeed's "
            f"async_accumulate_grad_in_cpu_via_gpu and async_inplace_copy_grad_to_fp32_buffer_from_gpu), "
            f"{t.offload_s:.2f} s at the A100 host link. The CPU-Adam step "
            f"({t.cpu_optimizer_s:.2f} s) is paid once per optimizer step and shrinks relative to compute as the "
            f"micro-batches grow; the gradient traffic does not: at one micro-batch the link carries "
            f"{b(_offload7b(1)[1].offload_bytes)} (6 bytes/param: fp32 gradients down, weights up)."))(*_offload7b()),
    ),
]
