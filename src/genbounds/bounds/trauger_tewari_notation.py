"""Trauger & Tewari's (2024) notation as an adapter over :class:`~genbounds.models.view.ModelView`.

Trauger & Tewari write tokens as rows and heads as ``RowSoftmax(X W_QK X^T) X W_v`` followed by
``sigma(.) W_c`` (their Section 2.6). The book's models expose their weights in one column-vector
orientation (:mod:`genbounds.models.view`); this module rewrites them in the paper's notation, for
the paper's bounds only:

- :func:`tt_correspondence`: the authors' Keras sparse-majority model as TT heads, with the
  biases absorbed exactly by augmenting every token with a constant coordinate;
- :func:`tt_forward`: the TT formula evaluated from those matrices (a test that it is exact);
- :func:`tt_norms`: every norm the chapter's bounds need, per model, in TT's orientation (the
  maps ``x -> M x`` that TT's proofs cover), computed once and stored with the run;
- :data:`TT_COLUMNS`, :func:`quantities_from_norms`, :func:`bound_on_run`: which stored column
  is which quantity of which registered bound (written once), and the bounds of one stored run
  evaluated through the registry.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from genbounds.bounds.registry import Bound, BoundValue, NotApplicable, register_quantities
from genbounds.protocols import ModelView
from genbounds.spectral import frobenius_norm, mixed_norm, operator_norm
from genbounds.validation import check_int

__all__ = ["SIZE_NAMES", "TT_COLUMNS", "bound_on_run", "quantities_from_norms", "run_sizes",
           "tt_correspondence", "tt_forward", "tt_norms", "tt_quantities"]


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

    From :func:`tt_correspondence` ``(augment_bias=True)``. Every matrix is stored as the matrix
    ``M`` of the map ``x -> M x`` that TT's proofs cover: per head ``h``, ``M = W_QK,h^T`` for
    the query-key matrix (TT Appendix C orientation: ``x_cls -> M x_cls``), ``M = W_v,h^T`` and
    ``M = W_c^T`` for the value and output maps. For each ``M`` the keys
    ``<name>_{l11, l1inf, l1infT, l21, l21T, op, fro}`` hold ``||M||_{1,1}``, ``||M||_{1,inf}``
    (largest column l1 norm of ``M``), ``||M^T||_{1,inf}`` (largest *row* l1 norm of ``M``),
    ``||M||_{2,1}``, ``||M^T||_{2,1}`` (sum of the row l2 norms of ``M``), the spectral and the
    Frobenius norm; ``<name>`` is ``W_QK_h{h}``, ``W_v_h{h}`` or ``W_c``. Plus ``w_l1``,
    ``w_l2`` (largest over the logits) and ``offset_abs``.

    Which column a bound needs depends on the statement *and* on its form (the audit of
    Theorem 4.1 transposes two hypotheses): read it from :data:`TT_COLUMNS` through
    :func:`quantities_from_norms`, never by hand.
    """
    tt = {k: v.detach().cpu().to(torch.float64) for k, v in
          tt_correspondence(view, augment_bias=True).items()}
    out: dict[str, np.ndarray] = {}

    def matrix_norms(prefix: str, W: torch.Tensor) -> None:
        W_np = W.numpy()
        W_T = np.swapaxes(W_np, -1, -2)
        out[f"{prefix}_l11"] = np.asarray(mixed_norm(W_np, 1, 1))
        out[f"{prefix}_l1inf"] = np.asarray(mixed_norm(W_np, 1, math.inf))
        out[f"{prefix}_l1infT"] = np.asarray(mixed_norm(W_T, 1, math.inf))
        out[f"{prefix}_l21"] = np.asarray(mixed_norm(W_np, 2, 1))
        out[f"{prefix}_l21T"] = np.asarray(mixed_norm(W_T, 2, 1))
        out[f"{prefix}_op"] = np.asarray(operator_norm(W_np))
        out[f"{prefix}_fro"] = np.asarray(frobenius_norm(W_np))

    for h in range(tt["W_QK"].shape[1]):
        matrix_norms(f"W_QK_h{h}", tt["W_QK"][:, h].transpose(-1, -2))
        matrix_norms(f"W_v_h{h}", tt["W_v"][:, h].transpose(-1, -2))
    matrix_norms("W_c", tt["W_c"].transpose(-1, -2))
    w = tt["w"]  # (K, d, n_outputs)
    out["w_l1"] = w.abs().sum(dim=1).amax(dim=-1).numpy()
    out["w_l2"] = torch.linalg.vector_norm(w, dim=1).amax(dim=-1).numpy()
    out["offset_abs"] = tt["offset"].abs().amax(dim=-1).numpy()
    return out


