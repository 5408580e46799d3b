"""Exercises for notebook 05: DeepSeek-V3's memory to serve and to fine-tune. Every expert resident,
the active share in FLOPs, MLA's latent cache (and that tensor parallelism replicates it), the serving
layout that holds the most chats, the states of full fine-tuning, what a decode step reads, the
all-to-all of expert parallelism, and what LoRA can and cannot save. Issue 20 (reason, not recall): the
numeric exercises change the model (Mixtral-8x22B, Qwen3-235B-A22B) or the precision (bf16 AdamW moments)
so the learner applies notebook 05's method to a figure its pages do not print."""

from __future__ import annotations

import math
import random

from memlib import cost
from memlib.learn.exercises._common import b, md_table
from memlib.learn.exercises.kinds import Choice, Figure, Implement, MultiChoice, Numeric, Option, SelfAssessed, Slip, \
    SpotError
from memlib.hardware.fit import usable_bytes
from memlib.hardware.gpus import get_gpu
from memlib.serving.inference import estimate_inference, kv_bytes_per_token
from memlib.models import get_model
from memlib.parallel.moe import expected_experts_touched, min_gpus_sharded, weight_bytes_read
from memlib.parallel.plan import plan_serving
from memlib.cost.timing import all_to_all_bytes
from memlib.training import estimate_training
from memlib.parallel.zero import zero_model_state_bytes

from memlib.serving.mtp import mtp_active_params
from memlib.serving.techniques import speculative_expected_tokens, speculative_speedup

NOTEBOOK = "05_moe_memory"
_MTP_ALPHA = 0.75    # 05.11: an acceptance below the report's 85-90% (a harder domain, e.g. code with rare names)


def _mtp_cost() -> float:
    """One MTP draft step over one main-model step: parameters read per token (memory-bound decode)."""
    return mtp_active_params(_V3) / get_model(_V3).num_active_params
_V3 = "deepseek-v3"
_MIX = "mixtral-8x22b"       # 05.1: a MoE the notebook does not print
_QWEN = "qwen3-235b-a22b"    # 05.4: the same
_CTX = 8192
_FT_SEQ = 4096


def _m():
    return get_model(_V3)


def _flops_ratio(name: str) -> float:
    """6N of a dense model of the same total over 6N of the active parameters (memlib.cost.training_flops)."""
    return cost.training_flops(get_model(name).num_params, 1) / cost.training_flops(name, 1)


def _weights(weights: str = "auto", model: str = _V3) -> int:
    """All of a model's weights, one copy (memlib.estimate_inference); DeepSeek-V3 by default."""
    return estimate_inference(model, batch=1, context_len=1, weights=weights).weight_bytes


def _serve():
    return plan_serving(_V3, "h200", 8, context_len=_CTX)


_LAYOUTS = {"a": dict(tp=8, ep=1), "b": dict(tp=8, ep=8), "c": dict(tp=1, ep=8), "d": dict(tp=4, ep=8)}


def _layout(key: str):
    want = _LAYOUTS[key]
    return next(p for p in _serve().feasible if p.settings["tp"] == want["tp"] and p.settings["ep"] == want["ep"])


def _most_chats() -> str:
    return max(_LAYOUTS, key=lambda k: _layout(k).sequences)


def _ft_layout(ep: int = 8, **kw):
    return estimate_training(_V3, seq_len=_FT_SEQ, zero_stage=3, dp=88, ep=ep, recompute="full", **kw)


def _dispatch_bytes(width: int = 2, top_k: bool = True, sent_share: bool = True) -> float:
    """One dispatch all-to-all of one MoE layer, bytes each GPU sends (memlib.cost.timing.all_to_all_bytes)."""
    e, m = _ft_layout(), _m()
    rows = e.counts["routed_rows"] if top_k else e.counts["routed_rows"] // m.num_experts_per_tok
    buffer = rows * m.hidden_size * width
    return all_to_all_bytes(buffer, 8) if sent_share else float(buffer)


# DeepSeek-V3's own optimizer layout (report, Sec. 3.3.3: "the master weights (stored by the optimizer) and gradients
# (used for batch size accumulation) are still retained in FP32", AdamW's moments in BF16): fp32 weights and fp32
# gradients (working_bytes 4 each) + bf16 m and v (k = 2 + 2) = 12 bytes per parameter.
_DS_WORKING, _DS_K = 4, 4


def _h200_bytes() -> int:
    """One H200 as torch reports it (memlib.hardware.fit.usable_bytes): the capacity chapter 05 uses."""
    return usable_bytes(get_gpu("h200"))


def _h200s_for_states(k: int = _DS_K, working_bytes: int = _DS_WORKING, params=None, capacity=None) -> int:
    """Whole H200s (torch's total each) that hold DeepSeek-V3's ZeRO-3 model states (memlib.parallel.zero)."""
    n = _m().num_params if params is None else params
    cap = _h200_bytes() if capacity is None else capacity
    return math.ceil(zero_model_state_bytes(n, 0, 1, k=k, working_bytes=working_bytes) / cap)


