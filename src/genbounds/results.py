"""Stored experiment results: config hashing, atomic writes, provenance, resumable sweeps.

An experiment is a function of a *frozen dataclass* config. Its results are kept under
``results/<namespace>/<ConfigClass>/<key>.{json,npz}`` where ``key`` hashes the config together
with the config class's ``PROTOCOL_VERSION``:

* ``<key>.npz`` holds the arrays (``numpy.savez``, never pickle);
* ``<key>.json`` holds the config, the scalars, the provenance and the SHA-256 of the ``.npz``.
  It is written last, atomically (temporary file + :func:`os.replace`), so a result exists exactly
  when its JSON exists and the checksum matches: a sweep killed half-way leaves either a complete
  result or nothing, and :func:`run_sweep` resumes where it stopped.

Nothing stale is shown silently: a stored result whose recorded config differs from the one
asked for raises :class:`StaleResultError`; one computed by different package code (its
*code fingerprint*, a hash of the package's source files, differs) is recomputed, reported with a
:class:`StaleResultWarning`, or refused, as the caller chooses.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import io
import json
import os
import platform
import subprocess
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from genbounds import __version__
from genbounds.scale import get_scale

__all__ = [
    "Provenance",
    "ResultStore",
    "StaleResultError",
    "StaleResultWarning",
    "StoredResult",
    "code_fingerprint",
    "config_hash",
    "config_to_dict",
    "default_results_dir",
    "describe_device",
    "run_sweep",
    "summarize_provenance",
]

OnCodeChange = Literal["recompute", "warn", "error"]
_PACKAGE_DIR = Path(__file__).resolve().parent


class StaleResultError(RuntimeError):
    """A stored result does not match the config or code it is asked for."""


class StaleResultWarning(UserWarning):
    """A stored result was computed by different package code than the running one."""


# --------------------------------------------------------------------------- configs and keys


def config_to_dict(config: Any) -> dict[str, Any]:
    """Canonical JSON-ready dict of a frozen dataclass config (tuples become lists).

    Raises
    ------
    ValueError
        If ``config`` is not a frozen dataclass instance, lacks an integer ``PROTOCOL_VERSION``,
        or holds values that JSON cannot represent exactly (non-finite floats, objects).
    """
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        raise ValueError(f"config must be a dataclass instance, got {type(config).__name__}")
    params = getattr(type(config), "__dataclass_params__", None)
    if params is None or not params.frozen:
        raise ValueError(f"config must be a frozen dataclass, {type(config).__name__} is not")
    version = getattr(type(config), "PROTOCOL_VERSION", None)
    if not isinstance(version, int):
        raise ValueError(
            f"config class {type(config).__name__} must define an integer PROTOCOL_VERSION"
        )

    def convert(value: Any, where: str) -> Any:
        if isinstance(value, bool | int | str) or value is None:
            return value
        if isinstance(value, float):
            if not np.isfinite(value):
                raise ValueError(f"config field {where} is not finite: {value}")
            return value
        if isinstance(value, tuple | list):
            return [convert(v, f"{where}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, dict):
            return {str(k): convert(v, f"{where}.{k}") for k, v in sorted(value.items())}
        raise ValueError(f"config field {where} has a type JSON cannot store: {type(value)}")

    return {f.name: convert(getattr(config, f.name), f.name) for f in dataclasses.fields(config)}


def config_hash(config: Any) -> str:
    """Key of a config: SHA-256 (first 16 hex digits) of class name, protocol version and fields."""
    fields = config_to_dict(config)  # validates the config first
    payload = {
        "class": type(config).__qualname__,
        "protocol_version": type(config).PROTOCOL_VERSION,
        "config": fields,
    }
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


# --------------------------------------------------------------------------- provenance


def code_fingerprint() -> str:
    """SHA-256 (first 16 hex digits) of every ``.py`` file of the installed package, by path."""
    digest = hashlib.sha256()
    for path in sorted(_PACKAGE_DIR.rglob("*.py")):
        digest.update(str(path.relative_to(_PACKAGE_DIR)).encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=_PACKAGE_DIR, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def describe_device(device: str = "auto") -> str:
    """Human-readable description of the device a computation ran on."""
    import torch

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ValueError(f"device {device!r} requested but CUDA is not available")
        name = torch.cuda.get_device_name(torch.device(device))
        return f"{device} ({name}), torch {torch.__version__}"
    if device != "cpu":
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda[:i]', got {device!r}")
    return (
        f"cpu ({platform.machine()}, {os.cpu_count()} cores, {torch.get_num_threads()} threads), "
        f"torch {torch.__version__}"
    )


@dataclass(frozen=True)
class Provenance:
    """Where a stored result came from."""

    package_version: str
    git_commit: str
    git_dirty: bool
    code_fingerprint: str
    device: str
    wall_time_s: float
    created_utc: str
    python: str

    @classmethod
    def now(cls, *, device: str, wall_time_s: float) -> Provenance:
        commit = _git("rev-parse", "HEAD") or "unknown"
        status = _git("status", "--porcelain", "--untracked-files=no")
        return cls(
            package_version=__version__,
            git_commit=commit,
            git_dirty=bool(status),
            code_fingerprint=code_fingerprint(),
            device=device,
            wall_time_s=float(wall_time_s),
            created_utc=_dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            python=platform.python_version(),
        )


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

    def describe(self) -> str:
        """One line saying what this result is and where it came from (for captions)."""
        p = self.provenance
        origin = "computed in this run" if self.fresh else f"loaded from {self.path.name}"
        code = "same code" if p.code_fingerprint == code_fingerprint() else "DIFFERENT code"
        commit = p.git_commit[:10] + ("+dirty" if p.git_dirty else "")
        return (
            f"{origin}: {p.created_utc}, {p.device}, {p.wall_time_s:.1f} s wall, "
            f"genbounds {p.package_version} @ {commit} ({code})"
        )


# --------------------------------------------------------------------------- the store


def default_results_dir() -> Path:
    """``$GENBOUNDS_RESULTS_DIR`` if set; else ``results/`` of the source checkout; else a cache."""
    env = os.environ.get("GENBOUNDS_RESULTS_DIR")
    if env:
        return Path(env)
    repo = _PACKAGE_DIR.parents[1]
    if (repo / "_toc.yml").exists():
        return repo / "results"
    return Path.home() / ".cache" / "genbounds" / "results"


def _atomic_write(path: Path, data: bytes) -> None:
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


def _check_arrays(arrays: Mapping[str, Any]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for name, value in arrays.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"array names must be identifiers, got {name!r}")
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


class ResultStore:
    """Results on disk, keyed by :func:`config_hash`.

    Parameters
    ----------
    root:
        Directory of the store; defaults to :func:`default_results_dir`.
    namespace:
        Sub-directory, by default the current scale (``quick`` or ``paper``), so that quick
        results (never committed) and paper results (committed) stay apart.
    """

    def __init__(self, root: str | Path | None = None, namespace: str | None = None) -> None:
        self.root = Path(root) if root is not None else default_results_dir()
        self.namespace = namespace if namespace is not None else get_scale()
        if not self.namespace or "/" in self.namespace or self.namespace.startswith("."):
            raise ValueError(f"namespace must be a plain directory name, got {self.namespace!r}")

    def _paths(self, config: Any) -> tuple[str, Path, Path]:
        key = config_hash(config)
        folder = self.root / self.namespace / type(config).__name__
        return key, folder / f"{key}.json", folder / f"{key}.npz"

    def has(self, config: Any) -> bool:
        """Whether a complete result for ``config`` is stored (its JSON exists)."""
        return self._paths(config)[1].exists()

    def save(
        self,
        config: Any,
        arrays: Mapping[str, Any],
        scalars: Mapping[str, Any] | None = None,
        *,
        device: str,
        wall_time_s: float,
    ) -> StoredResult:
        """Store a result atomically (NPZ first, then the JSON that commits it)."""
        if not np.isfinite(wall_time_s) or wall_time_s < 0:
            raise ValueError(f"wall_time_s must be finite and >= 0, got {wall_time_s}")
        key, json_path, npz_path = self._paths(config)
        arrs = _check_arrays(arrays)
        scal = _check_scalars(scalars or {})
        buf = io.BytesIO()
        np.savez(buf, **arrs)  # type: ignore[arg-type]
        npz_bytes = buf.getvalue()
        _atomic_write(npz_path, npz_bytes)
        provenance = Provenance.now(device=device, wall_time_s=wall_time_s)
        meta = {
            "key": key,
            "config_class": type(config).__qualname__,
            "protocol_version": type(config).PROTOCOL_VERSION,
            "config": config_to_dict(config),
            "scalars": scal,
            "arrays": {n: {"shape": list(a.shape), "dtype": str(a.dtype)} for n, a in arrs.items()},
            "npz_sha256": hashlib.sha256(npz_bytes).hexdigest(),
            "provenance": dataclasses.asdict(provenance),
        }
        _atomic_write(json_path, json.dumps(meta, indent=1, sort_keys=True).encode())
        return StoredResult(key, meta["config"], arrs, scal, provenance, json_path, fresh=True)

    def load(self, config: Any, *, on_code_change: OnCodeChange = "warn") -> StoredResult | None:
        """Load the stored result for ``config``, or ``None`` if there is none.

        Raises
        ------
        StaleResultError
            If the stored config or protocol version differs from ``config``, the arrays do not
            match their checksum, or the code changed and ``on_code_change="error"``.
        """
        if on_code_change not in ("recompute", "warn", "error"):
            raise ValueError(
                f"on_code_change must be recompute, warn or error, got {on_code_change!r}"
            )
        key, json_path, npz_path = self._paths(config)
        if not json_path.exists():
            return None
        meta = json.loads(json_path.read_text())
        wanted = config_to_dict(config)
        if (
            meta.get("config") != wanted
            or meta.get("protocol_version") != type(config).PROTOCOL_VERSION
            or meta.get("config_class") != type(config).__qualname__
        ):
            raise StaleResultError(
                f"stored result {json_path} does not match the requested config "
                f"(stored protocol {meta.get('protocol_version')}, "
                f"wanted {type(config).PROTOCOL_VERSION}); delete it or bump PROTOCOL_VERSION"
            )
        if not npz_path.exists():
            raise StaleResultError(f"{json_path} has no arrays file {npz_path.name}")
        npz_bytes = npz_path.read_bytes()
        if hashlib.sha256(npz_bytes).hexdigest() != meta["npz_sha256"]:
            raise StaleResultError(f"{npz_path} does not match the checksum recorded in its JSON")
        provenance = Provenance(**meta["provenance"])
        if provenance.code_fingerprint != code_fingerprint():
            message = (
                f"stored result {json_path.name} was computed by different genbounds code "
                f"(fingerprint {provenance.code_fingerprint}, now {code_fingerprint()}; "
                f"commit {provenance.git_commit[:10]}, {provenance.created_utc})"
            )
            if on_code_change == "error":
                raise StaleResultError(message)
            if on_code_change == "recompute":
                return None
            warnings.warn(message, StaleResultWarning, stacklevel=2)
        with np.load(io.BytesIO(npz_bytes), allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
        return StoredResult(key, meta["config"], arrays, meta["scalars"], provenance, json_path)

    def run(
        self,
        config: Any,
        fn: Callable[[Any], Mapping[str, Any]],
        *,
        device: str = "auto",
        on_code_change: OnCodeChange = "recompute",
        recompute: bool = False,
    ) -> StoredResult:
        """Load the result of ``fn(config)`` if stored, else compute, store and return it.

        ``fn`` returns a mapping of names to arrays (anything :func:`numpy.asarray` accepts
        numerically) and scalars (Python ``bool``/``int``/``float``/``str``); 0-d numbers go to
        the scalars.
        """
        if not recompute:
            stored = self.load(config, on_code_change=on_code_change)
            if stored is not None:
                return stored
        start = time.perf_counter()
        out = fn(config)
        wall = time.perf_counter() - start
        if not isinstance(out, Mapping):
            raise ValueError(f"fn must return a mapping of results, got {type(out).__name__}")
        arrays = {k: v for k, v in out.items() if not _is_scalar(v)}
        scalars = {k: v for k, v in out.items() if _is_scalar(v)}
        return self.save(config, arrays, scalars, device=describe_device(device), wall_time_s=wall)


def _is_scalar(value: Any) -> bool:
    return isinstance(value, bool | int | float | str | np.generic) or value is None


def run_sweep(
    store: ResultStore,
    configs: Sequence[Any],
    fn: Callable[[Any], Mapping[str, Any]],
    *,
    device: str = "auto",
    on_code_change: OnCodeChange = "recompute",
    progress: bool = False,
) -> list[StoredResult]:
    """Run ``fn`` on every config not yet stored; return all results in ``configs`` order.

    Each config is stored as soon as it finishes, so an interrupted sweep (an exception, a
    killed process) resumes from the first config without a result and ends with exactly the
    results an uninterrupted sweep would have produced.
    """
    if len(configs) == 0:
        raise ValueError("configs must not be empty")
    keys = [config_hash(c) for c in configs]
    if len(set(keys)) != len(keys):
        raise ValueError("configs contains duplicate configurations")
    iterator: Any = configs
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(configs, desc="sweep")
    return [store.run(c, fn, device=device, on_code_change=on_code_change) for c in iterator]


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
    same = all(r.provenance.code_fingerprint == code_fingerprint() for r in results)
    wall = sum(r.provenance.wall_time_s for r in results)
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
