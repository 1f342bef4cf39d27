"""Time and peak memory of an experiment, from rates measured on the machine that will run it.

``python -m genbounds reproduce`` prints, before each experiment, :func:`estimate` (unless the
experiment brings its own ``estimate``). How the numbers come about:

1. **Work.** Every unit of the config is turned into a :class:`Workload`: the model it trains
   (built for real, with the unit's ensemble size K), its epochs and training samples, how
   many calls of the engine it makes, how many samples it evaluates without a gradient
   (``eval_samples``: validation and evaluation passes), and the bytes of its data. The
   forward FLOPs per sample are *counted* with
   :class:`torch.utils.flop_counter.FlopCounterMode` on the real model (no formula to get
   wrong).
2. **Rates, measured now.** (One unit only when all are within :data:`SAME_RATES` of each
   other in FLOPs per sample.) For the units with the largest and the smallest forward cost per
   sample, the engine itself (:func:`genbounds.train.train_ensemble`, the unit's batch size,
   1 and 3 epochs on a calibration set of ``n_cal`` samples, and 3 epochs on a quarter of it)
   and the no-grad evaluation (:func:`genbounds.train.evaluate_models`) are timed on the
   configured device: an epoch on ``n`` samples costs ``a + b n`` seconds, a call of the engine
   ``setup`` more (its memory probe and final evaluation), an evaluated sample ``per_eval``.
   Every other unit uses the rates of the calibrated unit nearest in FLOPs per sample, its
   per-sample terms scaled by the FLOP ratio. Measuring costs a few seconds (once per process
   and shape).
3. **Peak memory** of a unit = its data + 6 copies of the parameters (weights, gradient,
   momentum, kept, initial, one temporary) + the activations of one micro-batch, from the
   engine's own probe (:func:`genbounds.train.memory.activation_bytes_per_sample`), capped by
   the engine's memory budget (half the free memory) like the engine caps it.

4. **Calibration on units that ran.** Given a results store that already holds some units of
   the config (:func:`unit_seconds`, :func:`estimate` with ``store``), every prediction is
   corrected by the stored units that ran on the same kind of device (:func:`calibration`: the
   median ratio measured / predicted, or with three or more units spanning a factor 4 in cost
   a robust power fit, :func:`fit_calibration`); the command line and the time budget of
   ``reproduce`` estimate the missing units this way. Uncalibrated, the model errs by up to
   10x at quick scale, more on a loaded machine (issue #17).

Sparse majority stops at training accuracy 1.0 or at the epoch cap; the estimate is therefore
an **upper bound** at the cap, and its note quotes the measured number of epochs runs needed
(:data:`EPOCHS_TO_FIT`, measured on the 2-core CPU; see ``book/performance.md``). With the
protocol's SGD (the paper preset) every run is trained by the fused engine as one unit, whose
cost per epoch was measured (:data:`FUSED_EPOCH_SECONDS`: an H100 with CUDA graphs, the 2-core
CPU): :func:`fused_protocol_estimate` multiplies it by the epochs left (from the unit's
checkpoint, if any) and measures nothing.

What is not counted: the effective-rank spectra and sensitivity matrices (seconds at quick
scale), norm tables, data loading. ``offset_rademacher``'s heavy-tail units train with their own
loop (``fit_local``); they are estimated with the engine's rate for the same model.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np
import torch
from torch import nn

from genbounds.experiments.registry import Estimate
from genbounds.train import (
    InputSet,
    LossName,
    TrainConfig,
    evaluate_models,
    resolve_device,
    train_ensemble,
)
from genbounds.train.memory import activation_bytes_per_sample, available_memory_bytes

__all__ = ["CALIBRATION_FLOPS", "EPOCHS_TO_FIT", "FUSED_EPOCH_SECONDS", "KNOWN", "SAME_RATES",
           "Calibration", "UnitEstimates", "Workload", "calibration", "covers", "estimate",
           "fit_calibration", "forward_flops", "fused_protocol_estimate", "matmul_gflops",
           "predicted_unit_seconds", "unit_estimates", "unit_seconds", "workloads"]

#: Measured at the authors' protocol on the 2-core CPU (2026-11-26, load average 6-10,
#: ``genbounds-bench --sections fit``; validation reduced to 200 samples; book/performance.md).
EPOCHS_TO_FIT: dict[int, str] = {
    20: "4 runs to 6,000 epochs: none at 1.0; 2 left the 50% plateau (epochs 181, 4,429), "
        "2 did not; earlier 5 runs to 20,000 epochs: none at 1.0",
    200: "4 runs to 2,500 epochs: none at 1.0, none left the plateau",
}


#: Units whose forward FLOPs per sample are within this factor of each other are estimated from
#: one calibrated unit (the costliest); otherwise the cheapest and the costliest are calibrated.
SAME_RATES = 4.0

#: FLOPs of one calibration pass (forward + backward of the calibration set): keeps the
#: measurement to a fraction of a second per pass.
CALIBRATION_FLOPS = {"cpu": 2e9, "cuda": 2e12}


#: What a :attr:`Workload.build` returns: the models, the inputs and the labels.
Built = tuple[nn.Module, torch.Tensor, torch.Tensor]


@dataclass(frozen=True)
class Workload:
    """The training work of one unit (see the module docstring)."""

    name: str
    build: Callable[[int], Built]
    loss: LossName
    K: int
    epochs: int
    n_train: int
    calls: int
    eval_samples: float
    batch_size: int | None
    data_bytes: float
    n_cal: int
    device: str


# ---------------------------------------------------------------------------------- measured
_GEMM: dict[str, float] = {}
_RATES: dict[tuple[Any, ...], _Rates] = {}


def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def matmul_gflops(device: str = "auto", n: int | None = None, seconds: float = 0.5) -> float:
    """Measured float32 matrix-multiply throughput of ``device`` in GFLOP/s (``n x n``
    products, ``n = 1024`` on CPU and 8192 on CUDA; cached per device)."""
    dev = resolve_device(device)
    key = f"{dev}:{n}"
    if key in _GEMM:
        return _GEMM[key]
    n = n or (8192 if dev.type == "cuda" else 1024)
    a = torch.randn(n, n, device=dev)
    b = torch.randn(n, n, device=dev)
    c = a @ b
    _sync(dev)
    reps, t = 0, 0.0
    t0 = time.perf_counter()
    while t < seconds or reps < 2:
        torch.matmul(a, b, out=c)
        reps += 1
        _sync(dev)
        t = time.perf_counter() - t0
    _GEMM[key] = 2.0 * n**3 * reps / t / 1e9
    return _GEMM[key]


def forward_flops(model: nn.Module, X: torch.Tensor) -> float:
    """FLOPs of ``model(X)`` as counted by PyTorch's FlopCounterMode (matrix products)."""
    from torch.utils.flop_counter import FlopCounterMode

    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(X)
    return float(counter.get_total_flops())


