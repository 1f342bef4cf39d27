"""The command line meets faults with a named error and an exit status, never a traceback.

Issue #25 section 2 and issue #28 section 1: ``--help`` of every subcommand, a damaged unit in a
complete store, ``--on-code-change error``, a source file changed after import, a unit that
returns an undeclared NaN (its computed result is kept aside), a directory without permissions,
and a store that cannot be written. A tiny experiment is registered for the test.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from genbounds import cli
from genbounds.experiments import registry
from genbounds.experiments.registry import Experiment, register_experiment
from genbounds.results import DAMAGE_EXIT_CODE, ResultStore

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class FaultUnit:
    PROTOCOL_VERSION: ClassVar[int] = 1
    n: int


RUNS: list[int] = []
NAN: dict[str, bool] = {"on": False}


def _run_unit(u: FaultUnit, progress: bool) -> dict[str, Any]:
    RUNS.append(u.n)
    x = np.arange(3.0) + u.n
    if NAN["on"]:
        x[1] = np.nan
    return {"x": x[None], "n": np.array([u.n])}


@pytest.fixture()
def fake():
    exp = register_experiment(Experiment(
        name="fake_faults", chapter="notebooks/none.md", description="test",
        config=lambda scale: (1, 2), units=lambda cfg: [FaultUnit(n) for n in cfg],
        run_unit=_run_unit, code=("genbounds.scale",)))
    RUNS.clear()
    NAN["on"] = False
    yield exp
    registry._EXPERIMENTS.pop("fake_faults", None)
    NAN["on"] = False


def _reproduce(root: Path, *extra: str) -> int:
    return cli.main(["reproduce", "--only", "fake_faults", "--scale", "quick", "--results-dir",
                     str(root), "--no-progress", *extra])


def _subcommands() -> list[list[str]]:
    cmds = [[], ["bounds"], ["experiments"], ["reproduce"], ["store"], ["store", "check"],
            ["store", "repair"]]
    parser = cli._parser()
    names = {a for action in parser._subparsers._group_actions  # type: ignore[union-attr]
             for a in getattr(action, "choices", {}) or {}}
    assert {"bounds", "experiments", "reproduce", "store"} <= names
    cmds += [[n] for n in sorted(names) if [n] not in cmds]
    return cmds


@pytest.mark.parametrize("cmd", _subcommands(), ids=lambda c: " ".join(c) or "top")
def test_help_of_every_subcommand_prints_usage(cmd: list[str]) -> None:
    res = subprocess.run([sys.executable, "-m", "genbounds", *cmd, "--help"],
                         capture_output=True, text=True, timeout=120, cwd=REPO)
    assert res.returncode == 0, res.stderr
    assert "usage:" in res.stdout and "Traceback" not in res.stderr


def test_damaged_unit_in_a_complete_store_is_a_named_error_then_recomputed(
        tmp_path, fake, capsys) -> None:
    assert _reproduce(tmp_path) == 0
    capsys.readouterr()
    store = ResultStore(tmp_path, "quick")
    store.unit(FaultUnit(2)).json.write_text("{ truncated")
    assert _reproduce(tmp_path) == DAMAGE_EXIT_CODE
    err = capsys.readouterr().err
    assert "damaged result" in err and "--recompute-damaged" in err
    RUNS.clear()
    assert _reproduce(tmp_path, "--recompute-damaged") == 0
    assert RUNS == [2]
    assert store.load(FaultUnit(2), code_modules=("genbounds.scale",)) is not None
    assert list((tmp_path / "_damaged").rglob("*.json"))  # kept, not deleted


def test_on_code_change_error_is_a_named_error(tmp_path, fake, capsys, monkeypatch) -> None:
    assert _reproduce(tmp_path) == 0
    from genbounds.results import store as store_module

    monkeypatch.setattr(store_module, "same_code", lambda *a: False)
    capsys.readouterr()
    code = _reproduce(tmp_path, "--on-code-change", "error")
    err = capsys.readouterr().err
    assert code == cli.STALE_EXIT_CODE and err.startswith("error: ")
    assert "different genbounds code" in err and "--on-code-change" in err


def test_code_changed_after_import_is_a_named_error(tmp_path, fake, capsys, monkeypatch) -> None:
    from genbounds.results import CodeChangedError
    from genbounds.results import store as store_module

    def changed(*args: Any, **kwargs: Any) -> Any:
        raise CodeChangedError("scale.py changed on disk after this process imported genbounds")

    monkeypatch.setattr(store_module.Provenance, "now", changed)
    code = _reproduce(tmp_path)
    err = capsys.readouterr().err
    assert code == cli.STALE_EXIT_CODE and "error: scale.py changed on disk" in err


def test_undeclared_nan_is_named_and_the_computed_result_is_kept(tmp_path, fake,
                                                                  capsys) -> None:
    NAN["on"] = True
    code = _reproduce(tmp_path)
    err = capsys.readouterr().err
    assert code == DAMAGE_EXIT_CODE and "error: " in err and "NaN" in err
    kept = sorted((tmp_path / "_unsaved").rglob("*.npz"))
    assert len(kept) == 1 and str(kept[0]) in err
    with np.load(kept[0]) as npz:
        assert np.isnan(npz["x"][0, 1]) and npz["x"][0, 0] == 1.0
    assert not ResultStore(tmp_path, "quick").has(FaultUnit(1))


_AS_USER = """
import sys
from tests.test_cli_faults import FaultUnit, _run_unit
from genbounds import cli
from genbounds.experiments.registry import Experiment, register_experiment
register_experiment(Experiment(
    name="fake_faults", chapter="notebooks/none.md", description="test",
    config=lambda scale: (1, 2), units=lambda cfg: [FaultUnit(n) for n in cfg],
    run_unit=_run_unit, code=("genbounds.scale",)))
