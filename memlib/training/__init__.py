"""estimate_training: peak memory of one training step on one GPU.

The peak is the maximum over the moments of a step, not the sum of everything ever
allocated. Where to look:

    options.py   the options, checked (TrainingSetup)
    layout.py    which tensors one GPU holds (pipeline stage, tensor-parallel split, adapters)
    terms.py     the named terms, one function each with its source
    step.py      the moments of a step (forward at the loss, backward top and bottom, optimizer)
    estimate.py  Estimate and Moment: the result
    memlib/training/activations.py  the per-layer ledger of saved activations
"""

from __future__ import annotations

import inspect
from memlib._checks import plain_args

from memlib.training.estimate import BREAKDOWN_KEYS, Estimate, Moment
from memlib.training.options import (ADAPTER_DTYPES, ATTENTIONS, BASE_DTYPES, CP_ROTATES, FINETUNES, FSDP_ALIASES, LOSSES,
                                     LOSS_DTYPES, FLOAT8S,
                                     OFFLOAD_DEVICES, OFFLOADS, OPTIMIZER_IMPLS, PRECISIONS, QLORA_BACKENDS,
                                     RECOMPUTES, LAYOUTS, TrainingSetup, check_setup, resolve)
from memlib.training import option_table
from memlib.training.recipes import RECIPES, Recipe
from memlib.training.step import estimate

__all__ = ["Estimate", "Moment", "TrainingSetup", "estimate_training", "PRECISIONS", "FINETUNES", "RECOMPUTES",
           "ATTENTIONS", "OFFLOADS", "OFFLOAD_DEVICES", "FSDP_ALIASES", "BREAKDOWN_KEYS", "OPTIMIZER_IMPLS",
           "ADAPTER_DTYPES", "BASE_DTYPES", "QLORA_BACKENDS", "LOSSES", "LOSS_DTYPES", "FLOAT8S", "CP_ROTATES",
           "RECIPES", "Recipe", "LAYOUTS"]


HEADER = """Peak memory of one training step, per GPU, with its breakdown and the phase of the peak.

    estimate_training(model, seq_len=..., ...): model is a catalog name or a memlib.Model; every other keyword is
    an option of the table below (memlib.training.option_table.OPTIONS: what it accepts, its default and where that
    default comes from; the same table makes the CLI flags and the docs' option table). Each value is checked by its
    kind's validator, then the options against each other: an option set where it does not apply is a ValueError
    naming it, never ignored. The docstrings of memlib.training.terms give every formula and its source."""

FOOTER = """Also:
    recipe:    a preset of memlib.RECIPES ("hf-trainer", "torchtune", "litgpt", "torchtitan", "megatron",
               "megatron-bridge", "megatron-deepspeed", "deepspeed"): that framework's defaults; options override it.
    setup:     a TrainingSetup (TrainingSetup.create(...), or an estimate's .setup) instead of the keywords:
               estimate_training(setup), estimate_training(model, setup); keywords with it change it (setup.replace)."""

CREATE_HEADER = """A checked setup from estimate_training's options, optionally starting from a preset of memlib.RECIPES
    (explicit options override it): `TrainingSetup.create("llama-2-7b", recipe="torchtune", finetune="lora")`."""

_P = inspect.Parameter
_FIRST = (_P("model", _P.POSITIONAL_OR_KEYWORD, default=None),)
_LAST = (_P("recipe", _P.KEYWORD_ONLY, default=None, annotation="str | None"),
         _P("setup", _P.KEYWORD_ONLY, default=None, annotation="TrainingSetup | None"))


def _estimate_training(*args, **kwargs) -> Estimate:
    try:
        given = dict(_estimate_training.__signature__.bind(*args, **kwargs).arguments)
    except TypeError as e:  # as Python words it for an ordinary function, with the option meant if misspelt
        hint = option_table.close_names(k for k in kwargs if k not in _estimate_training.__signature__.parameters)
        raise TypeError(f"estimate_training() {e}{hint}") from None
    model, setup, recipe = given.pop("model", None), given.pop("setup", None), given.pop("recipe", None)
    if isinstance(model, TrainingSetup):  # estimate_training(setup, ...)
        setup, model = model, None
    if isinstance(given.get("seq_len"), TrainingSetup):  # estimate_training(model, setup, ...)
        setup = given.pop("seq_len")
    if setup is None:
        if model is None:
            raise ValueError("estimate_training needs a model (a catalog name or a memlib.Model) or a setup")
        return estimate(resolve(model, recipe, given))
    if not isinstance(setup, TrainingSetup):
        raise ValueError(f"setup must be a memlib.TrainingSetup, got {type(setup).__name__}")
    if recipe is not None:
        raise ValueError("a setup already carries its options; start from a recipe with "
                         "TrainingSetup.create(model, recipe=...), or change options with setup.replace(...)")
    if model is not None and model != setup.model:
        given["model"] = model
    return estimate(setup.replace(**given) if given else setup)


estimate_training = plain_args(_estimate_training)  # numpy scalars become Python numbers first (issue 23)


def document() -> None:
    """(Re)make estimate_training's signature and help() from the option table (run at import; run it again after
    changing an entry of option_table.OPTIONS)."""
    for fn in (_estimate_training, estimate_training):
        option_table.document(fn, HEADER, _FIRST, _LAST, returns="Estimate", footer=FOOTER)
        fn.__name__ = fn.__qualname__ = "estimate_training"
    create = TrainingSetup.__dict__["create"].__func__
    first = (_P("cls", _P.POSITIONAL_OR_KEYWORD), _P("model", _P.POSITIONAL_OR_KEYWORD),
             _P("recipe", _P.POSITIONAL_OR_KEYWORD, default=None, annotation="str | None"))
    option_table.document(create, CREATE_HEADER, first, returns="TrainingSetup", keyword_only=True)


document()
