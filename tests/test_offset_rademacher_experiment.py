"""Tests for the offset-Rademacher experiments (tiny units)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from genbounds.experiments import offset_rademacher as e

TINY = e.OffsetRademacherConfig(n_values=(20, 40), seeds=2, steps=3, tail_steps=3, n_test=300,
                                rank_n=30, rank_values=(1, 2), tail_dfs=(0.0, 3.0),
                                tail_n_values=(30, 60), norm_n=30, l11_scales=(0.5, 2.0))


def test_units_cover_every_study() -> None:
    us = e.units(TINY)
    assert {u.study for u in us} == set(e.STUDIES)
    assert len(us) == 3 * 2 + 2 + 2 * 3 * 2 + 2
    assert all(u.steps == 3 for u in us)
    assert e.OffsetRademacherConfig.quick().n_values[-1] / e.OffsetRademacherConfig.quick(
    ).n_values[0] >= 100  # two decades at quick scale


def test_unit_validation() -> None:
    u = e.units(TINY)[0]
    with pytest.raises(ValueError, match="student_rank"):
        dataclasses.replace(u, teacher_rank=2, student_rank=1)
    with pytest.raises(ValueError, match="df"):
        dataclasses.replace(u, df=1.5)
    with pytest.raises(ValueError, match="lr_decay"):
        dataclasses.replace(u, lr_decay=1.5)
    with pytest.raises(ValueError, match="arm"):
        dataclasses.replace(u, arm="median")


def test_run_units_same_schema_and_sane_values() -> None:
    us = e.units(TINY)[::3]
    outs = [e.run_unit(u) for u in us]
    keys = list(outs[0])
    for u, o in zip(us, outs, strict=True):
        assert list(o) == keys                       # units concatenate
        assert all(np.asarray(v).shape == (u.seeds,) for v in o.values())
        assert np.all(o["excess"] >= 0) and np.all(o["excess_se"] > 0)
        assert np.all(np.isfinite(o["erm_gap"]))
    trunc = [o for o in outs if o["arm"][0] == e.ARMS.index("truncated")]
    for o in trunc:
        assert np.all(o["threshold_M"] > 0)


def test_paper_preset_device_auto_runs_tiny() -> None:
    paper = e.OffsetRademacherConfig.paper()
    assert paper.device == "auto" and paper.seeds > TINY.seeds
    u = dataclasses.replace(e.units(TINY)[-1], device="auto")   # a tails unit (local Adam)
    v = dataclasses.replace(e.units(TINY)[0], device="auto")    # a rates unit (train_ensemble)
    for unit in (u, v):
        out = e.run_unit(unit)
        assert np.all(np.isfinite(out["excess"]))


def test_warm_start_at_zero_perturbation_is_the_teacher() -> None:
    u = dataclasses.replace(e.units(TINY)[0], teacher_rank=1, student_rank=2,
                            init_perturbation=1e-12)
    teacher = e.make_teacher(u.d, 1, 1, 1, 1, u.T)
    s = e._warm_student(u, teacher, [1, 2])
    X = torch.randn(1, 50, u.T, u.d, dtype=torch.float64)
    torch.testing.assert_close(s(X.expand(2, -1, -1, -1)), teacher(X).expand(2, -1),
                               rtol=1e-8, atol=1e-8)
    with torch.no_grad():
        Xb = torch.as_tensor(np.random.default_rng(12345).standard_normal((1, 20000, u.T, u.d)))
        assert float(teacher(Xb).std()) == pytest.approx(1.0, rel=1e-6)


def test_fit_local_decreases_both_losses() -> None:
    from genbounds.models.li_transformer import LiTransformer
    m = LiTransformer(3, 2, n_models=2, dtype=torch.float64)
    X = torch.randn(2, 64, 4, 3, dtype=torch.float64)
    y = torch.randn(2, 64, dtype=torch.float64)
    for loss in ("mse", "huber"):
        with torch.no_grad():
            before = float(((m(X) - y) ** 2).mean())
        e.fit_local(m, X, y, loss, 50, 0.01)
        with torch.no_grad():
            assert float(((m(X) - y) ** 2).mean()) < before
    with pytest.raises(ValueError, match="loss"):
        e.fit_local(m, X, y, "l1", 1, 0.01)


def test_complexity_unit_tiny() -> None:
    cfg = e.ComplexityConfig(n_values=(16,), linear_draws=50, net_draws=2, restarts=1, steps=5)
    out = e.run_complexity_unit(cfg.units()[0])
    assert out["linear_offset"][0] <= out["linear_global"][0]
    assert out["linear_offset"][0] <= out["linear_rank_over_4cn"][0] + 4 * out[
        "linear_offset_se"][0]


def test_registered() -> None:
    from genbounds.experiments.registry import Experiment
    assert isinstance(e.EXPERIMENT, Experiment) and e.EXPERIMENT.name == "offset_rademacher"
    assert e.EXPERIMENT_COMPLEXITY.name == "offset_rademacher_complexity"
    assert e.EXPERIMENT.config("paper").n_values[-1] > e.EXPERIMENT.config("quick").n_values[-1]


def test_project_l11_against_bisection() -> None:
    gen = torch.Generator().manual_seed(0)
    t = torch.randn(3, 2, 4, 5, generator=gen, dtype=torch.float64)
    radius = torch.tensor([1.0, 50.0], dtype=torch.float64)        # second: inside the ball
    out = e.project_l11(t, radius)
    for i in range(3):
        for j in range(2):
            a = t[i, j].abs().flatten()
            r = float(radius[j])
            if float(a.sum()) <= r:
                torch.testing.assert_close(out[i, j], t[i, j])
                continue
            lo, hi = 0.0, float(a.max())
            for _ in range(200):
                mid = 0.5 * (lo + hi)
                lo, hi = (mid, hi) if float(torch.clamp(a - mid, min=0).sum()) > r else (lo, mid)
            ref = torch.sign(t[i, j]) * torch.clamp(t[i, j].abs() - hi, min=0)
            torch.testing.assert_close(out[i, j], ref, rtol=1e-9, atol=1e-9)
            assert float(out[i, j].abs().sum()) == pytest.approx(r)


def test_norm_unit_respects_the_ball() -> None:
    u = next(x for x in e.units(TINY) if x.study == "norm")
    out = e.run_unit(u)
    teacher = e.make_teacher(u.d, u.teacher_rank, 1, 1, u.teacher_rank, u.T)
    assert np.all(out["l11_scale"] == u.l11_scale)
    assert np.all(out["norm.Wv_l11_max"] <= u.l11_scale * float(
        teacher.W_v.detach().abs().sum()) + 1e-9)


def test_a_dead_teacher_is_drawn_again_and_a_live_one_is_unchanged() -> None:
    # the paper scale's two-layer teacher from seed 12345 is constant (ReLU kills every value)
    t = e.make_teacher(4, 2, 1, 2, 2, 8)
    assert t.seeds[0] > 12345
    X = torch.randn(1, 500, 8, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert float(t(X).std()) > 0.5
    live = e.make_teacher(3, 2, 1, 1, 2, 4)
    assert live.seeds[0] == 12345
    with pytest.raises(ValueError, match="constant"):
        e.make_teacher(4, 2, 1, 2, 2, 8, max_redraws=0)
