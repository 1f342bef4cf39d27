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

import math
import os
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from genbounds.results import ResultStore, StaleResultWarning, StoredResult
from genbounds.scale import SCALES, get_scale

__all__ = [
    "DECLARED_FOR",
    "Estimate",
    "Experiment",
    "SweepReport",
    "Unfinished",
    "UnitSeconds",
    "concatenate",
    "StoredUnits",
    "get_experiment",
    "load_or_run",
    "load_stored",
    "register_experiment",
    "registered_experiments",
    "read_progress",
    "reproduce",
    "stored_units",
    "sweep",
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
    nonfinite:
        Names (or :mod:`fnmatch` patterns) of the arrays a unit may return with NaN or inf
        (histories padded after early stopping...); the store refuses NaN/inf elsewhere and
        records the declaration (:attr:`StoredResult.nonfinite
        <genbounds.results.StoredResult.nonfinite>`).
    text:
        Names (or patterns) of the arrays that may hold strings.
    resumable:
        True when ``run_unit`` honours :mod:`genbounds.train.checkpoint` (loads the current
        checkpoint, saves it, raises ``BudgetExhausted`` at the deadline). A time budget then
        starts a unit even when it cannot finish in the time left; a unit that is not
        resumable is started only when its estimate fits.
    committed_checkpoints:
        True when the paper-scale checkpoints of this (resumable) experiment are small enough
        to commit: they then live in ``<root>/paper/_checkpoints/<ConfigClass>/`` (the store's
        :data:`~genbounds.results.files.COMMITTED_CHECKPOINT_DIR`, kept in git) instead of
        the ignored ``<root>/.checkpoints/``, so that a fresh clone resumes them.
    """

    name: str
    chapter: str
    description: str
    config: Callable[[str], Any]
    units: Callable[[Any], Sequence[Any]]
    run_unit: Callable[[Any, bool], Mapping[str, Any]]
    code: tuple[str, ...]
    estimate: Callable[[Any], Estimate] | None = None
    nonfinite: tuple[str, ...] = ()
    text: tuple[str, ...] = ()
    resumable: bool = False
    committed_checkpoints: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"name must be an identifier, got {self.name!r}")
        if not self.code:
            raise ValueError("code must name at least one module")
        for name in ("nonfinite", "text"):
            value = getattr(self, name)
            if not isinstance(value, tuple) or not all(isinstance(v, str) and v for v in value):
                raise ValueError(f"{name} must be a tuple of array names, got {value!r}")
        if not isinstance(self.resumable, bool):
            raise ValueError(f"resumable must be a bool, got {self.resumable!r}")

    def declared(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``(nonfinite, text)``: the arrays this experiment declares may hold NaN/inf or text
        (its own declaration, else the transitional one in :data:`DECLARED_FOR`)."""
        if self.nonfinite or self.text:
            return self.nonfinite, self.text
        return DECLARED_FOR.get(self.name, ((), ()))


#: Declarations for the studies registered before :attr:`Experiment.nonfinite` and
#: :attr:`Experiment.text` existed, as found in their code (issue #17): the certificates'
#: ``paper_risk.*`` is NaN where a paper's bound does not apply. An
#: experiment's own declaration replaces its entry here.
DECLARED_FOR: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "certificates": (("paper_risk.*",), ()),
}


_EXPERIMENTS: dict[str, Experiment] = {}


def presets(config_class: Any) -> Callable[[str], Any]:
    """``scale -> config_class.paper()`` at paper scale, else ``config_class.quick()``: the
    :attr:`Experiment.config` of a study whose configuration class has both presets."""
    return lambda scale: config_class.paper() if scale == "paper" else config_class.quick()


def register_experiment(exp: Experiment) -> Experiment:
    """Add ``exp`` to the registry (its name must be new); returns it."""
    from genbounds.bounds.registry import add_new

    return add_new(_EXPERIMENTS, getattr(exp, "name", ""), exp, Experiment,
                   "exp must be an Experiment", "an experiment named")


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


