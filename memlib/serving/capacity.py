"""Serving capacity beyond one estimate: paged KV blocks, vLLM's memory reservation, the decode speed limit.

memlib.serving.inference counts what one serving setup holds per GPU (weights, KV cache, prefill
workspace) and max_batch finds the largest batch `fits()` accepts. This module adds what a
server does on top of that arithmetic:

  paged_kv_*        PagedAttention stores the cache in fixed blocks of `block_size` tokens
                    (Kwon et al. 2023, SOSP, Sec. 4.2-4.3; vLLM's CacheConfig.block_size is 16 on
                    CUDA). A block is allocated only when the previous one is full, so a sequence
                    wastes at most one partly filled block: ceil(n / B) x B - n tokens.
  vllm_*            what vLLM reserves: it profiles one forward of max_num_batched_tokens tokens and one
                    sampler step over min(max_num_seqs, tokens) rows of logits, and gives the KV cache
                    what is left of gpu_memory_utilization x total memory
                    (vllm/v1/worker/gpu_worker.py Worker.determine_available_memory at 0012cf69:
                    available = total x gpu_memory_utilization - peak, the peak being the weights,
                    the profile run's activations and the memory allocated outside torch), then
                    logs "Maximum concurrency for L tokens per request": blocks x block_size / L
                    (vllm/v1/core/kv_cache_utils.py).
  decode_bound      the memory-bound roofline of one decode step: every step reads every weight and
                    the whole KV cache of the batch once, so it takes at least
                    (weight bytes + KV bytes) / HBM bandwidth per GPU (Databricks 2023, "LLM
                    Inference Performance Engineering": achieved bandwidth = (model size + KV cache
                    size) / TPOT; Pope et al. 2022, Sec. 2-3), and at least FLOPs / peak FLOP/s.
                    An upper bound on tokens/s: real kernels reach 50-80% of the bandwidth, and the
                    tensor-parallel all-reduces and kernel launches add time.
  request_rate_bound the requests per second a server sustains: the smaller of a memory bound (the chats
                    the cache holds over their latency at that batch, Little's law L = lambda W, Little
                    1961) and a compute bound (the GPUs' dense peak x an MFU you state over one request's
                    forward FLOPs, 2N per token plus causal attention; Kaplan et al. 2020, Sec. 2.1; PaLM
                    App. B). concurrency_at_rate: the chats in flight at a given rate, with Little's law's
                    latency taken at that load (TPOT from decode_bound at the batch in flight).
"""

from __future__ import annotations

from dataclasses import dataclass

from memlib._checks import choice, fraction, positive_float, positive_int, plain_args
from memlib.hardware.fit import DEFAULT_CUDA_CONTEXT_BYTES, usable_bytes
from memlib.hardware.gpus import get_gpu
from memlib.serving.engines import SGLANG_MEM_FRACTION_STATIC
from memlib.serving.inference import AUTO, InferenceEstimate, estimate_inference, kv_bytes_per_token, max_batch
from memlib.models import get_model
from memlib.models.flops import active_params, attention_flops_per_token, forward_flops_per_token
from memlib.serving.techniques import littles_law_arrival_rate, token_forwards
from memlib.units import GiB

VLLM_BLOCK_SIZE = 16  # vllm CacheConfig.block_size default on CUDA (Kwon et al. 2023, Sec. 7.2: 16 works well)
VLLM_GPU_MEMORY_UTILIZATION = 0.9  # vllm EngineArgs.gpu_memory_utilization default
USAGES = ("api", "offline")


