"""The option table (memlib/training/option_table.py) is the single source of estimate_training's options: every
option is in the signature, the CLI and the docs; no default is written a second time anywhere; changing an entry
changes help(), the signature, the CLI's help, the docs table and the estimate; each kind has one validator whose
message names the option; presets only set table options with values their kind accepts (issue 43)."""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import inspect
import pathlib
import pydoc
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memlib
from memlib import cli, training
from memlib.training import option_table
from memlib.training.option_table import KINDS, OPTIONS

ROOT = pathlib.Path(__file__).resolve().parents[1]
ENTRY = ("model", "recipe", "setup")  # estimate_training's parameters that are not options of a run


def _estimate_parser():
    sub = cli._parser()._subparsers._group_actions[0]
    return sub.choices["estimate"]


# ---- completeness --------------------------------------------------------------------------------------------------
def test_every_option_is_in_the_signature_in_order_with_the_tables_default():
    params = inspect.signature(memlib.estimate_training).parameters
    names = [n for n in params if n not in ENTRY]
    assert names == list(OPTIONS)
    for name, o in OPTIONS.items():
        assert params[name].default == o.default, name
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD if o.positional else inspect.Parameter.KEYWORD_ONLY
        assert params[name].kind == kind, name


def test_every_option_has_a_cli_flag_with_its_help_and_choices():
    actions = {a.dest: a for a in _estimate_parser()._actions}
    for name, o in OPTIONS.items():
        a = actions[name]
        assert o.flag in a.option_strings and a.default is None, name  # None: not given, so it beats --recipe
        assert o.help in a.help and "default" in a.help, name
        if o.kind == "choice":
            assert tuple(a.choices) == tuple(v for v in o.values if v is not None), name
        if o.kind == "flag":
            assert f"--no-{o.flag[2:]}" in a.option_strings, name


