"""Known values from the literature and from hand derivations.

Each expected number is written out here from its source (a paper's section or table, or
arithmetic on the architecture numbers), independently of memlib's implementation.
"""

import math
import re
from fractions import Fraction

import pytest

import memlib
from memlib import estimate_training, get_model
from memlib.training.activations import korthikanti_layer_bytes
from memlib.training.lora import NF4_BITS_PER_PARAM, lora_params, nf4_bytes
from memlib.training.optimizers import adamw_8bit_state_bytes

LLAMA7B_PARAMS = 32 * (4096 * 4096 * 4 + 3 * 4096 * 11008 + 2 * 4096) + 2 * 32000 * 4096 + 4096


def model_state_bytes(est):
    c = est.counts
    return c["param_bytes"] + c["grad_bytes"] + c["optimizer_bytes"]


# --- bytes per parameter of the model states -------------------------------------------------
def test_zero_16_bytes_per_param_mixed_adamw():
    # Rajbhandari et al. 2020 (ZeRO), Sec. 3.1: mixed-precision Adam keeps fp16 params (2) and
    # grads (2) plus fp32 master params, momentum and variance (4+4+4 = 12): 16 bytes/param.
    zero_bytes_per_param = 2 + 2 + (4 + 4 + 4)
    assert zero_bytes_per_param == 16
    # memlib's "bf16-mixed" is PyTorch AMP: fp32 params 4 + fp32 grads 4 + two fp32 states 8 = 16
    amp_bytes_per_param = 4 + 4 + 2 * 4
    assert amp_bytes_per_param == zero_bytes_per_param
    m = get_model("llama-7b")
    assert m.num_params == LLAMA7B_PARAMS
    est = estimate_training(m, seq_len=512, precision="bf16-mixed", optimizer="adamw", finetune="full")
    assert model_state_bytes(est) == 16 * LLAMA7B_PARAMS
    assert est.counts["param_bytes"] == 4 * LLAMA7B_PARAMS
    assert est.counts["grad_bytes"] == 4 * LLAMA7B_PARAMS
    assert est.counts["optimizer_bytes"] == 8 * LLAMA7B_PARAMS


@pytest.mark.parametrize("precision", ["bf16-mixed", "fp16-mixed", "fp32"])
def test_16_bytes_per_param_fp32_states(precision):
    # fp32 weights, fp32 grads, fp32 exp_avg + exp_avg_sq: 4 + 4 + 8
    for name in ("llama-7b", "mistral-7b", "qwen2-0.5b"):
        m = get_model(name)
        est = estimate_training(m, seq_len=256, precision=precision, optimizer="adamw")
        assert model_state_bytes(est) == (4 + 4 + 2 * 4) * m.num_params


@pytest.mark.parametrize("precision, optimizer, bytes_per_param", [
    ("bf16", "adamw", 2 + 2 + 2 * 2),  # pure bf16: params, grads, exp_avg, exp_avg_sq all bf16 -> 8
    ("fp16", "adamw", 2 + 2 + 2 * 2),
    ("bf16", "sgd", 2 + 2),  # plain SGD keeps no state -> 4
    ("bf16", "sgd-momentum", 2 + 2 + 2),  # one momentum buffer -> 6
    ("bf16-mixed", "sgd", 4 + 4),
    ("bf16-mixed", "sgd-momentum", 4 + 4 + 4),
    ("fp32", "sgd-momentum", 4 + 4 + 4),
])
def test_bytes_per_param(precision, optimizer, bytes_per_param):
    m = get_model("llama-7b")
    est = estimate_training(m, seq_len=256, precision=precision, optimizer=optimizer)
    assert model_state_bytes(est) == bytes_per_param * LLAMA7B_PARAMS


def test_gpt3_16_bytes_per_param():
    # the GPT path (Korthikanti-style model) also follows ZeRO's 16 bytes/param
    m = get_model("gpt-3-175b")
    est = estimate_training(m, seq_len=2048, precision="bf16-mixed", optimizer="adamw")
    assert model_state_bytes(est) == 16 * m.num_params


def test_adamw_8bit_model_states_llama7b():
    # bf16-mixed + bitsandbytes AdamW8bit: fp32 params 4 + fp32 grads 4 per param, and per tensor
    # the 8-bit state (< 4096 elements: two fp32 states; else 2 uint8 + 2 fp32 absmax per
    # 256-element block) plus two shared 256-entry fp32 quantile maps.
    def state(n):
        return 8 * n if n < 4096 else 2 * n + 2 * 4 * math.ceil(n / 256)

    per_layer = 4 * state(4096 * 4096) + 3 * state(4096 * 11008) + 2 * state(4096)
    states = 32 * per_layer + 2 * state(32000 * 4096) + state(4096) + 2 * 256 * 4
    est = estimate_training("llama-7b", seq_len=256, precision="bf16-mixed", optimizer="adamw-8bit")
    assert est.counts["optimizer_bytes"] == states
    assert model_state_bytes(est) == 8 * LLAMA7B_PARAMS + states


