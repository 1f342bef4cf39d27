"""The registry additions the comparison chapter relies on: BoundKind.MEASURE, Bound.applies_to,
per-paper quantities adapters and NotApplicable."""

from __future__ import annotations

import numpy as np
import pytest

from genbounds.bounds import registry as rg
from genbounds.bounds.registry import Bound, BoundKind, BoundValue, NotApplicable
from genbounds.experiments import comparison as cmp


def _fn(x: float) -> BoundValue:
    return BoundValue(2 * x, BoundKind.GAP)


def test_applies_to_and_adapters() -> None:
    b = Bound("test_cmp.only_shallow", "test_cmp_paper", "Thm 0", BoundKind.GAP, "printed",
              ("x",), {}, _fn, applies_to=frozenset({"ShallowEncoder"}))
    assert b.applies_to == frozenset({"ShallowEncoder"})
    assert Bound("k", "p", "s", BoundKind.GAP, "printed", ("x",), {}, _fn).applies_to is None
    with pytest.raises(ValueError, match="applies_to"):
        Bound("k", "p", "s", BoundKind.GAP, "printed", ("x",), {}, _fn, applies_to=frozenset())
    rows = [{"task": 0.0, "family": 0.0, "n": 10.0, "depth": 1.0, "heads": 1.0, "token_dim": 4.0,
             "width": 2.0,
             "tokens": 5.0, "x": 0.25}]
    bt = cmp.evaluate_bounds(rows, [b])
    assert np.isnan(bt.values[b.key][0]) and "not EdelmanTransformer" in bt.reasons[b.key]
    free = Bound("test_cmp.free", "test_cmp_paper2", "Thm 0", BoundKind.GAP, "printed", ("x",),
                 {}, _fn)
    bt = cmp.evaluate_bounds(rows, [free])
    assert "registers no quantities adapter" in bt.reasons[free.key]

    def adapter(row: dict, ctx: dict) -> dict:
        if ctx["depth"] > 1:
            raise NotApplicable("one layer only")
        return {"x": row["x"]}

    assert rg.register_quantities("test_cmp_paper2", adapter) is adapter
    assert rg.quantities_adapter("test_cmp_paper2") is adapter
    assert "test_cmp_paper2" in rg.registered_quantities()
    bt = cmp.evaluate_bounds(rows + [{**rows[0], "depth": 2.0}], [free])
    assert bt.values[free.key][0] == 0.5 and np.isnan(bt.values[free.key][1])
    assert free.key not in bt.reasons and bt.valid[free.key][0]
    bt = cmp.evaluate_bounds([{**rows[0], "depth": 2.0}], [free])
    assert bt.reasons[free.key] == "one layer only"
    with pytest.raises(ValueError, match="already registered"):
        rg.register_quantities("test_cmp_paper2", lambda r, c: {})
    with pytest.raises(ValueError, match="paper"):
        rg.register_quantities("", adapter)
    with pytest.raises(ValueError, match="callable"):
        rg.register_quantities("p", 3)  # type: ignore[arg-type]
