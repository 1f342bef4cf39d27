"""``genbounds-bench``: the performance figures of the book, as ratios measured in one run.

Every figure is a ratio of two timings taken in the same process, minutes apart, with the
absolute numbers and the 1-minute load average printed beside it (on a shared machine the
absolute times are noisy; the ratios are what count). Sections (``--sections``):

``training``, ``validation``
    Figures 1 and the validation cost below (the ensemble engine against the plain
    one-model-at-a-time loop, K up to 50).
``epoch``
    Figure 2: one whole epoch of the authors' protocol (300 training samples in batches of 128,
    then the validation pass on 10,000 samples) per model: a straightforward PyTorch port of
    the authors' Keras loop (:class:`PlainSparseMajorityMHA`, ``torch.optim.SGD``, full
    attention, validation in batches of 128 like Keras) against
    :func:`genbounds.train.train_ensemble` with K models, [CLS]-only attention, token tables,
    no-grad validation in chunks of 2,048.
``svd``
    Figure 3: singular values of ``n`` attention matrices (row-stochastic, 201 x 201, float32):
    one batched ``torch.linalg.svdvals`` call (in chunks of 1,000) against a NumPy loop of
    ``numpy.linalg.svd(compute_uv=False)``; the largest difference of the two is printed.
``roofline``
    Figure 4: achieved GFLOP/s of a training epoch (matrix-product FLOPs of forward and backward
    counted by :class:`torch.utils.flop_counter.FlopCounterMode`, divided by the measured
    marginal seconds per epoch) against this machine's measured float32 matrix-multiply
    throughput (:func:`genbounds.estimates.matmul_gflops`, 1024 x 1024 products on CPU), for the
    sparse-majority model (K = 5, T = 200, minibatches of 128) and the shallow encoder
    (d_m = 1024, N = 400 full batch, K = 3).
``edelman``
    The effective-rank study's model at its paper unit's sizes (T = 32 tokens + [CLS], d = 64,
    k = 32, 4 heads, 2 layers, m = 1,024 training sequences, 5 models, float32): one
    full-batch forward + backward (the engine's training step) of
    :class:`~genbounds.models.edelman_fast.FastEdelmanTransformer` against today's reference
    :class:`~genbounds.models.EdelmanTransformer`, interleaved in the same process, next to the
    machine's measured matrix-multiply rate (:func:`bench_edelman`); with the cost of one
    checkpoint's measurements and of the final ones, the time of a whole paper unit and its
    arithmetic at that rate.
``protocol`` (not in the default set: a few minutes on a CPU)
    The whole sparse-majority protocol (every run of every T, 50 runs, 10,000 validation
    samples), seconds per epoch: the fused engine (:mod:`genbounds.train.fused_protocol`, CUDA
    graphs on a GPU) against today's per-T ensembles, in the same process
    (:func:`bench_protocol`).
``notebooks`` (not in the default set: minutes each)
    Figure 5: wall time of every ``notebooks/*.md`` at quick scale, executed under nbval
    exactly as ``make test`` does.

The original two tables, measured on the authors' sparse-majority setting (d = 64,
2 heads of key dimension 64, 300 training samples, batch 128, SGD with momentum 0.9):

1. **Training throughput**, in model-epochs per second (training steps only, no validation),
   for each sequence length ``T`` and ensemble size ``K``:

   * ``simple``: the straightforward way, one model at a time: a plain ``nn.Module`` with
     ``nn.Linear`` query/key/value/output projections and full self-attention over all
     ``T + 1`` rows (``torch.nn.functional.scaled_dot_product_attention``), trained with
     ``torch.optim.SGD`` on materialised token tensors. Its rate does not depend on K (K models
     take K times as long), so it is measured on one model;
   * ``engine_tokens``: :func:`genbounds.train.train_ensemble` on
     :class:`genbounds.models.SparseMajorityMHA` with K models batched and the exact
     [CLS]-only forward, on materialised tokens ``(K, N, T+1, d)``;
   * ``engine_bits``: the same engine and model reading bits ``(K, N, T)`` and assembling the
     tokens from the embedding and positional tables (exact, see
     :meth:`~genbounds.models.SparseMajorityMHA.set_token_tables`).

2. **Validation cost**, in seconds per 1,000 validation samples per model (no grad), for
   the same three variants (``simple`` in batches of 128 like Keras' default, the engine in
   its large no-grad batches, ``K_val`` models at once).

Prints the tables with speed-up ratios and writes everything as JSON to ``--out``. The
default run (the default sections) takes about seven to ten minutes on the loaded
2-core CPU.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from genbounds.data import make_sparse_majority_batch
from genbounds.models import SparseMajorityMHA
from genbounds.train import (
    InputSet,
    TrainConfig,
    evaluate_models,
    resolve_device,
    train_ensemble,
)
from genbounds.validation import check_int

__all__ = [
    "PlainSparseMajorityMHA", "SECTIONS", "bench_edelman", "bench_epoch", "bench_notebooks",
    "bench_protocol", "bench_ranking", "bench_roofline",
    "bench_svd", "granulated_tau_loop", "main", "measure_epochs_to_fit", "run_benchmark",
]

#: The sections of a run (``notebooks`` only when asked for).
SECTIONS = ("training", "validation", "epoch", "svd", "roofline", "edelman", "ranking",
            "notebooks", "fit", "protocol")
DEFAULT_SECTIONS = ("training", "validation", "epoch", "svd", "roofline", "edelman", "ranking")

D, HEADS, KEY_DIM, N_TRAIN, BATCH, S = 64, 2, 64, 300, 128, 9


class PlainSparseMajorityMHA(nn.Module):
    """The authors' model written the plain way (one model, full attention over every row).

    ``nn.Linear`` projections ``d -> heads * key_dim`` with biases, scaled dot-product
    attention for every query row, output projection, ReLU, ``Dense(d)``, [CLS] (last) row to
    2 logits. The reference for the benchmark's "simple" column.
    """

    def __init__(self, d: int = D, heads: int = HEADS, key_dim: int = KEY_DIM) -> None:
        super().__init__()
        self.heads, self.key_dim = heads, key_dim
        self.q = nn.Linear(d, heads * key_dim)
        self.k = nn.Linear(d, heads * key_dim)
        self.v = nn.Linear(d, heads * key_dim)
        self.o = nn.Linear(heads * key_dim, d)
        self.dense = nn.Linear(d, d)
        self.head = nn.Linear(d, 2)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        B, T, _ = X.shape

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(B, T, self.heads, self.key_dim).transpose(1, 2)

        att = F.scaled_dot_product_attention(split(self.q(X)), split(self.k(X)),
                                             split(self.v(X)))
        mha = self.o(att.transpose(1, 2).reshape(B, T, self.heads * self.key_dim))
        return self.head(self.dense(torch.relu(mha))[:, -1])


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed(fn: Callable[[int], None], device: torch.device, target_s: float,
           min_reps: int = 2) -> tuple[float, int]:
    """Seconds per repetition of ``fn(reps)``, with reps chosen to last about ``target_s``."""
    fn(1)  # warm-up (allocations, lazy initialisation)
    _sync(device)
    t0 = time.perf_counter()
    fn(1)
    _sync(device)
    one = max(time.perf_counter() - t0, 1e-6)
    reps = max(min_reps, int(math.ceil(target_s / one)))
    t0 = time.perf_counter()
    fn(reps)
    _sync(device)
    return (time.perf_counter() - t0) / reps, reps


def simple_train_epochs(X: torch.Tensor, y: torch.Tensor, device: torch.device,
                        seed: int = 0) -> Callable[[int], None]:
    """``epochs(n)``: ``n`` epochs of the simple way (one :class:`PlainSparseMajorityMHA` on
    tokens, ``torch.optim.SGD`` with momentum, batches of :data:`BATCH` in a shuffled order
    drawn from ``seed``)."""
    model = PlainSparseMajorityMHA().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    target = F.one_hot(y, 2).to(X.dtype)
    gen = torch.Generator().manual_seed(seed)

    def epochs(n: int) -> None:
        for _ in range(n):
            perm = torch.randperm(X.shape[0], generator=gen).to(device)
            for start in range(0, X.shape[0], BATCH):
                idx = perm[start:start + BATCH]
                loss = F.binary_cross_entropy_with_logits(model(X[idx]), target[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()

    return epochs


def _engine_train_epochs(model: SparseMajorityMHA, X: torch.Tensor, y: torch.Tensor,
                         device: torch.device) -> Callable[[int], None]:
    def epochs(n: int) -> None:
        cfg = TrainConfig(lr=0.01, momentum=0.9, batch_size=BATCH, max_epochs=n,
                          select_best="last", device=str(device))
        train_ensemble(model, X, y, loss="bce_logits_onehot", config=cfg)

    return epochs


def _simple_validate(X: torch.Tensor, y: torch.Tensor, device: torch.device,
                     ) -> Callable[[int], None]:
    model = PlainSparseMajorityMHA().to(device)
    target = F.one_hot(y, 2).to(X.dtype)

    @torch.no_grad()
    def passes(n: int) -> None:
        for _ in range(n):
            for start in range(0, X.shape[0], BATCH):
                out = model(X[start:start + BATCH])
                F.binary_cross_entropy_with_logits(out, target[start:start + BATCH])

    return passes


def _engine_validate(model: SparseMajorityMHA, X: torch.Tensor, y: torch.Tensor,
                     device: torch.device) -> Callable[[int], None]:
    K = y.shape[0]
    inputs = InputSet(X, y.shape[1], K, "X_val", X.dtype, device)
    state = {**{n: p.detach() for n, p in model.named_parameters()},
             **dict(model.named_buffers())}

    def passes(n: int) -> None:
        for _ in range(n):
            evaluate_models(model, state, inputs, y, np.arange(K), "bce_logits_onehot", 2048)

    return passes


def _load() -> float:
    return float(os.getloadavg()[0])


def _call_seconds(run_epochs: Callable[[int], None], n: int, dev: torch.device) -> float:
    _sync(dev)
    t0 = time.perf_counter()
    run_epochs(n)
    _sync(dev)
    return time.perf_counter() - t0


def _seconds_per_epoch(run_epochs: Callable[[int], None], dev: torch.device,
                       tries: int = 3) -> tuple[float, str]:
    """Seconds of one epoch and how they were obtained.

    The marginal time ``(t(3) - t(1)) / 2`` (the engine's per-call set-up and final evaluation
    cancel), the best positive one of ``tries``. Under load the difference can be lost in the
    noise (zero or negative); the time is then ``t(3) / 3``, an upper bound that includes the
    set-up, and the method says so. Always positive and finite.
    """
    run_epochs(1)  # warm-up
    marginal, whole = [], []
    for _ in range(tries):
        t1 = _call_seconds(run_epochs, 1, dev)
        t3 = _call_seconds(run_epochs, 3, dev)
        marginal.append((t3 - t1) / 2.0)
        whole.append(t3 / 3.0)
    positive = [m for m in marginal if m > 0]
    if positive:
        return min(positive), "marginal (t(3) - t(1)) / 2"
    return max(min(whole), 1e-9), "t(3) / 3 (the marginal time was lost in the noise)"


def bench_epoch(T_values: Sequence[int] = (20, 200), K: int = 5, n_val: int = 10_000,
                device: str = "auto") -> list[dict[str, Any]]:
    """Figure 2: seconds per model-epoch with validation, the authors' loop vs the engine."""
    dev = resolve_device(device)
    rows = []
    for T in T_values:
        load = _load()
        batch = make_sparse_majority_batch(T, list(range(K)), n_train=N_TRAIN, n_val=n_val,
                                           s=S, d=D, device=dev, val_tokens=False)
        X_val = batch.datasets[0].val_tokens(device=dev)
        train = simple_train_epochs(batch.X_train[0], batch.y_train[0], dev)
        val = _simple_validate(X_val, batch.y_val[0], dev)
        train(1)
        val(1)
        _sync(dev)
        t0 = time.perf_counter()
        train(1)
        val(1)
        _sync(dev)
        simple = time.perf_counter() - t0
        del X_val
        model = SparseMajorityMHA(D, HEADS, KEY_DIM, n_models=K, seeds=list(range(K))).to(dev)
        model.set_token_tables(batch.bit_embeddings, batch.cls_embeddings, batch.positional)
        bits_tr, bits_val = batch.bits_train.float(), batch.bits_val.float()

        def engine(n: int, model: Any = model, batch: Any = batch, bits_tr: Any = bits_tr,
                   bits_val: Any = bits_val) -> None:
            cfg = TrainConfig(lr=0.01, momentum=0.9, lr_decay=0.999, lr_floor=0.001,
                              batch_size=BATCH, max_epochs=n, select_best="val_loss",
                              eval_batch_size=2048, device=str(dev))
            train_ensemble(model, bits_tr, batch.y_train, bits_val, batch.y_val,
                           loss="bce_logits_onehot", config=cfg)

        eng = _seconds_per_epoch(engine, dev)[0] / K
        rows.append({"T": T, "K": K, "n_val": n_val, "simple_s_per_model_epoch": simple,
                     "engine_s_per_model_epoch": eng, "speedup": simple / eng,
                     "load": load})
    return rows