# --- Korthikanti et al. 2022 ------------------------------------------------------------------
S, B, H, A = 2048, 1, 12288, 96  # GPT-3-like: Korthikanti et al. 2022, Table 3 (175B row)


def sbh(x):
    return Fraction(S * B * H) * x


def test_korthikanti_no_parallelism():
    # Sec. 4.1, eq. (1): activations per layer = sbh(34 + 5as/h)  (= 34sbh + 5as^2b)
    expected = sbh(34 + Fraction(5 * A * S, H))
    assert expected == 34 * S * B * H + 5 * A * S * S * B
    assert korthikanti_layer_bytes(S, B, H, A) == expected


def test_korthikanti_tensor_parallel():
    # Sec. 4.2.1, eq. (2): sbh(10 + 24/t + 5as/(ht))
    t = 8
    expected = sbh(10 + Fraction(24, t) + Fraction(5 * A * S, H * t))
    assert expected.denominator == 1
    assert korthikanti_layer_bytes(S, B, H, A, t=t) == expected


def test_korthikanti_tensor_sequence_parallel():
    # Sec. 4.2.2, eq. (4): sbh(34/t + 5as/(ht))
    t = 8
    expected = sbh(Fraction(34, t) + Fraction(5 * A * S, H * t))
    assert korthikanti_layer_bytes(S, B, H, A, t=t, sequence_parallel=True) == expected


def test_korthikanti_selective():
    # Sec. 5 / Table 2: selective recompute drops the 5as/h (5as^2b) attention term
    assert korthikanti_layer_bytes(S, B, H, A, recompute="selective") == 34 * S * B * H
    t = 8
    assert korthikanti_layer_bytes(S, B, H, A, t=t, recompute="selective") == sbh(10 + Fraction(24, t))
    assert korthikanti_layer_bytes(S, B, H, A, t=t, sequence_parallel=True, recompute="selective") \
        == sbh(Fraction(34, t))


def test_korthikanti_full():
    # Sec. 5 / Table 2: full recompute stores only each layer's input: 2sbh
    assert korthikanti_layer_bytes(S, B, H, A, recompute="full") == 2 * S * B * H
    assert korthikanti_layer_bytes(S, B, H, A, t=8, recompute="full") == 2 * S * B * H


def test_korthikanti_selective_saving_gpt3():
    # Sec. 5: for GPT-3 175B, 5as/h = 5*96*2048/12288 = 80, so the attention term is 80/(34+80)
    # = 70% of the activations, which selective recompute removes.
    none = korthikanti_layer_bytes(S, B, H, A)
    sel = korthikanti_layer_bytes(S, B, H, A, recompute="selective")
    assert Fraction(5 * A * S, H) == 80
    assert Fraction(none - sel, none) == Fraction(80, 114)


def test_gpt3_estimate_uses_korthikanti():
    # memlib's GPT-3 estimate with eager attention (the paper's setting): L layers of 34sbh + 5as^2b
    est = estimate_training("gpt-3-175b", seq_len=2048, micro_batch=1, precision="bf16-mixed", attention="eager")
    assert est.counts["layer_activation_bytes"] == 34 * S * B * H + 5 * A * S * S * B


def test_gpt3_sdpa_keeps_no_score_matrix():
    # flash attention (sdpa) keeps no s x s tensor: Korthikanti's 5as^2b (softmax output 2, dropout mask 1,
    # dropout output 2 bytes per score) goes and an fp32 log-sum-exp per head and token comes: 4*a*s*b
    est = estimate_training("gpt-3-175b", seq_len=2048, micro_batch=1, precision="bf16-mixed", attention="sdpa")
    assert est.counts["layer_activation_bytes"] == 34 * S * B * H + 4 * A * S * B


# --- QLoRA / LoRA -------------------------------------------------------------------------------
def test_nf4_bits_per_param():
    # Dettmers et al. 2023 (QLoRA), Sec. 3 "Double Quantization": 4-bit codes + 8/64 bits for the
    # 8-bit absmax per 64 weights + 32/(64*256) for the fp32 second-level constant = 4.127 bits
    assert NF4_BITS_PER_PARAM == pytest.approx(4 + 8 / 64 + 32 / (64 * 256))
    assert round(NF4_BITS_PER_PARAM, 3) == 4.127


def test_nf4_bytes_4096x4096():
    n = 4096 * 4096
    expected = math.ceil(n / 2) + n // 64 + 4 * n // (64 * 256)
    assert expected == 8_388_608 + 262_144 + 4_096
    assert nf4_bytes(n) == expected
    # 8 * bytes / n is the bits-per-param figure
    assert 8 * nf4_bytes(n) / n == pytest.approx(4 + 8 / 64 + 32 / (64 * 256))


def test_nf4_bytes_odd_size_rounds_up():
    # 65 weights: 33 bytes of codes (two per byte, rounded up), 2 absmax blocks, 1 fp32 constant
    assert nf4_bytes(65) == 33 + 2 + 4


