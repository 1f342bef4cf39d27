"""``python -m genbounds``: the package's one command-line entry point.

Subcommands::

    python -m genbounds bounds [--paper KEY] [--kind KIND]      every registered bound, one a line,
                                                                with its proof-audit verdict
    python -m genbounds experiments                             every registered study
    python -m genbounds reproduce [--scale quick|paper] [--only NAME ...]
                                  [--results-dir DIR] [--recompute-damaged] [--recompute]
                                  [--budget-minutes M] [--match FIELD=VALUE ...]
                                                                fill the results store (resumable)
    python -m genbounds reproduce --status [--scale S]          what is stored, in progress, missing
    python -m genbounds store check [--root DIR] ...            verify every stored result

A damaged stored result stops ``reproduce`` with one message (which file, what is wrong, the
command that repairs it) and exit status 3 (``genbounds.results.DAMAGE_EXIT_CODE``), without
a traceback; a bad argument (or a bad ``$GENBOUNDS_SCALE``) exits with status 2 and one line.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["BUDGET_MARGIN", "STALE_EXIT_CODE", "describe_estimate", "main"]

BUDGET_MARGIN = 0.9
"""Units are told to stop at this fraction of ``--budget-minutes`` (they stop at the next epoch
boundary and save a checkpoint, which takes the rest)."""


STALE_EXIT_CODE = 4
"""Exit status when a stored result was made by other code and ``--on-code-change error`` was
asked for, or the package's source changed on disk while the command ran."""


class UsageError(ValueError):
    """A bad argument or environment: printed as one line, exit status 2."""


_HEX40 = frozenset("0123456789abcdef")


def _check_environment() -> None:
    """UsageError for a malformed ``$GENBOUNDS_GIT_COMMIT`` / ``$GENBOUNDS_GIT_DIRTY``, which
    every result's provenance records (checked before anything is computed)."""
    import os

    commit = os.environ.get("GENBOUNDS_GIT_COMMIT")
    if commit and not (len(commit) == 40 and set(commit) <= _HEX40):
        raise UsageError("GENBOUNDS_GIT_COMMIT must be a full commit id (40 hexadecimal digits, "
                         f"lower case), got {commit!r}")
    dirty = os.environ.get("GENBOUNDS_GIT_DIRTY")
    if dirty is not None and dirty not in ("0", "1"):
        raise UsageError(f"GENBOUNDS_GIT_DIRTY must be 0 or 1, got {dirty!r}")


def _cmd_bounds(args: argparse.Namespace) -> int:
    from genbounds.bounds import BoundKind, registered

    kind = None
    if args.kind is not None:
        by_name = {k.name.lower(): k for k in BoundKind}
        if args.kind.lower() not in by_name:
            raise UsageError(f"--kind must be one of {sorted(by_name)}, got {args.kind!r}")
        kind = by_name[args.kind.lower()]
    if args.paper is not None:
        papers = sorted({b.paper for b in registered()})
        if args.paper not in papers:
            raise UsageError(f"--paper must be one of {papers}, got {args.paper!r}")
    bounds = registered(paper=args.paper, kind=kind)
    width = max(len(b.key) for b in bounds) if bounds else 0
    for b in bounds:
        consts = ", ".join(f"{k}={v:g}" for k, v in b.constants.items())
        print(f"{b.key:<{width}}  {b.kind.value:<22}  {b.statement:<22}  "
              f"verdict: {verdict_words(b.verdict)}; needs: {', '.join(b.needs)}"
              + (f"; constants: {consts}" if consts else ""))
    return 0


def verdict_words(verdict: Any) -> str:
    """The proof audit's verdict on a registered statement, in the audit's words (``None``:
    the statement is not audited in the book)."""
    return "not audited" if verdict is None else str(verdict.value)


def _cmd_experiments(args: argparse.Namespace) -> int:
    from genbounds.experiments import registered_experiments

    for e in registered_experiments():
        sizes = []
        for scale in ("quick", "paper"):
            try:
                sizes.append(f"{scale}: {len(e.units(e.config(scale)))} units")
            except Exception as exc:  # a broken preset must not hide the others
                sizes.append(f"{scale}: error ({exc})")
        print(f"{e.name:<22}  {e.chapter:<34}  {'; '.join(sizes)}  -- {e.description}")
    return 0


