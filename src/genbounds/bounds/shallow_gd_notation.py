r"""Mwigo & Dasgupta (2026)'s quantities read from a stored model row, for the comparison loop.

The statements of :mod:`genbounds.bounds.shallow_gd` are about one architecture, the
:class:`~genbounds.models.shallow_encoder.ShallowEncoder` (one head, ``W_H = I``, ReLU, mean
pooling, scalar readout ``w_O``, LeCun initialisation) trained by full-batch gradient descent on
the sigmoid cross-entropy. Their inputs are computed by
:func:`genbounds.bounds.shallow_gd.shallow_gd_quantities` from the model view (with its initial
weights) and the training set: the radii ``R_Q, R_K, R_V, R_O`` (distances from
initialisation), the initial norms, ``alpha``, ``Phi(theta^0)``, ``R_X``, ``B_X`` and the sizes.

:func:`shallow_columns` stores them under the prefix ``sgd.`` (one model at a time, since each
model of the comparison sweep has its own training set); :func:`shallow_quantities` is the
registered adapter: it raises :class:`~genbounds.bounds.registry.NotApplicable` for any other
family, or when a column is missing, and otherwise reads every needed quantity (sizes as int).

What each bound bounds (``Bound.kind``): Lemmas 1/2 a Rademacher complexity (no measured
counterpart), Lemma 4 the **training loss** and Theorem 5 the **true loss** (the expected
logistic loss, estimated by the held-out test loss), never the gap.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from genbounds.bounds.registry import Bound, NotApplicable, register_quantities
from genbounds.bounds.shallow_gd import PAPER, QUANTITY_NAMES, shallow_gd_quantities
from genbounds.protocols import ModelView

__all__ = ["FAMILY", "PREFIX", "shallow_columns", "shallow_quantities"]

#: Prefix of the stored columns.
PREFIX = "sgd."
#: The model family the statements are about (``ModelView.family``).
FAMILY = "ShallowEncoder"
_INTS = ("N", "d_s", "d", "d_m")


def shallow_columns(view: ModelView, X: torch.Tensor, y: torch.Tensor | np.ndarray
                    ) -> dict[str, np.ndarray]:
    """Every input of the registered shallow-GD bounds for the ``K`` models of ``view``, each
    on its own training set: ``X`` ``(K, N, d_s, d)``, ``y`` ``(K, N)`` labels in {0, 1}.

    Returns ``{"sgd.<name>": (K,)}`` for every name of
    :data:`genbounds.bounds.shallow_gd.QUANTITY_NAMES`.
    """
    if not isinstance(view, ModelView) or view.family != FAMILY:
        raise ValueError(f"view must be a {FAMILY} ModelView")
    if view.initial is None:
        raise ValueError("view must carry its initial weights (model.view(initial_state=...))")
    if not isinstance(X, torch.Tensor | np.ndarray):
        raise ValueError(f"X must be a tensor or array of shape (K, N, d_s, d), got "
                         f"{type(X).__name__}")
    X = torch.as_tensor(X)
    if not X.is_floating_point() or not bool(torch.isfinite(X).all()):
        raise ValueError("X must hold finite floating-point values")
    yy = np.asarray(torch.as_tensor(y).cpu())
    K = view.n_models
    if X.ndim != 4 or X.shape[0] != K or yy.shape != tuple(X.shape[:2]):
        raise ValueError(f"X must have shape (K={K}, N, d_s, d) and y (K, N); got "
                         f"{tuple(X.shape)} and {yy.shape}")
    out = {PREFIX + q: np.zeros(K) for q in QUANTITY_NAMES}
    for j in range(K):
        q = shallow_gd_quantities(view, X[j].cpu(), yy[j])
        for name in QUANTITY_NAMES:
            out[PREFIX + name][j] = float(np.asarray(q[name])[j])
    return out


def shallow_quantities(row: Mapping[str, Any], context: Mapping[str, Any]) -> dict[str, Any]:
    """The quantities adapter of ``mwigo2026shallow`` (see the module docstring)."""
    bound: Bound = context["bound"]
    family = context.get("family")
    if family != FAMILY:
        raise NotApplicable(f"a statement about the one-head {FAMILY} (W_H = I, ReLU, mean "
                            f"pooling) trained by full-batch GD; this model is a {family}")
    missing = [PREFIX + q for q in bound.needs if PREFIX + q not in row]
    if missing:
        raise NotApplicable(f"no stored column {missing} (computed by shallow_columns)")
    return {q: _read(row[PREFIX + q], PREFIX + q, q in _INTS) for q in bound.needs}


def _read(value: Any, name: str, integer: bool) -> Any:
    """One stored scalar: a finite float, or an int for a size (``ValueError`` naming the
    column for NaN / inf, booleans, arrays, or a size that is not a whole number >= 1)."""
    arr = np.asarray(value)
    if arr.shape != () or arr.dtype.kind not in "iuf" or isinstance(value, bool | np.bool_):
        raise ValueError(f"column {name} must hold one number per model, got {value!r}")
    v = float(arr)
    if not np.isfinite(v):
        raise ValueError(f"column {name} must be finite, got {v}")
    if integer:
        if v != int(v) or v < 1:
            raise ValueError(f"column {name} must be a whole number >= 1, got {v}")
        return int(v)
    return v


register_quantities(PAPER, shallow_quantities)
