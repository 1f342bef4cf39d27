"""Teacher–student studies of the fast-rate bounds of Li et al. (2026); they have no experiments.

Four studies, one results schema (one entry per trained student), registered as
``offset_rademacher``; the complexity estimates of study 2 are a second registered experiment,
``offset_rademacher_complexity``.

1. **rates** — a fixed teacher :class:`~genbounds.models.li_transformer.LiTransformer` of each
   kind (one head; ``H`` heads; ``L`` layers) labels Gaussian inputs, ``y = f*(X) + eps``,
   ``eps ~ N(0, noise_std^2)``; students of the *same* architecture (well specified) are
   trained on ``n`` samples for every ``n`` in ``n_values``.
2. **complexity** — Monte Carlo offset and global Rademacher complexities of the same classes
   against ``n`` (:mod:`genbounds.offset_complexity`).
3. **rank** — teacher of rank ``teacher_rank`` (``rank W_QK = rank W_v = rank W_c``), students
   of rank ``r`` in ``rank_values`` (``rank_qk = k = r``), fixed ``n``.
4. **tails** — one-head teacher, inputs Gaussian or Student-t (``df`` = the tail index beta of
   Assumption 6.8), three estimators: squared loss on raw inputs, squared loss on inputs
   truncated at ``M_n = sqrt(T d) + sqrt(2 log n)`` (Frobenius norm; ``||X||_F`` is
   1-Lipschitz, so for Gaussian entries ``P(||X||_F > sqrt(Td) + t) <= exp(-t^2/2)``: the
   ``M ~ sqrt(log n)`` rule of Remark 6.7), and the Huber loss on raw inputs.
5. **norm** — students whose ``W_Q, W_K, W_v, W_c`` are kept (projected gradient, every step)
   in l_{1,1} balls of radius ``l11_scale`` times the teacher's norms, fixed ``n``: below 1 the
   teacher lies outside the class (approximation error), above 1 inside.

Training. The excess risk of the *empirical risk minimiser* is what the paper bounds, not the
error of an optimiser; every student therefore starts in the teacher's basin: its weights are
the teacher's (zero-padded to the student's ranks, which leaves the function unchanged) plus
``init_perturbation`` times an independent random initialisation, and full-batch Adam runs for
``steps`` steps. The necessary condition for an ERM, ``train MSE(student) <= train MSE(f*)``,
is stored per run (``erm_gap``) and checked by the chapter. Studies 1 and 3 use
:func:`genbounds.train.train_ensemble` (all seeds of one cell as one ensemble, loss
``"mse"``); study 4 needs the Huber loss, which the engine does not have, so all three of its
arms use the same local full-batch Adam loop (:func:`fit_local`) for a like-for-like comparison;
study 5 uses it too, with the projection (:func:`project_l11`) after every step.

Measurement. On ``n_test`` fresh inputs (never used for training or selection; no selection is
made at all, the last iterate is kept): ``excess = mean((f - f*)^2)`` with its Monte Carlo
standard error — for the squared loss and noise independent of ``X`` with mean 0 this is
exactly ``R(f) - R(f*)``, the excess risk over the teacher's own risk (the noise variance) —
and the noisy paired estimate ``mean((f - y)^2 - (f* - y)^2)`` with its standard error.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from genbounds.data import teacher_student, truncate
from genbounds.experiments.code_files import code_of
from genbounds.experiments.registry import Experiment, presets, register_experiment
from genbounds.models.li_transformer import LiTransformer
from genbounds.norms import norm_table
from genbounds.offset_complexity import offset_rademacher_linear_l2, offset_rademacher_network
from genbounds.train import TrainConfig, resolve_device, train_ensemble
from genbounds.validation import (
    check_choice,
    check_config,
    check_int,
    check_nonnegative,
    check_positive,
)

__all__ = [
    "ARCHS", "ARMS", "STUDIES", "ComplexityConfig", "ComplexityUnit", "EXPERIMENT",
    "EXPERIMENT_COMPLEXITY", "OffsetRademacherConfig", "StudentUnit", "fit_local", "make_teacher",
    "norm_summary", "project_l11", "run_complexity_unit", "run_unit", "units",
]

STUDIES = ("rates", "rank", "tails", "norm")
ARCHS = ("single", "multi", "deep")
ARMS = ("squared", "truncated", "huber")


@dataclass(frozen=True)
class StudentUnit:
    """One cell: ``seeds`` students of one architecture trained on ``n`` samples."""

    PROTOCOL_VERSION: ClassVar[int] = 1

    study: str
    arch: str
    n: int
    heads: int
    layers: int
    d: int
    k: int
    T: int
    teacher_rank: int
    student_rank: int
    df: float            # 0 = Gaussian inputs, else Student-t degrees of freedom
    arm: str
    noise_std: float
    seeds: int
    steps: int
    lr: float
    lr_decay: float
    init_perturbation: float
    n_test: int
    huber_delta: float
    seed: int
    device: str = "cpu"
    l11_scale: float = 0.0   # > 0: every W_Q, W_K, W_v, W_c kept in an l_{1,1} ball (study 5)

    def __post_init__(self) -> None:
        check_config(self)  # device, seeds, sizes, finite floats (issue 28 s.1)
        check_choice(self.study, "study", STUDIES)
        check_choice(self.arch, "arch", ARCHS)
        check_choice(self.arm, "arm", ARMS)
        for name in ("n", "heads", "layers", "d", "k", "T", "teacher_rank", "student_rank",
                     "seeds", "steps", "n_test"):
            check_int(getattr(self, name), name)
        if self.student_rank < self.teacher_rank:
            raise ValueError("student_rank must be >= teacher_rank (well-specified students)")
        if max(self.teacher_rank, self.student_rank) > self.d:
            raise ValueError("ranks must be <= d")
        check_int(self.seed, "seed", 0)
        if check_nonnegative(self.df, "df") != 0 and not self.df > 2:
            raise ValueError(f"df must be 0 (Gaussian) or > 2, got {self.df}")
        if not isinstance(self.device, str) or not self.device:
            raise ValueError(f"device must be a non-empty string, got {self.device!r}")
        for name in ("noise_std", "lr", "init_perturbation", "huber_delta"):
            check_positive(getattr(self, name), name)
        if check_positive(self.lr_decay, "lr_decay") > 1:
            raise ValueError(f"lr_decay must be in (0, 1], got {self.lr_decay}")
        check_nonnegative(self.l11_scale, "l11_scale")


@dataclass(frozen=True)
class OffsetRademacherConfig:
    """The four training studies. ``quick()`` fits the CI's 2-core CPU; ``paper()`` has more
    ``n``, seeds and steps and larger models (the paper has no experiments of its own).

    Every field is validated (``ValueError`` naming it): sizes and counts are integers >= 1
    (``seed`` >= 0), ranks at most ``d``, rates and scales finite and > 0, ``lr_decay`` in
    ``(0, 1]``, tail indices 0 (Gaussian) or > 2, ``device`` a non-empty string."""

    PROTOCOL_VERSION: ClassVar[int] = 1

    d: int = 3
    k: int = 2
    T: int = 4
    heads: int = 2
    layers: int = 2
    noise_std: float = 0.5
    n_values: tuple[int, ...] = (60, 116, 224, 432, 834, 1610, 3107, 6000)
    seeds: int = 4
    steps: int = 500
    tail_steps: int = 300
    lr: float = 1e-2
    lr_decay: float = 0.995
    init_perturbation: float = 0.1
    n_test: int = 10000
    rank_n: int = 300
    teacher_rank: int = 1
    rank_values: tuple[int, ...] = (1, 2, 3)
    tail_dfs: tuple[float, ...] = (0.0, 2.5, 4.0)
    tail_n_values: tuple[int, ...] = (100, 316, 1000)
    huber_delta: float = 1.0
    norm_n: int = 300
    l11_scales: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0)
    seed: int = 0
    device: str = "cpu"
    rank_seeds: int = 10

    def __post_init__(self) -> None:
        check_config(self)  # device, seeds, sizes, finite floats (issue 28 s.1)
        for name in ("d", "k", "T", "heads", "layers", "seeds", "steps", "tail_steps",
                     "n_test", "rank_n", "norm_n", "rank_seeds"):
            check_int(getattr(self, name), name)
        check_int(self.seed, "seed", 0)
        if self.k < 2 or self.d < 2:
            raise ValueError("k and d must be >= 2 (the rates study uses rank 2)")
        check_int(self.teacher_rank, "teacher_rank", 1, self.d)
        for name in ("noise_std", "lr", "init_perturbation", "huber_delta"):
            check_positive(getattr(self, name), name)
        check_positive(self.lr_decay, "lr_decay")
        if self.lr_decay > 1:
            raise ValueError(f"lr_decay must be in (0, 1], got {self.lr_decay!r}")
        for name in ("n_values", "rank_values", "tail_n_values", "tail_dfs", "l11_scales"):
            v = getattr(self, name)
            if not isinstance(v, tuple) or not v:
                raise ValueError(f"{name} must be a non-empty tuple, got {v!r}")
        for name in ("n_values", "tail_n_values"):
            for x in getattr(self, name):
                check_int(x, name)
        for x in self.rank_values:
            check_int(x, "rank_values", 1, self.d)
        for x in self.l11_scales:
            check_positive(x, "l11_scales")
        for x in self.tail_dfs:
            if check_nonnegative(x, "tail_dfs") != 0 and not x > 2:
                raise ValueError(f"tail_dfs must hold 0 (Gaussian) or values > 2, got {x!r}")
        if not isinstance(self.device, str) or not self.device:
            raise ValueError(f"device must be a non-empty string, got {self.device!r}")

    @classmethod
    def quick(cls) -> OffsetRademacherConfig:
        """d = 3, k = 2, T = 4 (27 parameters for one head, 51 for two heads or two layers),
        eight n from 60 to 6,000 (two decades, every n above the parameter count), 4 seeds,
        500 Adam steps (learning rate 0.01 times 0.995 per step), 10,000 test inputs; rank
        study at n = 300 with 10 seeds per rank; tails at n = 100, 316, 1,000 with df in
        (Gaussian, 2.5, 4) and 300 steps."""
        return cls()

    @classmethod
    def paper(cls) -> OffsetRademacherConfig:
        """Larger: d = 4, k = 4, T = 8, eight n from 100 to 50,000 (2.7 decades), 8 seeds,
        2,000 steps, 100,000 test inputs; rank study at n = 2,000 with 16 seeds per rank; tails
        over three decades with df in (Gaussian, 2.5, 3, 4, 6)."""
        return cls(d=4, k=4, T=8, n_values=(100, 243, 590, 1434, 3485, 8470, 20580, 50000),
                   seeds=8, steps=2000, tail_steps=2000, lr_decay=0.999, n_test=100_000,
                   rank_n=2000, rank_values=(1, 2, 3, 4), rank_seeds=16,
                   tail_dfs=(0.0, 2.5, 3.0, 4.0, 6.0),
                   tail_n_values=(100, 316, 1000, 3162, 10000, 31623), device="auto")


def _unit(cfg: OffsetRademacherConfig, study: str, arch: str, n: int, *, heads: int = 1,
          layers: int = 1, teacher_rank: int = 2, student_rank: int = 2, df: float = 0.0,
          arm: str = "squared", l11_scale: float = 0.0) -> StudentUnit:
    return StudentUnit(study=study, arch=arch, n=n, heads=heads, layers=layers, d=cfg.d,
                       k=cfg.k, T=cfg.T, teacher_rank=teacher_rank, student_rank=student_rank,
                       df=df, arm=arm, noise_std=cfg.noise_std,
                       seeds=cfg.rank_seeds if study == "rank" else cfg.seeds,
                       steps=cfg.tail_steps if study == "tails" else cfg.steps, lr=cfg.lr,
                       lr_decay=cfg.lr_decay, init_perturbation=cfg.init_perturbation,
                       n_test=cfg.n_test, huber_delta=cfg.huber_delta, seed=cfg.seed,
                       device=cfg.device, l11_scale=l11_scale)


def units(cfg: OffsetRademacherConfig) -> list[StudentUnit]:
    """Every cell of the three studies, in a fixed order."""
    out: list[StudentUnit] = []
    shapes = {"single": (1, 1), "multi": (cfg.heads, 1), "deep": (1, cfg.layers)}
    for arch, (H, L) in shapes.items():
        for n in cfg.n_values:
            out.append(_unit(cfg, "rates", arch, n, heads=H, layers=L))
    for r in cfg.rank_values:
        if r >= cfg.teacher_rank:
            out.append(_unit(cfg, "rank", "single", cfg.rank_n, teacher_rank=cfg.teacher_rank,
                             student_rank=r))
    for df in cfg.tail_dfs:
        for arm in ARMS:
            for n in cfg.tail_n_values:
                out.append(_unit(cfg, "tails", "single", n, df=df, arm=arm))
    for sc in cfg.l11_scales:
        out.append(_unit(cfg, "norm", "single", cfg.norm_n, l11_scale=sc))
    return out


def project_l11(t: torch.Tensor, radius: torch.Tensor) -> torch.Tensor:
    """Euclidean projection of every matrix (last two axes) onto the l_{1,1} ball of the
    matching ``radius`` (broadcast over the leading axes): soft thresholding at the level found
    by sorting (Duchi et al. 2008); matrices inside the ball are unchanged."""
    if not isinstance(t, torch.Tensor) or t.ndim < 2 or not bool(torch.isfinite(t).all()):
        raise ValueError("t must be a finite tensor with at least two axes")
    if not isinstance(radius, torch.Tensor) or not bool(torch.isfinite(radius).all()) \
            or bool((radius < 0).any()):
        raise ValueError("radius must be a finite tensor of values >= 0")
    lead = t.shape[:-2]
    flat = t.reshape(*lead, -1)
    a = flat.abs()
    r = radius.expand(lead).unsqueeze(-1)
    u, _ = torch.sort(a, dim=-1, descending=True)
    css = torch.cumsum(u, dim=-1)
    idx = torch.arange(1, u.shape[-1] + 1, dtype=t.dtype, device=t.device)
    cond = u - (css - r) / idx > 0
    rho = cond.to(t.dtype).cumsum(-1).argmax(-1, keepdim=True)   # last True (cond is a prefix)
    theta = (css.gather(-1, rho) - r) / (rho.to(t.dtype) + 1)
    proj = torch.sign(flat) * torch.clamp(a - theta, min=0.0)
    inside = a.sum(-1, keepdim=True) <= r
    return torch.where(inside, flat, proj).reshape(t.shape)


# ------------------------------------------------------------------------------ teacher
def make_teacher(d: int, k: int, heads: int, layers: int, rank: int, T: int,
                 seed: int = 12345, max_redraws: int = 100) -> LiTransformer:
    """The fixed teacher: a float64 :class:`LiTransformer` with ``rank_qk = k = rank``, its
    readout rescaled so that ``Var f*(X) = 1`` for standard Gaussian inputs (estimated on
    20,000 inputs from a fixed seed).

    A drawn teacher can be *dead*: with ReLU after attention and rank-2 values, a deeper
    teacher's last attention values can be negative for every input, so that ``f* = 0``
    identically (found at the paper scale's ``d = 4, T = 8``, two layers, seed 12345: standard
    deviation exactly 0). Such a teacher cannot be normalised and teaches nothing, so the
    weights are drawn again from ``seed + 1, seed + 2, ...`` (at most ``max_redraws`` times;
    then ValueError naming the sizes); the seed used is ``teacher.seeds[0]``, stored
    by :func:`run_unit` as ``teacher_seed``. Teachers
    that are not dead are unchanged (the first seed is used)."""
    for name, v in (("d", d), ("k", k), ("heads", heads), ("layers", layers), ("T", T)):
        check_int(v, name)
    check_int(rank, "rank", 1, d)
    check_int(seed, "seed", 0)
    check_int(max_redraws, "max_redraws", 0)
    X = torch.as_tensor(np.random.default_rng(seed).standard_normal((1, 20000, T, d)))
    for s in range(seed, seed + max_redraws + 1):
        t = LiTransformer(d, rank, heads=heads, layers=layers, rank_qk=rank, seeds=[s],
                          dtype=torch.float64)
        with torch.no_grad():
            sd = float(t(X).std())
        if sd > 1e-12:
            with torch.no_grad():
                t.w.mul_(1.0 / sd)
            return t
    raise ValueError(f"make_teacher: every teacher drawn from seeds {seed}..{seed + max_redraws}"
                     f" is constant on Gaussian inputs (d={d}, rank={rank}, heads={heads}, "
                     f"layers={layers}, T={T})")


def _teacher_fn(teacher: LiTransformer) -> Callable[[np.ndarray], np.ndarray]:
    def f(X: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return np.asarray(teacher(torch.as_tensor(X, dtype=torch.float64)[None])[0].numpy())
    return f


def _warm_student(u: StudentUnit, teacher: LiTransformer, seeds: list[int]) -> LiTransformer:
    """Teacher weights zero-padded to the student's ranks plus ``init_perturbation`` times a
    fresh random initialisation (same function as the teacher at perturbation 0)."""
    r = u.student_rank
    s = LiTransformer(u.d, r, heads=u.heads, layers=u.layers, rank_qk=r, n_models=u.seeds,
                      seeds=seeds, dtype=torch.float64)
    rt = u.teacher_rank
    with torch.no_grad():
        for name, p in s.named_parameters():
            tp = getattr(teacher, name).detach()[0]
            pad = torch.zeros(p.shape[1:], dtype=p.dtype)
            if name in ("W_Q", "W_K", "W_v"):
                pad[..., :rt] = tp
            elif name == "W_c":
                pad[..., :rt, :] = tp
            else:
                pad[...] = tp
            p.mul_(u.init_perturbation).add_(pad)
    return s


def fit_local(model: LiTransformer, X: torch.Tensor, y: torch.Tensor, loss: str, steps: int,
              lr: float, huber_delta: float = 1.0, lr_decay: float = 1.0,
              project: Callable[[LiTransformer], None] | None = None) -> None:
    """Full-batch Adam (torch defaults; learning rate ``lr * lr_decay^t`` at step ``t``) on
    each model's mean loss, in place. The models are independent: the summed objective
    separates and Adam is coordinate-wise."""
    check_choice(loss, "loss", ("mse", "huber"))
    check_int(steps, "steps", 0)
    check_positive(lr, "lr")
    check_positive(huber_delta, "huber_delta")
    if check_positive(lr_decay, "lr_decay") > 1:
        raise ValueError(f"lr_decay must be in (0, 1], got {lr_decay!r}")
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=lr_decay)
    for _ in range(steps):
        opt.zero_grad()
        out = model(X)
        if loss == "mse":
            per = (out - y) ** 2
        else:
            per = torch.nn.functional.huber_loss(out, y, reduction="none", delta=huber_delta)
        per.mean(dim=1).sum().backward()
        opt.step()
        sched.step()
        if project is not None:
            with torch.no_grad():
                project(model)


def _bounds_inputs(Xtr: np.ndarray, fstar_tr: np.ndarray) -> dict[str, np.ndarray]:
    """Per-run sample versions of the paper's input and target bounds."""
    spec = np.linalg.norm(Xtr, ord=2, axis=(-2, -1)).max(axis=1)     # max ||X||_{2->2}
    cls = np.linalg.norm(Xtr[:, :, 0], axis=-1).max(axis=1)           # max ||x_[CLS]||
    return {"B_X": spec, "B_x_cls": cls, "B_target": np.abs(fstar_tr).max(axis=1)}


