"""Build the book: the notebooks as a static website, and the topic notebooks as reveal.js slides.

    python tools/build_site.py              # -> _build/html/index.html (open it in a browser)
    python tools/build_site.py --no-slides  # the website only (without npm its formulas stay TeX source)

Nothing is executed: pages and slides are rendered from the outputs stored in the .ipynb files
(myst-nb with nb_execution_mode = "off"). Steps:

1. stage the sources in _build/src with the repository's layout: book/index.md (the landing page
   and its table of contents), notebooks/index.ipynb and notebooks/NN_*.ipynb, exercises/*.ipynb
   (the student copies: no solutions), docs/cheatsheet.md, the teacher's guides (docs/teaching/*.md, written by
   tools/make_teacher_guides.py) and a static page for the calculator
   (notebooks/calculator.md: the app's own introduction plus book/calculator.md). A stored
   widget (the playground) becomes a note saying how to run it live.
2. sphinx-build -c book _build/src _build/html (sphinx-book-theme; cells tagged hide-input by
   tools/mark_display_cells.py are folded behind a toggle).
3. slides: each topic notebook through nbconvert's reveal exporter with the template in
   book/slides/memlib_reveal (display code and the setup cell dropped, a sub-slide at each
   heading) into _build/html/slides/, with reveal.js unpacked beside them from the npm registry
   (`npm pack reveal.js@REVEAL_VERSION`, cached in _build/cache/); the decks load nothing from
   the network.
   Long slides are split between paragraphs (paginate: each block's height estimated at the template's
   28 px body text, 1280 x 720 slides, one chart per slide); a single table or code cell taller than a
   slide shrinks (the template's memlibFit, prose never).
   Each deck carries the teacher's guide's speaker notes (docs/teaching/plans.toml: the lesson's timing, what to
   run live, where to pause) as reveal.js notes on the slides they belong to: press S in a deck for the speaker view.
4. MathJax 3 (`npm pack mathjax@MATHJAX_VERSION`, cached in _build/cache/) in _build/html/_static/mathjax:
   the cheat sheet's $$ LaTeX $$ formulas render offline (book/conf.py's mathjax_path).
5. the CJK webfont: Noto Sans CJK SC (Debian's fonts-noto-cjk; MEMLIB_CJK_FONT_DIR overrides the
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
MATHJAX_VERSION = "3.2.2"  # Apache 2.0; its LICENSE file is unpacked with it (book/conf.py's mathjax_path)
FONT_DIRS = ["/usr/share/fonts/opentype/noto", "/usr/share/fonts/truetype/noto", "/usr/local/share/fonts",
             "/opt/homebrew/share/fonts", "/usr/share/fonts"]
FONT_FILES = {"regular": "NotoSansCJK-Regular.ttc", "bold": "NotoSansCJK-Bold.ttc"}
FONT_FACE = "Noto Sans CJK SC"
# the code points the CSS @font-face unicode-range sends to the CJK font (book/_static/memlib.css)
CJK_RANGES = [(0x2E80, 0x2FDF), (0x3000, 0x303F), (0x3100, 0x312F), (0x31A0, 0x31BF), (0x3400, 0x4DBF),
              (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0xFE30, 0xFE4F), (0xFF00, 0xFFEF)]
WIDGET_REPR = re.compile(r"^(VBox|HBox|Box|GridBox|Tab|Accordion|Output|[A-Z]\w*Widget)\(|^\(interactive widget")
WIDGET_NOTE = ('<div class="memlib-widget-note"><strong>Interactive:</strong> this widget needs a running '
               "notebook. Open it live with the <em>Try it live</em> link at the top of the page "
               "(in your browser), or with <code>jupyter lab</code> on your machine, and move the controls.</div>")


def log(msg: str) -> None:
    print(f"[build_site] {msg}", flush=True)


def topic_notebooks(root: Path = ROOT) -> list[Path]:
    return sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))


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


def stage(src: Path, root: Path = ROOT) -> dict:
    """Lay the site's sources out in `src` (mirroring the repository; `root`: where the sources are, the
    repository or the Chinese copies' tree, chinese_book). Returns counts."""
    if src.exists():
        shutil.rmtree(src)
    (src / "notebooks").mkdir(parents=True)
    shutil.copy2(root / "book" / "index.md", src / "index.md")
    widgets = 0
    notebooks = [root / "notebooks" / "index.ipynb"] + topic_notebooks(root)
    for path in notebooks:
        nb = _read(path)
        widgets += static_widgets(nb)
        if path.name == "index.ipynb":  # the calculator is a static page in the book
            for cell in nb["cells"]:
                if cell["cell_type"] == "markdown":
                    # the mock interview runs a timer and widgets: JupyterLab only, not a book page
                    cell["source"] = ZH_LINE.sub(r'**中文版 →** <a href="../zh/notebooks/index.html">\1</a>',
                                                 _md_source(cell))
                    cell["source"] = re.sub(r"\[([^\]]*)\]\(mock_interview\.ipynb\)",
                                            r"\1 (`notebooks/mock_interview.ipynb`, in JupyterLab)",
                                            cell["source"].replace("(calculator.ipynb)", "(calculator.md)"))
        _write(src / "notebooks" / path.name, nb)
    exercises = sorted((root / "exercises").glob("*.ipynb"))
    for path in exercises:
        nb = _read(path)
        widgets += static_widgets(nb)
        _write(src / "exercises" / path.name, nb)
    (src / "docs").mkdir()
    shutil.copy2(root / "docs" / "cheatsheet.md", src / "docs" / "cheatsheet.md")
    (src / "docs" / "glossary.md").write_text(glossary_page(root != ROOT), encoding="utf-8")
    # the teacher's guides (generated by tools/make_teacher_guides.py) and the example class report's chart
    (src / "docs" / "teaching").mkdir()
    for path in sorted((ROOT / "docs" / "teaching").glob("*.md")) + [ROOT / "docs" / "teaching" / "example_class.png"]:
        shutil.copy2(path, src / "docs" / "teaching" / path.name)
    # the calculator: its own introduction (first markdown cell) + how to open it live
    calc = _read(root / "notebooks" / "calculator.ipynb")
    intro = next(_md_source(c) for c in calc["cells"] if c["cell_type"] == "markdown")
    (src / "notebooks" / "calculator.md").write_text(
        intro.rstrip() + "\n\n" + (BOOK / "calculator.md").read_text(encoding="utf-8"), encoding="utf-8")
    return {"notebooks": len(notebooks), "exercises": len(exercises), "widgets": widgets}


def sphinx(src: Path, html: Path, jobs: str, extra: list[str] = ()) -> None:
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-c", str(BOOK), "-j", jobs, "-q",
           "-W", "--keep-going", *extra, str(src), str(html)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    r = subprocess.run(cmd, env=env)
    if r.returncode:
        raise SystemExit(f"sphinx-build failed (exit {r.returncode}); its warnings are above")


# --- slides --------------------------------------------------------------------------------------

# Slides a room can read (issue 19): 1280 x 720, body text 28 px, tables 20 px, code 18-20 px, charts at most
# SLIDE_IMG px tall (book/slides/memlib_reveal/index.html.j2). deck_notebook() estimates each block's height in
# px from its text and starts a new sub-slide where the next block would not fit SLIDE_BUDGET; one chart per
# slide. tests/test_site_browser.py steps through every slide and checks that none overflows.
SLIDE_BUDGET = 620            # px of the 720 for content (the rest: the slide's margins, rounding)
SLIDE_IMG, SLIDE_IMG_CODE = 500, 380   # a chart's max height alone / below visible code (the template's CSS)
SLIDE_IMG_MIN = 330                    # a chart shares its slide with its takeaway when this much is left:
                                       # the template's memlibFit scales it to the room there is
