"""Mark the notebooks' display-only and setup cells so readers see prose, tables and charts first.

    python tools/mark_display_cells.py            # rewrite the markers in notebooks/ (.py and .ipynb)
    python tools/mark_display_cells.py --check    # list the cells whose markers disagree with the rule; exit 1

The rule decides from the cell's code alone (Python's ast), so the tool can be re-run after any
edit and gives the same answer (idempotent); the markers it writes are the rule's, nothing else:

* display-only: the cell renders (calls `display(...)`, or draws with matplotlib / `memlib.learn.viz`)
  and computes nothing itself: outside the f-strings it renders, it calls no library function
  except presentation helpers (`IPython.display`, matplotlib, `memlib.learn.viz` charts,
  `markdown_table`, `fmt_bytes`, `fmt_count`, `gib`, `gb`, `json.dumps`, `types.SimpleNamespace`)
  and functions the notebook defines from those, or imports from the notebooks' kit
  (`memlib.learn.kit`, `memlib.learn.chapters.chNN`: read from their source as if defined here). Builtins and methods of values the notebook
  already has (`est.describe()`, `rows.append(...)`, `ax.set_title(...)`) are glue, not
  computation. A memlib call inside an f-string (`f"{fmt_bytes(memlib.fits(e, g).margin)}"`) is
  part of the sentence it renders.
  -> tags `hide-input` (myst-nb and the slides hide the code behind a toggle / drop it) and
     `jupyter.source_hidden` (JupyterLab shows the cell collapsed; click to expand).
* inline values: every statement assigns f-strings (`total = f"{gib(b):,.0f} GiB"`), the formatted
  figures a markdown cell shows through `{eval}` roles (tools/inline_values.py); computes nothing
  outside the f-strings. -> tags `remove-input` (the book and the slides show nothing of it: it
  has no output) and `jupyter.source_hidden` (collapsed in JupyterLab).
* setup: the notebook's first code cell when it imports something (imports, constants, small
  formatting helpers).
  -> tag `hide-input` and `jupyter.source_hidden` (issue 19, answer first): collapsed in JupyterLab
     too, so the first screen shows the question and the answer, not the imports.
* everything else (a memlib call that computes a figure, a widget, a loop over estimates) is a
  computation cell and stays visible: the tool removes the two markers from it.

Applies to the readable notebooks: notebooks/NN_*.py and notebooks/index.py (the calculator is a
Voila app whose code Voila hides anyway). The .py (Jupytext percent: the markers sit in the
`# %%` line) and the .ipynb are both rewritten; nothing else in them changes.
tests/test_site_cells.py fails when a notebook's markers disagree with this rule.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HIDE_TAG = "hide-input"
REMOVE_TAG = "remove-input"  # inline-value cells: no output, nothing to unfold in the book

# Presentation helpers, by the name they are imported under (leaf of the qualified name).
MEMLIB_PRESENTATION = {"markdown_table", "fmt_bytes", "fmt_count", "gib", "gb", "breakdown_bars", "sweep",
                       "breakdown_html", "COLORS", "count_sweep", "lines", "stacked_bars",
                       "moment_timeline", "replay_chart", "segment_picture"}
PRESENTATION_MODULES = ("IPython.display", "IPython.core.display", "matplotlib", "ipywidgets.HTML")
PRESENTATION_NAMES = {"json.dumps", "types.SimpleNamespace", "html.escape", "textwrap.dedent"}
# Calls that render: display and charts (print alone does not make a cell display-only).
RENDER_ROOTS = ("IPython.display.display", "matplotlib")
RENDER_MEMLIB = {"breakdown_bars", "sweep", "count_sweep", "lines", "stacked_bars", "moment_timeline", "replay_chart",
                 "segment_picture"}
# memlib.learn.mechanisms' draw_* functions only draw what its data functions computed (issue 38)
MECHANISM_DRAWS = {"draw_ring_all_reduce", "draw_zero_sharding", "draw_pipeline_schedule", "draw_tensor_parallel_layer",
                   "draw_context_parallel_balance", "draw_paged_kv_table"}
MEMLIB_PRESENTATION |= MECHANISM_DRAWS
RENDER_MEMLIB |= MECHANISM_DRAWS
BUILTINS = set(dir(builtins))


@dataclass(frozen=True)
class Verdict:
    kind: str     # "display" | "setup" | "values" | "compute"
    reason: str   # one line a person can check against the code


def notebook_paths(root: Path = ROOT) -> list[Path]:
    nb = root / "notebooks"
    return sorted(nb.glob("[0-9][0-9]_*.py")) + ([nb / "index.py"] if (nb / "index.py").exists() else [])


def _python(source: str) -> str:
    """Cell source as plain Python: IPython magics and shell escapes become `pass`."""
    return "\n".join("pass" if re.match(r"\s*[%!]", line) else line for line in source.splitlines())


def imported_names(sources: list[str]) -> dict[str, str]:
    """Every name the notebook binds with an import, mapped to its qualified name."""
    names: dict[str, str] = {}
    for src in sources:
        try:
            tree = ast.parse(_python(src))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        names[a.asname] = a.name
                    else:
                        names[a.name.split(".")[0]] = a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module:
                for a in node.names:
                    names[a.asname or a.name] = f"{node.module}.{a.name}"
    return names


def _qualified(func: ast.expr, imports: dict[str, str]) -> str | None:
    """`memlib.parallel.plan.plan` for `plan(...)` after `from memlib.parallel.plan import plan`; None for a value's method."""
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return None  # e.g. est.moments[0].describe(): a method of a value
    root = func.id
    if root in imports:
        return ".".join([imports[root]] + parts[::-1])
    if root in BUILTINS and not parts:
        return f"builtins.{root}"
    return None if parts else f"local.{root}"


