r"""Dhingra (2025): the effective rank of attention as a capacity measure, audited.

The paper defines ``C(f) = max_l erank(A^(l))`` (Roy & Vetterli's effective rank, eq. (2)–(3))
and states (Theorem 1): for the class ``F_R`` of Transformers whose attention matrices have
``erank(A^(l)(x)) <= R`` for every layer and input, with probability ``1 - delta``,

.. math::  L_D(f) \le L_S(f) + C L_{tot} \sqrt{R \log m / m} + c \sqrt{\log(1/\delta)/m}.

Its proof reduces the class to the linear form ``sum_i eps_i <A(x_i), Z(x_i)>`` (eq. (15)), in
which **every sample chooses its own attention matrix**, bounds each term by Hoelder's
inequality (eq. (18)–(20)) and then writes ``sqrt(R/m)`` (eq. (22)). The average over ``m``
terms in eq. (20) does not shrink with ``m``: what eq. (20) and the claimed eq. (21)
(``E||Z||_op <= B/sqrt(n)``) actually give is ``L_tot B sqrt(R)``, with no ``1/sqrt(m)``. This
module implements

* the printed statement (:func:`theorem1_printed`, registered ``dhingra.thm1.printed``; its
  ``valid`` flag is False because the derivation does not yield it);
* what the proof as written does yield (:func:`theorem1_as_derived`, ``dhingra.thm1.audited``):
  eq. (20) with the measured sensitivity matrices, plus the deviation term of eq. (13) with the
  constant of Mohri, Rostamizadeh & Talwalkar (2018, Thm. 3.3);
* a correct ``1/sqrt(m)`` statement under an extra assumption the paper does not make
  (the attention matrix is the same for every input, e.g. purely positional attention), via the
  matrix Khintchine inequality (:func:`shared_attention_gap`, ``dhingra.shared_attention.audited``);

and the pieces the chapter checks numerically: the sensitivity matrices ``Z = df/dA`` of an
:class:`~genbounds.models.EdelmanTransformer` (by autograd through a re-implementation of its
forward pass that exposes the attention matrices, tested equal to ``model(X)``), the value-path
Lipschitz estimate of ``L_tot`` from the weights, the suprema of the Rademacher processes the
proof writes down (per-sample and shared attention; the trace-norm relaxation, the exact
supremum over all row-stochastic matrices and a rank-one member of ``A_R``), and the Hoelder
duality (19) by projected gradient ascent.

Conventions: logarithms natural; ``n`` is the number of tokens (rows of ``A``); Rademacher
complexities normalised by ``1/m`` and without absolute value (see
:mod:`genbounds.bounds.registry`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch

from genbounds.bounds.registry import Bound, BoundKind, BoundValue, register
from genbounds.models import EdelmanTransformer
from genbounds.models.base import project_rows_to_unit_ball
from genbounds.models.view import ModelView
from genbounds.spectral import operator_norm
from genbounds.validation import check_int, check_nonnegative, check_positive, check_probability

__all__ = [
    "DEVIATION_C_MOHRI",
    "PAPER",
    "THM1_PRINTED",
    "THM1_AUDITED",
    "SHARED_ATTENTION_AUDITED",
    "edelman_forward",
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
#: ``sup_f (L_D - L_S) <= 2 Rad_S(l o F) + 3 sqrt(log(2/delta) / (2m))`` (Mohri, Rostamizadeh &
#: Talwalkar 2018, Thm. 3.3, for the empirical Rademacher complexity of the loss class), i.e.
#: ``c = 3 / sqrt(2)`` in front of ``sqrt(log(2/delta)/m)``.
DEVIATION_C_MOHRI: float = 3.0 / math.sqrt(2.0)

_ACT: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": torch.relu, "identity": lambda x: x, "tanh": torch.tanh}


# ------------------------------------------------------------------ the model, attention exposed
def edelman_forward(
    model: EdelmanTransformer, X: torch.Tensor,
    attention: Sequence[torch.Tensor] | None = None,
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """The forward pass of an :class:`EdelmanTransformer` with its attention matrices exposed.

    Re-implements the model's layer (see its docstring) from its public parameters, so that
    the attention matrix of every layer can be *replaced* by a given tensor (a leaf for
    autograd). Returns ``(outputs (K, B), [A^(0), ..., A^(L-1)])`` with each ``A`` of shape
    ``(K, B, heads, T, T)``; with ``attention=None`` the outputs equal ``model(X)``.
    """
    if not isinstance(model, EdelmanTransformer):
        raise ValueError(f"model must be an EdelmanTransformer, got {type(model).__name__}")
    if not isinstance(X, torch.Tensor) or X.ndim != 4 or X.shape[-1] != model.d:
        raise ValueError(f"X must be a tensor of shape (K, B, T, {model.d}), got "
                         f"{getattr(X, 'shape', None)}")
    if attention is not None and len(attention) != model.layers:
        raise ValueError(f"attention must hold {model.layers} tensors (one per layer), got "
                         f"{len(attention)}")
    sigma = _ACT[model.activation]
    Y = X
    used: list[torch.Tensor] = []
    for i in range(model.layers):
        S = torch.einsum("kbtd,khde,kbse->kbhts", Y, model.W_QK[:, i], Y)
        A = torch.softmax(S, dim=-1) if attention is None else attention[i]
        used.append(A)
        Fh = torch.einsum("kbhts,kbsd,khde->kbhte", A, Y, model.W_v[:, i])
        G = torch.einsum("kbhte,khed->kbtd", sigma(project_rows_to_unit_ball(Fh)),
                         model.W_c[:, i])
        Y = project_rows_to_unit_ball(G)
    out = torch.einsum("kbd,kd->kb", Y[:, :, model.cls_index], model.w)
    return out, used


def sensitivity_matrices(model: EdelmanTransformer, X: torch.Tensor) -> list[torch.Tensor]:
    """``Z^(l)(x) = d f(x) / d A^(l)(x)`` for every layer: ``[(K, B, heads, T, T), ...]``.

    The paper's "data-dependent sensitivity matrices" (eq. (6), (15)) made concrete: the
    gradient of the scalar output with respect to the entries of each attention matrix, all
    other attention matrices held at their values, so that to first order
    ``f(A + dA) - f(A) = sum_l <dA^(l), Z^(l)>``. Samples are independent, so one backward
    pass of the summed outputs gives every sample's matrix.
    """
    with torch.enable_grad():
        _, A = edelman_forward(model, X.detach())
        leaves = [a.detach().clone().requires_grad_(True) for a in A]
        out, _ = edelman_forward(model, X.detach(), leaves)
        grads = torch.autograd.grad(out.sum(), leaves, allow_unused=True)
    return [torch.zeros_like(a) if g is None else g.detach()
            for a, g in zip(leaves, grads, strict=True)]


def value_path_lipschitz(view: ModelView) -> np.ndarray:
    """``L_rest`` of Assumption 2 estimated from the weights, one value per model ``(K,)``.

    ``||w||_2 * prod_l sum_h ||W_V^(l,h)||_op ||W_O^(l,h)||_op``: the product of the Lipschitz
    constants of the linear maps on the value path (row projections, ReLU / tanh and the sum of
    heads are 1-Lipschitz; LayerNorm is absent here). This is the "product of Lipschitz
    constants across non-attention components" of the paper; it omits how later attention
    matrices move when an earlier layer changes (the paper's ``L_att``, which it never
    specifies), so the bounds take ``L_att`` as an explicit factor.
    """
    if not isinstance(view, ModelView):
        raise ValueError(f"view must be a ModelView, got {type(view).__name__}")
    v = view.detached(torch.float64)
    total = torch.as_tensor(operator_norm(v.readout))
    for layer in v.layers:
        s = torch.zeros_like(total)
        for h in layer.heads:
            if h.W_O is None:
                raise ValueError("value_path_lipschitz needs every head's W_O")
            s = s + torch.as_tensor(operator_norm(h.W_V)) * torch.as_tensor(operator_norm(h.W_O))
        total = total * s
    return total.cpu().numpy()


def trace_budget(R: float, n: int) -> float:
    """``sqrt(R n)``: the nuclear-norm radius of eq. (18) for row-stochastic ``n x n`` matrices
    with effective rank at most ``R`` (eq. (16)–(18))."""
    return math.sqrt(check_positive(R, "R") * check_int(n, "n"))


# ------------------------------------------------------------------ the Rademacher processes
def _check_Z_sigma(Z: torch.Tensor, sigma: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    Z = torch.as_tensor(Z, dtype=torch.float64)
    sigma = torch.as_tensor(sigma, dtype=torch.float64, device=Z.device)
    if Z.ndim != 3 or Z.shape[1] != Z.shape[2]:
        raise ValueError(f"Z must have shape (m, n, n), got {tuple(Z.shape)}")
    if sigma.ndim != 2 or sigma.shape[1] != Z.shape[0]:
        raise ValueError(f"sigma must have shape (B, {Z.shape[0]}), got {tuple(sigma.shape)}")
    return Z, sigma


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
    Z, sigma = _check_Z_sigma(Z, sigma)
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
    Z, sigma = _check_Z_sigma(Z, sigma)
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
    Z = torch.as_tensor(Z, dtype=torch.float64)
    if Z.ndim != 2:
        raise ValueError(f"Z must be a matrix, got shape {tuple(Z.shape)}")
    a = check_positive(alpha, "alpha")
    steps = check_int(steps, "steps")
    gen = torch.Generator().manual_seed(int(seed))
    A = torch.randn(Z.shape, generator=gen, dtype=torch.float64) * 1e-3
    scale = float(torch.linalg.matrix_norm(Z, ord=2)) or 1.0
    for _ in range(steps):
        A = A + lr * a * Z / scale
        U, s, Vh = torch.linalg.svd(A, full_matrices=False)
        A = U @ torch.diag(project_l1_ball_nonneg(s, a)) @ Vh
    return float((A * Z).sum())


# ------------------------------------------------------------------ the bounds
def _check_m(m: float) -> int:
    return check_int(m, "m", 2)


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
    comp = Cv * L * math.sqrt(Rv * math.log(mv) / mv)
    dev = cv * math.sqrt(math.log(1.0 / d) / mv)
    return BoundValue(
        comp + dev, BoundKind.GAP, terms={"complexity": comp, "deviation": dev},
        constants={"C": Cv, "c": cv, "delta": d}, name="Theorem 1 (printed)",
        reference="Dhingra 2025, Thm. 1", valid=False,
        assumptions=("Assumptions 1-4 of the paper", "the audit: eq. (22) does not follow from "
                     "eq. (20)-(21); the printed rate is not derived"),
        regime="printed statement; not implied by its proof")


def theorem1_as_derived(Z_op_mean: float, R: float, n: int, m: int, delta: float = 0.05, *,
                        c: float = DEVIATION_C_MOHRI) -> BoundValue:
    """What eq. (13), (14) and (20) give: ``2 sqrt(R n) Zbar + c sqrt(log(2/delta) / m)``.

    ``Z_op_mean`` is ``(1/m) sum_i sum_{l,h} ||Z^(l,h)(x_i)||_op`` with ``Z = df/dA`` (the
    sensitivity in units of the output, so ``L_tot`` is inside it). Valid under the paper's
    linearisation (15) (taken as given: it holds to first order only) for a scalar output and a
    1-Lipschitz loss in [0, 1]; ``c = 3/sqrt(2)`` with ``log(2/delta)`` is the constant of
    Mohri, Rostamizadeh & Talwalkar (2018, Thm. 3.3). The complexity term does not decrease with
    ``m``: the class of eq. (15) lets every sample pick its own attention matrix.
    """
    Z = check_nonnegative(Z_op_mean, "Z_op_mean")
    Rv = check_positive(R, "R")
    nv = check_int(n, "n")
    mv = _check_m(m)
    d = check_probability(delta, "delta")
    cv = check_nonnegative(c, "c")
    comp = 2.0 * trace_budget(Rv, nv) * Z
    dev = cv * math.sqrt(math.log(2.0 / d) / mv)
    return BoundValue(
        comp + dev, BoundKind.GAP, terms={"2 Rad (eq. 20)": comp, "deviation": dev},
        constants={"c": cv, "delta": d}, name="Theorem 1 (as derived: eq. 20)",
        reference="Dhingra 2025, eq. (13), (14), (20)",
        assumptions=("loss 1-Lipschitz with values in [0, 1], scalar output",
                     "the linearisation (15) (first order only; taken as given)",
                     "erank(A(x)) <= R for every layer, head and input"),
        regime="class of eq. (15): one attention matrix per sample")


def shared_attention_gap(Z_op_max: float, R: float, n: int, m: int, delta: float = 0.05, *,
                         c: float = DEVIATION_C_MOHRI) -> BoundValue:
    """A correct ``1/sqrt(m)`` bound under an extra assumption: one attention matrix for all inputs.

    If ``f(x) = <A, Z(x)>`` with ``A`` in ``A_R`` *not depending on x* and ``||Z(x_i)||_op <=
    Zmax``, then ``Rad_S <= sqrt(R n) E||sum_i eps_i Z_i||_op / m <= sqrt(R n)
    sqrt(2 log(2n) / m) Zmax`` (eq. (18)–(19) and the matrix Khintchine inequality, Tropp 2015,
    Thm. 4.1.1, on the Hermitian dilation of size ``2n``), so the gap is at most twice that plus
    the deviation term. The rate is ``sqrt(R n log n / m)``: ``n`` does not cancel.
    """
    Z = check_nonnegative(Z_op_max, "Z_op_max")
    Rv = check_positive(R, "R")
    nv = check_int(n, "n")
    mv = _check_m(m)
    d = check_probability(delta, "delta")
    cv = check_nonnegative(c, "c")
    comp = 2.0 * trace_budget(Rv, nv) * math.sqrt(2.0 * math.log(2 * nv) / mv) * Z
    dev = cv * math.sqrt(math.log(2.0 / d) / mv)
    return BoundValue(
        comp + dev, BoundKind.GAP, terms={"2 Rad (Khintchine)": comp, "deviation": dev},
        constants={"c": cv, "delta": d}, name="shared-attention bound",
        reference="Dhingra 2025, eq. (18)-(19) + matrix Khintchine (Tropp 2015, Thm. 4.1.1)",
        assumptions=("loss 1-Lipschitz with values in [0, 1], scalar output",
                     "f(x) = <A, Z(x)> with one A in A_R for all inputs (NOT the paper's "
                     "setting: there A depends on x)", "||Z(x_i)||_op <= Z_op_max"),
        regime="input-independent attention")


THM1_PRINTED = register(Bound(
    key="dhingra.thm1.printed", paper=PAPER, statement="Thm. 1", kind=BoundKind.GAP,
    form="printed", needs=("L_tot", "R", "m"), constants={"delta": 0.05, "C": 1.0, "c": 1.0},
    fn=theorem1_printed,
    description="C L_tot sqrt(R log m / m) + c sqrt(log(1/delta)/m); C, c unspecified in the "
                "paper (book: 1); valid=False, its proof does not give the m-rate"))

THM1_AUDITED = register(Bound(
    key="dhingra.thm1.audited", paper=PAPER, statement="Thm. 1", kind=BoundKind.GAP,
    form="audited", needs=("Z_op_mean", "R", "n", "m"),
    constants={"delta": 0.05, "c": DEVIATION_C_MOHRI}, fn=theorem1_as_derived,
    description="what the proof gives (eq. 20): 2 sqrt(R n) mean_i ||Z_i||_op + deviation; "
                "no decay in m"))

SHARED_ATTENTION_AUDITED = register(Bound(
    key="dhingra.shared_attention.audited", paper=PAPER, statement="eq. (18)-(23), corrected",
    kind=BoundKind.GAP, form="audited", needs=("Z_op_max", "R", "n", "m"),
    constants={"delta": 0.05, "c": DEVIATION_C_MOHRI}, fn=shared_attention_gap,
    description="input-independent attention only: 2 sqrt(R n) sqrt(2 log(2n)/m) Zmax + "
                "deviation (matrix Khintchine)"))
