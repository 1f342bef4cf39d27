"""Checking a whole store and moving damaged units aside (never deleting them).

* :func:`check_store` verifies every unit under a root (or one namespace) and lists what cannot
  be used: ``damaged`` committed results, entries that are not part of the store's layout (a
  stray ``a.b.json``, a file where a directory belongs, a link out of the store), and
  ``leftover`` files of writes that never committed.
* :func:`quarantine` moves a unit's files (or a stray entry) to ``<root>/_damaged/<UTC
  timestamp>/<its path under root>``, keeping them for inspection; the next run of that unit
  recomputes it.
* :func:`repair_store` does both, unit by unit, each under the unit's lock.

A unit that a live writer holds (its lock is taken) is never reported as a leftover and never
moved: its temporary files are that writer's work in progress. Symbolic links are never followed
out of the store: a link whose target lies outside the root is reported (and moved, the link
itself) instead; in the store's own folders (``.checkpoints``, ``.locks``, ``_replaced``,
``_unsaved``), where the store never makes one, a link at any depth is reported and moved.

Only a results store is checked or repaired: a directory that carries the store's marker
(:data:`~genbounds.results.files.STORE_MARKER`), or one written before the marker existed and
recognised by what only the store makes (:func:`~genbounds.results.files.is_store`); anything
else (an empty path, a home directory) is refused before a file is looked at.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from filelock import Timeout

from genbounds.results import files
from genbounds.results.errors import Damage, DamagedResultError
from genbounds.results.files import (
    CHECKPOINT_DIR,
    COMMITTED_CHECKPOINT_DIR,
    DAMAGED_DIR,
    LOCK_DIR,
    LOG_DIRS,
    REPLACED_DIR,
    STORE_MARKER,
    TEMPORARY_FILE,
    UNIT_FILE,
    UNSAVED_DIR,
    Unit,
    default_repair_command,
    default_results_dir,
    describe_type,
    obstruction,
    read_unit,
)
from genbounds.scale import SCALES

__all__ = [
    "Repair",
    "check_store",
    "check_namespace",
    "checkpoints_in_progress",
    "default_repair_command",
    "quarantine",
    "repair_store",
    "scan_store",
    "scan_with_committed",
]


@dataclass(frozen=True)
class Repair:
    """What a repair did: the damage found and the directory its files were moved to (or, for
    ``action="completed"``, the record a recompute stopped between its two renames left in a
    temporary file, now renamed into place: nothing was moved)."""

    damage: Damage
    moved_to: Path
    action: str = "moved"

    def describe(self) -> str:
        if self.action == "completed":
            return (f"completed the interrupted recompute of {self.damage.path.name} "
                    f"(its new record was {self.moved_to.name})")
        return f"moved {self.damage.kind} {self.damage.path.name} to {self.moved_to}"


def _require_store(root: Path, doing: str) -> None:
    """ValueError unless ``root`` is a results store (:func:`~genbounds.results.files.is_store`):
    nothing outside a store is checked or moved."""
    if str(root) in ("", "\0") or "\0" in str(root):
        raise ValueError(f"root must be a directory's path, got {str(root)!r}")
    if not root.is_dir():
        raise ValueError(f"root {root} is not a directory (no results store there)")
    if not files.is_store(root):
        raise ValueError(
            f"root {root} is not a results store (it has no {STORE_MARKER} marker and nothing "
            f"the store writes); nothing was {doing}")


def check_namespace(namespace: object, name: str = "namespace") -> str:
    """``namespace`` if it is a plain directory name of a scale (no ``/``, no leading ``.`` or
    ``_``: never ``..``, ``.locks`` or ``_damaged``); else ``ValueError``."""
    if (not isinstance(namespace, str) or not namespace or "/" in namespace or "\0" in namespace
            or namespace.startswith((".", "_"))):
        raise ValueError(f"{name} must be a plain directory name such as {' or '.join(SCALES)}, "
                         f"got {namespace!r}")
    return namespace


def _damaged_root(root: Path, stamp: str, name: str = DAMAGED_DIR) -> Path:
    """``<root>/<name>`` (``_damaged``), created (ignoring itself in git) if needed; an entry of
    that name that is not a directory is first moved to ``<name>/<stamp>/<name>`` (kept)."""
    damaged_root = root / name
    if os.path.lexists(damaged_root) and (os.path.islink(damaged_root)
                                          or not damaged_root.is_dir()):
        aside = root / f".{name}.{stamp}.moving"
        os.rename(damaged_root, aside)
        (damaged_root / stamp).mkdir(parents=True)
        (damaged_root / ".gitignore").write_text("*\n")
        os.rename(aside, damaged_root / stamp / name)
    if not damaged_root.exists():
        damaged_root.mkdir(parents=True, exist_ok=True)
        (damaged_root / ".gitignore").write_text("*\n")
    return damaged_root


@contextlib.contextmanager
def _unit_lock(root: Path, path: Path) -> Iterator[None]:
    """Hold the lock of the unit ``path`` belongs to, if it is a unit's file and can be locked."""
    rel = path.relative_to(root)
    lock = None
    if len(rel.parts) == 3 and (UNIT_FILE.fullmatch(rel.parts[2])
                                or TEMPORARY_FILE.fullmatch(rel.parts[2])):
        try:
            lock = Unit.of_file(root, path).lock()
            lock.acquire()
        except (DamagedResultError, OSError):  # a broken lock place: move without it
            lock = None
    try:
        yield
    finally:
        if lock is not None:
            lock.release()


