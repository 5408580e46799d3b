"""The Chinese edition's catalogs: extract the English paragraphs, check the translations, build.

    python tools/translate.py extract            # update i18n/zh/**.po from the English sources
    python tools/translate.py check              # exit 1 if a catalog is out of date, untranslated or stale
    python tools/translate.py stats              # per catalog: entries, translated, fuzzy, words left
    python tools/translate.py todo CATALOG.po > work.txt   # its untranslated/stale entries, for a translator
    python tools/translate.py fill CATALOG.po work.txt     # write the translations from that file back
    python tools/translate.py build [--out zh]   # the Chinese copies (zh/notebooks, zh/exercises, zh/docs, zh/book)
    python tools/translate.py glossary           # list catalog entries that miss the glossary's Chinese term

Sources: every notebook's markdown cells (notebooks/*.ipynb, exercises/*.ipynb), docs/cheatsheet.md
and book/index.md. One catalog per source, `i18n/zh/<folder>/<stem>.po`, one entry per paragraph
(`memlib.learn.i18n.paragraphs`). Code cells and their outputs are not translated: the Chinese
notebooks carry the same code and the same stored outputs and inline values.

`build` writes the Chinese copies: each source with the same code cells, outputs and inline values
(`metadata.user_expressions`), its markdown replaced paragraph by paragraph (an untranslated
paragraph stays English and is counted). A translated heading keeps the English heading's anchor
(`<a id="english-slug"></a>` before it) and links to it (`#slug`, `X.ipynb#slug`) are rewritten to
the Chinese heading's slug; links between translated sources stay as they are (so they reach the
Chinese copies, laid out as the repository is under zh/), links to anything else reach the English
file (one `../` more). The copies under zh/ are committed; tests/test_i18n.py checks they equal
what `build` writes.

When an English paragraph changes, `extract` keeps the old translation only as a suggestion (flag
`fuzzy`, the old English under `#|`), and `check` fails until a translator confirms or rewrites it.
"""
from __future__ import annotations

import argparse
import copy
import difflib
import json
import posixpath
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memlib.learn.i18n import Entry, number_template, paragraphs, placeholders, read_po, write_po  # noqa: E402

CATALOGS = ROOT / "i18n" / "zh"
GLOSSARY = ROOT / "i18n" / "glossary.tsv"
ZH = ROOT / "zh"  # the committed Chinese copies, in the repository's layout


def sources() -> list[Path]:
    """The English sources, relative to the repository root."""
    nbs = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "exercises").glob("*.ipynb"))
    docs = [ROOT / "docs" / "cheatsheet.md", ROOT / "book" / "index.md"]
    return [p.relative_to(ROOT) for p in nbs + docs]


def catalog_path(source: Path) -> Path:
    return CATALOGS / source.parent / (source.stem + ".po")


def texts(source: Path) -> list[tuple[str, str]]:
    """(where, markdown text) for each translatable text of a source."""
    path = ROOT / source
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        return [(f"{source}:cell{i}", "".join(c["source"])) for i, c in enumerate(cells)
                if c["cell_type"] == "markdown"]
    return [(str(source), path.read_text(encoding="utf-8"))]


def english_entries(source: Path) -> list[Entry]:
    """The source's translatable paragraphs, in order, each once (with every place it occurs)."""
    seen: dict[str, Entry] = {}
    for where, text in texts(source):
        for block, translatable in paragraphs(text):
            if not translatable:
                continue
            entry = seen.setdefault(block, Entry(msgid=block))
            entry.references.append(where)
    return list(seen.values())


def _memory() -> dict[str, str]:
    """Every confirmed translation in any catalog: the same English gets the same Chinese."""
    mem = {}
    for po in CATALOGS.rglob("*.po"):
        for e in read_po(po)[1]:
            if e.translated:
                mem.setdefault(e.msgid, e.msgstr)
    return mem


