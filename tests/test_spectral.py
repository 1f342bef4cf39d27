"""Tests for genbounds.spectral."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from genbounds import spectral as sp

RNG = np.random.default_rng(12345)


def _random_matrices() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    mats = []
    for m, n in [(1, 1), (1, 5), (5, 1), (2, 3), (7, 4), (10, 10), (30, 8), (16, 64)]:
        mats.append(rng.standard_normal((m, n)))
        # low rank, low rank + noise, power-law spectrum, heavy-tailed entries
        r = max(1, min(m, n) // 3)
        low = rng.standard_normal((m, r)) @ rng.standard_normal((r, n))
        mats.append(low)
        mats.append(low + 1e-3 * rng.standard_normal((m, n)))
        k = min(m, n)
        u, _ = np.linalg.qr(rng.standard_normal((m, k)))
        v, _ = np.linalg.qr(rng.standard_normal((n, k)))
        mats.append(u @ np.diag(np.arange(1, k + 1, dtype=float) ** -1.5) @ v.T)
        mats.append(rng.standard_cauchy((m, n)))
    return mats


# ----------------------------------------------------------------------------- effective rank
@pytest.mark.parametrize("n", [1, 2, 5, 17])
def test_effective_rank_identity_is_n(n: int) -> None:
    assert sp.effective_rank(np.eye(n)) == pytest.approx(n, rel=1e-12)


def test_effective_rank_rank_one_is_one() -> None:
    a = RNG.standard_normal((8, 1)) @ RNG.standard_normal((1, 6))
    assert sp.effective_rank(a) == pytest.approx(1.0, abs=1e-10)
    assert sp.effective_rank(a, eps=1e-10) == pytest.approx(1.0, abs=1e-14)


def test_effective_rank_equal_singular_values() -> None:
    # k equal non-zero singular values -> erank = k exactly
    d = np.diag([3.0, 3.0, 3.0, 0.0, 0.0])
    assert sp.effective_rank(d) == pytest.approx(3.0, rel=1e-12)


def test_effective_rank_hand_computed() -> None:
    # singular values (3, 1): p = (3/4, 1/4)
    a = np.diag([3.0, 1.0])
    h = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    assert sp.effective_rank(a) == pytest.approx(math.exp(h), rel=1e-12)


@pytest.mark.parametrize("c", [1e-6, 0.3, -2.0, 1e5])
def test_scale_invariance(c: float) -> None:
    a = RNG.standard_normal((6, 9))
    for f in (sp.effective_rank, sp.stable_rank, sp.nuclear_rank_ratio, sp.numerical_rank):
        assert f(c * a) == pytest.approx(f(a), rel=1e-10)


# every function of the singular values (shared by the type and the bad-input tests)
SPECTRUM_FUNCTIONS = [
        sp.singular_values,
        sp.effective_rank,
        sp.stable_rank,
        sp.nuclear_rank_ratio,
        sp.numerical_rank,
        sp.nuclear_norm,
        sp.frobenius_norm,
        sp.operator_norm,
]


def test_batching_equals_loop() -> None:
    a = RNG.standard_normal((3, 4, 5, 7))
    for f in (
        *SPECTRUM_FUNCTIONS[1:],  # all but singular_values (a vector per matrix)
        lambda x: sp.schatten_norm(x, 3),
        lambda x: sp.mixed_norm(x, 2, 1),
        lambda x: sp.induced_norm(x, 1, 3),
        lambda x: sp.induced_norm(x, 3, math.inf),
    ):
        batched = f(a)
        assert batched.shape == (3, 4)
        loop = np.array([[f(a[i, j]) for j in range(4)] for i in range(3)])
        np.testing.assert_allclose(batched, loop, rtol=1e-12)


def test_numpy_torch_agree_and_types() -> None:
    a = RNG.standard_normal((2, 5, 4))
    t = torch.from_numpy(a)
    for f in (
        *SPECTRUM_FUNCTIONS,
        lambda x: sp.schatten_norm(x, 1.5),
        lambda x: sp.mixed_norm(x, 1, math.inf),
        lambda x: sp.induced_norm(x, 2, 2),
    ):
        rn, rt = f(a), f(t)
        assert isinstance(rn, np.ndarray)
        assert isinstance(rt, torch.Tensor)
        assert rt.device == t.device
        np.testing.assert_allclose(rn, rt.numpy(), rtol=1e-12)


def test_float32_input_computed_in_float64_by_default() -> None:
    a = RNG.standard_normal((4, 4)).astype(np.float32)
    assert sp.effective_rank(a).dtype == np.float64
    assert sp.effective_rank(torch.from_numpy(a)).dtype == torch.float64
    assert sp.effective_rank(a, dtype=np.float32).dtype == np.float32
    assert sp.effective_rank(torch.from_numpy(a), dtype=torch.float32).dtype == torch.float32


def test_torch_input_keeps_autograd() -> None:
    t = torch.randn(3, 3, dtype=torch.float64, requires_grad=True)
    r = sp.operator_norm(t)
    r.backward()
    u, s, vh = torch.linalg.svd(t.detach())
    # d s_1 / dA = u_1 v_1^T
    torch.testing.assert_close(t.grad, torch.outer(u[:, 0], vh[0]))
    assert float(sp.stable_rank(t).detach()) >= 1.0
    # the autograd path (torch SVD) and the no-grad path (LAPACK via numpy) agree
    for f in (sp.effective_rank, sp.stable_rank, sp.nuclear_norm, sp.numerical_rank):
        torch.testing.assert_close(f(t).detach(), f(t.detach()), rtol=1e-12, atol=0)


def test_rank_chain_on_random_matrices() -> None:
    for a in _random_matrices():
        sr = sp.stable_rank(a)
        nr = sp.nuclear_rank_ratio(a)
        er = sp.effective_rank(a)
        rk = sp.numerical_rank(a)
        tol = 1e-9
        assert 1.0 - tol <= sr <= nr * (1 + tol), (a.shape, sr, nr)
        assert nr <= er * (1 + tol), (a.shape, nr, er)
        # erank <= rank: round-off singular values (~1e-16) add ~1e-14 to the entropy
        assert er <= rk + 1e-9, (a.shape, er, rk)
        assert rk <= min(a.shape)


def test_rank_chain_batched_torch() -> None:
    t = torch.randn(50, 6, 9, dtype=torch.float64) ** 3
    sr, nr, er = sp.stable_rank(t), sp.nuclear_rank_ratio(t), sp.effective_rank(t)
    rk = sp.numerical_rank(t)
    assert bool((sr <= nr + 1e-12).all() and (nr <= er + 1e-12).all())
    assert bool((er <= rk.to(er.dtype) + 1e-9).all())


def test_numerical_rank() -> None:
    a = RNG.standard_normal((6, 2)) @ RNG.standard_normal((2, 5))
    assert sp.numerical_rank(a) == 2
    assert sp.numerical_rank(np.zeros((3, 3))) == 0
    assert sp.numerical_rank(np.diag([1.0, 1e-3, 1e-9]), tol=1e-6) == 2
    assert sp.numerical_rank(np.diag([1.0, 1e-3, 1e-9]), tol=0.0) == 3


# ----------------------------------------------------------------------------- norms
def test_schatten_and_named_norms() -> None:
    a = RNG.standard_normal((5, 3))
    s = np.linalg.svd(a, compute_uv=False)
    assert sp.nuclear_norm(a) == pytest.approx(s.sum())
    assert sp.frobenius_norm(a) == pytest.approx(np.linalg.norm(a))
    assert sp.operator_norm(a) == pytest.approx(s[0])
    assert sp.schatten_norm(a, 3) == pytest.approx((s**3).sum() ** (1 / 3))
    assert sp.schatten_norm(a, math.inf) == pytest.approx(s[0])
    assert sp.schatten_norm(a, 2) == pytest.approx(np.linalg.norm(a))


W23 = np.array([[1.0, -2.0, 0.0], [3.0, 4.0, -1.0]])
# columns: (1, 3), (-2, 4), (0, -1)
# column l1: 4, 6, 1 ; column l2: sqrt(10), sqrt(20), 1 ; column linf: 3, 4, 1


@pytest.mark.parametrize(
    ("q", "p", "expected"),
    [
        (1, 1, 11.0),
        (1, math.inf, 6.0),
        (1, 2, math.sqrt(16 + 36 + 1)),
        (2, 1, math.sqrt(10) + math.sqrt(20) + 1),
        (2, 2, math.sqrt(31)),
        (2, math.inf, math.sqrt(20)),
        (math.inf, 1, 8.0),
        (math.inf, math.inf, 4.0),
    ],
)
def test_mixed_norm_hand_computed(q: float, p: float, expected: float) -> None:
    assert sp.mixed_norm(W23, q, p) == pytest.approx(expected, rel=1e-14)


def test_mixed_norm_is_column_wise() -> None:
    # ||W||_{1,inf} (max column l1) differs from the row convention (max row l1 = 8)
    assert sp.mixed_norm(W23, 1, math.inf) == pytest.approx(6.0)
    assert sp.mixed_norm(W23.T, 1, math.inf) == pytest.approx(8.0)
    assert sp.mixed_norm(W23, 1, 1) == pytest.approx(sp.entrywise_l1([W23]))


def _brute_force_induced(w: np.ndarray, q: float, p: float, rng: np.random.Generator) -> float:
    """Lower bound on sup ||Wx||_p / ||x||_q: random directions, vertices, local ascent."""
    n = w.shape[1]
    cand = [rng.standard_normal(n) for _ in range(4000)]
    cand += [np.array(s, dtype=float) for s in itertools.product([-1.0, 1.0], repeat=n)]
    cand += list(np.eye(n))

    def ratio(x: np.ndarray) -> float:
        return float(np.linalg.norm(w @ x, ord=p) / np.linalg.norm(x, ord=q))

    best = max(cand, key=ratio)
    val = ratio(best)
    step = 0.3
    for _ in range(3000):  # random local search from the best candidate
        x = best + step * rng.standard_normal(n)
        v = ratio(x)
        if v > val:
            best, val = x, v
        else:
            step *= 0.998
    return val


@pytest.mark.parametrize(
    ("q", "p"),
    [
        (1, 1),
        (1, 2),
        (1, 3.0),
        (1, math.inf),
        (2, math.inf),
        (1.5, math.inf),
        (math.inf, math.inf),
        (2, 2),
    ],
)
def test_induced_norm_against_brute_force(q: float, p: float) -> None:
    rng = np.random.default_rng(7)
    w = rng.standard_normal((3, 4))
    exact = sp.induced_norm(w, q, p)
    brute = _brute_force_induced(w, q, p, rng)
    assert brute <= exact * (1 + 1e-9)
    assert brute >= exact * (1 - 2e-3)


def test_induced_norm_closed_forms() -> None:
    assert sp.induced_norm(W23, 1, 1) == pytest.approx(6.0)  # max column l1
    assert sp.induced_norm(W23, math.inf, math.inf) == pytest.approx(8.0)  # max row l1
    assert sp.induced_norm(W23, 2, 2) == pytest.approx(sp.operator_norm(W23))
    assert sp.induced_norm(W23, 1, 2) == pytest.approx(math.sqrt(20))
    assert sp.induced_norm(W23, 2, math.inf) == pytest.approx(math.sqrt(26))


def test_entrywise_l1() -> None:
    ws = [W23, torch.ones(2, 2), np.array(-3.0)]
    assert sp.entrywise_l1(ws) == pytest.approx(11 + 4 + 3)
    assert sp.entrywise_l1(torch.tensor([[1.0, -1.0]])) == pytest.approx(2.0)
    assert sp.entrywise_l1(p for p in [np.ones(3)]) == pytest.approx(3.0)


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize("f", SPECTRUM_FUNCTIONS)
def test_bad_shapes_and_values(f) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match="ndim >= 2"):
        f(np.ones(3))
    with pytest.raises(ValueError, match="ndim >= 2"):
        f(torch.tensor(1.0))
    with pytest.raises(ValueError, match="empty dimension"):
        f(np.ones((0, 3)))
    with pytest.raises(ValueError, match="empty dimension"):
        f(np.ones((2, 3, 0)))
    with pytest.raises(ValueError, match="empty dimension"):
        f(np.ones((0, 3, 3)))
    with pytest.raises(ValueError, match="non-finite"):
        f(np.array([[1.0, np.nan], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="non-finite"):
        f(torch.tensor([[1.0, float("inf")]]))
    with pytest.raises(ValueError, match="numpy array or a torch tensor"):
        f([[1.0, 2.0]])
    with pytest.raises(ValueError, match="must be real"):
        f(np.ones((2, 2), dtype=complex))


@pytest.mark.parametrize("f", [sp.effective_rank, sp.stable_rank, sp.nuclear_rank_ratio])
def test_zero_matrix_raises(f) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match="zero matrix"):
        f(np.zeros((3, 4)))
    batch = np.stack([np.eye(3), np.zeros((3, 3))])
    with pytest.raises(ValueError, match=r"zero matrix \(batch index \(1,\)\)"):
        f(batch)


def test_norm_zero_matrix_is_zero() -> None:
    z = np.zeros((2, 3))
    assert sp.nuclear_norm(z) == 0.0
    assert sp.mixed_norm(z, 2, 1) == 0.0
    assert sp.induced_norm(z, 1, 2) == 0.0


@pytest.mark.parametrize("bad", [0.5, 0, -1, float("nan"), "2", None, True])
def test_invalid_norm_indices(bad) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match="q must be"):
        sp.mixed_norm(W23, bad, 1)
    with pytest.raises(ValueError, match="p must be"):
        sp.mixed_norm(W23, 1, bad)
    with pytest.raises(ValueError, match="p must be"):
        sp.schatten_norm(W23, bad)
    with pytest.raises(ValueError, match="q must be"):
        sp.induced_norm(W23, bad, 2)


def test_induced_norm_without_closed_form() -> None:
    for q, p in [(math.inf, 1), (2, 1), (3, 2), (2, 3)]:
        with pytest.raises(ValueError, match="no closed form"):
            sp.induced_norm(W23, q, p)


def test_other_bad_arguments() -> None:
    with pytest.raises(ValueError, match="eps must be"):
        sp.effective_rank(np.eye(2), eps=1.0)
    with pytest.raises(ValueError, match="eps must be"):
        sp.effective_rank(np.eye(2), eps=-0.1)
    with pytest.raises(ValueError, match="tol must be"):
        sp.numerical_rank(np.eye(2), tol=-1.0)
    with pytest.raises(ValueError, match="tol must be"):
        sp.numerical_rank(np.eye(2), tol=float("nan"))
    with pytest.raises(ValueError, match="dtype must be"):
        sp.effective_rank(np.eye(2), dtype=np.int64)
    with pytest.raises(ValueError, match="dtype must be"):
        sp.effective_rank(np.eye(2), dtype=torch.int32)
    with pytest.raises(ValueError, match="dtype must be"):
        sp.effective_rank(np.eye(2), dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="dtype must be"):
        sp.effective_rank(np.eye(2), dtype="float16")
    with pytest.raises(ValueError, match="at least one"):
        sp.entrywise_l1([])
    with pytest.raises(ValueError, match=r"tensors\[1\] contains non-finite"):
        sp.entrywise_l1([np.ones(2), np.array([np.inf])])
    with pytest.raises(ValueError, match=r"tensors\[0\] is not numeric"):
        sp.entrywise_l1(["abc"])


# ----------------------------------------------------------------------------- range, gradients
@pytest.mark.parametrize("scale", [1e-300, 1e-170, 1e-154, 1e154, 1e170, 1e300])
def test_ratios_and_norms_finite_at_extreme_scales(scale: float) -> None:
    # s_i^2 overflows (underflows) near 1e+-154: the ratios must be rescaled by s_1 first
    rng = np.random.default_rng(7)
    A = rng.standard_normal((6, 4))
    B = A * scale
    for f in (sp.stable_rank, sp.nuclear_rank_ratio, sp.effective_rank):
        assert f(B) == pytest.approx(f(A), rel=1e-12), f.__name__
    for f, kw in ((sp.frobenius_norm, {}), (sp.nuclear_norm, {}), (sp.operator_norm, {}),
                  (sp.schatten_norm, {"p": 3.0}), (sp.mixed_norm, {"q": 2.0, "p": 1.0}),
                  (sp.mixed_norm, {"q": 1.0, "p": 2.0}),
                  (sp.induced_norm, {"q": 1.0, "p": 2.0}),
                  (sp.induced_norm, {"q": 2.0, "p": math.inf})):
        got = f(B, **kw)
        assert np.isfinite(got), (f.__name__, kw)
        assert got / scale == pytest.approx(f(A, **kw), rel=1e-12), (f.__name__, kw)


def test_unscaled_formula_would_fail_at_extreme_scale() -> None:
    # the mutation: the textbook formula without rescaling returns NaN / inf at this scale
    s = sp.singular_values(np.diag([3.0, 1.0]) * 1e160)
    with np.errstate(over="ignore", invalid="ignore"):
        naive = float((s**2).sum() / s[0] ** 2)
    assert not math.isfinite(naive)
    assert sp.stable_rank(np.diag([3.0, 1.0]) * 1e160) == pytest.approx(1 + 1 / 9, rel=1e-14)


def _erank_grad(A: np.ndarray) -> np.ndarray:
    t = torch.tensor(A, dtype=torch.float64, requires_grad=True)
    sp.effective_rank(t).backward()
    assert t.grad is not None
    return t.grad.numpy()


def test_effective_rank_gradient_finite_and_correct_at_rank_deficient_input() -> None:
    rng = np.random.default_rng(3)
    # an exactly rank-deficient matrix (exact zero singular values): the diagonal embedding
    D = np.zeros((5, 4))
    D[0, 0], D[1, 1], D[2, 2] = 2.0, 1.0, 0.5
    for M in (D, np.diag([1.0, 0.0]), np.diag([3.0, 1.0, 0.0, 0.0])):
        g = _erank_grad(M)
        assert np.all(np.isfinite(g))
    # correctness: closed-form gradient erank * sum_{s_j>0} -(log p_j + H)/S u_j v_j^T ...
    g = _erank_grad(D)
    sv = np.array([2.0, 1.0, 0.5])
    p = sv / sv.sum()
    H = -(p * np.log(p)).sum()
    expected = np.zeros((5, 4))
    for j in range(3):
        expected[j, j] = math.exp(H) * -(math.log(p[j]) + H) / sv.sum()
    np.testing.assert_allclose(g, expected, rtol=1e-10, atol=1e-14)
    # ... and a central finite difference along a direction that keeps the rank (zero block of
    # U_perp^T E V_perp), where erank is differentiable
    E = rng.standard_normal((5, 4))
    E[3:, 3:] = 0.0
    h = 1e-6
    fd = (sp.effective_rank(D + h * E) - sp.effective_rank(D - h * E)) / (2 * h)
    assert fd == pytest.approx(float((g * E).sum()), rel=1e-6)
    # a rank-one matrix: erank is identically 1 on rank-one matrices, so the gradient is 0
    np.testing.assert_array_equal(_erank_grad(np.diag([1.0, 0.0])), np.zeros((2, 2)))


def test_effective_rank_gradient_with_truncation_is_finite() -> None:
    t = torch.tensor(np.diag([1.0, 1e-9, 0.3]), dtype=torch.float64, requires_grad=True)
    sp.effective_rank(t, eps=1e-6).backward()
    assert t.grad is not None and bool(torch.isfinite(t.grad).all())


def test_effective_rank_gradient_full_rank_matches_finite_differences() -> None:
    rng = np.random.default_rng(5)
    A = rng.standard_normal((4, 3))
    g = _erank_grad(A)
    E = rng.standard_normal((4, 3))
    h = 1e-6
    fd = (sp.effective_rank(A + h * E) - sp.effective_rank(A - h * E)) / (2 * h)
    assert fd == pytest.approx(float((g * E).sum()), rel=1e-6)


def test_xlogy_mutation_gives_nan_gradient() -> None:
    # the mutation this module guards against: the entropy written with xlogy has a NaN
    # gradient at exact zeros of p
    p = torch.tensor([0.5, 0.5, 0.0], dtype=torch.float64, requires_grad=True)
    torch.exp(-torch.special.xlogy(p, p).sum()).backward()
    assert p.grad is not None and bool(torch.isnan(p.grad).any())


@pytest.mark.parametrize("kind", ["float16", "bfloat16", "int", "bool"])
def test_low_precision_integer_and_bool_inputs_are_upcast(kind: str) -> None:
    base = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    if kind == "float16":
        X: object = torch.tensor(base, dtype=torch.float16)
    elif kind == "bfloat16":
        X = torch.tensor(base, dtype=torch.bfloat16)
    elif kind == "int":
        X = base.astype(np.int64)
    else:
        X = base.astype(bool)
    for f in (sp.effective_rank, sp.stable_rank, sp.nuclear_rank_ratio, sp.frobenius_norm,
              sp.operator_norm):
        got = f(X)  # type: ignore[arg-type]
        assert float(got) == pytest.approx(float(f(base)), rel=1e-12), (f.__name__, kind)
        if isinstance(got, torch.Tensor):
            assert got.dtype == torch.float64
        else:
            assert np.asarray(got).dtype == np.float64


# ------------------------------------------------------------------------ bad input (issue #17)
_RATIOS = (sp.effective_rank, sp.stable_rank, sp.nuclear_rank_ratio, sp.participation_ratio)
_NORMS = (sp.frobenius_norm, sp.nuclear_norm, sp.operator_norm, sp.singular_values)


@pytest.mark.parametrize("bad", [True, np.array([0.5]), float("nan"), "0.5", None, -0.1],
                         ids=repr)
def test_bad_scalar_arguments_raise_naming_them(bad) -> None:  # noqa: ANN001
    A = np.eye(3)
    for call, name in ((lambda: sp.effective_rank(A, eps=bad), "eps"),
                       (lambda: sp.energy_rank(A, fraction=bad), "fraction"),
                       (lambda: sp.rank_measures(A, fraction=bad), "fraction"),
                       (lambda: sp.schatten_norm(A, p=bad), "p"),
                       (lambda: sp.mixed_norm(A, q=bad, p=1), "q"),
                       (lambda: sp.induced_norm(A, q=1, p=bad), "p")):
        with pytest.raises(ValueError, match=rf"^{name} "):
            call()
    if bad is not None:  # tol=None is the default threshold
        with pytest.raises(ValueError, match=r"^tol "):
            sp.numerical_rank(A, tol=bad)


def test_numpy_scalar_arguments_are_accepted() -> None:
    A = np.diag([3.0, 1.0, 1e-3])
    assert sp.effective_rank(A, eps=np.float32(0.01)) == pytest.approx(
        sp.effective_rank(np.diag([3.0, 1.0])))
    assert sp.numerical_rank(A, tol=np.float64(0.5)) == 2
    assert sp.energy_rank(A, fraction=np.float64(0.5)) == 1


@pytest.mark.parametrize("value", [1e308, -1.7e308])
def test_largest_floats_ratios_finite_norms_raise(value: float) -> None:
    """LAPACK returns NaN on entries near the largest float: the SVD sees A / max|A_ij|."""
    A = np.full((3, 3), value)
    A[0, 1] = value / 7
    B = A / abs(value)
    for f in _RATIOS:
        assert f(A) == pytest.approx(f(B), rel=1e-12), f.__name__
    assert sp.numerical_rank(A) == sp.numerical_rank(B)
    for f in _NORMS:  # the true value exceeds the largest float: an error, never inf / NaN
        with pytest.raises(ValueError, match="^A is too large"):
            f(A)
    with pytest.raises(ValueError, match="^W is too large"):
        sp.mixed_norm(A, 1, 1)
    with pytest.raises(ValueError, match="^tensors"):
        sp.entrywise_l1([A])
    assert sp.operator_norm(A / 10) == pytest.approx(sp.operator_norm(B) * (abs(value) / 10))


try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp

    HAVE_HYPOTHESIS = True
except ImportError:  # pragma: no cover
    HAVE_HYPOTHESIS = False

if HAVE_HYPOTHESIS:
    @settings(max_examples=150, deadline=None)
    @given(M=hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=3, min_side=1,
                                                     max_side=5),
                        elements=st.floats(-1.0, 1.0, allow_nan=False)),
           exponent=st.integers(-300, 307))
    def test_every_function_finite_or_raises_naming_A(M: np.ndarray, exponent: int) -> None:
        A = M * 10.0**exponent
        if not np.any(A):
            with pytest.raises(ValueError, match="^A is the zero matrix"):
                sp.effective_rank(A)
            return
        zero = ~np.any(A != 0, axis=(-2, -1))
        if np.any(zero):
            return  # a zero matrix in the batch: covered by test_zero_matrix_raises
        rm = sp.rank_measures(A)
        rank = np.minimum(*A.shape[-2:])
        for k in ("erank", "nuclear_rank_ratio", "participation_ratio", "stable_rank"):
            v = np.asarray(rm[k])
            assert np.all(np.isfinite(v)) and np.all(v >= 1 - 1e-9) and np.all(v <= rank + 1e-9)
        assert np.all(np.asarray(rm["stable_rank"]) <= np.asarray(rm["erank"]) + 1e-9)
        for f in _NORMS:
            try:
                v = np.asarray(f(A))
            except ValueError as exc:
                assert str(exc).startswith("A is too large")
                continue
            assert np.all(np.isfinite(v)) and np.all(v >= 0)


# ----------------------------------------------------------------------------- norms.norm_table
def _tiny_view(scale: float = 1.0):  # noqa: ANN202
    from genbounds.models import EdelmanTransformer

    m = EdelmanTransformer(d=3, k=2, heads=1, layers=1, n_models=2, seeds=[0, 1],
                           dtype=torch.float64)
    with torch.no_grad():
        for p in m.parameters():
            p.mul_(scale)
    return m.view()


def test_norm_table_bad_input_and_extreme_scales() -> None:
    from genbounds.norms import norm_table, table_row

    base = norm_table(_tiny_view())
    big = norm_table(_tiny_view(1e200))   # squares overflow; every norm is computed scaled
    for key in ("layer0.head0.W_V.fro", "layer0.head0.W_V.spectral", "model.l2"):
        assert big[key] == pytest.approx(base[key] * 1e200, rel=1e-12), key
    assert np.allclose(big["layer0.head0.W_V.erank"], base["layer0.head0.W_V.erank"])
    with pytest.raises(ValueError, match="^view"):
        norm_table(_tiny_view(float("nan")))
    with pytest.raises(ValueError, match="^view"):
        norm_table(_tiny_view(1e308))
    with pytest.raises(ValueError, match="^view must be"):
        norm_table("x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^extra\["):
        norm_table(_tiny_view(), extra={"p": {"a": np.ones(3)}})
    with pytest.raises(ValueError, match=r"^extra\["):
        norm_table(_tiny_view(), extra={"p": {"a": "xy"}})
    with pytest.raises(ValueError, match="^k must"):
        table_row(base, True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^table"):
        table_row({}, 0)
