"""Baselines that the papers compare against, and the baseline every certificate is judged by.

**The sample-split baseline** (chapter 07): :func:`split_binomial_certificate` is the certificate
of a deterministic network trained on one part of the sample (the prior part of a
data-dependent PAC-Bayes certificate) and counted on the other part: the exact one-sided binomial
(Clopper-Pearson) upper limit of its ``k`` errors on the ``n`` bound points, at the ``delta``
share the other certificates get. :func:`pac_bayes_kl_floor` is the smallest value the
PAC-Bayes-kl certificate can take on the same bound points, at ``KL = 0``: with the chapter's
``log(2 sqrt(n) G / delta)`` term it is above the split baseline at the same error for every
``n`` (the binomial tail pays about ``log(1/delta)``). Both reuse
:func:`genbounds.bounds.pac_bayes.binomial_tail_inverse` and :func:`genbounds.kl.kl_inverse_upper`.
The split baseline is the registered test-set bound (``certificates.test_set.audited``) applied to
the bound points; it is not registered a second time.

**Edelman et al.'s bound.** The norm-based bound of Edelman, Goel, Kakade & Zhang (ICML 2022),
*Inductive Biases and Variable Creation in Self-Attention Mechanisms*, for one self-attention
head read out at a [CLS] token, whose capacity grows with ``log T``. Trauger & Tewari (2024)
present their sequence-length-independent bounds as an improvement on it.

What is implemented, and how sure we are
-----------------------------------------
The book has no copy of Edelman et al.'s paper, so the bound is **reconstructed** from (i) the
pieces of it that Trauger & Tewari quote (their Lemma 3.5 = Edelman et al.'s Lemma 4.6, the
linear covering lemma with ``log(dN)``; their Lemma C.1 = Cor. A.7, the softmax inequality with
constant 2; their Lemma E.1 = Lemma A.8, the allocation of resolutions) and (ii) our knowledge
of Edelman et al.'s single-head argument. The *structure* is certain; the numbering of their
theorem and the exact placement of their log factors are not (their headline statement, as we
recall it, carries one common ``log(mT)`` factor; ``log_factor="global"`` reproduces that
shape). Their hidden absolute constant (``<~``) is exposed as ``constant`` (default 1, a
choice).

The head, in the orientation of Trauger & Tewari's Section 4.1::

    f(X) = w^T W_c^T sigma(W_v^T X^T softmax(X W_QK x_cls)),
    X in R^{T x d}, W_v in R^{d x k}, W_c in R^{k x d}, W_QK in R^{d x d}, w in R^d.

Norms (``||.||_{2,1}`` = sum of column l2 norms, Trauger & Tewari's convention; a map
``x -> M x`` is constrained through ``||M^T||_{2,1}``, the sum of the l2 norms of its rows, as in
Edelman et al.'s Lemma 4.6): ``||w||_2 <= B_w``; ``||W_c||_2 <= B_c2``, ``||W_c||_{2,1} <= B_c21``
(map ``u -> W_c^T u``); ``||W_v||_2 <= B_v2``, ``||W_v||_{2,1} <= B_v21`` (map ``x -> W_v^T x``);
``||W_QK^T||_{2,1} <= B_qk21`` (map ``x -> W_QK x``); tokens ``||x_t||_2 <= B_x``; ``sigma``
``L_sigma``-Lipschitz with ``sigma(0) = 0``.

Error decomposition (for parameters ``theta`` and a cover element ``theta_hat``, at every
sample)::

    |f - f_hat| <= eps_w + B_w [eps_c + L_sigma B_c2 eps_v + 2 L_sigma B_c2 B_v2 B_x^2 eps_QK]

where ``eps_w`` covers ``u -> w^T u`` on the ``m`` read-out vectors (norm ``<= R_y = B_c2 L_sigma
B_v2 B_x``), ``eps_c`` covers ``u -> W_c^T u`` on the ``m`` activation vectors (norm
``<= L_sigma B_v2 B_x``), ``eps_v`` covers ``x -> W_v^T x`` on **all ``m T`` tokens** (the
attention average is a convex combination of them: this is where ``T`` enters), and
``eps_QK`` covers ``x_cls -> W_QK x_cls`` on the ``m`` [CLS] tokens (then
``|x_t^T (W - W_hat) x_cls| <= B_x eps_QK``, ``||softmax(a) - softmax(b)||_1 <= 2 ||a - b||_inf``
and ``||X^T (p - p_hat)||_2 <= B_x ||p - p_hat||_1``: two factors ``B_x``; an earlier version of
this module had one, which chapter 02's audit of the reconstruction caught with the
finite-difference case of its Theorem 4.2 audit). Edelman et al.'s Lemma 4.6 gives
``log N_i <= constant * B_in,i^2 B_i^2 ln(d_out,i N_i) / eps_i^2`` for each map, and Lemma A.8
allocates ``eps = sum beta_i eps_i`` optimally::

    log N(eps) <= Gamma^3 / eps^2,  Gamma = sum_i (C_i beta_i^2)^{1/3},
    C_w  = constant B_w^2  R_y^2            ln(m),       beta_w  = 1,
    C_c  = constant B_c21^2 (L_sigma B_v2 B_x)^2 ln(d m), beta_c  = B_w,
    C_v  = constant B_v21^2 B_x^2           ln(k m T),   beta_v  = B_w L_sigma B_c2,
    C_QK = constant B_qk21^2 B_x^2          ln(d m),     beta_QK = 2 B_w L_sigma B_c2 B_v2 B_x^2.

With ``log_factor="global"`` every ``ln(.)`` above is replaced by ``ln(max(d, k) m T)``.
The Rademacher bound is Dudley's integral with ``log N = Gamma^3/eps^2`` over the range
``|f| <= B_w R_y``: ``c sqrt(Gamma^3/m) (1 + ln(B_w R_y sqrt(m) / sqrt(Gamma^3)))`` when
``sqrt(Gamma^3/m) <= B_w R_y`` (``c B_w R_y`` otherwise). It grows like ``sqrt(ln T)`` (up to
the ``ln`` of the prefactor) through ``C_v``.
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple

from genbounds.bounds.pac_bayes import binomial_tail_inverse, pac_bayes_kl
from genbounds.bounds.registry import (
    DUDLEY_C_BARTLETT_2017,
    Bound,
    BoundKind,
    BoundValue,
    Verdict,
    dudley_annotations,
    register,
)
from genbounds.complexity import (
    DeltaChoice,
    IntegralForm,
    _finite_guard,
    dudley_inverse_square,
)
from genbounds.validation import check_choice, check_int, check_positive, check_probability

# The split baseline's three functions (below) return floats, like the test-set bound they apply,
# and are tested with their own bad-input cases (tests/test_certificates_baseline.py); __all__
# lists the BoundValue functions that the bad-input sweep of tests/test_bounds_trauger_tewari.py
# covers.
__all__ = ["edelman_log_covering_single_head", "edelman_rademacher_single_head"]


# ================================================================== the sample-split baseline
def split_binomial_certificate(errors: int, n_bound: int, delta: float) -> float:
    """The sample-split certificate of a network fixed before the ``n_bound`` bound points.

    A network trained on the prior part only does not depend on the bound part, so its number of
    errors there is ``Bin(n_bound, L(h))`` and, with probability ``>= 1 - delta``,
    ``L(h) <= max {p : P(Bin(n_bound, p) <= errors) >= delta}`` (Langford 2005, Thm 3.3; the
    one-sided Clopper-Pearson limit ``Beta(1 - delta; errors + 1, n_bound - errors)``). Pass the
    ``delta`` share the certificate it is compared with gets (``delta / 5`` in chapter 07).

    Parameters
    ----------
    errors:
        The network's errors on the bound points (an integer in ``[0, n_bound]``).
    n_bound:
        The number of bound points (``>= 1``).
    delta:
        Confidence share, in ``(0, 1)``.

    Returns
    -------
    float
        The upper limit on the network's risk, in ``[errors / n_bound, 1]``.
    """
    k = check_int(errors, "errors", minimum=0)
    n = check_int(n_bound, "n_bound")
    d = check_probability(delta, "delta")
    if k > n:
        raise ValueError(f"errors must be at most n_bound = {n}, got {k}")
    return binomial_tail_inverse(k, n, d)


def pac_bayes_kl_floor(empirical_risk: float, n: int, delta: float, *,
                       grid_size: int = 1) -> float:
    """The smallest PAC-Bayes-kl certificate reachable with ``n`` bound points: ``KL = 0``.

    ``kl^{-1}_upper(empirical_risk, log(2 sqrt(n) grid_size / delta) / n)``, the value of
    :func:`genbounds.bounds.pac_bayes.pac_bayes_kl` at ``kl_divergence = 0``. In chapter 07's
    accounting ``delta`` is the PAC-Bayes share ``(1 - mc_share) * delta_total / 5`` and
    ``grid_size`` the 32 prior variances; ``empirical_risk`` is the Gibbs error on the bound
    points itself (the Monte Carlo bound above it only raises the certificate).

    Parameters
    ----------
    empirical_risk:
        Empirical risk in ``[0, 1]``.
    n:
        Bound points (``>= 8``, as the kl form needs).
    delta:
        Confidence share, in ``(0, 1)``.
    grid_size:
        Number of priors of the union bound (``>= 1``).
    """
    r = check_probability(empirical_risk, "empirical_risk", open_interval=False)
    nn = check_int(n, "n", minimum=8)
    d = check_probability(delta, "delta")
    g = check_int(grid_size, "grid_size")
    return pac_bayes_kl(r, 0.0, nn, d, grid_size=g)


def split_break_even_error(errors: int, n_bound: int, delta_split: float, delta_pac_bayes: float,
                           *, grid_size: int = 1) -> float:
    """The Gibbs error on the bound points below which the PAC-Bayes-kl floor beats the split.

    The largest ``q`` with ``pac_bayes_kl_floor(q, n_bound, delta_pac_bayes, grid_size) <=
    split_binomial_certificate(errors, n_bound, delta_split)`` (bisection to ``1e-12``; the floor
    increases in ``q``). A data-dependent PAC-Bayes certificate on the same bound points can be
    below the split baseline only if its posterior's empirical Gibbs error is below this, with a
    KL of zero; ``0.0`` when even a Gibbs error of 0 does not suffice. Arguments as in the two
    functions above.
    """
    check_probability(delta_split, "delta_split")
    check_probability(delta_pac_bayes, "delta_pac_bayes")
    check_int(n_bound, "n_bound", minimum=8)
    split = split_binomial_certificate(errors, n_bound, delta_split)
    if pac_bayes_kl_floor(0.0, n_bound, delta_pac_bayes, grid_size=grid_size) > split:
        return 0.0
    lo, hi = 0.0, split
    while hi - lo > 1e-12:
        mid = 0.5 * (lo + hi)
        if pac_bayes_kl_floor(mid, n_bound, delta_pac_bayes, grid_size=grid_size) <= split:
            lo = mid
        else:
            hi = mid
    return lo

_REF = ("Edelman, Goel, Kakade & Zhang 2022, single-head capacity bound (Sec. 4), "
        "reconstructed: Lemma 4.6 + Cor. A.7 + Lemma A.8")
LogFactor = Literal["per_map", "global"]


def _components(m: int, T: int, d: int, k: int, B_w: float, B_c2: float, B_c21: float,
                B_v2: float, B_v21: float, B_qk21: float, B_x: float, L_sigma: float,
                constant: float, log_factor: str) -> tuple[dict[str, tuple[float, float, float]],
                                                           float]:
    R_y = B_c2 * L_sigma * B_v2 * B_x
    R_act = L_sigma * B_v2 * B_x
    if log_factor == "global":
        g = math.log(max(d, k) * m * T)
        logs = {"w": g, "W_c": g, "W_v": g, "W_QK": g}
    else:
        logs = {"w": math.log(m), "W_c": math.log(d * m), "W_v": math.log(k * m * T),
                "W_QK": math.log(d * m)}
    comps = {
        "w": (constant * B_w**2 * R_y**2 * logs["w"], 1.0, logs["w"]),
        "W_c": (constant * B_c21**2 * R_act**2 * logs["W_c"], B_w, logs["W_c"]),
        "W_v": (constant * B_v21**2 * B_x**2 * logs["W_v"], B_w * L_sigma * B_c2, logs["W_v"]),
        # one B_x from the logit x_t^T (W - W_hat) x_cls, one from mixing the tokens X^T dp
        "W_QK": (constant * B_qk21**2 * B_x**2 * logs["W_QK"],
                 2.0 * B_w * L_sigma * B_c2 * B_v2 * B_x**2, logs["W_QK"]),
    }
    return comps, R_y


class _Args(NamedTuple):
    """The validated arguments of both Edelman bounds, in ``_components``' order."""

    m: int
    T: int
    d: int
    k: int
    B_w: float
    B_c2: float
    B_c21: float
    B_v2: float
    B_v21: float
    B_qk21: float
    B_x: float
    L_sigma: float
    constant: float
    log_factor: str