def quarantine(damage: Damage, root: str | Path, *, when: _dt.datetime | None = None,
               into: str = DAMAGED_DIR) -> Path:
    """Move the files of ``damage`` to ``<root>/_damaged/<UTC timestamp>/<path under root>``.

    ``into`` names another directory than ``_damaged`` (the store moves results it recomputes
    over at paper scale to ``_replaced``).
    Never deletes and never overwrites (a name already taken there gets a numeric suffix); a
    symbolic link is moved itself, never what it points to. ``root`` must be a results store
    (``ValueError`` otherwise: nothing is moved). Takes the unit's lock (re-entrant:
    a caller already holding it, such as :meth:`ResultStore.run
    <genbounds.results.ResultStore.run>`, does not wait). Returns the directory the file at
    fault is now in.
    """
    root = Path(root)
    stamp = (when or _dt.datetime.now(_dt.UTC)).strftime("%Y-%m-%dT%H-%M-%SZ")
    if into not in (DAMAGED_DIR, REPLACED_DIR):
        raise ValueError(f"into must be {DAMAGED_DIR} or {REPLACED_DIR}, got {into!r}")
    _require_store(root, "moved")
    damaged_root = _damaged_root(root, stamp, into)  # moves a file named like it aside
    if damage.path == damaged_root:
        return damaged_root / stamp
    target = damaged_root / stamp / damage.path.parent.relative_to(root)
    with _unit_lock(root, damage.path):
        for path in damage.paths:
            if not os.path.lexists(path):
                continue
            folder = damaged_root / stamp / path.parent.relative_to(root)
            folder.mkdir(parents=True, exist_ok=True)
            dest, n = folder / path.name, 0
            while os.path.lexists(dest):
                n += 1
                dest = folder / f"{path.name}.{n}"
            os.rename(path, dest)
    return target


def _leftover(unit: Unit, repair: str) -> Damage | None:
    """Files of a write that never committed, judged while holding the unit's lock."""
    temporaries = tuple(unit.temporaries())
    interrupted = (f"{len(temporaries)} temporary file(s) of a write that was interrupted "
                   "(killed, or the disk was full); never read as a result")
    if os.path.lexists(unit.json):
        if not temporaries:
            return None
        return Damage(temporaries[0], interrupted, repair, temporaries, "leftover")
    if os.path.lexists(unit.npz):
        return Damage(unit.npz, "arrays without their JSON: a write was interrupted between the "
                      "arrays and the JSON (the commit point), or the JSON was removed; never "
                      "read as a result", repair, (unit.npz, *temporaries), "leftover")
    if temporaries:
        return Damage(temporaries[0], interrupted, repair, temporaries, "leftover")
    return None


