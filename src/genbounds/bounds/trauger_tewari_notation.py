"""Trauger & Tewari's (2024) notation as an adapter over :class:`~genbounds.models.view.ModelView`.

Trauger & Tewari write tokens as rows and heads as ``RowSoftmax(X W_QK X^T) X W_v`` followed by
``sigma(.) W_c`` (their Section 2.6). The book's models expose their weights in one column-vector
orientation (:mod:`genbounds.models.view`); this module rewrites them in the paper's notation, for
the paper's bounds only:

- :func:`tt_correspondence`: the authors' Keras sparse-majority model as TT heads, with the
  biases absorbed exactly by augmenting every token with a constant coordinate;
- :func:`tt_forward`: the TT formula evaluated from those matrices (a test that it is exact);
- :func:`tt_norms`: every norm the chapter's bounds need, per model, in TT's orientation (the
  maps ``x -> M x`` that TT's proofs cover), computed once and stored with the run.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from genbounds.models.view import ModelView
from genbounds.spectral import frobenius_norm, mixed_norm, operator_norm

__all__ = ["tt_correspondence", "tt_forward", "tt_norms"]


def _check_sparse_majority_view(view: ModelView) -> None:
    if not isinstance(view, ModelView):
        raise ValueError(f"view must be a ModelView, got {type(view).__name__}")
    layer = view.layers[0]
    ok = (view.n_layers == 1 and len(layer.mlp) == 1 and view.readout_bias is not None
          and "b_O" in layer.biases and "b_mlp0" in layer.biases
          and all(h.W_Q is not None and h.W_K is not None and h.W_O is not None
                  and {"b_Q", "b_V"} <= set(h.biases) for h in layer.heads))
    if not ok:
        raise ValueError("view must be the view of a SparseMajorityMHA (one layer of factored "
                         f"heads with biases, one dense map, a biased readout); got {view.family}")


def tt_correspondence(view: ModelView, augment_bias: bool = True) -> dict[str, torch.Tensor]:
    r"""The weights rewritten in Trauger & Tewari's head notation (Section 2.6 / 4.1).

    The [CLS] output of a :class:`~genbounds.models.SparseMajorityMHA` (read through its
    :class:`~genbounds.models.view.ModelView`), for each logit ``s``, is

    .. math::

        \ell_s(X) = w_s^\top W_c^\top \sigma\Big(\sum_h W_{v,h}^\top \tilde X^\top
            \mathrm{softmax}\big(\tilde X W_{QK,h}^\top \tilde x_{[CLS]}\big)\Big) + o_s,

    with ``sigma = ReLU`` and the matrices returned here:

    * ``W_QK`` ``(K, heads, d', d')``: ``W^Q_h (W^K_h)^T / sqrt(key_dim)``, the combined
      matrix of Section 2.6 in its row convention (scores ``X W_QK X^T``; the [CLS] row
      is ``softmax(X W_QK^T x_[CLS])`` as in TT Section 4.1);
    * ``W_v`` ``(K, heads, d', d)``: ``W^V_h W^O_h`` (value then output projection; the
      ReLU comes after the output projection, so the TT value map has ``k = d``);
    * ``W_c`` ``(K, d, d)``: the ``Dense`` kernel ``W^D``, shared by the heads;
    * ``w`` ``(K, d, n_outputs)``: the final kernel, column ``s`` is ``w_s``;
    * ``offset`` ``(K, n_outputs)``: ``o_s = (b^D)^T w_s + b^L_s``.

    With ``augment_bias=True`` (default) every token gets a constant last coordinate 1,
    ``x~ = (x, 1)`` and ``d' = d + 1``, and the biases are absorbed exactly: the query
    bias into the last column of ``W_QK``; the key bias adds the same number
    ``q_h . b^K_h`` to every score of a row and cancels in the softmax, so it is dropped;
    the value bias and output bias enter the last row of ``W_v`` (allowed because the
    attention weights sum to one; the output bias is put in head 0). The dense and final
    biases cannot be absorbed into a head and remain as the constant ``offset``. With
    ``augment_bias=False`` only the kernels are used (``d' = d``) and the biases are
    ignored, which describes the trained model only when they are small.

    What does *not* match TT's class, and is not hidden by this rewriting: (i) the ReLU
    acts on the **sum** of the heads (Keras adds the heads in the output projection before
    the activation), whereas TT's multi-head layer sums ``sigma(...) W_c,h`` per head, so
    for ``heads > 1`` the model is outside TT's class (for ``heads = 1`` it is inside);
    (ii) the constant ``offset`` is outside the class (it adds at most ``|o_s| /
    sqrt(m)`` to a Rademacher complexity); (iii) with ``augment_bias=True`` the inputs are
    the augmented tokens, whose norm bound is ``B_x + 1`` (l1) or ``sqrt(B_x^2 + 1)``
    (l2); (iv) the two logits are handled as in TT Section 5 (Theorem 5.1).
    """
    _check_sparse_majority_view(view)
    layer = view.layers[0]
    heads = layer.heads
    # back to the Keras row convention of the original derivation: (K, H, d, kd) etc.
    Wq = torch.stack([h.W_Q.mT for h in heads], dim=1)  # type: ignore[union-attr]
    Wk = torch.stack([h.W_K.mT for h in heads], dim=1)  # type: ignore[union-attr]
    Wv = torch.stack([h.W_V.mT for h in heads], dim=1)
    Wo = torch.stack([h.W_O.mT for h in heads], dim=1)  # type: ignore[union-attr]
    if augment_bias:
        bq = torch.stack([h.biases["b_Q"] for h in heads], dim=1)
        bv = torch.stack([h.biases["b_V"] for h in heads], dim=1)
        Wq = torch.cat([Wq, bq[:, :, None, :]], dim=2)  # (K, H, d+1, kd)
        Wk = torch.cat([Wk, torch.zeros_like(bq[:, :, None, :])], dim=2)
        Wv = torch.cat([Wv, bv[:, :, None, :]], dim=2)
    W_qk_row = torch.einsum("khae,khbe->khab", Wq, Wk) * heads[0].score_scale
    W_v = torch.einsum("khae,khed->khad", Wv, Wo)
    if augment_bias:
        W_v = W_v.clone()
        W_v[:, 0, -1, :] += layer.biases["b_O"]
    dense = layer.mlp[0].mT  # (K, d, d) Keras dense kernel
    head_kernel = view.readout.mT  # (K, d, n_outputs)
    assert view.readout_bias is not None
    offset = torch.einsum("kd,kds->ks", layer.biases["b_mlp0"], head_kernel) + view.readout_bias
    return {
        "W_QK": W_qk_row,
        "W_v": W_v,
        "W_c": dense.clone(),
        "w": head_kernel.clone(),
        "offset": offset,
    }


def tt_forward(tt: dict[str, torch.Tensor], X: torch.Tensor, cls_index: int = -1,
               augment_bias: bool = True) -> torch.Tensor:
    """Evaluate the formula of :meth:`tt_correspondence` (a check that it is exact).

    Returns logits ``(K, B, n_outputs)`` for inputs ``(K, B, T, d)``.
    """
    if augment_bias:
        X = torch.cat([X, torch.ones_like(X[..., :1])], dim=-1)
    x_cls = X[:, :, cls_index]
    scores = torch.einsum("kbtd,khed,kbe->kbht", X, tt["W_QK"], x_cls)
    a = torch.softmax(scores, dim=-1)
    pre = torch.einsum("kbht,kbtd,khde->kbe", a, X, tt["W_v"])
    hidden = torch.einsum("kbd,kde->kbe", torch.relu(pre), tt["W_c"])
    return torch.einsum("kbd,kds->kbs", hidden, tt["w"]) + tt["offset"][:, None, :]


def tt_norms(view: ModelView) -> dict[str, np.ndarray]:
    """Trauger–Tewari norms of every model in ``view`` (arrays of shape ``(K,)``, float64).

    From :func:`tt_correspondence` ``(augment_bias=True)``. Per head ``h`` the covered map of
    ``W_QK`` is ``M_h = W_QK,h^T`` (TT Appendix C orientation: ``x_cls -> M_h x_cls``) and the
    value / output maps are ``W_v,h^T`` and ``W_c^T``. Keys: ``W_QK_h{h}_{l11, l1inf, l21T, op,
    fro}``, ``W_v_h{h}_{l11, l1inf, l21, op, fro}``, ``W_c_{...}`` (as ``W_v``), ``w_l1``,
    ``w_l2`` (largest over the logits), ``offset_abs``.
    """
    tt = {k: v.detach().cpu().to(torch.float64) for k, v in
          tt_correspondence(view, augment_bias=True).items()}
    out: dict[str, np.ndarray] = {}

    def matrix_norms(prefix: str, W: torch.Tensor, qk: bool) -> None:
        W_np = W.numpy()
        out[f"{prefix}_l11"] = np.asarray(mixed_norm(W_np, 1, 1))
        out[f"{prefix}_l1inf"] = np.asarray(mixed_norm(W_np, 1, math.inf))
        if qk:
            out[f"{prefix}_l21T"] = np.asarray(mixed_norm(np.swapaxes(W_np, -1, -2), 2, 1))
        else:
            out[f"{prefix}_l21"] = np.asarray(mixed_norm(W_np, 2, 1))
        out[f"{prefix}_op"] = np.asarray(operator_norm(W_np))
        out[f"{prefix}_fro"] = np.asarray(frobenius_norm(W_np))

    for h in range(tt["W_QK"].shape[1]):
        matrix_norms(f"W_QK_h{h}", tt["W_QK"][:, h].transpose(-1, -2), qk=True)
        matrix_norms(f"W_v_h{h}", tt["W_v"][:, h].transpose(-1, -2), qk=False)
    matrix_norms("W_c", tt["W_c"].transpose(-1, -2), qk=False)
    w = tt["w"]  # (K, d, n_outputs)
    out["w_l1"] = w.abs().sum(dim=1).amax(dim=-1).numpy()
    out["w_l2"] = torch.linalg.vector_norm(w, dim=1).amax(dim=-1).numpy()
    out["offset_abs"] = tt["offset"].abs().amax(dim=-1).numpy()
    return out
