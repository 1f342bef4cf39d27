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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from genbounds.results import ResultStore, StoredResult, run_sweep
from genbounds.scale import SCALES, get_scale

__all__ = [
    "Estimate",
    "Experiment",
    "concatenate",
    "get_experiment",
    "load_or_run",
    "register_experiment",
    "registered_experiments",
    "reproduce",
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
