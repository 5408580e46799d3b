"""Translation catalogs: gettext PO files keyed by the English paragraphs.

A translatable text (a notebook's markdown cell, a page of the docs) is cut into paragraphs
(`paragraphs`); each paragraph is a PO entry whose msgid is the English paragraph and whose msgstr
is its translation. A changed English paragraph is a new msgid with no translation, so the catalog
check (`tools/translate.py check`) fails until the translation is written: nothing goes stale
silently. The inline values (``{eval}`name` ``) are shared: a translation keeps the same roles and
the same link targets (`placeholders`), so both editions show the same computed figures.

The PO format is GNU gettext's (msgctxt, msgid, msgstr, ``#,`` flags, ``#|`` previous msgid); this
module reads and writes the subset it uses with the standard library only, so the grader can load
a catalog inside JupyterLite too.
"""
from __future__ import annotations

import os
import re
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

__all__ = ["Entry", "paragraphs", "placeholders", "read_po", "write_po", "translate_text", "parse_po",
           "set_language", "get_language", "language", "tr", "trf", "msg", "Msg", "number_template", "LANGUAGES"]

_FENCE = re.compile(r"^\s*(```|~~~)")
_EVAL = re.compile(r"\{eval\}`[^`]+`")
_LINK_TARGET = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


@dataclass
class Entry:
    """One PO entry: a paragraph (msgid), its translation (msgstr) and its flags."""

    msgid: str
    msgstr: str = ""
    msgctxt: str | None = None
    flags: set = field(default_factory=set)
    previous: str | None = None      # `#| msgid`: the English this translation was written for
    references: list = field(default_factory=list)
    comments: list = field(default_factory=list)   # `#.` notes for translators

    @property
    def translated(self) -> bool:
        return bool(self.msgstr) and "fuzzy" not in self.flags