@dataclass(frozen=True)
class _Rates:
    """Measured on one unit's model: an epoch on ``n`` samples takes ``a + b n`` seconds, a
    call of the engine ``setup`` more, an evaluated sample ``per_eval``."""

    a: float
    b: float
    setup: float
    per_eval: float
    flops: float
    act: int


def _timed(fn: Callable[[], Any], dev: torch.device, reps: int = 2) -> float:
    best = math.inf
    for _ in range(reps):
        _sync(dev)
        t0 = time.perf_counter()
        fn()
        _sync(dev)
        best = min(best, time.perf_counter() - t0)
    return best


def _measure(w: Workload) -> _Rates:
    """Time the engine on the unit's model (see the module docstring); cached."""
    key = (w.name, w.K, w.n_cal, w.batch_size, w.loss, w.device, w.build.__qualname__,
           w.build.__defaults__)
    if key in _RATES:
        return _RATES[key]
    dev = resolve_device(w.device)
    model, X, y = w.build(w.n_cal)
    model = model.to(dev)
    X, y = X.to(dev), y.to(dev)
    flops = forward_flops(model, X[:, :2]) / 2.0

    def train(E: int, n: int) -> float:
        cfg = TrainConfig(optimizer="sgd", lr=1e-6, batch_size=w.batch_size, max_epochs=E,
                          select_best="last", device=str(dev))
        return _timed(lambda: train_ensemble(model, X[:, :n], y[:, :n], loss=w.loss,
                                             config=cfg), dev)

    n1 = w.n_cal
    train(1, n1)  # warm-up
    t1, t3 = train(1, n1), train(3, n1)
    pe1 = max((t3 - t1) / 2.0, 1e-9)
    setup = max(t1 - pe1, 0.0)
    if w.batch_size is None and n1 >= 8:  # full batch: an affine cost a + b n
        n2 = n1 // 4
        pe2 = max((train(3, n2) - setup) / 3.0, 0.0)
        b = max((pe1 - pe2) / (n1 - n2), 0.0)
        a = max(pe1 - b * n1, 0.0)
    else:  # minibatches: measured at the unit's own training-set size
        a, b = 0.0, pe1 / n1
    state = {**{n: p.detach() for n, p in model.named_parameters()},
             **dict(model.named_buffers())}
    inputs = InputSet(X, n1, w.K, "X", X.dtype, dev)
    idx = np.arange(w.K)
    evaluate_models(model, state, inputs, y, idx, w.loss, None)
    per_eval = _timed(lambda: evaluate_models(model, state, inputs, y, idx, w.loss, None),
                      dev) / n1
    act = activation_bytes_per_sample(model, state, inputs, y, w.loss)
    _RATES[key] = _Rates(a, b, setup, per_eval, flops, act)
    return _RATES[key]


