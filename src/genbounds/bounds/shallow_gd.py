r"""Every quantity and bound of the shallow-Transformer GD paper (Mwigo & Dasgupta, 2026).

The model is :class:`genbounds.models.shallow_encoder.ShallowEncoder` (one head, ``W_H = I``,
ReLU, mean pooling, scalar readout ``w_O``). Notation follows the paper:

* sizes ``N`` (training samples), ``d_s`` (tokens), ``d`` (token dimension), ``d_m`` (model
  dimension); data radius ``R_X`` with ``||X_n||_F <= sqrt(d_s) R_X`` and token radius
  ``B_X = max_{n,i} ||x_{n,i}||_2``;
* radii ``R_Q, R_K, R_V, R_O``: distances from initialisation ``||W - W^0||_F`` (``||w_O -
  w_O^0||_2``), read from the model view (``view.initial``) through
  :func:`genbounds.norms.norm_table`;
* ``eta_* = ||W_*^0||_F + R_*``, ``eta_O = ||w_O^0||_2 + R_O``, ``xi_* = ||W_*^0||_2 + R_*``;
* ``rho = N^{1/2} d_s^{3/2} R_X`` (Wu et al.'s constant; *not* the loss' Lipschitz constant, which
  the paper also calls ``rho`` in Section 3.2 and which is 1 here);
* ``M``, ``M_hat``, ``z``, ``z_hat`` of Lemma 4; ``P`` and ``A`` of Lemma 1;
* ``alpha = sigma_min(F_pre^0)`` in the sense Wu et al. need, ``sqrt(lambda_min(F F^T))`` for the
  ``N x d_m`` matrix ``F`` (zero when ``d_m < N``), and ``Phi(theta^0) = ||f(theta^0) - y||^2/2``.

Printed and audited forms (see the chapter ``notebooks/03_shallow_gd.md`` for the audit):

* **Lemma 1 printed** carries a spurious ``1/N`` (its own proof ends without it); **Lemma 2
  printed** is the proof's ``c sqrt(P/N) (1 + log(A sqrt(N/P)))``.
* **Audited P**: the covering number of a class whose outputs scale with ``||w_O|| <= eta_O`` must
  scale with ``eta_O^2``, and re-deriving the split of ``eps`` between the value and the
  query-key covers puts ``B_X^2`` in the query-key term (the score ``x_i^T W x_j`` is quadratic in
  the input), so ``P_aud = c_cov eta_O^2 B_X^2 (B_V^{2/3} + (2 B_QK s_V
  B_X^2)^{2/3})^3 log(N d_s)`` with ``B_V = sqrt(d) eta_V >= ||W_V||_{2,1}``, ``B_QK = sqrt(d)
  eta_K eta_Q / sqrt(d_m) >= ||W_K^T W_Q / sqrt(d_m)||_{2,1}`` and ``s_V = xi_V >= ||W_V||_2``.
  Dudley's stationary point ``delta* = sqrt(P/N)`` is the minimiser only if ``delta* <= A``;
  otherwise the bound is the cap ``c A``.
* **Lemma 4 printed**: ``min(alpha^2/(8 rho M_hat sqrt N), alpha^3 eta_O/(32 rho^4 z_hat sqrt N))``.
  Audited: ``ell_yy + min(alpha^2/(8 rho M sqrt N), alpha^3 eta_O/(32 rho^2 z sqrt N))``: the
  proof gives ``rho^2`` (not ``rho^4``); replacing ``M, z`` by the larger ``M_hat, z_hat`` in a
  denominator *lowers* the bound (not a valid relaxation); and ``ell(f, y) <= ell(y, y) + |f - y|``
  needs the term ``ell_yy = mean_n ell(y_n, y_n)``, which is ``> 0`` for the cross-entropy
  (``log 2`` at label 0, ``log(1 + e^{-1})`` at label 1).
* **Theorem 5 printed**: Lemma 4 printed ``+ c_O (sqrt(P/N)(1 + log(A sqrt(N/P))) +
  sqrt(log(R/delta)/N))`` with the hidden constant ``c_O`` made explicit. Audited: Lemma 4
  audited ``+ 2 Rad_aud + 3 c_loss sqrt((log(2/delta) + union)/(2N))`` with ``c_loss = log(1 +
  e^A)`` the range of the logistic loss on ``|f| <= A`` and a weighted union bound over a grid
  of the four radii (:func:`theorem5_audited`).

Every bound is valid only where its hypotheses hold; ``BoundValue.valid`` is False where a
measured hypothesis (``d_m >= c_dm N^3``, the two conditions on ``alpha``) fails.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from genbounds.bounds.registry import (
    DUDLEY_C_BARTLETT_2017,
    Bound,
    BoundKind,
    BoundValue,
    register,
)
from genbounds.models.view import ModelView
from genbounds.norms import norm_table
from genbounds.validation import check_int, check_nonnegative, check_positive, check_probability

__all__ = [
    "PAPER",
    "QUANTITY_NAMES",
    "A_bound",
    "P_audited",
    "P_printed",
    "alpha_min_singular",
    "cross_entropy_self_loss",
    "dudley_inverse_square_closed_form",
    "etas",
    "gram_inner_products",
    "largest_tail_exponent",
    "lemma1_audited",
    "lemma1_printed",
    "lemma2_printed",
    "lemma4_audited",
    "lemma4_conditions",
    "lemma4_printed",
    "m_quantity",
    "pre_features",
    "radius_grid",
    "rho_wu",
    "shallow_gd_quantities",
    "theorem5_audited",
    "theorem5_printed",
    "z_quantity",
]

#: BibTeX key of the paper.
PAPER = "mwigo2026shallow"
_REF = "Mwigo & Dasgupta (2026)"

#: The inputs of the registered bounds, computed by :func:`shallow_gd_quantities`.
QUANTITY_NAMES = (
    "N", "d_s", "d", "d_m", "R_X", "B_X",
    "W_Q0_fro", "W_K0_fro", "W_V0_fro", "w_O0_l2", "W_Q0_spectral", "W_K0_spectral",
    "W_V0_spectral", "R_Q", "R_K", "R_V", "R_O", "alpha", "phi0", "ell_yy",
)


# ------------------------------------------------------------------------------------------
# the quantities of Lemma 4 / Theorem 5, as plain functions
# ------------------------------------------------------------------------------------------


def etas(W_Q0_fro: float, W_K0_fro: float, W_V0_fro: float, w_O0_l2: float,
         W_Q0_spectral: float, W_K0_spectral: float, W_V0_spectral: float,
         R_Q: float, R_K: float, R_V: float, R_O: float) -> dict[str, float]:
    """``eta_Q, eta_K, eta_V, eta_O`` (Frobenius + radius) and ``xi_Q, xi_K, xi_V`` (spectral +
    radius) of Lemma 4; ``R = sqrt(R_Q^2 + R_K^2 + R_V^2 + R_O^2)``."""
    vals = dict(W_Q0_fro=W_Q0_fro, W_K0_fro=W_K0_fro, W_V0_fro=W_V0_fro, w_O0_l2=w_O0_l2,
                W_Q0_spectral=W_Q0_spectral, W_K0_spectral=W_K0_spectral,
                W_V0_spectral=W_V0_spectral, R_Q=R_Q, R_K=R_K, R_V=R_V, R_O=R_O)
    v = {k: check_nonnegative(x, k) for k, x in vals.items()}
    return {
        "eta_Q": v["W_Q0_fro"] + v["R_Q"], "eta_K": v["W_K0_fro"] + v["R_K"],
        "eta_V": v["W_V0_fro"] + v["R_V"], "eta_O": v["w_O0_l2"] + v["R_O"],
        "xi_Q": v["W_Q0_spectral"] + v["R_Q"], "xi_K": v["W_K0_spectral"] + v["R_K"],
        "xi_V": v["W_V0_spectral"] + v["R_V"],
        "R": math.sqrt(v["R_Q"] ** 2 + v["R_K"] ** 2 + v["R_V"] ** 2 + v["R_O"] ** 2),
    }


def rho_wu(N: int, d_s: int, R_X: float) -> float:
    """``rho = N^{1/2} d_s^{3/2} R_X`` (Lemma 4, from Wu et al. 2024)."""
    N = check_int(N, "N")
    d_s = check_int(d_s, "d_s")
    return math.sqrt(N) * d_s ** 1.5 * check_positive(R_X, "R_X")


def m_quantity(v: float, o: float, k: float, q: float, R_O: float, R_V: float, R_Q: float,
               R_K: float, R_X: float, d_s: int, d_m: int) -> float:
    """``max(v/R_O, o/R_V, c k v o/R_Q, c q v o/R_K)``, ``c = (2/sqrt d_m) R_X^2 d_s``.

    ``M`` of Lemma 4 is ``m_quantity(xi_V, eta_O, xi_K, xi_Q, ...)`` and ``M_hat`` is
    ``m_quantity(eta_V, eta_O, eta_K, eta_Q, ...)``. Radii must be > 0 (they divide).
    """
    for name, r in (("R_O", R_O), ("R_V", R_V), ("R_Q", R_Q), ("R_K", R_K)):
        check_positive(r, name)
    c = 2.0 / math.sqrt(check_int(d_m, "d_m")) * R_X ** 2 * check_int(d_s, "d_s")
    return max(v / R_O, o / R_V, c * k * v * o / R_Q, c * q * v * o / R_K)


def z_quantity(o: float, v: float, q: float, k: float, R_X: float, d_s: int, d_m: int) -> float:
    """``o^2 (1 + (4/d_m) R_X^4 d_s^2 v^2 (q^2 + k^2))``: ``z`` with ``(eta_O, xi_V, xi_Q, xi_K)``,
    ``z_hat`` with ``(eta_O, eta_V, eta_Q, eta_K)``."""
    d_m = check_int(d_m, "d_m")
    d_s = check_int(d_s, "d_s")
    return o ** 2 * (1.0 + 4.0 / d_m * R_X ** 4 * d_s ** 2 * v ** 2 * (q ** 2 + k ** 2))


def P_printed(N: int, d_s: int, d_m: int, R_X: float, eta_V: float, eta_K: float,
              eta_Q: float) -> float:
    """The paper's ``P = (sqrt(d_s) R_X)^2 ((sqrt(d_m) eta_V)^{2/3} + (sqrt(d_m) eta_K eta_Q
    eta_V)^{2/3})^3 log(N d_s)`` (Lemma 1, Appendix A)."""
    N, d_s, d_m = check_int(N, "N"), check_int(d_s, "d_s"), check_int(d_m, "d_m")
    a = (math.sqrt(d_m) * eta_V) ** (2 / 3)
    b = (math.sqrt(d_m) * eta_K * eta_Q * eta_V) ** (2 / 3)
    return d_s * R_X ** 2 * (a + b) ** 3 * math.log(N * d_s)


def P_audited(N: int, d_s: int, d: int, d_m: int, B_X: float, eta_O: float, eta_V: float,
              eta_K: float, eta_Q: float, xi_V: float, c_cov: float = 1.0) -> float:
    """Audited ``P``: ``c_cov eta_O^2 B_X^2 (B_V^{2/3} + (2 B_QK xi_V B_X^2)^{2/3})^3 log(N d_s)``.

    ``B_V = sqrt(d) eta_V`` bounds ``||W_V||_{2,1}`` (``d`` columns), ``B_QK = sqrt(d) eta_K eta_Q
    / sqrt(d_m)`` bounds ``||W_K^T W_Q / sqrt(d_m)||_{2,1}``, ``xi_V`` bounds ``||W_V||_2``; the
    factor 2 is the Lipschitz constant of the softmax from ``l_inf`` to ``l_1``; ``c_cov`` is the
    constant hidden in the covering bound's ``<~`` (the book uses 1 and says so).
    """
    N, d_s, d, d_m = (check_int(N, "N"), check_int(d_s, "d_s"), check_int(d, "d"),
                      check_int(d_m, "d_m"))
    B_V = math.sqrt(d) * eta_V
    B_QK = math.sqrt(d) * eta_K * eta_Q / math.sqrt(d_m)
    inner = B_V ** (2 / 3) + (2.0 * B_QK * xi_V * B_X ** 2) ** (2 / 3)
    return check_positive(c_cov, "c_cov") * eta_O ** 2 * B_X ** 2 * inner ** 3 * math.log(N * d_s)


def A_bound(eta_O: float, eta_V: float, d_s: int, R_X: float) -> float:
    """``A = eta_O eta_V sqrt(d_s) R_X >= |f|`` on the class (Appendix A)."""
    return eta_O * eta_V * math.sqrt(check_int(d_s, "d_s")) * R_X


def dudley_inverse_square_closed_form(P: float, A: float, N: int,
                                      c: float) -> tuple[float, float, bool]:
    """``c inf_{delta >= 0} (delta + int_delta^A sqrt(P / (eps^2 N)) d eps)``.

    Returns ``(value, delta, closed_form_valid)``: for ``delta* = sqrt(P/N) <= A`` the minimum is
    ``c sqrt(P/N) (1 + log(A sqrt(N/P)))`` at ``delta*``; otherwise the integrand's range is empty
    at the minimiser ``delta = A`` and the value is ``c A``.
    """
    P = check_positive(P, "P")
    A = check_positive(A, "A")
    N = check_int(N, "N")
    c = check_positive(c, "c")
    delta = math.sqrt(P / N)
    if delta <= A:
        return c * delta * (1.0 + math.log(A / delta)), delta, True
    return c * A, A, False


# ------------------------------------------------------------------------------------------
# bounds
# ------------------------------------------------------------------------------------------


def _common(**kw: float) -> dict[str, float]:
    return etas(kw["W_Q0_fro"], kw["W_K0_fro"], kw["W_V0_fro"], kw["w_O0_l2"],
                kw["W_Q0_spectral"], kw["W_K0_spectral"], kw["W_V0_spectral"],
                kw["R_Q"], kw["R_K"], kw["R_V"], kw["R_O"])


_ASSUME_L1 = ("||X_n||_F <= sqrt(d_s) R_X for all n", "||theta - theta^0||: each block within "
              "its radius R_Q, R_K, R_V, R_O", "theta^0 drawn independently of the sample")


def lemma2_printed(N: int, d_s: int, d_m: int, R_X: float, eta_V: float, eta_K: float,
                   eta_Q: float, eta_O: float, c: float = 1.0) -> BoundValue:
    """Lemma 2 as printed: ``c sqrt(P/N)(1 + log(A sqrt(N/P)))`` with the paper's ``P``."""
    P = P_printed(N, d_s, d_m, R_X, eta_V, eta_K, eta_Q)
    A = A_bound(eta_O, eta_V, d_s, R_X)
    val = c * math.sqrt(P / N) * (1.0 + math.log(A * math.sqrt(N / P)))
    return BoundValue(val, BoundKind.RADEMACHER, terms={"P": P, "A": A,
                      "sqrt(P/N)": math.sqrt(P / N)}, constants={"c": c},
                      name="Rad_S(G_R) (printed)", reference=f"{_REF}, Lemma 2",
                      assumptions=_ASSUME_L1, valid=math.sqrt(P / N) <= A,
                      regime="closed form (printed; valid only if sqrt(P/N) <= A)")


