"""Tests for genbounds.bounds.trauger_tewari.

Every bound is checked against a value computed by hand (an independent formula written out in
the test), plus monotonicity in the norms, absence of any sequence-length argument, and the
``ValueError`` contract.
"""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest
from bad_input import REJECTED, call_with_bad  # tests/bad_input.py
from scipy import optimize

from genbounds.bounds import baselines as bl
from genbounds.bounds import trauger_tewari as tt

ONE = {"B_w": 1.0, "B_Wc": 1.0, "B_Wv": 1.0, "L_sigma": 1.0}


# ============================================================================ Section 3
def test_lemma_3_3_hand_values() -> None:
    r = tt.log_covering_l1inf(0.5, d=2, k=1, B_w=1.0, B_x=1.0)
    assert r.value == pytest.approx(2 * 4 * math.log(3))
    r = tt.log_covering_l1inf(0.6, d=2, k=1, B_w=1.0, B_x=1.0)  # ratio 2.78 -> K = 3
    assert r.value == pytest.approx(2 * 3 * math.log(3)) and r.terms["maurey_K"] == 3
    p = tt.log_covering_l1inf(0.6, d=2, k=1, B_w=1.0, B_x=1.0, form="printed")
    assert p.value == pytest.approx(2 * (1 / 0.36) * math.log(3))
    assert p.value <= r.value


def test_lemma_3_4_hand_value_and_constant() -> None:
    r = tt.log_covering_l21(0.5, d=2, k=2, B_w=1.0, B_x=1.0, constant=2.0)
    assert r.value == pytest.approx(2.0 * 4 * math.log(4))
    assert r.constants["lemma_4_6_constant"] == 2.0
    with pytest.raises(ValueError, match="d \\* k"):
        tt.log_covering_l21(0.5, d=1, k=1, B_w=1.0, B_x=1.0)


def test_lemma_3_6_hand_value() -> None:
    r = tt.log_covering_l11(1.0, d=2, k=3, B_w=2.0, B_x=0.5)
    assert r.value == pytest.approx(math.log(13))
    r = tt.log_covering_l11(0.3, d=2, k=3, B_w=2.0, B_x=0.5)  # ratio 11.1 -> 12
    assert r.value == pytest.approx(12 * math.log(13))
    p = tt.log_covering_l11(0.3, d=2, k=3, B_w=2.0, B_x=0.5, form="printed")
    assert p.value == pytest.approx(1 / 0.09 * math.log(13))


@pytest.mark.parametrize("fn", [tt.log_covering_l1inf, tt.log_covering_l11,
                                tt.log_covering_l21])
def test_covering_lemmas_monotone(fn) -> None:  # type: ignore[no-untyped-def]
    vals = [fn(0.3, d=3, k=4, B_w=b, B_x=1.0).value for b in (0.5, 1.0, 2.0, 4.0)]
    assert all(x <= y for x, y in zip(vals, vals[1:], strict=False))
    eps_vals = [fn(e, d=3, k=4, B_w=1.0, B_x=1.0).value for e in (0.1, 0.2, 0.4)]
    assert all(x >= y for x, y in zip(eps_vals, eps_vals[1:], strict=False))
    with pytest.raises(ValueError, match="eps"):
        fn(0.0, d=3, k=4, B_w=1.0, B_x=1.0)
    with pytest.raises(ValueError, match="B_w"):
        fn(0.1, d=3, k=4, B_w=float("nan"), B_x=1.0)
    with pytest.raises(ValueError, match="d must"):
        fn(0.1, d=0, k=4, B_w=1.0, B_x=1.0)


# ============================================================================ Theorem 4.1
def _hand_G(C: float, C0: float, m: int, d: int, Bx: float, s: float = 2.0) -> float:
    a = math.sqrt((math.log(2 * d) + C0) / m)
    b = s * Bx**2 * math.sqrt(C) / math.sqrt(m)
    delta = b / (1 - a)
    if delta >= Bx:
        return Bx
    return delta + (Bx - delta) * a + b * math.log(Bx / delta)