def test_every_option_is_in_the_docs_table_and_the_table_is_current():
    spec = importlib.util.spec_from_file_location("make_option_table", ROOT / "tools" / "make_option_table.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    text = (ROOT / "docs" / "usage.md").read_text(encoding="utf-8")
    assert tool.render(text) == text, "docs/usage.md's option table is out of date: python tools/make_option_table.py"
    block = text.split(tool.BEGIN, 1)[1].split(tool.END, 1)[0]
    for name, o in OPTIONS.items():
        assert f"| `{name}` |" in block and o.source in block, name


def test_the_docs_code_block_agrees_with_the_table():
    """docs/usage.md's `est = memlib.estimate_training(model, seq_len=2048, ...)` block shows defaults too: each
    `option=literal` there is the table's default (so the prose cannot drift either)."""
    text = (ROOT / "docs" / "usage.md").read_text(encoding="utf-8")
    block = text.split("est = memlib.estimate_training(model, seq_len=", 1)[1].split("est.peak_bytes", 1)[0]
    block = "\n".join(line.split("#")[0] for line in ("seq_len=" + block).splitlines())  # code, not comments
    shown = {m.group(1): ast.literal_eval(m.group(2)) for m in re.finditer(
        r"\b([a-z_]+)=(None|True|False|\"[^\"]*\"|[\d_.]+)", block) if m.group(1) in OPTIONS}
    assert len(shown) >= 30
    assert {k: v for k, v in shown.items() if v != OPTIONS[k].default} == {}


def test_every_entry_has_a_help_line_a_source_and_a_default_its_own_kind_accepts():
    for name, o in OPTIONS.items():
        assert o.kind in KINDS, name
        assert o.help and "\n" not in o.help and o.source and "\n" not in o.source, name
        assert o.check(o.default) == o.default or o.default is None, name
        if o.kind == "choice":
            assert o.default in o.values, name


def test_the_presets_set_only_table_options_with_values_their_kind_accepts():
    for r in training.RECIPES.values():
        for part in (r.options, r.lora, r.qlora, r.torch_adamw):
            for name, value in part.items():
                assert name in OPTIONS, (r.name, name)
                OPTIONS[name].check(value)


# ---- no default written twice ---------------------------------------------------------------------------------------
# recipes.py is not scanned: a preset's value is its framework's, sourced there, even where it equals memlib's default
SCANNED = ("memlib/training/options.py", "memlib/training/__init__.py", "memlib/training/estimate.py",
           "memlib/cli.py", "memlib/parallel/plan.py")
# `memlib serve`'s flags are estimate_inference's options (--ep there is the serving expert-parallel degree)
NOT_TRAINING = ("_add_serve",)


def written_defaults(source: str, where: str = "", options=None, skip=NOT_TRAINING) -> list[str]:
    """Literal copies of a table default in `source` (`options`: the table, training's unless given): a parameter
    or dataclass field named as an option whose literal default equals the table's, a dict(...) or {...} of three or
    more options each at its table default (a copy of the defaults), or an argparse flag of an option given its
    literal default. Calls inside the functions named in `skip` are not scanned."""
    options = OPTIONS if options is None else options
    out = []
    tree = ast.parse(source)
    skipped = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name in skip
               for n in ast.walk(f)}

    def same(name, node) -> bool:
        if name not in options or not isinstance(node, ast.Constant):
            return False
        d = options[name].default
        return node.value == d and type(node.value) is type(d) and d is not None

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            pos = a.posonlyargs + a.args
            pairs = list(zip(pos[len(pos) - len(a.defaults):], a.defaults)) + list(zip(a.kwonlyargs, a.kw_defaults))
            out += [f"{where}:{node.lineno} parameter {p.arg}={ast.unparse(d)}" for p, d in pairs if same(p.arg, d)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            if same(node.target.id, node.value):
                out.append(f"{where}:{node.lineno} field {node.target.id} = {ast.unparse(node.value)}")
        elif isinstance(node, ast.Call) and id(node) not in skipped:
            flags = [c.value for c in node.args if isinstance(c, ast.Constant) and isinstance(c.value, str)]
            pairs = [(kw.arg, kw.value) for kw in node.keywords if kw.arg]
            if getattr(node.func, "id", "") == "dict" and len(pairs) >= 3 and all(same(k, v) for k, v in pairs):
                out.append(f"{where}:{node.lineno} dict({', '.join(k for k, _ in pairs)}) of defaults")
            for kw in node.keywords:
                if kw.arg == "default" and any(f.startswith("--") and same(f[2:].replace("-", "_"), kw.value)
                                                 for f in flags):
                    out.append(f"{where}:{node.lineno} flag {flags[0]} default={ast.unparse(kw.value)}")
        elif isinstance(node, ast.Dict):
            pairs = [(k.value if isinstance(k, ast.Constant) else None, v) for k, v in zip(node.keys, node.values)]
            if len(pairs) >= 3 and all(same(k, v) for k, v in pairs):
                out.append(f"{where}:{node.lineno} {{{', '.join(repr(k) for k, _ in pairs)}}} of defaults")
    return out


def test_no_default_of_the_table_is_written_again_in_the_code():
    found = []
    for rel in SCANNED:
        found += written_defaults((ROOT / rel).read_text(encoding="utf-8"), rel)
    assert found == [], "defaults written outside memlib/training/option_table.py:\n" + "\n".join(found)


@pytest.mark.parametrize("snippet", [
    "def f(seq_len=2048): pass",
    "def f(*, double_quant=True): pass",
    "@dataclass\nclass S:\n    reduce_bucket_size: int = 500_000_000",
    "D = dict(precision='bf16-mixed', optimizer='adamw', finetune='full')",
    "D = {'optimizer_impl': 'foreach', 'loss': 'full', 'cp': 1}",
    "p.add_argument('--grad-accum', type=int, default=1)",
])
def test_the_scan_finds_a_default_written_twice(snippet):
    assert written_defaults(snippet)  # the scan can fail: each of these would be a second copy


def test_the_scan_leaves_other_values_alone():
    assert written_defaults("def f(seq_len=4096, zero_stage=3, grad_accum=8, x=2048): pass") == []
    assert written_defaults("s = dict(dp=count, pp=1, zero_stage=0, offload='none')") == []  # a layout, not defaults


# ---- one table, every surface: change an entry and everything follows ------------------------------------------------
@pytest.fixture
def changed_default(monkeypatch):
    o = OPTIONS["seq_len"]
    monkeypatch.setitem(OPTIONS, "seq_len", dataclasses.replace(o, default=4096))
    training.document()
    yield
    monkeypatch.undo()
    training.document()


def test_changing_a_default_in_the_table_changes_help_the_signature_the_cli_the_docs_and_the_estimate(changed_default):
    assert inspect.signature(memlib.estimate_training).parameters["seq_len"].default == 4096
    assert "seq_len=4096" in str(inspect.signature(memlib.estimate_training)).replace(": int = ", "=")
    text = pydoc.render_doc(memlib.estimate_training, renderer=pydoc.plaintext)
    assert "default 4096" in text and "default 2048" not in text
    seq_help = next(a.help for a in _estimate_parser()._actions if a.dest == "seq_len")
    assert "(default 4096)" in seq_help
    assert "| `seq_len` | an integer >= 1 | `4096` |" in option_table.markdown_table()
    # the estimate itself: 4096 tokens per sequence when seq_len is left out
    assert memlib.estimate_training("llama-7b").setup.seq_len == 4096
    assert memlib.TrainingSetup.create("llama-7b").seq_len == 4096


def test_after_the_change_is_undone_help_says_2048_again():
    assert "default 2048" in pydoc.render_doc(memlib.estimate_training, renderer=pydoc.plaintext)
    assert memlib.estimate_training("llama-7b").setup.seq_len == 2048


# ---- one validator per kind ---------------------------------------------------------------------------------------
BAD = {"flag": ("false", 1), "choice": (["x"], "nope"), "count": (True, 2.5, 0), "count0": (-1, True),
       "probability": (True, "0.1", 1.0), "positive": ("1.5", 0, float("inf")), "zero_stage": ("ZERO", 4, True),
       "targets": (5, []), "layer_counts": ("2,2", [0, 2]), "ce_fusion": ("fast",), "deferral": (-1, 1.5),
       "version": (4.44, "4")}  # version: serving's transformers_version (main's branch), no training option yet


@pytest.mark.parametrize("name", list(OPTIONS))
def test_each_options_bad_values_are_refused_by_its_kinds_validator_naming_it(name):
    for bad in BAD[OPTIONS[name].kind]:
        with pytest.raises(ValueError, match=re.escape(name)):
            memlib.estimate_training("llama-7b", **{name: bad})


def test_every_kind_has_bad_values_here():
    assert set(BAD) == set(KINDS)


@pytest.mark.parametrize("kind,value,words", [
    ("flag", "no", "must be True or False"), ("choice", ["bf16"], "unknown"), ("count", 8.0, "pass 8"),
    ("probability", True, "probability in [0, 1)"), ("positive", "2", "must be a number"),
])
def test_one_message_per_kind_whichever_option(kind, value, words):
    messages = set()
    for name, o in OPTIONS.items():
        if o.kind == kind:
            with pytest.raises(ValueError) as e:
                o.check(value)
            assert words in str(e.value) and name in str(e.value)
            messages.add(str(e.value).replace(name, "NAME").split(" (or None")[0].split("; accepted")[0])
    assert len(messages) == 1, messages  # the same sentence for every option of the kind


def test_the_cli_flags_turn_options_on_and_off_and_leave_them_unset():
    p = cli._parser()
    a = p.parse_args(["estimate", "llama-7b", "--no-double-quant", "--activation-offload"])
    assert a.double_quant is False and a.activation_offload is True and a.keep_outputs is None
    a = p.parse_args(["estimate", "llama-7b", "--zero-stage", "3", "--pp-split", "16,16", "--lora-targets", "qv"])
    assert a.zero_stage == 3 and a.pp_split == (16, 16) and a.lora_targets == "qv"


# ---- no import cycle options <-> recipes ----------------------------------------------------------------------------
def _imports(rel: str) -> set[str]:
    tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
    return names


def test_recipes_and_the_table_do_not_import_options():
    assert not any("training.options" in n for n in _imports("memlib/training/recipes.py"))
    assert not any(n.startswith("memlib.training.options") or n.endswith("recipes")
                   for n in _imports("memlib/training/option_table.py"))
    assert "memlib.training.recipes" in _imports("memlib/training/options.py")


# ---- property: whatever value goes into whatever option, a result or a ValueError ------------------------------------
ANY_VALUE = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**6), st.floats(allow_nan=True, allow_infinity=True),
                      st.text(max_size=8), st.sampled_from(["false", "no", "0.1", "FULL_SHARD", "bf16", "qv", "te"]),
                      st.lists(st.integers(-1, 40), max_size=3), st.lists(st.text(max_size=4), max_size=2))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(name=st.sampled_from(list(OPTIONS)), value=ANY_VALUE)
