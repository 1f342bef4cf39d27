"""What every data family shares."""

from __future__ import annotations

import numpy as np

__all__ = ["readonly"]


def readonly(a: np.ndarray) -> np.ndarray:
    """``a`` marked read-only (data sets are immutable once drawn), returned for chaining."""
    a.setflags(write=False)
    return a
