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

Checkpoints (:mod:`genbounds.train.checkpoint`)
-----------------------------------------------
Under a current :class:`~genbounds.train.checkpoint.UnitCheckpoint` (or one passed as
``checkpoint=``) every call is one *stage* of the unit, tagged with a fingerprint of the
configuration, the loss, the model's initial parameters and buffers, the data and the shuffling
generators. A call that an earlier run finished returns its stored result (and loads the kept
weights into the model) without training; a call that an earlier run interrupted resumes at the
epoch where it stopped, with the parameters, optimiser moments and step counter, the kept
weights, every model's stopping record, the history, the shuffling generators' states and the
memory plan (micro-batch and evaluation-chunk sizes) of the interrupted run, so that the result
is bitwise that of an uninterrupted run on the same device (tested for GD, SGD with momentum
and Adam, with early stopping and the kept epoch). The state is saved at epoch boundaries when
the checkpoint says so, and when its budget is spent the call saves and raises
:class:`~genbounds.train.checkpoint.BudgetExhausted`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from genbounds.train.checkpoint import (
    Stage,
    UnitCheckpoint,
    current_checkpoint,
    fingerprint,
)
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
from genbounds.train.memory import MemoryPlan, plan_memory, retain_freed_memory
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
    stage: Stage | None = None
    t0: float = 0.0
    elapsed_before: float = 0.0

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

        bar = tqdm(total=run.cfg.max_epochs, initial=run.hist.n, desc="epochs", leave=False)
    try:
        for epoch in range(run.hist.n, run.cfg.max_epochs):
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
            if (run.stage is not None and epoch + 1 < run.cfg.max_epochs
                    and any(r.active for r in run.records)):
                run.stage.boundary(epoch + 1, run.cfg.max_epochs, lambda: _engine_state(run))
    finally:
        if bar is not None:
            bar.close()


# ---------------------------------------------------------------------------------------------
# checkpoints: the engine's state inside a call, and a finished call's result
# ---------------------------------------------------------------------------------------------


def _stage_tag(model: nn.Module, cfg: TrainConfig, loss: str, data: _Data,
               rngs: list[Any]) -> str:
    """What identifies a call: configuration (not ``progress``), loss, the model's initial
    parameters and buffers, the data (a lazy validation set by its sample shape only) and the
    shuffling generators' initial states."""
    fields = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)
              if f.name != "progress"}
    val: Any = None
    if data.val is not None:
        val = data.val.X if data.val.X is not None else ("lazy", data.val.sample_shape)
    digest = fingerprint(
        fields, loss, type(model).__name__,
        {n: p.detach() for n, p in model.named_parameters()},
        {n: b.detach() for n, b in model.named_buffers() if b is not None},
        data.train.X, data.y_train, val, data.y_val,
        [r.bit_generator.state for r in rngs],
    )
    return f"train_ensemble:{digest}"


def _engine_state(run: _Run) -> dict[str, Any]:
    """Everything an interrupted call needs to continue bitwise (see the module docstring)."""
    st, n = run.state, run.hist.n
    return {
        "params": st.params, "velocity": st.velocity, "second": st.second, "best": st.best,
        "initial": st.initial, "step": st.step,
        "records": [dataclasses.asdict(r) for r in run.records],
        "history": {k: v[:, :n] for k, v in run.hist.data.items()}, "epochs": n,
        "rngs": [r.bit_generator.state for r in run.rngs],
        "plan": [int(run.plan.budget_bytes), int(run.plan.bytes_per_sample)],
        "micro": int(run.micro),
        "elapsed": run.elapsed_before + time.perf_counter() - run.t0,
    }


def _restore_engine(run: _Run, saved: dict[str, Any]) -> None:
    dev = run.device

    def tensors(d: dict[str, torch.Tensor], like: dict[str, torch.Tensor]) -> dict[str, Any]:
        if set(d) != set(like):
            raise ValueError("checkpoint does not hold the model's parameters")
        return {n: d[n].to(device=dev, dtype=like[n].dtype) for n in like}

    st = run.state
    st.params = tensors(saved["params"], st.params)
    st.velocity = tensors(saved["velocity"], st.velocity)
    st.second = tensors(saved["second"], st.second)
    st.best = tensors(saved["best"], st.best)
    st.initial = tensors(saved["initial"], st.initial)
    st.step = int(saved["step"])
    run.records = [ModelRecord(**r) for r in saved["records"]]
    n = int(saved["epochs"])
    hist = History(len(run.records), list(run.hist.keys), max(2 * n, 16))
    for k, v in saved["history"].items():
        hist.data[k][:, :n] = v
    hist.n = n
    run.hist = hist
    for r, s in zip(run.rngs, saved["rngs"], strict=True):
        r.bit_generator.state = s
    run.plan = MemoryPlan(int(saved["plan"][0]), int(saved["plan"][1]))
    run.micro = int(saved["micro"])
    run.elapsed_before = float(saved["elapsed"])


