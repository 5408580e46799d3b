"""The Chinese edition's catalogs: extract the English paragraphs, check the translations, build.

    python tools/translate.py extract            # update i18n/zh/**.po from the English sources
    python tools/translate.py check              # exit 1 if a catalog is out of date, untranslated or stale
    python tools/translate.py stats              # per catalog: entries, translated, fuzzy, words left
    python tools/translate.py todo CATALOG.po > work.txt   # its untranslated/stale entries, for a translator
    python tools/translate.py fill CATALOG.po work.txt     # write the translations from that file back

Sources: every notebook's markdown cells (notebooks/*.ipynb, exercises/*.ipynb), docs/cheatsheet.md
and book/index.md. One catalog per source, `i18n/zh/<folder>/<stem>.po`, one entry per paragraph
(`memlib.learn.i18n.paragraphs`). Code cells and their outputs are not translated: the Chinese
notebooks carry the same code and the same stored outputs and inline values.

When an English paragraph changes, `extract` keeps the old translation only as a suggestion (flag
`fuzzy`, the old English under `#|`), and `check` fails until a translator confirms or rewrites it.
"""
from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memlib.learn.i18n import Entry, paragraphs, placeholders, read_po, write_po  # noqa: E402

CATALOGS = ROOT / "i18n" / "zh"
GLOSSARY = ROOT / "i18n" / "glossary.tsv"


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


def problems(source: Path) -> list[str]:
    """What stops the source's Chinese copy from being complete and current."""
    path = catalog_path(source)
    if not path.exists():
        return [f"{path.relative_to(ROOT)}: missing (run tools/translate.py extract)"]
    entries = read_po(path)[1]
    out = []
    if [e.msgid for e in entries] != [e.msgid for e in english_entries(source)]:
        out.append(f"{path.relative_to(ROOT)}: out of date with {source} (run tools/translate.py extract)")
    for e in entries:
        head = e.msgid.split("\n")[0][:70]
        if not e.msgstr:
            out.append(f"{path.relative_to(ROOT)}: untranslated: {head!r}")
        elif "fuzzy" in e.flags:
            out.append(f"{path.relative_to(ROOT)}: stale (the English changed): {head!r}")
        elif placeholders(e.msgid) != placeholders(e.msgstr):
            out.append(f"{path.relative_to(ROOT)}: inline values or link targets differ: {head!r}")
    return out


def check() -> int:
    found = [p for s in sources() for p in problems(s)]
    for p in found[:200]:
        print(p)
    print(f"{len(found)} problem(s)" if found else "all catalogs complete and current")
    return 1 if found else 0


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
    print(f"all: {done}/{total} entries")


def todo(path: Path, everything: bool = False) -> str:
    """A plain-text work file: each entry as `@@@ N`, the English, `@@@ zh`, the Chinese (to write).

    No escaping is needed in it, unlike a PO file; `fill` reads it back.
    """
    out = []
    for i, e in enumerate(read_po(path)[1]):
        if e.translated and not everything:
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("extract", help="update the catalogs from the English sources")
    sub.add_parser("check", help="exit 1 unless every catalog is complete and current")
    sub.add_parser("stats", help="how much is translated")
    t = sub.add_parser("todo", help="write a catalog's untranslated entries as a plain-text work file")
    t.add_argument("catalog", type=Path)
    t.add_argument("--all", action="store_true", help="every entry, translated ones too")
    f = sub.add_parser("fill", help="read a work file's translations back into its catalog")
    f.add_argument("catalog", type=Path)
    f.add_argument("work", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "todo":
        print(todo(args.catalog, args.all))
        return 0
    if args.cmd == "fill":
        print(f"{fill(args.catalog, args.work)} translation(s) written to {args.catalog}")
        return 0
    if args.cmd == "extract":
        extract()
    elif args.cmd == "check":
        return check()
    else:
        stats()
    return 0


if __name__ == "__main__":
    sys.exit(main())
