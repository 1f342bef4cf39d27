"""Bring stored results to the current fingerprint scheme, honestly, or re-validate one by
recomputing it (the store's side of ``python -m genbounds revalidate``; the command line, which
knows the studies, is :func:`genbounds.cli.revalidate_main`: nothing here imports a study).

Two actions, both recorded in the unit's provenance (its arrays are never changed):

* **migrate** (default, nothing computed): every stored unit of the named experiments whose
  record carries an old (byte) fingerprint, or a syntax-tree fingerprint that a Python 3.12 or
  3.13 wrote in its own ``ast.dump`` form, is checked by
  :func:`genbounds.results.provenance.migrate_record`: its recorded commit must reproduce its
  recorded fingerprint, and the files its experiment declares now must have, under the new
  scheme (normalised syntax trees), the same fingerprint at that commit as now. Then the record
  is rewritten with the new fingerprint and a ``migrated`` entry; otherwise it stays stale and
  the reason is printed.
* **recompute** (``--recompute --match FIELD=VALUE``): the matched stale units are computed
  again by the running code and compared with the stored arrays: integers, booleans and strings
  exactly, floats within ``|new - old| <= rtol |old| + atol_frac max|old|`` (NaN where NaN).
  Within the tolerance the record gets the current fingerprint and a ``revalidated`` entry
  (when, which commit and CPU class, the tolerance, the largest relative difference, the wall
  time); outside it nothing is changed and the differences are printed.
"""

from __future__ import annotations

import datetime as _dt
import fnmatch
import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from genbounds.results import files
from genbounds.results.provenance import (
    AST_SCHEME,
    Provenance,
    _git,
    check_source_unchanged,
    code_fingerprint,
    cpu_class,
    describe_device,
    migrate_record,
    normalize_code_modules,
    same_code,
)

__all__ = ["DEFAULT_ATOL_FRAC", "DEFAULT_RTOL", "compare_arrays", "equivalent_record",
           "match_unit", "migrate_units", "revalidate_unit", "rewrite_provenance",
           "stored_units_of"]

DEFAULT_RTOL = 1e-6
"""Default relative tolerance of a re-validation (float64 training agrees to about 1e-12 on
one CPU class; another class or float32 may need more, stated on the command line)."""
DEFAULT_ATOL_FRAC = 1e-9
"""Default absolute tolerance, as a fraction of the largest stored value of each array."""
TIMING = ("*wall_time*", "*seconds*", "*_time_s")
"""Arrays that measure time, not a result of the code (never compared; the record says so)."""
RECORDS = ("device", "*.device", "*segments*")
"""Arrays that record where a unit ran (a GPU flag, the devices of a resumed computation's
stretches), not a result of the code: never compared (the record says so). The probe leaves out
the segments too (:data:`genbounds.experiments.probe.RECORDS`) but keeps a ``device`` flag, which
is the same on every run of the probe (it always runs on the CPU)."""
NOT_COMPARED = TIMING + RECORDS


def rewrite_provenance(unit: files.Unit, repair: str, provenance: Mapping[str, Any]) -> None:
    """Replace a committed unit's provenance (re-sealed; the arrays file is not touched)."""
    with unit.lock(repair):
        record = files.read_unit(unit, repair)
        if record is None:
            raise ValueError(f"unit {unit.json} has no committed result")
        Provenance.from_record(dict(provenance))  # malformed -> ValueError before writing
        meta = dict(record.meta, provenance=dict(provenance))
        sealed = files.seal(meta)
        files.atomic_write(unit.json, json.dumps(sealed, indent=1, sort_keys=True).encode())


def stored_units_of(exp: Any, scale: str, store: Any) -> list[tuple[Any, files.Unit]]:
    return [(u, store.unit(u)) for u in exp.units(exp.config(scale)) if store.has(u)]


ProbeNow = Callable[[], Mapping[str, Any]]
"""The caller's probe of a study under the running code (the store knows no study)."""
ProbeCheck = Callable[[Mapping[str, Any], Mapping[str, Any]], tuple[bool, str]]
"""``(recorded, now) -> (same behaviour, how decided)``."""