def _params_bytes(model: nn.Module) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


def _per_unit(ws: Sequence[Workload], note: str) -> tuple[list[float], Estimate]:
    """Seconds of each unit, and the experiment's :class:`Estimate` (their sum)."""
    t_start = time.perf_counter()
    dev = resolve_device(ws[0].device)
    flops = []
    for w in ws:  # counted on the real model, 2 samples
        m, X, _ = w.build(2)
        flops.append(forward_flops(m, X[:, :2]) / 2.0)
        del m, X
    order = np.argsort(flops)
    cal_idx = sorted({int(order[0]), int(order[-1])})
    if flops[int(order[-1])] <= SAME_RATES * max(flops[int(order[0])], 1.0):
        # close in cost: one calibration, so that the units' predictions share one
        # measurement (two measurements on a loaded machine can differ 5x between minutes)
        cal_idx = [int(order[-1])]
    budget_flops = CALIBRATION_FLOPS["cuda" if dev.type == "cuda" else "cpu"]

    def small(i: int) -> Workload:  # a calibration set of about budget_flops per pass
        n = int(budget_flops / max(3.0 * flops[i], 1.0))
        return replace(ws[i], n_cal=max(8, min(ws[i].n_cal, n)))

    cal = {i: _measure(small(i)) for i in cal_idx}
    per_unit: list[float] = []
    peak = 0.0
    budget = 0.5 * available_memory_bytes(dev)
    for i, w in enumerate(ws):
        j = min(cal_idx, key=lambda c: abs(math.log(max(flops[c], 1.0))
                                           - math.log(max(flops[i], 1.0))))
        r = cal[j]
        scale = flops[i] / r.flops if r.flops > 0 else 1.0
        per_unit.append(w.epochs * (r.a + r.b * scale * w.n_train) + w.calls * r.setup
                        + w.eval_samples * r.per_eval * scale)
        m, _, _ = w.build(2)
        B = (w.batch_size or w.n_train) if w.epochs > 0 else 0  # init-only: no activations
        peak = max(peak, w.data_bytes + 6 * _params_bytes(m) + min(r.act * scale * B, budget))
    where = (torch.cuda.get_device_name(dev) if dev.type == "cuda"
             else f"this CPU ({torch.get_num_threads()} threads)")
    cal_s = time.perf_counter() - t_start
    return per_unit, Estimate(
        seconds=sum(per_unit), peak_bytes=peak, device=where,
        note=f"{note}; rates measured now on {len(cal_idx)} of {len(ws)} units "
             f"in {cal_s:.0f} s, others scaled by counted FLOPs")


# ---------------------------------------------------------------------------- the experiments
def _random_build(model: Callable[[], nn.Module], K: int, token_shape: tuple[int, ...], labels: str,
                  *, scale: float = 1.0, dtype: torch.dtype = torch.float32
                  ) -> Callable[[int], Built]:
    """A :attr:`Workload.build` on random data of the unit's shape: ``K`` models of
    ``model()``, ``n`` Gaussian sequences of ``token_shape`` divided by ``sqrt(scale)`` and
    labels ``"01"`` (class indices), ``"pm1"`` (``-1``/``+1``) or ``"real"`` (Gaussian)."""
    def build(n: int) -> Built:
        g = torch.Generator().manual_seed(0)
        X = torch.randn(K, n, *token_shape, generator=g, dtype=dtype)
        if scale != 1.0:
            X = X / math.sqrt(scale)
        if labels == "real":
            y = torch.randn(K, n, generator=g, dtype=dtype)
        else:
            coin = torch.rand(K, n, generator=g) < 0.5
            y = (coin if labels == "01" else torch.where(coin, -1, 1)).to(torch.int64)
        return model(), X, y
    return build


