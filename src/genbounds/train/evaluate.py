"""No-grad evaluation of an ensemble, chunk by chunk: mean loss and accuracy per model."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from genbounds.train.config import LOSSES, LossName, TrainConfig, resolve_device
from genbounds.train.inputs import InputSet, as_tensor
from genbounds.train.losses import check_labels, per_sample_loss
from genbounds.train.memory import MemoryPlan, plan_memory
from genbounds.train.precision import forward
from genbounds.train.state import per_model_buffers, subset
from genbounds.validation import check_int

__all__ = ["evaluate_ensemble", "evaluate_models"]


@torch.no_grad()
def evaluate_models(
    model: nn.Module,
    params: dict[str, torch.Tensor],
    inputs: InputSet,
    y: torch.Tensor,
    models: np.ndarray,
    loss: str,
    chunk: int | None,
    plan: MemoryPlan | None = None,
    precision: str = "fp32",
) -> tuple[np.ndarray, np.ndarray]:
    """Mean loss and accuracy (float64, shape ``(len(models),)``) of the given models.

    ``params`` holds parameters and buffers with leading K; ``chunk`` samples per model are
    evaluated at once (None: from ``plan``, see :mod:`genbounds.train.memory`; without a plan
    the input-size rule alone). Accuracy is NaN for ``"mse"``. ``precision``: see
    :func:`genbounds.train.precision.forward`.
    """
    n = y.shape[1]
    Km = len(models)
    all_models = Km == y.shape[0]
    idx_t = None if all_models else torch.as_tensor(models, device=y.device)
    p_sub = subset(params, idx_t)
    y_sub = y if idx_t is None else y.index_select(0, idx_t)
    plan = MemoryPlan(2**62, 1) if plan is None else plan
    chunk = plan.eval_chunk(chunk, Km, inputs.sample_numel, y.device, n)
    loss_sum = torch.zeros(Km, dtype=torch.float64, device=y.device)
    correct = torch.zeros(Km, dtype=torch.float64, device=y.device)
    has_acc = True
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        out = forward(model, p_sub, inputs.get(models, start, stop), precision)
        per, ok = per_sample_loss(loss, out, y_sub[:, start:stop])
        loss_sum += per.sum(dim=1, dtype=torch.float64)
        if ok is None:
            has_acc = False
        else:
            correct += ok.sum(dim=1, dtype=torch.float64)
    losses = (loss_sum / n).cpu().numpy()
    accs = (correct / n).cpu().numpy() if has_acc else np.full(Km, np.nan)
    return losses, accs


def evaluate_ensemble(
    model: nn.Module,
    X: Any,
    y: Any,
    loss: LossName = "cross_entropy",
    *,
    batch_size: int | None = None,
    device: str = "auto",
    max_batch_memory_bytes: int | None = None,
) -> dict[str, np.ndarray]:
    """Mean loss and accuracy of every model of an ensemble on its own data (no grad).

    ``X`` is ``(K, N, ...)`` (or an :data:`~genbounds.train.inputs.InputFn`), ``y`` is
    ``(K, N)``. ``batch_size`` samples per model are evaluated at once (None: from a memory
    budget, ``max_batch_memory_bytes`` or half the device's free memory). Returns
    ``{"loss": (K,), "accuracy": (K,)}`` (accuracy NaN for ``"mse"``).
    """
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    params = {n: p.detach() for n, p in model.named_parameters()}
    if not params:
        raise ValueError("model has no parameters")
    K = next(iter(params.values())).shape[0]
    dev = resolve_device(device)
    dtype = next(iter(params.values())).dtype
    y_t = as_tensor(y, "y")
    if y_t.ndim != 2 or y_t.shape[0] != K:
        raise ValueError(f"y must have shape (K, N) with K = {K}; got {tuple(y_t.shape)}")
    y_t = check_labels(loss, y_t, "y").to(dev)
    inputs = InputSet(X, y_t.shape[1], K, "X", dtype, dev)
    params = {n: p.to(dev) for n, p in params.items()}
    params.update(per_model_buffers(model.to(dev), K))
    if batch_size is not None:
        try:
            check_int(batch_size, "batch_size")
        except ValueError:
            raise ValueError(
                f"batch_size must be an integer >= 1 or None, got {batch_size!r}"
            ) from None
    cfg = TrainConfig(eval_batch_size=batch_size, max_batch_memory_bytes=max_batch_memory_bytes,
                      micro_batch_size=1)
    plan = plan_memory(cfg, model, params, inputs, y_t, loss)
    losses, accs = evaluate_models(model.to(dev), params, inputs, y_t, np.arange(K), loss,
                                   batch_size, plan)
    return {"loss": losses, "accuracy": accs}
