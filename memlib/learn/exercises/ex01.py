"""Exercises for notebook 01: can you fully fine-tune a 65B on 4x V100 32GB? Model states under
ZeRO, what the circulating answer gets wrong, which layout fits, and what it costs in host RAM
and time."""

from __future__ import annotations

import math
import random
from functools import lru_cache

from memlib.learn.exercises._common import b, fits, n_params, only_fitting, peak_rows, states
from memlib.learn.exercises.kinds import Choice, Figure, Implement, Numeric, Option, SelfAssessed, Slip, SpotError
from memlib.hardware.gpus import get_gpu
from memlib.models import get_model
from memlib.cost.timing import DEFAULT_HFU, flops_per_token, palm_flops_per_token, step_time
from memlib.training import estimate_training
from memlib.units import gb, gib

NOTEBOOK = "01_65b_on_4x_v100"
_65 = "llama-65b"  # seed 000's "Vicuna-65B": LMSYS released no 65B Vicuna; a Vicuna-style SFT of LLaMA-65B


_33 = "llama-33b"  # a second size, so that 01.8 asks for a figure notebook 01 does not print


def _v100_layout(model: str = _65, **kw):
    return lambda: estimate_training(model, precision="fp16-mixed", recompute="full", **kw)


_LAYOUTS = {"a": _v100_layout(zero_stage=3, dp=4), "b": _v100_layout(tp=4), "c": _v100_layout(pp=4),
            "d": _v100_layout(zero_stage=3, dp=4, offload="optimizer"),
            "e": _v100_layout(zero_stage=3, dp=4, offload="optimizer+params")}
# notebook 01's QLoRA recipe (Dettmers et al. 2023, App. B; artidoro/qlora qlora.py): r=64 on every linear layer,
# dropout 0.05 for 65B, paged 32-bit AdamW (one fused kernel)
_QLORA_RECIPE = dict(lora_rank=64, lora_targets="all-linear", lora_dropout=0.05, optimizer_impl="fused")
_LAYOUTS_33 = {"d": _v100_layout(_33, zero_stage=3, dp=4, offload="optimizer"),
               "e": _v100_layout(_33, zero_stage=3, dp=4, offload="optimizer+params")}


def _gpus_for_states(gpu_bytes: float, **kw) -> int:
    return math.ceil(states(_65, **kw) / gpu_bytes)


def _flops(k: dict) -> float:
    """memlib.cost.timing.flops_per_token for the shape in the implement exercise's arguments."""
    return palm_flops_per_token(k["num_params"], k["layers"], k["heads"], k["head_dim"], k["seq_len"],
                                k["recompute"])


def _flops_case(name: str, seq_len: int, recompute: str) -> dict:
    m = get_model(name)
    return dict(num_params=m.num_params, layers=m.num_layers, heads=m.num_heads, head_dim=m.head_dim,
                seq_len=seq_len, recompute=recompute)


def _random_flops_case(rng: random.Random) -> dict:
    return dict(num_params=rng.randrange(10**8, 2 * 10**11), layers=rng.randint(4, 96),
                heads=rng.choice((8, 16, 32, 40, 64, 96)), head_dim=rng.choice((64, 80, 128)),
                seq_len=rng.choice((512, 1024, 2048, 4096, 8192, 32768)),
                recompute=rng.choice(("none", "selective", "full")))


_L3 = "qwen3-32b"   # 01.11 (deep dive 01 works the Llama-3-8B run gpjt measured)


@lru_cache(maxsize=None)
def _late_load():
    """01.11's run estimated both ways: (model loaded before TrainingArguments, built under zero.Init)."""
    kw = dict(seq_len=2048, precision="fp16", zero_stage=3, dp=8, recipe="hf-trainer")
    return estimate_training(_L3, zero_init=False, **kw), estimate_training(_L3, **kw)


def _late_load_extra() -> int:
    """01.11: bytes held at the loss with zero_init=False beyond zero.Init's."""
    def at_loss(est):
        return sum(next(mo for mo in est.moments if mo.where.startswith("at the loss")).parts.values())
    late, init = _late_load()
    return at_loss(late) - at_loss(init)


_HELD = dict(precision="fp16", zero_stage=3, dp=8, reduce_bucket_size=300_000_000)   # 01.12


@lru_cache(maxsize=None)
def _held_run():
    """01.12's run: Llama-2-13B, ZeRO-3 on 8 GPUs, a 3e8-element reduce bucket, overlap_comm at stage 3's default."""
    return estimate_training("llama-2-13b", **_HELD)


_FIRST = dict(recipe="megatron", seq_len=8192, tp=2, dp=4)   # 01.13


@lru_cache(maxsize=None)
def _first_run():
    """01.13's run: Llama-3-8B with Megatron (--bf16, the distributed optimizer), tp 2 x dp 4, sequence 8192."""
    return estimate_training("llama-3-8b", **_FIRST)


def _moments(k: float = 8, dp: int = 4) -> int:
    """k bytes per parameter of one tp rank's share, over dp (01.13 and its slips)."""
    return int(k * _first_run().counts["trainable"] / dp)


def _infinity_time(**kw):
    return step_time(_LAYOUTS["e"](), "v100-32gb", **kw)


