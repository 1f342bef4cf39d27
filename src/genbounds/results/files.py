"""The store on disk: where a unit's files live, how they are written, locked, read and verified.

One *unit* (one config) is two files in ``<root>/<namespace>/<ConfigClass>/``:

* ``<key>.npz``, the arrays, written first;
* ``<key>.json``, the record (config, scalars, provenance, the SHA-256 of the ``.npz`` and of the
  record itself), written last: the commit point.

Each is written to a temporary file ``.<key>.<ext>.<random>.tmp`` in the same directory, flushed
to disk, and renamed over its final name (:func:`os.replace`, atomic within a directory), and the
directory entry is flushed too. A writer holds the unit's lock, ``<root>/.locks/<namespace>/
<ConfigClass>/<key>.lock`` (:class:`filelock.FileLock`: ``flock(2)``, released by the kernel when
the holder dies, SIGKILL included), from before it decides to compute until the JSON is in place.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import re
import shlex
import stat
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from filelock import FileLock

from genbounds.results.errors import DamagedResultError
from genbounds.results.keys import record_hash
from genbounds.results.provenance import PACKAGE_DIR, Provenance
from genbounds.scale import SCALES

__all__ = [
    "CHECKPOINT_DIR",
    "COMMITTED_CHECKPOINT_DIR",
    "LOG_DIRS",
    "DAMAGED_DIR",
    "FORMAT",
    "LOCK_DIR",
    "REPLACED_DIR",
    "STORE_MARKER",
    "TEMPORARY_FILE",
    "UNIT_FILE",
    "UNSAVED_DIR",
    "WRITE_ERRORS",
    "Record",
    "Unit",
    "atomic_write",
    "complete_commit",
    "default_repair_command",
    "default_results_dir",
    "describe_type",
    "ensure_store",
    "file_mode",
    "ignore_dir",
    "is_store",
    "obstruction",
    "pending_commit",
    "read_regular",
    "read_unit",
    "seal",
    "store_problem",
]

FORMAT = 2
"""Version of the record layout: 2 adds ``meta_sha256`` and ``provenance.code_modules``."""
LOCK_DIR = ".locks"
REPLACED_DIR = "_replaced"
"""``<root>/_replaced/<UTC time>/<namespace>/<ConfigClass>/``: results recomputed over at
paper scale, moved aside (never overwritten); ignored by git like ``_damaged``."""
CHECKPOINT_DIR = ".checkpoints"
"""``<root>/.checkpoints/<namespace>/<ConfigClass>/<key>.pt``: the partial state of a unit that
a time budget stopped (:mod:`genbounds.train.checkpoint`); never a result, never committed."""
DAMAGED_DIR = "_damaged"
LOG_DIRS = ("device_runs",)
"""Folders at the store's root that hold committed logs (``device_runs/<date>-<machine>/``: what
a lent GPU machine printed): never results, never read as results, never moved by ``store
repair``; ``store check`` only refuses symbolic links in them and counts their files."""
COMMITTED_CHECKPOINT_DIR = "_checkpoints"
"""``<root>/<namespace>/_checkpoints/``: committed partial states of long paper-scale units (kept
in git so that another machine can resume them), laid out as the experiment chooses. Never read
as results and never moved by ``store repair``; ``store check`` refuses symbolic links (of any
target) and anything but folders and regular files in it. Unlike ``.checkpoints`` (this
machine's, ignored by git) it is committed."""
UNSAVED_DIR = "_unsaved"
"""``<root>/_unsaved/<UTC time>/<namespace>/<ConfigClass>/<key>.npz``: a computed result the store
refused (an undeclared NaN...), kept so that its compute is not lost; never read as a result,
ignored by git (:class:`~genbounds.results.UnsavedResultError` names it)."""
_REQUIRED: dict[str, type] = {
    "key": str, "config_class": str, "protocol_version": int, "config": dict, "scalars": dict,
    "arrays": dict, "npz_sha256": str, "provenance": dict,
}


STORE_MARKER = ".genbounds-store"
"""``<root>/.genbounds-store``: the file that makes a directory a results store. The store writes
it when it creates the directory or first writes into it; ``store check`` and ``store repair``
(and :func:`~genbounds.results.quarantine`) touch no directory without it, except a store written
before the marker existed, recognised by what only the store makes (:func:`is_store`)."""
_MARKER_TEXT = (b"This directory is a genbounds results store (results/README.md of the book "
                b"describes it; `python -m genbounds store check --root DIR` verifies it).\n")
_STORE_NAMES = frozenset({STORE_MARKER, ".gitignore", "README.md", *SCALES, LOCK_DIR,
                          CHECKPOINT_DIR, DAMAGED_DIR, REPLACED_DIR, UNSAVED_DIR, *LOG_DIRS})
"""Names a store's top level holds; a directory holding only these may become a store."""
ENV_RESULTS_DIR = "GENBOUNDS_RESULTS_DIR"


def default_results_dir() -> Path:
    """``$GENBOUNDS_RESULTS_DIR`` if set; else ``results/`` of the source checkout; else a cache.

    Raises
    ------
    ValueError
        If ``$GENBOUNDS_RESULTS_DIR`` is set but empty (an empty path is not "here": unset it
        for the default store) or holds a NUL byte.
    """
    env = os.environ.get(ENV_RESULTS_DIR)
    if env is not None:
        if not env or "\0" in env:
            raise ValueError(f"{ENV_RESULTS_DIR} must be a directory's path, got {env!r} (unset "
                             "it for the default store)")
        return Path(env)
    repo = PACKAGE_DIR.parents[1]
    if (repo / "_toc.yml").exists():
        return repo / "results"
    return Path.home() / ".cache" / "genbounds" / "results"


def default_repair_command(root: str | Path, namespace: str | None = None) -> str:
    """The shell command that moves a store's damaged units aside (the next run recomputes them)."""
    scale = f" --scale {shlex.quote(namespace)}" if namespace else ""
    return (
        f"python -m genbounds store repair --root {shlex.quote(str(root))}{scale}"
        "  # moves damaged files aside, then run again to recompute them"
    )


UNIT_FILE = re.compile(r"(?P<key>[0-9a-f]{16})\.(json|npz)")
"""The name of a file of a committed unit."""
TEMPORARY_FILE = re.compile(r"\.(?P<key>[0-9a-f]{16})\.(json|npz)\.[^/]+\.tmp")
"""The name of a temporary file of a write of a unit (:func:`atomic_write`)."""


def current_umask() -> int:
    """The process's umask (read without changing it where ``/proc`` tells it)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # pragma: no cover - systems without /proc
    os.umask(mask)  # pragma: no cover
    return mask  # pragma: no cover


def file_mode() -> int:
    """Mode of a new file of the store: ``0o666`` less the umask, as ``open`` would make it."""
    return 0o666 & ~current_umask()


def named_error(err: OSError, path: Path) -> OSError:
    """``err`` (of the same class) naming ``path`` and saying why in words (``the disk is
    full``), for an error that the operating system raised without the file's name."""
    why = WRITE_ERRORS.get(err.errno or 0)
    text = err.strerror or str(err)
    return OSError(err.errno, f"{text} ({why})" if why else text, str(path))


def make_dirs(directory: Path) -> list[Path]:
    """Create ``directory`` and its missing parents; the ones created, outermost first. If one
    cannot be created, those created so far are removed again and the error names the path."""
    missing: list[Path] = []
    current = directory
    while not os.path.lexists(current) and current != current.parent:
        missing.append(current)
        current = current.parent
    created: list[Path] = []
    for path in reversed(missing):
        try:
            os.mkdir(path)
        except FileExistsError:  # made by another process meanwhile
            continue
        except OSError as err:
            remove_dirs(created)
            raise named_error(err, path) from None
        created.append(path)
    return created


def remove_dirs(created: list[Path]) -> None:
    """Remove directories :func:`make_dirs` created (innermost first), each only if empty."""
    for path in reversed(created):
        try:
            os.rmdir(path)
        except OSError:
            pass


def ignore_dir(directory: Path) -> None:
    """Create ``directory`` holding a ``.gitignore`` of ``*`` (never committed, like caches).

    If the ``.gitignore`` cannot be written (a full disk), the directories just created are
    removed again and the error names the file.
    """
    if not directory.exists():
        created = make_dirs(directory)
        try:
            atomic_write(directory / ".gitignore", b"*\n")
        except OSError as err:
            remove_dirs(created)
            raise named_error(err, directory / ".gitignore") from None


def is_store(root: Path) -> bool:
    """Whether ``root`` is a results store: it carries the marker :data:`STORE_MARKER` (a regular
    file), or, written before the marker existed, it holds what only the store makes: a
    ``.locks/.gitignore`` or a unit's file ``<scale>/<ConfigClass>/<key>.json|npz``. Links are
    not followed."""
    def regular(path: Path) -> bool:
        try:
            return stat.S_ISREG(os.lstat(path).st_mode)
        except OSError:
            return False

    def real_dir(path: Path) -> bool:
        try:
            return stat.S_ISDIR(os.lstat(path).st_mode)
        except OSError:
            return False

    if not os.path.isdir(root):
        return False
    if regular(root / STORE_MARKER):
        return True
    if real_dir(root / LOCK_DIR) and regular(root / LOCK_DIR / ".gitignore"):
        return True
    for scale in SCALES:
        if not real_dir(root / scale):
            continue
        try:
            with os.scandir(root / scale) as classes:
                for cls in classes:
                    if not cls.is_dir(follow_symlinks=False):
                        continue
                    with os.scandir(cls.path) as entries:
                        if any(UNIT_FILE.fullmatch(e.name) for e in entries):
                            return True
        except OSError:
            continue
    return False


def _store_name(name: str) -> bool:
    """Whether ``name`` at a store's top level is one the store makes (or may be making now: the
    marker's temporary file, a ``_damaged`` being moved aside)."""
    return name in _STORE_NAMES or (name.startswith(f".{STORE_MARKER}.")
                                    and name.endswith(".tmp")) or (
        name.startswith((f".{DAMAGED_DIR}.", f".{REPLACED_DIR}.")) and name.endswith(".moving"))


def store_problem(root: Path) -> str | None:
    """Why ``root`` is not, and cannot become, a results store; ``None`` when it is one or may
    become one (it does not exist yet and can be created, it is empty, or it holds only names a
    store holds).

    Refused: a path below a file (``/etc/passwd/x``), a path that is not a directory, and a
    directory that holds other things (a home directory, a project) and no marker.
    """
    if str(root) == "" or "\0" in str(root):
        return f"{str(root)!r} is not a directory's path (an empty path is not \"here\")"
    current = root
    while not os.path.lexists(current):
        if current == current.parent:
            return None
        current = current.parent
    if not os.path.isdir(current):
        what = describe_type(os.stat(current).st_mode) if os.path.exists(current) else \
            "a broken symbolic link"
        if current == root:
            return f"{root} is {what}, not a directory (a results store is one)"
        return f"{root} cannot be a directory: {current} is {what}"
    if current != root or is_store(root):
        return None
    try:
        names = sorted(os.listdir(root))
    except OSError as err:
        return f"{root} cannot be listed ({err.strerror})"
    foreign = [n for n in names if not _store_name(n)]
    if not foreign:
        return None
    shown = ", ".join(repr(n) for n in foreign[:3]) + (" ..." if len(foreign) > 3 else "")
    return (f"{root} is not a results store: it has no {STORE_MARKER} marker and holds other "
            f"things ({shown}); give a new or empty directory, or the store's own")


def _marker_mode(marker: Path) -> int | None:
    """The file mode of ``marker`` (not following a link), or ``None`` if it cannot be read (none
    is there, or the path runs through a file)."""
    try:
        return os.lstat(marker).st_mode
    except OSError:
        return None


def ensure_store(root: Path) -> None:
    """Make ``root`` a results store, or confirm it is one: create it (and missing parents) and
    write the marker :data:`STORE_MARKER` if it is missing.

    Raises
    ------
    ValueError
        If ``root`` cannot be a store (:func:`store_problem`).
    OSError
        Naming the path, if it cannot be created or the marker cannot be written (a full disk):
        whatever this call created is removed again.
    """
    marker = root / STORE_MARKER
    first = _marker_mode(marker)
    if first is not None and stat.S_ISREG(first):
        return
    problem = store_problem(root)
    if problem is not None:
        raise ValueError(problem)
    mode = _marker_mode(marker)
    if mode is not None:
        if stat.S_ISREG(mode):  # another process made the store between the two looks
            return
        raise ValueError(f"{marker} is {describe_type(mode)}; the store's marker is a regular "
                         "file")
    created = make_dirs(root)
    try:
        atomic_write(marker, _MARKER_TEXT)
    except OSError as err:
        remove_dirs(created)
        raise named_error(err, marker) from None


@dataclass(frozen=True)
class Unit:
    """The files of one stored config."""

    root: Path
    namespace: str
    config_class: str
    key: str

    @property
    def folder(self) -> Path:
        return self.root / self.namespace / self.config_class

    @property
    def json(self) -> Path:
        return self.folder / f"{self.key}.json"

    @property
    def npz(self) -> Path:
        return self.folder / f"{self.key}.npz"

    @property
    def lock_path(self) -> Path:
        return self.root / LOCK_DIR / self.namespace / self.config_class / f"{self.key}.lock"

    @property
    def checkpoint(self) -> Path:
        """Where a unit stopped by its time budget keeps its partial state."""
        return (self.root / CHECKPOINT_DIR / self.namespace / self.config_class
                / f"{self.key}.pt")

    def _folder_is_safe(self) -> bool:
        return obstruction(self.root, self.folder / "x") is None and self.folder.is_dir()

    def temporaries(self) -> list[Path]:
        """Temporary files of writes of this unit (a live writer's, or a killed writer's)."""
        if not self._folder_is_safe():
            return []
        return sorted(p for p in self.folder.glob(f".{self.key}.*.tmp")
                      if TEMPORARY_FILE.fullmatch(p.name))

    def existing(self) -> tuple[Path, ...]:
        """Every entry of this unit on disk (whatever its type): JSON, arrays, temporaries."""
        if not self._folder_is_safe():
            return ()
        return (tuple(p for p in (self.json, self.npz) if os.path.lexists(p))
                + tuple(self.temporaries()))

    def lock(self, repair: str | None = None) -> FileLock:
        """The unit's lock, one object per path and process (re-entrant in one thread).

        Raises
        ------
        DamagedResultError
            If the lock file or a directory above it is not what it should be: a symbolic link
            (lock files are never followed), or a file where a directory is needed.
        """
        repair = repair or default_repair_command(self.root, self.namespace)
        blocked = obstruction(self.root, self.lock_path)
        if blocked is None and os.path.islink(self.lock_path):
            blocked = (self.lock_path, "is a symbolic link; lock files are never followed")
        if blocked is not None:
            raise DamagedResultError(blocked[0], blocked[1], repair, (blocked[0],))
        try:
            ignore_dir(self.root / LOCK_DIR)
            self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            blocked = obstruction(self.root, self.lock_path) or (
                self.lock_path.parent, "is not a directory")
            raise DamagedResultError(blocked[0], blocked[1], repair, (blocked[0],)) from None
        return FileLock(self.lock_path, is_singleton=True, mode=file_mode())

    @classmethod
    def of_file(cls, root: Path, path: Path) -> Unit:
        """The unit a file of the store belongs to (``<ns>/<Class>/<key>.json|.npz`` or a tmp)."""
        rel = path.relative_to(root)
        if len(rel.parts) != 3:
            raise ValueError(f"path {path} is not a file of a unit under {root}")
        namespace, config_class, name = rel.parts
        key = name[1:].split(".")[0] if name.startswith(".") else name.split(".")[0]
        return cls(root, namespace, config_class, key)


WRITE_ERRORS = {errno.ENOSPC: "the disk is full", errno.EFBIG: "a file-size limit was hit",
                errno.EDQUOT: "the disk quota is exhausted"}


def write_temporary(path: Path, data: bytes) -> Path:
    """``data`` in a flushed temporary file next to ``path`` (``.<name>.<random>.tmp``), to be
    committed by :func:`commit_temporary`; removed again if the write fails."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, file_mode())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def commit_temporary(tmp: Path, path: Path) -> None:
    """Rename a temporary file of :func:`write_temporary` over ``path`` (atomic within a
    directory) and flush the directory entry."""
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that ``path`` holds its old content or all of ``data``.

    The file gets the mode a plain ``open`` would give it (``0o666`` less the umask; the
    temporary file :func:`tempfile.mkstemp` makes is ``0o600``), so a store written on a
    shared filesystem is readable by whoever the umask lets read it.
    """
    commit_temporary(write_temporary(path, data), path)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - filesystems that refuse to fsync a directory
        pass
    finally:
        os.close(fd)


def _canonical(meta: Mapping[str, Any]) -> bytes:
    body = {k: v for k, v in meta.items() if k != "meta_sha256"}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def seal(meta: dict[str, Any]) -> dict[str, Any]:
    """``meta`` with ``format`` and ``meta_sha256`` (checksum of everything else) added."""
    out = dict(meta, format=FORMAT)
    out["meta_sha256"] = hashlib.sha256(_canonical(out)).hexdigest()
    return out


@dataclass(frozen=True)
class Record:
    """A verified unit as read from disk."""

    meta: dict[str, Any]
    arrays: dict[str, np.ndarray]
    provenance: Provenance


def read_unit(
    unit: Unit, repair: str, expected: tuple[str, int, dict[str, Any]] | None = None
) -> Record | None:
    """Read and verify a unit; ``None`` if it has no JSON (nothing committed).

    ``expected`` is ``(config_class, protocol_version, config_dict)`` of the config asked for.
    Every file is checked to be a regular file inside the store before it is opened (a FIFO
    would block, a directory or a link out of the store is never followed).

    Raises
    ------
    DamagedResultError
        Naming the file at fault, what is wrong and ``repair``, if the JSON is not valid JSON or
        not a complete record, was altered or lacks its checksum, is stored under another key,
        does not match ``expected``; if the arrays file is missing, does not match its checksum,
        or cannot be read; if a file of the unit is not a regular file, cannot be read
        (permission denied), or a directory on its path is not a directory.
    """

    def damaged(path: Path, problem: str) -> DamagedResultError:
        return DamagedResultError(path, problem, repair, unit.existing())

    raw = read_regular(unit.root, unit.json, repair, unit.existing)
    if raw is None:
        return None
    meta = _parse_record(unit, raw, damaged)
    try:
        provenance = Provenance.from_record(meta["provenance"])
    except (ValueError, TypeError) as err:
        raise damaged(unit.json, f"has a malformed provenance record ({err})") from None
    if meta["key"] != unit.key:
        raise damaged(unit.json, f"records key {meta['key']} but is stored as {unit.key} "
                                 "(a renamed or copied file)")
    if record_hash(meta["config_class"], meta["protocol_version"], meta["config"]) != unit.key:
        raise damaged(unit.json, "its recorded config and protocol do not hash to its key "
                                 "(the record was edited)")
    if expected is not None and (meta["config_class"], meta["protocol_version"],
                                 meta["config"]) != expected:
        raise damaged(unit.json, (
            f"does not match the requested config (stored {meta['config_class']} protocol "
            f"{meta['protocol_version']}, wanted {expected[0]} protocol {expected[1]})"))
    npz_bytes = read_regular(unit.root, unit.npz, repair, unit.existing)
    if npz_bytes is None:
        raise damaged(unit.json, f"its arrays file {unit.npz.name} is missing "
                                 "(one file of the pair)")
    if hashlib.sha256(npz_bytes).hexdigest() != meta["npz_sha256"]:
        raise damaged(unit.npz, "does not match the checksum recorded in its JSON "
                                f"{unit.json.name} (truncated or altered)")
    try:
        with np.load(io.BytesIO(npz_bytes), allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except (OSError, ValueError, zipfile.BadZipFile) as err:
        raise damaged(unit.npz, f"cannot be read as arrays ({err})") from None
    if sorted(arrays) != sorted(meta["arrays"]):
        raise damaged(unit.npz, f"holds arrays {sorted(arrays)}, its JSON lists "
                                f"{sorted(meta['arrays'])}")
    return Record(meta, arrays, provenance)


def pending_commit(unit: Unit) -> Path | None:
    """The new record of a recompute stopped between its two renames, or ``None``.

    A recompute writes the new pair to temporary files, then renames the arrays and then the
    record over the old pair. Stopped between the two renames (killed), the unit holds the new
    arrays beside the old record, which does not match them; the new record is complete in its
    temporary file (flushed before the first rename). That file is returned when it is a sealed
    record of this unit whose arrays checksum is the one of the arrays in place, and the old
    record is there (a first write stopped so is an uncommitted write, never completed). Only
    while the unit's lock is held is this a dead writer's: a live one may be between its renames.
    """
    if not unit._folder_is_safe():
        return None
    npz, record = _read_plain(unit.npz), _read_plain(unit.json)
    if npz is None or record is None:
        return None
    npz_sha = hashlib.sha256(npz).hexdigest()
    try:
        old = json.loads(record)
        if isinstance(old, dict) and old.get("npz_sha256") == npz_sha:
            return None  # the pair in place matches: nothing is pending
    except (ValueError, RecursionError):
        pass  # an unreadable old record: the new one may still be complete

    def refuse(path: Path, problem: str) -> DamagedResultError:
        return DamagedResultError(path, problem, "")

    def newest_first(path: Path) -> int:
        try:
            return -os.lstat(path).st_mtime_ns
        except OSError:
            return 0

    candidates = [t for t in unit.temporaries() if t.name.startswith(f".{unit.key}.json.")]
    for tmp in sorted(candidates, key=newest_first):
        raw = _read_plain(tmp)
        if raw is None:
            continue
        try:
            meta = _parse_record(unit, raw, refuse)
        except DamagedResultError:
            continue
        if (meta["key"] == unit.key and meta["npz_sha256"] == npz_sha and record_hash(
                meta["config_class"], meta["protocol_version"], meta["config"]) == unit.key):
            return tmp
    return None


def _read_plain(path: Path) -> bytes | None:
    """The bytes of ``path`` if it is a regular file (not a link, never blocking on a FIFO put in
    its place); ``None`` otherwise or if it cannot be read."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read()
    except OSError:
        return None
    finally:
        os.close(fd)


def complete_commit(unit: Unit) -> Path | None:
    """Complete a recompute stopped between its two renames (:func:`pending_commit`): rename its
    new record into place. Call only while holding the unit's lock. Returns the temporary file
    it committed, ``None`` when nothing was pending."""
    tmp = pending_commit(unit)
    if tmp is not None:
        commit_temporary(tmp, unit.json)
    return tmp


def _parse_record(unit: Unit, raw: bytes,
                  damaged: Callable[[Path, str], DamagedResultError]) -> dict[str, Any]:
    """The JSON record, checked to be complete and to match its own checksum."""
    try:
        meta = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise damaged(unit.json, f"is not valid JSON (truncated or corrupted: {err})") from None
    except RecursionError:
        raise damaged(unit.json, "is not a result record: JSON nested too deeply to read"
                      ) from None
    except ValueError as err:  # e.g. an integer of thousands of digits
        raise damaged(unit.json, f"is not a result record: a value cannot be read ({err})"
                      ) from None
    if not isinstance(meta, dict):
        raise damaged(unit.json, "is valid JSON but not a result record (not an object)")
    for name, kind in _REQUIRED.items():
        value = meta.get(name)
        if not isinstance(value, kind) or isinstance(value, bool):  # no field is a bool
            raise damaged(unit.json, f"is not a complete result record: field {name!r} is "
                                     f"missing or not a {kind.__name__}")
    if not isinstance(meta.get("meta_sha256"), str):
        raise damaged(unit.json, "has no record checksum (field 'meta_sha256' is missing or "
                                 "not a string): it cannot be verified")
    try:
        body = _canonical(meta)
    except (ValueError, RecursionError) as err:
        raise damaged(unit.json, f"is not a result record ({err})") from None
    if hashlib.sha256(body).hexdigest() != meta["meta_sha256"]:
        raise damaged(unit.json, "was altered after it was written (its content does not match "
                                 "the checksum it records)")
    return meta


# ---------------------------------------------------------------------------------- file types
def describe_type(mode: int) -> str:
    """``st_mode`` in words (``"a directory"``, ``"a FIFO (named pipe)"``...)."""
    for test, words in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                        (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                        (stat.S_ISBLK, "a block device"), (stat.S_ISLNK, "a symbolic link"),
                        (stat.S_ISREG, "a regular file")):
        if test(mode):
            return words
    return "a special file"


def _inside(path: Path, root: Path) -> bool:
    real = Path(os.path.realpath(path))
    return real == root or real.is_relative_to(root)


def obstruction(root: Path, path: Path) -> tuple[Path, str] | None:
    """The first entry on the way from ``root`` to ``path`` that the store must not pass.

    A symbolic link whose target lies outside ``root`` (never followed), or anything but a
    directory where a directory is needed. ``None`` when the way is clear (entries that do not
    exist yet are clear). ``path`` itself may be of any type; only links out are refused.
    """
    real_root = Path(os.path.realpath(root))
    rel = path.relative_to(root)
    current = root
    for i, part in enumerate(rel.parts):
        current = current / part
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            return None
        except OSError as err:
            return current, f"cannot be examined ({err.strerror})"
        if stat.S_ISLNK(st.st_mode):
            target = os.path.realpath(current)
            if not _inside(current, real_root):
                return current, (f"is a symbolic link to {target}, outside the store; links "
                                 "out of the store are never followed")
            try:
                st = os.stat(current)
            except OSError as err:
                return current, f"is a broken symbolic link ({err.strerror})"
        if i < len(rel.parts) - 1 and not stat.S_ISDIR(st.st_mode):
            return current, (f"is {describe_type(st.st_mode)} where the store needs a "
                             "directory")
    return None


def read_regular(root: Path, path: Path, repair: str,
                 files: Callable[[], tuple[Path, ...]] | None = None) -> bytes | None:
    """The bytes of the regular file ``path`` of the store at ``root``; ``None`` if absent.

    Checks the type before opening (a FIFO would block the reader forever) and opens without
    blocking, so a file swapped for a FIFO in between cannot hang it either.

    Raises
    ------
    DamagedResultError
        If ``path`` or a directory above it is not what it should be (see :func:`obstruction`),
        ``path`` is not a regular file, or it cannot be read (permission denied, I/O error).
    """

    def damaged(at: Path, problem: str) -> DamagedResultError:
        unit_files = files() if files is not None else (at,)
        return DamagedResultError(at, problem, repair, unit_files if at == path else (at,))

    blocked = obstruction(root, path)
    if blocked is not None:
        raise damaged(*blocked)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise damaged(path, f"cannot be examined ({err.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise damaged(path, f"is {describe_type(st.st_mode)}, not a file")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except PermissionError:
        raise damaged(path, "cannot be read: permission denied") from None
    except FileNotFoundError:
        return None
    except OSError as err:
        raise damaged(path, f"cannot be read ({err.strerror})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped between stat and open
            raise damaged(path, "is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read()
    except OSError as err:
        raise damaged(path, f"cannot be read ({err.strerror})") from None
    finally:
        os.close(fd)
