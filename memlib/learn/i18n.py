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

import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Entry", "paragraphs", "placeholders", "read_po", "write_po", "translate_text"]

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
    text = Path(path).read_text(encoding="utf-8")
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
