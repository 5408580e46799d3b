"""Illustrative LLaMA-like shapes between and beyond the catalog's models (the search for the largest
one that fits a GPU under a given recipe is memlib.hardware.fit.largest_size_that_fits).

The catalog has real checkpoints only (0.5B, 7-8B, 13B, 33B, 65-70B); questions such as
"the largest model a 24 GB card can fully fine-tune" fall between them. `ladder()` fills
the gaps with LLaMA-1 blocks (SwiGLU MLP, RMSNorm, RoPE, 128-wide heads, 32,000-token
vocabulary, untied head) at published widths and depths. These are *shapes*, not
checkpoints: notebooks label them "LLaMA-like".
"""

from __future__ import annotations

import math

from memlib import _compat
from memlib._checks import positive_float, positive_int, show
from memlib.models import Model

# (hidden, layers, where the width/depth pair is published)
LADDER_SHAPES: tuple[tuple[int, int, str], ...] = (
    (1024, 24, "GPT-3 350M, Brown et al. 2020, Table 2.1"),
    (1536, 24, "GPT-3 760M, Brown et al. 2020, Table 2.1"),
    (2048, 22, "TinyLlama 1.1B, Zhang et al. 2024, Table 1"),
    (2048, 24, "GPT-3 1.3B, Brown et al. 2020, Table 2.1"),
    (2560, 32, "GPT-3 2.7B, Brown et al. 2020, Table 2.1"),
    (3200, 26, "OpenLLaMA 3B, openlm-research/open_llama_3b config.json"),
    (4096, 32, "LLaMA 7B, Touvron et al. 2023, Table 2"),
    (5120, 40, "LLaMA 13B, Touvron et al. 2023, Table 2"),
    (6144, 44, "GPT-NeoX-20B, Black et al. 2022, Table 1"),
    (6656, 60, "LLaMA 33B, Touvron et al. 2023, Table 2"),
    (8192, 60, "Falcon-40B, Almazrouei et al. 2023, Table 1"),
    (8192, 80, "LLaMA 65B, Touvron et al. 2023, Table 2"),
    (12288, 96, "GPT-3 175B, Brown et al. 2020, Table 2.1"),
)


def llama_ffn_size(hidden: int, multiple_of: int = 256) -> int:
    """SwiGLU width of LLaMA-1: int(2/3 * 4h) rounded up to a multiple of 256
    (facebookresearch/llama, llama/model.py, FeedForward.__init__)."""
    hidden = positive_int("hidden", hidden)
    d = int(2 * 4 * hidden / 3)
    return multiple_of * -(-d // multiple_of)


def llama_like(hidden: int, layers: int, vocab_size: int = 32000, head_dim: int = 128,
               name: str | None = None, source: str = "") -> Model:
    """A LLaMA-1-style model of the given width and depth (heads of `head_dim`)."""
    hidden, layers = positive_int("hidden", hidden), positive_int("layers", layers)
    head_dim, vocab_size = positive_int("head_dim", head_dim), positive_int("vocab_size", vocab_size)
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise ValueError(f"name must be a non-empty string (or None: named by its size), got {show(name)}")
    if not isinstance(source, str):
        raise ValueError(f"source must be a string (where the shape comes from), got {show(source)}")
    if hidden % head_dim:
        raise ValueError(f"hidden {hidden} is not a multiple of head_dim {head_dim}")
    m = Model(name or "llama-like", hidden_size=hidden, num_layers=layers, num_heads=hidden // head_dim,
              intermediate_size=llama_ffn_size(hidden), vocab_size=vocab_size, max_position_embeddings=4096,
              source=source or "LLaMA-1 block at an illustrative width/depth (memlib.models.llama_like)")
    if name is None:
        m = m.with_(name=f"llama-like-{m.num_params / 1e9:.1f}b")
    return m


def ladder() -> list[Model]:
    """The LLaMA-like ladder, smallest first (LADDER_SHAPES)."""
    return [llama_like(h, L, source=f"LLaMA-1 block at the width/depth of {src}") for h, L, src in LADDER_SHAPES]


def llama_like_of_size(num_params: float) -> Model:
    """A LLaMA-like shape of about `num_params` parameters, between the ladder's rungs: width and
    depth interpolated log-linearly in the parameter count along LADDER_SHAPES (hidden rounded to
    a multiple of 128, at least one layer), so a limit can be searched continuously, not rung by rung."""
    num_params = positive_float("num_params", num_params)  # not a bool, a string, nan or inf
    rungs = sorted(((llama_like(h, L).num_params, h, L) for h, L, _ in LADDER_SHAPES))
    x = math.log(num_params)
    lo = max((r for r in rungs if math.log(r[0]) <= x), default=rungs[0])
    hi = min((r for r in rungs if math.log(r[0]) >= x), default=rungs[-1])
    f = 0.0 if lo[0] == hi[0] else (x - math.log(lo[0])) / (math.log(hi[0]) - math.log(lo[0]))
    h = math.exp((1 - f) * math.log(lo[1]) + f * math.log(hi[1]))
    layers = math.exp((1 - f) * math.log(lo[2]) + f * math.log(hi[2]))
    if x < math.log(rungs[0][0]) or x > math.log(rungs[-1][0]):  # beyond the ladder: scale depth alone
        layers = lo[2] * num_params / lo[0]
    hidden = max(128, 128 * round(h / 128))
    layers = max(1, round(layers))
    # depth is the finer control: the count nearest the target within a few layers of the interpolation
    best = min(range(max(1, layers - 3), layers + 4),
               key=lambda L: abs(llama_like(hidden, L).num_params - num_params))
    return llama_like(hidden, best, source="LLaMA-1 block at a width/depth interpolated along the ladder")


# the searches moved up to memlib.hardware.fit (issue 44: a model shape does not know about GPUs)
__getattr__ = _compat.moved_attributes(__name__, {"largest_that_fits": "memlib.hardware.fit",
                                                  "largest_size_that_fits": "memlib.hardware.fit"})
