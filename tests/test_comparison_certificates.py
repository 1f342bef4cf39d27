"""The PAC-Bayes certificates the comparison sweep computes on its trained weights."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import genbounds.experiments.comparison as cmp
from genbounds.bounds.pac_bayes import pac_bayes_kl, sample_convergence_from_mean


class _Linear(torch.nn.Module):
    """K linear classifiers on shared inputs (leading ensemble dimension)."""

    def __init__(self, K: int, d: int, seed: int = 0) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.w = torch.nn.Parameter(torch.randn(K, d, generator=g))

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return X @ self.w.T  # (n, K)


def _setup(K: int = 3, d: int = 5, n: int = 40):
    g = torch.Generator().manual_seed(1)
    X = torch.randn(n, d, generator=g)
    model = _Linear(K, d)
    y = (X @ model.w.detach()[0] > 0)

    def accuracy(m: torch.nn.Module) -> np.ndarray:
        with torch.no_grad():
            return ((m(X) > 0) == y[:, None]).double().mean(0).numpy()

    return model, accuracy, n


def test_certificate_at_init_has_zero_kl_and_dominates_mc() -> None:
    model, acc, n = _setup()
    init = {k: v.detach().clone() for k, v in model.state_dict().items()}
    out = cmp.sweep_certificates(model, init, acc, n=n, mc_samples=8, seed=0)
    assert np.allclose(out["cert.kl"], 0.0, atol=1e-9)
    assert np.all(out["cert.dist"] == 0.0)
    assert np.all(out["cert.bound"] >= out["cert.mc_upper"])
    assert np.all(out["cert.mc_upper"] >= out["cert.mc_error"])
    assert np.all(out["cert.bound"] <= 1.0)


def test_certificate_pays_the_union_bound_over_the_grid() -> None:
    model, acc, n = _setup()
    before = model.w.detach().clone()
    init = {k: (v + 0.3).detach() for k, v in model.state_dict().items()}
    grid = np.array([0.5, 0.1, 0.02])
    out = cmp.sweep_certificates(model, init, acc, n=n, mc_samples=16, grid=grid, seed=3)
    w = model.w.detach().double().numpy()
    w0 = init["w"].double().numpy()
    for j in range(3):
        lam = out["cert.sigma"][j] ** 2
        assert np.isclose(lam, grid).any()
        kl = float(np.sum((w[j] - w0[j]) ** 2)) / (2 * lam)
        assert out["cert.kl"][j] == pytest.approx(kl, rel=1e-9)
        up = sample_convergence_from_mean(out["cert.mc_error"][j], 16, cmp.CERT_DELTA / 2 / 3)
        assert out["cert.mc_upper"][j] == pytest.approx(up)
        b = pac_bayes_kl(up, kl, n, cmp.CERT_DELTA / 2, grid_size=3)
        assert out["cert.bound"][j] == pytest.approx(b)
        # without the union bound the value would be smaller: the grid is paid for
        assert b > pac_bayes_kl(sample_convergence_from_mean(out["cert.mc_error"][j], 16,
                                                             cmp.CERT_DELTA / 2), kl, n,
                                cmp.CERT_DELTA / 2)
    # the parameters are restored
    assert torch.equal(model.w.detach(), before)


def test_certificate_rejects_bad_input() -> None:
    model, acc, n = _setup()
    init = {k: v.detach().clone() for k, v in model.state_dict().items()}
    with pytest.raises(ValueError, match="grid"):
        cmp.sweep_certificates(model, init, acc, n=n, grid=np.array([-1.0]))
    with pytest.raises(ValueError, match="n"):
        cmp.sweep_certificates(model, init, acc, n=3)
    with pytest.raises(ValueError, match="initial_state"):
        cmp.sweep_certificates(model, {}, acc, n=n)
    with pytest.raises(ValueError, match="delta"):
        cmp.sweep_certificates(model, init, acc, n=n, delta=1.5)
    assert math.isfinite(cmp.CERT_DELTA)


def test_test_error_target_has_the_gap_noise() -> None:
    rows = [{"test_error": e, "n_test": 500.0} for e in (0.1, 0.2, 0.3)]
    assert np.array_equal(cmp.noise_matrix(rows, target="test_error"),
                          cmp.noise_matrix(rows, target="gap"))
    with pytest.raises(ValueError, match="target"):
        cmp.noise_matrix(rows, target="train_error")