def bench_svd(n: int = 10_000, size: int = 201, chunk: int = 1000,
              seed: int = 0, device: str = "cpu") -> dict[str, Any]:
    """Figure 3: batched ``torch.linalg.svdvals`` (on ``device``) vs a NumPy loop (CPU),
    ``n`` matrices."""
    check_int(n, "n")
    check_int(size, "size")
    dev = resolve_device(device)
    load = _load()
    g = torch.Generator().manual_seed(seed)
    t_torch = t_numpy = 0.0
    max_diff = 0.0
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        A = torch.softmax(2.0 * torch.randn(m, size, size, generator=g), dim=-1)
        An = A.numpy()
        A_dev = A.to(dev)
        _sync(dev)
        t0 = time.perf_counter()
        sv_t = torch.linalg.svdvals(A_dev)
        _sync(dev)
        t1 = time.perf_counter()
        sv_t = sv_t.cpu()
        sv_n = np.stack([np.linalg.svd(a, compute_uv=False) for a in An])
        t2 = time.perf_counter()
        t_torch += t1 - t0
        t_numpy += t2 - t1
        max_diff = max(max_diff, float(np.abs(sv_t.numpy() - sv_n).max()))
    return {"n": n, "size": size, "dtype": "float32", "device": str(dev),
            "torch_batched_s": t_torch,
            "numpy_loop_s": t_numpy, "speedup": t_numpy / t_torch,
            "max_abs_difference": max_diff, "load": load}


