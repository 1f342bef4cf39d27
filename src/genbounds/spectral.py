"""Spectral quantities and matrix norms, batched over leading dimensions.

Every function takes a numpy array or a torch tensor of shape ``(..., m, n)`` (a batch of
``m x n`` matrices; the leading dimensions may be absent), computes in ``float64`` unless
``dtype=`` says otherwise, and returns the same kind of object it was given (numpy in ->
numpy out, torch in -> torch out on the input's device) with shape ``(...)``.

Definitions used (singular values ``s_1 >= s_2 >= ... >= s_r >= 0``, ``r = min(m, n)``)
-------------------------------------------------------------------------------------
effective rank (Roy & Vetterli, 2007)
    ``erank(A) = exp(H(p))`` with ``p_i = s_i / sum_j s_j`` (the l1-normalised singular values)
    and ``H(p) = -sum_i p_i log p_i`` the Shannon entropy in nats (``0 log 0 = 0``).
    This is *not* the "effective rank" of Vershynin's notes (``tr(S)/||S||_op`` of a
    covariance, which is the stable rank of ``S^{1/2}``), nor the "effective rank" of the
    participation-ratio literature (``(sum s_i)^2 / sum s_i^2``, here
    :func:`nuclear_rank_ratio`), nor a numerical rank with a threshold.
stable rank
    ``srank(A) = ||A||_F^2 / ||A||_2^2 = sum_i s_i^2 / s_1^2``.
nuclear rank ratio
    ``||A||_*^2 / ||A||_F^2 = (sum_i s_i)^2 / sum_i s_i^2`` (the exponential of the Renyi-2
    entropy of ``p``). For every non-zero ``A``:
    ``srank(A) <= ||A||_*^2/||A||_F^2 <= erank(A) <= rank(A)``.
numerical rank
    number of singular values strictly above a tolerance.
Schatten p-norm
    ``(sum_i s_i^p)^{1/p}``: nuclear (p = 1), Frobenius (p = 2), operator (p = inf).
mixed norm (Trauger & Tewari, 2024)
    ``||W||_{q,p} = || (||W_{:,1}||_q, ..., ||W_{:,n}||_q) ||_p``: the q-norm of every column,
    then the p-norm of the vector of column norms. So ``||W||_{1,inf}`` is the largest column
    l1 norm, ``||W||_{2,1}`` the sum of column l2 norms, ``||W||_{1,1}`` the entrywise l1 norm.
    (The paper's displayed definition writes the outer index as ``r``, its row count; the
    subscript ``q,p`` and every later use show that ``p`` is meant.)
induced norm
    ``||W||_{q->p} = sup_{x != 0} ||W x||_p / ||x||_q``.

Input dtypes and range
----------------------
Real inputs of any dtype are accepted and **up-cast** to the computation dtype (``float64`` by
default, or the ``float32`` asked for with ``dtype=``) before anything is computed: ``float16``
and ``bfloat16`` tensors, integer arrays and boolean arrays (``True`` -> 1.0) all give the
same numbers as their exact ``float64`` values; results come back in the computation dtype
(integer counts for :func:`numerical_rank`). Complex inputs are rejected.
Ratios of singular values (stable rank, nuclear rank ratio) and norms are computed after
dividing by the largest singular value (or the largest entry), so they are finite and accurate
for every finite input, including matrices whose entries are near ``1e+-154``, where squares
overflow or underflow in ``float64``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, TypeVar

import numpy as np
import torch

from genbounds.validation import is_number

__all__ = [
    "check_norm_index",
    "effective_rank",
    "entrywise_l1",
    "frobenius_norm",
    "induced_norm",
    "mixed_norm",
    "nuclear_norm",
    "nuclear_rank_ratio",
    "numerical_rank",
    "operator_norm",
    "schatten_norm",
    "singular_values",
    "stable_rank",
    "participation_ratio",
    "energy_rank",
    "rank_measures",
]

ArrayT = TypeVar("ArrayT", np.ndarray, torch.Tensor)

_NP_TO_TORCH = {
    np.dtype(np.float64): torch.float64,
    np.dtype(np.float32): torch.float32,
}


# ----------------------------------------------------------------------------- helpers
def _resolve_dtype(dtype: Any) -> torch.dtype:
    if dtype is None:
        return torch.float64
    if isinstance(dtype, torch.dtype):
        if dtype not in (torch.float32, torch.float64):
            raise ValueError(f"dtype must be float32 or float64, got {dtype}")
        return dtype
    try:
        npd = np.dtype(dtype)
    except TypeError as exc:
        raise ValueError(f"dtype must be float32 or float64, got {dtype!r}") from exc
    if npd not in _NP_TO_TORCH:
        raise ValueError(f"dtype must be float32 or float64, got {dtype!r}")
    return _NP_TO_TORCH[npd]


def _as_matrix_batch(A: Any, name: str, dtype: Any) -> tuple[torch.Tensor, bool]:
    """Validate ``A`` and return (float tensor of shape (..., m, n), input_was_numpy)."""
    tdtype = _resolve_dtype(dtype)
    if isinstance(A, torch.Tensor):
        is_numpy = False
        t = A
    elif isinstance(A, np.ndarray):
        is_numpy = True
        t = torch.from_numpy(np.ascontiguousarray(A))
    else:
        raise ValueError(f"{name} must be a numpy array or a torch tensor, got {type(A).__name__}")
    if t.is_complex():
        raise ValueError(f"{name} must be real, got dtype {t.dtype}")
    if t.ndim < 2:
        raise ValueError(
            f"{name} must have shape (..., m, n) with ndim >= 2; got shape {tuple(t.shape)}"
        )
    if any(s == 0 for s in t.shape):
        raise ValueError(f"{name} has an empty dimension; got shape {tuple(t.shape)}")
    t = t.to(tdtype)
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} contains non-finite values")
    return t, is_numpy


def _out(x: torch.Tensor, is_numpy: bool, name: str | None = None) -> Any:
    """``x`` as numpy (numpy input) or torch; with ``name``, a result that overflowed float
    (a norm of a finite matrix above the largest float) raises ``ValueError`` naming it."""
    if name is not None and not bool(torch.isfinite(x.detach()).all()):
        raise ValueError(f"{name} is too large: the result overflows {x.dtype} (rescale {name})")
    if is_numpy:
        arr = x.cpu().numpy()
        return arr if arr.ndim else arr[()]
    return x


def check_norm_index(value: float, name: str) -> float:
    """Return ``float(value)`` if it is a norm index in ``[1, inf]``, else raise ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise ValueError(f"{name} must be a number in [1, inf], got {value!r}")
    v = float(value)
    if math.isnan(v) or v < 1:
        raise ValueError(f"{name} must be in [1, inf], got {value!r}")
    return v


