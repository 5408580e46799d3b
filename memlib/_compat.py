"""Import paths that earlier releases, the README, the docs and the notebooks have shown.

memlib's modules live in folders by what they compute (issue 24); the flat names of the
first releases (`memlib.grading`, `memlib.inference`, `memlib.zero`, ...) keep working
through this finder, which hands back the module at its new place. It is the one place
that maps old names to new ones: nothing here computes, and the core imports nothing of
memlib.learn (the names below are strings until a user asks for one).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

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
}


def new_name(fullname: str) -> str | None:
    """'memlib.exercises.ex01' -> 'memlib.learn.exercises.ex01'; None when the name did not move."""
    parts = fullname.split(".")
    if len(parts) < 2 or parts[0] != "memlib" or parts[1] not in MOVED:
        return None
    return ".".join(["memlib", MOVED[parts[1]], *parts[2:]])


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self):
        self._own: dict[str, tuple] = {}

    def find_spec(self, fullname, path=None, target=None):
        target_name = new_name(fullname)
        if target_name is None or importlib.util.find_spec(target_name) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self, origin=target_name)

    def create_module(self, spec):
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
