"""Micro-batched gradients, memory budgets and evaluation chunks of genbounds.train."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
import torch

import genbounds.train as train_pkg
from genbounds.models import ShallowEncoder, SparseMajorityMHA
from genbounds.train import (
    InputSet,
    TrainConfig,
    evaluate_ensemble,
    per_sample_loss,
    train_ensemble,
)
from genbounds.train.memory import (
    ACTIVATION_OVERHEAD,
    activation_bytes_per_sample,
    available_memory_bytes,
    eval_chunk_size,
    memory_budget,
    micro_batch_size,
    saved_activation_bytes,
)
from genbounds.train.step import batch_gradients

F64 = torch.float64
CPU = torch.device("cpu")


class _ProjectedEncoder(ShallowEncoder):
    """The shallow encoder in the paper's association (queries, keys and values of width d_m
    first, ``forward_projected``): the activations these tests count. ``ShallowEncoder.forward``
    is re-associated (commit 8968d60) and saves less."""

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return self.forward_projected(X)


def _shallow(dtype: torch.dtype, K: int = 2) -> tuple[ShallowEncoder, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    X = torch.randn(K, 37, 4, 5, generator=g, dtype=F64).to(dtype)
    y = torch.where(X[:, :, 0, 0] > 0, 1, -1)
    return ShallowEncoder(5, 16, n_models=K, seeds=list(range(K)), dtype=dtype), X, y


def _mha(dtype: torch.dtype) -> tuple[SparseMajorityMHA, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(2)
    X = torch.randn(3, 29, 5, 6, generator=g, dtype=F64).to(dtype)
    y = (X[:, :, 0, 0] > 0).long()
    model = SparseMajorityMHA(d=6, heads=2, key_dim=3, n_models=3, seeds=[1, 2, 3], dtype=dtype,
                              final_init_std=0.5)
    return model, X, y


def _grads(model: torch.nn.Module, X: torch.Tensor, y: torch.Tensor, loss: str,
           chunk: int) -> tuple[list[torch.Tensor], torch.Tensor]:
    params = {n: p.detach().clone().requires_grad_(True) for n, p in model.named_parameters()}
    buffers = dict(model.named_buffers())
    B = X.shape[1]
    grads, loss_sum, _ = batch_gradients(model, params, buffers,
                                         lambda a, b: (X[:, a:b], y[:, a:b]), B, chunk, loss)
    return grads, loss_sum


@pytest.mark.parametrize(("dtype", "tol"), [(torch.float64, 1e-12), (torch.float32, 1e-6)])
@pytest.mark.parametrize("family", ["shallow", "mha"])
def test_micro_batched_gradient_equals_one_batch(family: str, dtype: torch.dtype,
                                                 tol: float) -> None:
    """Every gradient entry agrees to ``tol`` relative to the largest gradient entry (some
    gradients are zero in exact arithmetic, e.g. a key bias under softmax's shift invariance,
    and hold only rounding noise of order 1e-19)."""
    model, X, y = _shallow(dtype) if family == "shallow" else _mha(dtype)
    loss = "logistic" if family == "shallow" else "bce_logits_onehot"
    B = X.shape[1]
    whole, whole_loss = _grads(model, X, y, loss, chunk=B)
    # independent reference: autograd on the mean loss of the whole batch
    ref = torch.autograd.grad(per_sample_loss(loss, model(X), y)[0].mean(dim=1).sum(),
                              list(model.parameters()))
    for a, b in zip(whole, ref, strict=True):
        assert torch.equal(a, b)
    scale = max(float(g.abs().max()) for g in whole)
    assert scale > 1e-3  # not trivially zero
    for chunk in (1, 4, 10, B - 1):
        parts, parts_loss = _grads(model, X, y, loss, chunk=chunk)
        for name, a, b in zip(dict(model.named_parameters()), parts, whole, strict=True):
            assert float((a - b).abs().max()) <= tol * scale, (chunk, name)
        torch.testing.assert_close(parts_loss, whole_loss, rtol=tol, atol=0)


def test_micro_batch_gradient_is_a_mean_not_a_sum() -> None:
    """Scaling guard: chunks are divided by the batch size, not by their own size."""
    model, X, y = _shallow(F64)
    whole, _ = _grads(model, X, y, "logistic", chunk=X.shape[1])
    half, _ = _grads(model, X[:, :18], y[:, :18], "logistic", chunk=18)
    rest, _ = _grads(model, X[:, 18:], y[:, 18:], "logistic", chunk=19)
    for w, a, b in zip(whole, half, rest, strict=True):
        torch.testing.assert_close(w, (18 * a + 19 * b) / 37, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("optimizer", ["gd", "sgd", "adam"])
def test_training_with_micro_batches_equals_training_without(optimizer: str) -> None:
    model, X, y = _mha(F64)
    g = torch.Generator().manual_seed(3)
    Xv = torch.randn(3, 11, 5, 6, generator=g, dtype=F64)
    yv = (Xv[:, :, 0, 0] > 0).long()
    kw: dict = {"gd": {"optimizer": "gd", "lr": 0.5, "momentum": 0.5},
                "sgd": {"batch_size": 12, "lr": 0.2, "momentum": 0.9},
                "adam": {"optimizer": "adam", "batch_size": 12, "lr": 0.02}}[optimizer]
    cfg = TrainConfig(max_epochs=12, patience=3, stop_at_train_accuracy=1.0, lr_decay=0.97, **kw)
    plain = train_ensemble(_mha(F64)[0], X, y, Xv, yv, "bce_logits_onehot", cfg, seed=5)
    small = TrainConfig(max_epochs=12, patience=3, stop_at_train_accuracy=1.0, lr_decay=0.97,
                        micro_batch_size=5, eval_batch_size=4, **kw)
    micro = train_ensemble(_mha(F64)[0], X, y, Xv, yv, "bce_logits_onehot", small, seed=5)
    assert plain.micro_batch_size == (29 if optimizer == "gd" else 12)
    assert micro.micro_batch_size == 5 and micro.eval_batch_size == 4
    np.testing.assert_array_equal(plain.stopped_epoch, micro.stopped_epoch)
    np.testing.assert_array_equal(plain.best_epoch, micro.best_epoch)
    assert plain.history.keys() == micro.history.keys()
    for key, h in plain.history.items():
        np.testing.assert_array_equal(np.isnan(h), np.isnan(micro.history[key]))
        np.testing.assert_allclose(micro.history[key][~np.isnan(h)], h[~np.isnan(h)],
                                   rtol=1e-11, atol=1e-13, err_msg=key)
    for name, p in plain.final_state.items():
        torch.testing.assert_close(micro.final_state[name], p, rtol=1e-10, atol=1e-12)
    assert not torch.equal(plain.final_state["dense_kernel"], plain.initial_state["dense_kernel"])


def test_memory_budget_sets_the_micro_batch() -> None:
    model, X, y = _shallow(F64)
    params = {n: p.detach() for n, p in model.named_parameters()}
    per = activation_bytes_per_sample(model, params, InputSet(X, 37, 2, "X", F64, CPU), y,
                                      "logistic")
    budget = 7 * per + 1
    cfg = TrainConfig(optimizer="gd", lr=0.3, max_epochs=4, select_best="last",
                      max_batch_memory_bytes=budget)
    res = train_ensemble(_shallow(F64)[0], X, y, loss="logistic", config=cfg)
    assert res.micro_batch_size == 7
    ref = train_ensemble(_shallow(F64)[0], X, y, loss="logistic",
                         config=TrainConfig(optimizer="gd", lr=0.3, max_epochs=4,
                                            select_best="last"))
    assert ref.micro_batch_size == 37
    np.testing.assert_allclose(res.history["loss"], ref.history["loss"], rtol=1e-12)


def test_probe_counts_the_activations_of_a_shallow_encoder() -> None:
    """One sample of ShallowEncoder (d_s tokens, width d_m) saves at least Q, K, V and the
    attention output, each d_s x d_m, per model; the probe is linear in K and in d_m."""
    ds, d = 4, 5

    def per_sample(K: int, d_m: int) -> int:
        model = _ProjectedEncoder(d, d_m, n_models=K, seeds=list(range(K)), dtype=F64)
        X = torch.randn(K, 3, ds, d, dtype=F64)
        y = torch.ones(K, 3, dtype=torch.int64)
        params = {n: p.detach() for n, p in model.named_parameters()}
        return activation_bytes_per_sample(model, params, InputSet(X, 3, K, "X", F64, CPU), y,
                                           "logistic")

    base = per_sample(1, 64)
    assert base >= ACTIVATION_OVERHEAD * 4 * ds * 64 * 8
    assert per_sample(3, 64) == pytest.approx(3 * base, rel=0.01)
    assert per_sample(1, 128) == pytest.approx(2 * base, rel=0.15)


def test_saved_activation_bytes_grow_with_the_batch() -> None:
    model, X, y = _shallow(F64)
    params = {n: p.detach() for n, p in model.named_parameters()}
    sizes = [saved_activation_bytes(model, params, X[:, :b], y[:, :b], "logistic")
             for b in (1, 2, 4)]
    assert sizes[1] - sizes[0] > 0
    assert sizes[2] - sizes[1] == 2 * (sizes[1] - sizes[0])  # exactly linear in the batch


def test_budget_from_the_device_and_overrides() -> None:
    free = available_memory_bytes(CPU)
    assert free > 2**20
    assert memory_budget(TrainConfig(max_batch_memory_bytes=12345), CPU) == 12345
    half = memory_budget(TrainConfig(memory_fraction=0.5), CPU)
    assert 0.3 * free < half < 0.7 * free  # free memory moves a little between the two reads
    assert micro_batch_size(TrainConfig(), 100, 30, 50) == 3
    assert micro_batch_size(TrainConfig(), 10**9, 30, 50) == 50
    assert micro_batch_size(TrainConfig(), 1, 30, 50) == 1  # never zero
    assert micro_batch_size(TrainConfig(micro_batch_size=8), 1, 30, 50) == 8
    assert micro_batch_size(TrainConfig(micro_batch_size=80), 1, 30, 50) == 50
    # evaluation chunks: the explicit size, else the smaller of the memory and input-size rules
    assert eval_chunk_size(7, 1, 10, 2, 30, CPU, 1000) == 7
    assert eval_chunk_size(None, 10**12, 1, 2, 2**20, CPU, 1000) == 4  # 2**23 / (2 * 2**20)
    assert eval_chunk_size(None, 100, 10, 2, 1, CPU, 1000) == 10


def test_chunked_evaluation_equals_one_pass() -> None:
    model, X, y = _mha(F64)
    one = evaluate_ensemble(model, X, y, "cross_entropy", batch_size=29)
    for kw in ({"batch_size": 1}, {"batch_size": 6}, {"max_batch_memory_bytes": 1}, {}):
        ev = evaluate_ensemble(model, X, y, "cross_entropy", **kw)
        np.testing.assert_allclose(ev["loss"], one["loss"], rtol=1e-12)
        np.testing.assert_array_equal(ev["accuracy"], one["accuracy"])


def test_initial_state_is_the_initialisation() -> None:
    model, X, y = _shallow(F64)
    fresh = {n: p.detach().clone() for n, p in model.named_parameters()}
    res = train_ensemble(model, X, y, loss="logistic",
                         config=TrainConfig(optimizer="gd", lr=0.5, max_epochs=3,
                                            select_best="last"))
    assert res.initial_state.keys() == fresh.keys()
    for name, p in fresh.items():
        assert torch.equal(res.initial_state[name], p)
        assert res.initial_state[name].device.type == "cpu"
        assert not torch.equal(res.final_state[name], p)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"micro_batch_size": 0}, "micro_batch_size"),
        ({"micro_batch_size": 2.5}, "micro_batch_size"),
        ({"max_batch_memory_bytes": 0}, "max_batch_memory_bytes"),
        ({"memory_fraction": 0.0}, "memory_fraction"),
        ({"memory_fraction": 1.5}, "memory_fraction"),
        ({"memory_fraction": float("nan")}, "memory_fraction"),
    ],
)
def test_bad_memory_settings_raise(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        TrainConfig(**kwargs)


def test_engine_imports_no_model_family_or_paper_module() -> None:
    """Data flows one way: models know nothing of training, and training nothing of models."""
    # genbounds.results.files: the atomic file write of the unit checkpoint (no model, no paper)
    allowed = ("genbounds.train", "genbounds.validation", "genbounds.results.files")
    root = Path(train_pkg.__file__).parent
    files = sorted(root.glob("*.py"))
    assert len(files) >= 8
    for f in files:
        for node in ast.walk(ast.parse(f.read_text())):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                if name.startswith("genbounds"):
                    assert name.startswith(allowed), f"{f.name} imports {name}"


def test_no_function_of_the_engine_is_longer_than_100_lines() -> None:
    root = Path(train_pkg.__file__).parent
    for f in sorted(root.glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                length = node.end_lineno - node.lineno + 1
                assert length <= 100, f"{f.name}:{node.name} has {length} lines"


_PEAK_SCRIPT = """
import sys, torch
from genbounds.models import ShallowEncoder


