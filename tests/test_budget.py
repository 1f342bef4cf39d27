"""The time budget: reproduce stops mid-unit, keeps a checkpoint, resumes to the same result.

A tiny resumable experiment is registered here; its loop follows the protocol of
:mod:`genbounds.train.checkpoint`. Time is a fake clock that each epoch advances by one second,
so the test does not depend on the machine's load.
"""

from __future__ import annotations

import types
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest
import torch

from genbounds import cli
from genbounds.experiments import registry
from genbounds.experiments.registry import (
    Estimate,
    Experiment,
    Unfinished,
    register_experiment,
    reproduce,
    status_lines,
    sweep,
)
from genbounds.results import ResultStore, StaleResultWarning
from genbounds.results import provenance as prov
from genbounds.train import checkpoint as ckpt_module
from genbounds.train.checkpoint import BudgetExhausted, current_checkpoint

EPOCHS = 6


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@dataclass(frozen=True)
class Step:
    PROTOCOL_VERSION: ClassVar[int] = 1
    n: int


RUN: dict[str, Any] = {"epochs": [], "clock": None}


def run_unit(u: Step, progress: bool) -> dict[str, Any]:
    """A loop that honours the checkpoint protocol: load, run epochs, save, stop on time."""
    ck = current_checkpoint()
    state = ck.load() if ck is not None else None
    start, x = (0, np.zeros(3)) if state is None else (int(state["epoch"]),
                                                        state["x"].numpy().copy())
    for epoch in range(start, EPOCHS):
        x = x + np.random.default_rng([u.n, epoch]).normal(size=3)
        RUN["epochs"].append((u.n, epoch))
        if RUN["clock"] is not None:
            RUN["clock"].now += 1.0  # one epoch: one second
        if ck is not None and ck.out_of_time() and epoch + 1 < EPOCHS:
            import torch

            ck.save({"epoch": epoch + 1, "x": torch.from_numpy(x)})
            raise BudgetExhausted(epoch + 1, EPOCHS, ck.path)
    return {"x": x[None], "n": np.array([u.n])}


@pytest.fixture()
def fake(monkeypatch):
    clock = Clock()
    fake_time = types.SimpleNamespace(monotonic=clock.monotonic)
    monkeypatch.setattr(ckpt_module, "time", fake_time)
    monkeypatch.setattr(registry, "time", fake_time)
    monkeypatch.setattr(cli, "time", types.SimpleNamespace(monotonic=clock.monotonic,
                                                           perf_counter=clock.monotonic))
    RUN["epochs"], RUN["clock"] = [], clock
    exp = register_experiment(Experiment(
        name="fake_budget", chapter="notebooks/none.md", description="test",
        config=lambda scale: (1, 2, 3), units=lambda cfg: [Step(n) for n in cfg],
        run_unit=run_unit, code=("genbounds.scale",), resumable=True,
        estimate=lambda cfg: Estimate(seconds=EPOCHS * len(cfg), peak_bytes=0, device="cpu")))
    yield exp, clock
    registry._EXPERIMENTS.pop("fake_budget", None)
    RUN["clock"] = None