def _is_translatable(block: str) -> bool:
    """A paragraph worth translating has words outside code fences, math, comments and roles."""
    text = re.sub(r"```.*?```|~~~.*?~~~", "", block, flags=re.S)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"\$\$.*?\$\$|\$[^$]*\$", "", text, flags=re.S)
    text = _EVAL.sub("", text)
    text = re.sub(r"`[^`]*`", "", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return re.search(r"[A-Za-z]{2,}", text) is not None


def paragraphs(text: str) -> list[tuple[str, bool]]:
    """Cut a Markdown text into blocks separated by blank lines, fenced code and $$ math kept whole.

    Returns (block, translatable) pairs whose blocks, joined with blank lines, give the text back
    (trailing whitespace per block aside); `translatable` is False for blocks with no prose.
    """
    blocks: list[str] = []
    current: list[str] = []
    in_fence = False
    in_math = False
    for line in text.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and line.strip().startswith("$$") and line.strip().count("$$") % 2 == 1:
            in_math = not in_math
        if not line.strip() and not in_fence and not in_math:
            if current:
                blocks.append("\n".join(current))
                current = []
            continue
        current.append(line)
    if current:
        blocks.append("\n".join(current))
    return [(b, _is_translatable(b)) for b in blocks]


def placeholders(text: str) -> tuple[list[str], list[str]]:
    """The inline values and link targets a translation must keep: (eval roles, link targets)."""
    return sorted(_EVAL.findall(text)), sorted(_LINK_TARGET.findall(text))


def translate_text(text: str, catalog: dict[str, str]) -> tuple[str, list[str]]:
    """The text with each translated paragraph replaced; also the paragraphs with no translation."""
    out, missing = [], []
    for block, translatable in paragraphs(text):
        if translatable and catalog.get(block):
            out.append(catalog[block])
        else:
            out.append(block)
            if translatable:
                missing.append(block)
    return "\n\n".join(out), missing


# --- the PO format -------------------------------------------------------------------------------

def _quote(s: str) -> str:
    s = s.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t")
    lines = s.split("\n")
    parts = [line + "\\n" for line in lines[:-1]] + [lines[-1]]
    parts = [p for p in parts if p]
    if len(parts) == 1:
        return f'"{parts[0]}"'
    return '""\n' + "\n".join(f'"{p}"' for p in parts) if parts else '""'


_UNESCAPE = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


def _unquote(s: str) -> str:
    s = s.strip()
    if not (s.startswith('"') and s.endswith('"')):
        raise ValueError(f"malformed PO string: {s[:60]!r}")
    return re.sub(r"\\(.)", lambda m: _UNESCAPE.get(m.group(1), m.group(1)), s[1:-1])


def write_po(path: str | Path, entries: list[Entry], header: str = "") -> None:
    """Write a PO file (UTF-8), the header entry first."""
    lines = []
    head = header or "Content-Type: text/plain; charset=UTF-8\nLanguage: zh_CN\n"
    lines += ['msgid ""', "msgstr " + _quote(head), ""]
    for e in entries:
        lines += [f"#. {c}" for c in e.comments]
        if e.references:
            lines.append("#: " + " ".join(e.references))
        if e.flags:
            lines.append("#, " + ", ".join(sorted(e.flags)))
        if e.previous is not None:
            lines += ["#| msgid " + q for q in _quote(e.previous).split("\n")]
        if e.msgctxt is not None:
            lines.append("msgctxt " + _quote(e.msgctxt))
        lines.append("msgid " + _quote(e.msgid))
        lines.append("msgstr " + _quote(e.msgstr))
        lines.append("")
    Path(path).write_text("\n".join(lines), encoding="utf-8")


def read_po(path: str | Path) -> tuple[str, list[Entry]]:
    """Read a PO file written by `write_po` (or by hand in the same subset): (header, entries)."""
    return parse_po(Path(path).read_text(encoding="utf-8"), path)


def parse_po(text: str, path: str | Path = "<po>") -> tuple[str, list[Entry]]:
    """The PO text's (header, entries)."""
    header, entries = "", []
    for chunk in re.split(r"\n\s*\n", text.strip()):
        e = Entry(msgid="")
        key, values, prev = None, {}, []
        for line in chunk.split("\n"):
            if line.startswith("#|"):
                body = line[2:].strip()
                prev.append(body[len("msgid "):] if body.startswith("msgid ") else body)
            elif line.startswith("#,"):
                e.flags |= {f.strip() for f in line[2:].split(",") if f.strip()}
            elif line.startswith("#:"):
                e.references += line[2:].split()
            elif line.startswith("#."):
                e.comments.append(line[2:].strip())
            elif line.startswith("#"):
                continue
            elif line.startswith(("msgctxt ", "msgid ", "msgstr ")):
                key, rest = line.split(" ", 1)
                values[key] = [rest]
            elif line.startswith('"') and key:
                values[key].append(line)
            elif line.strip():
                raise ValueError(f"{path}: cannot read PO line {line[:60]!r}")
        if "msgid" not in values:
            raise ValueError(f"{path}: an entry without msgid: {chunk[:80]!r}")
        joined = {k: "".join(_unquote(p) for p in v) for k, v in values.items()}
        if joined["msgid"] == "" and "msgctxt" not in joined:
            header = joined.get("msgstr", "")
            continue
        e.msgid, e.msgstr = joined["msgid"], joined.get("msgstr", "")
        e.msgctxt = joined.get("msgctxt")
        e.previous = "".join(_unquote(p) for p in prev) if prev else None
        entries.append(e)
    return header, entries


# --- the grader's language: a runtime catalog keyed by the English strings ------------------------
# The grader's texts (the exercises' prompts, hints, slips and worked answers; grading.py's feedback; the
# practice questions and the mock interview) are English in the code; their translations live in
# memlib/learn/locale/<lang>/LC_MESSAGES/memlib.po (package data, read with importlib.resources, so they ship
# in the wheel JupyterLite installs). `tools/translate.py extract` writes that catalog from the exercise
# registry and from the strings marked with tr()/trf() in the grader's modules.
#
# A text rendered with memlib's numbers now (a worked answer) is looked up by its *number template*: every
# number written as {0}, {1}, ... (number_template), so the translation is written once and gets the
# numbers of the day. A template with named fields (trf: "not yet: {direction}") keeps its names. A text made
# before the language is known (a practice question's title and prompt, a scenario) is a msg(): the English string,
# translated by tr() as its template when it is shown.

LANGUAGES = ("en", "zh")
_ENV = "MEMLIB_LANG"
_chosen: str | None = None
_this_call: ContextVar[str | None] = ContextVar("memlib_language", default=None)
# a number standing alone ("13.48 GB", "6,738,415,616", "00.1"), not one inside a name ("LLaMA-7B", "bf16", "Llama-2-70B")
_NUMBER = re.compile(r"(?<![\w.{-])\d+(?:[.,]\d+)*(?![\w}-])")
_FIELD = re.compile(r"\{(\w+)\}")


def _valid(lang) -> str:
    if not isinstance(lang, str) or lang.lower().replace("_", "-").split("-")[0] not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)} (e.g. set_language('zh')), got {lang!r}")
    return lang.lower().replace("_", "-").split("-")[0]


