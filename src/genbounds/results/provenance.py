"""Where a stored result came from: code fingerprint (per experiment), git state, device, CPU
class, time.

The *code fingerprint* is a SHA-256 over the source files of the code an experiment runs. An
experiment names its modules (``code_modules``: the ``genbounds`` files its units execute, as
checked by ``tests/test_fingerprints.py``, which runs a tiny unit of every registered experiment
under tracing); a package stands for every ``.py`` file under it; ``None`` stands for the whole
``genbounds`` package (the behaviour of results stored before ``code_modules`` existed).

Two schemes (the fingerprint string says which):

* ``ast2:<16 hex>`` (:func:`code_fingerprint`, every result stored since 2026-11-26): each file's
  *normalised syntax tree* (the parsed file, docstrings and the arguments of ``raise`` removed,
  written as text in one canonical form, :func:`canonical_dump`, that is the same under every
  Python from 3.11 on), so comments, docstrings, error messages, formatting and the Python
  version, which cannot change a number, do not change the fingerprint (``ast1:``, a few
  records of that day, kept the messages). Records computed under Python 3.12 before the
  canonical form existed (``ast.dump`` wrote their trees differently) are carried over by
  :func:`migrate_record`;
* ``<16 hex>`` (:func:`legacy_code_fingerprint`, older records): the files' bytes.

:func:`migrate_record` carries an old record over to the new scheme when the files its
experiment now declares are, under the new scheme, the same at the record's own commit as now
(read with ``git show``), and records that it did and how; otherwise the record stays stale.

The *CPU class* (:func:`cpu_class`) is what decides whether two CPU runs can agree bit for bit:
torch's kernel capability (``torch.backends.cpu.get_cpu_capability()``), numpy's SIMD dispatch
targets, the CPU vendor, the torch and numpy builds and the instruction-set limits set in the
environment; the CPU model is recorded beside them. Every result records it
(:attr:`Provenance.cpu_class`); a bitwise claim holds only between runs of one class
(:func:`cpu_class_key`).
"""

from __future__ import annotations

import ast
import datetime as _dt
import hashlib
import os
import platform
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from genbounds import __version__
from genbounds.validation import check_positive

