"""Tests for genbounds.models: definitions against explicit formulas, Keras fidelity, shortcuts."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from genbounds.bounds.trauger_tewari_notation import tt_correspondence, tt_forward
from genbounds.models import (
    EdelmanTransformer,
    ShallowEncoder,
    SparseMajorityMHA,
    keras_compute_fans,
    keras_glorot_uniform_limit,
    project_rows_to_unit_ball,
)

F64 = torch.float64


def _perturb(model: torch.nn.Module, scale: float = 0.3, seed: int = 0) -> None:
    """Make every parameter (biases included) generic, so that no term vanishes."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(scale * torch.randn(p.shape, generator=g, dtype=p.dtype))


# ------------------------------------------------------------------------------------------
# Keras initialisers
# ------------------------------------------------------------------------------------------


def test_keras_compute_fans_matches_keras_rule() -> None:
    assert keras_compute_fans((5,)) == (5, 5)
    assert keras_compute_fans((64, 32)) == (64, 32)
    # MultiHeadAttention query/key/value kernel (d, heads, key_dim) = (64, 2, 64)
    assert keras_compute_fans((64, 2, 64)) == (2 * 64, 64 * 64)
    # output kernel (heads, key_dim, d) = (2, 64, 64)
    assert keras_compute_fans((2, 64, 64)) == (64 * 2, 64 * 2)
    assert keras_glorot_uniform_limit((64, 2, 64)) == pytest.approx(math.sqrt(6 / 4224))
    assert keras_glorot_uniform_limit((2, 64, 64)) == pytest.approx(math.sqrt(6 / 256))
    assert keras_glorot_uniform_limit((64, 64)) == pytest.approx(math.sqrt(6 / 128))
    with pytest.raises(ValueError, match="shape"):
        keras_compute_fans((3, 0))


def test_sparse_majority_init_follows_keras_defaults() -> None:
    m = SparseMajorityMHA(d=64, heads=2, key_dim=64, n_models=4, seeds=[0, 1, 2, 3])
    lim_qkv = math.sqrt(6 / (64 * 2 + 64 * 64))
    lim_out = math.sqrt(6 / (2 * 64 + 2 * 64))
    lim_dense = math.sqrt(6 / 128)
    for name, lim in [("query_kernel", lim_qkv), ("key_kernel", lim_qkv),
                      ("value_kernel", lim_qkv), ("output_kernel", lim_out),
                      ("dense_kernel", lim_dense)]:
        w = getattr(m, name).detach()
        assert w.abs().max() <= lim
        assert w.abs().max() > 0.98 * lim  # the whole interval is used
        # uniform on [-lim, lim]: variance lim^2 / 3
        assert w.var().item() == pytest.approx(lim**2 / 3, rel=0.05)
    for name in ("query_bias", "key_bias", "value_bias", "output_bias", "dense_bias",
                 "head_bias"):
        assert torch.count_nonzero(getattr(m, name)) == 0
    assert m.head_kernel.detach().std().item() == pytest.approx(0.05, rel=0.15)
    shapes = {n: tuple(p.shape) for n, p in m.named_parameters()}
    assert shapes["query_kernel"] == (4, 64, 2, 64)
    assert shapes["query_bias"] == (4, 2, 64)
    assert shapes["output_kernel"] == (4, 2, 64, 64)
    assert shapes["head_kernel"] == (4, 64, 2)
    n_params = sum(p[0].numel() for p in m.parameters())
    assert n_params == 3 * (64 * 128 + 128) + 128 * 64 + 64 + 64 * 64 + 64 + 64 * 2 + 2


@pytest.mark.parametrize(
    "build",
    [
        lambda K, seeds: ShallowEncoder(6, 5, n_models=K, seeds=seeds),
        lambda K, seeds: EdelmanTransformer(6, 4, heads=2, layers=2, n_models=K, seeds=seeds),
        lambda K, seeds: SparseMajorityMHA(6, 2, 3, n_models=K, seeds=seeds),
    ],
    ids=["shallow", "edelman", "sparse_majority"],
)
def test_model_k_of_ensemble_is_the_single_model(build) -> None:  # noqa: ANN001
    ens = build(3, [11, 22, 33])
    single = build(1, [22])
    for (name, p), (_, q) in zip(ens.named_parameters(), single.named_parameters(),
                                 strict=True):
        assert torch.equal(p[1:2], q), name
    X = torch.randn(3, 4, 7, 6)
    assert torch.allclose(ens(X)[1:2], single(X[1:2]), atol=1e-6)
    extracted = ens.extract(1)
    assert extracted.n_models == 1 and extracted.seeds == [22]
    assert torch.allclose(extracted(X[1:2]), single(X[1:2]), atol=1e-6)
    state = ens.state_for_model(2)
    fresh = build(1, [0])
    fresh.load_state_dict(state)
    assert torch.allclose(fresh(X[2:3]), ens(X)[2:3], atol=1e-6)


