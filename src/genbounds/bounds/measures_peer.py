"""A transliteration of the peer code's measures, used only to check :mod:`.measures`.

The formulas of ``get_all_measures``, ``_pacbayes_sigma`` and ``_perturbed_model`` in
``data/generation/measures.py`` of ``nitarshan/robust-generalization-measures`` (Dziugaite et al.
2020; Apache License 2.0, Copyright (c) 2020 Gintare Karolina Dziugaite (Element AI Inc.) and
the other authors), re-typed line by line for **one** model (an ensemble module with ``K = 1``),
without the dataset-size adjustment, the batch-norm folding and the FFT spectral norms. Nothing
of the book computes with this module: the tests and the comparison chapter compare
:mod:`genbounds.bounds.measures` with it on the same weights. It registers nothing.

The peer's weights are its modules' parameters whose name contains neither ``bias`` nor ``bn``,
one tensor per linear map; an ensemble module stacks the maps of a layer or head along leading
axes, so :func:`module_weights` splits a parameter ``(1, *lead, out, in)`` into its matrices (a
vector parameter ``(1, n)`` stays a vector), which is what the peer's modules would hold.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import torch
from torch import nn

__all__ = ["PEER_NAME", "compare_on_model", "module_weights", "peer_margin", "peer_measures",
           "peer_pacbayes_sigma", "peer_path_norm"]

BIG_NUMBER = 10348628753

#: registered key -> the peer's name (its ``ComplexityType``), for every measure compared
PEER_NAME: dict[str, str] = {
    "measures.n_params": "PARAMS", "measures.dist_init": "L2_DIST",
    "measures.param_norm": "PARAM_NORM", "measures.inverse_margin": "INVERSE_MARGIN",
    "measures.log_prod_spec": "LOG_PROD_OF_SPEC", "measures.log_sum_spec": "LOG_SUM_OF_SPEC",
    "measures.log_prod_fro": "LOG_PROD_OF_FRO", "measures.log_sum_fro": "LOG_SUM_OF_FRO",
    "measures.log_prod_spec_margin": "LOG_PROD_OF_SPEC_OVER_MARGIN",
    "measures.log_sum_spec_margin": "LOG_SUM_OF_SPEC_OVER_MARGIN",
    "measures.log_prod_fro_margin": "LOG_PROD_OF_FRO_OVER_MARGIN",
    "measures.log_sum_fro_margin": "LOG_SUM_OF_FRO_OVER_MARGIN",
    "measures.path_norm": "PATH_NORM", "measures.path_norm_margin": "PATH_NORM_OVER_MARGIN",
    "pacbayes.init": "PACBAYES_INIT", "pacbayes.mag_init": "PACBAYES_MAG_INIT",
    "pacbayes.flatness": "PACBAYES_FLATNESS", "pacbayes.mag_flatness": "PACBAYES_MAG_FLATNESS",
}


def module_weights(model: nn.Module) -> list[torch.Tensor]:
    """The weight tensors of a ``K = 1`` ensemble module, one per linear map (see module)."""
    out: list[torch.Tensor] = []
    for name, p in model.named_parameters():
        if "bias" in name or "bn" in name:
            continue
        if p.shape[0] != 1:
            raise ValueError(f"model must hold one model (K = 1), got {p.shape[0]}")
        t = p.detach()[0].double()
        out += [t] if t.ndim == 1 else list(t.reshape(-1, *t.shape[-2:]))
    return out


def peer_margin(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """``_margin``: correct logit minus the largest other, ``kthvalue(m // 10)``, then ``abs``."""
    logits = logits.clone()
    m = logits.shape[0]
    correct_logit = logits[torch.arange(m), target].clone()
    logits[torch.arange(m), target] = float("-inf")
    max_other_logit = logits.data.max(1).values
    return (correct_logit - max_other_logit).kthvalue(m // 10)[0].abs()


def peer_measures(weights: list[torch.Tensor], init_weights: list[torch.Tensor],
                  margin: torch.Tensor, m: int, sigma: float, mag_sigma: float
                  ) -> dict[str, float]:
    """The peer's measures on one model, by the peer's enum names, before its size adjustment."""
    d = len(weights)
    dist_init_weights = [p - q for p, q in zip(weights, init_weights, strict=True)]
    w_vec = torch.cat([p.reshape(-1) for p in weights])
    dist_w_vec = torch.cat([p.reshape(-1) for p in dist_init_weights])
    num_params = len(w_vec)
    reshaped = [p.reshape(p.shape[0], -1) for p in weights]
    meas: dict[str, torch.Tensor] = {}
    meas["L2"] = w_vec.norm(p=2)
    meas["L2_DIST"] = dist_w_vec.norm(p=2)
    meas["PARAMS"] = torch.tensor(float(num_params), dtype=torch.float64)
    meas["INVERSE_MARGIN"] = 1 / margin**2
    fro_norms = torch.cat([p.norm("fro").unsqueeze(0) ** 2 for p in reshaped])
    spec_norms = torch.cat([torch.linalg.svdvals(p).max().unsqueeze(0) ** 2 for p in reshaped])
    meas["LOG_PROD_OF_SPEC"] = spec_norms.log().sum()
    meas["LOG_PROD_OF_SPEC_OVER_MARGIN"] = meas["LOG_PROD_OF_SPEC"] - 2 * margin.log()
    meas["LOG_SUM_OF_SPEC_OVER_MARGIN"] = math.log(d) + (1 / d) * (
        meas["LOG_PROD_OF_SPEC"] - 2 * margin.log())
    meas["LOG_SUM_OF_SPEC"] = math.log(d) + (1 / d) * meas["LOG_PROD_OF_SPEC"]
    meas["LOG_PROD_OF_FRO"] = fro_norms.log().sum()
    meas["LOG_PROD_OF_FRO_OVER_MARGIN"] = meas["LOG_PROD_OF_FRO"] - 2 * margin.log()
    meas["LOG_SUM_OF_FRO_OVER_MARGIN"] = math.log(d) + (1 / d) * (
        meas["LOG_PROD_OF_FRO"] - 2 * margin.log())
    meas["LOG_SUM_OF_FRO"] = math.log(d) + (1 / d) * meas["LOG_PROD_OF_FRO"]
    meas["PARAM_NORM"] = fro_norms.sum()

    def _pacbayes_bound(reference_vec: torch.Tensor) -> torch.Tensor:
        return (reference_vec.norm(p=2) ** 2) / (4 * sigma**2) + math.log(m / sigma) + 10

    meas["PACBAYES_INIT"] = _pacbayes_bound(dist_w_vec)
    meas["PACBAYES_FLATNESS"] = torch.tensor(1 / sigma**2, dtype=torch.float64)
    mag_eps = 1e-3
    omega = num_params

    def _pacbayes_mag_bound(reference_vec: torch.Tensor) -> torch.Tensor:
        numerator = mag_eps**2 + (mag_sigma**2 + 1) * (reference_vec.norm(p=2) ** 2) / omega
        denominator = mag_eps**2 + mag_sigma**2 * dist_w_vec**2
        return 1 / 4 * (numerator / denominator).log().sum() + math.log(m / mag_sigma) + 10

    meas["PACBAYES_MAG_INIT"] = _pacbayes_mag_bound(dist_w_vec)
    meas["PACBAYES_MAG_FLATNESS"] = torch.tensor(1 / mag_sigma**2, dtype=torch.float64)
    return {k: float(v) for k, v in meas.items()}


def peer_path_norm(model: nn.Module, input_shape: tuple[int, ...]) -> float:
    """``_path_norm``: square every trainable parameter of a copy, ones in, sum of the output."""
    model = copy.deepcopy(model)
    model.eval()
    for param in model.parameters():
        if param.requires_grad:
            param.data.pow_(2)
    x = torch.ones([1, 1, *input_shape], dtype=next(model.parameters()).dtype)
    with torch.no_grad():
        x = model(x)
    return float(x.sum())


@contextmanager
def _perturbed_model(model: nn.Module, sigma: float, rng: torch.Generator,
                     magnitude_eps: float | None = None) -> Iterator[nn.Module]:
    if magnitude_eps is not None:
        noise = [torch.normal(0, sigma**2 * torch.abs(p) ** 2 + magnitude_eps**2, generator=rng)
                 for p in model.parameters()]
    else:
        noise = [torch.normal(0, sigma**2, p.shape, generator=rng, dtype=p.dtype)
                 for p in model.parameters()]
    model = copy.deepcopy(model)
    try:
        with torch.no_grad():
            [p.add_(n) for p, n in zip(model.parameters(), noise, strict=True)]
        yield model
    finally:
        del model


def peer_pacbayes_sigma(model: nn.Module, accuracy_of: Callable[[nn.Module], float],
                        accuracy: float, seed: int, magnitude_eps: float | None = None,
                        search_depth: int = 15, montecarlo_samples: int = 10,
                        accuracy_displacement: float = 0.1,
                        displacement_tolerance: float = 1e-2) -> float:
    """``_pacbayes_sigma``, with ``accuracy_of(model)`` in place of the loop over a data loader
    (and the noise drawn in the parameter's dtype, which the peer's float32 models imply)."""
    lower, upper = 0.0, 2.0
    sigma = 1.0
    rng = torch.Generator()
    rng.manual_seed(BIG_NUMBER + seed)
    for _ in range(search_depth):
        sigma = (lower + upper) / 2
        accuracy_samples = []
        for _ in range(montecarlo_samples):
            with _perturbed_model(model, sigma, rng, magnitude_eps) as p_model:
                accuracy_samples.append(accuracy_of(p_model))
        displacement = abs(np.mean(accuracy_samples) - accuracy)
        if abs(displacement - accuracy_displacement) < displacement_tolerance:
            break
        elif displacement > accuracy_displacement:
            upper = sigma
        else:
            lower = sigma
    return sigma


def compare_on_model(model: nn.Module, input_shape: tuple[int, int], *, seed: int = 0,
                     m: int = 50, step: float = 0.3, sigma: float = 0.37,
                     mag_sigma: float = 0.81) -> dict[str, tuple[float, float]]:
    """``{key: (book, peer)}`` for every measure of :data:`PEER_NAME` on one model.

    ``model`` is a ``K = 1`` float64 ensemble module at its initialisation; it is moved by a
    random step of size ``step`` per entry (a stand-in for training: the formulas, not the
    training, are compared), evaluated on ``m`` standard Gaussian inputs of shape ``input_shape``
    with random 0/1 labels; ``sigma`` and ``mag_sigma`` stand for the searched noise levels (the
    search itself is compared draw for draw in the tests). The book's value comes from the stored
    columns and the registry, exactly as the comparison chapter computes it; the peer's from this
    module's transliteration.
    """
    from genbounds.bounds import measures as ms
    from genbounds.bounds.registry import get
    from genbounds.norms import norm_table

    init = {k: v.detach().clone() for k, v in model.named_parameters()}
    m0 = copy.deepcopy(model)
    g = torch.Generator().manual_seed(seed + 100)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(step * torch.randn(p.shape, generator=g, dtype=p.dtype))
    view = model.view(initial_state=init)  # type: ignore[operator]
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(1, m, *input_shape, generator=g, dtype=torch.float64)
    y = (torch.rand(1, m, generator=g) < 0.5).long()
    with torch.no_grad():
        f = model(X)
    row: dict[str, float] = {k: float(np.asarray(v)[0]) for k, v in norm_table(view).items()}
    row.update({k: float(v[0]) for k, v in ms.weight_norms(view).items()})
    row["margin.q10"] = float(ms.training_margin(f, y)[0])
    row["path_norm"] = float(ms.path_norm(model, input_shape)[0])
    row["pacbayes.sigma"], row["pacbayes.mag_sigma"] = sigma, mag_sigma
    row["pacbayes.mag_logsum"] = float(ms.pacbayes_mag_logsum(view, np.array([mag_sigma]))[0])
    q = ms.measure_quantities(row, {"m": m})
    logits = torch.stack([torch.zeros_like(f[0]), f[0]], dim=1)  # two-class logits (0, f)
    margin = peer_margin(logits, y[0])
    ref = peer_measures(module_weights(model), module_weights(m0), margin, m, sigma, mag_sigma)
    ref["PATH_NORM"] = peer_path_norm(model, input_shape)
    ref["PATH_NORM_OVER_MARGIN"] = ref["PATH_NORM"] / float(margin) ** 2
    return {k: (get(k).evaluate(q).value, ref[name]) for k, name in PEER_NAME.items()}