def _check(m: int, T: int, d: int, k: int, B_w: float, B_c2: float, B_c21: float, B_v2: float,
           B_v21: float, B_qk21: float, B_x: float, L_sigma: float, constant: float,
           log_factor: str) -> _Args:
    return _Args(
        check_int(m, "m", minimum=2), check_int(T, "T"), check_int(d, "d"), check_int(k, "k"),
        check_positive(B_w, "B_w"), check_positive(B_c2, "B_c2"),
        check_positive(B_c21, "B_c21"), check_positive(B_v2, "B_v2"),
        check_positive(B_v21, "B_v21"), check_positive(B_qk21, "B_qk21"),
        check_positive(B_x, "B_x"), check_positive(L_sigma, "L_sigma"),
        check_positive(constant, "constant"),
        check_choice(log_factor, "log_factor", ("per_map", "global")),
    )


def edelman_log_covering_single_head(
    eps: float, *, m: int, T: int, d: int, k: int, B_w: float, B_c2: float, B_c21: float,
    B_v2: float, B_v21: float, B_qk21: float, B_x: float, L_sigma: float,
    constant: float = 1.0, log_factor: LogFactor = "per_map",
) -> BoundValue:
    """Log covering number ``Gamma^3 / eps^2`` of one head with [CLS] read-out (reconstructed).

    See the module docstring for the exact formula, the norms and what is uncertain.

    Parameters
    ----------
    eps:
        Resolution (``> 0``).
    m:
        Sample size (``>= 2``).
    T:
        Number of tokens per sample (the sequence length).
    d, k:
        Token dimension and hidden (value) dimension.
    B_w, B_c2, B_c21, B_v2, B_v21, B_qk21, B_x, L_sigma:
        Norm bounds as listed in the module docstring, and the activation's Lipschitz constant.
    constant:
        The hidden constant of Edelman et al.'s Lemma 4.6 (explicit; default 1).
    log_factor:
        ``"per_map"`` (``ln(d_out N)`` per linear map) or ``"global"`` (one
        ``ln(max(d, k) m T)``).

    Returns
    -------
    BoundValue
        ``value = Gamma^3 / eps^2``; ``terms`` give ``Gamma``, each map's ``(C beta^2)^(1/3)``
        and log factor.
    """
    e = check_positive(eps, "eps")
    args = _check(m, T, d, k, B_w, B_c2, B_c21, B_v2, B_v21, B_qk21, B_x, L_sigma, constant,
                  log_factor)
    comps, R_y = _components(*args)
    contrib = {name: (C * beta * beta) ** (1 / 3) for name, (C, beta, _) in comps.items()}
    Gamma = float(sum(contrib.values()))
    terms: dict[str, float] = {"Gamma": Gamma}
    terms.update({f"(C beta^2)^(1/3) {n}": v for n, v in contrib.items()})
    terms.update({f"log factor {n}": lg for n, (_, _, lg) in comps.items()})
    terms.update({f"beta {n}": beta for n, (_, beta, _) in comps.items()})
    return BoundValue(
        kind=BoundKind.LOG_COVERING,
        value=Gamma**3 / e**2,
        terms=terms,
        constants={"lemma_4_6_constant": args.constant, "softmax_constant": 2.0, "eps": e,
                   "R_y": R_y, "m": float(args.m), "T": float(args.T)},
        name="log covering number, one head, [CLS] output (grows with log T)",
        reference=_REF,
        assumptions=_assumptions(log_factor),
    )


