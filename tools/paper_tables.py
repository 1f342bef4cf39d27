"""The paper-scale page's generated tables: ``{{ paper_units }}`` (with ``tools/paper_next.py``).

Sphinx extension (loaded from ``_config.yml``). For every registered study at paper scale it
reads the results store (how many units are stored, how many of those were made by code that
changed since, the wall time and device the stored units recorded, how many are missing) and
asks the estimator (:mod:`genbounds.estimates`, the same calls ``python -m genbounds
reproduce`` makes) what the missing units cost on the machine that builds the book, calibrated
on the stored units that ran on the same kind of device when there are any, with the peak
memory of one unit, and what they cost on a GPU, extrapolated from the study's stored GPU units
(:func:`paper_next.gpu_extrapolation`). So the page cannot disagree with the store or the
estimator.

This module makes the rows once per build, for both substitutions: ``{{ paper_units }}`` here,
``{{ paper_next }}`` and ``{{ sparse_majority_record }}`` in ``tools/paper_next.py``. The
estimator times the training engine for a few seconds per study, so the rows are made in a
subprocess (one torch thread, like ``make book``'s workers), not in Sphinx's own process, and
cached in ``_build/.paper_tables.json`` while the store, the package and these tools are
unchanged (:func:`cached_data`)::

    python tools/paper_tables.py            # print the tables (Markdown)
    python tools/paper_tables.py --json     # the data, as the extensions read it

If the subprocess fails, the build fails (a Sphinx warning, an error under ``-W``), naming why.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 1800
#: The files of ``tools/`` whose code shapes the cached data.
TOOLS = ("paper_tables.py", "paper_next.py", "study_times.py")


def duration(seconds: float) -> str:
    """``'under a minute'``, ``'14 min'``, ``'3.2 hours'``, ``'5 days'``."""
    minutes = seconds / 60.0
    if minutes < 1:
        return "under a minute"
    if minutes < 120:
        return f"{minutes:.0f} min"
    if minutes < 48 * 60:
        return f"{minutes / 60:,.1f} hours"
    return f"{minutes / 1440:,.0f} days"


def rows(scale: str = "paper", store: Any = None,
         names: list[str] | None = None) -> list[dict[str, Any]]:
    """One row per registered study (or per study in ``names``). ``store``: the book's by
    default. Keys: ``units``, ``stored``, ``stale``, ``missing``; ``recorded_s`` and
    ``recorded_on`` (the stored units' wall times, summed, and their devices in words); for
    the missing units ``here_s`` (estimated seconds on this machine, None: no estimate),
    ``calibrated_on`` (how many stored units calibrate it), ``upper_bound``, ``peak_gib`` (one
    unit's peak memory) and ``gpu`` (:func:`paper_next.gpu_extrapolation`)."""
    import torch

    torch.set_num_threads(1)
    from paper_next import gpu_extrapolation
    from study_times import _device

    from genbounds import estimates
    from genbounds.experiments.registry import registered_experiments, stored_units
    from genbounds.results import ResultStore

    store = ResultStore(namespace=scale) if store is None else store
    out = []
    for exp in registered_experiments():
        if names is not None and exp.name not in names:
            continue
        cfg = exp.config(scale)
        su = stored_units(exp, scale, config=cfg, store=store, warn=False)
        missing = [i for i, r in enumerate(su.results) if r is None]
        row: dict[str, Any] = {
            "study": exp.name, "chapter": exp.chapter, "units": len(su.units),
            "stored": len(su.present), "stale": sum(bool(r.stale) for r in su.present),
            "missing": len(missing),
            "recorded_s": float(sum(float(r.wall_time_s) for r in su.present)),
            "recorded_on": sorted({_device(str(r.device)) for r in su.present}),
            "here_s": None, "calibrated_on": 0, "upper_bound": False, "peak_gib": None,
            "gpu": None, "estimated": [
                (_device(str(r.device)), float(r.wall_time_s),
                 float(r.provenance.estimate["seconds"]))
                for r in su.present if r.provenance.estimate is not None]}
        if missing:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pred = estimates.predicted_unit_seconds(exp.name, cfg, store)
                whole = (exp.estimate(cfg) if exp.estimate is not None
                         else estimates.estimate(exp.name, cfg))
            if pred is not None and len(pred) == len(su.units):
                cal = estimates.calibration(exp.name, cfg, store, pred)
                here = [cal(s) if cal is not None else s for s in pred]
                row["here_s"] = float(sum(here[i] for i in missing))
                row["calibrated_on"] = 0 if cal is None else cal.n
                stored = [(i, str(r.device), float(r.wall_time_s))
                          for i, r in enumerate(su.results) if r is not None]
                row["gpu"] = gpu_extrapolation(pred, stored, missing)
            if whole is not None:
                row["peak_gib"] = whole.peak_bytes / 2**30
                row["upper_bound"] = "UPPER BOUND" in whole.note
        out.append(row)
    return out


def _units(n: int) -> str:
    return f"{n} unit{'s' * (n != 1)}"


def table(data: list[dict[str, Any]], load: str) -> str:
    """The MyST table of :func:`rows`, with a line saying where and when it was estimated."""
    from study_times import TITLE  # the studies in words, as the instructors' page names them

    lines = ["| study | units stored | their recorded wall time | the missing units, here "
             "| peak memory of a unit |", "|---|---|---|---|---|"]
    for r in data:
        stored = f"{r['stored']} of {r['units']}"
        if r["stale"]:
            stored += f", {r['stale']} made by changed code"
        recorded = (f"{duration(r['recorded_s'])} on {'; '.join(r['recorded_on'])}"
                    if r["stored"] else "—")
        peak = "—"
        if not r["missing"]:
            cost = "nothing to compute"
        elif r["here_s"] is None:
            cost = f"{r['missing']}: no estimate"
            if r["peak_gib"] is not None:
                peak = f"{r['peak_gib']:.1f} GiB"
        else:
            n = r["calibrated_on"]
            how = f"calibrated on {_units(n)}" if n else "not calibrated"
            cost = (f"{r['missing']}: " + ("at most " if r["upper_bound"] else "about ")
                    + f"{duration(r['here_s'])} ({how})")
            if r["peak_gib"] is not None:
                peak = f"{r['peak_gib']:.1f} GiB"
        lines.append(f"| {TITLE.get(r['study'], r['study'])} | {stored} | {recorded} | {cost} "
                     f"| {peak} |")
    return (f"Estimated while this book was built, {load}.\n\n" + "\n".join(lines) + "\n\n"
            + estimate_check(data))


def estimate_check(data: list[dict[str, Any]]) -> str:
    """Measured / estimated time of the stored units that recorded their estimate (made before
    they ran, on the machine that ran them), per study and device, as a Markdown list."""
    from study_times import TITLE

    items = []
    for r in data:
        by_device: dict[str, list[float]] = {}
        for device, measured, estimated in r.get("estimated", []):
            by_device.setdefault(device, []).append(measured / estimated)
        for device, ratios in sorted(by_device.items()):
            ratios.sort()
            within = sum(0.5 <= x <= 2.0 for x in ratios)
            spread = (f"{ratios[0]:.2f}" if len(ratios) == 1
                      else f"{ratios[0]:.2f} to {ratios[-1]:.2f}")
            items.append(f"- {TITLE.get(r['study'], r['study'])}, {device}: "
                         f"{_units(len(ratios))}, measured / estimated {spread} "
                         f"({within} within a factor 2)")
    head = ("How the estimates did: every unit stored since 2026-11-29 records the estimate "
            "made before it ran.")
    if not items:
        return head + " No stored unit records one yet.\n"
    return head + "\n\n" + "\n".join(items) + "\n"


def load_text() -> str:
    """The machine's cores and load, in words."""
    try:
        one, five, _ = os.getloadavg()
    except OSError:  # pragma: no cover (not on Linux or macOS)
        return f"on {os.cpu_count()} CPU cores, load unknown"
    return f"on {os.cpu_count()} CPU cores at load average {one:.1f} (5 min: {five:.1f})"


def make_data(scale: str = "paper") -> dict[str, Any]:
    """Everything the two extensions show: the rows, the sparse-majority sentence, the load."""
    from paper_next import sparse_majority_record

    return {"rows": rows(scale), "sparse_majority_record": sparse_majority_record(),
            "load": load_text()}


def compute(scale: str = "paper") -> dict[str, Any]:
    """:func:`make_data` in a subprocess with one torch thread; RuntimeError naming the failure."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    res = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--json",
                          "--scale", scale], capture_output=True, text=True, env=env,
                         timeout=TIMEOUT_S, cwd=ROOT)
    if res.returncode != 0:
        tail = (res.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"tools/paper_tables.py --json exited {res.returncode}: {tail}")
    out: dict[str, Any] = json.loads(res.stdout)
    return out


def _package_root() -> Path:
    """The checkout whose ``src/genbounds`` is imported (the student edition builds from a copy
    of ``tools/``, but reads the same store)."""
    import importlib.util

    spec = importlib.util.find_spec("genbounds")
    if spec is None or spec.origin is None:
        return ROOT
    return Path(spec.origin).resolve().parents[2]


def _state_key(root: Path) -> str:
    """A hash of what the data depend on: every stored paper record (name, size, time), the
    package's source and the tools that make the tables (:data:`TOOLS`). Rates are measured
    now, so cached data also expire (:data:`CACHE_S`)."""
    import hashlib

    h = hashlib.sha256()
    for path in sorted((root / "results" / "paper").rglob("*.json")):
        st = path.stat()
        h.update(f"{path.relative_to(root)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    for path in sorted((root / "src" / "genbounds").rglob("*.py")):
        h.update(path.read_bytes())
    for name in TOOLS:
        h.update((Path(__file__).resolve().parent / name).read_bytes())
    return h.hexdigest()


#: Data made by an earlier build (``make book`` then ``make student`` or ``make pdf``) are
#: reused for this long when neither the store nor the package changed since.
CACHE_S = 6 * 3600


@functools.lru_cache(maxsize=1)
def cached_data() -> dict[str, Any]:
    """:func:`compute`, made once per process and reused from ``_build/.paper_tables.json``
    while the store, the package and the tools are unchanged and younger than
    :data:`CACHE_S`."""
    import time

    root = _package_root()
    cache = root / "_build" / ".paper_tables.json"
    key = _state_key(root)
    try:
        old = json.loads(cache.read_text())
        if old["key"] == key and time.time() - old["made"] < CACHE_S:
            return dict(old["data"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    made = compute("paper")
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps({"key": key, "made": time.time(), "data": made}))
    except OSError:
        pass
    return made


#: What a failure to make the data raises.
FAILURES = (RuntimeError, subprocess.TimeoutExpired, ValueError)


def _set(app: Any, config: Any) -> None:
    from sphinx.util import logging

    subs = dict(getattr(config, "myst_substitutions", {}) or {})
    if "paper_units" not in subs:
        try:
            made = cached_data()
            subs["paper_units"] = table(made["rows"], made["load"])
        except FAILURES as exc:
            logging.getLogger(__name__).warning(f"paper_tables: {exc}")
            subs["paper_units"] = f"*(the paper-scale table could not be made: {exc})*"
    config.myst_substitutions = subs


def setup(app: Any) -> dict[str, Any]:
    app.connect("config-inited", _set)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", default="paper")
    parser.add_argument("--json", action="store_true", help="print the data as JSON")
    args = parser.parse_args(argv)
    made = make_data(args.scale)
    if args.json:
        print(json.dumps(made, indent=1))
    else:
        from paper_next import table as next_table

        print(table(made["rows"], made["load"]))
        print(next_table(made["rows"], made["load"]))
        print(made["sparse_majority_record"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