def test_lora_params_llama7b_qv():
    # Hu et al. 2021 (LoRA), Sec. 4.1: each adapted d x k matrix gets B (d x r) and A (r x k):
    # r(d + k) params. LLaMA-7B: 32 layers x {q_proj, v_proj} x 8*(4096+4096)
    expected = 32 * 2 * 8 * (4096 + 4096)
    assert expected == 4_194_304
    assert lora_params(get_model("llama-7b"), 8, ["q_proj", "v_proj"]) == expected


def test_lora_params_gqa_all_linear():
    # Mistral-7B: k/v project 4096 -> 1024; MLP 4096 <-> 14336
    r = 16
    per_layer = r * ((4096 + 4096) + (4096 + 1024) + (4096 + 1024) + (4096 + 4096)
                     + (4096 + 14336) + (4096 + 14336) + (14336 + 4096))
    assert lora_params(get_model("mistral-7b"), r, "all-linear") == 32 * per_layer


def test_lora_estimate_counts_trainable():
    est = estimate_training("llama-7b", seq_len=512, finetune="lora", lora_rank=8,
                            lora_targets=["q_proj", "v_proj"])
    assert est.counts["trainable"] == 32 * 2 * 8 * (4096 + 4096)
    # bf16-mixed LoRA: adapters fp32, their grads fp32, AdamW states fp32 (2 x 4)
    assert est.counts["grad_bytes"] == 4 * 4_194_304
    assert est.counts["optimizer_bytes"] == 8 * 4_194_304


# --- 8-bit AdamW (bitsandbytes) -----------------------------------------------------------------
def test_adamw_8bit_state_large_tensor():
    # bitsandbytes 0.49.2 optim/optimizer.py Optimizer2State.init_state: blocksize = 256
    n = 4096 * 4096
    blocks = n // 256
    assert blocks * 256 == n
    expected = 2 * n * 1 + 2 * blocks * 4  # two uint8 states + two fp32 absmax per block
    assert expected == 33_554_432 + 524_288
    assert adamw_8bit_state_bytes(n) == expected


def test_adamw_8bit_state_small_tensor():
    # fewer than 4096 elements: two fp32 states
    assert adamw_8bit_state_bytes(1000) == 2 * 4 * 1000
    assert adamw_8bit_state_bytes(4095) == 2 * 4 * 4095


def test_adamw_8bit_state_partial_block():
    # 5000 elements: 8-bit, ceil(5000/256) = 20 blocks per state
    assert adamw_8bit_state_bytes(5000) == 2 * 5000 + 2 * 20 * 4
    assert adamw_8bit_state_bytes(4096) == 2 * 4096 + 2 * 16 * 4


# --- ZeRO on one GPU --------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["llama-7b", "qwen2-0.5b"])
def test_zero_stage_on_one_gpu_shards_nothing(name):
    # ZeRO partitions states over the data-parallel group; with dp=1 every shard is local
    peaks = [estimate_training(name, seq_len=1024, zero_stage=k, dp=1).peak_bytes for k in range(4)]
    assert len(set(peaks)) == 1


# --- Estimate structure -----------------------------------------------------------------------
CASES = [
    dict(model="llama-7b", seq_len=2048),
    dict(model="llama-7b", seq_len=512, precision="bf16", optimizer="sgd"),
    dict(model="qwen2-0.5b", seq_len=4096, micro_batch=2, attention="eager"),
    dict(model="mistral-7b", seq_len=1024, finetune="qlora", precision="bf16", lora_rank=64,
         lora_targets="all-linear"),
    dict(model="llama-3-8b", seq_len=8192, recompute="full"),
    dict(model="gpt-3-175b", seq_len=2048),
]


@pytest.mark.parametrize("kw", CASES, ids=lambda kw: f"{kw['model']}-{kw['seq_len']}")
def test_estimate_structure(kw):
    kw = dict(kw)
    est = estimate_training(kw.pop("model"), **kw)
    for k in ("parameters", "gradients", "optimizer", "activations"):
        assert k in est.breakdown
        assert isinstance(est.breakdown[k], int)
    assert est.phase in {"forward", "backward", "optimizer"}
    assert isinstance(est.peak_bytes, int)
    totals = [sum(mo.parts.values()) for mo in est.moments]
    assert est.peak_bytes == max(totals)
    # the breakdown is what is alive at the peak: it adds up to at most the peak
    assert sum(est.breakdown.values()) <= est.peak_bytes
    assert est.peak_bytes > est.counts["param_bytes"]


def _numbers_before(unit, text):
    return [float(x.replace(",", "")) for x in re.findall(r"([\d,]+\.\d+)\s*" + unit + r"\b", text)]


@pytest.mark.parametrize("kw", CASES, ids=lambda kw: f"{kw['model']}-{kw['seq_len']}")
def test_explain_mentions_peak_in_gb_and_gib(kw):
    kw = dict(kw)
    est = estimate_training(kw.pop("model"), **kw)
    text = est.explain()
    assert isinstance(text, str)
    gb, gib = est.peak_bytes / 1e9, est.peak_bytes / 2**30
    assert any(abs(x - gb) < 0.01 for x in _numbers_before("GB", text)), "peak in GB missing"
    assert any(abs(x - gib) < 0.01 for x in _numbers_before("GiB", text)), "peak in GiB missing"
    assert est.phase in text
