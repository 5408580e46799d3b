"""The harness's recipe emulations (validation/recipes.py, validation/qlora.py) do what they claim.

Needs torch, transformers and peft (the validate extra); skipped otherwise. Tiny shapes: seconds.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

from validation import recipes  # noqa: E402
from validation.cases import TINY_LLAMA_GQA  # noqa: E402
from validation.measure import LiveBytesTracker, measure_case  # noqa: E402


def _tiny_case(**over):
    cfg = dict(TINY_LLAMA_GQA, hidden_size=128, intermediate_size=344, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, vocab_size=4096)
    case = {"name": "test-tiny", "config": cfg, "seq_len": 64, "micro_batch": 2, "precision": "bf16",
            "recompute": "none", "attention": "sdpa", "optimizer": "adamw", "finetune": "full", "lora": None,
            "holdout": False}
    case.update(over)
    return case


def test_host_copies_on_meta_are_not_counted():
    with FakeTensorMode():
        tr = LiveBytesTracker()
        with tr:
            a = torch.empty(1024, 1024)  # 4 MiB on the fake compute device
            host = torch.empty_like(a, device=recipes.HOST_DEVICE)
        assert tr.live == a.untyped_storage().nbytes()
        del host


def test_activation_offload_lowers_the_forward_and_both_trackers_agree():
    plain = measure_case(_tiny_case(), "cpu")
    off = measure_case(_tiny_case(activation_offload=True), "cpu")
    assert off["phase_peaks"]["forward"] < plain["phase_peaks"]["forward"]
    a, b = off["memtracker"]["step2"]["peak_bytes"], off["dispatch"]["step2"]["peak_bytes"]
    assert abs(a - b) <= 0.01 * a


def test_cuda_dropout_keeps_a_bool_mask():
    with FakeTensorMode(), recipes.cuda_dropout():
        x = torch.empty(8, 8, requires_grad=True)
        y = torch.nn.functional.dropout(x, 0.1, True)
        node = y.grad_fn
        assert node.name().startswith("NativeDropoutBackward")
        assert node._saved_result1.dtype == torch.bool
        assert torch.nn.functional.dropout(x, 0.0, True) is x


def test_liger_loss_makes_no_logits_and_keeps_its_gradients():
    case = _tiny_case(loss="chunked")
    m = measure_case(case, "cpu", use_memtracker=False)
    assert m["facts"]["param_count"] > 0
    assert m["dispatch"]["step2"]["logits_bytes"] == 0
    full = measure_case(_tiny_case(), "cpu", use_memtracker=False)
    assert m["peak_bytes"] < full["peak_bytes"]


def test_selective_policy_saves_every_other_mm():
    from torch.utils.checkpoint import CheckpointPolicy

    class Ctx:
        is_recompute = False

    policy = recipes.torchtitan_sac_policy()
    mm = torch.ops.aten.mm.default
    decisions = [policy(Ctx(), mm) for _ in range(4)]
    assert decisions == [CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_RECOMPUTE] * 2
    assert policy(Ctx(), torch.ops.aten.silu.default) == CheckpointPolicy.PREFER_RECOMPUTE


def test_unequal_head_dims_run_the_memory_efficient_kernel():
    # MLA's shapes: a 48-wide query/key head and a 32-wide value head. CUDA's sdpa cannot use flash for them and
    # runs the memory-efficient kernel, which keeps q, k, v, the output and an fp32 log-sum-exp: no s x s matrix.
    b, a, s = 1, 4, 256
    with FakeTensorMode():
        q, k = (torch.empty(b, a, s, 48, dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
        v = torch.empty(b, a, s, 32, dtype=torch.bfloat16, requires_grad=True)
        saved = []
        with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
            with recipes.cuda_sdpa_unequal_head_dims("cpu"):
                out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        assert out.shape == (b, a, s, 32) and "EfficientAttention" in type(out.grad_fn).__name__
        assert max(t.numel() for t in saved) < s * s * a  # nothing of b x a x s x s
        plain = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)  # outside: CPU's path
        assert "EfficientAttention" not in type(plain.grad_fn).__name__