def _read_case(name: str, weights: str, tokens: int) -> dict:
    m = get_model(name)
    parts = estimate_inference(m, batch=1, context_len=1, weights=weights).weight_parts
    return dict(other_bytes=sum(parts.values()) - parts["experts"], expert_bytes=parts["experts"],
                num_experts=m.num_experts, top_k=m.num_experts_per_tok, tokens=tokens)


def _random_read_case(rng: random.Random) -> dict:
    e = rng.choice((8, 16, 32, 64, 128, 160, 256))
    return dict(other_bytes=rng.randrange(10**9, 5 * 10**10), expert_bytes=rng.randrange(10**10, 10**12),
                num_experts=e, top_k=rng.choice([k for k in (1, 2, 4, 6, 8) if k < e]), tokens=rng.randint(2, 2048))


def _read(k: dict) -> float:
    return weight_bytes_read(k["other_bytes"], k["expert_bytes"], k["num_experts"], k["top_k"], k["tokens"])


def _facts():
    """The truth of each statement of 05.8, computed."""
    m, h100 = _m(), get_gpu("h100-80gb")
    e1, e8 = _ft_layout(ep=1), _ft_layout(ep=8)
    return {
        "a": False,  # LoRA leaves the frozen base on the GPUs: nothing computes it away
        "b": math.ceil(_weights("bf16") / usable_bytes(h100)) > 8,
        "c": e8.model_state_bytes < 0.99 * e1.model_state_bytes,
        "d": expected_experts_touched(m.num_experts, m.num_experts_per_tok, 128) / m.num_experts > 0.9,
        "e": kv_bytes_per_token(m, tp=8) < kv_bytes_per_token(m),
    }


