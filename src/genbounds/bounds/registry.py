"""The bound interface of the book: what a bound returns, how it is registered, how it is found.

Every bound of every chapter is one registered :class:`Bound`: a name, the paper and equation it
implements, **what it bounds** (:class:`BoundKind`), whether it is the paper's printed statement or
the book's audited (corrected) one, the quantities it needs (norms from
:func:`genbounds.norms.norm_table` or a paper's adapter, and sizes such as ``n``, ``T``, ``d``),
its constants as explicit arguments with the values the book uses, and ``evaluate(...)`` returning a
:class:`BoundValue`.

The comparison chapter is one loop::

    for bound in registered():
        value = bound.evaluate(quantities_of_one_model)

A chapter adds its bounds by calling :func:`register` at import time of its module in
:mod:`genbounds.bounds` (``bounds/__init__.py`` imports every paper module, so
``python -m genbounds bounds`` lists them all).

Conventions
-----------
Logarithms are natural. Rademacher complexities are *empirical* and *normalised*,
``Rad_S(F) = E_sigma sup_{f in F} (1/n) sum_i sigma_i f(x_i)`` (no absolute value), as in
Shalev-Shwartz & Ben-David (2014, Def. 26.1) and Bartlett et al. (2017, Lemma A.5).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeVar

import numpy as np

from genbounds.validation import check_positive, is_number

__all__ = [
    "DUDLEY_C_BARTLETT_2017",
    "Bound",
    "BoundKind",
    "BoundValue",
    "Form",
    "NotApplicable",
    "QuantitiesAdapter",
    "Verdict",
    "get",
    "quantities_adapter",
    "register",
    "register_quantities",
    "registered",
    "registered_quantities",
]

#: A valid value of Dudley's constant ``c`` in the form ``c (delta + int ...)``: Bartlett, Foster
#: & Telgarsky (2017, Lemma A.5) prove ``Rad <= inf_a (4 a + 12 int_a^U sqrt(log N(eps)/n))``
#: (covers in the empirical L2 norm, which sup-norm covers dominate), and
#: ``4 a + 12 int <= 12 (a + int)``. Every bound takes ``c`` as an explicit argument; this is
#: the value the book uses when it needs a number.
DUDLEY_C_BARTLETT_2017: float = 12.0

Form = Literal["printed", "audited"]


class BoundKind(enum.Enum):
    """What the number of a bound bounds. Values of different kinds are never compared."""

    LOG_COVERING = "log covering number"
    RADEMACHER = "Rademacher complexity"
    GAP = "generalization gap"
    EXCESS_RISK = "excess risk"
    TRUE_LOSS = "true loss"
    TRAINING_LOSS = "training loss"
    #: A generalization *measure* that is not a bound on anything (a parameter count, a product
    #: of norms, a sharpness score): only its ranking of models is meaningful, it is never
    #: "vacuous" and never compared with a gap in value.
    MEASURE = "generalization measure (not a bound)"

    @property
    def is_risk(self) -> bool:
        """True for kinds measured in units of the loss (can be compared with a measured gap)."""
        return self in (BoundKind.GAP, BoundKind.EXCESS_RISK, BoundKind.TRUE_LOSS,
                        BoundKind.TRAINING_LOSS)


class Verdict(enum.Enum):
    """What a chapter's proof audit found about one registered statement, in the audit's words.

    Only :attr:`HOLDS` makes a number a *proved* bound: a printed statement that needs a
    correction, whose proof does not follow, or that is false is evaluated (to show what the paper
    would claim) but never reported as a certificate. An ``audited`` registration is the book's
    own statement and must have the verdict :attr:`HOLDS`.

    The chapter states each verdict under its audit table as one line,
    ``**Verdict on {prf:ref}`LABEL`:** *holds*``, and ``tests/test_audit_registry.py`` checks that
    the line and the registry agree.
    """

    HOLDS = "holds"
    HOLDS_WITH_CORRECTION = "holds with a correction"
    DOES_NOT_FOLLOW = "does not follow"
    FALSE = "false"


@dataclass(frozen=True)
class BoundValue:
    """One evaluated bound, with everything needed to recompute it by hand.

    Attributes
    ----------
    value:
        The number the bound asserts, of the kind ``kind``.
    kind:
        What ``value`` bounds (:class:`BoundKind`).
    terms:
        Named numeric pieces of ``value`` (e.g. the ``ln(2d)`` term and the covering term of a
        Dudley integral, the ``delta`` used), in the order they are computed.
    constants:
        Every numeric constant used, including Dudley's ``c``, the softmax-Lipschitz constant and
        hidden constants of ``O(.)`` statements that the book had to choose.
    choices:
        Every non-numeric choice, by name (``{"delta": "closed_form", "integral": "split",
        "form": "audited"}``).
    name, reference:
        What was computed, and the paper's equation / theorem (``"Trauger & Tewari 2024,
        Cor. 4.1.1"``).
    assumptions:
        Hypotheses under which the bound holds, in words, with the audit's corrections.
    valid:
        Whether ``value`` is a valid bound at these inputs under ``assumptions`` (False e.g. for a
        printed closed form used outside the range where it is the minimiser).
    regime:
        Which case of the statement applied, in words (e.g. ``"closed-form delta* <= B_x"`` or
        ``"delta* > B_x: trivial cap c B_x"``); empty when the statement has one case.
    verdict:
        The proof audit's verdict on the registered statement (set by :meth:`Bound.evaluate`;
        ``None`` for a measure or a value computed outside the registry).
    """

    value: float
    kind: BoundKind
    terms: Mapping[str, float] = field(default_factory=dict)
    constants: Mapping[str, float] = field(default_factory=dict)
    choices: Mapping[str, str] = field(default_factory=dict)
    name: str = ""
    reference: str = ""
    assumptions: tuple[str, ...] = ()
    valid: bool = True
    regime: str = ""
    verdict: Verdict | None = None

    @property
    def proved(self) -> bool:
        """True when this number is a bound the book proves: the statement's audit verdict is
        *holds* and the inputs are in the range where it applies (``valid``)."""
        return self.valid and self.verdict is Verdict.HOLDS

    def __post_init__(self) -> None:
        v = float(self.value)
        if not math.isfinite(v):
            raise ValueError(f"value must be finite, got {self.value!r}")
        object.__setattr__(self, "value", v)
        if not isinstance(self.kind, BoundKind):
            raise ValueError(f"kind must be a BoundKind, got {self.kind!r}")
        for label, mapping in (("terms", self.terms), ("constants", self.constants)):
            if not isinstance(mapping, Mapping):
                raise ValueError(f"{label} must be a mapping from names to numbers")
            clean: dict[str, float] = {}
            for key, val in mapping.items():
                if not isinstance(key, str):
                    raise ValueError(f"{label} keys must be strings, got {key!r}")
                if isinstance(val, bool | str):
                    raise ValueError(f"{label}[{key!r}] must be a number (use choices / valid / "
                                     f"regime for flags), got {val!r}")
                fv = float(val)
                if math.isnan(fv):
                    raise ValueError(f"{label}[{key!r}] is NaN")
                clean[key] = fv
            object.__setattr__(self, label, clean)
        if not isinstance(self.choices, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in self.choices.items()):
            raise ValueError("choices must map names to strings")
        object.__setattr__(self, "choices", dict(self.choices))
        if not isinstance(self.valid, bool):
            raise ValueError(f"valid must be a bool, got {self.valid!r}")
        if self.verdict is not None and not isinstance(self.verdict, Verdict):
            raise ValueError(f"verdict must be a Verdict or None, got {self.verdict!r}")
        object.__setattr__(self, "assumptions", tuple(str(a) for a in self.assumptions))

    def is_vacuous(self, loss_range: float) -> bool:
        """True when the bound says nothing for a loss with values in an interval of this length.

        Only defined for bounds in units of the loss or of a loss class's Rademacher complexity
        (a log covering number is never "vacuous"): a value ``>= loss_range`` is implied by the
        range of the loss alone.
        """
        r = check_positive(loss_range, "loss_range")
        if self.kind is BoundKind.LOG_COVERING:
            raise ValueError("is_vacuous is undefined for a log covering number")
        if self.kind is BoundKind.MEASURE:
            raise ValueError("is_vacuous is undefined for a generalization measure (not a bound)")
        return self.value >= r

    def rows(self) -> list[tuple[str, str, float | str]]:
        """``(kind, name, number)`` rows: the value, every term, constant and choice."""
        out: list[tuple[str, str, float | str]] = [("value", self.name or "value", self.value)]
        out += [("term", k, v) for k, v in self.terms.items()]
        out += [("constant", k, v) for k, v in self.constants.items()]
        out += [("choice", k, v) for k, v in self.choices.items()]
        return out


@dataclass(frozen=True)
class Bound:
    """A registered bound: one statement of one paper, in one form, as a function.

    Attributes
    ----------
    key:
        Unique dotted name, ``"<paper>.<statement>.<variant>.<form>"``
        (e.g. ``"trauger_tewari.cor_4_1_1.l11.audited"``).
    paper:
        The BibTeX key of the paper in ``book/references.bib``.
    statement:
        Theorem / corollary / equation, as the paper numbers it (``"Cor. 4.1.1"``).
    kind:
        What it bounds.
    form:
        ``"printed"`` (the statement as the paper prints it) or ``"audited"`` (the book's
        corrected statement; see the chapter's proof audit).
    needs:
        Names of the quantities ``evaluate`` reads: norms (keys of a norm table or of a paper's
        adapter) and sizes (``"n"``, ``"T"``, ``"d"``, ...).
    constants:
        The explicit constants and their default values (what the book uses); override them per
        call. Every constant of the statement that is not a norm or a size is here.
    fn:
        The implementation: ``fn(**needs, **constants, **fixed) -> BoundValue``.
    fixed:
        Arguments fixed by this registration (e.g. ``{"form": "audited"}``).
    description:
        One line for ``python -m genbounds bounds``.
    applies_to:
        The model families (``ModelView.family`` names) the statement is about, or ``None``
        (the default) when the registration does not restrict it; the comparison chapter
        reports a bound whose set excludes a model's family as "not applicable" with the reason.
    verdict:
        The chapter's proof-audit verdict on this statement in this form (:class:`Verdict`);
        ``None`` only for a generalization measure (kind ``MEASURE``). An ``audited`` form must
        be :attr:`Verdict.HOLDS`.
    audit:
        The ``prf`` label of the chapter's statement whose audit decides the verdict (the
        chapter has the line ``**Verdict on {prf:ref}`LABEL`:** *...*``).
    counterexample:
        For :attr:`Verdict.FALSE`: the instance that refutes the statement, in words (and
        where the chapter computes it).
    """

    key: str
    paper: str
    statement: str
    kind: BoundKind
    form: Form
    needs: tuple[str, ...]
    constants: Mapping[str, float]
    fn: Callable[..., BoundValue]
    fixed: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    applies_to: frozenset[str] | None = None
    verdict: Verdict | None = None
    audit: str = ""
    counterexample: str = ""

    @property
    def proved(self) -> bool:
        """True when the audit says the statement, in this form, holds."""
        return self.verdict is Verdict.HOLDS

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not self.key:
            raise ValueError("key must be a non-empty string")
        if self.verdict is not None and not isinstance(self.verdict, Verdict):
            raise ValueError(f"verdict must be a Verdict or None, got {self.verdict!r}")
        if self.kind is BoundKind.MEASURE and self.verdict is not None:
            raise ValueError(f"{self.key}: a generalization measure bounds nothing and has no "
                             "verdict")
        if self.form == "audited" and self.verdict not in (None, Verdict.HOLDS):
            raise ValueError(f"{self.key}: an audited form is the book's own statement and must "
                             f"hold, got verdict {self.verdict.value if self.verdict else None!r}")
        if self.verdict is Verdict.FALSE and not self.counterexample:
            raise ValueError(f"{self.key}: verdict FALSE needs a counterexample")
        if self.applies_to is not None:
            fams = frozenset(self.applies_to)
            if not fams or not all(isinstance(f, str) and f for f in fams):
                raise ValueError("applies_to must be None or a non-empty set of family names")
            object.__setattr__(self, "applies_to", fams)
        if self.form not in ("printed", "audited"):
            raise ValueError(f"form must be 'printed' or 'audited', got {self.form!r}")
        if not isinstance(self.kind, BoundKind):
            raise ValueError(f"kind must be a BoundKind, got {self.kind!r}")
        clash = set(self.needs) & (set(self.constants) | set(self.fixed))
        if clash:
            raise ValueError(f"needs and constants/fixed overlap: {sorted(clash)}")

    def evaluate(self, quantities: Mapping[str, Any], **constants: Any) -> BoundValue:
        """Evaluate at the given norms / sizes, with the default constants unless overridden.

        Raises ``ValueError`` naming every missing quantity, or an unknown constant.
        """
        missing = [q for q in self.needs if q not in quantities]
        if missing:
            raise ValueError(f"quantities is missing {missing} needed by bound {self.key!r}")
        unknown = set(constants) - set(self.constants)
        if unknown:
            raise ValueError(f"unknown constants {sorted(unknown)} for bound {self.key!r}; "
                             f"it takes {sorted(self.constants)}")
        args: dict[str, Any] = {q: _checked(quantities[q], q, need=True) for q in self.needs}
        args.update(self.constants)
        args.update({c: _checked(v, c, need=False) for c, v in constants.items()})
        args.update(self.fixed)
        given = {k: args[k] for k in [*self.needs, *self.constants]}
        try:
            # numpy's overflow/invalid warnings at inputs beyond a float's range are not shown:
            # the formula's own checks refuse a non-finite result, naming the argument
            with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
                out = self.fn(**args)
        except (OverflowError, ZeroDivisionError) as exc:  # inputs beyond a float's range
            far = _extreme(given)
            names = self._culprits(args, given) or [far]
            shown = ", ".join(f"{n} (= {given[n]!r}" + (", the input farthest from 1)"
                                                        if n == far else ")") for n in names)
            raise ValueError(f"{shown} and the other inputs of bound {self.key!r} are out of "
                             f"the range a float can hold: {type(exc).__name__}: {exc}"
                             ) from exc
        except ValueError as exc:  # a check deep inside: the message leads with the argument
            if len(exc.args) <= 1:  # same type (NotApplicable stays NotApplicable)
                exc.args = (_lead_with_name(str(exc), given, self._culprits(args, given)),)
            raise
        if out.kind is not self.kind:
            raise RuntimeError(f"bound {self.key!r} is registered as {self.kind} but returned "
                               f"{out.kind}")
        if out.kind is not BoundKind.MEASURE and out.value < 0:
            if self.form == "audited":  # the book's own statement: a negative value is a bug
                raise RuntimeError(f"audited bound {self.key!r} returned {out.value} < 0")
            # a printed closed form outside the range where it is the statement's bound
            out = replace(out, valid=False, regime="; ".join(
                r for r in (out.regime, "the printed expression is negative here: not a bound")
                if r))
        return replace(out, choices={**out.choices, "form": self.form}, verdict=self.verdict)


    def _culprits(self, args: Mapping[str, Any], given: Mapping[str, Any]) -> list[str]:
        """The arguments to blame for a call that failed inside the formula: those that, each
        alone moved to a moderate value (a constant to its default; a quantity to a power of
        ten between 0.01 and 1000, a size to one between 1 and 10**4), let the bound be
        evaluated. One argument changed from a
        valid point is thereby named, not another that merely appears in the failing
        expression; two in a relation (``r_QK <= d``) are both named. At most
        :data:`ATTRIBUTION_S` seconds are spent; ``[]`` when nothing is found."""
        import time

        end = time.monotonic() + ATTRIBUTION_S
        found: list[str] = []
        for name in sorted(given, key=lambda n: -_distance(given[n])):
            for tame in self._moderate(name, given[name]):
                if time.monotonic() > end:
                    return found
                try:
                    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
                        self.fn(**{**args, name: tame})
                except Exception:  # noqa: BLE001 - still failing: not this one alone
                    continue
                found.append(name)
                break
        return found

    def _moderate(self, name: str, value: Any) -> list[Any]:
        """Moderate values of argument ``name`` other than ``value`` (see :meth:`_culprits`)."""
        if name in self.constants:
            candidates: list[Any] = [self.constants[name]]
        elif name in SIZES:
            candidates = [100, 10, 1, 1000, 10000]
        elif name in PROBABILITIES:
            candidates = [0.05, 0.5]
        else:
            candidates = [1.0, 10.0, 100.0, 1000.0, 0.1, 0.01, 0.05]
        return [c for c in candidates if c != value]


ATTRIBUTION_S = 2.0
"""Seconds :meth:`Bound._culprits` may spend finding the argument to name in an error."""
PROBABILITIES = {"delta": True, "confidence": True, "mc_share": True, "mc_error": False,
                 "empirical_error": False}
"""Arguments that are probabilities: in ``(0, 1)`` (``True``: open) or ``[0, 1]``."""


LOOP_SIZES = frozenset({"heads", "layers", "L", "n_matrices", "mc_samples", "grid_size"})
"""Sizes a bound loops over (heads, layers, matrices, Monte Carlo draws, a grid): at most
:data:`MAX_LOOP_SIZE`, so that a wrong input fails at once instead of running for hours."""
SIZES = LOOP_SIZES | frozenset({"n", "m", "d", "k", "T", "N", "d_s", "d_m", "r_QK", "r_v",
                                "r_c", "n_test", "errors"})
"""Quantities and constants that are counts: integers, at most :data:`MAX_SIZE` (:data:`MAX_
LOOP_SIZE` for :data:`LOOP_SIZES`)."""
MAX_LOOP_SIZE = 10**6
MAX_SIZE = 10**15
"""Beyond any data set or width (and below 2**53, where a float still holds every integer)."""
SIZE_LIMITS = {"n_test": 10**5, "errors": 10**5}
"""Tighter limits: the held-out test-set bound sums the binomial distribution exactly, one term
per error, at every step of its inversion (10**5 points take about 7 s on one core; 10**6 took
75 s)."""
SIGNED = frozenset({"log_prod_fro", "log_prod_spec", "mag_logsum"})
"""Quantities that may be negative (logarithms); every other quantity is a norm, a size, a
risk or a complexity, and must be >= 0."""


def _checked(value: Any, name: str, *, need: bool) -> Any:
    """``value`` as a Python number, checked before any bound sees it (so that an invalid value
    is refused even where the formula would not use it): a finite real number (not a bool, a
    string, an array or NaN/inf); a size an integer in ``[0, MAX_SIZE]`` (``MAX_LOOP_SIZE``
    for the sizes a bound loops over); a quantity other than a logarithm ``>= 0``. The message
    starts with ``name``."""
    item = getattr(value, "item", None)
    if item is not None and getattr(value, "ndim", None) == 0:
        value = item()
    elif getattr(value, "ndim", 0) != 0:
        raise ValueError(f"{name} must be a scalar (one model), got shape "
                         f"{getattr(value, 'shape', None)}")
    if not is_number(value):
        raise ValueError(f"{name} must be a finite real number, got {value!r}")
    if name in SIZES:
        limit = SIZE_LIMITS.get(name, MAX_LOOP_SIZE if name in LOOP_SIZES else MAX_SIZE)
        if isinstance(value, float) and value.is_integer() and abs(value) <= MAX_SIZE:
            value = int(value)  # a size read from a float array (400.0) is the integer 400
        if not isinstance(value, int):
            raise ValueError(f"{name} must be an integer (a size), got {value!r}")
        if value < 0 or value > limit:
            shown = value if abs(value) < 10**20 else f"an integer of {len(str(abs(value)))} digits"
            raise ValueError(f"{name} must be an integer in [0, {limit:.0e}] (a size), got "
                             f"{shown}")
        return value
    try:
        v = float(value)
    except OverflowError:
        raise ValueError(f"{name} is too large to be a float (an integer of "
                         f"{len(str(abs(int(value))))} digits)") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if name in PROBABILITIES:
        inside = 0 < v < 1 if PROBABILITIES[name] else 0 <= v <= 1
        if not inside:
            raise ValueError(f"{name} must be a probability in "
                             f"{'(0, 1)' if PROBABILITIES[name] else '[0, 1]'}, got {value!r}")
    if need and name not in SIGNED and v < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    if not need and v < 0:  # every constant of a statement is a size, a rate or a bound
        raise ValueError(f"{name} must be >= 0 (a constant of the statement), got {value!r}")
    return value


def _distance(v: Any) -> float:
    """How far ``v`` is from 1 on a log scale (0 for a zero: a zero overflows nothing)."""
    try:
        return abs(math.log10(abs(float(v)))) if v else 0.0
    except (TypeError, ValueError, OverflowError):
        return 0.0


def _extreme(given: Mapping[str, Any]) -> str:
    """The argument farthest from 1 on a log scale (the likeliest cause of an overflow)."""
    return max(given, key=lambda k: _distance(given[k]))


def _lead_with_name(message: str, given: Mapping[str, Any],
                    culprits: Sequence[str] = ()) -> str:
    """``message`` led by the argument(s) to blame: ``culprits`` (:meth:`Bound._culprits`) when
    found and the message does not already start with one of them; else the message as it is
    if it starts with an argument's name, or that of the first argument it mentions (the one
    farthest from 1 if none) put in front with a colon."""
    import re

    names = sorted(given, key=len, reverse=True)
    head = re.match(r"[A-Za-z_][A-Za-z0-9_]*", message)
    lead = head.group(0) if head is not None else None
    if culprits:
        return message if list(culprits) == [lead] else f"{', '.join(culprits)}: {message}"
    if lead in given:
        return message
    mentioned = [(m.start(), n) for n in names
                 if (m := re.search(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])",
                                    message)) is not None]
    name = min(mentioned)[1] if mentioned else _extreme(given)
    return f"{name}: {message}"


_REGISTRY: dict[str, Bound] = {}
_Item = TypeVar("_Item")


def add_new(registry: dict[str, _Item], key: str, item: _Item, kind: type, expected: str,
            what: str) -> _Item:
    """Add ``item`` under ``key`` to ``registry`` (a module's registry of bounds or of
    studies) and return it. ValueError when ``item`` is not a ``kind`` (``expected`` says so,
    naming the argument: ``"bound must be a Bound"``), or when another item already holds
    ``key`` (``what`` names it: ``"a bound with key"``)."""
    if not isinstance(item, kind):
        raise ValueError(f"{expected}, got {type(item).__name__}")
    if key in registry and registry[key] is not item:
        raise ValueError(f"{what} {key!r} is already registered")
    registry[key] = item
    return item


def register(bound: Bound) -> Bound:
    """Add ``bound`` to the registry (its key must be new); returns it."""
    return add_new(_REGISTRY, getattr(bound, "key", ""), bound, Bound, "bound must be a Bound",
                   "a bound with key")


def registered(*, paper: str | None = None, kind: BoundKind | None = None,
               form: Form | None = None) -> list[Bound]:
    """Every registered bound (all papers), optionally filtered, in registration order.

    Includes the generalization measures of :mod:`genbounds.bounds.measures` (kind ``MEASURE``).
    """
    import genbounds.bounds  # noqa: F401  (importing the package registers every paper and measure)

    out: Iterable[Bound] = _REGISTRY.values()
    if paper is not None:
        out = [b for b in out if b.paper == paper]
    if kind is not None:
        out = [b for b in out if b.kind is kind]
    if form is not None:
        out = [b for b in out if b.form == form]
    return list(out)


def get(key: str) -> Bound:
    """The registered bound with this key (``ValueError`` listing close keys if absent)."""
    import genbounds.bounds  # noqa: F401

    if key not in _REGISTRY:
        near = [k for k in _REGISTRY if key.split(".")[0] in k][:10]
        raise ValueError(f"no bound {key!r} is registered; e.g. {near}")
    return _REGISTRY[key]


class NotApplicable(ValueError):
    """Raised by a quantities adapter when a paper's bounds do not apply to a model; the message
    says why (its family, its depth, a hypothesis that fails)."""


#: ``adapter(row, context) -> {quantity: value}`` for one bound of the adapter's paper, or
#: :class:`NotApplicable`. ``row`` is one model's stored columns (its norm table and the run's
#: columns), ``context`` holds at least ``"family"``, ``"bound"`` (the :class:`Bound`) and the
#: run's sizes.
QuantitiesAdapter = Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]]

_ADAPTERS: dict[str, QuantitiesAdapter] = {}


def register_quantities(paper: str, fn: QuantitiesAdapter) -> QuantitiesAdapter:
    """Register how the quantities of ``paper``'s bounds are read from a stored model row.

    One adapter per paper (BibTeX key); a second registration of a different function raises.
    """
    if not isinstance(paper, str) or not paper:
        raise ValueError("paper must be a non-empty string")
    if not callable(fn):
        raise ValueError("fn must be callable")
    if paper in _ADAPTERS and _ADAPTERS[paper] is not fn:
        raise ValueError(f"a quantities adapter for paper {paper!r} is already registered")
    _ADAPTERS[paper] = fn
    return fn


def quantities_adapter(paper: str) -> QuantitiesAdapter | None:
    """The adapter registered for ``paper``, or ``None``."""
    return _ADAPTERS.get(paper)


def registered_quantities() -> dict[str, QuantitiesAdapter]:
    """Every registered adapter, by paper."""
    return dict(_ADAPTERS)


def dudley_annotations(
    closed_form_valid: bool, delta: str | float, integral: str, upper: str
) -> tuple[dict[str, str], str]:
    """``(choices, regime)`` of a bound that minimises Dudley's integral over ``delta``.

    ``choices`` records how ``delta`` was chosen (``"closed_form"``, ``"numeric"`` or
    ``"given"``) and which integral form was used; ``regime`` says whether the stationary point
    ``delta*`` lies in ``(0, upper]`` (the papers' closed form is then the minimiser) or beyond
    it (the minimum is at ``delta = upper``: the trivial cap ``c * upper``).
    """
    rule = delta if isinstance(delta, str) else "given"
    regime = (f"closed-form delta* <= {upper}: the stationary point is the minimiser"
              if closed_form_valid else
              f"delta* > {upper}: the minimum is at delta = {upper} (trivial cap c {upper})")
    return {"delta": rule, "integral": integral}, regime