def test_theorem_4_1_hand_value() -> None:
    r = tt.rademacher_one_layer(100, 1, C=0.01, B_x=1.0, c=1.0, **ONE)
    G = _hand_G(0.01, 0.0, 100, 1, 1.0)
    assert r.value == pytest.approx(2 * G)
    # closed form of the paper: b (1 + ln(B_x (sqrt m - sqrt ln 2d)/(2 B_x^2 sqrt C))) + B_x a
    b = 2 * math.sqrt(0.01) / 10
    paper = b * (1 + math.log((10 - math.sqrt(math.log(2))) / (2 * math.sqrt(0.01)))) \
        + math.sqrt(math.log(2) / 100)
    assert r.value == pytest.approx(2 * paper)
    # constants and norms scale: B = B_w B_Wc L_sigma B_Wv, c explicit
    r2 = tt.rademacher_one_layer(100, 1, C=0.01, B_x=1.0, c=12.0, B_w=2.0, B_Wc=0.5, B_Wv=3.0,
                                 L_sigma=1.0)
    assert r2.value == pytest.approx(12 * 3.0 * r.value)
    assert r2.constants["c"] == 12.0 and "closed-form delta* <= B_x" in r2.regime and r2.valid


def test_theorem_4_1_trivial_regime_and_printed_form() -> None:
    # 2 B_x sqrt(C) > sqrt(m) - sqrt(ln 2d): the bound is the trivial 2 c B B_x
    r = tt.rademacher_one_layer(300, 64, C=225.0, B_x=1.0, c=12.0, **ONE)
    assert r.value == pytest.approx(24.0) and "trivial cap" in r.regime
    p = tt.rademacher_one_layer(300, 64, C=225.0, B_x=1.0, c=12.0, form="printed", **ONE)
    b = 2 * 15 / math.sqrt(300)
    expect = b * (1 + math.log(math.sqrt(300) / 30)) + math.sqrt(math.log(128) / 300)
    assert p.value == pytest.approx(24.0 * expect)
    # the printed expression goes negative for large C (not a bound)
    neg = tt.rademacher_one_layer(300, 64, C=1e4, B_x=1.0, c=12.0, form="printed", **ONE)
    assert neg.value < 0


def test_theorem_4_1_softmax_constant_and_exact_integral() -> None:
    kw = dict(C=0.5, B_x=1.0, c=1.0, **ONE)
    r2 = tt.rademacher_one_layer(10_000, 8, **kw)
    r1 = tt.rademacher_one_layer(10_000, 8, softmax_constant=1.0, **kw)
    rex = tt.rademacher_one_layer(10_000, 8, integral="exact", **kw)
    assert r1.value < r2.value and rex.value < r2.value
    assert r1.value == pytest.approx(2 * _hand_G(0.5, 0.0, 10_000, 8, 1.0, s=1.0))
    rnum = tt.rademacher_one_layer(10_000, 8, delta="numeric", **kw)
    assert rnum.value == pytest.approx(r2.value, rel=1e-9)
    rgiven = tt.rademacher_one_layer(10_000, 8, delta=0.5, **kw)
    assert rgiven.value >= r2.value


def test_corollary_4_1_1_hand_values() -> None:
    m, d, bq, bx = 5000, 4, 0.3, 1.0
    ell = math.log(2 * d * d + 1)
    r = tt.rademacher_one_layer_l11(m, d, B_x=bx, B_QK=bq, c=1.0, **ONE)
    assert r.value == pytest.approx(2 * _hand_G(bq**2 * ell, ell, m, d, bx))
    p = tt.rademacher_one_layer_l11(m, d, B_x=bx, B_QK=bq, c=1.0, form="printed", **ONE)
    alpha = bq * math.sqrt(2 * ell)
    expect = alpha / math.sqrt(m) * (1 + math.log(math.sqrt(m) / alpha)) + math.sqrt(
        math.log(2 * d) / m)
    assert p.value == pytest.approx(2 * expect)
    assert p.terms["alpha_printed"] == pytest.approx(alpha)


