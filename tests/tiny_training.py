"""A tiny ensemble and data set for the training and checkpoint tests, and a checkpoint whose
time budget runs out on cue (shared by several test files)."""

from __future__ import annotations

import torch

from genbounds.models import SparseMajorityMHA
from genbounds.train import UnitCheckpoint

F64 = torch.float64
D, H, KD, T = 6, 2, 3, 5


def tiny_mha(seeds: list[int]) -> SparseMajorityMHA:
    """One small attention model per seed, float64."""
    return SparseMajorityMHA(d=D, heads=H, key_dim=KD, n_models=len(seeds), seeds=seeds,
                             dtype=F64, final_init_std=0.5)


def tiny_data(K: int, N: int, seed: int = 0, n_val: int = 15) -> tuple[torch.Tensor, ...]:
    """``(X, y, X_val, y_val)`` for ``K`` models: ``N`` (and ``n_val``) sequences of ``T``
    tokens; a learnable rule, the sign of one coordinate of the first token."""
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(K, N, T, D, generator=g, dtype=F64)
    y = (X[:, :, 0, 0] > 0).long()
    Xv = torch.randn(K, n_val, T, D, generator=g, dtype=F64)
    yv = (Xv[:, :, 0, 0] > 0).long()
    return X, y, Xv, yv


def out_of_time_at(ckpt: UnitCheckpoint, k: int) -> dict[str, int]:
    """Make ``ckpt`` save and run out of time at its ``k``-th chance to save (a deadline in
    the past after ``k`` epoch boundaries); returns the counter of those chances."""
    seen = {"n": 0}

    def should_save() -> bool:
        seen["n"] += 1
        return seen["n"] >= k

    ckpt.should_save = should_save  # type: ignore[method-assign]
    ckpt.out_of_time = lambda: seen["n"] >= k  # type: ignore[method-assign]
    return seen
