"""Grading of the serving follow-up exercises (04.16-04.18, 07.12): the right answers derived by hand from the
models' published shapes and the GPUs' datasheets (not by running memlib), and each named slip."""

from __future__ import annotations

import pytest

from memlib.learn.grading import grade

# 04.16: Qwen2.5-7B, 28 layers x 4 KV heads x 128, fp8 (1 B): 28,672 B per token; 32,768 tokens = 939,524,096 B;
# four GPUs each send a quarter over 400 Gb/s = 50e9 B/s: 939,524,096 / 200e9 = 4.70 ms
PD_S = 32768 * 2 * 28 * 4 * 128 * 1 / (4 * 50e9)
# 04.17: Llama-3.1-8B, 2 x 32 x 8 x 128 = 65,536 elements per token. KIVI 4-bit: 0.5 B + (2 + 2) B / 32 = 0.625 B
# per element (40,960 B per token) for 32,640 tokens; the newest 128 at 2 B (131,072 B per token):
# 1,336,934,400 + 16,777,216 = 1,353,711,616 B
KIVI = 32640 * 65536 * 0.625 + 128 * 65536 * 2
KIVI_NO_SCALES = 32640 * 65536 * 0.5 + 128 * 65536 * 2
# 07.12: Llama-3.1-8B, 8,030,261,248 parameters, bf16, less the 128,256 x 4,096 embedding table: 15,009,849,344 B
# read per step; 48 caches of 4,096 x 131,072 B = 25,769,803,776 B; step = 40,779,653,120 / 3.35e12 = 12.173 ms;
# 48 / step = 3,943 tokens/s; 40% of an hour: 5.678M tokens for $3.00: $0.528 per million
W8 = 2 * (8_030_261_248 - 128_256 * 4096)
STEP = (W8 + 48 * 4096 * 131072) / 3.35e12
USD = 3.00 / (48 / STEP * 3600 * 0.40) * 1e6

CASES = [
    ("04.16", f"{PD_S * 1e3:.1f} ms", "correct", None),
    ("04.16", f"{PD_S:.4f} s", "correct", None),
    ("04.16", f"{2 * PD_S * 1e3:.1f} ms", "incorrect", "fp8"),
    ("04.16", f"{4 * PD_S * 1e3:.1f} ms", "incorrect", "own port"),
    ("04.16", f"{PD_S / 8 * 1e3:.2f} ms", "incorrect", "gigabits"),
    ("04.16", f"{7 * PD_S * 1e3:.1f} ms", "incorrect", "KV heads"),
    ("04.17", f"{KIVI / 1e9:.2f} GB", "correct", None),
    ("04.17", f"{KIVI_NO_SCALES / 1e9:.3f} GB", "incorrect", "scale and zero point"),
    ("04.17", f"{32768 * 131072 / 1e9:.2f} GB", "incorrect", "16-bit cache"),
    ("04.17", f"{32768 * 65536 / 1e9:.2f} GB", "incorrect", "half a byte"),
    # 04.18: A (8,000 + 200): prefill 2 x 70.6e9 x 8,000 / (0.5 x 989.4e12) ~ 2.3 GPU-s; decode at 20 ms:
    # (20 ms x 8 x 3.35e12 - 139e9) / (8,200 x 327,680) ~ 147 chats, 8 x 200 x 0.02 / 147 ~ 0.22 GPU-s: ~10 : 1.
    # B (500 + 1,000): prefill ~0.14 GPU-s; ~800 chats, 8 x 1,000 x 0.02 / 800 ~ 0.20 GPU-s: ~0.7 : 1. Answer (a).
    ("04.18", ("a", "1"), "correct", None),
    ("04.18", ("c", "1"), "incorrect", "compute-bound"),
    ("04.18", ("d", "1"), "incorrect", "shared by the whole batch"),
    ("04.18", ("a", "2"), "incorrect", None),
    ("07.12", f"${USD:.2f}", "correct", None),
    ("07.12", f"{USD:.3f} dollars", "correct", None),
    ("07.12", f"${USD * 0.4:.2f}", "incorrect", "busy share"),
    ("07.12", f"${USD * 48:.1f}", "incorrect", "48 chats"),
    ("07.12", f"${3.00 / (48 * 3.35e12 / W8 * 3600 * 0.4) * 1e6:.3f}", "incorrect", "KV cache"),
    ("07.12", "5 GB", "malformed", "dollars"),
]


@pytest.mark.parametrize("eid, answer, verdict, says", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_verdict(eid, answer, verdict, says):
    fb = grade(eid, answer)
    assert fb.status == verdict, fb
    if says:
        assert says in fb.message, (says, fb.message)
