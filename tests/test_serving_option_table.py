"""estimate_inference's option table (memlib.serving.inference.SERVING_OPTIONS) is made by the same machinery as
estimate_training's (memlib/options.py), with the same kinds and the same messages: every serving option is in the
signature, `memlib serve`'s flags and the docs; no serving default is written a second time in the entry points;
changing an entry changes help(), the CLI, the docs and the estimate; and issue 43's classes of bad input on the
serving entry points each give one clear error naming the argument (issue 43)."""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import pathlib
import pydoc
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memlib
from memlib import cli, options
from memlib.serving import inference
from memlib.serving.inference import SERVING_FLAGS, SERVING_OPTIONS
from memlib.training.option_table import OPTIONS as TRAINING_OPTIONS
from test_option_table import written_defaults

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODEL = "llama-2-7b"


def _serve_parser():
    return cli._parser()._subparsers._group_actions[0].choices["serve"]


def _tool():
    spec = importlib.util.spec_from_file_location("make_option_table", ROOT / "tools" / "make_option_table.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool


# ---- completeness --------------------------------------------------------------------------------------------------
def test_every_serving_option_is_in_the_signature_in_order_with_the_tables_default():
    for fn in (memlib.estimate_inference, inference._estimate_inference):
        params = inspect.signature(fn).parameters
        assert list(params) == ["model", *SERVING_OPTIONS]
        for name, o in SERVING_OPTIONS.items():
            assert params[name].default == o.default, name
            assert params[name].kind == inspect.Parameter.POSITIONAL_OR_KEYWORD, name  # positional calls still work
    # the body takes exactly the table's options (a new entry without its parameter there fails here)
    assert list(inspect.signature(inference._estimate).parameters) == ["model", *SERVING_OPTIONS]


def test_every_serving_option_has_a_serve_flag_with_its_help_and_choices():
    actions = {a.dest: a for a in _serve_parser()._actions}
    for name, o in SERVING_OPTIONS.items():
        a = actions[name]
        assert SERVING_FLAGS.get(name, o.flag) in a.option_strings and a.default is None, name
        assert o.help in a.help and "default" in a.help, name
        if o.kind == "choice":
            assert tuple(a.choices) == o.values, name
    assert actions["tp"].option_strings == ["--count"]  # memlib serve --count N: the GPUs, as tp


def test_every_serving_option_is_in_the_docs_table_and_the_table_is_current():
    tool = _tool()
    text = (ROOT / "docs" / "usage.md").read_text(encoding="utf-8")
    assert tool.render(text) == text, "docs/usage.md's option tables are out of date: python tools/make_option_table.py"
    block = text.split(tool.SERVING_BEGIN, 1)[1].split(tool.SERVING_END, 1)[0]
    for name, o in SERVING_OPTIONS.items():
        assert f"| `{name}` |" in block and o.source in block and o.help in block, name
    assert "| `tp` |" in block and "`--count`" in block


def test_every_serving_entry_has_a_help_line_a_source_and_a_default_its_kind_accepts():
    for name, o in SERVING_OPTIONS.items():
        assert o.kind in options.KINDS, name
        assert o.help and "\n" not in o.help and o.source and "\n" not in o.source, name
        assert o.check(o.default) == o.default, name
        if o.kind == "choice":
            assert o.default in o.values or (o.default is None and o.none), name


def test_serving_uses_the_shared_kinds_only():
    """Every serving option's kind is one of memlib/options.py's own (not a kind serving re-implemented)."""
    shared = {"flag", "choice", "count", "count0", "probability", "positive", "version"}
    assert {o.kind for o in SERVING_OPTIONS.values()} <= shared
    assert shared <= set(options.KINDS)


@pytest.mark.parametrize("value,words", [
    (4.44, "must be a version string such as '4.44.2', got 4.44 (float)"),  # 4.4 and 4.40 are the same float
    ((4, 44), "must be a version string"), ("four.44", "is not a version such as"), ("4", "is not a version such as"),
    ("4.30.2", "'4.30.2': releases before 4.31 are not modelled"), (True, "got True (bool)"),
])
def test_the_version_kind_refuses_what_is_not_a_release_naming_the_option(value, words):
    """The kind transformers_version (main's branch) lands into: checked like every other kind, by its one validator."""
    o = options.option("transformers_version", "version", None, "h", "s", values=("4.31",), none="logits as given")
    with pytest.raises(ValueError, match=re.escape(words)) as e:
        o.check(value)
    assert "transformers_version" in str(e.value)
    assert o.check("4.44.2") == "4.44.2" and o.check("4.45.0.dev0") == "4.45.0.dev0" and o.check(None) is None
    assert o.accepts == "a version string such as '4.44.2', from '4.31'; None: logits as given"


def test_a_kind_is_defined_once():
    with pytest.raises(ValueError, match="already defined"):
        options.register_kind("count", options.Kind("x", lambda n, v, _: v, int, {}))
    with pytest.raises(ValueError, match="unknown kind 'counts'"):
        options.option("batch", "counts", 1, "h", "s")


# ---- no serving default written twice ------------------------------------------------------------------------------
# the entry points: estimate_inference's body and checks, its setup, max_batch/max_context, memlib serve
ENTRY_POINTS = ("_estimate_inference", "_estimate", "_check", "InferenceSetup", "max_batch", "max_context",
                "_add_serve", "cmd_serve")


def _parts(rel: str) -> str:
    import ast
    source = (ROOT / rel).read_text(encoding="utf-8")
    tree = ast.parse(source)
    return "\n\n".join(ast.get_source_segment(source, n) for n in tree.body
                       if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name in ENTRY_POINTS)


def test_no_serving_default_is_written_again_in_the_entry_points():
    found = []
    for rel in ("memlib/serving/inference.py", "memlib/cli.py"):
        found += written_defaults(_parts(rel), rel, SERVING_OPTIONS, skip=())
    assert found == [], "serving defaults written outside SERVING_OPTIONS:\n" + "\n".join(found)
    assert _parts("memlib/serving/inference.py").count("def ") >= 5  # the scan saw the functions it names


@pytest.mark.parametrize("snippet", [
    "def estimate_inference(model, batch=1, context_len=4096): pass",
    "@dataclass\nclass S:\n    mla_cache: str = 'latent'",
    "v.add_argument('--kv-cache', default='bf16')",
    "D = dict(weights='auto', kv_cache='bf16', logits='last')",
])
def test_the_scan_finds_a_serving_default_written_twice(snippet):
    assert written_defaults(snippet, "", SERVING_OPTIONS, skip=())


# ---- one table, every surface: change an entry and everything follows ------------------------------------------------
@pytest.fixture
def batch_default_2(monkeypatch):
    monkeypatch.setitem(SERVING_OPTIONS, "batch", dataclasses.replace(SERVING_OPTIONS["batch"], default=2))
    inference.document()
    yield
    monkeypatch.undo()
    inference.document()


def test_changing_a_serving_default_changes_help_the_signature_the_cli_the_docs_and_the_estimate(batch_default_2,
                                                                                                  capsys):
    assert inspect.signature(memlib.estimate_inference).parameters["batch"].default == 2
    text = pydoc.render_doc(memlib.estimate_inference, renderer=pydoc.plaintext)
    assert "batch: sequences served at once. Accepts an integer >= 1; default 2" in " ".join(text.split())
    assert "(default 2)" in next(a.help for a in _serve_parser()._actions if a.dest == "batch")
    assert "| `batch` | an integer >= 1 | `2` |" in inference.SERVING_TABLE.markdown_table()
    # the estimate: Llama-2-7B's bf16 KV cache is 2 (K, V) x 32 layers x 32 KV heads x 128 head_dim x 2 bytes =
    # 524,288 B per token; two sequences of the default 4,096 tokens hold 2 x 4,096 x 524,288 = 4,294,967,296 B
    est = memlib.estimate_inference(MODEL)
    assert est.setup.batch == 2 and est.kv_cache_bytes == 4_294_967_296
    assert cli.main(["serve", MODEL, "--json"]) == 0  # memlib serve without --batch: the table's default
    assert '"batch": 2' in capsys.readouterr().out


def test_after_the_change_is_undone_help_says_1_again():
    assert inspect.signature(memlib.estimate_inference).parameters["batch"].default == 1
    assert memlib.estimate_inference(MODEL).kv_cache_bytes == 4096 * 524_288  # one sequence: 2,147,483,648 B


# ---- one message per kind, whichever table -------------------------------------------------------------------------
@pytest.mark.parametrize("kind,value,words", [
    ("count", 8.0, "pass 8"), ("count", "8", "must be an integer"), ("count", True, "must be an integer"),
    ("count", 0, "must be >= 1"), ("choice", ["x"], "unknown"), ("choice", "NOPE", "unknown"),
])
def test_one_message_per_kind_across_training_and_serving(kind, value, words):
    messages, tables = set(), set()
    for table, opts in (("training", TRAINING_OPTIONS), ("serving", SERVING_OPTIONS)):
        for name, o in opts.items():
            if o.kind != kind:
                continue
            with pytest.raises(ValueError) as e:
                o.check(value)
            assert words in str(e.value) and name in str(e.value), (name, str(e.value))
            messages.add(str(e.value).replace(name, "NAME", 1).split(" (or None")[0].split("; accepted")[0])
            tables.add(table)
    assert tables == {"training", "serving"}  # the kind is used by both tables
    assert len(messages) == 1, messages  # the same sentence for every option of the kind, in both tables


# ---- issue 43's classes of bad input, on the serving entry points ----------------------------------------------------
BAD = [  # (option, value, what the message must say besides the option's name)
    ("batch", "8", "must be an integer, got '8' (str)"),                 # a numeric string
    ("context_len", "4096", "must be an integer, got '4096' (str)"),
    ("tp", "2", "must be an integer"),
    ("prefill_tokens", "8192", "must be an integer"),
    ("batch", 8.0, "pass 8"),                                            # a float count
    ("batch", True, "must be an integer, got True (bool)"),              # a bool as a count
    ("ep", False, "must be an integer, got False (bool)"),
    ("group_size", True, "must be an integer, got True (bool)"),
    ("batch", "no", "must be an integer, got 'no' (str)"),               # "no"/"false" where a value goes
    ("logits", "false", "accepted: 'last', 'all'"),
    ("logits", False, "unknown logits False"),                           # a bool where a name goes
    ("weights", ["int4-awq"], "unknown weights ['int4-awq']"),           # a list where a name goes
    ("kv_cache", ["fp8"], "unknown kv_cache ['fp8']"),
    ("engine", ("vllm",), "unknown engine ('vllm',)"),
    ("kv_cache", "FP8", "unknown kv_cache 'FP8'; accepted: 'bf16'"),     # unknown enum values
    ("weights", "int4", "unknown weights 'int4'; accepted: 'auto'"),
    ("engine", "vLLM", "accepted: 'hf', 'vllm', 'sglang', 'llama.cpp'"),
    ("mla_cache", "compressed", "accepted: 'latent', 'full'"),
    ("kv_cache_v", "q9_0", "unknown kv_cache_v 'q9_0'"),
]


@pytest.mark.parametrize("name,value,words", BAD)
def test_issue43_classes_on_estimate_inference_name_the_argument(name, value, words):
    with pytest.raises(ValueError) as e:
        memlib.estimate_inference(MODEL, **{name: value})
    assert name in str(e.value) and words in str(e.value), str(e.value)


@pytest.mark.parametrize("name,value,words", [b for b in BAD if b[0] not in ("batch", "context_len")])
def test_max_batch_and_max_context_pass_the_same_errors_on(name, value, words):
    for fn, args in ((memlib.max_batch, (MODEL, "a100-80gb", 1024)), (memlib.max_context, (MODEL, "a100-80gb", 1))):
        with pytest.raises(ValueError) as e:
            fn(*args, **{name: value})
        assert name in str(e.value) and words in str(e.value), (fn.__name__, str(e.value))


def test_the_searched_option_given_to_max_batch_or_max_context_is_refused_by_name():
    with pytest.raises(ValueError, match=r"max_batch searches batch .* batch=8 cannot be given"):
        memlib.max_batch(MODEL, "a100-80gb", batch=8)
    with pytest.raises(ValueError, match=r"max_context searches context_len .* context_len=4096 cannot be given"):
        memlib.max_context(MODEL, "a100-80gb", context_len=4096)


def test_a_bool_or_a_string_as_a_fraction_is_refused_by_max_batch():
    for bad in (True, "0.1"):
        with pytest.raises(ValueError, match="allocator_headroom is a fraction"):
            memlib.max_batch(MODEL, "a100-80gb", 1024, allocator_headroom=bad)


def test_a_misspelt_or_unknown_serving_option_is_a_type_error_naming_the_one_meant():
    with pytest.raises(TypeError, match=r"estimate_inference\(\) got an unexpected keyword argument 'kv_cach' "
                                        r"\(did you mean kv_cache\?\)"):
        memlib.estimate_inference(MODEL, kv_cach="fp8")
    with pytest.raises(TypeError, match="did you mean mla_cache"):
        memlib.max_batch(MODEL, "a100-80gb", 1024, mla_cach="full")
    with pytest.raises(TypeError, match="missing a required argument: 'model'"):
        memlib.estimate_inference()


def test_positional_and_numpy_arguments_still_work():
    """estimate_inference(model, batch, context_len, weights, kv_cache, tp, ...) as before; numpy counts as ints."""
    a = memlib.estimate_inference(MODEL, 2, 1024, "bf16", "fp8", 2)
    b = memlib.estimate_inference(MODEL, batch=np.int64(2), context_len=np.int32(1024), weights="bf16",
                                  kv_cache="fp8", tp=np.int64(2))
    assert a.peak_bytes == b.peak_bytes and a.setup.tp == 2
    # fp8 cache over tp=2: 2 (K, V) x 32 layers x 16 KV heads per GPU x 128 x 1 byte = 131,072 B per token per GPU
    assert a.kv_bytes_per_token == 131_072


@pytest.mark.parametrize("argv,flag", [
    (["--kv-cache", "FP8"], "--kv-cache"), (["--batch", "8.5"], "--batch"), (["--count", "two"], "--count"),
    (["--logits", "false"], "--logits"),
])
def test_memlib_serve_refuses_bad_flags_naming_them(argv, flag, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["serve", MODEL, *argv])
    assert e.value.code == 2 and flag in capsys.readouterr().err


# ---- property: whatever value goes into whatever serving option, a result or a ValueError naming it -----------------
ANY_VALUE = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**5), st.floats(allow_nan=True, allow_infinity=True),
                      st.text(max_size=6), st.sampled_from(["false", "no", "8", "fp8", "FP8", "vllm", "all", "full"]),
                      st.lists(st.integers(-1, 40), max_size=2), st.lists(st.text(max_size=4), max_size=2))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(name=st.sampled_from(list(SERVING_OPTIONS)), value=ANY_VALUE)
def test_any_value_of_any_serving_option_is_a_result_or_a_value_error_naming_it(name, value):
    try:
        SERVING_OPTIONS[name].check(value)
    except ValueError as e:
        assert name in str(e), (name, value, str(e))
        with pytest.raises(ValueError, match=re.escape(name)):
            memlib.estimate_inference(MODEL, **{"context_len": 256, name: value})
        return
    try:
        est = memlib.estimate_inference(MODEL, **{"context_len": 256, name: value})
    except ValueError as err:  # the right kind but not for this model or engine: said, never a traceback
        assert str(err)
    else:
        assert est.peak_bytes > 0
