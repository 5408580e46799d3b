"""Import paths that earlier releases, the README, the docs and the notebooks have shown.

memlib's modules live in folders by what they compute (issue 24); the flat names of the
first releases (`memlib.grading`, `memlib.inference`, `memlib.zero`, ...) keep working
through this finder, which hands back the module at its new place, with a DeprecationWarning that
names the new path (the old paths will be removed). Modules that moved between the core's
layers (issue 44) are mapped the same way, by their dotted path under memlib. It is the one place
that maps old names to new ones: nothing here computes, and the core imports nothing of
memlib.learn (the names below are strings until a user asks for one). moved_attributes() does the
same for single functions that moved out of a module that stays.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

# old module (under memlib.) -> where it lives now
MOVED: dict[str, str] = {
    "activations": "training.activations",
    "optimizers": "training.optimizers",
    "lora": "training.lora",
    "explain": "training.explain",
    "measured": "training.measured",
    "gpus": "hardware.gpus",
    "fit": "hardware.fit",
    "hf_configs": "models.hf_configs",
    "llama_like": "models.llama_like",
    "inference": "serving.inference",
    "zero": "parallel.zero",
    "plan": "parallel.plan",
    "moe": "parallel.moe",
    "timing": "cost.timing",
    "step_parts": "cost.step_parts",
    "grading": "learn.grading",
    "exercises": "learn.exercises",
    "playground": "learn.playgrounds",
    "serving_playground": "learn.playgrounds.serving",
    "moe_playground": "learn.playgrounds.moe",
    "cost_playground": "learn.playgrounds.cost",
    "long_context_playground": "learn.playgrounds.long_context",
    "viz": "learn.viz",
    "claims": "learn.claims",
    # issue 44: moved so that no module imports a layer above its own
    "training.weight_sync": "cost.weight_sync",
    "models.mtp": "serving.mtp",
}


def new_name(fullname: str) -> str | None:
    """'memlib.exercises.ex01' -> 'memlib.learn.exercises.ex01'; None when the name did not move."""
    parts = fullname.split(".")
    if len(parts) < 2 or parts[0] != "memlib":
        return None
    for n in range(len(parts) - 1, 0, -1):  # the longest old name that is a prefix: models.mtp before models
        old = ".".join(parts[1:n + 1])
        if old in MOVED:
            return ".".join(["memlib", MOVED[old], *parts[n + 1:]])
    return None


def deprecation(old: str, new: str) -> str:
    return f"{old} has moved to {new}: import it from there ({old} will be removed in a later release)"


def moved_attributes(module: str, moved: dict[str, str]):
    """A module-level __getattr__ for `module` whose functions in `moved` (name -> new module) now live
    elsewhere: it warns and hands back the object from its new place."""
    def __getattr__(name: str):
        if name in moved:
            warnings.warn(deprecation(f"{module}.{name}", f"{moved[name]}.{name}"), DeprecationWarning, stacklevel=2)
            return getattr(importlib.import_module(moved[name]), name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    return __getattr__


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self):
        self._own: dict[str, tuple] = {}

    def find_spec(self, fullname, path=None, target=None):
        target_name = new_name(fullname)
        if target_name is None or importlib.util.find_spec(target_name) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self, origin=target_name)

    def create_module(self, spec):
        warnings.warn(deprecation(spec.name, spec.origin), DeprecationWarning, stacklevel=2)
        module = importlib.import_module(spec.origin)   # the one module object, under both names
        self._own[spec.name] = (module.__spec__, module.__name__)
        return module

    def exec_module(self, module):
        # the import system stamped the old name's spec on the module: give it back its own
        for alias, (own_spec, own_name) in list(self._own.items()):
            if own_name == module.__spec__.origin:
                module.__spec__, module.__name__ = own_spec, own_name
                del self._own[alias]
                return


def install() -> None:
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.insert(0, _Alias())   # before the path finder, which would load a second copy
