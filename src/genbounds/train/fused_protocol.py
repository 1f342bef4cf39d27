"""The sparse-majority protocol's runs, all of them, as ONE computation (issue #29).

:func:`train_fused` trains every run of Trauger & Tewari's protocol (all sequence lengths T,
all runs per T: 50 runs at paper scale) at once on one device, with the authors' rules for
each run, and gives the numbers of the per-T ensemble engine
(:func:`genbounds.train.train_ensemble` on :class:`genbounds.models.SparseMajorityMHA`) to
floating-point tolerance (tested in float64 over hundreds of epochs, stopping and the kept
epoch included: ``tests/test_sparse_majority_fused.py``).

The computation
---------------
Only the [CLS] row reaches the output, and every token is a position row plus a bit row, so
for run ``r``, head ``h`` and a sample with bits ``b``:

* the [CLS] query is the same for all samples; the attention logit of token ``j < T`` is
  ``A_j + C_{b_j}`` (``A_j = P_j W^K q + q.b^K``: per position; ``C_v = e_v W^K q``: per bit
  value) and that of the [CLS] token a constant;
* with ``alpha_j = exp(A_j - max A)`` and ``gamma_v = exp(C_v + max A - m)`` (``m`` a common
  shift, so no exponent is positive), the softmax weight of token ``j`` is proportional to
  ``gamma_{b_j} alpha_j``, and the attended value row, after the value and output projections
  ``M_j = ((P_j W^V + b^V) W^O)``, ``M_{e_v} = e_v W^V W^O``, is

  ``sum_j w_j (M_j + M_{e_{b_j}}) + w_cls M_cls``, normaliser ``sum_j w_j + w_cls``:

  both are ONE matrix product of the sample's indicators ``[b, 1 - b]`` (``2T`` columns) with
  a ``2T x heads (d + 1)`` matrix built once per step from the weights
  (rows ``gamma_1 alpha_j [M_j + M_{e_1}, 1]`` and ``gamma_0 alpha_j [M_j + M_{e_0}, 1]``).
  Every term of the normaliser is positive (no cancellation), and the products are those of
  the attention layer reassociated: exact algebra, other rounding.
* then ReLU, the dense layer and the 2-logit head on that one row; Keras' binary
  cross-entropy against one-hot labels; accuracy by ``argmax`` (ties to class 0).

Runs of different T are stacked with the sequence padded to the largest live T (zero
indicators and zero weights in the padding: nothing to mask downstream); the validation
product, which is most of an epoch's arithmetic, is computed per T (no padding cost).

Rules as masks
--------------
Every run keeps an ``active`` flag on the device. An update is ``torch.where(active, new,
old)`` (a stopped run's parameters keep their bits); after the epoch's validation a run's kept
weights, best validation loss and kept epoch move where ``active & (val_loss < best)``
(strict: the first of tied epochs wins, Keras' ``ModelCheckpoint``); a run stops at the end of
the first epoch whose running (Keras) training accuracy is 1.0 (all ``n_train`` forward passes
of the epoch correct, with the weights before each batch's update), and at ``max_epochs``.
Nothing is read back to the host inside an epoch: the host reads the flags every
``sync_every`` epochs, and then *compacts*: runs that stopped leave the computation (their kept
weights and records move to the host), so a stopped run costs nothing afterwards. The
compaction is a deterministic function of the state at a read-back, so an interrupted and
resumed computation makes the same choices.

On CUDA an epoch (three SGD steps with their backward passes, the learning rate read from a
device tensor, validation, the kept-weights update, the stop masks and the epoch's metrics)
is captured once in a CUDA graph (warm-up on a side stream, state restored after capture) and
replayed; the minibatch orders of a block of epochs are drawn on the host (the authors'
semantics: one fresh permutation per run and epoch, from the run's own generator, as
:func:`~genbounds.train.train_ensemble` draws them) and copied to the device before the block.
TF32 is switched off for the whole computation and restored afterwards (fp32 throughout:
``precision`` in the result). On CPU the same epoch function runs without graphs.

Checkpoints
-----------
Under a :class:`~genbounds.train.checkpoint.UnitCheckpoint` (``reproduce --budget-minutes``) the
computation is one stage; at read-backs it saves what a resume needs and nothing more: for a
live run its weights, momentum, kept weights and generator state; for a stopped run its kept
weights; the records (float64 best loss, epochs, flags) of all runs. The size does not depend on
the number of epochs (about 450 KB per live run, 150 KB per stopped run at paper scale in
float32). Training curves are logged at the epochs that matter (every epoch up to 100, then
about 100 per decade; each run's kept and last epoch separately), in float32, in a separate
file beside the checkpoint (``<checkpoint>.curves.npz``), and returned. A resumed computation
is bitwise the uninterrupted one on the same device class (tested on CPU).
"""

from __future__ import annotations

import io
import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from genbounds.results.files import atomic_write
from genbounds.train.checkpoint import Stage, UnitCheckpoint, current_checkpoint, fingerprint
from genbounds.train.config import TrainingDivergedError, resolve_device

__all__ = ["FusedGroup", "FusedResult", "FusedSettings", "check_saved_state",
           "curve_epochs", "kept_validation", "train_fused", "upgrade_checkpoint",
           "PARAM_NAMES"]

#: The parameters of :class:`genbounds.models.SparseMajorityMHA`, in its order.
PARAM_NAMES = ("query_kernel", "query_bias", "key_kernel", "key_bias", "value_kernel",
               "value_bias", "output_kernel", "output_bias", "dense_kernel", "dense_bias",
               "head_kernel", "head_bias")

_METRICS = ("loss", "accuracy", "val_loss", "val_accuracy")


