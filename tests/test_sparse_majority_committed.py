"""Committed paper-scale checkpoints of the sparse-majority protocol (issue #29 item 3).

* At paper scale the unit's checkpoint lives in the store's committed folder
  (``<root>/paper/_checkpoints/SparseMajorityConfig/``); a fresh copy of the store holding
  only that folder (what a fresh clone has) shows the unit in progress and resumes it to the
  uninterrupted numbers; the leftovers (checkpoint, progress, curves) go once it is stored.
* A checkpoint in the layout of commit d76b6df (stage tag with ``sync_every``, no segments, no
  metrics at the kept and last epoch) is upgraded, checked, read by ``protocol_progress`` and
  resumed to the uninterrupted numbers (the same code on both sides here: bitwise).
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from genbounds.experiments.registry import status_lines, sweep
from genbounds.experiments.sparse_majority import (
    EXPERIMENT,
    SparseMajorityConfig,
    fused_groups,
    fused_settings,
    paper_checkpoint_path,
    protocol_progress,
    upgrade_paper_checkpoint,
)
from genbounds.results import ResultStore
from genbounds.train import BudgetExhausted, UnitCheckpoint
from genbounds.train.checkpoint import from_storable, to_storable
from genbounds.train.fused_protocol import _stage_tag, check_saved_state, train_fused
from tests.test_sparse_majority_fused import SMALL as FUSED_SMALL

# test_sparse_majority_fused.py's small sizes (runs stop at different epochs), 300 epochs
SMALL = dataclasses.replace(FUSED_SMALL, max_epochs=300)
VARYING = ("group_wall_time_s",)


@pytest.fixture()
def one_thread() -> Any:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_a_fresh_store_copy_resumes_the_committed_checkpoint(
        tmp_path: Path, one_thread: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GENBOUNDS_FUSED_SYNC", "40")
    cfg = dataclasses.replace(SMALL, max_epochs=200)
    want = sweep(EXPERIMENT, "paper", config=cfg,
                 store=ResultStore(tmp_path / "whole", namespace="paper")).results[0]
    assert want is not None
    first = ResultStore(tmp_path / "first", namespace="paper")
    with monkeypatch.context() as m:  # the budget is spent at the first read-back
        m.setattr(UnitCheckpoint, "out_of_time", lambda self: True)
        report = sweep(EXPERIMENT, "paper", config=cfg, store=first, deadline=1e18)
    assert report.results == [None] and report.in_progress[0][1:3] == (40, 200)
    committed = tmp_path / "first" / "paper" / "_checkpoints"
    path = paper_checkpoint_path(cfg, root=tmp_path / "first")
    assert path.parent == committed / "SparseMajorityConfig" and path.is_file()
    assert not (tmp_path / "first" / ".checkpoints" / "paper").exists()
    # a fresh clone: only the committed folder travels
    shutil.copytree(committed, tmp_path / "clone" / "paper" / "_checkpoints")
    clone = ResultStore(tmp_path / "clone", namespace="paper")
    lines = status_lines(EXPERIMENT, "paper", store=clone, config=cfg)
    assert "1 in progress" in lines[0] and "(epoch 40 of 200)" in lines[1]
    got = sweep(EXPERIMENT, "paper", config=cfg, store=clone).results[0]
    assert got is not None
    assert got.scalars["segments"].count("epochs") == 2
    assert set(got.arrays) == set(want.arrays)
    for key, value in want.arrays.items():
        if key in VARYING:
            continue
        a = got.arrays[key]
        assert a.dtype == value.dtype and a.shape == value.shape, key
        assert np.array_equal(a, value, equal_nan=a.dtype.kind == "f"), key
    clone_dir = tmp_path / "clone" / "paper" / "_checkpoints" / "SparseMajorityConfig"
    assert clone_dir.is_dir() and sorted(p.name for p in clone_dir.iterdir()) == []


def _legacy_checkpoint(path: Path, cfg: SparseMajorityConfig, stop_at: int,
                       sync_every: int) -> None:
    """A checkpoint as commit d76b6df wrote it: today's file at a read-back, with the old
    stage tag and without segments and the metrics at the kept and last epoch."""
    ck = UnitCheckpoint(path, every_s=1e9)
    seen = {"epoch": 0}
    ck.out_of_time = lambda: seen["epoch"] >= stop_at  # type: ignore[method-assign]
    with pytest.raises(BudgetExhausted):
        train_fused(fused_groups(cfg), fused_settings(cfg, sync_every=sync_every),
                    heads=cfg.heads, key_dim=cfg.key_dim, checkpoint=ck,
                    progress=lambda e, total, live: seen.update(epoch=e))
    raw = torch.load(path, weights_only=True)
    state = from_storable(raw["partial"]["state"])
    for key in ("segments", "at_kept", "at_stop"):
        del state[key]
    raw["partial"]["state"] = to_storable(state)
    raw["partial"]["tag"] = _stage_tag(fused_groups(cfg), fused_settings(cfg), torch.float32,
                                       cfg.heads, cfg.key_dim, legacy_sync_every=sync_every)
    ck.save(raw)


def test_a_d76b6df_checkpoint_is_upgraded_read_and_resumed(tmp_path: Path,
                                                            one_thread: Any) -> None:
    cfg = SMALL
    want = train_fused(fused_groups(cfg), fused_settings(cfg, sync_every=40),
                       heads=cfg.heads, key_dim=cfg.key_dim, checkpoint=False)
    old, new = tmp_path / "old.pt", tmp_path / "new.pt"
    _legacy_checkpoint(old, cfg, 280, 40)
    with pytest.raises(ValueError, match="stage tag"):  # another read-back interval
        upgrade_paper_checkpoint(old, new, ["epochs 0-280: here"], config=cfg,
                                 legacy_sync_every=20)
    upgrade_paper_checkpoint(old, new, ["epochs 0-280: a stated device"], config=cfg,
                             legacy_sync_every=40)
    # what protocol_progress reads is what the file holds
    p = protocol_progress(new, cfg)
    assert (p.epoch, p.total) == (280, 300)
    stopped = want.stopped_epoch < 280
    assert p.stopped == int(stopped.sum()) >= 1 and p.live == 6 - p.stopped >= 1
    assert [r.stopped_epoch for r in p.runs] == [
        int(e) if s else None for e, s in zip(want.stopped_epoch, stopped, strict=True)]
    assert [r.T for r in p.runs] == [9, 9, 9, 13, 13, 13]
    assert p.segments == ("epochs 0-280: a stated device",)
    got = train_fused(fused_groups(cfg), fused_settings(cfg, sync_every=40),
                      heads=cfg.heads, key_dim=cfg.key_dim,
                      checkpoint=UnitCheckpoint(new, every_s=1e9))
    for n in want.best_state:
        assert torch.equal(got.best_state[n], want.best_state[n]), n
    np.testing.assert_array_equal(got.stopped_epoch, want.stopped_epoch)
    np.testing.assert_array_equal(got.best_epoch, want.best_epoch)
    assert got.segments[0] == "epochs 0-280: a stated device"
    assert got.segments[1].startswith("epochs 280-: cpu")
    # not recorded before the upgrade: NaN for the runs that stopped before it
    assert np.isnan(got.at_stop["loss"][stopped]).all()
    assert np.isfinite(got.at_stop["loss"][~stopped]).all()


def test_a_broken_state_is_named(tmp_path: Path, one_thread: Any) -> None:
    old = tmp_path / "old.pt"
    _legacy_checkpoint(old, SMALL, 280, 40)
    state = from_storable(torch.load(old, weights_only=True)["partial"]["state"])
    groups = fused_groups(SMALL)
    assert check_saved_state(state, groups, SMALL.max_epochs) == []
    bad = dict(state, active=np.ones(6, dtype=bool))
    assert "the live runs are not the active ones" in check_saved_state(bad, groups, 300)
    bad = dict(state, best={**state["best"], "dense_kernel": state["best"]["dense_kernel"][:2]})
    assert any("best.dense_kernel" in x for x in check_saved_state(bad, groups, 300))
    stopped = state["stopped_epoch"].copy()
    stopped[~state["active"]] = 299
    assert any("stop epoch" in x for x in check_saved_state(
        dict(state, stopped_epoch=stopped), groups, 300))


def test_the_fused_estimate_uses_the_measured_cost_and_the_epochs_left(
        tmp_path: Path, one_thread: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from genbounds import estimates

    def no_probe(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the fused estimate must not measure rates")

    monkeypatch.setattr(estimates, "_measure", no_probe)
    monkeypatch.setenv("GENBOUNDS_FUSED_SYNC", "40")
    low, high, _ = estimates.FUSED_EPOCH_SECONDS["cpu"]
    paper = estimates.estimate("sparse_majority", SparseMajorityConfig.paper(device="cpu"))
    over, fixed = estimates.FUSED_CPU_OVERHEAD_S
    assert paper is not None
    assert paper.seconds == pytest.approx(fixed + 200_000 * (over + high))
    cfg = dataclasses.replace(SMALL, max_epochs=200)
    store = ResultStore(tmp_path, namespace="paper")
    with monkeypatch.context() as m:  # stopped at the first read-back (epoch 40)
        m.setattr(UnitCheckpoint, "out_of_time", lambda self: True)
        sweep(EXPERIMENT, "paper", config=cfg, store=store, deadline=1e18)
    est = estimates.estimate("sparse_majority", cfg, store)
    assert est is not None and "from the checkpoint at epoch 40" in est.note
    work = (9 + 13) * 3 * cfg.n_val / (5 * 1100 * 10_000)  # every run still live here
    assert est.seconds == pytest.approx(fixed + 160 * (over + high * work))
    assert estimates.unit_seconds("sparse_majority", cfg, store) == [est.seconds]
