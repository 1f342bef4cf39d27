"""The state of an ensemble during training.

* :class:`ModelRecord`: the bookkeeping of one model (active or stopped, why and when, its best
  validation loss and epoch, evaluations since then): one record per model.
* :class:`TensorState`: the tensors of all K models (parameters, buffers, optimizer moments,
  kept and initial weights), each with the model dimension first, and the step counter.
* :class:`History`: the per-epoch logs, ``(K, epochs)`` arrays that grow as needed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

__all__ = ["History", "ModelRecord", "TensorState", "per_model_buffers", "subset"]


@dataclass
class ModelRecord:
    """Bookkeeping of one model of the ensemble.

    ``best_val`` is the lowest validation loss so far (``inf`` before the first evaluation),
    ``since_best`` the evaluations since it was last strictly improved, ``best_epoch`` the epoch
    of the kept weights (-1 before any), ``stopped_epoch`` the last epoch trained (-1 while
    active), ``stop_reason`` one of ``""`` (active), ``"train_accuracy"``, ``"patience"``,
    ``"max_epochs"``, and ``reached`` whether it stopped on the training-accuracy target.
    """

    active: bool = True
    best_val: float = math.inf
    since_best: int = 0
    best_epoch: int = -1
    stopped_epoch: int = -1
    stop_reason: str = ""
    reached: bool = False

    def stop(self, epoch: int, reason: str) -> None:
        """Mark the model stopped at the end of ``epoch`` for ``reason``."""
        self.active = False
        self.stopped_epoch = int(epoch)
        self.stop_reason = reason
        self.reached = reason == "train_accuracy"


def per_model_buffers(model: nn.Module, K: int) -> dict[str, torch.Tensor]:
    """The model's buffers; each must have the leading model dimension ``K`` (ValueError)."""
    bufs = dict(model.named_buffers())
    for n, b in bufs.items():
        if b.ndim == 0 or b.shape[0] != K:
            raise ValueError(
                f"model buffer {n!r} must have the leading model dimension K = {K}; "
                f"got shape {tuple(b.shape)}"
            )
    return bufs


def subset(params: dict[str, torch.Tensor],
           idx_t: torch.Tensor | None) -> dict[str, torch.Tensor]:
    """Rows ``idx_t`` of every tensor (all of them, not copied, when ``idx_t`` is None)."""
    if idx_t is None:
        return params
    return {n: p.index_select(0, idx_t) for n, p in params.items()}


@dataclass
class TensorState:
    """Tensors of all K models, leading dimension K, on the training device.

    ``velocity`` is the SGD momentum buffer or Adam's first moment, ``second`` Adam's second
    moment (empty for SGD), ``best`` the kept weights, ``initial`` the weights before the first
    step, ``step`` the optimizer steps taken (active models move in lockstep).
    """

    params: dict[str, torch.Tensor]
    buffers: dict[str, torch.Tensor]
    velocity: dict[str, torch.Tensor]
    second: dict[str, torch.Tensor]
    best: dict[str, torch.Tensor]
    initial: dict[str, torch.Tensor]
    step: int = 0

    @classmethod
    def from_model(cls, model: nn.Module, K: int, adam: bool) -> TensorState:
        """Copies of the model's parameters (on its device), zero moments, best = initial."""
        params = {n: p.detach().clone() for n, p in model.named_parameters()}
        return cls(
            params=params,
            buffers=per_model_buffers(model, K),
            velocity={n: torch.zeros_like(p) for n, p in params.items()},
            second={n: torch.zeros_like(p) for n, p in params.items()} if adam else {},
            best={n: p.clone() for n, p in params.items()},
            initial={n: p.clone() for n, p in params.items()},
        )

    def weights(self) -> dict[str, torch.Tensor]:
        """Current parameters and buffers (what ``functional_call`` needs)."""
        return {**self.params, **self.buffers}

    def keep(self, models: np.ndarray) -> None:
        """Copy the current parameters of ``models`` into ``best``."""
        if len(models) == 0:
            return
        idx = torch.as_tensor(models, device=next(iter(self.params.values())).device)
        for n, p in self.params.items():
            self.best[n].index_copy_(0, idx, p.index_select(0, idx))

    def keep_all(self) -> None:
        """``best`` becomes a copy of the current parameters."""
        self.best = {n: p.clone() for n, p in self.params.items()}


@dataclass
class History:
    """Per-epoch logs: ``data[key]`` is ``(K, capacity)``, NaN where nothing was logged."""

    K: int
    keys: Sequence[str]
    capacity: int
    n: int = 0
    data: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.data = {k: np.full((self.K, self.capacity), np.nan) for k in self.keys}

    def new_epoch(self) -> int:
        """Open the next epoch's column (doubling the capacity when full); its index."""
        cap = next(iter(self.data.values())).shape[1]
        if self.n == cap:
            for k, v in self.data.items():
                grown = np.full((self.K, 2 * cap), np.nan)
                grown[:, :cap] = v
                self.data[k] = grown
        self.n += 1
        return self.n - 1

    def log(self, key: str, models: np.ndarray, epoch: int, values: np.ndarray | float) -> None:
        """``data[key][models, epoch] = values``."""
        self.data[key][models, epoch] = values

    def result(self) -> dict[str, np.ndarray]:
        """The logged epochs, ``(K, n)`` copies."""
        return {k: v[:, : self.n].copy() for k, v in self.data.items()}