EXERCISES = [
    Numeric(
        id="05.1", title="Mixtral-8x22B's weights on the serving GPUs", difficulty="warm-up", minutes=3,
        formula="MoE weights: every expert resident, at the served format's bytes per parameter "
                "(memlib.estimate_inference)",
        prompt="Mixtral-8x22B (56 layers, hidden 6144, 8 experts of intermediate size 16384 in every layer, top-2 "
               "routing) is served from its bf16 checkpoint. How many GB do all of its weights take on the GPUs of "
               "a server that serves it? (`memlib.get_model('mixtral-8x22b')` has the parameter counts; notebook 05 "
               "does the same for DeepSeek-V3's fp8 release.)",
        expected=lambda: _weights("bf16", _MIX), unit="GB",
        slips=(Slip("active parameters only", lambda: 2.0 * get_model(_MIX).num_active_params,
                    "that is what a token uses (two of eight experts); a server keeps every expert resident, because "
                    "the router may pick any of them for the next token"),
               Slip("8 x 22B", lambda: 2.0 * 8 * 22e9,
                    "the name is not the count: the eight experts of a layer share its attention, and the model "
                    "shares one embedding and head, so it has far fewer than 8 x 22B parameters"),
               Slip("1 byte per weight", lambda: float(get_model(_MIX).num_params),
                    "that is an fp8 copy; the checkpoint is bf16, 2 bytes per weight")),
        hints=("Memory holds every parameter the router might need, not only the ones a token uses.",
               "weights = num_params x 2 bytes (bf16).",
               "Take num_params from memlib.get_model('mixtral-8x22b') and multiply by 2 bytes."),
        worked=lambda: (f"All {get_model(_MIX).num_params:,} parameters are resident, 2 bytes each in bf16: "
                        f"**{b(_weights('bf16', _MIX))}** (`memlib.estimate_inference(..., weights='bf16')"
                        f".weight_bytes`). Counted from the {get_model(_MIX).num_active_params:,} active parameters "
                        f"it would be {b(2 * get_model(_MIX).num_active_params)}, what a token uses, not what the "
                        f"server holds; read from the name, 8 x 22B, it would be {b(2 * 8 * 22e9)}. DeepSeek-V3's fp8 "
                        f"release, by the same method at about 1 byte per weight, is {b(_weights())}."),
    ),
    Numeric(
        id="05.2", title="MLA's KV cache per token", difficulty="warm-up", minutes=4,
        formula="KV cache per token: MLA caches the latent and the rope key, (kv_lora_rank + qk_rope_head_dim) x layers "
                "x bytes (memlib.serving.inference.kv_bytes_per_token)",
        prompt="DeepSeek-V3 (61 layers) caches, per token and layer, its compressed latent c_KV (kv_lora_rank = 512 "
               "numbers) and the decoupled rope key (qk_rope_head_dim = 64), in bf16, as vLLM and SGLang do. How many "
               "bytes does one token take in the cache, over all layers? (Answer in bytes or KB.)",
        expected=lambda: float(kv_bytes_per_token(_m())), unit="bytes", count=61, per="total",
        count_unit=("layer", "layers"),
        slips=(Slip("full K/V per head", lambda: float(kv_bytes_per_token(_m(), mla_cache="full")),
                    "that is the full keys and values of 128 heads, what transformers' eager cache keeps; MLA engines "
                    "cache the latent and the rope key only"),
               Slip("no rope key", lambda: 512.0 * 61 * 2,
                    "the decoupled rope key (64 numbers) is cached too: rope cannot be absorbed into the latent"),
               Slip("fp32", lambda: 2.0 * kv_bytes_per_token(_m()),
                    "the cache is bf16, 2 bytes per number")),
        hints=("One vector per token and layer, not one per head: that is what makes MLA's cache small.",
               "bytes per token = (kv_lora_rank + qk_rope_head_dim) x layers x 2 bytes.",
               "Add 512 and 64 first; then multiply by 61 layers and by 2 bytes."),
        worked=lambda: (f"(512 + 64) x 61 x 2 = **{kv_bytes_per_token(_m()):,} bytes** per token "
                        f"(`memlib.serving.inference.kv_bytes_per_token`), {b(kv_bytes_per_token(_m()) * _CTX)} for an 8k "
                        f"chat. Full K/V would be {kv_bytes_per_token(_m(), mla_cache='full'):,} bytes, "
                        f"{kv_bytes_per_token(_m(), mla_cache='full') / kv_bytes_per_token(_m()):.0f}x more."),
    ),
    Implement(
        id="05.3", title="Weight bytes one decode step reads", difficulty="stretch", minutes=12,
        formula="weights one decode step reads: non-expert bytes + expert bytes x E(1 - (1 - k/E)^T) / E "
                "(memlib.parallel.moe.weight_bytes_read)",
        prompt="Write `weight_bytes_read(other_bytes, expert_bytes, num_experts, top_k, tokens)`: the weight bytes one "
               "decode step reads from HBM when `tokens` tokens are in flight. Every non-expert byte (attention, "
               "shared and dense MLPs, router, embeddings) is read once; of the routed experts (`expert_bytes`, "
               "`num_experts` per layer, each token picks its `top_k`), only those the batch touches. Assume uniform, "
               "independent routing: a token's k experts are distinct, and it misses a given expert with probability "
               "1 - k/E. Tested against `memlib.parallel.moe.weight_bytes_read` on four MoE models and on inputs drawn at random "
               "each time you check.",
        function_name="weight_bytes_read", reference_name="memlib.parallel.moe.weight_bytes_read",
        cases=lambda: [_read_case(_V3, "auto", 32), _read_case("mixtral-8x7b", "bf16", 4),
                       _read_case("qwen3-235b-a22b", "bf16", 64), _read_case("gpt-oss-120b", "auto", 16),
                       _read_case(_V3, "auto", 256)],
        held_out=lambda rng: [_random_read_case(rng) for _ in range(3)],
        reference=_read,
        slips=(Slip("all experts always", lambda k, w: float(k["other_bytes"] + k["expert_bytes"]),
                    "a small batch does not touch every expert: at batch 1 only top_k of num_experts are read"),
               Slip("active share at any batch",
                    lambda k, w: k["other_bytes"] + k["expert_bytes"] * k["top_k"] / k["num_experts"],
                    "that is batch 1; more tokens touch more distinct experts, E(1 - (1 - k/E)^T) of them"),
               Slip("tokens never share experts",
                    lambda k, w: k["other_bytes"] + k["expert_bytes"] * min(1.0, k["tokens"] * k["top_k"]
                                                                            / k["num_experts"]),
                    "tokens share experts: the second token repeats some of the first's, so T tokens touch fewer "
                    "than T x k distinct experts")),
        hints=("Bytes read scale with the distinct experts the batch touches, not with tokens x top_k.",
               "touched = E x (1 - (1 - k/E)^T); read = other + expert_bytes x touched / E.",
               "Write the probability that one expert is missed by all T tokens first: (1 - k/E)**T."),
        worked=lambda: ("```python\ndef weight_bytes_read(other_bytes, expert_bytes, num_experts, top_k, tokens):\n"
                        "    missed = (1 - top_k / num_experts) ** tokens   # one expert, no token picks it\n"
                        "    touched = num_experts * (1 - missed)\n"
                        "    return other_bytes + expert_bytes * touched / num_experts\n```\n\n"
                        f"DeepSeek-V3 in fp8: {b(_read(_read_case(_V3, 'auto', 1)))} at batch 1, "
                        f"{b(_read(_read_case(_V3, 'auto', 32)))} at 32 and {b(_read(_read_case(_V3, 'auto', 256)))} "
                        f"at 256, against {b(_weights())} in all: at serving batches nearly every expert is read."),
    ),
    Numeric(
        id="05.4", title="How many times fewer FLOPs?", difficulty="interview", minutes=5,
        formula="6N training FLOPs, N the active parameters (memlib.cost.training_flops)",
        prompt="Training costs about 6 FLOPs per parameter a token passes through (forward 2, backward 4). How many "
               "times fewer FLOPs per token does Qwen3-235B-A22B (94 layers, 128 routed experts per layer of which "
               "a token uses 8, no shared expert) need than a dense model with the same total parameter count? "
               "Leave the attention term out. (Answer like `\"12x\"`; `memlib.get_model('qwen3-235b-a22b')` has the "
               "counts.)",
        expected=lambda: _flops_ratio(_QWEN), unit="x",
        slips=(Slip("experts ratio", lambda: 128 / 8,
                    "128 / 8 counts the routed experts only; attention, the embeddings, the head and the routers are "
                    "used by every token"),
               Slip("DeepSeek-V3's ratio", lambda: _flops_ratio(_V3),
                    "that is DeepSeek-V3's ratio (notebook 05); this question is Qwen3-235B-A22B's, with its own "
                    "total and active counts")),
        hints=("FLOPs follow the parameters a token passes through: the active ones.",
               "ratio = 6 x num_params / (6 x num_active_params) = num_params / num_active_params.",
               "Read both counts from memlib.get_model('qwen3-235b-a22b')."),
        worked=lambda: (f"{get_model(_QWEN).num_params:,} / {get_model(_QWEN).num_active_params:,} = "
                        f"**{_flops_ratio(_QWEN):.1f}x** (`memlib.cost.training_flops`: "
                        f"{cost.training_flops(_QWEN, 1) / 1e9:,.0f} GFLOP per token against "
                        f"{cost.training_flops(get_model(_QWEN).num_params, 1) / 1e12:.2f} TFLOP). Not 128/8 = 16: a "
                        f"token passes through attention, the embeddings and the head too. DeepSeek-V3, by the same "
                        f"method, is {_flops_ratio(_V3):.1f}x. Memory does not shrink at all."),
    ),
    SpotError(
        id="05.5", title="\"Tensor parallelism splits the latent cache\"", difficulty="interview", minutes=8,
        formula="MLA's latent cache is replicated over tensor parallelism (memlib.parallel.plan.plan_serving)",
        prompt="An answer to \"how many 8k-token chats does DeepSeek-V3 serve on 8 x H200 with tensor parallelism "
               "over 8?\" Find the error and give the right number of chats (count the per-GPU room the answer "
               "gives as right).",
        quote="MLA 每 token 只缓存一个 latent 向量；TP=8 时 KV cache 也按 8 卡切分，每卡每 token 只需 8.8 KB。权重每卡"
              "约 85 GB，每卡还剩约 55 GB 给 KV cache，所以能同时服务 55 GB / (8.8 KB × 8192) ≈ 760 个 8k 请求。",
        source="a composite of circulating answers (SGLang's docs warn: \"If you do not use DP attention, KV cache will "
               "be duplicated among all TP ranks\")",
        figures=(Figure("8.8 KB", "error", "the latent is one vector per token, not per head: every tensor-parallel "
                                           "GPU keeps all of it (05.2's figure), not an eighth"),
                 Figure("85 GB", "right", "fp8 weights over 8 GPUs: right"),
                 Figure("55 GB", "right", "what is left per GPU after weights, prefill workspace and headroom: about "
                                          "right"),
                 Figure("760", "inherits", "it divides by the split cache: 8x too many")),
        expected=lambda: float(_layout("a").sequences), unit="count",
        slips=(Slip("latent split over tp", lambda: 8.0 * _layout("a").sequences,
                    "that splits the latent 8 ways; under tensor parallelism every GPU caches all of it"),),
        hints=("Ask what tensor parallelism splits: heads. How many heads does the latent have?",
               "chats = free bytes per GPU / (bytes per token per GPU x 8192), with the whole latent on every GPU.",
               "Redo the division with the whole latent per token (your answer to 05.2) instead of 8.8 KB."),
        worked=lambda: (f"The error is **8.8 KB**: MLA's cache has no head dimension, so tensor parallelism replicates "
                        f"it; **760** inherits it. 55 GB / (70,272 B x 8,192) ≈ 96; memlib "
                        f"(`memlib.parallel.plan.plan_serving`) finds **{_layout('a').sequences}** for tensor parallel 8, and "
                        f"{_layout('c').sequences} with data-parallel attention and expert parallelism, where each GPU "
                        "caches only its own chats."),
    ),
    Choice(
        id="05.6", title="Most 8k chats on 8 x H200", difficulty="interview", minutes=8,
        formula="serving layouts of a MoE: tensor vs expert parallelism and data-parallel attention "
                "(memlib.parallel.plan.plan_serving)",
        prompt="DeepSeek-V3 in fp8 on one server of 8 H200s, 8,192-token chats, vLLM-style 8k prefill chunks. Which "
               "layout holds the most concurrent chats, and why?",
        options=(Option("a", "tensor parallel 8", lambda: (f"each GPU holds the fewest weights ({b(_layout('a').weight_bytes)}), "
                                                           "but every GPU caches every chat (05.5 counts them)"),
                        misconception="splitting the matrices over more GPUs splits the KV cache as well"),
                 Option("b", "tensor parallel 8 with expert parallel 8", lambda: (
                        "whole experts per GPU instead of slices changes little: the latent is still replicated on "
                        "every GPU"),
                        misconception="expert parallelism alone frees the memory the cache needs"),
                 Option("c", "expert parallel 8 with data-parallel attention (each GPU its own attention and chats)",
                        lambda: f"each GPU caches only its own chats: {_layout('c').sequences} in all", "2"),
                 Option("d", "tensor parallel 4 x 2 attention groups, expert parallel 8", lambda: (
                        f"two copies of the cache instead of eight: better, {_layout('d').sequences} chats, not the most"),
                        misconception="a middle ground between the two always wins")),
        reasons=(Option("1", "it holds the fewest weights per GPU, which leaves the most room for the cache",
                        "weights per GPU are lowest under tensor parallelism, but the cache is replicated there"),
                 Option("2", "the latent cache has no heads to split: only data-parallel attention stops it being "
                             "replicated, and whole experts split over 8 GPUs keep the weights per GPU close"),
                 Option("3", "expert parallelism splits the KV cache across the experts",
                        "the KV cache belongs to attention; experts hold no cache")),
        right=_most_chats,
        hints=("Two things fill an H200 here: weights and the latent cache. Which layout replicates which?",
               "chats = (GPU memory - weights per GPU - workspace) / (05.2's bytes per token x 8192) per attention group, x the "
               "number of attention groups.",
               "Work out the weights per GPU under data-parallel attention: all attention and dense weights plus 1/8 "
               "of the experts."),
        worked=lambda: ("Per layout (`memlib.parallel.plan.plan_serving('deepseek-v3', 'h200', 8, context_len=8192)`):\n\n"
                        + md_table(("option", "weights per GPU", "KV cache per GPU", "chats"),
                                   [(f"({k})", b(_layout(k).weight_bytes), b(_layout(k).kv_cache_bytes),
                                     _layout(k).sequences) for k in _LAYOUTS])
                        + f"\n\n**({_most_chats()})** wins: each GPU keeps more weights than under tensor parallelism "
                          "but caches only its own chats' latents. That is SGLang's `--enable-dp-attention` and vLLM's "
                          "`--data-parallel-size 8 --enable-expert-parallel`."),
    ),
    Numeric(
        id="05.7", title="H200s for the model states alone, DeepSeek's way", difficulty="interview", minutes=6,
        formula="model states of DeepSeek-V3's AdamW: fp32 weights 4 + fp32 gradients 4 + bf16 m 2 + bf16 v 2 = 12 "
                "bytes/param of every expert (memlib.parallel.zero.zero_model_state_bytes(..., k=4, working_bytes=4))",
        prompt="DeepSeek-V3 was trained keeping its master weights and its gradients (accumulated over micro-batches) "
               "in fp32 and AdamW's moments m and v in bf16 (its report, Sec. 3.3.3). Fine-tune all of it with that "
               "layout under ZeRO-3, keeping no other copy of the weights. How many H200s would it take just to hold "
               f"the model states? Count each H200 at what torch reports, {_h200_bytes() / 1e9:.1f} GB "
               f"({_h200_bytes() / 2**30:.1f} GiB), ignore activations and everything else, and give a whole number "
               "of GPUs.",
        expected=lambda: float(_h200s_for_states()), unit="count", tolerance=0.0,
        slips=(Slip("fp32 moments", lambda: float(_h200s_for_states(k=8)),
                    "that is 16 bytes per parameter, with fp32 m and v; here they are bf16, 2 bytes each"),
               Slip("active parameters only", lambda: float(_h200s_for_states(params=_m().num_active_params)),
                    "every expert is trained and keeps its gradients and optimizer states: count all parameters"),
               Slip("16-bit weights and gradients", lambda: float(_h200s_for_states(working_bytes=2)),
                    "DeepSeek keeps the fp32 master weights and fp32 gradients: 4 + 4 bytes, then 2 + 2 for m and v"),
               Slip("the datasheet's 141 GB", lambda: float(_h200s_for_states(capacity=141e9)),
                    "you divided by 141 × 10⁹ bytes; torch reports more than that for an H200: use its figure"),
               Slip("rounded down", lambda: float(_h200s_for_states() - 1), "round up: the states would not fit")),
        close_advice="use all parameters, 12 bytes each, torch's total per H200, and round up",
        hints=("Every parameter, expert or not, has a weight, a gradient and optimizer states during full fine-tuning; "
               "list their bytes one by one in DeepSeek's formats.",
               "GPUs = ceil((4 + 4 + 2 + 2) bytes x num_params / one H200's bytes).",
               "Compute 12 x num_params in TB first, then divide by one H200's bytes."),
        worked=lambda: (f"fp32 weights 4 + fp32 gradients 4 + bf16 m 2 + bf16 v 2 = 12 bytes x {_m().num_params:,} = "
                        f"{b(zero_model_state_bytes(_m().num_params, 0, 1, k=_DS_K, working_bytes=_DS_WORKING))}; / "
                        f"{_h200_bytes() / 1e9:.1f} GB = "
                        f"{zero_model_state_bytes(_m().num_params, 0, 1, k=_DS_K, working_bytes=_DS_WORKING) / _h200_bytes():.1f}, "
                        f"rounded up **{_h200s_for_states()} H200s** (`memlib.parallel.zero.zero_model_state_bytes"
                        f"(..., k=4, working_bytes=4)`). A bf16 working copy of the weights would add 2 bytes per "
                        f"parameter; fp32 moments (16 bytes per parameter) would need {_h200s_for_states(k=8)}. A real "
                        f"run needs more: `memlib.parallel.moe.min_gpus_sharded` finds "
                        f"{min_gpus_sharded(_V3, 'h200', seq_len=_FT_SEQ).count} at 16 bytes per parameter (whole "
                        "nodes, ZeRO-3 with expert parallelism, full recompute, the gathered layer, CUDA context and "
                        "headroom)."),
    ),
    MultiChoice(
        id="05.8", title="LoRA, expert parallelism, decode, MLA: what is true?", difficulty="stretch", minutes=10,
        formula="what LoRA, ep, a decode batch and tp change in a MoE's memory (memlib.parallel.moe, memlib.estimate_training, "
                "memlib.serving.inference)",
        prompt="DeepSeek-V3. Which statements are true? (ZeRO-3 layouts over 88 H200s, 4k-token sequences, full "
               "recompute; uniform routing; bf16 latent cache.)",
        options=(Option("a", "LoRA trains only small adapters, so the 671B frozen base need not be on the GPUs",
                        "the frozen base is read in every forward and backward: it stays resident (1.3 TB in bf16)",
                        misconception="LoRA makes a big model small"),
                 Option("b", "in bf16, the frozen base alone needs more than 8 H100 80GB GPUs",
                        lambda: f"it needs {math.ceil(_weights('bf16') / usable_bytes(get_gpu('h100-80gb')))}",
                        misconception="an 8-GPU node holds any model that one node can serve"),
                 Option("c", "adding expert parallelism 8 to ZeRO-3 lowers each GPU's share of parameters, gradients and "
                             "optimizer states",
                        lambda: (f"ZeRO-3 already divides them over all 88 GPUs: {b(_ft_layout(ep=1).model_state_bytes)} "
                                 f"per GPU either way; ep shrinks the layer each GPU gathers"),
                        misconception="expert parallelism shards the optimizer states further"),
                 Option("d", "with 128 sequences decoding, one step reads more than 90% of the routed experts' weights",
                        lambda: (f"128 tokens touch {expected_experts_touched(256, 8, 128):.0f} of 256 experts per "
                                 "layer"),
                        misconception="a MoE decode step reads only the active parameters"),
                 Option("e", "under tensor parallelism over 8 GPUs each GPU caches an eighth of the MLA latent",
                        "the latent is one vector per token: every tensor-parallel GPU caches all of it",
                        misconception="tensor parallelism divides the KV cache by the number of GPUs")),
        right=lambda: frozenset(k for k, v in _facts().items() if v),
        hints=("For each statement ask: does the thing it names hold bytes per parameter, per GPU, or per token?",
               "LoRA: base weights stay; ZeRO-3: states / dp whatever ep; touched experts: E(1 - (1 - k/E)^T); MLA: "
               "(512 + 64) x 61 x 2 bytes per token on every GPU.",
               "Work out the bf16 weights in GB first and divide by an H100's 85 GB."),
        worked=lambda: ("True: " + ", ".join(f"({k})" for k, v in _facts().items() if v) + ". "
                        f"(a) the base is {b(_weights('bf16'))} in bf16 and is used every step; "
                        f"(b) {math.ceil(_weights('bf16') / usable_bytes(get_gpu('h100-80gb')))} H100s for the weights "
                        f"alone; (c) states per GPU {b(_ft_layout(ep=1).model_state_bytes)} with ep 1 and "
                        f"{b(_ft_layout(ep=8).model_state_bytes)} with ep 8; (d) "
                        f"{expected_experts_touched(256, 8, 128) / 256:.1%} of the experts; (e) "
                        f"{kv_bytes_per_token(_m(), tp=8):,} bytes per token per GPU at tensor parallel 8, the same as "
                        "on one GPU."),
    ),
    Numeric(
        id="05.9", title="One dispatch all-to-all", difficulty="stretch", minutes=10,
        formula="expert-parallel all-to-all: tokens x top-k x hidden x bytes x (ep-1)/ep per dispatch "
                "(memlib.cost.timing.all_to_all_bytes)",
        prompt="Fine-tuning DeepSeek-V3 with expert parallelism 8: each GPU has one 4,096-token sequence, the router "
               "sends every token to its top-8 experts (no token dropped), and the hidden states (7168 numbers) travel "
               "in bf16. How many bytes does ONE dispatch all-to-all of ONE MoE layer send out of each GPU? Count one row "
               "per (token, expert) pair, as Megatron-LM's all-to-all dispatcher sends them (DeepEP sends a token once "
               "per destination GPU, fewer bytes: a different convention). The rows addressed to experts on the same "
               "GPU stay; assume they are an equal 1/8 share.",
        expected=lambda: _dispatch_bytes(), unit="GB",
        slips=(Slip("one copy per token", lambda: _dispatch_bytes(top_k=False),
                    "each token goes to 8 experts: its hidden state is sent once per expert (tokens x top-k rows)"),
               Slip("counted the local share", lambda: _dispatch_bytes(sent_share=False),
                    "the 1/8 of rows whose experts live on the same GPU are not sent: (ep - 1) / ep of the buffer"),
               Slip("fp32", lambda: _dispatch_bytes(width=4), "the hidden states travel in bf16, 2 bytes")),
        hints=("An all-to-all sends each row to the GPU that holds its expert; a token with 8 experts is 8 rows.",
               "bytes = tokens x top_k x hidden x 2 bytes x (ep - 1) / ep.",
               "Count the rows first: 4,096 tokens x 8."),
        worked=lambda: (f"{_ft_layout().counts['routed_rows']:,} rows x 7168 x 2 bytes x 7/8 = "
                        f"**{b(_dispatch_bytes())}** per GPU (`memlib.cost.timing.all_to_all_bytes`). Per optimizer step "
                        f"that repeats for the combine, the two backward transposes and, under full recompute, the "
                        f"forward again, in each of {_m().num_moe_layers} MoE layers: "
                        f"{b(6 * _m().num_moe_layers * _dispatch_bytes())} (`memlib.step_time(...).ep_comm_bytes`)."),
    ),
    SelfAssessed(
        id="05.10", title="Fine-tune and serve your own DeepSeek-V3", difficulty="stretch", minutes=15,
        formula="a plan: serving layout and memory, fine-tuning memory, GPUs and time (memlib.parallel.plan.plan_serving, "
                "memlib.parallel.moe.min_gpus_sharded, memlib.cost)",
        prompt="Your company wants its own DeepSeek-V3: fine-tune it on 1B tokens of domain data, then serve about 500 "
               "concurrent users with 8k-token contexts. Propose the hardware and software for both, with the memory "
               "figures behind them, and say what you would not do. Then mark your answer against the rubric.",
        rubric=("Serving: the fp8 weights as released (~670 GB), one 8 x H200 node (or two 8 x H100 nodes) with "
                "SGLang or vLLM; not upcast to bf16",
                "Data-parallel attention with expert parallelism for ~500 chats of 8k: tensor parallelism alone holds "
                "~100, because the MLA latent (~70 KB/token) is replicated on every tensor-parallel GPU",
                "Full fine-tuning keeps 16 bytes per parameter of all 671B (~10.7 TB): about 96 H200s or 176 H100s "
                "(whole nodes) with ZeRO-3 + expert parallelism + full recompute (or Megatron-style PP + EP)",
                "Time from 6 x the active 37B parameters per token at a stated MFU, in GPU-hours (~160 at 40% MFU; "
                "~210 counting attention at 4k tokens), "
                "and which figure it is: a layout whose communication is exposed achieves a much lower MFU",
                "LoRA saves the gradients and optimizer states but still holds the 1.3 TB bf16 base over 2-3 nodes; "
                "the common PEFT recipe does not adapt stacked experts out of the box",
                "Never size anything from the 37B active parameters"),
        hints=("Treat serving and fine-tuning separately: one is weights + cache, the other is 16 bytes per parameter.",
               "Serving: weights per GPU + latent bytes/token x 8192 x chats; fine-tuning: 16 x 671e9 / GPUs + "
               "activations; time: 6 x 37e9 x tokens / (peak x MFU) GPU-seconds.",
               "Start with memlib.parallel.plan.plan_serving('deepseek-v3', 'h200', 8, context_len=8192)."),
        worked=lambda: (lambda serve, ft, run: (
            f"**Serve** the fp8 checkpoint on one 8 x H200 node with SGLang (`--enable-dp-attention`) or vLLM "
            f"(data parallel 8 + expert parallel): {b(serve.best.weight_bytes)} of weights per GPU and room for "
            f"{serve.best.sequences} chats of 8k (`memlib.parallel.plan.plan_serving`), against "
            f"{next(p for p in serve.feasible if p.settings['tp'] == 8 and p.settings['ep'] == 1).sequences} with tensor "
            f"parallelism alone. **Fine-tune**: 16 bytes per parameter, "
            f"{b(zero_model_state_bytes(_m().num_params, 0, 1))}; the fewest whole nodes are {ft.count} H200s (ZeRO-3, "
            f"expert parallel {ft.ep}, full recompute, 4k sequences, `memlib.parallel.moe.min_gpus_sharded`). **Time**: "
            f"1B tokens at 6 x the active parameters are {cost.training_flops(_m(), 1e9) / 1e20:.1f} × 10²⁰ FLOPs; at 40% MFU of an "
            f"H200's dense bf16 peak that is **{cost.gpu_hours(cost.training_flops(_m(), 1e9), 'h200', mfu=0.4):,.0f} "
            f"GPU-hours** (`memlib.cost.gpu_hours(memlib.cost.training_flops(...))`), or "
            f"{cost.gpu_hours(cost.training_flops(_m(), 1e9, seq_len=_FT_SEQ), 'h200', mfu=0.4):,.0f} counting "
            f"attention at 4k-token sequences, as MFU does (`training_flops(..., seq_len=4096)`). memlib's step model of this "
            f"layout is slower: expert parallelism's all-to-all alone leaves {ft.time.ep_comm_s:.1f} s of "
            f"each {ft.time.step_s:.1f} s step exposed, so it runs {ft.time.tokens_per_s_per_gpu:.0f} tokens/s per GPU, "
            f"an achieved MFU of {cost.mfu_from_throughput(_m(), _FT_SEQ, ft.time.tokens_per_s_per_gpu, 'h200'):.0%} "
            f"(`memlib.cost.mfu_from_throughput`), and {run.gpu_hours:,.0f} GPU-hours, {run.days * 24:.0f} hours on "
            f"{ft.count} GPUs (`memlib.cost.training_run_from_step`). Say which figure you quote. LoRA would keep the "
            f"{b(_weights('bf16'))} bf16 base resident (at least "
            f"{math.ceil(_weights('bf16') / usable_bytes(get_gpu('h100-80gb')))} H100s before activations) and needs a "
            "framework that adapts stacked experts; memlib does not estimate it. Do not upcast the served model to "
            "bf16, and do not size anything from the 37B active parameters."))(
            _serve(), min_gpus_sharded(_V3, "h200", seq_len=_FT_SEQ),
            cost.training_run_from_step(min_gpus_sharded(_V3, "h200", seq_len=_FT_SEQ).time, 1e9, "h200")),
    ),
    Numeric(
        id="05.11", title="MTP as a free draft: the speed-up", difficulty="interview", minutes=6,
        formula="speculative decoding with one draft token: (1 + α) tokens per main step, at a cost of 1 + c steps, "
                "c = draft bytes / main bytes (memlib.serving.techniques.speculative_speedup; Leviathan et al. 2023)",
        prompt=(f"DeepSeek-V3 serves with its MTP module as the draft: one drafted token per step, which the main "
                f"model verifies in its next forward. On your traffic the draft is accepted **{_MTP_ALPHA:.0%}** of the "
                f"time. Decode is memory-bound, so a forward costs in proportion to the parameters it reads per "
                f"token: the main model {get_model(_V3).num_active_params / 1e9:.1f} billion, the MTP draft "
                f"{mtp_active_params(_V3) / 1e9:.2f} billion (its block's active part, the projection and the output "
                "head). What speed-up in tokens per second over plain decoding is the roofline bound? "
                "(Answer like `\"1.3x\"`.)"),
        expected=lambda: speculative_speedup(_MTP_ALPHA, 1, _mtp_cost()), unit="x", tolerance=0.01,
        slips=(Slip("draft cost left out", lambda: speculative_expected_tokens(_MTP_ALPHA, 1),
                    "1 + α counts the tokens per main step; the draft's forward is not free: divide by 1 + c"),
               Slip("every draft accepted", lambda: 2 / (1 + _mtp_cost()),
                    "a rejected draft still costs its forward; the main step then yields only its own token"),
               Slip("two draft tokens", lambda: speculative_speedup(_MTP_ALPHA, 2, _mtp_cost()),
                    "DeepSeek-V3 has one MTP module (depth 1): one drafted token per step")),
        hints=("Count tokens per main step, and what one step now costs.",
               "speed-up = (1 + α) / (1 + c), c = draft parameters / main active parameters.",
               "Compute c first: the draft reads a small fraction of what the main model reads."),
        worked=lambda: (f"c = {mtp_active_params(_V3) / 1e9:.2f} / {get_model(_V3).num_active_params / 1e9:.1f} = "
                        f"{_mtp_cost():.3f}; (1 + {_MTP_ALPHA}) / (1 + {_mtp_cost():.3f}) = "
                        f"**{speculative_speedup(_MTP_ALPHA, 1, _mtp_cost()):.2f}x** "
                        "(`memlib.serving.techniques.speculative_speedup`). At the report's 85-90% it is "
                        f"{speculative_speedup(0.85, 1, _mtp_cost()):.2f}-{speculative_speedup(0.90, 1, _mtp_cost()):.2f}x, "
                        "against 1.8x measured (Sec. 5.4.3). An upper bound: at large batches decode turns "
                        "compute-bound and verifying two tokens per sequence is no longer free."),
    ),
]
