"""Sparse majority, training only: the ensemble engine against the plain one-model loop, ABAB.

Issue #19 item 5 asks for the ensemble engine (K models as one batched computation,
:func:`genbounds.train.train_ensemble` on :class:`genbounds.models.SparseMajorityMHA` reading
bits) to be at least 10 times the plain loop at K = 50. This script measures the ratio

    ratio = (seconds per epoch of the plain loop, one model) * K / (seconds per epoch of the
            engine with K models)

on the same work as ``genbounds-bench``'s figure 1 (300 training samples, minibatches of 128,
SGD 0.01 with momentum 0.9, d = 64, 2 heads of key dimension 64): the plain loop is
:class:`genbounds.bench.PlainSparseMajorityMHA` (``nn.Linear`` projections, full attention over
all T + 1 rows, materialised tokens) trained with ``torch.optim.SGD``, exactly as the benchmark's
``simple`` column. The two are measured alternately (plain, engine, plain, engine, ...: ABAB),
``--repeats`` pairs, each block lasting about ``--target-s`` seconds, so that a change of the
machine's load (the CPU is shared) affects both; every pair gives one ratio, and the median,
minimum and maximum are printed with the load average before and after. The engine's time per
epoch includes its per-call set-up and final evaluation (one call of ``n`` epochs per block):
the ratio is, if anything, understated.

Usage::

    .venv/bin/python tools/bench_sparse_majority.py --T 20 --K 50 --repeats 7 --out out.json
    .venv/bin/python tools/bench_sparse_majority.py --table out.json ...   # markdown rows
    .venv/bin/python tools/bench_sparse_majority.py --profile              # torch.profiler
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from typing import Any

import torch
import torch.nn.functional as F

from genbounds.bench import PlainSparseMajorityMHA
from genbounds.data import make_sparse_majority_batch
from genbounds.models import SparseMajorityMHA
from genbounds.train import TrainConfig, train_ensemble

D, HEADS, KEY_DIM, N_TRAIN, BATCH, S = 64, 2, 64, 300, 128, 9


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True,
                              check=False).stdout.strip()
    except OSError:  # pragma: no cover
        return f"load average {os.getloadavg()}"


def _cpu() -> str:
    try:
        for line in open("/proc/cpuinfo").read().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:  # pragma: no cover
        pass
    return platform.processor() or "unknown"


def measure(T: int = 20, K: int = 50, repeats: int = 7, target_s: float = 2.0,
            threads: int = 1, seed: int = 0) -> dict[str, Any]:
    """Run the ABAB measurement and return everything as a JSON-ready dict."""
    torch.set_num_threads(threads)
    batch = make_sparse_majority_batch(T, list(range(K)), n_train=N_TRAIN, n_val=10, s=S, d=D,
                                       val_tokens=False)
    # plain: one model, tokens, torch.optim.SGD (genbounds-bench's "simple" column)
    X1, y1 = batch.X_train[0], batch.y_train[0]
    torch.manual_seed(seed)
    plain = PlainSparseMajorityMHA()
    opt = torch.optim.SGD(plain.parameters(), lr=0.01, momentum=0.9)
    target = F.one_hot(y1, 2).to(X1.dtype)
    gen = torch.Generator().manual_seed(seed)

    def plain_epochs(n: int) -> None:
        for _ in range(n):
            perm = torch.randperm(X1.shape[0], generator=gen)
            for start in range(0, X1.shape[0], BATCH):
                idx = perm[start:start + BATCH]
                loss = F.binary_cross_entropy_with_logits(plain(X1[idx]), target[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()

    # engine: K models batched, bits and token tables
    model = SparseMajorityMHA(D, HEADS, KEY_DIM, n_models=K, seeds=list(range(K)))
    model.set_token_tables(batch.bit_embeddings, batch.cls_embeddings, batch.positional)
    Xb, yb = batch.bits_train.to(torch.float32), batch.y_train

    def engine_epochs(n: int) -> None:
        cfg = TrainConfig(lr=0.01, momentum=0.9, batch_size=BATCH, max_epochs=n,
                          select_best="last", device="cpu")
        train_ensemble(model, Xb, yb, loss="bce_logits_onehot", config=cfg, checkpoint=False)

    def timed(fn: Any, n: int) -> float:
        t0 = time.perf_counter()
        fn(n)
        return (time.perf_counter() - t0) / n

    # warm-up and block sizes (about target_s seconds each)
    plain_epochs(1)
    engine_epochs(1)
    n_plain = max(2, math.ceil(target_s / timed(plain_epochs, 2)))
    n_engine = max(2, math.ceil(target_s / timed(engine_epochs, 2)))
    up_before = _uptime()
    t_start = datetime.datetime.now(datetime.UTC)
    pairs = []
    for _ in range(repeats):
        p = timed(plain_epochs, n_plain)
        e = timed(engine_epochs, n_engine)
        pairs.append({"plain_s_per_model_epoch": p, "engine_s_per_epoch": e,
                      "ratio": p * K / e, "load1": os.getloadavg()[0]})
    ratios = [r["ratio"] for r in pairs]
    return {
        "T": T, "K": K, "repeats": repeats, "threads": threads,
        "epochs_per_block": {"plain": n_plain, "engine": n_engine},
        "pairs": pairs,
        "ratio_median": statistics.median(ratios), "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "plain_model_epochs_per_s_median": statistics.median(
            1.0 / r["plain_s_per_model_epoch"] for r in pairs),
        "engine_model_epochs_per_s_median": statistics.median(
            K / r["engine_s_per_epoch"] for r in pairs),
        "uptime_before": up_before, "uptime_after": _uptime(),
        "started_utc": t_start.isoformat(timespec="seconds"),
        "cpu": _cpu(), "cores": os.cpu_count(), "torch": torch.__version__,
        "python": sys.version.split()[0],
    }


def profile(T: int = 20, K: int = 50, epochs: int = 10, threads: int = 1,
            rows: int = 12) -> str:
    """``torch.profiler`` table (self CPU time, grouped by operator and input shapes) of
    ``epochs`` engine epochs at ``(T, K)``: where the time of the batched path goes."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    torch.set_num_threads(threads)
    batch = make_sparse_majority_batch(T, list(range(K)), n_train=N_TRAIN, n_val=10, s=S, d=D,
                                       val_tokens=False)
    model = SparseMajorityMHA(D, HEADS, KEY_DIM, n_models=K, seeds=list(range(K)))
    model.set_token_tables(batch.bit_embeddings, batch.cls_embeddings, batch.positional)
    Xb, yb = batch.bits_train.to(torch.float32), batch.y_train

    def run(n: int) -> None:
        cfg = TrainConfig(lr=0.01, momentum=0.9, batch_size=BATCH, max_epochs=n,
                          select_best="last", device="cpu")
        train_ensemble(model, Xb, yb, loss="bce_logits_onehot", config=cfg, checkpoint=False)

    run(2)
    with torch_profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        run(epochs)
    return str(prof.key_averages(group_by_input_shape=True).table(
        sort_by="self_cpu_time_total", row_limit=rows, max_name_column_width=28,
        max_shapes_column_width=60))