def _stale(store: Any, e: Any, unit: Any) -> bool:
    """Whether ``unit`` is to be computed again: stored by other code, or damaged (the sweep
    then stops with the named error, or recomputes it with ``--recompute-damaged``)."""
    import warnings

    from genbounds.results import DamagedResultError, StaleResultWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StaleResultWarning)
        try:
            stored = store.load(unit, on_code_change="warn", code_modules=e.code, wait_s=0.0)
        except DamagedResultError:
            return True
    return stored is None or bool(stored.stale)


def _wall_s(store: Any, e: Any, unit: Any) -> float:
    """The wall time a stored unit records (0 for a damaged one: the sweep names it)."""
    import warnings

    from genbounds.results import DamagedResultError, StaleResultWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StaleResultWarning)
        try:
            stored = store.load(unit, on_code_change="warn", code_modules=e.code, wait_s=0.0)
        except DamagedResultError:
            return 0.0
    return stored.wall_time_s if stored is not None else 0.0


def describe_estimate(e: Any, cfg: Any, store: Any = None,
                      match: dict[str, str] | None = None, redo_stale: bool = False) -> str:
    """The estimate of what is left to compute of ``e`` at ``cfg`` (of the units ``match``
    selects, when given: :func:`genbounds.experiments.registry.select_units`).

    With a ``store``, units already stored are not estimated: when every unit is stored this
    costs no measurement (it says so, with the wall time the stored units record); otherwise
    only the missing units are estimated. The experiment's own estimate comes first, else the
    measured-rate model of :mod:`genbounds.estimates`, else ``"no estimate"``. With
    ``redo_stale`` (``--on-code-change recompute``), a unit stored by other code counts as one
    to compute.
    """
    from genbounds import estimates
    from genbounds.experiments.registry import select_units

    if store is not None:
        units = list(e.units(cfg))
        chosen = select_units(units, match or {})
        missing = [u for u in chosen if not store.has(u) or (redo_stale and _stale(store, e, u))]
        if not missing:
            wall = sum(_wall_s(store, e, u) for u in chosen)
            return (f"nothing to compute: all {len(chosen)} units stored "
                    f"({wall / 60:.1f} min of measured wall time)")
        if len(missing) < len(units):
            per = estimates.unit_estimates(e.name, cfg, store)  # calibrated on stored units
            if per is not None and len(per.seconds) == len(units):
                left = sum(s for s, u in zip(per.seconds, units, strict=True) if u in missing)
                return (f"~{left / 60:.1f} min for the {len(missing)} missing of "
                        f"{len(units)} units ({per.describe()})")
        if match and len(chosen) < len(units):
            per_unit = estimates.unit_seconds(e.name, cfg, store)
            if per_unit is not None and len(per_unit) == len(units):
                left = sum(s for s, u in zip(per_unit, units, strict=True) if u in missing)
                return f"~{left / 60:.1f} min for the {len(missing)} selected units to compute"
            return f"no estimate for the {len(missing)} selected units alone"
    est = e.estimate(cfg) if e.estimate is not None else estimates.estimate(e.name, cfg, store)
    return "no estimate" if est is None else str(est.describe())


def _scale(args: argparse.Namespace) -> str:
    from genbounds.scale import get_scale

    if args.scale is not None:
        return str(args.scale)
    try:
        return get_scale()
    except ValueError as err:
        raise UsageError(str(err)) from None


def _store(args: argparse.Namespace, scale: str, repair: str | None = None) -> Any:
    """The store ``reproduce`` uses; UsageError for a directory that is not (and cannot
    become) a results store: below a file, or holding other things and no marker."""
    from genbounds.results import ResultStore
    from genbounds.results.files import ENV_RESULTS_DIR, store_problem

    source = "--results-dir" if args.results_dir is not None else ENV_RESULTS_DIR
    try:
        store = ResultStore(args.results_dir, namespace=scale, repair_command=repair,
                            recompute_damaged=bool(getattr(args, "recompute_damaged", False)))
    except ValueError as err:
        raise UsageError(str(err) if ENV_RESULTS_DIR in str(err) else f"{source}: {err}"
                         ) from None
    problem = store_problem(store.root)
    if problem is not None:
        raise UsageError(f"{source}: {problem}")
    return store


