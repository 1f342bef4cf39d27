"""The Transformer classes of Li et al. (2026, Section 3.1): single head, H heads, L layers.

Row convention of the paper (tokens are rows of ``X`` in ``R^{T x d}``). One head is

.. math::  f_h(X) = \\sigma\\big(\\mathrm{softmax}(X W_{QK,h} X^\\top) X W_{v,h}\\big) W_{c,h},
   \\qquad W_{QK,h} = W_{Q,h} W_{K,h}^\\top,

with ``W_Q, W_K`` of shape ``(d, r)`` (``r = rank_qk``; the paper takes ``r = d``, a smaller
``r`` bounds ``rank W_QK <= r``, the rank constraint of its Assumption 5.5), ``W_v`` of shape
``(d, k)`` and ``W_c`` of shape ``(k, d)`` (so ``rank W_v, rank W_c <= k``). A layer sums its
heads, ``Phi(X) = sum_h f_h(X)`` (eq. (3)); the scalar prediction is ``w^T Y_[CLS]``.

* ``layers == 1`` (eqs. (2)-(3)): ``Y = Phi(X)``, no normalisation.
* ``layers > 1`` (eqs. (4)-(5)): ``X^(l+1) = Pi_norm(sigma(Pi_norm(Phi_l(X^(l)))))`` with
  ``Pi_norm`` the row-wise projection onto the unit l2 ball, and ``Y = X^(L+1)``.

``normalize`` overrides the default (``layers > 1``). Initialisation (not specified by the
paper): every matrix ``N(0, 1/fan_in)`` drawn per layer in the order ``W_Q, W_K, W_v, W_c``,
then ``w ~ N(0, 1/d)``, from each model's own generator.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch
from torch import nn

from genbounds.models.base import (
    ACTIVATIONS,
    Ensemble,
    check_activation,
    check_cls_index,
    normal_init,
    project_rows_to_unit_ball,
    stack_init,
)
from genbounds.models.view import HeadView, LayerView, ModelView
from genbounds.validation import check_float_dtype, check_int, check_seeds

__all__ = ["LiTransformer"]


class LiTransformer(Ensemble):
    """K independent copies of the single-head / multi-head / multi-layer class of Li et al.

    Parameters (leading ``K``): ``W_Q, W_K (K, L, H, d, r)``, ``W_v (K, L, H, d, k)``,
    ``W_c (K, L, H, k, d)``, ``w (K, d)``. ``forward(X)`` maps ``(K, B, T, d)`` to ``(K, B)``.
    """

    W_Q: nn.Parameter
    W_K: nn.Parameter
    W_v: nn.Parameter
    W_c: nn.Parameter
    w: nn.Parameter

    def __init__(
        self,
        d: int,
        k: int,
        heads: int = 1,
        layers: int = 1,
        rank_qk: int | None = None,
        n_models: int = 1,
        seeds: Sequence[int] | None = None,
        activation: str = "relu",
        normalize: bool | None = None,
        cls_index: int = 0,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        self.d = check_int(d, "d")
        self.k = check_int(k, "k")
        self.heads = check_int(heads, "heads")
        self.layers = check_int(layers, "layers")
        self.rank_qk = d if rank_qk is None else check_int(rank_qk, "rank_qk", maximum=d)
        check_activation(activation)
        if normalize is not None and not isinstance(normalize, bool):
            raise ValueError(f"normalize must be a bool or None, got {normalize!r}")
        check_cls_index(cls_index)
        dtype = check_float_dtype(dtype, "dtype")
        n_models = check_int(n_models, "n_models")
        self.activation = activation
        self.normalize = self.layers > 1 if normalize is None else normalize
        self.cls_index = cls_index
        self.seeds = check_seeds(seeds, "seeds", n_models)
        self.n_models = n_models
        L, H, r = self.layers, self.heads, self.rank_qk
        s_d, s_k = 1.0 / math.sqrt(d), 1.0 / math.sqrt(k)
        draws = [
            ("W_Q", (L, H, d, r), normal_init(s_d)),
            ("W_K", (L, H, d, r), normal_init(s_d)),
            ("W_v", (L, H, d, k), normal_init(s_d)),
            ("W_c", (L, H, k, d), normal_init(s_k)),
            ("w", (d,), normal_init(s_d)),
        ]
        self._register(stack_init(self.seeds, draws, dtype))

    def _phi(self, Y: torch.Tensor, i: int, query: int | None = None) -> torch.Tensor:
        """``Phi_i(Y)`` for every token ``(K, B, T, d)``, or for the one row ``query``
        ``(K, B, d)`` (only the [CLS] row of the last layer reaches the readout)."""
        sigma = ACTIVATIONS[self.activation]
        K, B, T, d = Y.shape
        H = self.heads
        W_QK = self.W_Q[:, i] @ self.W_K[:, i].mT                      # (K, H, d, d)
        Yf = Y.reshape(K, 1, B * T, d)
        V = Yf @ self.W_v[:, i]                                         # (K, H, B*T, k)
        V = V.reshape(K, H, B, T, self.k)
        Yq = Y if query is None else Y[:, :, query : query + 1]        # (K, B, Tq, d)
        Tq = Yq.shape[2]
        Q = (Yq.reshape(K, 1, B * Tq, d) @ W_QK).reshape(K, H, B, Tq, d)
        S = Q @ Y.unsqueeze(1).mT                                      # (K, H, B, Tq, T)
        F = sigma(torch.softmax(S, dim=-1) @ V)                        # (K, H, B, Tq, k)
        out = (F.reshape(K, H, B * Tq, self.k) @ self.W_c[:, i]).sum(1)  # (K, B*Tq, d)
        return out.reshape(K, B, Tq, d) if query is None else out.reshape(K, B, d)

    def _layer_out(self, P: torch.Tensor) -> torch.Tensor:
        if not self.normalize:
            return P
        sigma = ACTIVATIONS[self.activation]
        return project_rows_to_unit_ball(sigma(project_rows_to_unit_ball(P)))

    def representation(self, X: torch.Tensor) -> torch.Tensor:
        """``Y`` for every token, ``(K, B, T, d)`` (before the readout)."""
        self._check_input(X)
        Y = X
        for i in range(self.layers):
            Y = self._layer_out(self._phi(Y, i))
        return Y

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """Scalar outputs ``w^T Y_[CLS]``, shape ``(K, B)``, for inputs ``(K, B, T, d)``.

        Only the [CLS] row of the last layer is computed (the other rows do not reach the
        readout; equal to ``representation(X)[:, :, cls_index]``, tested)."""
        _, _, T = self._check_input(X)
        if not -T <= self.cls_index < T:
            raise ValueError(f"cls_index {self.cls_index} is out of range for T = {T} tokens")
        Y = X
        for i in range(self.layers - 1):
            Y = self._layer_out(self._phi(Y, i))
        cls = self.cls_index % T
        y_cls = self._layer_out(self._phi(Y, self.layers - 1, query=cls))
        return (y_cls * self.w[:, None, :]).sum(-1)

    def view_from_parameters(self, params: Mapping[str, torch.Tensor]) -> ModelView:
        """Column orientation: ``W_QK = W_Q W_K^T`` (the row score ``x_t W_QK x_s^T`` is the
        column score ``x_t^T W_QK x_s``), factors ``W_Q = W_Q^T (K, r, d)``, ``W_K`` likewise,
        ``W_V = W_v^T (K, k, d)``, ``W_O = W_c^T (K, d, k)``; readout ``(K, 1, d)``."""
        layers = []
        for i in range(self.layers):
            heads = []
            for h in range(self.heads):
                Wq, Wk = params["W_Q"][:, i, h], params["W_K"][:, i, h]
                heads.append(HeadView(W_QK=Wq @ Wk.mT, W_V=params["W_v"][:, i, h].mT,
                                      W_O=params["W_c"][:, i, h].mT, W_Q=Wq.mT, W_K=Wk.mT))
            combine = (f"per head: {self.activation} after attention, then W_O; heads summed"
                       + ("; rows projected to the unit ball, activation, projected again"
                          if self.normalize else ""))
            layers.append(LayerView(tuple(heads), combine=combine, activation=self.activation))
        return ModelView("LiTransformer", tuple(layers), params["w"][:, None, :], None, "cls",
                         dict(params))
