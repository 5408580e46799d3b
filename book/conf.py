"""Sphinx configuration of the book (the static site of the notebooks).

Built by `python tools/build_site.py` (which stages the sources in _build/src and runs
`sphinx-build -c book _build/src _build/html`); the notebooks are rendered from their stored
outputs, never executed.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

# --- the one place for the repository's public path -------------------------------------------
# Binder needs a public repository: set MEMLIB_SITE_REPO=owner/name (and MEMLIB_SITE_BRANCH, default
# main) when building, e.g. `MEMLIB_SITE_REPO=alice/memlib python tools/build_site.py`. Unset (the
# default), every page links to the JupyterLite site built beside the book and to no Binder at all.
SITE_REPO = os.environ.get("MEMLIB_SITE_REPO", "").strip().strip("/")
SITE_BRANCH = os.environ.get("MEMLIB_SITE_BRANCH", "").strip() or "main"
BINDER_URL = "https://mybinder.org"
if SITE_REPO and not re.fullmatch(r"[\w.-]+/[\w.-]+", SITE_REPO):
    raise ValueError(f"MEMLIB_SITE_REPO={SITE_REPO!r}: expected owner/name, e.g. alice/memlib")
# ------------------------------------------------------------------------------------------------

project = "memlib: GPU memory for LLMs"
author = "memlib contributors"
copyright = "memlib contributors"  # noqa: A001 (Sphinx's name)
language = "en"

extensions = ["myst_nb", "memlib_site", "memlib_inline"]
root_doc = "index"
exclude_patterns = ["**/.ipynb_checkpoints"]
suppress_warnings = ["mystnb.unknown_mime_type"]

# Notebooks as stored: outputs are kept in the .ipynb and checked by nbval; the site never executes.
nb_execution_mode = "off"
# display(Markdown(...)) outputs use tables: render them with the MyST parser (tables included)
nb_render_markdown_format = "myst"
# Stored stderr (a library warning) is not part of the text a reader needs
nb_output_stderr = "remove"
# $...$ and $$...$$ math (docs/cheatsheet.md's formulas); "$2 and $3" is not math: no space inside the dollars,
# no digit right after the closing one
myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_dmath_allow_space = False
myst_dmath_allow_digits = False
# MathJax 3 from the site itself (tools/build_site.py unpacks it from the npm registry into _static/mathjax),
# not from a CDN: the book renders its math offline. Relative to _static.
mathjax_path = "mathjax/tex-chtml.js"
myst_heading_anchors = 3

html_theme = "sphinx_book_theme"
html_title = "GPU memory for LLMs · 显存"
html_static_path = ["_static"]
html_css_files = ["memlib.css"]
html_show_sourcelink = False
html_copy_source = False
html_last_updated_fmt = None
html_theme_options = {
    "path_to_docs": "",              # the staged sources mirror the repository's layout
    "use_download_button": True,
    "use_fullscreen_button": False,
    "show_toc_level": 2,
    "home_page_in_toc": True,
}
if SITE_REPO:  # the theme's repository and Binder buttons only where there is a public repository
    html_theme_options.update({
        "repository_url": f"https://github.com/{SITE_REPO}",
        "repository_branch": SITE_BRANCH,
        "use_repository_button": True,
        "launch_buttons": {"binderhub_url": BINDER_URL, "notebook_interface": "jupyterlab"},
    })

# read by the memlib_site extension (the launch bar on every page)
memlib_site_repo = SITE_REPO
memlib_site_branch = SITE_BRANCH
memlib_site_binder = BINDER_URL
