"""``python -m genbounds``: the package's one command-line entry point.

Subcommands::

    python -m genbounds bounds [--paper KEY] [--kind KIND]      every registered bound, one a line
    python -m genbounds experiments                             every registered study
    python -m genbounds reproduce [--scale quick|paper] [--only NAME ...]
                                  [--results-dir DIR] [--recompute-damaged]
                                                                fill the results store (resumable)
    python -m genbounds store check [--root DIR] ...            verify every stored result

A damaged stored result stops ``reproduce`` with one message (which file, what is wrong, the
command that repairs it) and exit status 3 (``genbounds.results.DAMAGE_EXIT_CODE``), without
a traceback; a bad argument exits with status 2.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

__all__ = ["main"]


def _cmd_bounds(args: argparse.Namespace) -> int:
    from genbounds.bounds import BoundKind, registered

    kind = None
    if args.kind is not None:
        by_name = {k.name.lower(): k for k in BoundKind}
        if args.kind.lower() not in by_name:
            print(f"--kind must be one of {sorted(by_name)}", file=sys.stderr)
            return 2
        kind = by_name[args.kind.lower()]
    bounds = registered(paper=args.paper, kind=kind)
    width = max(len(b.key) for b in bounds) if bounds else 0
    for b in bounds:
        consts = ", ".join(f"{k}={v:g}" for k, v in b.constants.items())
        print(f"{b.key:<{width}}  {b.kind.value:<22}  {b.statement:<22}  "
              f"needs: {', '.join(b.needs)}" + (f"; constants: {consts}" if consts else ""))
    return 0


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


def describe_estimate(e: Any, cfg: Any) -> str:
    """The experiment's own estimate, else the measured-rate model of :mod:`genbounds.estimates`
    (when that module knows the experiment), else ``"no estimate"``."""
    from genbounds import estimates

    est = e.estimate(cfg) if e.estimate is not None else estimates.estimate(e.name, cfg)
    return "no estimate" if est is None else str(est.describe())


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from genbounds.experiments import get_experiment, registered_experiments, reproduce
    from genbounds.results import (
        DamagedResultError,
        ResultStore,
        report_damage,
        summarize_provenance,
    )
    from genbounds.scale import get_scale

    scale = args.scale or get_scale()
    try:
        exps = ([get_experiment(n) for n in args.only] if args.only
                else registered_experiments())
    except ValueError as err:
        print(err, file=sys.stderr)
        return 2
    store = ResultStore(args.results_dir, namespace=scale)
    for e in exps:
        cfg = e.config(scale)
        n_units = len(e.units(cfg))
        est = describe_estimate(e, cfg)
        print(f"[{e.name}] scale={scale}, {n_units} units, estimate: {est}", flush=True)
        t0 = time.perf_counter()
        try:
            parts = reproduce(e, scale, store=store, progress=not args.no_progress,
                              on_code_change=args.on_code_change,
                              recompute_damaged=args.recompute_damaged)
        except DamagedResultError as err:
            where = f" --results-dir {args.results_dir}" if args.results_dir else ""
            return int(report_damage(err, repair=(
                f"python -m genbounds reproduce --only {e.name} --scale {scale}{where} "
                "--recompute-damaged")))
        print(f"[{e.name}] done in {time.perf_counter() - t0:.1f} s: "
              f"{summarize_provenance(parts)}", flush=True)
    return 0


def _cmd_store(rest: Sequence[str]) -> int:
    from genbounds.results import store_main

    return int(store_main(list(rest)))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m genbounds", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("bounds", help="list every registered bound, one per line")
    b.add_argument("--paper", default=None, help="BibTeX key of one paper")
    b.add_argument("--kind", default=None, help="e.g. gap, rademacher, log_covering")
    sub.add_parser("experiments", help="list every registered experiment")
    r = sub.add_parser("reproduce", help="fill the results store (resumable)")
    r.add_argument("--scale", choices=("quick", "paper"), default=None,
                   help="defaults to $GENBOUNDS_SCALE (quick if unset)")
    r.add_argument("--only", nargs="+", default=None, metavar="NAME",
                   help="only these experiments (see `python -m genbounds experiments`)")
    r.add_argument("--results-dir", default=None, help="defaults to the book's results/")
    r.add_argument("--recompute-damaged", action="store_true",
                   help="move damaged stored results aside and recompute them")
    r.add_argument("--on-code-change", choices=("recompute", "warn", "error"),
                   default="recompute", help="what to do with results made by other code")
    r.add_argument("--no-progress", action="store_true", help="no progress bars")
    sub.add_parser("store", help="check / repair the results store (see `store --help`)",
                   add_help=False)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "store":
        return _cmd_store(argv[1:])
    args = _parser().parse_args(argv)
    handler = {"bounds": _cmd_bounds, "experiments": _cmd_experiments,
               "reproduce": _cmd_reproduce}[args.command]
    return handler(args)
