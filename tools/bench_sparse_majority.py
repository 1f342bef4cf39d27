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

The fused protocol engine (issue #29: every run of every T as one computation,
:mod:`genbounds.train.fused_protocol`)::

    python tools/bench_sparse_majority.py --fused-check [--device cuda]
        # small sizes: CUDA graph against eager, a budget-interrupted and resumed run against
        # the uninterrupted one (bitwise), and against the float64 CPU reference; exit 3 if
        # the graph disagrees with eager
    python tools/bench_sparse_majority.py --protocol --epochs 1000 --baseline-epochs 0 \
        --device cuda --out gpu.json   # paper-scale seconds per epoch, all 50 runs
    python tools/bench_sparse_majority.py --protocol --epochs 4 --baseline-epochs 2 \
        --device cpu --threads 1       # the same on a CPU, against today's per-T engine
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

from genbounds.bench import BATCH, HEADS, KEY_DIM, N_TRAIN, D, S, simple_train_epochs
from genbounds.data import make_sparse_majority_batch
from genbounds.models import SparseMajorityMHA
from genbounds.train import TrainConfig, train_ensemble


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


def _engine_epochs(batch: Any, K: int) -> Any:
    """``epochs(n)``: ``n`` epochs of the engine on ``K`` models batched (bits and token
    tables of ``batch``, the same SGD and batches as the simple way)."""
    model = SparseMajorityMHA(D, HEADS, KEY_DIM, n_models=K, seeds=list(range(K)))
    model.set_token_tables(batch.bit_embeddings, batch.cls_embeddings, batch.positional)
    Xb, yb = batch.bits_train.to(torch.float32), batch.y_train

    def epochs(n: int) -> None:
        cfg = TrainConfig(lr=0.01, momentum=0.9, batch_size=BATCH, max_epochs=n,
                          select_best="last", device="cpu")
        train_ensemble(model, Xb, yb, loss="bce_logits_onehot", config=cfg, checkpoint=False)

    return epochs


def measure(T: int = 20, K: int = 50, repeats: int = 7, target_s: float = 2.0,
            threads: int = 1, seed: int = 0) -> dict[str, Any]:
    """Run the ABAB measurement and return everything as a JSON-ready dict."""
    torch.set_num_threads(threads)
    batch = make_sparse_majority_batch(T, list(range(K)), n_train=N_TRAIN, n_val=10, s=S, d=D,
                                       val_tokens=False)
    # plain: one model, tokens, torch.optim.SGD (genbounds-bench's "simple" column)
    torch.manual_seed(seed)
    plain_epochs = simple_train_epochs(batch.X_train[0], batch.y_train[0], torch.device("cpu"),
                                       seed=seed)
    engine_epochs = _engine_epochs(batch, K)  # K models batched, bits and token tables

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
    run = _engine_epochs(batch, K)
    run(2)
    with torch_profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        run(epochs)
    return str(prof.key_averages(group_by_input_shape=True).table(
        sort_by="self_cpu_time_total", row_limit=rows, max_name_column_width=28,
        max_shapes_column_width=60))


def _small_config(max_epochs: int = 300, device: str = "cpu") -> Any:
    from genbounds.experiments.sparse_majority import SparseMajorityConfig

    return SparseMajorityConfig(T_values=(9, 13), runs_per_T=3, n_train=16, n_val=40,
                                n_test=10, s=1, d=16, heads=2, key_dim=8, lr=0.1, batch_size=8,
                                max_epochs=max_epochs, device=device)