sys.exit(cli.main(["reproduce", "--only", "fake_faults", "--scale", "quick", "--results-dir",
                   sys.argv[1], "--no-progress"]))
"""


def _reproduce_unprivileged(root: Path) -> subprocess.CompletedProcess[str]:
    """``reproduce`` of the fake study in a fresh process, as user nobody when run as root
    (root reads a ``chmod 000`` directory)."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    env = dict(os.environ, PYTHONPATH=f"{REPO}:{REPO / 'src'}", HOME=str(root.parent))
    return subprocess.run([*prefix, sys.executable, "-c", _AS_USER, str(root)],
                          capture_output=True, text=True, timeout=300, cwd=REPO, env=env)


@pytest.fixture()
def shared_dir():
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="genbounds-faults-"))
    base.chmod(0o777)
    yield base
    for p in [base, *base.rglob("*")]:
        if p.is_dir() and not p.is_symlink():
            p.chmod(0o777)
    shutil.rmtree(base)


def test_chmod_000_directory_is_a_named_error(shared_dir) -> None:
    root = shared_dir / "store"
    first = _reproduce_unprivileged(root)
    assert first.returncode == 0, first.stderr
    folder = root / "quick" / "FaultUnit"
    folder.chmod(0)
    res = _reproduce_unprivileged(root)
    assert res.returncode == DAMAGE_EXIT_CODE, res.stderr
    assert "Traceback" not in res.stderr and res.stderr.startswith("error: ")
    assert str(folder) in res.stderr
    folder.chmod(0o777)
    (root / "quick").chmod(0o555)  # a store that cannot take a new unit's folder
    for p in folder.iterdir():
        p.unlink()
    folder.rmdir()
    res = _reproduce_unprivileged(root)
    assert res.returncode == DAMAGE_EXIT_CODE, res.stderr
    assert "Traceback" not in res.stderr and res.stderr.startswith("error: ")


def test_unwritable_new_store_is_a_named_error(tmp_path, fake, capsys, monkeypatch) -> None:
    from genbounds.results import files

    def full(path: Path, data: bytes) -> Path:
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(files, "write_temporary", full)
    code = _reproduce(tmp_path / "new")
    err = capsys.readouterr().err
    assert code == DAMAGE_EXIT_CODE and "disk is full" in err


def test_unwritable_new_store_is_a_named_error_as_a_user(shared_dir) -> None:
    parent = shared_dir / "ro"
    parent.mkdir()
    parent.chmod(0o555)
    res = _reproduce_unprivileged(parent / "store")
    assert res.returncode in (2, DAMAGE_EXIT_CODE), res.stderr
    assert "Traceback" not in res.stderr and res.stderr.startswith("error: ")
    assert str(parent / "store") in res.stderr


def test_bad_git_commit_environment_is_named(tmp_path, fake, capsys, monkeypatch) -> None:
    monkeypatch.setenv("GENBOUNDS_GIT_COMMIT", "not-a-commit")
    assert _reproduce(tmp_path) == 2
    err = capsys.readouterr().err
    assert "GENBOUNDS_GIT_COMMIT" in err and "40 hexadecimal" in err
    monkeypatch.setenv("GENBOUNDS_GIT_COMMIT", "a" * 40)
    with pytest.warns(UserWarning, match="is not a commit of the repository"):
        assert _reproduce(tmp_path) == 0
