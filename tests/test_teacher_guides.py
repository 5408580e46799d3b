"""The teacher's guides (issue 45): a 45-minute lesson per chapter in docs/teaching/, generated from
docs/teaching/plans.toml by tools/make_teacher_guides.py, and their speaker notes in the chapters' slides."""

from __future__ import annotations

import copy
import html as htmllib
import json
import re
import sys
from pathlib import Path

import pytest
from test_site_browser import load_tool

from memlib.learn.exercises import EXERCISES, NOTEBOOKS

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
guides = load_tool("make_teacher_guides")
build_site = load_tool("build_site")
CHAPTERS = sorted(NOTEBOOKS)


def test_the_guides_are_current():
    assert guides.main(["--check"]) == 0, "run python tools/make_teacher_guides.py"


def test_every_chapter_has_a_45_minute_plan_with_live_cells_and_a_pause():
    plans = guides.load_plans()
    assert sorted(plans) == CHAPTERS == [f"{i:02d}" for i in range(12)]
    assert guides.validate(plans) == []
    for key in CHAPTERS:
        page = (ROOT / "docs" / "teaching" / f"{NOTEBOOKS[key]}.md").read_text(encoding="utf-8")
        rows = re.findall(r"^\| (\d+)–(\d+) \| (.+?) \| (.+?) \|$", page, flags=re.M)
        assert rows[0][0] == "0" and rows[-1][1] == "45", key
        assert all(a[1] == b[0] for a, b in zip(rows, rows[1:])), f"{key}: the timeline has a gap"
        live = [where for _, _, where, what in rows if what == "run live"]
        assert live and all(w.startswith("Step ") for w in live), key
        src = (ROOT / "notebooks" / f"{NOTEBOOKS[key]}.py").read_text(encoding="utf-8")
        for _, _, where, _ in rows:  # every place named is a heading of the chapter (or its exercise page)
            assert where.startswith("Exercises (") or re.search(rf"^# #+ {re.escape(where)}$", src, re.M), where
        assert "> **Pause and ask:**" in page


def test_the_misconceptions_are_the_exercises_named_slips():
    for key in CHAPTERS:
        plan = guides.load_plans()[key]
        page = (ROOT / "docs" / "teaching" / f"{NOTEBOOKS[key]}.md").read_text(encoding="utf-8")
        section = page.split("## The misconceptions the exercises reveal", 1)[1].split("\n## ", 1)[0]
        for eid in plan["slips"]:
            for slip in EXERCISES[eid].slips:
                assert f"*{slip.name}*: {slip.message}." in section, (eid, slip.name)
        appendix = page.split("## Every named slip of this chapter", 1)[1]
        named = [(ex.id, s.name) for ex in EXERCISES.values() if ex.notebook == key for s in getattr(ex, "slips", ())]
        assert len(re.findall(r"^\| \d\d\.\d+ ", appendix, re.M)) == len(named)


def test_the_plan_check_can_fail():
    plans = copy.deepcopy(guides.load_plans())
    plans["04"]["block"][3]["at"] = "step 42"
    plans["05"]["block"][0]["min"] += 1
    plans["06"]["slips"].append("07.1")
    del plans["11"]
    problems = "\n".join(guides.validate(plans))
    assert "'step 42'" in problems and "05: the blocks last 46 minutes" in problems
    assert "06: slips names '07.1'" in problems and "chapter 11" in problems


def _decks():
    exporter = build_site.deck_exporter()
    for path in build_site.topic_notebooks():
        if path.stem.endswith("_deep_dive"):
            continue
        nb = json.loads(path.read_text(encoding="utf-8"))
        build_site.static_widgets(nb)
        notes = build_site.speaker_notes(path.stem)
        yield path.stem, notes, build_site.deck_html(nb, path.stem, exporter, notes)


def test_each_deck_carries_its_speaker_notes_on_the_slide_of_their_heading():
    seen = 0
    for stem, notes, deck in _decks():
        assert len(notes) >= 6, stem
        body = deck[deck.find('<div class="reveal">'):]
        asides = [m.start() for m in re.finditer(r'<aside class="notes">', body)]
        assert len(asides) == len(notes), stem
        sections = [m.start() for m in re.finditer(r"<section", body)]
        for (heading, text), at in zip(notes, asides):
            slide = body[max(s for s in sections if s < at):at]
            shown = htmllib.unescape(re.sub(r"<[^>]+>", "", slide))
            assert re.sub(r"`", "", heading) in shown, (stem, heading)
            note = htmllib.unescape(re.sub(r"<[^>]+>", "", body[at:body.find("</aside>", at)]))
            assert re.sub(r"\*\*|`", "", text.split("\n")[0])[:40] in note, (stem, heading)
            seen += 1
    assert seen >= 12 * 6


def test_a_note_for_a_heading_the_deck_lacks_is_an_error():
    nb = json.loads((ROOT / "notebooks" / "04_serving_capacity.ipynb").read_text(encoding="utf-8"))
    with pytest.raises(ValueError, match="no slide shows that heading"):
        build_site.deck_html(nb, "04_serving_capacity", None, [("Step 99 · nowhere", "note")])


def test_the_classroom_page_shows_a_report_of_the_committed_class():
    page = (ROOT / "docs" / "teaching" / "classroom.md").read_text(encoding="utf-8")
    assert "8 learner(s) counted, 2 file(s) refused" in page
    assert "`gus_download.json`: damaged: not valid JSON" in page
    assert "`ana_earlier.json`: duplicate" in page and "| 04.1 " in page
    assert "### The handout" in page and "### The answer key" in page
    assert (ROOT / "docs" / "teaching" / "example_class.png").read_bytes()[:4] == b"\x89PNG"
