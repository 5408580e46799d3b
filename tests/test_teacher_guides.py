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


# --- no typed figure: every quantity in the plans is a placeholder that memlib fills --------------------------------
# What a plan may still spell in digits: names, not quantities. Kept short on purpose; a new entry needs a reason.
ALLOWED = [
    r"\b4 x V100 32GB\b", r"\b2 x A100 80GB\b",  # the questions' setups, as chapters 01 and 04 ask them
    r"\b(?:LLaMA|Llama|Vicuna)(?:-\d+)?-\d+B\b", r"\b(?:7|65|70)B\b",   # model names: LLaMA-7B, Llama-3-70B, "a 7B"
    r"\b(?:[AV]100 (?:80|32)GB|RTX 4090)\b",                          # GPU names
    r"\b(?:8|128)k\b",                                                # the context lengths' names (8k chat, 128k)
    r"\b10 GbE\b",                                                    # a link's name
]
UNITS = (r"(?:[KMGT]i?B|bytes?|bits?|[KMGT]?FLOPs?(?:/s)?|tokens?|GPUs?|cards?|experts?|heads?|layers?|parameters?"
         r"|params|chats?|ms|µs|s|h|hours?|days?|min|x|×|%|[KMBT]|Gb/s|GbE)")
NUMBER = r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?"
TYPED = [re.compile(rf"{NUMBER}\s*{UNITS}(?![\w/])"),           # 2.7 GB, 1,000 GPUs, 16x, 400 TFLOP/s, 40%
         re.compile(r"(?<![\w.])\d+(?:\.\d+)?e[+-]?\d+"),         # 8.4e22
         re.compile(r"(?<![\w.])\d\.\d+(?![\w.])"),               # 0.9 (an exercise id is NN.N)
         re.compile(r"(?<![\w.])\d+\s*/\s*\d+")]                  # 32/128


def typed_quantities(text: str) -> list[str]:
    """The figures typed by hand in a plan's text: placeholders and ALLOWED names removed first."""
    text = guides.PLACEHOLDER.sub("", text)
    for pattern in ALLOWED:
        text = re.sub(pattern, "", text)
    return [m.group(0) for rx in TYPED for m in rx.finditer(text)]


def test_the_typed_figure_check_can_fail():
    typed = ["Guesses of 14 GB (weights only)", "6 x 7e9 x 2e12 = 8.4e22 FLOPs", "over 1,000 x ~400 TFLOP/s",
             "about 2.7 GB", "the default (0.9)", "Do 4 + 32/128 on the board", "grows 16x", "by 8 GPUs",
             "an 80GB card holds 80 GiB", "(671B, 37B)", "2T tokens", "50% of the peak", "it takes 62 ms"]
    for text in typed:
        assert typed_quantities(text), text
    names = ["How many 8k chats can Llama-3-70B serve on 2 x A100 80GB?", "Vicuna-65B on four V100s",
             "Exercises 00.4, 00.7 and 00.10", "Clear Steps 2 and 5", "memlib quiz --topic 04 --seed <s> --n 5",
             "an RTX 4090, an L40S, an A100 80GB", "AWQ's g128 in int4 and bf16", "6ND, 6N = 2N + 4N",
             "Llama-3-8B's gradients over {node} GPUs: {sent}, {ring_factor}x", "Is 10 GbE usable?"]
    for text in names:
        assert typed_quantities(text) == [], text


def test_the_plans_type_no_quantity():
    raw = guides.load_plans(filled=False)
    found = [(key, field, q) for key, plan in raw.items() for field, text in guides._texts(plan)
             for q in typed_quantities(text)]
    assert found == [], "type a placeholder (tools/make_teacher_guides.py FIGURES), not a figure: " + repr(found)


