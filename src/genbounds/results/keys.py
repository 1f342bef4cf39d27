"""Configs and their keys: a frozen dataclass config, its canonical JSON form, its hash."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

import numpy as np

__all__ = ["OMIT_FROM_KEY", "config_hash", "config_to_dict", "record_hash"]

#: Field metadata: ``field(..., metadata={OMIT_FROM_KEY: rule})`` with ``rule(config) -> bool``
#: leaves the field out of the canonical dict (and so out of the key) where ``rule`` is true.
#: For a field added to a config class after results were stored under its keys: the rule
#: names the values those configs had implicitly, so that their keys stay the same, while
#: any other value enters the key.
OMIT_FROM_KEY = "omit_from_key_when"


def config_to_dict(config: Any) -> dict[str, Any]:
    """Canonical JSON-ready dict of a frozen dataclass config (tuples become lists).

    Raises
    ------
    ValueError
        If ``config`` is not a frozen dataclass instance, lacks an integer ``PROTOCOL_VERSION``,
        or holds values that JSON cannot represent exactly (non-finite floats, objects).
    """
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        raise ValueError(f"config must be a dataclass instance, got {type(config).__name__}")
    params = getattr(type(config), "__dataclass_params__", None)
    if params is None or not params.frozen:
        raise ValueError(f"config must be a frozen dataclass, {type(config).__name__} is not")
    version = getattr(type(config), "PROTOCOL_VERSION", None)
    if not isinstance(version, int):
        raise ValueError(
            f"config class {type(config).__name__} must define an integer PROTOCOL_VERSION"
        )

    def convert(value: Any, where: str) -> Any:
        if isinstance(value, bool | int | str) or value is None:
            return value
        if isinstance(value, float):
            if not np.isfinite(value):
                raise ValueError(f"config field {where} is not finite: {value}")
            return value
        if isinstance(value, tuple | list):
            return [convert(v, f"{where}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, dict):
            return {str(k): convert(v, f"{where}.{k}") for k, v in sorted(value.items())}
        raise ValueError(f"config field {where} has a type JSON cannot store: {type(value)}")

    return {f.name: convert(getattr(config, f.name), f.name) for f in dataclasses.fields(config)
            if not (OMIT_FROM_KEY in f.metadata and f.metadata[OMIT_FROM_KEY](config))}


def record_hash(config_class: str, protocol_version: int, config: dict[str, Any]) -> str:
    """Key of a stored record: hash of its class name, protocol version and config dict.

    The same function as :func:`config_hash`, on the parts a stored JSON records, so that
    ``store check`` can verify that a record is stored under its own key.
    """
    payload = {"class": config_class, "protocol_version": protocol_version, "config": config}
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def config_hash(config: Any) -> str:
    """Key of a config: SHA-256 (first 16 hex digits) of class name, protocol version and fields."""
    fields = config_to_dict(config)  # validates the config first
    return record_hash(type(config).__qualname__, type(config).PROTOCOL_VERSION, fields)
