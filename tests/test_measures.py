"""Generalization measures (genbounds.bounds.measures): definitions by hand, the sigma search."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from genbounds.bounds import measures as ms
from genbounds.bounds.registry import BoundKind, BoundValue, get, quantities_adapter


def _row() -> dict[str, float]:
    return {"layer0.head0.W_QK.spectral": 9.0, "layer0.head0.W_QK.fro": 9.0,
            "layer0.head0.W_Q.spectral": 2.0, "layer0.head0.W_Q.fro": 3.0,
            "layer0.head0.W_K.spectral": 1.0, "layer0.head0.W_K.fro": 2.0,
            "readout.spectral": 0.5, "readout.fro": 0.5, "tt.W_c_spectral": 100.0,
            "model.n_params": 40.0, "model.l2": 3.0, "model.dist_l2": 2.0,
            "pacbayes.sigma": 0.5, "pacbayes.mag_sigma": 0.25, "pacbayes.mag_logsum": 8.0}


def test_weight_matrices_skip_a_factored_product_and_adapter_columns() -> None:
    assert ms.weight_matrices(_row()) == ["layer0.head0.W_Q", "layer0.head0.W_K", "readout"]
    with pytest.raises(ValueError, match="spectral"):
        ms.weight_matrices({"model.l2": 1.0})


def test_every_measure_by_hand() -> None:
    q = ms.measure_quantities(_row(), {"m": 100})
    assert quantities_adapter(ms.PAPER) is ms.measure_quantities

    def ev(key: str) -> float:
        return get(key).evaluate(q).value

    assert ev("measures.n_params") == 40.0
    assert ev("measures.log_prod_spec") == pytest.approx(2 * (math.log(2) + 0 + math.log(0.5)))
    assert ev("measures.sum_spec") == pytest.approx(3.5)
    assert ev("measures.log_prod_fro") == pytest.approx(2 * math.log(3 * 2 * 0.5))
    assert ev("measures.sum_fro") == pytest.approx(5.5)
    assert ev("measures.dist_init") == 2.0
    assert ev("measures.param_norm") == 9.0
    # ||w - w0||^2 / (4 sigma^2) + log(m / sigma) + 10 = 4 / 1 + log(200) + 10
    assert ev("pacbayes.init") == pytest.approx(4 + math.log(200) + 10)
    assert ev("pacbayes.mag_init") == pytest.approx(8 / 4 + math.log(400) + 10)
    assert ev("pacbayes.flatness") == pytest.approx(4.0)
    assert ev("pacbayes.mag_flatness") == pytest.approx(16.0)
    for key in ms.MEASURE_KEYS:
        assert get(key).kind is BoundKind.MEASURE
    with pytest.raises(ValueError, match="measure"):
        BoundValue(1.0, BoundKind.MEASURE).is_vacuous(1.0)
    assert not BoundKind.MEASURE.is_risk


class _Toy(nn.Module):
    """K models, each a vector of 2000 weights at 0; accuracy 1 - a_k * mean |w_k|."""

    def __init__(self, a: list[float]) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.zeros(len(a), 2000, dtype=torch.float64))
        self.a = torch.tensor(a, dtype=torch.float64)

    def accuracy(self, m: nn.Module) -> np.ndarray:
        return (1 - self.a * self.w.abs().mean(1)).detach().numpy()


def test_sigma_search_finds_the_noise_level_by_hand() -> None:
    # E|N(0, s^2)| = s sqrt(2/pi): the accuracy drops by 0.1 at s = 0.1 / (a sqrt(2/pi))
    toy = _Toy([1.0, 4.0])
    sig = ms.pacbayes_sigma(toy, toy.accuracy, seed=3)
    want = 0.1 / (np.array([1.0, 4.0]) * math.sqrt(2 / math.pi))
    tol = 1e-2 / (np.array([1.0, 4.0]) * math.sqrt(2 / math.pi))  # the displacement tolerance
    assert np.all(np.abs(sig - want) <= 1.5 * tol)
    assert torch.count_nonzero(toy.w) == 0  # parameters restored
    # a magnitude-aware perturbation of zero weights has std eps = 1e-3 whatever sigma:
    # the accuracy never drops by 0.1 and the bisection climbs to the upper end
    mag = ms.pacbayes_sigma(toy, toy.accuracy, magnitude_eps=1e-3, seed=3)
    assert np.all(mag > 1.99)
    with pytest.raises(ValueError, match="search_depth"):
        ms.pacbayes_sigma(toy, toy.accuracy, search_depth=0)
    with pytest.raises(ValueError, match="accuracy must return"):
        ms.pacbayes_sigma(toy, lambda m: np.zeros(3))


def test_mag_logsum_by_hand() -> None:
    toy = _Toy([1.0])
    with torch.no_grad():
        toy.w[0, :2] = torch.tensor([1.0, 2.0])
    init = {"w": torch.zeros(1, 2000, dtype=torch.float64)}
    s, eps = 0.5, 1e-3
    got = ms.pacbayes_mag_logsum(toy, init, np.array([s]), eps=eps)
    dist2 = 5.0
    num = eps**2 + (s**2 + 1) * dist2 / 2000
    den = eps**2 + s**2 * np.concatenate([[1.0, 4.0], np.zeros(1998)])
    assert got[0] == pytest.approx(np.sum(np.log(num / den)))
    with pytest.raises(ValueError, match="initial_state"):
        ms.pacbayes_mag_logsum(toy, {}, np.array([s]))