def granulated_tau_loop(measure: np.ndarray, gap: np.ndarray,
                        factors: dict[str, np.ndarray]) -> float:
    """The simple way of computing Jiang et al.'s granulated tau ``Psi`` (their eq. (3)-(5)):
    for each factor, loop over the settings of the other factors and average the pairwise
    sign agreements of each group where the factor varies. The reference that
    :func:`genbounds.stats.granulated_tau` (one pass over all pairs per factor) is tested and
    timed against."""
    n = len(measure)
    psi = []
    for name, values in factors.items():
        groups: dict[tuple[object, ...], list[int]] = {}
        for i in range(n):
            key = tuple(v[i] for k, v in factors.items() if k != name)
            groups.setdefault(key, []).append(i)
        taus = []
        for idx in groups.values():
            if len({values[i] for i in idx}) < 2:
                continue
            agree = [np.sign(measure[a] - measure[b]) * np.sign(gap[a] - gap[b])
                     for pos, a in enumerate(idx) for b in idx[pos + 1:]]
            taus.append(float(np.mean(agree)))
        if taus:
            psi.append(float(np.mean(taus)))
    return float(np.mean(psi)) if psi else float("nan")


def bench_ranking(n_models: int = 88, n_boot: int = 100, seed: int = 0) -> dict[str, Any]:
    """The bootstrap of Jiang et al.'s ``Psi`` that chapter 6 runs for every bound: ``n_boot``
    resamples of ``n_models`` models on a sweep of six factors (one varied at a time from a base
    setting, three seeds each, as the comparison sweep), by :func:`genbounds.stats.granulated_tau`
    against :func:`granulated_tau_loop`, the same resamples and the same answers."""
    from genbounds.stats import granulated_tau

    check_int(n_models, "n_models", minimum=4)
    check_int(n_boot, "n_boot")
    rng = np.random.default_rng(seed)
    levels = rng.integers(0, 3, size=(n_models, 6))
    levels[rng.random((n_models, 6)) < 0.8] = 0  # mostly the base setting: coupled groups
    factors = {f"f{j}": levels[:, j].astype(np.float64) for j in range(6)}
    measure, gap = rng.normal(size=n_models), rng.normal(size=n_models)
    resamples = [rng.integers(0, n_models, n_models) for _ in range(n_boot)]
    load = _load()
    t0 = time.perf_counter()
    fast = [granulated_tau(measure[i], gap[i], {k: v[i] for k, v in factors.items()}).overall
            for i in resamples]
    t1 = time.perf_counter()
    simple = [granulated_tau_loop(measure[i], gap[i], {k: v[i] for k, v in factors.items()})
              for i in resamples]
    t2 = time.perf_counter()
    diff = float(np.nanmax(np.abs(np.array(fast) - np.array(simple))))
    return {"n_models": n_models, "n_boot": n_boot, "vectorized_s": t1 - t0,
            "loop_s": t2 - t1, "speedup": (t2 - t1) / (t1 - t0), "max_abs_difference": diff,
            "load": load}


def _step_flops(model: nn.Module, X: torch.Tensor, y: torch.Tensor, loss: str) -> float:
    """Matrix-product FLOPs of one forward + backward pass on ``X`` (FlopCounterMode)."""
    from torch.utils.flop_counter import FlopCounterMode

    from genbounds.train import per_sample_loss

    params = [p for p in model.parameters()]
    with FlopCounterMode(display=False) as counter:
        per, _ = per_sample_loss(loss, model(X), y)
        torch.autograd.grad(per.mean(dim=1).sum(), params)
    return float(counter.get_total_flops())


def _roofline_row(workload: str, flops: float, timing: tuple[float, str], peak: float
                  ) -> dict[str, Any]:
    s, method = timing
    return {"workload": workload, "gflop_per_epoch": flops / 1e9, "s_per_epoch": s,
            "timing": method, "gflops": flops / s / 1e9,
            "fraction_of_matmul": flops / s / 1e9 / peak}


def bench_roofline(device: str = "auto", sm_size: tuple[int, int] = (5, 200),
                   enc_size: tuple[int, int, int] = (3, 400, 1024)) -> dict[str, Any]:
    """Figure 4: achieved GFLOP/s of a training epoch vs measured matmul throughput;
    ``sm_size = (K, T)`` of the sparse-majority model, ``enc_size = (K, N, d_m)`` of the
    shallow encoder."""
    from genbounds.estimates import matmul_gflops
    from genbounds.models.shallow_encoder import ShallowEncoder

    dev = resolve_device(device)
    load = _load()
    peak = matmul_gflops(str(dev))
    rows = []
    # sparse majority: K = 5, T = 200, minibatches of 128 (3 steps per epoch), no validation
    K, T = sm_size
    batch = make_sparse_majority_batch(T, list(range(K)), n_train=N_TRAIN, n_val=1, s=S, d=D,
                                       device=dev, val_tokens=False)
    sm = SparseMajorityMHA(D, HEADS, KEY_DIM, n_models=K, seeds=list(range(K))).to(dev)
    sm.set_token_tables(batch.bit_embeddings, batch.cls_embeddings, batch.positional)
    bits = batch.bits_train.float()
    flops = _step_flops(sm, bits, batch.y_train, "bce_logits_onehot")  # 300 samples = 1 epoch

    def sm_epochs(n: int) -> None:
        cfg = TrainConfig(lr=0.01, momentum=0.9, batch_size=BATCH, max_epochs=n,
                          select_best="last", device=str(dev))
        train_ensemble(sm, bits, batch.y_train, loss="bce_logits_onehot", config=cfg)

    rows.append(_roofline_row(f"sparse majority K={K} T={T} batch {BATCH}", flops,
                              _seconds_per_epoch(sm_epochs, dev), peak))
    # shallow encoder: d_m = 1024, 16 tokens of d = 64, N = 400, full-batch GD, K = 3
    K, N, d_m = enc_size
    g = torch.Generator().manual_seed(0)
    X = torch.randn(K, N, 16, 64, generator=g).to(dev)
    y = (torch.rand(K, N, generator=g) < 0.5).to(torch.int64).to(dev)
    enc = ShallowEncoder(64, d_m, n_models=K, seeds=list(range(K))).to(dev)
    flops = _step_flops(enc, X, y, "bce_logits")

    def enc_epochs(n: int) -> None:
        cfg = TrainConfig(optimizer="gd", lr=0.1, max_epochs=n, select_best="last",
                          device=str(dev))
        train_ensemble(enc, X, y, loss="bce_logits", config=cfg)

    rows.append(_roofline_row(f"shallow encoder K={K} d_m={d_m} N={N} full batch", flops,
                              _seconds_per_epoch(enc_epochs, dev), peak))
    return {"matmul_gflops": peak, "rows": rows, "load": load}


