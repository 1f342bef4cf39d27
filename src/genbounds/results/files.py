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

import hashlib
import io
import json
import os
import tempfile
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from filelock import FileLock

from genbounds.results.errors import DamagedResultError
from genbounds.results.keys import record_hash
from genbounds.results.provenance import PACKAGE_DIR, Provenance

__all__ = [
    "CHECKPOINT_DIR",
    "DAMAGED_DIR",
    "FORMAT",
    "LOCK_DIR",
    "Record",
    "Unit",
    "atomic_write",
    "default_results_dir",
    "read_unit",
    "seal",
]

FORMAT = 2
"""Version of the record layout: 2 adds ``meta_sha256`` and ``provenance.code_modules``."""
LOCK_DIR = ".locks"
CHECKPOINT_DIR = ".checkpoints"
"""``<root>/.checkpoints/<namespace>/<ConfigClass>/<key>.pt``: the partial state of a unit that
a time budget stopped (:mod:`genbounds.train.checkpoint`); never a result, never committed."""
DAMAGED_DIR = "_damaged"
_REQUIRED: dict[str, type] = {
    "key": str, "config_class": str, "protocol_version": int, "config": dict, "scalars": dict,
    "arrays": dict, "npz_sha256": str, "provenance": dict,
}


def default_results_dir() -> Path:
    """``$GENBOUNDS_RESULTS_DIR`` if set; else ``results/`` of the source checkout; else a cache."""
    env = os.environ.get("GENBOUNDS_RESULTS_DIR")
    if env:
        return Path(env)
    repo = PACKAGE_DIR.parents[1]
    if (repo / "_toc.yml").exists():
        return repo / "results"
    return Path.home() / ".cache" / "genbounds" / "results"


def ignore_dir(directory: Path) -> None:
    """Create ``directory`` holding a ``.gitignore`` of ``*`` (never committed, like caches)."""
    if not directory.exists():
        directory.mkdir(parents=True, exist_ok=True)
        (directory / ".gitignore").write_text("*\n")


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

    def temporaries(self) -> list[Path]:
        """Temporary files of writes of this unit (a live writer's, or a killed writer's)."""
        if not self.folder.is_dir():
            return []
        return sorted(self.folder.glob(f".{self.key}.*.tmp"))

    def existing(self) -> tuple[Path, ...]:
        """Every file of this unit on disk: JSON, arrays, temporaries."""
        return tuple(p for p in (self.json, self.npz) if p.exists()) + tuple(self.temporaries())

    def lock(self) -> FileLock:
        """The unit's lock, one object per path and process (re-entrant in one thread)."""
        ignore_dir(self.root / LOCK_DIR)
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        return FileLock(self.lock_path, is_singleton=True)

    @classmethod
    def of_file(cls, root: Path, path: Path) -> Unit:
        """The unit a file of the store belongs to (``<ns>/<Class>/<key>.json|.npz`` or a tmp)."""
        rel = path.relative_to(root)
        if len(rel.parts) != 3:
            raise ValueError(f"path {path} is not a file of a unit under {root}")
        namespace, config_class, name = rel.parts
        key = name[1:].split(".")[0] if name.startswith(".") else name.split(".")[0]
        return cls(root, namespace, config_class, key)


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that ``path`` holds its old content or all of ``data``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


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

    Raises
    ------
    DamagedResultError
        Naming the file at fault, what is wrong and ``repair``, if the JSON is not valid JSON or
        not a complete record, was altered, is stored under another key, does not match
        ``expected``; if the arrays file is missing, does not match its checksum, or cannot be
        read.
    """

    def damaged(path: Path, problem: str) -> DamagedResultError:
        return DamagedResultError(path, problem, repair, unit.existing())

    try:
        raw = unit.json.read_bytes()
    except FileNotFoundError:
        return None
    try:
        meta = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise damaged(unit.json, f"is not valid JSON (truncated or corrupted: {err})") from None
    if not isinstance(meta, dict):
        raise damaged(unit.json, "is valid JSON but not a result record (not an object)")
    for name, kind in _REQUIRED.items():
        value = meta.get(name)
        if not isinstance(value, kind) or isinstance(value, bool):  # no field is a bool
            raise damaged(unit.json, f"is not a complete result record: field {name!r} is "
                                     f"missing or not a {kind.__name__}")
    if "meta_sha256" in meta and (
        hashlib.sha256(_canonical(meta)).hexdigest() != meta["meta_sha256"]
    ):
        raise damaged(unit.json, "was altered after it was written (its content does not match "
                                 "the checksum it records)")
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
    try:
        npz_bytes = unit.npz.read_bytes()
    except FileNotFoundError:
        raise damaged(unit.json, f"its arrays file {unit.npz.name} is missing "
                                 "(one file of the pair)") from None
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
