"""Render the notebooks' inline values (MyST ``{eval}`name` `` roles) from their stored results.

The book never executes a notebook (nb_execution_mode = "off"), and myst-nb's own eval role only
works with a live kernel. The values are already stored, though: tools/inline_values.py writes
each markdown cell's ``metadata.user_expressions`` (jupyterlab-myst's schema) and its ``--check``
keeps them equal to what memlib computes. On Sphinx's ``source-read`` this extension replaces each
role in a markdown cell by its stored text, so myst-nb parses plain prose. A role without a
stored value is a build error (the book builds with warnings as errors), never raw role text.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from sphinx.util import logging

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from inline_values import substitute  # noqa: E402  (one parser for the tool, the book and the decks)

LOG = logging.getLogger(__name__)


def _source_read(app, docname: str, source: list[str]) -> None:
    if not str(app.env.doc2path(docname)).endswith(".ipynb") or "{eval}" not in source[0]:
        return
    nb = json.loads(source[0])
    _, missing = substitute(nb, docname)
    for line in missing:
        LOG.warning(line + " (run tools/inline_values.py)", location=docname)
    source[0] = json.dumps(nb, ensure_ascii=False)


def setup(app):
    app.connect("source-read", _source_read)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
