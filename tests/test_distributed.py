"""A sweep split across several submitit workers gives exactly the single-process results."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from genbounds.distributed import (
    make_executor,
    run_worker,
    submit_sweep,
    sweep_status,
    worker_share,
)
from genbounds.experiments import concatenate, get_experiment, reproduce
from genbounds.experiments.sparse_majority import SparseMajorityConfig
from genbounds.results import ResultStore

pytest.importorskip("submitit")


def tiny() -> SparseMajorityConfig:
    """Four units (four lengths: the per-T engine), two runs each, a few SGD epochs on CPU:
    seconds."""
    return dataclasses.replace(
        SparseMajorityConfig.paper(device="cpu"), T_values=(9, 11, 13, 15), runs_per_T=2,
        n_train=40, n_val=30, n_test=30, d=8, heads=1, key_dim=4, batch_size=16, max_epochs=3,
        engine="per_T")


def _arrays(root, cfg):
    store = ResultStore(root, namespace="quick")
    parts = reproduce("sparse_majority", "quick", config=cfg, store=store,
                      on_code_change="error")
    assert not any(p.fresh for p in parts), "everything must already be stored"
    return concatenate(parts)


def _same(a: dict, b: dict) -> None:
    assert set(a) == set(b)
    for k in a:
        if "wall_time" in k:  # wall-clock seconds: the only thing allowed to differ
            continue
        assert a[k].dtype == b[k].dtype, k
        assert np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == "f"), k


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    root = tmp_path_factory.mktemp("single")
    cfg = tiny()
    reproduce("sparse_majority", "quick", config=cfg, store=ResultStore(root, namespace="quick"))
    return _arrays(root, cfg)


def test_worker_shares_partition_the_units() -> None:
    for n_units in (0, 1, 5, 10):
        for n in (1, 2, 3, 7):
            shares = [worker_share(n_units, n, w) for w in range(n)]
            assert sorted(i for s in shares for i in s) == list(range(n_units))
    with pytest.raises(ValueError, match="worker"):
        worker_share(4, 2, 2)
    with pytest.raises(ValueError, match="n_workers"):
        worker_share(4, 0, 0)


def test_local_executor_three_workers_equal_single_process(tmp_path, single) -> None:
    root = tmp_path / "store"
    ex = make_executor("local", tmp_path / "logs", timeout_min=10)
    jobs = submit_sweep("sparse_majority", "quick", 3, ex, results_dir=str(root), config=tiny())
    reports = [j.result() for j in jobs]
    computed = sorted(i for r in reports for i in r.computed)
    assert computed == [0, 1, 2, 3], "each unit computed exactly once across the workers"
    assert sweep_status("sparse_majority", "quick", str(root), tiny()) == (4, 4)
    _same(single, _arrays(root, tiny()))


def test_debug_executor_and_no_stealing(tmp_path, single) -> None:
    root = tmp_path / "store"
    # worker 1 of 2 alone, without stealing: only its share (units 1 and 3) is stored
    rep = run_worker("sparse_majority", "quick", 1, 2, str(root), tiny(), steal=False)
    assert rep.computed == (1, 3) and rep.loaded == () and rep.skipped == ()
    assert sweep_status("sparse_majority", "quick", str(root), tiny()) == (2, 4)
    # the rest through the debug executor (in this process); worker 0 finds its share missing
    ex = make_executor("debug", tmp_path / "logs")
    jobs = submit_sweep("sparse_majority", "quick", 2, ex, results_dir=str(root), config=tiny())
    reports = sorted((j.result() for j in jobs), key=lambda r: r.worker)
    assert reports[0].computed == (0, 2)
    assert reports[1].loaded == (1, 3) and reports[1].computed == ()
    _same(single, _arrays(root, tiny()))


def test_the_comparison_detects_a_different_result(tmp_path, single) -> None:
    """The equality check is not vacuous: another seed gives other arrays."""
    root = tmp_path / "store"
    other = dataclasses.replace(tiny(), seed=1)
    run_worker("sparse_majority", "quick", 0, 1, str(root), other)
    with pytest.raises(AssertionError):
        _same(single, _arrays(root, other))


def test_bad_arguments(tmp_path) -> None:
    with pytest.raises(ValueError, match="n_workers"):
        submit_sweep("sparse_majority", "quick", 5, make_executor("debug", tmp_path),
                     results_dir=str(tmp_path), config=tiny())
    with pytest.raises(ValueError, match="executor"):
        make_executor("pbs", tmp_path)
    with pytest.raises(ValueError, match="no experiment"):
        run_worker("nope", "quick", 0, 1, str(tmp_path))
    with pytest.raises(ValueError, match="scale"):
        run_worker("sparse_majority", "huge", 0, 1, str(tmp_path))
    assert get_experiment("sparse_majority").name == "sparse_majority"