def _sparse_majority(cfg: Any) -> tuple[list[Workload], str]:
    from genbounds.data import make_sparse_majority_batch
    from genbounds.models import SparseMajorityMHA

    ws = []
    for T in cfg.T_values:
        K = cfg.runs_per_T

        def build(n: int, T: int = T, K: int = K) -> Built:
            b = make_sparse_majority_batch(T, list(range(K)), n_train=max(n, 2), n_val=1,
                                           s=cfg.s, d=cfg.d, val_tokens=False)
            m = SparseMajorityMHA(cfg.d, cfg.heads, cfg.key_dim, n_models=K,
                                  seeds=list(range(K)))
            m.set_token_tables(b.bit_embeddings, b.cls_embeddings, b.positional)
            return m, b.bits_train.float(), b.y_train

        E = cfg.max_epochs
        ws.append(Workload(
            name="sparse_majority", build=build, loss="bce_logits_onehot", K=K,
            epochs=E, n_train=cfg.n_train, calls=1,
            eval_samples=float(E * cfg.n_val + cfg.n_train + cfg.n_val + cfg.n_test),
            batch_size=cfg.batch_size, n_cal=cfg.n_train,
            data_bytes=4.0 * K * (cfg.n_train + cfg.n_val + cfg.n_test) * (T + 1),
            device=cfg.device))
    fit = "; ".join(f"T={T}: {v}" for T, v in EPOCHS_TO_FIT.items())
    note = (f"UPPER BOUND at the cap of {cfg.max_epochs:,} epochs per run (a run stops "
            f"earlier at training accuracy 1.0; measured on the 2-core CPU: {fit})")
    return ws, note


def _shallow_gd(cfg: Any) -> tuple[list[Workload], str]:
    from genbounds.experiments.shallow_gd import units
    from genbounds.models.shallow_encoder import ShallowEncoder

    ws = []
    for u in units(cfg):
        K = u.seeds
        build = _random_build(partial(ShallowEncoder, 64, u.d_m, n_models=K,
                                      seeds=list(range(K))), K, (16, 64), "01")
        n_eval = u.N + u.n_val + u.n_test
        ws.append(Workload(
            name="shallow_gd", build=build, loss="bce_logits", K=K,
            epochs=u.epochs, n_train=u.N, calls=u.epochs,
            eval_samples=float(u.epochs * (u.N + n_eval) + n_eval),
            batch_size=None, n_cal=min(u.N, 512),
            data_bytes=4.0 * K * n_eval * 16 * 64, device=u.device))
    return ws, "full-batch GD, every epoch's train/val/test evaluation included"


def _effective_rank(cfg: Any) -> tuple[list[Workload], str]:
    from genbounds.experiments.effective_rank import units
    from genbounds.models import EdelmanTransformer

    ws = []
    for u in units(cfg):
        K = u.n_models
        build = _random_build(partial(EdelmanTransformer, d=u.d, k=u.k, heads=u.heads,
                                      layers=u.layers, n_models=K, seeds=list(range(K))),
                              K, (u.T + 1, u.d), "pm1", scale=u.d)

        ws.append(Workload(
            name="effective_rank", build=build, loss="logistic", K=K,
            epochs=u.epochs, n_train=u.m, calls=u.checkpoints,
            eval_samples=float((u.checkpoints + 1) * (u.m + u.n_test)),
            batch_size=None, n_cal=min(u.m, 512),
            data_bytes=4.0 * K * (u.m + u.n_test) * (u.T + 1) * u.d, device=u.device))
    return ws, ("full-batch Adam and checkpoint evaluations; spectra and sensitivity "
                "matrices not counted")


def _offset_rademacher(cfg: Any) -> tuple[list[Workload], str]:
    from genbounds.experiments.offset_rademacher import units
    from genbounds.models.li_transformer import LiTransformer

    ws = []
    for u in units(cfg):
        K = u.seeds
        build = _random_build(partial(LiTransformer, u.d, u.student_rank, heads=u.heads,
                                      layers=u.layers, rank_qk=u.student_rank, n_models=K,
                                      seeds=list(range(K)), dtype=torch.float64),
                              K, (u.T, u.d), "real", dtype=torch.float64)
        ws.append(Workload(
            name="offset_rademacher", build=build, loss="mse", K=K,
            epochs=u.steps, n_train=u.n, calls=1, eval_samples=float(u.n + u.n_test),
            batch_size=None, n_cal=min(u.n, 512),
            data_bytes=8.0 * K * u.n * u.T * u.d + 8.0 * u.n_test * u.T * u.d,
            device=u.device))
    return ws, "full-batch Adam steps (heavy-tail units at the engine's rate)"


