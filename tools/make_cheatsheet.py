"""Write docs/cheatsheet.md: the key formulas, each with its source and a worked example,
generated from memlib (the formulas' docstrings and live calls), so it cannot drift.

    python tools/make_cheatsheet.py            # writes docs/cheatsheet.md
    python tools/make_cheatsheet.py --check    # exit 1 if the file is out of date
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import memlib
from memlib import activations, inference, lora, optimizers, timing, zero
from memlib.plan import plan_serving
from memlib.training import terms as training_terms
from memlib.units import fmt_bytes

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "cheatsheet.md"


def doc(fn) -> str:
    """A function's docstring, folded to one paragraph."""
    return " ".join(inspect.getdoc(fn).split())


def rows() -> list[tuple[str, str, str, str]]:
    """(topic, formula and source from memlib, where in memlib, a worked example)."""
    m7, m65, m3 = (memlib.get_model(n) for n in ("llama-7b", "llama-65b", "llama-3-8b"))
    amp = memlib.estimate_training(m7, seq_len=2048, precision="bf16-mixed")
    c = amp.counts
    mix = memlib.estimate_training("mixtral-8x7b", seq_len=4096, precision="bf16")
    moe_layer = mix.layer.total
    moe_routed = sum(v for n, v, _ in mix.layer.items if n.startswith("moe.experts"))
    mix_ep1, mix_ep8 = (memlib.estimate_training("mixtral-8x7b", seq_len=4096, precision="bf16", dp=8, ep=e)
                        for e in (1, 8))
    serve = plan_serving("deepseek-v3", "h200", 8, context_len=8192)
    tp8 = next(p for p in serve.feasible if (p.settings["tp"], p.settings["ep"]) == (8, 1))
    return [
        ("Parameters", "Counted tensor by tensor: embeddings, q/k/v/o (GQA: k, v are kv_heads x head_dim wide), "
         "gated MLP (3 matrices), norms, untied head.", "memlib.models.Model.tensors",
         f"LLaMA-7B = {m7.num_params:,}; LLaMA-65B = {m65.num_params:,}"),
        ("Model states, mixed precision AdamW",
         "PyTorch AMP: fp32 params 4 + fp32 grads 4 + Adam m, v 8 = 16 B/param. ZeRO paper: fp16 params 2 + "
         "fp16 grads 2 + K=12 (fp32 master, m, v) = 16 B/param. " + doc(zero.zero_model_state_bytes),
         "memlib.training.terms, memlib.zero.zero_model_state_bytes",
         f"LLaMA-7B AMP: {fmt_bytes(c['param_bytes'] + c['grad_bytes'] + c['optimizer_bytes'])}; "
         f"ZeRO-3 over 64 GPUs (paper's 7.5B): {fmt_bytes(zero.zero_model_state_bytes(7_500_000_000, 3, 64))}"),
        ("ZeRO stages", doc(zero.partitioned), "memlib.zero.partitioned",
         "; ".join(f"stage {k}: {fmt_bytes(zero.zero_model_state_bytes(m65.num_params, k, 4))}" for k in range(4))
         + " per GPU for LLaMA-65B over 4 GPUs"),
        ("Optimizer step temporaries", doc(optimizers.step_transient_bytes),
         "memlib.optimizers.step_transient_bytes",
         f"LLaMA-7B bf16-mixed, the foreach step: {fmt_bytes(4 * m7.num_params)} (an fp32 sqrt of every second "
         f"moment); for-loop: {fmt_bytes(2 * 4 * m7.largest_tensor_numel)}; fused: 0"),
        ("8-bit AdamW", doc(optimizers.adamw_8bit_state_bytes), "memlib.optimizers.adamw_8bit_state_bytes",
         f"a 4096 x 4096 matrix: {optimizers.adamw_8bit_state_bytes(4096 * 4096):,} B (fp32 AdamW: "
         f"{8 * 4096 * 4096:,} B)"),
        ("Activations, GPT layer", doc(activations.korthikanti_layer_bytes), "memlib.activations.korthikanti_layer_bytes",
         f"GPT-3 shape (s=2048, b=1, h=12288, a=96): {fmt_bytes(activations.korthikanti_layer_bytes(2048, 1, 12288, 96))}"
         " per layer"),
        ("Activations, LLaMA layer", "Saved tensor by tensor from the Hugging Face implementation: RMSNorm fp32 "
         "input, normalized, output (one bf16 cast per consumer under AMP); rotated q, k, v, output and fp32 "
         "log-sum-exp of fused attention (eager adds fp32 softmax a*s*s and its 16-bit copy); gate, SiLU, up, "
         "product of the MLP.", "memlib.activations.llama_layer_ledger",
         f"LLaMA-7B, 2048 tokens, bf16-mixed: {fmt_bytes(c['layer_activation_bytes'])} per layer"),
        ("Activations, MoE layer", doc(training_terms.routed_rows) + " " + doc(training_terms.routed_expert_activations),
         "memlib.activations.llama_layer_ledger (moe=True), memlib.training.terms.routed_rows",
         f"Mixtral-8x7B, 4096 tokens, bf16: {fmt_bytes(moe_layer)} per MoE layer, of which routed experts "
         f"{fmt_bytes(moe_routed)} (8,192 rows = tokens x top-2, not x 8 experts)"),
        ("Expert parallelism (ep)", doc(training_terms.sharded), "memlib.training.terms.sharded, estimate_training(ep=)",
         f"Mixtral-8x7B, DDP over 8 GPUs, bf16: weights per GPU {fmt_bytes(mix_ep1.counts['param_bytes'])} at ep=1, "
         f"{fmt_bytes(mix_ep8.counts['param_bytes'])} at ep=8 (one expert per layer per GPU)"),
        ("All-to-all traffic (MoE)", doc(timing.ep_all_to_all_bytes), "memlib.timing.ep_all_to_all_bytes",
         f"Mixtral-8x7B, 4096 tokens, ep=8, one micro-batch: {fmt_bytes(int(timing.ep_all_to_all_bytes(mix_ep8)))} "
         "sent per GPU per step"),
        ("Logits and loss", "The head's 16-bit logits b*s*V*2, the fp32 upcast b*s*V*4 and the fp32 "
         "log-softmax b*s*V*4 at the loss; the loss gradient b*s*V*4 x 3 at the start of the backward.",
         "memlib.training.terms (logits_bytes, loss_upcast_bytes, log_softmax_bytes; chunked: fused_loss_*)",
         f"LLaMA-3-8B at 8192 tokens: log-softmax alone {fmt_bytes(4 * m3.vocab_size * 8192)}"),
        ("Peak", "The maximum over the moments of a step (forward at the loss; backward at the loss gradient, "
         "the top and bottom layers, the embedding; optimizer step), not a sum.", "memlib.Estimate.moments",
         f"LLaMA-7B bf16-mixed s=2048: {fmt_bytes(amp.peak_bytes)} in {amp.phase}"),
        ("LoRA adapters", doc(lora.lora_params), "memlib.lora.lora_params",
         f"LLaMA-7B r=8 on q,v: {lora.lora_params(m7, 8, ['q_proj', 'v_proj']):,} params"),
        ("LoRA inputs (PEFT)", doc(activations.adapter_input_bytes), "memlib.activations.adapter_input_bytes",
         "bf16 base, fp32 adapters under autocast: a 2-byte copy per adapted input (+1-byte dropout mask); "
         "without autocast a 4-byte one"),
        ("Selective recompute (torchtitan)", doc(activations.selective_saved_bytes),
         "memlib.activations.selective_saved_bytes",
         "LLaMA-7B layer: q, v, gate, down projection outputs + attention output and log-sum-exp"),
        ("NF4 (QLoRA)", doc(lora.nf4_bytes), "memlib.lora.nf4_bytes",
         f"{lora.NF4_BITS_PER_PARAM:.3f} bits/param; a 4096 x 4096 matrix: {lora.nf4_bytes(4096 * 4096):,} B"),
        ("KV cache", doc(inference.kv_bytes_per_token), "memlib.inference.kv_bytes_per_token",
         f"Llama-3-8B bf16: {inference.kv_bytes_per_token(m3):,} B per token"),
        ("Serving plan", doc(plan_serving), "memlib.plan.plan_serving (CLI: memlib fit MODEL --task serve)",
         f"DeepSeek-V3 on 8 x H200 at 8,192 tokens: best {serve.best.describe()}: "
         f"{fmt_bytes(serve.best.weight_bytes)} of weights and {fmt_bytes(serve.best.kv_cache_bytes)} of KV cache per "
         f"GPU, {serve.best.sequences:,} sequences; tensor parallel over 8: {tp8.max_batch.value:,} sequences"),
        ("Quantized weights", doc(inference.quantized_linear_bytes), "memlib.inference.quantized_linear_bytes",
         f"4096 x 4096 in int4-gptq: {inference.quantized_linear_bytes(4096, 4096, 'int4-gptq'):,} B"),
        ("Training FLOPs", doc(timing.flops_per_token), "memlib.timing.flops_per_token",
         f"LLaMA-7B, 2048 tokens: {timing.flops_per_token(m7, 2048):.3e} FLOPs per token"),
        ("Does it fit", doc(memlib.fits), "memlib.fit.fits",
         str(memlib.fits(memlib.estimate_training(m7, precision='bf16', finetune='lora', recompute='full'),
                         'rtx-4090'))),
    ]


def render() -> str:
    lines = ["# Cheat sheet: GPU memory for LLMs", "",
             "Generated by `python tools/make_cheatsheet.py` from memlib's formulas and a live call of each;",
             "do not edit by hand. Sizes: GB = 1e9 bytes, GiB = 2**30 bytes.", ""]
    for topic, formula, where, example in rows():
        lines += [f"## {topic}", "", formula, "", f"- where: `{where}`", f"- example: {example}", ""]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not OUT.exists() or OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} is out of date: run python tools/make_cheatsheet.py")
            return 1
        return 0
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
