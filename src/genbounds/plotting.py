"""One house style for every figure in the book, and captions that say where numbers came from."""

from __future__ import annotations

from typing import Any

import matplotlib as mpl
import matplotlib.pyplot as plt
import seaborn as sns

from genbounds.scale import Scale, scale_banner

__all__ = ["PALETTE", "annotate_provenance", "set_style"]

PALETTE = sns.color_palette("colorblind")


def set_style() -> None:
    """Apply the book's figure style (seaborn ``whitegrid``, colour-blind palette)."""
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
        }
    )


def annotate_provenance(
    fig: Any, data: str, *, scale: Scale | None = None, source: str = "computed in this run"
) -> str:
    """Write the scale / data / source line under a figure and return it.

    Every figure of the book calls this, so a reader always sees which scale produced it,
    with what data, and whether it was computed in this run or loaded from stored results.
    """
    if not isinstance(fig, plt.Figure):
        raise ValueError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    text = scale_banner(data, scale=scale, source=source)
    fig.text(0.0, -0.02, text, ha="left", va="top", fontsize=8, color="0.35", wrap=True)
    return text