def _comparison(cfg: Any) -> tuple[list[Workload], str]:
    from genbounds.experiments.comparison import settings
    from genbounds.models import EdelmanTransformer

    ws = []
    for u in settings(cfg):
        K = u.seeds
        d = u.d if u.task == "sparse_majority" else 64
        build = _random_build(partial(EdelmanTransformer, d=d, k=u.width, heads=u.heads,
                                      layers=u.depth, n_models=K, seeds=list(range(K)),
                                      cls_index=-1), K, (u.T + 1, d), "01", scale=d)
        searches = 2 * u.search_depth * u.montecarlo_samples * u.n  # the two sigma searches
        ws.append(Workload(
            name="comparison", build=build, loss="bce_logits", K=K, epochs=u.epochs,
            n_train=u.n, calls=1, eval_samples=float(u.n + u.n_test + searches),
            batch_size=None, n_cal=min(u.n, 512),
            data_bytes=4.0 * K * (u.n + u.n_test) * (u.T + 1) * d, device=u.device))
    return ws, ("full-batch Adam, test evaluation and the two PAC-Bayes sigma searches, "
                "every setting as an EdelmanTransformer")


def _offset_complexity(cfg: Any) -> tuple[list[Workload], str]:
    from genbounds.models.li_transformer import LiTransformer

    ws = []
    for u in cfg.units():
        K = u.net_draws * u.restarts
        build = _random_build(partial(LiTransformer, u.d, u.k, n_models=K, seeds=list(range(K)),
                                      dtype=torch.float64), K, (u.T, u.d), "real",
                              dtype=torch.float64)
        ws.append(Workload(
            name="offset_rademacher_complexity", build=build, loss="mse", K=K,
            epochs=2 * u.steps, n_train=u.n, calls=2, eval_samples=0.0, batch_size=None,
            n_cal=min(u.n, 512), data_bytes=8.0 * K * u.n * u.T * u.d, device=u.device))
    return ws, ("projected-Adam suprema (offset and global) at the engine's rate for the "
                "same batched models; the closed-form linear class not counted")

#: Measured seconds per epoch of the fused sparse-majority engine on the paper preset (all
#: 50 runs, 10,000 validation sequences each), ``(low, high, where)``: the H100 figures from
#: the lease of 2026-11-26 (``results/device_runs/2026-11-26-h100-b``: 4.98 ms with CUDA graphs
#: and all 50 runs live, the median of five 200-epoch blocks, 4.56-5.48 ms; 3.78 ms over epochs
#: 75,200-150,000 as runs left, 42 to 14 live), the CPU figure on the 2-core machine of this
#: project under load (one thread, validation in chunks).
FUSED_EPOCH_SECONDS: dict[str, tuple[float, float, str]] = {
    "cuda": (3.8e-3, 5.0e-3, "an NVIDIA H100 80GB HBM3 (fp32, TF32 off, CUDA graphs)"),
    "cpu": (3.5, 4.6, "the 2-core CPU under load"),
}
#: Seconds per epoch on a CPU whatever the size (about 800 small operations an epoch), and
#: seconds per unit besides the epochs (data, the kept weights' evaluation and norms):
#: measured on the 2-core CPU with 4 tiny runs (T = 9, 15; 200 validation samples): 0.35 to
#: 1.3 s for 30 epochs and 9-10 s for 300 (10-34 ms per epoch, as the load varied); the
#: middle of that range, so that a tiny config is estimated within a factor 4.
FUSED_CPU_OVERHEAD_S = (0.015, 0.3)


def _fused_checkpoint(cfg: Any, store: Any) -> tuple[int, np.ndarray] | None:
    """``(epoch, active)`` of the unit's saved checkpoint in ``store`` (None: none)."""
    if store is None:
        return None
    from genbounds.experiments.registry import _checkpoint_file, get_experiment
    from genbounds.train.checkpoint import FORMAT, UnitCheckpoint, from_storable

    exp = get_experiment("sparse_majority")
    try:
        path = _checkpoint_file(exp, store, cfg)
        raw = UnitCheckpoint(path=path).load() if path.is_file() else None
    except Exception:  # an unreadable checkpoint: estimate from the start  # noqa: BLE001
        return None
    if raw is None or raw.get("format") != FORMAT or raw.get("partial") is None:
        return None
    state = raw["partial"]["state"]
    active = np.asarray(from_storable(state["active"]), dtype=bool)
    return int(state["epoch"]), active


