"""The experiment interface: every study of the book as one registered :class:`Experiment`.

An experiment is a function of a frozen configuration dataclass with two presets, ``quick``
(CPU, minutes; the CI default) and ``paper`` (the paper's own protocol; GPU recommended). Its
work is split into **units** (each a frozen config of its own, e.g. one sequence length of a
sweep): the results store (:mod:`genbounds.results`) keeps one stored result per unit, so a sweep
resumes at the first missing unit after an interruption, several workers can fill the same
store, and a notebook reads exactly what the command line computed.

A chapter registers its study at import time of its module in :mod:`genbounds.experiments`::

    register_experiment(Experiment(
        name="sparse_majority", chapter="notebooks/02_trauger_tewari.md",
        description="...", config=lambda scale: ..., units=sweep_configs, run_unit=run,
        code=("genbounds.data", "genbounds.models", "genbounds.train", __name__)))

and ``python -m genbounds experiments`` lists it, ``python -m genbounds reproduce --only NAME
--scale paper`` fills the store, and the notebook calls :func:`load_or_run`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from genbounds.results import ResultStore, StaleResultWarning, StoredResult, run_sweep
from genbounds.scale import SCALES, get_scale

__all__ = [
    "Estimate",
    "Experiment",
    "concatenate",
    "StoredUnits",
    "get_experiment",
    "load_or_run",
    "load_stored",
    "register_experiment",
    "registered_experiments",
    "reproduce",
    "stored_units",
]


@dataclass(frozen=True)
class Estimate:
    """A rough cost of one experiment at one scale, printed before it starts.

    Attributes
    ----------
    seconds:
        Expected wall time on the machine described by ``device`` (a measured rate times the
        work, or an extrapolation; ``note`` says which).
    peak_bytes:
        Expected peak memory of one unit (host RAM on CPU, device memory on GPU).
    device:
        Where the estimate applies (``"2-core CPU"``, ``"one H100"``...).
    note:
        How the numbers were obtained.
    """

    seconds: float
    peak_bytes: float
    device: str
    note: str = ""

    def describe(self) -> str:
        mins = self.seconds / 60.0
        return (f"~{mins:.1f} min, peak ~{self.peak_bytes / 2**30:.2f} GiB on {self.device}"
                + (f" ({self.note})" if self.note else ""))


@dataclass(frozen=True)
class Experiment:
    """One study of the book, as the command line and the notebooks see it.

    Attributes
    ----------
    name:
        Short identifier (``python -m genbounds reproduce --only NAME``).
    chapter:
        The notebook that shows its results.
    description:
        One line.
    config:
        ``scale -> config`` for ``"quick"`` and ``"paper"``.
    units:
        ``config -> [unit config, ...]``: the resumable pieces, each a frozen dataclass the store
        can hash; running them one by one gives exactly the results of the whole config.
    run_unit:
        ``(unit config, progress) -> {name: array}``: computes one unit (every array has the
        unit's runs along its first axis, so units concatenate).
    code:
        The modules whose source the results depend on (the store's code fingerprint covers
        only these, so an edit elsewhere does not invalidate stored paper-scale results).
    estimate:
        Optional ``config -> Estimate`` printed before a run starts.
    """

    name: str
    chapter: str
    description: str
    config: Callable[[str], Any]
    units: Callable[[Any], Sequence[Any]]
    run_unit: Callable[[Any, bool], Mapping[str, Any]]
    code: tuple[str, ...]
    estimate: Callable[[Any], Estimate] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"name must be an identifier, got {self.name!r}")
        if not self.code:
            raise ValueError("code must name at least one module")


_EXPERIMENTS: dict[str, Experiment] = {}


def register_experiment(exp: Experiment) -> Experiment:
    """Add ``exp`` to the registry (its name must be new); returns it."""
    if not isinstance(exp, Experiment):
        raise ValueError(f"exp must be an Experiment, got {type(exp).__name__}")
    if exp.name in _EXPERIMENTS and _EXPERIMENTS[exp.name] is not exp:
        raise ValueError(f"an experiment named {exp.name!r} is already registered")
    _EXPERIMENTS[exp.name] = exp
    return exp


def registered_experiments() -> list[Experiment]:
    """Every registered experiment, in registration order."""
    import genbounds.experiments  # noqa: F401  (importing the package registers every study)

    return list(_EXPERIMENTS.values())


def get_experiment(name: str) -> Experiment:
    """The experiment called ``name`` (``ValueError`` listing the registered names)."""
    import genbounds.experiments  # noqa: F401

    if name not in _EXPERIMENTS:
        raise ValueError(f"no experiment {name!r}; registered: {sorted(_EXPERIMENTS)}")
    return _EXPERIMENTS[name]


def _config(exp: Experiment, scale: str | None, config: Any) -> Any:
    if config is not None:
        return config
    scale = get_scale() if scale is None else scale
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    return exp.config(scale)


def reproduce(
    exp: Experiment | str,
    scale: str | None = None,
    *,
    config: Any = None,
    store: ResultStore | None = None,
    progress: bool = False,
    on_code_change: str = "recompute",
    recompute_damaged: bool = False,
) -> list[StoredResult]:
    """Compute (or load) every unit of ``exp`` at ``scale`` through the results store.

    Units already stored by the same code are loaded; missing ones are computed and stored as
    soon as each finishes (:func:`genbounds.results.run_sweep`: several workers on one store
    split the units between them). ``config`` overrides the preset (a notebook's reduced sweep).
    """
    e = get_experiment(exp) if isinstance(exp, str) else exp
    cfg = _config(e, scale, config)
    units = list(e.units(cfg))
    if not units:
        raise ValueError(f"experiment {e.name!r} produced no units for {cfg!r}")
    if store is None:
        store = ResultStore(namespace=scale or get_scale())
    device = getattr(units[0], "device", "auto")
    return run_sweep(
        store, units, lambda u: e.run_unit(u, progress), device=device,
        on_code_change=on_code_change,  # type: ignore[arg-type]
        progress=progress and len(units) > 1, code_modules=e.code,
        recompute_damaged=recompute_damaged,
    )


def concatenate(parts: Sequence[StoredResult]) -> dict[str, np.ndarray]:
    """The units' arrays joined along their first axis (the runs), in unit order."""
    if not parts:
        raise ValueError("parts must not be empty")
    keys = list(parts[0].arrays)
    for p in parts[1:]:
        if list(p.arrays) != keys:
            raise ValueError("stored units hold different arrays; recompute them with the "
                             "same code (python -m genbounds reproduce)")
    return {k: np.concatenate([np.atleast_1d(p.arrays[k]) for p in parts]) for k in keys}


def load_or_run(
    exp: Experiment | str,
    scale: str | None = None,
    *,
    config: Any = None,
    store: ResultStore | None = None,
    progress: bool = False,
) -> tuple[dict[str, np.ndarray], list[StoredResult]]:
    """What a notebook calls: the experiment's arrays and the stored parts (their provenance).

    Stored units made by other code are recomputed (never shown silently).
    """
    parts = reproduce(exp, scale, config=config, store=store, progress=progress,
                      on_code_change="recompute")
    return concatenate(parts), parts


@dataclass(frozen=True)
class StoredUnits:
    """What the store holds of one experiment at one scale (read only, nothing computed).

    Attributes
    ----------
    experiment, scale:
        Which experiment and preset.
    units:
        Every unit config of the preset, in order.
    results:
        For each unit, its :class:`~genbounds.results.StoredResult` or ``None`` when it is not
        stored. Each result carries its provenance (``device``, ``created_utc``,
        ``wall_time_s``, ``provenance.git_commit``, ``provenance.package_version``) and
        ``stale``: True when the code it depends on changed since it was computed.
    checkpoints:
        For each unit, its checkpoint file when a run stopped by a time budget left one (the
        unit is *in progress*), else ``None``.
    """

    experiment: str
    scale: str
    units: tuple[Any, ...]
    results: tuple[StoredResult | None, ...]
    checkpoints: tuple[Path | None, ...]

    @property
    def present(self) -> list[StoredResult]:
        """The stored results, in unit order."""
        return [r for r in self.results if r is not None]

    @property
    def missing(self) -> list[Any]:
        """The unit configs without a stored result (in progress ones included)."""
        return [u for u, r in zip(self.units, self.results, strict=True) if r is None]

    @property
    def in_progress(self) -> list[Any]:
        """The unit configs without a result but with a checkpoint of an interrupted run."""
        return [u for u, r, c in zip(self.units, self.results, self.checkpoints, strict=True)
                if r is None and c is not None]

    @property
    def complete(self) -> bool:
        """Whether every unit is stored."""
        return all(r is not None for r in self.results)

    @property
    def stale(self) -> bool:
        """Whether any stored unit was computed by code that has changed since."""
        return any(r.stale for r in self.present)

    def arrays(self) -> dict[str, np.ndarray]:
        """The stored units' arrays concatenated (only the present ones; ``ValueError`` if none)."""
        if not self.present:
            raise ValueError(f"no unit of {self.experiment!r} is stored at scale {self.scale}")
        return concatenate(self.present)


def _scale_of(scale: Any) -> str:
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    return str(scale)


def stored_units(
    exp: Experiment | str,
    scale: str = "paper",
    *,
    config: Any = None,
    store: ResultStore | None = None,
    warn: bool = True,
) -> StoredUnits:
    """Every unit of ``exp`` at ``scale`` that the store holds, and the ones it lacks.

    Never computes and never writes. A stored unit made by code that changed since is returned
    with ``stale=True`` (and a :class:`~genbounds.results.StaleResultWarning` unless
    ``warn=False``); a damaged one raises :class:`~genbounds.results.DamagedResultError`.
    ``config`` overrides the preset; ``store`` defaults to the book's store, namespace ``scale``.
    """
    e = get_experiment(exp) if isinstance(exp, str) else exp
    scale = _scale_of(scale)
    cfg = _config(e, scale, config)
    units = tuple(e.units(cfg))
    if store is None:
        store = ResultStore(namespace=scale)
    with warnings.catch_warnings():
        if not warn:
            warnings.simplefilter("ignore", StaleResultWarning)
        results = tuple(store.load(u, on_code_change="warn", code_modules=e.code)
                        for u in units)
    checkpoints = tuple(store.unit(u).checkpoint if store.unit(u).checkpoint.is_file()
                        else None for u in units)
    return StoredUnits(e.name, scale, units, results, checkpoints)


def load_stored(
    exp: Experiment | str,
    scale: str = "paper",
    *,
    config: Any = None,
    store: ResultStore | None = None,
    warn: bool = True,
) -> tuple[dict[str, np.ndarray], list[StoredResult]] | None:
    """The stored result of ``exp`` at ``scale`` if every unit is stored, else ``None``.

    Read only: never computes (for a chapter that shows paper-scale results beside its quick
    ones). Returns ``(arrays, parts)`` like :func:`load_or_run`, the parts carrying provenance
    (``device``, ``created_utc``, ``wall_time_s``, ``stale``); ``None`` when any unit is
    missing (use :func:`stored_units` for the partial set).
    """
    found = stored_units(exp, scale, config=config, store=store, warn=warn)
    if not found.complete:
        return None
    return concatenate(found.present), found.present
