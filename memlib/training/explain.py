"""Markdown derivations of estimates: every number with the formula that produced it."""

from __future__ import annotations

from memlib.units import fmt_bytes, fmt_count, gb


def _row(label: str, formula: str, nbytes: int) -> str:
    return f"| {label} | {formula} | {gb(nbytes):,.3f} GB | {nbytes / 2**30:,.3f} GiB |"


def explain_training(est) -> str:
    s = est.setup
    m = s.model
    c = est.counts
    lines = [
        f"### Training memory: {m.name}",
        "",
        f"{m.describe()}.",
        f"Setup: sequence {s.seq_len:,} x micro-batch {s.micro_batch} = {s.tokens:,} tokens"
        + (f" ({s.tokens_per_gpu:,} per GPU: context parallelism over cp={s.cp} GPUs)" if getattr(s, "cp", 1) > 1
           else "") + ", "
        f"precision **{s.precision}**, optimizer **{s.optimizer}**, fine-tuning **{s.finetune}**"
        + (f" (rank {s.lora_rank} on {', '.join(s.lora_targets + (('lm_head',) if s.lora_head else ()))}: "
           f"{fmt_count(c['trainable'])} trainable)"
           if s.finetune != "full" else "")
        + f", recompute **{s.recompute}**, attention **{s.attention}**"
        + _recipe(s) + ".",
        "",
        "**1. Model states** (alive for the whole step)",
        "",
        "| term | how | GB | GiB |",
        "|---|---|---:|---:|",
        _row("parameters", f"{m.num_params:,} params", c["param_bytes"]),
        _row("gradients", f"{c['trainable']:,} trainable x "
             f"{c.get('grad_bytes_unsharded', c['grad_bytes']) // max(c['trainable'], 1)} B"
             + (" (partitioned over the data-parallel GPUs)" if c["grad_bytes"] < c.get("grad_bytes_unsharded", 0)
                else "") + " (present from their backward until zero_grad)", c["grad_bytes"]),
        _row("optimizer states", f"{s.optimizer} over {c['trainable']:,} trainable params", c["optimizer_bytes"]),
        "",
        f"**2. Saved activations of one decoder layer** ({getattr(s, 'tokens_per_gpu', s.tokens):,} tokens); "
        + (f"x {m.num_layers} layers" if not getattr(est, "layer_kinds", None) else
           "the layers differ: one table per kind of layer")
        + (" (full recompute keeps only each layer's input)" if s.recompute == "full" else ""),
    ]
    if not getattr(est, "layer_kinds", None):
        lines += ["", "| tensor kept for backward | why | GB | GiB |", "|---|---|---:|---:|"]
    kinds = getattr(est, "layer_kinds", None) or [("", m.num_layers, est.layer)]
    for label, n, led in kinds:
        if label:
            lines += ["", f"*{label}* (x {n} on this GPU)", "", "| tensor kept for backward | why | GB | GiB |",
                      "|---|---|---:|---:|"]
        for name, nbytes, why in led.items:
            lines.append(_row(f"`{name}`", why, nbytes))
        lines.append(_row("**one layer**", "sum", led.total))
    lines += [
        "",
        "**3. The moments of a step** (peak = the largest; each row is what is alive then)",
        "",
        "| moment | where | total GB | total GiB | largest parts |",
        "|---|---|---:|---:|---|",
    ]
    peak = est.peak_moment
    for mo in est.moments:
        parts = sorted(((v, k) for k, v in mo.parts.items() if v), reverse=True)[:4]
        mark = " **(peak)**" if mo is peak else ""
        lines.append(f"| {mo.name}{mark} | {mo.where} | {gb(mo.total):,.3f} | {mo.total / 2**30:,.3f} | "
                     + ", ".join(f"{k} {gb(v):.2f} GB" for v, k in parts) + " |")
    if est.terms:
        lines += ["", "**4. The named terms** (memlib/training/terms.py; each row's source is its function's docstring)",
                  "", "| term | source | GB | GiB |", "|---|---|---:|---:|"]
        lines += [_row(f"`{t.name}`", t.source, t.nbytes) for t in est.terms]
    lines += ["", f"**Peak: {fmt_bytes(est.peak_bytes)}** during **{est.phase}** ({peak.where})."
              + (f" Active bytes up to **{fmt_bytes(est.active_peak_bytes)}** (freed blocks another stream may "
                 "still read: active_peak_bytes)." if getattr(est, "stream_held_bytes", 0) else "")
              + (f" The first iteration peaks at **{fmt_bytes(est.first_iteration_peak_bytes)}**: its forward and "
                 "backward run before the optimizer creates its states in the first step (first_iteration_peak_bytes; "
                 "a log line after iteration 1 shows this, later steps the peak)."
                 if est.first_iteration_peak_bytes < est.peak_bytes else "")]
    for note in est.notes:
        lines.append(f"- {note}")
    return "\n".join(lines)


def _recipe(s) -> str:
    """The recipe options that differ from a plain single-step loop, in words."""
    bits = []
    if getattr(s, "recipe", ""):
        bits.append(f"recipe **{s.recipe}**" + (" (it set " + ", ".join(f"{k}={v!r}" for k, v in s.recipe_set) + ")"
                                                 if s.recipe_set else " (memlib's defaults)"))
    if getattr(s, "optimizer_impl", None) and s.optimizer in ("adamw", "sgd", "sgd-momentum", "adafactor"):
        bits.append(f"torch.optim **{s.optimizer_impl}**")
    if s.finetune != "full":
        bits.append(f"base **{s.base_dtype}**, adapters **{s.adapter_dtype}**"
                    + (f", LoRA dropout **{s.lora_dropout:g}**" if s.lora_dropout else ""))
    if s.finetune == "qlora":
        bits.append(f"QLoRA **{s.qlora_backend}**" + (", double quantization" if s.double_quant else ""))
    if s.grad_accum > 1:
        bits.append(f"**{s.grad_accum}** micro-batches per step")
    if s.loss == "chunked":
        bits.append("**chunked loss** (Liger's fused linear cross-entropy)")
    elif s.loss == "chunked-head":
        bits.append("**chunked head** (LitGPT: the head per 128 tokens, fp32 logits under Lightning Fabric, "
                    "cross-entropy per chunk)")
    if s.activation_offload:
        bits.append("**activation offloading** (torchtune)")
    return (", " + ", ".join(bits)) if bits else ""


def markdown_table(rows, headers) -> str:
    """A markdown table; cells are str()-ed and pipes escaped (for fact-check tables)."""
    def cell(x) -> str:
        return str(x).replace("|", "\\|").replace("\n", " ")
    out = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(out)
