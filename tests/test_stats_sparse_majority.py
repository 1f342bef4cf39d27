"""The statistics chapter 02 reads the sparse-majority protocol with: per-group t-intervals,
Wilson intervals of an accuracy, and times to fit that a cap censors (Kaplan-Meier, a rank
trend that is exact when every censored time lies above every observed one)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from genbounds.stats import (
    censored_rank_trend,
    group_intervals,
    kaplan_meier,
    proportion_interval,
)


def test_group_intervals_match_scipy_per_group() -> None:
    rng = np.random.default_rng(0)
    g = np.repeat([20, 40, 60], 5)
    v = rng.normal(size=g.size) + g / 20
    r = group_intervals(g, v, level=0.9)
    assert r.groups.tolist() == [20, 40, 60] and r.n.tolist() == [5, 5, 5]
    for i, lab in enumerate(r.groups):
        x = v[g == lab]
        ci = st.ttest_1samp(x, 0.0).confidence_interval(0.9)
        assert (r.ci_low[i], r.ci_high[i]) == pytest.approx((ci.low, ci.high))
        assert r.mean[i] == pytest.approx(x.mean()) and r.maximum[i] == x.max()
        assert r.minimum[i] == x.min() and r.sd[i] == pytest.approx(x.std(ddof=1))


def test_group_of_one_has_no_interval_and_bad_input_is_named() -> None:
    r = group_intervals([1, 2, 2], [0.5, 1.0, 2.0])
    assert math.isnan(r.ci_low[0]) and math.isnan(r.sd[0]) and r.mean[0] == 0.5
    with pytest.raises(ValueError, match="equal length"):
        group_intervals([1, 2], [1.0])
    with pytest.raises(ValueError, match="level"):
        group_intervals([1, 1], [1.0, 2.0], level=1.0)


def test_wilson_interval_by_hand_and_coverage() -> None:
    lo, hi = proportion_interval(0, 10)
    assert float(lo) == 0.0 and float(hi) == pytest.approx(0.2775, abs=1e-4)
    lo, hi = proportion_interval(np.array([50]), np.array([100]))
    assert (float(lo[0]), float(hi[0])) == pytest.approx((0.4038, 0.5962), abs=1e-4)
    rng = np.random.default_rng(1)
    k = rng.binomial(1000, 0.8, size=4000)
    lo, hi = proportion_interval(k, 1000)
    assert 0.935 < np.mean((lo <= 0.8) & (0.8 <= hi)) < 0.965
    with pytest.raises(ValueError, match="successes"):
        proportion_interval(11, 10)


def test_kaplan_meier_by_hand() -> None:
    km = kaplan_meier([1, 2, 3, 4, 5], np.array([True, False, True, True, False]))
    assert km.times.tolist() == [1, 3, 4]
    assert km.survival == pytest.approx([0.8, 0.8 * 2 / 3, 0.8 * 2 / 3 * 1 / 2])
    assert km.median == 4 and (km.n_events, km.n_censored) == (3, 2)


def test_kaplan_meier_without_censoring_is_the_empirical_curve() -> None:
    t = np.array([5.0, 1.0, 3.0, 3.0, 9.0])
    km = kaplan_meier(t, np.ones(5, dtype=bool))
    assert km.survival == pytest.approx([0.8, 0.4, 0.2, 0.0])
    assert km.median == 3.0


def test_kaplan_meier_median_beyond_the_cap_is_nan() -> None:
    cap = 200_000
    km = kaplan_meier([120_000, 150_000, cap, cap, cap], np.array([1, 1, 0, 0, 0], dtype=bool))
    assert math.isnan(km.median) and km.survival[-1] == pytest.approx(0.6)
    with pytest.raises(ValueError, match="boolean"):
        kaplan_meier([1, 2], [1, 0])


def test_censored_rank_trend_without_censoring_is_kendall() -> None:
    rng = np.random.default_rng(2)
    x = np.repeat(np.arange(20, 220, 20), 5).astype(float)
    t = x * 1000 + rng.normal(scale=40_000, size=x.size)
    r = censored_rank_trend(x, t, np.ones(x.size, dtype=bool), n_permutations=2000)
    assert r.tau == pytest.approx(st.kendalltau(x, t).statistic)
    assert r.p_value_permutation < 0.01 and r.n_censored == 0


def test_censored_times_rank_above_every_fit() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0])
    t = np.array([10.0, 20.0, 30.0, 30.0])
    obs = np.array([True, True, True, False])  # the last one censored at the cap 30
    r = censored_rank_trend(x, t, obs, n_permutations=500)
    assert r.tau == pytest.approx(1.0) and r.n_censored == 1
    # treating the censored run as a fit at the cap ties it with run 3: tau drops below 1
    assert st.kendalltau(x, t).statistic < 1.0


def test_censored_rank_trend_refuses_an_unknown_order() -> None:
    with pytest.raises(ValueError, match="order is unknown"):
        censored_rank_trend([1, 2, 3], [10.0, 5.0, 20.0], np.array([True, False, True]))
    with pytest.raises(ValueError, match="two distinct"):
        censored_rank_trend([1, 1, 1], [1.0, 2.0, 3.0], np.ones(3, dtype=bool))


def test_no_trend_is_not_significant() -> None:
    rng = np.random.default_rng(3)
    x = np.repeat(np.arange(10.0), 5)
    t = rng.permutation(np.arange(50.0))
    r = censored_rank_trend(x, t, np.ones(50, dtype=bool), n_permutations=2000)
    assert r.p_value_permutation > 0.05
