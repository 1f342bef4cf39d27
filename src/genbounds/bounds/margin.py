"""Margin derandomisation: a PAC-Bayes certificate of ONE deterministic network (chapter 07).

The trained network ``f_w`` itself is certified (not a Gibbs predictor, not a drawn network)
in the style of Neyshabur et al. (2018), with the perturbation bounded over the whole input
**domain** instead of the sample. Notation: binary outputs ``f_w(x)``, labels ``y in {-1, +1}``,
margin loss ``l_g(w, (x, y)) = 1[y f_w(x) < g]``; ``l_0`` is the 0-1 error with ties counted as
errors (at least the book's 0-1 error, which gives an output of exactly 0 to class 0).

1. ``E = {u : sup_{x in X} |f_{w+u}(x) - f_w(x)| < gamma / 2}`` (``X`` the domain). On ``E``,
   ``l_0(w) <= l_{gamma/2}(w + u)`` and ``l_{gamma/2}(w + u) <= l_gamma(w)`` at every point, so
   ``L_0(w) <= E_{Q~} L_{gamma/2}`` and ``E_{Q~} Lhat_{gamma/2} <= Lhat_gamma(w)`` for
   ``Q = N(w, sigma^2 I)``, ``Q~ = Q(. | E)``, ``Z = Q(E)``.
2. :func:`conditioned_kl_bound`: ``KL(Q~ || P) <= (KL(Q || P) + 1/e) / Z - log Z``, decreasing
   in ``Z`` (a lower confidence limit of ``Z`` may be used).
3. :func:`margin_certificate`: PAC-Bayes-kl (Maurer 2004) for ``l_{gamma/2}`` with a union bound
   over a grid of ``G`` cells: ``L_0(w) <= kl^{-1}(Lhat_gamma(w), (KL~ + log(2 sqrt(n) G /
   delta_1)) / n)``.
4. ``Z`` by Monte Carlo: the count of draws whose **sound upper bound** on the perturbation
   (:func:`shallow_perturbation_bound`) is below ``gamma / 2`` is binomial with a mean at most
   ``Z``; its lower Clopper-Pearson limit (:func:`z_lower`) is a lower limit of ``Z``.
5. :func:`shallow_perturbation_bound`: for the shallow encoder
   ``f(X) = w_O^T (1/T) sum_t relu(W_V z_t)``, ``z_t = sum_s A_ts x_s``,
   ``A = softmax(X M X^T)``, ``M = W_Q^T W_K / sqrt(d_m)``, with every token of every input of
   the domain of Euclidean norm at most ``B``::

       sup_X |df| <= B [ ||dw_O|| ||W_V'||_2
                         + ||w_O|| ( ||dW_V||_2 + ||W_V||_2 min(2, ||dM||_2 B^2) ) ]

   (``W_V' = W_V + dW_V``; the softmax step is :func:`softmax_l1_bound`: ``||softmax(a + D) -
   softmax(a)||_1 <= min(2, osc(D) / 2) <= min(2, max |D|)``, half the constant of the usual
   ``osc(D)``; ``|D_ts| = |x_t^T dM x_s| <= ||dM||_2 B^2``).

Every function raises ``ValueError`` naming the argument on bad input.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from genbounds.bounds import pac_bayes as pb
from genbounds.validation import (
    check_int,
    check_nonnegative,
    check_positive,
    check_probability,
)

__all__ = [
    "GAMMA_GRID",
    "LAMBDA_GRID",
    "SIGMA_GRID",
    "best_grid_kl",
    "conditioned_kl_bound",
    "grid_size",
    "isotropic_kl",
    "margin_certificate",
    "needed_n",
    "shallow_perturbation_bound",
    "softmax_l1_bound",
    "z_lower",
]

#: Margins ``gamma = 10^{-2 + k/4}``, ``k = 0..22`` (0.01 to 31.6), fixed before any data.
GAMMA_GRID: np.ndarray = 10.0 ** (-2.0 + np.arange(23) / 4.0)
#: Posterior scales ``sigma = 10^{-1 - j/4}``, ``j = 0..24`` (0.1 to 1e-7), fixed in advance.
SIGMA_GRID: np.ndarray = 10.0 ** (-1.0 - np.arange(25) / 4.0)
#: Prior variances ``lam = exp(-i/2)``, ``i = 0..59`` (1 to 1.5e-13), fixed in advance.
LAMBDA_GRID: np.ndarray = np.exp(-np.arange(60) / 2.0)


def grid_size() -> int:
    """``|GAMMA_GRID| |SIGMA_GRID| |LAMBDA_GRID|``: the union bound's count."""
    return int(GAMMA_GRID.size * SIGMA_GRID.size * LAMBDA_GRID.size)


