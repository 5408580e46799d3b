"""The package's shape (issue 24), checked by reading the source, without running it:

- memlib/ has at most 14 top-level entries, folders by what they compute;
- the calculation core (everything outside memlib/learn/) never imports memlib.learn, under its
  new name or an old flat one (memlib.grading, memlib.viz, ...), and needs only the standard
  library and numpy;
- no function in memlib is over 80 lines;
- the core is layered: models -> hardware -> training, serving -> parallel, cost -> the planners on top
  (LAYERS); a module imports only its own layer or the ones below, none of its imports (module- or
  function-level) goes up except the deprecated aliases listed with their reason (UPWARD_ALLOWED), and
  the core's import graph has no cycle;
- validation/ has no import cycle;
- every import path the README, docs and notebooks show (old flat names included) resolves, and
  an old name is the very module object of its new path.

Imports are read with ast, every import statement counted wherever it sits (a function-level
import is still a dependency), so none of this needs torch or the notebooks' packages.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import re
import sys
from pathlib import Path

import pytest

from memlib import _compat

ROOT = Path(__file__).resolve().parents[1]
MEMLIB = ROOT / "memlib"
VALIDATION = ROOT / "validation"
MAX_TOP_LEVEL = 14
MAX_FUNCTION_LINES = 80
LEARN_OLD_NAMES = {old for old, new in _compat.MOVED.items() if new.split(".")[0] == "learn"}


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, root: Path = ROOT, top_level_only: bool = False) -> list[tuple[int, str]]:
    """(line, dotted name) of every module an import statement in `path` names, relative imports
    resolved; `from a import b` yields both a and a.b (b may be a submodule). Also the constant
    strings given to importlib.import_module / __import__. top_level_only: the statements that run
    when the module is imported (not those inside a function or class body)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    own = _module_name(path, root)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    out = []
    for node in (_top_level_nodes(tree.body) if top_level_only else ast.walk(tree)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([base] if base else []))
            out.append((node.lineno, base))
            out += [(node.lineno, f"{base}.{a.name}") for a in node.names if a.name != "*"]
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and (getattr(node.func, "attr", None) == "import_module" or getattr(node.func, "id", None) in
                   ("import_module", "__import__"))):
            out.append((node.lineno, node.args[0].value))
        elif (not top_level_only and isinstance(node, ast.Call)
              and getattr(node.func, "attr", None) == "moved_attributes"
              and len(node.args) > 1 and isinstance(node.args[1], ast.Dict)):
            # memlib._compat.moved_attributes(__name__, {name: "new.module"}): imports the new module on request,
            # not at import time
            out += [(node.lineno, v.value) for v in node.args[1].values if isinstance(v, ast.Constant)]
    return out


def _top_level_nodes(body: list) -> list:
    """The statements of a module body that run at import, descending into if/try/with blocks only."""
    out = []
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        out.append(node)
        for field in ("body", "orelse", "finalbody"):
            if isinstance(node, (ast.If, ast.Try, ast.With)) and getattr(node, field, None):
                out += _top_level_nodes(getattr(node, field))
        for handler in getattr(node, "handlers", []) if isinstance(node, ast.Try) else []:
            out += _top_level_nodes(handler.body)
        if isinstance(node, ast.Expr) or isinstance(node, ast.Assign):
            out += [n for n in ast.walk(node) if isinstance(n, ast.Call)]
    return out


def _core_files() -> list[Path]:
    return [p for p in sorted(MEMLIB.rglob("*.py")) if "learn" not in p.relative_to(MEMLIB).parts[:1]]


# --- memlib/: two layers --------------------------------------------------------------------------
def test_memlib_top_level_has_at_most_14_entries():
    entries = sorted(p.name for p in MEMLIB.iterdir() if p.name != "__pycache__")
    assert len(entries) <= MAX_TOP_LEVEL, f"{len(entries)} entries in memlib/: {entries}"


