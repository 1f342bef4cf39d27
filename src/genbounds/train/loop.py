"""The training loop: K independent models trained as one batched computation.

A model from :mod:`genbounds.models` holds K independent models (parameters with a leading
model dimension). :func:`train_ensemble` trains all of them at once, each on its own data
``X_train[k]``, with its own minibatch order, its own early stopping and its own kept epoch,
and returns the same numbers (to floating-point tolerance) as training each model alone with
the same seeds (tested in ``tests/test_train.py``). The engine knows models only through
``torch.func.functional_call`` on their parameters and buffers: it imports no model family.

What one epoch does, for every model still active
-------------------------------------------------
1. The learning rate of the epoch is set (:func:`~genbounds.train.config.lr_schedule`:
   multiplicative decay with a floor; by default the decay is applied at the *start* of every
   epoch, including the first, which is what Keras' ``LearningRateScheduler`` callback does: the
   authors' sparse-majority run trains epoch 0 with ``0.01 * 0.999``).
2. The model's training set is shuffled with the model's own generator (a fresh permutation
   per epoch, like ``keras.Model.fit(shuffle=True)``) and cut into batches of ``batch_size``,
   the last one possibly smaller (Keras keeps the partial batch). Full-batch gradient descent
   (``batch_size=None``) does not shuffle.
3. Each batch: the gradient of the per-model mean loss over the batch, computed in
   micro-batches that fit the memory budget (:mod:`genbounds.train.memory`,
   :func:`~genbounds.train.step.batch_gradients`), and one optimizer step
   (:func:`~genbounds.train.step.apply_updates`) on the active models only.
4. Training metrics. By default (``stop_metric="running"``) they are what Keras reports as
   the epoch's ``loss`` and ``accuracy``: the average over the epoch of the per-sample loss
   and correctness, each computed during the forward pass of its batch, i.e. with the weights
   *before* that batch's update. The authors' ``PerfectTrainAccCallback`` stops on exactly this
   number reaching 1.0. With ``stop_metric="exact"`` the training set is additionally evaluated
   at the end-of-epoch weights and the stopping rule uses that.
5. Validation, the kept epoch and stopping: :mod:`genbounds.train.stopping`.

A non-finite training or validation loss raises :class:`TrainingDivergedError` naming the
model and the epoch (checked once per epoch: a NaN anywhere in an epoch propagates into its
running loss).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from genbounds.train.config import (
    LOSSES,
    LossName,
    TrainConfig,
    TrainingDivergedError,
    TrainResult,
    lr_schedule,
    resolve_device,
)
from genbounds.train.evaluate import evaluate_models
from genbounds.train.inputs import InputSet, as_tensor, is_lazy
from genbounds.train.losses import check_labels
from genbounds.train.memory import MemoryPlan, plan_memory
from genbounds.train.precision import matmul_precision
from genbounds.train.state import History, ModelRecord, TensorState, subset
from genbounds.train.step import BatchFn, apply_updates, batch_gradients
from genbounds.train.stopping import (
    apply_stops,
    finish_selection,
    models_to_validate,
    reached_target,
    record_validation,
)

__all__ = ["train_ensemble"]


@dataclass
class _Data:
    """Validated training (and validation) data on the training device."""

    train: InputSet
    y_train: torch.Tensor
    val: InputSet | None
    y_val: torch.Tensor | None

    @property
    def n(self) -> int:
        return int(self.y_train.shape[1])


@dataclass
class _Run:
    """Everything one call of :func:`train_ensemble` works on."""

    model: nn.Module
    cfg: TrainConfig
    loss: str
    data: _Data
    rngs: list[Any]
    state: TensorState
    records: list[ModelRecord]
    hist: History
    plan: MemoryPlan
    micro: int
    device: torch.device

    def evaluate(self, inputs: InputSet, y: torch.Tensor,
                 models: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return evaluate_models(self.model, self.state.weights(), inputs, y, models, self.loss,
                               self.cfg.eval_batch_size, self.plan, self.cfg.precision)


# ---------------------------------------------------------------------------------------------
# checking the arguments
# ---------------------------------------------------------------------------------------------


def _model_dims(model: Any) -> tuple[int, torch.dtype]:
    if not isinstance(model, nn.Module):
        raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    params = list(model.parameters())
    if not params:
        raise ValueError("model has no parameters")
    K = int(params[0].shape[0]) if params[0].ndim else 0
    if any(p.ndim == 0 or p.shape[0] != K for p in params):
        raise ValueError("model parameters must all have the same leading model dimension K")
    return K, params[0].dtype


def _labels(y: Any, name: str, K: int, loss: str, device: torch.device) -> torch.Tensor:
    t = as_tensor(y, name)
    if t.ndim != 2 or t.shape[0] != K or t.shape[1] < 1:
        raise ValueError(f"{name} must have shape (K, N) with K = {K} and N >= 1; "
                         f"got {tuple(t.shape)}")
    return check_labels(loss, t, name).to(device)


def _check_data(X_train: Any, y_train: Any, X_val: Any, y_val: Any, loss: str,
                cfg: TrainConfig, K: int, dtype: torch.dtype, device: torch.device) -> _Data:
    y_tr = _labels(y_train, "y_train", K, loss, device)
    if is_lazy(X_train):
        raise ValueError("X_train must be a tensor or array of shape (K, N, ...), not a callable")
    train = InputSet(X_train, int(y_tr.shape[1]), K, "X_train", dtype, device)
    if (X_val is None) != (y_val is None):
        raise ValueError("X_val and y_val must be given together (or both None)")
    if X_val is None and cfg.select_best == "val_loss":
        raise ValueError("select_best='val_loss' needs X_val and y_val")
    if X_val is None and cfg.patience is not None:
        raise ValueError("patience needs X_val and y_val")
    val, y_va = None, None
    if X_val is not None:
        y_va = _labels(y_val, "y_val", K, loss, device)
        val = InputSet(X_val, int(y_va.shape[1]), K, "X_val", dtype, device)
        if val.sample_shape != train.sample_shape:
            raise ValueError(f"X_val samples have shape {val.sample_shape}, X_train samples "
                             f"{train.sample_shape}")
    if loss == "mse" and cfg.stop_at_train_accuracy is not None:
        raise ValueError("stop_at_train_accuracy needs a classification loss, not 'mse'")
    return _Data(train, y_tr, val, y_va)


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
# one epoch
# ---------------------------------------------------------------------------------------------


def _batch_fn(run: _Run, idx_t: torch.Tensor | None, order: torch.Tensor | None,
              rows: torch.Tensor | None, start: int) -> BatchFn:
    """Samples ``start + a : start + b`` of the epoch's order (shuffled or not)."""
    X = run.data.train.X
    y = run.data.y_train
    assert X is not None

    def get(a: int, b: int) -> tuple[torch.Tensor, torch.Tensor]:
        if order is not None:
            cols = order[:, start + a:start + b]
            return X[rows, cols], y[rows, cols]
        if idx_t is None:
            return X[:, start + a:start + b], y[:, start + a:start + b]
        return X[idx_t, start + a:start + b], y[idx_t, start + a:start + b]

    return get


