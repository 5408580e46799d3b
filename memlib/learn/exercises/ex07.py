"""Exercises for notebook 07: how long, and how much, to train? 6ND and the Chinchilla ratio, days and
GPU-hours at an MFU, MFU from a throughput, what recompute and data parallelism cost, why memory sets
the GPU count of a 70B fine-tune, and what a MoE's published GPU-hours imply."""

from __future__ import annotations

import math
import random

from memlib import cost
from memlib.learn.exercises._common import n_params
from memlib.learn.exercises.kinds import Choice, Figure, Implement, Numeric, Option, SelfAssessed, Slip, SpotError
from memlib.hardware.gpus import get_gpu
from memlib.models import get_model
from memlib.parallel.plan import min_gpus
from memlib.cost.timing import dp_collectives, flops_per_token, palm_flops_per_token
from memlib.training import estimate_training
from memlib.cost import checkpointing
from memlib.cost.serving_cost import cost_per_million_tokens
from memlib.serving import decode_bound

NOTEBOOK = "07_time_and_cost"
_7B, _70B, _H100 = "llama-2-7b", "llama-3.1-70b", "h100-80gb"
_TOKENS, _SEQ, _GPUS, _MFU = 2e12, 4096, 256, 0.40
_FT_TOKENS = 1e9
# 07.2 and 07.3 ask about a run notebook 07 does not print: Llama 3 8B's "over 15T tokens" (Llama 3 paper,
# arXiv:2407.21783, Sec. 1) and the Llama-2-7B run on B200s instead of H100s
_L3_8B, _L3_TOKENS, _B200 = "llama-3-8b", 15e12, "b200"
_DEADLINE_DAYS = 7
# DeepSeek-V3 Technical Report (DeepSeek-AI 2024): Table 1 and Sec. 1
_DS_ACTIVE, _DS_TOTAL, _DS_TOKENS, _DS_HOURS, _DS_ALL_HOURS = 37e9, 671e9, 14.8e12, 2.664e6, 2.788e6
# DeepSeek's own count: 250 GFLOP of training per token at sequence length 4,096, attention included
# (Zhao et al. 2025, "Insights into DeepSeek-V3", ISCA '25, Table 2)
_DS_GFLOP_PER_TOKEN = 250e9


def E(x: float) -> str:
    return f"{x:.3g}".replace("e+", "e")


# --- 07.1, 07.2, 07.3: the pretraining run ----------------------------------------------------------------
def _6nd(n=None) -> float:
    return cost.training_flops(n if n is not None else _7B, _TOKENS)


def _run(**kw):
    """Llama-2-7B on 2T tokens, 256 H100s, 40% MFU, attention at 4,096 (memlib.cost.training_run)."""
    args = dict(mfu=_MFU, seq_len=_SEQ)
    args.update(kw)
    return cost.training_run(_7B, _TOKENS, args.pop("gpu", _H100), _GPUS, **args)


def _days_at_peak(tflops: float, gpu: str = _H100) -> float:
    return cost.training_run(_7B, _TOKENS, gpu, _GPUS, mfu=_MFU, seq_len=_SEQ, peak_tflops=tflops).days


# --- 07.4: MFU from a throughput ----------------------------------------------------------------------
def _mfu(k: dict) -> float:
    """memlib.cost.mfu_from_throughput for the shape in the exercise's arguments (no recompute counted)."""
    return (palm_flops_per_token(k["num_params"], k["layers"], k["heads"], k["head_dim"], k["seq_len"])
            * k["tokens_per_s_per_gpu"] / (k["peak_tflops"] * 1e12))


def _mfu_case(name: str, seq_len: int, rate: float, peak: float) -> dict:
    m = get_model(name)
    return dict(num_params=m.num_params, layers=m.num_layers, heads=m.num_heads, head_dim=m.head_dim,
                seq_len=seq_len, tokens_per_s_per_gpu=rate, peak_tflops=peak)


def _random_mfu_case(rng: random.Random) -> dict:
    k = dict(num_params=rng.randrange(10**8, 5 * 10**11), layers=rng.randint(4, 128),
             heads=rng.choice((8, 16, 32, 40, 64, 96, 128)), head_dim=rng.choice((64, 80, 128)),
             seq_len=rng.choice((1024, 2048, 4096, 8192, 32768)), peak_tflops=rng.choice((125.0, 312.0, 989.4)))
    # a throughput between 15% and 60% MFU for that shape, so the answer is a plausible fraction
    target = rng.uniform(0.15, 0.6)
    k["tokens_per_s_per_gpu"] = round(target * k["peak_tflops"] * 1e12 / palm_flops_per_token(
        k["num_params"], k["layers"], k["heads"], k["head_dim"], k["seq_len"]), 3)
    return k


# --- 07.5: recompute ----------------------------------------------------------------------------------
def _recompute_extra(recompute: str = "full") -> float:
    """Extra FLOPs of recompute for Llama-3.1-70B at 4,096 tokens, in % of the step without it."""
    m = get_model(_70B)
    return 100 * (flops_per_token(m, _SEQ, recompute) / flops_per_token(m, _SEQ) - 1)


# --- 07.6: ZeRO-3 traffic -----------------------------------------------------------------------------
def _z3(**kw):
    return estimate_training(_7B, seq_len=_SEQ, micro_batch=2, grad_accum=2, zero_stage=3, dp=_GPUS, **kw)


