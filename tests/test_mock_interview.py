"""The mock interview (memlib.learn.interview) and the practice kinds it drills (memlib.learn.exercises.practice):
fresh questions rather than the exercise notebooks' ten, follow-ups on the point the learner missed, and practice
questions whose prompts, hints and worked answers agree with the expected value (hand derivations below)."""

from __future__ import annotations

import re

import pytest

from memlib.learn import interview, scenarios
from memlib.learn.exercises import get_exercise
from memlib.learn.exercises import practice as generator
from memlib.learn.grading import grade


class _Pick:
    """A stand-in for random.Random that returns chosen values, so a kind builds a known setup."""

    def __init__(self, *values):
        self.values = list(values)

    def choice(self, options):
        value = self.values.pop(0)
        assert value in list(options), (value, options)
        return value

    def randint(self, a, b):
        return self.values.pop(0)


def test_draws_are_mostly_fresh_scenarios_not_the_ten_open_exercises():
    qs = [interview.draw(seed=s) for s in range(300)]
    prompts = {q.prompt for q in qs}
    assert len(prompts) >= 60  # the old draw gave 10 distinct questions in 200 seeds
    share = sum(q.id.startswith("m") for q in qs) / len(qs)
    assert 0.6 < share < 0.9  # SCENARIO_SHARE = 0.75
    assert {q.topic for q in qs if q.id.startswith("m")} == set(scenarios.BUILDERS)


@pytest.mark.parametrize("topic", sorted(scenarios.BUILDERS))
def test_every_scenario_renders_and_every_point_has_a_buildable_drill(topic):
    for seed in range(12):
        s = scenarios.build(topic, seed)
        rubric, answer = s.rubric(), s.model_answer()
        assert len(rubric) == len(s.drills) >= 3 and len(answer.split()) > 25
        for drill_topic, kind in s.drills:
            q = generator.build(drill_topic, seed, kind)
            assert q.id == f"p{drill_topic}k{kind}.{seed}" and get_exercise(q.id).title == q.title


def _scenario_question():
    return next(q for q in (interview.draw(seed=s) for s in range(50)) if q.id.startswith("m"))


def test_follow_up_drills_the_first_missed_point():
    q = _scenario_question()
    s = interview._scenario(q)
    n = len(s.points)
    marks = [True] * n
    marks[1] = False  # point 2 missed
    assert "on point 2" in interview.mark(q, marks)
    f = interview.follow_up(q)
    topic, kind = s.drills[1]
    assert f.id == f"p{topic}k{kind}.{q.seed % 1_000_000}" and "point 2" in f.title
    # every point covered: the interviewer pushes on the last one
    g = interview.follow_up(q, [True] * n)
    topic, kind = s.drills[-1]
    assert g.id == f"p{topic}k{kind}.{q.seed % 1_000_000}" and "covered every point" in g.title
    assert grade(g.id, "1").status in ("correct", "incorrect", "malformed")


def test_kind_ids_are_checked():
    assert generator.from_id("p05k99.1") is None
    with pytest.raises(ValueError):
        generator.build("05", 1, kind=len(generator.KINDS["05"]))


def test_topic05_practice_is_about_mixtures_of_experts():
    dense = [q.title for q in (generator.build("05", s) for s in range(400))
             if not any(m in q.title for m in generator.MOE)]
    assert dense == []


def test_tokens_per_expert_hand_derivation():
    # DeepSeek-V3: top-8 of 256 routed experts; 512 sequences decode one token each: 512 x 8 / 256 = 16 tokens
    q = generator._expert_tokens("p05.x", _Pick("deepseek-v3", 512))
    assert q.expected() == 16
    assert grade_value(q, 16) and not grade_value(q, 512 / 256)  # the "no top-k" slip


def test_mla_cache_is_replicated_under_tp_hand_derivation():
    # DeepSeek-V3: (kv_lora_rank 512 + rope 64) x 2 bytes x 61 layers = 70,272 bytes on every GPU, whatever tp
    q = generator._mla_tp("p05.x", _Pick(8, "deepseek-v3"))
    assert q.expected() == (512 + 64) * 2 * 61 == 70_272


