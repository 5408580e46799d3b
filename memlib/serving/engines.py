"""Serving engines as they allocate: llama.cpp's KV cache cells and block formats, vLLM's pages, SGLang's pool.

memlib.serving.inference counts what a serving setup holds; the engines differ in how they size
and type the KV cache, and in what they reserve around it. `estimate_inference(engine=...)` and
`plan_serving(engine=...)` take one of ENGINES:

  "hf"         transformers' generate (the default, today's behaviour): the cache holds exactly
               batch x context tokens in bf16/fp16 (or LMDeploy-style int8, fp8).
  "vllm"       PagedAttention (Kwon et al. 2023): each sequence takes whole blocks of
               VLLM_BLOCK_SIZE = 16 tokens; cache dtypes "auto" (the model dtype), fp8 =
               fp8_e4m3 (OCP E4M3) or fp8_e5m2, one byte per element, per-tensor scales
               (vllm/config CacheConfig.cache_dtype). The KV budget at startup is
               total x gpu_memory_utilization - weights - the profile run's activation peak -
               non-torch memory (memlib.serving.capacity.vllm_kv_cache_budget_bytes).
  "sglang"     RadixAttention's token pool: page size 1 (a sequence takes exactly its tokens;
               sglang ServerArgs.page_size default 1); fp8_e4m3 / fp8_e5m2 caches; the pool is
               sized from mem_fraction_static (sglang_max_total_tokens).
  "llama.cpp"  ggml tensors: K and V typed separately (--cache-type-k / --cache-type-v) in the
               ggml block formats of GGML_BLOCKS; the context padded to 256 cells; sliding-window
               layers in their own cache of window + ubatch cells (llama_cpp_kv_cache).

The ggml block formats (bytes per block of 32 values) are the structs of ggml/src/ggml-common.h
(ggml-org/llama.cpp @ aca2e6ce7909064dbfbf3bd168e9ad3db1826e6c): block_q8_0 = fp16 scale d +
32 int8 = 34 B; block_q4_0 = d + 16 B of nibbles = 18; block_q4_1 = d, m + 16 = 20; block_q5_0 =
d + 4 B high bits + 16 = 22; block_q5_1 = d, m + 4 + 16 = 24; block_iq4_nl = d + 16 = 18.
"""

from __future__ import annotations

from dataclasses import dataclass

from memlib import _compat
from memlib._checks import choice, flag, positive_int
from memlib.models import Model, get_model

ENGINES = ("hf", "vllm", "sglang", "llama.cpp")
DEFAULT_ENGINE = "hf"

# ggml type -> (values per block, bytes per block): ggml-common.h block structs (module docstring).
GGML_BLOCKS = {
    "f32": (1, 4), "f16": (1, 2), "bf16": (1, 2),
    "q8_0": (32, 34), "q4_0": (32, 18), "q4_1": (32, 20), "iq4_nl": (32, 18), "q5_0": (32, 22), "q5_1": (32, 24),
}
LOG_STYLES = ("llama_kv_cache", "llama_kv_cache_unified", "llama_kv_cache_unified_streams", "kv_self")
LLAMA_CPP_PAD = 256  # llama-context.cpp: cparams.n_ctx = GGML_PAD(n_ctx, 256) (llama.cpp PR #17046, Nov 2025)
LLAMA_CPP_UBATCH = 512  # common.h n_ubatch default
LLAMA_CPP_BATCH = 2048  # common.h n_batch default
FP8_KV = ("fp8_e4m3", "fp8_e5m2")  # vLLM/SGLang --kv-cache-dtype; "fp8" is fp8_e4m3 in both
# vLLM --kv-cache-dtype fp8_ds_mla: DeepSeek-V3.2's sparse-MLA cache (FlashMLA sparse), MLA models only
FP8_DS_MLA = "fp8_ds_mla"
DS_MLA_SCALE_GROUP = 128  # one fp32 scale per 128 fp8 latent values (vllm flashmla_sparse.py layout note)
VLLM_PAGE = 16  # vllm CacheConfig.block_size default on CUDA
SGLANG_PAGE = 1  # sglang ServerArgs.page_size default
SGLANG_MEM_FRACTION_STATIC = 0.88  # a typical single-GPU value; sglang picks it from the GPU's size (see sglang_max_total_tokens)