def _z3_bytes_per_micro_batch() -> float:
    """Bytes one GPU sends per micro-batch: every collective that runs once per micro-batch, once."""
    _, colls = dp_collectives(_z3())
    return sum(c.bytes_per_gpu for c in colls if c.phase in ("forward", "backward"))


def _ddp_bytes() -> float:
    _, colls = dp_collectives(estimate_training(_7B, seq_len=_SEQ, micro_batch=2, precision="bf16", dp=_GPUS))
    return sum(c.bytes_per_gpu for c in colls)  # one all-reduce of 16-bit gradients


# --- 07.7, 07.8: the 70B fine-tune --------------------------------------------------------------------
def _ft_hours(**kw) -> float:
    args = dict(hfu=_MFU, seq_len=_SEQ, recompute="full")  # 40% of peak for every FLOP run: HFU (30% MFU)
    args.update(kw)
    return cost.training_run(_70B, _FT_TOKENS, _H100, 1, **args).gpu_hours


def _ft_mfu() -> float:
    """The MFU of the 70B fine-tune at 40% HFU with full recompute: 0.4 x (6N + 12LHQT) / (8N + 16LHQT) = 0.3."""
    return cost.training_run(_70B, _FT_TOKENS, _H100, 1, hfu=_MFU, seq_len=_SEQ, recompute="full").mfu


def _gpus_for_memory() -> int:
    return min_gpus(_70B, _H100, seq_len=_SEQ, grad_accum=8, recomputes=("none", "selective", "full")).count


def _gpus_for_deadline() -> int:
    return math.ceil(_ft_hours() / (_DEADLINE_DAYS * 24))


def _what_decides() -> str:
    return "b" if _gpus_for_memory() > _gpus_for_deadline() else "a"


# --- 07.9: DeepSeek-V3 --------------------------------------------------------------------------------
def _ds_mfu(params: float | None = None, hours: float = _DS_HOURS, peak: str = "bf16") -> float:
    """The MFU (in %) DeepSeek-V3's GPU-hours imply: training FLOPs / (GPU-seconds x dense peak).

    params=None: DeepSeek's own 250 GFLOP per token (attention included); a number: 6ND on it."""
    g = get_gpu(_H100)  # the H800 is the H100 SXM die with its NVLink cut: the same dense peaks
    tflops = g.bf16_tflops if peak == "bf16" else g.fp8_tflops
    flops = _DS_GFLOP_PER_TOKEN * _DS_TOKENS if params is None else cost.training_flops(params, _DS_TOKENS)
    return 100 * flops / (hours * 3600 * tflops * 1e12)


# --- 07.11: how often to checkpoint (a run notebook 07 does not print: the 70B pretrained on 4,096 GPUs) ------
_CK_GPUS, _CK_RATE = 4096, 200e9


def _ck(layout: str = "deepspeed", gpus: int = _CK_GPUS, two: float = 2.0) -> float:
    """Young's interval (s) for Llama-3.1-70B's checkpoint at 200 GB/s, MTBF from Llama 3's failure rate."""
    write = checkpointing.checkpoint_write_s(checkpointing.checkpoint_size_bytes(_70B, layout), _CK_RATE)
    mtbf = checkpointing.job_mtbf_s(419, 54, gpus=16384, at_gpus=gpus)
    return math.sqrt(two * write * mtbf)


def _ck_bytes(bytes_per_param: int) -> float:
    """Young's interval if the checkpoint held `bytes_per_param` bytes per parameter."""
    write = bytes_per_param * n_params(_70B) / _CK_RATE
    return math.sqrt(2 * write * checkpointing.job_mtbf_s(419, 54, gpus=16384, at_gpus=_CK_GPUS))


# --- 07.12: serving cost per million output tokens ------------------------------------------------------------
# Llama-3.1-8B in bf16 on one H100, 48 chats of 4,096 tokens, at the decode roofline; $3.00 per GPU-hour, busy 40%
_SV_MODEL, _SV_BATCH, _SV_CTX, _SV_PRICE, _SV_UTIL = "llama-3.1-8b", 48, 4096, 3.00, 0.40


def _serve_usd(tokens_per_s: float | None = None, util: float = _SV_UTIL) -> float:
    """memlib.cost.serving_cost.cost_per_million_tokens at the decode roofline (memlib.serving.decode_bound)."""
    if tokens_per_s is None:
        tokens_per_s = decode_bound(_SV_MODEL, _H100, _SV_BATCH, _SV_CTX, weights="bf16").tokens_per_s
    return cost_per_million_tokens(_SV_PRICE, 1, tokens_per_s, util)


def _serve_weights_only() -> float:
    """The slip: the step reads only the weights (the 48 caches forgotten)."""
    d = decode_bound(_SV_MODEL, _H100, _SV_BATCH, _SV_CTX, weights="bf16")
    return _serve_usd(_SV_BATCH * d.bandwidth_bytes_per_s / d.weight_bytes)