def run_unit(u: StudentUnit, progress: bool = False) -> dict[str, np.ndarray]:
    """Train the ``u.seeds`` students of one cell and measure them (module docstring)."""
    t0 = time.perf_counter()
    teacher = make_teacher(u.d, u.teacher_rank, u.heads, u.layers, u.teacher_rank, u.T)
    f = _teacher_fn(teacher)
    ids = [STUDIES.index(u.study), ARCHS.index(u.arch), u.n, u.student_rank,
           int(round(u.df * 10)), ARMS.index(u.arm)]
    ss = np.random.SeedSequence([u.seed, *ids]).generate_state(2 * u.seeds + 1)
    data_seeds = [int(x) % (2**31) for x in ss[: u.seeds]]
    model_seeds = [int(x) % (2**31) for x in ss[u.seeds: 2 * u.seeds]]
    dist = "gaussian" if u.df == 0 else "student_t"
    df = None if u.df == 0 else float(u.df)
    tr = [teacher_student(u.n, u.d, dist=dist, df=df, noise_std=u.noise_std,  # type: ignore[arg-type]
                          teacher=f, seed=s, T=u.T) for s in data_seeds]
    te = teacher_student(u.n_test, u.d, dist=dist, df=df,  # type: ignore[arg-type]
                         noise_std=u.noise_std, teacher=f, seed=int(ss[-1]) % (2**31), T=u.T)
    Xtr = np.stack([t.X for t in tr])
    M = math.sqrt(u.T * u.d) + math.sqrt(2 * math.log(u.n))
    frac = np.zeros(u.seeds)
    Xte = te.X
    if u.arm == "truncated":
        trs = [truncate(x, M) for x in Xtr]
        Xtr = np.stack([t.X for t in trs])
        frac = np.array([t.fraction_truncated for t in trs])
        Xte = truncate(te.X, M).X
    ytr = torch.as_tensor(np.stack([t.y for t in tr]))  # (stack copies: writable)
    student = _warm_student(u, teacher, model_seeds)
    init = {n_: p.detach().clone() for n_, p in student.named_parameters()}
    Xt = torch.as_tensor(np.array(Xtr))
    if u.study == "norm":
        radii = {name: u.l11_scale * getattr(teacher, name).detach()[0].abs().sum(dim=(-2, -1))
                 for name in ("W_Q", "W_K", "W_v", "W_c")}

        def project(m: LiTransformer) -> None:
            with torch.no_grad():
                for name, rad in radii.items():
                    p = getattr(m, name)
                    p.copy_(project_l11(p, rad.to(p.dtype)))

        project(student)
        fit_local(student, Xt, ytr, "mse", u.steps, u.lr, u.huber_delta, u.lr_decay, project)
    elif u.study == "tails":
        dev = resolve_device(u.device)
        student = student.to(dev)
        fit_local(student, Xt.to(dev), ytr.to(dev), "huber" if u.arm == "huber" else "mse",
                  u.steps, u.lr, u.huber_delta, u.lr_decay)
        student = student.cpu()
    else:
        cfg = TrainConfig(optimizer="adam", lr=u.lr, lr_decay=u.lr_decay, max_epochs=u.steps,
                          batch_size=None, select_best="last", device=u.device,
                          progress=progress)
        train_ensemble(student, Xt, ytr, loss="mse", config=cfg)
        student = student.cpu()
    with torch.no_grad():
        f_tr = student(Xt).numpy()
        f_te = np.concatenate([student(torch.as_tensor(np.array(Xte[i:i + 5000]))[None].expand(
            u.seeds, -1, -1, -1)).numpy() for i in range(0, u.n_test, 5000)], axis=1)
    fstar_te, y_te = te.y_clean, te.y
    sq = (f_te - fstar_te[None]) ** 2
    paired = (f_te - y_te[None]) ** 2 - (fstar_te - y_te)[None] ** 2
    ymat = ytr.numpy()
    fstar_tr = np.stack([t.y_clean for t in tr])
    table = norm_table(student.view(initial_state=init))
    out: dict[str, np.ndarray] = {
        "study": np.full(u.seeds, STUDIES.index(u.study)),
        "arch": np.full(u.seeds, ARCHS.index(u.arch)),
        "arm": np.full(u.seeds, ARMS.index(u.arm)),
        "n": np.full(u.seeds, u.n), "heads": np.full(u.seeds, u.heads),
        "layers": np.full(u.seeds, u.layers), "df": np.full(u.seeds, u.df),
        "student_rank": np.full(u.seeds, u.student_rank),
        "teacher_rank": np.full(u.seeds, u.teacher_rank),
        "l11_scale": np.full(u.seeds, u.l11_scale),
        "n_params": table["model.n_params"],
        "excess": sq.mean(axis=1), "excess_se": sq.std(axis=1, ddof=1) / math.sqrt(u.n_test),
        "excess_paired": paired.mean(axis=1),
        "excess_paired_se": paired.std(axis=1, ddof=1) / math.sqrt(u.n_test),
        "noise_var_test": np.full(u.seeds, float(((fstar_te - y_te) ** 2).mean())),
        "train_mse": ((f_tr - ymat) ** 2).mean(axis=1),
        "teacher_train_mse": ((fstar_tr - ymat) ** 2).mean(axis=1),
        "erm_gap": ((f_tr - ymat) ** 2).mean(axis=1) - ((fstar_tr - ymat) ** 2).mean(axis=1),
        "threshold_M": np.full(u.seeds, M if u.arm == "truncated" else math.inf),
        "fraction_truncated": frac,
        "B_f_student": np.abs(f_tr).max(axis=1),
        "wall_time_s": np.full(u.seeds, time.perf_counter() - t0),
        "teacher_seed": np.full(u.seeds, teacher.seeds[0]),
        **_bounds_inputs(np.stack([t.X for t in tr]), fstar_tr),
    }
    out["threshold_M"] = np.where(np.isinf(out["threshold_M"]), 0.0, out["threshold_M"])
    out.update(norm_summary(table, u.heads, u.layers))
    return out