def fused_protocol_estimate(cfg: Any, store: Any = None, *,
                            on: str | None = None) -> Estimate:
    """Time and memory of the fused sparse-majority unit (SGD configs): the measured cost
    per epoch (:data:`FUSED_EPOCH_SECONDS`) times the epochs left, nothing measured now.

    The epochs left are the cap less the epoch of the unit's checkpoint in ``store`` (the
    committed one at paper scale), if any. On a GPU the epoch costs about the same whatever
    the number of live runs (launch overhead; 5.0 ms with 50 live, 3.8 ms as they left), so
    the figure is used as measured (scaled up only for a config with more arithmetic than the
    paper's); on a CPU it is proportional to the validation arithmetic of the live runs (the
    sum of their T times the validation samples), so it scales with them. An **upper bound**:
    every live run is assumed to train to the cap. On a CPU a small config costs at least
    :data:`FUSED_CPU_OVERHEAD_S` (per epoch, and once). ``on`` (``"cuda"`` or ``"cpu"``):
    the cost on that kind of device with its measured figure, whatever this machine has
    (e.g. what the rest costs on the measured H100, printed on a CPU).
    """
    if on not in (None, "cuda", "cpu"):
        raise ValueError(f"on must be None, 'cuda' or 'cpu', got {on!r}")
    dev = resolve_device(cfg.device) if on is None else torch.device(on)
    kind = "cuda" if dev.type == "cuda" else "cpu"
    low, high, where = FUSED_EPOCH_SECONDS[kind]
    Ts = np.repeat(np.asarray(cfg.T_values, dtype=float), cfg.runs_per_T)
    paper_work = 5.0 * sum(range(20, 201, 20)) * 10_000
    saved = _fused_checkpoint(cfg, store)
    epoch, live = (0, np.ones(len(Ts), dtype=bool)) if saved is None else saved
    if live.shape != Ts.shape:
        epoch, live = 0, np.ones(len(Ts), dtype=bool)
    ratio = float(Ts[live].sum()) * cfg.n_val / paper_work
    scale = max(ratio, 1.0) if kind == "cuda" else ratio
    left = max(int(cfg.max_epochs) - epoch, 0) if live.any() else 0
    per_epoch, fixed = FUSED_CPU_OVERHEAD_S if kind == "cpu" else (0.0, 0.0)
    low, high = per_epoch + low * scale, per_epoch + high * scale
    lo, hi = fixed + left * low, fixed + left * high
    val_bytes = 4.0 * cfg.n_val * 2.0 * float(Ts.sum())  # validation indicators, float32
    if on == "cuda":
        here = "the measured H100"
    elif on == "cpu":
        here = "the 2-core CPU"
    else:
        here = torch.cuda.get_device_name(dev) if kind == "cuda" else "this CPU"
    start = ("from the start" if saved is None else
             f"from the checkpoint at epoch {epoch:,} ({int(live.sum())} of {len(Ts)} runs "
             "live)")
    note = (f"UPPER BOUND: {left:,} epochs left {start}, every live run to the cap; "
            f"{lo / 60:.1f}-{hi / 60:.1f} min at {low:.3g}-{high:.3g} s per "
            f"epoch, measured on {where}, not now")
    if kind == "cuda" and on is None and "H100" not in here:
        note += "; this GPU is not an H100: not calibrated for it"
    return Estimate(seconds=hi, peak_bytes=2.0 * val_bytes, device=here, note=note)


#: Experiments this module knows, by name: ``config -> (workloads, note)``.
KNOWN: dict[str, Callable[[Any], tuple[list[Workload], str]]] = {
    "sparse_majority": _sparse_majority,
    "shallow_gd": _shallow_gd,
    "effective_rank": _effective_rank,
    "offset_rademacher": _offset_rademacher,
    "offset_rademacher_complexity": _offset_complexity,
    "comparison": _comparison,
}


def workloads(experiment_name: str, config: Any) -> list[Workload] | None:
    """The :class:`Workload` of every unit of ``config`` (None for an unknown experiment)."""
    fn = KNOWN.get(experiment_name)
    return None if fn is None else fn(config)[0]


