"""The shallow-Transformer GD chapter: the model of Section 3.1.2, every bound quantity on small
hand-checked instances, printed vs audited forms, and the experiment's code path on tiny sizes."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from genbounds.bounds import shallow_gd as sg
from genbounds.bounds.registry import BoundKind, get
from genbounds.models.shallow_encoder import ShallowEncoder

torch.set_default_dtype(torch.float32)


# ------------------------------------------------------------------------------ the model


def test_shapes_and_lecun_init_statistics() -> None:
    m = ShallowEncoder(d=64, d_m=512, n_models=2, seeds=[0, 1])
    assert m.W_Q.shape == (2, 512, 64) and m.w_O.shape == (2, 512)
    for name in ("W_Q", "W_K", "W_V"):
        w = getattr(m, name).detach().double()
        assert abs(w.mean().item()) < 0.01
        assert w.var().item() == pytest.approx(1 / 64, rel=0.03)  # N(0, 1/d)
    wo = m.w_O.detach().double()
    assert wo.var().item() == pytest.approx(1 / 512, rel=0.1)  # N(0, 1/d_m)
    X = torch.randn(2, 5, 16, 64)
    assert m(X).shape == (2, 5)


def _hand_forward(WQ: np.ndarray, WK: np.ndarray, WV: np.ndarray, wO: np.ndarray,
                  X: np.ndarray) -> float:
    """f(X) = (1/d_s) w_O^T sum_i relu(W_V X^T softmax(X W_K^T W_Q x_i / sqrt(d_m))), by loops."""
    d_s, d_m = X.shape[0], WQ.shape[0]
    total = np.zeros(d_m)
    for i in range(d_s):
        s = np.array([X[j] @ WK.T @ WQ @ X[i] for j in range(d_s)]) / math.sqrt(d_m)
        beta = np.exp(s - s.max())
        beta /= beta.sum()
        z = WV @ X.T @ beta
        total += np.maximum(z, 0.0)
    return float(wO @ total / d_s)


def test_forward_matches_hand_computation_and_view_features() -> None:
    torch.manual_seed(0)
    m = ShallowEncoder(d=3, d_m=2, n_models=1, seeds=[3], dtype=torch.float64)
    X = torch.tensor([[[1.0, 0.0, 2.0], [0.5, -1.0, 0.0], [0.0, 1.0, 1.0]]],
                     dtype=torch.float64)[None]  # (K=1, B=1, d_s=3, d=3)
    p = {n: t.detach().numpy()[0] for n, t in m.named_parameters()}
    want = _hand_forward(p["W_Q"], p["W_K"], p["W_V"], p["w_O"], X[0, 0].numpy())
    assert m(X).item() == pytest.approx(want, rel=1e-12)
    F = sg.pre_features(m.view(), X[0])
    assert (F[0] @ m.w_O.detach()[0]).item() == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("shape", [(2, 5, 7, 8, 32), (1, 3, 16, 64, 128), (3, 2, 1, 4, 3)])
def test_reassociated_forward_equals_the_projected_form(shape: tuple[int, ...]) -> None:
    """forward (X (W_Q^T W_K) X^T, (A X) W_V^T, fused ReLU-mean-readout) equals the paper's
    association (queries, keys, values of width d_m first) to float64 round-off, values and
    gradients."""
    K, B, T, d, d_m = shape
    m = ShallowEncoder(d=d, d_m=d_m, n_models=K, seeds=list(range(K)), dtype=torch.float64)
    X = torch.randn(K, B, T, d, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    P = list(m.parameters())
    f1, f2 = m(X), m.forward_projected(X)
    assert torch.allclose(f1, f2, rtol=1e-13, atol=1e-15)
    g1 = torch.autograd.grad((f1 ** 2).sum(), P)
    g2 = torch.autograd.grad((f2 ** 2).sum(), P)
    for a, b in zip(g1, g2, strict=True):
        assert torch.allclose(a, b, rtol=1e-12, atol=1e-15)


def test_fused_node_gradcheck_and_retain_graph() -> None:
    m = ShallowEncoder(d=3, d_m=5, n_models=1, seeds=[0], dtype=torch.float64)
    X = torch.randn(1, 4, 3, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    names = [n for n, _ in m.named_parameters()]
    params = tuple(p.detach().clone().requires_grad_() for p in m.parameters())
    assert torch.autograd.gradcheck(
        lambda *p: torch.func.functional_call(m, dict(zip(names, p, strict=True)), (X,)), params)
    out = m(X).sum()
    a = torch.autograd.grad(out, list(m.parameters()), retain_graph=True)
    b = torch.autograd.grad(out, list(m.parameters()))  # the saved activation is intact
    assert all(torch.equal(u, v) for u, v in zip(a, b, strict=True))


def test_gradient_matches_finite_differences() -> None:
    m = ShallowEncoder(d=4, d_m=3, n_models=1, seeds=[5], dtype=torch.float64)
    X = torch.randn(1, 2, 3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    out = m(X).sum()
    out.backward()
    for name in ("W_Q", "W_K", "W_V", "w_O"):
        p = getattr(m, name)
        g = p.grad.clone()
        idx = (0,) * p.ndim
        with torch.no_grad():
            old = p[idx].item()
            p[idx] = old + 1e-6
            up = m(X).sum().item()
            p[idx] = old - 1e-6
            dn = m(X).sum().item()
            p[idx] = old
        assert g[idx].item() == pytest.approx((up - dn) / 2e-6, rel=1e-5, abs=1e-9)


# ------------------------------------------------------------------------------ the quantities

INIT = dict(W_Q0_fro=2.0, W_K0_fro=3.0, W_V0_fro=4.0, w_O0_l2=1.0, W_Q0_spectral=1.0,
            W_K0_spectral=1.5, W_V0_spectral=2.0, R_Q=0.5, R_K=1.0, R_V=0.25, R_O=0.5)


def test_etas_by_hand() -> None:
    e = sg.etas(**INIT)
    assert (e["eta_Q"], e["eta_K"], e["eta_V"], e["eta_O"]) == (2.5, 4.0, 4.25, 1.5)
    assert (e["xi_Q"], e["xi_K"], e["xi_V"]) == (1.5, 2.5, 2.25)
    assert e["R"] == pytest.approx(math.sqrt(0.25 + 1 + 0.0625 + 0.25))


def test_rho_M_z_P_A_by_hand() -> None:
    assert sg.rho_wu(4, 4, 2.0) == pytest.approx(2 * 8 * 2)
    # c = 2/sqrt(4) * 1^2 * 2 = 2: max(3/1, 2/1, 2*1*3*2/1, 2*5*3*2/2) = 30
    assert sg.m_quantity(3, 2, 1, 5, 1, 1, 1, 2, R_X=1.0, d_s=2, d_m=4) == pytest.approx(30)
    # z = o^2 (1 + 4/4 * 1 * 4 * v^2 (q^2 + k^2)) = 4 (1 + 4 * 1 * (1 + 4)) = 84
    assert sg.z_quantity(2, 1, 1, 2, R_X=1.0, d_s=2, d_m=4) == pytest.approx(84)
    # P printed: d_s R_X^2 ((sqrt(d_m) eta_V)^(2/3) + (sqrt(d_m) eta_K eta_Q eta_V)^(2/3))^3
    # times log(N d_s)
    P = sg.P_printed(N=2, d_s=4, d_m=1, R_X=1.0, eta_V=1.0, eta_K=1.0, eta_Q=1.0)
    assert P == pytest.approx(4 * 8 * math.log(8))
    assert sg.A_bound(2.0, 3.0, 4, 0.5) == pytest.approx(6.0)
    # audited P with d = d_m = 1, B_X = 1, all norms 1: eta_O^2 (1 + 2^{2/3} + 2^{2/3})^3
    # times log(max(d, d_m) N d_s): readout, value (proper cover: 2 B_V), query-key terms
    Pa = sg.P_audited(2, 4, 1, 1, 1.0, 3.0, 1.0, 1.0, 1.0, 1.0)
    assert Pa == pytest.approx(9 * (1 + 2 * 2 ** (2 / 3)) ** 3 * math.log(8))
    # W_V in R^{d_m x d}: the value term carries sqrt(d_m) eta_V (rows of W_V), not sqrt(d)
    a = sg.P_audited(1, 1, 4, 9, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0)
    assert a == pytest.approx((2 * 3.0) ** 2 * math.log(9))


def test_audited_P_is_homogeneous_printed_is_not() -> None:
    """Scaling w_O by c scales the class by c, so log N (hence P) must scale by c^2; scaling the
    inputs by c equals scaling W_V by c and W_QK by c^2. The audited P obeys both; the printed P
    obeys neither (the reason for the correction)."""
    base = dict(N=100, d_s=16, d=64, d_m=64, B_X=2.0, eta_O=1.5, eta_V=3.0, eta_K=2.0,
                eta_Q=2.5, xi_V=1.2)
    c = 3.0
    Pa = sg.P_audited(**base)  # type: ignore[arg-type]
    assert sg.P_audited(**{**base, "eta_O": c * 1.5}) == pytest.approx(c ** 2 * Pa)  # type: ignore[arg-type]
    # inputs scaled by c == W_V scaled by c (eta_V, xi_V) and W_QK by c^2 (eta_K eta_Q)
    scaled_x = sg.P_audited(**{**base, "B_X": c * 2.0})  # type: ignore[arg-type]
    scaled_w = sg.P_audited(**{**base, "eta_V": c * 3.0, "xi_V": c * 1.2,  # type: ignore[arg-type]
                               "eta_K": c ** 2 * 2.0})
    assert scaled_x == pytest.approx(scaled_w)
    pp = dict(N=100, d_s=16, d_m=64, R_X=0.5, eta_V=3.0, eta_K=2.0, eta_Q=2.5)
    px = sg.P_printed(**{**pp, "R_X": c * 0.5})  # type: ignore[arg-type]
    pw = sg.P_printed(**{**pp, "eta_V": c * 3.0, "eta_K": c ** 2 * 2.0})  # type: ignore[arg-type]
    assert px != pytest.approx(pw)


def test_dudley_closed_form_is_the_minimum() -> None:
    P, A, N, c = 4.0, 10.0, 16, 2.0
    val, delta, ok = sg.dudley_inverse_square_closed_form(P, A, N, c)
    grid = np.linspace(1e-3, A, 200001)
    direct = c * np.min(grid + math.sqrt(P / N) * np.log(A / grid))
    assert ok and delta == pytest.approx(0.5)
    assert val == pytest.approx(direct, rel=1e-6)
    # delta* > A: the cap c A
    val2, _, ok2 = sg.dudley_inverse_square_closed_form(400.0, 1.0, 4, 2.0)
    assert not ok2 and val2 == pytest.approx(2.0)


def test_lemma4_algebra_rho_squared_not_fourth() -> None:
    """From alpha^3 >= 32 rho^2 z sqrt(2 Phi0) / eta_O: sqrt(2 Phi0 / N) <= alpha^3 eta_O /
    (32 rho^2 z sqrt N). Sampled: the rho^2 form holds at the boundary, the printed rho^4 fails."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        alpha, eta_O, rho, z, N = rng.uniform(0.5, 3.0, 5) * [1, 1, 3, 1, 100]
        phi0 = (alpha ** 3 * eta_O / (32 * rho ** 2 * z)) ** 2 / 2  # condition 2 with equality
        lhs = math.sqrt(2 * phi0 / N)
        assert lhs <= alpha ** 3 * eta_O / (32 * rho ** 2 * z * math.sqrt(N)) * (1 + 1e-12)
        assert lhs > alpha ** 3 * eta_O / (32 * rho ** 4 * z * math.sqrt(N))  # rho > 1 here


