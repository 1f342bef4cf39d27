"""The results store: load a config's result if stored and sound, else compute and store it."""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import io
import json
import logging
import os
import time
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from filelock import Timeout

from genbounds.results import files
from genbounds.results.errors import (
    DamagedResultError,
    StaleResultError,
    StaleResultWarning,
    UnsavedResultError,
)
from genbounds.results.files import (
    CHECKPOINT_DIR,
    REPLACED_DIR,
    STORE_MARKER,
    UNSAVED_DIR,
    Unit,
    default_repair_command,
    default_results_dir,
)
from genbounds.results.keys import config_hash, config_to_dict
from genbounds.results.provenance import (
    CodeChangedError,
    Provenance,
    code_fingerprint,
    describe_device,
    normalize_code_modules,
    same_code,
)
from genbounds.results.repair import Repair, check_namespace, quarantine
from genbounds.scale import get_scale

__all__ = ["OnCodeChange", "ResultStore", "StoredResult", "run_sweep", "summarize_provenance"]

OnCodeChange = Literal["recompute", "warn", "error"]
logger = logging.getLogger("genbounds.results")


@dataclass(frozen=True)
class StoredResult:
    """A result as stored: config, arrays, scalars and provenance."""

    key: str
    config: dict[str, Any]
    arrays: dict[str, np.ndarray]
    scalars: dict[str, Any]
    provenance: Provenance
    path: Path
    fresh: bool = field(default=False)
    """True when computed in this call, False when loaded from the store."""
    stale: bool = field(default=False)
    """True when loaded although the code it depends on changed since it was computed (its
    code fingerprint differs from the running code's): shown, never silently."""
    nonfinite: frozenset[str] = field(default=frozenset())
    """Names of the arrays that were declared to hold NaN or inf (the record says which);
    every other float array is finite."""

    @property
    def device(self) -> str:
        """The device it was computed on."""
        return self.provenance.device

    @property
    def created_utc(self) -> str:
        """When it was computed (UTC, ISO 8601)."""
        return self.provenance.created_utc

    @property
    def wall_time_s(self) -> float:
        """How long computing it took (seconds)."""
        return self.provenance.wall_time_s

    def describe(self) -> str:
        """One line saying what this result is and where it came from (for captions)."""
        p = self.provenance
        origin = "computed in this run" if self.fresh else f"loaded from {self.path.name}"
        code = "same code" if not self.stale and p.is_same_code() else "DIFFERENT code"
        commit = p.git_commit[:10] + ("+dirty" if p.git_dirty else "")
        return (
            f"{origin}: {p.created_utc}, {p.device}, {p.wall_time_s:.1f} s wall, "
            f"genbounds {p.package_version} @ {commit} ({code})"
        )


