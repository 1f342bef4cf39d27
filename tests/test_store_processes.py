"""Real processes against one results store: SIGKILL mid-write, concurrent workers, the CLI path.

The workers are this file run as a script (``python tests/test_store_processes.py worker ...``),
so they use exactly the config class and compute function the tests compare against. A tiny
self-contained computation keeps every run well under a second of work.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from genbounds.results import (
    DamagedResultError,
    ResultStore,
    check_store,
    report_damage,
    run_sweep,
)

HERE = Path(__file__).resolve()


@dataclass(frozen=True)
class Job:
    PROTOCOL_VERSION: ClassVar[int] = 1
    # the code this job depends on: none of genbounds really; a module that other work in a
    # shared checkout does not edit, so no result is recomputed as "made by other code"
    CODE_MODULES: ClassVar[tuple[str, ...]] = ("genbounds.results.keys",)
    n: int
    seed: int


JOBS = [Job(n=40 + 7 * i, seed=i) for i in range(5)]


def compute(cfg: Job) -> dict[str, Any]:
    """The unit of work; logs that it ran and can be slowed down or held, for the tests."""
    x = np.random.default_rng(cfg.seed).normal(size=(cfg.n, 3))
    if log := os.environ.get("STORE_TEST_LOG"):
        with open(log, "a") as fh:  # one short O_APPEND write per unit
            fh.write(f"{cfg.seed}\n")
    if hold := os.environ.get("STORE_TEST_HOLD"):  # "<seed>:<dir>": signal, wait for "go"
        seed, folder = hold.split(":", 1)
        if int(seed) == cfg.seed:
            (Path(folder) / "computing").touch()
            _wait_for(Path(folder) / "go")
    time.sleep(float(os.environ.get("STORE_TEST_DELAY", "0")))
    return {"x": x, "col_sums": x.sum(axis=0), "mean": float(x.mean())}


def _wait_for(path: Path, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > end:
            raise TimeoutError(f"{path} never appeared")
        time.sleep(0.01)


# --------------------------------------------------------------------------- the worker


def worker(argv: list[str]) -> int:
    """Run the sweep (or some seeds) on a store; print what it returned as one JSON line."""
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--seeds", default=None)
    parser.add_argument("--kill-at", default=None, help="EXT:SEED: stop before that rename")
    parser.add_argument("--barrier", default=None, help="DIR:N: start when N workers are ready")
    args = parser.parse_args(argv)
    jobs = JOBS if args.seeds is None else [JOBS[int(s)] for s in args.seeds.split(",")]
    store = ResultStore(args.root, namespace="quick")
    if args.kill_at:
        ext, seed = args.kill_at.split(":")
        target = f"{store.unit(JOBS[int(seed)]).key}.{ext}"
        real_replace = os.replace

        def replace(src: Any, dst: Any) -> None:
            if Path(dst).name == target:  # the temporary file is complete; rename pending
                Path(args.root, "ready-to-kill").touch()
                time.sleep(120)  # the parent kills us here
            real_replace(src, dst)

        os.replace = replace  # type: ignore[assignment]
    if args.barrier:
        folder, n = args.barrier.split(":")
        Path(folder, f"ready-{os.getpid()}").touch()
        end = time.monotonic() + 60
        while len(list(Path(folder).glob("ready-*"))) < int(n) and time.monotonic() < end:
            time.sleep(0.01)
    try:
        out = run_sweep(store, jobs, compute, device="cpu")
    except DamagedResultError as err:  # what the command line does
        return report_damage(err)
    print(json.dumps({"fresh": [r.fresh for r in out],
                      "x": [r.arrays["x"].tolist() for r in out]}))
    return 0


def _start(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    full_env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", **(env or {}))
    return subprocess.Popen([sys.executable, str(HERE), "worker", *args], env=full_env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen[str], timeout: float = 120) -> dict[str, Any]:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


# --------------------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> ResultStore:
    """The results of one uninterrupted single-process sweep."""
    store = ResultStore(tmp_path_factory.mktemp("reference"), namespace="quick")
    run_sweep(store, JOBS, compute, device="cpu")
    return store


def _assert_same_store(store: ResultStore, reference: ResultStore) -> None:
    """Array for array and scalar for scalar the reference; one JSON + one NPZ per unit."""
    for job in JOBS:
        got, want = store.load(job), reference.load(job)
        assert got is not None and want is not None
        assert got.key == want.key and got.config == want.config and got.scalars == want.scalars
        assert sorted(got.arrays) == sorted(want.arrays)
        for name in want.arrays:
            np.testing.assert_array_equal(got.arrays[name], want.arrays[name])
    folder = store.unit(JOBS[0]).folder
    expected = sorted(f"{store.unit(j).key}.{ext}" for j in JOBS for ext in ("json", "npz"))
    assert sorted(p.name for p in folder.iterdir()) == expected  # no temporaries, no orphans
    assert check_store(store.root) == []


# --------------------------------------------------------------------------- the tests


def _kill_mid_write(tmp_path: Path, ext: str, reference: ResultStore) -> None:
    root = tmp_path / "killed"
    proc = _start(str(root), "--kill-at", f"{ext}:3")
    try:
        _wait_for(root / "ready-to-kill")
        assert proc.poll() is None
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    (root / "ready-to-kill").unlink()
    store = ResultStore(root, namespace="quick")
    unit = store.unit(JOBS[3])
    # the kill happened mid-write: units 0-2 committed, unit 3 not, its partial write on disk
    assert [store.has(j) for j in JOBS] == [True, True, True, False, False]
    assert unit.temporaries(), "the killed write left no temporary file: not killed mid-write"
    assert unit.npz.exists() == (ext == "json")
    assert store.load(JOBS[3]) is None  # an uncommitted write is no result
    assert [d.kind for d in check_store(root)] == ["leftover"]
    # resume: exactly the uninterrupted results, nothing left over
    resumed = run_sweep(store, JOBS, compute, device="cpu")
    assert [r.fresh for r in resumed] == [False, False, False, True, True]
    _assert_same_store(store, reference)


def test_sigkill_while_writing_arrays_then_resume(tmp_path, reference) -> None:
    _kill_mid_write(tmp_path, "npz", reference)  # killed before the arrays' rename


def test_sigkill_between_arrays_and_commit_then_resume(tmp_path, reference) -> None:
    _kill_mid_write(tmp_path, "json", reference)  # arrays in place, killed before the JSON's rename


def test_concurrent_workers_give_the_single_process_results(tmp_path, reference) -> None:
    root, barrier = tmp_path / "shared", tmp_path / "barrier"
    barrier.mkdir()
    n_workers = 3
    logs = [tmp_path / f"log-{i}" for i in range(n_workers)]
    procs = [_start(str(root), "--barrier", f"{barrier}:{n_workers}",
                    env={"STORE_TEST_LOG": str(log), "STORE_TEST_DELAY": "0.15"})
             for log in logs]
    outs = [_finish(p) for p in procs]
    computed = collections.Counter(
        int(s) for log in logs if log.exists() for s in log.read_text().split())
    assert computed == collections.Counter(range(len(JOBS)))  # every unit computed exactly once
    for out in outs:  # every worker returned the one stored result of every unit
        for job, x in zip(JOBS, out["x"], strict=True):
            loaded = reference.load(job)
            assert loaded is not None
            np.testing.assert_array_equal(np.array(x), loaded.arrays["x"])
    assert sum(sum(o["fresh"]) for o in outs) == len(JOBS)
    _assert_same_store(ResultStore(root, namespace="quick"), reference)


def test_two_workers_on_the_same_unit_leave_one_result(tmp_path) -> None:
    root, hold = tmp_path / "shared", tmp_path / "hold"
    hold.mkdir()
    first = _start(str(root), "--seeds", "0",
                   env={"STORE_TEST_HOLD": f"0:{hold}", "STORE_TEST_LOG": str(tmp_path / "a")})
    try:
        _wait_for(hold / "computing")  # the first worker holds unit 0 and is computing it
        second = _start(str(root), "--seeds", "0", env={"STORE_TEST_LOG": str(tmp_path / "b")})
        time.sleep(1.0)
        assert second.poll() is None  # waiting for the first worker's lock
    finally:
        (hold / "go").touch()
    a, b = _finish(first), _finish(second)
    assert a["fresh"] == [True] and b["fresh"] == [False]  # the second loaded the first's result
    assert a["x"] == b["x"]
    assert not (tmp_path / "b").exists()  # the second never computed
    store = ResultStore(root, namespace="quick")
    assert check_store(root) == []
    loaded = store.load(JOBS[0])
    assert loaded is not None and [loaded.arrays["x"].tolist()] == a["x"]


def test_damage_stops_the_worker_with_a_message_not_a_traceback(tmp_path) -> None:
    store = ResultStore(tmp_path, namespace="quick")
    run_sweep(store, JOBS, compute, device="cpu")
    unit = store.unit(JOBS[2])
    unit.json.write_bytes(unit.json.read_bytes()[:50])
    proc = _start(str(store.root))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3
    assert "Traceback" not in out + err
    assert err.startswith("error: damaged result: ") and str(unit.json) in err
    assert "not valid JSON" in err and "repair:  python -m genbounds store repair" in err


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        raise SystemExit(worker(sys.argv[2:]))
    raise SystemExit(f"usage: {sys.argv[0]} worker ROOT [options]")
