"""The measures against a transliteration of the peer code (Dziugaite et al.'s released
``measures.py``, :mod:`genbounds.bounds.measures_peer`) on the same weights, every family."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from genbounds.bounds import measures as ms
from genbounds.bounds import measures_peer as peer

PEER_NAME = peer.PEER_NAME


def _model(family: str, seed: int) -> tuple[nn.Module, tuple[int, int]]:
    from genbounds.models import EdelmanTransformer, LiTransformer, ShallowEncoder

    if family == "edelman":
        return EdelmanTransformer(d=6, k=3, heads=2, layers=2, n_models=1, seeds=[seed],
                                  cls_index=-1, dtype=torch.float64), (5, 6)
    if family == "shallow":
        return ShallowEncoder(d=6, d_m=4, n_models=1, seeds=[seed]).double(), (5, 6)
    return LiTransformer(d=5, k=3, heads=2, n_models=1, seeds=[seed],
                         dtype=torch.float64), (4, 5)


def compare(family: str, seed: int, m: int = 50) -> dict[str, tuple[float, float]]:
    model, shape = _model(family, seed)
    return peer.compare_on_model(model, shape, seed=seed, m=m)


@pytest.mark.parametrize("family", ["edelman", "shallow", "li"])
@pytest.mark.parametrize("seed", [0, 1])
def test_every_measure_equals_the_peer_formula_on_the_same_weights(family: str,
                                                                   seed: int) -> None:
    got = compare(family, seed)
    assert set(got) == set(PEER_NAME)
    for k, (ours, ref) in got.items():
        assert math.isfinite(ours) and ours == pytest.approx(ref, rel=1e-9, abs=1e-12), (k, ours,
                                                                                          ref)


def test_the_comparison_fails_when_a_definition_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation: the old path norm (the sum over paths, projections dropped) is not the peer's."""
    monkeypatch.setattr(ms, "path_norm", lambda model, shape: ms.path_norm_paths(model.view()))
    ours, ref = compare("edelman", 0)["measures.path_norm"]
    assert ours > 1.5 * ref


class _Toy(nn.Module):
    """One model, 40 weights; its accuracy falls smoothly with the distance from 0."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.zeros(1, 40, dtype=torch.float64))


@pytest.mark.parametrize("eps", [None, 1e-3])
def test_sigma_search_equals_the_peer_search_draw_for_draw(eps: float | None) -> None:
    toy = _Toy()
    with torch.no_grad():
        toy.w.copy_(torch.linspace(-1, 1, 40, dtype=torch.float64))
    a = 2.0

    def acc(m: nn.Module) -> np.ndarray:
        return (1 - a * (m.w - toy_w0).abs().mean(1)).detach().numpy()

    toy_w0 = toy.w.detach().clone()
    ours = ms.pacbayes_sigma(toy, acc, magnitude_eps=eps, seed=peer.BIG_NUMBER + 7,
                             noise="released")
    ref = peer.peer_pacbayes_sigma(toy, lambda m: float(acc(m)[0]), float(acc(toy)[0]), seed=7,
                                   magnitude_eps=eps)
    assert ours[0] == ref
    assert 0 < ref < 2