# ------------------------------------------------------------------ stored columns -> needs
#: Registered bound key -> the stored column (of a sparse-majority run) that gives each norm
#: the bound ``needs``, per head ``{h}``. Written once, here, for every bound the chapter
#: evaluates on trained weights. Orientation (see :func:`tt_norms`): a stored ``W_c_*`` /
#: ``W_v_h*_*`` column is a norm of the map matrix ``M = W_c^T`` / ``W_v^T``, so TT's
#: ``||W_c||_{1,inf}`` (every **column** of TT's ``W_c``: the audited hypothesis of Theorem 4.1)
#: is ``||M^T||_{1,inf}``, the column ``l1infT``; the printed hypothesis
#: ``||W_c^T||_{1,inf}`` is ``||M||_{1,inf}``, the column ``l1inf``. The query-key matrix is
#: covered as the map ``x_cls -> M x_cls`` itself, so Lemma 3.3's ``||W||_{1,inf}`` is
#: ``l1inf`` and Lemma 3.4's ``||W^T||_{2,1}`` is ``l21T``. Tokens: Cor. 4.1.1 needs
#: ``||x||_2 <= B_x``, Cors. D.0.1/D.0.2 ``||x||_1 <= B_x`` (augmented tokens ``(x, 1)``).
#: Edelman et al.'s baseline takes l2-type norms: ``||W_c||_{2,1}`` of TT's ``W_c`` (map
#: ``u -> W_c^T u``) is ``||M^T||_{2,1}``, the column ``l21T``.
#: One-layer corollaries: the query-key matrix's column (audited, printed) and the token bound.
_CORS = {"cor_4_1_1": ("l11", "l11", "B_x_aug_l2"), "cor_d_0_1": ("l1inf", "l1inf", "B_x_aug_l1"),
         "cor_d_0_2": ("l21T", "l21", "B_x_aug_l1")}
TT_COLUMNS: dict[str, dict[str, str]] = {
    f"trauger_tewari.{cor}.{form}": {
        "B_w": "tt.w_l1", "B_Wc": f"tt.W_c_{wc}", "B_Wv": f"tt.W_v_h{{h}}_{wc}",
        "B_QK": f"tt.W_QK_h{{h}}_{qk}", "B_x": x}
    for cor, (qk_audited, qk_printed, x) in _CORS.items()
    for form, wc, qk in (("audited", "l1infT", qk_audited), ("printed", "l1inf", qk_printed))
} | {
    "edelman.single_head_log_T.reconstructed": {
        "B_w": "tt.w_l2", "B_c2": "tt.W_c_op", "B_c21": "tt.W_c_l21T", "B_v2": "tt.W_v_h{h}_op",
        "B_v21": "tt.W_v_h{h}_l21T", "B_qk21": "tt.W_QK_h{h}_l21T", "B_x": "B_x_aug_l2"},
}
#: Sizes a bound may need, and what they are for a sparse-majority run: ``m`` training
#: samples, ``d`` the augmented token dimension ``d + 1``, ``k`` the value dimension ``d``, ``T``
#: the number of tokens the head attends over (bits plus [CLS]).
SIZE_NAMES: tuple[str, ...] = ("m", "d", "k", "T")


def run_sizes(n_train: int, d: int, T: int) -> dict[str, int]:
    """The sizes of :data:`SIZE_NAMES` of a sparse-majority run (``n_train`` samples, embedding
    dimension ``d``, ``T`` bits): ``{"m": n_train, "d": d + 1, "k": d, "T": T + 1}``."""
    n = check_int(n_train, "n_train")
    dd = check_int(d, "d")
    t = check_int(T, "T")
    return {"m": n, "d": dd + 1, "k": dd, "T": t + 1}


