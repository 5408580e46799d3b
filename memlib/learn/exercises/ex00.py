"""Exercises for notebook 00: the anatomy of training memory (weights, gradients, optimizer
states, activations, and the moment of the step where memory peaks)."""

from __future__ import annotations

import random

from memlib.training.activations import korthikanti_layer_bytes
from memlib.learn.exercises._common import b, max_part, md_table, moments_table, n_params, states
from memlib.learn.exercises.kinds import Choice, Figure, Implement, Numeric, Option, SelfAssessed, Slip, SpotError
from memlib.hardware.gpus import get_gpu
from memlib.models import Model, get_model
from memlib.training import estimate_training
from memlib.units import float_format, gb

NOTEBOOK = "00_memory_anatomy"


def _kor(recompute="none", model="llama-7b", s=2048, mb=1):
    m = get_model(model)
    return korthikanti_layer_bytes(s, mb, m.hidden_size, m.num_heads, recompute=recompute)


def _7b(recompute="none", micro_batch=1):
    return estimate_training("llama-7b", seq_len=2048, micro_batch=micro_batch, precision="bf16-mixed",
                             recompute=recompute)


def _7b_mb4(recompute="none"):
    """00.5's setup: at micro-batch 4 the activations set the peak without recompute."""
    return _7b(recompute, micro_batch=4)


def _llama_params(k: dict) -> int:
    """memlib's exact count for a LLaMA shape given as the implement exercise's arguments."""
    return Model("exercise", hidden_size=k["hidden"], num_layers=k["layers"], num_heads=k["heads"],
                 num_kv_heads=k["kv_heads"], intermediate_size=k["intermediate"], vocab_size=k["vocab"]).num_params


def _random_llama(rng: random.Random) -> dict:
    heads = rng.choice((8, 16, 32, 40, 64))
    head_dim = rng.choice((64, 128))
    return dict(hidden=heads * head_dim, layers=rng.randint(2, 80), heads=heads,
                kv_heads=rng.choice([d for d in (1, 2, 4, 8, heads) if heads % d == 0]),
                intermediate=rng.randrange(1024, 28673, 256), vocab=rng.randrange(1000, 160001))