def _learn_imports(path: Path, root: Path = ROOT) -> list[str]:
    """Where `path` imports memlib.learn, or an old flat name that _compat maps into it."""
    bad = []
    for line, name in _imports(path, root):
        parts = name.split(".")
        if parts[0] != "memlib" or len(parts) < 2:
            continue
        if parts[1] == "learn" or parts[1] in LEARN_OLD_NAMES:
            bad.append(f"{path.relative_to(root)}:{line} imports {name}")
    return bad


def test_the_core_never_imports_the_learning_layer():
    bad = []
    for path in _core_files():
        if path == MEMLIB / "_compat.py":  # the one map of old names to new ones; it imports on request only
            continue
        bad += _learn_imports(path)
    # the CLI's classroom commands (memlib quiz, memlib class-report) import memlib.learn.classroom inside the
    # function that runs them, and nowhere else; tests/test_classroom.py checks `import memlib.cli` loads no learn
    bad = [b for b in bad if not re.match(r"memlib/cli\.py:\d+ imports memlib\.learn(\.classroom)?$", b)]
    assert bad == []


def test_the_learn_check_can_fail(tmp_path):
    # the checker sees every spelling a core module could use, one per line
    probe = tmp_path / "memlib" / "hardware" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("import memlib.learn.grading\nfrom memlib.learn import viz\nfrom memlib import grading\n"
                     "from ..learn.claims import overall\nimport memlib.playground\n"
                     "import importlib\nimportlib.import_module('memlib.viz')\nfrom memlib.hardware import gpus\n")
    lines = {int(f.split(":")[1].split()[0]) for f in _learn_imports(probe, tmp_path)}
    assert lines == {1, 2, 3, 4, 5, 7}


def test_the_core_needs_only_the_standard_library_and_numpy():
    bad = []
    for path in _core_files():
        for line, name in _imports(path):
            top = name.split(".")[0]
            if top and top not in sys.stdlib_module_names and top not in ("memlib", "numpy"):
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert bad == []


def _long_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [f"{path.relative_to(ROOT)}:{n.lineno} {n.name} ({n.end_lineno - n.lineno + 1} lines)"
            for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.end_lineno - n.lineno + 1 > MAX_FUNCTION_LINES]


def test_no_function_in_memlib_is_over_80_lines():
    long = [f for path in sorted(MEMLIB.rglob("*.py")) for f in _long_functions(path)]
    assert long == [], "split these into named steps:\n" + "\n".join(long)


# --- the core's layers ---------------------------------------------------------------------------
# Lowest first. A module belongs to the layer of the longest prefix listed; a module imports its own
# layer or the ones below. The planners (plan, min_gpus, plan_serving) sit on top of everything they search
# over; the package facade (memlib/__init__.py) and the command line above them. memlib._compat (old paths,
# nothing imported until asked) and memlib.options (the option kinds and their validators, issue 43) are base.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("memlib._checks", "memlib.units", "memlib._compat", "memlib.options")),
    ("models", ("memlib.models",)),
    ("hardware", ("memlib.hardware",)),
    ("training and serving", ("memlib.training", "memlib.serving")),
    ("parallel and cost", ("memlib.parallel", "memlib.cost")),
    ("planners", ("memlib.parallel.plan",)),
    ("entry points", ("memlib", "memlib.cli", "memlib.__main__")),
]
# (importer, imported) -> why the import goes up a layer. Only aliases that keep an old path working, each
# inside a module __getattr__ that warns (memlib._compat.moved_attributes); nothing that computes.
UPWARD_ALLOWED: dict[tuple[str, str], str] = {
    ("memlib.models.llama_like", "memlib.hardware.fit"):
        "deprecated alias: largest_that_fits / largest_size_that_fits moved to memlib.hardware.fit",
}
# memlib._compat (base layer: it imports nothing of memlib until asked) maps old paths to new ones.
# Cycles in the whole graph (function-level imports included) that are known and owned elsewhere.
CYCLES_ALLOWED: dict[tuple[str, str], str] = {
    ("memlib.models.llama_like", "memlib.hardware.fit"):
        "deprecated alias: largest_that_fits / largest_size_that_fits moved to memlib.hardware.fit",
    ("memlib.serving.engines", "memlib.serving.capacity"):
        "deprecated alias: sglang_max_total_tokens moved to memlib.serving.capacity (it needs estimate_inference)",
}