def _max_abs(t: torch.Tensor) -> torch.Tensor:
    """Largest ``|entry|`` of each matrix, shape ``(..., 1, 1)``, detached, with 0 -> 1.

    Norms are positively homogeneous, so ``||A|| = c ||A / c||`` exactly; with ``c`` the largest
    entry the inner norm is computed on numbers in ``[-1, 1]`` and cannot overflow or underflow
    (``sum A_ij^2`` does near ``|A_ij| ~ 1e+-154``). ``c`` is detached: for a degree-1
    homogeneous norm the gradient of ``c ||A / c||`` with ``c`` held fixed is the exact one.
    """
    c = t.detach().abs().amax(dim=(-2, -1), keepdim=True)
    return torch.where(c > 0, c, torch.ones_like(c))


def _scaled_vector_norm(x: torch.Tensor, ord: float, *, dim: tuple[int, ...],
                        scale: torch.Tensor) -> torch.Tensor:
    """``scale * ||x / scale||_ord`` over ``dim`` (``scale`` broadcastable, detached, 0 -> 1)."""
    c = scale.detach()
    c = torch.where(c > 0, c, torch.ones_like(c))
    val = torch.linalg.vector_norm(x / c, ord=ord, dim=dim)
    return c.reshape(c.shape[: c.ndim - len(dim)]) * val