@dataclass
class SweepReport:
    """What a (possibly time-limited) run of an experiment's units did.

    ``results`` holds each unit's stored result (``None`` for a unit not done);
    ``in_progress`` lists ``(unit, epoch, total, checkpoint)`` for the units a time budget
    stopped (this run's first, then older checkpoints); ``stopped`` says why the run stopped
    early, if it did.
    """

    experiment: str
    scale: str
    units: list[Any]
    results: list[StoredResult | None]
    in_progress: list[tuple[Any, int | None, int | None, Path]] = field(default_factory=list)
    stopped: str | None = None
    #: ``(unit, why)`` for each unit a time budget did not let start (not resumable, and its
    #: estimate beyond the time left); the sweep went on to the units after it.
    not_started: list[tuple[Any, str]] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return all(r is not None for r in self.results)

    @property
    def done(self) -> list[StoredResult]:
        return [r for r in self.results if r is not None]

    @property
    def left(self) -> list[Any]:
        """Units neither done nor in progress."""
        busy = [p[0] for p in self.in_progress]
        return [u for u, r in zip(self.units, self.results, strict=True)
                if r is None and not any(u is b for b in busy)]

    def describe(self) -> str:
        """Done / in progress (with its epoch) / left, in one paragraph."""
        n = len(self.units)
        computed = sum(r.fresh for r in self.done)
        text = (f"[{self.experiment}] scale={self.scale}: {len(self.done)} of {n} units done "
                f"({computed} computed now, {len(self.done) - computed} loaded)")
        for unit, epoch, total, path in self.in_progress:
            of = f" of {total}" if total is not None else ""
            at = f"epoch {epoch}{of}" if epoch is not None else "epoch unknown"
            text += f"; in progress: unit {_unit_label(unit)} ({at}), checkpoint {path}"
        if self.left:
            text += f"; left: {len(self.left)} unit(s)"
        if self.stopped:
            text += f"; stopped: {self.stopped}"
        return text


def _unit_label(unit: Any) -> str:
    """A short name of a unit config: its non-default fields, else its repr."""
    import dataclasses

    if dataclasses.is_dataclass(unit) and not isinstance(unit, type):
        parts = []
        for f in dataclasses.fields(unit):
            value = getattr(unit, f.name)
            default = f.default if f.default is not dataclasses.MISSING else None
            scalar = isinstance(value, int | float | str | bool) or (
                isinstance(value, tuple) and len(value) <= 4
                and all(isinstance(v, int | float | str | bool) for v in value))
            if value != default and scalar:
                parts.append(f"{f.name}={value}")
        return f"{type(unit).__name__}({', '.join(parts[:4])})"
    return repr(unit)[:60]


class Unfinished(RuntimeError):  # noqa: N818 (a normal end of a budgeted run)
    """:func:`reproduce` stopped before every unit was done (a time budget); ``report`` says
    what is done, in progress and left."""

    def __init__(self, report: SweepReport) -> None:
        self.report = report
        super().__init__(report.describe())


def _default_policy(scale: str) -> str:
    """Paper results are kept and warned about when the code changed; quick ones recomputed."""
    return "warn" if scale == "paper" else "recompute"


def reproduce(exp: Experiment | str, scale: str | None = None, **options: Any
              ) -> list[StoredResult]:
    """Compute (or load) every unit of ``exp`` at ``scale`` through the results store.

    ``options`` are :func:`sweep`'s keyword arguments (``config``, ``store``, ``progress``,
    ``on_code_change``, ``recompute_damaged``, ``recompute``, ``deadline``, ``match``,
    ``unit_seconds``).

    Units already stored are loaded; missing ones are computed and stored as soon as each
    finishes (several workers on one store split the units between them). ``config``
    overrides the preset (a notebook's reduced sweep).

    A unit stored by code that changed since is recomputed at quick scale and **kept, with a
    StaleResultWarning, at paper scale** (``on_code_change`` overrides: ``"recompute"``,
    ``"warn"``, ``"error"``); ``recompute=True`` recomputes every unit. A paper-scale result
    recomputed over is moved to ``<root>/_replaced/`` first, never overwritten.

    ``deadline`` (a :func:`time.monotonic` instant) is the time budget: see :func:`sweep`;
    :class:`Unfinished` is raised when it stops the run before every unit is done.
    """
    report = sweep(exp, scale, **options)
    if not report.complete:
        raise Unfinished(report)
    return report.done


#: ``(experiment name, config, store) -> seconds of each unit`` (or None): a per-unit time
#: estimator the caller hands to :func:`sweep`, e.g. :func:`genbounds.estimates.unit_seconds`
#: (the command line does). The registry never imports the estimator: the estimator reads the
#: registry, not the other way round.
UnitSeconds = Callable[[str, Any, ResultStore], Sequence[float] | None]


