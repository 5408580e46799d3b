"""The graded exercises: each defined once, here, as a plain dataclass (graded by memlib.grading).

Every expected value, right option and worked answer is a callable that asks memlib when it
is called, never a stored figure: if a formula in memlib changes, the exercises follow. The
only literals are the setups (model, GPU count, precision) and the quotes from the seeds'
circulating answers (the spot-the-error paragraphs), which are wrong on purpose.

Kinds: Numeric (a derived figure with a unit and tolerance), SpotError (name the wrong figure
in a quoted paragraph and give the right value), Choice (pick a strategy and a reason),
Implement (write a small function, tested against memlib on several inputs), Design (an
open question with key points and a model answer). Ids are "NN.k", NN the topic notebook.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Callable, ClassVar

from memlib import zero
from memlib.fit import fits
from memlib.gpus import get_gpu
from memlib.inference import KV_ELEMENT_BYTES, estimate_inference, kv_bytes_per_token
from memlib.lora import lora_params
from memlib.models import Model, get_model
from memlib.optimizers import adamw_8bit_state_bytes
from memlib.activations import korthikanti_layer_bytes
from memlib.timing import step_time
from memlib.training import estimate_training
from memlib.units import fmt_bytes, gb, gib

DIFFICULTIES = ("warm-up", "interview", "stretch")
NOTEBOOKS = {"00": "00_memory_anatomy", "01": "01_65b_on_4x_v100", "02": "02_single_gpu_limits",
             "03": "03_when_the_model_does_not_fit"}


# --- the types -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Slip:
    """A common mistake and what it gives: value() (numeric) or value(kwargs, expected) (implement)."""

    name: str
    value: Callable
    message: str


@dataclass(frozen=True)
class Option:
    key: str
    text: str
    why: str = ""  # feedback when chosen
    reason: str = ""  # for the right option: the key of the reason that justifies it


@dataclass(frozen=True)
class Figure:
    """One figure of a quoted paragraph, as written, and whether it is the error."""

    text: str
    wrong: bool
    note: str


@dataclass(frozen=True)
class KeyPoint:
    label: str
    pattern: str  # a regular expression searched in the learner's text (case-insensitive)


@dataclass(frozen=True, kw_only=True)
class Exercise:
    id: str
    title: str
    difficulty: str
    minutes: int
    prompt: str
    worked: Callable[[], str]
    hints: tuple[str, ...] = ()
    kind: ClassVar[str] = ""
    kind_label: ClassVar[str] = ""

    def __post_init__(self):
        if self.difficulty not in DIFFICULTIES:
            raise ValueError(f"{self.id}: difficulty must be one of {DIFFICULTIES}")

    @property
    def notebook(self) -> str:
        return self.id.split(".")[0]

    def render_prompt(self) -> str:
        return self.prompt


@dataclass(frozen=True, kw_only=True)
class Numeric(Exercise):
    expected: Callable[[], float]
    unit: str = "bytes"  # "bytes" | "GB" | "GiB" (plain numbers read in that unit) | "params" | "count" | "x" | "bytes/param"
    tolerance: float = 0.02
    slips: tuple[Slip, ...] = ()
    count: int = 1  # the answer is per one of `count` (GPUs, layers): detects per-one vs total
    count_label: str = "GPUs"
    kind: ClassVar[str] = "numeric"
    kind_label: ClassVar[str] = "numeric derivation"


@dataclass(frozen=True, kw_only=True)
class SpotError(Numeric):
    quote: str
    source: str
    figures: tuple[Figure, ...]
    # The seeds round to nominal sizes (7B is 3.9% above LLaMA-7B's count); finding the error is the
    # point. Still below the 7.4% between GB and GiB, so a unit slip stays detectable.
    tolerance: float = 0.04
    kind: ClassVar[str] = "spot-error"
    kind_label: ClassVar[str] = "spot the error"

    def render_prompt(self) -> str:
        return f"{self.prompt}\n\n> {self.quote}\n>\n> — {self.source}"


@dataclass(frozen=True, kw_only=True)
class Choice(Exercise):
    options: tuple[Option, ...]
    right: Callable[[], str]  # the right option's key, computed (memlib decides what fits)
    reasons: tuple[Option, ...] = ()
    kind: ClassVar[str] = "choice"
    kind_label: ClassVar[str] = "choose the strategy"

    def render_prompt(self) -> str:
        text = self.prompt + "\n\n" + "\n".join(f"- **({o.key})** {o.text}" for o in self.options)
        if self.reasons:
            text += "\n\nBecause:\n\n" + "\n".join(f"{r.key}. {r.text}" for r in self.reasons)
        return text


@dataclass(frozen=True, kw_only=True)
class Implement(Exercise):
    function_name: str
    cases: Callable[[], list[tuple[dict, float]]]  # (keyword arguments, memlib's value), computed
    reference_name: str
    tolerance: float = 1e-6
    slips: tuple[Slip, ...] = ()  # value(kwargs, expected) -> what a slipped implementation returns
    kind: ClassVar[str] = "implement"
    kind_label: ClassVar[str] = "implement a formula"


@dataclass(frozen=True, kw_only=True)
class Design(Exercise):
    key_points: tuple[KeyPoint, ...]
    need: int = 3
    kind: ClassVar[str] = "design"
    kind_label: ClassVar[str] = "open design question"


# --- small helpers (each a call into memlib) -----------------------------------------------------
def _n(model: str) -> int:
    return get_model(model).num_params


def _states(model: str, stage: int = 0, dp: int = 1, **kw) -> int:
    """Per-GPU model states in the ZeRO paper's accounting (memlib.zero, K = 12)."""
    return zero.zero_model_state_bytes(_n(model), stage, dp, **kw)


def _b(nbytes: float) -> str:
    return fmt_bytes(nbytes)


def _only_fitting(candidates: dict[str, Callable], gpu: str) -> str:
    """The one option key whose estimate fits `gpu` (memlib.fits); the registry promises exactly one."""
    keys = [k for k, make in candidates.items() if fits(make(), gpu).fits]
    if len(keys) != 1:
        raise RuntimeError(f"expected exactly one layout to fit {gpu}, memlib says {keys}: update the exercise")
    return keys[0]


