"""Hardening of the results store, third pass (issue #37 items 1, 2, 5, 7 and 8).

1. An empty path is not "here", and a directory that is not a results store is never checked
   or repaired (``store repair --root ''`` moved a user's files); a path below a file is refused.
2. Every kill point of a paper-scale recompute leaves the unit with its old pair or its new one,
   never a damaged one (the step hook of ``genbounds.results.store``, one SIGKILL per step).
5. ``store check``/``repair`` see a symbolic link at any depth of the store's own folders, and
   ``reproduce --recompute-damaged`` moves the link that stopped the run.
8. A new store on a full disk: the error names the path, nothing is left behind, nothing is
   computed first.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from genbounds import cli
from genbounds.results import (
    DAMAGE_EXIT_CODE,
    DamagedResultError,
    ResultStore,
    check_store,
    files,
    quarantine,
    repair_store,
    store_main,
)
from genbounds.results import store as store_module
from genbounds.results.errors import Damage
from genbounds.results.files import STORE_MARKER
from tests.test_cli_faults import RUNS, FaultUnit, fake  # noqa: F401  (the fixture)

REPO = Path(__file__).resolve().parents[1]
CODE = ("genbounds.scale",)


def _save(store: ResultStore, value: float, n: int = 1) -> None:
    store.save(FaultUnit(n), {"x": np.full(4, value)}, device="cpu", wall_time_s=1.0,
               code_modules=CODE)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _user_dir(tmp_path: Path) -> Path:
    """A directory as a user has it: subfolders with files, no results store."""
    home = tmp_path / "home"
    for rel in ("notes/todo.txt", "quick/plan.txt", "src/a.py"):
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text("mine\n")
    return home


# ------------------------------------------------------------------ 1. empty and non-store paths
@pytest.mark.parametrize("argv", [["store", "repair", "--root", ""],
                                  ["store", "check", "--root", ""],
                                  ["reproduce", "--status", "--results-dir", ""],
                                  ["reproduce", "--only", "fake_faults", "--results-dir", ""]])
def test_an_empty_path_is_refused(tmp_path, monkeypatch, capsys, fake, argv) -> None:  # noqa: F811
    home = _user_dir(tmp_path)
    before = _tree(home)
    monkeypatch.chdir(home)
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert ("--root" in err or "--results-dir" in err) and "empty path" in err
    assert _tree(home) == before and RUNS == []


def test_repair_and_check_touch_only_a_store(tmp_path, capsys) -> None:
    home = _user_dir(tmp_path)
    before = _tree(home)
    for command in ("repair", "check"):
        assert store_main([command, "--root", str(home)]) == 2
        err = capsys.readouterr().err
        assert f"root {home} is not a results store" in err and STORE_MARKER in err
    with pytest.raises(ValueError, match="not a results store"):
        check_store(home)
    with pytest.raises(ValueError, match="not a results store"):
        repair_store(home)
    with pytest.raises(ValueError, match="not a results store"):
        quarantine(Damage(home / "quick", "x", "y"), home)
    assert _tree(home) == before


def test_reproduce_refuses_a_directory_that_holds_other_things(tmp_path, capsys,
                                                              fake) -> None:  # noqa: F811
    home = _user_dir(tmp_path)
    before = _tree(home)
    for extra in ([], ["--status"], ["--recompute-damaged"]):
        code = cli.main(["reproduce", "--only", "fake_faults", "--scale", "quick",
                         "--results-dir", str(home), "--no-progress", *extra])
        err = capsys.readouterr().err
        assert code == 2 and "--results-dir" in err and "not a results store" in err
    assert _tree(home) == before and RUNS == []


def test_a_results_dir_below_a_file_is_refused(tmp_path, monkeypatch, capsys,
                                               fake) -> None:  # noqa: F811
    a_file = tmp_path / "passwd"
    a_file.write_text("root:x:0:0\n")
    monkeypatch.setenv("GENBOUNDS_RESULTS_DIR", str(a_file / "x"))
    assert cli.main(["reproduce", "--status", "--only", "fake_faults", "--scale", "quick"]) == 2
    err = capsys.readouterr().err
    assert "GENBOUNDS_RESULTS_DIR" in err and f"{a_file} is a regular file" in err
    assert store_main(["check"]) == 2
    monkeypatch.setenv("GENBOUNDS_RESULTS_DIR", "")
    assert cli.main(["reproduce", "--status", "--only", "fake_faults", "--scale", "quick"]) == 2
    assert store_main(["check"]) == 2
    assert capsys.readouterr().err.count("GENBOUNDS_RESULTS_DIR must be a directory") == 2
    with pytest.raises(ValueError, match="empty path"):
        ResultStore("", "quick")
    with pytest.raises(ValueError, match="is a regular file"):
        ResultStore(a_file / "x", "quick")


def test_a_new_store_carries_the_marker_and_an_old_one_is_recognised(tmp_path) -> None:
    root = tmp_path / "new" / "store"
    _save(ResultStore(root, "quick"), 1.0)
    assert (root / STORE_MARKER).is_file()
    assert check_store(root) == []
    # a store written before the marker existed: recognised by what only the store writes
    (root / STORE_MARKER).unlink()
    assert files.is_store(root) and check_store(root) == []
    assert repair_store(root) == [] and (root / STORE_MARKER).is_file()
    # the repository's own store carries it
    assert files.is_store(REPO / "results")
    assert (REPO / "results" / STORE_MARKER).is_file()


def test_a_store_may_be_made_in_an_empty_directory_or_a_new_one(tmp_path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    _save(ResultStore(empty, "quick"), 1.0)
    assert (empty / STORE_MARKER).is_file()
    home = _user_dir(tmp_path)
    with pytest.raises(ValueError, match="not a results store"):  # nothing written there
        _save(ResultStore(home, "quick"), 1.0)
    assert not (home / STORE_MARKER).exists() and not (home / ".locks").exists()


def test_a_marker_written_by_another_process_meanwhile_is_accepted(tmp_path, monkeypatch) -> None:
    """Two workers making one new store: the second sees the first's marker only after its own
    first look (found by the concurrent-workers test on the CI machine)."""
    root = tmp_path / "shared"
    real = files.store_problem

    def other_process_writes_the_marker(path: Path) -> str | None:
        problem = real(path)
        path.mkdir(parents=True, exist_ok=True)
        (path / STORE_MARKER).write_text("made by another worker\n")
        return problem

    monkeypatch.setattr(files, "store_problem", other_process_writes_the_marker)
    files.ensure_store(root)
    assert (root / STORE_MARKER).read_text() == "made by another worker\n"
    os.unlink(root / STORE_MARKER)
    os.mkdir(root / STORE_MARKER)  # what is there is not a marker: still refused, by its type
    with pytest.raises(ValueError, match="is a directory; the store's marker is a regular file"):
        monkeypatch.setattr(files, "store_problem", real)
        files.ensure_store(root)


# ------------------------------------------------------------------ 2. kill points of a recompute
_KILL = """
import os, signal, sys
import numpy as np
from genbounds.results import ResultStore
from genbounds.results import store as store_module
from tests.test_cli_faults import FaultUnit