def _layer_of(module: str) -> int:
    best, layer = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, layer = len(p), i
    if layer is None:
        raise AssertionError(f"{module} is in no layer of LAYERS: add it")
    return layer


def _core_graph(top_level_only: bool, root: Path = ROOT, files=None) -> dict[str, dict[str, int]]:
    """core module -> {core module it imports: line}. `from a import b` names a.b when b is a module,
    else a; an import of a package's submodule is not counted as one of the package's __init__."""
    files = _core_files() if files is None else files
    modules = {_module_name(p, root) for p in files}
    graph = {}
    for path in files:
        own = _module_name(path, root)
        deps: dict[str, int] = {}
        for line, name in _imports(path, root, top_level_only):
            parts = name.split(".")
            target = next((".".join(parts[:i]) for i in range(len(parts), 0, -1) if ".".join(parts[:i]) in modules),
                          None)
            if target is None or target == own:
                continue
            deps.setdefault(target, line)
        graph[own] = deps
    return _drop_package_for_submodule(graph, files, root, top_level_only)


def _drop_package_for_submodule(graph, files, root, top_level_only):
    """`from memlib.training import activations` names memlib.training and memlib.training.activations: keep
    the package only when something other than its submodules is taken from it."""
    modules = set(graph)
    out = {}
    for path in files:
        own = _module_name(path, root)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = own if path.name == "__init__.py" else own.rpartition(".")[0]
        keep_package = set()
        for node in (_top_level_nodes(tree.body) if top_level_only else ast.walk(tree)):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([base] if base else []))
                if any(f"{base}.{a.name}" not in modules for a in node.names):
                    keep_package.add(base)
            elif isinstance(node, ast.Import):
                keep_package |= {a.name for a in node.names}
        out[own] = {m: line for m, line in graph[own].items()
                    if not (m in modules and any(d.startswith(m + ".") for d in graph[own]) and m not in keep_package)}
    return out


def _upward_imports(graph: dict[str, dict[str, int]]) -> list[str]:
    return [f"{a} (layer {LAYERS[_layer_of(a)][0]!r}) imports {b} (layer {LAYERS[_layer_of(b)][0]!r}), line {line}"
            for a, deps in sorted(graph.items()) for b, line in sorted(deps.items())
            if _layer_of(b) > _layer_of(a) and (a, b) not in UPWARD_ALLOWED]


def test_every_core_module_has_a_layer():
    for name in _core_graph(True):
        _layer_of(name)


def test_no_core_import_goes_up_a_layer():
    bad = _upward_imports(_core_graph(top_level_only=False))
    assert bad == [], "move the code down, or the import up:\n" + "\n".join(bad)


def test_the_core_has_no_import_cycle_at_import_time():
    graph = {a: set(deps) for a, deps in _core_graph(top_level_only=True).items()}
    found = _cycle(graph)
    assert found is None, " -> ".join(found)


def test_the_core_has_no_import_cycle_through_function_level_imports():
    graph = {a: {b for b in deps if (a, b) not in CYCLES_ALLOWED} for a, deps in _core_graph(False).items()}
    found = _cycle(graph)
    assert found is None, " -> ".join(found)


def test_upward_allowances_are_still_needed():
    graph = _core_graph(top_level_only=False)
    stale = [k for k in UPWARD_ALLOWED if k[1] not in graph.get(k[0], {})]
    stale += [k for k in CYCLES_ALLOWED if k[1] not in graph.get(k[0], {})]
    assert stale == [], f"no longer imported: remove from UPWARD_ALLOWED / CYCLES_ALLOWED: {stale}"


