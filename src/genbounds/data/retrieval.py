"""Fixed-position retrieval: a sequence task whose ideal attention has rank one.

Each input is a sequence of ``T`` bit tokens followed by a [CLS] token; the label is the bit at
one hidden position ``j*`` (the same for the whole data set, drawn once per seed). A model
that reads the [CLS] row solves the task exactly when that row puts all its mass on ``j*``;
the attention matrix in which *every* row does so is ``1 e_{j*}^T``, of rank one and effective
rank one. The task is the low-rank counterpart of sparse majority (``s`` relevant positions)
for the effective-rank chapter: a capacity measure built on the effective rank of attention
should be smallest here.

Tokens (rows, dimension ``d``): ``x_t = (b_t e + p_t) / sqrt(2)`` for ``t < T`` with bit value
``b_t in {-1, +1}``, and ``x_T = (c + p_T) / sqrt(2)`` for [CLS]. The vectors ``e``, ``c`` and the
positional vectors ``p_0..p_T`` are orthonormal when ``d >= T + 3`` (QR of a Gaussian matrix)
and independent uniformly random unit vectors otherwise (nearly orthogonal for large ``d``); in
the orthonormal case every token has l2 norm exactly 1. Labels are ``y = b_{j*} in {-1, +1}``.
All randomness comes from ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from genbounds.data.base import readonly
from genbounds.validation import check_float_dtype, check_int

__all__ = ["RetrievalData", "make_retrieval"]



@dataclass(frozen=True, eq=False)
class RetrievalData:
    """One retrieval data set (training and held-out test split).

    Attributes
    ----------
    X_train, X_test : np.ndarray
        ``(n, T + 1, d)`` float64 tokens, [CLS] last.
    y_train, y_test : np.ndarray
        ``(n,)`` int64 labels in {-1, +1}: the bit at ``target``.
    bits_train, bits_test : np.ndarray
        ``(n, T)`` int64 bits in {-1, +1}.
    target : int
        The hidden position ``j*``.
    orthonormal : bool
        Whether ``e``, ``c`` and the positional vectors are exactly orthonormal (``d >= T + 3``).
    seed : int
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    bits_train: np.ndarray
    bits_test: np.ndarray
    target: int
    orthonormal: bool
    seed: int

    @property
    def T(self) -> int:
        """Number of bit tokens ([CLS] not counted)."""
        return int(self.bits_train.shape[1])

    def tensors(
        self, dtype: torch.dtype = torch.float32, device: torch.device | str | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(X_train, y_train, X_test, y_test)`` as tensors (X in ``dtype``, y int64)."""
        check_float_dtype(dtype)
        return (torch.tensor(self.X_train, dtype=dtype, device=device),
                torch.tensor(self.y_train, device=device),
                torch.tensor(self.X_test, dtype=dtype, device=device),
                torch.tensor(self.y_test, device=device))


def _directions(rng: np.random.Generator, count: int, d: int) -> tuple[np.ndarray, bool]:
    G = rng.standard_normal((d, count))
    if d >= count:
        Q, _ = np.linalg.qr(G)
        return Q.T.copy(), True
    return (G / np.linalg.norm(G, axis=0, keepdims=True)).T.copy(), False


def make_retrieval(T: int, n_train: int, n_test: int, d: int, seed: int = 0) -> RetrievalData:
    """Draw a retrieval data set (see the module docstring).

    Parameters
    ----------
    T : int
        Number of bit tokens, >= 1.
    n_train, n_test : int
        Sizes of the training and the held-out test split (>= 1), drawn independently.
    d : int
        Token dimension, >= 2.
    seed : int
        Seed of the numpy Generator; it draws, in order, ``j*``, the directions, the training
        bits and the test bits.
    """
    T = check_int(T, "T", 1)
    n_train = check_int(n_train, "n_train", 1)
    n_test = check_int(n_test, "n_test", 1)
    d = check_int(d, "d", 2)
    seed = check_int(seed, "seed", 0)
    rng = np.random.default_rng(seed)
    target = int(rng.integers(0, T))
    dirs, ortho = _directions(rng, T + 3, d)
    e, c, pos = dirs[0], dirs[1], dirs[2:]

    def draw(n: int) -> tuple[np.ndarray, np.ndarray]:
        bits = rng.integers(0, 2, size=(n, T)).astype(np.int64) * 2 - 1
        X = np.empty((n, T + 1, d))
        X[:, :T] = (bits[..., None] * e + pos[None, :T]) / np.sqrt(2.0)
        X[:, T] = (c + pos[T]) / np.sqrt(2.0)
        return X, bits

    X_tr, b_tr = draw(n_train)
    X_te, b_te = draw(n_test)
    return RetrievalData(
        X_train=readonly(X_tr), y_train=readonly(b_tr[:, target].copy()),
        X_test=readonly(X_te), y_test=readonly(b_te[:, target].copy()),
        bits_train=readonly(b_tr), bits_test=readonly(b_te), target=target,
        orthonormal=ortho, seed=seed)