def _unit_seconds(e: Experiment, cfg: Any, units: Sequence[Any], store: ResultStore,
                  estimator: UnitSeconds | None) -> list[float | None]:
    """Estimated seconds of each of ``units`` (``None`` where nothing estimates it).

    ``units`` may be a selection (``--match``) of the study's units; every estimate is made
    for all of them (``e.units(cfg)``) and read off for the ones selected: ``estimator``'s when
    given (calibrated on the units ``store`` holds, for
    :func:`genbounds.estimates.unit_seconds`), else the experiment's own estimate spread
    evenly over all its units (never over the selection alone: a study's whole estimate on
    one selected unit would refuse to start it)."""
    try:
        every = list(e.units(cfg))
        at = [every.index(u) for u in units]
        if estimator is not None:
            per_unit = estimator(e.name, cfg, store)
            if per_unit is not None and len(per_unit) == len(every):
                return [float(per_unit[i]) for i in at]
        est = e.estimate(cfg) if e.estimate is not None else None
    except Exception:  # an estimate must never stop a run  # noqa: BLE001
        return [None] * len(units)
    if est is None:
        return [None] * len(units)
    return [est.seconds / len(every)] * len(units)


class _Bar:
    """A progress bar over units whose postfix is the estimated time left."""

    def __init__(self, enabled: bool, total: int, seconds: list[float | None]) -> None:
        self.seconds = seconds
        self.bar: Any = None
        if enabled:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc="units", unit="unit")

    def step(self, done: Sequence[bool], label: str) -> None:
        if self.bar is None:
            return
        left = [s for s, d in zip(self.seconds, done, strict=True) if not d]
        known = [s for s in left if s is not None]
        eta = f"~{sum(known) / 60:.1f} min left" if known else "no estimate"
        self.bar.n = sum(done)
        self.bar.set_postfix_str(f"{label}; {eta}"[:70], refresh=False)
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def select_units(units: Sequence[Any], match: Mapping[str, str]) -> list[Any]:
    """The units whose fields match every ``field: value`` of ``match`` (compared as text:
    ``str(getattr(unit, field)) == value``). ValueError naming ``match`` for a field no unit has
    or when no unit matches; the values seen are listed."""
    if not match:
        return list(units)
    for name in match:
        if not all(hasattr(u, name) for u in units):
            raise ValueError(f"match: the units ({type(units[0]).__name__}) have no field "
                             f"{name!r}")
    chosen = [u for u in units if all(str(getattr(u, f)) == v for f, v in match.items())]
    if not chosen:
        seen = {f: sorted({str(getattr(u, f)) for u in units}) for f in match}
        raise ValueError(f"match: no unit has {dict(match)}; values present: {seen}")
    return chosen


def _sweep_context(e: Experiment, scale: str | None, config: Any, store: ResultStore | None,
                   match: Mapping[str, str] | None = None
                   ) -> tuple[str, Any, list[Any], ResultStore]:
    scale_name = _scale_of(scale if scale is not None else get_scale())
    cfg = _config(e, scale_name, config)
    units = list(e.units(cfg))
    if not units:
        raise ValueError(f"experiment {e.name!r} produced no units for {cfg!r}")
    units = select_units(units, match or {})
    if store is None:
        store = ResultStore(namespace=scale_name)
    return scale_name, cfg, units, store


