"""FLOP conventions the notebooks quote and interviewers probe: the causal discount of attention,
recompute that skips the output head, absorbed multi-head latent attention at decode, and one
convention for a published run's implied MFU.

Each function names its convention; memlib.cost.timing.flops_per_token stays the training
FLOP model (6N + 12·L·H·Q·T, no causal discount) that step_time and plan use.
"""

from __future__ import annotations

from memlib._checks import choice, flag, positive_float, positive_int
from memlib.models.flops import _model, active_params, attention_flops_per_token
from memlib.hardware.gpus import get_gpu
from memlib.serving.techniques import littles_law_arrival_rate  # noqa: F401 - its home until issue 44


def causal_attention_flops_per_token(model, seq_len: int) -> float:
    """6·L·H·Q·T: attention_flops_per_token halved, what a causal FlashAttention kernel computes
    (it skips the blocks above the diagonal; Dao 2023, FlashAttention-2, Sec. 3.1.1: "about 1.7-1.8x"
    of the work is saved in practice, half in the limit)."""
    return attention_flops_per_token(model, seq_len) / 2


def causal_flops_per_token(model, seq_len: int, recompute: str = "none") -> float:
    """Training FLOPs per token when the attention kernel is causal: memlib.cost.timing.flops_per_token (PaLM
    App. B: 12·L·H·Q·T of attention, which counts every query-key pair) less the masked half of the attention
    it counts, 6·L·H·Q·T, and of its rerun under full recompute (a third of that again; Korthikanti's attention
    recompute of GPT-style selective too). Llama-3.1-8B at 128k: 48 + 206 = 254 GFLOP by PaLM's count, 48 + 103
    = 151 with a causal kernel, so the same hardware FLOP/s makes 254 / 151 = 1.68x the tokens."""
    from memlib.cost.timing import flops_per_token  # one line apart from the module's imports: a clean merge
    model = _model(model, "causal_flops_per_token")
    total = flops_per_token(model, seq_len, recompute)
    reruns_attention = recompute == "full" or (recompute == "selective" and model.mlp != "gated")
    return total - causal_attention_flops_per_token(model, seq_len) * (4 / 3 if reruns_attention else 1)


def attention_to_weights_flops(model, seq_len: int, causal: bool = True) -> float:
    """Attention FLOPs per token over the weights' 6N (PaLM App. B counting; causal halves it)."""
    causal = flag("causal", causal)
    attn = causal_attention_flops_per_token(model, seq_len) if causal else attention_flops_per_token(model, seq_len)
    return attn / (6 * active_params(model))


def sequence_flops_ratio(model, long_len: int, short_len: int, causal: bool = True) -> float:
    """Training FLOPs of one sequence of long_len over one of short_len: T·(6N + attention(T))."""
    causal = flag("causal", causal)
    n6 = 6 * active_params(model)
    attn = causal_attention_flops_per_token if causal else attention_flops_per_token

    def seq(t: int) -> float:
        return t * (n6 + attn(model, t))
    return seq(positive_int("long_len", long_len)) / seq(positive_int("short_len", short_len))


def head_params(model) -> int:
    """Parameters of the embedding table and the output head (once when tied)."""
    model = _model(model, "head_params")
    vh = model.vocab_size * model.hidden_size
    return vh if model.tie_word_embeddings else 2 * vh


def recompute_overhead(model, seq_len: int, checkpoint_head: bool = False) -> float:
    """Extra training FLOPs of full recompute, as a fraction of 6N + 12·L·H·Q·T (N counting the
    embedding and head, the 6N convention of memlib.cost.timing.flops_per_token). Hugging Face's
    gradient_checkpointing_enable and torchtitan's AC wrap the decoder blocks only, so the replayed
    forward is 2(N - embedding - head) + 4·L·H·Q·T; with the head checkpointed too, one third."""
    checkpoint_head = flag("checkpoint_head", checkpoint_head)
    model = _model(model, "recompute_overhead")
    n = active_params(model)
    attn = attention_flops_per_token(model, seq_len)
    base = 6 * n + attn
    replay = 2 * n + attn / 3 if checkpoint_head else 2 * (n - head_params(model)) + attn / 3
    return replay / base