def lemma1_printed(N: int, d_s: int, d_m: int, R_X: float, eta_V: float, eta_K: float,
                   eta_Q: float, eta_O: float, c: float = 1.0) -> BoundValue:
    """Lemma 1 as printed: ``(1/N) sqrt(P/N)(1 + log(A sqrt(N/P)))`` (the ``O(.)`` constant
    as ``c``). The ``1/N`` is not in the proof's conclusion: ``valid`` is False."""
    inner = lemma2_printed(N, d_s, d_m, R_X, eta_V, eta_K, eta_Q, eta_O, c)
    return BoundValue(inner.value / N, BoundKind.RADEMACHER, terms=dict(inner.terms),
                      constants={"c": c}, name="Rad_S(F_R) (printed, with the spurious 1/N)",
                      reference=f"{_REF}, Lemma 1", assumptions=_ASSUME_L1, valid=False,
                      regime="printed statement: 1/N does not follow from the proof")


def _lemma1_audited(N: int, d_s: int, d: int, d_m: int, B_X: float, R_X: float,
                    e: Mapping[str, float], c: float, c_cov: float) -> BoundValue:
    P = P_audited(N, d_s, d, d_m, B_X, e["eta_O"], e["eta_V"], e["eta_K"], e["eta_Q"], e["xi_V"],
                  c_cov)
    A = A_bound(e["eta_O"], e["eta_V"], d_s, R_X)
    val, delta, ok = dudley_inverse_square_closed_form(P, A, N, c)
    return BoundValue(val, BoundKind.RADEMACHER, terms={"P": P, "A": A, "delta": delta},
                      constants={"c": c, "c_cov": c_cov},
                      choices={"delta": "closed_form" if ok else "cap"},
                      name="Rad_S(F_R) (audited)", reference=f"{_REF}, Lemmas 1-2 (audited)",
                      assumptions=_ASSUME_L1 + ("R_S(F) <= max_i R_S(G_i) (not equality)",),
                      regime=("delta* = sqrt(P/N) <= A: closed form" if ok
                              else "delta* > A: the cap c A"))