def norm_summary(table: dict[str, np.ndarray], heads: int, layers: int) -> dict[str, np.ndarray]:
    """The norms the paper's bounds read, from the stored norm table (one per run, the same keys
    for every architecture): ``B_w`` (readout l2 = its Frobenius norm), and for ``W_c``
    (``W_O``), ``W_v`` (``W_V``), ``W_QK`` the largest spectral and l_{1,1} norm over layers
    and heads (orientation does not change either norm), ``model.l2`` and ``model.dist_l2``."""
    out = {"norm.B_w": table["readout.fro"], "norm.model_l2": table["model.l2"],
           "norm.model_dist_l2": table["model.dist_l2"]}
    for mine, view_name in (("Wc", "W_O"), ("Wv", "W_V"), ("WQK", "W_QK")):
        for suffix in ("spectral", "l11"):
            cols = [table[f"layer{i}.head{h}.{view_name}.{suffix}"] for i in range(layers)
                    for h in range(heads)]
            out[f"norm.{mine}_{suffix}_max"] = np.max(np.stack(cols), axis=0)
    return out


EXPERIMENT = register_experiment(Experiment(
    name="offset_rademacher", chapter="notebooks/04_offset_rademacher.md",
    description="teacher-student excess-risk rates of Transformer ERMs (one head, H heads, "
    "L layers), rank sweep, heavy-tailed inputs with truncation / Huber (Li et al. 2026)",
    config=presets(OffsetRademacherConfig), units=units, run_unit=run_unit,
    code=code_of("offset_rademacher")))


