"""The notebooks' kit: the few formatting helpers every chapter used to define for itself (issue 44).

    from memlib.learn.kit import GB, G, R

Import the names a notebook uses, by name (no star import), in its setup cell. They format figures that memlib
computed; none of them computes a figure.

    GB(n_bytes, digits=1)  '13.5 GB'  decimal gigabytes (1e9 bytes), the unit of papers and vendors' sheets
    G(n_bytes, digits=1)   '12.6 GiB' binary gibibytes (2**30 bytes), what torch and nvidia-smi print
    R(x, sig=2)            '970'      a figure rounded to `sig` significant digits, as a person says it

Thousands are separated by commas: GB(1.5e12) is '1,500.0 GB'.

A deep dive's fact-check table is data, rendered once (memlib.learn.factcheck, re-exported here):

    Claim(quote, source, memlib, why=..., claimed=..., computed=...)   one row; or verdict=... when not numeric
    fact_check_table(claims, right=0.10, partly=0.30)                  the Markdown table, verdicts computed
                                                                       by memlib.learn.claims.claim_verdict
"""

from __future__ import annotations

from memlib.units import GB as _GB_BYTES
from memlib.units import GiB as _GIB_BYTES
from memlib.learn.factcheck import Claim, fact_check_table

__all__ = ["GB", "G", "R", "Claim", "fact_check_table"]


def GB(n_bytes, digits: int = 1) -> str:
    """Bytes in GB (1e9), labelled: GB(13.5e9) == '13.5 GB'."""
    return f"{n_bytes / _GB_BYTES:,.{digits}f} GB"


def G(n_bytes, digits: int = 1) -> str:
    """Bytes in GiB (2**30), labelled, as torch and nvidia-smi show them: G(2**33) == '8.0 GiB'."""
    return f"{n_bytes / _GIB_BYTES:,.{digits}f} GiB"


def R(x, sig: int = 2) -> str:
    """A figure rounded to `sig` significant digits, as a person says it: R(973.3) == '970', R(0.0123) == '0.012'."""
    return f"{float(f'{x:.{sig}g}'):g}"