def test_any_value_of_any_option_is_a_result_or_a_value_error_naming_it(name, value):
    try:
        OPTIONS[name].check(value)
    except ValueError as e:
        assert name in str(e), (name, value, str(e))  # the kind's message names the option
        with pytest.raises(ValueError):
            memlib.estimate_training("llama-7b", **{"seq_len": 256, name: value})
        return
    try:
        e = memlib.estimate_training("llama-7b", **{"seq_len": 256, name: value})
    except ValueError as err:  # a value of the right kind that does not fit the setup: said, never a traceback
        assert str(err)
    else:
        assert e.peak_bytes > 0


# ---- presets: an option the user never typed is never the user's error -----------------------------------------------
def test_a_preset_option_that_does_not_apply_to_the_chosen_optimizer_is_dropped():
    """torchtune's preset picks torch's fused AdamW; with Adafactor (torch has no fused Adafactor) the preset's
    optimizer_impl is dropped: the same run as torchtune's other options with torch's default implementation."""
    e = memlib.estimate_training("llama-2-7b", recipe="torchtune", optimizer="adafactor")
    assert "optimizer_impl" not in dict(e.setup.recipe_set)
    same = memlib.estimate_training("llama-2-7b", precision="bf16", recompute="full", optimizer="adafactor")
    assert e.peak_bytes == same.peak_bytes
    with pytest.raises(ValueError, match="optimizer_impl='fused' does not apply to adafactor"):
        memlib.estimate_training("llama-2-7b", optimizer="adafactor", optimizer_impl="fused")


def test_an_error_about_an_option_the_preset_set_says_the_preset_set_it():
    with pytest.raises(ValueError, match=r"loss='chunked-head' set by recipe 'litgpt'"):
        memlib.estimate_training("llama-2-7b", recipe="litgpt", tp=2)
