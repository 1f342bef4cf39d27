"""Argument checks shared by the whole package: one function per kind of check.

Every public function of :mod:`genbounds` validates its arguments with these helpers, so a bad
input always fails the same way: a :class:`ValueError` whose message starts with the argument's
name and says what was expected and what was received, e.g.
``"n must be an integer >= 1, got 0"``. Nothing is clipped or dropped silently.

The signature is always ``check_*(value, name, ...)``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # torch is imported lazily: the results store's workers need no torch
    import torch

__all__ = [
    "MAX_CONFIG_INT",
    "MAX_SEED",
    "check_choice",
    "check_config",
    "check_device",
    "check_finite_array",
    "check_finite_tensor",
    "check_float_dtype",
    "check_int",
    "check_nonnegative",
    "check_number",
    "check_positive",
    "check_positives",
    "check_probability",
    "check_seed",
    "check_seeds",
    "is_number",
]

MAX_SEED = 2**63 - 1
"""The largest seed every generator the package uses takes (torch's ``manual_seed`` refuses
larger ones)."""
MAX_CONFIG_INT = 10**12
"""No size, count or step number of an experiment config is larger: beyond it a config would
allocate or loop for longer than any machine runs (refused at once, named)."""
DEVICES = ("auto", "cpu", "cuda", "mps")


def is_number(value: Any) -> bool:
    """True for Python ints / floats and numpy integer / float scalars (never for bools)."""
    if isinstance(value, bool | np.bool_):
        return False
    if isinstance(value, int | float | np.integer | np.floating):
        return True
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    return (type(value).__module__ == "numpy" and getattr(value, "shape", None) == ()
            and kind in ("i", "u", "f"))


def _to_float(value: Any, name: str) -> float:
    """``float(value)``; an integer too large for a float is a ``ValueError`` naming ``name``."""
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{name} is too large to be a float (got an integer of "
                         f"{len(str(abs(int(value))))} digits)") from None


def check_number(value: Any, name: str) -> float:
    """Return ``float(value)`` if it is a finite real number, else raise ``ValueError``."""
    if not is_number(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    v = _to_float(value, name)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return v


def _check_sign(value: Any, name: str, strict: bool) -> float:
    """``float(value)`` if it is a finite number ``> 0`` (``strict``) or ``>= 0``."""
    op = ">" if strict else ">="
    if not is_number(value):
        raise ValueError(f"{name} must be a finite number {op} 0, got {value!r}")
    v = _to_float(value, name)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if v < 0 or (strict and v == 0):
        raise ValueError(f"{name} must be finite and {op} 0, got {value!r}")
    return v


def check_positive(value: Any, name: str) -> float:
    """Return ``float(value)`` if it is a finite number ``> 0``, else raise ``ValueError``.

    The message names the argument, e.g. ``"B_x must be finite and > 0, got 0.0"``.
    """
    return _check_sign(value, name, strict=True)


def check_nonnegative(value: Any, name: str) -> float:
    """Return ``float(value)`` if it is a finite number ``>= 0``, else raise ``ValueError``."""
    return _check_sign(value, name, strict=False)


def check_positives(**values: Any) -> list[float]:
    """:func:`check_positive` of each keyword argument, named by its keyword, in order."""
    return [check_positive(v, name) for name, v in values.items()]


def check_probability(value: Any, name: str, *, open_interval: bool = True) -> float:
    """Return ``float(value)`` if it lies in ``(0, 1)`` (or ``[0, 1]``), else raise."""
    v = check_number(value, name)
    ok = 0.0 < v < 1.0 if open_interval else 0.0 <= v <= 1.0
    if not ok:
        interval = "(0, 1)" if open_interval else "[0, 1]"
        raise ValueError(f"{name} must be in {interval}, got {value!r}")
    return v


def check_int(value: Any, name: str, minimum: int = 1, maximum: int | None = None) -> int:
    """Return ``int(value)`` if it is an integer in ``[minimum, maximum]`` (bools rejected)."""
    ok = (not isinstance(value, bool | np.bool_)) and (
        isinstance(value, int | np.integer)
        or (type(value).__module__ == "numpy" and hasattr(value, "dtype")
            and getattr(value, "shape", None) == () and value.dtype.kind in "iu")
    )
    if not ok or int(value) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if maximum is not None and int(value) > maximum:
        raise ValueError(f"{name} must be an integer <= {maximum}, got {value!r}")
    return int(value)


def check_choice(value: Any, name: str, choices: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise ``ValueError``."""
    options = tuple(choices)
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {options}, got {value!r}")
    return value


