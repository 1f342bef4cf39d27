"""Compression (Occam) certificates in the manner of Lotfi et al. (2022).

A network is trained in a random subspace, ``theta = theta_0 + P z`` with ``z`` of small dimension
``d``; ``z`` is quantised to integer multiples of a step and the integers are entropy coded. The
prefix-free code of **everything** that defines the predictor is a prior ``P(h) = 2^{-|code(h)|}``
(Kraft), and the Occam bound in its kl form (Langford 2005, Thm 4.6; the PAC-Bayes-kl bound with a
point-mass posterior) certifies the **deterministic** compressed network:

    kl(L_n(h) || L(h)) <= (|code(h)| log 2 + log(1/delta)) / n.

What the code contains (:func:`code_length_bits`), in order:

1. the subspace dimension ``d`` (Elias omega code of ``d``);
2. the index ``k >= 0`` of the random draw of the projection ``P`` and of ``theta_0`` (the
   decoder regenerates both from ``k`` and the fixed root seed: Elias omega of ``k + 1``; a
   search over several draws is paid for here);
3. the quantisation step, an integer ``j`` into the fixed ladder ``step_j = 2^{-j/4}`` (Elias
   omega of ``zigzag(j) + 1``);
4. the alphabet: the smallest integer (Elias omega of its zig-zag code plus one) and the number of
   levels ``A`` (Elias omega);
5. the ``d`` quantised coordinates, arithmetic coded with the adaptive Laplace model
   (the Dirichlet(1,...,1) mixture over the ``A`` levels): ``ceil(-log2 P_Laplace(z)) + 1`` bits
   (the Shannon-Fano-Elias bound on an arithmetic code of a sequence of known length, which is
   prefix free).

Everything else -- the architecture, ``theta_0``'s distribution, the data order -- is fixed before
the sample and costs nothing. :func:`laplace_code_length_bits` is checked in the tests against the
closed form of the Dirichlet mixture (sequential product equals multinomial expression).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from genbounds.bounds.pac_bayes import kl_inverse_upper
from genbounds.bounds.registry import Bound, BoundKind, BoundValue, Verdict, register
from genbounds.validation import check_int, check_nonnegative, check_probability

__all__ = [
    "code_length_bits",
    "elias_omega_length",
    "laplace_code_length_bits",
    "occam_bound",
    "quantise",
    "step_from_index",
    "zigzag",
]

def elias_omega_length(k: int) -> int:
    """Length in bits of Elias's (1975) omega code of the integer ``k >= 1`` (prefix free)."""
    kk = check_int(k, "k", minimum=1)
    bits = 1  # the terminating 0
    while kk > 1:
        nb = kk.bit_length()
        bits += nb
        kk = nb - 1
    return bits


def zigzag(v: int) -> int:
    """``0, -1, 1, -2, 2, ... -> 0, 1, 2, 3, 4, ...``: integers to natural numbers."""
    if not isinstance(v, int | np.integer) or isinstance(v, bool):
        raise ValueError(f"v must be an integer, got {v!r}")
    v = int(v)
    return 2 * v if v >= 0 else -2 * v - 1


def step_from_index(j: int) -> float:
    """The quantisation step of ladder index ``j`` (any integer): ``2^{-j/4}``."""
    if not isinstance(j, int | np.integer) or isinstance(j, bool):
        raise ValueError(f"j must be an integer, got {j!r}")
    return float(2.0 ** (-int(j) / 4.0))


def quantise(z: np.ndarray, step_index: int) -> np.ndarray:
    """``round(z / step)`` as integers (the coded symbols); ``step * symbols`` is the model."""
    zz = np.asarray(z, dtype=np.float64)
    if zz.ndim != 1 or zz.size == 0 or not np.all(np.isfinite(zz)):
        raise ValueError("z must be a non-empty finite vector")
    return np.rint(zz / step_from_index(step_index)).astype(np.int64)


