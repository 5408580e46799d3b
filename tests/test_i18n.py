"""The Chinese edition (issue 46): catalogs current with the English, the Chinese copies in step with
the build, the build itself (code identical, anchors kept, untranslated paragraphs counted) and the
glossary used by every catalog.

What enforces what:
- test_catalogs_are_current: the same function as `tools/translate.py check --current`: every catalog
  holds exactly the English source's paragraphs (a changed English paragraph fails until `extract`
  runs), and every translated entry is not stale (fuzzy) and keeps its inline values and link targets.
  Untranslated paragraphs are allowed (they show in English).
- test_completeness_ratchet: the catalogs listed in COMPLETE pass `tools/translate.py check` (every
  paragraph translated too), and every catalog that is complete is listed (so the list only grows).
- test_chinese_copies_match_the_build: zh/ equals what `tools/translate.py build` writes.
- test_glossary_*: the glossary's strict terms (GPU memory -> 显存) are used by every translation.
"""
from __future__ import annotations

import copy
import filecmp
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import translate  # noqa: E402
from memlib.learn.i18n import Entry  # noqa: E402

# Catalogs whose every paragraph is translated and checked (tools/translate.py check passes on them).
# Add a catalog here when its translation is finished: the test then keeps it complete.
COMPLETE: set[str] = {
    'i18n/zh/book/index.po',
    'i18n/zh/docs/cheatsheet.po',
    'i18n/zh/exercises/00_memory_anatomy_exercises.po',
    'i18n/zh/exercises/01_65b_on_4x_v100_exercises.po',
    'i18n/zh/exercises/02_single_gpu_limits_exercises.po',
    'i18n/zh/exercises/03_when_the_model_does_not_fit_exercises.po',
    'i18n/zh/exercises/04_serving_capacity_exercises.po',
    'i18n/zh/exercises/05_moe_memory_exercises.po',
    'i18n/zh/exercises/06_long_context_exercises.po',
    'i18n/zh/exercises/07_time_and_cost_exercises.po',
    'i18n/zh/exercises/08_rlhf_memory_exercises.po',
    'i18n/zh/exercises/09_quantization_exercises.po',
    'i18n/zh/exercises/10_communication_exercises.po',
    'i18n/zh/exercises/11_debugging_oom_exercises.po',
    'i18n/zh/notebooks/00_memory_anatomy.po',
    'i18n/zh/notebooks/00_memory_anatomy_deep_dive.po',
    'i18n/zh/notebooks/01_65b_on_4x_v100.po',
    'i18n/zh/notebooks/01_65b_on_4x_v100_deep_dive.po',
    'i18n/zh/notebooks/02_single_gpu_limits.po',
    'i18n/zh/notebooks/02_single_gpu_limits_deep_dive.po',
    'i18n/zh/notebooks/03_when_the_model_does_not_fit.po',
    'i18n/zh/notebooks/03_when_the_model_does_not_fit_deep_dive.po',
    'i18n/zh/notebooks/04_serving_capacity.po',
    'i18n/zh/notebooks/04_serving_capacity_deep_dive.po',
    'i18n/zh/notebooks/05_moe_memory.po',
    'i18n/zh/notebooks/05_moe_memory_deep_dive.po',
    'i18n/zh/notebooks/06_long_context.po',
    'i18n/zh/notebooks/06_long_context_deep_dive.po',
    'i18n/zh/notebooks/07_time_and_cost.po',
    'i18n/zh/notebooks/07_time_and_cost_deep_dive.po',
    'i18n/zh/notebooks/08_rlhf_memory.po',
    'i18n/zh/notebooks/08_rlhf_memory_deep_dive.po',
    'i18n/zh/notebooks/09_quantization.po',
    'i18n/zh/notebooks/09_quantization_deep_dive.po',
    'i18n/zh/notebooks/10_communication.po',
    'i18n/zh/notebooks/10_communication_deep_dive.po',
    'i18n/zh/notebooks/11_debugging_oom.po',
    'i18n/zh/notebooks/11_debugging_oom_deep_dive.po',
    'i18n/zh/notebooks/calculator.po',
    'i18n/zh/notebooks/index.po',
    'i18n/zh/notebooks/mock_interview.po',
}


@pytest.mark.parametrize("source", translate.sources(), ids=str)
def test_catalogs_are_current(source):
    assert translate.problems(source, complete=False) == []


