"""How long each study takes from scratch, read from the results store: ``{{ study_times }}``.

Sphinx extension (loaded from ``_config.yml``). Every stored unit of a study records the wall
time it took and the device it ran on (its provenance). The substitution ``{{ study_times }}``
is a table, one row per registered study at the build's scale (``GENBOUNDS_SCALE``, default
quick): its chapter, how many of its units are stored, the sum of their wall times (what a
reader without stored results waits for, one process, one thread), and the devices and dates
they were computed on. The instructors' page shows it beside MyST-NB's table of each chapter's
execution time in the same build: the book's one source of times (issue #26).

    python tools/study_times.py          # print the table
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any

#: The chapter that shows each study (its docname).
CHAPTER = {
    "sparse_majority": "notebooks/02_trauger_tewari",
    "shallow_gd": "notebooks/03_shallow_gd",
    "offset_rademacher": "notebooks/04_offset_rademacher",
    "offset_rademacher_complexity": "notebooks/04_offset_rademacher",
    "effective_rank": "notebooks/05_effective_rank",
    "comparison": "notebooks/06_comparison",
    "certificates": "notebooks/07_certificates",
    "margin_certificates": "notebooks/07_certificates",
    "preregistered_certificate": "notebooks/07_certificates",
}
#: The study, in words.
TITLE = {
    "sparse_majority": "sparse majority (Trauger & Tewari)",
    "shallow_gd": "shallow encoder trained by GD (Mwigo & Dasgupta)",
    "offset_rademacher": "excess-risk rates (Li et al.)",
    "offset_rademacher_complexity": "offset vs global complexity (Li et al.)",
    "effective_rank": "effective rank of attention (Dhingra)",
    "comparison": "every bound on the same models",
    "certificates": "certificates on the same weights",
    "margin_certificates": "the trained network itself (margin derandomisation)",
    "preregistered_certificate": "one certificate chosen on development digits",
}


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min"


def _device(text: str) -> str:
    """``cpu (x86_64, 2 cores, 1 threads), torch 2.x`` -> ``CPU, 2 cores, 1 thread``."""
    m = re.match(r"cpu \((\S+), (\d+) cores, (\d+) threads?\)", text)
    if m:
        return f"CPU, {m.group(2)} cores, {m.group(3)} thread{'s' * (m.group(3) != '1')}"
    m = re.match(r"cuda\S* \(([^)]+)\)", text)
    return m.group(1) if m else text.split(",")[0]


def rows(scale: str) -> list[tuple[str, str, str, str, str]]:
    """``(study, chapter, units stored, from scratch, computed on)`` for every registered study."""
    import genbounds.experiments  # noqa: F401  (registers every study)
    from genbounds.experiments.registry import registered_experiments, stored_units

    out = []
    for exp in registered_experiments():
        try:
            su = stored_units(exp.name, scale, warn=False)
        except Exception as exc:  # noqa: BLE001 (a damaged store is reported, not fatal here)
            out.append((TITLE.get(exp.name, exp.name), CHAPTER.get(exp.name, ""), "?", "?",
                        f"store unreadable: {type(exp).__name__}: {exc}"[:80]))
            continue
        present = su.present
        total = sum(float(r.provenance.wall_time_s) for r in present)
        # a unit computed in several runs records them all; its wall time is their sum
        runs = sum(len(r.provenance.stretches or ()) for r in present)
        several = sum(1 for r in present if r.provenance.stretches)
        devices = sorted({_device(str(r.provenance.device)) for r in present})
        dates = sorted([str(r.provenance.created_utc)[:10] for r in present]
                       + [str(s["ended_utc"])[:10] for r in present
                          for s in r.provenance.stretches or ()])
        when = (dates[0] if dates and dates[0] == dates[-1] else
                f"{dates[0]} to {dates[-1]}" if dates else "")
        done = f"{len(present)} of {len(su.units)}"
        scratch = (_duration(total) if su.complete else
                   f"at least {_duration(total)} (not all stored)" if present else "not stored")
        if several:
            scratch += (f" ({several} unit{'s' * (several > 1)} computed in {runs} runs, "
                        "every run counted)")
        out.append((TITLE.get(exp.name, exp.name), CHAPTER.get(exp.name, ""), done, scratch,
                    f"{'; '.join(devices)}{', ' + when if when else ''}"))
    return out


def _chapter_text(docname: str) -> str:
    """``notebooks/02_trauger_tewari`` -> ``chapter 2`` (the column stays narrow; the link
    leads to the chapter's first page)."""
    m = re.match(r"(\d+)_", docname.rsplit("/", 1)[-1])
    return f"chapter {int(m.group(1))}" if m else docname.rsplit("/", 1)[-1]


def table(scale: str | None = None) -> str:
    """The MyST table of :func:`rows` (chapters as ``{doc}`` links)."""
    scale = scale or os.environ.get("GENBOUNDS_SCALE", "quick") or "quick"
    lines = ["| study | chapter | units stored | from scratch | computed on |",
             "|---|---|---|---|---|"]
    for study, chapter, done, scratch, where in rows(scale):
        link = f"{{doc}}`{_chapter_text(chapter)} <../{chapter}>`" if chapter else ""
        lines.append(f"| {study} | {link} | {done} | {scratch} | {where} |")
    return "\n".join(lines) + "\n"


def _set(app: Any, config: Any) -> None:
    subs = dict(getattr(config, "myst_substitutions", {}) or {})
    for key, scale in (("study_times", None), ("study_times_paper", "paper")):
        try:
            subs.setdefault(key, table(scale))
        except Exception as exc:  # noqa: BLE001 (the page says so rather than failing the build)
            subs.setdefault(key, f"*(the study times could not be read: {exc})*")
    config.myst_substitutions = subs


def setup(app: Any) -> dict[str, Any]:
    app.connect("config-inited", _set)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    print(table(sys.argv[1] if len(sys.argv) > 1 else None))
