"""Build the book: the notebooks as a static website, and the topic notebooks as reveal.js slides.

    python tools/build_site.py              # -> _build/html/index.html (open it in a browser)
    python tools/build_site.py --no-slides  # the website only (no npm needed)

Nothing is executed: pages and slides are rendered from the outputs stored in the .ipynb files
(myst-nb with nb_execution_mode = "off"). Steps:

1. stage the sources in _build/src with the repository's layout: book/index.md (the landing page
   and its table of contents), notebooks/index.ipynb and notebooks/NN_*.ipynb, exercises/*.ipynb
   (the student copies: no solutions), docs/cheatsheet.md and a static page for the calculator
   (notebooks/calculator.md: the app's own introduction plus book/calculator.md). A stored
   widget (the playground) becomes a note saying how to run it live.
2. sphinx-build -c book _build/src _build/html (sphinx-book-theme; cells tagged hide-input by
   tools/mark_display_cells.py are folded behind a toggle).
3. slides: each topic notebook through nbconvert's reveal exporter with the template in
   book/slides/memlib_reveal (display code and the setup cell dropped, a sub-slide at each
   heading) into _build/html/slides/, with reveal.js unpacked beside them from the npm registry
   (`npm pack reveal.js@REVEAL_VERSION`, cached in _build/cache/); the decks load nothing from
   the network.
4. the CJK webfont: Noto Sans CJK SC (Debian's fonts-noto-cjk; MEMLIB_CJK_FONT_DIR overrides the
   folder) subset with fontTools to the characters the built pages use, as WOFF2 in
   _build/html/_static/fonts/ with its licence (SIL OFL 1.1). Without the font files the site
   still builds (the CSS falls back to the reader's system fonts) and says so.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from inline_values import substitute  # noqa: E402

BOOK = ROOT / "book"
REVEAL_VERSION = "5.2.1"  # MIT licence; its LICENSE file is unpacked with it
FONT_DIRS = ["/usr/share/fonts/opentype/noto", "/usr/share/fonts/truetype/noto", "/usr/local/share/fonts",
             "/opt/homebrew/share/fonts", "/usr/share/fonts"]
FONT_FILES = {"regular": "NotoSansCJK-Regular.ttc", "bold": "NotoSansCJK-Bold.ttc"}
FONT_FACE = "Noto Sans CJK SC"
# the code points the CSS @font-face unicode-range sends to the CJK font (book/_static/memlib.css)
CJK_RANGES = [(0x2E80, 0x2FDF), (0x3000, 0x303F), (0x3100, 0x312F), (0x31A0, 0x31BF), (0x3400, 0x4DBF),
              (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0xFE30, 0xFE4F), (0xFF00, 0xFFEF)]
WIDGET_REPR = re.compile(r"^(VBox|HBox|Box|GridBox|Tab|Accordion|Output|[A-Z]\w*Widget)\(|^\(interactive widget")
WIDGET_NOTE = ('<div class="memlib-widget-note"><strong>Interactive:</strong> this widget needs a running '
               "notebook. Open it live with the <em>Run this notebook</em> link at the top of the page "
               "(Binder, or <code>jupyter lab</code> on your machine) and move the controls.</div>")


def log(msg: str) -> None:
    print(f"[build_site] {msg}", flush=True)


def topic_notebooks() -> list[Path]:
    return sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def static_widgets(nb: dict) -> int:
    """Replace stored widget placeholders (text/plain only) by a note on running them; return how many."""
    n = 0
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            text = data.get("text/plain", "")
            text = "".join(text) if isinstance(text, list) else text
            if set(data) == {"text/plain"} and WIDGET_REPR.match(text):
                out["data"] = {"text/html": WIDGET_NOTE, "text/plain": "(interactive widget)"}
                n += 1
    return n


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _write(path: Path, nb: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False), encoding="utf-8")


def _md_source(cell: dict) -> str:
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


def stage(src: Path) -> dict:
    """Lay the site's sources out in `src` (mirroring the repository). Returns counts."""
    if src.exists():
        shutil.rmtree(src)
    (src / "notebooks").mkdir(parents=True)
    shutil.copy2(BOOK / "index.md", src / "index.md")
    widgets = 0
    notebooks = [ROOT / "notebooks" / "index.ipynb"] + topic_notebooks()
    for path in notebooks:
        nb = _read(path)
        widgets += static_widgets(nb)
        if path.name == "index.ipynb":  # the calculator is a static page in the book
            for cell in nb["cells"]:
                if cell["cell_type"] == "markdown":
                    cell["source"] = _md_source(cell).replace("(calculator.ipynb)", "(calculator.md)")
        _write(src / "notebooks" / path.name, nb)
    exercises = sorted((ROOT / "exercises").glob("*.ipynb"))
    for path in exercises:
        nb = _read(path)
        widgets += static_widgets(nb)
        _write(src / "exercises" / path.name, nb)
    (src / "docs").mkdir()
    shutil.copy2(ROOT / "docs" / "cheatsheet.md", src / "docs" / "cheatsheet.md")
    # the calculator: its own introduction (first markdown cell) + how to open it live
    calc = _read(ROOT / "notebooks" / "calculator.ipynb")
    intro = next(_md_source(c) for c in calc["cells"] if c["cell_type"] == "markdown")
    (src / "notebooks" / "calculator.md").write_text(
        intro.rstrip() + "\n\n" + (BOOK / "calculator.md").read_text(encoding="utf-8"), encoding="utf-8")
    return {"notebooks": len(notebooks), "exercises": len(exercises), "widgets": widgets}