def _assumptions(log_factor: str) -> tuple[str, ...]:
    return (
        "||w||_2 <= B_w; ||W_c||_2 <= B_c2, ||W_c||_{2,1} <= B_c21; ||W_v||_2 <= B_v2, "
        "||W_v||_{2,1} <= B_v21; ||W_QK^T||_{2,1} <= B_qk21",
        "every token ||x_t||_2 <= B_x; sigma L_sigma-Lipschitz with sigma(0) = 0",
        "hidden constant of Edelman et al.'s Lemma 4.6 set to `constant` (a choice)",
        "log factors " + ("per map, ln(d_out N)" if log_factor == "per_map"
                          else "all ln(max(d,k) m T)"),
        "reconstruction: structure certain, theorem numbering and log placement uncertain",
    )


def edelman_rademacher_single_head(
    m: int, T: int, *, d: int, k: int, B_w: float, B_c2: float, B_c21: float, B_v2: float,
    B_v21: float, B_qk21: float, B_x: float, L_sigma: float, c: float,
    constant: float = 1.0, log_factor: LogFactor = "per_map",
    delta: DeltaChoice = "closed_form", integral: IntegralForm = "split",
) -> BoundValue:
    """Rademacher complexity of one head with [CLS] read-out (Edelman et al.; grows with ``ln T``).

    Dudley's integral ``c inf_delta (delta + int_delta^U sqrt(Gamma^3/(m eps^2)) d eps)`` with
    ``U = B_w B_c2 L_sigma B_v2 B_x`` (the sup of ``|f|``) and ``Gamma`` from
    :func:`edelman_log_covering_single_head`; ``c`` explicit (12 is valid).

    Parameters
    ----------
    m, T, d, k, B_w, B_c2, B_c21, B_v2, B_v21, B_qk21, B_x, L_sigma, constant, log_factor:
        As in :func:`edelman_log_covering_single_head`.
    c:
        Dudley's constant.
    delta, integral:
        As in :func:`~genbounds.complexity.dudley_inverse_square`.

    Returns
    -------
    BoundValue
        ``value`` = the bound on the Rademacher complexity; ``terms`` include ``Gamma``, the
        Dudley objective, ``delta`` and the log factors.
    """
    args = _check(m, T, d, k, B_w, B_c2, B_c21, B_v2, B_v21, B_qk21, B_x, L_sigma, constant,
                  log_factor)
    cv = check_positive(c, "c")
    cov = edelman_log_covering_single_head(
        1.0, m=m, T=T, d=d, k=k, B_w=B_w, B_c2=B_c2, B_c21=B_c21, B_v2=B_v2, B_v21=B_v21,
        B_qk21=B_qk21, B_x=B_x, L_sigma=L_sigma, constant=constant, log_factor=log_factor)
    A = cov.terms["Gamma"] ** 3
    upper = args.B_w * cov.constants["R_y"]
    res = dudley_inverse_square(A, 0.0, args.m, upper, c=cv, delta=delta, integral=integral)
    choices, regime = dudley_annotations(res.closed_form_valid, delta, integral, "U")
    return BoundValue(
        kind=BoundKind.RADEMACHER,
        value=res.value,
        terms={"Gamma": cov.terms["Gamma"], "A=Gamma^3": A, "dudley_objective_G": res.objective,
               "delta": res.delta,
               "covering_term": res.cover_term,
               **{k_: v for k_, v in cov.terms.items() if k_.startswith("log factor")}},
        constants={**cov.constants, "c": cv, "dudley_upper": upper},
        choices=choices, regime=regime,
        name="Rademacher complexity, one head, [CLS] output (Edelman et al. 2022, log T)",
        reference=_REF + " + Dudley's integral",
        assumptions=cov.assumptions,
    )


# Bad input fails as a ValueError naming arguments (never inf, NaN or an OverflowError).
edelman_log_covering_single_head = _finite_guard(edelman_log_covering_single_head)
edelman_rademacher_single_head = _finite_guard(edelman_rademacher_single_head)

# ============================================================================ registry
register(Bound(
    key="edelman.single_head_log_T.reconstructed", paper="edelman2022inductive",
    statement="Sec. 4 (reconstructed)", kind=BoundKind.RADEMACHER, form="audited",
    needs=("m", "T", "d", "k", "B_w", "B_c2", "B_c21", "B_v2", "B_v21", "B_qk21", "B_x"),
    constants={"c": DUDLEY_C_BARTLETT_2017, "L_sigma": 1.0, "constant": 1.0},
    fn=edelman_rademacher_single_head,
    description="one head, [CLS] output; grows with log T (hidden constant set to 1)",
    # chapter 02 proves the reconstructed statement (Proposition tt-prop-edelman) from steps that
    # hold and Edelman et al.'s Lemma 4.6, quoted with its unstated constant kappa (`constant`):
    # a certificate for kappa <= constant. Whether it is *their* theorem is not claimed.
    verdict=Verdict.HOLDS, audit="tt-prop-edelman",
))