def _train_epoch(run: _Run, idx: np.ndarray, lr: float) -> tuple[np.ndarray, np.ndarray]:
    """One epoch of the active models ``idx``; their running mean loss and accuracy."""
    cfg, N, device, state = run.cfg, run.data.n, run.device, run.state
    full = len(idx) == len(run.records)
    idx_t = None if full else torch.as_tensor(idx, device=device)
    bs = N if cfg.batch_size is None else min(int(cfg.batch_size), N)
    order = rows = None
    if cfg.batch_size is not None:  # shuffle: one fresh permutation per model and epoch
        order = torch.as_tensor(np.stack([run.rngs[k].permutation(N) for k in idx]),
                                device=device)
        rows = torch.as_tensor(idx, device=device)[:, None]
    buffers = subset(state.buffers, idx_t)
    run_loss = torch.zeros(len(idx), dtype=torch.float64, device=device)
    run_correct = torch.zeros(len(idx), dtype=torch.float64, device=device)
    has_acc = True
    for start in range(0, N, bs):
        B = min(N, start + bs) - start
        if idx_t is None:
            p_in = {n: p.requires_grad_(True) for n, p in state.params.items()}
        else:
            p_in = {n: p.index_select(0, idx_t).requires_grad_(True)
                    for n, p in state.params.items()}
        grads, loss_sum, correct = batch_gradients(
            run.model, p_in, buffers, _batch_fn(run, idx_t, order, rows, start), B, run.micro,
            run.loss, cfg.precision)
        with torch.no_grad():
            run_loss += loss_sum
            if correct is None:
                has_acc = False
            else:
                run_correct += correct
        apply_updates(state, grads, idx_t, lr, cfg)
        if full:
            for p in state.params.values():
                p.requires_grad_(False)
    losses = (run_loss / N).cpu().numpy()
    accs = (run_correct / N).cpu().numpy() if has_acc else np.full(len(idx), np.nan)
    return losses, accs


def _end_of_epoch(run: _Run, epoch: int, idx: np.ndarray, losses: np.ndarray,
                  accs: np.ndarray) -> None:
    """Divergence check, logs, validation, the kept weights and stopping for ``epoch``."""
    cfg, hist, e = run.cfg, run.hist, epoch
    bad = ~np.isfinite(losses)
    if bad.any():
        raise TrainingDivergedError(int(idx[np.flatnonzero(bad)[0]]), epoch)
    hist.log("loss", idx, e, losses)
    hist.log("accuracy", idx, e, accs)
    acc_for_stop = accs
    if cfg.stop_metric == "exact":
        ex_l, ex_a = run.evaluate(run.data.train, run.data.y_train, idx)
        hist.log("train_loss_exact", idx, e, ex_l)
        hist.log("train_accuracy_exact", idx, e, ex_a)
        acc_for_stop = ex_a
    reached = reached_target(cfg, acc_for_stop)
    if run.data.val is not None:
        assert run.data.y_val is not None
        ev = models_to_validate(cfg, idx, reached, epoch)
        if len(ev):
            v_l, v_a = run.evaluate(run.data.val, run.data.y_val, ev)
            bad = ~np.isfinite(v_l)
            if bad.any():
                raise TrainingDivergedError(int(ev[np.flatnonzero(bad)[0]]), epoch,
                                            "validation loss")
            hist.log("val_loss", ev, e, v_l)
            hist.log("val_accuracy", ev, e, v_a)
            record_validation(run.records, run.state, ev, v_l, epoch, cfg.select_best)
    apply_stops(run.records, idx, reached, cfg, epoch)


