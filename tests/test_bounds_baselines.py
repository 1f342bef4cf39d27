"""Tests for genbounds.bounds.baselines (Edelman et al. 2022, reconstructed single-head bound)."""

from __future__ import annotations

import math

import pytest

from genbounds.bounds import baselines as bl
from genbounds.bounds import trauger_tewari as tt

NORMS = dict(B_w=1.0, B_c2=1.0, B_c21=2.0, B_v2=0.5, B_v21=1.5, B_qk21=3.0, B_x=1.0,
             L_sigma=1.0)


def _hand_gamma(m: int, T: int, d: int, k: int, kappa: float = 1.0,
                global_log: bool = False) -> float:
    n = NORMS
    R_y = n["B_c2"] * n["L_sigma"] * n["B_v2"] * n["B_x"]
    R_act = n["L_sigma"] * n["B_v2"] * n["B_x"]
    g = math.log(max(d, k) * m * T)
    lw, lc, lv, lq = ((g, g, g, g) if global_log else
                      (math.log(m), math.log(d * m), math.log(k * m * T), math.log(d * m)))
    parts = [
        (kappa * n["B_w"] ** 2 * R_y**2 * lw, 1.0),
        (kappa * n["B_c21"] ** 2 * R_act**2 * lc, n["B_w"]),
        (kappa * n["B_v21"] ** 2 * n["B_x"] ** 2 * lv, n["B_w"] * n["L_sigma"] * n["B_c2"]),
        (kappa * n["B_qk21"] ** 2 * n["B_x"] ** 2 * lq,
         2 * n["B_w"] * n["L_sigma"] * n["B_c2"] * n["B_v2"] * n["B_x"]),
    ]
    return sum((C * b * b) ** (1 / 3) for C, b in parts)


@pytest.mark.parametrize("global_log", [False, True])
def test_covering_hand_value(global_log: bool) -> None:
    m, T, d, k = 50, 7, 3, 2
    r = bl.edelman_log_covering_single_head(0.25, m=m, T=T, d=d, k=k, constant=1.7,
                                            log_factor="global" if global_log else "per_map",
                                            **NORMS)
    g = _hand_gamma(m, T, d, k, kappa=1.7, global_log=global_log)
    assert r.terms["Gamma"] == pytest.approx(g)
    assert r.value == pytest.approx(g**3 / 0.0625)
    assert r.constants["lemma_4_6_constant"] == 1.7


def test_rademacher_hand_value() -> None:
    m, T, d, k = 10**6, 20, 4, 4
    r = bl.edelman_rademacher_single_head(m, T, d=d, k=k, c=12.0, **NORMS)
    A = _hand_gamma(m, T, d, k) ** 3
    U = NORMS["B_w"] * NORMS["B_c2"] * NORMS["L_sigma"] * NORMS["B_v2"] * NORMS["B_x"]
    s = math.sqrt(A / m)
    assert s < U
    assert r.value == pytest.approx(12.0 * s * (1 + math.log(U / s)))
    # small m: trivial bound c * U
    small = bl.edelman_rademacher_single_head(10, T, d=d, k=k, c=12.0, **NORMS)
    assert small.value == pytest.approx(12.0 * U) and "trivial cap" in small.regime


def test_grows_with_log_T_where_tt_does_not() -> None:
    m, d, k = 10**7, 8, 8
    Ts = [10, 100, 1000, 10**4, 10**5]
    vals = [bl.edelman_rademacher_single_head(m, T, d=d, k=k, c=12.0, **NORMS).value
            for T in Ts]
    assert all(x < y for x, y in zip(vals, vals[1:], strict=False))
    # with one global log factor, Gamma^3 is exactly proportional to ln(max(d,k) m T)
    covs = [bl.edelman_log_covering_single_head(1.0, m=m, T=T, d=d, k=k, log_factor="global",
                                                **NORMS).value for T in Ts]
    for T, v in zip(Ts, covs, strict=True):
        assert v / math.log(d * m * T) == pytest.approx(covs[0] / math.log(d * m * Ts[0]))
    # the growth is logarithmic: multiplying T by 10 adds the same ln(10) to the v-term log
    r1 = bl.edelman_log_covering_single_head(1.0, m=m, T=10, d=d, k=k, **NORMS)
    r2 = bl.edelman_log_covering_single_head(1.0, m=m, T=100, d=d, k=k, **NORMS)
    assert r2.terms["log factor W_v"] - r1.terms["log factor W_v"] == pytest.approx(
        math.log(10))
    assert r2.terms["log factor W_QK"] == r1.terms["log factor W_QK"]
    # TT's one-layer bound for the same sizes has no T at all
    tt_val = tt.rademacher_one_layer_l11(m, d, B_w=1.0, B_Wc=1.0, B_Wv=1.0, L_sigma=1.0,
                                         B_x=1.0, B_QK=1.0, c=12.0).value
    assert math.isfinite(tt_val)


def test_monotone_in_norms() -> None:
    for key in ("B_w", "B_c2", "B_c21", "B_v2", "B_v21", "B_qk21", "B_x"):
        vals = [bl.edelman_log_covering_single_head(0.5, m=100, T=10, d=4, k=4,
                                                    **{**NORMS, key: NORMS[key] * f}).value
                for f in (0.5, 1.0, 2.0)]
        assert vals[0] < vals[1] < vals[2], key


def test_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="m must"):
        bl.edelman_log_covering_single_head(0.5, m=1, T=10, d=4, k=4, **NORMS)
    with pytest.raises(ValueError, match="T must"):
        bl.edelman_rademacher_single_head(100, 0, d=4, k=4, c=12.0, **NORMS)
    with pytest.raises(ValueError, match="B_v21"):
        bl.edelman_rademacher_single_head(100, 5, d=4, k=4, c=12.0,
                                          **{**NORMS, "B_v21": -1.0})
    with pytest.raises(ValueError, match="c must"):
        bl.edelman_rademacher_single_head(100, 5, d=4, k=4, c=float("nan"), **NORMS)
    with pytest.raises(ValueError, match="log_factor"):
        bl.edelman_log_covering_single_head(0.5, m=10, T=10, d=4, k=4, log_factor="max",
                                            **NORMS)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="eps"):
        bl.edelman_log_covering_single_head(-0.5, m=10, T=10, d=4, k=4, **NORMS)
