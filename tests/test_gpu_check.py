"""validation/gpu_check.py: plans what a GPU machine runs, refuses cleanly without CUDA, and
its published-setup builder and loop work (run here on CPU with a tiny model, in the
validation venv; the measurement itself needs CUDA)."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest

from validation import gpu_check
from validation.cases import ALL_CASES, TINY_LLAMA

ROOT = Path(__file__).resolve().parents[1]
ROWS = {r["id"]: r for r in gpu_check.load_published()}


def test_all_plans_every_unsharded_case_and_every_runnable_published_row():
    jobs = gpu_check.plan([c["name"] for c in ALL_CASES], list(ROWS))
    run = {j["name"] for j in jobs if j["skip"] is None}
    assert {c["name"] for c in ALL_CASES} <= run
    for rid, row in ROWS.items():
        job = next(j for j in jobs if j["name"] == rid)
        if not row["memlib"]["expressible"]:
            assert job["skip"].startswith("not expressible")
        elif row["kind"] == "inference":
            assert "inference" in job["skip"]
        elif row["setup"]["num_gpus"] > 1:
            assert job["skip"] == f"needs {row['setup']['num_gpus']} GPUs ({row['setup']['sharding']})"
        else:
            assert job["skip"] is None, (rid, job["skip"])
            assert job["est_s"] > 0


def test_quick_is_short_and_runs_qlora_and_lora():
    jobs = gpu_check.plan(gpu_check.QUICK_HARNESS, gpu_check.QUICK_PUBLISHED)
    assert all(j["skip"] is None for j in jobs)
    assert sum(j["est_s"] for j in jobs) < 5 * 60
    kinds = {j["spec"].get("finetune") for j in jobs if j["kind"] == "published"}
    assert {"full", "lora", "qlora"} <= kinds


def test_published_spec_reads_the_row():
    spec = gpu_check.published_spec(ROWS["litgpt-2023-llama-2-7b-qlora-nf4-mb1"])
    assert spec["finetune"] == "qlora" and spec["double_quant"] is False
    assert spec["lora"] == {"r": 8, "alpha": 16, "dropout": 0.05, "targets": ["q_proj", "v_proj"],
                            "adapter_dtype": "bf16"}
    assert (spec["seq_len"], spec["micro_batch"], spec["grad_accum"], spec["grad_accum_run"]) == (1304, 1, 128, 2)
    assert spec["config"]["hidden_size"] == 4096 and spec["loss"] == "chunked-head"


def test_unknown_names_and_no_selection_exit_2():
    assert gpu_check.main(["--case", "no-such-case", "--dry-run"]) == 2
    assert gpu_check.main(["--published", "no-such-row", "--dry-run"]) == 2
    assert gpu_check.main([]) == 2


def test_dry_run_lists_jobs(capsys):
    assert gpu_check.main(["--dry-run", "--quick"]) == 0
    out = capsys.readouterr().out
    for name in gpu_check.QUICK_HARNESS + gpu_check.QUICK_PUBLISHED:
        assert name in out
    assert "estimated" in out


def test_refuses_without_cuda():
    """No torch (the test venv) or torch without CUDA (the validation venv): exit 2, nothing written."""
    try:
        import torch
        if torch.cuda.is_available():
            pytest.skip("a CUDA GPU is present: the refusal does not apply")
    except ImportError:
        pass
    before = (ROOT / "validation" / "results_cuda.json").exists()
    p = subprocess.run([sys.executable, "-m", "validation.gpu_check", "--quick", "--write"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "nothing measured" in p.stderr
    assert (ROOT / "validation" / "results_cuda.json").exists() == before


def _tiny_spec(row_id: str) -> dict:
    spec = gpu_check.published_spec(ROWS[row_id])
    spec["config"] = dict(copy.deepcopy(TINY_LLAMA), hidden_size=64, intermediate_size=172, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, vocab_size=512)
    spec["seq_len"], spec["micro_batch"] = 200, 2  # 200 tokens: two lm_head chunks of the chunked loss
    return spec


@pytest.mark.parametrize("row_id", ["litgpt-2023-llama-2-7b-lora-mb1", "litgpt-hub-tinyllama-full-mb4",
                                    "torchtune-llama-3.2-3b-full-packed"])
def test_published_builder_and_loop_run_on_cpu(row_id):
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("peft")
    spec = _tiny_spec(row_id)
    model, opt, ids = gpu_check.build_published(spec, device="cpu")
    phases = []
    gpu_check.train_published(model, opt, ids, spec, "cpu", lambda step, name: phases.append((step, name)))
    per_step = ["forward", "backward"] * spec["grad_accum_run"] + ["optimizer"]
    assert phases == [(0, p) for p in per_step] + [(1, p) for p in per_step]
    assert opt.state, "the optimizer stepped"
    assert opt.defaults["foreach"] is (spec["optimizer_impl"] == "foreach")
    if spec["finetune"] == "lora":
        lora = [p for n, p in model.named_parameters() if "lora_" in n]
        assert lora and all(p.dtype == torch.bfloat16 for p in lora)  # adapter_dtype bf16 (LitGPT)
        assert {p.dtype for n, p in model.named_parameters() if "lora_" not in n} == {torch.bfloat16}
        drops = [m.p for n, m in model.named_modules() if isinstance(m, torch.nn.Dropout) and "lora_dropout" in n]
        assert drops and set(drops) == {0.05}
    else:
        assert {p.dtype for p in model.parameters()} == {torch.bfloat16}


@pytest.mark.parametrize("backend", ["bitsandbytes", "lightning-bitsandbytes<0.43.2"])
def test_qlora_builder_quantizes_every_decoder_projection(backend):
    """bitsandbytes NF4 on every decoder Linear (double quantization as the row says), lm_head and
    embeddings 16-bit, bf16 adapters; two steps run (bitsandbytes' CPU backend). Lightning's
    BitsandbytesPrecision (LitGPT's rows): lm_head in NF4 too, every weight quantized from fp16."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("peft")
    bnb = pytest.importorskip("bitsandbytes")
    spec = _tiny_spec("litgpt-2023-llama-2-7b-qlora-nf4-mb1")
    spec["config"]["intermediate_size"] = 192  # 4-bit blocks of 64
    assert spec["qlora_backend"] == "lightning-bitsandbytes<0.43.2"  # what the row says LitGPT ran
    spec["qlora_backend"] = backend
    model, opt, ids = gpu_check.build_published(spec, device="cpu")
    base = model.get_base_model()
    projections = [m for n, m in base.named_modules()
                   if n.split(".")[-1] in ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")]
    assert len(projections) == 7 * spec["config"]["num_hidden_layers"]
    for m in projections:
        layer = m.get_base_layer() if hasattr(m, "get_base_layer") else m
        assert isinstance(layer, bnb.nn.Linear4bit)
        assert layer.weight.quant_type == "nf4" and layer.weight.compress_statistics is False
        assert layer.weight.quant_state.dtype == (torch.float16 if backend.startswith("lightning") else torch.bfloat16)
    head = base.get_output_embeddings()
    if backend.startswith("lightning"):
        assert isinstance(head, bnb.nn.Linear4bit) and head.weight.quant_state.dtype == torch.float16
    else:
        assert type(head) is torch.nn.Linear and head.weight.dtype == torch.bfloat16
    assert all(p.dtype == torch.bfloat16 for n, p in model.named_parameters() if "lora_" in n)
    gpu_check.train_published(model, opt, ids, spec, "cpu", lambda step, name: None)
    assert opt.state


class _FakeAllocator:
    """Stands in for torch.cuda's counters on CPU: every read is higher than the last, so
    each phase's recorded peak is the read at its close."""

    def __init__(self):
        self.n = 0

    def tick(self, *a, **k):
        self.n += 1
        return self.n * 1000

    def install(self, monkeypatch, cuda):
        for name in ("max_memory_allocated", "memory_allocated"):
            monkeypatch.setattr(cuda, name, self.tick)
        monkeypatch.setattr(cuda, "max_memory_reserved", lambda *a, **k: self.n * 1000 + 512)
        monkeypatch.setattr(cuda, "memory_stats", lambda *a, **k: {"active_bytes.all.peak": self.n * 1000})
        for name in ("synchronize", "reset_peak_memory_stats", "empty_cache"):
            monkeypatch.setattr(cuda, name, lambda *a, **k: None)
        monkeypatch.setattr(cuda, "get_device_name", lambda *a, **k: "fake")


@pytest.mark.parametrize("kind", ["harness", "published"])
def test_run_job_records_the_second_step_per_phase(monkeypatch, kind):
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("peft")
    _FakeAllocator().install(monkeypatch, torch.cuda)
    if kind == "harness":
        spec = dict(ALL_CASES[0], config=_tiny_spec("litgpt-hub-tinyllama-full-mb4")["config"], seq_len=64)
    else:
        spec = _tiny_spec("litgpt-2023-llama-2-7b-lora-mb1")
    r = gpu_check.run_job({"kind": kind, "name": "t", "spec": spec}, device="cpu")
    assert set(r["phase_peaks"]) == {"forward", "backward", "optimizer"}
    assert r["peak_bytes"] == max(r["phase_peaks"].values()) and r["peak_phase"] in r["phase_peaks"]
    assert r["peak_reserved_bytes"] >= r["peak_bytes"] and r["step1_peak_bytes"] < r["peak_bytes"]
    assert r["facts"]["trainable_count"] > 0 and r["device_name"] == "fake"
    assert ("live_at_forward_end" in r) == (kind == "harness")
