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


def llama_layer_ledger(model: Model, num: Numerics, tokens: int, b: int, s: int, *, attention: str,
                       trainable_linears: bool, adapters: frozenset = frozenset(), lora_rank: int = 0,
                       adapter_bytes: int = 2, gqa_native: bool = True) -> Ledger:
    """Saved tensors of one LLaMA-style decoder layer (HF LlamaDecoderLayer), bytes for `tokens` = b*s.

    trainable_linears: base projections get gradients (full fine-tuning). In LoRA they are
    frozen, so a projection keeps no input for a weight gradient; only an adapter's lora_A
    keeps its input, and lora_B keeps the r-wide output of lora_A.
    """
    h, I, q, kv, a = model.hidden_size, model.intermediate_size, model.q_size, model.kv_size, model.num_heads
    r, c = num.residual, num.compute
    full = trainable_linears
    led = Ledger()

    def norm(prefix: str, consumers: tuple[str, ...]) -> None:
        # RMSNorm: x32 = x.float(); x32 * rsqrt(mean(x32^2)+eps) -> .to(x.dtype) -> weight * y.
        # pow() keeps x32 (a new fp32 copy under bf16, the fp32 residual itself under AMP/fp32).
        led.add(f"{prefix}.x_fp32", 4 * h * tokens, "RMSNorm keeps its fp32 input for the backward of pow/mul")
        if full:  # weight * y keeps y for the weight's gradient (norm weights frozen under LoRA)
            led.add(f"{prefix}.normalized", r * h * tokens, "y = x*rsqrt(var+eps), kept for the norm weight grad")
        savers = [t for t in consumers if full or t in adapters]
        if not savers:
            return
        if num.autocast:  # each matmul under autocast casts the fp32 output separately and keeps its copy
            led.add(f"{prefix}.out_casts", 2 * h * tokens * len(savers),
                    f"{len(savers)} bf16 cast(s) of the norm output, one per {'/'.join(savers)}")
        else:
            led.add(f"{prefix}.out", r * h * tokens, f"norm output, input of {'/'.join(savers)}")

    def adapter(target: str, fan_in: int, input_already_saved: bool) -> None:
        if target not in adapters:
            return
        if num.autocast and not input_already_saved:
            pass  # counted by the norm's per-consumer casts
        elif num.autocast:  # peft upcasts a bf16 input to the fp32 adapter dtype, autocast casts it back
            led.add(f"lora.{target}.input_cast", 2 * fan_in * tokens, "lora_A's own bf16 copy of its input")
        led.add(f"lora.{target}.A_out", (2 if num.autocast else adapter_bytes) * lora_rank * tokens,
                "lora_A output, kept by lora_B")

    # --- attention block -----------------------------------------------------------------
    norm("attn_norm", ("q_proj", "k_proj", "v_proj"))
    for t in ("q_proj", "k_proj", "v_proj"):
        adapter(t, h, input_already_saved=False)
    kv_kept = kv if (attention == "sdpa" and gqa_native) else q  # repeat_kv copies K and V to all heads
    if attention == "sdpa":
        led.add("sdpa.q", c * q * tokens, "rotated query, kept by the fused attention kernel")
        led.add("sdpa.k", c * kv_kept * tokens, "rotated key" + ("" if kv_kept == kv else ", repeated to all heads"))
        led.add("sdpa.v", c * kv_kept * tokens, "value" + ("" if kv_kept == kv else ", repeated to all heads"))
        led.add("sdpa.out", c * q * tokens, "attention output (also o_proj's input)")
        led.add("sdpa.logsumexp", 4 * a * tokens, "fp32 row log-sum-exp, instead of the s x s matrix")
    else:
        led.add("eager.q", c * q * tokens, "query, kept by Q K^T")
        led.add("eager.k", c * kv_kept * tokens, "key repeated to all heads, kept by Q K^T")
        led.add("eager.probs_fp32", 4 * a * s * s * b, "softmax output in fp32 (b*a*s*s), kept by softmax")
        if c != 4:
            led.add("eager.probs", c * a * s * s * b, "probabilities cast back to 16-bit, kept by P V")
        led.add("eager.v", c * kv_kept * tokens, "value repeated to all heads, kept by P V")
        if full or "o_proj" in adapters:
            led.add("eager.out", c * q * tokens, "transposed contiguous attention output, o_proj's input")
    adapter("o_proj", q, input_already_saved=True)

    # --- MLP block ------------------------------------------------------------------------
    led.split = len(led.items)
    norm("mlp_norm", ("gate_proj", "up_proj"))
    for t in ("gate_proj", "up_proj"):
        adapter(t, h, input_already_saved=False)
    led.add("mlp.gate", c * I * tokens, "gate_proj output, kept by SiLU")
    led.add("mlp.silu", c * I * tokens, "SiLU output, kept by the product")
    led.add("mlp.up", c * I * tokens, "up_proj output, kept by the product")
    if full or ("down_proj" in adapters and not num.autocast):
        led.add("mlp.product", c * I * tokens, "SiLU(gate)*up, down_proj's input")
    adapter("down_proj", I, input_already_saved=True)
    return led
