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
The state is a dict of tensors and plain Python values, written with :func:`torch.save` (read
back with ``weights_only=True``: no pickled code is ever loaded); :func:`to_storable` turns
numpy arrays into tensors for it and :func:`from_storable` turns them back.

Stages: a unit made of several trainings
----------------------------------------
A unit may train more than once (segments of one run, a teacher and then students, one
ensemble per width...). The checkpoint therefore holds a sequence of **stages**: every
resumable piece of work asks ``ckpt.stage(tag)`` for the next one, in the order the unit runs
them. A :class:`Stage` knows

* ``stage.result``: the result of this stage if an earlier (interrupted) run of the unit
  finished it: the unit uses it instead of recomputing (``None`` otherwise);
* ``stage.partial``: the state an interrupted run saved *inside* this stage (``None``
  otherwise): the unit resumes from it;
* ``stage.boundary(epoch, total, state_fn)``: called at every epoch boundary; saves
  ``state_fn()`` when :meth:`UnitCheckpoint.should_save` says so and raises
  :class:`BudgetExhausted` when the budget is spent;
* ``stage.finish(result)``: the stage is done; its result is kept in the checkpoint.

``tag`` identifies the work (a fingerprint of its configuration and inputs); a resumed unit whose
``i``-th stage has a different tag than the saved one raises ``ValueError`` (the code or the
configuration changed: delete the checkpoint). :func:`genbounds.train.train_ensemble` is one
stage per call, so a unit that only calls it (any number of times, in a fixed order) is resumable
with no code of its own: finished calls return their stored :class:`~genbounds.train.TrainResult`
(and load its kept weights into the model), the interrupted call resumes at its epoch. A loop of
its own uses :func:`checkpoint_state` / :func:`restore_state` for a model and a
``torch.optim`` optimiser (see the example in :func:`checkpoint_state`).
"""

from __future__ import annotations

import hashlib
import io
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from genbounds.results.files import atomic_write

__all__ = [
    "BudgetExhausted",
    "Stage",
    "UnitCheckpoint",
    "checkpoint_state",
    "current_checkpoint",
    "fingerprint",
    "from_storable",
    "restore_state",
    "to_storable",
    "unit_checkpoint",
]

#: The layout of the file (a dict): ``{"format": FORMAT, "stages": [{"tag", "result"}, ...],
#: "partial": None or {"index", "tag", "epoch", "total", "state"}}``.
FORMAT = "genbounds-unit-checkpoint/1"


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
    _data: dict[str, Any] | None = field(default=None, repr=False)
    _next: int = field(default=0, repr=False)

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
        """Remove the checkpoint (the unit's result is stored), and the companion files a
        stage keeps beside it (``<checkpoint>.curves.npz`` of the fused sparse-majority
        engine: :meth:`companion`)."""
        self.path.unlink(missing_ok=True)
        self.companion("curves.npz").unlink(missing_ok=True)
        self._data = None
        self._next = 0

    def companion(self, suffix: str) -> Path:
        """``<checkpoint>.<suffix>``: a file a stage keeps beside the checkpoint (curves, for
        instance), removed with it by :meth:`clear`."""
        return self.path.with_name(f"{self.path.name}.{suffix}")

    def out_of_time(self) -> bool:
        """True once the deadline has passed."""
        return self.deadline is not None and time.monotonic() >= self.deadline

    def should_save(self) -> bool:
        """True when the last save is ``every_s`` old, or the budget is spent."""
        return self.out_of_time() or time.monotonic() - self._last_save >= self.every_s

    # -- stages -----------------------------------------------------------------------------

    def rewind(self) -> None:
        """Start the unit again from its first stage (re-reading the file). :func:`unit_checkpoint`
        does this on entry, so a unit run twice with the same object starts at stage 0."""
        self._data = None
        self._next = 0

    def _contents(self) -> dict[str, Any]:
        if self._data is None:
            raw = self.load()
            if raw is None:
                raw = {"format": FORMAT, "stages": [], "partial": None}
            elif raw.get("format") != FORMAT:
                raise ValueError(f"checkpoint {self.path} is not a {FORMAT} file (format "
                                 f"{raw.get('format')!r}); delete it to restart the unit")
            self._data = raw
        return self._data

    def stage(self, tag: str) -> Stage:
        """The next stage of the unit (see the module docstring); ``tag`` identifies its work."""
        if not isinstance(tag, str) or not tag:
            raise ValueError(f"tag must be a non-empty string, got {tag!r}")
        data = self._contents()
        index = self._next
        self._next += 1
        stages = data["stages"]
        if index < len(stages):
            if stages[index]["tag"] != tag:
                raise ValueError(
                    f"checkpoint {self.path}: stage {index} was saved for {stages[index]['tag']!r} "
                    f"but the unit now runs {tag!r} (code or configuration changed); delete the "
                    "checkpoint to restart the unit")
            return Stage(self, index, tag, from_storable(stages[index]["result"]), None)
        partial = data.get("partial")
        if partial is not None and partial["index"] == index:
            if partial["tag"] != tag:
                raise ValueError(
                    f"checkpoint {self.path}: stage {index} was interrupted in {partial['tag']!r} "
                    f"but the unit now runs {tag!r} (code or configuration changed); delete the "
                    "checkpoint to restart the unit")
            return Stage(self, index, tag, None, from_storable(partial["state"]))
        return Stage(self, index, tag, None, None)

    def progress(self) -> tuple[int, int | None] | None:
        """``(epoch, total)`` of the interrupted stage saved in the file, or ``None``."""
        raw = self.load()
        if raw is None or raw.get("format") != FORMAT or raw.get("partial") is None:
            return None
        p = raw["partial"]
        return int(p["epoch"]), (None if p["total"] is None else int(p["total"]))


@dataclass
class Stage:
    """One resumable piece of a unit's work (see :meth:`UnitCheckpoint.stage`)."""

    ckpt: UnitCheckpoint
    index: int
    tag: str
    result: Any
    partial: dict[str, Any] | None

    def save(self, epoch: int, total: int | None, state: dict[str, Any]) -> None:
        """Save ``state`` as this stage's partial state (after ``epoch`` epochs of ``total``)."""
        data = self.ckpt._contents()
        if len(data["stages"]) != self.index:
            raise RuntimeError(f"stage {self.index} saved while {len(data['stages'])} stages "
                               "are finished (stages must run in order)")
        data["partial"] = {"index": self.index, "tag": self.tag, "epoch": int(epoch),
                           "total": None if total is None else int(total),
                           "state": to_storable(state)}
        self.ckpt.save(data)

    def boundary(self, epoch: int, total: int | None,
                 state_fn: Callable[[], dict[str, Any]]) -> None:
        """At an epoch boundary (``epoch`` epochs done): save ``state_fn()`` when it is time,
        and raise :class:`BudgetExhausted` (after saving) when the budget is spent."""
        if self.ckpt.should_save():
            self.save(epoch, total, state_fn())
        if self.ckpt.out_of_time():
            raise BudgetExhausted(epoch, total, self.ckpt.path)

    def finish(self, result: Any) -> None:
        """The stage is done: keep ``result`` (anything :func:`to_storable` accepts) in the
        checkpoint (written at the next save) and drop its partial state."""
        data = self.ckpt._contents()
        if len(data["stages"]) == self.index:
            data["stages"].append({"tag": self.tag, "result": to_storable(result)})
        if data.get("partial") is not None and data["partial"]["index"] <= self.index:
            data["partial"] = None


# ---------------------------------------------------------------------------------------------
# what can be stored: tensors and plain values; numpy arrays are wrapped
# ---------------------------------------------------------------------------------------------

_ND, _NDS, _TUP = "__ndarray__", "__ndarray_str__", "__tuple__"


def to_storable(obj: Any) -> Any:
    """``obj`` with every numpy array (in nested dicts, lists and tuples) replaced by a tagged
    tensor (string arrays by a tagged list), numpy scalars by Python numbers, tensors detached
    onto the CPU: what ``torch.load(weights_only=True)`` reads back. Other objects raise
    ``ValueError``."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().cpu().clone()
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind == "U":
            return {_NDS: obj.tolist(), "shape": list(obj.shape)}
        if obj.dtype.kind not in "biuf":
            raise ValueError(f"cannot store a numpy array of dtype {obj.dtype}")
        return {_ND: torch.from_numpy(np.ascontiguousarray(obj).copy())}
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, dict):
        return {k: to_storable(v) for k, v in obj.items()}
    if isinstance(obj, tuple):
        return {_TUP: [to_storable(v) for v in obj]}
    if isinstance(obj, list):
        return [to_storable(v) for v in obj]
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    raise ValueError(f"cannot store an object of type {type(obj).__name__} in a checkpoint")


def from_storable(obj: Any) -> Any:
    """The inverse of :func:`to_storable`."""
    if isinstance(obj, dict):
        if _ND in obj and len(obj) == 1:
            return obj[_ND].numpy()
        if _NDS in obj:
            arr = np.array(obj[_NDS], dtype=str)
            return arr.reshape(obj["shape"])
        if _TUP in obj and len(obj) == 1:
            return tuple(from_storable(v) for v in obj[_TUP])
        return {k: from_storable(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [from_storable(v) for v in obj]
    return obj


def fingerprint(*parts: Any) -> str:
    """A short hex digest of tensors, arrays and plain values (for a stage's ``tag``): tensors
    and arrays by dtype, shape and bytes."""
    h = hashlib.blake2b(digest_size=12)
    for p in parts:
        if isinstance(p, torch.Tensor):
            t = p.detach().cpu().contiguous()
            h.update(f"T{t.dtype}{tuple(t.shape)}".encode())
            h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
        elif isinstance(p, np.ndarray):
            a = np.ascontiguousarray(p)
            h.update(f"A{a.dtype}{a.shape}".encode())
            h.update(a.tobytes())
        elif isinstance(p, Mapping):
            for k in sorted(p):
                h.update(f"K{k}".encode())
                h.update(fingerprint(p[k]).encode())
        elif isinstance(p, list | tuple):
            h.update(f"L{len(p)}".encode())
            for q in p:
                h.update(fingerprint(q).encode())
        else:
            h.update(f"V{type(p).__name__}:{p!r}".encode())
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------
# helpers for loops of their own
# ---------------------------------------------------------------------------------------------


def checkpoint_state(model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                     extra: Mapping[str, Any] | None = None, *,
                     scheduler: Any = None) -> dict[str, Any]:
    """The state of a training loop of one's own: the model's parameters and buffers, the
    optimiser's and learning-rate scheduler's ``state_dict``, and ``extra`` (epoch, curves,
    random-number states, best-so-far weights...: tensors, numpy arrays, plain values; a numpy
    ``Generator``'s state is ``gen.bit_generator.state``, a torch ``Generator``'s
    ``gen.get_state()``).

    A loop that can stop at any epoch and resume bitwise::

        ckpt = current_checkpoint()
        stage = ckpt.stage(fingerprint("teacher", config, X, y)) if ckpt else None
        start, curve = 0, []
        if stage is not None and stage.partial is not None:
            extra = restore_state(stage.partial, model, opt, scheduler=sched)
            start, curve = extra["epoch"], list(extra["curve"])
        for epoch in range(start, epochs):
            ...                                   # one epoch
            if stage is not None and epoch + 1 < epochs:
                stage.boundary(epoch + 1, epochs, lambda: checkpoint_state(
                    model, opt, {"epoch": epoch + 1, "curve": curve}, scheduler=sched))
        if stage is not None:
            stage.finish(None)     # or a result, so that a resumed unit skips the loop

    (A stage with ``stage.result is not None`` was finished by an earlier run: restore from
    the result instead of training; with ``finish(None)`` the loop reruns from its start.)
    """
    if not isinstance(model, nn.Module):
        raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    out: dict[str, Any] = {
        "params": {n: p.detach().cpu().clone() for n, p in model.named_parameters()},
        "buffers": {n: b.detach().cpu().clone() for n, b in model.named_buffers()},
        "optimizer": None if optimizer is None else optimizer.state_dict(),
        "scheduler": None if scheduler is None else scheduler.state_dict(),
        "extra": dict(extra or {}),
    }
    return out


def restore_state(state: Mapping[str, Any], model: nn.Module,
                  optimizer: torch.optim.Optimizer | None = None, *,
                  scheduler: Any = None) -> dict[str, Any]:
    """Load what :func:`checkpoint_state` saved into ``model`` (and ``optimizer``,
    ``scheduler``) in place, bit for bit; returns ``extra``."""
    if not isinstance(state, Mapping) or "params" not in state:
        raise ValueError("state must be a dict made by checkpoint_state")
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n not in state["params"]:
                raise ValueError(f"state has no parameter {n!r}")
            src = state["params"][n]
            if src.shape != p.shape:
                raise ValueError(f"parameter {n!r} has shape {tuple(p.shape)}, the state "
                                 f"{tuple(src.shape)}")
            p.copy_(src)
        for n, b in model.named_buffers():
            if n in state["buffers"] and b is not None:
                b.copy_(state["buffers"][n])
    if optimizer is not None:
        if state.get("optimizer") is None:
            raise ValueError("state holds no optimizer state")
        optimizer.load_state_dict(state["optimizer"])
    if scheduler is not None:
        if state.get("scheduler") is None:
            raise ValueError("state holds no scheduler state")
        scheduler.load_state_dict(state["scheduler"])
    return dict(state.get("extra") or {})


_CURRENT: ContextVar[UnitCheckpoint | None] = ContextVar("genbounds_unit_checkpoint",
                                                         default=None)


def current_checkpoint() -> UnitCheckpoint | None:
    """The checkpoint of the unit being run, or ``None`` outside :func:`unit_checkpoint`."""
    return _CURRENT.get()


@contextmanager
def unit_checkpoint(ckpt: UnitCheckpoint | None) -> Iterator[UnitCheckpoint | None]:
    """Make ``ckpt`` the current checkpoint for the duration of the block (its stages start
    again from the first, :meth:`UnitCheckpoint.rewind`)."""
    if ckpt is not None:
        ckpt.rewind()
    token = _CURRENT.set(ckpt)
    try:
        yield ckpt
    finally:
        _CURRENT.reset(token)
