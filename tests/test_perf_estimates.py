"""genbounds.estimates: measured-rate estimates of time and memory per experiment."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import genbounds.experiments  # noqa: F401  (registers the studies)
from genbounds.estimates import KNOWN, estimate, forward_flops, matmul_gflops, workloads
from genbounds.experiments import get_experiment, registered_experiments
from genbounds.experiments.sparse_majority import SparseMajorityConfig, run


def tiny(epochs: int = 30) -> SparseMajorityConfig:
    return dataclasses.replace(
        SparseMajorityConfig.paper(device="cpu"), T_values=(9, 15), runs_per_T=2, n_train=64,
        n_val=200, n_test=50, batch_size=32, max_epochs=epochs, engine="per_T")


def test_unknown_experiment_gives_none() -> None:
    assert estimate("no_such_experiment", None) is None


def test_every_registered_experiment_is_known() -> None:
    names = {e.name for e in registered_experiments()}
    for name in names:
        if name in KNOWN:
            assert workloads(name, get_experiment(name).config("quick"))


def test_sparse_majority_estimate_is_an_upper_bound_at_the_epoch_cap() -> None:
    """The estimate is labelled an upper bound (every run at the epoch cap), and at tiny T the
    runs really do use every epoch (SGD stays on its plateau). How close estimates come to real
    runs is measured, not asserted: ``tools/check_estimates.py`` compares them with the stored
    wall times of every unit (a timed test fails on a loaded machine whatever the code does)."""
    cfg = tiny()
    est = estimate("sparse_majority", cfg)
    assert est is not None and est.seconds > 0 and est.peak_bytes > 0
    assert "UPPER BOUND" in est.note
    out = run(cfg)
    assert (out["epochs_trained"] == cfg.max_epochs).all()


def test_estimate_grows_with_the_work() -> None:
    a = estimate("sparse_majority", tiny(30))
    b = estimate("sparse_majority", tiny(3000))
    assert a is not None and b is not None
    assert 30 < b.seconds / a.seconds < 200


def test_flops_and_matmul_rate() -> None:
    import torch

    lin = torch.nn.Linear(64, 32, bias=False)
    assert forward_flops(lin, torch.randn(10, 64)) == 2 * 10 * 64 * 32
    rate = matmul_gflops("cpu", n=128, seconds=0.05)  # a rate, whatever the load (was > 0.1:
    assert 0 < rate < float("inf")                     # 0.075 GFLOP/s measured at load 18)


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_quick_workloads_build(name: str) -> None:
    import importlib

    try:
        exp = get_experiment(name)
    except ValueError:
        try:  # register the study even before the lead lists it in genbounds.experiments
            importlib.import_module(f"genbounds.experiments.{name}")
            exp = get_experiment(name)
        except (ImportError, ValueError):
            pytest.skip(f"{name} is not in this checkout")
    ws = workloads(name, exp.config("quick"))
    assert ws
    model, X, y = ws[0].build(2)
    assert X.shape[:2] == (ws[0].K, 2) and y.shape == (ws[0].K, 2)
    assert forward_flops(model, X) > 0


def test_a_stored_unit_calibrates_the_estimate_of_every_unit(tmp_path) -> None:
    """Calibrated on one stored unit, every unit's estimate is its uncalibrated estimate times
    that unit's measured / predicted ratio; a unit stored from another device calibrates
    nothing. The stored wall time is set here, not measured (see the test above)."""
    from genbounds.estimates import calibration, predicted_unit_seconds, unit_seconds
    from genbounds.results import ResultStore, describe_device

    exp = get_experiment("sparse_majority")
    cfg = dataclasses.replace(tiny(15), T_values=(9, 18))
    units = exp.units(cfg)
    store = ResultStore(tmp_path / "here", namespace="quick")
    raw = predicted_unit_seconds("sparse_majority", cfg, store)
    assert raw is not None and len(raw) == 2 and all(r > 0 for r in raw)
    nonfinite, text = exp.declared()
    out0 = run(units[0])
    assert (out0["epochs_trained"] == cfg.max_epochs).all()  # the cap is the real epoch count
    elsewhere = ResultStore(tmp_path / "other", namespace="quick")
    elsewhere.save(units[0], out0, device="a GPU of another kind", wall_time_s=3.0 * raw[0],
                   code_modules=exp.code, nonfinite=nonfinite, text=text)
    assert calibration("sparse_majority", cfg, elsewhere, raw) is None
    store.save(units[0], out0, device=describe_device("cpu"), wall_time_s=3.0 * raw[0],
               code_modules=exp.code, nonfinite=nonfinite, text=text)
    cal = calibration("sparse_majority", cfg, store, raw)
    assert cal is not None and cal.n == 1 and cal.exponent == 1.0
    assert cal.scale == pytest.approx(3.0)
    calibrated = unit_seconds("sparse_majority", cfg, store)
    assert calibrated == pytest.approx([3.0 * r for r in raw])
    assert calibration("sparse_majority", cfg, store, raw, exclude=(0,)) is None


def test_calibration_is_a_factor_for_few_units_and_a_robust_power_for_a_sweep() -> None:
    from genbounds.estimates import fit_calibration

    two = fit_calibration([1.0, 2.0], [3.0, 7.0])
    assert two.exponent == 1.0 and two.scale == pytest.approx(3.25)
    p = np.array([10.0, 30.0, 100.0, 300.0, 1000.0])
    m = 7.0 * p**0.6
    m_out = m.copy()
    m_out[0] *= 20  # one unit that ran under heavy load
    for meas in (m, m_out):
        cal = fit_calibration(p, meas)
        assert cal.exponent == pytest.approx(0.6, abs=0.05)
        assert cal(3000.0) == pytest.approx(7.0 * 3000.0**0.6, rel=0.1)
    for bad in (([1.0], [0.0]), ([1.0, np.nan], [1.0, 1.0]), ([1.0, 2.0], [1.0])):
        with pytest.raises(ValueError, match="predicted and measured"):
            fit_calibration(*bad)
