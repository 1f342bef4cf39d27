"""The ensemble training engine: K independent models trained as one batched computation.

A model from :mod:`genbounds.models` holds K independent models (parameters with a leading
model dimension). :func:`train_ensemble` trains all of them at once, each on its own data
``X_train[k]``, with its own minibatch order, its own early stopping and its own kept epoch,
and returns the same numbers (to floating-point tolerance) as training each model alone with
the same seeds (tested in ``tests/test_train.py``).

What one epoch does, for every model still active
-------------------------------------------------
1. The learning rate of the epoch is set (multiplicative decay with a floor; by default the
   decay is applied at the *start* of every epoch, including the first, which is what Keras'
   ``LearningRateScheduler`` callback does: the authors' sparse-majority run trains epoch 0
   with ``0.01 * 0.999``).
2. The model's training set is shuffled with the model's own generator (a fresh permutation
   per epoch, like ``keras.Model.fit(shuffle=True)``) and cut into batches of ``batch_size``,
   the last one possibly smaller (Keras keeps the partial batch). Full-batch gradient descent
   (``batch_size=None``) does not shuffle.
3. Each batch: forward, per-model mean loss over the batch, gradient, and an SGD step with
   momentum written out here (not ``torch.optim``) so that it acts on the batched
   parameters and only on the active models:

   * ``momentum_style="keras"`` (``keras.optimizers.SGD``): ``v <- mu v - lr g``,
     ``p <- p + v``;
   * ``momentum_style="torch"`` (``torch.optim.SGD``, dampening 0, no Nesterov):
     ``b <- mu b + g``, ``p <- p - lr b``.

   ``optimizer="adam"`` (Kingma & Ba, 2015) is also available, in the same two styles:
   ``m <- b1 m + (1 - b1) g``, ``v <- b2 v + (1 - b2) g^2`` at step ``t``, then
   ``p <- p - lr sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps)`` (``"keras"``,
   ``keras.optimizers.Adam``) or ``p <- p - lr * m_hat / (sqrt(v_hat) + eps)`` with
   ``m_hat = m / (1 - b1^t)``, ``v_hat = v / (1 - b2^t)`` (``"torch"``, ``torch.optim.Adam``);
   they differ only in where ``eps`` enters.

   A stopped model is not part of the computation at all: its parameters and momentum
   buffers keep their exact bits (tested).
4. Training metrics. By default (``stop_metric="running"``) they are what Keras reports as
   the epoch's ``loss`` and ``accuracy``: the average over the epoch of the per-sample loss
   and correctness, each computed during the forward pass of its batch, i.e. with the weights
   *before* that batch's update (the weights change during the epoch). The authors'
   ``PerfectTrainAccCallback`` stops on exactly this number reaching 1.0, so it is the
   default stopping criterion. With ``stop_metric="exact"`` the training set is additionally
   evaluated at the end-of-epoch weights and the stopping rule uses that.
5. Validation (every ``eval_every`` epochs, and at a model's last epoch) in large no-grad
   batches; the model's weights are kept if its validation loss is *strictly* lower than its
   best so far (Keras ``ModelCheckpoint(monitor="val_loss", mode="min",
   save_best_only=True)``), and ``patience`` counts evaluations without improvement.
6. A model stops at the end of the first epoch whose training accuracy is at least
   ``stop_at_train_accuracy``, when its patience runs out, or at ``max_epochs``.

A non-finite training or validation loss raises :class:`TrainingDivergedError` naming the
model and the epoch (checked once per epoch: a NaN anywhere in an epoch propagates into its
running loss).

Accuracy is the fraction of correct predictions: ``argmax`` of the logits against the integer
label for ``"cross_entropy"`` and ``"bce_logits_onehot"`` (Keras resolves ``"accuracy"`` to
categorical accuracy for 2-logit outputs and one-hot labels; ties go to the first index, as
in ``argmax``), ``logit > 0`` against labels in {0, 1} for ``"bce_logits"``, ``sign(f) = y``
for labels in {-1, +1} for ``"logistic"``, and undefined (NaN) for ``"mse"``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

__all__ = [
    "LOSSES",
    "TrainConfig",
    "TrainResult",
    "TrainingDivergedError",
    "evaluate_ensemble",
    "lr_schedule",
    "per_sample_loss",
    "resolve_device",
    "train_ensemble",
]

LOSSES = ("cross_entropy", "bce_logits_onehot", "bce_logits", "logistic", "mse")
LossName = Literal["cross_entropy", "bce_logits_onehot", "bce_logits", "logistic", "mse"]

#: A lazily built input set: ``f(models, start, stop)`` returns the inputs of samples
#: ``start:stop`` for the models with the given (global) indices, shape ``(len(models),
#: stop - start, ...)``. Lets a large validation set be generated chunk by chunk.
InputFn = Callable[[np.ndarray, int, int], torch.Tensor]


class TrainingDivergedError(RuntimeError):
    """Raised when a model's training or validation loss becomes non-finite."""

    def __init__(self, model_index: int, epoch: int, what: str = "training loss") -> None:
        self.model_index = int(model_index)
        self.epoch = int(epoch)
        super().__init__(
            f"model {self.model_index} diverged at epoch {self.epoch}: non-finite {what}"
        )


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of :func:`train_ensemble` (shared by all K models).

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
        For Adam it selects where ``eps`` enters (see the module docstring).
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
        Samples per model per no-grad evaluation batch; None chooses it from a memory budget.
    device:
        ``"auto"`` (CUDA when available), ``"cpu"`` or ``"cuda"``.
    progress:
        Show a tqdm progress bar over epochs.
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
    device: str = "auto"
    progress: bool = False

    def __post_init__(self) -> None:
        if self.optimizer not in ("gd", "sgd", "adam"):
            raise ValueError(
                f"optimizer must be 'gd', 'sgd' or 'adam', got {self.optimizer!r}"
            )
        if not (_is_real(self.lr) and self.lr > 0 and math.isfinite(self.lr)):
            raise ValueError(f"lr must be a finite number > 0, got {self.lr!r}")
        if not (_is_real(self.momentum) and 0.0 <= self.momentum < 1.0):
            raise ValueError(f"momentum must be in [0, 1), got {self.momentum!r}")
        if self.optimizer == "adam" and self.momentum != 0:
            raise ValueError(
                f"momentum must be 0 for optimizer='adam' (use adam_beta1), got {self.momentum}"
            )
        for name in ("adam_beta1", "adam_beta2"):
            val = getattr(self, name)
            if not (_is_real(val) and 0.0 <= val < 1.0):
                raise ValueError(f"{name} must be in [0, 1), got {val!r}")
        if not (_is_real(self.adam_eps) and 0.0 < self.adam_eps < math.inf):
            raise ValueError(f"adam_eps must be a finite number > 0, got {self.adam_eps!r}")
        if self.momentum_style not in ("keras", "torch"):
            raise ValueError(
                f"momentum_style must be 'keras' or 'torch', got {self.momentum_style!r}"
            )
        if not (_is_real(self.lr_decay) and 0.0 < self.lr_decay <= 1.0):
            raise ValueError(f"lr_decay must be in (0, 1], got {self.lr_decay!r}")
        if not (_is_real(self.lr_floor) and 0.0 <= self.lr_floor < math.inf):
            raise ValueError(f"lr_floor must be a finite number >= 0, got {self.lr_floor!r}")
        if not isinstance(self.decay_before_first_epoch, bool):
            raise ValueError(
                f"decay_before_first_epoch must be a bool, got {self.decay_before_first_epoch!r}"
            )
        if self.batch_size is not None and not _is_pos_int(self.batch_size):
            raise ValueError(f"batch_size must be an integer >= 1 or None, got {self.batch_size!r}")
        if self.optimizer == "gd" and self.batch_size is not None:
            raise ValueError(
                f"batch_size must be None for optimizer='gd' (full batch), got {self.batch_size}"
            )
        if not _is_pos_int(self.max_epochs):
            raise ValueError(f"max_epochs must be an integer >= 1, got {self.max_epochs!r}")
        if self.stop_at_train_accuracy is not None and not (
            _is_real(self.stop_at_train_accuracy) and 0.0 < self.stop_at_train_accuracy <= 1.0
        ):
            raise ValueError(
                "stop_at_train_accuracy must be in (0, 1] or None, got "
                f"{self.stop_at_train_accuracy!r}"
            )
        if self.stop_metric not in ("running", "exact"):
            raise ValueError(
                f"stop_metric must be 'running' or 'exact', got {self.stop_metric!r}"
            )
        if self.select_best not in ("val_loss", "last"):
            raise ValueError(
                f"select_best must be 'val_loss' or 'last', got {self.select_best!r}"
            )
        if self.patience is not None and not _is_pos_int(self.patience):
            raise ValueError(f"patience must be an integer >= 1 or None, got {self.patience!r}")
        if not _is_pos_int(self.eval_every):
            raise ValueError(f"eval_every must be an integer >= 1, got {self.eval_every!r}")
        if self.eval_batch_size is not None and not _is_pos_int(self.eval_batch_size):
            raise ValueError(
                f"eval_batch_size must be an integer >= 1 or None, got {self.eval_batch_size!r}"
            )
        if self.device not in ("auto", "cpu", "cuda") and not str(self.device).startswith(
            "cuda:"
        ):
            raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', got {self.device!r}")
        if not isinstance(self.progress, bool):
            raise ValueError(f"progress must be a bool, got {self.progress!r}")


