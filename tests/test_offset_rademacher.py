"""Tests for the offset-Rademacher chapter: estimators, the Li et al. Transformer, the bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import optimize

from genbounds import complexity
from genbounds import offset_complexity as oc
from genbounds.bounds import offset_rademacher as orb
from genbounds.bounds.registry import registered
from genbounds.models.li_transformer import LiTransformer
from genbounds.tables import format_number


# ------------------------------------------------------------------ estimators
def _scipy_sup(X: np.ndarray, xi: np.ndarray, B: float, c: float) -> float:
    d = X.shape[1]

    def neg(w: np.ndarray) -> float:
        v = X @ w
        return -float(xi @ v - c * v @ v)

    cons = {"type": "ineq", "fun": lambda w: B**2 - w @ w}
    best = math.inf
    rng = np.random.default_rng(0)
    for _ in range(5):
        w0 = rng.standard_normal(d)
        w0 *= 0.5 * B / np.linalg.norm(w0)
        r = optimize.minimize(neg, w0, constraints=[cons], method="SLSQP",
                              options={"ftol": 1e-12, "maxiter": 500})
        best = min(best, r.fun)
    return -best


@pytest.mark.parametrize("B,c", [(0.3, 1.0), (5.0, 0.2), (1.0, 0.0), (100.0, 2.0)])
def test_linear_l2_sup_matches_scipy(B: float, c: float) -> None:
    rng = np.random.default_rng(1)
    X = rng.standard_normal((12, 4))
    xi = complexity.rademacher_signs(3, 12, seed=2)
    sup = oc.offset_linear_l2_sup(X, B, c)(xi)
    for j in range(3):
        assert sup[j] == pytest.approx(_scipy_sup(X, xi[j], B, c), rel=1e-5, abs=1e-8)


def test_linear_l2_limits() -> None:
    rng = np.random.default_rng(3)
    X = rng.standard_normal((10, 3))
    xi = complexity.rademacher_signs(50, 10, seed=4)
    # c = 0: the global sup B ||X^T xi||
    np.testing.assert_allclose(oc.offset_linear_l2_sup(X, 2.0, 0.0)(xi),
                               complexity.linear_l2_sup(X, 2.0)(xi), rtol=1e-9)
    # B -> inf: the unconstrained offset sup of genbounds.complexity
    np.testing.assert_allclose(oc.offset_linear_l2_sup(X, 1e6, 0.5)(xi),
                               complexity.offset_linear_sup(X, 0.5)(xi), rtol=1e-9)


def test_linear_l2_exact_enumeration() -> None:
    rng = np.random.default_rng(5)
    X = rng.standard_normal((8, 2))
    exact = complexity.empirical_rademacher_exact(oc.offset_linear_l2_sup(X, 0.7, 0.5), 8)
    mc = oc.offset_rademacher_linear_l2(X, 0.7, 0.5, n_draws=4000, seed=1)
    assert abs(mc.mean - exact) < 4 * mc.stderr
    # offset <= global and <= unconstrained rank/(4 c n)
    glob = complexity.empirical_rademacher_exact(oc.offset_linear_l2_sup(X, 0.7, 0.0), 8)
    assert exact <= glob
    assert exact <= complexity.offset_rademacher_linear_exact(X, 0.5) + 1e-12


def test_linear_l2_bad_input() -> None:
    with pytest.raises(ValueError, match="B"):
        oc.offset_linear_l2_sup(np.ones((3, 2)), -1.0, 1.0)
    with pytest.raises(ValueError, match="c"):
        oc.offset_linear_l2_sup(np.ones((3, 2)), 1.0, -1.0)


def test_network_estimator_finite_and_ordered() -> None:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 3, 2))

    def make(K: int, seeds: list[int]) -> torch.nn.Module:
        return LiTransformer(2, 2, n_models=K, seeds=seeds, dtype=torch.float64)

    off, per = oc.offset_rademacher_network(make, X, 1.0, 1.0, n_draws=4, restarts=2, steps=60)
    glob, _ = oc.offset_rademacher_network(make, X, 0.0, 1.0, n_draws=4, restarts=2, steps=60)
    assert per.shape == (4,) and np.isfinite(per).all()
    # the zero function is in the class (w can shrink to 0): each sup >= 0 up to optimisation
    assert off.mean >= -1e-6
    assert glob.mean >= off.mean - 1e-9
    with pytest.raises(ValueError, match="radius"):
        oc.offset_rademacher_network(make, X, 1.0, 0.0)


def test_project_frobenius() -> None:
    m = LiTransformer(3, 2, n_models=2, dtype=torch.float64)
    with torch.no_grad():
        m.W_v.mul_(100.0)
    oc.project_frobenius(m, 0.5)
    assert float(torch.linalg.matrix_norm(m.W_v.detach(), dim=(-2, -1)).max()) <= 0.5 + 1e-12
    assert float(torch.linalg.vector_norm(m.w.detach(), dim=-1).max()) <= 0.5 + 1e-12


# ------------------------------------------------------------------ model
@pytest.mark.parametrize("heads,layers", [(1, 1), (2, 1), (1, 2), (2, 3)])
@torch.no_grad()
def test_li_transformer_forward_is_the_paper_formula(heads: int, layers: int) -> None:
    d, k, T = 3, 2, 4
    m = LiTransformer(d, k, heads=heads, layers=layers, n_models=2, seeds=[1, 2],
                      dtype=torch.float64)
    X = torch.randn(2, 5, T, d, dtype=torch.float64)
    out = m(X)
    # direct implementation of eqs. (2)-(5), row convention, one model and one sample at a time
    for kk in range(2):
        for b in range(5):
            Y = X[kk, b]
            for i in range(layers):
                P = sum(torch.relu(torch.softmax(Y @ (m.W_Q[kk, i, h] @ m.W_K[kk, i, h].T) @ Y.T,
                                                 dim=-1) @ Y @ m.W_v[kk, i, h]) @ m.W_c[kk, i, h]
                        for h in range(heads))
                if layers > 1:
                    P = P / torch.clamp(P.norm(dim=-1, keepdim=True), min=1.0)
                    P = torch.relu(P)
                    P = P / torch.clamp(P.norm(dim=-1, keepdim=True), min=1.0)
                Y = P
            assert float(out[kk, b]) == pytest.approx(float(Y[0] @ m.w[kk]), rel=1e-10, abs=1e-12)
    rep = m.representation(X)
    torch.testing.assert_close(out, (rep[:, :, 0] * m.w[:, None]).sum(-1))


def test_li_transformer_ensemble_equals_single_and_view() -> None:
    m = LiTransformer(3, 2, rank_qk=1, n_models=3, seeds=[4, 5, 6], dtype=torch.float64)
    one = LiTransformer(3, 2, rank_qk=1, n_models=1, seeds=[5], dtype=torch.float64)
    X = torch.randn(1, 7, 4, 3, dtype=torch.float64)
    torch.testing.assert_close(m(X.expand(3, -1, -1, -1))[1], one(X)[0])
    v = m.view()
    WQK = v.layers[0].heads[0].W_QK
    assert WQK.shape == (3, 3, 3)
    assert int(torch.linalg.matrix_rank(WQK[0])) == 1
    torch.testing.assert_close(v.layers[0].heads[0].W_V, m.W_v[:, 0, 0].mT.detach())


def test_li_transformer_bad_args() -> None:
    with pytest.raises(ValueError, match="rank_qk"):
        LiTransformer(3, 2, rank_qk=4)
    with pytest.raises(ValueError, match="activation"):
        LiTransformer(3, 2, activation="gelu")
    m = LiTransformer(3, 2, cls_index=5)
    with pytest.raises(ValueError, match="cls_index"):
        m(torch.randn(1, 2, 4, 3))


# ------------------------------------------------------------------ bounds
def _on_constraint(z: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    """A point of {eps_j > 0 : sum_j beta_j eps_j = eps} from free coordinates (softmax)."""
    p = np.exp(z - z.max())
    return eps * (p / p.sum()) / beta


def test_allocate_inverse_square_matches_scipy() -> None:
    a, beta, eps = np.array([1.0, 4.0, 0.5]), np.array([1.0, 2.0, 3.0]), 0.1
    val, alloc = orb.allocate_inverse_square(a, beta, eps)
    assert beta @ alloc == pytest.approx(eps)
    res = optimize.minimize(lambda z: float(np.sum(a / _on_constraint(z, beta, eps) ** 2)),
                            np.zeros(3), method="Nelder-Mead",
                            options={"xatol": 1e-12, "fatol": 1e-14, "maxiter": 20000})
    assert val == pytest.approx(res.fun, rel=1e-5)


def test_allocate_log_matches_scipy_and_printed_b_is_wrong() -> None:
    r, C, BX, beta, eps = np.array([1.0, 2.0, 3.0]), np.array([1.0, 1.0, 1.0]), 2.0, \
        np.array([1.0, 0.5, 4.0]), 0.05
    c = r * BX**2
    val, alloc, b = orb.allocate_log(r, C, c, beta, eps)

    def obj(z: np.ndarray) -> float:
        return float(np.sum(r * C * np.log(c / np.exp(2 * z))))

    res = optimize.minimize(lambda z: obj(np.log(_on_constraint(z, beta, eps))), np.zeros(3),
                            method="Nelder-Mead",
                            options={"xatol": 1e-12, "fatol": 1e-14, "maxiter": 20000})
    assert val == pytest.approx(res.fun, rel=1e-6)
    assert val == pytest.approx(float(np.sum(r * C * np.log(b**2 / eps**2))), rel=1e-12)
    printed = orb.corollary_5_6_printed_b(r, C, BX, beta)
    assert float(np.sum(r * C * np.log(printed**2 / eps**2))) != pytest.approx(val, rel=1e-3)


def test_norm_bound_hand_checked() -> None:
    # all norms 1, kappa = 1, n = 100, C_1 = 1, one head: prefactor 4 * 2 / 100 = 0.08
    bv = orb.norm_bound_single_head(100, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, delta=0.1,
                                    form="printed")
    g = 4.0  # gamma_SH = (1 + 1) + (1 + 1)
    assert bv.value == pytest.approx(0.08 * (1 + math.log(g**3 / 0.01)) + 0.8)
    au = orb.norm_bound_single_head(100, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, delta=0.1,
                                    sigma=0.5)
    # audited components: scale (1, 1, 1, 1), beta (1, 1, 1, 2): gamma^3 = (3 + 4^(1/3))^3;
    # b = B + B_w B_c B_v B_X = 2, A = (4 b^2 + 24 sigma^2)/n, proper cover log N = 4 G/delta^2
    G = (3 + 4 ** (1 / 3)) ** 3
    A, K = (16 + 6) / 100, 28 + 6 * math.sqrt(2 / math.pi)
    assert au.value == pytest.approx(A * 4 * G / 0.01 + K * 0.1)
    with pytest.raises(ValueError, match="sigma"):
        orb.norm_bound_single_head(100, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
    # the optimal delta: closed form minimiser checked by scipy
    best = orb.norm_bound_single_head(100, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, sigma=0.5)
    res = optimize.minimize_scalar(lambda t: orb.norm_bound_single_head(
        100, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, delta=math.exp(t), sigma=0.5).value,
        bounds=(-10, 5), method="bounded")
    assert best.value == pytest.approx(res.fun, rel=1e-6)


def test_norm_bound_rate_is_n_to_minus_one_third_after_audit() -> None:
    ns = np.array([1e3, 1e4, 1e5, 1e6])
    vals = [orb.norm_bound_single_head(int(n), 1, 1, 1, 1, 1, 1, 1, sigma=0.5).value
            for n in ns]
    slope = np.polyfit(np.log(ns), np.log(vals), 1)[0]
    assert slope == pytest.approx(-1 / 3, abs=0.02)
    printed = [orb.norm_bound_single_head(int(n), 1, 1, 1, 1, 1, 1, 1, form="printed").value
               for n in ns]
    assert np.polyfit(np.log(ns), np.log(printed), 1)[0] < -0.8


def test_rank_bounds_rate_and_monotone_in_rank() -> None:
    ns = [10**3, 10**4, 10**5, 10**6]
    vals = [orb.rank_bound_single_head(n, 3, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, sigma=0.5).value
            for n in ns]
    slope = np.polyfit(np.log(ns), np.log(vals), 1)[0]
    assert -1.0 < slope < -0.8  # log n / n
    lo = orb.rank_bound_single_head(1000, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, sigma=0.5).value
    hi = orb.rank_bound_single_head(1000, 3, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, sigma=0.5).value
    assert lo < hi
    # the noise enters: a larger sigma gives a larger audited bound
    assert orb.rank_bound_single_head(1000, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, sigma=5.0
                                      ).value > lo
    ml = orb.rank_bound_multi_layer(1000, 2, 3, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, sigma=0.5)
    assert ml.value > 0 and ml.terms["log_covering"] > 0


def test_cover_excess_and_offset_excess_hand_checked() -> None:
    v = orb.cover_excess(100, math.log(50), 2.0, 1.0, 0.01)
    assert v.value == pytest.approx(2 * 2.0 / 100 * (1 + math.log(50)) + 0.08)
    assert orb.offset_excess(0.01, 0.2).value == pytest.approx(0.24)
    assert orb.penalty_single_head(1, 1, 2, 1, 1, 1, 3, heads=2) == pytest.approx(2 + 2 * 2 * 6)
    assert orb.penalty_multi_layer(0.5, 1, 3) == pytest.approx(4.0)
    with pytest.raises(ValueError, match="n"):
        orb.cover_excess(0, 1.0, 1.0, 1.0, 0.1)


def test_truncation_terms() -> None:
    p = orb.subgaussian_truncation_error(3.0, 1.0, 4, 3, 1.0, form="printed")
    a = orb.subgaussian_truncation_error(3.0, 1.0, 4, 3, 1.0)
    assert p == pytest.approx(7 * math.exp(-4.5))
    assert a == pytest.approx(7 * 11 * math.exp(-4.5))
    assert orb.heavy_tail_bias(2.0, 4.0, 1.0, 1, 1, 1.0) == pytest.approx(4 / 2 * 2.0**-2)
    assert orb.heavy_tail_truncation_rate(3.0) == (0.5, 0.5)
    assert orb.heavy_tail_truncation_rate(3.0, form="printed") == (1.0, 0.5)
    with pytest.raises(ValueError, match="beta"):
        orb.heavy_tail_truncation_rate(2.0)
    # the audited threshold exponent minimises M/n + M^(2-beta): check numerically
    for beta in (3.0, 5.0):
        ns = np.logspace(3, 8, 6)
        Ms = [optimize.minimize_scalar(
            lambda t, n=n, b=beta: math.exp(t) / n + math.exp(t * (2 - b)),
            bounds=(-5, 40), method="bounded").x for n in ns]
        slope = np.polyfit(np.log(ns), Ms, 1)[0]
        assert slope == pytest.approx(orb.heavy_tail_truncation_rate(beta)[0], abs=1e-3)


def test_every_bound_registered_in_both_forms() -> None:
    keys = {b.key for b in registered() if b.key.startswith("offset_rademacher.")}
    stems = {k.rsplit(".", 1)[0] for k in keys}
    for s in stems:
        assert {f"{s}.printed", f"{s}.audited"} <= keys
    assert len(stems) == 18
    b = next(b for b in registered() if b.key == "offset_rademacher.thm_b_1.audited")
    q = dict(n=100, B=1.0, B_w=1.0, B_c=1.0, B_v=1.0, B_QK=1.0, B_X=1.0, sigma=0.5)
    assert "sigma" in b.needs and "kappa" not in b.needs
    assert b.evaluate(q).value == pytest.approx(
        orb.norm_bound_single_head(100, 1, 1, 1, 1, 1, 1, 1, sigma=0.5).value)


def test_squared_loss_audited_hand_checked_and_covers_counterexample() -> None:
    v = orb.squared_loss_excess_audited(100, math.log(2), 1.0, 10.0)
    assert v.value == pytest.approx((4 + 2400) * math.log(2) / 100)
    # two functions f* = 0, f_1 = a: ERM picks f_1 iff mean(y) > a/2; excess a^2 P(...)
    from scipy import stats
    a, sigma, n = 1.0, 10.0, 100
    excess = a**2 * stats.norm.sf(a * math.sqrt(n) / (2 * sigma))
    assert excess <= orb.squared_loss_excess_audited(n, math.log(2), a, sigma).value
    with pytest.raises(ValueError, match="sigma"):
        orb.squared_loss_excess_audited(10, 1.0, 1.0, -1.0)


def test_section_6_bounds_compose() -> None:
    one = dict(kappa=1.0, B=1.0, B_w=1.0, B_c=1.0, B_v=1.0, B_QK=1.0)
    aud = orb.subgaussian_norm_bound(500, 3.0, 1.0, 4, 3, **one, B_X=10.0, delta=0.1, sigma=0.5)
    base = orb.norm_bound_single_head(500, **one, B_X=3.0, delta=0.1, sigma=0.5)
    assert aud.value == pytest.approx(base.value + orb.subgaussian_truncation_error(
        3.0, 1.0, 4, 3, 1.0))
    prt = orb.subgaussian_norm_bound(500, 3.0, 1.0, 4, 3, **one, B_X=10.0, delta=0.1,
                                     form="printed")
    # printed prefactor keeps B_X = 10: 4 (1 + 10) / 500
    assert prt.terms["prefactor 4(kB + kH B_w B_c B_v L B_X)/n"] == pytest.approx(44 / 500)
    ml = orb.subgaussian_norm_bound(500, 3.0, 1.0, 4, 3, **one, B_X=10.0, layers=2, sigma=0.5)
    assert "Thm 6.6" in ml.reference and ml.terms["T_err(M)"] > 0
    ht = orb.heavy_tail_rank_bound(500, 3.0, 4.0, 1.0, 4, 3, 2, 2, 2, 2, **one, sigma=0.5)
    rb = orb.rank_bound_single_head(500, 3, 2, 2, 2, 2, **one, B_X=3.0, sigma=0.5)
    assert ht.value == pytest.approx(rb.value + orb.heavy_tail_bias(3.0, 4.0, 1.0, 4, 3, 1.0))
    assert "Thm 6.10" in orb.heavy_tail_rank_bound(500, 3.0, 4.0, 1.0, 4, 3, 2, 2, 2, 2, **one,
                                                   heads=2, sigma=0.5).reference
    with pytest.raises(ValueError, match="M"):
        orb.subgaussian_norm_bound(500, 0.0, 1.0, 4, 3, **one, B_X=1.0)


# ------------------------------------------------------------------ audit verdicts (issue #21)
def test_every_li_registration_has_a_verdict_and_printed_ones_are_refuted() -> None:
    from genbounds.bounds.registry import Verdict

    bs = [b for b in registered() if b.key.startswith("offset_rademacher.")]
    assert len(bs) == 36
    for b in bs:
        assert b.verdict is not None and b.audit.startswith("or-"), b.key
        if b.form == "audited":
            assert b.verdict is Verdict.HOLDS and "sigma" in b.needs or "noise_offset_complexity" \
                in b.needs, b.key
        elif b.verdict is Verdict.FALSE:
            assert "excess risk is" in b.counterexample, b.key
    false = {b.key for b in bs if b.verdict is Verdict.FALSE}
    assert "offset_rademacher.thm_4_4.printed" in false and len(false) == 15


def test_one_token_counterexample_numbers() -> None:
    v = orb.one_token_instance(10_000, 10.0)
    # the printed bound is 2/n whatever sigma; the excess of clip(mean y) is about sigma^2/n
    assert v["printed_thm_4_4"] == pytest.approx(2e-4, rel=1e-3)
    assert orb.one_token_instance(10_000, 1.0)["printed_thm_4_4"] == v["printed_thm_4_4"]
    assert v["true_excess"] == pytest.approx(1e-2, rel=1e-3)
    # Monte Carlo check of E min(ybar^2, 1)
    ybar = np.random.default_rng(0).normal(0, 1.0, 400_000)      # sigma = 100, n = 10^4
    mc = np.minimum(ybar**2, 1.0)
    w = orb.one_token_instance(10_000, 100.0)
    assert abs(mc.mean() - w["true_excess"]) < 4 * mc.std() / math.sqrt(mc.size)
    assert w["printed_cor_4_5"] < w["true_excess"]
    # the registered counterexample text carries these numbers
    b = next(b for b in registered() if b.key == "offset_rademacher.thm_4_4.printed")
    assert format_number(v["printed_thm_4_4"]) in b.counterexample
    assert format_number(v["true_excess"]) in b.counterexample
    assert "e-0" not in b.counterexample and "sigma" not in b.counterexample


def test_audited_offset_theorem_holds_on_the_counterexample() -> None:
    # h in [-1, 1] (constants), b = 1: R_off(h^2, 1/2) and E sup (4 xi h - h^2) by Monte Carlo
    n, sigma = 400, 10.0
    rng = np.random.default_rng(1)
    tau = rng.choice([-1.0, 1.0], size=(4000, n)).mean(axis=1)
    u = np.clip(tau, 0, 1)
    r_off = float(np.mean(u * tau - u**2 / 2))
    xi = rng.normal(0, sigma / math.sqrt(n), 4000)
    h = np.clip(2 * xi, -1, 1)
    q = float(np.mean(4 * xi * h - h**2))
    bound = orb.offset_excess_audited(r_off, q).value
    assert orb.one_token_instance(n, sigma)["true_excess"] <= bound


BAD = (-1.0, 0.0, math.nan, math.inf, "x", None, True)


@pytest.mark.parametrize(("fn", "kwargs", "may_be_zero"), [
    (orb.norm_bound_single_head, dict(n=100, kappa=1.0, B=1.0, B_w=1.0, B_c=1.0, B_v=1.0,
                                      B_QK=1.0, B_X=1.0, form="printed"), {"B"}),
    (orb.norm_bound_single_head, dict(n=100, kappa=1.0, B=1.0, B_w=1.0, B_c=1.0, B_v=1.0,
                                      B_QK=1.0, B_X=1.0, sigma=0.5), {"B", "sigma", "kappa"}),
    (orb.rank_bound_single_head, dict(n=100, d=3, k=2, r_QK=2, r_v=2, r_c=2, kappa=1.0, B=1.0,
                                      B_w=1.0, B_c=1.0, B_v=1.0, B_QK=1.0, B_X=1.0, sigma=0.5),
     {"B", "sigma", "kappa"}),
    (orb.norm_bound_multi_layer, dict(n=100, layers=2, kappa=1.0, B=1.0, B_w=1.0, B_c=1.0,
                                      B_v=1.0, B_QK=1.0, B_x=1.0, form="printed"), {"B"}),
    (orb.gamma_sh_printed, dict(C_1=1.0, B_x=1.0, B_w=1.0, B_c=1.0, B_v=1.0, L_sigma=1.0), set()),
    (orb.penalty_single_head, dict(kappa=1.0, B=1.0, B_w=1.0, B_c=1.0, B_v=1.0, L_sigma=1.0,
                                   B_X=1.0), {"B"}),
    (orb.squared_loss_excess_audited, dict(n=100, log_covering=1.0, b=1.0, sigma=1.0),
     {"log_covering", "sigma"}),
    (orb.one_token_instance, dict(n=100, sigma=1.0), set()),
])
def test_bad_input_raises_value_error_naming_the_argument(fn, kwargs, may_be_zero) -> None:
    """Every argument replaced by each bad value: a ValueError naming it (issue #17), or, for a
    value the statement allows (0 for B, sigma, ...; kappa unread by an audited form), a finite
    number."""
    for name in kwargs:
        if name == "form":
            continue
        for bad in BAD:
            args = {**kwargs, name: bad}
            try:
                out = fn(**args)
            except ValueError as err:
                assert name in str(err) or (bad is None and name == "sigma"), (name, bad, err)
                continue
            val = getattr(out, "value", out)
            assert isinstance(val, float) and math.isfinite(val), (name, bad, val)
            assert (bad == 0.0 and name in may_be_zero) or (name == "kappa" and
                                                            name in may_be_zero), (name, bad)


def test_property_bounds_finite_and_positive_on_valid_inputs() -> None:
    hyp = pytest.importorskip("hypothesis")
    from hypothesis import given, settings
    from hypothesis import strategies as st

    pos = st.floats(1e-3, 1e3)

    @settings(max_examples=40, deadline=None)
    @given(n=st.integers(1, 10**7), B=st.floats(0, 1e3), B_w=pos, B_c=pos, B_v=pos, B_QK=pos,
           B_X=pos, sigma=st.floats(0, 1e3), kappa=pos)
    def check(n, B, B_w, B_c, B_v, B_QK, B_X, sigma, kappa):
        for form in ("printed", "audited"):
            v = orb.norm_bound_single_head(n, kappa, B, B_w, B_c, B_v, B_QK, B_X, form=form,
                                           sigma=sigma)
            r = orb.rank_bound_single_head(n, 3, 2, 2, 2, 2, kappa, B, B_w, B_c, B_v, B_QK, B_X,
                                           form=form, sigma=sigma)
            for x in (v, r):
                assert math.isfinite(x.value)
                if form == "audited":
                    assert x.value > 0 or (B == 0 and sigma == 0)

    assert hyp is not None
    check()
