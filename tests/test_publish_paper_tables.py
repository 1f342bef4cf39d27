"""The paper-scale page's tables are made from the store and the estimator at build time
(tools/paper_tables.py makes the rows once; tools/paper_next.py orders what is left): nothing
in the page can go out of date, and the page is a how-to with no log of past runs in it."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import paper_next  # noqa: E402
import paper_tables  # noqa: E402

GPU = "cuda (NVIDIA Test GPU), torch 0.0"
PAGE = ROOT / "book" / "performance.md"


@pytest.fixture
def certificates(tmp_path: Path) -> tuple[Any, Any, list[Any], Any]:
    """An empty paper-scale store and the certificates study (whose estimate is arithmetic:
    nothing is measured): ``(experiment, config, units, store)``."""
    from genbounds.experiments.registry import get_experiment
    from genbounds.results import ResultStore

    exp = get_experiment("certificates")
    cfg = exp.config("paper")
    return exp, cfg, list(exp.units(cfg)), ResultStore(tmp_path, "paper")


def _one(store: Any) -> dict[str, Any]:
    [row] = paper_tables.rows("paper", store=store, names=["certificates"])
    return row


# -- the page -----------------------------------------------------------------------------------

def test_the_page_shows_the_generated_tables_and_no_figures_of_its_own() -> None:
    page = PAGE.read_text()
    for sub in ("{{ paper_units }}", "{{ paper_next }}", "{{ sparse_majority_record }}"):
        assert page.count(sub) == 1, sub
    config = (ROOT / "_config.yml").read_text()
    assert "paper_tables: tools/" in config and "paper_next: tools/" in config
    # hand-written unit counts, costs and "next" lists found out of date before
    for typed in ("| 42 |", "| 48 |", "| 115 |", "13,400 min", "0 / 10", "not started",
                  "16 / 122", "4 / 9", "6 / 6", "What to compute next, by value per hour",
                  "3.3 GPU-hours per run", "(the two-layer rates units, then"):
        assert typed not in page, typed


def test_the_page_is_a_how_to_without_a_log() -> None:
    page = PAGE.read_text()
    text = re.sub(r"```.*?```", "", page, flags=re.S)  # prose only
    for command in ("reproduce --scale paper", "--budget-minutes", "reproduce --status",
                    "store check", "revalidate", "genbounds.distributed submit"):
        assert command in page, command
    # the log of past runs lives in results/device_runs/README.md, not in the book
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", page), "a dated run"
    for word in ("lease", "sharing the GPU", "shared 14", "processes sharing", "run A",
                 "shared/notes", "load 0.35", "Target", "target", "issue", "version 1",
                 "stale"):
        assert word not in text, word
    assert "GPU lease" in (ROOT / "results" / "device_runs" / "README.md").read_text()


# -- the rows -----------------------------------------------------------------------------------

def test_rows_follow_the_store_and_the_estimator(certificates: Any) -> None:
    from genbounds import estimates
    from genbounds.results import describe_device

    exp, cfg, units, store = certificates
    row = _one(store)
    assert (row["units"], row["stored"], row["missing"], row["calibrated_on"], row["gpu"]) == (
        len(units), 0, len(units), 0, None)
    assert (row["recorded_s"], row["recorded_on"]) == (0.0, [])
    pred = estimates.predicted_unit_seconds("certificates", cfg, store)
    assert pred is not None and row["here_s"] == pytest.approx(sum(pred))

    # a unit from a GPU: the GPU column extrapolates it, the estimate here is not calibrated
    store.save(units[0], {"x": [1.0]}, device=GPU, wall_time_s=3.0 * pred[0],
               code_modules=exp.code)
    row = _one(store)
    assert (row["stored"], row["missing"], row["calibrated_on"]) == (1, len(units) - 1, 0)
    assert row["gpu"]["calibrated_on"] == 1
    assert row["gpu"]["seconds"] == pytest.approx(3.0 * sum(pred[1:]))
    assert row["recorded_s"] == pytest.approx(3.0 * pred[0])
    assert row["recorded_on"] == ["NVIDIA Test GPU"]

    # a unit from this kind of CPU: the estimate here is calibrated on it
    store.save(units[1], {"x": [1.0]}, device=describe_device("cpu"), wall_time_s=60.0,
               code_modules=exp.code)
    row = _one(store)
    per = estimates.unit_estimates("certificates", cfg, store)
    assert per is not None and row["calibrated_on"] == 1
    assert row["here_s"] == pytest.approx(sum(per.seconds[2:]))
    assert row["recorded_s"] == pytest.approx(3.0 * pred[0] + 60.0)
    text = paper_tables.table([row], "on 2 CPU cores at load average 0.1 (5 min: 0.1)")
    assert f"| 2 of {len(units)} |" in text and "(calibrated on 1 unit) |" in text
    assert f"| {len(units) - 2}: about " in text

    for u in units[2:]:
        store.save(u, {"x": [1.0]}, device=GPU, wall_time_s=1.0, code_modules=exp.code)
    row = _one(store)
    assert row["missing"] == 0 and row["gpu"] is None and row["here_s"] is None
    assert "nothing is left to compute" in paper_next.table([row], "LOAD")
    assert "| nothing to compute | — |" in paper_tables.table([row], "LOAD")


def _row(study: str, units: int, stored: int, gpu_s: float | None = None,
         here_s: float | None = None, **kw: Any) -> dict[str, Any]:
    gpu = None if gpu_s is None else {"seconds": gpu_s, "device": GPU, "calibrated_on": 2,
                                      "unestimated": 0}
    return {"study": study, "chapter": "notebooks/x.md", "units": units, "stored": stored,
            "stale": 0, "missing": units - stored, "recorded_s": 0.0, "recorded_on": [],
            "here_s": here_s, "calibrated_on": 0, "upper_bound": False, "peak_gib": None,
            "gpu": gpu, **kw}


def test_cost_table_words() -> None:
    text = paper_tables.table([
        _row("x", 3, 3, stale=2, recorded_s=5400.0, recorded_on=["NVIDIA H100", "CPU"]),
        _row("y", 3, 0, here_s=180000.0, upper_bound=True, peak_gib=0.5),
        _row("z", 3, 1, recorded_s=30.0, recorded_on=["CPU"])], "LOAD")
    assert "| x | 3 of 3, 2 made by changed code | 90 min on NVIDIA H100; CPU | " \
        "nothing to compute | — |" in text
    assert "| y | 0 of 3 | — | 3: at most 2 days (not calibrated) | 0.5 GiB |" in text
    assert "| z | 1 of 3 | under a minute on CPU | 2: no estimate | — |" in text
    assert text.startswith("Estimated while this book was built, LOAD.")
    assert paper_tables.duration(90 * 60.0) == "90 min"
    assert paper_tables.duration(600 * 60.0) == "10.0 hours"
    assert paper_tables.duration(30.0) == "under a minute"
    assert paper_tables.duration(3 * 86400.0) == "3 days"


# -- what to compute next -----------------------------------------------------------------------

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


def test_the_list_holds_only_missing_units_cheapest_first() -> None:
    data = [_row("done", 3, 3), _row("slow", 10, 2, 7200.0, 1e5),
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
    everything = paper_next.table([_row("done", 3, 3)], "LOAD")
    assert "nothing is left to compute" in everything and "|" not in everything


def test_sparse_majority_record_reads_the_provenance(tmp_path: Path) -> None:
    from genbounds.experiments.registry import stored_units
    from genbounds.results import ResultStore

    empty = ResultStore(tmp_path, "paper")
    assert paper_next.sparse_majority_record(empty) == \
        "the authors' protocol is not stored at paper scale"
    text = paper_next.sparse_majority_record()  # the committed store
    su = stored_units("sparse_majority", "paper", warn=False)
    if su.present:
        r = su.present[0]
        runs = len(r.provenance.stretches or [None])
        assert f"records {runs} run" in text and f"{r.wall_time_s:,.0f} s" in text


# -- made once per build ------------------------------------------------------------------------

def test_the_data_are_made_once_and_cached_until_the_store_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "results" / "paper").mkdir(parents=True)
    (tmp_path / "src" / "genbounds").mkdir(parents=True)
    calls: list[str] = []

    def compute(scale: str = "paper") -> dict[str, Any]:
        calls.append(scale)
        return {"rows": [_row("x", 3, 3)], "sparse_majority_record": "R", "load": "LOAD"}

    monkeypatch.setattr(paper_tables, "compute", compute)
    monkeypatch.setattr(paper_tables, "_package_root", lambda: tmp_path)
    paper_tables.cached_data.cache_clear()
    try:
        first = paper_tables.cached_data()
        assert calls == ["paper"] and first["sparse_majority_record"] == "R"
        assert paper_tables.cached_data() is first  # the second extension: the same data
        paper_tables.cached_data.cache_clear()  # a later build: read from _build/
        assert paper_tables.cached_data() == first and calls == ["paper"]
        cache = json.loads((tmp_path / "_build" / ".paper_tables.json").read_text())
        assert cache["data"] == first
        (tmp_path / "results" / "paper" / "a.json").write_text("{}")  # the store changed
        paper_tables.cached_data.cache_clear()
        paper_tables.cached_data()
        assert calls == ["paper", "paper"]
    finally:
        paper_tables.cached_data.cache_clear()


def test_measured_over_estimated_is_read_off_the_units_that_recorded_it(
        certificates: tuple[Any, Any, list[Any], Any]) -> None:
    from genbounds.results import describe_device
    from genbounds.results.provenance import recorded_estimate

    exp, cfg, units, store = certificates
    row = _one(store)
    assert row["estimated"] == []
    assert "No stored unit records one yet." in paper_tables.estimate_check([row])
    store.save(units[0], {"x": [1.0]}, device=GPU, wall_time_s=50.0, code_modules=exp.code)
    with recorded_estimate(100.0, GPU):
        store.save(units[1], {"x": [1.0]}, device=GPU, wall_time_s=50.0, code_modules=exp.code)
    with recorded_estimate(10.0, describe_device("cpu")):
        store.save(units[2], {"x": [1.0]}, device=describe_device("cpu"), wall_time_s=30.0,
                   code_modules=exp.code)
    row = _one(store)
    assert sorted(r[2] for r in row["estimated"]) == [10.0, 100.0]  # the unrecorded one left out
    text = paper_tables.estimate_check([row])
    assert "1 unit, measured / estimated 0.50 (1 within a factor 2)" in text
    assert "1 unit, measured / estimated 3.00 (0 within a factor 2)" in text
    assert text.count("\n- ") == 2  # one line per device