def test_the_layer_check_can_fail(tmp_path):
    # a hardware module importing training at module level, and a models module importing serving in a function
    for rel, text in {"memlib/__init__.py": "", "memlib/hardware/__init__.py": "", "memlib/models/__init__.py": "",
                      "memlib/training/__init__.py": "", "memlib/serving/__init__.py": "",
                      "memlib/hardware/probe.py": "from memlib.training import step\n",
                      "memlib/training/step.py": "from memlib.models import catalog\n",
                      "memlib/models/catalog.py": "def f():\n    from memlib.serving import inference\n",
                      "memlib/serving/inference.py": "from memlib.models.catalog import f\n"}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    files = sorted((tmp_path / "memlib").rglob("*.py"))
    lazy = _core_graph(False, tmp_path, files)
    bad = _upward_imports(lazy)
    assert len(bad) == 2 and "memlib.hardware.probe" in bad[0] + bad[1] and "line 2" in " ".join(bad)
    assert _cycle({a: set(d) for a, d in lazy.items()}) is not None  # catalog -> inference -> catalog
    assert _cycle({a: set(d) for a, d in _core_graph(True, tmp_path, files).items()}) is None


# --- validation/: no import cycle -----------------------------------------------------------------
def _validation_graph(folder: Path = VALIDATION) -> dict[str, set[str]]:
    """validation module -> the validation modules it imports."""
    root = folder.parent
    modules = {_module_name(p, root) for p in folder.glob("*.py")}
    modules.discard("validation")  # the package's empty __init__: `from validation import x` names x
    return {_module_name(p, root): {n for _, n in _imports(p, root) if n in modules and n != _module_name(p, root)}
            for p in sorted(folder.glob("*.py"))}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of `graph` as a path a -> ... -> a, or None (depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_validation_has_no_import_cycle():
    graph = _validation_graph()
    assert "validation.measure" in graph  # the shared pieces
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))
    # the measuring module is shared, not a user: it imports no script of the folder
    assert graph["validation.measure"] <= {"validation.recipes", "validation.qlora", "validation.cases"}


def test_cycle_finder_finds_cycles():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None
    # the shape issue 24 found: harness <-> families, harness <-> sharded, context_parallel through both
    found = _cycle({"harness": {"families", "sharded"}, "families": {"harness"}, "sharded": {"harness"},
                    "context_parallel": {"harness", "sharded"}})
    assert found[0] == found[-1] and set(found) in ({"harness", "families"}, {"harness", "sharded"})


# --- documented import paths resolve --------------------------------------------------------------
_DOTTED = re.compile(r"(?<![\w./-])memlib(?:\.[A-Za-z_]\w*)+")
_FROM = re.compile(r"^\s*from (memlib(?:\.\w+)*) import \(?([\w, ]+)", re.M)


def _documented_files() -> list[Path]:
    return sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "notebooks").glob("*.py")])


def _resolve(dotted: str):
    """(module, the rest): the longest importable module prefix of `dotted` and the attributes after it."""
    parts = dotted.split(".")
    module, i = importlib.import_module(parts[0]), 1
    while i < len(parts):
        try:
            module = importlib.import_module(".".join(parts[: i + 1]))
        except ModuleNotFoundError:
            break
        i += 1
    return module, parts[i:]


def _documented_paths() -> list[tuple[str, str]]:
    out = set()
    for path in _documented_files():
        text = path.read_text(encoding="utf-8")
        where = str(path.relative_to(ROOT))
        out |= {(where, m.group(0)) for m in _DOTTED.finditer(text)}
        for mod, names in _FROM.findall(text):
            # "from memlib.learn import mechanisms as mech": the name imported is mechanisms
            out |= {(where, f"{mod}.{n.split(' as ')[0].strip()}") for n in names.split(",") if n.strip()}
    return sorted(out)


def test_documents_show_import_paths():
    paths = {p for _, p in _documented_paths()}
    assert len(paths) > 50 and {"memlib.learn.grading", "memlib.parallel.plan.plan", "memlib.learn.viz"} <= paths