def set_language(lang: str | None) -> None:
    """The grader's language from now on: "zh" (中文) or "en"; None goes back to the default (the
    MEMLIB_LANG environment variable, else Chinese for a notebook opened from the Chinese copies, zh/, else
    English)."""
    global _chosen
    _chosen = None if lang is None else _valid(lang)


def get_language(lang: str | None = None) -> str:
    """The language in force: `lang` if given, else this call's (`language`), else set_language's, else the
    default (see set_language)."""
    if lang is not None:
        return _valid(lang)
    for chosen in (_this_call.get(), _chosen, os.environ.get(_ENV) or None):
        if chosen is not None:
            return _valid(chosen)
    try:  # a notebook of the Chinese copies (zh/notebooks, zh/exercises) runs with its folder as cwd
        here = Path.cwd()
        if here.parent.name == "zh" and here.name in ("notebooks", "exercises"):
            return "zh"
    except OSError:
        pass
    return "en"


@contextmanager
def language(lang: str | None):
    """`with language("zh"): ...`: the grader speaks `lang` inside the block (a function's `lang=`)."""
    token = _this_call.set(None if lang is None else _valid(lang))
    try:
        yield
    finally:
        _this_call.reset(token)


def number_template(text: str) -> tuple[str, list[str]]:
    """("LLaMA-7B has {0} parameters", ["6,738,415,616"]) for "LLaMA-7B has 6,738,415,616 parameters"."""
    numbers: list[str] = []

    def field(m):
        numbers.append(m.group(0))
        return "{" + str(len(numbers) - 1) + "}"

    return _NUMBER.sub(field, text), numbers


@lru_cache(maxsize=None)
def runtime_catalog(lang: str) -> dict[str, str]:
    """The confirmed translations of the grader's texts into `lang` (empty for English)."""
    if lang == "en":
        return {}
    try:
        text = resources.files("memlib.learn").joinpath("locale", lang, "LC_MESSAGES", "memlib.po").read_text(
            encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError, OSError):
        return {}
    return {e.msgid: e.msgstr for e in parse_po(text)[1] if e.translated}


def _fill(template: str, values) -> str:
    """Put values into a translation's {0}/{name} fields (not str.format: a text may hold other braces)."""
    def put(m):
        key = m.group(1)
        if isinstance(values, dict):
            return values.get(key, m.group(0))
        return values[int(key)] if key.isdigit() and int(key) < len(values) else m.group(0)

    return _FIELD.sub(put, template)


def tr(text: str, lang: str | None = None) -> str:
    """`text` in the grader's language: its translation, else (a text with memlib's numbers) its number
    template's translation with the numbers put back, else the English text."""
    lang = get_language(lang)
    if lang == "en" or not isinstance(text, str) or not text:
        return text
    if isinstance(text, Msg):  # built from a template: translate the template, fill it with the same fields
        return _fill(tr(text.template, lang), {k: tr(v, lang) if isinstance(v, Msg) else v
                                                for k, v in text.fields.items()})
    cat = runtime_catalog(lang)
    if text in cat:
        return cat[text]
    template, numbers = number_template(text)
    if numbers and template in cat:
        return _fill(cat[template], numbers)
    return text


def trf(template: str, lang: str | None = None, **fields) -> str:
    """A message with named fields, translated, then filled: trf("not yet: {direction}.", direction=...)."""
    return _fill(tr(template, lang), {k: str(v) for k, v in fields.items()})


class Msg(str):
    """An English text made from a template and its fields (see msg): it is the English text wherever a string
    is used, and tr() translates it as its template, so a text made once (a practice question's prompt, drawn
    before the learner picks a language) is shown in the language in force when it is shown."""

    def __new__(cls, template: str, fields: dict):
        self = super().__new__(cls, _fill(template, {k: str(v) for k, v in fields.items()}))
        self.template, self.fields = template, dict(fields)
        return self

    def __reduce__(self):
        return (Msg, (self.template, self.fields))


def msg(template: str, **fields) -> Msg:
    """trf's lazy twin: msg("Weights of {model} in {fmt}", model=m, fmt=w) is the English text now and is
    translated by tr() when shown; a field that is itself a msg() is translated too. Fields are written with
    str() (format a number before passing it: the translation keeps the same figures)."""
    return Msg(template, {k: v if isinstance(v, Msg) else str(v) for k, v in fields.items()})
