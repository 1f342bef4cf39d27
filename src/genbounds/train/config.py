"""What a training run is asked to do and what it returns: :class:`TrainConfig`,
:class:`TrainResult`, :class:`TrainingDivergedError`, the loss names, the learning-rate schedule
and the device choice. No tensors are computed here."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
import torch

from genbounds.validation import check_choice, check_int, is_number

__all__ = [
    "LOSSES",
    "LossName",
    "TrainConfig",
    "TrainResult",
    "TrainingDivergedError",
    "lr_schedule",
    "resolve_device",
]

LOSSES = ("cross_entropy", "bce_logits_onehot", "bce_logits", "logistic", "mse")
LossName = Literal["cross_entropy", "bce_logits_onehot", "bce_logits", "logistic", "mse"]


class TrainingDivergedError(RuntimeError):
    """Raised when a model's training or validation loss becomes non-finite."""

    def __init__(self, model_index: int, epoch: int, what: str = "training loss") -> None:
        self.model_index = int(model_index)
        self.epoch = int(epoch)
        super().__init__(
            f"model {self.model_index} diverged at epoch {self.epoch}: non-finite {what}"
        )


def _check_optional_int(value: Any, name: str) -> None:
    if value is not None:
        try:
            check_int(value, name)
        except ValueError:
            raise ValueError(f"{name} must be an integer >= 1 or None, got {value!r}") from None


