"""The fast Edelman block equals the reference (issue 38): outputs, gradients, maps, Z.

Tolerances (float64, random weights scaled so that row projections are active): relative
1e-12 of the largest entry for outputs, every gradient, attention maps, sensitivity matrices;
the fused layers' forward passes bitwise equal to the autograd ones; training (float64, Adam)
1e-10; a whole effective-rank unit in float32 within 1e-4 of the largest entry.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from genbounds.bounds.effective_rank import sensitivity_matrices
from genbounds.models import EdelmanTransformer
from genbounds.models.base import project_rows_to_unit_ball
from genbounds.models.edelman_fast import FastEdelmanTransformer, _FusedClsLayer, _FusedLayer

F64 = torch.float64
RTOL = 1e-12


def _close(a: torch.Tensor, b: torch.Tensor, rtol: float = RTOL) -> None:
    a, b = a.detach(), b.detach()
    scale = float(b.abs().max()) or 1.0
    err = float((a - b).abs().max())
    assert err <= rtol * scale, f"max difference {err:.3e} > {rtol:.0e} x {scale:.3e}"


def _pair(activation: str = "relu", layers: int = 2, cls_index: int = -1, heads: int = 3,
          scale: float = 2.5) -> tuple[EdelmanTransformer, FastEdelmanTransformer]:
    kw = dict(d=6, k=4, heads=heads, layers=layers, n_models=2, seeds=[5, 9], dtype=F64,
              activation=activation, cls_index=cls_index)
    ref, fast = EdelmanTransformer(**kw), FastEdelmanTransformer(**kw)  # type: ignore[arg-type]
    with torch.no_grad():  # larger weights: the row projections clip many rows
        for p, q in zip(ref.parameters(), fast.parameters(), strict=True):
            assert torch.equal(p, q)
            p.mul_(scale)
            q.mul_(scale)
    return ref, fast


def _inputs(seed: int = 0, B: int = 5, T: int = 7) -> torch.Tensor:
    X = torch.randn(2, B, T, 6, dtype=F64, generator=torch.Generator().manual_seed(seed))
    return 1.5 * X / X.norm(dim=-1, keepdim=True)


@pytest.mark.parametrize("activation", ["relu", "tanh", "identity"])
@pytest.mark.parametrize("layers", [1, 2, 3])
@pytest.mark.parametrize("cls_index", [-1, 0, 3])
def test_outputs_and_every_gradient_equal_the_reference(activation: str, layers: int,
                                                        cls_index: int) -> None:
    ref, fast = _pair(activation, layers, cls_index)
    X = _inputs(layers).requires_grad_(True)
    out_r, out_f = ref(X), fast(X)
    _close(out_f, out_r)
    w = torch.randn(out_r.shape, dtype=F64, generator=torch.Generator().manual_seed(1))
    g_r = torch.autograd.grad((out_r * w).sum(), [X, *ref.parameters()])
    g_f = torch.autograd.grad((out_f * w).sum(), [X, *fast.parameters()])
    for name, a, b in zip(["X", *dict(ref.named_parameters())], g_f, g_r, strict=True):
        assert float(b.abs().max()) > 0, name
        _close(a, b)
    with torch.no_grad():  # the no-grad path (autograd layers) gives bitwise the same
        assert torch.equal(fast(X), out_f.detach())


def test_the_projections_are_active_in_these_tests() -> None:
    """The equality above covers both branches of every row projection."""
    ref, _ = _pair()
    X = _inputs()
    with torch.no_grad():
        Y = X
        for i in range(ref.layers):
            A = ref.attention(X, i) if i == 0 else ref._layer(Y, i)[1]
            F = torch.einsum("kbhts,kbsd,khde->kbhte", A, Y, ref.W_v[:, i])
            norms = F.norm(dim=-1)
            assert (norms > 1).any() and (norms < 1).any()
            Y, _ = ref._layer(Y, i)


@pytest.mark.parametrize("layers", [1, 2, 3])
def test_attention_maps_sensitivities_and_block_equal_the_reference(layers: int) -> None:
    ref, fast = _pair(layers=layers)
    X = _inputs(7)
    A_r, A_f = ref.attention_maps(X), fast.attention_maps(X)
    _close(A_f, A_r)
    for i in range(layers):
        _close(fast.attention(X, i), ref.attention(X, i))
    _close(fast.block_output(X), ref.block_output(X))
    _close(fast.output_with_attention(X, A_f), fast(X))
    _close(fast.output_with_attention(X, A_r), ref.output_with_attention(X, A_r))
    Z_r, Z_f = sensitivity_matrices(ref, X), sensitivity_matrices(fast, X)
    _close(Z_f, Z_r)
    rows = [t for t in range(X.shape[2]) if t != X.shape[2] - 1]
    assert torch.all(Z_f[:, -1, :, :, rows] == 0)  # only the [CLS] row reaches the output
    with pytest.raises(ValueError, match="attention"):
        fast.output_with_attention(X, A_f[:, :, :1])
    with pytest.raises(ValueError, match="attention"):
        fast.output_with_attention(X, A_f * float("nan"))


def test_fused_layers_pass_gradcheck_and_match_the_autograd_layers() -> None:
    _, fast = _pair(heads=2)
    Y = _inputs(3, B=2, T=4)
    for act in ("relu", "tanh", "identity"):
        W = [p[:, 0].detach().clone().requires_grad_(True)
             for p in (fast.W_QK, fast.W_v, fast.W_c)]
        Yg = Y.clone().requires_grad_(True)
        assert torch.autograd.gradcheck(
            lambda y, a, b, c, act=act: _FusedLayer.apply(y, a, b, c, act), (Yg, *W))
        assert torch.autograd.gradcheck(
            lambda y, a, b, c, act=act: _FusedClsLayer.apply(y, a, b, c, act, 1), (Yg, *W))
    fast.activation = "relu"
    with torch.no_grad():
        full = _FusedLayer.apply(Y, fast.W_QK[:, 0], fast.W_v[:, 0], fast.W_c[:, 0], "relu")
        assert torch.equal(full, fast._layer(Y, 0)[0])
        cls = _FusedClsLayer.apply(Y, fast.W_QK[:, 1], fast.W_v[:, 1], fast.W_c[:, 1], "relu",
                                   fast.cls_index)
        assert torch.equal(cls, fast._cls_layer(Y, 1))
        _close(cls, project_rows_to_unit_ball(fast._layer(Y, 1)[0])[:, :, -1])


def test_same_parameters_view_and_single_model() -> None:
    ref = EdelmanTransformer(8, 4, heads=2, layers=2, n_models=3, seeds=[1, 2, 3])
    fast = FastEdelmanTransformer(8, 4, heads=2, layers=2, n_models=3, seeds=[1, 2, 3])
    for (n, p), (m, q) in zip(ref.named_parameters(), fast.named_parameters(), strict=True):
        assert n == m and torch.equal(p, q)
    for name, M in ref.view().matrices().items():
        assert torch.equal(fast.view().matrices()[name], M)
    X = torch.randn(3, 4, 5, 8)
    single = FastEdelmanTransformer(8, 4, heads=2, layers=2, n_models=1, seeds=[2])
    torch.testing.assert_close(fast(X)[1:2], single(X[1:2]), rtol=1e-5, atol=1e-6)
    assert isinstance(fast.extract(1), FastEdelmanTransformer)


def test_training_equals_the_reference() -> None:
    from genbounds.train import TrainConfig, train_ensemble

    X = _inputs(4, B=24)
    y = torch.randint(0, 2, (2, 24), generator=torch.Generator().manual_seed(2)) * 2 - 1
    finals = []
    for family, micro in ((EdelmanTransformer, None), (FastEdelmanTransformer, None),
                          (FastEdelmanTransformer, 7)):
        m = family(6, 4, heads=2, layers=2, n_models=2, seeds=[1, 2], dtype=F64)
        cfg = TrainConfig(optimizer="adam", lr=1e-2, momentum=0.0, max_epochs=6,
                          select_best="last", device="cpu", micro_batch_size=micro)
        res = train_ensemble(m, X, y, loss="logistic", config=cfg, seed=[0, 0])
        finals.append(res.final_state)
    for other in finals[1:]:
        for name, p in finals[0].items():
            _close(other[name], p, rtol=1e-10)


def test_effective_rank_unit_fast_equals_reference() -> None:
    from genbounds.experiments import effective_rank as ere

    u = ere.EffectiveRankUnit(T=6, d=8, k=4, heads=2, layers=2, m=32, n_test=40, epochs=4,
                              checkpoints=2, n_models=2, n_rank_inputs=8, n_z=8, device="cpu")
    fast, ref = ere.run_unit(u), ere.run_unit(u, reference=True)
    assert set(fast) == set(ref)
    for key, a in ref.items():
        b = fast[key]
        if key == "wall_time_s" or np.asarray(a).dtype.kind in "US":
            continue
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        assert a.shape == b.shape, key
        scale = max(float(np.nanmax(np.abs(a))), 1e-6) if a.size else 1.0
        assert np.allclose(b, a, rtol=0, atol=1e-4 * scale, equal_nan=True), key
    assert fast["ckpt_epoch"].shape == (2, 3)


def test_unit_model_is_the_fast_class() -> None:
    from genbounds.experiments import effective_rank as ere

    u = dataclasses.replace(ere.EffectiveRankConfig.quick(device="cpu").base, n_models=1)
    seeds = ere._seeds(u)
    assert type(ere._unit_model(u, seeds, torch.device("cpu"))) is FastEdelmanTransformer
    assert type(ere._unit_model(u, seeds, torch.device("cpu"), reference=True)) is \
        EdelmanTransformer