def _check_unit(unit: Unit, repair: str, wait_s: float) -> Damage | None:
    """Verify one unit; a unit whose lock a writer holds is judged once the writer is done."""
    try:
        lock = unit.lock(repair)
    except DamagedResultError as err:
        return err.damage
    try:
        lock.acquire(timeout=wait_s)
    except (Timeout, OSError):  # a writer holds it, or the store is read-only
        # A writer is computing this unit (or no lock can be taken). What is committed is
        # checked; temporary files may be a writer's work in progress, so they are not listed.
        try:
            read_unit(unit, repair)
        except DamagedResultError as err:
            if files.pending_commit(unit) is not None:
                return None  # a live writer between its two renames
            return err.damage
        return None
    try:
        pending = files.pending_commit(unit)
        if pending is not None:
            return Damage(unit.json, f"a recompute was stopped between its two renames: the new "
                          f"arrays are in place and its new record is complete in "
                          f"{pending.name}; the next run of this unit (or store repair) "
                          "renames it into place, nothing is lost", repair, (pending,),
                          "leftover")
        try:
            read_unit(unit, repair)
        except DamagedResultError as err:
            return err.damage
        return _leftover(unit, repair)
    finally:
        lock.release()


def _not_a_directory(root: Path, path: Path) -> str | None:
    """Why ``path`` (an entry that must be a directory of the store) is not one, or ``None``."""
    blocked = obstruction(root, path)
    if blocked is not None:
        return blocked[1] if blocked[0] == path else None
    try:
        st = os.stat(path)
    except OSError as err:
        return f"cannot be examined ({err.strerror})"
    if not path.is_dir():
        return f"is {describe_type(st.st_mode)} where the store needs a directory"
    return None


def _committed_tree(root: Path, top: Path, what: str) -> tuple[int, list[tuple[Path, str]]]:
    """Walk a committed folder that holds no results (logs, committed checkpoints): the number of
    regular files, and the entries it must not hold (symbolic links, of any target; FIFOs,
    sockets, devices), never following a link."""
    problem = _not_a_directory(root, top)
    if problem is not None:
        return 0, [(top, problem)]
    if os.path.islink(top):
        return 0, [(top, f"is a symbolic link; {what} is a real folder, links are never "
                         "followed")]
    n, bad = 0, []
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        for name in sorted(dirnames + filenames):
            path = Path(dirpath) / name
            try:
                st = os.lstat(path)
            except OSError as err:
                bad.append((path, f"cannot be examined ({err.strerror})"))
                continue
            if os.path.islink(path):
                bad.append((path, f"is a symbolic link inside {what}; never followed"))
                if name in dirnames:
                    dirnames.remove(name)
            elif name in filenames and not os.path.isfile(path):
                bad.append((path, f"is {describe_type(st.st_mode)} inside {what}, not a file"))
            elif name in filenames:
                n += 1
    return n, bad


