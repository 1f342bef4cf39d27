"""Sparse majority: the data of Trauger & Tewari's (2024) experiment, following the authors'
public script, including what the paper's Section 6 omits (Gram–Schmidt then ℓ1 normalisation of
the embeddings, [CLS] appended last, positional encoding with exponent ``i/d``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch

from genbounds.data.base import readonly
from genbounds.validation import check_float_dtype, check_int

__all__ = [
    "sinusoidal_positional_encoding",
    "sparse_majority_labels",
    "gram_schmidt_l1",
    "TokenTable",
    "SparseMajorityData",
    "SparseMajorityBatch",
    "make_sparse_majority",
    "make_sparse_majority_batch",
]



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
    n_positions = check_int(n_positions, "n_positions", 1)
    d = check_int(d, "d", 1)
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
        check_float_dtype(dtype)
        return TokenTable(*(torch.tensor(a, dtype=dtype, device=device) for a in (bit, cls, pos)))

    def possible_tokens(self) -> np.ndarray:
        """``(2, T + 1, d)`` float64: row ``t`` of table ``v`` is the token at position ``t``
        with bit ``v`` (row ``T``: the [CLS] token, the same in both tables). Every input row
        of this data set is one of these rows (norm bounds ``B_x`` are maxima over them)."""
        T = self.T
        tab = np.empty((2, T + 1, self.d))
        tab[:, :T] = self.embeddings[:2, None, :] + self.positional[None, :T]
        tab[:, T] = self.embeddings[2] + self.positional[T]
        return tab

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
        check_float_dtype(dtype)
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
    T = check_int(T, "T", 1)
    n_train = check_int(n_train, "n_train", 1)
    n_val = check_int(n_val, "n_val", 1)
    s = check_int(s, "s", 1)
    d = check_int(d, "d", 3)
    seed = check_int(seed, "seed", 0)
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
        bits_train=readonly(bits_train),
        y_train=readonly(sparse_majority_labels(bits_train, subset)),
        bits_val=readonly(bits_val),
        y_val=readonly(sparse_majority_labels(bits_val, subset)),
        subset=readonly(subset),
        embeddings=readonly(embeddings),
        positional=readonly(sinusoidal_positional_encoding(T + 1, d)),
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
    seeds_t = tuple(check_int(sd, f"seeds[{k}]", 0) for k, sd in enumerate(seeds))
    if not seeds_t:
        raise ValueError("seeds must be a non-empty sequence of integers; got an empty sequence")
    check_float_dtype(dtype)
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
