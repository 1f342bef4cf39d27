"""The fused protocol engine (issue #29): every run of every T as one computation.

* It gives the numbers of today's engine (one ensemble per T, :func:`train_ensemble`), in
  float64 over hundreds of epochs: the same stopping epochs, kept epochs and kept weights,
  the same curves (tests below).
* A computation stopped by its budget and resumed from the checkpoint file in a fresh call is
  bitwise the uninterrupted one; the checkpoint does not grow with the epochs.
* A stopped run changes nothing for the others (the runs of one T alone give the numbers of
  the same runs inside the whole protocol).
* On CUDA (skipped elsewhere): the captured epoch (CUDA graph) gives the eager numbers.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from tiny_training import out_of_time_at  # tests/tiny_training.py

from genbounds.data import make_sparse_majority_batch
from genbounds.experiments.sparse_majority import (
    SparseMajorityConfig,
    fused_groups,
    fused_settings,
    run_seeds,
    train_config,
)
from genbounds.models import SparseMajorityMHA
from genbounds.train import BudgetExhausted, UnitCheckpoint, train_ensemble
from genbounds.train.fused_protocol import (
    FusedResult,
    curve_epochs,
    train_fused,
)

# small sizes where, within 400 epochs, three runs reach training accuracy 1.0 (at different
# epochs) and three run to the cap (s = 1: the label is one bit of the sequence)
SMALL = SparseMajorityConfig(T_values=(9, 13), runs_per_T=3, n_train=16, n_val=40, n_test=10,
                             s=1, d=16, heads=2, key_dim=8, lr=0.1, batch_size=8,
                             max_epochs=400, device="cpu")


def checkpoint_out_of_time_at(path: Path, k: int) -> UnitCheckpoint:
    """A checkpoint at ``path`` whose time budget runs out at its ``k``-th chance to save (it
    saves there)."""
    ck = UnitCheckpoint(path)
    out_of_time_at(ck, k)
    return ck



def _fused(config: SparseMajorityConfig, dtype: torch.dtype = torch.float64,
           checkpoint: Any = False, sync_every: int = 50, **kw: Any) -> FusedResult:
    return train_fused(fused_groups(config, dtype),
                       fused_settings(config, sync_every=sync_every, **kw),
                       heads=config.heads, key_dim=config.key_dim, dtype=dtype,
                       checkpoint=checkpoint)


def _per_T(config: SparseMajorityConfig, T: int) -> Any:
    """Today's engine on the runs of one T, in float64."""
    K = config.runs_per_T
    seeds = [run_seeds(config, T, r) for r in range(K)]
    b = make_sparse_majority_batch(T, [s[0] for s in seeds], n_train=config.n_train,
                                   n_val=config.n_val, s=config.s, d=config.d,
                                   dtype=torch.float64, val_tokens=False)
    m = SparseMajorityMHA(d=config.d, heads=config.heads, key_dim=config.key_dim, n_models=K,
                          seeds=[s[1] for s in seeds], dtype=torch.float64)
    m.set_token_tables(b.bit_embeddings, b.cls_embeddings, b.positional)
    return train_ensemble(m, b.bits_train.double(), b.y_train, b.bits_val.double(), b.y_val,
                          loss="bce_logits_onehot", config=train_config(config),
                          seed=[s[2] for s in seeds], checkpoint=False)


@pytest.fixture(scope="module")
def one_thread() -> Any:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def fused64(one_thread: Any) -> FusedResult:
    return _fused(SMALL)


