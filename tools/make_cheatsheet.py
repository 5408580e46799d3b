"""Write docs/cheatsheet.md: the key formulas, each with its source and a worked example,
generated from memlib (the formulas' docstrings and live calls), so it cannot drift. The rows
are grouped by the topic notebook (notebooks/NN_*.ipynb) that teaches them, every notebook at
least one.

    python tools/make_cheatsheet.py            # writes docs/cheatsheet.md
    python tools/make_cheatsheet.py --check    # exit 1 if the file is out of date
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

import memlib
from memlib import cost, serving
from memlib.training import activations
from memlib.serving import inference
from memlib.serving import quantization
from memlib.training import lora
from memlib.parallel import megatron, moe
from memlib.training import optimizers
from memlib.cost import timing
from memlib.parallel import zero
from memlib.parallel.plan import plan_serving
from memlib.training import context_parallel
from memlib.training import terms as training_terms
from memlib.units import fmt_bytes
from memlib.cost import checkpointing, conventions
from memlib.parallel import data_parallel
from memlib.serving import techniques
from memlib.units import FORMATS, FloatFormat
from memlib.models import llama_like
from memlib.training import rlhf
from memlib.cost import collectives
from memlib.parallel import pipeline
from memlib.hardware import allocator, fit

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "cheatsheet.md"
NOTEBOOKS = ROOT / "notebooks"

# Each row's formula as LaTeX (rendered by MathJax in the book, by GitHub's math on the repository),
# hand-written from the memlib function the row names; the prose after it is the function's docstring.
# Symbols: s tokens per sequence, b micro-batch, h hidden size, a attention heads, t tensor-parallel size,
# L layers, H heads, Q head dim, T context tokens, V vocabulary, N parameters, D training tokens.
LATEX = {
    "Parameters": r"N = V h + L\,\bigl(h\,(aQ) + 2\,h\,(n_{kv} Q) + (aQ)\,h + 3\,h\,I + 2h\bigr) + h + h V",
    "Model states, mixed precision AdamW": r"\text{AMP: } (4 + 4 + 8)\,N = 16N \qquad \text{ZeRO: } (2 + 2 + K)\,N,\ K = 12",
    "Optimizer step temporaries": r"\text{for-loop: } 2\,n_{\max}\,B_{\text{state}} \qquad \text{foreach: } n_{\text{group}}\,B_{\text{state}} \qquad \text{fused: } 0",
    "Activations, GPT layer": r"s\,b\,h\,\Bigl(10 + \frac{24}{t} + \frac{5as}{ht}\Bigr) \quad (t = 1:\ s\,b\,h\,(34 + 5as/h))",
    "Activations, LLaMA layer": r"\sum_{\text{saved tensors}} \text{numel} \times \text{bytes} \quad (\text{eager attention adds } b\,a\,s^2 \times (4 + 2))",
    "Logits and loss": r"b\,s\,V\,(2 + 4 + 4) \text{ at the loss}; \quad 3 \times 4\,b\,s\,V \text{ at the loss gradient}",
    "Peak": r"\text{peak} = \max_{\text{moments } m} \sum_{\text{parts}} \text{bytes}(m)",
    "LoRA adapters": r"r\,(d_{\text{in}} + d_{\text{out}}) \text{ per adapted matrix per layer}",
    "LoRA inputs (PEFT)": r"b\,s\,d_{\text{in}} \times B_{\text{copy}}, \quad B_{\text{copy}} \in \{0, 2, 4\} \ (+1 \text{ for a dropout mask})",
    "NF4 (QLoRA)": r"4 + \frac{8}{64} + \frac{32}{64 \cdot 256} = 4.127 \text{ bits per weight}",
    "8-bit AdamW": r"2n + 2 \cdot 4 \,\lceil n / 256 \rceil \text{ bytes}",
    "Selective recompute (torchtitan)": r"\sum_{\text{mm, bmm, sdpa outputs}} \text{bytes} \;-\; \text{every second mm}",
    "Does it fit": r"\text{margin} = \text{capacity} - (\text{peak} + \text{CUDA context} + h \times \text{peak}) \ge 0, \quad h = \text{allocator headroom}",
    "Largest model that fits (continuous)": r"N_{\text{largest}} = \max \{ N : \text{fits}(\text{estimate}(\mathrm{llama\_like}(N)), \text{gpu}) \}",
    "Optimizer step: bandwidth-bound": r"t_{\text{step}} \ge \frac{N \times B_{\text{moved}}}{\text{HBM bandwidth}}, \quad B_{\text{moved}} = 4 \cdot 4 + 3 \cdot 4 = 28 \text{ (AdamW)}",
    "ZeRO stages": r"\frac{K N}{dp}\ (\ge 1) + \frac{2N}{dp}\ (\ge 2) + \frac{2N}{dp}\ (3), \text{ else the full } K N,\ 2N,\ 2N",
    "Megatron's distributed optimizer": r"\underbrace{2 + 4}_{\text{bf16 params, fp32 grads}} + \frac{12}{dp} \quad (\text{without it: } 18)",
    "The first iteration's peak": r"\text{peak}_1 = \max\bigl(\text{forward/backward} - \frac{8 N}{dp},\ \text{step}\bigr) \quad (\text{AdamW's fp32 moments, made in the first step})",
    "ZeRO-Offload": r"\text{host} = \frac{K N}{dp} + \frac{4 N}{dp} \ (+\ 2N \text{ 16-bit weights with optimizer+params})",
    "KV cache (MHA/GQA)": r"2 \times L \times \frac{n_{kv}}{t} \times Q \times \text{bytes}",
    "fp8 / int8 KV cache": r"2 \times L \times \frac{n_{kv}}{t} \times (Q \times \text{bytes} + \text{per-head scale, zero point})",
    "PagedAttention block waste": r"\Bigl(\Bigl\lceil \frac{n}{B} \Bigr\rceil B - n\Bigr) \times \text{KV bytes per token} \le (B - 1) \times \text{KV bytes per token}",
    "vLLM's KV budget and concurrency": r"\text{blocks} = \Bigl\lfloor \frac{\text{budget}}{B \times \text{KV bytes per token}} \Bigr\rfloor, \quad \text{concurrency} = \frac{\text{blocks} \times B}{\mathrm{max\_model\_len}}",
    "vLLM's profile peak (sampler warm-up)": r"\max\Bigl(\text{forward}(T),\ \min(S, T) \times V \times 38 + T \times H \times 2\Bigr)",
    "Decode speed limit": r"t_{\text{step}} \ge \max\Bigl(\frac{W_{\text{GPU}} + b\,T \times \text{KV bytes per token per GPU}}{\text{HBM bandwidth}},\ \frac{b\,(2N + 4LHQT)/t}{\text{peak}}\Bigr)",
    "Quantized weights": r"\text{int8: } d_{\text{in}}\,d_{\text{out}} + 4\,d_{\text{out}}; \quad \text{int4: } \approx d_{\text{in}}\,d_{\text{out}} / 2 + \text{scales, zeros per group}",
    "MLA latent KV vs full K/V": r"\text{latent: } L\,(d_c + d_r) \times \text{bytes} \qquad \text{full: } 2\,L\,\frac{n_{kv}}{t}\,Q \times \text{bytes}",
    "Experts a batch touches": r"E \Bigl(1 - \Bigl(1 - \frac{k}{E}\Bigr)^{T}\Bigr)",
    "MoE FLOPs: 6 x active parameters": r"6\,N_{\text{active}} \text{ FLOPs per token}",
    "Activations, MoE layer": r"\text{rows} = \text{tokens} \times k \quad \Bigl(\text{capacity: } \Bigl\lceil \frac{c \times \text{tokens} \times k}{E} \Bigr\rceil \text{ per expert}\Bigr)",
    "Expert parallelism (ep)": r"\frac{E}{ep} \text{ experts per GPU, their states sharded } \frac{dp}{ep} \text{ ways}",
    "All-to-all traffic (MoE)": r"4 \times \frac{ep - 1}{ep}\,(\text{rows} \times h \times \text{bytes}) \times \text{MoE layers} \times \text{micro-batches}",
    "Serving plan": r"\max_{\text{format, } tp,\ ep} \text{sequences} \ \text{ s.t. } \ \text{weights} + \text{KV cache} + \text{workspace} \le \text{usable memory}",
    "Chunked cross-entropy (Liger)": r"b\,s\,h \times B_{\text{hidden}} + V h \times B_{\text{weight}} \ (\text{head trains}) \quad \text{instead of } b\,s\,V \text{ logits}",
    "Activation offload (torchtune)": r"\text{GPU keeps the 3 largest saved tensors of the layer's half}; \ \text{host} = \sum \text{saved activations}",
    "Context parallelism (cp)": r"s_{\text{local}} = \frac{s}{cp}, \quad \text{states sharded over } dp \times cp \text{ GPUs}",
    "Ring attention traffic": r"(f + 1)\,(cp - 1) \times \text{KV block} + cp \times \text{fp32 dK/dV block}, \quad f = \text{forwards (2 under full recompute)}",
    "Attention FLOPs": r"12\,L\,H\,Q\,T \text{ FLOPs per token}",
    "Training FLOPs per token": r"6N + 12\,L\,H\,Q\,T \quad (\text{full recompute: } + 2N + 4\,L\,H\,Q\,T)",
    "Training FLOPs of a run: 6ND": r"C = 6\,N\,D \ (+\ 12\,L\,H\,Q\,T \cdot D \text{ for attention})",
    "MFU -> GPU-hours": r"\text{GPU-hours} = \frac{C}{\text{peak} \times \text{MFU} \times 3600}",
    "MFU vs HFU": r"\text{MFU} = \text{HFU} \times \frac{\text{model FLOPs (no recompute)}}{\text{hardware FLOPs (recompute included)}}; \quad \text{full recompute: } \frac{6N + 12\,L\,H\,Q\,T}{8N + 16\,L\,H\,Q\,T} = \frac{3}{4}",
    "Chinchilla: 20 tokens per parameter": r"D = 20\,N, \quad C = 6\,N\,D \ \Rightarrow\ N = \sqrt{\frac{C}{6 \times 20}}",
    "Ring all-reduce": r"\text{all-reduce: } \frac{2(n-1)}{n} B, \quad \text{reduce-scatter, all-gather: } \frac{n-1}{n} B",
    "Little's law": r"L = \lambda W \ \Rightarrow\ \lambda = \frac{L}{W}",
    "MLA absorbed at decode": r"2\,L\,H\,(2 d_c + d_r)\,T \text{ FLOPs}; \quad \text{intensity} = \frac{H\,(2 d_c + d_r)}{(d_c + d_r)\,B}",
    "Causal attention FLOPs": r"6\,L\,H\,Q\,T; \quad \frac{T_1\,(6N + \text{attention}(T_1))}{T_2\,(6N + \text{attention}(T_2))}",
    "Ulysses all-to-all traffic": r"2 \times \mathrm{all\_to\_all}\Bigl((2q + 2\,kv) \frac{T}{cp} \times \text{bytes}\Bigr) \text{ over } cp \text{ GPUs}",
    "Recompute without the head": r"\frac{2\,(N - N_{\text{embedding}} - N_{\text{head}}) + 4\,L\,H\,Q\,T}{6N + 12\,L\,H\,Q\,T}",
    "Implied MFU of a published run": r"\text{MFU} = \frac{\text{FLOPs per token} \times \text{tokens}}{\text{GPU-hours} \times 3600 \times \text{dense peak}}",
    # rows main gained while this table was written (notebooks 08, 09): their formulas, ready for the merge
    "Affine quantization: scale, zero-point, error": r"q = \mathrm{round}(x / S) + Z, \quad \text{symmetric: } S = \frac{\max |x|}{2^{b-1} - 1},\ Z = 0; \quad |x - S(q - Z)| \le \frac{S}{2}",
    "Bits per weight by group": r"b + \frac{b_{\text{scale}} + b_{\text{zero}}}{g} \text{ bits per weight}",
    "Caching allocator: blocks and segments": r"\text{block} = 512 \lceil n / 512 \rceil; \quad \text{segment} = 2\,\text{MiB} \ (\text{block} \le 1\,\text{MiB}),\ 20\,\text{MiB} \ (< 10\,\text{MiB}),\ \text{else } 2\,\text{MiB} \lceil \text{block} / 2\,\text{MiB} \rceil",
    "Reserved peak (caching allocator)": r"\text{reserved} \approx \text{peak} + \phi \cdot \text{transient}, \quad \phi = 0.5 \ (0.12 \text{ with expandable segments})",
    "Decode turns compute-bound": r"\text{batch}_{\text{cross}} = \text{ridge} \times \frac{\text{bits}}{16}, \quad \text{speedup} = \frac{t_{\text{step}}(\text{bf16})}{t_{\text{step}}(\text{quantized})}",
    "RLHF roles: trained vs frozen": r"\text{actor, critic: } 16N \qquad \text{reference, reward: } 2N + \text{one forward} \qquad \text{rollout: } 2N + \text{KV}(\text{batch} \times G \times (\text{prompt} + \text{response}))",
    "RLHF peak: phases, colocated or separate": r"\text{peak} = \max_{\text{phase}} \Bigl(\text{asleep: } \sum_{\text{running}} \text{bytes}; \ \text{resident: } \sum_{\text{roles}} \text{resident} + \text{running extra}\Bigr)",
    "Checkpoint size and interval": r"\text{size} = B_{\text{ckpt}} \times N, \quad \text{MTBF}_{g'} = \text{MTBF}_g\,\frac{g}{g'}, \quad \tau = \sqrt{2\,t_{\text{write}}\,\text{MTBF}}",
    "Number formats: range and precision": r"\varepsilon = 2^{-m}, \quad x_{\max} = (2 - 2^{-m})\, 2^{\,2^{e-1}-1} \ (\text{E4M3: } 448), \quad x_{\min,\text{normal}} = 2^{\,2-2^{e-1}}",
    "DataParallel vs DDP": r"\text{DP, GPU 0: } N(b_g + b_o) + B\,s\,V\,b_{\text{out}} \qquad \text{DDP, each rank: } N(b_g + b_o + b_{\text{bucket}}) + \tfrac{B}{n}\,s\,V\,b_{\text{out}}",
    "Speculative decoding": r"E[\text{tokens per target step}] = \frac{1 - \alpha^{\gamma+1}}{1 - \alpha}, \qquad \text{speed-up} = \frac{1 - \alpha^{\gamma+1}}{(1 - \alpha)(\gamma c + 1)}",
    "Sliding-window attention": r"\bar K = \tfrac{T}{2} \ \text{(causal)}, \qquad \bar K = w - \frac{w^2}{2T} \ \text{(window } w \le T), \qquad \text{FLOPs/token} = 12\,L\,H\,Q\,\bar K",
    "Expert load at decode": r"\text{tokens per expert} = \frac{B\,k}{E}, \qquad T_{\text{ridge}} = \frac{\text{peak}}{\text{bandwidth}} \cdot \frac{b_w}{2}",
    # notebook 10 (issue 38): communication
    "Collectives: alpha-beta cost": r"t_{\text{ring}} = 2(n-1)\,\alpha + \frac{2(n-1)}{n}\,\frac{B}{\beta}, \qquad t_{\text{tree}} \approx 2\lceil\log_2 n\rceil\,\alpha + \frac{2B}{\beta}, \qquad n_{1/2} = n\,\alpha\,\beta",
    "Communication roofline": r"T_{\text{DP}} = \frac{2(n-1)}{n}\,\frac{2N}{\beta}\cdot\frac{F}{6N + 12LHQT}, \quad T_{\text{FSDP}} = 1.5\,T_{\text{DP}}, \quad \frac{t_{\text{TP}}}{t_{\text{compute}}} = \frac{4L\,\frac{2(t-1)}{t}\,2h/\beta}{(6N + 12LHQT)/(t\,F)}",
    "Pipeline bubble": r"\frac{p-1}{m+p-1} \ (\text{GPipe, 1F1B}), \quad \frac{p-1}{v\,m+p-1} \ (\text{interleaved}), \quad (p-1)(t_F + t_B - t_W) \ (\text{ZB-H1})",
}

# a product in a docstring ("s*b*h") reads as Markdown emphasis: the prose shows it with a middle dot
PRODUCT = re.compile(r"(?<=[\w)\]])\*(?=[\w(\[])")


def prose(text: str) -> str:
    """A row's text for Markdown: products as s·b·h, not *emphasis*."""
    return PRODUCT.sub("\u00b7", text)