def migrate_units(exp: Any, scale: str, store: Any, dry_run: bool = False,
                  probe: tuple[ProbeNow, ProbeCheck] | None = None,
                  record_probes: bool = False) -> list[tuple[str, str, bool]]:
    """``(unit key, what happened, current now)`` for every stored unit of ``exp``.

    A unit that is not current is carried over by :func:`migrate_record` (an older fingerprint
    scheme), else, when it recorded its study's probe and the caller's ``probe`` (a pair: the
    probe under the running code, and the comparison, e.g.
    :func:`genbounds.experiments.probe.same_probe`) finds the same outputs, as *equivalent
    code (probe)*. With ``record_probes``, a current unit without a probe gets the running
    code's (the same code computed it)."""
    out = []
    now: dict[str, Any] = {}

    def probe_now() -> Mapping[str, Any]:
        if "record" not in now:
            assert probe is not None
            now["record"] = dict(probe[0]())
        return now["record"]

    for _, unit in stored_units_of(exp, scale, store):
        record = files.read_unit(unit, store.repair_command)
        assert record is not None  # store.has() said so; read_unit raises on damage
        prov = record.meta["provenance"]
        if str(prov.get("code_fingerprint", "")).startswith(("ast1:", AST_SCHEME + ":")) and \
                same_code(prov["code_fingerprint"], prov.get("code_modules"), exp.code):
            why = "new scheme already; current"
            if record_probes and probe is not None and not prov.get("probe"):
                if not dry_run:
                    rewrite_provenance(unit, store.repair_command, dict(prov, probe=probe_now()))
                why += "; probe recorded" + (" (dry run: not written)" if dry_run else "")
            out.append((unit.key, why, True))
            continue
        new, why = migrate_record(prov, exp.code)
        if new is None and prov.get("probe") and probe is not None:
            equal, how = probe[1](prov["probe"], probe_now())
            if equal:
                new = equivalent_record(prov, exp.code, how)
                why = "equivalent code (probe): " + how
            else:
                why += "; the probe differs: " + how
        if new is not None and not dry_run:
            rewrite_provenance(unit, store.repair_command, new)
        out.append((unit.key, why + (" (dry run: not written)" if new and dry_run else ""),
                    new is not None))
    return out


def equivalent_record(prov: Mapping[str, Any], modules: Sequence[str], how: str
                      ) -> dict[str, Any]:
    """``prov`` carried over to the running code's fingerprint because its study's probe gives
    the same outputs (``how``): the fingerprint and modules replaced, ``migrated`` saying so."""
    wanted = normalize_code_modules(modules)
    check_source_unchanged(wanted)
    new = dict(prov)
    new.update(
        code_fingerprint=code_fingerprint(wanted),
        code_modules=None if wanted is None else list(wanted),
        migrated={
            "from_fingerprint": prov.get("code_fingerprint"),
            "from_code_modules": prov.get("code_modules"),
            "method": f"equivalent code (probe): {how}; the probe covers only the code its "
                      "tiny units run on the CPU (genbounds.experiments.probe)",
            "uncovered_before": [],
            "dirty_tree_bracketed_by": None,
            "migrated_utc": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "migrated_at_commit": _git("rev-parse", "HEAD") or "unknown",
        },
    )
    return new


def compare_arrays(new: Mapping[str, Any], old: Mapping[str, np.ndarray], rtol: float,
                   atol_frac: float, skip: Sequence[str] = NOT_COMPARED,
                   ) -> tuple[list[str], float]:
    """``(problems, largest relative difference)`` of recomputed against stored arrays (those
    matching a pattern of ``skip``, timings and records of where the unit ran, are not
    compared)."""
    problems: list[str] = []
    worst = 0.0
    for name, b in old.items():
        if any(fnmatch.fnmatchcase(name, pat) for pat in skip):
            continue
        if name not in new:
            problems.append(f"{name}: no longer computed")
            continue
        a = np.asarray(new[name])
        if a.shape != b.shape:
            problems.append(f"{name}: shape {a.shape}, stored {b.shape}")
            continue
        if b.dtype.kind not in "fc" or a.dtype.kind not in "fc":
            if not np.array_equal(a, b):
                problems.append(f"{name}: differs (compared exactly)")
            continue
        if not np.array_equal(np.isnan(a), np.isnan(b)):
            problems.append(f"{name}: NaN at other places")
            continue
        fin = np.isfinite(b)
        if not np.array_equal(a[~fin], b[~fin], equal_nan=True):
            problems.append(f"{name}: infinities differ")
            continue
        if not fin.any():
            continue
        diff = np.abs(a[fin] - b[fin])
        scale = float(np.abs(b[fin]).max())
        rel = float((diff / np.maximum(np.abs(b[fin]), 1e-300)).max())
        worst = max(worst, rel if scale > 0 else 0.0)
        if (diff > rtol * np.abs(b[fin]) + atol_frac * scale).any():
            problems.append(f"{name}: largest difference {diff.max():.3g} "
                            f"(relative {rel:.3g}) beyond rtol {rtol:g}, atol "
                            f"{atol_frac:g} x {scale:.3g}")
    return problems, worst


