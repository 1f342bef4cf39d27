"""Trauger & Tewari's (2024, Section 6) sparse-majority study: norms, gaps and accuracy vs T.

For every sequence length ``T`` in ``config.T_values`` and every run ``r < runs_per_T``, a new
data set (:func:`genbounds.data.make_sparse_majority`: new index set I, new embeddings, new
bits) is drawn and a fresh :class:`genbounds.models.SparseMajorityMHA` is trained. The
``paper()`` preset is the authors' protocol (the authors' public experiment script;
the ``quick()`` preset changes the optimiser and the sizes, see its docstring): SGD with Keras
momentum
(``lr = 0.01``, ``momentum = 0.9``), batch 128, learning rate times 0.999 at every epoch start
with floor 0.001, Keras' binary cross-entropy on the two logits against one-hot labels, stop
at the end of the first epoch whose (running, Keras-style) training accuracy is 1.0, keep the
weights of the epoch with the lowest validation loss.

Engines (the config field ``engine``, which also decides how the store splits the sweep into
units). ``"fused"`` (the ``paper()`` preset; SGD only): every run of every ``T`` (50 runs)
is trained as ONE computation by :func:`genbounds.train.fused_protocol.train_fused`
(:func:`train_fused_protocol`): the [CLS]-only attention written as one product of a sample's
bit indicators with a per-run table, each run's stopping and kept-weights rules as masks, a
stopped run removed from the computation at the next read-back, a whole epoch captured in a
CUDA graph on a GPU, TF32 off. It gives the per-``T`` engine's numbers to floating-point
tolerance (tested in float64, stopping and kept epochs included). The store keeps the whole
protocol as one unit. ``"per_T"`` (the ``quick()`` preset, with Adam; any optimizer): all
runs of one ``T`` are trained as one batched ensemble (:func:`genbounds.train.train_ensemble`
with ``K = runs_per_T``), each with its own data, initialisation, minibatch order and
stopping epoch; the model reads bits and assembles its tokens from the data set's embedding
and positional tables (exact;
:meth:`~genbounds.models.SparseMajorityMHA.set_token_tables`), so no ``(n, T + 1, d)`` token
tensor is built; one unit per ``T``.

Seeds: run ``r`` at length ``T`` draws three 32-bit seeds from
``numpy.random.SeedSequence([config.seed, T, r])``: data, model initialisation and minibatch
order, so any single run can be reproduced on its own.

Held-out test set (protocol version 2). The authors keep the epoch with the lowest validation
loss and then report the gap and the accuracy on that same validation set, which biases both in
the model's favour. Every run therefore also draws ``n_test`` fresh samples of *its own* task
(same index set I, same embeddings; new bits) from a **separate** seed stream,
:func:`heldout_seed` (``SeedSequence([config.seed, T, r, TEST_STREAM])``), after training: the
training and validation data, the training itself and every number of protocol version 1 are
unchanged (tested against the version-1 numbers). No selection ever sees the test set; the kept
weights are evaluated on it once, without autograd and in chunks.

What :func:`run` returns (one entry per run, arrays of length ``len(T_values) * runs_per_T``,
ordered by ``T`` then run), all at the kept weights:

* ``T``, ``run``, ``data_seed``, ``model_seed``, ``shuffle_seed``;
* ``l1_norm``: sum over all trainable tensors (kernels *and* biases) of the entrywise l1 norm,
  the quantity of the paper's Figure 1 (:func:`genbounds.spectral.entrywise_l1`);
* ``train_loss``, ``train_accuracy``, ``val_loss``, ``val_accuracy`` (exact, after training,
  like the authors' ``model.evaluate`` after ``load_weights``), ``test_loss``,
  ``test_accuracy`` (the same kept weights on the held-out test set), ``test_seed``
  (from :func:`heldout_seed`),
  ``best_epoch``,
  ``stopped_epoch`` (0-based), ``epochs_trained``, ``reached_perfect_train`` (the run stopped
  because its training accuracy reached 1.0; False when ``max_epochs`` ran out first);
* the norm table of the kept weights (:func:`genbounds.norms.norm_table` of the model's
  :class:`~genbounds.models.view.ModelView` with its initial weights): every norm of every
  matrix (``"layer0.head0.W_QK.spectral"``, ...), whole-model columns (``"model.l1"``, the
  quantity of the paper's Figure 1: sum over all trainable tensors, biases included, of the
  entrywise l1 norm; ``"model.dist_l2"``, ...), and under the prefix ``"tt."`` the
  Trauger–Tewari norms of the weights rewritten as TT heads
  (:func:`genbounds.bounds.trauger_tewari_notation.tt_norms`; bias-absorbing augmented tokens
  ``(x, 1)``; read :func:`~genbounds.bounds.trauger_tewari_notation.tt_correspondence` for
  what the rewriting does and does not cover): ``tt.W_QK_h{h}_{l11,l1inf,l21T,op,fro}``,
  ``tt.W_v_h{h}_{l11,l21,l1inf,op,fro}``, ``tt.W_c_{...}``, ``tt.w_l1``, ``tt.w_l2``,
  ``tt.offset_abs``;
* ``B_x_l1``, ``B_x_l2``: the largest l1 / l2 norm of a token row (all ``T + 1`` rows: the
  tokens are ``e_b + P_t``, so these are maxima over the finitely many possible rows), and
  ``B_x_aug_l1 = B_x_l1 + 1``, ``B_x_aug_l2 = sqrt(B_x_l2^2 + 1)`` for the augmented tokens;
* ``tt_W_QK`` ``(runs, heads, d+1, d+1)``, ``tt_W_v`` ``(runs, heads, d+1, d)``, ``tt_W_c``
  ``(runs, d, d)``, ``tt_w`` ``(runs, d, 2)``, ``tt_offset`` ``(runs, 2)``: the kept weights
  rewritten as TT heads (float32), so that a chapter can compute any norm a bound needs;
* ``group_wall_time_s``: wall-clock seconds of the ensemble (all runs of that ``T``), the time
  spent before an interruption included.

* with the fused engine: ``selected_val_loss`` (the validation loss that selected the kept
  epoch, as computed during training), ``curve_epoch`` and ``curve_loss``, ``curve_accuracy``
  (running, Keras), ``curve_val_loss``, ``curve_val_accuracy``, ``curve_lr``: ``(runs, P)``
  float32 at the epochs that matter (:func:`genbounds.train.fused_protocol.curve_epochs`),
  NaN after a run stopped; ``at_kept_{loss,accuracy,val_loss,val_accuracy}`` and
  ``at_stop_...``: those training-time metrics at each run's kept and last epoch; and the
  scalars ``engine``, ``precision`` (``"fp32 (TF32 off)"`` on
  CUDA), ``cuda_graphs``, ``device_class`` (GPU name and CUDA version, or CPU model and the
  instruction set torch dispatches to), ``torch_build``, ``epochs_run``,
  ``seconds_per_epoch_first_block``, ``segments`` (which device ran which epochs, when the
  unit was interrupted and resumed).

Interrupted units (``reproduce --budget-minutes``). A unit run under
:func:`genbounds.train.unit_checkpoint` is one stage of the unit checkpoint: when the budget is
spent, the training saves its state at a read-back (fused engine: every
``GENBOUNDS_FUSED_SYNC`` epochs, 200 on CUDA, 5 on a CPU) or at the end of an epoch (per-``T``
engine) and raises :class:`genbounds.train.BudgetExhausted`; run again, it resumes there and
every stored array is bitwise what the uninterrupted unit stores on the same device class
(CPU: tested in ``tests/test_sparse_majority_experiment.py`` and
``tests/test_sparse_majority_fused.py``). The fused engine's checkpoint does not grow with the
epochs (weights, momentum and kept weights of the live runs, kept weights of the stopped ones;
its curves beside it in ``<checkpoint>.curves.npz``, about 12 MB in all at paper scale). At
paper scale it lives in the store's committed folder,
``results/paper/_checkpoints/SparseMajorityConfig/`` (``committed_checkpoints`` of the
registered study): commit it after a budgeted run, and ``reproduce --scale paper`` on a fresh
clone resumes it. :func:`protocol_progress` reads what it holds (which runs stopped, when, and
their kept epochs) without training.
Everything else the unit computes (data, held-out set, norms) is a deterministic function of
the seeds and the kept weights, so it needs no state.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from genbounds.bounds.trauger_tewari_notation import tt_correspondence, tt_norms
from genbounds.data import (
    SparseMajorityBatch,
    make_sparse_majority_batch,
    sparse_majority_labels,
)
from genbounds.experiments.code_files import code_of
from genbounds.experiments.registry import (
    Experiment,
    _checkpoint_file,
    presets,
    register_experiment,
)
from genbounds.models import SparseMajorityMHA
from genbounds.norms import norm_table
from genbounds.results.keys import OMIT_FROM_KEY
from genbounds.train import (
    TrainConfig,
    TrainResult,
    evaluate_ensemble,
    resolve_device,
    train_ensemble,
)
from genbounds.train.fused_protocol import (
    PARAM_NAMES,
    FusedGroup,
    FusedResult,
    FusedSettings,
    _stage_tag,
    check_saved_state,
    train_fused,
    upgrade_checkpoint,
)
from genbounds.validation import check_config

__all__ = [
    "EXPERIMENT", "TEST_STREAM", "SparseMajorityConfig", "evaluate_heldout", "heldout_seed",
    "ProtocolProgress", "RunProgress", "make_heldout_set", "paper_checkpoint_path",
    "protocol_progress", "run", "run_seeds", "sweep_configs", "train_config", "train_group",
    "upgrade_paper_checkpoint",
]

#: Extra entropy word of the test-set seed stream (``"TEST"`` in ASCII): the test bits of run
#: ``r`` at length ``T`` come from ``SeedSequence([seed, T, r, TEST_STREAM])``, a stream that
#: the training, validation, initialisation and shuffling seeds never touch.
TEST_STREAM: int = 0x54455354


#: The engines of :attr:`SparseMajorityConfig.engine`.
ENGINES: tuple[str, ...] = ("fused", "per_T")


def _engine_of_old_keys(config: SparseMajorityConfig) -> bool:
    """Whether ``config.engine`` is the one its optimizer implied before the field existed
    (``"fused"`` with SGD, ``"per_T"`` with Adam): then the field stays out of the key."""
    return config.engine == ("fused" if config.optimizer == "sgd" else "per_T")


@dataclass(frozen=True)
class SparseMajorityConfig:
    """The sparse-majority sweep. ``paper()`` is the authors' protocol; ``quick()`` fits a CPU.

    Attributes
    ----------
    T_values:
        Sequence lengths (number of bits; the [CLS] token is added on top).
    runs_per_T:
        Independent runs per length (new data set, new initialisation each).
    n_train, n_val:
        Training and validation samples per run.
    n_test:
        Held-out test samples per run (drawn after training from a separate seed stream;
        never used for any selection).
    s, d:
        Size of the sparse index set I (odd) and embedding dimension.
    heads, key_dim:
        Keras ``MultiHeadAttention(num_heads=heads, key_dim=key_dim)``.
    optimizer:
        ``"sgd"`` (the protocol: Keras SGD with momentum) or ``"adam"`` (Keras Adam, used by
        the quick preset; ``momentum`` must then be 0).
    lr, momentum, lr_decay, lr_floor, batch_size:
        Learning rate and momentum; ``lr`` multiplied by ``lr_decay`` at every epoch start,
        floored at ``lr_floor``; minibatch size.
    max_epochs:
        Epoch cap; a run stops earlier at its first epoch with training accuracy 1.0.
    seed:
        Root seed of the sweep (see the module docstring).
    device:
        ``"auto"``, ``"cpu"`` or ``"cuda"``.
    engine:
        How the sweep is computed and split into units of the results store: ``"fused"``
        (the paper preset; SGD only) trains every run of every ``T`` as one computation, ONE
        unit; ``"per_T"`` (the quick preset; any optimizer) one ensemble per ``T``, one unit
        per ``T``. The runs (their seeds) are the same either way; the numbers agree to
        floating-point tolerance, not bit for bit. (Configs stored before this field existed
        used ``"fused"`` with SGD and ``"per_T"`` with Adam: those combinations are left out
        of the key, so their stored results and checkpoints keep their keys.)
    """

    PROTOCOL_VERSION: ClassVar[int] = 2

    T_values: tuple[int, ...] = tuple(range(20, 201, 20))
    runs_per_T: int = 5
    n_train: int = 300
    n_val: int = 10000
    n_test: int = 10000
    s: int = 9
    d: int = 64
    heads: int = 2
    key_dim: int = 64
    optimizer: str = "sgd"
    lr: float = 0.01
    momentum: float = 0.9
    lr_decay: float = 0.999
    lr_floor: float = 0.001
    batch_size: int = 128
    max_epochs: int = 200_000
    seed: int = 0
    device: str = "auto"
    engine: str = field(default="fused", metadata={OMIT_FROM_KEY: _engine_of_old_keys})

    def __post_init__(self) -> None:
        check_config(self)  # seeds, sizes at most MAX_CONFIG_INT, finite floats (issue 37 s.3)
        for name in ("runs_per_T", "n_train", "n_val", "n_test", "s", "d", "heads", "key_dim",
                     "batch_size", "max_epochs"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        if not isinstance(self.T_values, tuple) or len(self.T_values) == 0:
            raise ValueError(f"T_values must be a non-empty tuple, got {self.T_values!r}")
        for T in self.T_values:
            if not isinstance(T, int) or isinstance(T, bool) or T < 1:
                raise ValueError(f"T_values must hold integers >= 1, got {T!r}")
            if T < self.s:
                raise ValueError(f"T_values entries must be >= s = {self.s}, got {T}")
        if len(set(self.T_values)) != len(self.T_values):
            raise ValueError(f"T_values must not repeat, got {self.T_values}")
        if self.s % 2 == 0:
            raise ValueError(f"s must be odd (strict majority), got {self.s}")
        if self.optimizer not in ("sgd", "adam"):
            raise ValueError(f"optimizer must be 'sgd' or 'adam', got {self.optimizer!r}")
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {self.engine!r}")
        if self.engine == "fused" and self.optimizer != "sgd":
            raise ValueError(f"engine 'fused' runs the protocol's SGD; with optimizer "
                             f"{self.optimizer!r} use engine='per_T'")
        if not isinstance(self.device, str) or not (
                self.device in ("auto", "cpu", "cuda") or self.device.startswith("cuda:")):
            raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got "
                             f"{self.device!r}")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or self.seed < 0:
            raise ValueError(f"seed must be an integer >= 0, got {self.seed!r}")
        # the remaining fields are validated by TrainConfig
        self.train_config()

    @classmethod
    def paper(cls, device: str = "auto") -> SparseMajorityConfig:
        """The authors' protocol: T = 20, 40, ..., 200, 5 runs, 300 / 10,000 samples (plus
        10,000 held-out test samples, which the authors did not have),
        2 heads of key dimension 64, d = 64, s = 9, SGD(0.01, momentum 0.9), batch 128,
        decay 0.999 per epoch with floor 0.001, at most 200,000 epochs."""
        return cls(device=device)

    @classmethod
    def quick(cls, device: str = "auto") -> SparseMajorityConfig:
        """A CPU-sized sweep (a minute or two on 2 cores) that shows the phenomenon.

        It keeps the data (300 training samples, s = 9, d = 64), the model, the loss, the batch
        size, the stopping rule and the kept epoch of the protocol, and changes: T in (20, 60,
        100, 140, 200), 3 runs per T, 1,000 validation samples (5,000 held-out test samples),
        at most 600 epochs, and
        **Adam** (Keras defaults, learning rate 1e-3, no decay) instead of SGD.

        Why not SGD: with the protocol's SGD (0.01, momentum 0.9) the Keras-initialised model
        stays on its initial plateau (it predicts the majority class) for thousands of epochs
        at T = 20 (measured: no change in training accuracy after 3,000 epochs; SGD at 0.1
        starts to move only after about 500 epochs and larger rates diverge), while the
        authors allowed 200,000 epochs. Adam leaves the plateau within about 100 epochs.

        The epoch cap can stop a run before it reaches training accuracy 1.0 (the protocol's
        stopping rule); ``reached_perfect_train`` records, per run, whether it did (at this
        scale most runs do not).
        """
        return cls(T_values=(20, 60, 100, 140, 200), runs_per_T=3, n_val=1000, n_test=5000,
                   optimizer="adam", lr=1e-3, momentum=0.0, lr_decay=1.0, lr_floor=0.0,
                   max_epochs=600, device=device, engine="per_T")

    def train_config(self) -> TrainConfig:
        """The :class:`~genbounds.train.TrainConfig` of the protocol."""
        return train_config(self)


def train_config(config: SparseMajorityConfig) -> TrainConfig:
    """The authors' training protocol as a :class:`~genbounds.train.TrainConfig`.

    (``eval_batch_size`` only sets how many validation samples are evaluated at once; it
    changes nothing but the order of floating-point summation.)
    """
    return TrainConfig(
        optimizer=config.optimizer,  # type: ignore[arg-type]
        lr=config.lr,
        momentum=config.momentum,
        momentum_style="keras",
        lr_decay=config.lr_decay,
        lr_floor=config.lr_floor,
        decay_before_first_epoch=True,
        batch_size=config.batch_size,
        max_epochs=config.max_epochs,
        stop_at_train_accuracy=1.0,
        stop_metric="running",
        select_best="val_loss",
        patience=None,
        eval_every=1,
        eval_batch_size=2048,
        device=config.device,
    )


def run_seeds(config: SparseMajorityConfig, T: int, run: int) -> tuple[int, int, int]:
    """``(data_seed, model_seed, shuffle_seed)`` of run ``run`` at length ``T``."""
    state = np.random.SeedSequence([config.seed, int(T), int(run)]).generate_state(3)
    return int(state[0]), int(state[1]), int(state[2])


def heldout_seed(config: SparseMajorityConfig, T: int, run: int) -> int:
    """Seed of the held-out test bits of run ``run`` at length ``T``.

    From ``SeedSequence([config.seed, T, run, TEST_STREAM])``: a different entropy, hence a
    stream independent of :func:`run_seeds`, so adding the test set changes no training,
    validation, initialisation or shuffling draw.
    """
    state = np.random.SeedSequence([config.seed, int(T), int(run), TEST_STREAM]).generate_state(1)
    return int(state[0])


def make_heldout_set(
    config: SparseMajorityConfig, T: int, batch: SparseMajorityBatch
) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
    """The held-out test bits ``(K, n_test, T)`` and labels ``(K, n_test)`` of every run.

    Run ``r``'s test set is the task of its own data set (its index set I; the model reads its
    own embeddings): ``n_test`` uniform bit strings from
    ``numpy.random.default_rng(heldout_seed(config, T, r))`` labelled by
    :func:`genbounds.data.sparse_majority_labels`. Returns ``(bits, labels, seeds)``; the bits
    are int64 on the batch's device.
    """
    if not isinstance(config, SparseMajorityConfig):
        raise ValueError(f"config must be a SparseMajorityConfig, got {type(config).__name__}")
    if len(batch.datasets) != config.runs_per_T:
        raise ValueError(f"batch must hold runs_per_T = {config.runs_per_T} data sets, "
                         f"got {len(batch.datasets)}")
    seeds = [heldout_seed(config, T, r) for r in range(config.runs_per_T)]
    bits, labels = [], []
    for ds, sd in zip(batch.datasets, seeds, strict=True):
        if ds.T != int(T):
            raise ValueError(f"batch was built for T = {ds.T}, not T = {T}")
        b = np.random.default_rng(sd).integers(0, 2, size=(config.n_test, ds.T), dtype=np.int64)
        bits.append(b)
        labels.append(sparse_majority_labels(b, ds.subset))
    device = batch.bits_train.device
    return (torch.as_tensor(np.stack(bits), device=device),
            torch.as_tensor(np.stack(labels), device=device), seeds)


def evaluate_heldout(
    config: SparseMajorityConfig, T: int, model: SparseMajorityMHA, batch: SparseMajorityBatch
) -> dict[str, np.ndarray]:
    """Loss and accuracy of the model's current (kept) weights on the held-out test sets.

    No autograd, in chunks of the protocol's ``eval_batch_size`` samples per model
    (:func:`genbounds.train.evaluate_ensemble`), with the training loss (Keras' binary
    cross-entropy on one-hot labels). Returns ``{"test_loss", "test_accuracy", "test_seed"}``,
    arrays of shape ``(runs_per_T,)``.
    """
    bits, labels, seeds = make_heldout_set(config, T, batch)
    dtype = next(model.parameters()).dtype
    res = evaluate_ensemble(model, bits.to(dtype), labels, loss="bce_logits_onehot",
                            batch_size=train_config(config).eval_batch_size,
                            device=config.device)
    return {"test_loss": res["loss"], "test_accuracy": res["accuracy"],
            "test_seed": np.array(seeds, dtype=np.int64)}


def fused_settings(config: SparseMajorityConfig, **overrides: Any) -> FusedSettings:
    """The protocol's rules for :func:`genbounds.train.fused_protocol.train_fused` (SGD with
    Keras momentum only); ``overrides`` set the execution knobs (``sync_every``,
    ``cuda_graphs``, ``eval_chunk``, ``device``)."""
    if config.optimizer != "sgd":
        raise ValueError(f"the fused engine runs the protocol's SGD; optimizer is "
                         f"{config.optimizer!r}")
    base = dict(lr=config.lr, momentum=config.momentum, lr_decay=config.lr_decay,
                lr_floor=config.lr_floor, batch_size=config.batch_size,
                max_epochs=config.max_epochs, device=config.device)
    base.update(overrides)
    return FusedSettings(**base)  # type: ignore[arg-type]


def fused_groups(config: SparseMajorityConfig,
                 dtype: torch.dtype = torch.float32) -> list[FusedGroup]:
    """The runs of every ``T`` as :class:`~genbounds.train.fused_protocol.FusedGroup`: the
    same data, initial weights and shuffling seeds as :func:`train_group` uses."""
    groups = []
    K = config.runs_per_T
    for T in config.T_values:
        seeds = [run_seeds(config, T, r) for r in range(K)]
        batch = make_sparse_majority_batch(
            T, [s[0] for s in seeds], n_train=config.n_train, n_val=config.n_val, s=config.s,
            d=config.d, dtype=dtype, device="cpu", val_tokens=False)
        model = SparseMajorityMHA(d=config.d, heads=config.heads, key_dim=config.key_dim,
                                  n_models=K, seeds=[s[1] for s in seeds], cls_index=-1,
                                  dtype=dtype)
        params = dict(model.named_parameters())
        groups.append(FusedGroup(
            T=int(T), bits_train=batch.bits_train.numpy().astype(np.int8),
            y_train=batch.y_train.numpy(), bits_val=batch.bits_val.numpy().astype(np.int8),
            y_val=batch.y_val.numpy(), bit_embeddings=batch.bit_embeddings.numpy(),
            cls_embedding=batch.cls_embeddings.numpy(), positional=batch.positional.numpy(),
            params={n: params[n].detach().numpy().copy() for n in PARAM_NAMES},
            shuffle_seeds=tuple(s[2] for s in seeds)))
    return groups


def train_fused_protocol(
    config: SparseMajorityConfig, dtype: torch.dtype = torch.float32, **knobs: Any
) -> FusedResult:
    """Every run of ``config`` (all ``T``) trained as one computation
    (:func:`genbounds.train.fused_protocol.train_fused`); ``knobs`` as in
    :func:`fused_settings`."""
    if not isinstance(config, SparseMajorityConfig):
        raise ValueError(f"config must be a SparseMajorityConfig, got {type(config).__name__}")
    progress = knobs.pop("progress", None)
    settings = fused_settings(config, **knobs)
    return train_fused(fused_groups(config, dtype), settings, heads=config.heads,
                       key_dim=config.key_dim, dtype=dtype, progress=progress)


def _add_norms_and_tokens(add: Any, view: Any, batch: Any, K: int, wall: float) -> None:
    """The columns both engines store from the kept weights: the norm table, the weights
    rewritten as TT heads (float32, so that any norm can be computed later), the token-norm
    bounds ``B_x`` (plain and bias-augmented) and the group's wall time."""
    for key, val in norm_table(view, extra={"tt": tt_norms(view)}).items():
        add(key, val)
    for key, mat in tt_correspondence(view, augment_bias=True).items():
        add(f"tt_{key}", mat.detach().cpu().to(torch.float32).numpy())
    l1, l2 = _token_norm_bounds(batch)
    add("B_x_l1", l1)
    add("B_x_l2", l2)
    add("B_x_aug_l1", l1 + 1.0)
    add("B_x_aug_l2", np.sqrt(l2**2 + 1.0))
    add("group_wall_time_s", np.full(K, wall))


