"""Every kind of damage to a stored result: the error it gives, ``store check``, the repair.

Each damage is made the way it happens (a file cut short, a flipped byte, a lost file, a file
copied under another name, a hand edit) on a tiny self-contained experiment, and each must give a
:class:`DamagedResultError` that names the file at fault, says what is wrong, and gives a
command that repairs it; ``store check`` must list it; the repair must move it aside (never
delete it) and the next run must recompute exactly the original result.
"""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from store_jobs import Job, compute  # tests/store_jobs.py

from genbounds import results
from genbounds.results import (
    DAMAGE_EXIT_CODE,
    DamagedResultError,
    ResultStore,
    StaleResultError,
    check_store,
    quarantine,
    repair_store,
    report_damage,
    run_sweep,
    store_main,
)
from genbounds.results.files import Unit


def _flip_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _edit_json(path: Path) -> None:
    meta = json.loads(path.read_text())
    meta["scalars"]["total"] += 1.0  # a plausible-looking hand edit of a number
    path.write_text(json.dumps(meta))


def _not_a_record(path: Path) -> None:
    path.write_text(json.dumps({"key": path.stem}))


# (what is done, which file it is done to, the file the error must name, words of the problem)
DAMAGES: dict[str, tuple[Callable[[Path], None], str, str, str]] = {
    "truncated json": (_truncate, "json", "json", "not valid JSON"),
    "invalid json": (lambda p: p.write_text("{not json"), "json", "json", "not valid JSON"),
    "json not a record": (_not_a_record, "json", "json", "not a complete result record"),
    "edited json": (_edit_json, "json", "json", "altered after it was written"),
    "truncated npz": (_truncate, "npz", "npz", "checksum"),
    "altered npz": (_flip_byte, "npz", "npz", "checksum"),
    "npz missing": (lambda p: p.unlink(), "npz", "json", "missing (one file of the pair)"),
}


def _stored(tmp_path: Path) -> tuple[ResultStore, list[Job], Unit]:
    store = ResultStore(tmp_path, namespace="quick")
    jobs = [Job(4, 0), Job(5, 1), Job(6, 2)]
    run_sweep(store, jobs, compute, device="cpu")
    return store, jobs, store.unit(jobs[1])


@pytest.mark.parametrize("name", list(DAMAGES))
def test_each_damage_names_file_problem_and_repair(tmp_path, name) -> None:
    damage, target, at_fault, words = DAMAGES[name]
    store, jobs, unit = _stored(tmp_path)
    reference = {k: v.copy() for k, v in store.load(jobs[1]).arrays.items()}
    damage(getattr(unit, target))
    expected = getattr(unit, at_fault)

    with pytest.raises(DamagedResultError) as info:
        store.load(jobs[1])
    err = info.value
    assert isinstance(err, StaleResultError)  # old callers still catch it
    assert err.path == expected and words in err.problem
    command = f"python -m genbounds store repair --root {tmp_path} --scale quick"
    assert err.repair.startswith(command)
    assert str(expected) in str(err) and words in str(err) and err.repair in str(err)
    # a sweep stops at that unit with the same error (it never computes over it silently)
    with pytest.raises(DamagedResultError, match="problem"):
        run_sweep(store, jobs, lambda c: pytest.fail("must not recompute"), device="cpu")
    # the undamaged units still load
    assert store.load(jobs[0]) is not None and store.load(jobs[2]) is not None

    found = check_store(tmp_path)
    assert [(d.kind, d.path) for d in found] == [("damaged", expected)]
    assert words in found[0].problem

    # repair: moved aside (never deleted), then the next run recomputes the identical result
    before = {p.name: p.read_bytes() for p in unit.existing()}
    repairs = repair_store(tmp_path)
    assert len(repairs) == 1 and not unit.json.exists() and not unit.npz.exists()
    moved = repairs[0].moved_to
    assert moved.is_relative_to(tmp_path / "_damaged") and moved.parts[-2:] == ("quick", "Job")
    assert {p.name: p.read_bytes() for p in moved.iterdir()} == before
    assert check_store(tmp_path) == []
    again = run_sweep(store, jobs, compute, device="cpu")
    assert [r.fresh for r in again] == [False, True, False]
    np.testing.assert_array_equal(again[1].arrays["x"], reference["x"])


def test_record_under_another_key_is_damage(tmp_path) -> None:
    store, jobs, unit = _stored(tmp_path)
    other = store.unit(jobs[0])
    for suffix in ("json", "npz"):  # a pair copied over another unit's names
        getattr(unit, suffix).write_bytes(getattr(other, suffix).read_bytes())
    with pytest.raises(DamagedResultError, match="stored as") as info:
        store.load(jobs[1])
    assert info.value.path == unit.json and f"records key {other.key}" in info.value.problem
    assert [d.path for d in check_store(tmp_path)] == [unit.json]


