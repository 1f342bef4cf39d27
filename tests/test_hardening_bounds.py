"""Every refusal of a bound names the argument at fault, and no constant of a statement may be
negative (issue #37 item 4: ``offset_rademacher.cor_4_5.printed`` with ``kappa=1e308`` said
"approximation: value must be finite"; ``C_1 < 0`` gave ``valid=True`` in the audited
offset-Rademacher bounds, ``softmax_constant < 0`` in the printed Trauger-Tewari forms).

From a valid point of each registered bound, ONE argument at a time is set to an extreme or
invalid value (0, negatives, 1e-300, 1e300, 1e308, 1e15, 2**70, NaN, inf, a bool, a string,
None). Since only that argument changed, a refusal must lead with its name (alone, or in a
list ``"a, b: ..."`` when the two are in a relation such as ``r_QK <= d``). A negative constant
is refused; an accepted value is finite.
"""

from __future__ import annotations

import math
import re
import signal

import numpy as np
import pytest

from genbounds.bounds import BoundKind, registered
from genbounds.bounds.registry import SIZES

BOUNDS = registered()
PROBABILITIES = {"delta", "confidence", "empirical_error", "empirical_risk", "mc_error",
                 "mc_share"}
STRESS = [0, 0.0, -1.0, -1e-12, 1e-300, 1e300, 1e308, -1e308, 0.5, 2.0, 1e15, 10**20, 2**70,
          math.nan, math.inf, True, "x", None]


def _typical(name: str, scale: float) -> float | int:
    if name == "beta":
        return 3.0 * max(scale, 1.0)
    if name in ("layers", "heads", "L"):
        return 2
    if name in SIZES:
        return {"errors": 5, "n_test": 1000}.get(name, int(100 * scale))
    if name in PROBABILITIES:
        return 0.05 * scale if scale <= 2 else 0.05
    return 1.0 * scale


_POINTS: dict[str, dict[str, float | int] | None] = {}


def _valid_point(bound) -> dict[str, float | int] | None:  # noqa: ANN001
    """Quantities at which ``bound`` evaluates to a finite value (scaled together, then a
    seeded search over each quantity's scale); found once per bound."""
    if bound.key not in _POINTS:
        _POINTS[bound.key] = _search(bound)
    return _POINTS[bound.key]


def _search(bound) -> dict[str, float | int] | None:  # noqa: ANN001
    rng = np.random.default_rng(0)
    tries = [{n: _typical(n, s) for n in bound.needs}
             for s in (1.0, 2.0, 10.0, 0.5, 100.0, 0.1)]
    tries += [{n: _typical(n, float(rng.choice([0.01, 0.1, 0.5, 1.0, 2.0, 10.0, 100.0,
                                                 1000.0]))) for n in bound.needs}
              for _ in range(3000)]
    for q in tries:
        try:
            if math.isfinite(bound.evaluate(q).value):
                return q
        except ValueError:
            continue
    return None


def _lead(message: str) -> list[str]:
    """The argument names a message leads with: ``"a, b: ..."`` or ``"a ..."``."""
    m = re.match(r"([A-Za-z_]\w*(?:, [A-Za-z_]\w*)*):", message)
    if m:
        return m.group(1).split(", ")
    m = re.match(r"[A-Za-z_]\w*", message)
    return [m.group(0)] if m else []


class _Hang(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise _Hang


@pytest.mark.parametrize("bound", BOUNDS, ids=[b.key for b in BOUNDS])
def test_one_argument_changed_is_the_one_named(bound) -> None:  # noqa: ANN001
    base = _valid_point(bound)
    assert base is not None, f"{bound.key}: no valid point found"
    findings = []
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        for name in [*bound.needs, *bound.constants]:
            for value in STRESS:
                q, c = dict(base), {}
                if name in bound.needs:
                    q[name] = value
                else:
                    c[name] = value
                signal.alarm(20)
                try:
                    out = bound.evaluate(q, **c)
                except ValueError as exc:
                    if name not in _lead(str(exc)):
                        findings.append(f"{name}={value!r:.12}: names {_lead(str(exc))}: "
                                        f"{str(exc)[:120]}")
                    continue
                except _Hang:
                    findings.append(f"{name}={value!r}: no answer in 20 s")
                    continue
                finally:
                    signal.alarm(0)
                if name in bound.constants and isinstance(value, int | float) and value < 0:
                    findings.append(f"{name}={value!r}: a negative constant accepted "
                                    f"(valid={out.valid})")
                elif not math.isfinite(out.value):
                    findings.append(f"{name}={value!r}: value {out.value}")
                elif (bound.kind is not BoundKind.MEASURE and (out.valid or out.proved)
                      and out.value < 0):
                    findings.append(f"{name}={value!r}: negative bound {out.value}")
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert findings == [], f"{bound.key}:\n" + "\n".join(findings)


def test_constants_of_a_statement_are_never_negative() -> None:
    for bound in BOUNDS:
        base = _valid_point(bound)
        assert base is not None
        for name in bound.constants:
            with pytest.raises(ValueError, match=rf"^{re.escape(name)} must be "
                                                 r"(>= 0|a probability|an integer in \[0,)"):
                bound.evaluate(base, **{name: -1.0})


def _one_changed(bound, base, name, value):  # noqa: ANN001, ANN202
    if name in bound.needs:
        return bound.evaluate({**base, name: value})
    return bound.evaluate(base, **{name: value})


def test_the_issues_examples() -> None:
    from genbounds.bounds.registry import get

    b = get("offset_rademacher.cor_4_5.printed")
    base = _valid_point(b)
    assert base is not None
    with pytest.raises(ValueError, match=r"^kappa\b"):
        _one_changed(b, base, "kappa", 1e308)
    with pytest.raises(ValueError, match=r"^delta must be a probability in \(0, 1\)"):
        _one_changed(b, base, "delta", 1e308)
    for key, name in (("offset_rademacher.thm_b_4.audited", "C_1"),
                      ("trauger_tewari.cor_4_1_1.printed", "softmax_constant")):
        b = get(key)
        base = _valid_point(b)
        assert base is not None
        with pytest.raises(ValueError, match=rf"^{name} must be >= 0"):
            _one_changed(b, base, name, -1.0)