def _token_norm_bounds(batch: SparseMajorityBatch) -> tuple[np.ndarray, np.ndarray]:
    """Largest l1 and l2 norm of any token row of each run's data (float64)."""
    rows = [torch.as_tensor(ds.possible_tokens()) for ds in batch.datasets]
    l1 = np.array([float(r.abs().sum(dim=-1).max()) for r in rows])
    l2 = np.array([float(torch.linalg.vector_norm(r, dim=-1).max()) for r in rows])
    return l1, l2


def train_group(
    config: SparseMajorityConfig, T: int, progress: bool = False
) -> tuple[TrainResult, SparseMajorityMHA, SparseMajorityBatch]:
    """Train the ``config.runs_per_T`` runs of length ``T`` as one ensemble.

    Returns the :class:`~genbounds.train.TrainResult` (with the per-epoch history), the model
    (holding the kept, lowest-validation-loss weights) and the data. :func:`run` calls this
    once per ``T``; a chapter calls it directly when it needs the training curves.
    """
    if not isinstance(config, SparseMajorityConfig):
        raise ValueError(f"config must be a SparseMajorityConfig, got {type(config).__name__}")
    if int(T) < config.s:
        raise ValueError(f"T must be >= s = {config.s}, got {T}")
    device = resolve_device(config.device)
    dtype = torch.float32
    cfg = dataclasses.replace(train_config(config), progress=bool(progress))
    K = config.runs_per_T
    seeds = [run_seeds(config, T, r) for r in range(K)]
    batch = make_sparse_majority_batch(
        T, [s[0] for s in seeds], n_train=config.n_train, n_val=config.n_val, s=config.s,
        d=config.d, dtype=dtype, device=device, val_tokens=False,
    )
    model = SparseMajorityMHA(
        d=config.d, heads=config.heads, key_dim=config.key_dim, n_models=K,
        seeds=[s[1] for s in seeds], cls_index=-1, dtype=dtype,
    )
    # the model reads bits and assembles its tokens from the tables (exact, see
    # SparseMajorityMHA.set_token_tables): no (n, T+1, d) token tensor is ever built
    model.set_token_tables(batch.bit_embeddings, batch.cls_embeddings, batch.positional)
    res = train_ensemble(
        model, batch.bits_train.to(dtype), batch.y_train, batch.bits_val.to(dtype),
        batch.y_val, loss="bce_logits_onehot", config=cfg, seed=[s[2] for s in seeds],
    )
    return res, model, batch


