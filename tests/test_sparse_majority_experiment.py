"""Tests for genbounds.experiments.sparse_majority on a tiny configuration."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from genbounds.bounds.trauger_tewari_notation import tt_correspondence, tt_norms
from genbounds.data import make_sparse_majority
from genbounds.experiments.sparse_majority import (
    SparseMajorityConfig,
    run,
    run_seeds,
    train_config,
)
from genbounds.models import SparseMajorityMHA
from genbounds.spectral import mixed_norm

TINY = SparseMajorityConfig(
    T_values=(5, 8), runs_per_T=2, n_train=24, n_val=40, s=3, d=8, heads=2, key_dim=4,
    lr=0.05, batch_size=10, max_epochs=6, seed=3, device="cpu",
)


@pytest.fixture(scope="module")
def tiny_result() -> dict[str, np.ndarray]:
    return run(TINY)


def test_presets() -> None:
    paper = SparseMajorityConfig.paper()
    assert paper.T_values == tuple(range(20, 201, 20))
    assert (paper.runs_per_T, paper.n_train, paper.n_val, paper.s, paper.d) == (5, 300, 10000,
                                                                                 9, 64)
    assert (paper.heads, paper.key_dim, paper.optimizer) == (2, 64, "sgd")
    assert (paper.lr, paper.momentum, paper.lr_decay, paper.lr_floor) == (0.01, 0.9, 0.999,
                                                                          0.001)
    assert (paper.batch_size, paper.max_epochs) == (128, 200_000)
    tc = train_config(paper)
    assert tc.momentum_style == "keras" and tc.decay_before_first_epoch
    assert tc.stop_at_train_accuracy == 1.0 and tc.stop_metric == "running"
    assert tc.select_best == "val_loss" and tc.eval_every == 1
    quick = SparseMajorityConfig.quick()
    assert quick.T_values == (20, 60, 100, 140, 200) and quick.runs_per_T == 3
    assert quick.optimizer == "adam" and quick.max_epochs <= 1000
    assert (paper.engine, quick.engine) == ("fused", "per_T")
    assert SparseMajorityConfig.PROTOCOL_VERSION >= 2  # 2: held-out test set
    assert paper.n_test == 10_000 and quick.n_test >= 1000


def test_result_arrays(tiny_result: dict[str, np.ndarray]) -> None:
    out = tiny_result
    n = len(TINY.T_values) * TINY.runs_per_T
    arrays = {k: v for k, v in out.items() if isinstance(v, np.ndarray)}
    assert all(v.shape == (n,) for k, v in arrays.items() if not k.startswith(("tt_", "curve_")))
    # the fused engine (SGD: the protocol) logs curves at the epochs that matter, float32
    assert out["curve_loss"].shape == (n, TINY.max_epochs)
    assert out["curve_loss"].dtype == np.float32
    assert out["engine"].startswith("fused") and out["precision"].startswith("fp32")
    # the norm table of the view is stored with every run, with the TT adapter's norms
    assert {"model.l1", "model.dist_l2", "layer0.head0.W_QK.spectral", "readout.fro"} <= set(out)
    assert (out["model.dist_l2"] > 0).all()  # training moved every run
    d, H = TINY.d, TINY.heads
    assert out["tt_W_QK"].shape == (n, H, d + 1, d + 1)
    assert out["tt_W_v"].shape == (n, H, d + 1, d)
    assert out["tt_W_c"].shape == (n, d, d)
    assert out["tt_w"].shape == (n, d, 2) and out["tt_offset"].shape == (n, 2)
    # the stored matrices give back the stored norms (W_QK norms are of its transpose)
    from genbounds.spectral import mixed_norm
    np.testing.assert_allclose(
        mixed_norm(np.swapaxes(out["tt_W_v"][:, 0], -1, -2).astype(np.float64), 1, np.inf),
        out["tt.W_v_h0_l1inf"], rtol=1e-5)
    np.testing.assert_array_equal(out["T"], [5, 5, 8, 8])
    np.testing.assert_array_equal(out["run"], [0, 1, 0, 1])
    for key in ("train_accuracy", "val_accuracy", "test_accuracy"):
        assert ((out[key] >= 0) & (out[key] <= 1)).all()
    assert (out["test_loss"] > 0).all() and np.isfinite(out["test_loss"]).all()
    assert (out["best_epoch"] <= out["stopped_epoch"]).all()
    np.testing.assert_array_equal(out["epochs_trained"], out["stopped_epoch"] + 1)
    assert out["reached_perfect_train"].dtype == bool
    # a run that did not reach accuracy 1.0 ran until the cap
    capped = ~out["reached_perfect_train"]
    assert (out["epochs_trained"][capped] == TINY.max_epochs).all()
    for h in range(TINY.heads):
        for norm in ("l11", "l1inf", "l21T", "op", "fro"):
            assert (out[f"tt.W_QK_h{h}_{norm}"] > 0).all()
        for norm in ("l11", "l21", "l1inf", "op", "fro"):
            assert (out[f"tt.W_v_h{h}_{norm}"] > 0).all()
        # norm inequalities that must hold for any matrix
        assert (out[f"tt.W_v_h{h}_op"] <= out[f"tt.W_v_h{h}_fro"] + 1e-12).all()
        assert (out[f"tt.W_v_h{h}_fro"] <= out[f"tt.W_v_h{h}_l11"] + 1e-12).all()
        assert (out[f"tt.W_v_h{h}_l1inf"] <= out[f"tt.W_v_h{h}_l11"] + 1e-12).all()
    assert (out["tt.w_l2"] <= out["tt.w_l1"] + 1e-12).all()
    np.testing.assert_allclose(out["B_x_aug_l1"], out["B_x_l1"] + 1)
    np.testing.assert_allclose(out["B_x_aug_l2"], np.sqrt(out["B_x_l2"] ** 2 + 1))


def test_l1_norm_and_token_bounds_recomputed(tiny_result: dict[str, np.ndarray]) -> None:
    out = tiny_result
    # rebuild run 1 at T = 8 from its seeds and check B_x against the actual tokens
    data_seed, _, _ = run_seeds(TINY, 8, 1)
    assert out["data_seed"][3] == data_seed
    ds = make_sparse_majority(8, n_train=TINY.n_train, n_val=TINY.n_val, s=TINY.s, d=TINY.d,
                              seed=data_seed)
    X = torch.cat([ds.train_tokens(dtype=torch.float64), ds.val_tokens(dtype=torch.float64)])
    # every token row that can occur is bounded by B_x (and the bound is attained or nearly:
    # both bit values occur at every position in 64 random samples with overwhelming odds)
    assert X.abs().sum(-1).max().item() <= out["B_x_l1"][3] + 1e-12
    assert X.abs().sum(-1).max().item() == pytest.approx(out["B_x_l1"][3], rel=1e-12)
    assert X.norm(dim=-1).max().item() == pytest.approx(out["B_x_l2"][3], rel=1e-12)


def test_a_run_is_reproducible_alone(tiny_result: dict[str, np.ndarray]) -> None:
    alone = run(dataclasses.replace(TINY, T_values=(8,), runs_per_T=1))
    for key in ("model.l1", "val_loss", "train_loss", "tt.W_QK_h1_fro", "tt.w_l1"):
        np.testing.assert_allclose(alone[key][0], tiny_result[key][2], rtol=1e-4, atol=1e-6)
    assert alone["best_epoch"][0] == tiny_result["best_epoch"][2]


def test_tt_norms_match_direct_computation() -> None:
    m = SparseMajorityMHA(d=6, heads=2, key_dim=3, n_models=2, seeds=[1, 2],
                          dtype=torch.float64)
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.1 * torch.randn_like(p))
    norms = tt_norms(m.view())
    tt = tt_correspondence(m.view(), augment_bias=True)
    for k in range(2):
        Wv_T = tt["W_v"][k, 1].T.numpy()  # the x -> W x map of TT for head 1
        assert norms["W_v_h1_l1inf"][k] == pytest.approx(float(mixed_norm(Wv_T, 1, math.inf)))
        # ||W_v^T||_{1,inf}: largest l1 norm of a column of W_v^T, i.e. of a row of W_v
        assert norms["W_v_h1_l1inf"][k] == pytest.approx(
            np.abs(tt["W_v"][k, 1].numpy()).sum(axis=1).max())
        assert norms["W_c_l11"][k] == pytest.approx(np.abs(m.dense_kernel[k].detach()
                                                           .numpy()).sum())
        assert norms["W_QK_h0_op"][k] == pytest.approx(
            np.linalg.norm(tt["W_QK"][k, 0].numpy(), 2))
        # M = W_QK^T (scores X M x_cls): ||M||_{1,inf} is the largest row l1 norm of W_QK
        # and ||M^T||_{2,1} the sum of the column l2 norms of W_QK
        W = tt["W_QK"][k, 0].numpy()
        assert norms["W_QK_h0_l1inf"][k] == pytest.approx(np.abs(W).sum(axis=1).max())
        assert norms["W_QK_h0_l21T"][k] == pytest.approx(np.linalg.norm(W, axis=0).sum())
        assert norms["offset_abs"][k] == pytest.approx(tt["offset"][k].abs().max().item())


def test_bad_config_raises() -> None:
    with pytest.raises(ValueError, match="T_values"):
        SparseMajorityConfig(T_values=())
    with pytest.raises(ValueError, match="T_values"):
        SparseMajorityConfig(T_values=[20, 40])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="s = 9"):
        SparseMajorityConfig(T_values=(5,))
    with pytest.raises(ValueError, match="s must be odd"):
        SparseMajorityConfig(s=4)
    with pytest.raises(ValueError, match="runs_per_T"):
        SparseMajorityConfig(runs_per_T=0)
    with pytest.raises(ValueError, match="optimizer"):
        SparseMajorityConfig(optimizer="lbfgs")
    with pytest.raises(ValueError, match="lr"):
        SparseMajorityConfig(lr=-1.0)
    with pytest.raises(ValueError, match="config must be"):
        run({"T_values": (20,)})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="device must be .*'bogus'"):
        SparseMajorityConfig(device="bogus")
    with pytest.raises(ValueError, match="max_epochs"):
        SparseMajorityConfig(max_epochs=0)
    with pytest.raises(ValueError, match="batch_size"):
        SparseMajorityConfig(batch_size=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="engine must be"):
        SparseMajorityConfig(engine="per_t")
    with pytest.raises(ValueError, match="engine 'fused'.*'adam'"):
        SparseMajorityConfig(optimizer="adam", momentum=0.0)


def test_engine_decides_the_units_and_old_keys_stay() -> None:
    """The split into units follows ``engine``, not the optimizer; the keys of the configs
    stored before the field existed (the paper unit's committed checkpoint, the quick units)
    stay what they were, and any other engine is part of the key."""
    from genbounds.experiments.sparse_majority import sweep_configs
    from genbounds.results import config_hash, config_to_dict

    per_T = dataclasses.replace(TINY, engine="per_T")  # the protocol's SGD, one unit per T
    assert [c.T_values for c in sweep_configs(per_T)] == [(5,), (8,)]
    assert all(c.engine == "per_T" for c in sweep_configs(per_T))
    paper, quick = SparseMajorityConfig.paper(), SparseMajorityConfig.quick()
    # results/paper/_checkpoints/SparseMajorityConfig/97649333e6126f84.pt is keyed by it
    assert config_hash(paper) == "97649333e6126f84"
    # the committed quick units (results/quick/SparseMajorityConfig/)
    assert [config_hash(u) for u in sweep_configs(quick)] == [
        "d553f1d66e334f0e", "e461b908dde0538a", "75c8fe09b04302b2", "213ae936a9fafc9d",
        "0429cd775c8137f3"]
    assert "engine" not in config_to_dict(paper) and "engine" not in config_to_dict(quick)
    other = dataclasses.replace(paper, engine="per_T")
    assert config_to_dict(other)["engine"] == "per_T"
    assert config_hash(other) != config_hash(paper)
    assert config_hash(per_T) != config_hash(TINY)


def test_stored_sweep_equals_one_shot_run(tiny_result, tmp_path) -> None:
    from genbounds.experiments import load_or_run
    from genbounds.experiments.sparse_majority import sweep_configs
    from genbounds.results import ResultStore

    # SGD (the protocol): one unit, every run of every T in one computation; Adam: one per T
    assert [c.T_values for c in sweep_configs(TINY)] == [(5, 8)]
    adam = dataclasses.replace(TINY, optimizer="adam", momentum=0.0, engine="per_T")
    assert [c.T_values for c in sweep_configs(adam)] == [(5,), (8,)]
    store = ResultStore(tmp_path, namespace="quick")
    arrays, parts = load_or_run("sparse_majority", "quick", config=TINY, store=store)
    assert len(parts) == 1 and all(p.fresh for p in parts)
    assert parts[0].scalars["engine"].startswith("fused")
    for key, value in tiny_result.items():
        if key == "group_wall_time_s" or not isinstance(value, np.ndarray):
            continue
        np.testing.assert_allclose(arrays[key], value, rtol=1e-6, atol=1e-7, err_msg=key)
    again, parts2 = load_or_run("sparse_majority", "quick", config=TINY, store=store)
    assert not any(p.fresh for p in parts2)
    np.testing.assert_array_equal(again["val_loss"], arrays["val_loss"])


def test_a_fused_unit_is_saved_with_the_experiments_declarations(tiny_result, tmp_path) -> None:
    """Every entry of a fused unit's result (its text entries included, as arrays or as
    scalars) is taken by the store with the experiment's own declarations."""
    from genbounds.experiments import get_experiment
    from genbounds.results import ResultStore, describe_device

    exp = get_experiment("sparse_majority")
    nonfinite, text = exp.declared()
    texts = sorted(k for k, v in tiny_result.items() if isinstance(v, str))
    assert "engine" in texts and "segments" in texts  # sanity: the unit has text entries
    store = ResultStore(tmp_path, namespace="quick")
    store.save(TINY, dict(tiny_result), device=describe_device("cpu"), wall_time_s=1.0,
               code_modules=exp.code, nonfinite=nonfinite, text=text)
    back = store.load(TINY, code_modules=exp.code)
    for key in texts:  # all of them kept, as text
        assert str(back.arrays[key]) == tiny_result[key], key
    np.testing.assert_array_equal(back.arrays["val_loss"], tiny_result["val_loss"])


