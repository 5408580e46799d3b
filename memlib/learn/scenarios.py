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
from memlib.learn.i18n import msg
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
    word = lambda: msg("fits") if verdict().fits else msg("does not fit")  # noqa: E731
    where = msg("one") if n == 1 else f"{n}"
    return Scenario(
        sid, "03", msg("Full fine-tuning {model} on {where} {gpu}", model=m, where=where, gpu=g),
        msg("Can you fully fine-tune **{model}** (2k-token sequences) on **{where} {gpu}**? Give the verdict and the "
            "two or three figures behind it, then what you would do if it does not fit.", model=m, where=where, gpu=g),
        (lambda: msg("Model states at 16 B per parameter (mixed-precision AdamW): {states} in all",
                     states=fmt_bytes(states())),
         lambda: (msg("Sharded over {n} GPUs (ZeRO-3 / FSDP): {per_gpu} per GPU", n=n, per_gpu=fmt_bytes(per_gpu()))
                  if n > 1 else msg("On one GPU ZeRO/FSDP shards nothing: the whole 16 B per parameter stays on the "
                                    "card")),
         lambda: msg("Activations come on top, set by sequence length and recompute; the peak is one moment of the "
                     "step"),
         lambda: msg("The verdict: a peak of {peak} per GPU {verdict} on a {gpu}", peak=fmt_bytes(est().peak_bytes),
                     verdict=word(), gpu=g),
         lambda: msg("If not: LoRA/QLoRA (a frozen 16-bit or 4-bit base), more GPUs, or offload, and what each costs")),
        lambda: msg("{model} has {params}B parameters, so mixed-precision AdamW keeps {states} of states. {sharding}with "
                    "full recompute at 2k tokens memlib's peak is {peak} per GPU: it {verdict}. {lever}", model=m,
                    params=f"{n_params / 1e9:.1f}", states=fmt_bytes(states()),
                    sharding=msg("ZeRO-3 over {n} GPUs leaves {per_gpu} each; ", n=n, per_gpu=fmt_bytes(per_gpu()))
                    if n > 1 else msg("One GPU shards nothing; "), peak=fmt_bytes(est().peak_bytes), verdict=word(),
                    lever="" if verdict().fits else msg("Without more GPUs, LoRA or QLoRA is the lever: the base then "
                                                        "costs 2 or about 0.5 bytes per parameter.")),
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
        sid, "04", msg("Serving {model} on {tp} x {gpu}", model=m, tp=tp, gpu=g),
        msg("How many concurrent **{ctx}-token** chats can **{model}** (bf16) serve with vLLM on **{tp} x {gpu}** "
            "(tensor parallel)? Walk through the memory, then say what limits speed.", ctx=f"{ctx:,}", model=m, tp=tp,
            gpu=g),
        (lambda: msg("Weights per GPU: about {weights} (bf16 split over {tp})", weights=fmt_bytes(weights()), tp=tp),
         lambda: msg("KV cache per token: {kv} bytes over all layers (GQA: KV heads, not query heads)", kv=f"{kvb():,}"),
         lambda: msg("vLLM reserves 0.9 of each card by default; what is left after weights and activations holds "
                     "about {chats} chats of {ctx} tokens", chats=f"{chats():.1f}", ctx=f"{ctx:,}"),
         lambda: msg("Decode is memory-bound: each step reads weights plus cache, about {ms} ms at that batch; "
                     "Little's law links rate, latency and chats in flight", ms=f"{step().step_s * 1e3:.1f}")),
        lambda: msg("Each GPU holds {weights} of weights; a token costs {kv} bytes of KV cache, so a {ctx}-token chat "
                    "needs {chat}. At vLLM's default 0.9, memlib's startup model gives room for {chats} such chats. "
                    "Decode then reads weights and cache each step: about {ms} ms per token at that batch, so memory "
                    "sets both capacity and speed.", weights=fmt_bytes(weights()), kv=f"{kvb():,}", ctx=f"{ctx:,}",
                    chat=fmt_bytes(kvb() * ctx), chats=f"{chats():.1f}", ms=f"{step().step_s * 1e3:.1f}"),
        (("03", 0), ("04", 0), ("04", 1), ("04", 3)))


def _moe(sid: str, rng: random.Random) -> Scenario:
    m = rng.choice(("mixtral-8x7b", "qwen3-235b-a22b", "deepseek-v3", "gpt-oss-120b", "llama-4-maverick"))
    model = get_model(m)
    bf16 = lambda: estimate_inference(m, weights="bf16").weight_bytes  # noqa: E731
    batch = rng.choice((64, 256))
    return Scenario(
        sid, "05", msg("Serving the MoE {model}", model=m),
        msg("**{model}** is a mixture of experts. Why is it cheap in FLOPs but not in memory, and what does that mean "
            "for serving it at a batch of **{batch}** sequences?", model=m, batch=batch),
        (lambda: msg("Memory holds every expert: {params}B parameters, {bf16} in bf16",
                     params=f"{model.num_params / 1e9:.0f}", bf16=fmt_bytes(bf16())),
         lambda: msg("Compute follows the active parameters: {active}B per token, {ratio}x fewer",
                     active=f"{model.num_active_params / 1e9:.1f}",
                     ratio=f"{model.num_params / model.num_active_params:.1f}"),
         lambda: msg("Each expert sees batch x top-k / experts = {tokens} tokens per step: weight reads are reused "
                     "little, so decode stays memory-bound",
                     tokens=f"{batch * model.num_experts_per_tok / model.num_experts:.3g}"),
         lambda: msg("The KV cache depends on attention, not experts: {kv} bytes per token{mla}",
                     kv=f"{kv_bytes_per_token(model):,}",
                     mla=msg(" (MLA's latent, replicated under TP)") if model.kv_lora_rank else "")),
        lambda: msg("All {params}B parameters must be resident ({bf16} in bf16) though a token uses only {active}B. At "
                    "batch {batch} each expert gets about {tokens} tokens per step, so the step still reads most expert "
                    "weights for little compute: serve with expert parallelism across enough GPUs to hold them, and "
                    "batch large.", params=f"{model.num_params / 1e9:.0f}", bf16=fmt_bytes(bf16()),
                    active=f"{model.num_active_params / 1e9:.1f}", batch=batch,
                    tokens=f"{batch * model.num_experts_per_tok / model.num_experts:.3g}"),
        (("05", 2), ("05", 0), ("05", 3), ("05", 4 if model.kv_lora_rank else 1)))


