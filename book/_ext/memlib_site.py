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


def launch_target(pagename: str, zh: bool = False) -> tuple[str, str, str]:
    """(repository path to open, Binder urlpath, local command) for a page of the book (`zh`: of the Chinese
    book, whose notebooks are the repository's zh/ copies)."""
    if zh:
        path, urlpath, command = launch_target(pagename)
        if path.startswith(("notebooks/", "exercises/")) and pagename != "notebooks/calculator":
            return "zh/" + path, urlpath.replace(path, "zh/" + path), command.replace(path, "zh/" + path)
        return path, urlpath, command
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
    zh = is_chinese(app)
    path, urlpath, command = launch_target(pagename, zh)
    what = "the calculator" if pagename == "notebooks/calculator" else (
        "this notebook" if path.removeprefix("zh/").startswith(pagename) else "the notebooks")
    # the Chinese book (zh/ beside the English one) shares the English book's JupyterLite site
    lite = "../" * pagename.count("/") + "../" + lite_url(path) if zh else context["pathto"](lite_url(path), 1)
    parts = [f'<strong>{ZH_WORDS[what] + "：" if zh else "Run " + what + ":"}</strong> '
             f'<a class="memlib-lite reference internal" href="{html.escape(lite)}">'
             + ("在线试用</a>（在浏览器中运行，无需安装）" if zh else
                "Try it live</a> (in your browser, nothing to install)") + FILE_NOTE]
    if cfg.memlib_site_repo:  # Binder only where the build names a public repository (book/conf.py)
        url = binder_url(cfg.memlib_site_repo, cfg.memlib_site_branch, cfg.memlib_site_binder, urlpath)
        parts.append(f'<a class="memlib-binder reference external" href="{html.escape(url)}">'
                     f'{"在 Binder 上运行" if zh else "on Binder"}</a>')
    parts.append(("本地运行（按 README 安装后，在仓库根目录）：" if zh else
                  "locally, from the repository root (after the README's set-up): ")
                 + f'<code class="memlib-local">{html.escape(command)}</code>')
    if TOPIC.match(pagename) and not pagename.endswith("_deep_dive"):  # a deep dive has no deck
        slides = context["pathto"](f"slides/{pagename.split('/')[1]}.slides.html", 1)
        parts.append(f'<a class="memlib-slides reference internal" href="{html.escape(slides)}">'
                     f'{"幻灯片" if zh else "slides"}</a>')
    return '<div class="memlib-launch">' + " · ".join(parts) + "</div>\n"


# --- the two editions: the English book at the root, the Chinese one in zh/ (tools/build_site.py's chinese_book) ---
ZH_WORDS = {"the calculator": "运行计算器", "this notebook": "运行本笔记本", "the notebooks": "运行笔记本"}


def is_chinese(app) -> bool:
    return (app.config.language or "en").startswith("zh")


def other_edition(pagename: str, zh: bool) -> str:
    """The same page in the other edition, relative to this page (the Chinese book is the English one's zh/)."""
    up = "../" * pagename.count("/")
    return f"{up}../{pagename}.html" if zh else f"{up}zh/{pagename}.html"


def _switch(app, pagename: str) -> str:
    zh = is_chinese(app)
    href = html.escape(other_edition(pagename, zh))
    label = ('<a class="memlib-lang-switch reference external" hreflang="en" lang="en" href="{}">English</a>' if zh
             else '<a class="memlib-lang-switch reference external" hreflang="zh" lang="zh" href="{}">中文</a>')
    note = "本页的英文原版" if zh else "this page in Chinese"
    return f'<div class="memlib-lang" title="{note}">' + label.format(href) + "</div>\n"


def add_language_switch(app, pagename, templatename, context, doctree):
    """A link to the same page in the other language at the top of every page."""
    if doctree is None or "body" not in context:
        return
    context["body"] = _switch(app, pagename) + context["body"]


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
    app.connect("html-page-context", add_language_switch)  # after the bar: the switch ends up above it
    app.connect("html-page-context", preload_cjk_font)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
