"""Throughput of a full-batch GD step of the shallow encoder against a plain matrix product.

Usage: ``.venv/bin/python tools/bench_shallow_encoder.py [--d-m 1024] [--n 400] [--k 3]``

For each association of the model (``forward``: ``X (W_Q^T W_K) X^T`` and ``(A X) W_V^T``;
``projected``: the paper's ``(X W_Q^T)(X W_K^T)^T`` and ``A (X W_V^T)``) it reports the
matrix-product FLOPs of one forward + backward pass over the full batch (PyTorch's
``FlopCounterMode``, as ``genbounds.bench.bench_roofline`` counts them), the marginal seconds of
one GD epoch of ``genbounds.train.train_ensemble``, the achieved GFLOP/s, and its fraction of the
float32 matrix-multiply throughput (``genbounds.estimates.matmul_gflops``, 1024 x 1024 products)
measured in the same run, before and after the epochs (the load of the shared machine moves it).
Both associations are timed on the same data and weights; the FLOPs each one *needs* differ, so
the fraction of the projected form is that of the slower algorithm, and the speed-up per epoch is
the number that matters for a user.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import torch


def step_flops(model: torch.nn.Module, X: torch.Tensor, y: torch.Tensor, projected: bool
               ) -> float:
    """Matrix-product FLOPs of one forward + backward pass (``FlopCounterMode``)."""
    from torch.utils.flop_counter import FlopCounterMode

    from genbounds.train import per_sample_loss

    params = list(model.parameters())
    with FlopCounterMode(display=False) as counter:
        f = model.forward_projected(X) if projected else model(X)  # type: ignore[operator]
        per, _ = per_sample_loss("bce_logits", f, y)
        torch.autograd.grad(per.mean(dim=1).sum(), params)
    return float(counter.get_total_flops())


def seconds_per_epoch(model: torch.nn.Module, X: torch.Tensor, y: torch.Tensor,
                      projected: bool, epochs: int = 6) -> float:
    """Marginal seconds of one full-batch GD epoch: (time of ``epochs`` - time of 1) /
    (``epochs`` - 1), with the engine's memory plan probed once beforehand."""
    from genbounds.train import TrainConfig, train_ensemble

    fwd = model.forward
    if projected:
        model.forward = model.forward_projected  # type: ignore[method-assign,assignment]
    try:
        cfg = TrainConfig(optimizer="gd", lr=0.1, max_epochs=1, select_best="last",
                          device="cpu")
        res = train_ensemble(model, X, y, loss="bce_logits", config=cfg)
        import dataclasses

        cfg = dataclasses.replace(cfg, micro_batch_size=res.micro_batch_size,
                                  eval_batch_size=res.eval_batch_size)

        def run(n: int) -> float:
            t0 = time.perf_counter()
            train_ensemble(model, X, y, loss="bce_logits",
                           config=dataclasses.replace(cfg, max_epochs=n))
            return time.perf_counter() - t0

        t1 = min(run(1) for _ in range(2))
        tn = min(run(epochs) for _ in range(2))
        return (tn - t1) / (epochs - 1)
    finally:
        model.forward = fwd  # type: ignore[method-assign]


def bench(d_m: int = 1024, N: int = 400, K: int = 3, d_s: int = 16, d: int = 64,
          epochs: int = 6) -> dict[str, Any]:
    """Both associations at one size; see the module docstring."""
    from genbounds.estimates import (
        _GEMM,  # noqa: PLC2701  (the per-device cache)
        matmul_gflops,
    )
    from genbounds.models.shallow_encoder import ShallowEncoder

    g = torch.Generator().manual_seed(0)
    X = torch.randn(K, N, d_s, d, generator=g)
    y = (torch.rand(K, N, generator=g) < 0.5).to(torch.int64)
    peak0 = matmul_gflops("cpu")
    rows: list[dict[str, Any]] = []
    for projected in (False, True):
        model = ShallowEncoder(d, d_m, n_models=K, seeds=list(range(K)))
        flops = step_flops(model, X, y, projected)
        s = seconds_per_epoch(model, X, y, projected, epochs)
        rows.append({"association": "projected (paper)" if projected else "X (W_Q^T W_K) X^T",
                     "gflop_per_epoch": flops / 1e9, "s_per_epoch": s,
                     "gflops": flops / s / 1e9})
    _GEMM.clear()
    peak1 = matmul_gflops("cpu")
    peak = max(peak0, peak1)
    for r in rows:
        r["fraction_of_matmul"] = r["gflops"] / peak
    m64 = ShallowEncoder(d, d_m, n_models=1, seeds=[0], dtype=torch.float64)
    X64 = torch.randn(1, 64, d_s, d, generator=g, dtype=torch.float64)
    with torch.no_grad():
        diff = float((m64(X64) - m64.forward_projected(X64)).abs().max())
    return {"d_m": d_m, "N": N, "K": K, "d_s": d_s, "d": d, "threads": torch.get_num_threads(),
            "matmul_gflops_before": peak0, "matmul_gflops_after": peak1,
            "matmul_gflops": peak, "rows": rows,
            "speedup_per_epoch": rows[1]["s_per_epoch"] / rows[0]["s_per_epoch"],
            "float64_max_abs_difference": diff, "load": os.getloadavg()[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d-m", type=int, default=1024)
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=6)
    a = ap.parse_args()
    print(json.dumps(bench(a.d_m, a.n, a.k, epochs=a.epochs), indent=1))


if __name__ == "__main__":
    main()