def merge(source: Path, memory: dict[str, str]) -> list[Entry]:
    """The catalog `extract` would write: new English paragraphs, old translations carried over."""
    old = {e.msgid: e for e in read_po(catalog_path(source))[1]} if catalog_path(source).exists() else {}
    new = english_entries(source)
    unused = [e for k, e in old.items() if k not in {n.msgid for n in new} and e.msgstr]
    for e in new:
        if e.msgid in old:
            prior = old[e.msgid]
            e.msgstr, e.flags, e.previous, e.comments = prior.msgstr, prior.flags, prior.previous, prior.comments
        elif e.msgid in memory:
            e.msgstr = memory[e.msgid]
        elif unused:
            best = max(unused, key=lambda o: difflib.SequenceMatcher(None, o.msgid, e.msgid).ratio())
            if difflib.SequenceMatcher(None, best.msgid, e.msgid).ratio() > 0.6:
                e.msgstr, e.flags, e.previous = best.msgstr, {"fuzzy"}, best.msgid
                unused.remove(best)
    return new


def extract() -> None:
    memory = _memory()
    for source in sources():
        path = catalog_path(source)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_po(path, merge(source, memory))
        print(f"{path.relative_to(ROOT)}")
    extract_runtime()


def entry_problem(e: Entry, complete: bool = True) -> str | None:
    """Why this entry keeps its source's Chinese copy from being current (and, with `complete`, complete)."""
    if not e.msgstr:
        return "untranslated" if complete else None
    if "fuzzy" in e.flags:
        return "stale (the English changed)"
    if placeholders(e.msgid) != placeholders(e.msgstr):
        return "inline values or link targets differ"
    if sorted(FIELD.findall(e.msgid)) != sorted(FIELD.findall(e.msgstr)):
        return "fields ({0}, {name}) differ"
    return None


FIELD = re.compile(r"\{\w+\}")


def problems(source: Path, complete: bool = True) -> list[str]:
    """What stops the source's Chinese copy from being current with the English: the catalog out of date
    with the source, a stale (fuzzy) translation, a translation that lost an inline value or a link target;
    with `complete`, also each paragraph not translated yet."""
    return _catalog_problems(catalog_path(source), lambda: english_entries(source), str(source), complete)


def _catalog_problems(path: Path, english, what: str, complete: bool) -> list[str]:
    """One catalog against its English entries (`english()`, read only when the catalog exists)."""
    where = str(path.relative_to(ROOT))
    if not path.exists():
        return [f"{where}: missing (run tools/translate.py extract)"]
    entries = read_po(path)[1]
    out = []
    if [e.msgid for e in entries] != [e.msgid for e in english()]:
        out.append(f"{where}: out of date with {what} (run tools/translate.py extract)")
    for e in entries:
        why = entry_problem(e, complete)
        if why:
            out.append(f"{where}: {why}: {e.msgid.split(chr(10))[0][:70]!r}")
    return out


def check(complete: bool = True) -> int:
    found = [p for s in sources() for p in problems(s, complete)] + runtime_problems(complete)
    for p in found[:200]:
        print(p)
    what = "complete and current" if complete else "current (translated entries not stale, placeholders kept)"
    print(f"{len(found)} problem(s)" if found else f"all catalogs {what}")
    return 1 if found else 0


def complete_catalogs() -> list[str]:
    """The catalogs with every paragraph translated, current and checked."""
    return [str(catalog_path(s).relative_to(ROOT)) for s in sources() if not problems(s)]