def test_a_missing_record_checksum_is_damage(tmp_path) -> None:
    # deleting meta_sha256 must not switch the record's check off (issue #17)
    store, jobs, unit = _stored(tmp_path)
    meta = json.loads(unit.json.read_text())
    del meta["meta_sha256"]
    meta["scalars"]["total"] += 1.0  # and then a hand edit goes unnoticed
    unit.json.write_text(json.dumps(meta))
    with pytest.raises(DamagedResultError, match="no record checksum"):
        store.load(jobs[1])
    assert [d.path for d in check_store(tmp_path)] == [unit.json]
    meta["meta_sha256"] = None  # not a string either
    unit.json.write_text(json.dumps(meta))
    with pytest.raises(DamagedResultError, match="no record checksum"):
        store.load(jobs[1])


def test_a_sealed_record_edited_to_another_config_is_damage(tmp_path) -> None:
    # resealed by hand after editing the protocol: the key no longer matches
    store, jobs, unit = _stored(tmp_path)
    meta = json.loads(unit.json.read_text())
    del meta["meta_sha256"], meta["format"]
    meta["protocol_version"] = 2
    unit.json.write_text(json.dumps(results.files.seal(meta)))
    with pytest.raises(DamagedResultError, match="do not hash to its key"):
        store.load(jobs[1])


def test_protocol_mismatch_is_damage(tmp_path, monkeypatch) -> None:
    store, jobs, unit = _stored(tmp_path)

    @dataclass(frozen=True)
    class Job2:  # a newer protocol whose key collides with the stored one (simulated)
        PROTOCOL_VERSION: ClassVar[int] = 2
        CODE_MODULES: ClassVar[tuple[str, ...]] = ("genbounds.results.keys",)
        n: int
        seed: int = 0

    Job2.__name__ = "Job"  # same folder
    monkeypatch.setattr(results.store, "config_hash", lambda c: unit.key)
    with pytest.raises(DamagedResultError, match="does not match the requested config") as info:
        store.load(Job2(5, 1))
    assert "protocol 1" in info.value.problem and "protocol 2" in info.value.problem


def test_recompute_damaged_moves_aside_recomputes_and_reports(tmp_path, caplog) -> None:
    store, jobs, unit = _stored(tmp_path)
    reference = store.load(jobs[1])
    assert reference is not None
    _truncate(unit.npz)
    damaged_bytes = unit.npz.read_bytes()
    fixer = ResultStore(tmp_path, namespace="quick", recompute_damaged=True)
    with caplog.at_level("WARNING", logger="genbounds.results"):
        out = run_sweep(fixer, jobs, compute, device="cpu")
    assert [r.fresh for r in out] == [False, True, False]
    np.testing.assert_array_equal(out[1].arrays["x"], reference.arrays["x"])
    assert out[1].scalars == reference.scalars
    assert len(fixer.repairs) == 1
    repair = fixer.repairs[0]
    assert repair.damage.path == unit.npz and "checksum" in repair.damage.problem
    assert (repair.moved_to / unit.npz.name).read_bytes() == damaged_bytes  # kept, not deleted
    assert "moved to" in caplog.text and str(repair.moved_to) in caplog.text
    assert check_store(tmp_path) == []
    # per call as well
    _flip_byte(unit.npz)
    again = store.run(jobs[1], compute, device="cpu", recompute_damaged=True)
    assert again.fresh and len(store.repairs) == 1


def test_quarantine_never_overwrites(tmp_path) -> None:
    store, jobs, unit = _stored(tmp_path)
    when = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    places = []
    for _ in range(2):
        store.run(jobs[1], compute, device="cpu", recompute=True)
        _truncate(unit.json)
        (damage,) = check_store(tmp_path)
        places.append(quarantine(damage, tmp_path, when=when))
    assert places[0] == places[1]
    names = sorted(p.name for p in places[0].iterdir())
    assert names == sorted([unit.json.name, unit.npz.name, unit.json.name + ".1",
                            unit.npz.name + ".1"])
    assert (tmp_path / "_damaged" / ".gitignore").read_text() == "*\n"