def test_float32_and_float64_models_agree_up_to_rounding() -> None:
    a = SparseMajorityMHA(8, 2, 4, n_models=2, seeds=[1, 2], dtype=torch.float32)
    b = SparseMajorityMHA(8, 2, 4, n_models=2, seeds=[1, 2], dtype=F64)
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.allclose(p.double(), q, atol=1e-7)


# ------------------------------------------------------------------------------------------
# SparseMajorityMHA: CLS-only shortcut, full attention, Keras semantics
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls_index", [-1, 0, 3])
def test_cls_shortcut_equals_full_attention_values_and_gradients(cls_index: int) -> None:
    torch.manual_seed(0)
    m = SparseMajorityMHA(d=8, heads=2, key_dim=5, n_models=3, seeds=[1, 2, 3],
                          cls_index=cls_index, dtype=F64)
    _perturb(m)  # nonzero biases, larger weights: every term of the model matters
    X = torch.randn(3, 4, 7, 8, dtype=F64)
    fast, full = m(X), m.forward_full(X)
    assert fast.shape == (3, 4, 2)
    torch.testing.assert_close(fast, full, rtol=1e-12, atol=1e-12)
    w = torch.randn(3, 4, 2, dtype=F64)
    g_fast = torch.autograd.grad((fast * w).sum(), list(m.parameters()))
    g_full = torch.autograd.grad((m.forward_full(X) * w).sum(), list(m.parameters()))
    for (name, _), a, b in zip(m.named_parameters(), g_fast, g_full, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12, msg=name)
    # gradient with respect to the input too
    Xa = X.clone().requires_grad_(True)
    Xb = X.clone().requires_grad_(True)
    (gx_a,) = torch.autograd.grad((m(Xa) * w).sum(), Xa)
    (gx_b,) = torch.autograd.grad((m.forward_full(Xb) * w).sum(), Xb)
    torch.testing.assert_close(gx_a, gx_b, rtol=1e-10, atol=1e-12)


def test_attention_is_row_stochastic_and_matches_cls_row() -> None:
    m = SparseMajorityMHA(d=8, heads=2, key_dim=4, n_models=2, seeds=[0, 1], dtype=F64)
    _perturb(m)
    X = torch.randn(2, 3, 6, 8, dtype=F64)
    A = m.attention(X)
    assert A.shape == (2, 3, 2, 6, 6)
    assert (A >= 0).all()
    torch.testing.assert_close(A.sum(-1), torch.ones(2, 3, 2, 6, dtype=F64))
    torch.testing.assert_close(m.cls_attention(X), A[:, :, :, -1, :])


