"""Gaussian posteriors on a grid of prior variances, and a bound on one drawn network.

Chapter 07 (issue #27). Three pieces that the certificates need beyond
:mod:`genbounds.bounds.pac_bayes`:

* :func:`kl_terms`: ``KL(N(mu, diag s^2) || N(mu0, lam I))`` split into the **mean term**
  ``sum (mu - mu0)^2 / (2 lam)`` and the **variance term**
  ``sum (s^2/lam - 1 - log(s^2/lam)) / 2`` (each ``>= 0``; their sum is the KL);
* :func:`snap_to_grid`: the optimiser's continuous prior variance ``lam_c`` replaced by a grid
  value ``lam_j`` (the union bound needs a variance from a grid fixed in advance) **and** the
  posterior's standard deviations rescaled by ``sqrt(lam_j / lam_c)``, so that every ratio
  ``s_i^2 / lam`` the optimiser chose is kept. Rounding ``lam`` alone (version 1 of the chapter)
  makes every coordinate pay ``(r - 1 - log r) / 2`` with ``r = s_i^2 / lam_j`` up to ``e^{1/4}``:
  about 15 nats on 1,400 weights, all of the KL of a posterior that sits on its prior.
  :func:`grid_rounding_cost` measures what the grid still costs the final posterior: its KL at
  the grid variance minus its KL at the best variance of all (closed form);
* :func:`disintegrated_kl_bound` (Rivasplata et al. 2020, Thm 1(i); Viallard et al. 2024): a
  bound on the risk of **one network ``h`` drawn once from the posterior** ``Q`` (a deterministic
  predictor), with the log density ratio ``log dQ/dP(h)`` (:func:`log_density_ratio`) in place
  of the KL and no Monte Carlo term: with probability ``>= 1 - delta`` over the sample and the
  draw, ``kl(L_n(h) || L(h)) <= (log dQ/dP(h) + log(2 sqrt(n) G / delta)) / n``.

Every function raises ``ValueError`` naming the argument on bad input.
"""

from __future__ import annotations

import math

import numpy as np

from genbounds.bounds import pac_bayes as pb
from genbounds.validation import check_int, check_number, check_positive, check_probability

__all__ = [
    "best_prior_variance",
    "disintegrated_kl_bound",
    "grid_candidates",
    "grid_rounding_cost",
    "kl_terms",
    "log_density_ratio",
    "snap_to_grid",
]


