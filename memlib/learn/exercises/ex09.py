"""Exercises for notebook 09: quantization. A zero-point by hand, bits per weight of a grouped format,
a model's 4-bit weights, the batch where decode turns compute-bound, a batch-1 decode step, which format
speeds up a large batch, the "4 bits is a quarter" error, what GPTQ/AWQ/SmoothQuant do, and a serving
proposal with its caveats."""

from __future__ import annotations

from memlib.hardware.gpus import get_gpu
from memlib.models import get_model
from memlib.learn.exercises.kinds import (Choice, Figure, Implement, MultiChoice, Numeric, Option, SelfAssessed,
                                          Slip, SpotError)
from memlib.serving.capacity import decode_bound
from memlib.serving.inference import estimate_inference
from memlib.serving.quantization import (affine_params, bits_per_weight, decode_crossover_batch, decode_speedup,
                                         decode_speedup_end_batch, dequantize, quantize, scaled_format_bits)
from memlib.training.fp8 import fp8_training_memory
from memlib.units import fmt_bytes

NOTEBOOK = "09_quantization"
_LO, _HI = -0.5, 3.0                    # 09.1: a calibration range of activations
_QWEN = "qwen2.5-72b"                   # 09.3
_A100 = "a100-80gb"                     # 09.4
_8B, _4090, _CTX6 = "llama-3.1-8b", "rtx-4090", 1024          # 09.6
_BIG_BATCH, _SHORT = 2048, 128          # 09.5: Llama-3.1-8B on an H100
_13B = "llama-2-13b"                    # 09.7
_AWQ_BITS = bits_per_weight(4, 128, scale_bits=16, zero_bits=4)
_FP4_MODEL = "llama-2-70b"              # 09.11


# --- 09.1: the zero-point ----------------------------------------------------------------------
def _zero_point(levels: int = 255) -> float:
    """Z = round(-min / S), S = (max - min) / levels (memlib.serving.quantization.affine_params uses 255)."""
    if levels == 255:
        return float(affine_params([_LO, _HI], bits=8, symmetric=False).zero_point)
    return float(round(-_LO / ((_HI - _LO) / levels)))


# --- 09.5: which format speeds up a large batch ----------------------------------------------------
_FORMATS_5 = {"a": ("int4-awq", "16-bit"), "b": ("int8", "int8"), "c": ("int8", "16-bit")}


def _gain(key: str) -> float:
    w, a = _FORMATS_5[key]
    return decode_speedup(_8B, "h100-80gb", _BIG_BATCH, _SHORT, w, a)


def _fastest() -> str:
    gains = {k: _gain(k) for k in _FORMATS_5}
    best = max(gains, key=gains.get)
    return best if gains[best] > 1.05 else "d"


def _step(weights: str) -> float:
    return decode_bound(_8B, _4090, 1, _CTX6, weights).step_s


def _w(model: str, weights: str) -> float:
    return float(estimate_inference(model, weights=weights).weight_bytes)


# --- 09.11: FP4 projections ------------------------------------------------------------------------
def _proj_weights() -> int:
    """Weights of the decoder projections: every parameter but the embedding, the head and the norms."""
    m = get_model(_FP4_MODEL)
    vh = m.vocab_size * m.hidden_size
    return m.num_params - (1 if m.tie_word_embeddings else 2) * vh - (2 * m.num_layers + 1) * m.hidden_size


def _fp4_bytes(fmt: str) -> float:
    """Bytes of the projections in `fmt` (the per-tensor scales, 32 bits per matrix, are within a byte of nothing)."""
    return _proj_weights() * scaled_format_bits(fmt) / 8


# --- 09.12: fp8 training's states -------------------------------------------------------------------
_FP8_MODEL = "mistral-7b"


def _fp8_states(recipe: str = "te-fp8") -> float:
    """Model states of one unsharded replica (memlib.training.fp8.fp8_training_memory)."""
    return fp8_training_memory(_FP8_MODEL, recipe).state_bytes


def _fp8_n() -> tuple[int, int]:
    x = fp8_training_memory(_FP8_MODEL, "te-fp8")
    return x.params, x.linear_params


