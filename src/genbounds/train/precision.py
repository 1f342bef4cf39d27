"""Reduced precision, opt-in: ``TrainConfig.precision`` in ``"fp32"`` (default), ``"tf32"``,
``"bf16"``.

* ``"fp32"``: nothing changes; every result of the engine is computed in the parameters' dtype
  (the golden tests pin these numbers bit for bit).
* ``"tf32"``: for the duration of :func:`~genbounds.train.train_ensemble` on a CUDA device,
  ``torch.backends.cuda.matmul.allow_tf32`` and ``torch.backends.cudnn.allow_tf32`` are set
  (float32 inputs rounded to a 10-bit mantissa inside matrix products, float32 accumulation)
  and restored afterwards, also after an exception. On CPU it changes nothing (PyTorch's CPU
  matmuls ignore these flags), so CPU results are bitwise those of ``"fp32"`` (tested).
* ``"bf16"``: the model's forward pass (training micro-batches and evaluation chunks) runs
  under ``torch.autocast(device_type, dtype=torch.bfloat16)``; its output is cast back to the
  parameters' dtype before the loss, so losses, gradients' accumulation, optimizer updates and
  the float64 sums are unchanged in kind.

Whether the reported numbers survive reduced precision is a property of the experiment, not of
the engine: ``tests/test_perf_precision.py`` checks, on the GPU path (skipped without CUDA),
that the numbers a chapter prints are unchanged to their printed digits.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn
from torch.func import functional_call

__all__ = ["PRECISIONS", "forward", "matmul_precision"]

PRECISIONS = ("fp32", "tf32", "bf16")


@contextmanager
def matmul_precision(precision: str, device: torch.device) -> Iterator[None]:
    """TF32 matrix products on CUDA for ``precision="tf32"``; otherwise nothing."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision != "tf32" or device.type != "cuda":
        yield
        return
    old = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


def forward(model: nn.Module, state: dict[str, torch.Tensor], X: torch.Tensor,
            precision: str = "fp32") -> Any:
    """``functional_call(model, state, (X,))``, under bfloat16 autocast for ``"bf16"`` (the
    output cast back to the dtype of the first floating parameter)."""
    if precision != "bf16":
        return functional_call(model, state, (X,))
    with torch.autocast(X.device.type, dtype=torch.bfloat16):
        out = functional_call(model, state, (X,))
    dtype = next((t.dtype for t in state.values() if t.is_floating_point()), torch.float32)
    return out.to(dtype) if out.is_floating_point() else out