def _vectors(mu: np.ndarray, sigma: np.ndarray, mu0: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    m = np.asarray(mu, dtype=np.float64).ravel()
    s = np.asarray(sigma, dtype=np.float64).ravel()
    m0 = np.asarray(mu0, dtype=np.float64).ravel()
    if not (m.shape == s.shape == m0.shape) or m.size == 0:
        raise ValueError(f"mu, sigma and mu0 must have the same non-zero size, got {m.shape}, "
                         f"{s.shape}, {m0.shape}")
    for name, v in (("mu", m), ("sigma", s), ("mu0", m0)):
        if not np.all(np.isfinite(v)):
            raise ValueError(f"{name} must be finite")
    if np.any(s <= 0):
        raise ValueError("sigma must be positive")
    return m, s, m0


def kl_terms(mu: np.ndarray, sigma: np.ndarray, mu0: np.ndarray,
             prior_var: float) -> dict[str, float]:
    """The KL of a diagonal Gaussian to an isotropic one, by part (nats)::

        mean     = sum_i (mu_i - mu0_i)^2 / (2 lam)
        variance = sum_i (r_i - 1 - log r_i) / 2,  r_i = sigma_i^2 / lam

    Both are ``>= 0`` (``r - 1 - log r >= 0``) and ``mean + variance = KL``
    (:func:`genbounds.bounds.pac_bayes.gaussian_kl`)."""
    m, s, m0 = _vectors(mu, sigma, mu0)
    lam = check_positive(prior_var, "prior_var")
    r = s * s / lam
    mean = float(np.sum((m - m0) ** 2) / (2.0 * lam))
    var = float(np.sum(r - 1.0 - np.log(r)) / 2.0)
    return {"mean": mean, "variance": max(var, 0.0), "total": mean + max(var, 0.0)}


def best_prior_variance(mu: np.ndarray, sigma: np.ndarray, mu0: np.ndarray) -> float:
    """``argmin_lam KL(Q || N(mu0, lam I)) = sum_i (sigma_i^2 + (mu_i - mu0_i)^2) / D``."""
    m, s, m0 = _vectors(mu, sigma, mu0)
    return float(np.mean(s * s + (m - m0) ** 2))


def grid_rounding_cost(mu: np.ndarray, sigma: np.ndarray, mu0: np.ndarray,
                       prior_var: float) -> float:
    """``KL(Q || N(mu0, lam I)) - min_v KL(Q || N(mu0, v I))``: what having ``lam`` on a grid
    costs this posterior, ``D (t - 1 - log t) / 2`` with ``t = lam* / lam`` (nats, ``>= 0``)."""
    lam = check_positive(prior_var, "prior_var")
    t = best_prior_variance(mu, sigma, mu0) / lam
    D = np.asarray(mu).size
    return float(max(D * (t - 1.0 - math.log(t)) / 2.0, 0.0))


def grid_candidates(sigma: np.ndarray, lam_continuous: float, grid: np.ndarray
                    ) -> list[tuple[np.ndarray, float, int]]:
    """The two grid values around ``lam_continuous`` (one at the ends of the grid), each with
    ``sigma`` rescaled by ``sqrt(lam_j / lam_continuous)``: ``[(sigma_j, lam_j, j), ...]``.
    Every ratio ``sigma_i^2 / lam`` the optimiser chose is kept."""
    s = np.asarray(sigma, dtype=np.float64).ravel()
    if s.size == 0 or not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise ValueError("sigma must be a non-empty vector of positive numbers")
    lc = check_positive(lam_continuous, "lam_continuous")
    g = np.asarray(grid, dtype=np.float64).ravel()
    if g.size == 0 or not np.all(np.isfinite(g)) or np.any(g <= 0):
        raise ValueError("grid must be a non-empty vector of positive numbers")
    order = sorted(np.argsort(np.abs(np.log(g) - math.log(lc)))[:2].tolist())
    return [(s * math.sqrt(float(g[j]) / lc), float(g[j]), int(j)) for j in order]


def snap_to_grid(mu: np.ndarray, sigma: np.ndarray, mu0: np.ndarray, lam_continuous: float,
                 grid: np.ndarray) -> tuple[np.ndarray, float, int]:
    """Of the :func:`grid_candidates`, the one with the smaller KL, as ``(sigma_j, lam_j, j)``.
    The posterior may depend on the data, and the union bound over the grid pays for any
    ``j``, so the choice costs nothing more (the experiment chooses by its training objective
    instead, which also weighs the error)."""
    m, s, m0 = _vectors(mu, sigma, mu0)
    best: tuple[float, np.ndarray, float, int] | None = None
    for sj, lj, j in grid_candidates(s, lam_continuous, grid):
        kl = kl_terms(m, sj, m0, lj)["total"]
        if best is None or kl < best[0]:
            best = (kl, sj, lj, j)
    assert best is not None
    return best[1], best[2], best[3]


def log_density_ratio(h: np.ndarray, mu: np.ndarray, sigma: np.ndarray, mu0: np.ndarray,
                      prior_var: float) -> float:
    """``log (dQ/dP)(h)`` for ``Q = N(mu, diag sigma^2)``, ``P = N(mu0, lam I)`` (nats). Its
    expectation under ``h ~ Q`` is ``KL(Q || P)``."""
    m, s, m0 = _vectors(mu, sigma, mu0)
    hh = np.asarray(h, dtype=np.float64).ravel()
    if hh.shape != m.shape or not np.all(np.isfinite(hh)):
        raise ValueError(f"h must be a finite vector of size {m.size}")
    lam = check_positive(prior_var, "prior_var")
    z = (hh - m) / s
    return float(np.sum(0.5 * np.log(lam / (s * s)) - 0.5 * z * z
                        + (hh - m0) ** 2 / (2.0 * lam)))


def disintegrated_kl_bound(empirical_risk: float, log_ratio: float, n: int, delta: float,
                           *, grid_size: int = 1) -> float:
    """Risk bound for one network ``h`` drawn once from the posterior (Rivasplata et al. 2020,
    Thm 1(i), with Maurer's ``2 sqrt(n)``; a union bound over ``grid_size`` priors).

    With probability ``>= 1 - delta`` over the sample of ``n >= 8`` points and the draw
    ``h ~ Q`` (``Q`` may depend on the sample; the priors may not)::

        kl(L_n(h) || L(h)) <= (log dQ/dP(h) + log(2 sqrt(n) grid_size / delta)) / n.

    ``empirical_risk`` is ``h``'s own error on the ``n`` points (no Monte Carlo). A negative
    right-hand side is replaced by 0 (a weaker statement)."""
    r = check_probability(empirical_risk, "empirical_risk", open_interval=False)
    lr = check_number(log_ratio, "log_ratio")
    nn = check_int(n, "n", minimum=8)
    d = check_probability(delta, "delta")
    g = check_int(grid_size, "grid_size")
    budget = (lr + math.log(2.0 * math.sqrt(nn) * g / d)) / nn
    return pb.kl_inverse_upper(r, max(budget, 0.0))
