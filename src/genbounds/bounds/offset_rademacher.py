"""The bounds of Li et al. (2026), "Sharper generalization bounds for Transformer", as code.

Every statement is a function of weight norms, ranks, sizes and ``n`` that returns a
:class:`~genbounds.bounds.registry.BoundValue`, and is registered in its printed and in its
audited form (chapter ``notebooks/04_offset_rademacher.md``, which derives and audits each one).
Notation of the paper (rows are tokens): ``B_w >= ||w||_2``; ``B_v, B_c, B_QK`` bound the
spectral norms (Section 4) or the l_{1,1} norms (Section 5.1) of ``W_v, W_c, W_QK``;
``B_X >= ||X||_{2->2}``; ``B >= |f*|``; ``kappa`` is the Lipschitz constant of the conditional
excess loss (Assumption 4.3); ``L_sigma`` that of the activation; ``delta`` the cover scale.

The audit's corrections, in one place (the chapter proves each):

1. **Log of a log** (Thms B.1, B.2, 5.3, B.4, B.5; and 6.4-6.6, 6.9-6.11 which inherit them).
   Corollaries 4.5/4.8/4.13 bound the excess risk by ``(2 M / n) (1 + log N(delta))``; the
   norm-based theorems then write ``1 + log(gamma^3/delta^2)`` where Lemma 5.2 gives
   ``log N = gamma^3/delta^2``. Audited: ``1 + gamma^3/delta^2``. Optimising ``delta`` then
   gives the rate ``n^{-1/3}``, not ``1/n``. Theorems B.4/B.5 likewise take ``log`` of the
   log covering number ``N_rank``; Theorem 5.8 does not (its form is kept).
2. **Lagrange solutions.** The minimum of ``sum_j a_j / eps_j^2`` subject to
   ``sum_j beta_j eps_j = eps`` is ``(sum_j (a_j beta_j^2)^{1/3})^3 / eps^2``
   (:func:`allocate_inverse_square`); the printed ``gamma_SH`` has the wrong coefficients
   (``(B_w L B_c)`` became ``(B_w L B_c B_v)``, the factor ``2^{2/3}`` of the QK term is lost,
   the matrices' own norms ``B_j`` are missing). The minimum of
   ``sum_i r_i C_i log(c_i / eps_i^2)`` under the same constraint is
   ``sum_i r_i C_i log(b_i^2 / eps^2)`` with ``b_i = sqrt(c_i) beta_i S / (r_i C_i)``,
   ``S = sum_k r_k C_k`` (:func:`allocate_log`); Corollary 5.6 prints
   ``b_i = (B_X beta_i S)^{1/2} / (r_i C_i)^{1/2}`` (with ``c_i = r_i B_X^2``), which is wrong.
3. **Truncation error** (Thms 6.4-6.6): the tail integral gives
   ``(T + d)(M^2 + 2 nu^2) exp(-M^2 / (2 nu^2))``; the printed ``nu (T + d) exp(...)`` drops the
   ``M^2``. The prefactor keeps ``B_X`` where it must be ``M``.
4. **Remark 6.12**: with the prefactor linear in ``M`` the balance is ``M / n = M^{2-beta}``,
   ``M ~ n^{1/(beta-1)}``, giving the printed rate ``n^{-(beta-2)/(beta-1)}``; the printed
   ``M ~ n^{1/(beta-2)}`` (from ``log M / n``) would give ``log n / n`` instead.
5. **Rank covering** (Assumption 5.7 from Lemma B.6): Lemma B.6 covers matrices whose column
   space is a *fixed* r-dimensional subspace; all rank-``r`` matrices need
   ``r (d_in + d_out + 1)`` parameters: ``log N <= r (d_in + d_out + 1) log(9 sqrt(r) B_W B_in /
   eps)`` (Candes & Plan 2011, Lemma 3.1, Frobenius radius ``sqrt(r) B_W``); the audited
   rank bounds use this, i.e. ``C_i = (d_in + d_out + 1)/2`` and ``c_i = 81 r_i B_i^2 B_in,i^2``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from genbounds.bounds.registry import Bound, BoundKind, BoundValue, Form, Verdict, register
from genbounds.validation import check_choice, check_int, check_nonnegative, check_positive

__all__ = [
    "allocate_inverse_square",
    "allocate_log",
    "cover_excess",
    "cover_excess_optimal_delta",
    "gamma_sh_printed",
    "heavy_tail_bias",
    "heavy_tail_rank_bound",
    "heavy_tail_truncation_rate",
    "norm_bound_multi_head",
    "norm_bound_multi_layer",
    "norm_bound_single_head",
    "offset_excess",
    "penalty_multi_head",
    "penalty_multi_layer",
    "penalty_single_head",
    "rank_bound_multi_head",
    "rank_bound_multi_layer",
    "rank_bound_single_head",
    "squared_loss_excess_audited",
    "subgaussian_norm_bound",
    "subgaussian_truncation_error",
]

_LI = "Li et al. 2026"
ArrayLike = Sequence[float] | np.ndarray
PAPER = "li2026sharper"


def _form(form: Any) -> Form:
    return check_choice(form, "form", ("printed", "audited"))  # type: ignore[return-value]


def _pos(**kw: Any) -> dict[str, float]:
    return {k: check_positive(v, k) for k, v in kw.items()}


# ============================================================================ Section 4
def penalty_single_head(kappa: float, B: float, B_w: float, B_c: float, B_v: float,
                        L_sigma: float, B_X: float, heads: int = 1) -> float:
    """``M = 2 kappa B + 2 kappa H B_w B_c B_v L_sigma B_X`` (Thms 4.4 / 4.7; ``beta = 1/M``).

    Twice the bound ``kappa (|f*| + |f|)`` on the conditional excess loss ``g``: the penalty
    ``1/M`` is ``1/(2 sup g)``, what symmetrisation with ``g^2 <= (sup g) g`` produces.
    """
    v = _pos(kappa=kappa, B_w=B_w, B_c=B_c, B_v=B_v, L_sigma=L_sigma, B_X=B_X)
    v["B"] = check_nonnegative(B, "B")
    H = check_int(heads, "heads")
    return 2 * v["kappa"] * v["B"] + 2 * v["kappa"] * H * v["B_w"] * v["B_c"] * v["B_v"] \
        * v["L_sigma"] * v["B_X"]


def penalty_multi_head(kappa: float, B: float, B_w: float, B_c: float, B_v: float,
                       L_sigma: float, B_X: float, heads: int) -> float:
    """``M_MH`` of Theorem 4.7 (``H`` heads summed)."""
    return penalty_single_head(kappa, B, B_w, B_c, B_v, L_sigma, B_X, heads)


def penalty_multi_layer(kappa: float, B: float, B_w: float) -> float:
    """``2 kappa (B + B_w)`` of Theorem 4.11 (rows of the last layer projected to the unit
    ball, so ``|f| <= B_w``)."""
    v = _pos(kappa=kappa, B_w=B_w)
    v["B"] = check_nonnegative(B, "B")
    return 2 * v["kappa"] * (v["B"] + v["B_w"])


def offset_excess(offset_complexity: float, approximation: float = 0.0, *,
                  statement: str = "Thm 4.4") -> BoundValue:
    """``4 R_n^off(G, 1/M) + inf_F E(f)`` (Thms 4.4, 4.7, 4.11) from an offset complexity.

    Valid when ``g(X; f) = E[l(Y, f(X)) - l(Y, f*(X)) | X]`` lies in ``[0, M/2]`` for every
    ``f`` (audit: needs ``f*`` to minimise the conditional risk pointwise, e.g. the
    well-specified squared loss) and the sample excess loss is replaced by ``g`` (audit: for
    the squared loss with noise the offset process carries the noise multipliers, Liang et al.
    2015, Thm 3).
    """
    r = check_nonnegative(offset_complexity, "offset_complexity")
    a = check_nonnegative(approximation, "approximation")
    return BoundValue(4 * r + a, BoundKind.EXCESS_RISK,
                      terms={"4 R_off": 4 * r, "approximation": a},
                      name="excess risk from the offset complexity",
                      reference=f"{_LI}, {statement}",
                      assumptions=("0 <= g <= M/2 (well-specified)", "ERM"))


def cover_excess(n: int, log_covering: float, penalty: float, kappa: float, delta: float,
                 approximation: float = 0.0, *, statement: str = "Cor. 4.5") -> BoundValue:
    """``(2 M / n)(1 + log N(delta)) + 8 kappa delta + approx`` (Cors 4.5, 4.8, 4.13).

    The finite-class step ``E max_{cover} (offset process) <= (1 + log N)/(2 n beta)`` holds
    for every ``beta > 0`` (Hoeffding's ``cosh x <= exp(x^2/2)`` at ``lambda = 2 beta``; the
    paper's condition ``beta <= 1/(2M)`` is not needed); the discretisation costs
    ``4 (1 + 2 beta sup g) kappa delta = 8 kappa delta`` at ``beta = 1/M``.
    """
    n = check_int(n, "n")
    L = check_nonnegative(log_covering, "log_covering")
    v = _pos(penalty=penalty, kappa=kappa)
    dl = check_nonnegative(delta, "delta")
    a = check_nonnegative(approximation, "approximation")
    stat = 2 * v["penalty"] / n * (1 + L)
    return BoundValue(stat + 8 * v["kappa"] * dl + a, BoundKind.EXCESS_RISK,
                      terms={"statistical": stat, "discretisation": 8 * v["kappa"] * dl,
                             "approximation": a, "log_covering": L},
                      constants={"penalty_M": v["penalty"], "kappa": v["kappa"], "delta": dl},
                      name="excess risk from an l_inf cover on the sample",
                      reference=f"{_LI}, {statement}")


def squared_loss_excess_audited(n: int, log_covering: float, b: float, sigma: float,
                                delta: float = 0.0) -> BoundValue:
    """Audited Cor. 4.5 for the squared loss: ``(4 b^2 + 24 sigma^2) log N / n + (14 b + 12
    sigma sqrt(2/pi)) delta``.

    Setting: ``y = f*(x) + xi`` with ``xi ~ N(0, sigma^2)`` independent of ``x``, ``f*`` in the
    class, ``|f - f*| <= b``, and a *uniform* ``delta``-cover of the class of size ``N``. Proof
    (chapter): with ``h = f - f*`` the ERM satisfies ``P_n h^2 <= 2 P_n xi h``, hence
    ``E h^2 <= sup (E h^2 - 3 P_n h^2) + 3 sup P_n (4 xi h - h^2)``; the first supremum is the
    paper's offset argument with ``u = h^2 in [0, b^2]`` (``<= 4 b^2 log N / n`` over the cover),
    the second an offset process with *noise* multipliers (``<= 8 sigma^2 log N / n`` by the
    Gaussian moment generating function at ``lambda = 1/(8 sigma^2)``). The noise variance
    enters; the printed Theorem 4.4 has no noise term and fails (chapter, two-function
    counterexample).
    """
    n = check_int(n, "n")
    L = check_nonnegative(log_covering, "log_covering")
    bv = check_positive(b, "b")
    sv = check_nonnegative(sigma, "sigma")
    dl = check_nonnegative(delta, "delta")
    stat = (4 * bv**2 + 24 * sv**2) * L / n
    disc = (14 * bv + 12 * sv * math.sqrt(2 / math.pi)) * dl
    return BoundValue(stat + disc, BoundKind.EXCESS_RISK,
                      terms={"offset (class) 4 b^2 log N / n": 4 * bv**2 * L / n,
                             "offset (noise) 24 sigma^2 log N / n": 24 * sv**2 * L / n,
                             "discretisation": disc},
                      constants={"b": bv, "sigma": sv, "delta": dl},
                      name="excess risk of the squared-loss ERM from a uniform cover",
                      reference=f"{_LI}, Cor. 4.5 (audited, after Liang et al. 2015)",
                      assumptions=("well-specified", "Gaussian noise N(0, sigma^2)",
                                   "|f - f*| <= b", "uniform delta-cover of size N"))


# ============================================================================ Lagrange
def allocate_inverse_square(a: Sequence[float] | np.ndarray, beta: Sequence[float] | np.ndarray,
                            eps: float) -> tuple[float, np.ndarray]:
    """``min sum_j a_j / eps_j^2`` s.t. ``sum_j beta_j eps_j = eps``: value and minimiser.

    Stationarity ``-2 a_j / eps_j^3 + lambda beta_j = 0`` gives
    ``eps_j = eps (a_j / beta_j)^{1/3} / sum_k (a_k beta_k^2)^{1/3}`` and the value
    ``(sum_j (a_j beta_j^2)^{1/3})^3 / eps^2`` (convex objective on a hyperplane, so this
    stationary point is the global minimum).
    """
    A = np.asarray(a, dtype=np.float64)
    Bt = np.asarray(beta, dtype=np.float64)
    if A.ndim != 1 or A.shape != Bt.shape or A.size == 0:
        raise ValueError("a and beta must be non-empty 1-D arrays of equal length")
    if not (np.all(A > 0) and np.all(Bt > 0) and np.all(np.isfinite(A * Bt))):
        raise ValueError("a and beta must be finite and > 0")
    e = check_positive(eps, "eps")
    s = float(np.sum(np.cbrt(A * Bt**2)))
    alloc = e * np.cbrt(A / Bt) / s
    return s**3 / e**2, alloc


def allocate_log(r: ArrayLike, C: ArrayLike, c: ArrayLike, beta: ArrayLike,
                 eps: float) -> tuple[float, np.ndarray, np.ndarray]:
    """``min sum_i r_i C_i log(c_i / eps_i^2)`` s.t. ``sum_i beta_i eps_i = eps``.

    Stationarity ``-2 r_i C_i / eps_i + lambda beta_i = 0`` gives
    ``eps_i = eps r_i C_i / (beta_i S)``, ``S = sum_k r_k C_k`` (the paper's eq. (20)), and the
    value ``sum_i r_i C_i log(b_i^2 / eps^2)`` with ``b_i = sqrt(c_i) beta_i S / (r_i C_i)``.
    Returns ``(value, eps_i, b_i)``. (Concave log objective: the stationary point is the
    minimum of ``-sum log eps_i`` on the simplex-like set, a convex problem.)
    """
    R = np.asarray(r, dtype=np.float64)
    Cc = np.asarray(C, dtype=np.float64)
    cc = np.asarray(c, dtype=np.float64)
    Bt = np.asarray(beta, dtype=np.float64)
    if R.ndim != 1 or not (R.shape == Cc.shape == cc.shape == Bt.shape) or R.size == 0:
        raise ValueError("r, C, c and beta must be non-empty 1-D arrays of equal length")
    for name, arr in (("r", R), ("C", Cc), ("c", cc), ("beta", Bt)):
        if not (np.all(arr > 0) and np.all(np.isfinite(arr))):
            raise ValueError(f"{name} must be finite and > 0")
    e = check_positive(eps, "eps")
    S = float(np.sum(R * Cc))
    alloc = e * R * Cc / (Bt * S)
    b = np.sqrt(cc) * Bt * S / (R * Cc)
    return float(np.sum(R * Cc * np.log(b**2 / e**2))), alloc, b


def corollary_5_6_printed_b(r: ArrayLike, C: ArrayLike, B_X: float, beta: ArrayLike) -> np.ndarray:
    """The printed ``b_i = (B_X beta_i S)^{1/2} / (r_i C_i)^{1/2}`` of Corollary 5.6."""
    R, Cc, Bt = (np.asarray(x, dtype=np.float64) for x in (r, C, beta))
    if R.ndim != 1 or not (R.shape == Cc.shape == Bt.shape) or R.size == 0:
        raise ValueError("r, C and beta must be non-empty 1-D arrays of equal length")
    for name, arr in (("r", R), ("C", Cc), ("beta", Bt)):
        if not (np.all(np.isfinite(arr)) and np.all(arr > 0)):
            raise ValueError(f"{name} must be finite and > 0")
    S = float(np.sum(R * Cc))
    return np.sqrt(check_positive(B_X, "B_X") * Bt * S) / np.sqrt(R * Cc)


# ============================================================================ Section 5.1
def gamma_sh_printed(C_1: float, B_x: float, B_w: float, B_c: float, B_v: float,
                     L_sigma: float, heads: int = 1) -> float:
    """``gamma_SH`` of Theorem B.1 (``heads = 1``) or ``gamma_MH`` of Theorem B.2, as printed."""
    v = _pos(C_1=C_1, B_x=B_x, B_w=B_w, B_c=B_c, B_v=B_v, L_sigma=L_sigma)
    C_1, B_x, B_w, B_c, B_v, L_sigma = (v[k] for k in ("C_1", "B_x", "B_w", "B_c", "B_v",
                                                        "L_sigma"))
    c3, x3 = C_1 ** (1 / 3), B_x ** (2 / 3)
    H = check_int(heads, "heads")
    if H == 1:
        return c3 * x3 * ((B_w * L_sigma) ** (2 / 3) + (B_w * L_sigma * B_c * B_v) ** (2 / 3)) \
            + c3 * x3 * ((B_w * L_sigma * B_c * B_v) ** (2 / 3) + 1.0)
    return c3 * x3 * ((H * B_w * L_sigma) ** (2 / 3) + 2 * (H * B_w * L_sigma * B_c * B_v)
                      ** (2 / 3)) + c3 * x3 * H ** (2 / 3)


def _head_components(B_w: float, B_c: float, B_v: float, B_QK: float, L_sigma: float,
                     B_X: float, heads: int) -> tuple[list[float], list[float]]:
    """Audited per-component ``(B_in * B_j)`` and error weights ``beta_j`` of one layer.

    Output error ``|w^T Y - w'^T Y'| <= eps_w + B_w sum_h (eps_c + B_c L (eps_v + 2 B_v B_X
    eps_QK))`` with ``eps_j`` the sup error of component ``j``'s linear map on its inputs:
    readout (input ``||Y_cls|| <= H B_c L B_v B_X``), ``W_c`` (input ``L B_v B_X``), ``W_v``
    (input ``B_X``) and the score ``x^T W_QK x'`` (input scale ``B_X^2``;
    ``||softmax(s) - softmax(s')||_1 <= 2 ||s - s'||_inf`` and value rows ``<= B_v B_X``).
    """
    H = heads
    scale = [H * B_c * L_sigma * B_v * B_X * B_w]
    beta = [1.0]
    for _ in range(H):
        scale += [L_sigma * B_v * B_X * B_c, B_X * B_v, B_X**2 * B_QK]
        beta += [B_w, B_w * B_c * L_sigma, B_w * B_c * L_sigma * 2 * B_v * B_X]
    return scale, beta


def _squared_cover(n: int, b: float, sigma: float, log_cov: Any, delta_star: Any,
                   delta: float | None) -> tuple[float, float, float, float, float]:
    """``(value, delta, log N_proper(delta), A, K)`` of the audited squared-loss corollary
    ``A log N_proper(delta) + K delta`` with ``A = (4 b^2 + 24 sigma^2)/n`` and
    ``K = 14 b + 12 sigma sqrt(2/pi)`` (:func:`squared_loss_excess_audited`); ``delta_star(A,
    K)`` gives the minimising scale when ``delta`` is None (any ``delta > 0`` is valid)."""
    A = (4 * b**2 + 24 * sigma**2) / n
    K = 14 * b + 12 * sigma * math.sqrt(2 / math.pi)
    d = float(delta_star(A, K)) if delta is None else check_positive(delta, "delta")
    L = float(log_cov(d))
    return A * L + K * d, d, L, A, K


def _noise_args(n: int, B: float, sigma: float | None) -> tuple[int, float, float]:
    if sigma is None:
        raise ValueError("sigma (the noise standard deviation) is needed by the audited form")
    return check_int(n, "n"), check_nonnegative(B, "B"), check_nonnegative(sigma, "sigma")


_SQ_ASSUMPTIONS = ("squared loss, y = f*(X) + xi with f* in the class",
                   "Gaussian noise N(0, sigma^2) independent of X",
                   "proper delta-cover from an external cover at delta/2")


def _norm_bound(n: int, kappa: float, B: float, B_w: float, B_c: float, B_v: float,
                B_QK: float, L_sigma: float, B_X: float, C_1: float, heads: int,
                form: Form, delta: float | None, statement: str,
                B_X_prefactor: float | None = None, sigma: float | None = None) -> BoundValue:
    H = check_int(heads, "heads")
    v = _pos(B_w=B_w, B_c=B_c, B_v=B_v, B_QK=B_QK, L_sigma=L_sigma, B_X=B_X, C_1=C_1)
    B_w, B_c, B_v, B_QK, L_sigma, B_X, C_1 = (v[k] for k in ("B_w", "B_c", "B_v", "B_QK",
                                                             "L_sigma", "B_X", "C_1"))
    name = f"norm-based excess-risk bound ({'H heads' if H > 1 else 'one head'})"
    if form == "printed":
        n = check_int(n, "n")
        kappa = check_positive(kappa, "kappa")
        B = check_nonnegative(B, "B")
        bxp = B_X if B_X_prefactor is None else check_positive(B_X_prefactor, "B_X")
        pref = 4 * (kappa * B + kappa * H * B_w * B_c * B_v * L_sigma * bxp) / n
        g = gamma_sh_printed(C_1, B_X, B_w, B_c, B_v, L_sigma, H)
        d = pref / (4 * kappa) if delta is None else check_positive(delta, "delta")
        comp = 1 + math.log(g**3 / d**2)
        return BoundValue(pref * comp + 8 * kappa * d, BoundKind.EXCESS_RISK,
                          terms={"prefactor 4(kB + kH B_w B_c B_v L B_X)/n": pref, "gamma": g,
                                 "1 + log(gamma^3/delta^2)": comp,
                                 "8 kappa delta": 8 * kappa * d},
                          constants={"C_1": C_1, "kappa": kappa, "delta": d,
                                     "L_sigma": L_sigma},
                          choices={"delta": "minimiser" if delta is None else "given"},
                          name=name, reference=f"{_LI}, {statement}",
                          regime="printed: log of the log covering number, no noise term",
                          assumptions=("||W||_{1,1} bounds", "Lemma 5.2 with constant C_1"))
    n, B, sg = _noise_args(n, B, sigma)
    scale, beta = _head_components(B_w, B_c, B_v, B_QK, L_sigma, B_X, H)
    G, _ = allocate_inverse_square([C_1 * s**2 for s in scale], beta, 1.0)
    b = B + H * B_w * B_c * B_v * L_sigma * B_X
    val, d, L, A, K = _squared_cover(n, b, sg, lambda dl: 4 * G / dl**2,
                                     lambda A, K: (8 * A * G / K) ** (1 / 3), delta)
    return BoundValue(val, BoundKind.EXCESS_RISK,
                      terms={"(4b^2 + 24 sigma^2)/n": A, "gamma^3": G,
                             "log N_proper = 4 gamma^3/delta^2": L,
                             "(14 b + 12 sigma sqrt(2/pi)) delta": K * d},
                      constants={"C_1": C_1, "b": b, "sigma": sg, "delta": d,
                                 "L_sigma": L_sigma},
                      choices={"delta": "minimiser" if delta is None else "given"},
                      name=name, reference=f"{_LI}, {statement} (audited)",
                      regime="audited: noise-aware squared loss, log N = gamma^3/delta^2",
                      assumptions=("||W||_{1,1} bounds", "Lemma 5.2 with constant C_1",
                                   *_SQ_ASSUMPTIONS))


def norm_bound_single_head(n: int, kappa: float, B: float, B_w: float, B_c: float, B_v: float,
                           B_QK: float, B_X: float, *, L_sigma: float = 1.0, C_1: float = 1.0,
                           delta: float | None = None, form: Form = "audited",
                           sigma: float | None = None) -> BoundValue:
    """Theorem B.1. Printed: ``(4(kappa B + kappa B_w B_c B_v L B_X)/n)(1 + log(gamma^3 /
    delta^2)) + 8 kappa delta`` at ``delta = A/(4 kappa)`` (the minimiser). Audited (needs the
    noise level ``sigma``; ``kappa`` is not read): the noise-aware squared-loss corollary
    :func:`squared_loss_excess_audited` with ``b = B + B_w B_c B_v L B_X``, the re-derived
    ``gamma^3`` and a proper cover ``log N(delta) = 4 gamma^3/delta^2``, at the minimising
    ``delta = (8 A gamma^3 / K)^{1/3}`` (``A = (4b^2 + 24 sigma^2)/n``, ``K = 14 b + 12 sigma
    sqrt(2/pi)``): the rate is ``n^{-1/3}``."""
    return _norm_bound(n, kappa, B, B_w, B_c, B_v, B_QK, L_sigma, B_X, C_1, 1, _form(form),
                       delta, "Thm B.1", sigma=sigma)


def norm_bound_multi_head(n: int, heads: int, kappa: float, B: float, B_w: float, B_c: float,
                          B_v: float, B_QK: float, B_X: float, *, L_sigma: float = 1.0,
                          C_1: float = 1.0, delta: float | None = None,
                          form: Form = "audited", sigma: float | None = None) -> BoundValue:
    """Theorem B.2 (``H`` heads with the same norm bounds; audited ``b = B + H B_w B_c B_v L
    B_X``)."""
    return _norm_bound(n, kappa, B, B_w, B_c, B_v, B_QK, L_sigma, B_X, C_1, heads, _form(form),
                       delta, "Thm B.2", sigma=sigma)


def _alpha(i: int, L: int, L_sigma: float, B_c: float, B_v: float, B_QK: float,
           start_at_i: bool) -> float:
    lo = i if start_at_i else i + 1
    return float((L_sigma * B_c * B_v * (1 + 4 * B_QK)) ** max(0, L - lo + 1))


def norm_bound_multi_layer(n: int, layers: int, kappa: float, B: float, B_w: float, B_c: float,
                           B_v: float, B_QK: float, B_x: float, *, L_sigma: float = 1.0,
                           C_1: float = 1.0, delta: float | None = None,
                           form: Form = "audited", sigma: float | None = None) -> BoundValue:
    """Theorem 5.3 with ``gamma_ML, eta_ML`` as printed (``alpha_i`` from ``j = i`` as in the
    statement). Audited: the noise-aware squared-loss corollary with ``b = B + B_w`` and the
    proper cover ``log N(delta) = 4 (gamma + eta)^3/delta^2`` (the error propagation (18) is
    an assumption of the audited statement)."""
    f = _form(form)
    L = check_int(layers, "layers")
    v = _pos(B_w=B_w, B_c=B_c, B_v=B_v, B_QK=B_QK, B_x=B_x, L_sigma=L_sigma, C_1=C_1)
    B_w, B_c, B_v, B_QK, B_x, L_sigma, C_1 = (v[k] for k in ("B_w", "B_c", "B_v", "B_QK", "B_x",
                                                             "L_sigma", "C_1"))
    a = [_alpha(i, L, L_sigma, B_c, B_v, B_QK, True) for i in range(1, L + 1)]
    c3 = C_1 ** (1 / 3)
    gamma = c3 * (2 * L_sigma * B_c * B_v * a[0] * B_w * B_x**2) ** (2 / 3) + c3 * B_x ** (2 / 3) \
        * (1 + (a[0] * B_w) ** (2 / 3) + (a[0] * B_w * L_sigma * B_v) ** (2 / 3))
    tau = [a[i - 1] ** (2 / 3) + (2 * a[i - 1] * L_sigma * B_c * B_v) ** (2 / 3)
           + (a[i - 1] * L_sigma * B_v) ** (2 / 3) for i in range(2, L + 1)]
    eta = c3 * B_w ** (2 / 3) * sum(tau)
    G = (gamma + eta) ** 3
    if f == "printed":
        n = check_int(n, "n")
        kappa = check_positive(kappa, "kappa")
        B = check_nonnegative(B, "B")
        pref = 4 * (kappa * B + kappa * B_w) / n
        d = pref / (4 * kappa) if delta is None else check_positive(delta, "delta")
        comp = 1 + math.log(G / d**2)
        return BoundValue(pref * comp + 8 * kappa * d, BoundKind.EXCESS_RISK,
                          terms={"prefactor": pref, "gamma_ML": gamma, "eta_ML": eta,
                                 "complexity": comp, "8 kappa delta": 8 * kappa * d},
                          constants={"C_1": C_1, "kappa": kappa, "delta": d,
                                     "L_sigma": L_sigma},
                          name="norm-based excess-risk bound (L layers)",
                          reference=f"{_LI}, Thm 5.3", regime="printed: log of log N")
    n, B, sg = _noise_args(n, B, sigma)
    b = B + B_w
    val, d, Lc, A, K = _squared_cover(n, b, sg, lambda dl: 4 * G / dl**2,
                                      lambda A, K: (8 * A * G / K) ** (1 / 3), delta)
    return BoundValue(val, BoundKind.EXCESS_RISK,
                      terms={"(4b^2 + 24 sigma^2)/n": A, "gamma_ML": gamma, "eta_ML": eta,
                             "log N_proper": Lc, "(14 b + 12 sigma sqrt(2/pi)) delta": K * d},
                      constants={"C_1": C_1, "b": b, "sigma": sg, "delta": d,
                                 "L_sigma": L_sigma},
                      name="norm-based excess-risk bound (L layers)",
                      reference=f"{_LI}, Thm 5.3 (audited)",
                      regime="audited: noise-aware squared loss, log N = (gamma+eta)^3/delta^2",
                      assumptions=("||W||_{1,1} bounds", "error propagation (18)",
                                   *_SQ_ASSUMPTIONS))


# ============================================================================ Section 5.2
def _rank_bound(n: int, pref: float, kappa: float, ranks: Sequence[int], beta: Sequence[float],
                scales: Sequence[float], dims: Sequence[int], B_X: float, C_1: float,
                form: Form, delta: float | None, statement: str,
                double_log: bool, b_sup: float = 0.0, sigma: float | None = None) -> BoundValue:
    r = np.asarray(ranks, dtype=np.float64)
    if form == "printed":
        C = np.full(r.size, check_positive(C_1, "C_1"))
        S = float(np.sum(r * C))
        d = pref * S / (4 * kappa) if delta is None else check_positive(delta, "delta")
        b = corollary_5_6_printed_b(r, C, B_X, beta)
        L_cov = float(np.sum(r * C * np.maximum(np.log(b**2 / d**2), 0.0)))
        comp = 1 + math.log(1 + L_cov) if double_log else 1 + L_cov
        return BoundValue(pref * comp + 8 * kappa * d, BoundKind.EXCESS_RISK,
                          terms={"prefactor": pref, "log_covering": L_cov, "complexity": comp,
                                 "8 kappa delta": 8 * kappa * d, "sum r_i C_i": S},
                          constants={"C_1": C_1, "kappa": kappa, "delta": d},
                          name="rank-based excess-risk bound", reference=f"{_LI}, {statement}",
                          regime="printed (Cor. 5.6 b_i" + (", log of 1 + log N)" if double_log
                                                            else ")") + ", no noise term",
                          assumptions=("rank and spectral-norm bounds",))
    C = (np.asarray(dims, dtype=np.float64) + 1) / 2
    S = float(np.sum(r * C))
    c = 81 * r * np.asarray(scales, dtype=np.float64) ** 2
    _, _, bi = allocate_log(r, C, c, beta, 1.0)

    def log_cov(dl: float) -> float:   # proper cover at delta from external covers at delta/2
        return float(np.sum(r * C * np.maximum(np.log(4 * bi**2 / dl**2), 0.0)))

    n, _, sg = _noise_args(n, 0.0, sigma)
    val, d, L_cov, A, K = _squared_cover(n, b_sup, sg, log_cov, lambda A, K: 2 * A * S / K,
                                         delta)
    return BoundValue(val, BoundKind.EXCESS_RISK,
                      terms={"(4b^2 + 24 sigma^2)/n": A, "log_covering": L_cov,
                             "sum r_i C_i": S, "(14 b + 12 sigma sqrt(2/pi)) delta": K * d},
                      constants={"b": b_sup, "sigma": sg, "delta": d},
                      name="rank-based excess-risk bound",
                      reference=f"{_LI}, {statement} (audited)",
                      regime="audited: noise-aware squared loss, b_i re-derived, Candes-Plan "
                             "rank covers",
                      assumptions=("rank and spectral-norm bounds", *_SQ_ASSUMPTIONS))


def _layer_rank_parts(d: int, k: int, r_QK: int, r_v: int, r_c: int, B_w: float, B_c: float,
                      B_v: float, B_QK: float, L_sigma: float, B_X: float, heads: int,
                      printed: bool) -> tuple[list[int], list[float], list[float], list[int]]:
    H = heads
    ranks: list[int] = [1]
    beta: list[float] = [H * B_c if printed else 1.0]
    scale, beta_a = _head_components(B_w, B_c, B_v, B_QK, L_sigma, B_X, H)
    scales: list[float] = [scale[0]]
    dims: list[int] = [d + 1]
    for h in range(H):
        ranks += [r_c, r_v, r_QK]
        if printed:
            beta += [H * B_w * L_sigma, H * B_w * L_sigma * B_c, 2 * H * B_w * L_sigma * B_c * B_v]
        else:
            beta += beta_a[1 + 3 * h: 4 + 3 * h]
        scales += scale[1 + 3 * h: 4 + 3 * h]
        dims += [k + d, d + k, 2 * d]
    return ranks, beta, scales, dims


def _rank_sizes(d: int, k: int, r_QK: int, r_v: int, r_c: int) -> None:
    check_int(d, "d")
    check_int(k, "k")
    check_int(r_QK, "r_QK", 1, d)
    check_int(r_v, "r_v", 1, min(d, k))
    check_int(r_c, "r_c", 1, min(d, k))


def rank_bound_single_head(n: int, d: int, k: int, r_QK: int, r_v: int, r_c: int, kappa: float,
                           B: float, B_w: float, B_c: float, B_v: float, B_QK: float,
                           B_X: float, *, L_sigma: float = 1.0, C_1: float = 1.0,
                           delta: float | None = None, form: Form = "audited",
                           heads: int = 1, sigma: float | None = None) -> BoundValue:
    """Theorem B.4 (``heads = 1``) / B.5. Printed: ``A (1 + log(1 + log N_rank)) + 8 kappa
    delta`` with the printed Cor. 5.6 ``b_i``, at ``delta = A S/(4 kappa)`` (``A`` the printed
    prefactor). Audited (needs ``sigma``; ``kappa`` not read): the noise-aware squared-loss
    corollary with ``b = B + H B_w B_c B_v L B_X``, the re-derived ``b_i`` and the Candes-Plan
    rank covers, at ``delta = 2 A S / K`` (rate ``log n / n``)."""
    f = _form(form)
    H = check_int(heads, "heads")
    n = check_int(n, "n")
    _rank_sizes(d, k, r_QK, r_v, r_c)
    v = _pos(B_w=B_w, B_c=B_c, B_v=B_v, B_QK=B_QK, L_sigma=L_sigma, B_X=B_X)
    B = check_nonnegative(B, "B")
    ranks, beta, scales, dims = _layer_rank_parts(d, k, r_QK, r_v, r_c, v["B_w"], v["B_c"],
                                                  v["B_v"], v["B_QK"], v["L_sigma"], v["B_X"],
                                                  H, f == "printed")
    st = "Thm B.4" if H == 1 else "Thm B.5"
    b_f = H * v["B_w"] * v["B_c"] * v["B_v"] * v["L_sigma"] * v["B_X"]
    if f == "printed":
        kp = check_positive(kappa, "kappa")
        pref = 4 * (kp * B + kp * b_f) / n
        return _rank_bound(n, pref, kp, ranks, beta, scales, dims, v["B_X"], C_1, f, delta, st,
                           double_log=True)
    return _rank_bound(n, 0.0, 1.0, ranks, beta, scales, dims, v["B_X"], C_1, f, delta, st,
                       double_log=True, b_sup=B + b_f, sigma=sigma)


def rank_bound_multi_head(n: int, heads: int, d: int, k: int, r_QK: int, r_v: int, r_c: int,
                          kappa: float, B: float, B_w: float, B_c: float, B_v: float,
                          B_QK: float, B_X: float, *, L_sigma: float = 1.0, C_1: float = 1.0,
                          delta: float | None = None, form: Form = "audited",
                          sigma: float | None = None) -> BoundValue:
    """Theorem B.5."""
    return rank_bound_single_head(n, d, k, r_QK, r_v, r_c, kappa, B, B_w, B_c, B_v, B_QK, B_X,
                                  L_sigma=L_sigma, C_1=C_1, delta=delta, form=form, heads=heads,
                                  sigma=sigma)


def rank_bound_multi_layer(n: int, layers: int, d: int, k: int, r_QK: int, r_v: int, r_c: int,
                           kappa: float, B: float, B_w: float, B_c: float, B_v: float,
                           B_QK: float, B_X: float, *, L_sigma: float = 1.0, C_1: float = 1.0,
                           delta: float | None = None, form: Form = "audited",
                           sigma: float | None = None) -> BoundValue:
    """Theorem 5.8: ``3L + 1`` components with the printed weights ``beta_k`` (``alpha`` from
    ``j = i + 1`` as in the proof's (18)); audited: the noise-aware squared-loss corollary with
    ``b = B + B_w``, the re-derived ``b_i``, the rank covers of correction 5 (inputs of layers
    ``>= 2`` have rows in the unit ball) and the ``W_v`` weights of (18) (``B_c`` where the
    printed ``beta_k`` has ``B_v``). Negative logarithms (a cover scale above the class radius)
    count as 0 in both forms."""
    f = _form(form)
    L = check_int(layers, "layers")
    n = check_int(n, "n")
    _rank_sizes(d, k, r_QK, r_v, r_c)
    vv = _pos(B_w=B_w, B_c=B_c, B_v=B_v, B_QK=B_QK, L_sigma=L_sigma, B_X=B_X)
    B_w, B_c, B_v, B_QK, L_sigma, B_X = (vv[x] for x in ("B_w", "B_c", "B_v", "B_QK",
                                                         "L_sigma", "B_X"))
    B = check_nonnegative(B, "B")
    al = [_alpha(i, L, L_sigma, B_c, B_v, B_QK, False) for i in range(1, L + 1)]
    ranks = [1] + [r_c] * L + [r_v] * L + [r_QK] * L
    # W_v weights: printed beta_k = alpha B_w L_sigma B_v; the proof's (18) has
    # alpha B_w L_sigma B_c (the value error passes through W_c): audited uses (18)
    v_factor = B_v if f == "printed" else B_c
    beta = [1.0] + [al[i] * B_w for i in range(L)] + [al[i] * B_w * L_sigma * v_factor
                                                      for i in range(L)] \
        + [al[i] * 2 * L_sigma * B_c * B_v * B_w for i in range(L)]
    bin_ = [B_X] + [1.0] * (L - 1)
    scales = [B_w] + [L_sigma * B_v * bin_[i] * B_c for i in range(L)] \
        + [bin_[i] * B_v for i in range(L)] + [bin_[i] ** 2 * B_QK for i in range(L)]
    dims = [d + 1] + [k + d] * L + [d + k] * L + [2 * d] * L
    if f == "printed":
        kp = check_positive(kappa, "kappa")
        pref = 4 * (kp * B + kp * B_w) / n
        return _rank_bound(n, pref, kp, ranks, beta, scales, dims, B_X, C_1, f, delta,
                           "Thm 5.8", double_log=False)
    return _rank_bound(n, 0.0, 1.0, ranks, beta, scales, dims, B_X, C_1, f, delta, "Thm 5.8",
                       double_log=False, b_sup=B + B_w, sigma=sigma)


# ============================================================================ Section 6
def subgaussian_truncation_error(M: float, nu: float, T: int, d: int, kappa: float, *,
                                 C_trunc: float = 1.0, form: Form = "audited") -> float:
    """``T_err(M)`` of Thms 6.4-6.6. Printed: ``C kappa nu (T + d) exp(-M^2/(2 nu^2))``;
    audited (the proof's own tail integral): ``C kappa (T + d)(M^2 + 2 nu^2) exp(-M^2/(2
    nu^2))``. ``C_trunc`` is the hidden constant (the local Lipschitz constant ``C``)."""
    f = _form(form)
    v = _pos(M=M, nu=nu, kappa=kappa, C_trunc=C_trunc)
    e = math.exp(-v["M"] ** 2 / (2 * v["nu"] ** 2))
    TD = check_int(T, "T") + check_int(d, "d")
    if f == "printed":
        return v["C_trunc"] * v["kappa"] * v["nu"] * TD * e
    return v["C_trunc"] * v["kappa"] * TD * (v["M"] ** 2 + 2 * v["nu"] ** 2) * e


def heavy_tail_bias(M: float, beta: float, C: float, T: int, d: int, kappa: float, *,
                    B_psi: float = 1.0, form: Form = "audited") -> float:
    """``C_beta M^{2-beta}`` of Thms 6.9-6.11. Printed: ``C M^{2-beta}`` (``C_beta = C``);
    audited (Appendix C.2's integral): ``kappa B_psi C' beta/(beta-2) M^{2-beta}`` with
    ``C' = C (T d)^{1 + beta/2}`` from the entrywise tail ``P(|X_ij| > t) <= C t^{-beta}``."""
    f = _form(form)
    v = _pos(M=M, beta=beta, C=C, kappa=kappa, B_psi=B_psi)
    if v["beta"] <= 2:
        raise ValueError(f"beta must be > 2, got {beta}")
    if f == "printed":
        return v["C"] * v["M"] ** (2 - v["beta"])
    Cp = v["C"] * (check_int(T, "T") * check_int(d, "d")) ** (1 + v["beta"] / 2)
    return v["kappa"] * v["B_psi"] * Cp * v["beta"] / (v["beta"] - 2) \
        * v["M"] ** (2 - v["beta"])


def heavy_tail_truncation_rate(beta: float, *, form: Form = "audited") -> tuple[float, float]:
    """``(threshold exponent, rate exponent)`` of Remark 6.12: ``M ~ n^a`` and excess
    ``~ n^{-rate}``. Printed: ``a = 1/(beta - 2)``, rate ``(beta - 2)/(beta - 1)``; audited:
    balancing ``M / n`` (prefactor linear in ``M``) with ``M^{2 - beta}`` gives
    ``a = 1/(beta - 1)`` and the same rate."""
    f = _form(form)
    b = check_positive(beta, "beta")
    if b <= 2:
        raise ValueError(f"beta must be > 2, got {beta}")
    a = 1 / (b - 2) if f == "printed" else 1 / (b - 1)
    return a, (b - 2) / (b - 1)


def _with_term(base: BoundValue, name: str, value: float, statement: str,
               extra_constants: dict[str, float]) -> BoundValue:
    return BoundValue(base.value + value, BoundKind.EXCESS_RISK,
                      terms={**base.terms, name: value},
                      constants={**base.constants, **extra_constants}, choices=base.choices,
                      name=base.name + f" + {name}", reference=f"{_LI}, {statement}",
                      assumptions=base.assumptions, valid=base.valid, regime=base.regime)


def subgaussian_norm_bound(n: int, M: float, nu: float, T: int, d: int, kappa: float, B: float,
                           B_w: float, B_c: float, B_v: float, B_QK: float, B_X: float, *,
                           heads: int = 1, layers: int = 1, L_sigma: float = 1.0,
                           C_1: float = 1.0, C_trunc: float = 1.0, delta: float | None = None,
                           form: Form = "audited", sigma: float | None = None) -> BoundValue:
    """Theorems 6.4 (one head), 6.5 (``heads > 1``), 6.6 (``layers > 1``): the norm-based
    bound of the truncated class plus ``T_err(M)``. Printed: ``gamma`` at ``M`` but the prefactor
    keeps ``B_X`` (as the statements print it) and the printed ``T_err``; audited: the
    noise-aware squared-loss bound of the class on inputs truncated at ``M`` (``M``
    everywhere; needs ``sigma``) plus the audited ``T_err``
    (:func:`subgaussian_truncation_error`), under the paper's hypothesis that the truncation
    error is at most ``C_trunc kappa E[||X||^2 1{||X|| > M}]`` (assumed, not proved). ``B_X``
    is only read by the printed one- and multi-head forms."""
    f = _form(form)
    L = check_int(layers, "layers")
    Mv = check_positive(M, "M")
    if L > 1:
        base = norm_bound_multi_layer(n, L, kappa, B, B_w, B_c, B_v, B_QK, Mv, L_sigma=L_sigma,
                                      C_1=C_1, delta=delta, form=f, sigma=sigma)
        st = "Thm 6.6"
    else:
        st = "Thm 6.4" if heads == 1 else "Thm 6.5"
        base = _norm_bound(n, kappa, B, B_w, B_c, B_v, B_QK, L_sigma, Mv, C_1, heads, f, delta,
                           st, B_X_prefactor=check_positive(B_X, "B_X") if f == "printed"
                           else None, sigma=sigma)
    t = subgaussian_truncation_error(Mv, nu, T, d, kappa, C_trunc=C_trunc, form=f)
    return _with_term(base, "T_err(M)", t, st, {"M": Mv, "nu": nu, "C_trunc": C_trunc})


def heavy_tail_rank_bound(n: int, M: float, beta: float, C: float, T: int, d: int, k: int,
                          r_QK: int, r_v: int, r_c: int, kappa: float, B: float, B_w: float,
                          B_c: float, B_v: float, B_QK: float, *, heads: int = 1,
                          layers: int = 1, L_sigma: float = 1.0, C_1: float = 1.0,
                          B_psi: float = 1.0, delta: float | None = None,
                          form: Form = "audited", sigma: float | None = None) -> BoundValue:
    """Theorems 6.9 (one head), 6.10 (``heads > 1``), 6.11 (``layers > 1``): the rank-based
    bound (B.4 / B.5 / 5.8) with ``B_X`` replaced by the threshold ``M``, plus the truncation
    bias (:func:`heavy_tail_bias`; ``kappa`` is the robust loss's Lipschitz constant
    ``kappa B_psi`` of Appendix C.2 in the audited form). Audited: the noise-aware squared-loss
    rank bound of the class on inputs truncated at ``M`` (needs ``sigma``) plus the audited
    bias, under the paper's hypothesis that the truncation bias is at most that moment
    integral times ``kappa B_psi`` (assumed, not proved)."""
    f = _form(form)
    L = check_int(layers, "layers")
    Mv = check_positive(M, "M")
    if L > 1:
        base = rank_bound_multi_layer(n, L, d, k, r_QK, r_v, r_c, kappa, B, B_w, B_c, B_v,
                                      B_QK, Mv, L_sigma=L_sigma, C_1=C_1, delta=delta, form=f,
                                      sigma=sigma)
        st = "Thm 6.11"
    else:
        base = rank_bound_single_head(n, d, k, r_QK, r_v, r_c, kappa, B, B_w, B_c, B_v, B_QK,
                                      Mv, L_sigma=L_sigma, C_1=C_1, delta=delta, form=f,
                                      heads=heads, sigma=sigma)
        st = "Thm 6.9" if heads == 1 else "Thm 6.10"
    bias = heavy_tail_bias(Mv, beta, C, T, d, kappa, B_psi=B_psi, form=f)
    return _with_term(base, "truncation bias", bias, st, {"M": Mv, "beta": beta, "C": C})


def offset_excess_audited(offset_complexity: float, noise_offset_complexity: float, *,
                          statement: str = "Thm 4.4") -> BoundValue:
    """Audited Theorem 4.4 (4.7, 4.11) for the squared loss:
    ``E(f_hat - f*)^2 <= 4 R_off_n({h^2}, 1/(2 b^2)) + 3 E sup_h P_n(4 xi h - h^2)``.

    ``h = f - f*`` ranges over the class minus ``f*`` (``|h| <= b``), ``xi`` is the noise.
    The first term is the paper's offset complexity with the sample excess loss replaced by
    ``h^2``; the second (``noise_offset_complexity``) is an offset process whose multipliers
    are the noise, not signs. Valid for the ERM when ``f*`` is in the class (chapter,
    ``or-thm-4-4-audited``).
    """
    r = check_nonnegative(offset_complexity, "offset_complexity")
    q = check_nonnegative(noise_offset_complexity, "noise_offset_complexity")
    return BoundValue(4 * r + 3 * q, BoundKind.EXCESS_RISK,
                      terms={"4 R_off(h^2, 1/(2b^2))": 4 * r,
                             "3 E sup P_n(4 xi h - h^2)": 3 * q},
                      name="excess risk from the two offset complexities (squared loss)",
                      reference=f"{_LI}, {statement} (audited)",
                      assumptions=("squared loss, f* in the class", "ERM"))


# ============================================================================ counterexample
def _phi_cdf(x: float) -> float:
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def one_token_instance(n: int, sigma: float, *, heads: int = 1, layers: int = 1) -> dict[str,
                                                                                          float]:
    """Exact numbers of the chapter's counterexample inside the paper's own class.

    One token (``T = d = k = 1``), input ``x = 1``, every norm bound 1
    (``B_w = B_c = B_v = B_QK = B_X = L_sigma = 1``), ReLU: the one-layer ``H``-head class is
    exactly the constants in ``[-a, a]`` with ``a = H``, the ``L``-layer class (rows projected
    to the unit ball) the constants in ``[-1, 1]`` (the chapter checks both on a grid). Teacher
    ``f* = 0`` (so ``B = 0``), ``y = xi ~ N(0, sigma^2)``; the conditional excess loss is
    ``g = f^2`` with Lipschitz constant ``kappa = 2a``; the ERM is ``clip(mean y, -a, a)``.

    Returns ``a``, ``kappa``, the printed penalty ``M`` (Thm 4.4 / 4.7: ``M_SH``; 4.11:
    ``2 kappa (B + B_w)``), ``printed_thm_4_4 = 4 R_off(G, 1/M)`` computed exactly over the
    ``n + 1`` values of the mean of the signs, ``printed_cor_4_5`` (the printed corollary
    minimised over ``delta``, with ``N(delta) = ceil(a/delta)``) and ``true_excess =
    E min(ybar^2, a^2)`` in closed form.
    """
    n = check_int(n, "n")
    sg = check_positive(sigma, "sigma")
    H = check_int(heads, "heads")
    L = check_int(layers, "layers")
    a = float(H) if L == 1 else 1.0
    kappa = 2 * a
    M = penalty_single_head(kappa, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, H) if L == 1 else \
        penalty_multi_layer(kappa, 0.0, 1.0)
    k = np.arange(n + 1)
    logpmf = np.array([math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1)
                       for j in range(n + 1)]) - n * math.log(2)
    t = (2 * k - n) / n
    u_star = np.clip(M * t / 2, 0.0, a**2)              # argmax of u t - u^2/M on [0, a^2]
    sup = u_star * t - u_star**2 / M
    r_off = float(np.sum(np.exp(logpmf) * sup))
    cmax = 4 * kappa * a * n / M
    cands = {max(1, int(c)) for c in (cmax, cmax + 1, cmax - 1, 1.0)}
    cor = min(cover_excess(n, math.log(N), M, kappa, a / N).value for N in cands)
    s = sg / math.sqrt(n)
    c = a / s
    inside = (2 * _phi_cdf(c) - 1) - 2 * c * math.exp(-c * c / 2) / math.sqrt(2 * math.pi)
    true = s**2 * inside + a**2 * 2 * (1 - _phi_cdf(c))
    return {"a": a, "kappa": kappa, "M": M, "printed_thm_4_4": 4 * r_off,
            "printed_cor_4_5": cor, "true_excess": true}


def printed_on_instance(n: int, sigma: float) -> dict[str, float]:
    """Every printed norm-, rank- and sub-Gaussian statement evaluated on the one-token
    instance (:func:`one_token_instance`, ``B = 0``, ``kappa = 2a``, ``T = d = k = 1``, ranks
    1, ``M = 10``, ``nu = 1``: inputs of norm 1 are sub-Gaussian with ``nu = 1`` and never
    truncated), two heads for the H-head statements, two layers for the L-layer ones; with the
    instance's true excess risk of the ERM under each class (``true_*``)."""
    one: dict[str, Any] = dict(B=0.0, B_w=1.0, B_c=1.0, B_v=1.0, B_QK=1.0)
    rk: dict[str, Any] = dict(d=1, k=1, r_QK=1, r_v=1, r_c=1)
    out: dict[str, float] = {}
    for H, L, tag in ((1, 1, "single"), (2, 1, "multi"), (1, 2, "deep")):
        inst = one_token_instance(n, sigma, heads=H, layers=L)
        kp = inst["kappa"]
        out[f"true_{tag}"] = inst["true_excess"]
        if L > 1:
            out["thm_5_3"] = norm_bound_multi_layer(n, L, kp, B_x=1.0, form="printed",
                                                    **one).value
            out["thm_5_8"] = rank_bound_multi_layer(n, L, **rk, kappa=kp, B_X=1.0,
                                                    form="printed", **one).value
            out["thm_6_6"] = subgaussian_norm_bound(n, 10.0, 1.0, 1, 1, kp, B_X=1.0, layers=L,
                                                    form="printed", **one).value
        else:
            key = ("thm_b_1", "thm_b_4", "thm_6_4") if H == 1 else ("thm_b_2", "thm_b_5",
                                                                     "thm_6_5")
            out[key[0]] = norm_bound_multi_head(n, H, kp, B_X=1.0, form="printed",
                                                **one).value
            out[key[1]] = rank_bound_multi_head(n, H, **rk, kappa=kp, B_X=1.0, form="printed",
                                                **one).value
            out[key[2]] = subgaussian_norm_bound(n, 10.0, 1.0, 1, 1, kp, B_X=1.0, heads=H,
                                                 form="printed", **one).value
    return out


def cover_excess_optimal_delta(prefactor: float, G: float, kappa: float) -> float:
    """``argmin_delta A (1 + G/delta^2) + 8 kappa delta = (A G / (4 kappa))^{1/3}``."""
    v = _pos(prefactor=prefactor, G=G, kappa=kappa)
    return float((v["prefactor"] * v["G"] / (4 * v["kappa"])) ** (1 / 3))


# ============================================================================ registry
#: The counterexample's sizes (chapter 04 computes the same instance by Monte Carlo).
COUNTEREXAMPLE_N, COUNTEREXAMPLE_SIGMA = 10_000, 10.0
COUNTEREXAMPLE_SIGMA_COVER = 100.0
_CONST = {"L_sigma": 1.0, "C_1": 1.0}
_NORMS = ("B", "B_w", "B_c", "B_v", "B_QK")


def _counterexamples() -> dict[str, str]:
    """The registered counterexample of every statement the audit finds false, with its
    numbers computed here (exact) and by Monte Carlo in chapter 04."""
    from genbounds.tables import format_number as fmt

    n, s = COUNTEREXAMPLE_N, COUNTEREXAMPLE_SIGMA
    sc = COUNTEREXAMPLE_SIGMA_COVER
    inst = {tag: one_token_instance(n, s, heads=H, layers=L)
            for tag, H, L in (("single", 1, 1), ("multi", 2, 1), ("deep", 1, 2))}
    base = ("one token (T = d = k = 1), input x = 1, every norm bound 1, ReLU, teacher f* = 0 "
            "(B = 0), y = N(0, σ²) noise; the class is the constants in [-a, a] and g = f^2 "
            "has κ = 2a (chapter 04, one-token counterexample, Monte Carlo with its interval)")
    out: dict[str, str] = {}
    for key, tag, what in (("thm_4_4", "single", "one head"), ("thm_4_7", "multi", "two heads"),
                           ("thm_4_11", "deep", "two layers")):
        v = inst[tag]
        out[key] = (f"{what}, {base}: at n = {n}, σ = {fmt(s)} the printed bound "
                    f"4 R^off(G, 1/M) = {fmt(v['printed_thm_4_4'])} (free of σ) but the "
                    f"ERM's excess risk is {fmt(v['true_excess'])}")
    inst_c = {tag: one_token_instance(n, sc, heads=H, layers=L)
              for tag, H, L in (("single", 1, 1), ("multi", 2, 1), ("deep", 1, 2))}
    for key, tag, what in (("cor_4_5", "single", "one head"), ("cor_4_8", "multi", "two heads"),
                           ("cor_4_13", "deep", "two layers")):
        v = inst_c[tag]
        out[key] = (f"{what}, {base}: at n = {n}, σ = {fmt(sc)} the printed corollary, "
                    f"minimised over α with N(α) = ⌈a/α⌉, is "
                    f"{fmt(v['printed_cor_4_5'])} but the ERM's excess risk is "
                    f"{fmt(v['true_excess'])}")
    pv = printed_on_instance(n, sc)
    for key, tag in (("thm_b_1", "single"), ("thm_b_2", "multi"), ("thm_5_3", "deep"),
                     ("thm_b_4", "single"), ("thm_b_5", "multi"), ("thm_5_8", "deep"),
                     ("thm_6_4", "single"), ("thm_6_5", "multi"), ("thm_6_6", "deep")):
        if pv[key] < pv[f"true_{tag}"]:
            what = {"single": "one head", "multi": "two heads", "deep": "two layers"}[tag]
            out[key] = (f"{base} ({what}; "
                        f"M = 10, ν = 1 for Section 6): at n = {n}, σ = {fmt(sc)} the printed "
                        f"bound is {fmt(pv[key])} but the ERM's excess risk is "
                        f"{fmt(pv['true_' + tag])}")
    return out


_CE = _counterexamples()

#: key -> (statement, printed audit label, printed verdict if not FALSE, audited label)
_STATEMENTS: dict[str, tuple[str, str, Verdict | None, str]] = {
    "thm_4_4": ("Thm 4.4", "or-thm-4-4", None, "or-thm-4-4-audited"),
    "thm_4_7": ("Thm 4.7", "or-thm-4-4", None, "or-thm-4-4-audited"),
    "thm_4_11": ("Thm 4.11", "or-thm-4-4", None, "or-thm-4-4-audited"),
    "cor_4_5": ("Cor. 4.5", "or-cor-4-5", None, "or-cor-4-5-audited"),
    "cor_4_8": ("Cor. 4.8", "or-cor-4-5", None, "or-cor-4-5-audited"),
    "cor_4_13": ("Cor. 4.13", "or-cor-4-5", None, "or-cor-4-5-audited"),
    "thm_b_1": ("Thm B.1", "or-thm-norm", None, "or-thm-norm-audited"),
    "thm_b_2": ("Thm B.2", "or-thm-norm", None, "or-thm-norm-audited"),
    "thm_5_3": ("Thm 5.3", "or-thm-norm", None, "or-thm-norm-audited"),
    "thm_b_4": ("Thm B.4", "or-thm-rank", None, "or-thm-rank-audited"),
    "thm_b_5": ("Thm B.5", "or-thm-rank", None, "or-thm-rank-audited"),
    "thm_5_8": ("Thm 5.8", "or-thm-rank", None, "or-thm-rank-audited"),
    "thm_6_4": ("Thm 6.4", "or-thm-6-4", None, "or-thm-6-4-audited"),
    "thm_6_5": ("Thm 6.5", "or-thm-6-4", None, "or-thm-6-4-audited"),
    "thm_6_6": ("Thm 6.6", "or-thm-6-4", None, "or-thm-6-4-audited"),
    "thm_6_9": ("Thm 6.9", "or-thm-6-9", Verdict.DOES_NOT_FOLLOW, "or-thm-6-9-audited"),
    "thm_6_10": ("Thm 6.10", "or-thm-6-9", Verdict.DOES_NOT_FOLLOW, "or-thm-6-9-audited"),
    "thm_6_11": ("Thm 6.11", "or-thm-6-9", Verdict.DOES_NOT_FOLLOW, "or-thm-6-9-audited"),
}


def _reg(key: str, needs: dict[str, tuple[str, ...]], constants: dict[str, dict[str, float]],
         fn: Any, description: str, fixed: dict[str, Any] | None = None) -> None:
    """Register ``key`` in both forms: printed with the audit's verdict (FALSE with the
    computed counterexample, else the verdict in :data:`_STATEMENTS`), audited as HOLDS."""
    statement, label, verdict, audited_label = _STATEMENTS[key]
    for form in ("printed", "audited"):
        if form == "printed":
            v = verdict if verdict is not None else Verdict.FALSE
            if v is Verdict.FALSE and key not in _CE:
                v = Verdict.DOES_NOT_FOLLOW   # no counterexample found: the proof fails only
            ce, lab = (_CE[key] if v is Verdict.FALSE else ""), label
        else:
            v, ce, lab = Verdict.HOLDS, "", audited_label
        fx = {"form": form, **(fixed or {})}
        if form == "audited" and "kappa" in needs["printed"] and "kappa" not in needs[form]:
            fx["kappa"] = 1.0   # positional in the function, not read by the audited form
        register(Bound(key=f"offset_rademacher.{key}.{form}", paper=PAPER, statement=statement,
                       kind=BoundKind.EXCESS_RISK, form=form, needs=needs[form],
                       constants=constants[form], fn=fn, fixed=fx,
                       description=description, verdict=v, audit=lab, counterexample=ce))


def _offset_fn(form: Form, statement: str, offset_complexity: float,
               approximation: float = 0.0, noise_offset_complexity: float = 0.0) -> BoundValue:
    if form == "printed":
        return offset_excess(offset_complexity, approximation, statement=statement)
    return offset_excess_audited(offset_complexity, noise_offset_complexity, statement=statement)


def _cover_fn(form: Form, statement: str, n: int, log_covering: float, delta: float,
              penalty: float = 1.0, kappa: float = 1.0, approximation: float = 0.0,
              b: float = 1.0, sigma: float = 0.0) -> BoundValue:
    if form == "printed":
        return cover_excess(n, log_covering, penalty, kappa, delta, approximation,
                            statement=statement)
    out = squared_loss_excess_audited(n, log_covering, b, sigma, delta)
    return BoundValue(out.value, out.kind, terms=out.terms, constants=out.constants,
                      name=out.name, reference=f"{_LI}, {statement} (audited)",
                      assumptions=out.assumptions)


def _both(printed: tuple[str, ...], audited: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    return {"printed": printed, "audited": audited}


def _same(c: dict[str, float]) -> dict[str, dict[str, float]]:
    return {"printed": dict(c), "audited": dict(c)}


def _noise_needs(needs: tuple[str, ...]) -> tuple[str, ...]:
    """The audited needs: ``kappa`` dropped (the squared loss fixes it), ``sigma`` added."""
    return tuple(q for q in needs if q != "kappa") + ("sigma",)


for _key in ("thm_4_4", "thm_4_7", "thm_4_11"):
    _reg(_key, _both(("offset_complexity",), ("offset_complexity", "noise_offset_complexity")),
         {"printed": {"approximation": 0.0}, "audited": {}}, _offset_fn,
         "printed: 4 R_off(G, 1/M) + approximation (false: one-token counterexample); audited: "
         "4 R_off(h^2, 1/(2b^2)) + 3 E sup P_n(4 xi h - h^2) (squared loss, noise multipliers)",
         {"statement": _STATEMENTS[_key][0]})
for _key in ("cor_4_5", "cor_4_8", "cor_4_13"):
    _reg(_key, _both(("n", "log_covering", "penalty", "kappa", "delta"),
                     ("n", "log_covering", "b", "sigma", "delta")),
         {"printed": {"approximation": 0.0}, "audited": {}}, _cover_fn,
         "printed: (2M/n)(1 + log N) + 8 kappa delta (false); audited: (4b^2 + 24 sigma^2) "
         "log N/n + (14b + 12 sigma sqrt(2/pi)) delta", {"statement": _STATEMENTS[_key][0]})
_NORM_NEEDS = ("n", "kappa", *_NORMS, "B_X")
_reg("thm_b_1", _both(_NORM_NEEDS, _noise_needs(_NORM_NEEDS)), _same(_CONST),
     norm_bound_single_head, "one head, l_{1,1} norms; audited: noise-aware squared loss, "
     "log N = gamma^3/delta^2 with the re-derived gamma (rate n^{-1/3})")
_reg("thm_b_2", _both(("heads",) + _NORM_NEEDS, _noise_needs(("heads",) + _NORM_NEEDS)),
     _same(_CONST), norm_bound_multi_head, "H heads, l_{1,1} norms")
_ML = ("layers", "n", "kappa", *_NORMS, "B_x")
_reg("thm_5_3", _both(_ML, _noise_needs(_ML)), _same(_CONST), norm_bound_multi_layer,
     "L layers, l_{1,1} norms")
_RANK_NEEDS = ("n", "d", "k", "r_QK", "r_v", "r_c", "kappa", *_NORMS, "B_X")
_reg("thm_b_4", _both(_RANK_NEEDS, _noise_needs(_RANK_NEEDS)), _same(_CONST),
     rank_bound_single_head, "one head, ranks; printed takes log of 1 + log N and the printed "
     "Cor. 5.6 b_i; audited: noise-aware squared loss, Candes-Plan rank covers (log n / n)")
_reg("thm_b_5", _both(("heads",) + _RANK_NEEDS, _noise_needs(("heads",) + _RANK_NEEDS)),
     _same(_CONST), rank_bound_multi_head, "H heads, ranks")
_reg("thm_5_8", _both(("layers",) + _RANK_NEEDS, _noise_needs(("layers",) + _RANK_NEEDS)),
     _same(_CONST), rank_bound_multi_layer, "L layers, ranks")
_SG = ("n", "M", "nu", "T", "d", "kappa", *_NORMS, "B_X")
for _key, _pre, _desc in (("thm_6_4", (), "one head"), ("thm_6_5", ("heads",), "H heads"),
                          ("thm_6_6", ("layers",), "L layers")):
    _reg(_key, _both(_pre + _SG, _pre + _SG + ("sigma",)), _same({**_CONST, "C_trunc": 1.0}),
         subgaussian_norm_bound, f"{_desc}, sub-Gaussian inputs truncated at M (norm-based + "
         "T_err; audited: noise-aware, truncation error assumed as in the paper)")
_HT = ("n", "M", "beta", "C", "T", "d", "k", "r_QK", "r_v", "r_c", "kappa", *_NORMS)
for _key, _pre, _desc in (("thm_6_9", (), "one head"), ("thm_6_10", ("heads",), "H heads"),
                          ("thm_6_11", ("layers",), "L layers")):
    _reg(_key, _both(_pre + _HT, _pre + _HT + ("sigma",)), _same({**_CONST, "B_psi": 1.0}),
         heavy_tail_rank_bound, f"{_desc}, heavy-tailed inputs (tail index beta), rank-based + "
         "bias (printed: robust loss, does not follow; audited: squared loss on truncated "
         "inputs, bias assumed as in the paper)")