def _experiments(args: argparse.Namespace) -> list[Any]:
    from genbounds.experiments import get_experiment, registered_experiments

    try:
        return [get_experiment(n) for n in args.only] if args.only else registered_experiments()
    except ValueError as err:
        raise UsageError(str(err)) from None


def _match(args: argparse.Namespace) -> dict[str, str]:
    """``--match FIELD=VALUE ...`` as a dict (UsageError for an item without ``=``)."""
    out: dict[str, str] = {}
    for item in args.match or ():
        field, sep, value = item.partition("=")
        if not sep or not field:
            raise UsageError(f"--match takes FIELD=VALUE items, got {item!r}")
        out[field] = value
    return out


def _cmd_status(args: argparse.Namespace) -> int:
    from genbounds.experiments.registry import status_lines

    scale = _scale(args)
    store = _store(args, scale)
    for e in _experiments(args):
        for line in status_lines(e, scale, store=store):
            print(line)
    return 0


def _cmd_reproduce(args: argparse.Namespace) -> int:
    if args.status:
        return _cmd_status(args)
    from genbounds import estimates
    from genbounds.experiments.registry import select_units, sweep
    from genbounds.results import DamagedResultError, report_damage, summarize_provenance

    scale = _scale(args)
    exps = _experiments(args)
    store = _store(args, scale)
    deadline = None
    if args.budget_minutes is not None:
        deadline = time.monotonic() + BUDGET_MARGIN * 60.0 * args.budget_minutes
    match = _match(args)
    store.prepare()  # a store that cannot be created fails now, naming the path, not after work
    for e in exps:
        cfg = e.config(scale)
        try:
            n_units = len(select_units(e.units(cfg), match))
        except ValueError as err:
            raise UsageError(f"--match for {e.name}: {err}") from None
        t0 = time.perf_counter()
        try:
            estimate = describe_estimate(e, cfg, store, match,
                                         args.on_code_change == "recompute")
            print(f"[{e.name}] scale={scale}, {n_units} units, estimate: {estimate}", flush=True)
            t0 = time.perf_counter()
            report = sweep(e, scale, store=store, progress=not args.no_progress,
                           on_code_change=args.on_code_change, recompute=args.recompute,
                           recompute_damaged=args.recompute_damaged, deadline=deadline,
                           match=match, unit_seconds=estimates.unit_seconds)
        except DamagedResultError as err:
            where = f" --results-dir {args.results_dir}" if args.results_dir else ""
            return int(report_damage(err, repair=(
                f"python -m genbounds reproduce --only {e.name} --scale {scale}{where} "
                "--recompute-damaged")))
        if not report.complete:
            print(report.describe(), flush=True)
            left = [x.name for x in exps[exps.index(e) + 1:]]
            if left:
                print(f"not started: {', '.join(left)}", flush=True)
            print("run the same command again to resume (checkpoints are kept)", flush=True)
            return 0
        print(f"[{e.name}] done in {time.perf_counter() - t0:.1f} s: "
              f"{summarize_provenance(report.done)}", flush=True)
    return 0


def _cmd_store(rest: Sequence[str]) -> int:
    from genbounds.results import store_main

    return int(store_main(list(rest)))


MAX_BUDGET_MINUTES = 60.0 * 24 * 366
"""The largest ``--budget-minutes`` (a year of wall time: more than any unit or study needs;
the paper-scale sweeps take hours)."""