def fused_check(device: str = "auto", epochs: int = 300) -> dict[str, Any]:
    """The fused engine at small sizes on ``device``: CUDA graph against eager, an interrupted
    and resumed run against the uninterrupted one, and both against the float64 CPU
    reference (stopping epochs, kept epochs, kept weights)."""
    import tempfile
    from pathlib import Path

    import numpy as np

    from genbounds.experiments.sparse_majority import fused_groups, fused_settings
    from genbounds.train import BudgetExhausted, UnitCheckpoint, resolve_device
    from genbounds.train.fused_protocol import train_fused

    dev = resolve_device(device)
    cfg = _small_config(epochs, str(dev))
    g32 = fused_groups(cfg, torch.float32)
    kw = {"heads": cfg.heads, "key_dim": cfg.key_dim}

    def go(graphs: bool, ckpt: Any = False, dtype: torch.dtype = torch.float32,
           where: str = str(dev)) -> Any:
        groups = g32 if dtype == torch.float32 else fused_groups(cfg, dtype)
        st = fused_settings(cfg, sync_every=50, cuda_graphs=graphs, device=where)
        return train_fused(groups, st, dtype=dtype, checkpoint=ckpt, **kw)

    out: dict[str, Any] = {"device": str(dev), "epochs": epochs}
    t0 = time.perf_counter()
    ref = go(False, dtype=torch.float64, where="cpu")
    eager = go(False)
    graph = go(True)
    out["seconds"] = time.perf_counter() - t0
    # interrupted after its first read-back, then resumed from the file
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "unit.pt"
        first = UnitCheckpoint(path, deadline=time.monotonic(), every_s=0.0)
        try:
            go(True, first)
            out["interrupted"] = False
        except BudgetExhausted as exc:
            out["interrupted"] = True
            out["interrupted_at_epoch"] = exc.epoch
        resumed = go(True, UnitCheckpoint(path, every_s=1e9))

    def diff(a: Any, b: Any) -> dict[str, Any]:
        w = max(float((a.best_state[n].double() - b.best_state[n].double()).abs().max())
                for n in a.best_state)
        return {"same_stops": bool((a.stopped_epoch == b.stopped_epoch).all()),
                "same_kept_epochs": bool((a.best_epoch == b.best_epoch).all()),
                "same_reached": bool((a.reached_train_accuracy
                                      == b.reached_train_accuracy).all()),
                "max_weight_diff": w}

    out["graph_vs_eager"] = diff(graph, eager)
    out["resumed_vs_uninterrupted"] = diff(resumed, graph)
    out["resumed_bitwise"] = all(torch.equal(resumed.best_state[n], graph.best_state[n])
                                 for n in graph.best_state) and bool(
        np.array_equal(resumed.curves["val_loss"], graph.curves["val_loss"], equal_nan=True))
    out["fp32_vs_fp64_cpu"] = diff(eager, ref)
    out["graphs_ran"] = graph.graphs
    out["stopped_epoch"] = graph.stopped_epoch.tolist()
    out["reached"] = graph.reached_train_accuracy.tolist()
    # a broken capture (a stale buffer, a missed update) shows within the first epochs; over
    # hundreds of epochs float32 rounding may move a stopping or kept epoch by itself
    early = graph.curve_epoch < 50
    rel = max(float(np.nanmax(np.abs(graph.curves[k][:, early] - eager.curves[k][:, early])
                              / np.abs(eager.curves[k][:, early]))) for k in ("loss", "val_loss"))
    out["graph_vs_eager_first_50_epochs_max_rel_diff"] = rel
    out["graph_ok"] = bool(rel < 1e-3 and np.array_equal(
        np.isnan(graph.curves["loss"]), np.isnan(eager.curves["loss"])) or (
        out["graph_vs_eager"]["same_stops"] and out["graph_vs_eager"]["max_weight_diff"] < 1e-4))
    return out


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
    ap.add_argument("--fused-check", action="store_true",
                    help="check the fused engine at small sizes on --device (see above)")
    ap.add_argument("--protocol", action="store_true",
                    help="seconds per epoch of the whole protocol, fused against per-T")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--baseline-epochs", type=int, default=2)
    ap.add_argument("--sync-every", type=int, default=None)
    ap.add_argument("--no-graphs", action="store_true")
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args(argv)
    if a.fused_check or a.protocol:
        torch.set_num_threads(a.threads)
        if a.fused_check:
            res = fused_check(a.device)
            print(json.dumps(res, indent=1))
        else:
            from genbounds.bench import bench_protocol

            res = bench_protocol(a.epochs, a.baseline_epochs, a.device, a.sync_every,
                                 not a.no_graphs)
            print(f"protocol ({res['runs']} runs, n_val {res['n_val']}) on {res['device']} "
                  f"({res['device_name']}, torch {res['torch']}, {res['threads']} thread(s)): "
                  f"fused {res['fused_s_per_epoch'] * 1e3:.2f} ms per epoch "
                  f"(graphs {res['fused_graphs']}, {res['fused_precision']}, {res['epochs']} "
                  f"epochs, read back every {res['sync_every']})")
            if "ensemble_s_per_epoch" in res:
                print(f"today's engine (per-T ensembles, same process): "
                      f"{res['ensemble_s_per_epoch'] * 1e3:.1f} ms per epoch; fused is "
                      f"{res['speedup']:.2f}x faster")
            print(json.dumps(res))
        if a.out:
            with open(a.out, "w") as fh:
                json.dump(res, fh, indent=1)
        return 3 if a.fused_check and not res["graph_ok"] else 0
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
