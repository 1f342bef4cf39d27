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
            "pacbayes.sigma": 0.5, "pacbayes.mag_sigma": 0.25, "pacbayes.mag_logsum": 8.0,
            "margin.q10": -0.5, "path_norm": 7.0, "path_norm_paths": 70.0}


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
    lps = 2 * (math.log(2) + 0 + math.log(0.5))
    lpf = 2 * math.log(3 * 2 * 0.5)
    assert ev("measures.log_prod_spec") == pytest.approx(lps)
    # Jiang et al.'s sum-of-spec: log d + (1/d) sum log ||W||^2 with d = 3 matrices
    assert ev("measures.log_sum_spec") == pytest.approx(math.log(3) + lps / 3)
    assert ev("measures.log_prod_fro") == pytest.approx(lpf)
    assert ev("measures.log_sum_fro") == pytest.approx(math.log(3) + lpf / 3)
    assert ev("measures.dist_init") == 2.0
    assert ev("measures.param_norm") == 9.0
    # margin |gamma| = 0.5 (the stored 10th percentile is -0.5)
    assert ev("measures.inverse_margin") == pytest.approx(4.0)
    assert ev("measures.log_prod_spec_margin") == pytest.approx(lps - 2 * math.log(0.5))
    assert ev("measures.log_sum_spec_margin") == pytest.approx(
        math.log(3) + (lps - 2 * math.log(0.5)) / 3)
    assert ev("measures.log_prod_fro_margin") == pytest.approx(lpf - 2 * math.log(0.5))
    assert ev("measures.log_sum_fro_margin") == pytest.approx(
        math.log(3) + (lpf - 2 * math.log(0.5)) / 3)
    assert ev("measures.path_norm") == 7.0
    assert ev("measures.path_norm_margin") == pytest.approx(28.0)
    assert ev("measures.path_norm_paths") == 70.0
    # the peer's convention: ||w - w0||^2 / (4 s^2) + log(m / s) + 10 = 4 / 1 + log(200) + 10
    assert ev("pacbayes.init") == pytest.approx(4 + math.log(200) + 10)
    assert ev("pacbayes.mag_init") == pytest.approx(8 / 4 + math.log(400) + 10)
    assert ev("pacbayes.flatness") == pytest.approx(4.0)
    assert ev("pacbayes.mag_flatness") == pytest.approx(16.0)
    # the printed convention reads the same perturbation (std s^2 = 0.25) as sigma = 0.25
    assert ev("pacbayes.init_jiang") == pytest.approx(4 / (4 * 0.25**2) + math.log(100 / 0.25)
                                                      + 10)
    from genbounds.labels import label

    for key in ms.MEASURE_KEYS:  # every measure has words in the book's naming map
        assert label(key) != get(key).statement and label(key) != key
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
    from genbounds.models.shallow_encoder import ShallowEncoder

    model = ShallowEncoder(d=4, d_m=3, n_models=1, seeds=[0])
    init = {k: v.detach().clone() for k, v in model.named_parameters()}
    with torch.no_grad():
        model.W_V[0, 0, :2] += torch.tensor([1.0, 2.0])
    s, eps = 0.5, 1e-3
    got = ms.pacbayes_mag_logsum(model.view(initial_state=init), np.array([s]), eps=eps)
    omega = sum(p.numel() for p in model.parameters())
    num = eps**2 + (s**2 + 1) * 5.0 / omega
    den = eps**2 + s**2 * np.concatenate([[1.0, 4.0], np.zeros(omega - 2)])
    assert got[0] == pytest.approx(np.sum(np.log(num / den)), rel=1e-6)
    with pytest.raises(ValueError, match="initial"):
        ms.pacbayes_mag_logsum(model.view(), np.array([s]))


def test_released_noise_convention_has_standard_deviation_sigma_squared() -> None:
    # released: std = sigma^2, E|N(0, sigma^4)| = sigma^2 sqrt(2/pi): the accuracy drops by 0.1
    # at sigma = sqrt(0.1 / (a sqrt(2/pi))), the square root of the paper convention's sigma
    toy = _Toy([1.0, 4.0])
    sig = ms.pacbayes_sigma(toy, toy.accuracy, seed=3, noise="released")
    paper = 0.1 / (np.array([1.0, 4.0]) * math.sqrt(2 / math.pi))
    tol = 1e-2 / (np.array([1.0, 4.0]) * math.sqrt(2 / math.pi))
    assert np.all(np.abs(sig**2 - paper) <= 1.5 * tol)
    with pytest.raises(ValueError, match="noise"):
        ms.pacbayes_sigma(toy, toy.accuracy, noise="variance")  # type: ignore[arg-type]


# ------------------------------------------ the released code's formulas on the same weights
def _edelman(heads: int = 2, layers: int = 1) -> object:
    from genbounds.models.edelman import EdelmanTransformer

    torch.manual_seed(0)
    return EdelmanTransformer(d=5, k=3, heads=heads, layers=layers, n_models=2, seeds=[1, 2])


