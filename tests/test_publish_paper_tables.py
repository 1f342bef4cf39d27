"""The performance page's paper-scale table is made from the store and the estimator at build
time (issue #25 §4): nothing in the page can go stale."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import paper_tables  # noqa: E402


def test_the_page_shows_the_generated_table_and_no_counts_of_its_own() -> None:
    page = (ROOT / "book" / "performance.md").read_text()
    assert page.count("{{ paper_units }}") == 1
    assert "paper_tables: tools/" in (ROOT / "_config.yml").read_text()
    # the figures issue #25 found stale: hand-written unit counts and costs per study
    for stale in ("| 42 |", "| 48 |", "| 115 |", "13,400 min", "0 / 10", "not started",
                  "16 / 122", "4 / 9", "6 / 6"):
        assert stale not in page, stale
    assert "{ref}`instructors-times`" in page  # stored units' times: the one source of times


def test_rows_follow_the_store_and_the_calibrated_estimate(tmp_path) -> None:
    from genbounds import estimates
    from genbounds.experiments.registry import get_experiment
    from genbounds.results import ResultStore, describe_device

    exp = get_experiment("certificates")  # its own estimate: arithmetic, nothing measured
    cfg = exp.config("paper")
    units = list(exp.units(cfg))
    store = ResultStore(tmp_path, "paper")
    [row] = paper_tables.rows("paper", store=store, names=["certificates"])
    assert (row["units"], row["stored"], row["missing"], row["calibrated_on"]) == (
        len(units), 0, len(units), 0)
    store.save(units[0], {"x": [1.0]}, device=describe_device("cpu"), wall_time_s=60.0,
               code_modules=exp.code)
    [row] = paper_tables.rows("paper", store=store, names=["certificates"])
    per = estimates.unit_estimates("certificates", cfg, store)
    assert per is not None
    assert (row["stored"], row["missing"], row["calibrated_on"]) == (1, len(units) - 1, 1)
    assert row["minutes"] == pytest.approx(sum(per.seconds[1:]) / 60.0)
    text = paper_tables.table([row], "on 2 CPU cores at load average 0.1 (5 min: 0.1)")
    assert f"| 1 of {len(units)} |" in text and "calibrated on 1 stored unit)" in text
    assert f"{len(units) - 1} missing: " in text


def test_table_words() -> None:
    base = {"study": "x", "chapter": "notebooks/x.md", "units": 3, "stored": 3, "stale": 2,
            "missing": 0, "minutes": None, "calibrated_on": 0, "upper_bound": False,
            "peak_gib": None}
    text = paper_tables.table([base, {**base, "stored": 0, "stale": 0, "missing": 3,
                                      "minutes": 3000.0, "upper_bound": True, "peak_gib": 0.5}],
                              "load")
    assert "| x | 3 of 3, 2 stale | nothing to compute | — |" in text
    assert "| x | 0 of 3 | 3 missing: at most 2 days (not calibrated) | 0.5 GiB |" in text
    assert paper_tables._duration(90.0) == "90 min"
    assert paper_tables._duration(600.0) == "10.0 hours"
