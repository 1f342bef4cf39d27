"""The common interface of every bound in :mod:`genbounds.bounds`.

A bound is a plain function of norms, sizes and constants that returns a :class:`BoundValue`:
the number, the named pieces it is made of, *every* constant that entered it (including the
constant ``c`` of Dudley's entropy integral and the lower limit ``delta`` that was used), the
paper and equation it implements, and the assumptions under which it holds.

This module also holds two pieces of arithmetic shared by several papers' bounds:

* :func:`dudley_inverse_square` -- Dudley's entropy integral, in the form
  ``c * inf_{0 < delta <= U} (delta + int_delta^U sqrt(log N(eps) / n) d eps)`` (Trauger &
  Tewari 2024, Section 2.4), evaluated in closed form for the covering-number family
  ``log N(eps) <= a0 + A / eps^2`` that every Maurey-type covering lemma produces;
* the input validation used by every bound (``ValueError`` naming the argument).

Conventions
-----------
Logarithms are natural. Rademacher complexities are *empirical* and *normalised*,
``Rad_S(F) = E_sigma sup_{f in F} (1/n) sum_i sigma_i f(x_i)`` (no absolute value), as in
Shalev-Shwartz & Ben-David (2014, Def. 26.1) and Bartlett et al. (2017, Lemma A.5).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from scipy import optimize

__all__ = [
    "DUDLEY_C_BARTLETT_2017",
    "BoundValue",
    "DeltaChoice",
    "DudleyResult",
    "IntegralForm",
    "check_choice",
    "check_int",
    "check_nonnegative",
    "check_positive",
    "dudley_inverse_square",
]

#: A valid value of Dudley's constant ``c`` in the form ``c (delta + int ...)``: Bartlett, Foster
#: & Telgarsky (2017, Lemma A.5) prove ``Rad <= inf_a (4 a + 12 int_a^U sqrt(log N(eps)/n))``
#: (covers in the empirical L2 norm, which sup-norm covers dominate), and
#: ``4 a + 12 int <= 12 (a + int)``. Every bound takes ``c`` as an explicit argument; this is
#: the value the book uses when it needs a number.
DUDLEY_C_BARTLETT_2017: float = 12.0

DeltaChoice = Literal["closed_form", "numeric"] | float
IntegralForm = Literal["split", "exact"]


# ============================================================================ validation
def _is_number(value: Any) -> bool:
    """True for Python ints / floats and numpy integer / float scalars (never for bools)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    return (type(value).__module__ == "numpy" and getattr(value, "shape", None) == ()
            and kind in ("i", "u", "f"))


def check_positive(value: Any, name: str) -> float:
    """Return ``float(value)`` if it is a finite number ``> 0``, else raise ``ValueError``.

    The message names the argument, e.g. ``"B_x must be finite and > 0, got 0.0"``.
    """
    if not _is_number(value):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if v <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return v


def check_nonnegative(value: Any, name: str) -> float:
    """Return ``float(value)`` if it is a finite number ``>= 0``, else raise ``ValueError``."""
    if not _is_number(value):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if v < 0:
        raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
    return v


