"""The performance page's "what to compute next" is made from the store at build time
(tools/paper_next.py, issue #34 item 6): a study whose units are all stored leaves the list by
itself, and the GPU costs are extrapolated from the study's own stored GPU units."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import paper_next  # noqa: E402

GPU = "cuda (NVIDIA Test GPU), torch 0.0"


def test_gpu_extrapolation_fits_the_gpu_units_only() -> None:
    predicted = [1.0, 2.0, 4.0, 8.0]
    stored = [(0, GPU, 10.0), (1, GPU, 20.0), (2, "cpu (x86_64, 2 cores, 1 threads)", 999.0)]
    g = paper_next.gpu_extrapolation(predicted, stored, missing=[3])
    assert g is not None
    assert g["seconds"] == pytest.approx(80.0)  # the GPU units' factor 10, not the CPU unit's
    assert (g["device"], g["calibrated_on"], g["unestimated"]) == (GPU, 2, 0)
    # the GPU model with the most stored units is the one used
    other = "cuda (NVIDIA Other), torch 0.0"
    g2 = paper_next.gpu_extrapolation(predicted, [*stored, (2, other, 4.0)], missing=[3])
    assert g2 is not None and g2["device"] == GPU
    assert paper_next.gpu_extrapolation(predicted, stored[2:], missing=[3]) is None


def _row(study: str, units: int, stored: int, gpu_s: float | None,
         here_s: float | None) -> dict:
    gpu = None if gpu_s is None else {"seconds": gpu_s, "device": GPU, "calibrated_on": 2,
                                      "unestimated": 0}
    return {"study": study, "chapter": "notebooks/x.md", "units": units, "stored": stored,
            "missing": units - stored, "gpu": gpu, "here_s": here_s, "here_calibrated_on": 0}


def test_the_list_holds_only_missing_units_cheapest_first() -> None:
    data = [_row("done", 3, 3, None, None), _row("slow", 10, 2, 7200.0, 1e5),
            _row("cheap", 10, 9, 60.0, 1e3), _row("cpu_only", 5, 0, None, 60.0)]
    assert [r["study"] for r in paper_next.order(data)] == ["cheap", "slow", "cpu_only"]
    text = paper_next.table(data, "LOAD")
    body = [ln for ln in text.splitlines() if ln.startswith("| ") and "study" not in ln]
    assert [ln.split(" | ")[0][2:] for ln in body] == ["cheap", "slow", "cpu_only"]
    assert "| cheap | 1 of 10 | about 1 min (fitted on 2 units stored from NVIDIA Test GPU) |" \
        in text
    assert "| 2.0 hours" not in text and "about 2.0 hours" in text
    assert "no unit of it has run on a GPU" in text
    assert "Complete at paper scale: done (3 of 3 units)." in text
    assert "| done |" not in text
    everything = paper_next.table([_row("done", 3, 3, None, None)], "LOAD")
    assert "nothing is left to compute" in everything and "|" not in everything


def test_rows_follow_the_store(tmp_path) -> None:
    from genbounds import estimates
    from genbounds.experiments.registry import get_experiment
    from genbounds.results import ResultStore

    exp = get_experiment("certificates")  # its own estimate: arithmetic, nothing measured
    cfg = exp.config("paper")
    units = list(exp.units(cfg))
    store = ResultStore(tmp_path, "paper")
    [row] = paper_next.rows("paper", store=store, names=["certificates"])
    assert (row["units"], row["stored"], row["missing"], row["gpu"]) == (
        len(units), 0, len(units), None)
    pred = estimates.predicted_unit_seconds("certificates", cfg, store)
    assert pred is not None and row["here_s"] == pytest.approx(sum(pred))
    store.save(units[0], {"x": [1.0]}, device=GPU, wall_time_s=3.0 * pred[0],
               code_modules=exp.code)
    [row] = paper_next.rows("paper", store=store, names=["certificates"])
    assert (row["stored"], row["missing"]) == (1, len(units) - 1)
    assert row["gpu"]["calibrated_on"] == 1
    assert row["gpu"]["seconds"] == pytest.approx(3.0 * sum(pred[1:]))
    for u in units[1:]:
        store.save(u, {"x": [1.0]}, device=GPU, wall_time_s=1.0, code_modules=exp.code)
    [row] = paper_next.rows("paper", store=store, names=["certificates"])
    assert row["missing"] == 0 and row["gpu"] is None
    assert "nothing is left to compute" in paper_next.table([row], "LOAD")


def test_sparse_majority_record_reads_the_provenance(tmp_path) -> None:
    from genbounds.results import ResultStore

    empty = ResultStore(tmp_path, "paper")
    assert "not stored" in paper_next.sparse_majority_record(empty)
    text = paper_next.sparse_majority_record()  # the committed store
    from genbounds.experiments.registry import stored_units

    su = stored_units("sparse_majority", "paper", warn=False)
    if su.present:
        r = su.present[0]
        runs = len(r.provenance.stretches or [None])
        assert f"records {runs} run" in text and f"{r.wall_time_s:,.0f} s" in text


def test_the_performance_page_uses_the_generated_list() -> None:
    page = (ROOT / "book" / "performance.md").read_text()
    assert page.count("{{ paper_next }}") == 1
    assert "paper_next: tools/" in (ROOT / "_config.yml").read_text()
    # the hand-written "next" list and cost issue #34 found stale
    for stale in ("What to compute next, by value per hour", "3.3 GPU-hours per run",
                  "(the two-layer rates units, then"):
        assert stale not in page, stale
    assert paper_next.duration(30.0) == "under a minute"
    assert paper_next.duration(3 * 86400.0) == "3 days"
