"""Small statistics for the book's conclusions: is there a trend, and how sure are we?

The papers often claim that a quantity "shows no trend" in some size (sequence length, width).
A plot of maxima over five runs cannot settle that. :func:`linear_trend` fits an ordinary
least-squares line through *every run* and returns the slope with a t-based confidence interval
and a permutation p-value, so a chapter can say "the slope is s (95% CI [a, b])" and assert on it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as _st

__all__ = ["TrendResult", "linear_trend"]


@dataclass(frozen=True)
class TrendResult:
    """OLS slope of ``y`` on ``x`` with its confidence interval and a permutation p-value."""

    slope: float
    intercept: float
    ci_low: float
    ci_high: float
    level: float
    p_value_t: float
    p_value_permutation: float
    n: int

    @property
    def excludes_zero(self) -> bool:
        """Whether the confidence interval excludes a zero slope."""
        return self.ci_low > 0 or self.ci_high < 0

    def describe(self, per: float = 1.0, unit: str = "") -> str:
        """Human-readable summary, the slope expressed per ``per`` units of ``x``."""
        s = f"slope {self.slope * per:+.4g}{unit} per {per:g}"
        ci = f"{self.level:.0%} CI [{self.ci_low * per:+.4g}, {self.ci_high * per:+.4g}]"
        tests = f"t-test p = {self.p_value_t:.3g}, permutation p = {self.p_value_permutation:.3g}"
        return f"{s} ({ci}; {tests}, n = {self.n})"


def linear_trend(
    x: np.ndarray,
    y: np.ndarray,
    *,
    level: float = 0.95,
    n_permutations: int = 10_000,
    seed: int = 0,
) -> TrendResult:
    """Fit ``y = a + b x`` by ordinary least squares and test ``b = 0``.

    Parameters
    ----------
    x, y:
        One-dimensional arrays of equal length (one entry per run), at least 3 points and at
        least two distinct ``x`` values.
    level:
        Confidence level of the t-interval for the slope, in (0, 1).
    n_permutations:
        Number of random permutations of ``y`` for the two-sided permutation p-value.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 1 or y.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"x and y must be 1-D of equal length, got shapes {x.shape} and {y.shape}")
    if x.size < 3:
        raise ValueError(f"x must have at least 3 points, got {x.size}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("x and y must be finite")
    if np.ptp(x) == 0:
        raise ValueError("x must take at least two distinct values")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if n_permutations < 1:
        raise ValueError(f"n_permutations must be >= 1, got {n_permutations}")
    n = x.size
    xc = x - x.mean()
    sxx = float(xc @ xc)
    slope = float(xc @ (y - y.mean()) / sxx)
    intercept = float(y.mean() - slope * x.mean())
    resid = y - intercept - slope * x
    dof = n - 2
    sigma2 = float(resid @ resid) / dof
    se = np.sqrt(sigma2 / sxx)
    if se == 0:
        p_t = 0.0 if slope != 0 else 1.0
        half = 0.0
    else:
        p_t = float(2 * _st.t.sf(abs(slope) / se, dof))
        half = float(_st.t.ppf(0.5 + level / 2, dof) * se)
    rng = np.random.default_rng(seed)
    perms = np.argsort(rng.random((n_permutations, n)), axis=1)
    slopes = (y[perms] - y.mean()) @ xc / sxx
    p_perm = float((1 + np.sum(np.abs(slopes) >= abs(slope) - 1e-12)) / (n_permutations + 1))
    return TrendResult(slope, intercept, slope - half, slope + half, level, p_t, p_perm, n)
