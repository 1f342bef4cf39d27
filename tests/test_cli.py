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