def lemma1_audited(N: int, d_s: int, d: int, d_m: int, R_X: float, B_X: float,
                   W_Q0_fro: float, W_K0_fro: float, W_V0_fro: float, w_O0_l2: float,
                   W_Q0_spectral: float, W_K0_spectral: float, W_V0_spectral: float,
                   R_Q: float, R_K: float, R_V: float, R_O: float,
                   c: float = DUDLEY_C_BARTLETT_2017, c_cov: float = 1.0) -> BoundValue:
    """Audited Lemmas 1-2: Dudley with the audited ``P`` (``eta_O^2``, ``B_X^2`` in the QK term,
    ``sqrt(d)`` for the (2,1) norms) and the cap ``c A`` when ``sqrt(P/N) > A``."""
    e = _common(W_Q0_fro=W_Q0_fro, W_K0_fro=W_K0_fro, W_V0_fro=W_V0_fro, w_O0_l2=w_O0_l2,
                W_Q0_spectral=W_Q0_spectral, W_K0_spectral=W_K0_spectral,
                W_V0_spectral=W_V0_spectral, R_Q=R_Q, R_K=R_K, R_V=R_V, R_O=R_O)
    return _lemma1_audited(N, d_s, d, d_m, B_X, R_X, e, c, c_cov)


def lemma4_conditions(N: int, d_s: int, d_m: int, R_X: float, alpha: float, phi0: float,
                      e: Mapping[str, float], R_Q: float, R_K: float, R_V: float, R_O: float,
                      c_dm: float = 1.0) -> dict[str, float]:
    """The measurable hypotheses of Lemma 4 as ratios (``>= 1`` means satisfied).

    ``dm_over_N3 = d_m / (c_dm N^3)``; ``cond1 = alpha^2 / (8 rho M sqrt(2 Phi0))``;
    ``cond2 = alpha^3 eta_O / (32 rho^2 z sqrt(2 Phi0))``; plus ``rho, M, M_hat, z, z_hat``.
    """
    rho = rho_wu(N, d_s, R_X)
    M = m_quantity(e["xi_V"], e["eta_O"], e["xi_K"], e["xi_Q"], R_O, R_V, R_Q, R_K, R_X, d_s,
                   d_m)
    M_hat = m_quantity(e["eta_V"], e["eta_O"], e["eta_K"], e["eta_Q"], R_O, R_V, R_Q, R_K, R_X,
                       d_s, d_m)
    z = z_quantity(e["eta_O"], e["xi_V"], e["xi_Q"], e["xi_K"], R_X, d_s, d_m)
    z_hat = z_quantity(e["eta_O"], e["eta_V"], e["eta_Q"], e["eta_K"], R_X, d_s, d_m)
    s = math.sqrt(2.0 * check_nonnegative(phi0, "phi0"))
    alpha = check_nonnegative(alpha, "alpha")
    inf = math.inf
    return {
        "rho": rho, "M": M, "M_hat": M_hat, "z": z, "z_hat": z_hat,
        "dm_over_N3": d_m / (check_positive(c_dm, "c_dm") * N ** 3),
        "cond1": alpha ** 2 / (8 * rho * M * s) if s > 0 else inf,
        "cond2": alpha ** 3 * e["eta_O"] / (32 * rho ** 2 * z * s) if s > 0 else inf,
    }


