"""How far ``genbounds.estimates`` is from the paper-scale units that really ran.

Usage: ``.venv/bin/python tools/check_estimates.py [--only NAME ...] [--json OUT]``

For every experiment with stored paper-scale units that ran on this device (as
``describe_device`` names it: the GPU model, or the CPU's cores and threads, and the torch
build), it prints, per stored unit: the measured wall time (from the record), the uncalibrated
estimate (:func:`genbounds.estimates.predicted_unit_seconds`: rates measured now on this
machine, or the experiment's own estimate one unit at a time, e.g. the certificates') and the
**leave-one-out** calibrated estimate: :func:`genbounds.estimates.calibration` fitted on the
*other* stored units only (never on the unit being predicted, so the check does not select on
what it reports). The ratios estimate / measured are summarised per experiment:
"within 2x" means every leave-one-out ratio lies in [1/2, 2].

Every study with stored paper-scale units is covered: one whose units no estimate covers
(:func:`genbounds.estimates.covers`) is reported as such and makes the exit status 1; one whose
stored units all ran on another kind of device is named with that device (nothing to compare
here).

The rates are measured now: run it on an idle machine (the load average is printed), with the
thread count the units ran with (``OMP_NUM_THREADS=1`` for the units stored from one thread).
"""

from __future__ import annotations

import argparse
import json
import os
import warnings
from typing import Any


def stored_walls(name: str) -> tuple[Any, list[Any], dict[int, tuple[float, str]]]:
    """``(paper config, its units, {unit index: (measured wall s, device)})`` of the stored
    paper-scale units of ``name`` (whichever device they ran on)."""
    from genbounds.experiments.registry import get_experiment
    from genbounds.results import ResultStore, StaleResultWarning

    exp = get_experiment(name)
    cfg = exp.config("paper")
    units = list(exp.units(cfg))
    store = ResultStore(namespace="paper")
    out: dict[int, tuple[float, str]] = {}
    for i, u in enumerate(units):
        if not store.has(u):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StaleResultWarning)
            rec = store.load(u, on_code_change="warn", code_modules=exp.code)
        if rec is not None:
            out[i] = (rec.wall_time_s, rec.device)
    return cfg, units, out


def check(name: str) -> dict[str, Any] | None:
    """The per-unit comparison for one experiment; None when it has no stored paper unit.

    ``status`` is ``"compared"``, ``"not covered"`` (stored units, but no per-unit estimate)
    or ``"other device"`` (every stored unit ran on another kind of device)."""
    from genbounds.estimates import calibration, covers, predicted_unit_seconds
    from genbounds.results import ResultStore, describe_device
    from genbounds.train.loop import resolve_device

    cfg, units, stored = stored_walls(name)
    if not stored:
        return None
    kind = resolve_device(getattr(units[0], "device", "auto")).type
    here = describe_device(kind)
    base: dict[str, Any] = {"experiment": name, "device": kind, "stored": len(stored),
                            "units": len(units)}
    if not covers(name, cfg):
        return {**base, "status": "not covered"}
    measured = {i: wall for i, (wall, dev) in stored.items() if dev == here}
    if not measured:  # what calibration() uses, too
        return {**base, "status": "other device",
                "ran_on": sorted({dev for _, dev in stored.values()})}
    raw = predicted_unit_seconds(name, cfg)
    if raw is None or len(raw) != len(units):
        return {**base, "status": "not covered"}
    store = ResultStore(namespace="paper")
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
    return {**base, "status": "compared", "rows": rows,
            "uncalibrated_ratio_range": [min(ratios), max(ratios)],
            "loo_ratio_range": [min(loo_ratios), max(loo_ratios)] if loo_ratios else None,
            "loo_within_2x": bool(loo_ratios) and all(0.5 <= x <= 2 for x in loo_ratios)}


def main() -> int:
    from genbounds.experiments import registered_experiments

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", default=None)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    names = a.only or [e.name for e in registered_experiments()]
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")
    out = []
    uncovered = []
    for name in names:
        res = check(name)
        if res is None:
            print(f"[{name}] no paper unit stored: nothing to compare")
            continue
        out.append(res)
        head = f"[{name}] {res['stored']} of {res['units']} paper units stored"
        if res["status"] == "not covered":
            uncovered.append(name)
            print(f"{head}: NOT COVERED (no per-unit estimate of its units)")
            continue
        if res["status"] == "other device":
            print(f"{head}, none ran on this kind of device ({', '.join(res['ran_on'])}): "
                  "nothing to compare here")
            continue
        print(f"{head}; on {res['device']}:")
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
    if uncovered:
        print(f"not covered by any per-unit estimate: {', '.join(uncovered)}")
    return 1 if uncovered else 0


if __name__ == "__main__":
    raise SystemExit(main())
