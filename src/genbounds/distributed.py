"""Running one sweep's units on many machines: SLURM job arrays through ``submitit``.

When a sweep outgrows one machine, its units (:attr:`genbounds.experiments.Experiment.units`)
are spread over ``n_workers`` jobs of a SLURM job array, submitted with
`submitit <https://github.com/facebookincubator/submitit>`_. There is **no coordinator of our
own**: the results store (:mod:`genbounds.results`) is the only meeting point. Every worker

1. computes its own share of the units (round robin: worker ``w`` of ``n`` takes units
   ``w, w + n, w + 2n, ...``; :func:`worker_share`) through :meth:`ResultStore.run`, which
   holds the unit's file lock from the decision to compute until the result is committed
   (atomic renames; a unit asked for by two workers is computed once, the second loads it);
2. then, with ``steal=True`` (default), walks over the other units and computes any that is
   neither stored nor locked by another worker (:meth:`ResultStore.try_run`), so a slow or
   failed job does not leave its share undone while others sit idle.

Whatever order the workers run in and however many there are, each unit is a pure function of
its frozen config (its seeds are part of it), so the store ends up with exactly the results of
a single-process :func:`genbounds.experiments.reproduce` (tested in
``tests/test_distributed.py`` with submitit's ``LocalExecutor``: three worker processes against
one process, every array equal bit for bit apart from wall-clock times). After the array has
finished, ``python -m genbounds reproduce --only NAME --scale S`` (or a notebook's
``load_or_run``) finds every unit stored and only loads. A job that dies leaves no partial
result (the store's guarantee); resubmitting the array recomputes exactly the missing units.

Command line (on the cluster's login node, with the shared filesystem holding the checkout)::

    python -m genbounds.distributed submit --only sparse_majority --scale paper --workers 10 \\
        --partition gpu --gpus-per-node 1 --cpus-per-task 8 --timeout-min 240 --folder slurm_logs
    python -m genbounds.distributed status --only sparse_majority --scale paper

``--executor local`` runs the workers as local processes (submitit's ``LocalExecutor``), which is
how it is tested; ``--executor debug`` runs them one after another in this process.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from genbounds.validation import check_choice, check_int

__all__ = [
    "EXECUTORS",
    "WorkerReport",
    "main",
    "make_executor",
    "run_worker",
    "sweep_status",
    "submit_sweep",
    "worker_share",
]

#: ``auto`` (SLURM when ``sbatch`` is on the PATH, else local processes), ``slurm``, ``local``
#: (one process per worker on this machine) and ``debug`` (in this process, one by one).
EXECUTORS = ("auto", "slurm", "local", "debug")


@dataclass(frozen=True)
class WorkerReport:
    """What one worker did: the indices of the units it computed, found stored, or left to
    another worker that held the unit's lock (``skipped``, only in the stealing pass)."""

    worker: int
    n_workers: int
    computed: tuple[int, ...]
    loaded: tuple[int, ...]
    skipped: tuple[int, ...]


def worker_share(n_units: int, n_workers: int, worker: int) -> list[int]:
    """Unit indices of ``worker`` (0-based) of ``n_workers``: ``worker, worker + n_workers, ..``.

    The shares of all workers partition ``range(n_units)``.
    """
    check_int(n_units, "n_units", 0)
    check_int(n_workers, "n_workers")
    check_int(worker, "worker", 0)
    if worker >= n_workers:
        raise ValueError(f"worker must be < n_workers = {n_workers}, got {worker}")
    return list(range(worker, n_units, n_workers))


def _experiment_and_units(name: str, scale: str, config: Any) -> tuple[Any, list[Any]]:
    from genbounds.experiments import get_experiment
    from genbounds.scale import SCALES

    check_choice(scale, "scale", SCALES)
    exp = get_experiment(name)
    cfg = exp.config(scale) if config is None else config
    units = list(exp.units(cfg))
    if not units:
        raise ValueError(f"experiment {name!r} produced no units for {cfg!r}")
    return exp, units


