"""Experiment configs refuse invalid values at construction, naming the field (issue #28 s.1:
``device = 'bogus'``, seeds beyond any generator, NaN/inf floats, sizes of 2**70, bools)."""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

import pytest

from genbounds.experiments.comparison import Setting
from genbounds.experiments.effective_rank import EffectiveRankConfig, EffectiveRankUnit
from genbounds.experiments.offset_rademacher import (
    ComplexityConfig,
    ComplexityUnit,
    OffsetRademacherConfig,
    StudentUnit,
)
from genbounds.experiments.registry import get_experiment
from genbounds.experiments.shallow_gd import ShallowGDConfig, ShallowGDUnit


def _examples() -> list[Any]:
    """A valid instance of each config class the study modules define (from their presets)."""
    found: dict[type, Any] = {}
    for name in ("offset_rademacher", "offset_rademacher_complexity", "comparison",
                 "effective_rank", "shallow_gd"):
        e = get_experiment(name)
        cfg = e.config("quick")
        found.setdefault(type(cfg), cfg)
        for unit in e.units(cfg):
            found.setdefault(type(unit), unit)
    found.setdefault(Setting, get_experiment("comparison").config("quick").bases[0])
    return list(found.values())


EXAMPLES = _examples()
CLASSES = {StudentUnit, OffsetRademacherConfig, ComplexityUnit, ComplexityConfig, Setting,
           EffectiveRankUnit, EffectiveRankConfig, ShallowGDUnit, ShallowGDConfig}


def _invalid_values(field: dataclasses.Field, value: Any) -> list[Any]:
    if field.name == "device":
        return ["bogus", "gpu", "", 0, None, "cuda:x"]
    if field.name in ("seed", "root_seed"):
        return [-1, 2**70, 1.5, True, math.nan, "0"]
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [2**70, math.nan, True, "3"]
    if isinstance(value, float):
        return [math.nan, math.inf, -math.inf, True, "0.5"]
    return []


def _cases() -> list[tuple[Any, str, Any]]:
    out = []
    for ex in EXAMPLES:
        for f in dataclasses.fields(ex):
            for bad in _invalid_values(f, getattr(ex, f.name)):
                out.append((ex, f.name, bad))
    return out


CASES = _cases()


def test_every_config_class_is_covered() -> None:
    assert {type(e) for e in EXAMPLES} >= CLASSES
    assert len(CASES) > 300


@pytest.mark.parametrize(("example", "name", "bad"), CASES,
                         ids=[f"{type(e).__name__}.{n}={b!r}" for e, n, b in CASES])
def test_invalid_config_value_is_refused_naming_the_field(example, name, bad) -> None:
    with pytest.raises(ValueError) as info:
        dataclasses.replace(example, **{name: bad})
    assert re.match(rf"{re.escape(name)}(?![A-Za-z0-9_])", str(info.value)), str(info.value)


def test_valid_devices_and_seeds_are_kept() -> None:
    unit = next(e for e in EXAMPLES if isinstance(e, StudentUnit))
    for device in ("cpu", "cuda", "cuda:1", "auto"):
        assert dataclasses.replace(unit, device=device).device == device
    assert dataclasses.replace(unit, seed=2**63 - 1).seed == 2**63 - 1