def _check_interval(value: Any, name: str, lo: float, hi: float, closed_lo: bool,
                    closed_hi: bool) -> None:
    ok = is_number(value) and math.isfinite(float(value))
    if ok:
        v = float(value)
        ok = (v >= lo if closed_lo else v > lo) and (v <= hi if closed_hi else v < hi)
    if not ok:
        left, right = "[" if closed_lo else "(", "]" if closed_hi else ")"
        raise ValueError(f"{name} must be in {left}{lo:g}, {hi:g}{right}, got {value!r}")


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of :func:`~genbounds.train.train_ensemble` (shared by all K models).

    Attributes
    ----------
    optimizer:
        ``"gd"`` (full-batch gradient descent; ``batch_size`` must be None), ``"sgd"``
        (minibatches of ``batch_size``; None means full batch) or ``"adam"`` (minibatches
        or full batch; ``momentum`` must be 0, use ``adam_beta1``).
    lr:
        Initial learning rate, > 0.
    momentum:
        Momentum coefficient ``mu`` in [0, 1).
    momentum_style:
        ``"keras"`` (``v <- mu v - lr g; p <- p + v``) or ``"torch"``
        (``b <- mu b + g; p <- p - lr b``). They coincide when the learning rate is constant.
        For Adam it selects where ``eps`` enters (see :mod:`genbounds.train.step`).
    adam_beta1, adam_beta2, adam_eps:
        Adam's moment decay rates and epsilon (defaults: Keras' 0.9, 0.999, 1e-7).
    lr_decay, lr_floor:
        Per-epoch schedule ``lr_e = max(lr_floor, lr_decay * lr_{e-1})`` (``lr_decay`` in
        (0, 1], ``lr_floor >= 0``).
    decay_before_first_epoch:
        True (default): ``lr_{-1} = lr``, so epoch 0 already uses ``max(lr_floor,
        lr * lr_decay)`` (Keras ``LearningRateScheduler`` semantics, which update at every
        epoch's start). False: epoch 0 uses ``lr``.
    batch_size:
        Minibatch size (>= 1) or None for full batch.
    max_epochs:
        Upper limit on epochs, >= 1.
    stop_at_train_accuracy:
        Stop a model at the end of the first epoch whose training accuracy (see
        ``stop_metric``) is >= this value; None disables it.
    stop_metric:
        ``"running"`` (default, Keras' epoch ``accuracy``: averaged over the epoch's batches
        during training) or ``"exact"`` (training set re-evaluated at the end of the epoch).
    select_best:
        ``"val_loss"`` keeps each model's weights from its epoch with the lowest validation
        loss (first one on ties); ``"last"`` keeps its final weights.
    patience:
        Stop a model after this many consecutive evaluations without a strictly lower
        validation loss; None disables it.
    eval_every:
        Validate every this many epochs (and always at a model's last epoch).
    eval_batch_size:
        Samples per model per no-grad evaluation chunk; None chooses it from the memory budget
        (see :mod:`genbounds.train.memory`).
    micro_batch_size:
        Samples per model per gradient micro-batch. A (mini)batch larger than this is split
        into micro-batches whose gradients are accumulated, which gives the batch's gradient
        exactly up to floating-point rounding. None (default) derives it from the memory budget.
    max_batch_memory_bytes:
        Memory budget for one micro-batch (activations of all K models); None (default) reads
        the free memory of the device and takes ``memory_fraction`` of it.
    memory_fraction:
        Fraction in (0, 1] of the device's free memory used as the budget when
        ``max_batch_memory_bytes`` is None.
    device:
        ``"auto"`` (CUDA when available), ``"cpu"`` or ``"cuda"``.
    progress:
        Show a tqdm progress bar over epochs.
    precision:
        ``"fp32"`` (default: exact float32 arithmetic everywhere), ``"tf32"`` (on CUDA, float32
        matrix products and convolutions in TensorFloat-32, 10-bit mantissa inputs with float32
        accumulation; no effect on CPU) or ``"bf16"`` (forward passes under
        ``torch.autocast(dtype=torch.bfloat16)`` on the training device; parameters, optimizer
        state, losses and their sums stay float32/float64). Reduced precision is opt-in: use it
        only where ``tests/test_perf_precision.py`` shows on your GPU that the reported numbers
        are unchanged to the printed digits (see :mod:`genbounds.train.precision`).
    """

    PROTOCOL_VERSION: ClassVar[int] = 1

    optimizer: Literal["gd", "sgd", "adam"] = "sgd"
    lr: float = 0.01
    momentum: float = 0.0
    momentum_style: Literal["keras", "torch"] = "keras"
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_eps: float = 1e-7
    lr_decay: float = 1.0
    lr_floor: float = 0.0
    decay_before_first_epoch: bool = True
    batch_size: int | None = None
    max_epochs: int = 100
    stop_at_train_accuracy: float | None = None
    stop_metric: Literal["running", "exact"] = "running"
    select_best: Literal["val_loss", "last"] = "val_loss"
    patience: int | None = None
    eval_every: int = 1
    eval_batch_size: int | None = None
    micro_batch_size: int | None = None
    max_batch_memory_bytes: int | None = None
    memory_fraction: float = 0.5
    device: str = "auto"
    progress: bool = False
    precision: Literal["fp32", "tf32", "bf16"] = "fp32"

    def __post_init__(self) -> None:
        self._check_optimizer()
        self._check_schedule()
        self._check_batches()
        self._check_stopping()
        if self.device not in ("auto", "cpu", "cuda") and not str(self.device).startswith(
            "cuda:"
        ):
            raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', got {self.device!r}")
        if not isinstance(self.progress, bool):
            raise ValueError(f"progress must be a bool, got {self.progress!r}")
        check_choice(self.precision, "precision", ("fp32", "tf32", "bf16"))

    def _check_optimizer(self) -> None:
        check_choice(self.optimizer, "optimizer", ("gd", "sgd", "adam"))
        if not (is_number(self.lr) and self.lr > 0 and math.isfinite(self.lr)):
            raise ValueError(f"lr must be a finite number > 0, got {self.lr!r}")
        _check_interval(self.momentum, "momentum", 0.0, 1.0, True, False)
        if self.optimizer == "adam" and self.momentum != 0:
            raise ValueError(
                f"momentum must be 0 for optimizer='adam' (use adam_beta1), got {self.momentum}"
            )
        _check_interval(self.adam_beta1, "adam_beta1", 0.0, 1.0, True, False)
        _check_interval(self.adam_beta2, "adam_beta2", 0.0, 1.0, True, False)
        if not (is_number(self.adam_eps) and 0.0 < self.adam_eps < math.inf):
            raise ValueError(f"adam_eps must be a finite number > 0, got {self.adam_eps!r}")
        check_choice(self.momentum_style, "momentum_style", ("keras", "torch"))

    def _check_schedule(self) -> None:
        _check_interval(self.lr_decay, "lr_decay", 0.0, 1.0, False, True)
        if not (is_number(self.lr_floor) and 0.0 <= self.lr_floor < math.inf):
            raise ValueError(f"lr_floor must be a finite number >= 0, got {self.lr_floor!r}")
        if not isinstance(self.decay_before_first_epoch, bool):
            raise ValueError(
                f"decay_before_first_epoch must be a bool, got {self.decay_before_first_epoch!r}"
            )
        check_int(self.max_epochs, "max_epochs")

    def _check_batches(self) -> None:
        _check_optional_int(self.batch_size, "batch_size")
        if self.optimizer == "gd" and self.batch_size is not None:
            raise ValueError(
                f"batch_size must be None for optimizer='gd' (full batch), got {self.batch_size}"
            )
        _check_optional_int(self.eval_batch_size, "eval_batch_size")
        _check_optional_int(self.micro_batch_size, "micro_batch_size")
        _check_optional_int(self.max_batch_memory_bytes, "max_batch_memory_bytes")
        _check_interval(self.memory_fraction, "memory_fraction", 0.0, 1.0, False, True)

    def _check_stopping(self) -> None:
        if self.stop_at_train_accuracy is not None:
            _check_interval(self.stop_at_train_accuracy, "stop_at_train_accuracy", 0.0, 1.0,
                            False, True)
        check_choice(self.stop_metric, "stop_metric", ("running", "exact"))
        check_choice(self.select_best, "select_best", ("val_loss", "last"))
        _check_optional_int(self.patience, "patience")
        check_int(self.eval_every, "eval_every")


@dataclass
class TrainResult:
    """What :func:`~genbounds.train.train_ensemble` returns (arrays have the model dimension
    K first).

    Attributes
    ----------
    history:
        ``(K, epochs_run)`` float arrays, NaN where a model was not trained (after it
        stopped) or not evaluated: ``"loss"``, ``"accuracy"`` (running, Keras' epoch logs),
        ``"val_loss"``, ``"val_accuracy"``, ``"lr"``, and ``"train_loss_exact"``,
        ``"train_accuracy_exact"`` when ``stop_metric="exact"``.
    best_epoch:
        ``(K,)`` 0-based index of the kept epoch.
    stopped_epoch:
        ``(K,)`` 0-based index of the last epoch each model trained (``epochs = +1``).
    stop_reason:
        ``(K,)`` strings: ``"train_accuracy"``, ``"patience"`` or ``"max_epochs"``.
    reached_train_accuracy:
        ``(K,)`` bool: the model stopped because it reached ``stop_at_train_accuracy``.
    best_state, final_state, initial_state:
        Parameter name -> CPU tensor with leading K: kept weights, final weights, and the
        weights before the first step (what distance-from-initialisation bounds need).
    metrics:
        ``(K,)`` arrays at the kept weights, evaluated exactly (no grad) after training:
        ``"train_loss"``, ``"train_accuracy"`` and, with validation data, ``"val_loss"``,
        ``"val_accuracy"``.
    wall_time_s, device, epochs_run:
        Wall-clock seconds, the device used, and the number of epochs the ensemble ran.
    micro_batch_size, eval_batch_size:
        Samples per model per gradient micro-batch and per evaluation chunk that were used.
    """

    history: dict[str, np.ndarray]
    best_epoch: np.ndarray
    stopped_epoch: np.ndarray
    stop_reason: np.ndarray
    reached_train_accuracy: np.ndarray
    best_state: dict[str, torch.Tensor]
    final_state: dict[str, torch.Tensor]
    metrics: dict[str, np.ndarray]
    wall_time_s: float
    device: str
    epochs_run: int
    config: TrainConfig = field(repr=False, default_factory=TrainConfig)
    loss: str = "cross_entropy"
    initial_state: dict[str, torch.Tensor] = field(repr=False, default_factory=dict)
    micro_batch_size: int = 0
    eval_batch_size: int = 0


def resolve_device(device: str) -> torch.device:
    """``"auto"`` -> CUDA when available, else CPU; ``"cuda"`` without CUDA -> ValueError."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if str(device).startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} requested but CUDA is not available")
    return torch.device(device)


def lr_schedule(config: TrainConfig, n_epochs: int) -> np.ndarray:
    """Learning rate of each of the first ``n_epochs`` epochs under ``config`` (float64)."""
    out = np.empty(n_epochs)
    lr = float(config.lr)
    for e in range(n_epochs):
        if e > 0 or config.decay_before_first_epoch:
            lr = max(float(config.lr_floor), lr * float(config.lr_decay))
        out[e] = lr
    return out