def laplace_code_length_bits(symbols: Sequence[int] | np.ndarray, alphabet: int) -> float:
    """``-log2`` of the adaptive Laplace (add-one) probability of the sequence over an alphabet
    of ``alphabet`` levels: ``prod_t (count_t(s_t) + 1) / (t + A)``. Symbols are ``0..A-1``."""
    s = np.asarray(symbols)
    A = check_int(alphabet, "alphabet")
    if s.ndim != 1 or s.size == 0 or not np.issubdtype(s.dtype, np.integer):
        raise ValueError("symbols must be a non-empty integer vector")
    if s.min() < 0 or s.max() >= A:
        raise ValueError(f"symbols must lie in 0..{A - 1}")
    counts = np.zeros(A, dtype=np.int64)
    bits = 0.0
    for t, x in enumerate(s.tolist()):
        bits -= math.log2((counts[x] + 1) / (t + A))
        counts[x] += 1
    return bits


def code_length_bits(symbols: Sequence[int] | np.ndarray, step_index: int,
                     seed_index: int = 0) -> dict[str, float]:
    """The length in bits of the whole prefix-free code of a compressed predictor, by part."""
    s = np.asarray(symbols)
    if s.ndim != 1 or s.size == 0 or not np.issubdtype(s.dtype, np.integer):
        raise ValueError("symbols must be a non-empty integer vector")
    if not isinstance(step_index, int | np.integer) or isinstance(step_index, bool):
        raise ValueError(f"step_index must be an integer, got {step_index!r}")
    k = check_int(seed_index, "seed_index", minimum=0)
    lo, hi = int(s.min()), int(s.max())
    A = hi - lo + 1
    parts = {
        "dimension": float(elias_omega_length(int(s.size))),
        "seed": float(elias_omega_length(k + 1)),
        "step": float(elias_omega_length(zigzag(int(step_index)) + 1)),
        "alphabet": float(elias_omega_length(zigzag(lo) + 1) + elias_omega_length(A)),
        "coordinates": float(math.ceil(laplace_code_length_bits(s - lo, A)) + 1),
    }
    parts["total"] = float(sum(parts.values()))
    return parts


def occam_bound(empirical_error: float, code_bits: float, n: int, delta: float) -> float:
    """``kl^{-1}_upper(L_n(h), (bits log 2 + log(1/delta)) / n)``: the kl form of the Occam bound
    for a predictor with a prefix-free code of ``code_bits`` bits (Langford 2005, Thm 4.6)."""
    e = check_probability(empirical_error, "empirical_error", open_interval=False)
    b = check_nonnegative(code_bits, "code_bits")
    n = check_int(n, "n")
    d = check_probability(delta, "delta")
    return kl_inverse_upper(e, (b * math.log(2.0) + math.log(1.0 / d)) / n)


def _occam_value(empirical_error: float, code_bits: float, n: int, delta: float) -> BoundValue:
    v = occam_bound(empirical_error, code_bits, n, delta)
    return BoundValue(
        v, BoundKind.TRUE_LOSS,
        terms={"empirical_error": empirical_error, "code_nats": code_bits * math.log(2.0),
               "budget": (code_bits * math.log(2.0) + math.log(1 / delta)) / n},
        constants={"delta": delta},
        choices={"predictor": "deterministic (the decoded compressed network)",
                 "prior": "2^{-code length}, prefix-free code fixed before the sample"},
        name="compression (Occam) bound", reference="Langford 2005, Thm 4.6; Lotfi et al. 2022",
        assumptions=("0-1 loss (or a loss in [0, 1])", "i.i.d. sample of n points",
                     "the code (seed field, ladders, Elias codes, Laplace model) is fixed before "
                     "the sample; the code length counts every part that defines the predictor"))


register(Bound(
    key="certificates.occam.audited", paper="lotfi2022pac",
    statement="Sec. 3 (Occam bound, kl form)",
    kind=BoundKind.TRUE_LOSS, form="audited", needs=("empirical_error", "code_bits", "n"),
    constants={"delta": 0.05}, fn=_occam_value,
    description="compression (Occam) bound: deterministic risk <= kl^{-1}(L_n(h), (bits ln 2 + "
                "ln(1/delta))/n) for a subspace-trained, quantised, arithmetic-coded network",
    verdict=Verdict.HOLDS, audit="cert-thm-occam"))
