"""Compression (Occam) certificates: Elias codes, the Laplace arithmetic-code length against the
closed form of the Dirichlet mixture, and the Occam bound."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import gammaln

from genbounds.bounds import compression as cp
from genbounds.bounds.registry import BoundKind, Verdict, get


def _omega_bits(k: int) -> str:
    """Elias omega code, written out (independent of the length formula)."""
    code = "0"
    while k > 1:
        b = bin(k)[2:]
        code = b + code
        k = len(b) - 1
    return code


@pytest.mark.parametrize("k", [1, 2, 3, 4, 7, 8, 16, 100, 1000, 2**20 + 5])
def test_elias_omega_length(k: int) -> None:
    assert cp.elias_omega_length(k) == len(_omega_bits(k))


def test_elias_omega_is_prefix_free_and_satisfies_kraft() -> None:
    codes = [_omega_bits(k) for k in range(1, 300)]
    for a in codes[:60]:
        assert sum(b.startswith(a) for b in codes) == 1
    assert sum(2.0 ** -cp.elias_omega_length(k) for k in range(1, 5000)) <= 1.0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=60))
def test_laplace_length_equals_dirichlet_closed_form(seq: list[int]) -> None:
    A = 6
    s = np.array(seq, dtype=np.int64)
    counts = np.bincount(s, minlength=A)
    # P = Gamma(A) prod counts! / Gamma(n + A)
    closed = -(gammaln(A) + gammaln(counts + 1).sum() - gammaln(len(s) + A)) / math.log(2)
    assert abs(cp.laplace_code_length_bits(s, A) - closed) < 1e-8


def test_zigzag_and_quantise() -> None:
    assert [cp.zigzag(v) for v in (0, -1, 1, -2, 2)] == [0, 1, 2, 3, 4]
    z = np.array([0.26, -0.74, 1.01])
    q = cp.quantise(z, 8)  # step 0.25
    assert q.tolist() == [1, -3, 4]


def test_code_length_counts_every_part() -> None:
    s = np.array([0, 1, -1, 0, 0, 2])
    parts = cp.code_length_bits(s, 4)
    assert parts["seed"] == 1 and cp.code_length_bits(s, 4, seed_index=6)["seed"] == 6
    assert parts["step"] == cp.elias_omega_length(9)
    assert cp.code_length_bits(s, -3)["step"] == cp.elias_omega_length(6)
    assert parts["total"] == sum(v for k, v in parts.items() if k != "total")
    assert parts["coordinates"] == math.ceil(cp.laplace_code_length_bits(s + 1, 4)) + 1


def test_occam_bound_closed_form_and_monotone() -> None:
    n, d, bits = 400, 0.05, 100.0
    B = (bits * math.log(2) + math.log(1 / d)) / n
    assert abs(cp.occam_bound(0.0, bits, n, d) - (-math.expm1(-B))) < 1e-9
    assert cp.occam_bound(0.01, 50, n, d) < cp.occam_bound(0.01, 100, n, d)
    assert cp.occam_bound(0.01, 50, n, d) >= 0.01


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="k"):
        cp.elias_omega_length(0)
    with pytest.raises(ValueError, match="symbols"):
        cp.laplace_code_length_bits(np.array([0, 5]), 3)
    with pytest.raises(ValueError, match="code_bits"):
        cp.occam_bound(0.1, -1.0, 100, 0.05)
    with pytest.raises(ValueError, match="z"):
        cp.quantise(np.array([np.nan]), 0)


def test_registered() -> None:
    b = get("certificates.occam.audited")
    assert b.kind is BoundKind.TRUE_LOSS and b.verdict is Verdict.HOLDS
    v = b.evaluate({"empirical_error": 0.0, "code_bits": 200.0, "n": 400})
    assert v.proved and v.value == pytest.approx(cp.occam_bound(0.0, 200.0, 400, 0.05))