def check_seeds(seeds: Sequence[int] | None, name: str, n: int) -> list[int]:
    """``n`` non-negative integer seeds (``range(n)`` when ``seeds`` is None)."""
    n = check_int(n, "n_models" if name == "seeds" else f"len({name})")
    if seeds is None:
        return list(range(n))
    out = list(seeds)
    if len(out) != n:
        raise ValueError(f"{name} must have length {n}, got {len(out)}")
    return [check_int(s, name, minimum=0) for s in out]


def check_finite_array(
    x: Any, name: str, *, ndim: int | None = None, shape_hint: str = "", allow_empty: bool = False
) -> np.ndarray:
    """``x`` as a float64 numpy array; raise if it is not numeric, has the wrong number of
    dimensions, is empty, or holds NaN / inf (the message names the argument)."""
    if type(x).__module__.startswith("torch"):
        x = x.detach().cpu().numpy()
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric array") from exc
    if ndim is not None and arr.ndim != ndim:
        hint = shape_hint or f"{ndim} dimensions"
        raise ValueError(f"{name} must have shape {hint}; got {arr.shape}")
    if not allow_empty and (arr.size == 0 or any(s == 0 for s in arr.shape)):
        raise ValueError(f"{name} must be non-empty; got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains non-finite values (NaN or inf)")
    return arr


def check_finite_tensor(x: Any, name: str, *, ndim: int | None = None,
                        shape_hint: str = "") -> torch.Tensor:
    """``x`` if it is a floating-point ``torch.Tensor`` of ``ndim`` dims with finite entries."""
    import torch

    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if ndim is not None and x.ndim != ndim:
        hint = shape_hint or f"{ndim} dimensions"
        raise ValueError(f"{name} must have shape {hint}; got {tuple(x.shape)}")
    if x.is_floating_point() and not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} contains non-finite values (NaN or inf)")
    return x


def check_float_dtype(dtype: Any, name: str = "dtype") -> torch.dtype:
    """``dtype`` if it is a floating-point ``torch.dtype``."""
    import torch

    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(f"{name} must be a floating-point torch.dtype, got {dtype!r}")
    return dtype


def check_device(value: Any, name: str = "device") -> str:
    """``value`` if it names a device the package runs on: ``auto``, ``cpu``, ``cuda``,
    ``cuda:N`` or ``mps`` (a typo such as ``"bogus"`` or ``"gpu"`` is refused at once, not
    when a unit starts hours later)."""
    if isinstance(value, str) and (value in DEVICES or (
            value.startswith("cuda:") and value[5:].isdigit() and len(value) <= 10)):
        return value
    raise ValueError(f"{name} must be one of {DEVICES} or cuda:N, got {value!r}")


def check_seed(value: Any, name: str = "seed") -> int:
    """``value`` if it is an integer seed in ``[0, MAX_SEED]``."""
    return check_int(value, name, 0, MAX_SEED)


def check_config(config: Any) -> None:
    """Checks every experiment config shares, by field (a dataclass instance; the config's own
    ``__post_init__`` checks the rest): ``device`` names a device (:func:`check_device`);
    ``seed``-like fields (``seed``, ``root_seed``) are seeds (:func:`check_seed`); every other
    integer, also inside tuples, is at most :data:`MAX_CONFIG_INT` in size; every float,
    also inside tuples, is finite; no field holds a bool where a number is meant. The message
    names the field."""
    import dataclasses

    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if f.name == "device":
            check_device(value, f.name)
        elif f.name in ("seed", "root_seed"):
            check_seed(value, f.name)
        else:
            _check_config_value(value, f.name, f.type)


def _check_config_value(value: Any, name: str, annotation: Any) -> None:
    if isinstance(value, tuple):
        for item in value:
            _check_config_value(item, name, None)
        return
    numeric = str(annotation) in ("int", "float", "<class 'int'>", "<class 'float'>")
    if isinstance(value, bool | np.bool_):
        if numeric:
            raise ValueError(f"{name} must be a number, got {value!r}")
        return
    if isinstance(value, int | np.integer) and abs(int(value)) > MAX_CONFIG_INT:
        raise ValueError(f"{name} must be at most {MAX_CONFIG_INT:.0e} in size, got "
                         f"{value if abs(int(value)) < 10**20 else 'a larger integer'}")
    if isinstance(value, float | np.floating) and not math.isfinite(float(value)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if numeric and value is not None and not is_number(value):
        raise ValueError(f"{name} must be a number, got {value!r}")
