"""What to compute next at paper scale, made from the results store at build time.

Sphinx extension (loaded from ``_config.yml``) for the paper-scale page. Two substitutions:

``{{ paper_next }}``
    One row per registered study that still has paper-scale units missing, cheapest first
    (the order in which a lent GPU finishes whole studies): how many units are missing, what
    they would cost **on a GPU**, extrapolated from the study's own stored units that ran on
    one (their recorded wall times against the per-unit cost model of
    :mod:`genbounds.estimates`, fitted as the estimator calibrates), and what they cost on the
    machine that builds the book (the estimate ``python -m genbounds reproduce`` prints). A
    study with every unit stored is named under the table, not listed. Nothing is written by
    hand: a unit computed since the last build leaves the list by itself.
``{{ sparse_majority_record }}``
    What the stored sparse-majority paper unit (the authors' protocol) records: its runs, their
    total wall time and devices; or that it is not stored.

The rows are the ones ``tools/paper_tables.py`` makes for ``{{ paper_units }}``, made once per
build for both (:func:`paper_tables.cached_data`)::

    python tools/paper_tables.py            # print every table (Markdown)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from paper_tables import duration


def gpu_extrapolation(predicted: Sequence[float], stored: Sequence[tuple[int, str, float]],
                      missing: Sequence[int]) -> dict[str, Any] | None:
    """The seconds of the ``missing`` units on a GPU, from the stored units that ran on one.

    ``predicted``: the cost model's seconds of every unit (any machine: only their ratios
    matter); ``stored``: ``(unit index, device, recorded wall time)`` of the stored units. The
    GPU model with the most stored units is used; ``measured ~ scale * predicted ** exponent``
    is fitted on them (:func:`genbounds.estimates.fit_calibration`) and applied to the missing
    units. None when no stored unit ran on a GPU."""
    from genbounds.estimates import fit_calibration

    gpu = [(i, dev, wall) for i, dev, wall in stored
           if dev.startswith("cuda") and wall > 0 and predicted[i] > 0]
    if not gpu:
        return None
    device = Counter(dev for _, dev, _ in gpu).most_common(1)[0][0]
    used = [(i, wall) for i, dev, wall in gpu if dev == device]
    cal = fit_calibration([predicted[i] for i, _ in used], [wall for _, wall in used])
    return {"seconds": float(sum(cal(predicted[i]) for i in missing if predicted[i] > 0)),
            "device": device, "calibrated_on": len(used),
            "unestimated": sum(1 for i in missing if predicted[i] <= 0)}


def _gpu_name(device: str) -> str:
    """``cuda (NVIDIA H100 80GB HBM3), torch 2.11.0+cu130`` -> ``NVIDIA H100 80GB HBM3``."""
    if "(" in device and ")" in device:
        return device[device.index("(") + 1:device.index(")")]
    return device.split(",")[0]


def order(data: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The studies with missing units, cheapest first: by the GPU extrapolation where there is
    one, then (those without) by the estimate on this machine; unestimated ones last."""
    todo = [r for r in data if r["missing"]]

    def key(r: dict[str, Any]) -> tuple[int, float]:
        if r["gpu"] is not None:
            return 0, r["gpu"]["seconds"]
        if r["here_s"] is not None:
            return 1, r["here_s"]
        return 2, 0.0
    return sorted(todo, key=key)


def table(data: Sequence[dict[str, Any]], load: str) -> str:
    """The MyST text of ``{{ paper_next }}``: the ordered table, then the complete studies."""
    from study_times import TITLE  # the studies in words, as the instructors' page names them

    todo = order(data)
    done = [r for r in data if not r["missing"]]
    lines = []
    if todo:
        lines += ["| study | units missing | on a GPU, from its stored GPU units "
                  "| on the machine that built this book |", "|---|---|---|---|"]
        for r in todo:
            g = r["gpu"]
            if g is None:
                gpu = "no unit of it has run on a GPU: no extrapolation"
            else:
                gpu = (f"about {duration(g['seconds'])} (fitted on {g['calibrated_on']} "
                       f"unit{'s' * (g['calibrated_on'] != 1)} stored from "
                       f"{_gpu_name(g['device'])})")
                if g["unestimated"]:
                    gpu += f", {g['unestimated']} not estimated"
            if r["here_s"] is None:
                here = "no estimate"
            else:
                n = r["calibrated_on"]
                here = duration(r["here_s"]) + (
                    f" (calibrated on {n} stored unit{'s' * (n != 1)})" if n
                    else " (not calibrated)")
            lines.append(f"| {TITLE.get(r['study'], r['study'])} | "
                         f"{r['missing']} of {r['units']} | {gpu} | {here} |")
        head = (f"Made while this book was built, {load}, from the results store: every study "
                "with paper-scale units missing, cheapest first (by the GPU time where a unit "
                "of the study has run on a GPU). The GPU column extrapolates the study's own "
                "stored GPU units (their recorded wall times, which include any sharing of "
                "the GPU at the time, against the cost model's per-unit estimates), so it is "
                "only as good as those units are representative of the missing ones.\n\n")
    else:
        head = "Every study's paper-scale units are stored: nothing is left to compute.\n\n"
    tail = ""
    if done and todo:
        tail = ("\n\nComplete at paper scale: "
                + "; ".join(f"{TITLE.get(r['study'], r['study'])} ({r['stored']} of "
                            f"{r['units']} unit{'s' * (r['units'] != 1)})" for r in done)
                + ".")
    return head + "\n".join(lines) + tail + "\n"


def sparse_majority_record(store: Any = None) -> str:
    """One sentence on the stored sparse-majority paper unit: its runs, their total wall time
    and devices, from its provenance (or that it is not stored)."""
    from genbounds.experiments.registry import stored_units
    from genbounds.results import ResultStore

    store = ResultStore(namespace="paper") if store is None else store
    su = stored_units("sparse_majority", "paper", store=store, warn=False)
    if not su.present:
        return "the authors' protocol is not stored at paper scale"
    parts = []
    for r in su.present:
        runs = r.provenance.stretches or [{"device": r.device, "wall_time_s": r.wall_time_s}]
        devices = sorted({_gpu_name(str(s["device"])) if str(s["device"]).startswith("cuda")
                          else str(s["device"]).split(" (")[0] for s in runs})
        parts.append(f"the authors' protocol is one unit, which records {len(runs)} "
                     f"run{'s' * (len(runs) != 1)} totalling {r.wall_time_s:,.0f} s on "
                     f"{', '.join(devices)}")
    return "; ".join(parts)


def _set(app: Any, config: Any) -> None:
    from paper_tables import FAILURES, cached_data
    from sphinx.util import logging

    subs = dict(getattr(config, "myst_substitutions", {}) or {})
    if "paper_next" not in subs:
        try:
            made = cached_data()
            subs["paper_next"] = table(made["rows"], made["load"])
            subs["sparse_majority_record"] = made["sparse_majority_record"]
        except FAILURES as exc:
            logging.getLogger(__name__).warning(f"paper_next: {exc}")
            subs["paper_next"] = f"*(the list of what to compute next could not be made: {exc})*"
            subs["sparse_majority_record"] = "*(not read: the store could not be read)*"
    config.myst_substitutions = subs


def setup(app: Any) -> dict[str, Any]:
    app.connect("config-inited", _set)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