def test_fused_gives_the_per_T_engine_numbers(fused64: FusedResult) -> None:
    """Issue #29 item 1: stopping, kept epoch, kept weights and curves of every run equal
    today's engine (float64, 400 epochs, runs that stop at different epochs and runs capped)."""
    K = SMALL.runs_per_T
    fr = fused64
    assert fr.reached_train_accuracy.sum() >= 2 and (~fr.reached_train_accuracy).sum() >= 2
    assert len(set(fr.stopped_epoch[fr.reached_train_accuracy].tolist())) >= 2
    for i, T in enumerate(SMALL.T_values):
        ref = _per_T(SMALL, T)
        sl = slice(i * K, (i + 1) * K)
        np.testing.assert_array_equal(fr.stopped_epoch[sl], ref.stopped_epoch)
        np.testing.assert_array_equal(fr.best_epoch[sl], ref.best_epoch)
        np.testing.assert_array_equal(fr.reached_train_accuracy[sl],
                                      ref.reached_train_accuracy)
        for n, p in ref.best_state.items():
            np.testing.assert_allclose(fr.best_state[n][sl].numpy(), p.numpy(), rtol=0,
                                       atol=1e-9, err_msg=n)
        # the kept epoch's validation loss, and the curves at the logged epochs (float32)
        best = ref.history["val_loss"][np.arange(K), ref.best_epoch]
        np.testing.assert_allclose(fr.best_val_loss[sl], best, rtol=1e-10)
        rows = np.arange(K)
        for key in ("loss", "accuracy", "val_loss", "val_accuracy"):
            h = ref.history[key]
            np.testing.assert_allclose(fr.at_kept[key][sl], h[rows, ref.best_epoch],
                                       rtol=1e-6, atol=1e-7, err_msg=key)
            np.testing.assert_allclose(fr.at_stop[key][sl], h[rows, ref.stopped_epoch],
                                       rtol=1e-6, atol=1e-7, err_msg=key)
        assert (fr.at_stop["accuracy"][sl][ref.reached_train_accuracy] == 1.0).all()
        ce = fr.curve_epoch[fr.curve_epoch < ref.history["loss"].shape[1]]
        for key in ("loss", "accuracy", "val_loss", "val_accuracy", "lr"):
            want = ref.history[key][:, ce].astype(np.float32)
            got = fr.curves[key][sl, :len(ce)]
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=key)
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7, err_msg=key)


def test_a_stopped_run_changes_nothing_for_the_others(fused64: FusedResult) -> None:
    """The runs of T = 13 alone (no T = 9 runs, which stop at other epochs) give the numbers
    they give inside the whole protocol."""
    alone = _fused(dataclasses.replace(SMALL, T_values=(13,)))
    sl = slice(SMALL.runs_per_T, 2 * SMALL.runs_per_T)
    np.testing.assert_array_equal(alone.stopped_epoch, fused64.stopped_epoch[sl])
    np.testing.assert_array_equal(alone.best_epoch, fused64.best_epoch[sl])
    for n, p in alone.best_state.items():
        np.testing.assert_allclose(p.numpy(), fused64.best_state[n][sl].numpy(), rtol=0,
                                   atol=1e-9, err_msg=n)  # other shapes: other rounding


def test_interrupted_and_resumed_is_bitwise_the_uninterrupted(tmp_path: Path,
                                                              one_thread: Any) -> None:
    """Issue #29 item 3: stopped by its budget at a read-back, resumed from the file by a
    fresh call (data, weights and generators rebuilt from the seeds): bitwise the same."""
    cfg = dataclasses.replace(SMALL, max_epochs=300)
    want = _fused(cfg, torch.float32, sync_every=40)
    path = tmp_path / "unit.pt"
    sizes = []
    for _ in range(3):  # three budgets in a row, each spent at once
        try:
            _fused(cfg, torch.float32, UnitCheckpoint(path, deadline=time.monotonic(),
                                                      every_s=0.0), sync_every=40)
        except BudgetExhausted as exc:
            sizes.append((exc.epoch, path.stat().st_size))
    assert [e for e, _ in sizes] == [40, 80, 120]
    got = _fused(cfg, torch.float32, UnitCheckpoint(path, every_s=1e9), sync_every=40)
    for n in want.best_state:
        assert torch.equal(got.best_state[n], want.best_state[n]), n
    np.testing.assert_array_equal(got.stopped_epoch, want.stopped_epoch)
    np.testing.assert_array_equal(got.best_epoch, want.best_epoch)
    np.testing.assert_array_equal(got.best_val_loss, want.best_val_loss)
    for key, curve in want.curves.items():
        np.testing.assert_array_equal(got.curves[key], curve, err_msg=key)
    # the checkpoint does not grow with the epochs (all runs live until epoch 120 here): the
    # only difference between epoch 40 and 120 is the record of the two resumed segments
    assert (want.stopped_epoch >= 120).all()
    assert 0 <= sizes[2][1] - sizes[0][1] < 200
    assert len(got.segments) == 4 and got.segments[-1].startswith("epochs 120-: cpu")
    assert path.with_name(path.name + ".curves.npz").is_file()