# --- PagedAttention blocks -------------------------------------------------------------------
@plain_args
def paged_kv_blocks(tokens: int, block_size: int = VLLM_BLOCK_SIZE) -> int:
    """Blocks a sequence of `tokens` tokens occupies: ceil(tokens / block_size) (Kwon et al. 2023, Sec. 4.2)."""
    tokens = positive_int("tokens", tokens, allow_zero=True)
    block_size = positive_int("block_size", block_size)
    return -(-tokens // block_size)


@plain_args
def paged_kv_waste_bytes(tokens: int, kv_bytes_per_token: int, block_size: int = VLLM_BLOCK_SIZE) -> int:
    """Bytes of the last, partly filled block that hold no token: (ceil(n/B) x B - n) x bytes per token.

    At most (B - 1) tokens' worth per sequence: "vLLM limits all the memory wastes for a request
    within one block" (Kwon et al. 2023, Sec. 4.3)."""
    per_token = positive_int("kv_bytes_per_token", kv_bytes_per_token)
    return (paged_kv_blocks(tokens, block_size) * block_size - tokens) * per_token


# --- what vLLM reserves ------------------------------------------------------------------------
def vllm_default_max_num_batched_tokens(gpu, usage: str = "api") -> int:
    """vLLM's default token budget of one scheduler step (the chunked-prefill chunk), by GPU.

    vllm/engine/arg_utils.py EngineArgs._set_default_args (v0.10-v0.11): GPUs with >= 70 GiB that
    are not A100s get 8192 (OpenAI API server) or 16384 (offline LLM class); every other GPU 2048
    or 8192 ("Setting large max_num_batched_tokens for A100 reduces throughput, see PR #17885")."""
    g = get_gpu(gpu)
    choice("usage", usage, USAGES)
    large = g.memory_bytes >= 70 * GiB and "a100" not in g.name
    if large:
        return 8192 if usage == "api" else 16384
    return 2048 if usage == "api" else 8192


def vllm_default_max_num_seqs(gpu, usage: str = "api") -> int:
    """vLLM's default max_num_seqs (sequences one scheduler step may hold), by GPU.

    vllm/engine/arg_utils.py EngineArgs._set_default_args (v0.10-v0.11), the same table as
    vllm_default_max_num_batched_tokens: 1024 on GPUs with >= 70 GiB that are not A100s, 256 on every
    other GPU (and in vLLM's V0 engine, whose SchedulerConfig default is 256)."""
    g = get_gpu(gpu)
    choice("usage", usage, USAGES)
    return 1024 if g.memory_bytes >= 70 * GiB and "a100" not in g.name else 256


# The sampler's warm-up at profile time, in bytes per logit (rows x vocabulary) at its largest moment.
# vLLM's profile run samples one token for each dummy sequence with top_k = vocab - 1 and top_p < 1
# (V0 worker/model_runner.py profile_run: SamplingParams(top_p=0.99, top_k=vocab_size - 1); V1
# gpu_model_runner.py _dummy_sampler_run: top_p 0.9, top_k vocab - 1), so top-k/top-p runs on every row:
#   "torch": the PyTorch top-k/top-p (V0 layers/sampler.py _apply_top_k_top_p; V1 sample/ops/
#            topk_topp_sampler.py apply_top_k_top_p, which V1 also warms when FlashInfer is on) sorts the
#            logits. During that sort are alive: the 16-bit logits the LM head returned (2), their fp32 copy
#            (4), the sorted values (4) and int64 indices (8), aten's reverse_indices (8, int64; SortStable.cu
#            segmented_sort_pairs, taken for >= 128 rows) and cub's DeviceSegmentedRadixSort::SortPairs
#            scratch, an alternate key (4) and value (8) buffer: 38 bytes. Everything after (masks, softmax,
#            cumsum, the scatter back: 32 bytes) is smaller.
#   "flashinfer": V1's forward_cuda when only FlashInfer's sampler runs (topk_topp_sampler.py flashinfer_sample:
#            flashinfer.sampling.top_k_top_p_sampling_from_logits): 16-bit logits (2), fp32 logits (4), and
#            FlashInfer's default filter_apply_order "top_k_first" (sampling.py: masked_logits =
#            top_k_mask_logits(logits, top_k); probs = torch.softmax(masked_logits)), an fp32 masked copy (4) and
#            fp32 probabilities (4); its rejection sampler keeps no per-logit scratch: 14 bytes.
VLLM_SAMPLER_BYTES_PER_LOGIT = {"torch": 38, "flashinfer": 14}
# Memory outside torch that vLLM's profile measures (memory_profiling: the growth of non-torch memory since
# the worker started, so not the CUDA context): single-GPU V0 logs print 0.01-0.12 GiB (the rows of
# validation/published_serving.jsonl); with tensor parallelism NCCL and the custom all-reduce buffers add
# more (0.20 GiB at tp 4, 0.74 GiB at tp 2 in the same rows), so memlib's generic 0.5 GiB stays for tp > 1.
VLLM_NON_TORCH_BYTES_TP1 = 100 * 2**20
# Above tp 1, the NCCL communicators and custom all-reduce buffers (0.20-0.74 GiB in those vLLM rows): 0.5 GiB
TP_COMMUNICATOR_BYTES = 512 * 2**20


def vllm_sampler_warmup_bytes(model, rows: int, sampler: str = "torch") -> int:
    """Bytes the sampler's warm-up holds at its peak: rows x vocabulary x VLLM_SAMPLER_BYTES_PER_LOGIT[sampler].

    rows: the dummy sequences, min(max_num_seqs, max_num_batched_tokens). Under tensor parallelism every
    rank gathers the full vocabulary before sampling, so the figure is per GPU at any tp."""
    m = get_model(model) if isinstance(model, str) else model
    rows = positive_int("rows", rows)
    choice("sampler", sampler, tuple(VLLM_SAMPLER_BYTES_PER_LOGIT))
    return rows * m.vocab_size * VLLM_SAMPLER_BYTES_PER_LOGIT[sampler]


@plain_args
def vllm_profile_peak_bytes(model, tokens: int, max_num_seqs: int = 256, weights: str = AUTO,
                            kv_cache: str = "bf16", tp: int = 1, sampler: str = "torch") -> int:
    """vLLM's "PyTorch activation peak memory": the profile run's largest moment above the weights.

    The larger of (a) the forward over `tokens` tokens (its activations and quantized-matmul workspace,
    memlib.estimate_inference(engine="vllm")) and (b) the sampler's warm-up over min(max_num_seqs, tokens)
    rows (vllm_sampler_warmup_bytes) while the forward's output hidden states, tokens x hidden x 2 bytes,
    are still held. (b) is replicated under tensor parallelism, (a) is split, so (b) decides the peak
    whenever max_num_seqs x vocabulary is large against the batch's MLP."""
    m = get_model(model) if isinstance(model, str) else model
    tokens = positive_int("max_num_batched_tokens", tokens)
    fwd = estimate_inference(m, 1, tokens, weights=weights, kv_cache=kv_cache, tp=tp, prefill_tokens=tokens,
                             engine="vllm")
    return _profile_peak(m, fwd.activation_bytes + fwd.dequant_workspace, tokens, max_num_seqs, sampler)


def _profile_peak(m, forward_bytes: int, tokens: int, max_num_seqs: int, sampler: str) -> int:
    """The larger of the profile forward's workspace and the sampler's warm-up over min(max_num_seqs, tokens) rows
    while the forward's output hidden states (tokens x hidden x 2 bytes) are held (vllm_profile_peak_bytes)."""
    rows = min(positive_int("max_num_seqs", max_num_seqs), tokens)
    return max(forward_bytes, vllm_sampler_warmup_bytes(m, rows, sampler) + tokens * m.hidden_size * 2)


def _vllm_available(total: int, util: float, peak: int, non_torch: int, cudagraph_bytes: int) -> int:
    """Worker.determine_available_memory (see the module docstring): total x utilization - peak - non-torch,
    less the CUDA graphs' estimate from v0.21.0."""
    return int(total * util) - peak - non_torch - positive_int("cudagraph_bytes", cudagraph_bytes, allow_zero=True)


@plain_args
def vllm_kv_cache_budget_bytes(model, gpu, weights: str = AUTO, kv_cache: str = "bf16", tp: int = 1,
                               max_num_batched_tokens: int | None = None,
                               gpu_memory_utilization: float = VLLM_GPU_MEMORY_UTILIZATION,
                               non_torch_bytes: int | list[int] | tuple[int, ...] | None = None,
                               total_bytes: int | None = None, max_num_seqs: int | None = None,
                               sampler: str = "torch", cudagraph_bytes: int = 0) -> int:
    """Bytes vLLM gives the KV cache on one GPU (negative: vLLM refuses to start, no room for a block).

    total x gpu_memory_utilization - (weights + the profile run's activation peak + non_torch_bytes), the
    formula of vLLM's Worker.determine_available_memory (see the module docstring). `total` is what torch
    reports as the card's memory (memlib.hardware.fit.usable_bytes, the same figure torch.cuda.mem_get_info
    returns). The activation peak is vllm_profile_peak_bytes: the forward over max_num_batched_tokens
    tokens or the sampler's warm-up over max_num_seqs rows of logits, whichever is larger.
    max_num_batched_tokens, max_num_seqs: default vllm_default_max_num_batched_tokens(gpu) and
    vllm_default_max_num_seqs(gpu). sampler: "torch" (V0; V1 without FlashInfer or warming both) or
    "flashinfer" (V1 versions that warm only FlashInfer's sampler). non_torch_bytes: memory outside torch
    (NCCL, cuBLAS, custom all-reduce); default VLLM_NON_TORCH_BYTES_TP1 (0.1 GiB) at tp 1 and memlib's
    0.5 GiB above. total_bytes: the card's total as the engine logs it ("total_gpu_memory (79.22GiB)":
    cudaMemGetInfo's total, which varies by driver and ECC setting; default the catalog's torch total).
    Under tensor parallelism every rank profiles its own memory and the engine keeps the smallest budget
    (vLLM: min over workers of determine_available_memory): this figure is one rank's, equal on all ranks
    for an even split; pass non_torch_bytes as a list, one entry per rank (rank 0 usually holds more: the
    driver process's CUDA context and NCCL buffers), and the budget is the smallest rank's.
    cudagraph_bytes: vLLM from v0.21.0 also subtracts its estimate of the CUDA graphs' memory, made before the KV
    cache is allocated (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS, on by default since v0.21.0; vllm-project/vllm
    PR #30515): give the figure its log prints ("Estimated CUDA graph memory: X GiB total"; also (U - U') x total
    from "--gpu-memory-utilization=U is equivalent to ... U' without CUDA graph memory profiling"). The default 0
    is earlier versions (and the variable set to 0), where the graphs are captured after the KV cache is allocated,
    from the 1 - utilization margin.
    """
    g = get_gpu(gpu)
    util = fraction("gpu_memory_utilization", gpu_memory_utilization)
    tp = positive_int("tp", tp)
    if non_torch_bytes is None:
        non_torch_bytes = VLLM_NON_TORCH_BYTES_TP1 if tp == 1 else TP_COMMUNICATOR_BYTES
    per_rank = list(non_torch_bytes) if isinstance(non_torch_bytes, (list, tuple)) else [non_torch_bytes]
    if not per_rank:
        raise ValueError("non_torch_bytes: give one figure, or one per tensor-parallel rank (not an empty list)")
    if len(per_rank) > 1 and len(per_rank) != tp:
        raise ValueError(f"non_torch_bytes has {len(per_rank)} per-rank figures for tp={tp}")
    non_torch = max(positive_int("non_torch_bytes", n, allow_zero=True) for n in per_rank)  # the smallest budget
    tokens = vllm_default_max_num_batched_tokens(g) if max_num_batched_tokens is None else \
        positive_int("max_num_batched_tokens", max_num_batched_tokens)
    seqs = vllm_default_max_num_seqs(g) if max_num_seqs is None else positive_int("max_num_seqs", max_num_seqs)
    weight_bytes = estimate_inference(model, 1, 1, weights=weights, kv_cache=kv_cache, tp=tp,
                                      engine="vllm").weight_bytes
    peak = weight_bytes + vllm_profile_peak_bytes(model, tokens, seqs, weights=weights, kv_cache=kv_cache, tp=tp,
                                                  sampler=sampler)
    total = usable_bytes(g) if total_bytes is None else positive_int("total_bytes", total_bytes)
    return _vllm_available(total, util, peak, non_torch, cudagraph_bytes)


@plain_args
def vllm_kv_budget_for_estimate(estimate, gpu, gpu_memory_utilization: float = VLLM_GPU_MEMORY_UTILIZATION,
                                max_num_seqs: int | None = None, sampler: str = "torch",
                                non_torch_bytes: int | None = None, cudagraph_bytes: int = 0) -> int:
    """Bytes vLLM gives the KV cache on one GPU of the layout `estimate` describes (any memlib.estimate_inference
    result: tensor, expert or data-parallel attention layouts, e.g. memlib.plan.plan_serving's plans).

    The same formula as vllm_kv_cache_budget_bytes, with the estimate's weights per GPU and its prefill forward
    (setup.forward_tokens tokens, the profile run's max_num_batched_tokens) in place of a tensor-parallel model:
    total x gpu_memory_utilization - (weights + the larger of the forward's workspace and the sampler's warm-up
    over min(max_num_seqs, tokens) rows) - non_torch_bytes. Under data-parallel attention every GPU is an engine
    of its own with its own profile run and scheduler, so the figure is per GPU. non_torch_bytes: default
    VLLM_NON_TORCH_BYTES_TP1 on one GPU with no expert parallelism, else memlib's 0.5 GiB for the communicators."""
    if not isinstance(estimate, InferenceEstimate):
        raise ValueError(f"estimate must be a memlib.estimate_inference result (an InferenceEstimate, e.g. a "
                         f"plan_serving plan's .estimate), got {type(estimate).__name__}")
    g = get_gpu(gpu)
    s = estimate.setup
    util = fraction("gpu_memory_utilization", gpu_memory_utilization)
    seqs = vllm_default_max_num_seqs(g) if max_num_seqs is None else positive_int("max_num_seqs", max_num_seqs)
    if non_torch_bytes is None:
        non_torch_bytes = VLLM_NON_TORCH_BYTES_TP1 if s.tp == 1 and s.ep == 1 else TP_COMMUNICATOR_BYTES
    non_torch = positive_int("non_torch_bytes", non_torch_bytes, allow_zero=True)
    peak = estimate.weight_bytes + _profile_peak(s.model, estimate.activation_bytes + estimate.dequant_workspace,
                                                 s.forward_tokens, seqs, sampler)
    return _vllm_available(usable_bytes(g), util, peak, non_torch, cudagraph_bytes)


@plain_args
def vllm_concurrency_for_estimate(estimate, gpu, block_size: int = VLLM_BLOCK_SIZE, **budget_kw) -> float:
    """vLLM's "Maximum concurrency" for the layout `estimate` describes, per GPU (per engine): the KV blocks
    vllm_kv_budget_for_estimate holds x block_size / the estimate's context_len. 0.0 when no block fits.
    Multiply by the data-parallel groups (GPUs / tp) for a server of several engines."""
    block_size = positive_int("block_size", block_size)
    budget = vllm_kv_budget_for_estimate(estimate, gpu, **budget_kw)
    if budget <= 0:
        return 0.0
    return budget // (block_size * estimate.kv_bytes_per_token) * block_size / estimate.setup.context_len


@plain_args
def vllm_max_concurrency(model, gpu, max_model_len: int, weights: str = AUTO, kv_cache: str = "bf16", tp: int = 1,
                         block_size: int = VLLM_BLOCK_SIZE, **budget_kw) -> float:
    """vLLM's startup log "Maximum concurrency for L tokens per request: X": the KV blocks the budget
    holds x block_size / max_model_len (vllm/v1/core/kv_cache_utils.py). 0.0 when no block fits.

    Blocks = budget // (block_size x KV bytes per token per GPU); `budget_kw` go to
    vllm_kv_cache_budget_bytes (max_num_batched_tokens, max_num_seqs, sampler, gpu_memory_utilization,
    non_torch_bytes, cudagraph_bytes).
    """
    m = get_model(model) if isinstance(model, str) else model
    max_model_len = positive_int("max_model_len", max_model_len)
    positive_int("block_size", block_size)
    budget = vllm_kv_cache_budget_bytes(m, gpu, weights=weights, kv_cache=kv_cache, tp=tp, **budget_kw)
    if budget <= 0:
        return 0.0
    blocks = budget // (block_size * kv_bytes_per_token(m, kv_cache, tp))
    return blocks * block_size / max_model_len


# --- the decode speed limit --------------------------------------------------------------------
@dataclass(frozen=True)
class DecodeBound:
    """One decode step of `batch` sequences at `context_len` tokens, on one GPU of a tp group."""

    batch: int
    context_len: int
    tp: int
    weight_bytes: int  # per GPU, read once per step (the embedding table is not read: only its looked-up rows)
    kv_bytes: int  # per GPU: the batch's whole cache, read once per step
    flops: float  # per GPU per step
    bandwidth_bytes_per_s: int  # the GPU's peak HBM bandwidth
    peak_flops: float  # the GPU's dense tensor peak for the compute dtype, FLOP/s

    @property
    def bytes_read(self) -> int:
        return self.weight_bytes + self.kv_bytes

    @property
    def memory_s(self) -> float:
        return self.bytes_read / self.bandwidth_bytes_per_s

    @property
    def compute_s(self) -> float:
        return self.flops / self.peak_flops

    @property
    def step_s(self) -> float:
        """The shortest possible decode step: the slower of memory and compute (the roofline)."""
        return max(self.memory_s, self.compute_s)

    @property
    def bound(self) -> str:
        return "memory" if self.memory_s >= self.compute_s else "compute"

    @property
    def tokens_per_s_per_sequence(self) -> float:
        """What one chat sees at best: one token per step."""
        return 1 / self.step_s

    @property
    def tokens_per_s(self) -> float:
        """The whole tp group's output at best: batch tokens per step (the GPUs of a tp group work on the
        same tokens)."""
        return self.batch / self.step_s


@plain_args
def decode_bound(model, gpu, batch: int = 1, context_len: int = 4096, weights: str = AUTO, kv_cache: str = "bf16",
                 tp: int = 1) -> DecodeBound:
    """The memory-bound roofline of one decode step on one GPU of `tp`: step >= bytes read / HBM bandwidth
    and >= FLOPs / peak (Pope et al. 2022, Sec. 2-3; Databricks 2023; see the module docstring).

    Bytes read = the GPU's weight shard (memlib.estimate_inference's weights, less the embedding
    table, of which a step reads only the batch's rows) + batch x context_len x KV bytes per token
    per GPU. FLOPs = batch x (2N + 4·L·H·Q·context_len) / tp (memlib.cost.timing.forward_flops_per_token:
    one new token attending to the context). Peak: the GPU's dense fp8 tensor peak for fp8 weights
    when it has one, else its 16-bit peak (weight-only int8/int4 kernels compute in 16-bit).
    """
    m = get_model(model) if isinstance(model, str) else model
    g = get_gpu(gpu)
    est = estimate_inference(m, batch, context_len, weights=weights, kv_cache=kv_cache, tp=tp)
    s = est.setup
    weight_bytes = est.weight_bytes - est.weight_parts["embedding"]
    if m.tie_word_embeddings:  # the head reads the (shared) embedding matrix in full
        weight_bytes += est.weight_parts["embedding"]
    flops = s.batch * forward_flops_per_token(m, s.context_len) / s.tp
    return DecodeBound(s.batch, s.context_len, s.tp, weight_bytes, est.kv_cache_bytes, flops,
                       g.memory_bandwidth_bytes_per_s, _tensor_peak_flops(g, s.weights))


def _tensor_peak_flops(g, weights: str) -> float:
    """The dense tensor peak (FLOP/s) a serving step computes at: fp8 for fp8 weights on a GPU with fp8 tensor
    cores, else 16-bit (weight-only int8/int4 kernels, and fp8 on an A100, compute in 16-bit)."""
    tflops = g.fp8_tflops if weights.startswith("fp8") and g.fp8_tflops else (g.bf16_tflops or g.fp16_tflops)
    if not tflops:
        raise ValueError(f"GPU {g.name!r} has no 16-bit tensor peak (fp16_tflops and bf16_tflops are None): the "
                         "roofline needs one; give fp16_tflops")
    return tflops * 1e12


@plain_args
def decode_tokens_per_s_upper_bound(model, gpu, batch: int = 1, context_len: int = 4096, weights: str = AUTO,
                                    kv_cache: str = "bf16", tp: int = 1) -> float:
    """Output tokens per second of the whole tp group, at best: batch / decode_bound(...).step_s."""
    return decode_bound(model, gpu, batch, context_len, weights, kv_cache, tp).tokens_per_s


# --- the request rate a server sustains ---------------------------------------------------------
@plain_args
def request_flops(model, prompt_tokens: int, reply_tokens: int) -> float:
    """Forward FLOPs to serve one request of `prompt_tokens` (prefill) and `reply_tokens` (decode).

    Each position the model runs (memlib.serving.token_forwards: T = prompt + reply - 1 with a KV cache) costs
    2N through the weights (Kaplan et al. 2020, Sec. 2.1; N = memlib.cost.timing.active_params) and 4·L·H·Q·i
    of attention at position i, which attends to the i positions up to it (the forward third of PaLM's
    12·L·H·Q·T, App. B, with the causal mask counted: prefill and decode alike see only their prefix):
    2N·T + 4·L·H·Q·T(T + 1)/2."""
    m = get_model(model) if isinstance(model, str) else model
    t = token_forwards(prompt_tokens, reply_tokens, kv_cache=True)
    return 2.0 * active_params(m) * t + attention_flops_per_token(m, 1) / 3 * t * (t + 1) / 2


@dataclass(frozen=True)
class RequestRateBound:
    """The requests per second a server sustains: the smaller of its memory bound and its compute bound.

    memory_rate: `batch` chats (what the KV cache and the scheduler allow, over all replicas) each staying
    latency_s = TTFT + reply x TPOT, TPOT the decode roofline at that full batch (Little's law: L / W).
    compute_rate: the GPUs' dense peak x mfu over one request's forward FLOPs (request_flops). Both are upper
    bounds: queueing, preemption and an SLO on TTFT or TPOT lower what a real server reaches."""

    prompt_tokens: int
    reply_tokens: int
    ttft_s: float  # assumed time to first token at the memory bound's full batch
    mfu: float  # the model-FLOPs utilisation the compute bound assumes
    gpus: int  # tp x replicas
    batch: int  # chats in flight at the memory bound, all replicas
    tpot_s: float  # decode step at that batch (memlib.serving.decode_bound)
    flops_per_request: float  # request_flops
    peak_flops: float  # all GPUs' dense tensor peak, FLOP/s

    @property
    def latency_s(self) -> float:
        """One request's time in the server at the memory bound's full batch: TTFT + reply x TPOT."""
        return self.ttft_s + self.reply_tokens * self.tpot_s

    @property
    def memory_rate(self) -> float:
        """Requests/s the cache allows: batch / latency (Little's law)."""
        return littles_law_arrival_rate(self.batch, self.latency_s)

    @property
    def compute_rate(self) -> float:
        """Requests/s the FLOPs allow: peak x mfu / FLOPs per request."""
        return self.peak_flops * self.mfu / self.flops_per_request

    @property
    def rate(self) -> float:
        return min(self.memory_rate, self.compute_rate)

    @property
    def bound(self) -> str:
        """Which bound binds: "memory" or "compute"."""
        return "memory" if self.memory_rate <= self.compute_rate else "compute"


@plain_args
def request_rate_bound(model, gpu, prompt_tokens: int, reply_tokens: int, ttft_s: float, mfu: float,
                       weights: str = AUTO, kv_cache: str = "bf16", tp: int = 1, replicas: int = 1,
                       batch: int | None = None, max_num_seqs: int | None = None) -> RequestRateBound:
    """The request rate `replicas` copies of a `tp`-GPU server sustain at best (RequestRateBound: the minimum of
    the memory and the compute bound, and which binds).

    Every chat is counted at its full length, prompt_tokens + reply_tokens. batch (per replica): default the
    largest batch memlib.max_batch fits at that length with vLLM's default prefill chunk, capped at the
    scheduler's max_num_seqs (default vllm_default_max_num_seqs(gpu)). ttft_s: the time to first token you
    assume (queueing + prefill). mfu: the fraction of the dense tensor peak (fp8 for fp8 weights on GPUs with
    fp8 tensor cores, else 16-bit) the FLOPs run at; mfu=1 gives the hardware ceiling."""
    m = get_model(model) if isinstance(model, str) else model
    g = get_gpu(gpu)
    prompt_tokens = positive_int("prompt_tokens", prompt_tokens)
    reply_tokens = positive_int("reply_tokens", reply_tokens)
    ttft_s = positive_float("ttft_s", ttft_s, unit=" s")
    mfu = fraction("mfu", mfu, what="a fraction of the dense tensor peak (model FLOPs utilisation)")
    tp, replicas = positive_int("tp", tp), positive_int("replicas", replicas)
    context = prompt_tokens + reply_tokens
    if batch is None:
        fit = max_batch(m, g, context, weights=weights, kv_cache=kv_cache, tp=tp,
                        prefill_tokens=vllm_default_max_num_batched_tokens(g))
        if fit.value == 0:
            raise ValueError(f"not one request of {context:,} tokens fits {g.name} at tp={tp}: {fit.reason}")
        seqs = vllm_default_max_num_seqs(g) if max_num_seqs is None else positive_int("max_num_seqs", max_num_seqs)
        batch = min(fit.value, seqs)
    else:
        batch = positive_int("batch", batch)
    step = decode_bound(m, g, batch, context, weights=weights, kv_cache=kv_cache, tp=tp)
    fmt = estimate_inference(m, 1, 1, weights=weights, kv_cache=kv_cache).setup.weights
    return RequestRateBound(prompt_tokens, reply_tokens, ttft_s, mfu, tp * replicas, batch * replicas, step.step_s,
                            request_flops(m, prompt_tokens, reply_tokens),
                            tp * replicas * _tensor_peak_flops(g, fmt))


@dataclass(frozen=True)
class LoadPoint:
    """A server at `qps` requests/s in steady state: the chats in flight, and the TPOT and latency at that batch."""

    qps: float
    in_flight: float  # L = qps x latency_s (Little's law), all replicas
    tpot_s: float
    latency_s: float  # TTFT + reply x TPOT at that batch


@plain_args
def concurrency_at_rate(model, gpu, qps: float, prompt_tokens: int, reply_tokens: int, ttft_s: float,
                        weights: str = AUTO, kv_cache: str = "bf16", tp: int = 1, replicas: int = 1) -> LoadPoint:
    """Chats in flight at `qps` requests/s, with Little's law's latency taken at that load.

    L = qps x (TTFT + reply x TPOT(L)), TPOT(L) the decode roofline at L chats of full length
    (decode_bound: max((weights + L x KV per chat) / bandwidth, L x FLOPs per chat / peak), both linear in
    L), split evenly over `replicas`. Each branch is a linear fixed point, L = qps x (T + R·a) / (1 - qps x R·b);
    the steady state is the larger of the two. A rate at which qps x R·b >= 1 has none: decode alone cannot
    keep up, the queue grows without bound (ValueError). Compare in_flight with the chats memory holds
    (request_rate_bound(...).batch) and the rate with its compute bound: this function checks neither."""
    m = get_model(model) if isinstance(model, str) else model
    g = get_gpu(gpu)
    qps = positive_float("qps", qps, unit=" requests/s")
    reply_tokens = positive_int("reply_tokens", reply_tokens)
    ttft_s = positive_float("ttft_s", ttft_s, unit=" s")
    replicas = positive_int("replicas", replicas)
    one = decode_bound(m, g, 1, positive_int("prompt_tokens", prompt_tokens) + reply_tokens, weights=weights,
                       kv_cache=kv_cache, tp=tp)
    lam, r = qps / replicas, reply_tokens   # per replica
    branches = ((one.weight_bytes / one.bandwidth_bytes_per_s, one.kv_bytes / one.bandwidth_bytes_per_s),  # memory
                (0.0, one.flops / one.peak_flops))                                                         # compute
    fixed = []
    for a, b in branches:
        if lam * r * b >= 1:
            raise ValueError(f"{qps:g} requests/s is beyond what decode alone sustains on {g.name} at tp={tp} x "
                             f"{replicas} (each chat adds {b * 1e6:.1f} us to every decode step of {r} steps): "
                             "the queue grows without bound")
        fixed.append(lam * (ttft_s + r * a) / (1 - lam * r * b))
    per_replica = max(fixed)
    tpot = max(a + b * per_replica for a, b in branches)
    return LoadPoint(qps, per_replica * replicas, tpot, ttft_s + r * tpot)


def sglang_max_total_tokens(model, gpu, tp: int = 1, weights: str = "auto", kv_cache: str = "bf16",
                            mem_fraction_static: float = SGLANG_MEM_FRACTION_STATIC,
                            non_torch_bytes: int | None = None, total_bytes: int | None = None) -> int:
    """SGLang's KV pool size in tokens ("KV Cache is allocated. #tokens: N").

    sglang model_runner.profile_max_num_token: rest = available after loading the weights -
    total x (1 - mem_fraction_static); tokens = rest // cell_size, cell_size = per-token K and V
    bytes of every layer on this GPU. `available` is the card's total as torch reports it
    (memlib.hardware.fit.usable_bytes) minus the weights minus non-torch memory. SGLang's reserve
    is taken from the free memory init_torch_distributed leaves, so that is the CUDA context
    (memlib.fits' 0.5 GiB) and, above tp 1, the NCCL communicators and custom all-reduce buffers
    (capacity.TP_COMMUNICATOR_BYTES, as for vLLM); non_torch_bytes overrides it. total_bytes: the
    card's total as SGLang logs it (default the catalog's torch total). Under tensor parallelism SGLang
    takes the minimum available memory over the ranks (get_available_gpu_memory with distributed=True).
    """
    mem_fraction_static = fraction("mem_fraction_static", mem_fraction_static,
                                   what="SGLang's static memory fraction (weights + KV pool)")
    g = get_gpu(gpu)
    est = estimate_inference(model, 1, 1, weights=weights, kv_cache=kv_cache, tp=tp, engine="sglang")
    tp = positive_int("tp", tp)
    non_torch = DEFAULT_CUDA_CONTEXT_BYTES + (TP_COMMUNICATOR_BYTES if tp > 1 else 0) if non_torch_bytes is None \
        else positive_int("non_torch_bytes", non_torch_bytes, allow_zero=True)
    total = usable_bytes(g) if total_bytes is None else positive_int("total_bytes", total_bytes)
    rest = total - est.weight_bytes - non_torch - int(total * (1 - mem_fraction_static))
    return max(rest, 0) // est.kv_bytes_per_token


__all__ = ["VLLM_BLOCK_SIZE", "VLLM_GPU_MEMORY_UTILIZATION", "VLLM_SAMPLER_BYTES_PER_LOGIT", "paged_kv_blocks",
           "paged_kv_waste_bytes", "vllm_default_max_num_batched_tokens", "vllm_default_max_num_seqs",
           "vllm_sampler_warmup_bytes", "vllm_profile_peak_bytes", "vllm_kv_cache_budget_bytes", "vllm_max_concurrency",
           "vllm_kv_budget_for_estimate", "vllm_concurrency_for_estimate",
           "DecodeBound", "decode_bound", "decode_tokens_per_s_upper_bound", "request_flops", "RequestRateBound",
           "request_rate_bound", "LoadPoint", "concurrency_at_rate", "sglang_max_total_tokens"]