def quantities_from_norms(row: Mapping[str, Any], sizes: Mapping[str, int], key: str,
                          head: int) -> dict[str, float | int]:
    """The ``quantities`` of registered bound ``key`` for head ``head`` of one stored run.

    Parameters
    ----------
    row:
        The run's stored columns (a mapping such as a ``pandas`` row): the ``"tt.*"`` norms of
        :func:`tt_norms` and the token bounds ``B_x_aug_l1``, ``B_x_aug_l2``.
    sizes:
        At least the sizes the bound needs, from :func:`run_sizes`.
    key:
        A key of :data:`TT_COLUMNS` (a registered bound).
    head:
        Head index ``h >= 0``.

    Returns
    -------
    dict
        Exactly ``get(key).needs``, ready for ``get(key).evaluate(...)``.
    """
    if key not in TT_COLUMNS:
        raise ValueError(f"key must be one of {sorted(TT_COLUMNS)}, got {key!r}")
    h = check_int(head, "head", 0)
    from genbounds.bounds.registry import get

    needs = get(key).needs
    out: dict[str, float | int] = {}
    for name in needs:
        if name in TT_COLUMNS[key]:
            col = TT_COLUMNS[key][name].format(h=h)
            if col not in row:
                hint = f"; has the model a head {h}?" if "{h}" in TT_COLUMNS[key][name] else ""
                raise ValueError(f"row has no column {col!r} (needed as {name} by {key!r}"
                                 f"{hint})")
            out[name] = float(row[col])
        elif name in SIZE_NAMES:
            if name not in sizes:
                raise ValueError(f"sizes has no {name!r}, needed by {key!r}")
            out[name] = int(sizes[name])
        else:  # pragma: no cover - TT_COLUMNS and the registry disagree
            raise ValueError(f"no column is mapped to {name!r}, needed by {key!r}")
    return out


def bound_on_run(row: Mapping[str, Any], sizes: Mapping[str, int], key: str, heads: int,
                 **constants: Any) -> BoundValue:
    """Registered bound ``key`` on one stored run: the sum of its per-head values.

    Each head is evaluated through the registry (``get(key).evaluate(quantities_from_norms(row,
    sizes, key, h), **constants)``) and the heads are summed by
    :func:`genbounds.bounds.trauger_tewari.rademacher_multi_head` (TT Section 4.2, linear in
    the number of heads; a heuristic for the Keras model, see :func:`tt_correspondence`). The
    run's constant output offset is *not* included (add ``offset_abs / sqrt(m)``).
    """
    from genbounds.bounds.registry import get
    from genbounds.bounds.trauger_tewari import rademacher_multi_head

    H = check_int(heads, "heads")
    bound = get(key)
    per_head = [bound.evaluate(quantities_from_norms(row, sizes, key, h), **constants)
                for h in range(H)]
    total = rademacher_multi_head(per_head)
    return replace(total, valid=all(b.valid for b in per_head),
                   regime="; ".join(sorted({b.regime for b in per_head if b.regime})),
                   choices={**per_head[0].choices})


def tt_quantities(row: Mapping[str, Any], context: Mapping[str, Any]) -> dict[str, Any]:
    """Quantities of Trauger & Tewari's / Edelman et al.'s one-layer bounds on a stored row of an
    :class:`~genbounds.models.EdelmanTransformer` (the comparison chapter's models); raises
    :class:`~genbounds.bounds.registry.NotApplicable` with the reason otherwise."""
    bound: Bound = context["bound"]
    if context.get("family") != "EdelmanTransformer":
        raise NotApplicable(f"no TT notation for family {context.get('family')!r}")
    key = bound.key
    if key.startswith("trauger_tewari.gap_cor_4_1_1."):
        key = "trauger_tewari.cor_4_1_1." + bound.form
    if key not in TT_COLUMNS:
        raise NotApplicable("not a model-level bound mapped to stored norms (a covering number "
                            "at a scale, or a statement with unnamed constants C, C_1, B)")
    if context["depth"] != 1:
        raise NotApplicable(f"a one-layer statement; the model has {context['depth']} layers")
    sizes = {"m": context["m"], "d": context["d"], "k": context["k"], "T": context["T"]}
    r = dict(row)
    r["B_x_aug_l1"], r["B_x_aug_l2"] = row["B_x_l1"], row["B_x_l2"]  # no biases: no augmentation
    per = [quantities_from_norms(r, sizes, key, h) for h in range(context["heads"])]
    if len(per) == 1:
        return per[0]
    if bound.kind.name != "RADEMACHER":
        raise NotApplicable("a one-head gap statement; TT sum Rademacher bounds over heads "
                            "(Sec. 4.2), not gap bounds")
    return {"per_head": per}


register_quantities("trauger2024sequence", tt_quantities)
register_quantities("edelman2022inductive", tt_quantities)
