"""The catalogs are data (issue 24): every record of memlib/models/data/models.json and
memlib/hardware/data/gpus.json has the fields its loader needs, with the right types, in the
units the file declares, and a source. Adding a GPU or a model is adding a record; these checks
say what a new record lacks. Each checker is also run on broken records, so it can fail.
"""

from __future__ import annotations

import copy
import json
import numbers
import re
from dataclasses import fields
from importlib import resources

import pytest

from memlib.hardware import gpus
from memlib.models import catalog

GPU_DOC = json.loads(resources.files("memlib.hardware").joinpath("data", "gpus.json").read_text("utf-8"))
MODEL_DOC = json.loads(resources.files("memlib.models").joinpath("data", "models.json").read_text("utf-8"))


# --- GPUs ---------------------------------------------------------------------------------------
def _num(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


# field -> (kind, nullable, plausible range in the file's unit). The ranges catch a unit slip:
# bytes or MB typed where GiB belong, FLOP/s where TFLOP/s belong, MB/s where GB/s belong.
GPU_FIELDS = {
    "name": ("str", False, None),
    "display_name": ("str", False, None),
    "memory_gib": ("int", False, (1, 1024)),
    "supports_bf16": ("bool", False, None),
    "compute_capability": ("str", True, None),
    "fp16_tflops": ("num", True, (1, 100_000)),
    "bf16_tflops": ("num", True, (1, 100_000)),
    "fp8_tflops": ("num", True, (1, 100_000)),
    "int8_tops": ("num", True, (1, 100_000)),
    "memory_bandwidth_gb_per_s": ("int", False, (50, 100_000)),
    "interconnect": ("str", False, None),
    "interconnect_gb_per_s": ("int", False, (1, 100_000)),
    "host_link": ("str", False, None),
    "reported_total_mib": ("int", True, (1024, 1024 * 1024)),
    "torch_total_mib": ("int", True, (1024, 1024 * 1024)),
    "torch_total_source": ("str", True, None),
    "source": ("str", False, None),
    "aliases": ("list", True, None),
    "notes": ("dict", True, None),
}
GPU_REQUIRED = {"name", "display_name", "memory_gib", "supports_bf16", "fp16_tflops", "bf16_tflops",
                "memory_bandwidth_gb_per_s", "interconnect", "interconnect_gb_per_s", "host_link", "source"}
_TYPE_OK = {"str": lambda v: isinstance(v, str) and v.strip() != "", "int": _int, "num": _num,
            "bool": lambda v: isinstance(v, bool), "list": lambda v: isinstance(v, list),
            "dict": lambda v: isinstance(v, dict)}


def gpu_record_problems(rec: dict, doc: dict = GPU_DOC) -> list[str]:
    """What is wrong with one GPU record (empty: nothing)."""
    out = [f"missing {f}" for f in sorted(GPU_REQUIRED - set(rec))]
    out += [f"unknown field {f} (a typo, or a field the loader does not read)" for f in sorted(set(rec) - set(GPU_FIELDS))]
    for f, v in rec.items():
        if f not in GPU_FIELDS or (v is None and GPU_FIELDS[f][1]):
            continue
        kind, _, bounds = GPU_FIELDS[f]
        if not _TYPE_OK[kind](v):
            out.append(f"{f}={v!r} is not a {kind}")
        elif bounds and not bounds[0] <= v <= bounds[1]:
            out.append(f"{f}={v!r} outside {bounds} {doc['units'].get(f, '')}: a unit slip?")
        elif kind in ("int", "num") and f not in doc["units"]:
            out.append(f"{f}: its unit is not in the file's units table")
    if out:
        return out
    if rec["name"] != gpus._normalise(rec["name"]):
        out.append(f"name {rec['name']!r} is not in normal form ({gpus._normalise(rec['name'])!r})")
    for a in rec.get("aliases") or ():
        if not isinstance(a, str) or a != gpus._normalise(a):
            out.append(f"alias {a!r} is not in normal form: get_gpu could never reach it")
    if rec["supports_bf16"] != (rec["bf16_tflops"] is not None):
        out.append("bf16_tflops must be null exactly when supports_bf16 is false")
    out += _compute_capability_problems(rec)
    if rec["host_link"] not in doc["host_links"]:
        out.append(f"host_link {rec['host_link']!r} is not a row of host_links")
    capacity_mib = rec["memory_gib"] * 1024
    for f in ("reported_total_mib", "torch_total_mib"):
        # the driver (and ECC on GDDR6: 1/16) keeps some back; nothing reports more than the capacity
        if rec.get(f) is not None and not 0.85 * capacity_mib <= rec[f] <= capacity_mib:
            out.append(f"{f}={rec[f]} is not within 85-100% of memory_gib {rec['memory_gib']} ({capacity_mib} MiB)")
    if rec.get("torch_total_mib") is not None and not str(rec.get("torch_total_source", "")).startswith(
            ("exact:", "rounded:", "estimated:")):
        out.append("torch_total_source must start with 'exact:', 'rounded:' or 'estimated:'")
    if len(rec["source"]) < 20:
        out.append(f"source {rec['source']!r} is too short to name a datasheet")
    return out


def _compute_capability_problems(rec: dict) -> list[str]:
    """compute_capability is 'major.minor' (null only for a GPU without CUDA: AMD's), and agrees with the
    formats the record claims: bf16 tensor cores exactly from 8.0 (Ampere) on, fp8 exactly from 8.9 (Ada,
    Hopper) on (the units table of gpus.json cites torch's checks)."""
    cc = rec.get("compute_capability")
    if cc is None:
        amd = rec["display_name"].startswith("AMD")
        return [] if amd else ["compute_capability missing: every NVIDIA GPU has one (developer.nvidia.com/cuda-gpus)"]
    if not re.fullmatch(r"\d{1,2}\.\d", cc):
        return [f"compute_capability {cc!r} is not 'major.minor' (e.g. '8.0')"]
    sm = tuple(int(x) for x in cc.split("."))
    out = []
    if rec["supports_bf16"] != (sm >= (8, 0)):
        out.append(f"supports_bf16={rec['supports_bf16']} but compute capability {cc}: bf16 needs 8.0 or newer")
    if (rec.get("fp8_tflops") is not None) != (sm >= (8, 9)):
        out.append(f"fp8_tflops={rec.get('fp8_tflops')} but compute capability {cc}: fp8 needs 8.9 or newer")
    return out


@pytest.mark.parametrize("rec", GPU_DOC["gpus"], ids=lambda r: r.get("name", "?"))
def test_every_gpu_record_is_complete(rec):
    assert gpu_record_problems(rec) == []


def test_gpu_names_and_aliases_are_unique():
    names = [r["name"] for r in GPU_DOC["gpus"]]
    aliases = [a for r in GPU_DOC["gpus"] for a in r.get("aliases", [])]
    assert len(set(names)) == len(names)
    assert len(set(aliases)) == len(aliases)
    assert not set(names) & set(aliases)


def test_host_links_have_a_rate_and_a_source():
    for name, row in GPU_DOC["host_links"].items():
        assert set(row) == {"gb_per_s_per_direction", "source"}, name
        assert _int(row["gb_per_s_per_direction"]) and 1 <= row["gb_per_s_per_direction"] <= 10_000, name
        assert isinstance(row["source"], str) and len(row["source"]) >= 20, name


def _good_gpu() -> dict:
    # a card described the way a newcomer would add one (figures of an A100 80GB PCIe)
    return {"name": "a100-80gb-pcie", "display_name": "NVIDIA A100 PCIe 80GB", "aliases": ["a100-pcie"],
            "memory_gib": 80, "supports_bf16": True, "fp16_tflops": 312.0, "bf16_tflops": 312.0,
            "memory_bandwidth_gb_per_s": 1935, "interconnect": "NVLink bridge (pairs)",
            "interconnect_gb_per_s": 600, "host_link": "PCIe 4.0 x16", "compute_capability": "8.0",
            "source": "NVIDIA A100 Tensor Core GPU datasheet (r4), PCIe 80GB column"}


def test_adding_a_gpu_is_adding_a_record():
    rec = _good_gpu()
    assert gpu_record_problems(rec) == []
    g = gpus._gpu_from_record(rec)
    assert g.memory_bytes == 80 * 2**30 and g.memory_bandwidth_bytes_per_s == 1935 * 10**9
    assert g.interconnect_bytes_per_s == 600 * 10**9 and g.fp8_tflops is None


@pytest.mark.parametrize("change, problem", [
    ({"memory_gib": 80 * 2**30}, "unit slip"),                  # bytes typed where GiB belong
    ({"memory_bandwidth_gb_per_s": 1.935}, "not a int"),        # TB/s typed where GB/s belong
    ({"fp16_tflops": 312e12}, "unit slip"),                     # FLOP/s where TFLOP/s belong
    ({"memory_gib": "80"}, "not a int"),
    ({"supports_bf16": 1}, "not a bool"),
    ({"bf16_tflops": None}, "null exactly when"),
    ({"memory_gb": 80}, "unknown field memory_gb"),
    ({"host_link": "PCIe 6.0 x16"}, "not a row of host_links"),
    ({"name": "A100 80GB PCIe"}, "normal form"),
    ({"aliases": ["A100-PCIE"]}, "normal form"),
    ({"reported_total_mib": 90000}, "85-100%"),
    ({"torch_total_mib": 80000}, "torch_total_source must start"),
    ({"source": ""}, "not a str"),
    ({"compute_capability": "sm_80"}, "not 'major.minor'"),
    ({"compute_capability": "7.0"}, "bf16 needs 8.0"),               # a Volta record claiming bf16
    ({"compute_capability": "8.0", "fp8_tflops": 624.0}, "fp8 needs 8.9"),  # an A100 claiming fp8
    ({"compute_capability": None}, "compute_capability missing"),
])
def test_gpu_schema_check_catches(change, problem):
    rec = {**_good_gpu(), **change}
    assert any(problem in p for p in gpu_record_problems(rec)), gpu_record_problems(rec)


def test_compute_capability_of_known_cards():
    # NVIDIA's CUDA GPUs list (developer.nvidia.com/cuda-gpus): V100 7.0, T4 7.5, A100 8.0, RTX 3090 8.6,
    # RTX 4090 / L40S 8.9, H100 9.0; the gates: bf16 from 8.0 (Ampere), fp8 from 8.9 (Ada) / 9.0 (Hopper)
    want = {"v100-32gb": (7, 0), "t4": (7, 5), "a100-80gb": (8, 0), "rtx-3090": (8, 6), "rtx-4090": (8, 9),
            "l40s": (8, 9), "h100-80gb": (9, 0), "mi300x": None}
    assert {n: gpus.get_gpu(n).sm for n in want} == want
    fp16_only = [g.name for g in gpus.list_gpus() if g.sm is not None and g.sm < (8, 0)]
    assert fp16_only == ["v100-16gb", "v100-32gb", "v100-pcie-32gb", "t4"]


def test_missing_gpu_fields_are_named():
    rec = _good_gpu()
    del rec["source"], rec["host_link"]
    assert gpu_record_problems(rec) == ["missing host_link", "missing source"]


# --- models -------------------------------------------------------------------------------------
_MODEL_FIELDS = {f.name: f for f in fields(catalog.Model)}
ARCH_REQUIRED = {"hidden_size", "num_layers", "num_heads", "intermediate_size", "vocab_size",
                 "max_position_embeddings"}


def _model_key(name: str) -> str:  # what get_model does to a user's spelling
    return name.strip().lower().replace("_", "-").replace(" ", "-")


def model_record_problems(rec: dict, doc: dict = MODEL_DOC) -> list[str]:
    """What is wrong with one model record (empty: nothing)."""
    out = [f"missing {f}" for f in ("name", "source") if f not in rec]
    out += [f"unknown field {f}" for f in sorted(set(rec) - {"name", "source", "architecture", "hf_config", "note"})]
    if ("architecture" in rec) == ("hf_config" in rec):
        out.append("give exactly one of architecture (Model fields) or hf_config (a config.json)")
    if out:
        return out
    if not isinstance(rec["name"], str) or not rec["name"] or _model_key(rec["name"]) != rec["name"]:
        out.append(f"name {rec['name']!r} is not in the form get_model looks up (lower case, hyphens)")
    if not isinstance(rec["source"], str) or len(rec["source"]) < 20:
        out.append(f"source {rec['source']!r} is too short to name a paper or a config.json")
    if "architecture" in rec:
        out += _architecture_problems(rec["architecture"], doc)
    else:
        out += _hf_config_problems(rec)
    return out


def _architecture_problems(arch, doc: dict) -> list[str]:
    if not isinstance(arch, dict):
        return [f"architecture must be an object, got {arch!r}"]
    out = [f"architecture lacks {f}" for f in sorted(ARCH_REQUIRED - set(arch))]
    for f, v in arch.items():
        if f not in _MODEL_FIELDS or f in ("name", "source", "omitted"):
            out.append(f"architecture field {f} is not a Model field")
            continue
        default = _MODEL_FIELDS[f].default
        want = int if f in ARCH_REQUIRED else type(default)
        if want is tuple:
            ok = isinstance(v, list)
        else:
            ok = isinstance(v, want) and (want is bool or not isinstance(v, bool))
        if not ok:
            out.append(f"architecture {f}={v!r} is not a {want.__name__}")
        elif want is int and f not in doc["units"]:
            out.append(f"architecture {f}: its unit is not in the file's units table")
    return out


def _hf_config_problems(rec: dict) -> list[str]:
    cfg = rec["hf_config"]
    if not isinstance(cfg, dict):
        return [f"hf_config must be an object, got {cfg!r}"]
    out = []
    if cfg.get("model_type") not in catalog.HF_TYPES:
        out.append(f"hf_config model_type {cfg.get('model_type')!r} is not a family Model.from_hf_config reads")
    arch = cfg.get("architectures")
    if not (isinstance(arch, list) and arch and all(isinstance(a, str) for a in arch)):
        out.append("hf_config needs architectures, a list of class names (it picks the output head)")
    if "huggingface.co/" not in rec["source"]:
        out.append("a config.json record's source links the repository's config.json on huggingface.co")
    return out


@pytest.mark.parametrize("rec", MODEL_DOC["models"], ids=lambda r: r.get("name", "?"))
def test_every_model_record_is_complete(rec):
    assert model_record_problems(rec) == []


def test_model_names_unique_and_aliases_point_at_models():
    names = [r["name"] for r in MODEL_DOC["models"]]
    assert len(set(names)) == len(names)
    for alias, target in MODEL_DOC["aliases"].items():
        assert alias == _model_key(alias) and alias not in names, alias
        assert target in names, (alias, target)


def test_adding_a_model_is_adding_a_record():
    # LLaMA-7B's shape (Touvron et al. 2023, Table 2: d 4096, 32 layers, 32 heads, FFN 11008,
    # vocabulary 32000) written out again: 6,738,415,616 parameters, the count Meta's checkpoint
    # holds (LLaMA model card: "7B"; the figure is 32 x 202,383,360 + 2 x 131,072,000 + 4096).
    rec = {"name": "my-llama", "source": "Touvron et al. 2023, LLaMA, Table 2",
           "architecture": {"hidden_size": 4096, "num_layers": 32, "num_heads": 32, "intermediate_size": 11008,
                            "vocab_size": 32000, "max_position_embeddings": 2048}}
    assert model_record_problems(rec) == []
    assert catalog._model_from_record(rec).num_params == 32 * 202_383_360 + 2 * 131_072_000 + 4096
    cfg = {"name": "my-qwen", "source": "config.json of Qwen/Qwen2-0.5B (https://huggingface.co/Qwen/Qwen2-0.5B)",
           "hf_config": {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 896,
                         "intermediate_size": 4864, "num_attention_heads": 14, "num_hidden_layers": 24,
                         "num_key_value_heads": 2, "vocab_size": 151936, "tie_word_embeddings": True}}
    assert model_record_problems(cfg) == []
    assert catalog._model_from_record(cfg).source.startswith("config.json of Qwen/Qwen2-0.5B")


@pytest.mark.parametrize("change, problem", [
    ({"name": "My Llama"}, "form get_model looks up"),
    ({"source": ""}, "too short"),
    ({"hf_config": {}}, "exactly one of"),
    ({"architecture": {"hidden_size": 4096}}, "lacks num_layers"),
    ({"architecture": {**dict.fromkeys(ARCH_REQUIRED, 8), "hidden_size": "4096"}}, "hidden_size='4096' is not a int"),
    ({"architecture": {**dict.fromkeys(ARCH_REQUIRED, 8), "qkv_bias": 1}}, "qkv_bias=1 is not a bool"),
    ({"architecture": {**dict.fromkeys(ARCH_REQUIRED, 8), "hidden": 8}}, "hidden is not a Model field"),
    ({"license": "MIT"}, "unknown field license"),
])
def test_model_schema_check_catches(change, problem):
    rec = {"name": "my-llama", "source": "Touvron et al. 2023, LLaMA, Table 2",
           "architecture": dict.fromkeys(ARCH_REQUIRED, 8), **change}
    assert any(problem in p for p in model_record_problems(rec)), model_record_problems(rec)


def test_hf_config_record_checks():
    rec = copy.deepcopy(next(r for r in MODEL_DOC["models"] if "hf_config" in r))
    rec["hf_config"]["model_type"] = "bert"
    rec["source"] = "a config.json somewhere, unnamed"
    problems = model_record_problems(rec)
    assert any("not a family" in p for p in problems) and any("huggingface.co" in p for p in problems)


def test_catalog_is_built_from_the_files_in_order():
    assert list(catalog.CATALOG) == [r["name"] for r in MODEL_DOC["models"]]
    assert catalog.ALIASES == MODEL_DOC["aliases"]
    assert [g.name for g in gpus.list_gpus()] == [r["name"] for r in GPU_DOC["gpus"]]


def test_a_wheel_carries_the_catalogs():
    # pyproject's package-data must name the data files, or an installed (non-editable) memlib has no catalog
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    package_data = tomllib.loads((root / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]["package-data"]
    for package, name in (("memlib.models", "models.json"), ("memlib.hardware", "gpus.json")):
        folder = root.joinpath(*package.split("."))
        assert any(p.name == name for glob in package_data.get(package, []) for p in folder.glob(glob)), package