# --- 09.10: the round trip ----------------------------------------------------------------------
def _round_trip(k: dict) -> float:
    """What x comes back as after symmetric (absmax) quantization to `bits` (memlib.serving.quantization)."""
    p = affine_params([k["absmax"], -k["absmax"]], bits=k["bits"], symmetric=True)
    return dequantize(quantize([k["x"]], p), p)[0]


def _round_trip_case(rng) -> dict:
    bits = rng.choice((3, 4, 8))
    absmax = round(rng.uniform(0.05, 20.0), 4)
    step = absmax / (2 ** (bits - 1) - 1)
    x = round(rng.choice((-1, 1)) * rng.uniform(1.3 * step, absmax), 6)  # at least one step from 0: never 0
    return dict(x=x, absmax=absmax, bits=bits)


EXERCISES = [
    Numeric(
        id="09.1", title="The zero-point of an int8 activation range", difficulty="warm-up", minutes=4,
        formula="asymmetric (min/max) quantization: S = (max − min) / (2^b − 1), Z = round(−min / S) (Jacob et al. "
                "2018, Sec. 2.1; memlib.serving.quantization.affine_params)",
        prompt=f"Calibration finds a layer's activations between **{_LO}** and **{_HI}**. You quantize them to uint8 "
               "(codes 0 to 255) with a scale and a zero-point, min/max style. Which integer code stands for the real "
               "value 0 (the zero-point Z)?",
        expected=_zero_point, unit="count", tolerance=0.0, abs_tol=0.5,
        slips=(Slip("256 levels", lambda: _zero_point(256),
                    "8 bits give 256 codes but 255 steps between the smallest and the largest: S = (max − min) / 255"),
               Slip("symmetric", lambda: 0.0, "Z = 0 is symmetric (absmax) quantization; a min/max range shifts it"),
               Slip("max instead of min", lambda: float(round(_HI / ((_HI - _LO) / 255))),
                    "Z maps the real 0: it is −min / S, the number of steps from the bottom of the range to 0")),
        hints=("The codes 0..255 cover [min, max]; 0 sits somewhere inside, a whole number of steps above min.",
               "S = (max − min) / 255; Z = round(−min / S).",
               f"Compute S = ({_HI} − ({_LO})) / 255 first."),
        worked=lambda: (f"S = ({_HI} + {-_LO}) / 255 = {(_HI - _LO) / 255:.6f}; Z = round({-_LO} / S) = "
                        f"round({-_LO / ((_HI - _LO) / 255):.2f}) = **{_zero_point():.0f}** "
                        "(`memlib.serving.quantization.affine_params(..., symmetric=False)`). The real 0 is exact, so "
                        "zero padding and ReLU zeros cost no error."),
    ),
    Numeric(
        id="09.2", title="Bytes per weight of a 3-bit GPTQ checkpoint", difficulty="warm-up", minutes=4,
        formula="bits per weight = b + (scale bits + zero bits) / g (memlib.serving.quantization.bits_per_weight)",
        prompt="A GPTQ checkpoint stores 3-bit weights in groups of **64**, each group with an fp16 scale and a "
               "3-bit zero-point. How many **bytes** per weight does it take, scales included?",
        expected=lambda: bits_per_weight(3, 64, scale_bits=16, zero_bits=3) / 8, unit="bytes/param", tolerance=0.004,
        slips=(Slip("no zero-point", lambda: bits_per_weight(3, 64) / 8,
                    "the asymmetric format stores a 3-bit zero-point per group too"),
               Slip("no scales", lambda: 3 / 8, "each group of 64 weights also stores its fp16 scale"),
               Slip("bits", lambda: bits_per_weight(3, 64, scale_bits=16, zero_bits=3),
                    "that is bits per weight; the question asks for bytes")),
        hints=("A group's scale and zero-point are shared by its 64 weights.",
               "bits = 3 + (16 + 3) / 64; bytes = bits / 8.",
               "Compute the overhead per weight, 19 / 64 bits, first."),
        worked=lambda: (f"3 + 16/64 + 3/64 = {bits_per_weight(3, 64, 16, 3):.4f} bits = **"
                        f"{bits_per_weight(3, 64, 16, 3) / 8:.4f} bytes** per weight "
                        "(`memlib.serving.quantization.bits_per_weight(3, 64, 16, 3)`): the metadata is 9% of a "
                        "3-bit weight, against 4% at 4 bits with g128."),
    ),
    Numeric(
        id="09.3", title="Qwen2.5-72B in AWQ int4", difficulty="interview", minutes=5,
        formula="weights = quantized projections at b + 20/128 bits + 16-bit embeddings, head and norms "
                "(memlib.estimate_inference)",
        prompt=f"How many GB (10⁹ bytes) do the weights of **{_QWEN}** take as an AWQ int4 checkpoint (group size "
               "128, fp16 scales, 4-bit zero-points; embeddings, head and norms stay 16-bit), as "
               "`memlib.estimate_inference(..., weights='int4-awq')` lays them out?",
        expected=lambda: _w(_QWEN, "int4-awq"), unit="GB", tolerance=0.02,
        slips=(Slip("nominal 72B x 0.5", lambda: 72e9 * 0.5,
                    "72B × 0.5 byte leaves out the scales and zero-points and the 16-bit embeddings and head"),
               Slip("bf16", lambda: _w(_QWEN, "bf16"), "that is the bf16 checkpoint"),
               Slip("all 4-bit", lambda: get_model(_QWEN).num_params * _AWQ_BITS / 8,
                    "the embeddings and the head stay 16-bit")),
        hints=("Only the decoder layers' projections are quantized; the 152k-token vocabulary's embedding and "
               "head are not.",
               "bytes ≈ projection weights × 4.156 / 8 + (embedding + head + norms) × 2.",
               f"Start from memlib.get_model({_QWEN!r}).num_params and its vocabulary × hidden size."),
        worked=lambda: (f"`estimate_inference({_QWEN!r}, weights='int4-awq').weight_bytes` = **"
                        f"{fmt_bytes(_w(_QWEN, 'int4-awq'))}**, against {fmt_bytes(_w(_QWEN, 'bf16'))} in bf16 "
                        f"({_w(_QWEN, 'bf16') / _w(_QWEN, 'int4-awq'):.2f}×, not 4×: the untied 152k-vocabulary "
                        "embedding and head stay 16-bit)."),
    ),
    Numeric(
        id="09.4", title="Where W4A16 decode turns compute-bound on an A100", difficulty="interview", minutes=6,
        formula="crossover batch B* = ridge × bits / 16, ridge = dense peak / HBM bandwidth "
                "(memlib.serving.quantization.decode_crossover_batch)",
        prompt=f"On an **A100 80GB** ({get_gpu(_A100).bf16_tflops:g} TFLOP/s dense bf16, "
               f"{get_gpu(_A100).memory_bandwidth_gb_per_s:,.0f} GB/s), a decode step with AWQ int4 g128 weights "
               f"({_AWQ_BITS:.3f} bits each, dequantized to bf16 for the matmul) reads each weight once for the whole "
               "batch. Ignoring the KV cache, above which batch size do the weight matmuls become compute-bound?",
        expected=lambda: decode_crossover_batch(_A100, _AWQ_BITS), unit="count", tolerance=0.02,
        slips=(Slip("bf16 weights", lambda: decode_crossover_batch(_A100, 16),
                    "that is the crossover of bf16 weights; int4 weights bring fewer bytes per FLOP"),
               Slip("int8 tensor cores", lambda: decode_crossover_batch(_A100, _AWQ_BITS, "int8"),
                    "W4A16 computes in bf16 after dequantizing: its roof is the bf16 peak"),
               Slip("flat 4 bits", lambda: decode_crossover_batch(_A100, 4),
                    "the scales and zero-points are read too: 4.156 bits, not 4")),
        hints=("Arithmetic intensity = FLOPs per byte read; a kernel is compute-bound above the GPU's ridge point.",
               "intensity = 2·B FLOPs per weight / (bits / 8) bytes; set it equal to peak / bandwidth.",
               "Compute the ridge point 312e12 / 2.039e12 first."),
        worked=lambda: (f"ridge = {get_gpu(_A100).bf16_tflops:g}e12 / {get_gpu(_A100).memory_bandwidth_gb_per_s:,.0f}e9 "
                        f"= {decode_crossover_batch(_A100, 16):.0f} FLOP/byte; B* = ridge × {_AWQ_BITS:.3f} / 16 = **"
                        f"{decode_crossover_batch(_A100, _AWQ_BITS):.0f}** sequences "
                        "(`memlib.serving.quantization.decode_crossover_batch`). Past it the int4 step is compute-bound, "
                        f"but bf16 weights stay memory-bound up to {decode_crossover_batch(_A100, 16):.0f}, so int4 is "
                        "still faster in between; its gain shrinks and ends at that larger ridge "
                        f"(`decode_speedup_end_batch`: {decode_speedup_end_batch(_A100, _AWQ_BITS):.0f})."),
    ),
    Choice(
        id="09.5", title="A large batch: which format decodes faster?", difficulty="interview", minutes=6,
        formula="decode roofline: max(bytes / bandwidth, FLOPs / peak) per format "
                "(memlib.serving.quantization.decode_speedup)",
        prompt=f"You serve **{_8B}** on one H100 80GB with **{_BIG_BATCH:,}** sequences decoded together, each with "
               f"about {_SHORT} tokens of context (short chats, a full server). Against bf16 weights, which change "
               "shortens the decode step the most (memlib's roofline)?",
        options=(Option("a", "AWQ int4 weights, W4A16 (dequantized to bf16 for the matmul)",
                        lambda: f"{_gain('a'):.2f}×: the step is compute-bound, and the FLOPs are bf16 either way",
                        misconception="fewer bytes always mean a faster step"),
                 Option("b", "SmoothQuant W8A8: int8 weights and activations on the int8 tensor cores",
                        lambda: f"{_gain('b'):.2f}×: the int8 tensor cores double the compute roof", "1"),
                 Option("c", "int8 per-channel weights dequantized to bf16 for the matmul (a W8A16 kernel)",
                        lambda: f"{_gain('c'):.2f}×: half the bytes, but the bytes no longer decide the step",
                        misconception="int8 storage means int8 arithmetic"),
                 Option("d", "None of them: quantization never speeds up decoding",
                        "W8A8 does, because it changes the compute roof, not the bytes",
                        misconception="quantization only saves memory")),
        reasons=(Option("1", "past the crossover batch the step is compute-bound; only a format that computes in "
                             "int8 raises the roof"),
                 Option("2", "int4 has the fewest bytes, so it is always the fastest",
                        "bytes decide the step only below the crossover batch"),
                 Option("3", "dequantizing int4 costs more FLOPs than the matmul",
                        "the roofline here counts no dequantization at all; the reason is the compute roof")),
        right=_fastest,
        hints=("Decide first whether this step is memory-bound or compute-bound.",
               "crossover batch = ridge × bits / 16: about 295 for bf16 and 77 for int4 on an H100.",
               f"At {_BIG_BATCH:,} sequences every format is past its crossover: which one changes the peak?"),
        worked=lambda: (f"At {_BIG_BATCH:,} sequences of {_SHORT} tokens the step is compute-bound: W4A16 gives "
                        f"{_gain('a'):.2f}×, W8A16 {_gain('c'):.2f}×, W8A8 **{_gain('b'):.2f}×** "
                        f"(`decode_speedup`): **({_fastest()})**, because only W8A8 runs on the int8 tensor cores."),
    ),
    Numeric(
        id="09.6", title="A batch-1 decode step on a gaming card", difficulty="interview", minutes=6,
        formula="memory-bound step = (weight bytes + KV bytes) / HBM bandwidth (memlib.serving.decode_bound)",
        prompt=f"**{_8B}** with AWQ int4 weights on one **RTX 4090** ({get_gpu(_4090).memory_bandwidth_gb_per_s:,.0f} "
               f"GB/s), one chat with {_CTX6:,} tokens of bf16 KV cache. What is the shortest possible decode step "
               "(memlib's roofline: every weight read once, except the embedding table of which only one row is "
               "read, plus the whole KV cache)? Answer in ms, like `\"9.9 ms\"`.",
        expected=lambda: _step("int4-awq"), unit="s", tolerance=0.02,
        slips=(Slip("bf16", lambda: _step("bf16"), "that is the bf16 model's step"),
               Slip("embedding read", lambda: _step("int4-awq") + estimate_inference(_8B, weights="int4-awq").weight_parts[
                   "embedding"] / get_gpu(_4090).memory_bandwidth_bytes_per_s,
                    "a step reads only the batch's rows of the embedding table, not the whole table")),
        hints=("At batch 1 the step is memory-bound: its time is the bytes it reads over the bandwidth.",
               "step = (weights without the embedding table + KV cache) / 1,008 GB/s.",
               "Get the weight bytes from memlib.estimate_inference(..., weights='int4-awq').weight_parts."),
        worked=lambda: (lambda b: (f"{fmt_bytes(b.weight_bytes)} of weights (embedding table excluded) + "
                                   f"{fmt_bytes(b.kv_bytes)} of KV cache over {b.bandwidth_bytes_per_s / 1e9:,.0f} GB/s "
                                   f"= **{b.step_s * 1e3:.2f} ms**, {b.tokens_per_s_per_sequence:.0f} tokens/s at "
                                   f"most (`memlib.serving.decode_bound`); bf16 takes {_step('bf16') * 1e3:.1f} "
                                   "ms."))(decode_bound(_8B, _4090, 1, _CTX6, "int4-awq")),
    ),
    SpotError(
        id="09.7", title="\"4 bits is a quarter of fp16\"", difficulty="interview", minutes=6,
        formula="AWQ int4 g128 = 4 + 20/128 bits per projection weight; embeddings and head 16-bit "
                "(memlib.estimate_inference)",
        prompt=f"A deployment note sizes **{_13B}** as an AWQ int4 checkpoint (group size 128, fp16 scales, 4-bit "
               "zero-points). Find where it goes wrong and give the right size of its weights in GB.",
        quote="Llama-2-13B 用 AWQ int4（g128）部署：每个权重 4 bit，是 fp16 的 1/4，所以权重约 6.5GB，一张 T4 16GB 绰绰有余。",
        source="a circulating deployment note (paraphrased)",
        figures=(Figure("4 bit", "error", "each weight also carries its share of the group's fp16 scale and 4-bit "
                                         "zero-point: 4.156 bits", group="bits"),
                 Figure("1/4", "error", "the projections shrink 16/4.156 = 3.85×, and the embedding and head stay "
                                       "16-bit", group="bits"),
                 Figure("6.5GB", "inherits", "13e9 × 0.5 byte; the error above carries into it"),
                 Figure("16GB", "right", "a T4 has 16 GB; the weights fit with room for the KV cache")),
        expected=lambda: _w(_13B, "int4-awq"), unit="GB", tolerance=0.02,
        slips=(Slip("13e9 x 0.5", lambda: 13e9 * 0.5, "that is the note's own product"),
               Slip("bf16", lambda: _w(_13B, "bf16"), "that is the bf16 checkpoint")),
        hints=("Count what a 4-bit format stores besides the 4-bit codes, and what it does not quantize.",
               "bytes = projections × (4 + 16/128 + 4/128) / 8 + embeddings and head × 2 bytes.",
               "Get the answer's check from memlib.estimate_inference('llama-2-13b', weights='int4-awq')."),
        worked=lambda: (f"**\"4 bit\"** is the error (and \"1/4\" with it): the checkpoint is **"
                        f"{fmt_bytes(_w(_13B, 'int4-awq'))}** (`memlib.estimate_inference`), "
                        f"{_w(_13B, 'bf16') / _w(_13B, 'int4-awq'):.2f}× smaller than bf16, not 4×. It still fits a "
                        "T4 with room for the KV cache."),
    ),
    MultiChoice(
        id="09.8", title="What GPTQ, AWQ and SmoothQuant do", difficulty="interview", minutes=6,
        formula="PTQ methods: GPTQ (Hessian-based error compensation), AWQ (activation-aware scaling), SmoothQuant "
                "(outlier migration, W8A8)",
        prompt="Which of these statements are true?",
        options=(Option("a", "GPTQ quantizes a weight matrix column by column and updates the columns not yet "
                             "quantized to compensate each rounding error, using the inverse Hessian of the layer's "
                             "squared error on calibration inputs",
                        "that is GPTQ (Frantar et al. 2022), an Optimal Brain Quantization update"),
                 Option("b", "AWQ keeps the ~1% salient weights in fp16 and quantizes the rest",
                        "AWQ's paper starts from that observation but scales the salient channels up instead, so every "
                        "weight stays int4 (no mixed-precision kernel)",
                        misconception="AWQ is a mixed-precision format"),
                 Option("c", "SmoothQuant divides each activation channel by s_j = max|X_j|^α / max|W_j|^(1−α) and "
                             "multiplies the matching weights by s_j, so both quantize to int8",
                        "that is SmoothQuant (Xiao et al. 2022); α = 0.5 for OPT and BLOOM"),
                 Option("d", "GPTQ needs the model's training data and several epochs of fine-tuning",
                        "GPTQ is post-training: 128 calibration segments, a few GPU hours for 175B",
                        misconception="accurate quantization needs retraining (QAT)"),
                 Option("e", "Outlier features (hidden dimensions up to 20× larger) appear in every layer from "
                             "about 6.7B parameters, which is why naive per-tensor int8 activations fail there",
                        "LLM.int8()'s finding (Dettmers et al. 2022, Sec. 4)"),
                 Option("f", "W4A16 formats speed up prefill the most",
                        "prefill is compute-bound; W4A16 computes in 16-bit, so it mainly speeds small-batch decode",
                        misconception="fewer bits speed up every phase")),
        right=lambda: frozenset({"a", "c", "e"}),
        hints=("Separate the weight-only methods (GPTQ, AWQ) from the one that quantizes activations too.",
               "GPTQ: error compensation; AWQ: scaling before rounding; SmoothQuant: moving outliers across the matmul.",
               "Check each option against what the method stores and when it runs (after training or during it)."),
        worked=lambda: ("**(a), (c), (e)**. (b) is AWQ's motivation, not its method: it scales salient channels so "
                        "all weights stay int4; (d) GPTQ is post-training with a small calibration set; (f) W4A16 "
                        "helps memory-bound decode, not compute-bound prefill."),
    ),
    SelfAssessed(
        id="09.9", title="Should we serve our 70B in int4?", difficulty="stretch", minutes=12,
        formula="memory (memlib.estimate_inference), decode roofline (memlib.serving.quantization), published accuracy",
        prompt="Your team serves Llama-3-70B in bf16 on pairs of H100s and wants to move to AWQ int4 to cut cost. "
               "Write the recommendation: what it saves in memory and GPUs, what it does to latency at low load and "
               "to throughput at high load, what accuracy it costs and how you would check it, and what you would "
               "quantize next. Then mark your answer against the rubric.",
        rubric=("Weights about 3.8× smaller (not 4×): one H100 instead of two, or far more KV cache on two",
                "Batch-1 decode up to ~3.8× faster on the same cards (memory-bound; ~1.9× per sequence for int4 on "
                "one card against bf16 on two), less with real kernels",
                "At high load the per-step gain shrinks past int4's ridge (~77 sequences on an H100) and is gone "
                "near bf16's (~295); real W4A16 kernels lose it earlier (dequantization); the throughput gain "
                "comes from the larger batch that fits",
                "Accuracy: published 4-bit g128 perplexity costs are small on 70B (AWQ: +0.09 on Llama-2-70B), "
                "but must be checked on the team's own tasks",
                "Alternatives: W8A8/fp8 for compute-bound load; KV-cache quantization for long contexts"),
        hints=("Separate memory, latency and throughput: quantization changes each differently.",
               "weights × 4.156/16; batch-1 step ∝ bytes; crossover = ridge × bits / 16.",
               "Compute the weights in int4 first with memlib.estimate_inference."),
        worked=lambda: (f"Weights: {fmt_bytes(_w('llama-3-70b', 'int4-awq'))} in int4 against "
                        f"{fmt_bytes(_w('llama-3-70b', 'bf16'))} in bf16, so one H100 holds the model with room for "
                        f"the KV cache. Batch 1: up to {decode_speedup('llama-3-70b', 'h100-80gb', 1, 1024, 'int4-awq', tp=2):.1f}× "
                        "faster steps on the same two cards (roofline; kernels reach ~3.4×). High load: the gain shrinks "
                        f"past about {decode_crossover_batch('h100-80gb', _AWQ_BITS):.0f} sequences (int4's ridge) and "
                        f"is gone near {decode_speedup_end_batch('h100-80gb', _AWQ_BITS):.0f} (bf16's), earlier with "
                        "real kernels, but more sequences fit. Accuracy: AWQ's Table 4 has Llama-2-70B at 3.41 vs 3.32 perplexity; "
                        "run the team's evals before switching. Next: an fp8 KV cache for long chats; W8A8 or fp8 if "
                        "the load is compute-bound."),
    ),
    Implement(
        id="09.10", title="Quantize and dequantize one value", difficulty="stretch", minutes=10,
        formula="symmetric (absmax) quantization: S = absmax / (2^(b−1) − 1), x̂ = S · clamp(round(x / S)) "
                "(LLM.int8() Sec. 2.1; memlib.serving.quantization.quantize, dequantize)",
        prompt="Write `round_trip(x, absmax, bits)` returning the value x comes back as after symmetric (absmax) "
               "quantization to `bits`-bit signed integers and back: the scale S = absmax / (2^(bits−1) − 1) (127 "
               "for 8 bits: the codes run from −127 to 127), the code round(x / S) (Python's round), the result "
               "S × code. Tested against `memlib.serving.quantization` on four values and on values drawn at random "
               "each time you check.",
        function_name="round_trip", reference_name="memlib.serving.quantization.dequantize(quantize(...))",
        cases=lambda: [dict(x=0.5, absmax=1.0, bits=8), dict(x=-0.37, absmax=2.54, bits=8),
                       dict(x=1.1, absmax=3.0, bits=4), dict(x=-0.9, absmax=1.5, bits=3)],
        held_out=lambda rng: [_round_trip_case(rng) for _ in range(4)],
        reference=_round_trip,
        slips=(Slip("2^bits levels", lambda k, w: (k["absmax"] / 2 ** (k["bits"] - 1)) * round(
                        k["x"] / (k["absmax"] / 2 ** (k["bits"] - 1))),
                    "a signed b-bit symmetric code runs to 2^(b−1) − 1 (127 for int8), so S = absmax / 127, not / 128"),
               Slip("truncated", lambda k, w: (k["absmax"] / (2 ** (k["bits"] - 1) - 1)) * int(
                        k["x"] / (k["absmax"] / (2 ** (k["bits"] - 1) - 1))),
                    "int() truncates toward zero; quantization rounds to the nearest code")),
        hints=("The code is the nearest multiple of the step S; dequantizing multiplies it back.",
               "S = absmax / (2^(bits−1) − 1); return S * round(x / S).",
               "Write S = absmax / (2 ** (bits - 1) - 1) first."),
        worked=lambda: ("```python\ndef round_trip(x, absmax, bits):\n"
                        "    scale = absmax / (2 ** (bits - 1) - 1)\n"
                        "    return scale * round(x / scale)\n```\n\n"
                        f"0.5 at 8 bits with absmax 1 comes back as **{_round_trip(dict(x=0.5, absmax=1.0, bits=8)):.5f}**"
                        " (63.5 rounds to 64, half to even); the error is at most S/2."),
    ),
    Numeric(
        id="09.11", title="A 70B's projections in NVFP4", difficulty="interview", minutes=5,
        formula="block-scaled FP4: 4 bits per E2M1 value + scale bits / block (+ 32 bits per tensor) "
                "(memlib.serving.quantization.scaled_format_bits; NVIDIA NVFP4, OCP MX v1.0)",
        prompt=(f"A Blackwell deployment stores the decoder projections of **{_FP4_MODEL}** "
                f"({_proj_weights() / 1e9:.2f} billion weights; embeddings, head and norms stay bf16) in "
                "**NVFP4**: E2M1 values (4 bits), one E4M3 scale per block of 16 values, and one fp32 scale "
                "per tensor. How many GB do the projections take?"),
        expected=lambda: _fp4_bytes("nvfp4"), unit="GB", tolerance=0.01,
        slips=(Slip("MXFP4", lambda: _fp4_bytes("mxfp4"),
                    "that is MXFP4: an 8-bit scale per 32 values; NVFP4 puts one per 16"),
               Slip("no scales", lambda: _proj_weights() * 4 / 8,
                    "each block of 16 values also stores its 8-bit E4M3 scale: 0.5 bits per weight"),
               Slip("16-bit scales", lambda: _proj_weights() * (4 + 16 / 16) / 8,
                    "NVFP4's block scale is an 8-bit E4M3, not fp16")),
        hints=("Bits per weight = the value's bits + its share of the block's scale (+ a negligible per-tensor one).",
               "bits = 4 + 8 / 16; bytes = weights × bits / 8.",
               "Compute the bits per weight first."),
        worked=lambda: (f"4 + 8/16 = {scaled_format_bits('nvfp4'):.1f} bits per weight (the fp32 per-tensor scales add "
                        f"32 bits per matrix): {_proj_weights() / 1e9:.2f}e9 × 4.5 / 8 = **{fmt_bytes(_fp4_bytes('nvfp4'))}"
                        "** (`memlib.serving.quantization.scaled_format_bits('nvfp4')`). MXFP4 would take "
                        f"{fmt_bytes(_fp4_bytes('mxfp4'))} (4.25 bits: a power-of-two E8M0 scale per 32): NVFP4 spends "
                        "6% more bytes on a finer, more precise scale."),
    ),
    Numeric(
        id="09.12", title="What fp8 training does to the model states", difficulty="interview", minutes=6,
        formula="bytes per parameter of each state a recipe keeps; Transformer Engine adds an fp8 weight and its "
                "transpose per linear weight (memlib.training.fp8.fp8_training_memory)",
        prompt=(f"A team trains **{_FP8_MODEL}** ({_fp8_n()[0] / 1e9:.2f} billion parameters, of which "
                f"{_fp8_n()[1] / 1e9:.2f} billion are the decoder layers' linear weights) with Megatron-LM and "
                "AdamW, and switches from bf16 mixed precision to Transformer Engine's fp8 recipe on H100s "
                "(per-tensor scaling). Megatron keeps bf16 weights, fp32 main gradients, fp32 master weights "
                "and fp32 Adam moments; TE casts each linear weight to fp8 and caches that copy and its "
                "transpose. How many GB of model states does one unsharded replica hold under fp8?"),
        expected=lambda: _fp8_states("te-fp8"), unit="GB",
        slips=(Slip("bf16 states", lambda: _fp8_states("megatron-bf16"),
                    "that is the bf16 run: fp8 does not replace any state, it adds the fp8 copies of the linear weights"),
               Slip("fp8 weights replace bf16", lambda: 17 * _fp8_n()[0],
                    "the bf16 weights stay (TE casts from them each step); fp8 is an extra copy, not a smaller one"),
               Slip("16 bytes per parameter", lambda: 16 * _fp8_n()[0],
                    "Megatron's bf16 layout is 18 bytes per parameter (its main gradients are fp32), and fp8 adds to it"),
               Slip("one fp8 copy", lambda: 18 * _fp8_n()[0] + _fp8_n()[1],
                    "TE keeps the fp8 weight and its transpose (the backward's matmul reads Wᵀ): 2 bytes per linear "
                    "weight")),
        hints=("List what each parameter keeps before and after the switch; which of them does fp8 touch?",
               "states = 18 bytes × all parameters + 2 bytes × linear weights.",
               "Start from Megatron's bf16 ledger: 2 + 4 + 4 + 4 + 4 bytes per parameter."),
        worked=lambda: (f"18 × {_fp8_n()[0] / 1e9:.2f}e9 + 2 × {_fp8_n()[1] / 1e9:.2f}e9 = "
                        f"**{fmt_bytes(_fp8_states())}** (`memlib.training.fp8.fp8_training_memory`), "
                        f"{fmt_bytes(_fp8_states() - _fp8_states('megatron-bf16'))} **more** than in bf16. fp8 "
                        "training saves compute (the fp8 tensor cores) and some saved activations (the linears' "
                        "fp8 inputs), not the states; fp8 primary weights (`fp8_model_init`) or sharding the "
                        "optimizer are what shrink those."),
    ),
]