def _accum8_tokens_per_s() -> float:
    """Tokens/s per GPU of the same layout with notebook 01's 8 micro-batches per step (memlib.step_time)."""
    return step_time(_v100_layout(zero_stage=3, dp=4, offload="optimizer+params", grad_accum=8)(),
                     "v100-32gb").tokens_per_s_per_gpu


def _compute_s_with_flops(fpt: float) -> float:
    """The compute seconds of the ZeRO-Infinity step if each token cost `fpt` FLOPs instead."""
    t = _infinity_time()
    return t.compute_s * fpt / t.flops_per_token


EXERCISES = [
    Numeric(
        id="01.1", title="What does a DGX A100 40GB hold?", difficulty="warm-up", minutes=3,
        formula="GPU capacity: a vendor's \"GB\" of HBM is GiB (memlib.get_gpu(...).memory_bytes)",
        prompt="The circulating answer says four V100 32GB hold \"4×32GB=128GB\". Your other option is a DGX A100 "
               "node: eight A100 40GB cards, each with 40 GiB (vendors count HBM in binary units). What do the "
               "eight hold together, in GB (10⁹ bytes)?",
        expected=lambda: 8 * get_gpu("a100-40gb").memory_bytes, unit="GB", tolerance=0.005, count=8, per="total",
        hints=("GB means 10⁹ bytes and GiB 2³⁰: the same memory is a larger number in GB.",
               "total = 8 x 40 GiB = 8 x 40 x 2³⁰ bytes.",
               "Compute 8 * 40 * 2**30 and divide by 1e9."),
        worked=lambda: (f"8 x 40 GiB = 320 GiB = **{gb(8 * get_gpu('a100-40gb').memory_bytes):.1f} GB**, not 320 GB: "
                        f"the binary unit adds {8 * get_gpu('a100-40gb').memory_bytes / 320e9 - 1:.1%}. The same "
                        f"reading gives four V100 32GB {gb(4 * get_gpu('v100-32gb').memory_bytes):.1f} GB, more than "
                        f"the fp16 weights of LLaMA-65B ({b(2 * n_params(_65))}), so the seed's \"short by 2GB\" has "
                        "the wrong sign; the real obstacle is everything else a training step keeps."),
    ),
    SpotError(
        id="01.2", title="780GB: what is missing?", difficulty="interview", minutes=8,
        formula="model states of mixed-precision AdamW: 16 bytes/param (ZeRO paper, K = 12; memlib.parallel.zero)",
        prompt="The circulating answer's memory budget for full fine-tuning of LLaMA-65B (fp16 mixed precision, "
               "AdamW). Find the error and give the correct total of model states, e.g. `(\"99GB\", \"1234 GB\")`.",
        quote="模型参数：65B × 2 bytes（FP16）= 130GB；梯度：与参数同大小，130GB（混合精度下梯度为FP16）；优化器状态：AdamW需存储"
              "momentum和variance，均为FP32（4 bytes），即65B × 4 × 2 = 520GB；总需求：130（参数）+ 130（梯度）+ 520（优化器）= "
              "780GB（纯数据，不含中间激活值）",
        source="seed 000 (能否用4 * v100 32G训练vicuna 65b), 标准答",
        figures=(Figure("130GB", "right", "65B x 2 bytes: right for the fp16 weights and gradients"),
                 Figure("520GB", "right", "right for momentum and variance alone; what is missing is a line of the "
                                          "budget, not this figure"),
                 Figure("780GB", "error", "the fp32 master copy of the weights (4 bytes/param) is missing from the "
                                          "budget: mixed precision needs 16 bytes/param")),
        expected=lambda: states(_65),
        slips=(Slip("forgot the fp32 master copy", lambda: states(_65, k=8),
                    "that is still without the fp32 master copy of the weights"),),
        hints=("Mixed precision updates an fp32 copy of the weights; look for it in the budget.",
               "Model states = (2 + 2 + 12) bytes/param: 16-bit weights, 16-bit gradients, fp32 master + momentum + "
               "variance.",
               "Every line of the budget is right on its own; add the missing line to the total."),
        worked=lambda: (f"**780GB** omits the fp32 master weights ({b(4 * n_params(_65))}). Model states are "
                        f"2 + 2 + 12 = 16 bytes/param: **{b(states(_65))}** (`memlib.parallel.zero.zero_model_state_bytes(n, 0, "
                        f"1)`), {gb(states(_65)) / gb(4 * get_gpu('v100-32gb').memory_bytes):.1f}x the four GPUs "
                        "together."),
    ),
    Numeric(
        id="01.3", title="ZeRO-3 over four GPUs", difficulty="interview", minutes=6,
        formula="ZeRO partitioning: stage 3 divides all 16 bytes/param by dp (memlib.parallel.zero.zero_model_state_bytes)",
        prompt="Under ZeRO-3 over 4 data-parallel GPUs (DeepSpeed, fp16 mixed precision with AdamW), how many bytes of "
               "model states does **each** GPU hold for LLaMA-65B? (Activations not included.)",
        expected=lambda: states(_65, 3, 4), count=4, per="one",
        slips=(Slip("forgot the fp32 master copy", lambda: states(_65, 3, 4, k=8),
                    "you sharded 12 bytes/param, not 16: the fp32 master copy of the weights is missing "
                    "(this is the seed's 195GB)"),
               Slip("forgot gradients", lambda: states(_65, 3, 4) - 2 * n_params(_65) // 4,
                    "the sharded 16-bit gradients are missing")),
        close_advice="use the exact parameter count (memlib.get_model('llama-65b').num_params)",
        hints=("ZeRO removes the copies data-parallel GPUs would each keep; stage 3 partitions everything.",
               "ZeRO-3 per GPU = (2 + 2 + 12) bytes/param x num_params / dp.",
               "Get num_params from memlib.get_model('llama-65b'), multiply by 16, divide by 4."),
        worked=lambda: (f"(2 + 2 + 12) x {n_params(_65):,} / 4 = **{b(states(_65, 3, 4))}** per GPU "
                        f"(`memlib.parallel.zero.zero_model_state_bytes(n, 3, 4)`), about "
                        f"{gib(states(_65, 3, 4)) / gib(get_gpu('v100-32gb').memory_bytes):.1f}x a V100 32GB."),
    ),
    SpotError(
        id="01.4", title="\"Only the optimizer states sharded\"", difficulty="interview", minutes=8,
        formula="ZeRO partitioning: stage 1 shards only the optimizer states (memlib.parallel.zero.zero_model_state_bytes)",
        prompt="The same answer continues with the layout that shards only the optimizer states. Find the errors "
               "and give the per-GPU model states of *that* layout (the one the sentence describes: only the "
               "optimizer states sharded, 4 GPUs).",
        quote="若仅分片优化器状态（ZeRO-2），每卡需130+130+130=390GB，更不可行。",
        source="seed 000, 标准答 (分布式策略可行性分析)",
        figures=(Figure("ZeRO-2", "error", "sharding only the optimizer states is ZeRO stage 1 (P_os); ZeRO-2 also "
                                           "shards the gradients", group="stage"),
                 Figure("130", "error", "two of the three 130s (fp16 weights and gradients, replicated) are right; the "
                                        "third, the optimizer shard, is 8 bytes/param / 4 without the fp32 master copy "
                                        "(12 bytes/param / 4)", group="master copy"),
                 Figure("390GB", "error", "the sum carries the short optimizer shard: the fp32 master copy is missing",
                        group="master copy")),
        expected=lambda: states(_65, 1, 4), count=4, per="one",
        slips=(Slip("ZeRO-2", lambda: states(_65, 2, 4),
                    "that is ZeRO-2, which shards the gradients too; the sentence shards only the optimizer states "
                    "(ZeRO-1)"),
               Slip("forgot the fp32 master copy", lambda: states(_65, 1, 4, k=8),
                    "the fp32 master copy of the weights belongs in the optimizer shard (12 bytes/param, not 8)")),
        hints=("Two things can be wrong in one sentence: the name of the stage and the arithmetic.",
               "Sharding only the optimizer states is ZeRO stage 1 (P_os): 2 + 2 + 12/N bytes per parameter.",
               "Check the label first (which stage shards what), then recompute each of the three terms."),
        worked=lambda: (f"Two errors. **ZeRO-2** is the wrong name: sharding only the optimizer states is ZeRO-1. "
                        f"**390GB** (and the third 130) leaves the fp32 master copy out of the optimizer shard, "
                        f"12 bytes/param / 4. Per GPU: 2ψ + 2ψ + 12ψ/4 = **{b(states(_65, 1, 4))}** "
                        f"(`zero_model_state_bytes(n, 1, 4)`); real ZeRO-2 (gradients sharded too) would be "
                        f"{b(states(_65, 2, 4))}."),
    ),
    Numeric(
        id="01.5", title="How many V100s for the states alone?", difficulty="interview", minutes=6,
        formula="model states of mixed-precision AdamW: 16 bytes/param (ZeRO paper, K = 12; memlib.parallel.zero)",
        prompt="With ZeRO-3, how many V100 32GB GPUs would it take just to hold LLaMA-65B's mixed-precision model "
               "states (16 bytes/param)? Count each GPU at its full nominal capacity, **32 GiB** (a vendor's "
               "\"32GB\" of HBM is binary), and ignore activations, the CUDA context and fragmentation. Give a "
               "whole number.",
        expected=lambda: _gpus_for_states(get_gpu("v100-32gb").memory_bytes), unit="count", tolerance=0.0,
        slips=(Slip("GB for GiB", lambda: _gpus_for_states(32e9),
                    "you divided by 32 GB; the question counts a V100 32GB as 32 GiB"),
               Slip("forgot the fp32 master copy", lambda: _gpus_for_states(get_gpu("v100-32gb").memory_bytes, k=8),
                    "with 12 bytes/param the fp32 master copy is missing"),
               Slip("rounded down", lambda: _gpus_for_states(get_gpu("v100-32gb").memory_bytes) - 1,
                    "you rounded down: the states would not fit; round up")),
        close_advice="check the capacity unit (32 GiB = 32 x 2**30 bytes) and round up, never down",
        hints=("The states are a fixed total; ZeRO-3 spreads them evenly, so you need enough GPUs to hold the total.",
               "GPUs = ceil(16 bytes/param x num_params / (32 x 2³⁰ bytes)).",
               "Compute the total states in bytes first, then divide by one GPU's bytes, then round up."),
        worked=lambda: (f"{b(states(_65))} / {b(get_gpu('v100-32gb').memory_bytes)} = "
                        f"{states(_65) / get_gpu('v100-32gb').memory_bytes:.2f}, rounded up: "
                        f"**{_gpus_for_states(get_gpu('v100-32gb').memory_bytes)} GPUs**, before activations; "
                        "a real run needs more (the context, headroom, activations)."),
    ),
    Choice(
        id="01.6", title="Which layout fits 4x V100 32GB?", difficulty="interview", minutes=8,
        formula="does it fit: per-GPU peak + CUDA context + headroom vs capacity (memlib.fits)",
        prompt="Full fine-tuning of LLaMA-65B on 4x V100 32GB, fp16 mixed precision (V100 has no bf16), full "
               "recompute, micro-batch 1, sequence 2048. Which layout fits the GPUs' memory (memlib.fits: peak + "
               "CUDA context + allocator headroom)?",
        options=(Option("a", "ZeRO-3 over 4 GPUs", "ZeRO-3 divides the 16 bytes/param by 4: each GPU still keeps "
                        "4 bytes for every parameter of the 65B, several times a V100's memory",
                        misconception="sharding over every GPU you have is enough once their total exceeds the weights"),
                 Option("b", "tensor parallel, tp=4", "tp splits the matrices 4 ways: the same 16 bytes/param / 4 as "
                        "ZeRO-3, and the activations are replicated on top",
                        misconception="tensor parallelism saves more than ZeRO because it splits the model itself"),
                 Option("c", "pipeline parallel, pp=4", "each stage holds a quarter of the layers with all of their "
                        "gradients and optimizer states: again 16 bytes/param / 4",
                        misconception="a pipeline stage only needs its share of the weights"),
                 Option("d", "ZeRO-3 + optimizer offload to CPU (ZeRO-Offload)",
                        lambda: (f"the 16-bit weights and gradients stay on the GPUs, plus gathered layers and "
                                 f"activations: {gib(_LAYOUTS['d']().peak_bytes):.0f} GiB per GPU"),
                        misconception="the optimizer states are the only big term, so offloading them is enough"),
                 Option("e", "ZeRO-3 + optimizer and parameter offload to CPU (ZeRO-Infinity)", "GPUs keep only the "
                        "layers in flight and activations; the host holds the rest, and needs the RAM for it", "3")),
        reasons=(Option("1", "sharding over 4 GPUs divides the model states enough", "4 GPUs divide 16 bytes/param "
                        "into 4 bytes/param each: for 65B parameters that is far beyond 32 GiB"),
                 Option("2", "recompute removes the activations, which were the problem", "activations were never the "
                        "main term: model states are"),
                 Option("3", "only when the 16-bit parameters leave the GPUs too does the per-GPU footprint drop below "
                             "32 GiB")),
        right=lambda: only_fitting(_LAYOUTS, "v100-32gb"),
        hints=("Work out what stays on each GPU in each layout; a fit needs the per-GPU peak under 32 GiB.",
               "Per GPU: 16ψ/4 for (a), (b), (c); with optimizer offload 2ψ/4 of weights + 2ψ/4 of gradients + "
               "activations; with parameter offload too, only the layers in flight.",
               "Compute 16ψ/4 for ψ = 65B in GiB first: how many times a V100 is it?"),
        worked=lambda: ("Per GPU (memlib.estimate_training + memlib.fits on v100-32gb):\n\n"
                        + peak_rows(_LAYOUTS, "v100-32gb")
                        + f"\n\nOnly **({only_fitting(_LAYOUTS, 'v100-32gb')})** fits, and it needs "
                          f"{b(4 * _LAYOUTS['e']().host_bytes)} of host RAM for the four processes."),
    ),
    Implement(
        id="01.7", title="Training FLOPs per token", difficulty="stretch", minutes=12,
        formula="training FLOPs per token 6N + 12·L·H·Q·T, + a forward with recompute (PaLM App. B; "
                "memlib.cost.timing.flops_per_token)",
        prompt="Write `train_flops_per_token(num_params, layers, heads, head_dim, seq_len, recompute)` returning the "
               "FLOPs one training token costs: 6N for the weights' forward and backward plus 12·L·H·Q·T for "
               "attention (PaLM, Chowdhery et al. 2022, App. B: L layers, H heads, Q head_dim, T sequence length); "
               "`recompute` is \"none\", \"selective\" (the attention scores are recomputed: +4·L·H·Q·T) or \"full\" "
               "(a second forward: +2N + 4·L·H·Q·T). Tested against `memlib.cost.timing.flops_per_token` on five "
               "models and on shapes drawn at random each time you check.",
        function_name="train_flops_per_token", reference_name="memlib.cost.timing.flops_per_token",
        cases=lambda: [_flops_case("llama-7b", 2048, "none"), _flops_case(_65, 2048, "full"),
                       _flops_case("llama-2-70b", 4096, "selective"), _flops_case("llama-3-8b", 8192, "none"),
                       _flops_case("mistral-7b", 32768, "full")],
        held_out=lambda rng: [_random_flops_case(rng) for _ in range(3)],
        reference=_flops,
        slips=(Slip("no attention term", lambda k, w: _flops({**k, "layers": 0}),
                    "the attention term 12·L·H·Q·T is missing: at long sequences it is a large share"),
               Slip("recompute ignored", lambda k, w: _flops({**k, "recompute": "none"}),
                    "recompute is not free: full recompute runs the forward twice (+2N + 4·L·H·Q·T), selective "
                    "recomputes the attention scores (+4·L·H·Q·T)")),
        hints=("A forward costs 2 FLOPs per parameter per token (a multiply and an add); the backward twice that.",
               "6N + 12·L·H·Q·T; full recompute adds 2N + 4·L·H·Q·T, selective adds 4·L·H·Q·T.",
               "Write attn = layers * heads * head_dim * seq_len first; then the three cases."),
        worked=lambda: ("```python\ndef train_flops_per_token(num_params, layers, heads, head_dim, seq_len, recompute):\n"
                        "    attn = layers * heads * head_dim * seq_len\n"
                        "    flops = 6 * num_params + 12 * attn\n"
                        "    if recompute == 'full':\n"
                        "        flops += 2 * num_params + 4 * attn\n"
                        "    elif recompute == 'selective':\n"
                        "        flops += 4 * attn\n"
                        "    return flops\n```\n\n"
                        f"LLaMA-65B at 2048 tokens: {_flops(_flops_case(_65, 2048, 'none')) / 1e9:,.0f} GFLOPs per "
                        f"token, {_flops(_flops_case(_65, 2048, 'full')) / 1e9:,.0f} with full recompute."),
    ),
    Numeric(
        id="01.8", title="Host RAM for ZeRO-Infinity, one size down", difficulty="stretch", minutes=10,
        formula="offload host bytes: fp32 master, m, v, fp32 gradients (+ 16-bit params) (memlib.estimate_training"
                "(...).host_bytes)",
        prompt="The layout that fits LLaMA-65B (ZeRO-3 with optimizer states and parameters offloaded to CPU, 4 GPUs, "
               "fp16 mixed precision) moves the fp32 master weights, momentum and variance, an fp32 gradient "
               "partition and the 16-bit parameters to host memory. Your team runs the same layout for "
               "**LLaMA-33B** (32.5 billion parameters; `memlib.get_model('llama-33b').num_params` is exact). How "
               "much host RAM do the **four** processes need together?",
        expected=lambda: 4 * _LAYOUTS_33["e"]().host_bytes, count=4, per="total", count_unit=("process", "processes"),
        slips=(Slip("ZeRO-Offload only", lambda: 4 * _LAYOUTS_33["d"]().host_bytes,
                    "that is optimizer offload alone (16 bytes/param); the 16-bit parameters live on the host too"),
               Slip("states only", lambda: states(_33, working_bytes=0),
                    "you counted the optimizer states (12 bytes/param) but not the fp32 gradients and 16-bit "
                    "parameters")),
        hints=("List what each offload option puts on the host, in bytes per parameter.",
               "Per parameter on the host: 12 (fp32 master, m, v) + 4 (fp32 gradient) + 2 (fp16 weights).",
               "The four processes hold disjoint shards: the total is bytes/param x num_params."),
        worked=lambda: (f"18 bytes/param over all processes: **{b(4 * _LAYOUTS_33['e']().host_bytes)}** "
                        f"(`estimate_training('llama-33b', ..., offload='optimizer+params').host_bytes` is per "
                        f"process: {b(_LAYOUTS_33['e']().host_bytes)}). A server with 768 GB of RAM is the real "
                        "requirement; LLaMA-65B needs twice that."),
    ),
    Numeric(
        id="01.9", title="How long is one step?", difficulty="interview", minutes=10,
        formula="step time = hardware FLOPs per token x tokens / (GPUs x peak x HFU) (memlib.step_time)",
        prompt=f"The ZeRO-Infinity layout (LLaMA-65B, 4x V100 32GB, fp16 mixed precision, full recompute, sequence "
               f"2048, micro-batch 1 per GPU, no gradient accumulation) processes 4 x 2048 tokens per step. The "
               f"GPUs run every FLOP they execute, the recomputed forward included, at {DEFAULT_HFU:.0%} of the "
               f"V100's 125 TFLOPS fp16 tensor-core peak ({DEFAULT_HFU:.0%} hardware-FLOPs utilisation, HFU). How "
               f"many seconds of **compute** does one step take? (Use PaLM's FLOPs per token, with recompute; "
               f"`memlib.step_time(...).compute_s` is the reference.) Answer in seconds, e.g. `\"12.5 s\"`.",
        expected=lambda: _infinity_time().compute_s, unit="s", tolerance=0.03,
        slips=(Slip("no recompute", lambda: _compute_s_with_flops(flops_per_token(get_model(_65), 2048, "none")),
                    "you counted 6N + 12·L·H·Q·T, the model FLOPs (that would be 40% MFU); HFU counts what the GPU "
                    "runs, and full recompute runs each forward twice: 8N + 16·L·H·Q·T"),
               Slip("no attention term", lambda: _compute_s_with_flops(8 * n_params(_65)),
                    "8N alone leaves out the attention FLOPs (16·L·H·Q·T with recompute)"),
               Slip("one GPU does all tokens", lambda: 4 * _infinity_time().compute_s,
                    "the 4 GPUs share the step's tokens: divide by 4 GPUs' throughput"),
               Slip("peak, not HFU", lambda: DEFAULT_HFU * _infinity_time().compute_s,
                    f"you assumed 100% of the tensor-core peak; the question gives {DEFAULT_HFU:.0%} (HFU)")),
        hints=("Time = work / rate: the work is FLOPs per token x tokens, the rate is what the GPUs really sustain.",
               "compute_s = (8N + 16·L·H·Q·T) x tokens_per_step / (GPUs x 125e12 x HFU), with L = 80, H = 64, "
               "Q = 128, T = 2048.",
               "Start with FLOPs per token for LLaMA-65B with full recompute (memlib.cost.timing.flops_per_token)."),
        worked=lambda: (lambda t: (
            f"FLOPs per token with full recompute: {t.flops_per_token / 1e9:,.0f} GFLOPs "
            f"(`memlib.cost.timing.flops_per_token`); x {t.tokens_per_step:,} tokens / (4 x 125 TFLOPS x "
            f"{t.hfu:.0%}) = **{t.compute_s:.1f} s** of compute: {t.hfu:.0%} HFU is {t.mfu:.0%} MFU (model FLOPs "
            f"6N + 12·L·H·Q·T, PaLM App. B), since a quarter of what the GPU runs is the recomputed forward. "
            f"The whole step is {t.step_s:.0f} s "
            f"(`memlib.step_time`): offload traffic over PCIe adds {t.offload_s:.0f} s and the CPU Adam step "
            f"{t.cpu_optimizer_s:.0f} s, so {t.tokens_per_s_per_gpu:.0f} tokens/s per GPU: a billion tokens would take "
            f"{1e9 / (t.tokens_per_s_per_gpu * 4) / 86400:.0f} days. Without gradient accumulation the CPU Adam step "
            f"and the parameter upload come after every micro-batch; notebook 01's 8 micro-batches per step spread "
            f"them: {_accum8_tokens_per_s():.0f} tokens/s per GPU."))(_infinity_time()),
    ),
    SelfAssessed(
        id="01.10", title="Fine-tune LLaMA-65B (a Vicuna-style SFT) on 4x V100 this week", difficulty="stretch", minutes=15,
        formula="a plan: memory per GPU and on the host, time, and the alternatives (memlib.estimate_training, "
                "memlib.step_time)",
        prompt="Your manager hands you 4x V100 32GB and wants LLaMA-65B fine-tuned on an instruction dataset (a Vicuna-style SFT) this "
               "week. Propose a plan: what you would run, the memory it needs per GPU and on the host, what you give "
               "up, and what you would ask for instead. Then mark your answer against the rubric.",
        rubric=("Full fine-tuning fits only with ZeRO-3 + CPU offload of optimizer and parameters (ZeRO-Infinity), "
                "and needs over a terabyte of host RAM",
                "That path is slow: tens of tokens/s per GPU, days for a modest dataset",
                "QLoRA (4-bit NF4 base + LoRA adapters) is the practical path, the 4-bit layers split across the "
                "four GPUs",
                "V100 has no bf16: fp16 with dynamic loss scaling",
                "Gradient checkpointing (recompute) on, to keep activations small",
                "Alternatives to ask for: a smaller model (13B/33B) or A100/H100 80GB GPUs"),
        hints=("Start from the numbers: full fine-tuning needs 16 bytes/param; what fits per GPU and what is left for "
               "the host?",
               "Full: ZeRO-Infinity host RAM is 18 bytes/param; QLoRA: ~0.5 byte/param of base plus small adapters; "
               "time: FLOPs per token x tokens / (GPUs x peak x utilisation), with the recomputed forward in the "
               "FLOPs when the utilisation is HFU.",
               "Write down the per-GPU peak and host RAM of ZeRO-Infinity with memlib, then the same for QLoRA."),
        worked=lambda: (lambda inf, dm, fs, q33: (
            f"Full fine-tuning fits only as ZeRO-Infinity: {gib(inf.peak_bytes):.1f} GiB per GPU but "
            f"{b(4 * inf.host_bytes)} of host RAM and about {step_time(inf, 'v100-32gb').tokens_per_s_per_gpu:.0f} "
            f"tokens/s per GPU (`memlib.step_time` at {DEFAULT_HFU:.0%} HFU, 8 micro-batches per step as in "
            f"notebook 01, CPU Adam at memlib's 5e9 parameters/s per node), i.e. days for a modest dataset. QLoRA "
            f"(the paper's recipe as notebook 01 runs it: NF4 base, LoRA r=64 on all linear layers, dropout 0.05, "
            f"fp32 adapters, 16 micro-batches) split over the four GPUs fits: the 4-bit layers spread layer by layer "
            f"(`device_map`, the QLoRA reference code) peak at {gib(dm.peak_bytes):.1f} GiB per GPU, and the whole "
            f"job makes about {4 * step_time(dm, 'v100-32gb').tokens_per_s_per_gpu:.0f} tokens/s (one GPU works at "
            f"a time); FSDP-QLoRA peaks at {gib(fs.peak_bytes):.1f} GiB and makes about "
            f"{4 * step_time(fs, 'v100-32gb').tokens_per_s_per_gpu:.0f} tokens/s, all four GPUs computing (both at "
            f"{DEFAULT_HFU:.0%} HFU = {step_time(dm, 'v100-32gb').mfu:.0%} MFU: the recomputed forward is a third of "
            f"what a LoRA step runs). The same recipe on a 33B needs {gib(q33.peak_bytes):.1f} GiB on one GPU. V100 "
            "has no bf16: fp16 with dynamic loss scaling, gradient checkpointing on. Ask for A100/H100 80GB if full "
            "fine-tuning is a must."))(
            _v100_layout(zero_stage=3, dp=4, offload="optimizer+params", grad_accum=8)(),
            estimate_training(_65, precision="fp16-mixed", finetune="qlora", recompute="full", grad_accum=16,
                              pp=4, **_QLORA_RECIPE),
            estimate_training(_65, precision="fp16-mixed", finetune="qlora", recompute="full", grad_accum=16,
                              zero_stage="FULL_SHARD", dp=4, **_QLORA_RECIPE),
            estimate_training("vicuna-33b", precision="fp16", finetune="qlora", recompute="full", **_QLORA_RECIPE)),
    ),
    Numeric(
        id="01.11", title="The gigabytes a late model load costs under ZeRO-3", difficulty="interview", minutes=8,
        formula="torch's linear keeps each gathered weight to its backward (memlib.training.terms."
                "zero3_saved_weight_bytes; estimate_training(..., zero_init=False))",
        prompt="Qwen3-32B is fine-tuned with HF Trainer and DeepSpeed ZeRO-3 on 8 GPUs, fp16, no activation "
               "checkpointing. The script calls `from_pretrained` **before** creating `TrainingArguments`, so the "
               "model is not built under `deepspeed.zero.Init`: DeepSpeed partitions it in `deepspeed.initialize` and "
               "leaves `torch.nn.functional.linear` as PyTorch's, whose backward needs the weight. How much more does "
               "**each** GPU hold at the loss than when the model is built under zero.Init? Answer in GB or GiB.",
        expected=lambda: _late_load_extra(), per="one",
        slips=(Slip("the whole model in 16 bits", lambda: 2 * n_params(_L3),
                    "the embedding is not a matmul weight (its backward needs only the token ids), and the head is "
                    "gathered at the loss with or without zero.Init"),
               Slip("sharded over 8", lambda: _late_load_extra() // 8,
                    "a gathered weight is whole on every GPU: that is what gathering means"),
               Slip("one layer", lambda: _late_load_extra() // get_model(_L3).num_layers,
                    "that is one layer's weights; every layer's forward has run by the loss"),
               Slip("q and o at the hidden width", lambda: (lambda m: _late_load_extra() - 2 * m.num_layers * 2
                                                            * m.hidden_size * (m.num_heads * m.head_dim - m.hidden_size))(
                   get_model(_L3)),
                    "q_proj and o_proj are num_heads x head_dim = 64 x 128 = 8192 wide, not the hidden 5120")),
        hints=("PyTorch's linear saves a view of its weight for the backward; DeepSpeed's zero.Init swaps in a linear "
               "that saves the parameter itself, which ZeRO-3 can then free.",
               "Each decoder layer's 7 matmul weights stay gathered from its forward to its backward: q, k, v, o, "
               "gate, up, down, in fp16.",
               "64 layers x (2 x 5120 x 8192 + 2 x 5120 x 1024 + 3 x 5120 x 25600) x 2 bytes: q and o are 64 heads "
               "of 128 wide (8192, not the hidden 5120), k and v 8 heads of 128."),
        worked=lambda: (lambda late, init, m: (
            f"Every layer's matmul weights, gathered whole in fp16 and kept by torch's linear until that layer's "
            f"backward: {m.num_layers} x {sum(t.numel for t in m.tensors() if t.kind == 'linear' and t.count == m.num_layers):,} x 2 bytes = **{b(_late_load_extra())}** "
            f"per GPU (`terms.zero3_saved_weight_bytes`; `estimate_training(..., zero_init=False)`). The peak per "
            f"GPU is {gib(late.peak_bytes):.1f} GiB loaded early against {gib(init.peak_bytes):.1f} GiB under "
            f"zero.Init (the allocator's active peak, with the gradients held for the reduce stream, "
            f"{gib(late.active_peak_bytes):.1f} GiB: exercise 01.12). gpjt measured the Llama-3-8B version of this "
            "run within 1% of memlib's active peak (deep dive 01; docs/validation.md). Build the model after "
            "TrainingArguments, or turn on activation checkpointing, whose forward saves nothing."))(
            *_late_load(), get_model(_L3)),
    ),
    Numeric(
        id="01.12", title="Why does the allocator report more than was allocated?", difficulty="interview", minutes=6,
        formula="up to max_param_reduce_events + 1 = 3 buckets of 16-bit gradients held for the reduce stream "
                "(memlib.training.terms.deepspeed_stream_held_grad_bytes; Estimate.active_peak_bytes)",
        prompt="Llama-2-13B trains with DeepSpeed ZeRO-3 on 8 GPUs in fp16, `overlap_comm` at its stage-3 default, and "
               "`reduce_bucket_size: 3e8` in the config. The run logs `torch.cuda.memory_stats()"
               "['active_bytes.all.peak']`, which counts blocks already freed while another CUDA stream may still "
               "read them. ZeRO-3 copies each gradient into the bucket on its reduce stream and frees it under "
               "`record_stream`; the host blocks only when more than two bucket reductions are outstanding "
               "(`max_param_reduce_events = 2`). At most how many bytes per GPU can these held gradients add to the "
               "active peak? Answer in GB or GiB.",
        expected=lambda: _held_run().stream_held_bytes, per="one",
        slips=(Slip("one bucket", lambda: _held_run().stream_held_bytes // 3,
                    "one bucket is what is being filled; the reductions still outstanding hold theirs too"),
               Slip("two buckets", lambda: 2 * _held_run().stream_held_bytes // 3,
                    "the host blocks only when more than two are outstanding: a third bucket is filled first"),
               Slip("fp32 gradients", lambda: 2 * _held_run().stream_held_bytes,
                    "the held gradients are autograd's 16-bit ones; the fp32 copy belongs to the optimizer step")),
        hints=("A bucket holds reduce_bucket_size gradient elements, in the gradients' dtype: fp16 here.",
               "Count the buckets whose gradients can wait for the reduce stream: two outstanding reductions and "
               "the third bucket filled before the host blocks.",
               "3 x 3e8 x 2 bytes."),
        worked=lambda: (lambda e: (
            f"Three buckets of 3e8 fp16 gradients: 3 x 3e8 x 2 bytes = **{b(e.stream_held_bytes)}** per GPU "
            "(`terms.deepspeed_stream_held_grad_bytes`). They are active bytes, not allocated ones: "
            f"`max_memory_allocated` stays at {gib(e.peak_bytes):.1f} GiB while `active_peak_bytes` says "
            f"{gib(e.active_peak_bytes):.1f} GiB. They cannot cause an out-of-memory error (before giving up the "
            "allocator waits for those streams and frees the blocks), so `fits()` leaves them out; nvidia-smi shows "
            "them. They reach the bound when the reduce-scatters lag the backward: gpjt's Llama-3-8B ZeRO-3 runs "
            "(DeepSpeed's default 5e8 bucket, no checkpointing, 1,001 tokens or more) sit within 1% of memlib's "
            "active peak (docs/validation.md)."))(_held_run()),
    ),
    Numeric(
        id="01.13", title="Step 1 fitted. Will step 2?", difficulty="interview", minutes=6,
        formula="Adam's moments are made in the first optimizer step: the first forward and backward run without "
                "them (memlib.training.terms.first_step_optimizer_state_bytes; Estimate.first_iteration_peak_bytes)",
        prompt="Llama-3-8B pretrains with Megatron-LM (`--bf16`, `--use-distributed-optimizer`) on 8 GPUs: tensor "
               "parallel 2, data parallel 4, sequence 8192, micro-batch 1, no recompute. Both iterations peak in the "
               "forward and backward, not in the optimizer step. The team sized the job by the line Megatron prints after iteration 1, `(after 1 "
               "iterations) memory (MB) | ... | max allocated: ...`. FusedAdam creates its state inside the first "
               "`step()`. From iteration 2 on, how many more bytes per GPU does the peak need? Answer in GB or GiB.",
        expected=lambda: _first_run().peak_bytes - _first_run().first_iteration_peak_bytes, per="one",
        slips=(Slip("master copy too", lambda: _moments(12),
                    "the fp32 master copy is made with the optimizer, before the first step; only Adam's two "
                    "moments come later"),
               Slip("moments not sharded", lambda: _moments(8, 1),
                    "the distributed optimizer shards the moments over the 4 data-parallel GPUs"),
               Slip("tensor parallelism left out", lambda: _moments(16),
                    "tensor parallel 2 splits the matrices: each GPU owns about half of the parameters"),
               Slip("bf16 moments", lambda: _moments(4),
                    "Adam's moments are fp32: 4 bytes each, two of them")),
        hints=("What does the optimizer create in its first step that the first forward and backward did not hold?",
               "Adam's two fp32 moments of the parameters this GPU owns: tp 2 halves the matrices, the distributed "
               "optimizer shards the moments over dp 4.",
               "8 bytes x (the parameters of one tensor-parallel rank) / 4."),
        worked=lambda: (lambda e: (
            f"Adam's two fp32 moments of this GPU's shard: 8 bytes x {e.counts['trainable']:,} parameters (a "
            f"tensor-parallel rank's half of Llama-3-8B) / 4 = **{b(e.peak_bytes - e.first_iteration_peak_bytes)}**. "
            f"memlib puts iteration 1 at {gib(e.first_iteration_peak_bytes):.1f} GiB (`first_iteration_peak_bytes`) "
            f"and every later one at {gib(e.peak_bytes):.1f} GiB (`peak_bytes`). The fp32 master copy and the fp32 "
            "main-grad buffer exist from the start, so only the moments are new. Megatron-LM's CI shows the same "
            "jump on its 7B run (deep dive 01): size a job by the steady peak, not by the line after iteration 1."
        ))(_first_run()),
    ),
]
