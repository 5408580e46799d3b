"""Interview scenarios for the mock interview: an open question with a setup drawn from memlib's catalogs,
a rubric whose figures memlib computes when shown, and for each rubric point a practice kind that drills it.

    s = build("04", 17)        # the same scenario for everyone who asks for topic 04 with seed 17
    s.rubric()                 # the points, figures computed now
    s.model_answer()           # a spoken-style answer, figures computed now
    s.drills[2]                # (topic, kind): the practice question that pushes on point 3

The exercise notebooks' open questions are fixed; these are drawn afresh, so a mock interview does not
replay what the learner has already answered. A follow-up asks about the point the learner missed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

from memlib.cost import compute_budget as cost
from memlib.hardware.fit import fits
from memlib.hardware.gpus import get_gpu
from memlib.models import get_model
from memlib.parallel import zero
from memlib.serving.capacity import decode_bound, vllm_max_concurrency
from memlib.serving.inference import estimate_inference, kv_bytes_per_token
from memlib.serving.quantization import decode_speedup
from memlib.units import fmt_bytes


@dataclass(frozen=True)
class Scenario:
    id: str  # "m04.17"
    topic: str
    title: str
    prompt: str
    points: tuple[Callable[[], str], ...]  # the rubric, each rendered with memlib's figures when shown
    answer: Callable[[], str]  # the model answer
    drills: tuple[tuple[str, int], ...]  # per point: (topic, kind index of memlib.learn.exercises.practice.KINDS)

    def rubric(self) -> tuple[str, ...]:
        return tuple(p() for p in self.points)

    def model_answer(self) -> str:
        return self.answer()


def _train(sid: str, rng: random.Random) -> Scenario:
    from memlib.training import estimate_training
    m = rng.choice(("llama-2-7b", "llama-3-8b", "qwen2.5-7b", "llama-2-13b", "qwen3-32b", "llama-3.1-70b"))
    g, n = rng.choice(("a100-80gb", "h100-80gb")), rng.choice((1, 8, 16))
    n_params = get_model(m).num_params
    states = lambda: zero.zero_model_state_bytes(n_params, 0, 1)  # noqa: E731
    per_gpu = lambda: zero.zero_model_state_bytes(n_params, 3 if n > 1 else 0, n)  # noqa: E731
    est = lambda: estimate_training(m, seq_len=2048, recompute="full", zero_stage=3 if n > 1 else 0, dp=n)  # noqa: E731
    verdict = lambda: fits(est(), g)  # noqa: E731
    word = lambda: "fits" if verdict().fits else "does not fit"  # noqa: E731
    where = "one" if n == 1 else f"{n}"
    return Scenario(
        sid, "03", f"Full fine-tuning {m} on {where} {g}",
        f"Can you fully fine-tune **{m}** (2k-token sequences) on **{where} {g}**? Give the verdict and the two or "
        "three figures behind it, then what you would do if it does not fit.",
        (lambda: f"Model states at 16 B per parameter (mixed-precision AdamW): {fmt_bytes(states())} in all",
         lambda: (f"Sharded over {n} GPUs (ZeRO-3 / FSDP): {fmt_bytes(per_gpu())} per GPU" if n > 1 else
                  "On one GPU ZeRO/FSDP shards nothing: the whole 16 B per parameter stays on the card"),
         lambda: "Activations come on top, set by sequence length and recompute; the peak is one moment of the step",
         lambda: f"The verdict: a peak of {fmt_bytes(est().peak_bytes)} per GPU {word()} on a {g}",
         lambda: "If not: LoRA/QLoRA (a frozen 16-bit or 4-bit base), more GPUs, or offload, and what each costs"),
        lambda: (f"{m} has {n_params / 1e9:.1f}B parameters, so mixed-precision AdamW keeps {fmt_bytes(states())} of "
                 "states. " + (f"ZeRO-3 over {n} GPUs leaves {fmt_bytes(per_gpu())} each; " if n > 1 else
                               "One GPU shards nothing; ")
                 + f"with full recompute at 2k tokens memlib's peak is {fmt_bytes(est().peak_bytes)} per GPU: it "
                 f"{word()}. " + ("" if verdict().fits else "Without more GPUs, LoRA or QLoRA is the lever: the base "
                                  "then costs 2 or about 0.5 bytes per parameter.")),
        (("01", 0), ("01", 1), ("02", 0), ("03", 1), ("02", 1)))


def _serve(sid: str, rng: random.Random) -> Scenario:
    m, ctx = rng.choice(("llama-3.1-70b", "llama-3-8b", "qwen2.5-72b")), rng.choice((4096, 8192, 32768))
    g = rng.choice(("a100-80gb", "h100-80gb", "h200"))
    tp = rng.choice((2, 4, 8)) if get_model(m).num_params > 3e10 else rng.choice((1, 2))
    weights = lambda: estimate_inference(m, weights="bf16", tp=tp).weight_bytes  # noqa: E731
    kvb = lambda: kv_bytes_per_token(get_model(m))  # noqa: E731
    chats = lambda: vllm_max_concurrency(m, g, ctx, weights="bf16", tp=tp)  # noqa: E731
    step = lambda: decode_bound(m, g, max(1, int(chats())), ctx, "bf16", tp=tp)  # noqa: E731
    return Scenario(
        sid, "04", f"Serving {m} on {tp} x {g}",
        f"How many concurrent **{ctx:,}-token** chats can **{m}** (bf16) serve with vLLM on **{tp} x {g}** (tensor "
        "parallel)? Walk through the memory, then say what limits speed.",
        (lambda: f"Weights per GPU: about {fmt_bytes(weights())} (bf16 split over {tp})",
         lambda: f"KV cache per token: {kvb():,} bytes over all layers (GQA: KV heads, not query heads)",
         lambda: f"vLLM reserves 0.9 of each card by default; what is left after weights and activations holds about "
                 f"{chats():.1f} chats of {ctx:,} tokens",
         lambda: f"Decode is memory-bound: each step reads weights plus cache, about "
                 f"{step().step_s * 1e3:.1f} ms at that batch; Little's law links rate, latency and chats in flight"),
        lambda: (f"Each GPU holds {fmt_bytes(weights())} of weights; a token costs {kvb():,} bytes of KV cache, so a "
                 f"{ctx:,}-token chat needs {fmt_bytes(kvb() * ctx)}. At vLLM's default 0.9, memlib's startup model "
                 f"gives room for {chats():.1f} such chats. Decode then reads weights and cache each step: about "
                 f"{step().step_s * 1e3:.1f} ms per token at that batch, so memory sets both capacity and speed."),
        (("03", 0), ("04", 0), ("04", 1), ("04", 3)))


def _moe(sid: str, rng: random.Random) -> Scenario:
    m = rng.choice(("mixtral-8x7b", "qwen3-235b-a22b", "deepseek-v3", "gpt-oss-120b", "llama-4-maverick"))
    model = get_model(m)
    bf16 = lambda: estimate_inference(m, weights="bf16").weight_bytes  # noqa: E731
    batch = rng.choice((64, 256))
    return Scenario(
        sid, "05", f"Serving the MoE {m}",
        f"**{m}** is a mixture of experts. Why is it cheap in FLOPs but not in memory, and what does that mean for "
        f"serving it at a batch of **{batch}** sequences?",
        (lambda: f"Memory holds every expert: {model.num_params / 1e9:.0f}B parameters, {fmt_bytes(bf16())} in bf16",
         lambda: f"Compute follows the active parameters: {model.num_active_params / 1e9:.1f}B per token, "
                 f"{model.num_params / model.num_active_params:.1f}x fewer",
         lambda: f"Each expert sees batch x top-k / experts = {batch * model.num_experts_per_tok / model.num_experts:.3g}"
                 " tokens per step: weight reads are reused little, so decode stays memory-bound",
         lambda: f"The KV cache depends on attention, not experts: {kv_bytes_per_token(model):,} bytes per token"
                 + (" (MLA's latent, replicated under TP)" if model.kv_lora_rank else "")),
        lambda: (f"All {model.num_params / 1e9:.0f}B parameters must be resident ({fmt_bytes(bf16())} in bf16) though a "
                 f"token uses only {model.num_active_params / 1e9:.1f}B. At batch {batch} each expert gets about "
                 f"{batch * model.num_experts_per_tok / model.num_experts:.3g} tokens per step, so the step still reads "
                 "most expert weights for little compute: serve with expert parallelism across enough GPUs to hold "
                 "them, and batch large."),
        (("05", 2), ("05", 0), ("05", 3), ("05", 4 if model.kv_lora_rank else 1)))


def _time(sid: str, rng: random.Random) -> Scenario:
    m, tokens = rng.choice(("llama-3-8b", "llama-2-13b", "qwen3-32b", "llama-3.1-70b")), rng.choice((1e12, 2e12, 15e12))
    g, n = rng.choice(("h100-80gb", "a100-80gb")), rng.choice((256, 1024, 4096))
    flops = lambda: cost.training_flops(m, tokens)  # noqa: E731
    hours = lambda: cost.gpu_hours(flops(), g, 0.4)  # noqa: E731
    return Scenario(
        sid, "07", f"Pretraining {m} on {tokens / 1e12:g}T tokens",
        f"How long does pretraining **{m}** on **{tokens / 1e12:g}T tokens** take on **{n} {g}** GPUs, and what "
        "would make it slower than your estimate?",
        (lambda: f"Training FLOPs 6ND = {flops():.2e}",
         lambda: f"At an assumed 40% MFU of the dense bf16 peak: {hours():,.0f} GPU-hours",
         lambda: f"Wall clock = GPU-hours / GPUs: {hours() / n / 24:,.1f} days on {n}",
         lambda: "Failures and checkpoints cost time: at this scale a job is interrupted every few hours",
         lambda: "MFU counts model FLOPs; recompute makes the hardware busier (HFU) without raising MFU"),
        lambda: (f"6ND gives {flops():.2e} FLOPs. At 40% MFU on {g} that is {hours():,.0f} GPU-hours, "
                 f"{hours() / n / 24:,.1f} days on {n} GPUs. The 40% is an assumption to say aloud; restarts after failures "
                 "and checkpoint stalls come on top, and recompute adds hardware FLOPs that MFU does not count."),
        (("07", 0), ("07", 1), ("07", 1), ("07", 2), ("07", 3)))


def _quant(sid: str, rng: random.Random) -> Scenario:
    m, g = rng.choice(("llama-3.1-70b", "llama-2-70b", "llama-3-8b")), rng.choice(("h100-80gb", "a100-80gb"))
    bf16 = lambda: estimate_inference(m, weights="bf16").weight_bytes  # noqa: E731
    int4 = lambda: estimate_inference(m, weights="int4-awq").weight_bytes  # noqa: E731
    b1 = lambda: decode_speedup(m, g, 1, 1024, "int4-awq", tp=2)  # noqa: E731
    b256 = lambda: decode_speedup(m, g, 256, 1024, "int4-awq", tp=2)  # noqa: E731
    return Scenario(
        sid, "09", f"int4 for {m}",
        f"You serve **{m}** on **{g}** GPUs. Would you quantize the weights to int4 (AWQ)? What does it save, when "
        "is it faster, and what does it risk?",
        (lambda: f"Weights: {fmt_bytes(bf16())} in bf16 vs {fmt_bytes(int4())} in int4 g128 (scales included)",
         lambda: f"At batch 1 decode is memory-bound: about {b1():.1f}x faster on the same two GPUs",
         lambda: f"The gain shrinks once int4 turns compute-bound and is gone once bf16 does: {b256():.2f}x at batch "
                 "256 (roofline, dequantization not counted)",
         lambda: "Accuracy: weight-only int4 with activation-aware scales keeps most quality; check on your task"),
        lambda: (f"int4 takes the weights from {fmt_bytes(bf16())} to {fmt_bytes(int4())}, freeing cards or cache. At "
                 f"batch 1 the step is memory-bound and reads {1 / b1():.0%} of the bytes: ~{b1():.1f}x faster on the same GPUs. At batch 256 "
                 f"the roofline gives {b256():.2f}x: the matmuls turn compute-bound, so the speed-up fades with batch."),
        (("09", 0), ("09", 2), ("09", 3), ("09", 1)))


BUILDERS: dict[str, Callable[[str, random.Random], Scenario]] = {
    "03": _train, "04": _serve, "05": _moe, "07": _time, "09": _quant}


def build(topic: str, seed: int) -> Scenario:
    """The scenario of `topic` for `seed`, reproducibly."""
    if not isinstance(topic, str) or topic not in BUILDERS:
        raise ValueError(f"no scenario for topic {topic!r}; scenarios exist for {', '.join(BUILDERS)}")
    from memlib._checks import positive_int
    seed = positive_int("seed", seed, allow_zero=True)  # the id and the draw read it: 8.5, "8", None are errors
    return BUILDERS[topic](f"m{topic}.{seed}", random.Random(f"scenario:{topic}:{seed}"))