def mla_absorbed_attention_flops(model, context_len: int) -> float:
    """FLOPs of one decode token's attention in MLA with the up-projections absorbed (DeepSeek-V2,
    arXiv:2405.04434, Sec. 2.1.2): per layer and head, scores over the latent and the RoPE key,
    2·(d_c + d_r)·T, and the weighted sum of latents, 2·d_c·T: 2·L·H·(2·d_c + d_r)·T."""
    model = _model(model, "mla_absorbed_attention_flops")
    if not model.is_mla:
        raise ValueError(f"{model.name} has no multi-head latent attention (kv_lora_rank)")
    t = positive_int("context_len", context_len)
    return float(2 * model.num_layers * model.num_heads * (2 * model.kv_lora_rank + model.qk_rope_head_dim) * t)


def mla_absorbed_intensity(model, context_len: int, cache_bytes_per_element: float = 2) -> float:
    """FLOP per byte of cache read by absorbed MLA decode: mla_absorbed_attention_flops over
    L·(d_c + d_r)·T elements; every head reads the same latent, so it is H·(2·d_c + d_r)/(d_c + d_r)/B."""
    model = _model(model, "mla_absorbed_intensity")
    read = model.num_layers * (model.kv_lora_rank + model.qk_rope_head_dim) * context_len * cache_bytes_per_element
    return mla_absorbed_attention_flops(model, context_len) / read


def ridge_flop_per_byte(gpu, precision: str = "bf16") -> float:
    """The roofline's ridge point: dense peak FLOP/s over HBM bytes/s (Williams et al. 2009)."""
    g = get_gpu(gpu)
    tflops = g.fp8_tflops if precision == "fp8" else (g.bf16_tflops or g.fp16_tflops)
    if not tflops:
        raise ValueError(f"{g.name} has no {precision} tensor peak in the catalog")
    return tflops * 1e12 / g.memory_bandwidth_bytes_per_s


def mean_attended_keys(seq_len: int, window: int = 0, causal: bool = True) -> float:
    """Keys one query attends to, averaged over a sequence of T tokens: T (bidirectional), T/2 (causal,
    the triangle; causal_attention_flops_per_token), and with a causal sliding window of w tokens
    (Beltagy et al. 2020, Longformer, Sec. 3.1; Mistral 7B, arXiv:2310.06825, Sec. 2: w = 4,096) the
    triangle's first w rows then w per row: w - w²/(2T) for T >= w. window=0: no window."""
    causal = flag("causal", causal)
    t = positive_int("seq_len", seq_len)
    w = positive_int("window", window, allow_zero=True)
    if not causal:
        return float(min(w, t) if w else t)
    if not w or w >= t:
        return t / 2
    return w - w * w / (2 * t)


def windowed_attention_flops_per_token(model, seq_len: int, window: int = 0, causal: bool = True) -> float:
    """12·L·H·Q·K̄: PaLM's attention count (App. B; attention_flops_per_token charges K̄ = T) with K̄ the
    keys a query actually attends to (mean_attended_keys). Full causal: T/2; a sliding window of w << T:
    about w, so attention per token stops growing with T, and per sequence grows as T·w, not T²."""
    causal = flag("causal", causal)
    full = attention_flops_per_token(model, seq_len)
    return full * mean_attended_keys(seq_len, window, causal) / seq_len


def attention_hbm_accesses(seq_len: int, head_dim: int, sram_elements: int) -> tuple[float, float]:
    """HBM accesses (elements) of one head's attention forward, as Dao et al. 2022 count them
    (FlashAttention, arXiv:2205.14135, Theorem 2; orders, constants dropped): standard attention
    writes and reads the N x N scores, Θ(N·d + N²); FlashAttention streams Q, K, V through an SRAM of
    M elements, Θ(N²·d²/M), for d <= M <= N·d. Returns (standard, flash)."""
    n = positive_int("seq_len", seq_len)
    d = positive_int("head_dim", head_dim)
    m = positive_int("sram_elements", sram_elements)
    if not d <= m <= n * d:
        raise ValueError(f"Theorem 2 holds for head_dim <= sram_elements <= seq_len x head_dim; got d={d}, "
                         f"M={m}, N·d={n * d}")
    return float(n * d + n * n), n * n * d * d / m


# Bytes one update reads and writes per parameter, for fp32 weights and gradients (PyTorch AMP):
# AdamW reads w, g, m, v (4 B each) and writes w, m, v; bitsandbytes' 8-bit AdamW keeps m, v in 1 B each
# plus one fp32 absmax per 256-value block (Dettmers et al. 2021, arXiv:2110.02861, Sec. 2: blocks are
# dequantized and requantized in registers, so the update stays bandwidth-bound).
_ADAM_STEP_BYTES = {"adamw": 4 * 4 + 3 * 4, "adamw-8bit": (4 + 4 + 1 + 1) + (4 + 1 + 1) + 2 * 2 * 4 / 256}