def test_cross_entropy_self_loss() -> None:
    assert sg.cross_entropy_self_loss(np.array([0, 1])) == pytest.approx(
        (math.log(2) + math.log1p(math.exp(-1))) / 2)
    with pytest.raises(ValueError, match="labels"):
        sg.cross_entropy_self_loss(np.array([2]))


def test_alpha_and_tail_exponent() -> None:
    F = torch.tensor([[[3.0, 0.0, 0.0], [0.0, 2.0, 0.0]]])  # N = 2, d_m = 3
    assert sg.alpha_min_singular(F)[0] == pytest.approx(2.0)
    assert sg.alpha_min_singular(F.mT)[0] == 0.0  # d_m < N
    # every value 10: P(>= 10) = 1 > e^-1, so no c_hat > 0 works
    assert sg.largest_tail_exponent(np.full(50, 10.0)) == -math.inf
    assert sg.largest_tail_exponent(np.full(5, 0.5)) == math.inf
    # one of 1000 values large: c_hat = log(-log(1e-3)) / log(t)
    v = np.r_[np.zeros(999), 100.0]
    assert sg.largest_tail_exponent(v) == pytest.approx(math.log(-math.log(1e-3)) / math.log(100))
    X = np.ones((3, 2, 2))
    assert np.allclose(sg.gram_inner_products(X, n_pairs=5), 16.0)