__all__ = [
    "AST_SCHEME",
    "CodeChangedError",
    "Provenance",
    "check_source_unchanged",
    "code_fingerprint",
    "canonical_dump",
    "code_fingerprint_at",
    "code_modules_of",
    "cpu_class",
    "cpu_class_key",
    "describe_device",
    "dump_style_of",
    "earlier_stretches",
    "legacy_code_fingerprint",
    "migrate_record",
    "module_files",
    "normalize_code_modules",
    "normalized_source",
    "recorded_estimate",
    "recorded_probe",
    "same_code",
    "stretch_record",
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


AST_SCHEME = "ast2"
"""Prefix of a fingerprint over normalised syntax trees (:func:`code_fingerprint`): ``ast2``
also drops the arguments of ``raise`` (error messages); ``ast1`` (records of 2026-11-26 only)
kept them and is still read."""
_AST_SCHEMES = ("ast1", "ast2")


def _strip_docstrings(tree: ast.AST, messages: bool = True) -> None:
    for node in ast.walk(tree):
        if messages and isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            node.exc.args, node.exc.keywords = [], []  # the message cannot change a number
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                node.body = body[1:] or [ast.Pass()]


_CONSTANT_FIELDS = frozenset({("Constant", "value"), ("MatchSingleton", "value")})
"""The fields that may hold ``None`` as a value (the literal ``None``) rather than as absent."""
DUMP_STYLES = ("canonical", "3.12", "3.13")
"""How a syntax tree is written as text. ``canonical`` (every fingerprint computed now, under
every Python): what Python 3.11's ``ast.dump(tree, annotate_fields=True,
include_attributes=False)`` prints, written out by :func:`canonical_dump` so that it does not
depend on the running Python (3.12 adds ``type_params=[]`` to every function and class, 3.13
leaves out empty lists, 3.12.0-3.12.1 add empty strings to f-strings). ``3.12`` and ``3.13``:
what ``ast.dump`` printed under those Pythons, used only to check a fingerprint that such a
Python recorded before the canonical form existed (:func:`migrate_record`)."""


def _joined(values: list[Any]) -> list[Any]:
    """An f-string's parts without empty string constants and with adjacent ones merged (the
    same string; parsers of different Pythons split it differently)."""
    out: list[Any] = []
    for value in values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            if value.value == "":
                continue
            if out and isinstance(out[-1], ast.Constant) and isinstance(out[-1].value, str):
                out[-1] = ast.Constant(value=out[-1].value + value.value)
                continue
        out.append(value)
    return out


def canonical_dump(node: Any, style: str = "canonical") -> str:
    """``node`` (a syntax tree) as text, the same under every Python for the same source (see
    :data:`DUMP_STYLES`): each node as ``Name(field=value, ...)`` in its fields' order, a field
    that is absent or ``None`` (an optional field not given) left out, ``type_params`` left out
    when empty (Python 3.12+ only), f-string parts normalised (:func:`_joined`), lists as
    ``[...]`` and every other value as its ``repr``."""
    if isinstance(node, ast.AST):
        cls = type(node).__name__
        parts = []
        for name in node._fields:
            try:
                value = getattr(node, name)
            except AttributeError:
                continue
            if value is None and (cls, name) not in _CONSTANT_FIELDS:
                continue
            if name == "type_params" and value == [] and style == "canonical":
                continue
            if style == "3.13" and value == []:
                continue
            if cls == "JoinedStr" and name == "values" and style == "canonical":
                value = _joined(value)
            parts.append(f"{name}={canonical_dump(value, style)}")
        if style == "3.12" and cls in ("FunctionDef", "AsyncFunctionDef", "ClassDef") and not any(
                p.startswith("type_params=") for p in parts):
            parts.append("type_params=[]")
        return f"{cls}({', '.join(parts)})"
    if isinstance(node, list):
        return "[" + ", ".join(canonical_dump(x, style) for x in node) + "]"
    return repr(node)


def dump_style_of(python: str) -> str:
    """The :data:`DUMP_STYLES` entry of ``ast.dump`` under the Python version ``python``
    (``"3.12.3"`` -> ``"3.12"``; 3.11 and older print the canonical form)."""
    try:
        major, minor = (int(x) for x in python.split(".")[:2])
    except ValueError:
        raise ValueError(f"python must be a version such as '3.12.3', got {python!r}") from None
    if (major, minor) >= (3, 13):
        return "3.13"
    return "3.12" if (major, minor) == (3, 12) else "canonical"


def normalized_source(source: bytes | str, filename: str = "<source>",
                      scheme: str = AST_SCHEME, style: str = "canonical") -> str:
    """The file's syntax tree without docstrings (and, in ``ast2``, without the arguments of
    ``raise``), as text (:func:`canonical_dump`): equal for two sources that differ only in
    comments, docstrings, error messages or formatting, and the same under every Python
    (``ValueError`` naming ``filename`` if it does not parse)."""
    if style not in DUMP_STYLES:
        raise ValueError(f"style must be one of {DUMP_STYLES}, got {style!r}")
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as err:
        raise ValueError(f"{filename} is not valid Python ({err.msg}, line {err.lineno})"
                         ) from None
    _strip_docstrings(tree, messages=scheme != "ast1")
    return canonical_dump(tree, style)


_NORMALIZED: dict[tuple[str, str, str, str], bytes] = {}
"""Each file's normalised tree, by (path, SHA-256 of its bytes): parsing is 100 times slower
than hashing bytes, and every load of a stored unit checks its fingerprint."""


def _normalized_bytes(rel: str, source: bytes, scheme: str, style: str = "canonical") -> bytes:
    key = (rel, hashlib.sha256(source).hexdigest(), scheme, style)
    if key not in _NORMALIZED:
        _NORMALIZED[key] = normalized_source(source, rel, scheme, style).encode()
    return _NORMALIZED[key]


def _ast_digest(named_sources: Sequence[tuple[str, bytes]], scheme: str = AST_SCHEME,
                style: str = "canonical") -> str:
    digest = hashlib.sha256()
    for rel, source in named_sources:
        digest.update(rel.encode())
        digest.update(b"\0")
        digest.update(_normalized_bytes(rel, source, scheme, style))
        digest.update(b"\0")
    return f"{scheme}:{digest.hexdigest()[:16]}"


def code_fingerprint(modules: Sequence[str] | None = None, scheme: str = AST_SCHEME) -> str:
    """``"ast2:"`` and 16 hex digits of a SHA-256 over the normalised syntax trees of
    ``modules``' files (:func:`normalized_source`), file by file, with their paths.

    ``modules`` names ``genbounds`` modules or packages (a package covers every ``.py`` file
    under it); ``None`` covers the whole package. ``code_fingerprint(["genbounds"])`` equals
    ``code_fingerprint()``. Comments, docstrings and formatting do not change it.
    """
    if scheme not in _AST_SCHEMES:
        raise ValueError(f"scheme must be one of {_AST_SCHEMES}, got {scheme!r}")
    return _ast_digest([(path.relative_to(PACKAGE_DIR).as_posix(), path.read_bytes())
                        for path in module_files(modules)], scheme)


def legacy_code_fingerprint(modules: Sequence[str] | None = None) -> str:
    """The fingerprint of records stored before 2026-11-26: 16 hex digits of a SHA-256 over the
    files' bytes (so a comment changed it)."""
    digest = hashlib.sha256()
    for path in module_files(modules):
        digest.update(str(path.relative_to(PACKAGE_DIR)).encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def _fingerprint_now(fingerprint: str, modules: Sequence[str] | None) -> str:
    """The running code's fingerprint over ``modules`` in the scheme of ``fingerprint``."""
    if fingerprint.startswith(AST_SCHEME + ":"):
        return code_fingerprint(modules)
    for scheme in _AST_SCHEMES:
        if fingerprint.startswith(scheme + ":"):
            return code_fingerprint(modules, scheme)
    return legacy_code_fingerprint(modules)


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
    unchanged (in the record's scheme: a normalised syntax tree for ``ast1:`` fingerprints,
    the bytes for older ones). A record without a module list (``None``) covered the whole
    package.
    """
    try:
        stored = set(module_files(stored_modules))
    except ValueError:  # a module that no longer exists: the code changed
        return False
    if not set(module_files(wanted_modules)) <= stored:
        return False
    return fingerprint == _fingerprint_now(fingerprint, stored_modules)


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


#: Environment variables that limit the instruction sets a library uses (an emulated CPU class).
ISA_LIMIT_ENV = ("ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "MKL_CBWR",
                 "ONEDNN_MAX_CPU_ISA", "NPY_DISABLE_CPU_FEATURES", "OPENBLAS_CORETYPE")


def _cpuinfo(field: str) -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith(field):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_class(with_torch: bool | None = None) -> dict[str, str]:
    """What decides whether two CPU computations can agree bit for bit, as strings.

    ``torch_capability`` (``torch.backends.cpu.get_cpu_capability()``: which vectorised ATen
    kernels run), ``numpy_simd`` (numpy's enabled dispatch targets), ``cpu_vendor`` (MKL
    dispatches by it), ``machine``, the ``torch`` and ``numpy`` builds, ``isa_limits`` (the
    variables of :data:`ISA_LIMIT_ENV` that are set) and, recorded but not part of the class,
    ``cpu_model``. ``with_torch`` (default: whether torch is already imported) avoids importing
    torch for a numpy-only computation (``torch_capability`` is then ``"torch not used"``).
    """
    import numpy as np

    try:
        from numpy._core._multiarray_umath import (  # type: ignore[attr-defined]
            __cpu_dispatch__,
            __cpu_features__,
        )
        simd = " ".join(t for t in __cpu_dispatch__ if __cpu_features__.get(t)) or "baseline"
    except ImportError:  # another numpy layout
        simd = "unknown"
    if with_torch is None:
        with_torch = "torch" in sys.modules
    capability, torch_version = "torch not used", "not used"
    if with_torch:
        import torch

        capability = str(torch.backends.cpu.get_cpu_capability())
        torch_version = str(torch.__version__)
    limits = " ".join(f"{k}={os.environ[k]}" for k in ISA_LIMIT_ENV if os.environ.get(k))
    return {
        "torch_capability": capability,
        "numpy_simd": simd,
        "cpu_vendor": _cpuinfo("vendor_id"),
        "machine": platform.machine(),
        "torch": torch_version,
        "numpy": str(np.__version__),
        "isa_limits": limits or "none",
        "cpu_model": _cpuinfo("model name"),
    }


def cpu_class_key(info: dict[str, str] | None = None) -> str:
    """The CPU class as one string (every entry of :func:`cpu_class` but the model): two CPU
    runs of the same code and inputs are claimed bitwise equal only when their keys are."""
    info = cpu_class() if info is None else info
    return " | ".join(f"{k}={info.get(k, '?')}" for k in (
        "machine", "cpu_vendor", "torch_capability", "numpy_simd", "torch", "numpy",
        "isa_limits"))


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
    cpu_class: dict[str, str] | None = None
    """:func:`cpu_class` of the process that computed it (``None``: recorded before 2026-11-26)."""
    migrated: dict[str, Any] | None = None
    """Set when an old record's fingerprint was carried over to the current scheme without
    recomputing (:func:`migrate_record`): from what, how, when."""
    revalidated: dict[str, Any] | None = None
    """Set when the unit was recomputed by newer code and agreed with the stored arrays within
    the stated tolerance (:mod:`genbounds.results.revalidate`): by which code, when, how close."""
    stretches: list[dict[str, Any]] | None = None
    """A unit computed in several runs (a time budget stopped it, a later run resumed its
    checkpoint): one entry per run, in order (:func:`stretch_record`); :attr:`wall_time_s` is
    then their sum. ``None``: computed in one run."""
    probe: dict[str, Any] | None = None
    """The outputs of its study's probe under the code that computed it
    (:mod:`genbounds.experiments.probe`): what a later edit of that code must reproduce for the
    unit to be carried over to the edited code without recomputing. ``None``: not recorded."""
    estimate: dict[str, Any] | None = None
    """What the time estimate said before the unit ran (:func:`recorded_estimate`):
    ``{"seconds": s, "device": where it was estimated}``, so that measured / estimated can be
    read off every unit. ``None``: not recorded (no estimate, or stored before 2026-11-29)."""

    @classmethod
    def now(cls, *, device: str, wall_time_s: float,
            code_modules: Sequence[str] | None = None) -> Provenance:
        """Provenance of a result computed just now by the running code."""
        modules = normalize_code_modules(code_modules)
        check_source_unchanged(modules)
        commit, dirty = _commit_now()
        if os.environ.get(GIT_COMMIT_ENV):  # checked here as the command line checks it
            if len(commit) != 40 or not set(commit) <= set("0123456789abcdef"):
                raise ValueError(f"{GIT_COMMIT_ENV} must be a full commit id (40 hexadecimal "
                                 f"digits, lower case), got {commit!r}")
            if os.environ.get(GIT_DIRTY_ENV, "0") not in ("0", "1"):
                raise ValueError(f"{GIT_DIRTY_ENV} must be 0 or 1, got "
                                 f"{os.environ[GIT_DIRTY_ENV]!r}")
            if (_git("rev-parse", "--git-dir") is not None
                    and _git("cat-file", "-e", f"{commit}^{{commit}}") is None):
                import warnings

                warnings.warn(f"{GIT_COMMIT_ENV}={commit} is not a commit of the repository "
                              f"at {PACKAGE_DIR} (recorded as given)", UserWarning, stacklevel=2)
        earlier = _EARLIER_STRETCHES.get()
        stretches = None
        if earlier:
            stretches = [*earlier, stretch_record(wall_time_s=wall_time_s, device=device,
                                                  reached="done")]
            wall_time_s = sum(float(s["wall_time_s"]) for s in stretches)
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
            cpu_class=cpu_class(),
            stretches=stretches,
            probe=_PROBE.get(),
            estimate=_ESTIMATE.get(),
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
        extra: dict[str, Any] = {}
        for name in ("cpu_class", "migrated", "revalidated", "probe", "estimate"):
            value = record.get(name)
            if value is not None and not isinstance(value, dict):
                raise ValueError(f"provenance field {name} must be an object, got {value!r}")
            extra[name] = value
        stretches = record.get("stretches")
        if stretches is not None:
            extra["stretches"] = [dict(s) for s in _checked_stretches(stretches, "stretches")]
        if extra["cpu_class"] is not None and not all(
                isinstance(v, str) for v in extra["cpu_class"].values()):
            raise ValueError("provenance field cpu_class must map names to strings")
        return cls(
            **{k: record[k] for k in required},
            code_modules=None if modules is None else tuple(str(m) for m in modules),
            **extra,
        )

    def is_same_code(self) -> bool:
        """Whether the code this result's fingerprint covers is unchanged in the running code."""
        return same_code(self.code_fingerprint, self.code_modules, self.code_modules)


def _commit_now() -> tuple[str, bool]:
    """``(commit, dirty)`` of the running code (:data:`GIT_COMMIT_ENV` when it is set)."""
    given = os.environ.get(GIT_COMMIT_ENV)
    if given:  # a copy of the tree whose own .git (if any) cannot be trusted
        return given, os.environ.get(GIT_DIRTY_ENV, "0") == "1"
    return (_git("rev-parse", "HEAD") or "unknown",
            bool(_git("status", "--porcelain", "--untracked-files=no")))


# ------------------------------------------------------------------ units in several runs
_STRETCH_FIELDS = ("wall_time_s", "device", "ended_utc", "git_commit", "reached")
_EARLIER_STRETCHES: ContextVar[tuple[dict[str, Any], ...]] = ContextVar(
    "genbounds_earlier_stretches", default=())


def stretch_record(*, wall_time_s: float, device: str, reached: str) -> dict[str, Any]:
    """One run of a unit computed in several: its wall time, device, end (UTC), the commit that
    ran it and how far it got (``"epoch 75200 of 200000"``, ``"done"``)."""
    commit, dirty = _commit_now()
    record = {"wall_time_s": float(wall_time_s), "device": device,
              "ended_utc": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
              "git_commit": commit + ("+dirty" if dirty else ""), "reached": reached}
    return dict(_checked_stretches([record], "stretch")[0])


def _checked_stretches(stretches: Any, name: str) -> list[Mapping[str, Any]]:
    if not isinstance(stretches, list | tuple) or not stretches:
        raise ValueError(f"{name} must be a non-empty list of runs, got {stretches!r}")
    for i, s in enumerate(stretches):
        if not isinstance(s, Mapping) or any(k not in s for k in _STRETCH_FIELDS):
            raise ValueError(f"{name}[{i}] must hold {', '.join(_STRETCH_FIELDS)}, got {s!r}")
        wall = s["wall_time_s"]
        if isinstance(wall, bool) or not isinstance(wall, int | float) or not (
                0 <= wall < float("inf")):
            raise ValueError(f"{name}[{i}].wall_time_s must be a finite number >= 0, "
                             f"got {wall!r}")
        for key in ("device", "ended_utc", "git_commit", "reached"):
            if not isinstance(s[key], str) or not s[key]:
                raise ValueError(f"{name}[{i}].{key} must be a non-empty string, "
                                 f"got {s[key]!r}")
    return list(stretches)


_PROBE: ContextVar[dict[str, Any] | None] = ContextVar("genbounds_probe", default=None)


@contextmanager
def recorded_probe(probe: Mapping[str, Any] | None) -> Iterator[None]:
    """Within this block, a result stored by :meth:`Provenance.now` records ``probe`` (the
    outputs of its study's probe under the running code; ``None``: nothing recorded)."""
    if probe is not None and not (isinstance(probe, Mapping) and "values" in probe):
        raise ValueError(f"probe must be a probe record with 'values', got {probe!r}")
    token = _PROBE.set(None if probe is None else dict(probe))
    try:
        yield
    finally:
        _PROBE.reset(token)


_ESTIMATE: ContextVar[dict[str, Any] | None] = ContextVar("genbounds_estimate", default=None)


@contextmanager
def recorded_estimate(seconds: float | None, device: str) -> Iterator[None]:
    """Within this block, a result stored by :meth:`Provenance.now` records that its time was
    estimated at ``seconds`` on ``device`` (``None``: nothing recorded)."""
    token = _ESTIMATE.set(None if seconds is None else {
        "seconds": check_positive(seconds, "seconds"), "device": str(device)})
    try:
        yield
    finally:
        _ESTIMATE.reset(token)


@contextmanager
def earlier_stretches(stretches: Sequence[Mapping[str, Any]]) -> Iterator[None]:
    """Within this block, a result stored by :meth:`Provenance.now` is the last run of a unit
    whose earlier runs were ``stretches`` (:func:`stretch_record` entries, from the unit's
    progress file): its provenance lists every run and its wall time is their sum. An empty
    sequence changes nothing."""
    checked = tuple(dict(s) for s in _checked_stretches(list(stretches), "stretches")
                    ) if stretches else ()
    token = _EARLIER_STRETCHES.set(checked)
    try:
        yield
    finally:
        _EARLIER_STRETCHES.reset(token)


# ------------------------------------------------------------------ fingerprints at a commit
def _git_prefix() -> str | None:
    """The package directory's path inside its git work tree (``src/genbounds/``)."""
    return _git("rev-parse", "--show-prefix")


def _show(commit: str, path: str) -> bytes | None:
    try:
        out = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=PACKAGE_DIR,
                             capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def _files_at(commit: str, modules: Sequence[str] | None, prefix: str) -> list[str] | None:
    """The files (relative to the package) ``modules`` named at ``commit``, sorted as
    :func:`module_files` sorts paths; ``None`` if a module did not exist there."""
    listing = _git("ls-tree", "-r", "--full-tree", "--name-only", commit, "--", prefix)
    if listing is None:
        return None
    present = {line[len(prefix):] for line in listing.splitlines() if line.endswith(".py")}
    if modules is None:
        chosen = set(present)
    else:
        chosen = set()
        for module in modules:
            rel = "/".join(module.split(".")[1:])
            if f"{rel}/__init__.py" in present or (not rel and "__init__.py" in present):
                under = f"{rel}/" if rel else ""
                chosen.update(f for f in present if f.startswith(under))
            elif f"{rel}.py" in present:
                chosen.add(f"{rel}.py")
            else:
                return None
    return sorted(chosen, key=lambda f: tuple(f.split("/")))


def code_fingerprint_at(commit: str, modules: Sequence[str] | None, *,
                        legacy: bool = False, style: str | None = None,
                        scheme: str = AST_SCHEME) -> str | None:
    """The fingerprint ``modules`` had at ``commit`` (read with ``git show``): the current
    scheme over the files ``modules`` name *now*; with ``legacy`` the old byte scheme over the
    files they named *then*; with ``style`` (:data:`DUMP_STYLES`) the syntax-tree ``scheme``
    written as that Python's ``ast.dump`` wrote it, over the files named *then*. ``None`` when
    git cannot say (no repository, unknown commit, a file missing at that commit)."""
    prefix = _git_prefix()
    if prefix is None or _git("cat-file", "-e", f"{commit}^{{commit}}") is None:
        return None
    if legacy or style is not None:
        rels = _files_at(commit, modules, prefix)
    else:
        rels = [p.relative_to(PACKAGE_DIR).as_posix() for p in module_files(modules)]
    if rels is None:
        return None
    sources = []
    for rel in rels:
        source = _show(commit, prefix + rel)
        if source is None:
            return None
        sources.append((rel, source))
    if style is not None:
        return _ast_digest(sources, scheme, style)
    if not legacy:
        return _ast_digest(sources)
    digest = hashlib.sha256()
    for rel, source in sources:
        digest.update(rel.encode())
        digest.update(b"\0")
        digest.update(source)
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def _differing_files(commit: str, modules: Sequence[str]) -> list[str]:
    prefix = _git_prefix() or ""
    out = []
    for path in module_files(modules):
        rel = path.relative_to(PACKAGE_DIR).as_posix()
        then = _show(commit, prefix + rel)
        if then is None or normalized_source(then, rel) != normalized_source(
                path.read_bytes(), rel):
            out.append(rel)
    return out


def migrate_record(record: dict[str, Any], modules: Sequence[str]
                   ) -> tuple[dict[str, Any] | None, str]:
    """Carry a record fingerprinted in an older way over to the current one, honestly.

    Two older ways are carried over: the byte fingerprints of records stored before
    2026-11-26, and syntax-tree fingerprints computed under a Python whose ``ast.dump`` writes
    the tree differently from the canonical form (:data:`DUMP_STYLES`; records computed under
    Python 3.12 or 3.13 before the canonical form existed).

    ``record`` is a stored provenance record, ``modules`` the files its experiment declares
    now. Returns ``(new provenance record, why)``, or ``(None, why not)`` when the record must
    stay as it is. The steps: (1) the record's commit must exist, and its old fingerprint,
    recomputed from that commit's files in the old way, must equal the recorded one (so the
    commit names the code that ran, at least over the files the old fingerprint covered); (2)
    the current scheme over the declared files must give the same fingerprint at that commit
    as now; (3) when the run's tree was dirty and a file declared now was not covered by the
    old fingerprint, git cannot say what that file held during the run: it must be the same
    (current scheme) in the first commit after the run as in the commit before it, or the
    record stays stale (the record then names both commits: an inference, not a proof: an
    edit undone before the next commit would escape it). Then the record is current under the
    new scheme: its fingerprint and modules are replaced, and ``migrated`` says from what, how
    and when. Nothing is recomputed.
    """
    p = Provenance.from_record(record)
    wanted = normalize_code_modules(modules, "modules")
    assert wanted is not None
    commit = p.git_commit
    scheme = p.code_fingerprint.partition(":")[0]
    if scheme in _AST_SCHEMES:
        if same_code(p.code_fingerprint, p.code_modules, wanted):
            return None, "current already"
        style = dump_style_of(p.python)
        if style == "canonical":
            return None, "fingerprinted over syntax trees in the canonical form: the code changed"
        then_old = code_fingerprint_at(commit, p.code_modules, style=style, scheme=scheme)
        how = (f"fingerprint recorded under Python {p.python}, whose ast.dump writes trees in "
               f"its own form; recomputed in that form at commit {commit[:10]} it equals the "
               "recorded one")
    else:
        then_old = code_fingerprint_at(commit, p.code_modules, legacy=True)
        how = f"old fingerprint recomputed at commit {commit[:10]} equals the recorded one"
    if then_old is None:
        return None, f"commit {commit[:10]} or a file it covered is not in this repository"
    if then_old != p.code_fingerprint:
        return None, (f"the recorded fingerprint {p.code_fingerprint} is not that of commit "
                      f"{commit[:10]} ({then_old}): the code that ran is not known")
    then_new = code_fingerprint_at(commit, wanted)
    now = code_fingerprint(wanted)
    if then_new != now:
        changed = _differing_files(commit, wanted)
        return None, (f"code it runs changed since commit {commit[:10]}: "
                      f"{', '.join(changed) or 'a declared file'}")
    uncovered = sorted(f.relative_to(PACKAGE_DIR).as_posix() for f in
                       set(module_files(wanted)) - set(module_files(p.code_modules)))
    bracket = None
    if p.git_dirty and uncovered:
        # what ran in a dirty tree is known for the files the old fingerprint covered (checked
        # above); for the others, the commits just before and just after the run must agree
        after = _git("rev-list", "--first-parent", "--reverse", f"--after={p.created_utc}",
                     "HEAD")
        after = after.split()[0] if after else None
        if after is None or code_fingerprint_at(after, wanted) != now:
            return None, ("the run's tree was dirty, and the files declared now that the old "
                          f"fingerprint did not cover ({', '.join(uncovered)}) are not the same "
                          "in the commits before and after the run")
        bracket = [commit, after]
    new = dict(record)
    new.update(
        code_fingerprint=now,
        code_modules=list(wanted),
        migrated={
            "from_fingerprint": p.code_fingerprint,
            "from_code_modules": None if p.code_modules is None else list(p.code_modules),
            "method": (f"{how}; the normalised syntax trees of the declared files at that "
                       f"commit equal those now ({now})"),
            "uncovered_before": uncovered,
            "dirty_tree_bracketed_by": bracket,
            "migrated_utc": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "migrated_at_commit": _git("rev-parse", "HEAD") or "unknown",
        },
    )
    return new, "current under the new scheme (migrated)"