def test_completeness_ratchet():
    complete = set(translate.complete_catalogs())
    assert COMPLETE <= complete, f"no longer complete: {sorted(COMPLETE - complete)}"
    assert complete <= COMPLETE, f"complete now, add to COMPLETE in tests/test_i18n.py: {sorted(complete - COMPLETE)}"


def test_stale_and_broken_translations_are_reported():
    ok = Entry("The peak is {eval}`peak`.", "峰值是 {eval}`peak`。")
    assert translate.entry_problem(ok) is None
    assert translate.entry_problem(Entry("A [link](x.ipynb).", "一个链接。")) == "inline values or link targets differ"
    assert translate.entry_problem(Entry("The peak is {eval}`peak`.", "峰值。")) == "inline values or link targets differ"
    assert translate.entry_problem(Entry("Text.", "文字。", flags={"fuzzy"})) == "stale (the English changed)"
    assert translate.entry_problem(Entry("Text.")) == "untranslated"
    assert translate.entry_problem(Entry("Text."), complete=False) is None


def test_chinese_copies_match_the_build(tmp_path):
    translate.build(tmp_path)
    made = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    committed = sorted(p.relative_to(translate.ZH) for p in translate.ZH.rglob("*")
                       if p.is_file() and p.suffix in (".ipynb", ".md") and "validation" not in p.parts)
    assert made == committed, "run: python tools/translate.py build"
    stale = [str(p) for p in made if not filecmp.cmp(tmp_path / p, translate.ZH / p, shallow=False)]
    assert stale == [], f"zh/ differs from the build (run: python tools/translate.py build): {stale}"


def test_chinese_copies_keep_the_code():
    for source in translate.sources():
        if source.suffix != ".ipynb":
            continue
        en = json.loads((ROOT / source).read_text(encoding="utf-8"))
        zh = json.loads((translate.ZH / source).read_text(encoding="utf-8"))
        assert [c["cell_type"] for c in en["cells"]] == [c["cell_type"] for c in zh["cells"]], source
        for a, b in zip(en["cells"], zh["cells"]):
            if a["cell_type"] == "code":
                assert a == b, f"{source}: a code cell differs"


FAKE = {
    "cells": [
        {"cell_type": "markdown", "id": "m1", "metadata": {},
         "source": ["# The title\n", "\n", "See [the details](#the-details), the [next chapter](01_65b_on_4x_v100.ipynb),\n",
                    "the [API](../docs/usage.md#the-public-api) and [PyTorch](https://pytorch.org/docs).\n", "\n",
                    "## The details\n", "\n", "Nobody translated this paragraph yet."]},
        {"cell_type": "code", "id": "c1", "execution_count": 1,
         "metadata": {"tags": ["hide-input"], "user_expressions": [{"expression": "peak", "result": {
             "status": "ok", "data": {"text/plain": "'80 GB'"}}}]},
         "source": ["peak = '80 GB'\n", "print(peak)"],
         "outputs": [{"name": "stdout", "output_type": "stream", "text": ["80 GB\n"]}]},
        {"cell_type": "markdown", "id": "m2", "metadata": {}, "source": "The peak is {eval}`peak`."},
    ],
    "metadata": {"jupytext": {"formats": "ipynb,py:percent"}, "kernelspec": {"name": "python3"}},
    "nbformat": 4, "nbformat_minor": 5,
}
FAKE_CATALOG = {
    "# The title": "# 标题",
    "See [the details](#the-details), the [next chapter](01_65b_on_4x_v100.ipynb),\n"
    "the [API](../docs/usage.md#the-public-api) and [PyTorch](https://pytorch.org/docs).":
        "见[细节](#the-details)、[下一章](01_65b_on_4x_v100.ipynb)、\n"
        "[API](../docs/usage.md#the-public-api)和 [PyTorch](https://pytorch.org/docs)。",
    "## The details": "## 细节",
    "The peak is {eval}`peak`.": "峰值是 {eval}`peak`。",
}