# ------------------------------------------------------------------------------ the bounds


def _q() -> dict[str, float]:
    return dict(N=100, d_s=16, d=64, d_m=64, R_X=2.0, B_X=3.0, alpha=0.5, phi0=20.0,
                ell_yy=0.5, **INIT)


def _q_small() -> dict[str, float]:
    """Norms at which the printed Lemma 2 expression is positive (sqrt(P/N) < e A)."""
    return {**_q(), "N": 10_000, "d_m": 1, "R_X": 1.0, "W_Q0_fro": 0.1, "W_K0_fro": 0.1,
            "R_Q": 0.1, "R_K": 0.1, "w_O0_l2": 5.0}


def test_registered_printed_and_audited_forms() -> None:
    q = _q_small()
    for key, kind in (("lemma_1", BoundKind.RADEMACHER), ("lemma_2", BoundKind.RADEMACHER),
                      ("lemma_4", BoundKind.TRAINING_LOSS), ("theorem_5", BoundKind.TRUE_LOSS)):
        for form in ("printed", "audited"):
            v = get(f"shallow_gd.{key}.{form}").evaluate(q)
            assert v.kind is kind and v.choices["form"] == form and math.isfinite(v.value)
            assert v.value >= 0
    l1 = get("shallow_gd.lemma_1.printed").evaluate(q)
    l2 = get("shallow_gd.lemma_2.printed").evaluate(q)
    assert l1.value == pytest.approx(l2.value / 10_000)  # the spurious 1/N
    assert not l1.valid


