"""Where a stored result came from: code fingerprint (per experiment), git state, device, time.

The *code fingerprint* is a SHA-256 over the source files of the code an experiment runs. An
experiment names its modules (``code_modules``, e.g. ``("genbounds.data", "genbounds.models",
"genbounds.train", "genbounds.experiments.sparse_majority")``); a package stands for every
``.py`` file under it; ``None`` stands for the whole ``genbounds`` package (the behaviour of
results stored before ``code_modules`` existed). So a docstring edit in a bound's module does not
mark a stored training run as made by different code. :func:`code_modules_of` lists the
``genbounds`` modules a module imports, transitively, for an experiment that wants its list
derived rather than written by hand.
"""

from __future__ import annotations

import ast
import datetime as _dt
import hashlib
import os
import platform
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from genbounds import __version__

__all__ = [
    "CodeChangedError",
    "Provenance",
    "check_source_unchanged",
    "code_fingerprint",
    "code_modules_of",
    "describe_device",
    "module_files",
    "normalize_code_modules",
    "same_code",
]

PACKAGE_DIR = Path(__file__).resolve().parents[1]
"""The directory of the ``genbounds`` package."""
_PACKAGE = "genbounds"


def normalize_code_modules(modules: Sequence[str] | None, name: str = "code_modules"
                           ) -> tuple[str, ...] | None:
    """Sorted, de-duplicated module names, each checked to be ``genbounds`` or inside it."""
    if modules is None:
        return None
    if isinstance(modules, str) or not isinstance(modules, Sequence) or len(modules) == 0:
        raise ValueError(f"{name} must be a non-empty sequence of module names, got {modules!r}")
    for module in modules:
        _module_path(module, name)
    return tuple(sorted(set(modules)))


def _module_path(module: Any, name: str) -> Path:
    """The file (module) or directory (package) of ``module``, found without importing it."""
    if not isinstance(module, str) or not (
        module == _PACKAGE or module.startswith(_PACKAGE + ".")
    ):
        raise ValueError(f"{name} must name genbounds modules, got {module!r}")
    parts = module.split(".")[1:]
    base = PACKAGE_DIR.joinpath(*parts)
    if base.is_dir() and (base / "__init__.py").exists():
        return base
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    raise ValueError(f"{name}: there is no module {module!r} in {PACKAGE_DIR}")


def module_files(modules: Sequence[str] | None = None) -> list[Path]:
    """The source files a fingerprint over ``modules`` covers, sorted (``None``: whole package)."""
    names = normalize_code_modules(modules, "modules")
    if names is None:
        return sorted(PACKAGE_DIR.rglob("*.py"))
    files: set[Path] = set()
    for module in names:
        path = _module_path(module, "modules")
        files.update(path.rglob("*.py") if path.is_dir() else [path])
    return sorted(files)


class CodeChangedError(RuntimeError):
    """A source file a result's fingerprint covers changed on disk after this process imported
    the package: the result was computed by code the fingerprint cannot name (not stored)."""


def check_source_unchanged(modules: Sequence[str] | None = None) -> None:
    """:class:`CodeChangedError` naming the files of ``modules`` (as :func:`module_files`) whose
    content differs from :data:`genbounds.SOURCE_AT_IMPORT` (found on 2026-11-26: a notebook
    imported the old code, a file was edited, and the records claimed the new code)."""
    from genbounds import SOURCE_AT_IMPORT

    changed = []
    for path in module_files(modules):
        rel = path.relative_to(PACKAGE_DIR).as_posix()
        if SOURCE_AT_IMPORT.get(rel) != hashlib.sha256(path.read_bytes()).hexdigest():
            changed.append(rel)
    if changed:
        raise CodeChangedError(
            f"{', '.join(changed)} changed on disk after this process imported genbounds: the "
            "result was computed by the code as imported, which its fingerprint cannot name, so "
            "it is not stored; restart the process (kernel) and run again")


def code_fingerprint(modules: Sequence[str] | None = None) -> str:
    """SHA-256 (first 16 hex digits) of the source of ``modules``, file by file, with paths.

    ``modules`` names ``genbounds`` modules or packages (a package covers every ``.py`` file
    under it); ``None`` covers the whole package. ``code_fingerprint(["genbounds"])`` equals
    ``code_fingerprint()``.
    """
    digest = hashlib.sha256()
    for path in module_files(modules):
        digest.update(str(path.relative_to(PACKAGE_DIR)).encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def _imports_of(path: Path, module: str) -> set[str]:
    """Absolute names of the ``genbounds`` modules that the file ``path`` imports anywhere.

    ``from package import submodule`` counts as the submodule only: the package's ``__init__``
    that Python runs first is followed only when a name defined there is imported.
    """
    tree = ast.parse(path.read_bytes(), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base]) if base else ".".join(anchor)
            for alias in node.names:
                name = f"{base}.{alias.name}"
                # a submodule is that file; a name defined in ``base`` is ``base`` itself
                found.add(name if _resolve(name) in (name, f"{name}.__init__") else base)
    return {m for m in found if m == _PACKAGE or m.startswith(_PACKAGE + ".")}


def _resolve(module: str) -> str | None:
    """The genbounds *file* an imported name executes, as a module name, or ``None``.

    A module is itself; a package is its ``__init__`` (``genbounds.models.__init__``: importing
    a package runs that file only); an attribute imported from a module is that module.
    """
    while module == _PACKAGE or module.startswith(_PACKAGE + "."):
        try:
            path = _module_path(module, "module")
        except ValueError:
            module = module.rpartition(".")[0]
            continue
        return f"{module}.__init__" if path.is_dir() else module
    return None