# ------------------------------------------------------------------------------ study 2
@dataclass(frozen=True)
class ComplexityUnit:
    """Offset (``c``) and global complexities at one ``n`` for the l2-ball linear class on
    Gaussian inputs of dimension ``T d`` (closed form, ``linear_draws`` sign vectors) and for the
    one-head class with Frobenius radius ``radius`` (projected Adam, ``net_draws`` x
    ``restarts``)."""

    PROTOCOL_VERSION: ClassVar[int] = 1

    n: int
    d: int
    k: int
    T: int
    c: float
    radius: float
    linear_draws: int
    net_draws: int
    restarts: int
    steps: int
    lr: float
    seed: int
    device: str = "cpu"

    def __post_init__(self) -> None:
        check_config(self)  # device, seeds, sizes, finite floats (issue 28 s.1)
        check_int(self.n, "n")
        if not isinstance(self.device, str) or not self.device:
            raise ValueError(f"device must be a non-empty string, got {self.device!r}")
        _check_complexity_fields(self)


def _check_complexity_fields(obj: ComplexityUnit | ComplexityConfig) -> None:
    """Validate the fields shared by :class:`ComplexityUnit` and :class:`ComplexityConfig`."""
    for name in ("d", "k", "T", "linear_draws", "net_draws", "restarts", "steps"):
        check_int(getattr(obj, name), name)
    check_int(obj.seed, "seed", 0)
    check_nonnegative(obj.c, "c")
    check_positive(obj.radius, "radius")
    check_positive(obj.lr, "lr")