def _env_knobs() -> dict[str, Any]:
    """Execution knobs of the fused engine from the environment (never part of a result's
    key: they change when numbers are read back, not the numbers):
    ``GENBOUNDS_FUSED_SYNC`` (epochs between read-backs, default 200 on CUDA, 5 on a CPU,
    where an epoch of the paper preset takes seconds) and
    ``GENBOUNDS_FUSED_GRAPHS`` (``0`` turns CUDA graphs off)."""
    knobs: dict[str, Any] = {}
    sync = os.environ.get("GENBOUNDS_FUSED_SYNC")
    if sync:
        try:
            knobs["sync_every"] = int(sync)
        except ValueError:
            raise ValueError(f"GENBOUNDS_FUSED_SYNC must be an integer >= 1, got {sync!r}") \
                from None
    graphs = os.environ.get("GENBOUNDS_FUSED_GRAPHS")
    if graphs is not None:
        if graphs not in ("0", "1"):
            raise ValueError(f"GENBOUNDS_FUSED_GRAPHS must be 0 or 1, got {graphs!r}")
        knobs["cuda_graphs"] = graphs == "1"
    return knobs


def device_class(device: torch.device) -> str:
    """The class of machine a bitwise claim holds for: the GPU's name, or the CPU's model and
    the instruction set torch dispatches to (``ATEN_CPU_CAPABILITY`` when set)."""
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)} (CUDA {torch.version.cuda})"
    cap = os.environ.get("ATEN_CPU_CAPABILITY") or torch.backends.cpu.get_cpu_capability()
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:  # pragma: no cover
        pass
    return f"{model} ({cap})"


