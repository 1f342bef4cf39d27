"""One house style for every figure in the book, and captions that say where numbers came from."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib as mpl
import matplotlib.pyplot as plt
import seaborn as sns

from genbounds.scale import SCALES, Scale, scale_banner

__all__ = ["PALETTE", "annotate_provenance", "label_stored", "set_style", "stored_source"]

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


def _results_of(stored: Any) -> list[Any]:
    """The :class:`~genbounds.results.StoredResult` objects in ``stored`` (one, a sequence,
    a :class:`~genbounds.experiments.registry.StoredUnits`, or ``load_stored``'s pair)."""
    from genbounds.results import StoredResult

    if isinstance(stored, StoredResult):
        return [stored]
    present = getattr(stored, "present", None)
    if present is not None:
        return list(present)
    if isinstance(stored, tuple) and len(stored) == 2 and isinstance(stored[0], dict):
        stored = stored[1]  # (arrays, parts) as load_stored / load_or_run return them
    if isinstance(stored, Sequence) and stored and all(isinstance(r, StoredResult)
                                                       for r in stored):
        return list(stored)
    raise ValueError("stored must be a StoredResult, a non-empty sequence of them, "
                     f"StoredUnits or load_stored's result, got {type(stored).__name__}")


def _short_device(device: str) -> str:
    """``"cuda (NVIDIA H100 80GB HBM3), torch 2.5"`` -> ``"NVIDIA H100 80GB HBM3"``."""
    if "(" in device and ")" in device:
        inner = device[device.index("(") + 1: device.index(")")]
        head = device[: device.index("(")].strip()
        return inner if head.startswith("cuda") else f"{head} ({inner.split(',')[0]})"
    return device


def stored_source(stored: Any) -> str:
    """Where stored results came from, in one short phrase for a caption or panel.

    Says "stored", the device(s), the date (range), the total measured wall time, and "made
    by older code" when any part's code fingerprint is stale. Accepts what
    :func:`~genbounds.experiments.registry.load_stored` and
    :func:`~genbounds.experiments.registry.stored_units` return, or stored results.
    """
    results = _results_of(stored)
    devices = sorted({_short_device(r.provenance.device) for r in results})
    dates = sorted(r.provenance.created_utc[:10] for r in results)
    when = dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"
    wall = sum(r.provenance.wall_time_s for r in results)
    hours = f"{wall / 3600:.1f} h" if wall >= 3600 else f"{wall / 60:.1f} min"
    n = len(results)
    text = (f"stored results ({n} unit{'s' if n != 1 else ''}): {', '.join(devices)}, "
            f"{when}, {hours} wall")
    if any(r.stale for r in results):
        text += "; made by older code (stale)"
    return text


def annotate_provenance(
    fig: Any,
    data: str,
    *,
    scale: Scale | None = None,
    source: str = "computed in this run",
    stored: Any = None,
) -> str:
    """Write the scale / data / source line under a figure and return it.

    Every figure of the book calls this, so a reader always sees which scale produced it,
    with what data, and whether it was computed in this run or loaded from stored results.
    ``stored`` (stored results, as :func:`stored_source` accepts) replaces ``source`` by the
    device, date and wall time those results record.
    """
    if not isinstance(fig, plt.Figure):
        raise ValueError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    if stored is not None:
        source = stored_source(stored)
    text = scale_banner(data, scale=scale, source=source)
    fig.text(0.0, -0.02, text, ha="left", va="top", fontsize=8, color="0.35", wrap=True)
    return text


def label_stored(ax: Any, stored: Any, *, scale: Scale | None = None) -> str:
    """Label one panel made from stored results with scale, device and date; return the text.

    For a figure that shows stored paper-scale results beside quick ones computed in the run:
    the panel says which it is (the figure's own :func:`annotate_provenance` line covers the
    rest). The text goes in the panel's lower right corner, 9 pt.
    """
    if not isinstance(ax, plt.Axes):
        raise ValueError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
    results = _results_of(stored)
    if scale is not None and scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    prefix = f"{scale} scale, " if scale else ""
    dev = ", ".join(sorted({_short_device(r.provenance.device) for r in results}))
    date = max(r.provenance.created_utc[:10] for r in results)
    text = f"{prefix}stored: {dev}, {date}" + (" (stale code)" if any(r.stale for r in results)
                                                else "")
    ax.text(0.99, 0.01, text, transform=ax.transAxes, ha="right", va="bottom", fontsize=9,
            color="0.35")
    return text
