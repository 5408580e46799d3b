"""FLOPs per token of a model's forward and backward: properties of its shape, needed by the training and
serving estimates as well as by the cost of a run (memlib.cost.timing builds the step time on them).

Chowdhery et al. 2022 (PaLM), App. B: 6N + 12·L·H·Q·T per token for training, N the parameters a token
passes through (Kaplan et al. 2020's 6N rule; the active parameters of a mixture of experts).
"""

from __future__ import annotations

from memlib._checks import positive_int, show
from memlib.models.catalog import Model, get_model


def _model(model, fn: str) -> Model:
    if isinstance(model, Model):
        return model
    if isinstance(model, str):
        return get_model(model)
    raise ValueError(f"{fn} needs a catalog model name or a memlib.Model, got {show(model)}")


def active_params(model) -> int:
    """Parameters one token passes through: all of them for a dense model, `num_active_params`
    for a mixture of experts (the router's top-k experts and the shared weights): the N of the 6N
    rule (Kaplan et al. 2020; DeepSeek-V3 report: 37B of 671B activated for each token)."""
    model = _model(model, "active_params")
    return getattr(model, "num_active_params", model.num_params)


def attention_flops_per_token(model, seq_len: int) -> float:
    """12·L·H·Q·T: the attention scores and their weighted sum, forward and backward, per token
    (Chowdhery et al. 2022, PaLM, App. B; no discount for the causal mask)."""
    model = _model(model, "attention_flops_per_token")
    seq_len = positive_int("seq_len", seq_len)
    return float(12 * model.num_layers * model.num_heads * model.head_dim * seq_len)


def forward_flops_per_token(model, seq_len: int) -> float:
    """The forward's share of flops_per_token: 2N + 4·L·H·Q·T (a third of 6N + 12·L·H·Q·T)."""
    return 2 * active_params(model) + attention_flops_per_token(model, seq_len) / 3