def sphinx(src: Path, html: Path, jobs: str) -> None:
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-c", str(BOOK), "-j", jobs, "-q",
           "-W", "--keep-going", str(src), str(html)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    r = subprocess.run(cmd, env=env)
    if r.returncode:
        raise SystemExit(f"sphinx-build failed (exit {r.returncode}); its warnings are above")


# --- slides --------------------------------------------------------------------------------------

def deck_notebook(nb: dict) -> dict:
    """The notebook as a deck shows it: the setup cell gone (it shows nothing), a sub-slide at each
    heading that does not start a slide already. deck_exporter() drops the code of hide-input cells."""
    deck = copy.deepcopy(nb)
    substitute(deck)  # the {eval} roles' stored values (tools/inline_values.py), as in the book
    cells = []
    for cell in deck["cells"]:
        md = cell.setdefault("metadata", {})
        slide_type = md.get("slideshow", {}).get("slide_type", "-")
        if cell["cell_type"] == "code" and {"hide-input", "remove-input"} & set(md.get("tags", [])):
            if not cell.get("outputs") and slide_type in ("-", ""):
                continue  # the setup cell, an inline-values cell: nothing to show
        if cell["cell_type"] == "markdown" and slide_type in ("-", "") and \
                re.match(r"#{1,3} ", _md_source(cell).lstrip()):
            md.setdefault("slideshow", {})["slide_type"] = "subslide"
        cells.append(cell)
    deck["cells"] = cells
    return deck


def reveal_js(dest: Path, cache: Path) -> None:
    """Unpack reveal.js (dist/, plugin/, LICENSE) from the npm registry's package into `dest`."""
    tarball = cache / f"reveal.js-{REVEAL_VERSION}.tgz"
    if not tarball.exists():
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit("npm is needed to fetch reveal.js for the slides (or build with --no-slides)")
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run([npm, "pack", f"reveal.js@{REVEAL_VERSION}", "--silent", "--pack-destination", str(cache)],
                       check=True, stdout=subprocess.DEVNULL)
    if dest.exists():
        shutil.rmtree(dest)
    with tarfile.open(tarball) as tar:
        members = [m for m in tar.getmembers() if m.isfile() and re.match(
            r"package/(dist/|plugin/notes/|LICENSE$)", m.name) and not m.name.endswith(".map")]
        for m in members:
            m.name = m.name[len("package/"):]
        tar.extractall(dest, members=members, filter="data")