def optimizer_step_hbm_bytes(num_params: int, optimizer: str = "adamw") -> float:
    """HBM bytes one optimizer step moves for `num_params` fp32 weights (_ADAM_STEP_BYTES per parameter);
    divided by the GPU's bandwidth it is the step's time at best: the update is memory-bound."""
    positive_int("num_params", num_params)
    if not isinstance(optimizer, str) or optimizer not in _ADAM_STEP_BYTES:
        raise ValueError(f"optimizer must be one of {sorted(_ADAM_STEP_BYTES)}, got {optimizer!r}")
    return num_params * _ADAM_STEP_BYTES[optimizer]


def ulysses_all_to_all_bytes(model, seq_len: int, cp: int, dtype_bytes: int = 2) -> float:
    """DeepSpeed-Ulysses' traffic of one decoder layer and one sequence, bytes sent per GPU (Jacobs et al. 2023,
    arXiv:2309.14509, Sec. 3): the forward all-to-alls q, k, v from sequence shards to head shards and the output
    back, the backward the same four again: 2 x all_to_all((2·q + 2·kv)·T/cp·bytes) over cp GPUs."""
    from memlib.cost.timing import all_to_all_bytes
    model = _model(model, "ulysses_all_to_all_bytes")
    t, cp = positive_int("seq_len", seq_len), positive_int("cp", cp)
    if cp > model.num_kv_heads:
        raise ValueError(f"Ulysses splits heads: cp {cp} exceeds {model.name}'s {model.num_kv_heads} KV heads "
                         "(replicate K/V heads or use ring attention)")
    local = (2 * model.q_size + 2 * model.kv_size) * t / cp * dtype_bytes
    return 2 * all_to_all_bytes(local, cp)


# DeepSeek's own training cost per token: 250 GFLOP for DeepSeek-V3 (Zhao et al. 2025, "Insights into
# DeepSeek-V3", arXiv:2505.09343, Table 2), and its pre-training: 2.664M H800 GPU-hours on 14.8T tokens
# (DeepSeek-V3 report, arXiv:2412.19437, Table 1). An H800 computes as an H100 SXM (bf16 dense peak).
DEEPSEEK_V3_FLOPS_PER_TOKEN = 250e9
DEEPSEEK_V3_PRETRAIN_GPU_HOURS = 2.664e6
DEEPSEEK_V3_PRETRAIN_TOKENS = 14.8e12


def implied_mfu(flops_per_token: float, tokens: float, gpu_hours: float, gpu, precision: str = "bf16") -> float:
    """A published run's MFU: flops_per_token × tokens / (GPU-hours × 3600 × dense peak). The
    collection's one convention: the publisher's own FLOPs per token when it gives one, the bf16 dense peak."""
    for name, v in (("flops_per_token", flops_per_token), ("tokens", tokens), ("gpu_hours", gpu_hours)):
        positive_float(name, v)  # a finite number > 0: not a bool, a string, nan or inf
    choice("precision", precision, ("bf16", "fp8"))
    g = get_gpu(gpu)
    tflops = g.fp8_tflops if precision == "fp8" else (g.bf16_tflops or g.fp16_tflops)
    return flops_per_token * tokens / (gpu_hours * 3600 * tflops * 1e12)


def deepseek_v3_implied_mfu(precision: str = "bf16") -> float:
    """DeepSeek-V3's pre-training MFU on its own 250 GFLOP/token, against the H800's bf16 dense peak (≈ 39%)."""
    return implied_mfu(DEEPSEEK_V3_FLOPS_PER_TOKEN, DEEPSEEK_V3_PRETRAIN_TOKENS, DEEPSEEK_V3_PRETRAIN_GPU_HOURS,
                       "h100-80gb", precision)


__all__ = ["causal_attention_flops_per_token", "causal_flops_per_token", "attention_to_weights_flops", "sequence_flops_ratio", "head_params",
           "recompute_overhead", "mla_absorbed_attention_flops", "mla_absorbed_intensity", "ridge_flop_per_byte",
           "optimizer_step_hbm_bytes", "littles_law_arrival_rate",
           "ulysses_all_to_all_bytes", "mean_attended_keys", "windowed_attention_flops_per_token",
           "attention_hbm_accesses",
           "DEEPSEEK_V3_FLOPS_PER_TOKEN", "DEEPSEEK_V3_PRETRAIN_GPU_HOURS", "DEEPSEEK_V3_PRETRAIN_TOKENS",
           "implied_mfu", "deepseek_v3_implied_mfu"]