def _fused_progress(bar_wanted: bool, max_epochs: int, t0: float,
                    ) -> tuple[Callable[[int, int, int], None], Any]:
    """The fused engine's ``progress(epoch, total, live)`` callback and its tqdm bar (None
    without one): a bar over the epochs, or a line on stderr about every 30 s (the logs of
    a budgeted GPU run)."""
    if bar_wanted:
        from tqdm.auto import tqdm

        bar = tqdm(total=max_epochs, desc="epochs (all runs)", leave=False)

        def tick(epoch: int, total: int, live: int) -> None:
            bar.update(epoch - bar.n)
            bar.set_postfix(live=live)

        return tick, bar
    last = [time.perf_counter(), 0.0]

    def log(epoch: int, total: int, live: int) -> None:
        now = time.perf_counter()
        if now - last[0] >= 30.0 or live == 0 or epoch >= total:
            rate = (now - last[0]) / max(epoch - last[1], 1) * 1e3
            last[0], last[1] = now, float(epoch)
            print(f"sparse_majority (fused): epoch {epoch} of {total}, {live} runs live, "
                  f"{now - t0:.0f} s, {rate:.2f} ms per epoch lately", file=sys.stderr,
                  flush=True)

    return log, None


#: The text entries of a fused unit's result (:func:`_run_fused`), declared to the store.
FUSED_TEXT: tuple[str, ...] = ("engine", "precision", "device_class", "torch_build", "segments")


