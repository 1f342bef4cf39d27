"""Per-model stopping and the kept epoch.

* A model is validated every ``eval_every`` epochs, at the epoch it reaches the training-accuracy
  target, and at ``max_epochs`` (:func:`models_to_validate`).
* Its weights are kept when its validation loss is *strictly* lower than its best so far (Keras
  ``ModelCheckpoint(monitor="val_loss", mode="min", save_best_only=True)``: the first of tied
  epochs wins); ``patience`` counts evaluations without such an improvement
  (:func:`record_validation`).
* It stops at the end of the first epoch whose training accuracy is at least
  ``stop_at_train_accuracy``, when its patience runs out, or at ``max_epochs``, in that order of
  precedence (:func:`stop_reason`, :func:`apply_stops`).
* With ``select_best="last"`` the kept weights are the final ones (:func:`finish_selection`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from genbounds.train.config import TrainConfig
from genbounds.train.state import ModelRecord, TensorState

__all__ = [
    "apply_stops",
    "finish_selection",
    "models_to_validate",
    "record_validation",
    "reached_target",
    "stop_reason",
]


def reached_target(config: TrainConfig, accuracy: np.ndarray) -> np.ndarray:
    """Which models reached ``stop_at_train_accuracy`` (all False when it is None)."""
    if config.stop_at_train_accuracy is None:
        return np.zeros(len(accuracy), dtype=bool)
    return np.asarray(accuracy >= config.stop_at_train_accuracy)


def models_to_validate(config: TrainConfig, idx: np.ndarray, stop_now: np.ndarray,
                       epoch: int) -> np.ndarray:
    """The models of ``idx`` (active) to validate at the end of ``epoch``."""
    last = epoch == config.max_epochs - 1
    return idx[stop_now | last | ((epoch + 1) % config.eval_every == 0)]


def record_validation(records: Sequence[ModelRecord], state: TensorState, models: np.ndarray,
                      val_loss: np.ndarray, epoch: int, select_best: str) -> None:
    """Update the best validation loss, patience counter and (for ``"val_loss"``) the kept
    weights and epoch of ``models`` after validating them at ``epoch``."""
    improved = np.array([v < records[k].best_val for k, v in zip(models, val_loss,
                                                                  strict=True)], dtype=bool)
    imp = models[improved]
    if select_best == "val_loss":
        state.keep(imp)
    for k, v, better in zip(models, val_loss, improved, strict=True):
        rec = records[k]
        if better:
            if select_best == "val_loss":
                rec.best_epoch = epoch
            rec.best_val = float(v)
            rec.since_best = 0
        else:
            rec.since_best += 1


def stop_reason(record: ModelRecord, reached: bool, config: TrainConfig, epoch: int) -> str:
    """Why the model stops at the end of ``epoch`` (``""``: it goes on)."""
    if reached:
        return "train_accuracy"
    if config.patience is not None and record.since_best >= config.patience:
        return "patience"
    if epoch == config.max_epochs - 1:
        return "max_epochs"
    return ""


def apply_stops(records: Sequence[ModelRecord], idx: np.ndarray, reached: np.ndarray,
                config: TrainConfig, epoch: int) -> None:
    """Stop the models of ``idx`` (active this epoch) that should stop at its end."""
    for k, hit in zip(idx, reached, strict=True):
        reason = stop_reason(records[k], bool(hit), config, epoch)
        if reason:
            records[k].stop(epoch, reason)


def finish_selection(config: TrainConfig, state: TensorState,
                     records: Sequence[ModelRecord]) -> None:
    """For ``select_best="last"``: keep the final weights, kept epoch = last epoch trained."""
    if config.select_best == "last":
        state.keep_all()
        for rec in records:
            rec.best_epoch = rec.stopped_epoch