def code_modules_of(
    *modules: str,
    exclude: Sequence[str] = ("genbounds.__init__", "genbounds.results"),
) -> tuple[str, ...]:
    """``modules`` and every ``genbounds`` file they import, transitively (read, not imported).

    Imports inside functions count; an imported package counts as its ``__init__`` file
    (returned as ``"<package>.__init__"``, a name :func:`code_fingerprint` accepts). ``exclude``
    names modules (and packages, with everything under them) whose imports are not followed and
    that are left out: by default the top-level ``__init__`` (it holds only the version) and the
    results store, neither of which changes what an experiment computes. A package given in
    ``modules`` stands for all its files.
    """
    if not modules:
        raise ValueError("modules must name at least one genbounds module")

    def excluded(name: str) -> bool:
        base = name.removesuffix(".__init__")
        return any(name == e or base == e or base.startswith(e + ".") for e in exclude)

    todo: list[str] = []
    for module in normalize_code_modules(modules, "modules") or ():
        path = _module_path(module, "modules")
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in files:
            parts = [_PACKAGE, *file.relative_to(PACKAGE_DIR).with_suffix("").parts]
            todo.append(".".join(parts))
    seen: set[str] = set()
    while todo:
        module = todo.pop()
        if module in seen or excluded(module):
            continue
        seen.add(module)
        file = _module_path(module, "modules")
        package = module.removesuffix(".__init__")
        for imported in _imports_of(file, package if module.endswith(".__init__") else module):
            resolved = _resolve(imported)
            if resolved is not None and resolved not in seen:
                todo.append(resolved)
    return tuple(sorted(seen))


def same_code(fingerprint: str, stored_modules: Sequence[str] | None,
              wanted_modules: Sequence[str] | None) -> bool:
    """Whether a result fingerprinted over ``stored_modules`` was made by the running code.

    True when the stored files cover every file the caller's modules name and their source is
    unchanged. A record without a module list (``None``) covered the whole package.
    """
    try:
        stored = set(module_files(stored_modules))
    except ValueError:  # a module that no longer exists: the code changed
        return False
    if not set(module_files(wanted_modules)) <= stored:
        return False
    return fingerprint == code_fingerprint(stored_modules)


GIT_COMMIT_ENV = "GENBOUNDS_GIT_COMMIT"
"""When set, the commit recorded instead of asking git: for a copy of the working tree sent to
another machine (a lent GPU), whose ``.git`` may be missing or stale (on 2026-11-26 such a copy
held the ``.git`` of an older commit, and git reported that commit, dirty). Whoever copies a
checkout of commit C sets it to C (``tools/gpu_session.sh`` takes C as its argument), and
:data:`GIT_DIRTY_ENV` to ``1`` if the copy had uncommitted changes."""
GIT_DIRTY_ENV = "GENBOUNDS_GIT_DIRTY"
"""``1``: the copy named by :data:`GIT_COMMIT_ENV` had uncommitted changes (default ``0``)."""


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=PACKAGE_DIR, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def describe_device(device: str = "auto") -> str:
    """Human-readable description of the device a computation ran on.

    Names torch's version and threads when torch is in use; a computation that never imported
    torch on the CPU is described without it (and without paying torch's import time).
    """
    if not (device in ("auto", "cpu") or device.startswith("cuda")):
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda[:i]', got {device!r}")
    if device == "cpu" and "torch" not in sys.modules:
        return f"cpu ({platform.machine()}, {os.cpu_count()} cores), numpy only"
    import torch

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ValueError(f"device {device!r} requested but CUDA is not available")
        name = torch.cuda.get_device_name(torch.device(device))
        return f"{device} ({name}), torch {torch.__version__}"
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
    code_modules: tuple[str, ...] | None = None
    """The modules the fingerprint covers; ``None``: the whole package (older records)."""

    @classmethod
    def now(cls, *, device: str, wall_time_s: float,
            code_modules: Sequence[str] | None = None) -> Provenance:
        """Provenance of a result computed just now by the running code."""
        modules = normalize_code_modules(code_modules)
        check_source_unchanged(modules)
        given = os.environ.get(GIT_COMMIT_ENV)
        if given:  # a copy of the tree whose own .git (if any) cannot be trusted
            commit, dirty = given, os.environ.get(GIT_DIRTY_ENV, "0") == "1"
        else:
            commit = _git("rev-parse", "HEAD") or "unknown"
            dirty = bool(_git("status", "--porcelain", "--untracked-files=no"))
        return cls(
            package_version=__version__,
            git_commit=commit,
            git_dirty=dirty,
            code_fingerprint=code_fingerprint(modules),
            device=device,
            wall_time_s=float(wall_time_s),
            created_utc=_dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            python=platform.python_version(),
            code_modules=modules,
        )

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Provenance:
        """Rebuild from a stored JSON record (lists back to tuples); ``ValueError`` if malformed."""
        required = ("package_version", "git_commit", "git_dirty", "code_fingerprint", "device",
                    "wall_time_s", "created_utc", "python")
        missing = [k for k in required if k not in record]
        if missing:
            raise ValueError(f"provenance lacks {', '.join(missing)}")
        modules = record.get("code_modules")
        return cls(
            **{k: record[k] for k in required},
            code_modules=None if modules is None else tuple(str(m) for m in modules),
        )

    def is_same_code(self) -> bool:
        """Whether the code this result's fingerprint covers is unchanged in the running code."""
        return same_code(self.code_fingerprint, self.code_modules, self.code_modules)