def check_int(value: Any, name: str, minimum: int = 1) -> int:
    """Return ``int(value)`` if it is an integer ``>= minimum`` (bools rejected)."""
    ok = (not isinstance(value, bool)) and (
        isinstance(value, int)
        or (type(value).__module__ == "numpy" and hasattr(value, "dtype")
            and getattr(value, "shape", None) == () and value.dtype.kind in "iu")
    )
    if not ok or int(value) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_choice(value: Any, name: str, choices: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise ``ValueError``."""
    options = tuple(choices)
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {options}, got {value!r}")
    return value


# ============================================================================ BoundValue
@dataclass(frozen=True)
class BoundValue:
    """One evaluated bound, with everything needed to recompute it by hand.

    Attributes
    ----------
    value:
        The number the bound asserts (a log covering number, a Rademacher complexity or a
        generalization gap, as ``name`` says).
    terms:
        Named pieces of ``value`` (e.g. the ``ln(2d)`` term and the covering term of a
        Dudley integral, the optimal ``delta``), in the order they are computed.
    constants:
        Every constant used, including Dudley's ``c``, the softmax-Lipschitz constant, hidden
        constants of ``O(.)`` / ``<~`` statements that we had to choose, and the ``delta``
        choice (``delta_rule``: 0 = closed form, 1 = numeric, 2 = given).
    name:
        What was computed (e.g. ``"Rademacher complexity, one layer, ||W_QK||_{1,1}"``).
    reference:
        Paper and equation / theorem implemented (``"Trauger & Tewari 2024, Cor. 4.1.1"``).
    assumptions:
        Hypotheses under which the bound holds, in words, with the corrections the book's
        audit made to the paper's statement.
    """

    value: float
    terms: dict[str, float] = field(default_factory=dict)
    constants: dict[str, float] = field(default_factory=dict)
    name: str = ""
    reference: str = ""
    assumptions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        v = float(self.value)
        if not math.isfinite(v):
            raise ValueError(f"value must be finite, got {self.value!r}")
        object.__setattr__(self, "value", v)
        for label, mapping in (("terms", self.terms), ("constants", self.constants)):
            if not isinstance(mapping, Mapping):
                raise ValueError(f"{label} must be a mapping from names to numbers")
            clean: dict[str, float] = {}
            for key, val in mapping.items():
                if not isinstance(key, str):
                    raise ValueError(f"{label} keys must be strings, got {key!r}")
                fv = float(val)
                if math.isnan(fv):
                    raise ValueError(f"{label}[{key!r}] is NaN")
                clean[key] = fv
            object.__setattr__(self, label, clean)
        object.__setattr__(self, "assumptions", tuple(str(a) for a in self.assumptions))

    def is_vacuous(self, loss_range: float) -> bool:
        """True when the bound says nothing for a loss with values in an interval of this length.

        A bound on a generalization gap (or on the Rademacher complexity of a loss class) that
        is ``>= loss_range`` is implied by the range of the loss alone.
        """
        r = check_positive(loss_range, "loss_range")
        return self.value >= r

    def rows(self) -> list[tuple[str, str, float]]:
        """``(kind, name, number)`` rows: the value, then every term, then every constant."""
        out: list[tuple[str, str, float]] = [("value", self.name or "value", self.value)]
        out += [("term", k, v) for k, v in self.terms.items()]
        out += [("constant", k, v) for k, v in self.constants.items()]
        return out


# ============================================================================ Dudley
@dataclass(frozen=True)
class DudleyResult:
    """``c * G(delta)`` for the objective ``G`` of :func:`dudley_inverse_square`.

    Attributes
    ----------
    value:
        ``c * G(delta)``.
    objective:
        ``G(delta)`` (the bracket, without ``c``).
    delta:
        The lower limit used (in ``(0, upper]``, or 0 when ``A = 0``).
    delta_stationary:
        The stationary point of ``G`` on ``(0, inf)`` (``inf`` if ``n <= a0``): the
        closed-form optimum the papers write down. It is the minimiser over ``(0, upper]``
        only when it is ``<= upper`` (``closed_form_valid``).
    closed_form_valid:
        Whether ``delta_stationary <= upper``.
    const_term, cover_term:
        For ``integral="split"``: ``(upper - delta) sqrt(a0/n)`` and
        ``sqrt(A/n) ln(upper/delta)``. For ``"exact"`` the whole integral is in ``cover_term``
        and ``const_term`` is 0.
    """

    value: float
    objective: float
    delta: float
    delta_stationary: float
    closed_form_valid: bool
    const_term: float
    cover_term: float


def _phi(eps: float, A: float, a0: float) -> float:
    """Antiderivative of ``sqrt(a0 + A/eps^2)`` (up to a constant), for ``eps > 0``."""
    if A == 0.0:
        return math.sqrt(a0) * eps
    if a0 == 0.0:
        return math.sqrt(A) * math.log(eps)
    s = math.sqrt(a0 * eps * eps + A)
    rA = math.sqrt(A)
    return s - rA * math.log((rA + s) / eps)


def _objective(delta: float, A: float, a0: float, n: int, upper: float,
               integral: str) -> tuple[float, float, float]:
    """``(G(delta), const_term, cover_term)``."""
    if delta >= upper:
        return upper, 0.0, 0.0
    if integral == "split":
        const = (upper - delta) * math.sqrt(a0 / n)
        if A == 0.0:
            cover = 0.0
        else:
            if delta <= 0.0:
                return math.inf, const, math.inf
            cover = math.sqrt(A / n) * math.log(upper / delta)
        return delta + const + cover, const, cover
    # exact integral of sqrt((a0 + A/eps^2)/n)
    if delta <= 0.0:
        if A > 0.0:
            return math.inf, 0.0, math.inf
        cover = upper * math.sqrt(a0 / n)
        return cover, 0.0, cover
    cover = (_phi(upper, A, a0) - _phi(delta, A, a0)) / math.sqrt(n)
    return delta + cover, 0.0, cover


def dudley_inverse_square(
    A: float,
    a0: float,
    n: int,
    upper: float,
    *,
    c: float,
    delta: DeltaChoice = "closed_form",
    integral: IntegralForm = "split",
) -> DudleyResult:
    """Dudley's integral for ``log N(eps) <= a0 + A / eps^2`` on ``(0, upper]``.

    Evaluates ``c * G(delta)`` with::

        G(delta) = delta + int_delta^upper sqrt((a0 + A/eps^2) / n) d eps      ("exact")
                 <= delta + (upper - delta) sqrt(a0/n) + sqrt(A/n) ln(upper/delta)
                                                                              ("split")

    the second line being the bound ``sqrt(x + y) <= sqrt(x) + sqrt(y)`` used by Trauger &
    Tewari (2024, App. C). Both ``G`` are convex on ``(0, inf)`` (their derivatives
    ``1 - sqrt(a0/n) - sqrt(A/n)/delta`` resp. ``1 - sqrt((a0 + A/delta^2)/n)`` increase), so the
    stationary point clipped to ``(0, upper]`` is the exact minimiser on ``(0, upper]``:

    * split: ``delta* = sqrt(A) / (sqrt(n) - sqrt(a0))`` (Trauger & Tewari's closed form);
    * exact: ``delta* = sqrt(A / (n - a0))``;
    * ``n <= a0``: ``G`` decreases on ``(0, upper]``; the minimum is ``G(upper) = upper``.

    When ``delta* > upper`` the closed form is *not* the minimiser over the admissible range
    and the value obtained by substituting it is not a valid bound (it can even be negative);
    the minimum is then ``G(upper) = upper``, i.e. the trivial bound ``c * upper``.

    Parameters
    ----------
    A, a0:
        The covering-number constants (``A >= 0``, ``a0 >= 0``).
    n:
        Sample size.
    upper:
        The radius of the class (its sup norm bound); ``log N = 0`` beyond it.
    c:
        Dudley's constant (explicit; see :data:`DUDLEY_C_BARTLETT_2017`).
    delta:
        ``"closed_form"`` (the clipped stationary point above), ``"numeric"`` (bounded scalar
        minimisation of ``G`` in ``log delta``; a check of the closed form) or a number in
        ``(0, upper]``.
    integral:
        ``"split"`` (the papers' form) or ``"exact"`` (the integral evaluated exactly via the
        antiderivative ``sqrt(a0 eps^2 + A) - sqrt(A) ln((sqrt(A) + sqrt(a0 eps^2 + A))/eps)``).
    """
    Av = check_nonnegative(A, "A")
    a0v = check_nonnegative(a0, "a0")
    n = check_int(n, "n")
    U = check_positive(upper, "upper")
    cv = check_positive(c, "c")
    check_choice(integral, "integral", ("split", "exact"))

    if n <= a0v:
        stat = math.inf
    elif integral == "split":
        stat = math.sqrt(Av) / (math.sqrt(n) - math.sqrt(a0v))
    else:
        stat = math.sqrt(Av / (n - a0v))
    valid = stat <= U

    if isinstance(delta, str):
        check_choice(delta, "delta", ("closed_form", "numeric"))
        if delta == "closed_form":
            d = min(stat, U)
        else:
            if Av == 0.0:
                d = 0.0 if n > a0v else U
            else:
                lo, hi = math.log(U) - 30.0, math.log(U)
                res = optimize.minimize_scalar(
                    lambda t: _objective(math.exp(t), Av, a0v, n, U, integral)[0],
                    bounds=(lo, hi), method="bounded", options={"xatol": 1e-12},
                )
                d = math.exp(float(res.x))
                if _objective(U, Av, a0v, n, U, integral)[0] <= \
                        _objective(d, Av, a0v, n, U, integral)[0]:
                    d = U
    else:
        d = check_nonnegative(delta, "delta")
        if d > U:
            raise ValueError(f"delta must be in (0, upper={U}], got {delta!r}")
        if d == 0.0 and Av > 0.0:
            raise ValueError("delta must be > 0 when A > 0 (the integral diverges at 0)")
    G, const, cover = _objective(d, Av, a0v, n, U, integral)
    return DudleyResult(cv * G, G, d, stat, valid, const, cover)