def _lemma4_parts(N: int, d_s: int, d_m: int, R_X: float, alpha: float, phi0: float,
                  R_Q: float, R_K: float, R_V: float, R_O: float, c_dm: float,
                  **init: float) -> tuple[dict[str, float], dict[str, float], bool]:
    e = _common(R_Q=R_Q, R_K=R_K, R_V=R_V, R_O=R_O, **init)
    cond = lemma4_conditions(N, d_s, d_m, R_X, alpha, phi0, e, R_Q, R_K, R_V, R_O, c_dm)
    ok = cond["dm_over_N3"] >= 1 and cond["cond1"] >= 1 and cond["cond2"] >= 1
    return e, cond, ok


_ASSUME_L4 = ("Assumption 3 (full row rank, ||X||_F <= sqrt(d_s) R_X, Gram inner-product tail)",
              "d_m >= c_dm N^3", "alpha^2 >= 8 rho M sqrt(2 Phi(theta^0))",
              "alpha^3 >= 32 rho^2 z sqrt(2 Phi(theta^0)) / eta_O",
              "GD on the squared loss Phi with step size <= 1/k (Wu et al. 2024, Thm 1)")


def lemma4_printed(N: int, d_s: int, d_m: int, R_X: float, alpha: float, phi0: float,
                   W_Q0_fro: float, W_K0_fro: float, W_V0_fro: float, w_O0_l2: float,
                   W_Q0_spectral: float, W_K0_spectral: float, W_V0_spectral: float,
                   R_Q: float, R_K: float, R_V: float, R_O: float,
                   c_dm: float = 1.0) -> BoundValue:
    """Lemma 4 as printed: ``min(alpha^2/(8 rho M_hat sqrt N), alpha^3 eta_O/(32 rho^4 z_hat
    sqrt N))``; ``valid`` only where the measured hypotheses hold (and even then the printed
    ``rho^4``, ``M_hat``, ``z_hat`` do not follow; see the audit)."""
    e, cond, ok = _lemma4_parts(N, d_s, d_m, R_X, alpha, phi0, R_Q, R_K, R_V, R_O, c_dm,
                                W_Q0_fro=W_Q0_fro, W_K0_fro=W_K0_fro, W_V0_fro=W_V0_fro,
                                w_O0_l2=w_O0_l2, W_Q0_spectral=W_Q0_spectral,
                                W_K0_spectral=W_K0_spectral, W_V0_spectral=W_V0_spectral)
    rho, sN = cond["rho"], math.sqrt(N)
    t1 = alpha ** 2 / (8 * rho * cond["M_hat"] * sN)
    t2 = alpha ** 3 * e["eta_O"] / (32 * rho ** 4 * cond["z_hat"] * sN)
    return BoundValue(min(t1, t2), BoundKind.TRAINING_LOSS,
                      terms={"term_M_hat": t1, "term_z_hat": t2, **cond},
                      constants={"c_dm": c_dm}, name="L_S(f_theta^t) (printed)",
                      reference=f"{_REF}, Lemma 4", assumptions=_ASSUME_L4, valid=False,
                      regime=("hypotheses hold" if ok else "hypotheses fail") +
                      "; printed rho^4 / M_hat / z_hat do not follow from the proof")