def _budget_minutes(text: str) -> float:
    """``--budget-minutes M``: a finite number of minutes, 0 < M <= a year."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of minutes, got {text!r}") from None
    if not (0 < value <= MAX_BUDGET_MINUTES):  # NaN, inf, 1e400 (inf) and 2**70 are refused
        raise argparse.ArgumentTypeError(
            f"must be > 0 and at most {MAX_BUDGET_MINUTES:.0f} (a year), got {text!r}")
    return value


def directory_path(text: str) -> Path:
    """``--results-dir``: see :func:`genbounds.results.cli.directory_path`."""
    from genbounds.results.cli import directory_path as check

    return check(text)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m genbounds", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("bounds", help="list every registered bound, one per line, with the "
                                      "proof audit's verdict on its statement")
    b.add_argument("--paper", default=None, help="BibTeX key of one paper")
    b.add_argument("--kind", default=None, help="e.g. gap, rademacher, log_covering")
    sub.add_parser("experiments", help="list every registered experiment")
    r = sub.add_parser("reproduce", help="fill the results store (resumable)")
    r.add_argument("--scale", choices=("quick", "paper"), default=None,
                   help="defaults to $GENBOUNDS_SCALE (quick if unset)")
    r.add_argument("--only", nargs="+", default=None, metavar="NAME",
                   help="only these experiments (see `python -m genbounds experiments`)")
    r.add_argument("--results-dir", type=directory_path, default=None,
                   help="defaults to the book's results/ ($GENBOUNDS_RESULTS_DIR); a new or "
                        "empty directory, or a results store")
    r.add_argument("--recompute-damaged", action="store_true",
                   help="move damaged stored results aside and recompute them")
    r.add_argument("--recompute", action="store_true",
                   help="recompute every unit (a paper result replaced is moved to "
                        "<results>/_replaced/, never overwritten)")
    r.add_argument("--on-code-change", choices=("recompute", "warn", "error"), default=None,
                   help="what to do with results made by other code (default: recompute at "
                        "quick scale, keep with a warning at paper scale)")
    r.add_argument("--budget-minutes", type=_budget_minutes, default=None, metavar="M",
                   help="stop cleanly before M minutes: the unit running is told to stop at "
                        f"{BUDGET_MARGIN * 100:.0f}%% of M, saves a checkpoint and is resumed "
                        "by the next run; a summary says what is done, in progress and left")
    r.add_argument("--match", nargs="+", default=None, metavar="FIELD=VALUE",
                   help="only the units whose config fields have these values, e.g. "
                        "--only shallow_gd --match N=400 d_m=4096")
    r.add_argument("--status", action="store_true",
                   help="compute nothing: list each unit as stored, in progress or missing, "
                        "with the wall time and device it recorded")
    r.add_argument("--no-progress", action="store_true", help="no progress bars")
    sub.add_parser("store", help="check / repair the results store (see `store --help`)",
                   add_help=False)
    sub.add_parser("revalidate", help="carry stored results over to the current code "
                   "fingerprint, or recompute one and compare (see `revalidate --help`)",
                   add_help=False)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "store":
        return _cmd_store(argv[1:])
    if argv and argv[0] == "revalidate":
        return revalidate_main(argv[1:])
    args = _parser().parse_args(argv)
    handler = {"bounds": _cmd_bounds, "experiments": _cmd_experiments,
               "reproduce": _cmd_reproduce}[args.command]
    return _handle(handler, args)


def _handle(handler: Any, args: argparse.Namespace) -> int:
    """Run ``handler``; every error a user can meet becomes one named message on stderr and an
    exit status (2: bad argument or environment; 3: a stored result is damaged or a result
    cannot be stored; 4: results of other code, see :data:`STALE_EXIT_CODE`); 1 stays for
    crashes."""
    from genbounds.results import (
        DAMAGE_EXIT_CODE,
        CodeChangedError,
        DamagedResultError,
        StaleResultError,
        UnsavedResultError,
        report_damage,
    )

    try:
        if args.command == "reproduce":
            _check_environment()
        return int(handler(args))
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except DamagedResultError as err:
        return report_damage(err)
    except (StaleResultError, CodeChangedError) as err:
        hint = (" (--on-code-change warn keeps it with a warning, recompute recomputes it)"
                if isinstance(err, StaleResultError) else "")
        print(f"error: {err}{hint}", file=sys.stderr)
        return STALE_EXIT_CODE
    except UnsavedResultError as err:
        print(f"error: {err}", file=sys.stderr)
        return DAMAGE_EXIT_CODE
    except BrokenPipeError:  # the reader went away (`... | head`): stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as err:  # a directory without permission, a full or read-only disk
        where = f" {err.filename}:" if err.filename else ""
        print(f"error: the results store cannot be used:{where} {err.strerror or err}",
              file=sys.stderr)
        return DAMAGE_EXIT_CODE


# ----------------------------------------------------------------------------- revalidate
def revalidate_main(argv: Sequence[str] | None = None) -> int:
    """``python -m genbounds revalidate``: carry stored units over to the running code without
    recomputing (an older fingerprint scheme, or an edit whose probe outputs are unchanged), or
    recompute one and compare (:mod:`genbounds.results.revalidate`). Exit 0, 1 when a
    re-validation failed, 2 on a usage error, 3 on a damaged store."""
    from genbounds.results import revalidate as rv

    p = argparse.ArgumentParser(prog="python -m genbounds revalidate",
                                description=revalidate_main.__doc__)
    p.add_argument("--scale", choices=("quick", "paper"), default="paper")
    p.add_argument("--only", nargs="+", default=None, metavar="NAME")
    p.add_argument("--results-dir", type=directory_path, default=None)
    p.add_argument("--dry-run", action="store_true", help="migrate: say, write nothing")
    p.add_argument("--record-probes", action="store_true",
                   help="migrate: also record the probe of the running code in every current "
                   "unit that has none (run before editing a study's code)")
    p.add_argument("--recompute", action="store_true",
                   help="recompute the stale units chosen by --match and compare")
    p.add_argument("--match", nargs="+", default=(), metavar="FIELD=VALUE")
    p.add_argument("--rtol", type=_fraction("--rtol"), default=rv.DEFAULT_RTOL)
    p.add_argument("--atol-frac", type=_fraction("--atol-frac"), default=rv.DEFAULT_ATOL_FRAC)
    args = p.parse_args(argv)
    from genbounds.results.errors import DamagedResultError, report_damage

    try:
        return _revalidate(args)
    except DamagedResultError as err:
        return report_damage(err)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def _fraction(name: str) -> Callable[[str], float]:
    """An argparse type: a number in [0, 1), the error naming the option."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {text!r}") from None
        if not 0.0 <= value < 1.0:
            raise argparse.ArgumentTypeError(f"{name} must be in [0, 1), got {text!r}")
        return value
    return parse