def test_every_placeholder_is_defined_and_every_figure_used():
    raw = guides.load_plans(filled=False)
    assert guides.figure_problems(raw) == []
    broken = copy.deepcopy(raw)
    broken["04"]["block"][0]["listen"] += " {no_such_figure}"
    broken["10"]["prepare"] = "no link speeds"   # drops {ib}
    problems = "\n".join(guides.figure_problems(broken))
    assert "04: block at 'section 1' listen uses {no_such_figure}" in problems
    assert "10: figure 'ib' is used by no plan text" in problems


def test_the_figures_are_the_chapters_own_and_right():
    """A stored figure is the chapter's inline value; a computed one checked against an independent derivation."""
    for key, figures in guides.FIGURES.items():
        for name, spec in figures.items():
            if isinstance(spec, str):
                assert guides.figure(key, name) == guides.stored_values(NOTEBOOKS[key])[spec], (key, name)
    # Llama-3-70B's config.json (80 layers, 8 KV heads, head_dim 8192 / 64 = 128), bf16 K and V:
    # 2 x 80 x 8 x 128 x 2 B = 327,680 B per token; x 8,192 tokens = 2,684,354,560 B = 2.68 GB
    assert guides.figure("04", "kv_per_token") == "327,680" and guides.figure("04", "kv_per_chat") == "2.68 GB"
    assert (guides.figure("04", "q_heads"), guides.figure("04", "kv_heads"), guides.figure("04", "gqa_cut")) == \
        ("64", "8", "8")
    # a ring all-reduce over 8 GPUs: a reduce-scatter and an all-gather, each 7/8 of the tensor: 2 x 7/8 = 1.75
    assert guides.figure("10", "ring_factor") == "1.75" and guides.figure("10", "node") == "8"
    # chapter 07's prose: "on 256 H100s" of Llama 2's "2.0T tokens" (Touvron et al. 2023, Table 1)
    assert guides.figure("07", "gpus") == "256" and guides.figure("07", "tokens") == "2T"
    # 128k / 8k = 16x the tokens; attention per sequence grows with s^2: 16^2 = 256
    assert guides.figure("06", "seq_ratio") == "16" and guides.figure("06", "attn_ratio") == "256"
    # mixed-precision AdamW, ZeRO paper Sec. 3.1: 2 + 2 + 12 = 16 bytes per parameter; PyTorch AMP 4 + 4 + 8
    assert guides.figure("00", "zero_terms") == "2 + 2 + 12" and guides.figure("00", "amp_terms") == "4 + 4 + 8"
    assert guides.figure("05", "amp_bpp") == "16" and guides.figure("00", "bf16_bpp") == "2"
    # pytorch/pytorch#152135's message: "Tried to allocate 250.00 MiB" = 0.244 GiB; 104.75 MiB free = 0.102 GiB
    assert (guides.figure("11", "oom_tried"), guides.figure("11", "oom_free"),
            guides.figure("11", "oom_unallocated")) == ("0.24 GiB", "0.10 GiB", "3.87 GiB")


def test_the_pages_carry_the_figures_and_no_placeholder():
    for key in CHAPTERS:
        page = (ROOT / "docs" / "teaching" / f"{NOTEBOOKS[key]}.md").read_text(encoding="utf-8")
        assert set(guides.PLACEHOLDER.findall(page)) <= {"doc"}, key   # {doc}`...` is MyST's role
        for name in guides.FIGURES.get(key, {}):
            assert guides.figure(key, name) in page, (key, name)
    notes = "\n".join(text for _, text in guides.deck_notes("04_serving_capacity"))
    assert guides.figure("04", "kv_per_chat") in notes and "{kv_per_chat}" not in notes


def test_the_pages_on_disk_are_what_the_generator_writes(monkeypatch, capsys):
    for path, text in guides.render().items():
        assert path.read_text(encoding="utf-8") == text, path
    stale = guides.render()
    page = guides.OUT / "04_serving_capacity.md"
    stale[page] = stale[page].replace(guides.figure("04", "kv_per_chat"), "2.7 GB")
    monkeypatch.setattr(guides, "render", lambda: stale)
    assert guides.main(["--check"]) == 1
    assert "docs/teaching/04_serving_capacity.md" in capsys.readouterr().out