@pytest.mark.parametrize("where, dotted", _documented_paths())
def test_documented_import_path_resolves(where, dotted):
    module, rest = _resolve(dotted)
    obj = module
    for attr in rest:
        if attr in ("py", "ipynb", "md", "json"):  # a file name in prose: memlib.viz.py
            break
        if dataclasses.is_dataclass(obj) and attr in {f.name for f in dataclasses.fields(obj)}:
            break  # an instance field of a documented class (Estimate.moments)
        assert hasattr(obj, attr), f"{where}: {dotted}: {obj.__name__ if hasattr(obj, '__name__') else obj} " \
                                   f"has no {attr!r}"
        obj = getattr(obj, attr)
    name = module.__name__
    parts = dotted.split(".")
    if len(parts) > 1 and parts[1] in _compat.MOVED:  # an old flat name: the new path's very module
        old = ".".join(parts[: len(parts) - len(rest)])
        assert importlib.import_module(old) is importlib.import_module(_compat.new_name(old)), (where, dotted)
        assert name == _compat.new_name(old), (where, dotted, name)


# --- the public API, documented once --------------------------------------------------------------
def _usage_api_section() -> str:
    text = (ROOT / "docs" / "usage.md").read_text(encoding="utf-8")
    return text.split("## The public API", 1)[1].split("\n## ", 1)[0]


def test_package_top_exports_only_the_public_api():
    import memlib
    assert len(set(memlib.__all__)) == len(memlib.__all__)
    assert all(hasattr(memlib, n) for n in memlib.__all__)
    # anything else public at the top is a subpackage or module, never a stray helper
    stray = [n for n in vars(memlib) if not n.startswith("_") and n not in memlib.__all__
             and not isinstance(getattr(memlib, n), type(memlib))]
    assert stray == []


def test_usage_lists_the_public_api():
    import memlib
    table = _usage_api_section().split("\n\n")[2]  # the table after the section's first paragraph
    listed = re.findall(r"`memlib\.(\w+)`", table)
    assert sorted(listed) == sorted(memlib.__all__), "docs/usage.md 'The public API' and memlib.__all__ differ"


_ARCH_CELL = re.compile(r"`(memlib(?:\.\w+)+):([\w.]+)`((?:, `[\w.]+`)*)")


def test_architecture_table_names_real_functions():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    found = 0
    for module, first, rest in _ARCH_CELL.findall(text):
        mod = importlib.import_module(module)
        for name in [first, *re.findall(r"`([\w.]+)`", rest)]:
            obj = mod
            if "." in name and not hasattr(mod, name.split(".")[0]):  # Model.num_params after Model.tensors
                name = f"{first.split('.')[0]}.{name}"
            for attr in name.split("."):
                if dataclasses.is_dataclass(obj) and attr in {f.name for f in dataclasses.fields(obj)}:
                    break  # a field of the dataclass (GPU.memory_bytes)
                assert hasattr(obj, attr), f"docs/architecture.md: {module}:{name}"
                obj = getattr(obj, attr)
            found += 1
    assert found >= 60


# --- old paths warn before they go -----------------------------------------------------------------
@pytest.mark.parametrize("old, new", [("memlib.grading", "memlib.learn.grading"),
                                      ("memlib.training.weight_sync", "memlib.cost.weight_sync"),
                                      ("memlib.models.mtp", "memlib.serving.mtp")])
def test_an_old_module_path_warns_with_its_new_path(old, new):
    # a fresh interpreter: in this one the old name may already be imported (no finder runs then)
    import subprocess
    out = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", f"import {old}"],
                         capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert out.returncode != 0 and "DeprecationWarning" in out.stderr and new in out.stderr, out.stderr[-500:]
    ok = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", f"import {new}"],
                        capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert ok.returncode == 0, ok.stderr[-500:]


@pytest.mark.parametrize("module, name, new", [
    ("memlib.models.llama_like", "largest_size_that_fits", "memlib.hardware.fit"),
    ("memlib.serving.engines", "sglang_max_total_tokens", "memlib.serving.capacity")])
def test_a_moved_function_warns_and_is_the_same_object(module, name, new):
    with pytest.warns(DeprecationWarning, match=re.escape(f"{new}.{name}")):
        old = getattr(importlib.import_module(module), name)
    assert old is getattr(importlib.import_module(new), name)
    with pytest.raises(AttributeError):
        getattr(importlib.import_module(module), "no_such_name")
