"""The book's own Sphinx extension: a launch bar at the top of every page.

Each page says how to run what it shows: "Try it live" (the page's notebook in the JupyterLite site
built beside the book, lite/; an exercise page opens the learner's copy), the Binder link (JupyterLab on
the notebook, or Voila for the calculator) where conf.py names a public repository (SITE_REPO, one
place; unset: no Binder link), and the local command, plus the classroom slides for a topic notebook.
"""

from __future__ import annotations

import html
import re
from urllib.parse import quote

TOPIC = re.compile(r"^notebooks/\d\d_[\w-]+$")


def launch_target(pagename: str) -> tuple[str, str, str]:
    """(repository path to open, Binder urlpath, local command) for a page of the book."""
    if pagename == "notebooks/calculator":
        path = "notebooks/calculator.ipynb"
        return path, "voila/render/" + path, f"voila {path}"
    if pagename.startswith(("notebooks/", "exercises/")) and pagename not in ("notebooks/calculator",):
        path = pagename + ".ipynb"
    else:  # the landing page, the cheat sheet: open the notebooks' index
        path = "notebooks/index.ipynb"
    # run from the repository root: JupyterLab serves it (so relative links between notebooks, exercises
    # and docs resolve) and opens this file; a file argument would make the file's folder the root
    return path, "lab/tree/" + path, f"jupyter lab --LabApp.default_url=/lab/tree/{path}"


def binder_url(repo: str, branch: str, binder: str, urlpath: str) -> str:
    return f"{binder.rstrip('/')}/v2/gh/{repo}/{branch}?urlpath={quote(urlpath, safe='')}"


def lite_url(path: str) -> str:
    """The JupyterLite site's address (relative to the book's root) that opens `path` of the repository."""
    return f"lite/notebooks/index.html?path={quote(path, safe='/')}"


# JupyterLite needs the site served over HTTP (it fetches its settings and notebooks and runs a web worker, which a
# browser refuses to a page opened from file://): there the bar says how to serve the folder (docs/book.md)
FILE_NOTE = ('<span class="memlib-lite-file" hidden> (it needs the site served, not opened as a file: '
             '<code>python -m http.server -d _build/html 8000</code>, then open http://localhost:8000/)</span>'
             '<script>if (location.protocol === "file:") document.querySelectorAll(".memlib-lite-file")'
             '.forEach(e => { e.hidden = false; });</script>')


def _bar(app, pagename: str, context) -> str:
    cfg = app.config
    path, urlpath, command = launch_target(pagename)
    what = "the calculator" if pagename == "notebooks/calculator" else (
        "this notebook" if path.startswith(pagename) else "the notebooks")
    lite = context["pathto"](lite_url(path), 1)
    parts = [f'<strong>Run {what}:</strong> <a class="memlib-lite reference internal" href="{html.escape(lite)}">'
             "Try it live</a> (in your browser, nothing to install)" + FILE_NOTE]
    if cfg.memlib_site_repo:  # Binder only where the build names a public repository (book/conf.py)
        url = binder_url(cfg.memlib_site_repo, cfg.memlib_site_branch, cfg.memlib_site_binder, urlpath)
        parts.append(f'<a class="memlib-binder reference external" href="{html.escape(url)}">on Binder</a>')
    parts.append(f'locally, from the repository root (after the README\'s set-up): '
                 f'<code class="memlib-local">{html.escape(command)}</code>')
    if TOPIC.match(pagename) and not pagename.endswith("_deep_dive"):  # a deep dive has no deck
        slides = context["pathto"](f"slides/{pagename.split('/')[1]}.slides.html", 1)
        parts.append(f'<a class="memlib-slides reference internal" href="{html.escape(slides)}">slides</a>')
    return '<div class="memlib-launch">' + " · ".join(parts) + "</div>\n"


def add_launch_bar(app, pagename, templatename, context, doctree):
    if doctree is None or "body" not in context:  # search page, genindex
        return
    context["body"] = _bar(app, pagename, context) + context["body"]


# The book's CJK webfont (tools/build_site.py writes it; book/_static/memlib.css declares it): preloaded on
# every page, so the title's 显存 is drawn with it on first paint, not as boxes on a machine without CJK fonts.
CJK_FONTS = ("_static/fonts/memlib-cjk-regular.woff2", "_static/fonts/memlib-cjk-bold.woff2")


def preload_cjk_font(app, pagename, templatename, context, doctree):
    links = "".join(f'<link rel="preload" href="{html.escape(context["pathto"](f, 1))}" as="font" '
                    'type="font/woff2" crossorigin>\n' for f in CJK_FONTS)
    context["metatags"] = context.get("metatags", "") + links


def setup(app):
    app.add_config_value("memlib_site_repo", "", "html")
    app.add_config_value("memlib_site_branch", "main", "html")
    app.add_config_value("memlib_site_binder", "https://mybinder.org", "html")
    app.connect("html-page-context", add_launch_bar)
    app.connect("html-page-context", preload_cjk_font)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
