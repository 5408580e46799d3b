"""Exercises for notebook 03: when the model does not fit. Quantized bases, LoRA, ZeRO stages,
recompute and offload (what each saves at the peak and what it costs), and serving with
quantization or tensor parallelism."""

from __future__ import annotations

import random

from memlib.training.activations import korthikanti_layer_bytes
from memlib.learn.exercises._common import (b, fitting, llama_like, md_table, moments_table, n_params, only_fitting, peak_rows,
                                      states, verdict)
from memlib.learn.exercises.kinds import (Choice, Figure, Implement, MultiChoice, Numeric, Option, SelfAssessed, Slip,
                                    SpotError)
from memlib.serving.inference import estimate_inference
from memlib.training.lora import lora_params
from memlib.models import get_model
from memlib.parallel.data_parallel import data_parallel_memory
from memlib.training import estimate_training
from memlib.units import gib

NOTEBOOK = "03_when_the_model_does_not_fit"
_ALL_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def _kor(recompute="none", model="llama-7b", s=2048, mb=1):
    m = get_model(model)
    return korthikanti_layer_bytes(s, mb, m.hidden_size, m.num_heads, recompute=recompute)


def _a100_40(**kw):
    return lambda: estimate_training("llama-13b", recompute="full", dp=8, **kw)


_13B_LAYOUTS = {"a": _a100_40(zero_stage=1), "b": _a100_40(zero_stage=2), "c": _a100_40(zero_stage=3),
                "d": lambda: estimate_training("llama-13b", recompute="full", dp=4, tp=2)}


def _lora_case(name: str, rank: int, targets) -> dict:
    m = get_model(name)
    return dict(hidden=m.hidden_size, kv_dim=m.kv_size, intermediate=m.intermediate_size, layers=m.num_layers,
                rank=rank, targets=tuple(targets))


def _lora(k: dict) -> int:
    return lora_params(llama_like(k), k["rank"], k["targets"])


def _random_lora_case(rng: random.Random) -> dict:
    heads = rng.choice((16, 32, 40, 64))
    kv_heads = rng.choice([d for d in (1, 2, 4, 8, heads) if heads % d == 0])
    targets = tuple(t for t in _ALL_LINEAR if rng.random() < 0.5) or ("q_proj",)
    return dict(hidden=heads * 128, kv_dim=kv_heads * 128, intermediate=rng.randrange(2048, 28673, 256),
                layers=rng.randint(2, 80), rank=rng.choice((1, 4, 8, 16, 32, 64, 128)), targets=targets)


def _13b(**kw):
    return estimate_training("llama-13b", seq_len=2048, micro_batch=1, **kw)


def _offload7b(**kw):
    return estimate_training("llama-7b", zero_stage=3, dp=1, recompute="full", **kw)


def _serve70(**kw):
    return estimate_inference("llama-2-70b", **{"batch": 8, "context_len": 4096, **kw})


_SERVE = {"a": lambda: _serve70(weights="bf16", kv_cache="fp8"), "b": lambda: _serve70(weights="int8"),
          "c": lambda: _serve70(weights="int4-awq"), "d": lambda: _serve70(weights="bf16", tp=4),
          "e": lambda: _serve70(weights="int4-awq", batch=64)}

_RECOMPUTE = {  # option -> the setup, without recompute (the exercise compares it with recompute="full")
    "a": dict(model="llama-13b"),
    "b": dict(model="llama-7b", zero_stage=3, dp=8, seq_len=4096, micro_batch=4),
    "c": dict(model="llama-13b", zero_stage=2, offload="optimizer"),
    "d": dict(model="llama-7b", finetune="lora", precision="bf16", lora_rank=16, lora_targets="qv"),
    "e": dict(model="llama-2-7b", precision="bf16", optimizer="adamw-8bit", seq_len=512),
}


def _recompute_pair(key: str):
    kw = dict(_RECOMPUTE[key])
    model = kw.pop("model")
    return estimate_training(model, **kw), estimate_training(model, recompute="full", **kw)


def _recompute_saving(key: str) -> float:
    plain, rec = _recompute_pair(key)
    return 1 - rec.peak_bytes / plain.peak_bytes