def _own_per_unit(experiment_name: str, config: Any) -> list[float] | None:
    """Seconds of each unit from the experiment's own ``estimate``, applied to ``config`` with
    one unit at a time (a config dataclass whose ``units`` field holds exactly its units, as
    the certificates study's does); None when that is not possible."""
    import dataclasses

    from genbounds.experiments.registry import get_experiment

    exp = get_experiment(experiment_name)
    if exp.estimate is None or not covers(experiment_name, config):
        return None
    return [float(exp.estimate(dataclasses.replace(config, units=(u,))).seconds)
            for u in exp.units(config)]


def _fused(experiment_name: str, config: Any) -> bool:
    """The sparse-majority study with ``engine="fused"``: one unit, the fused engine."""
    return experiment_name == "sparse_majority" and getattr(config, "engine", "") == "fused"


def predicted_unit_seconds(experiment_name: str, config: Any,
                           store: Any = None) -> list[float] | None:
    """Uncalibrated seconds of each unit of ``config``, in unit order: the measured-rate model
    for the experiments in :data:`KNOWN`, else the experiment's own ``estimate`` one unit at a
    time (:func:`covers`); None when neither applies. The fused sparse-majority unit:
    :func:`fused_protocol_estimate` (the epochs left from its checkpoint in ``store``)."""
    if _fused(experiment_name, config):
        return [fused_protocol_estimate(config, store).seconds]
    fn = KNOWN.get(experiment_name)
    if fn is None:
        return _own_per_unit(experiment_name, config)
    ws, note = fn(config)
    if not ws:
        return None
    return _per_unit(ws, note)[0]


def covers(experiment_name: str, config: Any) -> bool:
    """Whether :func:`unit_seconds` estimates each unit of ``config`` (and so can be
    calibrated on, and checked against, the stored units): without measuring anything."""
    if experiment_name in KNOWN:
        return True
    import dataclasses

    from genbounds.experiments.registry import get_experiment

    exp = get_experiment(experiment_name)
    if exp.estimate is None or isinstance(config, type) or not dataclasses.is_dataclass(config):
        return False
    if "units" not in {f.name for f in dataclasses.fields(config)}:
        return False
    whole: Any = config
    return tuple(exp.units(config)) == tuple(whole.units)


@dataclass(frozen=True)
class UnitEstimates:
    """Estimated seconds of each unit, and the :class:`Calibration` applied to them (None:
    no stored unit ran on this kind of device, so the estimates are the model's own)."""

    seconds: list[float]
    calibration: Calibration | None

    @property
    def calibrated(self) -> bool:
        return self.calibration is not None

    def describe(self) -> str:
        """How the estimates were made, for the command line."""
        if self.calibration is None:
            return "not calibrated: no stored unit ran on this kind of device"
        return self.calibration.describe()


def unit_estimates(experiment_name: str, config: Any, store: Any = None
                   ) -> UnitEstimates | None:
    """:func:`predicted_unit_seconds`, calibrated (:func:`calibration`: a factor, or a power
    where enough units span enough cost) on the units of ``config`` that ``store`` holds and
    that ran on this kind of device, so the per-call and per-sample costs the model misjudges
    on this machine are corrected by units that really ran here; the result says whether any
    did. None when nothing estimates the units."""
    per_unit = predicted_unit_seconds(experiment_name, config, store)
    if per_unit is None:
        return None
    cal = None if store is None else calibration(experiment_name, config, store, per_unit)
    return UnitEstimates([cal(s) for s in per_unit] if cal is not None else per_unit, cal)


def unit_seconds(experiment_name: str, config: Any, store: Any = None) -> list[float] | None:
    """Estimated seconds of each unit of ``config``, in unit order (None if unknown): the
    seconds of :func:`unit_estimates` (calibrated on ``store``'s units when it holds any that
    ran on this kind of device)."""
    est = unit_estimates(experiment_name, config, store)
    return None if est is None else est.seconds


@dataclass(frozen=True)
class Calibration:
    """``measured ~ scale * predicted ** exponent``, fitted on ``n`` stored units that ran on
    this kind of device (:func:`calibration`)."""

    scale: float
    exponent: float
    n: int

    def __call__(self, predicted: float) -> float:
        return self.scale * predicted ** self.exponent

    def describe(self) -> str:
        if self.exponent == 1.0:
            return f"calibrated on {self.n} stored unit(s) that ran here (x {self.scale:.2f})"
        return (f"calibrated on {self.n} stored units that ran here (measured ~ "
                f"{self.scale:.2f} x predicted^{self.exponent:.2f})")


#: A power is fitted only on at least this many stored units whose predictions span at least
#: :data:`CALIBRATION_SPAN` (otherwise a factor: the median ratio).
CALIBRATION_MIN_UNITS = 3
CALIBRATION_SPAN = 4.0


