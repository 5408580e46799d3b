"""Unlimited practice: a fresh question of a topic's kinds, its setup drawn from memlib's catalogs.

    build("03", 17)   # the same Numeric exercise for everyone who asks for topic 03 with seed 17

Each topic (the notebooks 00-09) has a few kinds of question; a seed picks one kind and a setup
(model, GPU, precision, counts) from the catalogs. The expected value, the worked answer and every
figure in it are computed by memlib when asked for (the same callables as the fixed exercises); the
question's id, "pNN.SEED", is enough to rebuild it after a kernel restart.
"""

from __future__ import annotations

import math
import random
import re
from typing import Callable

from memlib.cost import checkpointing
from memlib.cost import compute_budget as cost
from memlib.hardware.gpus import get_gpu
from memlib.learn.exercises.kinds import Numeric, Slip
from memlib.learn.i18n import msg
from memlib.models import get_model
from memlib.parallel import zero
from memlib.serving import quantization
from memlib.serving.quantization import quantized_decode_bound
from memlib.parallel.data_parallel import data_parallel_memory
from memlib.serving.capacity import decode_bound
from memlib.serving.inference import estimate_inference, kv_bytes_per_token, kv_cache_bytes
from memlib.units import fmt_bytes

DENSE = ("llama-2-7b", "llama-2-13b", "llama-3-8b", "llama-3.1-70b", "mistral-7b", "qwen2.5-7b", "qwen2.5-72b",
         "qwen3-8b", "qwen3-32b", "gemma-3-27b", "phi-4", "llama-2-70b", "llama-33b")
MOE = ("mixtral-8x7b", "mixtral-8x22b", "qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3", "gpt-oss-20b",
       "gpt-oss-120b", "llama-4-scout", "llama-4-maverick")
LONG = ("llama-3.1-8b", "llama-3.1-70b", "qwen2.5-7b", "qwen3-8b", "mistral-7b", "gemma-3-27b")
GPUS = ("a100-40gb", "a100-80gb", "h100-80gb", "h200", "l40s", "rtx-4090", "v100-32gb", "b200", "mi300x")
WEIGHTS = ("bf16", "fp32", "int8", "fp8-block", "int4-awq", "nf4")
ID = re.compile(r"^p(\d\d)(?:k(\d{1,2}))?\.(\d{1,6})$")  # "p03.17", or "p03k2.17": kind 2 of topic 03
MAX_SEED = 999_999


def _hints(concept: str, formula: str, first: str) -> tuple[str, str, str]:
    return concept, formula, first


def _q(qid: str, title: str, prompt: str, expected: Callable[[], float], unit: str, worked: Callable[[], str],
       hints: tuple[str, ...], formula: str, slips: tuple[Slip, ...] = ()) -> Numeric:
    return Numeric(id=qid, title=title, difficulty="interview", minutes=5, formula=formula, prompt=prompt,
                   expected=expected, unit=unit, worked=worked, hints=hints, slips=slips, tolerance=0.02)


def _weights(qid: str, rng: random.Random) -> Numeric:
    m, w = rng.choice(DENSE), rng.choice(WEIGHTS)
    value = lambda: float(estimate_inference(m, weights=w).weight_bytes)  # noqa: E731
    return _q(qid, msg("Weights of {model} in {fmt}", model=m, fmt=w),
              msg("How many GB (10⁹ bytes) do the weights of **{model}** take stored as **{fmt}** (every tensor as "
                  "memlib.estimate_inference(weights={fmt_repr}) stores it)?", model=m, fmt=w, fmt_repr=repr(w)),
              value, "GB",
              lambda: msg("`estimate_inference({model_repr}, weights={fmt_repr}).weight_bytes` = **{bytes}** ({params} "
                          "parameters).", model_repr=repr(m), fmt_repr=repr(w), bytes=fmt_bytes(value()),
                          params=f"{get_model(m).num_params:,}"),
              _hints("Weights are parameters x bytes per parameter; quantized formats add scales.",
                     "bytes = num_params x bytes per parameter (+ scales and 16-bit tensors a format keeps)",
                     msg("Start from get_model({model_repr}).num_params.", model_repr=repr(m))),
              "weights = parameters x bytes per parameter (memlib.estimate_inference)")


def _states(qid: str, rng: random.Random) -> Numeric:
    m, stage, dp = rng.choice(DENSE + MOE), rng.choice((0, 1, 2, 3)), rng.choice((2, 4, 8, 16, 32, 64))
    n = lambda: get_model(m).num_params  # noqa: E731
    value = lambda: float(zero.zero_model_state_bytes(n(), stage, dp))  # noqa: E731
    return _q(qid, msg("ZeRO-{stage} model states of {model} on {dp} GPUs", stage=stage, model=m, dp=dp),
              msg("Full fine-tuning of **{model}** with mixed-precision AdamW (16-bit weights and gradients, fp32 "
                  "master, m and v: the ZeRO paper's K = 12) and **ZeRO stage {stage}** over **{dp}** data-parallel "
                  "GPUs. How many GB of model states does **each** GPU hold?", model=m, stage=stage, dp=dp),
              value, "GB",
              lambda: msg("`zero_model_state_bytes({params}, {stage}, {dp})` = **{bytes}** per GPU.", params=f"{n():,}",
                          stage=stage, dp=dp, bytes=fmt_bytes(value())),
              _hints("ZeRO-1 shards the optimizer states, ZeRO-2 also the gradients, ZeRO-3 also the weights.",
                     "per GPU = (2 + 2 + 12) x N with the sharded terms divided by the data-parallel degree",
                     "Write 2N (weights), 2N (gradients), 12N (optimizer) and divide the sharded ones."),
              "ZeRO model states (Rajbhandari et al. 2020, Sec. 5; memlib.parallel.zero)",
              (Slip("no master copy", lambda: float(zero.zero_model_state_bytes(n(), stage, dp, k=8)),
                    "12 bytes of optimizer state per parameter: the fp32 master copy is one of them"),))


def _gpus_for_states(qid: str, rng: random.Random, models=DENSE + MOE) -> Numeric:
    m, g = rng.choice(models), rng.choice(GPUS)
    value = lambda: float(math.ceil(zero.zero_model_state_bytes(get_model(m).num_params, 0, 1)  # noqa: E731
                                    / get_gpu(g).memory_bytes))
    return _q(qid, msg("{gpu} GPUs for the states of {model}", gpu=g, model=m),
              msg("How many **{gpu}** GPUs (each at memlib's capacity, {capacity}) does it take just to hold the "
                  "mixed-precision AdamW model states (16 bytes per parameter) of **{model}** fully sharded (ZeRO-3)? "
                  "Ignore activations; give a whole number.", gpu=g, capacity=fmt_bytes(get_gpu(g).memory_bytes),
                  model=m), value, "count",
              lambda: msg("16 x {params} bytes / {capacity} rounded up: **{count}** GPUs.",
                          params=f"{get_model(m).num_params:,}", capacity=fmt_bytes(get_gpu(g).memory_bytes),
                          count=f"{value():.0f}"),
              _hints("Sharded states divide evenly; the count is the total over one GPU's memory, rounded up.",
                     "GPUs = ceil(16 x N / GPU bytes)",
                     msg("Compute 16 x get_model({model_repr}).num_params first.", model_repr=repr(m))),
              "model states over GPU memory (memlib.parallel.zero)",
              (Slip("rounded down", lambda: value() - 1, "round up: the states would not fit"),))


