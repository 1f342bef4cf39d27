"""The heads and L-layer blocks of Edelman et al. (2022) in Trauger & Tewari's notation."""

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
)
from genbounds.models.view import HeadView, LayerView, ModelView
from genbounds.validation import check_int, check_seeds

__all__ = ['EdelmanTransformer']


class EdelmanTransformer(Ensemble):
    r"""L-layer, H-head Transformer block of Edelman et al. (2022) / Trauger & Tewari (2024).

    Notation of Trauger & Tewari (2024, Section 2.6), rows are tokens. One head applied to
    ``Y`` (shape ``(T, d)``) is ``f_h(Y) = RowSoftmax(Y W_QK,h Y^T) Y W_v,h`` with ``W_QK,h``
    of shape ``(d, d)`` **parametrised directly** (the product ``W_Q W_K^T`` of the paper,
    combined into one trainable matrix as the paper does for its analysis) and ``W_v,h`` of
    shape ``(d, k)``; ``W_c,h`` has shape ``(k, d)``. Layer ``i`` maps ``Y^(i)`` to

    .. math::

        Y^{(i+1)} = \Pi_{norm}\Big(\sum_{h=1}^H \sigma\big(\Pi_{norm}(f_h(Y^{(i)}))\big)
            W^{(i)}_{c,h}\Big), \qquad Y^{(1)} = X,

    where ``Pi_norm`` projects every row onto the unit l2 ball
    (:func:`project_rows_to_unit_ball`) and ``sigma`` is applied entrywise. For ``H = 1`` this
    is exactly the paper's ``g_block``; for ``H > 1`` the heads are summed inside the outer
    projection, as the paper's multi-head layer ``sum_h sigma(...) W_c,h`` suggests (the paper
    writes the projected block only for one head). The scalar output is
    ``w^T Y^(L+1)_[CLS]`` with ``w`` of length ``d`` and the [CLS] row at ``cls_index``.

    Initialisation (not specified by either paper; LeCun-style, fan-in scaled Gaussians drawn
    per layer in the order ``W_QK, W_v, W_c`` and finally ``w``): ``W_QK ~ N(0, 1/d)``,
    ``W_v ~ N(0, 1/d)``, ``W_c ~ N(0, 1/k)``, ``w ~ N(0, 1/d)``.

    Parameters (leading ``K``): ``W_QK (K, L, H, d, d)``, ``W_v (K, L, H, d, k)``,
    ``W_c (K, L, H, k, d)``, ``w (K, d)``. ``forward(X)`` maps ``(K, B, T, d)`` to ``(K, B)``.
    """

    def __init__(
        self,
        d: int,
        k: int,
        heads: int = 1,
        layers: int = 1,
        n_models: int = 1,
        seeds: Sequence[int] | None = None,
        activation: str = "relu",
        cls_index: int = -1,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        self.d = check_int(d, "d")
        self.k = check_int(k, "k")
        self.heads = check_int(heads, "heads")
        self.layers = check_int(layers, "layers")
        self.activation = check_activation(activation)
        self.cls_index = check_cls_index(cls_index)
        self.seeds = check_seeds(seeds, "seeds", n_models)
        self.n_models = n_models
        L, H = layers, heads

        per_model: dict[str, list[torch.Tensor]] = {"W_QK": [], "W_v": [], "W_c": [], "w": []}
        for seed in self.seeds:
            gen = torch.Generator(device="cpu")
            gen.manual_seed(int(seed))
            qk, v, c = [], [], []
            for _ in range(L):
                qk.append(normal_init(1.0 / math.sqrt(d))(gen, (H, d, d)))
                v.append(normal_init(1.0 / math.sqrt(d))(gen, (H, d, k)))
                c.append(normal_init(1.0 / math.sqrt(k))(gen, (H, k, d)))
            per_model["W_QK"].append(torch.stack(qk))
            per_model["W_v"].append(torch.stack(v))
            per_model["W_c"].append(torch.stack(c))
            per_model["w"].append(normal_init(1.0 / math.sqrt(d))(gen, (d,)))
        self._register({n: torch.stack(ts).to(dtype) for n, ts in per_model.items()})

    W_QK: nn.Parameter
    W_v: nn.Parameter
    W_c: nn.Parameter
    w: nn.Parameter

    def _layer(self, Y: torch.Tensor, i: int, A: torch.Tensor | None = None
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """Layer ``i`` on ``Y`` ``(K, B, T, d)``; returns ``(Y_next, A)`` with ``A`` the
        row-stochastic attention ``(K, B, heads, T, T)``, or the given ``A`` put in its place."""
        sigma = ACTIVATIONS[self.activation]
        if A is None:
            S = torch.einsum("kbtd,khde,kbse->kbhts", Y, self.W_QK[:, i], Y)
            A = torch.softmax(S, dim=-1)
        Fh = torch.einsum("kbhts,kbsd,khde->kbhte", A, Y, self.W_v[:, i])
        G = torch.einsum("kbhte,khed->kbtd", sigma(project_rows_to_unit_ball(Fh)), self.W_c[:, i])
        return project_rows_to_unit_ball(G), A

    def _check_attention(self, X: torch.Tensor, attention: object) -> None:
        """``X`` a valid input with a [CLS] position and ``attention`` a finite tensor of the
        shape of :meth:`attention_maps` for it."""
        K, B, T = self._check_input(X)
        self._check_cls(T)
        shape = (K, self.layers, B, self.heads, T, T)
        if not isinstance(attention, torch.Tensor) or tuple(attention.shape) != shape:
            got = (tuple(attention.shape) if isinstance(attention, torch.Tensor)
                   else type(attention).__name__)
            raise ValueError(f"attention must be a tensor of shape {shape}, got {got}")
        if not bool(torch.isfinite(attention).all()):
            raise ValueError("attention contains non-finite values")

    def _check_cls(self, T: int) -> None:
        if not -T <= self.cls_index < T:
            raise ValueError(f"cls_index {self.cls_index} is out of range for T = {T} tokens")

    def block_output(self, X: torch.Tensor) -> torch.Tensor:
        """``g_block^(L+1)(X)``: the last layer's output for every token, ``(K, B, T, d)``."""
        self._check_input(X)
        Y = X
        for i in range(self.layers):
            Y, _ = self._layer(Y, i)
        return Y

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """Scalar outputs ``w^T Y_[CLS]`` of shape ``(K, B)`` for inputs ``(K, B, T, d)``."""
        _, _, T = self._check_input(X)
        self._check_cls(T)
        Y = self.block_output(X)
        return torch.einsum("kbd,kd->kb", Y[:, :, self.cls_index], self.w)

    def attention(self, X: torch.Tensor, layer: int = 0) -> torch.Tensor:
        """Row-stochastic attention of layer ``layer`` (0-based): ``(K, B, heads, T, T)``."""
        self._check_input(X)
        if not isinstance(layer, int) or isinstance(layer, bool) or not 0 <= layer < self.layers:
            raise ValueError(f"layer must be in [0, {self.layers}), got {layer!r}")
        Y = X
        for i in range(layer):
            Y, _ = self._layer(Y, i)
        return self._layer(Y, layer)[1]

    def attention_maps(self, X: torch.Tensor) -> torch.Tensor:
        """Every attention matrix of the inputs ``X`` ``(K, B, T, d)``, from one forward pass.

        Returns ``(K, L, B, heads, T, T)``: entry ``[k, l, b, h]`` is the row-stochastic
        attention matrix of model ``k``, layer ``l``, head ``h`` on input ``b`` (rows are
        queries). These are the matrices :meth:`forward` uses (the same layer code computes
        both), so ``output_with_attention(X, attention_maps(X))`` equals ``forward(X)``.
        The attention-maps contract of :class:`genbounds.models.view.AttentionModel`.
        """
        _, _, T = self._check_input(X)
        self._check_cls(T)
        Y, maps = X, []
        for i in range(self.layers):
            Y, A = self._layer(Y, i)
            maps.append(A)
        return torch.stack(maps, dim=1)

    def output_with_attention(self, X: torch.Tensor, attention: torch.Tensor) -> torch.Tensor:
        """The scalar outputs ``(K, B)`` with every attention matrix replaced by ``attention``.

        ``attention`` has the shape of :meth:`attention_maps` ``(K, L, B, heads, T, T)``; the
        rest of the forward pass (values, projections, activation, read-out) is unchanged, so
        the derivative of the output with respect to ``attention`` is the sensitivity of ``f``
        to its attention matrices (Dhingra's ``Z = df/dA``).
        """
        self._check_attention(X, attention)
        Y = X
        for i in range(self.layers):
            Y, _ = self._layer(Y, i, attention[:, i])
        return torch.einsum("kbd,kd->kb", Y[:, :, self.cls_index], self.w)

    def view_from_parameters(self, params: Mapping[str, torch.Tensor]) -> ModelView:
        """Per layer and head: ``W_QK`` as stored (the row-convention score ``y_t W_QK y_s^T``
        is the column-convention ``x_t^T W_QK x_s``), ``W_V = W_v^T`` ``(K, k, d)`` and
        ``W_O = W_c^T`` ``(K, d, k)``; readout ``w`` as ``(K, 1, d)``; [CLS] pooling."""
        layers = []
        for i in range(self.layers):
            heads = tuple(
                HeadView(W_QK=params["W_QK"][:, i, h], W_V=params["W_v"][:, i, h].mT,
                         W_O=params["W_c"][:, i, h].mT)
                for h in range(self.heads)
            )
            layers.append(LayerView(
                heads, combine=f"per head: project rows to the unit ball, {self.activation}, "
                "W_O; heads summed; rows projected to the unit ball",
                activation=self.activation))
        return ModelView("EdelmanTransformer", tuple(layers), params["w"][:, None, :], None,
                         "cls", dict(params))
