"""Fill (or check) the inline values of the notebooks' prose: MyST `{eval}` roles.

    python tools/inline_values.py notebooks/01_65b_on_4x_v100.ipynb      # store the values
    python tools/inline_values.py --check notebooks/01_65b_on_4x_v100.ipynb  # recompute and compare

A markdown cell writes a computed figure inside a sentence as ``{eval}`name` ``, where ``name`` is a
plain variable (``[A-Za-z][A-Za-z0-9_]*``; myst-nb's eval role accepts only names) holding a
formatted string that a code cell above computed with memlib. nbconvert does not evaluate these,
so this tool does: it starts a kernel (jupyter_client, this Python's ipykernel), runs the code cells
in order and, after the code cells above each markdown cell, asks the kernel for that cell's names
through the kernel protocol's ``user_expressions`` (what JupyterLab's jupyterlab-myst does when a
reader runs the cell). The replies are stored in the cell's ``metadata.user_expressions`` in
jupyterlab-myst's schema (src/userExpressions.ts, jupyterlab-myst 2.x)::

    [{"expression": "name", "result": {"status": "ok", "data": {"text/plain": "'65 GB'"}, "metadata": {}}}]

Only ``text/plain`` is stored: jupyterlab-myst renders a text/plain result (its quotes stripped)
even in an untrusted notebook, so the values show on a fresh open without "Trust Notebook". The
book (book/_ext/memlib_inline.py) substitutes the same stored values.

``--check`` is the nbval of prose: it recomputes every value and fails (exit 1, one line per
problem) on a missing, stale, extra or non-name expression, or on a code cell that raises.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROLE = re.compile(r"\{eval\}`([^`]*)`")
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
TIMEOUT_S = 120


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def expressions(cell: dict) -> list[str]:
    """The `{eval}` expressions of a markdown cell, in order, each once."""
    seen: list[str] = []
    for expr in ROLE.findall(_source(cell)):
        if expr not in seen:
            seen.append(expr)
    return seen


def stored_text(entry: dict) -> str | None:
    """The text a stored user expression renders as (jupyterlab-myst strips one pair of quotes)."""
    result = entry.get("result", {})
    if result.get("status") != "ok":
        return None
    text = result.get("data", {}).get("text/plain")
    if text is None:
        return None
    text = "".join(text) if isinstance(text, list) else text
    m = re.fullmatch(r"([\"'])(.*)\1", text, flags=re.S)
    if m:  # a str's repr: undo it exactly where we can (escapes), as the reader sees it
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return m.group(2)
    return text


def substitute(nb: dict, where: str = "") -> tuple[int, list[str]]:
    """Replace the roles of every markdown cell by their stored values; return (count, missing)."""
    count, missing = 0, []
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "markdown":
            continue
        src = cell["source"]
        src = "".join(src) if isinstance(src, list) else src
        if not ROLE.search(src):
            continue
        values = {e.get("expression"): stored_text(e) for e in cell.get("metadata", {}).get("user_expressions", [])}

        def repl(m, values=values, i=i):
            nonlocal count
            text = values.get(m.group(1))
            if text is None:
                missing.append(f"{where} cell {i}: {{eval}}`{m.group(1)}` has no stored value")
                return m.group(0)
            count += 1
            return text

        cell["source"] = ROLE.sub(repl, src)
    return count, missing


class Kernel:
    """A python kernel of this interpreter, driven through jupyter_client's blocking client."""

    def __init__(self, cwd: Path):
        from jupyter_client.kernelspec import KernelSpec
        from jupyter_client.manager import KernelManager

        self.km = KernelManager()
        # this interpreter's ipykernel, whatever kernelspec the notebook names (like nbval's
        # --nbval-current-env)
        self.km._kernel_spec = KernelSpec(
            argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            display_name="Python 3", language="python")
        self.km.start_kernel(cwd=str(cwd))
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=TIMEOUT_S)

    def run(self, code: str, user_expressions: dict | None = None) -> dict:
        reply = self.kc.execute_interactive(code, user_expressions=user_expressions or {},
                                            store_history=False, timeout=TIMEOUT_S,
                                            output_hook=lambda msg: None)
        return reply["content"]

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def evaluate(nb_path: Path) -> tuple[dict[int, list[dict]], list[str]]:
    """Run the notebook; return {markdown cell index: user_expressions entries} and problems."""
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    results: dict[int, list[dict]] = {}
    problems: list[str] = []
    wanted = {i: expressions(c) for i, c in enumerate(nb["cells"]) if c["cell_type"] == "markdown"}
    if not any(wanted.values()):
        return results, problems
    kernel = Kernel(nb_path.parent)
    try:
        kernel.run("%matplotlib agg")
        for i, cell in enumerate(nb["cells"]):
            if cell["cell_type"] == "code":
                content = kernel.run(_source(cell))
                if content["status"] != "ok":
                    problems.append(f"{nb_path.name}: cell {i} raised {content.get('ename')}: "
                                    f"{content.get('evalue')}")
                    break
            elif wanted.get(i):
                bad = [e for e in wanted[i] if not NAME.match(e)]
                for e in bad:
                    problems.append(f"{nb_path.name}: cell {i}: {{eval}}`{e}` is not a plain name")
                names = [e for e in wanted[i] if e not in bad]
                reply = kernel.run("", {str(k): e for k, e in enumerate(names)})
                entries = []
                for k, e in enumerate(names):
                    res = reply["user_expressions"][str(k)]
                    if res.get("status") != "ok":
                        problems.append(f"{nb_path.name}: cell {i}: {e}: {res.get('ename')}: {res.get('evalue')}")
                        continue
                    data = {"text/plain": res["data"]["text/plain"]}
                    entries.append({"expression": e, "result": {"status": "ok", "data": data, "metadata": {}}})
                results[i] = entries
    finally:
        kernel.close()
    return results, problems