def _clock(dev: torch.device) -> Callable[[], float]:
    """The clock of a timing: on a CPU the process's CPU time (one thread: the time it ran,
    not the time it waited for a core the other jobs of a shared machine held), on CUDA the
    wall clock (after synchronising)."""
    return time.process_time if dev.type == "cpu" else time.perf_counter


def _timed_twice(fn: Callable[[], Any], dev: torch.device) -> tuple[float, float]:
    """``(seconds on the clock of _clock, wall seconds)`` of one call of ``fn``."""
    clock = _clock(dev)
    _sync(dev)
    c0, w0 = clock(), time.perf_counter()
    fn()
    _sync(dev)
    return clock() - c0, time.perf_counter() - w0


def _matmul_rate(dev: torch.device, reps: int, n: int) -> dict[str, float]:
    """Median float32 GFLOP/s of ``n x n`` products (``reps`` timings of 3 products each), on
    the clock of :func:`_clock` and on the wall clock."""
    a = torch.randn(n, n, device=dev)
    b = torch.randn(n, n, device=dev)
    c = a @ b
    times = [_timed_twice(lambda: [torch.mm(a, b, out=c) for _ in range(3)], dev)
             for _ in range(reps)]
    flop = 3 * 2.0 * n**3
    return {"gflops": flop / float(np.median([t for t, _ in times])) / 1e9,
            "gflops_wall": flop / float(np.median([w for _, w in times])) / 1e9, "n": n}


def bench_edelman(unit: Any = None, reps: int = 5, device: str = "cpu",
                  measures: bool = True, matmul_n: int = 2048) -> dict[str, Any]:
    """The effective-rank study's training step and unit: fast path against today's code.

    ``unit``: an :class:`~genbounds.experiments.effective_rank.EffectiveRankUnit` (default: the
    paper preset's base unit, sparse majority's sizes are the same for every task). On one
    model ensemble built from the unit's seeds and data, ``reps`` interleaved timings of the
    engine's full-batch step (:func:`genbounds.train.step.batch_gradients`: forward, logistic
    loss, gradients of every parameter) with the reference class and with the fast class; the
    medians are compared with the median ``matmul_n x matmul_n`` float32 product rate measured
    in the same run. FLOPs are those the two paths execute (matrix products, counted by
    :class:`~torch.utils.flop_counter.FlopCounterMode`); the fast path executes fewer (the last
    layer computes the [CLS] row only), so its GFLOP/s understate its speed-up: the ratio of
    the times is the speed-up. On a CPU every time is process CPU time (the wall time is
    reported beside it): on a shared machine it does not count the waits for a core.

    With ``measures`` the measurements of one checkpoint (attention maps of the rank inputs,
    their rank measures, errors on the training and test sets) and the final ones
    (sensitivity matrices, spectra, Lipschitz estimates) are timed once per path, and a whole
    unit is estimated as ``epochs`` steps + ``checkpoints + 1`` checkpoints + the final
    measures; its arithmetic (counted FLOPs; the singular values, not matrix products, are not
    counted) is divided by the matmul rate. The largest relative difference of the two paths'
    gradients is reported (float32; ``tests/test_edelman_speed.py`` checks float64).
    """
    from torch.utils.flop_counter import FlopCounterMode

    from genbounds.experiments import effective_rank as er
    from genbounds.train.memory import retain_freed_memory
    from genbounds.train.step import batch_gradients

    check_int(reps, "reps")
    dev = resolve_device(device)
    if dev.type == "cpu":
        retain_freed_memory()  # as train_ensemble does: freed activations reused, not mmap'd
    u = er.EffectiveRankConfig.paper(device=str(dev)).base if unit is None else unit
    load = _load()
    seeds, Xtr, ytr, Xte, yte = er._unit_tensors(u, dev)
    models = {name: er._unit_model(u, seeds, dev, reference=name == "reference")
              for name in ("reference", "fast")}
    B = int(ytr.shape[1])

    def step(name: str) -> list[torch.Tensor]:
        m = models[name]
        params = {n: p.detach().requires_grad_(True) for n, p in m.named_parameters()}
        grads, _, _ = batch_gradients(m, params, {}, lambda a, b: (Xtr[:, a:b], ytr[:, a:b]),
                                      B, B, "logistic")
        return grads

    g_ref, g_fast = step("reference"), step("fast")  # warm-up, and the equivalence check
    grad_diff = max(float((a - b).abs().max() / a.abs().max().clamp_min(1e-30))
                    for a, b in zip(g_ref, g_fast, strict=True))
    mm = _matmul_rate(dev, reps, matmul_n)
    times: dict[str, list[tuple[float, float]]] = {"reference": [], "fast": []}
    for _ in range(reps):
        for name in times:
            times[name].append(_timed_twice(partial(step, name), dev))
    flops = {}
    for name in times:
        with FlopCounterMode(display=False) as counter:
            step(name)
        flops[name] = float(counter.get_total_flops())
    out: dict[str, Any] = {
        "sizes": {"K": u.n_models, "m": u.m, "n": u.n, "d": u.d, "k": u.k, "heads": u.heads,
                  "layers": u.layers, "task": u.task, "dtype": "float32"},
        "device": str(dev), "device_name": (torch.cuda.get_device_name(dev)
                                            if dev.type == "cuda" else _cpu_name()),
        "threads": torch.get_num_threads(), "clock": "cpu" if dev.type == "cpu" else "wall",
        "reps": reps, "matmul_gflops": mm["gflops"], "matmul_gflops_wall": mm["gflops_wall"],
        "matmul_n": matmul_n, "max_rel_grad_difference": grad_diff, "load_before": load,
    }
    for name, ts in times.items():
        s = float(np.median([t for t, _ in ts]))
        out[name] = {"step_s": s, "step_s_wall": float(np.median([w for _, w in ts])),
                     "gflop_per_step": flops[name] / 1e9, "gflops": flops[name] / s / 1e9,
                     "fraction_of_matmul": flops[name] / s / 1e9 / mm["gflops"]}
    out["speedup"] = out["reference"]["step_s"] / out["fast"]["step_s"]
    if measures:
        out["unit"] = _edelman_unit_estimate(u, models, Xtr, ytr, Xte, yte, out, dev)
    out["load_after"] = _load()
    return out


def _measure_times(u: Any, m: Any, Xr: torch.Tensor, Xtr: torch.Tensor, ytr: torch.Tensor,
                   Xte: torch.Tensor, yte: torch.Tensor, dev: torch.device
                   ) -> tuple[float, float, float]:
    """Seconds of one checkpoint's measurements and of the final ones on model ``m``, and
    the checkpoint's counted FLOPs."""
    from torch.utils.flop_counter import FlopCounterMode

    from genbounds.experiments import effective_rank as er

    init = {k: v.detach().clone() for k, v in m.named_parameters()}
    clock = _clock(dev)
    _sync(dev)
    t0 = clock()
    ck = er._measure_checkpoint(m, Xr, Xtr, ytr, Xte, yte)
    _sync(dev)
    t1 = clock()
    er._final_measures(u, m, ck, Xr, init)
    _sync(dev)
    t2 = clock()
    with FlopCounterMode(display=False) as counter:
        er._measure_checkpoint(m, Xr, Xtr, ytr, Xte, yte)
    return t1 - t0, t2 - t1, float(counter.get_total_flops())