def stats() -> None:
    total = done = 0
    for source in sources():
        path = catalog_path(source)
        entries = read_po(path)[1] if path.exists() else english_entries(source)
        ok = sum(e.translated for e in entries)
        fuzzy = sum("fuzzy" in e.flags for e in entries)
        left = sum(len(e.msgid.split()) for e in entries if not e.translated)
        total, done = total + len(entries), done + ok
        print(f"{str(source):55s} {ok:4d}/{len(entries):4d} translated, {fuzzy:3d} fuzzy, {left:6d} words left")
    print(f"all pages: {done}/{total} entries")
    if RUNTIME.exists():
        entries = read_po(RUNTIME)[1]
        ok, left = sum(e.translated for e in entries), sum(len(e.msgid.split()) for e in entries if not e.translated)
        print(f"{str(RUNTIME.relative_to(ROOT)):55s} {ok:4d}/{len(entries):4d} translated (the grader), "
              f"{left:6d} words left")


def todo(path: Path, everything: bool = False, ref: str | None = None) -> str:
    """A plain-text work file: each entry as `@@@ N`, the English, `@@@ zh`, the Chinese (to write).

    No escaping is needed in it, unlike a PO file; `fill` reads it back.
    """
    out = []
    for i, e in enumerate(read_po(path)[1]):
        if (e.translated and not everything) or (ref and not any(r.startswith(ref) for r in e.references)):
            continue
        out += [f"@@@ {i}", e.msgid, "@@@ zh", e.msgstr if e.msgstr else "", ""]
    return "\n".join(out)


def fill(path: Path, work: Path) -> int:
    """Write the translations of a `todo` work file into the catalog; returns how many were set."""
    header, entries = read_po(path)
    chunks = work.read_text(encoding="utf-8").split("\n@@@ ")
    chunks[0] = chunks[0].removeprefix("@@@ ")
    n = 0
    for i in range(0, len(chunks) - 1, 2):
        head, english = chunks[i].split("\n", 1)
        zh_head, chinese = (chunks[i + 1].split("\n", 1) + [""])[:2]
        if zh_head.strip() != "zh":
            raise ValueError(f"{work}: entry {head.strip()} is not followed by '@@@ zh'")
        k = int(head.strip())
        if entries[k].msgid != english.rstrip("\n"):
            raise ValueError(f"{work}: entry {k}'s English differs from the catalog (run todo again)")
        if chinese.strip():
            entries[k].msgstr, entries[k].previous = chinese.strip("\n"), None
            entries[k].flags.discard("fuzzy")
            n += 1
    write_po(path, entries, header)
    return n


# --- the grader's runtime catalog (memlib/learn/locale/zh/LC_MESSAGES/memlib.po) ----------------------

RUNTIME = ROOT / "memlib" / "learn" / "locale" / "zh" / "LC_MESSAGES" / "memlib.po"
# the modules whose tr("...") / trf("...") strings go into the runtime catalog
RUNTIME_MODULES = ["memlib/learn/grading.py", "memlib/learn/exercises/kinds.py", "memlib/learn/interview.py",
                   "memlib/learn/exercises/answers.py", "memlib/learn/scenarios.py"]
TEMPLATE_NOTE = "numbers are fields {0}, {1}, ... (memlib computes them each time): keep every field"


def marked_strings(path: Path) -> list[str]:
    """The string constants passed first to tr(), trf() or msg() in a module (adjacent literals are one constant)."""
    import ast

    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("tr", "trf", "msg") and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            out.append(node.args[0].value)
    return out


PRACTICE_MODULES = ["memlib/learn/exercises/practice.py", "memlib/learn/exercises/practice_comm.py"]


