"""Comparing jupytext's text files: the header line naming the jupytext release that wrote a file is left out, since
a fresh install may be a newer release than the one that wrote the committed pair (the cells are what must match)."""

from __future__ import annotations

import re

_VERSION_LINE = re.compile(r"(?m)^#\s+jupytext_version: .*$")


def unversioned(text: str) -> str:
    """The text without its `jupytext_version:` header line."""
    return _VERSION_LINE.sub("", text)
