"""Checkpoints inside a unit (issue #19 item 1): a training stopped at an arbitrary epoch and
resumed gives, bit for bit, what an uninterrupted run gives (CPU)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from tiny_training import F64, out_of_time_at, tiny_data, tiny_mha  # tests/tiny_training.py

import genbounds.train.loop as loop
from genbounds.train import (
    BudgetExhausted,
    TrainConfig,
    TrainResult,
    UnitCheckpoint,
    checkpoint_state,
    current_checkpoint,
    fingerprint,
    from_storable,
    restore_state,
    to_storable,
    train_ensemble,
    unit_checkpoint,
)


@pytest.fixture(autouse=True)
def _on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Resumption is bitwise on the CPU (the claim tested here): "auto" means the CPU here,
    also on a machine with a GPU."""
    real = loop.resolve_device
    monkeypatch.setattr(loop, "resolve_device", lambda d: real("cpu" if d == "auto" else d))

CONFIGS = {
    # full-batch gradient descent, kept epoch by validation loss, patience
    "gd": TrainConfig(optimizer="gd", lr=0.3, max_epochs=30, patience=3, eval_every=2,
                      lr_decay=0.97, lr_floor=0.1),
    # SGD with Keras momentum, minibatches (shuffled), stop at training accuracy 1
    "sgd_momentum": TrainConfig(lr=0.2, momentum=0.9, batch_size=8, max_epochs=25, patience=4,
                                stop_at_train_accuracy=1.0, lr_decay=0.95, lr_floor=0.12),
    # Adam, torch-style, "exact" stopping metric, per-model stopping
    "adam": TrainConfig(optimizer="adam", lr=0.02, momentum_style="torch", batch_size=8,
                        max_epochs=22, patience=5, stop_at_train_accuracy=1.0,
                        stop_metric="exact"),
}


def _train(cfg: TrainConfig, ckpt: UnitCheckpoint | None = None) -> tuple[TrainResult, Any]:
    X, y, Xv, yv = tiny_data(3, 22, seed=2)
    model = tiny_mha([3, 4, 5])
    res = train_ensemble(model, X, y, Xv, yv, "bce_logits_onehot", cfg, seed=3,
                         checkpoint=ckpt if ckpt is not None else False)
    return res, model


def _flat(res: TrainResult, model: Any) -> dict[str, Any]:
    out: dict[str, Any] = {f"history/{k}": v for k, v in res.history.items()}
    out.update({f"metrics/{k}": v for k, v in res.metrics.items()})
    for name in ("best_state", "final_state", "initial_state"):
        out.update({f"{name}/{k}": v.numpy() for k, v in getattr(res, name).items()})
    out.update({f"model/{n}": p.detach().numpy() for n, p in model.named_parameters()})
    for name in ("best_epoch", "stopped_epoch", "stop_reason", "reached_train_accuracy"):
        out[name] = getattr(res, name)
    out["epochs_run"] = np.array(res.epochs_run)
    out["micro_batch_size"] = np.array(res.micro_batch_size)
    out["eval_batch_size"] = np.array(res.eval_batch_size)
    return out


def _assert_bitwise(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert set(got) == set(want)
    for k in want:
        a, b = np.asarray(got[k]), np.asarray(want[k])
        assert a.dtype == b.dtype and a.shape == b.shape, k
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), k


@pytest.fixture(autouse=True)
def _one_thread() -> Any:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_stop_at_a_random_epoch_and_resume_is_bitwise(name: str, tmp_path: Path) -> None:
    cfg = CONFIGS[name]
    want_res, want_model = _train(cfg)
    want = _flat(want_res, want_model)
    # the case exercises what it claims: models stop at different epochs, not all at the last
    # one kept (otherwise stopping and selection state would not be tested)
    assert want_res.epochs_run >= 6
    assert (want_res.best_epoch < want_res.stopped_epoch).any()
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    k = int(rng.integers(2, want_res.epochs_run - 1))
    path = tmp_path / "unit.pt"
    ck = UnitCheckpoint(path)
    out_of_time_at(ck, k)
    with pytest.raises(BudgetExhausted) as info:
        _train(cfg, ck)
    assert info.value.epoch == k and info.value.total == cfg.max_epochs and path.is_file()
    assert UnitCheckpoint(path).progress() == (k, cfg.max_epochs)
    got_res, got_model = _train(cfg, UnitCheckpoint(path))  # a fresh model, resumed
    _assert_bitwise(_flat(got_res, got_model), want)


