"""The Foundations toolkit: Rademacher complexity, covers, Dudley integrals, Maurey, softmax.

Conventions (stated once, used everywhere in this module)
--------------------------------------------------------
Empirical Rademacher complexity of a class ``H`` of real functions on a sample
``S = (x_1, ..., x_n)``::

    Rad_S(H) = E_sigma [ sup_{h in H} (1/n) sum_i sigma_i h(x_i) ]

with ``sigma`` uniform on ``{-1, +1}^n`` and *no* absolute value inside the supremum
(the convention of Bartlett & Mendelson (2002) without the absolute value, as in
Mohri et al. (2018) and Shalev-Shwartz & Ben-David (2014)). Estimators here draw
``n_draws`` sign vectors and return the sample mean and its standard error.

Covering numbers: ``N(eps)`` is the smallest number of closed ``eps``-balls (in the stated
norm, centres anywhere) whose union contains the set. Dudley's entropy integral is used in
the truncated ("refined") form the papers quote (Trauger & Tewari 2024, eq. before Lemma 3.1;
the shallow-encoder paper, Section 3.3)::

    Rad <= c * inf_{delta >= 0} ( delta + w * int_delta^U sqrt(log N(eps) / n) d eps )

with the constants ``c`` and ``w`` (``w = 1`` in those papers; ``4 delta + 12 int`` is
``c = 4, w = 3``) passed explicitly and ``U`` an upper limit beyond which ``log N = 0`` (the
radius of the class). Dudley (1967) integrates from 0; the form with a cut-off ``delta``
(chaining stopped at scale ``delta``, the rest paid for directly) is stated with explicit
constants by Srebro, Sridharan & Tewari (2010, Lemma A.3: ``4 delta + 10 int``, empirical L2
covers) and Bartlett, Foster & Telgarsky (2017, Lemma A.5: ``4 delta + 12 int``, classes with
values in ``[0, 1]``). In the book's text the cut-off is written ``alpha`` (``delta`` is a
confidence level there); the code keeps the argument name ``delta``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import torch
from scipy import integrate, optimize, special
from scipy.spatial.distance import cdist

from genbounds.spectral import check_norm_index
from genbounds.validation import (
    check_choice,
    check_finite_array,
    check_int,
    check_nonnegative,
    check_positive,
    check_probability,
)

__all__ = [
    "DeltaChoice",
    "DudleyResult",
    "IntegralForm",
    "MaureyResult",
    "MonteCarloEstimate",
    "SoftmaxSearchResult",
    "adversarial_softmax_search",
    "binary_kl",
    "covering_number_bounds",
    "distinct_labelings",
    "dudley_integral",
    "dudley_inverse_square",
    "dudley_optimal_delta",
    "dudley_parametric_bound",
    "dudley_parametric_optimal_delta",
    "empirical_rademacher",
    "empirical_rademacher_exact",
    "finite_class_sup",
    "greedy_cover",
    "greedy_packing",
    "hoeffding_tail",
    "kl_inverse_upper",
    "linear_l2_sup",
    "log_binomial_tail",
    "log_covering_inverse_square",
    "log_covering_parametric",
    "log_hoeffding_tail",
    "massart_bound",
    "maurey_sparsify",
    "mcdiarmid_deviation",
    "offset_finite_class_bound",
    "offset_finite_class_sup",
    "offset_linear_sup",
    "offset_rademacher_linear",
    "offset_rademacher_linear_exact",
    "pac_bayes_kl_bound",
    "pac_bayes_mcallester_bound",
    "rademacher_finite_class",
    "rademacher_linear_l2",
    "rademacher_linear_l2_bound",
    "rademacher_signs",
    "sauer_shelah_bound",
    "softmax_l1_distance",
    "softmax_l1_sharp_bound",
    "softmax_linf_ratio",
    "uniform_deviation_bound",
]

SeedLike = int | np.random.Generator | None
SupFn = Callable[[np.ndarray], np.ndarray]


# ============================================================================ helpers
def _rng(seed: SeedLike) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer)):
        raise ValueError(f"seed must be an int, a numpy Generator or None, got {seed!r}")
    if seed is not None and int(seed) < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    return np.random.default_rng(seed)


#: Largest Monte Carlo work (number of sign draws times sample size, or optimisation steps
#: times restarts times dimension) a function of this module accepts; beyond it the call would
#: run for hours or exhaust memory, and it is refused with a ``ValueError``.
MAX_WORK: int = 10**9


def _check_work(work: int, names: str) -> None:
    if work > MAX_WORK:
        raise ValueError(f"{names} too large: {work:.3g} units of work exceed the maximum "
                         f"{MAX_WORK:.0e} (genbounds.complexity.MAX_WORK)")


def _extreme_args(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
                  ) -> list[str]:
    """Names of the numeric arguments of a call, the most extreme (in |log10|) first."""
    import inspect

    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError:
        return []
    scored = []
    for name, val in bound.arguments.items():
        if isinstance(val, np.ndarray) and val.dtype.kind in "iuf" and val.size:
            with np.errstate(all="ignore"):
                top = float(np.max(np.abs(val)))
            scored.append((abs(math.log10(top)) if 0 < top < math.inf else 400.0, name))
            continue
        if isinstance(val, bool) or not isinstance(val, int | float | np.integer | np.floating):
            continue
        try:
            mag = abs(math.log10(abs(float(val)))) if val != 0 else 400.0
        except OverflowError:
            mag = 400.0
        scored.append((mag, name))
    return [n for _, n in sorted(scored, reverse=True)]


def _finite(out: Any) -> bool:
    """True when every number in ``out`` (a scalar, array, tuple or result dataclass) is finite."""
    if isinstance(out, bool | np.bool_ | str) or out is None or callable(out):
        return True
    if isinstance(out, int | np.integer):
        return True
    if isinstance(out, float | np.floating):
        return math.isfinite(float(out))
    if isinstance(out, complex | np.complexfloating):
        return False
    if isinstance(out, np.ndarray):
        return out.dtype.kind in "biu" or (out.dtype.kind == "f" and bool(np.isfinite(out).all()))
    if isinstance(out, tuple | list):
        return all(_finite(o) for o in out)
    if dataclasses.is_dataclass(out):
        # a field may be documented as +inf (DudleyResult.delta_stationary: "no stationary point")
        markers = getattr(out, "INF_MARKERS", ())
        return all(_finite(getattr(out, f.name)) or (f.name in markers
                                                      and getattr(out, f.name) == math.inf)
                   for f in dataclasses.fields(out))
    return True


F = Any


class _GuardError(ValueError):
    """A ``ValueError`` raised by :func:`_finite_guard` (re-worded by an enclosing guard)."""


def _finite_guard(fn: F) -> F:
    """Wrap a public function so that bad input fails as a ``ValueError`` naming arguments.

    A call whose result is not finite, or that overflows (``OverflowError``,
    ``ZeroDivisionError``, a non-finite intermediate rejected further down) is re-raised as a
    ``ValueError`` whose message starts with the call's arguments, the most extreme first, and
    says that the inputs leave double precision. A ``ValueError`` that already names one of the
    function's own arguments (the validation helpers' messages start with the name) passes
    unchanged. NumPy's overflow warnings are silenced inside: the result check replaces them.
    """
    import inspect

    params = tuple(inspect.signature(fn).parameters)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                out = fn(*args, **kwargs)
        except ValueError as exc:
            msg = str(exc)
            own = any(msg.startswith(p) for p in params) and not isinstance(exc, _GuardError)
            if own or "units of work exceed" in msg:
                raise
            names = _extreme_args(fn, args, kwargs) or list(params)
            raise _GuardError(f"{', '.join(names)}: {fn.__name__} cannot be evaluated at these "
                              f"inputs ({msg})") from exc
        except (OverflowError, ZeroDivisionError, FloatingPointError) as exc:
            names = _extreme_args(fn, args, kwargs) or list(params)
            raise _GuardError(f"{', '.join(names)}: {fn.__name__} overflows double precision "
                              f"at these inputs ({type(exc).__name__}: {exc})") from exc
        if not _finite(out):
            names = _extreme_args(fn, args, kwargs) or list(params)
            raise _GuardError(f"{', '.join(names)}: {fn.__name__} is not finite at these inputs "
                              "(they leave double precision)")
        if callable(out) and not isinstance(out, type):    # a sup function, a covering profile
            inner, names = out, _extreme_args(fn, args, kwargs) or list(params)

            def guarded(*a: Any, **k: Any) -> Any:
                with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                    err: Exception | None = None
                    res: Any = None
                    try:
                        res = inner(*a, **k)
                    except (OverflowError, ZeroDivisionError) as exc:
                        err = exc
                if err is not None or not _finite(res):
                    raise _GuardError(f"{', '.join(names)}: the function returned by "
                                      f"{fn.__name__} is not finite here (the inputs leave "
                                      "double precision)") from err
                return res

            return guarded
        return out

    return wrapper



# ============================================================================ Rademacher
@dataclass(frozen=True)
class MonteCarloEstimate:
    """A Monte Carlo mean with its standard error (sample std / sqrt(n_draws))."""

    mean: float
    stderr: float
    n_draws: int

    def interval(self, z: float = 2.0) -> tuple[float, float]:
        """``mean -+ z * stderr``."""
        return (self.mean - z * self.stderr, self.mean + z * self.stderr)


def rademacher_signs(n_draws: int, n: int, seed: SeedLike = 0) -> np.ndarray:
    """``n_draws`` independent Rademacher vectors, shape ``(n_draws, n)``, float64 entries +-1."""
    n_draws = check_int(n_draws, "n_draws")
    n = check_int(n, "n")
    _check_work(n_draws * n, "n_draws * n")
    rng = _rng(seed)
    return rng.integers(0, 2, size=(n_draws, n)).astype(np.float64) * 2.0 - 1.0


def _check_sup_output(vals: Any, batch: int) -> np.ndarray:
    out = np.asarray(vals, dtype=np.float64)
    if out.shape != (batch,):
        raise ValueError(
            f"sup_fn must return shape ({batch},) for a batch of {batch} sign "
            f"vectors; got {out.shape}"
        )
    if not np.all(np.isfinite(out)):
        raise ValueError("sup_fn returned non-finite values")
    return out


def empirical_rademacher(
    sup_fn: SupFn,
    n: int,
    *,
    n_draws: int = 1000,
    seed: SeedLike = 0,
    batch_size: int = 4096,
) -> MonteCarloEstimate:
    """Monte Carlo estimate of the empirical Rademacher complexity ``Rad_S(H)``.

    Parameters
    ----------
    sup_fn:
        Oracle for the class: given sign vectors of shape ``(B, n)`` it returns, for each row
        ``sigma``, the (unnormalised) supremum ``sup_{h in H} sum_i sigma_i h(x_i)``, shape
        ``(B,)``. See :func:`linear_l2_sup` and :func:`finite_class_sup`.
    n:
        Sample size (length of each sign vector); the estimate is divided by ``n``.
    n_draws:
        Number of sign vectors.
    seed:
        Seed or Generator for the signs.
    batch_size:
        Sign vectors passed to ``sup_fn`` at once.

    Returns
    -------
    MonteCarloEstimate
        Mean of ``sup_fn(sigma) / n`` over the draws and its standard error.
    """
    n = check_int(n, "n")
    n_draws = check_int(n_draws, "n_draws", minimum=2)
    batch_size = check_int(batch_size, "batch_size")
    _check_work(n_draws * n, "n_draws * n")
    if not callable(sup_fn):
        raise ValueError("sup_fn must be callable")
    rng = _rng(seed)
    vals = np.empty(n_draws)
    done = 0
    while done < n_draws:
        b = min(batch_size, n_draws - done)
        sig = rademacher_signs(b, n, rng)
        vals[done : done + b] = _check_sup_output(sup_fn(sig), b) / n
        done += b
    se = float(vals.std(ddof=1) / math.sqrt(n_draws)) if n_draws > 1 else math.nan
    return MonteCarloEstimate(float(vals.mean()), se, n_draws)


def empirical_rademacher_exact(sup_fn: SupFn, n: int) -> float:
    """Exact ``Rad_S(H)`` by enumerating all ``2^n`` sign vectors (``n <= 20``)."""
    n = check_int(n, "n")
    if n > 20:
        raise ValueError(f"n must be <= 20 for exact enumeration (2^n sign vectors), got {n}")
    codes = np.arange(2**n)[:, None] >> np.arange(n)[None, :] & 1
    sig = codes.astype(np.float64) * 2.0 - 1.0
    return float(_check_sup_output(sup_fn(sig), 2**n).mean() / n)


def linear_l2_sup(X: Any, B: float) -> SupFn:
    """Supremum oracle for ``H = {x -> <w, x> : ||w||_2 <= B}`` on the rows of ``X`` (n, d).

    By Cauchy–Schwarz, ``sup_w sum_i sigma_i <w, x_i> = B ||sum_i sigma_i x_i||_2``
    (attained at ``w = B v/||v||``, ``v = X^T sigma``).
    """
    Xa = check_finite_array(X, "X", ndim=2, shape_hint="(n, d)")
    Bv = check_nonnegative(B, "B")

    def sup(signs: np.ndarray) -> np.ndarray:
        return Bv * np.linalg.norm(signs @ Xa, axis=1)

    return sup


def rademacher_linear_l2(
    X: Any, B: float, *, n_draws: int = 1000, seed: SeedLike = 0
) -> MonteCarloEstimate:
    """Monte Carlo ``Rad_S`` of the l2-bounded linear class on the rows of ``X`` (n, d).

    Each draw is ``B ||sum_i sigma_i x_i||_2 / n`` (closed-form supremum, see
    :func:`linear_l2_sup`).
    """
    Xa = check_finite_array(X, "X", ndim=2, shape_hint="(n, d)")
    return empirical_rademacher(linear_l2_sup(Xa, B), Xa.shape[0], n_draws=n_draws, seed=seed)


def rademacher_linear_l2_bound(X: Any, B: float) -> float:
    """Upper bound ``B sqrt(sum_i ||x_i||_2^2) / n`` on ``Rad_S`` of the l2-bounded linear class.

    Jensen: ``E||sum sigma_i x_i|| <= sqrt(E||sum sigma_i x_i||^2) = sqrt(sum ||x_i||^2)``.
    """
    Xa = check_finite_array(X, "X", ndim=2, shape_hint="(n, d)")
    Bv = check_nonnegative(B, "B")
    return float(Bv * math.sqrt(float((Xa**2).sum())) / Xa.shape[0])


def finite_class_sup(predictions: Any) -> SupFn:
    """Supremum oracle for a finite class given as a matrix ``predictions[h, i] = h(x_i)``.

    ``sup_h sum_i sigma_i h(x_i) = max_h (P sigma)_h`` for ``P`` of shape ``(|H|, n)``.
    """
    P = check_finite_array(predictions, "predictions", ndim=2, shape_hint="(n_hypotheses, n)")

    def sup(signs: np.ndarray) -> np.ndarray:
        return (signs @ P.T).max(axis=1)

    return sup


def rademacher_finite_class(
    predictions: Any, *, n_draws: int = 1000, seed: SeedLike = 0
) -> MonteCarloEstimate:
    """Monte Carlo ``Rad_S`` of a finite class, ``predictions`` of shape ``(|H|, n)``."""
    P = check_finite_array(predictions, "predictions", ndim=2, shape_hint="(n_hypotheses, n)")
    return empirical_rademacher(finite_class_sup(P), P.shape[1], n_draws=n_draws, seed=seed)


def massart_bound(predictions: Any) -> float:
    """Massart's finite-class lemma: ``Rad_S(H) <= max_h ||h||_2 sqrt(2 log |H|) / n``.

    ``||h||_2`` is the Euclidean norm of the prediction vector ``(h(x_1), ..., h(x_n))``; a
    single hypothesis gives 0 (its Rademacher average is exactly 0).
    """
    P = check_finite_array(predictions, "predictions", ndim=2, shape_hint="(n_hypotheses, n)")
    m, n = P.shape
    return float(np.linalg.norm(P, axis=1).max() * math.sqrt(2.0 * math.log(m)) / n)


def uniform_deviation_bound(
    rademacher: float,
    n: int,
    delta: float,
    *,
    loss_range: float = 1.0,
    empirical: bool = False,
) -> float:
    """The symmetrisation + McDiarmid bound on ``sup_h (L(h) - L_S(h))``.

    For a loss class with values in an interval of length ``loss_range``, with probability at
    least ``1 - delta`` over an i.i.d. sample of size ``n`` (Bartlett & Mendelson 2002; Mohri
    et al. 2018, Thm 3.3; Shalev-Shwartz & Ben-David 2014, Thm 26.5)::

        empirical=False:  sup_h (L - L_S) <= 2 E_S[Rad_S] + loss_range sqrt(log(1/delta) / (2n))
        empirical=True:   sup_h (L - L_S) <= 2 Rad_S + 3 loss_range sqrt(log(2/delta) / (2n))

    Parameters
    ----------
    rademacher:
        ``E_S Rad_S`` of the *loss* class (``empirical=False``) or ``Rad_S`` on the sample.
    """
    r = check_nonnegative(rademacher, "rademacher")
    n = check_int(n, "n")
    d = check_positive(delta, "delta")
    if d >= 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    c = check_positive(loss_range, "loss_range")
    if empirical:
        return 2 * r + 3 * c * math.sqrt(math.log(2 / d) / (2 * n))
    return 2 * r + c * math.sqrt(math.log(1 / d) / (2 * n))


# ============================================================================ concentration
def hoeffding_tail(n: int, t: float, *, width: float = 1.0, two_sided: bool = False) -> float:
    """Hoeffding's bound on ``P(mean - E mean >= t)`` for ``n`` independent variables.

    Each variable takes values in an interval of length ``width``; the bound is
    ``exp(-2 n t^2 / width^2)`` (twice that for ``|mean - E mean| >= t``), capped at 1
    (Hoeffding 1963, Thm 2).
    """
    n = check_int(n, "n")
    tv = check_positive(t, "t")
    w = check_positive(width, "width")
    val = math.exp(-2.0 * n * tv * tv / (w * w)) * (2.0 if two_sided else 1.0)
    return min(1.0, val)


def log_hoeffding_tail(n: int, t: float, *, width: float = 1.0, two_sided: bool = False
                       ) -> float:
    """``log`` of :func:`hoeffding_tail`, computed without ``exp``: ``min(0, -2 n t^2 / width^2
    (+ log 2))``. Finite where the bound itself underflows to 0 (e.g. ``n = 10^4, t = 0.3``)."""
    n = check_int(n, "n")
    tv = check_positive(t, "t")
    w = check_positive(width, "width")
    if not isinstance(two_sided, bool):
        raise ValueError(f"two_sided must be a bool, got {two_sided!r}")
    return min(0.0, -2.0 * n * (tv / w) ** 2 + (math.log(2.0) if two_sided else 0.0))


def log_binomial_tail(n: int, k: int, p: float = 0.5) -> float:
    """``log P(X >= k)`` for ``X ~ Binomial(n, p)``, in log space: ``logsumexp`` of
    ``scipy.stats.binom.logpmf`` over ``k..n`` (``binom.logsf`` itself returns ``-inf`` in the
    far tail). ``n`` is at most ``10^7``.

    Exact tails of a sample mean, ``P(mean - p >= t) = P(X >= ceil(n (p + t)))``, underflow to 0
    in double precision long before their logarithm does; compare them with a bound through
    logarithms (``log_binomial_tail - log_hoeffding_tail``), never as a ratio of two underflowed
    numbers. ``k <= 0`` gives 0 (the event is certain); ``k > n`` is refused (the event is
    impossible and its logarithm is ``-inf``).
    """
    from scipy import stats

    n = check_int(n, "n", maximum=10**7)
    k = check_int(k, "k", minimum=-(2**62), maximum=n)
    pv = check_probability(p, "p")
    if k <= 0:
        return 0.0
    return min(0.0, float(special.logsumexp(stats.binom.logpmf(np.arange(k, n + 1), n, pv))))


def mcdiarmid_deviation(differences: Any, delta: float) -> float:
    """The ``t`` with ``P(g - E g >= t) <= delta`` by McDiarmid's bounded-differences inequality.

    ``differences[i]`` bounds the change of ``g`` when its ``i``-th argument changes; then
    ``P(g - E g >= t) <= exp(-2 t^2 / sum_i differences_i^2)`` (McDiarmid 1989), so
    ``t = sqrt(sum_i differences_i^2 log(1/delta) / 2)``. For a supremum of empirical means of
    a loss with range ``B_l`` the differences are all ``B_l / n`` and ``t`` is the
    ``B_l sqrt(log(1/delta) / (2n))`` of :func:`uniform_deviation_bound`.
    """
    d = check_finite_array(differences, "differences", ndim=1, shape_hint="(n,)")
    if np.any(d < 0):
        raise ValueError("differences must be >= 0")
    dl = check_probability(delta, "delta")
    return float(math.sqrt(float((d**2).sum()) * math.log(1.0 / dl) / 2.0))


# ============================================================================ offset
def offset_linear_sup(X: Any, kappa: float) -> SupFn:
    """Supremum oracle of the offset process of the unconstrained linear class on ``X`` (n, d).

    ``sup_w sum_i (xi_i <w, x_i> - kappa <w, x_i>^2) = xi^T P_X xi / (4 kappa)`` with ``P_X``
    the orthogonal projection onto the column space of ``X`` (complete the square in
    ``v = X w``, which ranges over that column space).
    """
    Xa = check_finite_array(X, "X", ndim=2, shape_hint="(n, d)")
    k = check_positive(kappa, "kappa")
    U, s, _ = np.linalg.svd(Xa, full_matrices=False)
    tol = s.max(initial=0.0) * max(Xa.shape) * np.finfo(np.float64).eps
    Ur = U[:, s > tol]

    def sup(signs: np.ndarray) -> np.ndarray:
        proj = signs @ Ur
        return (proj**2).sum(axis=1) / (4.0 * k)

    return sup


def offset_rademacher_linear(
    X: Any, kappa: float, *, n_draws: int = 1000, seed: SeedLike = 0
) -> MonteCarloEstimate:
    """Monte Carlo offset Rademacher complexity of the linear class ``{x -> <w, x>}``.

    ``E_xi sup_w (1/n) sum_i (xi_i <w, x_i> - kappa <w, x_i>^2)`` (Liang, Rakhlin & Sridharan
    2015). Its exact value is ``rank(X) / (4 kappa n)``
    (:func:`offset_rademacher_linear_exact`): no norm constraint is needed and the rate is
    ``1/n``.
    """
    Xa = check_finite_array(X, "X", ndim=2, shape_hint="(n, d)")
    return empirical_rademacher(offset_linear_sup(Xa, kappa), Xa.shape[0], n_draws=n_draws,
                                seed=seed)


def offset_rademacher_linear_exact(X: Any, kappa: float) -> float:
    """``rank(X) / (4 kappa n)``: the exact offset complexity of the linear class on ``X``.

    ``E xi^T P xi = tr(P) = rank(X)`` for a projection ``P`` and independent signs.
    """
    Xa = check_finite_array(X, "X", ndim=2, shape_hint="(n, d)")
    k = check_positive(kappa, "kappa")
    return float(np.linalg.matrix_rank(Xa) / (4.0 * k * Xa.shape[0]))


def offset_finite_class_sup(predictions: Any, kappa: float) -> SupFn:
    """Supremum oracle ``max_h sum_i (xi_i h(x_i) - kappa h(x_i)^2)``, predictions ``(|H|, n)``."""
    P = check_finite_array(predictions, "predictions", ndim=2,
                           shape_hint="(n_hypotheses, n)")
    k = check_positive(kappa, "kappa")
    offset = k * (P**2).sum(axis=1)

    def sup(signs: np.ndarray) -> np.ndarray:
        return (signs @ P.T - offset[None, :]).max(axis=1)

    return sup


def offset_finite_class_bound(n_hypotheses: int, kappa: float, n: int) -> float:
    """``log |H| / (2 kappa n)``: the offset complexity bound of a finite class.

    For every ``lambda > 0``, ``E max_h sum_i (xi_i h_i - kappa h_i^2) <= (1/lambda) log sum_h
    exp(sum_i (lambda^2/2 - lambda kappa) h_i^2)`` (Jensen, then ``cosh x <= e^{x^2/2}``); at
    ``lambda = 2 kappa`` every exponent is 0. Compare Massart's ``max_h ||h|| sqrt(2 log|H|)/n``:
    the offset removes the ``sqrt`` and with it the ``1/sqrt(n)`` rate (Liang, Rakhlin &
    Sridharan 2015, who bound offset processes over finite classes this way).
    """
    m = check_int(n_hypotheses, "n_hypotheses")
    k = check_positive(kappa, "kappa")
    n = check_int(n, "n")
    return float(math.log(m) / (2.0 * k * n))


# ============================================================================ VC
def distinct_labelings(predictions: Any) -> int:
    """Number of distinct rows of ``predictions`` (``(|H|, n)``): the labelings the class
    realises on the sample, i.e. ``|H restricted to S|``."""
    P = check_finite_array(predictions, "predictions", ndim=2,
                           shape_hint="(n_hypotheses, n)")
    return int(np.unique(P, axis=0).shape[0])


def sauer_shelah_bound(n: int, vc_dim: int) -> int:
    """``sum_{i=0}^{vc_dim} C(n, i)``: the Sauer–Shelah bound on the growth function.

    A class of VC dimension ``vc_dim`` realises at most this many labelings of ``n`` points
    (Sauer 1972; Shelah 1972); it equals ``2^n`` for ``n <= vc_dim`` and is at most
    ``(e n / vc_dim)^vc_dim`` for ``n >= vc_dim >= 1``. Exact integer arithmetic.
    """
    n = check_int(n, "n", minimum=0, maximum=100_000)
    d = check_int(vc_dim, "vc_dim", minimum=0)
    return int(sum(math.comb(n, i) for i in range(min(n, d) + 1)))


# ============================================================================ PAC-Bayes
def binary_kl(q: float, p: float) -> float:
    """``kl(q || p) = q log(q/p) + (1-q) log((1-q)/(1-p))`` for ``q, p`` in ``[0, 1]``.

    The book's one implementation is :func:`genbounds.kl.binary_kl`, which returns
    ``inf`` where the divergence is infinite (``p = 0 < q`` or ``p = 1 > q``); this form, for
    the Foundations chapter's bounds, raises a ``ValueError`` naming ``p`` there instead.
    """
    from genbounds.kl import binary_kl as kl

    out = kl(q, p)
    if math.isinf(out):
        raise ValueError(f"p must be in (0, 1) where q = {float(q)!r} puts mass outside {{0, 1}} "
                         f"(kl(q || p) is infinite), got {p!r}")
    return out


def kl_inverse_upper(q: float, budget: float) -> float:
    """``max {p in [q, 1] : kl(q || p) <= budget}``
    (:func:`genbounds.kl.kl_inverse_upper`, bisection to ``1e-12``)."""
    from genbounds.kl import kl_inverse_upper as inverse

    return inverse(q, budget)


def pac_bayes_kl_bound(empirical_risk: float, kl_divergence: float, n: int,
                       delta: float) -> float:
    """The PAC-Bayes-kl bound on the risk of a Gibbs classifier (loss in ``[0, 1]``).

    With probability ``>= 1 - delta`` over an i.i.d. sample of size ``n >= 8``, simultaneously
    for every posterior ``Q`` (the prior ``pi`` fixed before seeing the sample)::

        kl(L_n(Q) || L(Q)) <= (KL(Q || pi) + log(2 sqrt(n) / delta)) / n

    (Maurer 2004, after Langford & Seeger; McAllester's bound follows by Pinsker's inequality,
    see :func:`pac_bayes_mcallester_bound`). Returns the largest ``L(Q)`` this allows.
    """
    r = check_probability(empirical_risk, "empirical_risk", open_interval=False)
    kl = check_nonnegative(kl_divergence, "kl_divergence")
    n = check_int(n, "n", minimum=8)
    dl = check_probability(delta, "delta")
    return kl_inverse_upper(r, (kl + math.log(2.0 * math.sqrt(n) / dl)) / n)


def pac_bayes_mcallester_bound(empirical_risk: float, kl_divergence: float, n: int,
                               delta: float) -> float:
    """``L_n(Q) + sqrt((KL(Q || pi) + log(2 sqrt(n)/delta)) / (2n))`` (McAllester-type form).

    Implied by :func:`pac_bayes_kl_bound` through Pinsker's ``kl(q || p) >= 2 (p - q)^2``, so
    it is never smaller (an assert in the tests checks it).
    """
    r = check_probability(empirical_risk, "empirical_risk", open_interval=False)
    kl = check_nonnegative(kl_divergence, "kl_divergence")
    n = check_int(n, "n", minimum=8)
    dl = check_probability(delta, "delta")
    return r + math.sqrt((kl + math.log(2.0 * math.sqrt(n) / dl)) / (2.0 * n))


# ============================================================================ Dudley
def log_covering_inverse_square(A: float) -> Callable[[float], float]:
    """``eps -> A / eps^2``: the norm-based (Maurey-type) log covering numbers of the papers."""
    a = check_nonnegative(A, "A")
    return lambda eps: a / eps**2


def log_covering_parametric(dim: int, radius: float) -> Callable[[float], float]:
    """``eps -> dim * log(1 + 2 radius / eps)``: a radius-``radius`` ball in ``R^dim``.

    (The volumetric bound ``N(eps) <= (1 + 2r/eps)^dim`` for any norm ball.)
    """
    p = check_int(dim, "dim", maximum=10**15)
    r = check_positive(radius, "radius")
    return lambda eps: p * math.log1p(2.0 * r / eps)


def _check_dudley_args(n: Any, upper: Any, c: Any, weight: Any) -> tuple[int, float, float, float]:
    return (
        check_int(n, "n"),
        check_positive(upper, "upper"),
        check_positive(c, "c"),
        check_positive(weight, "weight"),
    )


def _integrand(log_covering: Callable[[float], float], n: int) -> Callable[[float], float]:
    def f(eps: float) -> float:
        val = float(log_covering(eps))
        if math.isnan(val) or val < 0:
            raise ValueError(f"log_covering({eps!r}) = {val!r}; log covering numbers must be >= 0")
        if math.isinf(val):
            raise ValueError(f"log_covering({eps!r}) is infinite")
        return math.sqrt(val / n)

    return f


def _entropy_integral(
    log_covering: Callable[[float], float], n: int, lo: float, hi: float
) -> float:
    """``int_lo^hi sqrt(log N(eps)/n) d eps`` by adaptive quadrature (log-substitution if lo>0)."""
    if hi <= lo:
        return 0.0
    f = _integrand(log_covering, n)
    with warnings.catch_warnings():
        warnings.simplefilter("error", integrate.IntegrationWarning)
        try:
            if lo > 0:
                val, _ = integrate.quad(
                    lambda t: f(math.exp(t)) * math.exp(t),
                    math.log(lo),
                    math.log(hi),
                    limit=200,
                    epsabs=0.0,
                    epsrel=1e-10,
                )
            else:
                val, _ = integrate.quad(f, 0.0, hi, limit=200, epsabs=0.0, epsrel=1e-10)
        except integrate.IntegrationWarning as exc:
            raise ValueError(
                f"the entropy integral from delta={lo!r} to upper={hi!r} did not converge "
                f"({exc}); if log N(eps) grows like 1/eps^2 the integral diverges at delta=0"
            ) from exc
    return float(val)


def dudley_integral(
    log_covering: Callable[[float], float],
    n: int,
    upper: float,
    c: float = 1.0,
    delta: float | None = None,
    *,
    weight: float = 1.0,
) -> float:
    """Dudley's entropy integral ``c * (delta + w * int_delta^U sqrt(log N(eps)/n) d eps)``.

    Parameters
    ----------
    log_covering:
        ``eps -> log N(eps)`` (natural log), non-negative and finite on ``(0, upper]``.
    n:
        Sample size.
    upper:
        Upper limit ``U`` of the integral (beyond it ``log N = 0``).
    c:
        Overall constant (the papers' unspecified ``c``).
    delta:
        Lower limit in ``[0, upper]``; ``None`` (default) minimises over ``delta`` with
        :func:`dudley_optimal_delta`, i.e. returns the infimum.
    weight:
        Constant ``w`` in front of the integral (``4 delta + 12 int`` is ``c=4, weight=3``).

    Raises
    ------
    ValueError
        Bad constants, ``delta`` outside ``[0, upper]``, negative / non-finite ``log N``, or a
        divergent integral (e.g. ``log N = A/eps^2`` with ``delta = 0``).
    """
    n, U, cv, w = _check_dudley_args(n, upper, c, weight)
    if delta is None:
        d = dudley_optimal_delta(log_covering, n, U, weight=w)
    else:
        d = check_nonnegative(delta, "delta")
        if d > U:
            raise ValueError(f"delta must be in [0, upper={U}], got {delta!r}")
    return cv * (d + w * _entropy_integral(log_covering, n, d, U))


def dudley_optimal_delta(
    log_covering: Callable[[float], float],
    n: int,
    upper: float,
    *,
    weight: float = 1.0,
    grid_size: int = 241,
) -> float:
    """The ``delta`` in ``[0, upper]`` minimising ``delta + w int_delta^U sqrt(log N/n)``.

    The derivative in ``delta`` is ``1 - w sqrt(log N(delta)/n)``. When ``log N`` is
    non-increasing (true covering numbers always are) the objective is convex and the minimiser
    is the smallest ``delta`` with ``w^2 log N(delta) <= n``, found by root finding in
    ``log delta`` (``upper`` if ``w^2 log N(upper) > n``; ``0.0`` if ``w^2 log N <= n`` down to
    ``delta = upper * 1e-150``). For a ``log N`` that is not monotone on the search grid the
    objective is minimised numerically: a log-spaced grid on ``[upper*1e-12, upper]``, then a
    bounded scalar minimisation around the best grid point.
    """
    n, U, _, w = _check_dudley_args(n, upper, 1.0, weight)
    grid_size = check_int(grid_size, "grid_size", minimum=3, maximum=100_000)
    ts = np.linspace(math.log(U) - 12 * math.log(10), math.log(U), grid_size)
    vals = np.array([float(log_covering(math.exp(t))) for t in ts])
    if np.any(np.isnan(vals)) or np.any(vals < 0):
        raise ValueError("log_covering must return values >= 0 on (0, upper]")
    if np.all(np.diff(vals) <= 1e-12 * np.maximum(1.0, np.abs(vals[:-1]))):
        # monotone case: root of h(t) = w^2 log N(e^t) - n
        def h(t: float) -> float:
            v = w * w * float(log_covering(math.exp(t))) - n
            return min(v, 1e300) if not math.isnan(v) else 1e300

        if h(math.log(U)) > 0:
            return U
        t_lo = math.log(U) - 150 * math.log(10)  # upper * 1e-150
        if h(t_lo) <= 0:
            return 0.0
        t_star = optimize.brentq(h, t_lo, math.log(U), xtol=1e-14, rtol=1e-14, maxiter=500)
        return float(math.exp(t_star))

    # general case: numerical minimisation of the objective
    deltas = np.exp(ts)
    seg = [
        _entropy_integral(log_covering, n, deltas[i], deltas[i + 1]) for i in range(grid_size - 1)
    ]
    tail = np.concatenate([np.cumsum(seg[::-1])[::-1], [0.0]])
    obj = deltas + w * tail
    j = int(np.argmin(obj))
    lo, hi = ts[max(j - 1, 0)], ts[min(j + 1, grid_size - 1)]

    def g(t: float) -> float:
        d = math.exp(t)
        return d + w * _entropy_integral(log_covering, n, d, U)

    res = optimize.minimize_scalar(g, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10})
    best_t = float(res.x) if res.fun <= obj[j] else float(ts[j])
    return float(math.exp(best_t))


DeltaChoice = Literal["closed_form", "numeric"] | float
IntegralForm = Literal["split", "exact"]


@dataclass(frozen=True)
class DudleyResult:
    """``c * G(delta)`` for the objective ``G`` of :func:`dudley_inverse_square`.

    Attributes
    ----------
    value:
        ``c * G(delta)``.
    objective:
        ``G(delta)`` (the bracket, without ``c``; the integral weight ``w`` is inside it).
    delta:
        The lower limit used (in ``(0, upper]``, or 0 when ``A = 0``).
    delta_stationary:
        The stationary point of ``G`` on ``(0, inf)`` (``inf`` if ``n <= w^2 a0``): the
        closed-form optimum the papers write down. It is the minimiser over ``(0, upper]``
        only when it is ``<= upper`` (``closed_form_valid``).
    closed_form_valid:
        Whether ``delta_stationary <= upper``.
    const_term, cover_term:
        For ``integral="split"``: ``w (upper - delta) sqrt(a0/n)`` and
        ``w sqrt(A/n) ln(upper/delta)``. For ``"exact"`` the whole (weighted) integral is in
        ``cover_term`` and ``const_term`` is 0.
    weight:
        The weight ``w`` of the integral that was used (1 in the papers' form).
    """

    #: Fields that may be ``+inf`` by definition (every other number of a result is finite).
    INF_MARKERS: ClassVar[tuple[str, ...]] = ("delta_stationary",)

    value: float
    objective: float
    delta: float
    delta_stationary: float
    closed_form_valid: bool
    const_term: float
    cover_term: float
    weight: float = 1.0


def _phi(eps: float, A: float, a0: float) -> float:
    """Antiderivative of ``sqrt(a0 + A/eps^2)`` (up to a constant), for ``eps > 0``."""
    if A == 0.0:
        return math.sqrt(a0) * eps
    if a0 == 0.0:
        return math.sqrt(A) * math.log(eps)
    s = math.sqrt(a0 * eps * eps + A)
    rA = math.sqrt(A)
    return s - rA * math.log((rA + s) / eps)


def _inverse_square_objective(delta: float, A: float, a0: float, n: int, upper: float,
                              integral: str) -> tuple[float, float, float]:
    """``(G(delta), const_term, cover_term)`` with the weight already folded into ``A, a0``."""
    if delta >= upper:
        return upper, 0.0, 0.0
    if integral == "split":
        const = (upper - delta) * math.sqrt(a0 / n)
        if A == 0.0:
            cover = 0.0
        else:
            if delta <= 0.0:
                return math.inf, const, math.inf
            cover = math.sqrt(A / n) * math.log(upper / delta)
        return delta + const + cover, const, cover
    # exact integral of sqrt((a0 + A/eps^2)/n)
    if delta <= 0.0:
        if A > 0.0:
            return math.inf, 0.0, math.inf
        cover = upper * math.sqrt(a0 / n)
        return cover, 0.0, cover
    cover = (_phi(upper, A, a0) - _phi(delta, A, a0)) / math.sqrt(n)
    return delta + cover, 0.0, cover


def _inverse_square_delta(
    delta: DeltaChoice, stat: float, Av: float, a0v: float, n: int, U: float,
    integral: IntegralForm,
) -> float:
    """The ``delta`` of :func:`dudley_inverse_square`: the clipped stationary point ``stat``
    (``"closed_form"``), a bounded numeric minimiser compared with ``G(U)`` (``"numeric"``), or
    a given number checked to lie in ``(0, U]`` (``0`` only when ``A = 0``)."""
    if isinstance(delta, str):
        check_choice(delta, "delta", ("closed_form", "numeric"))
        if delta == "closed_form":
            d = min(stat, U)
        else:
            if Av == 0.0:
                d = 0.0 if n > a0v else U
            else:
                lo, hi = math.log(U) - 30.0, math.log(U)
                res = optimize.minimize_scalar(
                    lambda t: _inverse_square_objective(math.exp(t), Av, a0v, n, U, integral)[0],
                    bounds=(lo, hi), method="bounded", options={"xatol": 1e-12},
                )
                d = math.exp(float(res.x))
                if _inverse_square_objective(U, Av, a0v, n, U, integral)[0] <= \
                        _inverse_square_objective(d, Av, a0v, n, U, integral)[0]:
                    d = U
    else:
        d = check_nonnegative(delta, "delta")
        if d > U:
            raise ValueError(f"delta must be in (0, upper={U}], got {delta!r}")
        if d == 0.0 and Av > 0.0:
            raise ValueError("delta must be > 0 when A > 0 (the integral diverges at 0)")
    return d


def dudley_inverse_square(
    A: float,
    a0: float,
    n: int,
    upper: float,
    *,
    c: float,
    weight: float = 1.0,
    delta: DeltaChoice = "closed_form",
    integral: IntegralForm = "split",
) -> DudleyResult:
    """Dudley's integral for ``log N(eps) <= a0 + A / eps^2`` on ``(0, upper]``.

    This is the one solver of the package for the covering-number family that every
    Maurey-type covering lemma produces (``a0`` collects the ``log(2d)``-type terms; ``a0 = 0``
    is the pure ``A / eps^2`` family of the shallow-encoder paper). It evaluates
    ``c * G(delta)`` with::

        G(delta) = delta + w int_delta^upper sqrt((a0 + A/eps^2) / n) d eps      ("exact")
                 <= delta + w (upper - delta) sqrt(a0/n) + w sqrt(A/n) ln(upper/delta)
                                                                                ("split")

    the second line being the bound ``sqrt(x + y) <= sqrt(x) + sqrt(y)`` used by Trauger &
    Tewari (2024, App. C). The weight ``w`` lets one write Bartlett et al.'s (2017, Lemma A.5)
    ``4 delta + 12 int`` as ``c = 4, w = 3``; since ``w sqrt(x) = sqrt(w^2 x)`` it is the same
    computation with ``(A, a0)`` replaced by ``(w^2 A, w^2 a0)``, and with ``w = 1`` the
    arithmetic is exactly that of the papers' form.

    Both ``G`` are convex on ``(0, inf)`` (their derivatives
    ``1 - w sqrt(a0/n) - w sqrt(A/n)/delta`` resp. ``1 - w sqrt((a0 + A/delta^2)/n)``
    increase), so the stationary point clipped to ``(0, upper]`` is the exact minimiser on
    ``(0, upper]``:

    * split: ``delta* = w sqrt(A) / (sqrt(n) - w sqrt(a0))`` (Trauger & Tewari's closed form;
      for ``a0 = 0`` it is ``w sqrt(A/n)`` and ``G(delta*) = delta* (1 + ln(upper/delta*))``,
      the shallow-encoder paper's Lemma 1);
    * exact: ``delta* = w sqrt(A / (n - w^2 a0))``;
    * ``n <= w^2 a0``: ``G`` decreases on ``(0, upper]``; the minimum is ``G(upper) = upper``.

    When ``delta* > upper`` the closed form is *not* the minimiser over the admissible range
    and the value obtained by substituting it is not a valid bound (it can even be negative);
    the minimum is then ``G(upper) = upper``, i.e. the trivial bound ``c * upper``.

    Parameters
    ----------
    A, a0:
        The covering-number constants (``A >= 0``, ``a0 >= 0``).
    n:
        Sample size.
    upper:
        The radius of the class (its sup norm bound); ``log N = 0`` beyond it.
    c:
        Dudley's constant (explicit; ``genbounds.bounds`` names the value 12 of Bartlett et al.
        2017).
    weight:
        The weight ``w > 0`` of the integral (default 1, the papers' form).
    delta:
        ``"closed_form"`` (the clipped stationary point above), ``"numeric"`` (bounded scalar
        minimisation of ``G`` over ``log delta`` in ``[ln(upper) - 30, ln(upper)]``, compared
        with ``G(upper)``; an independent check of the closed form) or a number in
        ``(0, upper]``.
    integral:
        ``"split"`` (the papers' form) or ``"exact"`` (the integral evaluated exactly via the
        antiderivative ``sqrt(a0 eps^2 + A) - sqrt(A) ln((sqrt(A) + sqrt(a0 eps^2 + A))/eps)``).

    Raises
    ------
    ValueError
        Negative / non-finite ``A`` or ``a0``; ``n`` not a positive integer; ``upper``, ``c``
        or ``weight`` not finite and ``> 0``; an unknown ``delta`` or ``integral``; a numeric
        ``delta`` outside ``(0, upper]`` (``delta = 0`` is allowed only when ``A = 0``).
    """
    A_raw = check_nonnegative(A, "A")
    a0_raw = check_nonnegative(a0, "a0")
    n = check_int(n, "n")
    U = check_positive(upper, "upper")
    cv = check_positive(c, "c")
    w = check_positive(weight, "weight")
    Av, a0v = w * w * A_raw, w * w * a0_raw  # exact for w = 1
    check_choice(integral, "integral", ("split", "exact"))

    if n <= a0v:
        stat = math.inf
    elif integral == "split":
        stat = math.sqrt(Av) / (math.sqrt(n) - math.sqrt(a0v))
    else:
        stat = math.sqrt(Av / (n - a0v))
    valid = stat <= U

    d = _inverse_square_delta(delta, stat, Av, a0v, n, U, integral)
    G, const, cover = _inverse_square_objective(d, Av, a0v, n, U, integral)
    return DudleyResult(cv * G, G, d, stat, valid, const, cover, w)


def dudley_parametric_optimal_delta(
    dim: int, radius: float, n: int, *, weight: float = 1.0
) -> float:
    """Exact minimiser for ``log N(eps) = dim log(1 + 2 radius / eps)`` (before capping at U).

    Solving ``w^2 dim log(1 + 2r/delta) = n`` gives ``delta* = 2r / (exp(n / (w^2 dim)) - 1)``;
    the minimiser over ``[0, U]`` is ``min(delta*, U)``.
    """
    p = check_int(dim, "dim")
    r = check_positive(radius, "radius")
    n = check_int(n, "n")
    w = check_positive(weight, "weight")
    x = n / (w * w * p)
    return 0.0 if x > 700 else float(2.0 * r / math.expm1(x))


def dudley_parametric_bound(
    dim: int, radius: float, n: int, upper: float, c: float = 1.0, *, weight: float = 1.0
) -> float:
    """Closed-form upper bound on Dudley's integral for ``log N = dim log(1 + 2r/eps)``.

    Take ``delta = 0`` and use ``1 + 2r/eps <= R/eps`` on ``(0, U]`` with ``R = U + 2r``::

        int_0^U sqrt(log(R/eps)) d eps = R * Gamma(3/2, log(R/U))

    (substitute ``eps = R e^{-s}``; ``Gamma(., .)`` is the upper incomplete gamma function).
    Hence ``inf_delta(...) <= c w sqrt(dim/n) R Gamma(3/2, log(R/U))``. For ``U = r`` this is
    ``3 r Gamma(3/2, log 3) c w sqrt(dim/n) ~ 1.416 r c w sqrt(dim/n)``: the parametric
    ``sqrt(dim/n)`` rate with no logarithm.
    """
    p = check_int(dim, "dim")
    r = check_positive(radius, "radius")
    n, U, cv, w = _check_dudley_args(n, upper, c, weight)
    R = U + 2.0 * r
    inc = special.gamma(1.5) * special.gammaincc(1.5, math.log(R / U))
    return float(cv * w * math.sqrt(p / n) * R * inc)


# ============================================================================ covers
def _dist_row(points: np.ndarray, i: int, p: float) -> np.ndarray:
    if math.isinf(p):
        return cdist(points[i : i + 1], points, metric="chebyshev")[0]
    return cdist(points[i : i + 1], points, metric="minkowski", p=p)[0]


def greedy_packing(points: Any, separation: float, *, p: float = 2.0) -> np.ndarray:
    """Indices of a maximal subset whose pairwise l_p distances all exceed ``separation``.

    Greedy in the given order: a point is kept when it is farther than ``separation`` from all
    points kept so far. The kept set is maximal, hence also an internal ``separation``-cover.
    """
    P = check_finite_array(points, "points", ndim=2, shape_hint="(n_points, dim)")
    s = check_nonnegative(separation, "separation")
    pv = check_norm_index(p, "p")
    covered = np.zeros(P.shape[0], dtype=bool)
    centres: list[int] = []
    for i in range(P.shape[0]):
        if covered[i]:
            continue
        centres.append(i)
        covered |= _dist_row(P, i, pv) <= s
    return np.asarray(centres, dtype=np.int64)


def greedy_cover(points: Any, eps: float, *, p: float = 2.0) -> np.ndarray:
    """Indices of centres of a greedy internal ``eps``-cover of a finite point cloud (l_p).

    Every point lies within distance ``eps`` of a returned centre, so
    ``N(eps) <= len(greedy_cover(points, eps))``. (Same algorithm as :func:`greedy_packing`.)
    """
    e = check_positive(eps, "eps")
    return greedy_packing(points, e, p=p)


def covering_number_bounds(points: Any, eps: float, *, p: float = 2.0) -> tuple[int, int]:
    """``(lower, upper)`` with ``lower <= N(eps) <= upper`` for a finite point cloud in l_p.

    ``N(eps)`` is the external covering number (closed balls, centres anywhere in ``R^dim``).
    ``upper``: size of a greedy internal ``eps``-cover. ``lower``: size of a greedy packing
    with separation ``> 2 eps``: a closed ``eps``-ball contains at most one of its points.
    """
    e = check_positive(eps, "eps")
    upper = len(greedy_cover(points, e, p=p))
    lower = len(greedy_packing(points, 2.0 * e, p=p))
    return lower, upper


# ============================================================================ Maurey
@dataclass(frozen=True)
class MaureyResult:
    """Squared errors of Maurey's empirical approximation over independent draws.

    Attributes
    ----------
    sq_errors:
        ``||f - f_k||_2^2`` for each draw, shape ``(n_draws,)``.
    expected_sq_error:
        Exact ``E ||f - f_k||^2`` for the scheme (see :func:`maurey_sparsify`).
    bound:
        The lemma's bound for the scheme (``>= expected_sq_error``).
    gamma, b, f_sq_norm, k, scheme:
        ``||alpha||_1``, the atom-norm bound, ``||f||^2``, the number of samples, the scheme.
    atoms_used:
        Number of non-zero atoms drawn in each draw (``sum_i k_i <= k``), shape ``(n_draws,)``.
    """

    sq_errors: np.ndarray
    expected_sq_error: float
    bound: float
    gamma: float
    b: float
    f_sq_norm: float
    k: int
    scheme: str
    atoms_used: np.ndarray


def _check_maurey_args(
    alpha: Any, atoms: Any, k: int, n_draws: int, scheme: str, b: float | None
) -> tuple[np.ndarray, np.ndarray, int, int, float, np.ndarray, float]:
    """Validate the arguments of :func:`maurey_sparsify` (a ``ValueError`` naming the bad one).

    Returns ``(a, G, k, n_draws, gamma, norms, bv)``: the coefficients, the atoms as rows,
    ``gamma = ||alpha||_1``, the atom norms and the norm bound ``b`` (default their maximum).
    """
    a = check_finite_array(alpha, "alpha", ndim=1, shape_hint="(d,)")
    G = check_finite_array(atoms, "atoms", ndim=2, shape_hint="(d, D)")
    if G.shape[0] != a.shape[0]:
        raise ValueError(
            f"atoms must have one row per coefficient: alpha has {a.shape[0]}, "
            f"atoms has shape {G.shape}"
        )
    k = check_int(k, "k")
    n_draws = check_int(n_draws, "n_draws", minimum=2)
    _check_work(n_draws * (k + G.size), "n_draws * (k + atoms.size)")
    if scheme not in ("zhang", "scaled"):
        raise ValueError(f"scheme must be 'zhang' or 'scaled', got {scheme!r}")
    gamma = float(np.abs(a).sum())
    if gamma == 0:
        raise ValueError("alpha must not be all zero")
    norms = np.linalg.norm(G, axis=1)
    if b is None:
        bv = float(norms.max())
    else:
        bv = check_nonnegative(b, "b")
        if bv < norms.max() * (1 - 1e-12):
            raise ValueError(f"b must be >= max_j ||g_j|| = {norms.max()!r}, got {b!r}")
    return a, G, k, n_draws, gamma, norms, bv


def _maurey_draws(
    V: np.ndarray, w: np.ndarray, gamma: float, bv: float, f2: float, second: float, k: int,
    n_draws: int, seed: SeedLike, scheme: str,
) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The ``n_draws`` approximants of :func:`maurey_sparsify` under ``scheme``.

    Returns ``(counts, fk, expected, bound)``: the atom counts per draw (``(n_draws, d)``), the
    approximants ``f_k`` as rows, the exact ``E||f - f_k||^2`` and its bound (formulas in
    :func:`maurey_sparsify`).
    """
    rng = _rng(seed)
    if scheme == "zhang":
        if gamma > 1 + 1e-12:
            raise ValueError(
                f"scheme 'zhang' needs ||alpha||_1 <= 1, got {gamma!r}; rescale or "
                "use scheme='scaled'"
            )
        probs = np.append(w, max(0.0, 1.0 - gamma))
        probs = probs / probs.sum()
        counts = rng.multinomial(k, probs, size=n_draws)[:, :-1].astype(np.float64)
        fk = counts @ V / k
        expected = (second - f2) / k
        bound = (gamma * bv**2 - f2) / k
    else:
        counts = rng.multinomial(k, w / gamma, size=n_draws).astype(np.float64)
        fk = gamma * (counts @ V) / k
        expected = (gamma * second - f2) / k
        bound = (gamma**2 * bv**2 - f2) / k
    return counts, fk, expected, bound


def maurey_sparsify(
    alpha: Any,
    atoms: Any,
    k: int,
    *,
    n_draws: int = 1000,
    seed: SeedLike = 0,
    scheme: Literal["zhang", "scaled"] = "zhang",
    b: float | None = None,
) -> MaureyResult:
    """Draw Maurey's k-term empirical approximation of ``f = sum_j alpha_j g_j`` many times.

    Signs are absorbed into the atoms (``V_j = sign(alpha_j) g_j``, weights ``|alpha_j|``), so
    ``f = sum_j |alpha_j| V_j`` with non-negative weights as in the lemma. Let
    ``gamma = ||alpha||_1`` and ``b >= max_j ||g_j||_2``.

    ``scheme="zhang"`` (the form of Trauger & Tewari's Lemma 3.1, after Zhang 2002; needs
    ``gamma <= 1``): draw ``k`` i.i.d. indices from ``(|alpha_1|, ..., |alpha_d|, 1 - gamma)``
    over the atoms ``(V_1, ..., V_d, 0)`` and set ``f_k = (1/k) sum_i k_i V_i`` where ``k_i``
    counts atom ``i`` (so ``sum_i k_i <= k``). Then ``E f_k = f`` and exactly::

        E||f - f_k||^2 = (sum_j |alpha_j| ||g_j||^2 - ||f||^2) / k <= (gamma b^2 - ||f||^2) / k.

    ``scheme="scaled"``: draw from ``|alpha_j| / gamma`` and set ``f_k = (gamma/k) sum_i k_i V_i``
    (``sum_i k_i = k``; any ``gamma > 0``); exactly::

        E||f - f_k||^2 = (gamma sum_j |alpha_j| ||g_j||^2 - ||f||^2) / k
                       <= (gamma^2 b^2 - ||f||^2) / k.

    The lemma as printed in Trauger & Tewari combines the *first* approximant with the *second*
    bound (``gamma^2 b^2``); for ``gamma < 1`` that statement can fail (e.g. ``d = 1``,
    ``alpha = 1/2``, ``k = 1``: every admissible approximant has error ``b^2/4`` but the printed
    bound is 0). Its use in their covering lemmas needs only ``<= b^2/k``, which both schemes
    give when ``gamma <= 1``.

    Parameters
    ----------
    alpha:
        Coefficients, shape ``(d,)``, not all zero.
    atoms:
        The vectors ``g_j`` as rows, shape ``(d, D)``.
    k:
        Number of sampled atoms.
    b:
        Norm bound for the atoms (default: the largest atom norm); must be ``>=`` it.
    """
    a, G, k, n_draws, gamma, norms, bv = _check_maurey_args(
        alpha, atoms, k, n_draws, scheme, b
    )
    V = np.sign(a)[:, None] * G
    w = np.abs(a)
    f = w @ V
    f2 = float(f @ f)
    second = float(w @ norms**2)  # sum_j |alpha_j| ||g_j||^2
    counts, fk, expected, bound = _maurey_draws(
        V, w, gamma, bv, f2, second, k, n_draws, seed, scheme
    )
    err = ((fk - f[None, :]) ** 2).sum(axis=1)
    return MaureyResult(sq_errors=err, expected_sq_error=float(expected), bound=float(bound),
                        gamma=gamma, b=bv, f_sq_norm=f2, k=k, scheme=scheme,
                        atoms_used=counts.sum(axis=1).astype(np.int64))


# ============================================================================ softmax
def _uv(u: Any, v: Any) -> tuple[np.ndarray, np.ndarray]:
    ua = check_finite_array(u, "u")
    va = check_finite_array(v, "v")
    if ua.shape != va.shape:
        raise ValueError(f"u and v must have the same shape; got {ua.shape} and {va.shape}")
    if ua.ndim < 1:
        raise ValueError(f"u must have shape (..., k); got {ua.shape}")
    return ua, va


def _softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def softmax_l1_distance(u: Any, v: Any) -> np.ndarray:
    """``||softmax(u) - softmax(v)||_1`` along the last axis (shape ``(...)``)."""
    ua, va = _uv(u, v)
    return np.abs(_softmax(ua) - _softmax(va)).sum(axis=-1)


def softmax_linf_ratio(u: Any, v: Any) -> np.ndarray:
    """``||softmax(u) - softmax(v)||_1 / ||u - v||_inf`` (pairs with ``u == v`` -> ValueError).

    The supremum of this ratio over all pairs is exactly **1** (approached as ``u - v -> 0``
    with ``softmax(u)`` split into two halves of mass 1/2, never attained); the inequality
    ``||softmax(u) - softmax(v)||_1 <= 2 ||u - v||_inf`` quoted by Edelman et al. (2022,
    Cor. A.7) and Trauger & Tewari (2024, Lemma C.1) is valid but loose by a factor 2.
    """
    ua, va = _uv(u, v)
    den = np.abs(ua - va).max(axis=-1)
    if np.any(den == 0):
        raise ValueError("u and v must differ in every pair (||u - v||_inf = 0 somewhere)")
    return softmax_l1_distance(ua, va) / den


def softmax_l1_sharp_bound(u: Any, v: Any) -> np.ndarray:
    """The sharp bound ``2 tanh(osc(u - v) / 4)`` on ``||softmax(u) - softmax(v)||_1``.

    ``osc(h) = max_i h_i - min_i h_i``. With ``q = softmax(v)``, ``p = softmax(u)``, the ratio
    ``q_i / p_i`` ranges over an interval of multiplicative width ``exp(osc)`` and has
    ``p``-mean 1; the total variation ``E_p[(q/p - 1)_+]`` is maximised by a two-point ratio
    law, giving ``TV <= tanh(osc/4)``, with equality for ``k = 2``,
    ``u = (L/4, -L/4)``, ``v = (-L/4, L/4)``. Since ``osc <= 2 ||u - v||_inf`` and
    ``tanh x <= x``, this implies ``<= osc/2 <= ||u - v||_inf``.
    """
    ua, va = _uv(u, v)
    h = ua - va
    return 2.0 * np.tanh((h.max(axis=-1) - h.min(axis=-1)) / 4.0)


@dataclass(frozen=True)
class SoftmaxSearchResult:
    """Best pair found by :func:`adversarial_softmax_search` and all restarts' final ratios."""

    best_ratio: float
    u: np.ndarray
    v: np.ndarray
    ratios: np.ndarray
    denominator: str


def adversarial_softmax_search(dim: int, *, denominator: Literal["linf", "sharp"] = "linf",
                               n_restarts: int = 64, steps: int = 400, lr: float = 0.05,
                               init_scale: float = 3.0, seed: SeedLike = 0,
                               ) -> SoftmaxSearchResult:
    """Gradient ascent (Adam, float64) on ``||softmax(u) - softmax(v)||_1 / D(u, v)``.

    The pair is parametrised as ``v = u + exp(s) tanh(g)``; restart ``i`` starts from a random
    ``u`` (scale ``init_scale``) and a perturbation size ``exp(s)`` log-spaced in ``[1e-3, 3]``.

    ``denominator="linf"``: ``D = ||u - v||_inf`` (the Lipschitz ratio, supremum 1);
    ``denominator="sharp"``: ``D = 2 tanh(osc(u - v)/4)`` (supremum 1, attained).
    ``n_restarts`` random starting pairs are optimised in parallel; the best final ratio is
    returned with its pair. A ratio above 1 would refute the corresponding inequality.
    """
    dim = check_int(dim, "dim", minimum=2)
    n_restarts = check_int(n_restarts, "n_restarts")
    steps = check_int(steps, "steps")
    _check_work(n_restarts * dim, "n_restarts * dim")
    _check_work(steps * n_restarts * dim * 1000, "steps * n_restarts * dim")
    lr = check_positive(lr, "lr")
    init_scale = check_positive(init_scale, "init_scale")
    if denominator not in ("linf", "sharp"):
        raise ValueError(f"denominator must be 'linf' or 'sharp', got {denominator!r}")
    rng = _rng(seed)
    gen = torch.Generator().manual_seed(int(rng.integers(0, 2**63 - 1)))
    # parametrisation: v = u + h with h = exp(s) * tanh(g); the restarts start at perturbation
    # sizes exp(s) log-spaced over [1e-3, 3], since the linear ratio is largest for small h
    u = init_scale * torch.randn(n_restarts, dim, generator=gen, dtype=torch.float64)
    g = torch.randn(n_restarts, dim, generator=gen, dtype=torch.float64)
    s = torch.linspace(math.log(1e-3), math.log(3.0), n_restarts, dtype=torch.float64)[:, None]
    params = [u, g, s]
    for t in params:
        t.requires_grad_(True)

    def ratio() -> torch.Tensor:
        h = torch.exp(s) * torch.tanh(g)
        num = (torch.softmax(u + h, -1) - torch.softmax(u, -1)).abs().sum(-1)
        if denominator == "linf":
            den = h.abs().amax(-1)
        else:
            den = 2.0 * torch.tanh((h.amax(-1) - h.amin(-1)) / 4.0)
        return num / den.clamp_min(1e-300)

    # plain Adam ascent written out (tiny tensors: one intra-op thread avoids oversubscription
    # overhead, and no optimizer machinery is imported)
    beta1, beta2, adam_eps = 0.9, 0.999, 1e-8
    m1 = [torch.zeros_like(t) for t in params]
    m2 = [torch.zeros_like(t) for t in params]
    n_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for step in range(1, steps + 1):
            grads = torch.autograd.grad(ratio().sum(), params)
            with torch.no_grad():
                for t, gr, a1, a2 in zip(params, grads, m1, m2, strict=True):
                    a1.mul_(beta1).add_(gr, alpha=1 - beta1)
                    a2.mul_(beta2).addcmul_(gr, gr, value=1 - beta2)
                    a1_hat = a1 / (1 - beta1**step)
                    a2_hat = a2 / (1 - beta2**step)
                    t.add_(lr * a1_hat / (a2_hat.sqrt() + adam_eps))
    finally:
        torch.set_num_threads(n_threads)
    with torch.no_grad():
        v = u + torch.exp(s) * torch.tanh(g)
    # recompute in numpy (independent code path) for the reported ratios
    un, vn = u.detach().numpy().copy(), v.detach().numpy().copy()
    num = softmax_l1_distance(un, vn)
    h = un - vn
    den = (
        np.abs(h).max(-1) if denominator == "linf" else 2.0 * np.tanh((h.max(-1) - h.min(-1)) / 4.0)
    )
    ok = den > 0
    r = np.where(ok, num / np.where(ok, den, 1.0), 0.0)
    j = int(np.argmax(r))
    return SoftmaxSearchResult(float(r[j]), un[j], vn[j], r, denominator)


# Every public function fails on bad input with a ValueError naming arguments (never NaN, inf,
# an OverflowError or a ZeroDivisionError from deep inside).
for _name in __all__:
    _obj = globals()[_name]
    if (callable(_obj) and not isinstance(_obj, type)
            and getattr(_obj, "__module__", "") == __name__):
        globals()[_name] = _finite_guard(_obj)
del _name, _obj
