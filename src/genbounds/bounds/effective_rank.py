r"""Dhingra (2025): the effective rank of attention as a capacity measure, audited.

The paper defines ``C(f) = max_l erank(A^(l))`` (Roy & Vetterli's effective rank, eq. (2)–(3))
and states (Theorem 1): for the class ``F_R`` of Transformers whose attention matrices have
``erank(A^(l)(x)) <= R`` for every layer and input, with probability ``1 - delta``,

.. math::  L_D(f) \le L_S(f) + C L_{tot} \sqrt{R \log m / m} + c \sqrt{\log(1/\delta)/m}.

Its proof reduces the class to the linear form ``sum_i eps_i <A(x_i), Z(x_i)>`` (eq. (15)), in
which **every sample chooses its own attention matrix**, bounds each term by Hoelder's
inequality (eq. (18)–(20)) and then writes ``sqrt(R/m)`` (eq. (22)). The average over ``m``
terms in eq. (20) does not shrink with ``m``: what eq. (20) and the claimed eq. (21)
(``E||Z||_op <= B/sqrt(n)``) actually give is ``L_tot B sqrt(R)``, with no ``1/sqrt(m)``.

Eq. (13) holds as printed: ``Phi(S) - 2 Rad_S`` (``Phi = sup_f (L_D - L_S)``, ``Rad_S`` the
empirical Rademacher complexity of the loss class, loss in ``[0, 1]``) has bounded differences
``1/m + 2/m = 3/m`` and mean ``<= 0``, so McDiarmid's inequality, applied once, gives the
deviation ``(3/sqrt 2) sqrt(log(1/delta)/m)`` (:data:`DEVIATION_C`,
:func:`deviation_term`; :func:`finite_class_deviation` computes ``Phi`` and ``Rad_S`` exactly on
a finite class so that the chapter checks the bounded differences numerically).

Registered statements (each with the chapter's audit verdict and the ``prf`` label deciding it):

* ``dhingra.thm1.printed`` (:func:`theorem1_printed`): Theorem 1 as printed; verdict *does not
  follow* (label ``er-thm-1-printed``), so ``valid`` is False;
* ``dhingra.thm1.audited`` (:func:`theorem1_as_derived`): what eq. (13), (14) and (16)–(20)
  prove for the **linear class of eq. (15)** ``G_{R,Z} = {x -> sum_{l,h} <A^(l,h)(x),
  Z^(l,h)(x)>: every A^(l,h)(x) in A_R}`` with the sensitivity map ``Z`` fixed before the
  sample; verdict *holds* (label ``er-thm-1-audited``). A Transformer belongs to this class only
  to first order, and a ``Z`` measured on a trained model depends on the sample: evaluated
  on trained models it is what the proof would certify, not a certificate for them;
* ``dhingra.shared_attention.audited`` (:func:`shared_attention_gap`): a ``1/sqrt(m)`` rate for
  one attention matrix shared by all inputs, via the matrix Khintchine inequality; verdict
  *holds* (label ``er-prop-shared``).

The pieces the chapter checks numerically: the sensitivity matrices ``Z = df/dA``
(:func:`sensitivity_matrices`, by autograd through any model satisfying
:class:`~genbounds.models.view.AttentionModel`: this module reads attention maps and outputs
through that protocol, never a model class), the value-path Lipschitz estimate of ``L_tot``
from the weights, the suprema of the Rademacher processes the proof writes down (per-sample
and shared attention; the trace-norm relaxation, the exact supremum over all row-stochastic
matrices and a rank-one member of ``A_R``), and the Hoelder duality (19) by projected gradient
ascent.

Conventions: logarithms natural; ``n`` is the number of tokens (rows of ``A``); Rademacher
complexities normalised by ``1/m`` and without absolute value (see
:mod:`genbounds.bounds.registry`).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import torch

from genbounds.bounds.registry import Bound, BoundKind, BoundValue, Verdict, register
from genbounds.protocols import AttentionModel, ModelView
from genbounds.spectral import operator_norm
from genbounds.validation import (
    check_finite_array,
    check_int,
    check_nonnegative,
    check_positive,
    check_probability,
)

__all__ = [
    "DEVIATION_C",
    "PAPER",
    "THM1_PRINTED",
    "THM1_AUDITED",
    "SHARED_ATTENTION_AUDITED",
    "deviation_term",
    "finite_class_deviation",
    "hoelder_sup_projected_ascent",
    "per_sample_sups",
    "project_l1_ball_nonneg",
    "sensitivity_matrices",
    "shared_attention_gap",
    "shared_sups",
    "theorem1_as_derived",
    "theorem1_printed",
    "trace_budget",
    "value_path_lipschitz",
]

PAPER = "dhingra2025provable"

#: Deviation constant of eq. (13) for a loss in [0, 1] and the *empirical* Rademacher complexity:
#: ``sup_f (L_D - L_S) <= 2 Rad_S(l o F) + (3/sqrt 2) sqrt(log(1/delta) / m)``. McDiarmid applied
#: once to ``Phi(S) - 2 Rad_S`` (bounded differences ``3/m``, mean ``<= 0``):
#: ``P(Phi - 2 Rad_S >= t) <= exp(-2 t^2 m / 9)``.
DEVIATION_C: float = 3.0 / math.sqrt(2.0)


def deviation_term(m: int, delta: float, c: float = DEVIATION_C) -> float:
    """The deviation term of eq. (13), ``c sqrt(log(1/delta) / m)`` (``c = 3/sqrt 2``)."""
    mv = check_int(m, "m")
    d = check_probability(delta, "delta")
    cv = check_nonnegative(c, "c")
    return cv * math.sqrt(math.log(1.0 / d) / mv)


def finite_class_deviation(losses: Any, p: Any, sample: Any) -> tuple[float, float]:
    """``(Phi(S), Rad_S)`` of a finite loss class on a finite domain, both exact.

    ``losses`` ``(F, N)``: the loss of each of ``F`` functions at each of ``N`` points, in
    ``[0, 1]``; ``p`` ``(N,)``: the distribution of a point; ``sample`` ``(m,)``: the indices of
    the ``m`` sample points (``m <= 16``). Returns ``Phi = max_f (L_D(f) - L_S(f))`` and the
    empirical Rademacher complexity ``Rad_S = E_sigma max_f (1/m) sum_i sigma_i l_f(z_i)``,
    computed over all ``2^m`` sign vectors. Used to check the bounded differences of
    ``Phi - 2 Rad_S`` behind eq. (13).
    """
    L = check_finite_array(losses, "losses", ndim=2, shape_hint="(F, N)")
    if L.min() < 0 or L.max() > 1:
        raise ValueError("losses must lie in [0, 1]")
    pv = check_finite_array(p, "p", ndim=1, shape_hint="(N,)")
    if pv.shape[0] != L.shape[1] or pv.min() < 0 or abs(pv.sum() - 1) > 1e-9:
        raise ValueError(f"p must be a probability vector of length N = {L.shape[1]}")
    idx = np.asarray(sample)
    if idx.ndim != 1 or idx.size == 0 or idx.dtype.kind not in "iu" or idx.size > 16:
        raise ValueError("sample must be a 1-d integer array of 1 to 16 indices")
    if idx.min() < 0 or idx.max() >= L.shape[1]:
        raise ValueError(f"sample indices must lie in [0, {L.shape[1]})")
    m = idx.size
    Ls = L[:, idx]                                                  # (F, m)
    phi = float(np.max(L @ pv - Ls.mean(axis=1)))
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=m)))  # (2^m, m)
    rad = float(np.mean(np.max(signs @ Ls.T, axis=1)) / m)
    return phi, rad


# ------------------------------------------------------------------ sensitivities and weights
def sensitivity_matrices(model: AttentionModel, X: torch.Tensor) -> torch.Tensor:
    """``Z^(l,h)(x) = d f(x) / d A^(l,h)(x)`` for every layer and head: ``(K, L, B, H, T, T)``.

    The paper's "data-dependent sensitivity matrices" (eq. (6), (15)) made concrete: the
    gradient of the scalar output with respect to the entries of each attention matrix, all
    other attention matrices held at their values, so that to first order
    ``f(A + dA) - f(A) = sum_{l,h} <dA^(l,h), Z^(l,h)>``. The model is read only through
    :class:`~genbounds.models.view.AttentionModel` (``attention_maps`` and
    ``output_with_attention``). Samples are independent, so one backward pass of the summed
    outputs gives every sample's matrix.
    """
    if not isinstance(model, AttentionModel):
        raise ValueError("model must return its attention maps (genbounds.models.view."
                         f"AttentionModel), got {type(model).__name__}")
    if not isinstance(X, torch.Tensor) or X.ndim != 4:
        raise ValueError(f"X must be a tensor of shape (K, B, T, d), got "
                         f"{tuple(getattr(X, 'shape', ())) or type(X).__name__}")
    if X.is_floating_point() and not bool(torch.isfinite(X).all()):
        raise ValueError("X contains non-finite values")
    with torch.enable_grad():
        Xd = X.detach()
        A = model.attention_maps(Xd).detach().clone().requires_grad_(True)
        out = model.output_with_attention(Xd, A)
        (grad,) = torch.autograd.grad(out.sum(), A, allow_unused=True)
    return torch.zeros_like(A) if grad is None else grad.detach()


def value_path_lipschitz(view: ModelView) -> np.ndarray:
    """``L_rest`` of Assumption 2 estimated from the weights, one value per model ``(K,)``.

    ``||w||_2 * prod_l sum_h ||W_V^(l,h)||_op ||W_O^(l,h)||_op``: the product of the Lipschitz
    constants of the linear maps on the value path (row projections, ReLU / tanh and the sum of
    heads are 1-Lipschitz; LayerNorm is absent here). This is the "product of Lipschitz
    constants across non-attention components" of the paper; it omits how later attention
    matrices move when an earlier layer changes (the paper's ``L_att``, which it never
    specifies), so the bounds take ``L_att`` as an explicit factor. Non-finite weights raise
    ``ValueError`` naming ``view``.
    """
    if not isinstance(view, ModelView):
        raise ValueError(f"view must be a ModelView, got {type(view).__name__}")
    v = view.detached(torch.float64)
    for name, M in v.matrices().items():
        if not bool(torch.isfinite(M).all()):
            raise ValueError(f"view has non-finite weights in {name}")
    total = torch.as_tensor(operator_norm(v.readout))
    for layer in v.layers:
        s = torch.zeros_like(total)
        for h in layer.heads:
            if h.W_O is None:
                raise ValueError("view: value_path_lipschitz needs every head's W_O")
            s = s + torch.as_tensor(operator_norm(h.W_V)) * torch.as_tensor(operator_norm(h.W_O))
        total = total * s
    out = total.cpu().numpy()
    if not np.all(np.isfinite(out)):
        raise ValueError("view: the product of operator norms overflows float64")
    return out


def trace_budget(R: float, n: int) -> float:
    """``sqrt(R n)``: the nuclear-norm radius of eq. (18) for row-stochastic ``n x n`` matrices
    with effective rank at most ``R`` (eq. (16)–(18))."""
    return math.sqrt(check_positive(R, "R") * check_int(n, "n"))


# ------------------------------------------------------------------ the Rademacher processes
def _check_Z_sigma(Z: Any, sigma: Any, R: Any) -> tuple[torch.Tensor, torch.Tensor, float]:
    Rv = check_positive(R, "R")
    Zt = torch.as_tensor(check_finite_array(Z, "Z", ndim=3, shape_hint="(m, n, n)"))
    if Zt.shape[1] != Zt.shape[2]:
        raise ValueError(f"Z must have shape (m, n, n), got {tuple(Zt.shape)}")
    if isinstance(sigma, np.ndarray | torch.Tensor) and sigma.dtype in (np.bool_, torch.bool):
        raise ValueError("sigma must hold signs -1.0 / +1.0, got a boolean array")
    sg = torch.as_tensor(check_finite_array(sigma, "sigma", ndim=2,
                                            shape_hint=f"(B, {Zt.shape[0]})"))
    if sg.shape[1] != Zt.shape[0]:
        raise ValueError(f"sigma must have shape (B, {Zt.shape[0]}), got {tuple(sg.shape)}")
    if not bool(((sg == 1) | (sg == -1)).all()):
        raise ValueError("sigma must hold Rademacher signs (every entry -1 or +1)")
    return Zt, sg, Rv


def per_sample_sups(Z: torch.Tensor, sigma: torch.Tensor, R: float) -> dict[str, np.ndarray]:
    """Suprema of ``sum_i sigma_i <A_i, Z_i>`` over **one A_i per sample** (the class of eq. (15)).

    ``Z`` is ``(m, n, n)``, ``sigma`` ``(B, m)``; every entry of the result is ``(B,)``.
    The supremum splits into ``sum_i sup_{A in A_R} sigma_i <A, Z_i>``, and for each term:

    * ``"relaxation"``: ``sqrt(R n) ||Z_i||_op`` (eq. (18)–(20): an upper bound, free of sigma);
    * ``"row_stochastic"``: ``sum_t max_s sigma_i Z_i[t, s]``, the exact supremum over *all*
      row-stochastic matrices (an upper bound on the one over ``A_R``);
    * ``"rank_one"``: ``max_s sum_t sigma_i Z_i[t, s]``, attained at ``A = 1 e_s^T`` (rank one,
      erank 1 <= R, row-stochastic): a lower bound on the supremum over ``A_R``.
    """
    Z, sigma, R = _check_Z_sigma(Z, sigma, R)
    n = Z.shape[-1]
    op = torch.linalg.matrix_norm(Z, ord=2)                                   # (m,)
    relax = trace_budget(R, n) * op.sum() * torch.ones(sigma.shape[0], dtype=torch.float64)
    pos = Z.amax(dim=-1).sum(dim=-1)                                          # sigma_i = +1
    neg = (-Z).amax(dim=-1).sum(dim=-1)                                       # sigma_i = -1
    col = Z.sum(dim=-2)                                                       # (m, n)
    r1_pos, r1_neg = col.amax(dim=-1), (-col).amax(dim=-1)
    plus = sigma > 0
    rs = torch.where(plus, pos, neg).sum(dim=-1)
    r1 = torch.where(plus, r1_pos, r1_neg).sum(dim=-1)
    return {k: v.cpu().numpy() for k, v in
            (("relaxation", relax), ("row_stochastic", rs), ("rank_one", r1))}


def shared_sups(Z: torch.Tensor, sigma: torch.Tensor, R: float) -> dict[str, np.ndarray]:
    """Suprema of ``sum_i sigma_i <A, Z_i> = <A, M>``, ``M = sum_i sigma_i Z_i``, over **one A
    shared by all samples** (input-independent attention): ``"relaxation"`` ``sqrt(R n)
    ||M||_op``, ``"row_stochastic"`` ``sum_t max_s M[t, s]`` and ``"rank_one"``
    ``max_s sum_t M[t, s]`` (same meaning as in :func:`per_sample_sups`); each ``(B,)``."""
    Z, sigma, R = _check_Z_sigma(Z, sigma, R)
    n = Z.shape[-1]
    M = torch.einsum("bi,its->bts", sigma, Z)
    return {
        "relaxation": (trace_budget(R, n) * torch.linalg.matrix_norm(M, ord=2)).cpu().numpy(),
        "row_stochastic": M.amax(dim=-1).sum(dim=-1).cpu().numpy(),
        "rank_one": M.sum(dim=-2).amax(dim=-1).cpu().numpy(),
    }


def project_l1_ball_nonneg(s: torch.Tensor, radius: float) -> torch.Tensor:
    """Euclidean projection of non-negative vectors ``s`` (last dim) onto ``{x >= 0, sum x <= r}``
    (Duchi et al. 2008's sort-based simplex projection when the sum exceeds ``r``)."""
    r = check_positive(radius, "radius")
    if not isinstance(s, torch.Tensor) or s.ndim < 1 or s.numel() == 0:
        raise ValueError(f"s must be a non-empty torch.Tensor, got "
                         f"{tuple(s.shape) if isinstance(s, torch.Tensor) else type(s).__name__}")
    if not s.is_floating_point() or not bool(torch.isfinite(s).all()) or bool((s < 0).any()):
        raise ValueError("s must hold finite, non-negative floating-point values")
    if bool((s.sum(dim=-1) <= r).all()):
        return s
    u, _ = torch.sort(s, dim=-1, descending=True)
    css = torch.cumsum(u, dim=-1) - r
    idx = torch.arange(1, s.shape[-1] + 1, dtype=s.dtype, device=s.device)
    cond = u - css / idx > 0
    rho = cond.to(torch.int64).cumsum(dim=-1).argmax(dim=-1, keepdim=True)
    theta = css.gather(-1, rho) / (rho + 1).to(s.dtype)
    proj = torch.clamp(s - theta, min=0)
    inside = (s.sum(dim=-1, keepdim=True) <= r)
    return torch.where(inside, s, proj)


def hoelder_sup_projected_ascent(Z: torch.Tensor, alpha: float, steps: int = 200,
                                 lr: float = 0.5, seed: int = 0) -> float:
    """``max <A, Z>`` over ``||A||_* <= alpha`` by projected gradient ascent from a random start.

    The projection onto the nuclear ball is an SVD followed by the l1-ball projection of the
    singular values (:func:`project_l1_ball_nonneg`). Eq. (19) says the answer is
    ``alpha ||Z||_op``; this is an independent numerical check of that duality.
    """
    Zt = torch.as_tensor(check_finite_array(Z, "Z", ndim=2, shape_hint="(n1, n2)"))
    a = check_positive(alpha, "alpha")
    steps = check_int(steps, "steps")
    lrv = check_positive(lr, "lr")
    seed = check_int(seed, "seed", 0)
    gen = torch.Generator().manual_seed(seed)
    A = torch.randn(Zt.shape, generator=gen, dtype=torch.float64) * 1e-3
    scale = float(torch.linalg.matrix_norm(Zt, ord=2)) or 1.0
    for _ in range(steps):
        A = A + lrv * a * Zt / scale
        U, sv, Vh = torch.linalg.svd(A, full_matrices=False)
        A = U @ torch.diag(project_l1_ball_nonneg(sv, a)) @ Vh
    out = float((A * Zt).sum())
    if not math.isfinite(out):
        raise ValueError("Z: <A, Z> overflows float64 at this scale; rescale Z")
    return out


# ------------------------------------------------------------------ the bounds
def _check_m(m: float) -> int:
    return check_int(m, "m", 2)


def _gap_arguments(Z: float, z_name: str, R: float, n: int, m: float, delta: float,
                   c: float) -> tuple[float, float, int, int, float, float]:
    """The checked arguments of the two gap bounds: ``Z`` (named ``z_name``), ``R``, ``n``,
    ``m``, ``delta`` and ``c``."""
    return (check_nonnegative(Z, z_name), check_positive(R, "R"), check_int(n, "n"), _check_m(m),
            check_probability(delta, "delta"), check_nonnegative(c, "c"))


def _finite_term(value: float, names: str) -> float:
    if not math.isfinite(value):
        raise ValueError(f"{names}: the complexity term overflows float64 ({value!r})")
    return value


def theorem1_printed(L_tot: float, R: float, m: int, delta: float = 0.05, *, C: float = 1.0,
                     c: float = 1.0) -> BoundValue:
    """Theorem 1 as printed: ``C L_tot sqrt(R log m / m) + c sqrt(log(1/delta) / m)``.

    ``C`` and ``c`` are the paper's unspecified "universal constants" (explicit arguments;
    default 1 each, a choice of this book that favours the bound). ``valid`` is False: the
    audit finds that the derivation yields no ``1/sqrt(m)`` rate (step (20) -> (22)).
    """
    L = check_nonnegative(L_tot, "L_tot")
    Rv = check_positive(R, "R")
    mv = _check_m(m)
    d = check_probability(delta, "delta")
    Cv, cv = check_nonnegative(C, "C"), check_nonnegative(c, "c")
    comp = _finite_term(Cv * L * math.sqrt(Rv * math.log(mv) / mv), "L_tot, R and C")
    dev = cv * math.sqrt(math.log(1.0 / d) / mv)
    return BoundValue(
        comp + dev, BoundKind.GAP, terms={"complexity": comp, "deviation": dev},
        constants={"C": Cv, "c": cv, "delta": d}, name="Theorem 1 (printed)",
        reference="Dhingra 2025, Thm. 1", valid=False,
        assumptions=("Assumptions 1-4 of the paper", "the audit: eq. (22) does not follow from "
                     "eq. (20)-(21); the printed rate is not derived"),
        regime="printed statement; not implied by its proof")


def theorem1_as_derived(Z_op_mean: float, R: float, n: int, m: int, delta: float = 0.05, *,
                        c: float = DEVIATION_C) -> BoundValue:
    """What eq. (13), (14) and (16)–(20) prove: ``2 sqrt(R n) Zbar + c sqrt(log(1/delta) / m)``.

    The statement (the chapter's ``er-thm-1-audited``) is about the linear class of eq. (15),
    ``G_{R,Z} = {x -> sum_{l,h} <A^(l,h)(x), Z^(l,h)(x)> : A^(l,h)(x) in A_R for every x}``
    with the sensitivity map ``Z`` fixed before the sample, a 1-Lipschitz loss with values in
    ``[0, 1]`` and a scalar output: every step it uses holds. ``Z_op_mean`` is
    ``(1/m) sum_i sum_{l,h} ||Z^(l,h)(x_i)||_op``; ``c = 3/sqrt(2)`` with ``log(1/delta)`` is
    the constant of eq. (13) (McDiarmid applied once to ``Phi - 2 Rad_S``). The complexity term
    does not decrease with ``m``: the class lets every sample pick its own attention matrix. A
    Transformer is in ``G_{R,Z}`` only to first order (eq. (15) does not follow for it), so a
    value computed with ``Z = df/dA`` of a trained model is what the proof would certify, not a
    certificate for that model.
    """
    Z, Rv, nv, mv, d, cv = _gap_arguments(Z_op_mean, "Z_op_mean", R, n, m, delta, c)
    comp = _finite_term(2.0 * trace_budget(Rv, nv) * Z, "Z_op_mean and R")
    dev = deviation_term(mv, d, cv)
    return BoundValue(
        comp + dev, BoundKind.GAP, terms={"2 Rad (eq. 20)": comp, "deviation": dev},
        constants={"c": cv, "delta": d}, name="Theorem 1 (audited: the class of eq. 15)",
        reference="Dhingra 2025, eq. (13), (14), (16)-(20)",
        assumptions=("loss 1-Lipschitz with values in [0, 1], scalar output",
                     "the class G_{R,Z} of eq. (15): f(x) = sum_{l,h} <A^(l,h)(x), Z^(l,h)(x)> "
                     "with Z fixed before the sample (a Transformer is in it only to first "
                     "order)",
                     "A^(l,h)(x) row-stochastic with erank <= R for every layer, head and "
                     "input"),
        regime="class of eq. (15): one attention matrix per sample")


def shared_attention_gap(Z_op_max: float, R: float, n: int, m: int, delta: float = 0.05, *,
                         c: float = DEVIATION_C) -> BoundValue:
    """A correct ``1/sqrt(m)`` bound under an extra assumption: one attention matrix for all inputs.

    If ``f(x) = <A, Z(x)>`` with ``A`` in ``A_R`` *not depending on x* and ``||Z(x_i)||_op <=
    Zmax``, then ``Rad_S <= sqrt(R n) E||sum_i eps_i Z_i||_op / m <= sqrt(R n)
    sqrt(2 log(2n) / m) Zmax`` (eq. (18)–(19) and the matrix Khintchine inequality, Tropp 2015,
    Thm. 4.1.1, on the Hermitian dilation of size ``2n``), so the gap is at most twice that plus
    the deviation term of eq. (13). The rate is ``sqrt(R n log n / m)``: ``n`` does not cancel.
    """
    Z, Rv, nv, mv, d, cv = _gap_arguments(Z_op_max, "Z_op_max", R, n, m, delta, c)
    comp = _finite_term(2.0 * trace_budget(Rv, nv) * math.sqrt(2.0 * math.log(2 * nv) / mv) * Z,
                        "Z_op_max and R")
    dev = deviation_term(mv, d, cv)
    return BoundValue(
        comp + dev, BoundKind.GAP, terms={"2 Rad (Khintchine)": comp, "deviation": dev},
        constants={"c": cv, "delta": d}, name="shared-attention bound",
        reference="Dhingra 2025, eq. (13), (18)-(19) + matrix Khintchine (Tropp 2015, "
                  "Thm. 4.1.1)",
        assumptions=("loss 1-Lipschitz with values in [0, 1], scalar output",
                     "f(x) = <A, Z(x)> with one A in A_R for all inputs and Z fixed before the "
                     "sample (NOT the paper's setting: there A depends on x)",
                     "||Z(x_i)||_op <= Z_op_max"),
        regime="input-independent attention")


THM1_PRINTED = register(Bound(
    key="dhingra.thm1.printed", paper=PAPER, statement="Thm. 1", kind=BoundKind.GAP,
    form="printed", needs=("L_tot", "R", "m"), constants={"delta": 0.05, "C": 1.0, "c": 1.0},
    fn=theorem1_printed, verdict=Verdict.DOES_NOT_FOLLOW, audit="er-thm-1-printed",
    description="C L_tot sqrt(R log m / m) + c sqrt(log(1/delta)/m); C, c unspecified in the "
                "paper (book: 1); does not follow: its proof gives no m-rate (eq. 20 -> 22)"))

THM1_AUDITED = register(Bound(
    key="dhingra.thm1.audited", paper=PAPER, statement="Thm. 1", kind=BoundKind.GAP,
    form="audited", needs=("Z_op_mean", "R", "n", "m"),
    constants={"delta": 0.05, "c": DEVIATION_C}, fn=theorem1_as_derived,
    verdict=Verdict.HOLDS, audit="er-thm-1-audited",
    description="the linear class of eq. (15) (Z fixed): 2 sqrt(R n) mean_i ||Z_i||_op + "
                "(3/sqrt 2) sqrt(log(1/delta)/m); no decay in m"))

SHARED_ATTENTION_AUDITED = register(Bound(
    key="dhingra.shared_attention.audited", paper=PAPER, statement="eq. (18)-(23), corrected",
    kind=BoundKind.GAP, form="audited", needs=("Z_op_max", "R", "n", "m"),
    constants={"delta": 0.05, "c": DEVIATION_C}, fn=shared_attention_gap,
    verdict=Verdict.HOLDS, audit="er-prop-shared",
    description="input-independent attention only: 2 sqrt(R n) sqrt(2 log(2n)/m) Zmax + "
                "deviation (matrix Khintchine)"))
