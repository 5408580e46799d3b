"""memlib.models.families: one record per model family, which the config reader and the training modules read
(issue 44): every record has its reader, wrappers take their text model's traits, the training and serving
modules ask the record rather than test model_type, and a new record of a known shape is all a family needs."""

import ast
import dataclasses
from pathlib import Path

import pytest

import memlib
from memlib.models import catalog, families, hf_defaults
from memlib.models.families import FAMILIES, PLAIN, Family, family

ROOT = Path(__file__).resolve().parents[1]


def test_every_family_has_its_reader():
    for t, f in FAMILIES.items():
        if f.wraps:
            assert not FAMILIES[f.wraps].wraps, t
        else:
            assert families.reader_of(t) in catalog._READERS, t


def test_wrapper_takes_its_text_models_traits():
    assert family("gemma3") is family("gemma3_text")
    assert family("llama4") is family("llama4_text") and family("llama4").every_expert
    assert family("gpt") is PLAIN and family("gpt2") is PLAIN  # the GPT-style models: their fields say it all


def test_derived_tables_follow_the_records():
    assert list(catalog.HF_TYPES) == list(FAMILIES)
    assert {t for t, f in FAMILIES.items() if not f.wraps} == set(hf_defaults.HF_DEFAULTS)
    for t, f in FAMILIES.items():
        assert catalog.HF_TYPES[t]["prefix"] == f.prefix


def _model_type_tests(path: Path) -> list[str]:
    """Lines of `path` that read .model_type outside a message (an f-string)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    in_message = {id(n) for s in ast.walk(tree) if isinstance(s, ast.JoinedStr) for n in ast.walk(s)}
    return [f"{path.name}:{n.lineno}" for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and n.attr == "model_type" and id(n) not in in_message]


@pytest.mark.parametrize("package", ["training", "serving"])
def test_training_and_serving_ask_the_family_record(package):
    # A family's behaviour is a trait of its record (memlib/models/families.py), never a test of its model_type
    # spread over the modules (issue 44 found 21 such tests in four training modules).
    found = [hit for p in sorted((ROOT / "memlib" / package).glob("*.py")) for hit in _model_type_tests(p)]
    assert found == []


def test_the_check_finds_a_model_type_test(tmp_path):
    p = tmp_path / "m.py"
    p.write_text('def f(m):\n    if m.model_type.startswith("gemma"):\n        raise ValueError(f"{m.model_type}")\n')
    assert _model_type_tests(p) == ["m.py:2"]


def test_a_new_record_of_a_known_shape_is_enough(monkeypatch):
    # A family whose layers are LLaMA's under another model_type: one record naming the llama reader. The tables
    # catalog.HF_TYPES and hf_defaults.HF_DEFAULTS are built from the records when memlib is imported; here the
    # record is added afterwards, so the test rebuilds them as the import would.
    clone = Family("llama_clone", "Llama", 2048, dict(FAMILIES["llama"].defaults), reader="llama")
    records = {**FAMILIES, clone.model_type: clone}
    monkeypatch.setattr(families, "FAMILIES", records)
    monkeypatch.setattr(catalog, "HF_TYPES", {t: f.hf_type() for t, f in records.items()})
    monkeypatch.setattr(hf_defaults, "HF_DEFAULTS", {t: dict(f.defaults) for t, f in records.items() if f.defaults})
    config = {"model_type": "llama_clone", "architectures": ["LlamaForCausalLM"], "hidden_size": 64,
              "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128}
    m = memlib.Model.from_hf_config(config)
    # By hand, with LlamaConfig's defaults (vocab_size 32000, num_key_value_heads = heads, untied head):
    # embedding 32000 x 64 = 2,048,000; per layer q, k, v, o 4 x 64 x 64 = 16,384, gate/up/down 3 x 64 x 128 =
    # 24,576, two norms 128: 41,088, x 2 layers = 82,176; final norm 64; lm_head 2,048,000. Total 4,178,240.
    assert m.model_type == "llama_clone" and m.num_params == 4_178_240
    est = memlib.estimate_training(m, seq_len=256, micro_batch=1)
    plain = memlib.estimate_training(dataclasses.replace(m, model_type="llama"), seq_len=256, micro_batch=1)
    assert est.peak_bytes == plain.peak_bytes  # a record without traits: LLaMA's layers
    with pytest.raises(ValueError, match="'llama_clone' is a dense model"):
        memlib.Model.from_hf_config({**config, "num_local_experts": 8})