def practice_strings(path: Path) -> list[str]:
    """The practice generators' fixed texts: the string constants given to _hints() and as a Slip's message
    (their titles, prompts and worked answers name the drawn setup: msg() templates, read by marked_strings)."""
    import ast

    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "id", None)
        args = node.args if name == "_hints" else node.args[2:3] if name == "Slip" else []
        out += [a.value for a in args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return out


def registry_strings() -> list[tuple[str, str, bool]]:
    """(text, where, rendered) for every text of the exercise registry a learner reads; `rendered`: computed by
    memlib when shown (its catalog key is its number template)."""
    from memlib.learn.exercises import EXERCISES
    from memlib.learn.exercises import kinds

    out: list[tuple[str, str, bool]] = [(d, "kinds.DIFFICULTIES", False) for d in kinds.DIFFICULTIES]
    for cls in (kinds.Numeric, kinds.SpotError, kinds.Choice, kinds.MultiChoice, kinds.Implement, kinds.SelfAssessed):
        out.append((cls.kind_label, f"kinds.{cls.__name__}", False))
    for ex in EXERCISES.values():
        def add(text, what, rendered=False):
            if callable(text):
                text, rendered = text(), True
            if isinstance(text, str) and text.strip() and re.search(r"[A-Za-z]{2,}", text):
                out.append((text, f"{ex.id} {what}", rendered))
        add(ex.title, "title")
        add(ex.prompt, "prompt")
        for i, h in enumerate(ex.hints, 1):
            add(h, f"hint {i}")
        for slip in getattr(ex, "slips", ()) + getattr(ex, "accepts", ()):
            add(slip.message, f"slip {slip.name!r}")
        add(getattr(ex, "close_advice", ""), "close advice")
        for o in getattr(ex, "options", ()) + getattr(ex, "reasons", ()):
            add(o.text, f"option {o.key}")
            add(o.why, f"option {o.key} feedback")
            add(o.misconception, f"option {o.key} belief")
        for i, point in enumerate(getattr(ex, "rubric", ()), 1):
            add(point, f"rubric {i}")
        add(ex.worked, "worked answer")
        if getattr(ex, "table", None) is not None:  # the rows under a prompt, cell by cell (kinds.render_table)
            for cell in kinds.table_cells(ex.table()):
                add(cell, "table")
    return out


def runtime_entries() -> list[Entry]:
    """The runtime catalog's entries, in order, each once: marked strings, then the registry's texts."""
    seen: dict[str, Entry] = {}
    for module in RUNTIME_MODULES:
        for text in marked_strings(ROOT / module):
            e = seen.setdefault(text, Entry(msgid=text))
            if module not in e.references:
                e.references.append(module)
    for module in PRACTICE_MODULES:
        for text in marked_strings(ROOT / module) + practice_strings(ROOT / module):
            e = seen.setdefault(text, Entry(msgid=text))
            if module not in e.references:
                e.references.append(module)
    for text, where, rendered in registry_strings():
        key = number_template(text)[0] if rendered else text
        e = seen.setdefault(key, Entry(msgid=key))
        e.references.append(where.replace(" ", "_"))
        if rendered and key != text and TEMPLATE_NOTE not in e.comments:
            e.comments.append(TEMPLATE_NOTE)
    return list(seen.values())


def extract_runtime() -> None:
    old = {e.msgid: e for e in read_po(RUNTIME)[1]} if RUNTIME.exists() else {}
    new = runtime_entries()
    unused = [e for k, e in old.items() if k not in {n.msgid for n in new} and e.msgstr]
    for e in new:
        if e.msgid in old:
            prior = old[e.msgid]
            e.msgstr, e.flags, e.previous = prior.msgstr, prior.flags, prior.previous
        elif unused:
            best = max(unused, key=lambda o: difflib.SequenceMatcher(None, o.msgid, e.msgid).ratio())
            if difflib.SequenceMatcher(None, best.msgid, e.msgid).ratio() > 0.6:
                e.msgstr, e.flags, e.previous = best.msgstr, {"fuzzy"}, best.msgid
                unused.remove(best)
    RUNTIME.parent.mkdir(parents=True, exist_ok=True)
    write_po(RUNTIME, new)
    print(f"{RUNTIME.relative_to(ROOT)}: {len(new)} entries")


def runtime_problems(complete: bool = True) -> list[str]:
    """As problems(), for the grader's runtime catalog against the registry and the marked strings."""
    return _catalog_problems(RUNTIME, runtime_entries, "the grader's English", complete)


# --- the Chinese copies -----------------------------------------------------------------------------

LANG_LINE = re.compile(r"^\*\*中文版 →\*\* \[[^\]]*\]\(([^)]*)\)[^\n]*$", re.M)
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
LINK = re.compile(r"(\]\()([^)\s]+)((?:\s+\"[^\"]*\")?\))")


def slugify(title: str) -> str:
    """A heading's anchor as MyST makes it (mdit_py_plugins.anchors' default slug_func, which MyST's
    myst_heading_anchors uses): lower case, spaces to '-', punctuation other than '-' dropped."""
    return re.sub(r"[^\w\u4e00-\u9fff\- ]", "", title.strip().lower().replace(" ", "-"))


def _heading_text(block: str) -> str | None:
    m = HEADING.match(block.strip()) if "\n" not in block.strip() else None
    if not m:
        return None
    text = re.sub(r"\{eval\}`[^`]+`", "", m.group(2))
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[*_`]", "", text)


def catalog(source: Path) -> dict[str, str]:
    """The source's confirmed translations (fuzzy ones left out: the English shows until confirmed)."""
    path = catalog_path(source)
    return {e.msgid: e.msgstr for e in read_po(path)[1] if e.translated} if path.exists() else {}


def anchors(source: Path, cat: dict[str, str] | None = None) -> dict[str, str]:
    """{English heading's slug: the Chinese heading's slug} for the source's translated headings."""
    cat = catalog(source) if cat is None else cat
    out = {}
    for _, text in texts(source):
        for block, _ok in paragraphs(text):
            en, zh = _heading_text(block), _heading_text(cat.get(block, ""))
            if en and zh and slugify(en) != slugify(zh):
                out.setdefault(slugify(en), slugify(zh))
    return out


class Builder:
    """Translates the sources' texts; `outside` is what a link to a file that has no Chinese copy gets in
    front (the committed copies live one folder deeper, under zh/; the book's staged copies do not)."""

    def __init__(self, outside: str = "../"):
        self.outside = outside
        self.translated_sources = {str(s) for s in sources()}
        self._anchors: dict[str, dict[str, str]] = {}
        self.counts: dict[str, tuple[int, int]] = {}

    def anchor_map(self, source: str) -> dict[str, str]:
        if source not in self._anchors:
            self._anchors[source] = anchors(Path(source)) if source in self.translated_sources else {}
        return self._anchors[source]

    def link(self, target: str, here: Path) -> str:
        """Where a link of the source `here` goes in its Chinese copy."""
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
            return target
        path, _, frag = target.partition("#")
        if not path:  # a heading of this page
            return "#" + self.anchor_map(str(here)).get(frag, frag) if frag else target
        resolved = posixpath.normpath(posixpath.join(here.parent.as_posix(), path))
        if resolved in self.translated_sources:
            return path + ("#" + self.anchor_map(resolved).get(frag, frag) if frag else "")
        return self.outside + target

    def text(self, text: str, cat: dict[str, str], here: Path) -> tuple[str, int, int]:
        """(the text in Chinese, paragraphs translated, translatable paragraphs)."""
        out, done, total = [], 0, 0
        for block, translatable in paragraphs(text):
            zh = cat.get(block) if translatable else None
            total += translatable
            if zh:
                done += 1
                en_head, zh_head = _heading_text(block), _heading_text(zh)
                if en_head and zh_head and slugify(en_head) != slugify(zh_head):
                    out.append(f'<a id="{slugify(en_head)}"></a>')  # the English anchor still resolves
                block = zh
            if LANG_LINE.search(block):  # the English page's link to its Chinese copy
                block = LANG_LINE.sub(lambda m: self.switch(m, here), block).strip("\n")
                if block:
                    out.append(block)
                continue
            out.append(LINK.sub(lambda m: m.group(1) + self.link(m.group(2), here) + m.group(3), block))
        return "\n\n".join(out), done, total

    def switch(self, m: re.Match, here: Path) -> str:
        """The English page's `**中文版 →** [...](../zh/...)` line becomes the way back to the English."""
        target = m.group(1).split("#")[0]
        depth = len(here.parent.parts)
        back = posixpath.normpath(posixpath.join(here.parent.as_posix(), target))  # zh/<the same path>
        english = posixpath.relpath(back.removeprefix("zh/"), posixpath.join("zh", here.parent.as_posix())) \
            if depth else back
        return f"**English →** [English edition]({english})" if self.outside else ""

    def notebook(self, nb: dict, source: Path, cat: dict[str, str] | None = None) -> dict:
        """The source notebook's Chinese copy (code cells, outputs, inline values untouched); `cat`
        (English paragraph -> Chinese) defaults to the source's catalog."""
        nb = copy.deepcopy(nb)
        if cat is None:
            cat = catalog(source)
        else:  # a catalog given by the caller: this page's heading anchors from it
            self._anchors[str(source)] = {
                slugify(en): slugify(zh) for c in nb["cells"] if c["cell_type"] == "markdown"
                for block, _ in paragraphs("".join(c["source"])) for en, zh in
                [(_heading_text(block), _heading_text(cat.get(block, "")))] if en and zh}
        done = total = 0
        for cell in nb["cells"]:
            if cell["cell_type"] != "markdown":
                continue
            src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            text, d, t = self.text(src, cat, source)
            done, total = done + d, total + t
            cell["source"] = text.splitlines(keepends=True) if isinstance(cell["source"], list) else text
        nb["metadata"].pop("jupytext", None)  # the copy is not paired with a script
        nb["metadata"]["language_info"] = nb["metadata"].get("language_info", {})
        nb["metadata"]["memlib"] = {**nb["metadata"].get("memlib", {}), "lang": "zh", "source": source.as_posix()}
        self.counts[source.as_posix()] = (done, total)
        return nb

    def markdown(self, source: Path) -> str:
        text, d, t = self.text((ROOT / source).read_text(encoding="utf-8"), catalog(source), source)
        self.counts[source.as_posix()] = (d, t)
        return text.rstrip("\n") + "\n"


def build(out: Path = ZH, outside: str = "../") -> dict[str, tuple[int, int]]:
    """Write every source's Chinese copy under `out` (the repository's layout); returns
    {source: (paragraphs translated, translatable paragraphs)}: the rest fall back to English."""
    b = Builder(outside)
    wanted = {out / s for s in sources()}
    for folder in {out / s.parent for s in sources()}:  # a copy whose source is gone goes too
        for stale in folder.glob("*") if folder.is_dir() else []:
            if stale.suffix in (".ipynb", ".md") and stale not in wanted:
                stale.unlink()
    for source in sources():
        target = out / source
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.suffix == ".ipynb":
            nb = b.notebook(json.loads((ROOT / source).read_text(encoding="utf-8")), source)
            target.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        else:
            target.write_text(b.markdown(source), encoding="utf-8")
    return b.counts


# --- the glossary ----------------------------------------------------------------------------------

def glossary() -> list[tuple[str, str, str]]:
    """(English, 中文, note) rows of i18n/glossary.tsv."""
    rows = []
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        en, zh, *note = line.split("\t")
        rows.append((en.strip(), zh.strip(), (note[0] if note else "").strip()))
    return rows


def _terms(cell: str, english: bool) -> list[str]:
    """The forms of a glossary cell: 'tensor parallelism (TP)' -> ['tensor parallelism'] (English), '梯度检查点（激活
    重计算）' -> ['梯度检查点', '激活重计算'] (Chinese: each form the reader may meet)."""
    out = []
    for alt in cell.split(" / "):
        if english:
            out.append(re.sub(r"\s*\(.*?\)", "", alt).strip())
        else:
            out += [t.strip() for t in re.split(r"[（）()]", alt) if t.strip()]
    return [t for t in out if t]


def glossary_problems(entries, rows=None) -> list[str]:
    """Translated entries whose English uses a glossary term but whose Chinese has none of its Chinese forms.
    Strict terms (their note says `never`) are reported with `STRICT` in front: the test fails on those."""
    rows = glossary() if rows is None else rows
    out = []
    for e in entries:
        if not e.translated:
            continue
        english = re.sub(r"\]\([^)]*\)|`[^`]*`", "", e.msgid)
        for en, zh, note in rows:
            hit = any(re.search(r"(?<![\w-])" + re.escape(t) + r"(?![\w-])", english, re.I)
                      for t in _terms(en, True))
            kept = any(t.lower() in e.msgstr.lower() for t in _terms(en, True))  # the English term kept (a title)
            if hit and not kept and not any(t in e.msgstr for t in _terms(zh, False)):
                strict = "never" in note
                out.append(f"{'STRICT ' if strict else ''}{en!r} -> {zh!r} missing in: {e.msgstr[:60]!r}")
    return out


def glossary_report() -> dict[str, list[str]]:
    """{catalog: its glossary misses} over the pages' catalogs and the grader's."""
    paths = [catalog_path(s) for s in sources()] + [RUNTIME]
    return {str(path.relative_to(ROOT)): p for path in paths if path.exists()
            for p in [glossary_problems(read_po(path)[1])] if p}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("extract", help="update the catalogs from the English sources")
    c = sub.add_parser("check", help="exit 1 unless every catalog is complete and current")
    c.add_argument("--current", action="store_true", help="only current: untranslated paragraphs allowed "
                   "(they show in English), stale or broken translations not")
    sub.add_parser("stats", help="how much is translated")
    t = sub.add_parser("todo", help="write a catalog's untranslated entries as a plain-text work file")
    t.add_argument("catalog", type=Path)
    t.add_argument("--all", action="store_true", help="every entry, translated ones too")
    t.add_argument("--ref", help="only entries whose reference starts with this (the grader's catalog: an exercise "
                   "id such as 01. or 01.3_, a module such as memlib/learn/exercises/practice)")
    f = sub.add_parser("fill", help="read a work file's translations back into its catalog")
    f.add_argument("catalog", type=Path)
    f.add_argument("work", type=Path)
    bd = sub.add_parser("build", help="write the Chinese copies of every source (default: zh/)")
    bd.add_argument("--out", type=Path, default=ZH)
    sub.add_parser("glossary", help="list translations that miss the glossary's Chinese term")
    args = ap.parse_args(argv)
    if args.cmd == "build":
        counts = build(args.out.resolve())
        done, total = sum(d for d, _ in counts.values()), sum(t for _, t in counts.values())
        for source, (d, t) in counts.items():
            if d < t:
                print(f"{source}: {t - d} of {t} paragraphs in English (not translated yet)")
        print(f"{len(counts)} Chinese copies in {args.out}: {done}/{total} paragraphs translated, "
              f"{total - done} fall back to English")
        return 0
    if args.cmd == "glossary":
        report = glossary_report()
        for path, found in report.items():
            print("\n".join(f"{path}: {p}" for p in found))
        strict = sum(p.startswith("STRICT") for found in report.values() for p in found)
        print(f"{sum(map(len, report.values()))} glossary miss(es), {strict} strict")
        return 1 if strict else 0
    if args.cmd == "todo":
        print(todo(args.catalog, args.all, args.ref))
        return 0
    if args.cmd == "fill":
        print(f"{fill(args.catalog, args.work)} translation(s) written to {args.catalog}")
        return 0
    if args.cmd == "extract":
        extract()
    elif args.cmd == "check":
        return check(complete=not args.current)
    else:
        stats()
    return 0


if __name__ == "__main__":
    sys.exit(main())
