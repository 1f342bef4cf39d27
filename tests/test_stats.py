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


# ------------------------------------------- Jiang's tau (ties 0) and Dziugaite's environments
def test_jiang_tau_scores_ties_zero_and_equals_tau_b_without_ties() -> None:
    from genbounds.stats import granulated_tau, jiang_tau, kendall_tau

    # ordered pairs of (1,2,3) vs (1,3,2): +1, +1, -1 (each twice): mean 1/3
    assert jiang_tau([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    assert jiang_tau([5, 5, 5], [1, 2, 3]) == 0.0  # constant measure: 0, tau_b undefined
    assert jiang_tau([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / 3)  # tau_a: 2 of 3 pairs
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=12), rng.normal(size=12)
    assert jiang_tau(x, y) == pytest.approx(kendall_tau(x, y))
    m, g, f = _grid()
    flat = np.array([1.0, 1.0, 3.0, 4.0])  # constant in f1's first group
    jt = granulated_tau(flat, g, f)
    # f1: group f2=0 is constant -> 0 (Jiang), group f2=1 disagrees -> -1: psi = -1/2
    assert jt.per_factor["f1"] == -0.5 and jt.n_constant["f1"] == 1
    # tau_b leaves the constant group out: psi_f1 = -1 from the one remaining group
    tb = granulated_tau(flat, g, f, tau="b")
    assert tb.per_factor["f1"] == -1.0 and tb.n_groups["f1"] == 1
    with pytest.raises(ValueError, match="tau"):
        granulated_tau(m, g, f, tau="c")


def test_hoeffding_weight_by_hand() -> None:
    from genbounds.stats import hoeffding_weight

    # (1 - 2 exp(-2 n (d/2)^2))^2 at n = 10,000, d = 0.02: exp(-2) -> (1 - 2 e^-2)^2
    assert float(hoeffding_weight(0.02, 10_000)) == pytest.approx((1 - 2 * np.exp(-2)) ** 2)
    assert float(hoeffding_weight(0.0, 10_000)) == 0.0  # clipped at 0
    assert float(hoeffding_weight(1.0, 10_000)) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="n must"):
        hoeffding_weight(0.1, 0)
    with pytest.raises(ValueError, match="delta_gap"):
        hoeffding_weight(np.nan, 10)


def _env_data(n_seeds: int = 4) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray], np.ndarray]:
    # three settings of f1 (0, 1, 2), f2 = 0, n_seeds seeds each; gap = 0.1 * f1 + tiny seed shift
    f1 = np.repeat([0, 1, 2], n_seeds)
    seed = np.tile(np.arange(n_seeds), 3)
    gap = 0.1 * f1 + 0.001 * seed
    return f1.astype(float), gap, {"f1": f1, "f2": np.zeros_like(f1), "seed": seed}, \
        np.full(f1.size, 10_000.0)


def test_dziugaite_sign_errors_by_hand() -> None:
    from genbounds.stats import dziugaite_sign_errors

    m, g, f, nt = _env_data()
    res = dziugaite_sign_errors(m, g, f, nt)
    # environments: (0,1), (0,2), (1,2); 16 seed pairs each, every gap difference ~0.1 -> weight
    # (1 - 2 e^{-50})^2 - 1/2 ~ 1/2 for all: ESS = 16 >= 12, and the measure orders all right
    assert len(res.environments) == 3 and res.n_kept == 3
    assert all(e["pairs"] == 16 and e["ess"] == pytest.approx(16.0) for e in res.environments)
    assert res.robust == 0.0 and res.average == 0.0
    # reverse the measure in one environment only (setting f1 = 2 now scores below f1 = 1)
    m2 = m.copy()
    m2[f["f1"] == 2] = 0.5
    res2 = dziugaite_sign_errors(m2, g, f, nt)
    losses = {e["label"]: e["loss"] for e in res2.environments}
    assert losses == {"0/f1: 0 vs 1": 0.0, "0/f1: 0 vs 2": 0.0, "0/f1: 1 vs 2": 1.0}
    assert res2.robust == 1.0 and res2.worst == "0/f1: 1 vs 2"
    # the pooled mean over the three environments (1/3) is below the robust maximum (1)
    assert res2.average == pytest.approx(1 / 3)
    # too few seeds: 3 x 3 = 9 pairs, ESS <= 9 < 12, no environment is kept
    m3, g3, f3, nt3 = _env_data(3)
    few = dziugaite_sign_errors(m3, g3, f3, nt3)
    assert few.n_kept == 0 and np.isnan(few.robust)
    assert dziugaite_sign_errors(m3, g3, f3, nt3, min_ess=9).n_kept == 3
    # gap differences within the noise get weight 0 (n = 50: d <= 0.21 gives w < 1/2)
    tiny = dziugaite_sign_errors(m, g, f, np.full(m.size, 50.0))
    assert all(e["ess"] == 0.0 for e in tiny.environments) and tiny.n_kept == 0


