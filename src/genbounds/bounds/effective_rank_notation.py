r"""Dhingra (2025)'s quantities read from a trained model, for the comparison chapter's loop.

The bounds of :mod:`genbounds.bounds.effective_rank` need, per model,

* ``R``: a bound on the effective rank ``erank(A^(l,h)(x))`` (Roy & Vetterli) of every attention
  matrix, every layer, head and input (the paper's Assumption 4). **Measured** as the maximum
  over the model's *training inputs* (:func:`dhingra_columns`): the sup over all inputs is not
  computable, so this is a lower estimate of the ``R`` the theorem needs, which favours the
  bound; ``erank <= n`` always holds, so ``R <= n``;
* ``Z_op_mean`` / ``Z_op_max``: mean / max over the training inputs of
  ``sum_{l,h} ||Z^(l,h)(x)||_op`` with ``Z = df/dA`` the sensitivity matrices of
  :func:`genbounds.bounds.effective_rank.sensitivity_matrices` (the audited statements);
* ``L_tot``: the value-path Lipschitz estimate
  :func:`genbounds.bounds.effective_rank.value_path_lipschitz` (the printed statement, whose
  constant the paper leaves unspecified);
* sizes: ``m`` training samples, ``n`` tokens (rows of ``A``, [CLS] included).

:func:`dhingra_columns` computes them for any model that returns its attention maps on given
inputs (:class:`~genbounds.models.view.AttentionModel`; in this book the
:class:`~genbounds.models.EdelmanTransformer`) and returns them under the prefix ``dhingra.``;
the model is read through that protocol and its weight view, never through its class.
:func:`dhingra_quantities` is the registered quantities adapter: it reads
those columns from a stored row, or raises :class:`~genbounds.bounds.registry.NotApplicable`
saying which column / family is missing.

Loss: the statements bound the gap of a 1-Lipschitz loss with values in ``[0, 1]`` (e.g. the
ramp loss ``clip(1 - y f, 0, 1)``); the 0-1 error is at most the ramp loss, so
``test error <= train ramp + bound``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from genbounds.bounds.effective_rank import PAPER, sensitivity_matrices, value_path_lipschitz
from genbounds.bounds.registry import Bound, NotApplicable, register_quantities
from genbounds.protocols import AttentionModel
from genbounds.spectral import rank_measures
from genbounds.validation import check_int, check_number

__all__ = ["COLUMNS", "PREFIX", "dhingra_columns", "dhingra_quantities"]

#: Prefix of the stored columns.
PREFIX = "dhingra."
#: Stored column (without prefix) of each quantity the bounds need (sizes come from context).
COLUMNS: dict[str, str] = {"R": "erank_max", "Z_op_mean": "Z_op_mean",
                           "Z_op_max": "Z_op_max", "L_tot": "L_value_path"}


def dhingra_columns(model: AttentionModel, X: torch.Tensor) -> dict[str, np.ndarray]:
    """Dhingra's quantities of the ``K`` models on their inputs ``X`` ``(K, m, T, d)``.

    Returns ``{"dhingra.erank_max", "dhingra.erank_mean", "dhingra.Z_op_mean",
    "dhingra.Z_op_max", "dhingra.L_value_path"}``, each of shape ``(K,)``: effective ranks of
    every attention matrix (every layer, head and input, from ``model.attention_maps(X)``), the
    operator norms of the sensitivity matrices summed over layers and heads (mean / max over
    inputs), and the value-path Lipschitz estimate of the weights.
    """
    if not isinstance(model, AttentionModel):
        raise ValueError("model must return its attention maps (genbounds.models.view."
                         f"AttentionModel), got {type(model).__name__}")
    if not isinstance(X, torch.Tensor) or X.ndim != 4 or X.shape[0] != model.n_models:
        raise ValueError(f"X must be a tensor of shape (K={model.n_models}, m, T, d), got "
                         f"{getattr(X, 'shape', None)}")
    if X.is_floating_point() and not bool(torch.isfinite(X).all()):
        raise ValueError("X contains non-finite values")
    K = model.n_models
    with torch.no_grad():
        A = model.attention_maps(X)                               # (K, L, m, H, T, T)
    er = rank_measures(A.detach().to(torch.float64))["erank"].reshape(K, -1)
    Z = sensitivity_matrices(model, X).to(torch.float64)        # (K, L, m, H, T, T)
    op = torch.linalg.matrix_norm(Z, ord=2).sum(dim=(1, 3))     # (K, m)
    return {PREFIX + "erank_max": er.amax(dim=1).cpu().numpy(),
            PREFIX + "erank_mean": er.mean(dim=1).cpu().numpy(),
            PREFIX + "Z_op_mean": op.mean(dim=1).cpu().numpy(),
            PREFIX + "Z_op_max": op.amax(dim=1).cpu().numpy(),
            PREFIX + "L_value_path": np.asarray(value_path_lipschitz(model.view()),
                                                dtype=np.float64)}


def dhingra_quantities(row: Mapping[str, Any], context: Mapping[str, Any]) -> dict[str, Any]:
    """The quantities adapter of ``dhingra2025provable`` (see the module docstring).

    ``context`` needs ``"bound"`` (the :class:`~genbounds.bounds.registry.Bound`), ``"family"``,
    ``"m"`` (training samples) and ``"T"`` (tokens per input, [CLS] included).
    """
    if not isinstance(row, Mapping):
        raise ValueError(f"row must be a mapping of stored columns, got {type(row).__name__}")
    if not isinstance(context, Mapping) or not isinstance(context.get("bound"), Bound):
        raise ValueError("context must be a mapping with a Bound under 'bound'")
    bound: Bound = context["bound"]
    family = context.get("family")
    missing = [PREFIX + COLUMNS[q] for q in bound.needs if q in COLUMNS
               and PREFIX + COLUMNS[q] not in row]
    if missing:
        raise NotApplicable(f"no attention matrices / sensitivity matrices stored for this "
                            f"{family} model (missing {missing}; they are computed for "
                            f"EdelmanTransformer models only, by dhingra_columns)")
    out: dict[str, Any] = {}
    for q in bound.needs:
        if q in COLUMNS:
            out[q] = check_number(row[PREFIX + COLUMNS[q]], f"row[{PREFIX + COLUMNS[q]!r}]")
        elif q == "m":
            out[q] = check_int(context.get("m"), "context['m']")
        elif q == "n":
            out[q] = check_int(context.get("T"), "context['T']")
        else:
            raise NotApplicable(f"quantity {q!r} of {bound.key} is not mapped")
    return out


register_quantities(PAPER, dhingra_quantities)
