"""The bound interface: BoundValue's typed fields, the registry, and Bound.evaluate."""

from __future__ import annotations

import math

import pytest

from genbounds.bounds import registry as rg
from genbounds.bounds import trauger_tewari as tt
from genbounds.bounds.registry import Bound, BoundKind, BoundValue


def test_boundvalue_fields_rows_and_vacuity() -> None:
    b = BoundValue(0.5, BoundKind.GAP, {"a": 0.25}, {"c": 12.0}, {"delta": "numeric"}, "x",
                   "ref", ("h",))
    assert b.value == 0.5 and b.terms == {"a": 0.25} and b.constants == {"c": 12.0}
    assert b.rows() == [("value", "x", 0.5), ("term", "a", 0.25), ("constant", "c", 12.0),
                        ("choice", "delta", "numeric")]
    assert not b.is_vacuous(1.0) and b.is_vacuous(0.5)
    assert b.valid and b.regime == ""
    with pytest.raises(ValueError, match="loss_range"):
        b.is_vacuous(0.0)
    with pytest.raises(ValueError, match="log covering"):
        BoundValue(3.0, BoundKind.LOG_COVERING).is_vacuous(1.0)
    with pytest.raises(ValueError, match="value"):
        BoundValue(float("nan"), BoundKind.GAP)
    with pytest.raises(ValueError, match="terms"):
        BoundValue(1.0, BoundKind.GAP, {"a": float("nan")})
    with pytest.raises(ValueError, match="kind"):
        BoundValue(1.0, "gap")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="flags"):
        BoundValue(1.0, BoundKind.GAP, {"closed_form_valid": True})
    with pytest.raises(ValueError, match="valid"):
        BoundValue(1.0, BoundKind.GAP, valid=1)  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        b.value = 2.0  # type: ignore[misc]


def test_registry_lists_every_trauger_tewari_bound_in_both_forms() -> None:
    keys = {b.key for b in rg.registered(paper="trauger2024sequence")}
    for stmt in ("lemma_3_3", "lemma_3_6", "thm_4_1", "cor_4_1_1", "cor_d_0_1", "cor_d_0_2",
                 "thm_4_2", "cor_4_2_1", "gap_cor_4_1_1"):
        assert {f"trauger_tewari.{stmt}.printed", f"trauger_tewari.{stmt}.audited"} <= keys
    assert "trauger_tewari.lemma_3_4.audited" in keys
    assert rg.registered(paper="edelman2022inductive")
    gaps = rg.registered(kind=BoundKind.GAP)
    assert gaps and all(b.kind is BoundKind.GAP for b in gaps)
    assert all(b.form == "printed" for b in rg.registered(form="printed"))


def test_evaluate_equals_the_direct_call_and_checks_its_inputs() -> None:
    q = {"m": 300, "d": 65, "B_w": 1.0, "B_Wc": 5.0, "B_Wv": 3.0, "B_x": 6.0, "B_QK": 4.0}
    bound = rg.get("trauger_tewari.cor_4_1_1.audited")
    direct = tt.rademacher_one_layer_l11(300, 65, B_w=1.0, B_Wc=5.0, B_Wv=3.0, L_sigma=1.0,
                                         B_x=6.0, B_QK=4.0, c=12.0)
    got = bound.evaluate(q)
    assert got.value == direct.value and got.kind is BoundKind.RADEMACHER
    assert got.choices["form"] == "audited" and got.regime == direct.regime
    assert bound.evaluate(q, c=6.0).value == pytest.approx(direct.value / 2)
    with pytest.raises(ValueError, match="missing"):
        bound.evaluate({k: v for k, v in q.items() if k != "B_QK"})
    with pytest.raises(ValueError, match="unknown constants"):
        bound.evaluate(q, gamma=1.0)
    with pytest.raises(ValueError, match="no bound"):
        rg.get("trauger_tewari.nonexistent")


def test_register_rejects_duplicates_and_bad_declarations() -> None:
    b = rg.get("trauger_tewari.cor_4_1_1.audited")
    with pytest.raises(ValueError, match="already registered"):
        rg.register(Bound(b.key, b.paper, b.statement, b.kind, b.form, b.needs, b.constants,
                          b.fn))
    with pytest.raises(ValueError, match="overlap"):
        Bound("x.y", "p", "s", BoundKind.GAP, "audited", ("c",), {"c": 1.0}, b.fn)
    with pytest.raises(ValueError, match="form"):
        Bound("x.y", "p", "s", BoundKind.GAP, "corrected", (), {}, b.fn)  # type: ignore[arg-type]


def test_a_wrong_kind_is_caught_at_evaluation() -> None:
    b = rg.get("trauger_tewari.cor_4_1_1.audited")
    liar = Bound("test.liar.audited", "p", "s", BoundKind.GAP, "audited", b.needs, b.constants,
                 b.fn)
    q = {"m": 300, "d": 65, "B_w": 1.0, "B_Wc": 5.0, "B_Wv": 3.0, "B_x": 6.0, "B_QK": 4.0}
    with pytest.raises(RuntimeError, match="registered as"):
        liar.evaluate(q)


