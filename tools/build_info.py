"""The machine that built the book, as MyST substitutions a page can show.

The instructors' page shows how long each chapter took to execute in *this* build (MyST-NB's
``{nb-exec-table}``) next to ``{{ build_machine }}``: cores, GPU, Python and torch versions, and
the load average when the build started, so that every time the book states comes from one
measurement whose conditions are printed beside it. MyST-NB names each chapter in that table by
its file (``notebooks/03_shallow_gd``); :func:`_chapter_titles` shows the chapter's title instead
(a reader is shown words, not file names; issue #26), the link is unchanged.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config


def describe_machine() -> str:
    """One line: cores, GPU, Python, torch, load average now, UTC date."""
    try:
        import torch

        gpu = (torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU")
        torch_v = f"torch {torch.__version__}"
    except ImportError:  # pragma: no cover (torch is a dependency)
        gpu, torch_v = "GPU unknown", "no torch"
    try:
        load = "load average {:.1f} / {:.1f} / {:.1f} (1 / 5 / 15 min)".format(*os.getloadavg())
    except OSError:  # pragma: no cover (not on Linux or macOS)
        load = "load average unknown"
    date = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (f"{os.cpu_count()} CPU cores ({platform.machine()}), {gpu}, Python "
            f"{platform.python_version()}, {torch_v}; {load} when the build started; {date}")


def _set(app: Sphinx, config: Config) -> None:
    subs = dict(getattr(config, "myst_substitutions", {}) or {})
    subs.setdefault("build_machine", describe_machine())
    config.myst_substitutions = subs


def _chapter_titles(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """In every table of a page, a cell whose whole text is a document name (MyST-NB's
    ``{nb-exec-table}`` writes them) shows that document's title instead."""
    titles = app.env.titles
    for table in doctree.findall(nodes.table):
        for inline in list(table.findall(nodes.inline)):
            name = inline.astext().strip()
            if name in titles and len(inline.children) == 1:
                inline.replace(inline.children[0], nodes.Text(titles[name].astext()))


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", _set)
    app.connect("doctree-resolved", _chapter_titles)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