def test_corollary_d01_hand_values() -> None:
    m, d, bq, bx = 20_000, 3, 0.2, 1.0
    ell = math.log(2 * d + 1)
    r = tt.rademacher_one_layer_l1inf(m, d, B_x=bx, B_QK=bq, c=1.0, **ONE)
    assert r.value == pytest.approx(2 * _hand_G(d * bq**2 * ell, d * ell, m, d, bx))
    p = tt.rademacher_one_layer_l1inf(m, d, B_x=bx, B_QK=bq, c=1.0, form="printed", **ONE)
    alpha = 2 * bq * math.sqrt(d * ell)
    root = math.sqrt(m) - math.sqrt(math.log(2 * d))
    expect = alpha / math.sqrt(m) * (1 + math.log(root / alpha)) + math.sqrt(
        math.log(2 * d) / m)
    assert p.value == pytest.approx(2 * expect)
    # printed = Theorem 4.1's closed form with C from Lemma 3.3 and no ceiling term
    via_thm = tt.rademacher_one_layer(m, d, C=d * bq**2 * ell, B_x=bx, c=1.0, **ONE)
    assert via_thm.value == pytest.approx(p.value, rel=1e-12)


def test_corollary_d02_hand_values() -> None:
    m, d, bq, bx = 20_000, 5, 0.4, 1.0
    r = tt.rademacher_one_layer_l21(m, d, B_x=bx, B_QK=bq, c=1.0, lemma_constant=1.5, **ONE)
    assert r.value == pytest.approx(2 * _hand_G(1.5 * bq**2 * math.log(d * d), 0.0, m, d, bx))
    p = tt.rademacher_one_layer_l21(m, d, B_x=bx, B_QK=bq, c=1.0, form="printed", **ONE)
    alpha = 2 * bq * math.sqrt(2 * math.log(d))
    root = math.sqrt(m) - math.sqrt(math.log(2 * d))
    expect = alpha / math.sqrt(m) * (1 + math.log(root / alpha)) + math.sqrt(
        math.log(2 * d) / m)
    assert p.value == pytest.approx(2 * expect)
    with pytest.raises(ValueError, match="d must"):
        tt.rademacher_one_layer_l21(m, 1, B_x=bx, B_QK=bq, c=1.0, **ONE)


@pytest.mark.parametrize("fn", [tt.rademacher_one_layer_l11, tt.rademacher_one_layer_l1inf,
                                tt.rademacher_one_layer_l21])
def test_one_layer_monotone_in_norms_and_decreasing_in_m(fn) -> None:  # type: ignore
    base = dict(B_w=1.0, B_Wc=1.0, B_Wv=1.0, L_sigma=1.0, B_x=1.0, B_QK=0.5, c=12.0)
    for key in ("B_w", "B_Wc", "B_Wv", "L_sigma", "B_x", "B_QK"):
        vals = [fn(50_000, 8, **{**base, key: base[key] * f}).value for f in (0.5, 1, 2, 4)]
        assert all(x <= y + 1e-12 for x, y in zip(vals, vals[1:], strict=False)), key
    vals_m = [fn(m, 8, **base).value for m in (10**3, 10**4, 10**5, 10**6)]
    assert all(x >= y for x, y in zip(vals_m, vals_m[1:], strict=False))


def test_tt_bounds_take_no_sequence_length() -> None:
    # independence from T is structural: no TT bound has a T parameter
    for name in tt.__all__:
        obj = getattr(tt, name)
        if callable(obj) and not isinstance(obj, type) and name != "Form":
            params = inspect.signature(obj).parameters
            assert "T" not in params, name


def test_one_layer_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="m must"):
        tt.rademacher_one_layer(0, 4, C=1.0, B_x=1.0, c=1.0, **ONE)
    with pytest.raises(ValueError, match="B_x"):
        tt.rademacher_one_layer(10, 4, C=1.0, B_x=0.0, c=1.0, **ONE)
    with pytest.raises(ValueError, match="C must"):
        tt.rademacher_one_layer(10, 4, C=-1.0, B_x=1.0, c=1.0, **ONE)
    with pytest.raises(ValueError, match="form"):
        tt.rademacher_one_layer(10, 4, C=1.0, B_x=1.0, c=1.0, form="paper", **ONE)  # type: ignore
    with pytest.raises(ValueError, match="B_QK"):
        tt.rademacher_one_layer_l11(10, 4, B_x=1.0, B_QK=float("inf"), c=1.0, **ONE)
    with pytest.raises(ValueError, match="m must exceed"):
        tt.rademacher_one_layer_l1inf(1, 4, B_x=1.0, B_QK=1.0, c=1.0, form="printed", **ONE)


