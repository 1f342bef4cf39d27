"""Damage the store must name and repair, links it must not follow, and the modes it writes.

Each case of issue #17: the damage gives a :class:`DamagedResultError` (path, problem, repair
command), a line in ``store check`` and a move by ``store repair``; nothing outside the store is
ever read, moved or hung on.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from store_jobs import Job, compute  # tests/store_jobs.py

from genbounds import results
from genbounds.results import (
    DAMAGE_EXIT_CODE,
    DamagedResultError,
    ResultStore,
    check_store,
    repair_store,
    run_sweep,
    store_main,
)
from genbounds.results.files import Unit


def _stored(tmp_path: Path) -> tuple[ResultStore, list[Job], Unit]:
    root = tmp_path / "store"
    store = ResultStore(root, namespace="quick")
    jobs = [Job(4, 0), Job(5, 1), Job(6, 2)]
    run_sweep(store, jobs, compute, device="cpu")
    return store, jobs, store.unit(jobs[1])


def _replace_by_dir(path: Path) -> None:
    path.unlink()
    path.mkdir()
    (path / "inside").write_text("x")


def _replace_by_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _deep_json(path: Path) -> None:
    path.write_text("[" * 100_000 + "]" * 100_000)


def _huge_int(path: Path) -> None:
    meta = json.loads(path.read_text())
    text = json.dumps(meta).replace('"scalars": {', '"scalars": {"big": ' + "7" * 5000 + ", ")
    path.write_text(text)


# (what is done, to which file, the file the error names, words of the problem)
CASES: dict[str, tuple[Callable[[Path], None], str, str, str]] = {
    "json is a directory": (_replace_by_dir, "json", "json", "is a directory, not a file"),
    "npz is a directory": (_replace_by_dir, "npz", "npz", "is a directory, not a file"),
    "npz is a FIFO": (_replace_by_fifo, "npz", "npz", "FIFO"),
    "json is a FIFO": (_replace_by_fifo, "json", "json", "FIFO"),
    "deeply nested json": (_deep_json, "json", "json", "nested too deeply"),
    "5,000-digit integer": (_huge_int, "json", "json", "a value cannot be read"),
}


def _run_with_timeout(fn: Callable[[], object], seconds: float = 20.0) -> object:
    """Run ``fn`` in a thread; fail (instead of hanging the suite) if it blocks."""
    import threading

    out: dict[str, object] = {}

    def target() -> None:
        try:
            out["value"] = fn()
        except BaseException as err:  # noqa: BLE001 - handed back to the test
            out["error"] = err

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "the store blocked (it opened a FIFO?)"
    if "error" in out:
        raise out["error"]  # type: ignore[misc]
    return out.get("value")


@pytest.mark.parametrize("name", list(CASES))
def test_each_damage_is_named_listed_and_moved(tmp_path, name, capsys) -> None:
    damage, target, at_fault, words = CASES[name]
    store, jobs, unit = _stored(tmp_path)
    reference = store.load(jobs[1])
    assert reference is not None
    damage(getattr(unit, target))
    expected = getattr(unit, at_fault)
    with pytest.raises(DamagedResultError) as info:
        _run_with_timeout(lambda: store.load(jobs[1], wait_s=0.5))
    assert info.value.path == expected and words in info.value.problem
    assert info.value.repair.startswith("python -m genbounds store repair")
    found = _run_with_timeout(lambda: check_store(store.root, wait_s=0.5))
    assert [(d.kind, d.path) for d in found] == [("damaged", expected)]  # type: ignore[union-attr]
    assert store_main(["check", "--root", str(store.root)]) == DAMAGE_EXIT_CODE
    assert words in capsys.readouterr().out
    repairs = repair_store(store.root)
    assert len(repairs) == 1 and not os.path.lexists(expected)
    moved = repairs[0].moved_to / expected.name
    assert os.path.lexists(moved)  # moved, not deleted
    assert check_store(store.root) == []
    again = store.run(jobs[1], compute, device="cpu")
    assert again.fresh
    np.testing.assert_array_equal(again.arrays["x"], reference.arrays["x"])


def test_unreadable_file_is_named(tmp_path, monkeypatch) -> None:
    store, jobs, unit = _stored(tmp_path)
    if os.geteuid() != 0:
        unit.npz.chmod(0)
    else:  # root reads anything: make the open fail as it does for another user
        real_open = os.open

        def denied(path, flags, *args, **kwargs):  # type: ignore[no-untyped-def]
            if Path(path) == unit.npz:
                raise PermissionError(errno.EACCES, "Permission denied", str(path))
            return real_open(path, flags, *args, **kwargs)

        monkeypatch.setattr(results.files.os, "open", denied)
    with pytest.raises(DamagedResultError, match="permission denied") as info:
        store.load(jobs[1], wait_s=0.1)
    assert info.value.path == unit.npz
    assert [d.path for d in check_store(store.root, wait_s=0.1)] == [unit.npz]
    repairs = repair_store(store.root, wait_s=0.1)
    assert [r.damage.path for r in repairs] == [unit.npz] and not unit.npz.exists()


@pytest.mark.parametrize("name", ["quick", "_damaged", ".locks"])
def test_a_file_where_the_store_needs_a_directory(tmp_path, name, capsys) -> None:
    store, jobs, unit = _stored(tmp_path)
    root = store.root
    if name == "_damaged":
        (root / "_damaged").write_text("not a directory")
        unit.npz.write_bytes(b"broken")  # a unit to quarantine as well
    else:
        aside = root / f"{name}.orig"
        os.rename(root / name, aside)
        (root / name).write_text("not a directory")
    found = check_store(root, wait_s=0.1)
    paths = [d.path for d in found]
    assert root / name in paths
    problem = next(d.problem for d in found if d.path == root / name)
    assert "where the store needs a directory" in problem
    if name == "quick":
        with pytest.raises(DamagedResultError, match="needs a directory") as info:
            store.load(jobs[0], wait_s=0.1)
        assert info.value.path == root / "quick"
        with pytest.raises(DamagedResultError, match="needs a directory"):
            store.run(Job(7), compute, device="cpu")
    assert store_main(["check", "--root", str(root)]) == DAMAGE_EXIT_CODE
    assert f"{name} " in capsys.readouterr().out
    repairs = repair_store(root, wait_s=0.1)
    assert root / name in [r.damage.path for r in repairs]
    kept = list((root / "_damaged").rglob(name))
    assert any(p.is_file() and p.read_text() == "not a directory" for p in kept)
    assert check_store(root, wait_s=0.1) == []
    run_sweep(store, jobs, compute, device="cpu")  # the store works again


def test_a_stray_name_is_not_a_sound_unit(tmp_path, capsys) -> None:
    store, jobs, unit = _stored(tmp_path)
    stray = unit.folder / "a.b.json"
    stray.write_text("{}")
    n_units, found = results.repair.scan_store(store.root)
    assert [(d.kind, d.path) for d in found] == [("damaged", stray)]
    assert "is not a file of the store" in found[0].problem
    assert store_main(["check", "--root", str(store.root)]) == DAMAGE_EXIT_CODE
    assert "3 sound, 1 damaged" in capsys.readouterr().out
    (moved,) = repair_store(store.root)
    assert not stray.exists() and (moved.moved_to / "a.b.json").read_text() == "{}"


def test_links_out_of_the_store_are_never_followed(tmp_path) -> None:
    store, jobs, unit = _stored(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / f".{unit.key}.npz.abc.tmp"  # looks like a leftover of a unit
    victim.write_text("precious")
    (outside / f"{unit.key}.npz").write_text("precious too")
    link = store.root / "quick" / "Elsewhere"
    link.symlink_to(outside, target_is_directory=True)
    found = check_store(store.root)
    assert [d.path for d in found] == [link] and "outside the store" in found[0].problem
    repairs = repair_store(store.root)
    assert [r.damage.path for r in repairs] == [link]
    assert victim.read_text() == "precious" and sorted(p.name for p in outside.iterdir()) == [
        victim.name, f"{unit.key}.npz"]  # nothing outside was moved
    assert not os.path.lexists(link)
    # a result file that is a link out of the store is not read
    unit.npz.rename(outside / "real.npz")
    unit.npz.symlink_to(outside / "real.npz")
    with pytest.raises(DamagedResultError, match="outside the store") as info:
        store.load(jobs[1], wait_s=0.1)
    assert info.value.path == unit.npz
    repair_store(store.root)
    assert (outside / "real.npz").exists() and not os.path.lexists(unit.npz)


def test_a_linked_lock_file_is_named_not_a_bare_eloop(tmp_path) -> None:
    store, jobs, unit = _stored(tmp_path)
    outside = tmp_path / "elsewhere.lock"
    outside.write_text("")
    unit.lock_path.unlink()
    unit.lock_path.symlink_to(outside)
    with pytest.raises(DamagedResultError, match="symbolic link") as info:
        store.run(jobs[1], compute, device="cpu", recompute=True)
    assert info.value.path == unit.lock_path
    assert "repair" in str(info.value)
    found = check_store(store.root, wait_s=0.1)
    assert [d.path for d in found] == [unit.lock_path]
    repair_store(store.root, wait_s=0.1)
    assert outside.exists() and not os.path.lexists(unit.lock_path)
    assert store.run(jobs[1], compute, device="cpu", recompute=True).fresh


def test_scale_must_name_a_namespace(tmp_path, capsys) -> None:
    store, jobs, unit = _stored(tmp_path)
    tracked = tmp_path / "tracked.txt"  # a file of the repository, next to the store
    tracked.write_text("keep me")
    for bad in ("..", ".", "../store", "_damaged", ".locks", "bogus/x"):
        for cmd in ("check", "repair"):
            with pytest.raises(SystemExit) as info:
                store_main([cmd, "--root", str(store.root), "--scale", bad])
            assert info.value.code == 2
        with pytest.raises(ValueError, match="scale"):
            check_store(store.root, bad)
        with pytest.raises(ValueError, match="scale"):
            repair_store(store.root, bad)
    assert tracked.read_text() == "keep me"
    assert not (store.root / "_damaged").exists()
    with pytest.raises(SystemExit):
        store_main(["check", "--root", str(store.root), "--scale", "bogus"])
    assert "invalid choice" in capsys.readouterr().err


def test_a_full_disk_is_named_and_leaves_nothing(tmp_path, monkeypatch) -> None:
    store, jobs, unit = _stored(tmp_path)
    real = results.files.write_temporary

    def full(path: Path, data: bytes) -> Path:
        if path.suffix == ".json":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, data)

    monkeypatch.setattr(results.files, "write_temporary", full)
    new = Job(9, 9)
    with pytest.raises(DamagedResultError, match="disk is full") as info:
        store.run(new, compute, device="cpu")
    err = info.value
    assert err.path == store.unit(new).json and "nothing was committed" in err.problem
    monkeypatch.setattr(results.files, "write_temporary", real)
    assert store.load(new) is None  # no result
    # the pair is written as temporary files first: the failed write removed its own
    assert store.unit(new).existing() == () and check_store(store.root) == []


def test_a_file_size_limit_stops_the_write_with_a_message(tmp_path) -> None:
    # a real RLIMIT_FSIZE in a child process: the arrays file cannot be written
    script = textwrap.dedent(f"""
        import resource, sys
        from dataclasses import dataclass
        from typing import ClassVar
        import numpy as np
        from genbounds.results import DamagedResultError, ResultStore, report_damage

        @dataclass(frozen=True)
        class Big:
            PROTOCOL_VERSION: ClassVar[int] = 1
            CODE_MODULES: ClassVar[tuple[str, ...]] = ("genbounds.results.keys",)
            n: int

        store = ResultStore({str(tmp_path / 'store')!r}, namespace="quick")
        store.unit(Big(1)).lock()  # the lock directory exists before the limit
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        try:
            store.run(Big(1), lambda c: {{"x": np.zeros(100_000)}}, device="cpu")
        except DamagedResultError as err:
            sys.exit(report_damage(err))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == DAMAGE_EXIT_CODE, proc.stderr
    assert "Traceback" not in proc.stderr and "file-size limit" in proc.stderr
    assert "nothing was committed" in proc.stderr
    root = tmp_path / "store"
    assert check_store(root) == []  # nothing committed, no temporary file left behind
    assert not list((root / "quick").rglob("*.tmp"))


