"""``genbounds-bench``: how much faster the ensemble engine trains the sparse-majority model.

Measured in one process, on one machine, on the authors' sparse-majority setting (d = 64,
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

Prints two tables with speed-up ratios and writes everything as JSON to ``--out``. The
default run takes about one to two minutes on a 2-core CPU.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from collections.abc import Callable, Sequence
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

__all__ = ["PlainSparseMajorityMHA", "main", "run_benchmark"]

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


def _simple_train_epochs(X: torch.Tensor, y: torch.Tensor, device: torch.device,
                         ) -> Callable[[int], None]:
    model = PlainSparseMajorityMHA().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    target = F.one_hot(y, 2).to(X.dtype)
    gen = torch.Generator().manual_seed(0)

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


def run_benchmark(
    T_values: Sequence[int] = (20, 200),
    K_values: Sequence[int] = (1, 5, 25),
    n_val: int = 1000,
    K_val: int = 5,
    target_s: float = 1.0,
    device: str = "auto",
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the measurements and return them as a JSON-ready dict (see the module docstring)."""
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
    dev = resolve_device(device)
    say = progress or (lambda _msg: None)
    train_rows: list[dict[str, Any]] = []
    val_rows: list[dict[str, Any]] = []
    for T in T_values:
        K_max = max(max(K_values), K_val)
        batch = make_sparse_majority_batch(T, list(range(K_max)), n_train=N_TRAIN,
                                           n_val=n_val, s=S, d=D, device=dev,
                                           val_tokens=False)

        def model_for(K: int, batch: Any = batch) -> SparseMajorityMHA:
            m = SparseMajorityMHA(D, HEADS, KEY_DIM, n_models=K, seeds=list(range(K))).to(dev)
            m.set_token_tables(batch.bit_embeddings[:K], batch.cls_embeddings[:K],
                               batch.positional)
            return m

        say(f"T={T}: simple training loop")
        s_simple, r_simple = _timed(
            _simple_train_epochs(batch.X_train[0], batch.y_train[0], dev), dev, target_s)
        for K in K_values:
            say(f"T={T}, K={K}: engine")
            m = model_for(K)
            s_tok, r_tok = _timed(_engine_train_epochs(m, batch.X_train[:K], batch.y_train[:K],
                                                       dev), dev, target_s)
            s_bits, r_bits = _timed(_engine_train_epochs(
                m, batch.bits_train[:K].to(torch.float32), batch.y_train[:K], dev), dev,
                target_s)
            row = {
                "T": T, "K": K,
                "simple_model_epochs_per_s": 1.0 / s_simple,
                "engine_tokens_model_epochs_per_s": K / s_tok,
                "engine_bits_model_epochs_per_s": K / s_bits,
                "epochs_timed": {"simple": r_simple, "engine_tokens": r_tok,
                                 "engine_bits": r_bits},
            }
            row["speedup_tokens"] = K / s_tok * s_simple
            row["speedup_bits"] = K / s_bits * s_simple
            train_rows.append(row)

        say(f"T={T}: validation passes")
        bits_val = batch.bits_val[:K_val].to(torch.float32)
        X_val = torch.stack([ds.val_tokens(device=dev) for ds in batch.datasets[:K_val]])
        y_val = batch.y_val[:K_val]
        s_sv, _ = _timed(_simple_validate(X_val[0], y_val[0], dev), dev, target_s)
        m = model_for(K_val)
        s_tv, _ = _timed(_engine_validate(m, X_val, y_val, dev), dev, target_s)
        s_bv, _ = _timed(_engine_validate(m, bits_val, y_val, dev), dev, target_s)
        per_k = 1000.0 / n_val
        vrow = {
            "T": T, "K": K_val, "n_val": n_val,
            "simple_s_per_1000": s_sv * per_k,
            "engine_tokens_s_per_1000": s_tv * per_k / K_val,
            "engine_bits_s_per_1000": s_bv * per_k / K_val,
        }
        vrow["speedup_tokens"] = vrow["simple_s_per_1000"] / vrow["engine_tokens_s_per_1000"]
        vrow["speedup_bits"] = vrow["simple_s_per_1000"] / vrow["engine_bits_s_per_1000"]
        val_rows.append(vrow)
        del X_val
    return {
        "device": str(dev),
        "device_name": (torch.cuda.get_device_name(dev) if dev.type == "cuda"
                        else platform.processor() or platform.machine()),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "setting": {"d": D, "heads": HEADS, "key_dim": KEY_DIM, "n_train": N_TRAIN,
                    "batch_size": BATCH, "optimizer": "SGD(lr=0.01, momentum=0.9)",
                    "dtype": "float32"},
        "training": train_rows,
        "validation": val_rows,
    }


def format_tables(result: dict[str, Any]) -> str:
    """The two tables printed by ``genbounds-bench``."""
    lines = [
        f"device: {result['device']} ({result['device_name']}), torch {result['torch']}, "
        f"{result['torch_threads']} threads",
        "",
        "Training, model-epochs per second (300 samples, batch 128, no validation)",
        f"{'T':>5} {'K':>4} {'simple':>10} {'engine/tok':>11} {'engine/bits':>12} "
        f"{'x tok':>7} {'x bits':>7}",
    ]
    for r in result["training"]:
        lines.append(
            f"{r['T']:>5} {r['K']:>4} {r['simple_model_epochs_per_s']:>10.1f} "
            f"{r['engine_tokens_model_epochs_per_s']:>11.1f} "
            f"{r['engine_bits_model_epochs_per_s']:>12.1f} {r['speedup_tokens']:>7.1f} "
            f"{r['speedup_bits']:>7.1f}"
        )
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
            f"{r['speedup_tokens']:>7.1f} {r['speedup_bits']:>7.1f}"
        )
    lines.append("simple: one model at a time, full attention; engine: K models batched, "
                 "[CLS]-only; tok: token inputs; bits: inputs assembled from token tables")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point (``genbounds-bench`` / ``python -m genbounds.bench``)."""
    parser = argparse.ArgumentParser(prog="genbounds-bench", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    parser.add_argument("--T", type=int, nargs="+", default=[20, 200], help="sequence lengths")
    parser.add_argument("--K", type=int, nargs="+", default=[1, 5, 25], help="ensemble sizes")
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
                               args.device, progress=lambda m: print(m, file=sys.stderr))
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
