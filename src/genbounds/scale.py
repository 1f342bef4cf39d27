"""Which scale an experiment runs at.

Every experiment in the book has two presets:

``quick``
    CPU-sized, the default and what CI runs: each notebook finishes in a few minutes on a
    2-core machine. Smaller sweeps, fewer runs, capped epochs; the phenomenon, not the protocol.
``paper``
    The paper's own protocol (sizes, epochs, number of runs). A GPU is recommended.

One switch selects it: the environment variable ``GENBOUNDS_SCALE``.
"""

from __future__ import annotations

import os
from typing import Literal

Scale = Literal["quick", "paper"]
SCALES: tuple[Scale, ...] = ("quick", "paper")
ENV_VAR = "GENBOUNDS_SCALE"


def get_scale() -> Scale:
    """Return the scale selected by ``$GENBOUNDS_SCALE`` (default ``"quick"``).

    Raises
    ------
    ValueError
        If the variable is set to anything other than ``quick`` or ``paper``.
    """
    raw = os.environ.get(ENV_VAR, "quick").strip().lower()
    if raw not in SCALES:
        raise ValueError(f"{ENV_VAR} must be one of {SCALES}, got {raw!r}")
    return raw  # type: ignore[return-value]


def scale_banner(data: str, *, scale: Scale | None = None) -> str:
    """One line for a figure caption: which scale and which data.

    Parameters
    ----------
    data:
        A short description of the data (e.g. ``"sparse majority, 300 train / 2,000 val"``).
    scale:
        Defaults to :func:`get_scale`.

    Where stored numbers came from is not a caption's business: the page's provenance note
    (:func:`genbounds.results.provenance_note`) says it.
    """
    if not isinstance(data, str) or not data.strip():
        raise ValueError("data must be a non-empty description")
    s = get_scale() if scale is None else scale
    if s not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {s!r}")
    return f"scale: {s} · data: {data}"