def _require_nonzero(s: torch.Tensor, name: str, what: str) -> None:
    zero = s[..., 0] == 0  # largest singular value is zero <=> zero matrix
    if bool(zero.any()):
        idx = tuple(int(i) for i in torch.nonzero(zero)[0].tolist())
        where = f" (batch index {idx})" if idx else ""
        raise ValueError(f"{name} is the zero matrix{where}; {what} is undefined for it")


# ----------------------------------------------------------------------------- spectra
def _svdvals(t: torch.Tensor) -> torch.Tensor:
    """Singular values; LAPACK through numpy for CPU tensors that need no gradient.

    numpy's LAPACK call is as accurate as torch's and, on a busy machine, avoids the large
    slow-down torch's intra-op thread pool shows for small batched SVDs under oversubscription.
    """
    if t.device.type == "cpu" and not t.requires_grad:
        return torch.from_numpy(np.linalg.svd(t.numpy(), compute_uv=False))
    return torch.linalg.svdvals(t)


def _svals(A: Any, name: str, dtype: Any) -> tuple[torch.Tensor, torch.Tensor, bool]:
    """``(s / c, c, input_was_numpy)``: the singular values of ``A / c`` with ``c`` the largest
    ``|entry|`` of each matrix (shape ``(..., 1)``, detached, 0 -> 1). The SVD then sees
    entries in ``[-1, 1]``: LAPACK overflows (NaN) on matrices with entries near the largest
    float, and scale-free quantities (ranks, ratios) never need ``c``."""
    t, is_numpy = _as_matrix_batch(A, name, dtype)
    c = _max_abs(t)
    return _svdvals(t / c), c[..., 0], is_numpy


def singular_values(A: ArrayT, *, dtype: Any = None) -> ArrayT:
    """Singular values of each matrix in the batch, in non-increasing order.

    Parameters
    ----------
    A:
        Array or tensor of shape ``(..., m, n)``.
    dtype:
        Computation dtype, float32 or float64 (default ``float64``).

    Returns
    -------
    Same kind as ``A``, shape ``(..., min(m, n))``.
    """
    s, c, is_numpy = _svals(A, "A", dtype)
    return _out(c * s, is_numpy, "A")