def test_cli_reproduce_fills_the_store(tmp_path, monkeypatch) -> None:
    from genbounds.cli import main
    from genbounds.experiments import sparse_majority as smj

    monkeypatch.setattr(smj.SparseMajorityConfig, "quick", classmethod(lambda cls: TINY))
    assert main(["reproduce", "--scale", "quick", "--only", "sparse_majority",
                 "--results-dir", str(tmp_path), "--no-progress"]) == 0
    assert len(list((tmp_path / "quick" / "SparseMajorityConfig").glob("*.json"))) == 1


def test_a_unit_interrupted_at_a_random_epoch_resumes_to_identical_arrays(tmp_path) -> None:
    """Issue #19 item 1: one sparse-majority unit (one T) stopped by its time budget at a
    random epoch and run again stores, bit for bit, the arrays of the uninterrupted unit."""
    from genbounds.train import BudgetExhausted, UnitCheckpoint, unit_checkpoint
    from tests.test_sparse_majority_fused import checkpoint_out_of_time_at

    unit = dataclasses.replace(TINY, T_values=(8,), max_epochs=9, optimizer="adam", lr=0.02,
                               engine="per_T",
                               momentum=0.0)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        want = run(unit)
        k = int(np.random.default_rng().integers(1, 8))  # any epoch boundary before the last
        path = tmp_path / "unit.pt"
        with unit_checkpoint(checkpoint_out_of_time_at(path, k)), \
                pytest.raises(BudgetExhausted) as info:
            run(unit)
        assert info.value.epoch == k and path.is_file()
        with unit_checkpoint(UnitCheckpoint(path)):
            got = run(unit)
    finally:
        torch.set_num_threads(before)
    assert (want["stopped_epoch"] >= k).all(), "the interruption came after training ended"
    assert set(got) == set(want)
    for key in want:
        if key == "group_wall_time_s":
            continue
        a, b = np.asarray(got[key]), np.asarray(want[key])
        assert a.dtype == b.dtype and a.shape == b.shape, key
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), (key, k)