def kv_formats(engine: str) -> tuple[str, ...]:
    """Cache types an engine accepts (memlib names; llama.cpp's are its --cache-type-k/-v names)."""
    choice("engine", engine, ENGINES)
    if engine == "llama.cpp":
        return tuple(GGML_BLOCKS)
    if engine == "vllm":
        return ("bf16", "fp16", "fp8") + FP8_KV + (FP8_DS_MLA,)
    if engine == "sglang":
        return ("bf16", "fp16", "fp8") + FP8_KV
    return ("bf16", "fp16", "fp8", "int8")


def ggml_row_bytes(ggml_type: str, n: int) -> int:
    """Bytes of n values in a ggml type: n / block x block bytes (ggml.c ggml_row_size)."""
    choice("cache type", ggml_type, tuple(GGML_BLOCKS))
    n = positive_int("n", n)
    per, size = GGML_BLOCKS[ggml_type]
    if n % per:
        raise ValueError(f"{ggml_type} packs blocks of {per} values; a row of {n} is not a multiple")
    return n // per * size


def pad(n: int, to: int) -> int:
    """GGML_PAD(n, to): n rounded up to a multiple of `to`."""
    return -(-n // to) * to


@dataclass(frozen=True)
class LlamaCppCache:
    """One llama_kv_cache as llama.cpp allocates it: `cells` per stream, `streams` copies
    (one per sequence unless the cache is unified), `layers` layers, K and V bytes."""

    name: str  # "base" (full-attention layers, or all) or "swa"
    cells: int
    layers: int
    n_seq: int
    streams: int
    type_k: str
    type_v: str
    k_bytes: int
    v_bytes: int

    @property
    def bytes(self) -> int:
        return self.k_bytes + self.v_bytes

    def log_line(self, style: str = "llama_kv_cache") -> str:
        """The line llama.cpp prints for this cache (MiB = 2**20 bytes, two decimals):
        "llama_kv_cache" (Nov 2025 on: 'size = X MiB (N cells, L layers, S/T seqs), K (t): ...'),
        "llama_kv_cache_unified" (May-July 2025: '... S seqs), ...'), "llama_kv_cache_unified_streams"
        (July-Oct 2025: '... S/T seqs), ...'), "kv_self" (2024-early 2025: 'KV self size  = X MiB,
        K (t): ..., V (t): ...')."""
        mib = 2**20
        kv = f"K ({self.type_k}): {self.k_bytes / mib:7.2f} MiB, V ({self.type_v}): {self.v_bytes / mib:7.2f} MiB"
        if style == "kv_self":
            return f"KV self size  = {self.bytes / mib:7.2f} MiB, {kv}"
        choice("style", style, LOG_STYLES)
        seqs = f"{self.n_seq:2d} seqs" if style == "llama_kv_cache_unified" else f"{self.n_seq:2d}/{self.streams} seqs"
        prefix = "llama_kv_cache_unified" if style.startswith("llama_kv_cache_unified") else "llama_kv_cache"
        return (f"{prefix}: size = {self.bytes / mib:7.2f} MiB ({self.cells:6d} cells, {self.layers:3d} layers, "
                f"{seqs}), {kv}")


def llama_cpp_kv_cache(model, n_ctx: int, type_k: str = "f16", type_v: str | None = None, n_seq: int = 1,
                       kv_unified: bool = True, n_ubatch: int = LLAMA_CPP_UBATCH, n_batch: int = LLAMA_CPP_BATCH,
                       swa_full: bool = False, pad_to: int = LLAMA_CPP_PAD) -> list[LlamaCppCache]:
    """The KV caches llama.cpp allocates for `model` at --ctx-size n_ctx (one per layer kind).

    Cells (llama-context.cpp): n_ctx is padded to pad_to (256; builds before Nov 2025 padded to
    256 with flash attention, 32 without); unified: one stream of n_ctx cells; not unified
    (llama-server's --parallel default): n_seq streams of pad(n_ctx / n_seq) cells each.
    Sliding-window layers (llama-kv-cache-iswa.cpp, llama.cpp issue #17037): their own cache of
    min(cells, pad(window x (n_seq if unified else 1) + n_ubatch, 256)) cells, the full cells
    with swa_full (--swa-full); chunked-attention layers (Llama 4) likewise with their chunk.
    Bytes (llama-kv-cache.cpp, ggml_new_tensor_3d(type, n_embd_k_gqa, cells, streams) per layer):
    layers x streams x cells x (row(type_k, kv_heads x head_dim) + row(type_v, kv_heads x head_dim)).
    n_ubatch = min(n_ubatch, n_batch, n_ctx) as llama-context.cpp clamps it.
    """
    kv_unified = flag("kv_unified", kv_unified)
    swa_full = flag("swa_full", swa_full)
    m = get_model(model) if isinstance(model, str) else model
    if not isinstance(m, Model):
        raise ValueError(f"model must be a catalog name or a memlib.Model, got {type(model).__name__}")
    if m.is_mla:
        raise ValueError(f"{m.name} uses multi-head latent attention; llama.cpp's MLA cache layout is not modelled")
    type_v = type_k if type_v is None else type_v
    for what, t in (("type_k", type_k), ("type_v", type_v)):
        choice(what, t, tuple(GGML_BLOCKS))
    n_ctx, n_seq = positive_int("n_ctx", n_ctx), positive_int("n_seq", n_seq)
    pad_to = positive_int("pad_to", pad_to)
    ubatch = min(positive_int("n_ubatch", n_ubatch), positive_int("n_batch", n_batch), n_ctx)
    if not kv_unified and n_ctx < n_seq:
        # llama-context.cpp: n_ctx_seq = n_ctx / n_seq_max without a unified cache; fewer cells than streams
        # leaves a stream with none (llama.cpp stops there too), not a cache of 0 bytes
        raise ValueError(f"n_ctx {n_ctx:,} over n_seq {n_seq:,} streams leaves no cell per stream (kv_unified=False "
                         f"splits the context evenly); give n_ctx >= n_seq, e.g. n_ctx = {n_seq:,} x tokens per stream")
    n_ctx = pad(n_ctx, pad_to)
    streams = 1 if kv_unified else n_seq
    cells = n_ctx if kv_unified else pad(n_ctx // n_seq, pad_to)
    width = m.num_kv_heads * m.head_dim  # n_embd_k_gqa = n_embd_v_gqa for these models
    row_k, row_v = ggml_row_bytes(type_k, width), ggml_row_bytes(type_v, width)
    full, windowed, window = 0, 0, None
    for layer_type, n in m.layer_counts().items():
        cap = m.sliding_window if layer_type == "sliding_attention" else (
            m.attention_chunk_size if layer_type == "chunked_attention" else None)
        if cap is None:
            full += n
        else:
            windowed, window = windowed + n, cap
    caches = []

    def cache(name: str, n_cells: int, layers: int) -> LlamaCppCache:
        per = layers * streams * n_cells
        return LlamaCppCache(name, n_cells, layers, n_seq, streams, type_k, type_v, per * row_k, per * row_v)

    if full:
        caches.append(cache("base", cells, full))
    if windowed:
        swa_cells = cells if swa_full else min(cells, pad(window * (n_seq if kv_unified else 1) + ubatch, 256))
        caches.append(cache("swa", swa_cells, windowed))
    return caches


def llama_cpp_kv_bytes(model, n_ctx: int, type_k: str = "f16", type_v: str | None = None, **kw) -> int:
    """Total bytes of llama_cpp_kv_cache(...): every cache, K and V."""
    return sum(c.bytes for c in llama_cpp_kv_cache(model, n_ctx, type_k, type_v, **kw))


def paged_tokens(tokens: int, engine: str) -> int:
    """Cache slots a sequence of `tokens` occupies: whole 16-token blocks in vLLM, exactly its tokens
    in SGLang (page 1) and transformers."""
    choice("engine", engine, ENGINES)
    tokens = positive_int("tokens", tokens, allow_zero=True)
    page = VLLM_PAGE if engine == "vllm" else 1
    return -(-tokens // page) * page


def fp8_ds_mla_bytes_per_token(kv_lora_rank: int, qk_rope_head_dim: int) -> int:
    """Bytes of one token in one layer of vLLM's `fp8_ds_mla` cache (DeepSeek-V3.2's sparse MLA):
    kv_lora_rank fp8 latent values (1 B each) + one fp32 scale per 128 of them + the rope key in bf16:
    512 + 4 x 4 + 64 x 2 = 656 B for DeepSeek's shape, where the plain fp8 latent is 512 + 64 = 576 B.

    vllm-project/vllm@001cabc1 vllm/v1/kv_cache_interface.py MLAAttentionSpec.real_page_size_bytes
    (block_size x 656 when cache_dtype_str == "fp8_ds_mla"); the layout is the note in
    vllm/v1/attention/backends/mla/flashmla_sparse.py; its cache kernel takes kv_lora_rank 512 only
    (tests/kernels/attention/test_cache.py test_concat_and_cache_ds_mla), FlashMLA sparse head size 576.
    vLLM turns any fp8 cache of a DeepseekV32ForCausalLM into this format
    (vllm/model_executor/models/config.py DeepseekV32ForCausalLM.verify_and_update_config)."""
    r = positive_int("kv_lora_rank", kv_lora_rank)
    rope = positive_int("qk_rope_head_dim", qk_rope_head_dim)
    if (r, rope) != (512, 64):
        raise ValueError(f"kv_cache 'fp8_ds_mla' is vLLM's layout for kv_lora_rank 512 and rope 64 (FlashMLA sparse, "
                         f"head size 576); this model has kv_lora_rank {r} and qk_rope_head_dim {rope}: use 'fp8' "
                         "or 'bf16'")
    return r + r // DS_MLA_SCALE_GROUP * 4 + rope * 2


def vllm_padded_page_bytes(attn_bytes_per_token: int, state_page_bytes: int, block_size: int | None = None,
                           alignment: int = VLLM_PAGE) -> tuple[int, int]:
    """(attention block size in tokens, the one page size every layer kind uses) when attention and
    state (Mamba-style) layers share vLLM's KV pool: the attention block is the smallest multiple of
    `alignment` whose page holds the state page, block = alignment x ceil(state / (alignment x attn
    bytes per token)), kept when the user's block_size is larger; the state page is padded up to the
    attention page (page_size_padded). vllm-project/vllm vllm/model_executor/models/config.py
    HybridAttentionMambaModelConfig.verify_and_update_config (no prefix caching), MambaSpec.page_size_bytes
    in vllm/v1/kv_cache_interface.py @001cabc1."""
    a = positive_int("attn_bytes_per_token", attn_bytes_per_token)
    state = positive_int("state_page_bytes", state_page_bytes)
    align = positive_int("alignment", alignment)
    block = align * -(-state // (align * a))
    if block_size is not None and positive_int("block_size", block_size) >= block:
        block = block_size
    return block, block * a


def vllm_kv_pool_tokens(budget_bytes: int, kinds, block_size: int = VLLM_PAGE, shared: bool = False) -> int:
    """vLLM's "GPU KV cache size: N tokens" for a KV budget and the model's cache kinds.

    `kinds`: (layers, page bytes) per kind of per-layer cache, a page being block_size tokens of one layer.
    shared=False, every kind a full-attention cache (one group: vLLM's UniformTypeKVCacheSpecs, e.g.
    DeepSeek-V3.2's MLA cache and its indexer's key cache in every layer): one block is one page of
    every layer, blocks = floor(budget / sum(layers x page)), tokens = blocks x block_size
    (vllm/v1/core/kv_cache_utils.py get_kv_cache_config_from_groups; for one kind this is
    floor(budget / page / layers), get_num_blocks).
    shared=True, kinds of different attention types sharing one pool (hybrid models): every page is
    the largest page (unify_kv_cache_spec_page_size raises a smaller attention page's block size, a
    state page is padded: vllm_padded_page_bytes), layers are grouped g at a time (g = the fewest
    layers of a kind, or the most when that is under 1.5 times the fewest; a kind's last group
    padded with empty layers), blocks = floor(budget / page / g), and the log counts
    blocks // groups x block_size tokens (_get_kv_cache_groups_uniform_page_size,
    _report_kv_cache_config), all @001cabc1."""
    budget = positive_int("budget_bytes", budget_bytes, allow_zero=True)
    block_size = positive_int("block_size", block_size)
    kinds = [(positive_int("layers", n), positive_int("page bytes", p)) for n, p in kinds]
    if not kinds:
        raise ValueError("kinds: give at least one (layers, page bytes) pair")
    if not flag("shared", shared):
        return budget // sum(n * p for n, p in kinds) * block_size
    page = max(p for _, p in kinds)
    fewest, most = min(n for n, _ in kinds), max(n for n, _ in kinds)
    g = most if most < fewest * 1.5 else fewest
    groups = sum(-(-n // g) for n, _ in kinds)
    return budget // page // g // groups * block_size


__all__ = ["ENGINES", "DEFAULT_ENGINE", "GGML_BLOCKS", "FP8_KV", "LlamaCppCache", "kv_formats", "ggml_row_bytes",
           "llama_cpp_kv_cache", "llama_cpp_kv_bytes", "paged_tokens",
           "FP8_DS_MLA", "fp8_ds_mla_bytes_per_token", "vllm_padded_page_bytes", "vllm_kv_pool_tokens"]


# SGLang's pool size needs estimate_inference, which reads this catalog: it lives in memlib.serving.capacity (issue 44)
__getattr__ = _compat.moved_attributes(__name__, {"sglang_max_total_tokens": "memlib.serving.capacity"})