def effective_rank(A: ArrayT, eps: float = 0.0, *, dtype: Any = None) -> ArrayT:
    """Effective rank in the sense of Roy & Vetterli (2007).

    ``erank(A) = exp(-sum_i p_i log p_i)`` with ``p_i = s_i / sum_j s_j``: the exponential of the
    Shannon entropy (nats, ``0 log 0 = 0``) of the l1-normalised singular values. It equals
    ``k`` for a matrix with ``k`` equal non-zero singular values, is invariant to scaling
    ``A -> c A`` (``c != 0``), and lies in ``[1, rank(A)]``.

    Other quantities called "effective rank" elsewhere, and *not* computed here: the
    participation ratio ``(sum s_i)^2 / sum s_i^2`` (see :func:`nuclear_rank_ratio`, a lower
    bound on this one), the stable rank ``||A||_F^2/||A||_2^2`` (:func:`stable_rank`), the
    ratio ``tr(S)/||S||_op`` of a PSD matrix used by Vershynin / Bartlett et al. (the stable
    rank of ``S^{1/2}``), and threshold counts (:func:`numerical_rank`).

    Parameters
    ----------
    A:
        Array or tensor of shape ``(..., m, n)``.
    eps:
        Relative truncation: singular values ``<= eps * s_1`` are set to exactly zero before
        normalising (default ``0.0``: no truncation; round-off singular values of size
        ``~1e-16 s_1`` then contribute ``~1e-14`` to the entropy).
    dtype:
        Computation dtype, float32 or float64 (default ``float64``).

    Gradients (torch input with ``requires_grad``): at a matrix with a zero singular value
    (exactly rank-deficient, or truncated by ``eps``) ``erank`` is not differentiable: raising a
    zero singular value changes ``-p log p`` with infinite slope. The gradient returned there
    is that of ``erank`` restricted to matrices of the same rank (the zero singular values held
    at zero), ``erank * sum_{s_j > 0} -(log p_j + H) / sum_i s_i * u_j v_j^T``; it is finite,
    and it is the directional derivative along every direction that keeps the rank. (A naive
    ``xlogy(p, p)`` gives NaN there.)

    Raises
    ------
    ValueError
        Bad shape / non-finite entries, ``eps`` outside ``[0, 1)``, or a zero matrix (``p`` is
        undefined).
    """
    if not is_number(eps) or not 0.0 <= float(eps) < 1.0:
        raise ValueError(f"eps must be a float in [0, 1), got {eps!r}")
    eps = float(eps)
    s, _, is_numpy = _svals(A, "A", dtype)   # erank is scale-invariant
    _require_nonzero(s, "A", "the effective rank")
    if eps > 0:
        s = torch.where(s <= eps * s[..., :1], torch.zeros_like(s), s)
    # zero singular values are held at zero (detached): at a rank-deficient matrix erank is not
    # differentiable (raising a zero s_i has slope +inf), and the gradient returned is the one
    # of erank restricted to matrices of the same rank (finite); xlogy's backward would give
    # NaN (log 0 * 0) there.
    pos = s > 0
    s = torch.where(pos, s, s.detach())
    p = s / s.sum(dim=-1, keepdim=True)
    logp = torch.where(pos, torch.log(torch.where(pos, p, torch.ones_like(p))),
                       torch.zeros_like(p))
    entropy = -(p * logp).sum(dim=-1)
    return _out(torch.exp(entropy), is_numpy)


def stable_rank(A: ArrayT, *, dtype: Any = None) -> ArrayT:
    """Stable rank ``||A||_F^2 / ||A||_2^2 = sum_i s_i^2 / s_1^2`` (zero matrix -> ValueError)."""
    s, _, is_numpy = _svals(A, "A", dtype)
    _require_nonzero(s, "A", "the stable rank")
    r = s / s[..., :1]  # rescale by s_1 first: s_i^2 over/underflows near |A| ~ 1e+-154
    return _out((r**2).sum(dim=-1), is_numpy)


def nuclear_rank_ratio(A: ArrayT, *, dtype: Any = None) -> ArrayT:
    """``||A||_*^2 / ||A||_F^2 = (sum_i s_i)^2 / sum_i s_i^2`` (zero matrix -> ValueError).

    This is ``1 / sum_i p_i^2`` for ``p_i = s_i / sum_j s_j``, the exponential of the Renyi
    entropy of order 2 of ``p``; since Renyi entropies decrease in the order it lies below the
    Roy–Vetterli effective rank, and Cauchy–Schwarz-type arguments put it above the stable rank:
    ``stable_rank <= nuclear_rank_ratio <= effective_rank <= rank``.
    """
    s, _, is_numpy = _svals(A, "A", dtype)
    _require_nonzero(s, "A", "the nuclear rank ratio")
    r = s / s[..., :1]  # scale-free; avoids overflow / underflow of s_i^2
    return _out(r.sum(dim=-1) ** 2 / (r**2).sum(dim=-1), is_numpy)


