"""Checkpoints inside a unit of work, and the time budget that stops a unit cleanly.

A unit of an experiment (one sequence length, one size...) can run for hours at paper scale,
longer than a GPU is lent or a session lasts. The caller that runs units
(:func:`genbounds.experiments.registry.reproduce`) opens a :class:`UnitCheckpoint` for the unit it
is about to run and makes it *current* with :func:`unit_checkpoint`; the experiment's training
loop asks :func:`current_checkpoint` at every epoch boundary:

* on entry, ``ckpt.load()`` returns the state saved by an interrupted run (or ``None``), and the
  loop resumes from it: model and optimiser state, random-number state, epoch, best-so-far
  selection, curves, so that the resumed unit is bitwise the uninterrupted one (on CPU);
* after each epoch, ``ckpt.should_save()`` says whether to save (at most every ``every_s``
  seconds, and always when the budget is spent); ``ckpt.save(state)`` writes the state
  atomically;
* ``ckpt.out_of_time()`` says that the budget is spent: the loop saves and raises
  :class:`BudgetExhausted`, which the caller reports as "in progress (epoch e of E)".

Outside :func:`unit_checkpoint` there is no current checkpoint and loops run as before.
The state is a dict of tensors, numpy arrays and plain Python values, written with
:func:`torch.save` (read back with ``weights_only=True``: no pickled code is ever loaded).
"""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from genbounds.results.files import atomic_write

__all__ = [
    "BudgetExhausted",
    "UnitCheckpoint",
    "current_checkpoint",
    "unit_checkpoint",
]


class BudgetExhausted(Exception):  # noqa: N818 (a normal way for a unit to end, not an error)
    """A unit stopped because its time budget was spent; its checkpoint is saved.

    Attributes: ``epoch`` (epochs completed), ``total`` (epochs planned, if known), ``path``
    (the checkpoint file).
    """

    def __init__(self, epoch: int, total: int | None, path: Path) -> None:
        self.epoch, self.total, self.path = int(epoch), total, Path(path)
        of = f" of {total}" if total is not None else ""
        super().__init__(f"time budget spent at epoch {epoch}{of}; checkpoint saved to {path}")


@dataclass
class UnitCheckpoint:
    """Where one unit keeps its partial state, and when it must stop.

    Attributes
    ----------
    path:
        The checkpoint file (one per unit; the results store decides where).
    deadline:
        A :func:`time.monotonic` instant after which the unit must stop, or ``None``.
    every_s:
        Save at most this often (seconds) while the budget lasts.
    """

    path: Path
    deadline: float | None = None
    every_s: float = 60.0
    _last_save: float = field(default_factory=time.monotonic, repr=False)

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        if not (self.every_s >= 0):
            raise ValueError(f"every_s must be >= 0, got {self.every_s!r}")

    def load(self) -> dict[str, Any] | None:
        """The saved state, or ``None`` when there is none."""
        if not self.path.is_file():
            return None
        data = self.path.read_bytes()
        try:
            state = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
        except Exception as exc:  # a torn or foreign file: say which
            raise ValueError(f"checkpoint {self.path} cannot be read ({exc}); delete it to "
                             "restart the unit from the beginning") from exc
        if not isinstance(state, dict):
            raise ValueError(f"checkpoint {self.path} does not hold a dict")
        return state

    def save(self, state: dict[str, Any]) -> None:
        """Write ``state`` atomically (a crash leaves the previous checkpoint or this one)."""
        buf = io.BytesIO()
        torch.save(state, buf)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, buf.getvalue())
        self._last_save = time.monotonic()

    def clear(self) -> None:
        """Remove the checkpoint (the unit's result is stored)."""
        self.path.unlink(missing_ok=True)

    def out_of_time(self) -> bool:
        """True once the deadline has passed."""
        return self.deadline is not None and time.monotonic() >= self.deadline

    def should_save(self) -> bool:
        """True when the last save is ``every_s`` old, or the budget is spent."""
        return self.out_of_time() or time.monotonic() - self._last_save >= self.every_s


_CURRENT: ContextVar[UnitCheckpoint | None] = ContextVar("genbounds_unit_checkpoint",
                                                         default=None)


def current_checkpoint() -> UnitCheckpoint | None:
    """The checkpoint of the unit being run, or ``None`` outside :func:`unit_checkpoint`."""
    return _CURRENT.get()


@contextmanager
def unit_checkpoint(ckpt: UnitCheckpoint | None) -> Iterator[UnitCheckpoint | None]:
    """Make ``ckpt`` the current checkpoint for the duration of the block."""
    token = _CURRENT.set(ckpt)
    try:
        yield ckpt
    finally:
        _CURRENT.reset(token)
