"""Smoke tests of the benchmark command (the numbers themselves are reported, not asserted)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from genbounds.bench import (
    bench_edelman,
    bench_epoch,
    bench_notebooks,
    bench_roofline,
    bench_svd,
    format_tables,
    main,
    run_benchmark,
)


def test_benchmark_runs_and_reports_ratios() -> None:
    res = run_benchmark(T_values=(9,), K_values=(1, 2), n_val=50, K_val=2, target_s=0.01,
                        sections=("training", "validation"))
    text = json.dumps(res)
    assert "speedup_tokens" in text and "speedup_bits" in text
    assert "load average" in format_tables(res)
    with pytest.raises(ValueError, match="sections"):
        run_benchmark(sections=("gpu",))


def test_cli_writes_json(tmp_path) -> None:
    out = tmp_path / "bench.json"
    rc = main(["--out", str(out), "--T", "9", "--K", "1", "2", "--n-val", "50", "--k-val", "2",
               "--target-seconds", "0.01", "--sections", "training", "svd", "--svd-n", "3"])
    assert rc == 0
    res = json.loads(out.read_text())
    assert res["svd"]["n"] == 3 and res["training"]


def test_epoch_section() -> None:
    rows = bench_epoch(T_values=(9,), K=2, n_val=64, device="cpu")
    assert rows[0]["speedup"] > 0 and np.isfinite(rows[0]["engine_s_per_model_epoch"])


def test_svd_section_agrees_with_numpy() -> None:
    r = bench_svd(n=5, size=21, chunk=2)
    assert r["max_abs_difference"] < 1e-4 and r["speedup"] > 0


def test_roofline_section() -> None:
    # the structure, not the timing (a loaded machine makes any time possible)
    r = bench_roofline("cpu", sm_size=(2, 9), enc_size=(1, 16, 32))
    assert r["matmul_gflops"] > 0 and len(r["rows"]) == 2
    for w in r["rows"]:
        assert set(w) == {"workload", "gflop_per_epoch", "s_per_epoch", "timing", "gflops",
                          "fraction_of_matmul"}
        assert w["gflop_per_epoch"] > 0 and w["s_per_epoch"] > 0
        assert np.isfinite(w["gflops"]) and np.isfinite(w["fraction_of_matmul"])
    text = format_tables({**run_benchmark(sections=(), svd_n=1), "roofline": r})
    assert "% of matmul" in text


def test_time_per_epoch_is_positive_when_the_marginal_time_is_lost_in_noise() -> None:
    # a loaded machine: three epochs took less time than one (the old code returned 0 s, and
    # the roofline divided by it)
    import time as _time

    import torch

    from genbounds.bench import _seconds_per_epoch

    def noisy(n: int) -> None:
        _time.sleep(0.03 if n == 1 else 0.02)

    s, method = _seconds_per_epoch(noisy, torch.device("cpu"))
    assert s > 0 and "lost in the noise" in method
    assert abs(s - 0.02 / 3) < 0.02  # t(3) / 3

    def steady(n: int) -> None:
        _time.sleep(0.01 + 0.02 * n)

    s, method = _seconds_per_epoch(steady, torch.device("cpu"))
    assert method.startswith("marginal") and 0.01 < s < 0.1


def test_notebooks_section_reports_failure(tmp_path) -> None:
    nb = tmp_path / "broken.md"
    nb.write_text("---\njupytext:\n  text_representation:\n    extension: .md\n    "
                  "format_name: myst\nkernelspec:\n  name: python3\n  display_name: Python 3\n"
                  "---\n\n```{code-cell} ipython3\nassert 1 == 2\n```\n")
    rows = bench_notebooks([nb], workdir=tmp_path / "work")
    assert rows[0]["notebook"] == "broken.md" and rows[0]["passed"] is False


def test_fit_section_counts_epochs() -> None:
    res = run_benchmark(T_values=(9,), K_values=(2,), n_val=20, sections=("fit",),
                        fit_epochs=3, device="cpu")
    r = res["fit"][0]
    assert r["stopped_epoch"] == [2, 2] or any(r["reached"])
    assert "Epochs to training accuracy" in format_tables(res)


def test_edelman_section_measures_both_paths_and_the_unit() -> None:
    # the structure, not the timing; the two paths' equality is tests/test_edelman_speed.py's
    from genbounds.experiments.effective_rank import EffectiveRankUnit

    u = EffectiveRankUnit(T=6, d=8, k=4, heads=2, layers=2, m=16, n_test=20, epochs=4,
                          checkpoints=2, n_models=2, n_rank_inputs=4, n_z=4, device="cpu")
    r = bench_edelman(u, reps=2, matmul_n=64)
    assert r["matmul_gflops"] > 0 and r["clock"] == "cpu" and r["speedup"] > 0
    for name in ("reference", "fast"):
        w = r[name]
        assert w["step_s"] > 0 and w["gflop_per_step"] > 0 and np.isfinite(w["gflops"])
        assert r["unit"][name]["unit_s"] > 0 and r["unit"][name]["unit_tflop"] > 0
    # the fast path executes fewer FLOPs (the last layer's [CLS] row only)
    assert r["fast"]["gflop_per_step"] < r["reference"]["gflop_per_step"]
    assert r["max_rel_grad_difference"] < 1e-4
    text = format_tables({**run_benchmark(sections=(), svd_n=1), "edelman": r})
    assert "Effective-rank model" in text and "speed-up" in text


def test_ranking_section_reports_the_ratio_and_equal_answers() -> None:
    from genbounds.bench import bench_ranking

    r = bench_ranking(n_models=20, n_boot=10)
    assert r["max_abs_difference"] == 0.0 and r["speedup"] > 0
    res = run_benchmark(sections=("ranking",))
    assert "Granulated Kendall tau" in format_tables(res)
    with pytest.raises(ValueError, match="n_models"):
        bench_ranking(n_models=2)