def numerical_rank(A: ArrayT, tol: float | None = None, *, dtype: Any = None) -> ArrayT:
    """Number of singular values strictly greater than ``tol``.

    Parameters
    ----------
    tol:
        Absolute threshold. Default (as in ``numpy.linalg.matrix_rank``):
        ``s_1 * max(m, n) * machine_eps(dtype)``, per matrix. The zero matrix has rank 0.

    Returns
    -------
    Integer array / tensor (int64) of shape ``(...)``.
    """
    t, is_numpy = _as_matrix_batch(A, "A", dtype)
    c = _max_abs(t)[..., 0]
    s = _svdvals(t / c[..., None])   # singular values of A / c (LAPACK overflows near 1e308)
    if tol is None:
        m, n = t.shape[-2:]
        thr = s[..., :1] * max(m, n) * torch.finfo(t.dtype).eps
    else:
        if not is_number(tol) or not (math.isfinite(float(tol)) and float(tol) >= 0):
            raise ValueError(f"tol must be a finite float >= 0 or None, got {tol!r}")
        thr = float(tol) / c[..., None]   # s_i(A) > tol  <=>  s_i(A / c) > tol / c
    return _out((s > thr).sum(dim=-1).to(torch.int64), is_numpy)


def participation_ratio(A: ArrayT, *, dtype: Any = None) -> ArrayT:
    """Participation ratio of the squared spectrum, ``(sum_i s_i^2)^2 / sum_i s_i^4``.

    The "effective rank" / "effective dimensionality" of the PCA and neuroscience literature
    (the participation ratio of the eigenvalues ``lambda_i = s_i^2`` of ``A^T A``). It is the
    exponential of the Renyi-2 entropy of ``q_i = s_i^2 / sum_j s_j^2`` (not of the
    l1-normalised ``p_i`` of :func:`effective_rank`), so ``stable_rank <= participation_ratio
    <= rank``. Zero matrix -> ValueError.
    """
    s, _, is_numpy = _svals(A, "A", dtype)
    _require_nonzero(s, "A", "the participation ratio")
    r2 = (s / s[..., :1]) ** 2
    return _out(r2.sum(dim=-1) ** 2 / (r2**2).sum(dim=-1), is_numpy)


def _check_fraction(fraction: Any) -> float:
    if not is_number(fraction) or not 0.0 < float(fraction) <= 1.0:
        raise ValueError(f"fraction must be a number in (0, 1], got {fraction!r}")
    return float(fraction)


def _energy_rank_from_s(s: torch.Tensor, fraction: float) -> torch.Tensor:
    r2 = (s / s[..., :1]) ** 2
    share = torch.cumsum(r2, dim=-1) / r2.sum(dim=-1, keepdim=True)
    # smallest k with share_k >= fraction (a relative slack of 1e-12 absorbs round-off at 1.0)
    return (share < fraction * (1.0 - 1e-12)).sum(dim=-1).to(torch.int64) + 1


def energy_rank(A: ArrayT, fraction: float = 0.9, *, dtype: Any = None) -> ArrayT:
    """Smallest ``k`` with ``sum_{i<=k} s_i^2 >= fraction * sum_i s_i^2`` (int64).

    The "explained-variance" rank of the rank-collapse literature: how many singular
    directions hold ``fraction`` of the squared Frobenius norm. Zero matrix -> ValueError.
    """
    f = _check_fraction(fraction)
    s, _, is_numpy = _svals(A, "A", dtype)
    _require_nonzero(s, "A", "the energy rank")
    return _out(_energy_rank_from_s(s, f), is_numpy)