# ------------------------------------------------------------------- the perturbation bound
def softmax_l1_bound(max_abs_change: torch.Tensor | float) -> torch.Tensor:
    """``min(2, m)`` with ``m >= max_s |D_s|``: a bound on ``||softmax(a + D) - softmax(a)||_1``.

    Proof: ``p(r) = softmax(a + r D)`` has ``dp/dr = p * (D - <p, D>)``, whose l1 norm is the
    mean absolute deviation of ``D`` under ``p``, at most ``osc(D) / 2 <= max |D|``; integrate
    over ``r in [0, 1]``. Two probability vectors are never more than 2 apart in l1."""
    m = torch.as_tensor(max_abs_change, dtype=torch.float64)
    if bool((m < 0).any()) or not bool(torch.isfinite(m).all()):
        raise ValueError("max_abs_change must be finite and non-negative")
    return torch.clamp(m, max=2.0)


def _spec(a: torch.Tensor) -> torch.Tensor:
    return torch.linalg.matrix_norm(a, ord=2)


def shallow_perturbation_bound(weights: dict[str, torch.Tensor],
                               perturbation: dict[str, torch.Tensor],
                               token_norm: float) -> torch.Tensor:
    """Sound upper bound on ``sup_X |f_{w+u}(X) - f_w(X)|`` over every input whose tokens all
    have Euclidean norm ``<= token_norm``, for the shallow encoder (module docstring, item 5).

    ``weights``: ``W_Q, W_K, W_V`` of shape ``(d_m, d)`` and ``w_O`` of shape ``(d_m,)``;
    ``perturbation``: the same names with a leading batch axis ``(M, ...)``. Returns ``(M,)``
    in float64 (all products in float64)."""
    B = check_positive(token_norm, "token_norm")
    names = ("W_Q", "W_K", "W_V", "w_O")
    for name in names:
        if name not in weights or name not in perturbation:
            raise ValueError(f"weights and perturbation must both hold {names}; "
                             f"missing {name!r}")
    W = {k: torch.as_tensor(weights[k]).double() for k in names}
    U = {k: torch.as_tensor(perturbation[k]).double() for k in names}
    d_m, d = W["W_Q"].shape
    if W["w_O"].shape != (d_m,) or W["W_K"].shape != (d_m, d) or W["W_V"].shape != (d_m, d):
        raise ValueError("weights: W_Q, W_K, W_V must be (d_m, d) and w_O (d_m,)")
    M = U["W_Q"].shape[0]
    for k in names:
        if U[k].shape != (M, *W[k].shape):
            raise ValueError(f"perturbation[{k!r}] must have shape {(M, *W[k].shape)}, got "
                             f"{tuple(U[k].shape)}")
    for k in names:
        if not (bool(torch.isfinite(W[k]).all()) and bool(torch.isfinite(U[k]).all())):
            raise ValueError(f"weights and perturbation must be finite ({k!r})")
    # dM = (W_Q'^T W_K' - W_Q^T W_K) / sqrt(d_m), expanded so that nothing cancels
    dQ, dK = U["W_Q"], U["W_K"]
    dM = (dQ.transpose(1, 2) @ W["W_K"] + W["W_Q"].T @ dK
          + dQ.transpose(1, 2) @ dK) / math.sqrt(d_m)
    attn = softmax_l1_bound(_spec(dM) * B * B)  # ||A'_t - A_t||_1 for every row t
    s_V = float(_spec(W["W_V"]))
    s_Vp = _spec(W["W_V"][None] + U["W_V"])
    s_dV = _spec(U["W_V"])
    n_O = float(torch.linalg.vector_norm(W["w_O"]))
    n_dO = torch.linalg.vector_norm(U["w_O"], dim=-1)
    return B * (n_dO * s_Vp + n_O * (s_dV + s_V * attn))