def test_printed_rademacher_is_negative_and_refused() -> None:
    """At _q() sqrt(P/N) > e A: the printed expression is negative (no Rademacher complexity
    is), so the registered printed forms raise and the expression function gives the number."""
    q = _q()
    e = sg.etas(**INIT)
    P = sg.P_printed(100, 16, 64, 2.0, e["eta_V"], e["eta_K"], e["eta_Q"])
    A = sg.A_bound(e["eta_O"], e["eta_V"], 16, 2.0)
    assert math.sqrt(P / 100) > math.e * A
    val = sg.printed_rademacher_expression(P, A, 100)
    r = math.sqrt(P / 100)
    assert val == pytest.approx(r * (1 + math.log(A / r))) and val < 0
    for key in ("lemma_1", "lemma_2", "theorem_5"):
        with pytest.raises(ValueError, match="negative"):
            get(f"shallow_gd.{key}.printed").evaluate(q)
    t = sg.theorem5_printed_terms(**{k: q[k] for k in q if k not in ("d", "B_X", "ell_yy")})
    assert t["complexity"] == pytest.approx(val) and t["expression"] < 0
    assert t["expression"] == pytest.approx(t["training"] + t["complexity"] + t["confidence"])


def test_lecun_ratio_lower_bound() -> None:
    """The bound on sqrt(P/N)/A holds at sampled LeCun initialisations with d_m >= N^3 and any
    radii, and exceeds e there (so the printed expression is negative)."""
    rng = np.random.default_rng(0)
    for N, d_m, d, d_s in ((4, 64, 64, 16), (8, 512, 64, 16), (5, 200, 3, 2)):
        for R_O in (0.0, 1.0, 10.0):
            lb = sg.lecun_ratio_lower_bound(N, d_s, d_m, R_O)
            assert lb > math.e
            WK, WQ, WV = (rng.normal(0, 1 / math.sqrt(d), (d_m, d)) for _ in range(3))
            wO = rng.normal(0, 1 / math.sqrt(d_m), d_m)
            R = rng.uniform(0, 2, 3)
            eta_K, eta_Q, eta_V = (np.linalg.norm(W) + r for W, r in zip((WK, WQ, WV), R,
                                                                        strict=True))
            eta_O = np.linalg.norm(wO) + R_O
            P = sg.P_printed(N, d_s, d_m, 1.7, eta_V, eta_K, eta_Q)
            A = sg.A_bound(eta_O, eta_V, d_s, 1.7)
            assert math.sqrt(P / N) / A >= lb
            assert sg.printed_rademacher_expression(P, A, N) < 0
    # mutation guard: the bound falls below e when R_O is huge (no claim there)
    assert sg.lecun_ratio_lower_bound(2, 2, 8, 1e6) < math.e