def sweep(
    exp: Experiment | str,
    scale: str | None = None,
    *,
    config: Any = None,
    store: ResultStore | None = None,
    progress: bool = False,
    on_code_change: str | None = None,
    recompute_damaged: bool = False,
    recompute: bool = False,
    deadline: float | None = None,
    match: Mapping[str, str] | None = None,
    unit_seconds: UnitSeconds | None = None,
) -> SweepReport:
    """As :func:`reproduce`, but returns a :class:`SweepReport` instead of raising when a time
    budget stops it; ``match`` restricts the sweep to some units (:func:`select_units`);
    ``unit_seconds`` estimates each unit for the progress bar and the time budget
    (:data:`UnitSeconds`; without it, the experiment's own estimate, if any).

    Each unit to compute runs inside :func:`genbounds.train.checkpoint.unit_checkpoint` with
    its checkpoint (:meth:`ResultStore.checkpoint_path
    <genbounds.results.ResultStore.checkpoint_path>`) and ``deadline``: a resumable
    experiment loads an interrupted run's state, saves its own and raises
    ``BudgetExhausted`` at the deadline; the sweep then stops (no further unit) and reports the
    unit as in progress. The checkpoint is removed once the unit's result is stored. Before a
    unit starts, its estimate is compared with the time left: a unit that is not resumable and
    would not finish is not started (the report says so), and the sweep goes on to the next
    unit, which may fit what is left.
    """
    e = get_experiment(exp) if isinstance(exp, str) else exp
    scale_name, cfg, units, store = _sweep_context(e, scale, config, store, match)
    policy = on_code_change if on_code_change is not None else _default_policy(scale_name)
    nonfinite, text = e.declared()
    options: dict[str, Any] = {
        "device": getattr(units[0], "device", "auto"), "on_code_change": policy,
        "code_modules": e.code, "recompute_damaged": recompute_damaged,
        "nonfinite": nonfinite, "text": text}
    report = SweepReport(e.name, scale_name, units, [None] * len(units))
    seconds: list[float | None] = [None] * len(units)
    # the bar, the start decisions, or the record of a paper unit (its estimate beside its time)
    needed = progress or (deadline is not None and not e.resumable) or store.namespace == "paper"
    if needed and (recompute or policy == "recompute" or not all(store.has(u) for u in units)):
        # measures rates: only if there may be work (a stored unit made by other code is
        # recomputed under the "recompute" policy, and records its estimate like a new one)
        seconds = _unit_seconds(e, cfg, units, store, unit_seconds)
    bar = _Bar(progress and len(units) > 1, len(units), seconds)
    try:
        for blocking in (False, True):  # first pass skips units other workers hold
            for i, unit in enumerate(units):
                if report.results[i] is not None:
                    continue
                if not _run_one(e, store, unit, i, report, options, deadline, seconds[i],
                                progress, recompute, blocking):
                    _older_checkpoints(store, report, e)
                    return report
                bar.step([r is not None for r in report.results], _unit_label(unit))
    finally:
        bar.close()
    if report.not_started and report.stopped is None:
        first, why = report.not_started[0]
        more = len(report.not_started) - 1
        report.stopped = (f"unit {_unit_label(first)} not started: {why}, and {e.name} cannot "
                          f"stop mid-unit (not resumable)"
                          + (f"; {more} more unit(s) not started for the same reason"
                             if more else ""))
    return report


def _checkpoint_file(e: Experiment, store: ResultStore, unit: Any) -> Path:
    """Where ``unit``'s checkpoint lives: the committed folder at paper scale when the
    experiment commits its checkpoints, else the store's ignored ``.checkpoints``."""
    if e.committed_checkpoints and store.namespace == "paper":
        from genbounds.results.files import COMMITTED_CHECKPOINT_DIR, obstruction

        u = store.unit(unit)
        path = (store.root / store.namespace / COMMITTED_CHECKPOINT_DIR / u.config_class
                / f"{u.key}.pt")
        blocked = obstruction(store.root, path)
        if blocked is None and os.path.islink(path):
            blocked = (path, "is a symbolic link; checkpoints are never followed")
        if blocked is not None:
            from genbounds.results import DamagedResultError

            raise DamagedResultError(blocked[0], blocked[1], store.repair_command,
                                     (blocked[0],))
        return path
    return store.checkpoint_path(unit)


def _has_checkpoint_file(e: Experiment, store: ResultStore, unit: Any) -> bool:
    if e.committed_checkpoints and store.namespace == "paper":
        from genbounds.results import DamagedResultError

        try:
            return _checkpoint_file(e, store, unit).is_file()
        except DamagedResultError:
            return False
    return store.has_checkpoint(unit)


def _older_checkpoints(store: ResultStore, report: SweepReport,
                       e: Experiment | None = None) -> None:
    """Add the units not done that hold a checkpoint of an earlier run to ``in_progress``."""
    current = [p[0] for p in report.in_progress]
    for unit, result in zip(report.units, report.results, strict=True):
        has = (store.has_checkpoint(unit) if e is None
               else _has_checkpoint_file(e, store, unit))
        if result is None and not any(unit is c for c in current) and has:
            path = (store.unit(unit).checkpoint if e is None
                    else _checkpoint_file(e, store, unit))
            at = read_progress(path)
            report.in_progress.append((unit, None if at is None else at[0],
                                       None if at is None else at[1], path))