def test_build_translates_a_notebook():
    b = translate.Builder()
    nb = b.notebook(copy.deepcopy(FAKE), Path("notebooks/99_fake.ipynb"), FAKE_CATALOG)
    assert nb["cells"][1] == FAKE["cells"][1]                      # code, outputs, inline values identical
    assert "jupytext" not in nb["metadata"] and nb["metadata"]["memlib"]["lang"] == "zh"
    md = "".join(nb["cells"][0]["source"])
    blocks = md.split("\n\n")
    assert blocks[0] == '<a id="the-title"></a>' and blocks[1] == "# 标题"
    assert '<a id="the-details"></a>\n\n## 细节' in md            # the English anchor kept before the heading
    assert "[细节](#细节)" in md                                   # the link follows the heading's new slug
    assert "[下一章](01_65b_on_4x_v100.ipynb)" in md               # to the Chinese copy of the next chapter
    assert "[API](../../docs/usage.md#the-public-api)" in md       # no Chinese copy: the English file
    assert "(https://pytorch.org/docs)" in md
    assert blocks[-1] == "Nobody translated this paragraph yet."   # falls back to English
    assert nb["cells"][2]["source"] == "峰值是 {eval}`peak`。"
    assert b.counts["notebooks/99_fake.ipynb"] == (4, 5)           # 1 of 5 paragraphs left in English
    # the book's staged copy: the layout is the repository's, links to other files stay as they are
    staged = translate.Builder(outside="").notebook(copy.deepcopy(FAKE), Path("notebooks/99_fake.ipynb"), FAKE_CATALOG)
    assert "[API](../docs/usage.md#the-public-api)" in "".join(staged["cells"][0]["source"])


def test_language_line_points_back_to_the_english():
    b = translate.Builder()
    text, _, _ = b.text("**中文版 →** [目录](../zh/notebooks/index.ipynb)（中文）", {}, Path("notebooks/index.ipynb"))
    assert text == "**English →** [English edition](../../notebooks/index.ipynb)"
    assert translate.Builder(outside="").text("**中文版 →** [目录](../zh/notebooks/index.ipynb)", {},
                                              Path("notebooks/index.ipynb"))[0] == ""


def test_slugs_are_mysts():
    # MyST's heading anchors (mdit_py_plugins.anchors.index.slugify): lower case, spaces to '-', punctuation dropped
    assert translate.slugify("2. The 30-second answer · 30 秒回答") == "2-the-30-second-answer--30-秒回答"
    assert translate.slugify("What the interviewer is probing?") == "what-the-interviewer-is-probing"


def test_glossary_catches_gpu_memory_as_host_memory():
    bad = Entry("The weights fill the GPU memory.", "权重占满了内存。")
    good = Entry("The weights fill the GPU memory.", "权重占满了显存。")
    found = translate.glossary_problems([bad])
    assert found and found[0].startswith("STRICT 'GPU memory'")
    assert translate.glossary_problems([good]) == []
    # a softer term: reported, not strict
    soft = translate.glossary_problems([Entry("The KV cache grows.", "缓存变大。")])
    assert soft and not soft[0].startswith("STRICT")


def test_catalogs_use_the_glossarys_strict_terms():
    strict = {path: [p for p in found if p.startswith("STRICT")] for path, found in translate.glossary_report().items()}
    assert {k: v for k, v in strict.items() if v} == {}


# --- the grader in Chinese (memlib.learn.i18n's runtime catalog) -------------------------------------------

def test_runtime_catalog_is_current():
    """The grader's catalog holds exactly the registry's texts and the strings marked tr()/trf(), and every
    translation keeps its fields ({0}, {name}): the same check as `tools/translate.py check --current`."""
    assert translate.runtime_problems(complete=False) == []


def test_runtime_catalog_ships_in_the_wheel():
    from importlib import resources

    assert resources.files("memlib.learn").joinpath("locale", "zh", "LC_MESSAGES", "memlib.po").is_file()
    assert '"memlib.learn" = ["locale/*/LC_MESSAGES/*.po"]' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def _zh(english: str) -> str:
    """The catalog's Chinese for an English string (read from the .po itself, not from the code under test)."""
    from memlib.learn.i18n import read_po

    found = [e.msgstr for e in read_po(translate.RUNTIME)[1] if e.msgid == english and e.translated]
    assert found, f"not translated in the catalog: {english!r}"
    return found[0]


