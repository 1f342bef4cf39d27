"""Provenance checks ``GENBOUNDS_GIT_COMMIT`` in the library as the command line does, and says
when the commit is unknown to the repository (issue #37 item 7: ``ResultStore.save`` recorded
``'not a commit; $(id)'`` verbatim, and a 40-hex id of no commit as is)."""

from __future__ import annotations

import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

from genbounds.results import ResultStore, UnsavedResultError
from tests.test_cli_faults import FaultUnit

REPO = Path(__file__).resolve().parents[1]
CODE = ("genbounds.scale",)


def _save(store: ResultStore, value: float, n: int = 1) -> None:
    store.save(FaultUnit(n), {"x": np.full(4, value)}, device="cpu", wall_time_s=1.0,
               code_modules=CODE)


def test_a_malformed_commit_is_refused_by_the_library(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GENBOUNDS_GIT_COMMIT", "not a commit; $(id)")
    store = ResultStore(tmp_path, "quick")
    with pytest.raises(ValueError, match="GENBOUNDS_GIT_COMMIT must be a full commit id"):
        _save(store, 1.0)
    assert not store.has(FaultUnit(1))
    with pytest.raises(UnsavedResultError, match="GENBOUNDS_GIT_COMMIT") as info:
        store.run(FaultUnit(1), lambda c: {"x": np.ones(2)}, code_modules=CODE)
    assert info.value.kept is not None and info.value.kept.is_file()  # the compute is kept
    monkeypatch.setenv("GENBOUNDS_GIT_COMMIT", "a" * 40)
    monkeypatch.setenv("GENBOUNDS_GIT_DIRTY", "yes")
    with pytest.raises(ValueError, match="GENBOUNDS_GIT_DIRTY must be 0 or 1"):
        _save(store, 1.0)


def test_a_commit_unknown_to_the_repository_is_said(tmp_path, monkeypatch) -> None:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                          text=True, check=False).stdout.strip()
    if len(head) != 40:
        pytest.skip("no git repository here")
    unknown = "0123456789abcdef" * 2 + "01234567"
    monkeypatch.setenv("GENBOUNDS_GIT_COMMIT", unknown)
    store = ResultStore(tmp_path, "quick")
    with pytest.warns(UserWarning, match="is not a commit of the repository"):
        _save(store, 1.0)
    loaded = store.load(FaultUnit(1), code_modules=CODE)
    assert loaded is not None and loaded.provenance.git_commit == unknown
    monkeypatch.setenv("GENBOUNDS_GIT_COMMIT", head)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _save(store, 2.0, n=2)
