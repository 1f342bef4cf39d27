"""The one-layer encoder of the shallow-Transformer GD paper (Section 3.1), K models at once."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn
from torch.autograd.function import once_differentiable

from genbounds.models.base import (
    Ensemble,
    normal_init,
    stack_init,
)
from genbounds.models.view import HeadView, LayerView, ModelView
from genbounds.validation import check_int, check_seeds

__all__ = ['ShallowEncoder']


class _ValueReadout(torch.autograd.Function):
    """``(AX, W_V, w_O, T) -> mean_t relu(AX W_V^T)_t w_O``, shape ``(K, B)`` from ``AX`` of
    shape ``(K, B T, d)``.

    One node instead of four (product, ReLU, mean, readout): the ReLU runs in place on the
    product, and the backward pass forms the activation's gradient ``sign(relu(Y)) * (g / T)
    w_O`` in one tensor, so a step allocates two ``(K, B T, d_m)`` tensors instead of four. The
    saved activation is not modified (the graph may be differentiated more than once).
    First-order only (``once_differentiable``).
    """

    @staticmethod
    def forward(ctx: Any, AX: torch.Tensor, W_V: torch.Tensor, w_O: torch.Tensor,
                T: int) -> torch.Tensor:
        K, BT, _ = AX.shape
        Y = torch.matmul(AX, W_V.transpose(1, 2)).relu_()  # (K, B T, d_m)
        Zbar = Y.view(K, BT // T, T, -1).mean(dim=2)  # (K, B, d_m)
        out = torch.matmul(Zbar, w_O.unsqueeze(2)).squeeze(2)
        ctx.save_for_backward(AX, W_V, w_O, Y, Zbar)
        ctx.T = T
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        g = grads[0]  # (K, B)
        AX, W_V, w_O, Y, Zbar = ctx.saved_tensors
        T = ctx.T
        K, BT, d_m = Y.shape
        G = (g / T).unsqueeze(2) * w_O.unsqueeze(1)  # (K, B, d_m)
        gY = Y.sign().view(K, BT // T, T, d_m).mul_(G.unsqueeze(2)).view(K, BT, d_m)
        gAX = torch.matmul(gY, W_V) if ctx.needs_input_grad[0] else None
        gW_V = torch.matmul(gY.transpose(1, 2), AX) if ctx.needs_input_grad[1] else None
        gw_O = torch.matmul(g.unsqueeze(1), Zbar).squeeze(1) if ctx.needs_input_grad[2] else None
        return gAX, gW_V, gw_O, None


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
        """``X (W_Q^T W_K / sqrt(d_m)) X^T``, shape ``(K, B, T, T)``.

        Associated through the ``d x d`` matrix ``W_Q^T W_K / sqrt(d_m)`` (formed once per
        call): per sample ``2 T d^2 + 2 T^2 d`` FLOPs instead of the ``4 T d d_m + 2 T^2 d_m`` of
        forming the queries ``X W_Q^T`` and keys ``X W_K^T`` first (:meth:`forward_projected`).
        """
        W_QK = torch.matmul(self.W_Q.transpose(1, 2), self.W_K) / math.sqrt(self.d_m)
        K, B, T, d = X.shape
        XW = torch.matmul(X.reshape(K, B * T, d), W_QK).reshape(K, B, T, d)
        return torch.matmul(XW, X.transpose(2, 3))

    def attention(self, X: torch.Tensor) -> torch.Tensor:
        """Row-stochastic ``softmax(X W_Q^T W_K X^T / sqrt(d_m))``, shape ``(K, B, 1, T, T)``."""
        self._check_input(X)
        return torch.softmax(self._scores(X), dim=-1).unsqueeze(2)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """Scalar outputs ``f(X)`` of shape ``(K, B)`` for inputs ``(K, B, d_s, d)``.

        Computed as ``mean_t relu((A X) W_V^T)_t w_O`` with ``A = softmax(X (W_Q^T W_K) X^T /
        sqrt(d_m))``: the only products of width ``d_m`` are the value projection of all
        ``B d_s`` tokens of a model (one large batched matrix product) and the readout, and the
        ReLU, the mean over tokens and the readout run in one autograd node
        (:class:`_ValueReadout`). Equal to
        :meth:`forward_projected` (the paper's ``A (X W_V^T)`` with explicit queries and keys)
        up to floating-point rounding; supports first-order gradients (not double backward).
        """
        K, B, T = self._check_input(X)
        if not bool(torch.isfinite(X).all()):
            raise ValueError("X must hold finite values (NaN or inf found)")
        A = torch.softmax(self._scores(X), dim=-1)
        AX = torch.matmul(A, X).reshape(K, B * T, self.d)
        return _ValueReadout.apply(AX, self.W_V, self.w_O, T)

    def forward_projected(self, X: torch.Tensor) -> torch.Tensor:
        """The same ``f(X)`` in the paper's association: queries ``X W_Q^T``, keys ``X W_K^T``
        and values ``X W_V^T`` of width ``d_m`` first (the reference :meth:`forward` is
        checked against; about 3.5 times the matrix-product FLOPs at ``d_m = 4096``)."""
        self._check_input(X)
        Q = torch.einsum("kbtd,kmd->kbtm", X, self.W_Q)
        Kx = torch.einsum("kbtd,kmd->kbtm", X, self.W_K)
        A = torch.softmax(torch.einsum("kbtm,kbsm->kbts", Q, Kx) / math.sqrt(self.d_m), dim=-1)
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