def lemma4_audited(N: int, d_s: int, d_m: int, R_X: float, alpha: float, phi0: float,
                   ell_yy: float, W_Q0_fro: float, W_K0_fro: float, W_V0_fro: float,
                   w_O0_l2: float, W_Q0_spectral: float, W_K0_spectral: float,
                   W_V0_spectral: float, R_Q: float, R_K: float, R_V: float, R_O: float,
                   c_dm: float = 1.0) -> BoundValue:
    """Audited Lemma 4: ``ell_yy + min(alpha^2/(8 rho M sqrt N), alpha^3 eta_O/(32 rho^2 z
    sqrt N))`` (``ell_yy = mean_n ell(y_n, y_n)``); ``valid`` iff the measured hypotheses hold.
    The term ``sqrt(2 Phi(theta^0)/N)`` (what the proof actually uses) is reported too."""
    e, cond, ok = _lemma4_parts(N, d_s, d_m, R_X, alpha, phi0, R_Q, R_K, R_V, R_O, c_dm,
                                W_Q0_fro=W_Q0_fro, W_K0_fro=W_K0_fro, W_V0_fro=W_V0_fro,
                                w_O0_l2=w_O0_l2, W_Q0_spectral=W_Q0_spectral,
                                W_K0_spectral=W_K0_spectral, W_V0_spectral=W_V0_spectral)
    rho, sN = cond["rho"], math.sqrt(N)
    t1 = alpha ** 2 / (8 * rho * cond["M"] * sN)
    t2 = alpha ** 3 * e["eta_O"] / (32 * rho ** 2 * cond["z"] * sN)
    ell_yy = check_nonnegative(ell_yy, "ell_yy")
    return BoundValue(ell_yy + min(t1, t2), BoundKind.TRAINING_LOSS,
                      terms={"ell_yy": ell_yy, "term_M": t1, "term_z": t2,
                             "sqrt(2 Phi0 / N)": math.sqrt(2 * phi0 / N), **cond},
                      constants={"c_dm": c_dm}, name="L_S(f_theta^t) (audited)",
                      reference=f"{_REF}, Lemma 4 (audited)", assumptions=_ASSUME_L4, valid=ok,
                      regime="hypotheses hold" if ok else "hypotheses fail: not a bound here")


def theorem5_printed(N: int, d_s: int, d_m: int, R_X: float, alpha: float, phi0: float,
                     W_Q0_fro: float, W_K0_fro: float, W_V0_fro: float, w_O0_l2: float,
                     W_Q0_spectral: float, W_K0_spectral: float, W_V0_spectral: float,
                     R_Q: float, R_K: float, R_V: float, R_O: float, delta: float = 0.05,
                     c_O: float = 1.0, c_dm: float = 1.0) -> BoundValue:
    """Theorem 5 as printed, ``c_O`` the constant of its ``O(.)`` (the book uses 1)."""
    init = dict(W_Q0_fro=W_Q0_fro, W_K0_fro=W_K0_fro, W_V0_fro=W_V0_fro, w_O0_l2=w_O0_l2,
                W_Q0_spectral=W_Q0_spectral, W_K0_spectral=W_K0_spectral,
                W_V0_spectral=W_V0_spectral)
    l4 = lemma4_printed(N, d_s, d_m, R_X, alpha, phi0, R_Q=R_Q, R_K=R_K, R_V=R_V, R_O=R_O,
                        c_dm=c_dm, **init)
    e = _common(R_Q=R_Q, R_K=R_K, R_V=R_V, R_O=R_O, **init)
    rad = lemma2_printed(N, d_s, d_m, R_X, e["eta_V"], e["eta_K"], e["eta_Q"], e["eta_O"], 1.0)
    delta = check_probability(delta, "delta")
    conf = math.sqrt(max(math.log(e["R"] / delta), 0.0) / N)
    val = l4.value + check_positive(c_O, "c_O") * (rad.value + conf)
    return BoundValue(val, BoundKind.TRUE_LOSS,
                      terms={"training": l4.value, "complexity": c_O * rad.value,
                             "confidence": c_O * conf, "P": rad.terms["P"], "A": rad.terms["A"],
                             "R": e["R"]},
                      constants={"delta": delta, "c_O": c_O, "c_dm": c_dm},
                      name="L_D(f) (printed)", reference=f"{_REF}, Theorem 5",
                      assumptions=_ASSUME_L4, valid=False,
                      regime="printed statement (see the audit); " + l4.regime)