class ShallowEncoderProjected(ShallowEncoder):  # the paper's association (see _ProjectedEncoder)
    def forward(self, X):
        return self.forward_projected(X)


def hwm():
    # the peak resident set of this process (VmHWM, bytes). Not ru_maxrss: Linux keeps that
    # across fork/exec, so a child of a large pytest process would inherit its parent's peak.
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")

from genbounds.train import TrainConfig, train_ensemble
torch.manual_seed(0)
X = torch.randn(1, 2000, 16, 64)
y = torch.where(X[:, :, 0, 0] > 0, 1, -1)
m = ShallowEncoderProjected(64, 1024, n_models=1, seeds=[0])
warm = TrainConfig(optimizer="gd", max_epochs=1, select_best="last", device="cpu")
train_ensemble(ShallowEncoderProjected(64, 1024, n_models=1, seeds=[1]), X[:, :2], y[:, :2],
               loss="logistic", config=warm)  # library code and buffers paged in first
before = hwm()
budget = int(sys.argv[1]) if sys.argv[1] != "none" else None
cfg = TrainConfig(optimizer="gd", lr=0.1, max_epochs=1, select_best="last", device="cpu",
                  max_batch_memory_bytes=budget, eval_batch_size=2000 if budget is None else None)
res = train_ensemble(m, X, y, loss="logistic", config=cfg)
after = hwm()
print(res.micro_batch_size, after - before, res.history["loss"][0, 0])
"""


@pytest.mark.slow
def test_memory_budget_bounds_the_peak_memory_of_a_full_batch_step() -> None:
    """A full-batch GD step of a ShallowEncoder (d = 64, d_m = 1024, 16 tokens, N = 2,000) in a
    fresh process: under a 64 MiB budget its peak resident memory grows by less than a quarter
    of what the same step in one batch needs, and the loss is the same."""
    import subprocess
    import sys

    def run(budget: str) -> tuple[int, int, float]:
        out = subprocess.run([sys.executable, "-c", _PEAK_SCRIPT, budget], check=True,
                             capture_output=True, text=True, timeout=600).stdout.split()
        return int(out[0]), int(out[1]), float(out[2])

    micro, peak_micro, loss_micro = run(str(64 * 2**20))
    whole, peak_whole, loss_whole = run("none")
    assert whole == 2000 and micro < 200
    assert peak_whole > 300 * 2**20  # one batch needs hundreds of MiB of activations
    assert peak_micro < peak_whole / 4, (peak_micro, peak_whole)
    # measured: +71 MiB under the 64 MiB budget, +771 MiB in one batch (the budget covers the
    # activations; parameters, gradients, optimizer moments and the data come on top)
    assert peak_micro < 2 * 64 * 2**20
    assert loss_micro == pytest.approx(loss_whole, rel=1e-6)


def test_retaining_freed_memory_is_asked_once_per_process() -> None:
    import platform

    from genbounds.train.memory import retain_freed_memory

    first = retain_freed_memory()
    assert retain_freed_memory() is first
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert first is True