def _edelman_unit_estimate(u: Any, models: dict[str, Any], Xtr: torch.Tensor,
                           ytr: torch.Tensor, Xte: torch.Tensor, yte: torch.Tensor,
                           steps: dict[str, Any], dev: torch.device) -> dict[str, Any]:
    """A whole unit per path: ``epochs`` steps, ``checkpoints + 1`` checkpoint measurements,
    the final measures (each measured once here), and its counted arithmetic."""
    Xr = Xtr[:, :u.n_rank_inputs]
    out: dict[str, Any] = {"epochs": u.epochs, "checkpoints": u.checkpoints}
    for name, m in models.items():
        ck_s, fin_s, ck_flop = _measure_times(u, m, Xr, Xtr, ytr, Xte, yte, dev)
        total = (u.epochs * steps[name]["step_s"] + (u.checkpoints + 1) * ck_s + fin_s)
        flop = u.epochs * steps[name]["gflop_per_step"] * 1e9 + (u.checkpoints + 1) * ck_flop
        out[name] = {"checkpoint_s": ck_s, "final_s": fin_s, "unit_s": total,
                     "unit_tflop": flop / 1e12,
                     "arithmetic_s": flop / 1e9 / steps["matmul_gflops"]}
        out[name]["unit_over_arithmetic"] = total / out[name]["arithmetic_s"]
    out["speedup"] = out["reference"]["unit_s"] / out["fast"]["unit_s"]
    return out


def bench_notebooks(notebooks: Sequence[Path] | None = None,
                    workdir: Path | None = None, fresh_results: bool = True
                    ) -> list[dict[str, Any]]:
    """Figure 5: wall time of each notebook at quick scale under nbval (as ``make test``).

    With ``fresh_results`` (default) every notebook gets an empty results store
    (``GENBOUNDS_RESULTS_DIR`` in ``workdir``), so its experiments are computed, not loaded
    from an earlier run: the time is that of a fresh checkout. A failed notebook's row holds
    the last lines of its output.
    """
    root = Path(__file__).resolve().parents[2]
    nbs = sorted((root / "notebooks").glob("*.md")) if notebooks is None else list(notebooks)
    work = Path(workdir) if workdir is not None else Path("/tmp/genbounds-bench-notebooks")
    work.mkdir(parents=True, exist_ok=True)
    bindir = Path(sys.executable).parent
    env = {**os.environ, "GENBOUNDS_SCALE": "quick"}
    rows = []
    for nb in nbs:
        out = work / (nb.stem + ".ipynb")
        if fresh_results:
            store = work / f"results-{nb.stem}-{time.time_ns()}"
            store.mkdir()
            env["GENBOUNDS_RESULTS_DIR"] = str(store)
        load = _load()
        t0 = time.perf_counter()
        conv = subprocess.run([str(bindir / "jupytext"), "--to", "ipynb", "--output", str(out),
                               str(nb)], capture_output=True, text=True, env=env)
        res = subprocess.run([sys.executable, "-m", "pytest", "--nbval-lax", "--current-env",
                              "-p", "no:cacheprovider", "-q", str(out)],
                             capture_output=True, text=True, env=env, cwd=str(root))
        passed = conv.returncode == 0 and res.returncode == 0
        tail = "" if passed else (conv.stderr + res.stdout + res.stderr)[-2000:]
        rows.append({"notebook": nb.name, "wall_s": time.perf_counter() - t0,
                     "passed": passed, "fresh_results": fresh_results, "load_before": load,
                     "load_after": _load(), "failure": tail})
    return rows


def measure_epochs_to_fit(T: int, runs: int = 4, n_val: int = 200, max_epochs: int = 6000,
                          device: str = "cpu") -> dict[str, Any]:
    """Epochs the authors' protocol needs to reach training accuracy 1.0 (``--sections fit``).

    The paper preset (:meth:`~genbounds.experiments.sparse_majority.SparseMajorityConfig.paper`:
    SGD 0.01, momentum 0.9, decay 0.999 with floor 0.001, batch 128, 300 training samples,
    validation every epoch) with ``runs`` runs at length ``T``, the validation set reduced to
    ``n_val`` samples (it changes the time per epoch, not the training) and the epoch cap to
    ``max_epochs``. Reports, per run, the epoch it stopped, whether it reached 1.0, the first
    epoch whose running training accuracy exceeded 0.6 (left the majority-class plateau), and its
    final running accuracy.
    """
    import dataclasses

    from genbounds.experiments.sparse_majority import SparseMajorityConfig, train_group

    cfg = dataclasses.replace(SparseMajorityConfig.paper(device=device), T_values=(T,),
                              runs_per_T=runs, n_val=n_val, max_epochs=max_epochs)
    load = _load()
    t0 = time.perf_counter()
    res, _, _ = train_group(cfg, T)
    acc = res.history["accuracy"]
    return {
        "T": T, "runs": runs, "n_val": n_val, "max_epochs": max_epochs,
        "wall_s": time.perf_counter() - t0, "load_before": load, "load_after": _load(),
        "stopped_epoch": res.stopped_epoch.tolist(),
        "reached": res.reached_train_accuracy.tolist(),
        "left_plateau": [int(np.argmax(a > 0.6)) if (a > 0.6).any() else None for a in acc],
        "final_running_accuracy": [float(a[~np.isnan(a)][-1]) for a in acc],
    }