class _Scan:
    """One walk over a store: its units, and the entries that do not belong to its layout."""

    def __init__(self, root: Path, repair: str) -> None:
        self.root, self.repair = root, repair
        self.units: set[Unit] = set()
        self.stray: list[Damage] = []
        self.committed: dict[str, int] = {}
        """Files of the committed folders that hold no results (logs, committed checkpoints),
        by folder (relative to the root); never moved by a repair."""

    def committed_folder(self, path: Path, what: str) -> None:
        n, bad = _committed_tree(self.root, path, what)
        self.committed[path.relative_to(self.root).as_posix()] = n
        for where, problem in bad:
            self.stray_entry(where, problem)

    def log_dirs(self) -> None:
        for name in LOG_DIRS:
            if os.path.lexists(self.root / name):
                self.committed_folder(self.root / name, f"the committed logs {name}/")

    def stray_entry(self, path: Path, problem: str) -> None:
        self.stray.append(Damage(path, problem, self.repair, (path,), "damaged"))

    def special_dirs(self) -> None:
        for name in (DAMAGED_DIR, REPLACED_DIR, LOCK_DIR, CHECKPOINT_DIR, UNSAVED_DIR):
            path = self.root / name
            if os.path.lexists(path):
                problem = _not_a_directory(self.root, path)
                if problem is not None:
                    self.stray_entry(path, problem)
                elif name != DAMAGED_DIR:  # _damaged keeps the links it moved aside
                    self.own_folder(path, name)

    def own_folder(self, top: Path, name: str) -> None:
        """A folder only the store writes: any symbolic link in it, at any depth, is damage (the
        store never makes one and never follows one); in ``.locks`` and ``.checkpoints``, the
        ``<scale>/<ConfigClass>/`` levels must be folders."""
        layered = name in (LOCK_DIR, CHECKPOINT_DIR)
        for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
            depth = len(Path(dirpath).relative_to(top).parts) + 1
            for entry in sorted(dirnames + filenames):
                path = Path(dirpath) / entry
                try:
                    st = os.lstat(path)
                except OSError as err:
                    self.stray_entry(path, f"cannot be examined ({err.strerror})")
                    continue
                if stat.S_ISLNK(st.st_mode):
                    self.stray_entry(path, f"is a symbolic link to {os.path.realpath(path)} "
                                           f"inside {name}/, where the store never makes one; "
                                           "never followed")
                    if entry in dirnames:
                        dirnames.remove(entry)
                elif (layered and depth <= 2 and not stat.S_ISDIR(st.st_mode)
                      and not (depth == 1 and entry == ".gitignore")):
                    self.stray_entry(path, f"is {describe_type(st.st_mode)} where the store "
                                           f"needs a directory ({name}/<scale>/<ConfigClass>/)")

    def namespaces(self, namespace: str | None) -> list[str]:
        if namespace is not None:
            return [namespace]
        names = []
        for entry in sorted(self.root.iterdir()):
            if entry.name.startswith((".", "_")) or entry.name in LOG_DIRS:
                continue
            if entry.name in SCALES or entry.is_dir() or entry.is_symlink():
                names.append(entry.name)  # README.md and other plain files are not namespaces
        return names

    def namespace(self, ns: str) -> None:
        ns_dir = self.root / ns
        if not os.path.lexists(ns_dir):
            return
        problem = _not_a_directory(self.root, ns_dir)
        if problem is not None:
            self.stray_entry(ns_dir, problem)
            return
        for class_dir in sorted(ns_dir.iterdir()):
            if class_dir.name == ".gitignore" and class_dir.is_file():
                continue
            if class_dir.name == COMMITTED_CHECKPOINT_DIR:
                self.committed_folder(class_dir, f"the committed checkpoints {ns}/"
                                                 f"{COMMITTED_CHECKPOINT_DIR}/")
                continue
            problem = _not_a_directory(self.root, class_dir)
            if problem is not None:
                self.stray_entry(class_dir, problem)
                continue
            for path in sorted(class_dir.iterdir()):
                if UNIT_FILE.fullmatch(path.name) or TEMPORARY_FILE.fullmatch(path.name):
                    self.units.add(Unit.of_file(self.root, path))
                else:
                    self.stray_entry(path, "is not a file of the store (a result is <key>.json "
                                           "and <key>.npz, key: 16 hex digits); never read")


def checkpoints_in_progress(root: str | Path | None = None, namespace: str | None = None
                            ) -> list[Path]:
    """Checkpoints of units a time budget stopped (``<root>/.checkpoints/<ns>/<Class>/<key>.pt``)
    whose result is not stored: the units *in progress*. Never results; links out of the store
    are not followed."""
    root = Path(root) if root is not None else default_results_dir()
    base = root / CHECKPOINT_DIR
    if namespace is not None:
        check_namespace(namespace, "scale")
    if obstruction(root, base / "x") is not None or not base.is_dir():
        return []
    found = []
    for ns_dir in sorted(p for p in base.iterdir() if namespace is None or p.name == namespace):
        if obstruction(root, ns_dir / "x" / "y") is not None or not ns_dir.is_dir():
            continue
        for class_dir in sorted(p for p in ns_dir.iterdir() if p.is_dir()):
            if obstruction(root, class_dir / "x") is not None:
                continue
            for path in sorted(class_dir.glob("*.pt")):
                key = path.name[:-3]
                if UNIT_FILE.fullmatch(f"{key}.json") and not os.path.lexists(
                        root / ns_dir.name / class_dir.name / f"{key}.json"):
                    found.append(path)
    return found


def scan_store(
    root: str | Path | None = None, namespace: str | None = None, *, wait_s: float = 10.0
) -> tuple[int, list[Damage]]:
    """Number of units found and what is wrong with them (see :func:`check_store`)."""
    n, found, _ = scan_with_committed(root, namespace, wait_s=wait_s)
    return n, found


