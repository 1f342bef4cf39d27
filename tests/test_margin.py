"""Margin derandomisation (genbounds.bounds.margin): soundness of every step, and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import integrate, stats

from genbounds.bounds import margin as mg
from genbounds.bounds import pac_bayes as pb
from genbounds.models.shallow_encoder import ShallowEncoder

D_IN, D_M, T = 8, 4, 5


def _model(seed: int) -> ShallowEncoder:
    return ShallowEncoder(d=D_IN, d_m=D_M, seeds=[seed], dtype=torch.float64)


def _weights(model: ShallowEncoder) -> dict[str, torch.Tensor]:
    return {k: p.detach()[0] for k, p in model.named_parameters()}


def _f(w: dict[str, torch.Tensor], X: torch.Tensor) -> torch.Tensor:
    """The encoder written out from its definition (not the package's forward)."""
    M = w["W_Q"].T @ w["W_K"] / math.sqrt(D_M)
    A = torch.softmax(X @ M @ X.transpose(-1, -2), dim=-1)
    Z = A @ X
    return (torch.relu(Z @ w["W_V"].T) @ w["w_O"]).mean(-1)


def _project(X: torch.Tensor, B: float) -> torch.Tensor:
    n = torch.linalg.vector_norm(X, dim=-1, keepdim=True)
    return X * torch.clamp(B / n.clamp(min=1e-12), max=1.0)


def _adversarial_change(w: dict[str, torch.Tensor], u: dict[str, torch.Tensor], B: float,
                        seed: int, starts: int = 16, steps: int = 150) -> float:
    """Projected gradient ascent of |f_{w+u}(X) - f_w(X)| over inputs with token norms <= B."""
    wp = {k: w[k] + u[k] for k in w}
    g = torch.Generator().manual_seed(seed)
    X = _project(torch.randn(starts, T, D_IN, generator=g, dtype=torch.float64) * B, B)
    X.requires_grad_(True)
    opt = torch.optim.Adam([X], lr=0.05 * B)
    best = 0.0
    for _ in range(steps):
        opt.zero_grad()
        gap = (_f(wp, X) - _f(w, X)).abs()
        best = max(best, float(gap.detach().max()))
        (-gap.sum()).backward()
        opt.step()
        with torch.no_grad():
            X.copy_(_project(X, B))
    return best


def _perturbation(w: dict[str, torch.Tensor], scale: dict[str, float],
                  seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {k: scale.get(k, 0.0) * torch.randn(1, *w[k].shape, generator=g,
                                                  dtype=torch.float64) for k in w}


CASES = [
    {"W_Q": 0.3, "W_K": 0.3, "W_V": 0.3, "w_O": 0.3},  # everything
    {"W_Q": 0.05, "W_K": 0.05},  # attention only: the min(2, .) term alone
    {"W_Q": 1e-3},  # attention only, unsaturated
    {"W_V": 0.2},
    {"w_O": 0.2},
]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("B", [0.7, 3.0])
def test_bound_never_exceeded(case: int, B: float) -> None:
    """Random and adversarial inputs of the domain never exceed the sound bound."""
    w = _weights(_model(case))
    u = _perturbation(w, CASES[case], seed=100 + case)
    bound = float(mg.shallow_perturbation_bound(w, u, B)[0])
    g = torch.Generator().manual_seed(7)
    X = _project(torch.randn(4000, T, D_IN, generator=g, dtype=torch.float64) * B, B)
    wp = {k: w[k] + u[k][0] for k in w}
    random_gap = float((_f(wp, X) - _f(w, X)).abs().max())
    adv = _adversarial_change(w, {k: v[0] for k, v in u.items()}, B, seed=case)
    assert random_gap <= bound * (1 + 1e-9)
    assert adv <= bound * (1 + 1e-9)
    # the adversary finds a real change (the check is not empty)
    assert adv > 0.0


def test_attention_term_needed() -> None:
    """Mutation guard: with the attention term dropped the bound is 0 for a perturbation of
    W_Q, W_K only, and the adversary exceeds it (so the test above would fail)."""
    w = _weights(_model(1))
    u = _perturbation(w, CASES[1], seed=101)
    adv = _adversarial_change(w, {k: v[0] for k, v in u.items()}, 3.0, seed=1)
    bound = float(mg.shallow_perturbation_bound(w, u, 3.0)[0])
    assert adv > 1e-3 and bound >= adv


def test_bound_matches_package_model() -> None:
    """The written-out encoder above is the package's ShallowEncoder."""
    model = _model(3)
    X = torch.randn(7, T, D_IN, dtype=torch.float64)
    out = model(X[None])[0]
    assert torch.allclose(out, _f(_weights(model), X), atol=1e-10)


def test_softmax_lemma() -> None:
    """||softmax(a + D) - softmax(a)||_1 <= min(2, max|D|), random and adversarial."""
    g = torch.Generator().manual_seed(0)
    for scale in (0.01, 0.3, 3.0, 30.0):
        a = torch.randn(2000, 9, generator=g, dtype=torch.float64) * 3
        Dl = torch.randn(2000, 9, generator=g, dtype=torch.float64) * scale
        lhs = (torch.softmax(a + Dl, -1) - torch.softmax(a, -1)).abs().sum(-1)
        rhs = mg.softmax_l1_bound(Dl.abs().max(-1).values)
        assert bool((lhs <= rhs + 1e-12).all())
    # adversarial: two logits, D = (+m, -m) at a = 0 gives 2 tanh(m) ~ 2m: the constant is
    # sharp for small m (a factor 2 smaller constant would fail)
    m = 1e-3
    lhs = float((torch.softmax(torch.tensor([m, -m], dtype=torch.float64), 0) - 0.5).abs().sum())
    assert lhs <= m and lhs > 0.99 * m


def test_conditioned_kl_bound() -> None:
    """KL(Q(.|E) || P) by quadrature in one dimension is below the bound."""
    for mu_p, v_p, c in ((0.0, 1.0, 0.3), (1.5, 0.2, 1.0), (-0.5, 4.0, 2.5)):
        q = stats.norm(0, 1)
        p = stats.norm(mu_p, math.sqrt(v_p))
        Z = q.cdf(c) - q.cdf(-c)
        kl_cond = integrate.quad(lambda t, q=q, p=p, Z=Z: q.pdf(t) / Z * math.log(q.pdf(t) / Z
                                                                      / p.pdf(t)),
                                 -c, c)[0]
        kl = pb.gaussian_kl(np.zeros(1), np.ones(1), np.full(1, mu_p), v_p)
        assert kl_cond <= mg.conditioned_kl_bound(kl, Z) + 1e-9
        # decreasing in z: a lower limit of Z gives a larger (valid) bound
        assert mg.conditioned_kl_bound(kl, 0.5 * Z) > mg.conditioned_kl_bound(kl, Z)


def test_isotropic_kl_matches_gaussian_kl() -> None:
    rng = np.random.default_rng(0)
    w, wp = rng.normal(size=50), rng.normal(size=50)
    for s2, lam in ((1e-4, 1e-2), (0.3, 0.1), (2.0, 2.0)):
        direct = pb.gaussian_kl(w, np.full(50, math.sqrt(s2)), wp, lam)
        assert math.isclose(mg.isotropic_kl(float(((w - wp) ** 2).sum()), 50, s2, lam), direct,
                            rel_tol=1e-10)
    kl, lam = mg.best_grid_kl(float(((w - wp) ** 2).sum()), 50, 1e-3)
    assert lam in mg.LAMBDA_GRID and kl <= mg.isotropic_kl(float(((w - wp) ** 2).sum()), 50,
                                                           1e-3, float(mg.LAMBDA_GRID[0]))


def test_z_lower_matches_beta_quantile() -> None:
    for k, m in ((1, 50), (37, 50), (50, 50), (990, 1000)):
        ref = float(stats.beta.ppf(0.01, k, m - k + 1))
        assert math.isclose(mg.z_lower(k, m, 0.01), ref, abs_tol=1e-8)
    assert mg.z_lower(0, 10, 0.05) == 0.0


def test_certificate_and_needed_n() -> None:
    c = mg.margin_certificate(0.02, 50.0, 400, 0.04, grid=100)
    assert c == pytest.approx(pb.pac_bayes_kl(0.02, 50.0, 400, 0.04, grid_size=100))
    n = mg.needed_n(0.02, 50.0, 0.15, 0.04, grid=100)
    assert mg.margin_certificate(0.02, 50.0, n, 0.04, grid=100) < 0.15
    assert mg.margin_certificate(0.02, 50.0, n - 1, 0.04, grid=100) >= 0.15
    assert mg.grid_size() == mg.GAMMA_GRID.size * mg.SIGMA_GRID.size * mg.LAMBDA_GRID.size


def test_bad_input() -> None:
    w = _weights(_model(0))
    u = _perturbation(w, CASES[0], seed=0)
    with pytest.raises(ValueError, match="token_norm"):
        mg.shallow_perturbation_bound(w, u, -1.0)
    with pytest.raises(ValueError, match="perturbation"):
        mg.shallow_perturbation_bound(w, {k: v[0] for k, v in u.items()}, 1.0)
    with pytest.raises(ValueError, match="missing"):
        mg.shallow_perturbation_bound({k: w[k] for k in ("W_Q", "W_K")}, u, 1.0)
    with pytest.raises(ValueError, match="z"):
        mg.conditioned_kl_bound(1.0, 0.0)
    with pytest.raises(ValueError, match="kl"):
        mg.conditioned_kl_bound(-1.0, 0.5)
    with pytest.raises(ValueError, match="max_abs_change"):
        mg.softmax_l1_bound(-1.0)
    with pytest.raises(ValueError, match="lam"):
        mg.isotropic_kl(1.0, 3, 1.0, 0.0)
    with pytest.raises(ValueError, match="target"):
        mg.needed_n(0.1, 1.0, 1.5, 0.05)