def _run_one(e: Experiment, store: ResultStore, unit: Any, i: int, report: SweepReport,
             options: dict[str, Any], deadline: float | None, est: float | None,
             progress: bool, recompute: bool, blocking: bool) -> bool:
    """Load or compute one unit into ``report``; False when the budget stops the sweep."""
    if deadline is not None and (recompute or not store.has(unit)):
        left = deadline - time.monotonic()
        if left <= 0:
            report.stopped = "the time budget is spent"
            return False
        if not e.resumable and (est is None or est > left):
            why = "no estimate" if est is None else f"its estimate is {est / 60:.1f} min"
            if not any(unit is u for u, _ in report.not_started):
                report.not_started.append((unit, f"{why}, {left / 60:.1f} min of the budget "
                                                  "left"))
            return True  # a later unit may fit what is left
    path = _checkpoint_file(e, store, unit)
    from genbounds.results.provenance import (
        describe_device,
        earlier_stretches,
        recorded_estimate,
        recorded_probe,
        stretch_record,
    )

    probes: list[Any] = []

    def compute(u: Any) -> Mapping[str, Any]:
        from genbounds.train.checkpoint import UnitCheckpoint, unit_checkpoint

        with unit_checkpoint(UnitCheckpoint(path=path, deadline=deadline)):
            out = e.run_unit(u, progress)
        if store.namespace == "paper":  # the record keeps the probe of the code that ran
            probes.append(recorded_probe(probe_of(e)))
            probes[-1].__enter__()
        return out

    from genbounds.train.checkpoint import BudgetExhausted

    before = read_stretches(path) if path.is_file() else []
    t0 = time.monotonic()
    try:
        usable = est is not None and math.isfinite(est) and est > 0  # never fails a run
        with earlier_stretches(before), recorded_estimate(
                est if usable else None, describe_device(options["device"])):
            if recompute:
                result: StoredResult | None = store.run(unit, compute, recompute=True,
                                                        **options)
            elif blocking:
                result = store.run(unit, compute, **options)
            else:
                result = store.try_run(unit, compute, **options)
    except BudgetExhausted as stop:
        report.in_progress.append((unit, stop.epoch, stop.total, stop.path))
        reached = f"epoch {stop.epoch}" + ("" if stop.total is None else f" of {stop.total}")
        this = stretch_record(wall_time_s=time.monotonic() - t0,
                              device=describe_device(options["device"]), reached=reached)
        _write_progress(path, stop.epoch, stop.total, [*before, this])
        report.stopped = "the time budget is spent"
        return False
    finally:
        for cm in reversed(probes):
            cm.__exit__(None, None, None)
    if result is not None:
        report.results[i] = result
        curves = path.with_name(f"{path.name}.curves.npz")  # the fused engine's companion
        for leftover in (path, _progress_path(path), curves):
            leftover.unlink(missing_ok=True)
    return True


_PROBES: dict[tuple[str, str], dict[str, Any]] = {}


def probe_of(e: Experiment) -> dict[str, Any]:
    """``e``'s probe under the running code (:mod:`genbounds.experiments.probe`), computed
    once per process and code fingerprint."""
    from genbounds.experiments.probe import run_probe
    from genbounds.results.provenance import code_fingerprint

    key = (e.name, code_fingerprint(e.code))
    if key not in _PROBES:
        _PROBES[key] = run_probe(e)
    return _PROBES[key]


def _progress_path(checkpoint: Path) -> Path:
    return checkpoint.with_suffix(".progress.json")


def _write_progress(checkpoint: Path, epoch: int, total: int | None,
                    stretches: Sequence[Mapping[str, Any]] = ()) -> None:
    """Next to a checkpoint: how far the unit got (read by :func:`status`) and the runs that
    got it there (:func:`read_stretches`; the stored result lists them all)."""
    import datetime as _dt
    import json

    from genbounds.results.files import atomic_write

    when = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    atomic_write(_progress_path(checkpoint),
                 json.dumps({"epoch": epoch, "total": total, "saved_utc": when,
                             "stretches": [dict(s) for s in stretches]}).encode())


def read_stretches(checkpoint: Path) -> list[dict[str, Any]]:
    """The earlier runs of a unit whose checkpoint is ``checkpoint``, as its progress file
    records them (:func:`genbounds.results.provenance.stretch_record` entries); ``[]`` when
    there is no progress file or it lists none. A progress file that cannot be read, or whose
    list is malformed, is a ``ValueError`` naming it: the unit's wall time would be wrong."""
    import json

    from genbounds.results.provenance import _checked_stretches

    path = _progress_path(checkpoint)
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"progress file {path} cannot be read ({exc}); fix or delete it") \
            from None
    runs = data.get("stretches") if isinstance(data, dict) else None
    if not runs:
        return []
    try:
        return [dict(s) for s in _checked_stretches(runs, "stretches")]
    except ValueError as exc:
        raise ValueError(f"progress file {path}: {exc}") from None


