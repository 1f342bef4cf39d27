"""genbounds.validation: one set of argument checks, each naming the argument."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from genbounds import validation as v


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), float("nan"), True, "1", None])
def test_check_positive_rejects(bad: object) -> None:
    with pytest.raises(ValueError, match="B_x"):
        v.check_positive(bad, "B_x")


def test_check_int_and_numpy_scalars() -> None:
    assert v.check_int(np.int64(3), "m") == 3
    assert v.check_positive(np.float32(2.0), "B") == 2.0
    assert v.check_nonnegative(0, "a") == 0.0
    for bad in (0, 2.5, True, np.float64(3.0)):
        with pytest.raises(ValueError, match="m must be an integer"):
            v.check_int(bad, "m")
    with pytest.raises(ValueError, match="m must be an integer <= 4"):
        v.check_int(5, "m", maximum=4)


def test_choice_probability_seeds_arrays() -> None:
    assert v.check_choice("a", "mode", ("a", "b")) == "a"
    with pytest.raises(ValueError, match="mode must be one of"):
        v.check_choice("c", "mode", ("a", "b"))
    assert v.check_probability(0.05, "confidence") == 0.05
    for bad in (0.0, 1.0, 2.0):
        with pytest.raises(ValueError, match="confidence"):
            v.check_probability(bad, "confidence")
    assert v.check_seeds(None, "seeds", 3) == [0, 1, 2]
    with pytest.raises(ValueError, match="seeds must have length 2"):
        v.check_seeds([1, 2, 3], "seeds", 2)
    with pytest.raises(ValueError, match="seeds"):
        v.check_seeds([1, -2], "seeds", 2)
    with pytest.raises(ValueError, match="X contains non-finite"):
        v.check_finite_array([1.0, np.nan], "X")
    with pytest.raises(ValueError, match="X must have shape"):
        v.check_finite_array(np.zeros(3), "X", ndim=2)
    with pytest.raises(ValueError, match="X must be non-empty"):
        v.check_finite_array(np.zeros((0, 2)), "X")
    with pytest.raises(ValueError, match="W contains non-finite"):
        v.check_finite_tensor(torch.tensor([1.0, float("inf")]), "W")
    with pytest.raises(ValueError, match="dtype"):
        v.check_float_dtype(torch.int64)


@pytest.mark.parametrize("check", [v.check_number, v.check_positive, v.check_nonnegative])
def test_huge_integers_are_named_not_overflow(check) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match="B_x is too large"):
        check(10**400, "B_x")
