"""Checking a whole store and moving damaged units aside (never deleting them).

* :func:`check_store` verifies every unit under a root (or one namespace) and lists what cannot
  be used: ``damaged`` committed results and ``leftover`` files of writes that never committed.
* :func:`quarantine` moves a unit's files to ``<root>/_damaged/<UTC timestamp>/<namespace>/
  <ConfigClass>/``, keeping them for inspection; the next run of that unit recomputes it.
* :func:`repair_store` does both, unit by unit, each under the unit's lock.

A unit that a live writer holds (its lock is taken) is never reported as a leftover and never
moved: its temporary files are that writer's work in progress.
"""

from __future__ import annotations

import datetime as _dt
import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from filelock import Timeout

from genbounds.results.errors import Damage, DamagedResultError
from genbounds.results.files import DAMAGED_DIR, Unit, default_results_dir, read_unit

__all__ = [
    "Repair",
    "check_store",
    "default_repair_command",
    "quarantine",
    "repair_store",
    "scan_store",
]


@dataclass(frozen=True)
class Repair:
    """What a repair did: the damage found and the directory its files were moved to."""

    damage: Damage
    moved_to: Path

    def describe(self) -> str:
        return f"moved {self.damage.kind} {self.damage.path.name} to {self.moved_to}"


def default_repair_command(root: str | Path, namespace: str | None = None) -> str:
    """The shell command that moves a store's damaged units aside (the next run recomputes them)."""
    scale = f" --scale {shlex.quote(namespace)}" if namespace else ""
    return (
        f"python -m genbounds store repair --root {shlex.quote(str(root))}{scale}"
        "  # moves damaged files aside, then run again to recompute them"
    )


def quarantine(damage: Damage, root: str | Path, *, when: _dt.datetime | None = None) -> Path:
    """Move the files of ``damage`` to ``<root>/_damaged/<UTC timestamp>/<ns>/<Class>/``.

    Never deletes and never overwrites (a name already taken there gets a numeric suffix). Takes
    the unit's lock (re-entrant: a caller already holding it, such as
    :meth:`ResultStore.run <genbounds.results.ResultStore.run>`, does not wait). Returns the
    directory the files are now in.
    """
    root = Path(root)
    unit = Unit.of_file(root, damage.path)
    stamp = (when or _dt.datetime.now(_dt.UTC)).strftime("%Y-%m-%dT%H-%M-%SZ")
    damaged_root = root / DAMAGED_DIR
    if not damaged_root.exists():
        damaged_root.mkdir(parents=True, exist_ok=True)
        (damaged_root / ".gitignore").write_text("*\n")
    target = damaged_root / stamp / unit.namespace / unit.config_class
    with unit.lock():
        for path in damage.paths:
            if not path.exists():
                continue
            target.mkdir(parents=True, exist_ok=True)
            dest, n = target / path.name, 0
            while dest.exists():
                n += 1
                dest = target / f"{path.name}.{n}"
            os.rename(path, dest)
    return target


def _leftover(unit: Unit, repair: str) -> Damage | None:
    """Files of a write that never committed, judged while holding the unit's lock."""
    temporaries = tuple(unit.temporaries())
    if unit.json.exists():
        if not temporaries:
            return None
        return Damage(temporaries[0], f"{len(temporaries)} temporary file(s) of a write that was "
                      "interrupted (killed); never read as a result", repair, temporaries,
                      "leftover")
    if unit.npz.exists():
        return Damage(unit.npz, "arrays without their JSON: a write was interrupted between the "
                      "arrays and the JSON (the commit point), or the JSON was removed; never "
                      "read as a result", repair, (unit.npz, *temporaries), "leftover")
    if temporaries:
        return Damage(temporaries[0], f"{len(temporaries)} temporary file(s) of a write that was "
                      "interrupted (killed); never read as a result", repair, temporaries,
                      "leftover")
    return None


def _check_unit(unit: Unit, repair: str, wait_s: float) -> Damage | None:
    """Verify one unit; a unit whose lock a writer holds is judged once the writer is done."""
    try:
        lock = unit.lock()
        lock.acquire(timeout=wait_s)
    except (Timeout, OSError):  # a writer holds it, or the store is read-only
        # A writer is computing this unit (or no lock can be taken). What is committed is
        # checked; temporary files may be a writer's work in progress, so they are not listed.
        try:
            read_unit(unit, repair)
        except DamagedResultError as err:
            return err.damage
        return None
    try:
        try:
            read_unit(unit, repair)
        except DamagedResultError as err:
            return err.damage
        return _leftover(unit, repair)
    finally:
        lock.release()


def _units(root: Path, namespace: str | None) -> list[Unit]:
    if namespace is not None:
        names = [namespace]
    else:
        names = sorted(p.name for p in root.iterdir()
                       if p.is_dir() and not p.name.startswith((".", "_")))
    units: set[Unit] = set()
    for ns in names:
        ns_dir = root / ns
        if not ns_dir.is_dir():
            continue
        for class_dir in sorted(p for p in ns_dir.iterdir() if p.is_dir()):
            for path in class_dir.iterdir():
                name = path.name
                is_result = not name.startswith(".") and path.suffix in (".json", ".npz")
                is_temporary = name.startswith(".") and name.endswith(".tmp")
                if path.is_file() and (is_result or is_temporary):
                    units.add(Unit.of_file(root, path))
    return sorted(units, key=lambda u: (u.namespace, u.config_class, u.key))


def scan_store(
    root: str | Path | None = None, namespace: str | None = None, *, wait_s: float = 10.0
) -> tuple[int, list[Damage]]:
    """Number of units found and what is wrong with them (see :func:`check_store`)."""
    root = Path(root) if root is not None else default_results_dir()
    if not root.is_dir():
        raise ValueError(f"root {root} is not a directory (no results store there)")
    repair = default_repair_command(root, namespace)
    units = _units(root, namespace)
    found = [d for u in units if (d := _check_unit(u, repair, wait_s)) is not None]
    return len(units), found


def check_store(
    root: str | Path | None = None, namespace: str | None = None, *, wait_s: float = 10.0
) -> list[Damage]:
    """Verify every stored unit under ``root`` (one ``namespace``, i.e. scale, or all of them).

    Returns one :class:`~genbounds.results.Damage` per unit that cannot be used as it is:
    ``kind="damaged"`` for a committed result that is invalid, truncated, altered, incomplete or
    stored under another key; ``kind="leftover"`` for files of a write that never committed.
    A unit whose lock a writer holds is waited for up to ``wait_s`` seconds, then checked as far
    as it is committed.

    Raises
    ------
    ValueError
        If ``root`` is not a directory.
    """
    return scan_store(root, namespace, wait_s=wait_s)[1]


def repair_store(
    root: str | Path | None = None, namespace: str | None = None, *, wait_s: float = 10.0
) -> list[Repair]:
    """Move every damaged unit and every leftover aside (see :func:`quarantine`); say what moved.

    Each unit is verified again while its lock is held, so nothing a writer has just completed
    is moved. Units that a writer holds for longer than ``wait_s`` seconds are left alone.
    """
    root = Path(root) if root is not None else default_results_dir()
    when = _dt.datetime.now(_dt.UTC)
    done: list[Repair] = []
    for damage in check_store(root, namespace, wait_s=wait_s):
        unit = Unit.of_file(root, damage.path)
        lock = unit.lock()
        try:
            lock.acquire(timeout=wait_s)
        except Timeout:
            continue
        try:
            again = _check_unit(unit, damage.repair, wait_s)
            if again is not None:
                done.append(Repair(again, quarantine(again, root, when=when)))
        finally:
            lock.release()
    return done
