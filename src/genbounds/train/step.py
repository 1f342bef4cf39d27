"""One optimisation step: the gradient of a batch, computed by micro-batches, and the update.

Gradient of a batch
-------------------
The objective of a batch of ``B`` samples is, for every model ``k``, the mean per-sample loss
``L_k = (1/B) sum_b loss(f_k(x_kb), y_kb)``; the models are independent, so the gradient of
``sum_k L_k`` with respect to model ``k``'s parameters is the gradient of ``L_k``.
:func:`batch_gradients` splits the batch into micro-batches of at most ``chunk`` samples and
accumulates ``grad (1/B) sum_{b in chunk} loss_b`` over them: by linearity of the gradient this
is the batch's gradient exactly, up to the order of floating-point additions (tested against one
batch: 1e-12 in float64, 1e-6 in float32). Full-batch gradient descent is the case ``B = N``.
When one micro-batch holds the whole batch the computation is the engine's original one,
operation for operation.

Updates (written out, not ``torch.optim``, so that they act on the batched parameters and only
on the active models)
---------------------------------------------------------------------------------------------
* SGD, ``momentum_style="keras"`` (``keras.optimizers.SGD``): ``v <- mu v - lr g``,
  ``p <- p + v``; ``"torch"`` (``torch.optim.SGD``, dampening 0, no Nesterov):
  ``b <- mu b + g``, ``p <- p - lr b``.
* Adam (Kingma & Ba, 2015) at step ``t``: ``m <- b1 m + (1 - b1) g``,
  ``v <- b2 v + (1 - b2) g^2``, then ``p <- p - lr sqrt(1 - b2^t) / (1 - b1^t) * m /
  (sqrt(v) + eps)`` (``"keras"``, ``keras.optimizers.Adam``) or ``p <- p - lr * m_hat /
  (sqrt(v_hat) + eps)`` with ``m_hat = m / (1 - b1^t)``, ``v_hat = v / (1 - b2^t)``
  (``"torch"``, ``torch.optim.Adam``); they differ only in where ``eps`` enters.

A stopped model is not part of the computation at all: its parameters and moments keep their
exact bits (tested).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from genbounds.train.config import TrainConfig
from genbounds.train.losses import per_sample_loss
from genbounds.train.precision import forward
from genbounds.train.state import TensorState

__all__ = ["BatchFn", "adam_step", "apply_updates", "batch_gradients", "sgd_step"]

#: ``get(start, stop)``: inputs ``(Km, stop - start, ...)`` and labels ``(Km, stop - start)`` of
#: samples ``start:stop`` of the current batch.
BatchFn = Callable[[int, int], tuple[torch.Tensor, torch.Tensor]]


def batch_gradients(
    model: nn.Module,
    params: dict[str, torch.Tensor],
    buffers: dict[str, torch.Tensor],
    get: BatchFn,
    batch: int,
    chunk: int,
    loss: str,
    precision: str = "fp32",
) -> tuple[list[torch.Tensor], torch.Tensor, torch.Tensor | None]:
    """Gradients of the batch's mean loss (one per entry of ``params``, which must require
    grad), and the float64 sums over the batch of the per-sample loss and of correctness
    (None for ``"mse"``), each of shape ``(Km,)``; micro-batches of ``chunk`` samples;
    ``precision`` as in :func:`genbounds.train.precision.forward`."""
    names = list(params)
    state = {**params, **buffers}
    if chunk >= batch:
        Xb, yb = get(0, batch)
        per, ok = per_sample_loss(loss, forward(model, state, Xb, precision), yb)
        grads = torch.autograd.grad(per.mean(dim=1).sum(), [params[n] for n in names])
        with torch.no_grad():
            return (list(grads), per.detach().sum(dim=1, dtype=torch.float64),
                    None if ok is None else ok.sum(dim=1, dtype=torch.float64))
    total: list[torch.Tensor] = []
    loss_sum: torch.Tensor | None = None
    correct: torch.Tensor | None = None
    has_acc = True
    for start in range(0, batch, chunk):
        Xc, yc = get(start, min(batch, start + chunk))
        per, ok = per_sample_loss(loss, forward(model, state, Xc, precision), yc)
        grads = torch.autograd.grad((per.sum(dim=1) / batch).sum(), [params[n] for n in names])
        with torch.no_grad():
            if not total:
                total = list(grads)
            else:
                for t, g in zip(total, grads, strict=True):
                    t.add_(g)
            s = per.detach().sum(dim=1, dtype=torch.float64)
            loss_sum = s if loss_sum is None else loss_sum + s
            if ok is None:
                has_acc = False
            else:
                c = ok.sum(dim=1, dtype=torch.float64)
                correct = c if correct is None else correct + c
    assert loss_sum is not None
    return total, loss_sum, correct if has_acc else None


@torch.no_grad()
def apply_updates(state: TensorState, grads: list[torch.Tensor], idx_t: torch.Tensor | None,
                  lr: float, config: TrainConfig) -> None:
    """One optimizer step on the models ``idx_t`` (all when None); ``grads`` in the order of
    ``state.params``; increments ``state.step``."""
    for n, g in zip(state.params, grads, strict=True):
        if config.optimizer == "adam":
            adam_step(state.params[n], state.velocity[n], state.second[n], g, idx_t, lr, config,
                      state.step + 1)
        else:
            sgd_step(state.params[n], state.velocity[n], g, idx_t, lr, float(config.momentum),
                     config.momentum_style)
    state.step += 1


def sgd_step(
    p: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    idx_t: torch.Tensor | None,
    lr: float,
    mu: float,
    style: str,
) -> None:
    """One SGD(+momentum) step on the models ``idx_t`` (all when None), in place."""
    if idx_t is None:
        if style == "keras":
            v.mul_(mu).sub_(lr * g)
            p.add_(v)
        else:
            v.mul_(mu).add_(g)
            p.sub_(lr * v)
        return
    v_sub = v.index_select(0, idx_t)
    if style == "keras":
        v_sub = v_sub * mu - lr * g
        v.index_copy_(0, idx_t, v_sub)
        p.index_copy_(0, idx_t, p.index_select(0, idx_t) + v_sub)
    else:
        v_sub = v_sub * mu + g
        v.index_copy_(0, idx_t, v_sub)
        p.index_copy_(0, idx_t, p.index_select(0, idx_t) - lr * v_sub)


def adam_step(
    p: torch.Tensor,
    m: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    idx_t: torch.Tensor | None,
    lr: float,
    cfg: TrainConfig,
    t: int,
) -> None:
    """One Adam step (step number ``t >= 1``) on the models ``idx_t`` (all when None)."""
    b1, b2, eps = float(cfg.adam_beta1), float(cfg.adam_beta2), float(cfg.adam_eps)
    if idx_t is None:
        m_s, v_s, p_s = m, v, p
    else:
        m_s, v_s, p_s = (m.index_select(0, idx_t), v.index_select(0, idx_t),
                         p.index_select(0, idx_t))
    if cfg.momentum_style == "keras":
        m_s = m_s + (g - m_s) * (1.0 - b1)
        v_s = v_s + (g * g - v_s) * (1.0 - b2)
        alpha = lr * math.sqrt(1.0 - b2**t) / (1.0 - b1**t)
        p_s = p_s - alpha * m_s / (torch.sqrt(v_s) + eps)
    else:
        m_s = m_s * b1 + g * (1.0 - b1)
        v_s = v_s * b2 + g * g * (1.0 - b2)
        denom = torch.sqrt(v_s) / math.sqrt(1.0 - b2**t) + eps
        p_s = p_s - (lr / (1.0 - b1**t)) * m_s / denom
    if idx_t is None:
        m.copy_(m_s)
        v.copy_(v_s)
        p.copy_(p_s)
    else:
        m.index_copy_(0, idx_t, m_s)
        v.index_copy_(0, idx_t, v_s)
        p.index_copy_(0, idx_t, p_s)
