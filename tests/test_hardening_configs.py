"""Every field of every public config class refuses invalid values, naming the field (issue #37
item 3): a property over every field of a valid instance of each class (from both presets of
every registered study, their units and the classes they hold), fed invalid values of the
field's kind: sizes and seeds of 2**70 and 10**400, NaN, ±inf, booleans, strings, None,
negative counts, tuples holding such values. Each is a ``ValueError`` whose message starts with
the field's name: never accepted, never a bare ``TypeError`` or ``OverflowError``."""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

import pytest

from genbounds.experiments import registered_experiments

BIG = [2**70, 10**400]


def _instances(value: Any, found: dict[type, list[Any]]) -> None:
    """Every config instance in ``value`` (a config, a unit, a tuple of them), by class."""
    if isinstance(value, tuple | list):
        for item in value:
            _instances(item, found)
        return
    if dataclasses.is_dataclass(value) and not isinstance(value, type) and hasattr(
            type(value), "PROTOCOL_VERSION"):
        found.setdefault(type(value), [])
        if len(found[type(value)]) < 3 and value not in found[type(value)]:
            found[type(value)].append(value)
        for f in dataclasses.fields(value):
            _instances(getattr(value, f.name), found)


def _examples() -> list[Any]:
    found: dict[type, list[Any]] = {}
    for e in registered_experiments():
        for scale in ("quick", "paper"):
            cfg = e.config(scale)
            _instances(cfg, found)
            _instances(list(e.units(cfg)), found)
    return [x for xs in found.values() for x in xs[:1]]


EXAMPLES = _examples()


def _invalid(name: str, value: Any) -> list[Any]:
    if name == "device":
        return ["bogus", "gpu", "", 0, None, "cuda:x"]
    if isinstance(value, bool):
        return [2, "yes", None, math.nan]
    if isinstance(value, int):
        return [*BIG, -(2**70), math.nan, math.inf, True, "3", None, 1.5]
    if isinstance(value, float):
        return [math.nan, math.inf, -math.inf, *BIG, True, "0.5", None]
    if name == "preregistered":  # "" is its documented "none pre-registered"
        return [None, 3, "bogus-value"]
    if isinstance(value, str):
        return [None, 3, "", "bogus-value"]
    if isinstance(value, tuple):
        return [None, "x", (-1,), (math.nan,), (2**70,), (None,), 5]
    return []


CASES = [(ex, f.name, bad) for ex in EXAMPLES for f in dataclasses.fields(ex)
         for bad in _invalid(f.name, getattr(ex, f.name))]


def test_every_config_class_is_fuzzed() -> None:
    names = {type(e).__name__ for e in EXAMPLES}
    assert {"CertUnit", "CertificatesConfig", "MarginUnit", "SparseMajorityConfig",
            "ShallowGDConfig", "ShallowGDUnit", "StudentUnit", "Setting"} <= names, names
    assert len(CASES) > 1000


def _run(example: Any, name: str, bad: Any) -> str | None:
    """None when refused by name; else what went wrong."""
    try:
        dataclasses.replace(example, **{name: bad})
    except ValueError as exc:
        if re.match(rf"{re.escape(name)}(?![A-Za-z0-9_])", str(exc)):
            return None
        return f"refused without naming {name}: {exc}"
    except Exception as exc:  # noqa: BLE001 - every other exception is a finding
        return f"{type(exc).__name__}: {exc}"
    return "accepted"


@pytest.mark.parametrize(("example", "name", "bad"), CASES,
                         ids=[f"{type(e).__name__}.{n}={b!r:.30}" for e, n, b in CASES])
def test_invalid_value_is_refused_naming_the_field(example, name, bad) -> None:
    problem = _run(example, name, bad)
    assert problem is None, f"{type(example).__name__}.{name}={bad!r:.40}: {problem}"