def _is_presentation(qual: str) -> bool:
    if qual.startswith(PRESENTATION_MODULES) or qual in PRESENTATION_NAMES:
        return True
    if qual.split(".")[0] == "memlib":
        return qual.split(".")[-1] in MEMLIB_PRESENTATION
    return False


class _Calls(ast.NodeVisitor):
    """Collect the calls of a piece of code, outside f-strings, as qualified names (or None: glue)."""

    def __init__(self, imports: dict[str, str]):
        self.imports = imports
        self.calls: list[tuple[str | None, int]] = []

    def visit_JoinedStr(self, node):  # an f-string: calls inside it are part of the rendered text
        return

    def visit_Call(self, node):
        self.calls.append((_qualified(node.func, self.imports), node.lineno))
        self.generic_visit(node)


def local_functions(sources: list[str], imports: dict[str, str]) -> dict[str, bool]:
    """Functions the notebook defines -> whether they compute (call a non-presentation library function,
    or another local function that does), found by iterating to a fixed point."""
    bodies: dict[str, list] = {}
    for src in sources:
        try:
            tree = ast.parse(_python(src))
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                v = _Calls(imports)
                for stmt in node.body:
                    v.visit(stmt)
                bodies[node.name] = [q for q, _ in v.calls]
    computes = {name: False for name in bodies}
    changed = True
    while changed:
        changed = False
        for name, calls in bodies.items():
            if computes[name]:
                continue
            for q in calls:
                if _computes(q, computes):
                    computes[name] = changed = True
                    break
    return computes


def _computes(qual: str | None, local: dict[str, bool]) -> bool:
    if qual is None or qual.startswith("builtins."):
        return False
    if qual.startswith("local."):
        return local.get(qual[6:], False)  # unknown local name: a class or lambda defined in a cell; glue
    return not _is_presentation(qual)


