"""The quantities adapters of Dhingra (2025), Li et al. (2026) and Mwigo & Dasgupta (2026) on
hand-checked instances, and their use by the comparison sweep."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from genbounds.bounds import effective_rank_notation as ern
from genbounds.bounds import offset_rademacher_notation as orn
from genbounds.bounds import shallow_gd_notation as sgn
from genbounds.bounds.effective_rank import value_path_lipschitz
from genbounds.bounds.registry import NotApplicable, get, quantities_adapter
from genbounds.bounds.shallow_gd import QUANTITY_NAMES, shallow_gd_quantities
from genbounds.experiments import comparison as cmp
from genbounds.models.edelman import EdelmanTransformer
from genbounds.models.shallow_encoder import ShallowEncoder


def _ctx(key: str, **kw: object) -> dict[str, object]:
    return {"bound": get(key), "family": "EdelmanTransformer", "m": 10, "T": 5, "heads": 1,
            "depth": 1, "task": "sparse_majority", "loss": "bce_logits", "teacher": False, **kw}


# ------------------------------------------------------------------------------ Dhingra
def test_adapters_are_registered_for_their_papers() -> None:
    assert quantities_adapter("dhingra2025provable") is ern.dhingra_quantities
    assert quantities_adapter("li2026sharper") is orn.li_quantities
    assert quantities_adapter("mwigo2026shallow") is sgn.shallow_quantities


def test_dhingra_adapter_reads_columns_and_sizes() -> None:
    row = {"dhingra.erank_max": 2.0, "dhingra.Z_op_mean": 0.1, "dhingra.Z_op_max": 0.3,
           "dhingra.L_value_path": 4.0}
    q = ern.dhingra_quantities(row, _ctx("dhingra.thm1.audited"))
    assert q == {"Z_op_mean": 0.1, "R": 2.0, "n": 5, "m": 10}
    # by hand: 2 sqrt(R n) Z = 2 sqrt(10) 0.1, plus chapter 5's deviation term at delta = 0.05
    from genbounds.bounds.effective_rank import deviation_term

    v = get("dhingra.thm1.audited").evaluate(q).value
    assert v == pytest.approx(0.632456 + deviation_term(10, 0.05), abs=1e-5)
    qp = ern.dhingra_quantities(row, _ctx("dhingra.thm1.printed"))
    assert qp == {"L_tot": 4.0, "R": 2.0, "m": 10}
    # printed: 4 sqrt(2 log 10 / 10) + sqrt(log 20 / 10)
    assert get("dhingra.thm1.printed").evaluate(qp).value == pytest.approx(
        4 * math.sqrt(2 * math.log(10) / 10) + math.sqrt(math.log(20) / 10))
    with pytest.raises(NotApplicable, match="ShallowEncoder"):
        ern.dhingra_quantities({}, _ctx("dhingra.thm1.audited", family="ShallowEncoder"))


def _basis_tokens(T: int, B: int) -> torch.Tensor:
    return torch.eye(T).expand(1, B, T, T).clone()


def test_dhingra_columns_effective_ranks_on_uniform_and_identity_attention() -> None:
    T = 5
    model = EdelmanTransformer(d=T, k=3, heads=1, layers=1, n_models=2, seeds=[0, 1])
    X = _basis_tokens(T, 3).expand(2, 3, T, T).clone()
    with torch.no_grad():
        model.W_QK.zero_()                 # model 0 and 1: uniform attention, rank one
        model.W_QK[1, 0, 0] = 50 * torch.eye(T)  # model 1: scores 50 on the diagonal: A ~ I
    c = ern.dhingra_columns(model, X)
    assert c["dhingra.erank_max"][0] == pytest.approx(1.0, abs=1e-6)
    assert c["dhingra.erank_max"][1] == pytest.approx(T, abs=1e-3)
    assert np.allclose(c["dhingra.L_value_path"], value_path_lipschitz(model.view()))
    assert np.all(c["dhingra.Z_op_max"] >= c["dhingra.Z_op_mean"])
    with pytest.raises(ValueError, match="X"):
        ern.dhingra_columns(model, X[0])


# ------------------------------------------------------------------------------ Li et al.
def test_li_adapter_states_the_failed_hypothesis() -> None:
    key = "offset_rademacher.thm_4_4.audited"
    with pytest.raises(NotApplicable, match="squared loss.*'bce_logits'"):
        orn.li_quantities({}, _ctx(key))
    with pytest.raises(NotApplicable, match="teacher"):
        orn.li_quantities({}, _ctx(key, loss="mse"))
    with pytest.raises(NotApplicable, match=r"li\.offset_complexity"):
        orn.li_quantities({}, _ctx(key, loss="mse", teacher=True))
    pkey = "offset_rademacher.thm_4_4.printed"
    q = orn.li_quantities({"li.offset_complexity": 0.25}, _ctx(pkey, loss="mse", teacher=True))
    assert q == {"offset_complexity": 0.25}
    assert get(pkey).evaluate(q).value == pytest.approx(1.0)  # 4 R_off + 0
    # the cover corollaries have no noise term: refused for the squared loss with noise
    with pytest.raises(NotApplicable, match="no noise term"):
        orn.li_quantities({"li.log_covering": 3.0, "li.penalty": 1.0, "li.kappa": 2.0,
                           "li.delta": 0.1}, _ctx("offset_rademacher.cor_4_5.audited",
                                                  loss="mse", teacher=True, m=50))


# ------------------------------------------------------------------------------ shallow GD
def test_shallow_columns_use_each_models_own_data_and_distances_from_init() -> None:
    K, N, d_s, d = 2, 6, 4, 5
    model = ShallowEncoder(d=d, d_m=7, n_models=K, seeds=[3, 4])
    init = {k: v.detach().clone() for k, v in model.named_parameters()}
    with torch.no_grad():
        model.W_Q[0, 0, 0] += 0.5          # model 0: R_Q = 0.5 exactly, R_K = R_V = R_O = 0
        model.w_O[1, 2] -= 2.0             # model 1: R_O = 2
    g = torch.Generator().manual_seed(0)
    X = torch.randn(K, N, d_s, d, generator=g)
    y = torch.tensor([[0, 1, 0, 1, 1, 0], [1, 1, 0, 0, 1, 0]])
    view = model.view(initial_state=init)
    c = sgn.shallow_columns(view, X, y)
    assert set(c) == {"sgd." + q for q in QUANTITY_NAMES}
    assert c["sgd.R_Q"][0] == pytest.approx(0.5) and c["sgd.R_O"][1] == pytest.approx(2.0)
    assert c["sgd.R_K"][0] == pytest.approx(1e-12)  # floored at 1e-12 by shallow_gd_quantities
    for j in range(K):
        own = shallow_gd_quantities(view, X[j], y[j].numpy())
        for q in ("R_X", "B_X", "alpha", "phi0", "ell_yy"):
            assert c["sgd." + q][j] == pytest.approx(float(np.asarray(own[q])[j]))
    B_X1 = float(X[1].pow(2).sum(-1).sqrt().max())
    assert c["sgd.B_X"][1] == pytest.approx(B_X1)
    with pytest.raises(ValueError, match="initial"):
        sgn.shallow_columns(model.view(), X, y)
    with pytest.raises(ValueError, match="ShallowEncoder"):
        sgn.shallow_columns(EdelmanTransformer(d=5, k=3).view(), X, y)


def test_shallow_adapter_applies_to_shallow_encoders_only() -> None:
    key = "shallow_gd.theorem_5.audited"
    row = {"sgd." + q: 2.0 for q in QUANTITY_NAMES}
    with pytest.raises(NotApplicable, match="EdelmanTransformer"):
        sgn.shallow_quantities(row, _ctx(key))
    q = sgn.shallow_quantities(row, _ctx(key, family="ShallowEncoder"))
    assert set(q) == set(get(key).needs) and q["N"] == 2 and isinstance(q["N"], int)
    with pytest.raises(NotApplicable, match="sgd.alpha"):
        sgn.shallow_quantities({k: v for k, v in row.items() if k != "sgd.alpha"},
                               _ctx(key, family="ShallowEncoder"))


# ------------------------------------------------------------------------------ the sweep
def test_sweep_evaluates_each_paper_where_it_applies() -> None:
    tiny = dict(n=12, T=16, width=4, heads=1, depth=1, epochs=3, seeds=2, n_test=20, d=64,
                search_depth=2, montecarlo_samples=2)
    parts = [cmp.run_setting(cmp.Setting(task="mnist01_shallow", lr=0.1,  # type: ignore[arg-type]
                                         **tiny)),
             cmp.run_setting(cmp.Setting(task="mnist01", lr=1e-2, **tiny))]  # type: ignore[arg-type]
    rows = cmp.model_rows(parts)
    fam = np.array([cmp.FAMILIES[int(r["family"])] for r in rows])
    assert fam.tolist() == ["ShallowEncoder"] * 2 + ["EdelmanTransformer"] * 2
    assert rows[0]["tokens"] == 16 and rows[2]["tokens"] == 17  # no [CLS] in the shallow model
    bt = cmp.evaluate_bounds(rows)
    sh = bt.values["shallow_gd.theorem_5.audited"]
    dh = bt.values["dhingra.thm1.audited"]
    shallow = fam == "ShallowEncoder"
    assert np.isfinite(sh[shallow]).all() and np.isnan(sh[~shallow]).all()
    assert np.isfinite(dh[~shallow]).all() and np.isnan(dh[shallow]).all()
    assert "this model is a EdelmanTransformer" in bt.partial["shallow_gd.theorem_5.audited"]
    assert "ShallowEncoder" in bt.partial["dhingra.thm1.audited"]
    li = bt.reasons["offset_rademacher.thm_4_4.audited"]
    assert "squared loss" in li and "'bce_logits'" in li
    # the true-loss bound is a bound on the test loss: a valid one is above the measured value
    te = np.array([r["test_loss"] for r in rows])
    ok = bt.valid["shallow_gd.theorem_5.audited"]
    assert np.all(sh[ok] >= te[ok])
    with pytest.raises(ValueError, match="one head"):
        cmp.Setting(task="mnist01_shallow", lr=0.1, **{**tiny, "heads": 2})  # type: ignore[arg-type]
