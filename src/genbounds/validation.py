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
    "check_choice",
    "check_finite_array",
    "check_finite_tensor",
    "check_float_dtype",
    "check_int",
    "check_nonnegative",
    "check_number",
    "check_positive",
    "check_probability",
    "check_seeds",
    "is_number",
]


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


def check_positive(value: Any, name: str) -> float:
    """Return ``float(value)`` if it is a finite number ``> 0``, else raise ``ValueError``.

    The message names the argument, e.g. ``"B_x must be finite and > 0, got 0.0"``.
    """
    if not is_number(value):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    v = _to_float(value, name)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if v <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return v


def check_nonnegative(value: Any, name: str) -> float:
    """Return ``float(value)`` if it is a finite number ``>= 0``, else raise ``ValueError``."""
    if not is_number(value):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    v = _to_float(value, name)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if v < 0:
        raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
    return v


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
