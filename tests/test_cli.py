"""python -m genbounds: the subcommands list what is registered and fail cleanly."""

from __future__ import annotations

import subprocess
import sys

import pytest

from genbounds.bounds import registered
from genbounds.cli import main
from genbounds.experiments import registered_experiments


def test_bounds_lists_every_registered_bound_one_per_line(capsys: pytest.CaptureFixture) -> None:
    assert main(["bounds"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == len(registered())
    keys = {line.split()[0] for line in lines}
    assert {"trauger_tewari.cor_4_1_1.printed", "trauger_tewari.cor_4_1_1.audited",
            "edelman.single_head_log_T.reconstructed"} <= keys
    assert main(["bounds", "--kind", "gap"]) == 0
    gap_lines = capsys.readouterr().out.strip().splitlines()
    assert gap_lines and all("generalization gap" in line for line in gap_lines)
    assert main(["bounds", "--kind", "nonsense"]) == 2


def test_bounds_prints_each_registered_verdict(capsys: pytest.CaptureFixture) -> None:
    from genbounds.cli import verdict_words

    assert main(["bounds"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    by_key = {line.split()[0]: line for line in lines}
    verdicts = set()
    for b in registered():
        words = "not audited" if b.verdict is None else b.verdict.value
        assert verdict_words(b.verdict) == words
        assert f"verdict: {words};" in by_key[b.key], by_key[b.key]
        verdicts.add(words)
    assert {"holds", "false", "does not follow"} <= verdicts  # the audit's words, not one value


def test_experiments_lists_every_study(capsys: pytest.CaptureFixture) -> None:
    assert main(["experiments"]) == 0
    out = capsys.readouterr().out
    for e in registered_experiments():
        assert e.name in out and e.chapter in out


def test_module_entry_point_runs() -> None:
    res = subprocess.run([sys.executable, "-m", "genbounds", "experiments"], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0 and "sparse_majority" in res.stdout
    bad = subprocess.run([sys.executable, "-m", "genbounds", "reproduce", "--only", "nope"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "no experiment 'nope'" in bad.stderr


def test_bad_arguments_give_one_line_and_a_nonzero_status(tmp_path, capsys, monkeypatch) -> None:
    a_file = tmp_path / "not_a_dir"
    a_file.write_text("x")
    assert main(["reproduce", "--only", "sparse_majority", "--results-dir", str(a_file)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --results-dir") and "not a directory" in err
    assert main(["bounds", "--paper", "bogus"]) == 2
    assert "--paper must be one of" in capsys.readouterr().err
    monkeypatch.setenv("GENBOUNDS_SCALE", "bogus")
    assert main(["reproduce", "--status", "--only", "sparse_majority"]) == 2
    assert "GENBOUNDS_SCALE must be one of" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["store", "check", "--scale", "bogus"])
    assert info.value.code == 2


def test_bad_environment_is_one_line_without_traceback(tmp_path) -> None:
    import os

    env = dict(os.environ, GENBOUNDS_SCALE="bogus", GENBOUNDS_RESULTS_DIR=str(tmp_path))
    res = subprocess.run([sys.executable, "-m", "genbounds", "reproduce", "--only",
                          "sparse_majority"], capture_output=True, text=True, timeout=300,
                         env=env)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines() == [
        "error: GENBOUNDS_SCALE must be one of ('quick', 'paper'), got 'bogus'"]


def test_estimate_costs_nothing_when_every_unit_is_stored(tmp_path, monkeypatch) -> None:

    from genbounds import estimates
    from genbounds.cli import describe_estimate
    from genbounds.results import ResultStore

    exp = registered_experiments()[0]
    cfg = exp.config("quick")
    store = ResultStore(tmp_path, namespace="quick")
    for unit in exp.units(cfg):  # stored without running them (only the store is timed)
        store.save(unit, {"x": [1.0]}, device="cpu", wall_time_s=30.0, code_modules=exp.code)

    def no_measurement(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("an estimate was measured although every unit is stored")

    monkeypatch.setattr(estimates, "estimate", no_measurement)
    monkeypatch.setattr(estimates, "unit_seconds", no_measurement)
    if exp.estimate is not None:
        import dataclasses

        exp = dataclasses.replace(exp, estimate=no_measurement)
    text = describe_estimate(exp, cfg, store)  # no estimate is measured (patched above)
    n = len(exp.units(cfg))
    assert text == f"nothing to compute: all {n} units stored ({n * 0.5:.1f} min of measured " \
                   "wall time)"


def test_match_selects_units_by_their_fields_and_names_bad_items(tmp_path, capsys) -> None:
    from genbounds.experiments.registry import get_experiment, select_units

    e = get_experiment("shallow_gd")
    units = e.units(e.config("paper"))
    row = select_units(units, {"N": "400"})
    assert row and all(u.N == 400 for u in row) and len(row) < len(units)
    assert select_units(units, {"N": "400", "d_m": "4096"}) == [
        u for u in units if u.N == 400 and u.d_m == 4096]
    with pytest.raises(ValueError, match="no field 'foo'"):
        select_units(units, {"foo": "1"})
    with pytest.raises(ValueError, match="values present"):
        select_units(units, {"N": "3"})
    for bad in (["--match", "N"], ["--match", "foo=1"], ["--match", "N=3"]):
        code = main(["reproduce", "--scale", "paper", "--only", "shallow_gd",
                     "--results-dir", str(tmp_path), *bad])
        assert code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--match" in err[0]
