"""The site builder's parts that need no browser (tools/build_site.py, book/): the staged sources,
the launch links, the CJK ranges the font is cut to. The built site itself: tests/test_site_browser.py."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from test_site_browser import load_tool

ROOT = Path(__file__).resolve().parents[1]
build_site = load_tool("build_site")
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import memlib_site  # noqa: E402


def test_stage_lays_out_the_collection_without_solutions(tmp_path):
    counts = build_site.stage(tmp_path)
    staged = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    topics = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    exercises = sorted(p.name for p in (ROOT / "exercises").glob("*.ipynb"))
    teaching = sorted(f"docs/teaching/{p.name}" for p in (ROOT / "docs" / "teaching").glob("*.md"))
    assert len(teaching) == len([t for t in topics if "_deep_dive" not in t]) + 2  # a guide per chapter, index, kit
    assert staged == sorted(["index.md", "docs/cheatsheet.md", "docs/glossary.md", "notebooks/index.ipynb",
                             "notebooks/calculator.md", "docs/teaching/example_class.png"] + teaching
                            + [f"notebooks/{n}" for n in topics] + [f"exercises/{n}" for n in exercises])
    assert not any("solution" in s for s in staged)
    assert counts == {"notebooks": 1 + len(topics), "exercises": len(exercises), "widgets": counts["widgets"]}
    # every topic's playground becomes a note on how to run it; nothing else changes
    for name in topics:
        nb = json.loads((tmp_path / "notebooks" / name).read_text(encoding="utf-8"))
        notes = [o for c in nb["cells"] for o in c.get("outputs", []) if build_site.WIDGET_NOTE in
                 str(o.get("data", {}).get("text/html", ""))]
        assert len(notes) == (0 if "_deep_dive" in name else 1), name  # a deep dive has no playground
        original = json.loads((ROOT / "notebooks" / name).read_text(encoding="utf-8"))
        assert [c["source"] for c in nb["cells"]] == [c["source"] for c in original["cells"]]
    # the calculator is a static page: the app's own introduction and how to open it live
    calc = (tmp_path / "notebooks" / "calculator.md").read_text(encoding="utf-8")
    assert calc.startswith("# Can I run this?") and "voila notebooks/calculator.ipynb" in calc
    index = (tmp_path / "notebooks" / "index.ipynb").read_text(encoding="utf-8")
    assert "(calculator.md)" in index and "(calculator.ipynb)" not in index


def test_launch_links_follow_the_readme_patterns():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "OWNER/REPO" not in readme, "no placeholder links in the README"
    assert "?urlpath=voila%2Frender%2Fnotebooks%2Fcalculator.ipynb" in readme
    path, urlpath, command = memlib_site.launch_target("notebooks/calculator")
    assert memlib_site.binder_url("alice/memlib", "main", "https://mybinder.org", urlpath) == \
        "https://mybinder.org/v2/gh/alice/memlib/main?urlpath=voila%2Frender%2Fnotebooks%2Fcalculator.ipynb"
    assert command == "voila notebooks/calculator.ipynb"
    _, urlpath, command = memlib_site.launch_target("notebooks/index")
    assert urlpath == "lab/tree/notebooks/index.ipynb"
    assert command == "jupyter lab --LabApp.default_url=/lab/tree/notebooks/index.ipynb"
    assert memlib_site.launch_target("exercises/01_65b_on_4x_v100_exercises")[0] == \
        "exercises/01_65b_on_4x_v100_exercises.ipynb"
    assert memlib_site.launch_target("docs/cheatsheet")[0] == "notebooks/index.ipynb"
    assert memlib_site.lite_url("exercises/01_65b_on_4x_v100_exercises.ipynb") == \
        "lite/notebooks/index.html?path=exercises/01_65b_on_4x_v100_exercises.ipynb"
    conf = (ROOT / "book" / "conf.py").read_text(encoding="utf-8")
    assert "OWNER" not in conf and conf.count('os.environ.get("MEMLIB_SITE_REPO"') == 1, "one setting, no placeholder"


def test_font_subset_ranges_match_the_css():
    css = (ROOT / "book" / "_static" / "memlib.css").read_text(encoding="utf-8")
    faces = re.findall(r"unicode-range:([^;]+);", css)
    assert len(faces) == 2
    for face in faces:
        ranges = []
        for part in face.replace("\n", " ").split(","):
            lo, _, hi = part.strip()[2:].partition("-")
            ranges.append((int(lo, 16), int(hi or lo, 16)))
        assert ranges == build_site.CJK_RANGES
    assert any(lo <= ord("中") <= hi for lo, hi in build_site.CJK_RANGES)
    assert not any(lo <= ord("“") <= hi or lo <= ord("·") <= hi for lo, hi in build_site.CJK_RANGES)


def test_glossary_page_lists_every_term_in_both_books():
    rows = [ln.split("\t") for ln in (ROOT / "i18n" / "glossary.tsv").read_text(encoding="utf-8").splitlines()
            if ln.strip() and not ln.startswith("#")]
    for zh in (False, True):
        page = build_site.glossary_page(zh)
        table = [ln for ln in page.splitlines() if ln.startswith("| ") and not ln.startswith(("| English", "| 中文"))]
        assert len(table) == len(rows)
        first = rows[0][1] if zh else rows[0][0]
        assert table[0].startswith(f"| {first} |")
    assert "| GPU memory | 显存 |" in build_site.glossary_page(False)


def test_language_switch_and_chinese_launch_targets():
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    import memlib_site

    assert memlib_site.other_edition("index", zh=False) == "zh/index.html"
    assert memlib_site.other_edition("notebooks/00_memory_anatomy", zh=False) == "../zh/notebooks/00_memory_anatomy.html"
    assert memlib_site.other_edition("notebooks/00_memory_anatomy", zh=True) == "../../notebooks/00_memory_anatomy.html"
    path, urlpath, command = memlib_site.launch_target("exercises/00_memory_anatomy_exercises", zh=True)
    assert path == "zh/exercises/00_memory_anatomy_exercises.ipynb" and urlpath == "lab/tree/" + path
    assert command.endswith("/lab/tree/" + path)
    assert memlib_site.launch_target("docs/cheatsheet", zh=True)[0] == "zh/notebooks/index.ipynb"
    assert memlib_site.launch_target("notebooks/calculator", zh=True)[0] == "notebooks/calculator.ipynb"


def test_chinese_decks_place_speaker_notes_by_the_chinese_heading(monkeypatch):
    import translate

    monkeypatch.setattr(translate, "catalog", lambda source: {"## 2. The 30-second answer · 30 秒回答": "## 2. 30 秒回答",
                                                              "Some prose.": "一些文字。"})
    assert build_site.zh_heading(Path("notebooks/00_memory_anatomy.ipynb"), "2. The 30-second answer · 30 秒回答") \
        == "2. 30 秒回答"
    assert build_site.zh_heading(Path("notebooks/00_memory_anatomy.ipynb"), "3. Not translated") == "3. Not translated"
