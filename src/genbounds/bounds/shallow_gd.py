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
  printed** is the proof's ``c sqrt(P/N) (1 + log(A sqrt(N/P)))``. Both are *false*: the
  expression is negative whenever ``sqrt(P/N) > e A``, which holds with high probability at
  every LeCun initialisation with ``d_m >= N^3`` (Theorem 5's own regime;
  :func:`lecun_ratio_lower_bound`), and no Rademacher complexity is negative. The registered
  printed bounds raise ``ValueError`` there; :func:`printed_rademacher_expression` returns the
  (negative) number.
* **Audited P** (derived step by step in the chapter): the covering number of the class is
  built from three sequential covers (the query-key map on the ``N d_s`` query tokens, the value
  map on the ``N d_s`` pooled tokens, the readout on the ``N`` pooled features) with Edelman et
  al.'s lemma (unstated constant ``c_cov``); the output errors they cause are weighted by
  ``beta_QK = 2 eta_O xi_V B_X^2`` (softmax ``l_inf -> l_1`` Lipschitz constant 2, one ``B_X``
  from the score, one from ``X^T (p - p_hat)``), ``beta_V = eta_O`` and ``beta_O = 1``, and the
  split of ``eps`` that minimises the total gives ``P_aud = c_cov eta_O^2 B_X^2 (xi_V^{2/3} +
  (2 B_V)^{2/3} + (2 B_QK xi_V B_X^2)^{2/3})^3 log(max(d, d_m) N d_s)`` with ``B_V = sqrt(d_m)
  eta_V >= ||W_V^T||_{2,1}`` (a sum over the ``d_m`` output rows of ``W_V``, as in chapter 02),
  ``B_QK = sqrt(d) eta_K eta_Q / sqrt(d_m) >= ||(W_K^T W_Q / sqrt(d_m))^T||_{2,1}``, and the
  factor 2 on ``B_V`` from making the value cover proper (its centres inside the class, so that
  the readout's points keep ``||.|| <= xi_V B_X``). Dudley's stationary point
  ``eps_0* = sqrt(P/N)`` is the minimiser only if ``eps_0* <= A``; otherwise the bound is the
  cap ``c A``.
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

import functools
import inspect
import math
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import numpy as np
import torch

from genbounds.bounds.registry import (
    DUDLEY_C_BARTLETT_2017,
    Bound,
    BoundKind,
    BoundValue,
    Verdict,
    register,
)
from genbounds.norms import norm_table
from genbounds.protocols import ModelView
from genbounds.validation import check_int, check_nonnegative, check_positive, check_probability

__all__ = [
    "PAPER",
    "QUANTITY_NAMES",
    "AUDIT_LABELS",
    "A_bound",
    "P_audited",
    "P_printed",
    "alpha_min_singular",
    "cross_entropy_self_loss",
    "dudley_inverse_square_closed_form",
    "etas",
    "etas_of",
    "gram_inner_products",
    "largest_tail_exponent",
    "lecun_ratio_lower_bound",
    "lemma1_audited",
    "lemma1_printed",
    "lemma2_printed",
    "lemma4_audited",
    "lemma4_conditions",
    "lemma4_printed",
    "m_quantity",
    "pre_features",
    "printed_rademacher_expression",
    "radius_grid",
    "rho_wu",
    "shallow_gd_quantities",
    "theorem5_audited",
    "theorem5_printed",
    "theorem5_printed_terms",
    "z_quantity",
]

_F = TypeVar("_F", bound=Callable[..., Any])


def _no_overflow(fn: _F) -> _F:
    """Turn an ``OverflowError`` of float arithmetic (``x ** k`` with a huge ``x``) into a
    ``ValueError`` that names the function's arguments."""
    names = ", ".join(inspect.signature(fn).parameters)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except OverflowError as exc:
            raise ValueError(f"{fn.__name__}: the arithmetic overflows; some of ({names}) are "
                             "too large") from exc

    return wrapper  # type: ignore[return-value]


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


@_no_overflow
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


def etas_of(quantities: Mapping[str, Any]) -> dict[str, float]:
    """:func:`etas` from a mapping that holds the initial norms and the radii (a row of
    :func:`model_quantities`, or any dict with those names)."""
    missing = [n for n in _INIT if n not in quantities]
    if missing:
        raise ValueError(f"quantities is missing {missing}")
    return etas(**{n: quantities[n] for n in _INIT})


@_no_overflow
def rho_wu(N: int, d_s: int, R_X: float) -> float:
    """``rho = N^{1/2} d_s^{3/2} R_X`` (Lemma 4, from Wu et al. 2024)."""
    N = check_int(N, "N")
    d_s = check_int(d_s, "d_s")
    return math.sqrt(N) * d_s ** 1.5 * check_positive(R_X, "R_X")


@_no_overflow
def m_quantity(v: float, o: float, k: float, q: float, R_O: float, R_V: float, R_Q: float,
               R_K: float, R_X: float, d_s: int, d_m: int) -> float:
    """``max(v/R_O, o/R_V, c k v o/R_Q, c q v o/R_K)``, ``c = (2/sqrt d_m) R_X^2 d_s``.

    ``M`` of Lemma 4 is ``m_quantity(xi_V, eta_O, xi_K, xi_Q, ...)`` and ``M_hat`` is
    ``m_quantity(eta_V, eta_O, eta_K, eta_Q, ...)``. Radii must be > 0 (they divide).
    """
    x = _nonneg(v=v, o=o, k=k, q=q, R_X=R_X)
    r = {name: check_positive(val, name) for name, val in
         (("R_O", R_O), ("R_V", R_V), ("R_Q", R_Q), ("R_K", R_K))}
    c = 2.0 / math.sqrt(check_int(d_m, "d_m")) * x["R_X"] ** 2 * check_int(d_s, "d_s")
    vo = x["v"] * x["o"]
    return _finite(max(x["v"] / r["R_O"], x["o"] / r["R_V"], c * x["k"] * vo / r["R_Q"],
                       c * x["q"] * vo / r["R_K"]),
                   "M (radii R_O, R_V, R_Q, R_K too small or norms too large)")


@_no_overflow
def z_quantity(o: float, v: float, q: float, k: float, R_X: float, d_s: int, d_m: int) -> float:
    """``o^2 (1 + (4/d_m) R_X^4 d_s^2 v^2 (q^2 + k^2))``: ``z`` with ``(eta_O, xi_V, xi_Q, xi_K)``,
    ``z_hat`` with ``(eta_O, eta_V, eta_Q, eta_K)``."""
    d_m = check_int(d_m, "d_m")
    d_s = check_int(d_s, "d_s")
    x = _nonneg(o=o, v=v, q=q, k=k, R_X=R_X)
    return _finite(x["o"] ** 2 * (1.0 + 4.0 / d_m * x["R_X"] ** 4 * d_s ** 2 * x["v"] ** 2
                                  * (x["q"] ** 2 + x["k"] ** 2)), "z (norms too large)")


def _nonneg(**kw: float) -> dict[str, float]:
    return {k: check_nonnegative(v, k) for k, v in kw.items()}


@_no_overflow
def P_printed(N: int, d_s: int, d_m: int, R_X: float, eta_V: float, eta_K: float,
              eta_Q: float) -> float:
    """The paper's ``P = (sqrt(d_s) R_X)^2 ((sqrt(d_m) eta_V)^{2/3} + (sqrt(d_m) eta_K eta_Q
    eta_V)^{2/3})^3 log(N d_s)`` (Lemma 1, Appendix A)."""
    N, d_s, d_m = check_int(N, "N"), check_int(d_s, "d_s"), check_int(d_m, "d_m")
    v = _nonneg(R_X=R_X, eta_V=eta_V, eta_K=eta_K, eta_Q=eta_Q)
    a = (math.sqrt(d_m) * v["eta_V"]) ** (2 / 3)
    b = (math.sqrt(d_m) * v["eta_K"] * v["eta_Q"] * v["eta_V"]) ** (2 / 3)
    return _finite(d_s * v["R_X"] ** 2 * (a + b) ** 3 * math.log(N * d_s), "P (R_X, eta_*)")


def _finite(value: float, name: str) -> float:
    if not math.isfinite(value):
        raise ValueError(f"{name}: the result overflows ({value}); inputs too large")
    return value


@_no_overflow
def P_audited(N: int, d_s: int, d: int, d_m: int, B_X: float, eta_O: float, eta_V: float,
              eta_K: float, eta_Q: float, xi_V: float, c_cov: float = 1.0) -> float:
    """Audited ``P = c_cov eta_O^2 B_X^2 (xi_V^{2/3} + (2 B_V)^{2/3} + (2 B_QK xi_V
    B_X^2)^{2/3})^3 log(max(d, d_m) N d_s)`` (the chapter derives it step by step).

    ``B_V = sqrt(d_m) eta_V >= ||W_V^T||_{2,1}`` (the Euclidean norms of the ``d_m`` rows of
    ``W_V`` summed: Edelman et al.'s lemma needs the sum over *output* coordinates);
    ``B_QK = sqrt(d) eta_K eta_Q / sqrt(d_m)`` bounds the same norm of the ``d x d`` matrix
    ``W_K^T W_Q / sqrt(d_m)``; ``xi_V >= ||W_V||_2``. The three terms are the readout cover
    (error weight 1, points of norm ``xi_V B_X``), the value cover (weight ``eta_O``; the
    factor 2 makes it proper) and the query-key cover (weight ``2 eta_O xi_V B_X^2``: the
    softmax's ``l_inf -> l_1`` Lipschitz constant 2 and two factors ``B_X``). ``c_cov`` is the
    constant of Edelman et al.'s covering lemma, which they do not state (the book uses 1:
    the numbers certify the statement only if ``c_cov <= 1``).
    """
    N, d_s, d, d_m = (check_int(N, "N"), check_int(d_s, "d_s"), check_int(d, "d"),
                      check_int(d_m, "d_m"))
    v = _nonneg(B_X=B_X, eta_O=eta_O, eta_V=eta_V, eta_K=eta_K, eta_Q=eta_Q, xi_V=xi_V)
    c_cov = check_positive(c_cov, "c_cov")
    B_V = math.sqrt(d_m) * v["eta_V"]
    B_QK = math.sqrt(d) * v["eta_K"] * v["eta_Q"] / math.sqrt(d_m)
    inner = (v["xi_V"] ** (2 / 3) + (2.0 * B_V) ** (2 / 3)
             + (2.0 * B_QK * v["xi_V"] * v["B_X"] ** 2) ** (2 / 3))
    return _finite(c_cov * v["eta_O"] ** 2 * v["B_X"] ** 2 * inner ** 3
                   * math.log(max(d, d_m) * N * d_s), "P (B_X, eta_*, xi_V, c_cov)")


@_no_overflow
def A_bound(eta_O: float, eta_V: float, d_s: int, R_X: float) -> float:
    """``A = eta_O eta_V sqrt(d_s) R_X >= |f|`` on the class (Appendix A)."""
    v = _nonneg(eta_O=eta_O, eta_V=eta_V, R_X=R_X)
    return _finite(v["eta_O"] * v["eta_V"] * math.sqrt(check_int(d_s, "d_s")) * v["R_X"],
                   "A (eta_O, eta_V, R_X)")


@_no_overflow
def printed_rademacher_expression(P: float, A: float, N: int, c: float = 1.0) -> float:
    """The paper's closed form ``c sqrt(P/N) (1 + log(A sqrt(N/P)))`` as a number.

    **Not a bound**: it is negative whenever ``sqrt(P/N) > e A``, and a Rademacher complexity
    never is (see :func:`lemma2_printed`, which refuses to report it there).
    """
    P, A = check_positive(P, "P"), check_positive(A, "A")
    N, c = check_int(N, "N"), check_positive(c, "c")
    r = math.sqrt(P / N)
    return c * r * (1.0 + math.log(A) - math.log(r))


@_no_overflow
def lecun_ratio_lower_bound(N: int, d_s: int, d_m: int, R_O: float) -> float:
    """A lower bound on ``sqrt(P/N) / A`` (printed ``P``, paper's ``A``) that holds with
    probability at least ``1 - 3 exp(-d_m / 16)`` over a LeCun initialisation, for any radii.

    From ``P >= d_s R_X^2 d_m eta_K^2 eta_Q^2 eta_V^2 log(N d_s)`` (drop the first term of the
    cube), ``sqrt(P/N) / A >= sqrt(d_m log(N d_s) / N) eta_K eta_Q / eta_O``; Laurent and
    Massart's chi-square bounds give ``||W_K^0||_F, ||W_Q^0||_F >= sqrt(d_m / 2)`` and
    ``||w_O^0||_2 <= sqrt(13/8)``, each with probability ``>= 1 - exp(-d_m / 16)`` (at least
    ``d_m`` degrees of freedom, deviation ``x = k / 16``), and ``eta >= ||W^0||_F``,
    ``eta_O <= ||w_O^0|| + R_O``. Hence the bound ``(d_m / 2) sqrt(d_m log(N d_s) / N) /
    (sqrt(13/8) + R_O)``; the printed expression is negative where it exceeds ``e``.
    """
    N, d_s, d_m = check_int(N, "N"), check_int(d_s, "d_s"), check_int(d_m, "d_m")
    R_O = check_nonnegative(R_O, "R_O")
    return (d_m / 2.0) * math.sqrt(d_m * math.log(N * d_s) / N) / (math.sqrt(13 / 8) + R_O)


@_no_overflow
def dudley_inverse_square_closed_form(P: float, A: float, N: int,
                                      c: float) -> tuple[float, float, bool]:
    """``c inf_{eps_0 >= 0} (eps_0 + int_{eps_0}^A sqrt(P / (eps^2 N)) d eps)``.

    Returns ``(value, eps_0, closed_form_valid)``: for ``eps_0* = sqrt(P/N) <= A`` the minimum
    is ``c sqrt(P/N) (1 + log(A sqrt(N/P)))`` at ``eps_0*``; otherwise the integrand's range is
    empty at the minimiser ``eps_0 = A`` and the value is ``c A``. ``P = 0`` or ``A = 0``
    (a class with one function on the sample) gives 0.
    """
    P = check_nonnegative(P, "P")
    A = check_nonnegative(A, "A")
    N = check_int(N, "N")
    c = check_positive(c, "c")
    if P == 0.0 or A == 0.0:
        return 0.0, 0.0, True
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


@_no_overflow
def lemma2_printed(N: int, d_s: int, d_m: int, R_X: float, eta_V: float, eta_K: float,
                   eta_Q: float, eta_O: float, c: float = 1.0) -> BoundValue:
    """Lemma 2 as printed: ``c sqrt(P/N)(1 + log(A sqrt(N/P)))`` with the paper's ``P``.

    Raises ``ValueError`` where the expression is negative (``sqrt(P/N) > e A``): no
    Rademacher complexity is, so the printed statement is false there (the chapter's
    counterexample); :func:`printed_rademacher_expression` gives the number. ``valid`` is
    False outside ``sqrt(P/N) <= A``, the range of the closed form.
    """
    P = P_printed(N, d_s, d_m, R_X, eta_V, eta_K, eta_Q)
    A = A_bound(eta_O, eta_V, d_s, R_X)
    c = check_positive(c, "c")
    if P == 0.0 or A == 0.0:
        raise ValueError("eta_O, eta_V, eta_K, eta_Q and R_X must be > 0: the printed closed "
                         f"form is undefined at P = {P:g}, A = {A:g}")
    val = printed_rademacher_expression(P, A, N, c)
    if val < 0:
        raise ValueError(f"the printed Lemma 2 is negative here (sqrt(P/N) = "
                         f"{math.sqrt(P / N):.4g} > e A = {math.e * A:.4g} at N = {N}, R_X = "
                         f"{R_X:g}, eta_V = {eta_V:g}, eta_K = {eta_K:g}, eta_Q = {eta_Q:g}, "
                         f"eta_O = {eta_O:g}): not a bound on a Rademacher complexity; "
                         "printed_rademacher_expression gives the number")
    return BoundValue(val, BoundKind.RADEMACHER, terms={"P": P, "A": A,
                      "sqrt(P/N)": math.sqrt(P / N)}, constants={"c": c},
                      name="Rad_S(G_R) (printed)", reference=f"{_REF}, Lemma 2",
                      assumptions=_ASSUME_L1, valid=math.sqrt(P / N) <= A,
                      regime="closed form (printed; valid only if sqrt(P/N) <= A)")


@_no_overflow
def lemma1_printed(N: int, d_s: int, d_m: int, R_X: float, eta_V: float, eta_K: float,
                   eta_Q: float, eta_O: float, c: float = 1.0) -> BoundValue:
    """Lemma 1 as printed: ``(1/N) sqrt(P/N)(1 + log(A sqrt(N/P)))`` (the ``O(.)`` constant
    as ``c``). The ``1/N`` is not in the proof's conclusion: ``valid`` is False. Raises
    ``ValueError`` where the expression is negative, as :func:`lemma2_printed`."""
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


@_no_overflow
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


@_no_overflow
def lemma4_conditions(N: int, d_s: int, d_m: int, R_X: float, alpha: float, phi0: float,
                      e: Mapping[str, float], R_Q: float, R_K: float, R_V: float, R_O: float,
                      c_dm: float = 1.0) -> dict[str, float]:
    """The measurable hypotheses of Lemma 4 as ratios (``>= 1`` means satisfied); ``phi0 > 0``
    (a model that fits its training set exactly at initialisation needs no theorem).

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
    s = math.sqrt(2.0 * check_positive(phi0, "phi0"))
    alpha = check_nonnegative(alpha, "alpha")
    if z == 0.0:
        raise ValueError("w_O0_l2 + R_O (eta_O) must be > 0: z = 0 divides condition 2")
    return {
        "rho": rho, "M": M, "M_hat": M_hat, "z": z, "z_hat": z_hat,
        "dm_over_N3": d_m / (check_positive(c_dm, "c_dm") * N ** 3),
        "cond1": _finite(alpha ** 2 / (8 * rho * M * s), "condition 1 (alpha, phi0)"),
        "cond2": _finite(alpha ** 3 * e["eta_O"] / (32 * rho ** 2 * z * s),
                         "condition 2 (alpha, phi0)"),
    }


def _lemma4_parts(N: int, d_s: int, d_m: int, R_X: float, alpha: float, phi0: float,
                  R_Q: float, R_K: float, R_V: float, R_O: float, c_dm: float,
                  **init: float) -> tuple[dict[str, float], dict[str, float], bool]:
    e = _common(R_Q=R_Q, R_K=R_K, R_V=R_V, R_O=R_O, **init)
    cond = lemma4_conditions(N, d_s, d_m, R_X, alpha, phi0, e, R_Q, R_K, R_V, R_O, c_dm)
    ok = cond["dm_over_N3"] >= 1 and cond["cond1"] >= 1 and cond["cond2"] >= 1
    return e, cond, ok


def _lemma4_terms(args: dict[str, Any], printed: bool
                  ) -> tuple[float, float, dict[str, float], bool]:
    """The two terms of Lemma 4's minimum from the arguments of :func:`lemma4_printed` /
    :func:`lemma4_audited` (``args``), its measured conditions and whether they hold:
    ``alpha^2/(8 rho M sqrt N)`` and ``alpha^3 eta_O/(32 rho^p z sqrt N)``, with the printed
    ``M_hat``, ``z_hat`` and ``p = 4`` or the audited ``M``, ``z`` and ``p = 2``."""
    N, alpha = args["N"], args["alpha"]
    e, cond, ok = _lemma4_parts(
        N, args["d_s"], args["d_m"], args["R_X"], alpha, args["phi0"], args["R_Q"],
        args["R_K"], args["R_V"], args["R_O"], args["c_dm"],
        **{k: args[k] for k in ("W_Q0_fro", "W_K0_fro", "W_V0_fro", "w_O0_l2", "W_Q0_spectral",
                                "W_K0_spectral", "W_V0_spectral")})
    M, z, p = ("M_hat", "z_hat", 4) if printed else ("M", "z", 2)
    rho, sN = cond["rho"], math.sqrt(N)
    t1 = _finite(alpha ** 2 / (8 * rho * cond[M] * sN), "Lemma 4 (alpha)")
    t2 = _finite(alpha ** 3 * e["eta_O"] / (32 * rho ** p * cond[z] * sN),
                 "Lemma 4 (alpha, eta_O)")
    return t1, t2, cond, ok



_ASSUME_L4 = ("Assumption 3 (full row rank, ||X||_F <= sqrt(d_s) R_X, Gram inner-product tail)",
              "d_m >= c_dm N^3", "alpha^2 >= 8 rho M sqrt(2 Phi(theta^0))",
              "alpha^3 >= 32 rho^2 z sqrt(2 Phi(theta^0)) / eta_O",
              "GD on the squared loss Phi with step size <= 1/k (Wu et al. 2024, Thm 1)")


@_no_overflow
def lemma4_printed(N: int, d_s: int, d_m: int, R_X: float, alpha: float, phi0: float,
                   W_Q0_fro: float, W_K0_fro: float, W_V0_fro: float, w_O0_l2: float,
                   W_Q0_spectral: float, W_K0_spectral: float, W_V0_spectral: float,
                   R_Q: float, R_K: float, R_V: float, R_O: float,
                   c_dm: float = 1.0) -> BoundValue:
    """Lemma 4 as printed: ``min(alpha^2/(8 rho M_hat sqrt N), alpha^3 eta_O/(32 rho^4 z_hat
    sqrt N))``; ``valid`` only where the measured hypotheses hold (and even then the printed
    ``rho^4``, ``M_hat``, ``z_hat`` do not follow; see the audit)."""
    t1, t2, cond, ok = _lemma4_terms(locals(), printed=True)
    return BoundValue(min(t1, t2), BoundKind.TRAINING_LOSS,
                      terms={"term_M_hat": t1, "term_z_hat": t2, **cond},
                      constants={"c_dm": c_dm}, name="L_S(f_theta^t) (printed)",
                      reference=f"{_REF}, Lemma 4", assumptions=_ASSUME_L4, valid=False,
                      regime=("hypotheses hold" if ok else "hypotheses fail") +
                      "; printed rho^4 / M_hat / z_hat do not follow from the proof")


@_no_overflow
def lemma4_audited(N: int, d_s: int, d_m: int, R_X: float, alpha: float, phi0: float,
                   ell_yy: float, W_Q0_fro: float, W_K0_fro: float, W_V0_fro: float,
                   w_O0_l2: float, W_Q0_spectral: float, W_K0_spectral: float,
                   W_V0_spectral: float, R_Q: float, R_K: float, R_V: float, R_O: float,
                   c_dm: float = 1.0) -> BoundValue:
    """Audited Lemma 4: ``ell_yy + min(alpha^2/(8 rho M sqrt N), alpha^3 eta_O/(32 rho^2 z
    sqrt N))`` (``ell_yy = mean_n ell(y_n, y_n)``); ``valid`` iff the measured hypotheses hold.
    The term ``sqrt(2 Phi(theta^0)/N)`` (what the proof actually uses) is reported too."""
    t1, t2, cond, ok = _lemma4_terms(locals(), printed=False)
    ell_yy = check_nonnegative(ell_yy, "ell_yy")
    return BoundValue(ell_yy + min(t1, t2), BoundKind.TRAINING_LOSS,
                      terms={"ell_yy": ell_yy, "term_M": t1, "term_z": t2,
                             "sqrt(2 Phi0 / N)": math.sqrt(2 * phi0 / N), **cond},
                      constants={"c_dm": c_dm}, name="L_S(f_theta^t) (audited)",
                      reference=f"{_REF}, Lemma 4 (audited)", assumptions=_ASSUME_L4, valid=ok,
                      regime="hypotheses hold" if ok else "hypotheses fail: not a bound here")


@_no_overflow
def theorem5_printed_terms(N: int, d_s: int, d_m: int, R_X: float, alpha: float, phi0: float,
                           W_Q0_fro: float, W_K0_fro: float, W_V0_fro: float, w_O0_l2: float,
                           W_Q0_spectral: float, W_K0_spectral: float, W_V0_spectral: float,
                           R_Q: float, R_K: float, R_V: float, R_O: float,
                           delta: float = 0.05, c_O: float = 1.0,
                           c_dm: float = 1.0) -> dict[str, float]:
    """The three terms of the printed Theorem 5 as numbers (``training``, ``complexity``,
    ``confidence``) and their sum ``expression``: **not a bound** (the complexity term is the
    printed Lemma 2 expression, negative wherever ``sqrt(P/N) > e A``); :func:`theorem5_printed`
    is the registered form, which refuses to report a negative value."""
    init = dict(W_Q0_fro=W_Q0_fro, W_K0_fro=W_K0_fro, W_V0_fro=W_V0_fro, w_O0_l2=w_O0_l2,
                W_Q0_spectral=W_Q0_spectral, W_K0_spectral=W_K0_spectral,
                W_V0_spectral=W_V0_spectral)
    l4 = lemma4_printed(N, d_s, d_m, R_X, alpha, phi0, R_Q=R_Q, R_K=R_K, R_V=R_V, R_O=R_O,
                        c_dm=c_dm, **init)
    e = _common(R_Q=R_Q, R_K=R_K, R_V=R_V, R_O=R_O, **init)
    P = P_printed(N, d_s, d_m, R_X, e["eta_V"], e["eta_K"], e["eta_Q"])
    A = A_bound(e["eta_O"], e["eta_V"], d_s, R_X)
    if P == 0.0 or A == 0.0:
        raise ValueError("eta_O, eta_V, eta_K, eta_Q and R_X must be > 0: the printed closed "
                         f"form is undefined at P = {P:g}, A = {A:g}")
    delta = check_probability(delta, "delta")
    c_O = check_positive(c_O, "c_O")
    rad = printed_rademacher_expression(P, A, N, 1.0)
    conf = math.sqrt(max(math.log(e["R"] / delta), 0.0) / N) if e["R"] > 0 else 0.0
    return {"training": l4.value, "complexity": c_O * rad, "confidence": c_O * conf,
            "expression": _finite(l4.value + c_O * (rad + conf), "the printed Theorem 5"),
            "P": P, "A": A, "R": e["R"]}


@_no_overflow
def theorem5_printed(N: int, d_s: int, d_m: int, R_X: float, alpha: float, phi0: float,
                     W_Q0_fro: float, W_K0_fro: float, W_V0_fro: float, w_O0_l2: float,
                     W_Q0_spectral: float, W_K0_spectral: float, W_V0_spectral: float,
                     R_Q: float, R_K: float, R_V: float, R_O: float, delta: float = 0.05,
                     c_O: float = 1.0, c_dm: float = 1.0) -> BoundValue:
    """Theorem 5 as printed, ``c_O`` the constant of its ``O(.)`` (the book uses 1). Raises
    ``ValueError`` where the printed expression is negative (no loss is);
    :func:`theorem5_printed_terms` gives the numbers."""
    t = theorem5_printed_terms(N, d_s, d_m, R_X, alpha, phi0, W_Q0_fro, W_K0_fro, W_V0_fro,
                               w_O0_l2, W_Q0_spectral, W_K0_spectral, W_V0_spectral, R_Q, R_K,
                               R_V, R_O, delta, c_O, c_dm)
    if t["expression"] < 0:
        raise ValueError(f"the printed Theorem 5 is negative here ({t['expression']:.4g}: its "
                         f"Lemma 2 term is, as sqrt(P/N) > e A at N = {N}, d_m = {d_m}): not a "
                         "bound on a loss; theorem5_printed_terms gives the numbers")
    l4_ok = lemma4_printed(N, d_s, d_m, R_X, alpha, phi0, W_Q0_fro, W_K0_fro, W_V0_fro,
                           w_O0_l2, W_Q0_spectral, W_K0_spectral, W_V0_spectral, R_Q, R_K, R_V,
                           R_O, c_dm)
    return BoundValue(t["expression"], BoundKind.TRUE_LOSS,
                      terms={k: t[k] for k in ("training", "complexity", "confidence", "P", "A",
                                               "R")},
                      constants={"delta": delta, "c_O": c_O, "c_dm": c_dm},
                      name="L_D(f) (printed)", reference=f"{_REF}, Theorem 5",
                      assumptions=_ASSUME_L4, valid=False,
                      regime="printed statement (see the audit); " + l4_ok.regime)


@_no_overflow
def radius_grid(R: float, grid: float) -> tuple[int, float]:
    """``(k, k * grid)`` with ``k = max(1, ceil(R / grid))``: the grid point at or above ``R``."""
    check_nonnegative(R, "R")
    k = max(1, math.ceil(R / check_positive(grid, "grid") - 1e-12))
    return k, k * grid


@_no_overflow
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
    radii = _nonneg(R_Q=R_Q, R_K=R_K, R_V=R_V, R_O=R_O)
    grid = check_positive(grid, "grid")
    ks, Rs = zip(*(radius_grid(r, grid) for r in radii.values()), strict=True)
    l4 = lemma4_audited(N, d_s, d_m, R_X, alpha, phi0, ell_yy, R_Q=Rs[0], R_K=Rs[1], R_V=Rs[2],
                        R_O=Rs[3], c_dm=c_dm, **init)
    e = _common(R_Q=Rs[0], R_K=Rs[1], R_V=Rs[2], R_O=Rs[3], **init)
    rad = _lemma1_audited(N, d_s, d, d_m, B_X, R_X, e, c, c_cov)
    A = rad.terms["A"]
    c_loss = A + math.log1p(math.exp(-A))  # log(1 + e^A), overflow-safe
    delta = check_probability(delta, "delta")
    union = sum(math.log(k * (k + 1)) for k in ks)
    conf = 3.0 * c_loss * math.sqrt((math.log(2 / delta) + union) / (2 * N))
    val = _finite(l4.value + 2.0 * rad.value + conf, "Theorem 5 (audited)")
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


#: The prf labels of chapter 03's statements whose audits decide the verdicts.
AUDIT_LABELS = {"rad_printed": "sgd-lem-rad-printed", "rad": "sgd-lem-rad",
                "lemma4_printed": "sgd-lem-4-printed", "lemma4": "sgd-lem-4",
                "theorem5_printed": "sgd-thm-5-printed", "theorem5": "sgd-thm-5"}
_CE_RAD = ("a Rademacher complexity is >= 0 (take sup >= any fixed member), but the printed "
           "expression c sqrt(P/N)(1 + log(A sqrt(N/P))) is negative for every c > 0 once "
           "sqrt(P/N) > e A: with probability >= 1 - 3 exp(-d_m/16) at every LeCun "
           "initialisation with d_m >= N^3 and R_O <= 0.2 N^4 - 1.3 (lecun_ratio_lower_bound; "
           "chapter 03, the proposition under the Lemma 1-2 audit, computed there at N = 8, "
           "d_m = 512), and at the chapter's toy quantities (N = 400, d_m = 64)")

for _key, _stmt, _form, _what in (
        ("lemma_1", "Lemma 1", "lemma1", "Rad_S(F_R) as printed, (1/N) sqrt(P/N)"),
        ("lemma_2", "Lemma 2", "printed", "Rad_S(G_R) as printed, c sqrt(P/N)")):
    register(Bound(key=f"shallow_gd.{_key}.printed", paper=PAPER, statement=_stmt,
                   kind=BoundKind.RADEMACHER, form="printed",
                   needs=("N", "d_s", "d_m", "R_X") + _INIT, constants={"c": 1.0},
                   fn=_lemma2_from_view, fixed={"form": _form},
                   description=_what + "(1 + log(A sqrt(N/P)))", verdict=Verdict.FALSE,
                   audit=AUDIT_LABELS["rad_printed"], counterexample=_CE_RAD))
for _key, _stmt in (("lemma_1", "Lemma 1"), ("lemma_2", "Lemma 2")):
    register(Bound(key=f"shallow_gd.{_key}.audited", paper=PAPER, statement=_stmt,
                   kind=BoundKind.RADEMACHER, form="audited",
                   needs=("N", "d_s", "d", "d_m", "R_X", "B_X") + _INIT,
                   constants={"c": DUDLEY_C_BARTLETT_2017, "c_cov": 1.0},
                   fn=_lemma1_audited_reg, fixed={"form": "audited"},
                   description="Rad_S(F_R) with the audited P (three covers: readout, value with "
                   "sqrt(d_m) eta_V, query-key with B_X^2) and the cap c A",
                   verdict=Verdict.HOLDS, audit=AUDIT_LABELS["rad"]))
register(Bound(key="shallow_gd.lemma_4.printed", paper=PAPER, statement="Lemma 4",
               kind=BoundKind.TRAINING_LOSS, form="printed",
               needs=("N", "d_s", "d_m", "R_X", "alpha", "phi0") + _INIT,
               constants={"c_dm": 1.0}, fn=lambda form, **kw: lemma4_printed(**kw),
               fixed={"form": "printed"},
               description="training loss along GD, min(.. M_hat .., .. rho^4 z_hat ..)",
               verdict=Verdict.DOES_NOT_FOLLOW, audit=AUDIT_LABELS["lemma4_printed"]))
register(Bound(key="shallow_gd.lemma_4.audited", paper=PAPER, statement="Lemma 4",
               kind=BoundKind.TRAINING_LOSS, form="audited",
               needs=("N", "d_s", "d_m", "R_X", "alpha", "phi0", "ell_yy") + _INIT,
               constants={"c_dm": 1.0}, fn=lambda form, **kw: lemma4_audited(**kw),
               fixed={"form": "audited"},
               description="training loss (GD on the squared loss): ell_yy + min(.. M .., "
               ".. rho^2 z ..)", verdict=Verdict.HOLDS, audit=AUDIT_LABELS["lemma4"]))
register(Bound(key="shallow_gd.theorem_5.printed", paper=PAPER, statement="Theorem 5",
               kind=BoundKind.TRUE_LOSS, form="printed",
               needs=("N", "d_s", "d_m", "R_X", "alpha", "phi0") + _INIT,
               constants={"delta": 0.05, "c_O": 1.0, "c_dm": 1.0},
               fn=lambda form, **kw: theorem5_printed(**kw), fixed={"form": "printed"},
               description="true loss as printed (hidden O(.) constant c_O = 1)",
               verdict=Verdict.DOES_NOT_FOLLOW, audit=AUDIT_LABELS["theorem5_printed"]))
register(Bound(key="shallow_gd.theorem_5.audited", paper=PAPER, statement="Theorem 5",
               kind=BoundKind.TRUE_LOSS, form="audited",
               needs=("N", "d_s", "d", "d_m", "R_X", "B_X", "alpha", "phi0", "ell_yy") + _INIT,
               constants={"delta": 0.05, "c": DUDLEY_C_BARTLETT_2017, "c_cov": 1.0,
                          "c_dm": 1.0, "grid": 0.1},
               fn=lambda form, **kw: theorem5_audited(**kw), fixed={"form": "audited"},
               description="true loss: Lemma 4 audited + 2 Rad audited + 3 log(1+e^A) sqrt(..)",
               verdict=Verdict.HOLDS, audit=AUDIT_LABELS["theorem5"]))