# ============================================================================ multi-head
def test_multi_head_linear_in_H() -> None:
    one = tt.rademacher_one_layer_l11(1000, 4, B_x=1.0, B_QK=0.5, c=12.0, **ONE)
    three = tt.rademacher_multi_head(one, H=3)
    assert three.value == pytest.approx(3 * one.value) and three.constants["H"] == 3
    other = tt.rademacher_one_layer_l11(1000, 4, B_x=1.0, B_QK=1.0, c=12.0, **ONE)
    both = tt.rademacher_multi_head([one, other])
    assert both.value == pytest.approx(one.value + other.value)
    with pytest.raises(ValueError, match="H must be given"):
        tt.rademacher_multi_head(one)
    with pytest.raises(ValueError, match="H=3 does not match"):
        tt.rademacher_multi_head([one, other], H=3)
    with pytest.raises(ValueError, match="H must"):
        tt.rademacher_multi_head(one, H=0)


# ============================================================================ Theorem 4.2
def test_lemma_e1_hand_value_and_optimality() -> None:
    r = tt.lemma_e1_allocation([1.0, 8.0], [1.0, 1.0], 1.0)
    assert r.terms["gamma"] == pytest.approx(3.0) and r.value == pytest.approx(27.0)
    assert r.terms["eps_0"] == pytest.approx(1 / 3) and r.terms["eps_1"] == pytest.approx(2 / 3)
    rng = np.random.default_rng(0)
    C, beta, eps = rng.uniform(0.1, 5, 4), rng.uniform(0.1, 3, 4), 0.7
    r = tt.lemma_e1_allocation(C, beta, eps)
    cons = {"type": "eq", "fun": lambda e: beta @ e - eps}
    res = optimize.minimize(lambda e: np.sum(C / e**2), x0=np.full(4, eps / beta.sum()),
                            constraints=[cons], bounds=[(1e-6, None)] * 4, method="SLSQP",
                            options={"ftol": 1e-14, "maxiter": 500})
    assert res.fun == pytest.approx(r.value, rel=1e-6)
    with pytest.raises(ValueError, match="beta"):
        tt.lemma_e1_allocation([1.0], [0.0], 1.0)


ML = dict(B_c2=1.0, B_v2=1.0, B_qk2=1.0, B_w=1.0, L_sigma=1.0)


def test_theorem_4_2_one_layer_hand_values() -> None:
    # L = 1, alpha_1 = 1; audited Gamma = C1 + C1 (B_w L)^.. + C_Bx-terms
    r = tt.log_covering_multilayer(1.0, L=1, C_1=1.0, C_Bx=4.0, B_x=2.0, **ML)
    gamma = 1.0 + 1.0 + 4.0 ** (1 / 3) + (4.0 * (2 * 4.0) ** 2) ** (1 / 3)
    assert r.terms["Gamma"] == pytest.approx(gamma) and r.value == pytest.approx(gamma**3)
    p = tt.log_covering_multilayer(0.5, L=1, C_1=1.0, C_Bx=4.0, B_x=2.0, form="printed", **ML)
    g_printed = 4.0 ** (1 / 3) * 2 ** (2 / 3) + 1.0 * (1 + 1.0)
    assert p.terms["eta"] == 0.0 and p.value == pytest.approx(g_printed**3 / 0.25)
    assert p.value < tt.log_covering_multilayer(0.5, L=1, C_1=1.0, C_Bx=4.0, B_x=2.0,
                                                **ML).value