def revalidate_unit(exp: Any, config: Any, store: Any, rtol: float = DEFAULT_RTOL,
                    atol_frac: float = DEFAULT_ATOL_FRAC) -> tuple[bool, str]:
    """Recompute one stored unit with the running code and compare (module docstring)."""
    if not (isinstance(rtol, float | int) and 0 <= rtol < 1):
        raise ValueError(f"rtol must be in [0, 1), got {rtol!r}")
    if not (isinstance(atol_frac, float | int) and 0 <= atol_frac < 1):
        raise ValueError(f"atol_frac must be in [0, 1), got {atol_frac!r}")
    unit = store.unit(config)
    record = files.read_unit(unit, store.repair_command)
    if record is None:
        raise ValueError(f"unit {unit.key} of {exp.name} is not stored: nothing to re-validate")
    t0 = time.perf_counter()
    arrays = exp.run_unit(config, False)
    wall = time.perf_counter() - t0
    problems, worst = compare_arrays(arrays, record.arrays, rtol, atol_frac)
    skipped = sorted(n for n in record.arrays
                     if any(fnmatch.fnmatchcase(n, p) for p in NOT_COMPARED))
    if problems:
        return False, (f"{unit.key}: NOT re-validated ({wall:.1f} s): " + "; ".join(problems[:5])
                       + (f"; and {len(problems) - 5} more" if len(problems) > 5 else ""))
    modules = normalize_code_modules(exp.code)
    check_source_unchanged(modules)
    prov = dict(record.meta["provenance"])
    prov.update(
        code_fingerprint=code_fingerprint(modules),
        code_modules=None if modules is None else list(modules),
        revalidated={
            "revalidated_utc": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "git_commit": _git("rev-parse", "HEAD") or "unknown",
            "git_dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
            "from_fingerprint": record.meta["provenance"].get("code_fingerprint"),
            "device": describe_device(getattr(config, "device", "auto")
                                      if getattr(config, "device", "auto") != "auto" else "cpu"),
            "cpu_class": cpu_class(),
            "wall_time_s": round(wall, 3),
            "rtol": rtol,
            "atol_frac": atol_frac,
            "max_relative_difference": worst,
            "arrays_compared": len(record.arrays) - len(skipped),
            "not_compared": skipped,
            "kept": "the stored arrays (the recomputed ones agree within the tolerance)",
        },
    )
    rewrite_provenance(unit, store.repair_command, prov)
    return True, (f"{unit.key}: re-validated in {wall:.1f} s, "
                  f"{len(record.arrays) - len(skipped)} arrays (timings and where it ran not "
                  "compared), "
                  f"largest relative difference {worst:.2g} (rtol {rtol:g})")


def match_unit(config: Any, pairs: Sequence[str]) -> bool:
    """Whether the unit ``config`` has every ``FIELD=VALUE`` of ``pairs`` (compared as text);
    ``ValueError`` naming a pair that is malformed or names no field of the unit."""
    for pair in pairs:
        field, sep, value = pair.partition("=")
        if not sep or not hasattr(config, field):
            raise ValueError(f"--match takes FIELD=VALUE with a field of the unit, got {pair!r}")
        if str(getattr(config, field)) != value:
            return False
    return True