def test_budget_stops_mid_unit_and_the_rerun_resumes_to_the_same_arrays(tmp_path, fake,
                                                                        capsys) -> None:
    exp, clock = fake
    reference = reproduce(exp, "quick", store=ResultStore(tmp_path / "ref", "quick"))
    epochs_uninterrupted = len(RUN["epochs"])
    assert epochs_uninterrupted == 3 * EPOCHS
    RUN["epochs"].clear()

    store = ResultStore(tmp_path / "s", "quick")
    report = sweep(exp, "quick", store=store, deadline=clock.now + EPOCHS + 2.5)
    assert not report.complete and [r is not None for r in report.results] == [True, False,
                                                                               False]
    ((unit, epoch, total, path),) = report.in_progress
    assert unit == Step(2) and epoch == 3 and total == EPOCHS
    assert path == store.checkpoint_path(Step(2)) and path.is_file()
    assert report.left == [Step(3)]
    text = report.describe()
    assert "1 of 3 units done" in text and "(epoch 3 of 6)" in text and "left: 1" in text
    assert "in progress" in status_lines(exp, "quick", store=store)[0]
    from genbounds.results import check_store, store_main

    assert check_store(store.root) == []  # a checkpoint is not a result, nor damage
    assert store_main(["check", "--root", str(store.root)]) == 0
    listed = capsys.readouterr().out
    assert "in progress" in listed and f"{store.unit(Step(2)).key}.pt" in listed
    assert any("in progress" in line and "(epoch 3 of 6)" in line
               for line in status_lines(exp, "quick", store=store))
    with pytest.raises(Unfinished, match=r"in progress: unit Step\(n=2\) \(epoch 3 of 6\)"):
        reproduce(exp, "quick", store=store, deadline=clock.now)  # no time left at all
    # rerun without a budget: unit 2 resumes at epoch 3, unit 3 runs whole
    RUN["epochs"].clear()
    done = reproduce(exp, "quick", store=store)
    assert RUN["epochs"] == [(2, e) for e in range(3, EPOCHS)] + [(3, e) for e in range(EPOCHS)]
    for a, b in zip(done, reference, strict=True):
        np.testing.assert_array_equal(a.arrays["x"], b.arrays["x"])
    assert not path.exists() and not store.in_progress(Step(2))
    head = status_lines(exp, "quick", store=store)[0]
    assert "3 stored, 0 in progress, 0 missing, 0 damaged" in head


def test_a_unit_that_cannot_finish_and_cannot_stop_is_not_started(tmp_path, fake) -> None:
    exp, clock = fake
    slow = Experiment(name="fake_budget_slow", chapter="x.md", description="x",
                      config=exp.config, units=exp.units, run_unit=run_unit, code=exp.code,
                      estimate=lambda cfg: Estimate(seconds=600.0 * len(cfg), peak_bytes=0,
                                                    device="cpu"))
    store = ResultStore(tmp_path, "quick")
    report = sweep(slow, "quick", store=store, deadline=clock.now + 60.0)
    assert report.done == [] and report.in_progress == [] and RUN["epochs"] == []
    assert "not started" in (report.stopped or "") and "10.0 min" in report.stopped  # type: ignore[operator]
    assert "not resumable" in report.describe()


def test_a_unit_that_does_not_fit_is_passed_over_and_a_later_one_runs(tmp_path, fake) -> None:
    """A non-resumable unit whose estimate exceeds the time left is not started, and the sweep
    goes on: the cheaper unit after it runs (before: the sweep stopped at the first)."""
    exp, clock = fake
    est = {1: 600.0, 2: 6.0, 3: 600.0}  # seconds per unit: only unit 2 fits in 60 s
    mixed = Experiment(name="fake_budget_mixed", chapter="x.md", description="x",
                       config=exp.config, units=exp.units, run_unit=run_unit, code=exp.code,
                       estimate=None)
    store = ResultStore(tmp_path, "quick")
    report = sweep(mixed, "quick", store=store, deadline=clock.now + 60.0,
                   unit_seconds=lambda name, cfg, st: [est[n] for n in cfg])
    assert [r is not None for r in report.results] == [False, True, False]
    assert RUN["epochs"] == [(2, e) for e in range(EPOCHS)]
    assert [u.n for u, _ in report.not_started] == [1, 3]  # each once, over both passes
    assert "10.0 min" in report.not_started[0][1]
    assert "not started" in (report.stopped or "") and "1 more unit" in report.stopped  # type: ignore[operator]


