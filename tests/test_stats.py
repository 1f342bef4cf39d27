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


# ------------------------------------------------------- rank correlations and sign errors
def test_kendall_tau_by_hand_and_against_scipy() -> None:
    from genbounds.stats import kendall_tau

    # pairs (0,1) +1, (0,2) +1, (1,2) -1: tau = 1/3
    assert kendall_tau([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    # a tie in x: sum 2, n0 = 3, n_x = 1, n_y = 0 -> 2 / sqrt(2 * 3)
    assert kendall_tau([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / np.sqrt(6))
    assert np.isnan(kendall_tau([1, 1, 1], [1, 2, 3]))
    rng = np.random.default_rng(0)
    for n in (5, 17, 40):
        x = rng.integers(0, 6, n).astype(float)
        y = x + rng.normal(0, 2, n)
        assert kendall_tau(x, y) == pytest.approx(st.kendalltau(x, y).statistic, abs=1e-12)
    with pytest.raises(ValueError, match="equal length"):
        kendall_tau([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="x must"):
        kendall_tau([1], [1])
    with pytest.raises(ValueError, match="finite"):
        kendall_tau([1, np.nan], [1, 2])


def _grid() -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    # models at (f1, f2) = (0,0), (1,0), (0,1), (1,1)
    factors = {"f1": np.array([0, 1, 0, 1]), "f2": np.array([0, 0, 1, 1])}
    return np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.0, 2.0, 4.0, 3.0]), factors


def test_granulated_tau_by_hand() -> None:
    from genbounds.stats import granulated_tau

    m, g, f = _grid()
    res = granulated_tau(m, g, f)
    # f1: at f2=0 models 0,1 agree (+1); at f2=1 models 2,3 disagree (-1): psi = 0
    # f2: at f1=0 models 0,2 agree; at f1=1 models 1,3 agree: psi = 1;  Psi = 1/2
    assert res.per_factor == {"f1": 0.0, "f2": 1.0}
    assert res.overall == 0.5 and res.n_groups == {"f1": 2, "f2": 2}
    # breaking it: swapping the gaps of models 0 and 1 flips psi_f1's first group
    g2 = g.copy()
    g2[[0, 1]] = g2[[1, 0]]
    assert granulated_tau(m, g2, f).per_factor["f1"] == -1.0
    with pytest.raises(ValueError, match="factors"):
        granulated_tau(m, g, {"f1": np.array([0, 1])})


def test_coupled_pairs_and_robust_sign_error_by_hand() -> None:
    from genbounds.stats import coupled_pairs, mc_noise_threshold, robust_sign_error

    m, g, f = _grid()
    pairs = coupled_pairs(m, g, f)
    got = {(int(a), int(b)): (str(fa), float(e))
           for a, b, fa, e in zip(pairs.a, pairs.b, pairs.factor, pairs.error, strict=True)}
    assert got == {(0, 1): ("f1", 0.0), (0, 2): ("f2", 0.0), (1, 3): ("f2", 0.0),
                   (2, 3): ("f1", 1.0)}
    avg, worst, per = robust_sign_error(pairs)
    assert avg == 0.25 and worst == 0.5 and per == {"f1": 0.5, "f2": 0.0}
    # environments with fewer kept pairs than min_pairs do not enter the worst case
    assert robust_sign_error(pairs, min_pairs=3)[1] != robust_sign_error(pairs, min_pairs=3)[1]
    with pytest.raises(ValueError, match="min_pairs"):
        robust_sign_error(pairs, min_pairs=0)
    # pair (2, 3) has |g_2 - g_3| = 1: a noise level of 1.5 leaves it out
    noise = np.zeros((4, 4))
    noise[2, 3] = 1.5
    avg, worst, _ = robust_sign_error(coupled_pairs(m, g, f, noise=noise))
    assert avg == 0.0 and worst == 0.0
    # a tie in the measure costs 1/2; groups never pair across tasks
    tie = coupled_pairs(np.array([1.0, 1.0, 3.0, 4.0]), g, f)
    assert tie.error[(tie.a == 0) & (tie.b == 1)][0] == 0.5
    grouped = coupled_pairs(m, g, f, group=np.array(["x", "x", "y", "y"]))
    assert set(grouped.environment) == {"x/f1", "y/f1"}
    assert mc_noise_threshold(0.1, 0.2, 100, 100, z=2.0) == pytest.approx(0.1)
    with pytest.raises(ValueError, match="err_a"):
        mc_noise_threshold(1.5, 0.2, 100, 100)
    with pytest.raises(ValueError, match="noise"):
        coupled_pairs(m, g, f, noise=np.zeros((3, 3)))


def test_bootstrap_interval() -> None:
    from genbounds.stats import bootstrap_interval

    x = np.arange(20.0)
    lo, hi = bootstrap_interval(lambda i: float(x[i].mean()), 20, n_boot=500, seed=1)
    assert lo < x.mean() < hi and hi - lo < 10
    const = bootstrap_interval(lambda i: 3.0, 5, n_boot=20)
    assert const == (3.0, 3.0)
    strat = bootstrap_interval(lambda i: float(np.sum(i < 10)), 20, n_boot=50,
                               strata=np.repeat([0, 1], 10))
    assert strat == (10.0, 10.0)  # each stratum keeps its size
    with pytest.raises(ValueError, match="n_boot"):
        bootstrap_interval(lambda i: 1.0, 5, n_boot=1)