def _remedies():
    return (("bf16-mixed AdamW, 1 GPU", _13b()),
            ("+ full recompute", _13b(recompute="full")),
            ("+ 8-bit AdamW", _13b(recompute="full", optimizer="adamw-8bit")),
            ("ZeRO-3 over 8 GPUs", _13b(zero_stage=3, dp=8)),
            ("ZeRO-3 over 8 GPUs + recompute", _13b(recompute="full", zero_stage=3, dp=8)),
            ("tp=8 + recompute", _13b(recompute="full", tp=8)),
            ("ZeRO-Offload + recompute, 1 GPU", _13b(recompute="full", zero_stage=2, offload="optimizer")),
            ("LoRA r=16 (q,v), bf16 base, 1 GPU", _13b(recompute="full", finetune="lora", precision="bf16",
                                                       lora_rank=16, lora_targets="qv")),
            ("QLoRA, 1 GPU", _13b(recompute="full", finetune="qlora", precision="bf16")))


def _remedies_worked() -> str:
    rows = _remedies()
    plain, rec = rows[0][1], rows[1][1]
    z3, z3r = rows[3][1], rows[4][1]
    saved_1gpu = plain.peak_bytes - rec.peak_bytes
    return ("LLaMA-13B, sequence 2048, micro-batch 1, per GPU (memlib):\n\n"
            + md_table(("remedy", "per-GPU peak", "phase", "host RAM"),
                       [(label, f"{gib(e.peak_bytes):.1f} GiB", e.phase, b(e.host_bytes) if e.host_bytes else "-")
                        for label, e in rows])
            + f"\n\nRead the table before ranking. On one GPU the peak is in the **{plain.phase}**, so recompute saves "
              f"{b(saved_1gpu)} there: activations are not the problem, model states are. Once the states are "
              f"sharded (ZeRO-3 over 8: {gib(z3.peak_bytes):.1f} GiB) the activations dominate and recompute takes the "
              f"peak to {gib(z3r.peak_bytes):.1f} GiB. So: first shrink or move the model states (shard with "
              "ZeRO/FSDP if you have the GPUs, communication mostly overlapped; offload if you have one GPU, paying "
              "PCIe and host RAM), then recompute (about a third more compute) when activations are what is left; "
              "tensor parallelism within a node (all-reduces every layer) and pipelines across nodes (bubble) for "
              "models whose layers do not fit; 8-bit optimizers (small quality risk); and LoRA/QLoRA when full "
              "fine-tuning is not required (fewer trainable parameters, a 4-bit base).")


def _dp(batch=16, seq=4096, n=4, **kw):
    """torch.nn.DataParallel vs DDP for Qwen2-0.5B (fp32 AdamW, fp32 logits): memlib.parallel.data_parallel."""
    m = get_model("qwen2-0.5b")
    return data_parallel_memory(m.num_params, batch, seq, m.vocab_size, n, **kw)


