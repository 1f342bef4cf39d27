"""Stored norm columns -> the quantities of the registered bounds (TT and Edelman et al.).

Every mapped quantity is recomputed directly from the TT matrices in the orientation the
chapter's audit requires; a mapping that used the transposed (printed) column would fail
(``test_a_transposed_column_is_caught``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from genbounds.bounds import baselines as bl
from genbounds.bounds import get
from genbounds.bounds import trauger_tewari as tt
from genbounds.bounds.trauger_tewari_notation import (
    TT_COLUMNS,
    bound_on_run,
    quantities_from_norms,
    run_sizes,
    tt_correspondence,
    tt_norms,
)
from genbounds.models import SparseMajorityMHA
from genbounds.spectral import mixed_norm, operator_norm

C = 12.0


@pytest.fixture(scope="module")
def model_rows() -> tuple[dict[str, np.ndarray], list[dict[str, float]]]:
    m = SparseMajorityMHA(d=6, heads=2, key_dim=3, n_models=2, seeds=[4, 5], dtype=torch.float64)
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.3 * torch.randn_like(p))
    mats = {k: v.numpy() for k, v in tt_correspondence(m.view(), augment_bias=True).items()}
    norms = tt_norms(m.view())
    rows = []
    for k in range(2):
        row = {f"tt.{key}": float(v[k]) for key, v in norms.items()}
        row.update({"B_x_aug_l2": 2.5 + k, "B_x_aug_l1": 9.0 + k})
        rows.append(row)
    return mats, rows


def direct(mats: dict[str, np.ndarray], k: int, h: int, key: str) -> dict[str, float]:
    """The norms of ``key``'s audited statement, from TT's matrices (row convention)."""
    Wc, Wv, Wqk, w = mats["W_c"][k], mats["W_v"][k, h], mats["W_QK"][k, h], mats["w"][k]
    M = Wqk.T  # App. C: x_cls -> M x_cls
    if key.startswith("edelman"):
        return {"B_w": float(np.linalg.norm(w, axis=0).max()), "B_c2": operator_norm(Wc),
                "B_c21": mixed_norm(Wc, 2, 1), "B_v2": operator_norm(Wv),
                "B_v21": mixed_norm(Wv, 2, 1), "B_qk21": mixed_norm(M.T, 2, 1)}
    printed = key.endswith("printed")
    out = {"B_w": float(np.abs(w).sum(axis=0).max()),
           # audited Thm 4.1: every column of TT's W_c, W_v; printed: of their transposes
           "B_Wc": mixed_norm(Wc.T if printed else Wc, 1, math.inf),
           "B_Wv": mixed_norm(Wv.T if printed else Wv, 1, math.inf)}
    if "cor_4_1_1" in key:
        out["B_QK"] = mixed_norm(M, 1, 1)
    elif "cor_d_0_1" in key:
        out["B_QK"] = mixed_norm(M, 1, math.inf)
    else:
        out["B_QK"] = mixed_norm(M if printed else M.T, 2, 1)
    return out


@pytest.mark.parametrize("key", sorted(TT_COLUMNS))
def test_quantities_match_direct_norms(model_rows, key: str) -> None:
    mats, rows = model_rows
    sizes = run_sizes(300, 6, 20)
    assert sizes == {"m": 300, "d": 7, "k": 6, "T": 21}
    for k in range(2):
        for h in range(2):
            q = quantities_from_norms(rows[k], sizes, key, h)
            assert set(q) == set(get(key).needs)
            for name, value in direct(mats, k, h, key).items():
                assert q[name] == pytest.approx(float(value), rel=1e-12), (key, name)
            l2 = "cor_4_1_1" in key or key.startswith("edelman")
            assert q["B_x"] == rows[k]["B_x_aug_l2" if l2 else "B_x_aug_l1"]
            assert q["m"] == 300 and q["d"] == 7


def test_a_transposed_column_is_caught(model_rows) -> None:
    """The mutation the audit guards against: the printed (row) norm for the audited bound."""
    mats, rows = model_rows
    key = "trauger_tewari.cor_4_1_1.audited"
    mutated = dict(TT_COLUMNS[key], B_Wv="tt.W_v_h{h}_l1inf")   # the printed column
    q = {name: rows[0][col.format(h=1)] for name, col in mutated.items()}
    assert q["B_Wv"] != pytest.approx(direct(mats, 0, 1, key)["B_Wv"], rel=1e-3)


def test_bound_on_run_equals_direct_evaluation(model_rows) -> None:
    """The registry path gives the numbers of the chapter's former direct computation."""
    mats, rows = model_rows
    sizes = run_sizes(300, 6, 20)
    key = "trauger_tewari.cor_4_1_1.audited"
    got = bound_on_run(rows[1], sizes, key, heads=2)
    heads = []
    for h in range(2):
        n = direct(mats, 1, h, key)
        heads.append(tt.rademacher_one_layer_l11(
            300, 7, B_w=n["B_w"], B_Wc=n["B_Wc"], B_Wv=n["B_Wv"], L_sigma=1.0,
            B_x=rows[1]["B_x_aug_l2"], B_QK=n["B_QK"], c=C))
    assert got.value == pytest.approx(sum(b.value for b in heads), rel=1e-12)
    assert got.choices["form"] == "audited"
    assert got.regime == heads[0].regime or ";" in got.regime
    ed_key = "edelman.single_head_log_T.reconstructed"
    ed = bound_on_run(rows[1], sizes, ed_key, heads=2)
    want = 0.0
    for h in range(2):
        n = direct(mats, 1, h, ed_key)
        want += bl.edelman_rademacher_single_head(300, 21, d=7, k=6, B_x=rows[1]["B_x_aug_l2"],
                                                  L_sigma=1.0, c=C, **n).value
    assert ed.value == pytest.approx(want, rel=1e-12)
    # the constants of the registry can be overridden, and reach the bound
    half = bound_on_run(rows[1], sizes, key, heads=2, c=6.0)
    assert half.value == pytest.approx(got.value / 2, rel=1e-12)


def test_bad_input_raises(model_rows) -> None:
    _, rows = model_rows
    sizes = run_sizes(300, 6, 20)
    with pytest.raises(ValueError, match="key must be one of"):
        quantities_from_norms(rows[0], sizes, "trauger_tewari.thm_4_2.audited", 0)
    with pytest.raises(ValueError, match="head 2"):
        quantities_from_norms(rows[0], sizes, "trauger_tewari.cor_4_1_1.audited", 2)
    with pytest.raises(ValueError, match="head"):
        quantities_from_norms(rows[0], sizes, "trauger_tewari.cor_4_1_1.audited", -1)
    with pytest.raises(ValueError, match="'T'"):
        quantities_from_norms(rows[0], {"m": 300, "d": 7, "k": 6},
                              "edelman.single_head_log_T.reconstructed", 0)
    with pytest.raises(ValueError, match="B_x_aug_l2"):
        quantities_from_norms({k: v for k, v in rows[0].items() if k != "B_x_aug_l2"}, sizes,
                              "trauger_tewari.cor_4_1_1.audited", 0)
    with pytest.raises(ValueError, match="n_train"):
        run_sizes(0, 6, 20)
    with pytest.raises(ValueError, match="heads"):
        bound_on_run(rows[0], sizes, "trauger_tewari.cor_4_1_1.audited", heads=0)