def _layer_terms(model, ctx: int, tp: int = 1, engine: str = "hf") -> list[tuple[str, int, int, int]]:
    """(layer type, layers, tokens each keeps, bytes per token per layer) for a sequence of `ctx` tokens:
    full-attention layers keep every token, sliding/chunked layers at most their window (kv_cap)."""
    from memlib.serving.inference import kv_layer_bytes_per_token, kv_tokens_kept
    per_layer = kv_layer_bytes_per_token(model, "bf16", tp)
    return [(layer_type, n, kept, per_layer) for layer_type, n, kept in kv_tokens_kept(model, ctx, engine)]


def _window_note(model, ctx: int) -> str:
    """The prompt's sentence on a windowed model's layers (empty when every layer keeps the whole context)."""
    counts = model.layer_counts()
    windowed = {t: n for t, n in counts.items() if t in ("sliding_attention", "chunked_attention")}
    if not windowed:
        return ""
    full = counts.get("full_attention", 0)
    cap = model.sliding_window if "sliding_attention" in windowed else model.attention_chunk_size
    what = msg("a sliding window") if "sliding_attention" in windowed else msg("chunked attention")
    fewer = msg(" (fewer than the context)") if cap < ctx else ""
    return msg(" {model} has {full} full-attention layers and {windowed} layers with {what} of {cap} tokens, which "
               "cache at most that many tokens{fewer}.", model=model.name, full=full, windowed=sum(windowed.values()),
               what=what, cap=f"{cap:,}", fewer=fewer)


_LAYER_TYPES = {"full_attention": msg("full attention"), "sliding_attention": msg("sliding attention"),
                "chunked_attention": msg("chunked attention")}
_BOUND = {"memory": msg("memory-bound"), "compute": msg("compute-bound")}
_ROLES = {"actor": msg("actor"), "critic": msg("critic"), "reference": msg("reference"), "reward": msg("reward")}


def _joined(sep: str, parts: list) -> str:
    """The parts joined by `sep`, each translated when shown (a template of fields only: nothing else to translate)."""
    return msg(sep.join("{p%d}" % i for i in range(len(parts))), **{f"p{i}": p for i, p in enumerate(parts)})


def _kv_worked(model, batch: int, ctx: int, value: float, tp: int = 1, engine: str = "hf") -> str:
    """The per-layer-type arithmetic of a KV cache, every product written as it is computed."""
    parts = [msg("{n} {type} layers x {tokens} tokens x {bytes} B", n=n, type=_LAYER_TYPES.get(t, t.replace("_", " ")),
                 tokens=f"{tokens:,}", bytes=f"{b:,}") for t, n, tokens, b in _layer_terms(model, ctx, tp, engine)]
    return msg("per sequence: {sum}; x {batch} sequences = **{bytes}** (`memlib.kv_cache_bytes`; windowed layers keep "
               "at most their window).", sum=_joined(" + ", parts), batch=batch, bytes=fmt_bytes(value))


def _kv_cache(qid: str, rng: random.Random, models=DENSE + LONG, tp_choices=(1,)) -> Numeric:
    m, batch, ctx = rng.choice(models), rng.choice((1, 4, 8, 16, 32, 64)), rng.choice((2048, 4096, 8192, 32768))
    tp = rng.choice([t for t in tp_choices if t == 1 or _splits(m, "bf16", t)] or [1])
    value = lambda: float(kv_cache_bytes(get_model(m), batch, ctx, tp=tp))  # noqa: E731
    where = msg("in total") if tp == 1 else msg("on **each** GPU with tensor parallelism over {tp}", tp=tp)
    note = _window_note(get_model(m), ctx)
    per_layer = "2 x kv_heads x head_dim x 2 bytes" + ("" if tp == 1 else f" / {tp}")
    return _q(qid, msg("KV cache of {model}", model=m),
              msg("Serving **{model}** with a bf16 KV cache: **{batch}** sequences of **{ctx}** tokens each.{note} How "
                  "many GB does the KV cache take {where}?", model=m, batch=batch, ctx=f"{ctx:,}", note=note,
                  where=where), value, "GB",
              lambda: _kv_worked(get_model(m), batch, ctx, value(), tp),
              _hints("K and V are cached for every layer, every KV head and every token a layer keeps.",
                     msg("bytes = sequences x sum over layers of (tokens the layer keeps) x {per_layer}{window}",
                         per_layer=per_layer,
                         window=msg("; a windowed layer keeps min(context, window) tokens") if note else ""),
                     msg("Find the layers and KV heads of {model} in memlib.get_model({model_repr}).", model=m,
                         model_repr=repr(m))),
              "KV cache = sequences x sum over layers of tokens kept x 2 x kv_heads x head_dim x bytes "
              "(memlib.serving.inference)",
              (Slip("fp32 cache", lambda: 2 * value(), "the cache is bf16, 2 bytes per number"),)
              + ((Slip("no window", lambda: float(batch * ctx * kv_bytes_per_token(get_model(m), tp=tp)),
                       "the windowed layers keep only their window, not the whole context"),) if note else ()))


def _kv_token(qid: str, rng: random.Random, models=DENSE + MOE) -> Numeric:
    m = rng.choice(models)
    value = lambda: float(kv_bytes_per_token(get_model(m)))  # noqa: E731
    return _q(qid, msg("KV bytes per token of {model}", model=m),
              msg("How many **bytes** of bf16 KV cache does one token of **{model}** take (all layers)?", model=m),
              value, "bytes",
              lambda: msg("`kv_bytes_per_token(get_model({model_repr}))` = **{bytes} bytes**.", model_repr=repr(m),
                          bytes=f"{value():,.0f}"),
              _hints("One token caches K and V in every layer.", "2 x layers x kv_heads x head_dim x 2 bytes",
                     msg("Read num_layers, num_kv_heads and head_dim of get_model({model_repr}).", model_repr=repr(m))),
              "KV bytes per token (memlib.serving.inference.kv_bytes_per_token)",
              (Slip("fp32", lambda: 2 * value(), "bf16 is 2 bytes per number"),))


def _moe_ratio(qid: str, rng: random.Random) -> Numeric:
    m = rng.choice(MOE)
    model = lambda: get_model(m)  # noqa: E731
    value = lambda: model().num_params / model().num_active_params  # noqa: E731
    return _q(qid, msg("Total over active parameters of {model}", model=m),
              msg("**{model}** is a mixture of experts. By what factor do its total parameters exceed the parameters "
                  "one token activates?", model=m), value, "x",
              lambda: msg("{total} / {active} = **{ratio}x**: memory holds every expert, compute touches the active "
                          "ones.", total=f"{model().num_params:,}", active=f"{model().num_active_params:,}",
                          ratio=f"{value():.2f}"),
              _hints("Memory holds all experts; one token passes through top-k of them plus the shared parts.",
                     "factor = num_params / num_active_params",
                     msg("Read both counts from get_model({model_repr}).", model_repr=repr(m))),
              "total vs active parameters of a MoE (memlib.models)")