def test_verdicts_and_audit_labels() -> None:
    from genbounds.bounds.registry import Verdict, registered

    mine = {b.key: b for b in registered() if b.key.startswith("shallow_gd.")}
    assert len(mine) == 8
    for key, b in mine.items():
        assert b.verdict is not None and b.audit in sg.AUDIT_LABELS.values(), key
        if b.form == "audited":
            assert b.verdict is Verdict.HOLDS
    assert mine["shallow_gd.lemma_2.printed"].verdict is Verdict.FALSE
    assert mine["shallow_gd.lemma_2.printed"].counterexample


BAD = [-1.0, math.nan, math.inf, -math.inf, True, np.array([1.0, 2.0]), "x", None, 1e300]


@pytest.mark.parametrize("bad", BAD, ids=repr)
def test_public_functions_on_bad_scalars(bad: object) -> None:
    """Every public scalar function: a finite value or a ValueError that names the argument
    (issue #17); e.g. A_bound(eta_O=-1) used to return -2.0."""
    e = sg.etas(**INIT)
    calls = {
        "A_bound": (sg.A_bound, dict(eta_O=1.0, eta_V=1.0, d_s=4, R_X=1.0)),
        "P_printed": (sg.P_printed, dict(N=2, d_s=4, d_m=3, R_X=1.0, eta_V=1.0, eta_K=1.0,
                                         eta_Q=1.0)),
        "P_audited": (sg.P_audited, dict(N=2, d_s=4, d=3, d_m=3, B_X=1.0, eta_O=1.0, eta_V=1.0,
                                         eta_K=1.0, eta_Q=1.0, xi_V=1.0)),
        "rho_wu": (sg.rho_wu, dict(N=2, d_s=2, R_X=1.0)),
        "m_quantity": (sg.m_quantity, dict(v=1.0, o=1.0, k=1.0, q=1.0, R_O=1.0, R_V=1.0,
                                           R_Q=1.0, R_K=1.0, R_X=1.0, d_s=2, d_m=2)),
        "z_quantity": (sg.z_quantity, dict(o=1.0, v=1.0, q=1.0, k=1.0, R_X=1.0, d_s=2,
                                           d_m=2)),
        "dudley": (sg.dudley_inverse_square_closed_form, dict(P=1.0, A=1.0, N=2, c=1.0)),
        "expr": (sg.printed_rademacher_expression, dict(P=1.0, A=1.0, N=2, c=1.0)),
        "lecun": (sg.lecun_ratio_lower_bound, dict(N=2, d_s=2, d_m=8, R_O=1.0)),
        "etas": (sg.etas, dict(INIT)),
        "radius_grid": (sg.radius_grid, dict(R=1.0, grid=0.1)),
        "lemma4_conditions": (lambda **kw: sg.lemma4_conditions(e=e, **kw),
                              dict(N=2, d_s=2, d_m=2, R_X=1.0, alpha=1.0, phi0=1.0, R_Q=1.0,
                                   R_K=1.0, R_V=1.0, R_O=1.0)),
    }
    for label, (fn, kw) in calls.items():
        fn(**kw)  # the valid call works
        for arg in kw:
            try:
                out = fn(**{**kw, arg: bad})
            except ValueError as exc:
                assert arg in str(exc), (label, arg, str(exc))
                continue
            vals = list(out.values()) if isinstance(out, dict) else (
                list(out[:2]) if isinstance(out, tuple) else [out])  # dudley: (value, eps_0, ok)
            for v in vals:
                assert isinstance(v, float | int) and not isinstance(v, bool), (label, arg, v)
                assert math.isfinite(v), (label, arg, v)
            if label in ("A_bound", "P_printed", "P_audited", "rho_wu", "m_quantity",
                         "z_quantity", "dudley"):
                assert all(v >= 0 for v in vals), (label, arg, out)


