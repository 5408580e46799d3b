"""Issue 42: the prompt logits of transformers' generate() by release (estimate_inference transformers_version=, logits=
"all-fp32"). Boundaries: huggingface/transformers PR #31292 (num_logits_to_keep, released in v4.45.0) and the
`logits = logits.float()` of LlamaForCausalLM.forward from v4.31 (issue #30860 quotes it). Expected values by hand."""

import pytest

from memlib import estimate_inference
from memlib.serving.inference import hf_generate_logits


@pytest.mark.parametrize("version, expected", [
    ("4.31.0", "all-fp32"), ("4.40", "all-fp32"), ("4.44.2", "all-fp32"),
    ("4.45.0", "last"), ("4.46.3", "last"), ("4.57.1", "last"), ("5.0.0", "last"), ("4.45.0.dev0", "last"),
])
def test_version_boundaries(version, expected):
    assert hf_generate_logits(version) == expected


def test_all_fp32_prefill_head_by_hand():
    # llama-3-8b (V = 128256, h = 4096, head_dim 128), one 8192-token prompt, bf16 (c = 2):
    # "last": the head's moment holds the final norm output T*h*2, RoPE cos/sin 2*T*128*2, one row of logits 1*V*2
    # and generate's fp32 copy of it 4*V. "all-fp32" (4.44): every row's logits T*V*2 and their fp32 copy T*V*4.
    T, V, h = 8192, 128256, 4096
    common = T * h * 2 + 2 * T * 128 * 2
    last = estimate_inference("llama-3-8b", context_len=T, transformers_version="4.57.1")
    old = estimate_inference("llama-3-8b", context_len=T, transformers_version="4.44.2")
    assert last.moments["lm_head"] == common + V * 2 + 4 * V
    assert old.moments["lm_head"] == common + T * V * 2 + 4 * T * V
    assert old.setup.logits == "all-fp32"
    # the head is the prefill's peak under 4.44: 6 bytes per logit, 6.3 GB at 8k tokens
    assert old.breakdown["activations"] == old.moments["lm_head"]
    assert estimate_inference("llama-3-8b", context_len=T, logits="all-fp32").peak_bytes == old.peak_bytes


@pytest.mark.parametrize("kw, msg", [
    (dict(transformers_version="4.30.2"), "before 4.31 are not modelled"),
    (dict(transformers_version="four"), "is not a version"),
    (dict(transformers_version=4.44), "must be a version string"),
    (dict(transformers_version="4.44", engine="vllm"), "engine 'hf'"),
    (dict(logits="all-fp32", engine="sglang"), "engine 'hf'"),
    (dict(transformers_version="4.46", logits="all"), "contradicts"),
    (dict(logits="fp32"), "logits"),
])
def test_refusals(kw, msg):
    with pytest.raises(ValueError, match=msg):
        estimate_inference("llama-3-8b", context_len=1024, **kw)