def _run_fused(config: SparseMajorityConfig, progress: bool) -> dict[str, Any]:
    """:func:`run` with every run of every ``T`` trained as one computation."""
    K = config.runs_per_T
    device = resolve_device(config.device)
    dtype = torch.float32
    t0 = time.perf_counter()
    knobs = _env_knobs()
    knobs.setdefault("sync_every", 200 if device.type == "cuda" else 5)
    knobs["progress"], bar = _fused_progress(progress, config.max_epochs, t0)
    try:
        fr = train_fused_protocol(config, dtype=dtype, **knobs)
    finally:
        if bar is not None:
            bar.close()
    wall = max(time.perf_counter() - t0, fr.wall_time_s)
    rows: dict[str, list[np.ndarray]] = {}

    def add(key: str, values: np.ndarray) -> None:
        rows.setdefault(key, []).append(np.asarray(values))

    cfg = train_config(config)
    for gi, T in enumerate(config.T_values):
        sl = slice(gi * K, (gi + 1) * K)
        seeds = [run_seeds(config, T, r) for r in range(K)]
        batch = make_sparse_majority_batch(
            T, [s[0] for s in seeds], n_train=config.n_train, n_val=config.n_val, s=config.s,
            d=config.d, dtype=dtype, device=device, val_tokens=False)
        model = SparseMajorityMHA(d=config.d, heads=config.heads, key_dim=config.key_dim,
                                  n_models=K, seeds=[s[1] for s in seeds], cls_index=-1,
                                  dtype=dtype)
        initial = {n: p.detach().clone() for n, p in model.named_parameters()}
        with torch.no_grad():
            for n, p in model.named_parameters():
                p.copy_(fr.best_state[n][sl])
        model.to(device)
        model.set_token_tables(batch.bit_embeddings, batch.cls_embeddings, batch.positional)
        add("T", np.full(K, T, dtype=np.int64))
        add("run", np.arange(K, dtype=np.int64))
        add("data_seed", np.array([s[0] for s in seeds], dtype=np.int64))
        add("model_seed", np.array([s[1] for s in seeds], dtype=np.int64))
        add("shuffle_seed", np.array([s[2] for s in seeds], dtype=np.int64))
        for split, bits, y in (("train", batch.bits_train, batch.y_train),
                               ("val", batch.bits_val, batch.y_val)):
            ev = evaluate_ensemble(model, bits.to(dtype), y, loss="bce_logits_onehot",
                                   batch_size=cfg.eval_batch_size, device=config.device)
            add(f"{split}_loss", ev["loss"])
            add(f"{split}_accuracy", ev["accuracy"])
        for key, val in evaluate_heldout(config, T, model, batch).items():
            add(key, val)
        add("best_epoch", fr.best_epoch[sl])
        add("stopped_epoch", fr.stopped_epoch[sl])
        add("epochs_trained", fr.stopped_epoch[sl] + 1)
        add("reached_perfect_train", fr.reached_train_accuracy[sl])
        add("selected_val_loss", fr.best_val_loss[sl])
        model.cpu()
        _add_norms_and_tokens(add, model.view(initial_state=initial), batch, K, wall)
        for key in fr.at_kept:  # the training-time metrics at the kept and the last epoch
            add(f"at_kept_{key}", fr.at_kept[key][sl])
            add(f"at_stop_{key}", fr.at_stop[key][sl])
        add("curve_epoch", np.broadcast_to(fr.curve_epoch, (K, len(fr.curve_epoch))))
        for key, val in fr.curves.items():
            add(f"curve_{key}", val[sl])
    out: dict[str, Any] = {k: np.concatenate(v) for k, v in rows.items()}
    secs = [s / n for n, _, s in fr.epoch_seconds]
    out.update({
        "engine": "fused: all runs of all T as one computation (train_fused)",
        "precision": fr.precision, "cuda_graphs": bool(fr.graphs),
        "device_class": device_class(device),
        "torch_build": f"{torch.__version__} (CUDA {torch.version.cuda})",
        "seconds_per_epoch_first_block": float(secs[0]) if secs else float("nan"),
        "epochs_run": int(fr.epochs_run),
        "segments": " | ".join(fr.segments),
    })
    if not secs:
        del out["seconds_per_epoch_first_block"]
    return out