def test_A_bound_negative_radius_is_refused() -> None:
    with pytest.raises(ValueError, match="eta_O"):
        sg.A_bound(eta_O=-1.0, eta_V=1.0, d_s=4, R_X=1.0)
    with pytest.raises(ValueError, match="phi0"):
        sg.lemma4_conditions(2, 2, 2, 1.0, 1.0, 0.0, sg.etas(**INIT), 1.0, 1.0, 1.0, 1.0)


def test_lemma4_audited_terms_and_validity() -> None:
    q = _q()
    v = get("shallow_gd.lemma_4.audited").evaluate(q)
    e = sg.etas(**INIT)
    rho = math.sqrt(100) * 16 ** 1.5 * 2.0
    M = sg.m_quantity(e["xi_V"], e["eta_O"], e["xi_K"], e["xi_Q"], 0.5, 0.25, 0.5, 1.0, 2.0,
                      16, 64)
    z = sg.z_quantity(e["eta_O"], e["xi_V"], e["xi_Q"], e["xi_K"], 2.0, 16, 64)
    t1 = 0.25 / (8 * rho * M * 10)
    t2 = 0.125 * e["eta_O"] / (32 * rho ** 2 * z * 10)
    assert v.value == pytest.approx(0.5 + min(t1, t2))
    assert not v.valid  # d_m = 64 < N^3 and alpha far too small
    # drop ell_yy (the audit's correction) and the value changes by exactly ell_yy
    v0 = get("shallow_gd.lemma_4.audited").evaluate({**q, "ell_yy": 0.0})
    assert v.value - v0.value == pytest.approx(0.5)
    # printed replaces M, z by the larger M_hat, z_hat: never larger than the audited min term
    p = get("shallow_gd.lemma_4.printed").evaluate(q)
    assert p.value <= min(t1, t2)


def test_lemma4_valid_when_hypotheses_hold() -> None:
    q = {**_q(), "N": 2, "d_m": 64, "alpha": 50.0, "phi0": 1e-12}
    v = get("shallow_gd.lemma_4.audited").evaluate(q)
    assert v.terms["dm_over_N3"] == pytest.approx(8.0)
    assert v.valid and v.terms["cond1"] >= 1 and v.terms["cond2"] >= 1
    broken = get("shallow_gd.lemma_4.audited").evaluate({**q, "phi0": 1e6})
    assert not broken.valid


def test_theorem5_audited_sum_of_terms() -> None:
    q = _q()
    # the cap regime: sqrt(P/N) > A makes the complexity term 2 c A (c = 12)

    v = get("shallow_gd.theorem_5.audited").evaluate(q)
    t = v.terms
    assert v.value == pytest.approx(t["training"] + t["complexity"] + t["confidence"])
    A = t["A"]
    assert t["c_loss"] == pytest.approx(math.log1p(math.exp(A)))
    # radii 0.5, 1.0, 0.25, 0.5 on the grid 0.1: k = 5, 10, 3, 5 (already grid points)
    union = sum(math.log(k * (k + 1)) for k in (5, 10, 3, 5))
    assert t["union_log"] == pytest.approx(union)
    assert t["confidence"] == pytest.approx(3 * t["c_loss"] * math.sqrt(
        (math.log(2 / 0.05) + union) / 200))
    rad = get("shallow_gd.lemma_1.audited").evaluate({**q, "R_V": 0.3})  # 0.25 rounded up
    assert t["complexity"] == pytest.approx(2 * rad.value)
    # radii off the grid are rounded up, which can only raise the bound
    up = get("shallow_gd.theorem_5.audited").evaluate({**q, "R_V": 0.21})
    assert up.terms["union_log"] == pytest.approx(union) and up.value == pytest.approx(v.value)
    assert sg.radius_grid(0.0, 0.1) == (1, 0.1)
    with pytest.raises(ValueError, match="missing"):
        get("shallow_gd.theorem_5.audited").evaluate({"N": 3})
    with pytest.raises(ValueError, match="delta"):
        get("shallow_gd.theorem_5.audited").evaluate(q, delta=2.0)