def _expert_tokens(qid: str, rng: random.Random) -> Numeric:
    m, batch = rng.choice(MOE), rng.choice((8, 32, 64, 128, 256, 512))
    model = lambda: get_model(m)  # noqa: E731
    value = lambda: batch * model().num_experts_per_tok / model().num_experts  # noqa: E731
    return _q(qid, msg("Tokens per expert of {model} at batch {batch}", model=m, batch=batch),
              msg("**{model}** routes each token to {top_k} of its {experts} routed experts per MoE layer. Decoding "
                  "**{batch}** sequences (one new token each per step) with balanced routing, how many tokens does one "
                  "routed expert process per step on average? (This is how many times each expert weight is reused "
                  "per read: the reason MoE decode stays memory-bound.)", model=m,
                  top_k=get_model(m).num_experts_per_tok, experts=get_model(m).num_experts, batch=batch),
              value, "count",
              lambda: msg("{batch} tokens x {top_k} experts each / {experts} experts = **{tokens}** tokens per expert "
                          "per step; a dense layer would reuse each weight {batch2} times.", batch=batch,
                          top_k=model().num_experts_per_tok, experts=model().num_experts, tokens=f"{value():.3g}",
                          batch2=batch),
              _hints("Each token sends its hidden state to top-k experts; spread evenly, every expert gets a share.",
                     "tokens per expert = batch x top-k / routed experts",
                     msg("Read num_experts_per_tok and num_experts of get_model({model_repr}).", model_repr=repr(m))),
              "tokens per expert = B x k / E (balanced routing; Fedus et al. 2022, Switch Transformer Sec. 2.2)",
              (Slip("no top-k", lambda: batch / model().num_experts,
                    "each token goes to top-k experts, not one"),) if get_model(m).num_experts_per_tok > 1 else ())


def _mla_tp(qid: str, rng: random.Random) -> Numeric:
    tp = rng.choice((2, 4, 8))
    m = rng.choice([x for x in MOE + DENSE if get_model(x).kv_lora_rank] or ["deepseek-v3"])
    value = lambda: float(kv_bytes_per_token(get_model(m), tp=tp))  # noqa: E731
    mo = get_model(m)
    return _q(qid, msg("MLA cache of {model} over tp {tp}", model=m, tp=tp),
              msg("**{model}** uses multi-head latent attention: each layer caches one compressed latent of {rank} "
                  "values plus a {rope}-value rope key per token, in bf16. Served with tensor parallelism over **{tp}** "
                  "GPUs, how many **bytes** of cache does one token take on **each** GPU (all layers)?", model=m,
                  rank=mo.kv_lora_rank, rope=mo.qk_rope_head_dim, tp=tp), value, "bytes",
              lambda: msg("({rank} + {rope}) x 2 B x {layers} layers = **{bytes} bytes** on every GPU: the latent is "
                          "one vector per token, not per head, so tensor parallelism cannot split it; every rank keeps "
                          "all of it (`memlib.kv_bytes_per_token`).", rank=mo.kv_lora_rank, rope=mo.qk_rope_head_dim,
                          layers=mo.num_layers, bytes=f"{value():,.0f}"),
              _hints("Tensor parallelism splits attention by heads; what is cached per head splits, what is not stays.",
                     "bytes = (kv_lora_rank + qk_rope_head_dim) x 2 x layers, on every GPU",
                     msg("Read kv_lora_rank, qk_rope_head_dim and num_layers of get_model({model_repr}).",
                         model_repr=repr(m))),
              "MLA latent cache (DeepSeek-V2 Sec. 2.1, eq. 9-10), replicated under TP (memlib.serving.inference)",
              (Slip("split by tp", lambda: value() / tp,
                    "the latent is shared by all heads: tensor parallelism replicates it, it does not split it"),))


def _moe_states_gpus(qid: str, rng: random.Random) -> Numeric:
    return _gpus_for_states(qid, rng, MOE)


def _flops(qid: str, rng: random.Random) -> Numeric:
    m, tokens = rng.choice(DENSE), rng.choice((0.3e12, 1e12, 2e12, 5e12, 15e12))
    value = lambda: float(cost.training_flops(m, tokens))  # noqa: E731
    return _q(qid, msg("Training FLOPs of {model}", model=m),
              msg("Pretraining **{model}** on **{tokens}T** tokens: how many FLOPs with the 6ND rule (exact parameter "
                  "count, no attention term)?", model=m, tokens=f"{tokens / 1e12:g}"), value, "FLOPs",
              lambda: msg("6 x {params} x {tokens} = **{flops} FLOPs** (`memlib.cost.training_flops`).",
                          params=f"{get_model(m).num_params:,}", tokens=f"{tokens:.3g}", flops=f"{value():.3g}"),
              _hints("Forward is 2 FLOPs per parameter per token, backward twice that.", "FLOPs = 6 x N x D",
                     msg("Take N from get_model({model_repr}).num_params.", model_repr=repr(m))),
              "training FLOPs 6ND (Kaplan et al. 2020; memlib.cost.training_flops)",
              (Slip("2ND", lambda: value() / 3, "2ND is the forward only; training adds the backward (4ND)"),))


def _gpu_hours(qid: str, rng: random.Random) -> Numeric:
    m, tokens = rng.choice(DENSE), rng.choice((0.1e12, 0.5e12, 1e12, 2e12))
    g, mfu = rng.choice(("a100-80gb", "h100-80gb", "h200", "b200", "mi300x")), rng.choice((0.3, 0.35, 0.4, 0.45, 0.5))
    flops = lambda: cost.training_flops(m, tokens)  # noqa: E731
    value = lambda: float(cost.gpu_hours(flops(), g, mfu))  # noqa: E731
    return _q(qid, msg("GPU-hours for {model} on {gpu}", model=m, gpu=g),
              msg("Training **{model}** on **{tokens}T** tokens (6ND) on **{gpu}** GPUs at **{mfu} MFU** against the "
                  "dense bf16 peak: how many GPU-hours?", model=m, tokens=f"{tokens / 1e12:g}", gpu=g, mfu=f"{mfu:.0%}"),
              value, "GPU-hours",
              lambda: msg("{flops} FLOPs / ({mfu} x {peak} TFLOP/s x 3600) = **{hours} GPU-hours** "
                          "(`memlib.cost.gpu_hours`).", flops=f"{flops():.3g}", mfu=mfu, peak=get_gpu(g).bf16_tflops,
                          hours=f"{value():,.0f}"),
              _hints("GPU-hours are work over the rate one GPU sustains.", "hours = 6ND / (MFU x peak x 3600)",
                     "Compute 6ND first."),
              "GPU-hours = FLOPs / (MFU x peak) (memlib.cost.gpu_hours)")


def _mfu_from_throughput(qid: str, rng: random.Random) -> Numeric:
    from memlib.cost.timing import flops_per_token
    m, g, seq = rng.choice(DENSE), rng.choice(("a100-80gb", "h100-80gb", "h200", "b200")), rng.choice((2048, 4096, 8192))
    peak = get_gpu(g).bf16_tflops * 1e12
    model_fpt = lambda: flops_per_token(m, seq, "none", "full")  # noqa: E731
    tps = max(1, round(rng.choice((0.3, 0.35, 0.4, 0.45, 0.5)) * peak / model_fpt()))  # a plausible logged rate
    value = lambda: 100 * tps * model_fpt() / peak  # noqa: E731
    hfu = lambda: 100 * tps * flops_per_token(m, seq, "full", "full") / peak  # noqa: E731
    return _q(qid, msg("MFU of a logged run of {model}", model=m),
              msg("Full fine-tuning of **{model}** at {seq}-token sequences **with full activation recompute** logs "
                  "**{tps} tokens/s per GPU** on **{gpu}** GPUs ({peak} TFLOP/s dense bf16). What MFU (in %) is that, "
                  "by PaLM's definition (model FLOPs: 6N plus the attention's 12·L·H·Q·T per token; the recomputed "
                  "forward is not counted)?", model=m, seq=f"{seq:,}", tps=f"{tps:,}", gpu=g,
                  peak=f"{get_gpu(g).bf16_tflops:g}"), value, "%",
              lambda: msg("model FLOPs per token {gflop} GFLOP; {tps} x {gflop2} GFLOP / {peak} TFLOP/s = **{mfu}% "
                          "MFU**. Counting the recomputed forward (8N + 16·L·H·Q·T) gives {hfu}%: that is HFU, the "
                          "hardware's utilisation (`memlib.cost.flops_per_token`).", gflop=f"{model_fpt() / 1e9:,.1f}",
                          tps=f"{tps:,}", gflop2=f"{model_fpt() / 1e9:,.1f}", peak=f"{get_gpu(g).bf16_tflops:g}",
                          mfu=f"{value():.1f}", hfu=f"{hfu():.1f}"),
              _hints("MFU asks what fraction of the peak went into the FLOPs the model needs, not the FLOPs the GPU ran.",
                     "MFU = tokens/s x (6N + 12·L·H·Q·T) / peak FLOP/s",
                     msg("Compute 6N + 12·L·H·Q·T for {model} at {seq} tokens first.", model=m, seq=f"{seq:,}")),
              "MFU from throughput (Chowdhery et al. 2022, PaLM, Sec. 4.1 and App. B)",
              (Slip("HFU", hfu, "that counts the recomputed forward: hardware FLOPs utilisation (HFU), not MFU"),))