def rank_measures(A: ArrayT, fraction: float = 0.9, *, dtype: Any = None) -> dict[str, ArrayT]:
    """Every rank-like quantity of each matrix in the batch from ONE singular-value call.

    Returns ``{"erank", "nuclear_rank_ratio", "participation_ratio", "stable_rank",
    "energy_rank", "nuclear", "fro", "op"}`` (same definitions as the single functions; the
    ``energy_rank`` at ``fraction``). For many attention matrices, stack them into one
    ``(..., T, T)`` array: the spectra are computed by one batched call (``torch.linalg.svdvals``
    on the input's device, or LAPACK through numpy for CPU tensors without gradient).
    """
    f = _check_fraction(fraction)
    s, c, is_numpy = _svals(A, "A", dtype)
    _require_nonzero(s, "A", "a rank measure")
    s1 = s[..., :1]
    r = s / s1
    p = r / r.sum(dim=-1, keepdim=True)
    logp = torch.where(p > 0, torch.log(torch.where(p > 0, p, torch.ones_like(p))),
                       torch.zeros_like(p))
    r2 = r**2
    out = {
        "erank": torch.exp(-(p * logp).sum(dim=-1)),
        "nuclear_rank_ratio": r.sum(dim=-1) ** 2 / r2.sum(dim=-1),
        "participation_ratio": r2.sum(dim=-1) ** 2 / (r2**2).sum(dim=-1),
        "stable_rank": r2.sum(dim=-1),
        "energy_rank": _energy_rank_from_s(s, f),
        "nuclear": c[..., 0] * s1[..., 0] * r.sum(dim=-1),
        "fro": c[..., 0] * s1[..., 0] * torch.sqrt(r2.sum(dim=-1)),
        "op": c[..., 0] * s1[..., 0],
    }
    return {k: _out(v, is_numpy, "A" if k in ("nuclear", "fro", "op") else None)
            for k, v in out.items()}


# ----------------------------------------------------------------------------- norms
def schatten_norm(A: ArrayT, p: float, *, dtype: Any = None) -> ArrayT:
    """Schatten p-norm ``(sum_i s_i^p)^{1/p}`` for ``p`` in ``[1, inf]`` (``inf``: largest s_i)."""
    pv = check_norm_index(p, "p")
    s, c, is_numpy = _svals(A, "A", dtype)
    if math.isinf(pv):
        return _out(c[..., 0] * s[..., 0], is_numpy, "A")
    val = _scaled_vector_norm(s, pv, dim=(-1,), scale=s[..., :1])
    return _out(c[..., 0] * val, is_numpy, "A")


def nuclear_norm(A: ArrayT, *, dtype: Any = None) -> ArrayT:
    """Nuclear (trace) norm ``||A||_* = sum_i s_i`` (Schatten 1)."""
    return schatten_norm(A, 1, dtype=dtype)


def frobenius_norm(A: ArrayT, *, dtype: Any = None) -> ArrayT:
    """Frobenius norm ``||A||_F = sqrt(sum_ij A_ij^2) = sqrt(sum_i s_i^2)`` (Schatten 2)."""
    t, is_numpy = _as_matrix_batch(A, "A", dtype)
    return _out(_scaled_vector_norm(t, 2.0, dim=(-2, -1), scale=_max_abs(t)), is_numpy, "A")


def operator_norm(A: ArrayT, *, dtype: Any = None) -> ArrayT:
    """Operator (spectral) norm ``||A||_2 = ||A||_{2->2} = s_1`` (Schatten inf)."""
    return schatten_norm(A, math.inf, dtype=dtype)


def mixed_norm(W: ArrayT, q: float, p: float, *, dtype: Any = None) -> ArrayT:
    """Mixed norm ``||W||_{q,p}`` in the convention of Trauger & Tewari (2024).

    ``||W||_{q,p} = || (||W_{:,1}||_q, ..., ||W_{:,n}||_q) ||_p``: first the q-norm of every
    **column**, then the p-norm across columns. Examples for ``W`` of shape ``(m, n)``:
    ``||W||_{1,1}`` = sum of ``|W_ij|``; ``||W||_{2,1}`` = sum of column Euclidean norms;
    ``||W||_{1,inf}`` = largest column l1 norm (= ``||W||_{1->1}``); ``||W||_{2,2}`` = Frobenius.
    Beware that other papers (e.g. Bartlett et al., 2017, who apply ``||.||_{2,1}`` to
    ``W^T``) take rows instead of columns: transpose first to get their convention.

    Parameters
    ----------
    W:
        Shape ``(..., m, n)``.
    q, p:
        Norm indices in ``[1, inf]`` (``math.inf`` / ``float("inf")`` allowed).
    """
    qv = check_norm_index(q, "q")
    pv = check_norm_index(p, "p")
    t, is_numpy = _as_matrix_batch(W, "W", dtype)
    c = _max_abs(t)
    cols = torch.linalg.vector_norm(t / c, ord=qv, dim=-2)
    return _out(c[..., 0, 0] * torch.linalg.vector_norm(cols, ord=pv, dim=-1), is_numpy, "W")