EXERCISES = [
    Numeric(
        id="03.1", title="A 4-bit LLaMA-7B, really", difficulty="interview", minutes=6,
        formula="quantized weight bytes: NF4 + double quantization = 4.127 bits (QLoRA; memlib.estimate_inference)",
        prompt="QLoRA stores LLaMA-7B's linear layers in NF4 with double quantization (4.127 bits per weight) and keeps "
               "the embedding, lm_head and norms in 16-bit. How large is the quantized base model?",
        expected=lambda: estimate_inference("llama-7b", weights="nf4").weight_bytes, unit="GB",
        slips=(Slip("4 bits everywhere", lambda: n_params("llama-7b") / 2,
                    "half a byte for every parameter misses the quantization constants and the 16-bit embedding and "
                    "head"),
               Slip("16-bit", lambda: 2 * n_params("llama-7b"), "that is the bf16 model")),
        hints=("Quantization shrinks the linear layers' weights; not every tensor is quantized.",
               "bytes = linear params x 4.127 / 8 + (embedding + lm_head + norms) x 2.",
               "Split the parameters first: embedding and lm_head are vocab x hidden each; the rest is (nearly all) "
               "linear."),
        worked=lambda: (f"Linear layers {(lambda m: m.linear_params - m.vocab_size * m.hidden_size)(get_model('llama-7b')):,} "
                        f"params at 4.127 bits, embedding + lm_head + norms in bf16: "
                        f"**{b(estimate_inference('llama-7b', weights='nf4').weight_bytes)}** "
                        "(`estimate_inference('llama-7b', weights='nf4').weight_bytes`), not the "
                        f"{b(n_params('llama-7b') / 2)} of \"7B x 0.5 bytes\"."),
    ),
    SpotError(
        id="03.2", title="ZeRO-3 on 8 GPUs for a 7B", difficulty="interview", minutes=6,
        formula="ZeRO partitioning: stage 3 divides all 16 bytes/param by dp (memlib.parallel.zero.zero_model_state_bytes)",
        prompt="Find the error and give the per-GPU model states of LLaMA-7B under ZeRO-3 over 8 GPUs "
               "(mixed-precision AdamW).",
        quote="以 7B 模型为例，ZeRO-3 配合 8 卡，每卡仅存 14GB/8=1.75GB 参数，加上梯度、优化器状态，单卡显存从 56GB 降到约 10GB。",
        source="seed 003, 标准答 (ZeRO 优化器状态分片)",
        figures=(Figure("14GB", "right", "7B x 2 bytes: right for fp16 weights"),
                 Figure("1.75GB", "right", "right: the weights' shard"),
                 Figure("56GB", "error", "model states are 16 bytes/param, not 8", group="states"),
                 Figure("10GB", "error", "16 bytes/param / 8 GPUs is 2 bytes/param per GPU, more than 10GB",
                        group="states")),
        expected=lambda: states("llama-7b", 3, 8), count=8, per="one",
        slips=(Slip("forgot the fp32 master copy", lambda: states("llama-7b", 3, 8, k=8),
                    "12 bytes/param / 8 leaves out the fp32 master copy"),),
        hints=("Check the unsharded total first: what does mixed-precision AdamW keep per parameter?",
               "ZeRO-3 per GPU = 16 bytes/param x num_params / 8.",
               "Compare the paragraph's starting total with 16 bytes x 7B."),
        worked=lambda: (f"16 bytes/param x {n_params('llama-7b'):,} / 8 = **{b(states('llama-7b', 3, 8))}** per GPU "
                        "(`zero_model_state_bytes(n, 3, 8)`); the seed's 56GB starting point is half the real "
                        f"{b(states('llama-7b'))}."),
    ),
    Numeric(
        id="03.3", title="LoRA parameters of LLaMA-7B", difficulty="warm-up", minutes=5,
        formula="LoRA parameters r·(in + out) per adapted matrix per layer (Hu et al. 2021; memlib.training.lora.lora_params)",
        prompt="LoRA with rank r = 16 on all seven linear projections (q, k, v, o, gate, up, down) of every layer of "
               "LLaMA-7B (h = 4096, intermediate 11008, 32 layers). How many trainable parameters does it add "
               "**in all layers together**?",
        expected=lambda: lora_params(get_model("llama-7b"), 16, "all-linear"), unit="params", count=32,
        per="total", count_unit=("layer", "layers"),
        slips=(Slip("q and v only", lambda: lora_params(get_model("llama-7b"), 16, "qv"),
                    "you adapted only q_proj and v_proj (peft's default); the question adapts all seven"),
               Slip("one factor", lambda: lora_params(get_model("llama-7b"), 16, "all-linear") / 2,
                    "an adapter has two factors, A (r x in) and B (out x r): r x (in + out)")),
        hints=("LoRA replaces the update of a matrix W (out x in) by B·A, with A r x in and B out x r.",
               "Each adapted in x out matrix adds r x (in + out); sum over the seven projections, times the layers.",
               "q, k, v, o are 4096 -> 4096; gate and up are 4096 -> 11008; down is 11008 -> 4096."),
        worked=lambda: (f"r·(in + out) summed over the seven projections, times 32 layers: "
                        f"**{lora_params(get_model('llama-7b'), 16, 'all-linear'):,}** parameters "
                        f"(`memlib.training.lora.lora_params`), "
                        f"{lora_params(get_model('llama-7b'), 16, 'all-linear') / n_params('llama-7b'):.2%} of the model."),
    ),
    Implement(
        id="03.4", title="LoRA parameter count", difficulty="stretch", minutes=10,
        formula="LoRA parameters r·(in + out) per adapted matrix per layer (Hu et al. 2021; memlib.training.lora.lora_params)",
        prompt="Write `lora_param_count(hidden, kv_dim, intermediate, layers, rank, targets)` returning the trainable "
               "parameters LoRA adds to a LLaMA-architecture model; `targets` is a tuple of projection names from "
               "q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj; `kv_dim` is the width of k_proj's and "
               "v_proj's outputs (kv_heads x head_dim). Tested against `memlib.training.lora.lora_params` on five models and "
               "on shapes drawn at random each time you check.",
        function_name="lora_param_count", reference_name="memlib.training.lora.lora_params",
        cases=lambda: [_lora_case("llama-7b", 8, ("q_proj", "v_proj")), _lora_case("llama-2-70b", 16, _ALL_LINEAR),
                       _lora_case("mistral-7b", 64, ("q_proj", "k_proj", "v_proj", "o_proj")),
                       _lora_case("llama-3-8b", 4, ("k_proj", "down_proj")),
                       _lora_case("llama-13b", 32, ("gate_proj", "up_proj"))],
        held_out=lambda rng: [_random_lora_case(rng) for _ in range(3)],
        reference=_lora,
        slips=(Slip("no GQA", lambda k, w: lora_params(llama_like(k, gqa=False), k["rank"], k["targets"]),
                    "k_proj and v_proj output kv_dim, not hidden, under grouped-query attention"),
               Slip("one layer", lambda k, w: w / k["layers"], "adapters are added in every layer")),
        hints=("Every adapted matrix gets its own pair of low-rank factors, in every layer.",
               "rank x (in + out) per adapted matrix; shapes: q (h->h), k and v (h->kv_dim), o (h->h), gate and up "
               "(h->I), down (I->h).",
               "Write a dict from projection name to (in, out) first; then sum over `targets` and multiply by layers."),
        worked=lambda: ("```python\ndef lora_param_count(hidden, kv_dim, intermediate, layers, rank, targets):\n"
                        "    shapes = {'q_proj': (hidden, hidden), 'k_proj': (hidden, kv_dim), 'v_proj': (hidden, kv_dim),\n"
                        "              'o_proj': (hidden, hidden), 'gate_proj': (hidden, intermediate),\n"
                        "              'up_proj': (hidden, intermediate), 'down_proj': (intermediate, hidden)}\n"
                        "    return layers * sum(rank * sum(shapes[t]) for t in targets)\n```\n\n"
                        f"Llama-2-70B, r=16, all linear: {lora_params(get_model('llama-2-70b'), 16, 'all-linear'):,}."),
    ),
    Choice(
        id="03.5", title="LLaMA-13B on 8x A100 40GB", difficulty="interview", minutes=8,
        formula="ZeRO partitioning: which states each stage divides by dp (memlib.parallel.zero, memlib.fits)",
        prompt="Full fine-tuning of LLaMA-13B on 8x A100 40GB, bf16-mixed AdamW, full recompute, sequence 2048, "
               "micro-batch 1. Which single layout fits (memlib.fits)?",
        options=(Option("a", "ZeRO-1 over 8 GPUs", "the 16-bit weights and gradients are still whole on every GPU",
                        misconception="the optimizer states are the whole problem, so sharding them is enough"),
                 Option("b", "ZeRO-2 over 8 GPUs", "the 16-bit weights are still whole on every GPU: 2 bytes x 13B "
                        "plus the shards", misconception="parameters are small next to gradients and states"),
                 Option("c", "ZeRO-3 over 8 GPUs", "all 16 bytes/param divided by 8", "1"),
                 Option("d", "tensor parallel tp=2 x data parallel dp=4, no ZeRO", "tp=2 halves the states: "
                        "8 bytes/param x 13B is still over 40 GiB",
                        misconception="tensor parallelism divides memory by the total number of GPUs")),
        reasons=(Option("1", "only when the 16-bit parameters are sharded too do the states drop below a 40GB card"),
                 Option("2", "sharding the gradients is what matters; parameters are small", "16-bit parameters weigh "
                        "as much as 16-bit gradients"),
                 Option("3", "tensor parallelism divides everything, so tp=2 is enough", "it divides by 2, not 8")),
        right=lambda: only_fitting(_13B_LAYOUTS, "a100-40gb"),
        hints=("Each ZeRO stage shards one more kind of state; what is left whole on every GPU?",
               "Per GPU: ZeRO-1 4ψ + 12ψ/8; ZeRO-2 2ψ + 14ψ/8; ZeRO-3 16ψ/8; tp=2 16ψ/2.",
               "Put ψ = 13B into each and compare with 40 GiB."),
        worked=lambda: "Per GPU (memlib on a100-40gb):\n\n" + peak_rows(_13B_LAYOUTS, "a100-40gb"),
    ),
    Numeric(
        id="03.6", title="What full recompute shrinks in one layer", difficulty="interview", minutes=6,
        formula="activations per layer s·b·h·(34 + 5as/h) vs 2sbh with full recompute (Korthikanti et al. 2022)",
        prompt="By Korthikanti et al., a GPT layer saves `s·b·h·(34 + 5·a·s/h)` bytes without recompute and `2·s·b·h` "
               "with full recompute. By what factor does full recompute shrink a layer's saved activations for a "
               "7B-shaped layer (h = 4096, a = 32) at s = 2048?",
        expected=lambda: _kor("none") / _kor("full"), unit="x",
        slips=(Slip("selective", lambda: _kor("none") / _kor("selective"),
                    "that is selective recompute's factor (dropping the attention term); full keeps only the input"),
               Slip("no attention term", lambda: _kor("selective") / _kor("full"),
                    "you left out 5·a·s/h in the no-recompute size")),
        hints=("Full recompute keeps only each layer's input and reruns the layer's forward in the backward.",
               "factor = (34 + 5·a·s/h) / 2: the s·b·h cancels.",
               "Compute 5·a·s/h for a = 32, s = 2048, h = 4096 first."),
        worked=lambda: (f"{b(_kor('none'))} / {b(_kor('full'))} = **{_kor('none') / _kor('full'):.0f}x** "
                        "(`korthikanti_layer_bytes(..., recompute=...)`) for one extra forward (~33% more compute). "
                        "Whether the *peak* drops by anything like that depends on where the peak is: see 03.12."),
    ),
    Numeric(
        id="03.7", title="What ZeRO-Offload saves at the peak", difficulty="interview", minutes=8,
        formula="peak = max over the moments of a step, with offload (memlib.estimate_training(...).moments)",
        prompt="LLaMA-13B full fine-tuning on one GPU, bf16-mixed AdamW, sequence 2048, micro-batch 1, no recompute. "
               "Switching to DeepSpeed ZeRO-2 with the optimizer offloaded to CPU (`zero_stage=2, "
               "offload=\"optimizer\"`), by how much does the GPU's **peak** drop? The table gives what the GPU holds "
               "at each moment of the step in both cases (memlib's `estimate_training(...).moments`): reason from it. "
               "Answer in GB or GiB.",
        table=lambda: moments_table(_13b(), _13b(zero_stage=2, offload="optimizer"), "plain", "ZeRO-2 + offload"),
        expected=lambda: _13b().peak_bytes - _13b(zero_stage=2, offload="optimizer").peak_bytes, unit="GB",
        slips=(Slip("the optimizer states", lambda: 12 * n_params("llama-13b"),
                    "12 bytes/param is what moves to the host, but the peak also changes moment: without offload it "
                    "is the optimizer step (every gradient alive), with it the backward (activations alive)"),
               Slip("the peak itself", lambda: _13b(zero_stage=2, offload="optimizer").peak_bytes,
                    "that is the peak with offload; the question asks how much lower it is than without")),
        hints=("Offload moves states to the host, and can move the peak to a different moment of the step.",
               "saving = peak(no offload) - peak(ZeRO-2 + optimizer offload), each the max over est.moments.",
               "Print est.phase and est.breakdown for both estimates before subtracting."),
        worked=lambda: (lambda plain, off: (
            f"Without offload the peak is {b(plain.peak_bytes)} in the {plain.phase} (parameters, gradients and "
            f"optimizer states all on the GPU). With ZeRO-Offload the fp32 master weights, momentum, variance and "
            f"fp32 gradients live on the host ({b(off.host_bytes)}), and the GPU peak is {b(off.peak_bytes)} in the "
            f"{off.phase}, where the 16-bit weights meet the activations: it drops by "
            f"**{b(plain.peak_bytes - off.peak_bytes)}**. What is left is mostly activations, so recompute now pays "
            "off (see 03.12)."))(_13b(), _13b(zero_stage=2, offload="optimizer")),
    ),
    SpotError(
        id="03.8", title="Host RAM for a 7B on a 12GB card", difficulty="interview", minutes=6,
        formula="offload host bytes: fp32 master, m, v, fp32 gradients + 16-bit params (memlib.estimate_training"
                "(...).host_bytes)",
        prompt="The follow-up answer on training a 7B on a single 12GB card. Find the error and give the host RAM "
               "the described setup needs for LLaMA-7B.",
        quote="使用 DeepSpeed ZeRO-3 + CPU Offload + 梯度 checkpointing。具体配置：ZeRO stage 3，offload_optimizer 到 CPU，"
              "offload_param 到 CPU，gradient_checkpointing 开启，batch size=1。……注意：CPU 内存需 >64GB，否则 OOM。",
        source="seed 003, 追问 3",
        figures=(Figure("3", "right", "ZeRO stage 3 is what offload_param needs: right"),
                 Figure("1", "right", "batch size 1: a setting, not an error"),
                 Figure("64GB", "error", "the host holds fp32 master, momentum, variance, fp32 gradients and 16-bit "
                                         "parameters: 18 bytes/param")),
        expected=lambda: _offload7b(offload="optimizer+params").host_bytes,
        slips=(Slip("optimizer offload only", lambda: _offload7b(offload="optimizer").host_bytes,
                    "16 bytes/param is optimizer offload alone; offload_param moves the 16-bit weights to the host "
                    "too"),
               Slip("states only", lambda: states("llama-7b", working_bytes=0),
                    "12 bytes/param leaves out the fp32 gradients and the parameters")),
        hints=("List what offload_optimizer and offload_param each put on the host.",
               "Host bytes/param: 12 (fp32 master, m, v) + 4 (fp32 gradients) + 2 (16-bit parameters).",
               "Multiply the bytes per parameter by memlib.get_model('llama-7b').num_params and compare with 64GB."),
        worked=lambda: (f"**64GB** is too little: 18 bytes/param x {n_params('llama-7b'):,} = "
                        f"**{b(_offload7b(offload='optimizer+params').host_bytes)}** "
                        f"(`estimate_training(..., offload='optimizer+params').host_bytes`); the GPU keeps "
                        f"{gib(_offload7b(offload='optimizer+params').peak_bytes):.1f} GiB."),
    ),
    SelfAssessed(
        id="03.9", title="Rank the remedies", difficulty="stretch", minutes=15,
        formula="each remedy against the moment of the peak (memlib.estimate_training breakdown and phase)",
        prompt="LLaMA-13B full fine-tuning does not fit your GPU. Rank the remedies you would try (mixed precision, "
               "recompute, ZeRO/FSDP sharding, offload, tensor/pipeline parallelism, 8-bit optimizers, LoRA/QLoRA), "
               "say what each saves **at the peak** and what it costs. Then mark your answer against the rubric.",
        rubric=("Looks first at where the peak is and what is alive there (model states vs activations)",
                "Recompute saves activations for ~1/3 more compute, and helps the peak only when activations are a "
                "large part of it",
                "ZeRO/FSDP sharding divides the model states across GPUs, at the price of communication",
                "Offload moves states to the host: PCIe traffic, host RAM, slower steps",
                "Tensor/pipeline parallelism split the model itself: per-layer all-reduces, pipeline bubble",
                "8-bit optimizer states: about 6 bytes/param less, a small quality risk",
                "LoRA/QLoRA: train few parameters over a frozen (4-bit) base when full fine-tuning is not required"),
        hints=("For each remedy: which term of the breakdown does it shrink, and is that term large at the peak?",
               "Compare memlib.estimate_training(...).phase and .breakdown before and after each remedy.",
               "Start with one GPU, no remedy: where is the peak, and what dominates it?"),
        worked=_remedies_worked,
    ),
    Numeric(
        id="03.10", title="Serving Llama-2-70B with tensor parallelism", difficulty="interview", minutes=8,
        formula="serving per GPU = weights / tp + KV cache / tp (memlib.estimate_inference(..., tp=))",
        prompt="Llama-2-70B served in bf16 with tensor parallelism tp = 4 (Megatron-style: every weight matrix and "
               "the KV heads split four ways), 8 sequences of 4,096 tokens, bf16 KV cache (80 layers, 8 KV heads, "
               "head_dim 128). How much do the weights plus the KV cache take **on each GPU**? "
               "(`memlib.estimate_inference(...).weight_bytes + .kv_cache_bytes` is the reference.)",
        expected=lambda: (lambda e: e.weight_bytes + e.kv_cache_bytes)(_serve70(tp=4)), unit="GB", count=4,
        per="one",
        slips=(Slip("KV cache not split", lambda: _serve70(tp=4).weight_bytes + _serve70().kv_cache_bytes,
                    "tensor parallelism splits the KV heads too: each GPU caches 8 / 4 = 2 of them"),
               Slip("no GQA", lambda: (_serve70().weight_bytes + 8 * _serve70().kv_cache_bytes) / 4,
                    "Llama-2-70B caches its 8 KV heads, not the 64 query heads"),
               Slip("weights not split", lambda: _serve70().weight_bytes + _serve70(tp=4).kv_cache_bytes,
                    "tp=4 splits every weight matrix: each GPU holds a quarter of the weights")),
        hints=("Tensor parallelism splits every matrix, and the attention heads, across the GPUs.",
               "per GPU = (num_params x 2 bytes) / 4 + (2 x layers x kv_heads x head_dim x 2 bytes x batch x "
               "context) / 4.",
               "Compute the whole model's weights and the whole KV cache first, then divide each by 4."),
        worked=lambda: (lambda one, tp4: (
            f"Weights {b(one.weight_bytes)} / 4 = {b(tp4.weight_bytes)}; KV cache {b(one.kv_cache_bytes)} / 4 = "
            f"{b(tp4.kv_cache_bytes)}: **{b(tp4.weight_bytes + tp4.kv_cache_bytes)} per GPU** "
            f"(`memlib.estimate_inference('llama-2-70b', batch=8, context_len=4096, tp=4)`), plus the prefill's "
            f"activations ({b(tp4.activation_bytes)}): peak {gib(tp4.peak_bytes):.1f} GiB, "
            f"{verdict(tp4, 'a100-80gb')} an A100 80GB with room for a larger batch."))(_serve70(), _serve70(tp=4)),
    ),
    MultiChoice(
        id="03.11", title="Serve a 70B on A100 80GB cards", difficulty="interview", minutes=8,
        formula="serving fit: quantized or tp-split weights + KV cache + prefill vs capacity (memlib.fits)",
        prompt="You must serve Llama-2-70B to 8 concurrent users with 4,096-token contexts on A100 80GB cards. Which "
               "of these fit **per GPU** (memlib.estimate_inference + memlib.fits)?",
        options=(Option("a", "bf16 weights on one GPU, with an fp8 KV cache",
                        lambda: f"the bf16 weights alone are {b(_serve70().weight_bytes)}; the KV cache was never "
                                "the problem",
                        misconception="the KV cache is what makes a 70B too big, so quantize it"),
                 Option("b", "int8 weights (LLM.int8()) on one GPU, bf16 KV cache",
                        lambda: f"{b(_SERVE['b']().weight_bytes)} of int8 weights plus the KV cache, the prefill's "
                                "activations, the dequantization workspace and the CUDA context pass 80 GiB",
                        misconception="70B x 1 byte = 70 GB < 80 GB, so it fits"),
                 Option("c", "int4 AWQ weights on one GPU, bf16 KV cache",
                        "about 0.5 byte per weight leaves room for the cache of 8 x 4,096 tokens"),
                 Option("d", "bf16 weights, tensor parallel over 4 GPUs",
                        "each GPU holds a quarter of the weights and of the KV heads"),
                 Option("e", "int4 AWQ weights on one GPU, but 64 users at 4,096 tokens",
                        "the KV cache grows with every token of every sequence: 8x the users is 8x the cache",
                        misconception="a 4-bit model leaves room for any batch")),
        right=lambda: fitting(_SERVE, "a100-80gb"),
        hints=("Serving memory is weights + KV cache + the prefill's activations, per GPU.",
               "Weights: params x bytes (2 bf16, ~1 int8, ~0.5 int4) / tp; KV: 2 x 80 x 8 x 128 x 2 bytes per token / "
               "tp, times batch x context.",
               "Compute the weights and the KV cache of each option separately, then compare the sum with 80 GiB."),
        worked=lambda: ("Per GPU (memlib.estimate_inference + memlib.fits on a100-80gb):\n\n" + md_table(
            ("option", "weights", "KV cache", "peak", "verdict"),
            [(f"({k})", b(make().weight_bytes), b(make().kv_cache_bytes), f"{gib(make().peak_bytes):.1f} GiB",
              verdict(make(), "a100-80gb")) for k, make in _SERVE.items()])),
    ),
    MultiChoice(
        id="03.12", title="When does recompute lower the peak?", difficulty="stretch", minutes=10,
        formula="peak = max over the moments of a step, with and without recompute (memlib.estimate_training)",
        prompt="For which of these setups does full activation recompute lower the per-GPU **peak** by at least 10% "
               "(memlib.estimate_training with `recompute=\"none\"` vs `\"full\"`, bf16-mixed AdamW unless stated, "
               "sequence 2048 and micro-batch 1 unless stated)?",
        options=(Option("a", "LLaMA-13B, one GPU",
                        "the peak is the optimizer step, where activations are already freed",
                        misconception="recompute always lowers the peak, since it removes activations"),
                 Option("b", "LLaMA-7B, ZeRO-3 over 8 GPUs, sequence 4096, micro-batch 4",
                        "with the states sharded, activations are most of what is alive at the peak",
                        misconception="once ZeRO-3 has sharded everything, nothing is left to save"),
                 Option("c", "LLaMA-13B, one GPU, ZeRO-2 with the optimizer offloaded to CPU",
                        "with the states on the host, the peak is in the backward, where the activations are",
                        misconception="offload already solved memory, so recompute adds nothing"),
                 Option("d", "LLaMA-7B, LoRA r=16 on q and v over a bf16 base",
                        "the frozen base is small next to the activations LoRA still saves for the backward",
                        misconception="LoRA trains few parameters, so it has few activations"),
                 Option("e", "Llama-2-7B, pure bf16 with 8-bit AdamW, sequence 512",
                        "at 512 tokens the activations are small; the peak is when every gradient exists",
                        misconception="recompute is the first thing to try on one GPU")),
        right=lambda: frozenset(k for k in _RECOMPUTE if _recompute_saving(k) >= 0.10),
        hints=("Recompute shrinks activations only; it lowers the peak only if activations are a large part of what "
               "is alive at the peak.",
               "saving = 1 - peak(recompute='full') / peak(recompute='none'); the peak is the max over est.moments.",
               "For each setup, first find est.phase and est.breakdown['activations'] without recompute."),
        worked=lambda: ("memlib, per GPU:\n\n" + md_table(
            ("setup", "peak without", "phase", "peak with full recompute", "phase", "saved"),
            [(f"({k})", f"{gib(p.peak_bytes):.1f} GiB", p.phase, f"{gib(r.peak_bytes):.1f} GiB", r.phase,
              f"{1 - r.peak_bytes / p.peak_bytes:.0%}") for k in _RECOMPUTE for p, r in [_recompute_pair(k)]])
            + "\n\nRecompute pays where activations dominate the peak: sharded or offloaded states, adapters over a "
              "small base, long sequences and large micro-batches. With the states on one GPU the peak is the "
              "optimizer step or the end of the backward, and recompute does not touch it."),
    ),
    Numeric(
        id="03.13", title="DataParallel's first GPU against a DDP rank", difficulty="interview", minutes=8,
        formula="DataParallel gathers every output onto device_ids[0] and keeps the gradients and optimizer there; "
                "DDP keeps its own outputs and a bucket copy of the gradients (memlib.parallel.data_parallel)",
        prompt="Qwen2-0.5B (memlib.get_model('qwen2-0.5b'): its parameter count and its 151,936-token vocabulary) is "
               "trained in fp32 with AdamW on **4 GPUs**, a batch of **16 sequences of 4,096 tokens**; the model "
               "returns fp32 logits. Under `torch.nn.DataParallel`, cuda:0 keeps the gradients, the optimizer states "
               "and the logits of the whole batch, gathered there. Under `DistributedDataParallel` (default options) "
               "each rank keeps its gradients, its optimizer states, its all-reduce buckets and the logits of its own "
               "sequences. At the end of the forward, how many GB **more** does DataParallel's cuda:0 hold than one "
               "DDP rank?",
        expected=lambda: _dp().dp_over_ddp_bytes, unit="GB",
        slips=(Slip("no bucket copy", lambda: _dp(gradient_as_bucket_view=True).dp_over_ddp_bytes,
                    "DDP's default (gradient_as_bucket_view=False) keeps a second copy of every gradient in its "
                    "all-reduce buckets: a rank holds that much more, so cuda:0's surplus is that much less"),
               Slip("the whole gathered batch", lambda: _dp().dp_device0["gathered outputs"],
                    "a DDP rank holds the logits of its own 16 / 4 sequences too; the surplus is the other 12"),
               Slip("the optimizer on cuda:0 only", lambda: _dp().dp_over_ddp_bytes + _dp().ddp_rank["optimizer"],
                    "every DDP rank runs its own optimizer: the AdamW states are on every GPU under DDP too")),
        hints=("List what each scheme keeps per GPU: gradients, optimizer states, buckets, logits. Which differ?",
               "surplus = (batch - batch / n) x seq x vocab x 4 bytes - num_params x 4 bytes (DDP's buckets).",
               "Compute one sequence's fp32 logits first: 4,096 x 151,936 x 4 bytes."),
        worked=lambda: (lambda r, p: (
            f"Gradients ({b(r.dp_device0['gradients'])}) and AdamW states ({b(r.dp_device0['optimizer'])}) are on "
            f"both. cuda:0 gathers 16 sequences of logits ({b(r.dp_device0['gathered outputs'])}), a DDP rank keeps "
            f"its 4 ({b(r.ddp_rank['own outputs'])}) plus a bucket copy of the gradients ({b(r.ddp_rank['buckets'])}, "
            f"{p:,} parameters x 4 bytes): **{b(r.dp_over_ddp_bytes)}** more on cuda:0 "
            "(`memlib.parallel.data_parallel.data_parallel_memory`), while DataParallel's other three GPUs keep none "
            "of these. That is why PyTorch recommends DDP."))(_dp(), n_params("qwen2-0.5b")),
    ),
]