def test_two_interruptions_and_a_changed_memory_plan(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Stopped twice; the resumed runs keep the interrupted run's micro-batches even when the
    machine's memory (hence the plan) differs."""
    cfg = TrainConfig(lr=0.2, momentum=0.9, batch_size=8, max_epochs=14)
    want_res, want_model = _train(cfg)
    assert want_res.epochs_run == 14
    path = tmp_path / "unit.pt"
    ck = UnitCheckpoint(path)
    out_of_time_at(ck, 3)
    with pytest.raises(BudgetExhausted):
        _train(cfg, ck)
    monkeypatch.setattr(loop, "plan_memory",
                        lambda *a, **k: (_ for _ in ()).throw(AssertionError("re-planned")))
    ck2 = UnitCheckpoint(path)
    out_of_time_at(ck2, 5)  # five more epochs: stops at epoch 8
    with pytest.raises(BudgetExhausted) as info:
        _train(cfg, ck2)
    assert info.value.epoch == 8
    got_res, got_model = _train(cfg, UnitCheckpoint(path))
    _assert_bitwise(_flat(got_res, got_model), _flat(want_res, want_model))


def test_a_unit_of_two_trainings_replays_the_finished_one(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Under unit_checkpoint, each train_ensemble call is a stage: the first call (finished
    before the interruption) is not trained again, the second resumes at its epoch."""
    X, y, Xv, yv = tiny_data(2, 16, seed=5)
    cfg1 = TrainConfig(lr=0.2, momentum=0.9, batch_size=8, max_epochs=6, select_best="last")
    cfg2 = TrainConfig(optimizer="adam", lr=0.01, batch_size=8, max_epochs=9)

    def unit() -> list[dict[str, Any]]:
        model = tiny_mha([1, 2])
        r1 = train_ensemble(model, X, y, loss="bce_logits_onehot", config=cfg1, seed=1)
        # the second training starts from the first one's weights (segments of one run)
        r2 = train_ensemble(model, X, y, Xv, yv, "bce_logits_onehot", cfg2, seed=2)
        return [_flat(r1, model), _flat(r2, model)]

    want = unit()
    path = tmp_path / "unit.pt"
    ck = UnitCheckpoint(path)
    seen = out_of_time_at(ck, 4 + 5 + 1)  # 5 boundaries in call 1 (no save after its last epoch)
    with unit_checkpoint(ck), pytest.raises(BudgetExhausted) as info:
        unit()
    assert info.value.epoch == 5 and seen["n"] == 10
    assert current_checkpoint() is None
    epochs: list[int] = []
    real = loop._train_epoch

    def counting(run: Any, idx: np.ndarray, lr: float) -> Any:
        epochs.append(run.hist.n - 1)  # the epoch being trained
        return real(run, idx, lr)

    monkeypatch.setattr(loop, "_train_epoch", counting)
    with unit_checkpoint(UnitCheckpoint(path)):
        got = unit()
    assert epochs == [5, 6, 7, 8]  # only the rest of the second call was trained
    for g, w in zip(got, want, strict=True):
        _assert_bitwise(g, w)


def test_a_changed_configuration_is_refused(tmp_path: Path) -> None:
    cfg = CONFIGS["sgd_momentum"]
    path = tmp_path / "unit.pt"
    ck = UnitCheckpoint(path)
    out_of_time_at(ck, 2)
    with pytest.raises(BudgetExhausted):
        _train(cfg, ck)
    other = dataclasses.replace(cfg, lr=0.21)
    with pytest.raises(ValueError, match="configuration changed"):
        _train(other, UnitCheckpoint(path))
    UnitCheckpoint(path).save({"something": 1})
    with pytest.raises(ValueError, match="not a genbounds-unit-checkpoint"):
        _train(cfg, UnitCheckpoint(path))
    with pytest.raises(ValueError, match="checkpoint must be"):
        train_ensemble(tiny_mha([1]), *tiny_data(1, 8, 0)[:2], checkpoint="x")  # type: ignore[arg-type]


def test_a_loop_of_its_own_resumes_bitwise_with_the_helpers(tmp_path: Path) -> None:
    """checkpoint_state / restore_state: model, torch.optim.Adam, a scheduler, a numpy
    generator (minibatch order) and curves, stopped at epoch 4 of 9."""
    X, y = tiny_data(1, 20, seed=9)[:2]
    epochs = 9

    def unit() -> tuple[dict[str, torch.Tensor], list[float]]:
        model = tiny_mha([7])
        opt = torch.optim.Adam(model.parameters(), lr=0.02)
        sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
        gen = np.random.default_rng(11)
        ckpt = current_checkpoint()
        stage = ckpt.stage(fingerprint("own-loop", X, y, epochs)) if ckpt else None
        start, curve = 0, []
        if stage is not None and stage.partial is not None:
            extra = restore_state(stage.partial, model, opt, scheduler=sched)
            start, curve = extra["epoch"], list(extra["curve"])
            gen.bit_generator.state = extra["rng"]
        for epoch in range(start, epochs):
            order = gen.permutation(20)
            for b in range(0, 20, 8):
                idx = torch.as_tensor(order[b:b + 8])
                out = model(X[:, idx])
                loss = torch.nn.functional.cross_entropy(out[0], y[0, idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
            sched.step()
            curve.append(float(loss.detach()))
            if stage is not None and epoch + 1 < epochs:
                stage.boundary(epoch + 1, epochs, lambda: checkpoint_state(
                    model, opt, {"epoch": epoch + 1, "curve": np.array(curve),  # noqa: B023
                                 "rng": gen.bit_generator.state}, scheduler=sched))
        if stage is not None:
            stage.finish(None)
        return {n: p.detach().clone() for n, p in model.named_parameters()}, curve

    want_p, want_c = unit()
    path = tmp_path / "unit.pt"
    ck = UnitCheckpoint(path)
    out_of_time_at(ck, 4)
    with unit_checkpoint(ck), pytest.raises(BudgetExhausted):
        unit()
    with unit_checkpoint(UnitCheckpoint(path)):
        got_p, got_c = unit()
    assert got_c == want_c
    for n in want_p:
        assert torch.equal(got_p[n], want_p[n]), n


def test_storable_round_trip_and_refusals(tmp_path: Path) -> None:
    obj = {"a": np.arange(3, dtype=np.int64), "b": np.array(["x", "yy"]), "c": (1, 2.5, None),
           "d": [np.float64(1.5), torch.ones(2)], "e": {"f": np.zeros((2, 2), dtype=bool)}}
    ck = UnitCheckpoint(tmp_path / "c.pt")
    ck.save(to_storable(obj))
    back = from_storable(ck.load())
    assert back["a"].dtype == np.int64 and np.array_equal(back["a"], obj["a"])
    assert back["b"].tolist() == ["x", "yy"] and back["c"] == (1, 2.5, None)
    assert back["d"][0] == 1.5 and torch.equal(back["d"][1], torch.ones(2))
    assert back["e"]["f"].dtype == bool
    with pytest.raises(ValueError, match="cannot store"):
        to_storable({"x": object()})
    with pytest.raises(ValueError, match="every_s"):
        UnitCheckpoint(tmp_path / "x.pt", every_s=-1)
    assert fingerprint(torch.zeros(2)) != fingerprint(torch.zeros(3))
    assert fingerprint(torch.zeros(2)) != fingerprint(torch.zeros(2, dtype=F64))
