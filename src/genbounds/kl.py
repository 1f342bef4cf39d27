"""The binary relative entropy and its exact inverses: the toolkit below every PAC-Bayes bound.

``kl(q || p) = q log(q/p) + (1-q) log((1-q)/(1-p))`` (natural log) for ``q, p`` in ``[0, 1]``,
:func:`kl_inverse_upper` / :func:`kl_inverse_lower` its inverses in ``p`` by bisection to
``1e-12``. Both the Foundations toolkit (:mod:`genbounds.complexity`) and the certificates
(:mod:`genbounds.bounds.pac_bayes`, which re-exports them) use this one implementation; this
module imports nothing of the package but :mod:`genbounds.validation`.
"""

from __future__ import annotations

import math

from genbounds.validation import check_nonnegative, check_probability

__all__ = ["binary_kl", "kl_inverse_lower", "kl_inverse_upper"]

_TOL = 1e-12


def binary_kl(q: float, p: float) -> float:
    """``kl(q || p) = q log(q/p) + (1-q) log((1-q)/(1-p))`` (natural log; ``inf`` when ``p`` is 0 or
    1 and ``q`` is not)."""
    qv = check_probability(q, "q", open_interval=False)
    pv = check_probability(p, "p", open_interval=False)
    out = 0.0
    for a, b in ((qv, pv), (1.0 - qv, 1.0 - pv)):
        if a > 0.0:
            if b <= 0.0:
                return math.inf
            out += a * math.log(a / b)
    return max(out, 0.0)


def kl_inverse_upper(q: float, budget: float) -> float:
    """``sup {p in [q, 1] : kl(q || p) <= budget}`` to ``1e-12`` (the returned ``p`` satisfies the
    constraint and is within ``1e-12`` of the supremum).

    ``kl(q || .)`` is continuous and increasing on ``[q, 1]``, so the set is an interval and
    bisection finds its end. At ``q = 0`` the closed form is ``1 - exp(-budget)``.
    """
    qv = check_probability(q, "q", open_interval=False)
    b = check_nonnegative(budget, "budget")
    if qv >= 1.0 or binary_kl(qv, 1.0) <= b:
        return 1.0
    if b == 0.0:  # kl(q || p) = 0 only at p = q
        return qv
    lo, hi = qv, 1.0
    while hi - lo > _TOL:
        mid = 0.5 * (lo + hi)
        if binary_kl(qv, mid) <= b:
            lo = mid
        else:
            hi = mid
    return lo


def kl_inverse_lower(q: float, budget: float) -> float:
    """``inf {p in [0, q] : kl(q || p) <= budget}`` to ``1e-12`` (a lower confidence limit)."""
    qv = check_probability(q, "q", open_interval=False)
    b = check_nonnegative(budget, "budget")
    return 1.0 - kl_inverse_upper(1.0 - qv, b) if qv > 0.0 else 0.0
