"""The introduction's table of scales states the presets' sizes, and says for which chapters the
paper scale is a paper's own protocol (issue #34 item 6): checked against the presets, so that
a preset that changes fails here instead of leaving the page wrong."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INTRO = (ROOT / "book" / "intro.md").read_text(encoding="utf-8")


def _row(chapter: str) -> list[str]:
    """The scales table's cells for one chapter: [chapter, figures, quick, paper]."""
    for line in INTRO.splitlines():
        if line.startswith(f"| {{doc}}`../notebooks/{chapter}` |") and line.count("|") == 5:
            return [c.strip() for c in line.strip("|").split("|")]
    raise AssertionError(f"no scales row for {chapter}")


def _n(v: int) -> str:
    return f"{v:,}"


def test_offset_rademacher_row_states_the_presets_ranges() -> None:
    from genbounds.experiments.offset_rademacher import OffsetRademacherConfig as C

    _, _, quick, paper = _row("04_offset_rademacher")
    q, p = C.quick(), C.paper()
    assert len(q.n_values) == 8 and "eight $n$" in quick
    assert f"from {_n(min(q.n_values))} to {_n(max(q.n_values))}" in quick
    assert f"{q.seeds} seeds" in quick
    assert f"$n$ from {_n(min(p.n_values))} to {_n(max(p.n_values))}" in paper
    assert f"{p.seeds} seeds" in paper and f"{_n(p.n_test)} test inputs" in paper
    assert f"$d={p.d}$, $T={p.T}$" in paper and f"$d={q.d}$, $T={q.T}$" in quick


def test_effective_rank_row_states_the_presets_sizes() -> None:
    from genbounds.experiments.effective_rank import EffectiveRankConfig as C

    _, _, quick, paper = _row("05_effective_rank")
    for text, c in ((quick, C.quick()), (paper, C.paper())):
        b = c.base
        assert f"$T={b.T}$, $d={b.d}$, {b.heads} heads, {b.layers} layers" in text
        assert f"$n$ up to {_n(max(c.ms))}" in text
        assert f"{b.n_models} models per setting, {_n(b.epochs)} epochs" in text


def test_paper_scale_is_a_papers_protocol_only_where_the_paper_has_one() -> None:
    # the papers of chapters 04 and 05 have no experiment; 06 and 07 are the book's studies
    assert "the paper's own protocol" not in INTRO
    assert "papers' own protocols" not in INTRO
    scales = INTRO[INTRO.index("## Scales: quick and paper"):]
    m = re.search(r"only there is the paper scale their protocol:(.*?)\n\n", scales, re.S)
    assert m, "the scales section does not say where the paper scale is the papers' protocol"
    said = m.group(1)
    assert "02_trauger_tewari" in said and "03_shallow_gd" in said
    assert "have no experiments" in said and "book's own" in said