def classify(source: str, imports: dict[str, str], local: dict[str, bool], first_code_cell: bool) -> Verdict:
    """The rule (module docstring) for one code cell."""
    try:
        tree = ast.parse(_python(source))
    except SyntaxError as e:
        return Verdict("compute", f"not parsed as Python ({e.msg}); left visible")
    has_import = any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in ast.walk(tree))
    if first_code_cell and has_import:
        return Verdict("setup", "first code cell, with the imports")
    v = _Calls(imports)
    v.visit(tree)
    for q, line in v.calls:
        if _computes(q, local):
            name = q.split(".", 1)[1] if q.startswith("local.") else q
            return Verdict("compute", f"line {line} calls {name}")
    renders = [q for q, _ in v.calls if q and (q.startswith(RENDER_ROOTS) or
                                               (q.split(".")[0] == "memlib" and q.split(".")[-1] in RENDER_MEMLIB))]
    # a chart drawn on axes the cell made (fig, ax = plt.subplots()) also goes through matplotlib
    if not renders and _formats_prose(tree):
        return Verdict("values", "only formats the prose's inline values (f-strings for {eval} names)")
    if not renders:
        return Verdict("compute", "renders nothing (no display() or chart call)")
    return Verdict("display", f"renders with {renders[0]} and computes nothing outside its f-strings")


def _formats_prose(tree: ast.Module) -> bool:
    """Every statement binds names to f-strings (or tuples of them): the values a markdown cell's
    `{eval}` roles show (tools/inline_values.py). Calls inside the f-strings were already found
    to compute nothing outside them."""
    def fstring(v):
        return isinstance(v, ast.JoinedStr) or (isinstance(v, ast.Tuple) and all(fstring(e) for e in v.elts))
    return bool(tree.body) and all(isinstance(st, ast.Assign) and fstring(st.value) for st in tree.body)


SHARED_SETUP = ("memlib.learn.kit.", "memlib.learn.chapters.")


