"""Exercises for notebook 04: how many 8k chats Llama-3-70B serves on 2 x A100 80GB and on 8 x H100.
The KV cache per token with GQA, quantized weights split by tensor parallelism, chats that fit, vLLM's
reservation, PagedAttention's block waste, the layout of eight GPUs, the decode speed limit, speculative
decoding's speed-up and an MHA checkpoint converted to GQA. Most numeric exercises change the notebook's
setup (model, utilization, group count), so the answer is derived with its method, not copied."""

from __future__ import annotations

import random

from memlib.learn.exercises._common import b, md_table
from memlib.learn.exercises.kinds import (Choice, Figure, Implement, MultiChoice, Numeric, Option, SelfAssessed, Slip,
                                    SpotError)
from memlib.hardware.fit import usable_bytes
from memlib.hardware.gpus import get_gpu
from memlib.serving.inference import estimate_inference, kv_bytes_per_token, kv_cache_bytes, max_batch
from memlib.models import get_model
from memlib.serving import (decode_bound, littles_law_concurrency, request_rate_bound, paged_kv_waste_bytes, speculative_expected_tokens, speculative_speedup,
                            vllm_default_max_num_batched_tokens, vllm_kv_cache_budget_bytes, vllm_max_concurrency)
from memlib.serving.disaggregation import kv_transfer_s, pd_ratio
from memlib.serving.kv_compression import kivi_cache_bytes
from memlib.units import gib

NOTEBOOK = "04_serving_capacity"
_M = "llama-3-70b"


def _rate15():
    """04.15: Llama-3.1-8B on one H100, 3,000 + 1,000 tokens, 0.5 s TTFT, 128 requests in the cache, 40% MFU."""
    return request_rate_bound("llama-3.1-8b", "h100-80gb", 3000, 1000, 0.5, mfu=0.4, weights="bf16", batch=128)

# 04.16: a 32k-token RAG prompt of Qwen2.5-7B handed from a tp 4 prefill instance to a decode instance, fp8 KV,
# each prefill GPU sending its quarter over its own 400 Gb/s InfiniBand port
_PD_MODEL, _PD_PROMPT, _PD_TP = "qwen2.5-7b", 32768, 4


def _pd_s(kv_cache: str = "fp8", tp: int = _PD_TP, link: str = "IB NDR", **changes) -> float:
    """memlib.serving.disaggregation.kv_transfer_s for 04.16 (changes: a variant model, e.g. MHA's KV heads)."""
    m = get_model(_PD_MODEL)
    return kv_transfer_s(m.with_(**changes) if changes else m, _PD_PROMPT, link, kv_cache=kv_cache, tp=tp)


# 04.17: KIVI 4-bit on one 32k chat of Llama-3.1-8B (group 32, fp16 scale and zero per group, 128 recent tokens
# in 16-bit)
_KIVI_MODEL, _KIVI_CTX = "llama-3.1-8b", 32768


def _kivi(**kw) -> int:
    """memlib.serving.kv_compression.kivi_cache_bytes for 04.17."""
    return kivi_cache_bytes(_KIVI_MODEL, _KIVI_CTX, **({"bits": 4} | kw))


def _kivi_no_scales() -> float:
    """The slip: 4 bits = half a byte per element, the scales and zero points forgotten (128 recent in bf16)."""
    bf16_token = kv_bytes_per_token(get_model(_KIVI_MODEL))
    return (_KIVI_CTX - 128) * bf16_token / 4 + 128 * bf16_token



# 04.18: prefill : decode GPUs of two workloads on Llama-3-70B, tp 8 instances of H100, 20 ms TPOT SLO, 50% MFU
_PD_WORK = {"A": (8000, 200), "B": (500, 1000)}


def _pd18(work: str):
    """memlib.serving.disaggregation.pd_ratio for 04.18's workload A (RAG) or B (chat)."""
    prompt, reply = _PD_WORK[work]
    return pd_ratio(_M, H100, prompt, reply, 0.020, mfu=0.5, weights="bf16", tp_prefill=8, tp_decode=8)


def _pd18_right() -> str:
    a, b = (_pd18(w).prefill_to_decode > 1 for w in "AB")
    return {(True, False): "a", (False, True): "b", (True, True): "c", (False, False): "d"}[a, b]


_M2 = "llama-2-70b"  # the same projections, a 32,000-token vocabulary
_CTX = 8192
A100, H100 = "a100-80gb", "h100-80gb"


def _kv_token(kv_cache: str = "bf16", **changes) -> int:
    """memlib.serving.inference.kv_bytes_per_token of Llama-3-70B (or a variant: num_kv_heads=64 is MHA)."""
    m = get_model(_M)
    return kv_bytes_per_token(m.with_(**changes) if changes else m, kv_cache)


def _chats(gpu: str, tp: int, weights: str = "bf16", kv_cache: str = "bf16", context: int = _CTX) -> int:
    """memlib.max_batch: 8k chats one tp group holds, with vLLM's default prefill chunk for the GPU."""
    return max_batch(_M, gpu, context, weights=weights, kv_cache=kv_cache, tp=tp,
                     prefill_tokens=vllm_default_max_num_batched_tokens(gpu)).value


def _budget(weights: str = "bf16", **kw) -> int:
    """vLLM's KV budget per GPU for Llama-3-70B on 2 x A100 (memlib.serving.vllm_kv_cache_budget_bytes)."""
    return vllm_kv_cache_budget_bytes(_M, A100, weights=weights, tp=2, **kw)


def _profile_and_context(weights: str = "bf16") -> int:
    """What vLLM's budget subtracts besides the weights: the profiled prefill's workspace and non-torch memory."""
    whole_card = _budget(weights, gpu_memory_utilization=1.0)
    return usable_bytes(get_gpu(A100)) - estimate_inference(_M, weights=weights, tp=2).weight_bytes - whole_card


_UTIL, _W6 = 0.95, "fp8-block"  # 04.6: the raised gpu_memory_utilization, fp8 weights
_ALPHA, _GAMMA, _COST = 0.7, 5, 0.1  # 04.11: acceptance rate, draft tokens per step, draft/target cost
_GROUPS, _TOKENS12 = 5, 4000  # 04.12: Llama-2-13B's 40 heads pooled in groups of 8; one 4k sequence


def _speedup() -> float:
    """memlib.serving.speculative_speedup of 04.11's setup."""
    return speculative_speedup(_ALPHA, _GAMMA, _COST)


def _gqa_cache(kv_heads: int) -> int:
    """memlib.serving.inference.kv_cache_bytes of one 4,000-token Llama-2-13B sequence with `kv_heads` KV heads."""
    return kv_cache_bytes(get_model("llama-2-13b").with_(num_kv_heads=kv_heads), 1, _TOKENS12)


# 8 x H100, bf16, 8k chats: chats of each layout = replicas x max_batch(tp)
_LAYOUTS = {"a": (1, 8), "b": (2, 4), "c": (4, 2), "d": (8, 1)}


def _layout_chats(key: str) -> int:
    replicas, tp = _LAYOUTS[key]
    return replicas * _chats(H100, tp)


def _best_layout() -> str:
    return max(_LAYOUTS, key=_layout_chats)


def _decode185(**kw):
    return decode_bound(_M, H100, 185, _CTX, weights="bf16", tp=8, **kw)