def bench_protocol(epochs: int = 4, baseline_epochs: int = 2, device: str = "cpu",
                   sync_every: int | None = None, cuda_graphs: bool = True,
                   T_values: Sequence[int] | None = None, runs: int = 5,
                   n_val: int = 10_000) -> dict[str, Any]:
    """Seconds per epoch of the WHOLE protocol (every run of every T; 50 runs at paper scale)
    with the fused engine against today's per-T ensembles, measured in the same process.

    * ``fused``: :func:`genbounds.train.fused_protocol.train_fused` on the paper preset
      (``epochs`` epochs, read back every ``sync_every``; default ``epochs // 2``, so at least
      two blocks), the median over blocks of the block's seconds per epoch, the first block
      excluded when there are three or more (on CUDA it holds the graph's first replay);
      set-up (data, capture) is not counted.
    * ``ensemble``: :func:`genbounds.experiments.sparse_majority.train_group` (today's engine,
      one ensemble of ``runs`` models per T) for every T: the marginal cost of
      ``baseline_epochs`` epochs (a call of ``1 + baseline_epochs`` epochs minus a call of
      one), summed over the T. ``baseline_epochs = 0`` skips it.

    Both train the same runs from the same seeds with the paper's SGD; no run stops within a
    few epochs (the protocol's models stay on their plateau for thousands), so all runs are
    live in both.
    """
    import dataclasses

    from genbounds.experiments.sparse_majority import (
        SparseMajorityConfig,
        fused_groups,
        fused_settings,
        train_group,
    )
    from genbounds.train.fused_protocol import train_fused

    check_int(epochs, "epochs")
    if not isinstance(baseline_epochs, int) or baseline_epochs < 0:
        raise ValueError(f"baseline_epochs must be an integer >= 0, got {baseline_epochs!r}")
    dev = resolve_device(device)
    base = SparseMajorityConfig.paper(device=str(dev))
    cfg = dataclasses.replace(base, T_values=tuple(T_values or base.T_values), runs_per_T=runs,
                              n_val=n_val, max_epochs=epochs)
    sync = max(1, epochs // 2) if sync_every is None else sync_every
    load = _load()
    t0 = time.perf_counter()
    groups = fused_groups(cfg)
    setup_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    fr = train_fused(groups, fused_settings(cfg, sync_every=sync, cuda_graphs=cuda_graphs),
                     heads=cfg.heads, key_dim=cfg.key_dim, checkpoint=False)
    fused_total = time.perf_counter() - t0
    blocks = [sec / n for n, _, sec in fr.epoch_seconds]
    use = blocks[1:] if len(blocks) >= 3 else blocks
    out: dict[str, Any] = {
        "device": str(dev), "device_name": (torch.cuda.get_device_name(dev)
                                            if dev.type == "cuda" else _cpu_name()),
        "torch": torch.__version__, "threads": torch.get_num_threads(),
        "T_values": list(cfg.T_values), "runs_per_T": runs, "n_val": n_val,
        "runs": len(cfg.T_values) * runs, "epochs": epochs, "sync_every": sync,
        "fused_graphs": fr.graphs, "fused_precision": fr.precision,
        "fused_s_per_epoch": float(np.median(use)), "fused_block_s_per_epoch": blocks,
        "fused_setup_s": setup_s, "fused_total_s": fused_total, "load_before": load,
    }
    if baseline_epochs:
        per_T = {}
        for T in cfg.T_values:
            one = dataclasses.replace(cfg, T_values=(T,), max_epochs=1)
            more = dataclasses.replace(one, max_epochs=1 + baseline_epochs)
            t0 = time.perf_counter()
            train_group(one, T)
            t1 = time.perf_counter()
            train_group(more, T)
            t2 = time.perf_counter()
            per_T[int(T)] = max(0.0, ((t2 - t1) - (t1 - t0)) / baseline_epochs)
        out["ensemble_s_per_epoch_by_T"] = per_T
        out["ensemble_s_per_epoch"] = float(sum(per_T.values()))
        out["baseline_epochs"] = baseline_epochs
        out["speedup"] = out["ensemble_s_per_epoch"] / out["fused_s_per_epoch"]
    out["load_after"] = _load()
    return out


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:  # pragma: no cover
        pass
    return platform.processor() or platform.machine()


def _check_benchmark_args(sections: Sequence[str], T_values: Sequence[int],
                          K_values: Sequence[int], n_val: int, K_val: int, target_s: float,
                          counts: dict[str, int]) -> None:
    for sec in sections:
        if sec not in SECTIONS:
            raise ValueError(f"sections must be drawn from {SECTIONS}, got {sec!r}")
    for name, value in counts.items():
        check_int(value, name)
    for T in T_values:
        if not isinstance(T, int) or T < S:
            raise ValueError(f"T_values must be integers >= {S}, got {T!r}")
    for K in K_values:
        if not isinstance(K, int) or K < 1:
            raise ValueError(f"K_values must be integers >= 1, got {K!r}")
    if not isinstance(n_val, int) or n_val < 1:
        raise ValueError(f"n_val must be an integer >= 1, got {n_val!r}")
    if not isinstance(K_val, int) or K_val < 1:
        raise ValueError(f"K_val must be an integer >= 1, got {K_val!r}")
    if not target_s > 0:
        raise ValueError(f"target_s must be > 0, got {target_s!r}")


def _training_rows(batch: Any, T: int, K_values: Sequence[int], dev: torch.device,
                   target_s: float, say: Callable[[str], None]) -> list[dict[str, Any]]:
    """Section ``training``: model-epochs per second, the authors' loop vs the engine."""
    say(f"T={T}: simple training loop")
    s_simple, r_simple = _timed(
        simple_train_epochs(batch.X_train[0], batch.y_train[0], dev), dev, target_s)
    rows = []
    for K in K_values:
        say(f"T={T}, K={K}: engine")
        m = _bench_model(batch, K, dev)
        s_tok, r_tok = _timed(_engine_train_epochs(m, batch.X_train[:K], batch.y_train[:K],
                                                   dev), dev, target_s)
        s_bits, r_bits = _timed(_engine_train_epochs(
            m, batch.bits_train[:K].to(torch.float32), batch.y_train[:K], dev), dev, target_s)
        rows.append({
            "T": T, "K": K,
            "simple_model_epochs_per_s": 1.0 / s_simple,
            "engine_tokens_model_epochs_per_s": K / s_tok,
            "engine_bits_model_epochs_per_s": K / s_bits,
            "epochs_timed": {"simple": r_simple, "engine_tokens": r_tok, "engine_bits": r_bits},
            "speedup_tokens": K / s_tok * s_simple,
            "speedup_bits": K / s_bits * s_simple,
            "load": _load(),
        })
    return rows


def _bench_model(batch: Any, K: int, dev: torch.device) -> SparseMajorityMHA:
    m = SparseMajorityMHA(D, HEADS, KEY_DIM, n_models=K, seeds=list(range(K))).to(dev)
    m.set_token_tables(batch.bit_embeddings[:K], batch.cls_embeddings[:K], batch.positional)
    return m


def _validation_row(batch: Any, T: int, K_val: int, n_val: int, dev: torch.device,
                    target_s: float, say: Callable[[str], None]) -> dict[str, Any]:
    """Section ``validation``: seconds per 1,000 validated samples, simple vs engine."""
    say(f"T={T}: validation passes")
    bits_val = batch.bits_val[:K_val].to(torch.float32)
    X_val = torch.stack([ds.val_tokens(device=dev) for ds in batch.datasets[:K_val]])
    y_val = batch.y_val[:K_val]
    s_sv, _ = _timed(_simple_validate(X_val[0], y_val[0], dev), dev, target_s)
    m = _bench_model(batch, K_val, dev)
    s_tv, _ = _timed(_engine_validate(m, X_val, y_val, dev), dev, target_s)
    s_bv, _ = _timed(_engine_validate(m, bits_val, y_val, dev), dev, target_s)
    per_k = 1000.0 / n_val
    row = {
        "T": T, "K": K_val, "n_val": n_val,
        "simple_s_per_1000": s_sv * per_k,
        "engine_tokens_s_per_1000": s_tv * per_k / K_val,
        "engine_bits_s_per_1000": s_bv * per_k / K_val,
    }
    row["speedup_tokens"] = row["simple_s_per_1000"] / row["engine_tokens_s_per_1000"]
    row["speedup_bits"] = row["simple_s_per_1000"] / row["engine_bits_s_per_1000"]
    row["load"] = _load()
    return row


def _extra_sections(sections: Sequence[str], T_values: Sequence[int], K_values: Sequence[int],
                    n_val: int, dev: torch.device, say: Callable[[str], None],
                    sizes: dict[str, int]) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if "epoch" in sections:
        say(f"epoch with validation on {sizes['epoch_n_val']} samples")
        extra["epoch"] = bench_epoch(T_values, sizes["epoch_K"], sizes["epoch_n_val"], str(dev))
    if "svd" in sections:
        say(f"singular values of {sizes['svd_n']} matrices 201 x 201")
        extra["svd"] = bench_svd(sizes["svd_n"], device=str(dev))
    if "roofline" in sections:
        say("roofline")
        extra["roofline"] = bench_roofline(str(dev))
    if "edelman" in sections:
        say("effective-rank model (paper unit sizes): fast path against today's code")
        extra["edelman"] = bench_edelman(device=str(dev))
    if "ranking" in sections:
        say("granulated Kendall tau: bootstrap of one bound's Psi")
        extra["ranking"] = bench_ranking()
    if "notebooks" in sections:
        say("notebooks at quick scale under nbval")
        extra["notebooks"] = bench_notebooks()
    if "protocol" in sections:
        say("the whole protocol (50 runs): fused engine against per-T ensembles")
        extra["protocol"] = bench_protocol(device=str(dev))
    if "fit" in sections:
        say(f"epochs to training accuracy 1.0 at T = {list(T_values)} (authors' protocol)")
        extra["fit"] = [measure_epochs_to_fit(T, max(K_values), n_val, sizes["fit_epochs"],
                                              str(dev)) for T in T_values]
    return extra


def _environment(dev: torch.device) -> dict[str, Any]:
    return {
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "host_cpus": os.cpu_count(),
        "device": str(dev),
        "device_name": (torch.cuda.get_device_name(dev) if dev.type == "cuda"
                        else platform.processor() or platform.machine()),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "setting": {"d": D, "heads": HEADS, "key_dim": KEY_DIM, "n_train": N_TRAIN,
                    "batch_size": BATCH, "optimizer": "SGD(lr=0.01, momentum=0.9)",
                    "dtype": "float32"},
    }


def run_benchmark(
    T_values: Sequence[int] = (20, 200),
    K_values: Sequence[int] = (1, 5, 25, 50),
    n_val: int = 1000,
    K_val: int = 5,
    target_s: float = 1.0,
    device: str = "auto",
    progress: Callable[[str], None] | None = None,
    sections: Sequence[str] = DEFAULT_SECTIONS,
    epoch_n_val: int = 10_000,
    epoch_K: int = 5,
    svd_n: int = 10_000,
    fit_epochs: int = 6000,
) -> dict[str, Any]:
    """Run the measurements and return them as a JSON-ready dict (see the module docstring).

    ``T_values``, ``K_values``, ``n_val``, ``K_val``, ``target_s`` set the ``training`` and
    ``validation`` sections; the ``epoch`` section runs at ``T_values`` with ``epoch_K`` models
    and ``epoch_n_val`` validation samples; ``svd`` on ``svd_n`` matrices; ``fit`` trains
    ``max(K_values)`` runs per ``T`` for ``fit_epochs`` epochs with ``n_val`` validation samples.
    """
    sizes = {"epoch_n_val": epoch_n_val, "epoch_K": epoch_K, "svd_n": svd_n,
             "fit_epochs": fit_epochs}
    _check_benchmark_args(sections, T_values, K_values, n_val, K_val, target_s,
                          {k: v for k, v in sizes.items() if k != "fit_epochs"})
    dev = resolve_device(device)
    say = progress or (lambda _msg: None)
    train_rows: list[dict[str, Any]] = []
    val_rows: list[dict[str, Any]] = []
    t_start, load_start = time.perf_counter(), _load()
    for T in (T_values if ("training" in sections or "validation" in sections) else ()):
        batch = make_sparse_majority_batch(T, list(range(max(max(K_values), K_val))),
                                           n_train=N_TRAIN, n_val=n_val, s=S, d=D, device=dev,
                                           val_tokens=False)
        if "training" in sections:
            train_rows += _training_rows(batch, T, K_values, dev, target_s, say)
        if "validation" in sections:
            val_rows.append(_validation_row(batch, T, K_val, n_val, dev, target_s, say))
    extra = _extra_sections(sections, T_values, K_values, n_val, dev, say, sizes)
    return {
        **extra,
        "sections": list(sections),
        **_environment(dev),
        "load_start": load_start,
        "load_end": _load(),
        "wall_s": time.perf_counter() - t_start,
        "training": train_rows,
        "validation": val_rows,
    }


def format_tables(result: dict[str, Any]) -> str:
    """The two tables printed by ``genbounds-bench``."""
    lines = [
        f"device: {result['device']} ({result['device_name']}), torch {result['torch']}, "
        f"{result['torch_threads']} threads, {result['host_cpus']} CPUs, "
        f"{result['date_utc']} UTC, load average {result['load_start']:.1f} -> "
        f"{result['load_end']:.1f}, {result['wall_s']:.0f} s in all",
    ]
    if result["training"]:
        lines += _training_lines(result)
    lines += _extra_lines(result)
    return "\n".join(lines)


def _training_lines(result: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "(1) Training, model-epochs per second (300 samples, batch 128, no validation)",
        f"{'T':>5} {'K':>4} {'simple':>10} {'engine/tok':>11} {'engine/bits':>12} "
        f"{'x tok':>7} {'x bits':>7}",
    ]
    for r in result["training"]:
        lines.append(
            f"{r['T']:>5} {r['K']:>4} {r['simple_model_epochs_per_s']:>10.1f} "
            f"{r['engine_tokens_model_epochs_per_s']:>11.1f} "
            f"{r['engine_bits_model_epochs_per_s']:>12.1f} {r['speedup_tokens']:>7.1f} "
            f"{r['speedup_bits']:>7.1f}  (load {r['load']:.1f})"
        )
    if not result["validation"]:
        return lines
    lines += [
        "",
        "Validation, seconds per 1,000 samples per model (no grad)",
        f"{'T':>5} {'K':>4} {'simple':>10} {'engine/tok':>11} {'engine/bits':>12} "
        f"{'x tok':>7} {'x bits':>7}",
    ]
    for r in result["validation"]:
        lines.append(
            f"{r['T']:>5} {r['K']:>4} {r['simple_s_per_1000']:>10.4f} "
            f"{r['engine_tokens_s_per_1000']:>11.4f} {r['engine_bits_s_per_1000']:>12.4f} "
            f"{r['speedup_tokens']:>7.1f} {r['speedup_bits']:>7.1f}  (load {r['load']:.1f})"
        )
    lines.append("simple: one model at a time, full attention; engine: K models batched, "
                 "[CLS]-only; tok: token inputs; bits: inputs assembled from token tables")
    return lines


def _ratio_lines(title: str, simple: str, fast: str, r: dict[str, Any]) -> list[str]:
    """A section that times a fast path against the simple way: its title, then both times, the
    ratio, the largest difference of their answers and the load."""
    return ["", title, f"  {simple}, {fast}, ratio {r['speedup']:.2f}, max |diff| "
                       f"{r['max_abs_difference']:.1e}  (load {r['load']:.1f})"]


def _extra_lines(result: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    if "epoch" in result:
        lines += ["", "(2) One epoch of the authors' protocol incl. validation, seconds per model",
                  f"{'T':>5} {'K':>3} {'n_val':>6} {'authors-port':>13} {'engine':>9} "
                  f"{'ratio':>7}"]
        for r in result["epoch"]:
            lines.append(f"{r['T']:>5} {r['K']:>3} {r['n_val']:>6} "
                         f"{r['simple_s_per_model_epoch']:>13.3f} "
                         f"{r['engine_s_per_model_epoch']:>9.4f} {r['speedup']:>7.1f}  "
                         f"(load {r['load']:.1f})")
    if "svd" in result:
        r = result["svd"]
        lines += _ratio_lines(f"(3) Singular values of {r['n']:,} matrices {r['size']}x"
                              f"{r['size']} ({r['dtype']}, torch on {r.get('device', 'cpu')})",
                              f"numpy loop {r['numpy_loop_s']:.1f} s",
                              f"torch.linalg.svdvals batched {r['torch_batched_s']:.1f} s", r)
    if "roofline" in result:
        r = result["roofline"]
        lines += ["", f"(4) Roofline: measured fp32 matmul {r['matmul_gflops']:.1f} GFLOP/s "
                      f"(load {r['load']:.1f})"]
        for w in r["rows"]:
            lines.append(f"  {w['workload']}: {w['gflop_per_epoch']:.3f} GFLOP/epoch in "
                         f"{w['s_per_epoch']:.4f} s = {w['gflops']:.1f} GFLOP/s, "
                         f"{100 * w['fraction_of_matmul']:.0f}% of matmul")
    if "edelman" in result:
        lines += _edelman_lines(result["edelman"])
    if "ranking" in result:
        r = result["ranking"]
        lines += _ratio_lines(f"(6) Granulated Kendall tau, {r['n_boot']} bootstrap resamples "
                              f"of {r['n_models']} models (six factors)",
                              f"loop over groups {r['loop_s']:.2f} s",
                              f"one pass over pairs {r['vectorized_s']:.3f} s", r)
    if "fit" in result:
        lines += ["", "Epochs to training accuracy 1.0 (authors' protocol, reduced validation set)"]
        for r in result["fit"]:
            lines.append(f"  T={r['T']}: {r['runs']} runs, {r['max_epochs']} epochs in "
                         f"{r['wall_s']:.0f} s: reached {r['reached']}, left the plateau at "
                         f"{r['left_plateau']}, final running accuracy "
                         f"{[round(a, 3) for a in r['final_running_accuracy']]}")
    if "protocol" in result:
        r = result["protocol"]
        lines += ["", f"The whole protocol ({r['runs']} runs, {r['n_val']:,} validation samples), "
                      f"seconds per epoch on {r['device_name']}"]
        lines.append(f"  fused engine {r['fused_s_per_epoch']:.3f} s (graphs "
                     f"{r['fused_graphs']}, {r['fused_precision']})")
        if "ensemble_s_per_epoch" in r:
            lines.append(f"  per-T ensembles {r['ensemble_s_per_epoch']:.3f} s: fused "
                         f"{r['speedup']:.2f}x (load {r['load_before']:.1f} -> "
                         f"{r['load_after']:.1f})")
    if "notebooks" in result:
        lines += ["", "(5) Notebooks at quick scale under nbval"]
        for n in result["notebooks"]:
            lines.append(f"  {n['notebook']}: {n['wall_s']:.0f} s, "
                         f"{'passed' if n['passed'] else 'FAILED'} (load {n['load_before']:.1f}"
                         f" -> {n['load_after']:.1f})")
    return lines


def _edelman_lines(r: dict[str, Any]) -> list[str]:
    z = r["sizes"]
    clock = "CPU time" if r["clock"] == "cpu" else "wall time"
    lines = ["", f"(6) Effective-rank model, forward + backward of one full-batch step "
                 f"(K={z['K']}, m={z['m']}, n={z['n']}, d={z['d']}, k={z['k']}, "
                 f"{z['heads']} heads, {z['layers']} layers, {z['dtype']}; {clock}, median of "
                 f"{r['reps']}; {r['threads']} thread(s), load {r['load_before']:.1f})",
             f"  matmul {r['matmul_n']}x{r['matmul_n']}: {r['matmul_gflops']:.1f} GFLOP/s "
             f"({r['matmul_gflops_wall']:.1f} on the wall clock)"]
    for name in ("reference", "fast"):
        w = r[name]
        lines.append(f"  {name:9s}: {w['step_s']:.3f} s/step (wall {w['step_s_wall']:.3f}), "
                     f"{w['gflop_per_step']:.1f} GFLOP executed, {w['gflops']:.1f} GFLOP/s = "
                     f"{100 * w['fraction_of_matmul']:.0f}% of matmul")
    lines.append(f"  speed-up {r['speedup']:.2f}x; largest relative gradient difference "
                 f"{r['max_rel_grad_difference']:.1e} (float32)")
    if "unit" in r:
        un = r["unit"]
        lines.append(f"  one unit ({un['epochs']} epochs, {un['checkpoints'] + 1} checkpoints):")
        for name in ("reference", "fast"):
            w = un[name]
            lines.append(f"    {name:9s}: {w['unit_s'] / 60:.1f} min (checkpoint "
                         f"{w['checkpoint_s']:.1f} s, final {w['final_s']:.1f} s); "
                         f"{w['unit_tflop']:.1f} TFLOP = {w['arithmetic_s'] / 60:.1f} min at "
                         f"the matmul rate, ratio {w['unit_over_arithmetic']:.2f}")
        lines.append(f"    speed-up {un['speedup']:.2f}x")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point (``genbounds-bench`` / ``python -m genbounds.bench``)."""
    parser = argparse.ArgumentParser(prog="genbounds-bench", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    parser.add_argument("--T", type=int, nargs="+", default=[20, 200], help="sequence lengths")
    parser.add_argument("--K", type=int, nargs="+", default=[1, 5, 25, 50],
                        help="ensemble sizes")
    parser.add_argument("--sections", nargs="+", default=list(DEFAULT_SECTIONS),
                        choices=SECTIONS, help="what to measure (notebooks: minutes each)")
    parser.add_argument("--epoch-n-val", type=int, default=10_000,
                        help="validation samples in the epoch comparison")
    parser.add_argument("--svd-n", type=int, default=10_000, help="matrices in the SVD figure")
    parser.add_argument("--fit-epochs", type=int, default=6000,
                        help="epoch cap of the fit section (runs = max of --K)")
    parser.add_argument("--n-val", type=int, default=1000, help="validation samples per model")
    parser.add_argument("--k-val", type=int, default=5, help="models in the validation pass")
    parser.add_argument("--target-seconds", type=float, default=1.0,
                        help="approximate duration of each timed measurement")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    args = parser.parse_args(argv)
    if args.threads is not None:
        if args.threads < 1:
            parser.error(f"--threads must be >= 1, got {args.threads}")
        torch.set_num_threads(args.threads)
    try:
        result = run_benchmark(args.T, args.K, args.n_val, args.k_val, args.target_seconds,
                               args.device, progress=lambda m: print(m, file=sys.stderr),
                               sections=args.sections, epoch_n_val=args.epoch_n_val,
                               svd_n=args.svd_n, fit_epochs=args.fit_epochs)
    except ValueError as err:
        parser.error(str(err))
    print(format_tables(result))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