def _time(sid: str, rng: random.Random) -> Scenario:
    m, tokens = rng.choice(("llama-3-8b", "llama-2-13b", "qwen3-32b", "llama-3.1-70b")), rng.choice((1e12, 2e12, 15e12))
    g, n = rng.choice(("h100-80gb", "a100-80gb")), rng.choice((256, 1024, 4096))
    flops = lambda: cost.training_flops(m, tokens)  # noqa: E731
    hours = lambda: cost.gpu_hours(flops(), g, 0.4)  # noqa: E731
    return Scenario(
        sid, "07", msg("Pretraining {model} on {tokens}T tokens", model=m, tokens=f"{tokens / 1e12:g}"),
        msg("How long does pretraining **{model}** on **{tokens}T tokens** take on **{n} {gpu}** GPUs, and what would "
            "make it slower than your estimate?", model=m, tokens=f"{tokens / 1e12:g}", n=n, gpu=g),
        (lambda: msg("Training FLOPs 6ND = {flops}", flops=f"{flops():.2e}"),
         lambda: msg("At an assumed 40% MFU of the dense bf16 peak: {hours} GPU-hours", hours=f"{hours():,.0f}"),
         lambda: msg("Wall clock = GPU-hours / GPUs: {days} days on {n}", days=f"{hours() / n / 24:,.1f}", n=n),
         lambda: msg("Failures and checkpoints cost time: at this scale a job is interrupted every few hours"),
         lambda: msg("MFU counts model FLOPs; recompute makes the hardware busier (HFU) without raising MFU")),
        lambda: msg("6ND gives {flops} FLOPs. At 40% MFU on {gpu} that is {hours} GPU-hours, {days} days on {n} GPUs. "
                    "The 40% is an assumption to say aloud; restarts after failures and checkpoint stalls come on top, "
                    "and recompute adds hardware FLOPs that MFU does not count.", flops=f"{flops():.2e}", gpu=g,
                    hours=f"{hours():,.0f}", days=f"{hours() / n / 24:,.1f}", n=n),
        (("07", 0), ("07", 1), ("07", 1), ("07", 2), ("07", 3)))


def _quant(sid: str, rng: random.Random) -> Scenario:
    m, g = rng.choice(("llama-3.1-70b", "llama-2-70b", "llama-3-8b")), rng.choice(("h100-80gb", "a100-80gb"))
    bf16 = lambda: estimate_inference(m, weights="bf16").weight_bytes  # noqa: E731
    int4 = lambda: estimate_inference(m, weights="int4-awq").weight_bytes  # noqa: E731
    b1 = lambda: decode_speedup(m, g, 1, 1024, "int4-awq", tp=2)  # noqa: E731
    b256 = lambda: decode_speedup(m, g, 256, 1024, "int4-awq", tp=2)  # noqa: E731
    return Scenario(
        sid, "09", msg("int4 for {model}", model=m),
        msg("You serve **{model}** on **{gpu}** GPUs. Would you quantize the weights to int4 (AWQ)? What does it save, "
            "when is it faster, and what does it risk?", model=m, gpu=g),
        (lambda: msg("Weights: {bf16} in bf16 vs {int4} in int4 g128 (scales included)", bf16=fmt_bytes(bf16()),
                     int4=fmt_bytes(int4())),
         lambda: msg("At batch 1 decode is memory-bound: about {speedup}x faster on the same two GPUs",
                     speedup=f"{b1():.1f}"),
         lambda: msg("The gain shrinks once int4 turns compute-bound and is gone once bf16 does: {speedup}x at batch "
                     "256 (roofline, dequantization not counted)", speedup=f"{b256():.2f}"),
         lambda: msg("Accuracy: weight-only int4 with activation-aware scales keeps most quality; check on your task")),
        lambda: msg("int4 takes the weights from {bf16} to {int4}, freeing cards or cache. At batch 1 the step is "
                    "memory-bound and reads {share} of the bytes: ~{speedup}x faster on the same GPUs. At batch 256 the "
                    "roofline gives {speedup256}x: the matmuls turn compute-bound, so the speed-up fades with batch.",
                    bf16=fmt_bytes(bf16()), int4=fmt_bytes(int4()), share=f"{1 / b1():.0%}", speedup=f"{b1():.1f}",
                    speedup256=f"{b256():.2f}"),
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
