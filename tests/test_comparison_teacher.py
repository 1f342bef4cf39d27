"""The teacher-student regression task of the comparison sweep: Li et al.'s adapter statement by
statement, the stored excess risk and ``li.*`` columns, and rank statistics against the excess
risk (never the 0-1 gap)."""

from __future__ import annotations

import numpy as np
import pytest

from genbounds.bounds import offset_rademacher as orb
from genbounds.bounds import offset_rademacher_notation as orn
from genbounds.bounds.registry import NotApplicable, get
from genbounds.experiments import comparison as cmp

LI_ROW = {"li.B": 1.5, "li.B_w": 2.0, "li.B_X": 4.0, "li.B_x": 3.0, "li.kappa": 1.0,
          "li.sigma": 0.5, "li.d": 3,
          "li.k": 2, "li.r_QK": 2, "li.r_v": 2, "li.r_c": 2, "li.T": 4,
          "li.l11.B_c": 5.0, "li.l11.B_v": 6.0, "li.l11.B_QK": 7.0,
          "li.spectral.B_c": 1.1, "li.spectral.B_v": 1.2, "li.spectral.B_QK": 1.3}


def _ctx(key: str, **kw: object) -> dict[str, object]:
    return {"bound": get(key), "family": "LiTransformer", "m": 100, "T": 4, "heads": 1,
            "depth": 1, "task": "teacher_student", "loss": "mse", "teacher": True, **kw}


@pytest.mark.parametrize(("stmt", "match"), [
    ("cor_4_8", "no noise term"), ("thm_6_4", "truncated at M"),
    ("thm_6_9", "robust loss"), ("thm_5_3", "L-layer"), ("thm_5_8", "L-layer"),
    ("thm_4_4", r"offset Rademacher complexity.*li\.offset_complexity")])
def test_li_adapter_refuses_statements_outside_the_environment(stmt: str, match: str) -> None:
    with pytest.raises(NotApplicable, match=match):
        orn.li_quantities(LI_ROW, _ctx(f"offset_rademacher.{stmt}.audited"))


def test_li_adapter_checks_the_architecture_and_reads_the_right_norms() -> None:
    for stmt in ("thm_b_1", "thm_b_4"):
        with pytest.raises(NotApplicable, match="one-head"):
            orn.li_quantities(LI_ROW, _ctx(f"offset_rademacher.{stmt}.audited", heads=2))
    with pytest.raises(NotApplicable, match="H-head one-layer"):
        orn.li_quantities(LI_ROW, _ctx("offset_rademacher.thm_b_2.audited", depth=2))
    # norm-based statements read l_{1,1} norms, rank-based ones spectral norms
    qn = orn.li_quantities(LI_ROW, _ctx("offset_rademacher.thm_b_2.audited", heads=2))
    assert (qn["B_c"], qn["B_v"], qn["B_QK"], qn["heads"], qn["n"]) == (5.0, 6.0, 7.0, 2, 100)
    qr = orn.li_quantities(LI_ROW, _ctx("offset_rademacher.thm_b_4.printed"))
    assert (qr["B_c"], qr["B_v"], qr["B_QK"]) == (1.1, 1.2, 1.3)
    assert isinstance(qr["r_QK"], int) and qr["d"] == 3
    # the value is the registered function at those quantities
    v = get("offset_rademacher.thm_b_1.audited").evaluate(
        orn.li_quantities(LI_ROW, _ctx("offset_rademacher.thm_b_1.audited"))).value
    assert v == pytest.approx(orb.norm_bound_single_head(
        100, 1.0, 1.5, 2.0, 5.0, 6.0, 7.0, 4.0, form="audited", sigma=0.5).value)
    with pytest.raises(NotApplicable, match=r"li\.l11\.B_c"):
        orn.li_quantities({k: v for k, v in LI_ROW.items() if k != "li.l11.B_c"},
                          _ctx("offset_rademacher.thm_b_1.audited"))


def _ts(**kw: object) -> cmp.Setting:
    base = dict(task="teacher_student", n=30, T=4, width=2, heads=1, depth=1, epochs=20,
                lr=1e-2, seeds=2, n_test=2000, d=3)
    base.update(kw)
    return cmp.Setting(**base)  # type: ignore[arg-type]


