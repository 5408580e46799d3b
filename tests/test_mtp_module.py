"""DeepSeek-V3's MTP module from its config's shapes (h 7,168, V 129,280, MLA q_lora 1,536, kv_lora 512, 128 heads
of 128 + 64 rope dims, v 128; 256 routed experts of 2,048 and 1 shared; top-8).

One MoE layer: q_a 7,168 x 1,536 = 11,010,048; q_b 1,536 x 128 x 192 = 37,748,736; kv_a 7,168 x 576 = 4,128,768;
kv_b 512 x 128 x 256 = 16,777,216; o 128 x 128 x 7,168 = 117,440,512; norms 7,168 x 2 + 1,536 + 512 = 16,384;
router 256 x 7,168 = 1,835,008; routed 256 x 3 x 7,168 x 2,048 = 11,274,289,152; shared 3 x 7,168 x 2,048 =
44,040,192: 11,507,286,016. M: 2 x 7,168^2 = 102,760,448; norms 3 x 7,168; embedding and head copies 129,280 x
7,168 = 926,679,040 each. The report: 14B of MTP weights (685B - 671B), 11.5B unique (README_WEIGHTS.md).
Active per drafted token: attention + norms + router 188,957,696 (+ 3 x 7,168 = 21,504 of MTP norms), 8 routed
experts 8 x 44,040,192 = 352,321,536, shared 44,040,192, M 102,760,448, head 926,679,040: 1,614,779,392.
Speculative: one draft token accepted with 0.85-0.90 (report Sec. 5.4.3) gives 1 + alpha tokens per step.
"""

import pytest

from memlib.serving.mtp import mtp_active_params, mtp_module_bytes, mtp_module_params
from memlib.serving.techniques import speculative_expected_tokens

BLOCK = 11_010_048 + 37_748_736 + 4_128_768 + 16_777_216 + 117_440_512 + 16_384 + 1_835_008 + 11_274_289_152 + 44_040_192


def test_mtp_parameters_from_the_config():
    p = mtp_module_params("deepseek-v3")
    assert BLOCK == 11_507_286_016
    assert p["transformer block (MLA + MoE)"] == BLOCK
    assert p["projection M (2h x h)"] == 102_760_448
    assert sum(p.values()) == BLOCK + 102_760_448 + 21_504 + 2 * 926_679_040
    assert 13.0e9 < sum(p.values()) < 14.5e9          # the report's "14B"
    assert 11.5e9 < BLOCK + 102_760_448 < 11.7e9      # "11.5B unique"


def test_mtp_active_params_and_fp8_bytes():
    assert mtp_active_params("deepseek-v3") == 1_614_779_392
    unique = BLOCK + 102_760_448 + 21_504
    fp8 = mtp_module_bytes("deepseek-v3")
    assert unique < fp8 < unique * 1.01 + 2 * 40_000      # ~1 byte per weight + block scales, norms/router in bf16


def test_draft_of_one_token():
    assert speculative_expected_tokens(0.85, 1) == pytest.approx(1.85)
    assert speculative_expected_tokens(0.90, 1) == pytest.approx(1.90)


def test_bad_input():
    with pytest.raises(ValueError, match="MTP"):
        mtp_module_params("llama-3-8b")