def test_grader_speaks_the_chosen_language(capsys, monkeypatch, tmp_path):
    import memlib.learn
    from memlib.learn.exercises import EXERCISES
    from memlib.learn.grading import check, grade, hint, show
    from memlib.learn.i18n import get_language, set_language

    monkeypatch.chdir(tmp_path)  # the learner's progress file goes here
    monkeypatch.delenv("MEMLIB_LANG", raising=False)
    ex = EXERCISES["00.1"]
    slip = ex.slips[0]
    wrong = f"{slip.value() / 1e9:.2f} GB"
    try:
        assert memlib.learn.set_language is set_language and get_language() == "en"
        assert slip.message in grade("00.1", wrong).message
        set_language("zh")
        fb = grade("00.1", wrong)
        assert _zh(slip.message) in fb.message and slip.message not in fb.message
        assert fb.message.startswith(_zh("looks like a known slip: {text}.").split("{text}")[0])
        show("00.1")
        out = capsys.readouterr().out
        assert _zh(ex.prompt) in out and _zh(ex.title) in out
        hint("00.1")
        assert _zh(ex.hints[0]) in capsys.readouterr().out
        check("00.1", wrong, lang="en")  # one call in English
        assert slip.message in capsys.readouterr().out
        set_language(None)
        monkeypatch.setenv("MEMLIB_LANG", "zh")
        assert get_language() == "zh" and _zh(slip.message) in grade("00.1", wrong).message
        with pytest.raises(ValueError, match="language must be one of en, zh"):
            set_language("fr")
    finally:
        set_language(None)


def test_chinese_copies_choose_chinese_by_their_folder(monkeypatch, tmp_path):
    from memlib.learn.i18n import get_language

    monkeypatch.delenv("MEMLIB_LANG", raising=False)
    (tmp_path / "zh" / "exercises").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "zh" / "exercises")
    assert get_language() == "zh"
    monkeypatch.chdir(tmp_path)
    assert get_language() == "en"


def test_number_templates_carry_memlibs_numbers():
    from memlib.learn.i18n import _fill, number_template

    template, numbers = number_template("LLaMA-7B has 6,738,415,616 parameters: **13.48 GB** (00.1)")
    assert template == "LLaMA-7B has {0} parameters: **{1} GB** ({2})"   # names keep their digits
    assert numbers == ["6,738,415,616", "13.48", "00.1"]
    assert _fill("LLaMA-7B 有 {0} 个参数：**{1} GB**（{2}）", numbers) == "LLaMA-7B 有 6,738,415,616 个参数：**13.48 GB**（00.1）"
    assert _fill("{a} 和 {b}", {"a": "x"}) == "x 和 {b}"   # an unknown field stays as written


def test_every_exercise_renders_in_chinese(monkeypatch, tmp_path):
    """Every exercise's prompt, hints and worked answer go through the Chinese catalog without an error."""
    from memlib.learn.exercises import EXERCISES
    from memlib.learn.grading import _rubric_markdown, grade
    from memlib.learn.i18n import language, tr
    from memlib.learn.exercises.kinds import SelfAssessed

    monkeypatch.chdir(tmp_path)
    with language("zh"):
        for ex in EXERCISES.values():
            assert ex.render_prompt() and all(tr(h) for h in ex.hints) and tr(ex.worked())
            if isinstance(ex, SelfAssessed):
                assert _rubric_markdown(ex)
            assert grade(ex.id, None).status == "not answered"


def test_every_exercise_question_is_translated():
    """Ratchet: what show() prints of every exercise (title, question, options, reasons), its hints and its named
    slips' messages have a Chinese translation, so a new or changed exercise needs its Chinese before it lands (tools/translate.py todo --ref NN.)."""
    from memlib.learn.exercises import EXERCISES
    from memlib.learn.i18n import read_po

    done = {e.msgid for e in read_po(translate.RUNTIME)[1] if e.translated}
    missing = [(ex.id, text[:50]) for ex in EXERCISES.values()
               for text in (ex.title, ex.prompt, *ex.hints,
                            *(o.text for o in getattr(ex, "options", ()) + getattr(ex, "reasons", ())),
                            *(slip.message for slip in getattr(ex, "slips", ()) + getattr(ex, "accepts", ())),
                            getattr(ex, "close_advice", ""))
               if text not in done and re.search(r"[A-Za-z]{2,}", text)]  # a bare formula needs none
    assert missing == [], f"{len(missing)} exercise texts without Chinese, e.g. {missing[:5]}"


def test_runtime_catalog_is_complete():
    """The grader's catalog is fully translated (`tools/translate.py check` on it): a new or changed exercise text,
    slip, feedback or worked answer fails here until its Chinese is written (tools/translate.py todo --ref NN.)."""
    assert translate.runtime_problems(complete=True) == []
