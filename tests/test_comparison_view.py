"""genbounds.experiments.comparison_view: what the comparison chapter's pages share."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from genbounds.experiments import comparison as cmp
from genbounds.experiments import comparison_view as cv


def test_names_in_words() -> None:
    assert cv.env_words("mnist01/n") == "MNIST 0/1, varying sample size n"
    assert cv.env_words("sparse_majority/seed") == "sparse majority, varying seed"
    assert cv.env_words("no factor") == "no factor"
    key, name = next(iter(cv.PAPER_NAME.items()))
    assert cv.in_words(f"see '{key}' and {key}") == f"see {name} and {name}"
    shown = cv.tidy(pd.DataFrame({"a": [1.23456, np.nan], "b": ["", "x"]})).to_html()
    assert "1.23" in shown and "1.23456" not in shown and shown.count("—") == 2


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="scale"):
        cv.load("huge")
    with pytest.raises(ValueError, match="n_boot"):
        cv.load("quick", n_boot=5)


@pytest.fixture(scope="module")
def view() -> cv.ComparisonView:
    return cv.load("quick")  # the committed quick-scale store: nothing is trained


def test_the_view_is_what_the_pages_computed_cell_by_cell(view: cv.ComparisonView) -> None:
    assert len(view.rows) == int(view.is_ed.sum()) and len(view.rows_all) == view.family.size
    assert len(view.rows) + len(view.shallow_rows) + len(view.li_rows) == len(view.rows_all)
    assert view.n_boot == 100 and view.SM.task == "sparse_majority"
    assert set(view.M["varied"]) >= {"base"} and view.gap.shape == (len(view.rows),)
    k = view.applied[0]
    direct = cmp.rank_stats(view.rows, view.bt.values[k], n_boot=100,
                            noise=cmp.noise_matrix(view.rows))
    assert view.stats[k].Psi == direct.Psi and view.stats[k].Psi_ci == direct.Psi_ci
    lo, hi = direct.Psi_ci
    assert view.psi_ci(k) == f"{direct.Psi:+.2f} [{lo:+.2f}, {hi:+.2f}]"
    assert all(view.group[p] == "proved" for p in view.proved_keys)
    for key in view.applied:
        frac = view.vacuous_fraction(key)
        assert np.isnan(frac) or 0.0 <= frac <= 1.0
    assert view.ranking_holds(k, k, n_boot=20) == (0.0, 0.0)  # a bound against itself
    with pytest.raises(ValueError, match="lo_key"):
        view.ranking_holds(k, "no.such.bound")