def _result_storable(res: TrainResult) -> dict[str, Any]:
    out = {f.name: getattr(res, f.name) for f in dataclasses.fields(res) if f.name != "config"}
    out["stop_reason"] = [str(s) for s in res.stop_reason]
    return out


def _result_from_stage(stored: dict[str, Any], cfg: TrainConfig, model: nn.Module) -> TrainResult:
    """A finished call's result, and its kept weights loaded into ``model`` (as the call did)."""
    stored = dict(stored)
    stored["stop_reason"] = np.array(stored["stop_reason"], dtype=object).astype(str)
    res = TrainResult(config=cfg, **stored)
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.copy_(res.best_state[n])
    return res


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
        wall_time_s=run.elapsed_before + time.perf_counter() - t0,
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
    checkpoint: UnitCheckpoint | Literal[False] | None = None,
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
    checkpoint:
        The unit checkpoint this call is a stage of (see the module docstring); None (default)
        uses :func:`~genbounds.train.checkpoint.current_checkpoint` (none outside
        :func:`~genbounds.train.checkpoint.unit_checkpoint`), False uses none.

    Raises :class:`~genbounds.train.checkpoint.BudgetExhausted` (the state saved) when the
    checkpoint's time budget is spent before training ends.

    Returns
    -------
    TrainResult
    """
    t0 = time.perf_counter()
    if checkpoint is not None and checkpoint is not False and not isinstance(checkpoint,
                                                                             UnitCheckpoint):
        raise ValueError(f"checkpoint must be a UnitCheckpoint, False or None, got "
                         f"{type(checkpoint).__name__}")
    cfg = TrainConfig() if config is None else config
    if not isinstance(cfg, TrainConfig):
        raise ValueError(f"config must be a TrainConfig, got {type(cfg).__name__}")
    K, dtype = _model_dims(model)
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    device = resolve_device(cfg.device)
    if device.type == "cpu":
        retain_freed_memory()  # large activations reused, not page-faulted in every step
    data = _check_data(X_train, y_train, X_val, y_val, loss, cfg, K, dtype, device)
    rngs = _shuffle_rngs(model, K, seed)
    ckpt = current_checkpoint() if checkpoint is None else (checkpoint or None)
    stage = None
    if ckpt is not None:
        stage = ckpt.stage(_stage_tag(model, cfg, loss, data, rngs))
        if stage.result is not None:  # finished by an earlier run of the unit
            return _result_from_stage(stage.result, cfg, model.to(device))
    model.to(device)
    state = TensorState.from_model(model, K, adam=cfg.optimizer == "adam")
    resume = stage.partial if stage is not None else None
    if resume is None:
        plan = plan_memory(cfg, model, state.weights(), data.train, data.y_train, loss)
    else:  # the interrupted run's plan: the same micro-batches and evaluation chunks
        plan = MemoryPlan(int(resume["plan"][0]), int(resume["plan"][1]))
    bs = data.n if cfg.batch_size is None else min(int(cfg.batch_size), data.n)
    keys = ["loss", "accuracy", "val_loss", "val_accuracy", "lr"]
    if cfg.stop_metric == "exact":
        keys += ["train_loss_exact", "train_accuracy_exact"]
    run = _Run(model=model, cfg=cfg, loss=loss, data=data, rngs=rngs, state=state,
               records=[ModelRecord() for _ in range(K)],
               hist=History(K, keys, min(cfg.max_epochs, 1024)), plan=plan,
               micro=plan.micro_batch(cfg, bs), device=device, stage=stage, t0=t0)
    if resume is not None:
        _restore_engine(run, resume)
    with matmul_precision(cfg.precision, device):
        _epochs(run)
        res = _result(run, t0)
    if stage is not None:
        stage.finish(_result_storable(res))
    return res
