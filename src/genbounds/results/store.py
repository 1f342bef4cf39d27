"""The results store: load a config's result if stored and sound, else compute and store it."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import logging
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from filelock import Timeout

from genbounds.results import files
from genbounds.results.errors import DamagedResultError, StaleResultError, StaleResultWarning
from genbounds.results.files import (
    CHECKPOINT_DIR,
    DAMAGED_DIR,
    LOCK_DIR,
    Unit,
    default_results_dir,
)
from genbounds.results.keys import config_hash, config_to_dict
from genbounds.results.provenance import (
    Provenance,
    code_fingerprint,
    describe_device,
    normalize_code_modules,
    same_code,
)
from genbounds.results.repair import Repair, default_repair_command, quarantine
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


def _check_arrays(arrays: Mapping[str, Any]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for name, value in arrays.items():
        # dotted names ("layer0.head0.W_QK.spectral", the norm table's columns) are allowed
        if not isinstance(name, str) or not all(p.isidentifier() for p in name.split(".")):
            raise ValueError(f"array names must be identifiers or dotted identifiers, "
                             f"got {name!r}")
        arr = np.asarray(value)
        if arr.dtype == object:
            raise ValueError(f"array {name!r} has dtype object; only numeric arrays are stored")
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
    if on_code_change not in ("recompute", "warn", "error"):
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
    ) -> None:
        self.root = Path(root) if root is not None else default_results_dir()
        self.namespace = namespace if namespace is not None else get_scale()
        if (not self.namespace or "/" in self.namespace or self.namespace.startswith(".")
                or self.namespace in (DAMAGED_DIR, LOCK_DIR, CHECKPOINT_DIR)):
            raise ValueError(f"namespace must be a plain directory name, got {self.namespace!r}")
        if not isinstance(recompute_damaged, bool):
            raise ValueError(f"recompute_damaged must be a bool, got {recompute_damaged!r}")
        self.recompute_damaged = recompute_damaged
        self.repair_command = repair_command or default_repair_command(self.root, self.namespace)
        self.repairs: list[Repair] = []
        """Damaged results this store moved aside and recomputed, in order."""

    # ------------------------------------------------------------------ paths and code
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
        """
        files.ignore_dir(self.root / CHECKPOINT_DIR)
        return self.unit(config).checkpoint

    def in_progress(self, config: Any) -> bool:
        """Whether ``config``'s unit has a checkpoint of an interrupted run (and no result)."""
        return self.unit(config).checkpoint.is_file() and not self.has(config)

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
    ) -> StoredResult:
        """Store a result atomically (NPZ first, then the JSON that commits it), under its lock.

        Temporary files that killed writers of this unit left behind are removed first: while
        the lock is held no other writer of the unit is alive, and a temporary file is never
        part of a result.
        """
        if not np.isfinite(wall_time_s) or wall_time_s < 0:
            raise ValueError(f"wall_time_s must be finite and >= 0, got {wall_time_s}")
        unit = self.unit(config)
        modules = self.code_modules(config, code_modules)
        arrs = _check_arrays(arrays)
        scal = _check_scalars(scalars or {})
        buf = io.BytesIO()
        np.savez(buf, **arrs)  # type: ignore[arg-type]
        npz_bytes = buf.getvalue()
        provenance = Provenance.now(device=device, wall_time_s=wall_time_s, code_modules=modules)
        meta = files.seal({
            "key": unit.key,
            "config_class": type(config).__qualname__,
            "protocol_version": type(config).PROTOCOL_VERSION,
            "config": config_to_dict(config),
            "scalars": scal,
            "arrays": {n: {"shape": list(a.shape), "dtype": str(a.dtype)} for n, a in arrs.items()},
            "npz_sha256": hashlib.sha256(npz_bytes).hexdigest(),
            "provenance": dataclasses.asdict(provenance),
        })
        with unit.lock():
            for stray in unit.temporaries():
                stray.unlink(missing_ok=True)
            files.atomic_write(unit.npz, npz_bytes)
            files.atomic_write(unit.json, json.dumps(meta, indent=1, sort_keys=True).encode())
        return StoredResult(unit.key, meta["config"], arrs, scal, provenance, unit.json,
                            fresh=True)

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
        if not same_code(p.code_fingerprint, p.code_modules, modules):
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
            return StoredResult(unit.key, record.meta["config"], record.arrays,
                                record.meta["scalars"], p, unit.json, stale=True)
        return StoredResult(unit.key, record.meta["config"], record.arrays,
                            record.meta["scalars"], p, unit.json)

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
        ``wait_s`` seconds), so a write in progress elsewhere is never mistaken for damage.

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
                lock = self.unit(config).lock()
                lock.acquire(timeout=wait_s)
            except (Timeout, OSError):  # a writer holds it too long, or a read-only store
                raise first from None
            try:
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
        on_code_change: OnCodeChange = "recompute",
        recompute: bool = False,
        code_modules: Sequence[str] | None = None,
        recompute_damaged: bool | None = None,
    ) -> StoredResult:
        """Load the result of ``fn(config)`` if stored, else compute, store and return it.

        ``fn`` returns a mapping of names to arrays (anything :func:`numpy.asarray` accepts
        numerically) and scalars (Python ``bool``/``int``/``float``/``str``); 0-d numbers go to
        the scalars. The unit's lock is held from the decision to compute until the result is
        committed, so a second process asking for the same config waits and then loads this
        result instead of computing it again. ``recompute_damaged`` (default: the store's
        setting) moves a damaged result aside and recomputes it instead of raising.
        """
        result = self._run(config, fn, device, on_code_change, recompute, code_modules,
                           recompute_damaged, blocking=True)
        assert result is not None  # a blocking run always ends with a result
        return result

    def try_run(
        self,
        config: Any,
        fn: Callable[[Any], Mapping[str, Any]],
        *,
        device: str = "auto",
        on_code_change: OnCodeChange = "recompute",
        code_modules: Sequence[str] | None = None,
        recompute_damaged: bool | None = None,
    ) -> StoredResult | None:
        """As :meth:`run`, but ``None`` at once if another process is computing this config."""
        return self._run(config, fn, device, on_code_change, False, code_modules,
                         recompute_damaged, blocking=False)

    def _run(self, config: Any, fn: Callable[[Any], Mapping[str, Any]], device: str,
             on_code_change: OnCodeChange, recompute: bool, code_modules: Sequence[str] | None,
             recompute_damaged: bool | None, *, blocking: bool) -> StoredResult | None:
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
        lock = self.unit(config).lock()
        try:
            lock.acquire(blocking=blocking)
        except Timeout:
            return None
        try:
            if not recompute:
                try:
                    stored = self._read(config, on_code_change, modules)
                except DamagedResultError as err:
                    if not repair:
                        raise
                    self._set_aside(err)
                    stored = None
                if stored is not None:
                    return stored
            return self._compute(config, fn, device, modules)
        finally:
            lock.release()

    def _set_aside(self, err: DamagedResultError) -> None:
        moved = quarantine(err.damage, self.root)
        self.repairs.append(Repair(err.damage, moved))
        logger.warning("damaged result %s (%s) moved to %s; recomputing it",
                       err.path, err.problem, moved)

    def _compute(self, config: Any, fn: Callable[[Any], Mapping[str, Any]], device: str,
                 modules: tuple[str, ...] | None) -> StoredResult:
        start = time.perf_counter()
        out = fn(config)
        wall = time.perf_counter() - start
        if not isinstance(out, Mapping):
            raise ValueError(f"fn must return a mapping of results, got {type(out).__name__}")
        arrays = {k: v for k, v in out.items() if not _is_scalar(v)}
        scalars = {k: v for k, v in out.items() if _is_scalar(v)}
        return self.save(config, arrays, scalars, device=describe_device(device),
                         wall_time_s=wall, code_modules=modules)


def run_sweep(
    store: ResultStore,
    configs: Sequence[Any],
    fn: Callable[[Any], Mapping[str, Any]],
    *,
    device: str = "auto",
    on_code_change: OnCodeChange = "recompute",
    progress: bool = False,
    code_modules: Sequence[str] | None = None,
    recompute_damaged: bool | None = None,
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
                               "recompute_damaged": recompute_damaged}
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
