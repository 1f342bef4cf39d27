"""The protocols between models and bounds: one typed view of the weights of every model family.

This module imports nothing of the package, so that :mod:`genbounds.bounds` sees models only
through it (importing the bounds loads no model family; :mod:`genbounds.models.view` re-exports
these names for older imports).

Every family in :mod:`genbounds.models` returns a :class:`ModelView` from ``model.view()``.
Bounds, norms and chapters read weights only through it, so a new family needs one method and
every bound of the book applies to it at once.

Orientation (one convention, everywhere)
----------------------------------------
Tokens are **column vectors** ``x`` in ``R^d`` and every linear map is stored as the matrix that
multiplies them, shape ``(out, in)``: ``q = W_Q x``, ``v = W_V x``. Every tensor carries the
leading model dimension ``K`` of the ensemble, so ``W_Q`` has shape ``(K, d_k, d)``.

For one head the attention score of query token ``x_i`` and key token ``x_j`` is

.. math::  s_{ij} = x_i^\\top W_{QK} x_j, \\qquad W_{QK} = \\texttt{score\\_scale}\\;
   W_Q^\\top W_K \\quad (d \\times d),

(``score_scale`` is ``1/sqrt(d_k)`` for scaled dot-product attention and 1 when a family
parametrises ``W_QK`` directly, as Edelman et al. do), the attention row is
``a_i = softmax_j(s_ij)``, and the head's output at token ``i`` is ``W_O sum_j a_ij W_V x_j``
(``W_O = None`` when the head has no output map of its own). A paper whose notation uses row
vectors (``X W``) or transposed maps reads these matrices through an *adapter* next to its
bounds (e.g. :mod:`genbounds.bounds.trauger_tewari_notation`), never by changing the view.

What a layer does with its heads (sum them, apply an activation, an MLP) is described by
``LayerView.combine`` in words and by the fields ``mlp`` / ``activation``; the view is a
description of the weights, not a second implementation of the forward pass.

Attention maps on inputs
------------------------
The view holds weights, never activations. A family whose attention matrices on given inputs
are needed (effective ranks, sensitivities ``df/dA``) also satisfies :class:`AttentionModel`:
``attention_maps(X)`` returns every attention matrix ``(K, L, B, H, T, T)`` of the inputs ``X``
``(K, B, T, d)`` from the forward pass itself, and ``output_with_attention(X, A)`` the outputs
with those matrices replaced. Bounds read these tensors through the protocol, never a model
class.

Initial weights
---------------
``model.view(initial_state=...)`` attaches the view of the same model at initialisation
(``ModelView.initial``), e.g. from :attr:`genbounds.train.TrainResult.initial_state`; distance-
from-initialisation quantities (:func:`genbounds.norms.norm_table`) need it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import torch

__all__ = ["AttentionModel", "HeadView", "LayerView", "ModelView"]


def _check_matrix(t: torch.Tensor | None, name: str, K: int) -> None:
    if t is None:
        return
    if not isinstance(t, torch.Tensor) or t.ndim != 3 or t.shape[0] != K:
        shape = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
        raise ValueError(f"{name} must be a tensor of shape (K={K}, out, in); got {shape}")


@dataclass(frozen=True)
class HeadView:
    """One attention head, column-vector orientation, leading ``K``.

    Attributes
    ----------
    W_QK:
        ``(K, d, d)``; the score of query ``x_i`` and key ``x_j`` is ``x_i^T W_QK x_j``
        (``score_scale`` included).
    W_V:
        ``(K, d_v, d)``: the value map.
    W_O:
        ``(K, d_out, d_v)``: the head's own output map, or ``None``.
    W_Q, W_K:
        ``(K, d_k, d)`` when the family factors ``W_QK``; ``None`` when it parametrises it.
    score_scale:
        ``W_QK = score_scale * W_Q^T W_K`` (1 when ``W_Q``/``W_K`` are ``None``).
    biases:
        Bias vectors by name (``"b_Q"``, ``"b_K"``, ``"b_V"``: ``(K, d_k)``), empty if none.
    """

    W_QK: torch.Tensor
    W_V: torch.Tensor
    W_O: torch.Tensor | None = None
    W_Q: torch.Tensor | None = None
    W_K: torch.Tensor | None = None
    score_scale: float = 1.0
    biases: Mapping[str, torch.Tensor] = field(default_factory=dict)

    def matrices(self) -> dict[str, torch.Tensor]:
        """The head's matrices by name (``W_QK``, ``W_V`` and those not ``None``)."""
        out = {"W_QK": self.W_QK, "W_V": self.W_V}
        for name in ("W_O", "W_Q", "W_K"):
            t = getattr(self, name)
            if t is not None:
                out[name] = t
        return out