def test_files_respect_the_umask(tmp_path) -> None:
    old = os.umask(0o022)
    try:
        store, jobs, unit = _stored(tmp_path)
        for path in (unit.json, unit.npz, unit.lock_path):
            assert stat.S_IMODE(path.stat().st_mode) == 0o644, path
        os.umask(0o007)
        shared = ResultStore(tmp_path / "shared", namespace="quick")
        res = shared.run(Job(3), compute, device="cpu")
        assert stat.S_IMODE(res.path.stat().st_mode) == 0o660
        assert stat.S_IMODE(shared.unit(Job(3)).npz.stat().st_mode) == 0o660
        assert stat.S_IMODE(shared.unit(Job(3)).lock_path.stat().st_mode) == 0o660
    finally:
        os.umask(old)


def test_nonfinite_and_text_arrays_need_a_declaration(tmp_path) -> None:
    store = ResultStore(tmp_path, namespace="quick")
    padded = np.array([[0.5, 0.25, np.nan]])
    for bad, words in (({"h": padded}, "NaN/inf"), ({"h": np.array([np.inf])}, "NaN/inf"),
                       ({"task": np.array(["a", "b"])}, "strings"),
                       ({"b": np.array([b"x"])}, "strings")):
        with pytest.raises(ValueError, match=words):
            store.save(Job(1), bad, device="cpu", wall_time_s=0.0)
        assert not store.has(Job(1))
    res = store.save(Job(1), {"hist_loss": padded, "task": np.array(["a"]), "x": np.ones(2)},
                     device="cpu", wall_time_s=0.0, nonfinite=("hist_*",), text=("task",))
    assert res.nonfinite == {"hist_loss"}
    loaded = store.load(Job(1))
    assert loaded is not None and loaded.nonfinite == {"hist_loss"}
    np.testing.assert_array_equal(loaded.arrays["hist_loss"], padded)
    record = json.loads(loaded.path.read_text())
    assert record["arrays"]["hist_loss"]["nonfinite"] is True
    assert "nonfinite" not in record["arrays"]["x"]
    out = store.run(Job(2), lambda c: {"h": padded}, device="cpu", nonfinite=["h"])
    assert out.nonfinite == {"h"}
    with pytest.raises(ValueError, match="nonfinite"):
        store.save(Job(3), {"x": np.ones(1)}, device="cpu", wall_time_s=0.0, nonfinite="h")