def run(config: SparseMajorityConfig, progress: bool = False) -> dict[str, Any]:
    """Run the sweep and return one entry per run (see the module docstring for the keys).

    With ``engine="fused"`` (the paper preset) every run of every ``T`` is trained as one
    computation (:func:`train_fused_protocol`); with ``"per_T"`` (the quick preset) one
    ensemble per ``T`` (:func:`train_group`).

    Parameters
    ----------
    config:
        The sweep; :meth:`SparseMajorityConfig.quick` or :meth:`SparseMajorityConfig.paper`.
    progress:
        Show a progress bar (per ``T``, or over the epochs of the fused computation).
    """
    if not isinstance(config, SparseMajorityConfig):
        raise ValueError(f"config must be a SparseMajorityConfig, got {type(config).__name__}")
    if config.engine == "fused":
        return _run_fused(config, progress)
    K = config.runs_per_T
    rows: dict[str, list[np.ndarray]] = {}

    def add(key: str, values: np.ndarray) -> None:
        rows.setdefault(key, []).append(np.asarray(values))

    for T in config.T_values:
        t0 = time.perf_counter()
        res, model, batch = train_group(config, T, progress=progress)
        seeds = [run_seeds(config, T, r) for r in range(K)]
        wall = time.perf_counter() - t0
        # a resumed training reports the time of the interrupted runs too (res.wall_time_s
        # counts them; this process's share of it was spent inside the time just measured)
        wall += max(0.0, res.wall_time_s - wall)
        # the model now holds the kept (lowest validation loss) weights
        add("T", np.full(K, T, dtype=np.int64))
        add("run", np.arange(K, dtype=np.int64))
        add("data_seed", np.array([s[0] for s in seeds], dtype=np.int64))
        add("model_seed", np.array([s[1] for s in seeds], dtype=np.int64))
        add("shuffle_seed", np.array([s[2] for s in seeds], dtype=np.int64))
        for key in ("train_loss", "train_accuracy", "val_loss", "val_accuracy"):
            add(key, res.metrics[key])
        # the held-out test set: drawn now, from its own seed stream; nothing selects on it
        for key, val in evaluate_heldout(config, T, model, batch).items():
            add(key, val)
        add("best_epoch", res.best_epoch)
        add("stopped_epoch", res.stopped_epoch)
        add("epochs_trained", res.stopped_epoch + 1)
        add("reached_perfect_train", res.reached_train_accuracy)
        _add_norms_and_tokens(add, model.view(initial_state=res.initial_state), batch, K, wall)
    return {k: np.concatenate(v) for k, v in rows.items()}


