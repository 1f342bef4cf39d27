"""A paper-scale recompute is atomic: the new pair is written first, the old one kept aside, and
no failure or kill leaves the unit missing or the old arrays in no file (issue #28 s.1)."""

from __future__ import annotations

import errno
import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from genbounds.results import DamagedResultError, ResultStore, check_store, files, repair_store
from genbounds.results import store as store_module
from tests.test_cli_faults import FaultUnit
from tests.test_hardening_store import _KILL  # the script that kills a save at a step

REPO = Path(__file__).resolve().parents[1]
CODE = ("genbounds.scale",)


def _save(store: ResultStore, value: float) -> None:
    store.save(FaultUnit(1), {"x": np.full(4, value)}, device="cpu", wall_time_s=1.0,
               code_modules=CODE)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _all_npz(root: Path) -> set[str]:
    return {_sha(p) for p in root.rglob("*.npz*") if p.is_file() and not p.name.endswith(".tmp")}


@pytest.mark.parametrize("fail_at", ["arrays", "record", "kept"])
def test_a_failed_write_leaves_the_old_pair_in_place(tmp_path, monkeypatch, fail_at) -> None:
    store = ResultStore(tmp_path, "paper")
    _save(store, 1.0)
    unit = store.unit(FaultUnit(1))
    before = (_sha(unit.json), _sha(unit.npz))
    real = files.write_temporary

    def limited(path: Path, data: bytes) -> Path:
        if (fail_at == "arrays" and path.suffix == ".npz") or (
                fail_at == "record" and path.suffix == ".json"):
            raise OSError(errno.EFBIG, "File too large", str(path))
        return real(path, data)

    def hook(step: str) -> None:
        if fail_at == "kept" and step == "kept":
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files, "write_temporary", limited)
    monkeypatch.setattr(store_module, "_STEP_HOOK", hook)
    with pytest.raises(DamagedResultError, match="could not be written"):
        _save(ResultStore(tmp_path, "paper"), 2.0)
    assert (_sha(unit.json), _sha(unit.npz)) == before
    assert unit.temporaries() == [] and check_store(tmp_path) == []
    loaded = ResultStore(tmp_path, "paper").load(FaultUnit(1), code_modules=CODE)
    assert loaded is not None and loaded.arrays["x"][0] == 1.0


def test_a_replaced_pair_is_kept_aside_with_its_bytes(tmp_path) -> None:
    store = ResultStore(tmp_path, "paper")
    _save(store, 1.0)
    unit = store.unit(FaultUnit(1))
    old = {_sha(unit.json), _sha(unit.npz)}
    again = ResultStore(tmp_path, "paper")
    _save(again, 2.0)
    (kept,) = again.replaced
    assert kept.is_relative_to(tmp_path / "_replaced")
    assert {_sha(p) for p in kept.iterdir()} == old
    loaded = again.load(FaultUnit(1), code_modules=CODE)
    assert loaded is not None and loaded.arrays["x"][0] == 2.0 and check_store(tmp_path) == []


@pytest.mark.parametrize("step", ["written", "kept", "arrays committed"])
def test_sigkill_between_the_steps_loses_nothing(tmp_path, step) -> None:
    store = ResultStore(tmp_path, "paper")
    _save(store, 1.0)
    unit = store.unit(FaultUnit(1))
    old_npz = _sha(unit.npz)
    env = dict(os.environ, PYTHONPATH=f"{REPO}:{REPO / 'src'}")
    res = subprocess.run([sys.executable, "-c", _KILL, str(tmp_path), step], cwd=REPO,
                         env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == -signal.SIGKILL, res.stderr
    assert old_npz in _all_npz(tmp_path)  # the old arrays are in a file
    if step in ("written", "kept"):  # the old pair is still committed and sound
        assert _sha(unit.npz) == old_npz and not [
            d for d in check_store(tmp_path) if d.kind == "damaged"]
    # the next run (a repair if the kill tore the pair, then the recompute) keeps them too
    repair_store(tmp_path)
    _save(ResultStore(tmp_path, "paper"), 3.0)
    assert old_npz in _all_npz(tmp_path)
    assert check_store(tmp_path) == []
    loaded = ResultStore(tmp_path, "paper").load(FaultUnit(1), code_modules=CODE)
    assert loaded is not None and loaded.arrays["x"][0] == 3.0