def test_printed_forms_report_when_they_are_not_bounds() -> None:
    # Thm 4.1 printed expression outside its range: flagged invalid (it can even be negative)
    p = tt.rademacher_one_layer(300, 64, C=1e6, B_x=1.0, c=12.0, B_w=1.0, B_Wc=1.0, B_Wv=1.0,
                                L_sigma=1.0, form="printed")
    assert not p.valid and "not a valid bound" in p.regime
    ok = tt.rademacher_one_layer(10**8, 2, C=0.01, B_x=1.0, c=12.0, B_w=1.0, B_Wc=1.0,
                                 B_Wv=1.0, L_sigma=1.0, form="printed")
    assert ok.valid


def test_evaluate_names_the_inputs_on_overflow_and_flags_negative_printed_values() -> None:
    from genbounds.bounds.registry import Bound, BoundKind, BoundValue, Verdict

    def boom(x: float) -> BoundValue:
        return BoundValue(math.exp(x), BoundKind.GAP)

    b = Bound(key="t.overflow", paper="p", statement="s", kind=BoundKind.GAP, form="printed",
              needs=("x",), constants={}, fn=boom, verdict=Verdict.FALSE, audit="a",
              counterexample="c")
    with pytest.raises(ValueError, match=r"^x \(= 1000000.0, the input farthest from 1\)"):
        b.evaluate({"x": 1e6})
    neg = Bound(key="t.negative", paper="p", statement="s", kind=BoundKind.GAP, form="printed",
                needs=("x",), constants={}, fn=lambda x: BoundValue(-x, BoundKind.GAP),
                verdict=Verdict.DOES_NOT_FOLLOW, audit="a")
    v = neg.evaluate({"x": 2.0})
    assert v.value == -2.0 and v.valid is False and not v.proved
    aud = Bound(key="t.audited", paper="p", statement="s", kind=BoundKind.GAP, form="audited",
                needs=("x",), constants={}, fn=lambda x: BoundValue(-x, BoundKind.GAP),
                verdict=Verdict.HOLDS, audit="a")
    with pytest.raises(RuntimeError, match="audited"):
        aud.evaluate({"x": 2.0})


def test_invalid_inputs_are_refused_up_front_naming_the_argument() -> None:
    """Issue 28 s.3: NaN/inf, bools, strings and negative norms are refused before the formula
    runs, even for an argument the formula ignores; a size has an upper limit (no hang at
    layers = 2**70); a ValueError from inside a bound leads with the argument's name."""
    import time

    from genbounds.bounds.registry import Bound, BoundKind, BoundValue, Verdict, get

    calls = []

    def ignores_y(x: float, y: float, layers: int) -> BoundValue:
        calls.append(1)
        if x > 5:
            raise ValueError("the product is too large for this statement")
        return BoundValue(x, BoundKind.GAP)

    b = Bound(key="t.ignores", paper="p", statement="s", kind=BoundKind.GAP, form="printed",
              needs=("x", "y", "layers"), constants={}, fn=ignores_y, verdict=Verdict.FALSE,
              audit="a", counterexample="c")
    assert b.evaluate({"x": 1.0, "y": 2.0, "layers": 2}).value == 1.0
    for bad, name in (({"y": math.nan}, "y"), ({"y": math.inf}, "y"), ({"y": True}, "y"),
                      ({"y": "1"}, "y"), ({"y": -1.0}, "y"), ({"layers": 2.5}, "layers"),
                      ({"layers": 2**70}, "layers"), ({"layers": -1}, "layers")):
        with pytest.raises(ValueError, match=rf"^{name} must"):
            b.evaluate({"x": 1.0, "y": 2.0, "layers": 2, **bad})
    assert len(calls) == 1  # none of them reached the formula
    assert b.evaluate({"x": 1.0, "y": 2.0, "layers": 2.0}).value == 1.0  # a size read as 2.0
    with pytest.raises(ValueError, match=r"^x: the product is too large"):
        b.evaluate({"x": 9.0, "y": 2.0, "layers": 2})
    deep = get("offset_rademacher.thm_5_3.printed")
    q = {n: 2 if n in ("layers", "heads", "n", "d", "k", "T", "m") else 1.0 for n in deep.needs}
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="^layers must be an integer in"):
        deep.evaluate({**q, "layers": 2**70})
    assert time.perf_counter() - t0 < 10.0  # refused before the work
    test_set = get("certificates.test_set.audited")
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"^n_test must be an integer in \[0, 1e\+05\]"):
        test_set.evaluate({"errors": 50_000, "n_test": 10**6})  # took 75 s before the limit
    assert time.perf_counter() - t0 < 10.0  # refused before the work (75 s)


def test_array_given_for_a_scalar_constant_is_named() -> None:
    import numpy as np

    from genbounds.bounds import get

    b = get("certificates.pac_bayes_catoni.audited")
    with pytest.raises(ValueError, match="grid_size"):
        b.evaluate({"empirical_risk": 0.1, "kl": 1.0, "n": 100}, grid_size=np.array([1.0, 2.0]))
