"""The Hugging Face config.json behind each newer catalog model.

The entries are the catalog records with an "hf_config" in memlib/models/data/models.json. Each keeps the architecture fields of the repository's config.json as published
(values copied; token ids, RoPE scaling, dropout and initialisation fields left out, as
they change no tensor shape), and `source` names the repository. The catalog builds these
models with `Model.from_hf_config`, so a catalog entry and a pasted config.json of the same
repository are the same Model; validation/param_counts.py builds transformers' own class
from the same dict on the meta device and records its parameter count.

Cross-checks of the copied values (besides the parameter counts, which must equal
transformers'): the vendors' published totals, asserted in tests/test_models_families.py
(Llama 3.1 8.03B/70.6B/405B, Qwen3-235B-A22B 235B total 22B active, Mixtral 46.7B/12.9B,
DeepSeek-V3 671B with 36.6B activated excluding the input embedding, gpt-oss 20.9B/3.61B and
116.8B/5.13B, Llama 4 Scout 17B active, Maverick 400B, Phi-4 14.7B).
"""

from __future__ import annotations

from memlib.models.catalog import _RAW

# name -> {"source": ..., "config": the config.json dict}, in catalog order: the catalog records of
# memlib/models/data/models.json that carry an "hf_config".
HF_CONFIGS: dict[str, dict] = {r["name"]: {"source": r["source"], "config": r["hf_config"]}
                               for r in _RAW["models"] if "hf_config" in r}
