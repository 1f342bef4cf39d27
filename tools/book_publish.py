"""Sphinx extension (loaded from ``_config.yml``) that publishes every chapter as notebooks.

- Every chapter that is a notebook gets the executed notebook (with outputs, as MyST-NB ran it
  during the build) in its download menu, as ``_sources/<docname>.ipynb``.
- After the build, ``colab/<docname>.ipynb`` is written next to the site for each such chapter
  (see ``tools/colab.py``): no outputs, and a first cell that installs ``genbounds``.
- Both are plain Markdown (``tools/plain_notebook.py``): the glued values of the build
  substituted, MyST directives as headed paragraphs, citations as text, so that they read in
  Colab, plain Jupyter or VS Code as the page does.
- When the build runs in GitHub Actions (``GITHUB_REPOSITORY`` is set), each chapter page gets an
  "Open in Colab" link to that notebook on the Pages branch, and the header gets the repository
  button. A build without it (a laptop) has no repository links at all.
- ``.nojekyll`` is written so that GitHub Pages serves ``_static/`` and ``_sources/`` as they are.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import colab  # tools/colab.py: _config.yml puts tools/ on sys.path for local extensions
import nbformat
import plain_notebook
from sphinx.application import Sphinx
from sphinx.config import Config

PAGES_BRANCH = "gh-pages"


def _repository(config: Config) -> str:
    return str(config.publish_repository or "").strip()


def _repository_options(app: Sphinx, config: Config) -> None:
    repo = _repository(config)
    if not repo:
        return
    server = os.environ.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")
    opts = dict(config.html_theme_options or {})
    opts["repository_url"] = f"{server}/{repo}"
    opts["repository_branch"] = os.environ.get("GITHUB_REF_NAME", "") or "main"
    opts["use_repository_button"] = True
    config.html_theme_options = opts


_BOOKS: dict[str, plain_notebook.Book] = {}


def numbered_labels(env: Any) -> dict[str, str]:
    """``{label: "Theorem 2.3"}``: the numbered name the pages give each statement
    (sphinx-proof) and exercise (sphinx-exercise), read from the numbers Sphinx assigned
    (``env.toc_fignumbers``) exactly as those extensions read them; unnumbered ones are left out.
    """
    numbers: dict[str, str] = {}
    fignumbers = getattr(env, "toc_fignumbers", {}) or {}
    for label, info in (getattr(env, "proof_list", {}) or {}).items():
        if info.get("nonumber"):
            continue
        number = fignumbers.get(info["docname"], {}).get(info["countertype"], {}).get(label)
        if number:
            numbers[label] = f"{info['realtype'].title()} {'.'.join(map(str, number))}"
    for label, info in (getattr(env, "sphinx_exercise_registry", {}) or {}).items():
        ids = info["node"].get("ids", []) if "node" in info else []
        if info.get("type") not in ("exercise", "exercise-start") or not ids:
            continue
        number = fignumbers.get(info["docname"], {}).get("exercise", {}).get(ids[0])
        if number:
            numbers[label] = f"Exercise {'.'.join(map(str, number))}"
    return numbers


def _book(app: Sphinx) -> plain_notebook.Book:
    """Titles, labels, numbers and bibliography of the book, read once per build (the numbers
    are Sphinx's, assigned before any page is written)."""
    key = f"{app.srcdir}:{id(app.env)}"  # one per build, even in a long-lived process
    if key not in _BOOKS:
        url = plain_notebook.pages_url(os.environ) if _repository(app.config) else None
        _BOOKS[key] = colab.read_book(Path(app.srcdir), url=url)
        _BOOKS[key].numbers = numbered_labels(app.env)
    return _BOOKS[key]


def _executed_notebook(app: Sphinx, pagename: str) -> Path:
    return Path(app.outdir).parent / "jupyter_execute" / f"{pagename}.ipynb"


def _notebook_buttons(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    executed = _executed_notebook(app, pagename)
    if not executed.exists():
        return
    target = Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    # the executed notebook, with the set-up cell first (issue #26: a downloaded notebook runs
    # where genbounds is not installed, as the Colab one does)
    published = bool(_repository(app.config))
    executed_nb = nbformat.read(executed, as_version=4)
    # plain Markdown with the glued values of this very notebook (issue #35)
    nb = plain_notebook.plain_notebook(executed_nb, _book(app), pagename,
                                       plain_notebook.executed_glue(executed))
    nb = colab.with_setup_cell(
        nb,
        colab.repository_source() if published else None,
        colab.repository_constraints() if published else None,
        None if published else colab.local_origin(Path(app.srcdir)),
    )
    nbformat.write(nb, target)
    context["ipynb_source"] = f"{pagename}.ipynb"
    repo = _repository(app.config)
    if repo and "header_buttons" in context:
        context["header_buttons"].append(
            {
                "type": "group",
                "tooltip": "Run this chapter",
                "icon": "fas fa-rocket",
                "label": "launch-buttons",
                "buttons": [
                    {
                        "type": "link",
                        "text": "Open in Colab",
                        "tooltip": "Open this chapter as a notebook in Google Colab",
                        "icon": "_static/images/logo_colab.png",
                        "url": colab.colab_url(repo, pagename, PAGES_BRANCH),
                        "label": "colab-button",
                    }
                ],
            }
        )


def _dedupe_scripts(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """Drop repeated inline scripts from a page.

    Under Sphinx 7.4, sphinx-thebe 0.3.1 registers its inline configuration twice (once with the
    app, once with the already-initialised builder), so every page declared ``const THEBE_JS_URL``
    twice: "SyntaxError: Identifier 'THEBE_JS_URL' has already been declared", found by the
    rendering check. An identical script twice is never intended; keep the first.
    """
    scripts = context.get("script_files")
    if not scripts:
        return
    seen: set[tuple[str, str]] = set()
    unique = []
    for js in scripts:
        # the same inline script is registered once with filename None and once with ''
        filename = str(getattr(js, "filename", js) or "")
        key = (filename, repr(sorted(getattr(js, "attributes", {}).items())))
        if key in seen:
            continue
        seen.add(key)
        unique.append(js)
    context["script_files"] = unique


def _share_html_handlers(app: Sphinx) -> None:
    """Let the single-page builder (``make pdf``) render every node the HTML builder renders.

    Sphinx looks up node visitors by builder name and falls back to the format ("html") only when
    no extension registered any visitor for that name; sphinx-proof registers visitors for
    "singlehtml", so MyST-NB's nodes (e.g. ``HideCodeCellNode``) had none there and the build
    failed ("unknown node type").
    """
    handlers = app.registry.translation_handlers
    name = app.builder.name
    if name != "html" and app.builder.format == "html" and name in handlers:
        for node, visitors in handlers.get("html", {}).items():
            handlers[name].setdefault(node, visitors)


def _write_colab_notebooks(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    published = _repository(app.config)
    source = colab.repository_source() if published else None
    constraints = colab.repository_constraints() if published else None
    colab.write_colab_notebooks(Path(app.srcdir), outdir, source, constraints=constraints,
                                executed_dir=outdir.parent / "jupyter_execute",
                                url=_book(app).url, numbers=_book(app).numbers)
    (outdir / ".nojekyll").touch()


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value(
        "publish_repository", os.environ.get("GITHUB_REPOSITORY", ""), "html", types=[str]
    )
    app.connect("config-inited", _repository_options)
    app.connect("builder-inited", _share_html_handlers)
    # after the theme's prep_header_buttons (priority 500, registered first), before its
    # add_header_buttons (priority 501), which reads ``ipynb_source``
    app.connect("html-page-context", _notebook_buttons, priority=500)
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    app.connect("build-finished", _write_colab_notebooks)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
