"""memlib's parameter counts equal transformers' own, for every catalog model and config variant.

validation/param_counts.py builds transformers' model class from each config on the meta
device and records sum(p.numel() for p in model.parameters()); this test (no torch) asserts
memlib counts exactly the same. Re-run the script after changing a config or a family:
    /work/venvs/validate/bin/python -m validation.param_counts --write
"""

import json
from pathlib import Path

import pytest

from memlib import Model, get_model, list_models
from memlib.models.hf_configs import HF_CONFIGS

RECORD = json.loads((Path(__file__).parents[1] / "validation" / "param_counts.json").read_text())
ROWS = RECORD["models"]


def test_recorded_with_versions():
    meta = RECORD["metadata"]
    assert meta["transformers"].startswith("5.") and meta["torch"] and meta["device"] == "meta"


def test_every_catalog_model_is_recorded():
    recorded = {n for n, r in ROWS.items() if r["kind"] == "catalog"}
    assert recorded == set(list_models())


@pytest.mark.parametrize("name", sorted(HF_CONFIGS))
def test_recorded_config_is_the_catalog_config(name):
    # a changed config in memlib/models/data/models.json must be re-measured, not silently compared to an old count
    assert ROWS[name]["config"] == json.loads(json.dumps(HF_CONFIGS[name]["config"]))


@pytest.mark.parametrize("name", sorted(ROWS))
def test_memlib_equals_transformers(name):
    row = ROWS[name]
    m = get_model(name) if row["kind"] == "catalog" else Model.from_hf_config(row["config"], name=name)
    assert m.num_params == row["param_count"], (name, row["class"])


@pytest.mark.parametrize("name", ["gemma-3-27b", "llama-4-scout", "llama-4-maverick"])
def test_multimodal_vision_tower_is_what_is_left_out(name):
    # the text model is counted; the recorded multimodal class is larger by the vision tower + projector
    row = ROWS[name]
    left_out = row["multimodal_param_count"] - row["param_count"]
    assert left_out > 0
    assert get_model(name).omitted  # and the Model says so
    if name == "gemma-3-27b":
        # Gemma 3 Technical Report, Table 1: the 27B's vision encoder has 417M parameters (SigLIP);
        # the rest of the difference is the projector (1152 x 5376 + a norm, about 6M)
        assert 417e6 <= left_out <= 417e6 + 7e6