def test_leftovers_are_listed_not_damage(tmp_path, capsys) -> None:
    store, jobs, unit = _stored(tmp_path)
    stray = unit.folder / f".{unit.key}.npz.abc123.tmp"
    stray.write_bytes(b"partial")
    orphan = store.unit(Job(9, 9))
    orphan.folder.mkdir(parents=True, exist_ok=True)
    orphan.npz.write_bytes(unit.npz.read_bytes())  # arrays whose JSON never came
    assert store.load(jobs[1]) is not None  # a stray temporary file does not damage a result
    assert store.load(Job(9, 9)) is None  # nor is an uncommitted write a result
    found = check_store(tmp_path)
    assert sorted((d.kind, d.path.name) for d in found) == sorted(
        [("leftover", stray.name), ("leftover", orphan.npz.name)])
    assert store_main(["check", "--root", str(tmp_path)]) == 0  # listed, harmless
    out = capsys.readouterr().out
    assert "2 with leftovers" in out and stray.name in out
    # the next write of the unit removes its stray temporaries (no other writer is alive then)
    store.run(jobs[1], compute, device="cpu", recompute=True)
    assert not stray.exists()
    assert store_main(["repair", "--root", str(tmp_path)]) == 0
    assert "moved leftover" in capsys.readouterr().out
    assert check_store(tmp_path) == [] and not orphan.npz.exists()


def test_store_check_cli_table_and_exit_status(tmp_path, capsys) -> None:
    store, jobs, unit = _stored(tmp_path)
    assert store_main(["check", "--root", str(tmp_path)]) == 0
    assert "3 unit(s) checked, 3 sound, 0 damaged" in capsys.readouterr().out
    _flip_byte(unit.npz)
    assert store_main(["check", "--root", str(tmp_path), "--scale", "quick"]) == DAMAGE_EXIT_CODE
    out = capsys.readouterr().out
    assert "1 damaged" in out and f"quick/Job/{unit.npz.name}" in out and "checksum" in out
    assert "repair: python -m genbounds store repair" in out
    assert store_main(["check", "--root", str(tmp_path), "--scale", "paper"]) == 0
    assert store_main(["check", "--root", str(tmp_path / "nowhere")]) == 2
    assert "not a directory" in capsys.readouterr().err  # errors go to stderr
    assert store_main(["repair", "--root", str(tmp_path)]) == 0
    assert check_store(tmp_path) == []


def test_report_damage_prints_message_and_returns_status(tmp_path, capsys) -> None:
    store, jobs, unit = _stored(tmp_path)
    _truncate(unit.json)
    with pytest.raises(DamagedResultError) as info:
        store.load(jobs[1])
    assert report_damage(info.value) == DAMAGE_EXIT_CODE
    err = capsys.readouterr().err
    assert err.startswith("error: damaged result: ") and str(unit.json) in err
    cmd = "python -m genbounds reproduce --only x --scale quick --recompute-damaged"
    report_damage(info.value, repair=cmd)
    assert f"repair:  {cmd}" in capsys.readouterr().err
    custom = ResultStore(tmp_path, namespace="quick", repair_command=cmd)
    with pytest.raises(DamagedResultError, match="--recompute-damaged"):
        custom.load(jobs[1])


def test_command_line_prints_no_traceback(tmp_path) -> None:
    _, _, unit = _stored(tmp_path)
    _truncate(unit.json)
    proc = subprocess.run(
        [sys.executable, "-m", "genbounds.results", "check", "--root", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == DAMAGE_EXIT_CODE, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert str(unit.json.relative_to(tmp_path)) in proc.stdout and "not valid JSON" in proc.stdout


def test_bad_arguments(tmp_path) -> None:
    with pytest.raises(ValueError, match="namespace"):
        ResultStore(tmp_path, namespace="_damaged")
    with pytest.raises(ValueError, match="recompute_damaged"):
        ResultStore(tmp_path, namespace="quick", recompute_damaged="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="root"):
        check_store(tmp_path / "missing")
    with pytest.raises(SystemExit):
        store_main(["fix"])


def test_a_write_in_progress_is_not_mistaken_for_damage(tmp_path, monkeypatch) -> None:
    store, jobs, unit = _stored(tmp_path)
    arrays_in_place = threading.Event()
    real = results.files.commit_temporary

    def slow_commit(tmp: Path, path: Path) -> None:
        real(tmp, path)
        if path.suffix == ".npz":  # new arrays next to the old JSON: a mismatched pair on disk
            arrays_in_place.set()
            time.sleep(0.5)

    monkeypatch.setattr(results.files, "commit_temporary", slow_commit)
    new_x = np.arange(6.0).reshape(3, 2)
    writer = threading.Thread(target=lambda: store.save(
        jobs[1], {"x": new_x}, {"total": 15.0}, device="cpu", wall_time_s=0.0))
    writer.start()
    assert arrays_in_place.wait(30)
    with pytest.raises(DamagedResultError):  # read without waiting: it does look damaged
        results.files.read_unit(unit, "repair")
    loaded = store.load(jobs[1])  # waits for the writer's lock, then reads the committed pair
    writer.join()
    assert loaded is not None
    np.testing.assert_array_equal(loaded.arrays["x"], new_x)