def deck_exporter():
    """nbconvert's reveal exporter with the book's template (no CDN) and local reveal.js."""
    from nbconvert import SlidesExporter
    from traitlets.config import Config

    c = Config()
    c.TemplateExporter.extra_template_basedirs = [str(BOOK / "slides")]
    c.SlidesExporter.template_name = "memlib_reveal"
    c.SlidesExporter.reveal_url_prefix = "reveal.js"
    c.SlidesExporter.reveal_theme = "white"
    c.TemplateExporter.exclude_input_prompt = True
    c.TemplateExporter.exclude_output_prompt = True
    c.TagRemovePreprocessor.enabled = True  # display code off the slides, its output kept
    c.TagRemovePreprocessor.remove_input_tags = {"hide-input"}
    return SlidesExporter(config=c)


def deck_html(nb: dict, name: str, exporter=None) -> str:
    """One notebook (as stored JSON, staged) as a reveal.js deck."""
    import nbformat

    node = nbformat.reads(json.dumps(deck_notebook(nb)), as_version=4)
    body, _ = (exporter or deck_exporter()).from_notebook_node(node, resources={"metadata": {"name": name}})
    return body


def slides(src: Path, out: Path, cache: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    reveal_js(out / "reveal.js", cache)
    exporter = deck_exporter()
    written = []
    for path in topic_notebooks():
        if path.stem.endswith("_deep_dive"):  # a deep dive is for reading, not for the classroom
            continue
        target = out / f"{path.stem}.slides.html"
        target.write_text(deck_html(_read(src / "notebooks" / path.name), path.stem, exporter), encoding="utf-8")
        written.append(target)
    return written


# --- the CJK webfont -----------------------------------------------------------------------------

def site_cjk_text(html: Path) -> str:
    chars = set()
    for page in html.rglob("*.html"):
        for ch in page.read_text(encoding="utf-8", errors="replace"):
            cp = ord(ch)
            if cp > 0x7F and any(lo <= cp <= hi for lo, hi in CJK_RANGES):
                chars.add(ch)
    return "".join(sorted(chars))


def find_font(name: str) -> Path | None:
    dirs = [os.environ["MEMLIB_CJK_FONT_DIR"]] if os.environ.get("MEMLIB_CJK_FONT_DIR") else FONT_DIRS
    for d in map(Path, dirs):
        if (d / name).is_file():
            return d / name
        hits = sorted(d.rglob(name)) if d.is_dir() else []
        if hits:
            return hits[0]
    return None


def cjk_font(html: Path) -> dict:
    from fontTools import subset
    from fontTools.ttLib import TTCollection, TTFont

    text = site_cjk_text(html)
    fonts = html / "_static" / "fonts"
    fonts.mkdir(parents=True, exist_ok=True)
    written = {}
    for weight, filename in FONT_FILES.items():
        path = find_font(filename)
        if path is None:
            log(f"WARNING: {filename} not found (apt-get install fonts-noto-cjk, or set MEMLIB_CJK_FONT_DIR): "
                "中文 falls back to the reader's system fonts")
            continue
        number = 0
        if path.suffix == ".ttc":
            names = [f["name"].getDebugName(1) for f in TTCollection(str(path)).fonts]
            number = names.index(FONT_FACE)
        font = TTFont(str(path), fontNumber=number, lazy=False)
        copyright_line = font["name"].getDebugName(0) or "Noto Sans CJK"
        options = subset.Options()
        options.flavor = "woff2"
        options.layout_features = ["*"]
        options.hinting = False
        options.desubroutinize = True
        options.name_IDs = ["*"]
        options.name_legacy = True
        options.notdef_outline = True
        sub = subset.Subsetter(options)
        sub.populate(text=text)
        sub.subset(font)
        target = fonts / f"memlib-cjk-{weight}.woff2"
        font.flavor = "woff2"
        font.save(str(target))
        written[weight] = (target, path, copyright_line)
    if written:
        _, source, copyright_line = next(iter(written.values()))
        notice = [f"memlib-cjk-*.woff2: {FONT_FACE} ({', '.join(str(p) for _, p, _ in written.values())}),",
                  f"subset by tools/build_site.py to the {len(text)} characters this site uses.",
                  f"{FONT_FACE}: {copyright_line}",
                  "Licensed under the SIL Open Font License, Version 1.1, reproduced below.", ""]
        ofl = _ofl_text(source)
        (fonts / "LICENSE-NotoSansCJK.txt").write_text("\n".join(notice) + ofl, encoding="utf-8")
    return {"chars": len(text), "files": {w: t.stat().st_size for w, (t, _, _) in written.items()}}


def _ofl_text(font_path: Path) -> str:
    """The OFL text as the font package ships it (its stanza in Debian's copyright file), or a pointer."""
    doc = Path("/usr/share/doc/fonts-noto-cjk/copyright")
    if doc.is_file():
        lines = doc.read_text(encoding="utf-8", errors="replace").splitlines()
        start = next((i for i, ln in enumerate(lines) if "SIL OPEN FONT LICENSE" in ln), None)
        if start is not None:
            out = []
            for ln in lines[start:]:
                if ln and not ln.startswith(" "):
                    break  # the next stanza (Debian's own files are GPL)
                out.append("" if ln.strip() == "." else ln[1:])
            return "\n".join(out).rstrip() + "\n"
    return "See https://openfontlicense.org for the licence text.\n"


def source_digest(root: Path = ROOT) -> dict[str, str]:
    """sha256 of every file the site is built from (the browser tests compare it with the build's stamp)."""
    import hashlib

    files = ([root / "notebooks" / "index.ipynb", root / "notebooks" / "calculator.ipynb", root / "docs" / "cheatsheet.md"]
             + sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb")) + sorted((root / "exercises").glob("*.ipynb"))
             + sorted(p for p in (root / "book").rglob("*") if p.is_file() and "__pycache__" not in p.parts)
             + [root / "tools" / "build_site.py"])
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files if p.exists()}