def test_theorem_4_2_two_layer_hand_values() -> None:
    kw = dict(B_c2=2.0, B_v2=0.5, B_qk2=0.25, B_w=1.5, L_sigma=1.0)
    rho = 1.0 * 2.0 * 0.5 * (1 + 4 * 0.25)  # = 2
    p = tt.log_covering_multilayer(1.0, L=2, C_1=1.0, C_Bx=1.0, B_x=1.0, form="printed", **kw)
    a1, a2 = rho, 1.0
    tau2 = a2 ** (2 / 3) + (2 * a2 * 1 * 2 * 0.5) ** (2 / 3) + (a2 * 1 * 0.5) ** (2 / 3)
    gamma = (2 * 1 * 2 * 0.5 * a1 * 1.5) ** (2 / 3) + (1 + (1.5 * 1 * 0.5) ** (2 / 3))
    eta = 1.5 ** (2 / 3) * tau2
    assert p.terms["alpha_1"] == pytest.approx(2.0)
    assert p.value == pytest.approx((gamma + eta) ** 3)
    r = tt.log_covering_multilayer(1.0, L=2, C_1=1.0, C_Bx=1.0, B_x=1.0, a0=3.0, **kw)
    betas = [1.0,
             1.5 * a1 * 1, 1.5 * a1 * 1 * 2, 2 * 1.5 * a1 * 1 * 2 * 0.5,
             1.5 * a2 * 1, 1.5 * a2 * 1 * 2, 2 * 1.5 * a2 * 1 * 2 * 0.5]
    G = sum(b ** (2 / 3) for b in betas)
    assert r.value == pytest.approx(3.0 + G**3)


def test_multilayer_rademacher_and_corollary_4_2_1() -> None:
    r = tt.rademacher_multilayer(10**6, L=1, C_1=1.0, C_Bx=4.0, B_x=2.0, c=2.0, B_w=3.0,
                                 B_c2=1.0, B_v2=1.0, B_qk2=1.0, L_sigma=1.0)
    cov = tt.log_covering_multilayer(1.0, L=1, C_1=1.0, C_Bx=4.0, B_x=2.0, B_w=3.0, B_c2=1.0,
                                     B_v2=1.0, B_qk2=1.0, L_sigma=1.0)
    A = cov.terms["Gamma"] ** 3
    s = math.sqrt(A / 1e6)
    assert s < 3.0
    assert r.value == pytest.approx(2.0 * s * (1 + math.log(3.0 / s)))
    d, k, L, B, bx = 4, 2, 2, 0.7, 1.5
    c11 = tt.log_covering_multilayer_l11(0.1, L=L, d=d, k=k, B=B, B_x=bx, **ML)
    ell = math.log(2 * d * d + 1)  # max(d, k) = d
    a0 = L * (2 * math.log(2 * d * k + 1) + math.log(2 * d * d + 1)) + math.log(2 * d + 1)
    direct = tt.log_covering_multilayer(0.1, L=L, C_1=B * B * ell, C_Bx=B * B * bx * bx * ell,
                                        B_x=bx, a0=a0, **ML)
    assert c11.value == pytest.approx(direct.value)
    p11 = tt.log_covering_multilayer_l11(0.1, L=L, d=d, k=k, B=B, B_x=bx, form="printed", **ML)
    ellp = math.log(2 * d * k + 1)
    directp = tt.log_covering_multilayer(0.1, L=L, C_1=B * B * ellp,
                                         C_Bx=B * B * bx * bx * ellp, B_x=bx, form="printed",
                                         **ML)
    assert p11.value == pytest.approx(directp.value)
    rr = tt.rademacher_multilayer_l11(10**9, L=L, d=d, k=k, B=B, B_x=bx, c=12.0, **ML)
    A = direct.terms["Gamma"] ** 3
    # split Dudley objective with a0, by hand: delta* = sqrt(A)/(sqrt(m) - sqrt(a0)), U = B_w = 1
    dl = math.sqrt(A) / (math.sqrt(1e9) - math.sqrt(a0))
    assert dl < 1.0
    G = dl + (1.0 - dl) * math.sqrt(a0 / 1e9) + math.sqrt(A / 1e9) * math.log(1.0 / dl)
    assert rr.value == pytest.approx(12.0 * G) and rr.constants["c"] == 12.0
    small = tt.rademacher_multilayer_l11(100, L=L, d=d, k=k, B=B, B_x=bx, c=12.0, **ML)
    assert small.value == pytest.approx(12.0)  # trivial bound c * B_w


