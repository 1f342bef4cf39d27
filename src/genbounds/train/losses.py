"""Per-sample losses and correctness, and the label checks that go with each loss.

Accuracy is the fraction of correct predictions: ``argmax`` of the logits against the integer
label for ``"cross_entropy"`` and ``"bce_logits_onehot"`` (Keras resolves ``"accuracy"`` to
categorical accuracy for 2-logit outputs and one-hot labels; ties go to the first index, as
in ``argmax``), ``logit > 0`` against labels in {0, 1} for ``"bce_logits"``, ``sign(f) = y``
for labels in {-1, +1} for ``"logistic"``, and undefined (None, reported as NaN) for ``"mse"``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from genbounds.train.config import LOSSES

__all__ = ["check_labels", "per_sample_loss"]


def per_sample_loss(
    loss: str, out: torch.Tensor, y: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per-sample loss ``(K, B)`` and correctness ``(K, B)`` (None for ``"mse"``).

    * ``"cross_entropy"``: softmax cross-entropy of logits ``(K, B, C)`` against integer
      labels ``(K, B)``.
    * ``"bce_logits_onehot"``: Keras ``BinaryCrossentropy(from_logits=True)`` on logits
      ``(K, B, C)`` against one-hot labels, i.e. the sigmoid cross-entropy of each logit
      averaged over the ``C`` outputs (the authors' sparse-majority loss).
    * ``"bce_logits"``: sigmoid cross-entropy of scalar logits ``(K, B)``, labels in {0, 1}.
    * ``"logistic"``: ``log(1 + exp(-y f))`` for scalar outputs, labels in {-1, +1}.
    * ``"mse"``: ``(f - y)^2`` for scalar outputs, real labels.
    """
    if loss in ("cross_entropy", "bce_logits_onehot"):
        if out.ndim != 3:
            raise ValueError(f"loss {loss!r} needs outputs (K, B, C); got {tuple(out.shape)}")
        K, B, C = out.shape
        if loss == "cross_entropy":
            per = F.cross_entropy(out.reshape(K * B, C), y.reshape(K * B), reduction="none")
            per = per.view(K, B)
        else:
            target = F.one_hot(y, C).to(out.dtype)
            per = F.binary_cross_entropy_with_logits(out, target, reduction="none").mean(-1)
        return per, out.argmax(dim=-1) == y
    if out.ndim != 2:
        raise ValueError(f"loss {loss!r} needs scalar outputs (K, B); got {tuple(out.shape)}")
    if loss == "bce_logits":
        per = F.binary_cross_entropy_with_logits(out, y.to(out.dtype), reduction="none")
        return per, (out > 0) == (y == 1)
    if loss == "logistic":
        yf = y.to(out.dtype)
        return F.softplus(-yf * out), torch.sign(out) == yf
    if loss == "mse":
        return (out - y.to(out.dtype)) ** 2, None
    raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")


def check_labels(loss: str, y: torch.Tensor, name: str) -> torch.Tensor:
    """``y`` checked for ``loss`` (finite; integer classes, {0, 1} or {-1, +1} as the loss
    needs) and cast to int64 for the classification losses; raises ValueError naming ``name``."""
    if not torch.isfinite(y.to(torch.float64)).all():
        raise ValueError(f"{name} contains non-finite values")
    if loss in ("cross_entropy", "bce_logits_onehot", "bce_logits"):
        if torch.is_floating_point(y):
            if not torch.equal(y, torch.round(y)):
                raise ValueError(f"{name} must hold integer class labels for loss {loss!r}")
        y = y.to(torch.int64)
        if (y < 0).any():
            raise ValueError(f"{name} must hold non-negative class labels for loss {loss!r}")
        if loss == "bce_logits" and (y > 1).any():
            raise ValueError(f"{name} must hold labels in {{0, 1}} for loss 'bce_logits'")
        return y
    if loss == "logistic":
        if not ((y == 1) | (y == -1)).all():
            raise ValueError(f"{name} must hold labels in {{-1, +1}} for loss 'logistic'")
        return y.to(torch.int64)
    return y