def test_windowed_kv_practice_states_the_window_and_its_worked_sum_is_true():
    # Gemma-3-27B: 62 layers = 10 full + 52 sliding (window 1,024), 16 KV heads x 128 dims:
    # 2 x 16 x 128 x 2 B = 8,192 B per layer per token, /4 over tp 4 = 2,048 B.
    # 8,192-token sequence: 10 x 8,192 x 2,048 + 52 x 1,024 x 2,048 = 167,772,160 + 109,051,904 = 276,824,064 B
    q = generator._kv_cache("p06.x", _Pick("gemma-3-27b", 1, 8192, 4), generator.LONG, (2, 4, 8))
    assert q.expected() == 276_824_064
    assert "52 layers with a sliding window of 1,024 tokens" in q.prompt
    assert "min(context, window)" in q.hints[1]
    # the worked answer's products add up to the expected value (the old one printed a false equation)
    terms = re.findall(r"(\d+) \w+ attention layers x ([\d,]+) tokens x ([\d,]+) B", q.worked())
    total = sum(int(n) * int(t.replace(",", "")) * int(b.replace(",", "")) for n, t, b in terms)
    assert total == q.expected()
    assert grade_value(q, 1_107_296_256 / 4 / 1e9 * 1e9) and not grade_value(q, 8192 * 62 * 2048)  # no-window slip


def test_rollout_kv_shares_the_prompt_hand_derivation():
    # Llama-3-8B: 2 x 32 layers x 8 KV heads x 128 x 2 B = 131,072 B per token. 32 prompts of 1,024 tokens, 4
    # samples of 2,048: 32 x (1,024 + 4 x 2,048) x 131,072 = 38,654,705,664 B (51,539,607,552 without sharing)
    q = generator._rollout_kv("p08.x", _Pick("llama-3-8b", 32, 4, 1024, 2048))
    assert q.expected() == 32 * (1024 + 4 * 2048) * 131_072 == 38_654_705_664
    assert not grade_value(q, 32 * 4 * (1024 + 2048) * 131_072)  # the "prompt not shared" slip


def test_mfu_from_throughput_does_not_count_the_recompute():
    # Llama-2-7B at 4,096 tokens on an H100 (989.4 TFLOP/s): model FLOPs 6N + 12 x 32 x 32 x 128 x 4,096
    n = 6_738_415_616
    model = 6 * n + 12 * 32 * 32 * 128 * 4096
    hw = 8 * n + 16 * 32 * 32 * 128 * 4096  # with the recomputed forward: HFU
    q = generator._mfu_from_throughput("p07.x", _Pick("llama-2-7b", "h100-80gb", 4096, 0.4))
    tps = int(re.search(r"\*\*([\d,]+) tokens/s per GPU\*\*", q.prompt).group(1).replace(",", ""))
    assert q.expected() == pytest.approx(100 * tps * model / 989.4e12, rel=1e-9)
    assert grade_value(q, 100 * tps * model / 989.4e12) and not grade_value(q, 100 * tps * hw / 989.4e12)


def test_int4_speedup_kind_fades_with_batch():
    small = generator._int4_speedup_at_batch("p09.x", _Pick("llama-2-70b", 16, "h100-80gb", 256, 2)).expected()
    large = generator._int4_speedup_at_batch("p09.x", _Pick("llama-2-70b", 512, "h100-80gb", 256, 2)).expected()
    assert small > 3 and large == pytest.approx(1.0, abs=0.02)


def grade_value(q, value) -> bool:
    from memlib.learn.grading import _GRADERS
    return _GRADERS[type(q)](q, value).status == "correct"


def test_a_question_id_works_where_the_question_does():
    shown = interview.assess("04.10", "word " * 20)  # an open exercise's id
    assert "Rubric" in shown
    assert "Rubric" in interview.assess("m05.3", "word " * 20)  # a scenario's id
    with pytest.raises(ValueError, match="not a mock-interview question"):
        interview.assess("99.1", "word " * 20)
