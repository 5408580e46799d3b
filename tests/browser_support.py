"""What the browser tests share: finding Chromium, and skipping (or, under MEMLIB_REQUIRE_BROWSER=1, failing)
when a piece is missing."""

from __future__ import annotations

import os
import shutil

import pytest


def missing(reason: str):
    """Skip with the reason; fail instead where CI requires the browser tests (MEMLIB_REQUIRE_BROWSER=1)."""
    if os.environ.get("MEMLIB_REQUIRE_BROWSER") == "1":
        pytest.fail(f"MEMLIB_REQUIRE_BROWSER=1 but {reason}")
    pytest.skip(reason)


def chromium() -> str | None:
    """The Chromium binary: MEMLIB_CHROMIUM, else the first one on the PATH; None if there is none."""
    explicit = os.environ.get("MEMLIB_CHROMIUM")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    for name in ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None