def hook(step):
    if step == sys.argv[2]:
        os.kill(os.getpid(), signal.SIGKILL)

store_module._STEP_HOOK = hook
ResultStore(sys.argv[1], "paper").save(FaultUnit(1), {"x": np.full(4, 2.0)}, device="cpu",
                                       wall_time_s=1.0, code_modules=("genbounds.scale",))
"""

STEPS = ["locked", "strays removed", "arrays written", "written", "keeping npz", "keeping json",
         "kept", "arrays committed", "committed"]


def test_the_step_hook_sees_every_step_of_a_recompute(tmp_path, monkeypatch) -> None:
    """The kill test below covers each of these steps: a step added to the write must be here."""
    _save(ResultStore(tmp_path, "paper"), 1.0)
    seen: list[str] = []
    monkeypatch.setattr(store_module, "_STEP_HOOK", seen.append)
    _save(ResultStore(tmp_path, "paper"), 2.0)
    assert seen == STEPS


def _killed_recompute(root: Path, step: str) -> None:
    env = dict(os.environ, PYTHONPATH=f"{REPO}:{REPO / 'src'}")
    res = subprocess.run([sys.executable, "-c", _KILL, str(root), step], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == -signal.SIGKILL, res.stderr


def _never(config: object) -> dict[str, object]:
    raise AssertionError("a plain run after the kill must not compute")


@pytest.mark.parametrize("step", STEPS)
def test_every_kill_point_of_a_paper_recompute_leaves_the_old_or_the_new_pair(tmp_path,
                                                                           step) -> None:
    root = tmp_path / "store"
    _save(ResultStore(root, "paper"), 1.0)
    unit = ResultStore(root, "paper").unit(FaultUnit(1))
    old_npz = _sha(unit.npz)
    _killed_recompute(root, step)
    # clean as it is: no damaged unit (a recompute stopped between its renames is a leftover)
    assert [d for d in check_store(root) if d.kind == "damaged"] == []
    # a plain run loads it without computing: the old pair, or the new one once renamed
    got = ResultStore(root, "paper").run(FaultUnit(1), _never, code_modules=CODE)
    new = step in ("arrays committed", "committed")
    assert got.arrays["x"][0] == (2.0 if new else 1.0)
    assert [d for d in check_store(root) if d.kind == "damaged"] == []
    if new:  # the old arrays are kept, in _replaced/
        assert old_npz in {_sha(p) for p in (root / "_replaced").rglob("*.npz")}
        assert check_store(root) == []
    repair_store(root)
    assert check_store(root) == []


def test_an_interrupted_recompute_is_a_leftover_that_repair_completes(tmp_path,
                                                                     capsys) -> None:
    root = tmp_path / "store"
    _save(ResultStore(root, "paper"), 1.0)
    _killed_recompute(root, "arrays committed")
    (found,) = check_store(root)
    assert found.kind == "leftover" and "stopped between its two renames" in found.problem
    assert store_main(["check", "--root", str(root)]) == 0
    assert store_main(["repair", "--root", str(root)]) == 0
    out = capsys.readouterr().out
    assert "completed paper/FaultUnit/" in out and "is now in place" in out
    assert check_store(root) == [] and not list((root / "_damaged").rglob("*.json"))
    loaded = ResultStore(root, "paper").load(FaultUnit(1), code_modules=CODE)
    assert loaded is not None and loaded.arrays["x"][0] == 2.0


def test_a_plain_reproduce_after_a_killed_recompute_exits_0(tmp_path, capsys,
                                                           fake) -> None:  # noqa: F811
    root = tmp_path / "store"
    argv = ["reproduce", "--only", "fake_faults", "--scale", "paper", "--results-dir",
            str(root), "--no-progress"]
    assert cli.main(argv) == 0
    _killed_recompute(root, "arrays committed")
    RUNS.clear()
    assert cli.main(argv) == 0, capsys.readouterr().err
    assert RUNS == []  # loaded, not recomputed
    loaded = ResultStore(root, "paper").load(FaultUnit(1), code_modules=CODE)
    assert loaded is not None and loaded.arrays["x"][0] == 2.0 and check_store(root) == []


def test_a_recompute_over_an_interrupted_one_keeps_both_results(tmp_path) -> None:
    root = tmp_path / "store"
    _save(ResultStore(root, "paper"), 1.0)
    _killed_recompute(root, "arrays committed")
    again = ResultStore(root, "paper")
    _save(again, 3.0)
    kept = set()
    for path in (root / "_replaced").rglob("*.npz*"):  # a second copy the same second: .npz.1
        record = json.loads(path.with_name(path.name.replace(".npz", ".json")).read_text())
        assert record["npz_sha256"] == _sha(path)  # each kept pair is a sound pair
        with np.load(path) as npz:
            kept.add(float(npz["x"][0]))
    assert kept == {1.0, 2.0}  # the first result and the interrupted recompute's
    assert check_store(root) == []


# ------------------------------------------------------------------ 5. links at any depth
def _link_cases(root: Path, outside: Path) -> dict[str, Path]:
    return {".checkpoints/quick": root / ".checkpoints" / "quick",
            ".checkpoints/quick/FaultUnit": root / ".checkpoints" / "quick" / "FaultUnit",
            ".locks/quick": root / ".locks" / "quick",
            "_replaced/x": root / "_replaced" / "x",
            "_unsaved/x/y": root / "_unsaved" / "x" / "y"}


@pytest.mark.parametrize("case", [".checkpoints/quick", ".checkpoints/quick/FaultUnit",
                                  ".locks/quick", "_replaced/x", "_unsaved/x/y"])
def test_check_and_repair_see_a_link_at_any_depth(tmp_path, capsys, case) -> None:
    root = tmp_path / "store"
    _save(ResultStore(root, "quick"), 1.0)
    outside = tmp_path / "outside"
    (outside / "FaultUnit").mkdir(parents=True)
    (outside / "FaultUnit" / "precious.txt").write_text("not the store's\n")
    link = _link_cases(root, outside)[case]
    if os.path.lexists(link):
        import shutil

        shutil.rmtree(link)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    found = check_store(root)
    assert [(d.kind, d.path) for d in found] == [("damaged", link)]
    assert "symbolic link" in found[0].problem and str(outside) in found[0].problem
    assert store_main(["check", "--root", str(root)]) == DAMAGE_EXIT_CODE
    (moved,) = repair_store(root)
    assert moved.damage.path == link and not os.path.lexists(link)
    assert (outside / "FaultUnit" / "precious.txt").read_text() == "not the store's\n"
    assert check_store(root) == []


def test_a_file_where_checkpoints_need_a_folder_is_damage(tmp_path) -> None:
    root = tmp_path / "store"
    _save(ResultStore(root, "quick"), 1.0)
    (root / ".checkpoints").mkdir()
    (root / ".checkpoints" / "quick").write_text("not a folder")
    (found,) = check_store(root)
    assert found.path == root / ".checkpoints" / "quick" and "needs a directory" in found.problem
    repair_store(root)
    assert check_store(root) == []


def test_recompute_damaged_moves_a_checkpoints_link_it_was_stopped_by(tmp_path, capsys,
                                                                      fake) -> None:  # noqa: F811
    root = tmp_path / "store"
    argv = ["reproduce", "--only", "fake_faults", "--scale", "quick", "--results-dir",
            str(root), "--no-progress"]
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("not the store's\n")
    (root / ".checkpoints").mkdir(parents=True)
    (root / ".checkpoints" / "quick").symlink_to(outside)
    assert cli.main(argv) == DAMAGE_EXIT_CODE
    err = capsys.readouterr().err
    assert "outside the store" in err and "--recompute-damaged" in err
    assert [d.path for d in check_store(root)] == [root / ".checkpoints" / "quick"]
    assert cli.main([*argv, "--recompute-damaged"]) == 0, capsys.readouterr().err
    assert sorted(RUNS) == [1, 2] and check_store(root) == []
    assert sorted(p.name for p in outside.iterdir()) == ["precious.txt"]
    assert list((root / "_damaged").rglob("quick"))  # the link itself, kept


# ------------------------------------------------------------------ 8. a new store on a full disk
def _disk_full(path: Path, data: bytes) -> Path:
    raise OSError(errno.ENOSPC, "No space left on device")  # as write(2) says it: no name


def test_a_new_store_on_a_full_disk_names_the_path_and_leaves_nothing(tmp_path, monkeypatch,
                                                                      capsys,
                                                                      fake) -> None:  # noqa: F811
    monkeypatch.setattr(files, "write_temporary", _disk_full)
    root = tmp_path / "new" / "store"
    code = cli.main(["reproduce", "--only", "fake_faults", "--scale", "quick", "--results-dir",
                     str(root), "--no-progress"])
    err = capsys.readouterr().err
    assert code == DAMAGE_EXIT_CODE and "Traceback" not in err
    assert str(root / STORE_MARKER) in err and "the disk is full" in err
    assert not (tmp_path / "new").exists()  # no .locks/, no .checkpoints/, no folder
    assert RUNS == []  # failed before any work


def test_an_existing_store_on_a_full_disk_leaves_no_new_folder(tmp_path, monkeypatch) -> None:
    root = tmp_path / "store"
    files.ensure_store(root)
    monkeypatch.setattr(files, "write_temporary", _disk_full)
    with pytest.raises(DamagedResultError, match="disk is full") as info:
        _save(ResultStore(root, "quick"), 1.0)
    assert str(root / ".locks") in str(info.value)
    assert sorted(p.name for p in root.iterdir()) == [STORE_MARKER]
    store = ResultStore(root, "quick")
    with pytest.raises(OSError, match="disk is full") as err:
        store.checkpoint_path(FaultUnit(1))
    assert err.value.filename == str(root / ".checkpoints" / ".gitignore")
    assert sorted(p.name for p in root.iterdir()) == [STORE_MARKER]


def test_a_real_full_disk(tmp_path, capsys, fake) -> None:  # noqa: F811
    """On a real full filesystem (a 16 KiB tmpfs, where this machine lets us mount one)."""
    mnt = tmp_path / "full"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(mnt)],
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({res.stderr.strip()})")
    try:
        fd = os.open(mnt / "fill", os.O_WRONLY | os.O_CREAT)
        try:
            while True:
                os.write(fd, b"\0" * 4096)
        except OSError:
            pass
        finally:
            os.close(fd)
        root = mnt / "store"
        code = cli.main(["reproduce", "--only", "fake_faults", "--scale", "quick",
                         "--results-dir", str(root), "--no-progress"])
        err = capsys.readouterr().err
        assert code == DAMAGE_EXIT_CODE and str(root) in err and "disk is full" in err
        assert sorted(p.name for p in mnt.iterdir()) == ["fill"] and RUNS == []
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