STAMP = ".memlib-build.json"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "_build", help="build folder (default: _build)")
    ap.add_argument("--no-slides", action="store_true", help="skip the reveal.js decks (no npm needed)")
    ap.add_argument("-j", "--jobs", default="1", help="sphinx-build -j (default 1)")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    out = args.out.resolve()
    src, html = out / "src", out / "html"
    counts = stage(src)
    log(f"staged {counts['notebooks']} notebooks, {counts['exercises']} exercise notebooks, "
        f"{counts['widgets']} widget(s) as notes ({time.monotonic() - t0:.1f} s)")
    if html.exists():
        shutil.rmtree(html)
    t1 = time.monotonic()
    sphinx(src, html, args.jobs)
    pages = sorted(p for p in html.rglob("*.html") if "_static" not in p.parts and p.name not in
                   ("search.html", "genindex.html"))
    log(f"sphinx: {len(pages)} pages in {time.monotonic() - t1:.1f} s")
    if not args.no_slides:
        t2 = time.monotonic()
        decks = slides(src, html / "slides", out / "cache")
        log(f"slides: {len(decks)} decks (reveal.js {REVEAL_VERSION}, local) in {time.monotonic() - t2:.1f} s")
    t3 = time.monotonic()
    font = cjk_font(html)
    log(f"CJK font: {font['chars']} characters, " + (", ".join(f"{w} {b / 1024:.0f} KiB" for w, b in
                                                              font["files"].items()) or "no font file")
        + f" ({time.monotonic() - t3:.1f} s)")
    elapsed = time.monotonic() - t0
    (html / STAMP).write_text(json.dumps({"seconds": round(elapsed, 1), "slides": not args.no_slides,
                                          "pages": len(pages), "sources": source_digest()}, indent=1))
    log(f"done in {elapsed:.1f} s: open {html / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