def run_worker(
    name: str,
    scale: str,
    worker: int,
    n_workers: int,
    results_dir: str | None = None,
    config: Any = None,
    steal: bool = True,
    on_code_change: str | None = None,
) -> WorkerReport:
    """Compute worker ``worker``'s share of the units of experiment ``name`` into the store.

    This is the function every job of the array runs. ``config`` overrides the preset of
    ``scale`` (the store's namespace stays ``scale``). With ``steal``, the units of other
    workers that are neither stored nor being computed are computed afterwards.
    ``on_code_change`` defaults to the store's policy: recompute at quick scale, keep (with a
    warning) at paper scale.
    """
    from genbounds.results import ResultStore

    exp, units = _experiment_and_units(name, scale, config)
    share = worker_share(len(units), n_workers, worker)
    if on_code_change is not None:
        check_choice(on_code_change, "on_code_change", ("recompute", "warn", "error"))
    store = ResultStore(results_dir, namespace=scale)
    nonfinite, text = exp.declared()
    computed: list[int] = []
    loaded: list[int] = []
    skipped: list[int] = []

    def fn(u: Any) -> Any:
        return exp.run_unit(u, False)

    def note(i: int, res: Any) -> None:
        if res is None:
            skipped.append(i)
        elif res.fresh:
            computed.append(i)
        else:
            loaded.append(i)

    for i in share:
        note(i, store.run(units[i], fn, device=getattr(units[i], "device", "auto"),
                          on_code_change=on_code_change,  # type: ignore[arg-type]
                          code_modules=exp.code, nonfinite=nonfinite, text=text))
    if steal:
        for i in range(len(units)):
            if i in share or store.has(units[i]):
                continue
            note(i, store.try_run(units[i], fn, device=getattr(units[i], "device", "auto"),
                                  on_code_change=on_code_change,  # type: ignore[arg-type]
                                  code_modules=exp.code, nonfinite=nonfinite, text=text))
    return WorkerReport(worker, n_workers, tuple(computed), tuple(loaded), tuple(skipped))


def make_executor(
    executor: str,
    folder: str | Path,
    *,
    timeout_min: int = 240,
    partition: str | None = None,
    gpus_per_node: int = 0,
    cpus_per_task: int = 2,
    mem_gb: float | None = None,
    array_parallelism: int = 64,
    slurm_extra: dict[str, Any] | None = None,
) -> Any:
    """A configured submitit executor (see :data:`EXECUTORS`)."""
    import submitit

    check_choice(executor, "executor", EXECUTORS)
    check_int(timeout_min, "timeout_min")
    check_int(cpus_per_task, "cpus_per_task")
    check_int(gpus_per_node, "gpus_per_node", 0)
    check_int(array_parallelism, "array_parallelism")
    folder = Path(folder)
    if executor == "debug":
        return submitit.DebugExecutor(folder)
    if executor == "local":
        ex: Any = submitit.LocalExecutor(folder)
        ex.update_parameters(timeout_min=timeout_min)
        return ex
    ex = submitit.AutoExecutor(folder, cluster="slurm" if executor == "slurm" else None)
    params: dict[str, Any] = {"timeout_min": timeout_min, "cpus_per_task": cpus_per_task,
                              "gpus_per_node": gpus_per_node,
                              "slurm_array_parallelism": array_parallelism}
    if partition is not None:
        params["slurm_partition"] = partition
    if mem_gb is not None:
        params["mem_gb"] = mem_gb
    for k, v in (slurm_extra or {}).items():
        params[k if k.startswith("slurm_") else f"slurm_{k}"] = v
    ex.update_parameters(**params)
    return ex


def submit_sweep(
    name: str,
    scale: str,
    n_workers: int,
    executor: Any,
    *,
    results_dir: str | None = None,
    config: Any = None,
    steal: bool = True,
) -> list[Any]:
    """Submit ``n_workers`` jobs (one SLURM job array) running :func:`run_worker`.

    ``executor`` is a submitit executor (:func:`make_executor`). Returns the submitit jobs;
    ``[j.result() for j in jobs]`` waits for them and gives their :class:`WorkerReport`.
    The results directory is resolved to an absolute path here, so that jobs started in
    another working directory write to the same store.
    """
    check_int(n_workers, "n_workers")
    _, units = _experiment_and_units(name, scale, config)  # fail here, not in n jobs
    if n_workers > len(units):
        raise ValueError(f"n_workers must be <= the number of units ({len(units)}), "
                         f"got {n_workers}")
    from genbounds.results import default_results_dir

    root = str(Path(results_dir if results_dir is not None else default_results_dir()).resolve())
    ws = list(range(n_workers))
    return list(executor.map_array(
        run_worker, [name] * n_workers, [scale] * n_workers, ws, [n_workers] * n_workers,
        [root] * n_workers, [config] * n_workers, [steal] * n_workers))


def sweep_status(name: str, scale: str, results_dir: str | None = None,
                 config: Any = None) -> tuple[int, int]:
    """``(stored, total)`` units of the sweep (a committed JSON counts; not verified: use
    ``python -m genbounds store check`` for that)."""
    from genbounds.results import ResultStore

    _, units = _experiment_and_units(name, scale, config)
    store = ResultStore(results_dir, namespace=scale)
    return sum(store.has(u) for u in units), len(units)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m genbounds.distributed submit|status ...`` (see the module docstring)."""
    p = argparse.ArgumentParser(prog="python -m genbounds.distributed",
                                description="run a sweep's units as a SLURM job array")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("submit", help="submit the workers and wait for them")
    st = sub.add_parser("status", help="how many units are stored")
    for q in (s, st):
        q.add_argument("--only", required=True, metavar="NAME", help="the experiment")
        q.add_argument("--scale", choices=("quick", "paper"), default="paper")
        q.add_argument("--results-dir", default=None)
    s.add_argument("--workers", type=int, required=True, help="jobs in the array")
    s.add_argument("--executor", choices=EXECUTORS, default="auto")
    s.add_argument("--folder", default="slurm_logs", help="submitit's logs and pickles")
    s.add_argument("--partition", default=None)
    s.add_argument("--gpus-per-node", type=int, default=0)
    s.add_argument("--cpus-per-task", type=int, default=2)
    s.add_argument("--mem-gb", type=float, default=None)
    s.add_argument("--timeout-min", type=int, default=240)
    s.add_argument("--array-parallelism", type=int, default=64)
    s.add_argument("--no-steal", action="store_true", help="only each worker's own share")
    s.add_argument("--no-wait", action="store_true", help="print the job ids and return")
    args = p.parse_args(argv)
    try:
        if args.command == "status":
            done, total = sweep_status(args.only, args.scale, args.results_dir)
            print(f"{args.only} ({args.scale}): {done}/{total} units stored")
            return 0 if done == total else 1
        ex = make_executor(args.executor, args.folder, timeout_min=args.timeout_min,
                           partition=args.partition, gpus_per_node=args.gpus_per_node,
                           cpus_per_task=args.cpus_per_task, mem_gb=args.mem_gb,
                           array_parallelism=args.array_parallelism)
        jobs = submit_sweep(args.only, args.scale, args.workers, ex,
                            results_dir=args.results_dir, steal=not args.no_steal)
    except ValueError as err:
        print(err, file=sys.stderr)
        return 2
    print(f"submitted {len(jobs)} workers: {', '.join(str(j.job_id) for j in jobs)}",
          flush=True)
    if args.no_wait:
        return 0
    for j in jobs:
        r = j.result()
        print(f"worker {r.worker}: computed {list(r.computed)}, loaded {list(r.loaded)}, "
              f"left to others {list(r.skipped)}", flush=True)
    done, total = sweep_status(args.only, args.scale, args.results_dir)
    print(f"{args.only} ({args.scale}): {done}/{total} units stored")
    return 0 if done == total else 1


if __name__ == "__main__":
    raise SystemExit(main())