def test_multilayer_monotone_and_errors() -> None:
    vals = [tt.log_covering_multilayer(0.5, L=L, C_1=1.0, C_Bx=2.0, B_x=1.5, **ML).value
            for L in (1, 2, 3)]
    assert vals[0] < vals[1] < vals[2]
    vals = [tt.log_covering_multilayer(0.5, L=2, C_1=1.0, C_Bx=2.0, B_x=1.5,
                                       **{**ML, "B_qk2": b}).value for b in (0.1, 1.0, 2.0)]
    assert vals[0] < vals[1] < vals[2]
    with pytest.raises(ValueError, match="L must"):
        tt.log_covering_multilayer(0.5, L=0, C_1=1.0, C_Bx=2.0, B_x=1.5, **ML)
    with pytest.raises(ValueError, match="C_Bx"):
        tt.log_covering_multilayer(0.5, L=1, C_1=1.0, C_Bx=-2.0, B_x=1.5, **ML)


# ============================================================================ gap
def test_generalization_gap_hand_values() -> None:
    g = tt.generalization_gap(0.1, 100, loss_bound=1.0, loss_lipschitz=1.0, confidence=0.05)
    assert g.value == pytest.approx(0.2 + 4 * math.sqrt(2 * math.log(160) / 100))
    g1 = tt.generalization_gap(0.1, 100, loss_bound=1.0, loss_lipschitz=2.0, confidence=0.05,
                               two_sided=False)
    assert g1.value == pytest.approx(0.4 + 4 * math.sqrt(2 * math.log(80) / 100))
    one = tt.rademacher_one_layer_l11(1000, 4, B_x=1.0, B_QK=0.5, c=12.0, **ONE)
    g2 = tt.generalization_gap(one, 1000, loss_bound=1.0, loss_lipschitz=1.0, confidence=0.1)
    assert g2.terms["Rad"] == one.value and g2.is_vacuous(1.0)
    for kw, name in ((dict(confidence=1.0), "confidence"), (dict(confidence=0.0), "confidence"),
                     (dict(loss_bound=-1.0), "loss_bound")):
        args = dict(loss_bound=1.0, loss_lipschitz=1.0, confidence=0.05)
        args.update(kw)
        with pytest.raises(ValueError, match=name):
            tt.generalization_gap(0.1, 100, **args)
    with pytest.raises(ValueError, match="rademacher"):
        tt.generalization_gap(-0.1, 100, loss_bound=1.0, loss_lipschitz=1.0, confidence=0.05)


# ============================================================================ bad input (#17)
# Every public function of trauger_tewari and baselines, every numeric argument, every edge
# value (seeded sweep: hypothesis is not installed): a finite, non-negative bound or a ValueError
# that names the argument; never NaN, inf, an OverflowError, a ZeroDivisionError or a hang.
_EDGES = [0, -1, 1e-300, 1e300, math.nan, math.inf, -math.inf, True, np.array([1.0, 2.0]), 0.5,
          10**400, np.float64(2.0), np.int64(3)]


def _probe(fn, kwargs: dict, name: str, bad: object) -> str | None:
    out, problem = call_with_bad(fn, kwargs, name, bad)
    if problem is not None or out is REJECTED:
        return problem
    v = out.value
    printed_closed_form = kwargs.get("form") == "printed" or (isinstance(bad, str))
    if not math.isfinite(v) or (v < 0 and not printed_closed_form):
        return f"bad value {v!r}"
    if not all(math.isfinite(x) for x in [*out.terms.values(), *out.constants.values()]):
        return f"non-finite terms or constants {out.terms} {out.constants}"
    return None


_ONE = dict(B_w=1.0, B_Wc=1.0, B_Wv=1.0, L_sigma=1.0)
_ED = dict(d=4, k=3, B_w=1.0, B_c2=1.0, B_c21=1.0, B_v2=1.0, B_v21=1.0, B_qk21=1.0, B_x=1.0,
           L_sigma=1.0)
_ML = dict(L=2, C_1=1.0, C_Bx=1.0, B_c2=1.0, B_v2=1.0, B_qk2=1.0, B_w=1.0, L_sigma=1.0, B_x=1.0)
_ML11 = dict(L=2, d=4, k=3, B=1.0, B_x=1.0, B_c2=1.0, B_v2=1.0, B_qk2=1.0, B_w=1.0,
             L_sigma=1.0)


