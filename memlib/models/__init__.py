"""Model architectures: the Model dataclass, the catalog of real checkpoints, the reader of
Hugging Face config.json files, and LLaMA-like shapes between catalog sizes."""

from memlib.models.catalog import (
    ACTIVATIONS, ALIASES, ARCHITECTURE_SUFFIXES, CATALOG, HEADS, HF_TYPES, LAYER_TYPES, MLA_FIELDS, MLP_KINDS,
    MOE_FIELDS, NORM_KINDS, NORM_LAYOUTS, POSITION_KINDS, QK_NORMS, QUANT_METHODS, RELEASED_FORMATS, Model, Tensor,
    get_model, list_models, suggest_models,
)

__all__ = ["Model", "Tensor", "CATALOG", "ALIASES", "get_model", "list_models", "suggest_models"]
