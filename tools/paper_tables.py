"""The performance page's paper-scale tables, made at build time: ``{{ paper_units }}``.

Sphinx extension (loaded from ``_config.yml``). For every registered study at paper scale it
reads the results store (how many units are stored, how many of those were made by code that
changed since, how many are missing) and asks the estimator (:mod:`genbounds.estimates`, the
same call ``python -m genbounds reproduce`` makes) what the missing units cost on the machine
that builds the book: the time, calibrated on the stored units that ran on the same kind of
device when there are any (the table says whether), and the peak memory of one unit. So the
page cannot disagree with the store or the estimator (issue #25 §4). The stored units' own
wall times are on the instructors' page (``{{ study_times_paper }}``), the book's one source of
times.

The estimator times the training engine for a few seconds per study; it runs in a subprocess
(one torch thread, like ``make book``'s workers), not in Sphinx's own process::

    python tools/paper_tables.py            # print the table (Markdown)
    python tools/paper_tables.py --json     # the rows, as the extension reads them

If the subprocess fails, the build fails (a Sphinx warning, an error under ``-W``), naming why.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 1800


def _duration(minutes: float) -> str:
    if minutes < 1:
        return "under a minute"
    if minutes < 120:
        return f"{minutes:.0f} min"
    if minutes < 48 * 60:
        return f"{minutes / 60:,.1f} hours"
    return f"{minutes / 1440:,.0f} days"


def rows(scale: str = "paper", store: Any = None,
         names: list[str] | None = None) -> list[dict[str, Any]]:
    """One row per registered study (or per study in ``names``): units, stored, stale, missing,
    and the estimate of the missing ones (minutes, the number of stored units it is calibrated
    on, an upper bound or not) with its peak memory. ``store``: the book's by default."""
    import torch

    torch.set_num_threads(1)
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
            "missing": len(missing), "minutes": None, "calibrated_on": 0,
            "upper_bound": False, "peak_gib": None}
        if missing:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                per = estimates.unit_estimates(exp.name, cfg, store)
                whole = (exp.estimate(cfg) if exp.estimate is not None
                         else estimates.estimate(exp.name, cfg))
            if per is not None:
                row["minutes"] = sum(per.seconds[i] for i in missing) / 60.0
                row["calibrated_on"] = 0 if per.calibration is None else per.calibration.n
            if whole is not None:
                row["peak_gib"] = whole.peak_bytes / 2**30
                row["upper_bound"] = "UPPER BOUND" in whole.note
        out.append(row)
    return out


def table(data: list[dict[str, Any]], load: str) -> str:
    """The MyST table of :func:`rows`, with a line saying where and when it was estimated."""
    from study_times import TITLE  # the studies in words, as the instructors' page names them

    lines = ["| study | units stored | estimated time of the missing units, here "
             "| peak memory of a unit |", "|---|---|---|---|"]
    for r in data:
        stored = f"{r['stored']} of {r['units']}"
        if r["stale"]:
            stored += f", {r['stale']} stale"
        if not r["missing"]:
            cost, peak = "nothing to compute", "—"
        elif r["minutes"] is None:
            cost, peak = f"{r['missing']} missing: no estimate", "—"
        else:
            n = r["calibrated_on"]
            how = (f"calibrated on {n} stored unit{'s' * (n != 1)}" if n
                   else "not calibrated")
            cost = (f"{r['missing']} missing: " + ("at most " if r["upper_bound"] else "")
                    + f"{_duration(r['minutes'])} ({how})")
            peak = "—" if r["peak_gib"] is None else f"{r['peak_gib']:.1f} GiB"
        lines.append(f"| {TITLE.get(r['study'], r['study'])} | {stored} | {cost} | {peak} |")
    return (f"Estimated while this book was built, {load}.\n\n" + "\n".join(lines) + "\n")


def _load() -> str:
    try:
        one, five, _ = os.getloadavg()
    except OSError:  # pragma: no cover (not on Linux or macOS)
        return f"on {os.cpu_count()} CPU cores, load unknown"
    return f"on {os.cpu_count()} CPU cores at load average {one:.1f} (5 min: {five:.1f})"


def compute(scale: str = "paper") -> list[dict[str, Any]]:
    """:func:`rows` in a subprocess with one torch thread; RuntimeError naming the failure."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    res = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--json",
                          "--scale", scale], capture_output=True, text=True, env=env,
                         timeout=TIMEOUT_S, cwd=ROOT)
    if res.returncode != 0:
        tail = (res.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"tools/paper_tables.py --json exited {res.returncode}: {tail}")
    data: list[dict[str, Any]] = json.loads(res.stdout)
    return data


def _package_root() -> Path:
    """The checkout whose ``src/genbounds`` is imported (the student edition builds from a copy
    of ``tools/``, but reads the same store)."""
    import importlib.util

    spec = importlib.util.find_spec("genbounds")
    if spec is None or spec.origin is None:
        return ROOT
    return Path(spec.origin).resolve().parents[2]


def _state_key(root: Path) -> str:
    """A hash of what the table depends on: every stored paper record (name, size, time), the
    package's source and the tools that write the table (this file, and ``study_times.py``'s
    study titles). Rates are measured now, so a cached table also expires (:data:`CACHE_S`)."""
    import hashlib

    h = hashlib.sha256()
    for path in sorted((root / "results" / "paper").rglob("*.json")):
        st = path.stat()
        h.update(f"{path.relative_to(root)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    for path in sorted((root / "src" / "genbounds").rglob("*.py")):
        h.update(path.read_bytes())
    for path in (Path(__file__).resolve(), Path(__file__).resolve().with_name("study_times.py")):
        h.update(path.read_bytes())
    return h.hexdigest()


#: A table made by an earlier build (``make book`` then ``make student`` or ``make pdf``) is
#: reused for this long when neither the store nor the package changed since.
CACHE_S = 6 * 3600


def cached_table() -> str:
    """:func:`table` of :func:`compute`, reused from ``_build/.paper_tables.json`` when the
    store and the package are unchanged and it is younger than :data:`CACHE_S`."""
    import time

    root = _package_root()
    cache = root / "_build" / ".paper_tables.json"
    key = _state_key(root)
    try:
        old = json.loads(cache.read_text())
        if old["key"] == key and time.time() - old["made"] < CACHE_S:
            return str(old["table"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    text = table(compute("paper"), _load())
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps({"key": key, "made": time.time(), "table": text}))
    except OSError:
        pass
    return text


def _set(app: Any, config: Any) -> None:
    from sphinx.util import logging

    subs = dict(getattr(config, "myst_substitutions", {}) or {})
    if "paper_units" not in subs:
        try:
            subs["paper_units"] = cached_table()
        except (RuntimeError, subprocess.TimeoutExpired, ValueError) as exc:
            logging.getLogger(__name__).warning(f"paper_tables: {exc}")
            subs["paper_units"] = f"*(the paper-scale table could not be made: {exc})*"
    config.myst_substitutions = subs


def setup(app: Any) -> dict[str, Any]:
    app.connect("config-inited", _set)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", default="paper")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    data = rows(args.scale)
    print(json.dumps(data, indent=1) if args.json else table(data, _load()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