def doc(fn) -> str:
    """A function's docstring, folded to one paragraph."""
    return " ".join(inspect.getdoc(fn).split())


def vocab_bytes(est) -> int:
    """The logits and loss at their largest over the moments of a step."""
    return max(mo.parts.get("logits_and_loss", 0) for mo in est.moments)


def notebook_titles() -> dict[str, str]:
    """{"00": "Where does GPU memory go in a training step?", ...}: each topic notebook's English title,
    from the first heading of its paired .py ("# # 00 · English · 中文")."""
    titles = {}
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py")):
        if path.stem.endswith("_deep_dive"):  # a topic's second page (issue 19), not a topic
            continue
        heading = next(line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("# # "))
        titles[path.name[:2]] = heading[4:].split(" · ")[1].strip()
    return titles


def rows() -> list[tuple[str, str, str, str, str]]:
    """(notebook "NN", topic, formula and source from memlib, where in memlib, a worked example)."""
    m7, m65, m3 = (memlib.get_model(n) for n in ("llama-7b", "llama-65b", "llama-3-8b"))
    m70, ds, m31 = (memlib.get_model(n) for n in ("llama-3-70b", "deepseek-v3", "llama-3.1-8b"))
    amp = memlib.estimate_training(m7, seq_len=2048, precision="bf16-mixed")
    a100_full = fit.largest_size_that_fits("a100-80gb", lambda m: memlib.estimate_training(m, 2048, 1))
    c = amp.counts
    mix = memlib.estimate_training("mixtral-8x7b", seq_len=4096, precision="bf16")
    moe_layer = mix.layer.total
    moe_routed = sum(v for n, v, _ in mix.layer.items if n.startswith("moe.experts"))
    mix_ep1, mix_ep8 = (memlib.estimate_training("mixtral-8x7b", seq_len=4096, precision="bf16", dp=8, ep=e)
                        for e in (1, 8))
    serve = plan_serving("deepseek-v3", "h200", 8, context_len=8192)
    tp8 = next(p for p in serve.feasible if (p.settings["tp"], p.settings["ep"]) == (8, 1))
    # notebook 04: Llama-3-70B, 8k-token chats, H100s
    kv70 = {f: inference.kv_bytes_per_token(m70, f) for f in ("bf16", "fp8", "int8")}
    dec = serving.decode_bound(m70, "h100-80gb", batch=1, context_len=8192, tp=4)
    # notebook 08: PPO on Llama-2-7B
    rl_whole = rlhf.estimate_rlhf("llama-2-7b", "ppo", gpus=1, zero_stage=0, rollout_batch=16)
    rl_awake = rlhf.estimate_rlhf("llama-2-7b", "ppo", gpus=8, offload_idle=False, rollout_batch=16)
    rl_asleep = rlhf.estimate_rlhf("llama-2-7b", "ppo", gpus=8, rollout_batch=16)
    chats = {(w, tp): serving.vllm_max_concurrency(m70, "h100-80gb", 8192, weights=w, tp=tp)
             for w, tp in (("bf16", 4), ("fp8-block", 2))}
    # notebook 05: DeepSeek-V3
    kv_latent, kv_full = (inference.kv_bytes_per_token(ds, mla_cache=k) for k in ("latent", "full"))
    touched = {t: moe.expected_experts_touched(ds.num_experts, ds.num_experts_per_tok, t) for t in (1, 64)}
    read = {t: moe.decode_weight_bytes(ds, t) for t in (1, 64)}
    # notebook 06: Llama-3.1-8B at 128k tokens on 8 GPUs, FSDP
    long = dict(seq_len=131072, zero_stage="FULL_SHARD")
    full_loss = memlib.estimate_training(m31, dp=8, **long)
    chunked = memlib.estimate_training(m31, dp=8, loss="chunked", **long)
    cp1, cp8 = (memlib.estimate_training(m31, recompute="full", loss="chunked", **{"dp" if k == 1 else "cp": 8}, **long)
                for k in (1, 8))
    off = memlib.estimate_training(m31, dp=8, loss="chunked", recompute="full", activation_offload=True, **long)
    # notebook 07: Llama-2-7B on 2T tokens, 256 H100s at 40% MFU
    run = cost.training_run("llama-2-7b", tokens=2e12, gpu="h100-80gb", gpus=256, mfu=0.4, seq_len=4096)
    # notebook 01: the QLoRA job, at 40% HFU (memlib's default) and at 40% MFU
    q65 = memlib.estimate_training("llama-65b", seq_len=2048, grad_accum=16, precision="fp16-mixed", finetune="qlora",
                            recompute="full", pp=4, lora_rank=64, lora_targets="all-linear", lora_dropout=0.05,
                            optimizer_impl="fused")
    qlora_hfu, qlora_mfu = timing.step_time(q65, "v100-32gb", hfu=0.4), timing.step_time(q65, "v100-32gb", mfu=0.4)
    n7b2 = memlib.get_model("llama-2-7b").num_params
    chin_n, chin_d = cost.chinchilla_optimal(5.9e23)
    return [
        # --- 00 · where the memory of a training step goes -------------------------------------------
        ("00", "Parameters", "Counted tensor by tensor: embeddings, q/k/v/o (GQA: k, v are kv_heads x head_dim "
         "wide), gated MLP (3 matrices), norms, untied head.", "memlib.models.Model.tensors",
         f"LLaMA-7B = {m7.num_params:,}; LLaMA-65B = {m65.num_params:,}"),
        ("00", "Model states, mixed precision AdamW",
         "PyTorch AMP: fp32 params 4 + fp32 grads 4 + Adam m, v 8 = 16 B/param. ZeRO paper: fp16 params 2 + "
         "fp16 grads 2 + K=12 (fp32 master, m, v) = 16 B/param. " + doc(zero.zero_model_state_bytes),
         "memlib.training.terms, memlib.parallel.zero.zero_model_state_bytes",
         f"LLaMA-7B AMP: {fmt_bytes(c['param_bytes'] + c['grad_bytes'] + c['optimizer_bytes'])}; "
         f"ZeRO-3 over 64 GPUs (paper's 7.5B): {fmt_bytes(zero.zero_model_state_bytes(7_500_000_000, 3, 64))}"),
        ("00", "Optimizer step temporaries", doc(optimizers.step_transient_bytes),
         "memlib.training.optimizers.step_transient_bytes",
         f"LLaMA-7B bf16-mixed, the foreach step: {fmt_bytes(4 * m7.num_params)} (an fp32 sqrt of every second "
         f"moment); for-loop: {fmt_bytes(2 * 4 * m7.largest_tensor_numel)}; fused: 0"),
        ("00", "Activations, GPT layer", doc(activations.korthikanti_layer_bytes),
         "memlib.training.activations.korthikanti_layer_bytes",
         f"GPT-3 shape (s=2048, b=1, h=12288, a=96): "
         f"{fmt_bytes(activations.korthikanti_layer_bytes(2048, 1, 12288, 96))} per layer"),
        ("00", "Activations, LLaMA layer", "Saved tensor by tensor from the Hugging Face implementation: RMSNorm "
         "fp32 input, normalized, output (one bf16 cast per consumer under AMP); rotated q, k, v, output and fp32 "
         "log-sum-exp of fused attention (eager adds fp32 softmax a*s*s and its 16-bit copy); gate, SiLU, up, "
         "product of the MLP.", "memlib.training.activations.llama_layer_ledger",
         f"LLaMA-7B, 2048 tokens, bf16-mixed: {fmt_bytes(c['layer_activation_bytes'])} per layer"),
        ("00", "Logits and loss", "The head's 16-bit logits b*s*V*2, the fp32 upcast b*s*V*4 and the fp32 "
         "log-softmax b*s*V*4 at the loss; the loss gradient b*s*V*4 x 3 at the start of the backward.",
         "memlib.training.terms (logits_bytes, loss_upcast_bytes, log_softmax_bytes; chunked: fused_loss_*)",
         f"LLaMA-3-8B at 8192 tokens: log-softmax alone {fmt_bytes(4 * m3.vocab_size * 8192)}"),
        ("00", "Peak", "The maximum over the moments of a step (forward at the loss; backward at the loss gradient, "
         "the top and bottom layers, the embedding; optimizer step), not a sum.", "memlib.Estimate.moments",
         f"LLaMA-7B bf16-mixed s=2048: {fmt_bytes(amp.peak_bytes)} in {amp.phase}"),
        # --- 01 · a 65B model on 4 V100s: adapters and 4-bit weights -----------------------------
        ("01", "LoRA adapters", doc(lora.lora_params), "memlib.training.lora.lora_params",
         f"LLaMA-7B r=8 on q,v: {lora.lora_params(m7, 8, ['q_proj', 'v_proj']):,} params"),
        ("01", "LoRA inputs (PEFT)", doc(activations.adapter_input_bytes), "memlib.training.activations.adapter_input_bytes",
         "bf16 base, fp32 adapters under autocast: a 2-byte copy per adapted input (+1-byte dropout mask); "
         "without autocast a 4-byte one"),
        ("01", "NF4 (QLoRA)", doc(lora.nf4_bytes), "memlib.training.lora.nf4_bytes",
         f"{lora.NF4_BITS_PER_PARAM:.3f} bits/param; a 4096 x 4096 matrix: {lora.nf4_bytes(4096 * 4096):,} B"),
        # --- 02 · one GPU: optimizer, recompute, the verdict ----------------------------------------
        ("02", "8-bit AdamW", doc(optimizers.adamw_8bit_state_bytes), "memlib.training.optimizers.adamw_8bit_state_bytes",
         f"a 4096 x 4096 matrix: {optimizers.adamw_8bit_state_bytes(4096 * 4096):,} B (fp32 AdamW: "
         f"{8 * 4096 * 4096:,} B)"),
        ("02", "Selective recompute (torchtitan)", doc(activations.selective_saved_bytes),
         "memlib.training.activations.selective_saved_bytes",
         "LLaMA-7B layer: q, v, gate, down projection outputs + attention output and log-sum-exp"),
        ("02", "Does it fit", doc(memlib.fits), "memlib.hardware.fit.fits",
         str(memlib.fits(memlib.estimate_training(m7, precision='bf16', finetune='lora', recompute='full'),
                         'rtx-4090'))),
        # --- 03 · when the model does not fit: shard, offload --------------------------------------
        ("03", "ZeRO stages", doc(zero.partitioned), "memlib.parallel.zero.partitioned",
         "; ".join(f"stage {k}: {fmt_bytes(zero.zero_model_state_bytes(m65.num_params, k, 4))}" for k in range(4))
         + " per GPU for LLaMA-65B over 4 GPUs"),
        ("03", "ZeRO-Offload", doc(training_terms.offload),
         "memlib.training.terms.offload, estimate_training(offload=, offload_device=)",
         (lambda o: f"LLaMA-7B bf16-mixed, ZeRO-2 on one GPU with offload='optimizer': {fmt_bytes(o.host_bytes)} "
                    f"in host memory, {fmt_bytes(o.peak_bytes)} peak on the GPU")(
             memlib.estimate_training(m7, precision="bf16-mixed", zero_stage=2, offload="optimizer"))),
        ("03", "Megatron's distributed optimizer", doc(megatron.megatron_bytes_per_param),
         "memlib.parallel.megatron.megatron_bytes_per_param, estimate_training(recipe='megatron')",
         f"bf16 over dp = 8: {float(megatron.megatron_bytes_per_param('fp32-grads', True, 8)):g} bytes per parameter; "
         f"LLaMA-65B: {fmt_bytes(megatron.megatron_model_state_bytes(m65.num_params, 'fp32-grads', True, 8))} per GPU"),
        ("03", "The first iteration's peak", doc(training_terms.first_step_optimizer_state_bytes),
         "memlib.training.terms.first_step_optimizer_state_bytes, Estimate.first_iteration_peak_bytes",
         (lambda e: f"LLaMA-7B with Megatron, tp 2 x dp 4, s=8192: iteration 1 {fmt_bytes(e.first_iteration_peak_bytes)}"
                    f", every later one {fmt_bytes(e.peak_bytes)}")(
             memlib.estimate_training(m7, recipe="megatron", seq_len=8192, tp=2, dp=4))),
        # --- 04 · serving: KV cache, paged blocks, the decode speed limit -------------------------
        ("04", "KV cache (MHA/GQA)", doc(inference.gqa_kv_bytes_per_token),
         "memlib.serving.inference.gqa_kv_bytes_per_token, kv_bytes_per_token, kv_cache_bytes",
         f"Llama-3-8B bf16: {inference.kv_bytes_per_token(m3):,} B per token; Llama-3-70B bf16: "
         f"{kv70['bf16']:,} B per token, one 8,192-token chat {fmt_bytes(inference.kv_cache_bytes(m70, 1, 8192))}"),
        ("04", "fp8 / int8 KV cache", "The KV cache formula with bytes per element "
         + ", ".join(f"{k} {v}" for k, v in inference.KV_ELEMENT_BYTES.items()) + ". \"fp8\" is "
         + doc(inference.kv_bytes_per_token).split(' "fp8" is ', 1)[1],
         "memlib.serving.inference.kv_bytes_per_token(kv_cache=), KV_ELEMENT_BYTES",
         f"Llama-3-70B per token: bf16 {kv70['bf16']:,} B, fp8 {kv70['fp8']:,} B, int8 {kv70['int8']:,} B "
         "(1-byte values + per-head scale and zero point)"),
        ("04", "PagedAttention block waste", doc(serving.paged_kv_waste_bytes),
         "memlib.serving.paged_kv_blocks, paged_kv_waste_bytes",
         f"Llama-3-70B bf16, a 1,000-token sequence in vLLM's {serving.VLLM_BLOCK_SIZE}-token blocks: "
         f"{serving.paged_kv_blocks(1000)} blocks, {serving.paged_kv_waste_bytes(1000, kv70['bf16']):,} B unused "
         f"(at most {serving.VLLM_BLOCK_SIZE - 1} tokens' worth: {(serving.VLLM_BLOCK_SIZE - 1) * kv70['bf16']:,} B)"),
        ("04", "vLLM's KV budget and concurrency", doc(serving.vllm_max_concurrency),
         "memlib.serving.vllm_kv_cache_budget_bytes, vllm_max_concurrency",
         f"Llama-3-70B, 8,192-token requests on H100-80GB: bf16 over tp=4 "
         f"{chats[('bf16', 4)]:.1f}x, fp8-block over tp=2 {chats[('fp8-block', 2)]:.1f}x"),
        ("04", "vLLM's profile peak (sampler warm-up)", doc(serving.vllm_profile_peak_bytes),
         "memlib.serving.vllm_profile_peak_bytes, vllm_sampler_warmup_bytes",
         f"Llama-3-8B, 8,192 tokens, 256 sequences: {fmt_bytes(serving.vllm_profile_peak_bytes('llama-3-8b', 8192))} "
         "at tp 1 and tp 2 alike (vLLM logged 1.26 GiB at both, vllm#10511)"),
        ("04", "Decode speed limit", doc(serving.decode_bound), "memlib.serving.decode_bound (DecodeBound)",
         f"Llama-3-70B bf16 over tp=4 H100-80GB, batch 1 at 8,192 tokens: {fmt_bytes(dec.bytes_read)} read per GPU "
         f"per step / {dec.bandwidth_bytes_per_s / 1e12:.2f} TB/s = {dec.memory_s * 1e3:.1f} ms, at most "
         f"{dec.tokens_per_s_per_sequence:.0f} tokens/s ({dec.bound}-bound)"),
        ("04", "Quantized weights", doc(inference.quantized_linear_bytes), "memlib.serving.inference.quantized_linear_bytes",
         f"4096 x 4096 in int4-gptq: {inference.quantized_linear_bytes(4096, 4096, 'int4-gptq'):,} B"),
        # --- 05 · mixture of experts: DeepSeek-V3, Mixtral --------------------------------------------
        ("05", "MLA latent KV vs full K/V", doc(inference.kv_bytes_per_token), "memlib.serving.inference.kv_bytes_per_token"
         "(mla_cache=)",
         f"DeepSeek-V3 bf16 ({ds.num_layers} layers, kv_lora_rank {ds.kv_lora_rank} + rope {ds.qk_rope_head_dim}): "
         f"latent {kv_latent:,} B per token; full K/V {kv_full:,} B per token ({kv_full / kv_latent:.0f}x)"),
        ("05", "Experts a batch touches", doc(moe.expected_experts_touched) + " " + doc(moe.decode_weight_bytes),
         "memlib.parallel.moe.expected_experts_touched, decode_weight_bytes",
         f"DeepSeek-V3 ({ds.num_experts} experts, top-{ds.num_experts_per_tok}): 1 token touches "
         f"{touched[1]:.0f} per layer, 64 tokens {touched[64]:.1f}; weights read per decode step "
         f"{fmt_bytes(read[1])} at 1 token, {fmt_bytes(read[64])} at 64"),
        ("05", "MoE FLOPs: 6 x active parameters", doc(timing.active_params), "memlib.cost.timing.active_params",
         f"DeepSeek-V3: {timing.active_params(ds):,} active of {ds.num_params:,}; 6N = "
         f"{6 * timing.active_params(ds):.3e} FLOPs per token (not {6 * ds.num_params:.3e}); 14.8T tokens: "
         f"{cost.training_flops(ds, 14.8e12):.3e} FLOPs"),
        ("05", "Activations, MoE layer", doc(training_terms.routed_rows) + " "
         + doc(training_terms.routed_expert_activations),
         "memlib.training.activations.llama_layer_ledger (moe=True), memlib.training.terms.routed_rows",
         f"Mixtral-8x7B, 4096 tokens, bf16: {fmt_bytes(moe_layer)} per MoE layer, of which routed experts "
         f"{fmt_bytes(moe_routed)} (8,192 rows = tokens x top-2, not x 8 experts)"),
        ("05", "Expert parallelism (ep)", doc(training_terms.sharded),
         "memlib.training.terms.sharded, estimate_training(ep=)",
         f"Mixtral-8x7B, DDP over 8 GPUs, bf16: weights per GPU {fmt_bytes(mix_ep1.counts['param_bytes'])} at ep=1, "
         f"{fmt_bytes(mix_ep8.counts['param_bytes'])} at ep=8 (one expert per layer per GPU)"),
        ("05", "All-to-all traffic (MoE)", doc(timing.ep_all_to_all_bytes), "memlib.cost.timing.ep_all_to_all_bytes",
         f"Mixtral-8x7B, 4096 tokens, ep=8, one micro-batch: {fmt_bytes(int(timing.ep_all_to_all_bytes(mix_ep8)))} "
         "sent per GPU per step"),
        ("05", "Serving plan", doc(plan_serving), "memlib.parallel.plan.plan_serving (CLI: memlib fit MODEL --task serve)",
         f"DeepSeek-V3 on 8 x H200 at 8,192 tokens: best {serve.best.describe()}: "
         f"{fmt_bytes(serve.best.weight_bytes)} of weights and {fmt_bytes(serve.best.kv_cache_bytes)} of KV cache per "
         f"GPU, {serve.best.sequences:,} sequences; tensor parallel over 8: {tp8.max_batch.value:,} sequences"),
        # --- 06 · long context: the loss, recompute, offload, context parallelism ---------------------
        ("06", "Chunked cross-entropy (Liger)", doc(training_terms.fused_loss_saved_bytes),
         "memlib.training.terms.fused_loss_saved_bytes, fused_loss_chunk_bytes; estimate_training(loss=\"chunked\")",
         f"Llama-3.1-8B at 131,072 tokens, FSDP over 8: logits and loss at their largest "
         f"{fmt_bytes(vocab_bytes(full_loss))} with transformers' loss (peak {fmt_bytes(full_loss.peak_bytes)}), "
         f"{fmt_bytes(vocab_bytes(chunked))} chunked (peak {fmt_bytes(chunked.peak_bytes)})"),
        ("06", "Activation offload (torchtune)", "Every saved activation goes to pinned host memory in the forward "
         "and comes back when its node runs in the backward. " + doc(training_terms.offload_brought_back),
         "memlib.training.terms.offload_brought_back; estimate_training(activation_offload=True)",
         f"Llama-3.1-8B at 131,072 tokens, full recompute, chunked loss, FSDP over 8: peak "
         f"{fmt_bytes(cp1.peak_bytes)} without, {fmt_bytes(off.peak_bytes)} with offload "
         f"({fmt_bytes(off.host_bytes)} in host memory per GPU)"),
        ("06", "Context parallelism (cp)", doc(context_parallel.local_setup) + " Parameters, gradients and optimizer "
         "states do not depend on cp; every per-token term divides by cp.",
         "memlib.training.context_parallel.local_setup; estimate_training(cp=)",
         f"Llama-3.1-8B at 131,072 tokens, full recompute, chunked loss, 8 GPUs: layer activations "
         f"{fmt_bytes(cp1.counts['layer_activation_bytes'])} at dp=8, "
         f"{fmt_bytes(cp8.counts['layer_activation_bytes'])} at cp=8; "
         f"peak {fmt_bytes(cp1.peak_bytes)} -> {fmt_bytes(cp8.peak_bytes)}"),
        ("06", "Ring attention traffic", doc(timing.cp_kv_bytes), "memlib.cost.timing.cp_kv_bytes, cp_exposed_seconds",
         f"the cp=8 case above: {fmt_bytes(timing.cp_kv_bytes(cp8))} sent per GPU per decoder layer per micro-batch"),
        ("06", "Attention FLOPs", doc(timing.attention_flops_per_token), "memlib.cost.timing.attention_flops_per_token",
         f"Llama-3.1-8B at 131,072 tokens: {timing.attention_flops_per_token(m31, 131072):.3e} FLOPs per token, "
         f"{timing.attention_flops_per_token(m31, 131072) / (6 * m31.num_params):.1f}x the 6N of the weights"),
        # --- 07 · time and cost: FLOPs, MFU, GPU-hours, communication ---------------------------------
        ("07", "Training FLOPs per token", doc(timing.flops_per_token), "memlib.cost.timing.flops_per_token",
         f"LLaMA-7B, 2048 tokens: {timing.flops_per_token(m7, 2048):.3e} FLOPs per token"),
        ("07", "Training FLOPs of a run: 6ND", doc(cost.training_flops), "memlib.cost.training_flops",
         f"Llama-2-7B on 2T tokens: 6ND = {cost.training_flops(n7b2, 2e12):.3e} FLOPs; with attention at 4,096 "
         f"tokens {run.flops:.3e}"),
        ("07", "MFU -> GPU-hours", doc(cost.gpu_hours) + " " + doc(cost.training_run),
         "memlib.cost.gpu_hours, training_run (from a layout: training_run_from_step)",
         f"Llama-2-7B, 2T tokens at 4,096, H100-80GB at 40% MFU: {run.gpu_hours:,.0f} GPU-hours, "
         f"{run.days:.1f} days on 256 GPUs"),
        ("07", "MFU vs HFU", doc(timing.utilisation),
         "memlib.step_time(..., mfu= | hfu=), StepTime.mfu, .hfu, .achieved_mfu; memlib.cost.timing.utilisation",
         f"LLaMA-65B QLoRA split over 4 V100s (full recompute): the whole job makes {4 * qlora_hfu.tokens_per_s_per_gpu:.0f} "
         f"tokens/s at 40% HFU = {qlora_hfu.mfu:.0%} MFU, {4 * qlora_mfu.tokens_per_s_per_gpu:.0f} at 40% MFU"),
        ("07", "Chinchilla: 20 tokens per parameter", doc(cost.chinchilla_tokens) + " " + doc(cost.chinchilla_optimal),
         "memlib.cost.chinchilla_tokens, chinchilla_optimal, CHINCHILLA_TOKENS_PER_PARAM",
         f"70B parameters: {cost.chinchilla_tokens(70e9):.2e} tokens; 5.9e23 FLOPs buys {chin_n:.3e} parameters "
         f"on {chin_d:.3e} tokens"),
        ("07", "Ring all-reduce", doc(timing.all_reduce_bytes) + " " + doc(timing.reduce_scatter_bytes) + " "
         + doc(timing.all_gather_bytes), "memlib.cost.timing.all_reduce_bytes, reduce_scatter_bytes, all_gather_bytes",
         f"LLaMA-7B's bf16 gradients ({fmt_bytes(2 * m7.num_params)}) over 8 GPUs: "
         f"{fmt_bytes(int(timing.all_reduce_bytes(2 * m7.num_params, 8)))} sent per GPU per step"),
        # --- 09 · quantization: scale and zero-point, bits per weight, when decode gets faster ----------------
        ("09", "Affine quantization: scale, zero-point, error", doc(quantization.affine_params) + " "
         + doc(quantization.max_rounding_error), "memlib.serving.quantization.affine_params, quantize, dequantize, "
         "max_rounding_error",
         (lambda p: f"symmetric int8 of [-1, 0.5, 1]: S = {p.scale:.5f}, codes {quantization.quantize([-1, 0.5, 1], p)}, "
                    f"error at most {p.max_error:.5f}")(quantization.affine_params([-1.0, 0.5, 1.0]))),
        ("09", "Bits per weight by group", doc(quantization.bits_per_weight), "memlib.serving.quantization.bits_per_weight",
         f"AWQ int4 g128 with fp16 scale and 4-bit zero: {quantization.bits_per_weight(4, 128, 16, 4):.3f} bits; NF4 "
         f"with double quantization {quantization.NF4_DOUBLE_QUANT_BITS:.3f}"),
        ("09", "Decode turns compute-bound", doc(quantization.decode_crossover_batch) + " "
         + doc(quantization.decode_speedup), "memlib.serving.quantization.decode_crossover_batch, "
         "quantized_decode_bound, decode_speedup",
         f"H100: bf16 weights at batch {quantization.decode_crossover_batch('h100-80gb', 16):.0f}, AWQ int4 at "
         f"{quantization.decode_crossover_batch('h100-80gb', quantization.bits_per_weight(4, 128, 16, 4)):.0f}; "
         f"Llama-2-70B on 2 H100s, int4 vs bf16: "
         f"{quantization.decode_speedup('llama-2-70b', 'h100-80gb', 1, 256, 'int4-awq', tp=2):.2f}x at batch 1, "
         f"{quantization.decode_speedup('llama-2-70b', 'h100-80gb', 1024, 256, 'int4-awq', tp=2):.2f}x at 1,024"),
        # --- 11 · debugging an OOM: the caching allocator's sizes and the reserved peak -------------------------
        ("11", "Caching allocator: blocks and segments", doc(allocator.round_size) + " " + doc(allocator.segment_size),
         "memlib.hardware.allocator.round_size, segment_size, should_split, CachingAllocator",
         f"1,000 B: a {allocator.round_size(1000):,} B block in a {allocator.segment_size(1000) // 2**20} MiB segment; "
         f"3 MiB: a {allocator.segment_size(3 * 2**20) // 2**20} MiB segment; 250e6 B: "
         f"{allocator.segment_size(250_000_000) // 2**20} MiB"),
        ("11", "Reserved peak (caching allocator)", doc(allocator.reserved_bytes),
         "memlib.hardware.allocator.reserved_bytes, fits(..., allocator='caching' | 'expandable')",
         (lambda e: f"Llama-2-7B LoRA, 6 x 2k tokens, FSDP over 2 GPUs: allocated {fmt_bytes(e.peak_bytes)}, reserved "
                    f"{fmt_bytes(allocator.reserved_bytes(e).reserved_bytes)} (published: 21.35 GiB)")(
             memlib.estimate_training("llama-2-7b", seq_len=2048, micro_batch=6, precision="bf16", finetune="lora",
                                      lora_rank=64, lora_targets=["q_proj", "k_proj", "v_proj", "gate_proj",
                                                                  "up_proj", "down_proj"], lora_dropout=0.1,
                                      adapter_dtype="bf16", recompute="full", zero_stage="FULL_SHARD", dp=2))),
        # --- issue 21: limits searched continuously, and the FLOP conventions the notebooks state -------------
        ("02", "Largest model that fits (continuous)", doc(fit.largest_size_that_fits) + " "
         + doc(llama_like.llama_like_of_size), "memlib.hardware.fit.largest_size_that_fits, memlib.models.llama_like.llama_like_of_size",
         f"A100 80GB, AMP AdamW, 2,048 tokens: {a100_full.num_params / 1e9:.2f}B parameters"),
        ("02", "Optimizer step: bandwidth-bound", doc(conventions.optimizer_step_hbm_bytes),
         "memlib.cost.conventions.optimizer_step_hbm_bytes",
         f"LLaMA-7B on an A100 (2.04 TB/s): AdamW {conventions.optimizer_step_hbm_bytes(m7.num_params) / 2.039e12 * 1e3:.0f}"
         f" ms, 8-bit AdamW {conventions.optimizer_step_hbm_bytes(m7.num_params, 'adamw-8bit') / 2.039e12 * 1e3:.0f} ms"),
        ("04", "Little's law", doc(conventions.littles_law_arrival_rate), "memlib.cost.conventions.littles_law_arrival_rate",
         "100 chats in flight, 20 s each: 5 requests per second"),
        ("05", "MLA absorbed at decode", doc(conventions.mla_absorbed_attention_flops) + " "
         + doc(conventions.mla_absorbed_intensity), "memlib.cost.conventions.mla_absorbed_attention_flops, "
         "mla_absorbed_intensity, ridge_flop_per_byte",
         f"DeepSeek-V3 at 8,192 tokens: {conventions.mla_absorbed_attention_flops(ds, 8192) / 1e9:.0f} GFLOP of attention "
         f"per token, {conventions.mla_absorbed_intensity(ds, 8192):.0f} FLOP/B against the H100's ridge "
         f"{conventions.ridge_flop_per_byte('h100-80gb'):.0f}"),
        ("06", "Causal attention FLOPs", doc(conventions.causal_attention_flops_per_token) + " "
         + doc(conventions.sequence_flops_ratio), "memlib.cost.conventions.causal_attention_flops_per_token, "
         "attention_to_weights_flops, sequence_flops_ratio",
         f"Llama-3.1-8B at 131,072 tokens: attention {conventions.attention_to_weights_flops(m31, 131072):.2f}x the 6N "
         f"(causal); one 128k sequence {conventions.sequence_flops_ratio(m31, 131072, 8192):.1f}x an 8k one"),
        ("06", "Ulysses all-to-all traffic", doc(conventions.ulysses_all_to_all_bytes),
         "memlib.cost.conventions.ulysses_all_to_all_bytes",
         f"Llama-3.1-8B at 131,072 tokens over 8 GPUs: {fmt_bytes(int(conventions.ulysses_all_to_all_bytes(m31, 131072, 8)))} "
         f"per GPU per layer; cp is capped at its {m31.num_kv_heads} KV heads"),
        ("07", "Recompute without the head", doc(conventions.recompute_overhead),
         "memlib.cost.conventions.recompute_overhead",
         f"at 4,096 tokens: Llama-3.1-8B +{conventions.recompute_overhead(m31, 4096):.1%}, Llama-3.1-70B "
         f"+{conventions.recompute_overhead('llama-3.1-70b', 4096):.1%}"),
        ("07", "Implied MFU of a published run", doc(conventions.implied_mfu) + " "
         + doc(conventions.deepseek_v3_implied_mfu), "memlib.cost.conventions.implied_mfu, deepseek_v3_implied_mfu",
         f"DeepSeek-V3 pre-training: {conventions.deepseek_v3_implied_mfu():.1%}"),
        # --- issue 26: checkpointing a large run ---------------------------------------------------------------
        ("07", "Checkpoint size and interval", doc(checkpointing.checkpoint_size_bytes) + " "
         + doc(checkpointing.job_mtbf_s) + " " + doc(checkpointing.young_interval_s),
         "memlib.cost.checkpointing (checkpoint_size_bytes, checkpoint_write_s, job_mtbf_s, young_interval_s, "
         "checkpoint_waste, async_interval_s)",
         f"Llama-3.1-405B: {fmt_bytes(checkpointing.checkpoint_size_bytes('llama-3.1-405b'))}; written at 2 TB/s "
         f"on 16,384 GPUs failing every {checkpointing.job_mtbf_s(419, 54) / 3600:.1f} h: every "
         f"{checkpointing.young_interval_s(checkpointing.checkpoint_size_bytes('llama-3.1-405b') / 2e12, checkpointing.job_mtbf_s(419, 54)):.0f} s"),
        # --- issue 26: the mechanisms the chapters explain, each with its formula -----------------------------
        ("00", "Number formats: range and precision", doc(FloatFormat),
         "memlib.units.FloatFormat, FORMATS, float_format",
         "; ".join(f"{f.name}: max {f.max_value:.4g}, epsilon {f.eps:g}" for f in FORMATS.values())),
        ("03", "DataParallel vs DDP", doc(data_parallel.data_parallel_memory),
         "memlib.parallel.data_parallel.data_parallel_memory",
         (lambda d: f"Qwen2-0.5B, 40 x 2,048 tokens on 8 GPUs: DataParallel's GPU 0 {fmt_bytes(d.dp_device0_bytes)}, "
                    f"a DDP rank {fmt_bytes(d.ddp_rank_bytes)}")(data_parallel.data_parallel_memory(
             memlib.get_model("qwen2-0.5b").num_params, 40, 2048, memlib.get_model("qwen2-0.5b").vocab_size, 8))),
        ("04", "Speculative decoding", doc(techniques.speculative_expected_tokens) + " "
         + doc(techniques.speculative_speedup),
         "memlib.serving.techniques (speculative_expected_tokens, speculative_speedup)",
         f"alpha 0.8, gamma 4: {techniques.speculative_expected_tokens(0.8, 4):.2f} tokens per target step; with a "
         f"draft at a tenth of the target's step time, {techniques.speculative_speedup(0.8, 4, 0.1):.2f}x faster"),
        ("06", "Sliding-window attention", doc(conventions.mean_attended_keys),
         "memlib.cost.conventions (mean_attended_keys, windowed_attention_flops_per_token, attention_hbm_accesses)",
         f"Mistral 7B's window 4,096 at 32k: {conventions.mean_attended_keys(32768):,.0f} keys per query causal, "
         f"{conventions.mean_attended_keys(32768, 4096):,.0f} windowed"),
        ("05", "Expert load at decode", doc(moe.tokens_per_expert),
         "memlib.parallel.moe (tokens_per_expert, expert_ridge_tokens)",
         f"DeepSeek-V3 (top-8 of 256), 544 sequences: {moe.tokens_per_expert(544, 8, 256):.0f} tokens per expert; "
         f"an H200 needs {moe.expert_ridge_tokens('h200'):.0f} for an fp8 expert matmul to be compute-bound"),
        # --- 08 · RLHF memory: PPO's four models, the rollout engine, phases ------------------------------
        ("08", "RLHF roles: trained vs frozen", "PPO (Schulman et al. 2017; InstructGPT, Ouyang et al. 2022): actor "
         "and critic train (estimate_training: 16 B/param with bf16-mixed AdamW), reference and reward model only run "
         "forwards (estimate_inference's bf16 weights, 2 B/param, + one forward's activations), the rollout engine "
         "holds its own weight copy + KV cache of rollout_batch x G x (prompt + response) tokens. GRPO (Shao et al. "
         "2024): no critic, G samples per prompt. DPO (Rafailov et al. 2023): policy + reference, 2 sequences per pair.",
         "memlib.training.rlhf.estimate_rlhf (RLHFEstimate.roles)",
         "Llama-2-7B, one GPU, no sharding: " + ", ".join(
             f"{k} {fmt_bytes(r.resident_bytes)}" for k, r in rl_whole.roles.items())),
        ("08", "RLHF peak: phases, colocated or separate", doc(rlhf._phases) + " Separate groups: each group's own "
         "peak, GPUs summed.", "memlib.training.rlhf.estimate_rlhf(placement=, offload_idle=), min_rlhf_gpus",
         f"PPO on Llama-2-7B, 8 A100 80GB, 16 prompts per engine: {fmt_bytes(rl_awake.peak_bytes)} per GPU resident, "
         f"{fmt_bytes(rl_asleep.peak_bytes)} asleep (during {rl_asleep.peak_at}); fewest A100s "
         f"{rlhf.min_rlhf_gpus('llama-2-7b', 'a100-80gb', rollout_batch=16)} asleep, "
         f"{rlhf.min_rlhf_gpus('llama-2-7b', 'a100-80gb', rollout_batch=16, offload_idle=False)} resident"),
        # --- 10 · communication: alpha-beta costs, the roofline, pipeline bubbles (issue 38) -----------------------
        ("10", "Collectives: alpha-beta cost", doc(collectives.collective_seconds) + " " + doc(collectives.bus_bandwidth),
         "memlib.cost.collectives.collective_seconds, bytes_sent, half_bandwidth_bytes, bus_bandwidth",
         f"Llama-3-8B's bf16 gradients over 8 H100s (NVLink 4, 5 us): "
         f"{collectives.collective_seconds('all-reduce', 2 * m3.num_params, 8, 450e9, 5e-6) * 1e3:.1f} ms; n_1/2 "
         f"{collectives.half_bandwidth_bytes('all-reduce', 8, 450e9, 5e-6) / 1e6:.0f} MB"),
        ("10", "Communication roofline", doc(collectives.comm_roofline), "memlib.cost.collectives.comm_roofline",
         (lambda dp, tp: f"Llama-3-8B on H100s: DDP over 64 GPUs on 400 Gb/s hides above {dp.critical_tokens:,.0f} "
                         f"tokens per GPU per step; TP 8 across nodes costs {tp.comm_to_compute:.1f}x the compute")(
             collectives.comm_roofline(m3, "h100-80gb", "dp", 64, bytes_per_s=50e9),
             collectives.comm_roofline(m3, "h100-80gb", "tp", 8, bytes_per_s=50e9))),
        ("10", "Pipeline bubble", doc(pipeline.bubble_fraction) + " " + doc(pipeline.zb_h1_bubble_time),
         "memlib.parallel.pipeline.bubble_fraction, zb_h1_bubble_time, dualpipe_bubble_time; "
         "memlib.learn.mechanisms.pipeline_schedule (the timeline)",
         f"p = 4, m = 8: 1F1B {float(pipeline.bubble_fraction(4, 8)):.1%}, interleaved v = 2 "
         f"{float(pipeline.bubble_fraction(4, 8, 2)):.1%}; ZB-H1 with equal passes idles "
         f"{pipeline.zb_h1_bubble_time(4, 1, 1, 1):g} units per stage against 1F1B's {pipeline.bubble_time(4, 1, 2):g}"),
    ]


def render() -> str:
    titles = notebook_titles()
    table = rows()
    lines = ["# Cheat sheet: GPU memory for LLMs", "",
             "Generated by `python tools/make_cheatsheet.py` from memlib's formulas and a live call of each;",
             "do not edit by hand. Sizes: GB = $10^9$ bytes, GiB = $2^{30}$ bytes. The formulas are grouped by the",
             "notebook that teaches them (`notebooks/NN_*.ipynb`).", ""]
    for nb, title in titles.items():
        lines += [f"- Notebook {nb} · {title}"]
    lines.append("")
    unknown = sorted({nb for nb, *_ in table} - set(titles))
    if unknown:
        raise SystemExit(f"rows name notebooks that do not exist: {', '.join(unknown)}")
    for nb, title in titles.items():
        lines += [f"## Notebook {nb} · {title}", ""]
        for _, topic, formula, where, example in (r for r in table if r[0] == nb):
            math = ["$$", LATEX[topic], "$$", ""] if topic in LATEX else []
            lines += [f"### {topic}", "", *math, prose(formula), "", f"- where: `{where}`", f"- example: {example}", ""]
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