@dataclass(frozen=True)
class ComplexityConfig:
    """The complexity study's preset (:meth:`quick`, :meth:`paper`); every field validated."""

    PROTOCOL_VERSION: ClassVar[int] = 1

    n_values: tuple[int, ...] = (32, 100, 316, 1000)
    d: int = 3
    k: int = 2
    T: int = 4
    c: float = 1.0
    radius: float = 1.0
    linear_draws: int = 400
    net_draws: int = 6
    restarts: int = 2
    steps: int = 150
    lr: float = 0.05
    seed: int = 0

    def __post_init__(self) -> None:
        check_config(self)  # device, seeds, sizes, finite floats (issue 28 s.1)
        if not isinstance(self.n_values, tuple) or not self.n_values:
            raise ValueError(f"n_values must be a non-empty tuple, got {self.n_values!r}")
        for x in self.n_values:
            check_int(x, "n_values")
        _check_complexity_fields(self)

    @classmethod
    def quick(cls) -> ComplexityConfig:
        """n = 32 ... 1,000; 400 sign draws (linear), 6 draws x 2 restarts x 150 steps (net)."""
        return cls()

    @classmethod
    def paper(cls) -> ComplexityConfig:
        """n = 32 ... 10,000; 4,000 / 32 draws, 4 restarts, 500 steps."""
        return cls(n_values=(32, 100, 316, 1000, 3162, 10000), linear_draws=4000, net_draws=32,
                   restarts=4, steps=500)

    def units(self) -> list[ComplexityUnit]:
        return [ComplexityUnit(n=n, d=self.d, k=self.k, T=self.T, c=self.c, radius=self.radius,
                               linear_draws=self.linear_draws, net_draws=self.net_draws,
                               restarts=self.restarts, steps=self.steps, lr=self.lr,
                               seed=self.seed) for n in self.n_values]