def _llama_like(k: dict, gqa: bool = True) -> Model:
    """A LLaMA-shaped memlib.Model from an implement exercise's keyword arguments (head_dim 128)."""
    kv_heads = (k["kv_dim"] // 128 if "kv_dim" in k else k.get("kv_heads", 0)) if gqa else 0
    return Model("exercise", hidden_size=k["hidden"], num_layers=k["layers"], num_heads=k.get("heads", k["hidden"] // 128),
                 intermediate_size=k["intermediate"], vocab_size=k.get("vocab", 32000), num_kv_heads=kv_heads)


def _md_rows(rows: list[tuple[str, str]]) -> str:
    return "\n".join(f"| {a} | {b} |" for a, b in [("layout", "per-GPU peak / verdict"), ("---", "---")] + rows)


# --- 00 memory anatomy -------------------------------------------------------------------------
def _kor(recompute="none", model="llama-7b", s=2048, b=1):
    m = get_model(model)
    return korthikanti_layer_bytes(s, b, m.hidden_size, m.num_heads, recompute=recompute)


def _peak_7b_recompute():
    return estimate_training("llama-7b", seq_len=2048, micro_batch=1, precision="bf16-mixed", recompute="full")


def _8bit_states(model: str) -> int:
    return sum(adamw_8bit_state_bytes(t.numel) * t.count for t in get_model(model).tensors())


_PHASE_REASON = {"forward": "1", "backward": "2", "optimizer": "3"}

EX_00 = [
    Numeric(
        id="00.1", title="Weights of LLaMA-7B in bf16", difficulty="warm-up", minutes=3,
        prompt="How much memory do the weights of LLaMA-7B take in bf16? Use the exact parameter count "
               "(`memlib.get_model('llama-7b').num_params`). Answer in GB or GiB, e.g. `\"12.3 GB\"`.",
        expected=lambda: _n("llama-7b") * 2, unit="GB",
        slips=(Slip("fp32 bytes", lambda: _n("llama-7b") * 4, "you used 4 bytes per parameter (fp32); bf16 is 2"),
               Slip("nominal size", lambda: 7e9 * 2, "you used the nominal 7B; LLaMA-7B has fewer parameters "
                                                     "(count them with memlib)")),
        hints=("bf16 stores each parameter in 2 bytes.", "Bytes = num_params x 2; divide by 1e9 for GB or 2**30 for GiB."),
        worked=lambda: (f"LLaMA-7B has {_n('llama-7b'):,} parameters (`memlib.get_model('llama-7b').num_params`); "
                        f"bf16 is 2 bytes each: {_b(_n('llama-7b') * 2)}. The \"7B\" of the name is rounded up; "
                        "the GB figure and the GiB figure differ by 7.4%, so always label the unit."),
    ),
    Numeric(
        id="00.2", title="Model states of mixed-precision AdamW", difficulty="warm-up", minutes=5,
        prompt="In the ZeRO paper's accounting of mixed-precision AdamW, each parameter keeps 16-bit weights, "
               "16-bit gradients and the optimizer's fp32 master weights, momentum and variance. How many bytes of "
               "model states does LLaMA-7B need on one GPU (no sharding)? Answer with a unit.",
        expected=lambda: _states("llama-7b"),
        slips=(Slip("forgot the fp32 master copy", lambda: _states("llama-7b", k=8),
                    "you counted momentum and variance but not the fp32 master copy of the weights (4 bytes/param)"),
               Slip("forgot gradients", lambda: _states("llama-7b") - 2 * _n("llama-7b"),
                    "you left out the 16-bit gradients (2 bytes/param)"),
               Slip("2-byte optimizer states", lambda: _states("llama-7b", k=6),
                    "you stored the optimizer states in 2 bytes each; mixed-precision Adam keeps them in fp32 (4 bytes)")),
        hints=("Count bytes per parameter first: 2 (weights) + 2 (gradients) + K (optimizer).",
               "K = 12: fp32 master weights, momentum and variance, 4 bytes each (ZeRO paper, Sec. 3.1)."),
        worked=lambda: (f"Per parameter: 2 (fp16/bf16 weights) + 2 (gradients) + 12 (fp32 master, momentum, variance) "
                        f"= {_states('llama-7b') // _n('llama-7b')} bytes (`memlib.zero.zero_model_state_bytes`). "
                        f"For {_n('llama-7b'):,} parameters: **{_b(_states('llama-7b'))}**, before a single activation."),
    ),
    SpotError(
        id="00.3", title="The missing master copy in a 7B estimate", difficulty="interview", minutes=8,
        prompt="This paragraph circulates as the standard answer for training a 7B model. Name the figure where the "
               "error starts (as written) and give the corrected total of model states for LLaMA-7B, e.g. "
               "`(\"99GB\", \"123 GB\")`.",
        quote="以 7B 参数、FP16 精度为例：参数占 14GB，梯度同 14GB，Adam 优化器状态（动量+方差）占 28GB，合计 56GB，加上激活值轻松超 80GB。",
        source="seed 003 (如果显卡的显存不够装下一个完整的模型呢), 标准答",
        figures=(Figure("14GB", False, "7B x 2 bytes: right for fp16 weights (and for the gradients)"),
                 Figure("28GB", True, "momentum and variance are fp32 (8 bytes/param together), and the fp32 master "
                                      "copy (4 more) is missing: 12 bytes/param"),
                 Figure("56GB", True, "the total inherits the 28GB error: 16 bytes/param, not 8"),
                 Figure("80GB", False, "the A100's capacity; the conclusion 'exceeds 80GB' survives, by more")),
        expected=lambda: _states("llama-7b"),
        slips=(Slip("forgot the fp32 master copy", lambda: _states("llama-7b", k=8),
                    "you fixed momentum and variance to fp32 but the fp32 master copy of the weights is still missing"),),
        hints=("Adam keeps two states per parameter; in mixed precision they are fp32.",
               "Mixed precision also keeps an fp32 master copy of the weights for the update."),
        worked=lambda: (f"The error starts at **28GB**: fp32 momentum and variance are 8 bytes/param, and the fp32 master "
                        f"weights add 4, so the optimizer holds 12 bytes/param. With 2 + 2 for 16-bit weights and gradients "
                        f"the model states are 16 bytes/param: **{_b(_states('llama-7b'))}** for LLaMA-7B's "
                        f"{_n('llama-7b'):,} parameters (the seed's 56GB is half of it)."),
    ),
    Numeric(
        id="00.4", title="Activations of a 7B-shaped GPT, no recompute", difficulty="interview", minutes=8,
        prompt="Korthikanti et al. (2022) give the activations one GPT layer saves for the backward, in 16-bit, as "
               "`s·b·h·(34 + 5·a·s/h)` bytes. For a 7B-shaped model (h = 4096, a = 32 heads, 32 layers) at "
               "sequence length s = 2048 and micro-batch b = 1, how much do **all layers** save without recompute?",
        expected=lambda: _kor() * get_model("llama-7b").num_layers,
        count=32, count_label="layers",
        slips=(Slip("forgot the attention term", lambda: _kor("selective") * get_model("llama-7b").num_layers,
                    "you left out 5·a·s/h, the attention scores, softmax and its dropout mask: at s = 2048 it is the "
                    "larger part"),),
        hints=("Compute one layer first, then multiply by the number of layers.",
               "5·a·s/h = 5·32·2048/4096 = 80, so the bracket is 114 bytes per token per hidden unit."),
        worked=lambda: (f"One layer: s·b·h·(34 + 5as/h) = {_b(_kor())} (`memlib.activations.korthikanti_layer_bytes`); "
                        f"32 layers: **{_b(_kor() * 32)}**. Without the attention term it would be {_b(_kor('selective') * 32)}: "
                        f"the s² term dominates at long sequences, which is why FlashAttention/SDPA (which never stores "
                        f"the scores) and selective recompute matter. Full recompute keeps only each layer's input, "
                        f"2sbh: {_b(_kor('full') * 32)} for all layers."),
    ),
    Numeric(
        id="00.5", title="Bytes per parameter in pure bf16", difficulty="warm-up", minutes=4,
        prompt="With `precision=\"bf16\"` everything (weights, gradients and both AdamW states) is bf16, as torch's AdamW "
               "does on bf16 parameters. How many bytes of model states per parameter is that?",
        expected=lambda: (lambda e: e.model_state_bytes / e.setup.model.num_params)(
            estimate_training("llama-7b", precision="bf16")),
        unit="bytes/param", tolerance=0.01,
        slips=(Slip("mixed precision", lambda: (lambda e: e.model_state_bytes / e.setup.model.num_params)(
                    estimate_training("llama-7b", precision="bf16-mixed")),
                    "that is mixed precision (fp32 weights, gradients and states, or 16-bit copies plus an fp32 "
                    "master); pure bf16 keeps no fp32 tensor at all"),),
        hints=("Four tensors per parameter: weight, gradient, momentum, variance.",),
        worked=lambda: (lambda e: f"Weight, gradient, momentum and variance, 2 bytes each: "
                                  f"**{e.model_state_bytes / e.setup.model.num_params:g} bytes/param** "
                                  f"(`memlib.estimate_training(..., precision='bf16').model_state_bytes` / num_params). "
                                  "Half of AMP's 16, at the price of updates below bf16's resolution being lost "
                                  "(no fp32 master to accumulate them).")(estimate_training("llama-7b", precision="bf16")),
    ),
    Choice(
        id="00.6", title="Where is the peak with full recompute?", difficulty="interview", minutes=6,
        prompt="LLaMA-7B, bf16-mixed AdamW, sequence 2048, micro-batch 1, **full activation recompute**, steady state "
               "(step 2 and later). At which moment of the step is memory highest?",
        options=(Option("a", "at the end of the forward, at the loss", "with full recompute only the layer inputs "
                        "are saved, so the forward's activations are small", "1"),
                 Option("b", "during the backward", "gradients fill in as the backward runs, but they are complete "
                        "only at its end", "2"),
                 Option("c", "in the optimizer step", "parameters, all gradients and optimizer states are alive "
                        "together, plus the step's temporaries", "3")),
        reasons=(Option("1", "all saved activations and the logits are alive and no gradient exists yet"),
                 Option("2", "gradients are allocated while most saved activations are still alive"),
                 Option("3", "recompute leaves little activation memory, so the largest set is every gradient next to "
                             "parameters and states, plus the update's temporaries")),
        right=lambda: {"forward": "a", "backward": "b", "optimizer": "c"}[_peak_7b_recompute().phase],
        hints=("Write down what is alive at each moment: parameters and states always (step 2+), then what else?",
               "Full recompute keeps only 2sbh per layer."),
        worked=lambda: (lambda e: f"memlib puts the peak in the **{e.phase}** (`estimate_training(...).phase`): "
                                  + "; ".join(f"{m.name} ({m.where}) {gb(m.total):.2f} GB" for m in e.moments
                                              if m.where in ("at the loss (log-softmax over the vocabulary)",
                                                             "optimizer.step()", "embedding backward"))
                                  + ". With recompute the activations are small, so what decides is when all gradients "
                                  "exist: the end of the backward and the optimizer step, which adds its temporaries.")(
            _peak_7b_recompute()),
    ),
    Implement(
        id="00.7", title="Count a LLaMA's parameters", difficulty="stretch", minutes=15,
        prompt="Write `llama_params(hidden, layers, heads, kv_heads, intermediate, vocab)` returning the exact "
               "parameter count of a LLaMA-architecture model (RMSNorm, gated MLP, untied embedding and lm_head, "
               "grouped-query attention with `kv_heads` key/value heads, head_dim = hidden / heads). It is tested "
               "against `memlib.get_model(name).num_params` for LLaMA-7B, 65B, Llama-2-70B, Llama-3-8B and Mistral-7B.",
        function_name="llama_params", reference_name="memlib.get_model(name).num_params",
        cases=lambda: [(dict(hidden=m.hidden_size, layers=m.num_layers, heads=m.num_heads, kv_heads=m.num_kv_heads,
                             intermediate=m.intermediate_size, vocab=m.vocab_size), m.num_params)
                       for m in map(get_model, ("llama-7b", "llama-65b", "llama-2-70b", "llama-3-8b", "mistral-7b"))],
        slips=(Slip("tied head", lambda k, w: w - k["vocab"] * k["hidden"],
                    "the lm_head is a separate vocab x hidden matrix in LLaMA (not tied to the embedding)"),
               Slip("no GQA", lambda k, w: _llama_like(k, gqa=False).num_params,
                    "k_proj and v_proj have kv_heads x head_dim outputs, not hidden (grouped-query attention)"),
               Slip("no norms", lambda k, w: w - (2 * k["layers"] + 1) * k["hidden"],
                    "two RMSNorm weights per layer plus the final norm (hidden each) are missing")),
        hints=("Per layer: q and o are hidden x hidden; k and v are hidden x (kv_heads x head_dim); the MLP has three "
               "hidden x intermediate matrices; two norms of size hidden.",
               "Outside the layers: embedding and lm_head (vocab x hidden each) and the final norm."),
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
        id="00.8", title="How many GB is a \"V100 32GB\"?", difficulty="warm-up", minutes=2,
        prompt="NVIDIA sells a \"V100 32GB\". How many GB (10⁹ bytes) of memory does it have?",
        expected=lambda: get_gpu("v100-32gb").memory_bytes, unit="GB", tolerance=0.005,
        slips=(Slip("driver-reported", lambda: get_gpu("v100-32gb").reported_total_bytes,
                    "that is what torch/nvidia-smi report as total (32,510 MiB), slightly less than the nominal capacity"),),
        hints=("GPU vendors' \"GB\" of HBM is binary: 32 GiB.",),
        worked=lambda: (f"A \"V100 32GB\" has 32 GiB = {get_gpu('v100-32gb').memory_bytes:,} bytes = "
                        f"**{gb(get_gpu('v100-32gb').memory_bytes):.2f} GB** (`memlib.get_gpu('v100-32gb').memory_bytes`); "
                        "so 4 of them hold more than \"128GB\"."),
    ),
    Design(
        id="00.9", title="Why the peak is a maximum, not a sum", difficulty="interview", minutes=10,
        prompt="A colleague estimates training memory as parameters + gradients + optimizer states + the activations "
               "of every layer + the logits, all added. Explain in a few sentences why the peak is the maximum over "
               "the moments of a step rather than that sum, what is alive at the peak, and how recompute moves it.",
        key_points=(KeyPoint("peak = max over moments", r"\bmax|maximum|峰值|最大"),
                    KeyPoint("activations are freed during backward", r"free|release|释放|discard"),
                    KeyPoint("gradients appear as activations go", r"gradient|梯度"),
                    KeyPoint("parameters and optimizer states stay all step", r"optimi[sz]er state|adam state|优化器"),
                    KeyPoint("recompute shifts the peak to the end of backward / the step", r"recompute|checkpoint|重计算")),
        need=3,
        hints=("List what exists at the loss, at the top of the backward, at the bottom, and in optimizer.step().",),
        worked=lambda: (lambda plain, rec: (
            "Tensors are freed when nothing refers to them: each layer's saved activations die during its backward, "
            "while that layer's gradients are created. So activations and gradients are never both complete; the peak "
            "is the **maximum over moments** of what is alive, with parameters and optimizer states alive throughout. "
            f"For LLaMA-7B bf16-mixed at 2048 tokens memlib's peak is {_b(plain.peak_bytes)} during the {plain.phase}; "
            f"the naive sum of every category would be {_b(sum(max(m.parts.get(k, 0) for m in plain.moments) for k in plain.breakdown))}. "
            f"With full recompute the activations shrink and the peak moves to the {rec.phase} "
            f"({_b(rec.peak_bytes)}), where all gradients coexist with the states."))(
            estimate_training("llama-7b"), _peak_7b_recompute()),
    ),
]


# --- 01 65B on 4x V100 -------------------------------------------------------------------------
_65 = "vicuna-65b"


def _v100_layout(**kw):
    return lambda: estimate_training(_65, precision="fp16-mixed", recompute="full", **kw)


_V100_LAYOUTS = {"a": _v100_layout(zero_stage=3, dp=4), "b": _v100_layout(tp=4), "c": _v100_layout(pp=4),
                 "d": _v100_layout(zero_stage=3, dp=4, offload="optimizer"),
                 "e": _v100_layout(zero_stage=3, dp=4, offload="optimizer+params")}


def _gpus_for_states(model: str, gpu_bytes: float, **kw) -> int:
    return math.ceil(_states(model, **kw) / gpu_bytes)


EX_01 = [
    Numeric(
        id="01.1", title="What do 4x V100 32GB hold?", difficulty="warm-up", minutes=3,
        prompt="What is the total memory of four V100 32GB GPUs, in GB (10⁹ bytes)? (The circulating answer says "
               "\"4×32GB=128GB\".)",
        expected=lambda: 4 * get_gpu("v100-32gb").memory_bytes, unit="GB", tolerance=0.005, count=4,
        hints=("A \"32GB\" GPU has 32 GiB.",),
        worked=lambda: (f"4 x 32 GiB = 128 GiB = **{gb(4 * get_gpu('v100-32gb').memory_bytes):.1f} GB**: more than the "
                        f"fp16 weights of Vicuna-65B ({_b(2 * _n(_65))}), so the seed's \"short by 2GB\" has the wrong sign; "
                        "the real obstacle is everything else a training step keeps."),
    ),
    SpotError(
        id="01.2", title="780GB: what is missing?", difficulty="interview", minutes=8,
        prompt="The circulating answer's memory budget for full fine-tuning of Vicuna-65B (fp16 mixed precision, "
               "AdamW). Name the wrong figure as written and give the correct total of model states, e.g. "
               "`(\"99GB\", \"1234 GB\")`.",
        quote="模型参数：65B × 2 bytes（FP16）= 130GB；梯度：与参数同大小，130GB（混合精度下梯度为FP16）；优化器状态：AdamW需存储"
              "momentum和variance，均为FP32（4 bytes），即65B × 4 × 2 = 520GB；总需求：130（参数）+ 130（梯度）+ 520（优化器）= "
              "780GB（纯数据，不含中间激活值）",
        source="seed 000 (能否用4 * v100 32G训练vicuna 65b), 标准答",
        figures=(Figure("130GB", False, "65B x 2 bytes: right (130.6 GB exactly) for the fp16 weights and gradients"),
                 Figure("520GB", False, "right for momentum and variance alone; the fp32 master weights are not in the "
                                        "budget at all"),
                 Figure("780GB", True, "the fp32 master copy of the weights (4 bytes/param, about 261 GB) is missing: "
                                       "mixed precision needs 16 bytes/param")),
        expected=lambda: _states(_65),
        slips=(Slip("forgot the fp32 master copy", lambda: _states(_65, k=8),
                    "that is still without the fp32 master copy of the weights"),),
        hints=("Mixed precision updates an fp32 copy of the weights; where is it in the budget?",),
        worked=lambda: (f"**780GB** omits the fp32 master weights ({_b(4 * _n(_65))}). Model states are 2 + 2 + 12 = 16 "
                        f"bytes/param: **{_b(_states(_65))}** (`memlib.zero.zero_model_state_bytes(n, 0, 1)`), "
                        f"{gb(_states(_65)) / gb(4 * get_gpu('v100-32gb').memory_bytes):.1f}x the four GPUs together."),
    ),
    Numeric(
        id="01.3", title="ZeRO-3 over four GPUs", difficulty="interview", minutes=6,
        prompt="Under ZeRO-3 over 4 data-parallel GPUs (DeepSpeed, fp16 mixed precision with AdamW), how many bytes of "
               "model states does **each** GPU hold for Vicuna-65B? (Activations not included.)",
        expected=lambda: _states(_65, 3, 4), count=4,
        slips=(Slip("forgot the fp32 master copy", lambda: _states(_65, 3, 4, k=8),
                    "you sharded 12 bytes/param, not 16: the fp32 master copy of the weights is missing "
                    "(this is the seed's 195GB)"),
               Slip("forgot gradients", lambda: _states(_65, 3, 4) - 2 * _n(_65) // 4,
                    "the sharded 16-bit gradients are missing")),
        hints=("ZeRO-3 partitions weights, gradients and optimizer states: all 16 bytes/param are divided.",),
        worked=lambda: (f"(2 + 2 + 12) x {_n(_65):,} / 4 = **{_b(_states(_65, 3, 4))}** per GPU "
                        f"(`memlib.zero.zero_model_state_bytes(n, 3, 4)`), about "
                        f"{gib(_states(_65, 3, 4)) / gib(get_gpu('v100-32gb').memory_bytes):.1f}x a V100 32GB."),
    ),
    SpotError(
        id="01.4", title="\"Only the optimizer states sharded\"", difficulty="interview", minutes=8,
        prompt="The same answer continues with the stage that shards only the optimizer states. Name the wrong figure "
               "and give the per-GPU model states of *that* layout (the one the sentence describes) over 4 GPUs.",
        quote="若仅分片优化器状态（ZeRO-2），每卡需130+130+130=390GB，更不可行。",
        source="seed 000, 标准答 (分布式策略可行性分析)",
        figures=(Figure("130", False, "two of the three 130s are right (fp16 weights and gradients, replicated); the "
                                      "third, the optimizer shard, should be 12 bytes/param / 4; name the total"),
                 Figure("390GB", True, "the optimizer shard lacks the fp32 master copy, and sharding only the optimizer "
                                       "is ZeRO-1 (P_os), not ZeRO-2")),
        expected=lambda: _states(_65, 1, 4), count=4,
        slips=(Slip("ZeRO-2", lambda: _states(_65, 2, 4),
                    "that is ZeRO-2, which shards the gradients too; the sentence shards only the optimizer states (ZeRO-1)"),
               Slip("forgot the fp32 master copy", lambda: _states(_65, 1, 4, k=8),
                    "the fp32 master copy of the weights belongs in the optimizer shard (12 bytes/param, not 8)")),
        hints=("Sharding only the optimizer states is ZeRO stage 1 (P_os): 2 + 2 + 12/N bytes per parameter.",),
        worked=lambda: (f"**390GB** is wrong twice: the optimizer shard is 12 bytes/param / 4, and the stage is ZeRO-1. "
                        f"Per GPU: 2ψ + 2ψ + 12ψ/4 = **{_b(_states(_65, 1, 4))}** (`zero_model_state_bytes(n, 1, 4)`); "
                        f"real ZeRO-2 (gradients sharded too) would be {_b(_states(_65, 2, 4))}."),
    ),
    Numeric(
        id="01.5", title="How many V100s for the states alone?", difficulty="interview", minutes=6,
        prompt="With ZeRO-3, how many V100 32GB GPUs would it take just to hold Vicuna-65B's mixed-precision model "
               "states (16 bytes/param), counting each GPU's full nominal capacity and ignoring activations, the "
               "CUDA context and fragmentation? Give a whole number.",
        expected=lambda: _gpus_for_states(_65, get_gpu("v100-32gb").memory_bytes), unit="count", tolerance=0.0,
        slips=(Slip("GB for GiB", lambda: _gpus_for_states(_65, 32e9),
                    "you divided by 32 GB; a V100 32GB holds 32 GiB"),
               Slip("forgot the fp32 master copy", lambda: _gpus_for_states(_65, get_gpu("v100-32gb").memory_bytes, k=8),
                    "with 12 bytes/param the fp32 master copy is missing"),
               Slip("rounded down", lambda: _gpus_for_states(_65, get_gpu("v100-32gb").memory_bytes) - 1,
                    "you rounded down: the states would not fit; round up")),
        hints=("Divide the total model states by one GPU's capacity in the same unit, then round up.",),
        worked=lambda: (f"{_b(_states(_65))} / {_b(get_gpu('v100-32gb').memory_bytes)} = "
                        f"{_states(_65) / get_gpu('v100-32gb').memory_bytes:.2f}, rounded up: "
                        f"**{_gpus_for_states(_65, get_gpu('v100-32gb').memory_bytes)} GPUs**, before activations; "
                        "a real run needs more (the context, headroom, activations)."),
    ),
    Choice(
        id="01.6", title="Which layout fits 4x V100 32GB?", difficulty="interview", minutes=8,
        prompt="Full fine-tuning of Vicuna-65B on 4x V100 32GB, fp16 mixed precision (V100 has no bf16), full recompute, "
               "micro-batch 1, sequence 2048. Which layout fits the GPUs' memory (memlib.fits: peak + CUDA context + "
               "allocator headroom)?",
        options=(Option("a", "ZeRO-3 over 4 GPUs", "every GPU still holds 16 bytes/param / 4, about 4 bytes x 65B"),
                 Option("b", "tensor parallel, tp=4", "tp splits the matrices 4 ways: the same 16 bytes/param / 4"),
                 Option("c", "pipeline parallel, pp=4", "each stage holds a quarter of the layers with all their states"),
                 Option("d", "ZeRO-3 + optimizer offload to CPU (ZeRO-Offload)", "the 16-bit weights stay on the "
                        "GPUs: 2 bytes/param / 4 plus gathered layers and activations is still over 32 GiB"),
                 Option("e", "ZeRO-3 + optimizer and parameter offload to CPU (ZeRO-Infinity)", "GPUs keep only the "
                        "layers in flight and activations; the host holds the rest, and needs the RAM for it", "3")),
        reasons=(Option("1", "sharding over 4 GPUs divides the 1 TB of states enough", "4 GPUs divide 16 bytes/param "
                        "into 4 bytes/param: about 261 GB each"),
                 Option("2", "recompute removes the activations, which were the problem", "activations were never the "
                        "main term: model states are"),
                 Option("3", "only when the 16-bit parameters leave the GPUs too does the per-GPU footprint drop below "
                             "32 GiB")),
        right=lambda: _only_fitting(_V100_LAYOUTS, "v100-32gb"),
        hints=("Compute the per-GPU states of each: 16ψ/4 for a, b, c; what stays on the GPU with offload?",),
        worked=lambda: ("Per GPU (memlib.estimate_training + memlib.fits on v100-32gb):\n\n" + _md_rows(
            [(k, f"{gib(make().peak_bytes):.1f} GiB, {'fits' if fits(make(), 'v100-32gb').fits else 'does not fit'}")
             for k, make in _V100_LAYOUTS.items()])
            + f"\n\nOnly **({_only_fitting(_V100_LAYOUTS, 'v100-32gb')})** fits, and it needs "
              f"{_b(4 * _V100_LAYOUTS['e']().host_bytes)} of host RAM for the four processes."),
    ),
    Implement(
        id="01.7", title="ZeRO per-GPU model states", difficulty="interview", minutes=10,
        prompt="Write `zero_per_gpu(num_params, stage, dp)` returning the bytes of model states on one GPU under ZeRO "
               "`stage` (0-3) over `dp` data-parallel GPUs, mixed-precision AdamW in the ZeRO paper's accounting (2 bytes "
               "of 16-bit weights, 2 of gradients, K = 12 of optimizer states per parameter). Tested against "
               "`memlib.zero.zero_model_state_bytes`.",
        function_name="zero_per_gpu", reference_name="memlib.zero.zero_model_state_bytes",
        cases=lambda: [(dict(num_params=_n(m), stage=s, dp=d), zero.zero_model_state_bytes(_n(m), s, d))
                       for m, s, d in (("llama-7b", 0, 1), ("llama-7b", 1, 8), ("llama-7b", 2, 8), ("llama-7b", 3, 8),
                                       (_65, 1, 4), (_65, 2, 4), (_65, 3, 4), ("llama-13b", 2, 64), ("llama-13b", 3, 64))],
        slips=(Slip("forgot the fp32 master copy", lambda k, w: zero.zero_model_state_bytes(k["num_params"], k["stage"],
                                                                                          k["dp"], k=8),
                    "K is 12 (fp32 master, momentum, variance), not 8"),
               Slip("everything sharded", lambda k, w: zero.zero_model_state_bytes(k["num_params"], 3, k["dp"]),
                    "you divide all states by dp at every stage; stage 1 shards only optimizer states, stage 2 also "
                    "gradients, stage 3 also parameters")),
        hints=("Stage 1 divides the 12 bytes by dp; stage 2 also the gradient's 2; stage 3 also the weights' 2.",),
        worked=lambda: ("```python\ndef zero_per_gpu(num_params, stage, dp):\n"
                        "    weights = 2 * num_params / (dp if stage >= 3 else 1)\n"
                        "    grads = 2 * num_params / (dp if stage >= 2 else 1)\n"
                        "    optim = 12 * num_params / (dp if stage >= 1 else 1)\n"
                        "    return weights + grads + optim\n```\n\n"
                        f"For Vicuna-65B on 4 GPUs: stage 0 {_b(_states(_65, 0, 4))}, 1 {_b(_states(_65, 1, 4))}, "
                        f"2 {_b(_states(_65, 2, 4))}, 3 {_b(_states(_65, 3, 4))} (Rajbhandari et al. 2020, Figure 1)."),
    ),
    Numeric(
        id="01.8", title="Host RAM for ZeRO-Infinity", difficulty="stretch", minutes=10,
        prompt="The layout that fits (ZeRO-3 with optimizer states and parameters offloaded to CPU, 4 GPUs, fp16 mixed "
               "precision) moves the fp32 master weights, momentum and variance, an fp32 gradient partition and the "
               "16-bit parameters to host memory. How much host RAM do the **four** processes need together?",
        expected=lambda: 4 * _V100_LAYOUTS["e"]().host_bytes, count=4, count_label="processes",
        slips=(Slip("ZeRO-Offload only", lambda: 4 * _V100_LAYOUTS["d"]().host_bytes,
                    "that is optimizer offload alone (16 bytes/param); the 16-bit parameters live on the host too"),
               Slip("states only", lambda: _states(_65, working_bytes=0),
                    "you counted the optimizer states (12 bytes/param) but not the fp32 gradients and 16-bit parameters")),
        hints=("Per parameter on the host: 12 (fp32 master, m, v) + 4 (fp32 gradient) + 2 (fp16 weights).",),
        worked=lambda: (f"18 bytes/param over all processes: **{_b(4 * _V100_LAYOUTS['e']().host_bytes)}** "
                        f"(`estimate_training(..., offload='optimizer+params').host_bytes` is per process: "
                        f"{_b(_V100_LAYOUTS['e']().host_bytes)}). A server with 1.5 TB of RAM is the real requirement."),
    ),
    Design(
        id="01.9", title="Fine-tune Vicuna-65B on 4x V100 this week", difficulty="stretch", minutes=15,
        prompt="Your manager hands you 4x V100 32GB and wants Vicuna-65B fine-tuned on an instruction dataset this "
               "week. Propose a plan: what you would run, the memory it needs per GPU and on the host, what you give up, "
               "and what you would ask for instead.",
        key_points=(KeyPoint("QLoRA / LoRA / 4-bit base", r"q?lora|4-?bit|nf4|adapter|量化"),
                    KeyPoint("fp16 with loss scaling (no bf16 on V100)", r"loss scal|fp16|no bf16|bf16"),
                    KeyPoint("recompute / gradient checkpointing", r"recompute|checkpoint|重计算"),
                    KeyPoint("offload and its host RAM", r"offload|infinity|host ram|cpu ram|内存|卸载"),
                    KeyPoint("throughput / time cost", r"tokens?/s|throughput|slow|hours|days|速度|吞吐"),
                    KeyPoint("a smaller model or bigger GPUs as alternatives", r"33b|13b|a100|h100|80 ?gb|smaller")),
        need=3,
        hints=("Start from the numbers: full fine-tuning needs 16 bytes/param; what fits per GPU?",),
        worked=lambda: (lambda inf, q65, q33: (
            f"Full fine-tuning fits only as ZeRO-Infinity: {gib(inf.peak_bytes):.1f} GiB per GPU but "
            f"{_b(4 * inf.host_bytes)} of host RAM and about {step_time(inf, 'v100-32gb').tokens_per_s_per_gpu:.0f} "
            f"tokens/s per GPU (`memlib.step_time`), i.e. days for a modest dataset. QLoRA (NF4 base, LoRA r=64 on all "
            f"linear layers) of the 65B needs {gib(q65.peak_bytes):.1f} GiB on one GPU: "
            f"{'fits' if fits(q65, 'v100-32gb').fits else 'does not fit'} a V100 32GB (the QLoRA paper used a 48GB GPU); "
            f"splitting the 4-bit layers across the four GPUs (naive pipeline, device_map) brings each under 32 GiB at "
            f"a pipeline's idle time. The same recipe on a 33B needs {gib(q33.peak_bytes):.1f} GiB: "
            f"{'fits' if fits(q33, 'v100-32gb').fits else 'does not fit'} one V100, so four run data-parallel. V100 has "
            "no bf16: fp16 with dynamic loss scaling, gradient checkpointing on. Ask for A100/H100 80GB if full "
            "fine-tuning is a must."))(
            _V100_LAYOUTS["e"](),
            estimate_training(_65, precision="fp16", finetune="qlora", recompute="full", lora_rank=64,
                              lora_targets="all-linear"),
            estimate_training("vicuna-33b", precision="fp16", finetune="qlora", recompute="full", lora_rank=64,
                              lora_targets="all-linear")),
    ),
]


# --- 02 single-GPU limits ----------------------------------------------------------------------
def _4090(**kw):
    return lambda: estimate_training("llama-2-7b", recompute="full", **kw)


_4090_LAYOUTS = {"a": _4090(precision="bf16-mixed"), "b": _4090(precision="bf16"),
                 "c": _4090(precision="bf16", optimizer="adamw-8bit"),
                 "d": _4090(precision="bf16", finetune="lora", lora_rank=16, lora_targets="qv")}


def _kv_total(model: str, fmt: str, batch: int, ctx: int, **kw) -> int:
    m = get_model(model)
    if kw.get("mha"):
        m = m.with_(num_kv_heads=0)
    return kv_bytes_per_token(m, fmt) * batch * ctx


EX_02 = [
    Numeric(
        id="02.1", title="The largest model an A100 80GB can fully fine-tune", difficulty="warm-up", minutes=5,
        prompt="Ignoring activations, the CUDA context and fragmentation, what is the largest number of parameters "
               "whose mixed-precision AdamW model states (16 bytes/param) fit in one A100 80GB? Answer as a parameter "
               "count, e.g. `\"3.2B\"`.",
        expected=lambda: get_gpu("a100-80gb").memory_bytes / (_states("llama-7b") / _n("llama-7b")), unit="params",
        slips=(Slip("GB for GiB", lambda: 80e9 / (_states("llama-7b") / _n("llama-7b")),
                    "you divided 80 GB; an A100 80GB holds 80 GiB"),
               Slip("forgot the fp32 master copy", lambda: get_gpu("a100-80gb").memory_bytes / 12,
                    "12 bytes/param leaves out the fp32 master copy"),
               Slip("pure bf16", lambda: get_gpu("a100-80gb").memory_bytes / 8,
                    "8 bytes/param is pure bf16 AdamW, not mixed precision")),
        hints=("Capacity in bytes / bytes per parameter.",),
        worked=lambda: (lambda per: f"{get_gpu('a100-80gb').memory_bytes:,} bytes / {per:g} bytes/param = **"
                        f"{get_gpu('a100-80gb').memory_bytes / per / 1e9:.2f}B parameters**: a 7B does not fit with "
                        "plain mixed-precision AdamW, before any activation; the seed's \"7B fits with tricks\" needs "
                        "exactly those tricks.")(_states("llama-7b") / _n("llama-7b")),
    ),
    SpotError(
        id="02.2", title="8-bit Adam: what is 28GB?", difficulty="interview", minutes=8,
        prompt="About 8-bit AdamW (bitsandbytes) for a 7B model. Name the wrong figure and give the right size of what "
               "the parenthesis says it holds (the fp32 weight copy plus the 8-bit states) for LLaMA-7B.",
        quote="更激进：用 bitsandbytes 的 8-bit Adam，将优化器状态压缩到 2 bytes 每参数，即 7B × 2 × 2 = 28GB（参数 FP32 副本 + "
              "8-bit 状态）。总显存：14 + 14 + 28 + 3 = 59GB，可放入 80GB。",
        source="seed 001 (想要训练1个LLM，如果只想用1张显卡，那么对显卡的要求是什么), 标准答",
        figures=(Figure("2 bytes", False, "right: two 1-byte states (plus a small absmax per 2048 values)"),
                 Figure("14", False, "7B x 2 bytes: right for 16-bit weights and gradients"),
                 Figure("28GB", True, "7B x 2 x 2 is 4 bytes/param: the fp32 copy alone; the 8-bit states add ~2 more"),
                 Figure("59GB", True, "the total inherits the 28GB error"),
                 Figure("80GB", False, "the A100's capacity")),
        expected=lambda: 4 * _n("llama-7b") + _8bit_states("llama-7b"),
        slips=(Slip("fp32 copy only", lambda: 4 * _n("llama-7b"), "that is the fp32 copy alone, without the 8-bit states"),
               Slip("states only", lambda: _8bit_states("llama-7b"), "that is the 8-bit states alone, without the fp32 copy")),
        hints=("fp32 copy: 4 bytes/param. 8-bit m and v: 1 byte each, plus one fp32 absmax per block of 2048.",),
        worked=lambda: (f"**28GB** is 4 bytes/param: exactly the fp32 copy ({_b(4 * _n('llama-7b'))}). The 8-bit states "
                        f"add {_b(_8bit_states('llama-7b'))} (`memlib.optimizers.adamw_8bit_state_bytes`, per tensor): "
                        f"together **{_b(4 * _n('llama-7b') + _8bit_states('llama-7b'))}**, so the seed's 59GB total is "
                        "about 14 GB short."),
    ),
    SpotError(
        id="02.3", title="ZeRO-1 on one GPU", difficulty="interview", minutes=5,
        prompt="Name the wrong figure and give the optimizer-state bytes (fp32 master, momentum, variance) of LLaMA-7B "
               "under ZeRO-1 on a single GPU.",
        quote="实际中，单卡用 ZeRO-1 可将优化器状态从 84GB 降到 28GB（仅存参数 FP32 副本 + 1 个 momentum 或 variance，取决于实现）。",
        source="seed 001, 标准答 (优化手段)",
        figures=(Figure("84GB", False, "7B x 12 bytes: right for fp32 master, momentum and variance (80.9 GB exactly)"),
                 Figure("28GB", True, "ZeRO partitions over data-parallel ranks; with one GPU there is nothing to "
                                      "partition, and no implementation drops Adam's momentum or variance")),
        expected=lambda: _states("llama-7b", 1, 1, working_bytes=0),
        slips=(Slip("divided by 3", lambda: _states("llama-7b", 1, 1, working_bytes=0) / 3,
                    "ZeRO divides by the number of data-parallel GPUs, here 1, not by 3"),),
        hints=("What does ZeRO divide by?",),
        worked=lambda: (f"**28GB** is wrong: ZeRO-1 divides optimizer states by dp = 1, so they stay "
                        f"**{_b(_states('llama-7b', 1, 1, working_bytes=0))}** "
                        "(`zero.zero_model_state_bytes(n, 1, 1, working_bytes=0)`); `memlib.estimate_training(..., "
                        "zero_stage=1, dp=1)` equals plain training."),
    ),
    Choice(
        id="02.4", title="ZeRO-3 with one GPU", difficulty="warm-up", minutes=3,
        prompt="You enable DeepSpeed ZeRO stage 3 on a single GPU (no offload). Compared with plain data-parallel "
               "training on that GPU, the peak memory…",
        options=(Option("a", "drops to about a third", "ZeRO divides by the data-parallel degree, here 1"),
                 Option("b", "drops like ZeRO-1's: optimizer states only", "with one rank there is nothing to partition "
                        "at any stage"),
                 Option("c", "does not change: with one rank nothing is partitioned",
                        "ZeRO removes redundancy across data-parallel ranks; one rank has none (offload is another matter)"),
                 Option("d", "grows because of communication buffers", "memlib models no buffers for a world of one")),
        right=lambda: (lambda p0, p3: "c" if p3 == p0 else ("d" if p3 > p0 else ("a" if p3 < 0.5 * p0 else "b")))(
            estimate_training("llama-7b", zero_stage=0).peak_bytes,
            estimate_training("llama-7b", zero_stage=3, dp=1).peak_bytes),
        hints=("ZeRO = Zero *Redundancy* Optimizer: redundancy between whom?",),
        worked=lambda: (f"**(c)**: `estimate_training('llama-7b', zero_stage=3, dp=1).peak_bytes` = "
                        f"{_b(estimate_training('llama-7b', zero_stage=3, dp=1).peak_bytes)}, the same as without ZeRO. "
                        "On one GPU only offload (ZeRO-Offload/Infinity) saves GPU memory."),
    ),
    Implement(
        id="02.5", title="KV-cache bytes", difficulty="interview", minutes=8,
        prompt="Write `kv_cache_bytes(layers, kv_heads, head_dim, dtype_bytes, batch, context)` returning the bytes of "
               "the KV cache for `batch` sequences of `context` tokens. Tested against "
               "`memlib.inference.kv_bytes_per_token(model, kv_cache) * batch * context` for LLaMA-7B, Llama-2-70B "
               "(GQA), Mistral-7B, Llama-3-8B and Qwen2-7B in bf16/fp16/fp8.",
        function_name="kv_cache_bytes", reference_name="memlib.inference.kv_bytes_per_token x tokens",
        cases=lambda: [(dict(layers=m.num_layers, kv_heads=m.num_kv_heads, head_dim=m.head_dim,
                             dtype_bytes=KV_ELEMENT_BYTES[f], batch=b, context=c), kv_bytes_per_token(m, f) * b * c)
                       for m, f, b, c in ((get_model("llama-7b"), "fp16", 8, 2048),
                                          (get_model("llama-2-70b"), "bf16", 1, 4096),
                                          (get_model("mistral-7b"), "fp8", 4, 32768),
                                          (get_model("llama-3-8b"), "bf16", 16, 8192),
                                          (get_model("qwen2-7b"), "bf16", 2, 32768))],
        slips=(Slip("K only", lambda k, w: w / 2, "both K and V are cached: a factor 2"),
               Slip("one layer", lambda k, w: w / k["layers"], "every layer has its own cache: multiply by layers"),
               Slip("elements", lambda k, w: w / k["dtype_bytes"], "you counted elements; multiply by dtype_bytes")),
        hints=("Per token and layer: K and V, each kv_heads x head_dim values.",),
        worked=lambda: ("```python\ndef kv_cache_bytes(layers, kv_heads, head_dim, dtype_bytes, batch, context):\n"
                        "    return 2 * layers * kv_heads * head_dim * dtype_bytes * batch * context\n```\n\n"
                        f"Llama-2-70B in bf16: {kv_bytes_per_token(get_model('llama-2-70b'), 'bf16'):,} bytes per token "
                        f"(8 KV heads); with 64 it would be "
                        f"{kv_bytes_per_token(get_model('llama-2-70b').with_(num_kv_heads=0), 'bf16'):,}."),
    ),
    Numeric(
        id="02.6", title="KV cache of Llama-2-70B at batch 16", difficulty="interview", minutes=6,
        prompt="Llama-2-70B (80 layers, 64 query heads, 8 key/value heads, head_dim 128) serves 16 sequences of 4,096 "
               "tokens with a bf16 KV cache. How large is the cache in total (one copy, no tensor parallelism)?",
        expected=lambda: _kv_total("llama-2-70b", "bf16", 16, 4096), count=16, count_label="sequences",
        slips=(Slip("no GQA", lambda: _kv_total("llama-2-70b", "bf16", 16, 4096, mha=True),
                    "you cached 64 heads; Llama-2-70B uses grouped-query attention with 8 KV heads"),
               Slip("K only", lambda: _kv_total("llama-2-70b", "bf16", 16, 4096) / 2, "both K and V are cached")),
        hints=("2 x layers x kv_heads x head_dim x 2 bytes per token; times batch x context.",),
        worked=lambda: (f"{kv_bytes_per_token(get_model('llama-2-70b'), 'bf16'):,} bytes/token "
                        f"(`memlib.inference.kv_bytes_per_token`) x 16 x 4,096 = "
                        f"**{_b(_kv_total('llama-2-70b', 'bf16', 16, 4096))}**; without GQA it would be 8x."),
    ),
    Numeric(
        id="02.7", title="Serving Llama-3-8B in bf16: the weights", difficulty="warm-up", minutes=3,
        prompt="How much memory do the weights of Llama-3-8B take when served in bf16? (Its vocabulary has 128,256 "
               "tokens and its lm_head is not tied to the embedding.)",
        expected=lambda: estimate_inference("llama-3-8b", weights="bf16").weight_bytes, unit="GB",
        slips=(Slip("fp32", lambda: 2 * estimate_inference("llama-3-8b", weights="bf16").weight_bytes,
                    "4 bytes per parameter is fp32; bf16 is 2"),
               Slip("no embedding", lambda: estimate_inference("llama-3-8b", weights="bf16").weight_bytes
                    - 2 * 2 * get_model("llama-3-8b").vocab_size * get_model("llama-3-8b").hidden_size,
                    "the embedding and the lm_head (128,256 x 4,096 each) are weights too")),
        hints=("Exact count from memlib.get_model('llama-3-8b').num_params, 2 bytes each.",),
        worked=lambda: (f"{_n('llama-3-8b'):,} parameters x 2 bytes = "
                        f"**{_b(estimate_inference('llama-3-8b', weights='bf16').weight_bytes)}** "
                        "(`estimate_inference(...).weight_bytes`); the 128K vocabulary makes embedding + head "
                        f"{_b(4 * get_model('llama-3-8b').vocab_size * get_model('llama-3-8b').hidden_size)} of it."),
    ),
    Choice(
        id="02.8", title="Fine-tune Llama-2-7B on an RTX 4090", difficulty="interview", minutes=8,
        prompt="You have one RTX 4090 (24GB) and want to fine-tune Llama-2-7B at sequence 2048, micro-batch 1, full "
               "recompute. Which of these fits (memlib.fits)?",
        options=(Option("a", "full fine-tuning, bf16-mixed AdamW", "16 bytes/param of states for 6.7B parameters"),
                 Option("b", "full fine-tuning, pure bf16 AdamW", "8 bytes/param is still about 54 GB"),
                 Option("c", "full fine-tuning, pure bf16 with 8-bit AdamW", "weights and gradients alone are 4 bytes/param"),
                 Option("d", "LoRA r=16 on q_proj and v_proj over a frozen bf16 base", "the base costs 2 bytes/param; "
                        "gradients and states exist only for the adapters", "1")),
        reasons=(Option("1", "full fine-tuning keeps gradients and optimizer states for every parameter: even 8-bit "
                             "states leave more than 24 GiB; LoRA keeps them only for the adapters"),
                 Option("2", "recompute removes enough activations for any of them", "recompute trims activations, not "
                        "model states"),
                 Option("3", "pure bf16 halves mixed precision, which is enough", "half of 16 bytes/param x 6.7B is ~54 GB")),
        right=lambda: _only_fitting(_4090_LAYOUTS, "rtx-4090"),
        hints=("Bytes per parameter of each option x 6.7B, compared with 24 GiB.",),
        worked=lambda: ("Per GPU (memlib.estimate_training + memlib.fits on rtx-4090):\n\n" + _md_rows(
            [(k, f"{gib(make().peak_bytes):.1f} GiB, {'fits' if fits(make(), 'rtx-4090').fits else 'does not fit'}")
             for k, make in _4090_LAYOUTS.items()]) + "\n\nOnly LoRA fits; QLoRA would leave even more room."),
    ),
    Design(
        id="02.9", title="Full fine-tuning a 13B on one A100 80GB", difficulty="stretch", minutes=12,
        prompt="Someone must fully fine-tune LLaMA-13B on one A100 80GB (plenty of host RAM). What are the options, "
               "what does each need, and which would you pick?",
        key_points=(KeyPoint("ZeRO-Offload / CPU offload and its host RAM", r"offload|cpu|host|卸载"),
                    KeyPoint("8-bit optimizer", r"8-?bit|bitsandbytes"),
                    KeyPoint("pure bf16 (no fp32 master) and its precision cost", r"pure bf16|bf16|kahan|stochastic"),
                    KeyPoint("recompute / gradient checkpointing", r"recompute|checkpoint|重计算"),
                    KeyPoint("LoRA / QLoRA as the alternative", r"q?lora|adapter"),
                    KeyPoint("throughput cost of offload (PCIe)", r"pcie|slow|throughput|tokens?/s|bandwidth")),
        need=3,
        hints=("13B x 16 bytes/param is ~208 GB: which tricks divide it, which move it?",),
        worked=lambda: ("Per GPU on a100-80gb (memlib):\n\n" + _md_rows([
            (label, f"{gib(e.peak_bytes):.1f} GiB, {'fits' if fits(e, 'a100-80gb').fits else 'does not fit'}"
                    + (f", host {_b(e.host_bytes)}" if e.host_bytes else ""))
            for label, e in (("bf16-mixed AdamW", estimate_training("llama-13b", recompute="full")),
                             ("8-bit AdamW, bf16-mixed", estimate_training("llama-13b", recompute="full",
                                                                           optimizer="adamw-8bit")),
                             ("pure bf16 + 8-bit AdamW", estimate_training("llama-13b", recompute="full", precision="bf16",
                                                                          optimizer="adamw-8bit")),
                             ("ZeRO-Offload (optimizer on CPU)", estimate_training("llama-13b", recompute="full",
                                                                                   zero_stage=2, offload="optimizer")),
                             ("LoRA r=8 (q,v)", estimate_training("llama-13b", recompute="full", finetune="lora")))])
            + "\n\nZeRO-Offload keeps full mixed precision and fits with room for larger batches, at the cost of "
              "PCIe traffic and a CPU Adam step each iteration; pure bf16 + 8-bit AdamW fits without a host but "
              "loses small updates; LoRA is the cheap answer when 'full' is negotiable."),
    ),
]


# --- 03 when the model does not fit ------------------------------------------------------------
def _a100_40(**kw):
    return lambda: estimate_training("llama-13b", recompute="full", dp=8, **kw)


_13B_LAYOUTS = {"a": _a100_40(zero_stage=1), "b": _a100_40(zero_stage=2), "c": _a100_40(zero_stage=3),
                "d": lambda: estimate_training("llama-13b", recompute="full", dp=4, tp=2)}


def _lora_model_case(name: str, rank: int, targets):
    m = get_model(name)
    return (dict(hidden=m.hidden_size, kv_dim=m.kv_size, intermediate=m.intermediate_size, layers=m.num_layers,
                 rank=rank, targets=tuple(targets)), lora_params(m, rank, tuple(targets)))


def _offload7b(**kw):
    return estimate_training("llama-7b", zero_stage=3, dp=1, recompute="full", **kw)


_ALL_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

EX_03 = [
    Numeric(
        id="03.1", title="A 4-bit LLaMA-7B, really", difficulty="interview", minutes=6,
        prompt="QLoRA stores LLaMA-7B's linear layers in NF4 with double quantization (4.127 bits per weight) and keeps "
               "the embedding, lm_head and norms in 16-bit. How large is the quantized base model?",
        expected=lambda: estimate_inference("llama-7b", weights="nf4").weight_bytes, unit="GB",
        slips=(Slip("4 bits everywhere", lambda: _n("llama-7b") / 2,
                    "half a byte for every parameter misses the quantization constants and the 16-bit embedding and head"),
               Slip("16-bit", lambda: 2 * _n("llama-7b"), "that is the bf16 model")),
        hints=("Split the parameters: linear layers at 4.127/8 bytes, embedding + lm_head + norms at 2 bytes.",),
        worked=lambda: (f"Linear layers {(lambda m: m.linear_params - m.vocab_size * m.hidden_size)(get_model('llama-7b')):,} "
                        f"params at 4.127 bits, embedding + lm_head + norms in bf16: "
                        f"**{_b(estimate_inference('llama-7b', weights='nf4').weight_bytes)}** "
                        "(`estimate_inference('llama-7b', weights='nf4').weight_bytes`), not the "
                        f"{_b(_n('llama-7b') / 2)} of \"7B x 0.5 bytes\"."),
    ),
    SpotError(
        id="03.2", title="ZeRO-3 on 8 GPUs for a 7B", difficulty="interview", minutes=6,
        prompt="Name the wrong figure and give the per-GPU model states of LLaMA-7B under ZeRO-3 over 8 GPUs "
               "(mixed-precision AdamW).",
        quote="以 7B 模型为例，ZeRO-3 配合 8 卡，每卡仅存 14GB/8=1.75GB 参数，加上梯度、优化器状态，单卡显存从 56GB 降到约 10GB。",
        source="seed 003, 标准答 (ZeRO 优化器状态分片)",
        figures=(Figure("14GB", False, "7B x 2 bytes: right for fp16 weights"),
                 Figure("1.75GB", False, "right: the weights' shard"),
                 Figure("56GB", True, "model states are 16 bytes/param (about 108-112 GB), not 8"),
                 Figure("10GB", True, "16 bytes/param / 8 GPUs is 2 bytes x 7B, about 13.5 GB")),
        expected=lambda: _states("llama-7b", 3, 8), count=8,
        slips=(Slip("forgot the fp32 master copy", lambda: _states("llama-7b", 3, 8, k=8),
                    "12 bytes/param / 8 leaves out the fp32 master copy"),),
        hints=("ZeRO-3 divides all 16 bytes/param by the number of GPUs.",),
        worked=lambda: (f"16 bytes/param x {_n('llama-7b'):,} / 8 = **{_b(_states('llama-7b', 3, 8))}** per GPU "
                        "(`zero_model_state_bytes(n, 3, 8)`); the seed's 56GB starting point is half the real "
                        f"{_b(_states('llama-7b'))}."),
    ),
    Numeric(
        id="03.3", title="LoRA parameters of LLaMA-7B", difficulty="warm-up", minutes=5,
        prompt="LoRA with rank r = 16 on all seven linear projections (q, k, v, o, gate, up, down) of every layer of "
               "LLaMA-7B (h = 4096, intermediate 11008, 32 layers). How many trainable parameters does it add?",
        expected=lambda: lora_params(get_model("llama-7b"), 16, "all-linear"), unit="params", count=32,
        count_label="layers",
        slips=(Slip("q and v only", lambda: lora_params(get_model("llama-7b"), 16, "qv"),
                    "you adapted only q_proj and v_proj (peft's default); the question adapts all seven"),
               Slip("one factor", lambda: lora_params(get_model("llama-7b"), 16, "all-linear") / 2,
                    "an adapter has two factors, A (r x in) and B (out x r): r x (in + out)")),
        hints=("Each adapted in x out matrix adds r x (in + out).",),
        worked=lambda: (f"r·(in + out) summed over the seven projections, times 32 layers: "
                        f"**{lora_params(get_model('llama-7b'), 16, 'all-linear'):,}** parameters "
                        f"(`memlib.lora.lora_params`), {lora_params(get_model('llama-7b'), 16, 'all-linear') / _n('llama-7b'):.2%} "
                        "of the model."),
    ),
    Implement(
        id="03.4", title="LoRA parameter count", difficulty="interview", minutes=10,
        prompt="Write `lora_param_count(hidden, kv_dim, intermediate, layers, rank, targets)` returning the trainable "
               "parameters LoRA adds to a LLaMA-architecture model; `targets` is a tuple of projection names from "
               "q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj; `kv_dim` is the width of k_proj's and "
               "v_proj's outputs (kv_heads x head_dim). Tested against `memlib.lora.lora_params`.",
        function_name="lora_param_count", reference_name="memlib.lora.lora_params",
        cases=lambda: [_lora_model_case("llama-7b", 8, ("q_proj", "v_proj")),
                       _lora_model_case("llama-2-70b", 16, _ALL_LINEAR),
                       _lora_model_case("mistral-7b", 64, ("q_proj", "k_proj", "v_proj", "o_proj")),
                       _lora_model_case("llama-3-8b", 4, ("k_proj", "down_proj")),
                       _lora_model_case("llama-13b", 32, ("gate_proj", "up_proj"))],
        slips=(Slip("no GQA", lambda k, w: lora_params(_llama_like(k, gqa=False), k["rank"], k["targets"]),
                    "k_proj and v_proj output kv_dim, not hidden, under grouped-query attention"),
               Slip("one layer", lambda k, w: w / k["layers"], "adapters are added in every layer")),
        hints=("Shapes: q (h->h), k and v (h->kv_dim), o (h->h), gate and up (h->I), down (I->h).",),
        worked=lambda: ("```python\ndef lora_param_count(hidden, kv_dim, intermediate, layers, rank, targets):\n"
                        "    shapes = {'q_proj': (hidden, hidden), 'k_proj': (hidden, kv_dim), 'v_proj': (hidden, kv_dim),\n"
                        "              'o_proj': (hidden, hidden), 'gate_proj': (hidden, intermediate),\n"
                        "              'up_proj': (hidden, intermediate), 'down_proj': (intermediate, hidden)}\n"
                        "    return layers * sum(rank * sum(shapes[t]) for t in targets)\n```\n\n"
                        f"Llama-2-70B, r=16, all linear: {lora_params(get_model('llama-2-70b'), 16, 'all-linear'):,}."),
    ),
    Choice(
        id="03.5", title="LLaMA-13B on 8x A100 40GB", difficulty="interview", minutes=8,
        prompt="Full fine-tuning of LLaMA-13B on 8x A100 40GB, bf16-mixed AdamW, full recompute, sequence 2048, "
               "micro-batch 1. Which single layout fits (memlib.fits)?",
        options=(Option("a", "ZeRO-1 over 8 GPUs", "the 16-bit weights and gradients are still whole on every GPU"),
                 Option("b", "ZeRO-2 over 8 GPUs", "the 16-bit weights are still whole on every GPU: 2 bytes x 13B plus "
                        "the shards"),
                 Option("c", "ZeRO-3 over 8 GPUs", "all 16 bytes/param divided by 8", "1"),
                 Option("d", "tensor parallel tp=2 x data parallel dp=4, no ZeRO", "tp=2 halves the states: "
                        "8 bytes/param x 13B is still over 40 GiB")),
        reasons=(Option("1", "only when the 16-bit parameters are sharded too do the states drop below a 40GB card"),
                 Option("2", "sharding the gradients is what matters; parameters are small", "16-bit parameters weigh "
                        "as much as 16-bit gradients"),
                 Option("3", "tensor parallelism divides everything, so tp=2 is enough", "it divides by 2, not 8")),
        right=lambda: _only_fitting(_13B_LAYOUTS, "a100-40gb"),
        hints=("Per GPU: ZeRO-1 4ψ + 12ψ/8; ZeRO-2 2ψ + 14ψ/8; ZeRO-3 16ψ/8; tp=2 16ψ/2.",),
        worked=lambda: ("Per GPU (memlib on a100-40gb):\n\n" + _md_rows(
            [(k, f"{gib(make().peak_bytes):.1f} GiB, {'fits' if fits(make(), 'a100-40gb').fits else 'does not fit'}")
             for k, make in _13B_LAYOUTS.items()])),
    ),
    Numeric(
        id="03.6", title="What full recompute saves", difficulty="interview", minutes=6,
        prompt="By Korthikanti et al., a GPT layer saves `s·b·h·(34 + 5·a·s/h)` bytes without recompute and `2·s·b·h` "
               "with full recompute. By what factor does full recompute shrink a layer's saved activations for a "
               "7B-shaped layer (h = 4096, a = 32) at s = 2048?",
        expected=lambda: _kor("none") / _kor("full"), unit="x",
        slips=(Slip("selective", lambda: _kor("none") / _kor("selective"),
                    "that is selective recompute's factor (dropping the attention term); full keeps only the input"),
               Slip("no attention term", lambda: _kor("selective") / _kor("full"),
                    "you left out 5·a·s/h in the no-recompute size")),
        hints=("The s·b·h cancels: (34 + 5as/h) / 2.",),
        worked=lambda: (f"{_b(_kor('none'))} / {_b(_kor('full'))} = **{_kor('none') / _kor('full'):.0f}x** "
                        "(`korthikanti_layer_bytes(..., recompute=...)`), for one extra forward (~33% more compute)."),
    ),
    Numeric(
        id="03.7", title="Host RAM for ZeRO-Offload", difficulty="stretch", minutes=8,
        prompt="LLaMA-13B, one GPU, DeepSpeed ZeRO-2 with the optimizer offloaded to CPU (ZeRO-Offload), fp16/bf16 mixed "
               "precision. The host keeps the fp32 master weights, momentum, variance and an fp32 gradient partition. "
               "How much host RAM does that take?",
        expected=lambda: estimate_training("llama-13b", zero_stage=2, offload="optimizer").host_bytes,
        slips=(Slip("no fp32 gradients", lambda: _states("llama-13b", working_bytes=0),
                    "12 bytes/param: the fp32 gradient partition the CPU Adam reads is missing"),
               Slip("parameters too", lambda: estimate_training("llama-13b", zero_stage=3,
                                                                offload="optimizer+params").host_bytes,
                    "18 bytes/param includes the 16-bit parameters, which stay on the GPU with optimizer offload")),
        hints=("4 bytes each: master, momentum, variance, gradient.",),
        worked=lambda: (f"16 bytes/param x {_n('llama-13b'):,} = "
                        f"**{_b(estimate_training('llama-13b', zero_stage=2, offload='optimizer').host_bytes)}** "
                        "(`estimate_training(..., offload='optimizer').host_bytes`), while the GPU peak drops to "
                        f"{gib(estimate_training('llama-13b', zero_stage=2, offload='optimizer').peak_bytes):.1f} GiB."),
    ),
    SpotError(
        id="03.8", title="Host RAM for a 7B on a 12GB card", difficulty="interview", minutes=6,
        prompt="The follow-up answer on training a 7B on a single 12GB card. Name the wrong figure and give the host RAM "
               "the described setup needs for LLaMA-7B.",
        quote="使用 DeepSpeed ZeRO-3 + CPU Offload + 梯度 checkpointing。具体配置：ZeRO stage 3，offload_optimizer 到 CPU，"
              "offload_param 到 CPU，gradient_checkpointing 开启，batch size=1。……注意：CPU 内存需 >64GB，否则 OOM。",
        source="seed 003, 追问 3",
        figures=(Figure("3", False, "ZeRO stage 3 is what offload_param needs: right"),
                 Figure("1", False, "batch size 1: a setting, not an error"),
                 Figure("64GB", True, "the host holds fp32 master, momentum, variance, fp32 gradients and 16-bit "
                                      "parameters: 18 bytes/param, about 121 GB for LLaMA-7B")),
        expected=lambda: _offload7b(offload="optimizer+params").host_bytes,
        slips=(Slip("optimizer offload only", lambda: _offload7b(offload="optimizer").host_bytes,
                    "16 bytes/param is optimizer offload alone; offload_param moves the 16-bit weights to the host too"),
               Slip("states only", lambda: _states("llama-7b", working_bytes=0),
                    "12 bytes/param leaves out the fp32 gradients and the parameters")),
        hints=("List what offload_optimizer and offload_param put on the host, in bytes per parameter.",),
        worked=lambda: (f"**64GB** is too little: 18 bytes/param x {_n('llama-7b'):,} = "
                        f"**{_b(_offload7b(offload='optimizer+params').host_bytes)}** "
                        f"(`estimate_training(..., offload='optimizer+params').host_bytes`); the GPU keeps "
                        f"{gib(_offload7b(offload='optimizer+params').peak_bytes):.1f} GiB."),
    ),
    Design(
        id="03.9", title="Rank the remedies", difficulty="stretch", minutes=15,
        prompt="LLaMA-13B full fine-tuning does not fit your GPU. Rank the remedies you would try (mixed precision, "
               "recompute, ZeRO/FSDP sharding, offload, tensor/pipeline parallelism, 8-bit optimizers, LoRA/QLoRA) and "
               "say what each one saves and what it costs.",
        key_points=(KeyPoint("recompute trades ~1/3 more compute for activations", r"recompute|checkpoint"),
                    KeyPoint("ZeRO/FSDP sharding costs communication", r"zero|fsdp|shard"),
                    KeyPoint("offload costs PCIe bandwidth and host RAM", r"offload|pcie|host"),
                    KeyPoint("TP/PP: communication and pipeline bubble", r"tensor parallel|pipeline|\btp\b|\bpp\b|bubble"),
                    KeyPoint("8-bit optimizer states", r"8-?bit"),
                    KeyPoint("LoRA/QLoRA: train fewer parameters", r"q?lora|adapter"),
                    KeyPoint("precision choice (bf16 / mixed)", r"bf16|fp16|mixed|precision")),
        need=4,
        hints=("For each remedy: which term of the breakdown does it shrink (states, activations), and what does it add "
               "(compute, communication, host RAM, quality)?",),
        worked=lambda: ("LLaMA-13B, sequence 2048, micro-batch 1, per GPU (memlib):\n\n" + _md_rows([
            (label, f"{gib(e.peak_bytes):.1f} GiB" + (f" (host {_b(e.host_bytes)})" if e.host_bytes else ""))
            for label, e in (("bf16-mixed AdamW, 1 GPU", estimate_training("llama-13b")),
                             ("+ full recompute", estimate_training("llama-13b", recompute="full")),
                             ("+ 8-bit AdamW", estimate_training("llama-13b", recompute="full", optimizer="adamw-8bit")),
                             ("ZeRO-3 over 8 GPUs + recompute", estimate_training("llama-13b", recompute="full",
                                                                                 zero_stage=3, dp=8)),
                             ("tp=8 + recompute", estimate_training("llama-13b", recompute="full", tp=8)),
                             ("ZeRO-Offload, 1 GPU", estimate_training("llama-13b", recompute="full", zero_stage=2,
                                                                       offload="optimizer")),
                             ("LoRA r=8 (q,v), 1 GPU", estimate_training("llama-13b", recompute="full", finetune="lora")),
                             ("QLoRA, 1 GPU", estimate_training("llama-13b", recompute="full", finetune="qlora",
                                                                precision="bf16")))])
            + "\n\nOrder of trying: recompute (cheap: ~33% more compute) → sharding with ZeRO/FSDP if you have several "
              "GPUs (communication, overlapped) → tensor parallel within a node (all-reduces per layer) and pipeline "
              "across nodes (bubble) → 8-bit optimizer (small quality risk) → offload (PCIe and host RAM, slow) → "
              "LoRA/QLoRA when full fine-tuning is not required (fewer trainable parameters, 4-bit base)."),
    ),
]


# --- the registry -------------------------------------------------------------------------------
EXERCISES: dict[str, Exercise] = {ex.id: ex for ex in EX_00 + EX_01 + EX_02 + EX_03}


def get_exercise(exercise_id) -> Exercise:
    """The exercise with this id ("01.3"); KeyError with close ids if unknown."""
    key = str(exercise_id).strip()
    if key in EXERCISES:
        return EXERCISES[key]
    close = difflib.get_close_matches(key, list(EXERCISES), n=3)
    raise KeyError(f"unknown exercise {str(exercise_id)[:40]!r}" + (f"; did you mean {', '.join(close)}?" if close else
                                                                    f"; ids look like '01.3' ({len(EXERCISES)} exist)"))


def for_notebook(notebook: str) -> list[Exercise]:
    return [ex for ex in EXERCISES.values() if ex.notebook == str(notebook)[:2]]