def _dual(q: float) -> float:
    if q == 1.0:
        return math.inf
    if math.isinf(q):
        return 1.0
    return q / (q - 1.0)


def induced_norm(W: ArrayT, q: float, p: float, *, dtype: Any = None) -> ArrayT:
    """Induced (operator) norm ``||W||_{q->p} = sup_{x != 0} ||W x||_p / ||x||_q``.

    Only the cases with an exact closed form are computed:

    * ``q = 1`` (any ``p``): the largest column p-norm, ``max_j ||W_{:,j}||_p`` (the unit
      l1 ball is the convex hull of ``+-e_j``);
    * ``p = inf`` (any ``q``): the largest row dual norm, ``max_i ||W_{i,:}||_{q*}`` with
      ``1/q + 1/q* = 1`` (Hoelder, attained coordinate by coordinate);
    * ``q = p = 2``: the largest singular value.

    Every other ``(q, p)`` (e.g. ``inf -> 1``, which is NP-hard in general) raises
    ``ValueError`` rather than returning an approximation.
    """
    qv = check_norm_index(q, "q")
    pv = check_norm_index(p, "p")
    t, is_numpy = _as_matrix_batch(W, "W", dtype)
    c = _max_abs(t)
    if qv == 1.0:
        val = c[..., 0, 0] * torch.linalg.vector_norm(t / c, ord=pv, dim=-2).amax(dim=-1)
    elif math.isinf(pv):
        val = c[..., 0, 0] * torch.linalg.vector_norm(t / c, ord=_dual(qv), dim=-1).amax(dim=-1)
    elif qv == 2.0 and pv == 2.0:
        val = c[..., 0, 0] * _svdvals(t / c)[..., 0]
    else:
        raise ValueError(
            f"induced_norm has no closed form for (q, p) = ({q}, {p}); supported: q = 1, "
            "p = inf, or q = p = 2"
        )
    return _out(val, is_numpy, "W")


def entrywise_l1(tensors: Iterable[Any]) -> float:
    """Sum of absolute values of all entries of all arrays / tensors in ``tensors``.

    This is the "l1 norm of the weights" Trauger & Tewari (2024) report in their sparse
    majority experiment (the sum over all weight matrices of ``||W||_{1,1}``). Accepts numpy
    arrays, torch tensors (any device, gradients ignored) and Python scalars of any shape;
    returns a Python float computed in float64.

    Raises
    ------
    ValueError
        If ``tensors`` is empty, an element is not numeric, or any entry is non-finite.
    """
    if isinstance(tensors, np.ndarray | torch.Tensor):
        tensors = [tensors]
    total = 0.0
    count = 0
    for i, x in enumerate(tensors):
        count += 1
        if isinstance(x, torch.Tensor):
            arr = x.detach().to("cpu", torch.float64).numpy()
        else:
            try:
                arr = np.asarray(x, dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"tensors[{i}] is not numeric: {type(x).__name__}") from exc
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"tensors[{i}] contains non-finite values")
        with np.errstate(over="ignore"):
            total += float(np.abs(arr).sum())
    if count == 0:
        raise ValueError("tensors must contain at least one array")
    if not math.isfinite(total):
        raise ValueError("tensors: the sum of |entries| overflows float64")
    return total
