"""The provenance note of one book page: where its numbers came from, kept off the reader's way.

A page (one executed notebook, one kernel) names each set of stored results it shows with
:func:`note_sources` as it loads them (the figure helpers of :mod:`genbounds.plotting` do it for
the results they are given), and ends with one folded cell that prints :func:`provenance_note`:
the scale, the running code (package version and commit, with local changes flagged), the
machine, and for each named set how many units were computed while the page was built and how
many loaded, on which devices, when, in how much wall time, and whether each was made by the
running code, carried over to it by its study's probe, or made by other code (stale). Captions
and printed results carry only the scale and the data (:func:`genbounds.scale.scale_banner`).

The notes live in this process: one kernel executes one page, so the note of a page lists what
that page named. :func:`clear_notes` empties them (tests; a kernel reused for another page).
"""

from __future__ import annotations

import datetime as _dt
import textwrap
from collections.abc import Sequence
from typing import Any

from genbounds import __version__
from genbounds.results.provenance import _commit_now, describe_device
from genbounds.results.store import StoredResult
from genbounds.scale import get_scale

__all__ = ["clear_notes", "note_sources", "noted", "provenance_note", "results_of",
           "short_device"]

#: Width of the note's lines: the book's column shows about 64 characters of code output.
NOTE_WIDTH = 64

_NOTED: dict[str, list[StoredResult]] = {}


def results_of(stored: Any) -> list[StoredResult]:
    """The :class:`StoredResult` objects in ``stored``: one, a non-empty sequence of them, what
    :func:`~genbounds.experiments.registry.stored_units` returns (its ``present`` units) or
    ``load_stored``'s ``(arrays, parts)`` pair. ``ValueError`` naming ``stored`` otherwise."""
    if isinstance(stored, StoredResult):
        return [stored]
    present = getattr(stored, "present", None)
    if present is not None:
        return list(present)
    if isinstance(stored, tuple) and len(stored) == 2 and isinstance(stored[0], dict):
        stored = stored[1]  # (arrays, parts) as load_stored / load_or_run return them
    if (isinstance(stored, Sequence) and not isinstance(stored, str) and stored
            and all(isinstance(r, StoredResult) for r in stored)):
        return list(stored)
    raise ValueError("stored must be a StoredResult, a non-empty sequence of them, "
                     f"StoredUnits or load_stored's result, got {type(stored).__name__}")


def short_device(device: str) -> str:
    """``"cuda (NVIDIA H100 80GB HBM3), torch 2.5"`` -> ``"NVIDIA H100 80GB HBM3"``;
    ``"cpu (x86_64, 2 cores), torch 2.13"`` -> ``"cpu (x86_64)"``."""
    if "(" in device and ")" in device:
        inner = device[device.index("(") + 1: device.index(")")]
        head = device[: device.index("(")].strip()
        return inner if head.startswith("cuda") else f"{head} ({inner.split(',')[0]})"
    return device


def note_sources(label: str, stored: Any) -> None:
    """Name a set of stored results that this page shows, for its provenance note.

    ``label`` says in a few reader words what they are ("shallow-GD runs, paper scale");
    ``stored`` is anything :func:`results_of` accepts, or an empty sequence or
    :class:`~genbounds.experiments.registry.StoredUnits` with nothing present (a page that looks
    for paper-scale units where none are stored: the note then says "none stored" under the
    label). Naming the same unit twice under one label counts it once."""
    if not isinstance(label, str) or not label.strip():
        raise ValueError(f"label must be a non-empty string, got {label!r}")
    # results_of gives [] for StoredUnits with nothing present, and refuses a bare empty sequence
    results = [] if isinstance(stored, list | tuple) and not stored else results_of(stored)
    kept = _NOTED.setdefault(label.strip(), [])
    seen = {r.path for r in kept}
    kept.extend(r for r in results if r.path not in seen)


def noted() -> dict[str, tuple[StoredResult, ...]]:
    """What this page has named so far: ``{label: its results}``, in the order named."""
    return {label: tuple(results) for label, results in _NOTED.items()}


def clear_notes() -> None:
    """Forget every named set (a fresh page)."""
    _NOTED.clear()


def _code_status(r: StoredResult) -> str:
    p = r.provenance
    method = str((p.migrated or {}).get("method", ""))
    if r.stale or not p.is_same_code():
        return "stale"
    if method.startswith("equivalent code (probe)"):
        return "probe"
    return "same"


def _set_lines(label: str, results: Sequence[StoredResult]) -> list[str]:
    n = len(results)
    if n == 0:
        return [f"{label}: none stored"]
    fresh = sum(r.fresh for r in results)
    devices = sorted({short_device(r.provenance.device) for r in results})
    dates = sorted(r.provenance.created_utc[:10] for r in results)
    when = dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"
    wall = sum(r.provenance.wall_time_s for r in results)
    hours = f"{wall / 3600:.1f} h" if wall >= 3600 else f"{wall / 60:.1f} min"
    commits = sorted({r.provenance.git_commit[:10] + ("+local" if r.provenance.git_dirty else "")
                      for r in results})
    status = [_code_status(r) for r in results]
    counts = {k: status.count(k) for k in ("same", "probe", "stale")}
    code = [f"{counts['same']} made by the running code"] if counts["same"] else []
    if counts["probe"]:
        code.append(f"{counts['probe']} carried over to it by the study's probe")
    if counts["stale"]:
        code.append(f"{counts['stale']} made by other code (stale: the running code may give "
                    "other numbers)")
    origin = (f"{fresh} computed while this page was built, {n - fresh} loaded from the "
              "results store")
    return [f"{label}: {n} unit{'s' if n != 1 else ''} ({origin})",
            f"  devices: {', '.join(devices)}",
            f"  computed: {when}, {hours} of wall time in all",
            f"  code: {'; '.join(code)}",
            f"  commits: {', '.join(commits)}"]


def provenance_note(*, width: int = NOTE_WIDTH) -> str:
    """The page's provenance note: the scale, the running code and machine, and every set of
    stored results named with :func:`note_sources`, as lines of at most ``width`` characters."""
    if isinstance(width, bool) or not isinstance(width, int) or width < 40:
        raise ValueError(f"width must be an integer >= 40, got {width!r}")
    commit, dirty = _commit_now()
    lines = [
        "Provenance of this page",
        f"scale: {get_scale()} (environment variable GENBOUNDS_SCALE)",
        f"running code: genbounds {__version__} at commit {commit[:10]}"
        + (" with local changes" if dirty else ""),
        f"machine: {describe_device()}",
        f"built: {_dt.datetime.now(_dt.UTC).strftime('%Y-%m-%d %H:%M')} UTC",
    ]
    if not _NOTED:
        lines.append("stored results: none; every number on this page was computed while "
                     "it was built")
    for label, results in _NOTED.items():
        lines.extend(_set_lines(label, results))
    out: list[str] = []
    for line in lines:
        indent = " " * (len(line) - len(line.lstrip(" ")) + 2)
        out.extend(textwrap.wrap(line, width, subsequent_indent=indent, break_on_hyphens=False)
                   or [""])
    return "\n".join(out)
