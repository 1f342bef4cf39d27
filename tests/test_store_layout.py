"""What the store holds besides results: committed logs, committed checkpoints, and the
``.checkpoints`` folder, which is never followed out of the store (issue #25 s.2, #28 s.1)."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from genbounds import cli
from genbounds.experiments.registry import sweep
from genbounds.results import (
    DAMAGE_EXIT_CODE,
    DamagedResultError,
    ResultStore,
    check_store,
    repair_store,
)
from genbounds.results.cli import store_main
from tests.test_cli_faults import FaultUnit, fake  # noqa: F401  (the fixture)

REPO = Path(__file__).resolve().parents[1]


def test_the_repositorys_own_store_passes_check(capsys) -> None:
    """What is committed under results/ (paper results, device logs) is sound; the quick results
    of this machine are not part of the repository and are left out of the verdict."""
    from genbounds.results.repair import scan_with_committed

    root = REPO / "results"
    _, found, committed = scan_with_committed(root)
    committed_damage = [d for d in found
                        if d.path.relative_to(root).parts[0] not in ("quick", ".locks",
                                                                      ".checkpoints")]
    assert committed_damage == []
    if (root / "device_runs").is_dir():
        assert committed["device_runs"] > 0
    assert store_main(["check", "--root", str(root), "--scale", "paper"]) == 0
    assert " 0 damaged" in capsys.readouterr().out


def _copy_store(tmp_path: Path) -> Path:
    """A git repository holding a copy of the committed results/ (logs included)."""
    root = tmp_path / "repo" / "results"
    shutil.copytree(REPO / "results", root, ignore=shutil.ignore_patterns(
        "quick", ".locks", ".checkpoints", "_damaged", "_replaced", "_unsaved"))
    (root / "device_runs" / "2026-11-26-h100" / "README.md").write_text("log\n")
    subprocess.run(["git", "init", "-q", str(root.parent)], check=True)
    subprocess.run(["git", "-C", str(root.parent), "add", "results"], check=True)
    return root


def test_committed_logs_are_known_and_never_moved_by_a_repair(tmp_path, capsys) -> None:
    root = _copy_store(tmp_path)
    logs = sorted(p.relative_to(root) for p in (root / "device_runs").rglob("*") if p.is_file())
    assert logs
    assert check_store(root) == []
    assert store_main(["repair", "--root", str(root)]) == 0
    assert sorted(p.relative_to(root) for p in (root / "device_runs").rglob("*")
                  if p.is_file()) == logs
    assert "device_runs/ (" in capsys.readouterr().out
    # a stray committed file elsewhere is reported, but a repair never moves it out of git
    stray = root / "paper" / "notes.txt"
    stray.write_text("kept\n")
    subprocess.run(["git", "-C", str(root.parent), "add", "results"], check=True)
    assert [d.path for d in check_store(root)] == [stray]
    assert repair_store(root) == [] and stray.is_file()
    untracked = root / "paper" / "other.txt"
    untracked.write_text("x\n")
    assert [r.damage.path for r in repair_store(root)] == [untracked]
    assert not untracked.exists() and stray.is_file()


def test_a_link_in_the_logs_is_refused(tmp_path) -> None:
    root = _copy_store(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    (root / "device_runs" / "link.log").symlink_to(outside)
    found = check_store(root)
    assert [d.path.name for d in found] == ["link.log"]
    assert "symbolic link" in found[0].problem


def test_committed_checkpoints_are_accepted_and_links_in_them_refused(tmp_path) -> None:
    root = tmp_path / "store"
    store = ResultStore(root, "paper")
    store.save(FaultUnit(1), {"x": [1.0]}, device="cpu", wall_time_s=1.0,
               code_modules=("genbounds.scale",))
    ck = root / "paper" / "_checkpoints" / "SparseMajorityConfig"
    ck.mkdir(parents=True)
    (ck / "0123456789abcdef.pt").write_bytes(b"state")
    (ck / "0123456789abcdef.progress.json").write_text("{}")
    assert check_store(root) == [] and check_store(root, "paper") == []
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (ck / "linked").symlink_to(outside)
    assert [d.path for d in check_store(root)] == [ck / "linked"]
    (ck / "linked").unlink()
    shutil.rmtree(root / "paper" / "_checkpoints")
    (root / "paper" / "_checkpoints").symlink_to(outside)
    found = check_store(root, "paper")
    assert [d.path for d in found] == [root / "paper" / "_checkpoints"]


def test_checkpoints_linked_out_of_the_store_are_never_followed(tmp_path, fake, capsys  # noqa: F811
                                                                ) -> None:
    root = tmp_path / "store"
    root.mkdir()
    outside = tmp_path / "outside"
    (outside / "quick" / "FaultUnit").mkdir(parents=True)
    store = ResultStore(root, "quick")
    path = store.unit(FaultUnit(1)).checkpoint
    victims = [outside / "quick" / "FaultUnit" / path.name,
               outside / "quick" / "FaultUnit" / path.with_suffix(".progress.json").name]
    for v in victims:
        v.write_text("not the store's")
    (root / ".checkpoints").symlink_to(outside)
    with pytest.raises(Exception, match="outside the store"):
        store.checkpoint_path(FaultUnit(1))
    assert not store.has_checkpoint(FaultUnit(1)) and not store.in_progress(FaultUnit(1))
    code = cli.main(["reproduce", "--only", "fake_faults", "--scale", "quick", "--results-dir",
                     str(root), "--no-progress"])
    err = capsys.readouterr().err
    assert code == DAMAGE_EXIT_CODE and ".checkpoints" in err and "outside the store" in err
    resumable = dataclasses.replace(fake, name="fake_faults_resumable", resumable=True)
    with pytest.raises(DamagedResultError, match="outside the store"):
        sweep(resumable, "quick", store=store, deadline=time.monotonic() + 300.0)
    assert all(v.read_text() == "not the store's" for v in victims)
    assert sorted(p.name for p in (outside / "quick" / "FaultUnit").iterdir()) == sorted(
        v.name for v in victims)
    assert not any((root / "quick").rglob("*.json"))  # nothing computed through the link
    assert cli.main(["reproduce", "--status", "--only", "fake_faults", "--scale", "quick",
                     "--results-dir", str(root)]) == 0
    status = capsys.readouterr().out
    assert "2 missing" in status and "1 in progress" not in status, status