def _cases() -> dict:
    head = tt.rademacher_one_layer_l11(100, 4, B_x=1.0, B_QK=1.0, c=12.0, **_ONE)
    out = {}
    for form in ("audited", "printed"):
        f = dict(form=form)
        out.update({
            (tt.log_covering_l1inf, form): dict(eps=0.5, d=4, k=3, B_w=1.0, B_x=1.0, **f),
            (tt.log_covering_l11, form): dict(eps=0.5, d=4, k=3, B_w=1.0, B_x=1.0, **f),
            (tt.rademacher_one_layer, form): dict(m=100, d=4, C=1.0, B_x=1.0, c=12.0, C0=0.0,
                                                  softmax_constant=2.0, **_ONE, **f),
            (tt.rademacher_one_layer_l11, form): dict(m=100, d=4, B_x=1.0, B_QK=1.0, c=12.0,
                                                      softmax_constant=2.0, **_ONE, **f),
            (tt.rademacher_one_layer_l1inf, form): dict(m=100, d=4, B_x=1.0, B_QK=1.0, c=12.0,
                                                        softmax_constant=2.0, **_ONE, **f),
            (tt.rademacher_one_layer_l21, form): dict(m=100, d=4, B_x=1.0, B_QK=1.0, c=12.0,
                                                      lemma_constant=1.0, softmax_constant=2.0,
                                                      **_ONE, **f),
            (tt.gap_one_layer_l11, form): dict(m=100, d=4, B_x=1.0, B_QK=1.0, c=12.0,
                                               loss_bound=1.0, loss_lipschitz=1.0,
                                               confidence=0.05, softmax_constant=2.0, **_ONE,
                                               **f),
            (tt.log_covering_multilayer, form): dict(eps=0.5, a0=0.0, **_ML, **f),
            (tt.rademacher_multilayer, form): dict(m=100, c=12.0, a0=0.0, **_ML, **f),
            (tt.log_covering_multilayer_l11, form): dict(eps=0.5, **_ML11, **f),
            (tt.rademacher_multilayer_l11, form): dict(m=100, c=12.0, **_ML11, **f),
        })
    out.update({
        (tt.log_covering_l21, ""): dict(eps=0.5, d=4, k=3, B_w=1.0, B_x=1.0, constant=1.0),
        (tt.generalization_gap, ""): dict(rademacher=0.1, n=100, loss_bound=1.0,
                                          loss_lipschitz=1.0, confidence=0.05),
        (tt.lemma_e1_allocation, ""): dict(C=[1.0, 2.0], beta=[1.0, 0.5], eps=0.5),
        (tt.rademacher_multi_head, ""): dict(heads=head, H=2),
        (bl.edelman_log_covering_single_head, ""): dict(eps=0.5, m=100, T=10, constant=1.0,
                                                        **_ED),
        (bl.edelman_rademacher_single_head, ""): dict(m=100, T=10, c=12.0, constant=1.0, **_ED),
    })
    return out


def test_bad_input_sweep_covers_every_public_function() -> None:
    import inspect

    public = {getattr(mod, n) for mod in (tt, bl) for n in mod.__all__
              if inspect.isfunction(getattr(mod, n))}
    assert public == {fn for fn, _ in _cases()}


def test_bad_input_gives_a_value_error_naming_the_argument() -> None:
    problems = []
    for (fn, _), kwargs in _cases().items():
        for name, val in kwargs.items():
            if isinstance(val, bool) or not isinstance(val, int | float | list):
                continue
            for bad in _EDGES + ([1.0, True] if isinstance(val, list) else []):
                r = _probe(fn, kwargs, name, bad)
                if r:
                    problems.append(f"{fn.__name__}({name}={bad!r}, {kwargs.get('form')}): "
                                    f"{r}"[:300])
    assert not problems, "\n".join(problems[:20])


def test_bad_input_through_the_registry() -> None:
    from genbounds.bounds import get

    b = get("trauger_tewari.cor_4_1_1.audited")
    q = dict(m=100, d=4, B_w=1.0, B_Wc=1.0, B_Wv=1.0, B_x=1e300, B_QK=1.0)
    with pytest.raises(ValueError, match="B_x"):
        b.evaluate(q)
    with pytest.raises(ValueError, match="m"):
        b.evaluate({**q, "B_x": 1.0, "m": True})
