"""estimate_training: peak memory of one training step on one GPU.

The peak is the maximum over the moments of a step, not the sum of everything ever
allocated. Steady state (step 2 and later) of an ordinary loop:

    out = model(input_ids, labels=input_ids)   # 'out' of the previous step is alive until here
    out.loss.backward()
    optimizer.step(); optimizer.zero_grad(set_to_none=True)

moments modelled (each a breakdown of what is alive):
  forward    at the loss: all saved activations, the logits and the fp32 log-softmax,
             the previous step's logits, no gradients (they were set to None)
  backward   max of (a) the top: activations still alive plus the loss gradients over the
             vocabulary, (b) the top decoder layer, (c) the bottom: all gradients plus the
             last layer's backward temporaries
  optimizer  parameters + gradients + states + the optimizer's own temporaries
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from memlib import activations as act
from memlib import lora as lora_mod
from memlib import optimizers as opt
from memlib._checks import choice, positive_int
from memlib.models import Model, Tensor, get_model
from memlib.units import fmt_bytes, fmt_count

PRECISIONS = ("fp32", "bf16", "fp16", "bf16-mixed", "fp16-mixed")
FINETUNES = ("full", "lora", "qlora")
RECOMPUTES = ("none", "selective", "full")
ATTENTIONS = ("sdpa", "eager")
OFFLOADS = ("none",)

# Under AMP the weights are fp32 and every matmul reads a 16-bit copy; the embedding runs
# outside autocast, so the residual stream is fp32 too (torch.autocast op lists).
NUMERICS = {
    "fp32": act.Numerics(residual=4, compute=4, autocast=False),
    "bf16": act.Numerics(residual=2, compute=2, autocast=False),
    "fp16": act.Numerics(residual=2, compute=2, autocast=False),
    "bf16-mixed": act.Numerics(residual=4, compute=2, autocast=True),
    "fp16-mixed": act.Numerics(residual=4, compute=2, autocast=True),
}
PARAM_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "bf16-mixed": 4, "fp16-mixed": 4}

BREAKDOWN_KEYS = ("parameters", "gradients", "optimizer", "activations", "autocast_copies", "logits_and_loss",
                  "previous_output", "temporaries")


@dataclass(frozen=True)
class TrainingSetup:
    model: Model
    seq_len: int
    micro_batch: int
    precision: str
    optimizer: str
    finetune: str
    lora_rank: int
    lora_targets: tuple[str, ...]
    recompute: str
    attention: str
    zero_stage: int
    dp: int
    tp: int
    pp: int
    offload: str

    @property
    def tokens(self) -> int:
        return self.seq_len * self.micro_batch


@dataclass
class Moment:
    """What is alive at one moment of the step: bytes per category."""

    name: str
    where: str
    parts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.parts.values())


@dataclass
class Estimate:
    setup: TrainingSetup
    moments: list[Moment]
    counts: dict[str, int]
    layer: act.Ledger
    notes: list[str] = field(default_factory=list)

    @property
    def peak_moment(self) -> Moment:
        return max(self.moments, key=lambda m: m.total)

    @property
    def peak_bytes(self) -> int:
        """Allocated bytes at the peak, on one GPU."""
        return self.peak_moment.total

    @property
    def phase(self) -> str:
        """'forward', 'backward' or 'optimizer': where the peak happens."""
        return self.peak_moment.name

    @property
    def breakdown(self) -> dict[str, int]:
        """What is alive at the peak, by category (every BREAKDOWN_KEYS key present)."""
        parts = self.peak_moment.parts
        return {k: parts.get(k, 0) for k in BREAKDOWN_KEYS}

    @property
    def model_state_bytes(self) -> int:
        return self.counts["param_bytes"] + self.counts["grad_bytes"] + self.counts["optimizer_bytes"]

    def to_dict(self) -> dict:
        s = self.setup
        return {
            "model": s.model.name, "num_params": s.model.num_params, "trainable_params": self.counts["trainable"],
            "seq_len": s.seq_len, "micro_batch": s.micro_batch, "precision": s.precision,
            "optimizer": s.optimizer, "finetune": s.finetune, "recompute": s.recompute, "attention": s.attention,
            "peak_bytes": self.peak_bytes, "phase": self.phase, "breakdown": self.breakdown,
            "moments": {m.name: m.total for m in self.moments},
        }

    def explain(self) -> str:
        from memlib.explain import explain_training
        return explain_training(self)

    def __repr__(self) -> str:
        return (f"Estimate({self.setup.model.name}: peak {fmt_bytes(self.peak_bytes)} during {self.phase}; "
                + ", ".join(f"{k} {v / 1e9:.2f} GB" for k, v in self.breakdown.items() if v) + ")")


def _check_setup(model, seq_len, micro_batch, precision, optimizer, finetune, lora_rank, lora_targets,
                 recompute, attention, zero_stage, dp, tp, pp, offload) -> TrainingSetup:
    model = get_model(model) if isinstance(model, str) else model
    if not isinstance(model, Model):
        raise ValueError(f"model must be a catalog name or a memlib.Model, got {type(model).__name__}")
    seq_len = positive_int("seq_len", seq_len)
    micro_batch = positive_int("micro_batch", micro_batch)
    choice("precision", precision, PRECISIONS)
    choice("optimizer", optimizer, opt.OPTIMIZERS)
    choice("finetune", finetune, FINETUNES)
    choice("recompute", recompute, RECOMPUTES)
    choice("attention", attention, ATTENTIONS)
    zero_stage = positive_int("zero_stage", zero_stage, allow_zero=True)
    if zero_stage > 3:
        raise ValueError(f"zero_stage must be 0, 1, 2 or 3, got {zero_stage}")
    for name, v in (("dp", dp), ("tp", tp), ("pp", pp)):
        positive_int(name, v)
    if not isinstance(offload, str) or offload not in OFFLOADS:
        raise ValueError(f"offload {offload!r} is not modelled yet; accepted: {', '.join(map(repr, OFFLOADS))}")
    if tp > 1 or pp > 1 or (zero_stage > 0 and dp > 1):
        raise ValueError("tensor/pipeline parallelism and ZeRO sharding over dp > 1 are not modelled yet: "
                         "this estimate is for one GPU (dp copies of it hold the same bytes)")
    if seq_len > model.max_position_embeddings and model.position == "learned":
        raise ValueError(f"seq_len {seq_len} exceeds {model.name}'s learned position table "
                         f"({model.max_position_embeddings})")
    if finetune == "full":
        targets: tuple[str, ...] = ()
        lora_rank = 0
    else:
        if model.mlp != "gated":
            raise ValueError(f"LoRA/QLoRA estimates need a LLaMA-style model; {model.name} is {model.model_type}")
        targets = lora_mod.resolve_targets(model, lora_targets)
        lora_mod.lora_params(model, lora_rank, targets)  # validates the rank against each layer
        if finetune == "qlora" and precision in ("fp32",):
            raise ValueError("qlora computes in 16-bit; use precision 'bf16', 'fp16', 'bf16-mixed' or 'fp16-mixed'")
    return TrainingSetup(model, seq_len, micro_batch, precision, optimizer, finetune, lora_rank, targets,
                         recompute, attention, zero_stage, dp, tp, pp, offload)


def estimate_training(model, seq_len: int = 2048, micro_batch: int = 1, precision: str = "bf16-mixed",
                      optimizer: str = "adamw", finetune: str = "full", lora_rank: int = 16, lora_targets=None,
                      recompute: str = "none", attention: str = "sdpa", zero_stage: int = 0, dp: int = 1,
                      tp: int = 1, pp: int = 1, offload: str = "none") -> Estimate:
    """Peak memory of one training step on one GPU, with its breakdown and the phase of the peak.

    precision: "fp32" | "bf16" | "fp16" (params, grads and optimizer states all in that dtype)
               | "bf16-mixed" | "fp16-mixed" (fp32 params/grads/states, autocast compute).
    optimizer: "adamw" | "adamw-8bit" | "sgd" | "sgd-momentum" | "adafactor".
    finetune:  "full" | "lora" | "qlora" (lora_rank, lora_targets: names, or "all-linear"/"attention"/"qv").
    recompute: "none" | "selective" | "full";  attention: "sdpa" | "eager".
    zero_stage with dp=1 shards nothing (one GPU holds every shard) and changes nothing.
    """
    s = _check_setup(model, seq_len, micro_batch, precision, optimizer, finetune, lora_rank, lora_targets,
                     recompute, attention, zero_stage, dp, tp, pp, offload)
    if s.model.mlp != "gated":
        return _estimate_gpt(s)
    return _estimate_llama(s)


def _state_tensors(model: Model, s: TrainingSetup):
    """(Tensor, 2-D shape or None) for every trainable tensor."""
    if s.finetune == "full":
        out = []
        for t in model.tensors():
            shape = None
            if t.kind in ("linear", "embedding"):
                shape = (t.numel // model.hidden_size, model.hidden_size)
            out.append((t, shape))
        return out
    out = []
    for name in s.lora_targets:
        fan_in, fan_out = lora_mod.linear_shape(model, name)
        out.append((Tensor(f"{name}.lora_A", s.lora_rank * fan_in, model.num_layers), (s.lora_rank, fan_in)))
        out.append((Tensor(f"{name}.lora_B", fan_out * s.lora_rank, model.num_layers),
                    (fan_out, s.lora_rank)))
    return out


def _estimate_llama(s: TrainingSetup) -> Estimate:
    m = s.model
    num = NUMERICS[s.precision]
    b, seq, tok = s.micro_batch, s.seq_len, s.tokens
    h, V, L = m.hidden_size, m.vocab_size, m.num_layers
    pb = PARAM_BYTES[s.precision]
    c = num.compute
    notes: list[str] = []

    # --- model states -------------------------------------------------------------------
    tensors = _state_tensors(m, s)
    trainable = sum(t.numel * t.count for t, _ in tensors)
    if s.finetune == "full":
        param_bytes = m.num_params * pb
        adapter_bytes = 0
    else:
        adapter_bytes = trainable * pb
        if s.finetune == "lora":
            param_bytes = m.num_params * pb + adapter_bytes
        else:  # QLoRA: projections in NF4; embeddings, head and norms in 16-bit
            quantized = sum(t.numel * t.count for t in m.tensors() if t.kind == "linear")
            nf4 = sum(lora_mod.nf4_bytes(t.numel) * t.count for t in m.tensors() if t.kind == "linear")
            param_bytes = nf4 + (m.num_params - quantized) * 2 + adapter_bytes
            notes.append(f"QLoRA: {fmt_count(quantized)} projection weights in NF4 "
                         f"({lora_mod.NF4_BITS_PER_PARAM:.3f} bits each), the rest in 16-bit")
    grad_bytes = trainable * pb
    state_bytes = opt.state_bytes(s.optimizer, tensors, pb)
    largest_trainable = max(t.numel for t, _ in tensors)
    opt_tmp = opt.step_transient_bytes(s.optimizer, largest_trainable, pb)

    # --- activations ----------------------------------------------------------------------
    full_ft = s.finetune == "full"
    adapters = frozenset(s.lora_targets)
    if s.finetune == "qlora":  # 4-bit matmuls dequantize to 16-bit on the fly and keep no weight copy
        num = act.Numerics(residual=2, compute=2, autocast=False)
    adapter_dtype = pb if s.finetune != "full" else 2
    layer = act.llama_layer_ledger(m, num, tok, b, seq, attention=s.attention, trainable_linears=full_ft,
                                   adapters=adapters, lora_rank=s.lora_rank, adapter_bytes=adapter_dtype)
    layer_act = layer.total
    if s.recompute == "selective":  # Korthikanti et al. 2022 Sec. 5: recompute only the s x s attention part
        layer_act -= sum(n for k, n, _ in layer.items if k.startswith("eager.probs"))
    r = num.residual
    # Per-model tensors. Kept for the backward: cos/sin of the rotary embedding (saved by
    # every layer's rotation), the token ids and the shifted labels (saved by the NLL loss).
    # Alive only during the forward: the embedding output (a tensor of its own when the
    # residual is 16-bit; under AMP it is layer 0's saved fp32 input), the padded labels,
    # and for eager attention the additive (b, 1, s, s) causal mask shared by all layers.
    saved_model_act = 2 * m.head_dim * r * tok + 2 * 8 * tok
    fwd_model_act = saved_model_act + (r * h * tok if r != 4 else 0) + 8 * tok
    if s.attention == "eager":
        fwd_model_act += r * b * seq * seq
    # Final RMSNorm before the head: fp32 input + (normalized, output) when trainable.
    final_norm = 4 * h * tok + ((r * h + (2 if num.autocast else r) * h) * tok if full_ft else 0)
    # With frozen embeddings (LoRA/QLoRA) layer 0's input needs no gradient, so its first
    # RMSNorm keeps nothing for the backward.
    frozen_input = 0 if full_ft else 4 * h * tok
    # A rebuilt layer under AMP/fp32 keeps its checkpointed input itself as the norm's fp32 input.
    rebuilt_shared = r * h * tok if r == 4 else 0
    if s.recompute == "full":
        # Non-reentrant checkpointing keeps each layer's input; one layer is rebuilt at a time.
        kept = L * r * h * tok
        notes.append("full recompute: each decoder layer keeps only its input; backward rebuilds one layer at a time")
    else:
        kept = L * layer_act - frozen_input

    # Autocast keeps a 16-bit copy of every weight a matmul used until that matmul's backward.
    casts_all = 0
    casts_layer = 0
    if num.autocast:
        if full_ft:
            casts_all = 2 * m.linear_params
        else:
            casts_all = 2 * m.linear_params + 2 * trainable
        casts_layer = 2 * sum(t.numel for t in m.tensors() if t.kind == "linear" and t.count == L)

    # logits: the head's output (c bytes), held by `out` until the next forward replaces it.
    logits = c * V * tok
    upcast = 4 * V * tok if c != 4 else 0  # transformers' loss does logits.float()
    log_softmax = 4 * V * tok

    base = {"parameters": param_bytes, "optimizer": state_bytes}

    # forward, at log_softmax inside the loss of step N, with step N-1's output still alive
    fwd = Moment("forward", "at the loss (log-softmax over the vocabulary)", {
        **base,
        "activations": kept + fwd_model_act + final_norm,
        "autocast_copies": casts_all,
        "logits_and_loss": logits + upcast + log_softmax,
        "previous_output": logits,
    })
    # eager attention: the last layer's softmax temporaries can exceed the loss moment
    moments = [fwd]

    # backward (a): the first nodes: NLL grad, log-softmax grad and its saved output (fp32)
    bwd_act = kept + saved_model_act + final_norm
    # Under checkpointing the layers' weight copies died with the autocast cache at the end
    # of the forward (nothing saved them); only the head's copy is still held by its matmul.
    casts_after_fwd = casts_all if s.recompute != "full" else (2 * V * h if num.autocast else 0)
    top = Moment("backward", "start: gradient of the loss over the vocabulary", {
        **base,
        "activations": bwd_act,
        "autocast_copies": casts_after_fwd,
        "logits_and_loss": logits + 3 * 4 * V * tok,
    })
    moments.append(top)

    # backward (b): the decoder layers, top to bottom. Each layer runs its MLP backward,
    # then its attention backward; gradients appear as saved tensors are released, so the
    # high points are the first layer reached (everything still saved) and the last one
    # (nearly all gradients present). Evaluated at both halves of both ends.
    halves = _layer_halves(m, s, layer, num, pb, full_ft)
    attn, mlp = halves["attn"], halves["mlp"]
    per_layer_grad = attn.grad + mlp.grad
    head_grad = grad_bytes - per_layer_grad * L - (V * h * pb if full_ft and not m.tie_word_embeddings else 0)
    embed_grad = grad_bytes - per_layer_grad * L - head_grad
    lm_head_cast = 2 * V * h if num.autocast else 0
    if s.recompute == "full":  # checkpoints of every layer, plus the one layer being rebuilt
        top_acts = {"mlp": kept + layer_act - rebuilt_shared, "attn": kept + attn.act - rebuilt_shared}
        bottom_acts = {"mlp": layer_act - frozen_input, "attn": attn.act - frozen_input}  # layer 0's input: in the layer
        top_casts = {"mlp": casts_layer, "attn": attn.casts}
    else:
        top_acts = {"mlp": kept, "attn": kept - mlp.act}
        bottom_acts = {"mlp": layer_act - frozen_input, "attn": attn.act - frozen_input}
        top_casts = {"mlp": casts_all - lm_head_cast, "attn": casts_all - lm_head_cast - mlp.casts}
    bottom_casts = {"mlp": casts_layer, "attn": attn.casts}
    for half, done_grads in (("mlp", 0), ("attn", mlp.grad)):
        moments.append(Moment("backward", f"top decoder layer, {half} backward", {
            **base,
            "gradients": head_grad + done_grads,
            "activations": top_acts[half] + saved_model_act,
            "autocast_copies": top_casts[half],
            "logits_and_loss": logits,
            "temporaries": halves[half].tmp,
        }))
    for half, missing in (("mlp", per_layer_grad), ("attn", attn.grad)):
        moments.append(Moment("backward", f"first decoder layer, {half} backward", {
            **base,
            "gradients": grad_bytes - embed_grad - missing,
            "activations": bottom_acts[half] + saved_model_act,
            "autocast_copies": bottom_casts[half],
            "logits_and_loss": logits,
            "temporaries": halves[half].tmp,
        }))
    # backward (c): the embedding's gradient; with tied embeddings it is added into the
    # head's gradient, so for a moment both exist.
    moments.append(Moment("backward", "embedding backward", {
        **base,
        "gradients": grad_bytes,
        "logits_and_loss": logits,
        "temporaries": V * h * pb if (full_ft and m.tie_word_embeddings) else 0,
    }))

    # optimizer step: everything persistent plus the optimizer's temporaries
    step = Moment("optimizer", "optimizer.step()", {
        **base, "gradients": grad_bytes, "logits_and_loss": logits, "temporaries": opt_tmp,
    })
    moments.append(step)

    counts = {"trainable": trainable, "param_bytes": param_bytes, "grad_bytes": grad_bytes,
              "optimizer_bytes": state_bytes, "layer_activation_bytes": layer_act,
              "optimizer_temporary_bytes": opt_tmp, "adapter_params": trainable if not full_ft else 0}
    return Estimate(s, moments, counts, layer, notes)


@dataclass(frozen=True)
class _Half:
    """One half of a decoder layer (attention or MLP) as its backward sees it."""

    act: int  # saved activations of this half
    grad: int  # gradient bytes of this half's trainable weights
    casts: int  # autocast 16-bit weight copies this half keeps
    tmp: int  # largest temporaries inside this half's backward


_ATTN_PREFIXES = ("attn_norm", "sdpa", "eager", "lora.q_proj", "lora.k_proj", "lora.v_proj", "lora.o_proj")
_ATTN_TENSORS = ("input_layernorm", "q_proj", "k_proj", "v_proj", "o_proj")


@lru_cache(maxsize=256)
def _half_weights(m: Model) -> dict[str, tuple[int, int, int]]:
    """Per decoder layer, for each half: (matmul weight elements, all elements, largest matmul weight)."""
    out = {}
    for half in ("attn", "mlp"):
        w = [t for t in m.tensors() if t.count == m.num_layers and t.kind != "embedding"
             and t.name.split(".")[0].startswith(_ATTN_TENSORS) == (half == "attn")
             and not t.name.startswith(("final", "lm_head"))]
        lin = [t.numel for t in w if t.kind == "linear"]
        out[half] = (sum(lin), sum(t.numel for t in w), max(lin))
    return out


def _layer_halves(m: Model, s: TrainingSetup, layer: act.Ledger, num: act.Numerics, pb: int,
                  full_ft: bool) -> dict[str, _Half]:
    L, tok, c = m.num_layers, s.tokens, num.compute
    out = {}
    for half in ("attn", "mlp"):
        is_attn = half == "attn"
        acts = sum(n for k, n, _ in layer.items if k.startswith(_ATTN_PREFIXES) == is_attn)
        if s.recompute == "selective":
            acts -= sum(n for k, n, _ in layer.items if k.startswith("eager.probs")) if is_attn else 0
        linear, all_weights, largest_linear = _half_weights(m)[half]
        if full_ft:
            trainable = all_weights
        else:
            trainable = sum(r * (fi + fo) for r, (fi, fo) in
                            ((s.lora_rank, lora_mod.linear_shape(m, t)) for t in s.lora_targets
                             if (t in _ATTN_TENSORS) == is_attn))
        casts = 2 * (linear + (0 if full_ft else trainable)) if num.autocast else 0
        # Backward temporaries: gradients of the half's activations in flight, plus under
        # autocast the 16-bit weight gradient before it is added into the fp32 .grad.
        if is_attn:
            if s.attention == "sdpa":
                tmp = c * (2 * m.q_size + 2 * m.kv_size) * tok + 4 * m.q_size * tok
            else:
                tmp = (c + 4 + 4) * m.num_heads * s.seq_len * s.seq_len * s.micro_batch
                if s.recompute == "selective":  # the layer's probabilities are rebuilt for its backward
                    tmp += sum(n for k, n, _ in layer.items if k.startswith("eager.probs"))
        else:
            tmp = 3 * c * m.intermediate_size * tok
        if num.autocast and full_ft:
            tmp += 2 * largest_linear
        out[half] = _Half(acts, trainable * pb, casts, tmp)
    return out


def _estimate_gpt(s: TrainingSetup) -> Estimate:
    """GPT-style models (LayerNorm, GELU MLP, dropout): Korthikanti et al. 2022 activations,
    16 bytes/param model states for mixed-precision AdamW (Rajbhandari et al. 2020, Sec. 3.1)."""
    m = s.model
    pb = PARAM_BYTES[s.precision]
    tensors = _state_tensors(m, s)
    grad_bytes = m.num_params * pb
    state = opt.state_bytes(s.optimizer, tensors, pb)
    layer_bytes = act.korthikanti_layer_bytes(s.seq_len, s.micro_batch, m.hidden_size, m.num_heads,
                                              recompute=s.recompute)
    if NUMERICS[s.precision].compute == 4:
        layer_bytes *= 2
    layer = act.Ledger()
    layer.add("korthikanti", layer_bytes, "s*b*h*(34 + 5*a*s/h), Korthikanti et al. 2022 eq. (1)")
    acts = layer_bytes * m.num_layers
    logits = 4 * m.vocab_size * s.tokens
    moments = [
        Moment("forward", "end of forward", {"parameters": m.num_params * pb, "optimizer": state,
                                             "activations": acts, "logits_and_loss": 2 * logits}),
        Moment("optimizer", "optimizer.step()", {"parameters": m.num_params * pb, "gradients": grad_bytes,
                                                 "optimizer": state}),
    ]
    counts = {"trainable": m.num_params, "param_bytes": m.num_params * pb, "grad_bytes": grad_bytes,
              "optimizer_bytes": state, "layer_activation_bytes": layer_bytes, "optimizer_temporary_bytes": 0,
              "adapter_params": 0}
    return Estimate(s, moments, counts, layer, ["GPT-style model: Korthikanti et al. 2022 activation formula"])