def test_dziugaite_bad_input() -> None:
    from genbounds.stats import dziugaite_sign_errors

    m, g, f, nt = _env_data()
    with pytest.raises(ValueError, match="n_test"):
        dziugaite_sign_errors(m, g, f, nt[:3])
    with pytest.raises(ValueError, match="min_ess"):
        dziugaite_sign_errors(m, g, f, nt, min_ess=0)
    with pytest.raises(ValueError, match="seed_factor"):
        dziugaite_sign_errors(m, g, {"f1": f["f1"]}, nt)
    with pytest.raises(ValueError, match="measure"):
        dziugaite_sign_errors(np.full(m.size, np.nan), g, f, nt)
    with pytest.raises(ValueError, match="min_weight"):
        dziugaite_sign_errors(m, g, f, nt, min_weight=1.0)


# ---------------------------------------------------------------- property tests (bad input)
hyp = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as hs  # noqa: E402

_floats = hs.floats(allow_nan=True, allow_infinity=True, width=64)


@settings(max_examples=60, deadline=None)
@given(hs.lists(_floats, min_size=2, max_size=8), hs.lists(_floats, min_size=2, max_size=8))
def test_rank_statistics_finite_or_valueerror(x: list[float], y: list[float]) -> None:
    from genbounds.stats import jiang_tau, kendall_tau

    for fn in (jiang_tau, kendall_tau):
        try:
            v = fn(x, y)
        except ValueError as e:
            assert any(w in str(e) for w in ("x", "y"))
            continue
        assert np.isfinite(v) and -1 <= v <= 1 or (fn is kendall_tau and np.isnan(v)
                                                   and (np.ptp(x) == 0 or np.ptp(y) == 0))


@settings(max_examples=40, deadline=None)
@given(hs.lists(hs.floats(-1, 1), min_size=12, max_size=12),
       hs.lists(hs.floats(-1, 1), min_size=12, max_size=12))
def test_dziugaite_losses_are_in_unit_interval(m: list[float], g: list[float]) -> None:
    from genbounds.stats import dziugaite_sign_errors

    _, _, f, nt = _env_data()
    res = dziugaite_sign_errors(np.array(m), np.array(g), f, nt, min_ess=1)
    for e in res.environments:
        assert np.isnan(e["loss"]) or 0 <= e["loss"] <= 1
    assert np.isnan(res.robust) or 0 <= res.robust <= 1


def test_granulated_tau_equals_the_loop_over_groups() -> None:
    """One pass over all pairs per factor gives the loop's answer (genbounds.bench's reference),
    with ties in the measure and the gap, repeated models (a bootstrap resample) and factors of
    numbers and of strings; and a swapped gap changes both alike."""
    from genbounds.bench import granulated_tau_loop
    from genbounds.stats import granulated_tau

    rng = np.random.default_rng(7)
    for trial in range(60):
        n = int(rng.integers(3, 40))
        m = rng.integers(0, 4, n).astype(float) if trial % 2 else rng.normal(size=n)
        g = rng.integers(0, 3, n).astype(float)
        f = {"a": rng.integers(0, 3, n).astype(float), "b": rng.integers(0, 2, n).astype(float),
             "c": np.array(["x", "y"], dtype=object)[rng.integers(0, 2, n)]}
        idx = rng.integers(0, n, n)  # a resample with repeats
        for mm, gg, ff in ((m, g, f), (m[idx], g[idx], {k: v[idx] for k, v in f.items()})):
            got, want = granulated_tau(mm, gg, ff).overall, granulated_tau_loop(mm, gg, ff)
            assert got == pytest.approx(want, abs=1e-12) or (np.isnan(got) and np.isnan(want))
