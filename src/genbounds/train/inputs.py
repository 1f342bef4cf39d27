"""Uniform access to an input set: a ``(K, N, ...)`` tensor or a lazily built one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

__all__ = ["InputFn", "InputSet", "as_tensor"]

#: A lazily built input set: ``f(models, start, stop)`` returns the inputs of samples
#: ``start:stop`` for the models with the given (global) indices, shape ``(len(models),
#: stop - start, ...)``. Lets a large validation set be generated chunk by chunk.
InputFn = Callable[[np.ndarray, int, int], torch.Tensor]


def as_tensor(x: Any, name: str, dtype: torch.dtype | None = None) -> torch.Tensor:
    """``x`` (a tensor or numpy array) as a detached tensor, optionally cast to ``dtype``."""
    if isinstance(x, torch.Tensor):
        t = x.detach()
    elif isinstance(x, np.ndarray):
        t = torch.from_numpy(np.ascontiguousarray(x))
    else:
        raise ValueError(f"{name} must be a torch.Tensor or numpy array, got {type(x).__name__}")
    if dtype is not None:
        t = t.to(dtype)
    return t


def is_lazy(X: Any) -> bool:
    """True when ``X`` is an :data:`InputFn` rather than a tensor or array."""
    return callable(X) and not isinstance(X, torch.Tensor | np.ndarray)


class InputSet:
    """``n`` samples for each of ``K`` models: a ``(K, n, ...)`` tensor moved to ``device`` or
    an :data:`InputFn` called chunk by chunk. Raises ValueError naming ``name`` on a bad shape
    or non-finite entries."""

    def __init__(self, X: Any, n: int, K: int, name: str, dtype: torch.dtype,
                 device: torch.device) -> None:
        self.name = name
        self.dtype = dtype
        self.device = device
        self.fn: InputFn | None = None
        self.X: torch.Tensor | None = None
        if is_lazy(X):
            self.fn = X
            probe = self.get(np.arange(1), 0, 1)
            if probe.ndim < 2 or probe.shape[:2] != (1, 1):
                raise ValueError(
                    f"{name}(models, start, stop) must return (len(models), stop - start, ...); "
                    f"got {tuple(probe.shape)} for one model and one sample"
                )
            self.sample_shape = tuple(probe.shape[2:])
        else:
            t = as_tensor(X, name)
            if t.ndim < 3 or t.shape[0] != K or t.shape[1] != n:
                raise ValueError(
                    f"{name} must have shape (K, N, ...) = ({K}, {n}, ...); got {tuple(t.shape)}"
                )
            if not torch.is_floating_point(t):
                t = t.to(dtype)
            if not torch.isfinite(t).all():
                raise ValueError(f"{name} contains non-finite values")
            self.X = t.to(device=device, dtype=dtype)
            self.sample_shape = tuple(t.shape[2:])
        self.sample_numel = int(np.prod(self.sample_shape))

    def get(self, models: np.ndarray, start: int, stop: int) -> torch.Tensor:
        """Inputs of samples ``start:stop`` of the given models, ``(len(models), stop-start,
        ...)`` on the device."""
        if self.X is not None:
            idx = torch.as_tensor(models, device=self.device)
            if len(models) == self.X.shape[0]:
                return self.X[:, start:stop]
            return self.X[idx, start:stop]
        assert self.fn is not None
        out = self.fn(np.asarray(models), start, stop)
        if not isinstance(out, torch.Tensor):
            raise ValueError(f"{self.name}(models, start, stop) must return a torch.Tensor")
        return out.to(device=self.device, dtype=self.dtype)