def read_progress(checkpoint: Path) -> tuple[int, int | None] | None:
    """``(epoch, total)`` recorded next to a checkpoint (else read from the checkpoint itself,
    :meth:`UnitCheckpoint.progress <genbounds.train.checkpoint.UnitCheckpoint.progress>`), or
    ``None``."""
    import json

    try:
        data = json.loads(_progress_path(checkpoint).read_text())
        return int(data["epoch"]), (None if data["total"] is None else int(data["total"]))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        from genbounds.train.checkpoint import UnitCheckpoint

        return UnitCheckpoint(path=checkpoint).progress()
    except Exception:  # an unreadable checkpoint: its epoch is unknown  # noqa: BLE001
        return None


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

    Stored units made by other code are recomputed at quick scale; at paper scale they are
    kept and shown with a :class:`~genbounds.results.StaleResultWarning` (each part's
    ``stale`` is True), never recomputed or overwritten silently.
    """
    parts = reproduce(exp, scale, config=config, store=store, progress=progress)
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
    checkpoints = tuple(_checkpoint_file(e, store, u) if _has_checkpoint_file(e, store, u)
                        else None for u in units)
    return StoredUnits(e.name, scale, units, results, checkpoints)


def load_stored(exp: Experiment | str, scale: str = "paper", **options: Any
                ) -> tuple[dict[str, np.ndarray], list[StoredResult]] | None:
    """The stored result of ``exp`` at ``scale`` if every unit is stored, else ``None``;
    ``options`` are :func:`stored_units`' keyword arguments (``config``, ``store``, ``warn``).

    Read only: never computes (for a chapter that shows paper-scale results beside its quick
    ones). Returns ``(arrays, parts)`` like :func:`load_or_run`, the parts carrying provenance
    (``device``, ``created_utc``, ``wall_time_s``, ``stale``); ``None`` when any unit is
    missing (use :func:`stored_units` for the partial set).
    """
    found = stored_units(exp, scale, **options)
    if not found.complete:
        return None
    return concatenate(found.present), found.present


def status_lines(
    exp: Experiment | str, scale: str = "paper", *, store: ResultStore | None = None,
    config: Any = None,
) -> list[str]:
    """What the store holds of ``exp`` at ``scale``, one line per unit and a summary line.

    Each unit is *stored* (with the wall time, device and date its provenance records; *stale*
    when its code changed since), *in progress* (a checkpoint of a run a time budget stopped,
    with its epoch), *missing*, or *damaged* (with the problem). Computes nothing.
    """
    from genbounds.results import DamagedResultError

    e = get_experiment(exp) if isinstance(exp, str) else exp
    scale_name, _, units, store = _sweep_context(e, scale, config, store)
    lines, counts, wall = [], {"stored": 0, "in progress": 0, "missing": 0, "damaged": 0}, 0.0
    for unit in units:
        label = _unit_label(unit)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", StaleResultWarning)
                found = store.load(unit, on_code_change="warn", code_modules=e.code, wait_s=1.0)
        except DamagedResultError as err:
            counts["damaged"] += 1
            lines.append(f"  damaged      {label}: {err.problem}")
            continue
        if found is not None:
            counts["stored"] += 1
            wall += found.wall_time_s
            stale = ", STALE (code changed since)" if found.stale else ""
            lines.append(f"  stored       {label}: {found.wall_time_s / 60:.1f} min on "
                         f"{found.device}, {found.created_utc}{stale}")
            continue
        if _has_checkpoint_file(e, store, unit):  # never through a link out of the store
            checkpoint = _checkpoint_file(e, store, unit)
            counts["in progress"] += 1
            at = read_progress(checkpoint)
            where = ("" if at is None else
                     f" (epoch {at[0]}" + (f" of {at[1]}" if at[1] is not None else "") + ")")
            lines.append(f"  in progress  {label}{where}: checkpoint {checkpoint}")
            continue
        counts["missing"] += 1
        lines.append(f"  missing      {label}")
    head = (f"[{e.name}] scale={scale_name}: " + ", ".join(f"{v} {k}" for k, v in counts.items())
            + f" of {len(units)} units; {wall / 3600:.2f} h of stored wall time")
    return [head, *lines]