def _int4_speedup_at_batch(qid: str, rng: random.Random) -> Numeric:
    m, batch = rng.choice(("llama-3.1-70b", "llama-2-70b", "qwen2.5-72b", "llama-3-8b")), rng.choice((16, 64, 128, 256, 512))
    g, ctx = rng.choice(("h100-80gb", "a100-80gb", "h200")), rng.choice((256, 1024))
    tp = rng.choice([t for t in (2, 4) if _splits(m, "bf16", t) and _splits(m, "int4-awq", t)] or [1])
    value = lambda: float(quantization.decode_speedup(m, g, batch, ctx, "int4-awq", tp=tp))  # noqa: E731
    memory_only = lambda: float(decode_bound(m, g, batch, ctx, "bf16", tp=tp).memory_s  # noqa: E731
                                / quantized_decode_bound(m, g, batch, ctx, "int4-awq", tp=tp).memory_s)
    return _q(qid, msg("int4 decode speed-up of {model} at batch {batch}", model=m, batch=batch),
              msg("**{model}** decodes **{batch}** sequences of {ctx} tokens (bf16 KV cache) on **{tp} x {gpu}** "
                  "(tensor parallel, the same GPUs for both formats). Each step is bound by the larger of its bytes "
                  "read over the bandwidth and its FLOPs over the dense bf16 peak. By what factor is the step faster "
                  "with AWQ int4 weights (W4A16, 4 + 20/128 bits) than with bf16 weights (dequantization cost not "
                  "counted)?", model=m, batch=batch, ctx=f"{ctx:,}", tp=tp, gpu=g),
              value, "x",
              lambda: (lambda b, q: msg(
                  "bf16: max({b_mem} ms reading, {b_comp} ms computing) = {b_step} ms ({b_bound}); int4: max({q_mem}, "
                  "{q_comp}) = {q_step} ms ({q_bound}); ratio **{ratio}x** "
                  "(`memlib.serving.quantization.decode_speedup`). The gain shrinks once int4 turns compute-bound and "
                  "is gone once bf16 does too.", b_mem=f"{b.memory_s * 1e3:.2f}", b_comp=f"{b.compute_s * 1e3:.2f}",
                  b_step=f"{b.step_s * 1e3:.2f}", b_bound=_BOUND.get(b.bound, f"{b.bound}-bound"), q_mem=f"{q.memory_s * 1e3:.2f}",
                  q_comp=f"{q.compute_s * 1e3:.2f}", q_step=f"{q.step_s * 1e3:.2f}", q_bound=_BOUND.get(q.bound, f"{q.bound}-bound"),
                  ratio=f"{value():.2f}"))(decode_bound(m, g, batch, ctx, "bf16", tp=tp),
                                                          quantized_decode_bound(m, g, batch, ctx, "int4-awq", tp=tp)),
              _hints("A decode step reads every weight once for the whole batch, and does 2 FLOPs per weight per "
                     "sequence.",
                     "step = max(bytes / bandwidth, FLOPs / peak), per GPU; speed-up = bf16 step / int4 step",
                     "Compute both formats' bytes per GPU (weights + KV) and the FLOPs of the batch."),
              "decode roofline: step time = max(memory, compute) (Williams et al. 2009; memlib.serving.quantization)",
              (Slip("bytes ratio only", memory_only,
                    "past int4's ridge the int4 step is compute-bound: the bytes ratio overstates the gain"),)
              if abs(memory_only() - value()) / value() > 0.05 else ())


def _largest_full_finetune(qid: str, rng: random.Random) -> Numeric:
    g, impl = rng.choice(GPUS), rng.choice(("fused", "foreach"))
    per = {"fused": 16, "foreach": 20}[impl]
    value = lambda: get_gpu(g).memory_bytes / per  # noqa: E731
    return _q(qid, msg("Largest full fine-tune on one {gpu}", gpu=g),
              msg("Full fine-tuning with mixed-precision AdamW on one **{gpu}** ({capacity}). The optimizer is "
                  "torch's **{impl}** AdamW{temporary}. Ignoring activations and the CUDA context, what is the largest "
                  "model (parameters) whose peak fits?", gpu=g, capacity=fmt_bytes(get_gpu(g).memory_bytes), impl=impl,
                  temporary=msg(" (it adds a temporary the size of one fp32 state at the step)")
                  if impl == "foreach" else ""), value, "params",
              lambda: msg("{capacity} / {per} B per parameter = **{params}B** parameters (PyTorch AMP: fp32 weights 4 + "
                          "fp32 gradients 4 + Adam's m and v 8 = 16 B{temporary}); activations lower it.",
                          capacity=fmt_bytes(get_gpu(g).memory_bytes), per=per, params=f"{value() / 1e9:.2f}",
                          temporary=msg(", plus 4 for the foreach temporary") if impl == "foreach" else ""),
              _hints("Mixed precision keeps fp32 master weights, gradients and two Adam moments.",
                     "largest N = memory / bytes per parameter at the peak (16; 20 with foreach's temporary)",
                     "Write the bytes per parameter at the optimizer step first."),
              "mixed-precision AdamW bytes per parameter (Rajbhandari et al. 2020, Sec. 3.1; torch.optim._multi_tensor)",
              (Slip("12 bytes", lambda: get_gpu(g).memory_bytes / 12, "12 B is only the optimizer's share (master copy, m, "
                    "v); the weights and gradients add 4 more: 16 B per parameter"),)
              + ((Slip("temporary forgotten", lambda: get_gpu(g).memory_bytes / 16,
                       "foreach AdamW allocates a temporary the size of one fp32 state at the step"),)
                 if impl == "foreach" else ()))


def _splits(model: str, weights: str, tp: int) -> bool:
    """Whether memlib accepts tensor parallelism `tp` for this model and format (heads divide evenly, ...)."""
    try:
        estimate_inference(model, weights=weights, tp=tp)
    except ValueError:
        return False
    return True