@dataclass(frozen=True)
class FusedSettings:
    """The training rules (the same for every run) and how the computation is run.

    ``lr``, ``momentum`` (Keras SGD: ``v <- mu v - lr g; p <- p + v``), ``lr_decay``,
    ``lr_floor`` (``lr_e = max(floor, decay * lr_{e-1})``, ``lr_{-1} = lr``: Keras'
    ``LearningRateScheduler`` applied at every epoch's start), ``batch_size``, ``max_epochs``;
    ``device`` (``"auto"``, ``"cpu"``, ``"cuda"``), ``sync_every`` (epochs between read-backs
    to the host), ``cuda_graphs`` (capture an epoch on CUDA), ``eval_chunk`` (validation
    samples per run evaluated at once; None: all on CUDA, 1,024 on a CPU, where chunks that
    stay in the caches halve the time of a validation pass).

    The training rules have no defaults here: the protocol's values are
    :class:`~genbounds.experiments.sparse_majority.SparseMajorityConfig`'s, and
    :func:`~genbounds.experiments.sparse_majority.fused_settings` builds these settings from it.
    """

    lr: float
    momentum: float
    lr_decay: float
    lr_floor: float
    batch_size: int
    max_epochs: int
    device: str = "auto"
    sync_every: int = 200
    cuda_graphs: bool = True
    eval_chunk: int | None = None

    def __post_init__(self) -> None:
        for name in ("lr", "lr_decay"):
            v = getattr(self, name)
            if not (isinstance(v, int | float) and not isinstance(v, bool) and 0 < v
                    and math.isfinite(v)):
                raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
        if not (isinstance(self.momentum, int | float) and 0 <= self.momentum < 1):
            raise ValueError(f"momentum must be in [0, 1), got {self.momentum!r}")
        if self.lr_decay > 1:
            raise ValueError(f"lr_decay must be in (0, 1], got {self.lr_decay!r}")
        if not (isinstance(self.lr_floor, int | float) and 0 <= self.lr_floor < math.inf):
            raise ValueError(f"lr_floor must be a finite number >= 0, got {self.lr_floor!r}")
        for name in ("batch_size", "max_epochs", "sync_every"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        if self.eval_chunk is not None and (not isinstance(self.eval_chunk, int)
                                            or isinstance(self.eval_chunk, bool)
                                            or self.eval_chunk < 1):
            raise ValueError(f"eval_chunk must be an integer >= 1 or None, got "
                             f"{self.eval_chunk!r}")
        if self.device not in ("auto", "cpu", "cuda") and not str(self.device).startswith(
                "cuda:"):
            raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', got {self.device!r}")
        if not isinstance(self.cuda_graphs, bool):
            raise ValueError(f"cuda_graphs must be a bool, got {self.cuda_graphs!r}")

    def lr_schedule(self, start: int, stop: int) -> np.ndarray:
        """Learning rates of epochs ``start..stop-1`` (float64, computed as
        :func:`genbounds.train.lr_schedule` does: one multiplication per epoch from ``lr``)."""
        out = np.empty(stop - start)
        lr = float(self.lr)
        for e in range(stop):
            lr = max(float(self.lr_floor), lr * float(self.lr_decay))
            if e >= start:
                out[e - start] = lr
        return out


@dataclass(frozen=True, eq=False)
class FusedGroup:
    """The runs of one sequence length T (numpy inputs; ``k`` runs).

    ``bits_train`` ``(k, n_train, T)``, ``y_train`` ``(k, n_train)``, ``bits_val``, ``y_val``
    likewise; ``bit_embeddings`` ``(k, 2, d)``, ``cls_embedding`` ``(k, d)``, ``positional``
    ``(T + 1, d)`` (the tables as the model reads them, already in the training dtype's
    values); ``params`` name -> ``(k, ...)`` initial weights; ``shuffle_seeds`` ``k`` ints.
    """

    T: int
    bits_train: np.ndarray
    y_train: np.ndarray
    bits_val: np.ndarray
    y_val: np.ndarray
    bit_embeddings: np.ndarray
    cls_embedding: np.ndarray
    positional: np.ndarray
    params: dict[str, np.ndarray]
    shuffle_seeds: tuple[int, ...]

    @property
    def k(self) -> int:
        return int(self.bits_train.shape[0])


@dataclass
class FusedResult:
    """What :func:`train_fused` returns, runs in the order of the groups.

    ``best_state`` name -> ``(R, ...)`` CPU tensors (the kept weights), ``best_epoch``,
    ``stopped_epoch`` (0-based), ``reached_train_accuracy``, ``best_val_loss`` (float64, the
    validation loss that selected the kept epoch, as computed during training), ``at_kept``
    and ``at_stop`` name -> ``(R,)`` float32: the metrics below at each run's kept epoch and
    at its last epoch trained (wherever the curves' grid falls),
    ``curve_epoch`` ``(P,)`` and ``curves`` name -> ``(R, P)`` float32 (NaN after a run
    stopped) for ``loss``, ``accuracy`` (running, Keras), ``val_loss``, ``val_accuracy`` and
    ``lr``, ``wall_time_s``, ``epochs_run``, ``device`` and ``precision``, ``graphs`` (whether
    CUDA graphs ran), ``epoch_seconds`` (host-measured seconds per epoch of each block:
    ``(epochs, live runs, seconds)`` rows), ``segments`` (the device of each stretch of
    epochs: a resumed computation may have continued on another machine).
    """

    best_state: dict[str, torch.Tensor]
    best_epoch: np.ndarray
    stopped_epoch: np.ndarray
    reached_train_accuracy: np.ndarray
    best_val_loss: np.ndarray
    at_kept: dict[str, np.ndarray]
    at_stop: dict[str, np.ndarray]
    curve_epoch: np.ndarray
    curves: dict[str, np.ndarray]
    wall_time_s: float
    epochs_run: int
    device: str
    precision: str
    graphs: bool
    epoch_seconds: list[tuple[int, int, float]] = field(default_factory=list)
    segments: list[str] = field(default_factory=list)


def curve_epochs(max_epochs: int, per_decade: int = 100, dense: int = 100) -> np.ndarray:
    """The epochs whose metrics are logged: all of ``0..dense-1``, then about ``per_decade``
    log-spaced epochs per decade up to ``max_epochs - 1`` (sorted, unique, int64)."""
    e = np.arange(min(dense, max_epochs), dtype=np.int64)
    if max_epochs > dense:
        n = int(math.ceil(per_decade * math.log10(max_epochs / dense))) + 1
        logs = np.unique(np.round(np.geomspace(dense, max_epochs, n)).astype(np.int64) - 1)
        e = np.unique(np.concatenate([e, logs[(logs >= dense) & (logs < max_epochs)],
                                      [max_epochs - 1]]))
    return e


# ---------------------------------------------------------------------------------------------
# the live computation: the runs still training, stacked
# ---------------------------------------------------------------------------------------------


class _Live:
    """Device buffers of the live runs (static shapes and addresses: what a graph captures)."""

    def __init__(self, groups: Sequence[FusedGroup], runs: np.ndarray, offsets: np.ndarray,
                 st: dict[str, Any], settings: FusedSettings, dtype: torch.dtype,
                 device: torch.device, heads: int, key_dim: int) -> None:
        self.runs = runs  # global indices of the live runs
        self.settings = settings
        self.dtype, self.device = dtype, device
        self.H, self.kd = heads, key_dim
        # which group each live run belongs to, and the per-T slices of the live runs
        gid = np.searchsorted(offsets, runs, side="right") - 1
        self.slices: list[tuple[int, int, int]] = []  # (T, lo, hi) within the live runs
        lo = 0
        for g in np.unique(gid):
            hi = lo + int((gid == g).sum())
            self.slices.append((groups[g].T, lo, hi))
            lo = hi
        Tmax = max(s[0] for s in self.slices)
        self.Tmax = Tmax
        R = len(runs)
        self.R = R
        d = groups[0].bit_embeddings.shape[-1]
        self.d = d
        n_tr = groups[0].bits_train.shape[1]
        self.n_train = n_tr

        self._set_tables(groups, runs, offsets, gid)
        self._set_state(st, runs)
        self.graph: Any = None
        self.graph_error = ""

    def _dev(self, a: Any, dt: torch.dtype | None = None) -> torch.Tensor:
        """``a`` as a contiguous tensor on the device (the compute dtype unless ``dt``)."""
        return torch.as_tensor(np.ascontiguousarray(a), device=self.device,
                               dtype=self.dtype if dt is None else dt)

    def _set_tables(self, groups: Sequence[FusedGroup], runs: np.ndarray,
                    offsets: np.ndarray, gid: np.ndarray) -> None:
        """The live runs' data: training and validation indicators, labels, token rows."""
        dev, dtype, device = self._dev, self.dtype, self.device
        R, n_tr, d, Tmax = self.R, self.n_train, self.d, self.Tmax
        # training indicators [b, 1 - b], zero in the padding: (R, n_train, 2 * Tmax)
        Ltr = np.zeros((R, n_tr, 2, Tmax), dtype=np.float64)
        ytr = np.zeros((R, n_tr), dtype=np.int64)
        E = np.zeros((R, 2, d))
        ecls = np.zeros((R, d))
        PT = np.zeros((R, d))
        mask = np.zeros((R, Tmax), dtype=bool)
        val_L: list[torch.Tensor] = []
        yv = []
        P_body = None
        for i, r in enumerate(runs):
            g = groups[gid[i]]
            j = r - offsets[gid[i]]
            T = g.T
            Ltr[i, :, 0, :T] = g.bits_train[j]
            Ltr[i, :, 1, :T] = 1 - g.bits_train[j]
            ytr[i] = g.y_train[j]
            E[i] = g.bit_embeddings[j]
            ecls[i] = g.cls_embedding[j]
            PT[i] = g.positional[T]
            mask[i, :T] = True
            yv.append(g.y_val[j])
            if T == Tmax:
                P_body = g.positional[:Tmax]
        assert P_body is not None
        for _, a, b in self.slices:
            bits = np.stack([groups[gid[i]].bits_val[runs[i] - offsets[gid[i]]]
                             for i in range(a, b)])
            val_L.append(dev(np.concatenate([bits, 1 - bits], axis=2)))  # (k, n_val, 2T)
        self.Ltr = dev(Ltr.reshape(R, n_tr, 2 * Tmax))
        self.ytr = dev(ytr, torch.int64)
        self.val_L = val_L
        self.yval = dev(np.stack(yv), torch.int64)
        self.n_val = int(self.yval.shape[1])
        # constant tables: the rows every token is made of, in the indicators' order
        # (positions, [CLS], e_1, e_0), the padding of the scores, the value-bias rows
        x_cls = dev(ecls) + dev(PT)
        self.x_cls = x_cls
        self.rows = torch.cat([dev(P_body).expand(R, -1, -1), x_cls[:, None],
                               dev(E[:, ::-1].copy())], dim=1).contiguous()
        self.pad = torch.where(dev(mask, torch.bool), 0.0, -math.inf).to(dtype)[:, None, :]
        vb = torch.zeros(Tmax + 3, 1, dtype=dtype, device=device)
        vb[:Tmax + 1] = 1.0
        self.vb_rows = vb

    def _set_state(self, st: dict[str, Any], runs: np.ndarray) -> None:
        """The live runs' training state (flat parameter rows, velocity, kept weights, stop
        bookkeeping) and the block buffers a graph reads and writes."""
        dev, device, R, n_tr = self._dev, self.device, self.R, self.n_train
        # state
        # every run's parameters as one flat row (one update for all tensors): (R, n_params)
        self.shapes = {n: tuple(st["params"][n].shape[1:]) for n in PARAM_NAMES}
        sizes = [int(np.prod(self.shapes[n])) for n in PARAM_NAMES]
        self.offsets = dict(zip(PARAM_NAMES, np.cumsum([0] + sizes)[:-1].tolist(),
                                strict=True))

        def flat(key: str) -> torch.Tensor:
            return dev(np.concatenate([st[key][n][runs].reshape(R, -1) for n in PARAM_NAMES],
                                      axis=1))

        self.flat = flat("params")
        self.velocity = flat("velocity")
        self.best = flat("best")
        self.best_val = dev(st["best_val"][runs], torch.float64)
        self.best_epoch = dev(st["best_epoch"][runs], torch.int64)
        self.stopped_epoch = dev(st["stopped_epoch"][runs], torch.int64)
        self.active = dev(st["active"][runs], torch.bool)
        self.bad_epoch = torch.full((R,), -1, dtype=torch.int64, device=device)
        # the epoch's metrics (running loss and accuracy, validation loss and accuracy) at the
        # kept epoch and at the last epoch trained
        self.at_kept = dev(st["at_kept"][runs], torch.float32)
        self.at_stop = dev(st["at_stop"][runs], torch.float32)
        self.epoch = torch.zeros((), dtype=torch.int64, device=device)  # absolute epoch
        self.slot = torch.zeros((), dtype=torch.int64, device=device)  # epoch within block
        B = self.settings.sync_every
        self.orders = torch.zeros((B, R, n_tr), dtype=torch.int64, device=device)
        self.lrs = torch.zeros((B,), dtype=self.dtype, device=device)
        self.metrics = torch.zeros((B, 4, R), dtype=torch.float32, device=device)

    def views(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        """The parameters as views of a flat ``(R, n_params)`` tensor."""
        return {n: flat[:, o:o + int(np.prod(self.shapes[n]))].view(self.R, *self.shapes[n])
                for n, o in self.offsets.items()}

    # -- the forward pass --------------------------------------------------------------------

    def _tables(self, p: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor,
                                                          torch.Tensor]:
        """The per-run right operand ``(R, 2, Tmax, H d + H)`` (rows: indicator ``b`` of each
        position, then ``1 - b``; columns: the value sums of every head, then its normaliser)
        and the [CLS] terms (``gcls`` ``(R, H)``, ``gcls M_cls`` ``(R, H, d)``)."""
        R, H, kd, d, Tmax = self.R, self.H, self.kd, self.d, self.Tmax
        q = torch.baddbmm(p["query_bias"].reshape(R, 1, H * kd), self.x_cls[:, None, :],
                          p["query_kernel"].reshape(R, d, H * kd)).view(R, H, kd)
        q = q * (1.0 / math.sqrt(kd))
        u = torch.einsum("khe,kdhe->khd", q, p["key_kernel"])  # W^K_h q_h
        c = (q * p["key_bias"]).sum(dim=-1)  # q_h . b^K_h
        # scores of every table row: positions, [CLS], e_1, e_0 (the indicators' order)
        S = torch.bmm(self.rows, u.transpose(1, 2)).transpose(1, 2)  # (R, H, Tmax + 3)
        A, A_cls, Cv = S.split([Tmax, 1, 2], dim=-1)
        A = A + c[..., None] + self.pad  # (R, H, Tmax); -inf in the padding
        A_cls = A_cls[..., 0] + c
        mA = A.detach().amax(dim=-1)  # (R, H)
        shift = torch.maximum(mA + Cv.detach().amax(dim=-1), A_cls.detach())
        alpha = torch.exp(A - mA[..., None])  # 0 in the padding
        gam = torch.exp(Cv + (mA - shift)[..., None])  # (R, H, 2): bit 1, bit 0
        gcls = torch.exp(A_cls - shift)  # (R, H)
        # value rows through W^V (+ b^V on the attention rows) and W^O, per head
        vals = torch.bmm(self.rows, p["value_kernel"].reshape(R, d, H * kd))
        vals = vals + self.vb_rows * p["value_bias"].reshape(R, 1, H * kd)
        M = torch.einsum("kthe,khed->khtd", vals.view(R, Tmax + 3, H, kd),
                         p["output_kernel"])  # (R, H, Tmax + 3, d)
        Mb, Mcls, Me = M.split([Tmax, 1, 2], dim=2)
        w = gam[..., None] * alpha[:, :, None, :]  # (R, H, 2, Tmax)
        num = (Mb[:, :, None] + Me[:, :, :, None]) * w[..., None]  # (R, H, 2, Tmax, d)
        W = torch.cat([num.permute(0, 2, 3, 1, 4).reshape(R, 2, Tmax, H * d),
                       w.permute(0, 2, 3, 1)], dim=-1)
        return W, gcls, gcls[..., None] * Mcls[:, :, 0]

    def _readout(self, p: dict[str, torch.Tensor], G: torch.Tensor, gcls: torch.Tensor,
                 gM: torch.Tensor) -> torch.Tensor:
        """Logits ``(R, B, 2)`` from the products ``G`` ``(R, B, H d + H)``."""
        H, d = self.H, self.d
        R, B = G.shape[0], G.shape[1]
        num, z = G.split([H * d, H], dim=-1)
        inv = 1.0 / (z + gcls[:, None, :])  # (R, B, H)
        # b^O + sum_h inv_h (G_h + gcls_h M_cls,h): the [CLS] terms in one product
        mha = torch.baddbmm(p["output_bias"][:, None, :], inv, gM)
        mha = mha + (num.view(R, B, H, d) * inv[..., None]).sum(dim=2)
        hidden = torch.baddbmm(p["dense_bias"][:, None, :], torch.relu(mha), p["dense_kernel"])
        return torch.baddbmm(p["head_bias"][:, None, :], hidden, p["head_kernel"])

    @staticmethod
    def _loss(logits: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        classes = torch.arange(logits.shape[-1], device=y.device)
        target = (y[..., None] == classes).to(logits.dtype)  # one-hot (no host sync on CUDA)
        per = F.binary_cross_entropy_with_logits(logits, target, reduction="none").mean(-1)
        return per, logits.argmax(dim=-1) == y

    # -- one epoch ---------------------------------------------------------------------------

    def epoch_step(self) -> None:
        """One epoch of every live run (no host synchronisation: capturable)."""
        s = self.settings
        R, N = self.R, self.n_train
        bs = min(s.batch_size, N)
        order = self.orders.index_select(0, self.slot.view(1)).squeeze(0)  # (R, N)
        lr = self.lrs.index_select(0, self.slot.view(1))  # (1,)
        act = self.active
        names = list(PARAM_NAMES)
        loss_sum = torch.zeros(R, dtype=torch.float64, device=self.device)
        correct = torch.zeros(R, dtype=torch.float64, device=self.device)
        C = self.Ltr.shape[-1]
        mu = float(s.momentum)
        for start in range(0, N, bs):
            idx = order[:, start:start + bs]
            Lb = torch.gather(self.Ltr, 1, idx[..., None].expand(-1, -1, C))
            yb = torch.gather(self.ytr, 1, idx)
            with torch.enable_grad():
                p = self.views(self.flat.detach().requires_grad_(True))
                W, gcls, gM = self._tables(p)
                G = torch.bmm(Lb, W.reshape(R, C, -1))
                per, ok = self._loss(self._readout(p, G, gcls, gM), yb)
                grads = torch.autograd.grad(per.mean(dim=1).sum(), [p[n] for n in names])
            with torch.no_grad():
                loss_sum += per.detach().sum(dim=1, dtype=torch.float64)
                correct += ok.sum(dim=1, dtype=torch.float64)
                g = torch.cat([gr.reshape(R, -1) for gr in grads], dim=1)
                v, a = self.velocity, act[:, None]
                v_new = v * mu - lr * g
                v.copy_(torch.where(a, v_new, v))
                self.flat.copy_(torch.where(a, self.flat + v_new, self.flat))
        with torch.no_grad():
            tr_loss = loss_sum / N
            tr_acc = correct / N
            v_loss, v_acc = self.validate(self.views(self.flat))
            improved = act & (v_loss < self.best_val)
            self.best_val.copy_(torch.where(improved, v_loss, self.best_val))
            self.best_epoch.copy_(torch.where(improved, self.epoch, self.best_epoch))
            self.best.copy_(torch.where(improved[:, None], self.flat, self.best))
            m = torch.stack([tr_loss, tr_acc, v_loss, v_acc]).to(torch.float32)  # (4, R)
            self.at_kept.copy_(torch.where(improved[:, None], m.T, self.at_kept))
            self.at_stop.copy_(torch.where(act[:, None], m.T, self.at_stop))
            bad = act & ~(torch.isfinite(tr_loss) & torch.isfinite(v_loss)) & (self.bad_epoch < 0)
            self.bad_epoch.copy_(torch.where(bad, self.epoch, self.bad_epoch))
            reached = act & (tr_acc >= 1.0)
            self.stopped_epoch.copy_(torch.where(reached, self.epoch, self.stopped_epoch))
            self.active.copy_(act & ~reached)
            self.metrics.index_copy_(0, self.slot.view(1), m[None])
            self.epoch.add_(1)
            self.slot.add_(1)

    def validate(self, p: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean validation loss and accuracy of every live run (float64 sums): the product per
        T (no padding), written into one buffer; the rest for all runs at once."""
        W, gcls, gM = self._tables(p)
        R, n = self.R, self.n_val
        Wg = [W[lo:hi, :, :T].reshape(hi - lo, 2 * T, -1) for T, lo, hi in self.slices]
        chunk = self.settings.eval_chunk or (n if self.device.type == "cuda" else 1024)
        ls = torch.zeros(R, dtype=torch.float64, device=self.device)
        cs = torch.zeros(R, dtype=torch.float64, device=self.device)
        for a in range(0, n, chunk):
            b = min(n, a + chunk)
            G = torch.empty((R, b - a, W.shape[-1]), dtype=self.dtype, device=self.device)
            for (_, lo, hi), L, w in zip(self.slices, self.val_L, Wg, strict=True):
                torch.bmm(L[:, a:b], w, out=G[lo:hi])
            per, ok = self._loss(self._readout(p, G, gcls, gM), self.yval[:, a:b])
            ls += per.sum(dim=1, dtype=torch.float64)
            cs += ok.sum(dim=1, dtype=torch.float64)
        return ls / n, cs / n

    # -- CUDA graph --------------------------------------------------------------------------

    def _mutable(self) -> list[torch.Tensor]:
        return [self.flat, self.velocity, self.best, self.best_val, self.best_epoch,
                self.stopped_epoch, self.active, self.bad_epoch, self.at_kept, self.at_stop,
                self.epoch, self.slot,
                self.metrics]

    def capture(self) -> None:
        """Capture :meth:`epoch_step` in a CUDA graph (warm-up on a side stream; the state is
        restored after warm-up, so capturing changes nothing)."""
        saved = [t.detach().clone() for t in self._mutable()]
        try:
            side = torch.cuda.Stream(device=self.device)
            side.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(side):
                for _ in range(3):
                    self.slot.zero_()
                    self.epoch_step()
            torch.cuda.current_stream(self.device).wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            self.slot.zero_()
            with torch.cuda.graph(graph):
                self.epoch_step()
            self.graph = graph
        except Exception as exc:  # noqa: BLE001  (eager epochs give the same numbers)
            self.graph = None
            self.graph_error = f"{type(exc).__name__}: {exc}"
            warnings.warn(f"CUDA graph capture failed ({self.graph_error}); running the "
                          "epochs without a graph", RuntimeWarning, stacklevel=2)
        torch.cuda.synchronize(self.device)
        with torch.no_grad():
            for t, s0 in zip(self._mutable(), saved, strict=True):
                t.copy_(s0)

    def load_block(self, orders: np.ndarray, lrs: np.ndarray, e0: int) -> None:
        """Copy a block's minibatch orders and learning rates in; the block starts at ``e0``."""
        n = orders.shape[0]
        with torch.no_grad():
            self.orders[:n].copy_(torch.from_numpy(np.ascontiguousarray(orders)).to(self.device))
            self.lrs[:n].copy_(torch.from_numpy(lrs))
            self.epoch.fill_(e0)

    def run_block(self, n: int) -> None:
        """``n`` epochs (the block's orders and rates already in place)."""
        with torch.no_grad():
            self.slot.zero_()
        for _ in range(n):
            if self.graph is not None:
                self.graph.replay()
            else:
                self.epoch_step()

    def write_back(self, st: dict[str, Any]) -> None:
        """Copy the live runs' state into the host state ``st`` (numpy, all runs)."""
        r = self.runs
        for key, t in (("params", self.flat), ("velocity", self.velocity), ("best", self.best)):
            for n, v in self.views(t.detach().cpu()).items():
                st[key][n][r] = v.numpy()
        st["best_val"][r] = self.best_val.cpu().numpy()
        st["best_epoch"][r] = self.best_epoch.cpu().numpy()
        st["stopped_epoch"][r] = self.stopped_epoch.cpu().numpy()
        st["active"][r] = self.active.cpu().numpy()
        st["at_kept"][r] = self.at_kept.cpu().numpy()
        st["at_stop"][r] = self.at_stop.cpu().numpy()


# ---------------------------------------------------------------------------------------------
# the driver
# ---------------------------------------------------------------------------------------------


def _device_label(device: torch.device) -> str:
    """The device class a bitwise claim holds for: GPU name, CUDA and torch builds, or the CPU's
    instruction set torch dispatches to, and the torch build."""
    if device.type == "cuda":
        return (f"{torch.cuda.get_device_name(device)}, CUDA {torch.version.cuda}, "
                f"torch {torch.__version__}, TF32 off")
    return f"cpu ({torch.backends.cpu.get_cpu_capability()}), torch {torch.__version__}"


def _code_commit() -> str:
    """The commit of the running code (``$GENBOUNDS_GIT_COMMIT`` for a copy without its
    ``.git``, as the store's provenance reads it), shortened; ``unknown`` outside git."""
    import os
    import subprocess

    given = os.environ.get("GENBOUNDS_GIT_COMMIT")
    if given:
        return given[:7]
    try:
        out = subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], capture_output=True,
                             text=True, timeout=10, cwd=Path(__file__).parent, check=False)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def _check_groups(groups: Sequence[FusedGroup]) -> None:
    if not isinstance(groups, Sequence) or len(groups) == 0:
        raise ValueError("groups must be a non-empty sequence of FusedGroup")
    for g in groups:
        if not isinstance(g, FusedGroup):
            raise ValueError(f"groups must hold FusedGroup, got {type(g).__name__}")
        k = g.k
        if g.bits_val.shape[0] != k or len(g.shuffle_seeds) != k:
            raise ValueError(f"group T = {g.T}: every field must hold {k} runs")
        if set(g.params) != set(PARAM_NAMES):
            raise ValueError(f"group T = {g.T}: params must hold {PARAM_NAMES}")
    n_tr = {g.bits_train.shape[1] for g in groups}
    n_va = {g.bits_val.shape[1] for g in groups}
    if len(n_tr) != 1 or len(n_va) != 1:
        raise ValueError("every group must have the same n_train and n_val")


def _initial_state(groups: Sequence[FusedGroup], dtype: Any) -> dict[str, Any]:
    params = {n: np.concatenate([g.params[n] for g in groups]).astype(dtype) for n in
              PARAM_NAMES}
    R = len(next(iter(params.values())))
    return {
        "params": params,
        "velocity": {n: np.zeros_like(p) for n, p in params.items()},
        "best": {n: p.copy() for n, p in params.items()},
        "best_val": np.full(R, np.inf),
        "best_epoch": np.full(R, -1, dtype=np.int64),
        "stopped_epoch": np.full(R, -1, dtype=np.int64),
        "active": np.ones(R, dtype=bool),
        "at_kept": np.full((R, 4), np.nan, dtype=np.float32),
        "at_stop": np.full((R, 4), np.nan, dtype=np.float32),
        "epoch": 0,
        "elapsed": 0.0,
        "segments": [],
    }


def _stage_tag(groups: Sequence[FusedGroup], settings: FusedSettings, dtype: torch.dtype,
               heads: int, key_dim: int, *, legacy_sync_every: int | None = None) -> str:
    """What identifies the computation: the rules, dtype, sizes, data, initial weights and
    shuffling seeds. Not the execution knobs (``sync_every``, graphs, device): a checkpoint
    may be resumed with others, exactly in real arithmetic (bitwise only with the same knobs
    on the same device class). ``legacy_sync_every``: the tag of the scheme before commit
    0c43571 (commit d76b6df and earlier), which counted ``sync_every`` among the rules."""
    names = ("lr", "momentum", "lr_decay", "lr_floor", "batch_size", "max_epochs")
    rules: dict[str, Any] = {k: getattr(settings, k) for k in names}
    if legacy_sync_every is not None:
        rules["sync_every"] = int(legacy_sync_every)
    digest = fingerprint(
        "fused-sparse-majority/1", rules, str(dtype), heads, key_dim,
        [(g.T, g.bits_train, g.y_train, g.bits_val, g.y_val, g.bit_embeddings, g.cls_embedding,
          g.positional, dict(g.params), list(g.shuffle_seeds)) for g in groups])
    return f"train_fused:{digest}"


def _storable_state(st: dict[str, Any], rng_states: dict[int, Any]) -> dict[str, Any]:
    """What a resume needs: live runs' weights, momentum, kept weights and generator states
    (as they were before the next block's orders were drawn); stopped runs' kept weights;
    every run's records."""
    live = np.flatnonzero(st["active"])
    return {
        "live": live,
        "params": {n: v[live] for n, v in st["params"].items()},
        "velocity": {n: v[live] for n, v in st["velocity"].items()},
        "best": st["best"],
        "best_val": st["best_val"], "best_epoch": st["best_epoch"],
        "stopped_epoch": st["stopped_epoch"], "active": st["active"],
        "at_kept": st["at_kept"], "at_stop": st["at_stop"],
        "rngs": [rng_states[int(i)] for i in live],
        "epoch": int(st["epoch"]), "elapsed": float(st["elapsed"]),
        "segments": list(st["segments"]),
    }


def _restore(st: dict[str, Any], saved: dict[str, Any], rngs: list[np.random.Generator]) -> None:
    live = np.asarray(saved["live"], dtype=np.int64)
    for n in PARAM_NAMES:
        st["params"][n][live] = saved["params"][n]
        st["velocity"][n][live] = saved["velocity"][n]
        st["best"][n][:] = saved["best"][n]
    for key in ("best_val", "best_epoch", "stopped_epoch", "active"):
        st[key][:] = saved[key]
    for key in ("at_kept", "at_stop"):  # absent before commit 0997a3e: not recorded (NaN)
        if key in saved:
            st[key][:] = saved[key]
    for i, s in zip(live, saved["rngs"], strict=True):
        rngs[int(i)].bit_generator.state = s
    st["epoch"] = int(saved["epoch"])
    st["elapsed"] = float(saved["elapsed"])
    if "segments" in saved:
        st["segments"] = [str(x) for x in saved["segments"]]
    else:  # written before commit daf53cc: which device ran these epochs is not recorded
        st["segments"] = [f"epochs 0-{st['epoch']}: device not recorded (checkpoint "
                          "written before segments were kept)"]


class _Curves:
    """Metrics at the logged epochs (float32), kept beside the checkpoint, not in it."""

    def __init__(self, R: int, max_epochs: int, path: Path | None) -> None:
        self.epochs = curve_epochs(max_epochs)
        self.pos = {int(e): i for i, e in enumerate(self.epochs)}
        self.data = {k: np.full((R, len(self.epochs)), np.nan, dtype=np.float32)
                     for k in (*_METRICS, "lr")}
        self.path = path

    def load(self, before: int) -> None:
        if self.path is None or not self.path.is_file():
            return
        with np.load(self.path, allow_pickle=False) as z:
            if z["epochs"].shape != self.epochs.shape or not (z["epochs"] == self.epochs).all():
                return
            keep = self.epochs < before
            for k in self.data:
                self.data[k][:, keep] = z[k][:, keep]

    def save(self) -> None:
        if self.path is None:
            return
        buf = io.BytesIO()
        np.savez(buf, epochs=self.epochs, **self.data)  # type: ignore[arg-type]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, buf.getvalue())

    def log_block(self, start: int, metrics: np.ndarray, lrs: np.ndarray, runs: np.ndarray,
                  active_before: np.ndarray, stopped: np.ndarray) -> None:
        """``metrics`` ``(n, 4, R_live)`` of epochs ``start..start+n-1``."""
        for i in range(metrics.shape[0]):
            e = start + i
            j = self.pos.get(e)
            if j is None:
                continue
            on = active_before & ((stopped < 0) | (stopped >= e))
            for m, k in enumerate(_METRICS):
                self.data[k][runs[on], j] = metrics[i, m, on]
            self.data["lr"][runs[on], j] = lrs[i]


def _check_arguments(groups: Sequence[FusedGroup], settings: Any, dtype: Any) -> None:
    """``ValueError`` naming the argument of :func:`train_fused` that is wrong."""
    _check_groups(groups)
    if not isinstance(settings, FusedSettings):
        raise ValueError(f"settings must be a FusedSettings, got {type(settings).__name__}")
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"dtype must be torch.float32 or torch.float64, got {dtype!r}")


_Drawn = tuple[np.ndarray, np.ndarray, dict[int, Any]]


def _order_drawer(rngs: list[np.random.Generator], settings: FusedSettings,
                  N: int) -> Callable[[np.ndarray, int], _Drawn]:
    """``draw(runs, e0)``: the minibatch orders of the runs for the block from ``e0``."""
    tile_dtype = np.int16 if N < 2**15 else np.int64

    def draw(runs: np.ndarray, e0: int) -> _Drawn:
        """Minibatch orders ``(n, len(runs), N)`` of the block starting at ``e0`` (one
        permutation per run and epoch, exactly ``rng.permutation(N)`` in sequence), and each
        generator's state before the draw (what a checkpoint at ``e0`` must hold)."""
        n = min(settings.sync_every, settings.max_epochs - e0)
        snap = {int(r): rngs[int(r)].bit_generator.state for r in runs}
        tile = np.tile(np.arange(N, dtype=tile_dtype), (n, 1))
        return runs, np.stack([rngs[int(r)].permuted(tile, axis=1) for r in runs], axis=1), snap

    return draw


def _open_stage(checkpoint: UnitCheckpoint | None | bool, groups: Sequence[FusedGroup],
                settings: FusedSettings, dtype: torch.dtype, heads: int, key_dim: int,
                st: dict[str, Any], rngs: list[np.random.Generator],
                ) -> tuple[Stage | None, Path | None, FusedResult | None]:
    """The checkpoint stage of this computation (None without a checkpoint), where its
    curves are kept, and its result if the stage already finished; a partial state saved
    by an interrupted run is restored into ``st`` and ``rngs``."""
    ckpt = current_checkpoint() if checkpoint is None else (checkpoint or None)
    if not isinstance(ckpt, UnitCheckpoint):
        return None, None, None
    stage = ckpt.stage(_stage_tag(groups, settings, dtype, heads, key_dim))
    curves_path = ckpt.companion("curves.npz")
    if stage.result is not None:
        return stage, curves_path, _result_from_storable(stage.result)
    if stage.partial is not None:
        _restore(st, stage.partial, rngs)
    return stage, curves_path, None


def _boundary(stage: Stage, epoch: int, max_epochs: int, st: dict[str, Any],
              snap: dict[int, Any], curves: _Curves) -> None:
    """A read-back at ``epoch``: the stage saves the state (with the generators' states
    ``snap`` before the next block's draw) when its policy or budget says so."""

    def state_fn() -> dict[str, Any]:
        curves.save()  # beside the checkpoint, whenever the state is saved
        return _storable_state(st, snap)

    stage.boundary(epoch, max_epochs, state_fn)


def _final_result(st: dict[str, Any], max_epochs: int, curves: _Curves, wall_time_s: float,
                  device: torch.device, graphs: bool,
                  timings: list[tuple[int, int, float]]) -> FusedResult:
    """The :class:`FusedResult` of a finished computation (runs still live at the cap are
    marked stopped at its last epoch, not having reached training accuracy 1)."""
    still = st["active"].copy()
    st["stopped_epoch"][still] = max_epochs - 1
    reached = ~still
    st["active"][:] = False
    return FusedResult(
        best_state={n: torch.from_numpy(np.ascontiguousarray(st["best"][n])) for n in
                    PARAM_NAMES},
        best_epoch=st["best_epoch"].copy(), stopped_epoch=st["stopped_epoch"].copy(),
        reached_train_accuracy=reached, best_val_loss=st["best_val"].copy(),
        at_kept={k: st["at_kept"][:, i].copy() for i, k in enumerate(_METRICS)},
        at_stop={k: st["at_stop"][:, i].copy() for i, k in enumerate(_METRICS)},
        curve_epoch=curves.epochs.copy(), curves={k: v.copy() for k, v in curves.data.items()},
        wall_time_s=wall_time_s,
        epochs_run=int(max(st["stopped_epoch"].max() + 1, 0)), device=str(device),
        precision="fp32 (TF32 off)" if device.type == "cuda" else "fp32",
        graphs=graphs, epoch_seconds=timings, segments=list(st["segments"]))


def train_fused(
    groups: Sequence[FusedGroup],
    settings: FusedSettings,
    *,
    heads: int = 2,
    key_dim: int = 64,
    dtype: torch.dtype = torch.float32,
    checkpoint: UnitCheckpoint | None | bool = None,
    progress: Callable[[int, int, int], None] | None = None,
) -> FusedResult:
    """Train every run of ``groups`` at once (see the module docstring).

    ``checkpoint``: a :class:`~genbounds.train.checkpoint.UnitCheckpoint` this computation is
    a stage of, None (the current one, if any) or False (none). ``progress(epoch, max_epochs,
    live_runs)`` is called at every read-back. Raises
    :class:`~genbounds.train.checkpoint.BudgetExhausted` (state saved) when the budget is spent
    and :class:`~genbounds.train.TrainingDivergedError` naming the run (global index, in the
    order of the groups) and the epoch of a non-finite loss.
    """
    t0 = time.perf_counter()
    _check_arguments(groups, settings, dtype)
    device = resolve_device(settings.device)
    np_dtype = np.float32 if dtype == torch.float32 else np.float64
    offsets = np.cumsum([0] + [g.k for g in groups])
    R = int(offsets[-1])
    st = _initial_state(groups, np_dtype)
    rngs = [np.random.default_rng(int(s)) for g in groups for s in g.shuffle_seeds]
    stage, curves_path, done = _open_stage(checkpoint, groups, settings, dtype, heads,
                                           key_dim, st, rngs)
    if done is not None:
        return done
    # which machine ran which epochs (a resumed computation may continue on another device)
    st["segments"].append(f"epochs {int(st['epoch'])}-: {_device_label(device)}, "
                          f"commit {_code_commit()}")
    curves = _Curves(R, settings.max_epochs, curves_path)
    curves.load(int(st["epoch"]))
    elapsed_before = float(st["elapsed"])
    use_graphs = settings.cuda_graphs and device.type == "cuda"
    tf32 = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    timings: list[tuple[int, int, float]] = []
    schedule = settings.lr_schedule(0, settings.max_epochs)
    draw = _order_drawer(rngs, settings, groups[0].bits_train.shape[1])
    pending: _Drawn | None = None
    try:
        live: _Live | None = None
        while st["epoch"] < settings.max_epochs and st["active"].any():
            runs = np.flatnonzero(st["active"])
            rebuilt = live is None or len(live.runs) != len(runs)
            if rebuilt:
                live = None  # free the old buffers (and graph) first
                live = _Live(groups, runs, offsets, st, settings, dtype, device, heads,
                             key_dim)
            assert live is not None
            e0 = int(st["epoch"])
            if pending is None:
                pending = draw(runs, e0)
            drawn_runs, orders, _ = pending
            orders = orders[:, np.searchsorted(drawn_runs, runs)]
            n = orders.shape[0]
            lrs = schedule[e0:e0 + n]
            live.load_block(orders, lrs, e0)
            if use_graphs and rebuilt:
                live.capture()
                if live.graph is None:  # capture failed: eager from now on (same numbers)
                    use_graphs = False
                    st["segments"].append(f"epochs {e0}-: no CUDA graph ({live.graph_error})")
            tb = time.perf_counter()
            live.run_block(n)  # asynchronous on CUDA: draw the next block meanwhile
            e1 = e0 + n
            pending = draw(runs, e1) if e1 < settings.max_epochs else None
            active_before = st["active"][runs].copy()
            live.write_back(st)
            metrics = live.metrics[:n].cpu().numpy()
            bad = live.bad_epoch.cpu().numpy()
            timings.append((n, len(runs), time.perf_counter() - tb))
            if (bad >= 0).any():
                i = int(np.argmin(np.where(bad >= 0, bad, np.iinfo(np.int64).max)))
                raise TrainingDivergedError(int(runs[i]), int(bad[i]), "loss")
            curves.log_block(e0, metrics, lrs, runs, active_before,
                             st["stopped_epoch"][runs])
            st["epoch"] = e1
            st["elapsed"] = elapsed_before + time.perf_counter() - t0
            if progress is not None:
                progress(e1, settings.max_epochs, int(st["active"].sum()))
            if stage is not None and e1 < settings.max_epochs and st["active"].any():
                assert pending is not None
                _boundary(stage, e1, settings.max_epochs, st, pending[2], curves)
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32
    res = _final_result(st, settings.max_epochs, curves,
                        elapsed_before + time.perf_counter() - t0, device, use_graphs, timings)
    if stage is not None:
        stage.finish(_result_storable(res))
        curves.save()
    return res


def _result_storable(res: FusedResult) -> dict[str, Any]:
    return {"best_state": res.best_state, "best_epoch": res.best_epoch,
            "stopped_epoch": res.stopped_epoch, "reached": res.reached_train_accuracy,
            "best_val_loss": res.best_val_loss, "curve_epoch": res.curve_epoch,
            "at_kept": res.at_kept, "at_stop": res.at_stop,
            "curves": res.curves, "wall_time_s": res.wall_time_s, "epochs_run": res.epochs_run,
            "device": res.device, "precision": res.precision, "graphs": res.graphs,
            "epoch_seconds": [list(t) for t in res.epoch_seconds],
            "segments": list(res.segments)}


def _result_from_storable(d: dict[str, Any]) -> FusedResult:
    return FusedResult(
        best_state=dict(d["best_state"]), best_epoch=np.asarray(d["best_epoch"]),
        stopped_epoch=np.asarray(d["stopped_epoch"]),
        reached_train_accuracy=np.asarray(d["reached"], dtype=bool),
        best_val_loss=np.asarray(d["best_val_loss"]), curve_epoch=np.asarray(d["curve_epoch"]),
        at_kept={k: np.asarray(v) for k, v in d["at_kept"].items()},
        at_stop={k: np.asarray(v) for k, v in d["at_stop"].items()},
        curves={k: np.asarray(v) for k, v in d["curves"].items()},
        wall_time_s=float(d["wall_time_s"]), epochs_run=int(d["epochs_run"]),
        device=str(d["device"]), precision=str(d["precision"]), graphs=bool(d["graphs"]),
        epoch_seconds=[(int(a), int(b), float(c)) for a, b, c in d["epoch_seconds"]],
        segments=[str(x) for x in d.get("segments", [])])


# ---------------------------------------------------------------------------------------------
# checkpoints written by older code, and checks of a saved state without training
# ---------------------------------------------------------------------------------------------


def check_saved_state(state: dict[str, Any], groups: Sequence[FusedGroup],
                      max_epochs: int) -> list[str]:
    """What is wrong with a saved partial state (``stage.partial``, after
    :func:`~genbounds.train.checkpoint.from_storable`) for ``groups``: an empty list when
    every tensor has its run count, shape, dtype and finite values, the live runs are the
    active ones, every stopped run stopped before the saved epoch (and kept an epoch no later),
    every live run has a generator state and a finite best validation loss."""
    problems: list[str] = []
    offsets = np.cumsum([0] + [g.k for g in groups])
    R = int(offsets[-1])
    epoch = int(state.get("epoch", -1))
    if not 0 < epoch <= max_epochs:
        problems.append(f"epoch {epoch} outside 1..{max_epochs}")
    active = np.asarray(state["active"], dtype=bool)
    live = np.asarray(state["live"], dtype=np.int64)
    if active.shape != (R,):
        return problems + [f"active has shape {active.shape}, expected ({R},)"]
    if not np.array_equal(live, np.flatnonzero(active)):
        problems.append("the live runs are not the active ones")
    dtypes = {np.asarray(groups[0].params[n]).dtype for n in PARAM_NAMES}
    for part, rows in (("params", live), ("velocity", live), ("best", np.arange(R))):
        for n in PARAM_NAMES:
            a = np.asarray(state[part][n])
            want = (len(rows), *np.asarray(groups[0].params[n]).shape[1:])
            if a.shape != want:
                problems.append(f"{part}.{n} has shape {a.shape}, expected {want}")
            elif not np.isfinite(a).all():
                problems.append(f"{part}.{n} holds non-finite values")
            if a.dtype not in dtypes and a.dtype not in (np.float32, np.float64):
                problems.append(f"{part}.{n} has dtype {a.dtype}")
    stopped = np.asarray(state["stopped_epoch"], dtype=np.int64)
    best_epoch = np.asarray(state["best_epoch"], dtype=np.int64)
    best_val = np.asarray(state["best_val"], dtype=np.float64)
    done = ~active
    if (stopped[active] != -1).any():
        problems.append("a live run has a stop epoch")
    if ((stopped[done] < 0) | (stopped[done] >= epoch)).any():
        problems.append("a stopped run's stop epoch is outside 0..epoch-1")
    if ((best_epoch < 0) | (best_epoch >= epoch)).any() or (
            best_epoch[done] > stopped[done]).any():
        problems.append("a kept epoch is outside the epochs the run trained")
    if not np.isfinite(best_val).all():
        problems.append("a best validation loss is not finite")
    rngs = state["rngs"]
    if len(rngs) != len(live) or any(
            not isinstance(r, dict) or "bit_generator" not in r for r in rngs):
        problems.append("the generator states do not match the live runs")
    return problems


def upgrade_checkpoint(src: Path, dst: Path, groups: Sequence[FusedGroup],
                       settings: FusedSettings, *, segments: Sequence[str],
                       legacy_sync_every: int, heads: int = 2, key_dim: int = 64,
                       dtype: torch.dtype = torch.float32) -> dict[str, Any]:
    """Rewrite a checkpoint of commit d76b6df (or earlier) in today's layout, ``src`` to
    ``dst`` (``src`` is only read).

    The old stage tag counted ``sync_every`` among the rules: it must equal the tag these
    ``groups`` and ``settings`` give with ``legacy_sync_every`` (the same data, weights,
    seeds and rules), or ``ValueError``. The new file carries today's tag, ``segments`` (who
    ran the epochs so far: the old code did not record it, so the caller states it from the
    run's logs) and the per-run metrics at the kept and last epoch as NaN (not recorded by the
    old code). Every tensor is checked (:func:`check_saved_state`). Returns the saved state.
    """
    from genbounds.train.checkpoint import FORMAT, from_storable, to_storable

    raw = UnitCheckpoint(path=Path(src)).load()
    if raw is None or raw.get("format") != FORMAT or raw.get("partial") is None:
        raise ValueError(f"src {src} is not an interrupted {FORMAT} checkpoint")
    if raw["stages"]:
        raise ValueError(f"src {src}: expected one unfinished stage, found finished ones")
    partial = raw["partial"]
    old = _stage_tag(groups, settings, dtype, heads, key_dim,
                     legacy_sync_every=legacy_sync_every)
    new = _stage_tag(groups, settings, dtype, heads, key_dim)
    if partial["tag"] not in (old, new):
        raise ValueError(f"src {src}: stage tag {partial['tag']!r} is neither {old!r} nor "
                         f"{new!r}: other data, weights, seeds or rules")
    if not segments or not all(isinstance(x, str) and x for x in segments):
        raise ValueError("segments must be non-empty strings")
    state = from_storable(partial["state"])
    problems = check_saved_state(state, groups, settings.max_epochs)
    if problems:
        raise ValueError(f"src {src}: " + "; ".join(problems))
    R = len(state["active"])
    for key in ("at_kept", "at_stop"):
        state.setdefault(key, np.full((R, 4), np.nan, dtype=np.float32))
    state["segments"] = list(state.get("segments") or segments)
    raw["partial"] = {**partial, "tag": new, "state": to_storable(state)}
    UnitCheckpoint(path=Path(dst)).save(raw)
    return state


def kept_validation(groups: Sequence[FusedGroup], state: dict[str, Any],
                    settings: FusedSettings, *, heads: int = 2, key_dim: int = 64,
                    dtype: torch.dtype = torch.float32) -> tuple[np.ndarray, np.ndarray]:
    """The validation loss and accuracy of every run's KEPT weights in a saved state,
    recomputed on ``settings.device`` without training (float64 sums, as during training):
    checks that the kept weights are the ones whose loss the state records."""
    np_dtype = np.float32 if dtype == torch.float32 else np.float64
    st = _initial_state(groups, np_dtype)
    rngs = [np.random.default_rng(0) for _ in range(len(st["active"]))]
    _restore(st, state, rngs)
    st["params"] = {n: v.copy() for n, v in st["best"].items()}
    st["active"][:] = True
    offsets = np.cumsum([0] + [g.k for g in groups])
    runs = np.arange(int(offsets[-1]))
    live = _Live(groups, runs, offsets, st, settings, dtype, resolve_device(settings.device),
                 heads, key_dim)
    with torch.no_grad():
        loss, acc = live.validate(live.views(live.flat))
    return loss.cpu().numpy(), acc.cpu().numpy()