@dataclass(frozen=True)
class LayerView:
    """One attention layer: its heads, then what is applied to their outputs.

    Attributes
    ----------
    heads:
        The heads, in order.
    combine:
        How the heads' outputs are combined, in words (e.g. ``"sum, then ReLU"``).
    activation:
        The entrywise non-linearity after attention (``"relu"``, ``"identity"``, ...).
    mlp:
        Maps applied after the activation, each ``(K, out, in)`` (empty when ``W_H = I``).
    biases:
        Layer-level bias vectors by name (e.g. the shared output bias ``"b_O"``, ``"b_mlp0"``).
    """

    heads: tuple[HeadView, ...]
    combine: str
    activation: str
    mlp: tuple[torch.Tensor, ...] = ()
    biases: Mapping[str, torch.Tensor] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelView:
    """The weights of an ensemble of ``K`` models, per layer and head, in one orientation.

    Attributes
    ----------
    family:
        The model class name (``"ShallowEncoder"``, ...).
    layers:
        The attention layers, in order.
    readout:
        ``(K, n_out, d_last)``: the final linear map.
    readout_bias:
        ``(K, n_out)`` or ``None``.
    pooling:
        How the readout sees the tokens: ``"cls"`` (the [CLS] row) or ``"mean"``.
    parameters:
        Every trainable tensor of the model by its own name (leading ``K``), biases included:
        what "all the weights" means for parameter counts and whole-model norms.
    initial:
        The view of the same models at initialisation, when known.
    """

    family: str
    layers: tuple[LayerView, ...]
    readout: torch.Tensor
    readout_bias: torch.Tensor | None
    pooling: str
    parameters: Mapping[str, torch.Tensor]
    initial: ModelView | None = None

    def __post_init__(self) -> None:
        if not self.layers:
            raise ValueError("layers must hold at least one LayerView")
        K = self.n_models
        _check_matrix(self.readout, "readout", K)
        for i, layer in enumerate(self.layers):
            if not layer.heads:
                raise ValueError(f"layers[{i}].heads must hold at least one HeadView")
            for h, head in enumerate(layer.heads):
                for name, t in head.matrices().items():
                    _check_matrix(t, f"layers[{i}].heads[{h}].{name}", K)
            for j, t in enumerate(layer.mlp):
                _check_matrix(t, f"layers[{i}].mlp[{j}]", K)
        if self.initial is not None:
            self._check_same_shapes(self.initial)

    @property
    def n_models(self) -> int:
        """``K``, the number of models in the ensemble."""
        return int(self.readout.shape[0])

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    @property
    def n_heads(self) -> int:
        """Heads per layer (the largest, if layers differ)."""
        return max(len(layer.heads) for layer in self.layers)

    def matrices(self) -> dict[str, torch.Tensor]:
        """Every weight matrix by a flat name, ``(K, out, in)`` each.

        Names: ``"layer{i}.head{h}.W_QK"`` (and ``W_V``, ``W_O``, ``W_Q``, ``W_K`` when present),
        ``"layer{i}.mlp{j}"`` and ``"readout"``; the order is layer by layer.
        """
        out: dict[str, torch.Tensor] = {}
        for i, layer in enumerate(self.layers):
            for h, head in enumerate(layer.heads):
                for name, t in head.matrices().items():
                    out[f"layer{i}.head{h}.{name}"] = t
            for j, t in enumerate(layer.mlp):
                out[f"layer{i}.mlp{j}"] = t
        out["readout"] = self.readout
        return out

    def heads(self) -> Iterator[tuple[int, int, HeadView]]:
        """``(layer, head, HeadView)`` for every head."""
        for i, layer in enumerate(self.layers):
            for h, head in enumerate(layer.heads):
                yield i, h, head

    def n_parameters(self) -> int:
        """Trainable parameters of ONE model (biases included)."""
        return int(sum(t[0].numel() for t in self.parameters.values()))

    def detached(self, dtype: torch.dtype = torch.float64) -> ModelView:
        """A copy on the CPU in ``dtype`` (default float64), for measuring."""

        def cv(t: torch.Tensor) -> torch.Tensor:
            return t.detach().to(device="cpu", dtype=dtype)

        def head(hv: HeadView) -> HeadView:
            return HeadView(
                cv(hv.W_QK), cv(hv.W_V), None if hv.W_O is None else cv(hv.W_O),
                None if hv.W_Q is None else cv(hv.W_Q), None if hv.W_K is None else cv(hv.W_K),
                hv.score_scale, {k: cv(v) for k, v in hv.biases.items()},
            )

        layers = tuple(
            LayerView(tuple(head(hv) for hv in layer.heads), layer.combine, layer.activation,
                      tuple(cv(t) for t in layer.mlp), {k: cv(v) for k, v in layer.biases.items()})
            for layer in self.layers
        )
        return ModelView(
            self.family, layers, cv(self.readout),
            None if self.readout_bias is None else cv(self.readout_bias), self.pooling,
            {k: cv(v) for k, v in self.parameters.items()},
            None if self.initial is None else self.initial.detached(dtype),
        )

    def _check_same_shapes(self, other: ModelView) -> None:
        a, b = self.matrices(), other.matrices()
        if a.keys() != b.keys() or any(a[k].shape != b[k].shape for k in a):
            raise ValueError("initial must be a view of the same architecture (same matrices "
                             "and shapes)")


@runtime_checkable
class AttentionModel(Protocol):
    """A model family that returns its attention matrices on given inputs.

    ``attention_maps(X)`` maps inputs ``(K, B, T, d)`` to every row-stochastic attention matrix
    of the forward pass, ``(K, L, B, H, T, T)`` (model, layer, input, head, query, key);
    ``output_with_attention(X, A)`` returns the outputs ``(K, B)`` with every attention matrix
    replaced by the given ``A`` of that shape (everything else of the forward pass unchanged),
    so that ``output_with_attention(X, attention_maps(X))`` equals the model's output and its
    gradient in ``A`` is the sensitivity ``df/dA``. ``view()`` is the weight view of the
    ensemble. (:class:`genbounds.models.EdelmanTransformer` implements it.)
    """

    n_models: int
    layers: int
    heads: int

    def attention_maps(self, X: torch.Tensor) -> torch.Tensor: ...

    def output_with_attention(self, X: torch.Tensor, attention: torch.Tensor) -> torch.Tensor: ...

    def view(self, initial_state: Mapping[str, torch.Tensor] | None = None) -> ModelView: ...
