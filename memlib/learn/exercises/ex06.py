"""Exercises for notebook 06: what changes when you train at 128k tokens? The logits of a large vocabulary,
eager attention's s², what recompute keeps, context parallelism's memory and ring traffic, the cost of a long
sequence in FLOPs, the KV cache at 128k, a layout that fits, what FlashAttention saves and what a sliding
window saves, what a per-document mask saves in a packed row and which RoPE pairs Llama 3.1's scaling stretches.
Most numeric setups differ from the notebook's (another model, length or cp degree): the notebook teaches the
method, the exercise asks for a figure it does not print (issue 20)."""

from __future__ import annotations

import random

from memlib.learn.exercises._common import b, md_table, only_fitting, verdict
from memlib.learn.exercises.kinds import Choice, Figure, Implement, Numeric, Option, SelfAssessed, Slip, SpotError
from memlib.hardware.fit import fits, usable_bytes
from memlib.hardware.gpus import get_gpu
from memlib.serving.inference import estimate_inference
from memlib.models import Model, get_model
from memlib.parallel.plan import plan
from memlib.cost.timing import attention_flops_per_token, cp_kv_bytes, flops_per_token
from memlib.cost.conventions import windowed_attention_flops_per_token
from memlib.models.rope import LLAMA3_ROPE_SCALING, LLAMA3_ROPE_THETA, rope_stretch
from memlib.training.packing import causal_attention_pairs, packing_attention_saving
from memlib.training import estimate_training
from memlib.units import gb, gib

NOTEBOOK = "06_long_context"
_8B, _GPU, _LONG, _SHORT = "llama-3.1-8b", "h100-80gb", 131072, 8192
_70B, _405B, _QWEN, _MISTRAL = "llama-3.1-70b", "llama-3.1-405b", "qwen2.5-7b", "mistral-7b"
_96K = 98304  # a 96k-token sequence (12 x 8,192): a multiple of 2 x cp for cp up to 8
_QWEN_SEQ, _70B_SEQ, _WIN_SEQ, _FA_SEQ = 24576, _96K, 65536, 32768


def _est(seq_len: int = _LONG, model: str = _8B, **kw):
    """Llama-3.1-8B (or `model`) on one 8 x H100 node with FSDP (bf16 compute under FSDP2's mixed precision)."""
    base = dict(seq_len=seq_len, zero_stage="FULL_SHARD")
    if kw.get("cp", 1) == 1:
        base["dp"] = 8
    return estimate_training(model, **{**base, **kw})


def _est70(**kw):
    """Llama-3.1-70B, one sequence per GPU (96k unless told), FSDP over 8 GPUs."""
    return estimate_training(_70B, **{**dict(seq_len=_70B_SEQ, zero_stage="FULL_SHARD", dp=8), **kw})


def _term(e, name: str) -> int:
    return next(t.nbytes for t in e.terms if t.name == name)


def _vocab_peak(e) -> int:
    """The logits and loss at their largest moment of the step."""
    return max(mo.parts.get("logits_and_loss", 0) for mo in e.moments)


def _probs(e) -> int:
    """One eager layer's saved softmax probabilities (fp32 and their 16-bit copy), from its ledger."""
    return sum(n for name, n, _ in e.layer.items if name.startswith("eager.probs"))


def _all_layers(e) -> int:
    return e.counts["layer_activation_bytes"] * e.setup.model.num_layers


def _seq_cost(seq_len: int) -> float:
    """FLOPs of one sequence of seq_len tokens (memlib.cost.timing.flops_per_token x tokens)."""
    return flops_per_token(get_model(_8B), seq_len) * seq_len


def _kv_cache(kv_heads: int | None = None, model: str = _405B) -> int:
    """One 128k sequence's bf16 KV cache (Llama-3.1-405B unless told), optionally with another K/V head count."""
    m = get_model(model)
    if kv_heads is not None:  # the same model with another number of K/V heads
        m = m.with_(name=f"{m.name}-kv{kv_heads}", num_kv_heads=kv_heads)
    return estimate_inference(m, batch=1, context_len=_LONG).breakdown["kv_cache"]


def _window_ratio(seq_len: int = _WIN_SEQ, window: int | None = None) -> float:
    """Mistral 7B's causal attention FLOPs per token, full over windowed (memlib.cost.conventions)."""
    m = get_model(_MISTRAL)
    w = m.sliding_window if window is None else window
    return windowed_attention_flops_per_token(m, seq_len) / windowed_attention_flops_per_token(m, seq_len, w)


def _fa_layer(attention: str) -> int:
    """One Llama-3.1-8B layer's saved activations at 32k (memlib's ledger), sdpa or eager."""
    return _est(_FA_SEQ, attention=attention).counts["layer_activation_bytes"]


def _fa_right() -> str:
    """(b) when memlib's ledgers say the fused kernel drops the s x s tensors while the FLOPs model has no
    attention-implementation term (FlashAttention is exact: same FLOPs)."""
    drops_s2 = _probs(_est(_FA_SEQ, attention="eager")) > 0 and _fa_layer("sdpa") < _fa_layer("eager") / 10
    return "b" if drops_s2 else "a"


_LAYOUTS = {"a": lambda: _est(recompute="selective"), "b": lambda: _est(recompute="full"),
            "c": lambda: _est(cp=8), "d": lambda: _est(cp=8, recompute="selective"),
            "e": lambda: _est(zero_stage=3, offload="optimizer", recompute="full")}


def _ring_model(k: dict) -> Model:
    """A LLaMA-shaped model with the K/V heads and head_dim of the implement exercise (4 query heads per K/V head)."""
    heads = 4 * k["kv_heads"]
    hidden = heads * k["head_dim"]
    return Model("exercise", hidden_size=hidden, num_layers=2, num_heads=heads, intermediate_size=2 * hidden,
                 vocab_size=1000, num_kv_heads=k["kv_heads"], head_dim=k["head_dim"],
                 max_position_embeddings=k["seq_len"])


def _ring(k: dict) -> float:
    """memlib.cost.timing.cp_kv_bytes for the shape in the implement exercise's arguments."""
    e = estimate_training(_ring_model(k), seq_len=k["seq_len"], micro_batch=k["micro_batch"], cp=k["cp"],
                          recompute=k["recompute"], zero_stage="FULL_SHARD")
    return cp_kv_bytes(e)


def _ring_case(name: str, seq_len: int, cp: int, recompute: str, micro_batch: int = 1) -> dict:
    m = get_model(name)
    return dict(kv_heads=m.num_kv_heads, head_dim=m.head_dim, seq_len=seq_len, cp=cp, micro_batch=micro_batch,
                recompute=recompute)


def _random_ring_case(rng: random.Random) -> dict:
    cp = rng.choice((2, 4, 8, 16))
    return dict(kv_heads=rng.choice((1, 2, 4, 8, 16)), head_dim=rng.choice((64, 96, 128)),
                seq_len=2 * cp * rng.randint(64, 4096), cp=cp, micro_batch=rng.choice((1, 2)),
                recompute=rng.choice(("none", "selective", "full")))


def _kv_block(k: dict) -> int:
    """Bytes of one GPU's K/V block of one layer in bf16 (the implement exercise's unit of traffic)."""
    return 2 * 2 * k["kv_heads"] * k["head_dim"] * k["seq_len"] // k["cp"] * k["micro_batch"]


_PACK_DOCS = [16384] + [1024] * 16      # one long document and sixteen short ones in a 32k row
_PAIR = 33                               # a RoPE pair the deep dive's table skips (it shows 32 and 34)


def _pack_saving(docs=None) -> float:
    """The share of a packed row's causal attention pairs a per-document mask removes, in % (memlib.training.packing)."""
    return 100 * packing_attention_saving(_PACK_DOCS if docs is None else docs)


def _l31_stretch(method: str = "llama3", pair: int = _PAIR) -> float:
    """What Llama 3.1's frequency of `pair` is divided by under `method` (memlib.models.rope.rope_stretch), with its
    rope_theta, head_dim 128, factor 8 and original length 8,192."""
    sc = LLAMA3_ROPE_SCALING
    return rope_stretch(method, 128, LLAMA3_ROPE_THETA, sc["factor"], sc["original_max_position_embeddings"])[pair]


EXERCISES = [
    Numeric(
        id="06.1", title="The logits and loss of a 152k vocabulary", difficulty="warm-up", minutes=4,
        formula="logits and loss: b·s·V x (2 bytes of 16-bit logits + 12 bytes of fp32 loss tensors) at the start of "
                "the backward (memlib.training.terms logits_bytes, loss_backward_bytes)",
        prompt="Qwen2.5-7B (vocabulary 152,064) trains on one sequence of 24,576 tokens with transformers' loss "
               "(bf16 logits, cast to fp32, log-softmax in fp32). At the start of the backward the bf16 logits, the "
               "fp32 log-softmax output and two fp32 gradients of the same shape are alive. How many GB is that? "
               "(Notebook 06, step 3, does this for Llama-3.1-8B at 128k.)",
        expected=lambda: _vocab_peak(_est(_QWEN_SEQ, model=_QWEN)), unit="GB",
        slips=(Slip("bf16 logits only", lambda: _term(_est(_QWEN_SEQ, model=_QWEN), "logits_bytes"),
                    "that is the bf16 logits alone; the loss works in fp32 and keeps three vocabulary-sized fp32 "
                    "tensors at the start of the backward"),
               Slip("fp32 logits only", lambda: 2 * _term(_est(_QWEN_SEQ, model=_QWEN), "logits_bytes"),
                    "one fp32 copy is not all: the bf16 logits stay, and the log-softmax output and its gradients "
                    "are fp32 too"),
               Slip("Llama's vocabulary", lambda: _vocab_peak(_est(_QWEN_SEQ)),
                    "that is Llama 3's 128,256-word vocabulary; Qwen2.5's has 152,064")),
        hints=("Every token gets a score for every word of the vocabulary; count how many copies of that b·s·V "
               "tensor exist at once, and their widths.",
               "bytes = tokens x V x (2 + 3 x 4).",
               "Compute 24,576 x 152,064 first: the number of scores."),
        worked=lambda: (f"24,576 x 152,064 scores x (2 + 12) bytes = **{b(_vocab_peak(_est(_QWEN_SEQ, model=_QWEN)))}** "
                        f"(`estimate_training(...).moments`, the part `logits_and_loss` at the backward's start): "
                        f"{gb(_vocab_peak(_est(_QWEN_SEQ, model=_QWEN))) / gb(_all_layers(_est(_QWEN_SEQ, model=_QWEN))):.0%} "
                        "of all 28 layers' saved activations (hidden size 3,584: V/h = 42), and a chunked (fused) "
                        "loss keeps none of it."),
    ),
    Numeric(
        id="06.2", title="Activations per GPU with context parallelism", difficulty="warm-up", minutes=5,
        formula="per-GPU activations under context parallelism: the per-token ledger x seq_len / cp tokens x layers "
                "(memlib.estimate_training(..., cp=))",
        prompt="One layer of Llama-3.1-8B keeps 200,832 bytes per token for the backward (sdpa, bf16; notebook 06, "
               "step 2). A 98,304-token (96k) sequence is split by context parallelism over 2 GPUs: each GPU runs "
               "98,304 / 2 tokens of it. How many GB of saved activations do the 32 layers hold on "
               "**one** GPU at the end of the forward (no recompute)?",
        expected=lambda: _all_layers(_est(_96K, cp=2)), unit="GB",
        slips=(Slip("cp ignored", lambda: _all_layers(_est(_96K)),
                    "that is the whole sequence: context parallelism gives each GPU 1/cp of the tokens, and every "
                    "per-token activation with them"),
               Slip("divided by cp squared", lambda: _all_layers(_est(_96K, cp=2)) // 2,
                    "the saved tensors grow linearly with the tokens (the fused kernel keeps no s x s matrix): "
                    "divide by cp once")),
        hints=("Which tensors does context parallelism split? Every activation belongs to a token.",
               "bytes = 200,832 x (98,304 / 2) x 32.",
               "Tokens per GPU first: 98,304 / 2."),
        worked=lambda: (f"200,832 B x 49,152 tokens x 32 layers = **{b(_all_layers(_est(_96K, cp=2)))}** per GPU, "
                        f"against {b(_all_layers(_est(_96K)))} without CP (`estimate_training(..., cp=2).counts"
                        "['layer_activation_bytes'] x 32`): still far over an H100: cp = 2 needs recompute, or cp = 8 and recompute (notebook 06, step 6)."),
    ),
    SpotError(
        id="06.3", title="\"~32 GB * num_heads\"", difficulty="interview", minutes=8,
        formula="eager attention's saved probabilities: a·s²·b x (4 bytes of fp32 softmax + 2 of its bf16 copy) per "
                "layer (memlib.training.activations.llama_layer_ledger, eager.probs_fp32 + eager.probs)",
        prompt="Hugging Face Accelerate's guide to context parallelism motivates it with this arithmetic for vanilla "
               "(eager) attention. transformers' eager attention computes the softmax in fp32 and casts it back "
               "to bf16, and both tensors are kept for the backward. Find the error and give what one layer of "
               "Llama-3.1-8B (32 heads) keeps for its attention probabilities at 128k tokens, in GB.",
        quote="With sequence length of 128k, the memory requirement of the attention matrix is 128k * 128k * 2 bytes "
              "* num_heads = ~32 GB * num_heads for bf16 precision, given vanilla attention implementation.",
        source="Hugging Face Accelerate docs, concept guide \"Context Parallel in 🤗 accelerate\"",
        figures=(Figure("128k * 128k", "right", "one score per (query, key) pair: s² per head"),
                 Figure("2 bytes", "error", "the eager softmax runs in fp32 (4 bytes) and its bf16 cast (2 bytes) is "
                                            "kept too: 6 bytes per score", group="bytes"),
                 Figure("~32 GB", "right", "128k x 128k x 2 bytes is 34.4 GB = 32 GiB: a GiB labelled GB, not an "
                                          "independent error (with 128,000 tokens it is 32.8 GB)")),
        expected=lambda: _probs(_est(attention="eager")), unit="GB",
        slips=(Slip("bf16 only", lambda: _probs(_est(attention="eager")) // 3,
                    "that counts one bf16 copy (2 bytes per score); the fp32 softmax output is kept as well"),
               Slip("one head", lambda: _probs(_est(attention="eager")) // 32,
                    "that is one head; the question asks for the layer's 32 heads")),
        hints=("Ask how many bytes each score costs in transformers' eager attention, and what is kept for the backward.",
               "bytes = 32 heads x 131,072² x (4 + 2).",
               "Compute 131,072² x 2 bytes in bytes, then check it in GB (1e9) and in GiB (2³⁰)."),
        worked=lambda: (f"One error. **2 bytes**: transformers keeps the fp32 softmax and its bf16 copy, 6 bytes per "
                        f"score. (\"~32 GB\" is a GiB label: 128k² x 2 B = 34.4 GB = 32 GiB.) One layer of Llama-3.1-8B: "
                        f"32 x 131,072² x 6 B = **{b(_probs(_est(attention='eager')))}** "
                        "(the layer's ledger, eager.probs_fp32 + eager.probs): the reason no one trains long context "
                        "with eager attention."),
    ),
    Numeric(
        id="06.4", title="What full recompute keeps for a 70B at 96k", difficulty="interview", minutes=6,
        formula="full recompute keeps each layer's input: b·s·h x 2 bytes (bf16) per layer (memlib.training.terms "
                "checkpoint_bytes)",
        prompt="Llama-3.1-70B (hidden 8,192, 80 layers), one 98,304-token sequence per GPU, bf16 compute under FSDP, "
               "full activation recompute (non-reentrant checkpointing of every decoder layer). How many GB of "
               "checkpoints do the 80 layers keep until the backward reaches them?",
        expected=lambda: _term(_est70(recompute="full"), "checkpoint_bytes") * 80, unit="GB", count=80, per="total",
        count_unit=("layer", "layers"),
        slips=(Slip("fp32 checkpoints", lambda: 2 * _term(_est70(recompute="full"), "checkpoint_bytes") * 80,
                    "under FSDP2's mixed precision the layers compute in bf16: their input is 2 bytes per value "
                    "(AMP without the policy would keep the fp32 residual)"),
               Slip("recompute keeps everything", lambda: _all_layers(_est70()),
                    "that is what the layers keep without recompute; full recompute keeps only each layer's input")),
        hints=("Full recompute reruns a layer in backward from one saved tensor per layer: which one?",
               "bytes = 98,304 tokens x 8,192 x 2 bytes x 80 layers.",
               "One layer's input: 98,304 x 8,192 values."),
        worked=lambda: (f"98,304 x 8,192 x 2 B = {b(_term(_est70(recompute='full'), 'checkpoint_bytes'))} per layer, "
                        f"x 80 = **{b(_term(_est70(recompute='full'), 'checkpoint_bytes') * 80)}**: the checkpoints "
                        f"alone are {gib(_term(_est70(recompute='full'), 'checkpoint_bytes') * 80) / gib(usable_bytes(get_gpu(_GPU))):.2f}x "
                        f"what an H100 offers, before the rebuilt layer ({b(_est70().counts['layer_activation_bytes'])}). "
                        f"Without recompute the layers keep {b(_all_layers(_est70()))}: at 96k a 70B needs its sequence "
                        "split (context parallelism) even with full recompute."),
    ),
    Choice(
        id="06.5", title="Which layout trains Llama-3.1-8B at 128k on 8 H100s?", difficulty="interview", minutes=8,
        formula="does it fit: per-GPU peak + CUDA context + headroom vs capacity (memlib.fits)",
        prompt="Llama-3.1-8B, full training at 131,072 tokens, one sequence per micro-batch, bf16 with AdamW, one node "
               "of 8 x H100 80GB, transformers' loss (full logits). Which layout fits (memlib.fits: peak + CUDA "
               "context + allocator headroom)?",
        options=(Option("a", "FSDP over 8 GPUs, selective recompute",
                        lambda: f"each GPU still runs a whole 128k sequence: {gib(_LAYOUTS['a']().peak_bytes):.0f} GiB",
                        misconception="recompute makes the sequence length irrelevant"),
                 Option("b", "FSDP over 8 GPUs, full recompute",
                        lambda: (f"the checkpoints are small, but the logits and loss of a whole 128k sequence are "
                                 f"not: {gib(_LAYOUTS['b']().peak_bytes):.0f} GiB"),
                        misconception="full recompute removes every activation, the logits included"),
                 Option("c", "context parallelism over the 8 GPUs with FSDP, no recompute",
                        lambda: (f"16k tokens per GPU but every layer's activations kept: "
                                 f"{gib(_LAYOUTS['c']().peak_bytes):.0f} GiB"),
                        misconception="splitting the sequence 8 ways is enough by itself"),
                 Option("d", "context parallelism over the 8 GPUs with FSDP, selective recompute", "", "1"),
                 Option("e", "DeepSpeed ZeRO-3 with the optimizer offloaded to CPU, full recompute",
                        lambda: (f"offload moves model states, which were never the problem: "
                                 f"{gib(_LAYOUTS['e']().peak_bytes):.0f} GiB"),
                        misconception="offloading the optimizer is the universal fix for running out of memory")),
        reasons=(Option("1", "context parallelism divides every per-token term (activations, logits, loss) by 8, "
                             "and selective recompute keeps about a third of the rest"),
                 Option("2", "recompute removes the logits, which are the largest term",
                        "recompute reruns the decoder layers; the logits and the loss are outside them"),
                 Option("3", "context parallelism shards the model states over the 8 GPUs",
                        "CP splits tokens, not weights: FSDP shards the states")),
        right=lambda: only_fitting(_LAYOUTS, _GPU),
        hints=("Find the largest term at 128k for one GPU in each layout: model states, activations or the logits?",
               "Per GPU: activations ~200 KB/token/layer x tokens on that GPU x 32; logits and loss ~1.8 MB/token; "
               "states ~16 GB with FSDP over 8.",
               "Compute the logits and loss for 131,072 tokens and for 16,384 tokens first."),
        worked=lambda: ("Per GPU (memlib.estimate_training + memlib.fits on h100-80gb):\n\n"
                        + md_table(("option", "per-GPU peak", "on h100-80gb"),
                                   [(f"({k})", f"{gib(make().peak_bytes):.1f} GiB", verdict(make(), _GPU))
                                    for k, make in _LAYOUTS.items()])
                        + f"\n\nOnly **({only_fitting(_LAYOUTS, _GPU)})** fits, with a margin of "
                          f"{fits(_LAYOUTS['d'](), _GPU).margin_gib:.1f} GiB: tight. A chunked loss with full "
                          f"recompute would bring it to "
                          f"{gib(_est(cp=8, recompute='full', loss='chunked').peak_bytes):.0f} GiB."),
    ),
    Numeric(
        id="06.6", title="How much more does a 128k sequence cost than an 8k one?", difficulty="interview", minutes=6,
        formula="training FLOPs per token 6N + 12·L·H·Q·T (PaLM App. B; memlib.cost.timing.flops_per_token), x the tokens",
        prompt="Llama-3.1-8B has N = 8.03e9 parameters, L = 32 layers, H = 32 heads of Q = 128. How many times the "
               "training FLOPs of one 8,192-token sequence does one 131,072-token sequence cost (no recompute, "
               "PaLM's count without a causal discount)? Answer as a ratio, e.g. `\"12x\"`.",
        expected=lambda: _seq_cost(_LONG) / _seq_cost(_SHORT), unit="x", tolerance=0.02,
        slips=(Slip("linear in tokens", lambda: _LONG / _SHORT,
                    "16x counts only the tokens: each token's attention FLOPs (12·L·H·Q·T) grow with T too"),
               Slip("quadratic", lambda: (_LONG / _SHORT) ** 2,
                    "256x treats every FLOP as attention; the weights' 6N per token does not grow with T")),
        hints=("Split the FLOPs per token into a part that does not depend on the sequence and a part that does.",
               "ratio = 131,072 x (6N + 12·L·H·Q·131,072) / (8,192 x (6N + 12·L·H·Q·8,192)).",
               "Compute 6N and 12·L·H·Q first; the second one is multiplied by T."),
        worked=lambda: (f"6N = {6 * get_model(_8B).num_params / 1e9:,.0f} GFLOPs per token; attention "
                        f"{(flops_per_token(get_model(_8B), _SHORT) - 6 * get_model(_8B).num_params) / 1e9:,.0f} at 8k "
                        f"and {(flops_per_token(get_model(_8B), _LONG) - 6 * get_model(_8B).num_params) / 1e9:,.0f} at "
                        f"128k. One 128k sequence costs **{_seq_cost(_LONG) / _seq_cost(_SHORT):.0f}x** an 8k one "
                        f"(`memlib.cost.timing.flops_per_token` x tokens): the same number of tokens costs "
                        f"{_seq_cost(_LONG) / _seq_cost(_SHORT) / (_LONG / _SHORT):.1f}x the FLOPs at 128k."),
    ),
    Implement(
        id="06.7", title="Ring attention's traffic per layer", difficulty="stretch", minutes=15,
        formula="ring attention traffic per layer and micro-batch: (cp-1) K/V blocks in the forward (twice with full "
                "recompute), (cp-1) again in the backward, cp fp32 dK/dV blocks (memlib.cost.timing.cp_kv_bytes)",
        prompt="Write `ring_kv_bytes_per_layer(kv_heads, head_dim, seq_len, cp, micro_batch, recompute)`: the bytes one "
               "GPU sends for one decoder layer and one micro-batch under context parallelism (torch's "
               "`context_parallel`, bf16). A GPU's K/V block is its seq_len / cp tokens' keys and values "
               "(2 x kv_heads x head_dim values per token, 2 bytes each, x micro_batch). The forward sends the block "
               "to the other cp - 1 GPUs; the backward does it again and passes the dK/dV, in **fp32**, around the "
               "whole ring (cp sends of a block-sized fp32 tensor); full recompute runs the forward's part twice "
               "(selective does not: it keeps the attention output). Tested against `memlib.cost.timing.cp_kv_bytes` "
               "on real models and on shapes drawn at random each time you check.",
        function_name="ring_kv_bytes_per_layer", reference_name="memlib.cost.timing.cp_kv_bytes",
        cases=lambda: [_ring_case(_8B, _LONG, 8, "none"), _ring_case(_8B, _LONG, 8, "full"),
                       _ring_case("llama-3.1-70b", _LONG, 16, "selective"), _ring_case("qwen2.5-7b", 32768, 4, "none", 2),
                       _ring_case("llama-2-7b", 16384, 2, "full")],
        held_out=lambda rng: [_random_ring_case(rng) for _ in range(3)],
        reference=_ring,
        slips=(Slip("forward only", lambda k, w: (2 if k["recompute"] == "full" else 1) * (k["cp"] - 1) * _kv_block(k),
                    "the backward fetches K/V again and sends the dK/dV around the ring: most of the traffic"),
               Slip("dK/dV in bf16", lambda k, w: w - k["cp"] * _kv_block(k),
                    "the ring backward accumulates dK/dV in fp32 (convert_to_f32): twice the bytes of a bf16 block")),
        hints=("Draw the ring for 4 GPUs: what does one GPU send in the forward, and what in the backward?",
               "block = 2 x 2 x kv_heads x head_dim x seq_len / cp x micro_batch; bytes = f x (cp-1) x block + "
               "(cp-1) x block + cp x 2 x block, f = 2 with full recompute, else 1.",
               "Write the block size first and test it: Llama-3.1-8B at 128k over 8 GPUs gives 67,108,864 bytes."),
        worked=lambda: ("```python\ndef ring_kv_bytes_per_layer(kv_heads, head_dim, seq_len, cp, micro_batch, "
                        "recompute):\n"
                        "    block = 2 * 2 * kv_heads * head_dim * seq_len // cp * micro_batch  # bf16 K and V\n"
                        "    forwards = 2 if recompute == 'full' else 1\n"
                        "    return forwards * (cp - 1) * block + (cp - 1) * block + cp * 2 * block\n```\n\n"
                        f"Llama-3.1-8B at 128k over 8 GPUs: "
                        f"**{b(_ring(_ring_case(_8B, _LONG, 8, 'none')))}** per layer and micro-batch, "
                        f"{b(32 * _ring(_ring_case(_8B, _LONG, 8, 'none')))} per GPU per step for 32 layers, most of it "
                        "hidden behind the attention blocks (`memlib.step_time`)."),
    ),
    Numeric(
        id="06.8", title="The KV cache of one 128k conversation with the 405B", difficulty="warm-up", minutes=4,
        formula="KV cache per token: 2 (K, V) x layers x KV heads x head_dim x bytes (memlib.estimate_inference)",
        prompt="Serving Llama-3.1-405B (126 layers, 128 query heads and 8 key/value heads of 128: GQA) with a bf16 "
               "KV cache, how many GB of cache does one 131,072-token sequence need? (Notebook 06's deep dive does "
               "it for the 8B.)",
        expected=lambda: _kv_cache(), unit="GB",
        slips=(Slip("no GQA", lambda: _kv_cache(128),
                    "Llama 3.1 405B shares each key/value head among 16 query heads (GQA): 8 K/V heads, not 128"),
               Slip("the 70B's layers", lambda: _kv_cache(model=_70B),
                    "that is the 70B's 80 layers; the 405B has 126, with the same 8 K/V heads of 128"),
               Slip("K only", lambda: _kv_cache() // 2, "the cache keeps both K and V")),
        hints=("The cache keeps, for every token and every layer, the keys and values of the K/V heads.",
               "bytes = 2 x 126 x 8 x 128 x 2 bytes x 131,072 tokens.",
               "Per token first: 2 x 126 x 8 x 128 x 2."),
        worked=lambda: (f"2 x 126 x 8 x 128 x 2 B = 516,096 B per token, x 131,072 tokens = **{b(_kv_cache())}** "
                        f"(`memlib.estimate_inference(...).breakdown['kv_cache']`): most of an H100 for one "
                        f"conversation, beside {b(_kv_cache(model=_8B))} for the 8B ({_kv_cache() / _kv_cache(model=_8B):.1f}x, the ratio of "
                        "their layers: both have 8 K/V heads of 128)."),
    ),
    SelfAssessed(
        id="06.9", title="Train Llama-3.1-70B at 128k", difficulty="stretch", minutes=15,
        formula="a long-context layout: memory per GPU, the communication it adds, and the time (memlib.parallel.plan.plan with "
                "cps=, memlib.step_time)",
        prompt="Your team will continue pre-training Llama-3.1-70B at 131,072 tokens on 64 H100 80GB (8 nodes). "
               "Propose the layout: which parallelisms over which GPUs, recompute and loss, the memory per GPU you "
               "expect, the communication each choice adds, and what you would measure first. Then mark your answer "
               "against the rubric.",
        rubric=("Eager attention is out: a fused (flash/cuDNN) kernel, since one eager layer at 128k keeps terabytes",
                "Context parallelism splits the sequence (each GPU a slice of the tokens), with the sequence divisible "
                "by 2 x cp",
                "FSDP (or a distributed optimizer) shards the model states over the data-parallel and CP GPUs; tensor "
                "parallelism inside a node for a 70B",
                "Selective or full recompute, and a chunked or vocabulary-parallel loss for the 128k-vocabulary logits",
                "The added traffic: K/V per layer for CP (hidden behind attention), activation all-reduces for TP "
                "(keep TP inside a node)",
                "Attention dominates the FLOPs at 128k: expect several times fewer tokens/s per GPU than at 8k",
                "Check the memory on a short run with the real kernels (max_memory_allocated) before scaling"),
        hints=("Start from what grows with the sequence and what does not: which terms must be split, and by what?",
               "Per GPU: states 16 B/param / (GPUs sharing them); activations ~ per-token ledger x tokens per GPU; "
               "logits ~ 14 B x V per token.",
               "Try memlib.parallel.plan.plan('llama-3.1-70b', 'h100-80gb', 64, seq_len=131072, grad_accum=1, cps=(8, 16))."),
        worked=lambda: (lambda r: (
            f"memlib (`plan(..., cps=(8, 16))`) finds {len(r.feasible)} layouts on 64 H100s; the fastest is "
            f"**{r.best.describe()}** at {gib(r.best.estimate.peak_bytes):.0f} GiB per GPU and about "
            f"{r.best.tokens_per_s_per_gpu:,.0f} tokens/s per GPU. A typical answer: TP 8 inside each node (activation "
            "all-reduces on NVLink), CP 8 across the nodes (K/V only: with 8 K/V heads small enough to hide behind "
            "attention even on InfiniBand), FSDP over dp x cp, selective recompute (full if the margin is thin), a "
            f"fused kernel and a vocabulary-parallel loss; attention is "
            f"{attention_flops_per_token('llama-3.1-70b', _LONG) / flops_per_token('llama-3.1-70b', _LONG):.0%} of the "
            "FLOPs per token, so expect a few hundred tokens/s per GPU. Measure one step's peak with the real kernels "
            "before scaling out."))(
            plan("llama-3.1-70b", _GPU, 64, seq_len=_LONG, grad_accum=1, cps=(8, 16),
                 recomputes=("selective", "full"))),
    ),
    Numeric(
        id="06.10", title="What a sliding window saves in attention FLOPs", difficulty="interview", minutes=8,
        formula="keys a causal query attends to, averaged over T tokens: T/2 (full), w - w²/(2T) (sliding window w); "
                "attention FLOPs per token 12·L·H·Q x that (memlib.cost.conventions.windowed_attention_flops_per_token)",
        prompt="Mistral 7B (32 layers, 32 query heads of 128) attends with a sliding window of 4,096 tokens on every "
               "layer. Training on 65,536-token sequences with a causal kernel that skips every masked block, how "
               "many times fewer attention FLOPs per token does it spend than the same model with full causal "
               "attention? Count the keys each query attends to, averaged over the sequence. Answer as a ratio, "
               "e.g. `\"3x\"`.",
        expected=lambda: _window_ratio(), unit="x", tolerance=0.02,
        slips=(Slip("no causal mask", lambda: 2 * _window_ratio(),
                    "under a causal mask a query of the full model sees the tokens before it, T/2 on average, not T"),
               Slip("w for every query", lambda: _WIN_SEQ / 2 / get_model(_MISTRAL).sliding_window,
                    "the first 4,096 queries see fewer than w keys (a triangle, w²/2 keys in all): the window's "
                    "average is a little under w")),
        hints=("The attention FLOPs of a token are proportional to the number of keys its query is scored against; "
               "the weights' FLOPs do not change.",
               "full: T/2 keys on average; window: (w²/2 + (T - w)·w) / T = w - w²/(2T). ratio = (T/2) / (w - w²/(2T)).",
               "w²/(2T) = 4,096² / 131,072 = 128."),
        worked=lambda: (f"Full causal: 65,536 / 2 = 32,768 keys per query on average; window: 4,096 - 4,096²/(2 x 65,536) "
                        f"= 3,968. Ratio **{_window_ratio():.2f}x** (`windowed_attention_flops_per_token`), "
                        f"{_window_ratio(131072):.1f}x at 128k: per token the window's cost stops growing, so per "
                        "sequence attention grows as T·w, not T². The weights' 6N is the same, and information "
                        "beyond w travels only layer by layer (32 x 4,096 = 131,072 tokens at the last layer)."),
    ),
    Choice(
        id="06.11", title="What does FlashAttention save?", difficulty="interview", minutes=6,
        formula="a layer's saved tensors with eager attention (the s x s probabilities) and with a fused kernel "
                "(Q, K, V, output, logsumexp) (memlib.training.activations.llama_layer_ledger); FLOPs per token "
                "6N + 12·L·H·Q·T for both",
        prompt="Llama-3.1-8B trains at 32,768 tokens. You switch attention from eager (softmax(QKᵀ)V as separate "
               "ops) to FlashAttention-2 through `scaled_dot_product_attention`. What changes, and why?",
        options=(Option("a", "the attention FLOPs fall from O(s²) to O(s) per sequence",
                        lambda: ("FlashAttention computes every score of QKᵀ, as eager attention does, and more in the "
                                 "backward (it recomputes them): "
                                 f"{attention_flops_per_token(_8B, _FA_SEQ) / 1e9:.0f} GFLOPs of attention per token "
                                 "either way"),
                        misconception="FlashAttention is a cheaper approximation of attention"),
                 Option("b", "the s x s matrices are no longer stored (memory linear in s) and HBM traffic falls; "
                             "the FLOPs stay the same", "", "1"),
                 Option("c", "the result changes slightly: the softmax is approximated block by block",
                        "the online softmax rescales each partial sum by exp(old max - new max): the result is exact",
                        misconception="online softmax is an approximation"),
                 Option("d", "the KV cache a server keeps shrinks",
                        "the KV cache holds K and V of every past token, which FlashAttention also reads; it changes "
                        "what training saves for the backward, not what inference caches",
                        misconception="FlashAttention and KV-cache compression are the same thing")),
        reasons=(Option("1", "tiling with an online softmax (running max and sum) computes exact attention block by "
                             "block in SRAM, and the backward rebuilds the blocks from Q, K, V and each row's "
                             "logsumexp"),
                 Option("2", "it skips the keys far from each query, as a sliding window does",
                        "that is sliding-window attention; FlashAttention attends to every key"),
                 Option("3", "it keeps the probabilities in fp8 instead of fp32",
                        "it keeps no probabilities at all; fp8 is FlashAttention-3's option for the matmuls")),
        right=_fa_right,
        hints=("Ask separately what is computed, what is stored for the backward, and what is read and written "
               "to HBM.",
               "eager keeps a·s² probabilities per layer (fp32 and bf16: 6 bytes each); the fused kernel keeps "
               "Q, K, V, the output and one fp32 logsumexp per row.",
               "Compute 32 x 32,768² x 6 bytes: one eager layer's probabilities."),
        worked=lambda: (f"**(b), because 1.** One eager layer at 32k keeps {b(_fa_layer('eager'))} "
                        f"({b(_probs(_est(_FA_SEQ, attention='eager')))} of it the probabilities); with the fused "
                        f"kernel {b(_fa_layer('sdpa'))}, {_fa_layer('eager') / _fa_layer('sdpa'):.0f}x less, and linear "
                        "in s. The FLOPs are PaLM's 12·L·H·Q·T either way (plus the recompute in the backward): "
                        "FlashAttention saves memory and HBM traffic (Dao et al. 2022, Theorem 2: Θ(s²d²/M) accesses "
                        "instead of Θ(sd + s²)), not FLOPs."),
    ),
Numeric(
        id="06.12", title="What a per-document mask saves in a packed row", difficulty="interview", minutes=6,
        formula="causal query-key pairs: sum d_i(d_i + 1)/2 with a per-document (block-diagonal) mask, T(T + 1)/2 with "
                "one causal mask over the row (memlib.training.packing.packing_attention_saving)",
        prompt="A 32,768-token training row packs one document of 16,384 tokens and sixteen of 1,024. The attention "
               "kernel is causal. What share of the row's attention work (query-key pairs) does a per-document mask "
               "(FlashAttention varlen with cu_seqlens, or a block-diagonal mask) save, against one causal mask over "
               "the whole row? Answer in %. (The deep dive does it for 8 equal documents.)",
        expected=_pack_saving, unit="%", tolerance=0.01,
        slips=(Slip("equal documents", lambda: 100 * (1 - 1 / len(_PACK_DOCS)),
                    "1 - 1/k holds for k equal documents; here the 16k document alone keeps a quarter of the row's "
                    "pairs (16,384² / 32,768²)"),
               Slip("the work kept", lambda: 100 - _pack_saving(),
                    "that is the share the mask keeps (each document with itself); the question asks what it saves")),
        hints=("A causal kernel computes each query against the keys before it; with the mask, only those in its own "
               "document.",
               "saved = 1 - sum d_i² / T² (the diagonals change the third digit).",
               "sum d_i² = 16,384² + 16 x 1,024²; T² = 32,768²."),
        worked=lambda: (f"Pairs with the mask: 16,384²/2 + 16 x 1,024²/2 ≈ "
                        f"{causal_attention_pairs(_PACK_DOCS) / 1e6:,.0f} M; with one mask 32,768²/2 ≈ "
                        f"{causal_attention_pairs(_PACK_DOCS, False) / 1e6:,.0f} M. The mask saves **{_pack_saving():.1f}%** "
                        f"(`memlib.training.packing.packing_attention_saving`), less than the "
                        f"{100 * (1 - 1 / len(_PACK_DOCS)):.0f}% of 17 equal documents: the long document dominates. "
                        "Without the mask those pairs are cross-document attention the model never sees at inference."),
    ),
    Numeric(
        id="06.13", title="Which RoPE pairs does Llama 3.1 stretch?", difficulty="interview", minutes=8,
        formula="Llama 3.1 rope_scaling: wavelength λ = 2π / θ_i, θ_i = base^(-2i/d); λ < L/high: kept; λ > L/low: "
                "θ/s; between: θ' = (1 - γ)θ/s + γθ, γ = (L/λ - low) / (high - low) (memlib.models.rope)",
        prompt="Llama 3.1 has rope_theta 500,000, head_dim 128 and rope_scaling factor 8, low_freq_factor 1, "
               "high_freq_factor 4, original_max_position_embeddings 8,192. Pair i = 33 rotates by "
               "θ_33 = 500,000^(-66/128) radians per position. By what factor does rope_scaling divide its frequency? "
               "Answer as a ratio, e.g. `\"2.5x\"`.",
        expected=lambda: _l31_stretch(), unit="x", tolerance=0.02,
        slips=(Slip("position interpolation", lambda: LLAMA3_ROPE_SCALING["factor"],
                    "8x divides every pair, as position interpolation does; Llama 3.1 divides by 8 only the pairs "
                    "whose wavelength exceeds 8,192 positions"),
               Slip("kept as a fast pair", lambda: 1.0,
                    "the pair is kept only if its wavelength is under 8,192 / 4 = 2,048 positions; this one's is longer"),
               Slip("NTK-aware", lambda: _l31_stretch("ntk"),
                    "that is NTK-aware scaling's s^(2i/(d-2)); Llama 3.1 blends by the rotations in 8k, not by the "
                    "pair's index"),
               Slip("YaRN's ramp", lambda: _l31_stretch("yarn"),
                    "that is YaRN's ramp (alpha 1, beta 32); Llama 3.1's runs from 1 to 4 rotations")),
        hints=("Work out how many times the pair turns in the original 8,192 positions: a pair that turns fast is "
               "left alone, one that never completes a turn is interpolated by the full factor.",
               "λ = 2π x 500,000^(66/128); r = 8,192 / λ; γ = (r - 1) / (4 - 1); "
               "θ'/θ = (1 - γ)/8 + γ; the answer is θ/θ'.",
               "500,000^(66/128) = e^(13.122 x 0.5156)."),
        worked=lambda: (f"λ = 2π x 500,000^(66/128) ≈ 2π x 868 ≈ 5,454 positions: r = 8,192 / 5,454 ≈ 1.50 turns, "
                        f"between 1 and 4, so the pair is blended: γ = 0.50 / 3 ≈ 0.167, θ'/θ = 0.833/8 + 0.167 ≈ 0.271, "
                        f"divided by **{_l31_stretch():.2f}x** (`memlib.models.rope.rope_stretch`). Position "
                        f"interpolation would divide it by 8, NTK-aware by {_l31_stretch('ntk'):.2f}, YaRN by "
                        f"{_l31_stretch('yarn'):.2f}. None of them changes a byte of memory."),
    ),
]
