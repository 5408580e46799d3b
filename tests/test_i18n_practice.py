"""The Chinese edition of the generated texts (issue 46): practice questions, the answer parser's messages and the
mock-interview scenarios are English templates (memlib.learn.i18n.msg / trf) whose translations live in the runtime
catalog; in Chinese they read in Chinese with the same drawn setup and the same figures."""

import pickle
import re

import pytest

from memlib.learn import grading, interview, scenarios
from memlib.learn.exercises import answers, practice
from memlib.learn.exercises.kinds import render
from memlib.learn.i18n import Msg, language, msg, runtime_catalog, tr

CJK = re.compile(r"[\u4e00-\u9fff]")
FIELD = re.compile(r"\{\w+\}")
# four or more English words in a row, outside code spans: a sentence left in English
ENGLISH_RUN = re.compile(r"[A-Za-z]{2,}(?:[ ,;:'-]+[A-Za-z]{2,}){3,}")
SEEDS = range(4)


def _msgs(text):
    """Every template a text is made of: the Msg itself and the Msg fields inside it."""
    if isinstance(text, Msg):
        yield text
        for value in text.fields.values():
            yield from _msgs(value)


def _questions():
    for topic, kinds in practice.KINDS.items():
        for kind in range(len(kinds)):
            for seed in SEEDS:
                yield practice.build(topic, seed, kind)


def _prose(text: str) -> str:
    """The text without code spans, bold model names or other identifiers a translation keeps in English."""
    text = re.sub(r"`[^`]*`", "", text)
    return re.sub(r"\b[\w.]+\([^)]*\)(?:\.\w+)?", "", text)  # get_model('x').num_params, estimate_inference(...)


def test_msg_is_its_english_text_and_translates_when_shown():
    m = msg("Weights of {model} in {fmt}", model="llama-2-7b", fmt="bf16")
    assert m == "Weights of llama-2-7b in bf16" and isinstance(m, str)
    assert tr(m, "en") == "Weights of llama-2-7b in bf16"
    assert tr(m, "zh") == "llama-2-7b 在 bf16 下的权重"  # the catalog's template, filled with the same fields
    nested = msg("How many GB of weights does **{model}** take {where} as a **{fmt}** checkpoint (scales and "
                 "zero-points included; embeddings, head and norms stay 16-bit, as memlib.estimate_inference lays "
                 "them out)?", model="m", where=msg("in total"), fmt="nf4")
    assert "in total" in nested and "总共" in tr(nested, "zh") and "in total" not in tr(nested, "zh")
    assert pickle.loads(pickle.dumps(m)) == m and pickle.loads(pickle.dumps(m)).template == m.template
    unknown = msg("a template in no catalog: {x}", x=3)
    assert tr(unknown, "zh") == "a template in no catalog: 3"  # untranslated: the English, never a broken text


def test_every_practice_template_is_translated():
    """Titles, prompts, worked answers, drawn-setup hints and slips of every kind (4 seeds each) are catalog templates with a
    Chinese translation keeping every field; the English fills every field."""
    cat = runtime_catalog("zh")
    missing, unfilled, n = set(), [], 0
    for ex in _questions():
        for text in (ex.title, ex.prompt, ex.worked(), *ex.hints, *(s.message for s in ex.slips)):
            if FIELD.search(text):
                unfilled.append((ex.id, text[:60]))
            for m in _msgs(text):
                n += 1
                if not re.search("[A-Za-z]", FIELD.sub("", m.template)):
                    continue  # "{p0} + {p1}": fields only, nothing to translate
                if m.template not in cat:
                    missing.add(m.template[:70])
                elif sorted(FIELD.findall(cat[m.template])) != sorted(FIELD.findall(m.template)):
                    missing.add("fields differ: " + m.template[:60])
        assert isinstance(ex.title, Msg) and isinstance(ex.prompt, Msg) and isinstance(ex.worked(), Msg), ex.id
    assert n > 300 and not missing and not unfilled, (sorted(missing)[:5], unfilled[:5])


@pytest.mark.parametrize("topic", sorted(practice.KINDS))
def test_practice_questions_read_in_chinese(topic):
    for seed in SEEDS:
        en = grading.practice(topic, seed, lang="en")
        zh = grading.practice(topic, seed, lang="zh")
        assert en.id == zh.id and not CJK.search(en.title + en.prompt) and ENGLISH_RUN.findall(_prose(en.prompt))
        for text in (zh.title, zh.prompt):
            assert CJK.search(text), (zh.id, text)
            left = ENGLISH_RUN.findall(_prose(text))
            assert not left, (zh.id, left, text)
        with language("zh"):
            worked = render(practice.from_id(zh.id).worked)
        assert not ENGLISH_RUN.findall(_prose(worked)) and not re.search(r"\b(reference|reward|layers)\b",
                                                                          worked), worked
        # the same drawn setup and the same figures: every field of the English (model, GPU, counts) is in the Chinese
        ex = practice.from_id(zh.id)
        for text, shown in ((ex.title, zh.title), (ex.prompt, zh.prompt)):
            for value in text.fields.values():
                assert (tr(value, "zh") if isinstance(value, Msg) else value) in shown, (zh.id, value, shown)