EXERCISES = [
    Numeric(
        id="00.1", title="Weights of LLaMA-7B in bf16", difficulty="warm-up", minutes=3,
        formula="weights = num_params x bytes per element (Model.num_params)",
        prompt="How much memory do the weights of LLaMA-7B take in bf16? Use the exact parameter count "
               "(`memlib.get_model('llama-7b').num_params`). Answer in GB or GiB, e.g. `\"12.3 GB\"`.",
        expected=lambda: n_params("llama-7b") * 2, unit="GB",
        slips=(Slip("fp32 bytes", lambda: n_params("llama-7b") * 4, "you used 4 bytes per parameter (fp32); bf16 is 2"),
               Slip("nominal size", lambda: 7e9 * 2, "you used the nominal 7B; LLaMA-7B has fewer parameters "
                                                     "(count them with memlib)")),
        close_advice="use the exact parameter count (memlib.get_model('llama-7b').num_params), not the nominal 7B",
        hints=("Weights hold one number per parameter, stored in the model's dtype.",
               "bytes = num_params x bytes per element; bf16 is 2 bytes.",
               "Start from memlib.get_model('llama-7b').num_params (not 7e9), then divide the bytes by 1e9 for GB."),
        worked=lambda: (f"LLaMA-7B has {n_params('llama-7b'):,} parameters (`memlib.get_model('llama-7b').num_params`); "
                        f"bf16 is 2 bytes each: **{b(n_params('llama-7b') * 2)}**. The \"7B\" of the name is rounded "
                        "up; the GB figure and the GiB figure differ by 7.4%, so always label the unit."),
    ),
    Numeric(
        id="00.2", title="Model states of mixed-precision AdamW for Llama-2-13B", difficulty="warm-up", minutes=5,
        formula="model states of mixed-precision AdamW: 16 bytes/param (ZeRO paper, K = 12; memlib.parallel.zero)",
        prompt="In the ZeRO paper's accounting of mixed-precision AdamW, each parameter keeps 16-bit weights, "
               "16-bit gradients and the optimizer's fp32 master weights, momentum and variance. How many bytes of "
               "model states does Llama-2-13B need on one GPU (no sharding)? (Notebook 00 does this for LLaMA-7B.) "
               "Answer with a unit.",
        expected=lambda: states("llama-2-13b"),
        slips=(Slip("forgot the fp32 master copy", lambda: states("llama-2-13b", k=8),
                    "you counted momentum and variance but not the fp32 master copy of the weights (4 bytes/param)"),
               Slip("forgot gradients", lambda: states("llama-2-13b") - 2 * n_params("llama-2-13b"),
                    "you left out the 16-bit gradients (2 bytes/param)"),
               Slip("2-byte optimizer states", lambda: states("llama-2-13b", k=6),
                    "you stored the optimizer states in 2 bytes each; mixed-precision Adam keeps them in fp32 (4 bytes)")),
        close_advice="use the exact parameter count (memlib.get_model('llama-2-13b').num_params)",
        hints=("Model states are everything kept per parameter across steps: weights, gradients, optimizer states.",
               "Bytes per parameter: 2 (16-bit weights) + 2 (16-bit gradients) + K, with K = 12 for the fp32 "
               "master weights, momentum and variance (ZeRO paper, Sec. 3.1).",
               "Add the bytes per parameter first, then multiply by memlib.get_model('llama-2-13b').num_params."),
        worked=lambda: (f"Per parameter: 2 (fp16/bf16 weights) + 2 (gradients) + 12 (fp32 master, momentum, variance) "
                        f"= {states('llama-2-13b') // n_params('llama-2-13b')} bytes (`memlib.parallel.zero.zero_model_state_bytes`). "
                        f"For {n_params('llama-2-13b'):,} parameters: **{b(states('llama-2-13b'))}**, before a single "
                        "activation."),
    ),
    SpotError(
        id="00.3", title="The missing master copy in a 7B estimate", difficulty="interview", minutes=8,
        formula="model states of mixed-precision AdamW: 16 bytes/param (ZeRO paper, K = 12; memlib.parallel.zero)",
        prompt="This paragraph circulates as the standard answer for training a 7B model. Find the error and give "
               "the corrected total of model states for LLaMA-7B, e.g. `(\"99GB\", \"123 GB\")`.",
        quote="以 7B 参数、FP16 精度为例：参数占 14GB，梯度同 14GB，Adam 优化器状态（动量+方差）占 28GB，合计 56GB，加上激活值轻松超 80GB。",
        source="seed 003 (如果显卡的显存不够装下一个完整的模型呢), 标准答",
        figures=(Figure("14GB", "right", "7B x 2 bytes: right for fp16 weights (and for the gradients)"),
                 Figure("28GB", "error", "momentum and variance are fp32 (8 bytes/param together), and the fp32 master "
                                         "copy (4 more) is missing: 12 bytes/param"),
                 Figure("56GB", "inherits", "the total inherits the 28GB error"),
                 Figure("80GB", "right", "the A100's capacity; the conclusion 'exceeds 80GB' survives, by more")),
        expected=lambda: states("llama-7b"),
        slips=(Slip("forgot the fp32 master copy", lambda: states("llama-7b", k=8),
                    "you fixed momentum and variance to fp32 but the fp32 master copy of the weights is still missing"),),
        hints=("Adam keeps two states per parameter; under mixed precision they are fp32, not fp16.",
               "Mixed precision also keeps an fp32 master copy of the weights for the update: 2 + 2 + 12 bytes/param.",
               "Check each figure of the paragraph against bytes/param x 7B; the first one that disagrees is the error."),
        worked=lambda: (f"The error starts at **28GB**: fp32 momentum and variance are 8 bytes/param, and the fp32 "
                        f"master weights add 4, so the optimizer holds 12 bytes/param. With 2 + 2 for 16-bit weights "
                        f"and gradients the model states are 16 bytes/param: **{b(states('llama-7b'))}** for LLaMA-7B's "
                        f"{n_params('llama-7b'):,} parameters (the seed's 56GB is half of it)."),
    ),
    Numeric(
        id="00.4", title="Activations of a 7B-shaped GPT, no recompute", difficulty="interview", minutes=8,
        formula="activations per layer s·b·h·(34 + 5as/h) (Korthikanti et al. 2022; memlib.training.activations)",
        prompt="Korthikanti et al. (2022) give the activations one GPT layer saves for the backward, in 16-bit, as "
               "`s·b·h·(34 + 5·a·s/h)` bytes. For a 7B-shaped model (h = 4096, a = 32 heads, 32 layers) at "
               "sequence length s = 2048 and micro-batch b = 1, how much do **all layers together** save without "
               "recompute?",
        expected=lambda: _kor() * get_model("llama-7b").num_layers,
        count=32, per="total", count_unit=("layer", "layers"),
        slips=(Slip("forgot the attention term", lambda: _kor("selective") * get_model("llama-7b").num_layers,
                    "you left out 5·a·s/h, the attention scores, softmax and its dropout mask: at s = 2048 it is the "
                    "larger part"),),
        hints=("Activations are what the forward keeps for the backward; they scale with the tokens (s·b) and the "
               "width h, and the attention scores add a term that grows with s².",
               "One layer: s·b·h·(34 + 5·a·s/h) bytes; all layers: that times the number of layers.",
               "Compute 5·a·s/h for a = 32, s = 2048, h = 4096 first; then one layer; then multiply."),
        worked=lambda: (f"One layer: s·b·h·(34 + 5as/h) = {b(_kor())} (`memlib.training.activations.korthikanti_layer_bytes`); "
                        f"32 layers: **{b(_kor() * 32)}**. Without the attention term it would be "
                        f"{b(_kor('selective') * 32)}: the s² term dominates at long sequences, which is why "
                        "FlashAttention/SDPA (which never stores the scores) and selective recompute matter. Full "
                        f"recompute keeps only each layer's input, 2sbh: {b(_kor('full') * 32)} for all layers."),
    ),
    Numeric(
        id="00.5", title="What full recompute saves at the peak", difficulty="interview", minutes=8,
        formula="peak = max over the moments of a step (memlib.estimate_training(...).moments)",
        prompt="LLaMA-7B, bf16-mixed AdamW, sequence 2048, micro-batch 4, one GPU. Turning on full activation "
               "recompute shrinks the saved activations a lot. By how much does it lower the **peak**? The table "
               "gives what is alive at each moment of the step, without and with recompute (memlib's "
               "`estimate_training(...).moments`): reason from it. Answer in GB or GiB.",
        table=lambda: moments_table(_7b_mb4(), _7b_mb4("full"), "no recompute", "full recompute"),
        expected=lambda: _7b_mb4().peak_bytes - _7b_mb4("full").peak_bytes, unit="GB", tolerance=0.03, abs_tol=0.01e9,
        slips=(Slip("the activations it removes", lambda: max_part(_7b_mb4(), "activations") - max_part(_7b_mb4("full"),
                                                                                                      "activations"),
                    "that is how much smaller the saved activations get, but the peak is not where they are largest: "
                    "with recompute it moves to a moment where the activations are already freed"),
               Slip("the peak itself", lambda: _7b_mb4("full").peak_bytes,
                    "that is the peak with recompute; the question asks how much lower it is than without")),
        hints=("The peak is the largest total over the moments of a step, not the sum of everything; a change that "
               "shrinks one moment may leave another moment as the peak.",
               "saving = peak(recompute='none') - peak(recompute='full'), each peak the max over est.moments.",
               "Print (m.name, m.where, m.total) for both estimates' moments and find where each peak sits."),
        worked=lambda: (lambda none, full: (
            f"Without recompute the peak is {b(none.peak_bytes)} in the {none.phase} ({none.peak_moment.where}); with "
            f"full recompute the saved activations shrink from {b(max_part(none, 'activations'))} to "
            f"{b(max_part(full, 'activations'))}, yet the peak is {b(full.peak_bytes)} in the {full.phase} "
            f"({full.peak_moment.where}): it drops by only **{b(none.peak_bytes - full.peak_bytes)}**. Once "
            "activations are small, the peak is set by the moment every gradient exists next to the parameters and "
            "optimizer states; recompute cannot touch that. It pays off when activations dominate (long sequences, "
            "large micro-batches, sharded states)."))(_7b_mb4(), _7b_mb4("full")),
    ),
    Choice(
        id="00.6", title="Where is the peak with full recompute?", difficulty="interview", minutes=6,
        formula="peak = max over the moments of a step (memlib.estimate_training(...).moments)",
        prompt="LLaMA-7B, bf16-mixed AdamW (`torch.optim.AdamW` with its CUDA default, foreach), sequence 2048, "
               "micro-batch 1, **full activation recompute**, steady state "
               "(step 2 and later). At which moment of the step is memory highest?",
        options=(Option("a", "at the end of the forward, at the loss", "with full recompute only the layer inputs "
                        "are saved, so the forward's activations are small", "1",
                        misconception="the peak is wherever the activations are largest"),
                 Option("b", "during the backward", "gradients fill in as the backward runs, but they are complete "
                        "only at its end, when the recomputed activations are gone", "2",
                        misconception="the backward is always the peak because activations and gradients coexist"),
                 Option("c", "in the optimizer step", "parameters, all gradients and optimizer states are alive "
                        "together, plus the step's temporaries", "3",
                        misconception="the optimizer step only reads what exists, so it cannot be the peak")),
        reasons=(Option("1", "all saved activations and the logits are alive and no gradient exists yet"),
                 Option("2", "gradients are allocated while most saved activations are still alive"),
                 Option("3", "recompute leaves little activation memory, so the largest set is every gradient next to "
                             "parameters and states, plus the update's temporaries")),
        right=lambda: {"forward": "a", "backward": "b", "optimizer": "c"}[_7b("full").phase],
        hints=("Write down what is alive at each moment: parameters and optimizer states always (step 2+), then what "
               "else?",
               "Full recompute keeps only 2·s·b·h per layer; gradients reach their full size at the end of the "
               "backward.",
               "Compare 'small activations + no gradients' (end of forward) with 'all gradients + update temporaries' "
               "(optimizer step)."),
        worked=lambda: (lambda e: f"memlib puts the peak in the **{e.phase}** (`estimate_training(...).phase`): "
                                  + "; ".join(f"{m.name} ({m.where}) {gb(m.total):.2f} GB" for m in e.moments
                                              if m.where in ("at the loss (log-softmax over the vocabulary)",
                                                             "optimizer.step()", "embedding backward"))
                                  + ". With recompute the activations are small, so what decides is when all gradients "
                                  "exist: the end of the backward and the optimizer step, which adds its temporaries.")(
            _7b("full")),
    ),
    Implement(
        id="00.7", title="Count a LLaMA's parameters", difficulty="stretch", minutes=15,
        formula="parameter count of a LLaMA (Model.num_params, tensor by tensor)",
        prompt="Write `llama_params(hidden, layers, heads, kv_heads, intermediate, vocab)` returning the exact "
               "parameter count of a LLaMA-architecture model (RMSNorm, gated MLP, untied embedding and lm_head, "
               "grouped-query attention with `kv_heads` key/value heads, head_dim = hidden / heads). It is tested "
               "against `memlib.get_model(name).num_params` for LLaMA-7B, 65B, Llama-2-70B, Llama-3-8B and "
               "Mistral-7B, and on shapes drawn at random each time you check.",
        function_name="llama_params", reference_name="memlib's Model(...).num_params",
        cases=lambda: [dict(hidden=m.hidden_size, layers=m.num_layers, heads=m.num_heads, kv_heads=m.num_kv_heads,
                            intermediate=m.intermediate_size, vocab=m.vocab_size)
                       for m in map(get_model, ("llama-7b", "llama-65b", "llama-2-70b", "llama-3-8b", "mistral-7b"))],
        held_out=lambda rng: [_random_llama(rng) for _ in range(3)],
        reference=_llama_params,
        slips=(Slip("tied head", lambda k, w: w - k["vocab"] * k["hidden"],
                    "the lm_head is a separate vocab x hidden matrix in LLaMA (not tied to the embedding)"),
               Slip("no GQA", lambda k, w: _llama_params({**k, "kv_heads": k["heads"]}),
                    "k_proj and v_proj have kv_heads x head_dim outputs, not hidden (grouped-query attention)"),
               Slip("no norms", lambda k, w: w - (2 * k["layers"] + 1) * k["hidden"],
                    "two RMSNorm weights per layer plus the final norm (hidden each) are missing")),
        hints=("Count tensor by tensor: attention, MLP and norms in each layer, then what sits outside the layers.",
               "Per layer: q and o are hidden x hidden; k and v are hidden x (kv_heads x head_dim); the MLP has three "
               "hidden x intermediate matrices; two norms of size hidden. Outside: embedding and lm_head "
               "(vocab x hidden each) and the final norm.",
               "Start with head_dim = hidden // heads and kv = kv_heads * head_dim; write per_layer, then the total."),
        worked=lambda: ("Per layer: `2·h² + 2·h·kv + 3·h·I + 2·h` with kv = kv_heads·head_dim; plus `2·V·h + h`. "
                        + "; ".join(f"{m.name}: {m.num_params:,}" for m in map(get_model, ("llama-7b", "llama-2-70b",
                                                                                         "llama-3-8b")))
                        + " (`Model.num_params` sums `Model.tensors()`, tensor by tensor).\n\n```python\n"
                        "def llama_params(hidden, layers, heads, kv_heads, intermediate, vocab):\n"
                        "    kv = kv_heads * (hidden // heads)\n"
                        "    per_layer = 2 * hidden * hidden + 2 * hidden * kv + 3 * hidden * intermediate + 2 * hidden\n"
                        "    return layers * per_layer + 2 * vocab * hidden + hidden\n```"),
    ),
    Numeric(
        id="00.8", title="How many GB is an \"L40S 48GB\"?", difficulty="warm-up", minutes=2,
        formula="GPU capacity: a vendor's \"GB\" of HBM/GDDR is GiB (memlib.get_gpu(...).memory_bytes)",
        prompt="NVIDIA sells an \"L40S 48GB\". How many GB (10⁹ bytes) of memory does it have? (Vendors count "
               "memory chips in binary units; memlib stores each GPU's capacity as the vendor means it. Notebook 00 "
               "does this for an \"80GB\" A100.)",
        expected=lambda: get_gpu("l40s").memory_bytes, unit="GB", tolerance=0.005,
        slips=(Slip("driver-reported", lambda: get_gpu("l40s").reported_total_bytes,
                    "that is what torch/nvidia-smi report as total (the driver and ECC keep some), less than the "
                    "nominal capacity"),),
        hints=("GB means 10⁹ bytes, GiB 2³⁰ bytes; memory chips come in powers of two.",
               "A card sold as \"N GB\" holds N GiB = N x 2³⁰ bytes.",
               "Multiply the marketed number by 2**30, then divide by 1e9."),
        worked=lambda: (f"An \"L40S 48GB\" has 48 GiB = {get_gpu('l40s').memory_bytes:,} bytes = "
                        f"**{gb(get_gpu('l40s').memory_bytes):.2f} GB** (`memlib.get_gpu('l40s').memory_bytes`)"
                        f"; torch reports {gb(get_gpu('l40s').reported_total_bytes):.2f} GB of it as total."),
    ),
    SelfAssessed(
        id="00.9", title="What do you ask back?", difficulty="interview", minutes=10,
        formula="clarifying questions: which setup choices move the estimate (memlib.estimate_training options)",
        prompt="The interviewer asks: \"How much GPU memory does it take to train a 7B model?\" Before giving a "
               "number, list the questions you would ask back, and for each say which way (and roughly by how "
               "much) the answer moves the estimate. Write a few sentences; `check` then shows a rubric and a model "
               "answer, and you mark your own answer with `mark`.",
        rubric=("Full fine-tuning, or LoRA/QLoRA? (16 bytes/param of states vs roughly 2 or 0.5 bytes/param of "
                "frozen base)",
                "Precision and optimizer: mixed-precision AdamW (16 B/param), pure bf16 (8), 8-bit AdamW, SGD",
                "Sequence length and micro-batch (activations grow with s·b, and with s² under eager attention)",
                "Recompute (activation checkpointing) and the attention kernel (SDPA/FlashAttention stores no s²)",
                "How many GPUs and which, and is sharding (ZeRO/FSDP) or offload allowed",
                "Training or serving? (serving needs weights + KV cache, no gradients or optimizer states)"),
        hints=("Think of every option of memlib.estimate_training: which ones change the number by more than 2x?",
               "The big levers: what is trained (full/LoRA), the bytes per parameter (precision, optimizer), the "
               "tokens in flight (sequence x micro-batch), and how many GPUs share the states.",
               "Start with full vs LoRA and the optimizer: compute 16 vs 2 bytes/param x 6.7B to see the spread."),
        worked=lambda: (lambda cases: (
            "Each question below moves memlib's LLaMA-7B peak (`memlib.estimate_training`, sequence 2048, "
            "micro-batch 1, one GPU unless stated) by a large factor:\n\n"
            + md_table(("if the answer is", "peak"), [(label, b(e.peak_bytes)) for label, e in cases])
            + "\n\nSo ask: full or LoRA/QLoRA? which precision and optimizer? sequence length and micro-batch? "
              "recompute and attention kernel? how many GPUs, sharding or offload? and is it training at all, or "
              "serving (weights + KV cache)?"))([
                ("full, bf16-mixed AdamW", estimate_training("llama-7b")),
                ("full, pure bf16 + 8-bit AdamW", estimate_training("llama-7b", precision="bf16",
                                                                    optimizer="adamw-8bit")),
                ("LoRA r=16 (q, v), bf16 base", estimate_training("llama-7b", finetune="lora", precision="bf16",
                                                                  lora_rank=16, lora_targets="qv")),
                ("full, sequence 8192", estimate_training("llama-7b", seq_len=8192)),
                ("full, full recompute, ZeRO-3 over 8 GPUs", estimate_training("llama-7b", recompute="full",
                                                                               zero_stage=3, dp=8))]),
    ),
    Choice(
        id="00.10", title="Why does bf16 train without loss scaling?", difficulty="interview", minutes=5,
        formula="range from the exponent bits, precision from the mantissa bits (IEEE 754; memlib.units.FloatFormat)",
        prompt="fp16 mixed-precision training needs a loss scaler (the loss is multiplied by, e.g., 2¹⁶ before the "
               "backward, and the gradients divided after); bf16 mixed precision runs without one. Why?",
        options=(Option("a", "bf16 is more precise than fp16, so small gradients keep their digits",
                        lambda: (f"the other way round: bf16 has 7 mantissa bits (epsilon "
                                 f"{float_format('bf16').eps:g}) against fp16's 10 ({float_format('fp16').eps:g})"),
                        misconception="more modern means more precise"),
                 Option("b", "bf16 has fp32's 8 exponent bits, so gradients far below fp16's smallest normal still "
                             "have a representation",
                        lambda: (f"bf16's smallest normal is {float_format('bf16').smallest_normal:.3g}, fp16's "
                                 f"{float_format('fp16').smallest_normal:.3g}: small gradients do not flush to zero"),
                        "1"),
                 Option("c", "bf16 tensor cores accumulate in fp32 and fp16 tensor cores do not",
                        "both accumulate matmuls in fp32 on Volta and later; the problem is storing small values, not "
                        "summing them", misconception="loss scaling fixes the accumulation"),
                 Option("d", "optimizer states are kept in bf16, which needs no scaling",
                        "mixed precision keeps the master weights and Adam moments in fp32 either way",
                        misconception="the states' dtype follows the compute dtype")),
        reasons=(Option("1", "underflow, not rounding, is what loss scaling fights: it shifts gradients into the "
                             "format's range, and bf16's range is fp32's"),
                 Option("2", "bf16 rounds less than fp16")),
        right=lambda: "b" if float_format("bf16").smallest_normal < float_format("fp16").smallest_normal else "a",
        hints=("Loss scaling multiplies before the backward and divides after: what problem of small numbers does "
               "that solve?",
               "Range is set by the exponent bits, precision by the mantissa bits: bf16 is 1-8-7, fp16 1-5-10.",
               "Compare the two formats' smallest normal values with memlib.units.float_format(...).smallest_normal."),
        worked=lambda: (f"**(b), because 1.** Small gradients fall out of fp16's range (smallest normal "
                        f"{float_format('fp16').smallest_normal:.3g}, subnormals down to "
                        f"{float_format('fp16').smallest_subnormal:.3g}, then zero); the scaler shifts them up "
                        f"into range. bf16 keeps fp32's 8 exponent bits (smallest normal "
                        f"{float_format('bf16').smallest_normal:.3g}, largest {float_format('bf16').max_value:.3g}), so "
                        f"nothing underflows; it pays in precision (epsilon {float_format('bf16').eps:g} against "
                        f"{float_format('fp16').eps:g}), which the fp32 master weights absorb "
                        "(`memlib.units.FORMATS`)."),
    ),
]