def _tp_weights(qid: str, rng: random.Random) -> Numeric:
    m, w = rng.choice(DENSE), rng.choice(("bf16", "int4-awq", "fp8-block"))
    tp = rng.choice([t for t in (2, 4, 8) if _splits(m, w, t)] or [1])
    value = lambda: float(estimate_inference(m, weights=w, tp=tp).weight_bytes)  # noqa: E731
    return _q(qid, msg("{model} in {fmt} over tp {tp}", model=m, fmt=w, tp=tp),
              msg("**{model}** served in **{fmt}** with tensor parallelism over **{tp}** GPUs. How many GB of weights "
                  "does **each** GPU hold (as memlib.estimate_inference lays them out)?", model=m, fmt=w, tp=tp),
              value, "GB",
              lambda: msg("`estimate_inference({model_repr}, weights={fmt_repr}, tp={tp}).weight_bytes` = **{bytes}** "
                          "per GPU.", model_repr=repr(m), fmt_repr=repr(w), tp=tp, bytes=fmt_bytes(value())),
              _hints("Tensor parallelism splits the projections; norms stay whole on every GPU.",
                     "per GPU ≈ weights / tp (+ the replicated small tensors)", "Compute the whole model's bytes first."),
              "weights per GPU under tensor parallelism (memlib.estimate_inference)",
              (Slip("not divided", lambda: float(estimate_inference(m, weights=w).weight_bytes),
                    "that is the whole model; each GPU holds about 1/tp of it"),))


def _checkpoint_interval(qid: str, rng: random.Random) -> Numeric:
    m, gpus, rate = rng.choice(DENSE), rng.choice((1024, 2048, 4096, 8192)), rng.choice((50e9, 100e9, 200e9, 500e9))
    write = lambda: checkpointing.checkpoint_write_s(checkpointing.checkpoint_size_bytes(m), rate)  # noqa: E731
    mtbf = lambda: checkpointing.job_mtbf_s(419, 54, gpus=16384, at_gpus=gpus)  # noqa: E731
    value = lambda: checkpointing.young_interval_s(write(), mtbf())  # noqa: E731
    return _q(qid, msg("Checkpoint interval of {model} on {gpus} GPUs", model=m, gpus=f"{gpus:,}"),
              msg("You pretrain **{model}** on **{gpus}** GPUs with bf16 mixed-precision AdamW. Each checkpoint holds "
                  "the bf16 weights and the fp32 master copy and Adam moments (14 bytes per parameter) and is written "
                  "at **{rate} GB/s**. Your GPUs fail at Llama 3's per-GPU rate (419 unexpected interruptions in 54 "
                  "days on 16,384 GPUs). With Young's first-order rule, how many **seconds** apart should the "
                  "(blocking) checkpoints be?", model=m, gpus=f"{gpus:,}", rate=f"{rate / 1e9:g}"), value, "s",
              lambda: msg("size {size}, write {write} s; MTBF 54 x 86,400 / 419 x 16,384 / {gpus} = {mtbf} s; sqrt(2 x "
                          "{write2} x {mtbf2}) = **{interval} s** (`memlib.cost.young_interval_s`).",
                          size=fmt_bytes(checkpointing.checkpoint_size_bytes(m)), write=f"{write():.1f}",
                          gpus=f"{gpus:,}", mtbf=f"{mtbf():,.0f}", write2=f"{write():.1f}", mtbf2=f"{mtbf():,.0f}",
                          interval=f"{value():,.0f}"),
              _hints("Save too often and the stalls add up; too rarely and each failure redoes more work.",
                     "interval = sqrt(2 x write time x MTBF); MTBF scales as 1 / the GPU count",
                     "Write time first: 14 x parameters / bandwidth."),
              "Young's checkpoint interval sqrt(2 x write x MTBF) (Young 1974; memlib.cost.checkpointing)",
              (Slip("MTBF not scaled", lambda: checkpointing.young_interval_s(write(), checkpointing.job_mtbf_s(419, 54)),
                    "that is the MTBF of a 16,384-GPU job; fewer GPUs fail less often"),
               Slip("no factor 2", lambda: value() / math.sqrt(2), "Young's rule is sqrt(2 x write x MTBF)")))


# --- topic 09: quantization -------------------------------------------------------------------------------
_W4 = ("int8", "int4-awq", "int4-gptq", "nf4")
_CROSS = ((msg("16-bit (bf16 or fp16) weights"), 16.0, "16-bit"), (msg("int8 weight-only weights (W8A16)"), 8.0, "16-bit"),
          (msg("AWQ int4 g128 weights (W4A16, 4 + 20/128 bits)"), 4 + 20 / 128, "16-bit"),
          (msg("int8 weights and activations on the int8 tensor cores (W8A8)"), 8.0, "int8"))


def _quant_weights(qid: str, rng: random.Random) -> Numeric:
    m, w = rng.choice(DENSE), rng.choice(_W4)
    tp = rng.choice([t for t in (1, 2, 4) if _splits(m, w, t)] or [1])
    value = lambda: float(estimate_inference(m, weights=w, tp=tp).weight_bytes)  # noqa: E731
    bf16 = lambda: float(estimate_inference(m, weights="bf16", tp=tp).weight_bytes)  # noqa: E731
    where = msg("in total") if tp == 1 else msg("on **each** of {tp} GPUs (tensor parallel)", tp=tp)
    return _q(qid, msg("{model} in {fmt}", model=m, fmt=w),
              msg("How many GB (10⁹ bytes) of weights does **{model}** take {where} as a **{fmt}** checkpoint (scales "
                  "and zero-points included; embeddings, head and norms stay 16-bit, as memlib.estimate_inference lays "
                  "them out)?", model=m, where=where, fmt=w), value, "GB",
              lambda: msg("`estimate_inference({model_repr}, weights={fmt_repr}, tp={tp}).weight_bytes` = **{bytes}** "
                          "({ratio}x smaller than bf16).", model_repr=repr(m), fmt_repr=repr(w), tp=tp,
                          bytes=fmt_bytes(value()), ratio=f"{bf16() / value():.2f}"),
              _hints("Only the decoder projections are quantized; each carries its group's scale (and zero-point).",
                     "bytes ≈ projections × bits / 8 + the 16-bit tensors × 2, divided over the GPUs",
                     msg("Start from get_model({model_repr}).num_params.", model_repr=repr(m))),
              "quantized weights (memlib.serving.inference.quantized_linear_bytes)",
              (Slip("bf16", bf16, "that is the bf16 checkpoint"),))


def _crossover(qid: str, rng: random.Random) -> Numeric:
    name, bits, acts = rng.choice(_CROSS)
    g = rng.choice([x for x in GPUS if acts != "int8" or get_gpu(x).int8_tops])
    value = lambda: float(quantization.decode_crossover_batch(g, bits, acts))  # noqa: E731
    peak = get_gpu(g).int8_tops if acts == "int8" else (get_gpu(g).bf16_tflops or get_gpu(g).fp16_tflops)
    return _q(qid, msg("Compute-bound decode on {gpu}", gpu=g),
              msg("On a **{gpu}** ({peak} T{rate} dense, {bandwidth} GB/s), decode reads each weight once per step for "
                  "the whole batch. With **{weights}**, above which batch do the weight matmuls turn compute-bound (KV "
                  "cache ignored)?", gpu=g, peak=f"{peak:g}", rate="OPS int8" if acts == "int8" else "FLOP/s",
                  bandwidth=f"{get_gpu(g).memory_bandwidth_gb_per_s:,.0f}", weights=name), value, "count",
              lambda: msg("ridge {peak}e12 / {bandwidth}e9 × {bits} / 16 = **{batch}** sequences "
                          "(`memlib.serving.quantization.decode_crossover_batch`).", peak=f"{peak:g}",
                          bandwidth=f"{get_gpu(g).memory_bandwidth_gb_per_s:,.0f}", bits=f"{bits:.3f}",
                          batch=f"{value():.0f}"),
              _hints("A kernel is compute-bound above the ridge point, peak FLOP/s over bytes/s.",
                     "2·B FLOPs per weight / (bits / 8) bytes = ridge, so B = ridge × bits / 16",
                     "Compute the ridge point first."),
              "decode crossover batch = ridge × bits / 16 (memlib.serving.quantization)",
              (Slip("ridge only", lambda: value() * 16 / bits, "scale the ridge by bits / 16: fewer bytes per "
                    "weight reach the ridge at a smaller batch"),) if bits < 16 else ())