def shared_functions(imports: dict[str, str], root: Path = ROOT) -> dict[str, bool]:
    """The functions a notebook imports from its kit (SHARED_SETUP), judged as local_functions judges the
    notebook's own: what was a helper in the setup cell stays one after it moved to memlib.learn."""
    out: dict[str, bool] = {}
    for name, qual in imports.items():
        if not qual.startswith(SHARED_SETUP):
            continue
        module, leaf = qual.rsplit(".", 1)
        source = (root / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8")
        out[name] = local_functions([source], imported_names([source])).get(leaf, False)
    return out


def classify_notebook(cells: list[tuple[str, str]]) -> list[Verdict | None]:
    """Verdicts for a notebook's cells, given as (cell_type, source); None for markdown cells."""
    code = [src for kind, src in cells if kind == "code"]
    imports = imported_names(code)
    shared = shared_functions(imports)
    imports = {n: (f"local.{n}" if n in shared else q) for n, q in imports.items()}
    local = {**shared, **local_functions(code, imports)}
    out: list[Verdict | None] = []
    seen_code = False
    for kind, src in cells:
        if kind != "code":
            out.append(None)
            continue
        out.append(classify(src, imports, local, first_code_cell=not seen_code))
        seen_code = True
    return out


def wanted_metadata(metadata: dict, verdict: Verdict) -> dict:
    """The cell's metadata with the rule's markers (other keys and tags kept, in their order)."""
    md = json.loads(json.dumps(metadata))
    tags = [t for t in md.get("tags", []) if t not in (HIDE_TAG, REMOVE_TAG)]
    if verdict.kind in ("display", "setup"):
        tags.append(HIDE_TAG)
    elif verdict.kind == "values":
        tags.append(REMOVE_TAG)
    if tags:
        md["tags"] = tags
    else:
        md.pop("tags", None)
    jup = dict(md.get("jupyter", {}))
    if verdict.kind in ("display", "setup", "values"):
        jup["source_hidden"] = True
    else:
        jup.pop("source_hidden", None)
    if jup:
        md["jupyter"] = jup
    else:
        md.pop("jupyter", None)
    return md


def markers(metadata: dict) -> tuple[bool, bool, bool]:
    """(tagged hide-input, tagged remove-input, source_hidden in JupyterLab) as stored."""
    tags = metadata.get("tags", [])
    return HIDE_TAG in tags, REMOVE_TAG in tags, bool(metadata.get("jupyter", {}).get("source_hidden"))


def expected_markers(verdict: Verdict) -> tuple[bool, bool, bool]:
    return (verdict.kind in ("display", "setup"), verdict.kind == "values",
            verdict.kind in ("display", "setup", "values"))


def _sorted_dict(d: dict) -> dict:
    return {k: (_sorted_dict(v) if isinstance(v, dict) else v) for k, v in sorted(d.items())}


def mark(py: Path, write: bool = True) -> list[str]:
    """Apply the rule to one notebook pair; return a line per cell whose markers changed (or would)."""
    import jupytext

    ipynb = py.with_suffix(".ipynb")
    nb_py = jupytext.read(py)
    raw = json.loads(ipynb.read_text(encoding="utf-8")) if ipynb.exists() else None
    cells = [(c.cell_type, c.source) for c in nb_py.cells]
    if raw is not None:
        stored = [(c["cell_type"], "".join(c["source"]) if isinstance(c["source"], list) else c["source"])
                  for c in raw["cells"]]
        if [(k, s.strip()) for k, s in stored] != [(k, s.strip()) for k, s in cells]:
            raise SystemExit(f"{py.name} and {ipynb.name} differ: run `jupytext --sync {py}` first")
    verdicts = classify_notebook(cells)
    changes: list[str] = []
    py_changed = ipynb_changed = False
    for i, (cell, verdict) in enumerate(zip(nb_py.cells, verdicts)):
        if verdict is None:
            continue
        want = wanted_metadata(cell.metadata, verdict)
        if want != dict(cell.metadata):
            first = next((ln for ln in cell.source.splitlines() if ln.strip() and not ln.startswith("#")), "")
            changes.append(f"{py.relative_to(ROOT) if py.is_relative_to(ROOT) else py} cell {i} -> "
                           f"{verdict.kind} ({verdict.reason}): {first[:60]}")
            cell.metadata.clear()
            cell.metadata.update(_sorted_dict(want))
            py_changed = True
        if raw is not None:
            rcell = raw["cells"][i]
            want_raw = _sorted_dict(wanted_metadata(rcell.get("metadata", {}), verdict))
            if want_raw != rcell.get("metadata", {}):
                if not py_changed or not changes or f"cell {i} " not in changes[-1]:
                    changes.append(f"{ipynb.name} cell {i} -> {verdict.kind} ({verdict.reason})")
                rcell["metadata"] = want_raw
                ipynb_changed = True
    if write:
        if py_changed:
            jupytext.write(nb_py, py, fmt="py:percent")
        if ipynb_changed:
            ipynb.write_text(json.dumps(raw, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return changes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", type=Path, help="notebook .py sources (default: the readable notebooks)")
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a marker disagrees")
    ap.add_argument("--list", action="store_true", help="print every code cell's verdict and reason")
    args = ap.parse_args(argv)
    paths = [p.resolve() for p in args.paths] or notebook_paths()
    if args.list:
        import jupytext
        for py in paths:
            nb = jupytext.read(py)
            for i, v in enumerate(classify_notebook([(c.cell_type, c.source) for c in nb.cells])):
                if v:
                    print(f"{py.name} [{i}] {v.kind:8s} {v.reason}")
        return 0
    all_changes = [line for py in paths for line in mark(py, write=not args.check)]
    for line in all_changes:
        print(line)
    if args.check and all_changes:
        print(f"{len(all_changes)} cell(s) not marked by the rule: run python tools/mark_display_cells.py",
              file=sys.stderr)
        return 1
    if not all_changes:
        print(f"markers agree with the rule in {len(paths)} notebook(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
