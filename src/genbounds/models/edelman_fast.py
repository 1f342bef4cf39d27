"""The same L-layer block of Edelman et al. (2022), computed with far fewer operations.

:class:`FastEdelmanTransformer` is :class:`~genbounds.models.edelman.EdelmanTransformer` (same
parameters, same initialisation from the same seeds, same :meth:`view`, same function): only
the way the forward and backward passes are computed differs, equal to the reference up to
floating-point rounding (tested in float64 to 1e-12 relative: outputs, every parameter's
gradient, attention maps, sensitivity matrices). Three changes, each exact:

1. **Batched matrix products, one head at a time.** The reference writes each layer as three
   three-operand ``torch.einsum`` calls; here every product is a ``torch.bmm`` on contiguous
   operands in the cheapest order: ``Q_h = Y W_QK,h`` over all rows of all samples of a model
   at once (one ``(B T) x d`` by ``d x d`` product), then the scores ``Q_h Y^T`` per sample,
   ``V_h = Y W_v,h`` (``d x k``, before the attention: ``k <= d`` makes ``A (Y W_v)``
   cheaper than ``(A Y) W_v``), ``A_h V_h`` per sample, and the heads summed by accumulating
   ``U_h W_c,h`` into one output.
2. **The last layer computes only the [CLS] row.** The output ``w^T Y^(L+1)_[CLS]`` reads one
   row of the last layer, and a layer maps row ``t`` of its input to row ``t`` of its output
   through the attention row ``t`` only (projections and activation act row by row). So the
   last layer needs the scores of the [CLS] query only, ``q = y_[CLS] W_QK,h`` against every
   key (``1 x T`` per head instead of ``T x T``), and ``a (Y W_v,h)`` becomes ``(a Y) W_v,h``
   (a vector-matrix product). At L = 2 this removes about half of the forward arithmetic and
   more of the backward. :meth:`attention_maps` still computes every row of every layer.
3. **A fused layer with a written-out backward** (:class:`_FusedLayer`, used by
   :meth:`forward` for the layers before the last when gradients are recorded): the forward
   pass keeps exactly the tensors its backward needs (scores after the softmax, values,
   projected head outputs, row norms) and the backward is a fixed sequence of batched
   products and in-place row operations instead of autograd's graph of a few dozen nodes per
   head. Its forward is operation for operation :meth:`_layer`'s, so the two give bitwise the
   same outputs and attention matrices (tested).

Why a separate module rather than an edit of :mod:`genbounds.models.edelman`: the comparison
and certificate studies run ``EdelmanTransformer`` too and have committed paper-scale units;
their code fingerprint covers ``edelman.py``, and a different association of the same sums
changes their numbers in the last bits, so those units would have to be recomputed. The
effective-rank study (no stored paper unit then) uses this class; the reference class stays
the code of record for the others, and the two are checked against each other in
``tests/test_edelman_speed.py``.

Sizes and measured speed: ``genbounds-bench --sections edelman`` (forward + backward at the
effective-rank paper unit's sizes, against the reference in the same run, and the machine's
matrix-multiply rate).
"""

from __future__ import annotations

from typing import Any

import torch

from genbounds.models.base import ACTIVATIONS, project_rows_to_unit_ball
from genbounds.models.edelman import EdelmanTransformer

__all__ = ["FastEdelmanTransformer"]