def test_teacher_student_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="depth 1"):
        _ts(depth=2)
    with pytest.raises(ValueError, match="width"):
        _ts(width=4)
    with pytest.raises(ValueError, match="teacher_student"):
        cmp.teacher_student_unit(cmp.Setting(
            task="sparse_majority", n=12, T=6, width=3, heads=1, depth=1, epochs=3, lr=1e-2,
            seeds=2, n_test=20, d=8, s=3))
    u = cmp.teacher_student_unit(_ts(heads=2))
    assert (u.arch, u.heads, u.student_rank, u.teacher_rank, u.steps) == ("multi", 2, 2, 2, 20)
    quick = [s for s in cmp.settings(cmp.ComparisonConfig.quick()) if s.task == "teacher_student"]
    assert {s.varied for s in quick} == {"base", "n", "heads", "joint"}


@pytest.fixture(scope="module")
def ts_rows() -> list[dict[str, float]]:
    return cmp.model_rows([cmp.run_setting(_ts()), cmp.run_setting(_ts(n=120)),
                           cmp.run_setting(_ts(heads=2))])


def test_teacher_student_rows_store_the_excess_risk_and_li_columns(
        ts_rows: list[dict[str, float]]) -> None:
    assert len(ts_rows) == 6
    for r in ts_rows:
        assert cmp.FAMILIES[int(r["family"])] == "LiTransformer"
        assert cmp.TASKS[int(r["task"])] == "teacher_student"
        assert r["excess"] > 0 and r["excess_se"] > 0
        # test MSE - sigma^2 and mean (f - f*)^2 estimate the same excess risk
        assert abs(r["excess_mse"] - r["excess"]) <= 4 * r["excess_mse_se"]
        assert r["li.B"] == r["B_target"] and r["li.kappa"] == cmp.LI_KAPPA
        assert r["li.l11.B_c"] >= r["li.spectral.B_c"] > 0  # l_{1,1} >= spectral
        assert "gap" not in r  # no 0-1 gap: another kind of measured quantity
    assert cmp.TASK_LOSS["teacher_student"] == "mse"  # the loss the adapters are told


def test_li_bounds_apply_to_the_students_and_rank_against_the_excess_risk(
        ts_rows: list[dict[str, float]]) -> None:
    bt = cmp.evaluate_bounds(ts_rows)
    heads = np.array([r["heads"] for r in ts_rows])
    li = {k for k, v in bt.values.items() if k.startswith("offset_rademacher.")
          and np.isfinite(v).any()}
    assert {k.split(".")[1] for k in li} == {"thm_b_1", "thm_b_2", "thm_b_4", "thm_b_5"}
    b1 = bt.values["offset_rademacher.thm_b_1.audited"]
    assert np.isfinite(b1[heads == 1]).all() and np.isnan(b1[heads == 2]).all()
    assert "one-head" in bt.partial["offset_rademacher.thm_b_1.audited"]
    assert np.isfinite(bt.values["offset_rademacher.thm_b_5.printed"]).all()
    exc = np.array([r["excess"] for r in ts_rows])
    rs = cmp.rank_stats(ts_rows, exc * 2.0, n_boot=20, target="excess")
    assert rs.tau == pytest.approx(1.0)
    assert cmp.rank_stats(ts_rows, -exc, n_boot=20, target="excess").tau == pytest.approx(-1.0)
    nz = cmp.noise_matrix(ts_rows, target="excess")
    se = np.array([r["excess_se"] for r in ts_rows])
    assert nz[0, 1] == pytest.approx(1.96 * np.hypot(se[0], se[1]))
    with pytest.raises(KeyError):  # no gap is stored: a gap ranking cannot be computed
        cmp.rank_stats(ts_rows, exc, n_boot=20)
    with pytest.raises(ValueError, match="target"):
        cmp.rank_stats(ts_rows, exc, n_boot=20, target="test_loss")
    with pytest.raises(ValueError, match="target"):
        cmp.noise_matrix(ts_rows, target="mse")


def test_teacher_student_unit_follows_chapter_4s_presets() -> None:
    from genbounds.experiments.offset_rademacher import OffsetRademacherConfig

    q, p = OffsetRademacherConfig.quick(), OffsetRademacherConfig.paper()
    assert cmp.teacher_student_unit(_ts()).lr_decay == q.lr_decay
    assert cmp.teacher_student_unit(_ts(epochs=p.steps)).lr_decay == p.lr_decay
    u = cmp.teacher_student_unit(_ts())
    assert (u.noise_std, u.init_perturbation) == (q.noise_std, q.init_perturbation)
