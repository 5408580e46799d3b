"""What the tests of the benchmark scripts share: loading a script of benchmarks/ as a module, once per session."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load(script: str):
    """benchmarks/<script>.py as a module; registered in sys.modules first (dataclasses look their module up while
    the class is built), so every test file shares the one copy."""
    name = f"memlib_benchmarks_{script}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{script}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