def radius_grid(R: float, grid: float) -> tuple[int, float]:
    """``(k, k * grid)`` with ``k = max(1, ceil(R / grid))``: the grid point at or above ``R``."""
    check_nonnegative(R, "R")
    k = max(1, math.ceil(R / check_positive(grid, "grid") - 1e-12))
    return k, k * grid


def theorem5_audited(N: int, d_s: int, d: int, d_m: int, R_X: float, B_X: float, alpha: float,
                     phi0: float, ell_yy: float, W_Q0_fro: float, W_K0_fro: float,
                     W_V0_fro: float, w_O0_l2: float, W_Q0_spectral: float,
                     W_K0_spectral: float, W_V0_spectral: float, R_Q: float, R_K: float,
                     R_V: float, R_O: float, delta: float = 0.05,
                     c: float = DUDLEY_C_BARTLETT_2017, c_cov: float = 1.0,
                     c_dm: float = 1.0, grid: float = 0.1) -> BoundValue:
    """Audited Theorem 5: ``L_D <= Lemma4_aud + 2 Rad_aud + 3 c_loss sqrt((log(2/delta) +
    sum_b log(k_b (k_b + 1))) / (2N))``.

    The four radii are chosen after training, so each is rounded up to the grid ``{k grid : k =
    1, 2, ...}`` (``k_b`` per block) and the classes of the grid are combined by a weighted union
    bound (confidence ``delta / prod_b k_b (k_b + 1)`` for the class ``(k_Q, k_K, k_V, k_O)``,
    which sums to at most ``delta``); the rounded radii enter ``eta``, ``xi``, ``M``, ``z``.
    ``c_loss = log(1 + e^A)`` is the range of the logistic loss on ``|f| <= A``. ``valid`` iff
    Lemma 4's measured hypotheses hold.
    """
    init = dict(W_Q0_fro=W_Q0_fro, W_K0_fro=W_K0_fro, W_V0_fro=W_V0_fro, w_O0_l2=w_O0_l2,
                W_Q0_spectral=W_Q0_spectral, W_K0_spectral=W_K0_spectral,
                W_V0_spectral=W_V0_spectral)
    ks, Rs = zip(*(radius_grid(r, grid) for r in (R_Q, R_K, R_V, R_O)), strict=True)
    l4 = lemma4_audited(N, d_s, d_m, R_X, alpha, phi0, ell_yy, R_Q=Rs[0], R_K=Rs[1], R_V=Rs[2],
                        R_O=Rs[3], c_dm=c_dm, **init)
    e = _common(R_Q=Rs[0], R_K=Rs[1], R_V=Rs[2], R_O=Rs[3], **init)
    rad = _lemma1_audited(N, d_s, d, d_m, B_X, R_X, e, c, c_cov)
    A = rad.terms["A"]
    c_loss = A + math.log1p(math.exp(-A))  # log(1 + e^A), overflow-safe
    delta = check_probability(delta, "delta")
    union = sum(math.log(k * (k + 1)) for k in ks)
    conf = 3.0 * c_loss * math.sqrt((math.log(2 / delta) + union) / (2 * N))
    val = l4.value + 2.0 * rad.value + conf
    return BoundValue(val, BoundKind.TRUE_LOSS,
                      terms={"training": l4.value, "complexity": 2.0 * rad.value,
                             "confidence": conf, "P": rad.terms["P"], "A": A,
                             "c_loss": c_loss, "R": e["R"], "union_log": union},
                      constants={"delta": delta, "c": c, "c_cov": c_cov, "c_dm": c_dm,
                                 "grid": grid, "loss_lipschitz": 1.0},
                      choices=dict(rad.choices), name="L_D(f) (audited)",
                      reference=f"{_REF}, Theorem 5 (audited)",
                      assumptions=_ASSUME_L4 + ("theta^t within the rounded radii of theta^0",),
                      valid=l4.valid, regime=l4.regime + "; " + rad.regime)


# ------------------------------------------------------------------------------------------
# measuring the quantities on data and a model view
# ------------------------------------------------------------------------------------------


def pre_features(view: ModelView, X: torch.Tensor, chunk: int = 128) -> torch.Tensor:
    """``F_pre``: ``(K, N, d_m)`` mean-pooled ReLU features of the view's weights on ``X``.

    Computed from the view alone (column orientation, ``s_ij = x_i^T W_QK x_j``), independently
    of the model's ``forward``: ``f = F_pre w_O`` is a check of both. ``X`` is ``(N, d_s, d)``
    (the same data for every model) or ``(K, N, d_s, d)``.
    """
    head = view.layers[0].heads[0]
    W_QK, W_V = head.W_QK, head.W_V
    K = view.n_models
    if X.ndim == 3:
        X = X.unsqueeze(0).expand(K, *X.shape)
    if X.ndim != 4 or X.shape[0] != K:
        raise ValueError(f"X must have shape (N, d_s, d) or (K={K}, N, d_s, d); got "
                         f"{tuple(X.shape)}")
    X = X.to(W_QK.dtype)
    out = []
    for a in range(0, X.shape[1], chunk):
        Xc = X[:, a:a + chunk]
        S = torch.einsum("kbid,kde,kbje->kbij", Xc, W_QK, Xc)
        beta = torch.softmax(S, dim=-1)
        Vx = torch.einsum("kmd,kbjd->kbjm", W_V, Xc)
        Z = torch.relu(torch.einsum("kbij,kbjm->kbim", beta, Vx))
        out.append(Z.mean(dim=2))
    return torch.cat(out, dim=1)


def alpha_min_singular(F: torch.Tensor) -> np.ndarray:
    """``alpha = sqrt(lambda_min(F F^T))`` per model for ``F`` of shape ``(K, N, d_m)``: the
    smallest singular value of the ``N x d_m`` matrix when ``d_m >= N``, and 0 when ``d_m < N``
    (then ``F F^T`` is singular and the PL argument of Wu et al. has no curvature)."""
    K, N, d_m = F.shape
    if d_m < N:
        return np.zeros(K)
    s = torch.linalg.svdvals(F.to(torch.float64))
    return s[:, -1].cpu().numpy()