def table(paths: list[str]) -> str:
    """Markdown rows (label = file name) of saved measurements: the numbers as measured."""
    lines = ["| run | T | K | started (UTC) | load before → after | plain | engine | "
             "ratio median (min–max, pairs) |", "|---|---|---|---|---|---|---|---|"]
    for path in paths:
        with open(path) as fh:
            r = json.load(fh)
        lb = r["uptime_before"].split("load average:")[1].split(",")[0].strip()
        la = r["uptime_after"].split("load average:")[1].split(",")[0].strip()
        lines.append(
            f"| {os.path.basename(path).removesuffix('.json')} | {r['T']} | {r['K']} | "
            f"{r['started_utc'][11:16]} | {lb} → {la} | "
            f"{r['plain_model_epochs_per_s_median']:.1f} | "
            f"{r['engine_model_epochs_per_s_median']:.1f} | {r['ratio_median']:.1f} "
            f"({r['ratio_min']:.1f}–{r['ratio_max']:.1f}, {r['repeats']}) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--T", type=int, default=20)
    ap.add_argument("--K", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--target-s", type=float, default=2.0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=None)
    ap.add_argument("--profile", action="store_true",
                    help="print the torch.profiler table of 10 engine epochs and exit")
    ap.add_argument("--table", nargs="+", default=None,
                    help="print saved --out files as markdown rows and exit")
    a = ap.parse_args(argv)
    if a.table:
        print(table(a.table))
        return 0
    if a.profile:
        print(profile(a.T, a.K, threads=a.threads))
        return 0
    res = measure(a.T, a.K, a.repeats, a.target_s, a.threads)
    for i, r in enumerate(res["pairs"]):
        print(f"pair {i}: plain {r['plain_s_per_model_epoch'] * 1e3:.1f} ms/model-epoch, "
              f"engine {r['engine_s_per_epoch'] * 1e3:.1f} ms/epoch (K = {res['K']}), "
              f"ratio {r['ratio']:.2f}, load {r['load1']:.1f}")
    print(f"T = {res['T']}, K = {res['K']}: ratio median {res['ratio_median']:.2f} "
          f"(min {res['ratio_min']:.2f}, max {res['ratio_max']:.2f}, {res['repeats']} ABAB "
          f"pairs); plain {res['plain_model_epochs_per_s_median']:.1f}, engine "
          f"{res['engine_model_epochs_per_s_median']:.1f} model-epochs/s (medians)")
    print(f"before: {res['uptime_before']}\nafter:  {res['uptime_after']}")
    print(f"{res['cpu']}, {res['cores']} cores, torch {res['torch']}, {res['threads']} "
          f"thread(s), started {res['started_utc']}")
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(res, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
