"""One house style for every figure in the book, and captions that say their scale and data."""

from __future__ import annotations

from typing import Any

import matplotlib as mpl
import matplotlib.pyplot as plt
import seaborn as sns

from genbounds.results.page_note import note_sources, results_of
from genbounds.scale import SCALES, Scale, scale_banner

__all__ = ["PALETTE", "annotate_provenance", "label_stored", "set_style"]

PALETTE = sns.color_palette("colorblind")


def set_style(svg: bool = True) -> None:
    """Apply the book's figure style (seaborn ``whitegrid``, colour-blind palette).

    In a notebook, figures are shown as SVG (``svg=True``): a reader on a phone zooms into them
    without blur, and their text stays text (``svg.fonttype = "none"``), which the rendering check
    reads for labels that show code names (issue #26).
    """
    sns.set_theme(style="whitegrid", context="notebook", palette=PALETTE)
    mpl.rcParams.update(
        {
            "figure.figsize": (6.4, 4.0),
            "figure.dpi": 110,
            "savefig.bbox": "tight",
            "axes.titlesize": 12,
            "axes.labelsize": 11,
            "legend.fontsize": 9,
            "figure.constrained_layout.use": True,
            "svg.fonttype": "none",
            "svg.hashsalt": "genbounds",  # the same ids on every build
        }
    )
    if svg:
        _inline_format("svg")


def _inline_format(fmt: str) -> None:
    """Show figures in ``fmt`` in a running IPython kernel (nothing outside one)."""
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:  # no IPython: scripts and tests save figures themselves
        return
    if get_ipython() is not None:
        set_matplotlib_formats(fmt)


def annotate_provenance(
    fig: Any,
    data: str,
    *,
    scale: Scale | None = None,
    stored: Any = None,
) -> str:
    """Write the scale and data line under a figure and return it.

    Every figure of the book calls this, so a reader always sees which scale produced it and
    with what data. Where the numbers came from (devices, dates, code) goes to the page's folded
    provenance note: ``stored`` (anything :func:`genbounds.results.results_of` accepts) is named
    there under ``data`` (:func:`genbounds.results.note_sources`).
    """
    if not isinstance(fig, plt.Figure):
        raise ValueError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    text = scale_banner(data, scale=scale)
    if stored is not None:
        note_sources(data, stored)
    fig.text(0.0, -0.02, text, ha="left", va="top", fontsize=8, color="0.35", wrap=True)
    return text


def label_stored(ax: Any, stored: Any, *, scale: Scale | None = None) -> str:
    """Label one panel made from stored results with its scale; return the text.

    For a figure that shows stored paper-scale results beside quick ones computed in the run:
    the panel says which it is ("paper scale, stored results"), in its lower right corner, 9 pt;
    the results are named in the page's provenance note (:func:`genbounds.results.note_sources`).
    """
    if not isinstance(ax, plt.Axes):
        raise ValueError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
    if scale is not None and scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    results = results_of(stored)
    text = (f"{scale} scale, " if scale else "") + "stored results"
    note_sources(f"{scale + ' scale' if scale else 'stored'} results in figure panels", results)
    ax.text(0.99, 0.01, text, transform=ax.transAxes, ha="right", va="bottom", fontsize=9,
            color="0.35")
    return text