def sweep_configs(config: SparseMajorityConfig) -> list[SparseMajorityConfig]:
    """The units that the results store keeps and resumes.

    With ``engine="fused"`` (the paper preset) ONE unit: every run of every ``T`` is one
    computation (:func:`train_fused_protocol`), resumable at any read-back under
    ``reproduce --budget-minutes``. With ``"per_T"`` (the quick preset) one config per sequence
    length. Run ``r`` at length ``T`` draws its seeds from ``(config.seed, T, r)`` only, so the
    runs are the same either way.
    """
    if not isinstance(config, SparseMajorityConfig):
        raise ValueError(f"config must be a SparseMajorityConfig, got {type(config).__name__}")
    if config.engine == "fused":
        return [config]
    return [dataclasses.replace(config, T_values=(int(T),)) for T in config.T_values]


#: The registered study (``python -m genbounds reproduce --only sparse_majority``).
EXPERIMENT = register_experiment(Experiment(
    name="sparse_majority",
    chapter="notebooks/02_trauger_tewari.md",
    description="Trauger & Tewari (2024) Sec. 6: norms, gaps and accuracy against T",
    config=presets(SparseMajorityConfig),
    units=sweep_configs,
    run_unit=run,
    resumable=True,  # one engine call per unit: a stage of the unit checkpoint
    committed_checkpoints=True,  # ~12 MB at paper scale: results/paper/_checkpoints/
    # training curves are NaN after a run stopped; the metrics at the kept and last epoch are
    # NaN where the checkpoint a unit resumed from did not record them (commit d76b6df)
    nonfinite=("curve_*", "at_kept_*", "at_stop_*"),
    # the fused engine's descriptive entries (what ran where): strings, saved as text
    text=FUSED_TEXT,
    code=code_of("sparse_majority"),
))