def fit_calibration(predicted: Sequence[float], measured: Sequence[float]) -> Calibration:
    """The robust fit of ``measured ~ scale * predicted ** exponent`` in log space
    (Theil-Sen: the median of the pairwise slopes, then the median intercept), or a factor
    (the median ratio, exponent 1) with fewer than :data:`CALIBRATION_MIN_UNITS` units or
    predictions spanning less than :data:`CALIBRATION_SPAN`.

    Why a power: a unit's real cost is a per-call overhead plus per-sample work, and the
    FLOP-scaled model misjudges the overhead of small units more than of large ones (measured
    on the offset-complexity study: predictions proportional to ``n``, wall times growing like
    ``n^0.6``), so one factor cannot fit both ends of a sweep. The median-based fit keeps one
    unit that ran under unusual load from moving it."""
    p = np.asarray(predicted, dtype=float)
    m = np.asarray(measured, dtype=float)
    if p.shape != m.shape or p.ndim != 1 or p.size == 0:
        raise ValueError(f"predicted and measured must be equal-length 1-d sequences, got "
                         f"{p.shape} and {m.shape}")
    if not (np.isfinite(p).all() and np.isfinite(m).all() and (p > 0).all() and (m > 0).all()):
        raise ValueError("predicted and measured must be finite and > 0")
    if p.size < CALIBRATION_MIN_UNITS or p.max() / p.min() < CALIBRATION_SPAN:
        return Calibration(float(np.median(m / p)), 1.0, int(p.size))
    lp, lm = np.log(p), np.log(m)
    i, j = np.triu_indices(p.size, k=1)
    keep = lp[j] != lp[i]
    slope = float(np.median((lm[j] - lm[i])[keep] / (lp[j] - lp[i])[keep]))
    intercept = float(np.median(lm - slope * lp))
    return Calibration(float(np.exp(intercept)), slope, int(p.size))


def calibration(experiment_name: str, config: Any, store: Any,
                predicted: Sequence[float], exclude: Sequence[int] = ()) -> Calibration | None:
    """The :class:`Calibration` (:func:`fit_calibration`) of ``predicted`` on the units of
    ``config`` that ``store`` holds and that ran on the device this process would use, as
    :func:`genbounds.results.describe_device` describes it (the same GPU model, or a CPU with
    the same cores and threads, and the same torch build), leaving out the unit indices in
    ``exclude`` (a leave-one-out check); ``None`` when none does. Reads the stored records
    only (no arrays checked twice, nothing computed)."""
    import warnings

    from genbounds.experiments.registry import get_experiment
    from genbounds.results import StaleResultWarning

    exp = get_experiment(experiment_name)
    units = list(exp.units(config))
    if len(units) != len(predicted):
        return None
    from genbounds.results import describe_device

    here = describe_device(resolve_device(getattr(units[0], "device", "auto")).type)
    pred_used, measured = [], []
    for i, (unit, pred) in enumerate(zip(units, predicted, strict=True)):
        if i in exclude or pred <= 0 or not store.has(unit):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", StaleResultWarning)
                stored = store.load(unit, on_code_change="warn", code_modules=exp.code,
                                    wait_s=0.0)
        except Exception:  # a damaged unit calibrates nothing  # noqa: BLE001
            continue
        if stored is None or stored.device != here or stored.wall_time_s <= 0:
            continue
        pred_used.append(pred)
        measured.append(stored.wall_time_s)
    if not measured:
        return None
    return fit_calibration(pred_used, measured)


def estimate(experiment_name: str, config: Any, store: Any = None) -> Estimate | None:
    """Estimated wall time and peak memory of the experiment at ``config`` on its device.

    None when the experiment is not one of :data:`KNOWN` (the command line then prints
    "no estimate"). Measures rates on the configured device first (a few seconds). With a
    ``store`` holding some units, the time is calibrated on them (:func:`unit_seconds`).
    """
    if _fused(experiment_name, config):
        return fused_protocol_estimate(config, store)
    fn = KNOWN.get(experiment_name)
    if fn is None:
        return None
    ws, note = fn(config)
    if not ws:
        return None
    per_unit, est = _per_unit(ws, note)
    cal = None if store is None else calibration(experiment_name, config, store, per_unit)
    if cal is None:
        return est
    return replace(est, seconds=sum(cal(s) for s in per_unit),
                   note=f"{est.note}; {cal.describe()}")