def test_cli_budget_prints_done_in_progress_left_and_exits_0(tmp_path, fake, capsys) -> None:
    exp, clock = fake
    code = cli.main(["reproduce", "--only", "fake_budget", "--scale", "quick", "--results-dir",
                     str(tmp_path), "--no-progress", "--budget-minutes",
                     str((EPOCHS + 2.5) / 60 / cli.BUDGET_MARGIN)])
    out = capsys.readouterr().out
    assert code == 0
    assert "1 of 3 units done" in out and "in progress" in out and "(epoch 3 of 6)" in out
    assert "run the same command again to resume" in out
    assert cli.main(["reproduce", "--status", "--only", "fake_budget", "--scale", "quick",
                     "--results-dir", str(tmp_path)]) == 0
    status = capsys.readouterr().out
    device = "cuda" if torch.cuda.is_available() else "cpu"  # the fake unit runs on "auto"
    assert "1 stored, 1 in progress, 1 missing" in status and f"min on {device}" in status
    assert cli.main(["reproduce", "--only", "fake_budget", "--scale", "quick", "--results-dir",
                     str(tmp_path), "--no-progress"]) == 0
    assert "estimate: ~" in capsys.readouterr().out
    assert cli.main(["reproduce", "--only", "fake_budget", "--scale", "quick", "--results-dir",
                     str(tmp_path), "--no-progress"]) == 0
    assert "nothing to compute: all 3 units stored" in capsys.readouterr().out


def test_paper_results_are_kept_and_warned_not_recomputed(tmp_path, fake, monkeypatch) -> None:
    exp, clock = fake
    store = ResultStore(tmp_path, "paper")
    real = prov.code_fingerprint
    monkeypatch.setattr(prov, "code_fingerprint", lambda modules=None: "0" * 16)
    first = reproduce(exp, "paper", store=store)  # stored by "older code"
    monkeypatch.setattr(prov, "code_fingerprint", real)
    RUN["epochs"].clear()
    with pytest.warns(StaleResultWarning, match="different genbounds code"):
        kept = reproduce(exp, "paper", store=ResultStore(tmp_path, "paper"))
    assert RUN["epochs"] == [] and all(r.stale and not r.fresh for r in kept)
    with pytest.warns(StaleResultWarning):
        arrays, parts = registry.load_or_run(exp, "paper", store=ResultStore(tmp_path, "paper"))
    assert RUN["epochs"] == []
    # recompute only when asked; the old records are moved aside, never overwritten
    old_bytes = first[0].path.read_bytes()
    fresh_store = ResultStore(tmp_path, "paper")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StaleResultWarning)
        redone = reproduce(exp, "paper", store=fresh_store, on_code_change="recompute")
    assert all(r.fresh and not r.stale for r in redone)
    assert len(fresh_store.replaced) == 3
    moved = fresh_store.replaced[0] / first[0].path.name
    assert moved.read_bytes() == old_bytes and moved.is_relative_to(tmp_path / "_replaced")
    # quick scale keeps recomputing stale results
    quick = ResultStore(tmp_path, "quick")
    monkeypatch.setattr(prov, "code_fingerprint", lambda modules=None: "0" * 16)
    reproduce(exp, "quick", store=quick)
    monkeypatch.setattr(prov, "code_fingerprint", real)
    RUN["epochs"].clear()
    assert all(r.fresh for r in reproduce(exp, "quick", store=quick))
    assert not (tmp_path / "_replaced" / "quick").exists() and quick.replaced == []


def test_progress_bar_shows_the_estimated_time_left(tmp_path, fake, capsys) -> None:
    exp, clock = fake
    report = sweep(exp, "quick", store=ResultStore(tmp_path, "quick"), progress=True)
    assert report.complete
    err = capsys.readouterr().err
    # the estimate is 6 s per unit (the experiment's own, split over its 3 units)
    assert "units" in err and "3/3" in err and "~0.1 min left" in err and "Step(n=" in err


@dataclass(frozen=True)
class EngineUnit:
    PROTOCOL_VERSION: ClassVar[int] = 1
    seed: int