def test_grading_a_practice_answer_in_chinese():
    q = practice.build("00", 3, 2)  # float formats: the inverted ratio is a named slip whose text names the formats
    a, b = q.title.fields["a"], q.title.fields["b"]
    with language("zh"):
        fb = grading.grade(q.id, f"{1 / q.expected():.6g}x")
        assert fb.status == "incorrect" and CJK.search(fb.message) and f"{b} 的值除以 {a} 的值" in fb.message
        fb = grading.grade(q.id, "137,4 x")
        assert fb.status == "malformed" and "小数请用小数点" in fb.message, fb.message
        assert CJK.search(grading.grade(q.id, "3 parsecs").message)
    with language("en"):
        assert f"that is {b}'s over {a}'s" in grading.grade(q.id, f"{1 / q.expected():.6g}x").message


@pytest.mark.parametrize("answer, unit", [("137,4 GB", "GB"), ("5 XB", "GB"), ("-5 GB", "GB"), ("5 GB", "params"),
                                          ("5 zz", "s"), ("5 days", "GPU-hours"), ("5 flop/s", "FLOPs"),
                                          ("1 2", "GB"), ("5 GB", "%"), (object(), "GB")])
def test_parser_messages_in_chinese(answer, unit):
    with pytest.raises(answers.Malformed) as en:
        answers.parse_quantity(answer, unit)
    with language("zh"), pytest.raises(answers.Malformed) as zh:
        answers.parse_quantity(answer, unit)
    assert not CJK.search(str(en.value)) and CJK.search(str(zh.value)), (str(en.value), str(zh.value))
    assert not ENGLISH_RUN.findall(_prose(str(zh.value))), str(zh.value)


def test_choice_and_marks_messages_in_chinese():
    with language("zh"):
        for call in (lambda: answers.parse_choice("z", ("a", "b"), ()), lambda: answers.parse_marks("yy", 3),
                     lambda: answers.parse_selection("q", ("a", "b"))):
            with pytest.raises(answers.Malformed) as e:
                call()
            assert CJK.search(str(e.value)), str(e.value)


@pytest.mark.parametrize("topic", sorted(scenarios.BUILDERS))
def test_scenarios_read_in_chinese(topic):
    cat = runtime_catalog("zh")
    for seed in SEEDS:
        s = scenarios.build(topic, seed)
        texts = [s.title, s.prompt, *s.rubric(), s.model_answer()]
        assert all(isinstance(t, Msg) for t in texts) and not any(FIELD.search(t) for t in texts)
        for t in texts:
            assert all(m.template in cat for m in _msgs(t)), t[:60]
            with language("zh"):
                zh = tr(t)
            assert CJK.search(zh) and not ENGLISH_RUN.findall(_prose(zh)), (s.id, zh)
        q = interview.question(s.id)
        with language("zh"):
            shown = q._repr_markdown_() + interview.assess(q, "一二三四五六七八九十 " * 3)
        assert s.title not in shown and tr(s.title, "zh") in shown


def test_tables_under_prompts_in_chinese():
    """The rows under a prompt (kinds.render_table): each cell by the catalog in Chinese, the English table as is."""
    from memlib.learn.exercises import EXERCISES
    from memlib.learn.exercises.kinds import render_table, table_cells

    tabled = [ex for ex in EXERCISES.values() if getattr(ex, "table", None) is not None]
    assert len(tabled) >= 3
    cat = runtime_catalog("zh")
    for ex in tabled:
        table = ex.table()
        with language("en"):
            assert render_table(table) == table and ex.render_prompt().endswith(table)
        with language("zh"):
            shown = ex.render_prompt()
        rows = [line for line in shown.split("\n") if line.startswith("|")]
        assert len(rows) == len(table.strip().split("\n")), ex.id  # every row kept, no row added
        for cell in table_cells(table):
            assert cell in cat, (ex.id, cell)
            if re.search(r"[a-z]{3,} [a-z]{3,}", cell):  # a phrase, not a code name (optimizer.step(), max_num_seqs)
                assert f"| {cell} |" not in shown and cat[cell] in shown, (ex.id, cell)
        # the figures are the same: every number of the English table is in the Chinese one
        assert re.findall(r"\d[\d,.]*\s?Gi?B", table) == re.findall(r"\d[\d,.]*\s?Gi?B", "\n".join(rows)), ex.id
