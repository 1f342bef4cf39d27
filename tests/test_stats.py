from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as st

from genbounds.stats import linear_trend


def test_matches_scipy_linregress() -> None:
    rng = np.random.default_rng(1)
    x = np.repeat(np.arange(20, 220, 20), 5).astype(float)
    y = 0.01 * x + rng.normal(size=x.size)
    r = linear_trend(x, y)
    ref = st.linregress(x, y)
    assert r.slope == pytest.approx(ref.slope)
    assert r.intercept == pytest.approx(ref.intercept)
    assert r.p_value_t == pytest.approx(ref.pvalue)
    half = st.t.ppf(0.975, x.size - 2) * ref.stderr
    assert (r.ci_low, r.ci_high) == pytest.approx((ref.slope - half, ref.slope + half))
    assert r.excludes_zero and r.p_value_permutation < 0.01


def test_no_trend_is_not_significant() -> None:
    rng = np.random.default_rng(2)
    x = np.repeat(np.arange(10), 4).astype(float)
    y = rng.normal(size=x.size)
    r = linear_trend(x, y)
    assert r.ci_low < 0 < r.ci_high and not r.excludes_zero
    assert r.p_value_permutation > 0.05
    assert "CI" in r.describe(per=100)


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="equal length"):
        linear_trend(np.arange(3), np.arange(4))
    with pytest.raises(ValueError, match="at least 3"):
        linear_trend(np.arange(2), np.arange(2))
    with pytest.raises(ValueError, match="finite"):
        linear_trend(np.array([0, 1, 2.0]), np.array([0, np.nan, 1]))
    with pytest.raises(ValueError, match="distinct"):
        linear_trend(np.ones(4), np.arange(4))
    with pytest.raises(ValueError, match="level"):
        linear_trend(np.arange(4), np.arange(4), level=1.5)