def scan_with_committed(
    root: str | Path | None = None, namespace: str | None = None, *, wait_s: float = 10.0
) -> tuple[int, list[Damage], dict[str, int]]:
    """As :func:`scan_store`, with the committed folders that hold no results (logs, committed
    checkpoints) and their number of files."""
    root = Path(root) if root is not None else default_results_dir()
    if namespace is not None:
        check_namespace(namespace, "scale")
    _require_store(root, "checked")
    repair = default_repair_command(root, namespace)
    scan = _Scan(root, repair)
    scan.special_dirs()
    if namespace is None:
        scan.log_dirs()
    for ns in scan.namespaces(namespace):
        scan.namespace(ns)
    units = sorted(scan.units, key=lambda u: (u.namespace, u.config_class, u.key))
    found = scan.stray + [d for u in units if (d := _check_unit(u, repair, wait_s)) is not None]
    unique = list({d.path: d for d in reversed(found)}.values())[::-1]  # a broken .locks once
    return len(units) + len(scan.stray), unique, scan.committed


def check_store(
    root: str | Path | None = None, namespace: str | None = None, *, wait_s: float = 10.0
) -> list[Damage]:
    """Verify every stored unit under ``root`` (one ``namespace``, i.e. scale, or all of them).

    Returns one :class:`~genbounds.results.Damage` per unit that cannot be used as it is:
    ``kind="damaged"`` for a committed result that is invalid, truncated, altered, incomplete,
    unreadable or stored under another key, and for an entry that does not belong to the
    store's layout; ``kind="leftover"`` for files of a write that never committed. A unit whose
    lock a writer holds is waited for up to ``wait_s`` seconds, then checked as far as it is
    committed.

    Raises
    ------
    ValueError
        If ``root`` is not a results store (:func:`~genbounds.results.files.is_store`: a
        directory with the store's marker, or one the store wrote before the marker existed) or
        ``namespace`` is not a plain directory name.
    """
    return scan_store(root, namespace, wait_s=wait_s)[1]


def _tracked_by_git(path: Path) -> bool:
    """Whether git tracks ``path`` (or a file under it): such a stray entry is reported by
    ``store check`` but never moved by a repair into the ignored ``_damaged/`` (it would vanish
    from the tracked tree). False where git is absent or ``path`` is not in a work tree."""
    import subprocess

    where = path.parent if not path.is_dir() or path.is_symlink() else path
    try:
        out = subprocess.run(["git", "-C", str(where), "ls-files", "-z", "--", str(path)],
                             capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and bool(out.stdout.strip(b"\0"))


def repair_store(
    root: str | Path | None = None, namespace: str | None = None, *, wait_s: float = 10.0
) -> list[Repair]:
    """Move every damaged unit, stray entry and leftover aside (see :func:`quarantine`).

    Each unit is verified again while its lock is held, so nothing a writer has just completed
    is moved. Units that a writer holds for longer than ``wait_s`` seconds are left alone. A
    recompute stopped between its two renames is completed (its new record renamed into place,
    a :class:`Repair` with ``action="completed"``), not moved. A store written before the
    marker existed gets its marker first; a directory that is not a store is refused
    (``ValueError``) before anything is looked at.
    """
    root = Path(root) if root is not None else default_results_dir()
    when = _dt.datetime.now(_dt.UTC)
    done: list[Repair] = []
    _require_store(root, "moved")
    files.ensure_store(root)  # a store from before the marker: mark it
    for damage in check_store(root, namespace, wait_s=wait_s):
        rel = damage.path.relative_to(root)
        is_unit = len(rel.parts) == 3 and (UNIT_FILE.fullmatch(rel.parts[2]) is not None
                                           or TEMPORARY_FILE.fullmatch(rel.parts[2]) is not None)
        if not is_unit:  # a stray entry, a lock or a layout directory: no unit to re-verify
            if _tracked_by_git(damage.path):  # never move committed files into ignored folders
                continue
            done.append(Repair(damage, quarantine(damage, root, when=when)))
            continue
        unit = Unit.of_file(root, damage.path)
        try:
            lock = unit.lock()
            lock.acquire(timeout=wait_s)
        except DamagedResultError:
            done.append(Repair(damage, quarantine(damage, root, when=when)))
            continue
        except Timeout:
            continue
        try:
            completed = files.complete_commit(unit)
            if completed is not None:
                done.append(Repair(damage, completed, "completed"))
            again = _check_unit(unit, damage.repair, wait_s)
            if again is not None:
                done.append(Repair(again, quarantine(again, root, when=when)))
        finally:
            lock.release()
    return done