def _declared(name: str, patterns: Collection[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _patterns(value: Any, name: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Collection) or not all(
            isinstance(v, str) and v for v in value):
        raise ValueError(f"{name} must be a collection of array names or patterns, got {value!r}")
    return tuple(value)


def _check_arrays(arrays: Mapping[str, Any], nonfinite: Collection[str] = (),
                  text: Collection[str] = ()) -> dict[str, np.ndarray]:
    """The arrays as numpy arrays; ``ValueError`` for one the store must not take silently.

    Refused: dtype object; NaN or inf in an array whose name matches no pattern of
    ``nonfinite``; strings (or bytes) in an array whose name matches no pattern of ``text``
    (patterns as :func:`fnmatch.fnmatchcase`: ``"hist_*"``).
    """
    out: dict[str, np.ndarray] = {}
    for name, value in arrays.items():
        # dotted names ("layer0.head0.W_QK.spectral", the norm table's columns) are allowed
        if not isinstance(name, str) or not all(p.isidentifier() for p in name.split(".")):
            raise ValueError(f"array names must be identifiers or dotted identifiers, "
                             f"got {name!r}")
        arr = np.asarray(value)
        if arr.dtype == object:
            raise ValueError(f"array {name!r} has dtype object; only numeric arrays are stored")
        if arr.dtype.kind in "USV" and not _declared(name, text):
            raise ValueError(f"array {name!r} holds strings ({arr.dtype}); declare it with "
                             f"text=({name!r},) if a text column is meant")
        if arr.dtype.kind in "fc" and not _declared(name, nonfinite):
            bad = ~np.isfinite(arr)
            if bad.any():
                raise ValueError(
                    f"array {name!r} holds {int(bad.sum())} NaN/inf value(s) of {arr.size}; "
                    f"declare it with nonfinite=({name!r},) if it may (the record then says so)")
        out[name] = arr
    return out


def _check_scalars(scalars: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in scalars.items():
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, float) and not np.isfinite(value):
            raise ValueError(f"scalar {name!r} is not finite: {value}")
        if not isinstance(value, bool | int | float | str) and value is not None:
            raise ValueError(f"scalar {name!r} has unsupported type {type(value).__name__}")
        out[name] = value
    return out


def _check_policy(on_code_change: Any) -> None:
    if on_code_change not in ("recompute", "warn", "error"):  # None is resolved before
        raise ValueError(
            f"on_code_change must be recompute, warn or error, got {on_code_change!r}"
        )


def _is_scalar(value: Any) -> bool:
    return isinstance(value, bool | int | float | str | np.generic) or value is None


class ResultStore:
    """Results on disk, keyed by :func:`~genbounds.results.config_hash`.

    Parameters
    ----------
    root:
        Directory of the store; defaults to :func:`~genbounds.results.default_results_dir`.
        Not an empty string (an empty path is not "here") and not a path below a file. The
        store writes its marker (:data:`~genbounds.results.files.STORE_MARKER`) there before it
        first writes or computes; a directory that holds other things and no marker is refused
        then (:func:`~genbounds.results.files.store_problem`).
    namespace:
        Sub-directory, by default the current scale (``quick`` or ``paper``), so that quick
        results (never committed) and paper results (committed) stay apart.
    recompute_damaged:
        Default of :meth:`run`'s ``recompute_damaged``: move a damaged result aside
        (:func:`~genbounds.results.quarantine`) and recompute it, instead of raising
        :class:`~genbounds.results.DamagedResultError`. What was moved is logged and appended
        to :attr:`repairs`.
    repair_command:
        The command a :class:`~genbounds.results.DamagedResultError` tells the user to run;
        by default ``python -m genbounds store repair --root <root> --scale <namespace>``.
        The ``reproduce`` command passes its own (``... --recompute-damaged``).

    Which code a result depends on (its *code fingerprint*) is, in this order: ``code_modules``
    given to :meth:`save`/:meth:`load`/:meth:`run`; the config class's ``CODE_MODULES``
    class attribute if it has one; the whole ``genbounds`` package.
    """

    def __init__(
        self,
        root: str | Path | None = None,
        namespace: str | None = None,
        *,
        recompute_damaged: bool = False,
        repair_command: str | None = None,
        on_code_change: OnCodeChange | None = None,
        keep_replaced: bool | None = None,
    ) -> None:
        if isinstance(root, str) and (not root or "\0" in root):
            raise ValueError(f"root must be a directory's path, got {root!r} (an empty path "
                             "is not \"here\")")
        self.root = Path(root) if root is not None else default_results_dir()
        if os.path.lexists(self.root) and not self.root.is_dir():
            raise ValueError(f"root {self.root} is not a directory (a results store is one)")
        below = files.store_problem(self.root)
        if below is not None and not os.path.lexists(self.root):
            raise ValueError(f"root {below}")
        self._marked = False
        self.namespace = check_namespace(namespace if namespace is not None else get_scale())
        if not isinstance(recompute_damaged, bool):
            raise ValueError(f"recompute_damaged must be a bool, got {recompute_damaged!r}")
        self.recompute_damaged = recompute_damaged
        self.repair_command = repair_command or default_repair_command(self.root, self.namespace)
        paper = self.namespace == "paper"
        if on_code_change is None:
            on_code_change = "warn" if paper else "recompute"
        _check_policy(on_code_change)
        self.on_code_change: OnCodeChange = on_code_change
        """What :meth:`run` does with a result made by different code, unless told otherwise:
        ``"warn"`` (keep it, with a warning) at paper scale, ``"recompute"`` otherwise."""
        if keep_replaced is None:
            keep_replaced = paper
        if not isinstance(keep_replaced, bool):
            raise ValueError(f"keep_replaced must be a bool, got {keep_replaced!r}")
        self.keep_replaced = keep_replaced
        """Move a committed result that is about to be recomputed to ``<root>/_replaced/<UTC
        time>/`` instead of overwriting it (by default at paper scale)."""
        self.repairs: list[Repair] = []
        """Damaged results this store moved aside and recomputed, in order."""
        self.replaced: list[Path] = []
        """Where the results this store recomputed over were moved (``keep_replaced``)."""

    # ------------------------------------------------------------------ paths and code
    def prepare(self) -> None:
        """Make :attr:`root` a results store before anything is computed or written: create it
        and its marker (:func:`~genbounds.results.files.ensure_store`), once per store object.

        Raises
        ------
        ValueError
            If the root is a directory that holds other things and no marker.
        OSError
            Naming the path, if it cannot be created (a full disk, no permission); nothing it
            created is left behind.
        """
        if not self._marked:
            files.ensure_store(self.root)
            self._marked = True

    def unit(self, config: Any) -> Unit:
        """The files (and lock) of ``config``'s result."""
        return Unit(self.root, self.namespace, type(config).__name__, config_hash(config))

    @staticmethod
    def code_modules(config: Any, code_modules: Sequence[str] | None = None
                     ) -> tuple[str, ...] | None:
        """The modules whose code ``config``'s result depends on (``None``: whole package)."""
        if code_modules is not None:
            return normalize_code_modules(code_modules)
        declared = getattr(type(config), "CODE_MODULES", None)
        return normalize_code_modules(declared, f"{type(config).__name__}.CODE_MODULES")

    def checkpoint_path(self, config: Any) -> Path:
        """Where ``config``'s unit keeps its partial state when a time budget stops it.

        ``<root>/.checkpoints/<namespace>/<ConfigClass>/<key>.pt``; the directory ignores
        itself in git (a ``.gitignore`` of ``*``) and ``store check`` never reads it as a result.

        Raises
        ------
        DamagedResultError
            If ``.checkpoints`` or a folder below it is a symbolic link out of the store (never
            followed: nothing is written, read or deleted through it) or not a folder; with
            :attr:`recompute_damaged`, that entry is moved aside instead (see :meth:`run`).
        """
        path = self.unit(config).checkpoint
        try:
            self._check_checkpoint_path(path)
        except DamagedResultError as err:
            if not self.recompute_damaged:
                raise
            self.prepare()
            self._set_aside(err)  # the link (or file) itself, never what it points to
            self._check_checkpoint_path(path)
        self.prepare()
        files.ignore_dir(self.root / CHECKPOINT_DIR)
        return path

    def _check_checkpoint_path(self, path: Path) -> None:
        blocked = files.obstruction(self.root, path)
        if blocked is None and os.path.islink(path):
            blocked = (path, "is a symbolic link; checkpoints are never followed")
        if blocked is not None:
            raise DamagedResultError(blocked[0], blocked[1], self.repair_command, (blocked[0],))

    def has_checkpoint(self, config: Any) -> bool:
        """Whether ``config``'s unit has a checkpoint file, looked for without following a link
        out of the store (such a link: ``False``)."""
        path = self.unit(config).checkpoint
        try:
            self._check_checkpoint_path(path)
        except DamagedResultError:
            return False
        return path.is_file()

    def in_progress(self, config: Any) -> bool:
        """Whether ``config``'s unit has a checkpoint of an interrupted run (and no result)."""
        return self.has_checkpoint(config) and not self.has(config)

    def has(self, config: Any) -> bool:
        """Whether a result for ``config`` is committed (its JSON exists; not verified)."""
        return self.unit(config).json.exists()

    # ------------------------------------------------------------------ write
    def save(
        self,
        config: Any,
        arrays: Mapping[str, Any],
        scalars: Mapping[str, Any] | None = None,
        *,
        device: str,
        wall_time_s: float,
        code_modules: Sequence[str] | None = None,
        nonfinite: Collection[str] = (),
        text: Collection[str] = (),
    ) -> StoredResult:
        """Store a result atomically (NPZ first, then the JSON that commits it), under its lock.

        Float arrays must be finite and arrays must be numeric unless declared: ``nonfinite``
        and ``text`` are names (or :mod:`fnmatch` patterns) of arrays that may hold NaN/inf and
        strings; the record lists the ``nonfinite`` ones and :attr:`StoredResult.nonfinite`
        tells the reader. Temporary files that killed writers of this unit left behind are
        removed first: while the lock is held no other writer of the unit is alive, and a
        temporary file is never part of a result. A committed result already there is moved
        to ``<root>/_replaced/`` first when :attr:`keep_replaced` is set.

        Raises
        ------
        ValueError
            For undeclared NaN/inf or strings, and other values the store cannot keep.
        DamagedResultError
            If the write fails (a full disk, a file-size limit, a file where the store needs a
            directory): nothing is committed, the error says which file and why.
        """
        if not np.isfinite(wall_time_s) or wall_time_s < 0:
            raise ValueError(f"wall_time_s must be finite and >= 0, got {wall_time_s}")
        unit = self.unit(config)
        modules = self.code_modules(config, code_modules)
        nonfinite, text = _patterns(nonfinite, "nonfinite"), _patterns(text, "text")
        arrs = _check_arrays(arrays, nonfinite, text)
        scal = _check_scalars(scalars or {})
        buf = io.BytesIO()
        np.savez(buf, **arrs)  # type: ignore[arg-type]
        npz_bytes = buf.getvalue()
        provenance = Provenance.now(device=device, wall_time_s=wall_time_s, code_modules=modules)
        declared = frozenset(n for n, a in arrs.items()
                             if a.dtype.kind in "fc" and _declared(n, nonfinite))
        meta = files.seal({
            "key": unit.key,
            "config_class": type(config).__qualname__,
            "protocol_version": type(config).PROTOCOL_VERSION,
            "config": config_to_dict(config),
            "scalars": scal,
            "arrays": {n: {"shape": list(a.shape), "dtype": str(a.dtype)}
                       | ({"nonfinite": True} if n in declared else {})
                       for n, a in arrs.items()},
            "npz_sha256": hashlib.sha256(npz_bytes).hexdigest(),
            "provenance": dataclasses.asdict(provenance),
        })
        self._write(unit, npz_bytes, json.dumps(meta, indent=1, sort_keys=True).encode())
        return StoredResult(unit.key, meta["config"], arrs, scal, provenance, unit.json,
                            fresh=True, nonfinite=declared)

    def _write(self, unit: Unit, npz_bytes: bytes, json_bytes: bytes) -> None:
        """Commit the pair under the unit's lock; a failed write becomes a DamagedResultError.

        With :attr:`keep_replaced` and a committed pair there, the order is: the new pair is
        written to temporary files (flushed), then the old pair is linked (or copied) into
        ``_replaced/``, then the new files are renamed over the old names, arrays first and the
        JSON last. A failure or a kill at any point leaves the old pair in place (a failed
        write) or in ``_replaced/`` (a kill after the copy): the old arrays are never in no
        file, and a unit is never missing because its recompute failed. A kill between the two
        renames leaves the new arrays beside the old record and the new record complete in its
        temporary file: the next process that takes the unit's lock (a run, a load, ``store
        repair``, the next write) renames it into place (:func:`~genbounds.results.files.
        complete_commit`), so the unit holds the old pair or the new one, never a torn pair.
        """
        target = self.root / STORE_MARKER
        try:
            self.prepare()
            target = unit.folder
            with unit.lock(self.repair_command):
                _step("locked")
                self._complete(unit)  # a recompute killed between its renames: its pair first
                for stray in unit.temporaries():
                    stray.unlink(missing_ok=True)
                _step("strays removed")
                target = unit.npz
                npz_tmp = files.write_temporary(unit.npz, npz_bytes)
                _step("arrays written")
                try:
                    target = unit.json
                    json_tmp = files.write_temporary(unit.json, json_bytes)
                except BaseException:
                    npz_tmp.unlink(missing_ok=True)
                    raise
                _step("written")
                if self.keep_replaced and os.path.lexists(unit.json):
                    target = self.root / REPLACED_DIR
                    self._keep_replaced_copy(unit)
                _step("kept")
                target = unit.npz
                files.commit_temporary(npz_tmp, unit.npz)
                _step("arrays committed")  # a kill here is completed by the next locked reader
                target = unit.json
                files.commit_temporary(json_tmp, unit.json)
                _step("committed")
        except OSError as err:
            for tmp in unit.temporaries():  # this writer's own (the lock is held)
                tmp.unlink(missing_ok=True)
            raise self._write_error(unit, target, err) from err

    def _keep_replaced_copy(self, unit: Unit) -> None:
        """Link (or copy) the committed pair into ``<root>/_replaced/<UTC time>/...``; the
        originals stay in place until the new pair is renamed over them."""
        import datetime as _dt
        import shutil

        from genbounds.results.repair import _damaged_root

        stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H-%M-%SZ")
        base = _damaged_root(self.root, stamp, REPLACED_DIR)
        folder = base / stamp / unit.folder.relative_to(self.root)
        folder.mkdir(parents=True, exist_ok=True)
        for path in (unit.npz, unit.json):
            if not os.path.isfile(path) or os.path.islink(path):
                continue
            _step(f"keeping {path.suffix[1:]}")
            dest, n = folder / path.name, 0
            while os.path.lexists(dest):
                n += 1
                dest = folder / f"{path.name}.{n}"
            try:
                os.link(path, dest)
            except OSError:  # a filesystem without hard links
                shutil.copy2(path, dest)
        files._fsync_dir(folder)
        self.replaced.append(folder)
        logger.warning("stored result %s is recomputed; the old record is kept in %s",
                       unit.json, folder)

    def _complete(self, unit: Unit) -> None:
        """Under the unit's lock: finish a recompute stopped between its two renames."""
        try:
            done = files.complete_commit(unit)
        except OSError:  # a read-only store: the unit stays as it is (reported as damage)
            return
        if done is not None:
            logger.warning("stored result %s: a recompute was stopped between its two renames; "
                           "its new record %s is now committed", unit.json, done.name)

    def _write_error(self, unit: Unit, where: Path, err: OSError) -> DamagedResultError:
        blocked = files.obstruction(self.root, unit.json)
        if blocked is not None:
            return DamagedResultError(blocked[0], blocked[1], self.repair_command, (blocked[0],))
        if err.filename:  # the file the failure was on (a lock's folder, the marker...)
            where = Path(os.fsdecode(err.filename))
        why = files.WRITE_ERRORS.get(err.errno or 0, "the write failed")
        text = err.strerror or str(err)
        return DamagedResultError(
            where, f"could not be written: {text}{'' if why in text else f' ({why})'}; nothing "
                   f"was committed for unit {unit.key}", f"free space or raise the limit, then "
                   f"run again; {self.repair_command}", unit.existing() or (where,))

    # ------------------------------------------------------------------ read
    def _read(self, config: Any, on_code_change: OnCodeChange,
              modules: tuple[str, ...] | None) -> StoredResult | None:
        unit = self.unit(config)
        expected = (type(config).__qualname__, type(config).PROTOCOL_VERSION,
                    config_to_dict(config))
        record = files.read_unit(unit, self.repair_command, expected)
        if record is None:
            return None
        p = record.provenance
        same = same_code(p.code_fingerprint, p.code_modules, modules)
        if not same:
            over = "the whole package" if p.code_modules is None else ", ".join(p.code_modules)
            message = (
                f"stored result {unit.json.name} was computed by different genbounds code "
                f"(fingerprint {p.code_fingerprint} over {over}, now "
                f"{code_fingerprint(modules)}; commit {p.git_commit[:10]}, {p.created_utc})"
            )
            if on_code_change == "error":
                raise StaleResultError(message)
            if on_code_change == "recompute":
                return None
            warnings.warn(message, StaleResultWarning, stacklevel=3)
        nonfinite = frozenset(n for n, spec in record.meta["arrays"].items()
                              if isinstance(spec, dict) and spec.get("nonfinite") is True)
        return StoredResult(unit.key, record.meta["config"], record.arrays,
                            record.meta["scalars"], p, unit.json,
                            stale=not same, nonfinite=nonfinite)

    def load(
        self,
        config: Any,
        *,
        on_code_change: OnCodeChange = "warn",
        code_modules: Sequence[str] | None = None,
        wait_s: float = 30.0,
    ) -> StoredResult | None:
        """Load the stored result for ``config``, or ``None`` if there is none.

        A result that looks damaged is read again once no writer holds its lock (up to
        ``wait_s`` seconds), so a write in progress elsewhere is never mistaken for damage; a
        recompute that was killed between its two renames is completed then (its new pair).

        Raises
        ------
        DamagedResultError
            If the stored result is damaged (invalid or truncated JSON, missing or altered
            arrays, a record for another config or protocol version); the message names the
            file, the problem and the repair command.
        StaleResultError
            If the code changed and ``on_code_change="error"``.
        """
        _check_policy(on_code_change)
        modules = self.code_modules(config, code_modules)
        try:
            return self._read(config, on_code_change, modules)
        except DamagedResultError as first:
            try:
                lock = self.unit(config).lock(self.repair_command)
                lock.acquire(timeout=wait_s)
            except (Timeout, OSError):  # a writer holds it too long, or a read-only store
                raise first from None
            try:
                self._complete(self.unit(config))
                return self._read(config, on_code_change, modules)
            finally:
                lock.release()

    # ------------------------------------------------------------------ compute
    def run(
        self,
        config: Any,
        fn: Callable[[Any], Mapping[str, Any]],
        *,
        device: str = "auto",
        on_code_change: OnCodeChange | None = None,
        recompute: bool = False,
        code_modules: Sequence[str] | None = None,
        recompute_damaged: bool | None = None,
        nonfinite: Collection[str] = (),
        text: Collection[str] = (),
    ) -> StoredResult:
        """Load the result of ``fn(config)`` if stored, else compute, store and return it.

        ``fn`` returns a mapping of names to arrays (anything :func:`numpy.asarray` accepts
        numerically) and scalars (Python ``bool``/``int``/``float``/``str``); 0-d numbers go to
        the scalars. The unit's lock is held from the decision to compute until the result is
        committed, so a second process asking for the same config waits and then loads this
        result instead of computing it again. ``recompute_damaged`` (default: the store's
        setting) moves a damaged result aside and recomputes it instead of raising.

        ``on_code_change`` (default: the store's :attr:`on_code_change`, ``"warn"`` at paper
        scale) says what to do with a stored result made by different code; ``recompute=True``
        recomputes regardless. A result recomputed over is moved aside first at paper scale
        (:attr:`keep_replaced`), never overwritten. ``nonfinite`` and ``text`` declare arrays
        that may hold NaN/inf or strings (see :meth:`save`).
        """
        result = self._run(config, fn, device, on_code_change, recompute, code_modules,
                           recompute_damaged, (nonfinite, text), blocking=True)
        assert result is not None  # a blocking run always ends with a result
        return result

    def try_run(
        self,
        config: Any,
        fn: Callable[[Any], Mapping[str, Any]],
        *,
        device: str = "auto",
        on_code_change: OnCodeChange | None = None,
        code_modules: Sequence[str] | None = None,
        recompute_damaged: bool | None = None,
        nonfinite: Collection[str] = (),
        text: Collection[str] = (),
    ) -> StoredResult | None:
        """As :meth:`run`, but ``None`` at once if another process is computing this config."""
        return self._run(config, fn, device, on_code_change, False, code_modules,
                         recompute_damaged, (nonfinite, text), blocking=False)

    def _run(self, config: Any, fn: Callable[[Any], Mapping[str, Any]], device: str,
             on_code_change: OnCodeChange | None, recompute: bool,
             code_modules: Sequence[str] | None, recompute_damaged: bool | None,
             declared: tuple[Collection[str], Collection[str]], *, blocking: bool
             ) -> StoredResult | None:
        if on_code_change is None:
            on_code_change = self.on_code_change
        _check_policy(on_code_change)
        modules = self.code_modules(config, code_modules)
        repair = self.recompute_damaged if recompute_damaged is None else recompute_damaged
        if not recompute:
            try:
                stored = self._read(config, on_code_change, modules)
            except DamagedResultError:
                stored = None  # verified again under the lock, where no writer is active
            if stored is not None:
                return stored
        self.prepare()
        try:
            lock = self.unit(config).lock(self.repair_command)
        except DamagedResultError as err:  # the lock's place: a link out of the store...
            if not repair:
                raise
            self._set_aside(err)
            lock = self.unit(config).lock(self.repair_command)
        try:
            lock.acquire(blocking=blocking)
        except Timeout:
            return None
        try:
            if not recompute:
                self._complete(self.unit(config))
                try:
                    stored = self._read(config, on_code_change, modules)
                except DamagedResultError as err:
                    if not repair:
                        raise
                    self._set_aside(err)
                    stored = None
                if stored is not None:
                    return stored
            return self._compute(config, fn, device, modules, declared)
        finally:
            lock.release()

    def _set_aside(self, err: DamagedResultError) -> None:
        moved = quarantine(err.damage, self.root)
        self.repairs.append(Repair(err.damage, moved))
        logger.warning("damaged result %s (%s) moved to %s; recomputing it",
                       err.path, err.problem, moved)

    def _compute(self, config: Any, fn: Callable[[Any], Mapping[str, Any]], device: str,
                 modules: tuple[str, ...] | None,
                 declared: tuple[Collection[str], Collection[str]] = ((), ())) -> StoredResult:
        start = time.perf_counter()
        out = fn(config)
        wall = time.perf_counter() - start
        if not isinstance(out, Mapping):
            raise ValueError(f"fn must return a mapping of results, got {type(out).__name__}")
        arrays = {k: v for k, v in out.items() if not _is_scalar(v)}
        scalars = {k: v for k, v in out.items() if _is_scalar(v)}
        try:
            return self.save(config, arrays, scalars, device=describe_device(device),
                             wall_time_s=wall, code_modules=modules, nonfinite=declared[0],
                             text=declared[1])
        except CodeChangedError as err:
            kept = self._keep_unsaved(config, out, str(err))
            raise CodeChangedError(f"{err}; the computed result is kept in {kept}") from None
        except UnsavedResultError:
            raise
        except ValueError as err:
            raise UnsavedResultError(f"unit {self.unit(config).key} of "
                                     f"{type(config).__name__}: {err}",
                                     self._keep_unsaved(config, out, str(err))) from None

    def _keep_unsaved(self, config: Any, out: Mapping[str, Any], problem: str) -> Path | None:
        """Keep a computed result the store refuses (``<root>/_unsaved/<UTC time>/<ns>/<Class>/
        <key>.npz``, with a ``.json`` saying why); ``None`` if even that fails."""
        unit = self.unit(config)
        stamp = time.strftime("%Y-%m-%dT%H-%M-%SZ", time.gmtime())
        folder = self.root / UNSAVED_DIR / stamp / unit.namespace / unit.config_class
        if files.obstruction(self.root, folder / "x") is not None:
            return None  # a link out of the store or a file in the way: never written through
        try:
            self.prepare()
        except (OSError, ValueError):
            return None
        arrays: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for name, value in out.items():
            try:
                arr = np.asarray(value)
                ok = arr.dtype != object and str(name).isidentifier()
            except Exception:  # noqa: BLE001 - anything numpy cannot take goes to the pickle
                ok = False
            if ok:
                arrays[str(name)] = arr
            else:
                extra[str(name)] = value
        try:
            files.ignore_dir(self.root / UNSAVED_DIR)
            buf = io.BytesIO()
            np.savez(buf, **arrays)  # type: ignore[arg-type]
            files.atomic_write(folder / f"{unit.key}.npz", buf.getvalue())
            note = {"problem": problem, "config_class": type(config).__qualname__,
                    "config": config_to_dict(config), "pickled": sorted(extra)}
            files.atomic_write(folder / f"{unit.key}.json",
                               json.dumps(note, indent=1, default=repr).encode())
            if extra:
                import pickle

                files.atomic_write(folder / f"{unit.key}.pickle", pickle.dumps(extra))
        except Exception:  # noqa: BLE001 - keeping it is a courtesy; the error is raised anyway
            logger.exception("could not keep the unsaved result of unit %s", unit.key)
            return None
        return folder / f"{unit.key}.npz"


_STEP_HOOK: Callable[[str], None] | None = None
"""Called with the name of each step of a write (tests inject a failure or a kill there)."""


def _step(name: str) -> None:
    if _STEP_HOOK is not None:
        _STEP_HOOK(name)


def run_sweep(
    store: ResultStore,
    configs: Sequence[Any],
    fn: Callable[[Any], Mapping[str, Any]],
    *,
    device: str = "auto",
    on_code_change: OnCodeChange | None = None,
    progress: bool = False,
    code_modules: Sequence[str] | None = None,
    recompute_damaged: bool | None = None,
    nonfinite: Collection[str] = (),
    text: Collection[str] = (),
) -> list[StoredResult]:
    """Run ``fn`` on every config not yet stored; return all results in ``configs`` order.

    Each config is stored as soon as it finishes, so an interrupted sweep (an exception, a
    killed process) resumes from the first config without a result and ends with exactly the
    results an uninterrupted sweep would have produced.

    Several processes may run the same sweep on one store (the cluster case): a first pass skips
    the configs another process is computing (their lock is held) and computes the rest; a
    second pass waits for the skipped ones and loads them (or computes them, if their process
    died). Each config is computed once.
    """
    if len(configs) == 0:
        raise ValueError("configs must not be empty")
    keys = [config_hash(c) for c in configs]
    if len(set(keys)) != len(keys):
        raise ValueError("configs contains duplicate configurations")
    options: dict[str, Any] = {"device": device, "on_code_change": on_code_change,
                               "code_modules": code_modules,
                               "recompute_damaged": recompute_damaged,
                               "nonfinite": nonfinite, "text": text}
    bar: Any = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(configs), desc="sweep")
    results: list[StoredResult | None] = []
    for config in configs:
        results.append(store.try_run(config, fn, **options))
        if bar is not None and results[-1] is not None:
            bar.update(1)
    done: list[StoredResult] = []
    for config, result in zip(configs, results, strict=True):
        if result is None:
            result = store.run(config, fn, **options)
            if bar is not None:
                bar.update(1)
        done.append(result)
    if bar is not None:
        bar.close()
    return done


def summarize_provenance(results: Sequence[StoredResult]) -> str:
    """One line describing where a set of stored results came from (for figure captions).

    Says how many were computed in this run and how many loaded, the date range, the devices,
    the total wall time, the commits, and whether all were made by the running code.
    """
    if len(results) == 0:
        raise ValueError("results must not be empty")
    if len(results) == 1:
        return results[0].describe()
    fresh = sum(r.fresh for r in results)
    dates = sorted(r.provenance.created_utc for r in results)
    devices = sorted({r.provenance.device for r in results})
    provs = [r.provenance for r in results]
    commits = sorted({p.git_commit[:10] + ("+dirty" if p.git_dirty else "") for p in provs})
    same = all(p.is_same_code() for p in provs)
    wall = sum(p.wall_time_s for p in provs)
    origin = (
        f"{fresh} of {len(results)} parts computed in this run, {len(results) - fresh} loaded"
        if fresh < len(results)
        else f"{len(results)} parts computed in this run"
    )
    when = dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"
    return (
        f"{origin}: {when}, {'; '.join(devices)}, {wall:.1f} s wall in total, "
        f"genbounds @ {', '.join(commits)} ({'same code' if same else 'DIFFERENT code'})"
    )