@pytest.mark.parametrize("layers", [1, 2])
def test_norm_measures_match_the_released_formulas_on_the_same_weights(layers: int) -> None:
    """log.prod.of.spec / log.sum.of.spec / fro re-typed from Dziugaite et al.'s released
    ``get_all_measures`` (every weight tensor reshaped to ``(shape[0], -1)``, squared spectral
    and Frobenius norms, ``d`` = number of weight tensors) on the Edelman model's own tensors."""
    from genbounds.norms import norm_table

    model = _edelman(layers=layers)
    view = model.view(initial_state={k: v.detach().clone() for k, v in model.state_dict().items()})
    table = norm_table(view)
    for j in range(2):
        row = {k: float(np.asarray(v)[j]) for k, v in table.items() if np.asarray(v).ndim == 1}
        q = ms.measure_quantities(row, {"m": 10})
        weights = []  # the model's own weight tensors, one matrix per layer and head, and w
        for i in range(layers):
            for h in range(2):
                weights += [model.W_QK[j, i, h], model.W_v[j, i, h], model.W_c[j, i, h]]
        weights.append(model.w[j])
        mats = [w.detach().double().reshape(w.shape[0], -1) for w in weights]
        spec = torch.stack([torch.linalg.matrix_norm(w, ord=2) ** 2 for w in mats])
        fro = torch.stack([torch.linalg.matrix_norm(w) ** 2 for w in mats])
        d = len(mats)
        assert q["n_matrices"] == d
        assert get("measures.log_prod_spec").evaluate(q).value == pytest.approx(
            float(spec.log().sum()), rel=1e-6)
        assert get("measures.log_sum_spec").evaluate(q).value == pytest.approx(
            math.log(d) + float(spec.log().sum()) / d, rel=1e-6)
        assert get("measures.log_sum_fro").evaluate(q).value == pytest.approx(
            math.log(d) + float(fro.log().sum()) / d, rel=1e-6)
        assert get("measures.param_norm").evaluate(q).value == pytest.approx(
            float(fro.sum()), rel=1e-6)  # param.norm = sum of squared Frobenius norms


@pytest.mark.parametrize("layers", [1, 2])
def test_path_norm_paths_is_the_squared_network_without_projections(
        layers: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The variant: the forward pass on squared weights with the unit-ball projections replaced
    by the identity is the sum over paths; with them (the peer's path norm) it is smaller."""
    import genbounds.models.edelman as ed

    model = _edelman(layers=layers)
    got = ms.path_norm_paths(model.view())
    peer = ms.path_norm(model, (4, 5))
    with torch.no_grad():
        for p in model.parameters():
            p.pow_(2)
    monkeypatch.setattr(ed, "project_rows_to_unit_ball", lambda y, *a, **k: y)
    with torch.no_grad():
        want = model(torch.ones(2, 1, 4, 5)).double().numpy()[:, 0]
    assert got == pytest.approx(want, rel=1e-5)
    assert np.all(peer < got)
    with pytest.raises(ValueError, match="view"):
        ms.path_norm_paths(object())  # type: ignore[arg-type]
    from genbounds.models.shallow_encoder import ShallowEncoder

    with pytest.raises(ValueError, match="W_O"):  # a capability, not a family, decides
        ms.path_norm_paths(ShallowEncoder(d=4, d_m=3, n_models=1, seeds=[0]).view())
    with pytest.raises(ValueError, match="input_shape"):
        ms.path_norm(model, (4, 0))
    with pytest.raises(ValueError, match="model"):
        ms.path_norm(object(), (4, 5))  # type: ignore[arg-type]


def test_training_margin_is_the_released_kthvalue_of_the_logit_difference() -> None:
    rng = np.random.default_rng(0)
    f = torch.tensor(rng.normal(size=(3, 37)))
    y = torch.tensor(rng.integers(0, 2, size=(3, 37)))
    got = ms.training_margin(f, y)
    for j in range(3):  # two-class logits (0, f): correct logit minus the other one
        logits = torch.stack([torch.zeros(37, dtype=f.dtype), f[j]], dim=1)
        correct = logits[torch.arange(37), y[j]]
        other = logits[torch.arange(37), 1 - y[j]]
        assert got[j] == pytest.approx(float((correct - other).kthvalue(37 // 10).values))
    with pytest.raises(ValueError, match="labels"):
        ms.training_margin(f, y + 2)
    with pytest.raises(ValueError, match="at least 10"):
        ms.training_margin(f[:, :5], y[:, :5])
    with pytest.raises(ValueError, match="outputs"):
        ms.training_margin(torch.full((2, 20), float("nan")), torch.zeros(2, 20))


def test_zero_margin_is_not_applicable() -> None:
    from genbounds.bounds.registry import NotApplicable

    q = ms.measure_quantities({**_row(), "margin.q10": 0.0}, {"m": 100})
    with pytest.raises(NotApplicable):
        get("measures.inverse_margin").evaluate(q)


# ------------------------------------------------------------ property tests: bad input
hyp = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as hs  # noqa: E402

_ANY = hs.one_of(hs.floats(allow_nan=True, allow_infinity=True), hs.integers(-5, 5),
                 hs.just(True), hs.text(max_size=2))


@settings(max_examples=150, deadline=None)
@given(key=hs.sampled_from(ms.MEASURE_KEYS), value=_ANY, which=hs.integers(0, 5))
def test_every_measure_is_finite_or_raises_naming_the_argument(key: str, value: object,
                                                               which: int) -> None:
    from genbounds.bounds.registry import NotApplicable

    q = ms.measure_quantities(_row(), {"m": 100})
    b = get(key)
    arg = b.needs[which % len(b.needs)]
    q[arg] = value
    try:
        v = b.evaluate(q).value
    except NotApplicable:
        return
    except ValueError as e:
        assert arg in str(e) or "overflow" in str(e), (key, arg, str(e))
        return
    assert math.isfinite(v)
