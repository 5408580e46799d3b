"""A deep dive's fact-check table as data (issue 44): one Claim per row, one renderer.

    from memlib.learn.factcheck import Claim, fact_check_table

    claims = [Claim('"70B … FP16 140 GB"', "Hugging Face blog", GB(w), "2 bytes per parameter",
                    claimed=140e9, computed=w)]
    display(Markdown(fact_check_table(claims, right=0.03, partly=0.25)))

A numeric claim carries the quoted figure (`claimed`: a number, a (low, high) range or a bool) and
memlib's (`computed`); its verdict comes from memlib.learn.claims.claim_verdict with the table's
tolerances, so the mark cannot contradict the figures beside it. A claim with no single figure to
compare (a mechanism, a conclusion of several parts) carries a ready `verdict` instead: a mark
(✅, ⚠️, ❌, ➖ not computed, or a mark computed with claims.overall / worst) or a text of its own
("✅ consistent"). The table writes each mark with its word ("✅ right").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memlib._checks import show
from memlib.learn.claims import PARTLY, RIGHT, WRONG, claim_verdict
from memlib.training.explain import markdown_table

__all__ = ["Claim", "LABELS", "NOT_COMPUTED", "HEADERS", "fact_check_table"]

NOT_COMPUTED = "➖"   # a claim memlib does not compute (accuracy, a feature it does not model)
LABELS = {RIGHT: "✅ right", PARTLY: "⚠️ partly", WRONG: "❌ wrong", NOT_COMPUTED: "➖ not computed"}
HEADERS = ("claim (as written)", "source", "memlib", "verdict", "why")


@dataclass(frozen=True)
class Claim:
    """One row: the claim as quoted, its source, memlib's figure (as text), why; and either the
    quoted and computed values (the verdict is computed) or a ready verdict."""

    quote: str
    source: str
    memlib: str
    why: str
    claimed: Any = None
    computed: Any = None
    verdict: str | None = None

    def __post_init__(self):
        for name in ("quote", "source", "memlib", "why"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"Claim.{name} must be a str, got {show(getattr(self, name))}")
        numeric = self.claimed is not None or self.computed is not None
        if numeric and (self.claimed is None or self.computed is None):
            raise ValueError("a numeric Claim needs both claimed and computed, "
                             f"got claimed={show(self.claimed)}, computed={show(self.computed)}")
        if numeric == (self.verdict is not None):
            raise ValueError("a Claim takes either claimed and computed (the verdict is computed) or a ready "
                             f"verdict, not {'both' if numeric else 'neither'} (quote {self.quote[:40]!r})")
        if self.verdict is not None and not (isinstance(self.verdict, str) and self.verdict.strip()):
            raise ValueError(f"Claim.verdict must be a non-empty str, got {show(self.verdict)}")

    def mark(self, right: float = 0.10, partly: float = 0.30) -> str:
        """The verdict: claim_verdict's mark (✅, ⚠️, ❌) for a numeric claim, else the ready verdict as given."""
        if self.verdict is None:
            return claim_verdict(self.claimed, self.computed, right=right, partly=partly)
        return self.verdict

    def label(self, right: float = 0.10, partly: float = 0.30) -> str:
        """The verdict as the table shows it: a mark with its word ('✅ right'), so it reads without an emoji
        font; a ready verdict that is not a bare mark is shown as given ('✅ consistent')."""
        mark = self.mark(right, partly)
        return LABELS.get(mark, mark)


def fact_check_table(claims, right: float = 0.10, partly: float = 0.30, headers=HEADERS,
                     source_in_claim: bool = False) -> str:
    """The Markdown table of `claims` (Claim records): claim, source, memlib, verdict, why.

    right / partly: the relative-error tolerances of claims.claim_verdict (✅ within `right`, ⚠️
    within `partly`, ❌ beyond). source_in_claim=True writes the source in brackets after the quote,
    in one column ('"C ≈ 6N" (Kaplan et al. 2020)'); `headers` then has four names, else five.
    """
    claims = list(claims)
    if not claims or not all(isinstance(c, Claim) for c in claims):
        raise TypeError(f"claims must be a non-empty list of Claim records, got {show(claims)}")
    headers = list(headers)
    if len(headers) != (4 if source_in_claim else 5):
        raise ValueError(f"headers needs {4 if source_in_claim else 5} names "
                         f"(source_in_claim={source_in_claim}), got {show(headers)}")
    rows = []
    for c in claims:
        cells = [f"{c.quote} ({c.source})" if source_in_claim and c.source else c.quote]
        cells += [] if source_in_claim else [c.source]
        rows.append(cells + [c.memlib, c.label(right, partly), c.why])
    return markdown_table(rows, headers)