def test_checkpoint_holds_no_momentum_of_stopped_runs(tmp_path: Path, one_thread: Any) -> None:
    from genbounds.train.checkpoint import from_storable

    path = tmp_path / "unit.pt"
    ck = UnitCheckpoint(path, every_s=1e9)
    seen = {"epoch": 0}
    ck.out_of_time = lambda: seen["epoch"] >= 280  # type: ignore[method-assign]
    with pytest.raises(BudgetExhausted):  # after epoch 280: run 0 (T = 9) stopped at 258
        train_fused(fused_groups(SMALL, torch.float32), fused_settings(SMALL, sync_every=40),
                    heads=SMALL.heads, key_dim=SMALL.key_dim, checkpoint=ck,
                    progress=lambda e, total, live: seen.update(epoch=e))
    state = from_storable(torch.load(path, weights_only=True)["partial"]["state"])
    assert state["epoch"] == 280
    assert not state["active"][0] and state["active"].sum() == len(state["live"])
    assert state["params"]["dense_kernel"].shape[0] == len(state["live"]) < 6
    assert state["best"]["dense_kernel"].shape[0] == 6


def test_curve_epochs() -> None:
    e = curve_epochs(200_000)
    assert (np.diff(e) > 0).all() and e[0] == 0 and e[-1] == 199_999
    assert set(range(100)) <= set(e.tolist())
    assert len(e) < 100 + 100 * 3.4 + 2  # about 100 per decade beyond the first 100 epochs
    np.testing.assert_array_equal(curve_epochs(50), np.arange(50))


def test_bad_settings_name_the_argument() -> None:
    ok = fused_settings(SMALL)
    with pytest.raises(ValueError, match="device must be .*'bogus'"):
        dataclasses.replace(ok, device="bogus")
    with pytest.raises(ValueError, match="sync_every"):
        dataclasses.replace(ok, sync_every=0)
    with pytest.raises(ValueError, match="momentum"):
        dataclasses.replace(ok, momentum=1.0)
    with pytest.raises(ValueError, match="lr_decay"):
        dataclasses.replace(ok, lr_decay=1.5)
    with pytest.raises(ValueError, match="groups"):
        train_fused([], ok)
    with pytest.raises(ValueError, match="settings"):
        train_fused(fused_groups(dataclasses.replace(SMALL, n_val=4)), {})  # type: ignore
    with pytest.raises(ValueError, match="optimizer"):
        fused_settings(dataclasses.replace(SMALL, optimizer="adam", momentum=0.0))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_graph_gives_the_eager_numbers() -> None:
    cfg = dataclasses.replace(SMALL, max_epochs=300, device="cuda")
    eager = _fused(cfg, torch.float32, cuda_graphs=False)
    graph = _fused(cfg, torch.float32, cuda_graphs=True)
    assert graph.graphs and not eager.graphs
    np.testing.assert_array_equal(graph.stopped_epoch, eager.stopped_epoch)
    np.testing.assert_array_equal(graph.best_epoch, eager.best_epoch)
    for n in eager.best_state:
        np.testing.assert_allclose(graph.best_state[n].numpy(), eager.best_state[n].numpy(),
                                   rtol=0, atol=1e-5, err_msg=n)


def test_a_fused_unit_interrupted_at_a_random_read_back_stores_identical_arrays(
        tmp_path: Path, one_thread: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The study's unit (``run``: the fused engine, then the exact metrics, held-out set and
    norms of the kept weights) stopped by its budget at a random read-back and run again
    returns, bit for bit, the arrays of the uninterrupted unit."""
    from genbounds.experiments.sparse_majority import run
    from genbounds.train import unit_checkpoint

    monkeypatch.setenv("GENBOUNDS_FUSED_SYNC", "3")
    cfg = dataclasses.replace(SMALL, max_epochs=30)
    want = run(cfg)
    k = int(np.random.default_rng().integers(1, 10))  # any read-back before the last
    path = tmp_path / "unit.pt"
    with unit_checkpoint(checkpoint_out_of_time_at(path, k)), \
            pytest.raises(BudgetExhausted) as info:
        run(cfg)
    assert info.value.epoch == 3 * k and path.is_file()
    with unit_checkpoint(UnitCheckpoint(path)):
        got = run(cfg)
    assert set(got) == set(want)
    assert want["segments"].count("epochs") == 1 and got["segments"].count("epochs") == 2
    assert f"epochs {3 * k}-: cpu" in got["segments"]
    for key, value in want.items():
        if key in ("group_wall_time_s", "seconds_per_epoch_first_block", "segments"):
            continue
        if not isinstance(value, np.ndarray):
            assert got[key] == value, key
            continue
        a = np.asarray(got[key])
        assert a.dtype == value.dtype and a.shape == value.shape, key
        assert np.array_equal(a, value, equal_nan=a.dtype.kind == "f"), (key, k)
