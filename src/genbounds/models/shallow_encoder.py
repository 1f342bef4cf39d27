"""The one-layer encoder of the shallow-Transformer GD paper (Section 3.1), K models at once."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch
from torch import nn

from genbounds.models.base import (
    Ensemble,
    normal_init,
    stack_init,
)
from genbounds.models.view import HeadView, LayerView, ModelView
from genbounds.validation import check_int, check_seeds

__all__ = ['ShallowEncoder']

class ShallowEncoder(Ensemble):
    r"""One-layer encoder of the shallow-Transformer GD paper (Section 3.1), K models at once.

    For one input ``X`` of shape ``(d_s, d)`` (``d_s`` tokens of dimension ``d``)

    .. math::

        f(X) = \frac{1}{d_s} w_O^\top \sum_{i=1}^{d_s}
            \sigma_r\Big(W_V X^\top \sigma_s\big(X W_K^\top W_Q X^{(i,:)\top} / \sqrt{d_m}\big)
            \Big),

    i.e. self-attention ``A_1 = softmax((X W_Q^T)(X W_K^T)^T / sqrt(d_m)) (X W_V^T)`` with
    ``W_Q, W_K, W_V`` of shape ``(d_m, d)``, the feed-forward map ``W_H = I`` followed by the
    ReLU ``sigma_r``, column-wise mean pooling over the ``d_s`` tokens, and the scalar readout
    ``w_O`` of length ``d_m``. No biases.

    Initialisation (LeCun, as stated in the paper's Section 3.1.3, following Wu et al., 2024):
    every entry of ``W_Q, W_K, W_V`` is ``N(0, 1/d)`` and every entry of ``w_O`` is
    ``N(0, 1/d_m)``; drawn in the order ``W_Q, W_K, W_V, w_O`` from model ``k``'s generator.

    Parameters (leading model dimension ``K``): ``W_Q, W_K, W_V`` of shape ``(K, d_m, d)``,
    ``w_O`` of shape ``(K, d_m)``. ``forward(X)`` maps ``(K, B, d_s, d)`` to ``(K, B)``.
    """

    def __init__(
        self,
        d: int,
        d_m: int,
        n_models: int = 1,
        seeds: Sequence[int] | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        self.d = check_int(d, "d")
        self.d_m = check_int(d_m, "d_m")
        self.seeds = check_seeds(seeds, "seeds", n_models)
        self.n_models = n_models
        self.heads = 1
        draws = [
            ("W_Q", (d_m, d), normal_init(1.0 / math.sqrt(d))),
            ("W_K", (d_m, d), normal_init(1.0 / math.sqrt(d))),
            ("W_V", (d_m, d), normal_init(1.0 / math.sqrt(d))),
            ("w_O", (d_m,), normal_init(1.0 / math.sqrt(d_m))),
        ]
        self._register(stack_init(self.seeds, draws, dtype))

    W_Q: nn.Parameter
    W_K: nn.Parameter
    W_V: nn.Parameter
    w_O: nn.Parameter

    def _scores(self, X: torch.Tensor) -> torch.Tensor:
        Q = torch.einsum("kbtd,kmd->kbtm", X, self.W_Q)
        Kx = torch.einsum("kbtd,kmd->kbtm", X, self.W_K)
        return torch.einsum("kbtm,kbsm->kbts", Q, Kx) / math.sqrt(self.d_m)

    def attention(self, X: torch.Tensor) -> torch.Tensor:
        """Row-stochastic ``softmax(X W_Q^T W_K X^T / sqrt(d_m))``, shape ``(K, B, 1, T, T)``."""
        self._check_input(X)
        return torch.softmax(self._scores(X), dim=-1).unsqueeze(2)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """Scalar outputs ``f(X)`` of shape ``(K, B)`` for inputs ``(K, B, d_s, d)``."""
        self._check_input(X)
        A = torch.softmax(self._scores(X), dim=-1)
        V = torch.einsum("kbtd,kmd->kbtm", X, self.W_V)
        Z = torch.relu(torch.einsum("kbts,kbsm->kbtm", A, V))
        return torch.einsum("kbm,km->kb", Z.mean(dim=2), self.w_O)

    def view_from_parameters(self, params: Mapping[str, torch.Tensor]) -> ModelView:
        """One layer, one head: ``W_Q, W_K, W_V`` ``(K, d_m, d)`` as stored (already in the
        column orientation), ``W_QK = W_Q^T W_K / sqrt(d_m)``, no ``W_O`` (``W_H = I``),
        readout ``w_O`` as ``(K, 1, d_m)``, mean pooling."""
        scale = 1.0 / math.sqrt(self.d_m)
        W_Q, W_K, W_V = params["W_Q"], params["W_K"], params["W_V"]
        head = HeadView(W_QK=scale * torch.einsum("kmi,kmj->kij", W_Q, W_K), W_V=W_V,
                        W_Q=W_Q, W_K=W_K, score_scale=scale)
        layer = LayerView((head,), combine="one head, W_H = I, then ReLU", activation="relu")
        return ModelView("ShallowEncoder", (layer,), params["w_O"][:, None, :], None, "mean",
                         dict(params))