def _batch1_speedup(qid: str, rng: random.Random) -> Numeric:
    m, g, w = rng.choice(DENSE), rng.choice(GPUS), rng.choice(("int8", "int4-awq", "nf4"))
    ctx = rng.choice((256, 1024, 4096))
    value = lambda: float(quantization.decode_speedup(m, g, 1, ctx, w))  # noqa: E731
    return _q(qid, msg("Batch-1 decode of {model} in {fmt}", model=m, fmt=w),
              msg("One chat of **{ctx}** tokens (bf16 KV cache) decodes on a **{gpu}**. By what factor does memlib's "
                  "decode roofline get faster with **{fmt}** weights instead of bf16 (memory aside: as if either "
                  "fitted, and as if a kernel for the format ran on that GPU)?", ctx=f"{ctx:,}", gpu=g, fmt=w),
              value, "x",
              lambda: msg("`decode_speedup({model_repr}, {gpu_repr}, 1, {ctx}, {fmt_repr})` = **{ratio}x**: at batch 1 "
                          "the step reads the weights and the KV cache once, so the speed-up is the ratio of the bytes "
                          "read.", model_repr=repr(m), gpu_repr=repr(g), ctx=ctx, fmt_repr=repr(w),
                          ratio=f"{value():.2f}"),
              _hints("At batch 1 decode is memory-bound: time = bytes read / bandwidth.",
                     "speed-up = (bf16 weights + KV) / (quantized weights + KV), embedding table excluded",
                     "Compute both bytes with memlib.serving.decode_bound."),
              "memory-bound decode speed-up = bytes ratio (memlib.serving.quantization.decode_speedup)")


