"""Smoke test of the benchmark command (the numbers themselves are reported, not asserted)."""

from __future__ import annotations

import json

from genbounds.bench import main, run_benchmark


def test_benchmark_runs_and_reports_ratios(tmp_path) -> None:
    res = run_benchmark(T_values=(9,), K_values=(1, 2), n_val=50, K_val=2, target_s=0.01)
    text = json.dumps(res)
    assert "speedup_tokens" in text and "speedup_bits" in text


def test_cli_writes_json(tmp_path) -> None:
    out = tmp_path / "bench.json"
    rc = main(["--out", str(out), "--T", "9", "--K", "1", "2", "--n-val", "50", "--k-val", "2",
               "--target-seconds", "0.01"])
    assert rc == 0
    assert json.loads(out.read_text())
