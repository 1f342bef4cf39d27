"""genbounds.bounds.derandomise: the KL by part, the grid snap, the one-draw bound."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from genbounds.bounds import derandomise as dr
from genbounds.bounds import pac_bayes as pb


def _gauss(D: int = 50, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=D), np.exp(rng.normal(-2, 0.3, size=D)), rng.normal(size=D)


def test_kl_terms_add_up_to_the_direct_kl() -> None:
    mu, s, mu0 = _gauss()
    lam = 0.3
    t = dr.kl_terms(mu, s, mu0, lam)
    direct = torch.distributions.kl_divergence(
        torch.distributions.Normal(torch.tensor(mu), torch.tensor(s)),
        torch.distributions.Normal(torch.tensor(mu0),
                                   torch.tensor(math.sqrt(lam), dtype=torch.float64))).sum()
    assert t["mean"] >= 0 and t["variance"] >= 0
    assert math.isclose(t["mean"] + t["variance"], float(direct), rel_tol=1e-10)
    assert math.isclose(t["total"], pb.gaussian_kl(mu, s, mu0, lam), rel_tol=1e-10)
    # the mean term alone is the KL of two Gaussians with the same variances
    same = dr.kl_terms(mu, np.full_like(s, math.sqrt(lam)), mu0, lam)
    assert math.isclose(same["variance"], 0.0, abs_tol=1e-12)
    assert math.isclose(same["mean"], float(np.sum((mu - mu0) ** 2) / (2 * lam)))


def test_log_density_ratio_averages_to_the_kl() -> None:
    mu, s, mu0 = _gauss(D=20)
    lam = 0.5
    rng = np.random.default_rng(1)
    vals = [dr.log_density_ratio(mu + s * rng.normal(size=mu.size), mu, s, mu0, lam)
            for _ in range(4000)]
    kl = pb.gaussian_kl(mu, s, mu0, lam)
    assert abs(np.mean(vals) - kl) < 4 * np.std(vals) / math.sqrt(len(vals))


def test_best_prior_variance_and_rounding_cost() -> None:
    mu, s, mu0 = _gauss()
    lam_star = dr.best_prior_variance(mu, s, mu0)
    kls = [pb.gaussian_kl(mu, s, mu0, lam_star * f) for f in (0.9, 1.0, 1.1)]
    assert kls[1] < kls[0] and kls[1] < kls[2]
    assert dr.grid_rounding_cost(mu, s, mu0, lam_star) == pytest.approx(0.0, abs=1e-9)
    lam = 1.3 * lam_star
    assert dr.grid_rounding_cost(mu, s, mu0, lam) == pytest.approx(
        pb.gaussian_kl(mu, s, mu0, lam) - kls[1], rel=1e-9)


def test_snap_keeps_the_variance_ratios_and_removes_the_rounding_artefact() -> None:
    # a posterior sitting on its prior (the data-dependent case): sigma^2 = lam_c, mu = mu0
    D = 1400
    mu0 = np.zeros(D)
    lam_c = 0.05 * math.exp(0.24)  # almost half-way between two grid values exp(-j/2)
    s = np.full(D, math.sqrt(lam_c))
    grid = pb.prior_variance_grid()
    sig, lam, j = dr.snap_to_grid(mu0, s, mu0, lam_c, grid)
    assert lam == grid[j]
    assert np.allclose(sig**2 / lam, s**2 / lam_c)
    snapped = pb.gaussian_kl(mu0, sig, mu0, lam)
    nearest = float(grid[np.argmin(np.abs(np.log(grid) - math.log(lam_c)))])
    v1 = pb.gaussian_kl(mu0, s, mu0, nearest)  # version 1: lam rounded, sigma kept
    assert snapped < 1e-9 and v1 > 5.0  # the artefact: several nats for nothing
    for sj, lj, jj in dr.grid_candidates(s, lam_c, grid):
        assert lj == grid[jj] and np.allclose(sj**2 / lj, s**2 / lam_c)


def test_disintegrated_bound() -> None:
    # with a zero log ratio and one prior it is the PAC-Bayes-kl bound at KL = 0
    assert dr.disintegrated_kl_bound(0.05, 0.0, 200, 0.05) == pytest.approx(
        pb.pac_bayes_kl(0.05, 0.0, 200, 0.05), rel=1e-12)
    a = dr.disintegrated_kl_bound(0.05, 3.0, 200, 0.05, grid_size=32)
    b = dr.disintegrated_kl_bound(0.05, 6.0, 200, 0.05, grid_size=32)
    assert 0.05 < a < b < 1
    # a very negative log ratio is replaced by a zero budget: the empirical risk itself
    assert dr.disintegrated_kl_bound(0.05, -1e6, 200, 0.05) == pytest.approx(0.05)


@pytest.mark.parametrize(("call", "name"), [
    (lambda: dr.kl_terms(np.ones(3), -np.ones(3), np.ones(3), 1.0), "sigma"),
    (lambda: dr.kl_terms(np.ones(3), np.ones(3), np.ones(3), 0.0), "prior_var"),
    (lambda: dr.kl_terms(np.ones(3), np.ones(2), np.ones(3), 1.0), "mu, sigma and mu0"),
    (lambda: dr.snap_to_grid(np.ones(3), np.ones(3), np.ones(3), -1.0, np.ones(2)),
     "lam_continuous"),
    (lambda: dr.snap_to_grid(np.ones(3), np.ones(3), np.ones(3), 1.0, np.array([])), "grid"),
    (lambda: dr.log_density_ratio(np.ones(2), np.ones(3), np.ones(3), np.ones(3), 1.0), "h"),
    (lambda: dr.disintegrated_kl_bound(1.5, 0.0, 100, 0.05), "empirical_risk"),
    (lambda: dr.disintegrated_kl_bound(0.1, math.nan, 100, 0.05), "log_ratio"),
    (lambda: dr.disintegrated_kl_bound(0.1, 0.0, 4, 0.05), "n"),
    (lambda: dr.disintegrated_kl_bound(0.1, 0.0, 100, 0.0), "delta"),
])
def test_bad_input_names_the_argument(call: object, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        call()  # type: ignore[operator]