def _revalidate(args: argparse.Namespace) -> int:
    from functools import partial

    from genbounds.experiments.probe import same_probe
    from genbounds.experiments.registry import get_experiment, probe_of, registered_experiments
    from genbounds.results import ResultStore, files
    from genbounds.results import revalidate as rv
    from genbounds.results.provenance import same_code

    exps = [get_experiment(n) for n in args.only] if args.only else registered_experiments()
    store = ResultStore(args.results_dir, namespace=args.scale)
    failed = 0
    for exp in exps:
        if not args.recompute:
            rows = rv.migrate_units(exp, args.scale, store, dry_run=args.dry_run,
                                    probe=(partial(probe_of, exp), same_probe),
                                    record_probes=args.record_probes)
            current = sum(ok for *_, ok in rows)
            print(f"[{exp.name}] {current} of {len(rows)} stored units current under the new "
                  "scheme")
            for key, why, _ in rows:
                print(f"  {key}: {why}")
            continue
        if not args.match:
            raise ValueError("--recompute needs --match FIELD=VALUE (one small unit at a time)")
        for config, unit in rv.stored_units_of(exp, args.scale, store):
            if not rv.match_unit(config, args.match):
                continue
            record = files.read_unit(unit, store.repair_command)
            assert record is not None
            prov = record.provenance
            if same_code(prov.code_fingerprint, prov.code_modules, exp.code):
                print(f"[{exp.name}] {unit.key}: current, nothing to re-validate")
                continue
            ok, line = rv.revalidate_unit(exp, config, store, args.rtol, args.atol_frac)
            failed += not ok
            print(f"[{exp.name}] {line}", flush=True)
    return 1 if failed else 0