# ------------------------------------------------------------------------ the certificate
def conditioned_kl_bound(kl: float, z: float) -> float:
    """``(KL(Q || P) + 1/e) / z - log z``: an upper bound on ``KL(Q(. | E) || P)`` for any event
    ``E`` with ``Q(E) >= z`` (decreasing in ``z``).

    Proof: ``KL(Q~ || P) = (1/Z) int_E q log(q / p) - log Z`` and ``int_E q log(q/p) = KL(Q||P)
    - int_{E^c} q log(q/p) <= KL(Q||P) - Q(E^c) log(Q(E^c) / P(E^c)) <= KL(Q||P) + 1/e`` (the
    log-sum inequality, ``P(E^c) <= 1`` and ``t log t >= -1/e``)."""
    k = check_nonnegative(kl, "kl")
    zz = check_probability(z, "z", open_interval=False)
    if zz <= 0.0:
        raise ValueError("z must be positive (no draw fell in the event)")
    return (k + 1.0 / math.e) / zz - math.log(zz)


def z_lower(count: int, draws: int, delta: float) -> float:
    """Lower Clopper-Pearson limit of ``Z`` at ``delta`` from ``count`` of ``draws`` draws in the
    event (0 when ``count`` is 0)."""
    return pb.binomial_tail_inverse_lower(check_int(count, "count", minimum=0),
                                          check_int(draws, "draws"), delta)


def isotropic_kl(dist2: float, D: int, sigma2: float, lam: float) -> float:
    """``KL(N(w, sigma2 I) || N(w_p, lam I))`` in ``D`` dimensions with ``||w - w_p||^2 =
    dist2``: ``dist2 / (2 lam) + D (r - 1 - log r) / 2``, ``r = sigma2 / lam``."""
    d2 = check_nonnegative(dist2, "dist2")
    DD = check_int(D, "D")
    s2 = check_positive(sigma2, "sigma2")
    lm = check_positive(lam, "lam")
    r = s2 / lm
    return d2 / (2.0 * lm) + DD * max(r - 1.0 - math.log(r), 0.0) / 2.0


def best_grid_kl(dist2: float, D: int, sigma2: float,
                 grid: np.ndarray = LAMBDA_GRID) -> tuple[float, float]:
    """The smallest :func:`isotropic_kl` over the prior variances ``grid``: ``(kl, lam)``."""
    kls = [isotropic_kl(dist2, D, sigma2, float(lam)) for lam in np.asarray(grid).ravel()]
    i = int(np.argmin(kls))
    return kls[i], float(np.asarray(grid).ravel()[i])


def margin_certificate(margin_error: float, kl_tilde: float, n: int, delta: float,
                       *, grid: int = 1) -> float:
    """``kl^{-1}(Lhat_gamma(w), (KL~ + log(2 sqrt(n) grid / delta)) / n)``: with probability
    ``>= 1 - delta`` the 0-1 risk of the deterministic ``w`` (item 3 of the module docstring)."""
    q = check_probability(margin_error, "margin_error", open_interval=False)
    return pb.pac_bayes_kl(q, check_nonnegative(kl_tilde, "kl_tilde"), n, delta, grid_size=grid)


def needed_n(margin_error: float, kl_tilde: float, target: float, delta: float,
             *, grid: int = 1, n_max: int = 10**12) -> int:
    """The smallest ``n`` at which :func:`margin_certificate` is below ``target`` with the
    margin error and ``KL~`` held fixed (``n_max + 1`` when even ``n_max`` is not enough)."""
    t = check_probability(target, "target")

    def ok(n: int) -> bool:
        return margin_certificate(margin_error, kl_tilde, n, delta, grid=grid) < t

    if not ok(n_max):
        return n_max + 1
    lo, hi = 8, n_max
    if ok(lo):
        return lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi
