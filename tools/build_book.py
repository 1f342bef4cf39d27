"""``make book``: compute the experiments first, then build the pages; say plainly what failed.

1. **Experiments** (``python -m genbounds reproduce --scale quick``, in one single-threaded
   process per CPU core, each with its share of the studies; each process's progress bars are in
   ``_build/logs/experiments-<i>.log``): every registered study is computed unit by unit into
   the results store
   (``results/quick/``). A unit that is stored is loaded, so an interrupted build resumes where
   it stopped, and the notebooks then only *load* their results: no cell of the book runs for
   many minutes in silence or against MyST-NB's cell timeout. At paper scale
   (``GENBOUNDS_SCALE=paper``) nothing is computed here: the pages show what ``make
   results-paper`` stored (hours; see the performance page).
2. **Pages executed** in ``--jobs`` processes at once (one kernel each, one thread each): every
   notebook of the table of contents is read as MyST-NB reads it, executed afresh (the execution
   cache is emptied first) and its outputs stored in MyST-NB's execution cache
   (``_build/.jupyter_cache``). Sphinx cannot do this itself: its parallel reading needs every
   extension to merge its data, and sphinx-proof's domain does not.
3. **Pages built** (``jupyter-book build . --all -W -n --keep-going``, with MyST-NB in ``cache``
   mode for this build only: ``_config.yml`` keeps ``force``, so a bare ``jupyter-book build``
   still executes everything): each page takes the outputs just computed; a page whose
   execution failed above is executed again here, and its error is reported as before.
   The output is streamed, less two lines of known noise (ipykernel's warning that a kernel on
   this machine talks to its client over local TCP, and MyST's one-line dump of its parser
   configuration), and kept whole in ``_build/logs/book.log``.
4. **If anything fails**, the last lines name the chapter, the failing cell (its first lines) and
   the error (a cell timeout is named as such, not as the ``ZMQError`` that follows it), and say
   that rerunning resumes.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

#: Lines dropped from the streamed output (all are kept in the log file), each with its reason.
NOISE = (
    # ipykernel >= 7 warns on every kernel start that its (loopback) TCP sockets are unencrypted
    re.compile(r"Kernel is running over TCP without encryption"),
    # myst-parser and myst-nb log their whole configuration objects, one line each, at start-up
    # (after terminal colour codes)
    re.compile(r"myst(-nb)? v[\d.]+:\S* (Md|Nb)ParserConfig\("),
)
PROGRESS_EVERY_S = 30.0
RESUME = ("Rerun `make book` to resume: finished experiment units are stored in results/ and "
          "are loaded, not recomputed; only what is missing runs again.")


def is_noise(line: str) -> bool:
    return any(p.search(line) for p in NOISE)


def stream(cmd: list[str], log: Path, env: dict[str, str]) -> tuple[int, list[str]]:
    """Run ``cmd``, print its output less the noise, keep all of it in ``log``; return the exit
    status and the last 400 lines."""
    log.parent.mkdir(parents=True, exist_ok=True)
    tail: list[str] = []
    with log.open("w") as fh, subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            bufsize=1) as proc:
        assert proc.stdout is not None  # sanity: stdout=PIPE
        for line in proc.stdout:
            fh.write(line)
            tail = [*tail[-399:], line.rstrip("\n")]
            if not is_noise(line):
                sys.stdout.write(line)
                sys.stdout.flush()
        return proc.wait(), tail


_CELL = re.compile(r"An error occurred while executing the following cell:\n-+\n(.*?)\n-+\n",
                   re.S)
_CHAPTER = re.compile(r"ExecutionError: (\S+\.(?:md|ipynb))")
_SAVED = re.compile(r"traceback has been saved in (\S+\.log)")


def failure_summary(log_text: str, reports: Iterable[Path] = ()) -> list[str]:
    """Lines naming the failed chapter, its failing cell and the error, read from the build log
    (MyST-NB raises ``ExecutionError(<notebook>)`` from nbclient's ``CellExecutionError``, whose
    message holds the cell; Sphinx may save the full traceback to a file it names) and from
    MyST-NB's per-notebook reports when execution errors are not raised."""
    texts = [log_text]
    for m in _SAVED.finditer(log_text):
        path = Path(m.group(1))
        if path.is_file():
            texts.append(path.read_text(errors="replace"))
    texts += [rep.read_text(errors="replace") for rep in sorted(reports)]
    text = "\n".join(texts)
    chapters = list(dict.fromkeys(_CHAPTER.findall(text)))
    chapters += [f"{rep.parent.name}/{rep.name.removesuffix('.err.log')}" for rep in reports]
    out = [f"FAILED chapter: {Path(c).relative_to(ROOT) if Path(c).is_relative_to(ROOT) else c}"
           for c in chapters] or ["FAILED: the page build stopped (no notebook failed to run)"]
    cells = _CELL.findall(text)
    if cells:
        cell = cells[-1].strip().splitlines()
        out.append("  failing cell begins:")
        out += [f"    {ln}" for ln in cell[:4]]
        if len(cell) > 4:
            out.append(f"    ... ({len(cell) - 4} more lines)")
    if "CellTimeoutError" in text or "Cell execution timed out" in text:
        out.append("  error: the cell ran past MyST-NB's cell timeout (execute.timeout in "
                   "_config.yml)")
    else:
        errors = [ln.strip() for ln in text.splitlines()
                  if re.match(r"^(\w+\.)*\w*(Error|Exception)\b", ln.strip())
                  and not ln.strip().startswith(("ExecutionError", "CellExecutionError"))]
        warns = [ln.strip() for ln in text.splitlines() if re.search(r"WARNING|ERROR", ln)]
        if errors:
            out.append(f"  error: {errors[-1][:300]}")
        elif warns:
            out += ["  last warnings:", *[f"    {w[:300]}" for w in warns[-6:]]]
    return out


def experiment_groups(workers: int) -> list[list[str]]:
    """The registered experiments split into ``workers`` groups of similar stored cost (longest
    first, each to the group with the least so far; an experiment never measured counts as the
    mean), so that the groups finish at about the same time."""
    import genbounds.experiments  # noqa: F401  (registers every study)
    from genbounds.experiments.registry import registered_experiments

    names = [e.name for e in registered_experiments()]
    cost = {n: float(COST_HINT.get(n, 1.0)) for n in names}
    groups: list[list[str]] = [[] for _ in range(max(1, min(workers, len(names))))]
    load = [0.0] * len(groups)
    for n in sorted(names, key=lambda n: -cost[n]):
        i = load.index(min(load))
        groups[i].append(n)
        load[i] += cost[n]
    return [g for g in groups if g]


#: Relative quick-scale cost of each study (CPU seconds on an idle 2-core machine, one thread,
#: rounded from the runs of 2026-11-26); only used to balance the workers.
COST_HINT = {"comparison": 300, "certificates": 200, "offset_rademacher": 180,
             "sparse_majority": 140, "shallow_gd": 120, "effective_rank": 90,
             "offset_rademacher_complexity": 30}


def run_experiments(env: dict[str, str], logs: Path, workers: int) -> tuple[int, list[str]]:
    """``reproduce --scale quick`` in ``workers`` processes of one thread each (the results
    store's per-unit locks make them safe together; one thread each, because torch's threads
    fight over the cores when several processes run); returns the first failure's status and
    log tail."""
    groups = experiment_groups(workers)
    wenv = {**env, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    procs = []
    for i, group in enumerate(groups):
        log = logs / f"experiments-{i + 1}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        print(f"   worker {i + 1}: {', '.join(group)} (log: {log})", flush=True)
        fh = log.open("w")
        procs.append((subprocess.Popen(
            [str(BIN / "python"), "-m", "genbounds", "reproduce", "--scale", "quick", "--only",
             *group], cwd=ROOT, env=wenv, stdout=fh, stderr=subprocess.STDOUT, text=True),
            fh, log))
    last: dict[int, str] = {}
    while any(p.poll() is None for p, _, _ in procs):  # a progress line per worker, when it moves
        time.sleep(PROGRESS_EVERY_S)
        for i, (p, _, log) in enumerate(procs):
            text = log.read_text(errors="replace").replace("\r", "\n")
            bars = [ln.strip() for ln in text.splitlines()
                    if ln.strip().startswith(("units:", "["))]
            if bars and bars[-1] != last.get(i) and p.poll() is None:
                last[i] = bars[-1]
                print(f"   worker {i + 1}: {bars[-1][:150]}", flush=True)
    status, tail = 0, []
    for proc, fh, log in procs:
        rc = proc.wait()
        fh.close()
        lines = log.read_text(errors="replace").replace("\r", "\n").splitlines()
        done = [ln for ln in lines if "] done in" in ln]
        print("\n".join(f"   {ln.strip()[:200]}" for ln in done), flush=True)
        if rc != 0 and status == 0:
            status, tail = rc, [*lines[-15:], f"full log: {log}"]
    return status, tail


#: ``jupyter-book build`` with MyST-NB's execution mode set to ``cache`` for this build (the
#: command line has no option for it; ``_config.yml`` keeps ``force``).
_JB_CACHED = ("import sys\n"
              "import jupyter_book.sphinx as jbs\n"
              "from jupyter_book.cli.main import main\n"
              "build = jbs.build_sphinx\n"
              "def cached(*args, **kwargs):\n"
              "    kwargs['confoverrides'] = {**(kwargs.get('confoverrides') or {}),\n"
              "                               'nb_execution_mode': 'cache'}\n"
              "    return build(*args, **kwargs)\n"
              "jbs.build_sphinx = cached\n"
              "sys.exit(main(sys.argv[1:]))")
BOOK_ARGS = ["build", ".", "--all", "-W", "-n", "--keep-going"]
CACHE = ROOT / "_build" / ".jupyter_cache"  # jupyter-book's default execution cache


def cell_timeout(config: Path = ROOT / "_config.yml") -> int:
    """The cell timeout of ``_config.yml`` (``execute: timeout``), which the build also uses."""
    import yaml

    return int(yaml.safe_load(config.read_text())["execute"]["timeout"])


def notebook_pages(toc: Path = ROOT / "_toc.yml") -> list[Path]:
    """The pages of the table of contents that MyST-NB executes (MyST Markdown notebooks)."""
    import colab  # tools/colab.py (tools/ is on sys.path when this file runs as a script)
    from myst_nb.core.read import is_myst_markdown_notebook

    pages = [ROOT / f"{doc}.md" for doc in colab.toc_docnames(toc)]
    return [p for p in pages if p.exists() and is_myst_markdown_notebook(p.read_text("utf8"))]


def _worker_init(env: dict[str, str], log: str) -> None:
    """A page worker: ``env`` for its kernels; their stderr (ipykernel's start-up warnings) to
    ``log`` instead of the terminal (an execution error comes back as the result)."""
    os.environ.update(env)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 2)
    os.close(fd)


def _execute_one(path: str, timeout: int) -> tuple[str, str | None, float, str]:
    """Execute one page as MyST-NB would (read by its reader, run in the page's folder);
    return ``(path, executed notebook as JSON or None, seconds, error text)``."""
    import nbformat
    from jupyter_cache.executors.utils import single_nb_execution
    from myst_nb.core.read import read_myst_markdown_notebook

    nb = read_myst_markdown_notebook(Path(path).read_text("utf8"), add_source_map=True,
                                     path=path)
    res = single_nb_execution(nb, cwd=str(Path(path).parent), timeout=timeout,
                              allow_errors=False, meta_override=True)
    if res.err is not None:
        return path, None, res.time, res.exc_string or repr(res.err)
    return path, nbformat.writes(nb), res.time, ""


def execute_pages(pages: list[Path], jobs: int, env: dict[str, str], log: Path,
                  cache_dir: Path = CACHE, timeout: int = 1800) -> list[str]:
    """Execute ``pages`` in ``jobs`` processes and store each executed notebook in MyST-NB's
    execution cache (emptied first), the longest pages first; return the failures' lines."""
    import shutil
    from concurrent.futures import ProcessPoolExecutor, as_completed

    import nbformat
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    shutil.rmtree(cache_dir, ignore_errors=True)
    cache = get_cache(str(cache_dir))
    failures: list[str] = []
    order = sorted(pages, key=lambda p: -p.stat().st_size)  # a rough guess of the longest first
    # each worker's kernels inherit ``env`` (scale, results store, one thread each)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    with ProcessPoolExecutor(max_workers=jobs, initializer=_worker_init,
                             initargs=(env, str(log))) as pool:
        futures = [pool.submit(_execute_one, str(p), timeout) for p in order]
        for fut in as_completed(futures):
            path, text, seconds, err = fut.result()
            name = Path(path).relative_to(ROOT) if Path(path).is_relative_to(ROOT) else path
            if text is None:
                failures.append(f"  {name}: failed after {seconds:.0f} s: "
                                f"{err.strip().splitlines()[-1] if err.strip() else '?'}")
                print(f"   {name}: FAILED after {seconds:.1f} s (built again below)", flush=True)
                continue
            cache.cache_notebook_bundle(
                CacheBundleIn(nbformat.reads(text, as_version=4), str(Path(path).resolve()),
                              data={"execution_seconds": seconds}),
                check_validity=False, overwrite=True)
            print(f"   {name}: executed in {seconds:.1f} s", flush=True)
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "_build")
    parser.add_argument("--skip-experiments", action="store_true",
                        help="build the pages only (the notebooks compute what is missing)")
    parser.add_argument("--workers", type=int, default=max(1, min(4, os.cpu_count() or 1)),
                        help="processes computing the experiments (default: the CPU count, "
                             "at most 4)")
    parser.add_argument("--jobs", type=int, default=max(1, min(4, os.cpu_count() or 1)),
                        help="processes executing the pages, one thread each (default: the "
                             "CPU count, at most 4)")
    args = parser.parse_args(argv)
    if args.jobs < 1 or args.workers < 1:
        parser.error("--jobs and --workers must be at least 1")
    env = dict(os.environ)
    scale = env.get("GENBOUNDS_SCALE", "quick") or "quick"
    logs = args.out / "logs"
    if args.skip_experiments:
        pass
    elif scale == "quick":
        print(f"== make book 1/3: the experiments at quick scale in {args.workers} worker(s) "
              "(stored units are loaded)", flush=True)
        rc, tail = run_experiments(env, logs, args.workers)
        if rc != 0:
            print("\n".join(["", "== make book FAILED while computing the experiments:",
                             *[f"  {ln}" for ln in tail], RESUME]), flush=True)
            return rc
    else:
        print(f"== make book 1/3: scale {scale!r}: nothing is computed here; the chapters show "
              "the stored results (compute them with `make results-paper`)", flush=True)
    pages = notebook_pages()
    print(f"== make book 2/3: executing the {len(pages)} notebook pages afresh, {args.jobs} at "
          "a time", flush=True)
    t0 = time.perf_counter()
    kernel_env = ({**env, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"} if args.jobs > 1
                  else env)
    failed = execute_pages(pages, args.jobs, kernel_env, logs / "pages.log",
                           timeout=cell_timeout())
    print(f"   {len(pages) - len(failed)} of {len(pages)} executed in "
          f"{time.perf_counter() - t0:.0f} s" + ("; failed:" if failed else ""), flush=True)
    if failed:
        print("\n".join(failed), flush=True)
    print("== make book 3/3: the pages, with the outputs just computed", flush=True)
    reports = args.out / "html" / "reports"
    for old in reports.rglob("*.err.log") if reports.exists() else []:
        old.unlink()
    rc, _ = stream([str(BIN / "python"), "-c", _JB_CACHED, *BOOK_ARGS], logs / "book.log",
                   env)
    if rc != 0:
        lines = failure_summary((logs / "book.log").read_text(errors="replace"),
                                list(reports.rglob("*.err.log")) if reports.exists() else [])
        print("\n".join(["", "== make book FAILED:", *lines,
                         f"  full log: {logs / 'book.log'}", RESUME]), flush=True)
        return rc
    print(f"Book: {args.out / 'html' / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
