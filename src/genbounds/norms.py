"""The norm table: every norm of every weight matrix of a model view, computed once.

An experiment computes ``norm_table(model.view(initial_state=...))`` right after training and
stores it with the run (:mod:`genbounds.results`); notebooks and the bound registry read the
stored table instead of recomputing norms from weights (one source of truth).

Columns (each an array of shape ``(K,)``, float64, one entry per model of the ensemble), for
every matrix ``M`` of :meth:`~genbounds.models.view.ModelView.matrices` (column orientation,
``(out, in)``), named ``"<matrix>.<norm>"``:

==============  ==========================================================================
``spectral``    largest singular value ``||M||_2``
``fro``         Frobenius norm
``l11``         entrywise l1 norm ``sum |M_ij|``
``l21``         sum of the l2 norms of the **columns** (``spectral.mixed_norm(M, 2, 1)``)
``l21_rows``    sum of the l2 norms of the **rows** (Bartlett et al. 2017's ``||M^T||_{2,1}``)
``l1inf``       largest column l1 norm (``= ||M||_{1->1}``)
``stable_rank`` ``||M||_F^2 / ||M||_2^2``
``erank``       effective rank of Roy & Vetterli (2007)
``dist_fro``    ``||M - M_0||_F`` (only when the view carries its initial weights)
``dist_spectral`` ``||M - M_0||_2`` (likewise)
==============  ==========================================================================

and whole-model columns: ``model.n_params`` (trainable parameters of one model),
``model.l1`` (sum of ``|theta_i|`` over every trainable tensor, biases included: the
"l1 norm of the weights" Trauger & Tewari report), ``model.l2`` (``||theta||_2``),
``model.dist_l2`` and ``model.rel_dist_l2`` (``||theta - theta_0||_2`` and its ratio to
``||theta_0||_2``, with initial weights).

Paper-specific norms (a paper's orientation or rewriting of the weights) come from that paper's
adapter, e.g. :func:`genbounds.bounds.trauger_tewari_notation.tt_norms`; pass them as
``extra`` to store them in the same table under a prefix.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np
import torch

from genbounds.protocols import ModelView
from genbounds.spectral import (
    effective_rank,
    frobenius_norm,
    mixed_norm,
    operator_norm,
    stable_rank,
)

__all__ = ["MATRIX_NORMS", "NormTable", "norm_table", "table_row"]

#: A norm table: column name -> array of shape ``(K,)``.
NormTable = dict[str, np.ndarray]

#: The per-matrix norms, by column suffix.
MATRIX_NORMS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "spectral": lambda M: torch.as_tensor(operator_norm(M)),
    "fro": lambda M: torch.as_tensor(frobenius_norm(M)),
    "l11": lambda M: M.abs().sum(dim=(-2, -1)),
    "l21": lambda M: torch.as_tensor(mixed_norm(M, 2, 1)),
    "l21_rows": lambda M: torch.as_tensor(mixed_norm(M.mT, 2, 1)),
    "l1inf": lambda M: torch.as_tensor(mixed_norm(M, 1, math.inf)),
    "stable_rank": lambda M: torch.as_tensor(stable_rank(M)),
    "erank": lambda M: torch.as_tensor(effective_rank(M)),
}


def _l2(flat: torch.Tensor) -> torch.Tensor:
    """Row-wise ``||.||_2`` of ``(K, P)`` computed after dividing by the largest entry (squares
    overflow near ``1e154``)."""
    c = flat.abs().amax(dim=1, keepdim=True)
    c = torch.where(c > 0, c, torch.ones_like(c))
    return c[:, 0] * torch.linalg.vector_norm(flat / c, dim=1)


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().to(torch.float64).numpy().copy()


def norm_table(
    view: ModelView,
    extra: Mapping[str, Mapping[str, np.ndarray]] | None = None,
) -> NormTable:
    """Every norm of every matrix of ``view`` (float64), plus whole-model columns.

    Parameters
    ----------
    view:
        A :class:`~genbounds.models.view.ModelView` (with ``initial`` for distances).
    extra:
        Paper adapters' tables by prefix, e.g. ``{"tt": tt_norms(view)}``; stored as
        ``"tt.<key>"``. Each array must have shape ``(K,)``.
    """
    if not isinstance(view, ModelView):
        raise ValueError(f"view must be a ModelView, got {type(view).__name__}")
    v = view.detached(torch.float64)
    K = v.n_models
    for name, t in v.parameters.items():
        if not bool(torch.isfinite(t).all()):
            raise ValueError(f"view has non-finite weights in {name!r}: the weights diverged")
    if extra is not None and not isinstance(extra, Mapping):
        raise ValueError(f"extra must be a mapping of prefix -> table, got {type(extra).__name__}")
    out: NormTable = {}
    init = v.initial.matrices() if v.initial is not None else None
    for name, M in v.matrices().items():
        for suffix, fn in MATRIX_NORMS.items():
            try:
                out[f"{name}.{suffix}"] = _np(fn(M))
            except ValueError as exc:   # e.g. a norm above the largest float
                raise ValueError(f"view: {name}.{suffix}: {exc}") from exc
        if init is not None:
            D = M - init[name]
            out[f"{name}.dist_fro"] = _np(torch.as_tensor(frobenius_norm(D)))
            out[f"{name}.dist_spectral"] = _np(torch.as_tensor(operator_norm(D)))
    flat = torch.cat([t.reshape(K, -1) for t in v.parameters.values()], dim=1)
    out["model.n_params"] = np.full(K, float(flat.shape[1]))
    out["model.l1"] = _np(flat.abs().sum(dim=1))
    out["model.l2"] = _np(_l2(flat))
    if v.initial is not None:
        flat0 = torch.cat([t.reshape(K, -1) for t in v.initial.parameters.values()], dim=1)
        dist = _l2(flat - flat0)
        out["model.dist_l2"] = _np(dist)
        out["model.rel_dist_l2"] = _np(dist / _l2(flat0))
    for prefix, table in (extra or {}).items():
        for key, arr in table.items():
            if isinstance(arr, str) or np.asarray(arr).dtype.kind not in "iuf":
                raise ValueError(f"extra[{prefix!r}][{key!r}] must be a numeric array of shape "
                                 f"({K},), got {type(arr).__name__}")
            a = np.asarray(arr, dtype=np.float64)
            if a.shape != (K,):
                raise ValueError(f"extra[{prefix!r}][{key!r}] must have shape ({K},), got "
                                 f"{a.shape}")
            out[f"{prefix}.{key}"] = a
    for key, a in out.items():
        if not np.all(np.isfinite(a)):
            raise ValueError(f"view: norm {key!r} is not finite for some model (the weights "
                             "diverged, or an extra table holds NaN / inf)")
    return out


def table_row(table: Mapping[str, np.ndarray], k: int) -> dict[str, float]:
    """Model ``k``'s row of a norm table, as ``{column: float}``."""
    if not isinstance(table, Mapping) or not table:
        raise ValueError("table must be a non-empty mapping of column -> (K,) array")
    if any(np.asarray(a).ndim != 1 for a in table.values()):
        raise ValueError("table columns must be 1-d arrays of length K")
    lengths = {len(np.asarray(a)) for a in table.values()}
    if len(lengths) != 1:
        raise ValueError("table columns must all have the same length K")
    K = lengths.pop()
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 0 <= k < K:
        raise ValueError(f"k must be an integer in [0, {K}), got {k!r}")
    return {key: float(np.asarray(a)[k]) for key, a in table.items()}