def paper_checkpoint_path(config: SparseMajorityConfig | None = None,
                          root: str | Path | None = None) -> Path:
    """Where the paper-scale unit of ``config`` (default: the paper preset) keeps its
    committed checkpoint: ``<root>/paper/_checkpoints/SparseMajorityConfig/<key>.pt``
    (``root``: the book's results folder by default)."""
    from genbounds.results import ResultStore

    config = SparseMajorityConfig.paper() if config is None else config
    if not isinstance(config, SparseMajorityConfig) or config.engine != "fused":
        raise ValueError("config must be a SparseMajorityConfig with engine='fused'")
    store = ResultStore(root=root, namespace="paper")
    return _checkpoint_file(EXPERIMENT, store, config)


@dataclass(frozen=True)
class RunProgress:
    """One run in a saved checkpoint: its ``T`` and index, the 0-based epoch at which it
    reached training accuracy 1.0 (``None``: still training), the epoch whose weights it keeps
    (lowest validation loss so far) and that validation loss."""

    T: int
    run: int
    stopped_epoch: int | None
    kept_epoch: int
    best_val_loss: float

    @property
    def epochs_needed(self) -> int | None:
        """Epochs trained until training accuracy 1.0 (``stopped_epoch + 1``), or None."""
        return None if self.stopped_epoch is None else self.stopped_epoch + 1


@dataclass(frozen=True)
class ProtocolProgress:
    """What an interrupted paper-scale protocol holds (:func:`protocol_progress`)."""

    path: Path
    epoch: int
    total: int
    segments: tuple[str, ...]
    runs: tuple[RunProgress, ...]

    @property
    def stopped(self) -> int:
        """The number of runs that reached training accuracy 1.0."""
        return sum(r.stopped_epoch is not None for r in self.runs)

    @property
    def live(self) -> int:
        """The number of runs still training."""
        return len(self.runs) - self.stopped


def protocol_progress(path: str | os.PathLike[str] | None = None,
                      config: SparseMajorityConfig | None = None) -> ProtocolProgress:
    """Read an interrupted protocol's checkpoint without training: per run ``T``, the epoch
    it stopped at (or None), its kept epoch and best validation loss; the epoch reached, and
    which devices ran which epochs (``segments``).

    ``path`` defaults to the committed checkpoint of ``config`` (default: the paper preset).
    The checkpoint must be the one of ``config`` (same data, weights, seeds and rules: its
    stage tag is checked) and pass :func:`~genbounds.train.fused_protocol.check_saved_state`;
    otherwise ``ValueError``. ``FileNotFoundError`` when there is none.
    """
    from genbounds.train.checkpoint import FORMAT, UnitCheckpoint, from_storable

    config = SparseMajorityConfig.paper() if config is None else config
    if not isinstance(config, SparseMajorityConfig) or config.engine != "fused":
        raise ValueError("config must be a SparseMajorityConfig with engine='fused'")
    file = paper_checkpoint_path(config) if path is None else Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"no checkpoint at {file}")
    raw = UnitCheckpoint(path=file).load()
    if raw is None or raw.get("format") != FORMAT or raw.get("partial") is None:
        raise ValueError(f"path {file} holds no interrupted {FORMAT} stage")
    partial = raw["partial"]
    groups = fused_groups(config)
    tag = _stage_tag(groups, fused_settings(config), torch.float32, config.heads,
                     config.key_dim)
    if partial["tag"] != tag:
        raise ValueError(f"path {file}: the checkpoint is not config's computation (stage "
                         f"tag {partial['tag']!r}, expected {tag!r})")
    state = from_storable(partial["state"])
    problems = check_saved_state(state, groups, config.max_epochs)
    if problems:
        raise ValueError(f"path {file}: " + "; ".join(problems))
    Ts = [int(T) for T in config.T_values for _ in range(config.runs_per_T)]
    runs = tuple(
        RunProgress(T=Ts[i], run=i % config.runs_per_T,
                    stopped_epoch=None if state["active"][i] else int(state["stopped_epoch"][i]),
                    kept_epoch=int(state["best_epoch"][i]),
                    best_val_loss=float(state["best_val"][i]))
        for i in range(len(Ts)))
    return ProtocolProgress(path=file, epoch=int(state["epoch"]),
                            total=int(partial["total"]),
                            segments=tuple(str(x) for x in state.get("segments", [])),
                            runs=runs)


def upgrade_paper_checkpoint(src: str | os.PathLike[str], dst: str | os.PathLike[str],
                             segments: tuple[str, ...] | list[str], *,
                             config: SparseMajorityConfig | None = None,
                             legacy_sync_every: int = 200) -> None:
    """Rewrite a paper-scale checkpoint written by commit d76b6df (or earlier) in today's
    layout (:func:`genbounds.train.fused_protocol.upgrade_checkpoint`): ``segments`` states
    which device ran its epochs (the old code did not record it); ``legacy_sync_every`` is the
    read-back interval of the run that wrote it (200 on CUDA)."""
    config = SparseMajorityConfig.paper() if config is None else config
    upgrade_checkpoint(Path(src), Path(dst), fused_groups(config), fused_settings(config),
                       segments=list(segments), legacy_sync_every=legacy_sync_every,
                       heads=config.heads, key_dim=config.key_dim)
