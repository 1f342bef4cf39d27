"""The measures against a transliteration of the peer code (Dziugaite et al.'s released
``measures.py``, :mod:`genbounds.bounds.measures_peer`) on the same weights, every family."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from genbounds.bounds import measures as ms
from genbounds.bounds import measures_peer as peer
from genbounds.bounds.registry import get
from genbounds.norms import norm_table

#: registered key -> the peer's enum name
PEER_NAME = {
    "measures.n_params": "PARAMS", "measures.dist_init": "L2_DIST",
    "measures.param_norm": "PARAM_NORM", "measures.inverse_margin": "INVERSE_MARGIN",
    "measures.log_prod_spec": "LOG_PROD_OF_SPEC", "measures.log_sum_spec": "LOG_SUM_OF_SPEC",
    "measures.log_prod_fro": "LOG_PROD_OF_FRO", "measures.log_sum_fro": "LOG_SUM_OF_FRO",
    "measures.log_prod_spec_margin": "LOG_PROD_OF_SPEC_OVER_MARGIN",
    "measures.log_sum_spec_margin": "LOG_SUM_OF_SPEC_OVER_MARGIN",
    "measures.log_prod_fro_margin": "LOG_PROD_OF_FRO_OVER_MARGIN",
    "measures.log_sum_fro_margin": "LOG_SUM_OF_FRO_OVER_MARGIN",
    "pacbayes.init": "PACBAYES_INIT", "pacbayes.mag_init": "PACBAYES_MAG_INIT",
    "pacbayes.flatness": "PACBAYES_FLATNESS", "pacbayes.mag_flatness": "PACBAYES_MAG_FLATNESS",
}


def _model(family: str, seed: int) -> tuple[nn.Module, tuple[int, int]]:
    from genbounds.models import EdelmanTransformer, LiTransformer, ShallowEncoder

    if family == "edelman":
        return EdelmanTransformer(d=6, k=3, heads=2, layers=2, n_models=1, seeds=[seed],
                                  cls_index=-1, dtype=torch.float64), (5, 6)
    if family == "shallow":
        return ShallowEncoder(d=6, d_m=4, n_models=1, seeds=[seed]).double(), (5, 6)
    return LiTransformer(d=5, k=3, heads=2, n_models=1, seeds=[seed],
                         dtype=torch.float64), (4, 5)


def _trained(family: str, seed: int) -> tuple[nn.Module, dict[str, torch.Tensor], tuple]:
    model, shape = _model(family, seed)
    init = {k: v.detach().clone() for k, v in model.named_parameters()}
    g = torch.Generator().manual_seed(seed + 100)
    with torch.no_grad():  # "training": a random step away from the initialisation
        for p in model.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    return model, init, shape


def compare(family: str, seed: int, m: int = 50) -> dict[str, tuple[float, float]]:
    """``{key: (ours, peer)}`` on one model of ``family`` (see the chapter's table)."""
    model, init, shape = _trained(family, seed)
    view = model.view(initial_state=init)
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(1, m, *shape, generator=g, dtype=torch.float64)
    y = (torch.rand(1, m, generator=g) < 0.5).long()
    with torch.no_grad():
        f = model(X)
    sigma, mag_sigma = 0.37, 0.81  # any searched values: the formulas are compared here
    row: dict[str, Any] = {k: float(np.asarray(v)[0]) for k, v in norm_table(view).items()}
    row.update({k: float(v[0]) for k, v in ms.weight_norms(view).items()})
    row["margin.q10"] = float(ms.training_margin(f, y)[0])
    row["path_norm"] = float(ms.path_norm(model, shape)[0])
    row["pacbayes.sigma"], row["pacbayes.mag_sigma"] = sigma, mag_sigma
    row["pacbayes.mag_logsum"] = float(ms.pacbayes_mag_logsum(view, np.array([mag_sigma]))[0])
    q = ms.measure_quantities(row, {"m": m})
    logits = torch.stack([torch.zeros_like(f[0]), f[0]], dim=1)  # two-class logits (0, f)
    margin = peer.peer_margin(logits, y[0])
    ref = peer.peer_measures(peer.module_weights(model),
                             [t for t in peer.module_weights(_init_module(model, init))],
                             margin, m, sigma, mag_sigma)
    out = {k: (get(k).evaluate(q).value, ref[name]) for k, name in PEER_NAME.items()}
    out["measures.path_norm"] = (row["path_norm"], peer.peer_path_norm(model, shape))
    out["measures.path_norm_margin"] = (get("measures.path_norm_margin").evaluate(q).value,
                                        out["measures.path_norm"][1] / float(margin) ** 2)
    return out


def _init_module(model: nn.Module, init: dict[str, torch.Tensor]) -> nn.Module:
    import copy

    m0 = copy.deepcopy(model)
    with torch.no_grad():
        for n, p in m0.named_parameters():
            p.copy_(init[n])
    return m0


@pytest.mark.parametrize("family", ["edelman", "shallow", "li"])
@pytest.mark.parametrize("seed", [0, 1])
def test_every_measure_equals_the_peer_formula_on_the_same_weights(family: str,
                                                                   seed: int) -> None:
    got = compare(family, seed)
    assert set(got) == set(PEER_NAME) | {"measures.path_norm", "measures.path_norm_margin"}
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