def engine_unit(u: EngineUnit, progress: bool) -> dict[str, Any]:
    """A unit that trains through the engine (which honours the checkpoint protocol itself)."""
    import torch

    from genbounds.models import ShallowEncoder
    from genbounds.train import TrainConfig, train_ensemble

    g = torch.Generator().manual_seed(u.seed)
    X = torch.randn(2, 24, 4, 8, generator=g)
    y = (torch.rand(2, 24, generator=g) < 0.5).to(torch.int64)
    model = ShallowEncoder(8, 4, n_models=2, seeds=[u.seed, u.seed + 1])
    cfg = TrainConfig(optimizer="sgd", lr=0.05, momentum=0.9, batch_size=8, max_epochs=6,
                      select_best="last", device="cpu")
    res = train_ensemble(model, X, y, loss="bce_logits", config=cfg, seed=[u.seed, u.seed])
    params = torch.cat([p.detach().reshape(2, -1) for p in model.parameters()], dim=1)
    return {"train_loss": np.asarray(res.metrics["train_loss"]), "params": params.numpy()}


def test_the_engine_stops_at_the_deadline_and_resumes_bitwise(tmp_path, fake,
                                                              monkeypatch) -> None:
    _, clock = fake

    def ticking() -> float:  # every look at the clock costs 0.1 s of fake time
        clock.now += 0.1
        return clock.now

    monkeypatch.setattr(ckpt_module, "time", types.SimpleNamespace(monotonic=ticking))
    exp = Experiment(name="fake_engine", chapter="x.md", description="x",
                     config=lambda scale: (3, 4), units=lambda cfg: [EngineUnit(s) for s in cfg],
                     run_unit=engine_unit, code=("genbounds.train",), resumable=True)
    reference = reproduce(exp, "quick", store=ResultStore(tmp_path / "ref", "quick"))
    store = ResultStore(tmp_path / "s", "quick")
    report = sweep(exp, "quick", store=store, deadline=clock.now + 1.0)
    ((unit, epoch, total, path),) = report.in_progress
    assert unit == EngineUnit(3) and 1 <= epoch < 6 and total == 6 and path.is_file()
    assert report.done == [] and report.left == [EngineUnit(4)]
    done = reproduce(exp, "quick", store=store)
    for a, b in zip(done, reference, strict=True):
        for key in ("train_loss", "params"):
            np.testing.assert_array_equal(a.arrays[key], b.arrays[key])
    assert not path.exists()


def test_a_unit_computed_in_several_runs_records_every_run(tmp_path, fake) -> None:
    """Issue 34: the stored wall time is that of all the runs, each listed with its device and
    how far it got (not only the last one)."""
    exp, clock = fake
    store = ResultStore(tmp_path, "quick")
    sweep(exp, "quick", store=store, deadline=clock.now + 2.5)  # unit 1 stops at epoch 3
    path = store.checkpoint_path(Step(1))
    first = registry.read_stretches(path)
    assert [s["reached"] for s in first] == ["epoch 3 of 6"] and first[0]["wall_time_s"] == 3.0
    sweep(exp, "quick", store=ResultStore(tmp_path, "quick"),
          deadline=clock.now + 1.5)  # resumes, stops again at epoch 5
    assert [s["reached"] for s in registry.read_stretches(path)] == ["epoch 3 of 6",
                                                                     "epoch 5 of 6"]
    done = reproduce(exp, "quick", store=ResultStore(tmp_path, "quick"))
    p = done[0].provenance
    assert p.stretches is not None and len(p.stretches) == 3
    assert [s["reached"] for s in p.stretches] == ["epoch 3 of 6", "epoch 5 of 6", "done"]
    assert p.wall_time_s == pytest.approx(sum(s["wall_time_s"] for s in p.stretches))
    assert p.wall_time_s >= 5.0  # the two stopped runs took 3 and 2 fake seconds
    assert done[1].provenance.stretches is None  # computed in one run
    # a malformed progress file is named, not read as "no earlier runs"
    store2 = ResultStore(tmp_path / "b", "quick")
    sweep(exp, "quick", store=store2, deadline=clock.now + 2.5)
    progress = store2.checkpoint_path(Step(1)).with_suffix(".progress.json")
    progress.write_text('{"epoch": 3, "total": 6, "stretches": [{"wall_time_s": -1}]}')
    with pytest.raises(ValueError, match="progress.json"):
        reproduce(exp, "quick", store=ResultStore(tmp_path / "b", "quick"))