@dataclass
class TrainResult:
    """What :func:`train_ensemble` returns (all arrays have the model dimension K first).

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
    best_state, final_state:
        Parameter name -> CPU tensor with leading K: kept weights and final weights.
    metrics:
        ``(K,)`` arrays at the kept weights, evaluated exactly (no grad) after training:
        ``"train_loss"``, ``"train_accuracy"`` and, with validation data, ``"val_loss"``,
        ``"val_accuracy"``.
    wall_time_s, device, epochs_run:
        Wall-clock seconds, the device used, and the number of epochs the ensemble ran.
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


# ---------------------------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------------------------


def _is_real(x: Any) -> bool:
    return isinstance(x, int | float | np.floating | np.integer) and not isinstance(x, bool)


def _is_pos_int(x: Any) -> bool:
    return isinstance(x, int | np.integer) and not isinstance(x, bool) and bool(x >= 1)


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


def _check_labels(loss: str, y: torch.Tensor, name: str) -> torch.Tensor:
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


def _as_tensor(x: Any, name: str, dtype: torch.dtype | None = None) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        t = x.detach()
    elif isinstance(x, np.ndarray):
        t = torch.from_numpy(np.ascontiguousarray(x))
    else:
        raise ValueError(f"{name} must be a torch.Tensor or numpy array, got {type(x).__name__}")
    if dtype is not None:
        t = t.to(dtype)
    return t


def _auto_chunk(n_models: int, sample_numel: int, device: torch.device, n: int) -> int:
    budget = 2**26 if device.type == "cuda" else 2**23  # elements of input per chunk
    return int(max(1, min(n, budget // max(1, n_models * sample_numel))))


class _Inputs:
    """Uniform access to an input set: a (K, N, ...) tensor or a lazy :data:`InputFn`."""

    def __init__(self, X: Any, n: int, K: int, name: str, dtype: torch.dtype,
                 device: torch.device) -> None:
        self.name = name
        self.dtype = dtype
        self.device = device
        self.fn: InputFn | None = None
        self.X: torch.Tensor | None = None
        if callable(X) and not isinstance(X, torch.Tensor | np.ndarray):
            self.fn = X
            probe = self.get(np.arange(1), 0, 1)
            if probe.ndim < 2 or probe.shape[:2] != (1, 1):
                raise ValueError(
                    f"{name}(models, start, stop) must return (len(models), stop - start, ...); "
                    f"got {tuple(probe.shape)} for one model and one sample"
                )
            self.sample_shape = tuple(probe.shape[2:])
        else:
            t = _as_tensor(X, name)
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


def _subset(params: dict[str, torch.Tensor], idx_t: torch.Tensor | None) -> dict[str, torch.Tensor]:
    if idx_t is None:
        return params
    return {n: p.index_select(0, idx_t) for n, p in params.items()}


@torch.no_grad()
def _evaluate(
    model: nn.Module,
    params: dict[str, torch.Tensor],
    inputs: _Inputs,
    y: torch.Tensor,
    models: np.ndarray,
    loss: str,
    chunk: int | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Mean loss and accuracy (float64, shape (len(models),)) of the given models."""
    n = y.shape[1]
    Km = len(models)
    all_models = Km == y.shape[0]
    idx_t = None if all_models else torch.as_tensor(models, device=y.device)
    p_sub = _subset(params, idx_t)
    y_sub = y if idx_t is None else y.index_select(0, idx_t)
    if chunk is None:
        chunk = _auto_chunk(Km, inputs.sample_numel, y.device, n)
    loss_sum = torch.zeros(Km, dtype=torch.float64, device=y.device)
    correct = torch.zeros(Km, dtype=torch.float64, device=y.device)
    has_acc = True
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        out = functional_call(model, p_sub, (inputs.get(models, start, stop),))
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
) -> dict[str, np.ndarray]:
    """Mean loss and accuracy of every model of an ensemble on its own data (no grad).

    ``X`` is ``(K, N, ...)`` (or an :data:`InputFn`), ``y`` is ``(K, N)``. Returns
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
    y_t = _as_tensor(y, "y")
    if y_t.ndim != 2 or y_t.shape[0] != K:
        raise ValueError(f"y must have shape (K, N) with K = {K}; got {tuple(y_t.shape)}")
    y_t = _check_labels(loss, y_t, "y").to(dev)
    inputs = _Inputs(X, y_t.shape[1], K, "X", dtype, dev)
    params = {n: p.to(dev) for n, p in params.items()}
    params.update(_per_model_buffers(model.to(dev), K))
    if batch_size is not None and not _is_pos_int(batch_size):
        raise ValueError(f"batch_size must be an integer >= 1 or None, got {batch_size!r}")
    losses, accs = _evaluate(model.to(dev), params, inputs, y_t, np.arange(K), loss, batch_size)
    return {"loss": losses, "accuracy": accs}


class _History:
    def __init__(self, K: int, keys: Sequence[str], capacity: int) -> None:
        self.K = K
        self.n = 0
        self.data = {k: np.full((K, capacity), np.nan) for k in keys}

    def new_epoch(self) -> int:
        cap = next(iter(self.data.values())).shape[1]
        if self.n == cap:
            for k, v in self.data.items():
                grown = np.full((self.K, 2 * cap), np.nan)
                grown[:, :cap] = v
                self.data[k] = grown
        self.n += 1
        return self.n - 1

    def result(self) -> dict[str, np.ndarray]:
        return {k: v[:, : self.n].copy() for k, v in self.data.items()}


def _per_model_buffers(model: nn.Module, K: int) -> dict[str, torch.Tensor]:
    bufs = {n: b for n, b in model.named_buffers()}
    for n, b in bufs.items():
        if b.ndim == 0 or b.shape[0] != K:
            raise ValueError(
                f"model buffer {n!r} must have the leading model dimension K = {K}; "
                f"got shape {tuple(b.shape)}"
            )
    return bufs


def _shuffle_rngs(model: nn.Module, K: int, seed: int | Sequence[int] | None) -> list[Any]:
    if seed is None or isinstance(seed, int | np.integer):
        if isinstance(seed, bool):
            raise ValueError(f"seed must be an int, a sequence of K ints or None, got {seed!r}")
        base = 0 if seed is None else int(seed)
        if base < 0:
            raise ValueError(f"seed must be >= 0, got {seed}")
        ident = list(getattr(model, "seeds", range(K)))
        if len(ident) != K:
            ident = list(range(K))
        return [np.random.default_rng([base, int(s)]) for s in ident]
    seeds = list(seed)
    if len(seeds) != K:
        raise ValueError(f"seed must have length K = {K} when a sequence, got {len(seeds)}")
    for s in seeds:
        if not isinstance(s, int | np.integer) or isinstance(s, bool) or s < 0:
            raise ValueError(f"seed entries must be non-negative integers, got {s!r}")
    return [np.random.default_rng(int(s)) for s in seeds]


# ---------------------------------------------------------------------------------------------
# the engine
# ---------------------------------------------------------------------------------------------


def train_ensemble(
    model: nn.Module,
    X_train: Any,
    y_train: Any,
    X_val: Any = None,
    y_val: Any = None,
    loss: LossName = "cross_entropy",
    config: TrainConfig | None = None,
    seed: int | Sequence[int] | None = None,
) -> TrainResult:
    """Train the K models of ``model`` at once, each on its own data, with per-model stopping.

    Parameters
    ----------
    model:
        An ensemble from :mod:`genbounds.models` (every parameter has leading size K; the
        forward pass maps ``(K, B, ...)`` to ``(K, B)`` or ``(K, B, C)``). It is moved to the
        training device, and on return holds the kept weights (``best_state``).
    X_train, y_train:
        ``(K, N, ...)`` inputs and ``(K, N)`` labels: model ``k`` trains on ``X_train[k]``.
    X_val, y_val:
        Validation inputs ``(K, N_val, ...)`` (or a lazy :data:`InputFn`) and labels
        ``(K, N_val)``; both None for no validation (then ``select_best`` must be "last" and
        ``patience`` None).
    loss:
        One of :data:`LOSSES` (see :func:`per_sample_loss`).
    config:
        :class:`TrainConfig` (default: ``TrainConfig()``).
    seed:
        Minibatch-order seeds. A sequence of K ints seeds model ``k``'s shuffling generator
        with ``seed[k]``; an int (or None = 0) ``s`` seeds it with ``(s, model.seeds[k])``, so a
        model's minibatch order depends only on ``s`` and its own initialisation seed and
        model ``k`` of an ensemble trains exactly like the single model built with its seed.

    Returns
    -------
    TrainResult
    """
    t0 = time.perf_counter()
    cfg = TrainConfig() if config is None else config
    if not isinstance(cfg, TrainConfig):
        raise ValueError(f"config must be a TrainConfig, got {type(cfg).__name__}")
    if not isinstance(model, nn.Module):
        raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    names = [n for n, _ in model.named_parameters()]
    if not names:
        raise ValueError("model has no parameters")
    first = next(iter(model.parameters()))
    K = int(first.shape[0])
    if any(p.ndim == 0 or p.shape[0] != K for p in model.parameters()):
        raise ValueError("model parameters must all have the same leading model dimension K")
    device = resolve_device(cfg.device)
    dtype = first.dtype

    y_tr = _as_tensor(y_train, "y_train")
    if y_tr.ndim != 2 or y_tr.shape[0] != K:
        raise ValueError(f"y_train must have shape (K, N) with K = {K}; got {tuple(y_tr.shape)}")
    N = int(y_tr.shape[1])
    if N < 1:
        raise ValueError("y_train must contain at least one sample per model")
    y_tr = _check_labels(loss, y_tr, "y_train").to(device)
    if callable(X_train) and not isinstance(X_train, torch.Tensor | np.ndarray):
        raise ValueError("X_train must be a tensor or array of shape (K, N, ...), not a callable")
    train_in = _Inputs(X_train, N, K, "X_train", dtype, device)
    assert train_in.X is not None
    Xtr = train_in.X

    if (X_val is None) != (y_val is None):
        raise ValueError("X_val and y_val must be given together (or both None)")
    has_val = X_val is not None
    if not has_val and cfg.select_best == "val_loss":
        raise ValueError("select_best='val_loss' needs X_val and y_val")
    if not has_val and cfg.patience is not None:
        raise ValueError("patience needs X_val and y_val")
    if has_val:
        y_va = _as_tensor(y_val, "y_val")
        if y_va.ndim != 2 or y_va.shape[0] != K or y_va.shape[1] < 1:
            raise ValueError(
                f"y_val must have shape (K, N_val) with K = {K}; got {tuple(y_va.shape)}"
            )
        y_va = _check_labels(loss, y_va, "y_val").to(device)
        val_in = _Inputs(X_val, int(y_va.shape[1]), K, "X_val", dtype, device)
        if val_in.sample_shape != train_in.sample_shape:
            raise ValueError(
                f"X_val samples have shape {val_in.sample_shape}, X_train samples "
                f"{train_in.sample_shape}"
            )
    if loss == "mse" and cfg.stop_at_train_accuracy is not None:
        raise ValueError("stop_at_train_accuracy needs a classification loss, not 'mse'")
    rngs = _shuffle_rngs(model, K, seed)

    model.to(device)
    params = {n: p.detach().clone() for n, p in model.named_parameters()}
    buffers = _per_model_buffers(model, K)
    velocity = {n: torch.zeros_like(p) for n, p in params.items()}
    second = (
        {n: torch.zeros_like(p) for n, p in params.items()} if cfg.optimizer == "adam" else {}
    )
    step = 0  # optimizer steps taken by every active model (they move in lockstep)
    best = {n: p.clone() for n, p in params.items()}
    best_val = np.full(K, np.inf)
    since_best = np.zeros(K, dtype=np.int64)
    best_epoch = np.full(K, -1, dtype=np.int64)
    stopped_epoch = np.full(K, -1, dtype=np.int64)
    stop_reason = np.array([""] * K, dtype=object)
    reached = np.zeros(K, dtype=bool)
    active = np.ones(K, dtype=bool)

    keys = ["loss", "accuracy", "val_loss", "val_accuracy", "lr"]
    if cfg.stop_metric == "exact":
        keys += ["train_loss_exact", "train_accuracy_exact"]
    hist = _History(K, keys, min(cfg.max_epochs, 1024))
    lrs = lr_schedule(cfg, cfg.max_epochs)
    mu = float(cfg.momentum)
    bs = N if cfg.batch_size is None else min(int(cfg.batch_size), N)
    shuffle = cfg.batch_size is not None

    bar = None
    if cfg.progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=cfg.max_epochs, desc="epochs", leave=False)

    try:
        for epoch in range(cfg.max_epochs):
            idx = np.flatnonzero(active)
            if len(idx) == 0:
                break
            e = hist.new_epoch()
            lr = float(lrs[epoch])
            full = len(idx) == K
            idx_t = None if full else torch.as_tensor(idx, device=device)
            Km = len(idx)
            if shuffle:
                perm = torch.as_tensor(
                    np.stack([rngs[k].permutation(N) for k in idx]), device=device
                )
                rows = torch.as_tensor(idx, device=device)[:, None]
            run_loss = torch.zeros(Km, dtype=torch.float64, device=device)
            run_correct = torch.zeros(Km, dtype=torch.float64, device=device)
            has_acc = True
            for start in range(0, N, bs):
                stop = min(N, start + bs)
                if shuffle:
                    b_idx = perm[:, start:stop]
                    Xb, yb = Xtr[rows, b_idx], y_tr[rows, b_idx]
                elif full:
                    Xb, yb = Xtr, y_tr
                else:
                    assert idx_t is not None  # not full: a subset of the models is active
                    Xb, yb = Xtr.index_select(0, idx_t), y_tr.index_select(0, idx_t)
                if full:
                    p_in = {n: p.requires_grad_(True) for n, p in params.items()}
                else:
                    assert idx_t is not None
                    p_in = {
                        n: p.index_select(0, idx_t).requires_grad_(True)
                        for n, p in params.items()
                    }
                out = functional_call(model, {**p_in, **_subset(buffers, idx_t)}, (Xb,))
                per, ok = per_sample_loss(loss, out, yb)
                grads = torch.autograd.grad(per.mean(dim=1).sum(), list(p_in.values()))
                with torch.no_grad():
                    run_loss += per.detach().sum(dim=1, dtype=torch.float64)
                    if ok is None:
                        has_acc = False
                    else:
                        run_correct += ok.sum(dim=1, dtype=torch.float64)
                    for n, g in zip(p_in, grads, strict=True):
                        if cfg.optimizer == "adam":
                            _adam_step(params[n], velocity[n], second[n], g, idx_t, lr,
                                       cfg, step + 1)
                        else:
                            _sgd_step(params[n], velocity[n], g, idx_t, lr, mu,
                                      cfg.momentum_style)
                step += 1
                if full:
                    for p in params.values():
                        p.requires_grad_(False)

            # ---- end of epoch: training metrics (Keras' running means) ----
            losses = (run_loss / N).cpu().numpy()
            accs = (run_correct / N).cpu().numpy() if has_acc else np.full(Km, np.nan)
            bad = ~np.isfinite(losses)
            if bad.any():
                raise TrainingDivergedError(int(idx[np.flatnonzero(bad)[0]]), epoch)
            hist.data["loss"][idx, e] = losses
            hist.data["accuracy"][idx, e] = accs
            hist.data["lr"][idx, e] = lr
            stop_acc_metric = accs
            if cfg.stop_metric == "exact":
                ex_l, ex_a = _evaluate(model, {**params, **buffers}, train_in, y_tr, idx, loss,
                                       cfg.eval_batch_size)
                hist.data["train_loss_exact"][idx, e] = ex_l
                hist.data["train_accuracy_exact"][idx, e] = ex_a
                stop_acc_metric = ex_a
            stop_now = np.zeros(Km, dtype=bool)
            if cfg.stop_at_train_accuracy is not None:
                stop_now = stop_acc_metric >= cfg.stop_at_train_accuracy
            last = epoch == cfg.max_epochs - 1

            # ---- validation and the kept epoch ----
            if has_val:
                do_eval = stop_now | last | ((epoch + 1) % cfg.eval_every == 0)
                ev = idx[do_eval]
                if len(ev):
                    v_l, v_a = _evaluate(model, {**params, **buffers}, val_in, y_va, ev, loss,
                                         cfg.eval_batch_size)
                    bad = ~np.isfinite(v_l)
                    if bad.any():
                        raise TrainingDivergedError(int(ev[np.flatnonzero(bad)[0]]), epoch,
                                                    "validation loss")
                    hist.data["val_loss"][ev, e] = v_l
                    hist.data["val_accuracy"][ev, e] = v_a
                    improved = v_l < best_val[ev]
                    imp = ev[improved]
                    if cfg.select_best == "val_loss" and len(imp):
                        imp_t = torch.as_tensor(imp, device=device)
                        for n in params:
                            best[n].index_copy_(0, imp_t, params[n].index_select(0, imp_t))
                        best_epoch[imp] = epoch
                    best_val[imp] = v_l[improved]
                    since_best[imp] = 0
                    since_best[ev[~improved]] += 1

            for j, k in enumerate(idx):
                reason = ""
                if stop_now[j]:
                    reason = "train_accuracy"
                    reached[k] = True
                elif cfg.patience is not None and since_best[k] >= cfg.patience:
                    reason = "patience"
                elif last:
                    reason = "max_epochs"
                if reason:
                    active[k] = False
                    stopped_epoch[k] = epoch
                    stop_reason[k] = reason
            if bar is not None:
                bar.update(1)
                bar.set_postfix(active=int(active.sum()))
    finally:
        if bar is not None:
            bar.close()

    if cfg.select_best == "last":
        best = {n: p.clone() for n, p in params.items()}
        best_epoch = stopped_epoch.copy()

    # load the kept weights into the model and evaluate them exactly
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.copy_(best[n])
    all_idx = np.arange(K)
    metrics: dict[str, np.ndarray] = {}
    kept = {**best, **buffers}
    tl, ta = _evaluate(model, kept, train_in, y_tr, all_idx, loss, cfg.eval_batch_size)
    metrics["train_loss"], metrics["train_accuracy"] = tl, ta
    if has_val:
        vl, va = _evaluate(model, kept, val_in, y_va, all_idx, loss, cfg.eval_batch_size)
        metrics["val_loss"], metrics["val_accuracy"] = vl, va

    return TrainResult(
        history=hist.result(),
        best_epoch=best_epoch,
        stopped_epoch=stopped_epoch,
        stop_reason=stop_reason.astype(str),
        reached_train_accuracy=reached,
        best_state={n: t.detach().cpu().clone() for n, t in best.items()},
        final_state={n: t.detach().cpu().clone() for n, t in params.items()},
        metrics=metrics,
        wall_time_s=time.perf_counter() - t0,
        device=str(device),
        epochs_run=hist.n,
        config=cfg,
        loss=loss,
    )


def _sgd_step(
    p: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    idx_t: torch.Tensor | None,
    lr: float,
    mu: float,
    style: str,
) -> None:
    """One SGD(+momentum) step on the models ``idx_t`` (all when None), in place."""
    if idx_t is None:
        if style == "keras":
            v.mul_(mu).sub_(lr * g)
            p.add_(v)
        else:
            v.mul_(mu).add_(g)
            p.sub_(lr * v)
        return
    v_sub = v.index_select(0, idx_t)
    if style == "keras":
        v_sub = v_sub * mu - lr * g
        v.index_copy_(0, idx_t, v_sub)
        p.index_copy_(0, idx_t, p.index_select(0, idx_t) + v_sub)
    else:
        v_sub = v_sub * mu + g
        v.index_copy_(0, idx_t, v_sub)
        p.index_copy_(0, idx_t, p.index_select(0, idx_t) - lr * v_sub)


def _adam_step(
    p: torch.Tensor,
    m: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    idx_t: torch.Tensor | None,
    lr: float,
    cfg: TrainConfig,
    t: int,
) -> None:
    """One Adam step (step number ``t >= 1``) on the models ``idx_t`` (all when None)."""
    b1, b2, eps = float(cfg.adam_beta1), float(cfg.adam_beta2), float(cfg.adam_eps)
    if idx_t is None:
        m_s, v_s, p_s = m, v, p
    else:
        m_s, v_s, p_s = m.index_select(0, idx_t), v.index_select(0, idx_t), \
            p.index_select(0, idx_t)
    if cfg.momentum_style == "keras":
        m_s = m_s + (g - m_s) * (1.0 - b1)
        v_s = v_s + (g * g - v_s) * (1.0 - b2)
        alpha = lr * math.sqrt(1.0 - b2**t) / (1.0 - b1**t)
        p_s = p_s - alpha * m_s / (torch.sqrt(v_s) + eps)
    else:
        m_s = m_s * b1 + g * (1.0 - b1)
        v_s = v_s * b2 + g * g * (1.0 - b2)
        denom = torch.sqrt(v_s) / math.sqrt(1.0 - b2**t) + eps
        p_s = p_s - (lr / (1.0 - b1**t)) * m_s / denom
    if idx_t is None:
        m.copy_(m_s)
        v.copy_(v_s)
        p.copy_(p_s)
    else:
        m.index_copy_(0, idx_t, m_s)
        v.index_copy_(0, idx_t, v_s)
        p.index_copy_(0, idx_t, p_s)