def run_complexity_unit(u: ComplexityUnit, progress: bool = False) -> dict[str, np.ndarray]:
    """One row: ``n``, ``linear_offset``, ``linear_global`` (+ ``_se``), ``net_offset``,
    ``net_global`` (+ ``_se``), and ``linear_rank_over_4cn`` (the unconstrained value)."""
    rng = np.random.default_rng([u.seed, u.n])
    X = rng.standard_normal((u.n, u.T, u.d))
    Xf = X.reshape(u.n, -1)
    lo = offset_rademacher_linear_l2(Xf, u.radius, u.c, n_draws=u.linear_draws, seed=1)
    lg = offset_rademacher_linear_l2(Xf, u.radius, 0.0, n_draws=u.linear_draws, seed=1)

    def make(K: int, seeds: list[int]) -> torch.nn.Module:
        return LiTransformer(u.d, u.k, n_models=K, seeds=seeds, dtype=torch.float64)

    no, _ = offset_rademacher_network(make, X, u.c, u.radius, n_draws=u.net_draws,
                                      restarts=u.restarts, steps=u.steps, lr=u.lr, seed=2)
    ng, _ = offset_rademacher_network(make, X, 0.0, u.radius, n_draws=u.net_draws,
                                      restarts=u.restarts, steps=u.steps, lr=u.lr, seed=2)
    return {k_: np.array([v]) for k_, v in {
        "n": u.n, "linear_offset": lo.mean, "linear_offset_se": lo.stderr,
        "linear_global": lg.mean, "linear_global_se": lg.stderr,
        "linear_rank_over_4cn": min(u.n, u.T * u.d) / (4 * u.c * u.n),
        "net_offset": no.mean, "net_offset_se": no.stderr,
        "net_global": ng.mean, "net_global_se": ng.stderr}.items()}


EXPERIMENT_COMPLEXITY = register_experiment(Experiment(
    name="offset_rademacher_complexity", chapter="notebooks/04_offset_rademacher.md",
    description="Monte Carlo offset vs global Rademacher complexity against n (l2-ball linear "
    "class in closed form; one-head Transformer class by projected Adam)",
    config=presets(ComplexityConfig),
    units=lambda cfg: cfg.units(), run_unit=run_complexity_unit,
    code=code_of("offset_rademacher_complexity")))