def cross_entropy_self_loss(y: np.ndarray) -> float:
    """``mean_n ell(y_n, y_n)`` for the sigmoid cross-entropy with labels in {0, 1}: the label
    fed in as the logit (``log 2`` at label 0, ``log(1 + e^{-1})`` at label 1)."""
    y = np.asarray(y, dtype=np.float64)
    if y.size == 0 or not np.isin(y, (0.0, 1.0)).all():
        raise ValueError("y must be a non-empty array of labels in {0, 1}")
    return float(np.mean(np.logaddexp(0.0, y) - y * y))


def gram_inner_products(X: np.ndarray, n_pairs: int = 2000, seed: int = 0) -> np.ndarray:
    """``<X_n^T X_n, X_m^T X_m>_F = ||X_n X_m^T||_F^2`` for random pairs ``n != m``
    (Assumption 3)."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 3 or X.shape[0] < 2:
        raise ValueError(f"X must have shape (N >= 2, d_s, d); got {X.shape}")
    rng = np.random.default_rng(seed)
    n = rng.integers(0, X.shape[0], size=n_pairs)
    m = (n + rng.integers(1, X.shape[0], size=n_pairs)) % X.shape[0]
    return np.einsum("pij,pkj->pik", X[n], X[m]).__pow__(2).sum(axis=(1, 2))


def largest_tail_exponent(values: np.ndarray) -> float:
    """The largest ``c_hat`` with ``P_hat(|V| >= t) <= exp(-t^c_hat)`` at every observed
    ``t > 1`` of the empirical distribution of ``values`` (Assumption 3's tail condition).

    ``-inf`` (no positive exponent works) as soon as some ``t > 1`` has ``P_hat(|V| >= t) >
    e^{-1}``; ``+inf`` when no value exceeds 1.
    """
    v = np.sort(np.abs(np.asarray(values, dtype=np.float64)))
    if v.size == 0:
        raise ValueError("values must not be empty")
    tail = 1.0 - np.arange(v.size) / v.size  # P_hat(|V| >= v[i])
    keep = v > 1.0
    if not keep.any():
        return math.inf
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.log(-np.log(np.minimum(tail[keep], 1.0 - 1e-300))) / np.log(v[keep])
    c = np.where(np.isnan(c), -np.inf, c)
    return float(np.min(c))


def shallow_gd_quantities(view: ModelView, X: torch.Tensor, y: np.ndarray,
                          loss_fn_self: float | None = None) -> dict[str, np.ndarray]:
    """Every input of the registered bounds, per model (arrays of shape ``(K,)``).

    ``view`` must carry its initial weights (``model.view(initial_state=...)``); ``X`` is the
    training set ``(N, d_s, d)``, ``y`` its labels in {0, 1}. Radii are the distances of the
    view's weights from ``view.initial`` (Frobenius; ``l2`` for ``w_O``), floored at 1e-12 so
    that ``M`` stays finite at initialisation. ``alpha`` and ``Phi(theta^0)`` are computed at
    ``view.initial``.
    """
    if view.initial is None:
        raise ValueError("view must carry its initial weights (model.view(initial_state=...))")
    X = torch.as_tensor(X)
    if X.ndim != 3:
        raise ValueError(f"X must have shape (N, d_s, d); got {tuple(X.shape)}")
    y = np.asarray(y)
    N, d_s, d = (int(s) for s in X.shape)
    if y.shape != (N,):
        raise ValueError(f"y must have shape ({N},); got {y.shape}")
    v64 = view.detached()
    assert v64.initial is not None
    K = v64.n_models
    head0 = v64.initial.layers[0].heads[0]
    assert head0.W_Q is not None and head0.W_K is not None
    d_m = int(head0.W_Q.shape[1])
    now = norm_table(v64)
    init = norm_table(v64.initial)
    X64 = X.to(torch.float64)
    F0 = pre_features(v64.initial, X64)
    f0 = torch.einsum("knm,km->kn", F0, v64.initial.readout[:, 0, :]).numpy()
    phi0 = 0.5 * ((f0 - y[None, :].astype(np.float64)) ** 2).sum(axis=1)
    row_fro = X64.pow(2).sum(dim=(1, 2)).sqrt()
    R_X = float(row_fro.max()) / math.sqrt(d_s)
    B_X = float(X64.pow(2).sum(dim=2).sqrt().max())
    hp = "layer0.head0."
    out: dict[str, np.ndarray] = {
        "N": np.full(K, N), "d_s": np.full(K, d_s), "d": np.full(K, d), "d_m": np.full(K, d_m),
        "R_X": np.full(K, R_X), "B_X": np.full(K, B_X),
        "W_Q0_fro": init[hp + "W_Q.fro"], "W_K0_fro": init[hp + "W_K.fro"],
        "W_V0_fro": init[hp + "W_V.fro"], "w_O0_l2": init["readout.fro"],
        "W_Q0_spectral": init[hp + "W_Q.spectral"], "W_K0_spectral": init[hp + "W_K.spectral"],
        "W_V0_spectral": init[hp + "W_V.spectral"],
        "R_Q": np.maximum(now[hp + "W_Q.dist_fro"], 1e-12),
        "R_K": np.maximum(now[hp + "W_K.dist_fro"], 1e-12),
        "R_V": np.maximum(now[hp + "W_V.dist_fro"], 1e-12),
        "R_O": np.maximum(now["readout.dist_fro"], 1e-12),
        "alpha": alpha_min_singular(F0), "phi0": phi0,
        "ell_yy": np.full(K, cross_entropy_self_loss(y) if loss_fn_self is None
                          else float(loss_fn_self)),
        "rel_dist": now["model.rel_dist_l2"], "dist": now["model.dist_l2"],
    }
    return out


def model_quantities(q: Mapping[str, Any], k: int) -> dict[str, Any]:
    """The scalars of model ``k`` from a table of :func:`shallow_gd_quantities` (sizes as int)."""
    out: dict[str, Any] = {}
    for name in QUANTITY_NAMES:
        v = np.asarray(q[name])[k]
        out[name] = int(v) if name in ("N", "d_s", "d", "d_m") else float(v)
    return out


# ------------------------------------------------------------------------------------------
# registration
# ------------------------------------------------------------------------------------------

_INIT = ("W_Q0_fro", "W_K0_fro", "W_V0_fro", "w_O0_l2", "W_Q0_spectral", "W_K0_spectral",
         "W_V0_spectral", "R_Q", "R_K", "R_V", "R_O")


def _lemma2_from_view(N: int, d_s: int, d_m: int, R_X: float, c: float = 1.0,
                      form: str = "printed", **init: float) -> BoundValue:
    e = _common(**init)
    fn = lemma2_printed if form == "printed" else lemma1_printed
    return fn(N, d_s, d_m, R_X, e["eta_V"], e["eta_K"], e["eta_Q"], e["eta_O"], c)


def _lemma1_audited_reg(N: int, d_s: int, d: int, d_m: int, R_X: float, B_X: float,
                        c: float = DUDLEY_C_BARTLETT_2017, c_cov: float = 1.0,
                        form: str = "audited", **init: float) -> BoundValue:
    return lemma1_audited(N, d_s, d, d_m, R_X, B_X, c=c, c_cov=c_cov, **init)


register(Bound(key="shallow_gd.lemma_1.printed", paper=PAPER, statement="Lemma 1",
               kind=BoundKind.RADEMACHER, form="printed", needs=("N", "d_s", "d_m", "R_X") + _INIT,
               constants={"c": 1.0}, fn=_lemma2_from_view, fixed={"form": "lemma1"},
               description="Rad_S(F_R) as printed, (1/N) sqrt(P/N)(1 + log(A sqrt(N/P)))"))
register(Bound(key="shallow_gd.lemma_2.printed", paper=PAPER, statement="Lemma 2",
               kind=BoundKind.RADEMACHER, form="printed", needs=("N", "d_s", "d_m", "R_X") + _INIT,
               constants={"c": 1.0}, fn=_lemma2_from_view, fixed={"form": "printed"},
               description="Rad_S(G_R) as printed, c sqrt(P/N)(1 + log(A sqrt(N/P)))"))
for _key, _stmt in (("lemma_1", "Lemma 1"), ("lemma_2", "Lemma 2")):
    register(Bound(key=f"shallow_gd.{_key}.audited", paper=PAPER, statement=_stmt,
                   kind=BoundKind.RADEMACHER, form="audited",
                   needs=("N", "d_s", "d", "d_m", "R_X", "B_X") + _INIT,
                   constants={"c": DUDLEY_C_BARTLETT_2017, "c_cov": 1.0},
                   fn=_lemma1_audited_reg, fixed={"form": "audited"},
                   description="Rad_S(F_R) <= Rad_S(G_R) with audited P (eta_O^2, B_X^2) and the "
                   "cap c A (Lemmas 1 and 2 share it)"))
register(Bound(key="shallow_gd.lemma_4.printed", paper=PAPER, statement="Lemma 4",
               kind=BoundKind.TRAINING_LOSS, form="printed",
               needs=("N", "d_s", "d_m", "R_X", "alpha", "phi0") + _INIT,
               constants={"c_dm": 1.0}, fn=lambda form, **kw: lemma4_printed(**kw),
               fixed={"form": "printed"},
               description="training loss along GD, min(.. M_hat .., .. rho^4 z_hat ..)"))
register(Bound(key="shallow_gd.lemma_4.audited", paper=PAPER, statement="Lemma 4",
               kind=BoundKind.TRAINING_LOSS, form="audited",
               needs=("N", "d_s", "d_m", "R_X", "alpha", "phi0", "ell_yy") + _INIT,
               constants={"c_dm": 1.0}, fn=lambda form, **kw: lemma4_audited(**kw),
               fixed={"form": "audited"},
               description="training loss: ell_yy + min(.. M .., .. rho^2 z ..)"))
register(Bound(key="shallow_gd.theorem_5.printed", paper=PAPER, statement="Theorem 5",
               kind=BoundKind.TRUE_LOSS, form="printed",
               needs=("N", "d_s", "d_m", "R_X", "alpha", "phi0") + _INIT,
               constants={"delta": 0.05, "c_O": 1.0, "c_dm": 1.0},
               fn=lambda form, **kw: theorem5_printed(**kw), fixed={"form": "printed"},
               description="true loss as printed (hidden O(.) constant c_O = 1)"))
register(Bound(key="shallow_gd.theorem_5.audited", paper=PAPER, statement="Theorem 5",
               kind=BoundKind.TRUE_LOSS, form="audited",
               needs=("N", "d_s", "d", "d_m", "R_X", "B_X", "alpha", "phi0", "ell_yy") + _INIT,
               constants={"delta": 0.05, "c": DUDLEY_C_BARTLETT_2017, "c_cov": 1.0,
                          "c_dm": 1.0, "grid": 0.1},
               fn=lambda form, **kw: theorem5_audited(**kw), fixed={"form": "audited"},
               description="true loss: Lemma 4 audited + 2 Rad audited + 3 log(1+e^A) sqrt(..)"))