def _waste(k: dict) -> int:
    return paged_kv_waste_bytes(k["tokens"], k["kv_bytes_per_token"], k["block_size"])


def _waste_case(model: str, tokens: int, block_size: int = 16, kv_cache: str = "bf16") -> dict:
    return dict(tokens=tokens, kv_bytes_per_token=kv_bytes_per_token(get_model(model), kv_cache),
                block_size=block_size)


def _random_waste_cases(rng: random.Random) -> list[dict]:
    cases = []
    for i in range(3):
        bs = rng.choice((8, 16, 32, 64, 128))
        # the first draw ends inside a block (a lookup table of zeros cannot pass), the second exactly fills
        # its last block (nothing wasted: a "one block too many" formula cannot pass), the third is free
        tail = (rng.randint(1, bs - 1), 0, rng.randint(0, bs - 1))[i]
        tokens = bs * rng.randint(1, 4096) + tail
        cases.append(dict(tokens=tokens, kv_bytes_per_token=rng.choice((2, 4, 8)) * 128 * rng.randint(4, 128),
                          block_size=bs))
    return cases


# the claims of 04.9, each decided by memlib
_CLAIMS = {
    "a": lambda: 1.9 <= _chats(H100, 8, kv_cache="fp8") / _chats(H100, 8) <= 2.1,
    "b": lambda: _budget() >= 0.85 * usable_bytes(get_gpu(A100)),
    "c": lambda: paged_kv_waste_bytes(_CTX - 15, _kv_token()) < 0.01 * kv_cache_bytes(get_model(_M), 1, _CTX),
    "d": lambda: _chats(A100, 2) == 0,
    "e": lambda: get_gpu(A100).fp8_tflops is not None,
    "f": lambda: (decode_bound(_M, A100, max(_chats(A100, 2, "fp8-block"), 1), _CTX, weights="fp8-block", tp=2)
                  .tokens_per_s_per_sequence
                  / decode_bound(_M, A100, max(_chats(A100, 2), 1), _CTX, weights="bf16", tp=2)
                  .tokens_per_s_per_sequence) > 1.5,
}


def _little_requests() -> float:
    """04.13: requests in flight at 8 per second, each 0.5 s to the first token + 400 tokens x 25 ms."""
    return littles_law_concurrency(8, 0.5 + 400 * 0.025)


EXERCISES = [
    Numeric(
        id="04.1", title="One token of Llama-3-70B's KV cache", difficulty="warm-up", minutes=4,
        formula="KV bytes per token = 2 x layers x kv_heads x head_dim x bytes (memlib.serving.inference.kv_bytes_per_token)",
        prompt="Llama-3-70B has 80 layers, 64 query heads and 8 key/value heads of dimension 128. How many bytes of KV "
               "cache does **one token** take in bf16, over all layers (one GPU, no tensor parallelism)? Answer in "
               "bytes, e.g. `\"123456 bytes\"`.",
        expected=lambda: _kv_token(),
        slips=(Slip("no GQA", lambda: _kv_token(num_kv_heads=64),
                    "you cached all 64 query heads (or the hidden size 8,192); grouped-query attention caches only "
                    "the 8 KV heads"),
               Slip("K only", lambda: _kv_token() / 2, "both the key and the value are cached: a factor 2")),
        hints=("Each token leaves a key vector and a value vector in every layer, for every KV head.",
               "bytes = 2 (K and V) x layers x kv_heads x head_dim x bytes per element.",
               "Use the 8 KV heads, not the 64 query heads; bf16 is 2 bytes."),
        worked=lambda: (f"2 x 80 x 8 x 128 x 2 B = **{_kv_token():,} bytes** per token "
                        f"(`memlib.serving.inference.kv_bytes_per_token`); one 8k chat is "
                        f"{b(kv_cache_bytes(get_model(_M), 1, _CTX))}. With 64 KV heads it would be "
                        f"{_kv_token(num_kv_heads=64):,} bytes: GQA makes the cache 8x smaller."),
    ),
    SpotError(
        id="04.2", title="\"Just under 8GB\" for 3,000 tokens", difficulty="interview", minutes=6,
        formula="KV cache of one sequence = KV bytes per token x tokens, GQA (memlib.serving.inference.kv_cache_bytes)",
        prompt="A comment on the vLLM issue tracker sizes Llama-3-70B's KV cache to explain why four H100s serve few "
               "sequences. Find where it goes wrong and give the right KV cache of **one** 3,000-token sequence "
               "in bf16 (the whole model's cache, no tensor parallelism).",
        quote="IIRC, KV cache size for 3000 token long sequence is just under 8GB (8192 dim * 80 layers * 2 kv *2 "
              "fp16 * 3000 len). That means that 4xH100 can fit only ~30 at once (accounting 70GB for the model + "
              "some overhead).",
        source="vLLM issue #8089, \"[Performance]: Llama 3 70B; vLLM does not scale beyond TP=4\", comment of "
               "2024-09-03",
        figures=(Figure("8192 dim", "error", "8,192 is the hidden size, 64 query heads x 128; Llama-3-70B caches "
                                             "8 KV heads x 128 per layer", group="heads"),
                 Figure("8GB", "error", "the product of the wrong width: the cache is 8x smaller", group="heads"),
                 Figure("80 layers", "right", "Llama-3-70B has 80 decoder layers"),
                 Figure("3000", "right", "the sequence length the comment assumes"),
                 Figure("~30", "inherits", "the count follows from the 8x too large cache: several times more fit"),
                 Figure("70GB", "right", "an fp8 checkpoint of a 70B is about 70 GB of weights")),
        expected=lambda: kv_cache_bytes(get_model(_M), 1, 3000),
        slips=(Slip("no GQA", lambda: kv_cache_bytes(get_model(_M).with_(num_kv_heads=64), 1, 3000),
                    "that is the comment's own product: the hidden size stands in for the 8 KV heads"),
               Slip("K only", lambda: kv_cache_bytes(get_model(_M), 1, 3000) / 2, "both K and V are cached")),
        hints=("Check each factor of the product against Llama-3-70B's config.json.",
               "Per token: 2 x layers x num_key_value_heads x head_dim x 2 bytes; the hidden size is "
               "num_attention_heads x head_dim.",
               "Replace 8,192 by 8 x 128 and redo the product for 3,000 tokens."),
        worked=lambda: (f"**8192 dim** (and so **8GB**) counts all 64 query heads; Llama-3-70B caches 8 KV heads of "
                        f"128: 2 x 80 x 8 x 128 x 2 B x 3,000 = **{b(kv_cache_bytes(get_model(_M), 1, 3000))}**. "
                        f"So 4 x H100 with fp8 weights hold about {_chats(H100, 4, 'fp8-block', context=3000)} such "
                        f"sequences (`memlib.max_batch`), not ~30."),
    ),
    Numeric(
        id="04.3", title="int4 Llama-2-70B per A100", difficulty="interview", minutes=6,
        formula="quantized weights per GPU: packed int4 + scales + zeros, 16-bit embedding and head, / tp "
                "(memlib.estimate_inference(weights='int4-awq', tp=))",
        prompt="Llama-2-70B has the projections of Llama-3-70B (80 layers, hidden 8,192, MLP 28,672, 8 KV heads of "
               "128) but a vocabulary of 32,000 instead of 128,256. Quantized with AWQ (int4, group size 128: each "
               "projection stores 4-bit weights, a 16-bit scale and a 4-bit zero point per group of 128 inputs; the "
               "embedding and the output head stay bf16) it is served with tensor parallelism over 2 A100s. How "
               "many bytes of weights does **each** GPU hold?",
        expected=lambda: estimate_inference(_M2, weights="int4-awq", tp=2).weight_bytes, unit="GB", count=2,
        per="one",
        slips=(Slip("0.5 byte per parameter", lambda: get_model(_M2).num_params * 0.5 / 2,
                    "half a byte for every parameter leaves out the 16-bit embedding and head and the group scales"),),
        close_advice="count the embedding and the output head (32,000 x 8,192 each) in 16-bit, and "
                     "4 + 16/128 + 4/128 = 4.156 bits per projection weight",
        hints=("Quantization shrinks the projections only; the notebook's int4 Llama-3-70B differs only in its "
               "16-bit embedding and head.",
               "per GPU = [projections x (4 + 16/128 + 4/128) bits + (embedding + head) x 16 bits] / 2.",
               "Split the parameters into projections and embedding + head first (memlib.get_model(...).tensors())."),
        worked=lambda: (lambda e, e1: (
            f"Projections at 4 + 16/128 + 4/128 = {4 + 16 / 128 + 4 / 128:.3f} bits plus the 16-bit embedding and head: {b(e1.weight_bytes)} for the model, "
            f"**{b(e.weight_bytes)} per GPU** at tp 2 (`estimate_inference('llama-2-70b', weights='int4-awq', "
            f"tp=2)`), not {b(get_model(_M2).num_params * 0.25)} (half a byte per parameter, halved). Llama-3-70B's "
            "4x larger vocabulary costs it about 3.2 GB more per GPU."))(
            estimate_inference(_M2, weights="int4-awq", tp=2), estimate_inference(_M2, weights="int4-awq")),
    ),
    Numeric(
        id="04.4", title="8k chats on 2 x A100 with fp8 weights", difficulty="interview", minutes=8,
        formula="concurrent chats = cache room per GPU / cache per chat per GPU (memlib.max_batch)",
        prompt="Llama-3-70B with fp8 weights (about 36 GB per GPU at tp 2) and a bf16 KV cache, tensor parallel over "
               "2 A100 80GB (torch sees 79.15 GiB each). Count 0.5 GiB per GPU for the CUDA context, 5% of the "
               "peak as allocator headroom, and vLLM's 2,048-token prefill chunk (about 0.25 GB). How many chats "
               "of 8,192 tokens fit at once? (memlib.max_batch is the reference; a whole number.)",
        expected=lambda: _chats(A100, 2, "fp8-block"), unit="count", tolerance=0.045,
        slips=(Slip("cache not split", lambda: _chats(A100, 2, "fp8-block") // 2,
                    "each GPU keeps only 4 of the 8 KV heads: a chat costs half its cache per GPU"),
               Slip("no GQA", lambda: _chats(A100, 2, "fp8-block") // 8,
                    "the cache holds the 8 KV heads, not the 64 query heads")),
        close_advice="take the headroom as 5% of the whole per-GPU peak and round down",
        hints=("The weights are fixed; what is left per GPU is cache room, and each chat takes a fixed slice of it.",
               "chats = (capacity - weights - context - prefill - headroom) / (KV bytes per token / 2 x 8,192).",
               "Per GPU a chat costs (your 04.1 figure) / 2 x 8,192 bytes; start from 79.15 GiB and subtract."),
        worked=lambda: (lambda e: (
            f"Per GPU: {gib(usable_bytes(get_gpu(A100))):.2f} GiB, weights {b(e.weight_bytes)}, cache "
            f"{b(e.kv_bytes_per_token * _CTX)} per chat: **{_chats(A100, 2, 'fp8-block')} chats** "
            f"(`memlib.max_batch(..., weights='fp8-block', tp=2, prefill_tokens=2048)`); bf16 weights leave "
            f"{_chats(A100, 2)}, an fp8 cache doubles it to {_chats(A100, 2, 'fp8-block', 'fp8')}."))(
            estimate_inference(_M, weights="fp8-block", tp=2)),
    ),
    Choice(
        id="04.5", title="Eight H100s: one group or replicas?", difficulty="interview", minutes=8,
        formula="chats per layout = replicas x max_batch(tp) (memlib.max_batch)",
        prompt="You serve Llama-3-70B in bf16 (weights and KV cache) on 8 H100 80GB, chats of 8,192 tokens. Which "
               "layout holds the most concurrent chats?",
        options=(Option("a", "one tensor-parallel group over all 8 GPUs (tp 8)",
                        "the weights are stored once: every GPU keeps 17.6 GB of weights and the rest is cache",
                        reason="1"),
                 Option("b", "two replicas, each tp 4",
                        lambda: f"each replica stores the full weights again: {_layout_chats('b')} chats in all",
                        misconception="more replicas serve more users, since each decodes on its own"),
                 Option("c", "four replicas, each tp 2",
                        lambda: f"four copies of 141 GB of weights leave little cache: {_layout_chats('c')} chats",
                        misconception="small groups avoid communication, so they scale best"),
                 Option("d", "eight replicas, one GPU each",
                        "141 GB of bf16 weights do not fit one 80 GB GPU: not a single chat",
                        misconception="data parallelism is always the simplest way to use more GPUs")),
        reasons=(Option("1", "the weights are stored once, so the most memory is left for the KV cache"),
                 Option("2", "independent replicas decode in parallel, so together they hold more chats",
                        "replicas add decode streams, not memory: each one spends 141 GB on its own weights"),
                 Option("3", "eight GPUs give each chat eight times the bandwidth, so more chats fit",
                        "bandwidth sets the speed of a chat, not how many caches fit in memory")),
        right=_best_layout,
        hints=("Memory for chats is what the weights leave; count the copies of the weights in each layout.",
               "chats = replicas x (per-GPU capacity - 141 GB / tp - overheads) / (2.7 GB / tp per chat).",
               "Work out the weights per GPU of each layout first: 141 GB divided by its tp."),
        worked=lambda: ("8 x H100, bf16, 8k chats (memlib.max_batch per group x replicas):\n\n" + md_table(
            ("layout", "replicas x tp", "chats"),
            [(f"({k})", f"{r} x tp {tp}", _layout_chats(k)) for k, (r, tp) in _LAYOUTS.items()])
            + f"\n\n**({_best_layout()})**: the weights are stored once. Throughput is another matter: tp 8's "
              "all-reduces cross eight GPUs, so benchmark it against two tp 4 replicas."),
    ),
    Numeric(
        id="04.6", title="What vLLM leaves for the cache: fp8 at 0.95", difficulty="interview", minutes=8,
        formula="vLLM KV budget = total x gpu_memory_utilization - weights - profiled peak - non-torch "
                "(memlib.serving.vllm_kv_cache_budget_bytes)",
        prompt="vLLM serves Llama-3-70B with fp8 block-quantized weights (33.84 GiB per GPU) and a bf16 KV cache, "
               "tensor parallel over 2 A100 80GB (torch sees 79.15 GiB each), started with "
               "`--gpu-memory-utilization 0.95`, as the notebook suggests for a tight fit. Its profile run "
               "peaks at about 1.19 GiB per GPU above the weights (the sampler's warm-up over 256 dummy sequences "
               "x the 128,256-token vocabulary; the 2,048-token forward needs only 0.26 GiB), and 0.5 GiB per GPU "
               "is held outside torch. How many GiB per GPU does vLLM give the KV cache?",
        expected=lambda: _budget(_W6, gpu_memory_utilization=_UTIL), unit="GiB", tolerance=0.01, count=2,
        per="one",
        slips=(Slip("the default 0.9", lambda: _budget(_W6),
                    "that is the default reservation; this server was started with 0.95"),
               Slip("the whole card", lambda: _budget(_W6, gpu_memory_utilization=1.0),
                    "gpu_memory_utilization caps vLLM at 95% of the card: 5% is left unused"),
               Slip("no profiled workspace",
                    lambda: _budget(_W6, gpu_memory_utilization=_UTIL) + _profile_and_context(_W6),
                    "vLLM subtracts the peak of its profiling run and the memory outside torch too (here "
                    "that is also 95% of what the weights leave, which would be a second slip: the 95% applies "
                    "to the whole card, and the weights count inside it)")),
        hints=("vLLM allows itself a fraction of the card; weights and workspace come out of that allowance first.",
               "KV = 0.95 x total - weights per GPU - profiled activations - non-torch memory.",
               "Everything is already in GiB: subtract from 0.95 x 79.15."),
        worked=lambda: (f"0.95 x {gib(usable_bytes(get_gpu(A100))):.2f} GiB - "
                        f"{gib(estimate_inference(_M, weights=_W6, tp=2).weight_bytes):.2f} GiB of weights - "
                        f"{gib(_profile_and_context(_W6)):.2f} GiB (the profile's peak, the sampler's warm-up, + outside torch) = "
                        f"**{gib(_budget(_W6, gpu_memory_utilization=_UTIL)):.2f} GiB** per GPU "
                        f"(`memlib.serving.vllm_kv_cache_budget_bytes(..., gpu_memory_utilization=0.95)`), against "
                        f"{gib(_budget(_W6)):.2f} GiB at the default 0.9: vLLM would log a maximum concurrency of "
                        f"{vllm_max_concurrency(_M, A100, _CTX, weights=_W6, tp=2, gpu_memory_utilization=_UTIL):.2f}x"
                        " for 8k requests instead of "
                        f"{vllm_max_concurrency(_M, A100, _CTX, weights=_W6, tp=2):.2f}x: the extra 5% of the card "
                        "is room for that many more 8k chats, at the price of less slack for anything else."),
    ),
    Implement(
        id="04.7", title="PagedAttention's last block", difficulty="stretch", minutes=10,
        formula="PagedAttention waste = (ceil(n / B) x B - n) x KV bytes per token "
                "(memlib.serving.paged_kv_waste_bytes)",
        prompt="vLLM stores each sequence's KV cache in blocks of `block_size` tokens, allocated only when the previous "
               "block is full (Kwon et al. 2023, Sec. 4.3). Write `paged_kv_waste(tokens, kv_bytes_per_token, "
               "block_size)` returning the bytes of the sequence's blocks that hold no token. Tested against "
               "`memlib.serving.paged_kv_waste_bytes` for Llama-3-70B, Llama-3-8B and Mistral-7B, and on inputs "
               "drawn at random each time you check.",
        function_name="paged_kv_waste", reference_name="memlib.serving.paged_kv_waste_bytes",
        cases=lambda: [_waste_case(_M, 8001), _waste_case(_M, 8190), _waste_case(_M, 100),
                       _waste_case(_M, 8001, 32, "fp8"), _waste_case("llama-3-8b", 1), _waste_case("mistral-7b", 4097)],
        held_out=_random_waste_cases,
        reference=_waste,
        slips=(Slip("a new block at every multiple", lambda k, w: ((k["tokens"] // k["block_size"] + 1)
                                                                   * k["block_size"] - k["tokens"])
                    * k["kv_bytes_per_token"],
                    "a sequence that exactly fills its last block wastes nothing: use ceil(n / B), not n // B + 1"),
               Slip("filled slots", lambda k, w: (k["tokens"] % k["block_size"]) * k["kv_bytes_per_token"],
                    "n % B is the number of filled slots of the last block; the waste is the empty ones")),
        hints=("Only the last block of a sequence can be partly empty.",
               "empty slots = ceil(tokens / block_size) x block_size - tokens; x bytes per token.",
               "Compute the number of blocks with -(-tokens // block_size) first."),
        worked=lambda: ("```python\ndef paged_kv_waste(tokens, kv_bytes_per_token, block_size):\n"
                        "    blocks = -(-tokens // block_size)  # ceil\n"
                        "    return (blocks * block_size - tokens) * kv_bytes_per_token\n```\n\n"
                        f"Llama-3-70B, 8,001 tokens: {paged_kv_waste_bytes(8001, _kv_token()):,} bytes (15 empty "
                        f"slots), {paged_kv_waste_bytes(8001, _kv_token()) / kv_cache_bytes(get_model(_M), 1, 8001):.2%}"
                        " of the chat's cache."),
    ),
    Numeric(
        id="04.8", title="The decode speed limit at 185 chats", difficulty="stretch", minutes=10,
        formula="decode step >= (weight bytes + KV bytes read) per GPU / HBM bandwidth (memlib.serving.decode_bound)",
        prompt="Llama-3-70B in bf16, tensor parallel over 8 H100 (3.35 TB/s of HBM bandwidth each), decodes 185 chats "
               "that each hold 8,192 tokens of bf16 KV cache. Every decode step reads each GPU's weight shard and "
               "its share of every chat's cache once. What is the shortest possible decode step (the memory-bound "
               "roofline, ignoring communication)? Answer in seconds or ms, e.g. `\"12.5 ms\"`.",
        expected=lambda: _decode185().step_s, unit="s", tolerance=0.03,
        slips=(Slip("no cache reads", lambda: _decode185().weight_bytes / _decode185().bandwidth_bytes_per_s,
                    "every step also reads every chat's whole KV cache; at this batch it is most of the bytes"),
               Slip("cache not split", lambda: (_decode185().weight_bytes + 8 * _decode185().kv_bytes)
                    / _decode185().bandwidth_bytes_per_s,
                    "tensor parallelism splits the KV heads: each GPU reads 1/8 of every chat's cache"),
               Slip("compute-bound", lambda: _decode185().compute_s,
                    "that is the arithmetic at the tensor-core peak; decode is memory-bound, the reads take longer")),
        hints=("A decode step must bring every byte it uses from HBM to the cores once.",
               "step >= (weights / 8 + 185 x 8,192 x KV bytes per token / 8) / 3.35e12 B/s.",
               "Work out the bytes one GPU reads per step first: its weight shard plus its share of the caches."),
        worked=lambda: (lambda d: (
            f"Per GPU and step: {b(d.weight_bytes)} of weights + {b(d.kv_bytes)} of cache = {b(d.bytes_read)}; / "
            f"3.35 TB/s = **{d.step_s * 1e3:.1f} ms** (`memlib.serving.decode_bound`), so at most "
            f"{d.tokens_per_s_per_sequence:.0f} tokens/s per chat and {d.tokens_per_s:,.0f} in all. The arithmetic "
            f"would take {d.compute_s * 1e3:.1f} ms: memory-bound."))(_decode185()),
    ),
    MultiChoice(
        id="04.9", title="Serving claims, checked", difficulty="interview", minutes=8,
        formula="serving facts: chats, vLLM's reservation, block waste, fp8 hardware, decode speed "
                "(memlib.max_batch, memlib.serving)",
        prompt="Llama-3-70B, 8,192-token chats, vLLM defaults (memlib.max_batch, memlib.serving and the GPU catalog "
               "decide). Which of these claims are true?",
        options=(Option("a", "On 8 H100 as one tp 8 group with bf16 weights, an fp8 KV cache doubles the chats that "
                             "fit (within 5%).", "half the bytes per cached token, and the cache is nearly all of the "
                                                 "free memory"),
                 Option("b", "vLLM's default gpu_memory_utilization=0.9 reserves 90% of each GPU for the KV cache.",
                        "0.9 caps weights, workspace and cache together; with bf16 weights on 2 A100s the cache gets "
                        "a small remainder",
                        misconception="gpu_memory_utilization is the KV cache's share of the GPU"),
                 Option("c", "With 16-token blocks, PagedAttention wastes under 1% of an 8k chat's cache.",
                        "at most 15 empty slots of one block: about 0.2%"),
                 Option("d", "Two A100 80GB cannot hold a single 8k chat with bf16 weights.",
                        "141 GB of weights over 170 GB leave room for a few chats",
                        misconception="140 GB of weights on 160 GB leaves nothing for the cache"),
                 Option("e", "An A100 runs fp8 checkpoints on fp8 tensor cores.",
                        "Ampere has no fp8 tensor cores: vLLM runs fp8 weights as W8A16 through Marlin kernels",
                        misconception="a GPU that loads fp8 weights computes in fp8"),
                 Option("f", "At the largest batch that fits on 2 A100s, fp8 weights make each chat decode about "
                             "twice as fast as bf16 weights.",
                        "a full GPU reads about all its memory each step either way: fp8 buys more chats, not faster "
                        "ones",
                        misconception="half the bytes per weight means twice the decode speed, whatever the batch")),
        right=lambda: frozenset(k for k, claim in _CLAIMS.items() if claim()),
        hints=("Decide each claim with a number: chats, the KV budget, the waste, the GPU's fp8 support, the step time.",
               "Cache per chat = 2.7 GB (bf16) / tp; vLLM's KV = 0.9 x total - weights - workspace; a full GPU's "
               "decode step reads about all its memory.",
               "Start with (d): 170 GB - 141 GB of weights, divided by 2.7 GB per chat."),
        worked=lambda: ("Each claim, decided by memlib:\n\n" + md_table(
            ("claim", "true?", "figure"),
            [("(a)", _CLAIMS["a"](), f"{_chats(H100, 8)} -> {_chats(H100, 8, kv_cache='fp8')} chats"),
             ("(b)", _CLAIMS["b"](), f"KV budget {gib(_budget()):.1f} GiB of {gib(usable_bytes(get_gpu(A100))):.1f}"),
             ("(c)", _CLAIMS["c"](), f"{paged_kv_waste_bytes(_CTX - 15, _kv_token()) / 1e6:.1f} MB of "
                                    f"{b(kv_cache_bytes(get_model(_M), 1, _CTX))}"),
             ("(d)", _CLAIMS["d"](), f"{_chats(A100, 2)} chats fit"),
             ("(e)", _CLAIMS["e"](), f"A100 fp8 tensor peak: {get_gpu(A100).fp8_tflops}"),
             ("(f)", _CLAIMS["f"](), "per-chat decode limit at full batch, fp8 / bf16: "
                                     f"{decode_bound(_M, A100, _chats(A100, 2, 'fp8-block'), _CTX, weights='fp8-block', tp=2).tokens_per_s_per_sequence:.0f}"
                                     f" / {decode_bound(_M, A100, _chats(A100, 2), _CTX, weights='bf16', tp=2).tokens_per_s_per_sequence:.0f}"
                                     " tokens/s")])),
    ),
    SelfAssessed(
        id="04.10", title="300 chats at 30 tokens/s on 8 x H100", difficulty="stretch", minutes=15,
        formula="a serving plan: formats, layout, reservation, decode roofline (memlib.max_batch, memlib.serving)",
        prompt="Product wants Llama-3-70B on one 8 x H100 server for 300 concurrent chats of up to 8,192 tokens, each "
               "streaming at least 30 tokens/s. Propose what you would run (formats, layout, vLLM settings), show "
               "the memory and speed arithmetic that supports it, and say what you would measure before promising "
               "it. Then mark your answer against the rubric.",
        rubric=("Sizes one chat's KV cache with GQA (about 2.7 GB in bf16, half in fp8) and the weights (about 141 GB "
                "in bf16, about 73 GB in fp8)",
                "Shows bf16 weights and cache fall short of 300 chats and picks an fp8 KV cache (and fp8 weights, "
                "native W8A8 on H100)",
                "Compares one tp 8 group with two tp 4 replicas with numbers (chats, and the all-reduce cost of tp 8)",
                "Checks the decode roofline at 300 chats (bytes each GPU reads per step / its bandwidth) and "
                "discounts it for real bandwidth utilisation before promising 30 tokens/s",
                "Accounts for vLLM's reservation (gpu_memory_utilization, the startup log's maximum concurrency)",
                "Plans a load test (chunked prefill, prefix caching, real prompt lengths) before promising"),
        hints=("Work out memory first (can 300 caches fit?), then speed (how fast is a step when they do?).",
               "chats = (8 x 85 GB - weights - overheads) / cache per chat; per-chat speed <= bandwidth / bytes read "
               "per GPU per step.",
               "Compute the chats for bf16 and for fp8 weights + fp8 cache on tp 8 with memlib.max_batch first."),
        worked=lambda: (lambda fp8, full: (
            f"bf16 weights and cache hold {_chats(H100, 8)} chats on tp 8, so 300 needs fp8: fp8 weights (native W8A8 "
            f"on H100) and an fp8 KV cache hold {fp8} on tp 8 and {2 * _chats(H100, 4, 'fp8-block', 'fp8')} on two "
            f"tp 4 replicas (`memlib.max_batch`). vLLM's default 0.9 reservation admits "
            f"{vllm_max_concurrency(_M, H100, _CTX, weights='fp8-block', kv_cache='fp8', tp=8):.0f} on tp 8. At 300 "
            f"chats the decode roofline gives each chat at most {full.tokens_per_s_per_sequence:.0f} tokens/s "
            f"(`memlib.serving.decode_bound`); at 60-80% bandwidth utilisation that is about "
            f"{0.6 * full.tokens_per_s_per_sequence:.0f}-{0.8 * full.tokens_per_s_per_sequence:.0f}, and chats are "
            "rarely all at 8k, so 30 tokens/s is plausible but must be load-tested with real prompts (chunked "
            "prefill on, prefix caching for shared system prompts), against two tp 4 replicas."))(
            _chats(H100, 8, "fp8-block", "fp8"),
            decode_bound(_M, H100, 300, _CTX, weights="fp8-block", kv_cache="fp8", tp=8)),
    ),
    Numeric(
        id="04.11", title="Speculative decoding: the expected speed-up", difficulty="interview", minutes=8,
        formula="speed-up = (1 - a^(g+1)) / (1 - a) / (g c + 1) (Leviathan et al. 2023, eq. 1 and Theorem 3.8; "
                "memlib.serving.speculative_speedup)",
        prompt="A Llama-3-70B server adds a small draft model for speculative decoding. Each step the draft "
               "proposes g = 5 tokens, each accepted with probability a = 0.7 independently, and the target "
               "verifies them in one forward, keeping the accepted prefix plus one token of its own. One draft "
               "forward costs a tenth of a target forward (both are memory-bound: about the ratio of the bytes "
               "they read). What is the expected speed-up of decoding? Answer as a factor, e.g. `\"1.5x\"`.",
        expected=lambda: _speedup(), unit="x", tolerance=0.02,
        slips=(Slip("draft for free", lambda: speculative_expected_tokens(_ALPHA, _GAMMA),
                    "those are the tokens per target step; the draft's five forwards cost half a target forward "
                    "more, so divide by g x c + 1"),
               Slip("all accepted", lambda: (_GAMMA + 1) / (_GAMMA * _COST + 1),
                    "each draft token is accepted with probability 0.7, and a rejection ends the step"),
               Slip("no token of the target's own", lambda: (speculative_expected_tokens(_ALPHA, _GAMMA) - 1)
                    / (_GAMMA * _COST + 1),
                    "the target always adds one token (a correction or the next one): the sum starts at 1"),
               Slip("sum stops at a^(g-1)", lambda: (1 - _ALPHA ** _GAMMA) / (1 - _ALPHA) / (_GAMMA * _COST + 1),
                    "g proposals give g + 1 terms, 1 + a + ... + a^g")),
        hints=("A step yields 1 + (accepted drafts) tokens and costs one target forward plus g draft forwards.",
               "expected tokens per step = 1 + a + a^2 + ... + a^g = (1 - a^(g+1)) / (1 - a); cost = g c + 1.",
               "Compute 0.7^6 first."),
        worked=lambda: (f"Expected tokens per target forward: (1 - 0.7^6) / (1 - 0.7) = "
                        f"{speculative_expected_tokens(_ALPHA, _GAMMA):.3f} "
                        f"(`memlib.serving.speculative_expected_tokens`); each step costs 5 x 0.1 + 1 = 1.5 target "
                        f"forwards, so the speed-up is **{_speedup():.2f}x** (`memlib.serving.speculative_speedup`). "
                        "The memory: the draft's weights and its own KV cache come off the chats the server holds, "
                        "and at a full batch decode nears compute-bound, so the gain shrinks."),
    ),
    Numeric(
        id="04.12", title="An MHA checkpoint converted to GQA", difficulty="interview", minutes=6,
        formula="KV bytes = 2 x layers x kv_heads x head_dim x bytes x tokens, kv_heads = heads / group size "
                "(Ainslie et al. 2023; memlib.serving.inference.kv_cache_bytes)",
        prompt="Llama-2-13B is a multi-head (MHA) model: 40 layers, 40 query heads and 40 key/value heads of "
               "dimension 128. Following Ainslie et al. (2023) you mean-pool its key and value heads in groups of "
               "8 query heads and uptrain it for a few percent of its pre-training. How many bytes of bf16 KV cache "
               "does one 4,000-token sequence take after the conversion (one GPU, no tensor parallelism)?",
        expected=lambda: _gqa_cache(_GROUPS), unit="GB",
        slips=(Slip("not converted", lambda: _gqa_cache(40), "that is the MHA cache: every query head keeps its K, V"),
               Slip("group size as KV heads", lambda: _gqa_cache(8),
                    "groups of 8 query heads leave 40 / 8 = 5 KV heads, not 8"),
               Slip("MQA", lambda: _gqa_cache(1), "one KV head for all is MQA; GQA keeps one per group"),
               Slip("K only", lambda: _gqa_cache(_GROUPS) / 2, "both the key and the value are cached")),
        hints=("Mean-pooling keeps one key head and one value head per group of query heads.",
               "KV heads = 40 / 8; bytes = 2 x 40 layers x KV heads x 128 x 2 bytes x 4,000 tokens.",
               "Find the number of KV heads after the conversion first."),
        worked=lambda: (f"40 / 8 = 5 KV heads: 2 x 40 x 5 x 128 x 2 B = {_gqa_cache(_GROUPS) // _TOKENS12:,} bytes "
                        f"per token, **{b(_gqa_cache(_GROUPS))}** for 4,000 tokens "
                        f"(`memlib.serving.inference.kv_cache_bytes` on the model with 5 KV heads), against "
                        f"{b(_gqa_cache(40))} before: 8x smaller. The weights shrink only by the K and V projections "
                        "pooled away."),
    ),
    Numeric(
        id="04.13", title="Little's law: the KV cache a request rate needs", difficulty="interview", minutes=8,
        formula="requests in flight L = arrival rate x time in the system (Little 1961; memlib.serving.techniques); "
                "KV bytes = L x tokens x bytes per token (memlib.serving.inference.kv_bytes_per_token)",
        prompt="A chat service on Llama-3-8B (bf16 KV cache) receives **8 requests per second**. Each request "
               "waits 0.5 s for its first token (TTFT), then streams **400 tokens at 25 ms each** (TPOT), and holds "
               "**2,048 tokens** of KV cache on average while it is served. How many GB (10⁹ bytes) of KV cache "
               "must the servers hold for the requests in flight?",
        expected=lambda: _little_requests() * 2048 * kv_bytes_per_token(get_model("llama-3-8b")), unit="GB", tolerance=0.02,
        slips=(Slip("TTFT left out", lambda: 8 * 400 * 0.025 * 2048 * kv_bytes_per_token(get_model("llama-3-8b")),
                    "a request occupies its KV cache from the prompt on: count the 0.5 s to the first token too"),
               Slip("one request", lambda: 2048 * kv_bytes_per_token(get_model("llama-3-8b")),
                    "that is one request's cache; Little's law says how many are in flight at once")),
        hints=("In a steady state, requests in flight = requests per second x seconds each one stays.",
               "L = 8 x (0.5 + 400 x 0.025); KV bytes = L x 2,048 x bytes per token.",
               "Bytes per token: 2 x 32 layers x 8 KV heads x 128 x 2 bytes (memlib.kv_bytes_per_token)."),
        worked=lambda: (f"Each request stays 0.5 + 400 x 0.025 = 10.5 s, so L = 8 x 10.5 = "
                        f"{_little_requests():.0f} requests in flight (`memlib.serving.techniques."
                        f"littles_law_concurrency`). Each holds 2,048 x {kv_bytes_per_token(get_model('llama-3-8b')):,} B: "
                        f"**{b(_little_requests() * 2048 * kv_bytes_per_token(get_model('llama-3-8b')))}** of KV cache, on top "
                        "of the weights. A slower TPOT keeps every request longer and grows the cache in proportion."),
    ),
    Choice(
        id="04.14", title="Why continuous batching raises throughput", difficulty="interview", minutes=6,
        formula="decode is memory-bound: a step reads the weights once for the whole batch (memlib.serving.decode_bound)",
        prompt="A server batches 32 requests whose answers run from 10 to 1,000 tokens. Static batching starts the "
               "next batch when the longest answer ends; continuous (iteration-level) batching, as in Orca and vLLM, "
               "re-forms the batch at every decode step. Why does the second serve far more tokens per second?",
        options=(Option("a", "each decode step runs faster with continuous batching",
                        "a step with the same batch costs the same; what changes is how full the batch stays",
                        misconception="the scheduler speeds up the kernels"),
                 Option("b", "a finished request leaves at the next step and a waiting one takes its slot and its KV "
                             "blocks, so the batch stays full instead of idling until the longest answer ends",
                        "the step reads the weights once for every sequence in the batch, so a full batch makes "
                        "more tokens for nearly the same time", "1"),
                 Option("c", "requests share one KV cache, so more fit in memory",
                        "each sequence keeps its own K and V (prefix caching shares only identical prefixes)",
                        misconception="batching merges the caches"),
                 Option("d", "it skips the prefill of the waiting requests",
                        "every request still needs its prefill; chunked prefill only interleaves it with decode",
                        misconception="continuous batching removes prefill")),
        reasons=(Option("1", "decode is memory-bound: its time is about the weights read once per step, shared by "
                             "every sequence in the batch"),
                 Option("2", "the GPU runs the sequences one after the other")),
        right=lambda: "b",
        hints=("What does a decode step read from memory, and how much of it is per sequence?",
               "At small batch the step time is weights / bandwidth, almost independent of the batch size.",
               "With static batching, how many of the 32 slots are busy while the 1,000-token answer finishes?"),
        worked=lambda: (lambda d1, d32: (
            f"**(b), because 1.** On an H100 a Llama-3-8B decode step reads the weights once: "
            f"{d1.step_s * 1e3:.1f} ms at batch 1 and {d32.step_s * 1e3:.1f} ms at batch 32 "
            f"(`memlib.serving.decode_bound`), so 32 busy slots make about {32 * d1.step_s / d32.step_s:.0f}x the "
            "tokens of one. Static batching lets slots idle until the longest answer ends; continuous batching "
            "refills them at the next step (and frees finished sequences' KV blocks), keeping the batch full."))(
            decode_bound("llama-3-8b", "h100-80gb", batch=1, context_len=2048),
            decode_bound("llama-3-8b", "h100-80gb", batch=32, context_len=2048)),
    ),
    Choice(
        id="04.15", title="What caps the request rate: the cache or the FLOPs?", difficulty="interview", minutes=10,
        formula="rate <= min(batch / (TTFT + reply x TPOT at that batch), GPUs x peak x MFU / FLOPs per request); "
                "FLOPs per request ~ 2N x tokens + causal attention (memlib.serving.request_rate_bound)",
        prompt="Llama-3.1-8B in bf16 on one H100 SXM (989.4 TFLOP/s dense bf16, 3.35 TB/s). Every request has "
               "3,000 prompt and 1,000 reply tokens and waits 0.5 s for its first token. The KV cache holds 128 such "
               "requests at full length. Take the decode step at its roofline (weights + every cache read once) "
               "and the FLOPs at 40% MFU. Which bound caps the request rate the server sustains?",
        options=(Option("a", "the KV cache: 128 requests, each staying TTFT + 1,000 decode steps at a full batch",
                        lambda: (lambda r: f"the cache allows {r.memory_rate:.2f} requests/s, compute "
                                           f"{r.compute_rate:.2f}: the smaller binds")(_rate15()), "1"),
                 Option("b", "compute: 40% of the H100's peak over each request's FLOPs",
                        lambda: (lambda r: f"compute allows {r.compute_rate:.2f} requests/s, but 128 requests of "
                                           f"{r.latency_s:.1f} s each allow only {r.memory_rate:.2f}")(_rate15()),
                        misconception="long prompts always make serving compute-bound"),
                 Option("c", "the KV cache, at 128 requests / 0.5 s: a request holds its cache until its first token",
                        "a request keeps its cache until its last token: count the 1,000 decode steps too",
                        misconception="the cache is freed once the prompt is processed"),
                 Option("d", "neither: at 40% MFU both allow more than 10 requests/s",
                        "work both out: each is below 10 requests/s",
                        misconception="an 8B model on an H100 is never the bottleneck")),
        reasons=(Option("1", "the batch the cache holds, divided by each request's time in the server (Little's law), "
                             "is below what the FLOPs allow"),
                 Option("2", "decode is always memory-bound, so the cache always binds")),
        right=lambda: "a" if _rate15().bound == "memory" else "b",
        hints=("Two ceilings: requests in flight / seconds each stays, and FLOP/s available / FLOPs per request.",
               "TPOT = (weights read + 128 x one request's cache) / 3.35 TB/s; FLOPs ~ 2 x 8.03e9 x 4,000.",
               "KV per token: 2 x 32 layers x 8 KV heads x 128 x 2 bytes; weights read ~ 15 GB."),
        worked=lambda: (lambda r: (
            f"**({'a' if r.bound == 'memory' else 'b'}), because {'1' if r.bound == 'memory' else 'compute allows less'}.** Memory: at 128 requests a decode step reads the weights and every cache, TPOT = "
            f"{r.tpot_s * 1e3:.1f} ms, so each request stays 0.5 + 1,000 x TPOT = {r.latency_s:.1f} s and the cache "
            f"allows 128 / {r.latency_s:.1f} = **{r.memory_rate:.2f} requests/s** (Little's law). Compute: "
            f"{r.flops_per_request:.2e} FLOPs per request (2N per token plus causal attention) at 40% of "
            f"989.4 TFLOP/s allow {r.compute_rate:.2f} requests/s. The smaller binds: the "
            f"{r.bound} bound (`memlib.serving.request_rate_bound`). A longer reply or a bigger cache per request "
            "moves it further to memory; short replies on long prompts move it to compute."))(_rate15()),
    ),
    Numeric(
        id="04.16", title="Prefill/decode disaggregation: the cache on the wire", difficulty="interview", minutes=8,
        formula="KV bytes handed over = prompt tokens x 2 x layers x KV heads x head dim x bytes per element "
                "(memlib.serving.disaggregation.kv_transfer_bytes); time = bytes / (GPUs sending x link bytes/s) "
                "(kv_transfer_s)",
        prompt="A RAG service runs **Qwen2.5-7B** (28 layers, 28 query heads, **4 KV heads**, head dim 128) with "
               "prefill and decode on separate GPUs. A prefill instance of **4 GPUs** (tp 4, each holding a quarter "
               "of the KV heads) finishes a **32,768-token** prompt and sends its KV cache, stored in **fp8**, to the "
               "decode instance in another node: each GPU sends its share over its own **400 Gb/s InfiniBand** port. "
               "At the link's nominal rate, with no latency, how long does the handover take? (in ms or s)",
        expected=lambda: _pd_s(), unit="s", tolerance=0.03,
        slips=(Slip("bf16 cache", lambda: _pd_s("bf16"), "the cache is fp8: one byte per element, not two"),
               Slip("one port", lambda: _pd_s(tp=1), "four GPUs each send a quarter over their own port, in parallel"),
               Slip("bits as bytes", lambda: _pd_s() / 8, "400 Gb/s is gigabits: 50 GB/s, not 400 GB/s"),
               Slip("query heads for KV heads", lambda: _pd_s(num_kv_heads=28),
                    "the cache holds the 4 KV heads (GQA), not the 28 query heads")),
        hints=("Bytes per token: K and V, in every layer, for each KV head.",
               "2 x 28 x 4 x 128 x 1 byte per token; times 32,768 tokens.",
               "Four ports at 400 Gb/s = 4 x 50 GB/s in parallel."),
        worked=lambda: (f"Per token 2 x 28 layers x 4 KV heads x 128 x 1 byte = 28,672 B; the prompt: 32,768 x 28,672 "
                        f"= {32768 * 28672 / 1e9:.2f} GB. Four GPUs each send a quarter over their own 400 Gb/s "
                        f"(50 GB/s) port: **{_pd_s() * 1e3:.1f} ms** (`memlib.serving.disaggregation.kv_transfer_s`). "
                        f"From one 100 GbE NIC it would be {_pd_s(tp=1, link='100GbE') * 1e3:.0f} ms, which is why "
                        "disaggregated serving wants RDMA and a quantized cache, and sends layers as they finish."),
    ),
    Numeric(
        id="04.17", title="KIVI: a 4-bit cache with its scales", difficulty="stretch", minutes=10,
        formula="KIVI: bits/8 + (2-byte scale + 2-byte zero point) / group size bytes per element, K per channel over "
                "32 tokens, V per token over 32 channels; the newest 128 tokens in 16-bit "
                "(memlib.serving.kv_compression.kivi_cache_bytes; Liu et al. 2024)",
        prompt="You serve **Llama-3.1-8B** (32 layers, 8 KV heads, head dim 128) with a **KIVI 4-bit** KV cache: keys "
               "are quantized per channel in groups of 32 tokens, values per token in groups of 32 channels, and "
               "every group stores an **fp16 scale and an fp16 zero point**; the **128 most recent tokens** stay in "
               "bf16. How many GB (10⁹ bytes) does one **32,768-token** chat's cache take?",
        expected=lambda: _kivi(), unit="GB", tolerance=0.02,
        slips=(Slip("scales left out", _kivi_no_scales,
                    "each group of 32 elements also stores 4 bytes (scale and zero point): 0.125 B per element"),
               Slip("bf16 cache", lambda: kv_cache_bytes(get_model(_KIVI_MODEL), 1, _KIVI_CTX),
                    "that is the 16-bit cache KIVI replaces"),
               Slip("8-bit cache", lambda: kv_cache_bytes(get_model(_KIVI_MODEL), 1, _KIVI_CTX, "fp8"),
                    "4 bits is half a byte per element, not one byte")),
        hints=("Count elements per token first: K and V, layers, KV heads, head dim.",
               "Per element: 4 bits = 0.5 B, plus 4 B of scale and zero point shared by 32 elements.",
               "32,640 tokens quantized, 128 in bf16 at 2 B per element."),
        worked=lambda: (f"Per token 2 x 32 x 8 x 128 = 65,536 elements. Quantized: 0.5 B + 4 B / 32 = 0.625 B each, "
                        f"40,960 B per token; 32,640 such tokens. The newest 128 stay at 131,072 B each. Total "
                        f"**{b(_kivi())}** (`memlib.serving.kv_compression.kivi_cache_bytes`) against "
                        f"{b(kv_cache_bytes(get_model(_KIVI_MODEL), 1, _KIVI_CTX))} in bf16: "
                        f"{kv_cache_bytes(get_model(_KIVI_MODEL), 1, _KIVI_CTX) / _kivi():.1f}x more chats, not 4x, "
                        "because the scales cost a fifth of the codes. KIVI reports comparable accuracy at 2 and 4 bits; "
                        "the attention kernel must dequantize on the fly."),
    ),
    Choice(
        id="04.18", title="Disaggregated pools: which workload needs more prefill GPUs?", difficulty="interview",
        minutes=10,
        formula="prefill GPU-seconds per request = prompt FLOPs / (peak x MFU); decode GPU-seconds per request = "
                "tp x reply x TPOT / batch at the largest batch meeting the TPOT SLO (memlib.serving.disaggregation."
                "pd_ratio)",
        prompt="You serve **Llama-3-70B** in bf16 with prefill and decode on separate pools of 8-GPU H100 instances "
               "(tp 8 each). Prefill runs at 50% MFU; decode must keep each chat's time per output token under "
               "**20 ms**, so each decode instance batches as many chats as that allows. Workload **A** (RAG): "
               "8,000-token prompts, 200-token replies. Workload **B** (chat): 500-token prompts, 1,000-token "
               "replies. In steady state, which workload needs **more prefill GPUs than decode GPUs**?",
        options=(Option("a", "A only",
                        lambda: (f"A needs {_pd18('A').prefill_to_decode:.1f} prefill GPUs per decode GPU, B "
                                 f"{_pd18('B').prefill_to_decode:.1f}"), "1"),
                 Option("b", "B only",
                        "B's prompts are short: little prefill work per request, while its long replies hold decode "
                        "slots for many steps",
                        misconception="long replies make prefill the bottleneck"),
                 Option("c", "both: prefill is compute-bound, so it always needs the bigger pool",
                        "compute-bound says how a phase uses a GPU, not how many GPU-seconds a request needs there",
                        misconception="the compute-bound phase always needs more GPUs"),
                 Option("d", "neither: decode is memory-bound, so it always needs the bigger pool",
                        "a decode step is shared by the whole batch (hundreds of chats here), so each request costs "
                        "the decode pool little",
                        misconception="the memory-bound phase always needs more GPUs")),
        reasons=(Option("1", "prefill GPU-seconds grow with the prompt (about 2N FLOPs per token at a fixed MFU); decode "
                             "GPU-seconds grow with the reply, divided by the batch the SLO allows"),
                 Option("2", "the phase with the longer token count always needs more GPUs, whatever the batch")),
        right=_pd18_right,
        hints=("Count GPU-seconds per request in each pool; their ratio is the ratio of GPUs.",
               "Prefill: 2 x 70e9 x prompt tokens / (0.5 x 989 TFLOP/s). Decode: 8 GPUs x reply x 20 ms / batch.",
               "At a 20 ms step, how many chats does a decode instance hold? (weights + batch x cache read in 20 ms)"),
        worked=lambda: (lambda a, b: (
            f"**({_pd18_right()}), because 1.** Prefill per request: A {a.prefill_gpu_s:.2f} GPU-s, B "
            f"{b.prefill_gpu_s:.2f} GPU-s (`memlib.serving.disaggregation.pd_ratio`). Decode: the 20 ms SLO allows "
            f"{a.decode_batch} chats of A or {b.decode_batch} of B per instance, so a request costs 8 x reply x "
            f"TPOT / batch = {a.decode_gpu_s:.2f} GPU-s (A) or {b.decode_gpu_s:.2f} (B). Ratio prefill : decode: "
            f"A {a.prefill_to_decode:.1f} : 1, B {b.prefill_to_decode:.1f} : 1. Long prompts with short answers "
            "need a large prefill pool; chat with long answers needs the decode pool. This is why DistServe and "
            "Splitwise size the two pools per workload."))(_pd18("A"), _pd18("B")),
    ),
]
