"""A study's *probe*: a few seconds of its own code path whose outputs tell a change that keeps
every number from one that does not.

A stored unit names the code that computed it by a fingerprint over its study's source files
(:mod:`genbounds.results.provenance`). Any edit of those files changes the fingerprint, a pure
renaming as much as a changed constant, and a unit whose fingerprint no longer matches is shown
as made by other code. The probe lets a behaviour-preserving edit keep the units:

* :func:`probe_units`: one tiny unit per kind of unit the study has (every combination of the
  fields that select different code: task, family, arm, ...; over both presets), each with its
  sizes lowered to a few steps (:data:`SHRINK`) and run on the CPU;
* :func:`run_probe`: runs them with one thread and summarises every output array by a few
  exact statistics (:func:`summarize`): sum, sum of absolute values, sum of squares, minimum,
  maximum, first and last entries, number of non-finite entries; strings by a SHA-256 (timings
  and records of where a unit ran, :data:`TIMING` and :data:`RECORDS`, are left out);
* every paper-scale unit stored from now on records the probe of the code that computed it
  (``provenance.probe``); :func:`genbounds.results.revalidate.migrate_units` reruns the probe
  when a unit's fingerprint no longer matches, and when :func:`same_probe` finds the outputs
  unchanged the unit is carried over to the new fingerprint, recording how
  (``migrated.method`` begins "equivalent code (probe)"). Anything else stays stale.

"Unchanged" means bitwise equal when the probe ran on the CPU class that recorded it
(:func:`genbounds.results.provenance.cpu_class_key`), and within a relative 1e-9 of every
statistic on another class (float64 arithmetic of a few steps differs there by rounding only;
a changed constant moves the statistics by far more).

**What the probe does not cover.** Only the code that the tiny units execute, at their sizes,
on the CPU: a change confined to what runs only at larger sizes (micro-batching or chunking
above a threshold, early stopping that needs many epochs, the sparse-majority protocol's later
phases), to the GPU (CUDA graphs, TF32 settings, device-specific kernels), to resuming from a
checkpoint, or to an output whose summary statistics happen to be unchanged, passes the probe.
Such a change must be re-validated by recomputing (``python -m genbounds revalidate
--recompute``), which the person making it decides; the probe is evidence, not proof.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from genbounds.experiments.registry import Experiment

__all__ = ["KIND_FIELDS", "PROBE_RTOL", "RECORDS", "SHRINK", "TIMING", "omitted_fields",
           "probe_units", "run_probe", "same_probe", "same_unit_key", "summarize", "tiny"]

#: Sizes a tiny unit takes (a field is lowered to this value when the unit has it and is larger).
SHRINK: dict[str, int] = dict(
    epochs=2, max_epochs=2, steps=3, tail_steps=2, post_steps=2, subspace_steps=2,
    mc_samples=8, mc_train=1, mc_test=20, n_test=60, n_val=20, runs_per_T=1, linear_draws=10,
    net_draws=2, restarts=1, montecarlo_samples=2, search_depth=3, checkpoints=2,
    n_rank_inputs=8, n_z=8, batch=256, seeds=2)
#: Fields whose values select different code (one tiny unit per combination found).
KIND_FIELDS = ("task", "family", "study", "arch", "arm", "dataset", "optimizer",
               "prior_optimizer", "preregistered")
PROBE_RTOL = 1e-9
"""Relative tolerance of each statistic when the probe ran on another CPU class."""
#: Arrays that measure time, not a result of the code (never summarised), as :mod:`fnmatch`
#: patterns.
TIMING = ("*wall_time*", "*seconds*", "*time_s")
#: Arrays that record where and by which commit a unit ran (the sparse-majority protocol's
#: ``segments``), not a result of the code (never summarised).
RECORDS = ("*segments*",)


def tiny(unit: Any) -> Any:
    """``unit`` with every size of :data:`SHRINK` it has lowered to that value."""
    names = {f.name for f in dataclasses.fields(unit)}
    return dataclasses.replace(unit, **{
        k: v for k, v in SHRINK.items()
        if k in names and isinstance(getattr(unit, k), int) and v < getattr(unit, k)})


def probe_units(exp: Experiment) -> list[Any]:
    """One tiny unit per combination of the kind fields over both presets, on the CPU."""
    seen: dict[tuple[Any, ...], Any] = {}
    for scale in ("quick", "paper"):
        for unit in exp.units(exp.config(scale)):
            key = tuple(getattr(unit, k, None) for k in KIND_FIELDS)
            seen.setdefault(key, unit)
    out = []
    for unit in seen.values():
        small = tiny(unit)
        if "device" in {f.name for f in dataclasses.fields(small)}:
            small = dataclasses.replace(small, device="cpu")
        out.append(small)
    return out


def summarize(value: Any) -> list[float] | str:
    """The statistics of one output (module docstring): eight floats, or a SHA-256 for text."""
    arr = np.asarray(value)
    if arr.dtype.kind in "USO":
        return hashlib.sha256("\x1f".join(map(str, arr.ravel().tolist())).encode()).hexdigest()
    a = arr.astype(np.float64).ravel()
    fin = a[np.isfinite(a)]
    if fin.size == 0:
        return [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, float(a.size)]
    return [float(fin.sum()), float(np.abs(fin).sum()), float((fin * fin).sum()),
            float(fin.min()), float(fin.max()), float(fin[0]), float(fin[-1]),
            float(a.size - fin.size)]


def run_probe(exp: Experiment) -> dict[str, Any]:
    """Run ``exp``'s probe units (one CPU thread) and summarise their outputs; a record that
    :func:`same_probe` compares and a stored unit keeps in ``provenance.probe``."""
    import torch

    from genbounds.results.provenance import cpu_class, cpu_class_key

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        values: dict[str, list[float] | str] = {}
        units = probe_units(exp)
        for i, unit in enumerate(units):
            out = exp.run_unit(unit, False)
            for name in sorted(out):
                if not any(fnmatch.fnmatchcase(name, t) for t in TIMING + RECORDS):
                    values[f"{i}.{name}"] = summarize(out[name])
    finally:
        torch.set_num_threads(threads)
    return {"study": exp.name, "units": [repr(u) for u in units],
            "omitted": [omitted_fields(u) for u in units], "values": values,
            "cpu_class_key": cpu_class_key(cpu_class(with_torch=True)), "threads": 1}


def omitted_fields(unit: Any) -> list[list[str]]:
    """``[name, repr(value)]`` of each field that ``unit``'s key leaves out at its value
    (:data:`~genbounds.results.keys.OMIT_FROM_KEY`): a field added later with the value every
    earlier unit had implicitly. A probe recorded before the field existed lacks it, and is
    still the same probe unit (:func:`same_probe`)."""
    from genbounds.results.keys import OMIT_FROM_KEY

    return [[f.name, repr(getattr(unit, f.name))] for f in dataclasses.fields(unit)
            if OMIT_FROM_KEY in f.metadata and f.metadata[OMIT_FROM_KEY](unit)]


def same_unit_key(text: str) -> Any:
    """A probe unit as recorded (its ``repr``) with its fields in name order: a dataclass whose
    fields moved (into a base class, say) is the same unit. Text that is not a call of literal
    keyword arguments is its own key."""
    import ast

    try:
        call = ast.parse(text, mode="eval").body
    except SyntaxError:
        return text
    if not isinstance(call, ast.Call) or call.args or any(k.arg is None for k in call.keywords):
        return text
    return (ast.dump(call.func), sorted((str(k.arg), ast.dump(k.value)) for k in call.keywords))


def _same_unit(recorded: str, now: str, omitted: Any) -> bool:
    """Whether two probe units are the same (:func:`same_unit_key`), a field that ``now`` has
    and ``recorded`` lacks being allowed when it is one of ``omitted`` (:func:`omitted_fields`)
    at that value."""
    import ast

    a, b = same_unit_key(recorded), same_unit_key(now)
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    extra = {name: ast.dump(ast.parse(value, mode="eval").body) for name, value in omitted}
    have = {name for name, _ in a[1]}
    kept = [(name, v) for name, v in b[1] if name in have or extra.get(name) != v]
    return (a[0], a[1]) == (b[0], kept)


def same_probe(recorded: Mapping[str, Any], now: Mapping[str, Any]) -> tuple[bool, str]:
    """Whether two probe records show the same behaviour, and how it was decided (module
    docstring): bitwise on the same CPU class, within :data:`PROBE_RTOL` on another."""
    for name in ("units", "values", "cpu_class_key"):
        if name not in recorded or name not in now:
            return False, f"a probe record lacks {name!r}"
    omitted = now.get("omitted")
    if not isinstance(omitted, list) or len(omitted) != len(now["units"]):
        omitted = [[] for _ in now["units"]]  # a record made before fields were omitted
    if (len(recorded["units"]) != len(now["units"])
            or not all(_same_unit(r, u, o) for r, u, o
                       in zip(recorded["units"], now["units"], omitted, strict=True))):
        return False, "the probe runs other units now (its sizes or kinds changed)"
    a, b = recorded["values"], now["values"]
    if sorted(a) != sorted(b):
        changed = sorted(set(a) ^ set(b))
        return False, f"the outputs differ in name: {', '.join(changed[:5])}"
    same_class = recorded["cpu_class_key"] == now["cpu_class_key"]
    for name in sorted(a):
        x, y = a[name], b[name]
        if isinstance(x, str) or isinstance(y, str):
            if x != y:
                return False, f"{name}: the text differs"
            continue
        if len(x) != len(y):
            return False, f"{name}: {len(x)} statistics recorded, {len(y)} now"
        for u, v in zip(x, y, strict=True):
            if same_class and u != v:
                return False, f"{name}: {u!r} recorded, {v!r} now (same CPU class: bitwise)"
            if not same_class and not math.isclose(u, v, rel_tol=PROBE_RTOL, abs_tol=0.0):
                return False, f"{name}: {u!r} recorded, {v!r} now (beyond {PROBE_RTOL:g})"
    how = ("bitwise on the same CPU class" if same_class else
           f"within a relative {PROBE_RTOL:g} on another CPU class")
    return True, f"{len(a)} outputs of {len(now['units'])} probe units equal, {how}"