def test_full_attention_matches_torch_multihead_attention() -> None:
    """Independent reference: torch.nn.MultiheadAttention with the same weights.

    torch's module needs heads * key_dim = d; with that, it computes exactly Keras'
    MultiHeadAttention (scaled dot product per head, biases, output projection).
    """
    d, H, kd, K = 8, 2, 4, 2
    m = SparseMajorityMHA(d=d, heads=H, key_dim=kd, n_models=K, seeds=[3, 4], dtype=F64)
    _perturb(m)
    X = torch.randn(K, 5, 7, d, dtype=F64)
    mha_ours, _ = m.mha_full(X)
    for k in range(K):
        ref = torch.nn.MultiheadAttention(d, H, batch_first=True, dtype=F64)
        with torch.no_grad():
            wq = m.query_kernel[k].reshape(d, H * kd).T
            wk = m.key_kernel[k].reshape(d, H * kd).T
            wv = m.value_kernel[k].reshape(d, H * kd).T
            ref.in_proj_weight.copy_(torch.cat([wq, wk, wv]))
            ref.in_proj_bias.copy_(torch.cat([m.query_bias[k].reshape(-1),
                                              m.key_bias[k].reshape(-1),
                                              m.value_bias[k].reshape(-1)]))
            ref.out_proj.weight.copy_(m.output_kernel[k].reshape(H * kd, d).T)
            ref.out_proj.bias.copy_(m.output_bias[k])
        out, attn = ref(X[k], X[k], X[k], average_attn_weights=False)
        torch.testing.assert_close(mha_ours[k], out, rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(m.attention(X)[k], attn, rtol=1e-10, atol=1e-12)


def test_readout_is_relu_dense_then_cls_linear() -> None:
    m = SparseMajorityMHA(d=6, heads=1, key_dim=3, n_models=1, seeds=[0], dtype=F64)
    _perturb(m)
    X = torch.randn(1, 2, 4, 6, dtype=F64)
    mha, _ = m.mha_full(X)
    hidden = torch.relu(mha[0, :, -1]) @ m.dense_kernel[0] + m.dense_bias[0]
    expected = hidden @ m.head_kernel[0] + m.head_bias[0]
    torch.testing.assert_close(m(X)[0], expected)


def test_bits_path_in_float32_at_the_paper_size_is_within_round_off() -> None:
    """The bits path reassociates products (attended token = C R, one (T+3)-row table per
    model, see SparseMajorityMHA._forward_bits); in float32 at the paper's sizes (d = key_dim =
    64, 2 heads, T = 20) it agrees with full attention to 1e-5 of the largest logit and, for
    every parameter whose gradient is not identically zero, to 1e-4 of the largest gradient
    entry (the key bias's exact gradient is 0: softmax ignores a shift common to all keys)."""
    from genbounds.data import make_sparse_majority_batch

    batch = make_sparse_majority_batch(20, [4, 5], n_train=64, n_val=4, s=9, d=64)
    m = SparseMajorityMHA(d=64, heads=2, key_dim=64, n_models=2, seeds=[4, 5])
    _perturb(m)
    m.set_token_tables(batch.bit_embeddings, batch.cls_embeddings, batch.positional)
    fast, full = m(batch.bits_train.float()), m.forward_full(batch.X_train)
    assert float((fast - full).detach().abs().max()) <= 1e-5 * float(full.detach().abs().max())
    names = [n for n, _ in m.named_parameters()]
    g_fast = torch.autograd.grad(fast.square().sum(), list(m.parameters()))
    g_full = torch.autograd.grad(full.square().sum(), list(m.parameters()))
    scale = max(float(b.abs().max()) for b in g_full)
    for n, a, b in zip(names, g_fast, g_full, strict=True):
        if n == "key_bias":  # both are round-off around 0
            assert max(float(a.abs().max()), float(b.abs().max())) <= 1e-4 * scale
            continue
        assert float((a - b).abs().max()) <= 1e-4 * float(b.abs().max()), n


def test_bits_path_equals_tokens_and_full_attention() -> None:
    from genbounds.data import make_sparse_majority_batch

    batch = make_sparse_majority_batch(12, [1, 2, 3], n_train=10, n_val=4, s=3, d=8,
                                       dtype=F64)
    m = SparseMajorityMHA(d=8, heads=2, key_dim=5, n_models=3, seeds=[1, 2, 3], dtype=F64)
    _perturb(m)
    m.set_token_tables(batch.bit_embeddings, batch.cls_embeddings, batch.positional)
    bits = batch.bits_train.to(F64)
    assert torch.equal(m.tokens_from_bits(bits), batch.X_train)  # data.tokens exactly
    fast, full = m(bits), m.forward_full(batch.X_train)
    torch.testing.assert_close(fast, full, rtol=1e-12, atol=1e-12)
    g_fast = torch.autograd.grad(fast.square().sum(), list(m.parameters()))
    g_full = torch.autograd.grad(m.forward_full(batch.X_train).square().sum(),
                                 list(m.parameters()))
    for a, b in zip(g_fast, g_full, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
    # the tables are per-model buffers: extraction keeps model k's table
    one = m.extract(2)
    torch.testing.assert_close(one(bits[2:3]), fast[2:3])
    with pytest.raises(ValueError, match="positions"):
        m(bits[:, :, :5])
    bare = SparseMajorityMHA(d=8, heads=2, key_dim=5, n_models=3, seeds=[1, 2, 3])
    with pytest.raises(ValueError, match="set_token_tables"):
        bare(bits.float())
    with pytest.raises(ValueError, match="bit_embeddings"):
        bare.set_token_tables(batch.bit_embeddings[:2], batch.cls_embeddings, batch.positional)


def test_tt_correspondence_reproduces_the_model_exactly() -> None:
    m = SparseMajorityMHA(d=8, heads=2, key_dim=5, n_models=2, seeds=[5, 6], dtype=F64)
    _perturb(m)
    X = torch.randn(2, 3, 9, 8, dtype=F64)
    tt = tt_correspondence(m.view(), augment_bias=True)
    assert tt["W_QK"].shape == (2, 2, 9, 9)
    assert tt["W_v"].shape == (2, 2, 9, 8)
    assert tt["W_c"].shape == (2, 8, 8)
    assert tt["w"].shape == (2, 8, 2)
    assert tt["offset"].shape == (2, 2)
    torch.testing.assert_close(tt_forward(tt, X), m(X), rtol=1e-10,
                               atol=1e-12)
    # without biases (fresh Keras init: all biases are zero) the plain kernels suffice
    fresh = SparseMajorityMHA(d=8, heads=2, key_dim=5, n_models=2, seeds=[5, 6], dtype=F64)
    tt0 = tt_correspondence(fresh.view(), augment_bias=False)
    assert tt0["W_QK"].shape == (2, 2, 8, 8)
    torch.testing.assert_close(
        tt_forward(tt0, X, augment_bias=False), fresh(X), rtol=1e-10,
        atol=1e-12,
    )
    # W_QK is W_Q W_K^T / sqrt(key_dim) in the row convention of TT Section 2.6
    Wq = fresh.query_kernel[0, :, 1, :]
    Wk = fresh.key_kernel[0, :, 1, :]
    torch.testing.assert_close(tt0["W_QK"][0, 1], Wq @ Wk.T / math.sqrt(5))


# ------------------------------------------------------------------------------------------
# ShallowEncoder and EdelmanTransformer against their papers' formulas
# ------------------------------------------------------------------------------------------


def test_shallow_encoder_matches_paper_formula() -> None:
    d, d_m, d_s = 5, 7, 6
    m = ShallowEncoder(d, d_m, n_models=2, seeds=[0, 1], dtype=F64)
    X = torch.randn(2, 3, d_s, d, dtype=F64)
    out = m(X)
    assert out.shape == (2, 3)
    for k in range(2):
        WQ, WK, WV, wO = m.W_Q[k], m.W_K[k], m.W_V[k], m.w_O[k]
        for n in range(3):
            Xn = X[k, n]
            total = torch.zeros(d_m, dtype=F64)
            for i in range(d_s):
                beta = torch.softmax(Xn @ WK.T @ WQ @ Xn[i] / math.sqrt(d_m), dim=0)
                total += torch.relu(WV @ Xn.T @ beta)
            torch.testing.assert_close(out[k, n], wO @ total / d_s)
    A = m.attention(X)
    assert A.shape == (2, 3, 1, d_s, d_s)
    torch.testing.assert_close(A.sum(-1), torch.ones(2, 3, 1, d_s, dtype=F64))


def test_shallow_encoder_lecun_init() -> None:
    m = ShallowEncoder(64, 256, n_models=2, seeds=[0, 1])
    for name in ("W_Q", "W_K", "W_V"):
        assert getattr(m, name).shape == (2, 256, 64)
        assert getattr(m, name).detach().var().item() == pytest.approx(1 / 64, rel=0.05)
    assert m.w_O.detach().var().item() == pytest.approx(1 / 256, rel=0.2)


def test_row_projection() -> None:
    Y = torch.tensor([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    P = project_rows_to_unit_ball(Y)
    torch.testing.assert_close(P, torch.tensor([[0.6, 0.8], [0.3, 0.4], [0.0, 0.0]]))


def test_edelman_transformer_matches_block_definition() -> None:
    d, k, H, L, T = 5, 3, 2, 2, 6
    m = EdelmanTransformer(d, k, heads=H, layers=L, n_models=2, seeds=[0, 1], dtype=F64,
                           cls_index=0)
    X = torch.randn(2, 3, T, d, dtype=F64)
    out = m(X)
    assert out.shape == (2, 3)

    def proj(Y: torch.Tensor) -> torch.Tensor:
        return Y / torch.clamp(Y.norm(dim=-1, keepdim=True), min=1.0)

    for kk in range(2):
        for n in range(3):
            Y = X[kk, n]
            for i in range(L):
                acc = torch.zeros(T, d, dtype=F64)
                for h in range(H):
                    Wqk = m.W_QK[kk, i, h]
                    f = torch.softmax(Y @ Wqk @ Y.T, dim=-1) @ Y @ m.W_v[kk, i, h]
                    acc += torch.relu(proj(f)) @ m.W_c[kk, i, h]
                Y = proj(acc)
            torch.testing.assert_close(out[kk, n], m.w[kk] @ Y[0])
    names = m.view().matrices()
    assert names["layer1.head0.W_QK"].shape == (2, d, d)
    assert names["layer0.head1.W_V"].shape == (2, k, d)  # column orientation: W_v^T
    assert names["layer0.head1.W_O"].shape == (2, d, k)  # W_c^T
    torch.testing.assert_close(names["layer0.head1.W_V"], m.W_v[:, 0, 1].mT)
    A = m.attention(X, layer=1)
    assert A.shape == (2, 3, H, T, T)
    torch.testing.assert_close(A.sum(-1), torch.ones(2, 3, H, T, dtype=F64))
    # every intermediate row lies in the unit ball
    assert (m.block_output(X).norm(dim=-1) <= 1 + 1e-12).all()


# ------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------


def test_bad_construction_arguments_raise() -> None:
    with pytest.raises(ValueError, match="n_models"):
        SparseMajorityMHA(n_models=0)
    with pytest.raises(ValueError, match="seeds"):
        SparseMajorityMHA(n_models=2, seeds=[1])
    with pytest.raises(ValueError, match="seeds"):
        ShallowEncoder(4, 4, n_models=1, seeds=[-1])
    with pytest.raises(ValueError, match="d_m"):
        ShallowEncoder(4, 0)
    with pytest.raises(ValueError, match="activation"):
        EdelmanTransformer(4, 2, activation="gelu!")
    with pytest.raises(ValueError, match="key_dim"):
        SparseMajorityMHA(d=4, heads=1, key_dim=0)


def test_bad_inputs_raise() -> None:
    m = SparseMajorityMHA(d=4, heads=1, key_dim=2, n_models=2, seeds=[0, 1])
    with pytest.raises(ValueError, match="X must have shape"):
        m(torch.randn(2, 3, 4))  # bits without tables are refused with a clear message
    with pytest.raises(ValueError, match="leading size K = 2"):
        m(torch.randn(3, 1, 5, 4))
    with pytest.raises(ValueError, match="last dimension d = 4"):
        m(torch.randn(2, 1, 5, 3))
    with pytest.raises(ValueError, match="X must be a torch.Tensor"):
        m(np.zeros((2, 1, 5, 4)))
    e = EdelmanTransformer(4, 2, n_models=1, cls_index=7)
    with pytest.raises(ValueError, match="cls_index"):
        e(torch.randn(1, 2, 5, 4))
    with pytest.raises(ValueError, match="layer"):
        e.attention(torch.randn(1, 2, 9, 4), layer=3)
    with pytest.raises(ValueError, match="k must be"):
        m.state_for_model(2)


def test_benchmark_plain_model_is_the_same_function() -> None:
    """The benchmark's one-model baseline computes exactly SparseMajorityMHA (same weights)."""
    from genbounds.bench import PlainSparseMajorityMHA

    d, H, kd = 8, 2, 4
    m = SparseMajorityMHA(d=d, heads=H, key_dim=kd, n_models=1, seeds=[0], dtype=F64)
    _perturb(m)
    plain = PlainSparseMajorityMHA(d, H, kd).to(F64)
    with torch.no_grad():
        for lin, name in ((plain.q, "query"), (plain.k, "key"), (plain.v, "value")):
            lin.weight.copy_(getattr(m, f"{name}_kernel")[0].reshape(d, H * kd).T)
            lin.bias.copy_(getattr(m, f"{name}_bias")[0].reshape(-1))
        plain.o.weight.copy_(m.output_kernel[0].reshape(H * kd, d).T)
        plain.o.bias.copy_(m.output_bias[0])
        plain.dense.weight.copy_(m.dense_kernel[0].T)
        plain.dense.bias.copy_(m.dense_bias[0])
        plain.head.weight.copy_(m.head_kernel[0].T)
        plain.head.bias.copy_(m.head_bias[0])
    X = torch.randn(1, 5, 7, d, dtype=F64)
    torch.testing.assert_close(plain(X[0]), m(X)[0], rtol=1e-10, atol=1e-12)