BODY_LINE, BODY_CHARS = 37, 62         # 28 px text: line height, characters per 1,200 px line (wide fonts)
TABLE_ROW, TABLE_CHARS = 34, 100       # 20 px table text
CODE_LINE = 25
HEADING_PX = {1: 70, 2: 62, 3: 54, 4: 48}


ANCHOR_ONLY = re.compile(r'<a id="[^"]*"></a>')


def _text_len(md: str) -> int:
    """Visible characters of a markdown line, CJK counted twice (full width)."""
    md = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", md)
    md = re.sub(r"<[^>]+>|[*_`]|^\s*(?:[-*+]|\d+\.)\s+|^\s*>\s?", "", md)
    return len(md) + len(CJK_CHAR.findall(md))


CJK_CHAR = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef]")


def _lines(n: int, per: int) -> int:
    return max(1, -(-n // per))


def md_blocks(md: str) -> list[tuple[str, int]]:
    """A markdown cell cut where a slide may break (between paragraphs, list items, table rows' groups,
    headings), each piece with its estimated height in px on a 1280 x 720 slide."""
    blocks: list[tuple[str, int]] = []
    chunk: list[str] = []
    kind = None

    def flush():
        nonlocal chunk, kind
        if chunk:
            text = "\n".join(chunk)
            if ANCHOR_ONLY.fullmatch(text.strip()):
                px = 0  # a Chinese heading's English anchor (tools/translate.py build): invisible
            elif kind == "table":
                rows = [r for r in chunk if not re.match(r"^\s*\|?\s*:?-{2,}", r)]
                px = sum(_lines(_text_len(r), TABLE_CHARS) * (TABLE_ROW - 8) + 8 for r in rows) + 20
            elif kind == "code":
                px = len(chunk) * CODE_LINE + 30
            elif kind == "heading":
                px = HEADING_PX.get(len(chunk[0]) - len(chunk[0].lstrip("#")), 48)
            elif kind == "quote":
                px = sum(_lines(_text_len(r), BODY_CHARS - 4) * BODY_LINE for r in chunk if r.strip(" >")) + 40
            else:
                px = _lines(_text_len(" ".join(chunk)), BODY_CHARS) * BODY_LINE + 16
            blocks.append((text, px))
        chunk, kind = [], None

    fence = False
    for line in md.splitlines():
        if fence:
            chunk.append(line)
            if line.lstrip().startswith("```"):
                fence = False
                flush()
            continue
        if line.lstrip().startswith("```"):
            flush()
            fence, kind = True, "code"
            chunk.append(line)
            continue
        if not line.strip() or (kind == "quote" and line.strip() == ">"):
            flush()  # a paragraph ends (inside an answer box too: a box may continue on the next slide)
            continue
        this = ("heading" if re.match(r"#{1,6} ", line) else "table" if line.lstrip().startswith("|")
                else "quote" if line.lstrip().startswith(">") else
                "item" if re.match(r"\s*(?:[-*+]|\d+\.)\s", line) else "para")
        if this == "para" and kind in ("item", "quote", "para"):
            chunk.append(line)  # a continuation line
            continue
        if this in ("heading", "item") or this != kind:
            flush()
        kind = this
        chunk.append(line)
    flush()
    return blocks


def _output_px(cell: dict) -> tuple[int, bool]:
    """(estimated height of a code cell's outputs, whether they hold a chart)."""
    px, chart = 0, False
    visible_code = not ({"hide-input", "remove-input"} & set(cell.get("metadata", {}).get("tags", [])))
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        if "image/png" in data or "image/svg+xml" in data:
            px += min(SLIDE_IMG_CODE if visible_code else SLIDE_IMG, SLIDE_IMG_MIN) + 10
            chart = True
        elif "text/markdown" in data:
            px += sum(h for _, h in md_blocks("".join(data["text/markdown"])))
        elif "text/html" in data:
            html = "".join(data["text/html"])
            rows = html.count("<tr")
            px += rows * TABLE_ROW + 20 if rows else _lines(len(re.sub(r"<[^>]+>", "", html)), BODY_CHARS) * BODY_LINE
        else:
            text = "".join(out.get("text", "") or data.get("text/plain", ""))
            px += len(text.splitlines()) * 24 + 20
    if visible_code:
        px += len(_md_source(cell).splitlines()) * CODE_LINE + 30
    return px, chart


def _fresh(cell: dict, source: str, part: int) -> dict:
    """A continuation of `cell` holding `source` (its part-th piece, with an id of its own)."""
    new = copy.deepcopy(cell)
    new["source"] = source
    if "id" in new:
        new["id"] = f"{new['id']}-{part}"
    return new


def _join(texts: list[str]) -> str:
    """Blocks back into markdown; the paragraphs of one answer box stay in one box."""
    out = texts[0]
    for prev, text in zip(texts, texts[1:]):
        quoted = prev.lstrip().startswith(">") and text.lstrip().startswith(">")
        out += ("\n>\n" if quoted else "\n\n") + text
    return out


def paginate(cells: list[dict]) -> list[dict]:
    """Start a sub-slide wherever the next block would overflow the slide, and before a second chart on a
    slide. A long markdown cell is split between its blocks (paragraphs, list items, headings), a heading
    kept with the block after it."""
    out: list[dict] = []
    used, charts, heading_only = 0, 0, False
    for cell in cells:
        if cell.get("metadata", {}).get("slideshow", {}).get("slide_type", "-") in ("slide", "subslide"):
            used, charts, heading_only = 0, 0, False
        if cell["cell_type"] == "code" and _hidden_code(cell):
            cell["outputs"] = [piece for o in cell.get("outputs", []) for piece in _split_markdown_output(o)]
        if cell["cell_type"] == "code" and _hidden_code(cell) and len(cell.get("outputs", [])) > 1 \
                and _output_px(cell)[0] > SLIDE_BUDGET:
            # a display-only cell with several outputs (tables, a paragraph) taller than a slide: one cell per
            # output from the second on, tagged memlib-continued, so the outputs can go to slides of their own
            rest = cell["outputs"][1:]
            cell["outputs"] = cell["outputs"][:1]
            parts = [cell]
            for k, output in enumerate(rest, 1):
                part = _fresh(cell, cell["source"], k)
                part["outputs"] = [output]
                part["metadata"]["tags"] = list(part["metadata"].get("tags", [])) + ["memlib-continued"]
                part["metadata"].get("slideshow", {}).pop("slide_type", None)
                parts.append(part)
        else:
            parts = [cell]
        for cell in parts:
            used, charts, heading_only = _place(cell, out, used, charts, heading_only)
    return out


def _split_markdown_output(output: dict) -> list[dict]:
    """A display(Markdown(...)) output taller than a slide as one output per block (list item, paragraph)."""
    text = output.get("data", {}).get("text/markdown")
    if text is None:
        return [output]
    blocks = md_blocks("".join(text))
    if sum(px for _, px in blocks) <= SLIDE_BUDGET or len(blocks) < 2:
        return [output]
    return [{**copy.deepcopy(output), "data": {"text/markdown": block, "text/plain": ""}} for block, _ in blocks]


def _hidden_code(cell: dict) -> bool:
    return bool({"hide-input", "remove-input"} & set(cell.get("metadata", {}).get("tags", [])))


def _new_slide(cell: dict) -> dict:
    cell.setdefault("metadata", {}).setdefault("slideshow", {})["slide_type"] = "subslide"
    return cell


def _place(cell: dict, out: list[dict], used: int, charts: int, heading_only: bool) -> tuple[int, int, bool]:
    """Append `cell` (split if it is a long markdown cell) to `out`, starting sub-slides where needed.
    Returns the current slide's (height used, charts, whether it holds only a heading)."""
    if cell["cell_type"] == "code":
        px, chart = _output_px(cell)
        if used and ((not heading_only and used + px > SLIDE_BUDGET) or (chart and charts)):
            _new_slide(cell)
            used, charts = 0, 0
        out.append(cell)
        return used + px, charts + chart, False
    blocks = md_blocks(_md_source(cell)) if cell["cell_type"] == "markdown" else []
    if not blocks:
        out.append(cell)
        return used, charts, heading_only
    pieces: list[list] = []  # [texts, starts a new slide]
    for i, (text, px) in enumerate(blocks):
        heading = text.lstrip().startswith("#") and i + 1 < len(blocks)
        need = px + (blocks[i + 1][1] if heading else 0)
        if used and not heading_only and used + need > SLIDE_BUDGET:
            pieces.append([[], True])
            used, charts = 0, 0
        elif not pieces:
            pieces.append([[], False])
        pieces[-1][0].append(text)
        heading_only = used == 0 and text.lstrip().startswith("#")  # a heading waits for what follows it
        used += px
    for k, (texts, starts) in enumerate(pieces):
        piece = _fresh(cell, _join(texts), k) if k else cell
        if k == 0:
            piece["source"] = _join(texts)
        out.append(_new_slide(piece) if starts else piece)
    return used, charts, heading_only


NOTEBOOK_LINK = re.compile(r"(\]\(|href=\")(?![a-z][a-z0-9+.-]*:|/|#)([^)\"#\s]+)\.ipynb(#[^)\"\s]*)?")


def deck_href(target: str) -> str:
    """Where a link from a topic notebook to `target`.ipynb (relative to notebooks/) goes from its deck in slides/:
    another topic notebook's deck, else the book's page (a deep dive, an exercise page, the index)."""
    import posixpath

    path = posixpath.normpath(posixpath.join("notebooks", target))
    stem = posixpath.basename(path)
    if path.startswith("notebooks/") and re.match(r"\d\d_", stem) and not stem.endswith("_deep_dive") \
            and (ROOT / f"{path}.ipynb").is_file():
        return f"{stem}.slides.html"
    return f"../{path}.html"


def deck_links(text: str) -> str:
    return NOTEBOOK_LINK.sub(lambda m: f"{m.group(1)}{deck_href(m.group(2))}{m.group(3) or ''}", text)


def deck_notebook(nb: dict) -> dict:
    """The notebook as a deck shows it: the setup cell gone (it shows nothing), a sub-slide at each
    heading that does not start a slide already, and at each point where a slide would overflow 1280 x 720
    (paginate). deck_exporter() drops the code of hide-input cells."""
    deck = copy.deepcopy(nb)
    substitute(deck)  # the {eval} roles' stored values (tools/inline_values.py), as in the book
    cells = []
    for cell in deck["cells"]:
        md = cell.setdefault("metadata", {})
        slide_type = md.get("slideshow", {}).get("slide_type", "-")
        # links to other notebooks point at decks and book pages (the .ipynb files are not in slides/)
        if cell["cell_type"] == "markdown":
            cell["source"] = deck_links(_md_source(cell))
        for out in cell.get("outputs", []):
            for mime in ("text/markdown", "text/html"):
                if mime in out.get("data", {}):
                    value = out["data"][mime]
                    out["data"][mime] = deck_links("".join(value) if isinstance(value, list) else value)
        if cell["cell_type"] == "code" and {"hide-input", "remove-input"} & set(md.get("tags", [])):
            if not cell.get("outputs") and slide_type in ("-", ""):
                continue  # the setup cell, an inline-values cell: nothing to show
        if cell["cell_type"] == "markdown" and slide_type in ("-", "") and \
                re.match(r"#{1,3} ", _md_source(cell).lstrip()):
            md.setdefault("slideshow", {})["slide_type"] = "subslide"
        cells.append(cell)
    deck["cells"] = paginate(cells)
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


def speaker_notes(stem: str) -> list[tuple[str, str]]:
    """The teacher's guide's notes for a chapter's deck: (heading, note) in lesson order (docs/teaching/plans.toml
    through tools/make_teacher_guides.py's deck_notes)."""
    from make_teacher_guides import deck_notes

    return deck_notes(stem)


def add_notes(deck: dict, notes: list[tuple[str, str]]) -> int:
    """Put each note in as a reveal.js notes cell (slide_type "notes": the deck's <aside class="notes">, shown in the
    speaker view) after the cell that holds its heading, so it belongs to the slide that shows the heading; returns
    how many went in. A heading the deck does not have is an error (the guide and the chapter disagree)."""
    cells, placed = deck["cells"], 0

    def has(cell: dict, heading: str) -> bool:
        return cell["cell_type"] == "markdown" and any(
            re.sub(r"^#+\s+", "", line.strip()) == heading for line in _md_source(cell).splitlines()
            if line.lstrip().startswith("#"))

    for heading, text in notes:
        at = next((i for i, c in enumerate(cells) if has(c, heading)), None)
        if at is None:
            raise ValueError(f"speaker note for {heading!r}: no slide shows that heading")
        at += 1
        while at < len(cells) and cells[at].get("metadata", {}).get("slideshow", {}).get("slide_type") == "notes":
            at += 1  # after the notes already there: the lesson's order
        cells.insert(at, {"cell_type": "markdown", "id": f"memlib-note-{placed}", "source": text,
                          "metadata": {"slideshow": {"slide_type": "notes"}}})
        placed += 1
    return placed


def deck_html(nb: dict, name: str, exporter=None, notes: list[tuple[str, str]] | None = None) -> str:
    """One notebook (as stored JSON, staged) as a reveal.js deck, with the speaker `notes` (heading, text) if any."""
    import nbformat

    deck = deck_notebook(nb)
    add_notes(deck, notes or [])
    node = nbformat.reads(json.dumps(deck), as_version=4)
    body, _ = (exporter or deck_exporter()).from_notebook_node(node, resources={"metadata": {"name": name}})
    return body


def slides(src: Path, out: Path, cache: Path, notes=None) -> list[Path]:
    """The chapters' decks, each with the speaker notes `notes(stem)` gives (default speaker_notes; None: none)."""
    notes = notes or speaker_notes
    out.mkdir(parents=True, exist_ok=True)
    reveal_js(out / "reveal.js", cache)
    exporter = deck_exporter()
    written = []
    for path in topic_notebooks():
        if path.stem.endswith("_deep_dive"):  # a deep dive is for reading, not for the classroom
            continue
        target = out / f"{path.stem}.slides.html"
        target.write_text(deck_html(_read(src / "notebooks" / path.name), path.stem, exporter, notes(path.stem)),
                          encoding="utf-8")
        written.append(target)
    return written


# --- MathJax: the book's formulas (docs/cheatsheet.md), rendered offline ---------------------------------

def mathjax(dest: Path, cache: Path) -> int:
    """Unpack MathJax's TeX-to-CommonHTML component and its fonts (npm registry: mathjax@MATHJAX_VERSION)
    into `dest` (html/_static/mathjax, book/conf.py's mathjax_path). Returns the number of files."""
    tarball = cache / f"mathjax-{MATHJAX_VERSION}.tgz"
    if not tarball.exists():
        npm = shutil.which("npm")
        if npm is None:
            log("WARNING: no npm to fetch MathJax: the cheat sheet's formulas show as TeX source")
            return 0
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run([npm, "pack", f"mathjax@{MATHJAX_VERSION}", "--silent", "--pack-destination", str(cache)],
                       check=True, stdout=subprocess.DEVNULL)
    if dest.exists():
        shutil.rmtree(dest)
    with tarfile.open(tarball) as tar:
        # tex-chtml.js bundles the TeX input and the CommonHTML output; it loads its fonts from
        # output/chtml/fonts/woff-v2 beside itself
        members = [m for m in tar.getmembers() if m.isfile() and re.match(
            r"package/(es5/tex-chtml\.js$|es5/output/chtml/fonts/woff-v2/|LICENSE$)", m.name)]
        for m in members:
            m.name = m.name[len("package/es5/"):] if m.name.startswith("package/es5/") else m.name[len("package/"):]
        tar.extractall(dest, members=members, filter="data")
    return len(members)


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
    # Debian's package installed, or unpacked beside the fonts (MEMLIB_CJK_FONT_DIR=<root>/usr/share/fonts/opentype/noto
    # after `apt-get download fonts-noto-cjk && dpkg-deb -x fonts-noto-cjk_*.deb <root>`: no system CJK fonts)
    docs = [Path("/usr/share/doc/fonts-noto-cjk/copyright")] + [
        p / "doc" / "fonts-noto-cjk" / "copyright" for p in font_path.parents if p.name == "share"]
    doc = next((d for d in docs if d.is_file()), docs[0])
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


# --- JupyterLite: the notebooks, the exercises and the calculator, run in the reader's browser -------
# JupyterLite (jupyterlite-core + jupyterlite-pyodide-kernel) serves JupyterLab from static files; the
# kernel is Pyodide (CPython compiled to WebAssembly) in a web worker. The build bundles what the kernel
# needs to start and to run the notebooks, so the site works from any static host, and offline:
#   * Pyodide's core from the npm registry (`npm pack pyodide@<the version the kernel is built for>`)
#     in lite/static/pyodide/ (the kernel's pyodideUrl), with a rewritten pyodide-lock.json;
#   * the kernel's own pure-Python packages (IPython and its dependencies, jedi, micropip, comm) as the
#     wheels PyPI publishes (`pip download`, exact versions from Pyodide's lock; the lock's sha256 is set
#     to the downloaded file's, as Pyodide repacks its copies);
#   * ipywidgets (the playgrounds, the calculator): PyPI's wheel at the version installed where the site is
#     built, so the Python side matches the widget manager (jupyterlab_widgets' federated extension, which
#     `jupyter lite build` copies from this environment); loaded when the kernel starts, because memlib
#     imports it inside its playgrounds, where Pyodide's import scan does not look;
#   * numpy and matplotlib with their dependencies (the topic notebooks' charts): WebAssembly builds that
#     only Pyodide's distribution publishes (no wheel for Pyodide on PyPI or npm). The build takes them from
#     --pyodide-dist / MEMLIB_PYODIDE_DIST (the release's pyodide-X.Y.Z.tar.bz2 or the folder it unpacks to,
#     for the version the kernel runs; a base URL also works), by default Pyodide's CDN, caches them in
#     _build/cache/lite/pyodide-packages and checks each file against the lock's sha256. With a distribution
#     given, a package it lacks stops the build: the site then needs no other host. Without one, where the CDN
#     cannot be reached the build says so and those lock entries keep pointing to the CDN (the site then needs
#     the network the first time a chapter runs); the build's stamp records which packages the site serves
#     itself (lite.bundled, lite.from_cdn, lite.offline; tests/test_lite_browser.py reads it);
#   * memlib, a wheel built from this tree, in the lock and loaded when the kernel starts
#     (loadPyodideOptions.packages). memlib's core imports nothing outside the standard library, so its
#     lock entry lists no dependencies.
# The notebooks are copied into the site with two changes (lite_notebook): a line magic at the start of a line
# (the chapters' `%matplotlib inline`) is written as the call IPython makes of it,
# get_ipython().run_line_magic("matplotlib", "inline"): the same under ipykernel, and Pyodide's kernel can then
# parse the cell and load the packages it imports (a cell that does not parse loads nothing); and the .ipynb's
# lists of lines are joined into strings, as Jupyter's server does before JupyterLab sees a notebook.
LITE_COMM_VERSION = "0.2.3"  # ipykernel's comm: not in Pyodide's lock, so piplite installs it from the site
LITE_KERNEL_ROOTS = ["micropip", "ipython", "jedi"]  # what the kernel loads at start (its worker's initKernel)
LITE_PLUGIN = "@jupyterlite/pyodide-kernel-extension:kernel"
LITE_NOTEBOOK_ROOTS = ["numpy", "matplotlib"]  # what the topic notebooks import from Pyodide's distribution
LITE_WIDGETS = "ipywidgets"  # pure Python, from PyPI at the version of this environment
# `%pip` stays: Pyodide's kernel turns it into piplite by its text (pyodide_kernel's litetransform.pip_magic)
LINE_MAGIC = re.compile(r"^%(?!%|pip\b)([A-Za-z_]\w*)[ \t]*(.*?)[ \t]*$")


def lite_pyodide_version() -> str:
    from jupyterlite_pyodide_kernel.constants import PYODIDE_VERSION

    return PYODIDE_VERSION


def lite_cdn(version: str) -> str:
    return f"https://cdn.jsdelivr.net/pyodide/v{version}/full/"


def _rejoin(cell: dict) -> None:
    """A cell's multi-line strings (the .ipynb's lists of lines: source, stream text, text/* output data) joined,
    as Jupyter's server hands a notebook to JupyterLab (nbformat.reads, rejoin_lines). JupyterLite serves the
    .ipynb as it is, and jupyterlab-myst's output renderer given a list instead of a string shows "MyST
    Renderer!" instead of the Markdown (JupyterLab's table of contents fails on it too)."""
    if isinstance(cell.get("source"), list):
        cell["source"] = "".join(cell["source"])
    for out in cell.get("outputs", []):
        if isinstance(out.get("text"), list):
            out["text"] = "".join(out["text"])
        for mime, value in out.get("data", {}).items():
            if isinstance(value, list) and not mime.endswith("json"):
                out["data"][mime] = "".join(value)


def lite_notebook(nb: dict) -> int:
    """Rewrite each line magic at a line's start (`%matplotlib inline`) as the call IPython makes of it
    (get_ipython().run_line_magic("matplotlib", "inline")), in place; return how many. The cell means the same
    under ipykernel; under Pyodide's kernel it now parses, so the kernel loads the packages the cell imports
    (pyodide_kernel 0.8's kernel.run: loadPackagesFromImports on the cell's source, which finds nothing in a
    cell that is not valid Python)."""
    n = 0
    for cell in nb.get("cells", []):
        _rejoin(cell)
        if cell.get("cell_type") != "code":
            continue
        src = _md_source(cell)
        lines = src.split("\n")
        changed = 0
        for i, line in enumerate(lines):
            m = LINE_MAGIC.match(line)
            if m:
                lines[i] = f"get_ipython().run_line_magic({m.group(1)!r}, {m.group(2)!r})"
                changed += 1
        if changed:
            cell["source"] = "\n".join(lines)
            n += changed
    return n


def lite_contents(dest: Path) -> list[str]:
    """The files JupyterLite opens, in the repository's layout (relative links between them resolve), each
    through lite_notebook."""
    if dest.exists():
        shutil.rmtree(dest)
    files = ([ROOT / "notebooks" / "index.ipynb", ROOT / "notebooks" / "calculator.ipynb"] + topic_notebooks()
             + sorted((ROOT / "exercises").glob("*.ipynb")))
    for path in files:
        nb = _read(path)
        lite_notebook(nb)
        _write(dest / path.relative_to(ROOT), nb)
    # what the deep dives read from the repository (Path("..") from notebooks/): the recorded measurements and
    # the benchmark scripts that compare memlib with them (about 1.4 MB). Not the files the drive cannot serve
    # (lite_drive_parses_as_json: the JSON Lines files), which the memlib wheel carries instead (lite_wheel_data).
    for path in lite_data_files():
        if lite_drive_parses_as_json(path.name) and path.suffix != ".json":
            continue
        target = dest / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    return [str(p.relative_to(ROOT)) for p in files] + lite_contents_zh(dest)


def lite_data_files(root: Path = ROOT) -> list[Path]:
    return (sorted((root / "validation").glob("*.json")) + sorted((root / "validation").glob("*.jsonl"))
            + sorted((root / "benchmarks").glob("published*.py")))


# JupyterLite 0.8.6's drive (@jupyterlite/services, contents/drive.ts, _getServerContents) fetches a file of the
# site's contents and runs JSON.parse on its text when the model is a notebook, the extension is registered with
# the json format, the MIME type contains "json", or the path matches this expression: any name with "json" after
# a dot. A JSON Lines file (validation/published.jsonl) is not one JSON document, so the parse throws, the drive
# answers the kernel's read with an error, and Python sees FileNotFoundError.
LITE_DRIVE_JSON = re.compile(r"\.(ipynb|[^/]*json[^/]*)$")
#: where the site's memlib wheel carries the repository files its drive cannot serve (benchmarks/published.py
#: reads them from there when the repository's copy cannot be opened)
LITE_WHEEL_DATA = "memlib/_repo_data"


def lite_drive_parses_as_json(name: str) -> bool:
    return bool(LITE_DRIVE_JSON.search(name))


def lite_wheel_data(root: Path = ROOT) -> list[Path]:
    """The data files the deep dives read that JupyterLite's drive cannot serve (the JSON Lines files)."""
    return [p for p in lite_data_files(root) if lite_drive_parses_as_json(p.name) and p.suffix != ".json"]


def lite_wheel_add(wheel: Path, files: dict[str, Path]) -> None:
    """Add `files` ({name inside the wheel: file}) to `wheel`, its RECORD rewritten to list them (PEP 427: each
    file with its urlsafe-base64 sha256 and size)."""
    import base64
    import hashlib
    import zipfile

    tmp = wheel.with_suffix(".tmp")
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as out:
        record_name = next(n for n in src.namelist() if n.endswith(".dist-info/RECORD"))
        record = src.read(record_name).decode().splitlines()
        for info in src.infolist():
            if info.filename != record_name:
                out.writestr(info, src.read(info.filename))
        rows = [r for r in record if r and not r.startswith(record_name + ",")]
        for name, path in sorted(files.items()):
            data = path.read_bytes()
            out.writestr(name, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            rows.append(f"{name},sha256={digest},{len(data)}")
        out.writestr(record_name, "\n".join(rows + [f"{record_name},,"]) + "\n")
    tmp.replace(wheel)


def lite_memlib_wheel(dest: Path) -> Path:
    """memlib as a wheel, built from this tree (pip wheel, no dependencies), carrying lite_wheel_data() under
    LITE_WHEEL_DATA in the repository's layout (memlib/_repo_data/validation/published.jsonl)."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dest), str(ROOT)],
                   check=True, stdout=subprocess.DEVNULL)
    (wheel,) = dest.glob("memlib-*-py3-none-any.whl")
    lite_wheel_add(wheel, {f"{LITE_WHEEL_DATA}/{p.relative_to(ROOT).as_posix()}": p for p in lite_wheel_data()})
    return wheel


def lite_pyodide_core(version: str, cache: Path) -> Path:
    """Pyodide's core (pyodide.mjs, the WebAssembly, the standard library, the lock) from the npm package."""
    tarball = cache / f"pyodide-{version}.tgz"
    if not tarball.exists():
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit("npm is needed to fetch Pyodide for the JupyterLite site (or build with --no-lite)")
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run([npm, "pack", f"pyodide@{version}", "--silent", "--pack-destination", str(cache)],
                       check=True, stdout=subprocess.DEVNULL)
    core = cache / f"pyodide-{version}"
    if not (core / "pyodide.mjs").is_file():
        with tarfile.open(tarball) as tar:
            members = [m for m in tar.getmembers() if m.isfile() and not m.name.endswith((".map", ".d.ts", ".html"))]
            for m in members:
                m.name = m.name[len("package/"):]
            tar.extractall(core, members=members, filter="data")
    return core


def lite_closure(lock: dict, roots: list[str]) -> list[str]:
    """The lock's packages that `roots` need, dependencies included (names as the lock spells them)."""
    packages = lock["packages"]
    norm = {re.sub(r"[-_.]+", "-", name).lower(): name for name in packages}
    seen, todo = [], list(roots)
    while todo:
        name = norm.get(re.sub(r"[-_.]+", "-", todo.pop()).lower())
        if name is None or name in seen:
            continue
        seen.append(name)
        todo += packages[name]["depends"]
    return sorted(seen)


def lite_download(specs: list[str], dest: Path) -> None:
    """Pure-Python wheels from PyPI (exact versions), cached in `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    want = [s for s in specs if not any(dest.glob(re.sub(r"[-_.]+", "_", s.split("==")[0]) + "-" + s.split("==")[1] + "-*.whl"))]
    if want:
        env = {**os.environ, "PIP_CONSTRAINT": ""}  # the exact versions Pyodide's lock names, whatever pins the host has
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "--python-version", "3.14", "-d", str(dest), *want], check=True, env=env)


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def lite_pyodide_packages(lock: dict, names: list[str], dest: Path, source: str) -> tuple[dict[str, Path], list[str]]:
    """Pyodide's own builds of `names` (file names and sha256 as its lock gives them) from `source`: a folder of
    Pyodide's distribution, its release tarball (.tar.bz2 / .tar.gz) or a base URL. Cached in `dest`; a file whose
    sha256 differs from the lock's is refused. Returns ({name: file} for each one obtained, [what failed, why])."""
    import hashlib
    import urllib.error
    import urllib.request

    dest.mkdir(parents=True, exist_ok=True)
    got, failed = {}, []
    tar = members = unreachable = None
    folder = Path(source) if not re.match(r"https?://", source) and Path(source).is_dir() else None
    if folder is not None and not (folder / "pyodide-lock.json").is_file():
        # the folder the release tarball unpacks into (its pyodide/ inside), or one above it
        folder = next((p.parent for p in sorted(folder.rglob("pyodide-lock.json"), key=lambda p: len(p.parts))), folder)
    for name in names:
        spec = lock["packages"][name]
        target = dest / spec["file_name"]
        if not (target.is_file() and _sha256(target) == spec["sha256"]):
            if unreachable:  # the host did not answer for the first file: do not wait for it again per file
                failed.append(f"{name} ({unreachable})")
                continue
            try:
                if re.match(r"https?://", source):
                    with urllib.request.urlopen(source.rstrip("/") + "/" + spec["file_name"], timeout=60) as r:
                        data = r.read()
                elif folder is not None:
                    data = (folder / spec["file_name"]).read_bytes()
                else:
                    if tar is None:
                        tar = tarfile.open(source)
                        members = {Path(m.name).name: m for m in tar.getmembers() if m.isfile()}
                    data = tar.extractfile(members[spec["file_name"]]).read()
            except (OSError, KeyError, ValueError, tarfile.TarError) as e:
                failed.append(f"{name} ({type(e).__name__}: {e})")
                if isinstance(e, urllib.error.URLError) and not isinstance(e, urllib.error.HTTPError):
                    unreachable = f"{type(e).__name__}: {e}"
                continue
            if hashlib.sha256(data).hexdigest() != spec["sha256"]:
                failed.append(f"{name} (sha256 differs from Pyodide's lock)")
                continue
            target.write_bytes(data)
        got[name] = target
    if tar is not None:
        tar.close()
    return got, failed


def _lock_entry(name: str, wheel: Path, imports: list[str], depends: list[str]) -> dict:
    return {"name": name, "version": wheel.name.split("-")[1], "file_name": wheel.name, "install_dir": "site",
            "sha256": _sha256(wheel), "package_type": "package", "imports": imports, "depends": depends,
            "unvendored_tests": False}


def lite_lock(lock: dict, local: dict[str, Path], memlib_wheel: Path, cdn: str, widgets: Path | None = None) -> dict:
    """Pyodide's lock with `local` packages (name -> wheel beside the lock), memlib and ipywidgets (`widgets`)
    served by the site, every other package fetched from Pyodide's CDN (absolute file_name)."""
    out = copy.deepcopy(lock)
    for name, spec in out["packages"].items():
        if name in local:
            spec["file_name"] = local[name].name
            spec["sha256"] = _sha256(local[name])
        else:
            spec["file_name"] = cdn + spec["file_name"]
    out["packages"]["memlib"] = _lock_entry("memlib", memlib_wheel, ["memlib"], [])
    if widgets is not None:
        # ipywidgets imports traitlets and comm (piplite installs comm when the kernel starts); widgetsnbextension
        # and jupyterlab_widgets carry the widget manager's JavaScript, which the site serves as a federated
        # extension, and are never imported
        out["packages"]["ipywidgets"] = _lock_entry("ipywidgets", widgets, ["ipywidgets"], ["traitlets"])
    return out


def lite_config(lite_dir: Path) -> dict:
    """The lite dir's jupyter-lite.json (read by `jupyter lite build`)."""
    cfg = {"jupyter-lite-schema-version": 0, "jupyter-config-data": {
        "appName": "memlib · JupyterLite",
        # the cell toolbar: JupyterLab 4.6's overlap check (_markdownOverlapsToolbar) throws "Cannot read properties
        # of undefined (reading 'node')" on jupyterlab-myst's markdown cells (deep dives 08 and 09, on running them)
        "disabledExtensions": ["@jupyterlite/application-extension:announcements", "@jupyterlab/cell-toolbar-extension"],
        # window.jupyterapp, as JupyterLab's own UI tests use it: tests/test_lite_browser.py runs cells with it
        "exposeAppInBrowser": True,
    }}
    lite_dir.mkdir(parents=True, exist_ok=True)
    (lite_dir / "jupyter-lite.json").write_text(json.dumps(cfg, indent=1), encoding="utf-8")
    return cfg


def lite_settings(path: Path, preload: list[str] = ("memlib",)) -> None:
    """The built jupyter-lite.json: the kernel loads Pyodide from the site and memlib at start (added after the
    build: its piplite step writes the kernel's settings whole, pipliteUrls only)."""
    cfg = json.loads(path.read_text(encoding="utf-8"))
    plugins = cfg["jupyter-config-data"].setdefault("litePluginSettings", {})
    plugins.setdefault(LITE_PLUGIN, {}).update({
        "pyodideUrl": "./static/pyodide/pyodide.mjs",
        "loadPyodideOptions": {"packages": list(preload)},
    })
    path.write_text(json.dumps(cfg, indent=2), encoding="utf-8")


def lite_digest(root: Path = ROOT) -> dict[str, str]:
    """sha256 of what the JupyterLite site bundles beyond the book's sources: memlib (its wheel), the data files."""
    import hashlib

    files = (sorted((root / "memlib").rglob("*.py")) + sorted((root / "memlib").rglob("*.po"))  # .po: the grader's
             + [root / "pyproject.toml"] + lite_data_files(root))                               # translations
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def lite_dist_release(source: str) -> dict | None:
    """What a distribution folder or release tarball says it is: {"version": its package.json's version (the dist
    folder Pyodide releases carries one) or None, "info": its pyodide-lock.json's info (Python, ABI, platform; the
    lock of Pyodide 314 names no version) or None}; None for a URL."""
    if re.match(r"https?://", source):
        return None
    path, texts = Path(source), {}
    try:
        if path.is_dir():
            for name in ("package.json", "pyodide-lock.json"):
                found = sorted(path.rglob(name), key=lambda p: len(p.parts))
                texts[name] = found[0].read_text(encoding="utf-8") if found else None
        else:
            with tarfile.open(path) as tar:
                for m in tar:  # one pass: a release tarball is large
                    name = Path(m.name).name
                    if m.isfile() and name in ("package.json", "pyodide-lock.json") and name not in texts:
                        texts[name] = tar.extractfile(m).read().decode()
    except (OSError, tarfile.TarError, UnicodeDecodeError) as e:
        raise SystemExit(f"--pyodide-dist {source}: cannot read it ({type(e).__name__}: {e})") from None
    package, lock = (json.loads(texts[n]) if texts.get(n) else None for n in ("package.json", "pyodide-lock.json"))
    if package is None and lock is None:
        raise SystemExit(f"--pyodide-dist {source}: no pyodide-lock.json in it; give the release's "
                         "pyodide-X.Y.Z.tar.bz2 or the folder it unpacks to")
    return {"version": (package or {}).get("version"), "info": (lock or {}).get("info")}


def lite_dist_mismatch(release: dict | None, version: str, lock: dict) -> str | None:
    """Why a distribution is not the Pyodide the kernel runs (`version`, whose lock is `lock`), or None."""
    if release is None:
        return None
    if release["version"] and release["version"] != version:
        return f"is Pyodide {release['version']}"
    info = {k: (release["info"] or {}).get(k) for k in ("python", "abi_version", "platform")}
    want = {k: lock["info"].get(k) for k in info}
    if release["info"] and info != want:
        return f"is a Pyodide for {info} (Pyodide {version}: {want})"
    return None


def lite_dist_hint(version: str) -> str:
    """How to give the build Pyodide's distribution (the log's warning, the browser test's skip reason)."""
    return (f"download Pyodide {version}'s distribution, pyodide-{version}.tar.bz2 from "
            f"https://github.com/pyodide/pyodide/releases/tag/{version}, and rebuild with "
            f"python tools/build_site.py --pyodide-dist PATH (the tarball or the folder it unpacks to; or "
            f"MEMLIB_PYODIDE_DIST=PATH)")


def lite_pyodide_dir(pyo: Path, core: Path, lock: dict, wheels: dict[str, Path], memlib_wheel: Path,
                     widgets: Path | None, cdn: str) -> dict[str, Path]:
    """Lay out the kernel's pyodideUrl folder (lite/static/pyodide): Pyodide's core, each of `wheels` ({lock name:
    file}: the kernel's PyPI wheels, the packages taken from Pyodide's distribution) beside it, memlib's and
    ipywidgets' wheels, and the lock (lite_lock) naming them by file name: Pyodide resolves a relative file_name
    against the folder of pyodide.mjs (pyodide-kernel 0.8.6's worker passes indexURL = pyodideUrl up to its last
    "/", and Pyodide reads pyodide-lock.json there too). Returns {lock name: file in the folder}."""
    shutil.copytree(core, pyo, dirs_exist_ok=True)
    local = {}
    for name, whl in wheels.items():
        shutil.copy2(whl, pyo / whl.name)
        local[name] = pyo / whl.name
    for whl in filter(None, (memlib_wheel, widgets)):
        shutil.copy2(whl, pyo / whl.name)
    (pyo / "pyodide-lock.json").write_text(json.dumps(lite_lock(
        lock, local, pyo / memlib_wheel.name, cdn, pyo / widgets.name if widgets else None)), encoding="utf-8")
    return local


def lite_check_dist(pyodide_dist: str | None, out: Path) -> tuple[Path, dict]:
    """Pyodide's core for the kernel (npm, cached under `out`) and its lock; a `pyodide_dist` of another Pyodide
    stops the build here (main() calls this before the book's pages, so a wrong file fails in seconds)."""
    version = lite_pyodide_version()
    core = lite_pyodide_core(version, out / "cache" / "lite")
    lock = json.loads((core / "pyodide-lock.json").read_text(encoding="utf-8"))
    if pyodide_dist:
        why = lite_dist_mismatch(lite_dist_release(pyodide_dist), version, lock)
        if why:
            raise SystemExit(f"--pyodide-dist {pyodide_dist} {why}, but the installed jupyterlite-pyodide-kernel "
                             f"runs Pyodide {version}: " + lite_dist_hint(version))
    return core, lock


def lite(html: Path, out: Path, pyodide_dist: str | None = None) -> dict:
    """Build the JupyterLite site into html/lite. Returns what it holds (for the log and the stamp).
    `pyodide_dist` (else MEMLIB_PYODIDE_DIST): Pyodide's distribution, from which numpy, matplotlib and their
    dependencies are bundled; given, the site needs no other host, and a package it lacks stops the build. Not
    given, the build tries Pyodide's CDN and leaves on the CDN what it cannot reach (a warning, and the stamp's
    from_cdn)."""
    from importlib.metadata import PackageNotFoundError, version as installed

    cache = out / "cache" / "lite"
    work = out / "lite-src"
    version = lite_pyodide_version()
    pyodide_dist = pyodide_dist or os.environ.get("MEMLIB_PYODIDE_DIST") or None
    core, lock = lite_check_dist(pyodide_dist, out)
    files = lite_contents(work / "files")
    wheel = lite_memlib_wheel(work / "wheels")
    kernel = lite_closure(lock, LITE_KERNEL_ROOTS)
    specs = [f"{lock['packages'][n]['name']}=={lock['packages'][n]['version']}" for n in kernel]
    try:  # the widget manager (jupyterlab_widgets' extension) comes from this environment: the same release
        widgets_version = installed(LITE_WIDGETS)
    except PackageNotFoundError:
        raise SystemExit("the JupyterLite site serves ipywidgets at the version installed here, with its JupyterLab "
                         "extension: pip install -e '.[site,notebooks]' (or build with --no-lite)") from None
    lite_download(specs + [f"comm=={LITE_COMM_VERSION}", f"{LITE_WIDGETS}=={widgets_version}"], cache / "wheels")
    comm = next((cache / "wheels").glob(f"comm-{LITE_COMM_VERSION}-*.whl"))
    widgets = next((cache / "wheels").glob(f"{LITE_WIDGETS}-{widgets_version}-*.whl"))
    source = pyodide_dist or lite_cdn(version)
    wanted = [n for n in lite_closure(lock, LITE_NOTEBOOK_ROOTS) if n not in kernel]
    pyodide_local, failed = lite_pyodide_packages(lock, wanted, cache / "pyodide-packages", source)
    if failed and pyodide_dist:
        raise SystemExit(f"{len(failed)} of the packages the notebooks need could not be taken from {pyodide_dist}: "
                         f"{'; '.join(failed)}. " + lite_dist_hint(version))
    if failed:
        log(f"WARNING: {len(failed)} of Pyodide's packages could not be had from {source}: {'; '.join(failed[:3])}"
            f"{' ...' if len(failed) > 3 else ''}. The site loads them from Pyodide's CDN when a notebook imports "
            "them (a chapter then needs the network). For a site that needs no other host, "
            + lite_dist_hint(version))
    lite_config(work / "lite-dir")
    target = html / "lite"
    if target.exists():
        shutil.rmtree(target)
    # jupyterlite's task database outlives the output it describes: a second build into the same --out would
    # skip the merge of lite-dir/jupyter-lite.json (exposeAppInBrowser, appName) into a fresh output
    (work / ".jupyterlite.doit.db").unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "jupyterlite_core", "build", "--lite-dir", str(work / "lite-dir"),
           "--contents", str(work / "files"), "--output-dir", str(target), "--piplite-wheels", str(comm),
           "--no-sourcemaps", "--no-unused-shared-packages"]
    r = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    if r.returncode:
        sys.stderr.write(r.stdout[-4000:] + r.stderr[-4000:])
        raise SystemExit(f"jupyter lite build failed (exit {r.returncode})")
    lite_settings(target / "jupyter-lite.json", ["memlib", LITE_WIDGETS])
    kernel_wheels = {}
    for name in kernel:
        spec = lock["packages"][name]
        stem = re.sub(r"[-_.]+", "_", spec["name"]) + "-" + spec["version"] + "-"
        kernel_wheels[name] = next(p for p in (cache / "wheels").glob("*.whl") if p.name.lower().startswith(stem.lower()))
    local = lite_pyodide_dir(target / "static" / "pyodide", core, lock, {**kernel_wheels, **pyodide_local}, wheel,
                             widgets, lite_cdn(version))
    built = json.loads((target / "jupyter-lite.json").read_text(encoding="utf-8"))["jupyter-config-data"]
    extensions = sorted(e["name"] for e in built.get("federated_extensions", []))  # copied from this environment
    size = sum(p.stat().st_size for p in target.rglob("*") if p.is_file())
    from_cdn = sorted(set(wanted) - set(pyodide_local))
    return {"files": files, "pyodide": version, "kernel_wheels": len(kernel) + 1, "memlib_wheel": wheel.name,
            "bundled": sorted(local) + ["ipywidgets", "memlib"], "from_cdn": from_cdn, "offline": not from_cdn,
            "pyodide_packages": source, "pyodide_dist": pyodide_dist, "extensions": extensions, "bytes": size,
            "sources": lite_digest()}


def source_digest(root: Path = ROOT) -> dict[str, str]:
    """sha256 of every file the site is built from (the browser tests compare it with the build's stamp)."""
    import hashlib

    files = ([root / "notebooks" / "index.ipynb", root / "notebooks" / "calculator.ipynb", root / "docs" / "cheatsheet.md"]
             + zh_source_files(root)
             + sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb")) + sorted((root / "exercises").glob("*.ipynb"))
             + sorted(p for p in (root / "book").rglob("*") if p.is_file() and "__pycache__" not in p.parts)
             + sorted((root / "docs" / "teaching").glob("*.md")) + [root / "docs" / "teaching" / "plans.toml"]
             + [root / "tools" / "build_site.py"])
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files if p.exists()}


STAMP = ".memlib-build.json"


# --- the Chinese book (issue 46): html/zh, from the Chinese copies (tools/translate.py build) ------------------
# The Chinese book is a second Sphinx build of the same layout: its sources are the English sources with each
# markdown paragraph replaced by its translation (i18n/zh/**.po; an untranslated paragraph stays English), staged
# by stage() from that tree, built with language zh_CN into html/zh. Every page of both books links to the same page
# of the other (book/_ext/memlib_site.py: add_language_switch). Its slides come from the Chinese chapters
# (html/zh/slides); it shares the English book's MathJax copy, CJK font and JupyterLite site (whose contents hold
# the committed Chinese notebooks under zh/: "Try it live" opens them).
ZH_LINE = re.compile(r"\*\*中文版 →\*\* \[([^\]]*)\]\(\.\./zh/notebooks/index\.ipynb\)")


def glossary_page(zh: bool) -> str:
    """The glossary page of each book, from i18n/glossary.tsv (the one glossary: catalogs, grader, slides)."""
    import translate

    rows = translate.glossary()
    cell = lambda t: t.replace("|", "\\|")  # noqa: E731
    if zh:
        head = ["# 术语表 · Glossary", "",
                "本书、练习、评分器和幻灯片统一使用的中文术语（来自 `i18n/glossary.tsv`，唯一的术语表）。"
                "翻译须使用这里的中文术语；测试会检查。", "", "| 中文 | English | 说明 |", "|---|---|---|"]
        body = [f"| {cell(zh_)} | {cell(en)} | {cell(note)} |" for en, zh_, note in rows]
    else:
        head = ["# Glossary · 术语表", "",
                "The Chinese terms every page of the Chinese edition uses, as Chinese LLM-infrastructure interviews "
                "use them (from `i18n/glossary.tsv`, the one glossary; the catalogs' test checks them).", "",
                "| English | 中文 | note |", "|---|---|---|"]
        body = [f"| {cell(en)} | {cell(zh_)} | {cell(note)} |" for en, zh_, note in rows]
    return "\n".join(head + body) + "\n"


def zh_source_files(root: Path = ROOT) -> list[Path]:
    """What the Chinese book is built from beyond the English sources: the catalogs and the glossary."""
    return sorted((root / "i18n").rglob("*.po")) + [root / "i18n" / "glossary.tsv"]


def chinese_book(out: Path, html: Path, args) -> dict:
    """Build the Chinese book into html/zh (see above). Returns counts for the log."""
    import translate

    tree = out / "zh-tree"
    if tree.exists():
        shutil.rmtree(tree)
    counts = translate.build(tree, outside="")  # the book's layout: links to other files left as they are
    for extra in ("notebooks/calculator.ipynb",):  # stage() reads it whether or not it is a translated source
        if not (tree / extra).exists():
            shutil.copy2(ROOT / extra, tree / extra)
    src = out / "src-zh"
    stage(src, root=tree)
    target = html / "zh"
    if target.exists():
        shutil.rmtree(target)
    sphinx(src, target, args.jobs, ["-D", "language=zh_CN", "-D", "html_title=大模型显存 · GPU memory for LLMs"])
    pages = [p for p in target.rglob("*.html") if "_static" not in p.parts and p.name not in ("search.html", "genindex.html")]
    decks = [] if args.no_slides else zh_slides(src, target / "slides", out / "cache")
    return {"pages": len(pages), "decks": len(decks), "translated": sum(d for d, _ in counts.values()),
            "paragraphs": sum(t for _, t in counts.values())}


def zh_heading(source: Path, heading: str) -> str:
    """A heading of `source` (its text, no #) as the Chinese copy shows it (the English where not translated)."""
    import translate

    for en, zh in translate.catalog(source).items():
        if re.match(r"#+\s", en) and "\n" not in en.strip() and re.sub(r"^#+\s+", "", en.strip()) == heading:
            return re.sub(r"^#+\s+", "", zh.strip())
    return heading


def zh_deck_notes(stem: str) -> list[tuple[str, str]] | None:
    """The teacher's speaker notes for a chapter's deck (tools/make_teacher_guides.py's deck_notes, where this tree
    has them; None where not), each placed by its heading as the Chinese deck shows it. The notes stay English."""
    try:
        from make_teacher_guides import deck_notes
    except ImportError:
        return None
    source = Path("notebooks") / f"{stem}.ipynb"
    return [(zh_heading(source, heading), text) for heading, text in deck_notes(stem)]


def zh_slides(src: Path, out: Path, cache: Path) -> list[Path]:
    """The Chinese chapters' decks (slides() for the Chinese book): the speaker notes found by their Chinese headings."""
    return slides(src, out, cache, notes=zh_deck_notes)


def start_chinese_book(out: Path, args) -> subprocess.Popen:
    """chinese_book in a process of its own (this script with --zh-only), while the English book builds."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--zh-only", "--out", str(out), "-j", args.jobs]
    return subprocess.Popen(cmd + (["--no-slides"] if args.no_slides else []))


def zh_finish(html: Path) -> None:
    """The Chinese book uses the English book's MathJax and, once cjk_font has scanned both books' pages, its
    CJK font subset."""
    for folder in ("mathjax", "fonts"):
        if (html / "_static" / folder).is_dir():
            shutil.copytree(html / "_static" / folder, html / "zh" / "_static" / folder, dirs_exist_ok=True)


def lite_contents_zh(dest: Path) -> list[str]:
    """The committed Chinese notebooks (zh/, tools/translate.py build) in the JupyterLite site, under zh/ as in the
    repository (their links reach each other and, one folder up, the English files), with the data files the deep
    dives read from ../validation."""
    zh = ROOT / "zh"
    files = sorted((zh / "notebooks").glob("*.ipynb")) + sorted((zh / "exercises").glob("*.ipynb"))
    for path in files:
        nb = _read(path)
        lite_notebook(nb)
        _write(dest / path.relative_to(ROOT), nb)
    for path in lite_data_files():
        if path.parent.name == "validation":
            target = dest / "zh" / path.relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
    return [str(p.relative_to(ROOT)) for p in files]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "_build", help="build folder (default: _build)")
    ap.add_argument("--no-slides", action="store_true", help="skip the reveal.js decks (no npm needed)")
    ap.add_argument("-j", "--jobs", default="1", help="sphinx-build -j (default 1)")
    ap.add_argument("--no-zh", action="store_true", help="skip the Chinese book (html/zh)")
    ap.add_argument("--zh-only", action="store_true", help=argparse.SUPPRESS)  # the Chinese book's own process
    ap.add_argument("--no-lite", action="store_true", help="skip the JupyterLite site (no npm or PyPI needed)")
    ap.add_argument("--pyodide-dist", metavar="PATH", help="Pyodide's distribution (the release's "
                    "pyodide-X.Y.Z.tar.bz2 or the folder it unpacks to; a base URL also works): the JupyterLite site "
                    "then serves numpy, matplotlib and their dependencies itself and needs no other host (default: "
                    "MEMLIB_PYODIDE_DIST, else Pyodide's CDN where reachable)")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    out = args.out.resolve()
    src, html = out / "src", out / "html"
    if args.zh_only:
        info = chinese_book(out, html, args)
        log(f"Chinese book: {info['pages']} pages, {info['decks']} decks, {info['translated']}/{info['paragraphs']} "
            f"paragraphs translated ({info['paragraphs'] - info['translated']} in English) in "
            f"{time.monotonic() - t0:.1f} s")
        return 0
    pyodide_dist = args.pyodide_dist or os.environ.get("MEMLIB_PYODIDE_DIST") or None
    if pyodide_dist and not args.no_lite:
        lite_check_dist(pyodide_dist, out)
    counts = stage(src)
    log(f"staged {counts['notebooks']} notebooks, {counts['exercises']} exercise notebooks, "
        f"{counts['widgets']} widget(s) as notes ({time.monotonic() - t0:.1f} s)")
    if html.exists():
        shutil.rmtree(html)
    zh_job = None if args.no_zh else start_chinese_book(out, args)  # beside the English book, on another core
    t1 = time.monotonic()
    sphinx(src, html, args.jobs)
    pages = sorted(p for p in html.rglob("*.html") if "_static" not in p.parts and p.name not in
                   ("search.html", "genindex.html") and p.relative_to(html).parts[0] != "zh")
    log(f"sphinx: {len(pages)} pages in {time.monotonic() - t1:.1f} s")
    log(f"MathJax {MATHJAX_VERSION}: {mathjax(html / '_static' / 'mathjax', out / 'cache')} files, local")
    if not args.no_slides:
        t2 = time.monotonic()
        decks = slides(src, html / "slides", out / "cache")
        log(f"slides: {len(decks)} decks (reveal.js {REVEAL_VERSION}, local) in {time.monotonic() - t2:.1f} s")
    if zh_job is not None:
        t5 = time.monotonic()
        if zh_job.wait():
            raise SystemExit(f"the Chinese book failed (exit {zh_job.returncode}); its messages are above")
        log(f"Chinese book: waited {time.monotonic() - t5:.1f} s for it after the English book")
    t3 = time.monotonic()
    font = cjk_font(html)
    if zh_job is not None:
        zh_finish(html)
    log(f"CJK font: {font['chars']} characters, " + (", ".join(f"{w} {b / 1024:.0f} KiB" for w, b in
                                                              font["files"].items()) or "no font file")
        + f" ({time.monotonic() - t3:.1f} s)")
    lite_info = None
    if not args.no_lite:
        t4 = time.monotonic()
        lite_info = lite(html, out, pyodide_dist)
        log(f"lite: JupyterLite with {len(lite_info['files'])} notebooks, Pyodide {lite_info['pyodide']} (npm) and "
            f"{len(lite_info['bundled'])} packages local ({', '.join(lite_info['from_cdn']) or 'none'} from the CDN), "
            f"{lite_info['memlib_wheel']}; extensions {', '.join(lite_info['extensions'])}; "
            f"{lite_info['bytes'] / 2**20:.0f} MiB in {time.monotonic() - t4:.1f} s")
    elapsed = time.monotonic() - t0
    (html / STAMP).write_text(json.dumps({"seconds": round(elapsed, 1), "slides": not args.no_slides, "lite": lite_info,
                                          "pages": len(pages), "sources": source_digest()}, indent=1))
    log(f"done in {elapsed:.1f} s: open {html / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
