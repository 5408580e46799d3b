"""Saved activations: what the autograd graph keeps from the forward pass for the backward.

Two derivations live here:

* `korthikanti_layer_bytes`: the classic per-layer formula for a GPT-style layer with
  dropout (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
  Models", Sec. 4.1 eq. (1)-(2), Table 2): s*b*h*(34 + 5*a*s/h) bytes in 16-bit, divided by t
  under tensor and sequence parallelism.
* `llama_layer_ledger`: the same bookkeeping done tensor by tensor for a LLaMA-style layer
  (RMSNorm, rotary, GQA attention, SwiGLU MLP, no dropout, no biases) as the Hugging Face
  implementation runs it. Each entry names the tensor autograd keeps and why; sizes are
  bytes per token unless marked per sequence. This is what memlib uses for llama, mistral
  and qwen2 models; the newer families (Qwen3, Gemma 2/3, Phi-3, OLMo 2, Mixtral, Qwen3-MoE,
  DeepSeek-V2/V3, gpt-oss, Llama 4) add or replace entries of the same ledger, each read from
  the family's transformers 5.24 modeling file and checked against validation/results_families.json:
  q/k norms, norms after attention and MLP, fused projections, sliding-window masks, eager
  soft-capping and attention sinks, multi-head latent attention, and MoE blocks (router,
  routed experts at tokens x top-k rows, shared experts).

Vocabulary: h hidden size, I MLP intermediate size, a query heads, q = a*head_dim (query
width), kv = kv_heads*head_dim (key/value width), s sequence length, b micro-batch.
r is the byte width of the residual stream (fp32 under AMP, because the embedding output
is fp32), c the byte width of matmul outputs (2 under bf16/fp16 and AMP, 4 in fp32).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memlib._checks import flag
from memlib.models import Model
from memlib.models.families import of as family_of


def korthikanti_layer_bytes(s: int, b: int, h: int, a: int, t: int = 1, sequence_parallel: bool = False,
                            recompute: str = "none") -> int:
    """Activation bytes of one GPT layer, 16-bit activations with dropout masks (Korthikanti et al. 2022).

    none:      s*b*h*(10 + 24/t + 5*a*s/(h*t))   (t=1: 34 + 5as/h)     Sec. 4.2.2, eq. (2)
    + SP:      s*b*h*(34/t + 5*a*s/(h*t))                              Sec. 4.2.3
    selective: drops the 5as/h attention term (softmax, its dropout mask and output)   Sec. 5
    full:      s*b*h*2 (only the layer input is kept)                  Sec. 5
    """
    sequence_parallel = flag("sequence_parallel", sequence_parallel)
    if recompute == "full":
        return 2 * s * b * h // (t if sequence_parallel else 1)
    attn_core = 0 if recompute == "selective" else 5 * a * s * s * b // t
    if sequence_parallel:
        return 34 * s * b * h // t + attn_core
    return s * b * h * 10 + 24 * s * b * h // t + attn_core


@dataclass(frozen=True)
class Numerics:
    """Byte widths that decide activation sizes for one precision setting."""

    residual: int  # r: residual stream / embedding output
    compute: int  # c: matmul outputs and attention inputs
    autocast: bool  # AMP: every matmul casts its fp32 input to a 16-bit copy of its own


@dataclass
class Ledger:
    """Named byte counts; `total` adds them. Kept as a list so explain() can show each line."""

    items: list[tuple[str, int, str]] = field(default_factory=list)
    split: int = 0  # items before this index belong to the attention half of a layer

    def add(self, name: str, nbytes: int, why: str = "") -> None:
        if nbytes:
            self.items.append((name, int(nbytes), why))

    @property
    def total(self) -> int:
        return sum(n for _, n, _ in self.items)


def adapter_input_bytes(input_bytes: int, adapter_bytes: int, *, autocast: bool, cast_input: bool,
                        dropout: bool) -> int:
    """Bytes per element of the copy of its input one LoRA adapter keeps for lora_A's weight gradient, or 0 when
    lora_A saves the shared input itself (peft tuners/lora/layer.py Linear.forward, peft 0.21:
    `x = self._cast_input_dtype(x, lora_A.weight.dtype)`, then `lora_B(lora_A(dropout(x)))`).

    The input is cast to the adapter dtype when they differ (the bitsandbytes path of tuners/lora/bnb.py casts
    only without autocast), dropout makes a new tensor, and under autocast a matmul on an fp32 tensor casts it
    to 16-bit first: the matmul keeps that last tensor."""
    cast = cast_input and adapter_bytes != input_bytes
    width = adapter_bytes if cast else input_bytes
    if autocast and width == 4:
        return 2
    return width if (cast or dropout) else 0


def llama_layer_ledger(model: Model, num: Numerics, tokens: int, b: int, s: int, *, attention: str,
                       trainable_linears: bool, adapters: frozenset = frozenset(), lora_rank: int = 0,
                       adapter_bytes: int = 2, lora_dropout: float = 0.0, adapter_casts_input: bool = True,
                       base_saves_input: bool = False, mlp_bytes: int | None = None,
                       gqa_native: bool = True, layer_type: str = "full_attention", moe: bool = False,
                       routed_rows: int | None = None) -> Ledger:
    """Saved tensors of one LLaMA-style decoder layer (HF LlamaDecoderLayer), bytes for `tokens` = b*s.

    trainable_linears: base projections get gradients (full fine-tuning). In LoRA they are
    frozen, so a projection keeps no input for a weight gradient; only an adapter's lora_A
    keeps its input (or its own copy of it: adapter_input_bytes), and lora_B keeps the
    r-wide output of lora_A. With lora_dropout > 0 each adapter also keeps dropout's mask:
    1 byte per element (CUDA's fused kernel, aten::native_dropout, keeps a bool mask).
    base_saves_input: a frozen projection that keeps its input anyway (bitsandbytes' 4-bit
    matmul before 0.43.2: `ctx.tensors = (A, B)`).
    mlp_bytes: width of the MLP's activations when it differs from the compute width
    (bitsandbytes' Linear4bit returns its output in its input's dtype: `.to(inp_dtype)`, fp32
    after peft's prepare_model_for_kbit_training).

    The other families (defaults: the LLaMA layer): layer_type is this layer's attention span
    ("sliding_attention" / "chunked_attention" layers get an explicit mask once the sequence
    reaches the window); moe: the layer's MLP is its MoE block, whose routed experts process
    `routed_rows` (token, expert) rows (tokens x top-k without a capacity limit); the q/k norms,
    post-norms, fused projections, MLA and the eager variants follow from the model's fields.
    """
    adapter_casts_input, base_saves_input, gqa_native, moe = map(flag, ("adapter_casts_input", "base_saves_input",
                                                                       "gqa_native", "moe"), (adapter_casts_input, base_saves_input, gqa_native, moe))
    h, r, cm, full = model.hidden_size, num.residual, mlp_bytes or num.compute, trainable_linears
    keeps_input = full or base_saves_input
    led = Ledger()
    # Norms that multiply by their weight in fp32 before casting back keep an fp32 normalized tensor
    # (Gemma: x * (1 + w.float()); OLMo 2, gpt-oss: (w * x).to(dtype)); LLaMA's casts first: w * x.to(dtype).
    fp32_norm = family_of(model).fp32_norms

    consumers = _consumers(led, model, num, tokens, keeps_input=keeps_input, adapters=adapters,
                           adapter_bytes=adapter_bytes, adapter_casts_input=adapter_casts_input,
                           lora_dropout=lora_dropout, lora_rank=lora_rank)

    def norm(prefix: str, targets: tuple[str, ...]) -> None:
        # RMSNorm: x32 = x.float(); x32 * rsqrt(mean(x32^2)+eps) -> .to(x.dtype) -> weight * y.
        # pow() keeps x32 (a new fp32 copy under bf16, the fp32 residual itself under AMP/fp32).
        led.add(f"{prefix}.x_fp32", 4 * h * tokens, "RMSNorm keeps its fp32 input for the backward of pow/mul")
        if full:  # weight * y keeps y for the weight's gradient (norm weights frozen under LoRA)
            led.add(f"{prefix}.normalized", (4 if fp32_norm else r) * h * tokens,
                    "y = x*rsqrt(var+eps), kept for the norm weight grad" + (" (in fp32)" if fp32_norm else ""))
        if not targets:  # a norm whose output only joins the residual stream (Gemma's, OLMo 2's post-norms)
            return
        n = len(led.items)
        direct, base_casts = consumers(r, targets)
        if base_casts:  # each matmul under autocast casts the fp32 output separately and keeps its copy
            led.items.insert(n, (f"{prefix}.out_casts", 2 * h * tokens * base_casts,
                                 f"{base_casts} bf16 cast(s) of the norm output, one per {'/'.join(targets)}"))
            n += 1
        if direct:
            led.items.insert(n, (f"{prefix}.out", r * h * tokens, f"norm output, input of {'/'.join(targets)}"))

    # --- attention block -----------------------------------------------------------------
    if model.norm_layout == "post":  # OLMo 2: no pre-norm; q/k/v keep the layer's input (the residual) itself
        n = len(led.items)
        direct, base_casts = consumers(r, ("q_proj", "k_proj", "v_proj"))
        if base_casts:
            led.items.insert(n, ("residual.attn_input_casts", 2 * h * tokens * base_casts,
                                 f"{base_casts} bf16 cast(s) of the layer input, one per q/k/v projection"))
        elif direct:
            led.items.insert(n, ("residual.attn_input", r * h * tokens, "the layer input, kept by q/k/v (no pre-norm)"))
    else:
        norm("attn_norm", ("q_proj", "k_proj", "v_proj"))
    masked = _explicit_mask(model, layer_type, s)
    if not _llama_attention(model) or masked:
        _family_attention(led, model, num, tokens, b, s, attention=attention, full=full, layer_type=layer_type,
                          masked=masked, consumers=consumers)
        if model.norm_layout in ("sandwich", "post"):  # Gemma, OLMo 2: the attention output is normed
            norm("attn_norm_post", ())
        _mlp_block(led, norm, consumers, model, num, tokens, cm, moe=moe, routed_rows=routed_rows, full=full)
        return led
    _llama_attention_core(led, model, num, tokens, b, s, attention=attention, gqa_native=gqa_native,
                          consumers=consumers)
    # --- MLP block ------------------------------------------------------------------------
    _mlp_block(led, norm, consumers, model, num, tokens, cm, moe=moe, routed_rows=routed_rows, full=full)
    return led


def _consumers(led: Ledger, model: Model, num: Numerics, tokens: int, *, keeps_input: bool, adapters: frozenset,
               adapter_bytes: int, adapter_casts_input: bool, lora_dropout: float, lora_rank: int):
    """The layer's `consumers(x_bytes, targets)`: what the projections reading one shared input keep of it (the base
    matmuls' inputs, peft's LoRA copies, dropout masks and lora_A outputs, added to `led`)."""
    h, I, q = model.hidden_size, model.intermediate_size, model.q_size

    def consumers(x_bytes: int, targets: tuple[str, ...]) -> tuple[bool, int]:
        """(is the shared input saved itself, how many base matmuls keep a 16-bit cast of it), and the adapters'
        own copies, masks and lora_A outputs added to the ledger."""
        direct, base_casts = False, 0
        for t in targets:
            if keeps_input:  # the base matmul keeps its input; under autocast an fp32 input is cast per matmul
                if num.autocast and x_bytes == 4:
                    base_casts += 1
                else:
                    direct = True
        for t in _adapter_names(model, targets):
            if t not in adapters:
                continue
            copy = adapter_input_bytes(x_bytes, adapter_bytes, autocast=num.autocast, cast_input=adapter_casts_input,
                                       dropout=lora_dropout > 0)
            fan_in = {"o_proj": q, "down_proj": I}.get(t, h)
            if copy:
                led.add(f"lora.{t}.input", copy * fan_in * tokens,
                        f"lora_A's own {copy}-byte copy of its input (peft's dtype cast / dropout / autocast)")
            else:
                direct = True
            if lora_dropout > 0:
                led.add(f"lora.{t}.dropout_mask", fan_in * tokens, "dropout's bool mask, 1 byte per element (CUDA)")
            led.add(f"lora.{t}.A_out", (2 if num.autocast else adapter_bytes) * lora_rank * tokens,
                    "lora_A output, kept by lora_B")
        return direct, base_casts

    return consumers


def _adapter_names(model: Model, targets: tuple[str, ...]) -> tuple[str, ...]:
    """The adapters that read one shared input: Phi-3's fused qkv_proj (gate_up_proj) is one peft adapter where
    LLaMA has three (two)."""
    if model.fused_qkv and targets == ("q_proj", "k_proj", "v_proj"):
        return ("qkv_proj",)
    if model.fused_gate_up and targets == ("gate_proj", "up_proj"):
        return ("gate_up_proj",)
    return targets


def _llama_attention_core(led: Ledger, model: Model, num: Numerics, tokens: int, b: int, s: int, *, attention: str,
                          gqa_native: bool, consumers) -> None:
    """LLaMA's attention core as transformers runs it: sdpa's fused kernel (q, k, v, output and the fp32
    log-sum-exp; no s x s matrix) or eager_attention_forward (the fp32 softmax and its 16-bit cast, b*a*s*s each)."""
    q, kv, a, c = model.q_size, model.kv_size, model.num_heads, num.compute
    kv_kept = kv if (attention == "sdpa" and gqa_native) else q  # repeat_kv copies K and V to all heads
    if attention == "sdpa":
        led.add("sdpa.q", c * q * tokens, "rotated query, kept by the fused attention kernel")
        led.add("sdpa.k", c * kv_kept * tokens, "rotated key" + ("" if kv_kept == kv else ", repeated to all heads"))
        led.add("sdpa.v", c * kv_kept * tokens, "value" + ("" if kv_kept == kv else ", repeated to all heads"))
        led.add("sdpa.out", c * q * tokens, "attention output (also o_proj's input)")
        led.add("sdpa.logsumexp", 4 * a * tokens, "fp32 row log-sum-exp, instead of the s x s matrix")
        consumers(c, ("o_proj",))  # o_proj's input is sdpa's saved output
    else:
        led.add("eager.q", c * q * tokens, "query, kept by Q K^T")
        led.add("eager.k", c * kv_kept * tokens, "key repeated to all heads, kept by Q K^T")
        led.add("eager.probs_fp32", 4 * a * s * s * b, "softmax output in fp32 (b*a*s*s), kept by softmax")
        if c != 4:
            led.add("eager.probs", c * a * s * s * b, "probabilities cast back to 16-bit, kept by P V")
        led.add("eager.v", c * kv_kept * tokens, "value repeated to all heads, kept by P V")
        n = len(led.items)
        if consumers(c, ("o_proj",))[0]:
            led.items.insert(n, ("eager.out", c * q * tokens, "transposed contiguous attention output, o_proj's input"))


def megatron_layer_ledger(model: Model, tokens: int, *, recompute: str = "none", hidden_dropout: float = 0.0,
                          attention: str = "sdpa", seq_len: int = 0, attention_dropout: float = 0.0,
                          moe: bool = False, routed_rows: int = 0, tp: int = 1, etp: int | None = None,
                          aux_loss: bool = True) -> Ledger:
    """Saved tensors of one Megatron-Core decoder layer built from Transformer Engine's fused modules, bytes for
    `tokens`, before the tensor-parallel split (the caller divides: Korthikanti et al. 2022 Sec. 4.2). Korthikanti's
    Table 2 terms (34sbh + 5as^2b/t for GPT) with flash attention and GQA: each LayerNormLinear keeps its input, its
    fp32 statistics and its normalized output; the attention kernel keeps q, k, v, its output and the fp32
    log-sum-exp (no s x s matrix, and its dropout is drawn inside the kernel: no mask); selective recompute
    (Megatron's default granularity) recomputes the attention core: its log-sum-exp is not kept.
    LLaMA-style layer (RMSNorm, SwiGLU, no bias): RMSNorm keeps one fp32 1/rms per token; fc1's gate+up output
    is kept by SwiGLU, SwiGLU's output by fc2. GPT layer (LayerNorm, GELU MLP with biases: Megatron's default
    GPT): LayerNorm keeps fp32 mean and 1/sigma per token; fc1 runs without its bias (skip_bias_add) and the
    fused bias-GELU (core/fusions/fused_bias_gelu.py) keeps fc1's output, fc2 keeps GELU's output.
    hidden_dropout > 0 (Megatron's --hidden-dropout, 0.1 by default for GPT): the fused bias-dropout-add after the
    attention and after the MLP (core/fusions/fused_bias_dropout.py) each keep a 1-byte mask per element of
    the residual stream (Korthikanti's sbh terms), replicated over tp unless sequence parallel.
    attention="eager": Megatron's unfused core attention (its default before --use-flash-attn; megatron/model/
    transformer.py CoreAttention with FusedScaleMaskSoftmax) keeps the 16-bit softmax output, a x s^2 x b x 2
    bytes, and with attention_dropout > 0 its 1-byte mask and the 16-bit dropped-out probabilities that the
    attention over values reads: Korthikanti's 5as^2b (seq_len is s; tokens = s x b).
    moe: the MLP half is Megatron-Core's MoE block (megatron_moe_block), its experts taking `routed_rows` rows
    on one GPU of the tp group, their widths split over etp (tp by default)."""
    moe = flag("moe", moe)
    aux_loss = flag("aux_loss", aux_loss)
    h, q, kv, a, f = model.hidden_size, model.q_size, model.kv_size, model.num_heads, model.intermediate_size
    gated = model.mlp == "gated"
    stats, stat_why = (4, "the norm's fp32 1/rms per token") if model.norm == "rmsnorm" else (
        8, "the LayerNorm's fp32 mean and 1/sigma per token")
    led = Ledger()
    for half, targets in (("attn_norm", "QKV"),) + ((("mlp_norm", "fc1"),) if not moe else ()):
        if half == "mlp_norm":
            led.split = len(led.items)
        led.add(f"{half}.input", 2 * h * tokens, f"the layer norm's 16-bit input, kept by TE's LayerNormLinear ({targets})")
        led.add(f"{half}.rsigma", stats * tokens, stat_why)
        led.add(f"{half}.out", 2 * h * tokens, f"the normalized output, kept for {targets}'s weight gradient")
        if half == "attn_norm":
            unfused = attention == "eager"
            kept_by = "QK^T and the attention over values" if unfused else "flash attention"
            if model.qk_norm:  # --qk-layernorm: TENorm over each head of the query and the key, before the rotation
                for name, width, heads in (("q", q, a), ("k", kv, model.num_kv_heads)):
                    led.add(f"attn.{name}_norm.input", 2 * width * tokens,
                            f"the {'query' if name == 'q' else 'key'} heads' 16-bit input, kept by the {name} norm")
                    led.add(f"attn.{name}_norm.rsigma", stats * heads * tokens,
                            f"the {name} norm's fp32 statistics per head and token")
            led.add("core_attn.qkv", 2 * (q + 2 * kv) * tokens,
                    f"rotated query, key and value, kept by {kept_by}" if model.position == "rope"
                    else f"query, key and value, kept by {kept_by}")
            led.add("core_attn.out", 2 * q * tokens, "the attention output (also linear_proj's input)")
            if recompute == "selective":
                pass  # the attention core is recomputed: nothing of it is kept (Korthikanti et al. 2022, Sec. 5)
            elif not unfused:
                led.add("core_attn.softmax_lse", 4 * a * tokens, "fp32 row log-sum-exp of the fused kernel")
            else:
                scores = a * seq_len * tokens  # a x s^2 x b
                led.add("core_attn.probs", 2 * scores, "the 16-bit softmax output (a x s^2 x b), kept by its backward")
                if attention_dropout:
                    led.add("core_attn.dropout_mask", scores, "attention dropout's 1-byte mask")
                    led.add("core_attn.dropped_probs", 2 * scores,
                            "the dropped-out probabilities, kept by the attention over values")
            if hidden_dropout:
                led.add("residual.attn_dropout_mask", h * tokens, "bias-dropout-add's 1-byte mask after linear_proj")
    if moe:
        led.split = len(led.items)
        megatron_moe_block(led, model, tokens, routed_rows, tp, etp or tp, stats, stat_why, aux_loss)
    elif gated:
        led.add("mlp.fc1_out", 2 * 2 * f * tokens, "fc1's output (gate and up), kept by SwiGLU")
        led.add("mlp.swiglu_out", 2 * f * tokens, "SwiGLU's output, kept by fc2")
    else:
        led.add("mlp.fc1_out", 2 * f * tokens, "fc1's output before its bias, kept by the fused bias-GELU")
        led.add("mlp.gelu_out", 2 * f * tokens, "GELU's output, kept by fc2")
    if hidden_dropout:
        led.add("residual.mlp_dropout_mask", h * tokens, "bias-dropout-add's 1-byte mask after fc2")
    return led


def megatron_moe_block(led: Ledger, model: Model, T: int, S: int, tp: int, etp: int, stats: int, stat_why: str,
                       aux_loss: bool) -> None:
    """Megatron-Core's MoE block with Transformer Engine's grouped GEMM and the all-to-all dispatcher
    (megatron/core/transformer/moe/: router.py, moe_utils.py, token_dispatcher.py, experts.py TEGroupedMLP), bytes
    for T tokens before the tensor-parallel split: the caller divides every entry by tp. The pre-MLP norm is a
    separate TENorm (the router and the experts both read it): it keeps its input and statistics, its output is
    kept by the router's gating linear (and the shared expert's fc1). The router keeps the top-k indices, the
    softmax over the top-k and, with the load-balancing loss, the fp32 softmax over all E experts; the dispatcher
    holds the T x E probabilities and routing map until the layer's next forward; the unfused permute keeps its
    int64 sort indices (T x k) and the argsort buffer (T x E) its probability lookup slices. The experts see S rows
    on one GPU (terms.routed_rows): after the all-to-all over ep the dispatcher all-gathers the routed rows over the
    expert tensor-parallel group of etp GPUs (tp by default; token_dispatcher.py dispatch_postprocess), so their
    input is S x h on every GPU of it (entered as S x h x tp here), while fc1 and fc2 split their widths over etp
    (entered x tp / etp); WeightedSwiGLU keeps fc1's output and the rows' probabilities, fc2 its input
    (the probabilities are applied before fc2, so its output is not kept). A shared expert keeps its SwiGLU
    input and fc2's input, like a dense MLP of its width."""
    h, E, k, Ie = model.hidden_size, model.num_experts, model.num_experts_per_tok, model.moe_intermediate_size
    led.add("mlp_norm.input", 2 * h * T, "the pre-MLP norm's 16-bit input, kept by TENorm")
    led.add("mlp_norm.rsigma", stats * T, stat_why)
    led.add("mlp_norm.out", 2 * h * T, "the normalized output, kept by the router's gating linear")
    led.add("moe.router.topk_index", 8 * k * T, "top-k expert indices (int64), kept to scatter the top-k gradient")
    led.add("moe.router.topk_probs", 4 * k * T, "the fp32 softmax over the top-k logits, kept for its backward")
    if aux_loss:
        led.add("moe.router.aux_scores", 4 * E * T, f"the load-balancing loss's fp32 softmax over all {E} experts")
    led.add("moe.dispatcher.probs_map", 3 * E * T, "the dispatcher's T x E probabilities (16-bit) and routing map "
            "(bool), held until the layer's next forward")
    led.add("moe.permute.indices", 8 * (k + E) * T, "the permute's int64 sort indices (T x k) and the argsort "
            "buffer (T x E) its probability lookup keeps")
    led.add("moe.experts.input", 2 * h * S * tp, "the routed rows gathered over the expert tensor-parallel group "
            "(S x h on each GPU of it), kept by fc1's grouped GEMM")
    led.add("moe.experts.probs", 2 * S * tp, "each routed row's probability, kept by WeightedSwiGLU")
    led.add("moe.experts.fc1_out", 2 * 2 * Ie * S * tp // etp, "fc1's output (S x 2I, split over etp), kept by "
            "WeightedSwiGLU")
    led.add("moe.experts.fc2_in", 2 * Ie * S * tp // etp, "WeightedSwiGLU's output (S x I, split over etp), kept by fc2")
    if model.num_shared_experts:
        Is = model.shared_expert_intermediate_size
        led.add("moe.shared.fc1_out", 2 * 2 * Is * T, "the shared expert's fc1 output (gate and up), kept by SwiGLU")
        led.add("moe.shared.fc2_in", 2 * Is * T, "the shared expert's SwiGLU output, kept by its fc2")


# --- the newer families' parts of a layer ------------------------------------------------------
# What a family's layers do beyond the Model's fields (fp32 norms, its router, Llama 4's experts) is in its record,
# memlib/models/families.py (transformers 5.24 modeling_<family>.py).


def megatron_attention(model: Model) -> bool:
    """Attention blocks Megatron-Core's fused ledger (megatron_layer_ledger) covers: LLaMA's, also with per-head q/k
    norms (--qk-layernorm: a TENorm on each query and key head, as Qwen3 and Qwen3-MoE have)."""
    return model.qk_norm in ("", "head") and not (
        model.fused_qkv or model.is_mla or model.attention_sinks or model.attn_logit_softcap
        or model.norm_layout != "pre" or family_of(model).qk_l2_norm)


def _llama_attention(model: Model) -> bool:
    """Is the attention block the LLaMA layer's (q/k/v/o projections, nothing around them)?"""
    return not (model.qk_norm or model.fused_qkv or model.is_mla or model.attention_sinks
                or model.attn_logit_softcap or model.norm_layout != "pre" or family_of(model).qk_l2_norm)


def _explicit_mask(model: Model, layer_type: str, s: int) -> bool:
    """Does transformers give this layer's sdpa call an explicit (b, 1, s, s) mask? A sliding-window or
    chunked layer does once the sequence reaches its window (masking_utils._ignore_causal_mask_sdpa:
    `kv_length >= local_attention_size` keeps the mask); a full layer never does (is_causal instead)."""
    if layer_type == "sliding_attention":
        return s >= model.sliding_window
    if layer_type == "chunked_attention":
        return s >= model.attention_chunk_size
    return False


def needs_eager(model: Model) -> str:
    """Why transformers runs this model's attention eagerly whatever is asked ('' if it need not): Gemma 2's
    attention soft-capping (sdpa_attention_forward refuses a softcap) and gpt-oss's sinks (GptOss does not
    support sdpa in transformers 5.24)."""
    if model.attn_logit_softcap:
        return "attention logit soft-capping (Gemma 2) needs eager attention in transformers"
    if model.attention_sinks:
        return "attention sinks (gpt-oss) need eager attention in transformers"
    return ""


def _family_attention(led: Ledger, model: Model, num: Numerics, tokens: int, b: int, s: int, *, attention: str,
                      full: bool, layer_type: str, masked: bool, consumers) -> None:
    """The attention block's saved tensors after the pre-norm, for every family (the LLaMA layer included, when a
    sliding window masks it): q/k norms, fused qkv, MLA, the sdpa kernel's or eager attention's tensors."""
    q, kv, a, h = model.q_size, model.kv_size, model.num_heads, model.hidden_size
    c = num.compute
    eager = attention == "eager" or bool(needs_eager(model))
    fp32_norm = family_of(model).fp32_norms
    if model.is_mla:  # DeepSeek-V2 Sec. 2.1; HF DeepseekV3Attention.forward
        _mla_attention(led, model, num, tokens, b, s, eager=eager, full=full, consumers=consumers)
        return
    if model.fused_qkv:  # Phi-3: q, k, v are views of one qkv_proj output, kept whole by the value's use
        led.add("attn.qkv_out", c * (q + 2 * kv) * tokens, "qkv_proj's output: the value is a view of it (Phi-3)")
    if model.qk_norm in ("head", "full"):
        width = 4 if fp32_norm else c
        per = "per head" if model.qk_norm == "head" else "over all heads"
        for name, n in (("q_norm", q), ("k_norm", kv)):
            led.add(f"attn.{name}.x_fp32", 4 * n * tokens, f"{name} (RMSNorm {per}) keeps its fp32 input")
            if full:
                led.add(f"attn.{name}.normalized", width * n * tokens, f"{name}'s normalized output, for its weight")
    elif family_of(model).qk_l2_norm and layer_type == "chunked_attention":
        led.add("attn.l2_norm.x_fp32", 4 * (q + kv) * tokens, "Llama 4's L2 q/k norm (rope layers) keeps its fp32 input")
    if eager:
        kv_kept = q  # repeat_kv copies K and V to all heads
        led.add("eager.q", c * q * tokens, "query, kept by Q K^T")
        led.add("eager.k", c * kv_kept * tokens, "key repeated to all heads, kept by Q K^T")
        if model.attn_logit_softcap:  # Gemma 2: scores / cap, tanh, * cap
            led.add("eager.softcap_tanh", c * a * s * s * b, "tanh of the scaled scores (attention soft-capping)")
        if model.attention_sinks:  # gpt-oss: a learned sink logit per head joins the softmax
            led.add("eager.max_index", 8 * a * tokens, "argmax indices of the row max subtracted before softmax")
            led.add("eager.probs_with_sink", c * a * s * (s + 1) * b,
                    "softmax over s + 1 logits (the sink's), in the logits' dtype, kept by softmax and P V")
        else:
            led.add("eager.probs_fp32", 4 * a * s * s * b, "softmax output in fp32 (b*a*s*s), kept by softmax")
            if c != 4:
                led.add("eager.probs", c * a * s * s * b, "probabilities cast back to 16-bit, kept by P V")
        led.add("eager.v", c * kv_kept * tokens, "value repeated to all heads, kept by P V")
        if consumers(c, ("o_proj",))[0]:
            led.add("eager.out", c * q * tokens, "transposed contiguous attention output, o_proj's input")
        return
    kv_kept = q if masked else kv  # with an explicit mask transformers repeats K/V (use_gqa_in_sdpa)
    if masked:
        led.add("sdpa.mask", c * b * s * s, f"the {layer_type.split('_')[0]} layer's (b, 1, s, s) mask as the kernel's "
                "float bias, kept for its backward")
    led.add("sdpa.q", c * q * tokens, "rotated query, kept by the fused attention kernel")
    led.add("sdpa.k", c * kv_kept * tokens, "rotated key" + (", repeated to all heads" if kv_kept != kv else ""))
    if not model.fused_qkv:
        led.add("sdpa.v", c * kv_kept * tokens, "value" + (", repeated to all heads" if kv_kept != kv else ""))
    elif kv_kept != kv:
        led.add("sdpa.v", c * kv_kept * tokens, "value repeated to all heads")
    led.add("sdpa.out", c * q * tokens, "attention output (also o_proj's input)")
    led.add("sdpa.logsumexp", 4 * a * tokens, "fp32 row log-sum-exp, instead of the s x s matrix")
    if consumers(c, ("o_proj",))[0] and model.fused_qkv:
        led.add("attn.o_proj_input", c * q * tokens, "o_proj's input, a contiguous copy of the attention output")


def _mla_attention(led: Ledger, model: Model, num: Numerics, tokens: int, b: int, s: int, *, eager: bool, full: bool,
                   consumers) -> None:
    """Multi-head latent attention (DeepSeek-V2 Sec. 2.1; HF DeepseekV3Attention.forward): the query/KV latents and
    their norms, the per-head key and value rebuilt from the latent, and the attention kernel's tensors."""
    a, c = model.num_heads, num.compute
    rq, rkv, nope, rope, v = (model.q_lora_rank, model.kv_lora_rank, model.qk_nope_head_dim,
                              model.qk_rope_head_dim, model.v_head_dim)
    if rq:
        led.add("mla.q_a_norm.x_fp32", 4 * rq * tokens, "q_a_layernorm keeps its fp32 input (q_lora_rank wide)")
        if full:
            led.add("mla.q_a_norm.normalized", c * rq * tokens, "q_a_layernorm's normalized query latent")
        led.add("mla.q_latent", c * rq * tokens, "the normed query latent, q_b_proj's input")
    led.add("mla.kv_a_norm.x_fp32", 4 * rkv * tokens, "kv_a_layernorm keeps its fp32 input (kv_lora_rank wide)")
    if full:
        led.add("mla.kv_a_norm.normalized", c * rkv * tokens, "kv_a_layernorm's normalized KV latent")
    led.add("mla.kv_latent", c * rkv * tokens, "the normed KV latent, kv_b_proj's input")
    qk = a * (nope + rope)
    led.add("mla.q", c * qk * tokens, "query rebuilt from its nope and rope parts (torch.cat), kept by attention")
    led.add("mla.k", c * qk * tokens, "key per head: kv_b's nope part and the shared rope key copied in")
    led.add("mla.kv_b_out", c * a * (nope + v) * tokens,
            "kv_b_proj's output (k_nope and value of every head); the value is a view of it, so it stays whole")
    if eager:
        led.add("eager.probs_fp32", 4 * a * s * s * b, "softmax output in fp32 (b*a*s*s), kept by softmax")
        if c != 4:
            led.add("eager.probs", c * a * s * s * b, "probabilities cast back to 16-bit, kept by P V")
        if consumers(c, ("o_proj",))[0]:
            led.add("eager.out", c * a * v * tokens, "attention output, o_proj's input")
    else:
        # CUDA's sdpa runs the memory-efficient kernel: flash needs equal q/k/v head dims and MLA's value
        # head is narrower (pytorch sdp_utils.cpp check_head_dim_size_flash)
        led.add("sdpa.out", c * a * v * tokens, "attention output (also o_proj's input)")
        led.add("sdpa.logsumexp", 4 * a * tokens, "fp32 row log-sum-exp of the memory-efficient kernel")
        consumers(c, ("o_proj",))  # o_proj's input is the kernel's saved output


def _mlp_block(led: Ledger, norm, consumers, model: Model, num: Numerics, tokens: int, cm: int, *, moe: bool,
               routed_rows: int | None, full: bool) -> None:
    """The MLP half: its pre-norm, then the dense SwiGLU/GeGLU MLP (LLaMA, Phi-3's fused gate_up: the same
    bytes) or the MoE block; Gemma's and OLMo 2's norm on the MLP output."""
    h, I = model.hidden_size, model.intermediate_size
    c = num.compute
    led.split = len(led.items)
    if model.norm_layout == "post":  # OLMo 2: gate/up keep the residual stream itself
        n = len(led.items)
        direct, base_casts = consumers(num.residual, ("gate_proj", "up_proj"))
        if base_casts:
            led.items.insert(n, ("residual.mlp_input_casts", 2 * h * tokens * base_casts,
                                 f"{base_casts} bf16 cast(s) of the residual, one per gate/up projection"))
        elif direct:
            led.items.insert(n, ("residual.mlp_input", num.residual * h * tokens, "the residual stream, kept by gate/up"))
    else:
        norm("mlp_norm", ("gate_proj", "up_proj"))
    if moe:
        _moe_block(led, model, num, tokens, routed_rows or tokens * (
            model.num_experts if family_of(model).every_expert else model.num_experts_per_tok))
    else:
        act = {"silu": "SiLU", "gelu_tanh": "GELU-tanh", "gelu": "GELU"}[model.activation]
        what = "gate_up_proj's output (gate and up are views of it)" if model.fused_gate_up else "gate_proj output"
        led.add("mlp.gate", cm * I * tokens, f"{what}, kept by {act}")
        led.add("mlp.silu", cm * I * tokens, f"{act} output, kept by the product")
        led.add("mlp.up", cm * I * tokens, "up_proj output, kept by the product")
        n = len(led.items)
        if consumers(cm, ("down_proj",))[0]:
            led.items.insert(n, ("mlp.product", cm * I * tokens, f"{act}(gate)*up, down_proj's input"))
    if model.norm_layout in ("sandwich", "post"):
        norm("mlp_norm_post", ())


def _moe_block(led: Ledger, model: Model, num: Numerics, T: int, S: int) -> None:
    """A MoE block's saved tensors for T tokens routed to S = T x top-k (token, expert) rows (transformers 5.24,
    integrations/moe.py grouped_mm_experts_forward, the default experts implementation: tokens sorted by expert,
    every buffer S rows whatever the routing; Llama 4's Llama4TextExperts instead runs every token through every
    expert: T x E rows). Its input (the pre-norm's output) is counted with the norm."""
    h, E, k, Ie = model.hidden_size, model.num_experts, model.num_experts_per_tok, model.moe_intermediate_size
    c = num.compute
    fam = family_of(model)  # what its router and experts keep (memlib/models/families.py)
    # --- router ---
    if fam.router_in_fp32:  # DeepseekV3TopkRouter: F.linear(hidden.type(float32), weight.type(float32))
        led.add("moe.router.input_fp32", 4 * h * T, "the router's fp32 copy of its input (DeepSeek routes in fp32)")
        led.add("moe.router.weight_fp32", 4 * E * h, "the router weight's fp32 copy (per layer, not per token)")
    score = fam.router_scores
    if score:
        led.add("moe.router.scores", 4 * E * T, f"router {score} over all {E} experts in fp32 (T x E), kept for its "
                "backward")
    led.add("moe.router.topk_index", 8 * k * T, "top-k expert indices (int64), kept to scatter the top-k gradient")
    if fam.topk_softmax:
        led.add("moe.router.topk_softmax", c * k * T, "softmax over the top-k logits (gpt-oss), kept")
    if fam.topk_renormalized:
        led.add("moe.router.topk_norm", 4 * T * (1 + k), "the top-k weights renormalized to sum 1: the sum and quotient")
    if fam.every_expert:  # Llama4TextMoe: every token through every expert, scaled by its router score;
        # S = T x E rows (T x E / ep on one GPU of an expert-parallel group)
        led.add("moe.scores", c * S, "the router scores, one per (expert, token), kept by the input scaling")
        led.add("moe.repeated_input", c * S * h, "the input repeated E times (hidden.repeat(E, 1)), kept by the "
                "scaling")
        led.add("moe.experts.input", c * S * h, "the scaled input, E x T rows, kept by the experts' bmm")
        led.add("moe.experts.gate_up", c * S * 2 * Ie, "gate_up's output (E x T x 2I), kept by SiLU (a view)")
        led.add("moe.experts.silu", c * S * Ie, "SiLU output, kept by the product")
        led.add("moe.experts.product", c * S * Ie, "SiLU(gate)*up, the down bmm's input")
    else:
        gpt_oss = fam.clamped_swiglu
        index = 3 + (1 if model.expert_bias else 0)
        led.add("moe.experts.indices", 8 * index * S, f"{index} int64 index vectors of S = T x top-k rows (the sort "
                "permutation for the weights and the hidden states" + (", the bias gather" if model.expert_bias else "")
                + ", the inverse permutation)")
        led.add("moe.experts.input", c * S * h, "the hidden states gathered in expert order (S x h), grouped_mm's input")
        led.add("moe.experts.gate_up", c * S * 2 * Ie, "gate_up's output (S x 2I), kept whole by the activation")
        if gpt_oss:  # clamp, gate * sigmoid(gate * alpha), (up + 1) * glu
            led.add("moe.experts.swiglu_clamped", 4 * c * S * Ie, "gpt-oss's clamped SwiGLU: the clamped gate, its "
                    "sigmoid, their product and up + 1 (S x I each)")
        else:
            led.add("moe.experts.silu", c * S * Ie, "SiLU output, kept by the product")
        led.add("moe.experts.product", c * S * Ie, "the gated product, the down grouped_mm's input")
        weights = 4 if fam.fp32_routing_weights else c
        led.add("moe.experts.routing_weights", weights * S, "each row's routing weight, kept by the weighting")
        led.add("moe.experts.down_out", c * S * h, "the down projection's output (S x h), kept by the routing-weight "
                "multiply")
    if model.num_shared_experts:
        Is = model.shared_expert_intermediate_size
        led.add("moe.shared.gate", c * Is * T, "shared expert's gate output, kept by SiLU")
        led.add("moe.shared.silu", c * Is * T, "shared expert's SiLU output")
        led.add("moe.shared.up", c * Is * T, "shared expert's up output")
        led.add("moe.shared.product", c * Is * T, "shared expert's product, its down_proj's input")


def frozen_input_savings(model: Model, tokens: int, adapters: frozenset, lora_dropout: float) -> int:
    """What layer 0 does not keep when its input needs no gradient (frozen embeddings, LoRA/QLoRA): its first
    RMSNorm's fp32 input, and the dropout masks of the q/k/v adapters (autograd records no dropout node for an
    input that requires no grad)."""
    h = model.hidden_size
    masks = sum(1 for t in ("q_proj", "k_proj", "v_proj", "qkv_proj") if t in adapters) if lora_dropout > 0 else 0
    return (4 + masks) * h * tokens


def selective_saved_bytes(model: Model, num: Numerics, tokens: int, b: int, s: int, *, attention: str,
                          adapters: frozenset = frozenset(), lora_rank: int = 0,
                          adapter_bytes: int = 2) -> tuple[int, int]:
    """torchtitan's op-level selective activation checkpointing of one decoder layer
    (torchtitan distributed/activation_checkpoint.py SelectiveAC, pytorch/torchtitan@b5bcd76): the outputs of
    compute-intensive ops are saved (torch._functorch.partitioners' list: mm, bmm, the sdpa kernels), except
    every second mm of the layer; everything else is recomputed in the backward.

    Returns (bytes saved per layer besides the layer's input, of which shared with the layer's own ledger when it
    is rebuilt: sdpa's output and log-sum-exp, an unmodified v/gate/up projection output, lora_A outputs).
    The mm order is the forward's: q, k, v, o, gate, up, down, each followed by its adapter's lora_A and lora_B.
    """
    h, I, q, kv, a = model.hidden_size, model.intermediate_size, model.q_size, model.kv_size, model.num_heads
    c = num.compute
    ad = 2 if num.autocast else adapter_bytes
    saved = shared = 0
    count = 0

    def mm(out_bytes: int, is_shared: bool) -> None:
        nonlocal saved, shared, count
        count += 1
        if count % 2:  # the 1st, 3rd, ... mm of the layer: MUST_SAVE
            saved += out_bytes
            shared += out_bytes if is_shared else 0

    def projection(name: str, width: int, shared_when_plain: bool) -> None:
        mm(c * width * tokens, shared_when_plain and name not in adapters)
        if name in adapters:
            mm(ad * lora_rank * tokens, True)  # lora_A's output, kept by lora_B anyway
            mm(ad * width * tokens, False)

    projection("q_proj", q, False)
    projection("k_proj", kv, False)
    projection("v_proj", kv, attention == "sdpa" or kv == q)
    if attention == "sdpa":  # the fused kernel's outputs: the attention output and the fp32 log-sum-exp
        saved += c * q * tokens + 4 * a * tokens
        shared += c * q * tokens + 4 * a * tokens
    else:  # eager: two bmm (always saved): the s x s scores and P @ V
        saved += c * a * s * s * b + c * q * tokens
    projection("o_proj", h, False)
    projection("gate_proj", I, True)
    projection("up_proj", I, True)
    projection("down_proj", h, False)
    return saved, shared
