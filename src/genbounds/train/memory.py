"""How many samples go through the model at once: micro-batch and evaluation-chunk sizes from a
memory budget.

The budget
----------
``TrainConfig.max_batch_memory_bytes`` when given; otherwise ``memory_fraction`` (default 0.5)
of the memory the device reports free: ``torch.cuda.mem_get_info`` on CUDA (plus the blocks
PyTorch's caching allocator reserves but does not use),
``psutil.virtual_memory().available`` on CPU (``os.sysconf`` when psutil is missing).

The cost of one sample: a measured probe
----------------------------------------
:func:`activation_bytes_per_sample` runs the model's forward pass and loss on the first one and
the first two training samples (of all K models) under
``torch.autograd.graph.saved_tensors_hooks`` and counts the bytes of every tensor autograd saves
for the backward pass. The difference between the two probes is what one more sample adds (the
parameters, saved by both, cancel). It is multiplied by :data:`ACTIVATION_OVERHEAD` = 3 to cover
the gradients of those activations during the backward pass and the forward temporaries that are
not saved. The probe is the same on every device, deterministic, and needs no hook in the model
(models know nothing of training). The budget divided by this cost is the micro-batch size.

The budget covers the activations of one micro-batch; the parameters, their gradients, the
optimizer moments, the kept and initial weights (a few copies of the model) and the data set come
on top. Measured on CPU (``tests/test_train_microbatch.py`` and the issue 6 notes): a full-batch
step of a ShallowEncoder (d = 64, d_m = 4096, 16 tokens, N = 10,000, K = 1, float32) is estimated
at 3.09 MiB per sample (30 GiB in one batch); under a 2 GiB budget it runs in micro-batches of
663 and its peak resident memory grows by 1.0 GiB (4 GiB: 1,326 and 2.0 GiB), so the estimate
errs on the safe side by about a factor of 2.

Evaluation (no autograd) uses chunks of at most the same size, and never more than the rule of
the engine before micro-batching (``2**23`` input elements per chunk on CPU, ``2**26`` on CUDA),
so that results computed before are reproduced bit for bit.

Results do not depend on these sizes beyond floating-point rounding (tested); pin
``micro_batch_size`` and ``eval_batch_size`` to make a run bitwise reproducible across machines.

Reusing freed memory on CPU
---------------------------
PyTorch has no caching allocator on CPU: every tensor comes from the C library's ``malloc``,
and glibc serves a block above its mmap threshold (128 KiB, raised dynamically up to 32 MiB)
with a fresh ``mmap`` and gives it back with ``munmap`` when it is freed. A training step that
allocates the same tens-of-MiB activations at every step then pays a page fault for every 4 KiB
page of them, every step. :func:`retain_freed_memory` (called by
:func:`genbounds.train.train_ensemble` on CPU) raises glibc's mmap and trim thresholds once per
process (``mallopt``), so that such blocks come from the heap and freed ones are reused. Measured
on the 2-core CPU (one thread, 2026-11-26): a full-batch step of the shallow encoder (K = 3,
N = 400, 16 tokens, d = 64, d_m = 1024) from 0.22 s to 0.15 s; the ``(3, 6400, 64) x (64, 1024)``
value product alone reaches 73 instead of 38 GFLOP/s. The cost: memory a run has freed stays
with the process (its resident size does not shrink back between steps). Numbers are unchanged
(only where memory comes from changes). Not glibc (macOS, musl, Windows): nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import os
import platform
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.func import functional_call

from genbounds.train.config import TrainConfig
from genbounds.train.inputs import InputSet
from genbounds.train.losses import per_sample_loss

__all__ = [
    "ACTIVATION_OVERHEAD",
    "MemoryPlan",
    "activation_bytes_per_sample",
    "available_memory_bytes",
    "eval_chunk_size",
    "memory_budget",
    "micro_batch_size",
    "plan_memory",
    "retain_freed_memory",
    "saved_activation_bytes",
]

#: Peak memory of a forward + backward pass per byte of saved activations (see module docstring).
ACTIVATION_OVERHEAD = 3.0
_LEGACY_EVAL_ELEMENTS = {"cuda": 2**26, "cpu": 2**23}
_FALLBACK_BYTES = 4 * 2**30
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
#: Blocks up to this size come from the heap once :func:`retain_freed_memory` ran (1 GiB).
RETAIN_BELOW_BYTES = 2**30
_RETAINED: list[bool] = []


def retain_freed_memory() -> bool:
    """Make glibc serve blocks up to :data:`RETAIN_BELOW_BYTES` from the heap and keep freed
    memory for reuse (see the module docstring); once per process. True when glibc accepted it
    (now or before), False where the C library is not glibc."""
    if _RETAINED:
        return _RETAINED[0]
    ok = False
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        ok = bool(libc.mallopt(_M_MMAP_THRESHOLD, RETAIN_BELOW_BYTES)) and bool(
            libc.mallopt(_M_TRIM_THRESHOLD, 2**31 - 1))
    _RETAINED.append(ok)
    return ok


def available_memory_bytes(device: torch.device) -> int:
    """Free memory of ``device`` in bytes (CUDA: free device memory; CPU: available RAM)."""
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        # blocks that PyTorch's caching allocator holds but does not use are free to us too
        cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        return int(free + max(cached, 0))
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except ImportError:  # pragma: no cover - psutil is present wherever jupyter is
        try:
            return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):
            return _FALLBACK_BYTES


def memory_budget(config: TrainConfig, device: torch.device) -> int:
    """Bytes one micro-batch may use: ``max_batch_memory_bytes`` or a fraction of free memory."""
    if config.max_batch_memory_bytes is not None:
        return int(config.max_batch_memory_bytes)
    return max(1, int(available_memory_bytes(device) * float(config.memory_fraction)))


def saved_activation_bytes(model: nn.Module, state: dict[str, torch.Tensor], X: torch.Tensor,
                           y: torch.Tensor, loss: str) -> int:
    """Bytes of the tensors autograd saves for the loss of ``model`` (with parameters and
    buffers ``state``) on inputs ``X`` ``(K, B, ...)`` and labels ``y`` ``(K, B)``."""
    total = 0

    def pack(t: torch.Tensor) -> torch.Tensor:
        nonlocal total
        total += t.numel() * t.element_size()
        return t

    params = dict(model.named_parameters())
    s_in = {n: (t.detach().requires_grad_(True) if n in params and t.is_floating_point()
                else t) for n, t in state.items()}
    with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = functional_call(model, s_in, (X,))
        per, _ = per_sample_loss(loss, out, y)
        per.sum()
    return total


def activation_bytes_per_sample(model: nn.Module, state: dict[str, torch.Tensor],
                                inputs: InputSet, y: torch.Tensor, loss: str) -> int:
    """Estimated peak bytes that one more sample (of all K models at once) adds to a
    forward + backward pass: the measured probe of the module docstring."""
    models = np.arange(y.shape[0])
    one = saved_activation_bytes(model, state, inputs.get(models, 0, 1), y[:, :1], loss)
    if y.shape[1] >= 2:
        two = saved_activation_bytes(model, state, inputs.get(models, 0, 2), y[:, :2], loss)
        per = max(two - one, 1)
    else:
        per = max(one, 1)
    return int(math.ceil(per * ACTIVATION_OVERHEAD))


def micro_batch_size(config: TrainConfig, budget_bytes: int, bytes_per_sample: int,
                     batch: int) -> int:
    """Samples per model per gradient micro-batch, at most ``batch``."""
    if config.micro_batch_size is not None:
        return int(min(config.micro_batch_size, batch))
    return int(max(1, min(batch, budget_bytes // max(1, bytes_per_sample))))


def eval_chunk_size(config_chunk: int | None, budget_bytes: int, bytes_per_sample: int,
                    n_models: int, sample_numel: int, device: torch.device, n: int) -> int:
    """Samples per model per no-grad evaluation chunk (``config_chunk`` when given)."""
    if config_chunk is not None:
        return int(config_chunk)
    elements = _LEGACY_EVAL_ELEMENTS["cuda" if device.type == "cuda" else "cpu"]
    legacy = max(1, min(n, elements // max(1, n_models * sample_numel)))
    return int(max(1, min(legacy, budget_bytes // max(1, bytes_per_sample))))


@dataclass(frozen=True)
class MemoryPlan:
    """A memory budget and the measured cost of one sample (both in bytes)."""

    budget_bytes: int
    bytes_per_sample: int

    def micro_batch(self, config: TrainConfig, batch: int) -> int:
        """:func:`micro_batch_size` under this plan."""
        return micro_batch_size(config, self.budget_bytes, self.bytes_per_sample, batch)

    def eval_chunk(self, config_chunk: int | None, n_models: int, sample_numel: int,
                   device: torch.device, n: int) -> int:
        """:func:`eval_chunk_size` under this plan."""
        return eval_chunk_size(config_chunk, self.budget_bytes, self.bytes_per_sample,
                               n_models, sample_numel, device, n)


def plan_memory(config: TrainConfig, model: nn.Module, state: dict[str, torch.Tensor],
                inputs: InputSet, y: torch.Tensor, loss: str) -> MemoryPlan:
    """The budget of ``config`` on the inputs' device and the probe's cost per sample (the
    probe is skipped when both ``micro_batch_size`` and ``eval_batch_size`` are given)."""
    budget = memory_budget(config, inputs.device)
    if config.micro_batch_size is not None and config.eval_batch_size is not None:
        return MemoryPlan(budget, 1)
    return MemoryPlan(budget, activation_bytes_per_sample(model, state, inputs, y, loss))