def _epochs(run: _Run) -> None:
    lrs = lr_schedule(run.cfg, run.cfg.max_epochs)
    bar = None
    if run.cfg.progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=run.cfg.max_epochs, desc="epochs", leave=False)
    try:
        for epoch in range(run.cfg.max_epochs):
            idx = np.array([k for k, r in enumerate(run.records) if r.active], dtype=np.int64)
            if len(idx) == 0:
                break
            e = run.hist.new_epoch()
            assert e == epoch
            losses, accs = _train_epoch(run, idx, float(lrs[epoch]))
            run.hist.log("lr", idx, e, float(lrs[epoch]))
            _end_of_epoch(run, epoch, idx, losses, accs)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(active=sum(r.active for r in run.records))
    finally:
        if bar is not None:
            bar.close()


# ---------------------------------------------------------------------------------------------
# the engine
# ---------------------------------------------------------------------------------------------


def _result(run: _Run, t0: float) -> TrainResult:
    """Load the kept weights into the model, evaluate them exactly, and assemble the result."""
    finish_selection(run.cfg, run.state, run.records)
    with torch.no_grad():
        for n, p in run.model.named_parameters():
            p.copy_(run.state.best[n])
    K = len(run.records)
    kept = {**run.state.best, **run.state.buffers}

    def evaluate(inputs: InputSet, y: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
        return evaluate_models(run.model, kept, inputs, y, np.arange(K), run.loss,
                               run.cfg.eval_batch_size, run.plan, run.cfg.precision)

    metrics: dict[str, np.ndarray] = {}
    metrics["train_loss"], metrics["train_accuracy"] = evaluate(run.data.train, run.data.y_train)
    if run.data.val is not None:
        assert run.data.y_val is not None
        metrics["val_loss"], metrics["val_accuracy"] = evaluate(run.data.val, run.data.y_val)
    recs = run.records

    def cpu(d: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return {n: t.detach().cpu().clone() for n, t in d.items()}

    return TrainResult(
        history=run.hist.result(),
        best_epoch=np.array([r.best_epoch for r in recs], dtype=np.int64),
        stopped_epoch=np.array([r.stopped_epoch for r in recs], dtype=np.int64),
        stop_reason=np.array([r.stop_reason for r in recs], dtype=object).astype(str),
        reached_train_accuracy=np.array([r.reached for r in recs], dtype=bool),
        best_state=cpu(run.state.best),
        final_state=cpu(run.state.params),
        metrics=metrics,
        wall_time_s=time.perf_counter() - t0,
        device=str(run.device),
        epochs_run=run.hist.n,
        config=run.cfg,
        loss=run.loss,
        initial_state=cpu(run.state.initial),
        micro_batch_size=run.micro,
        eval_batch_size=run.plan.eval_chunk(run.cfg.eval_batch_size, K,
                                            run.data.train.sample_numel, run.device,
                                            run.data.n),
    )


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
        Validation inputs ``(K, N_val, ...)`` (or a lazy
        :data:`~genbounds.train.inputs.InputFn`) and labels ``(K, N_val)``; both None for no
        validation (then ``select_best`` must be "last" and ``patience`` None).
    loss:
        One of :data:`~genbounds.train.config.LOSSES` (see
        :func:`~genbounds.train.losses.per_sample_loss`).
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
    K, dtype = _model_dims(model)
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    device = resolve_device(cfg.device)
    data = _check_data(X_train, y_train, X_val, y_val, loss, cfg, K, dtype, device)
    rngs = _shuffle_rngs(model, K, seed)
    model.to(device)
    state = TensorState.from_model(model, K, adam=cfg.optimizer == "adam")
    plan = plan_memory(cfg, model, state.weights(), data.train, data.y_train, loss)
    bs = data.n if cfg.batch_size is None else min(int(cfg.batch_size), data.n)
    keys = ["loss", "accuracy", "val_loss", "val_accuracy", "lr"]
    if cfg.stop_metric == "exact":
        keys += ["train_loss_exact", "train_accuracy_exact"]
    run = _Run(model=model, cfg=cfg, loss=loss, data=data, rngs=rngs, state=state,
               records=[ModelRecord() for _ in range(K)],
               hist=History(K, keys, min(cfg.max_epochs, 1024)), plan=plan,
               micro=plan.micro_batch(cfg, bs), device=device)
    with matmul_precision(cfg.precision, device):
        _epochs(run)
        return _result(run, t0)