def test_shallow_gd_quantities_from_view() -> None:
    m = ShallowEncoder(d=8, d_m=12, n_models=2, seeds=[0, 1])
    init = {n: p.detach().clone() for n, p in m.named_parameters()}
    with torch.no_grad():
        m.W_V.add_(0.1)
    X = torch.rand(10, 4, 8)
    y = np.arange(10) % 2
    q = sg.shallow_gd_quantities(m.view(initial_state=init), X, y)
    assert q["R_V"] == pytest.approx(np.full(2, 0.1 * math.sqrt(12 * 8)), rel=1e-5)
    assert np.all(q["R_Q"] <= 1e-11)
    assert np.all(q["alpha"] > 0)  # d_m = 12 >= N = 10
    f0 = m.__class__(d=8, d_m=12, n_models=2, seeds=[0, 1])(X[None].expand(2, -1, -1, -1))
    phi = 0.5 * ((f0.detach().double().numpy() - y) ** 2).sum(1)
    assert q["phi0"] == pytest.approx(phi, rel=1e-5)
    assert q["R_X"][0] == pytest.approx(float(X.double().pow(2).sum((1, 2)).sqrt().max()) / 2)
    with pytest.raises(ValueError, match="initial"):
        sg.shallow_gd_quantities(m.view(), X, y)
    row = sg.model_quantities(q, 0)
    assert isinstance(row["N"], int)
    assert get("shallow_gd.theorem_5.audited").evaluate(row).kind is BoundKind.TRUE_LOSS


def test_notation_adapter_on_bad_rows() -> None:
    from genbounds.bounds.registry import NotApplicable
    from genbounds.bounds.shallow_gd_notation import PREFIX, shallow_columns, shallow_quantities

    b = get("shallow_gd.lemma_4.audited")
    row = {PREFIX + n: 1.0 for n in b.needs} | {PREFIX + "N": 4.0}
    ctx = {"bound": b, "family": "ShallowEncoder"}
    q = shallow_quantities(row, ctx)
    assert q["N"] == 4 and isinstance(q["N"], int) and isinstance(q["phi0"], float)
    for col, bad in (("N", 2.5), ("N", 0.0), ("phi0", math.nan), ("alpha", np.array([1, 2])),
                     ("R_X", True)):
        with pytest.raises(ValueError, match=PREFIX + col):
            shallow_quantities({**row, PREFIX + col: bad}, ctx)
    with pytest.raises(NotApplicable):
        shallow_quantities(row, {"bound": b, "family": "EdelmanTransformer"})
    m = ShallowEncoder(d=4, d_m=6, n_models=2, seeds=[0, 1])
    init = {n: p.detach().clone() for n, p in m.named_parameters()}
    X = torch.rand(2, 5, 3, 4)
    y = np.tile(np.arange(5) % 2, (2, 1))
    cols = shallow_columns(m.view(initial_state=init), X, y)
    assert cols[PREFIX + "N"].shape == (2,)
    with pytest.raises(ValueError, match="X"):
        shallow_columns(m.view(initial_state=init), X.masked_fill(X > 0.5, math.nan), y)
    with pytest.raises(ValueError, match="X"):
        shallow_columns(m.view(initial_state=init), "x", y)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, None, "8"])
def test_encoder_rejects_bad_sizes(bad: object) -> None:
    with pytest.raises(ValueError):
        ShallowEncoder(d=bad, d_m=4)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ShallowEncoder(d=4, d_m=bad)  # type: ignore[arg-type]


def test_encoder_rejects_bad_inputs() -> None:
    m = ShallowEncoder(d=4, d_m=6, n_models=2, seeds=[0, 1])
    for X, word in ((torch.rand(3, 5, 3, 4), "K"), (torch.rand(2, 5, 3, 5), "d"),
                    (torch.rand(2, 5, 4), "shape"), (np.zeros((2, 5, 3, 4)), "Tensor"),
                    (torch.full((2, 5, 3, 4), math.nan), "finite")):
        with pytest.raises(ValueError, match=word):
            m(X)
    with pytest.raises(ValueError, match="seeds"):
        ShallowEncoder(d=4, d_m=6, n_models=2, seeds=[0])
