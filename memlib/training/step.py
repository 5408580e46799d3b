"""The moments of one training step, assembled from the named terms (terms.py).

Steady state (step 2 and later) of an ordinary loop:

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

import dataclasses
from dataclasses import dataclass

from memlib._checks import flag
from memlib.models import Model
from memlib.models.families import of as family_of
from memlib.training import activations as act
from memlib.training import optimizers as opt
from memlib.training import context_parallel as CP
from memlib.training import layout
from memlib.training import terms as T
from memlib.training.estimate import Estimate, Moment
from memlib.training.layout import Stage, StageSums
from memlib.training.options import MEGATRON_MODELS, TrainingSetup, megatron_gpt_layer, megatron_head
from memlib.units import fmt_bytes, fmt_count

# Ledger entries outside the tensor-parallel region (replicated on every tp rank unless sequence parallel):
# the pre-norms, Gemma's/OLMo 2's post-norms (attn_norm_post, mlp_norm_post) and OLMo 2's residual inputs.
REPLICATED = ("attn_norm", "mlp_norm", "residual")


def estimate(s: TrainingSetup) -> Estimate:
    if s.model.mlp != "gated" and s.layout not in MEGATRON_MODELS:  # Megatron's GPT layer: the stages below
        return _estimate_gpt(s)
    if s.cp > 1 and not s.cp_shard:
        return _estimate_context_parallel(s)
    sts = layout.stages(s)
    per_kind: dict = {}  # what one layer of each kind gives, the same on every stage: computed once
    results = [_estimate_stage(s, st, per_kind) for st in sts]
    if len(results) == 1:
        return results[0]
    # The per-GPU figure is the heaviest stage's: every distinct stage evaluated (layout.stages), not only the
    # first and the last (a middle stage of MoE layers can outweigh both: DeepSeek-V3's first 3 layers are dense).
    moments = []
    for est, st in zip(results, sts):
        moments += [Moment(mo.name, f"{st.name}: {mo.where}", mo.parts, mo.lazy_bytes) for mo in est.moments]
    worst_i = max(range(len(results)), key=lambda i: results[i].peak_bytes)  # the earliest of equals
    worst, heavy = results[worst_i], sts[worst_i]
    q, r = divmod(s.model.num_layers, s.pp)  # layout.pipeline_split: r stages of q + 1 layers, then q each
    layers = f"{q} layers each" if r == 0 else f"{q + 1} layers on the first {r}, {q} on the rest"
    if s.pp_split:
        layers = f"{', '.join(map(str, s.pp_split))} layers (pp_split)"
    heaviest = (f"the heaviest is {heavy.name}{' with the embedding' if heavy.embed else ''}"
                f"{' with the head' if heavy.head else ''}: {fmt_bytes(worst.peak_bytes)} of the "
                f"{len(sts)} distinct stages evaluated")
    if s.sharding == "device_map":
        notes = worst.notes + [
            f"device_map over {s.pp} GPUs ({layers}; the first GPU holds the embedding, the last the head and "
            f"logits); one GPU works at a time (naive model parallelism), the peak is the worst GPU's: {heaviest}"]
    elif s.vpp > 1:
        bubble = (s.pp - 1) / (s.vpp * s.grad_accum + s.pp - 1)
        notes = worst.notes + [
            f"pipeline: {s.pp} GPUs x {s.vpp} model chunks of {s.model.num_layers // (s.pp * s.vpp)} "
            f"layer{'s' if s.model.num_layers > s.pp * s.vpp else ''} (interleaved 1F1B); GPU i keeps "
            f"min(m v, 2(p - i) + (v - 1) p + 1) chunk forwards in flight (i from 1), "
            f"{sts[0].in_flight} on the first; bubble (p-1)/(v m + p-1) = {bubble:.1%} with m={s.grad_accum} "
            f"micro-batches (Narayanan et al. 2021 Sec. 2.2; Megatron-LM schedules.py); {heaviest}"]
    else:
        bubble = (s.pp - 1) / (s.grad_accum + s.pp - 1)
        notes = worst.notes + [
            f"pipeline: {s.pp} stages ({layers}); stage i keeps min(pp - i + 1, m) micro-batches in flight (1F1B, "
            f"i from 1), {sts[0].in_flight} on the first; bubble (p-1)/(m+p-1) = {bubble:.1%} with "
            f"m={s.grad_accum} micro-batches (Narayanan et al. 2021); {heaviest}"]
    return Estimate(s, moments, worst.counts, worst.layer, notes, worst.host_bytes, worst.nvme_bytes, worst.terms,
                    worst.layer_kinds, stage=heavy.name, stream_held_bytes=worst.stream_held_bytes,
                    stage_names=[st.name for st in sts])


@dataclass(frozen=True)
class Half:
    """One half of a decoder layer (attention or MLP) as its backward sees it."""

    act: int  # saved activations of this half
    grad: int  # gradient bytes of this half's trainable weights
    casts: int  # autocast 16-bit weight copies this half keeps
    tmp: int  # largest temporaries inside this half's backward
    expert_grad: int = 0  # of `grad`, the routed experts' (ZeRO shards them over dp / ep GPUs)


def layer_halves(c: T.Ctx, layer: act.Ledger, num: act.Numerics, moe: bool = False) -> dict[str, Half]:
    """Per half of a decoder layer (a MoE layer's when `moe`): its saved activations, weight gradients, autocast
    copies and the largest temporaries of its backward (the activation gradients in flight)."""
    moe = flag("moe", moe)
    s, m = c.s, c.s.model
    tok, cb, tp = s.tokens, num.compute, s.tp
    out = {}
    for half in ("attn", "mlp"):
        is_attn = half == "attn"
        acts = sum(n for _, n, _ in (layer.items[:layer.split] if is_attn else layer.items[layer.split:]))
        linear_whole, all_weights, largest_whole = layout.half_weights(m, moe, s.ep)[half]
        # under tp the projections split (norms stay whole); activations were split by the caller
        linear, largest_linear = linear_whole // tp, largest_whole // tp
        if c.full_ft:
            trainable = all_weights - linear_whole + linear
        else:
            one_layer = Stage("one layer", 1, 1, False, False)
            trainable = sum(t.numel for t, _ in layout.adapter_tensors(m, s, one_layer)
                            if (t.name.split(".")[0] in layout.ATTN_TENSORS) == is_attn)
        casts = (2 * linear if (c.w.cast_base and s.finetune != "qlora") else 0) + \
            (2 * trainable if c.w.cast_adapters else 0)
        # Backward temporaries: gradients of the half's activations in flight, plus under
        # autocast the 16-bit weight gradient before it is added into the fp32 .grad, and
        # under QLoRA the weight dequantized for the matmul (terms.dequantized_weight_bytes).
        if is_attn:
            if s.attention == "sdpa":
                tmp = (cb * (2 * m.q_size + 2 * m.kv_size) * tok + 4 * m.q_size * tok) // tp
            else:
                # Eager (HF eager_attention_forward, bf16): P V's backward makes grad_P (c bytes per score), the
                # cast back from fp32 softmax makes it fp32 (4) and frees P, softmax's backward writes an fp32
                # grad_input (4) beside its saved fp32 output: 8 - c bytes per score above what was saved
                # (fp32: 8). Plus the gradients of the attention output and of V.
                scores = m.num_heads * s.seq_len * s.seq_len * s.micro_batch
                kv_kept = m.q_size  # repeat_kv copies to all heads
                per_score = 8 - cb if cb != 4 else 8
                if m.attention_sinks:
                    # gpt-oss (softmax in the logits' dtype over s + 1 columns): the max's backward scatters into a
                    # zeroed s x (s + 1) tensor beside the gradient from the subtraction and their sum, after the
                    # softmax's backward has freed its saved output: two such tensors above what was saved
                    scores = m.num_heads * s.seq_len * (s.seq_len + 1) * s.micro_batch
                    per_score = 2 * cb
                tmp = (per_score * scores + cb * (m.q_size + kv_kept) * tok) // tp
        elif moe:
            tmp = T.moe_backward_temporaries(c, num)
        else:  # SiLU(gate)*up's backward: the product's gradient and those of SiLU(gate) and up, beside the
            # layer output's gradient; with a frozen down_proj its adapter's copies of the input are freed by
            # then (measured: llama-7b-4l-qlora64-all-mixed-ckpt-chunked; full fine-tuning: llama-7b-bf16-ckpt-mb4)
            # (bitsandbytes < 0.43.2 keeps the product on down_proj's ctx: not freed)
            freed = ("lora.down_proj.input", "lora.down_proj.dropout_mask") + (() if s.bnb_keeps_input else ("mlp.product",))
            down_input = 0 if c.full_ft else sum(n for k, n, _ in layer.items if k in freed)
            cm = next((n for k, n, _ in layer.items if k == "mlp.gate"), cb * m.intermediate_size * tok // tp)
            tmp = 3 * cm - down_input + cb * m.hidden_size * tok
        if num.autocast and c.full_ft:
            tmp += 2 * largest_linear
        tmp += T.dequantized_weight_bytes(c, largest_linear)
        if s.grad_accum > 1:  # a new gradient exists beside the accumulated one until it is added in
            tmp += c.w.grad * (largest_linear if c.full_ft else trainable // max(len(s.lora_targets), 1))
        expert = layout.layer_expert_numel(m, tp, s.ep, s.expert_tp) if (moe and not is_attn and c.full_ft) else 0
        out[half] = Half(acts, trainable * c.w.grad, casts, tmp, expert * c.w.grad)
    return out


# --- the parts of one stage's step ------------------------------------------------------------------------------
# Each part is a function that reads the typed results of the parts before it and returns its own (a frozen
# dataclass of named figures, a list of moments, or one number), so _estimate_stage reads top to bottom as the step
# runs, as Megatron-LM's megatron/training/theoretical_memory_usage.py computes its named terms one function each.
# The field names are those of the formulas' terms (terms.py).


@dataclass(frozen=True)
class Context:
    """_context: what this GPU holds of the setup. notes: the estimate's notes, which later parts append to."""

    s: TrainingSetup
    st: Stage
    m: Model
    c: T.Ctx  # the terms' shared context
    w: T.Widths  # byte widths of parameters, gradients, states (terms.widths)
    num: act.Numerics
    sums: StageSums  # the stage's parameter sums (layout.stage_sums)
    k: int  # the ZeRO stage in effect (0: none)
    notes: list
    V: int  # vocabulary
    b: int  # micro-batch
    seq: int
    tok: int  # tokens per micro-batch
    h: int  # hidden size
    tp: int
    dp: int
    full_ft: bool
    pb: int  # parameter bytes
    gb_: int  # gradient bytes
    trainable: int  # trainable parameters on this GPU
    vocab_loss: bool  # Megatron's vocabulary-parallel cross entropy
    fused: bool  # Megatron's fused layer ledger (Transformer Engine, or Megatron's GPT layer)

    def zero_shard(self, nbytes: int, expert_bytes: int = 0) -> int:
        """Gradient bytes left on this GPU under ZeRO-2/3 / FSDP: dense over dp, routed experts over the dp / ep
        GPUs that hold the same experts (DeepSpeed-MoE's expert data-parallel group)."""
        if self.k < 2:
            return nbytes
        return (nbytes - expert_bytes) // self.dp + expert_bytes // self.s.expert_dp


@dataclass(frozen=True)
class States:
    """_model_states, then _offload, then _offloaded_gradients: parameters, gradients and optimizer states (bytes)."""

    param_full: int  # unsharded
    grad_full: int
    state_full: int
    param_rest: int  # sharded, at rest
    param_live: int  # from forward to backward (SHARD_GRAD_OP keeps them unsharded)
    param_step: int  # at optimizer.step()
    grad_bytes: int
    state_bytes: int
    opt_tmp: int  # the optimizer's step temporaries
    host_bytes: int = 0  # offloaded to the host
    nvme_bytes: int = 0
    grad_bucket: int | None = None  # offload: the gradient bucket on the GPU


@dataclass(frozen=True)
class Layers:
    """_layer_kinds: the ledger of each kind of layer, the top, bottom and largest layers, the model-level saves."""

    kinds: list  # [(kind, number of layers of this stage)], kind = (layer_type, moe)
    ledgers: dict  # kind -> act.Ledger
    per_kind: dict  # kind -> (ledger, retained, retained by its MLP, halves), shared by the stages
    layer_kind: tuple  # the largest layer's kind
    layer: act.Ledger  # its ledger
    layer_act: int
    top_kind: tuple
    bottom_kind: tuple
    top_layer: act.Ledger
    bottom_layer: act.Ledger
    all_layers_act: int  # every layer of the stage, one micro-batch
    r: int  # residual stream bytes
    sp: int  # sequence-parallel split (tp or 1)
    saved_model_act: int
    fwd_model_act: int
    final_norm: int  # before the loss part (see Loss.final_norm)
    frozen_input: int
    retained_all: int  # bitsandbytes < 0.43.2's retained 4-bit matmul inputs
    retained_top: int
    retained_bottom: int
    retained_mlp_of: dict
    layer0_unkept: int
    retained_head: int
    head_adapter: int  # lora_head: the head adapter's saved tensors (part of final_norm)


@dataclass(frozen=True)
class Saved:
    """_saved_activations: what the forward keeps (bytes), recompute and activation offloading applied."""

    checkpoint: int
    rebuilt_shared: int
    recompute: bool
    sac_saved: int
    sac_shared: int
    kept: int
    retained_prev: int
    host_acts: int


@dataclass(frozen=True)
class Loss:
    """_loss: the head and the loss (bytes), and the autocast weight copies."""

    casts_all: int
    casts_layer: int
    lm_head_cast: int
    casts_all_bwd_less: int
    logits: int
    loss_fwd: int
    loss_bwd: int
    softcap: int
    aux: int
    chunked_head: bool
    final_norm: int  # the final norm's saved bytes as the loss leaves them


@dataclass(frozen=True)
class Gathered:
    """_gathered_parameters: ZeRO-3 / FSDP gathered layers, and the halves of the top and bottom layers."""

    halves_of: dict  # kind -> {"attn": Half, "mlp": Half}
    halves: dict  # the top layer's
    bottom_halves: dict
    attn: Half  # the top layer's halves
    mlp: Half
    layer_param_bytes: int
    gathered_layers: int
    gathered_head: int
    gathered_bottom: int
    head_param_bytes: int
    fsdp3: bool
    g: int  # FSDP's gathered width
    layer_rs: int
    root_bytes: int | None
    root_grads: int | None
    unsharded_layer_grads: int


@dataclass(frozen=True)
class Walk:
    """_backward_state: what the backward walks down with (bytes): gradients, and activations at the top and bottom."""

    per_layer_grad: int
    layers_grad: int
    head_grad: int
    embed_grad: int
    top_acts: dict  # half -> bytes
    bottom_acts: dict
    top_casts: dict


@dataclass(frozen=True)
class Buffers:
    """The layouts' buffers (bytes), each from its part: DDP, DeepSpeed, Megatron."""

    ddp_buckets: int
    ds_buckets: int
    ds_grad_partition: int
    ds_stream_held: int
    ds_saved_weights: int
    ds_offload_buffer: int
    ds_offload_check: int
    score_buffer: int
    lp_grads: int
    deferred_wgrad: int


def _estimate_stage(s: TrainingSetup, st: Stage, per_kind: dict | None = None) -> Estimate:
    """One GPU's estimate: the stage `st` of setup `s`. per_kind: a dict shared by the stages of one setup, where
    each kind of layer's ledger, retained inputs and halves (which do not depend on the stage) are kept.
    The parts of the step in order, each a short function below with its source."""
    # what this GPU holds: model states, each kind of layer's ledger, the saved activations, the loss, gathered layers
    x = _context(s, st)
    states = _offload(x, _model_states(x))
    ly = _layer_kinds(x, {} if per_kind is None else per_kind)
    sv = _saved_activations(x, ly)
    ls = _loss(x, ly)
    gp = _gathered_parameters(x, ly)
    base = _layout_notes(x, states)  # alive at every moment
    # the moments of the step, in order
    moments = _forward_moments(x, ly, sv, ls, gp, base)
    moments += _backward_start(x, ly, sv, ls, gp, base)
    wk = _backward_state(x, states, ly, sv, ls, gp)
    moments += _backward_top(x, ly, sv, ls, gp, wk, base)
    moments += _backward_bottom(x, states, ly, sv, ls, gp, wk, base)
    if s.cp > 1:  # ring attention's buffers in every attention backward (context_parallel.py)
        CP.add_ring_backward(s, x.num, moments, gp.layer_rs if (gp.fsdp3 and st.layers > 2) else 0)
    moments.append(_optimizer_moment(states, sv, ls))
    # what gradient accumulation, HF checkpointing and the layouts' buffers add to the moments (in place)
    _gradient_accumulation(x, states, moments)
    _input_leaf(x, ly, moments)
    states = _offloaded_gradients(x, states, moments)
    ddp_buckets = _ddp_buckets(x, moments)
    ds_buckets, ds_grad_partition, ds_stream_held = _deepspeed_buckets(x, moments)
    ds_saved_weights = _deepspeed_saved_weights(x, moments)
    ds_offload_buffer, ds_offload_check = _deepspeed_offload_buffers(x, states, ly, sv, ls, moments)
    score_buffer, lp_grads = _megatron_grad_buffer(x, states, moments)
    deferred_wgrad = _deferred_embedding_wgrad(x, moments)
    buffers = Buffers(ddp_buckets, ds_buckets, ds_grad_partition, ds_stream_held, ds_saved_weights,
                      ds_offload_buffer, ds_offload_check, score_buffer, lp_grads, deferred_wgrad)
    return _result(x, states, ly, sv, ls, gp, buffers, moments)


def _context(s: TrainingSetup, st: Stage) -> Context:
    """What this GPU holds of the setup: numerics and widths (terms.widths), the stage's parameter sums
    (layout.stage_sums), the trainable tensors; the terms' shared context (terms.Ctx)."""
    m = s.model
    full_ft = s.finetune == "full"
    notes: list[str] = []
    k = s.zero_stage if s.sharding != "none" else 0
    if s.layout == "megatron-deepspeed" and s.sharding == "megatron":
        k = 1  # DeepSpeed's BF16_Optimizer partitions the fp32 master and Adam over dp, as ZeRO-1 does
    w = T.widths(s, k)
    if w.note:
        notes.append(w.note)
    sums = layout.stage_sums(m, s.tp, st, s.ep, s.expert_tp)
    tensors = layout.trainable_tensors(s, st)
    trainable = sums.total if full_ft else layout.numel(tensors)
    c = T.Ctx(s, st, w, k, sums, tensors, trainable, sums.expert if full_ft else 0)
    # Megatron-Core's fused layers and vocabulary-parallel loss (layout='megatron': LLaMA-style layers, dense or
    # Mixtral-style MoE)
    gpt_layer = megatron_gpt_layer(m)
    vocab_loss = (s.layout == "megatron" and megatron_head(m)) or (
        s.layout == "megatron-deepspeed" and m.head == "lm" and (m.is_llama_layer or gpt_layer))
    # Megatron-DeepSpeed's LLaMA layer runs op by op (transformers' ledger); Megatron-Core's is Transformer Engine's
    fused = vocab_loss and (s.layout == "megatron" or gpt_layer)
    return Context(s=s, st=st, m=m, c=c, w=w, num=w.num, sums=sums, k=k, notes=notes, V=m.vocab_size,
                   b=s.micro_batch, seq=s.seq_len, tok=s.tokens, h=m.hidden_size, tp=s.tp, dp=s.dp, full_ft=full_ft,
                   pb=w.param, gb_=w.grad, trainable=trainable, vocab_loss=vocab_loss, fused=fused)


def _model_states(x: Context) -> States:
    """Parameters, gradients and optimizer states on this GPU, sharded by the ZeRO stage or FSDP strategy
    (Rajbhandari et al. 2020, Sec. 5; terms.sharded)."""
    c, s, dp, k, notes = x.c, x.s, x.dp, x.k, x.notes
    param_full = T.parameter_bytes(c)
    if s.finetune == "qlora":
        quantized = T.quantized_numel(c)  # the decoder's projections, and lm_head under Lightning
        bits = 8 * T.nf4_weight_bytes(c) / max(quantized, 1)
        notes.append(f"QLoRA ({s.qlora_backend}{', double quantization' if s.double_quant else ''}): "
                     f"{fmt_count(quantized)} projection weights{' (lm_head too)' if T.quantized_head_numel(c) else ''} "
                     f"in NF4 ({bits:.3f} bits each), the rest in {s.base_dtype}")
    grad_full = T.gradient_bytes(c)
    state_full = T.optimizer_state_bytes(c)
    param_rest = T.sharded(c, param_full, "parameters")
    # SHARD_GRAD_OP keeps parameters unsharded from forward to backward; sharded only at rest.
    shard_grad_op = s.sharding == "fsdp" and k == 2
    return States(param_full=param_full, grad_full=grad_full, state_full=state_full, param_rest=param_rest,
                  param_live=param_full if shard_grad_op else param_rest,
                  param_step=param_full // dp if shard_grad_op else param_rest,
                  grad_bytes=T.sharded(c, grad_full, "gradients"),
                  state_bytes=T.sharded(c, state_full, "optimizer"), opt_tmp=T.optimizer_step_temporaries(c))


def _offload(x: Context, st: States) -> States:
    """ZeRO-Offload / ZeRO-Infinity (Ren et al. 2021, Sec. 4; terms.offload) or FSDP's CPU offload
    (terms.fsdp_cpu_offload): what leaves the GPU."""
    s = x.s
    if s.offload == "none":
        return st
    fsdp_offload = s.sharding == "fsdp"
    off = (T.fsdp_cpu_offload if fsdp_offload else T.offload)(x.c, st.state_bytes, st.param_rest, st.grad_bytes)
    if fsdp_offload:
        x.notes.append(f"FSDP CPU offload: the sharded parameters, gradients and optimizer states "
                       f"({fmt_bytes(off.offloaded)} per GPU) live in host memory; each layer is copied up for its "
                       "all-gather, each gradient shard copied down, and torch's AdamW steps on the CPU")
    else:
        x.notes.append(f"offload {s.offload} to {s.offload_device}: {fmt_bytes(off.offloaded)} per GPU leave the "
                       "GPU; the optimizer steps on the CPU")
    params = dict(param_live=0, param_step=0, param_rest=0) if s.offload == "optimizer+params" else {}
    return dataclasses.replace(st, host_bytes=off.host_bytes, nvme_bytes=off.nvme_bytes, state_bytes=0, opt_tmp=0,
                               grad_bucket=off.grad_bucket, **params)


def layer_ledger(x: Context, kind: tuple[str, bool], base_saves_input: bool | None = None) -> act.Ledger:
    """The per-layer activation ledger of one kind of layer (activations.llama_layer_ledger, or Megatron's fused
    megatron_layer_ledger), split by tp in the tensor-parallel region (Korthikanti et al. 2022, Sec. 4.2).
    base_saves_input: bitsandbytes < 0.43.2's MatMul4Bit keeping its input (default: the setup's)."""
    c, m, num, s, tok, tp, w = x.c, x.m, x.num, x.s, x.tok, x.tp, x.w
    if base_saves_input is None:
        base_saves_input = s.bnb_keeps_input
    qlora_bnb = s.finetune == "qlora" and s.qlora_backend != "torchao"
    layer_type, moe = kind
    led = act.megatron_layer_ledger(m, tok, recompute=s.recompute, hidden_dropout=s.hidden_dropout,
                                    attention=s.attention, seq_len=x.seq, attention_dropout=s.attention_dropout,
                                    moe=moe, routed_rows=T.routed_rows(c) if moe else 0, tp=tp, etp=s.expert_tp,
                                    aux_loss=s.router_aux_loss) if x.fused else act.llama_layer_ledger(
        m, num, tok, x.b, x.seq, attention=s.attention, trainable_linears=x.full_ft, adapters=frozenset(s.lora_targets),
        # the adapters compute at their gathered width (16 bits under FSDP2's MixedPrecisionPolicy)
        lora_rank=s.lora_rank, adapter_bytes=(w.gathered or x.pb) if not x.full_ft else 2,
        lora_dropout=s.lora_dropout,
        # peft's bitsandbytes LoRA layer casts the input to the adapter dtype only without autocast (lora/bnb.py)
        adapter_casts_input=not (qlora_bnb and num.autocast),
        # bitsandbytes before 0.43.2: MatMul4Bit keeps its 16-bit input A for the backward
        base_saves_input=base_saves_input,
        # Linear4bit returns its output in the input's dtype: fp32 MLP activations over an fp32-upcast base
        mlp_bytes=4 if (s.finetune == "qlora" and num.autocast and w.base == 4) else None,
        layer_type=layer_type, moe=moe, routed_rows=T.routed_rows(c) if moe else None)
    if s.layout == "megatron-deepspeed" and not x.fused and s.hidden_dropout:
        # Megatron's bias-dropout-add after the attention and after the MLP: a 1-byte mask per residual element
        # each (megatron/model/transformer.py ParallelTransformerLayer; Korthikanti et al.'s sbh terms)
        led = act.Ledger(led.items[:led.split] + [("residual.attn_dropout_mask", m.hidden_size * tok,
                                                   "bias-dropout-add's 1-byte mask after the attention")]
                         + led.items[led.split:] + [("residual.mlp_dropout_mask", m.hidden_size * tok,
                                                     "bias-dropout-add's 1-byte mask after the MLP")],
                         led.split + 1)
    if tp > 1:  # Korthikanti et al. 2022 Sec. 4.2: the tensor-parallel region splits by t; with
        # sequence parallelism the norms' tensors (and the residual stream) split too.
        led = act.Ledger([(n, v // tp if (s.sequence_parallel or not n.startswith(REPLICATED)) else v, why)
                          for n, v, why in led.items], led.split)
    return led


def _layer_kinds(x: Context, per_kind: dict) -> Layers:
    """One ledger per kind of layer (MoE and sliding-window layers differ), computed once per setup; the 4-bit
    matmuls' retained inputs (bitsandbytes < 0.43.2, terms.bnb_retained_input_bytes); the model-level saves."""
    c, m, num, s, st, tp = x.c, x.m, x.num, x.s, x.st, x.tp
    # Layers differ in MoE models and in models with sliding-window layers: a ledger per kind of layer.
    kinds = layout.layer_kinds(m, st.first_layer, st.layers)
    for kind, _ in kinds:
        if kind not in per_kind:
            led = layer_ledger(x, kind)
            per_kind[kind] = (led, T.bnb_retained_input_bytes(c, led),
                              T.bnb_retained_input_bytes(c, act.Ledger(led.items[led.split:])),
                              layer_halves(c, led, num, kind[1]))
    ledgers = {kind: per_kind[kind][0] for kind, _ in kinds}
    kind_of = lambda i: (m.layer_types[i], m.is_moe and i in m.moe_layers)  # noqa: E731
    top_kind, bottom_kind = kind_of(st.first_layer + st.layers - 1), kind_of(st.first_layer)
    layer_kind = max(ledgers, key=lambda kk: ledgers[kk].total)  # the largest layer: the one rebuilt, gathered
    bottom_layer = ledgers[bottom_kind]
    sp = tp if s.sequence_parallel else 1
    frozen_input = T.frozen_first_norm(c, sp)
    # bitsandbytes < 0.43.2: the 4-bit matmuls' inputs stay on ctx until the graph is dropped (terms.py); per kind of
    # layer (what one layer of that kind retains, and of it its MLP's)
    retained_of = {kind: per_kind[kind][1] for kind in ledgers}
    layer0_unkept = T.bnb_layer0_unkept_bytes(c, bottom_layer)
    if layer0_unkept:  # layer 0's ledger loses the norm output only where nothing but the 4-bit matmuls kept it
        plain = layer_ledger(x, bottom_kind, base_saves_input=False)
        frozen_input += layer0_unkept - T.bnb_layer0_unkept_bytes(
            dataclasses.replace(c, s=dataclasses.replace(s, qlora_backend="bitsandbytes<0.43.2")), plain)
    retained_head = T.bnb_retained_head_input_bytes(c, num, sp)
    head_adapter = T.head_adapter_activations(c, num, sp)  # lora_head: the head adapter's saved tensors
    return Layers(
        kinds=kinds, ledgers=ledgers, per_kind=per_kind, layer_kind=layer_kind, layer=ledgers[layer_kind],
        layer_act=ledgers[layer_kind].total, top_kind=top_kind, bottom_kind=bottom_kind,
        top_layer=ledgers[top_kind], bottom_layer=bottom_layer,
        all_layers_act=sum(n * ledgers[kind].total for kind, n in kinds), r=num.residual, sp=sp,
        saved_model_act=T.saved_model_activations(c, num), fwd_model_act=T.forward_only_activations(c, num, sp),
        final_norm=T.final_norm_activations(c, num, sp) + retained_head + head_adapter, frozen_input=frozen_input,
        retained_all=sum(n * retained_of[kind] for kind, n in kinds),  # every layer of the stage, one micro-batch
        retained_top=retained_of[top_kind], retained_bottom=retained_of[bottom_kind],
        retained_mlp_of={kind: per_kind[kind][2] for kind in ledgers}, layer0_unkept=layer0_unkept,
        retained_head=retained_head, head_adapter=head_adapter)


def _saved_activations(x: Context, ly: Layers) -> Saved:
    """What the forward keeps per stage: every layer's ledger, or under recompute each layer's input
    (Chen et al. 2016; torchtitan's selective policy); torchtune's activation offloading (terms.offload_brought_back)."""
    c, m, num, s, st, all_layers_act, b = x.c, x.m, x.num, x.s, x.st, ly.all_layers_act, x.b
    adapters = frozenset(s.lora_targets)
    frozen_input, full_ft, layer0_unkept, notes, pb = ly.frozen_input, x.full_ft, ly.layer0_unkept, x.notes, x.pb
    r, retained_all, retained_head, seq, sp, tok = ly.r, ly.retained_all, ly.retained_head, x.seq, ly.sp, x.tok
    tp = x.tp
    checkpoint = T.checkpoint_bytes(c, num, sp)
    # A rebuilt layer under AMP/fp32 keeps its checkpointed input itself as the norm's fp32 input.
    rebuilt_shared = checkpoint if r == 4 else 0
    n_kept = st.layers * st.in_flight
    # Megatron's selective recompute reruns the attention core only: its layer ledger already leaves it out
    recompute = s.recompute == "full" if x.fused else s.recompute != "none"
    sac_saved = sac_shared = 0
    if s.recompute == "selective" and not x.fused:
        sac_saved, sac_shared = act.selective_saved_bytes(
            m, num, tok, b, seq, attention=s.attention, adapters=adapters, lora_rank=s.lora_rank,
            adapter_bytes=pb if not full_ft else 2)
        sac_saved, sac_shared = sac_saved // tp, sac_shared // tp
    if recompute:
        # Non-reentrant checkpointing keeps each layer's input (and under selective recompute the outputs its
        # policy saves); one layer is rebuilt at a time. (A retained 4-bit input is no checkpoint's business.)
        kept = n_kept * (checkpoint + sac_saved) + st.in_flight * retained_all
        notes.append("full recompute: each decoder layer keeps only its input; backward rebuilds one layer at a time"
                     if s.recompute == "full" else
                     "selective recompute (torchtitan's op-level policy): each layer keeps its input, every other "
                     "matmul's output and the attention kernel's outputs; backward rebuilds one layer at a time")
    else:
        kept = st.in_flight * all_layers_act - frozen_input * st.in_flight
    # every 4-bit matmul's input kept on ctx (bitsandbytes < 0.43.2): alive until the loop drops the step's graph,
    # i.e. through the backward, the optimizer step and the next forward
    retained_prev = st.in_flight * retained_all - layer0_unkept + retained_head
    host_acts = 0
    if s.activation_offload:
        # torchtune's OffloadActivations (training/_activation_offloading.py): every saved tensor of 1024
        # bytes or more goes to pinned host memory as the forward packs it; the 5 most recently offloaded
        # ones stay on the GPU until their copy is done (the final norm's, whose lm_head is not offloaded;
        # under checkpointing the last two layers' inputs); in backward a tensor comes back when its node
        # runs and is freed after the next node (terms.offload_brought_back).
        on_gpu = min(n_kept, 2) * (checkpoint + sac_saved) if recompute else 0
        host_acts = kept - on_gpu
        kept = on_gpu
        notes.append(f"activation offloading: {fmt_bytes(host_acts)} of saved activations in host memory")
    return Saved(checkpoint=checkpoint, rebuilt_shared=rebuilt_shared, recompute=recompute, sac_saved=sac_saved,
                 sac_shared=sac_shared, kept=kept, retained_prev=retained_prev, host_acts=host_acts)


def _loss(x: Context, ly: Layers) -> Loss:
    """The head and the loss at the top of the step: logits, fp32 log-softmax and the loss gradient
    (terms.logits_bytes), Liger's fused linear cross-entropy, LitGPT's chunked head (terms.chunked_head_*)."""
    c, num, s, st, final_norm, full_ft, sp = x.c, x.num, x.s, x.st, ly.final_norm, x.full_ft, ly.sp
    casts_all = T.autocast_weight_copies(c)
    casts_layer = T.autocast_layer_copies(c)
    lm_head_cast = T.autocast_head_copy(c)

    if s.loss == "chunked" and st.head:
        # Liger's fused linear cross-entropy: no logits; its saved gradients and one chunk's temporaries
        # (terms.fused_loss_*). The final norm's output is kept by nothing (the head's matmul ran inside
        # the fused function) and the head's 16-bit weight copy dies with the autocast cache.
        hidden_bytes = 4 if (full_ft and num.autocast) else num.residual
        logits = 0
        loss_fwd = T.fused_loss_saved_bytes(c, hidden_bytes) + T.fused_loss_chunk_bytes(c, num, hidden_bytes)
        loss_bwd = T.fused_loss_saved_bytes(c, hidden_bytes)
        final_norm -= T.final_norm_output_bytes(c, num, sp)
        casts_all_bwd_less = lm_head_cast
    elif s.loss == "chunked-head" and st.head:
        # LitGPT's head per 128-token chunk, converted to fp32 by Fabric, cross-entropy per chunk (terms.chunked_head_*):
        # the loop's `logits` (fp32) live through the step; at the loss the previous step's were replaced.
        logits = T.chunked_head_logits_bytes(c)
        loss_fwd = logits + T.chunked_head_log_softmax_bytes(c) + T.chunked_head_chunk_bytes(c)
        loss_bwd = loss_fwd
        casts_all_bwd_less = 0
    elif x.vocab_loss and st.head:  # Megatron's vocabulary-parallel cross entropy: nothing kept past the step
        logits = 0
        loss_fwd = T.vocab_parallel_cross_entropy_bytes(c)
        loss_bwd = T.vocab_parallel_cross_entropy_backward_bytes(c)
        casts_all_bwd_less = 0
    else:
        logits = T.logits_bytes(c, num)
        loss_fwd = logits + T.loss_upcast_bytes(c, num) + T.log_softmax_bytes(c)
        if not s.keep_outputs:  # HF Trainer's compute_loss drops the output: its logits die before the backward
            logits = 0
        loss_bwd = logits + T.loss_backward_bytes(c)
        casts_all_bwd_less = 0
    # Gemma 2's capped logits keep their tanh; MoE routers' logits and the load-balancing loss's softmax
    softcap, aux = T.logit_softcap_bytes(c, num), T.router_aux_loss_bytes(c, num)
    loss_fwd += softcap + aux
    loss_bwd += softcap + aux
    chunked_head = s.loss == "chunked-head" and st.head
    return Loss(casts_all=casts_all, casts_layer=casts_layer, lm_head_cast=lm_head_cast,
                casts_all_bwd_less=casts_all_bwd_less, logits=logits, loss_fwd=loss_fwd, loss_bwd=loss_bwd,
                softcap=softcap, aux=aux, chunked_head=chunked_head, final_norm=final_norm)


def _gathered_parameters(x: Context, ly: Layers) -> Gathered:
    """ZeRO-3 / FSDP gathering each layer just in time, with the next prefetched (Rajbhandari et al. 2020,
    Sec. 5.3; FSDP2's fully_shard per layer as FSDPMemTracker shows it)."""
    c, s, st, V, bottom_kind, dp, full_ft, gb_, h = x.c, x.s, x.st, x.V, ly.bottom_kind, x.dp, x.full_ft, x.gb_, x.h
    k, kinds, pb, per_kind = x.k, ly.kinds, x.pb, ly.per_kind
    root_bytes = root_grads = None  # set only under FSDP FULL_SHARD
    top_kind, tp, w = ly.top_kind, x.tp, x.w
    # ZeRO-3 / FULL_SHARD gather each layer's parameters just in time: the layer in use and
    # the next one, prefetched (DeepSpeed's prefetch bucket, FSDP's forward/backward prefetch).
    halves_of = {kind: per_kind[kind][3] for kind, _ in kinds}
    halves, bottom_halves = halves_of[top_kind], halves_of[bottom_kind]  # the backward meets the top layer first
    attn, mlp = halves["attn"], halves["mlp"]
    layer_param_bytes = T.layer_parameter_bytes(c)
    # ZeRO-3 over one GPU gathers nothing: with one partition DeepSpeed points each parameter at its own partition
    # (partition_parameters.py _no_gather_coalesced / NoGatherHandle: param.data = param.ds_tensor.data.to(device)),
    # a view unless the partition was offloaded to the host, when .to(device) makes the GPU copy
    gathers = k == 3 and not (s.sharding == "deepspeed" and dp == 1 and s.offload != "optimizer+params")
    gathered_layers = 2 * layer_param_bytes if gathers else 0
    head_param_bytes = pb * V * h // tp if st.head else 0
    gathered_head = head_param_bytes if gathers else 0
    gathered_bottom = gathered_layers
    fsdp3 = s.sharding == "fsdp" and k == 3
    layer_rs = 0
    g = w.gathered  # FSDP: unsharded parameters and gradients (16-bit under a MixedPrecisionPolicy)
    if fsdp3:
        # FSDP2 (fully_shard per layer, then the root), as FSDPMemTracker shows it: the root's
        # parameters (embedding, final norm, head) are gathered at the start of the forward and
        # stay unsharded until the end of the backward; each layer's all-gather buffer outlives
        # its unpacked parameters until the next layer unpacks (the last layer's until the loss);
        # in backward the next layer is prefetched and the previous layer's reduce-scatter
        # buffer (in the reduce dtype) is still alive.
        root_bytes = T.root_parameter_bytes(c)
        layer_rs = layer_param_bytes * w.reduce // g if full_ft else layer_param_bytes
        gathered_head = root_bytes + layer_param_bytes
        gathered_layers = root_bytes + 2 * layer_param_bytes
        gathered_bottom = root_bytes + layer_param_bytes + layer_rs  # layer 0 + layer 1's reduce-scatter buffer
        root_grads = g * T.root_numel(c) if full_ft else 0
    # Gradients of the layer in backward exist unsharded until reduce-scattered (ZeRO-2/3, FSDP).
    unsharded_layer_grads = (attn.grad + mlp.grad) * (g if fsdp3 else gb_) // gb_ if k >= 2 else 0
    return Gathered(halves_of=halves_of, halves=halves, bottom_halves=bottom_halves, attn=attn, mlp=mlp,
                    layer_param_bytes=layer_param_bytes, gathered_layers=gathered_layers, gathered_head=gathered_head,
                    gathered_bottom=gathered_bottom, head_param_bytes=head_param_bytes, fsdp3=fsdp3, g=g,
                    layer_rs=layer_rs, root_bytes=root_bytes, root_grads=root_grads,
                    unsharded_layer_grads=unsharded_layer_grads)


def _layout_notes(x: Context, states: States) -> dict:
    """What is alive at every moment (parameters, optimizer states) and the notes on MoE and MLA layouts
    (DeepSeek-V2, Sec. 2.1)."""
    c, m, s, notes, param_live, state_bytes = x.c, x.m, x.s, x.notes, states.param_live, states.state_bytes
    base = {"parameters": param_live, "optimizer": state_bytes}
    if s.layout == "megatron":
        notes.append(f"Megatron-Core layout: the {'fp32' if x.w.grad == 4 else '16-bit'} main-grad buffer alive "
                     "through the step"
                     + ("; Transformer Engine's fused layers (Korthikanti et al. 2022 Table 2 terms)"
                        + (", its MoE block (router, all-to-all dispatcher, grouped GEMM experts)" if m.is_moe else "")
                        + " and the vocabulary-parallel cross entropy" if x.fused else "")
                     + (f" (--cross-entropy-loss-fusion, {s.megatron_ce_fusion})" if s.megatron_ce_fusion else ""))
    if s.layout == "megatron-deepspeed":
        notes.append("Megatron-DeepSpeed: Megatron-LM's legacy model with its vocabulary-parallel cross entropy"
                     + ("" if s.megatron_ce_inplace else " (the max subtracted out of place)")
                     + (", Megatron's GPT layer" if x.fused else ", the LLaMA layer op by op (transformers' ledger"
                        + (" and the hidden-dropout masks)" if s.hidden_dropout else ")"))
                     + (f"; DeepSpeed's ZeRO-{s.zero_stage} keeps the states" if s.sharding == "deepspeed" else
                        "; DeepSpeed's BF16_Optimizer keeps the states (bf16 without ZeRO)"))
    if s.attention_note:
        notes.append(f"attention estimated as eager: {s.attention_note}")
    if s.float8 == "torchao":
        notes.append("float8 (torchao Float8Linear): each linear saves its bf16 input and weight (save_for_backward("
                     "input_hp, weight_hp_t)) and the states stay fp32, so the bytes are bf16's; the fp8 casts are "
                     "transients inside each matmul (fused by torch.compile)")
    if s.compile:
        notes.append("torch.compile with full recompute: each layer keeps its input, as in eager mode")
    if m.is_moe:
        rows = T.routed_rows(c)
        per_gpu = m.num_experts // s.ep
        notes.append(f"MoE: every expert's parameters, gradients and optimizer states are held ({per_gpu} of "
                     f"{m.num_experts} experts per MoE layer on this GPU" + (f", ep={s.ep}" if s.ep > 1 else "")
                     + (f", each split over etp={s.expert_tp}" if s.expert_tp != s.tp else "")
                     + f"); routed activations of {rows:,} (token, expert) rows per MoE layer = "
                     + ("tokens x experts: Llama 4 in transformers runs every token through every expert"
                        if family_of(m).every_expert else "tokens x top-k"
                        + (f" at capacity factor {s.capacity_factor:g} (overflow dropped)" if s.capacity_factor
                           else ", none dropped")))
    if m.is_mla:
        notes.append("MLA: the query/KV latents and their norms, the per-head key and value rebuilt from the latent "
                     "(kv_b_proj's output) and the attention kernel's tensors are saved per layer; the compressed "
                     "cache is a serving saving, not a training one")
    return base


def _forward_moments(x: Context, ly: Layers, sv: Saved, ls: Loss, gp: Gathered, base: dict) -> list[Moment]:
    """Forward: at the loss (log-softmax over the vocabulary) with the previous step's output alive, inside
    the last decoder layer, or at the end of a pipeline stage's forward (Narayanan et al. 2021, 1F1B)."""
    c, num, s, st, V, aux, b, casts_all = x.c, x.num, x.s, x.st, x.V, ls.aux, x.b, ls.casts_all
    chunked_head, final_norm, fsdp3, fwd_model_act = ls.chunked_head, ls.final_norm, gp.fsdp3, ly.fwd_model_act
    gathered_head, gathered_layers, h, k, kept = gp.gathered_head, gp.gathered_layers, x.h, x.k, sv.kept
    layer, layer_kind, lm_head_cast, logits, loss_fwd = ly.layer, ly.layer_kind, ls.lm_head_cast, ls.logits, ls.loss_fwd
    r, recompute, retained_head, retained_prev = ly.r, sv.recompute, ly.retained_head, sv.retained_prev
    saved_model_act, seq, softcap, sp, tok = ly.saved_model_act, x.seq, ls.softcap, ly.sp, x.tok
    # forward, at log_softmax inside the loss of step N, with step N-1's output still alive
    moments = []
    if st.head:
        moments.append(Moment("forward", "at the loss (log-softmax over the vocabulary)", {
            **base,
            "activations": kept + fwd_model_act + final_norm,
            "autocast_copies": casts_all,
            "logits_and_loss": loss_fwd,
            "previous_output": 0 if chunked_head else logits + retained_prev,
            "gathered_parameters": gathered_head,
        }))
        if chunked_head:
            # Fabric converts the head's 16-bit chunks to fp32 while the previous step's logits are still held
            # (and, as at the loss, a soft-capped head's tanh outputs, LitGPT's clamp_head per chunk, and the routers')
            moments.append(Moment("forward", "the head's chunks converted to fp32 (Lightning Fabric)", {
                **base,
                "activations": kept + saved_model_act + final_norm,
                "autocast_copies": casts_all,
                "logits_and_loss": logits + T.chunked_head_conversion_bytes(c, num) + softcap + aux,
                "previous_output": logits + retained_prev,
            }))
            if T.quantized_head_numel(c):  # the 4-bit head dequantized for the last chunk (fp16, then bf16)
                last = num.compute * V * min(T.LITGPT_HEAD_CHUNK, seq) * b
                moments.append(Moment("forward", "the 4-bit head's last chunk (dequantized weight)", {
                    **base,  # (the final norm's output, the head's input, is alive here; counted once)
                    "activations": kept + saved_model_act + final_norm + (0 if retained_head else r * h * tok // sp),
                    # (the earlier chunks, and their soft-capping tanh outputs where the head is capped)
                    "logits_and_loss": T.chunked_head_conversion_bytes(c, num) - last
                    + softcap - softcap * min(T.LITGPT_HEAD_CHUNK, seq) // seq + aux,
                    "temporaries": T.dequantized_weight_bytes(c, T.quantized_head_numel(c)),
                    "previous_output": logits + retained_prev,
                }))
        if T.head_adapter_sum_bytes(c, num):  # lora_head: the adapter's output added to the base logits
            moments.append(Moment("forward", "the head adapter's output added to the logits (lora_head)", {
                **base,
                "activations": kept + fwd_model_act + final_norm,
                "autocast_copies": casts_all,
                "logits_and_loss": T.head_adapter_sum_bytes(c, num) + aux,
                "previous_output": logits + retained_prev,
                "gathered_parameters": gathered_head,
            }))
        # inside the last decoder layer (what decides the forward when no logits are made: the chunked loss)
        moments.append(Moment("forward", "inside the last decoder layer", {
            **base,
            "activations": kept + fwd_model_act + T.layer_forward_transient(c, num, layer, sp, moe=layer_kind[1]),
            "autocast_copies": casts_all - lm_head_cast,
            "previous_output": logits + retained_prev,
            "gathered_parameters": gathered_layers if fsdp3 else (gathered_layers // 2 if k == 3 else 0),
        }))
    else:
        moments.append(Moment("forward", "end of the stage's forward, all in-flight micro-batches", {
            **base,
            "activations": kept + fwd_model_act,
            "autocast_copies": casts_all * st.in_flight if not recompute else casts_all,
            "gathered_parameters": gathered_layers,
        }))
    if s.cp > 1:  # context parallelism: the last layer's ring attention (context_parallel.py)
        moments.append(CP.ring_forward_moment(s, num, layer, {
            **base, "autocast_copies": casts_all - lm_head_cast, "previous_output": logits if st.head else 0,
            "gathered_parameters": gathered_layers if fsdp3 else (gathered_layers // 2 if k == 3 else 0)},
            kept + fwd_model_act, 2 * r * h * tok // sp, recompute))
    return moments


def _backward_start(x: Context, ly: Layers, sv: Saved, ls: Loss, gp: Gathered, base: dict) -> list[Moment]:
    """Backward, top: the loss gradient over the vocabulary (torch's log_softmax backward keeps its fp32
    output); the autocast weight copies the head's matmul still holds."""
    c, num, st, casts_all, casts_all_bwd_less = x.c, x.num, x.st, ls.casts_all, ls.casts_all_bwd_less
    chunked_head, final_norm, gathered_head, kept = ls.chunked_head, ls.final_norm, gp.gathered_head, sv.kept
    lm_head_cast, logits, loss_bwd = ls.lm_head_cast, ls.logits, ls.loss_bwd
    recompute, saved_model_act = sv.recompute, ly.saved_model_act
    # backward (a): the first nodes: NLL grad, log-softmax grad and its saved output (fp32)
    # Under checkpointing the layers' weight copies died with the autocast cache at the end
    # of the forward (nothing saved them); only the head's copy is still held by its matmul.
    casts_after_fwd = (casts_all if not recompute else lm_head_cast) - casts_all_bwd_less
    moments = []
    if st.head:
        moments.append(Moment("backward", "start: gradient of the loss over the vocabulary", {
            **base,
            "activations": kept + saved_model_act + final_norm,
            "autocast_copies": casts_after_fwd,
            "logits_and_loss": loss_bwd,
            "gathered_parameters": gathered_head,
        }))
    if chunked_head and T.quantized_head_numel(c):
        # every chunk's cast back to 16-bit ran before any chunk's head (higher sequence numbers first); the 4-bit
        # head's backward dequantizes its weight again for each chunk
        moments.append(Moment("backward", "the 4-bit head's backward, first chunk (dequantized weight)", {
            **base,
            "activations": kept + saved_model_act + final_norm,
            "logits_and_loss": logits + T.chunked_head_conversion_bytes(c, num),
            "temporaries": T.dequantized_weight_bytes(c, T.quantized_head_numel(c)),
        }))
    return moments


def _backward_state(x: Context, states: States, ly: Layers, sv: Saved, ls: Loss, gp: Gathered) -> Walk:
    """What the backward walks down with: gradients of the head, layers and embedding, and the activations
    still saved at the top and at the bottom layer (recompute: Chen et al. 2016)."""
    m, s, st, V, all_layers_act, attn = x.m, x.s, x.st, x.V, ly.all_layers_act, gp.attn
    bottom_halves, bottom_kind, bottom_layer = gp.bottom_halves, ly.bottom_kind, ly.bottom_layer
    casts_all, casts_layer, checkpoint, dp = ls.casts_all, ls.casts_layer, sv.checkpoint, x.dp
    frozen_input, fsdp3, full_ft, g, gb_ = ly.frozen_input, gp.fsdp3, x.full_ft, gp.g, x.gb_
    grad_bytes = states.grad_bytes
    h, halves_of, k, kept, kinds, layer = x.h, gp.halves_of, x.k, sv.kept, ly.kinds, ly.layer
    layer0_unkept, lm_head_cast, mlp, rebuilt_shared = ly.layer0_unkept, ls.lm_head_cast, gp.mlp, sv.rebuilt_shared
    recompute, retained_bottom, retained_mlp_of = sv.recompute, ly.retained_bottom, ly.retained_mlp_of
    retained_prev, root_grads, sac_saved, sac_shared = sv.retained_prev, gp.root_grads, sv.sac_saved, sv.sac_shared
    top_kind, top_layer, tp, zero_shard = ly.top_kind, ly.top_layer, x.tp, x.zero_shard
    # backward (b): the decoder layers, top to bottom. Each layer runs its MLP backward,
    # then its attention backward; gradients appear as saved tensors are released, so the
    # high points are the first layer reached (everything still saved) and the last one
    # (nearly all gradients present). Evaluated at both halves of both ends.
    per_layer_grad = attn.grad + mlp.grad
    layers_grad = sum(n * (halves_of[kind]["attn"].grad + halves_of[kind]["mlp"].grad) for kind, n in kinds)
    layers_grad = zero_shard(layers_grad, sum(n * halves_of[kind]["mlp"].expert_grad for kind, n in kinds))
    head_grad = grad_bytes - layers_grad - (V * h // tp * gb_ // (dp if k >= 2 else 1)
                                            if full_ft and st.embed and not m.tie_word_embeddings else 0)
    if not st.head:
        head_grad = 0
    embed_grad = grad_bytes - layers_grad - head_grad
    if fsdp3 and full_ft:  # the root's gradients stay unsharded until its post-backward
        head_grad = g * (V * h // tp + h) if not m.tie_word_embeddings else root_grads
        embed_grad = 0
    if recompute:  # checkpoints of every layer, plus the one layer being rebuilt (its saved outputs reused)
        rebuilt = rebuilt_shared + sac_shared
        top_acts = {"mlp": kept + top_layer.total - rebuilt, "attn": kept + attn.act - rebuilt}
        bottom_acts = {"mlp": bottom_layer.total - frozen_input, "attn": bottom_halves["attn"].act - frozen_input}
        top_casts = {"mlp": casts_layer, "attn": attn.casts}
    else:
        top_acts = {"mlp": kept, "attn": kept - mlp.act}
        bottom_acts = {"mlp": bottom_layer.total - frozen_input, "attn": bottom_halves["attn"].act - frozen_input}
        if s.activation_offload:  # what comes back for the node in backward and the node before it
            top_acts = {half: T.offload_brought_back(layer, half == "attn") for half in ("mlp", "attn")}
            bottom_acts = dict(top_acts)
        top_casts = {"mlp": casts_all * st.in_flight - lm_head_cast, "attn": casts_all * st.in_flight
                     - lm_head_cast - mlp.casts}
    if retained_prev:  # processed layers' saved tensors are freed, their 4-bit matmuls' inputs are not
        others = retained_prev if recompute else retained_prev - (retained_bottom - layer0_unkept)
        top_acts = {"mlp": top_acts["mlp"], "attn": top_acts["attn"] + retained_mlp_of[top_kind]}
        bottom_acts = {"mlp": bottom_acts["mlp"] + others,
                       "attn": bottom_acts["attn"] + others + retained_mlp_of[bottom_kind]}
    if st.in_flight > 1:  # other micro-batches' activations stay while the oldest one runs backward
        bottom_acts = {key: v + (st.in_flight - 1) * (all_layers_act if not recompute
                                                      else st.layers * (checkpoint + sac_saved))
                       for key, v in bottom_acts.items()}
    return Walk(per_layer_grad=per_layer_grad, layers_grad=layers_grad, head_grad=head_grad, embed_grad=embed_grad,
                top_acts=top_acts, bottom_acts=bottom_acts, top_casts=top_casts)


def _backward_top(x: Context, ly: Layers, sv: Saved, ls: Loss, gp: Gathered, wk: Walk, base: dict) -> list[Moment]:
    """Backward through the top decoder layer, MLP then attention (layer_halves: each half's temporaries);
    under recompute the layer rebuilt first; FSDP2 one layer further down."""
    c, num, s, st, attn = x.c, x.num, x.s, x.st, gp.attn
    fsdp3, gathered_layers, h, halves = gp.fsdp3, gp.gathered_layers, x.h, gp.halves
    head_grad, layer_rs, logits, mlp = wk.head_grad, gp.layer_rs, ls.logits, gp.mlp
    per_layer_grad, recompute, retained_mlp_of = wk.per_layer_grad, sv.recompute, ly.retained_mlp_of
    retained_top, saved_model_act, sp, tok, top_acts = ly.retained_top, ly.saved_model_act, ly.sp, x.tok, wk.top_acts
    top_casts, top_kind, top_layer = wk.top_casts, ly.top_kind, ly.top_layer
    unsharded_layer_grads, zero_shard = gp.unsharded_layer_grads, x.zero_shard
    cb_h_grad = num.compute * h * tok // sp  # the gradient arriving at the layer's output
    moments = []
    if recompute and st.head:  # the top layer rebuilt for its backward, at its last projection
        moments.append(Moment("backward", "top decoder layer, rebuilt (recompute forward)", {
            **base,
            "gradients": head_grad,
            "activations": top_acts["mlp"] + saved_model_act,
            "autocast_copies": top_casts["mlp"],
            "logits_and_loss": logits,
            "temporaries": T.layer_forward_transient(c, num, top_layer, sp, rebuilding=True, moe=top_kind[1])
            + cb_h_grad,
            "gathered_parameters": gathered_layers,
        }))
    for half, done_grads in (("mlp", 0), ("attn", mlp.grad)):
        moments.append(Moment("backward", f"top decoder layer, {half} backward", {
            **base,
            "gradients": head_grad + zero_shard(done_grads, mlp.expert_grad if done_grads else 0),
            "activations": top_acts[half] + saved_model_act,
            "autocast_copies": top_casts[half],
            "logits_and_loss": logits,
            "temporaries": halves[half].tmp + unsharded_layer_grads,
            "gathered_parameters": gathered_layers,
        }))
    if fsdp3 and st.layers > 1 and not recompute and not s.activation_offload:
        # FSDP2 one layer further down, as FSDPMemTracker shows its peak: the top layer's activations and the
        # next layer's MLP ones are freed, but the top layer's reduce-scatter input (in the reduce dtype: fp32
        # under MixedPrecisionPolicy) is alive beside the current layer's unsharded parameters and the next
        # layer's prefetched all-gather output.
        moments.append(Moment("backward", "second decoder layer from the top, mlp to attention", {
            **base,
            "gradients": head_grad + zero_shard(per_layer_grad, mlp.expert_grad),
            "activations": top_acts["mlp"] - top_layer.total - mlp.act + retained_top + retained_mlp_of[top_kind]
            + saved_model_act,
            "autocast_copies": max(top_casts["mlp"] - attn.casts - mlp.casts, 0),
            "logits_and_loss": logits,
            "temporaries": mlp.tmp + unsharded_layer_grads,
            "gathered_parameters": gathered_layers + layer_rs,
        }))
    return moments


def _backward_bottom(x: Context, states: States, ly: Layers, sv: Saved, ls: Loss, gp: Gathered, wk: Walk,
                     base: dict) -> list[Moment]:
    """Backward at the bottom: the first decoder layer's halves with nearly every gradient present, then the
    embedding's gradient (tied: added into the head's)."""
    c, m, s, st, V, bottom_acts = x.c, x.m, x.s, x.st, x.V, wk.bottom_acts
    bottom_halves, dp, embed_grad = gp.bottom_halves, x.dp, wk.embed_grad
    fsdp3, full_ft, g, gathered_bottom, gb_ = gp.fsdp3, x.full_ft, gp.g, gp.gathered_bottom, x.gb_
    grad_bytes, h, head_grad, k = states.grad_bytes, x.h, wk.head_grad, x.k
    layers_grad, logits = wk.layers_grad, ls.logits
    retained_prev, root_grads, saved_model_act, tp = sv.retained_prev, gp.root_grads, ly.saved_model_act, x.tp
    unsharded_layer_grads, w, zero_shard = gp.unsharded_layer_grads, x.w, x.zero_shard
    bottom_casts = {"mlp": ls.casts_layer, "attn": bottom_halves["attn"].casts}
    b_attn, b_mlp = bottom_halves["attn"], bottom_halves["mlp"]
    moments = []
    for half, missing in (("mlp", zero_shard(b_attn.grad + b_mlp.grad, b_mlp.expert_grad)),
                          ("attn", zero_shard(b_attn.grad))):
        moments.append(Moment("backward", f"first decoder layer, {half} backward", {
            **base,
            "gradients": (layers_grad - missing + head_grad) if fsdp3 else grad_bytes - embed_grad - missing,
            "activations": bottom_acts[half] + saved_model_act,
            "autocast_copies": bottom_casts[half],
            "logits_and_loss": logits,
            "temporaries": bottom_halves[half].tmp + unsharded_layer_grads,
            "gathered_parameters": gathered_bottom,
        }))
    # backward (c): the embedding's gradient; with tied embeddings it is added into the
    # head's gradient, so for a moment both exist.
    if st.embed and fsdp3:
        # the root's post-backward: its parameters are resharded, its gradients copied into a
        # flat reduce-scatter input (root-sized) and out comes the shard; one vocabulary-sized
        # gradient is not yet freed.
        moments.append(Moment("backward", "end: the root's gradients reduce-scattered", {
            **base,
            "gradients": layers_grad + (g * V * h // tp if full_ft else 0),
            "logits_and_loss": logits,
            # the reduce-scatter input (reduce dtype) and the fp32 shard; its parameters are resharded by now
            "temporaries": (root_grads * w.reduce + T.root_numel(c) * gb_ // dp * (1 if full_ft else 0)) // g,
        }))
    elif st.embed:
        moments.append(Moment("backward", "embedding backward", {
            **base,
            "gradients": grad_bytes,
            "activations": retained_prev,
            "logits_and_loss": logits,
            # tied embeddings: the embedding's gradient is added to the head's; after the fused loss (whose
            # gradient .grad took over while still referenced) the sum is made out of place: two of them
            "temporaries": (2 if s.loss == "chunked" else 1) * V * h // tp * gb_
            if (full_ft and m.tie_word_embeddings and st.head) else 0,
            "gathered_parameters": gp.gathered_head if k == 3 else 0,
        }))
    return moments


def _optimizer_moment(states: States, sv: Saved, ls: Loss) -> Moment:
    """optimizer.step(): everything persistent plus the optimizer's temporaries (optimizers.step_transient_bytes)."""
    grad_bytes, logits, opt_tmp, param_step = states.grad_bytes, ls.logits, states.opt_tmp, states.param_step
    retained_prev, state_bytes = sv.retained_prev, states.state_bytes
    # optimizer step: everything persistent plus the optimizer's temporaries
    return Moment("optimizer", "optimizer.step()", {
        "parameters": param_step, "optimizer": state_bytes, "gradients": grad_bytes, "logits_and_loss": logits,
        "temporaries": opt_tmp, "activations": retained_prev,
    })


def _gradient_accumulation(x: Context, states: States, moments: list[Moment]) -> None:
    """Gradient accumulation: the accumulated .grad alive through every micro-batch's forward and backward
    (torch's AccumulateGrad adds in place)."""
    m, s, V, full_ft, gb_, grad_bytes, h = x.m, x.s, x.V, x.full_ft, x.gb_, states.grad_bytes, x.h
    tp = x.tp
    if s.grad_accum > 1:
        # Gradient accumulation: the gradients of the earlier micro-batches stay in .grad through
        # this micro-batch's forward and backward; each new gradient is added in place
        # (AccumulateGrad), so beside them only the one being added exists (layer_halves' tmp;
        # for the embedding, its whole vocabulary-sized gradient).
        for mo in moments:
            if mo.name in ("forward", "backward"):
                mo.parts["gradients"] = grad_bytes
                if mo.where == "embedding backward" and full_ft and not m.tie_word_embeddings:
                    mo.parts["temporaries"] = mo.parts.get("temporaries", 0) + V * h // tp * gb_


def _input_leaf(x: Context, ly: Layers, moments: list[Moment]) -> None:
    """The embedding output made to require grad under HF's gradient checkpointing (enable_input_require_grads):
    alive with the graph (terms.input_leaf_bytes)."""
    c, num, sp = x.c, x.num, ly.sp
    leaf = T.input_leaf_bytes(c, num, sp)
    if leaf:  # the embedding output made to require grad (HF checkpointing): alive with the graph
        for mo in moments:
            if mo.name == "forward":  # the previous step's leaf and its gradient, held by its graph
                mo.parts["previous_output"] = mo.parts.get("previous_output", 0) + 2 * leaf
            elif mo.name == "backward":  # (the leaf itself is layer 0's checkpointed input meanwhile)
                if mo.where == "embedding backward":
                    mo.parts["gradients"] = mo.parts.get("gradients", 0) + leaf
            else:
                mo.parts["activations"] = mo.parts.get("activations", 0) + 2 * leaf


def _offloaded_gradients(x: Context, states: States, moments: list[Moment]) -> States:
    """ZeRO-Offload: gradients leave the GPU per bucket, never more than the bucket on it (Ren et al. 2021). DeepSpeed
    with contiguous_gradients allocates that bucket whole: ZeRO-1/2 at the start of each backward (stage_1_and_2.py
    backward: ipg_buffer), ZeRO-3 with the optimizer (stage3.py __ipg_bucket_flat_buffer)."""
    s, grad_bucket, grad_bytes = x.s, states.grad_bucket, states.grad_bytes
    if s.offload != "none":  # gradients leave the GPU per bucket: never more than the bucket on it
        whole = s.reduce_bucket_size * x.w.grad if (s.sharding == "deepspeed" and s.contiguous_gradients) else 0
        for mo in moments:
            if whole and (mo.name == "backward" or x.k == 3):
                mo.parts["gradients"] = whole
            elif "gradients" in mo.parts:
                mo.parts["gradients"] = min(max(mo.parts["gradients"], 0), grad_bucket)
        grad_bucket = whole or grad_bucket
        grad_bytes = grad_bucket
    return dataclasses.replace(states, grad_bytes=grad_bytes, grad_bucket=grad_bucket)


def _ddp_buckets(x: Context, moments: list[Moment]) -> int:
    """DDP's all-reduce buckets, a second copy of the gradients at every moment (torch DDP, bucket_cap_mb;
    terms.ddp_bucket_bytes)."""
    c, dp, notes = x.c, x.dp, x.notes
    ddp_buckets = T.ddp_bucket_bytes(c)
    if ddp_buckets:  # allocated when DDP wraps the model: alive at every moment
        for mo in moments:  # counted with the gradients: the buckets are their second copy
            mo.parts["gradients"] = mo.parts.get("gradients", 0) + ddp_buckets
        notes.append(f"DDP over {dp} GPUs: its all-reduce buckets hold a second copy of the gradients "
                     f"({fmt_bytes(ddp_buckets)}); gradient_as_bucket_view=True makes the gradients views into them")
    return ddp_buckets


def _megatron_grad_buffer(x: Context, states: States, moments: list[Moment]) -> tuple[int, int]:
    """Megatron-Core's DistributedDataParallel keeps every main gradient in one contiguous buffer (fp32 under
    --bf16, 16-bit under --fp16) allocated when the model is wrapped (core/distributed/param_and_grad_buffer.py),
    whole on every data-parallel rank even with the distributed optimizer (dist_optimizer.md): the gradients are
    alive at every moment. Unfused attention's score buffer (terms.megatron_attention_score_buffer_bytes) is kept
    from the first forward on, so it is in every moment too."""
    score_buffer = T.megatron_attention_score_buffer_bytes(x.c)
    lp_grads = lp = T.bf16_lp_grad_bytes(x.c)
    if x.s.layout not in MEGATRON_MODELS:
        return score_buffer, lp_grads
    # Megatron-Core's main-grad buffer, or BF16_Optimizer's fp32 gradients (allocated at start-up) and the bf16 ones
    # the first backward leaves for good; under ZeRO (Megatron-DeepSpeed) DeepSpeed's own buckets and partitions
    whole = x.s.sharding == "megatron"
    for mo in moments:
        if whole and mo.name in ("forward", "backward"):
            growing = mo.parts.get("gradients", 0)  # this backward's gradients so far, at the fp32 width
            mo.parts["gradients"] = states.grad_bytes + lp
            if lp and x.s.grad_accum == 1:  # the first iteration: none yet in its forward, growing in its backward
                mo.lazy_bytes = lp if mo.name == "forward" else max(lp - growing // 2, 0)
        elif lp and mo.name == "optimizer":
            mo.parts["gradients"] = mo.parts.get("gradients", 0) + lp
        # unfused attention's score buffer: kept from the first forward on, through every later moment
        mo.parts["temporaries"] = mo.parts.get("temporaries", 0) + score_buffer
    return score_buffer, lp_grads


def _deferred_embedding_wgrad(x: Context, moments: list[Moment]) -> int:
    """--defer-embedding-wgrad-compute (terms.deferred_embedding_wgrad_bytes): on the head's stage the step's last
    micro-batch finds the earlier ones' head inputs and logit gradients still held (up to --wgrad-deferral-limit),
    and from its own head backward on, its own too; the flush drains them before the optimizer step."""
    s = x.s
    if s.megatron_wgrad_deferral is None or not x.st.head:
        return 0
    m = s.grad_accum
    cap = min(s.megatron_wgrad_deferral or m, m)
    for mo in moments:
        if mo.name == "optimizer":
            continue
        before_head_backward = mo.name == "forward" or mo.where.startswith("start:")
        held = T.deferred_embedding_wgrad_bytes(x.c, min(m - 1, cap) if before_head_backward else cap)
        mo.parts["logits_and_loss"] = mo.parts.get("logits_and_loss", 0) + held
    return T.deferred_embedding_wgrad_bytes(x.c, cap)


def _deepspeed_buckets(x: Context, moments: list[Moment]) -> tuple[int, int, int]:
    """DeepSpeed's gradient bucket (terms.deepspeed_bucket_bytes), counted with the gradients: ZeRO-3's at every
    moment; ZeRO-1/2's from backward() on, released by the reduction epilogue at the end of each backward (ZeRO-1
    reduces only at the step's last micro-batch: its bucket stays through the next forward)."""
    ds_buckets = T.deepspeed_bucket_bytes(x.c)
    ds_grad_partition = T.deepspeed_grad_partition_bytes(x.c)
    ds_stream_held = T.deepspeed_stream_held_grad_bytes(x.c)
    if ds_stream_held:
        x.notes.append(f"ZeRO-3 with overlap_comm: up to {fmt_bytes(ds_stream_held)} of gradients freed while the "
                       "reduce stream may still copy them (3 buckets, DeepSpeed's max_param_reduce_events + 1) count "
                       "as active bytes, not allocated: active_peak_bytes adds them; the allocator frees them before "
                       "an out-of-memory error")
    if ds_grad_partition:
        # ZeRO-3's gradient partition is one buffer made at init: whole at every moment (the sharded gradients the
        # backward moments count so far are slices of it, so it replaces them).
        for mo in moments:
            if mo.name in ("forward", "backward"):
                mo.parts["gradients"] = ds_grad_partition
    if not ds_buckets:
        return ds_buckets, ds_grad_partition, ds_stream_held
    kept_forward = x.k == 3 or (x.k == 1 and x.s.grad_accum > 1)
    for mo in moments:
        if mo.name == "backward" or (mo.name == "forward" and kept_forward) or x.k == 3:
            mo.parts["gradients"] = mo.parts.get("gradients", 0) + ds_buckets
    x.notes.append(f"DeepSpeed ZeRO-{x.k}: its contiguous gradient bucket, reduce_bucket_size = "
                   f"{x.s.reduce_bucket_size:,} elements x {ds_buckets // (x.s.reduce_bucket_size * x.w.grad)} "
                   f"({fmt_bytes(ds_buckets)}{', overlap_comm' if x.s.overlap_comm else ''})")
    return ds_buckets, ds_grad_partition, ds_stream_held


def _deepspeed_saved_weights(x: Context, moments: list[Moment]) -> int:
    """ZeRO-3 with zero_init=False (terms.zero3_saved_weight_bytes): torch's linear holds each layer's gathered
    weights from its forward to its backward. Without recompute every layer's are held at the loss and at the top of
    the backward, one fewer inside the last layer's forward, the first layer's alone at the bottom; under full
    recompute (HF's reentrant checkpoint runs the forward without gradients) only the layer being rebuilt holds
    them, beside its weights gathered again for its backward."""
    held = T.zero3_saved_weight_bytes(x.c)
    if not held:
        return held
    layers, full = x.st.layers, x.s.recompute == "full"

    def held_layers(mo: Moment) -> int:
        if mo.name == "forward":
            return 0 if full else layers - (mo.where == "inside the last decoder layer")
        if mo.name != "backward":
            return 0
        if mo.where.startswith("start"):
            return 0 if full else layers
        if "top decoder layer" in mo.where:
            return 1 if full else layers
        return 1 if "first decoder layer" in mo.where else 0

    for mo in moments:
        if n := held_layers(mo):
            mo.parts["gathered_parameters"] = mo.parts.get("gathered_parameters", 0) + n * held
    x.notes.append(f"ZeRO-3 without zero.Init: torch's linear keeps each layer's gathered weights "
                   f"({fmt_bytes(held)} a layer) from its forward to its backward"
                   + (" (under recompute, the layer being rebuilt)" if full else f", {fmt_bytes(layers * held)} "
                      "for all layers at the loss"))
    return held


def _deepspeed_offload_buffers(x: Context, states: States, ly: Layers, sv: Saved, ls: Loss,
                               moments: list[Moment]) -> tuple[int, int]:
    """ZeRO-1/2 with offload_optimizer (deepspeedai/DeepSpeed v0.14.2 runtime/zero/stage_1_and_2.py): the 16-bit
    staging buffer of the largest parameter, alive at every moment (terms.deepspeed_offload_grad_buffer_bytes), and
    the moment the largest parameter's reduced gradient goes to the host. A parameter larger than the bucket keeps
    its own gradient and is reduced alone (extra_large_param_to_reduce) when the next gradient arrives: first its
    all-reduce's flat copy, then the overflow check on the whole gradient (terms.deepspeed_offload_check_bytes).
    The GPU whose partition holds the embedding does it at the end of the backward, the one holding an untied head
    near the start, with every saved activation still alive; each is the heaviest GPU of the group."""
    c, s, st = x.c, x.s, x.st
    buffer = T.deepspeed_offload_grad_buffer_bytes(c)
    if not buffer:
        return buffer, 0
    for mo in moments:
        mo.parts["gradients"] = mo.parts.get("gradients", 0) + buffer
    largest = T.largest_trainable_numel(c)
    ds_offload_check = T.deepspeed_offload_check_bytes(c, largest)
    own = largest * c.w.grad if largest > s.reduce_bucket_size else 0  # an extra-large gradient is not in the bucket
    # the all-reduce flattens that gradient first (allreduce_bucket: self.flatten), then the check runs on it
    check = max(ds_offload_check, own)
    grads = states.grad_bucket + buffer + own
    base = {"parameters": states.param_live, "optimizer": states.state_bytes}
    head = x.V * x.h // x.tp if st.head else 0
    if st.head and x.full_ft and not x.m.tie_word_embeddings and head == largest:
        moments.append(Moment("backward", "the head's reduced gradient sent to the host (ZeRO-Offload)", {
            **base, "gradients": grads, "activations": sv.kept + ly.saved_model_act + ls.final_norm,
            "logits_and_loss": ls.logits, "temporaries": check}))
    moments.append(Moment("backward", "the largest parameter's reduced gradient sent to the host (ZeRO-Offload)", {
        **base, "gradients": grads, "activations": sv.retained_prev, "logits_and_loss": ls.logits,
        "temporaries": check}))
    x.notes.append(f"ZeRO-Offload's GPU side: a {fmt_bytes(buffer)} staging buffer (the largest parameter in "
                   f"16 bits) and, as each reduced gradient leaves for the host, its overflow check "
                   f"({fmt_bytes(ds_offload_check)} for the largest)")
    return buffer, ds_offload_check


def _mark_first_step(moments: list[Moment], lazy_state: int, grad_accum: int) -> None:
    """What the first iteration's forward and backward lack (Moment.lazy_bytes): the optimizer states made in the
    first step (terms.first_step_optimizer_state_bytes) and, with one micro-batch per step, the previous step's
    output."""
    for mo in moments:  # (adding to what a layout marked already: BF16_Optimizer's bf16 gradients)
        if mo.name != "optimizer":
            mo.lazy_bytes += lazy_state + (mo.parts.get("previous_output", 0) if grad_accum == 1 else 0)


def _result(x: Context, states: States, ly: Layers, sv: Saved, ls: Loss, gp: Gathered, bf: Buffers,
            moments: list[Moment]) -> Estimate:
    """The estimate: counts, the named terms with their sources (terms.source), the layer kinds."""
    c, m, num, s, st, aux, casts_all, checkpoint = x.c, x.m, x.num, x.s, x.st, ls.aux, ls.casts_all, sv.checkpoint
    chunked_head, ddp_buckets, final_norm = ls.chunked_head, bf.ddp_buckets, ls.final_norm
    frozen_input, fsdp3, full_ft, fwd_model_act = ly.frozen_input, gp.fsdp3, x.full_ft, ly.fwd_model_act
    grad_bytes, grad_full, host_bytes, k = states.grad_bytes, states.grad_full, states.host_bytes, x.k
    host_acts = sv.host_acts
    kinds, layer, layer_act, layer_param_bytes = ly.kinds, ly.layer, ly.layer_act, gp.layer_param_bytes
    ledgers, logits, loss_bwd, loss_fwd = ly.ledgers, ls.logits, ls.loss_bwd, ls.loss_fwd
    notes, nvme_bytes, opt_tmp, param_full = x.notes, states.nvme_bytes, states.opt_tmp, states.param_full
    param_rest, recompute, retained_prev, root_bytes = states.param_rest, sv.recompute, sv.retained_prev, gp.root_bytes
    saved_model_act, softcap, sp, state_bytes = ly.saved_model_act, ls.softcap, ly.sp, states.state_bytes
    state_full, sums, tp, trainable = states.state_full, x.sums, x.tp, x.trainable
    counts = {"trainable": trainable, "param_bytes": param_rest, "grad_bytes": grad_bytes,
              "optimizer_bytes": state_bytes, "layer_activation_bytes": layer_act,
              "optimizer_temporary_bytes": opt_tmp, "adapter_params": trainable if not full_ft else 0,
              "param_bytes_unsharded": param_full, "grad_bytes_unsharded": grad_full,
              "optimizer_bytes_unsharded": state_full, "expert_params": c.expert,
              "moe_layers": sum(n for (_, moe), n in kinds if moe), "routed_rows": T.routed_rows(c) if m.is_moe else 0}
    named = [(T.parameter_bytes, param_full), (T.gradient_bytes, grad_full), (T.optimizer_state_bytes, state_full),
             (T.optimizer_step_temporaries, opt_tmp), (T.autocast_weight_copies, casts_all),
             (T.saved_model_activations, saved_model_act), (T.forward_only_activations, fwd_model_act),
             (T.final_norm_activations, final_norm - ly.head_adapter), (T.head_adapter_activations, ly.head_adapter),
             (T.frozen_first_norm, frozen_input)]
    if recompute:
        named.append((T.checkpoint_bytes, checkpoint))
    # the layouts' buffers (a term that is 0 here is left out with the others below)
    named += [(T.ddp_bucket_bytes, ddp_buckets), (T.deepspeed_bucket_bytes, bf.ds_buckets),
              (T.deepspeed_grad_partition_bytes, bf.ds_grad_partition),
              (T.zero3_saved_weight_bytes, bf.ds_saved_weights),
              (T.deepspeed_stream_held_grad_bytes, bf.ds_stream_held),
              (T.megatron_attention_score_buffer_bytes, bf.score_buffer), (T.bf16_lp_grad_bytes, bf.lp_grads),
              (T.deferred_embedding_wgrad_bytes, bf.deferred_wgrad)]
    if bf.ds_offload_buffer:  # (its check is computed only with the buffer)
        named += [(T.deepspeed_offload_grad_buffer_bytes, bf.ds_offload_buffer),
                  (T.deepspeed_offload_check_bytes, bf.ds_offload_check)]
    if s.finetune == "qlora":
        named += [(T.nf4_weight_bytes, T.nf4_weight_bytes(c)),
                  (T.dequantized_weight_bytes, T.dequantized_weight_bytes(c, max(sums.layer_linear_numels) // tp))]
    if retained_prev:
        named.append((T.bnb_retained_input_bytes, retained_prev))
    if s.loss == "chunked" and st.head:
        named += [(T.fused_loss_saved_bytes, loss_bwd), (T.fused_loss_chunk_bytes, loss_fwd - loss_bwd)]
    elif chunked_head:
        named += [(T.chunked_head_logits_bytes, logits),
                  (T.chunked_head_conversion_bytes, T.chunked_head_conversion_bytes(c, num)),
                  (T.chunked_head_log_softmax_bytes, T.chunked_head_log_softmax_bytes(c)),
                  (T.chunked_head_chunk_bytes, T.chunked_head_chunk_bytes(c))]
    elif x.vocab_loss and st.head:
        named += [(T.vocab_parallel_cross_entropy_bytes, loss_fwd),
                  (T.vocab_parallel_cross_entropy_backward_bytes, loss_bwd)]
    elif st.head:
        named += [(T.logits_bytes, logits), (T.loss_upcast_bytes, T.loss_upcast_bytes(c, num)),
                  (T.log_softmax_bytes, T.log_softmax_bytes(c)), (T.loss_backward_bytes, T.loss_backward_bytes(c))]
    if not m.is_llama_layer:  # the newer families' own terms (the LLaMA layer's are all above)
        stage_layers = [(ledgers[kind], n * st.in_flight) for kind, n in kinds]
        named += [(fn, fn(c, stage_layers)) for fn in T.FAMILY_LAYER_TERMS]
        named += [(T.rope_table_bytes, T.rope_table_bytes(c, num)), (T.attention_mask_bytes, T.attention_mask_bytes(c, num)),
                  (T.embedding_scale_bytes, T.embedding_scale_bytes(c, num, sp)), (T.logit_softcap_bytes, softcap),
                  (T.router_aux_loss_bytes, aux), (T.all_to_all_buffer_bytes, T.all_to_all_buffer_bytes(c, num))]
    if s.cp > 1:
        named += [(fn, fn(s, num)) for fn in CP.RING_TERMS]
    if k == 3:
        named.append((T.layer_parameter_bytes, layer_param_bytes))
        if fsdp3:
            named.append((T.root_parameter_bytes, root_bytes))
    terms = [T.Term(fn.__name__, int(v), T.source(fn)) for fn, v in named if v]
    _mark_first_step(moments, T.first_step_optimizer_state_bytes(c), s.grad_accum)
    kinds_out = [] if len(kinds) == 1 else [
        (f"{'MoE' if moe else 'dense'} layer, {layer_type.replace('_', ' ')}", n, ledgers[(layer_type, moe)])
        for (layer_type, moe), n in kinds]
    return Estimate(s, moments, counts, layer, notes, host_bytes + host_acts, nvme_bytes, terms, kinds_out,
                    stream_held_bytes=bf.ds_stream_held)


def _estimate_context_parallel(s: TrainingSetup) -> Estimate:
    """cp > 1: the estimate of one GPU's view (seq_len / cp tokens, model states sharded over dp x cp), with the
    ring attention's moments, reported against the setup as given (context_parallel.py)."""
    est = estimate(CP.local_setup(s))
    kind = "FSDP over" if s.sharding == "fsdp" else "a replica on each of"
    est.notes.append(
        f"context parallelism: each sequence of {s.seq_len:,} tokens split over cp={s.cp} GPUs, {s.seq_len // s.cp:,} "
        f"per GPU (2 x cp load-balanced chunks); ring attention with K/V exchanged by {s.cp_rotate} "
        f"(torch context_parallel, torchtitan); model states {kind} dp x cp = {s.dp * s.cp} GPUs")
    est.setup = s
    return est


def _estimate_gpt(s: TrainingSetup) -> Estimate:
    """GPT-style models (LayerNorm, GELU MLP, dropout): Korthikanti et al. 2022 activations,
    16 bytes/param model states for mixed-precision AdamW (Rajbhandari et al. 2020, Sec. 3.1)."""
    m = s.model
    pb = T.PARAM_BYTES[s.precision]
    tensors = layout.trainable_tensors(s, layout.stages(s)[0])
    grad_bytes = m.num_params * pb
    state = opt.state_bytes(s.optimizer, tensors, pb)
    # sdpa (flash attention) keeps no s x s tensor: Korthikanti's attention-core term (5as/h: softmax output,
    # its dropout mask and output) goes, as under selective recompute, and the fp32 log-sum-exp comes in.
    core = "selective" if (s.attention == "sdpa" and s.recompute == "none") else s.recompute
    layer_bytes = act.korthikanti_layer_bytes(s.seq_len, s.micro_batch, m.hidden_size, m.num_heads, recompute=core)
    if T.NUMERICS[s.precision].compute == 4:
        layer_bytes *= 2
    layer = act.Ledger()
    layer.add("korthikanti", layer_bytes, "s*b*h*(34 + 5*a*s/h), Korthikanti et al. 2022 eq. (1)"
              + ("; sdpa: without the 5as/h attention core" if core != s.recompute else ""))
    if s.attention == "sdpa" and s.recompute != "full":
        lse = 4 * m.num_heads * s.tokens
        layer.add("sdpa.logsumexp", lse, "fp32 row log-sum-exp the fused kernel keeps instead of the s x s matrix")
        layer_bytes += lse
    acts = layer_bytes * m.num_layers
    logits = 4 * m.vocab_size * s.tokens
    if s.sharding == "deepspeed":
        return _estimate_gpt_deepspeed(s, layer, layer_bytes, acts, logits)
    moments = [
        Moment("forward", "end of forward", {"parameters": m.num_params * pb, "optimizer": state,
                                             "activations": acts, "logits_and_loss": 2 * logits}),
        Moment("optimizer", "optimizer.step()", {"parameters": m.num_params * pb, "gradients": grad_bytes,
                                                 "optimizer": state, "temporaries": opt.step_transient_bytes(
                                                     s.optimizer, m.largest_tensor_numel, pb, impl=s.optimizer_impl,
                                                     group_numel=m.num_params)}),
    ]
    _mark_first_step(moments, state if s.offload == "none" else 0, s.grad_accum)
    counts = {"trainable": m.num_params, "param_bytes": m.num_params * pb, "grad_bytes": grad_bytes,
              "optimizer_bytes": state, "layer_activation_bytes": layer_bytes, "optimizer_temporary_bytes": 0,
              "adapter_params": 0}
    return Estimate(s, moments, counts, layer, ["GPT-style model: Korthikanti et al. 2022 activation formula"])


def _estimate_gpt_deepspeed(s: TrainingSetup, layer, layer_bytes: int, acts: int, logits: int) -> Estimate:
    """A GPT-style model under DeepSpeed's ZeRO: the activations as in _estimate_gpt (Korthikanti et al. 2022), the
    model states, buffers and step temporaries from the same terms as the LLaMA path (_context, _model_states,
    _offload; terms.deepspeed_bucket_bytes, deepspeed_grad_partition_bytes, optimizer_step_temporaries). ZeRO
    partitions flat copies of whatever parameters the model has (runtime/zero/stage_1_and_2.py, stage3.py), so only
    ZeRO-3's gathered layers (the one in use and the prefetched next, Rajbhandari et al. 2020, Sec. 5.3) depend on
    the layer's shape. The moments: the end of the forward and optimizer.step()."""
    x = _context(s, layout.stages(s)[0])
    states = _offload(x, _model_states(x))
    c, k = x.c, x.k
    bucket = T.deepspeed_bucket_bytes(c)
    grad_partition = T.deepspeed_grad_partition_bytes(c)
    gathered = 2 * T.layer_parameter_bytes(c) if k == 3 and s.offload != "optimizer+params" and s.dp > 1 else 0
    held = T.zero3_saved_weight_bytes(c)  # zero_init=False: each layer's weights held by torch's linear
    stream_held = T.deepspeed_stream_held_grad_bytes(c)
    if held and s.recompute != "full":
        gathered += s.model.num_layers * held
    moments = [
        Moment("forward", "end of forward", {
            "parameters": states.param_live, "optimizer": states.state_bytes, "activations": acts,
            "logits_and_loss": 2 * logits, "gathered_parameters": gathered,
            "gradients": grad_partition + (bucket if k == 3 else 0)}),
        Moment("optimizer", "optimizer.step()", {
            "parameters": states.param_step, "gradients": states.grad_bytes + (bucket if k == 3 else 0),
            "optimizer": states.state_bytes, "temporaries": states.opt_tmp}),
    ]
    counts = {"trainable": x.trainable, "param_bytes": states.param_rest, "grad_bytes": states.grad_bytes,
              "optimizer_bytes": states.state_bytes, "layer_activation_bytes": layer_bytes,
              "optimizer_temporary_bytes": states.opt_tmp, "adapter_params": 0,
              "param_bytes_unsharded": states.param_full, "grad_bytes_unsharded": states.grad_full,
              "optimizer_bytes_unsharded": states.state_full}
    named = [(T.parameter_bytes, states.param_full), (T.gradient_bytes, states.grad_full),
             (T.optimizer_state_bytes, states.state_full), (T.optimizer_step_temporaries, states.opt_tmp)]
    if bucket:
        named.append((T.deepspeed_bucket_bytes, bucket))
    if grad_partition:
        named.append((T.deepspeed_grad_partition_bytes, grad_partition))
    if held:
        named.append((T.zero3_saved_weight_bytes, held))
    if stream_held:
        named.append((T.deepspeed_stream_held_grad_bytes, stream_held))
    terms = [T.Term(fn.__name__, n, T.source(fn)) for fn, n in named]
    _mark_first_step(moments, T.first_step_optimizer_state_bytes(c), s.grad_accum)
    notes = x.notes + ["GPT-style model: Korthikanti et al. 2022 activation formula; DeepSpeed's model states, "
                       "buckets and step temporaries as for LLaMA-style models"]
    return Estimate(s, moments, counts, layer, notes, states.host_bytes, states.nvme_bytes, terms,
                    stream_held_bytes=stream_held)
