"""PAC-Bayes certificates: kl inversion, the three forms, the Gaussian KL, Monte Carlo and the
test-set bound, each against an independent computation (closed forms, scipy)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from genbounds.bounds import pac_bayes as pb
from genbounds.bounds.registry import BoundKind, Verdict, get

probs = st.floats(0.0, 1.0, allow_nan=False)
budgets = st.floats(0.0, 5.0, allow_nan=False)


@pytest.mark.parametrize("b", [1e-6, 0.01, 0.3, 2.0])
def test_kl_inverse_closed_form_at_zero_error(b: float) -> None:
    # kl(0 || p) = -log(1 - p), so the inverse is 1 - exp(-b)
    assert abs(pb.kl_inverse_upper(0.0, b) - (-math.expm1(-b))) < 1e-9


@pytest.mark.parametrize("q,b", [(0.05, 0.01), (0.2, 0.1), (0.5, 0.05), (0.9, 0.01)])
def test_kl_inverse_against_brentq(q: float, b: float) -> None:
    root = optimize.brentq(lambda p: pb.binary_kl(q, p) - b, q, 1 - 1e-15, xtol=1e-14)
    assert abs(pb.kl_inverse_upper(q, b) - root) < 1e-9
    low = optimize.brentq(lambda p: pb.binary_kl(q, p) - b, 1e-15, q, xtol=1e-14)
    assert abs(pb.kl_inverse_lower(q, b) - low) < 1e-9


@settings(max_examples=60, deadline=None)
@given(probs, budgets, budgets)
def test_kl_inverse_monotone_and_in_unit_interval(q: float, b1: float, b2: float) -> None:
    lo, hi = sorted((b1, b2))
    a, c = pb.kl_inverse_upper(q, lo), pb.kl_inverse_upper(q, hi)
    assert q - 1e-12 <= a <= c <= 1.0
    assert pb.binary_kl(q, a) <= lo + 1e-9
    assert 0.0 <= pb.kl_inverse_lower(q, lo) <= q + 1e-12


@settings(max_examples=60, deadline=None)
@given(probs, st.floats(0.0, 200.0), st.integers(8, 100000), st.floats(1e-4, 0.5))
def test_forms_above_empirical_and_kl_below_mcallester(r: float, kl: float, n: int,
                                                       d: float) -> None:
    k = pb.pac_bayes_kl(r, kl, n, d)
    m = pb.pac_bayes_mcallester(r, kl, n, d)
    assert r - 1e-12 <= k <= 1.0
    assert k <= m + 1e-9  # Pinsker
    assert r - 1e-12 <= pb.pac_bayes_catoni(r, kl, n, d, 2.0)


def test_closed_forms_at_zero_empirical_error() -> None:
    n, kl, d = 400, 10.0, 0.05
    B = (kl + math.log(2 * math.sqrt(n) / d)) / n
    assert abs(pb.pac_bayes_kl(0.0, kl, n, d) - (-math.expm1(-B))) < 1e-9
    assert abs(pb.pac_bayes_mcallester(0.0, kl, n, d) - math.sqrt(B / 2)) < 1e-12
    C = 3.0
    cat = (1 - math.exp(-(kl + math.log(1 / d)) / n)) / (1 - math.exp(-C))
    assert abs(pb.pac_bayes_catoni(0.0, kl, n, d, C) - cat) < 1e-12


def test_catoni_never_below_kl_form_with_same_log_term() -> None:
    # kl(q||p) <= B implies the Catoni form for every C is >= the kl inverse (same log term)
    n, d = 500, 0.05
    for r in (0.0, 0.05, 0.2):
        for kl in (0.0, 5.0, 50.0):
            B = (kl + math.log(1 / d)) / n
            inv = pb.kl_inverse_upper(r, B)
            for C in (0.1, 1.0, 5.0, 20.0):
                assert pb.pac_bayes_catoni(r, kl, n, d, C) >= inv - 1e-9


def test_union_bound_grid_costs_log_grid_size() -> None:
    a = pb.pac_bayes_kl(0.0, 0.0, 1000, 0.05, grid_size=16)
    b = pb.pac_bayes_kl(0.0, math.log(16), 1000, 0.05)
    assert abs(a - b) < 1e-9


def test_gaussian_kl_against_monte_carlo_and_zero() -> None:
    rng = np.random.default_rng(0)
    mu, mu0 = rng.normal(size=5), rng.normal(size=5)
    s, lam = rng.uniform(0.2, 1.0, size=5), 0.7
    assert pb.gaussian_kl(mu0, np.full(5, math.sqrt(lam)), mu0, lam) < 1e-12
    x = mu + s * rng.normal(size=(200000, 5))
    logq = stats.norm.logpdf(x, mu, s).sum(1)
    logp = stats.norm.logpdf(x, mu0, math.sqrt(lam)).sum(1)
    mc = float(np.mean(logq - logp))
    assert abs(pb.gaussian_kl(mu, s, mu0, lam) - mc) < 0.05


def test_sample_convergence_is_an_upper_bound_at_its_level() -> None:
    rng = np.random.default_rng(1)
    p, m, d = 0.1, 200, 0.1
    misses = sum(pb.sample_convergence_bound(rng.binomial(1, p, m).astype(float), d) < p
                 for _ in range(400))
    assert misses / 400 <= d
    assert pb.sample_convergence_bound(np.zeros(10), 0.05) == pytest.approx(
        -math.expm1(-math.log(20) / 10), abs=1e-9)


def test_gaussian_certificate_pays_every_part() -> None:
    c = pb.gaussian_certificate(0.02, 1000, 30.0, 400, 0.05, mc_share=0.2, grid_size=16)
    assert c["mc_upper"] > 0.02
    assert c["bound"] == pytest.approx(pb.pac_bayes_kl(c["mc_upper"], 30.0, 400, 0.04,
                                                       grid_size=16), abs=1e-12)
    assert c["bound"] <= c["mcallester"]


@pytest.mark.parametrize("k,m,d", [(0, 100, 0.05), (3, 400, 0.05), (50, 200, 0.01),
                                   (199, 200, 0.1)])
def test_binomial_tail_against_scipy(k: int, m: int, d: float) -> None:
    for p in (0.01, 0.1, 0.5, 0.93):
        assert abs(pb.binomial_cdf(k, m, p) - stats.binom.cdf(k, m, p)) < 1e-10
    # the one-sided Clopper-Pearson upper limit is the beta quantile
    assert abs(pb.binomial_tail_inverse(k, m, d) - stats.beta.ppf(1 - d, k + 1, m - k)) < 1e-9
    if k > 0:
        assert abs(pb.binomial_tail_inverse_lower(k, m, d) - stats.beta.ppf(d, k, m - k + 1)) \
            < 1e-9


def test_bad_input_names_the_argument() -> None:
    for call, name in ((lambda: pb.kl_inverse_upper(1.5, 0.1), "q"),
                       (lambda: pb.kl_inverse_upper(0.1, -1.0), "budget"),
                       (lambda: pb.pac_bayes_kl(0.1, 1.0, 4, 0.05), "n"),
                       (lambda: pb.pac_bayes_kl(0.1, 1.0, 40, 0.0), "delta"),
                       (lambda: pb.pac_bayes_catoni(0.1, 1.0, 40, 0.05, 0.0), "C"),
                       (lambda: pb.binomial_tail_inverse(5, 4, 0.05), "k"),
                       (lambda: pb.gaussian_kl(np.ones(2), -np.ones(2), np.ones(2), 1.0),
                        "sigma"),
                       (lambda: pb.sample_convergence_bound([1.2], 0.1), "mc_errors")):
        with pytest.raises(ValueError, match=name):
            call()


def test_registered_forms() -> None:
    for key in ("certificates.pac_bayes_kl.audited", "certificates.pac_bayes_mcallester.audited",
                "certificates.pac_bayes_catoni.audited", "certificates.test_set.audited",
                "certificates.gaussian_init_prior.audited",
                "certificates.gaussian_data_prior.audited"):
        b = get(key)
        assert b.kind is BoundKind.TRUE_LOSS and b.verdict is Verdict.HOLDS and b.audit
    v = get("certificates.pac_bayes_kl.audited").evaluate({"empirical_risk": 0.0, "kl": 5.0,
                                                            "n": 400})
    assert v.proved and v.value == pytest.approx(pb.pac_bayes_kl(0.0, 5.0, 400, 0.05))
    t = get("certificates.test_set.audited").evaluate({"errors": 3, "n_test": 400})
    assert t.value == pytest.approx(stats.beta.ppf(0.95, 4, 397), abs=1e-9)
    g = get("certificates.gaussian_data_prior.audited").evaluate(
        {"mc_error": 0.01, "mc_samples": 500, "kl": 3.0, "n": 200, "n_prior": 200})
    assert "data-dependent" in g.choices["prior"] and g.value > 0.01
