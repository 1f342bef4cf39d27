"""How far ``genbounds.estimates`` is from the paper-scale units that really ran.

Usage: ``.venv/bin/python tools/check_estimates.py [--only NAME ...] [--json OUT]``

For every experiment with stored paper-scale units that ran on this device (as
``describe_device`` names it: the GPU model, or the CPU's cores and threads, and the torch
build), it prints, per stored unit: the measured wall time (from the record), the uncalibrated
estimate (:func:`genbounds.estimates.unit_seconds`, rates measured now on this machine) and the
**leave-one-out** calibrated estimate: :func:`genbounds.estimates.calibration` fitted on the
*other* stored units only (never on the unit being predicted, so the check does not select on
what it reports). The ratios estimate / measured are summarised per experiment:
"within 2x" means every leave-one-out ratio lies in [1/2, 2].

The rates are measured now: run it on an idle machine (the load average is printed), with the
thread count the units ran with (``OMP_NUM_THREADS=1`` for the units stored from one thread).
"""

from __future__ import annotations

import argparse
import json
import os
import warnings
from typing import Any


def check(name: str) -> dict[str, Any] | None:
    """The per-unit comparison for one experiment; None when no stored unit ran here."""
    from genbounds.estimates import calibration, unit_seconds
    from genbounds.experiments.registry import get_experiment
    from genbounds.results import ResultStore, StaleResultWarning, describe_device
    from genbounds.train.loop import resolve_device

    exp = get_experiment(name)
    cfg = exp.config("paper")
    units = list(exp.units(cfg))
    store = ResultStore(namespace="paper")
    kind = resolve_device(getattr(units[0], "device", "auto")).type
    here = describe_device(kind)
    measured: dict[int, float] = {}
    for i, u in enumerate(units):
        if not store.has(u):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StaleResultWarning)
            rec = store.load(u, on_code_change="warn", code_modules=exp.code)
        if rec is not None and rec.device == here:  # what calibration() uses, too
            measured[i] = rec.wall_time_s
    if not measured:
        return None
    raw = unit_seconds(name, cfg)
    if raw is None:
        return None
    rows: list[dict[str, Any]] = []
    loo_ratios: list[float] = []
    for i, wall in measured.items():
        cal = calibration(name, cfg, store, raw, exclude=[i])  # fitted without unit i
        loo = None if cal is None else cal(raw[i])
        rows.append({"unit": repr(units[i])[:90], "measured_s": wall, "estimate_s": raw[i],
                     "ratio": raw[i] / wall,
                     "loo_estimate_s": loo, "loo_ratio": None if loo is None else loo / wall})
        if loo is not None:
            loo_ratios.append(loo / wall)
    ratios = [raw[i] / wall for i, wall in measured.items()]
    return {"experiment": name, "device": kind, "rows": rows,
            "uncalibrated_ratio_range": [min(ratios), max(ratios)],
            "loo_ratio_range": [min(loo_ratios), max(loo_ratios)] if loo_ratios else None,
            "loo_within_2x": bool(loo_ratios) and all(0.5 <= x <= 2 for x in loo_ratios)}


def main() -> None:
    from genbounds.experiments import registered_experiments

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", default=None)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    names = a.only or [e.name for e in registered_experiments()]
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")
    out = []
    for name in names:
        res = check(name)
        if res is None:
            continue
        out.append(res)
        print(f"[{name}] on {res['device']}:")
        for r in res["rows"]:
            loo = ("-" if r["loo_ratio"] is None
                   else f"{r['loo_estimate_s']:8.1f} s ({r['loo_ratio']:.2f}x)")
            print(f"  {r['unit']:<90} measured {r['measured_s']:8.1f} s  estimate "
                  f"{r['estimate_s']:8.1f} s ({r['ratio']:.2f}x)  leave-one-out {loo}")
        print(f"  uncalibrated ratio {res['uncalibrated_ratio_range']}, leave-one-out "
              f"{res['loo_ratio_range']}, within 2x: {res['loo_within_2x']}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
