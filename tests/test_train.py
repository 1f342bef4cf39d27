"""Tests for genbounds.train: batched == one at a time, Keras semantics, stopping, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from tiny_training import F64, D, tiny_data, tiny_mha  # tests/tiny_training.py

from genbounds.models import ShallowEncoder, SparseMajorityMHA
from genbounds.train import (
    TrainConfig,
    TrainingDivergedError,
    evaluate_ensemble,
    lr_schedule,
    per_sample_loss,
    sgd_step,
    train_ensemble,
)

_mha = tiny_mha


def _assert_hist_close(a: np.ndarray, b: np.ndarray, **kw: float) -> None:
    assert a.shape == b.shape
    assert np.array_equal(np.isnan(a), np.isnan(b))
    np.testing.assert_allclose(a[~np.isnan(a)], b[~np.isnan(b)], **kw)


# ------------------------------------------------------------------------------------------
# the central property: K models batched == K models trained one at a time
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_batched_training_equals_training_one_at_a_time(optimizer: str) -> None:
    seeds = [3, 4, 5]
    X, y, Xv, yv = tiny_data(3, 22)
    if optimizer == "sgd":
        cfg = TrainConfig(lr=0.2, momentum=0.9, momentum_style="keras", lr_decay=0.95,
                          lr_floor=0.12, batch_size=8, max_epochs=25, patience=4,
                          stop_at_train_accuracy=1.0)
    else:
        cfg = TrainConfig(optimizer="adam", lr=0.02, lr_decay=0.95, batch_size=8,
                          max_epochs=25, patience=4, stop_at_train_accuracy=1.0)
    ens = train_ensemble(_mha(seeds), X, y, Xv, yv, "bce_logits_onehot", cfg)
    # the scenario exercises per-model stopping: not every model stops at the same epoch
    assert len(set(ens.stopped_epoch.tolist())) > 1
    for k, s in enumerate(seeds):
        one = train_ensemble(_mha([s]), X[k:k + 1], y[k:k + 1], Xv[k:k + 1], yv[k:k + 1],
                             "bce_logits_onehot", cfg)
        assert one.stopped_epoch[0] == ens.stopped_epoch[k]
        assert one.best_epoch[0] == ens.best_epoch[k]
        assert one.stop_reason[0] == ens.stop_reason[k]
        for key, h in one.history.items():
            _assert_hist_close(h[0], ens.history[key][k, : one.epochs_run], rtol=1e-9,
                               atol=1e-12)
            assert np.isnan(ens.history[key][k, one.epochs_run:]).all()
        for name, p in one.best_state.items():
            torch.testing.assert_close(p[0], ens.best_state[name][k], rtol=1e-9, atol=1e-12)
            torch.testing.assert_close(one.final_state[name][0], ens.final_state[name][k],
                                       rtol=1e-9, atol=1e-12)
        for key, v in one.metrics.items():
            np.testing.assert_allclose(v[0], ens.metrics[key][k], rtol=1e-9, atol=1e-12)


def test_seed_int_ties_minibatch_order_to_the_model_seed() -> None:
    X, y, Xv, yv = tiny_data(2, 12)
    cfg = TrainConfig(lr=0.1, momentum=0.5, batch_size=5, max_epochs=4)
    ens = train_ensemble(_mha([7, 8]), X, y, Xv, yv, "cross_entropy", cfg, seed=11)
    one = train_ensemble(_mha([8]), X[1:], y[1:], Xv[1:], yv[1:], "cross_entropy", cfg,
                         seed=11)
    for name, p in one.final_state.items():
        torch.testing.assert_close(p[0], ens.final_state[name][1], rtol=1e-9, atol=1e-12)
    other = train_ensemble(_mha([8]), X[1:], y[1:], Xv[1:], yv[1:], "cross_entropy", cfg,
                           seed=12)
    assert not torch.allclose(other.final_state["dense_kernel"], one.final_state["dense_kernel"])


# ------------------------------------------------------------------------------------------
# Keras semantics against a hand-written reference loop
# ------------------------------------------------------------------------------------------


def test_matches_a_plain_keras_style_loop() -> None:
    """SGD(momentum) as Keras does it, batches of 8 of 19 samples (last one partial), lr
    decayed at every epoch start (LearningRateScheduler), running epoch metrics."""
    X, y, Xv, yv = tiny_data(1, 19, seed=2)
    cfg = TrainConfig(lr=0.3, momentum=0.9, momentum_style="keras", lr_decay=0.9,
                      lr_floor=0.2, batch_size=8, max_epochs=6, select_best="last")
    res = train_ensemble(_mha([9]), X, y, Xv, yv, "bce_logits_onehot", cfg, seed=[123])

    model = _mha([9])
    params = list(model.parameters())
    vel = [torch.zeros_like(p) for p in params]
    rng = np.random.default_rng(123)
    lr = 0.3
    for epoch in range(6):
        lr = max(0.2, lr * 0.9)
        assert res.history["lr"][0, epoch] == pytest.approx(lr)
        perm = rng.permutation(19)
        total, correct = 0.0, 0
        for start in range(0, 19, 8):
            b = perm[start:start + 8]
            logits = model(X[:, b])[0]
            target = F.one_hot(y[0, b], 2).to(F64)
            per = F.binary_cross_entropy_with_logits(logits, target, reduction="none").mean(-1)
            grads = torch.autograd.grad(per.mean(), params)
            with torch.no_grad():
                for p, v, g in zip(params, vel, grads, strict=True):
                    v.mul_(0.9).sub_(lr * g)
                    p.add_(v)
            total += per.sum().item()
            correct += int((logits.argmax(-1) == y[0, b]).sum())
        assert res.history["loss"][0, epoch] == pytest.approx(total / 19, rel=1e-10)
        assert res.history["accuracy"][0, epoch] == pytest.approx(correct / 19)
    for (name, p) in model.named_parameters():
        torch.testing.assert_close(res.final_state[name], p.detach(), rtol=1e-10,
                                   atol=1e-12)


def test_torch_style_matches_torch_optim_sgd_and_keras_style_when_lr_constant() -> None:
    X, y, _, _ = tiny_data(1, 10, seed=4)
    cfg_t = TrainConfig(optimizer="gd", lr=0.2, momentum=0.8, momentum_style="torch",
                        max_epochs=7, select_best="last")
    res_t = train_ensemble(_mha([1]), X, y, loss="cross_entropy", config=cfg_t)
    model = _mha([1])
    opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.8)
    for _ in range(7):
        opt.zero_grad()
        out = model(X)[0]
        F.cross_entropy(out, y[0]).backward()
        opt.step()
    for name, p in model.named_parameters():
        torch.testing.assert_close(res_t.final_state[name], p.detach(), rtol=1e-10,
                                   atol=1e-12)
    # with a constant learning rate the two parametrisations of momentum coincide
    cfg_k = TrainConfig(optimizer="gd", lr=0.2, momentum=0.8, momentum_style="keras",
                        max_epochs=7, select_best="last")
    res_k = train_ensemble(_mha([1]), X, y, loss="cross_entropy", config=cfg_k)
    for name in res_t.final_state:
        torch.testing.assert_close(res_k.final_state[name], res_t.final_state[name],
                                   rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("style", ["torch", "keras"])
def test_adam_matches_its_definition(style: str) -> None:
    X, y, _, _ = tiny_data(1, 10, seed=4)
    cfg = TrainConfig(optimizer="adam", lr=0.05, adam_beta1=0.8, adam_beta2=0.99,
                      adam_eps=1e-6, momentum_style=style, batch_size=4, max_epochs=3,
                      select_best="last")
    res = train_ensemble(_mha([1]), X, y, loss="cross_entropy", config=cfg, seed=[5])
    model = _mha([1])
    params = list(model.parameters())
    if style == "torch":
        opt = torch.optim.Adam(params, lr=0.05, betas=(0.8, 0.99), eps=1e-6)
    else:
        ms = [torch.zeros_like(p) for p in params]
        vs = [torch.zeros_like(p) for p in params]
    rng = np.random.default_rng(5)
    t = 0
    for _ in range(3):
        perm = rng.permutation(10)
        for start in range(0, 10, 4):
            b = perm[start:start + 4]
            loss = F.cross_entropy(model(X[:, b])[0], y[0, b])
            t += 1
            if style == "torch":
                opt.zero_grad()
                loss.backward()
                opt.step()
                continue
            grads = torch.autograd.grad(loss, params)
            with torch.no_grad():
                for p, m, v, g in zip(params, ms, vs, grads, strict=True):
                    m.mul_(0.8).add_(0.2 * g)
                    v.mul_(0.99).add_(0.01 * g * g)
                    alpha = 0.05 * math.sqrt(1 - 0.99**t) / (1 - 0.8**t)
                    p.sub_(alpha * m / (v.sqrt() + 1e-6))
    for name, p in model.named_parameters():
        torch.testing.assert_close(res.final_state[name], p.detach(), rtol=1e-9, atol=1e-12)


def test_lr_schedule_keras_semantics() -> None:
    cfg = TrainConfig(lr=0.01, lr_decay=0.999, lr_floor=0.001)
    lrs = lr_schedule(cfg, 5000)
    assert lrs[0] == pytest.approx(0.01 * 0.999)  # decayed before the first epoch
    assert lrs[1] == pytest.approx(0.01 * 0.999**2)
    assert lrs.min() == pytest.approx(0.001) and lrs[-1] == pytest.approx(0.001)
    first_floor = int(np.argmax(lrs <= 0.001 + 1e-15))
    assert first_floor == math.ceil(math.log(0.1) / math.log(0.999)) - 1
    plain = lr_schedule(TrainConfig(lr=0.5, lr_decay=0.5, decay_before_first_epoch=False), 3)
    np.testing.assert_allclose(plain, [0.5, 0.25, 0.125])


def test_running_versus_exact_training_accuracy() -> None:
    """Full batch: the running metrics of epoch e are those of the weights before epoch e's
    step; the exact (end-of-epoch) metrics of epoch e are therefore the running ones of e+1."""
    X, y, Xv, yv = tiny_data(2, 16, seed=5)
    cfg = TrainConfig(optimizer="gd", lr=0.5, momentum=0.5, max_epochs=8, stop_metric="exact")
    model = _mha([1, 2])
    init = evaluate_ensemble(model, X, y, "bce_logits_onehot")
    res = train_ensemble(model, X, y, Xv, yv, "bce_logits_onehot", cfg)
    h = res.history
    np.testing.assert_allclose(h["loss"][:, 0], init["loss"], rtol=1e-12)
    np.testing.assert_allclose(h["accuracy"][:, 0], init["accuracy"])
    np.testing.assert_allclose(h["train_loss_exact"][:, :-1], h["loss"][:, 1:], rtol=1e-10)
    np.testing.assert_allclose(h["train_accuracy_exact"][:, :-1], h["accuracy"][:, 1:])


# ------------------------------------------------------------------------------------------
# per-model stopping and the kept epoch
# ------------------------------------------------------------------------------------------


def test_stopped_model_does_not_move() -> None:
    X, y, Xv, yv = tiny_data(3, 30, seed=6)
    X, y = X.clone(), y.clone()
    y[0] = 1  # model 0 only has to learn a constant: it reaches accuracy 1.0
    # models 1 and 2 see every input twice with opposite labels: accuracy 1.0 is impossible
    X[1:, 15:] = X[1:, :15]
    y[1:, 15:] = 1 - y[1:, :15]
    cfg = TrainConfig(lr=0.05, momentum=0.9, batch_size=8, max_epochs=30,
                      stop_at_train_accuracy=1.0, select_best="last")
    long = train_ensemble(_mha([1, 2, 3]), X, y, Xv, yv, "bce_logits_onehot", cfg)
    s = int(long.stopped_epoch[0])
    assert long.reached_train_accuracy.tolist() == [True, False, False]
    assert s < 29 and long.stop_reason[0] == "train_accuracy"
    assert np.isnan(long.history["loss"][0, s + 1:]).all()
    short_cfg = TrainConfig(lr=0.05, momentum=0.9, batch_size=8, max_epochs=s + 1,
                            stop_at_train_accuracy=1.0, select_best="last")
    short = train_ensemble(_mha([1, 2, 3]), X, y, Xv, yv, "bce_logits_onehot", short_cfg)
    for name in long.final_state:  # bit for bit: nothing touched model 0 after it stopped
        assert torch.equal(long.final_state[name][0], short.final_state[name][0]), name


def test_sgd_step_touches_only_active_models() -> None:
    for style in ("keras", "torch"):
        p = torch.randn(4, 3, 2)
        v = torch.randn(4, 3, 2)
        g = torch.randn(2, 3, 2)
        p0, v0 = p.clone(), v.clone()
        idx = torch.tensor([1, 3])
        sgd_step(p, v, g, idx, lr=0.1, mu=0.9, style=style)
        for k in (0, 2):
            assert torch.equal(p[k], p0[k]) and torch.equal(v[k], v0[k])
        if style == "keras":
            torch.testing.assert_close(v[1], 0.9 * v0[1] - 0.1 * g[0])
            torch.testing.assert_close(p[3], p0[3] + 0.9 * v0[3] - 0.1 * g[1])
        else:
            torch.testing.assert_close(v[1], 0.9 * v0[1] + g[0])
            torch.testing.assert_close(p[3], p0[3] - 0.1 * (0.9 * v0[3] + g[1]))


def test_best_epoch_is_lowest_validation_loss_and_model_holds_it() -> None:
    X, y, Xv, yv = tiny_data(2, 20, seed=7)
    cfg = TrainConfig(lr=0.05, momentum=0.9, batch_size=7, max_epochs=15)
    model = _mha([4, 5])
    res = train_ensemble(model, X, y, Xv, yv, "bce_logits_onehot", cfg)
    vl = res.history["val_loss"]
    np.testing.assert_array_equal(res.best_epoch, np.nanargmin(vl, axis=1))
    np.testing.assert_allclose(res.metrics["val_loss"], vl[[0, 1], res.best_epoch], rtol=1e-10)
    for name, p in model.named_parameters():
        torch.testing.assert_close(p.detach().cpu(), res.best_state[name])
    ev = evaluate_ensemble(model, X, y, "bce_logits_onehot")
    np.testing.assert_allclose(ev["loss"], res.metrics["train_loss"], rtol=1e-12)


def test_patience_and_eval_every() -> None:
    X, y, Xv, yv = tiny_data(2, 12, seed=8)
    cfg = TrainConfig(lr=1e-6, batch_size=6, max_epochs=40, patience=2, eval_every=3)
    res = train_ensemble(_mha([1, 2]), X, y, Xv, yv, "cross_entropy", cfg)
    vl = res.history["val_loss"]
    evaluated = ~np.isnan(vl[0])
    assert evaluated[2] and not evaluated[0] and not evaluated[1]
    assert set(res.stop_reason.tolist()) <= {"patience", "max_epochs"}
    assert (res.stopped_epoch < 39).any()


def test_lazy_validation_inputs_equal_a_tensor() -> None:
    X, y, Xv, yv = tiny_data(2, 10, seed=9, n_val=23)
    cfg = TrainConfig(lr=0.1, batch_size=4, max_epochs=3, eval_batch_size=5)

    def fn(models: np.ndarray, start: int, stop: int) -> torch.Tensor:
        return Xv[torch.as_tensor(models), start:stop]

    a = train_ensemble(_mha([1, 2]), X, y, Xv, yv, "cross_entropy", cfg)
    b = train_ensemble(_mha([1, 2]), X, y, fn, yv, "cross_entropy", cfg)
    _assert_hist_close(a.history["val_loss"], b.history["val_loss"], rtol=1e-12)


def test_scalar_losses_and_gd_on_the_shallow_encoder() -> None:
    g = torch.Generator().manual_seed(0)
    X = torch.randn(2, 24, 4, 5, generator=g, dtype=F64)
    y01 = (X[:, :, :, 0].mean(-1) > 0).long()
    model = ShallowEncoder(5, 8, n_models=2, seeds=[0, 1], dtype=F64)
    cfg = TrainConfig(optimizer="gd", lr=0.5, max_epochs=60, select_best="last")
    for loss, labels in [("logistic", 2 * y01 - 1), ("bce_logits", y01),
                         ("mse", (2 * y01 - 1).to(F64))]:
        m = ShallowEncoder(5, 8, n_models=2, seeds=[0, 1], dtype=F64)
        res = train_ensemble(m, X, labels, loss=loss, config=cfg)
        assert (res.history["loss"][:, -1] < res.history["loss"][:, 0]).all(), loss
        if loss == "mse":
            assert np.isnan(res.metrics["train_accuracy"]).all()
    assert model.w_O.shape == (2, 8)


def test_per_sample_losses() -> None:
    out = torch.tensor([[[2.0, -1.0], [0.5, 0.5]]], dtype=F64)
    y = torch.tensor([[0, 1]])
    per, ok = per_sample_loss("bce_logits_onehot", out, y)
    sig = torch.sigmoid(out)
    manual = -(torch.log(sig[0, 0, 0]) + torch.log(1 - sig[0, 0, 1])) / 2
    assert per[0, 0].item() == pytest.approx(manual.item())
    assert ok.tolist() == [[True, False]]  # a tie goes to class 0, like argmax
    per_ce, _ = per_sample_loss("cross_entropy", out, y)
    assert per_ce[0, 1].item() == pytest.approx(math.log(2))
    f = torch.tensor([[1.0, -2.0, 0.0]], dtype=F64)
    per_l, ok_l = per_sample_loss("logistic", f, torch.tensor([[1, 1, -1]]))
    assert per_l[0, 0].item() == pytest.approx(math.log1p(math.exp(-1)))
    assert ok_l.tolist() == [[True, False, False]]
    with pytest.raises(ValueError, match="outputs"):
        per_sample_loss("cross_entropy", f, y)


# ------------------------------------------------------------------------------------------
# errors
# ------------------------------------------------------------------------------------------


def test_divergence_names_model_and_epoch() -> None:
    X, y, Xv, yv = tiny_data(3, 8, seed=10)
    X = X.clone()
    X[1] *= 1e200  # finite, but overflows inside model 1
    cfg = TrainConfig(lr=0.1, batch_size=4, max_epochs=3)
    with pytest.raises(TrainingDivergedError, match="model 1 diverged at epoch 0") as info:
        train_ensemble(_mha([1, 2, 3]), X, y, Xv, yv, "cross_entropy", cfg)
    assert info.value.model_index == 1 and info.value.epoch == 0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"optimizer": "rmsprop"}, "optimizer"),
        ({"optimizer": "adam", "momentum": 0.9}, "momentum"),
        ({"adam_beta2": 1.0}, "adam_beta2"),
        ({"adam_eps": 0.0}, "adam_eps"),
        ({"lr": 0.0}, "lr"),
        ({"lr": float("nan")}, "lr"),
        ({"momentum": 1.0}, "momentum"),
        ({"momentum_style": "nesterov"}, "momentum_style"),
        ({"lr_decay": 1.5}, "lr_decay"),
        ({"lr_floor": -1.0}, "lr_floor"),
        ({"batch_size": 0}, "batch_size"),
        ({"optimizer": "gd", "batch_size": 4}, "batch_size"),
        ({"max_epochs": 0}, "max_epochs"),
        ({"stop_at_train_accuracy": 1.5}, "stop_at_train_accuracy"),
        ({"stop_metric": "keras"}, "stop_metric"),
        ({"select_best": "val_acc"}, "select_best"),
        ({"patience": 0}, "patience"),
        ({"eval_every": 0}, "eval_every"),
        ({"device": "tpu"}, "device"),
    ],
)
def test_bad_config_raises(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        TrainConfig(**kwargs)


def test_bad_inputs_raise() -> None:
    X, y, Xv, yv = tiny_data(2, 6)
    m = _mha([1, 2])
    cfg = TrainConfig(max_epochs=1, select_best="last")
    with pytest.raises(ValueError, match="loss"):
        train_ensemble(m, X, y, loss="hinge", config=cfg)
    with pytest.raises(ValueError, match="y_train must have shape"):
        train_ensemble(m, X, y[:1], loss="cross_entropy", config=cfg)
    with pytest.raises(ValueError, match="X_train must have shape"):
        train_ensemble(m, X[:, :4], y, loss="cross_entropy", config=cfg)
    with pytest.raises(ValueError, match="X_val and y_val"):
        train_ensemble(m, X, y, Xv, None, loss="cross_entropy", config=cfg)
    with pytest.raises(ValueError, match="select_best='val_loss' needs"):
        train_ensemble(m, X, y, loss="cross_entropy", config=TrainConfig(max_epochs=1))
    with pytest.raises(ValueError, match="X_train contains non-finite"):
        bad = X.clone()
        bad[0, 0, 0, 0] = float("nan")
        train_ensemble(m, bad, y, loss="cross_entropy", config=cfg)
    with pytest.raises(ValueError, match="labels in \\{-1, \\+1\\}"):
        ShallowEncoder(D, 4, n_models=2)  # noqa: B018 - build only
        train_ensemble(ShallowEncoder(D, 4, n_models=2, dtype=F64), X, y, loss="logistic",
                       config=cfg)
    with pytest.raises(ValueError, match="y_train must hold labels in \\{0, 1\\}"):
        train_ensemble(ShallowEncoder(D, 4, n_models=2, dtype=F64), X, 2 * y, loss="bce_logits",
                       config=cfg)
    with pytest.raises(ValueError, match="stop_at_train_accuracy needs"):
        train_ensemble(ShallowEncoder(D, 4, n_models=2, dtype=F64), X, y.to(F64), loss="mse",
                       config=TrainConfig(max_epochs=1, select_best="last",
                                          stop_at_train_accuracy=1.0))
    with pytest.raises(ValueError, match="config must be a TrainConfig"):
        train_ensemble(m, X, y, loss="cross_entropy", config={"lr": 0.1})
    with pytest.raises(ValueError, match="seed must have length"):
        train_ensemble(m, X, y, loss="cross_entropy", config=cfg, seed=[1, 2, 3])
    with pytest.raises(ValueError, match="outputs"):
        train_ensemble(m, X, y, loss="bce_logits", config=cfg)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            train_ensemble(m, X, y, loss="cross_entropy",
                           config=TrainConfig(max_epochs=1, select_best="last", device="cuda"))


def test_per_model_buffers_follow_their_models_when_some_stop() -> None:
    """Token tables are per-model buffers; after a model stops, the others keep theirs."""
    from genbounds.data import make_sparse_majority_batch

    batch = make_sparse_majority_batch(7, [1, 2, 3], n_train=20, n_val=10, s=3, d=D,
                                       dtype=F64)
    bits = batch.bits_train.to(F64)
    y = batch.y_train.clone()
    y[0] = 1  # model 0 reaches training accuracy 1.0 first and stops
    bits[1:, 10:] = bits[1:, :10]
    y[1:, 10:] = 1 - y[1:, :10]  # contradictory labels: models 1 and 2 never stop early

    def build(seeds: list[int], rows: slice) -> SparseMajorityMHA:
        m = _mha(seeds)
        m.set_token_tables(batch.bit_embeddings[rows], batch.cls_embeddings[rows],
                           batch.positional)
        return m

    cfg = TrainConfig(lr=0.05, momentum=0.9, batch_size=6, max_epochs=12,
                      stop_at_train_accuracy=1.0)
    ens = train_ensemble(build([1, 2, 3], slice(0, 3)), bits, y, batch.bits_val.to(F64),
                         batch.y_val, "bce_logits_onehot", cfg)
    assert ens.stopped_epoch[0] < 11 and (ens.stopped_epoch[1:] == 11).all()
    for k in (0, 2):
        one = train_ensemble(build([k + 1], slice(k, k + 1)), bits[k:k + 1], y[k:k + 1],
                             batch.bits_val[k:k + 1].to(F64), batch.y_val[k:k + 1],
                             "bce_logits_onehot", cfg)
        _assert_hist_close(one.history["val_loss"][0],
                           ens.history["val_loss"][k, : one.epochs_run], rtol=1e-9)
        for name, p in one.final_state.items():
            torch.testing.assert_close(p[0], ens.final_state[name][k], rtol=1e-9, atol=1e-12)