EXERCISES = [
    Numeric(
        id="07.1", title="Pretraining FLOPs of Llama-2-7B", difficulty="warm-up", minutes=4,
        formula="training FLOPs 6·N·D (Kaplan et al. 2020; memlib.cost.training_flops)",
        prompt="Llama-2-7B was pretrained on 2.0T tokens. With the 6ND rule (no attention term) and the model's exact "
               "parameter count (`memlib.get_model('llama-2-7b').num_params`), how many FLOPs did its pretraining "
               "take? Write it like `\"1.2e21 FLOPs\"`.",
        expected=lambda: _6nd(), unit="FLOPs", tolerance=0.02,
        slips=(Slip("nominal 7B", lambda: _6nd(7e9),
                    "you used the nominal 7B; the model has fewer parameters (memlib.get_model(...).num_params)"),
               Slip("forward only", lambda: _6nd() / 3,
                    "2ND is the forward alone; the backward costs twice the forward"),
               Slip("backward = forward", lambda: _6nd() * 2 / 3,
                    "the backward computes two products per weight (the activations' gradient and the weights' "
                    "gradient): 4N, not 2N")),
        hints=("Each weight does one multiply-add per token in the forward (2 FLOPs) and two in the backward.",
               "C = 6 · N · D, N the parameters, D the tokens.",
               "Get N from memlib.get_model('llama-2-7b').num_params, then multiply by 6 and by 2e12."),
        worked=lambda: (f"6 × {n_params(_7B):,} × 2e12 = **{E(_6nd())} FLOPs** (`memlib.cost.training_flops`); "
                        f"with attention's 12·L·H·Q·T at 4,096 tokens, "
                        f"{E(cost.training_flops(_7B, _TOKENS, seq_len=_SEQ))}."),
    ),
    Numeric(
        id="07.2", title="How far past Chinchilla?", difficulty="warm-up", minutes=3,
        formula="compute-optimal tokens ~20 per parameter (Hoffmann et al. 2022; memlib.cost.chinchilla_tokens)",
        prompt="Chinchilla's rule: about 20 training tokens per parameter is compute-optimal. Llama 3 8B was "
               "pretrained on about 15T tokens (Llama 3 paper, Sec. 1). How many times Chinchilla's token count is "
               "that, with the model's exact parameter count (`memlib.get_model('llama-3-8b').num_params`)? Answer "
               "as a factor, e.g. `\"3.5x\"`.",
        expected=lambda: _L3_TOKENS / cost.chinchilla_tokens(_L3_8B), unit="x", tolerance=0.02,
        slips=(Slip("inverted", lambda: cost.chinchilla_tokens(_L3_8B) / _L3_TOKENS,
                    "you divided the wrong way round: Llama 3's tokens over Chinchilla's"),
               Slip("tokens per parameter", lambda: _L3_TOKENS / n_params(_L3_8B),
                    "that is tokens per parameter; compare it with Chinchilla's ~20 per parameter")),
        hints=("Chinchilla minimises training compute for a loss by balancing parameters and tokens.",
               "factor = tokens / (20 × N).",
               "Compute 20 × N with N = memlib.get_model('llama-3-8b').num_params first."),
        worked=lambda: (f"20 × {n_params(_L3_8B):,} = {cost.chinchilla_tokens(_L3_8B) / 1e9:.0f}B tokens; 15e12 / "
                        f"that = **{_L3_TOKENS / cost.chinchilla_tokens(_L3_8B):.1f}x** "
                        "(`memlib.cost.chinchilla_tokens`). On purpose: a small model trained far past the optimum "
                        "costs more to train but less to serve, and Meta reports the 8B's loss still falling "
                        "log-linearly at 15T tokens."),
    ),
    Numeric(
        id="07.3", title="Days on 256 B200s", difficulty="interview", minutes=6,
        formula="wall-clock = FLOPs / (GPUs x dense peak x MFU) (memlib.cost.training_run)",
        prompt=f"Take Llama-2-7B's pretraining FLOPs **with** the attention term at 4,096-token sequences "
               f"(`memlib.cost.training_flops('llama-2-7b', 2e12, seq_len=4096)`). Notebook 07 runs it on H100s; "
               f"you have {_GPUS} B200 GPUs instead, whose dense bf16 tensor peak is "
               f"{get_gpu(_B200).bf16_tflops:,.0f} TFLOP/s. At the same {_MFU:.0%} MFU, how many days of wall-clock "
               f"does the run take? Write it like `\"12.5 days\"`.",
        expected=lambda: _run(gpu=_B200).days, unit="days", tolerance=0.02,
        slips=(Slip("sparse peak", lambda: _days_at_peak(2 * get_gpu(_B200).bf16_tflops, _B200),
                    "you used the datasheet's figure \"with sparsity\", twice the dense peak"),
               Slip("peak, not MFU", lambda: _run(gpu=_B200, mfu=1.0).days,
                    "you assumed the GPUs run at 100% of their peak; they sustain the MFU"),
               Slip("GPU-days", lambda: _run(gpu=_B200).days * _GPUS,
                    "that is GPU-days (GPUs × days); the question asks how long the run takes"),
               Slip("no attention term", lambda: _run(gpu=_B200, seq_len=None).days,
                    "you left out the attention term the question includes"),
               Slip("H100s", lambda: _run().days, "that is the H100 run of notebook 07; use the B200's peak")),
        hints=("Time = work / rate: the rate is what all the GPUs sustain, not what the datasheet promises.",
               "days = FLOPs / (GPUs × peak × MFU) / 86,400.",
               "Compute the sustained rate first: 256 × the B200's dense bf16 peak × 0.4 FLOP/s."),
        worked=lambda: (f"{E(_run(gpu=_B200).flops)} FLOPs / ({_GPUS} × {get_gpu(_B200).bf16_tflops:,.0f}e12 × "
                        f"{_MFU}) = {_run(gpu=_B200).wall_clock_s:,.0f} s = **{_run(gpu=_B200).days:.1f} days** "
                        f"({_run(gpu=_B200).gpu_hours:,.0f} GPU-hours; `memlib.cost.training_run`): the B200's "
                        f"{get_gpu(_B200).bf16_tflops / get_gpu(_H100).bf16_tflops:.2f}x peak shortens notebook 07's "
                        f"{_run().days:.1f} days in proportion, if the MFU holds."),
    ),
    Implement(
        id="07.4", title="MFU from a measured throughput", difficulty="stretch", minutes=12,
        formula="MFU = model FLOPs per token x tokens/s per GPU / dense peak (Chowdhery et al. 2022, Sec. 4.1; "
                "memlib.cost.mfu_from_throughput)",
        prompt="Write `mfu(num_params, layers, heads, head_dim, seq_len, tokens_per_s_per_gpu, peak_tflops)` returning "
               "the model FLOPs utilisation as a fraction (0.4, not 40): the model's FLOPs per token, PaLM's "
               "6N + 12·L·H·Q·T (L layers, H heads, Q head_dim, T seq_len), times the tokens each GPU processes per "
               "second, over the GPU's dense peak (given in TFLOP/s). MFU counts the model's FLOPs only, whatever the "
               "run recomputes. Tested against `memlib.cost.mfu_from_throughput` on five published or typical "
               "throughputs and on shapes drawn at random each time you check.",
        function_name="mfu", reference_name="memlib.cost.mfu_from_throughput",
        cases=lambda: [_mfu_case("llama-65b", 2048, 380.0, 312.0),        # LLaMA (Touvron et al. 2023), Sec. 2.4
                       _mfu_case("llama-3.1-405b", 8192, 150.0, 989.4),   # ~400 TFLOP/s per GPU (Llama 3, Table 4)
                       _mfu_case("llama-2-7b", 4096, 8000.0, 989.4),
                       _mfu_case("mistral-7b", 8192, 3300.0, 312.0),
                       _mfu_case("llama-2-70b", 4096, 700.0, 989.4)],
        held_out=lambda rng: [_random_mfu_case(rng) for _ in range(3)],
        reference=_mfu,
        slips=(Slip("counted recompute", lambda k, w: w * palm_flops_per_token(
                        k["num_params"], k["layers"], k["heads"], k["head_dim"], k["seq_len"], "full")
                    / palm_flops_per_token(k["num_params"], k["layers"], k["heads"], k["head_dim"], k["seq_len"]),
                    "you counted the recomputed forward (8N + 16·L·H·Q·T): that is hardware FLOPs utilisation "
                    "(HFU); MFU counts the model's 6N + 12·L·H·Q·T"),
               Slip("no attention term", lambda k, w: _mfu({**k, "layers": 0}),
                    "the attention term 12·L·H·Q·T belongs to the model's FLOPs; 6N alone undercounts")),
        hints=("MFU is the fraction of the peak spent on the model's own arithmetic, measured from throughput.",
               "mfu = (6N + 12·L·H·Q·T) × tokens_per_s_per_gpu / (peak_tflops × 1e12).",
               "Write flops_per_token = 6 * num_params + 12 * layers * heads * head_dim * seq_len first."),
        worked=lambda: ("```python\ndef mfu(num_params, layers, heads, head_dim, seq_len, tokens_per_s_per_gpu, "
                        "peak_tflops):\n"
                        "    flops_per_token = 6 * num_params + 12 * layers * heads * head_dim * seq_len\n"
                        "    return flops_per_token * tokens_per_s_per_gpu / (peak_tflops * 1e12)\n```\n\n"
                        f"LLaMA-65B's 380 tokens/s per A100: **{_mfu(_mfu_case('llama-65b', 2048, 380.0, 312.0)):.1%}"
                        "** MFU, the figure memlib uses to reproduce Llama 2's published GPU-hours."),
    ),
    SpotError(
        id="07.5", title="Does recompute cost more on a deeper model?", difficulty="interview", minutes=6,
        formula="recompute's extra FLOPs: +2N + 4·L·H·Q·T on 6N + 12·L·H·Q·T (PaLM App. B; "
                "memlib.cost.timing.flops_per_token)",
        prompt="A circulating answer on gradient checkpointing (full activation recompute) says deeper models pay "
               "more for it. Find the error and give the extra training FLOPs of full recompute for Llama-3.1-70B at "
               "4,096-token sequences, in % of the step without recompute (`memlib.cost.timing.flops_per_token`).",
        quote="若模型层数多（如 70B 的 80 层），重计算开销更大，可能达 40%。",
        source="seed 001 (单卡训练大模型的显存极限), 梯度检查点一节",
        figures=(Figure("70B", "right", "the example model"),
                 Figure("80", "right", "Llama-2-70B and Llama-3.1-70B both have 80 decoder layers"),
                 Figure("40%", "error", "the extra compute does not grow with depth: each layer recomputes its own "
                                        "forward once, so the ratio is the same for 8 or 80 layers")),
        expected=lambda: _recompute_extra("full"), unit="%",
        slips=(Slip("selective", lambda: _recompute_extra("selective"),
                    "that is selective recompute (torchtitan's policy: every other matmul); the sentence is about "
                    "checkpointing that reruns each layer's whole forward"),
               Slip("the whole step again", lambda: 100.0,
                    "+100% would run the whole step twice; only the forward, a third of the step, runs again")),
        hints=("Recompute reruns the forward of each layer during its backward; nothing else runs twice.",
               "extra = (2N + 4·L·H·Q·T) / (6N + 12·L·H·Q·T).",
               "Notice that the numerator is a third of the denominator, term by term."),
        worked=lambda: (f"(2N + 4·L·H·Q·T) / (6N + 12·L·H·Q·T) = 1/3: **{_recompute_extra('full'):.1f}%** for "
                        f"Llama-3.1-70B (and for any depth). **40%** is the error: depth does not enter the ratio. "
                        f"Selective recompute costs {_recompute_extra('selective'):.0f}%."),
    ),
    Numeric(
        id="07.6", title="ZeRO-3's traffic per micro-batch", difficulty="stretch", minutes=10,
        formula="ZeRO-3 per micro-batch: all-gather (forward) + all-gather (backward) + reduce-scatter, (n-1)/n x "
                "2 bytes x psi each (Rajbhandari et al. 2020, Sec. 7; memlib.cost.timing.dp_collectives)",
        prompt=f"Llama-2-7B trains under DeepSpeed ZeRO-3 over {_GPUS} H100s, bf16 mixed precision, 2 micro-batches "
               f"per optimizer step. How many GB does **each GPU** send for **one micro-batch**? Ring collectives send "
               f"(n−1)/n of the tensor from each GPU; DeepSpeed communicates in bf16 and, by default, keeps the 0.5B "
               f"parameters it used last in the forward for the backward instead of gathering them again "
               f"(`stage3_max_reuse_distance`).",
        expected=_z3_bytes_per_micro_batch, unit="GB", tolerance=0.04, count=2, per="one",
        count_unit=("micro-batch", "micro-batches"),
        slips=(Slip("DDP's volume", _ddp_bytes,
                    "that is one all-reduce of the gradients (data parallelism without sharding); ZeRO-3 also "
                    "gathers the parameters for the forward and again for the backward"),),
        hints=("Sharded parameters must be assembled before each layer runs, in the forward and again in the "
               "backward; sharded gradients are summed and split after the backward.",
               "per micro-batch ≈ (n−1)/n × 2 bytes × (ψ + (ψ − 0.5B) + ψ).",
               "Compute 2 bytes × ψ for ψ = memlib.get_model('llama-2-7b').num_params first."),
        worked=lambda: (f"All-gather forward {2 * n_params(_7B) * 255 / 256 / 1e9:.1f} GB + all-gather backward "
                        f"{2 * (n_params(_7B) - 5e8) * 255 / 256 / 1e9:.1f} GB + reduce-scatter "
                        f"{2 * n_params(_7B) * 255 / 256 / 1e9:.1f} GB = **{_z3_bytes_per_micro_batch() / 1e9:.1f} GB** "
                        f"(`memlib.cost.timing.dp_collectives`), about 1.5x data parallelism's all-reduce "
                        f"({_ddp_bytes() / 1e9:.1f} GB). On 400 Gb/s (50 GB/s) that is "
                        f"{_z3_bytes_per_micro_batch() / 50e9:.2f} s per micro-batch, which must hide behind its "
                        "forward and backward."),
    ),
    Numeric(
        id="07.7", title="GPU-hours of a 70B fine-tune", difficulty="interview", minutes=6,
        formula="GPU-hours = hardware FLOPs / (dense peak x HFU) / 3600 (memlib.cost.training_run(..., hfu=))",
        prompt=f"Full fine-tuning of Llama-3.1-70B on 1B tokens of 4,096-token sequences needs full activation "
               f"recompute to fit, so count PaLM's FLOPs per token with the recomputed forward, 8N + 16·L·H·Q·T "
               f"(`memlib.cost.timing.flops_per_token(model, 4096, 'full')`). The GPUs run every one of those FLOPs "
               f"at {_MFU:.0%} of an H100's dense {get_gpu(_H100).bf16_tflops} TFLOP/s ({_MFU:.0%} hardware-FLOPs "
               f"utilisation, HFU; that is {_ft_mfu():.0%} MFU). How many GPU-hours does it take? The run uses 16 GPUs. Write "
               f"it like `\"123 GPU-hours\"`.",
        expected=lambda: _ft_hours(), unit="GPU-hours", tolerance=0.02,
        slips=(Slip("no recompute", lambda: _ft_hours(recompute="none"),
                    "you left out the recomputed forward the run needs to fit (+2N + 4·L·H·Q·T); model FLOPs over "
                    "40% of the peak would be 40% MFU, but the question gives HFU, which counts what the GPU runs"),
               Slip("6ND only", lambda: cost.gpu_hours(cost.training_flops(_70B, _FT_TOKENS), _H100, _MFU),
                    "6ND alone leaves out both the attention term and the recompute"),
               Slip("divided by the GPUs", lambda: _ft_hours() / 16,
                    "GPU-hours do not depend on how many GPUs share the work: you divided by the 16 GPUs (that is "
                    "hours of wall-clock)"),
               Slip("GPU-days", lambda: _ft_hours() / 24, "that is GPU-days; the question asks for GPU-hours")),
        hints=("GPU-hours measure the work at the rate one GPU sustains; the GPU count only changes the wall-clock.",
               "GPU-hours = flops_per_token (with recompute) × tokens / (989.4e12 × 0.4) / 3600.",
               "Get flops_per_token from memlib.cost.timing.flops_per_token(memlib.get_model('llama-3.1-70b'), 4096, "
               "'full')."),
        worked=lambda: (f"{flops_per_token(get_model(_70B), _SEQ, 'full'):.3g} FLOPs per token × 1e9 / "
                        f"({get_gpu(_H100).bf16_tflops}e12 × {_MFU}) / 3600 = **{_ft_hours():,.0f} GPU-hours** "
                        f"(`memlib.cost.training_run(..., hfu=0.4)`), {_ft_hours() / 16:.0f} hours on 16 GPUs if the "
                        "communication hides (notebook 07, step 6, finds it does not entirely). The same run is "
                        f"{_ft_mfu():.0%} MFU (model FLOPs 6N + 12·L·H·Q·T are 3/4 of the 8N + 16·L·H·Q·T it runs); "
                        f"at a true {_MFU:.0%} MFU it would take {_ft_hours(hfu=None, mfu=_MFU):,.0f} GPU-hours."),
    ),
    Choice(
        id="07.8", title="What sets the GPU count of the 70B fine-tune?", difficulty="interview", minutes=8,
        formula="fewest GPUs: the larger of the memory floor (memlib.parallel.plan.min_gpus) and the deadline's compute",
        prompt=f"You must fully fine-tune Llama-3.1-70B on 1B tokens (4,096-token sequences) on H100 80GB GPUs "
               f"within {_DEADLINE_DAYS} days, its kernels at about {_MFU:.0%} of peak ({_MFU:.0%} HFU, recompute "
               f"counted). How many GPUs do you rent?",
        options=(Option("a", "Enough for the FLOPs to finish by the deadline: GPU-hours / (7 × 24), rounded up",
                        lambda: (f"the FLOPs would finish on {_gpus_for_deadline()} GPUs, but the model states "
                                 "alone do not fit on so few"),
                        misconception="the GPU count follows from the compute budget alone"),
                 Option("b", "The fewest GPUs on which some layout fits in memory (memlib.parallel.plan.min_gpus)",
                        lambda: f"{_gpus_for_memory()} H100s; they finish the FLOPs well inside the deadline", "1"),
                 Option("c", "As many as the budget allows: more GPUs finish the same GPU-hours sooner at no cost",
                        "more GPUs shorten the days but expose more communication: the GPU-hours grow",
                        misconception="GPU-hours stay fixed however many GPUs share them"),
                 Option("d", "One GPU: LoRA-style fine-tuning needs no more than inference",
                        "full fine-tuning keeps gradients and AdamW states for every weight: 16 bytes per parameter",
                        misconception="fine-tuning needs about the memory of inference")),
        reasons=(Option("1", "full fine-tuning's model states (16 bytes/param, over a terabyte) need more GPUs than "
                             "the FLOPs do"),
                 Option("2", "fine-tuning FLOPs are negligible, so any GPU count finishes in time",
                        "the FLOPs are small, but memory still sets a floor"),
                 Option("3", "tensor parallelism needs the GPU count to be a power of two",
                        "tensor parallelism needs a degree that divides the heads; that is not why")),
        right=_what_decides,
        hints=("Two constraints: the work must finish by the deadline, and every GPU must hold its share of the run.",
               "compute: ceil(GPU-hours / (7 × 24)); memory: 16 bytes/param × 70B / 80 GB, plus activations.",
               "Compute both counts; the larger one decides."),
        worked=lambda: (f"The FLOPs ({_ft_hours():,.0f} GPU-hours with recompute) would finish in {_DEADLINE_DAYS} "
                        f"days on {_gpus_for_deadline()} GPUs, but no layout fits fewer than **{_gpus_for_memory()} "
                        f"H100s** (`memlib.parallel.plan.min_gpus`): **({_what_decides()})**. Memory decides the count; on "
                        f"{_gpus_for_memory()} GPUs the run takes about "
                        f"{_ft_hours() / _gpus_for_memory() / 24:.1f} days of compute."),
    ),
    Numeric(
        id="07.9", title="What MFU do DeepSeek-V3's GPU-hours imply?", difficulty="stretch", minutes=10,
        formula="implied MFU = 6 x active parameters x tokens / (GPU-hours x 3600 x dense peak) "
                "(memlib.cost.reproduce_published)",
        prompt="DeepSeek-V3's report: \"At an economical cost of only 2.664M H800 GPU hours, we complete the "
               "pre-training of DeepSeek-V3 on 14.8T tokens\" (its full training, with context extension and "
               "post-training, is 2.788M). Count the work the way DeepSeek does: **250 GFLOP of training per token** "
               "(forward and backward at 4,096-token sequences, attention included; Zhao et al. 2025, \"Insights "
               "into DeepSeek-V3\", Table 2), against the H800's dense bf16 peak (the H100 SXM's "
               f"{get_gpu(_H100).bf16_tflops} TFLOP/s). What MFU does the pretraining imply? Answer in %. (6ND on "
               "the 37B activated parameters, attention excluded, is accepted too and named.)",
        expected=lambda: _ds_mfu(), unit="%", tolerance=0.02,
        accepts=(Slip("6ND on activated parameters", lambda: _ds_mfu(params=_DS_ACTIVE),
                      "6ND on the 37B activated parameters, attention excluded"),),
        slips=(Slip("total parameters", lambda: _ds_mfu(params=_DS_TOTAL),
                    "you used all 671B parameters: over 100%, impossible. Each token passes through 37B; 6N counts "
                    "the active parameters of a mixture of experts"),
               Slip("fp8 peak", lambda: _ds_mfu(peak="fp8"),
                    "you divided by the fp8 peak; the question asks against the bf16 dense peak"),
               Slip("whole training", lambda: _ds_mfu(hours=_DS_ALL_HOURS),
                    "2.788M GPU-hours include context extension and post-training; the 14.8T tokens took 2.664M"),
               # the same slips made under the accepted 6ND convention
               Slip("fp8 peak", lambda: _ds_mfu(params=_DS_ACTIVE, peak="fp8"),
                    "you divided by the fp8 peak; the question asks against the bf16 dense peak"),
               Slip("whole training", lambda: _ds_mfu(params=_DS_ACTIVE, hours=_DS_ALL_HOURS),
                    "2.788M GPU-hours include context extension and post-training; the 14.8T tokens took 2.664M")),
        hints=("MFU compares the model's FLOPs with what the GPUs could have done in the hours they ran.",
               "MFU = FLOPs per token × tokens / (GPU-hours × 3600 × dense peak FLOP/s).",
               "Compute the FLOPs first (250e9 per token × 14.8e12 tokens), then the GPUs' capacity in FLOPs."),
        worked=lambda: (f"DeepSeek's convention: 250e9 × 14.8e12 = {E(_DS_GFLOP_PER_TOKEN * _DS_TOKENS)} FLOPs over "
                        f"2.664e6 × 3600 × {get_gpu(_H100).bf16_tflops}e12 = **{_ds_mfu():.1f}%**. 6ND on the 37B "
                        f"activated parameters alone (attention excluded) gives {_ds_mfu(params=_DS_ACTIVE):.1f}%: "
                        "say which convention you count in; memlib's `reproduce_published` uses its own per-layer "
                        "count (validation/published_gpu_hours.json); against the fp8 peak "
                        f"the GEMMs ran at, {_ds_mfu(peak='fp8'):.0f}%. A dense 671B would have needed "
                        f"{_DS_TOTAL / _DS_ACTIVE:.0f}x the FLOPs."),
    ),
    SelfAssessed(
        id="07.10", title="A budget request for both runs", difficulty="stretch", minutes=15,
        formula="a budget: FLOPs, MFU, GPU count from memory and deadline, GPU-hours and cost, with the assumptions "
                "(memlib.cost, memlib.parallel.plan)",
        prompt="Your manager asks for a budget: pretrain a 7B on 2T tokens, then fully fine-tune a 70B on 1B tokens, "
               "on rented H100s. Write the request: the compute of each run, the MFU you assume and why, the GPU "
               "count of each and what decides it, days and GPU-hours, the cost at a price you state, and the risks "
               "that would make it more expensive. Then mark your answer against the rubric.",
        rubric=("FLOPs from 6ND (plus the attention term), with the exact parameter count",
                "An MFU stated as an assumption with a reference point (Llama 3 reports 38-43% on H100s)",
                "Pretraining: hundreds of GPUs for days; the count is chosen for the deadline, and the network decides "
                "whether communication hides (400 Gb/s vs 200 Gb/s)",
                "Fine-tuning: memory sets the GPU count (16 bytes/param for full fine-tuning), recompute adds a third "
                "of the FLOPs",
                "GPU-hours times a stated price per GPU-hour, for each run",
                "Risks: failures and restarts, evaluation and checkpoints, lower MFU at scale; a margin on top"),
        hints=("Start from the work (FLOPs), then the rate you can defend (MFU), then what constrains the GPU count.",
               "GPU-hours = FLOPs / (989.4e12 × MFU) / 3600; days = GPU-hours / GPUs / 24; cost = GPU-hours × price.",
               "Write the two runs as two lines of a table: FLOPs, GPUs, days, GPU-hours, cost."),
        worked=lambda: (lambda pre, ft: (
            f"Pretraining: {E(pre.flops)} FLOPs (6ND + attention); at {_MFU:.0%} MFU (Llama 3: 38-43% on H100s) on "
            f"{_GPUS} H100s, {pre.days:.1f} days, {pre.gpu_hours:,.0f} GPU-hours, ${pre.cost(2.0):,.0f} at $2 per "
            f"GPU-hour, if the network (400 Gb/s per GPU) hides ZeRO-3's traffic. Fine-tuning: memory sets "
            f"{_gpus_for_memory()} H100s (16 bytes/param of model states); {ft:,.0f} GPU-hours with full recompute "
            f"(+33% FLOPs, at {_MFU:.0%} HFU = {_ft_mfu():.0%} MFU), about ${2.0 * ft:,.0f}. Add a margin for failures, restarts, evaluation and checkpoints "
            f"(published runs come out 5-15% above 6ND at their MFU) and for a lower MFU at scale."))(
            _run(), _ft_hours()),
    ),
    Numeric(
        id="07.11", title="How often to checkpoint a 4,096-GPU run", difficulty="interview", minutes=8,
        formula="Young's interval sqrt(2 x write time x MTBF) (Young 1974; memlib.cost.checkpointing)",
        prompt="You pretrain Llama-3.1-70B (`memlib.get_model('llama-3.1-70b').num_params`) on 4,096 H100s with bf16 "
               "mixed-precision AdamW. A checkpoint holds what a restart needs (bf16 weights, fp32 master copy, Adam "
               "m and v) and is written at 200 GB/s, blocking training while it writes. Your GPUs fail at the rate "
               "Llama 3 saw: 419 unexpected interruptions in 54 days on 16,384 GPUs, a rate that grows with the "
               "GPU count. With Young's first-order rule, how many **seconds** apart should the checkpoints be?",
        expected=lambda: _ck(), unit="s", tolerance=0.03,
        slips=(Slip("MTBF not scaled", lambda: _ck(gpus=16384),
                    "that is the MTBF of a 16,384-GPU job; with a quarter of the GPUs failures come 4x less often"),
               Slip("gradients saved", lambda: _ck_bytes(16),
                    "a checkpoint needs no gradients: 2 + 12 bytes per parameter, not 16"),
               Slip("no factor 2", lambda: _ck(two=1.0), "Young's rule is sqrt(2 x write time x MTBF)")),
        hints=("Save too often and the stalls add up; too rarely and each failure redoes more work: balance them.",
               "interval = sqrt(2 x write x MTBF); write = 14 B x N / 200 GB/s; MTBF = 54 days / 419 x 16,384 / "
               "4,096.",
               "Start with the checkpoint's bytes: 14 x memlib.get_model('llama-3.1-70b').num_params."),
        worked=lambda: (
            f"Checkpoint: 14 B x {n_params(_70B):,} = "
            f"{checkpointing.checkpoint_size_bytes(_70B) / 1e9:,.0f} GB, written in "
            f"{checkpointing.checkpoint_size_bytes(_70B) / _CK_RATE:.2f} s. MTBF: 54 x 86,400 / 419 = "
            f"{checkpointing.job_mtbf_s(419, 54):,.0f} s at 16,384 GPUs, x 4 = "
            f"{checkpointing.job_mtbf_s(419, 54, gpus=16384, at_gpus=_CK_GPUS):,.0f} s at 4,096. Interval: "
            f"sqrt(2 x write x MTBF) = **{_ck():,.0f} s** (about {_ck() / 60:.0f} minutes; "
            f"`memlib.cost.young_interval_s`), losing "
            f"{checkpointing.checkpoint_waste(_ck(), checkpointing.checkpoint_size_bytes(_70B) / _CK_RATE, checkpointing.job_mtbf_s(419, 54, gpus=16384, at_gpus=_CK_GPUS)):.1%} "
            f"of the run; asynchronous saves shrink the stall and the loss."),
    ),
    Numeric(
        id="07.12", title="What a million served tokens cost", difficulty="interview", minutes=8,
        formula="decode step >= (weights read + batch x KV cache) / HBM bandwidth (memlib.serving.decode_bound); "
                "$ per million tokens = GPUs x $/GPU-hour / (tokens/s x 3,600 x utilisation) x 1e6 "
                "(memlib.cost.serving_cost.cost_per_million_tokens)",
        prompt="You rent one **H100 SXM** (3.35 TB/s of HBM) at **$3.00 per GPU-hour** to serve **Llama-3.1-8B** "
               "in bf16 (about 15 GB of weights read per decode step: everything but the embedding table; 32 layers, "
               "8 KV heads, head dim 128). It decodes **48 chats** at once, each holding **4,096 tokens** of bf16 KV "
               "cache, and is busy **40%** of the hours you pay for. Take the decode step at its memory roofline. "
               "What does a million output tokens cost you, in dollars?",
        expected=lambda: _serve_usd(), unit="USD", tolerance=0.03,
        slips=(Slip("utilisation left out", lambda: _serve_usd(util=1.0),
                    "you pay for every hour, busy or not: divide by the 40% busy share"),
               Slip("one chat's speed", lambda: _serve_usd(
                   decode_bound(_SV_MODEL, _H100, _SV_BATCH, _SV_CTX, weights="bf16").tokens_per_s_per_sequence),
                    "a step makes one token for each of the 48 chats, not one token"),
               Slip("cache reads left out", _serve_weights_only,
                    "each step also reads all 48 chats' KV cache, not only the weights")),
        hints=("Throughput first: how long is one decode step, and how many tokens does it make?",
               "Step = (15 GB + 48 x 4,096 x 131,072 B) / 3.35 TB/s; tokens/s = 48 / step.",
               "$ per million = $3.00 / (tokens/s x 3,600 x 0.4) x 1e6."),
        worked=lambda: (lambda d: (
            f"KV per chat: 4,096 x 131,072 B = {4096 * 131072 / 1e9:.2f} GB; a step reads {d.weight_bytes / 1e9:.1f} GB "
            f"of weights + 48 caches = {d.bytes_read / 1e9:.1f} GB in {d.step_s * 1e3:.2f} ms "
            f"(`memlib.serving.decode_bound`), so {d.tokens_per_s:,.0f} tokens/s. Busy 40% of an hour: "
            f"{d.tokens_per_s * 3600 * 0.4 / 1e6:.1f} million tokens for $3.00: **${_serve_usd():.2f} per million** "
            "(`memlib.cost.serving_cost.cost_per_million_tokens`). Real kernels reach 50-80% of the roofline, so the "
            "real bill is higher; a bigger batch or a busier server lowers it."))(
            decode_bound(_SV_MODEL, _H100, _SV_BATCH, _SV_CTX, weights="bf16")),
    ),
]
