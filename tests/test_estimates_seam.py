"""The estimator reads the registry, never the other way round (issue #28 §7), and an estimate
says whether it was calibrated on stored units, for every study, the certificates included
(issue #25 §4)."""

from __future__ import annotations

import ast
import dataclasses
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from genbounds.experiments.registry import Estimate, Experiment, sweep

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src" / "genbounds"


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth (function-level imports included)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


def test_the_registry_does_not_import_the_estimator() -> None:
    found = {m for m in imported_modules(PKG / "experiments" / "registry.py")
             if m == "genbounds.estimates" or m.startswith("genbounds.estimates.")}
    assert not found, f"experiments/registry.py imports the estimator: {sorted(found)}"


def test_registering_every_study_does_not_load_the_estimator() -> None:
    code = ("import sys, genbounds.experiments.registry as r; r.registered_experiments(); "
            "print('genbounds.estimates' in sys.modules)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "False", "importing the registry loaded genbounds.estimates"


@dataclass(frozen=True)
class Unit:
    PROTOCOL_VERSION = 1
    n: int


def _run(u: Unit, progress: bool) -> dict[str, np.ndarray]:
    return {"x": np.array([float(u.n)])}


def test_sweep_uses_the_estimator_it_is_given(tmp_path) -> None:
    from genbounds.results import ResultStore

    exp = Experiment(name="fake_seam", chapter="x.md", description="x",
                     config=lambda scale: (1, 2), units=lambda cfg: [Unit(n) for n in cfg],
                     run_unit=_run, code=("genbounds.scale",),
                     estimate=lambda cfg: Estimate(seconds=1.0, peak_bytes=0, device="cpu"))
    store = ResultStore(tmp_path, "quick")
    calls = []

    def slow(name, cfg, st):  # type: ignore[no-untyped-def]
        calls.append(name)
        return [600.0, 600.0]

    report = sweep(exp, "quick", store=store, deadline=time.monotonic() + 60.0,
                   unit_seconds=slow)
    assert calls == ["fake_seam"]
    assert report.done == [] and "its estimate is 10.0 min" in (report.stopped or "")
    # without an estimator: the experiment's own estimate (1 s for both), so both units run
    report = sweep(exp, "quick", store=store, deadline=time.monotonic() + 60.0)
    assert len(report.done) == 2


def test_certificates_estimate_is_calibrated_on_its_stored_unit(tmp_path) -> None:
    from genbounds import estimates
    from genbounds.experiments.registry import get_experiment
    from genbounds.results import ResultStore, describe_device

    exp = get_experiment("certificates")
    cfg = exp.config("quick")
    units = list(exp.units(cfg))
    assert estimates.covers("certificates", cfg)
    raw = estimates.predicted_unit_seconds("certificates", cfg)
    assert raw is not None and len(raw) == len(units)
    own = exp.estimate(cfg)  # type: ignore[misc]
    assert sum(raw) == pytest.approx(own.seconds)  # one unit at a time adds up to the whole
    store = ResultStore(tmp_path, "quick")
    plain = estimates.unit_estimates("certificates", cfg, store)
    assert plain is not None and not plain.calibrated and plain.seconds == raw
    assert plain.describe().startswith("not calibrated")
    # a unit stored from another kind of device calibrates nothing
    store.save(units[0], {"x": [1.0]}, device="cuda (NVIDIA H100, torch 2.13.0)",
               wall_time_s=5.0, code_modules=exp.code)
    assert not estimates.unit_estimates("certificates", cfg, store).calibrated  # type: ignore[union-attr]
    # one that ran here does: its own estimate becomes its measured time, the rest scale
    measured = 3.0 * raw[1]
    store.save(units[1], {"x": [1.0]}, device=describe_device("cpu"), wall_time_s=measured,
               code_modules=exp.code)
    cal = estimates.unit_estimates("certificates", cfg, store)
    assert cal is not None and cal.calibrated
    assert cal.seconds[1] == pytest.approx(measured)
    assert cal.seconds[2] == pytest.approx(3.0 * raw[2])
    assert "calibrated on 1 stored unit" in cal.describe()


def test_the_command_line_says_whether_the_estimate_was_calibrated(tmp_path) -> None:
    from genbounds.cli import describe_estimate
    from genbounds.experiments.registry import get_experiment
    from genbounds.results import ResultStore, describe_device

    exp = get_experiment("certificates")
    cfg = exp.config("quick")
    units = list(exp.units(cfg))
    store = ResultStore(tmp_path, "quick")
    store.save(units[0], {"x": [1.0]}, device="cuda (NVIDIA H100, torch 2.13.0)",
               wall_time_s=5.0, code_modules=exp.code)
    text = describe_estimate(exp, cfg, store)
    assert f"missing of {len(units)} units" in text and "not calibrated" in text, text
    store2 = ResultStore(tmp_path / "b", "quick")
    store2.save(units[0], {"x": [1.0]}, device=describe_device("cpu"), wall_time_s=5.0,
                code_modules=exp.code)
    text = describe_estimate(exp, cfg, store2)
    assert "calibrated on 1 stored unit" in text and "not calibrated" not in text, text


def test_check_estimates_covers_every_study() -> None:
    """tools/check_estimates.py compares a study's stored paper units only where a per-unit
    estimate exists: every registered study must have one."""
    from genbounds import estimates
    from genbounds.experiments import registered_experiments

    missing = [e.name for e in registered_experiments()
               if not e.name.startswith("fake")
               and not estimates.covers(e.name, e.config("paper"))]
    assert not missing, f"no per-unit estimate (tools/check_estimates.py cannot check): {missing}"


def test_own_estimate_needs_a_units_field() -> None:
    from genbounds import estimates
    from genbounds.experiments.registry import get_experiment

    exp = get_experiment("certificates")
    cfg = exp.config("quick")
    assert dataclasses.is_dataclass(cfg)
    assert not estimates.covers("certificates", type(cfg))  # a class, not a config


def test_a_selected_unit_gets_its_own_estimate_not_the_studys(tmp_path) -> None:
    """``--match`` selects one unit of three: the time budget compares that unit's estimate
    (the estimator's entry for it, or the study's estimate spread over all three units) with
    the time left, never the whole study's."""
    from genbounds.results import ResultStore

    exp = Experiment(name="fake_seam_match", chapter="x.md", description="x",
                     config=lambda scale: (1, 2, 3), units=lambda cfg: [Unit(n) for n in cfg],
                     run_unit=_run, code=("genbounds.scale",),
                     estimate=lambda cfg: Estimate(seconds=150.0, peak_bytes=0, device="cpu"))
    store = ResultStore(tmp_path, "quick")

    def per_unit(name, cfg, st):  # type: ignore[no-untyped-def]
        return [600.0, 1.0, 600.0]

    report = sweep(exp, "quick", store=store, deadline=time.monotonic() + 60.0,
                   unit_seconds=per_unit, match={"n": "2"})
    assert [r.config["n"] for r in report.done] == [2], report.stopped
    # the study's own estimate (150 s) spread over its three units: 50 s < 60 s, so it runs
    report = sweep(exp, "quick", store=store, deadline=time.monotonic() + 60.0,
                   match={"n": "3"})
    assert [r.config["n"] for r in report.done] == [3], report.stopped
    # and a unit whose own estimate is over the budget is still refused
    report = sweep(exp, "quick", store=store, deadline=time.monotonic() + 60.0,
                   unit_seconds=per_unit, match={"n": "1"})
    assert report.done == [] and "its estimate is 10.0 min" in (report.stopped or "")


def test_a_paper_unit_records_its_estimate_beside_its_wall_time(tmp_path) -> None:
    """At paper scale the sweep estimates each unit before it runs and the record keeps that
    estimate (seconds and where it was made), so measured / estimated can be read off every
    stored unit; at quick scale nothing is estimated or recorded unless asked."""
    from genbounds.results import ResultStore
    from genbounds.results.provenance import Provenance, recorded_estimate

    exp = Experiment(name="fake_seam_record", chapter="x.md", description="x",
                     config=lambda scale: (1, 2), units=lambda cfg: [Unit(n) for n in cfg],
                     run_unit=_run, code=("genbounds.scale",))

    def per_unit(name, cfg, st):  # type: ignore[no-untyped-def]
        return [30.0, 45.0]

    report = sweep(exp, "paper", store=ResultStore(tmp_path, "paper"), unit_seconds=per_unit)
    got = {r.config["n"]: r.provenance.estimate for r in report.done}
    assert got[1] is not None and got[1]["seconds"] == 30.0 and got[2]["seconds"] == 45.0
    assert got[1]["device"].startswith("cpu")
    again = Provenance.from_record(json.loads(report.done[0].path.with_suffix(".json")
                                              .read_text())["provenance"])
    assert again.estimate == report.done[0].provenance.estimate  # stored and read back
    quick = sweep(exp, "quick", store=ResultStore(tmp_path, "quick"), unit_seconds=per_unit)
    assert all(r.provenance.estimate is None for r in quick.done)
    # no estimate: nothing recorded, and the unit still runs
    none = sweep(exp, "paper", store=ResultStore(tmp_path / "b", "paper"),
                 unit_seconds=lambda name, cfg, st: None)
    assert len(none.done) == 2 and all(r.provenance.estimate is None for r in none.done)
    for bad in (0.0, -1.0, float("nan"), float("inf"), True):
        with pytest.raises(ValueError, match="seconds"):
            with recorded_estimate(bad, "cpu"):
                pass


def test_a_unit_recomputed_for_a_code_change_records_its_estimate(tmp_path) -> None:
    """A paper unit made by other code and recomputed under ``on_code_change="recompute"``
    is estimated before it runs like a missing one (it once recorded no estimate)."""
    from genbounds.results import ResultStore

    def exp_with(code: tuple[str, ...]) -> Experiment:
        return Experiment(name="fake_seam_stale", chapter="x.md", description="x",
                          config=lambda scale: (1, 2), units=lambda cfg: [Unit(n) for n in cfg],
                          run_unit=_run, code=code)

    def per_unit(name, cfg, st):  # type: ignore[no-untyped-def]
        return [30.0, 45.0]

    store = ResultStore(tmp_path, "paper")
    first = sweep(exp_with(("genbounds.scale",)), "paper", store=store,
                  unit_seconds=lambda name, cfg, st: None)
    assert all(r.provenance.estimate is None for r in first.done)
    again = sweep(exp_with(("genbounds.tables",)), "paper", store=store, unit_seconds=per_unit,
                  on_code_change="recompute")
    got = {r.config["n"]: r.provenance.estimate for r in again.done}
    assert got[1] is not None and got[1]["seconds"] == 30.0 and got[2]["seconds"] == 45.0
