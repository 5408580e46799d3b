"""memlib.learn.factcheck: a fact-check table from Claim records, verdicts computed (issue 44).

Expected verdicts are derived by hand from the relative error |claimed - computed| / |computed|."""

import pytest

from memlib.learn.factcheck import Claim, fact_check_table


def rows(table):
    return [[c.strip() for c in line.strip("|").split(" | ")] for line in table.splitlines()[2:]]


def verdicts(table, col=3):
    return [r[col] for r in rows(table)]


def test_default_thresholds_10_and_30_percent():
    # computed 100: claimed 109 is 9% off (<= 10%: right), 125 is 25% (<= 30%: partly), 131 is 31% (wrong);
    # 90 is 10% off, on the boundary: right
    claims = [Claim(f"q{c}", "s", "100", why="w", claimed=c, computed=100) for c in (109, 125, 131, 90)]
    assert verdicts(fact_check_table(claims)) == ["✅ right", "⚠️ partly", "❌ wrong", "✅ right"]


def test_a_table_passes_its_own_tolerances():
    # notebook 04's 3% / 25%: 103.5 is 3.5% off (partly there, right at 10%); 125 is 25%: partly; 126 wrong
    claims = [Claim(f"q{c}", "s", "100", why="w", claimed=c, computed=100) for c in (103.5, 102, 125, 126)]
    assert verdicts(fact_check_table(claims, right=0.03, partly=0.25)) == ["⚠️ partly", "✅ right", "⚠️ partly",
                                                                           "❌ wrong"]
    assert verdicts(fact_check_table(claims)) == ["✅ right", "✅ right", "⚠️ partly", "⚠️ partly"]


def test_ranges_bools_and_ready_verdicts():
    claims = [
        # 1.9 against (2, 3): the nearest end is 0.1 away, 0.1 / 1.9 = 5.3%: right
        Claim("2-3 GB", "s", "1.9 GB", why="w", claimed=(2.0, 3.0), computed=1.9),
        # 1.0 against (2, 3): 1.0 / 1.0 = 100%: wrong
        Claim("2-3 GB", "s", "1.0 GB", why="w", claimed=(2.0, 3.0), computed=1.0),
        Claim("fits", "s", "no", why="w", claimed=True, computed=False),
        Claim("a mechanism", "s", "-", why="w", verdict="⚠️"),
        Claim("not modelled", "s", "-", why="w", verdict="➖"),
        Claim("derived", "s", "-", why="w", verdict="✅ consistent"),
    ]
    assert verdicts(fact_check_table(claims)) == ["✅ right", "❌ wrong", "❌ wrong", "⚠️ partly", "➖ not computed",
                                                  "✅ consistent"]
    assert [c.mark() for c in claims[:4]] == ["✅", "❌", "❌", "⚠️"]


def test_table_layout_pipes_and_source_in_claim():
    c = Claim('"a | b"', "paper, Sec. 2", "7 GB", why="because", claimed=7, computed=7)
    t = fact_check_table([c])
    assert t.splitlines()[:2] == ["| claim (as written) | source | memlib | verdict | why |", "|---|---|---|---|---|"]
    assert t.splitlines()[2] == '| "a \\| b" | paper, Sec. 2 | 7 GB | ✅ right | because |'
    t4 = fact_check_table([c], headers=["claim (source)", "memlib", "verdict", "why"], source_in_claim=True)
    assert t4.splitlines()[2] == '| "a \\| b" (paper, Sec. 2) | 7 GB | ✅ right | because |'


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="not both"):
        Claim("q", "s", "m", why="w", claimed=1, computed=1, verdict="✅")
    with pytest.raises(ValueError, match="not neither"):
        Claim("q", "s", "m", why="w")
    with pytest.raises(ValueError, match="both claimed and computed"):
        Claim("q", "s", "m", why="w", claimed=1)
    with pytest.raises(TypeError, match="Claim.source"):
        Claim("q", 3, "m", why="w", verdict="✅")
    ok = Claim("q", "s", "m", why="w", verdict="✅")
    with pytest.raises(TypeError, match="non-empty list of Claim"):
        fact_check_table([])
    with pytest.raises(TypeError, match="non-empty list of Claim"):
        fact_check_table([["q", "s", "m", "✅", "w"]])
    with pytest.raises(ValueError, match="headers needs 5"):
        fact_check_table([ok], headers=["claim", "memlib", "verdict", "why"])
    with pytest.raises(ValueError, match="right <= partly"):
        fact_check_table([Claim("q", "s", "m", why="w", claimed=1, computed=1)], right=0.3, partly=0.1)
