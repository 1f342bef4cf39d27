"""Monte Carlo estimators of the offset Rademacher complexity (Liang, Rakhlin & Sridharan 2015).

For a class ``H`` of real functions on a sample ``x_1..x_n`` and an offset ``c >= 0``::

    R_off(H, c) = E_xi sup_{h in H} (1/n) sum_i (xi_i h(x_i) - c h(x_i)^2)

(Li et al. 2026, Def. 3.1, with their ``beta`` called ``c`` here; ``c = 0`` is the global
Rademacher complexity of :mod:`genbounds.complexity`). This module adds what
:mod:`genbounds.complexity` does not have, and reuses its sign draws, Monte Carlo loop
(:func:`genbounds.complexity.empirical_rademacher`), exact enumeration
(:func:`genbounds.complexity.empirical_rademacher_exact`), the unconstrained linear class
(``rank(X)/(4 c n)``, :func:`genbounds.complexity.offset_rademacher_linear_exact`) and the
finite-class oracle (:func:`genbounds.complexity.offset_finite_class_sup`):

* :func:`offset_linear_l2_sup` / :func:`offset_rademacher_linear_l2`: the **l2-bounded** linear
  class ``{x -> <w, x> : ||w||_2 <= B}`` for every ``c >= 0`` by its closed form (a trust-region
  problem solved through its secular equation); ``c = 0`` gives ``B ||X^T xi||_2`` and
  ``B -> inf`` gives ``xi^T P_X xi / (4c)``.
* :func:`offset_rademacher_network`: a small network class (any
  :class:`genbounds.models.base.Ensemble`) with Frobenius-bounded weight matrices, by
  projected Adam from several restarts per sign vector. A local optimiser finds a *lower bound*
  on each supremum, so the estimate is a lower bound on ``R_off`` (up to Monte Carlo error).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from genbounds.complexity import MonteCarloEstimate, SupFn, empirical_rademacher, rademacher_signs
from genbounds.validation import check_finite_array, check_int, check_nonnegative, check_positive

__all__ = [
    "offset_linear_l2_sup",
    "offset_linear_l2_value",
    "offset_rademacher_linear_l2",
    "offset_rademacher_network",
    "project_frobenius",
]


def offset_linear_l2_value(a: np.ndarray, s2: np.ndarray, B: float, c: float,
                           iters: int = 200) -> np.ndarray:
    """``max_{||u|| <= B} a^T u - c sum_j s2_j u_j^2`` for each row of ``a`` (eigen-coordinates).

    ``a``: ``(m, r)``, ``s2``: ``(r,)`` eigenvalues of ``X^T X`` (> 0). KKT: ``u_j = a_j / (2 c
    s2_j + 2 lam)``, ``lam >= 0``, ``lam (||u|| - B) = 0``. If the unconstrained maximiser
    (``lam = 0``, ``c > 0``) lies in the ball it is the answer; otherwise ``lam > 0`` solves the
    secular equation ``sum_j a_j^2 / (2 c s2_j + 2 lam)^2 = B^2`` (decreasing in ``lam``),
    found by bisection in ``log lam`` to machine precision.
    """
    A = np.atleast_2d(check_finite_array(a, "a"))
    if A.ndim != 2:
        raise ValueError(f"a must have shape (m, r), got {A.shape}")
    s2 = check_finite_array(s2, "s2", ndim=1)
    if s2.shape != (A.shape[1],) or not np.all(s2 > 0):
        raise ValueError(f"s2 must hold {A.shape[1]} values > 0 (one per column of a), got "
                         f"shape {s2.shape}")
    B = check_positive(B, "B")
    c = check_nonnegative(c, "c")
    iters = check_int(iters, "iters")
    m = A.shape[0]

    def norm2(lam: np.ndarray) -> np.ndarray:
        return ((A / (2 * c * s2[None, :] + 2 * lam[:, None])) ** 2).sum(axis=1)

    lam = np.zeros(m)
    free = np.zeros(m, dtype=bool)
    if c > 0:
        free = norm2(lam) <= B**2
    need = ~free
    if need.any():
        an = np.linalg.norm(A[need], axis=1)
        lo = np.full(need.sum(), 1e-300)
        hi = np.maximum(an / (2 * B), 1e-300) * 2 + 1e-300   # norm at hi < B
        lo_l, hi_l = np.log(lo), np.log(hi)
        Asub = A[need]
        for _ in range(iters):
            mid = 0.5 * (lo_l + hi_l)
            nm = ((Asub / (2 * c * s2[None, :] + 2 * np.exp(mid)[:, None])) ** 2).sum(axis=1)
            big = nm > B**2
            lo_l = np.where(big, mid, lo_l)
            hi_l = np.where(big, hi_l, mid)
        lam[need] = np.exp(hi_l)
    U = A / (2 * c * s2[None, :] + 2 * lam[:, None])
    # rows with a = 0 give u = 0 (value 0)
    out = (A * U).sum(axis=1) - c * (s2[None, :] * U**2).sum(axis=1)
    return np.asarray(out)


def offset_linear_l2_sup(X: Any, B: float, c: float) -> SupFn:
    """Supremum oracle ``sup_{||w||_2 <= B} sum_i (xi_i <w, x_i> - c <w, x_i>^2)`` on ``X``
    ``(n, d)`` for sign batches ``(m, n)`` (see :func:`offset_linear_l2_value`).

    In the right singular basis ``X = U S V^T``: ``a = S U^T xi`` and ``s2 = S^2``; directions
    outside the row space of ``X`` change neither term and are set to 0 (they only use norm).
    """
    Xa = check_finite_array(X, "X", ndim=2, shape_hint="(n, d)")
    Bv = check_positive(B, "B")
    cv = check_nonnegative(c, "c")
    U, s, _ = np.linalg.svd(Xa, full_matrices=False)
    tol = s.max(initial=0.0) * max(Xa.shape) * np.finfo(np.float64).eps
    keep = s > tol
    Ur, sr = U[:, keep], s[keep]

    def sup(signs: np.ndarray) -> np.ndarray:
        sg = check_finite_array(signs, "signs", ndim=2, shape_hint="(m, n)")
        if sg.shape[1] != Ur.shape[0]:
            raise ValueError(f"signs must have shape (m, {Ur.shape[0]}), got {sg.shape}")
        a = (sg @ Ur) * sr[None, :]
        return offset_linear_l2_value(a, sr**2, Bv, cv)

    return sup


def offset_rademacher_linear_l2(X: Any, B: float, c: float, *, n_draws: int = 1000,
                                seed: int | np.random.Generator | None = 0) -> MonteCarloEstimate:
    """Monte Carlo ``R_off`` of ``{x -> <w, x> : ||w||_2 <= B}`` on the rows of ``X``.

    ``c = 0`` is the global Rademacher complexity (``B E||X^T xi|| / n``, of order
    ``B sqrt(tr X^T X)/n ~ 1/sqrt(n)``); ``c > 0`` is at most ``rank(X)/(4 c n)`` (the
    unconstrained value), of order ``1/n``.
    """
    Xa = check_finite_array(X, "X", ndim=2, shape_hint="(n, d)")
    check_int(n_draws, "n_draws")
    return empirical_rademacher(offset_linear_l2_sup(Xa, B, c), Xa.shape[0], n_draws=n_draws,
                                seed=seed)


def project_frobenius(model: torch.nn.Module, radius: float) -> None:
    """In place: every weight matrix (last two axes; vectors as a whole) of every model of the
    ensemble is rescaled onto the Frobenius ball of radius ``radius`` if it lies outside."""
    r = check_positive(radius, "radius")
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    with torch.no_grad():
        for p in model.parameters():
            if p.ndim >= 3:
                nrm = torch.linalg.matrix_norm(p, ord="fro", dim=(-2, -1), keepdim=True)
            else:
                nrm = torch.linalg.vector_norm(p, dim=-1, keepdim=True)
            p.mul_(torch.clamp(r / torch.clamp(nrm, min=1e-300), max=1.0))


def offset_rademacher_network(
    make_model: Callable[[int, list[int]], torch.nn.Module],
    X: Any,
    c: float,
    radius: float,
    *,
    n_draws: int = 8,
    restarts: int = 4,
    steps: int = 200,
    lr: float = 0.05,
    reference: Any = None,
    seed: int = 0,
) -> tuple[MonteCarloEstimate, np.ndarray]:
    """Offset (``c > 0``) or global (``c = 0``) Rademacher complexity of a network class.

    The class is ``{h = f_theta - reference : every weight matrix of theta has Frobenius norm
    <= radius}`` on the inputs ``X`` ``(n, T, d)`` (``reference``: ``(n,)`` outputs of a fixed
    function, e.g. the teacher, or None for 0). For each of ``n_draws`` sign vectors,
    ``restarts`` models (an ensemble of ``n_draws * restarts`` built by
    ``make_model(K, seeds)``) maximise ``sum_i (xi_i h(x_i) - c h(x_i)^2)`` by full-batch Adam
    with projection onto the constraint set after every step; the best restart is that draw's
    supremum estimate. Returns the Monte Carlo estimate (a lower bound, see the module
    docstring) and the per-draw values ``(n_draws,)`` (already divided by ``n``).
    """
    Xa = check_finite_array(X, "X", ndim=3, shape_hint="(n, T, d)")
    cv = check_nonnegative(c, "c")
    rad = check_positive(radius, "radius")
    D = check_int(n_draws, "n_draws")
    R = check_int(restarts, "restarts")
    steps = check_int(steps, "steps")
    lrv = check_positive(lr, "lr")
    check_int(seed, "seed", 0)
    if not callable(make_model):
        raise ValueError("make_model must be callable")
    n = Xa.shape[0]
    ref = np.zeros(n) if reference is None else check_finite_array(reference, "reference",
                                                                   ndim=1)
    if ref.shape != (n,):
        raise ValueError(f"reference must have shape ({n},), got {ref.shape}")
    rng = np.random.default_rng(seed)
    signs = rademacher_signs(D, n, rng)
    K = D * R
    seeds = [int(s) for s in rng.integers(0, 2**31 - 1, size=K)]
    model = make_model(K, seeds)
    dtype = next(model.parameters()).dtype
    project_frobenius(model, rad)
    Xt = torch.as_tensor(Xa, dtype=dtype)[None].expand(K, -1, -1, -1)
    xi = torch.as_tensor(np.repeat(signs, R, axis=0), dtype=dtype)
    rt = torch.as_tensor(ref, dtype=dtype)[None]
    opt = torch.optim.Adam(model.parameters(), lr=lrv)

    def objective() -> torch.Tensor:
        h = model(Xt) - rt
        return (xi * h - cv * h**2).sum(dim=1)

    best = torch.full((K,), -math.inf, dtype=torch.float64)
    for _ in range(steps):
        opt.zero_grad()
        val = objective()
        (-val.sum()).backward()
        opt.step()
        project_frobenius(model, rad)
    with torch.no_grad():
        best = torch.maximum(best, objective().to(torch.float64))
    per_draw = best.view(D, R).max(dim=1).values.numpy() / n
    se = float(per_draw.std(ddof=1) / math.sqrt(D)) if D > 1 else math.nan
    return MonteCarloEstimate(float(per_draw.mean()), se, D), per_draw