def _project_rows(F: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``F / max(1, ||row||)`` computed in place in ``F`` (which must be a fresh tensor), and
    the divisors ``max(1, ||row||)`` (keepdim); the same arithmetic as
    :func:`~genbounds.models.base.project_rows_to_unit_ball`."""
    n = torch.clamp(torch.linalg.vector_norm(F, ord=2, dim=-1, keepdim=True), min=1.0)
    return F.div_(n), n


def _project_rows_backward(dP: torch.Tensor, P: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """Gradient through ``P = F / max(1, ||F||)`` row by row, in place in ``dP``.

    Rows inside the ball (divisor 1) pass ``dP`` unchanged; a row that was projected
    (``P = F / ||F||``) gets ``(dP - P (P . dP)) / ||F||``.
    """
    r = (P * dP).sum(dim=-1, keepdim=True).mul_(n > 1.0)
    return dP.addcmul_(P, r, value=-1.0).div_(n)


def _activation_backward(act: str, dU: torch.Tensor, U: torch.Tensor) -> torch.Tensor:
    """``dU * sigma'`` from the activation's output ``U`` (relu, tanh, identity)."""
    if act == "relu":
        return torch.ops.aten.threshold_backward(dU, U, 0)
    if act == "tanh":
        return torch.ops.aten.tanh_backward(dU, U)
    return dU


def _qk_columns(W_QK: torch.Tensor) -> torch.Tensor:
    """``(K, H, d, d)`` -> ``(K, d, H d)``: column block ``h`` is ``W_QK,h`` (a copy)."""
    K, H, d, _ = W_QK.shape
    return W_QK.transpose(1, 2).reshape(K, d, H * d)


def _c_rows(W_c: torch.Tensor) -> torch.Tensor:
    """``(K, H, k, d)`` -> ``(K, H k, d)``: row block ``h`` is ``W_c,h``, so that
    ``[U_1 ... U_H] W = sum_h U_h W_c,h`` (one product for the sum over heads)."""
    K, H, k, d = W_c.shape
    return W_c.reshape(K, H * k, d)


class _FusedLayer(torch.autograd.Function):
    """One full layer (attention computed from ``Y``) with a written-out backward pass.

    ``forward(Y (K, B, T, d), W_QK (K, H, d, d), W_v (K, H, d, k), W_c (K, H, k, d),
    activation)`` returns ``Y_next (K, B, T, d)``; the arithmetic is that of
    :meth:`FastEdelmanTransformer._layer` (bitwise, tested). With ``U = [U_1 ... U_H]`` the
    heads' activated outputs side by side and ``D`` the row-projection gradient of
    :func:`_project_rows_backward`: ``dG = D_out(dY_next)``, ``dW_c = U^T dG``,
    ``dU = dG W_c^T``; per head ``dP = sigma'(dU_h)``, ``dF = D_h(dP)``, ``dA = dF V^T``,
    ``dV = A^T dF``, ``dW_v = Y^T dV``, ``dS = A * (dA - rowsum(A * dA))``, ``dQ = dS Y``,
    ``dW_QK = Y^T dQ``, and when ``Y`` needs a gradient ``dY = dV W_v^T + dQ W_QK^T + dS^T Q``.
    """

    @staticmethod
    def forward(ctx: Any, Y: torch.Tensor, W_QK: torch.Tensor, W_v: torch.Tensor,
                W_c: torch.Tensor, activation: str) -> torch.Tensor:
        K, B, T, d = Y.shape
        Y = Y.contiguous()
        Yf, Yb = Y.view(K, B * T, d), Y.view(K * B, T, d)
        sigma = ACTIVATIONS[activation]
        saved: list[torch.Tensor] = []
        Us: list[torch.Tensor] = []
        for h in range(W_QK.shape[1]):
            Q = torch.bmm(Yf, W_QK[:, h])
            A = torch.softmax(torch.bmm(Q.view(K * B, T, d), Yb.mT), dim=-1)
            V = torch.bmm(Yf, W_v[:, h])
            P, n = _project_rows(torch.bmm(A, V.view(K * B, T, -1)))
            Us.append(sigma(P).view(K, B * T, -1))
            saved += [Q, A, V, P, n]
        U = torch.stack(Us, dim=2).view(K, B * T, -1)
        Yn, nG = _project_rows(torch.bmm(U, _c_rows(W_c)))
        ctx.activation = activation
        ctx.save_for_backward(Y, W_QK, W_v, W_c, U, Yn, nG, *saved)
        return Yn.view(K, B, T, d)

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        Y, W_QK, W_v, W_c, U, Yn, nG, *saved = ctx.saved_tensors
        K, B, T, d = Y.shape
        H, k = W_c.shape[1], W_c.shape[2]
        Yf, Yb = Y.view(K, B * T, d), Y.view(K * B, T, d)
        dG = _project_rows_backward(grads[0].reshape(K, B * T, d).clone(), Yn, nG)
        dWc = torch.bmm(dG.mT, U).mT.reshape(W_c.shape)
        dU = torch.bmm(dG, _c_rows(W_c).mT).view(K * B, T, H, k)
        Uh = U.view(K * B, T, H, k)
        need_y = bool(ctx.needs_input_grad[0])
        dY = torch.zeros_like(Yf) if need_y else None
        dWq, dWv = torch.empty_like(W_QK), torch.empty_like(W_v)
        for h in range(H):
            Q, A, V, P, n = saved[5 * h:5 * h + 5]
            dP = _activation_backward(ctx.activation, dU[:, :, h], Uh[:, :, h])
            dF = _project_rows_backward(dP.contiguous(), P, n)
            Vb = V.view(K * B, T, -1)
            dS = torch._softmax_backward_data(torch.bmm(dF, Vb.mT), A, -1, A.dtype)
            dV = torch.bmm(A.mT, dF).view(K, B * T, -1)
            dQ = torch.bmm(dS, Yb).view(K, B * T, d)
            dWv[:, h] = torch.bmm(Yf.mT, dV)
            dWq[:, h] = torch.bmm(Yf.mT, dQ)
            if dY is not None:
                dY.baddbmm_(dV, W_v[:, h].mT).baddbmm_(dQ, W_QK[:, h].mT)
                dY.view(K * B, T, d).baddbmm_(dS.mT, Q.view(K * B, T, d))
        return (None if dY is None else dY.view(K, B, T, d)), dWq, dWv, dWc, None


class _FusedClsLayer(torch.autograd.Function):
    """The last layer's [CLS] row with a written-out backward (heads side by side).

    ``forward(Y (K, B, T, d), W_QK, W_v, W_c (layer slices), activation, cls_index)`` returns
    ``(K, B, d)``, the arithmetic of :meth:`FastEdelmanTransformer._cls_layer` (bitwise). The
    input's gradient gathers its three uses in two products: ``dY = [a; dS]^T [d(aY); q]``
    (keys and values, one batched product) plus ``dq W_QK^T`` on the [CLS] row.
    """

    @staticmethod
    def forward(ctx: Any, Y: torch.Tensor, W_QK: torch.Tensor, W_v: torch.Tensor,
                W_c: torch.Tensor, activation: str, cls_index: int) -> torch.Tensor:
        K, B, T, d = Y.shape
        H, k = W_c.shape[1], W_c.shape[2]
        Y = Y.contiguous()
        Yb = Y.view(K * B, T, d)
        yc = Y[:, :, cls_index]
        q = torch.bmm(yc, _qk_columns(W_QK)).view(K * B, H, d)
        a = torch.softmax(torch.bmm(q, Yb.mT), dim=-1)
        ay = torch.bmm(a, Yb).view(K, B, H, d).transpose(1, 2).reshape(K * H, B, d)
        P, n = _project_rows(torch.bmm(ay, W_v.reshape(K * H, d, k)))
        u = ACTIVATIONS[activation](P).view(K, H, B, k).transpose(1, 2).reshape(K, B, H * k)
        out, n_out = _project_rows(torch.bmm(u, _c_rows(W_c)))
        ctx.activation, ctx.cls_index = activation, cls_index
        ctx.save_for_backward(Y, W_QK, W_v, W_c, q, a, ay, P, n, u, out, n_out)
        return out

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        Y, W_QK, W_v, W_c, q, a, ay, P, n, u, out, n_out = ctx.saved_tensors
        K, B, T, d = Y.shape
        H, k = W_c.shape[1], W_c.shape[2]
        Yb = Y.view(K * B, T, d)
        dg = _project_rows_backward(grads[0].contiguous().clone(), out, n_out)
        dWc = torch.bmm(dg.mT, u).mT.reshape(W_c.shape)
        du = torch.bmm(dg, _c_rows(W_c).mT).view(K, B, H, k).transpose(1, 2)
        uh = u.view(K, B, H, k).transpose(1, 2)
        dP = _activation_backward(ctx.activation, du, uh).reshape(K * H, B, k)
        df = _project_rows_backward(dP, P, n)
        dWv = torch.bmm(ay.mT, df).view(W_v.shape)
        day = torch.bmm(df, W_v.reshape(K * H, d, k).mT)
        day = day.view(K, H, B, d).transpose(1, 2).reshape(K * B, H, d)
        ds = torch._softmax_backward_data(torch.bmm(day, Yb.mT), a, -1, a.dtype)
        dq = torch.bmm(ds, Yb).view(K, B, H * d)
        yc = Y[:, :, ctx.cls_index]
        dWq = torch.bmm(yc.mT, dq).view(K, d, H, d).transpose(1, 2).contiguous()
        dY = None
        if ctx.needs_input_grad[0]:
            dY = torch.bmm(torch.cat([a, ds], dim=1).mT, torch.cat([day, q], dim=1))
            dY = dY.view(K, B, T, d)
            dY[:, :, ctx.cls_index] += torch.bmm(dq, _qk_columns(W_QK).mT)
        return dY, dWq, dWv, dWc, None, None


class FastEdelmanTransformer(EdelmanTransformer):
    """:class:`~genbounds.models.edelman.EdelmanTransformer` computed fast (module docstring).

    Same constructor, parameters, initialisation, views and checks; ``forward``,
    ``attention_maps``, ``attention``, ``block_output`` and ``output_with_attention`` return
    what the reference returns, up to rounding (``output_with_attention(X, attention_maps(X))``
    equals ``forward(X)`` to rounding, not bitwise: the last layer's [CLS] scores are a
    vector-matrix product here and a row of a matrix product in ``attention_maps``).
    """

    def _layer(self, Y: torch.Tensor, i: int, A: torch.Tensor | None = None
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """Layer ``i`` on ``Y`` ``(K, B, T, d)`` by batched products, one head at a time (the
        heads' outputs summed by one product); returns ``(Y_next, A)`` with ``A``
        ``(K, B, heads, T, T)`` (computed, or the given one used in its place). Recorded by
        autograd like any other torch code."""
        K, B, T, d = Y.shape
        Y = Y.contiguous()
        Yf, Yb = Y.view(K, B * T, d), Y.view(K * B, T, d)
        sigma = ACTIVATIONS[self.activation]
        W_QK, W_v = self.W_QK[:, i], self.W_v[:, i]
        maps: list[torch.Tensor] = []
        Us: list[torch.Tensor] = []
        for h in range(self.heads):
            if A is None:
                Q = torch.bmm(Yf, W_QK[:, h])
                Ah = torch.softmax(torch.bmm(Q.view(K * B, T, d), Yb.mT), dim=-1)
            else:
                Ah = A[:, :, h].reshape(K * B, T, T)
            V = torch.bmm(Yf, W_v[:, h])
            P = project_rows_to_unit_ball(torch.bmm(Ah, V.view(K * B, T, -1)))
            Us.append(sigma(P).view(K, B * T, -1))
            maps.append(Ah.view(K, B, T, T))
        U = torch.stack(Us, dim=2).view(K, B * T, -1)
        out = project_rows_to_unit_ball(torch.bmm(U, _c_rows(self.W_c[:, i]))).view(K, B, T, d)
        return out, (A if A is not None else torch.stack(maps, dim=2))

    def _cls_layer(self, Y: torch.Tensor, i: int, a: torch.Tensor | None = None
                   ) -> torch.Tensor:
        """Row ``cls_index`` of layer ``i``'s output, ``(K, B, d)``, from ``Y`` ``(K, B, T,
        d)``; ``a`` ``(K, B, heads, T)`` replaces the [CLS] query's attention rows. Recorded
        by autograd (the arithmetic of :class:`_FusedClsLayer`)."""
        K, B, T, d = Y.shape
        H, k = self.heads, self.k
        Y = Y.contiguous()
        Yb = Y.view(K * B, T, d)
        if a is None:
            q = torch.bmm(Y[:, :, self.cls_index], _qk_columns(self.W_QK[:, i]))
            a = torch.softmax(torch.bmm(q.view(K * B, H, d), Yb.mT), dim=-1)
        else:
            a = a.reshape(K * B, H, T)
        ay = torch.bmm(a, Yb).view(K, B, H, d).transpose(1, 2).reshape(K * H, B, d)
        P = project_rows_to_unit_ball(torch.bmm(ay, self.W_v[:, i].reshape(K * H, d, k)))
        u = ACTIVATIONS[self.activation](P).view(K, H, B, k).transpose(1, 2).reshape(
            K, B, H * k)
        return project_rows_to_unit_ball(torch.bmm(u, _c_rows(self.W_c[:, i])))

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """Scalar outputs ``w^T Y_[CLS]`` of shape ``(K, B)`` for inputs ``(K, B, T, d)``."""
        _, _, T = self._check_input(X)
        self._check_cls(T)
        fused = torch.is_grad_enabled() and (X.requires_grad or any(
            p.requires_grad for p in (self.W_QK, self.W_v, self.W_c)))
        Y = X
        for i in range(self.layers - 1):
            if fused:
                Y = _FusedLayer.apply(Y, self.W_QK[:, i], self.W_v[:, i], self.W_c[:, i],
                                      self.activation)
            else:
                Y, _ = self._layer(Y, i)
        L = self.layers - 1
        if fused:
            last = _FusedClsLayer.apply(Y, self.W_QK[:, L], self.W_v[:, L], self.W_c[:, L],
                                        self.activation, self.cls_index)
        else:
            last = self._cls_layer(Y, L)
        return (last * self.w[:, None, :]).sum(dim=-1)

    def output_with_attention(self, X: torch.Tensor, attention: torch.Tensor) -> torch.Tensor:
        """As :meth:`EdelmanTransformer.output_with_attention`; the last layer reads only the
        [CLS] query's rows of ``attention`` (the others do not reach the output, so their
        derivative is exactly zero, as in the reference)."""
        self._check_attention(X, attention)
        Y = X
        for i in range(self.layers - 1):
            Y, _ = self._layer(Y, i, attention[:, i])
        last = self._cls_layer(Y, self.layers - 1, attention[:, -1, :, :, self.cls_index])
        return (last * self.w[:, None, :]).sum(dim=-1)