def _dp_logits(qid: str, rng: random.Random) -> Numeric:
    # models one GPU could train whole (DataParallel replicates the model): the catalog's up to 8B
    m = rng.choice(sorted({x for x in DENSE + LONG + ("qwen2-0.5b",) if get_model(x).num_params < 9e9}))
    n = rng.choice((2, 4, 8))
    batch, seq = n * rng.choice((2, 4, 8)), rng.choice((1024, 2048, 4096))
    r = lambda: data_parallel_memory(get_model(m).num_params, batch, seq, get_model(m).vocab_size, n)  # noqa: E731
    value = lambda: float(r().dp_device0["gathered outputs"])  # noqa: E731
    return _q(qid, msg("DataParallel's gathered logits of {model}", model=m),
              msg("**{model}** is trained with `torch.nn.DataParallel` over **{n}** GPUs, a batch of **{batch}** "
                  "sequences of **{seq}** tokens, and returns fp32 logits. How many GB of logits does the gather put "
                  "on cuda:0?", model=m, n=n, batch=batch, seq=f"{seq:,}"),
              value, "GB",
              lambda: msg("{batch} x {seq} x {vocab} x 4 bytes = **{bytes}** on cuda:0 "
                          "(`memlib.parallel.data_parallel.data_parallel_memory`); a DDP rank keeps only its own {own} "
                          "sequences, {own_bytes}.", batch=batch, seq=f"{seq:,}", vocab=f"{get_model(m).vocab_size:,}",
                          bytes=fmt_bytes(value()), own=batch // n, own_bytes=fmt_bytes(r().ddp_rank["own outputs"])),
              _hints("DataParallel gathers every replica's output onto device_ids[0].",
                     "bytes = batch x sequence x vocabulary x 4 (fp32)",
                     msg("Read the vocabulary of get_model({model_repr}).", model_repr=repr(m))),
              "DataParallel's gather onto device_ids[0] (torch/nn/parallel/data_parallel.py; "
              "memlib.parallel.data_parallel)",
              (Slip("one GPU's share", lambda: float(r().ddp_rank["own outputs"]),
                    "that is one replica's chunk; the gather brings all of them to cuda:0"),
               Slip("bf16 logits", lambda: value() / 2, "the logits are fp32, 4 bytes each")))


def _rlhf_states(qid: str, rng: random.Random) -> Numeric:
    from memlib.training.rlhf import estimate_rlhf  # imported on use: practice stays light to import
    m, alg = rng.choice(DENSE), rng.choice(("ppo", "grpo", "dpo"))
    roles = {"ppo": msg("actor, critic, reference and reward model"), "grpo": msg("actor, reference and reward model"),
             "dpo": msg("policy and reference")}[alg]
    est = lambda: estimate_rlhf(m, alg, gpus=1, zero_stage=0, rollout_batch=1)  # noqa: E731
    value = lambda: float(sum(r.resident_bytes for k, r in est().roles.items() if k != "rollout"))  # noqa: E731
    return _q(qid, msg("{alg} model states of {model}", alg=alg.upper(), model=m),
              msg("**{alg}** on **{model}** (every model the same size): the {roles}, on one GPU without sharding. "
                  "Trained models keep mixed-precision AdamW states, frozen ones bf16 weights. How many GB do the "
                  "models hold (no activations, no generation engine)?", alg=alg.upper(), model=m, roles=roles),
              value, "GB",
              lambda: msg("{roles}: **{bytes}** (`memlib.estimate_rlhf(..., gpus=1, zero_stage=0)`).",
                          roles=_joined("; ", [msg("{role} {bytes}", role=_ROLES.get(k, k),
                                                   bytes=fmt_bytes(r.resident_bytes))
                                               for k, r in est().roles.items() if k != "rollout"]),
                          bytes=fmt_bytes(value())),
              _hints("Trained models carry gradients and optimizer states; frozen ones only weights.",
                     "bytes = 16 x N per trained model + 2 x N per frozen model",
                     msg("Count the trained and the frozen models of {alg}, then take N from get_model({model_repr}).",
                         alg=alg.upper(), model_repr=repr(m))),
              "RLHF roles: 16 B/param trained, 2 B/param frozen (memlib.training.rlhf.estimate_rlhf)",
              (Slip("all trained", lambda: 16.0 * get_model(m).num_params * sum(k != "rollout" for k in est().roles),
                    "frozen models (reference, reward) keep no gradients or optimizer states: 2 B/param"),))


_FULL_ATTENTION = tuple(m for m in dict.fromkeys(DENSE + LONG)
                        if set(get_model(m).layer_counts()) == {"full_attention"})


def _rollout_kv(qid: str, rng: random.Random) -> Numeric:
    # full-attention models only: a windowed layer's cache would need its own arithmetic here
    m, prompts, g = rng.choice(_FULL_ATTENTION), rng.choice((4, 8, 16, 32)), rng.choice((4, 8, 16))
    prompt, response = rng.choice((256, 512, 1024)), rng.choice((512, 1024, 2048, 4096))
    kvb = lambda: kv_bytes_per_token(get_model(m))  # noqa: E731
    # vLLM's prefix caching shares whole 16-token blocks; these prompts are whole blocks, so every
    # sample of a prompt reuses its prompt's blocks and adds only its own response (n > 1 sampling)
    value = lambda: float(prompts * (prompt + g * response) * kvb())  # noqa: E731
    return _q(qid, msg("Rollout KV cache of {model} with a shared prompt", model=m),
              msg("A GRPO rollout engine (vLLM with prefix caching, bf16 cache, no tensor parallelism) serving "
                  "**{model}** decodes **{prompts}** prompts of {prompt} tokens with **{samples}** samples per prompt, "
                  "each sample {response} tokens long, all at once. How many GB of KV cache do they hold when every "
                  "sample is complete (assume the pool is large enough)?", model=m, prompts=prompts,
                  prompt=f"{prompt:,}", samples=g, response=f"{response:,}"), value, "GB",
              lambda: msg("each prompt's {prompt} tokens are cached once and shared by its {samples} samples: {prompts} "
                          "x ({prompt2} + {samples2} x {response}) tokens x {kv} B = **{bytes}** (without sharing "
                          "{unshared}). A real engine reserves a fixed pool and queues what does not fit: more samples "
                          "cost time, not memory.", prompt=f"{prompt:,}", samples=g, prompts=prompts,
                          prompt2=f"{prompt:,}", samples2=g, response=f"{response:,}", kv=f"{kvb():,}",
                          bytes=fmt_bytes(value()), unshared=fmt_bytes(prompts * g * (prompt + response) * kvb())),
              _hints("Samples of one prompt start from the same prefix: the engine caches it once.",
                     "bytes = prompts x (prompt + samples x response) x KV bytes per token",
                     msg("Find the KV bytes per token of {model} with kv_bytes_per_token(get_model({model_repr})).",
                         model=m, model_repr=repr(m))),
              "rollout KV cache with a shared prefix (vLLM automatic prefix caching; memlib.kv_bytes_per_token)",
              (Slip("prompt not shared", lambda: float(prompts * g * (prompt + response) * kvb()),
                    "the samples of one prompt share its cached prefix (prefix caching / parallel sampling)"),
               Slip("response only", lambda: float(prompts * g * response * kvb()),
                    "the prompt's tokens stay in the cache too (once per prompt)")))


# --- issue 26's mechanisms: number formats (00), serving techniques (04), sliding windows (06) --------------
_FMT = ("fp16", "bf16", "fp8-e4m3", "fp8-e5m2", "fp32")


def _format_ratio(qid: str, rng: random.Random) -> Numeric:
    from memlib.units import float_format
    what = rng.choice(("eps", "max_value"))
    # ranges compared where the ratio stays a readable number (bf16 and fp32 reach 3.4e38)
    a, b = rng.sample(_FMT if what == "eps" else ("fp16", "fp8-e4m3", "fp8-e5m2"), 2)
    if getattr(float_format(a), what) < getattr(float_format(b), what):
        a, b = b, a  # the larger over the smaller: a factor >= 1
    word = {"eps": msg("machine epsilon (the gap between 1 and the next number: precision)"),
            "max_value": msg("largest finite value (range)")}[what]
    value = lambda: getattr(float_format(a), what) / getattr(float_format(b), what)  # noqa: E731
    return _q(qid, msg("{a} against {b}: {what}", a=a, b=b, what=what),
              msg("How many times **{a}**'s {word} is **{b}**'s? (Work it out from the bit layouts: exponent and "
                  "mantissa bits; e.g. `\"3x\"`, a format no ratio here takes: they are powers of two, or ratios of "
                  "the largest values)", a=a, word=word, b=b), value, "x",
              lambda: msg("{a}: {what} = {va}; {b}: {vb}; ratio **{ratio}x** (`memlib.units.float_format`). Precision "
                          "follows the mantissa bits (eps = 2^-mantissa), range the exponent bits.", a=a, what=what,
                          va=f"{getattr(float_format(a), what):.4g}", b=b, vb=f"{getattr(float_format(b), what):.4g}",
                          ratio=f"{value():,.0f}"),
              _hints("Mantissa bits set the precision, exponent bits the range.",
                     "eps = 2^-(mantissa bits); max = (2 - 2^-m) x 2^(emax), e4m3 reclaiming the all-ones exponent: 448",
                     "Write each format's exponent and mantissa bits first (fp16 5/10, bf16 8/7, e4m3 4/3, e5m2 5/2)."),
              "floating-point limits from the bit layout (IEEE 754; OCP OFP8; memlib.units.FloatFormat)",
              (Slip("inverted", lambda: 1 / value(), msg("that is {b}'s over {a}'s", b=b, a=a)),) if abs(value() - 1) > 0.05 else ())


def _speculative(qid: str, rng: random.Random) -> Numeric:
    from memlib.serving import techniques
    alpha, gamma = rng.choice((0.5, 0.6, 0.7, 0.8, 0.9)), rng.randint(2, 7)
    value = lambda: techniques.speculative_expected_tokens(alpha, gamma)  # noqa: E731
    return _q(qid, msg("Speculative decoding, alpha {alpha}, gamma {gamma}", alpha=alpha, gamma=gamma),
              msg("A draft model proposes **{gamma}** tokens per step; the target model accepts each with probability "
                  "**{alpha}**, independently, stopping at the first rejection (and always adds one token of its "
                  "own). How many tokens does one forward of the target produce on average? Answer as a factor: a "
                  "number followed by x.", gamma=gamma, alpha=alpha),
              value, "x",
              lambda: msg("(1 - {alpha}^{power}) / (1 - {alpha2}) = **{tokens}x** tokens per target step (Leviathan et "
                          "al. 2023, eq. 1; `memlib.serving.techniques.speculative_expected_tokens`).", alpha=alpha,
                          power=gamma + 1, alpha2=alpha, tokens=f"{value():.3f}"),
              _hints("Count the tokens of one step: accepted draft tokens plus the target's own one.",
                     "E[tokens] = 1 + alpha + alpha^2 + ... + alpha^gamma = (1 - alpha^(gamma+1)) / (1 - alpha)",
                     "Sum the geometric series term by term if the closed form slips."),
              "speculative decoding's expected tokens per target step (Leviathan et al. 2023)",
              (Slip("gamma accepted", lambda: float(gamma), "not every draft token is accepted"),
               Slip("one token short", lambda: value() - 1, "the target always adds one token of its own")))


def _littles_law(qid: str, rng: random.Random) -> Numeric:
    from memlib.serving import techniques
    qps, latency = rng.choice((2, 5, 10, 20, 50)), rng.choice((4, 8, 12, 20, 30))
    value = lambda: float(math.ceil(techniques.littles_law_concurrency(qps, latency)))  # noqa: E731
    return _q(qid, msg("Little's law at {qps} req/s", qps=qps),
              msg("Requests arrive at **{qps} per second** and each stays **{latency} s** on the server (prefill plus "
                  "decode). How many requests are in flight at once, i.e. how many sequences' KV caches must the GPUs "
                  "hold? Give a whole number.", qps=qps, latency=latency), value, "count",
              lambda: msg("L = lambda x W = {qps} x {latency} = **{count}** sequences (Little 1961; "
                          "`memlib.serving.techniques.littles_law_concurrency`).", qps=qps, latency=latency,
                          count=f"{value():.0f}"),
              _hints("In a steady state, what arrives per second times how long each stays is what is inside.",
                     "L = lambda x W", "Multiply the arrival rate by the time in the system."),
              "Little's law L = lambda W (Little 1961)",
              (Slip("divided", lambda: float(math.ceil(qps / latency)) if qps >= latency else float(math.ceil(latency / qps)),
                    "multiply the rate by the time, do not divide"),))


def _window_saving(qid: str, rng: random.Random) -> Numeric:
    from memlib.cost.conventions import mean_attended_keys
    seq, window = rng.choice((16384, 32768, 65536, 131072)), rng.choice((1024, 2048, 4096, 8192))
    value = lambda: mean_attended_keys(seq) / mean_attended_keys(seq, window)  # noqa: E731
    return _q(qid, msg("Sliding window {window} at {seq} tokens", window=window, seq=f"{seq:,}"),
              msg("A causal model attends over the whole prefix; its sliding-window variant attends to the last "
                  "**{window}** tokens only. At **{seq}**-token sequences, how many times fewer attention FLOPs (score "
                  "and value matmuls) does the windowed model spend per sequence?", window=f"{window:,}",
                  seq=f"{seq:,}"), value, "x",
              lambda: msg("keys per query: full causal T/2 = {full}; windowed w - w²/(2T) = {windowed}; ratio "
                          "**{ratio}x** (`memlib.cost.conventions.mean_attended_keys`).",
                          full=f"{mean_attended_keys(seq):,.0f}", windowed=f"{mean_attended_keys(seq, window):,.1f}",
                          ratio=f"{value():.3g}"),
              _hints("Attention FLOPs per query are proportional to the keys it attends to.",
                     "full causal: T/2 keys per query on average; windowed: w - w²/(2T)",
                     "Average over queries: the first w queries see fewer than w keys."),
              "attention FLOPs follow the keys attended (PaLM App. B; Longformer Sec. 3.1; memlib.cost.conventions)",
              (Slip("no causal triangle", lambda: seq / mean_attended_keys(seq, window),
                    "a causal query sees T/2 keys on average, not T"),
               Slip("T over w", lambda: seq / window / 2 if abs(seq / window / 2 - value()) / value() > 0.03 else 0.5 * value(),
                    "the first w queries of the window see fewer than w keys")))


def _segment(qid: str, rng: random.Random) -> Numeric:
    from memlib.hardware.allocator import segment_size
    dims = (rng.choice((1, 2, 4, 8)), rng.choice((128, 256, 512, 1024, 2048)), rng.choice((64, 320, 1000, 4096)))
    width = rng.choice((2, 4))
    n = dims[0] * dims[1] * dims[2] * width
    value = lambda: float(segment_size(n))  # noqa: E731
    return _q(qid, msg("The segment for a {shape} tensor", shape=list(dims)),
              msg("A {dtype} tensor of shape **{shape}** is allocated and no cached block can hold it. How large a "
                  "segment does PyTorch's caching allocator `cudaMalloc` for it (default settings)? Answer with a unit "
                  "(MiB).", dtype="bf16" if width == 2 else "fp32", shape=list(dims)), value, "bytes",
              lambda: msg("{bytes} B → `memlib.hardware.allocator.segment_size` = **{mib} MiB**.", bytes=f"{n:,}",
                          mib=f"{value() / 2**20:g}"),
              _hints("Requests are rounded to 512 B, then given a segment by size class.",
                     "≤ 1 MiB → 2 MiB; < 10 MiB → 20 MiB; else rounded up to 2 MiB",
                     "Compute the tensor's bytes first."),
              "caching allocator size classes (CUDACachingAllocator.cpp get_allocation_size)",
              (Slip("the tensor itself", lambda: float(n), "the segment is the size class, not the tensor"),)
              if abs(n - segment_size(n)) / segment_size(n) > 0.03 else ())


def _reserved(qid: str, rng: random.Random) -> Numeric:
    from memlib.hardware.allocator import reserved_bytes
    from memlib.training import estimate_training
    m, seq, mb = rng.choice(("llama-2-7b", "llama-3-8b", "mistral-7b", "qwen2.5-7b")), rng.choice((1024, 2048, 4096)), \
        rng.choice((1, 2, 4))
    est = lambda: estimate_training(m, seq_len=seq, micro_batch=mb, finetune="lora", recompute="full")  # noqa: E731
    value = lambda: float(reserved_bytes(est()).reserved_bytes)  # noqa: E731
    return _q(qid, msg("Reserved for a {model} LoRA step", model=m),
              msg("**{model}** LoRA, {seq} tokens, micro-batch {mb}, every decoder layer checkpointed, one GPU. What "
                  "`max_memory_reserved()` does memlib's caching-allocator model predict with default segments? Answer "
                  "in GB (10⁹ bytes).", model=m, seq=f"{seq:,}", mb=mb), value, "GB",
              lambda: msg("`reserved_bytes(estimate_training(...))` = **{bytes}** (allocated {peak} + 0.5 × the "
                          "transient bytes).", bytes=fmt_bytes(value()), peak=fmt_bytes(est().peak_bytes)),
              _hints("Reserved is allocated plus what the cache strands.",
                     "reserved ≈ peak + 0.5 × (peak − parameters − gradients − optimizer states)",
                     "Start from memlib.estimate_training's peak moment."),
              "memlib.hardware.allocator.reserved_bytes (fitted on published reserved rows)",
              (Slip("allocated", lambda: float(est().peak_bytes), "that is max_memory_allocated"),))


KINDS: dict[str, tuple[Callable, ...]] = {
    "00": (_weights, _states, _format_ratio),
    "01": (_states, _gpus_for_states),
    "02": (_largest_full_finetune, _weights, _kv_cache),
    "03": (_tp_weights, _states, _dp_logits),
    "04": (_kv_token, lambda i, r: _kv_cache(i, r, tp_choices=(2, 4, 8)), _speculative, _littles_law),
    "05": (_moe_ratio, lambda i, r: _kv_token(i, r, MOE), _moe_states_gpus, _expert_tokens, _mla_tp),
    "06": (lambda i, r: _kv_cache(i, r, LONG), lambda i, r: _kv_cache(i, r, LONG, (2, 4, 8)), _window_saving),
    "07": (_flops, _gpu_hours, _checkpoint_interval, _mfu_from_throughput),
    "08": (_rlhf_states, _rollout_kv),
    "09": (_quant_weights, _crossover, _batch1_speedup, _int4_speedup_at_batch),
    "11": (_segment, _reserved),
}


def build(topic: str, seed: int, kind: int | None = None) -> Numeric:
    """The practice question of `topic` ("00".."09") for `seed` (0..999,999), reproducibly; `kind` (an index
    into KINDS[topic]) asks for one kind of question (the mock interview's follow-ups drill one point)."""
    if topic not in KINDS:
        raise ValueError(f"unknown topic {topic!r}; topics are {', '.join(KINDS)}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed must be a whole number from 0 to {MAX_SEED:,}, got {seed!r}")
    if kind is None:
        rng = random.Random(f"{topic}:{seed}")
        return rng.choice(KINDS[topic])(f"p{topic}.{seed}", rng)
    if isinstance(kind, bool) or not isinstance(kind, int) or not 0 <= kind < len(KINDS[topic]):
        raise ValueError(f"kind must be a whole number from 0 to {len(KINDS[topic]) - 1} for topic {topic}, got {kind!r}")
    return KINDS[topic][kind](f"p{topic}k{kind}.{seed}", random.Random(f"{topic}:k{kind}:{seed}"))


def from_id(exercise_id: str) -> Numeric | None:
    """Rebuild a practice question from its id ("p03.17", "p03k2.17"); None if the id is not one."""
    m = ID.match(str(exercise_id).strip())
    if not m or m.group(1) not in KINDS:
        return None
    kind = None if m.group(2) is None else int(m.group(2))
    if kind is not None and kind >= len(KINDS[m.group(1)]):
        return None
    return build(m.group(1), int(m.group(3)), kind)


# Topic 10 (communication): its kinds live in practice_comm.py, which imports this module's helpers.
from memlib.learn.exercises.practice_comm import KINDS_10  # noqa: E402

KINDS["10"] = KINDS_10
