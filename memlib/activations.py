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
  and qwen2 models.

Vocabulary: h hidden size, I MLP intermediate size, a query heads, q = a*head_dim (query
width), kv = kv_heads*head_dim (key/value width), s sequence length, b micro-batch.
r is the byte width of the residual stream (fp32 under AMP, because the embedding output
is fp32), c the byte width of matmul outputs (2 under bf16/fp16 and AMP, 4 in fp32).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memlib.models import Model


def korthikanti_layer_bytes(s: int, b: int, h: int, a: int, t: int = 1, sequence_parallel: bool = False,
                            recompute: str = "none") -> int:
    """Activation bytes of one GPT layer, 16-bit activations with dropout masks (Korthikanti et al. 2022).

    none:      s*b*h*(10 + 24/t + 5*a*s/(h*t))   (t=1: 34 + 5as/h)     Sec. 4.2.2, eq. (2)
    + SP:      s*b*h*(34/t + 5*a*s/(h*t))                              Sec. 4.2.3
    selective: drops the 5as/h attention term (softmax, its dropout mask and output)   Sec. 5
    full:      s*b*h*2 (only the layer input is kept)                  Sec. 5
    """
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
                       gqa_native: bool = True) -> Ledger:
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
    """
    h, I, q, kv, a = model.hidden_size, model.intermediate_size, model.q_size, model.kv_size, model.num_heads
    r, c = num.residual, num.compute
    cm = mlp_bytes or c
    full = trainable_linears
    keeps_input = full or base_saves_input
    led = Ledger()

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

    def norm(prefix: str, targets: tuple[str, ...]) -> None:
        # RMSNorm: x32 = x.float(); x32 * rsqrt(mean(x32^2)+eps) -> .to(x.dtype) -> weight * y.
        # pow() keeps x32 (a new fp32 copy under bf16, the fp32 residual itself under AMP/fp32).
        led.add(f"{prefix}.x_fp32", 4 * h * tokens, "RMSNorm keeps its fp32 input for the backward of pow/mul")
        if full:  # weight * y keeps y for the weight's gradient (norm weights frozen under LoRA)
            led.add(f"{prefix}.normalized", r * h * tokens, "y = x*rsqrt(var+eps), kept for the norm weight grad")
        n = len(led.items)
        direct, base_casts = consumers(r, targets)
        if base_casts:  # each matmul under autocast casts the fp32 output separately and keeps its copy
            led.items.insert(n, (f"{prefix}.out_casts", 2 * h * tokens * base_casts,
                                 f"{base_casts} bf16 cast(s) of the norm output, one per {'/'.join(targets)}"))
            n += 1
        if direct:
            led.items.insert(n, (f"{prefix}.out", r * h * tokens, f"norm output, input of {'/'.join(targets)}"))

    # --- attention block -----------------------------------------------------------------
    norm("attn_norm", ("q_proj", "k_proj", "v_proj"))
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

    # --- MLP block ------------------------------------------------------------------------
    led.split = len(led.items)
    norm("mlp_norm", ("gate_proj", "up_proj"))
    led.add("mlp.gate", cm * I * tokens, "gate_proj output, kept by SiLU")
    led.add("mlp.silu", cm * I * tokens, "SiLU output, kept by the product")
    led.add("mlp.up", cm * I * tokens, "up_proj output, kept by the product")
    n = len(led.items)
    if consumers(cm, ("down_proj",))[0]:
        led.items.insert(n, ("mlp.product", cm * I * tokens, "SiLU(gate)*up, down_proj's input"))
    return led


def frozen_input_savings(model: Model, tokens: int, adapters: frozenset, lora_dropout: float) -> int:
    """What layer 0 does not keep when its input needs no gradient (frozen embeddings, LoRA/QLoRA): its first
    RMSNorm's fp32 input, and the dropout masks of the q/k/v adapters (autograd records no dropout node for an
    input that requires no grad)."""
    h = model.hidden_size
    masks = sum(1 for t in ("q_proj", "k_proj", "v_proj") if t in adapters) if lora_dropout > 0 else 0
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