# Markdown inside a value: the book substitutes the text into the prose (so `**4**` is bold there), but
# jupyterlab-myst 2.x shows an {eval} result's text/plain as it is, without parsing it (its inline-expression
# renderer), so JupyterLab would show the asterisks. Put the emphasis in the prose around the role instead.
MARKUP = re.compile(r"\*\*|__|`|\[[^\]]*\]\(|<[a-z/]")


def markup_problems(nb: dict, name: str = "") -> list[str]:
    """Stored values that carry Markdown (or HTML) markup, which JupyterLab would show raw."""
    problems = []
    for i, cell in enumerate(nb.get("cells", [])):
        for e in cell.get("metadata", {}).get("user_expressions", []) if cell.get("cell_type") == "markdown" else []:
            text = stored_text(e)
            if text and MARKUP.search(text):
                problems.append(f"{name}: cell {i}: {e.get('expression')} = {text!r} carries Markdown markup, which "
                                "JupyterLab shows raw (jupyterlab-myst does not parse an inline value): put it in the prose")
    return problems


def check(nb_path: Path) -> list[str]:
    """Problems of the stored values against a fresh evaluation (empty when they all agree)."""
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    fresh, problems = evaluate(nb_path)
    problems += markup_problems(nb, nb_path.name)
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        stored = {e.get("expression"): stored_text(e) for e in cell.get("metadata", {}).get("user_expressions", [])}
        now = {e["expression"]: stored_text(e) for e in fresh.get(i, [])}
        for expr in expressions(cell):
            if expr not in stored or stored[expr] is None:
                problems.append(f"{nb_path.name}: cell {i}: {{eval}}`{expr}` has no stored value")
            elif expr in now and stored[expr] != now[expr]:
                problems.append(f"{nb_path.name}: cell {i}: {expr} stored {stored[expr]!r}, memlib now {now[expr]!r}")
        for expr in set(stored) - set(expressions(cell)):
            problems.append(f"{nb_path.name}: cell {i}: stored value for {expr!r}, which the cell no longer uses")
    return problems


def fill(nb_path: Path) -> list[str]:
    """Store fresh values in the notebook (in place); return the problems met."""
    fresh, problems = evaluate(nb_path)
    if problems:
        return problems
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    # keep the stored values out of the paired .py (Jupytext restores them from the .ipynb on --sync)
    jt = nb.setdefault("metadata", {}).setdefault("jupytext", {})
    filt = jt.get("cell_metadata_filter", "")
    if "user_expressions" not in filt:
        jt["cell_metadata_filter"] = ",".join(x for x in (filt, "-user_expressions") if x)
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        if fresh.get(i):
            cell.setdefault("metadata", {})["user_expressions"] = fresh[i]
        else:
            cell.get("metadata", {}).pop("user_expressions", None)
    nb_path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return []


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebooks", nargs="+", type=Path)
    ap.add_argument("--check", action="store_true", help="recompute and fail on any difference")
    args = ap.parse_args(argv)
    problems: list[str] = []
    for path in args.notebooks:
        found = check(path) if args.check else fill(path)
        problems += found
        if not found:
            print(f"{'ok' if args.check else 'filled'} {path}")
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
